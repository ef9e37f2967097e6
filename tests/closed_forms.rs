//! Reverse mode followed by partial evaluation and the optimizations gives the paper's
//! closed forms by itself (section "Gradient from the introduction"): with the paper's
//! rules only, and with the dedicated rules for sums and extrema the engine uses.

use expect_test::{expect, Expect};
use unfad_syntax::print_func;
use unfad_test_support::load;

/// The optimized gradient (the paper's `∇`, no primal value) of the entry point of `src`
/// with respect to the parameters `wrt`, by the direct macro and by the UNF pipeline; both
/// must print the same.
fn check(src: &str, wrt: &[usize], expect: Expect) {
    let mut outputs = Vec::new();
    type Pipeline = fn(
        &mut unfad_syntax::Arena,
        &unfad_syntax::Func,
        &[usize],
    ) -> Result<unfad_syntax::Func, unfad_ad::AdError>;
    let pipelines: [Pipeline; 4] = [
        unfad_ad::gradient_paper,
        unfad_ad::gradient_via_unf_paper,
        unfad_ad::gradient,
        unfad_ad::gradient_via_unf,
    ];
    for pipeline in pipelines {
        let (mut prog, func) = load(src);
        let grad = pipeline(&mut prog.arena, &func, wrt).unwrap();
        let opt = unfad_opt::optimize(&mut prog.arena, &grad).unwrap_or_else(|e| panic!("{e}"));
        outputs.push(print_func(&prog.arena, &opt));
    }
    assert_eq!(
        outputs[0], outputs[1],
        "the two pipelines differ after optimization"
    );
    expect.assert_eq(&outputs[0]);
}

#[test]
fn gradient_of_prod() {
    // paper: map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))
    check(
        "def main(A: [n]real) = prod(A)",
        &[0],
        expect![[r#"
            def main(A: [n]real): [n]real =
              map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))
        "#]],
    );
}

#[test]
fn gradient_of_sum() {
    // paper: map (x -> 1) A, i.e. ones_like(A)
    check(
        "def main(A: [n]real) = sum(A)",
        &[0],
        expect![[r#"
        def main(A: [n]real): [n]real =
          ones_like(A)
    "#]],
    );
}

#[test]
fn gradient_of_dot() {
    // paper: B (with respect to A)
    check(
        "def main(A: [n]real, B: [n]real) = dot(A, B)",
        &[0],
        expect![[r#"
        def main(A: [n]real, B: [n]real): [n]real =
          B
    "#]],
    );
    check(
        "def main(A: [n]real, B: [n]real) = dot(A, B)",
        &[0, 1],
        expect![[r#"
        def main(A: [n]real, B: [n]real): ([n]real, [n]real) =
          (B, A)
    "#]],
    );
}

#[test]
fn gradient_of_the_first_order_term() {
    // paper: let w1 = x1 * x2 in let w2 = w1 * x1 in (w1 + x2*x1, x1*x1, 0)
    check(
        "def intro(x1: real, x2: real, x3: real) = let w1 = x1 * x2 in let w2 = w1 * x1 in w2",
        &[0, 1, 2],
        expect![[r#"
            def intro(x1: real, x2: real, x3: real): (real, real, real) =
              (x1 * x2 + x2 * x1, x1 * x1, 0)
        "#]],
    );
}
