//! Deep terms are legal input: no stack overflow, and the right gradient.
//!
//! Evaluation stays at moderate depths: the interpreter drops a chain of closures
//! recursively, and the continuations of a deep term form one (an `unfad-interp` limit).
//! The output of both pipelines grows with the product of the depth and the context size
//! (every continuation takes the whole context, as in the paper), so deep terms whose
//! context grows at every level are quadratic.

use unfad_interp::{forward_gradient, Value};

use super::{assert_well_formed, eval_reverse, load, Pipeline};
use crate::{reverse, reverse_via_unf};

const PIPELINES: [Pipeline; 2] = [reverse, reverse_via_unf];

fn transform(src: &str) {
    let (mut prog, func) = load(src);
    for pipeline in PIPELINES {
        let rev = pipeline(&mut prog.arena, &func, &[0]).unwrap();
        assert_well_formed(&mut prog.arena, &rev);
    }
}

fn check(src: &str, x: f64) {
    let (mut prog, func) = load(src);
    let args = [Value::Real(x)];
    let (v0, g0) = forward_gradient(&prog.arena, &func, &args).unwrap();
    for pipeline in PIPELINES {
        let rev = pipeline(&mut prog.arena, &func, &[0]).unwrap();
        assert_well_formed(&mut prog.arena, &rev);
        let (v, g) = eval_reverse(&prog.arena, &rev, &args);
        assert!((v - v0).abs() <= 1e-12 * v0.abs().max(1.0));
        assert!((g[0][0] - g0[0][0]).abs() <= 1e-12 * g0[0][0].abs().max(1.0));
    }
}

/// `((x * 0.999 + x) * 0.999 + x) ...`: the context stays small.
fn left_nested(n: usize) -> String {
    format!(
        "def f(x: real) = {}x{}",
        "(".repeat(n),
        " * 0.999 + x)".repeat(n)
    )
}

/// `sin(0.5 * sin(0.5 * ...))`: every level adds its left operand to the context.
fn right_nested(n: usize) -> String {
    format!(
        "def f(x: real) = {}x{}",
        "sin(0.5 * ".repeat(n),
        ")".repeat(n)
    )
}

#[test]
fn deeply_nested_expressions() {
    transform(&left_nested(5000));
    check(&left_nested(300), 0.7);
    check(&right_nested(150), 0.7);
}

#[test]
fn long_let_chains() {
    let n = 120;
    let mut src = String::from("def f(x: real) =\n  let w0 = x in\n");
    for i in 1..=n {
        src.push_str(&format!("  let w{i} = w{} * 0.99 + sin(x) in\n", i - 1));
    }
    src.push_str(&format!("  w{n}\n"));
    check(&src, 0.3);
}
