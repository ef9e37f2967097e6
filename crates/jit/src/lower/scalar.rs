//! Scalar operations: the operators on reals (Cranelift instructions, inline math kernels
//! from `kernels.rs`, or calls of the run-time functions, numbered in the current block),
//! the operators on ints (carried as reals holding whole numbers: `+ - * max min` are the
//! reals' instructions, `div` and `%` are computed from the quotient, a zero divisor stops
//! the call), comparisons, and the SSA value of a known or computed real or condition.

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::types::{F64, I64, I8};
use cranelift_codegen::ir::{AbiParam, FuncRef, InstBuilder, Signature, Value};
use cranelift_module::{Linkage, Module};
use unfad_syntax::{BinOp, CmpOp, Partial, Partial2, UnOp};

use crate::error::{internal, JitError, JitResult, Stop};
use crate::runtime::{self, Lowering};
use crate::value::{CondVal, RealVal};

use super::access::{real_key, PureOp};
use super::Translator;

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
            Partial::HalfReciprocal => self.binary(BinOp::Div, Const(0.5), x)?,
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
        if op == BinOp::Add {
            if let (Some(a), Some(b)) = (self.exact_int(x), self.exact_int(y)) {
                let k = self.b.ins().iadd(a, b);
                let range = self
                    .int_range(x)
                    .zip(self.int_range(y))
                    .and_then(|(mut p, q)| {
                        p.terms.extend(q.terms);
                        p.constant = p.constant.checked_add(q.constant)?;
                        (p.terms.len() <= 4).then_some(p)
                    });
                self.int_sums.insert(r, (k, range));
            }
        }
        Ok(RealVal::Ssa(r))
    }

    /// The integer equal to the real `x` when it is known to be a whole number well within
    /// range: an element of an `iota`, a sum of such (see `int_sums`), or a whole constant
    /// below 2^31 in magnitude.
    pub(super) fn exact_int(&mut self, x: RealVal) -> Option<Value> {
        match x {
            RealVal::Const(c) if c.fract() == 0.0 && c.abs() < 2147483648.0 => {
                Some(self.b.ins().iconst(I64, c as i64))
            }
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
        let (x, y) = (self.real_value(x), self.real_value(y));
        CondVal::Ssa(self.b.ins().fcmp(cc, x, y))
    }
}
