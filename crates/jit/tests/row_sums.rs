//! Sums of rows over one matrix joined into one sum of tuples of rows (the optimizer's
//! `unfad_opt::row_sums`): native code adds into each component's buffer in place, in one
//! pass. Gradients are checked bit for bit against the interpreter, with guard cells
//! around every buffer.

mod common;

use common::{check_gradient, gradient, vec_of};
use serde_json::json;
use unfad_jit::compile;
use unfad_syntax::print_func;

/// Each column's mean and variance, as the suite's `column_stats` writes them.
const COLUMN_STATS: &str = "def f(X: [n][m]real): real =
  let mean = map (t. t / real(len(X))) (reduce (a, b. map2 + a b) (map (t. 0) X[0]) X) in
  let var = map (t. t / real(len(X))) (reduce (a, b. map2 + a b) (map (t. 0) X[0])
    (map (row. map2 (x, mu. (x - mu) * (x - mu)) row mean) X)) in
  sum(map (v. log(v + 1)) var)";

fn matrix(n: usize, m: usize, seed: f64) -> Vec<Vec<f64>> {
    (0..n)
        .map(|i| {
            (0..m)
                .map(|j| seed * (i as f64 + 1.0) - 0.3 * j as f64)
                .collect()
        })
        .collect()
}

#[test]
fn a_columns_variance_and_its_means_adjoint_are_summed_in_one_pass() {
    let (prog, func) = gradient(COLUMN_STATS).unwrap();
    assert!(print_func(&prog.arena, &func).contains("let S"));
    let inputs: Vec<_> = [(1, 1), (2, 3), (5, 4), (7, 5)]
        .iter()
        .map(|&(n, m)| json!({ "X": matrix(n, m, 0.37) }))
        .collect();
    assert!(check_gradient(COLUMN_STATS, &inputs));
    // The workspace: the mean, the two sums and the scales, a few rows' worth (not the
    // matrix's size).
    let compiled = compile(&prog.arena, &func).unwrap();
    let (n, m) = (1000u64, 16u64);
    let ws = compiled.workspace_len(&[n, m]);
    assert!(ws as u64 <= 8 * m, "workspace {ws} at n = {n}, m = {m}");
}

#[test]
fn sums_over_two_matrices_are_summed_in_one_pass() {
    let src = "def f(X: [n][m]real, Y: [n][m]real, w: [m]real) =
      let A = reduce (s, t. map2 + s t) (zeros_like(w)) (map2 (r, q. map2 (x, y. x * y * w[0]) r q) X Y) in
      let B = reduce (s, t. map2 + s t) (zeros_like(w)) (map2 (r, q. map2 (x, y. (x - y) * (x - y)) r q) X Y) in
      sum(map2 (a, b. a * b) A (map2 * B w))";
    let (prog, func) = gradient(src).unwrap();
    assert!(print_func(&prog.arena, &func).contains("let S"));
    let inputs: Vec<_> = [(1, 2), (3, 3), (4, 1)]
        .iter()
        .map(|&(n, m)| {
            json!({ "X": matrix(n, m, 0.21), "Y": matrix(n, m, -0.13), "w": vec_of(m, 0.6) })
        })
        .collect();
    assert!(check_gradient(src, &inputs));
}
