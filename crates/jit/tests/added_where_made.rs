//! A sum of arrays over a loop (`reduce (s, t. map2 + s t) z X`, a captured array's
//! adjoint) whose terms are made by loops inside each element (a map over a layer's rows)
//! gets its accumulator as the place those loops write to (`Place::AddTo`,
//! `lower/fusion.rs`): each row's part is added where it is made, where it used to be
//! stored in the element and added after. Such additions, and sums of arrays that add in
//! place into the result, also run in the loop of their tuple's sibling loops
//! (`fused_tuple`: a layer's adjoint of `x` and its rows of `W`'s gradient in one pass over
//! the rows). Gradients are checked bit for bit against the interpreter, with guard cells
//! around every buffer; the workspace shows the terms are not stored.

mod common;

use common::{check_gradient, gradient, mat_of, vec_of};
use serde_json::{json, Value as Json};
use unfad_jit::compile;

/// The workspace of the optimized gradient of `src` at `sizes`, in reals.
fn gradient_workspace(src: &str, sizes: &[u64]) -> usize {
    let (prog, func) = gradient(src).unwrap();
    compile(&prog.arena, &func).unwrap().workspace_len(sizes)
}

/// A batch through one layer: per point, the contributions to `W`'s gradient are one row
/// per row of `W`, made in the loop over the rows that also sums the adjoint of `x`.
const LAYER: &str = "def f(X: [n][m]real, W: [k][m]real): real = \
    sum(map (x. sum(map (row. tanh(dot(row, x))) W)) X)";

/// `(n, m, k)` sizes, the empty ones included.
const SIZES: &[(usize, usize, usize)] = &[(0, 3, 2), (1, 1, 1), (3, 4, 2), (5, 2, 0), (4, 3, 5)];

/// Inputs of `X` and `W` at every size of [`SIZES`].
fn batch_inputs() -> Vec<Json> {
    SIZES
        .iter()
        .map(|&(n, m, k)| json!({"X": mat_of(n, m, 0.3), "W": mat_of(k, m, -0.7)}))
        .collect()
}

#[test]
fn a_layers_weight_gradient_is_added_row_by_row_where_it_is_made() {
    assert!(check_gradient(LAYER, &batch_inputs()));
    // Before, each point's k x m contributions were stored, then added (352 reals at
    // m = 32, k = 10); now the workspace holds at most a row's worth.
    let (n, m, k) = (100, 32, 10);
    let ws = gradient_workspace(LAYER, &[n, m, k]);
    assert!(ws <= m as usize, "workspace {ws} at m = {m}, k = {k}");
}

#[test]
fn a_softmax_layers_gradient_makes_both_adjoints_in_one_loop_over_the_rows() {
    // The adjoint of the logits needs their sum first; then one loop over `W`'s rows makes
    // the adjoint of `x` (summed) and the rows of `W`'s gradient (added where made).
    let src = "def f(X: [n][m]real, W: [k][m]real, Y: [n][k]real): real = \
               sum(map2 (x, y. \
                 let z = map (row. dot(row, x)) W in \
                 let lse = log(sum(map (zc. exp(zc)) z)) in \
                 sum(map2 (yc, zc. yc * (lse - zc)) y z)) X Y)";
    let inputs: Vec<_> = SIZES
        .iter()
        .map(|&(n, m, k)| json!({"X": mat_of(n, m, 0.3), "W": mat_of(k, m, -0.7), "Y": mat_of(n, k, 0.5)}))
        .collect();
    assert!(check_gradient(src, &inputs));
    let (prog, func) = gradient(src).unwrap();
    let printed = unfad_syntax::print_func(&prog.arena, &func);
    assert!(printed.contains("_joint"), "{printed}");
    // Per point: the logits and their exponentials.
    let (n, m, k) = (100, 32, 10);
    let ws = gradient_workspace(src, &[n, m, k]);
    assert!(ws <= 2 * k as usize, "workspace {ws} at m = {m}, k = {k}");
}

#[test]
fn a_product_of_matrices_adds_its_columns_gradient_per_row() {
    let src = "def f(A: [n][k]real, B: [k][m]real, C: [n][m]real): real = \
               let Bt = transpose B in \
               sum(map2 (arow, crow. sum(map2 (bcol, c. let d = dot(arow, bcol) - c in d * d) Bt crow)) A C)";
    // `transpose B` reads `B[0]`: `k` is at least 1.
    let inputs: Vec<_> = [(1, 1, 1), (2, 3, 4), (0, 1, 2), (4, 2, 3)]
        .iter()
        .map(|&(n, k, m)| json!({"A": mat_of(n, k, 0.3), "B": mat_of(k, m, -0.2), "C": mat_of(n, m, 0.8)}))
        .collect();
    assert!(check_gradient(src, &inputs));
    // `transpose B` and the sum of its adjoint (2 k m); each row's k x m contributions to
    // the latter are no longer stored before they are added.
    let (n, k, m) = (50u64, 50u64, 50u64);
    let ws = gradient_workspace(src, &[n, k, m]);
    assert!(
        ws < (3 * k * m) as usize,
        "workspace {ws} at n = k = m = 50"
    );
}

#[test]
fn a_sum_of_arrays_of_pairs_is_added_component_by_component() {
    // The adjoints of the means and the scales of a mixture, per point: one array of
    // pairs of rows, summed over the points by `map2 (s, t. (map2 + s.0 t.0, map2 + s.1
    // t.1))`.
    let src = "def f(X: [n][m]real, M: [k][m]real, Q: [k][m]real): real = \
               let comps = map2 (mu, q. (mu, q)) M Q in \
               sum(map (x. sum(map (c. \
                 let s = map2 (zd, qd. exp(qd) * zd) (map2 (xd, md. xd - md) x (fst c)) (snd c) in \
                 exp(-0.5 * sum(map (t. t * t) s))) comps)) X)";
    let inputs: Vec<_> = SIZES
        .iter()
        .map(|&(n, m, k)| json!({"X": mat_of(n, m, 0.3), "M": mat_of(k, m, -0.7), "Q": mat_of(k, m, 0.1)}))
        .collect();
    assert!(check_gradient(src, &inputs));
}

#[test]
fn a_branch_inside_the_rows_loop_adds_once() {
    // Each row's part is chosen by an `if`: whichever branch makes it, it is added once.
    let src = "def f(X: [n][m]real, W: [k][m]real): real = \
               sum(map (x. sum(map (row. let a = dot(row, x) in \
                 if a > 0 then a * a else sin(a)) W)) X)";
    assert!(check_gradient(src, &batch_inputs()));
}

/// A two-layer perceptron's squared error: the hidden layer's rows make `W`'s and `b`'s
/// gradients, the output weights `v`'s.
const MLP: &str =
    "def f(X: [n][m]real, W: [k][m]real, b: [k]real, v: [k]real, t: [n]real): real = \
    sum(map2 (x, y. \
      let h = map2 (row, c. tanh(dot(row, x) + c)) W b in \
      let out = dot(v, h) in (out - y) * (out - y)) X t)";

/// Inputs of [`MLP`] at the sizes `(n, m, k)`.
fn mlp_inputs(sizes: &[(usize, usize, usize)]) -> Vec<Json> {
    sizes
        .iter()
        .map(|&(n, m, k)| {
            json!({"X": mat_of(n, m, 0.3), "W": mat_of(k, m, -0.7), "b": vec_of(k, 0.2),
                   "v": vec_of(k, 0.6), "t": vec_of(n, 0.9)})
        })
        .collect()
}

#[test]
fn a_layer_with_a_bias_and_an_output_weight_adds_every_gradient_once() {
    assert!(check_gradient(MLP, &mlp_inputs(SIZES)));
}

#[test]
fn a_scalars_gradient_summed_over_the_rows_leaves_the_additions_in_order() {
    // Per point, `c`'s gradient is a blocked sum over the rows, beside the adjoint of `x`
    // and the rows of `W`'s gradient, which are added in the order of the rows: the sum's
    // loop runs its rows in blocks, so the additions run in a loop of their own.
    let src = "def f(X: [n][m]real, W: [k][m]real, c: real): real = \
               sum(map (x. sum(map (row. tanh(c * dot(row, x))) W)) X)";
    let inputs: Vec<_> = SIZES
        .iter()
        .map(|&(n, m, k)| json!({"X": mat_of(n, m, 0.3), "W": mat_of(k, m, -0.7), "c": 0.8}))
        .collect();
    assert!(check_gradient(src, &inputs));
}

#[test]
fn a_batch_of_layers_with_many_rows_adds_them_in_order() {
    // Enough rows and columns for the loops' pairs and blocks, and odd counts for their
    // remainders.
    let src = LAYER;
    let inputs: Vec<_> = [(3, 17, 9), (2, 8, 33)]
        .iter()
        .map(|&(n, m, k)| json!({"X": mat_of(n, m, 0.3), "W": mat_of(k, m, -0.7)}))
        .collect();
    assert!(check_gradient(src, &inputs));
    assert!(check_gradient(MLP, &mlp_inputs(&[(3, 17, 9), (2, 8, 33)])));
}

/// `examples/mlp.ad`'s form: a dense layer written as a definition, a ReLU by `max`, and
/// the mean over the batch, which scales every weight's gradient by `1 / len(X)`.
const MEAN_MLP: &str = "def dense(W: [h][d]real, c: [h]real, x: [d]real): [h]real = \
      map2 (row, ci. dot(row, x) + ci) W c \
    def relu(a: real): real = max(0, a) \
    def mlp(X: [b][d]real, T: [b]real, W1: [h][d]real, b1: [h]real, w2: [h]real, b2: real): real = \
      let errors = map2 (x, t. \
          let hidden = map (a. relu(a)) (dense(W1, b1, x)) in \
          let out = tanh(dot(w2, hidden) + b2) in \
          (out - t) * (out - t)) X T in \
      sum(errors) / len(X)";

#[test]
fn a_batchs_mean_loss_adds_the_scaled_weights_gradients_where_they_are_made() {
    // The scale `1 / len(X)` is taken out of the sums (`sum_of_scaled_rows`) and the
    // scaled sums join the per-example loop (`consumers`): no example's matrix of `W1`'s
    // gradient is stored. Before, the workspace held one per example (b h d reals).
    let inputs: Vec<_> = [(1, 2, 3), (3, 4, 2), (4, 3, 5)]
        .iter()
        .map(|&(b, d, h)| {
            json!({"X": mat_of(b, d, 0.3), "T": vec_of(b, 0.9), "W1": mat_of(h, d, -0.7),
                   "b1": vec_of(h, 0.2), "w2": vec_of(h, 0.6), "b2": 0.1})
        })
        .collect();
    assert!(check_gradient(MEAN_MLP, &inputs));
    // Size variables in order of first appearance: `b`, `d`, `h`.
    let (b, d, h) = (1000u64, 32u64, 64u64);
    let ws = gradient_workspace(MEAN_MLP, &[b, d, h]) as u64;
    assert!(ws < b * h, "workspace {ws} at b = {b}, d = {d}, h = {h}");
}
