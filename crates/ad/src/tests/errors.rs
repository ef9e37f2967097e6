//! What reverse mode rejects, and how: the message, and the position the caller reports.
//! Both pipelines reject the same programs with the same error.

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

#[test]
fn conditionals() {
    check(
        "def f(x: real) =\n  if x > 0 then x else -x",
        expect!["unsupported at line 2, column 3: reverse mode does not support `if` yet"],
    );
}

#[test]
fn map() {
    check(
        "def f(A: [n]real) = sum(map (a. a * a) A)",
        expect!["unsupported at line 1, column 25: reverse mode does not support `map` yet"],
    );
}

#[test]
fn foldl() {
    check(
        "def f(A: [n]real) = foldl (acc, a. acc * a) 1 A",
        expect!["unsupported at line 1, column 21: reverse mode does not support `foldl` yet"],
    );
}

#[test]
fn scans_in_source() {
    check(
        "def f(A: [n]real) = sum(scanl + 0 A)",
        expect!["unsupported at line 1, column 25: reverse mode does not support `scanl` yet"],
    );
}

#[test]
fn array_literals() {
    check(
        "def f(x: real) = sum([x, x])",
        expect![
            "unsupported at line 1, column 22: reverse mode does not support array literals yet"
        ],
    );
}

#[test]
fn free_variables_in_reduce() {
    check(
        "def f(A: [n]real, w: real) = reduce (a, b. a + b * w) 0 A",
        expect!["unsupported at line 1, column 30: the function of `reduce` uses `w` from the enclosing scope; reverse mode supports only closed `reduce` functions for now (the paper's restriction)"],
    );
}

#[test]
fn map2_returning_tuples() {
    check(
        "def f(A: [n]real) = let P = map2 (a, b. (a, b)) A A in 1",
        expect!["unsupported at line 1, column 29: reverse mode supports `map2` functions returning reals only for now, this one returns `(real, real)`"],
    );
}

#[test]
fn arrays_of_arrays() {
    check(
        "def f(M: [n][m]real) = reduce + 0 (map2 (r, s. reduce + 0 r) M M)",
        expect!["unsupported at line 1, column 62: reverse mode supports `map2` and `reduce` over arrays of reals only for now, this has type `[n][m]real`"],
    );
}

#[test]
fn inside_an_array_function() {
    check(
        "def f(A: [n]real) = sum(map2 (a, b. if a > b then a else b) A A)",
        expect!["unsupported at line 1, column 37: reverse mode does not support `if` yet"],
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
