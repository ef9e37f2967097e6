//! Statements that do not read a loop move above it (`unfad_opt::order`): the values do
//! not change, not even in the last bit, and a penalized loss's gradient keeps its
//! per-point loop's folds right after the loop.

mod common;

use common::{keeps_values, value};

use unfad_interp::args_from_json;
use unfad_opt::order::independent_first;
use unfad_syntax::print_func;
use unfad_test_support::load;
use unfad_testgen::Features;

#[test]
fn moving_statements_of_random_gradients_changes_no_value() {
    let changed = keeps_values(
        independent_first,
        |_, f| f.clone(),
        &[(Features::all(), 0..800)],
    );
    assert!(
        changed >= 20,
        "statements moved in only {changed} of 800 gradients"
    );
}

#[test]
fn a_penalty_moves_above_the_loop_over_the_points() {
    // The penalty's sum is a term of the value and the gradient of its weight, so a `let`;
    // computed after the loop over the points, it stood between that loop and its folds.
    let src = "def loss(X: [n][m]real, y: [n]real, w: [m]real, lam: real): real =
           let l = map2 (x, t. let z = dot(w, x) in log(1 + exp(-t * z))) X y in
           sum(l) + lam * sum(map (v. v * v) w)";
    let (mut prog, func) = load(src);
    let rev = unfad_ad::reverse_factored(&mut prog.arena, &func, &[0, 1, 2, 3]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &rev).unwrap();
    let printed = print_func(&prog.arena, &opt);
    let penalty = printed.find("(v. v * v) w").expect("the penalty");
    let points = printed.find(") X y").expect("the loop over the points");
    assert!(penalty < points, "{printed}");
    let input = serde_json::json!({
        "X": [[0.5, -1.0], [0.25, 2.0], [1.5, 0.5]],
        "y": [1.0, -1.0, 1.0],
        "w": [0.3, -0.2],
        "lam": 0.1
    });
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    let plain = unfad_ad::reverse(&mut prog.arena, &func, &[0, 1, 2, 3]).unwrap();
    let (a, b) = (
        value(&prog.arena, &plain, &args),
        value(&prog.arena, &opt, &args),
    );
    let parse = |s: &str| -> Vec<f64> {
        let v: serde_json::Value = serde_json::from_str(s).unwrap();
        fn leaves(v: &serde_json::Value, out: &mut Vec<f64>) {
            match v {
                serde_json::Value::Array(items) => items.iter().for_each(|x| leaves(x, out)),
                x => out.push(x.as_f64().unwrap()),
            }
        }
        let mut out = Vec::new();
        leaves(&v, &mut out);
        out
    };
    for (x, y) in parse(&a).iter().zip(parse(&b)) {
        assert!((x - y).abs() <= 1e-12 * (1.0 + x.abs()), "{a}\n{b}");
    }
}

#[test]
fn a_fold_of_a_loop_moves_up_to_the_loop_past_what_it_does_not_read() {
    // `e` is not a loop, so the old rule stopped there; the folds of `G` go right after
    // `G`, in their order, where the code generator runs them in `G`'s loop.
    let src = "def f(X: [n]real, a: [k]real) =
           let G = map (x. (x * x, sin(x))) X in
           let E = map (t. exp(t)) a in
           let e = reduce + 0 E in
           let s = reduce + 0 (map (g. snd g) G) in
           let r = reduce max 0 (map (g. fst g) G) in
           (s * e + r, map (g. fst g) G)";
    let (mut prog, func) = load(src);
    let moved = independent_first(&mut prog.arena, &func);
    let printed = print_func(&prog.arena, &moved);
    let at = |s: &str| {
        printed
            .find(s)
            .unwrap_or_else(|| panic!("{s} in {printed}"))
    };
    assert!(
        at("let G") < at("let s") && at("let s") < at("let r"),
        "{printed}"
    );
    assert!(
        at("let r") < at("let E") && at("let E") < at("let e"),
        "{printed}"
    );
    let input = serde_json::json!({ "X": [0.5, -1.0, 2.0], "a": [0.25, 1.5] });
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    assert_eq!(
        value(&prog.arena, &func, &args),
        value(&prog.arena, &moved, &args)
    );
}
