//! Lowering of a first-order term to Cranelift IR.
//!
//! One [`Translator`] owns the `FunctionBuilder` and the map from the term's variables to
//! compile-time values ([`Val`]). It walks the term once, emitting code as it goes:
//! - scalars live in SSA values; `if` is a branch with block parameters at the join (or a
//!   `select` when both branches are cheap scalar expressions);
//! - every loop is bottom-tested: one guard before it, one compare-and-branch per iteration;
//! - a `map`/`map2` with scalar elements stays unevaluated until a consumer reads it, so it
//!   runs inside the consumer's loop; results are written straight into their destination
//!   (the caller's output buffers, a row of a nested array, an accumulator's buffer);
//! - every other array lives in a workspace buffer. Buffers are reference-counted at
//!   compile time and a slot is reused once the last value referencing it is dead.
//!
//! Lengths and buffer addresses that depend only on the sizes are computed once, in a
//! prologue that is emitted last (when all slots are known) into the entry block. The body
//! uses placeholders for them, which become aliases of the prologue's values; as these are
//! pure (the sizes and pointer arrays are read-only), Cranelift's optimizer computes each
//! where it is needed instead of keeping them all live through the whole function.
//!
//! Loops carry only what changes between iterations: the lengths and strides of an
//! accumulator kept in buffers laid out alike are the same on every iteration, and an
//! exact length (see [`crate::shape`]) is the sizes' value, so the body's loops and
//! addresses see constants and prologue values rather than block parameters.
//!
//! The lowering is one [`Translator`], its methods grouped by concept:
//! - this module: the translator's state and the dispatch on the term's nodes
//!   ([`Translator::emit`], and `emit_into`, which writes a term's value to a place);
//! - [`access`]: element addresses, loads and stores, and local value numbering;
//! - [`variables`]: bindings, their uses and lifetimes;
//! - [`integers`]: lengths, indices and strides, known or computed;
//! - [`prologue`]: the values that depend only on the sizes, computed once;
//! - [`memory`]: the memory plan (workspace buffers, layouts, places, views);
//! - [`read`]: element `i` of any array; [`write`](mod@write): values written to places;
//! - [`state`]: values flattened into block parameters and rebuilt from them;
//! - [`loops`]: bottom-tested loops; [`fusion`]: loops fused across bindings and tuples;
//! - [`scratch`]: a `let`-bound array stored in the place of the result that reads it
//!   last;
//! - [`folds`]: folds and scans; [`pad`]: scans that only move elements, as views, and the
//!   loops that peel their ends; [`blocked`]: loops folding with several accumulators; [`conditionals`]: `if`; [`shift`]: shifts;
//!   [`fill`]: `zeros_like`, `ones_like` and `iota`;
//! - [`index`]: indexing `A[i]` and `scatter_add`, their indices checked at run time;
//! - [`scalar`]: the operators on reals and ints, and run-time calls;
//! - [`boundary`]: the function's parameters and result at the ABI.

use std::rc::Rc;

use cranelift_codegen::ir::types::F64;
use cranelift_codegen::ir::{
    Block, BlockArg, FuncRef, InstBuilder, MemFlagsData, StackSlot, Value,
};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::Module;
use unfad_syntax::fast_hash::FastMap as HashMap;
use unfad_syntax::{with_stack, Arena, ExprId, Node, Var};

use crate::error::{internal, unsupported, JitError, JitResult, Retry};
use crate::shape::{Analysis, SArr, SShape};
use crate::value::{Arr, CondVal, IntVal, Kind, Place, RealVal, Slots, Val};

use access::PureOp;
use prologue::PrologueValue;
use variables::Entry;

mod access;
mod batch;
mod blocked;
mod boundary;
mod conditionals;
mod fill;
mod folds;
mod fusion;
mod index;
mod integers;
mod kernels;
pub(crate) mod lanes;
mod loops;
mod memory;
mod pad;
mod prologue;
mod read;
mod routines;
mod scalar;
mod scratch;
mod shift;
mod state;
mod variables;
mod write;

pub(crate) use batch::{Batching, BATCH_CHUNK};
pub(crate) use fusion::column_of;
pub(crate) use kernels::kernel_functions_text;
pub(crate) use prologue::SizeValues;

/// Cranelift numbers block parameters with 16 bits; stay well below.
const MAX_BLOCK_PARAMS: usize = 60_000;

/// The lowering of one function: the builder, what each variable is bound to, the
/// workspace's buffers and the prologue's values so far, and the state of the block being
/// filled.
pub(crate) struct Translator<'a> {
    b: FunctionBuilder<'a>,
    module: &'a mut dyn Module,
    arena: &'a Arena,
    an: &'a Analysis,
    env: HashMap<Var, Entry>,
    /// Values pinned until the loop at each depth ends (frames.len() is the loop depth).
    frames: Vec<Vec<Val>>,
    slots: Slots,
    /// One real on the stack that every unkept column of a stored map points at (never
    /// read, see [`Translator::alloc_without`]); made at the first such column.
    sink: Option<StackSlot>,
    prologue: HashMap<PrologueValue, Value>,
    prologue_order: Vec<(PrologueValue, Value)>,
    main: Block,
    externs: HashMap<&'static str, FuncRef>,
    flags: MemFlagsData,
    /// Local value numbering: pure values computed earlier in the current block (cleared
    /// when another block is entered, so every entry dominates the insertion point).
    /// Loads, additions and the run-time functions are not merged by Cranelift across the
    /// fused loop bodies of tuple components; this merges them.
    numbered: HashMap<PureOp, Value>,
    /// The reals loaded in the current block (see [`access::Loads`]).
    loads: access::Loads,
    /// See [`Translator::force_read_twice`].
    force_read_twice: bool,
    /// See [`Translator::force_eager_scans`].
    eager_scans: bool,
    /// The reads of a pad known to be off its fill, by the pad and the index: inside the
    /// loop proper of a [`Translator::peeled_loop`], the pads it was peeled for at its
    /// index (and a pad inside one of them at the index it is read at). Such a read is
    /// in place, without a test; every other read of a pad is tested.
    in_place: Vec<(*const crate::value::Pad, Value)>,
    /// Whether the math kernels are calls of their functions (see
    /// [`Translator::call_kernels`]) rather than inline code.
    kernel_calls: bool,
    /// The kernels' functions called from this function (see [`Translator::kernel`]).
    kernel_fns: HashMap<unfad_kernels::Kernel, FuncRef>,
    /// The kernels' tables as a global value of this function (see
    /// [`kernels::kernel_tables`]), once a kernel read them.
    kernel_tables: Option<cranelift_codegen::ir::GlobalValue>,
    /// The loop depth (the length of `counters`) of code that runs a few times per call
    /// of the function (the last elements of a loop inside no other): kernels directly
    /// there, not in a loop inside it, are calls.
    few_per_call: Option<usize>,
    /// Whether the function has many kernels outside loops, which are then calls (see
    /// [`Translator::count_kernels_outside_loops`]).
    many_kernels_outside_loops: bool,
    /// Why the lowering failed, if lowering again differently may complete it (see
    /// [`Translator::retry`]).
    retry: Option<Retry>,
    /// The buffer (parameter, result or workspace base pointer) an address points into.
    /// Buffers never overlap (inputs are never written), so a store invalidates only the
    /// loads from its own buffer, or every load if either buffer is unknown.
    roots: HashMap<Value, Value>,
    /// A stack slot of one real that loop results pass through (see `loop_`).
    relay: Option<StackSlot>,
    /// A stack slot of one real that writes to nowhere go to (see `discard_slot`).
    discard: Option<StackSlot>,
    /// The counter of each loop being built, innermost last (`None` for one counting
    /// down): where a [`Scan`](crate::value::Scan) may be read.
    counters: Vec<Option<Value>>,
    /// Once the function checks something at run time: the block that sets its status cell
    /// (after every buffer in the workspace) and returns (see [`Translator::check`]).
    status: Option<Block>,
    /// The reals that are an element of an `iota` read at index `k` (so `k` itself, below
    /// the `iota`'s length): an index that the lengths show in bounds needs no check.
    iota_elements: HashMap<Value, IotaElement>,
    /// The reals that are a sum of elements of `iota`s and whole constants (`i + j`, a
    /// window's position), with the same sum computed as an integer: an index of that
    /// form needs no conversion and no test that it is whole, only the bounds; and, where
    /// every element's `iota` has a known length, its range, with which an index whose
    /// largest value the sizes show below the array's length needs no test at all (see
    /// [`Translator::in_bounds_by_sizes`]).
    int_sums: HashMap<Value, (Value, Option<IntRange>)>,
    /// Indices known to be at least some value: the index of the part of a loop that
    /// starts after its first iterations (see [`Translator::peeled_loop`]). An `iota`
    /// element read there is at least that, so a comparison of it with a smaller
    /// constant is known (`i == 0` is false), and `i - 1` is in bounds.
    floors: HashMap<Value, i64>,
    /// Each size variable (by position) as a linear form of the sizes it is computed from,
    /// and whether it is derived: itself for a size the program names, its formula for a
    /// derived one.
    size_forms: Vec<Option<(unfad_syntax::size_expr::Linear, bool)>>,
    /// The source position of the index or int division being lowered: a failed check
    /// there says where (see [`Stop::code_at`]).
    site: unfad_syntax::Span,
    /// Folds already computed in the loop that makes what they fold (see
    /// [`Translator::stored_then_folded`]), by node: their value where the term reads them.
    precomputed: HashMap<ExprId, Val>,
    /// Scans stored in the buffer of a component of a result (`scan_scratch_place`), with
    /// the tuple of that result, whose components that are reals and read the buffer are
    /// computed before the others (`readers_before_writer`).
    readers_first: Vec<(ExprId, Rc<Arr>)>,
    /// The accumulators of the folds being emitted with mixed places
    /// (`Translator::acc_places`), whose components a scatter onto them may add into
    /// where they are: nothing else in the step reads those components.
    own_accumulators: Vec<Var>,
    /// How loops batch their kernels, if they do (see [`batch`]).
    batching: Option<Batching>,
    /// The pass of the batched loop being emitted.
    batch: Option<batch::Batch>,
    /// The batch function, once declared in the function.
    batch_fn: Option<FuncRef>,
}

/// A sum of elements of `iota`s and a constant: `terms` are the lengths of the `iota`s (an
/// element of each is at least 0 and below its length).
#[derive(Clone, Debug)]
struct IntRange {
    terms: Vec<crate::layout::Dim>,
    constant: i64,
    /// A lower bound of the value: the constant plus each element's least value (0, or
    /// more inside the part of a loop that starts later, see `floors`).
    min: i64,
}

/// An element `k` of an `iota` of length `len` (exactly `dim` if known), `0 <= k < len`.
#[derive(Clone, Copy)]
struct IotaElement {
    k: Value,
    len: IntVal,
    dim: Option<crate::layout::Dim>,
}

impl<'a> Translator<'a> {
    pub fn new(
        b: FunctionBuilder<'a>,
        module: &'a mut dyn Module,
        arena: &'a Arena,
        an: &'a Analysis,
        main: Block,
    ) -> Translator<'a> {
        Translator {
            b,
            module,
            arena,
            an,
            env: HashMap::default(),
            frames: Vec::new(),
            slots: Slots::new(),
            sink: None,
            prologue: HashMap::default(),
            prologue_order: Vec::new(),
            main,
            externs: HashMap::default(),
            flags: MemFlagsData::trusted(),
            numbered: HashMap::default(),
            loads: access::Loads::default(),
            force_read_twice: false,
            eager_scans: false,
            in_place: Vec::new(),
            kernel_calls: false,
            kernel_fns: HashMap::default(),
            kernel_tables: None,
            few_per_call: None,
            many_kernels_outside_loops: false,
            retry: None,
            roots: HashMap::default(),
            relay: None,
            discard: None,
            counters: Vec::new(),
            status: None,
            iota_elements: HashMap::default(),
            int_sums: HashMap::default(),
            floors: HashMap::default(),
            size_forms: Vec::new(),
            site: unfad_syntax::Span::NONE,
            precomputed: HashMap::default(),
            readers_first: Vec::new(),
            own_accumulators: Vec::new(),
            batching: None,
            batch: None,
            batch_fn: None,
        }
    }

    /// Batch the math kernels of loops as `b` says (see [`batch`]); off by default.
    pub fn batch_kernels(&mut self, b: Option<Batching>) {
        self.batching = b;
    }

    /// The builder, for the caller that sets up and finishes the function.
    pub fn builder(&mut self) -> &mut FunctionBuilder<'a> {
        &mut self.b
    }

    /// The builder back, once the function is lowered.
    pub fn into_builder(self) -> FunctionBuilder<'a> {
        self.b
    }

    /// The value of `e`, emitting the code that computes it.
    pub fn emit(&mut self, e: ExprId) -> JitResult<Val> {
        with_stack(|| self.emit_node(e))
    }

    fn emit_arr(&mut self, e: ExprId) -> JitResult<Rc<Arr>> {
        expect_arr(self.emit(e)?)
    }

    fn emit_real(&mut self, e: ExprId) -> JitResult<RealVal> {
        match self.emit(e)? {
            Val::Real(x) => Ok(x),
            _ => Err(JitError::Type("a real was expected".into())),
        }
    }

    fn emit_bool(&mut self, e: ExprId) -> JitResult<CondVal> {
        match self.emit(e)? {
            Val::Bool(x) => Ok(x),
            _ => Err(JitError::Type("a condition was expected".into())),
        }
    }

    fn shape(&self, e: ExprId) -> JitResult<SShape> {
        self.an.shape(e).cloned()
    }

    fn emit_node(&mut self, e: ExprId) -> JitResult<Val> {
        use Node::*;
        let arena = self.arena;
        if let Some(v) = self.precomputed.get(&e) {
            return Ok(v.clone());
        }
        match arena[e] {
            Const(c) => Ok(Val::Real(RealVal::Const(c))),
            Bool(c) => Ok(Val::Bool(CondVal::Const(c))),
            Var(v) => self.use_var(v),
            Let(x, e1, e2) => {
                let v = self.emit(e1)?;
                if let Some(r) = self.stored_then_folded(x, &v, e2, None, None)? {
                    return Ok(r);
                }
                self.bind_let(x, v)?;
                let r = self.emit(e2)?;
                self.end_scope(&[x], &r);
                Ok(r)
            }
            LetTuple(xs, e1, e2) => {
                let v = self.emit(e1)?;
                let xs = arena.vars_of(xs);
                self.bind_let_tuple(xs, v)?;
                let r = self.emit(e2)?;
                self.end_scope(xs, &r);
                Ok(r)
            }
            Tuple(l) => {
                let items = arena
                    .exprs(l)
                    .iter()
                    .map(|&i| self.emit(i))
                    .collect::<JitResult<Vec<_>>>()?;
                Ok(Val::Tuple(items.into()))
            }
            Proj(i, x) => match self.emit(x)? {
                Val::Tuple(items) if (i as usize) < items.len() => Ok(items[i as usize].clone()),
                _ => Err(JitError::Type(format!("projection .{i} of a non-tuple"))),
            },
            Op1(op, x) => {
                let x = self.emit_real(x)?;
                Ok(Val::Real(self.unary(op, x)?))
            }
            Op2(op, x, y) => {
                self.site = arena.span(e);
                let x = self.emit_real(x)?;
                let y = self.emit_real(y)?;
                Ok(Val::Real(self.binary_checked(op, x, y)?))
            }
            Cmp(op, x, y) => {
                let x = self.emit_real(x)?;
                let y = self.emit_real(y)?;
                Ok(Val::Bool(self.compare(op, x, y)))
            }
            Not(x) => Ok(Val::Bool(match self.emit_bool(x)? {
                CondVal::Const(c) => CondVal::Const(!c),
                CondVal::Ssa(v) => CondVal::Ssa(self.b.ins().bxor_imm_s(v, 1)),
            })),
            And(x, y) | Or(x, y) => {
                let and = matches!(arena[e], And(..));
                let a = self.emit_bool(x)?;
                let b = self.emit_bool(y)?;
                Ok(Val::Bool(match (a, b) {
                    (CondVal::Const(p), CondVal::Const(q)) => {
                        CondVal::Const(if and { p && q } else { p || q })
                    }
                    (CondVal::Const(p), other) | (other, CondVal::Const(p)) => match (and, p) {
                        (true, true) | (false, false) => other,
                        (true, false) => CondVal::Const(false),
                        (false, true) => CondVal::Const(true),
                    },
                    (CondVal::Ssa(p), CondVal::Ssa(q)) => CondVal::Ssa(if and {
                        self.b.ins().band(p, q)
                    } else {
                        self.b.ins().bor(p, q)
                    }),
                }))
            }
            If(c, x, y) => self.emit_if(e, c, x, y, None),
            Lambda(..) => {
                unsupported("a function value outside the function argument of an array operation")
            }
            App(..) => unsupported("application of a function value"),
            Iota(n) => self.emit_iota(e, n),
            Index(x, i) => self.emit_index(e, x, i),
            ScatterAdd(z, is, vs) => self.emit_scatter_add(e, z, is, vs),
            Call(..) => unsupported("a call of a definition (inline the program first)"),
            Derivative(..) => {
                unsupported("a `grad` or `jvp` not expanded (expand the program first)")
            }
            Scanl(f, z, x) | Scanr(f, z, x)
                if pad::moving(arena, f, matches!(arena[e], Scanr(..))) =>
            {
                let right = matches!(arena[e], Scanr(..));
                if let Some(v) = self.moving_scan(e, z, x, right)? {
                    return Ok(v);
                }
                let sa = shape_arr(&self.shape(e)?)?;
                let p = self.alloc(&sa)?;
                self.emit_into(e, &Place::Arr(p))
            }
            Array(_) | Scanl(..) | Scanr(..) => {
                let sa = shape_arr(&self.shape(e)?)?;
                let p = self.alloc(&sa)?;
                self.emit_into(e, &Place::Arr(p))
            }
            Len(x) => {
                let sa = shape_arr(&self.shape(x)?)?;
                let n = if sa.exact {
                    self.skip(x);
                    self.dim(sa.len)
                } else {
                    self.emit_arr(x)?.len
                };
                Ok(Val::Real(match n {
                    IntVal::Const(k) => RealVal::Const(k as f64),
                    IntVal::Ssa(v) => RealVal::Ssa(self.b.ins().fcvt_from_uint(F64, v)),
                }))
            }
            ZerosLike(x) => self.emit_fill(x, 0.0),
            OnesLike(x) => self.emit_fill(x, 1.0),
            Map(f, x) => {
                let sa = shape_arr(&self.shape(e)?)?;
                let src = self.emit_arr(x)?;
                let (len, claim) = (src.len, src.stat());
                let kind = Kind::Map {
                    f,
                    src,
                    read: Default::default(),
                };
                Ok(Val::Arr(self.arr(len, &sa, claim, kind)))
            }
            Map2(f, x, y) => {
                let sa = shape_arr(&self.shape(e)?)?;
                let a = self.emit_arr(x)?;
                let b = self.emit_arr(y)?;
                let (len, dim) = self.min_len(&[(a.len, a.stat()), (b.len, b.stat())]);
                let kind = Kind::Map2 {
                    f,
                    a,
                    b,
                    read: Default::default(),
                };
                Ok(Val::Arr(self.arr(len, &sa, dim, kind)))
            }
            Reduce(f, z, x) => self.emit_fold(e, f, z, x, true, None),
            Foldl(f, z, x) => self.emit_fold(e, f, z, x, false, None),
            Shift1L(x) | Shift1R(x) => {
                let left = matches!(arena[e], Shift1L(_));
                if let Some(v) = self.lazy_scan(e, x, left)? {
                    return Ok(v);
                }
                let a = self.emit_arr(x)?;
                Ok(Val::Arr(self.shift(&a, left)?))
            }
        }
    }

    /// The tuple of `items` written to `ps`, one place per item: in one loop where they
    /// fuse, else each where it goes.
    fn emit_tuple_into(&mut self, items: &[ExprId], ps: &[Place]) -> JitResult<Val> {
        if let Some(v) = self.fused_tuple(items, ps)? {
            return Ok(v);
        }
        // Components with arrays first: a scalar's run-time call (`log` of a sum) then
        // comes after their loops, so that nothing the loops use lives across it (the
        // register allocator spills such values inside the loops).
        let mut out: Vec<Option<Val>> = vec![None; items.len()];
        for arrays in [true, false] {
            for (k, (&i, p)) in items.iter().zip(ps.iter()).enumerate() {
                if self.shape(i)?.has_arrays() == arrays {
                    out[k] = Some(self.emit_into(i, p)?);
                }
            }
        }
        let items = out
            .into_iter()
            .map(|v| v.ok_or_else(|| JitError::Internal("a component was lost".into())))
            .collect::<JitResult<Vec<_>>>()?;
        Ok(Val::Tuple(items.into()))
    }

    /// `e` written to `p`; returns the value as written.
    fn emit_into(&mut self, e: ExprId, p: &Place) -> JitResult<Val> {
        with_stack(|| self.emit_into_node(e, p))
    }

    fn emit_into_node(&mut self, e: ExprId, p: &Place) -> JitResult<Val> {
        use Node::*;
        let arena = self.arena;
        if let Some(v) = self.precomputed.get(&e).cloned() {
            return self.write(&v, p);
        }
        // Added to an accumulator: computed, then added (a `let` chain passes the place on
        // to its result, whose loops may add where they compute: `stored_then_folded`).
        if matches!(p, Place::AddTo(_)) && !matches!(arena[e], Let(..) | LetTuple(..)) {
            let v = self.emit(e)?;
            return self.write(&v, p);
        }
        match (arena[e], p) {
            (_, Place::Reg) => self.emit(e),
            (Let(x, e1, e2), _) => {
                if matches!(p, Place::Arr(_)) && fusion::result_is(arena, x, e2) {
                    // `x` is the chain's result (the one value crossing a cut): computed
                    // where the result goes rather than copied there at the end.
                    let v = self.emit_into(e1, p)?;
                    self.bind_let(x, v)?;
                    let r = self.emit_into(e2, p)?;
                    self.end_scope(&[x], &r);
                    return Ok(r);
                }
                if let Place::Tuple(ps) = p {
                    if let Some(i) = self.result_slot(x, e2, ps) {
                        // `x` is a component of the chain's result: computed where that
                        // goes (a cut's crossing values, a gradient bound before the
                        // result) rather than copied there at the end.
                        let v = self.emit_into(e1, &ps[i])?;
                        self.bind_let(x, v)?;
                        let r = self.emit_into(e2, p)?;
                        self.end_scope(&[x], &r);
                        return Ok(r);
                    }
                }
                // A scan that must be stored, stored where the result that maps over it
                // goes; the result's reals that read it are computed before that result.
                if let Some((g, _, _, right, _)) = scratch::scan_parts(arena, e1) {
                    if !pad::moving(arena, g, right) && !self.an.lazy_ok(x) {
                        if let Some((d, tuple)) = self.scan_scratch_place(x, e1, e2, p)? {
                            let sa = shape_arr(&self.an.var_shape(x)?.clone())?;
                            let place = self.scan_place(&sa, &d)?;
                            let v = self.emit_into(e1, &Place::Arr(place.clone()))?;
                            self.bind_let(x, v)?;
                            self.readers_first.push((tuple, place));
                            let r = self.emit_into(e2, p);
                            self.readers_first.pop();
                            let r = r?;
                            self.end_scope(&[x], &r);
                            return Ok(r);
                        }
                    }
                }
                // Sibling folds joined (a fold into every component of a tuple) whose
                // components are items of the result: each added into where it goes.
                if let (Place::Tuple(ps), Foldl(f, ..)) = (p, arena[e1]) {
                    if arena.accumulations(f).is_some() {
                        if let Some(into) = self.result_components(x, e2, ps) {
                            let v = self.emit_into(e1, &into)?;
                            self.bind_let(x, v)?;
                            let r = self.emit_into(e2, p)?;
                            self.end_scope(&[x], &r);
                            return Ok(r);
                        }
                    }
                }
                if let Some(r) = self.fold_into_columns(x, e1, e2, p)? {
                    return Ok(r);
                }
                let v = self.emit(e1)?;
                // A map to be stored may be stored where the result that reads it last goes.
                let scratch = match &v {
                    Val::Arr(a)
                        if matches!(a.kind, Kind::Map { .. } | Kind::Map2 { .. })
                            && !self.an.lazy_ok(x) =>
                    {
                        self.scratch_place(x, e2, p)
                    }
                    _ => None,
                };
                if let Some(r) = self.stored_then_folded(x, &v, e2, Some(p), scratch.as_ref())? {
                    return Ok(r);
                }
                self.bind_let_in(x, v, scratch.as_deref())?;
                let r = self.emit_into(e2, p)?;
                self.end_scope(&[x], &r);
                Ok(r)
            }
            (LetTuple(xs, e1, e2), _) => {
                let v = self.emit(e1)?;
                let xs = arena.vars_of(xs);
                self.bind_let_tuple(xs, v)?;
                let r = self.emit_into(e2, p)?;
                self.end_scope(xs, &r);
                Ok(r)
            }
            (If(c, x, y), _) if self.shape(e)?.has_arrays() => {
                if p.adds() {
                    // Each branch computes; the join adds once.
                    let v = self.emit_if(e, c, x, y, Some(&p.without_adds()))?;
                    return self.write(&v, p);
                }
                self.emit_if(e, c, x, y, Some(p))
            }
            (Tuple(l), Place::Tuple(ps)) if l.len() == ps.len() => {
                // Scans that a component maps over, stored where that component goes.
                let mut stored = self.scans_in_results(arena.exprs(l), ps)?;
                // Reals that read a stored scan, before the component that overwrites it.
                stored.extend(self.readers_before_writer(e, arena.exprs(l), ps)?);
                let r = self.emit_tuple_into(arena.exprs(l), ps);
                for s in stored {
                    self.precomputed.remove(&s);
                }
                r
            }
            (Map(f, x), Place::Arr(d)) => {
                let stored = self.scans_in_results(&[e], std::slice::from_ref(p))?;
                if let Some(&s) = stored.first() {
                    let v = self.emit_into(e, p);
                    self.precomputed.remove(&s);
                    return v;
                }
                // A map of each element alone over a fold that adds in place (`map (s. c * s)
                // (reduce (s, t. map2 + s t) zeros A)`, a gradient a constant factor of the
                // result scales): the fold accumulates where the map goes, and the map then
                // runs there in place, each element read before it is written.
                if let Reduce(g, _, _) | Foldl(g, _, _) = arena[x] {
                    if matches!(d.kind, Kind::Mem { .. })
                        && self.adds_in_place(g)?
                        && elementwise(arena, f)
                    {
                        let acc = expect_arr(self.emit_into(x, p)?)?;
                        return self.map_into(f, vec![acc], d);
                    }
                }
                let src = self.emit_arr(x)?;
                self.map_into(f, vec![src], d)
            }
            (Map2(f, x, y), Place::Arr(d)) => {
                let stored = self.scans_in_results(&[e], std::slice::from_ref(p))?;
                if let Some(&s) = stored.first() {
                    let v = self.emit_into(e, p);
                    self.precomputed.remove(&s);
                    return v;
                }
                let a = self.emit_arr(x)?;
                let b = self.emit_arr(y)?;
                self.map_into(f, vec![a, b], d)
            }
            // Reverse mode's accumulation into zeros: written where it goes, the zeros first
            // (a fill reads nothing, so nothing the loop reads lives in the destination).
            (ScatterAdd(z, is, vs), Place::Arr(d))
                if matches!(
                    arena[index::scatter_chain(arena, z, is, vs).0],
                    ZerosLike(_) | OnesLike(_)
                ) && matches!(d.kind, Kind::Mem { .. }) =>
            {
                let (base, levels) = index::scatter_chain(arena, z, is, vs);
                let zv = self.emit_arr(base)?;
                self.scatter_add_into(zv, &levels, d)
            }
            // Scatters onto an array that is already where they go (a fold's accumulator
            // updated in place, see `Translator::acc_places`): added there, no copy.
            (ScatterAdd(z, is, vs), Place::Arr(d))
                if matches!(d.kind, Kind::Mem { .. })
                    && root_var(arena, index::scatter_chain(arena, z, is, vs).0)
                        .is_some_and(|v| self.own_accumulators.contains(&v)) =>
            {
                let (base, levels) = index::scatter_chain(arena, z, is, vs);
                let zv = self.emit_arr(base)?;
                if write::in_place(&zv, d) {
                    return self.scatter_add_into(zv, &levels, d);
                }
                // Elsewhere: in a buffer of its own, as `emit_scatter_add` makes it.
                let sa = shape_arr(&self.shape(e)?)?;
                let tmp = self.alloc(&sa)?;
                let v = self.scatter_add_into(zv, &levels, &tmp)?;
                self.write(&v, p)
            }
            // A fold that updates its arrays in place, added into where its result goes.
            (Reduce(f, z, x), Place::Arr(_) | Place::Tuple(_)) if self.adds_in_place(f)? => {
                self.emit_fold(e, f, z, x, true, Some(p))
            }
            (Foldl(f, z, x), Place::Arr(_) | Place::Tuple(_)) if self.adds_in_place(f)? => {
                self.emit_fold(e, f, z, x, false, Some(p))
            }
            // A fold of scatters (an indexed array's adjoint): added into where it goes.
            (Foldl(f, z, x), Place::Arr(_)) if arena.accumulation(f).is_some() => {
                self.emit_fold(e, f, z, x, false, Some(p))
            }
            // Sibling folds of scatters joined: each component added into where it goes.
            (Foldl(f, z, x), Place::Tuple(_)) if arena.accumulations(f).is_some() => {
                self.emit_fold(e, f, z, x, false, Some(p))
            }
            (Scanl(f, z, x), Place::Arr(d)) => self.scan_into(f, z, x, d, false, false, false),
            (Scanr(f, z, x), Place::Arr(d)) => self.scan_into(f, z, x, d, true, false, false),
            // The shift of a scan that drops its last state (`shift1R (scanl ..)`,
            // `shift1L (scanr ..)`, a reverse pass's adjoints): the scan of the source's
            // shift, written where the shift goes, if it has a row (otherwise the shift is
            // empty, and the scan, which always has a state, is not run).
            (Shift1L(_) | Shift1R(_), Place::Arr(d))
                if matches!(d.kind, Kind::Mem { .. })
                    && scratch::scan_parts(arena, e)
                        .is_some_and(|(g, _, _, right, _)| !pad::moving(arena, g, right))
                    && self.exactly_as_long(e, d)? =>
            {
                let Some((f, z, x, right, _)) = scratch::scan_parts(arena, e) else {
                    return internal("a shifted scan has no scan");
                };
                self.scan_where_a_row(f, z, x, d, right, true)
            }
            (Array(l), Place::Arr(d)) if d.len == IntVal::Const(l.len() as i64) => {
                for (j, &item) in arena.exprs(l).iter().enumerate() {
                    let dst = self.place_elem(d, IntVal::Const(j as i64))?;
                    self.emit_into(item, &dst)?;
                }
                self.view(d, d.len, d.stat())
            }
            (Array(l), _) => {
                // A literal of another capacity (never produced by this lowering): build it
                // in its own buffer and copy.
                let sa = shape_arr(&self.shape(e)?)?;
                if sa.len.as_constant() != Some(l.len() as u64) {
                    return internal("an array literal's shape has the wrong length");
                }
                let tmp = self.alloc(&sa)?;
                let v = self.emit_into(e, &Place::Arr(tmp))?;
                self.write(&v, p)
            }
            _ => {
                let v = self.emit(e)?;
                self.write(&v, p)
            }
        }
    }
}

/// Whether the map function `f` makes each element of its result from the same element of
/// its argument alone: its result is a value without arrays, or a map of such a function
/// over its parameter (a row's elements each from that row's). Then the map may write over
/// its argument, element by element.
pub(super) fn elementwise(arena: &unfad_syntax::Arena, f: ExprId) -> bool {
    let Some((&[p], body)) = arena.lambda_parts(f) else {
        return false;
    };
    match arena[body] {
        Node::Map(g, a) if arena[a] == Node::Var(p) => elementwise(arena, g),
        _ => !arena.mentions_any(body, &[p]) || scalar_result(arena, body, p),
    }
}

/// Whether `e`, a function's body over its parameter `p`, is a value without arrays built
/// from `p` only as a value without arrays: arithmetic and scalar functions of it.
fn scalar_result(arena: &unfad_syntax::Arena, e: ExprId, p: unfad_syntax::Var) -> bool {
    match arena[e] {
        Node::Var(_) | Node::Const(_) => true,
        Node::Op1(_, x) => scalar_result(arena, x, p),
        Node::Op2(_, x, y) => scalar_result(arena, x, p) && scalar_result(arena, y, p),
        _ => !arena.mentions_any(e, &[p]),
    }
}

/// The variable `e` is, or is a projection of (a value that emitting only names).
fn root_var(arena: &unfad_syntax::Arena, e: ExprId) -> Option<Var> {
    match arena[e] {
        Node::Var(v) => Some(v),
        Node::Proj(_, inner) => root_var(arena, inner),
        _ => None,
    }
}

fn expect_arr(v: Val) -> JitResult<Rc<Arr>> {
    match v {
        Val::Arr(a) => Ok(a),
        _ => internal("an array was expected"),
    }
}

fn shape_arr(s: &SShape) -> JitResult<Rc<SArr>> {
    match s {
        SShape::Arr(a) => Ok(a.clone()),
        _ => internal("an array shape was expected"),
    }
}

fn blockargs(vals: &[Value]) -> Vec<BlockArg> {
    vals.iter().map(|&v| BlockArg::from(v)).collect()
}
