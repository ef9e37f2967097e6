//! Calls of the vector routines (`crate::routines`): an in-place row update that the
//! code Cranelift emits would run two reals per instruction runs on the host's widest
//! vectors instead.
//!
//! The update is the addition of an array into an accumulator in memory
//! ([`Translator::add_into`]), when both are rows of reals in consecutive memory and the
//! array added is either in memory too (`add`) or an unevaluated `map (x. c * x) src` of a
//! row in memory by a real `c` bound outside the map (`axpy`), or `map (x. c * (x * r))
//! src` with `r` bound outside too (`axpy2`: the chain rule's two factors, as reverse mode
//! writes a unit's `z * (a * g)` in a perceptron's gradient): the adjoint of a matrix
//! product adds one such scaled row per element, and the rows of `W` and `X` in a linear
//! layer's gradient are the usual case. The routine computes each element as the loop
//! would (`p[e] + c * src[e]`, `p[e] + c * (src[e] * r)`, in that order, unfused), so the
//! results are the same bit for bit, and the interpreter needs no twin. A row written
//! rather than added to is `scale` (`scale2`). A sum of rows that updates its accumulator
//! in place, `map2 + acc row` written over `acc` (the step of `reduce (s, t. map2 + s t)
//! z X` where the code generator keeps one accumulator), adds its row the same way
//! (`fusion.rs`, `map_into`).
//!
//! A map of dot products, `map (row. reduce + z (map2 * row x)) W` written to a row of
//! reals, with `W` a matrix of reals in memory (rows at a fixed stride) and `x` a row of
//! reals bound outside the map, is one call of `dots` ([`Translator::routine_dots`]): a
//! linear layer's outputs, a matrix-vector product. The routine sums in the blocked order
//! of the native loop and the interpreter, on one vector register per row and four rows at
//! once, where the native loop's single row waits on the latency of its additions.
//!
//! Routines run where kernels batch (the host has vectors wider than two lanes, or a test
//! forces batches: [`Translator::batch_kernels`]), outside a batched loop's passes, and on
//! rows of at least [`MIN_ROUTINE`] reals: where the length is known at run time only,
//! both the call and the loop it replaces are emitted, and the length chooses
//! ([`Translator::rows_by_routine`]).

use std::rc::Rc;

use cranelift_codegen::ir::types::{F64, I64};
use cranelift_codegen::ir::{AbiParam, FuncRef, InstBuilder, Signature, Value};
use cranelift_codegen::isa::CallConv;
use cranelift_module::{Linkage, Module};
use unfad_syntax::reduction::dot_with_row;
use unfad_syntax::{Arena, BinOp, ExprId, Node, Var};

use crate::batch::Width;
use crate::error::{internal, JitResult};
use crate::routines::Routine;
use crate::shape::{lambda, SShape};
use crate::value::{Arr, IntVal, Kind, Layout, Val};

use super::kernels::codegen_error;
use super::Translator;

/// The shortest known length of a row updated by a routine: below it, the call costs
/// more than the two-lane loop it replaces.
pub(super) const MIN_ROUTINE: i64 = 12;

/// A row update that a routine makes (see [`Translator::routine_update`]).
pub(super) struct Update {
    width: Width,
    dst: Value,
    src: Value,
    /// The scale of `axpy` or `scale`, bound outside the map.
    scale: Option<Var>,
    /// The inner factor of `axpy2` or `scale2` (`s * (x * r)`, `r` bound outside too).
    inner: Option<Var>,
    /// Whether the row is written (`scale`) rather than added to.
    write: bool,
}

/// The shortest known row length of a map of dot products computed by `dots`: shorter
/// rows are no block of the reduction, so the native loop folds them as the routine would.
const MIN_DOTS: i64 = unfad_syntax::reduction::ACCUMULATORS as i64;

/// A map of dot products that `dots` computes (see [`Translator::routine_dots`]).
pub(super) struct Dots {
    width: Width,
    /// The matrix's first row and the distance between rows, in reals.
    w: Value,
    stride: IntVal,
    /// The vector, and the length of each dot product (the shorter of a row and it).
    x: Value,
    m: IntVal,
    /// The reduction's initial value.
    z: Zero,
}

/// The initial value of the dot products' reduction: a constant, or a real variable.
enum Zero {
    Const(f64),
    Var(Var),
}

impl<'a> Translator<'a> {
    /// The call of `dots` that computes `map f srcs` into `d`, if `f` is `(row. reduce + z
    /// (map2 * row x))` (products and sum in either order) with `z` a constant or a real
    /// variable and `x` a row of reals in memory, both bound outside, the source a matrix
    /// of reals in memory with rows of consecutive reals, `d` a row of reals in memory, and
    /// routines run here (see the module's documentation). Emits at most the length of the
    /// products (a minimum of two lengths known at run time only) and records no use.
    pub(super) fn routine_dots(
        &mut self,
        f: ExprId,
        srcs: &[Rc<Arr>],
        d: &Arr,
    ) -> JitResult<Option<Dots>> {
        let Some(batching) = self.batching.filter(|_| crate::vector_routines()) else {
            return Ok(None);
        };
        let ([src], Some(_)) = (srcs, row(d)) else {
            return Ok(None);
        };
        if self.batch.is_some() || matches!(src.len, IntVal::Const(n) if n < 2) {
            return Ok(None);
        }
        let arena = self.arena;
        let (ps, body) = lambda(arena, f, 1, "map")?;
        let Some((x, z)) = dot_with_row(arena, ps[0], body) else {
            return Ok(None);
        };
        let z = match arena[z] {
            Node::Const(c) => Zero::Const(c),
            Node::Var(v) if v != ps[0] => match self.env.get(&v).map(|e| e.value()) {
                Some(Val::Real(_)) => Zero::Var(v),
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        let Some(Val::Arr(xa)) = self.env.get(&x).map(|e| e.value().clone()) else {
            return Ok(None);
        };
        let Some(xb) = row(&xa) else {
            return Ok(None);
        };
        let (Kind::Mem { layout, .. }, SShape::Arr(rows)) = (&src.kind, &src.shape.elem) else {
            return Ok(None);
        };
        let Layout::Array { len, elem } = layout else {
            return Ok(None);
        };
        let (Layout::Real { base, strides }, SShape::Real) = (&**elem, &rows.elem) else {
            return Ok(None);
        };
        let [stride, IntVal::Const(1)] = strides[..] else {
            return Ok(None);
        };
        let row_len = (*len, rows.exact.then_some(rows.len));
        if matches!((row_len.0, xa.len), (IntVal::Const(a), IntVal::Const(b)) if a.min(b) < MIN_DOTS)
        {
            return Ok(None);
        }
        let (m, _) = self.min_len(&[row_len, (xa.len, xa.stat())]);
        Ok(Some(Dots {
            width: batching.width,
            w: *base,
            stride,
            x: xb,
            m,
            z,
        }))
    }

    /// The call of `dots` writing `count` dot products to `d` (the uses of the map's
    /// function `f` accounted for).
    pub(super) fn call_dots(
        &mut self,
        u: &Dots,
        f: ExprId,
        d: &Arr,
        count: IntVal,
    ) -> JitResult<()> {
        let Some(out) = row(d) else {
            return internal("a map of dot products lost its destination");
        };
        let z = match u.z {
            Zero::Const(c) => self.b.ins().f64const(c),
            Zero::Var(v) => match self.env.get(&v).map(|e| e.value().clone()) {
                Some(Val::Real(r)) => self.real_value(r),
                _ => return internal("a dot product's initial value is not a real"),
            },
        };
        let stride = self.int_value(u.stride);
        let m = self.int_value(u.m);
        let n = self.int_value(count);
        let fr = self.routine_function(Routine::Dots, u.width)?;
        self.b.ins().call(fr, &[out, u.w, stride, u.x, m, n, z]);
        self.loads.clear();
        // The function's code is not emitted: its uses of `x` and `z` are spent here.
        let (_, body) = lambda(self.arena, f, 1, "map")?;
        self.skip(body);
        Ok(())
    }

    /// The routine that adds the elements of `a` into `p`, if they are rows that it
    /// updates and routines run here (see the module's documentation); `count` is the
    /// number of elements added. Emits nothing and records no read.
    pub(super) fn routine_update(&self, a: &Arr, p: &Arr, count: IntVal) -> Option<Update> {
        self.routine_row(a, p, count, false)
    }

    /// The routine that writes the elements of `a` to `p` (`scale`), if `a` is an
    /// unevaluated `map (x. c * x)` of a row in memory and `p` a row, and routines run here.
    pub(super) fn routine_write(&self, a: &Arr, p: &Arr, count: IntVal) -> Option<Update> {
        self.routine_row(a, p, count, true)
            .filter(|u| u.scale.is_some())
    }

    /// [`Translator::routine_update`] or, if `write`, [`Translator::routine_write`].
    fn routine_row(&self, a: &Arr, p: &Arr, count: IntVal, write: bool) -> Option<Update> {
        let batching = self.batching.filter(|_| crate::vector_routines())?;
        if self.batch.is_some() || matches!(count, IntVal::Const(n) if n < MIN_ROUTINE) {
            return None;
        }
        let dst = row(p)?;
        let real = |c: Var| matches!(self.env.get(&c).map(|e| e.value()), Some(Val::Real(_)));
        let (src, scale, inner) = match &a.kind {
            Kind::Mem { .. } => (row(a)?, None, None),
            Kind::Map { f, src, .. } => {
                let (c, r) = factors_of(self.arena, *f)?;
                let real = real(c) && r.is_none_or(real);
                (row(src).filter(|_| real)?, Some(c), r)
            }
            _ => return None,
        };
        Some(Update {
            width: batching.width,
            dst,
            src,
            scale,
            inner,
            write,
        })
    }

    /// The call of `u`'s routine on `count` elements of `a` (a map's read recorded).
    pub(super) fn call_routine(&mut self, u: &Update, a: &Arr, count: IntVal) -> JitResult<()> {
        if let Kind::Map { read, .. } = &a.kind {
            if read.second() {
                return self.read_twice("an unevaluated map");
            }
        }
        let mut args = vec![u.dst, u.src];
        for c in [u.scale, u.inner].into_iter().flatten() {
            match self.use_var(c)? {
                Val::Real(c) => args.push(self.real_value(c)),
                _ => return internal("a routine's scale is not a real"),
            }
        }
        let n = self.int_value(count);
        let routine = match (u.write, u.scale.is_some(), u.inner.is_some()) {
            (true, _, false) => Routine::Scale,
            (true, _, true) => Routine::Scale2,
            (false, true, false) => Routine::Axpy,
            (false, _, true) => Routine::Axpy2,
            (false, false, false) => Routine::Add,
        };
        args.push(n);
        let f = self.routine_function(routine, u.width)?;
        self.b.ins().call(f, &args);
        // The routine wrote the accumulator: what was loaded from it is stale.
        self.loads.clear();
        Ok(())
    }

    /// The routines that make a fused loop's writes and additions of rows (`arrays` written,
    /// `adds` added by index), if each is one ([`Translator::routine_write`],
    /// [`Translator::routine_update`]) and there are no sums.
    pub(super) fn routine_rows(
        &self,
        count: IntVal,
        arrays: &[(&Rc<Arr>, &Rc<Arr>)],
        adds: &super::fusion::Additions,
    ) -> Option<Vec<(Update, Rc<Arr>)>> {
        if !adds.sums.is_empty() {
            return None;
        }
        let writes = arrays
            .iter()
            .map(|(a, d)| self.routine_write(a, d, count).map(|u| (u, Rc::clone(a))));
        let updates = adds
            .by_index
            .iter()
            .map(|(a, d)| self.routine_update(a, d, count).map(|u| (u, Rc::clone(a))));
        let calls: Vec<(Update, Rc<Arr>)> = writes.chain(updates).collect::<Option<_>>()?;
        // One loop per row instead of one for all changes nothing where no row written is
        // one read (the lowering writes fresh rows and accumulators; a row computed in place
        // would be one).
        let written = |v: Value| calls.iter().any(|(u, _)| u.dst == v);
        if calls.iter().any(|(u, _)| written(u.src)) {
            return None;
        }
        Some(calls)
    }

    /// The calls of `calls` (each routine with the array it reads), where `count` (known
    /// at run time only) is at least [`MIN_ROUTINE`], and `inline` (the loop they replace)
    /// elsewhere, as [`Translator::split_by_count`] emits them; the calls alone for a known
    /// count.
    pub(super) fn rows_by_routine(
        &mut self,
        calls: &[(Update, Rc<Arr>)],
        count: IntVal,
        reads: &[&Rc<Arr>],
        inline: &mut dyn FnMut(&mut Self) -> JitResult<()>,
    ) -> JitResult<()> {
        if let IntVal::Const(_) = count {
            for (u, a) in calls {
                self.call_routine(u, a, count)?;
            }
            return Ok(());
        }
        let replay = self.replay_point(reads);
        self.split_by_count(count, MIN_ROUTINE, &replay, &mut |t, long| {
            if long {
                for (u, a) in calls {
                    t.call_routine(u, a, count)?;
                }
            } else {
                inline(t)?;
            }
            Ok(Vec::new())
        })?;
        Ok(())
    }

    /// The routine's instance for `width`, declared in the function. The call is a direct
    /// one in the host's convention: a trampoline preserving every register (as the
    /// batches' are) costs as much as the routine saves on rows of tens of reals, while the
    /// registers the call clobbers cost a few spills in the loop around it.
    fn routine_function(&mut self, routine: Routine, width: Width) -> JitResult<FuncRef> {
        let name = routine.symbol(width);
        if let Some(f) = self.externs.get(name) {
            return Ok(*f);
        }
        let host = signature(routine, self.module.isa().default_call_conv());
        let id = self
            .module
            .declare_function(name, Linkage::Import, &host)
            .map_err(codegen_error)?;
        let f = self.module.declare_func_in_func(id, self.b.func);
        self.externs.insert(name, f);
        Ok(f)
    }
}

/// The base address of `a` if it is a row of reals in consecutive memory.
fn row(a: &Arr) -> Option<Value> {
    match &a.kind {
        Kind::Mem {
            layout: Layout::Real { base, strides },
            ..
        } if matches!(&strides[..], [IntVal::Const(1)]) && !a.shape.elem.has_arrays() => {
            Some(*base)
        }
        _ => None,
    }
}

/// `(c, None)` if `f` is `(x. c * x)` (or `x * c`), `(c, Some(r))` if it is `(x. c * (x *
/// r))` (the products' operands in either order, the inner product possibly bound by a
/// `let`), with `c` and `r` variables other than `x`.
fn factors_of(arena: &Arena, f: ExprId) -> Option<(Var, Option<Var>)> {
    let (ps, body) = arena.lambda_parts(f)?;
    let [x] = ps else {
        return None;
    };
    // `a * b` as (the variable `c`, the other operand), for `c` other than `x`.
    let product = |e: ExprId| -> Option<(Var, ExprId)> {
        let Node::Op2(BinOp::Mul, l, r) = arena[e] else {
            return None;
        };
        match (arena[l], arena[r]) {
            (Node::Var(c), _) if c != *x => Some((c, r)),
            (_, Node::Var(c)) if c != *x => Some((c, l)),
            _ => None,
        }
    };
    let is = |e: ExprId, v: Var| arena[e] == Node::Var(v);
    // `let s = x * r in c * s`.
    if let Node::Let(s, e1, e2) = arena[body] {
        let (r, y) = product(e1)?;
        let (c, t) = product(e2)?;
        return (is(y, *x) && is(t, s) && r != s && c != s).then_some((c, Some(r)));
    }
    let (c, other) = product(body)?;
    if is(other, *x) {
        return Some((c, None));
    }
    let (r, y) = product(other)?;
    is(y, *x).then_some((c, Some(r)))
}

/// The routine's parameters: `(dst, src, [s, [r,]] n)`, or those of `dots`.
fn signature(routine: Routine, cc: CallConv) -> Signature {
    let mut sig = Signature::new(cc);
    sig.params.push(AbiParam::new(I64));
    sig.params.push(AbiParam::new(I64));
    if routine == Routine::Dots {
        // `(out, w, stride, x, m, n, z)`.
        for _ in 0..4 {
            sig.params.push(AbiParam::new(I64));
        }
        sig.params.push(AbiParam::new(F64));
        return sig;
    }
    if matches!(routine, Routine::Axpy | Routine::Scale) {
        sig.params.push(AbiParam::new(F64));
    }
    if matches!(routine, Routine::Axpy2 | Routine::Scale2) {
        sig.params.push(AbiParam::new(F64));
        sig.params.push(AbiParam::new(F64));
    }
    sig.params.push(AbiParam::new(I64));
    sig
}
