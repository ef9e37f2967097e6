//! Types inferred for whole programs, sizes included.

use expect_test::{expect, Expect};

use crate::Program;

fn check(src: &str, expect: Expect) {
    let prog = Program::load(src).unwrap_or_else(|e| panic!("{e}"));
    let sigs: Vec<String> = prog
        .defs
        .iter()
        .filter(|d| d.span.src == crate::SourceId::USER)
        .map(|d| {
            let params: Vec<String> = d.param_types.iter().map(|t| t.to_string()).collect();
            format!(
                "{}: ({}) -> {}",
                d.name,
                params.join(", "),
                d.ret.as_ref().unwrap()
            )
        })
        .collect();
    expect.assert_eq(&sigs.join("\n"));
}

#[test]
fn sizes_flow_through_scans_and_shifts() {
    check(
        "def a(A: [n]real) = scanl + 0 A
         def b(A: [n]real) = shift1L (scanl + 0 A)
         def c(A: [n]real) = shift1R (shift1L A)
         def d(A: [n]real) = map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))
         def e(A: [3]real) = shift1L (shift1L (shift1L (shift1L A)))",
        expect![[r#"
            a: ([n]real) -> [n+1]real
            b: ([n]real) -> [n]real
            c: ([n]real) -> [n-2]real
            d: ([n]real) -> [n]real
            e: ([3]real) -> [0-1]real"#]],
    );
}

#[test]
fn general_arrays_and_tuples() {
    check(
        "def rows(M: [n][m]real) = map (r. sum(r)) M
         def pairs(A: [n]real, B: [n]real) = map2 (a, b. (a, b * b)) A B
         def firsts(P: [n](real, real)) = map (p. fst p) P
         def lit(x: real) = [[x, 1], [2, x]]
         def call(M: [k][j]real) = rows(M)",
        expect![[r#"
            rows: ([n][m]real) -> [n]real
            pairs: ([n]real, [n]real) -> [n](real, real)
            firsts: ([n](real, real)) -> [n]real
            lit: (real) -> [2][2]real
            call: ([k][j]real) -> [k]real"#]],
    );
}

#[test]
fn free_variables_in_function_arguments() {
    check(
        "def f(A: [n]real, w: real, b: real) = reduce + 0 (map (x. w * x + b) A)
         def g(A: [n]real, z: real) = foldl (acc, x. acc * z + x) z A",
        expect![[r#"
            f: ([n]real, real, real) -> real
            g: ([n]real, real) -> real"#]],
    );
}

/// Sizes written as formulas, as types print the sizes programs compute (a convolution's
/// `n - m + 1`, a concatenation's `n + m`): the annotations agree with the inferred types,
/// and formulas equal as linear forms are the same size.
#[test]
fn sizes_written_as_formulas() {
    check(
        "def conv(x: [n]real, w: [m]real): [n - m + 1]real =
           map (i. reduce + 0 (map2 * (x[i : i + len(w)]) w)) (iota (len(x) - len(w) + 1))
         def cat(x: [n]real, w: [m]real): [m + n]real = concat x w
         def twice(x: [n]real): [2 * n]real = concat x x
         def same(x: [n]real, w: [m]real): [(n + 1) - m]real = conv(x, w)
         def half(x: [n]real): [n / 2]real = map (i. x[i]) (iota (div(len(x), 2)))",
        expect![[r#"
            conv: ([n]real, [m]real) -> [n - m + 1]real
            cat: ([n]real, [m]real) -> [m + n]real
            twice: ([n]real) -> [2*n]real
            same: ([n]real, [m]real) -> [n - m + 1]real
            half: ([n]real) -> [n / 2]real"#]],
    );
}
