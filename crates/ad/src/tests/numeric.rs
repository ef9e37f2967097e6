//! Gradients agree with the oracles: forward mode (to rounding) and central finite
//! differences (to the step's accuracy), for both pipelines.

use unfad_interp::{eval_func, fd_gradient, forward_gradient, Value};

use super::{args, assert_well_formed, eval_reverse, load};
use crate::{gradient, gradient_via_unf, reverse, reverse_via_unf};

fn close(a: f64, b: f64, tol: f64) -> bool {
    a == b || (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
}

/// Differentiate `src` with respect to every parameter (and to each one alone) with both
/// pipelines, and compare with the oracles at `input`.
fn check(src: &str, input: &str) {
    let (mut prog, func) = load(src);
    let a = args(&prog.arena, &func, input);
    let (v0, g0) = forward_gradient(&prog.arena, &func, &a).unwrap();
    let fd = fd_gradient(&prog.arena, &func, &a, 1e-6).unwrap();
    for (i, (g, d)) in g0.iter().zip(&fd).enumerate() {
        for (x, y) in g.iter().zip(d) {
            assert!(
                close(*x, *y, 1e-5),
                "oracles disagree on parameter {i}: {x} vs {y}"
            );
        }
    }
    let all: Vec<usize> = (0..func.params.len()).collect();
    let mut subsets = vec![all.clone()];
    subsets.extend(all.iter().rev().map(|&i| vec![i]));
    for wrt in subsets {
        for (name, pipeline) in [
            ("direct", reverse as fn(&mut _, &_, &_) -> _),
            ("via UNF", reverse_via_unf),
        ] {
            let rev = pipeline(&mut prog.arena, &func, &wrt).unwrap_or_else(|e| panic!("{e}"));
            assert_well_formed(&mut prog.arena, &rev);
            let (v, g) = eval_reverse(&prog.arena, &rev, &a);
            assert!(close(v, v0, 1e-12), "{name}: value {v} vs {v0}");
            for (k, &i) in wrt.iter().enumerate() {
                assert_eq!(g[k].len(), g0[i].len());
                for (x, y) in g[k].iter().zip(&g0[i]) {
                    assert!(
                        close(*x, *y, 1e-12),
                        "{name}: gradient of parameter {i}: {:?} vs forward {:?}\n{src}",
                        g[k],
                        g0[i]
                    );
                }
            }
        }
        for (name, pipeline) in [
            ("direct", gradient as fn(&mut _, &_, &_) -> _),
            ("via UNF", gradient_via_unf),
        ] {
            let grad = pipeline(&mut prog.arena, &func, &wrt).unwrap_or_else(|e| panic!("{e}"));
            assert_well_formed(&mut prog.arena, &grad);
            let out = eval_func(&prog.arena, &grad, &a).unwrap();
            let flat = match (&out, wrt.len()) {
                (Value::Tuple(items), k) if k > 1 => {
                    items.iter().flat_map(|g| g.leaves()).collect()
                }
                _ => out.leaves(),
            };
            let expected: Vec<f64> = wrt.iter().flat_map(|&i| g0[i].clone()).collect();
            assert_eq!(flat.len(), expected.len());
            for (x, y) in flat.iter().zip(&expected) {
                assert!(
                    close(*x, *y, 1e-12),
                    "{name} ∇: {flat:?} vs {expected:?}\n{src}"
                );
            }
        }
    }
}

#[test]
fn introduction_term() {
    check(
        "def f(x1: real, x2: real, x3: real): real = let w1 = x1 * x2 in let w2 = w1 * x1 in w2",
        r#"{"x1": 1.5, "x2": -0.7, "x3": 2}"#,
    );
}

#[test]
fn product_of_an_array() {
    for a in ["[]", "[2.5]", "[1.5, -2, 0.5, 3, -0.25]"] {
        check(
            "def f(A: [n]real) = reduce * 1 A",
            &format!(r#"{{"A": {a}}}"#),
        );
    }
}
