//! Helpers shared by unfad's tests (a dev-dependency only): loading a program and inlining
//! its entry point ([`load`]), and comparing floating-point results up to a tolerance
//! ([`close`], and [`close_json`] / [`close_json_where_finite`] for results the interpreter
//! wrote as JSON).
//!
//! One definition each, so every test means the same thing by "close".

#![forbid(unsafe_code)]

use serde_json::Value as Json;
use unfad_syntax::{Func, Program};

/// Load the program `src` and inline its entry point (the last definition).
///
/// Panics with the error and the source text if the program does not load.
pub fn load(src: &str) -> (Program, Func) {
    let mut prog = Program::load(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let entry = prog
        .entry(None)
        .unwrap_or_else(|e| panic!("no entry point: {e}\n{src}"));
    let func = prog
        .inline(entry)
        .unwrap_or_else(|e| panic!("the entry point does not inline: {e}\n{src}"));
    (prog, func)
}

/// Whether `a` and `b` agree to the relative `tolerance`: both are finite and
/// `|a - b| <= tolerance * max(|a|, |b|, 1)` (relative for large values, absolute below 1),
/// or they are equal (equal infinities included), or both are NaN (two computations of the
/// same undefined value agree). An infinity agrees with nothing but itself.
///
/// Typical tolerances: `1e-12` for two computations that round alike, `1e-10` against
/// forward mode (whose sums run in another order), `1e-5` against finite differences.
pub fn close(a: f64, b: f64, tolerance: f64) -> bool {
    a == b
        || (a.is_finite()
            && b.is_finite()
            && (a - b).abs() <= tolerance * a.abs().max(b.abs()).max(1.0))
        || (a.is_nan() && b.is_nan())
}

/// [`close`] on two results written as JSON (`unfad_interp::value_to_json`): numbers are
/// compared with [`close`], arrays element by element, anything else (booleans, the strings
/// that stand for non-finite numbers) must be equal.
pub fn close_json(a: &Json, b: &Json, tolerance: f64) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => close(
            x.as_f64().expect("a JSON number is an f64"),
            y.as_f64().expect("a JSON number is an f64"),
            tolerance,
        ),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| close_json(p, q, tolerance))
        }
        _ => a == b,
    }
}

/// [`close_json`], except that a non-finite number (written as a string) on either side
/// agrees with anything: optimizations such as `0 * e -> 0` follow the smooth semantics
/// of real numbers, not IEEE arithmetic, so they may turn a NaN or an infinity into a
/// number.
pub fn close_json_where_finite(a: &Json, b: &Json, tolerance: f64) -> bool {
    match (a, b) {
        (Json::String(_), _) | (_, Json::String(_)) => true,
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(p, q)| close_json_where_finite(p, q, tolerance))
        }
        _ => close_json(a, b, tolerance),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_is_relative_above_one_and_absolute_below() {
        assert!(close(1e6, 1e6 + 1e-5, 1e-10));
        assert!(!close(1e6, 1e6 + 1e-3, 1e-10));
        assert!(close(1e-20, 2e-20, 1e-10));
        assert!(!close(0.0, 1e-9, 1e-10));
    }

    #[test]
    fn close_accepts_equal_infinities_and_two_nans() {
        assert!(close(f64::INFINITY, f64::INFINITY, 1e-12));
        assert!(!close(f64::INFINITY, f64::NEG_INFINITY, 1e-12));
        assert!(close(f64::NAN, f64::NAN, 1e-12));
        assert!(!close(f64::NAN, 1.0, 1e-12));
        assert!(!close(f64::INFINITY, 1.0, 1e-12));
    }

    #[test]
    fn json_comparison_recurses_into_arrays() {
        let a = serde_json::json!([1.0, [2.0, "NaN"]]);
        let b = serde_json::json!([1.0, [2.0 + 1e-14, "NaN"]]);
        let c = serde_json::json!([1.0, [2.0, 3.0]]);
        assert!(close_json(&a, &b, 1e-12));
        assert!(!close_json(&a, &c, 1e-12));
        assert!(close_json_where_finite(&a, &c, 1e-12));
        assert!(!close_json_where_finite(
            &a,
            &serde_json::json!([1.0]),
            1e-12
        ));
    }

    #[test]
    fn load_inlines_the_last_definition() {
        let (_, func) = load("def g(x: real) = x * 2\ndef f(x: real, y: real) = g(x) + y");
        assert_eq!(func.params.len(), 2);
    }
}
