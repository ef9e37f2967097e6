//! The vector routines of in-place row updates (`lower/routines.rs`): the gradients of
//! linear layers, whose adjoints add scaled rows into accumulators, against the
//! interpreter bit for bit on rows of every length from 0 to 21 (the routines' vector
//! loops end everywhere: a whole vector, a part, an odd last element), and the calls
//! present where they should be. Every test of this binary sets the process's batch mode
//! first, to the same mode (routines run where batches do).

mod common;

use common::{check_func, gradient, mat_of, vec_of};
use serde_json::json;
use unfad_jit::{set_batch_mode, BatchMode};

fn forced() {
    set_batch_mode(BatchMode::Forced { chunk: 4 });
}

/// Gradients whose adjoints add rows, or scaled rows, into accumulators.
const PROGRAMS: &[&str] = &[
    // A matrix-vector product: `W`'s rows scaled by the outer adjoint, `x`'s accumulator.
    "def f(W: [n][m]real, x: [m]real) = sum(map (row. tanh(dot(row, x))) W)",
    // A linear model's softmax cross-entropy.
    "def f(X: [n][m]real, W: [k][m]real, Y: [n][k]real) = sum(map2 (x, y. \
       let z = map (row. dot(row, x)) W in \
       let lse = log(sum(map (zc. exp(zc)) z)) in \
       sum(map2 (yc, zc. yc * (lse - zc)) y z)) X Y)",
    // A matrix product read through `transpose`.
    "def f(A: [n][k]real, B: [k][m]real, C: [n][m]real) = let Bt = transpose B in \
       sum(map2 (arow, crow. sum(map2 (bcol, c. let d = dot(arow, bcol) - c in d * d) Bt crow)) A C)",
    // Rows added unscaled: a column sum's adjoint.
    "def f(X: [n][m]real, w: [m]real) = \
       let s = reduce (a, b. map2 + a b) (map (v. 0 * v) w) X in sum(map2 * s w)",
];

/// The input of `src`'s parameters at `n` rows of `m` reals (and `k` = 3 classes).
fn input(src: &str, n: usize, m: usize) -> serde_json::Value {
    let k = 3;
    let one_hot: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..k).map(|c| f64::from(u8::from(c == i % k))).collect())
        .collect();
    if src.contains("Y: [n][k]") {
        json!({ "X": mat_of(n, m, 0.3), "W": mat_of(k, m, 0.7), "Y": one_hot })
    } else if src.contains("C: [n][m]") {
        json!({ "A": mat_of(n, 5, 0.2), "B": mat_of(5, m, 0.9), "C": mat_of(n, m, 0.4) })
    } else if src.contains("X: [n][m]") {
        json!({ "X": mat_of(n, m, 0.6), "w": vec_of(m, 0.1) })
    } else {
        json!({ "W": mat_of(n, m, 0.5), "x": vec_of(m, 0.8) })
    }
}

#[test]
fn row_updates_agree_with_the_interpreter_at_every_length() {
    forced();
    for src in PROGRAMS {
        let (prog, func) = gradient(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        for m in 0..=21 {
            for n in [1, 4] {
                check_func(&prog.arena, &func, &input(src, n, m));
            }
        }
    }
}

/// The CLIF of `src`'s gradient with routines on or off.
fn gradient_clif(src: &str, on: bool) -> String {
    let (prog, func) = gradient(src).unwrap();
    unfad_jit::set_vector_routines(on);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    unfad_jit::set_vector_routines(true);
    text
}

/// The signature of `axpy(dst, src, s, n)` in the host's convention.
const AXPY: &str = "(i64, i64, f64, i64) system_v";

#[test]
fn linear_layers_update_their_rows_by_routine() {
    forced();
    // (The matrix-vector product's two row loops, `W`'s row written and `x`'s added to,
    // are one loop reading `row` and `x` once: no routine.)
    for src in &PROGRAMS[1..3] {
        let on = gradient_clif(src, true);
        let off = gradient_clif(src, false);
        assert!(on.contains(AXPY), "no scaled row update in\n{on}");
        assert!(
            !off.contains(AXPY),
            "a routine's call with routines off in\n{off}"
        );
    }
}

#[test]
fn rows_shorter_than_a_vector_stay_inline() {
    forced();
    let text = gradient_clif(
        "def f(W: [n][4]real, x: [4]real) = sum(map (row. tanh(dot(row, x))) W)",
        true,
    );
    assert!(!text.contains(AXPY), "a routine for rows of 4 in\n{text}");
}
