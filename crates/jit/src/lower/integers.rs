//! Integers (lengths, indices, strides) known at compile time or computed at run time
//! ([`IntVal`]): their arithmetic, folded when the operands are known, and their meeting
//! with the language's ints (carried as reals holding whole numbers).

use cranelift_codegen::ir::types::{F64, I64};
use cranelift_codegen::ir::{InstBuilder, Value};

use crate::layout::Dim;
use crate::value::{IntVal, RealVal};

use super::Translator;

impl<'a> Translator<'a> {
    pub(super) fn int_value(&mut self, x: IntVal) -> Value {
        match x {
            IntVal::Const(k) => self.b.ins().iconst(I64, k),
            IntVal::Ssa(v) => v,
        }
    }

    /// The int `k` (a length or an index, below 2^53) as the real that carries it.
    pub(super) fn int_as_real(&mut self, k: IntVal) -> RealVal {
        match k {
            IntVal::Const(k) => RealVal::Const(k as f64),
            IntVal::Ssa(v) => RealVal::Ssa(self.b.ins().fcvt_from_sint(F64, v)),
        }
    }

    /// `max(0, x)` for an int `x` carried as a real (a length such as `iota x`'s): its
    /// integer part, a NaN read as 0 and a huge value saturated.
    pub(super) fn length_of_real(&mut self, x: RealVal) -> IntVal {
        match x {
            RealVal::Const(c) => IntVal::Const(if c > 0.0 { c as i64 } else { 0 }),
            RealVal::Ssa(v) => {
                let k = self.b.ins().fcvt_to_sint_sat(I64, v);
                let zero = self.b.ins().iconst(I64, 0);
                IntVal::Ssa(self.b.ins().smax(k, zero))
            }
        }
    }

    pub(super) fn umin(&mut self, a: IntVal, b: IntVal) -> IntVal {
        match (a, b) {
            _ if a == b => a,
            (IntVal::Const(x), IntVal::Const(y)) => IntVal::Const(x.min(y)),
            _ => {
                let (x, y) = (self.int_value(a), self.int_value(b));
                IntVal::Ssa(self.b.ins().umin(x, y))
            }
        }
    }

    pub(super) fn iadd(&mut self, a: IntVal, k: i64) -> IntVal {
        match a {
            IntVal::Const(x) => IntVal::Const(x.wrapping_add(k)),
            IntVal::Ssa(v) if k == 0 => IntVal::Ssa(v),
            IntVal::Ssa(v) => IntVal::Ssa(self.b.ins().iadd_imm_s(v, k)),
        }
    }

    pub(super) fn isub(&mut self, a: IntVal, b: IntVal) -> IntVal {
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
    pub(super) fn dec(&mut self, a: IntVal) -> IntVal {
        match a {
            IntVal::Const(x) => IntVal::Const((x - 1).max(0)),
            IntVal::Ssa(v) => {
                let t = self.b.ins().iadd_imm_s(v, -1);
                let zero = self.b.ins().iconst(I64, 0);
                IntVal::Ssa(self.b.ins().smax(t, zero))
            }
        }
    }

    pub(super) fn imul(&mut self, a: IntVal, b: IntVal) -> IntVal {
        match (a, b) {
            (IntVal::Const(x), IntVal::Const(y)) => IntVal::Const(x.wrapping_mul(y)),
            (IntVal::Const(1), y) | (y, IntVal::Const(1)) => y,
            _ => {
                let (x, y) = (self.int_value(a), self.int_value(b));
                IntVal::Ssa(self.b.ins().imul(x, y))
            }
        }
    }

    pub(super) fn iadd_value(&mut self, a: IntVal, j: Value) -> IntVal {
        match a {
            IntVal::Const(0) => IntVal::Ssa(j),
            IntVal::Const(k) => IntVal::Ssa(self.b.ins().iadd_imm_s(j, k)),
            IntVal::Ssa(v) => IntVal::Ssa(self.b.ins().iadd(v, j)),
        }
    }

    /// `Some(d)` if the length `len` is, by construction, the prologue's value of `d`.
    pub(super) fn stat_of(&mut self, len: IntVal, d: Dim) -> Option<Dim> {
        (len == self.dim(d)).then_some(d)
    }

    /// The shortest of the lengths `items` (each with its `Dim` if it is exactly that): from
    /// the prologue when all are known functions of the sizes, else computed here.
    pub(super) fn min_len(&mut self, items: &[(IntVal, Option<Dim>)]) -> (IntVal, Option<Dim>) {
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
}
