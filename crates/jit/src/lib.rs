//! Lowering of first-order terms to Cranelift IR, and JIT compilation to native code.
//!
//! [`compile`] takes a closed, type-checked [`Func`] of the first-order fragment: variables of
//! ground type (reals, tuples, arrays of ground type) or conditions, lambdas only as the
//! function argument of `map`, `map2`, `reduce`, `foldl`, `scanl` and `scanr` (their bodies may
//! use variables of the enclosing scope), no application and no calls. Both users' primal
//! programs and optimized gradient terms (scans, shifts, `zeros_like`, `ones_like`, n-tuples,
//! `if` on any type, ints, `iota`, indexing and `scatter_add`) are in that fragment.
//! Anything else is an [`JitError::Unsupported`].
//!
//! **Ints** are carried as reals holding whole numbers (exact up to 2^53): an `int` lays out
//! as a `real` everywhere (`[n]int` is an array of reals), `real(i)` is the identity, and
//! `+ - * max min` are the reals' instructions. An int parameter is also the size variable
//! of its name (`iota n`), whose value is `max(0, value)`; [`Compiled::call`] refuses an
//! int argument that is not a whole number or that disagrees with that size. `iota` is an
//! unevaluated array (element `i` is `i`, computed in the loop that reads it); `A[i]` reads
//! element `i` in place; `scatter_add` adds into a copy of its target in one loop. Every
//! index and every int divisor is checked at run time (see "Memory safety").
//!
//! # The ABI
//!
//! The native function has the C signature
//!
//! ```text
//! void f(const double *const *inputs, const uint64_t *sizes,
//!        double *const *outputs, double *workspace);
//! ```
//!
//! ([`RawFn`]). Each parameter's type is flattened into **leaf components**, each a flat
//! buffer of reals ([`Component`]; [`Shape::scatter`] and [`Shape::gather`] convert between
//! a value's reals in row-major order and its components):
//! - a real is one component of one element;
//! - an array of reals is one component, nested arrays row-major in it (`[n][m]real` is one
//!   component of `n * m` elements);
//! - a tuple contributes the components of its fields, in order;
//! - arrays distribute over tuples (an array of tuples is a tuple of arrays): `[n](real,
//!   [m]real)` is two components, of `n` and of `n * m` elements.
//!
//! `inputs[k]` points to the `k`-th component over all parameters in order
//! ([`Compiled::inputs`]). `sizes[i]` is the value of the `i`-th size variable, in the order
//! of `Func::size_vars` ([`Compiled::size_vars`]). The result is flattened the same way;
//! `outputs[k]` points to a buffer of the `k`-th output component's length
//! ([`Compiled::outputs`]), which the function fills entirely. `workspace` points to at least
//! [`Compiled::workspace_len`] reals, 8-byte aligned (it may be null when that is 0). The
//! buffers must not overlap, except that inputs may overlap each other. The function never
//! allocates, never calls `malloc`, and reads and writes only inside these buffers.
//!
//! A function that checks something at run time has a **status cell** in its workspace
//! ([`Compiled::status_cell`]), which it clears when it starts: nonzero after a call, it
//! says a check failed and the call stopped early, its outputs incomplete. A raw caller
//! should read it after every call. [`Compiled::call`] checks every length and reads it;
//! [`Compiled::bind`] checks once, for a [`Bound`] function to run many times at the cost
//! of the raw call.
//!
//! Component lengths are functions of the sizes ([`Dim`]): they are the lengths the
//! semantics computes, which are the formal sizes of the types except where an empty array
//! was shifted (`scanl f z (shift1L A)` has one element at `n = 0` although its type says
//! `[n]`). When an `if` chooses between arrays whose lengths differ only in that way, the
//! shorter one is padded with zeros to the longer length.
//!
//! # Memory
//!
//! The workspace holds every intermediate array that has to exist in memory. Its layout is
//! planned at compile time: each array gets a buffer, buffers whose lifetimes do not overlap
//! share a slot, and slot offsets are computed from the sizes in the function's prologue. An
//! array made inside a loop body reuses its slot in every iteration. Results are written
//! straight into their destination (the caller's output buffers, the row of a nested array,
//! an accumulator's buffer) instead of being copied there; so is a `let`-bound array that
//! is one component of the result (a cut's crossing values, a gradient bound before the
//! result tuple). The prologue's lengths and addresses are pure values computed from the
//! read-only sizes and pointer arrays, which Cranelift computes where they are used.
//!
//! A loop carries only what changes between iterations: an accumulator's buffer address
//! (two buffers alternate, unless the fold updates its accumulator in place), not its
//! lengths and strides, which are the same on every iteration; an exact length is the
//! sizes' value. So the loops inside a fold's body see constant or prologue lengths (no
//! run-time minimum of equal lengths, no padding of empty tails, no multiplication by
//! run-time strides).
//!
//! # Memory safety
//!
//! Every read and write of the native code is inside the buffers of the call, whatever the
//! shape analysis says: [`Compiled::call`] checks every length against the layout, and the
//! lowering indexes only by lengths it can vouch for. The analysis gives the capacities of
//! workspace buffers and the lengths of outputs. A length the lowering indexes by is exact
//! (a function of the sizes) only where it is by construction the prologue's value of that
//! length, never merely because the analysis says so; a loop runs over the shortest length
//! of the arrays it reads and writes; an array carried by a loop, or met at the join of an
//! `if`, has the length it arrived with (or its place's capacity, when every state is kept
//! in places of one capacity); views and the zero padding of a destination are clamped to
//! its buffer unless their lengths show at compile time that they fit. Where a write needs a
//! length the types promise but the code cannot show (a scan's first element needs a row of
//! its destination), the function checks it once, before the loop. A function that checks
//! something at run time has a **status cell** after its buffers in the workspace
//! ([`Compiled::status_cell`]; two more cells follow it, which say more of the failure:
//! the index and the length for an index out of bounds): the function clears it first, a
//! failed check sets it and returns at once, and [`Compiled::call`] reports
//! [`JitError::Check`] (or, for an index out of bounds or an int division by zero,
//! [`JitError::Stopped`] with the source position the code records in the cell); the cell
//! holds
//! why: 1 for a length check, which only a bug of the lowering or of the analysis can fail
//! (the tests inject mistakes into the analysis, [`fault`], and check that no guard cell
//! around any buffer is ever read or written), 2 for an index out of bounds (`A[i]`: every
//! index is checked, a failure is the program's error; a position of `scatter_add` outside
//! its target adds nothing), 3 for an int division or remainder by zero; above those two
//! bits, the source position of the failed check ([`error::Stop`]'s `code_at`).
//!
//! # Fusion
//!
//! A `map` or `map2` is not computed where it occurs: its elements are computed where a
//! consumer reads them, inside the consumer's loop (`reduce + 0 (map2 * A B)` is one loop
//! and needs no workspace; a `reduce` summing per-row arrays makes one row at a time). This
//! also applies to a `let`-bound map whose elements are read once, in the same loop nest as
//! the `let`; a map read more than once, or inside a loop that does not also contain its
//! `let`, is computed into a buffer at the `let`. A map that must be stored is written by
//! its body straight into the destination. `zeros_like` and `ones_like` are known constants
//! and are only ever written out when they must be in memory. Shifts are views.
//!
//! A shifted `scanl` whose accumulator is made of reals (`shift1R (scanl f z A)`, the
//! accumulators before each step, or `shift1L`, after each step) is computed in the loop
//! that reads it, which must read its elements once and in order: the accumulator lives in
//! variables of the function (`prod`'s gradient reads the prefix products where it
//! multiplies them). Read any other way it is computed into memory first. A map stored
//! because it is read again later is folded in the loop that stores it when the next
//! binding folds it (`let E = map (t. exp(t - m)) A in let s = sum(E)` is one loop). When
//! the next binding folds one component of its tuple elements (`let G = map2 g X Z in let
//! c = reduce f z (map (t. t.1) G)`) and the rest reads only the others, that component
//! is folded where each element is computed and never stored (it gets one element's room,
//! which every index shares), whatever the accumulator holds: reverse mode's shared pass
//! over a map that maps over a captured array makes this, the captured array's adjoint
//! summed from one column and the operand's kept in the other. The same holds when the
//! folds are components of the result (`(map (t. t.0) G, reduce f z (map (t. t.1) G),
//! reduce g w (map (t. t.2) G))`, a gradient as the optimizer leaves it): every component
//! that folds a column of its own runs in the one loop, each with its accumulator, and a
//! column that a component of the result reads as it is (`map (t. t.0) G`) is stored
//! straight into that component's output buffer.
//!
//! A `reduce` of `+`, `*`, `max` or `min` (its function `s ⊕ t` or `t ⊕ s`) runs with
//! **eight accumulators**, in the blocked order `unfad_syntax::reduction` defines and the
//! interpreter follows: element `8b + j` into accumulator `j` (the first starting at the
//! initial value, the others at the operator's unit), carried two by two in four vectors;
//! then the tree `((a0 ⊕ a4) ⊕ (a2 ⊕ a6)) ⊕ ((a1 ⊕ a5) ⊕ (a3 ⊕ a7))`; then a loop over the
//! `n mod 8` remaining elements. An iteration runs all eight elements when their code is
//! a few machine operations on a few arrays (a dot product: four independent vector
//! chains, so `sum` and `dot` do not wait on the latency of each addition), four (the
//! vectors rotating through the loop's state) when it computes a transcendental, and one
//! (the accumulators in a stack slot) when it runs a loop of its own or many operations.
//! This holds in fused loops too (tuple components, a stored map folded where it is
//! stored). `foldl` stays one element per iteration.
//!
//! **Two elements per instruction.** On hosts that compute on two lanes (x86-64 with
//! SSE4.1, AArch64), loops of light scalar elements (no loop inside, a few dozen
//! operations at most; maps and map2s written to memory, fused loops without a blocked
//! fold, a stored map folded by a `foldl`) run **two elements per iteration**: the
//! element's code emitted for element `2b`, replayed for `2b + 1` from the same bindings,
//! then the last element alone when the length is odd. Each element is computed by the
//! same operations, in the same order, as one at a time. After the function is built, the
//! pass in `lower/lanes.rs` turns what the lowering placed side by side into `f64x2` (and
//! `i64x2`) instructions: the packs of two scalars (a blocked reduction's accumulators,
//! two by two), adjacent stores and loads within a block, and from them, alike
//! computations (same opcode and immediates) down to their operands, the math kernels
//! included (their selects become lane masks, their integer steps `i64x2` operations).
//! Each lane performs the IEEE operation its scalar did, so results stay equal to the
//! interpreter's bit for bit; the scalars left unused are removed.
//!
//! The components of a tuple that are loops over the same length (scalar folds, and arrays
//! written element by element: maps, copies, fills) run as **one loop** (a gradient is
//! typically such a tuple: the value's reduction and one map per parameter, all over the
//! same arrays). Within a block, loads, address computations, arithmetic and run-time
//! function calls are numbered: the same pure computation on the same operands is emitted
//! once, so the fused components share their loads and their `exp`s. A store forgets only
//! the loads from its own buffer (buffers never overlap).
//!
//! # Parallel compilation
//!
//! Cranelift compiles one function on one thread, and most of a large gradient's compile
//! time is Cranelift's (its register allocator above all). [`compile_parallel`] cuts a
//! large term's chain of `let`s in two where the parts are about as large (counted in
//! nodes): the first part computes the statements before the cut and returns the values
//! the rest reads (the crossing values), the second takes them as parameters after the
//! function's own and computes the result (when the result is a tuple, the first part
//! also computes its components that read only what the first part binds, written where
//! the function writes them, if that balances the parts better: a gradient's last
//! statement is often its largest). The first part is lowered first, and the second
//! takes the crossing values' shapes from it rather than from their types (a scan over a
//! range that may be empty has one element where its type `[c]` says none, when `c` is 0).
//! A shift of an array bound before the cut is bound again after it: a view of the array,
//! which crosses instead, not a copy stored beside it.
//! The second thread compiles the larger part while this one compiles the other and the
//! entry, a small function with the
//! ABI above that calls the first part, then the second, the crossing values at the
//! start of the workspace (its length counts them, then the larger of the two parts'
//! workspaces). The results are those of the whole function, bit for bit; what the cut
//! costs at run time is the fusion across it (a map bound before the cut and read after
//! it is stored). Terms under [`split::MIN_NODES`] nodes, terms no cut divides fairly
//! (the smaller part under a quarter), and hosts with one core get one function
//! ([`Compiled::parts`] says which), as from [`compile`].
//!
//! A long term (4000 nodes or more: a straight-line program of a thousand statements) is
//! cut the same way into many chunks of about 300 nodes, lowered one after another and
//! compiled on every core as they come; the entry calls them in order, each reading what
//! earlier ones wrote to the workspace. Cranelift's register allocation is super-linear in
//! a function's live ranges, so this is what keeps the JIT's time linear in the program
//! (docs/compile-scaling.md).
//!
//! # Math kernels in batches
//!
//! Cranelift's vectors have two lanes. Where the host has AVX2 and FMA (or AVX-512), a
//! loop whose light elements run math kernels runs in chunks: the elements' code once to
//! write every kernel's argument to the stack, a call per kernel that applies it to the
//! chunk on four (eight) lanes, compiled by rustc from the same kernel definitions on the
//! AVX2 (AVX-512) registers, and the elements' code again reading the values back. Each
//! lane performs the scalar twin's operations, so the results are unchanged, bit for bit.
//! [`BatchMode`] chooses (the host's by default; off; forced for tests), and
//! `lower/batch.rs` says which loops batch and which kernels stay inline.
//!
//! # What is not done
//!
//! `foldl` and the scans run in the term's order, one element after another; only the
//! blocked reductions and the light elementwise loops are unrolled and paired into lanes.
//! Scans are computed into memory except as above (the adjoints of shifts, which only move
//! elements, included). Values are not shared between loops that are not fused (the
//! optimizer stores the non-linear terms several loops compute, `unfad_opt::share`, and
//! joins a reduced loop to an earlier one over the same arrays, `unfad_opt::siblings`).
//! The components of a tuple that are not fused are written arrays first, so that a scalar
//! component's run-time call (an operator without an inline kernel) does not come before
//! their loops (Cranelift's register allocator spills values live across a call inside the
//! loops that use them).
//! Work that does not depend on a loop's parameters is computed where the term says
//! (hoisting it is the optimizer's business, `unfad_opt::hoist`). Cranelift's verifier
//! runs on every function in debug builds only.
//!
//! ```
//! use unfad_syntax::Program;
//! let mut prog = Program::load("def f(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)").unwrap();
//! let func = prog.inline(prog.entry(None).unwrap()).unwrap();
//! let compiled = unfad_jit::compile(&prog.arena, &func).unwrap();
//! assert_eq!(compiled.workspace_len(&[3]), 0);
//! let (a, b) = ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]);
//! let mut out = [0.0];
//! compiled.call(&[&a, &b], &[3], &mut [&mut out], &mut []).unwrap();
//! assert_eq!(out[0], 32.0);
//! ```

// Every `unsafe` block of the crate is in its three boundaries with the native code:
// `compiled` (Rust calls native code), `batch` and `routines` (native code calls Rust with
// pointers).
#![deny(unsafe_code)]

#[allow(unsafe_code)]
mod batch;
mod codegen;
#[allow(unsafe_code)]
mod compiled;
mod error;
pub mod fault;
mod layout;
mod lower;
mod parallel;
#[allow(unsafe_code)]
mod routines;
mod runtime;
mod shape;
pub mod split;
mod text;
mod value;

use cranelift_module::Module;
use unfad_syntax::{Arena, Func};

pub use compiled::{Bound, Compiled, RawFn};
pub use error::JitError;
pub use layout::{Component, Dim, DimExt, PathStep, Shape};
pub use parallel::{compile_parallel, compile_split_at, compile_whole_unless_long};
pub use text::{asm_text, clif_text, clif_text_parallel};

use codegen::{build, new_module, typed, ENTRY};

/// How native code applies the math kernels in loops whose elements run them (see
/// `lower/batch.rs`): in batches on the host's widest instance, four to sixteen lanes per
/// instruction (`Host`, the default: where the host has AVX2 and FMA, else inline); inline
/// everywhere, two lanes (`Off`); or in batches wherever a loop allows it, on the host's
/// widest instance or else on a baseline one, in chunks of `chunk` elements (`Forced`:
/// for tests, so that batches run on any host and chunks end inside small arrays); or so
/// on the baseline instance even where the host has a wider one (`Portable`, for tests
/// of the code such hosts run). Every mode computes the same values, bit for bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchMode {
    Host,
    Off,
    Forced { chunk: usize },
    Portable { chunk: usize },
}

/// The mode of every later compilation in this process (see [`BatchMode`]).
pub fn set_batch_mode(mode: BatchMode) {
    let chunk = |c: usize| c.clamp(1, lower::BATCH_CHUNK);
    let code = match mode {
        BatchMode::Host => 0,
        BatchMode::Off => 1,
        BatchMode::Forced { chunk: c } => 2 * chunk(c),
        BatchMode::Portable { chunk: c } => 2 * chunk(c) + 1,
    };
    BATCH_MODE.store(code, std::sync::atomic::Ordering::Relaxed);
}

/// Whether later compilations in this process call the vector routines (see
/// `lower/routines.rs`) where their batches are on: true unless turned off here or by the
/// environment variable `UNFAD_ROUTINES=off` (read once). For measurements: both settings
/// compute the same values, bit for bit.
pub fn set_vector_routines(on: bool) {
    ROUTINES.store(u8::from(on) + 1, std::sync::atomic::Ordering::Relaxed);
}

/// 0 unset (the environment decides), 1 off, 2 on (see [`set_vector_routines`]).
static ROUTINES: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Whether compilations call the vector routines now (see [`set_vector_routines`]).
pub(crate) fn vector_routines() -> bool {
    static FROM_ENV: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    match ROUTINES.load(std::sync::atomic::Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => *FROM_ENV.get_or_init(|| std::env::var("UNFAD_ROUTINES").map_or(true, |v| v != "off")),
    }
}

/// The elements of a chunk of a batched loop (see [`BatchMode`]).
pub const BATCH_CHUNK: usize = lower::BATCH_CHUNK;

/// How many reals the host's batches compute at once (see [`BatchMode`]): 8 with AVX-512,
/// 4 with AVX2 (a register per value), or `None` where the host has no instance wider
/// than the JIT's own two lanes and `Host` batches nothing.
pub fn host_batch_lanes() -> Option<usize> {
    batch::Width::host().map(batch::Width::lanes)
}

/// The mode [`set_batch_mode`] set: 0 host, 1 off, `2 * chunk` forced, `2 * chunk + 1`
/// portable.
static BATCH_MODE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How compilations batch their kernels now, if they do: as [`set_batch_mode`] set, or
/// else as the environment variable `UNFAD_BATCH` says (`off`, `host`, or `forced:N` and
/// `portable:N` with `N` elements per chunk), read once, or else the host's.
pub(crate) fn batching() -> Option<lower::Batching> {
    static FROM_ENV: std::sync::Once = std::sync::Once::new();
    FROM_ENV.call_once(|| {
        let Ok(v) = std::env::var("UNFAD_BATCH") else {
            return;
        };
        let chunk = |s: &str| s.parse::<usize>().ok();
        let mode = match v.split_once(':') {
            None if v == "off" => Some(BatchMode::Off),
            None if v == "host" => Some(BatchMode::Host),
            Some(("forced", n)) => chunk(n).map(|chunk| BatchMode::Forced { chunk }),
            Some(("portable", n)) => chunk(n).map(|chunk| BatchMode::Portable { chunk }),
            _ => None,
        };
        // Only where no mode was set yet: a program's own choice comes first.
        if let Some(mode) = mode {
            if BATCH_MODE.load(std::sync::atomic::Ordering::Relaxed) == 0 {
                set_batch_mode(mode);
            }
        }
    });
    match BATCH_MODE.load(std::sync::atomic::Ordering::Relaxed) {
        0 => lower::Batching::host(),
        1 => None,
        code => Some(lower::Batching {
            width: match code % 2 {
                0 => batch::Width::host().unwrap_or(batch::Width::Portable),
                _ => batch::Width::Portable,
            },
            chunk: code / 2,
            nested: true,
        }),
    }
}
use compiled::finish;
use parallel::{keep_contexts, take_context};

/// Compile `func` (whose nodes live in `arena`) to native code for the host, as one
/// function.
pub fn compile(arena: &Arena, func: &Func) -> Result<Compiled, JitError> {
    let arena = typed(arena, func)?;
    let mut module = new_module()?;
    let mut ctx = take_context(&module);
    let (id, built) = build(&arena, func, &mut module, &mut ctx, ENTRY)?;
    module
        .define_function(id, &mut ctx)
        .map_err(|e| JitError::Codegen(format!("{e:?}")))?;
    keep_contexts([ctx]);
    finish(module, id, built, 1)
}
