//! Scalars the interpreter computes with: plain `f64`, or dual numbers for forward mode.

use std::fmt::Debug;

use unfad_syntax::{BinOp, UnOp};

/// A number type closed under the language's scalar operators.
pub trait Scalar: Copy + Debug + PartialEq + 'static {
    fn constant(c: f64) -> Self;
    /// The primal value (what comparisons look at).
    fn value(self) -> f64;
    fn unary(op: UnOp, x: Self) -> Self;
    fn binary(op: BinOp, x: Self, y: Self) -> Self;
}

impl Scalar for f64 {
    fn constant(c: f64) -> f64 {
        c
    }
    fn value(self) -> f64 {
        self
    }
    fn unary(op: UnOp, x: f64) -> f64 {
        op.eval(x)
    }
    fn binary(op: BinOp, x: f64, y: f64) -> f64 {
        op.eval(x, y)
    }
}

/// `v + d·ε` with `ε² = 0`: evaluating with these computes one directional derivative.
///
/// The derivatives here are written independently of the reverse-mode derivative table,
/// so that the two check each other. The intensional choices agree with it: `abs'(0) = 0`,
/// `max` and `min` pass the derivative to their first operand on ties, and a tangent that
/// is exactly zero contributes nothing (so `pow(x, 2)` is differentiable at `x < 0`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Dual {
    pub v: f64,
    pub d: f64,
}

impl Dual {
    pub fn new(v: f64, d: f64) -> Dual {
        Dual { v, d }
    }
}

/// `d * k`, but 0 when the tangent is structurally zero (never `0 * inf = NaN`).
fn scale(d: f64, k: f64) -> f64 {
    if d == 0.0 {
        0.0
    } else {
        d * k
    }
}

impl Scalar for Dual {
    fn constant(c: f64) -> Dual {
        Dual { v: c, d: 0.0 }
    }
    fn value(self) -> f64 {
        self.v
    }
    fn unary(op: UnOp, x: Dual) -> Dual {
        let v = op.eval(x.v);
        let dv = match op {
            UnOp::Neg => -1.0,
            UnOp::Sin => UnOp::Cos.eval(x.v),
            UnOp::Cos => -UnOp::Sin.eval(x.v),
            UnOp::Tan => 1.0 + v * v,
            UnOp::Exp => v,
            UnOp::Log => 1.0 / x.v,
            UnOp::Sqrt => 0.5 / v,
            UnOp::Tanh => 1.0 - v * v,
            UnOp::Abs => {
                if x.v > 0.0 {
                    1.0
                } else if x.v < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            UnOp::Sigmoid => v * (1.0 - v),
            UnOp::Atan => 1.0 / (1.0 + x.v * x.v),
            UnOp::Asin => 1.0 / (1.0 - x.v * x.v).sqrt(),
            UnOp::Acos => -1.0 / (1.0 - x.v * x.v).sqrt(),
            UnOp::Sinh => x.v.cosh(),
            UnOp::Cosh => x.v.sinh(),
            UnOp::Log1p => 1.0 / (1.0 + x.v),
            UnOp::Expm1 => UnOp::Exp.eval(x.v),
            UnOp::ToReal => 0.0,
        };
        Dual {
            v,
            d: scale(x.d, dv),
        }
    }
    fn binary(op: BinOp, x: Dual, y: Dual) -> Dual {
        let v = op.eval(x.v, y.v);
        let (dx, dy) = match op {
            BinOp::Add => (1.0, 1.0),
            BinOp::Sub => (1.0, -1.0),
            BinOp::IntDiv | BinOp::Rem => (0.0, 0.0),
            BinOp::Mul => (y.v, x.v),
            BinOp::Div => (1.0 / y.v, -x.v / (y.v * y.v)),
            BinOp::Pow => (
                y.v * x.v.powf(y.v - 1.0),
                if x.v == 0.0 {
                    0.0
                } else {
                    v * UnOp::Log.eval(x.v)
                },
            ),
            BinOp::Max => {
                let first = x.v >= y.v;
                (if first { 1.0 } else { 0.0 }, if first { 0.0 } else { 1.0 })
            }
            BinOp::Min => {
                let first = x.v <= y.v;
                (if first { 1.0 } else { 0.0 }, if first { 0.0 } else { 1.0 })
            }
            BinOp::Atan2 => {
                let r = x.v * x.v + y.v * y.v;
                (y.v / r, -x.v / r)
            }
        };
        Dual {
            v,
            d: scale(x.d, dx) + scale(y.d, dy),
        }
    }
}
