//! The direct macro `D^ρ_{Γ;Y}`, printed: the paper's worked examples, then one small
//! case per rule. The check helper prints `∇ = π2 D(e)(0_Γ, 1)` (with `Y = Id_Γ`).

use expect_test::{expect, Expect};
use unfad_syntax::print_func;

use super::{assert_well_formed, load};

fn check(src: &str, expect: Expect) {
    let (mut prog, func) = load(src);
    let all: Vec<usize> = (0..func.params.len()).collect();
    let g = crate::gradient(&mut prog.arena, &func, &all).unwrap_or_else(|e| panic!("{e}"));
    assert_well_formed(&mut prog.arena, &g);
    expect.assert_eq(&print_func(&prog.arena, &g));
}

/// The introduction's first-order term in the context `x1, x2, x3`. The paper prints
/// (section "Macro for pure reverse mode transformation", Example):
/// ```text
/// D(let w1 = x1 * x2 in let w2 = w1 * x1 in w2) =
/// let w1,Y1 =
///     let y11,Y11 = <x1, fun (y1,y2,y3,z) -> Y(y1+z,y2,y3)> in
///     let y12,Y12 = <x2, fun (y1,y2,y3,y4,z) -> Y11(y1,y2+z,y3,y4)> in
///     <y11 * y12, fun (y1,y2,y3,z) -> Y12(y1,y2,y3,y12*z,y11*z) > in
/// let w2,Y2 =
///     let y21,Y21 = <w1, fun (y1,y2,y3,y4,z) -> Y1(y1,y2,y3,y4+z)> in
///     let y22,Y22 = <x1, fun (y1,y2,y3,y4,y5,z) -> Y21(y1+z,y2,y3,y4,y5)> in
///     <y21 * y22, fun (y1,y2,y3,y4,z) -> Y22(y1,y2,y3,y4,y22*z,y21*z) > in
/// let y,Y3 = <w, fun (y1,y2,y3,y4,z) -> Y2(y1,y2,y3,y4+z)> in
/// <y, fun (y1,y2,y3,z) -> Y3(y1,y2,y3,0,z) >
/// ```
/// The same structure appears below, with `Y = Id_Γ` (`Y1`), the pairs of `let`
/// destructured with tuple patterns, and unique names (`dx1_3` is the adjoint of `x1` in
/// one of the continuations). The paper's last line adds `0` for `w1`'s adjoint after
/// `w2`'s `let`; below, the `let` of `w2` does it (`Y9(..., 0, z_7)`) and the `let` of
/// `w1` does it again (`Y5(..., 0, z_8)`): the figure's rule, which the example
/// abbreviates.
#[test]
fn paper_introduction_term() {
    check(
        "def f(x1: real, x2: real, x3: real): real =
           let w1 = x1 * x2 in
           let w2 = w1 * x1 in
           w2",
        expect![[r#"
            def f(x1: real, x2: real, x3: real): (real, real, real) =
              let Y1 = fun (dx1: real, dx2: real, dx3: real) -> (dx1, dx2, dx3) in
              (snd (let (w1, Y2) =
                 let (v3, Y3) = (x1, (fun (dx1_1: real, dx2_1: real, dx3_1: real, z: real) -> Y1(dx1_1 + z, dx2_1, dx3_1))) in
                 let (v4, Y4) =
                   (
                     x2,
                     (fun (dx1_2: real, dx2_2: real, dx3_2: real, dv3: real, z_1: real) ->
                        Y3(dx1_2, dx2_2 + z_1, dx3_2, dv3))
                   )
                 in
                 (
                   v3 * v4,
                   (fun (dx1_3: real, dx2_3: real, dx3_3: real, z_2: real) -> Y4(dx1_3, dx2_3, dx3_3, v4 * z_2, v3 * z_2))
                 )
               in
               let (v5, Y5) =
                 let (w2, Y6) =
                   let (v7, Y7) =
                     (
                       w1,
                       (fun (dx1_4: real, dx2_4: real, dx3_4: real, dw1: real, z_3: real) ->
                          Y2(dx1_4, dx2_4, dx3_4, dw1 + z_3))
                     )
                   in
                   let (v8, Y8) =
                     (
                       x1,
                       (fun (dx1_5: real, dx2_5: real, dx3_5: real, dw1_1: real, dv7: real, z_4: real) ->
                          Y7(dx1_5 + z_4, dx2_5, dx3_5, dw1_1, dv7))
                     )
                   in
                   (
                     v7 * v8,
                     (fun (dx1_6: real, dx2_6: real, dx3_6: real, dw1_2: real, z_5: real) ->
                        Y8(dx1_6, dx2_6, dx3_6, dw1_2, v8 * z_5, v7 * z_5))
                   )
                 in
                 let (v9, Y9) =
                   (
                     w2,
                     (fun (dx1_7: real, dx2_7: real, dx3_7: real, dw1_3: real, dw2: real, z_6: real) ->
                        Y6(dx1_7, dx2_7, dx3_7, dw1_3, dw2 + z_6))
                   )
                 in
                 (
                   v9,
                   (fun (dx1_8: real, dx2_8: real, dx3_8: real, dw1_4: real, z_7: real) ->
                      Y9(dx1_8, dx2_8, dx3_8, dw1_4, 0, z_7))
                 )
               in
               (v5, (fun (dx1_9: real, dx2_9: real, dx3_9: real, z_8: real) -> Y5(dx1_9, dx2_9, dx3_9, 0, z_8)))))(0, 0, 0, 1)
        "#]],
    );
}

/// `prod(A)` as in the introduction. The paper prints:
/// ```text
/// D(prod(A)) =
/// let y,Y1 = <1, fun (X,z) -> Y(X)> in
/// let B,Y2 = <A, fun (X,x,Z) -> Y1(X+Z,x)> in
/// let A0 = shift1R (scanl * y B) in
/// let A1 = shift1L (map2 (a,b.b) A0 B) in
/// let A2 = map2 (a,b.a) A0 B in
/// let A3 = scanr * 1 A1 in
/// <prod(B), fun (X,z) -> Y2(X,0,map2 (a,b. a*z*b) A2 A3)>
/// ```
/// Below, `∇x (x * y) = y` and `∇y (x * y) = x` are computed by the macro itself (before
/// simplification), `map2 (a,b.b) A0 B` is bound as `Ax`, `A3` is the equal
/// `shift1L (scanr * 1 Ax)` (well typed for literal sizes too), and the unit's adjoint is
/// `z * reduce * 1 Ax` instead of the paper's `0` (right for any unit).
#[test]
fn paper_product() {
    check(
        "def prod1(A: [n]real) = reduce * 1 A",
        expect![[r#"
            def prod1(A: [n]real): [n]real =
              let Y1 = fun (dA: [n]real) -> dA in
              (snd (let (v2, Y2) = (1, (fun (dA_1: [n]real, z: real) -> Y1(dA_1))) in
               let (v3, Y3) = (A, (fun (dA_2: [n]real, dv2: real, z_1: [n]real) -> Y2(map2 + dA_2 z_1, dv2))) in
               let A0 = shift1R (scanl * v2 v3) in
               let Ax =
                 map2 (x, y.
                   let Y4 = fun (dx: real, dy: real) -> dx in
                   (snd (let (v5, Y5) = (x, (fun (dx_1: real, dy_1: real, z_2: real) -> Y4(dx_1 + z_2, dy_1))) in
                    let (v6, Y6) = (y, (fun (dx_2: real, dy_2: real, dv5: real, z_3: real) -> Y5(dx_2, dy_2 + z_3, dv5))) in
                    (v5 * v6, (fun (dx_3: real, dy_3: real, z_4: real) -> Y6(dx_3, dy_3, v6 * z_4, v5 * z_4)))))(0, 0, 1)) A0 v3
               in
               let A2 =
                 map2 (x_1, y_1.
                   let Y7 = fun (dx_4: real, dy_4: real) -> dy_4 in
                   (snd (let (v8, Y8) = (x_1, (fun (dx_5: real, dy_5: real, z_5: real) -> Y7(dx_5 + z_5, dy_5))) in
                    let (v9, Y9) = (y_1, (fun (dx_6: real, dy_6: real, dv8: real, z_6: real) -> Y8(dx_6, dy_6 + z_6, dv8))) in
                    (v8 * v9, (fun (dx_7: real, dy_7: real, z_7: real) -> Y9(dx_7, dy_7, v9 * z_7, v8 * z_7)))))(0, 0, 1)) A0 v3
               in
               let A3 = scanr * 1 (shift1L Ax) in
               (
                 reduce * v2 v3,
                 (fun (dA_3: [n]real, z_8: real) -> Y3(dA_3, z_8 * reduce * 1 Ax, map2 (a, b. a * b * z_8) A3 A2))
               )))(zeros_like(A), 1)
        "#]],
    );
}

#[test]
fn constant() {
    check(
        "def f(x: real) = 2",
        expect![[r#"
        def f(x: real): real =
          let Y1 = fun (dx: real) -> dx in
          (snd (2, (fun (dx_1: real, z: real) -> Y1(dx_1))))(0, 1)
    "#]],
    );
}

#[test]
fn variable() {
    check(
        "def f(x: real, y: real) = y",
        expect![[r#"
        def f(x: real, y: real): (real, real) =
          let Y1 = fun (dx: real, dy: real) -> (dx, dy) in
          (snd (y, (fun (dx_1: real, dy_1: real, z: real) -> Y1(dx_1, dy_1 + z))))(0, 0, 1)
    "#]],
    );
}

#[test]
fn variable_of_tuple_type() {
    check(
        "def f(p: (real, real)) = fst p",
        expect![[r#"
        def f(p: (real, real)): (real, real) =
          let Y1 = fun (dp: (real, real)) -> dp in
          (snd (let (v2, Y2) = (p, (fun (dp_1: (real, real), z: (real, real)) -> Y1((fst dp_1 + fst z, snd dp_1 + snd z)))) in
           (fst v2, (fun (dp_2: (real, real), z_1: real) -> Y2(dp_2, (z_1, 0))))))((0, 0), 1)
    "#]],
    );
}

#[test]
fn let_binding() {
    check(
        "def f(x: real) = let w = x in w",
        expect![[r#"
        def f(x: real): real =
          let Y1 = fun (dx: real) -> dx in
          (snd (let (w, Y2) = (x, (fun (dx_1: real, z: real) -> Y1(dx_1 + z))) in
           let (v3, Y3) = (w, (fun (dx_2: real, dw: real, z_1: real) -> Y2(dx_2, dw + z_1))) in
           (v3, (fun (dx_3: real, z_2: real) -> Y3(dx_3, 0, z_2)))))(0, 1)
    "#]],
    );
}

/// A `let` whose variable carries no derivative (unused, a condition, only a shape) binds
/// its value without differentiating it, and its variable is not in Γ.
#[test]
fn inert_let_binding() {
    check(
        "def f(x: real, A: [n]real) = let w = 3 in let b = x > 0 in let B = map (a. a * x) A in len(B) * x",
        expect![[r#"
            def f(x: real, A: [n]real): (real, [n]real) =
              let Y1 = fun (dx: real, dA: [n]real) -> (dx, dA) in
              (snd (let w = 3 in
               let b = x > 0 in
               let B = map (a. a * x) A in
               let (v2, Y2) = (len(B), (fun (dx_1: real, dA_1: [n]real, z: real) -> Y1(dx_1, dA_1))) in
               let (v3, Y3) = (x, (fun (dx_2: real, dA_2: [n]real, dv2: real, z_1: real) -> Y2(dx_2 + z_1, dA_2, dv2))) in
               (v2 * v3, (fun (dx_3: real, dA_3: [n]real, z_2: real) -> Y3(dx_3, dA_3, v3 * z_2, v2 * z_2)))))(0, zeros_like(A), 1)
        "#]],
    );
}

#[test]
fn tuple_pattern() {
    check(
        "def f(p: (real, real)) = let (a, b) = p in b",
        expect![[r#"
        def f(p: (real, real)): (real, real) =
          let Y1 = fun (dp: (real, real)) -> dp in
          (snd (let (v2, Y2) = (p, (fun (dp_1: (real, real), z: (real, real)) -> Y1((fst dp_1 + fst z, snd dp_1 + snd z)))) in
           let (a, b) = v2 in
           let Y3 = fun (dp_2: (real, real), da: real, db: real) -> Y2(dp_2, (da, db)) in
           let (v4, Y4) = (b, (fun (dp_3: (real, real), da_1: real, db_1: real, z_1: real) -> Y3(dp_3, da_1, db_1 + z_1))) in
           (v4, (fun (dp_4: (real, real), z_2: real) -> Y4(dp_4, 0, 0, z_2)))))((0, 0), 1)
    "#]],
    );
}

#[test]
fn tuple_and_projection() {
    check(
        "def f(x: real) = snd (x, 2)",
        expect![[r#"
        def f(x: real): real =
          let Y1 = fun (dx: real) -> dx in
          (snd (let (v2, Y2) =
             let (v3, Y3) = (x, (fun (dx_1: real, z: real) -> Y1(dx_1 + z))) in
             let (v4, Y4) = (2, (fun (dx_2: real, dv3: real, z_1: real) -> Y3(dx_2, dv3))) in
             ((v3, v4), (fun (dx_3: real, z_2: (real, real)) -> Y4(dx_3, fst z_2, snd z_2)))
           in
           (snd v2, (fun (dx_4: real, z_3: real) -> Y2(dx_4, (0, z_3))))))(0, 1)
    "#]],
    );
}

#[test]
fn unary_operator() {
    check(
        "def f(x: real) = sin(x)",
        expect![[r#"
        def f(x: real): real =
          let Y1 = fun (dx: real) -> dx in
          (snd (let (v2, Y2) = (x, (fun (dx_1: real, z: real) -> Y1(dx_1 + z))) in
           (sin(v2), (fun (dx_2: real, z_1: real) -> Y2(dx_2, cos(v2) * z_1)))))(0, 1)
    "#]],
    );
}

#[test]
fn binary_operator() {
    check(
        "def f(x: real, y: real) = x / y",
        expect![[r#"
        def f(x: real, y: real): (real, real) =
          let Y1 = fun (dx: real, dy: real) -> (dx, dy) in
          (snd (let (v2, Y2) = (x, (fun (dx_1: real, dy_1: real, z: real) -> Y1(dx_1 + z, dy_1))) in
           let (v3, Y3) = (y, (fun (dx_2: real, dy_2: real, dv2: real, z_1: real) -> Y2(dx_2, dy_2 + z_1, dv2))) in
           (
             v2 / v3,
             (fun (dx_3: real, dy_3: real, z_2: real) -> Y3(dx_3, dy_3, z_2 / v3, -(v2 / v3 * (z_2 / v3))))
           )))(0, 0, 1)
    "#]],
    );
}

#[test]
fn map2_without_free_variables() {
    check(
        "def f(A: [n]real) = sum(map2 * A A)",
        expect![[r#"
            def f(A: [n]real): [n]real =
              let Y1 = fun (dA: [n]real) -> dA in
              (snd (let (A_1, Y2) =
                 let (v3, Y3) = (A, (fun (dA_1: [n]real, z: [n]real) -> Y1(map2 + dA_1 z))) in
                 let (v4, Y4) = (A, (fun (dA_2: [n]real, dv3: [n]real, z_1: [n]real) -> Y3(map2 + dA_2 z_1, dv3))) in
                 (
                   map2 * v3 v4,
                   (fun (dA_3: [n]real, z_2: [n]real) ->
                      Y4(
                        dA_3,
                        map2 * (map2 (x, y.
                             let Y5 = fun (dx: real, dy: real) -> dx in
                             (snd (let (v6, Y6) = (x, (fun (dx_1: real, dy_1: real, z_3: real) -> Y5(dx_1 + z_3, dy_1))) in
                              let (v7, Y7) = (y, (fun (dx_2: real, dy_2: real, dv6: real, z_4: real) -> Y6(dx_2, dy_2 + z_4, dv6))) in
                              (v6 * v7, (fun (dx_3: real, dy_3: real, z_5: real) -> Y7(dx_3, dy_3, v7 * z_5, v6 * z_5)))))(0, 0, 1)) v3 v4) z_2,
                        map2 * (map2 (x_1, y_1.
                             let Y8 = fun (dx_4: real, dy_4: real) -> dy_4 in
                             (snd (let (v9, Y9) = (x_1, (fun (dx_5: real, dy_5: real, z_6: real) -> Y8(dx_5 + z_6, dy_5))) in
                              let (v10, Y10) = (y_1, (fun (dx_6: real, dy_6: real, dv9: real, z_7: real) -> Y9(dx_6, dy_6 + z_7, dv9))) in
                              (v9 * v10, (fun (dx_7: real, dy_7: real, z_8: real) -> Y10(dx_7, dy_7, v10 * z_8, v9 * z_8)))))(0, 0, 1)) v3 v4) z_2
                      ))
                 )
               in
               let (v11, Y11) =
                 let (v12, Y12) = (0, (fun (dA_4: [n]real, dA_5: [n]real, z_9: real) -> Y2(dA_4, dA_5))) in
                 let (v13, Y13) =
                   (
                     A_1,
                     (fun (dA_6: [n]real, dA_7: [n]real, dv12: real, z_10: [n]real) -> Y12(dA_6, map2 + dA_7 z_10, dv12))
                   )
                 in
                 (
                   reduce + v12 v13,
                   (fun (dA_8: [n]real, dA_9: [n]real, z_11: real) -> Y13(dA_8, dA_9, z_11, map (b. z_11) v13))
                 )
               in
               (v11, (fun (dA_10: [n]real, z_12: real) -> Y11(dA_10, zeros_like(A_1), z_12)))))(zeros_like(A), 1)
        "#]],
    );
}

#[test]
fn map2_with_a_free_variable() {
    check(
        "def f(A: [n]real, w: real) = sum(map2 (a, b. w) A A)",
        expect![[r#"
            def f(A: [n]real, w: real): ([n]real, real) =
              let Y1 = fun (dA: [n]real, dw: real) -> (dA, dw) in
              (snd (let (A_1, Y2) =
                 let (v3, Y3) = (A, (fun (dA_1: [n]real, dw_1: real, z: [n]real) -> Y1(map2 + dA_1 z, dw_1))) in
                 let (v4, Y4) = (A, (fun (dA_2: [n]real, dw_2: real, dv3: [n]real, z_1: [n]real) -> Y3(map2 + dA_2 z_1, dw_2, dv3))) in
                 (
                   map2 (a, b. w) v3 v4,
                   (fun (dA_3: [n]real, dw_3: real, z_2: [n]real) ->
                      let G =
                        map2 (a_1, b_1.
                          let Y5 = fun (da: real, db: real, dw_4: real) -> (da, db, dw_4) in
                          (snd (w, (fun (da_1: real, db_1: real, dw_5: real, z_3: real) -> Y5(da_1, db_1, dw_5 + z_3))))(0, 0, 0, 1)) v3 v4
                      in
                      Y4(
                        dA_3,
                        dw_3 + reduce + 0 (map2 * z_2 (map (g. g.2) G)),
                        map2 * (map (g_1. fst g_1) G) z_2,
                        map2 * (map (g_2. snd g_2) G) z_2
                      ))
                 )
               in
               let (v6, Y6) =
                 let (v7, Y7) = (0, (fun (dA_4: [n]real, dw_6: real, dA_5: [n]real, z_4: real) -> Y2(dA_4, dw_6, dA_5))) in
                 let (v8, Y8) =
                   (
                     A_1,
                     (fun (dA_6: [n]real, dw_7: real, dA_7: [n]real, dv7: real, z_5: [n]real) ->
                        Y7(dA_6, dw_7, map2 + dA_7 z_5, dv7))
                   )
                 in
                 (
                   reduce + v7 v8,
                   (fun (dA_8: [n]real, dw_8: real, dA_9: [n]real, z_6: real) ->
                      Y8(dA_8, dw_8, dA_9, z_6, map (b_2. z_6) v8))
                 )
               in
               (v6, (fun (dA_10: [n]real, dw_9: real, z_7: real) -> Y6(dA_10, dw_9, zeros_like(A_1), z_7)))))(zeros_like(A), 0, 1)
        "#]],
    );
}

#[test]
fn array_constants() {
    check(
        "def f(A: [n]real) = len(zeros_like(A))",
        expect![[r#"
            def f(A: [n]real): [n]real =
              let Y1 = fun (dA: [n]real) -> dA in
              (snd (len(zeros_like(A)), (fun (dA_1: [n]real, z: real) -> Y1(dA_1))))(zeros_like(A), 1)
        "#]],
    );
}

/// `reverse`: value and gradient in one tuple.
#[test]
fn reverse_returns_value_and_gradients() {
    let (mut prog, func) = load("def f(x: real, y: real) = x * y");
    let r = crate::reverse(&mut prog.arena, &func, &[1]).unwrap();
    assert_well_formed(&mut prog.arena, &r);
    expect![[r#"
        def f(x: real, y: real): (real, real) =
          let Y1 = fun (dx: real, dy: real) -> dy in
          let (v, B) =
            let (v2, Y2) = (x, (fun (dx_1: real, dy_1: real, z: real) -> Y1(dx_1 + z, dy_1))) in
            let (v3, Y3) = (y, (fun (dx_2: real, dy_2: real, dv2: real, z_1: real) -> Y2(dx_2, dy_2 + z_1, dv2))) in
            (v2 * v3, (fun (dx_3: real, dy_3: real, z_2: real) -> Y3(dx_3, dy_3, v3 * z_2, v2 * z_2)))
          in
          let gy = B(0, 0, 1) in
          (v, gy)
    "#]]
    .assert_eq(&print_func(&prog.arena, &r));
}

// ---- beyond the core Source ------------------------------------------------------------

/// The paper's "Solution" for conditionals: the condition bound once, the value chosen by
/// it, and one call of the continuation with the branches' reverse passes chosen by it.
#[test]
fn conditional() {
    check(
        "def f(x: real) = if x > 0 then x else 0",
        expect![[r#"
        def f(x: real): real =
          let Y1 = fun (dx: real) -> dx in
          (snd (let b = x > 0 in
           (
             (if b then x else 0),
             (fun (dx_1: real, z: real) ->
                let G =
                  if b then
                    let Y2 = fun (dx_2: real) -> dx_2 in
                    (snd (x, (fun (dx_3: real, z_1: real) -> Y2(dx_3 + z_1))))(0, z)
                  else
                    let Y3 = fun (dx_4: real) -> dx_4 in
                    (snd (0, (fun (dx_5: real, z_2: real) -> Y3(dx_5))))(0, z)
                in
                Y1(dx_1 + G))
           )))(0, 1)
    "#]],
    );
}

/// `map` with a captured variable: the per-element gradients scaled by the adjoint, and the
/// capture's contributions summed.
#[test]
fn map_with_a_free_variable() {
    check(
        "def f(A: [n]real, w: real) = sum(map (a. a * w) A)",
        expect![[r#"
            def f(A: [n]real, w: real): ([n]real, real) =
              let Y1 = fun (dA: [n]real, dw: real) -> (dA, dw) in
              (snd (let (A_1, Y2) =
                 let (v3, Y3) = (A, (fun (dA_1: [n]real, dw_1: real, z: [n]real) -> Y1(map2 + dA_1 z, dw_1))) in
                 (
                   map (a. a * w) v3,
                   (fun (dA_2: [n]real, dw_2: real, z_1: [n]real) ->
                      Y3(
                        dA_2,
                        dw_2 + reduce + 0 (map2 * z_1 (map (a_1.
                                let Y4 = fun (da: real, dw_3: real) -> dw_3 in
                                (snd (let (v5, Y5) = (a_1, (fun (da_1: real, dw_4: real, z_2: real) -> Y4(da_1 + z_2, dw_4))) in
                                 let (v6, Y6) = (w, (fun (da_2: real, dw_5: real, dv5: real, z_3: real) -> Y5(da_2, dw_5 + z_3, dv5))) in
                                 (v5 * v6, (fun (da_3: real, dw_6: real, z_4: real) -> Y6(da_3, dw_6, v6 * z_4, v5 * z_4)))))(0, 0, 1)) v3)),
                        map2 * (map (a_2.
                             let Y7 = fun (da_4: real, dw_7: real) -> da_4 in
                             (snd (let (v8, Y8) = (a_2, (fun (da_5: real, dw_8: real, z_5: real) -> Y7(da_5 + z_5, dw_8))) in
                              let (v9, Y9) = (w, (fun (da_6: real, dw_9: real, dv8: real, z_6: real) -> Y8(da_6, dw_9 + z_6, dv8))) in
                              (v8 * v9, (fun (da_7: real, dw_10: real, z_7: real) -> Y9(da_7, dw_10, v9 * z_7, v8 * z_7)))))(0, 0, 1)) v3) z_1
                      ))
                 )
               in
               let (v10, Y10) =
                 let (v11, Y11) = (0, (fun (dA_3: [n]real, dw_11: real, dA_4: [n]real, z_8: real) -> Y2(dA_3, dw_11, dA_4))) in
                 let (v12, Y12) =
                   (
                     A_1,
                     (fun (dA_5: [n]real, dw_12: real, dA_6: [n]real, dv11: real, z_9: [n]real) ->
                        Y11(dA_5, dw_12, map2 + dA_6 z_9, dv11))
                   )
                 in
                 (
                   reduce + v11 v12,
                   (fun (dA_7: [n]real, dw_13: real, dA_8: [n]real, z_10: real) ->
                      Y12(dA_7, dw_13, dA_8, z_10, map (b. z_10) v12))
                 )
               in
               (v10, (fun (dA_9: [n]real, dw_14: real, z_11: real) -> Y10(dA_9, dw_14, zeros_like(A_1), z_11)))))(zeros_like(A), 0, 1)
        "#]],
    );
}

/// `foldl` with a real accumulator: the paper's tape, the value as the last element of
/// the scan.
#[test]
fn foldl_of_reals() {
    check(
        "def f(A: [n]real, z: real) = foldl (acc, a. acc * a) z A",
        expect![[r#"
        def f(A: [n]real, z: real): ([n]real, real) =
          let Y1 = fun (dA: [n]real, dz: real) -> (dA, dz) in
          (snd (let (v2, Y2) = (z, (fun (dA_1: [n]real, dz_1: real, z_1: real) -> Y1(dA_1, dz_1 + z_1))) in
           let (v3, Y3) = (A, (fun (dA_2: [n]real, dz_2: real, dv2: real, z_2: [n]real) -> Y2(map2 + dA_2 z_2, dz_2, dv2))) in
           let S = scanl * v2 v3 in
           let A0 = shift1R S in
           let Ax =
             map2 (acc, a.
               let Y4 = fun (dacc: real, da: real) -> dacc in
               (snd (let (v5, Y5) = (acc, (fun (dacc_1: real, da_1: real, z_3: real) -> Y4(dacc_1 + z_3, da_1))) in
                let (v6, Y6) = (a, (fun (dacc_2: real, da_2: real, dv5: real, z_4: real) -> Y5(dacc_2, da_2 + z_4, dv5))) in
                (v5 * v6, (fun (dacc_3: real, da_3: real, z_5: real) -> Y6(dacc_3, da_3, v6 * z_5, v5 * z_5)))))(0, 0, 1)) A0 v3
           in
           let A2 =
             map2 (acc_1, a_1.
               let Y7 = fun (dacc_4: real, da_4: real) -> da_4 in
               (snd (let (v8, Y8) = (acc_1, (fun (dacc_5: real, da_5: real, z_6: real) -> Y7(dacc_5 + z_6, da_5))) in
                let (v9, Y9) = (a_1, (fun (dacc_6: real, da_6: real, dv8: real, z_7: real) -> Y8(dacc_6, da_6 + z_7, dv8))) in
                (v8 * v9, (fun (dacc_7: real, da_7: real, z_8: real) -> Y9(dacc_7, da_7, v9 * z_8, v8 * z_8)))))(0, 0, 1)) A0 v3
           in
           let A3 = scanr * 1 (shift1L Ax) in
           (
             foldl (acc_2, x. x) v2 S,
             (fun (dA_3: [n]real, dz_3: real, z_9: real) ->
                Y3(dA_3, dz_3, z_9 * reduce * 1 Ax, map2 (a_2, b. a_2 * b * z_9) A3 A2))
           )))(zeros_like(A), 0, 1)
    "#]],
    );
}

/// An array literal: its adjoint read back element by element.
#[test]
fn array_literal() {
    check(
        "def f(x: real) = sum([x, 2])",
        expect![[r#"
            def f(x: real): real =
              let Y1 = fun (dx: real) -> dx in
              (snd (let (A, Y2) =
                 let (v3, Y3) = (x, (fun (dx_1: real, z: real) -> Y1(dx_1 + z))) in
                 let (v4, Y4) = (2, (fun (dx_2: real, dv3: real, z_1: real) -> Y3(dx_2, dv3))) in
                 (
                   [v3, v4],
                   (fun (dx_3: real, z_2: [2]real) ->
                      Y4(dx_3, foldl (acc, x_1. x_1) 0 (shift1R z_2), foldl (acc_1, x_2. x_2) 0 z_2))
                 )
               in
               let (v5, Y5) =
                 let (v6, Y6) = (0, (fun (dx_4: real, dA: [2]real, z_3: real) -> Y2(dx_4, dA))) in
                 let (v7, Y7) = (A, (fun (dx_5: real, dA_1: [2]real, dv6: real, z_4: [2]real) -> Y6(dx_5, map2 + dA_1 z_4, dv6))) in
                 (reduce + v6 v7, (fun (dx_6: real, dA_2: [2]real, z_5: real) -> Y7(dx_6, dA_2, z_5, map (b. z_5) v7)))
               in
               (v5, (fun (dx_7: real, z_6: real) -> Y5(dx_7, zeros_like(A), z_6)))))(0, 1)
        "#]],
    );
}
