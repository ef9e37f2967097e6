//! Gradients agree with the oracles: forward mode (to rounding) and central finite
//! differences (to the step's accuracy), for both pipelines.

use unfad_interp::{eval_func, fd_gradient, forward_gradient, Value};

use unfad_test_support::{close, load};

use super::{args, assert_well_formed, eval_reverse, Pipeline};
use crate::{gradient, gradient_via_unf, reverse, reverse_via_unf};

/// Differentiate `src` with respect to every parameter (and to each one alone) with both
/// pipelines, and compare with the oracles at `input`.
fn check(src: &str, input: &str) {
    check_with(
        src,
        input,
        &[("direct", reverse), ("via UNF", reverse_via_unf)],
        &[("direct", gradient), ("via UNF", gradient_via_unf)],
    );
}

/// Differentiate `src` with respect to every parameter and to each one alone, by the
/// value-and-gradient pipelines `reverses` and the gradient pipelines `gradients`, and
/// compare with forward mode at `input` (finite differences checked against it first).
fn check_with(
    src: &str,
    input: &str,
    reverses: &[(&str, Pipeline)],
    gradients: &[(&str, Pipeline)],
) {
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
        for &(name, pipeline) in reverses {
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
        for &(name, pipeline) in gradients {
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

#[test]
fn every_unary_operator() {
    use unfad_syntax::UnOp;
    for op in UnOp::ALL {
        // Inside every domain: asin/acos need |u| < 1, log and sqrt u > 0.
        let arg = match op {
            UnOp::Asin | UnOp::Acos => "0.3 * sin(x)",
            UnOp::Log | UnOp::Sqrt | UnOp::Log1p => "x * x + 0.5",
            _ => "x * y",
        };
        let call = if op == UnOp::Neg {
            format!("-({arg})")
        } else {
            format!("{}({arg})", op.name())
        };
        let src = format!("def f(x: real, y: real) = {call} * y");
        check(&src, r#"{"x": 0.7, "y": -1.3}"#);
        check(&src, r#"{"x": -0.4, "y": 0.9}"#);
    }
}

#[test]
fn every_binary_operator() {
    use unfad_syntax::BinOp;
    for op in BinOp::ALL {
        let call = |l: &str, r: &str| {
            if op.is_infix() {
                format!("({l} {} {r})", op.name())
            } else {
                format!("{}({l}, {r})", op.name())
            }
        };
        // pow needs a positive base to be differentiable in both operands.
        let (left, other) = if op == BinOp::Pow {
            ("x * x + 0.5", "exp(y)")
        } else {
            ("x", "sin(y)")
        };
        let src = format!(
            "def f(x: real, y: real) = {} + {}",
            call(left, "y"),
            call(other, left)
        );
        check(&src, r#"{"x": 0.7, "y": -1.3}"#);
        check(&src, r#"{"x": -0.4, "y": 0.9}"#);
    }
}

#[test]
fn non_smooth_points_follow_the_oracle() {
    // abs'(0) = 0, max/min give ties to the first operand, pow's exponent at base 0.
    check(
        "def f(x: real, y: real) = abs(x) + max(x, y) + min(y, x)",
        r#"{"x": 0, "y": 0}"#,
    );
    check("def f(x: real, y: real) = pow(x, y)", r#"{"x": 0, "y": 2}"#);
}

#[test]
fn variables_used_many_times_and_not_at_all() {
    check(
        "def f(x: real, y: real, z: real) = x * x * x + x / (y * y + 1)",
        r#"{"x": 1.1, "y": 0.3, "z": 5}"#,
    );
    check("def f(x: real) = 3", r#"{"x": 1}"#);
}

#[test]
fn lets_tuples_and_projections() {
    check(
        "def f(x: real, y: real) = let p = (x * y, sin(x), y) in fst p * p.2 + snd p",
        r#"{"x": 0.5, "y": 2}"#,
    );
    check(
        "def f(p: (real, real), y: real) = let (a, b) = p in let (c, d) = (b, a * y) in c * d + a",
        r#"{"p": [1.5, -2], "y": 0.25}"#,
    );
    check(
        "def f(p: (real, (real, real))) = fst p * fst (snd p) + snd (snd p)",
        r#"{"p": [1, [2, 3]]}"#,
    );
}

/// Check `src` with arrays `A` and `B` of sizes 0, 1 and 5 (and the `extra` inputs).
fn check_arrays(src: &str, extra: &str) {
    let a = [0.5, -1.25, 2.0, 0.75, -0.3];
    let b = [1.5, 0.25, -0.8, 1.1, -2.0];
    for n in [0, 1, 5] {
        let input = format!(r#"{{"A": {:?}, "B": {:?}{extra}}}"#, &a[..n], &b[..n]);
        check(src, &input);
    }
}

#[test]
fn map2_and_reduce_at_sizes_zero_one_and_many() {
    check_arrays("def f(A: [n]real, B: [n]real) = dot(A, B)", "");
    check_arrays(
        "def f(A: [n]real, B: [n]real) = sum(map2 (a, b. sin(a) * b) A B)",
        "",
    );
    check_arrays(
        "def f(A: [n]real, B: [n]real) = reduce max (-100) (map2 * A B)",
        "",
    );
    check_arrays(
        "def f(A: [n]real, B: [n]real) = reduce min 100 A + reduce + 0 B",
        "",
    );
    check_arrays(
        "def f(A: [n]real, B: [n]real) = reduce (a, b. a + b + a * b) 0 (map2 - A B)",
        "",
    );
}

#[test]
fn reduce_with_a_unit_that_depends_on_the_inputs() {
    check_arrays(
        "def f(A: [n]real, B: [n]real, x: real) = reduce * (x * x) A",
        r#", "x": 1.5"#,
    );
}

#[test]
fn map2_with_free_variables_of_the_context() {
    check_arrays(
        "def f(A: [n]real, B: [n]real, x: real) = let w = x * x in sum(map2 (a, b. a * w + sin(x) * b) A B)",
        r#", "x": 0.8"#,
    );
    check_arrays(
        "def f(A: [n]real, B: [n]real, p: (real, real)) = sum(map2 (a, b. a * fst p + b * snd p * fst p) A B)",
        r#", "p": [0.8, -1.5]"#,
    );
}

#[test]
fn map2_whose_function_uses_an_array_of_the_context() {
    check_arrays(
        "def f(A: [n]real, B: [n]real) = sum(map2 (a, b. a * sum(B) + b * prod(A)) A B)",
        "",
    );
    check_arrays(
        "def f(A: [n]real, B: [n]real, x: real) = sum(map2 (a, b. reduce + 0 (map2 (c, d. c * a + x * d) B A)) A B)",
        r#", "x": 0.6"#,
    );
}

#[test]
fn nested_array_operations_and_let_bound_arrays() {
    check_arrays(
        "def f(A: [n]real, B: [n]real) = let C = map2 * A B in let D = map2 + C A in dot(C, D) + prod(map2 (a, b. a - b) D C)",
        "",
    );
    check_arrays(
        "def f(A: [n]real, B: [n]real) = sum(map2 (a, b. reduce * 1 B * a) (map2 * A A) B)",
        "",
    );
}

#[test]
fn constant_array_operations() {
    check_arrays(
        "def f(A: [n]real, B: [n]real) = len(A) * sum(A) + dot(zeros_like(A), B) + dot(ones_like(B), A)",
        "",
    );
}

#[test]
fn tuples_holding_arrays() {
    check(
        "def f(p: (real, [n]real)) = sum(snd p) * fst p + len(snd p)",
        r#"{"p": [1.5, [0.5, -2, 3]]}"#,
    );
    check(
        "def f(p: (real, [n]real), x: real) = let (c, V) = p in prod(map2 (a, b. a * c + b * x) V V)",
        r#"{"p": [0.5, [1.5, -1, 2]], "x": -0.75}"#,
    );
    check(
        "def f(x: real, y: real) = fst (zeros_like((x, y))) + snd (ones_like((x, y))) * x",
        r#"{"x": 0.5, "y": 2}"#,
    );
}

#[test]
fn map2_capturing_a_tuple_that_holds_an_array() {
    check_arrays(
        "def f(A: [n]real, B: [n]real, x: real) = let p = (B, x) in sum(map2 (a, b. a * sum(fst p) + snd p * b) A B)",
        r#", "x": 1.25"#,
    );
}

#[test]
fn literal_sizes() {
    check(
        "def f(A: [3]real) = reduce * 1 A",
        r#"{"A": [1.5, -2, 0.5]}"#,
    );
    check("def f(A: [1]real) = reduce * 1 A", r#"{"A": [1.5]}"#);
    check(
        "def f(A: [0]real, x: real) = reduce * x A",
        r#"{"A": [], "x": 2}"#,
    );
}

/// [`check`] for programs outside UNF's core Source (`foldl`, scans, indexing): the direct
/// macro and its weakened continuations (the route `compile_grad` takes).
fn check_direct(src: &str, input: &str) {
    check_with(
        src,
        input,
        &[("direct", reverse), ("weakened", crate::reverse_weakened)],
        &[],
    );
}

/// Folds and scans whose step captures arrays and runs a loop of its own, or reads them
/// at positions of its element only (`W[t]`), take the joint backward fold
/// (`folds::joint_backward`): the accumulator's adjoint, the elements' and
/// the captured arrays' carried together, from the last step to the first. Over positions
/// and over rows, the captured arrays read whole and by index, at 0, 1 and several steps.
#[test]
fn folds_whose_steps_capture_arrays_and_loop() {
    let programs = [
        "def f(W: [k][m]real, X: [n][m]real, h0: [m]real) = \
         reduce + 0 (foldl (h, t. map2 (v, w. tanh(v * w + X[t][2])) h W[t % len(W)]) h0 (iota len(X)))",
        "def f(W: [k][m]real, X: [n][m]real, h0: [m]real) = \
         reduce + 0 (foldl (h, t. foldl (g, w. map2 (v, wi. tanh(v * wi + X[t][0])) g w) h W) h0 (iota len(X)))",
        "def f(W: [k][m]real, X: [n][m]real, h0: [m]real) = \
         let L = foldl (acc, t. let S = scanl (g, w. map2 (v, wi. sigmoid(v * wi) + X[t][1]) g w) acc W in \
           S[len(W)]) h0 (iota len(X)) in reduce + 0 (map (v. v * v) L)",
        "def f(W: [k][m]real, X: [n][m]real, h0: [m]real) = \
         reduce + 0 (foldl (h, x. foldl (g, w. map2 (a, b. tanh(a * b)) g w) (map2 + h x) W) h0 X)",
        "def f(W: [k][m]real, X: [n][m]real, h0: [m]real) = \
         let S = scanl (h, x. foldl (g, w. map2 (a, b. sin(a * b + x[0])) g w) h W) h0 X in \
         reduce + 0 (map (h. reduce + 0 (map2 * h h)) S)",
    ];
    let w = "[[0.5, -0.4, 0.3], [0.9, 0.2, -0.7]]";
    let rows = [
        "[]",
        "[[0.1, 0.2, -0.3]]",
        "[[0.1, 0.2, -0.3], [0.6, -0.5, 0.4], [-0.2, 0.8, 0.1]]",
    ];
    for src in programs {
        for x in rows {
            let input = format!(r#"{{"W": {w}, "X": {x}, "h0": [0.3, -0.6, 0.9]}}"#);
            check_direct(src, &input);
        }
    }
}
