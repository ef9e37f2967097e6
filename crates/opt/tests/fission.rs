//! Kernel tails split from their loops (`unfad_opt::fission`): a map whose element runs a
//! loop and then a math kernel becomes a map of the loops' results, then a map of the
//! kernels. It never changes a value, not even in the last bit (every element is computed
//! by the same operations in the same order).

mod common;

use common::value;

use expect_test::{expect, Expect};
use unfad_interp::args_from_json;
use unfad_opt::fission::split_kernel_tails;
use unfad_syntax::print_func;
use unfad_test_support::load;
use unfad_testgen::{generate, layer, Features};

/// Split `func` of `source`; if the term changed, its values before and after are
/// compared exactly on `input` and its types checked. Whether it changed.
fn split_keeps_values(source: &str, input: &serde_json::Value) -> bool {
    let (mut prog, func) = load(source);
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, input).unwrap();
    let split = split_kernel_tails(&mut prog.arena, &func);
    if split.body == func.body {
        return false;
    }
    let (before, after) = (
        value(&prog.arena, &func, &args),
        value(&prog.arena, &split, &args),
    );
    assert_eq!(
        before,
        after,
        "{source}\nsplit:\n{}",
        print_func(&prog.arena, &split)
    );
    unfad_opt::check_types(&mut prog.arena, &split)
        .unwrap_or_else(|e| panic!("{e}\n{}", print_func(&prog.arena, &split)));
    true
}

#[test]
fn splitting_random_programs_changes_no_value() {
    for seed in 0..300 {
        let g = generate(seed, &Features::all());
        split_keeps_values(&g.source, &g.input);
    }
}

#[test]
fn splitting_random_layers_changes_no_value() {
    let seeds = 0..200u64;
    let mut changed = 0;
    for seed in seeds.clone() {
        let (src, input) = layer(seed);
        changed += split_keeps_values(&src, &input) as usize;
    }
    // The tails without a kernel (`#1 * #2 + b`) stay; most others split.
    assert!(
        changed * 2 >= seeds.count(),
        "only {changed} random layers were split"
    );
}

fn check_split(src: &str, expect: Expect) {
    expect.assert_eq(&common::after_pass(src, split_kernel_tails));
}

#[test]
fn a_layers_tanh_runs_in_a_map_of_its_own() {
    check_split(
        "def f(W: [k][m]real, b: [k]real, x: [m]real) =
           map2 (row, bi. tanh(reduce + 0 (map2 * row x) + bi)) W b",
        expect![[r#"
            def f(W: [k][m]real, b: [k]real, x: [m]real): [k]real =
              let d = map (row. reduce + 0 (map2 * row x)) W in
              map2 (e, bi. tanh(e + bi)) d b
        "#]],
    );
    // Two loops: their results are a tuple per element; the tail reads the index.
    check_split(
        "def f(W: [k][m]real, U: [k][m]real, x: [m]real, h: [m]real, b: [k]real) =
           map (i. tanh(reduce + 0 (map2 * W[i] h) + reduce + 0 (map2 * U[i] x) + b[i]))
             (iota len(W))",
        expect![[r#"
            def f(W: [k][m]real, U: [k][m]real, x: [m]real, h: [m]real, b: [k]real): [k]real =
              let d = map (i. (reduce + 0 (map2 * W[i] h), reduce + 0 (map2 * U[i] x))) (iota len(W)) in
              map2 (i_1, e. tanh(fst e + snd e + b[i_1])) (iota len(W)) d
        "#]],
    );
}

#[test]
fn a_jvps_value_and_tangent_split_from_their_loops() {
    // What forward mode makes of `sum(tanh(W x))`: a tuple of reals per row.
    check_split(
        "def f(W: [k][m]real, dW: [k][m]real, x: [m]real) =
           map2 (row, drow.
             let y = tanh(reduce + 0 (map2 * row x)) in
             (y, one_minus_sq(y) * reduce + 0 (map2 * drow x))) W dW",
        expect![[r#"
            def f(W: [k][m]real, dW: [k][m]real, x: [m]real): [k](real, real) =
              let d = map2 (row, drow. (reduce + 0 (map2 * row x), reduce + 0 (map2 * drow x))) W dW in
              map (e.
                let y = tanh(fst e) in
                (y, one_minus_sq(y) * snd e)) d
        "#]],
    );
}

#[test]
fn a_loop_bound_by_a_let_is_named_by_the_split() {
    check_split(
        "def f(W: [k][m]real, x: [m]real, c: real) =
           map (row. let s = reduce + 0 (map2 * row x) in let t = s + c in tanh(t) * s) W",
        expect![[r#"
            def f(W: [k][m]real, x: [m]real, c: real): [k]real =
              let d = map (row. reduce + 0 (map2 * row x)) W in
              map (e.
                let t = e + c in
                tanh(t) * e) d
        "#]],
    );
    // The tail reads both of the map's elements: it runs over their zip.
    check_split(
        "def f(W: [k][m]real, b: [k][m]real, x: [m]real) =
           map2 (row, br. tanh(reduce + 0 (map2 * row x) + br[0] + row[0])) W b",
        expect![[r#"
            def f(W: [k][m]real, b: [k][m]real, x: [m]real): [k]real =
              let d = map (row. reduce + 0 (map2 * row x)) W in
              map2 (p, e. tanh(e + (snd p)[0] + (fst p)[0])) (map2 (a, b_1. (a, b_1)) W b) d
        "#]],
    );
    // A loop after `let`s of its own, as the prelude's `sum` inlines.
    check_split(
        "def f(W: [k][m]real, x: [m]real) =
           map (row. let s = (let A = map2 * row x in reduce + 0 A) in log1p(exp(s))) W",
        expect![[r#"
            def f(W: [k][m]real, x: [m]real): [k]real =
              let d =
                map (row.
                  let A = map2 * row x in
                  reduce + 0 A) W
              in
              map (e. log1p(exp(e))) d
        "#]],
    );
    // The row and the bias read by index: the row goes with the loop, the bias with the
    // tail.
    check_split(
        "def f(W: [k][m]real, bias: [k]real, x: [m]real) =
           map (i. let row = W[i] in let b = bias[i] in tanh(reduce + 0 (map2 * row x) + b))
             (iota len(W))",
        expect![[r#"
            def f(W: [k][m]real, bias: [k]real, x: [m]real): [k]real =
              let d =
                map (i.
                  let row = W[i] in
                  reduce + 0 (map2 * row x)) (iota len(W))
              in
              map2 (i_1, e.
                let b = bias[i_1] in
                tanh(e + b)) (iota len(W)) d
        "#]],
    );
    // A `let` both read: each side has its copy.
    check_split(
        "def f(W: [k][m]real, x: [m]real) =
           map (i. let row = W[i] in tanh(reduce + 0 (map2 * row x) + row[0]))
             (iota len(W))",
        expect![[r#"
            def f(W: [k][m]real, x: [m]real): [k]real =
              let d =
                map (i.
                  let row = W[i] in
                  reduce + 0 (map2 * row x)) (iota len(W))
              in
              map2 (i_1, e.
                let row_1 = W[i_1] in
                tanh(e + row_1[0])) (iota len(W)) d
        "#]],
    );
}

#[test]
fn maps_without_a_kernel_after_a_loop_stay() {
    // No kernel in the tail (and the loop no dot product).
    check_split(
        "def f(W: [k][m]real) = map (row. 2 * reduce + 0 (map (a. a * a) row)) W",
        expect!["unchanged"],
    );
    // A kernel, but no loop.
    check_split(
        "def f(v: [k]real, b: [k]real) = map2 (a, c. tanh(a + c)) v b",
        expect!["unchanged"],
    );
    // The element holds an array.
    check_split(
        "def f(W: [k][m]real) =
           map (row. (tanh(reduce + 0 (map (a. a * a) row)), row)) W",
        expect!["unchanged"],
    );
    // The loop reads none of the map's elements (hoisting's business).
    check_split(
        "def f(v: [k]real, x: [m]real) = map (a. tanh(a + reduce + 0 x)) v",
        expect!["unchanged"],
    );
    // A loop reading a `let` of the element that runs a loop itself.
    check_split(
        "def f(W: [k][m]real, x: [m]real) =
           map (row. let r = map (a. a * 2) row in tanh(reduce + 0 (map2 * r x))) W",
        expect!["unchanged"],
    );
    // A loop reading the result of another.
    check_split(
        "def f(W: [k][m]real, x: [m]real) =
           map (row. let s = reduce + 0 row in tanh(reduce + 0 (map (a. a * s) x))) W",
        expect!["unchanged"],
    );
}

#[test]
fn dot_products_leave_the_maps_that_compute_more() {
    // No kernel, and an element that holds arrays (a gradient's): the dot product goes.
    check_split(
        "def f(W: [k][m]real, x: [m]real) =
           map (row. let v = 2 * reduce + 0 (map2 * row x) in (v, map (a. a * v) row)) W",
        expect![[r#"
            def f(W: [k][m]real, x: [m]real): [k](real, [m]real) =
              let d = map (row. reduce + 0 (map2 * row x)) W in
              map2 (row_1, e.
                let v = 2 * e in
                (v, map (a. a * v) row_1)) W d
        "#]],
    );
    // Over two arrays, from a variable, the vector first: the rest reads both (a zip).
    check_split(
        "def f(W: [k][m]real, b: [k]real, x: [m]real, c: real) =
           map2 (row, bi. max(0, reduce + c (map2 * x row) + bi) * row[0]) W b",
        expect![[r#"
            def f(W: [k][m]real, b: [k]real, x: [m]real, c: real): [k]real =
              let d = map (row. reduce + c (map2 * x row)) W in
              map2 (p, e. max(0, e + snd p) * (fst p)[0]) (map2 (a, b_1. (a, b_1)) W b) d
        "#]],
    );
    // The vector is the element of an enclosing map: bound outside the inner one.
    check_split(
        "def f(X: [n][m]real, W: [k][m]real) =
           map (x. map (row. max(0, reduce + 0 (map2 * row x)))  W) X",
        expect![[r#"
            def f(X: [n][m]real, W: [k][m]real): [n][k]real =
              map (x.
                let d = map (row. reduce + 0 (map2 * row x)) W in
                map (e. max(0, e)) d) X
        "#]],
    );
}

#[test]
fn dot_products_stay_where_they_are_the_map() {
    // Already a map of dot products.
    check_split(
        "def f(W: [k][m]real, x: [m]real) = map (row. reduce + 0 (map2 * row x)) W",
        expect!["unchanged"],
    );
    // The vector is bound in the element.
    check_split(
        "def f(W: [k][m]real) = map (row. let r = map (a. a + 1) row in 2 * reduce + 0 (map2 * row r)) W",
        expect!["unchanged"],
    );
    // The initial value is computed in the element.
    check_split(
        "def f(W: [k][m]real, x: [m]real) = map (row. 2 * reduce + (row[0] * 3) (map2 * row x)) W",
        expect!["unchanged"],
    );
}

/// Whether `pass` changed the optimizer's term of the gradient of `source` (simplified to
/// a fixed point); if it did, its values before and after are compared exactly on `input`
/// and its types checked.
fn gradient_pass_keeps_values(
    source: &str,
    input: &serde_json::Value,
    pass: fn(&mut unfad_syntax::Arena, &unfad_syntax::Func) -> unfad_syntax::Func,
) -> bool {
    let (mut prog, func) = load(source);
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, input).unwrap();
    let types = func.param_types(&prog.arena);
    let wrt: Vec<usize> = (0..types.len()).filter(|&i| types[i].has_reals()).collect();
    let rev = unfad_ad::reverse(&mut prog.arena, &func, &wrt).unwrap();
    let term = unfad_opt::simplify_to_fixed_point(&mut prog.arena, &rev);
    let after = pass(&mut prog.arena, &term);
    if after.body == term.body {
        return false;
    }
    let shown = format!("{source}\n{}", print_func(&prog.arena, &after));
    unfad_opt::check_types(&mut prog.arena, &after).unwrap_or_else(|e| panic!("{e}\n{shown}"));
    assert_eq!(
        value(&prog.arena, &term, &args),
        value(&prog.arena, &after, &args),
        "{shown}"
    );
    true
}

/// The dot products of rows taken out of maps inside other loops' functions
/// (`split_nested_dots`), and the loops `share` then computes once for the value's loop
/// and the gradient's (random layers inside a map over points, and random programs),
/// change no value: every element is computed by the same operations in the same order.
#[test]
fn splitting_and_sharing_nested_dot_products_changes_no_value() {
    let (mut split, mut shared) = (0, 0);
    for seed in 0..300 {
        let (src, input) = layer(seed);
        split += usize::from(gradient_pass_keeps_values(
            &src,
            &input,
            unfad_opt::fission::split_nested_dots,
        ));
        shared += usize::from(gradient_pass_keeps_values(
            &src,
            &input,
            unfad_opt::share::share_elementwise,
        ));
    }
    for seed in 0..300 {
        let g = generate(seed, &Features::all());
        gradient_pass_keeps_values(&g.source, &g.input, unfad_opt::fission::split_nested_dots);
        gradient_pass_keeps_values(&g.source, &g.input, unfad_opt::share::share_elementwise);
    }
    eprintln!("{split} of 300 layers' gradients split, {shared} shared a loop");
    assert!(
        split >= 15,
        "only {split} of 300 layers' gradients were split"
    );
    assert!(
        shared >= 50,
        "only {shared} of 300 layers' gradients shared a loop"
    );
}
