//! Every entry of the derivative table against central finite differences, and bit for bit
//! against the forward-mode oracle's own formulas (`unfad_interp::Dual`).

use unfad_interp::{Dual, Interp, Scalar, Value};
use unfad_syntax::{Arena, BinOp, ExprId, Partial, Partial2, Type, UnOp, Var};

use crate::derivatives::{binary_partials, unary_partial};

fn eval(a: &Arena, e: ExprId, env: &[(Var, f64)]) -> f64 {
    let mut it = Interp::<f64>::new(a);
    for &(v, x) in env {
        it.bind(v, Value::Real(x));
    }
    it.eval(e).unwrap().as_real().unwrap()
}

/// Central difference of `f` at `x`, with a relative step.
fn central(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    let h = 1e-6 * x.abs().max(1.0);
    (f(x + h) - f(x - h)) / (2.0 * h)
}

fn assert_close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-6 * want.abs().max(1.0),
        "{what}: table {got}, finite differences {want}"
    );
}

/// Points inside the domain of `op`, away from its non-smooth points.
fn unary_points(op: UnOp) -> &'static [f64] {
    match op {
        UnOp::Log | UnOp::Sqrt => &[0.3, 1.0, 4.5],
        UnOp::Asin | UnOp::Acos => &[-0.7, 0.1, 0.6],
        UnOp::Log1p => &[-0.5, 0.2, 3.0],
        UnOp::Tan => &[-1.0, 0.3, 1.2],
        _ => &[-1.7, -0.2, 0.4, 2.3],
    }
}

#[test]
fn unary_entries() {
    for op in UnOp::ALL {
        let mut a = Arena::new();
        let x = a.fresh_var("x", Some(Type::Real));
        let ex = a.var(x);
        let d = unary_partial(&mut a, op, ex);
        for &p in unary_points(op) {
            let got = eval(&a, d, &[(x, p)]);
            let what = format!("{}'({p})", op.name());
            assert_close(got, central(|t| op.eval(t), p), &what);
            let dual = Dual::unary(op, Dual::new(p, 1.0)).d;
            assert_eq!(
                got.to_bits(),
                dual.to_bits(),
                "{what}: {got} vs oracle {dual}"
            );
        }
    }
}

/// The derivatives of the derivative primitives (`UnOp::Partial`), which second derivatives
/// meet: against central differences of the primitive's definition, and against the
/// oracle's independently written formulas to rounding.
#[test]
fn derivative_primitive_entries() {
    for p in Partial::ALL {
        let op = UnOp::Partial(p);
        let mut a = Arena::new();
        let x = a.fresh_var("x", Some(Type::Real));
        let ex = a.var(x);
        let d = unary_partial(&mut a, op, ex);
        for u in [-0.7, -0.2, 0.35, 0.8] {
            let got = eval(&a, d, &[(x, u)]);
            let what = format!("{}'({u})", p.name());
            assert_close(got, central(|t| p.eval(t), u), &what);
            let dual = Dual::unary(op, Dual::new(u, 1.0)).d;
            assert!(
                (got - dual).abs() <= 1e-14 * dual.abs().max(1.0),
                "{what}: {got} vs oracle {dual}"
            );
        }
    }
}

/// The partials of the binary derivative primitives (`BinOp::Partial`), likewise.
#[test]
fn binary_derivative_primitive_entries() {
    for p in Partial2::ALL {
        let op = BinOp::Partial(p);
        let mut a = Arena::new();
        let x = a.fresh_var("x", Some(Type::Real));
        let y = a.fresh_var("y", Some(Type::Real));
        let (ex, ey) = (a.var(x), a.var(y));
        let (d1, d2) = binary_partials(&mut a, op, ex, ey);
        for (u, v) in [(0.5, 2.0), (1.7, -0.4), (3.0, 0.5), (2.5, 1.5)] {
            let env = [(x, u), (y, v)];
            let (g1, g2) = (eval(&a, d1, &env), eval(&a, d2, &env));
            let what = format!("{}({u}, {v})", p.name());
            assert_close(g1, central(|t| p.eval(t, v), u), &format!("∂1 {what}"));
            assert_close(g2, central(|t| p.eval(u, t), v), &format!("∂2 {what}"));
            let o1 = Dual::binary(op, Dual::new(u, 1.0), Dual::new(v, 0.0)).d;
            let o2 = Dual::binary(op, Dual::new(u, 0.0), Dual::new(v, 1.0)).d;
            for (g, o) in [(g1, o1), (g2, o2)] {
                assert!(
                    (g - o).abs() <= 1e-13 * o.abs().max(1.0),
                    "{what}: {g} vs oracle {o}"
                );
            }
        }
    }
}

fn binary_points(op: BinOp) -> &'static [(f64, f64)] {
    match op {
        BinOp::Pow => &[(0.5, 2.0), (1.7, -0.4), (3.0, 0.5)],
        BinOp::Div => &[(1.0, 2.0), (-0.3, 0.7), (2.5, -1.5)],
        _ => &[(1.0, 2.0), (-0.3, 0.7), (2.5, -1.5), (-1.2, -2.0)],
    }
}

#[test]
fn binary_entries() {
    for op in BinOp::ALL {
        let mut a = Arena::new();
        let x = a.fresh_var("x", Some(Type::Real));
        let y = a.fresh_var("y", Some(Type::Real));
        let (ex, ey) = (a.var(x), a.var(y));
        let (d1, d2) = binary_partials(&mut a, op, ex, ey);
        for &(p, q) in binary_points(op) {
            let env = [(x, p), (y, q)];
            let (g1, g2) = (eval(&a, d1, &env), eval(&a, d2, &env));
            let what = format!("{}({p}, {q})", op.name());
            assert_close(g1, central(|t| op.eval(t, q), p), &format!("∂1 {what}"));
            assert_close(g2, central(|t| op.eval(p, t), q), &format!("∂2 {what}"));
            let o1 = Dual::binary(op, Dual::new(p, 1.0), Dual::new(q, 0.0)).d;
            let o2 = Dual::binary(op, Dual::new(p, 0.0), Dual::new(q, 1.0)).d;
            assert_eq!(g1.to_bits(), o1.to_bits(), "∂1 {what}: {g1} vs oracle {o1}");
            assert_eq!(g2.to_bits(), o2.to_bits(), "∂2 {what}: {g2} vs oracle {o2}");
        }
    }
}

/// The intensional choices at non-differentiable points match the oracle.
#[test]
fn non_smooth_points() {
    let mut a = Arena::new();
    let x = a.fresh_var("x", Some(Type::Real));
    let y = a.fresh_var("y", Some(Type::Real));
    let (ex, ey) = (a.var(x), a.var(y));
    let abs = unary_partial(&mut a, UnOp::Abs, ex);
    for p in [-2.0, 0.0, 3.0] {
        let want = Dual::unary(UnOp::Abs, Dual::new(p, 1.0)).d;
        assert_eq!(eval(&a, abs, &[(x, p)]), want);
    }
    assert_eq!(eval(&a, abs, &[(x, 0.0)]), 0.0);
    for op in [BinOp::Max, BinOp::Min, BinOp::Pow] {
        let (d1, d2) = binary_partials(&mut a, op, ex, ey);
        for (p, q) in [(1.0, 1.0), (0.0, 2.0), (0.0, 0.5)] {
            let env = [(x, p), (y, q)];
            let o1 = Dual::binary(op, Dual::new(p, 1.0), Dual::new(q, 0.0)).d;
            let o2 = Dual::binary(op, Dual::new(p, 0.0), Dual::new(q, 1.0)).d;
            assert_eq!(eval(&a, d1, &env), o1, "∂1 {}({p}, {q})", op.name());
            assert_eq!(eval(&a, d2, &env), o2, "∂2 {}({p}, {q})", op.name());
        }
    }
}
