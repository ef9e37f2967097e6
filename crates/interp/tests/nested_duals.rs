//! Nested dual numbers (`Dual<Dual<f64>>`) against closed-form first and second
//! derivatives of every scalar operator, including the intensional choices at kinks and
//! the rule that a zero tangent contributes nothing.

use unfad_interp::{Dual, Scalar};
use unfad_syntax::{BinOp, Partial, UnOp};
use unfad_test_support::close;

type Dual2 = Dual<Dual<f64>>;

/// `x` perturbed by `inner` at the inner level and `outer` at the outer one.
fn var(x: f64, inner: f64, outer: f64) -> Dual2 {
    Dual::new(Dual::new(x, inner), Dual::new(outer, 0.0))
}

/// `(f, f', f'')` of `op` at `x`, by one nested evaluation with both tangents 1.
fn unary(op: UnOp, x: f64) -> (f64, f64, f64) {
    let r = Dual2::unary(op, var(x, 1.0, 1.0));
    // Both first-order parts are the same derivative, computed the same way.
    assert_eq!(r.v.d.to_bits(), r.d.v.to_bits(), "{op:?} at {x}");
    (r.v.v, r.v.d, r.d.d)
}

fn assert_close(got: f64, want: f64, what: &str) {
    assert!(close(got, want, 1e-12), "{what}: got {got}, want {want}");
}

/// The closed forms `(f', f'')` of every unary operator.
fn unary_closed_form(op: UnOp, x: f64) -> (f64, f64) {
    let sq = 1.0 - x * x;
    match op {
        UnOp::Neg => (-1.0, 0.0),
        UnOp::Sin => (x.cos(), -x.sin()),
        UnOp::Cos => (-x.sin(), -x.cos()),
        UnOp::Tan => {
            let t = x.tan();
            (1.0 + t * t, 2.0 * t * (1.0 + t * t))
        }
        UnOp::Exp => (x.exp(), x.exp()),
        UnOp::Log => (1.0 / x, -1.0 / (x * x)),
        UnOp::Sqrt => (0.5 / x.sqrt(), -0.25 / (x * x.sqrt())),
        UnOp::Tanh => {
            let t = x.tanh();
            (1.0 - t * t, -2.0 * t * (1.0 - t * t))
        }
        UnOp::Abs => (x.signum(), 0.0),
        UnOp::Sigmoid => {
            let s = 1.0 / (1.0 + (-x).exp());
            (s * (1.0 - s), s * (1.0 - s) * (1.0 - 2.0 * s))
        }
        UnOp::Atan => (
            1.0 / (1.0 + x * x),
            -2.0 * x / ((1.0 + x * x) * (1.0 + x * x)),
        ),
        UnOp::Asin => (1.0 / sq.sqrt(), x / (sq * sq.sqrt())),
        UnOp::Acos => (-1.0 / sq.sqrt(), -x / (sq * sq.sqrt())),
        UnOp::Sinh => (x.cosh(), x.sinh()),
        UnOp::Cosh => (x.sinh(), x.cosh()),
        UnOp::Log1p => (1.0 / (1.0 + x), -1.0 / ((1.0 + x) * (1.0 + x))),
        UnOp::Expm1 => (x.exp(), x.exp()),
        UnOp::ToReal => (0.0, 0.0),
        UnOp::Partial(p) => partial_closed_form(p, x),
    }
}

/// The closed forms `(f', f'')` of the derivative primitives, as functions of their operand.
fn partial_closed_form(p: Partial, u: f64) -> (f64, f64) {
    let sq = 1.0 - u * u;
    let op = 1.0 + u;
    let ops = 1.0 + u * u;
    match p {
        Partial::NegSin => (-u.cos(), u.sin()),
        Partial::OnePlusSquare => (2.0 * u, 2.0),
        Partial::OneMinusSquare => (-2.0 * u, -2.0),
        Partial::Logistic => (1.0 - 2.0 * u, -2.0),
        Partial::HalfReciprocal => (-0.5 / (u * u), 1.0 / (u * u * u)),
        Partial::ReciprocalOnePlus => (-1.0 / (op * op), 2.0 / (op * op * op)),
        Partial::ReciprocalOnePlusSquare => (
            -2.0 * u / (ops * ops),
            (6.0 * u * u - 2.0) / (ops * ops * ops),
        ),
        Partial::ReciprocalSqrtOneMinusSquare => (
            u / (sq * sq.sqrt()),
            (1.0 + 2.0 * u * u) / (sq * sq * sq.sqrt()),
        ),
        Partial::NegReciprocalSqrtOneMinusSquare => (
            -u / (sq * sq.sqrt()),
            -(1.0 + 2.0 * u * u) / (sq * sq * sq.sqrt()),
        ),
        Partial::Sign => (0.0, 0.0),
    }
}

#[test]
fn every_unary_operator_has_its_second_derivative() {
    let ops = UnOp::ALL
        .into_iter()
        .chain([UnOp::ToReal])
        .chain(Partial::ALL.map(UnOp::Partial));
    for op in ops {
        // Points inside every operator's domain (asin and acos need |x| < 1).
        for x in [-0.7f64, -0.2, 0.3, 0.9] {
            let x = if op == UnOp::Log || op == UnOp::Sqrt {
                x.abs()
            } else {
                x
            };
            let (v, d1, d2) = unary(op, x);
            let (want1, want2) = unary_closed_form(op, x);
            assert_eq!(v.to_bits(), op.eval(x).to_bits(), "{op:?}({x})");
            assert_close(d1, want1, &format!("{op:?}'({x})"));
            assert_close(d2, want2, &format!("{op:?}''({x})"));
        }
    }
}

#[test]
fn nested_first_order_parts_are_the_plain_dual_bit_for_bit() {
    for op in UnOp::ALL {
        for x in [-0.7, 0.3, 0.9, 2.5] {
            let plain = Dual::unary(op, Dual::new(x, 1.0)).d;
            let (_, nested, _) = unary(op, x);
            assert_eq!(plain.to_bits(), nested.to_bits(), "{op:?}({x})");
        }
    }
    for op in BinOp::ALL {
        for (x, y) in [(0.7, 1.3), (2.0, -0.5), (1.5, 1.5)] {
            let plain = Dual::binary(op, Dual::new(x, 1.0), Dual::new(y, 0.25));
            let nested = Dual2::binary(op, var(x, 1.0, 1.0), var(y, 0.25, 0.25));
            assert_eq!(plain.v.to_bits(), nested.v.v.to_bits(), "{op:?}({x}, {y})");
            assert_eq!(plain.d.to_bits(), nested.v.d.to_bits(), "{op:?}({x}, {y})");
            assert_eq!(plain.d.to_bits(), nested.d.v.to_bits(), "{op:?}({x}, {y})");
        }
    }
}

/// The Hessian `[[f_xx, f_xy], [f_yx, f_yy]]` and gradient of `op` at `(x, y)`, one nested
/// evaluation per entry (inner tangent on the row's variable, outer on the column's).
fn binary(op: BinOp, x: f64, y: f64) -> ([f64; 2], [[f64; 2]; 2]) {
    let mut hessian = [[0.0; 2]; 2];
    let mut gradient = [0.0; 2];
    for (i, row) in hessian.iter_mut().enumerate() {
        for (j, entry) in row.iter_mut().enumerate() {
            let seed = |k: usize| {
                (
                    if i == k { 1.0 } else { 0.0 },
                    if j == k { 1.0 } else { 0.0 },
                )
            };
            let (xi, xo) = seed(0);
            let (yi, yo) = seed(1);
            let r = Dual2::binary(op, var(x, xi, xo), var(y, yi, yo));
            *entry = r.d.d;
            gradient[i] = r.v.d;
        }
    }
    (gradient, hessian)
}

fn assert_binary(op: BinOp, x: f64, y: f64, gradient: [f64; 2], hessian: [[f64; 2]; 2]) {
    let (g, h) = binary(op, x, y);
    for i in 0..2 {
        assert_close(g[i], gradient[i], &format!("{op:?}({x}, {y}) gradient {i}"));
        for j in 0..2 {
            assert_close(
                h[i][j],
                hessian[i][j],
                &format!("{op:?}({x}, {y}) hessian {i} {j}"),
            );
        }
    }
}

#[test]
fn every_binary_operator_has_its_hessian() {
    for (x, y) in [(0.7, 1.3), (2.0, -0.5), (1.25, 3.0)] {
        assert_binary(BinOp::Add, x, y, [1.0, 1.0], [[0.0; 2]; 2]);
        assert_binary(BinOp::Sub, x, y, [1.0, -1.0], [[0.0; 2]; 2]);
        assert_binary(BinOp::Mul, x, y, [y, x], [[0.0, 1.0], [1.0, 0.0]]);
        assert_binary(
            BinOp::Div,
            x,
            y,
            [1.0 / y, -x / (y * y)],
            [
                [0.0, -1.0 / (y * y)],
                [-1.0 / (y * y), 2.0 * x / (y * y * y)],
            ],
        );
        // atan2(x, y) = atan(x / y) on y > 0, with r = x² + y².
        let r = x * x + y * y;
        let mixed = (x * x - y * y) / (r * r);
        assert_binary(
            BinOp::Atan2,
            x,
            y,
            [y / r, -x / r],
            [
                [-2.0 * x * y / (r * r), mixed],
                [mixed, 2.0 * x * y / (r * r)],
            ],
        );
        let (hi, lo) = (x.max(y), x.min(y));
        let max_first = if x >= y { 1.0 } else { 0.0 };
        assert_binary(BinOp::Max, hi, lo, [1.0, 0.0], [[0.0; 2]; 2]);
        assert_binary(BinOp::Max, lo, hi, [0.0, 1.0], [[0.0; 2]; 2]);
        assert_binary(
            BinOp::Max,
            x,
            y,
            [max_first, 1.0 - max_first],
            [[0.0; 2]; 2],
        );
        assert_binary(BinOp::Min, lo, hi, [1.0, 0.0], [[0.0; 2]; 2]);
        assert_binary(BinOp::Min, hi, lo, [0.0, 1.0], [[0.0; 2]; 2]);
    }
    // Ints carry no derivative of any order.
    for op in [BinOp::IntDiv, BinOp::Rem] {
        assert_binary(op, 7.0, 2.0, [0.0, 0.0], [[0.0; 2]; 2]);
        assert_binary(op, -7.0, 3.0, [0.0, 0.0], [[0.0; 2]; 2]);
    }
}

#[test]
fn pow_in_both_operands() {
    for (x, y) in [(0.7f64, 1.3f64), (2.0, -0.5), (1.5, 3.0)] {
        let p = x.powf(y);
        let l = x.ln();
        assert_binary(
            BinOp::Pow,
            x,
            y,
            [y * x.powf(y - 1.0), p * l],
            [
                [
                    y * (y - 1.0) * x.powf(y - 2.0),
                    x.powf(y - 1.0) * (1.0 + y * l),
                ],
                [x.powf(y - 1.0) * (1.0 + y * l), p * l * l],
            ],
        );
    }
}

#[test]
fn intensional_choices_hold_at_every_order() {
    // abs'(0) = 0, and abs'' = 0.
    assert_eq!(unary(UnOp::Abs, 0.0), (0.0, 0.0, 0.0));
    assert_eq!(unary(UnOp::Abs, -2.0), (2.0, -1.0, 0.0));
    // Ties of max and min send the derivative to the first operand, at both levels.
    let r = Dual2::binary(BinOp::Max, var(1.0, 1.0, 1.0), var(1.0, 0.0, 0.0));
    assert_eq!((r.v.d, r.d.v, r.d.d), (1.0, 1.0, 0.0));
    let r = Dual2::binary(BinOp::Min, var(1.0, 0.0, 0.0), var(1.0, 1.0, 1.0));
    assert_eq!((r.v.d, r.d.v, r.d.d), (0.0, 0.0, 0.0));
    // pow(x, 2) at x < 0: the exponent's tangent is zero, so log(x) = NaN never enters.
    let two = Dual2::constant(2.0);
    let r = Dual2::binary(BinOp::Pow, var(-3.0, 1.0, 1.0), two);
    assert_eq!((r.v.v, r.v.d, r.d.v, r.d.d), (9.0, -6.0, -6.0, 2.0));
    // pow at x == 0: no derivative in the exponent (not 0 * log 0 = NaN).
    let r = Dual2::binary(BinOp::Pow, var(0.0, 0.0, 0.0), var(3.0, 1.0, 1.0));
    assert_eq!((r.v.v, r.v.d, r.d.v, r.d.d), (0.0, 0.0, 0.0, 0.0));
    let r = Dual2::binary(BinOp::Pow, var(0.0, 1.0, 1.0), Dual2::constant(3.0));
    assert_eq!((r.v.d, r.d.v, r.d.d), (0.0, 0.0, 0.0));
    // A zero tangent contributes nothing even where the derivative is infinite: log at 0,
    // sqrt at 0, and a variable perturbed at one level only.
    for op in [UnOp::Log, UnOp::Sqrt] {
        let r = Dual2::unary(op, var(0.0, 0.0, 0.0));
        assert_eq!((r.v.d, r.d.v, r.d.d), (0.0, 0.0, 0.0), "{op:?}");
        let r = Dual2::unary(op, var(0.0, 0.0, 1.0));
        assert_eq!((r.v.d, r.d.d), (0.0, 0.0), "{op:?}");
        assert_eq!(r.d.v, f64::INFINITY, "{op:?}");
    }
    // Comparisons and branches look at the primal value.
    assert_eq!(var(1.5, 7.0, -3.0).value(), 1.5);
    assert!(Dual2::constant(0.0).is_zero());
    assert!(!var(0.0, 0.0, 1.0).is_zero());
    assert!(!Dual2::new(Dual::new(0.0, 0.0), Dual::new(0.0, 1.0)).is_zero());
}

#[test]
fn perturbations_of_the_two_levels_stay_apart() {
    // d/dx (x * d/dy (x + y)) = 1 at any point: the inner derivative of x + y in y is 1,
    // whatever x's outer perturbation does; confusing the two levels would give 2.
    let (x0, y0) = (0.6, -1.4);
    let x = var(x0, 0.0, 1.0);
    let y = var(y0, 1.0, 0.0);
    let s = Dual2::binary(BinOp::Add, x, y);
    // d/dy (x + y), still carrying the outer perturbation.
    let ds_dy = Dual::new(s.v.d, s.d.d);
    let outer_x = Dual::new(x0, 1.0);
    let r = Dual::binary(BinOp::Mul, outer_x, ds_dy);
    assert_eq!((r.v, r.d), (x0, 1.0));
}
