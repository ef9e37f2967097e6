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

use std::rc::Rc;
use unfad_syntax::fast_hash::FastMap as HashMap;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F64, I64, I8};
use cranelift_codegen::ir::{
    AbiParam, Block, BlockArg, FuncRef, InstBuilder, MemFlagsData, Signature, StackSlot,
    StackSlotData, StackSlotKind, Type, Value,
};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::{Linkage, Module};
use unfad_syntax::{with_stack, Arena, BinOp, CmpOp, ExprId, Node, UnOp, Var};

use crate::error::{internal, unsupported, JitError, JitResult};
use crate::layout::{Dim, SizeExpr};
use crate::runtime::{self, Lowering};
use crate::shape::{lambda, Analysis, SArr, SShape};
use crate::value::{
    concat_holds, no_holds, sized, Arr, Buf, CondVal, FillElem, Holds, IntVal, Kind, Layout, Place,
    RealVal, Scan, Slots, Val,
};

/// A value computed once in the prologue.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum PrologueValue {
    /// An element count.
    Count(SizeExpr),
    /// The address of element `offset` of slot `slot` of the workspace.
    Addr(usize, SizeExpr),
}

/// A pure computation already emitted in the current block, for local value numbering.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum PureOp {
    /// `base + 8 * i * stride`.
    Addr(Value, IntVal, IntVal),
    /// A load of a real from an address.
    Load(Value),
    /// A unary operator applied to a real.
    Unary(UnOp, Value),
    /// A binary operator applied to two reals.
    Binary(BinOp, RealKey, RealKey),
}

/// A real operand as a key of [`PureOp`]: a constant by its bits, or an SSA value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum RealKey {
    /// A constant, by its bits.
    Bits(u64),
    Ssa(Value),
}

fn real_key(x: RealVal) -> RealKey {
    match x {
        RealVal::Const(c) => RealKey::Bits(c.to_bits()),
        RealVal::Ssa(v) => RealKey::Ssa(v),
    }
}

/// Cranelift numbers block parameters with 16 bits; stay well below.
const MAX_BLOCK_PARAMS: usize = 60_000;

/// A variable's value and what is left of its uses.
struct Entry {
    val: Val,
    uses: u32,
    /// The loop depth at which it was bound.
    depth: usize,
}

/// What the prologue must compute, and what a call must check, once the body is lowered.
pub(crate) struct Plan {
    /// Length of the workspace, in reals.
    pub workspace: SizeExpr,
    /// Every count the native code computes from the sizes; a call checks that each one is
    /// representable before running it.
    pub checks: Vec<SizeExpr>,
}

pub(crate) struct Translator<'a> {
    b: FunctionBuilder<'a>,
    module: &'a mut dyn Module,
    arena: &'a Arena,
    an: &'a Analysis,
    env: HashMap<Var, Entry>,
    /// Values pinned until the loop at each depth ends (frames.len() is the loop depth).
    frames: Vec<Vec<Val>>,
    slots: Slots,
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
    /// See [`Translator::force_read_twice`].
    force_read_twice: bool,
    /// The buffer (parameter, result or workspace base pointer) an address points into.
    /// Buffers never overlap (inputs are never written), so a store invalidates only the
    /// loads from its own buffer, or every load if either buffer is unknown.
    roots: HashMap<Value, Value>,
    /// A stack slot of one real that loop results pass through (see `loop_`).
    relay: Option<StackSlot>,
    /// The counter of each loop being built, innermost last (`None` for one counting
    /// down): where a [`Scan`] may be read.
    counters: Vec<Option<Value>>,
}

type Body<'b, 'a> = dyn FnMut(&mut Translator<'a>, Value, &[Value]) -> JitResult<Vec<Value>> + 'b;

/// Whether reading the elements of `a` computes a [`Scan`].
fn reads_scan(a: &Arr) -> bool {
    match &a.kind {
        Kind::Scan(_) => true,
        Kind::Map { src, .. } => reads_scan(src),
        Kind::Map2 { a, b, .. } => reads_scan(a) || reads_scan(b),
        Kind::Mem { .. } | Kind::Fill { .. } => false,
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
            prologue: HashMap::default(),
            prologue_order: Vec::new(),
            main,
            externs: HashMap::default(),
            flags: MemFlagsData::trusted(),
            numbered: HashMap::default(),
            force_read_twice: false,
            roots: HashMap::default(),
            relay: None,
            counters: Vec::new(),
        }
    }

    // ---- local value numbering ----------------------------------------------------------

    /// Continue in `blk`: values of other blocks may not dominate it.
    fn switch_to(&mut self, blk: Block) {
        self.numbered.clear();
        self.b.switch_to_block(blk);
    }

    /// Store `x` at `addr`, forgetting the loads it may change.
    fn store(&mut self, x: Value, addr: Value) {
        self.b.ins().store(self.flags, x, addr, 0);
        let root = self.roots.get(&addr).copied();
        let roots = &self.roots;
        self.numbered.retain(|k, _| match (k, root) {
            (PureOp::Load(a), Some(r)) => roots.get(a).is_some_and(|ra| *ra != r),
            (PureOp::Load(_), None) => false,
            _ => true,
        });
    }

    /// A real loaded from `addr` (once per block while nothing may have changed it).
    fn load(&mut self, addr: Value) -> Value {
        if let Some(&v) = self.numbered.get(&PureOp::Load(addr)) {
            return v;
        }
        let v = self.b.ins().load(F64, self.flags, addr, 0);
        self.numbered.insert(PureOp::Load(addr), v);
        v
    }

    /// Record that `v` is the base pointer of a buffer.
    fn root(&mut self, v: Value) -> Value {
        self.roots.insert(v, v);
        v
    }

    /// The builder, for the caller that sets up and finishes the function.
    pub fn builder(&mut self) -> &mut FunctionBuilder<'a> {
        &mut self.b
    }

    pub fn into_builder(self) -> FunctionBuilder<'a> {
        self.b
    }

    // ---- variables ----------------------------------------------------------------------

    /// Bind `v` for the rest of its scope (or until its last use).
    /// Bind `v` to `val`. With [`Translator::force_read_twice`] set, an unevaluated array
    /// whose elements `v`'s uses read more than once is computed into memory first.
    pub fn bind(&mut self, v: Var, val: Val) -> JitResult<()> {
        let uses = self.an.uses(v);
        if uses > 0 {
            let val = if self.force_read_twice && val.has_lazy() && self.an.read_twice(v) {
                self.force(val)?
            } else {
                val
            };
            let depth = self.frames.len();
            self.env.insert(v, Entry { val, uses, depth });
        }
        Ok(())
    }

    /// Compute into memory, where a variable is bound, every unevaluated array whose
    /// elements its uses read more than once. The analysis counts reads that the fused
    /// loops share, so this costs run time where nothing needed it; the lowering is tried
    /// without it first and redone with it when an unevaluated map would be read twice (a
    /// parameter bound to an element that is itself an unevaluated map, read by two folds
    /// that are not fused).
    pub fn force_read_twice(&mut self) {
        self.force_read_twice = true;
    }

    /// End the binding of `v` (if its last use has not already ended it).
    fn unbind(&mut self, v: Var) {
        if let Some(ent) = self.env.remove(&v) {
            self.retire(ent);
        }
    }

    /// Drop a binding; a value bound outside the current loop stays alive until that loop
    /// ends, because later iterations read it again.
    fn retire(&mut self, ent: Entry) {
        if ent.depth < self.frames.len() {
            self.frames[ent.depth].push(ent.val);
        }
    }

    fn use_var(&mut self, v: Var) -> JitResult<Val> {
        let Some(ent) = self.env.get_mut(&v) else {
            return internal(format!(
                "the variable `{}` is used where it is not bound",
                self.arena.var_name(v)
            ));
        };
        let val = ent.val.clone();
        ent.uses = ent.uses.saturating_sub(1);
        if ent.uses == 0 {
            if let Some(ent) = self.env.remove(&v) {
                self.retire(ent);
            }
        }
        Ok(val)
    }

    /// Account for the variable uses in `e`, whose code is not needed.
    fn skip(&mut self, e: ExprId) {
        with_stack(|| match self.arena[e] {
            Node::Var(v) => {
                if self.env.contains_key(&v) {
                    let _ = self.use_var(v);
                }
            }
            _ => {
                for c in self.arena.children(e) {
                    self.skip(c);
                }
            }
        })
    }

    /// End the scope of `vars`, unless `result` still refers to them through an
    /// unevaluated map (their last use then ends them).
    fn end_scope(&mut self, vars: &[Var], result: &Val) {
        if !result.has_lazy() {
            for &v in vars {
                self.unbind(v);
            }
        }
    }

    // ---- integers and the prologue --------------------------------------------------------

    fn prologue_value(&mut self, p: PrologueValue) -> Value {
        if let Some(&v) = self.prologue.get(&p) {
            return v;
        }
        // The placeholder is a parameter of the body's first block until `finish_prologue`
        // makes it an alias. That block already has instructions; the builder's only
        // `Variable`s (the state of scans computed where they are read) are defined before
        // every use, in this block or after it, so the SSA construction never gives this
        // block a parameter, and adding one cannot disturb it.
        if self.prologue_order.len() >= MAX_BLOCK_PARAMS {
            // Refused in `finish_prologue`; until then any value keeps the IR well-formed.
            if let Some(&(_, v)) = self.prologue_order.last() {
                return v;
            }
        }
        let v = self.b.func.dfg.append_block_param(self.main, I64);
        self.prologue.insert(p.clone(), v);
        self.prologue_order.push((p, v));
        v
    }

    fn count(&mut self, e: SizeExpr) -> IntVal {
        match e {
            SizeExpr::K(k) => IntVal::Const(k as i64),
            e => IntVal::Ssa(self.prologue_value(PrologueValue::Count(e))),
        }
    }

    fn dim(&mut self, d: Dim) -> IntVal {
        self.count(SizeExpr::dim(d))
    }

    fn int_value(&mut self, x: IntVal) -> Value {
        match x {
            IntVal::Const(k) => self.b.ins().iconst(I64, k),
            IntVal::Ssa(v) => v,
        }
    }

    fn umin(&mut self, a: IntVal, b: IntVal) -> IntVal {
        match (a, b) {
            _ if a == b => a,
            (IntVal::Const(x), IntVal::Const(y)) => IntVal::Const(x.min(y)),
            _ => {
                let (x, y) = (self.int_value(a), self.int_value(b));
                IntVal::Ssa(self.b.ins().umin(x, y))
            }
        }
    }

    fn iadd(&mut self, a: IntVal, k: i64) -> IntVal {
        match a {
            IntVal::Const(x) => IntVal::Const(x.wrapping_add(k)),
            IntVal::Ssa(v) if k == 0 => IntVal::Ssa(v),
            IntVal::Ssa(v) => IntVal::Ssa(self.b.ins().iadd_imm_s(v, k)),
        }
    }

    fn isub(&mut self, a: IntVal, b: IntVal) -> IntVal {
        match (a, b) {
            (IntVal::Const(x), IntVal::Const(y)) => IntVal::Const(x.wrapping_sub(y)),
            (_, IntVal::Const(y)) => self.iadd(a, y.wrapping_neg()),
            _ => {
                let (x, y) = (self.int_value(a), self.int_value(b));
                IntVal::Ssa(self.b.ins().isub(x, y))
            }
        }
    }

    /// `max(a - 1, 0)`.
    fn dec(&mut self, a: IntVal) -> IntVal {
        match a {
            IntVal::Const(x) => IntVal::Const((x - 1).max(0)),
            IntVal::Ssa(v) => {
                let t = self.b.ins().iadd_imm_s(v, -1);
                let zero = self.b.ins().iconst(I64, 0);
                IntVal::Ssa(self.b.ins().smax(t, zero))
            }
        }
    }

    /// `base + 8 * i * stride`.
    fn addr(&mut self, base: Value, i: IntVal, stride: IntVal) -> Value {
        let key = PureOp::Addr(base, i, stride);
        if let Some(&v) = self.numbered.get(&key) {
            return v;
        }
        let v = self.addr_new(base, i, stride);
        if let Some(&r) = self.roots.get(&base) {
            self.roots.insert(v, r);
        }
        self.numbered.insert(key, v);
        v
    }

    fn addr_new(&mut self, base: Value, i: IntVal, stride: IntVal) -> Value {
        match (i, stride) {
            (IntVal::Const(0), _) | (_, IntVal::Const(0)) => base,
            (IntVal::Const(a), IntVal::Const(s)) => self
                .b
                .ins()
                .iadd_imm_s(base, a.wrapping_mul(s).wrapping_mul(8)),
            (IntVal::Ssa(x), IntVal::Const(s)) | (IntVal::Const(s), IntVal::Ssa(x)) => {
                let t = if s == 1 {
                    self.b.ins().ishl_imm_s(x, 3)
                } else {
                    self.b.ins().imul_imm_s(x, s.wrapping_mul(8))
                };
                self.b.ins().iadd(base, t)
            }
            (IntVal::Ssa(x), IntVal::Ssa(s)) => {
                let t = self.b.ins().imul(x, s);
                let t = self.b.ins().ishl_imm_s(t, 3);
                self.b.ins().iadd(base, t)
            }
        }
    }

    /// `Some(d)` if the length `len` is, by construction, the prologue's value of `d`.
    fn stat_of(&mut self, len: IntVal, d: Dim) -> Option<Dim> {
        (len == self.dim(d)).then_some(d)
    }

    /// The shortest of the lengths `items` (each with its `Dim` if it is exactly that): from
    /// the prologue when all are known functions of the sizes, else computed here.
    fn min_len(&mut self, items: &[(IntVal, Option<Dim>)]) -> (IntVal, Option<Dim>) {
        let stat = items
            .iter()
            .map(|(_, d)| *d)
            .try_fold(None::<Dim>, |acc, d| match (acc, d?) {
                (None, d) => Some(Some(d)),
                (Some(a), d) => a.min(d).map(Some),
            })
            .flatten();
        if let Some(d) = stat {
            return (self.dim(d), Some(d));
        }
        let mut it = items.iter();
        let Some(&(mut n, _)) = it.next() else {
            return (IntVal::Const(0), Some(Dim::constant(0)));
        };
        for &(m, _) in it {
            n = self.umin(n, m);
        }
        (n, None)
    }

    // ---- memory ---------------------------------------------------------------------------

    /// The layout of the elements of an array whose element shape is `elem`, with leaf
    /// bases from `bases` (in component order) and the dimensions `inner` above them.
    fn layout(
        &mut self,
        elem: &SShape,
        bases: &mut dyn FnMut(&mut Self) -> JitResult<Value>,
        inner: &mut Vec<Dim>,
    ) -> JitResult<Layout> {
        Ok(match elem {
            SShape::Real => {
                let base = bases(self)?;
                let strides: Vec<IntVal> = (0..=inner.len())
                    .map(|k| self.count(SizeExpr::product(&inner[k..])))
                    .collect();
                Layout::Real {
                    base,
                    strides: strides.into(),
                }
            }
            SShape::Bool => return unsupported("an array of conditions"),
            SShape::Tuple(items) => Layout::Tuple(
                items
                    .iter()
                    .map(|s| self.layout(s, bases, inner))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            SShape::Arr(sa) => {
                inner.push(sa.len);
                let elem = self.layout(&sa.elem, bases, inner);
                inner.pop();
                let len = self.dim(sa.len);
                Layout::Array {
                    len,
                    elem: Rc::new(elem?),
                }
            }
        })
    }

    /// A fresh workspace buffer for an array of shape `sa` (its length is the capacity).
    fn alloc(&mut self, sa: &Rc<SArr>) -> JitResult<Rc<Arr>> {
        self.alloc_without(sa, &[])
    }

    /// `v` written to `p` except its component at `path`, which the result keeps as it is
    /// (unwritten; a fold reads it where it is computed). All of `v` for an empty path.
    fn write_except(&mut self, v: &Val, p: &Place, path: &[usize]) -> JitResult<Val> {
        let Some((&i, rest)) = path.split_first() else {
            return self.write(v, p);
        };
        let (Val::Tuple(items), Place::Tuple(places)) = (v, p) else {
            return internal("a component path through a non-tuple");
        };
        let mut out = Vec::with_capacity(items.len());
        for (k, (item, place)) in items.iter().zip(places.iter()).enumerate() {
            out.push(if k != i {
                self.write(item, place)?
            } else if rest.is_empty() {
                item.clone()
            } else {
                self.write_except(item, place, rest)?
            });
        }
        Ok(Val::Tuple(out.into()))
    }

    /// [`Translator::alloc`], except that the component at `path` of the elements (if the
    /// path is not empty) is not kept: it has room for one element, which every index
    /// shares (writes to it are overwritten by the next element's; reads are in bounds but
    /// not of that element).
    fn alloc_without(&mut self, sa: &Rc<SArr>, path: &[usize]) -> JitResult<Rc<Arr>> {
        let mut leaves = Vec::new();
        leaves_under(
            &sa.elem,
            &mut vec![sa.len],
            &mut Vec::new(),
            path,
            &mut leaves,
        );
        let sizes: Vec<SizeExpr> = leaves
            .iter()
            .map(|(dims, shared)| SizeExpr::product(if *shared { &dims[1..] } else { dims }))
            .collect();
        let total = SizeExpr::sum(sizes.iter().cloned());
        let buf: Rc<Buf> = self.slots.alloc(total);
        let slot = buf.slot;
        let mut offset = SizeExpr::K(0);
        let mut k = 0;
        let mut bases = |t: &mut Self| -> JitResult<Value> {
            let Some(size) = sizes.get(k) else {
                return internal("a buffer has more leaves than its shape");
            };
            let v = t.prologue_value(PrologueValue::Addr(slot, offset.clone()));
            t.root(v);
            offset = SizeExpr::add(offset.clone(), size.clone());
            k += 1;
            Ok(v)
        };
        let layout = self.layout(&sa.elem, &mut bases, &mut Vec::new())?;
        let layout = if path.is_empty() {
            layout
        } else {
            shared_rows(&layout, path)?
        };
        let len = self.dim(sa.len);
        Ok(Rc::new(Arr {
            len,
            shape: sized(sa, Some(sa.len)),
            kind: Kind::Mem {
                layout,
                holds: Rc::from(vec![buf]),
            },
        }))
    }

    /// Places for an accumulator of shape `s`: scalars in registers, arrays in new buffers.
    fn acc_place(&mut self, s: &SShape) -> JitResult<Place> {
        Ok(match s {
            SShape::Real | SShape::Bool => Place::Reg,
            SShape::Tuple(items) => Place::Tuple(
                items
                    .iter()
                    .map(|s| self.acc_place(s))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            SShape::Arr(sa) => Place::Arr(self.alloc(sa)?),
        })
    }

    /// The layout of element `i`, one level down.
    fn layout_at(&mut self, lay: &Layout, i: IntVal) -> JitResult<Layout> {
        self.layout_offset(lay, i, true)
    }

    /// The layout moved by `i` elements at its outermost level; `down` also drops that
    /// level's stride (the result describes element `i`).
    fn layout_offset(&mut self, lay: &Layout, i: IntVal, down: bool) -> JitResult<Layout> {
        Ok(match lay {
            Layout::Real { base, strides } => {
                let Some(&s0) = strides.first() else {
                    return internal("a leaf has no stride left");
                };
                let base = self.addr(*base, i, s0);
                let strides = if down {
                    strides[1..].into()
                } else {
                    strides.clone()
                };
                Layout::Real { base, strides }
            }
            Layout::Tuple(items) => Layout::Tuple(
                items
                    .iter()
                    .map(|l| self.layout_offset(l, i, down))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            Layout::Array { len, elem } => Layout::Array {
                len: *len,
                elem: Rc::new(self.layout_offset(elem, i, down)?),
            },
        })
    }

    /// The array in memory laid out as `elem` repeated `len` times, of shape `sa`.
    fn mem_arr(&mut self, len: IntVal, elem: &Layout, sa: &Rc<SArr>, holds: &Holds) -> Rc<Arr> {
        let d = self.stat_of(len, sa.len);
        Rc::new(Arr {
            len,
            shape: sized(sa, d),
            kind: Kind::Mem {
                layout: elem.clone(),
                holds: holds.clone(),
            },
        })
    }

    /// The value described by the layout of one element (of shape `s`).
    fn layout_val(&mut self, lay: &Layout, s: &SShape, holds: &Holds) -> JitResult<Val> {
        Ok(match (lay, s) {
            (Layout::Real { base, .. }, SShape::Real) => Val::Real(RealVal::Ssa(self.load(*base))),
            (Layout::Tuple(ls), SShape::Tuple(ss)) if ls.len() == ss.len() => Val::Tuple(
                ls.iter()
                    .zip(ss.iter())
                    .map(|(l, s)| self.layout_val(l, s, holds))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Layout::Array { len, elem }, SShape::Arr(sa)) => {
                Val::Arr(self.mem_arr(*len, elem, sa, holds))
            }
            _ => return internal("a layout does not match its shape"),
        })
    }

    /// The place of one element (of shape `s`) described by a layout.
    fn layout_place(&mut self, lay: &Layout, s: &SShape, holds: &Holds) -> JitResult<Place> {
        Ok(match (lay, s) {
            (Layout::Real { base, .. }, SShape::Real) => Place::Real(*base),
            (Layout::Tuple(ls), SShape::Tuple(ss)) if ls.len() == ss.len() => Place::Tuple(
                ls.iter()
                    .zip(ss.iter())
                    .map(|(l, s)| self.layout_place(l, s, holds))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Layout::Array { len, elem }, SShape::Arr(sa)) => {
                Place::Arr(self.mem_arr(*len, elem, sa, holds))
            }
            _ => return internal("a layout does not match its shape"),
        })
    }

    /// The place of element `i` of the in-memory array `p`.
    fn place_elem(&mut self, p: &Arr, i: IntVal) -> JitResult<Place> {
        let Kind::Mem { layout, holds } = &p.kind else {
            return internal("a destination is not in memory");
        };
        let lay = self.layout_at(layout, i)?;
        self.layout_place(&lay, &p.shape.elem, holds)
    }

    /// The in-memory array at place `p`, with run-time length `len` (exactly `dim` if known).
    fn view(p: &Arr, len: IntVal, dim: Option<Dim>) -> JitResult<Val> {
        let Kind::Mem { layout, holds } = &p.kind else {
            return internal("a destination is not in memory");
        };
        Ok(Val::Arr(Rc::new(Arr {
            len,
            shape: sized(&p.shape, dim),
            kind: Kind::Mem {
                layout: layout.clone(),
                holds: holds.clone(),
            },
        })))
    }

    // ---- reading elements -----------------------------------------------------------------

    /// Element `i` of `a` (`i` is below its length).
    fn elem(&mut self, a: &Arr, i: IntVal) -> JitResult<Val> {
        match &a.kind {
            Kind::Mem { layout, holds } => {
                let lay = self.layout_at(layout, i)?;
                self.layout_val(&lay, &a.shape.elem, holds)
            }
            Kind::Fill { elem } => Ok(self.fill_val(elem)),
            Kind::Map { f, src, read } => {
                if read.replace(true) {
                    return internal("an unevaluated map is read twice");
                }
                let x = self.elem(src, i)?;
                self.apply(*f, vec![x])
            }
            Kind::Map2 { f, a, b, read } => {
                if read.replace(true) {
                    return internal("an unevaluated map2 is read twice");
                }
                let x = self.elem(a, i)?;
                let y = self.elem(b, i)?;
                self.apply(*f, vec![x, y])
            }
            Kind::Scan(scan) => self.scan_step(scan, i),
        }
    }

    /// Element `i` of a scan computed where it is read: the accumulator before the step,
    /// or after it; the step itself updates the state for the next element.
    fn scan_step(&mut self, scan: &Scan, i: IntVal) -> JitResult<Val> {
        if scan.read.replace(true) {
            return internal("a scan computed where it is read is read twice");
        }
        let in_order = match self.counters.last() {
            Some(&Some(c)) => i == IntVal::Ssa(c) && self.counters.len() == scan.depth + 1,
            _ => false,
        };
        if !in_order {
            return internal("a scan computed where it is read is not read in order");
        }
        let cur: Vec<Value> = scan.state.iter().map(|&v| self.b.use_var(v)).collect();
        let acc = self.rebuild(
            &scan.template,
            &scan.acc,
            &mut ssa_ints(&cur).iter(),
            &no_holds(),
        )?;
        let x = self.elem(&scan.src, i)?;
        let (ps, body) = lambda(self.arena, scan.f, 2, "a scan")?;
        self.bind(ps[0], acc.clone())?;
        self.bind(ps[1], x)?;
        let next = self.emit(body);
        self.unbind(ps[0]);
        self.unbind(ps[1]);
        let next = next?;
        let mut vals = Vec::with_capacity(scan.state.len());
        self.flatten(&next, &mut vals)?;
        if vals.len() != scan.state.len() {
            return internal("a scan's step changes the shape of its accumulator");
        }
        for (&var, v) in scan.state.iter().zip(vals) {
            self.b.def_var(var, v);
        }
        Ok(if scan.after { next } else { acc })
    }

    /// `shift1R (scanl f z x)` or `shift1L` of it, with an accumulator of reals, as a
    /// [`Scan`] (`None` for other shifts).
    fn lazy_scan(&mut self, e: ExprId, x: ExprId, left: bool) -> JitResult<Option<Val>> {
        let Node::Scanl(f, z, src) = self.arena[x] else {
            return Ok(None);
        };
        let (ps, _) = lambda(self.arena, f, 2, "a scan")?;
        let acc = self.an.var_shape(ps[0])?.clone();
        if acc.has_arrays() {
            return Ok(None);
        }
        let sa = shape_arr(&self.shape(e)?)?;
        let template = self.emit(z)?;
        let src = self.emit_arr(src)?;
        let mut init = Vec::new();
        self.flatten(&template, &mut init)?;
        let state = init
            .into_iter()
            .map(|v| {
                let ty = self.b.func.dfg.value_type(v);
                let var = self.b.declare_var(ty);
                self.b.def_var(var, v);
                var
            })
            .collect();
        Ok(Some(Val::Arr(Rc::new(Arr {
            len: src.len,
            shape: sized(&sa, src.stat()),
            kind: Kind::Scan(Rc::new(Scan {
                f,
                src,
                state,
                template,
                acc,
                after: left,
                depth: self.frames.len(),
                read: Default::default(),
            })),
        }))))
    }

    fn fill_val(&mut self, e: &FillElem) -> Val {
        match e {
            FillElem::Real(c) => Val::Real(RealVal::Const(*c)),
            FillElem::Tuple(items) => Val::Tuple(
                items
                    .iter()
                    .map(|x| self.fill_val(x))
                    .collect::<Vec<_>>()
                    .into(),
            ),
            FillElem::Array { len, shape, elem } => Val::Arr(Rc::new(Arr {
                len: *len,
                shape: {
                    let d = self.stat_of(*len, shape.len);
                    sized(shape, d)
                },
                kind: Kind::Fill {
                    elem: (**elem).clone(),
                },
            })),
        }
    }

    /// The body of the function argument `f` with its parameters bound to `args`.
    fn apply(&mut self, f: ExprId, args: Vec<Val>) -> JitResult<Val> {
        let (ps, body) = lambda(self.arena, f, args.len(), "an array operation")?;
        for (&p, a) in ps.iter().zip(args) {
            self.bind(p, a)?;
        }
        let r = self.emit(body)?;
        // An element that is itself an unevaluated map may refer to the parameters; they
        // then stay bound until their last use.
        self.end_scope(ps, &r);
        Ok(r)
    }

    // ---- writing --------------------------------------------------------------------------

    /// Write `v` to `p`; returns the value as written (arrays as views of `p`).
    fn write(&mut self, v: &Val, p: &Place) -> JitResult<Val> {
        match (v, p) {
            (_, Place::Reg) => Ok(v.clone()),
            (Val::Real(x), Place::Real(addr)) => {
                let x = self.real_value(*x);
                self.store(x, *addr);
                Ok(Val::Real(RealVal::Ssa(x)))
            }
            (Val::Tuple(vs), Place::Tuple(ps)) if vs.len() == ps.len() => Ok(Val::Tuple(
                vs.iter()
                    .zip(ps.iter())
                    .map(|(v, p)| self.write(v, p))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            )),
            (Val::Arr(a), Place::Arr(p)) => self.write_arr(a, p),
            _ => internal("a value does not fit its destination"),
        }
    }

    /// Write the array `a` to the in-memory array `p` (at most its capacity), padding the
    /// rest of `p` with zeros when `a` may be shorter.
    fn write_arr(&mut self, a: &Arr, p: &Arr) -> JitResult<Val> {
        // An unevaluated map is written by passing the destination to its body.
        match &a.kind {
            Kind::Map { f, src, read } => {
                if read.replace(true) {
                    return internal("an unevaluated map is read twice");
                }
                return self.map_into(*f, vec![src.clone()], p);
            }
            Kind::Map2 { f, a, b, read } => {
                if read.replace(true) {
                    return internal("an unevaluated map2 is read twice");
                }
                return self.map_into(*f, vec![a.clone(), b.clone()], p);
            }
            Kind::Mem { .. } | Kind::Fill { .. } | Kind::Scan(_) => {}
        }
        let (count, dim) = self.min_len(&[(a.len, a.stat()), (p.len, p.stat())]);
        if in_place(a, p) {
            self.pad(p, count)?;
            return Self::view(p, count, dim);
        }
        if self.write_flat(a, p, count)? {
            self.pad(p, count)?;
            return Self::view(p, count, dim);
        }
        self.loop_(count, false, Vec::new(), &mut |t, i, _| {
            let x = t.elem(a, IntVal::Ssa(i))?;
            let dst = t.place_elem(p, IntVal::Ssa(i))?;
            t.write(&x, &dst)?;
            Ok(Vec::new())
        })?;
        self.pad(p, count)?;
        Self::view(p, count, dim)
    }

    /// Write the first `count` elements of `a` to `p` with one loop per leaf, when the
    /// elements are arrays laid out identically in both (so that `count` elements are
    /// consecutive reals in every leaf). Returns false, writing nothing, otherwise.
    fn write_flat(&mut self, a: &Arr, p: &Arr, count: IntVal) -> JitResult<bool> {
        if !p.shape.elem.has_arrays() {
            return Ok(false);
        }
        let Kind::Mem { layout: dst, .. } = &p.kind else {
            return internal("a destination is not in memory");
        };
        let mut leaves = Vec::new();
        let same = match &a.kind {
            Kind::Mem { layout: src, .. } => same_layout(src, dst, &mut leaves),
            Kind::Fill { elem } => fill_layout(elem, dst, &mut leaves),
            Kind::Map { .. } | Kind::Map2 { .. } | Kind::Scan(_) => false,
        };
        if !same {
            return Ok(false);
        }
        for (src, dst, row) in leaves {
            let n = self.imul(count, row);
            self.loop_(n, false, Vec::new(), &mut |t, i, _| {
                let x = match src {
                    Leaf::Mem(base) => {
                        let at = t.addr(base, IntVal::Ssa(i), IntVal::Const(1));
                        t.b.ins().load(F64, t.flags, at, 0)
                    }
                    Leaf::Const(c) => t.b.ins().f64const(c),
                };
                let at = t.addr(dst, IntVal::Ssa(i), IntVal::Const(1));
                t.store(x, at);
                Ok(Vec::new())
            })?;
        }
        Ok(true)
    }

    fn imul(&mut self, a: IntVal, b: IntVal) -> IntVal {
        match (a, b) {
            (IntVal::Const(x), IntVal::Const(y)) => IntVal::Const(x.wrapping_mul(y)),
            (IntVal::Const(1), y) | (y, IntVal::Const(1)) => y,
            _ => {
                let (x, y) = (self.int_value(a), self.int_value(b));
                IntVal::Ssa(self.b.ins().imul(x, y))
            }
        }
    }

    /// Zero the elements of `p` from `from` to its capacity.
    fn pad(&mut self, p: &Arr, from: IntVal) -> JitResult<()> {
        if from == p.len {
            return Ok(());
        }
        let n = self.isub(p.len, from);
        self.loop_(n, false, Vec::new(), &mut |t, j, _| {
            let i = t.iadd_value(from, j);
            let dst = t.place_elem(p, i)?;
            t.zero(&dst)?;
            Ok(Vec::new())
        })?;
        Ok(())
    }

    fn iadd_value(&mut self, a: IntVal, j: Value) -> IntVal {
        match a {
            IntVal::Const(0) => IntVal::Ssa(j),
            IntVal::Const(k) => IntVal::Ssa(self.b.ins().iadd_imm_s(j, k)),
            IntVal::Ssa(v) => IntVal::Ssa(self.b.ins().iadd(v, j)),
        }
    }

    fn zero(&mut self, p: &Place) -> JitResult<()> {
        match p {
            Place::Reg => Ok(()),
            Place::Real(addr) => {
                let z = self.b.ins().f64const(0.0);
                self.store(z, *addr);
                Ok(())
            }
            Place::Tuple(ps) => ps.iter().try_for_each(|p| self.zero(p)),
            Place::Arr(a) => {
                let a = a.clone();
                self.pad(&a, IntVal::Const(0))
            }
        }
    }

    /// Evaluate the maps inside `v`, so that its elements can be read more than once.
    fn force(&mut self, v: Val) -> JitResult<Val> {
        Ok(match v {
            Val::Real(_) | Val::Bool(_) => v,
            Val::Tuple(items) => Val::Tuple(
                items
                    .iter()
                    .map(|x| self.force(x.clone()))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            Val::Arr(a) => match a.kind {
                Kind::Mem { .. } | Kind::Fill { .. } => Val::Arr(a),
                Kind::Map { .. } | Kind::Map2 { .. } | Kind::Scan(_) => {
                    let p = self.alloc(&a.shape)?;
                    self.write_arr(&a, &p)?
                }
            },
        })
    }

    /// `v` with every array in memory, the ones not yet there written to buffers of shape
    /// `s` (the `k`-th array of the value to `bufs[k]`, allocated on first need).
    fn in_memory(
        &mut self,
        v: Val,
        s: &SShape,
        bufs: &mut Vec<Option<Rc<Arr>>>,
        k: &mut usize,
    ) -> JitResult<Val> {
        Ok(match (v, s) {
            (v @ (Val::Real(_) | Val::Bool(_)), _) => v,
            (Val::Tuple(items), SShape::Tuple(ss)) if items.len() == ss.len() => Val::Tuple(
                items
                    .iter()
                    .zip(ss.iter())
                    .map(|(x, s)| self.in_memory(x.clone(), s, bufs, k))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Val::Arr(a), SShape::Arr(sa)) => {
                let idx = *k;
                *k += 1;
                if matches!(a.kind, Kind::Mem { .. }) {
                    return Ok(Val::Arr(a));
                }
                if bufs.len() <= idx {
                    bufs.resize(idx + 1, None);
                }
                let p = match &bufs[idx] {
                    Some(p) => p.clone(),
                    None => {
                        let p = self.alloc(sa)?;
                        bufs[idx] = Some(p.clone());
                        p
                    }
                };
                self.write_arr(&a, &p)?
            }
            _ => return internal("a value does not match its shape"),
        })
    }

    // ---- flattening values into SSA values (for block parameters) -------------------------

    fn real_value(&mut self, x: RealVal) -> Value {
        match x {
            RealVal::Const(c) => self.b.ins().f64const(c),
            RealVal::Ssa(v) => v,
        }
    }

    fn cond_value(&mut self, x: CondVal) -> Value {
        match x {
            CondVal::Const(c) => self.b.ins().iconst(I8, c as i64),
            CondVal::Ssa(v) => v,
        }
    }

    /// The SSA values that make up `v` (every array in it must be in memory).
    fn flatten(&mut self, v: &Val, out: &mut Vec<Value>) -> JitResult<()> {
        match v {
            Val::Real(x) => out.push(self.real_value(*x)),
            Val::Bool(x) => out.push(self.cond_value(*x)),
            Val::Tuple(items) => {
                for x in items.iter() {
                    self.flatten(x, out)?;
                }
            }
            Val::Arr(a) => {
                let Kind::Mem { layout, .. } = &a.kind else {
                    return internal("only arrays in memory are passed between blocks");
                };
                out.push(self.int_value(a.len));
                self.flatten_layout(layout, out);
            }
        }
        Ok(())
    }

    fn flatten_layout(&mut self, lay: &Layout, out: &mut Vec<Value>) {
        match lay {
            Layout::Real { base, strides } => {
                out.push(*base);
                for &s in strides.iter() {
                    out.push(self.int_value(s));
                }
            }
            Layout::Tuple(items) => items.iter().for_each(|l| self.flatten_layout(l, out)),
            Layout::Array { len, elem } => {
                out.push(self.int_value(*len));
                self.flatten_layout(elem, out);
            }
        }
    }

    /// The value with the structure of `template` made of the slots `vals` (as
    /// [`Translator::flatten`] produced them, or lengths and strides known to be the same),
    /// arrays with shapes from `s` and buffers `holds`.
    fn rebuild(
        &mut self,
        template: &Val,
        s: &SShape,
        vals: &mut std::slice::Iter<'_, IntVal>,
        holds: &Holds,
    ) -> JitResult<Val> {
        let mut value = || match vals.next() {
            Some(&IntVal::Ssa(v)) => Ok(v),
            Some(IntVal::Const(_)) => internal("a constant slot for a value"),
            None => internal("too few block parameters"),
        };
        Ok(match (template, s) {
            (Val::Real(_), _) => Val::Real(RealVal::Ssa(value()?)),
            (Val::Bool(_), _) => Val::Bool(CondVal::Ssa(value()?)),
            (Val::Tuple(items), SShape::Tuple(ss)) if items.len() == ss.len() => Val::Tuple(
                items
                    .iter()
                    .zip(ss.iter())
                    .map(|(x, s)| self.rebuild(x, s, vals, holds))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Val::Arr(a), SShape::Arr(sa)) => {
                let Kind::Mem { layout, .. } = &a.kind else {
                    return internal("only arrays in memory are passed between blocks");
                };
                let Some(&carried) = vals.next() else {
                    return internal("too few block parameters");
                };
                // An exact length is the sizes' value whatever the block received.
                let (len, d) = if sa.exact {
                    (self.dim(sa.len), Some(sa.len))
                } else {
                    (carried, self.stat_of(carried, sa.len))
                };
                Val::Arr(Rc::new(Arr {
                    len,
                    shape: sized(sa, d),
                    kind: Kind::Mem {
                        layout: Self::rebuild_layout(layout, vals)?,
                        holds: holds.clone(),
                    },
                }))
            }
            _ => return internal("a value does not match its shape"),
        })
    }

    fn rebuild_layout(lay: &Layout, vals: &mut std::slice::Iter<'_, IntVal>) -> JitResult<Layout> {
        let mut next = || {
            vals.next()
                .copied()
                .ok_or_else(|| JitError::Internal("too few block parameters".into()))
        };
        Ok(match lay {
            Layout::Real { strides, .. } => {
                let IntVal::Ssa(base) = next()? else {
                    return internal("a constant slot for an address");
                };
                let strides = strides
                    .iter()
                    .map(|_| next())
                    .collect::<JitResult<Vec<_>>>()?;
                Layout::Real {
                    base,
                    strides: strides.into(),
                }
            }
            Layout::Tuple(items) => Layout::Tuple(
                items
                    .iter()
                    .map(|l| Self::rebuild_layout(l, vals))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            Layout::Array { elem, .. } => {
                let len = next()?;
                Layout::Array {
                    len,
                    elem: Rc::new(Self::rebuild_layout(elem, vals)?),
                }
            }
        })
    }

    /// `p`'s lengths and strides in [`Translator::flatten`]'s order for a value of shape `s`
    /// kept in `p`: `None` for what may differ between values kept there (reals, addresses,
    /// lengths that are not exact).
    fn place_slots(&mut self, p: &Place, s: &SShape, out: &mut Vec<Option<IntVal>>) {
        match (p, s) {
            (Place::Tuple(items), SShape::Tuple(ss)) if items.len() == ss.len() => {
                for (p, s) in items.iter().zip(ss.iter()) {
                    self.place_slots(p, s, out);
                }
            }
            (Place::Arr(a), SShape::Arr(sa)) => {
                out.push(sa.exact.then(|| self.dim(sa.len)));
                if let Kind::Mem { layout, .. } = &a.kind {
                    layout_slots(layout, out);
                }
            }
            // A real or condition, or a place that does not match (then nothing is fixed:
            // the slot count differs from the state's).
            _ => out.push(None),
        }
    }

    /// The slots of a loop's state of shape `s` that every iteration leaves as they are,
    /// when each iteration's state is a view of one of `places` (accumulator buffers
    /// allocated alike, or rows of one array): their strides and inner lengths, and the
    /// lengths the shape says are exact. `n` is the number of slots.
    /// A loop's initial state `v` of shape `s`, kept in `places` on every iteration (none:
    /// nothing fixed): its fixed slots, and the values the loop carries.
    fn loop_state(
        &mut self,
        v: &Val,
        places: &[&Place],
        s: &SShape,
    ) -> JitResult<(Fixed, Vec<Value>)> {
        let mut flat = Vec::new();
        self.flatten(v, &mut flat)?;
        let fixed = if places.is_empty() {
            Fixed::none(flat.len())
        } else {
            self.fixed_slots(places, s, flat.len())
        };
        let carried = fixed.carried(&flat)?;
        Ok((fixed, carried))
    }

    /// The values a loop carries of its next state `v`.
    fn carry(&mut self, v: &Val, fixed: &Fixed) -> JitResult<Vec<Value>> {
        let mut flat = Vec::new();
        self.flatten(v, &mut flat)?;
        fixed.carried(&flat)
    }

    fn fixed_slots(&mut self, places: &[&Place], s: &SShape, n: usize) -> Fixed {
        let mut all: Option<Vec<Option<IntVal>>> = None;
        for p in places {
            let mut slots = Vec::with_capacity(n);
            self.place_slots(p, s, &mut slots);
            all = Some(match all {
                None => slots,
                Some(prev) if prev.len() == slots.len() => prev
                    .iter()
                    .zip(&slots)
                    .map(|(a, b)| if a == b { *a } else { None })
                    .collect(),
                Some(_) => vec![None; n],
            });
        }
        match all {
            Some(slots) if slots.len() == n => Fixed(slots),
            _ => Fixed(vec![None; n]),
        }
    }

    fn holds_of(v: &Val, out: &mut Vec<Rc<Buf>>) {
        match v {
            Val::Real(_) | Val::Bool(_) => {}
            Val::Tuple(items) => items.iter().for_each(|x| Self::holds_of(x, out)),
            Val::Arr(a) => {
                if let Kind::Mem { holds, .. } = &a.kind {
                    out.extend(holds.iter().cloned());
                }
            }
        }
    }

    fn place_holds(p: &Place, out: &mut Vec<Rc<Buf>>) {
        match p {
            Place::Reg | Place::Real(_) => {}
            Place::Tuple(ps) => ps.iter().for_each(|p| Self::place_holds(p, out)),
            Place::Arr(a) => {
                if let Kind::Mem { holds, .. } = &a.kind {
                    out.extend(holds.iter().cloned());
                }
            }
        }
    }

    /// `if c { p } else { q }`, for two places of the same shape.
    fn select_place(&mut self, c: Value, p: &Place, q: &Place) -> JitResult<Place> {
        Ok(match (p, q) {
            (Place::Reg, Place::Reg) => Place::Reg,
            (Place::Real(x), Place::Real(y)) => Place::Real(self.select_ssa(c, *x, *y)),
            (Place::Tuple(ps), Place::Tuple(qs)) if ps.len() == qs.len() => Place::Tuple(
                ps.iter()
                    .zip(qs.iter())
                    .map(|(p, q)| self.select_place(c, p, q))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Place::Arr(a), Place::Arr(b)) => {
                let (
                    Kind::Mem {
                        layout: la,
                        holds: ha,
                    },
                    Kind::Mem {
                        layout: lb,
                        holds: hb,
                    },
                ) = (&a.kind, &b.kind)
                else {
                    return internal("accumulator buffers are not in memory");
                };
                let len = self.select_int(c, a.len, b.len);
                let layout = self.select_layout(c, la, lb)?;
                Place::Arr(Rc::new(Arr {
                    len,
                    shape: a.shape.clone(),
                    kind: Kind::Mem {
                        layout,
                        holds: concat_holds(ha, hb),
                    },
                }))
            }
            _ => return internal("accumulator places differ in shape"),
        })
    }

    fn select_ssa(&mut self, c: Value, x: Value, y: Value) -> Value {
        if x == y {
            x
        } else {
            self.b.ins().select(c, x, y)
        }
    }

    fn select_int(&mut self, c: Value, x: IntVal, y: IntVal) -> IntVal {
        if x == y {
            return x;
        }
        let (a, b) = (self.int_value(x), self.int_value(y));
        IntVal::Ssa(self.b.ins().select(c, a, b))
    }

    fn select_layout(&mut self, c: Value, p: &Layout, q: &Layout) -> JitResult<Layout> {
        Ok(match (p, q) {
            (
                Layout::Real {
                    base: b1,
                    strides: s1,
                },
                Layout::Real {
                    base: b2,
                    strides: s2,
                },
            ) if s1.len() == s2.len() => {
                let base = self.select_ssa(c, *b1, *b2);
                let strides: Vec<IntVal> = s1
                    .iter()
                    .zip(s2.iter())
                    .map(|(&x, &y)| self.select_int(c, x, y))
                    .collect();
                Layout::Real {
                    base,
                    strides: strides.into(),
                }
            }
            (Layout::Tuple(ps), Layout::Tuple(qs)) if ps.len() == qs.len() => Layout::Tuple(
                ps.iter()
                    .zip(qs.iter())
                    .map(|(p, q)| self.select_layout(c, p, q))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Layout::Array { len: l1, elem: e1 }, Layout::Array { len: l2, elem: e2 }) => {
                Layout::Array {
                    len: self.select_int(c, *l1, *l2),
                    elem: Rc::new(self.select_layout(c, e1, e2)?),
                }
            }
            _ => return internal("accumulator layouts differ"),
        })
    }

    // ---- loops ----------------------------------------------------------------------------

    /// A bottom-tested loop of `count` iterations (from `count - 1` down to 0 if `rev`),
    /// carrying the values `init`; `body` gets the index and the carried values and returns
    /// the next ones. Returns the carried values after the loop.
    fn loop_(
        &mut self,
        count: IntVal,
        rev: bool,
        init: Vec<Value>,
        body: &mut Body<'_, 'a>,
    ) -> JitResult<Vec<Value>> {
        if let IntVal::Const(n) = count {
            if n <= 0 {
                return Ok(init);
            }
        }
        if init.len() >= MAX_BLOCK_PARAMS {
            return unsupported("a loop carrying this many values");
        }
        let types: Vec<Type> = init
            .iter()
            .map(|&v| self.b.func.dfg.value_type(v))
            .collect();
        let body_b = self.b.create_block();
        let exit_b = self.b.create_block();
        let i = self.b.append_block_param(body_b, I64);
        let params: Vec<Value> = types
            .iter()
            .map(|&t| self.b.append_block_param(body_b, t))
            .collect();
        let outs: Vec<Value> = types
            .iter()
            .map(|&t| self.b.append_block_param(exit_b, t))
            .collect();
        let n = self.int_value(count);
        let start = if rev {
            self.b.ins().iadd_imm_s(n, -1)
        } else {
            self.b.ins().iconst(I64, 0)
        };
        let mut args = vec![start];
        args.extend_from_slice(&init);
        match count {
            IntVal::Const(_) => {
                self.b.ins().jump(body_b, &blockargs(&args));
            }
            IntVal::Ssa(_) => {
                self.b
                    .ins()
                    .brif(n, body_b, &blockargs(&args), exit_b, &blockargs(&init));
            }
        }
        self.switch_to(body_b);
        self.frames.push(Vec::new());
        self.counters.push((!rev).then_some(i));
        let out = body(self, i, &params);
        self.counters.pop();
        let pinned = self.frames.pop();
        let out = out?;
        drop(pinned);
        let out_types: Vec<Type> = out.iter().map(|&v| self.b.func.dfg.value_type(v)).collect();
        if out_types != types {
            return internal("a loop body changes the types it carries");
        }
        let mut next = Vec::with_capacity(out.len() + 1);
        if rev {
            let i1 = self.b.ins().iadd_imm_s(i, -1);
            next.push(i1);
            next.extend_from_slice(&out);
            self.b
                .ins()
                .brif(i, body_b, &blockargs(&next), exit_b, &blockargs(&out));
        } else {
            let i1 = self.b.ins().iadd_imm_s(i, 1);
            let more = match count {
                IntVal::Const(k) => self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, i1, k),
                IntVal::Ssa(n) => self.b.ins().icmp(IntCC::UnsignedLessThan, i1, n),
            };
            next.push(i1);
            next.extend_from_slice(&out);
            self.b
                .ins()
                .brif(more, body_b, &blockargs(&next), exit_b, &blockargs(&out));
        }
        self.switch_to(exit_b);
        // The reals a loop leaves behind pass through a stack slot, which makes them new
        // values defined here (a stack load stays where it is): one that must survive a
        // later call (every float register is caller-saved) is then spilled here, once,
        // rather than at its definition inside the loop on every iteration, where the
        // register allocator puts it when the loop's block parameter and the value are one
        // live range.
        let mut relayed = Vec::with_capacity(outs.len());
        for v in outs {
            relayed.push(if self.b.func.dfg.value_type(v) == F64 {
                let slot = self.relay_slot();
                let addr = self.b.ins().stack_addr(I64, slot, 0);
                self.b.ins().store(MemFlagsData::trusted(), v, addr, 0);
                let bits = self.b.ins().atomic_load(I64, MemFlagsData::trusted(), addr);
                self.b.ins().bitcast(F64, MemFlagsData::new(), bits)
            } else {
                v
            });
        }
        Ok(relayed)
    }

    /// The stack slot loop results pass through.
    fn relay_slot(&mut self) -> StackSlot {
        if let Some(s) = self.relay {
            return s;
        }
        let s =
            self.b
                .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3));
        self.relay = Some(s);
        s
    }

    // ---- expressions ----------------------------------------------------------------------

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

    /// Bind the value of a `let` (evaluating its maps unless they can be fused).
    fn bind_let(&mut self, x: Var, v: Val) -> JitResult<()> {
        let v = if self.an.lazy_ok(x) {
            v
        } else {
            self.force(v)?
        };
        self.bind(x, v)?;
        Ok(())
    }

    fn bind_let_tuple(&mut self, xs: &[Var], v: Val) -> JitResult<()> {
        let Val::Tuple(items) = v else {
            return Err(JitError::Type("a tuple pattern binds a non-tuple".into()));
        };
        if items.len() != xs.len() {
            return Err(JitError::Type("a tuple pattern has the wrong arity".into()));
        }
        for (&x, v) in xs.iter().zip(items.iter()) {
            self.bind_let(x, v.clone())?;
        }
        Ok(())
    }

    fn emit_node(&mut self, e: ExprId) -> JitResult<Val> {
        use Node::*;
        let arena = self.arena;
        match arena[e] {
            Const(c) => Ok(Val::Real(RealVal::Const(c))),
            Bool(c) => Ok(Val::Bool(CondVal::Const(c))),
            Var(v) => self.use_var(v),
            Let(x, e1, e2) => {
                let v = self.emit(e1)?;
                if let Some(r) = self.stored_then_folded(x, &v, e2, None)? {
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
                let x = self.emit_real(x)?;
                let y = self.emit_real(y)?;
                Ok(Val::Real(self.binary(op, x, y)?))
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
            Call(..) => unsupported("a call of a definition (inline the program first)"),
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
                Ok(Val::Arr(Rc::new(Arr {
                    len: src.len,
                    shape: sized(&sa, src.stat()),
                    kind: Kind::Map {
                        f,
                        src,
                        read: Default::default(),
                    },
                })))
            }
            Map2(f, x, y) => {
                let sa = shape_arr(&self.shape(e)?)?;
                let a = self.emit_arr(x)?;
                let b = self.emit_arr(y)?;
                let (len, dim) = self.min_len(&[(a.len, a.stat()), (b.len, b.stat())]);
                Ok(Val::Arr(Rc::new(Arr {
                    len,
                    shape: sized(&sa, dim),
                    kind: Kind::Map2 {
                        f,
                        a,
                        b,
                        read: Default::default(),
                    },
                })))
            }
            Reduce(f, z, x) | Foldl(f, z, x) => self.emit_fold(f, z, x),
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

    /// `let x = v in let y = fold f z x in rest` where the map `v` must be stored (it is read
    /// again later): one loop computes each element, stores it and folds it, where storing
    /// `x` and then folding it would take two (`let E = map (t. exp(t - m)) A in let s =
    /// sum(E)`). Also `let y = fold f z (map (t. π_path t) x) in rest` where `rest` reads
    /// only other components of the elements (`map (t. π_q t) x`): the component folded is
    /// then not kept (one element's room, which every index reuses), and the accumulator
    /// may hold arrays. Reverse mode's combined pass makes that shape: per element, an
    /// operand's adjoint, kept, and the contributions to a captured array's adjoint,
    /// summed. `None` (nothing emitted) for other terms.
    fn stored_then_folded(
        &mut self,
        x: Var,
        v: &Val,
        e2: ExprId,
        into: Option<&Place>,
    ) -> JitResult<Option<Val>> {
        let arena = self.arena;
        let Val::Arr(a) = v else {
            return Ok(None);
        };
        if !matches!(a.kind, Kind::Map { .. } | Kind::Map2 { .. }) || self.an.lazy_ok(x) {
            return Ok(None);
        }
        let Node::Let(y, fold, rest) = arena[e2] else {
            return Ok(None);
        };
        let (Node::Reduce(f, z, src) | Node::Foldl(f, z, src)) = arena[fold] else {
            return Ok(None);
        };
        let (ps, body) = lambda(arena, f, 2, "a fold")?;
        let (pa, px) = (ps[0], ps[1]);
        let acc_shape = self.an.var_shape(pa)?.clone();
        let path = if arena[src] == Node::Var(x) {
            Vec::new()
        } else {
            match column_of(arena, src, x) {
                Some(path) if !path.is_empty() && reads_other_columns(arena, rest, x, &path) => {
                    path
                }
                _ => return Ok(None),
            }
        };
        if (path.is_empty() && acc_shape.has_arrays())
            || self.extremum(pa, px, body).is_some()
            || arena.free_vars(z).contains(&x)
        {
            return Ok(None);
        }
        let d = self.alloc_without(&a.shape, &path)?;
        let zv = self.emit(z)?;
        let (count, dim) = self.min_len(&[(a.len, a.stat()), (d.len, d.stat())]);
        // Scalar accumulators are in registers; one holding arrays alternates between two
        // buffers (as in a fold of its own), the phase first in the loop's state.
        let buffers = if acc_shape.has_arrays() {
            Some((self.acc_place(&acc_shape)?, self.acc_place(&acc_shape)?))
        } else {
            None
        };
        let (start, holds) = match &buffers {
            Some((pa_place, pb_place)) => {
                let v0 = self.write(&zv, pa_place)?;
                let mut h = Vec::new();
                Self::place_holds(pa_place, &mut h);
                Self::place_holds(pb_place, &mut h);
                (v0, Holds::from(h))
            }
            None => (zv, no_holds()),
        };
        let phased = usize::from(buffers.is_some());
        let places: Vec<&Place> = buffers.iter().flat_map(|(a, b)| [a, b]).collect();
        let (fixed, carried) = self.loop_state(&start, &places, &acc_shape)?;
        let mut init = Vec::new();
        if phased == 1 {
            init.push(self.b.ins().iconst(I8, 0));
        }
        init.extend(carried);
        let out = self.loop_(count, false, init, &mut |t, i, cur| {
            let xi = t.elem(a, IntVal::Ssa(i))?;
            let dst = t.place_elem(&d, IntVal::Ssa(i))?;
            let xi = t.write_except(&xi, &dst, &path)?;
            let slots = fixed.slots(&cur[phased..])?;
            let acc = t.rebuild(&start, &acc_shape, &mut slots.iter(), &holds)?;
            t.bind(pa, acc)?;
            t.bind(px, project(&xi, &path)?)?;
            let r = t.emit(body);
            t.unbind(pa);
            t.unbind(px);
            match &buffers {
                Some((pa_place, pb_place)) => {
                    // Phase 0: the accumulator is in the first buffer, the next goes to the
                    // second.
                    let other = t.select_place(cur[0], pa_place, pb_place)?;
                    let nv = t.write(&r?, &other)?;
                    let mut next = vec![t.b.ins().bxor_imm_s(cur[0], 1)];
                    next.extend(t.carry(&nv, &fixed)?);
                    Ok(next)
                }
                None => t.carry(&r?, &fixed),
            }
        })?;
        self.pad(&d, count)?;
        let stored = Self::view(&d, count, dim)?;
        let slots = fixed.slots(&out[phased..])?;
        let folded = self.rebuild(&start, &acc_shape, &mut slots.iter(), &holds)?;
        self.bind(x, stored)?;
        // The fold's reading of `x` was just done.
        self.skip(src);
        self.bind_let(y, folded)?;
        let r = match into {
            Some(p) => self.emit_into(rest, p)?,
            None => self.emit(rest)?,
        };
        self.end_scope(&[y], &r);
        self.end_scope(&[x], &r);
        Ok(Some(r))
    }

    /// `e` written to `p`; returns the value as written.
    fn emit_into(&mut self, e: ExprId, p: &Place) -> JitResult<Val> {
        with_stack(|| self.emit_into_node(e, p))
    }

    fn emit_into_node(&mut self, e: ExprId, p: &Place) -> JitResult<Val> {
        use Node::*;
        let arena = self.arena;
        match (arena[e], p) {
            (_, Place::Reg) => self.emit(e),
            (Let(x, e1, e2), _) => {
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
                let v = self.emit(e1)?;
                if let Some(r) = self.stored_then_folded(x, &v, e2, Some(p))? {
                    return Ok(r);
                }
                self.bind_let(x, v)?;
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
            (If(c, x, y), _) if self.shape(e)?.has_arrays() => self.emit_if(e, c, x, y, Some(p)),
            (Tuple(l), Place::Tuple(ps)) if l.len() == ps.len() => {
                if let Some(v) = self.fused_tuple(arena.exprs(l), ps)? {
                    return Ok(v);
                }
                // Components with arrays first: a scalar's run-time call (`log` of a sum)
                // then comes after their loops, so that nothing the loops use lives across
                // it (the register allocator spills such values inside the loops).
                let items = arena.exprs(l);
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
            (Map(f, x), Place::Arr(d)) => {
                let src = self.emit_arr(x)?;
                self.map_into(f, vec![src], d)
            }
            (Map2(f, x, y), Place::Arr(d)) => {
                let a = self.emit_arr(x)?;
                let b = self.emit_arr(y)?;
                self.map_into(f, vec![a, b], d)
            }
            (Scanl(f, z, x), Place::Arr(d)) => self.scan_into(f, z, x, d, false),
            (Scanr(f, z, x), Place::Arr(d)) => self.scan_into(f, z, x, d, true),
            (Array(l), Place::Arr(d)) if d.len == IntVal::Const(l.len() as i64) => {
                for (j, &item) in arena.exprs(l).iter().enumerate() {
                    let dst = self.place_elem(d, IntVal::Const(j as i64))?;
                    self.emit_into(item, &dst)?;
                }
                Self::view(d, d.len, d.stat())
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

    /// `Some(i)` if the `let`-chain `e` ends in a tuple whose component `i` (of `places`, an
    /// array's place) is the variable `x` itself, which no other component is and no
    /// binding of the chain binds again: then `x` may be computed into `places[i]`.
    fn result_slot(&self, x: Var, e: ExprId, places: &[Place]) -> Option<usize> {
        let arena = self.arena;
        let mut cur = e;
        let items = loop {
            match arena[cur] {
                Node::Let(y, _, b) if y != x => cur = b,
                Node::LetTuple(ys, _, b) if !arena.vars_of(ys).contains(&x) => cur = b,
                Node::Tuple(l) if arena.exprs(l).len() == places.len() => break arena.exprs(l),
                _ => return None,
            }
        };
        let mut at = (0..items.len()).filter(|&i| arena[items[i]] == Node::Var(x));
        match (at.next(), at.next()) {
            (Some(i), None) if matches!(places[i], Place::Arr(_)) => Some(i),
            _ => None,
        }
    }

    /// The components of a tuple written to `places` with their loops fused: scalar folds
    /// and arrays written element by element (maps, copies, fills) that run over the same
    /// length share one loop, so their common loads and subexpressions are computed once
    /// (local value numbering) and every input is read once. `None` (nothing emitted) when
    /// fewer than two components are such loops.
    fn fused_tuple(&mut self, items: &[ExprId], places: &[Place]) -> JitResult<Option<Val>> {
        let arena = self.arena;
        let fold_like = |t: &Self, e: ExprId, p: &Place| -> JitResult<bool> {
            Ok(match (arena[e], p) {
                (Node::Reduce(f, ..) | Node::Foldl(f, ..), Place::Reg | Place::Real(_)) => {
                    let (ps, _) = lambda(arena, f, 2, "a fold")?;
                    !t.an.var_shape(ps[0])?.has_arrays()
                }
                _ => false,
            })
        };
        // Copies and fills of nested arrays stay single flat loops (`write_flat`).
        let flat = |e: ExprId| match self.an.shape(e) {
            Ok(SShape::Arr(sa)) => !sa.elem.has_arrays(),
            _ => false,
        };
        let array_like = |e: ExprId, p: &Place| match (arena[e], p) {
            (Node::Map(..) | Node::Map2(..), Place::Arr(_)) => true,
            (
                Node::Var(_)
                | Node::ZerosLike(_)
                | Node::OnesLike(_)
                | Node::Shift1L(_)
                | Node::Shift1R(_),
                Place::Arr(_),
            ) => flat(e),
            _ => false,
        };
        let mut loops = 0;
        for (&e, p) in items.iter().zip(places) {
            if fold_like(self, e, p)? || array_like(e, p) {
                loops += 1;
            }
        }
        if loops < 2 {
            return Ok(None);
        }
        // Prepare every component in order: loops up to their sources, the others in full.
        let mut preps: Vec<Prep> = Vec::with_capacity(items.len());
        for (&e, p) in items.iter().zip(places) {
            preps.push(if fold_like(self, e, p)? {
                let (Node::Reduce(f, z, x) | Node::Foldl(f, z, x)) = arena[e] else {
                    return internal("a fold changed its node");
                };
                let (ps, body) = lambda(arena, f, 2, "a fold")?;
                let zv = self.emit(z)?;
                let src = self.emit_arr(x)?;
                Prep::Fold(FoldPrep {
                    pa: ps[0],
                    px: ps[1],
                    body,
                    shape: self.an.var_shape(ps[0])?.clone(),
                    zv,
                    src,
                })
            } else if let (true, Place::Arr(d)) = (array_like(e, p), p) {
                let a = self.emit_arr(e)?;
                let (count, dim) = self.min_len(&[(a.len, a.stat()), (d.len, d.stat())]);
                if in_place(&a, d) {
                    self.pad(d, count)?;
                    Prep::Done(Self::view(d, count, dim)?)
                } else {
                    Prep::Array {
                        a,
                        d: d.clone(),
                        count,
                        dim,
                    }
                }
            } else {
                Prep::Done(self.emit_into(e, p)?)
            });
        }
        // The loops over the first loop's length run fused; the others alone.
        let count_of = |p: &Prep| match p {
            Prep::Fold(f) => Some(f.src.len),
            Prep::Array { count, .. } => Some(*count),
            Prep::Done(_) => None,
        };
        let Some(count) = preps.iter().find_map(count_of) else {
            // Every array was already in place: nothing left to run.
            let items = preps
                .into_iter()
                .map(|p| match p {
                    Prep::Done(v) => Ok(v),
                    _ => internal("a fused tuple lost a loop"),
                })
                .collect::<JitResult<Vec<_>>>()?;
            return Ok(Some(Val::Tuple(items.into())));
        };
        let group: Vec<usize> = (0..preps.len())
            .filter(|&k| count_of(&preps[k]) == Some(count))
            .collect();
        let mut out: Vec<Option<Val>> = vec![None; preps.len()];
        for k in 0..preps.len() {
            if group.contains(&k) {
                continue;
            }
            out[k] = Some(match &preps[k] {
                Prep::Done(v) => v.clone(),
                Prep::Array { a, d, .. } => self.write_arr(a, d)?,
                Prep::Fold(f) => {
                    let n = f.src.len;
                    let v = self.fused_loop(n, &[f], &[])?.remove(0);
                    self.write(&v, &places[k])?
                }
            });
        }
        let folds: Vec<&FoldPrep> = group
            .iter()
            .filter_map(|&k| match &preps[k] {
                Prep::Fold(f) => Some(f),
                _ => None,
            })
            .collect();
        let arrays: Vec<(&Rc<Arr>, &Rc<Arr>)> = group
            .iter()
            .filter_map(|&k| match &preps[k] {
                Prep::Array { a, d, .. } => Some((a, d)),
                _ => None,
            })
            .collect();
        let mut results = self.fused_loop(count, &folds, &arrays)?.into_iter();
        for &k in &group {
            out[k] = Some(match &preps[k] {
                Prep::Fold(_) => {
                    let v = results
                        .next()
                        .ok_or_else(|| JitError::Internal("a fold lost its result".into()))?;
                    self.write(&v, &places[k])?
                }
                Prep::Array { d, count, dim, .. } => {
                    self.pad(d, *count)?;
                    Self::view(d, *count, *dim)?
                }
                Prep::Done(v) => v.clone(),
            });
        }
        let items = out
            .into_iter()
            .map(|v| v.ok_or_else(|| JitError::Internal("a tuple component was lost".into())))
            .collect::<JitResult<Vec<_>>>()?;
        Ok(Some(Val::Tuple(items.into())))
    }

    /// One loop of `count` iterations running the folds `folds` (scalar accumulators) and
    /// writing element `i` of each `(array, destination)` of `arrays`; returns the folds'
    /// results.
    fn fused_loop(
        &mut self,
        count: IntVal,
        folds: &[&FoldPrep],
        arrays: &[(&Rc<Arr>, &Rc<Arr>)],
    ) -> JitResult<Vec<Val>> {
        let mut init = Vec::new();
        let mut widths = Vec::with_capacity(folds.len());
        for f in folds {
            let before = init.len();
            self.flatten(&f.zv, &mut init)?;
            widths.push(init.len() - before);
        }
        let holds = no_holds();
        let outs = self.loop_(count, false, init, &mut |t, i, cur| {
            let mut next = Vec::with_capacity(cur.len());
            let mut at = 0;
            for (f, &w) in folds.iter().zip(&widths) {
                let acc = t.rebuild(
                    &f.zv,
                    &f.shape,
                    &mut ssa_ints(&cur[at..at + w]).iter(),
                    &holds,
                )?;
                at += w;
                let xi = t.elem(&f.src, IntVal::Ssa(i))?;
                t.bind(f.pa, acc)?;
                t.bind(f.px, xi)?;
                let r = t.emit(f.body);
                t.unbind(f.pa);
                t.unbind(f.px);
                t.flatten(&r?, &mut next)?;
            }
            for (a, d) in arrays {
                let x = t.elem(a, IntVal::Ssa(i))?;
                let dst = t.place_elem(d, IntVal::Ssa(i))?;
                t.write(&x, &dst)?;
            }
            Ok(next)
        })?;
        let mut at = 0;
        let mut results = Vec::with_capacity(folds.len());
        for (f, &w) in folds.iter().zip(&widths) {
            results.push(self.rebuild(
                &f.zv,
                &f.shape,
                &mut ssa_ints(&outs[at..at + w]).iter(),
                &holds,
            )?);
            at += w;
        }
        Ok(results)
    }

    /// `map f srcs...` written to `d`.
    fn map_into(&mut self, f: ExprId, srcs: Vec<Rc<Arr>>, d: &Arr) -> JitResult<Val> {
        let mut lens = vec![(d.len, d.stat())];
        lens.extend(srcs.iter().map(|s| (s.len, s.stat())));
        let (count, dim) = self.min_len(&lens);
        let (ps, body) = lambda(self.arena, f, srcs.len(), "map")?;
        self.loop_(count, false, Vec::new(), &mut |t, i, _| {
            for (&p, s) in ps.iter().zip(&srcs) {
                let x = t.elem(s, IntVal::Ssa(i))?;
                t.bind(p, x)?;
            }
            let dst = t.place_elem(d, IntVal::Ssa(i))?;
            let r = t.emit_into(body, &dst);
            for &p in ps {
                t.unbind(p);
            }
            r?;
            Ok(Vec::new())
        })?;
        self.pad(d, count)?;
        Self::view(d, count, dim)
    }

    /// `scanl f z x` (or `scanr`) written to `d`.
    fn scan_into(
        &mut self,
        f: ExprId,
        z: ExprId,
        x: ExprId,
        d: &Arr,
        right: bool,
    ) -> JitResult<Val> {
        let (ps, body) = lambda(self.arena, f, 2, "a scan")?;
        let (pa, px) = if right {
            (ps[1], ps[0])
        } else {
            (ps[0], ps[1])
        };
        let zv = self.emit(z)?;
        let mut src = self.emit_arr(x)?;
        if right && reads_scan(&src) {
            // Read from the last element first: scans computed where they are read cannot.
            src = expect_arr(self.force(Val::Arr(src))?)?;
        }
        let room = match d.stat() {
            Some(dd) => (self.dim(dd.dec()), Some(dd.dec())),
            None => (self.dec(d.len), None),
        };
        let (count, count_dim) = self.min_len(&[(src.len, src.stat()), room]);
        let first = if right { count } else { IntVal::Const(0) };
        let dst = self.place_elem(d, first)?;
        let v0 = self.write(&zv, &dst)?;
        drop(zv);
        let acc_shape = self.an.var_shape(pa)?.clone();
        // Every state is a row of `d`: its strides and inner lengths stay.
        let (fixed, init) = self.loop_state(&v0, &[&dst], &acc_shape)?;
        let holds = {
            let mut h = Vec::new();
            Self::holds_of(&v0, &mut h);
            Holds::from(h)
        };
        self.loop_(count, right, init, &mut |t, i, cur| {
            let slots = fixed.slots(cur)?;
            let acc = t.rebuild(&v0, &acc_shape, &mut slots.iter(), &holds)?;
            let xi = t.elem(&src, IntVal::Ssa(i))?;
            t.bind(pa, acc)?;
            t.bind(px, xi)?;
            let at = if right {
                IntVal::Ssa(i)
            } else {
                IntVal::Ssa(t.b.ins().iadd_imm_s(i, 1))
            };
            let dst = t.place_elem(d, at)?;
            // The result is written while the parameters are bound: an unevaluated map in
            // it may refer to them.
            let nv = t.emit(body).and_then(|r| t.write(&r, &dst));
            t.unbind(pa);
            t.unbind(px);
            t.carry(&nv?, &fixed)
        })?;
        let n_dim = count_dim.map(Dim::inc);
        let n = match n_dim {
            Some(nd) => self.dim(nd),
            None => self.iadd(count, 1),
        };
        self.pad(d, n)?;
        Self::view(d, n, n_dim)
    }

    /// `reduce f z x` / `foldl f z x`: the accumulator in registers, its arrays alternating
    /// between two buffers.
    fn emit_fold(&mut self, f: ExprId, z: ExprId, x: ExprId) -> JitResult<Val> {
        let (ps, body) = lambda(self.arena, f, 2, "a fold")?;
        let (pa, px) = (ps[0], ps[1]);
        let acc_shape = self.an.var_shape(pa)?.clone();
        let zv = self.emit(z)?;
        let src = self.emit_arr(x)?;
        if let (Some(op), Val::Real(z0), Kind::Mem { .. }) =
            (self.extremum(pa, px, body), &zv, &src.kind)
        {
            return self.extremum_lanes(op, *z0, &src).map(Val::Real);
        }
        if !acc_shape.has_arrays() {
            let mut init = Vec::new();
            self.flatten(&zv, &mut init)?;
            let holds = no_holds();
            let out = self.loop_(src.len, false, init, &mut |t, i, cur| {
                let acc = t.rebuild(&zv, &acc_shape, &mut ssa_ints(cur).iter(), &holds)?;
                let xi = t.elem(&src, IntVal::Ssa(i))?;
                t.bind(pa, acc)?;
                t.bind(px, xi)?;
                let r = t.emit(body);
                t.unbind(pa);
                t.unbind(px);
                let mut out = Vec::new();
                t.flatten(&r?, &mut out)?;
                Ok(out)
            })?;
            return self.rebuild(&zv, &acc_shape, &mut ssa_ints(&out).iter(), &holds);
        }
        let pa_place = self.acc_place(&acc_shape)?;
        let pb_place = self.acc_place(&acc_shape)?;
        let v0 = self.write(&zv, &pa_place)?;
        drop(zv);
        let holds = {
            let mut h = Vec::new();
            Self::place_holds(&pa_place, &mut h);
            Self::place_holds(&pb_place, &mut h);
            Holds::from(h)
        };
        let (fixed, carried) = self.loop_state(&v0, &[&pa_place, &pb_place], &acc_shape)?;
        let mut init = vec![self.b.ins().iconst(I8, 0)];
        init.extend(carried);
        let out = self.loop_(src.len, false, init, &mut |t, i, cur| {
            let phase = cur[0];
            let slots = fixed.slots(&cur[1..])?;
            let acc = t.rebuild(&v0, &acc_shape, &mut slots.iter(), &holds)?;
            // Phase 0: the accumulator is in the first buffer, the next one goes to the second.
            let other = t.select_place(phase, &pa_place, &pb_place)?;
            let xi = t.elem(&src, IntVal::Ssa(i))?;
            t.bind(pa, acc)?;
            t.bind(px, xi)?;
            let nv = t.emit(body).and_then(|r| t.write(&r, &other));
            t.unbind(pa);
            t.unbind(px);
            let nv = nv?;
            let mut out = vec![t.b.ins().bxor_imm_s(phase, 1)];
            out.extend(t.carry(&nv, &fixed)?);
            Ok(out)
        })?;
        let slots = fixed.slots(&out[1..])?;
        self.rebuild(&v0, &acc_shape, &mut slots.iter(), &holds)
    }

    /// `Some(max)` or `Some(min)` if `body` is `max(pa, px)` or `min(pa, px)` (either order).
    fn extremum(&self, pa: Var, px: Var, body: ExprId) -> Option<BinOp> {
        let arena = self.arena;
        match arena[body] {
            Node::Op2(op @ (BinOp::Max | BinOp::Min), a, b) => match (arena[a], arena[b]) {
                (Node::Var(x), Node::Var(y)) if (x, y) == (pa, px) || (x, y) == (px, pa) => {
                    Some(op)
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// A `max` (or `min`) reduction of the in-memory reals `src` from `z`, in four
    /// independent lanes. The language's `max` and `min` (IEEE maximum and minimum, any NaN
    /// giving the canonical NaN) are associative and commutative on every input, signed
    /// zeros and NaN included, so the result is the left fold's bit for bit; the lanes
    /// break the chain of dependent compares that bounds the left fold's speed.
    fn extremum_lanes(&mut self, op: BinOp, z: RealVal, src: &Arr) -> JitResult<RealVal> {
        const LANES: i64 = 4;
        let n = src.len;
        let quads = match n {
            IntVal::Const(k) => IntVal::Const(k / LANES),
            IntVal::Ssa(v) => IntVal::Ssa(self.b.ins().ushr_imm_s(v, 2)),
        };
        let z = self.real_value(z);
        let init = vec![z; LANES as usize];
        let lanes = self.loop_(quads, false, init, &mut |t, i, cur| {
            let base = t.b.ins().ishl_imm_s(i, 2);
            let mut next = Vec::with_capacity(cur.len());
            for (l, &acc) in cur.iter().enumerate() {
                let idx = t.b.ins().iadd_imm_s(base, l as i64);
                let Val::Real(x) = t.elem(src, IntVal::Ssa(idx))? else {
                    return internal("a reduction of reals has a non-real element");
                };
                next.push(t.binary(op, RealVal::Ssa(acc), x)?);
            }
            next.into_iter().map(|x| Ok(t.real_value(x))).collect()
        })?;
        // The remaining n mod 4 elements go to the first lane.
        let done = self.imul(quads, IntVal::Const(LANES));
        let rest = self.isub(n, done);
        let tail = self.loop_(rest, false, vec![lanes[0]], &mut |t, i, cur| {
            let idx = t.iadd_value(done, i);
            let Val::Real(x) = t.elem(src, idx)? else {
                return internal("a reduction of reals has a non-real element");
            };
            let r = t.binary(op, RealVal::Ssa(cur[0]), x)?;
            Ok(vec![t.real_value(r)])
        })?;
        let a = self.binary(op, RealVal::Ssa(tail[0]), RealVal::Ssa(lanes[1]))?;
        let b = self.binary(op, RealVal::Ssa(lanes[2]), RealVal::Ssa(lanes[3]))?;
        let all = self.binary(op, a, b)?;
        // With no element the fold is `z` itself, whatever NaN it may be.
        Ok(match n {
            IntVal::Const(0) => RealVal::Ssa(z),
            IntVal::Const(_) => all,
            IntVal::Ssa(v) => {
                let all = self.real_value(all);
                RealVal::Ssa(self.b.ins().select(v, all, z))
            }
        })
    }

    /// `if c then x else y`, written to `into` if given.
    fn emit_if(
        &mut self,
        e: ExprId,
        c: ExprId,
        x: ExprId,
        y: ExprId,
        into: Option<&Place>,
    ) -> JitResult<Val> {
        let cond = self.emit_bool(c)?;
        let shape = self.shape(e)?;
        let branch = |t: &mut Self, b: ExprId| match into {
            Some(p) => t.emit_into(b, p),
            None => t.emit(b),
        };
        let cond = match cond {
            CondVal::Const(k) => {
                let (taken, other) = if k { (x, y) } else { (y, x) };
                self.skip(other);
                return branch(self, taken);
            }
            CondVal::Ssa(v) => v,
        };
        if into.is_none() && !shape.has_arrays() && self.cheap(x) && self.cheap(y) {
            let vx = self.emit(x)?;
            let vy = self.emit(y)?;
            return self.select_val(cond, &vx, &vy);
        }
        let then_b = self.b.create_block();
        let else_b = self.b.create_block();
        let join_b = self.b.create_block();
        self.b.ins().brif(cond, then_b, &[], else_b, &[]);
        let mut bufs = Vec::new();
        let mut arm = |t: &mut Self, b: ExprId, blk: Block| -> JitResult<(Val, Vec<Value>)> {
            t.switch_to(blk);
            let v = branch(t, b)?;
            let v = t.in_memory(v, &shape, &mut bufs, &mut 0)?;
            let mut flat = Vec::new();
            t.flatten(&v, &mut flat)?;
            t.b.ins().jump(join_b, &blockargs(&flat));
            Ok((v, flat))
        };
        let (vx, fx) = arm(self, x, then_b)?;
        let (vy, fy) = arm(self, y, else_b)?;
        if fx.len() >= MAX_BLOCK_PARAMS {
            return unsupported("an `if` whose value has this many components");
        }
        let tx: Vec<Type> = fx.iter().map(|&v| self.b.func.dfg.value_type(v)).collect();
        let ty: Vec<Type> = fy.iter().map(|&v| self.b.func.dfg.value_type(v)).collect();
        if tx != ty {
            return internal("the branches of an `if` have different representations");
        }
        self.switch_to(join_b);
        // A value that arrives unchanged from both branches is used as it is (it dominates
        // the join); the others become block parameters.
        let mut params = Vec::with_capacity(fx.len());
        for ((&a, &b), &t) in fx.iter().zip(&fy).zip(&tx) {
            let p = self.b.append_block_param(join_b, t);
            params.push(if a == b { a } else { p });
        }
        let mut h = Vec::new();
        Self::holds_of(&vx, &mut h);
        Self::holds_of(&vy, &mut h);
        self.rebuild(&vx, &shape, &mut ssa_ints(&params).iter(), &Holds::from(h))
    }

    /// Whether `e` is a small scalar expression worth evaluating unconditionally.
    fn cheap(&self, e: ExprId) -> bool {
        fn go(arena: &Arena, e: ExprId, budget: &mut i32) -> bool {
            *budget -= 1;
            if *budget < 0 {
                return false;
            }
            match arena[e] {
                Node::Const(_) | Node::Var(_) => true,
                Node::Op1(UnOp::Neg | UnOp::Abs | UnOp::Sqrt, x) | Node::Proj(_, x) => {
                    go(arena, x, budget)
                }
                Node::Op2(op, x, y) => {
                    matches!(runtime::binary(op), Lowering::Inline)
                        && go(arena, x, budget)
                        && go(arena, y, budget)
                }
                Node::Tuple(l) => arena.exprs(l).iter().all(|&x| go(arena, x, budget)),
                _ => false,
            }
        }
        go(self.arena, e, &mut 12)
    }

    fn select_val(&mut self, c: Value, x: &Val, y: &Val) -> JitResult<Val> {
        Ok(match (x, y) {
            (Val::Real(RealVal::Const(a)), Val::Real(RealVal::Const(b)))
                if a.to_bits() == b.to_bits() =>
            {
                x.clone()
            }
            (Val::Real(a), Val::Real(b)) => {
                let (a, b) = (self.real_value(*a), self.real_value(*b));
                Val::Real(RealVal::Ssa(self.b.ins().select(c, a, b)))
            }
            (Val::Bool(a), Val::Bool(b)) => {
                let (a, b) = (self.cond_value(*a), self.cond_value(*b));
                Val::Bool(CondVal::Ssa(self.b.ins().select(c, a, b)))
            }
            (Val::Tuple(xs), Val::Tuple(ys)) if xs.len() == ys.len() => Val::Tuple(
                xs.iter()
                    .zip(ys.iter())
                    .map(|(a, b)| self.select_val(c, a, b))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            _ => return internal("the branches of an `if` differ in shape"),
        })
    }

    /// `shift1L a` (drop the first element) or `shift1R a` (drop the last): a view.
    fn shift(&mut self, a: &Arr, left: bool) -> JitResult<Rc<Arr>> {
        if let Kind::Scan(_) = a.kind {
            // Its elements come in order from the first: computed into memory first.
            let p = self.alloc(&a.shape)?;
            let v = expect_arr(self.write_arr(a, &p)?)?;
            return self.shift(&v, left);
        }
        let (len, shape) = match a.stat() {
            Some(d) => {
                let d = d.dec();
                let shape = Rc::new(SArr {
                    len: d,
                    exact: true,
                    elem: a.shape.elem.clone(),
                });
                (self.dim(d), shape)
            }
            None => {
                let shape = Rc::new(SArr {
                    len: a.shape.len.dec(),
                    exact: false,
                    elem: a.shape.elem.clone(),
                });
                (self.dec(a.len), shape)
            }
        };
        let kind = match &a.kind {
            Kind::Mem { layout, holds } => Kind::Mem {
                layout: if left {
                    self.layout_offset(layout, IntVal::Const(1), false)?
                } else {
                    layout.clone()
                },
                holds: holds.clone(),
            },
            Kind::Fill { elem } => Kind::Fill { elem: elem.clone() },
            Kind::Map { f, src, read } => {
                if read.get() {
                    return internal("a map is shifted after it was read");
                }
                Kind::Map {
                    f: *f,
                    src: self.shift(src, left)?,
                    read: Default::default(),
                }
            }
            Kind::Map2 { f, a, b, read } => {
                if read.get() {
                    return internal("a map2 is shifted after it was read");
                }
                Kind::Map2 {
                    f: *f,
                    a: self.shift(a, left)?,
                    b: self.shift(b, left)?,
                    read: Default::default(),
                }
            }
            Kind::Scan(_) => return internal("a scan computed where it is read is shifted"),
        };
        Ok(Rc::new(Arr { len, shape, kind }))
    }

    /// `zeros_like(x)` (`c` = 0) or `ones_like(x)` (`c` = 1).
    fn emit_fill(&mut self, x: ExprId, c: f64) -> JitResult<Val> {
        let s = self.shape(x)?;
        if s.all_exact() {
            self.skip(x);
            return self.fill_from_shape(&s, c);
        }
        let v = self.emit(x)?;
        self.fill_from_val(&v, c)
    }

    fn fill_from_shape(&mut self, s: &SShape, c: f64) -> JitResult<Val> {
        Ok(match s {
            SShape::Real => Val::Real(RealVal::Const(c)),
            SShape::Bool => return Err(JitError::Type("`zeros_like` of a condition".into())),
            SShape::Tuple(items) => Val::Tuple(
                items
                    .iter()
                    .map(|s| self.fill_from_shape(s, c))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            SShape::Arr(sa) => {
                let len = self.dim(sa.len);
                Val::Arr(Rc::new(Arr {
                    len,
                    shape: sized(sa, Some(sa.len)),
                    kind: Kind::Fill {
                        elem: self.fill_elem_from_shape(&sa.elem, c)?,
                    },
                }))
            }
        })
    }

    fn fill_elem_from_shape(&mut self, s: &SShape, c: f64) -> JitResult<FillElem> {
        Ok(match s {
            SShape::Real => FillElem::Real(c),
            SShape::Bool => return Err(JitError::Type("`zeros_like` of a condition".into())),
            SShape::Tuple(items) => FillElem::Tuple(
                items
                    .iter()
                    .map(|s| self.fill_elem_from_shape(s, c))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            SShape::Arr(sa) => FillElem::Array {
                len: self.dim(sa.len),
                shape: sa.clone(),
                elem: Rc::new(self.fill_elem_from_shape(&sa.elem, c)?),
            },
        })
    }

    fn fill_from_val(&mut self, v: &Val, c: f64) -> JitResult<Val> {
        Ok(match v {
            Val::Real(_) => Val::Real(RealVal::Const(c)),
            Val::Bool(_) => return Err(JitError::Type("`zeros_like` of a condition".into())),
            Val::Tuple(items) => Val::Tuple(
                items
                    .iter()
                    .map(|x| self.fill_from_val(x, c))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            Val::Arr(a) => {
                let elem = match &a.kind {
                    Kind::Mem { layout, .. } => {
                        Self::fill_elem_from_layout(layout, &a.shape.elem, c)?
                    }
                    Kind::Fill { elem } => Self::refill(elem, c),
                    Kind::Map { .. } | Kind::Map2 { .. } | Kind::Scan(_) => {
                        self.fill_elem_from_shape(&a.shape.elem, c)?
                    }
                };
                Val::Arr(Rc::new(Arr {
                    len: a.len,
                    shape: a.shape.clone(),
                    kind: Kind::Fill { elem },
                }))
            }
        })
    }

    fn fill_elem_from_layout(lay: &Layout, s: &SShape, c: f64) -> JitResult<FillElem> {
        Ok(match (lay, s) {
            (Layout::Real { .. }, SShape::Real) => FillElem::Real(c),
            (Layout::Tuple(ls), SShape::Tuple(ss)) if ls.len() == ss.len() => FillElem::Tuple(
                ls.iter()
                    .zip(ss.iter())
                    .map(|(l, s)| Self::fill_elem_from_layout(l, s, c))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Layout::Array { len, elem }, SShape::Arr(sa)) => FillElem::Array {
                len: *len,
                shape: sa.clone(),
                elem: Rc::new(Self::fill_elem_from_layout(elem, &sa.elem, c)?),
            },
            _ => return internal("a layout does not match its shape"),
        })
    }

    fn refill(e: &FillElem, c: f64) -> FillElem {
        match e {
            FillElem::Real(_) => FillElem::Real(c),
            FillElem::Tuple(items) => FillElem::Tuple(
                items
                    .iter()
                    .map(|x| Self::refill(x, c))
                    .collect::<Vec<_>>()
                    .into(),
            ),
            FillElem::Array { len, shape, elem } => FillElem::Array {
                len: *len,
                shape: shape.clone(),
                elem: Rc::new(Self::refill(elem, c)),
            },
        }
    }

    // ---- scalars --------------------------------------------------------------------------

    fn extern_fn(&mut self, name: &'static str, arity: usize) -> JitResult<FuncRef> {
        if let Some(&f) = self.externs.get(name) {
            return Ok(f);
        }
        let mut sig = Signature::new(self.module.isa().default_call_conv());
        for _ in 0..arity {
            sig.params.push(AbiParam::new(F64));
        }
        sig.returns.push(AbiParam::new(F64));
        let id = self
            .module
            .declare_function(name, Linkage::Import, &sig)
            .map_err(|e| JitError::Codegen(e.to_string()))?;
        let f = self.module.declare_func_in_func(id, self.b.func);
        self.externs.insert(name, f);
        Ok(f)
    }

    fn call(&mut self, name: &'static str, args: &[Value]) -> JitResult<Value> {
        let f = self.extern_fn(name, args.len())?;
        let inst = self.b.ins().call(f, args);
        match self.b.inst_results(inst) {
            [r] => Ok(*r),
            _ => internal("a run-time function returned no value"),
        }
    }

    fn unary(&mut self, op: UnOp, x: RealVal) -> JitResult<RealVal> {
        let x = match x {
            RealVal::Const(c) => return Ok(RealVal::Const(op.eval(c))),
            RealVal::Ssa(v) => v,
        };
        if let Some(&v) = self.numbered.get(&PureOp::Unary(op, x)) {
            return Ok(RealVal::Ssa(v));
        }
        let r = self.unary_new(op, x)?;
        self.numbered.insert(PureOp::Unary(op, x), r);
        Ok(RealVal::Ssa(r))
    }

    fn unary_new(&mut self, op: UnOp, x: Value) -> JitResult<Value> {
        Ok(match (op, runtime::unary(op)) {
            (UnOp::Neg, _) => self.b.ins().fneg(x),
            (UnOp::Abs, _) => self.b.ins().fabs(x),
            (UnOp::Sqrt, _) => self.b.ins().sqrt(x),
            (_, Lowering::Call(name, _)) => self.call(name, &[x])?,
            (_, Lowering::Inline) => return internal(format!("no lowering for `{}`", op.name())),
        })
    }

    fn binary(&mut self, op: BinOp, x: RealVal, y: RealVal) -> JitResult<RealVal> {
        if let (RealVal::Const(a), RealVal::Const(b)) = (x, y) {
            return Ok(RealVal::Const(op.eval(a, b)));
        }
        let key = PureOp::Binary(op, real_key(x), real_key(y));
        if let Some(&v) = self.numbered.get(&key) {
            return Ok(RealVal::Ssa(v));
        }
        let r = self.binary_new(op, x, y)?;
        self.numbered.insert(key, r);
        Ok(RealVal::Ssa(r))
    }

    fn binary_new(&mut self, op: BinOp, x: RealVal, y: RealVal) -> JitResult<Value> {
        let (x, y) = (self.real_value(x), self.real_value(y));
        let ins = self.b.ins();
        Ok(match (op, runtime::binary(op)) {
            (BinOp::Add, _) => ins.fadd(x, y),
            (BinOp::Sub, _) => ins.fsub(x, y),
            (BinOp::Mul, _) => ins.fmul(x, y),
            (BinOp::Div, _) => ins.fdiv(x, y),
            (BinOp::Max | BinOp::Min, _) => {
                // Cranelift's fmax/fmin match IEEE maximum/minimum except for the NaN they
                // return; the language's is always the canonical quiet NaN.
                let r = if op == BinOp::Max {
                    ins.fmax(x, y)
                } else {
                    self.b.ins().fmin(x, y)
                };
                let nan = self.b.ins().fcmp(FloatCC::Unordered, x, y);
                let canon = self.b.ins().f64const(f64::NAN);
                self.b.ins().select(nan, canon, r)
            }
            (_, Lowering::Call(name, _)) => self.call(name, &[x, y])?,
            (_, Lowering::Inline) => return internal(format!("no lowering for `{}`", op.name())),
        })
    }

    fn compare(&mut self, op: CmpOp, x: RealVal, y: RealVal) -> CondVal {
        if let (RealVal::Const(a), RealVal::Const(b)) = (x, y) {
            return CondVal::Const(op.eval(a, b));
        }
        let cc = match op {
            CmpOp::Lt => FloatCC::LessThan,
            CmpOp::Le => FloatCC::LessThanOrEqual,
            CmpOp::Gt => FloatCC::GreaterThan,
            CmpOp::Ge => FloatCC::GreaterThanOrEqual,
            CmpOp::Eq => FloatCC::Equal,
            CmpOp::Ne => FloatCC::NotEqual,
        };
        let (x, y) = (self.real_value(x), self.real_value(y));
        CondVal::Ssa(self.b.ins().fcmp(cc, x, y))
    }

    // ---- parameters, results and the prologue ---------------------------------------------

    /// The value of a parameter of shape `s` whose components are at `ptrs`.
    pub fn param_val(
        &mut self,
        s: &SShape,
        ptrs: &mut std::slice::Iter<'_, Value>,
    ) -> JitResult<Val> {
        let mut next = |t: &mut Self| {
            ptrs.next()
                .map(|&v| t.root(v))
                .ok_or_else(|| JitError::Internal("too few input components".into()))
        };
        self.boundary(s, &mut next, false).map(|p| p.expect_val())?
    }

    /// The place of a result of shape `s` whose components are at `ptrs`.
    pub fn result_place(
        &mut self,
        s: &SShape,
        ptrs: &mut std::slice::Iter<'_, Value>,
    ) -> JitResult<Place> {
        let mut next = |t: &mut Self| {
            ptrs.next()
                .map(|&v| t.root(v))
                .ok_or_else(|| JitError::Internal("too few output components".into()))
        };
        match self.boundary(s, &mut next, true)? {
            Boundary::Place(p) => Ok(p),
            Boundary::Val(_) => internal("a result has no place"),
        }
    }

    fn boundary(
        &mut self,
        s: &SShape,
        next: &mut dyn FnMut(&mut Self) -> JitResult<Value>,
        place: bool,
    ) -> JitResult<Boundary> {
        Ok(match s {
            SShape::Real => {
                let ptr = next(self)?;
                if place {
                    Boundary::Place(Place::Real(ptr))
                } else {
                    let x = self.b.ins().load(F64, self.flags, ptr, 0);
                    Boundary::Val(Val::Real(RealVal::Ssa(x)))
                }
            }
            SShape::Bool => return unsupported("a condition at the function boundary"),
            SShape::Tuple(items) => {
                let mut ps = Vec::new();
                let mut vs = Vec::new();
                for s in items.iter() {
                    match self.boundary(s, next, place)? {
                        Boundary::Place(p) => ps.push(p),
                        Boundary::Val(v) => vs.push(v),
                    }
                }
                if place {
                    Boundary::Place(Place::Tuple(ps.into()))
                } else {
                    Boundary::Val(Val::Tuple(vs.into()))
                }
            }
            SShape::Arr(sa) => {
                let layout = self.layout(&sa.elem, next, &mut Vec::new())?;
                let len = self.dim(sa.len);
                let arr = Rc::new(Arr {
                    len,
                    shape: sized(sa, Some(sa.len)),
                    kind: Kind::Mem {
                        layout,
                        holds: no_holds(),
                    },
                });
                if place {
                    Boundary::Place(Place::Arr(arr))
                } else {
                    Boundary::Val(Val::Arr(arr))
                }
            }
        })
    }

    /// Write the function's result.
    pub fn emit_result(&mut self, body: ExprId, out: &Place) -> JitResult<()> {
        self.emit_into(body, out)?;
        Ok(())
    }

    /// Emit the prologue into `entry` (which must be empty): load the sizes, compute every
    /// count and buffer address the body uses, make the body's placeholders aliases of
    /// them, and jump to the body's first block.
    pub fn finish_prologue(
        &mut self,
        entry: Block,
        sizes: Value,
        workspace: Value,
    ) -> JitResult<Plan> {
        if self.prologue_order.len() > MAX_BLOCK_PARAMS {
            return unsupported("a function with this many distinct array lengths");
        }
        // Every buffer handle is gone by now; the slot sizes are final.
        self.env.clear();
        let slot_sizes: Vec<SizeExpr> = self
            .slots
            .members
            .iter()
            .map(|m| SizeExpr::max_of(m.iter().cloned()))
            .collect();
        let total = SizeExpr::sum(slot_sizes.iter().cloned());
        self.switch_to(entry);
        let mut counts = SizeValues::new(sizes);
        // Slot `k` starts after the slots before it. Every address is below the total,
        // which a call checks, so the wrapping arithmetic here is exact.
        let mut slot_addr = Vec::with_capacity(slot_sizes.len());
        let mut addr = workspace;
        for s in &slot_sizes {
            slot_addr.push(addr);
            let n = counts.get(&mut self.b, s);
            let bytes = self.b.ins().ishl_imm_s(n, 3);
            addr = self.b.ins().iadd(addr, bytes);
        }
        let mut checks = vec![total.clone()];
        let mut args = Vec::with_capacity(self.prologue_order.len());
        let order = std::mem::take(&mut self.prologue_order);
        for (p, _) in &order {
            let v = match p {
                PrologueValue::Count(e) => {
                    checks.push(e.clone());
                    counts.get(&mut self.b, e)
                }
                PrologueValue::Addr(slot, off) => {
                    let Some(&base) = slot_addr.get(*slot) else {
                        return internal("a buffer in a slot that does not exist");
                    };
                    let k = counts.get(&mut self.b, off);
                    let bytes = self.b.ins().ishl_imm_s(k, 3);
                    self.b.ins().iadd(base, bytes)
                }
            };
            args.push(v);
        }
        let main = self.main;
        self.b.ins().jump(main, &[]);
        for ((_, placeholder), &v) in order.iter().zip(&args).rev() {
            self.b.func.dfg.remove_block_param(*placeholder);
            self.b.func.dfg.change_to_alias(*placeholder, v);
        }
        Ok(Plan {
            workspace: total,
            checks,
        })
    }
}

/// Element counts computed from the `sizes` argument in a function's first block, each
/// expression and each size loaded once.
pub(crate) struct SizeValues {
    sizes: Value,
    cache: HashMap<SizeExpr, Value>,
    loaded: HashMap<u32, Value>,
}

impl SizeValues {
    /// Counts from the sizes array at `sizes`.
    pub fn new(sizes: Value) -> SizeValues {
        SizeValues {
            sizes,
            cache: HashMap::default(),
            loaded: HashMap::default(),
        }
    }

    /// The value of `e`, emitted at the builder's position if not yet emitted.
    pub fn get(&mut self, b: &mut FunctionBuilder, e: &SizeExpr) -> Value {
        if let Some(&v) = self.cache.get(e) {
            return v;
        }
        let v = match e {
            SizeExpr::K(k) => b.ins().iconst(I64, *k as i64),
            SizeExpr::D(d) => match d.var {
                None => b.ins().iconst(I64, d.as_constant().unwrap_or(0) as i64),
                Some(i) => {
                    let n = match self.loaded.get(&i) {
                        Some(&n) => n,
                        None => {
                            let n = b.ins().load(
                                I64,
                                MemFlagsData::trusted().with_readonly().with_can_move(),
                                self.sizes,
                                (i as i32).wrapping_mul(8),
                            );
                            self.loaded.insert(i, n);
                            n
                        }
                    };
                    let t = if d.offset == 0 {
                        n
                    } else {
                        b.ins().iadd_imm_s(n, d.offset)
                    };
                    if d.offset >= 0 && d.floor == 0 {
                        t
                    } else {
                        let fl = b.ins().iconst(I64, d.floor as i64);
                        b.ins().smax(t, fl)
                    }
                }
            },
            SizeExpr::Sum(xs) => self.fold(b, xs, |b, a, v| b.ins().iadd(a, v)),
            SizeExpr::Mul(x, y) => {
                let (x, y) = (self.get(b, x), self.get(b, y));
                b.ins().imul(x, y)
            }
            SizeExpr::Max(xs) => self.fold(b, xs, |b, a, v| b.ins().smax(a, v)),
        };
        self.cache.insert(e.clone(), v);
        v
    }

    /// The counts `xs` combined left to right by `op` (0 for none).
    fn fold(
        &mut self,
        b: &mut FunctionBuilder,
        xs: &[SizeExpr],
        op: impl Fn(&mut FunctionBuilder, Value, Value) -> Value,
    ) -> Value {
        let mut acc: Option<Value> = None;
        for x in xs {
            let v = self.get(b, x);
            acc = Some(match acc {
                None => v,
                Some(a) => op(b, a, v),
            });
        }
        acc.unwrap_or_else(|| b.ins().iconst(I64, 0))
    }
}

/// A fold with a scalar accumulator, ready to run in a (fused) loop.
struct FoldPrep {
    pa: Var,
    px: Var,
    body: ExprId,
    /// The accumulator's shape.
    shape: SShape,
    zv: Val,
    src: Rc<Arr>,
}

/// A component of a tuple whose loop may be fused with its siblings'.
enum Prep {
    Fold(FoldPrep),
    /// An array written element by element: `count` elements of `a` into `d`.
    Array {
        a: Rc<Arr>,
        d: Rc<Arr>,
        count: IntVal,
        dim: Option<Dim>,
    },
    /// Not a loop: already written.
    Done(Val),
}

/// The slots of a loop's state (in [`Translator::flatten`]'s order) that are the same on
/// every iteration (`Some`): they are not carried, so the body sees the lengths and
/// strides themselves (often constants or the sizes' values) rather than block parameters.
struct Fixed(Vec<Option<IntVal>>);

impl Fixed {
    /// Nothing fixed: every one of `n` slots is carried.
    fn none(n: usize) -> Fixed {
        Fixed(vec![None; n])
    }

    /// The slots of `flat` (a whole state) that the loop carries.
    fn carried(&self, flat: &[Value]) -> JitResult<Vec<Value>> {
        if flat.len() != self.0.len() {
            return internal("a loop's state changed its number of slots");
        }
        Ok(flat
            .iter()
            .zip(&self.0)
            .filter(|(_, f)| f.is_none())
            .map(|(&v, _)| v)
            .collect())
    }

    /// The whole state from the carried slots.
    fn slots(&self, carried: &[Value]) -> JitResult<Vec<IntVal>> {
        let mut it = carried.iter();
        let out = self
            .0
            .iter()
            .map(|f| f.or_else(|| it.next().map(|&v| IntVal::Ssa(v))))
            .collect::<Option<Vec<IntVal>>>();
        match out {
            Some(out) if it.next().is_none() => Ok(out),
            _ => internal("a loop's carried state does not fit its slots"),
        }
    }
}

/// Whether the in-memory array `a` is already in `p` (it was computed there).
fn in_place(a: &Arr, p: &Arr) -> bool {
    match (&a.kind, &p.kind) {
        (Kind::Mem { layout: from, .. }, Kind::Mem { layout: to, .. }) => from == to,
        _ => false,
    }
}

/// Every slot carried.
fn ssa_ints(vals: &[Value]) -> Vec<IntVal> {
    vals.iter().map(|&v| IntVal::Ssa(v)).collect()
}

fn layout_slots(lay: &Layout, out: &mut Vec<Option<IntVal>>) {
    match lay {
        Layout::Real { strides, .. } => {
            out.push(None);
            out.extend(strides.iter().map(|&s| Some(s)));
        }
        Layout::Tuple(items) => items.iter().for_each(|l| layout_slots(l, out)),
        Layout::Array { len, elem } => {
            out.push(Some(*len));
            layout_slots(elem, out);
        }
    }
}

/// Where the reals of one leaf come from, for [`Translator::write_flat`].
#[derive(Clone, Copy)]
enum Leaf {
    Mem(Value),
    Const(f64),
}

/// Pair the leaves of two layouts that place the elements identically (equal strides and
/// inner lengths), as (source, destination base, reals per element).
fn same_layout(src: &Layout, dst: &Layout, out: &mut Vec<(Leaf, Value, IntVal)>) -> bool {
    match (src, dst) {
        (
            Layout::Real {
                base: a,
                strides: sa,
            },
            Layout::Real {
                base: b,
                strides: sb,
            },
        ) => match sa.first() {
            Some(&row) if sa == sb => {
                out.push((Leaf::Mem(*a), *b, row));
                true
            }
            _ => false,
        },
        (Layout::Tuple(xs), Layout::Tuple(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .zip(ys.iter())
                    .all(|(x, y)| same_layout(x, y, out))
        }
        (Layout::Array { len: l1, elem: e1 }, Layout::Array { len: l2, elem: e2 }) => {
            l1 == l2 && same_layout(e1, e2, out)
        }
        _ => false,
    }
}

/// Pair the leaves of a fill's element with a destination layout whose inner arrays have
/// the fill's lengths.
fn fill_layout(fill: &FillElem, dst: &Layout, out: &mut Vec<(Leaf, Value, IntVal)>) -> bool {
    match (fill, dst) {
        (FillElem::Real(c), Layout::Real { base, strides }) => match strides.first() {
            Some(&row) => {
                out.push((Leaf::Const(*c), *base, row));
                true
            }
            None => false,
        },
        (FillElem::Tuple(xs), Layout::Tuple(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .zip(ys.iter())
                    .all(|(x, y)| fill_layout(x, y, out))
        }
        (
            FillElem::Array {
                len: l1, elem: e1, ..
            },
            Layout::Array { len: l2, elem: e2 },
        ) => l1 == l2 && fill_layout(e1, e2, out),
        _ => false,
    }
}

/// A parameter's value or a result's place.
enum Boundary {
    Val(Val),
    Place(Place),
}

impl Boundary {
    fn expect_val(self) -> JitResult<Val> {
        match self {
            Boundary::Val(v) => Ok(v),
            Boundary::Place(_) => internal("a parameter has no value"),
        }
    }
}

/// The component path `π_path` of `src = map (t. π_path t) x` (projections of the
/// function's parameter, outermost first), if `src` has that form.
fn column_of(arena: &Arena, src: ExprId, x: Var) -> Option<Vec<usize>> {
    let Node::Map(f, s0) = arena[src] else {
        return None;
    };
    if arena[s0] != Node::Var(x) {
        return None;
    }
    let (ps, mut body) = arena.lambda_parts(f)?;
    let [t] = ps else {
        return None;
    };
    let mut path = Vec::new();
    while let Node::Proj(i, inner) = arena[body] {
        path.push(i as usize);
        body = inner;
    }
    path.reverse();
    (arena[body] == Node::Var(*t)).then_some(path)
}

/// Whether `e` reads `x` only as `map (t. π_q t) x` with `q` apart from `path` (neither
/// a prefix of the other).
fn reads_other_columns(arena: &Arena, e: ExprId, x: Var, path: &[usize]) -> bool {
    // One visit per node of the DAG (optimized terms share subterms).
    let mut seen = unfad_syntax::fast_hash::FastSet::default();
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        if !seen.insert(e) {
            continue;
        }
        if let Some(q) = column_of(arena, e, x) {
            if q.starts_with(path) || path.starts_with(&q) {
                return false;
            }
            continue;
        }
        if arena[e] == Node::Var(x) {
            return false;
        }
        arena.for_each_child(e, |c| stack.push(c));
    }
    true
}

/// The leaves of an element of shape `s` in component order, each with its dimensions
/// (the outer array's length first) and whether it lies under the component `path` (none
/// does under an empty path).
fn leaves_under(
    s: &SShape,
    dims: &mut Vec<Dim>,
    at: &mut Vec<usize>,
    path: &[usize],
    out: &mut Vec<(Vec<Dim>, bool)>,
) {
    match s {
        SShape::Real => out.push((dims.clone(), !path.is_empty() && at.starts_with(path))),
        SShape::Bool => {}
        SShape::Tuple(items) => {
            for (i, s) in items.iter().enumerate() {
                at.push(i);
                leaves_under(s, dims, at, path, out);
                at.pop();
            }
        }
        SShape::Arr(a) => {
            dims.push(a.len);
            leaves_under(&a.elem, dims, at, path, out);
            dims.pop();
        }
    }
}

/// `lay` with the leaves under the component `path` at the same place for every element
/// (their stride for the array's index is 0).
fn shared_rows(lay: &Layout, path: &[usize]) -> JitResult<Layout> {
    Ok(match (lay, path.split_first()) {
        (Layout::Tuple(items), Some((&i, rest))) => {
            let mut items = items.to_vec();
            let Some(item) = items.get(i) else {
                return internal("a component path outside its tuple");
            };
            items[i] = shared_rows(item, rest)?;
            Layout::Tuple(items.into())
        }
        (_, Some(_)) => return internal("a component path through a non-tuple"),
        (_, None) => zero_outer_stride(lay),
    })
}

/// `lay` with every leaf's stride for the array's index 0.
fn zero_outer_stride(lay: &Layout) -> Layout {
    match lay {
        Layout::Real { base, strides } => {
            let mut strides = strides.to_vec();
            if let Some(s) = strides.first_mut() {
                *s = IntVal::Const(0);
            }
            Layout::Real {
                base: *base,
                strides: strides.into(),
            }
        }
        Layout::Tuple(items) => Layout::Tuple(items.iter().map(zero_outer_stride).collect()),
        Layout::Array { len, elem } => Layout::Array {
            len: *len,
            elem: Rc::new(zero_outer_stride(elem)),
        },
    }
}

/// The component at `path` of the tuple value `v`.
fn project(v: &Val, path: &[usize]) -> JitResult<Val> {
    let mut v = v.clone();
    for &i in path {
        v = match &v {
            Val::Tuple(items) => match items.get(i) {
                Some(item) => item.clone(),
                None => return internal("a projection outside its tuple"),
            },
            _ => return internal("a projection of a non-tuple"),
        };
    }
    Ok(v)
}
