//! One test per rule, named after it: the rule applied by itself to a term written so
//! that the rule's node is the whole body with its children already simplified
//! ([`check_rule`]), or, for rules that need what the walk learns (definitions, hash-consed
//! operands), the whole simplifier on a term where the rule is what must fire ([`check`]).
//! Both evaluate the term before and after at sizes 0, 1 and 3.

use expect_test::{expect, Expect};
use unfad_syntax::{print_func, Func, Program};

use super::{assert_same_values, check};
use crate::rules::{algebraic, arrays, conditionals, literals, scans, scatter, tuples, Rule};
use crate::Simplifier;

/// Apply `rule` by itself to the body of the function `src` (it must fire and change the
/// term); the result must keep the type and the value, and print as `expect`.
fn check_rule(rule: Rule, src: &str, expect: Expect) {
    let mut prog = Program::load(src).unwrap_or_else(|e| panic!("{e}"));
    let func = prog.inline(prog.entry(None).unwrap()).unwrap();
    let mut pass = Simplifier::new(&mut prog.arena, &func);
    let body = rule(&mut pass.rule_cx(), func.body).expect("the rule fires");
    assert_ne!(body, func.body, "the rule changes the term");
    let after = Func {
        body,
        ..func.clone()
    };
    crate::check_types(&mut prog.arena, &after)
        .unwrap_or_else(|e| panic!("{e}\n{}", print_func(&prog.arena, &after)));
    assert_same_values(&prog.arena, &func, &after);
    expect.assert_eq(&print_func(&prog.arena, &after));
}

/// Apply `rule` by itself to the body of the function `src`: it must not fire (`why`).
fn check_rule_declines(rule: Rule, src: &str, why: &str) {
    let mut prog = Program::load(src).unwrap_or_else(|e| panic!("{e}"));
    let func = prog.inline(prog.entry(None).unwrap()).unwrap();
    let mut pass = Simplifier::new(&mut prog.arena, &func);
    assert_eq!(rule(&mut pass.rule_cx(), func.body), None, "{why}");
}

// ---- algebraic --------------------------------------------------------------

/// `op c` folds to a constant.
#[test]
fn fold_unary() {
    check_rule(
        algebraic::fold_unary,
        "def f(x: real) = exp(0)",
        expect![[r#"
            def f(x: real): real =
              1
        "#]],
    );
}

/// `c1 op c2` folds to a constant.
#[test]
fn fold_binary() {
    check_rule(
        algebraic::fold_binary,
        "def f(x: real) = 2 * 3",
        expect![[r#"
            def f(x: real): real =
              6
        "#]],
    );
}

/// `--e` is `e`.
#[test]
fn double_negation() {
    check_rule(
        algebraic::double_negation,
        "def f(x: real) = -(-sin(x))",
        expect![[r#"
            def f(x: real): real =
              sin(x)
        "#]],
    );
}

/// A product with a zero is zero.
#[test]
fn times_zero() {
    check_rule(
        algebraic::times_zero,
        "def f(x: real) = sin(x) * 0",
        expect![[r#"
            def f(x: real): real =
              0
        "#]],
    );
}

/// Adding zero changes nothing.
#[test]
fn plus_zero() {
    check_rule(
        algebraic::plus_zero,
        "def f(x: real) = 0 + sin(x)",
        expect![[r#"
            def f(x: real): real =
              sin(x)
        "#]],
    );
}

/// On ints, a sum less one of its terms is the other (a slice's length); not on reals.
#[test]
fn int_sum_minus_term() {
    check_rule(
        algebraic::int_sum_minus_term,
        "def f(k: int, m: int) = k + m - k",
        expect![[r#"
            def f(k: int, m: int): int =
              m
        "#]],
    );
    check_rule_declines(
        algebraic::int_sum_minus_term,
        "def f(x: real, y: real) = x + y - x",
        "on reals, `(x + y) - x` rounds",
    );
}

/// Multiplying or dividing by one changes nothing.
#[test]
fn times_one() {
    check_rule(
        algebraic::times_one,
        "def f(x: real) = sin(x) / 1",
        expect![[r#"
            def f(x: real): real =
              sin(x)
        "#]],
    );
}

/// `0 - e` is a negation.
#[test]
fn zero_minus() {
    check_rule(
        algebraic::zero_minus,
        "def f(x: real) = 0 - sin(x)",
        expect![[r#"
            def f(x: real): real =
              -sin(x)
        "#]],
    );
}

/// A product with minus one is a negation.
#[test]
fn times_minus_one() {
    check_rule(
        algebraic::times_minus_one,
        "def f(x: real) = sin(x) * -1",
        expect![[r#"
            def f(x: real): real =
              -sin(x)
        "#]],
    );
}

/// Zero divided by anything is zero.
#[test]
fn zero_divided() {
    check_rule(
        algebraic::zero_divided,
        "def f(x: real) = 0 / x",
        expect![[r#"
            def f(x: real): real =
              0
        "#]],
    );
}

/// A product with a reciprocal is a quotient.
#[test]
fn reciprocal_times() {
    check_rule(
        algebraic::reciprocal_times,
        "def f(x: real, y: real) = (1 / x) * y",
        expect![[r#"
            def f(x: real, y: real): real =
              y / x
        "#]],
    );
}

#[test]
fn reciprocal_product() {
    check_rule(
        algebraic::reciprocal_product,
        "def f(x: real) = (1 / x) * x",
        expect![[r#"
            def f(x: real): real =
              1
        "#]],
    );
    check_rule(
        algebraic::reciprocal_product,
        "def f(x: real) = x * (1 / x)",
        expect![[r#"
            def f(x: real): real =
              1
        "#]],
    );
    check_rule(
        algebraic::reciprocal_product,
        "def f(x: real) = (1 / x) * -x",
        expect![[r#"
            def f(x: real): real =
              -1
        "#]],
    );
    check_rule_declines(
        algebraic::reciprocal_product,
        "def f(x: real, y: real) = (1 / x) * y",
        "`y` is not `x`",
    );
}

/// A product of two reciprocals, or of a quotient by `x` and `1 / x`, stays a product:
/// one division then serves both (a quotient's adjoint), where a quotient would divide
/// again; a quotient by another denominator still becomes one.
#[test]
fn reciprocal_times_declines_on_two_reciprocals() {
    check_rule_declines(
        algebraic::reciprocal_times,
        "def f(x: real) = (1 / x) * (1 / x)",
        "`(1 / x) / x` would divide twice",
    );
    check_rule_declines(
        algebraic::reciprocal_times,
        "def f(x: real, y: real) = (y / x) * (1 / x)",
        "`(y / x) / x` would divide again",
    );
    check_rule(
        algebraic::reciprocal_times,
        "def f(x: real, y: real, w: real) = (y / w) * (1 / x)",
        expect![[r#"
            def f(x: real, y: real, w: real): real =
              y / w / x
        "#]],
    );
}

/// The length of a bound map is its operand's: the map is then read only where it is used.
#[test]
fn len_of_bound_map() {
    check(
        "def f(A: [n]real, w: real) = let B = map (a. a * w) (shift1L A) in (len(B), reduce + 0 B)",
        expect![[r#"
            def f(A: [n]real, w: real): (real, real) =
              (len(shift1L A), w * reduce + 0 (shift1L A))
        "#]],
    );
}

/// The derivative of the sigmoid cancels the denominators of the quotients it scales.
#[test]
fn logistic_quotients() {
    check_rule(
        algebraic::logistic_quotients,
        "def f(p: real, t: real) = s_one_minus_s(p) * (-(-(1 - t) / (1 - p)) + -t / p)",
        expect![[r#"
            def f(p: real, t: real): real =
              -(p * -(1 - t)) + (1 - p) * -t
        "#]],
    );
    // Through a `let`-bound denominator, on the right of the product.
    check(
        "def f(p: real, t: real) = let q = 1 - p in (log(q), (t / q - 2 * t / p) * s_one_minus_s(p))",
        expect![[r#"
            def f(p: real, t: real): (real, real) =
              let q = 1 - p in
              (log(q), p * t - q * (2 * t))
        "#]],
    );
    check_rule_declines(
        algebraic::logistic_quotients,
        "def f(p: real, t: real, r: real) = s_one_minus_s(p) * (t / p + t / r)",
        "a quotient by something else than p or 1 - p",
    );
    check_rule_declines(
        algebraic::logistic_quotients,
        "def f(p: real, t: real) = s_one_minus_s(p) * (t / p + t)",
        "a term that is no quotient",
    );
}

/// Comparisons of constants and connectives of known conditions fold (the walk then picks
/// the branch).
///
/// Through the whole walk, whose hash-consing or bindings
/// [`crate::rules::algebraic::fold_boolean`] needs.
#[test]
fn fold_boolean() {
    check(
        "def f(x: real, y: real) = (if !(1 < 2) || false then x else y, if x < y && true then x else y)",
        expect![[r#"
            def f(x: real, y: real): (real, real) =
              (y, (if x < y then x else y))
        "#]],
    );
}

// ---- conditionals -----------------------------------------------------------

/// An operator goes into the branches when one is a constant.
#[test]
fn push_into_if() {
    check_rule(
        conditionals::push_into_if,
        "def f(x: real, y: real) = (if x > y then 0 else x) * 2",
        expect![[r#"
            def f(x: real, y: real): real =
              if x > y then 0 else x * 2
        "#]],
    );
}

/// A conditional with equal branches is either.
///
/// Through the whole walk, whose hash-consing or bindings
/// [`crate::rules::conditionals::same_branches`] needs.
#[test]
fn same_branches() {
    check(
        "def f(x: real, y: real) = if x > y then sin(x) else sin(x)",
        expect![[r#"
            def f(x: real, y: real): real =
              sin(x)
        "#]],
    );
}

/// A conditional choosing false or true is a negation.
///
/// Through the whole walk, whose hash-consing or bindings
/// [`crate::rules::conditionals::boolean_branches`] needs.
#[test]
fn boolean_branches() {
    check(
        "def f(x: real, y: real) = if (if x > y then false else true) then x else y",
        expect![[r#"
            def f(x: real, y: real): real =
              if !(x > y) then x else y
        "#]],
    );
}

/// A conditional of tuples on a trivial condition is a tuple of conditionals.
///
/// Through the whole walk, whose hash-consing or bindings
/// [`crate::rules::conditionals::split_tuple_branches`] needs.
#[test]
fn split_tuple_branches() {
    check(
        "def f(x: real, y: real) = let b = x > y in let t = if b then (x, 1) else (y, 2) in fst t * snd t",
        expect![[r#"
            def f(x: real, y: real): real =
              let b = x > y in
              (if b then x else y) * (if b then 1 else 2)
        "#]],
    );
    // A comparison of names as the condition, and a branch binding a few scalar
    // operations before its tuple: the constant component is known outside.
    check_rule(
        conditionals::split_tuple_branches,
        "def f(x: [n]real, j: int) = if j >= 1 then (let i = j - 1 in (1, x[i] * 2)) else (1, 0)",
        expect![[r#"
            def f(x: [n]real, j: int): (real, real) =
              ((if j >= 1 then 1 else 1), (if j >= 1 then x[j - 1] * 2 else 0))
        "#]],
    );
}

// ---- tuples -----------------------------------------------------------------

/// A projection of a tuple is its component.
#[test]
fn project_tuple() {
    check_rule(
        tuples::project_tuple,
        "def f(x: real, y: real) = fst (x, sin(y))",
        expect![[r#"
            def f(x: real, y: real): real =
              x
        "#]],
    );
}

/// A projection of a fill is the fill of the projection.
#[test]
fn project_constant() {
    check_rule(
        tuples::project_constant,
        "def f(x: real, y: real) = fst (zeros_like((x, y)))",
        expect![[r#"
            def f(x: real, y: real): real =
              zeros_like(fst (x, y))
        "#]],
    );
}

/// The fills of a real are constants.
#[test]
fn constant_of_real() {
    check_rule(
        tuples::constant_of_real,
        "def f(x: real) = ones_like(x)",
        expect![[r#"
            def f(x: real): real =
              1
        "#]],
    );
}

/// The fills of a tuple are tuples of fills.
#[test]
fn constant_of_tuple() {
    check_rule(
        tuples::constant_of_tuple,
        "def f(x: real, y: real) = zeros_like((x, y))",
        expect![[r#"
            def f(x: real, y: real): (real, real) =
              (0, 0)
        "#]],
    );
}

/// A projection goes into the branches of a conditional.
#[test]
fn project_into_if() {
    check_rule(
        tuples::project_into_if,
        "def f(x: real, y: real) = snd (if x > y then (x, y) else (y, x))",
        expect![[r#"
            def f(x: real, y: real): real =
              if x > y then y else x
        "#]],
    );
}

/// A tuple of all the projections of a tuple is the tuple.
///
/// Through the whole walk, whose hash-consing or bindings
/// [`crate::rules::tuples::tuple_eta`] needs.
#[test]
fn tuple_eta() {
    check(
        "def f(p: (real, real)) = (fst p, snd p)",
        expect![[r#"
            def f(p: (real, real)): (real, real) =
              p
        "#]],
    );
}

/// A projection of an element whose component is constant is that constant.
///
/// Through the whole walk, whose hash-consing or bindings
/// [`crate::rules::tuples::project_constant_part`] needs.
#[test]
fn project_constant_part() {
    check(
        "def f(A: [n]real, x: real) = let G = map (a. (0, sin(a) * x)) A in map (g. fst g * snd g) G",
        expect![[r#"
            def f(A: [n]real, x: real): [n]real =
              zeros_like(A)
        "#]],
    );
}

// ---- literals ---------------------------------------------------------------

/// Shifts of literals are shorter literals.
#[test]
fn shift_literal() {
    check_rule(
        literals::shift_literal,
        "def f(x: real, y: real) = (shift1L [x, y, 2])",
        expect![[r#"
            def f(x: real, y: real): [2]real =
              [y, 2]
        "#]],
    );
}

/// The last element of a literal is its last item.
#[test]
fn last_of_literal() {
    check_rule(
        literals::last_of_literal,
        "def f(x: real, y: real) = foldl (acc, z. z) 0 [x, y]",
        expect![[r#"
            def f(x: real, y: real): real =
              y
        "#]],
    );
}

/// A literal read at a constant position is that item; out of bounds the read stays.
#[test]
fn index_of_literal() {
    check_rule(
        literals::index_of_literal,
        "def f(x: real, y: real) = [x * y, sin(y), 2][1]",
        expect![[r#"
            def f(x: real, y: real): real =
              sin(y)
        "#]],
    );
    check_rule_declines(
        literals::index_of_literal,
        "def f(x: real, y: real) = [x, y][2]",
        "a read out of bounds stays, to fail at run time",
    );
}

/// A map over a small `iota` whose body reads only short arrays unrolls; one that reads
/// an array of any length stays a loop.
#[test]
fn map_small_iota() {
    check_rule(
        literals::map_small_iota,
        "def f(x: [3]real, y: [3]real) = map (i. x[i] - y[2 - i]) (iota 3)",
        expect![[r#"
            def f(x: [3]real, y: [3]real): [3]real =
              [x[0] - y[2], x[1] - y[1], x[2] - y[0]]
        "#]],
    );
    check_rule_declines(
        literals::map_small_iota,
        "def f(x: [n]real) = map (i. x[i]) (iota 3)",
        "a read of an array of any length stays in a loop",
    );
}

/// Zeros added elementwise to an array as long as the literal are that array, on either
/// side; zeros multiplied are not.
#[test]
fn add_zero_literal() {
    check_rule(
        literals::add_zero_literal,
        "def f(A: [n][2]real) = map2 + [0, 0] (reduce (s, t. map2 + s t) [0, 0] A)",
        expect![[r#"
            def f(A: [n][2]real): [2]real =
              reduce (s, t. map2 + s t) [0, 0] A
        "#]],
    );
    check_rule(
        literals::add_zero_literal,
        "def f(A: [n][3]real) = map2 (a, b. a + b) (reduce (s, t. map2 + s t) [0, 0, 0] A) [0, 0, 0]",
        expect![[r#"
            def f(A: [n][3]real): [3]real =
              reduce (s, t. map2 + s t) [0, 0, 0] A
        "#]],
    );
    check_rule_declines(
        literals::add_zero_literal,
        "def f(A: [n][2]real) = map2 * [0, 0] (reduce (s, t. map2 + s t) [0, 0] A)",
        "a product with zeros is not the other operand",
    );
}

/// The zeros of a short array of constant length are a literal.
#[test]
fn small_zeros() {
    let mut prog = Program::load("def f(x: [3]real, y: [n]real) = (x, y)").unwrap();
    let func = prog.inline(prog.entry(None).unwrap()).unwrap();
    let x = prog.arena.var(func.params[0]);
    let y = prog.arena.var(func.params[1]);
    let zx = prog.arena.add(unfad_syntax::Node::ZerosLike(x));
    let zy = prog.arena.add(unfad_syntax::Node::ZerosLike(y));
    let mut pass = Simplifier::new(&mut prog.arena, &func);
    let got = literals::small_zeros(&mut pass.rule_cx(), zx).expect("fires on [3]real");
    assert_eq!(
        literals::small_zeros(&mut pass.rule_cx(), zy),
        None,
        "[n]real stays"
    );
    drop(pass);
    assert_eq!(unfad_syntax::print_expr(&prog.arena, got), "[0, 0, 0]");
}

/// Scatters into a short literal at constant positions add into its elements; a position
/// outside adds nothing.
#[test]
fn scatter_into_literal() {
    check_rule(
        literals::scatter_into_literal,
        "def f(x: real, y: real) = scatter_add([x, 0, y], [2, 0, 5], [x * y, 2, 7])",
        expect![[r#"
            def f(x: real, y: real): [3]real =
              [x + 2, 0, y + x * y]
        "#]],
    );
}

/// A scatter into a short array held by a variable adds into its elements, read out.
#[test]
fn scatter_into_literal_of_a_variable() {
    check_rule(
        literals::scatter_into_literal,
        "def f(a: [3]real, x: real) = scatter_add(a, [2, 0], [x, 1])",
        expect![[r#"
            def f(a: [3]real, x: real): [3]real =
              [a[0] + 1, a[1], a[2] + x]
        "#]],
    );
}

/// A literal of a short array's elements, read in order, is the array.
#[test]
fn literal_eta() {
    check_rule(
        literals::literal_eta,
        "def f(a: [3]real) = [a[0], a[1], a[2]]",
        expect![[r#"
            def f(a: [3]real): [3]real =
              a
        "#]],
    );
    check_rule_declines(
        literals::literal_eta,
        "def f(a: [3]real) = [a[0], a[2], a[1]]",
        "out of order, the literal is another array",
    );
    check_rule_declines(
        literals::literal_eta,
        "def f(a: [3]real) = [a[0], a[1]]",
        "a prefix is shorter than the array",
    );
}

/// A literal longer than `UNROLL` (an adjoint of a camera's 11 parameters) unrolls when
/// its elements' function is light; a heavy one stays a loop.
#[test]
fn map_literal_long_and_light() {
    check_rule(
        literals::map_literal,
        "def f(a: [11]real, x: real) =
           map2 (u, v. u + x * v) [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, x] a",
        expect![[r#"
            def f(a: [11]real, x: real): [11]real =
              let v = a[0] in
              let v_1 = a[1] in
              let v_2 = a[2] in
              let v_3 = a[3] in
              let v_4 = a[4] in
              let v_5 = a[5] in
              let v_6 = a[6] in
              let v_7 = a[7] in
              let v_8 = a[8] in
              let v_9 = a[9] in
              let v_10 = a[10] in
              [
                x * v,
                x * v_1,
                x * v_2,
                x * v_3,
                x * v_4,
                x * v_5,
                1 + x * v_6,
                x * v_7,
                x * v_8,
                x * v_9,
                x + x * v_10
              ]
        "#]],
    );
    check_rule_declines(
        literals::map_literal,
        "def f(x: real) =
           map (u. sin(u) * cos(u) * exp(u) * tanh(u) * log(u) * u) [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, x]",
        "eleven copies of a heavy function stay a loop",
    );
}

/// A `map2` of a short `iota` beside a component of a variable unrolls.
#[test]
fn map_literal_iota_beside_a_component() {
    check_rule(
        literals::map_literal,
        "def f(p: (real, [3]real)) = map2 (u, i. if i == 1 then u else 0) (snd p) (iota 3)",
        expect![[r#"
            def f(p: (real, [3]real)): [3]real =
              [0, (snd p)[1], 0]
        "#]],
    );
}

/// A `map2` beside a literal reads a short `iota` as its constants.
#[test]
fn map_literal_beside_iota() {
    check_rule(
        literals::map_literal,
        "def f(x: real, y: real) = map2 (a, i. a * real(i)) [x, y] (iota 2)",
        expect![[r#"
            def f(x: real, y: real): [2]real =
              [0, y]
        "#]],
    );
}

/// Maps over small literals unroll.
#[test]
fn map_literal() {
    check_rule(
        literals::map_literal,
        "def f(x: real, y: real) = map (a. sin(a)) [x, y]",
        expect![[r#"
            def f(x: real, y: real): [2]real =
              [sin(x), sin(y)]
        "#]],
    );
}

/// Scans over small literals unroll.
#[test]
fn fold_literal() {
    check_rule(
        literals::fold_literal,
        "def f(x: real, y: real) = scanl + 1 [x, y]",
        expect![[r#"
            def f(x: real, y: real): [3]real =
              let s = 1 + x in
              let s_1 = s + y in
              [1, s, s_1]
        "#]],
    );
}

/// Fills of literals are literals of fills.
#[test]
fn fill_literal() {
    check_rule(
        literals::fill_literal,
        "def f(x: real, y: real) = zeros_like([x, y])",
        expect![[r#"
            def f(x: real, y: real): [2]real =
              [0, 0]
        "#]],
    );
}

// ---- scans ------------------------------------------------------------------

/// Partial derivatives read the next state of a scan from the scan, also when the states
/// before each step are bound by a `let` (read by two maps). The operands written as they
/// are: `tests::partial_derivatives_read_the_next_state_of_a_scan`.
///
/// Through the whole walk, whose hash-consing or bindings
/// [`crate::rules::scans::scan_next_element`] needs.
#[test]
fn scan_next_element() {
    check(
        "def f(X: [n]real, w: real, h0: real) =
           let S = scanl (h, x. tanh(w * h + x)) h0 X in
           let B = shift1R S in
           (map2 (h, x. let v = w * h + x in (1 - tanh(v) * tanh(v)) * x) B X, map2 * B X)",
        expect![[r#"
            def f(X: [n]real, w: real, h0: real): ([n]real, [n]real) =
              let S = scanl (h, x. tanh(w * h + x)) h0 X in
              (map2 (x_1, next. (1 - next * next) * x_1) X (shift1L S), map2 * (shift1R S) X)
        "#]],
    );
}

/// Loops over the steps of a scan whose step is a layer (a map) read the layer's output
/// from the scan: the `scanr` that computes a row's value again reads the element of the
/// next state zipped into its inner loop, the `map2` that computes the whole layer again
/// reads the next state.
#[test]
fn scan_next_in_consumer() {
    check(
        "def f(W: [m][m]real, h0: [m]real, X: [n]real, D: [n][m]real) =
           let S = scanl (h, x. map (row. tanh(x * reduce + 0 (map2 * row h))) W) h0 X in
           let Q = map2 (h, x. (h, x)) (shift1R S) X in
           (scanr (q, a.
              a + reduce + 0 (map2 (row, e.
                let t = tanh(snd q * reduce + 0 (map2 * row (fst q))) in
                e * (1 - t * t)) W (fst q))) 0 Q,
            map2 (q, d. reduce + 0 (map2 * d (map (row. tanh(snd q * reduce + 0 (map2 * row (fst q)))) W))) Q D)",
        expect![[r#"
            def f(W: [m][m]real, h0: [m]real, X: [n]real, D: [n][m]real): ([n+1]real, [n]real) =
              let S = scanl (h, x. map (row. tanh(x * reduce + 0 (map2 * row h))) W) h0 X in
              (
                scanr (q, a. a + reduce + 0 (map2 (b, n. b * (1 - n * n)) (fst (fst q)) (snd q))) 0 (map2 (a_1, b_1. (a_1, b_1)) (map2 (h_1, x_1. (h_1, x_1)) (shift1R S) X) (shift1L S)),
                map2 (b_2, d. reduce + 0 (map2 * d b_2)) (shift1L S) D
              )
        "#]],
    );
}

// ---- arrays -----------------------------------------------------------------

/// `map (x. x) A` is `A`.
#[test]
fn map_identity() {
    check_rule(
        arrays::map_identity,
        "def f(A: [n]real) = map (x. x) A",
        expect![[r#"
            def f(A: [n]real): [n]real =
              A
        "#]],
    );
}

/// A map over a fill specialises its parameter.
#[test]
fn map_constant_operand() {
    check_rule(
        arrays::map_constant_operand,
        "def f(A: [n]real) = map (x. x + 1) (ones_like(A))",
        expect![[r#"
            def f(A: [n]real): [n]real =
              map (x. 2) A
        "#]],
    );
}

/// A map over a fill of tuples runs over the filled array.
#[test]
fn map_fill_operand() {
    check_rule(
        arrays::map_fill_operand,
        "def f(A: [n](real, real)) = map (p. fst p) (zeros_like(A))",
        expect![[r#"
            def f(A: [n](real, real)): [n]real =
              map (p. 0) A
        "#]],
    );
}

/// A map to zero is a fill.
#[test]
fn map_constant_body() {
    check_rule(
        arrays::map_constant_body,
        "def f(A: [n]real) = map (x. 0) A",
        expect![[r#"
            def f(A: [n]real): [n]real =
              zeros_like(A)
        "#]],
    );
}

/// A map to a tuple of ones of its elements' type is a fill.
#[test]
fn map_fill_body() {
    check_rule(
        arrays::map_fill_body,
        "def f(A: [n](real, real)) = map (p. (1, 1)) A",
        expect![[r#"
            def f(A: [n](real, real)): [n](real, real) =
              ones_like(A)
        "#]],
    );
}

/// A constant map only needs the simplest array as long as its operand.
#[test]
fn map_constant_body_operand() {
    check_rule(
        arrays::map_constant_body_operand,
        "def f(A: [n]real, y: real) = map (x. y) (map (a. sin(a)) A)",
        expect![[r#"
            def f(A: [n]real, y: real): [n]real =
              map (x. y) A
        "#]],
    );
}

/// A map2 over a fill specialises that parameter.
#[test]
fn map2_constant_operand() {
    check_rule(
        arrays::map2_constant_operand,
        "def f(A: [n]real, B: [n]real) = map2 (x, y. x * y + y) A (ones_like(B))",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              map2 (x, y. x + 1) A ones_like(B)
        "#]],
    );
}

/// A map2 over a fill of tuples runs over the filled array.
#[test]
fn map2_fill_operand() {
    check_rule(
        arrays::map2_fill_operand,
        "def f(A: [n](real, real), B: [n]real) = map2 (p, b. fst p * b) (zeros_like(A)) B",
        expect![[r#"
            def f(A: [n](real, real), B: [n]real): [n]real =
              map2 (p, b. 0) A B
        "#]],
    );
}

/// A map2 to zeros of one operand's elements is a fill of that operand.
#[test]
fn map2_fill_body() {
    check_rule(
        arrays::map2_fill_body,
        "def f(A: [n]real, P: [n](real, real)) = map2 (a, p. (0, 0)) A P",
        expect![[r#"
            def f(A: [n]real, P: [n](real, real)): [n](real, real) =
              zeros_like(P)
        "#]],
    );
}

/// A map2 that ignores an operand never longer than the other is a map.
#[test]
fn map2_unused_param() {
    check_rule(
        arrays::map2_unused_param,
        "def f(A: [n]real, B: [n]real) = map2 (x, y. sin(x)) A B",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              map (x. sin(x)) A
        "#]],
    );
}

/// A map2 over a map fuses with it.
#[test]
fn map2_fusion() {
    check_rule(
        arrays::map2_fusion,
        "def f(A: [n]real, B: [n]real) = map2 (x, y. x * y) (map (a. exp(a)) A) B",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              map2 (a, y.
                let x = exp(a) in
                x * y) A B
        "#]],
    );
    // Through a shift.
    check_rule(
        arrays::map2_fusion,
        "def f(A: [n]real, B: [n]real) = map2 (x, y. x * y) (shift1L (map (a. exp(a)) A)) (shift1R B)",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n-1]real =
              map2 (a, y.
                let x = exp(a) in
                x * y) (shift1L A) (shift1R B)
        "#]],
    );
}

/// A map2 over a map2 of arrays fuses with it over the pairs of the inner operands.
#[test]
fn map2_zip_fusion() {
    check_rule(
        arrays::map2_zip_fusion,
        "def f(A: [n]real, B: [n]real, C: [n]real) =
           map2 (x, c. map (s. c * s) x) (map2 (a, b. [a, b]) A B) C",
        expect![[r#"
            def f(A: [n]real, B: [n]real, C: [n]real): [n][2]real =
              map2 (p, c. [c * fst p, c * snd p]) (map2 (a, b. (a, b)) A B) C
        "#]],
    );
}

/// A sum of ones is a length.
#[test]
fn count_ones() {
    check_rule(
        arrays::count_ones,
        "def f(A: [n]real) = reduce + 0 (ones_like(A))",
        expect![[r#"
            def f(A: [n]real): real =
              len(A)
        "#]],
    );
}

/// A componentwise reduce of tuples is a tuple of reduces.
#[test]
fn reduce_tuple_split() {
    check_rule(
        arrays::reduce_tuple_split,
        "def f(A: [n](real, real)) = reduce (p, q. (fst p + fst q, snd p * snd q)) (0, 1) A",
        expect![[r#"
            def f(A: [n](real, real)): (real, real) =
              (reduce + 0 (map (t. fst t) A), reduce * 1 (map (t_1. snd t_1) A))
        "#]],
    );
}

/// A constant factor leaves a sum.
#[test]
fn sum_of_scaled() {
    check_rule(
        arrays::sum_of_scaled,
        "def f(A: [n]real, c: real) = reduce + 0 (map (a. c * sin(a)) A)",
        expect![[r#"
            def f(A: [n]real, c: real): real =
              c * reduce + 0 (map (a. sin(a)) A)
        "#]],
    );
}

/// Rows all scaled by one array (or matrices by one real) leave a sum of rows, scaled
/// once; a scale that depends on the row stays, and so do rows of reals scaled by a real.
#[test]
fn sum_of_scaled_rows() {
    check_rule(
        arrays::sum_of_scaled_rows,
        "def f(X: [n][m]real, c: [m]real) =
           reduce (s, t. map2 + s t) (zeros_like(c)) (map (row. map2 * (map (x. sin(x)) row) c) X)",
        expect![[r#"
            def f(X: [n][m]real, c: [m]real): [m]real =
              map2 * (reduce (s, t. map2 + s t) zeros_like(c) (map (row. map (x. sin(x)) row) X)) c
        "#]],
    );
    check_rule(
        arrays::sum_of_scaled_rows,
        "def f(A: [n][k][m]real, w: real) =
           reduce (s, t. map2 (u, v. map2 + u v) s t) (zeros_like(A[0]))
             (map (a. let b = map (r. map (x. x * x) r) a in map (r. map (y. w * y) r) b) A)",
        expect![[r#"
            def f(A: [n][k][m]real, w: real): [k][m]real =
              map (r. map (y. w * y) r) (reduce (s, t. map2 (u, v. map2 + u v) s t) zeros_like(A[0]) (map (a.
                    let b = map (r_1. map (x. x * x) r_1) a in
                    b) A))
        "#]],
    );
    check_rule_declines(
        arrays::sum_of_scaled_rows,
        "def f(X: [n][m]real, k: real) =
           reduce (s, t. map2 + s t) (zeros_like(X[0])) (map (row. map (y. k * y) row) X)",
        "rows of reals scaled by a real stay: the sum would be stored to be scaled",
    );
    check_rule_declines(
        arrays::sum_of_scaled_rows,
        "def f(X: [n][m]real) =
           reduce (s, t. map2 + s t) (zeros_like(X[0])) (map (row. map2 * row row) X)",
        "the scale reads the row",
    );
    check_rule_declines(
        arrays::sum_of_scaled_rows,
        "def f(X: [n][m]real, z: [m]real, c: [m]real) =
           reduce (s, t. map2 + s t) z (map (row. map2 * row c) X)",
        "the sum does not start from zeros",
    );
}

/// The last element of a scan is a fold.
#[test]
fn last_of_scan() {
    check_rule(
        arrays::last_of_scan,
        "def f(A: [n]real) = foldl (acc, x. x) 0 (scanl + 0 A)",
        expect![[r#"
            def f(A: [n]real): real =
              foldl + 0 A
        "#]],
    );
}

/// The last element of a fill never empty is its constant.
#[test]
fn last_of_fill() {
    check_rule(
        arrays::last_of_fill,
        "def f(A: [n]real) = foldl (acc, x. x) 0 (ones_like(scanl + 0 A))",
        expect![[r#"
            def f(A: [n]real): real =
              1
        "#]],
    );
}

/// A shift of a fill is a fill of the shift.
#[test]
fn shift_constant_array() {
    check_rule(
        arrays::shift_constant_array,
        "def f(A: [n]real) = shift1L (ones_like(A))",
        expect![[r#"
            def f(A: [n]real): [n-1]real =
              ones_like(shift1L A)
        "#]],
    );
}

/// A shift of a scan that keeps its accumulator repeats it.
#[test]
fn shift_of_constant_scan() {
    check_rule(
        arrays::shift_of_constant_scan,
        "def f(A: [n]real, y: real) = shift1R (scanl (acc, x. acc) y A)",
        expect![[r#"
            def f(A: [n]real, y: real): [n]real =
              map (x. y) A
        "#]],
    );
    // A repeated value that is a term is bound first, to be computed once.
    check_rule(
        arrays::shift_of_constant_scan,
        "def f(A: [n][m]real, y: [m]real) = shift1L (scanr (x, acc. acc) (map (v. v + v) y) A)",
        expect![[r#"
            def f(A: [n][m]real, y: [m]real): [n][m]real =
              let c = map (v. v + v) y in
              map (x. c) A
        "#]],
    );
}

/// A map over pairs that reads one component of each runs over that component's array.
#[test]
fn map_of_zip_half() {
    check_rule(
        arrays::map_of_zip_half,
        "def f(A: [n]real, B: [n]real, C: [n]real) =
           map2 (p, c. fst p * c) (map2 (a, b. (a, b)) A B) C",
        expect![[r#"
            def f(A: [n]real, B: [n]real, C: [n]real): [n]real =
              map2 * A C
        "#]],
    );
    check_rule(
        arrays::map_of_zip_half,
        "def f(A: [n]real, B: [n]real) = map (p. sin(snd p)) (map2 (a, b. (a, b)) A B)",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              map (b. sin(b)) B
        "#]],
    );
    check_rule_declines(
        arrays::map_of_zip_half,
        "def f(A: [n]real, B: [n]real) = map (p. sin(fst p)) (map2 (a, b. (b, a)) A B)",
        "the operand swaps its pairs: no zip",
    );
    check_rule_declines(
        arrays::map_of_zip_half,
        "def f(A: [n]real, B: [n]real) = map (p. fst p * snd p) (map2 (a, b. (a, b)) A B)",
        "both components are read",
    );
}

/// An element of a cheap map is the function of the operand's element.
#[test]
fn index_of_cheap_map() {
    check_rule(
        arrays::index_of_cheap_map,
        "def f(Z: [n][m]real, k: int) = (map (r. map (x. -x) r) Z)[k]",
        expect![[r#"
            def f(Z: [n][m]real, k: int): [m]real =
              let r = Z[k] in
              map (x. -x) r
        "#]],
    );
    check_rule(
        arrays::index_of_cheap_map,
        "def f(X: [n][m]real, k: int) = (map2 (r1, r2. map2 - r1 r2) (shift1L X) (shift1R X))[k]",
        expect![[r#"
            def f(X: [n][m]real, k: int): [m]real =
              let r1 = (shift1L X)[k] in
              let r2 = (shift1R X)[k] in
              map2 - r1 r2
        "#]],
    );
    check_rule_declines(
        arrays::index_of_cheap_map,
        "def f(Z: [n]real, k: int) = (map (x. exp(x) * sin(x) + x) Z)[k]",
        "the function computes more than two operations: the element is read, not recomputed",
    );
}

/// A scan's state component that every step passes on unchanged is carried apart, as the
/// constant it is.
#[test]
fn scan_invariant_component() {
    check_rule(
        scans::scan_invariant_component,
        "def f(A: [n]real, y: real) = scanr (x, acc. (fst acc, x * snd acc + fst acc)) (y * y, 0) A",
        expect![[r#"
            def f(A: [n]real, y: real): [n+1](real, real) =
              let c = y * y in
              map (t. (c, t)) (scanr (x, t_1. x * t_1 + c) 0 A)
        "#]],
    );
    // Two of three components unchanged; the state left is one real.
    check_rule(
        scans::scan_invariant_component,
        "def f(A: [n]real, y: real) =
           scanl (s, x. let (a, b, c) = s in (a, b + x * c, c)) (y, 1, sin(y)) A",
        expect![[r#"
            def f(A: [n]real, y: real): [n+1](real, real, real) =
              let c = sin(y) in
              map (t. (y, t, c)) (scanl (t_1, x. t_1 + x * c) 1 A)
        "#]],
    );
    check_rule_declines(
        scans::scan_invariant_component,
        "def f(A: [n]real, y: real) = scanl (s, x. (snd s, fst s + x)) (y, y) A",
        "no component is passed on unchanged",
    );
    check_rule_declines(
        scans::scan_invariant_component,
        "def f(A: [n]real, y: real) = scanl (s, x. (fst s, snd s)) (y, y) A",
        "every component is passed on unchanged",
    );
}

/// A fold carrying a pair of arrays, each updated from itself alone, is a pair of folds.
#[test]
fn foldl_tuple_split() {
    check_rule(
        arrays::foldl_tuple_split,
        "def f(Z: [k]real, A: [n]real) =
           foldl (s, a. let (u, v) = if a > 0 then s else (map (z. z + a) (fst s), map (z. z * a) (snd s)) in (u, v)) (Z, Z) A",
        expect![[r#"
            def f(Z: [k]real, A: [n]real): ([k]real, [k]real) =
              (
                foldl (s, x. if x > 0 then s else map (z. z + x) s) Z A,
                foldl (s_1, x_1. if x_1 > 0 then s_1 else map (z_1. z_1 * x_1) s_1) Z A
              )
        "#]],
    );
    check_rule_declines(
        arrays::foldl_tuple_split,
        "def f(Z: [k]real, A: [n]real) = foldl (s, a. (snd s, fst s)) (Z, Z) A",
        "each component reads the other",
    );
}

/// The length of an array as long as a parameter is the parameter's.
#[test]
fn len_of_known_length() {
    check_rule(
        arrays::len_of_known_length,
        "def f(A: [n]real, B: [n]real) = len(map (b. sin(b)) B)",
        expect![[r#"
            def f(A: [n]real, B: [n]real): real =
              len(A)
        "#]],
    );
}

/// The length of a loop's element known to be a parameter's is that parameter's, so that
/// it does not change from one iteration to the next; a parameter's own length stays.
#[test]
fn len_of_known_length_of_an_element() {
    check(
        "def f(X: [n][d]real, mu: [d]real) = map (x. sum(map (j. x[j] * log(mu[j])) (iota len(x)))) X",
        expect![[r#"
            def f(X: [n][d]real, mu: [d]real): [n]real =
              map (x. reduce + 0 (map (j. x[j] * log(mu[j])) (iota len(mu)))) X
        "#]],
    );
    check_rule_declines(
        arrays::len_of_known_length,
        "def f(mu: [d]real) = len(mu)",
        "a parameter is its own witness",
    );
}

/// The length of a fill is its operand's.
#[test]
fn len_of_constant_array() {
    check_rule(
        arrays::len_of_constant_array,
        "def f(A: [n]real) = len(zeros_like(A))",
        expect![[r#"
            def f(A: [n]real): real =
              len(A)
        "#]],
    );
}

/// A fill takes the simplest array of its operand's length.
#[test]
fn constant_array_witness() {
    check_rule(
        arrays::constant_array_witness,
        "def f(A: [n]real, B: [n]real) = zeros_like(map (b. sin(b)) B)",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              zeros_like(A)
        "#]],
    );
}

/// A sum of zeros is zero, a product of ones one.
///
/// Through the whole walk, whose hash-consing or bindings
/// [`crate::rules::arrays::fold_constant_array`] needs.
#[test]
fn fold_constant_array() {
    check(
        "def f(A: [n]real) = (reduce + 0 (zeros_like(A)), reduce * 1 (ones_like(A)))",
        expect![[r#"
            def f(A: [n]real): (real, real) =
              (0, 1)
        "#]],
    );
}

/// A scan of zeros from zero is a fill.
///
/// Through the whole walk, whose hash-consing or bindings
/// [`crate::rules::arrays::scan_constant_array`] needs.
#[test]
fn scan_constant_array() {
    check(
        "def f(A: [n]real) = scanl + 0 (zeros_like(A))",
        expect![[r#"
            def f(A: [n]real): [n+1]real =
              zeros_like(scanl + 0 zeros_like(A))
        "#]],
    );
}

/// A map2 of an array with itself is a map.
///
/// Through the whole walk, whose hash-consing or bindings
/// [`crate::rules::arrays::map2_same_operands`] needs.
#[test]
fn map2_same_operands() {
    check(
        "def f(A: [n]real) = map2 (x, y. x * y + y) A A",
        expect![[r#"
            def f(A: [n]real): [n]real =
              map (x. x * x + x) A
        "#]],
    );
}

// ---- scatter ----------------------------------------------------------------

/// A sum of one-position scatters, one per element, is one scatter of every element.
#[test]
fn sum_of_scatters() {
    check_rule(
        scatter::sum_of_scatters,
        "def f(A: [n]real, B: [n]real) =
           reduce (s, t. map2 + s t) zeros_like(A)
             (map2 (b, i. scatter_add(zeros_like(A), [div(i, 2)], [b * b])) B (iota len(A)))",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              scatter_add(zeros_like(A), map (i. div(i, 2)) (iota len(A)), map (b. b * b) B)
        "#]],
    );
}

/// Scaling a scatter into zeros scales its values.
#[test]
fn scale_of_scatter() {
    check_rule(
        scatter::scale_of_scatter,
        "def f(A: [n]real, B: [n]real, c: real) =
           map (s. c * s) (scatter_add(zeros_like(A), iota len(A), B))",
        expect![[r#"
            def f(A: [n]real, B: [n]real, c: real): [n]real =
              scatter_add(zeros_like(A), iota len(A), map (s. c * s) B)
        "#]],
    );
}

/// Scaling an accumulation from zeros scales what it adds.
#[test]
fn scale_of_scatter_through_an_accumulation() {
    check_rule(
        scatter::scale_of_scatter,
        "def f(A: [n]real, B: [m]real, c: real) =
           map (s. c * s) (foldl (acc, k. scatter_add(acc, [k % len(A)], [B[k]]))
             zeros_like(A) (iota len(B)))",
        expect![[r#"
            def f(A: [n]real, B: [m]real, c: real): [n]real =
              foldl (acc, k.
                scatter_add(
                  acc,
                  [k % len(A)],
                  (let s = B[k] in
                   [c * s])
                )) zeros_like(A) (iota len(B))
        "#]],
    );
}

/// A sum of accumulations from zeros is one accumulation, each element's loop adding into
/// it where it goes.
#[test]
fn sum_of_scatters_of_accumulations() {
    check_rule(
        scatter::sum_of_scatters,
        "def f(A: [n]real, B: [m]real) =
           reduce (s, t. map2 + s t) zeros_like(A)
             (map (i. foldl (acc, k. scatter_add(acc, [(i + k) % len(A)], [B[k]]))
               zeros_like(A) (iota len(B))) (iota len(A)))",
        expect![[r#"
            def f(A: [n]real, B: [m]real): [n]real =
              foldl (acc, i. foldl (acc_1, k. scatter_add(acc_1, [(i + k) % len(A)], [B[k]])) acc (iota len(B))) zeros_like(A) (iota len(A))
        "#]],
    );
}

/// A scatter at every position of zeros is its values; a scatter of zeros changes nothing.
#[test]
fn scatter_everywhere() {
    check(
        "def f(A: [n]real) = scatter_add(zeros_like(A), iota len(A), map (a. a * a) A)",
        expect![[r#"
            def f(A: [n]real): [n]real =
              map (a. a * a) A
        "#]],
    );
    // Literals of zeros, rows and reals, at positions in and out of the array.
    check(
        "def f(M: [n][m]real, B: [m]real) = scatter_add(M, [0, 2], [map (t. 0) B, zeros_like(B)])",
        expect![[r#"
            def f(M: [n][m]real, B: [m]real): [n][m]real =
              M
        "#]],
    );
    check(
        "def f(A: [n]real) = scatter_add(map (a. a * 2) A, [1, 0], [0, 0])",
        expect![[r#"
            def f(A: [n]real): [n]real =
              map (a. a * 2) A
        "#]],
    );
}

/// A scatter along a whole row is a scatter of the row.
#[test]
fn scatter_row() {
    check(
        "def f(W: [n][m]real, x: [m]real) =
           scatter_add(zeros_like(W), map (j. (0, j)) (iota len(x)), map (a. a * a) x)",
        expect![[r#"
            def f(W: [n][m]real, x: [m]real): [n][m]real =
              scatter_add(zeros_like(W), [0], [map (a. a * a) x])
        "#]],
    );
}

/// Adding a scatter into zeros to an array scatters into the array.
#[test]
fn add_scatter() {
    check_rule(
        scatter::add_scatter,
        "def f(A: [n]real, B: [n]real) =
           map2 + A (scatter_add(zeros_like(A), iota len(A), B))",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              scatter_add(A, iota len(A), B)
        "#]],
    );
}

/// A chain of scatters into zeros added to an array is the chain rebuilt on that array;
/// an array added only where a condition holds is added in that branch.
#[test]
fn add_scatter_of_a_chain_or_under_a_condition() {
    check_rule(
        scatter::add_scatter,
        "def f(A: [n]real, B: [n]real) =
           map2 + A (scatter_add(scatter_add(zeros_like(A), iota len(A), B), iota len(A), B))",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              scatter_add(scatter_add(A, iota len(A), B), iota len(A), B)
        "#]],
    );
    check_rule(
        scatter::add_scatter,
        "def f(A: [n]real, B: [n]real, c: real) =
           map2 + A (if c > 0 then B else zeros_like(A))",
        expect![[r#"
            def f(A: [n]real, B: [n]real, c: real): [n]real =
              if c > 0 then map2 + A B else A
        "#]],
    );
}

/// A fold that adds to a component of its accumulator an array that is zeros but at a
/// few positions adds at those positions, onto the component (in place); the other
/// components stay as they are.
#[test]
fn fold_adds_in_place() {
    check_rule(
        scatter::fold_adds_in_place,
        "def f(A: [n]real, h: real) =
           foldl (st, i. (fst st * A[i], map2 + (snd st) (scatter_add(zeros_like(A), [i], [fst st]))))
             (h, zeros_like(A)) (iota len(A))",
        expect![[r#"
            def f(A: [n]real, h: real): (real, [n]real) =
              foldl (st, i. (fst st * A[i], scatter_add(snd st, [i], [fst st]))) (h, zeros_like(A)) (iota len(A))
        "#]],
    );
    // An accumulator that is one array, the sum written the other way round.
    check_rule(
        scatter::fold_adds_in_place,
        "def f(A: [n]real) =
           foldl (s, i. map2 + (scatter_add(zeros_like(A), [i], [A[i] * A[i]])) s) zeros_like(A) (iota len(A))",
        expect![[r#"
            def f(A: [n]real): [n]real =
              foldl (s, i. scatter_add(s, [i], [A[i] * A[i]])) zeros_like(A) (iota len(A))
        "#]],
    );
}

/// A sum that adds to another component than its own is no update of that component, and
/// one that adds a whole array is no scatter.
#[test]
fn fold_adds_in_place_declines() {
    check_rule_declines(
        scatter::fold_adds_in_place,
        "def f(A: [n]real) =
           foldl (st, i. (fst st, map2 + (fst st) (scatter_add(zeros_like(A), [i], [1])))) (A, A) (iota len(A))",
        "the scatters add to the other component",
    );
    check_rule_declines(
        scatter::fold_adds_in_place,
        "def f(A: [n]real) = foldl (s, i. map2 + s A) A (iota len(A))",
        "a whole array is added",
    );
}

/// A scatter at contiguous positions of an array of reals is its values moved into place
/// (zeros before them, or their first elements dropped, and zeros after) and added.
#[test]
fn contiguous_scatter() {
    check_rule(
        scatter::contiguous_scatter,
        "def f(A: [n]real, B: [n]real) =
           scatter_add(map2 + A B, map (i. i + 1) (iota (len(A) - 1)), shift1L B)",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              map2 + (map2 + A B) (scanl (acc, v. v) 0 (shift1L B))
        "#]],
    );
    check_rule(
        scatter::contiguous_scatter,
        "def f(A: [n]real, B: [n]real) =
           scatter_add(zeros_like(A), iota (len(A) - 2), shift1L (shift1L B))",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              map2 (s, t. t) zeros_like(A) (scanr (v, acc. v) 0 (scanr (v_1, acc_1. v_1) 0 (shift1L (shift1L B))))
        "#]],
    );
    check_rule(
        scatter::contiguous_scatter,
        "def f(A: [n]real, B: [n]real) =
           scatter_add(zeros_like(A), map (i. i - 1) (iota len(A)), B)",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              map2 (s, t. t) zeros_like(A) (scanr (v, acc. v) 0 (shift1L B))
        "#]],
    );
    // Positions past the end add nothing.
    check_rule(
        scatter::contiguous_scatter,
        "def f(A: [n]real, B: [n]real) =
           scatter_add(map2 + A B, map (i. 2 + i) (iota len(A)), B)",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              map2 + (map2 + A B) (shift1R (shift1R (scanl (acc, v. v) 0 (scanl (acc_1, v_1. v_1) 0 B))))
        "#]],
    );
    check_rule_declines(
        scatter::contiguous_scatter,
        "def f(A: [n]real, B: [n]real) =
           scatter_add(zeros_like(A), map (i. 2 * i) (iota len(A)), B)",
        "positions two apart are not contiguous",
    );
    check_rule_declines(
        scatter::contiguous_scatter,
        "def f(M: [n][m]real) = scatter_add(zeros_like(M), iota len(M), M)",
        "rows are added by the scatter in place",
    );
    check_rule_declines(
        scatter::contiguous_scatter,
        "def f(A: [n]real, B: [n]real) = scatter_add(A, iota len(A), B)",
        "a variable may be a fold's accumulator, added into in place",
    );
}

/// A fold adding one value per element at a computed position is a scatter of them all.
#[test]
fn fold_of_scatters() {
    check_rule(
        scatter::fold_of_scatters,
        "def f(A: [n]real, B: [n]real) =
           foldl (acc, e. scatter_add(acc, [div(snd e, 2)], [fst e * 2]))
             (zeros_like(A)) (map2 (b, i. (b, i)) B (iota len(A)))",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              scatter_add(zeros_like(A), map (i. div(i, 2)) (iota len(A)), map (b. b * 2) B)
        "#]],
    );
}

/// Zeros shaped like a scatter are zeros shaped like its target.
#[test]
fn zeros_of_scatter() {
    check_rule(
        scatter::zeros_of_scatter,
        "def f(A: [n]real, B: [n]real) = zeros_like(scatter_add(A, iota len(A), B))",
        expect![[r#"
            def f(A: [n]real, B: [n]real): [n]real =
              zeros_like(A)
        "#]],
    );
}
