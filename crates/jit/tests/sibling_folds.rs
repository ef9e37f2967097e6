//! A fold that accumulates into every component of a tuple (sibling folds joined by the
//! optimizer, `unfad_opt::folds`) adds into each component's array in place
//! (`lower/index.rs`, `fold_of_scatter_tuple`). Gradients are checked bit for bit against
//! the interpreter, with guard cells around every buffer.

mod common;

use common::{check_gradient, gradient, vec_of};
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
