//! Dropping the unread columns of stored maps and splitting the others by the loops that
//! read them (`unfad_opt::columns`) change no value, not even in the last bit: the columns
//! kept are computed by the same operations.

mod common;

use common::keeps_values;

use unfad_opt::columns::{drop_unread_columns, drop_unread_fold_state, split_read_columns};
use unfad_syntax::print_func;
use unfad_test_support::load;
use unfad_testgen::Features;

#[test]
fn dropping_unread_columns_of_random_gradients_changes_no_value() {
    let runs = [(Features::all(), 0..600), (Features::indexing(), 600..1000)];
    let changed = keeps_values(drop_unread_columns, |_, f| f.clone(), &runs);
    // The test means something only if columns are often dropped.
    assert!(
        changed >= 20,
        "columns were dropped in only {changed} gradients"
    );
}

/// Dropping the components of folds' accumulators that nothing reads
/// (`drop_unread_fold_state`) changes no value either: the components kept are computed by
/// the same operations. Random gradients (against every parameter) rarely leave one unread,
/// so recurrences whose steps loop over captured arrays are also differentiated against
/// each parameter alone, which leaves the others' adjoints unread.
#[test]
fn dropping_unread_fold_state_changes_no_value() {
    let runs = [(Features::all(), 0..500), (Features::indexing(), 500..1000)];
    keeps_values(drop_unread_fold_state, |_, f| f.clone(), &runs);
    let programs = [
        "def f(W: [k][m]real, X: [n][m]real, h0: [m]real) =
           reduce + 0 (foldl (h, t. foldl (g, w. map2 (v, wi. tanh(v * wi + X[t][0])) g w) h W) h0 (iota len(X)))",
        "def f(W: [k][m]real, X: [n][m]real, h0: [m]real) =
           reduce + 0 (foldl (h, x. foldl (g, w. map2 (a, b. tanh(a * b)) g w) (map2 + h x) W) h0 X)",
    ];
    let input = serde_json::json!({
        "W": [[0.5, -0.4, 0.3], [0.9, 0.2, -0.7]],
        "X": [[0.1, 0.2, -0.3], [0.6, -0.5, 0.4], [-0.2, 0.8, 0.1]],
        "h0": [0.3, -0.6, 0.9],
    });
    let mut changed = 0;
    for src in programs {
        for wrt in 0..3 {
            let (mut prog, func) = load(src);
            let (args, _) =
                unfad_interp::args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
            let rev = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[wrt]).unwrap();
            let term = unfad_opt::simplify_to_fixed_point(&mut prog.arena, &rev);
            let after = drop_unread_fold_state(&mut prog.arena, &term);
            if after.body == term.body {
                continue;
            }
            changed += 1;
            unfad_opt::check_types(&mut prog.arena, &after).unwrap();
            assert_eq!(
                common::value(&prog.arena, &term, &args),
                common::value(&prog.arena, &after, &args),
                "{src}, against parameter {wrt}\n{}",
                print_func(&prog.arena, &after)
            );
        }
    }
    assert!(
        changed >= 4,
        "fold state was dropped in only {changed} gradients"
    );
}

/// A recurrence over positions differentiated against its weights only: the joint
/// backward fold carries no adjoint for the inputs it reads (`X`) nor for the initial
/// state, which no result reads.
#[test]
fn a_gradient_against_some_parameters_carries_no_other_adjoint() {
    let src = "def f(W: [m][m]real, X: [n][m]real, h0: [m]real): real =
  reduce + 0 (foldl (h, t. map2 (row, xi. tanh(reduce + 0 (map2 * row h) + xi)) W X[t]) h0 (iota len(X)))";
    let (mut prog, func) = load(src);
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
    let text = print_func(&prog.arena, &opt);
    assert!(
        text.contains("zeros_like(W)") && !text.contains("zeros_like(X)"),
        "the adjoint of `X` is still carried:\n{text}"
    );
}

/// Splitting stored maps into one map per column read (`split_read_columns`) changes no
/// value either: each column is computed by the same operations, the scalar `let`s before
/// the tuple copied into each.
#[test]
fn splitting_read_columns_of_random_gradients_changes_no_value() {
    let runs = [
        (Features::all(), 0..8000),
        (Features::indexing(), 8000..10000),
    ];
    let changed = keeps_values(split_read_columns, drop_unread_columns, &runs);
    assert!(changed >= 8, "maps were split in only {changed} gradients");
}

/// A layer's gradient: per point, the contributions of each hidden unit to the gradients
/// of the point and of the weights are maps of their own, each added up where it is made,
/// rather than stored per unit and read back.
#[test]
fn a_layer_gradient_makes_no_array_per_unit() {
    let src = "def mlp(X: [n][m]real, W1: [k][m]real, w2: [k]real, y: [n]real): real =
  sum(map2 (x, t.
    let h = map (row. tanh(sum(map2 * row x))) W1 in
    let out = sum(map2 * w2 h) in
    (out - t) * (out - t)) X y)";
    let (mut prog, func) = load(src);
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1, 2, 3]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
    let text = print_func(&prog.arena, &opt);
    // No map over the units makes an array per unit (`map (a. a * z) row` inside a map
    // over `W1` or `h` that is bound or zipped).
    assert!(
        !text.contains("let G"),
        "a stored map of the units' contributions remains:\n{text}"
    );
}

/// A convolution written with a slice: the adjoint of each window is added into `x`'s
/// gradient in place (a `foldl` of scatters), never a scatter into an array of zeros per
/// output stored and summed (n * n reals). The slice's length `(i + len(w)) - i` is seen to
/// be `len(w)`, and the window, which only the weights' column reads, is split off with it.
#[test]
fn a_convolution_by_slices_accumulates_in_place() {
    let src = "def f(x: [n]real, w: [k]real): real =
  let y = map (i. sum(map2 (a, b. a * b) (x[i : i + len(w)]) w)) (iota (len(x) - len(w) + 1)) in
  sum(map (v. v * v) y)";
    let (mut prog, func) = load(src);
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
    let text = print_func(&prog.arena, &opt);
    assert!(
        text.contains("foldl (acc, e. scatter_add(acc,")
            && !text.contains("scatter_add(zeros_like(x)"),
        "the window's adjoints are not accumulated in place:\n{text}"
    );
}

/// A tuple component whose array nothing reads (`map (b. cos(a * b)) x`, per element of
/// `x`): its adjoint is zero, so reverse mode's per-element contribution to `x`'s adjoint
/// through it is `zeros_like(x)`, a constant column of the stored map of contributions.
/// Its reader reads the constant instead (a sum of zeros, which is zeros), and the column
/// goes: it stored n arrays of n zeros and added them up (2.2 ms at n = 2000, now 8 us).
#[test]
fn a_constant_column_of_zeros_is_neither_stored_nor_summed() {
    let src = "def f(x: [n]real, w: real): real =
  let A = map (a. (a * w, (sin(a * w), map (b. cos(a * b)) x))) x in
  sum(map (t. fst t) A) * sum(map (t. fst (snd t)) A)";
    let (mut prog, func) = load(src);
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
    let text = print_func(&prog.arena, &opt);
    assert!(
        !text.contains("zeros_like(x)") && !text.contains("cos(a * b)"),
        "a column of zeros is stored and summed:\n{text}"
    );
}

/// A row read only for its shape (`map (t. 0) X[0]`, the first accumulator of a sum of
/// rows, as a user writes it without a `zeros` of a length) gets a zero adjoint: a scatter
/// of zeros into the gradient, which changes nothing and goes. It copied the n x m
/// gradient once per such read.
#[test]
fn a_row_read_for_its_shape_scatters_nothing() {
    let text = column_stats_gradient();
    assert!(!text.contains("scatter_add"), "{text}");
}

/// Each column's mean and variance, as a user writes them (sums of rows from a row of
/// zeros made from `X[0]`), and a sum of logarithms of the variances.
const COLUMN_STATS: &str = "def f(X: [n][m]real): real =
  let mean = map (t. t / real(len(X))) (reduce (a, b. map2 + a b) (map (t. 0) X[0]) X) in
  let var = map (t. t / real(len(X))) (reduce (a, b. map2 + a b) (map (t. 0) X[0])
    (map (row. map2 (x, mu. (x - mu) * (x - mu)) row mean) X)) in
  sum(map (v. log(v + 1)) var)";

/// The optimized gradient of [`COLUMN_STATS`], printed.
fn column_stats_gradient() -> String {
    let (mut prog, func) = load(COLUMN_STATS);
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
    print_func(&prog.arena, &opt)
}

/// Column statistics: the variances' map of `(log(v + 1), 1 / (v + 1))` with `v` a sum
/// over `real(len(X))` is split per column (the shared `let` reads a length, which costs
/// nothing), so that `log` fuses into the value's sum and the reciprocal into the map that
/// reads it, and the pairs are never stored.
#[test]
fn columns_sharing_a_length_split() {
    let text = column_stats_gradient();
    assert!(
        !text.contains("(log("),
        "a map of pairs with `log` remains:\n{text}"
    );
}

/// A point's adjoint beside its value, each read by a loop that only projects it (the
/// value summed, the adjoint the gradient's rows): the map stays one, and the distance's
/// square root is computed once per point, not once per column.
#[test]
fn columns_only_projected_stay_in_one_map() {
    let src =
        "def f(Q: [m][2]real): real = sum(map (q. 1 / sqrt(q[0] * q[0] + q[1] * q[1] + 0.01)) Q)";
    let (mut prog, func) = load(src);
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
    let text = print_func(&prog.arena, &opt);
    assert_eq!(text.matches("sqrt(").count(), 1, "{text}");
    assert_eq!(text.matches(") Q").count(), 1, "{text}");
}
