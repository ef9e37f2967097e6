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

use unfad_syntax::{Arena, BinOp, CmpOp, ExprId, Partial, Partial2, UnOp};

use crate::build::{add, cmp, div, if_, mul, num, sub};

/// `∂op(x)`: the derivative of `op` at the atom `x`. A derivative read from the operator's
/// result (see [`Partial`]) writes `op(x)` again, which sharing finds in the primal.
pub fn unary_partial(a: &mut Arena, op: UnOp, x: ExprId) -> ExprId {
    unary_partial_with(a, op, x, None)
}

/// `∂op(x)` where `y`, if given, is an atom holding `op(x)` (forward mode has it bound).
///
/// A derivative that takes more than one operation is the primitive [`Partial`] (one NLOP in
/// the cost model, as the paper's Theorem "complexity" assumes); the derivatives of those
/// primitives, which only second derivatives need, are formulas over the primitives.
pub fn unary_partial_with(a: &mut Arena, op: UnOp, x: ExprId, y: Option<ExprId>) -> ExprId {
    let one = num(a, 1.0);
    if let Some((p, of_result)) = Partial::of(op) {
        let operand = if of_result {
            y.unwrap_or_else(|| a.op1(op, x))
        } else {
            x
        };
        return a.op1(UnOp::Partial(p), operand);
    }
    match op {
        UnOp::Neg => num(a, -1.0),
        UnOp::Sin => a.op1(UnOp::Cos, x),
        UnOp::Exp => y.unwrap_or_else(|| a.op1(UnOp::Exp, x)),
        UnOp::Log => div(a, one, x),
        UnOp::Sinh => a.op1(UnOp::Cosh, x),
        UnOp::Cosh => a.op1(UnOp::Sinh, x),
        UnOp::Expm1 => a.op1(UnOp::Exp, x),
        // Ints carry no derivative (reverse mode treats `real(i)` as a constant).
        UnOp::ToReal => num(a, 0.0),
        UnOp::Partial(p) => partial_derivative(a, p, x),
        UnOp::Cos
        | UnOp::Tan
        | UnOp::Tanh
        | UnOp::Sigmoid
        | UnOp::Sqrt
        | UnOp::Log1p
        | UnOp::Atan
        | UnOp::Asin
        | UnOp::Acos
        | UnOp::Abs => unreachable!("`{}` has a primitive derivative", op.name()),
    }
}

/// The derivative of the primitive `p` at the atom `u` (its own operand: the result or the
/// argument of the operator it differentiates).
fn partial_derivative(a: &mut Arena, p: Partial, u: ExprId) -> ExprId {
    let one = num(a, 1.0);
    let twice = |a: &mut Arena| add(a, u, u);
    match p {
        // (-sin)' = -cos
        Partial::NegSin => {
            let c = a.op1(UnOp::Cos, u);
            a.op1(UnOp::Neg, c)
        }
        // (1 + t²)' = 2t
        Partial::OnePlusSquare => twice(a),
        // (1 - t²)' = -2t
        Partial::OneMinusSquare => {
            let t2 = twice(a);
            a.op1(UnOp::Neg, t2)
        }
        // (s (1 - s))' = 1 - 2s
        Partial::Logistic => {
            let s2 = twice(a);
            sub(a, one, s2)
        }
        // (0.5 / s)' = -0.5 / (s s)
        Partial::HalfReciprocal => {
            let ss = mul(a, u, u);
            let m = num(a, -0.5);
            div(a, m, ss)
        }
        // (1 / (1 + x))' = -r², r = 1 / (1 + x)
        Partial::ReciprocalOnePlus => {
            let r = a.op1(UnOp::Partial(p), u);
            let rr = mul(a, r, r);
            a.op1(UnOp::Neg, rr)
        }
        // (1 / (1 + x²))' = -2x r², r = 1 / (1 + x²)
        Partial::ReciprocalOnePlusSquare => {
            let r = a.op1(UnOp::Partial(p), u);
            let rr = mul(a, r, r);
            let x2 = twice(a);
            let d = mul(a, x2, rr);
            a.op1(UnOp::Neg, d)
        }
        // (±1 / sqrt(1 - x²))' = ±x r³, r = 1 / sqrt(1 - x²)
        Partial::ReciprocalSqrtOneMinusSquare | Partial::NegReciprocalSqrtOneMinusSquare => {
            let r = a.op1(UnOp::Partial(Partial::ReciprocalSqrtOneMinusSquare), u);
            let rr = mul(a, r, r);
            let r3 = mul(a, rr, r);
            let d = mul(a, u, r3);
            if p == Partial::ReciprocalSqrtOneMinusSquare {
                d
            } else {
                a.op1(UnOp::Neg, d)
            }
        }
        // Piecewise constant.
        Partial::Sign => num(a, 0.0),
    }
}

/// `(∂1 op(x, y), ∂2 op(x, y))` at the atoms `x` and `y`.
///
/// The partials of `pow` and `atan2` are the primitives [`Partial2`] (one NLOP each); the
/// partials of those, which only second derivatives need, are formulas.
pub fn binary_partials(a: &mut Arena, op: BinOp, x: ExprId, y: ExprId) -> (ExprId, ExprId) {
    let one = num(a, 1.0);
    let zero = num(a, 0.0);
    if let Some((p1, p2)) = Partial2::of(op) {
        let d1 = a.op2(BinOp::Partial(p1), x, y);
        let d2 = a.op2(BinOp::Partial(p2), x, y);
        return (d1, d2);
    }
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
        BinOp::Partial(p) => partial2_partials(a, p, x, y),
        BinOp::Pow | BinOp::Atan2 => {
            unreachable!("`{}` has primitive partials", op.name())
        }
    }
}

/// The partials of the primitive `p` at the atoms `x` and `y` (the operands of the operator
/// it differentiates).
fn partial2_partials(a: &mut Arena, p: Partial2, x: ExprId, y: ExprId) -> (ExprId, ExprId) {
    let zero = num(a, 0.0);
    let one = num(a, 1.0);
    match p {
        // ∂1: y * (y - 1) * x^(y - 2) = y * pow_d1(x, y - 1);
        // ∂2: x^(y - 1) + y * ∂2 pow(x, y - 1) = pow(x, y - 1) + y * pow_d2(x, y - 1).
        Partial2::PowFirst => {
            let ym1 = sub(a, y, one);
            let inner1 = a.op2(BinOp::Partial(Partial2::PowFirst), x, ym1);
            let d1 = mul(a, y, inner1);
            let pw = a.op2(BinOp::Pow, x, ym1);
            let inner2 = a.op2(BinOp::Partial(Partial2::PowSecond), x, ym1);
            let t = mul(a, y, inner2);
            (d1, add(a, pw, t))
        }
        // 0 at x = 0, as the primitive; elsewhere ∂1 = pow_d1(x, y) * log(x) + pow(x, y) / x
        // and ∂2 = pow_d2(x, y) * log(x).
        Partial2::PowSecond => {
            let l = a.op1(UnOp::Log, x);
            let first = a.op2(BinOp::Partial(Partial2::PowFirst), x, y);
            let fl = mul(a, first, l);
            let pw = a.op2(BinOp::Pow, x, y);
            let q = div(a, pw, x);
            let d1 = add(a, fl, q);
            let second = a.op2(BinOp::Partial(Partial2::PowSecond), x, y);
            let d2 = mul(a, second, l);
            let at_zero = cmp(a, CmpOp::Eq, x, zero);
            let d1 = if_(a, at_zero, zero, d1);
            let at_zero2 = cmp(a, CmpOp::Eq, x, zero);
            (d1, if_(a, at_zero2, zero, d2))
        }
        // With r = x² + y²: y / r has partials (-2xy / r², (x² - y²) / r²) and -x / r has
        // ((x² - y²) / r², 2xy / r²).
        Partial2::Atan2First | Partial2::Atan2Second => {
            let xx = mul(a, x, x);
            let yy = mul(a, y, y);
            let r = add(a, xx, yy);
            let rr = mul(a, r, r);
            let x2 = add(a, x, x);
            let xy2 = mul(a, x2, y);
            let cross = div(a, xy2, rr);
            let diff = sub(a, xx, yy);
            let square = div(a, diff, rr);
            if p == Partial2::Atan2First {
                (a.op1(UnOp::Neg, cross), square)
            } else {
                (square, cross)
            }
        }
    }
}
