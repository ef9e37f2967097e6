//! Parse, check and inline a program, then print its entry point.

use expect_test::{expect, Expect};

use crate::{print_func, Program};

fn check(src: &str, expect: Expect) {
    let mut prog = Program::load(src).unwrap_or_else(|e| panic!("{e}"));
    let entry = prog.entry(None).unwrap();
    let func = prog.inline(entry).unwrap();
    expect.assert_eq(&print_func(&prog.arena, &func));
}

#[test]
fn introduction_first_order_term() {
    check(
        "def f(x1: real, x2: real, x3: real): real =
           let w1 = x1 * x2 in
           let w2 = w1 * x1 in
           w2",
        expect![[r#"
            def f(x1: real, x2: real, x3: real): real =
              let w1 = x1 * x2 in
              let w2 = w1 * x1 in
              w2
        "#]],
    );
}

#[test]
fn prelude_calls_are_inlined_with_sizes() {
    check(
        "def g(A: [k]real, B: [k]real) = dot(A, B) + prod(A) + sum(B)",
        expect![[r#"
            def g(A: [k]real, B: [k]real): real =
              (let A_1 = A in
               let B_1 = B in
               reduce + 0 (map2 * A_1 B_1)) + (let A_2 = A in
               reduce * 1 A_2) + (let A_3 = B in
               reduce + 0 A_3)
        "#]],
    );
}

#[test]
fn user_definitions_call_earlier_ones() {
    check(
        "def sq(x: real) = x * x
         def f(y: real) = sq(y) + sq(2 * y)",
        expect![[r#"
            def f(y: real): real =
              (let x = y in
               x * x) + (let x_1 = 2 * y in
               x_1 * x_1)
        "#]],
    );
}

#[test]
fn precedence_and_associativity() {
    check(
        "def f(a: real, b: real, c: real) = a - (b - c) + a * (b + c) / -c - -a",
        expect![[r#"
            def f(a: real, b: real, c: real): real =
              a - (b - c) + a * (b + c) / -c - -a
        "#]],
    );
    check(
        "def f(a: real, A: [n]real) = a + reduce + 0 A * 2",
        expect![[r#"
            def f(a: real, A: [n]real): real =
              a + reduce + 0 A * 2
        "#]],
    );
}

#[test]
fn constants_round_trip_exactly() {
    check(
        "def f(x: real) = 0.1 + 2.5e-3 * x + 1e300 - 3 + -0.5 + 123456789012345678",
        expect![[r#"
            def f(x: real): real =
              0.1 + 0.0025 * x + 1e300 - 3 + -0.5 + 1.2345678901234568e17
        "#]],
    );
}

#[test]
fn tuples_projections_and_patterns() {
    check(
        "def f(p: (real, real), q: (real, real, real)) =
           let (a, (b, c)) = (fst p, (snd p, q.2)) in
           let u, v = p in
           a * b + c + u + v",
        expect![[r#"
            def f(p: (real, real), q: (real, real, real)): real =
              let (a, t) = (fst p, (snd p, q.2)) in
              let (b, c) = t in
              let (u, v) = p in
              a * b + c + u + v
        "#]],
    );
}

#[test]
fn array_operations_binders_and_sections() {
    check(
        "def f(A: [n]real, B: [n]real, M: [n][m]real) =
           let C = map2 (x, y. x * y + 1) A B in
           let D = map (row. reduce max 0 row) M in
           let s = foldl (acc, x. acc * 0.5 + x) 0 C in
           let S = scanl + 0 D in
           let R = scanr (x, acc. x - acc) 1 A in
           s + sum(shift1L S) + sum(R) + len(A)",
        expect![[r#"
            def f(A: [n]real, B: [n]real, M: [n][m]real): real =
              let C = map2 (x, y. x * y + 1) A B in
              let D = map (row. reduce max 0 row) M in
              let s = foldl (acc, x_1. acc * 0.5 + x_1) 0 C in
              let S = scanl + 0 D in
              let R = scanr - 1 A in
              s + (let A_1 = shift1L S in
               reduce + 0 A_1) + (let A_2 = R in
               reduce + 0 A_2) + len(A)
        "#]],
    );
}

#[test]
fn conditionals_and_booleans() {
    check(
        "def relu(x: real) = if x > 0 && !(x > 100) || x == -1 then x else 0 * x",
        expect![[r#"
            def relu(x: real): real =
              if x > 0 && !(x > 100) || x == -1 then x else 0 * x
        "#]],
    );
}

#[test]
fn target_terms_lambdas_and_application() {
    check(
        "def f(x: real) =
           let Y = fun (a: real, b: real) -> (b, a) in
           let g = fun (z: real) -> z * 2 in
           fst Y(x, g(x)) + (fun (t: real) -> t)(x)",
        expect![[r#"
            def f(x: real): real =
              let Y = fun (a: real, b: real) -> (b, a) in
              let g = fun (z: real) -> z * 2 in
              fst Y(x, g(x)) + (fun (t: real) -> t)(x)
        "#]],
    );
}

#[test]
fn nested_lets_indent_like_the_paper() {
    check(
        "def f(x: real) =
           let a =
             let b = x * x in
             let c = if b > 1 then let d = b * 2 in d + 1 else b in
             c + b
           in a * a",
        expect![[r#"
            def f(x: real): real =
              let a =
                let b = x * x in
                let c =
                  if b > 1 then
                    let d = b * 2 in
                    d + 1
                  else
                    b
                in
                c + b
              in
              a * a
        "#]],
    );
}
