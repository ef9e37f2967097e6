//! Calls of the vector routines (`crate::routines`): an in-place row update that the
//! code Cranelift emits would run two reals per instruction runs on the host's widest
//! vectors instead.
//!
//! The update is the addition of an array into an accumulator in memory
//! ([`Translator::add_into`]), when both are rows of reals in consecutive memory and the
//! array added is either in memory too (`add`) or an unevaluated `map (x. c * x) src` of a
//! row in memory by a real `c` bound outside the map (`axpy`): the adjoint of a matrix
//! product adds one such scaled row per element, and the rows of `W` and `X` in a linear
//! layer's gradient are the usual case. The routine computes each element as the loop
//! would (`p[e] + c * src[e]`, in that order, unfused), so the results are the same bit
//! for bit, and the interpreter needs no twin.
//!
//! Routines run where kernels batch (the host has vectors wider than two lanes, or a test
//! forces batches: [`Translator::batch_kernels`]), outside a batched loop's passes, and on
//! rows of at least [`MIN_ROUTINE`] reals: where the length is known at run time only,
//! both the call and the loop it replaces are emitted, and the length chooses
//! ([`Translator::routine_by_count`]).

use std::rc::Rc;

use cranelift_codegen::ir::types::{F64, I64};
use cranelift_codegen::ir::{AbiParam, FuncRef, InstBuilder, Signature, Value};
use cranelift_codegen::isa::CallConv;
use cranelift_module::{Linkage, Module};
use unfad_syntax::{Arena, BinOp, ExprId, Node, Var};

use crate::batch::Width;
use crate::error::{internal, JitResult};
use crate::routines::Routine;
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
    /// The scale of `axpy`, bound outside the map.
    scale: Option<Var>,
}

impl<'a> Translator<'a> {
    /// The routine that adds the elements of `a` into `p`, if they are rows that it
    /// updates and routines run here (see the module's documentation); `count` is the
    /// number of elements added. Emits nothing and records no read.
    pub(super) fn routine_update(&self, a: &Arr, p: &Arr, count: IntVal) -> Option<Update> {
        let batching = self.batching.filter(|_| crate::vector_routines())?;
        if self.batch.is_some() || matches!(count, IntVal::Const(n) if n < MIN_ROUTINE) {
            return None;
        }
        let dst = row(p)?;
        let (src, scale) = match &a.kind {
            Kind::Mem { .. } => (row(a)?, None),
            Kind::Map { f, src, .. } => {
                let c = scale_of(self.arena, *f)?;
                let real = matches!(self.env.get(&c).map(|e| e.value()), Some(Val::Real(_)));
                (row(src).filter(|_| real)?, Some(c))
            }
            _ => return None,
        };
        Some(Update {
            width: batching.width,
            dst,
            src,
            scale,
        })
    }

    /// The call of `u`'s routine on `count` elements of `a` (a map's read recorded).
    pub(super) fn call_routine(&mut self, u: &Update, a: &Arr, count: IntVal) -> JitResult<()> {
        if let Kind::Map { read, .. } = &a.kind {
            if read.second() {
                return self.read_twice("an unevaluated map");
            }
        }
        let scale = match u.scale {
            Some(c) => match self.use_var(c)? {
                Val::Real(c) => Some(self.real_value(c)),
                _ => return internal("a routine's scale is not a real"),
            },
            None => None,
        };
        let n = self.int_value(count);
        let routine = if u.scale.is_some() {
            Routine::Axpy
        } else {
            Routine::Add
        };
        let f = self.routine_function(routine, u.width)?;
        let mut args = vec![u.dst, u.src];
        args.extend(scale);
        args.push(n);
        self.b.ins().call(f, &args);
        // The routine wrote the accumulator: what was loaded from it is stale.
        self.loads.clear();
        Ok(())
    }

    /// `u` where its count, known at run time only, is at least [`MIN_ROUTINE`], and
    /// `inline` (the loop the routine replaces) elsewhere, as
    /// [`Translator::split_by_count`] emits them.
    pub(super) fn routine_by_count(
        &mut self,
        u: &Update,
        a: &Rc<Arr>,
        count: IntVal,
        inline: &mut dyn FnMut(&mut Self) -> JitResult<()>,
    ) -> JitResult<()> {
        let replay = self.replay_point(&[a]);
        self.split_by_count(count, MIN_ROUTINE, &replay, &mut |t, long| {
            if long {
                t.call_routine(u, a, count)?;
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

/// The variable `c` if `f` is `(x. c * x)` or `(x. x * c)` with `c` another variable.
fn scale_of(arena: &Arena, f: ExprId) -> Option<Var> {
    let (ps, body) = arena.lambda_parts(f)?;
    let [x] = ps else {
        return None;
    };
    let Node::Op2(BinOp::Mul, l, r) = arena[body] else {
        return None;
    };
    match (arena[l], arena[r]) {
        (Node::Var(c), Node::Var(y)) | (Node::Var(y), Node::Var(c)) if y == *x && c != *x => {
            Some(c)
        }
        _ => None,
    }
}

/// The routine's parameters: `(dst, src, [s,] n)`.
fn signature(routine: Routine, cc: CallConv) -> Signature {
    let mut sig = Signature::new(cc);
    sig.params.push(AbiParam::new(I64));
    sig.params.push(AbiParam::new(I64));
    if routine == Routine::Axpy {
        sig.params.push(AbiParam::new(F64));
    }
    sig.params.push(AbiParam::new(I64));
    sig
}
