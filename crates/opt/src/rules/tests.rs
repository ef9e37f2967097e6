//! Each rule on its own, and the paper's worked examples written by hand in Target form.
//! Every check also evaluates the term before and after optimization at sizes 0, 1 and 3.

/// One test per rule, named after it.
mod each_rule;

use expect_test::{expect, Expect};
use unfad_interp::{eval_func, value_to_json, Value};
use unfad_syntax::{print_func, Arena, Func, Type};
use unfad_test_support::{close_json, load};

use crate::{inline::inline_single_use, simplify_to_fixed_point};

/// A deterministic argument of type `t` with every size variable equal to `n` (and `m`
/// equal to 2).
pub(crate) fn sample(t: &Type, n: u64, seed: &mut f64) -> Value<f64> {
    match t {
        Type::Real => {
            *seed = (*seed * 1.7 + 0.31) % 2.0;
            Value::Real(*seed - 1.0)
        }
        // An int in bounds of every array of the sample (an index, a count).
        Type::Int => {
            *seed = (*seed * 1.7 + 0.31) % 2.0;
            Value::Real(((*seed * n as f64) as u64).min(n.saturating_sub(1)) as f64)
        }
        Type::Tuple(items) => Value::tuple(items.iter().map(|i| sample(i, n, seed)).collect()),
        Type::Array(size, elem) => {
            let len = size.eval(&|v| Some(if v == "m" { 2 } else { n })).unwrap();
            Value::array((0..len).map(|_| sample(elem, n, seed)).collect())
        }
        Type::Bool | Type::Func(..) => unreachable!("parameters are ground"),
    }
}

/// `after` computes what `func` computes, at sizes 0, 1 and 3 (up to rounding).
pub(crate) fn assert_same_values(arena: &Arena, func: &Func, after: &Func) {
    for n in [0, 1, 3] {
        let mut seed = 0.4;
        let args: Vec<Value<f64>> = func
            .param_types(arena)
            .iter()
            .map(|t| sample(t, n, &mut seed))
            .collect();
        let (before, now) = match (
            eval_func(arena, func, &args),
            eval_func(arena, after, &args),
        ) {
            (Ok(b), Ok(a)) => (value_to_json(&b), value_to_json(&a)),
            // The same run-time error (an index out of bounds at size 0) before and after.
            (Err(b), Err(a)) if a == b => continue,
            (b, a) => panic!("n = {n}: {b:?} became {a:?}\n{}", print_func(arena, after)),
        };
        assert!(
            close_json(&before, &now, 1e-12),
            "n = {n}: {before} became {now}\n{}",
            print_func(arena, after)
        );
    }
}

pub(crate) fn check(src: &str, expect: Expect) {
    let (mut prog, func) = load(src);
    let opt = simplify_to_fixed_point(&mut prog.arena, &func);
    let opt = inline_single_use(&mut prog.arena, &opt);
    let opt = simplify_to_fixed_point(&mut prog.arena, &opt);
    crate::check_types(&mut prog.arena, &opt)
        .unwrap_or_else(|e| panic!("{e}\n{}", print_func(&prog.arena, &opt)));
    assert_same_values(&prog.arena, &func, &opt);
    expect.assert_eq(&print_func(&prog.arena, &opt));
}

/// [`check`] through the whole of [`crate::optimize`] (the passes beyond the rules).
pub(crate) fn check_optimized(src: &str, expect: Expect) {
    let (mut prog, func) = load(src);
    let opt = crate::optimize(&mut prog.arena, &func).unwrap_or_else(|e| panic!("{e}"));
    assert_same_values(&prog.arena, &func, &opt);
    expect.assert_eq(&print_func(&prog.arena, &opt));
}

// ---- inlining, beta-reduction, forward substitution ----------------------------------

#[test]
fn beta_reduction_and_forward_substitution() {
    check(
        "def f(x: real, y: real) = (fun (a: real, b: real) -> a * b + a)(x, y)",
        expect![[r#"
            def f(x: real, y: real): real =
              x * y + x
        "#]],
    );
}

#[test]
fn continuations_are_inlined_at_their_use() {
    check(
        "def f(x: real) =
           let Y1 = fun (a: real) -> (a, a * 2) in
           let Y2 = fun (b: real) -> Y1(b + 1) in
           Y2(x)",
        expect![[r#"
            def f(x: real): (real, real) =
              let a = x + 1 in
              (a, a * 2)
        "#]],
    );
}

#[test]
fn dead_lets_disappear() {
    check(
        "def f(x: real) = let unused = sin(x) * 3 in let y = x * x in y",
        expect![[r#"
            def f(x: real): real =
              x * x
        "#]],
    );
}

#[test]
fn constants_propagate() {
    check(
        "def f(x: real) = let zero = 0 in let one = 1 in one * x + zero * x + (2 + 3)",
        expect![[r#"
            def f(x: real): real =
              x + 5
        "#]],
    );
}

#[test]
fn common_subexpressions_are_shared() {
    check(
        "def f(x: real, y: real) = let a = exp(x * y) in let b = exp(x * y) in a * b + exp(x * y)",
        expect![[r#"
            def f(x: real, y: real): real =
              let a = exp(x * y) in
              a * a + a
        "#]],
    );
}

#[test]
fn lets_float_out_of_bindings_and_operands() {
    check(
        "def f(x: real) = let a = (let b = x * x in b * x) in 1 + (let c = a * a in c + a)",
        expect![[r#"
            def f(x: real): real =
              let a = x * x * x in
              1 + (a * a + a)
        "#]],
    );
}

#[test]
fn tuples_split_and_projections_fold() {
    check(
        "def f(x: real, y: real) = let p = (x * y, sin(x)) in let (a, b) = p in fst p + a * b + snd (y, x)",
        expect![[r#"
            def f(x: real, y: real): real =
              let p0 = x * y in
              p0 + p0 * sin(x) + x
        "#]],
    );
}

// ---- algebraic ----------------------------------------------------------------------

#[test]
fn algebraic_identities() {
    check(
        "def f(x: real, y: real) = 0 * sin(x) + (y + 0) * 1 - 0 + (0 - y) + x / 1 + -1 * x + 0 / y + -(-x)",
        expect![[r#"
            def f(x: real, y: real): real =
              y + -y + x + -x + x
        "#]],
    );
}

#[test]
fn conditions_fold() {
    check(
        "def f(x: real) = if 1 < 2 && !(false) then x else sin(x)",
        expect![[r#"
            def f(x: real): real =
              x
        "#]],
    );
    check(
        "def f(x: real) = (if x > 0 then 0 else x) * 2 + (if x < 1 then x * x else x * x)",
        expect![[r#"
            def f(x: real): real =
              (if x > 0 then 0 else x * 2) + x * x
        "#]],
    );
}

// ---- arrays -------------------------------------------------------------------------

#[test]
fn array_identities_of_the_paper() {
    // map2 * A ones_like(B), map2 + A zeros_like(B), map (x.x) A  ~>  A
    check(
        "def f(A: [n]real, B: [n]real) = (map2 * A (ones_like(B)), map2 + A (zeros_like(B)), map (x. x) A)",
        expect![[r#"
            def f(A: [n]real, B: [n]real): ([n]real, [n]real, [n]real) =
              (A, A, A)
        "#]],
    );
    // map2 * A zeros_like(B) ~> zeros_like(B); reduce * 1 ones ~> 1; reduce + 0 zeros ~> 0
    check(
        "def f(A: [n]real, B: [n]real) = (map2 * A (zeros_like(B)), reduce * 1 (ones_like(A)), reduce + 0 (zeros_like(A)))",
        expect![[r#"
            def f(A: [n]real, B: [n]real): ([n]real, real, real) =
              (zeros_like(A), 1, 0)
        "#]],
    );
    // shifts of ones_like
    check(
        "def f(A: [n]real) = (shift1L (ones_like(A)), shift1R (ones_like(A)), reduce + 0 (ones_like(A)))",
        expect![[r#"
            def f(A: [n]real): ([n-1]real, [n-1]real, real) =
              (ones_like(shift1L A), ones_like(shift1R A), len(A))
        "#]],
    );
}

#[test]
fn an_operand_is_dropped_only_if_it_is_never_longer() {
    // At n = 0, `scanr * 1 (shift1L A)` has one element and `A` none: the map2 must stay.
    check(
        "def f(A: [n]real) = map2 * (scanr * 1 (shift1L A)) (ones_like(A))",
        expect![[r#"
            def f(A: [n]real): [n]real =
              map2 (x, y. x) (scanr * 1 (shift1L A)) ones_like(A)
        "#]],
    );
}

#[test]
fn map_fusion() {
    check(
        "def f(A: [n]real, B: [n]real) = map (x. x * 2) (map2 (a, b. a + b) A B)",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              map2 (a, b. (a + b) * 2) A B
        "#]],
    );
    check(
        "def f(A: [n]real, B: [n]real) = map2 (x, y. x * y) (map (a. exp(a)) A) B",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              map2 (a, y. exp(a) * y) A B
        "#]],
    );
}

#[test]
fn componentwise_reduce_of_tuples_splits() {
    check(
        "def f(A: [n]real, B: [n]real) =
           reduce (p, q. (fst p + fst q, snd p + snd q)) (0, 0) (map2 (a, b. (a * b, 0)) A B)",
        expect![[r#"
            def f(A: [n]real, B: [n]real): (real, real) =
              (reduce + 0 (map2 * A B), 0)
        "#]],
    );
}

// ---- the paper's worked examples, as Target terms written by hand --------------------

#[test]
fn paper_gradient_of_prod() {
    // (fun z -> let A0 = shift1R (scanl * 1 A) in ... map2 (a,b. a*b*z) A3 A2)(1)
    check(
        "def grad_prod(A: [n]real) =
           (fun (z: real) ->
              let A0 = shift1R (scanl * 1 A) in
              let A1 = shift1L (map2 (x, y. y) A0 A) in
              let A2 = map2 (x, y. x) A0 A in
              let A3 = scanr * 1 A1 in
              map2 (a, b. a * b * z) A3 A2)(1)",
        expect![[r#"
            def grad_prod(A: [n]real): [n]real =
              map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))
        "#]],
    );
}

#[test]
fn paper_gradient_of_sum() {
    check(
        "def grad_sum(A: [n]real) =
           (fun (z: real) ->
              let A0 = shift1R (scanl + 0 A) in
              let A1 = shift1L (map2 (x, y. 1) A0 A) in
              let A2 = map2 (x, y. 1) A0 A in
              let A3 = scanr * 1 A1 in
              map2 (a, b. a * b * z) A3 A2)(1)",
        expect![[r#"
            def grad_sum(A: [n]real): [n]real =
              ones_like(A)
        "#]],
    );
}

#[test]
fn paper_first_order_term() {
    // The introduction's term after reverse mode, as printed in the paper.
    check(
        "def intro(x1: real, x2: real, x3: real) =
           let Y = fun (y1: real, y2: real, y3: real) -> (y1, y2, y3) in
           let (w1, Y1) = (x1 * x2, fun (y1: real, y2: real, y3: real, y4: real) -> Y(y1 + x2 * y4, y2 + x1 * y4, y3)) in
           let (w2, Y2) = (w1 * x1, fun (y1: real, y2: real, y3: real, y4: real, y5: real) -> Y1(y1 + w1 * y5, y2, y3, y4 + x1 * y5)) in
           (w2, Y2(0, 0, 0, 0, 1))",
        expect![[r#"
            def intro(x1: real, x2: real, x3: real): (real, (real, real, real)) =
              let w1 = x1 * x2 in
              (w1 * x1, (w1 + x2 * x1, x1 * x1, 0))
        "#]],
    );
}

// ---- rules for the constructs beyond the core ------------------------------------------

#[test]
fn projection_of_a_conditional() {
    check(
        "def f(x: real, y: real) = snd (if x > y then (x, y * y) else (y, 2))",
        expect![[r#"
            def f(x: real, y: real): real =
              if x > y then y * y else 2
        "#]],
    );
}

#[test]
fn tuple_of_all_projections() {
    check(
        "def f(p: (real, real), x: real) = let q = (fst p, snd p) in (q, (snd p, fst p))",
        expect![[r#"
            def f(p: (real, real), x: real): ((real, real), (real, real)) =
              (p, (snd p, fst p))
        "#]],
    );
}

#[test]
fn conditional_of_tuples_splits() {
    check(
        "def f(x: real, y: real) = let b = x > y in let g = if b then (x, y * 2) else (0, y * 2) in fst g * snd g",
        expect![[r#"
            def f(x: real, y: real): real =
              (if x > y then x else 0) * (y * 2)
        "#]],
    );
}

#[test]
fn fills_of_general_arrays_as_operands() {
    // the fill's elements are fills of the operand's elements
    check(
        "def f(M: [n][m]real, v: [m]real) = map (r. map2 + r v) (zeros_like(M))",
        expect![[r#"
            def f(M: [n][m]real, v: [m]real): [n][m]real =
              map (r. v) M
        "#]],
    );
    check(
        "def f(P: [n](real, real)) = map2 (s, q. (fst s + snd q, snd s * fst q)) (zeros_like(P)) P",
        expect![[r#"
            def f(P: [n](real, real)): [n](real, real) =
              map (s. (snd s, 0)) P
        "#]],
    );
}

#[test]
fn last_element_of_a_scan() {
    check(
        "def f(A: [n]real, x: real) = (foldl (acc, y. y) 0 (scanl (a, b. a * b + x) x A), foldl (acc, y. y) 0 (scanr + x A))",
        expect![[r#"
            def f(A: [n]real, x: real): (real, real) =
              (foldl (a, b. a * b + x) x A, x)
        "#]],
    );
}

#[test]
fn last_element_of_a_fill() {
    // `scanl` has at least one element; `A` may have none
    check(
        "def f(A: [n]real) = (foldl (acc, y. y) 2 (ones_like(scanl + 0 A)), foldl (acc, y. y) 2 (ones_like(A)))",
        expect![[r#"
            def f(A: [n]real): (real, real) =
              (1, foldl (acc, y. y) 2 ones_like(A))
        "#]],
    );
}

#[test]
fn sums_into_an_array_never_longer_than_their_unit() {
    // a fold mapping over its accumulator is never longer than its unit
    check(
        "def f(M: [n][m]real, v: [m]real) = map2 + (zeros_like(v)) (reduce (s, t. map2 + s t) (zeros_like(v)) M)",
        expect![[r#"
            def f(M: [n][m]real, v: [m]real): [m]real =
              reduce (s, t. map2 + s t) zeros_like(v) M
        "#]],
    );
}

#[test]
fn sums_of_zero_arrays() {
    check(
        "def f(A: [n]real, B: [n]real) = reduce (s, t. map2 + s t) (zeros_like(A)) (map (b. zeros_like(A)) B)",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              zeros_like(A)
        "#]],
    );
}

// ---- array literals -------------------------------------------------------------------

#[test]
fn shifts_and_last_element_of_literals() {
    check(
        "def f(x: real, y: real) = (shift1L [x, y, 2], shift1R [x, y, 2], foldl (acc, z. z) 0 (shift1R [x, y * y, 2]))",
        expect![[r#"
            def f(x: real, y: real): ([2]real, [2]real, real) =
              ([y, 2], [x, y], y * y)
        "#]],
    );
}

#[test]
fn maps_over_literals_unroll() {
    check(
        "def f(x: real, y: real) = map2 (a, b. a * b + a) [x, y] (map (c. sin(c)) [y * y, 2])",
        expect![[r#"
            def f(x: real, y: real): [2]real =
              [x * sin(y * y) + x, y * 0.9092974268256817 + y]
        "#]],
    );
}

#[test]
fn scans_and_folds_over_literals_unroll() {
    check(
        "def f(x: real, y: real) = (scanl * 1 [x, y], scanr (a, b. a - b) x [y, 2], reduce + 0 [x, y, x * y])",
        expect![[r#"
            def f(x: real, y: real): ([3]real, [3]real, real) =
              let s = x * y in
              let s_1 = 2 - x in
              ([1, x, s], [y - s_1, s_1, x], x + y + s)
        "#]],
    );
}

#[test]
fn bound_literals_split_and_fills_of_literals() {
    check(
        "def f(x: real, y: real) = let A = [x, y * y] in (foldl (acc, z. z) 0 (shift1R A) * sum(A), ones_like(A))",
        expect![[r#"
            def f(x: real, y: real): (real, [2]real) =
              (x * (x + y * y), [1, 1])
        "#]],
    );
}

#[test]
fn maps_with_a_constant_body_are_fills() {
    check(
        "def f(A: [n]real, x: real) = let Z = map (a. [x, 1]) A in map2 (a, r. a * foldl (acc, z. z) 0 r) A Z",
        expect![[r#"
            def f(A: [n]real, x: real): [n]real =
              A
        "#]],
    );
}

#[test]
fn lengths_are_known_inside_tuples_elements_and_folds() {
    // rows of M and the components of the pairs have length m; the fold keeps its unit's
    check(
        "def f(M: [n][m]real, v: [m]real) =
           let P = map (r. (r, map2 * r v)) M in
           let S = reduce (s, t. map2 + s t) (zeros_like(v)) (map (p. snd p) P) in
           (map (p. map2 + (zeros_like(fst p)) (snd p)) P, map2 + (zeros_like(v)) S)",
        expect![[r#"
            def f(M: [n][m]real, v: [m]real): ([n][m]real, [m]real) =
              let P = map (r. (r, map2 * r v)) M in
              (map (p. snd p) P, reduce (s, t. map2 + s t) zeros_like(v) (map (p_1. snd p_1) P))
        "#]],
    );
}

#[test]
fn maps_producing_zeros_of_their_elements() {
    check(
        "def f(P: [n](real, real), M: [n][m]real, A: [n]real) =
           (map (q. (0, 0)) P, map (r. zeros_like(r)) M, map (a. (1, 1)) A, reduce + 0 (map (q. 1) P))",
        expect![[r#"
            def f(P: [n](real, real), M: [n][m]real, A: [n]real): ([n](real, real), [n][m]real, [n](real, real), real) =
              (zeros_like(P), zeros_like(M), map (a. (1, 1)) A, len(P))
        "#]],
    );
}

#[test]
fn products_with_reciprocals_are_quotients() {
    check(
        "def f(x: real, y: real) = (1 / (1 + x * x)) * y + x * (1 / y)",
        expect![[r#"
            def f(x: real, y: real): real =
              y / (1 + x * x) + x / y
        "#]],
    );
}

#[test]
fn scans_that_keep_their_accumulator_repeat_it() {
    check(
        "def f(A: [n]real, z: real) = (shift1L (scanr (a, t. t) z A), shift1R (scanl (t, a. t) z A))",
        expect![[r#"
            def f(A: [n]real, z: real): ([n]real, [n]real) =
              (map (x. z) A, map (x_1. z) A)
        "#]],
    );
}

#[test]
fn a_binding_returned_at_once_is_its_value() {
    check(
        "def f(A: [n]real, x: real) = map (a. let y = a * x in y) A",
        expect![[r#"
            def f(A: [n]real, x: real): [n]real =
              map (a. a * x) A
        "#]],
    );
}

#[test]
fn map2_with_a_constant_body_is_a_fill() {
    check(
        "def f(A: [n]real, P: [n](real, real)) = (map2 (a, q. (0, 0)) A P, map2 (q, a. 1) P A)",
        expect![[r#"
            def f(A: [n]real, P: [n](real, real)): ([n](real, real), [n]real) =
              (zeros_like(P), ones_like(A))
        "#]],
    );
}

#[test]
fn lengths_known_exactly_are_lengths_of_parameters() {
    check(
        "def f(P: [n](real, real), x: real) = len(shift1R (scanl + 0 (map (q. x) P))) * x",
        expect![[r#"
            def f(P: [n](real, real), x: real): real =
              len(P) * x
        "#]],
    );
}

#[test]
fn constant_maps_keep_only_the_length_of_their_operand() {
    check(
        "def f(A: [n]real, x: real) = (map (b. x) (shift1R (scanl + 0 A)), map (b. x * 2) (map2 * A (zeros_like(A))))",
        expect![[r#"
            def f(A: [n]real, x: real): ([n]real, [n]real) =
              (map (b. x) A, map (b_1. x * 2) A)
        "#]],
    );
}

#[test]
fn constant_components_of_array_elements() {
    // `G` stays bound (a scan reads it); its elements' first components are all 0
    check(
        "def f(A: [n]real, x: real) =
           let G = map (a. (0, sin(a) * x)) A in
           (scanl (acc, g. acc + snd g) 0 G, map (g. fst g * snd g + 1) G)",
        expect![[r#"
            def f(A: [n]real, x: real): ([n+1]real, [n]real) =
              let G = map (a. (0, sin(a) * x)) A in
              (scanl (acc, g. acc + snd g) 0 G, map (g_1. 1) G)
        "#]],
    );
}

// ---- scans --------------------------------------------------------------------------

#[test]
fn partial_derivatives_read_the_next_state_of_a_scan() {
    // The derivative of a tanh recurrence: `tanh(w * h + x)` is the next state.
    check(
        "def f(X: [n]real, w: real, h0: real) =
           let S = scanl (h, x. tanh(w * h + x)) h0 X in
           (S, map2 (h, x. let v = w * h + x in (1 - tanh(v) * tanh(v)) * x * h) (shift1R S) X)",
        expect![[r#"
            def f(X: [n]real, w: real, h0: real): ([n+1]real, [n]real) =
              let S = scanl (h, x. tanh(w * h + x)) h0 X in
              (
                S,
                map2 (q, next. (1 - next * next) * snd q * fst q) (map2 (h_1, x_1. (h_1, x_1)) (shift1R S) X) (shift1L S)
              )
        "#]],
    );
    // Operands the other way round; the elements are not needed any more.
    check(
        "def f(X: [n]real, w: real, h0: real) =
           let S = scanl (h, x. exp(w * h + x)) h0 X in
           (S, map2 (x, h. exp(w * h + x) * h) X (shift1R S))",
        expect![[r#"
            def f(X: [n]real, w: real, h0: real): ([n+1]real, [n]real) =
              let S = scanl (h, x. exp(w * h + x)) h0 X in
              (S, map2 (h_1, next. next * h_1) (shift1R S) (shift1L S))
        "#]],
    );
    // Cheap steps are computed again rather than read.
    check(
        "def f(X: [n]real, w: real, h0: real) =
           let S = scanl (h, x. w * h + x) h0 X in
           (S, map2 (h, x. (w * h + x) * h) (shift1R S) X)",
        expect![[r#"
            def f(X: [n]real, w: real, h0: real): ([n+1]real, [n]real) =
              let S = scanl (h, x. w * h + x) h0 X in
              (S, map2 (h_1, x_1. (w * h_1 + x_1) * h_1) (shift1R S) X)
        "#]],
    );
}

#[test]
fn constant_factors_leave_sums() {
    check(
        "def f(A: [n]real, B: [n]real, c: real) =
           (reduce + 0 (map (a. c * sin(a)) A), reduce + 0 (map2 (a, b. -(a * b)) A B),
            reduce + 0 (map (a. a * a) A))",
        expect![[r#"
            def f(A: [n]real, B: [n]real, c: real): (real, real, real) =
              (c * reduce + 0 (map (a. sin(a)) A), -reduce + 0 (map2 * A B), reduce + 0 (map (a_1. a_1 * a_1) A))
        "#]],
    );
}

#[test]
fn folds_of_operator_sections_are_shared_whatever_their_binders() {
    check(
        "def f(A: [n]real) =
           let s = reduce (a, b. a + b) 0 A in
           let t = reduce (p, q. p + q) 0 A in
           let u = scanl (p, q. max(p, q)) 0 A in
           let v = scanl (c, d. max(c, d)) 0 A in
           s * t + sum(map2 * u v)",
        expect![[r#"
            def f(A: [n]real): real =
              let s = reduce + 0 A in
              s * s + reduce + 0 (map (x. x * x) (scanl max 0 A))
        "#]],
    );
}

/// One pass drops a binding that only a dead one read, and the one before it: the next
/// pass has nothing left to do.
#[test]
fn one_pass_drops_a_chain_of_dead_bindings() {
    let src = "def f(x: real) = let a = sin(x) in let b = a * a in let c = b * x in x + 1";
    let (mut prog, func) = load(src);
    let mut s = crate::Simplifier::new(&mut prog.arena, &func);
    let body = s.run(func.body);
    assert_eq!(s.rewrites, 3);
    let once = unfad_syntax::Func { body, ..func };
    expect![[r#"
        def f(x: real): real =
          x + 1
    "#]]
    .assert_eq(&print_func(&prog.arena, &once));
    let mut s = crate::Simplifier::new(&mut prog.arena, &once);
    s.run(once.body);
    assert_eq!(s.rewrites, 0);
}

/// A map reading one component of an elementwise sum of arrays of pairs reads the sum of
/// that component alone: the other component's summands (`sin(x)`) go.
#[test]
fn a_map_of_one_component_of_a_sum_of_pairs_sums_that_component_alone() {
    check_optimized(
        "def f(A: [n][k]real, B: [n][k]real, Z: [k]real) =
           map (p. fst p * 2) (reduce (s, t. map2 (u, v. (fst u + fst v, snd u + snd v)) s t)
             (map (c. (c, c)) Z) (map2 (a, b. map2 (x, y. (x * y, sin(x))) a b) A B))",
        expect![[r#"
            def f(A: [n][k]real, B: [n][k]real, Z: [k]real): [k]real =
              map (p. p * 2) (reduce (s, t. map2 + s t) Z (map2 (a, b. map2 * a b) A B))
        "#]],
    );
}
