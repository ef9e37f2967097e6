//! Scalars the interpreter computes with: plain `f64`, or dual numbers for forward mode,
//! nested to any depth for higher derivatives (`Dual<Dual<f64>>` gives second derivatives),
//! and the derivative formulas every dual number type shares. The tagged dual numbers of
//! derivatives inside programs are in [`crate::tagged`].

use std::fmt::Debug;

use unfad_syntax::{BinOp, Partial, Partial2, UnOp};

/// A number type closed under the language's scalar operators.
///
/// Numbers are cloned, not copied, so that a scalar may share its parts ([`Tagged`]
/// keeps its levels behind `Rc`); for `f64` and `Dual` a clone is a copy.
///
/// [`Tagged`]: crate::tagged::Tagged
pub trait Scalar: Clone + Debug + PartialEq + 'static {
    /// Whether the numbers carry tagged perturbations, which `grad` and `jvp` inside a
    /// program need (each derivative perturbs its arguments at a fresh tag, so that nested
    /// derivatives keep their perturbations apart). Only [`Tagged`] does; the interpreter
    /// refuses derivatives inside programs with other scalars.
    ///
    /// [`Tagged`]: crate::tagged::Tagged
    const TAGGED: bool = false;

    fn constant(c: f64) -> Self;
    /// The primal value (what comparisons look at).
    fn value(&self) -> f64;
    /// Whether every part of the number is zero (the primal and, for a dual number, every
    /// tangent at every level). A tangent for which this holds contributes nothing.
    fn is_zero(&self) -> bool;
    fn unary(op: UnOp, x: Self) -> Self;
    fn binary(op: BinOp, x: Self, y: Self) -> Self;

    /// `primal + tangent·ε`, where `ε` is the perturbation `tag`, fresh (held by no part of
    /// either number). `None` for scalars without tags.
    fn perturb(primal: Self, tangent: Self, tag: u32) -> Option<Self> {
        let _ = (primal, tangent, tag);
        None
    }

    /// The parts of the number along the perturbation `tag`: `(p, t)` with
    /// `self = p + t·ε` and neither holding `tag` (`t` is zero when `self` does not hold
    /// it). `None` for scalars without tags.
    fn split(&self, tag: u32) -> Option<(Self, Self)> {
        let _ = tag;
        None
    }
}

impl Scalar for f64 {
    fn constant(c: f64) -> f64 {
        c
    }
    fn value(&self) -> f64 {
        *self
    }
    fn is_zero(&self) -> bool {
        *self == 0.0
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
/// The components are themselves scalars, so a dual number of dual numbers
/// (`Dual<Dual<f64>>`, nested forward mode) carries two independent perturbations and the
/// mixed second derivative between them in `d.d`. Every derivative formula below is computed
/// with the component type's own operators, so that an inner level differentiates the
/// formulas of the outer one.
///
/// The derivatives here are written independently of the reverse-mode derivative table,
/// so that the two check each other. The intensional choices agree with it: `abs'(0) = 0`,
/// `max` and `min` pass the derivative to their first operand on ties, the derivative of
/// `pow(x, y)` in `y` is 0 at `x == 0`, branches look at the primal `f64` value, and a
/// tangent that is exactly zero (every part of it) contributes nothing (so `pow(x, 2)` is
/// differentiable at `x < 0`, and `0 * inf` never makes NaN).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Dual<S = f64> {
    pub v: S,
    pub d: S,
}

impl<S: Scalar> Dual<S> {
    pub fn new(v: S, d: S) -> Dual<S> {
        Dual { v, d }
    }
}

fn c<S: Scalar>(x: f64) -> S {
    S::constant(x)
}

fn un<S: Scalar>(op: UnOp, x: &S) -> S {
    S::unary(op, x.clone())
}

fn add<S: Scalar>(x: S, y: S) -> S {
    S::binary(BinOp::Add, x, y)
}

fn sub<S: Scalar>(x: S, y: S) -> S {
    S::binary(BinOp::Sub, x, y)
}

fn mul<S: Scalar>(x: S, y: S) -> S {
    S::binary(BinOp::Mul, x, y)
}

fn div<S: Scalar>(x: S, y: S) -> S {
    S::binary(BinOp::Div, x, y)
}

/// `d * k`, but 0 when the tangent is structurally zero (never `0 * inf = NaN`).
pub(crate) fn scale<S: Scalar>(d: S, k: S) -> S {
    if d.is_zero() {
        c(0.0)
    } else {
        mul(d, k)
    }
}

/// `1`, `-1` or `0` by the sign of the primal value (the derivative of `abs`, 0 at 0).
fn sign<S: Scalar>(x: &S) -> S {
    let x = x.value();
    c(if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    })
}

/// `(1, 0)` when the first operand is chosen, `(0, 1)` otherwise.
fn choose<S: Scalar>(first: bool) -> (S, S) {
    if first {
        (c(1.0), c(0.0))
    } else {
        (c(0.0), c(1.0))
    }
}

/// `op(x)` and the derivative `op'(x)`, both computed in `S`'s arithmetic (so that a
/// dual number of dual numbers differentiates the derivative formula itself). Every dual
/// number type ([`Dual`], [`Tagged`]) takes its formulas from here.
///
/// [`Tagged`]: crate::tagged::Tagged
pub(crate) fn unary_with_derivative<S: Scalar>(op: UnOp, x: &S) -> (S, S) {
    let v = un(op, x);
    // `1 - x²`, the radicand of the derivatives of asin and acos.
    let one_minus_square = || sub(c(1.0), mul(x.clone(), x.clone()));
    let dv: S = match op {
        UnOp::Neg => c(-1.0),
        UnOp::Sin => un(UnOp::Cos, x),
        UnOp::Cos => un(UnOp::Neg, &un(UnOp::Sin, x)),
        UnOp::Tan => add(c(1.0), mul(v.clone(), v.clone())),
        UnOp::Exp => v.clone(),
        UnOp::Log => div(c(1.0), x.clone()),
        UnOp::Sqrt => div(c(0.5), v.clone()),
        UnOp::Tanh => sub(c(1.0), mul(v.clone(), v.clone())),
        UnOp::Abs => sign(x),
        UnOp::Sigmoid => mul(v.clone(), sub(c(1.0), v.clone())),
        UnOp::Atan => div(c(1.0), add(c(1.0), mul(x.clone(), x.clone()))),
        UnOp::Asin => div(c(1.0), un(UnOp::Sqrt, &one_minus_square())),
        UnOp::Acos => div(c(-1.0), un(UnOp::Sqrt, &one_minus_square())),
        UnOp::Sinh => un(UnOp::Cosh, x),
        UnOp::Cosh => un(UnOp::Sinh, x),
        UnOp::Log1p => div(c(1.0), add(c(1.0), x.clone())),
        UnOp::Expm1 => un(UnOp::Exp, x),
        UnOp::ToReal => c(0.0),
        UnOp::Partial(p) => partial_derivative(p, x),
    };
    (v, dv)
}

/// The derivative of the primitive derivative `p` at `u` (its operand), which only
/// derivatives of derivatives meet: formulas written out, independently of the
/// differentiator's own table.
fn partial_derivative<S: Scalar>(p: Partial, u: &S) -> S {
    let two_u = || mul(c(2.0), u.clone());
    match p {
        Partial::NegSin => un(UnOp::Neg, &un(UnOp::Cos, u)),
        Partial::OnePlusSquare => two_u(),
        Partial::OneMinusSquare => un(UnOp::Neg, &two_u()),
        Partial::Logistic => sub(c(1.0), two_u()),
        Partial::HalfReciprocal => div(c(-0.5), mul(u.clone(), u.clone())),
        Partial::ReciprocalOnePlus => {
            let d = add(c(1.0), u.clone());
            div(c(-1.0), mul(d.clone(), d))
        }
        Partial::ReciprocalOnePlusSquare => {
            let d = add(c(1.0), mul(u.clone(), u.clone()));
            div(un(UnOp::Neg, &two_u()), mul(d.clone(), d))
        }
        Partial::ReciprocalSqrtOneMinusSquare | Partial::NegReciprocalSqrtOneMinusSquare => {
            // ±x / (1 - x²)^(3/2)
            let m = sub(c(1.0), mul(u.clone(), u.clone()));
            let d = div(u.clone(), mul(m.clone(), un(UnOp::Sqrt, &m)));
            if p == Partial::ReciprocalSqrtOneMinusSquare {
                d
            } else {
                un(UnOp::Neg, &d)
            }
        }
        Partial::Sign => c(0.0),
    }
}

/// `op(x, y)` and its partial derivatives in `x` and in `y`, computed in `S`'s arithmetic
/// (see [`unary_with_derivative`]).
pub(crate) fn binary_with_partials<S: Scalar>(op: BinOp, x: &S, y: &S) -> (S, S, S) {
    let v = S::binary(op, x.clone(), y.clone());
    let (dx, dy): (S, S) = match op {
        BinOp::Add => (c(1.0), c(1.0)),
        BinOp::Sub => (c(1.0), c(-1.0)),
        BinOp::IntDiv | BinOp::Rem => (c(0.0), c(0.0)),
        BinOp::Mul => (y.clone(), x.clone()),
        BinOp::Div => (
            div(c(1.0), y.clone()),
            div(un(UnOp::Neg, x), mul(y.clone(), y.clone())),
        ),
        BinOp::Pow => (
            // 0 at x = y = 0 (`Partial2::PowFirst`).
            if x.value() == 0.0 && y.value() == 0.0 {
                c(0.0)
            } else {
                mul(
                    y.clone(),
                    S::binary(BinOp::Pow, x.clone(), sub(y.clone(), c(1.0))),
                )
            },
            if x.value() == 0.0 {
                c(0.0)
            } else {
                mul(v.clone(), un(UnOp::Log, x))
            },
        ),
        BinOp::Max => choose(x.value() >= y.value()),
        BinOp::Min => choose(x.value() <= y.value()),
        BinOp::Atan2 => {
            let r = add(mul(x.clone(), x.clone()), mul(y.clone(), y.clone()));
            (div(y.clone(), r.clone()), div(un(UnOp::Neg, x), r))
        }
        BinOp::Partial(p) => partial2_partials(p, x, y),
    };
    (v, dx, dy)
}

/// The partials of the primitive `p` at `(x, y)`, which only derivatives of derivatives
/// meet: formulas written out, independently of the differentiator's own table.
fn partial2_partials<S: Scalar>(p: Partial2, x: &S, y: &S) -> (S, S) {
    let pow = |b: S, e: S| S::binary(BinOp::Pow, b, e);
    match p {
        // y x^(y-1): (y (y-1) x^(y-2), x^(y-1) (1 + y log x))
        Partial2::PowFirst => {
            let ym1 = sub(y.clone(), c(1.0));
            // The primitive is 0 on the whole line y = 0: its derivative along x too.
            let d1 = if y.value() == 0.0 {
                c(0.0)
            } else {
                mul(
                    mul(y.clone(), ym1.clone()),
                    pow(x.clone(), sub(y.clone(), c(2.0))),
                )
            };
            let d2 = if x.value() == 0.0 {
                pow(x.clone(), ym1)
            } else {
                mul(
                    pow(x.clone(), ym1),
                    add(c(1.0), mul(y.clone(), un(UnOp::Log, x))),
                )
            };
            (d1, d2)
        }
        // x^y log x, 0 at x = 0: (x^(y-1) (y log x + 1), x^y (log x)²)
        Partial2::PowSecond => {
            if x.value() == 0.0 {
                return (c(0.0), c(0.0));
            }
            let l = un(UnOp::Log, x);
            let d1 = mul(
                pow(x.clone(), sub(y.clone(), c(1.0))),
                add(mul(y.clone(), l.clone()), c(1.0)),
            );
            let d2 = mul(pow(x.clone(), y.clone()), mul(l.clone(), l));
            (d1, d2)
        }
        Partial2::Atan2First | Partial2::Atan2Second => {
            let r = add(mul(x.clone(), x.clone()), mul(y.clone(), y.clone()));
            let rr = mul(r.clone(), r);
            let cross = div(mul(c(2.0), mul(x.clone(), y.clone())), rr.clone());
            let square = div(
                sub(mul(x.clone(), x.clone()), mul(y.clone(), y.clone())),
                rr,
            );
            if p == Partial2::Atan2First {
                (un(UnOp::Neg, &cross), square)
            } else {
                (square, cross)
            }
        }
    }
}

impl<S: Scalar> Scalar for Dual<S> {
    fn constant(x: f64) -> Dual<S> {
        Dual { v: c(x), d: c(0.0) }
    }
    fn value(&self) -> f64 {
        self.v.value()
    }
    fn is_zero(&self) -> bool {
        self.v.is_zero() && self.d.is_zero()
    }
    fn unary(op: UnOp, x: Dual<S>) -> Dual<S> {
        let (v, dv) = unary_with_derivative(op, &x.v);
        Dual {
            v,
            d: scale(x.d, dv),
        }
    }
    fn binary(op: BinOp, x: Dual<S>, y: Dual<S>) -> Dual<S> {
        let (v, dx, dy) = binary_with_partials(op, &x.v, &y.v);
        Dual {
            v,
            d: add(scale(x.d, dx), scale(y.d, dy)),
        }
    }
}
