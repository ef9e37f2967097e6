//! The scalar derivative table: the paper's `∂op1`, `∂1 op2` and `∂2 op2` as Target terms.
//!
//! Reverse mode only ever multiplies these by an adjoint, so each entry is the partial
//! derivative itself, built in the arena from the operands. The operands are *atoms*
//! (variables or constants): the entries use them several times.
//!
//! The intensional choices (what non-differentiable points get) agree with the
//! forward-mode oracle `unfad_interp::Dual`, formula for formula, so that the two agree to
//! rounding: `abs'(0) = 0`; `max` and `min` give the derivative to their first operand on
//! ties; `∂2 pow(x, y) = 0` at `x = 0`.

use unfad_syntax::{Arena, BinOp, CmpOp, ExprId, UnOp};

use crate::build::{add, cmp, div, if_, mul, num, sub};

/// `∂op(x)`: the derivative of `op` at the atom `x`.
pub fn unary_partial(a: &mut Arena, op: UnOp, x: ExprId) -> ExprId {
    let one = num(a, 1.0);
    match op {
        UnOp::Neg => num(a, -1.0),
        UnOp::Sin => a.op1(UnOp::Cos, x),
        UnOp::Cos => {
            let s = a.op1(UnOp::Sin, x);
            a.op1(UnOp::Neg, s)
        }
        // 1 + tan(x)^2
        UnOp::Tan => {
            let t = a.op1(UnOp::Tan, x);
            let tt = mul(a, t, t);
            add(a, one, tt)
        }
        UnOp::Exp => a.op1(UnOp::Exp, x),
        UnOp::Log => div(a, one, x),
        UnOp::Sqrt => {
            let half = num(a, 0.5);
            let s = a.op1(UnOp::Sqrt, x);
            div(a, half, s)
        }
        // 1 - tanh(x)^2
        UnOp::Tanh => {
            let t = a.op1(UnOp::Tanh, x);
            let tt = mul(a, t, t);
            sub(a, one, tt)
        }
        // if x > 0 then 1 else if x < 0 then -1 else 0
        UnOp::Abs => {
            let zero = num(a, 0.0);
            let minus_one = num(a, -1.0);
            let neg = cmp(a, CmpOp::Lt, x, zero);
            let inner = if_(a, neg, minus_one, zero);
            let pos = cmp(a, CmpOp::Gt, x, zero);
            if_(a, pos, one, inner)
        }
        // s * (1 - s) with s = sigmoid(x)
        UnOp::Sigmoid => {
            let s = a.op1(UnOp::Sigmoid, x);
            let rest = sub(a, one, s);
            mul(a, s, rest)
        }
        // 1 / (1 + x*x)
        UnOp::Atan => {
            let xx = mul(a, x, x);
            let d = add(a, one, xx);
            div(a, one, d)
        }
        // ±1 / sqrt(1 - x*x)
        UnOp::Asin | UnOp::Acos => {
            let xx = mul(a, x, x);
            let d = sub(a, one, xx);
            let r = a.op1(UnOp::Sqrt, d);
            let sign = num(a, if op == UnOp::Asin { 1.0 } else { -1.0 });
            div(a, sign, r)
        }
        UnOp::Sinh => a.op1(UnOp::Cosh, x),
        UnOp::Cosh => a.op1(UnOp::Sinh, x),
        // 1 / (1 + x)
        UnOp::Log1p => {
            let d = add(a, one, x);
            div(a, one, d)
        }
        UnOp::Expm1 => a.op1(UnOp::Exp, x),
        // Ints carry no derivative (reverse mode treats `real(i)` as a constant).
        UnOp::ToReal => num(a, 0.0),
    }
}

/// `(∂1 op(x, y), ∂2 op(x, y))` at the atoms `x` and `y`.
pub fn binary_partials(a: &mut Arena, op: BinOp, x: ExprId, y: ExprId) -> (ExprId, ExprId) {
    let one = num(a, 1.0);
    let zero = num(a, 0.0);
    match op {
        BinOp::Add => (one, one),
        BinOp::Sub => (one, num(a, -1.0)),
        // Operators on ints: piecewise constant, and ints carry no derivative.
        BinOp::IntDiv | BinOp::Rem => (zero, zero),
        BinOp::Mul => (y, x),
        // (1 / y, -x / (y*y))
        BinOp::Div => {
            let dx = div(a, one, y);
            let yy = mul(a, y, y);
            let nx = a.op1(UnOp::Neg, x);
            (dx, div(a, nx, yy))
        }
        // (y * pow(x, y - 1), if x == 0 then 0 else pow(x, y) * log(x))
        BinOp::Pow => {
            let ym1 = sub(a, y, one);
            let p = a.op2(BinOp::Pow, x, ym1);
            let dx = mul(a, y, p);
            let v = a.op2(BinOp::Pow, x, y);
            let l = a.op1(UnOp::Log, x);
            let vl = mul(a, v, l);
            let at_zero = cmp(a, CmpOp::Eq, x, zero);
            (dx, if_(a, at_zero, zero, vl))
        }
        // The first operand wins ties: `>=` for max, `<=` for min.
        BinOp::Max | BinOp::Min => {
            let c = if op == BinOp::Max {
                CmpOp::Ge
            } else {
                CmpOp::Le
            };
            let first = cmp(a, c, x, y);
            let dx = if_(a, first, one, zero);
            let first2 = cmp(a, c, x, y);
            (dx, if_(a, first2, zero, one))
        }
        // atan2(x, y): (y / (x*x + y*y), -x / (x*x + y*y))
        BinOp::Atan2 => {
            let r = {
                let xx = mul(a, x, x);
                let yy = mul(a, y, y);
                add(a, xx, yy)
            };
            let dx = div(a, y, r);
            let nx = a.op1(UnOp::Neg, x);
            (dx, div(a, nx, r))
        }
    }
}
