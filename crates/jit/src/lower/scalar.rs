//! Scalar operations: the operators on reals (Cranelift instructions, inline math kernels
//! from `kernels.rs`, or calls of the run-time functions, numbered in the current block),
//! the operators on ints (carried as reals holding whole numbers: `+ - * max min` are the
//! reals' instructions, `div` and `%` are computed from the quotient, a zero divisor stops
//! the call), comparisons, and the SSA value of a known or computed real or condition.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F64, I64, I8};
use cranelift_codegen::ir::{AbiParam, FuncRef, InstBuilder, Signature, Value};
use cranelift_module::{Linkage, Module};
use unfad_syntax::{BinOp, CmpOp, Partial, Partial2, UnOp};

use crate::error::{internal, JitError, JitResult, Stop};
use crate::runtime::{self, Lowering};
use crate::value::{CondVal, RealVal};

use super::access::{real_key, PureOp};
use super::{IntRange, Translator};

impl<'a> Translator<'a> {
    pub(super) fn real_value(&mut self, x: RealVal) -> Value {
        match x {
            RealVal::Const(c) => self.b.ins().f64const(c),
            RealVal::Ssa(v) => v,
        }
    }

    pub(super) fn cond_value(&mut self, x: CondVal) -> Value {
        match x {
            CondVal::Const(c) => self.b.ins().iconst(I8, c as i64),
            CondVal::Ssa(v) => v,
        }
    }

    pub(super) fn extern_fn(&mut self, name: &'static str, arity: usize) -> JitResult<FuncRef> {
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

    pub(super) fn call(&mut self, name: &'static str, args: &[Value]) -> JitResult<Value> {
        let f = self.extern_fn(name, args.len())?;
        let inst = self.b.ins().call(f, args);
        match self.b.inst_results(inst) {
            [r] => Ok(*r),
            _ => internal("a run-time function returned no value"),
        }
    }

    pub(super) fn unary(&mut self, op: UnOp, x: RealVal) -> JitResult<RealVal> {
        if op == UnOp::ToReal {
            // An int is already the real that carries it.
            return Ok(x);
        }
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
        if let UnOp::Partial(p) = op {
            return self.partial(p, x);
        }
        Ok(match (op, runtime::unary(op)) {
            (UnOp::Neg, _) => self.b.ins().fneg(x),
            (UnOp::Abs, _) => self.b.ins().fabs(x),
            (UnOp::Sqrt, _) => self.b.ins().sqrt(x),
            (_, Lowering::Kernel(k)) => self.kernel(k, x)?,
            (_, Lowering::Call(name, _)) => self.call(name, &[x])?,
            (_, Lowering::Inline) => return internal(format!("no lowering for `{}`", op.name())),
        })
    }

    /// A derivative primitive: the operations of [`Partial::eval`], in its order, through
    /// [`Translator::unary`] and [`Translator::binary`] (so that a `sin` or `1 - x*x`
    /// computed already is read, not computed again).
    fn partial(&mut self, p: Partial, x: Value) -> JitResult<Value> {
        use RealVal::Const;
        let x = RealVal::Ssa(x);
        let one = Const(1.0);
        let square = |t: &mut Self| t.binary(BinOp::Mul, x, x);
        let r = match p {
            Partial::NegSin => {
                let s = self.unary(UnOp::Sin, x)?;
                self.unary(UnOp::Neg, s)?
            }
            Partial::OnePlusSquare => {
                let xx = square(self)?;
                self.binary(BinOp::Add, one, xx)?
            }
            Partial::OneMinusSquare => {
                let xx = square(self)?;
                self.binary(BinOp::Sub, one, xx)?
            }
            Partial::Logistic => {
                let rest = self.binary(BinOp::Sub, one, x)?;
                self.binary(BinOp::Mul, x, rest)?
            }
            // `0.5 * (1 / x)`: the reciprocal is the one a quotient by the same `x` needs
            // (`1 / sqrt(d)`, or the partials of `a / sqrt(d)`), and Cranelift computes it
            // once for both.
            Partial::HalfReciprocal => {
                let r = self.binary(BinOp::Div, one, x)?;
                self.binary(BinOp::Mul, Const(0.5), r)?
            }
            Partial::ReciprocalOnePlus => {
                let d = self.binary(BinOp::Add, one, x)?;
                self.binary(BinOp::Div, one, d)?
            }
            Partial::ReciprocalOnePlusSquare => {
                let xx = square(self)?;
                let d = self.binary(BinOp::Add, one, xx)?;
                self.binary(BinOp::Div, one, d)?
            }
            Partial::ReciprocalSqrtOneMinusSquare | Partial::NegReciprocalSqrtOneMinusSquare => {
                let xx = square(self)?;
                let d = self.binary(BinOp::Sub, one, xx)?;
                let root = self.unary(UnOp::Sqrt, d)?;
                let sign = if p == Partial::ReciprocalSqrtOneMinusSquare {
                    1.0
                } else {
                    -1.0
                };
                self.binary(BinOp::Div, Const(sign), root)?
            }
            Partial::Sign => {
                // Two comparisons and two blends (selects of the reals' bits), a form the
                // lanes pass pairs: 1 above 0, -1 below, and +0 at either zero and at NaN,
                // as `Partial::eval`.
                let x = self.real_value(x);
                let zero = self.b.ins().f64const(0.0);
                let above = self.b.ins().fcmp(FloatCC::GreaterThan, x, zero);
                let below = self.b.ins().fcmp(FloatCC::LessThan, x, zero);
                let (one, minus_one) = (self.b.ins().f64const(1.0), self.b.ins().f64const(-1.0));
                let inner = self.blend(below, minus_one, zero);
                RealVal::Ssa(self.blend(above, one, inner))
            }
        };
        Ok(self.real_value(r))
    }

    /// `x op y` for the operator of an `Op2` node: [`Translator::binary`], after checking
    /// at run time that an int division's or remainder's divisor is not 0 (as the
    /// interpreter does, a failure stops the call).
    pub(super) fn binary_checked(
        &mut self,
        op: BinOp,
        x: RealVal,
        y: RealVal,
    ) -> JitResult<RealVal> {
        if op.is_integer_only() {
            let ok = match y {
                RealVal::Const(c) if c != 0.0 => None,
                RealVal::Const(_) => Some(self.b.ins().iconst(I8, 0)),
                RealVal::Ssa(v) => {
                    let zero = self.b.ins().f64const(0.0);
                    Some(self.b.ins().fcmp(FloatCC::NotEqual, v, zero))
                }
            };
            if let Some(ok) = ok {
                self.check_that(ok, Stop::DivisionByZero);
            }
        }
        self.binary(op, x, y)
    }

    pub(super) fn binary(&mut self, op: BinOp, x: RealVal, y: RealVal) -> JitResult<RealVal> {
        if let (RealVal::Const(a), RealVal::Const(b)) = (x, y) {
            return Ok(RealVal::Const(op.eval(a, b)));
        }
        let key = PureOp::Binary(op, real_key(x), real_key(y));
        if let Some(&v) = self.numbered.get(&key) {
            return Ok(RealVal::Ssa(v));
        }
        let r = self.binary_new(op, x, y)?;
        self.numbered.insert(key, r);
        self.note_int_arith(op, x, y, r);
        Ok(RealVal::Ssa(r))
    }

    /// Record the real `r = x op y` in `int_sums` when it is a whole number computed as an
    /// integer too: a sum or a difference of exact ints (`i + j`, `i - 1`), or a product of
    /// a sum of `iota` elements and a small constant (`2 * b + i`). Its range is kept for a
    /// sum, and for a difference whose right operand is a constant.
    ///
    /// The integers stay equal to the reals: `iota` elements are below an array's length
    /// (far below 2^40), constants below 2^31 in magnitude, a product's constant below 2^10
    /// and its other operand a sum with a range (at most four elements and a constant),
    /// and a product is never multiplied again (its range is unknown); so every value is
    /// far below 2^53, where the reals are exact.
    fn note_int_arith(&mut self, op: BinOp, x: RealVal, y: RealVal, r: Value) {
        if !matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul) {
            return;
        }
        let (Some(a), Some(b)) = (self.exact_int(x), self.exact_int(y)) else {
            return;
        };
        let (rx, ry) = (self.int_range(x), self.int_range(y));
        let (k, range) = match op {
            BinOp::Add => {
                let range = rx.zip(ry).and_then(|(mut p, q)| {
                    p.terms.extend(q.terms);
                    p.constant = p.constant.checked_add(q.constant)?;
                    p.min = p.min.checked_add(q.min)?;
                    (p.terms.len() <= 4).then_some(p)
                });
                (self.b.ins().iadd(a, b), range)
            }
            BinOp::Sub => {
                let range = rx.zip(ry).and_then(|(mut p, q)| {
                    if !q.terms.is_empty() {
                        return None;
                    }
                    p.constant = p.constant.checked_sub(q.constant)?;
                    p.min = p.min.checked_sub(q.constant)?;
                    Some(p)
                });
                (self.b.ins().isub(a, b), range)
            }
            _ => {
                let small = |v: RealVal| matches!(v, RealVal::Const(c) if c.abs() < 1024.0);
                let bounded = |v: RealVal, r: &Option<IntRange>| !small(v) && r.is_some();
                if !(small(x) && bounded(y, &ry) || small(y) && bounded(x, &rx)) {
                    return;
                }
                (self.b.ins().imul(a, b), None)
            }
        };
        self.int_sums.insert(r, (k, range));
    }

    /// Whether [`Translator::exact_int`] knows `x` as an integer (without emitting it).
    pub(super) fn is_exact_int(&self, x: RealVal) -> bool {
        match x {
            RealVal::Const(c) => c.fract() == 0.0 && c.abs() < 2147483648.0,
            RealVal::Ssa(v) => {
                self.iota_elements.contains_key(&v) || self.int_sums.contains_key(&v)
            }
        }
    }

    /// The integer equal to the real `x` when it is known to be a whole number well within
    /// range: an element of an `iota`, a sum of such (see `int_sums`), or a whole constant
    /// below 2^31 in magnitude.
    pub(super) fn exact_int(&mut self, x: RealVal) -> Option<Value> {
        match x {
            RealVal::Const(c) if self.is_exact_int(x) => Some(self.b.ins().iconst(I64, c as i64)),
            RealVal::Const(_) => None,
            RealVal::Ssa(v) => match self.iota_elements.get(&v) {
                Some(el) => Some(el.k),
                None => self.int_sums.get(&v).map(|&(k, _)| k),
            },
        }
    }

    fn binary_new(&mut self, op: BinOp, x: RealVal, y: RealVal) -> JitResult<Value> {
        if let BinOp::Partial(p) = op {
            return self.partial2(p, x, y);
        }
        // A division by a power of two is the multiplication by its inverse, bit for bit
        // (both are the correctly rounded value of the same real), and a multiplication
        // is several times cheaper.
        if let (BinOp::Div, RealVal::Const(c)) = (op, y) {
            if let Some(inverse) = exact_inverse(c) {
                let x = self.real_value(x);
                let m = self.b.ins().f64const(inverse);
                return Ok(self.b.ins().fmul(x, m));
            }
        }
        let (x, y) = (self.real_value(x), self.real_value(y));
        let ins = self.b.ins();
        Ok(match (op, runtime::binary(op)) {
            (BinOp::Add, _) => ins.fadd(x, y),
            (BinOp::Sub, _) => ins.fsub(x, y),
            (BinOp::Mul, _) => ins.fmul(x, y),
            (BinOp::Div, _) => ins.fdiv(x, y),
            // Exact on whole numbers below 2^53 in magnitude, as `BinOp::eval`'s `(x / y).trunc()`.
            (BinOp::IntDiv, _) => {
                let q = ins.fdiv(x, y);
                self.b.ins().trunc(q)
            }
            // Rust's `x % y` (the exact remainder, with the sign of `x`, a zero remainder
            // included): `x - y * trunc(x / y)` is exact on whole numbers below 2^53.
            (BinOp::Rem, _) => {
                let q = ins.fdiv(x, y);
                let t = self.b.ins().trunc(q);
                let p = self.b.ins().fmul(y, t);
                let r = self.b.ins().fsub(x, p);
                self.b.ins().fcopysign(r, x)
            }
            (BinOp::Max | BinOp::Min, _) => {
                // IEEE maximum (minimum) with the canonical quiet NaN, as `fmax` in
                // `unfad_syntax::ops`, from the machine's own comparison: `t` is `x` where
                // `x > y` and `y` otherwise, `u` the same with the operands swapped (x86's
                // `maxsd`, which Cranelift makes of this `select`, and on two lanes
                // `maxpd`). Where the two are not equal, `t` and `u` are both the larger;
                // where they are (`+0` and `-0` among them), the bits of both, and-ed for
                // the maximum (`+0` if either is) and or-ed for the minimum (`-0` if
                // either is). A NaN in either operand gives the canonical NaN. Five
                // instructions, two of them on the path from one element's accumulator to
                // the next in a reduction, where Cranelift's `fmax` and its NaN took nine.
                let (x_wins, y_wins) = if op == BinOp::Max {
                    (
                        self.b.ins().fcmp(FloatCC::LessThan, y, x),
                        self.b.ins().fcmp(FloatCC::LessThan, x, y),
                    )
                } else {
                    (
                        self.b.ins().fcmp(FloatCC::LessThan, x, y),
                        self.b.ins().fcmp(FloatCC::LessThan, y, x),
                    )
                };
                let t = self.b.ins().select(x_wins, x, y);
                let u = self.b.ins().select(y_wins, y, x);
                let r = if op == BinOp::Max {
                    self.b.ins().band(t, u)
                } else {
                    self.b.ins().bor(t, u)
                };
                let nan = self.b.ins().fcmp(FloatCC::Unordered, x, y);
                let canon = self.b.ins().f64const(f64::NAN);
                self.b.ins().select(nan, canon, r)
            }
            (_, Lowering::Call(name, _)) => self.call(name, &[x, y])?,
            (_, Lowering::Kernel(_) | Lowering::Inline) => {
                return internal(format!("no lowering for `{}`", op.name()))
            }
        })
    }

    /// A binary derivative primitive: the operations of [`Partial2::eval`], in its order.
    fn partial2(&mut self, p: Partial2, x: RealVal, y: RealVal) -> JitResult<Value> {
        let sum_of_squares = |t: &mut Self| -> JitResult<RealVal> {
            let xx = t.binary(BinOp::Mul, x, x)?;
            let yy = t.binary(BinOp::Mul, y, y)?;
            t.binary(BinOp::Add, xx, yy)
        };
        let r = match p {
            Partial2::PowFirst => {
                let ym1 = self.binary(BinOp::Sub, y, RealVal::Const(1.0))?;
                let pw = self.binary(BinOp::Pow, x, ym1)?;
                let prod = self.binary(BinOp::Mul, y, pw)?;
                // +0 where x == y == 0, as the definition.
                let (xv, yv, prod) = (
                    self.real_value(x),
                    self.real_value(y),
                    self.real_value(prod),
                );
                let zero = self.b.ins().f64const(0.0);
                let x_zero = self.b.ins().fcmp(FloatCC::Equal, xv, zero);
                let y_zero = self.b.ins().fcmp(FloatCC::Equal, yv, zero);
                let both = self.b.ins().band(x_zero, y_zero);
                return Ok(self.blend(both, zero, prod));
            }
            Partial2::PowSecond => {
                let pw = self.binary(BinOp::Pow, x, y)?;
                let l = self.unary(UnOp::Log, x)?;
                let prod = self.binary(BinOp::Mul, pw, l)?;
                // +0 where x == 0, as the definition.
                let (xv, prod) = (self.real_value(x), self.real_value(prod));
                let zero = self.b.ins().f64const(0.0);
                let at_zero = self.b.ins().fcmp(FloatCC::Equal, xv, zero);
                return Ok(self.blend(at_zero, zero, prod));
            }
            Partial2::Atan2First => {
                let r = sum_of_squares(self)?;
                self.binary(BinOp::Div, y, r)?
            }
            Partial2::Atan2Second => {
                let nx = self.unary(UnOp::Neg, x)?;
                let r = sum_of_squares(self)?;
                self.binary(BinOp::Div, nx, r)?
            }
        };
        Ok(self.real_value(r))
    }

    pub(super) fn compare(&mut self, op: CmpOp, x: RealVal, y: RealVal) -> CondVal {
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
        if let Some(known) = self.compare_by_floor(op, x, y) {
            return CondVal::Const(known);
        }
        // Two whole numbers computed as integers too (an `iota` element against a
        // constant, `i == 0`): compared as integers, the same order.
        if self.is_exact_int(x) && self.is_exact_int(y) {
            if let (Some(a), Some(b)) = (self.exact_int(x), self.exact_int(y)) {
                let icc = match op {
                    CmpOp::Lt => IntCC::SignedLessThan,
                    CmpOp::Le => IntCC::SignedLessThanOrEqual,
                    CmpOp::Gt => IntCC::SignedGreaterThan,
                    CmpOp::Ge => IntCC::SignedGreaterThanOrEqual,
                    CmpOp::Eq => IntCC::Equal,
                    CmpOp::Ne => IntCC::NotEqual,
                };
                return CondVal::Ssa(self.b.ins().icmp(icc, a, b));
            }
        }
        let (x, y) = (self.real_value(x), self.real_value(y));
        CondVal::Ssa(self.b.ins().fcmp(cc, x, y))
    }
}

/// `1 / c` when `c` is a power of two (of either sign) whose inverse is a normal number too:
/// then `x / c` and `x * (1 / c)` are the same real, rounded the same way, for every `x`.
pub(super) fn exact_inverse(c: f64) -> Option<f64> {
    let bits = c.abs().to_bits();
    let mantissa = bits & ((1u64 << 52) - 1);
    let exponent = (bits >> 52) as i64 - 1023;
    (c.is_normal() && mantissa == 0 && exponent.abs() <= 1021).then(|| 1.0 / c)
}

impl<'a> Translator<'a> {
    /// The comparison of an `iota` element `i` with a constant `c`, when the element's
    /// least value `f` (see `floors`: at least 0) decides it: `i == c` is false and `i >= c`
    /// true for `c < f`, and so on.
    fn compare_by_floor(&self, op: CmpOp, x: RealVal, y: RealVal) -> Option<bool> {
        let (op, v, c) = match (x, y) {
            (RealVal::Ssa(v), RealVal::Const(c)) => (op, v, c),
            (RealVal::Const(c), RealVal::Ssa(v)) => (
                match op {
                    CmpOp::Lt => CmpOp::Gt,
                    CmpOp::Le => CmpOp::Ge,
                    CmpOp::Gt => CmpOp::Lt,
                    CmpOp::Ge => CmpOp::Le,
                    CmpOp::Eq | CmpOp::Ne => op,
                },
                v,
                c,
            ),
            _ => return None,
        };
        let el = self.iota_elements.get(&v)?;
        let f = self.floor_of(el.k) as f64;
        match op {
            CmpOp::Eq if c < f => Some(false),
            CmpOp::Ne if c < f => Some(true),
            CmpOp::Lt if f >= c => Some(false),
            CmpOp::Le if f > c => Some(false),
            CmpOp::Gt if f > c => Some(true),
            CmpOp::Ge if f >= c => Some(true),
            _ => None,
        }
    }
}
