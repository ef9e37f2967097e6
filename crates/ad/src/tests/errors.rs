//! What reverse mode rejects, and how: the message, and the position the caller reports.
//! Requests are rejected by every entry point alike; constructs beyond the paper's core
//! Source by the UNF pipeline only (the paper gives UNF rules for the core).

use expect_test::{expect, Expect};
use unfad_syntax::ErrorKind;

use super::load;
use crate::{gradient, gradient_via_unf, reverse, reverse_via_unf, AdError};

/// The error of every entry point on `src` (with respect to `wrt`, or to every
/// parameter), with its position as the caller shows it.
fn check_wrt(src: &str, wrt: Option<&[usize]>, expect: Expect) {
    let (mut prog, func) = load(src);
    let all: Vec<usize> = (0..func.params.len()).collect();
    let wrt = wrt.unwrap_or(&all);
    let mut messages = Vec::new();
    for f in [reverse, gradient, reverse_via_unf, gradient_via_unf] {
        let err = match f(&mut prog.arena, &func, wrt) {
            Ok(_) => panic!("accepted: {src}"),
            Err(e) => e,
        };
        let text = match err.span() {
            Some(span) => prog
                .error_at(ErrorKind::Unsupported, span, err.to_string())
                .to_string(),
            None => err.to_string(),
        };
        assert!(!matches!(err, AdError::Internal(_)), "{text}");
        messages.push(text);
    }
    assert!(messages.iter().all(|m| *m == messages[0]), "{messages:#?}");
    expect.assert_eq(&messages[0]);
}

fn check(src: &str, expect: Expect) {
    check_wrt(src, None, expect)
}

/// The direct macro differentiates `src` (with respect to every parameter); the UNF
/// pipeline, which has rules for the paper's core Source only, rejects it with the same
/// error from both of its entry points, positioned in the source.
fn check_unf(src: &str, expect: Expect) {
    let (mut prog, func) = load(src);
    let all: Vec<usize> = (0..func.params.len()).collect();
    for f in [reverse, gradient] {
        if let Err(e) = f(&mut prog.arena, &func, &all) {
            panic!("the direct macro rejects it: {e}\n{src}");
        }
    }
    let mut messages = Vec::new();
    for f in [reverse_via_unf, gradient_via_unf] {
        let err = match f(&mut prog.arena, &func, &all) {
            Ok(_) => panic!("accepted via UNF: {src}"),
            Err(e) => e,
        };
        let span = err.span().expect("a position");
        messages.push(
            prog.error_at(ErrorKind::Unsupported, span, err.to_string())
                .to_string(),
        );
    }
    assert_eq!(messages[0], messages[1]);
    expect.assert_eq(&messages[0]);
}

#[test]
fn conditionals() {
    check_unf(
        "def f(x: real) =\n  if x > 0 then x else -x",
        expect!["unsupported at line 2, column 3: the UNF pipeline does not support `if` (the paper gives UNF rules for its core Source only); the direct macro supports it"],
    );
}

#[test]
fn map() {
    check_unf("def f(A: [n]real) = sum(map (a. a * a) A)", expect!["unsupported at line 1, column 25: the UNF pipeline does not support `map` (the paper gives UNF rules for its core Source only); the direct macro supports it"]);
}

#[test]
fn foldl() {
    check_unf("def f(A: [n]real) = foldl (acc, a. acc * a) 1 A", expect!["unsupported at line 1, column 21: the UNF pipeline does not support `foldl` (the paper gives UNF rules for its core Source only); the direct macro supports it"]);
}

#[test]
fn scans_in_source() {
    check_unf("def f(A: [n]real) = sum(scanl + 0 A)", expect!["unsupported at line 1, column 25: the UNF pipeline does not support `scanl` (the paper gives UNF rules for its core Source only); the direct macro supports it"]);
}

#[test]
fn array_literals() {
    check_unf("def f(x: real) = sum([x, x])", expect!["unsupported at line 1, column 22: the UNF pipeline does not support array literals (the paper gives UNF rules for its core Source only); the direct macro supports it"]);
}

#[test]
fn free_variables_in_reduce() {
    check_unf(
        "def f(A: [n]real, w: real) = reduce (a, b. a + b * w) 0 A",
        expect!["unsupported at line 1, column 30: the function of `reduce` uses `w` from the enclosing scope; the UNF pipeline supports only closed `reduce` functions (the paper's UNF rule); the direct macro supports it"],
    );
}

#[test]
fn map2_returning_tuples() {
    check_unf(
        "def f(A: [n]real) = let P = map2 (a, b. (a, b)) A A in 1",
        expect!["unsupported at line 1, column 29: the UNF pipeline supports `map2` functions returning reals only (the paper's UNF rules), this one returns `(real, real)`; the direct macro supports it"],
    );
}

#[test]
fn arrays_of_arrays() {
    check_unf(
        "def f(M: [n][m]real) = reduce + 0 (map2 (r, s. reduce + 0 r) M M)",
        expect!["unsupported at line 1, column 62: the UNF pipeline differentiates `map2` and `reduce` over arrays of reals only (the paper's UNF rules), this has type `[n][m]real`; the direct macro supports it"],
    );
}

#[test]
fn inside_an_array_function() {
    check_unf(
        "def f(A: [n]real) = sum(map2 (a, b. if a > b then a else b) A A)",
        expect!["unsupported at line 1, column 37: the UNF pipeline does not support `if` (the paper gives UNF rules for its core Source only); the direct macro supports it"],
    );
}

#[test]
fn results_that_are_not_real() {
    check("def f(x: real) = (x, x)", expect!["`f` returns `(real, real)`; reverse mode computes gradients of functions returning `real`"]);
}

#[test]
fn parameters_out_of_range() {
    check_wrt(
        "def f(x: real) = x",
        Some(&[1]),
        expect!["`f` has 1 parameter(s); there is no parameter 1 to differentiate against"],
    );
}

#[test]
fn parameters_named_twice() {
    check_wrt(
        "def f(x: real, y: real) = x",
        Some(&[1, 1]),
        expect!["parameter `y` is named twice in the parameters to differentiate against"],
    );
}

#[test]
fn no_parameters() {
    check_wrt(
        "def f(x: real) = x",
        Some(&[]),
        expect!["there is nothing to differentiate against: name at least one parameter"],
    );
}

/// Parameters named by the caller (as the facade names them) go through the same checks as
/// positions: the first unknown or repeated name is the error, and an empty list is one.
#[test]
fn parameters_by_name() {
    use crate::request::{parameters, Parameter};
    let (prog, func) = load("def f(x: real, y: real) = x * y");
    let named = |names: &[&str]| {
        let wanted: Vec<Parameter> = names.iter().map(|n| Parameter::Named(n)).collect();
        match parameters(&prog.arena, &func, &wanted) {
            Ok(positions) => format!("{positions:?}"),
            Err(e) => e.to_string(),
        }
    };
    assert_eq!(named(&["y", "x"]), "[1, 0]");
    assert_eq!(
        named(&["y", "y", "z"]),
        "parameter `y` is named twice in the parameters to differentiate against"
    );
    assert_eq!(
        named(&["x", "z", "x"]),
        "`z` is not a parameter of `f` (its parameters: x, y)"
    );
    assert_eq!(
        named(&[]),
        "there is nothing to differentiate against: name at least one parameter"
    );
}
