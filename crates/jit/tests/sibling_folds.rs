//! A fold that accumulates into every component of a tuple (sibling folds joined by the
//! optimizer, `unfad_opt::folds`) adds into each component's array in place
//! (`lower/index.rs`, `fold_of_scatter_tuple`). Gradients are checked bit for bit against
//! the interpreter, with guard cells around every buffer.

mod common;

use common::{check_func, check_gradient, gradient, vec_of};
use serde_json::json;
use unfad_jit::compile;
use unfad_syntax::print_func;

/// The optimized gradient of `src` joins its captured arrays' folds into one.
fn joined(src: &str) -> bool {
    let (prog, func) = gradient(src).unwrap();
    print_func(&prog.arena, &func).contains("let F")
}

#[test]
fn a_recurrences_captured_arrays_get_their_adjoints_from_one_fold() {
    let src = "def f(w: [k]real, b: [k]real, xs: [n]real) = \
               foldl (h, t. tanh(h * w[0] + xs[t] * w[1] + b[0]) + b[1] * h) 0.5 (iota len(xs))";
    assert!(joined(src));
    let inputs: Vec<_> = [0, 1, 2, 9]
        .iter()
        .map(|&n| json!({"w": [0.7, -0.4], "b": [0.1, 0.3], "xs": vec_of(n, 0.4)}))
        .collect();
    assert!(check_gradient(src, &inputs));
}

/// An array state, read by index with the weights (as an LSTM's cell is), and a
/// prediction of the next element: the adjoints of `w`, `b` and `xs` are three folds over
/// the steps, joined.
const LAYER: &str = "def f(w: [m]real, b: [m]real, h0: [m]real, xs: [n][m]real) = \
    let out = foldl (acc, t. \
      let h = map (i. tanh((fst acc)[i] * w[i] + xs[t][i] + b[i])) (iota len(fst acc)) in \
      let loss = reduce + 0 (map2 (u, v. (u - v) * (u - v)) h xs[t + 1]) in \
      (h, snd acc + loss)) (h0, 0) (iota (len(xs) - 1)) in \
    snd out";

#[test]
fn a_layer_over_a_sequence_adds_each_weights_adjoint_in_place() {
    let src = LAYER;
    assert!(joined(src));
    let inputs: Vec<_> = [(1, 3), (2, 1), (5, 4)]
        .iter()
        .map(|&(n, m)| {
            let rows: Vec<_> = (0..n).map(|i| vec_of(m, 0.2 * i as f64 - 0.3)).collect();
            json!({"w": vec_of(m, 0.5), "b": vec_of(m, -0.1), "h0": vec_of(m, 0.3), "xs": rows})
        })
        .collect();
    assert!(check_gradient(src, &inputs));
}

#[test]
fn the_joint_folds_components_are_added_where_the_result_goes() {
    // The adjoint of `xs` (n x m reals) is a component of the joint fold and of the
    // gradient's result: it is added into the result's buffer, not into one of its own
    // then copied. What the workspace holds is the states and their adjoints (2 n m).
    let src = LAYER;
    let (prog, func) = gradient(src).unwrap();
    let compiled = compile(&prog.arena, &func).unwrap();
    let (m, n) = (16, 1000);
    let ws = compiled.workspace_len(&[m, n]);
    assert!(
        ws < (5 * n * m / 2) as usize,
        "workspace {ws} at m = {m}, n = {n}"
    );
}

/// Per-position parameters read by index over a matrix's rows: the adjoints of `mu` and
/// `sig` are one fold over the rows whose step adds a whole row into each.
const PER_POSITION: &str = "def f(X: [n][m]real, mu: [m]real, sig: [m]real) = \
    sum(map (x. sum(map (j. log(sig[j]) + (x[j] - mu[j]) * (x[j] - mu[j]) / (2 * sig[j] * sig[j])) \
    (iota len(x)))) X)";

#[test]
fn a_steps_windows_into_several_arrays_are_added_in_one_loop() {
    let src = PER_POSITION;
    let inputs: Vec<_> = [(1, 1), (3, 2), (4, 7), (2, 16)]
        .iter()
        .map(|&(n, m)| {
            let rows: Vec<_> = (0..n).map(|i| vec_of(m, 0.3 * i as f64 - 0.2)).collect();
            let sig: Vec<f64> = (0..m).map(|j| 0.5 + 0.1 * j as f64).collect();
            json!({"X": rows, "mu": vec_of(m, 0.4), "sig": sig})
        })
        .collect();
    assert!(check_gradient(src, &inputs));
    // The fold's step: one loop of pairs adds into both arrays, where there was one loop
    // per array: a loop whose body reads and writes back two addresses.
    let (prog, func) = gradient(src).unwrap();
    let clif = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    assert!(
        most_accumulators_of_one_loop(&clif) >= 2,
        "no loop adds into both adjoints:\n{clif}"
    );
}

#[test]
fn a_rows_blocked_sum_and_its_additions_into_adjoints_share_one_loop() {
    // After `unfad_opt::one_pass`, each row of `X` sums the value's terms (a blocked
    // reduction) and adds its rows of `mu`'s and `sig`'s adjoints: the additions go to
    // distinct positions, so they run in the blocked loop, which computes `x[j] - mu[j]`
    // once for all of them. Every row length up to two blocks and a tail.
    let src = PER_POSITION;
    let inputs: Vec<_> = (0..=19)
        .map(|m| {
            let rows: Vec<_> = (0..3).map(|i| vec_of(m, 0.3 * i as f64 - 0.2)).collect();
            let sig: Vec<f64> = (0..m).map(|j| 0.5 + 0.1 * j as f64).collect();
            json!({"X": rows, "mu": vec_of(m, 0.4), "sig": sig})
        })
        .collect();
    // By the route `compile_grad` takes (weakened continuations), whose term
    // `one_pass` joins.
    let (mut prog, func) = unfad_test_support::load(src);
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1, 2]).unwrap();
    let func = unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
    for input in &inputs {
        check_func(&prog.arena, &func, input);
    }
    let clif = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    assert!(
        most_accumulators_of_one_loop_with(&clif, "f64x2") >= 2,
        "no blocked loop adds into both adjoints:\n{clif}"
    );
}

/// The most addresses that one loop's body (a block branching back to itself) both loads
/// and stores to, in the CLIF text `clif`.
fn most_accumulators_of_one_loop(clif: &str) -> usize {
    most_accumulators_of_one_loop_with(clif, "")
}

/// As [`most_accumulators_of_one_loop`], among the loops whose block parameters' text
/// contains `params` (`"f64x2"`: the loops carrying a blocked reduction's vectors).
fn most_accumulators_of_one_loop_with(clif: &str, params: &str) -> usize {
    let mut most = 0;
    let mut block: Vec<&str> = Vec::new();
    let mut name = "";
    let flush = |name: &str, block: &[&str]| {
        let loops = block
            .iter()
            .any(|l| l.contains("brif") && l.contains(&format!("{name}(")));
        if !loops || !block.first().is_some_and(|l| l.contains(params)) {
            return 0;
        }
        // `vN = load... vA` and `store notrap vX, vA`.
        let loaded: Vec<&str> = block
            .iter()
            .filter(|l| l.contains(" = load."))
            .filter_map(|l| l.split_whitespace().last())
            .collect();
        block
            .iter()
            .filter(|l| l.trim_start().starts_with("store"))
            .filter_map(|l| l.split_whitespace().last())
            .filter(|a| loaded.contains(a))
            .count()
    };
    for line in clif.lines() {
        if line.starts_with("block") {
            most = most.max(flush(name, &block));
            block.clear();
            name = line.split('(').next().unwrap_or("").trim_end_matches(':');
        }
        block.push(line);
    }
    most.max(flush(name, &block))
}

#[test]
fn windows_of_other_lengths_are_added_one_loop_each() {
    // The adjoints of `a` and `b`, read over their own lengths: one fold's step scatters
    // windows of two lengths, which do not line up.
    let src = "def f(X: [n][m]real, a: [p]real, b: [q]real) = sum(map (x. \
        sum(map (j. a[j] * x[j] * a[j]) (iota len(a))) + sum(map (j. tanh(b[j] * x[j])) (iota len(b)))) X)";
    let inputs: Vec<_> = [(1, 4, 2, 3), (3, 6, 5, 1), (2, 9, 9, 4)]
        .iter()
        .map(|&(n, m, p, q)| {
            let rows: Vec<_> = (0..n).map(|i| vec_of(m, 0.2 * i as f64 + 0.1)).collect();
            json!({"X": rows, "a": vec_of(p, 0.3), "b": vec_of(q, -0.6)})
        })
        .collect();
    assert!(check_gradient(src, &inputs));
}
