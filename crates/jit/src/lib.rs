//! Lowering of first-order terms to Cranelift IR, and JIT compilation to native code.
//!
//! [`compile`] takes a closed, type-checked [`Func`] of the first-order fragment: variables of
//! ground type (reals, tuples, arrays of ground type) or conditions, lambdas only as the
//! function argument of `map`, `map2`, `reduce`, `foldl`, `scanl` and `scanr` (their bodies may
//! use variables of the enclosing scope), no application and no calls. Both users' primal
//! programs and optimized gradient terms (scans, shifts, `zeros_like`, `ones_like`, n-tuples,
//! `if` on any type) are in that fragment. Anything else is an [`JitError::Unsupported`].
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
//! (two buffers alternate), not its lengths and strides, which are the same on every
//! iteration; an exact length is the sizes' value. So the loops inside a fold's body see
//! constant or prologue lengths (no run-time minimum of equal lengths, no padding of empty
//! tails, no multiplication by run-time strides).
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
//! summed from one column and the operand's kept in the other.
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
//! statement is often its largest). The second thread compiles the larger part
//! while this one lowers and compiles the other and the entry, a small function with the
//! ABI above that calls the first part, then the second, the crossing values at the
//! start of the workspace (its length counts them, then the larger of the two parts'
//! workspaces). The results are those of the whole function, bit for bit; what the cut
//! costs at run time is the fusion across it (a map bound before the cut and read after
//! it is stored). Terms under [`split::MIN_NODES`] nodes, terms no cut divides fairly
//! (the smaller part under a quarter), and hosts with one core get one function
//! ([`Compiled::parts`] says which), as from [`compile`].
//!
//! # What is not done
//!
//! Loops are not vectorised or unrolled, and reductions run in the term's order (so that
//! results agree with the interpreter bit for bit). Scans are computed into memory except
//! as above. Values are not shared between loops that are not fused (the optimizer stores
//! the non-linear terms several loops compute, `unfad_opt::share`). The components of a
//! tuple that are not fused are written arrays first, so that a scalar component's
//! run-time call does not come before their loops (Cranelift's register allocator spills
//! values live across a call inside the loops that use them).
//! Array subterms of a function argument that do not depend on its parameters are
//! recomputed in every iteration, as the term says (hoisting them is the optimizer's
//! business). Cranelift's verifier runs on every function in debug builds only.
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

mod error;
mod layout;
mod lower;
mod runtime;
mod shape;
pub mod split;
mod value;

use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock};

use cranelift_codegen::ir::{
    types, AbiParam, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, UserFuncName, Value,
};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Linkage, Module};
use unfad_syntax::typeck::{infer, NoSource};
use unfad_syntax::{Arena, Func, Type};

pub use error::JitError;
pub use layout::{Component, Dim, PathStep, Shape};

use error::JitResult;
use layout::SizeExpr;
use lower::Translator;
use shape::{Analysis, SShape};

/// The native function: `f(inputs, sizes, outputs, workspace)` (see the crate docs).
pub type RawFn = unsafe extern "C" fn(*const *const f64, *const u64, *const *mut f64, *mut f64);

/// A compiled function. Cloning is cheap; the native code lives until the last clone is
/// dropped.
#[derive(Clone)]
pub struct Compiled {
    inner: Arc<Inner>,
}

struct Inner {
    /// Owns the executable memory; freed on drop.
    module: Mutex<Option<JITModule>>,
    entry: RawFn,
    /// The functions the term was compiled as (2 when cut in two).
    parts: usize,
    size_vars: Vec<String>,
    param_names: Vec<String>,
    inputs: Vec<Component>,
    outputs: Vec<Component>,
    param_shapes: Vec<Shape>,
    result_shape: Shape,
    workspace: SizeExpr,
    checks: Vec<SizeExpr>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let module = match self.module.get_mut() {
            Ok(m) => m.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(module) = module {
            // SAFETY: the code is only reachable through `entry`, which is called by
            // `Compiled::call` (which borrows a clone of this `Arc`) or through the pointer
            // `Compiled::fn_ptr` hands out, documented to be valid only while a clone of the
            // `Compiled` is alive. The last clone is being dropped, so no call is running and
            // none can start.
            unsafe { module.free_memory() };
        }
    }
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("size_vars", &self.inner.size_vars)
            .field("inputs", &self.inner.inputs)
            .field("outputs", &self.inner.outputs)
            .finish_non_exhaustive()
    }
}

impl Compiled {
    /// The native function (see the crate docs for its ABI). It stays valid while this
    /// `Compiled` or a clone of it is alive.
    pub fn fn_ptr(&self) -> RawFn {
        self.inner.entry
    }

    /// How many functions the term was compiled as: 1, or 2 when [`compile_parallel`] cut
    /// it in two.
    pub fn parts(&self) -> usize {
        self.inner.parts
    }

    /// The input components, over all parameters in order.
    pub fn inputs(&self) -> &[Component] {
        &self.inner.inputs
    }

    /// The output components of the result.
    pub fn outputs(&self) -> &[Component] {
        &self.inner.outputs
    }

    /// The size variables, in the order the `sizes` argument gives their values.
    pub fn size_vars(&self) -> &[String] {
        &self.inner.size_vars
    }

    /// The parameter names, indexed like [`Component::index`].
    pub fn param_names(&self) -> &[String] {
        &self.inner.param_names
    }

    /// The shape of parameter `k` (to convert its value to components: [`Shape::scatter`]).
    pub fn param_shape(&self, k: usize) -> Option<&Shape> {
        self.inner.param_shapes.get(k)
    }

    /// The shape of the result (to read it from the components: [`Shape::gather`]).
    pub fn result_shape(&self) -> &Shape {
        &self.inner.result_shape
    }

    /// The number of reals the workspace must hold for these sizes (`usize::MAX` if the
    /// sizes are missing or too large to run with).
    pub fn workspace_len(&self, sizes: &[u64]) -> usize {
        self.inner
            .workspace
            .eval(sizes)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(usize::MAX)
    }

    /// Run the native code after checking every length against the layout: `inputs` are
    /// the input components, `outputs` the output components (filled by the call).
    pub fn call(
        &self,
        inputs: &[&[f64]],
        sizes: &[u64],
        outputs: &mut [&mut [f64]],
        workspace: &mut [f64],
    ) -> Result<(), JitError> {
        let inner = &*self.inner;
        let bad = |msg: String| Err(JitError::Call(msg));
        if sizes.len() != inner.size_vars.len() {
            return bad(format!(
                "{} size(s) given, the function has {} ({})",
                sizes.len(),
                inner.size_vars.len(),
                inner.size_vars.join(", ")
            ));
        }
        if inner.checks.iter().any(|e| e.eval(sizes).is_none()) {
            return bad(format!("the sizes {sizes:?} are too large"));
        }
        let check = |what: &str, comps: &[Component], lens: &mut dyn Iterator<Item = usize>| {
            for (k, c) in comps.iter().enumerate() {
                let owner = match what {
                    "input" => inner.param_names.get(c.index).map_or("?", String::as_str),
                    _ => "result",
                };
                let want = c.len(sizes);
                let got = lens.next();
                if want.is_none() || want != got {
                    return bad(format!(
                        "{what} component {k} (`{}`) has {} element(s), the sizes {sizes:?} need {}",
                        c.describe(owner),
                        got.map_or("no".to_string(), |n| n.to_string()),
                        want.map_or("too many".to_string(), |n| n.to_string()),
                    ));
                }
            }
            Ok(())
        };
        if inputs.len() != inner.inputs.len() {
            return bad(format!(
                "{} input component(s) given, the function takes {}",
                inputs.len(),
                inner.inputs.len()
            ));
        }
        if outputs.len() != inner.outputs.len() {
            return bad(format!(
                "{} output component(s) given, the function has {}",
                outputs.len(),
                inner.outputs.len()
            ));
        }
        check("input", &inner.inputs, &mut inputs.iter().map(|s| s.len()))?;
        check(
            "output",
            &inner.outputs,
            &mut outputs.iter().map(|s| s.len()),
        )?;
        let need = self.workspace_len(sizes);
        if workspace.len() < need {
            return bad(format!(
                "the workspace has {} element(s), the sizes {sizes:?} need {need}",
                workspace.len()
            ));
        }
        const ON_STACK: usize = 16;
        let mut in_stack = [std::ptr::null::<f64>(); ON_STACK];
        let mut out_stack = [std::ptr::null_mut::<f64>(); ON_STACK];
        let in_heap: Vec<*const f64>;
        let out_heap: Vec<*mut f64>;
        let in_ptrs: &[*const f64] = if inputs.len() <= ON_STACK {
            for (p, s) in in_stack.iter_mut().zip(inputs) {
                *p = s.as_ptr();
            }
            &in_stack[..inputs.len()]
        } else {
            in_heap = inputs.iter().map(|s| s.as_ptr()).collect();
            &in_heap
        };
        let out_ptrs: &[*mut f64] = if outputs.len() <= ON_STACK {
            for (p, s) in out_stack.iter_mut().zip(outputs.iter_mut()) {
                *p = s.as_mut_ptr();
            }
            &out_stack[..outputs.len()]
        } else {
            out_heap = outputs.iter_mut().map(|s| s.as_mut_ptr()).collect();
            &out_heap
        };
        // # Safety
        //
        // The native code reads `inputs[k][..inputs()[k].len(sizes)]` for every input
        // component, `sizes[..size_vars().len()]`, writes `outputs[k][..outputs()[k].len(sizes)]`
        // and uses `workspace[..workspace_len(sizes)]`, and nothing else; every count it
        // computes from the sizes was checked above to be representable, so its wrapping
        // arithmetic gives the same values. All those lengths were checked against the
        // slices just now. The output slices are exclusive borrows, so they overlap neither
        // each other, nor the inputs, nor the workspace. The code is alive: `self` holds
        // the module that owns it.
        unsafe {
            (inner.entry)(
                in_ptrs.as_ptr(),
                sizes.as_ptr(),
                out_ptrs.as_ptr(),
                workspace.as_mut_ptr(),
            );
        }
        Ok(())
    }
}

/// Cranelift contexts kept between compilations: a context that is reused keeps its
/// allocations (the register allocator's above all), which a new one makes again.
static CONTEXTS: Mutex<Vec<Context>> = Mutex::new(Vec::new());

/// Contexts kept at most (three per compilation running at once, for two).
const KEPT_CONTEXTS: usize = 6;

/// A context for `module`'s functions, kept from an earlier compilation if there is one.
fn take_context(module: &JITModule) -> Context {
    let kept = CONTEXTS.lock().ok().and_then(|mut v| v.pop());
    match kept {
        Some(mut ctx) => {
            module.clear_context(&mut ctx);
            ctx
        }
        None => module.make_context(),
    }
}

/// Keep `ctxs` for later compilations (emptied when taken).
fn keep_contexts<const N: usize>(ctxs: [Context; N]) {
    if let Ok(mut v) = CONTEXTS.lock() {
        for ctx in ctxs {
            if v.len() < KEPT_CONTEXTS {
                v.push(ctx);
            }
        }
    }
}

/// The name of the function the ABI describes.
const ENTRY: &str = "unfad_entry";

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

/// [`compile`], cut in two for a large term on a host with two cores or more: Cranelift
/// compiles the parts on two threads (see "Parallel compilation" in the crate docs). A
/// term that is small, or that no cut divides fairly, is compiled whole. Adds the nodes
/// of the first part's result to `arena` (and types `func` there if it is not typed).
pub fn compile_parallel(arena: &mut Arena, func: &Func) -> Result<Compiled, JitError> {
    if cores() < 2 {
        return compile(arena, func);
    }
    type_in_place(arena, func)?;
    match split::split(arena, func) {
        Some(parts) => compile_parts(arena, func, &parts),
        None => compile(arena, func),
    }
}

/// [`compile_parallel`] with the cut after statement `at` of the chain whatever the
/// sizes ([`compile`] where there is no such cut), the first part computing the result's
/// components it can if `take`: the cuts tested on small terms.
#[doc(hidden)]
pub fn compile_split_at(
    arena: &mut Arena,
    func: &Func,
    at: usize,
    take: bool,
) -> Result<Compiled, JitError> {
    type_in_place(arena, func)?;
    match split::split_at(arena, func, split::Cut { at, take }) {
        Some(parts) => compile_parts(arena, func, &parts),
        None => compile(arena, func),
    }
}

/// Type-check `func` in `arena` unless it is typed already.
fn type_in_place(arena: &mut Arena, func: &Func) -> JitResult<()> {
    if arena.type_of(func.body).is_none() {
        infer(arena, &NoSource, func.body).map_err(|e| JitError::Type(e.to_string()))?;
    }
    Ok(())
}

/// The two parts of `func` and the entry running them, compiled on two threads.
fn compile_parts(arena: &Arena, func: &Func, parts: &split::Parts) -> Result<Compiled, JitError> {
    let isa = host_isa()?;
    let mut module = new_module()?;
    let mut entry = take_context(&module);
    // The larger part compiles on another thread while this one lowers and compiles the
    // other part and the entry.
    let mut ctxs = [take_context(&module), take_context(&module)];
    let names = ["unfad_first", "unfad_second"];
    let funcs = [&parts.first, &parts.second];
    let (far, near) = if parts.first_larger { (0, 1) } else { (1, 0) };
    let [first_ctx, second_ctx] = &mut ctxs;
    let (far_ctx, near_ctx) = if far == 0 {
        (first_ctx, second_ctx)
    } else {
        (second_ctx, first_ctx)
    };
    let far_built = build(arena, funcs[far], &mut module, far_ctx, names[far])?;
    let built = std::thread::scope(|s| {
        let other = std::thread::Builder::new()
            .name("unfad-jit".into())
            .spawn_scoped(s, || compile_code(far_ctx, &*isa));
        let mine = (|| {
            let near_built = build(arena, funcs[near], &mut module, near_ctx, names[near])?;
            let ((id1, b1), (id2, b2)) = if far == 0 {
                (far_built, near_built)
            } else {
                (near_built, far_built)
            };
            let n_in = b1.inputs.len();
            let Some(lens) = crossing_lens(&b1, &b2) else {
                return Ok(None);
            };
            let Some(results) = merge_results(&b1, &b2, parts, lens.len()) else {
                return Ok(None);
            };
            let id0 = build_entry(
                &mut module,
                &mut entry,
                [id1, id2],
                n_in,
                &lens,
                (&results.first_route, results.second_route.as_deref()),
            )?;
            compile_code(near_ctx, &*isa)?;
            compile_code(&mut entry, &*isa)?;
            Ok(Some((id0, [id1, id2], b1, b2, lens, results)))
        })();
        match other {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| Err(JitError::Internal("the compiling thread panicked".into())))
                .and(mine),
            // No second thread: compiled whole below.
            Err(_) => Ok(None),
        }
    })?;
    let Some((id0, ids, b1, b2, lens, results)) = built else {
        return compile(arena, func);
    };
    for (id, ctx) in ids.into_iter().zip(&ctxs).chain([(id0, &entry)]) {
        define_compiled(&mut module, id, ctx)?;
    }
    let [c1, c2] = ctxs;
    keep_contexts([c1, c2, entry]);
    let workspace = SizeExpr::sum(lens.iter().cloned().chain([SizeExpr::max_of([
        b1.workspace.clone(),
        b2.workspace.clone(),
    ])]));
    let mut checks = b1.checks;
    checks.extend(b2.checks);
    checks.extend(lens);
    checks.push(workspace.clone());
    let built = Built {
        size_vars: b1.size_vars,
        param_names: b1.param_names,
        inputs: b1.inputs,
        outputs: results.outputs,
        param_shapes: b1.param_shapes,
        result_shape: results.shape,
        workspace,
        checks,
    };
    finish(module, id0, built, 2)
}

/// The lengths of the values crossing from the first part to the second (the first
/// outputs of the first part), if the second reads them as the first writes them and
/// both number the sizes alike (the lengths the semantics computes may differ from those
/// of the types).
fn crossing_lens(b1: &Built, b2: &Built) -> Option<Vec<SizeExpr>> {
    let n_in = b1.inputs.len();
    let crossing = b2.inputs.get(n_in..)?;
    let agree = b2.size_vars == b1.size_vars
        && crossing.len() <= b1.outputs.len()
        && crossing
            .iter()
            .zip(&b1.outputs)
            .all(|(i, o)| i.dims == o.dims);
    agree.then(|| {
        b1.outputs[..crossing.len()]
            .iter()
            .map(|c| SizeExpr::product(&c.dims))
            .collect()
    })
}

/// The function's result put together from its parts'.
struct Results {
    /// Its outputs, as the whole function would have them.
    outputs: Vec<Component>,
    shape: Shape,
    /// Where the first part's outputs after its crossing values are among the function's.
    first_route: Vec<usize>,
    /// Where the second part's outputs are among the function's; `None` when it writes
    /// all of them.
    second_route: Option<Vec<usize>>,
}

/// The result of the function cut into `parts`, whose first part writes `crossing_leaves`
/// outputs (the crossing values) before those of the components it takes.
fn merge_results(
    b1: &Built,
    b2: &Built,
    parts: &split::Parts,
    crossing_leaves: usize,
) -> Option<Results> {
    if parts.taken.is_empty() {
        return Some(Results {
            outputs: b2.outputs.clone(),
            shape: b2.result_shape.clone(),
            first_route: Vec::new(),
            second_route: None,
        });
    }
    let m = parts.result_items;
    let left = m - parts.taken.len();
    let Shape::Tuple(first_items) = &b1.result_shape else {
        return None;
    };
    let second_items = match &b2.result_shape {
        Shape::Tuple(items) if left > 1 => items.clone(),
        s if left == 1 => vec![s.clone()],
        _ => return None,
    };
    // Each part's outputs by the position of their result item (the first part's after
    // its crossing values), with the path below that item.
    let by_item = |outputs: &[Component], skip: usize, whole: bool, n: usize| {
        let mut items: Vec<Vec<Component>> = vec![Vec::new(); n];
        for c in outputs.iter().skip(skip) {
            let (k, rest) = match c.path.split_first() {
                Some((PathStep::Field(k), rest)) if !whole => (*k as usize, rest),
                _ => (0, &c.path[..]),
            };
            items.get_mut(k)?.push(Component {
                index: c.index,
                path: rest.to_vec(),
                dims: c.dims.clone(),
            });
        }
        Some(items)
    };
    let first = by_item(&b1.outputs, crossing_leaves, false, first_items.len())?;
    let second = by_item(&b2.outputs, 0, left == 1, second_items.len())?;
    let mut outputs = Vec::new();
    let mut shapes = Vec::with_capacity(m);
    let mut routes = [Vec::new(), Vec::new()];
    let (mut t, mut l) = (0, 0);
    for j in 0..m {
        let (cs, shape, route) = if parts.taken.contains(&j) {
            t += 1;
            (
                &first[parts.crossing + t - 1],
                first_items.get(parts.crossing + t - 1)?,
                0,
            )
        } else {
            l += 1;
            (&second[l - 1], second_items.get(l - 1)?, 1)
        };
        shapes.push(shape.clone());
        for c in cs {
            routes[route].push(outputs.len());
            let mut path = vec![PathStep::Field(j as u32)];
            path.extend_from_slice(&c.path);
            outputs.push(Component {
                index: c.index,
                path,
                dims: c.dims.clone(),
            });
        }
    }
    let [first_route, second_route] = routes;
    Some(Results {
        outputs,
        shape: Shape::Tuple(shapes),
        first_route,
        second_route: Some(second_route),
    })
}

/// The number of cores this process may use (known once).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A module for the host with the run-time functions registered.
fn new_module() -> JitResult<JITModule> {
    let mut jb = JITBuilder::with_isa(host_isa()?, default_libcall_names());
    for (name, ptr) in runtime::symbols() {
        jb.symbol(name, ptr);
    }
    Ok(JITModule::new(jb))
}

/// Cranelift's compilation of the function in `ctx` (kept in `ctx`).
fn compile_code(ctx: &mut Context, isa: &dyn cranelift_codegen::isa::TargetIsa) -> JitResult<()> {
    let mut plane = cranelift_codegen::control::ControlPlane::default();
    ctx.compile(isa, &mut plane)
        .map(|_| ())
        .map_err(|e| JitError::Codegen(format!("{:?}", e.inner)))
}

/// Define function `id` of `module` with the code compiled in `ctx`.
fn define_compiled(module: &mut JITModule, id: FuncId, ctx: &Context) -> JitResult<()> {
    let Some(code) = ctx.compiled_code() else {
        return Err(JitError::Internal("a part was not compiled".into()));
    };
    let relocs: Vec<cranelift_module::ModuleReloc> = code
        .buffer
        .relocs()
        .iter()
        .map(|r| cranelift_module::ModuleReloc::from_mach_reloc(r, &ctx.func, id))
        .collect();
    module
        .define_function_bytes(
            id,
            code.buffer.alignment as u64,
            code.code_buffer(),
            &relocs,
        )
        .map_err(|e| JitError::Codegen(format!("{e:?}")))
}

/// The entry of a function cut in two: with the crossing values (of lengths `lens`) at
/// the start of the workspace, it calls `parts[0]` with the inputs, writing them, then
/// `parts[1]` with the inputs followed by them; both use the rest of the workspace.
fn build_entry(
    module: &mut JITModule,
    ctx: &mut Context,
    parts: [FuncId; 2],
    n_in: usize,
    lens: &[SizeExpr],
    routes: (&[usize], Option<&[usize]>),
) -> JitResult<FuncId> {
    let ptr = types::I64;
    let id = declare_in(module, ctx, ENTRY)?;
    let calls = parts.map(|p| module.declare_func_in_func(p, &mut ctx.func));
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
    let block = b.create_block();
    b.append_block_params_for_function_params(block);
    b.switch_to_block(block);
    let [inputs, sizes, outputs, ws]: [Value; 4] = b
        .block_params(block)
        .try_into()
        .map_err(|_| JitError::Internal("the entry block has the wrong parameters".into()))?;
    let slot = |b: &mut FunctionBuilder, n: usize| {
        let bytes = u32::try_from(8 * n.max(1)).unwrap_or(u32::MAX);
        b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, bytes, 3))
    };
    let (first_route, second_route) = routes;
    let all_in = slot(&mut b, n_in + lens.len());
    let first_out = slot(&mut b, lens.len() + first_route.len());
    let flags = MemFlagsData::trusted();
    let offset = |k: usize| i32::try_from(8 * k).unwrap_or(i32::MAX);
    for k in 0..n_in {
        let p = b.ins().load(ptr, flags, inputs, offset(k));
        b.ins().stack_store(ptr, p, all_in, offset(k));
    }
    // Every address is below the workspace's length, which a call checks.
    let mut counts = lower::SizeValues::new(sizes);
    let mut addr = ws;
    for (k, len) in lens.iter().enumerate() {
        b.ins().stack_store(ptr, addr, all_in, offset(n_in + k));
        b.ins().stack_store(ptr, addr, first_out, offset(k));
        let n = counts.get(&mut b, len);
        let bytes = b.ins().ishl_imm_s(n, 3);
        addr = b.ins().iadd(addr, bytes);
    }
    // The outputs each part writes, picked from the function's.
    let pick = |b: &mut FunctionBuilder,
                to: cranelift_codegen::ir::StackSlot,
                at: usize,
                route: &[usize]| {
        for (k, &o) in route.iter().enumerate() {
            let p = b.ins().load(ptr, flags, outputs, offset(o));
            b.ins().stack_store(ptr, p, to, offset(at + k));
        }
    };
    pick(&mut b, first_out, lens.len(), first_route);
    let second_out = match second_route {
        Some(route) => {
            let s = slot(&mut b, route.len());
            pick(&mut b, s, 0, route);
            b.ins().stack_addr(ptr, s, 0)
        }
        None => outputs,
    };
    let pin = b.ins().stack_addr(ptr, all_in, 0);
    let pout = b.ins().stack_addr(ptr, first_out, 0);
    b.ins().call(calls[0], &[inputs, sizes, pout, addr]);
    b.ins().call(calls[1], &[pin, sizes, second_out, addr]);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(module.isa().frontend_config());
    verify(ctx, module)?;
    Ok(id)
}

/// Cranelift's verifier on the function in `ctx`, in debug builds (tests) only.
fn verify(ctx: &Context, module: &JITModule) -> JitResult<()> {
    if cfg!(debug_assertions) {
        cranelift_codegen::verify_function(&ctx.func, module.isa()).map_err(|e| {
            JitError::Codegen(format!(
                "the generated code fails verification:\n{}",
                cranelift_codegen::print_errors::pretty_verifier_error(&ctx.func, None, e)
            ))
        })?;
    }
    Ok(())
}

/// Declare the function `name` of `module` with the ABI's signature, `void f(ptr, ptr,
/// ptr, ptr)` in the host's calling convention, as the function `ctx` builds.
fn declare_in(module: &mut JITModule, ctx: &mut Context, name: &str) -> JitResult<FuncId> {
    let mut sig = module.make_signature();
    for _ in 0..4 {
        sig.params.push(AbiParam::new(types::I64));
    }
    let id = module
        .declare_function(name, Linkage::Local, &sig)
        .map_err(|e| JitError::Codegen(e.to_string()))?;
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    Ok(id)
}

/// Finalize `module` and wrap its function `id`, which has the ABI's signature.
fn finish(
    mut module: JITModule,
    id: FuncId,
    built: Built,
    parts: usize,
) -> Result<Compiled, JitError> {
    module
        .finalize_definitions()
        .map_err(|e| JitError::Codegen(e.to_string()))?;
    let code = module.get_finalized_function(id);
    // SAFETY: `code` is the address of the function just compiled with the signature
    // (ptr, ptr, ptr, ptr) -> () in the host's default calling convention, which is the C
    // ABI of `RawFn`; it stays valid as long as `module`, which `Inner` owns, is alive.
    let entry: RawFn = unsafe { std::mem::transmute::<*const u8, RawFn>(code) };
    Ok(Compiled {
        inner: Arc::new(Inner {
            module: Mutex::new(Some(module)),
            entry,
            parts,
            size_vars: built.size_vars,
            param_names: built.param_names,
            inputs: built.inputs,
            outputs: built.outputs,
            param_shapes: built.param_shapes,
            result_shape: built.result_shape,
            workspace: built.workspace,
            checks: built.checks,
        }),
    })
}

/// The Cranelift IR of `func`, as text (before Cranelift's optimizations).
pub fn clif_text(arena: &Arena, func: &Func) -> Result<String, JitError> {
    let arena = typed(arena, func)?;
    let mut module = new_module()?;
    let mut ctx = module.make_context();
    build(&arena, func, &mut module, &mut ctx, ENTRY)?;
    Ok(ctx.func.display().to_string())
}

/// The Cranelift IR [`compile_parallel`] compiles: [`clif_text`] of the whole term, or,
/// when it cuts the term in two, of the two parts and the entry that runs them.
pub fn clif_text_parallel(arena: &mut Arena, func: &Func) -> Result<String, JitError> {
    if cores() >= 2 {
        type_in_place(arena, func)?;
        if let Some(parts) = split::split(arena, func) {
            let mut module = new_module()?;
            let [mut c1, mut c2, mut c0] = [(); 3].map(|()| module.make_context());
            let (id1, b1) = build(arena, &parts.first, &mut module, &mut c1, "unfad_first")?;
            let (id2, b2) = build(arena, &parts.second, &mut module, &mut c2, "unfad_second")?;
            let lens = crossing_lens(&b1, &b2);
            let results = lens
                .as_ref()
                .and_then(|l| merge_results(&b1, &b2, &parts, l.len()));
            if let (Some(lens), Some(results)) = (lens, results) {
                let n_in = b1.inputs.len();
                build_entry(
                    &mut module,
                    &mut c0,
                    [id1, id2],
                    n_in,
                    &lens,
                    (&results.first_route, results.second_route.as_deref()),
                )?;
                return Ok(format!(
                    "; the first part (compiled on one thread)\n{}\n\n\
                     ; the second part (compiled on another)\n{}\n\n\
                     ; the entry: the first part, then the second\n{}",
                    c1.func.display(),
                    c2.func.display(),
                    c0.func.display()
                ));
            }
        }
    }
    clif_text(arena, func)
}

/// The machine code of `func` for the host, as assembly text (after Cranelift's
/// optimizations and register allocation): what to read when tuning the lowering.
pub fn asm_text(arena: &Arena, func: &Func) -> Result<String, JitError> {
    let arena = typed(arena, func)?;
    let isa = host_isa()?;
    let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    let mut ctx = module.make_context();
    build(&arena, func, &mut module, &mut ctx, ENTRY)?;
    ctx.set_disasm(true);
    let mut plane = cranelift_codegen::control::ControlPlane::default();
    let code = ctx
        .compile(module.isa(), &mut plane)
        .map_err(|e| JitError::Codegen(format!("{:?}", e.inner)))?;
    Ok(code.vcode.clone().unwrap_or_default())
}

/// The arena with every node of `func` typed (type-checking a copy if needed).
fn typed<'a>(arena: &'a Arena, func: &Func) -> JitResult<Cow<'a, Arena>> {
    if arena.type_of(func.body).is_some() {
        return Ok(Cow::Borrowed(arena));
    }
    let mut copy = arena.clone();
    infer(&mut copy, &NoSource, func.body).map_err(|e| JitError::Type(e.to_string()))?;
    Ok(Cow::Owned(copy))
}

/// The target ISA of the host, with the flags this crate compiles with.
fn host_isa() -> JitResult<OwnedTargetIsa> {
    static ISA: OnceLock<Result<OwnedTargetIsa, String>> = OnceLock::new();
    ISA.get_or_init(|| {
        let mut flags = settings::builder();
        let verify = if cfg!(debug_assertions) {
            "true"
        } else {
            "false"
        };
        for (k, v) in [
            ("opt_level", "speed"),
            ("is_pic", "false"),
            ("use_colocated_libcalls", "false"),
            ("enable_verifier", verify),
        ] {
            flags.set(k, v).map_err(|e| e.to_string())?;
        }
        let builder = cranelift_native::builder().map_err(|e| e.to_string())?;
        builder
            .finish(settings::Flags::new(flags))
            .map_err(|e| e.to_string())
    })
    .clone()
    .map_err(JitError::Codegen)
}

/// What the lowering found out besides the code.
struct Built {
    size_vars: Vec<String>,
    param_names: Vec<String>,
    inputs: Vec<Component>,
    outputs: Vec<Component>,
    param_shapes: Vec<Shape>,
    result_shape: Shape,
    workspace: SizeExpr,
    checks: Vec<SizeExpr>,
}

/// The components of a value of shape `s` belonging to parameter (or result) `index`.
fn components(
    s: &SShape,
    index: usize,
    path: &mut Vec<PathStep>,
    dims: &mut Vec<Dim>,
    out: &mut Vec<Component>,
) {
    match s {
        SShape::Real => out.push(Component {
            index,
            path: path.clone(),
            dims: dims.clone(),
        }),
        SShape::Bool => {}
        SShape::Tuple(items) => {
            for (i, s) in items.iter().enumerate() {
                path.push(PathStep::Field(i as u32));
                components(s, index, path, dims, out);
                path.pop();
            }
        }
        SShape::Arr(sa) => {
            path.push(PathStep::Elements);
            dims.push(sa.len);
            components(&sa.elem, index, path, dims, out);
            dims.pop();
            path.pop();
        }
    }
}

/// Lower `func` into `ctx.func`, declared in `module`.
fn build(
    arena: &Arena,
    func: &Func,
    module: &mut JITModule,
    ctx: &mut Context,
    name: &str,
) -> JitResult<(FuncId, Built)> {
    match build_with(arena, func, module, ctx, name, false) {
        Err(JitError::Internal(why)) if why.contains("read twice") => {
            ctx.clear();
            build_with(arena, func, module, ctx, name, true)
        }
        r => r,
    }
}

/// [`build`], computing into memory the unevaluated arrays read more than once where they
/// are bound if `force_read_twice` (see [`Translator::force_read_twice`]).
fn build_with(
    arena: &Arena,
    func: &Func,
    module: &mut JITModule,
    ctx: &mut Context,
    name: &str,
    force_read_twice: bool,
) -> JitResult<(FuncId, Built)> {
    let mut size_vars: Vec<Arc<str>> = Vec::new();
    let mut param_names = Vec::new();
    for &p in &func.params {
        let Some(t) = arena.var_type(p) else {
            return Err(JitError::Type(format!(
                "parameter `{}` has no type",
                arena.var_name(p)
            )));
        };
        t.size_vars(&mut size_vars);
        param_names.push(arena.var_name(p).to_string());
    }
    let index = |name: &str| {
        size_vars
            .iter()
            .position(|v| &**v == name)
            .map(|i| i as u32)
    };
    let (an, result) = Analysis::run(arena, func, &index)?;
    if matches!(func.ret, Type::Bool) || matches!(result, SShape::Bool) {
        return Err(JitError::Unsupported(
            "the function returns a condition; results are reals, tuples and arrays".into(),
        ));
    }
    let mut inputs = Vec::new();
    let mut param_shapes = Vec::new();
    for (k, &p) in func.params.iter().enumerate() {
        let s = an.var_shape(p)?.clone();
        components(&s, k, &mut Vec::new(), &mut Vec::new(), &mut inputs);
        param_shapes.push(s);
    }
    let mut outputs = Vec::new();
    components(&result, 0, &mut Vec::new(), &mut Vec::new(), &mut outputs);

    let ptr = module.target_config().pointer_type();
    if ptr != types::I64 {
        return Err(JitError::Unsupported(
            "a host without 64-bit pointers".into(),
        ));
    }
    let id = declare_in(module, ctx, name)?;
    let frontend = module.isa().frontend_config();

    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    // The entry block comes first in the layout but is filled last (with the prologue).
    b.func.layout.append_block(entry);
    let [p_inputs, p_sizes, p_outputs, p_ws]: [Value; 4] = b
        .block_params(entry)
        .try_into()
        .map_err(|_| JitError::Internal("the entry block has the wrong parameters".into()))?;
    let main = b.create_block();
    b.switch_to_block(main);
    // The pointer arrays are read-only: their loads may move to where the pointers are used.
    let flags = MemFlagsData::trusted().with_readonly().with_can_move();
    let load_ptrs = |b: &mut FunctionBuilder, base: Value, n: usize| -> Vec<Value> {
        (0..n)
            .map(|k| b.ins().load(ptr, flags, base, (k as i32).wrapping_mul(8)))
            .collect()
    };
    let in_ptrs = load_ptrs(&mut b, p_inputs, inputs.len());
    let out_ptrs = load_ptrs(&mut b, p_outputs, outputs.len());

    let mut t = Translator::new(b, module, arena, &an, main);
    if force_read_twice {
        t.force_read_twice();
    }
    let mut it = in_ptrs.iter();
    for (&p, s) in func.params.iter().zip(&param_shapes) {
        let v = t.param_val(s, &mut it)?;
        t.bind(p, v)?;
    }
    let out = t.result_place(&result, &mut out_ptrs.iter())?;
    t.emit_result(func.body, &out)?;
    drop(out);
    t.builder().ins().return_(&[]);
    let plan = t.finish_prologue(entry, p_sizes, p_ws)?;
    let mut b = t.into_builder();
    b.seal_all_blocks();
    b.finalize(frontend);

    verify(ctx, module)?;
    Ok((
        id,
        Built {
            size_vars: size_vars.iter().map(|s| s.to_string()).collect(),
            param_names,
            inputs,
            outputs,
            param_shapes: param_shapes.iter().map(SShape::public).collect(),
            result_shape: result.public(),
            workspace: plan.workspace,
            checks: plan.checks,
        },
    ))
}
