//! The adjoints of `reduce max` and `reduce min` (their own rule, `crate::folds`) against
//! forward mode, which gives ties to the accumulator, at the points where the general rule
//! and the closed form could part: ties between elements and with the unit, signed zeros,
//! empty arrays, and NaN in an element or in the unit (the derivative then goes to the
//! last step).

use unfad_interp::forward_gradient;

use super::{args, assert_well_formed, eval_reverse, load, Pipeline};
use crate::{reverse, reverse_via_unf, AdError};

/// Equal, or both NaN.
fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// Both pipelines give forward mode's value and gradient at every input, exactly.
fn check(src: &str, inputs: &[&str]) {
    let (mut prog, func) = load(src);
    let all: Vec<usize> = (0..func.params.len()).collect();
    for (name, pipeline) in [
        ("direct", reverse as Pipeline),
        ("via UNF", reverse_via_unf),
    ] {
        let rev = match pipeline(&mut prog.arena, &func, &all) {
            Ok(rev) => rev,
            // `foldl` is beyond the paper's core, which the UNF pipeline covers.
            Err(AdError::Unsupported { .. }) if name == "via UNF" => continue,
            Err(e) => panic!("{name}: {e}"),
        };
        assert_well_formed(&mut prog.arena, &rev);
        for input in inputs {
            let a = args(&prog.arena, &func, input);
            let (v0, g0) = forward_gradient(&prog.arena, &func, &a).unwrap();
            let (v, g) = eval_reverse(&prog.arena, &rev, &a);
            assert!(same(v, v0), "{name} at {input}: value {v} vs {v0}\n{src}");
            for (gi, fi) in g.iter().zip(&g0) {
                assert!(
                    gi.len() == fi.len() && gi.iter().zip(fi).all(|(x, y)| same(*x, *y)),
                    "{name} at {input}: {gi:?} vs forward {fi:?}\n{src}"
                );
            }
        }
    }
}

#[test]
fn ties_go_to_the_first_element_or_to_the_unit() {
    let inputs = [
        r#"{"A": [3, 1, 3, 2], "u": -1}"#,
        r#"{"A": [2, 2, 2], "u": -1}"#,
        r#"{"A": [-5, -7], "u": -1}"#,
        r#"{"A": [-1, -2, -1], "u": -1}"#,
        r#"{"A": [], "u": 4}"#,
        r#"{"A": [7], "u": 4}"#,
    ];
    check("def f(A: [n]real, u: real) = 2 * reduce max u A", &inputs);
    check(
        "def f(A: [n]real, u: real) = 2 * reduce min (-u) A",
        &inputs,
    );
    check(
        "def f(A: [n]real, u: real) = foldl (acc, x. max(acc, x)) u (map (a. a * u) A)",
        &inputs,
    );
}

#[test]
fn signed_zeros_compare_equal() {
    let inputs = [
        r#"{"A": [-0.0, 0.0], "u": -1}"#,
        r#"{"A": [0.0, -0.0], "u": -1}"#,
        r#"{"A": [0.0, -0.0], "u": -0.0}"#,
        r#"{"A": [-0.0, 0.0], "u": 0.0}"#,
    ];
    check("def f(A: [n]real, u: real) = 3 * reduce max u A", &inputs);
    check("def f(A: [n]real, u: real) = 3 * reduce min u A", &inputs);
}

#[test]
fn nan_passes_the_derivative_to_the_last_step() {
    // `log` of a negative element is NaN in the middle of the array; the gradients with
    // respect to `A` stay finite.
    let inputs = [
        r#"{"A": [1, 5, 2], "B": [1, -1, 1], "u": -1}"#,
        r#"{"A": [1, 5, 2], "B": [1, 1, -1], "u": -1}"#,
        r#"{"A": [1, 5, 2], "B": [-1, 1, 1], "u": -1}"#,
        r#"{"A": [1, 5, 2], "B": [1, 1, 1], "u": -1}"#,
        r#"{"A": [], "B": [], "u": -1}"#,
    ];
    check(
        "def f(A: [n]real, B: [n]real, u: real) = 2 * reduce max u (map2 (a, b. a + log(b)) A B)",
        &inputs,
    );
    check(
        "def f(A: [n]real, B: [n]real, u: real) = 2 * reduce min u (map2 (a, b. a + log(b)) A B)",
        &inputs,
    );
    // A NaN unit: every step passes the derivative on.
    check(
        "def f(A: [n]real, B: [n]real, u: real) = 2 * reduce max (log(u)) (map2 * A B)",
        &inputs,
    );
}
