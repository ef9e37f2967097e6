//! Scalars the interpreter computes with: plain `f64`, or dual numbers for forward mode,
//! nested to any depth for higher derivatives (`Dual<Dual<f64>>` gives second derivatives),
//! and the derivative formulas every dual number type shares. The tagged dual numbers of
//! derivatives inside programs are in [`crate::tagged`].

use std::fmt::Debug;

use unfad_syntax::{BinOp, UnOp};

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
    };
    (v, dv)
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
            mul(
                y.clone(),
                S::binary(BinOp::Pow, x.clone(), sub(y.clone(), c(1.0))),
            ),
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
    };
    (v, dx, dy)
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
