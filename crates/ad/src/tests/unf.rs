//! The UNF pipeline, stage by stage: `UNF` (Source UNF), `D_ρ` (Target UNF), `UNF^-1`
//! (Target), the judgments of each, weakening, and the checker's errors.

use expect_test::{expect, Expect};
use unfad_syntax::{print_func, Arena, BinOp, Type, UnOp};

use super::{assert_well_formed, load};
use crate::unf::translate::{unf, weaken};
use crate::unf::{print_source, print_target, OpKind, Prim, SourceUnf, TargetUnf};

/// `UNF(e)`, checking its judgment `Γ ⊢ UNF(e) : Γ, B`.
fn check_source(src: &str, expect: Expect) {
    let (prog, func) = load(src);
    let s = crate::source_unf(&prog.arena, &func).unwrap_or_else(|e| panic!("{e}"));
    let gamma = func.param_types(&prog.arena);
    let mut out = gamma.clone();
    out.push(func.ret.clone());
    assert_eq!(s.judgment(&prog.arena), Ok((gamma, out)));
    expect.assert_eq(&print_source(&prog.arena, &s));
}

/// `D_ρ(UNF(e))` with ρ = Γ, checking `Γ, [Γ → ρ] ⊢ D_ρ(UNF(e)) : Γ, B, [Γ, B → ρ]`.
fn check_target(src: &str, expect: Expect) {
    let (prog, func) = load(src);
    let all: Vec<usize> = (0..func.params.len()).collect();
    let t = crate::target_unf(&prog.arena, &func, &all).unwrap_or_else(|e| panic!("{e}"));
    let gamma = func.param_types(&prog.arena);
    let rho = Type::product(gamma.clone());
    let mut input = gamma.clone();
    input.push(Type::func(gamma.clone(), rho.clone()));
    let mut out = gamma.clone();
    out.push(func.ret.clone());
    out.push(Type::func(out.clone(), rho));
    assert_eq!(t.judgment(&prog.arena), Ok((input, out)));
    expect.assert_eq(&print_target(&prog.arena, &t));
}

/// `∇` through UNF: `π2 UNF^-1(D_ρ(UNF(e)))(0_Γ, 1)`.
fn check_via_unf(src: &str, expect: Expect) {
    let (mut prog, func) = load(src);
    let all: Vec<usize> = (0..func.params.len()).collect();
    let g = crate::gradient_via_unf(&mut prog.arena, &func, &all).unwrap_or_else(|e| panic!("{e}"));
    assert_well_formed(&mut prog.arena, &g);
    expect.assert_eq(&print_func(&prog.arena, &g));
}

// ---- UNF ----------------------------------------------------------------------------

/// The paper's Example: `cos_{R,R} ; pair_{R,R;R×R}` stands for a term of context
/// `x1, x2, x3`; here the analogous term `(x2, cos(x3))` in that context.
#[test]
fn source_unf_of_a_pair() {
    check_source(
        "def f(x1: real, x2: real, x3: real) = (x2, cos(x3))",
        expect![[r#"
            var[real, real, real; 2] ;
            var[real, real, real, real; 3] ;
            op cos[real, real, real, real; real] ;
            proj[real, real, real, real; real; real] ;
            pair[real, real, real; real, real]
        "#]],
    );
}

#[test]
fn source_unf_of_the_introduction_term() {
    check_source(
        "def f(x1: real, x2: real, x3: real) = let w1 = x1 * x2 in let w2 = w1 * x1 in w2",
        expect![[r#"
            var[real, real, real; 1] ;
            var[real, real, real, real; 2] ;
            op *[real, real, real; real, real] ;
            proj[real, real, real; real, real; real] ;
            var[real, real, real, real; 4] ;
            var[real, real, real, real, real; 1] ;
            op *[real, real, real, real; real, real] ;
            proj[real, real, real, real; real, real; real] ;
            var[real, real, real, real, real; 5] ;
            proj[real, real, real, real; real; real] ;
            proj[real, real, real; real; real]
        "#]],
    );
}

#[test]
fn source_unf_of_a_constant() {
    check_source(
        "def f(x: real) = 2",
        expect![[r#"
        op 2[real; ] ;
        proj[real; ; real]
    "#]],
    );
}

#[test]
fn source_unf_of_a_projection() {
    check_source(
        "def f(p: (real, real)) = snd p",
        expect![[r#"
        var[(real, real); 1] ;
        op pi2[(real, real); (real, real)] ;
        proj[(real, real); (real, real); real]
    "#]],
    );
}

#[test]
fn source_unf_of_a_tuple_pattern() {
    check_source(
        "def f(p: (real, real)) = let (a, b) = p in b * a",
        expect![[r#"
        var[(real, real); 1] ;
        unpack[(real, real); real, real] ;
        var[(real, real), real, real; 3] ;
        var[(real, real), real, real, real; 2] ;
        op *[(real, real), real, real; real, real] ;
        proj[(real, real), real, real; real, real; real] ;
        proj[(real, real); real, real; real]
    "#]],
    );
}

#[test]
fn source_unf_of_map2_with_a_free_variable() {
    check_source(
        "def f(A: [n]real, w: real) = map2 (a, b. a * w) A A",
        expect![[r#"
            var[[n]real, real; 1] ;
            var[[n]real, real, [n]real; 1] ;
            map2[[n]real, real; a, b. a * w; w = #2] ;
            proj[[n]real, real; [n]real, [n]real; [n]real]
        "#]],
    );
}

#[test]
fn source_unf_of_reduce() {
    check_source(
        "def f(A: [n]real, x: real) = reduce * x A",
        expect![[r#"
        var[[n]real, real; 2] ;
        var[[n]real, real, real; 1] ;
        reduce[[n]real, real; x, y. x * y] ;
        proj[[n]real, real; real, [n]real; real]
    "#]],
    );
}

#[test]
fn source_unf_of_array_constants() {
    check_source(
        "def f(A: [n]real) = len(ones_like(A))",
        expect![[r#"
        var[[n]real; 1] ;
        op ones_like[[n]real; [n]real] ;
        proj[[n]real; [n]real; [n]real] ;
        op len[[n]real; [n]real] ;
        proj[[n]real; [n]real; real]
    "#]],
    );
}

/// Weakening nests: the second operand's `let` runs in a context that has grown.
#[test]
fn source_unf_weakens_operands_with_lets() {
    check_source(
        "def f(x: real) = x + (let w = x * x in w)",
        expect![[r#"
            var[real; 1] ;
            var[real, real; 1] ;
            var[real, real, real; 1] ;
            op *[real, real; real, real] ;
            proj[real, real; real, real; real] ;
            var[real, real, real; 3] ;
            proj[real, real; real; real] ;
            op +[real; real, real] ;
            proj[real; real, real; real]
        "#]],
    );
}

/// `~UNF_Γ(e)` is `UNF` of `e` in `Γ` extended by an unused variable: weakening inserts
/// the passed type right after `Γ`, under everything `e` pushes.
#[test]
fn weakening_is_translation_in_an_extended_context() {
    let (prog, func) = load(
        "def f(x: real, A: [n]real, d: (real, real)) =
           let w = x * x in reduce + 0 (map2 (a, b. a * w + x) A A) + (let (u, v) = (w, x) in u * v)",
    );
    let a = &prog.arena;
    let [x, arr, d] = func.params[..] else {
        unreachable!()
    };
    let narrow = unf(a, &[x, arr], func.body).unwrap();
    let wide = unf(a, &[x, arr, d], func.body).unwrap();
    let dty = a.var_type(d).unwrap().clone();
    let weakened = weaken(narrow.prims, 2, &[dty]).unwrap();
    assert_eq!(weakened, wide.prims);
}

// ---- D_ρ ----------------------------------------------------------------------------

/// Each primitive `p` becomes `F(p, J^T p)`.
#[test]
fn target_unf_of_an_operator() {
    check_target(
        "def f(x: real) = sin(x)",
        expect![[r#"
        <proj[real; (real) -> real; ] ; var[real; 1], proj[; real; (real) -> real] ∘ (proj[real; (real) -> real; real, real] ; J^T var[real; 1])> ;
        <proj[real, real; (real, real) -> real; ] ; op sin[real; real], proj[; real, real; (real, real) -> real] ∘ (proj[real, real; (real, real) -> real; real, real, real] ; J^T op sin[real; real])> ;
        <proj[real, real, real; (real, real, real) -> real; ] ; proj[real; real; real], proj[; real, real, real; (real, real, real) -> real] ∘ (proj[real, real, real; (real, real, real) -> real; real, real] ; J^T proj[real; real; real])>
    "#]],
    );
}

#[test]
fn target_unf_of_reduce() {
    check_target(
        "def f(A: [n]real) = reduce + 0 A",
        expect![[r#"
        <proj[[n]real; ([n]real) -> [n]real; ] ; op 0[[n]real; ], proj[; [n]real; ([n]real) -> [n]real] ∘ (proj[[n]real; ([n]real) -> [n]real; [n]real, real] ; J^T op 0[[n]real; ])> ;
        <proj[[n]real, real; ([n]real, real) -> [n]real; ] ; proj[[n]real; ; real], proj[; [n]real, real; ([n]real, real) -> [n]real] ∘ (proj[[n]real, real; ([n]real, real) -> [n]real; [n]real, real] ; J^T proj[[n]real; ; real])> ;
        <proj[[n]real, real; ([n]real, real) -> [n]real; ] ; var[[n]real, real; 1], proj[; [n]real, real; ([n]real, real) -> [n]real] ∘ (proj[[n]real, real; ([n]real, real) -> [n]real; [n]real, real, [n]real] ; J^T var[[n]real, real; 1])> ;
        <proj[[n]real, real, [n]real; ([n]real, real, [n]real) -> [n]real; ] ; reduce[[n]real; x, y. x + y], proj[; [n]real, real, [n]real; ([n]real, real, [n]real) -> [n]real] ∘ (proj[[n]real, real, [n]real; ([n]real, real, [n]real) -> [n]real; [n]real, real, [n]real, real] ; J^T reduce[[n]real; x, y. x + y])> ;
        <proj[[n]real, real, [n]real, real; ([n]real, real, [n]real, real) -> [n]real; ] ; proj[[n]real; real, [n]real; real], proj[; [n]real, real, [n]real, real; ([n]real, real, [n]real, real) -> [n]real] ∘ (proj[[n]real, real, [n]real, real; ([n]real, real, [n]real, real) -> [n]real; [n]real, real] ; J^T proj[[n]real; real, [n]real; real])>
    "#]],
    );
}

// ---- UNF^-1 ------------------------------------------------------------------------

/// The introduction's term through UNF. The paper's introduction prints the gradient
/// this pipeline gives before optimization:
/// ```text
/// let w1,w1' = <x1 * x2, fun (y1,...,y4) -> (y1+x2*y4, y2+x1*y4, y3)> in
/// let w2,w2' = <w1*x1, fun (y1,...,y5) -> w1'(y1+w1*y5, y2, y3, y4+x1*y5)> in
/// w2'(0,0,0,0,1)
/// ```
/// Below, every primitive has its own continuation (`var` ones add an adjoint to a
/// copy, `proj` ones pass zeros for the hidden values), which partial evaluation
/// collapses into the paper's two.
#[test]
fn via_unf_introduction_term() {
    check_via_unf(
        "def f(x1: real, x2: real, x3: real): real =
           let w1 = x1 * x2 in
           let w2 = w1 * x1 in
           w2",
        expect![[r#"
            def f(x1: real, x2: real, x3: real): (real, real, real) =
              let Y1 = fun (dx1: real, dx2: real, dx3: real) -> (dx1, dx2, dx3) in
              (snd (let Y2 = fun (y1: real, y2: real, y3: real, y4: real) -> Y1(y1 + y4, y2, y3) in
               let Y3 = fun (y1_1: real, y2_1: real, y3_1: real, y4_1: real, y5: real) -> Y2(y1_1, y2_1 + y5, y3_1, y4_1) in
               let x6 = x1 * x2 in
               let Y4 =
                 fun (y1_2: real, y2_2: real, y3_2: real, y4_2: real, y5_1: real, y6: real) ->
                   Y3(y1_2, y2_2, y3_2, y4_2 + x2 * y6, y5_1 + x1 * y6)
               in
               let Y5 = fun (y1_3: real, y2_3: real, y3_3: real, y4_3: real) -> Y4(y1_3, y2_3, y3_3, 0, 0, y4_3) in
               let Y6 = fun (y1_4: real, y2_4: real, y3_4: real, y4_4: real, y5_2: real) -> Y5(y1_4, y2_4, y3_4, y4_4 + y5_2) in
               let Y7 =
                 fun (y1_5: real, y2_5: real, y3_5: real, y4_5: real, y5_3: real, y6_1: real) ->
                   Y6(y1_5 + y6_1, y2_5, y3_5, y4_5, y5_3)
               in
               let x7 = x6 * x1 in
               let Y8 =
                 fun (y1_6: real, y2_6: real, y3_6: real, y4_6: real, y5_4: real, y6_2: real, y7: real) ->
                   Y7(y1_6, y2_6, y3_6, y4_6, y5_4 + x1 * y7, y6_2 + x6 * y7)
               in
               let Y9 =
                 fun (y1_7: real, y2_7: real, y3_7: real, y4_7: real, y5_5: real) ->
                   Y8(y1_7, y2_7, y3_7, y4_7, 0, 0, y5_5)
               in
               let Y10 =
                 fun (y1_8: real, y2_8: real, y3_8: real, y4_8: real, y5_6: real, y6_3: real) ->
                   Y9(y1_8, y2_8, y3_8, y4_8, y5_6 + y6_3)
               in
               let Y11 =
                 fun (y1_9: real, y2_9: real, y3_9: real, y4_9: real, y5_7: real) ->
                   Y10(y1_9, y2_9, y3_9, y4_9, 0, y5_7)
               in
               let Y12 = fun (y1_10: real, y2_10: real, y3_10: real, y4_10: real) -> Y11(y1_10, y2_10, y3_10, 0, y4_10) in
               (x7, Y12)))(0, 0, 0, 1)
        "#]],
    );
}

/// `prod(A)` through UNF: `J^T reduce` builds the paper's `A0`, `A2`, `A3` in the
/// continuation.
#[test]
fn via_unf_product() {
    check_via_unf(
        "def prod1(A: [n]real) = reduce * 1 A",
        expect![[r#"
            def prod1(A: [n]real): [n]real =
              let Y1 = fun (dA: [n]real) -> dA in
              (snd (let Y2 = fun (y1: [n]real, y2: real) -> Y1(y1) in
               let Y3 = fun (y1_1: [n]real, y2_1: real) -> Y2(y1_1, y2_1) in
               let Y4 = fun (y1_2: [n]real, y2_2: real, y3: [n]real) -> Y3(map2 + y1_2 y3, y2_2) in
               let x4 = reduce * 1 A in
               let Y15 =
                 fun (y1_3: [n]real, y2_3: real, y3_1: [n]real, y4: real) ->
                   let A0 = shift1R (scanl * 1 A) in
                   let Ax =
                     map2 (x, y.
                       let Y5 = fun (dx: real, dy: real) -> dx in
                       (snd (let Y6 = fun (y1_4: real, y2_4: real, y3_2: real) -> Y5(y1_4 + y3_2, y2_4) in
                        let Y7 = fun (y1_5: real, y2_5: real, y3_3: real, y4_1: real) -> Y6(y1_5, y2_5 + y4_1, y3_3) in
                        let x5 = x * y in
                        let Y8 =
                          fun (y1_6: real, y2_6: real, y3_4: real, y4_2: real, y5: real) ->
                            Y7(y1_6, y2_6, y3_4 + y * y5, y4_2 + x * y5)
                        in
                        let Y9 = fun (y1_7: real, y2_7: real, y3_5: real) -> Y8(y1_7, y2_7, 0, 0, y3_5) in
                        (x5, Y9)))(0, 0, 1)) A0 A
                   in
                   let A2 =
                     map2 (x_1, y_1.
                       let Y10 = fun (dx_1: real, dy_1: real) -> dy_1 in
                       (snd (let Y11 = fun (y1_8: real, y2_8: real, y3_6: real) -> Y10(y1_8 + y3_6, y2_8) in
                        let Y12 = fun (y1_9: real, y2_9: real, y3_7: real, y4_3: real) -> Y11(y1_9, y2_9 + y4_3, y3_7) in
                        let x5_1 = x_1 * y_1 in
                        let Y13 =
                          fun (y1_10: real, y2_10: real, y3_8: real, y4_4: real, y5_1: real) ->
                            Y12(y1_10, y2_10, y3_8 + y_1 * y5_1, y4_4 + x_1 * y5_1)
                        in
                        let Y14 = fun (y1_11: real, y2_11: real, y3_9: real) -> Y13(y1_11, y2_11, 0, 0, y3_9) in
                        (x5_1, Y14)))(0, 0, 1)) A0 A
                   in
                   let A3 = scanr * 1 (shift1L Ax) in
                   Y4(y1_3, y2_3 + y4 * reduce * 1 Ax, map2 + y3_1 (map2 (a, b. a * b * y4) A3 A2))
               in
               let Y16 = fun (y1_12: [n]real, y2_12: real) -> Y15(y1_12, 0, zeros_like(A), y2_12) in
               (x4, Y16)))(zeros_like(A), 1)
        "#]],
    );
}

#[test]
fn via_unf_tuple_pattern() {
    check_via_unf(
        "def f(p: (real, real)) = let (a, b) = p in b",
        expect![[r#"
        def f(p: (real, real)): (real, real) =
          let Y1 = fun (dp: (real, real)) -> dp in
          (snd (let Y2 = fun (y1: (real, real), y2: (real, real)) -> Y1((fst y1 + fst y2, snd y1 + snd y2)) in
           let (x2, x3) = p in
           let Y3 = fun (y1_1: (real, real), y2_1: real, y3: real) -> Y2(y1_1, (y2_1, y3)) in
           let Y4 = fun (y1_2: (real, real), y2_2: real, y3_1: real, y4: real) -> Y3(y1_2, y2_2, y3_1 + y4) in
           let Y5 = fun (y1_3: (real, real), y2_3: real) -> Y4(y1_3, 0, 0, y2_3) in
           (x3, Y5)))((0, 0), 1)
    "#]],
    );
}

#[test]
fn via_unf_map2_with_a_free_variable() {
    check_via_unf(
        "def f(A: [n]real, w: real) = reduce + 0 (map2 (a, b. a * w) A A)",
        expect![[r#"
            def f(A: [n]real, w: real): ([n]real, real) =
              let Y1 = fun (dA: [n]real, dw: real) -> (dA, dw) in
              (snd (let Y2 = fun (y1: [n]real, y2: real, y3: real) -> Y1(y1, y2) in
               let Y3 = fun (y1_1: [n]real, y2_1: real, y3_1: real) -> Y2(y1_1, y2_1, y3_1) in
               let Y4 = fun (y1_2: [n]real, y2_2: real, y3_2: real, y4: [n]real) -> Y3(map2 + y1_2 y4, y2_2, y3_2) in
               let Y5 =
                 fun (y1_3: [n]real, y2_3: real, y3_3: real, y4_1: [n]real, y5: [n]real) ->
                   Y4(map2 + y1_3 y5, y2_3, y3_3, y4_1)
               in
               let x6 = map2 (a, b. a * w) A A in
               let Y11 =
                 fun (y1_4: [n]real, y2_4: real, y3_4: real, y4_2: [n]real, y5_1: [n]real, y6: [n]real) ->
                   let G =
                     map2 (a_1, b_1.
                       let Y6 = fun (da: real, db: real, dw_1: real) -> (da, db, dw_1) in
                       (snd (let Y7 = fun (y1_5: real, y2_5: real, y3_5: real, y4_3: real) -> Y6(y1_5 + y4_3, y2_5, y3_5) in
                        let Y8 = fun (y1_6: real, y2_6: real, y3_6: real, y4_4: real, y5_2: real) -> Y7(y1_6, y2_6, y3_6 + y5_2, y4_4) in
                        let x6_1 = a_1 * w in
                        let Y9 =
                          fun (y1_7: real, y2_7: real, y3_7: real, y4_5: real, y5_3: real, y6_1: real) ->
                            Y8(y1_7, y2_7, y3_7, y4_5 + w * y6_1, y5_3 + a_1 * y6_1)
                        in
                        let Y10 = fun (y1_8: real, y2_8: real, y3_8: real, y4_6: real) -> Y9(y1_8, y2_8, y3_8, 0, 0, y4_6) in
                        (x6_1, Y10)))(0, 0, 0, 1)) A A
                   in
                   Y5(
                     y1_4,
                     y2_4 + reduce + 0 (map2 * y6 (map (g. g.2) G)),
                     y3_4,
                     map2 + y4_2 (map2 * (map (g_1. fst g_1) G) y6),
                     map2 + y5_1 (map2 * (map (g_2. snd g_2) G) y6)
                   )
               in
               let Y12 =
                 fun (y1_9: [n]real, y2_9: real, y3_9: real, y4_7: [n]real) ->
                   Y11(y1_9, y2_9, y3_9, zeros_like(A), zeros_like(A), y4_7)
               in
               let x5 = reduce + 0 x6 in
               let Y13 =
                 fun (y1_10: [n]real, y2_10: real, y3_10: real, y4_8: [n]real, y5_4: real) ->
                   Y12(y1_10, y2_10, y3_10 + y5_4, map2 + y4_8 (map (b_2. y5_4) x6))
               in
               let Y14 = fun (y1_11: [n]real, y2_11: real, y3_11: real) -> Y13(y1_11, y2_11, 0, zeros_like(x6), y3_11) in
               (x5, Y14)))(zeros_like(A), 0, 1)
        "#]],
    );
}

// ---- the checker --------------------------------------------------------------------

fn judgment_error(e: &TargetUnf) -> String {
    let a = Arena::new();
    match e.judgment(&a) {
        Ok((i, o)) => format!(
            "ok: [{}] ⊢ [{}]",
            crate::unf::show_ctx(&i),
            crate::unf::show_ctx(&o)
        ),
        Err(err) => err.to_string(),
    }
}

fn var(ctx: &[Type], i: usize) -> Prim {
    Prim::Var {
        ctx: ctx.to_vec(),
        i,
    }
}

#[test]
fn checker_rejects_a_bad_sequence() {
    let r = Type::Real;
    let e = TargetUnf::Seq(vec![
        TargetUnf::Prim(var(std::slice::from_ref(&r), 0)),
        TargetUnf::Prim(var(std::slice::from_ref(&r), 0)),
    ]);
    expect!["`;` does not compose at step 2: the steps before produce [real, real] but `var[real; 1]` expects [real]"].assert_eq(&judgment_error(&e));
}

#[test]
fn checker_rejects_an_index_out_of_range() {
    let e = TargetUnf::Prim(var(&[Type::Real], 1));
    expect!["`var` index 2 is outside its context [real]"].assert_eq(&judgment_error(&e));
}

#[test]
fn checker_rejects_an_operator_on_wrong_arguments() {
    let e = TargetUnf::Prim(Prim::Op {
        ctx: vec![],
        op: OpKind::Un(UnOp::Sin),
        args: vec![Type::tuple(vec![Type::Real, Type::Real])],
        ret: Type::Real,
    });
    expect!["operator `sin` cannot take arguments [(real, real)]"].assert_eq(&judgment_error(&e));
}

#[test]
fn checker_rejects_pairs_in_different_contexts() {
    let r = Type::Real;
    let e = TargetUnf::Pair(
        Box::new(TargetUnf::Prim(var(std::slice::from_ref(&r), 0))),
        Box::new(TargetUnf::Prim(var(&[r.clone(), r.clone()], 0))),
    );
    expect!["the components of `<e1, e2>` run in different contexts: [real] and [real, real]"]
        .assert_eq(&judgment_error(&e));
}

#[test]
fn checker_rejects_composing_a_non_function() {
    let r = Type::Real;
    let e = TargetUnf::Compose(
        Box::new(TargetUnf::Prim(var(std::slice::from_ref(&r), 0))),
        Box::new(TargetUnf::Prim(var(std::slice::from_ref(&r), 0))),
    );
    expect!["the left of `∘` must produce one function, it produces [real, real]"]
        .assert_eq(&judgment_error(&e));
}

#[test]
fn checker_types_transposed_jacobians() {
    let r = Type::Real;
    let op = Prim::Op {
        ctx: vec![r.clone()],
        op: OpKind::Bin(BinOp::Mul),
        args: vec![r.clone(), r.clone()],
        ret: r.clone(),
    };
    expect!["ok: [real, real, real, real, real, real, real] ⊢ [real, real, real]"]
        .assert_eq(&judgment_error(&TargetUnf::JT(op)));
}

#[test]
fn checker_rejects_an_empty_sequence() {
    let a = Arena::new();
    let e = SourceUnf { prims: vec![] };
    assert!(e.judgment(&a).is_err());
}
