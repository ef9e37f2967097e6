//! The vector routines (`lower/routines.rs`): the gradients of linear layers, whose
//! adjoints add scaled rows into accumulators and whose values are maps of dot products,
//! against the interpreter bit for bit on rows of every length from 0 to 21 (the routines'
//! vector loops end everywhere: a whole vector, a part, an odd last element; the dot
//! products' blocks of eight whole or not) and on 1, 4 and 7 rows (the dot products run
//! four rows at a time), and the calls present where they should be. Every test of this binary sets the process's batch mode
//! first, to the same mode (routines run where batches do).

mod common;

use common::{check_func, gradient, mat_of, vec_of};
use serde_json::json;
use unfad_jit::{set_batch_mode, BatchMode};
use unfad_test_support::load;

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
    // A perceptron's tanh layer over a batch: a map of dot products per point.
    "def f(X: [n][m]real, W: [k][m]real, Y: [n][k]real) = sum(map2 (x, y. \
       sum(map2 (row, t. let h = tanh(dot(row, x)) in (h - t) * (h - t)) W y)) X Y)",
    // Dot products from a variable's value, the vector first.
    "def f(W: [n][m]real, x: [m]real, c: real) = \
       let d = map (row. reduce (a, b. a + b) c (map2 (u, v. u * v) x row)) W in sum(map (e. e * e) d)",
    // A ReLU layer under a tanh, averaged over a batch: each unit's rows (of `W`'s and of
    // `X`'s adjoints) are scaled by two factors, the chain rule's `z * (a * g)`.
    "def f(X: [n][m]real, W: [k][m]real, Y: [n][k]real) = sum(map2 (x, y. \
       let h = map (row. max(0, dot(row, x))) W in \
       let o = tanh(sum(map2 * h y)) in o * o) X Y) / real(len(X))",
];

/// The input of `src`'s parameters at `n` rows of `m` reals (and `k` = 3 classes).
fn input(src: &str, n: usize, m: usize) -> serde_json::Value {
    let k = 3;
    let one_hot: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..k).map(|c| f64::from(u8::from(c == i % k))).collect())
        .collect();
    if src.contains("Y: [n][k]") {
        json!({ "X": mat_of(n, m, 0.3), "W": mat_of(k, m, 0.7), "Y": one_hot })
    } else if src.contains("c: real") {
        json!({ "W": mat_of(n, m, 0.5), "x": vec_of(m, 0.8), "c": 0.25 })
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
    // Routines on throughout (another test switches them off for a while).
    let _held = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    for src in PROGRAMS {
        let (prog, func) = gradient(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        for m in 0..=21 {
            for n in [1, 4, 7] {
                check_func(&prog.arena, &func, &input(src, n, m));
            }
        }
    }
}

/// Held while a test switches routines off: the switch is the process's, and the tests
/// run in parallel.
static SWITCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The CLIF of `src`'s gradient with routines on or off.
fn gradient_clif(src: &str, on: bool) -> String {
    let (prog, func) = gradient(src).unwrap();
    let _held = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
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
    for src in &PROGRAMS[0..3] {
        let on = gradient_clif(src, true);
        let off = gradient_clif(src, false);
        assert!(on.contains(AXPY), "no scaled row update in\n{on}");
        assert!(
            !off.contains(AXPY),
            "a routine's call with routines off in\n{off}"
        );
    }
}

/// The signature of `dots(out, w, stride, x, m, n, z)` in the host's convention.
const DOTS: &str = "(i64, i64, i64, i64, i64, i64, f64) system_v";

#[test]
fn maps_of_dot_products_run_by_routine() {
    forced();
    for src in [PROGRAMS[1], PROGRAMS[4], PROGRAMS[5]] {
        let on = gradient_clif(src, true);
        let off = gradient_clif(src, false);
        assert!(
            on.contains(DOTS),
            "no dot products by routine for {src} in\n{on}"
        );
        assert!(
            !off.contains(DOTS),
            "dot products by routine with routines off in\n{off}"
        );
    }
    // Rows of 4 are no block of the reduction: the native loop folds them.
    let short = gradient_clif(
        "def f(X: [n][4]real, W: [k][4]real) = sum(map (x. sum(map (row. tanh(dot(row, x))) W)) X)",
        true,
    );
    assert!(
        !short.contains(DOTS),
        "dot products of rows of 4 by routine in\n{short}"
    );
}

#[test]
fn a_fused_loop_of_row_updates_runs_as_routines() {
    forced();
    // The matrix-vector product's gradient per row: `W`'s row written (`scale`) and `x`'s
    // accumulator added to (`axpy`), one loop before, two routines now; both have the
    // signature `(dst, src, s, n)`.
    let on = gradient_clif(PROGRAMS[0], true);
    let declared = on
        .lines()
        .filter(|l| l.contains(" = ") && l.contains(AXPY))
        .count();
    assert!(declared >= 2, "not both row routines in\n{on}");
}

/// The signature of `axpy2(dst, src, s, r, n)` and `scale2`: `s * (src[e] * r)`.
const TWO_FACTORS: &str = "(i64, i64, f64, f64, i64) system_v";

#[test]
fn rows_scaled_by_two_factors_run_by_routine() {
    forced();
    let on = gradient_clif(PROGRAMS[6], true);
    let off = gradient_clif(PROGRAMS[6], false);
    assert!(
        on.contains(TWO_FACTORS),
        "no two-factor row update in\n{on}"
    );
    assert!(
        !off.contains(TWO_FACTORS),
        "a routine's call with routines off in\n{off}"
    );
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

/// Sums of rows written plainly, updating their accumulator in place: a weighted sum of a
/// matrix's rows per point (`W`'s transpose times `y`) and a column sum.
const ROW_SUMS: &[&str] = &[
    "def f(X: [n][m]real, W: [k][m]real, Y: [n][k]real) = sum(map2 (x, y. \
       let v = reduce (s, t. map2 + s t) zeros_like(x) (map2 (c, row. map (e. c * e) row) y W) in \
       sum(map2 * v x)) X Y)",
    "def f(X: [n][m]real, w: [m]real) = \
       let s = reduce (a, b. map2 + a b) (map (v. 0 * v) w) X in sum(map2 * s w)",
];

#[test]
fn primal_sums_of_rows_add_by_routine_and_agree_with_the_interpreter() {
    forced();
    let _held = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    for src in ROW_SUMS {
        let (prog, func) = load(src);
        for m in 0..=21 {
            for n in [1, 4, 7] {
                check_func(&prog.arena, &func, &input(src, n, m));
            }
        }
        unfad_jit::set_vector_routines(false);
        let off = unfad_jit::clif_text(&prog.arena, &func).unwrap();
        unfad_jit::set_vector_routines(true);
        let on = unfad_jit::clif_text(&prog.arena, &func).unwrap();
        let declared =
            |text: &str| text.contains(AXPY) || text.contains("(i64, i64, i64) system_v");
        assert!(
            declared(&on),
            "no row routine in the primal of {src}:\n{on}"
        );
        assert!(!declared(&off), "a routine with routines off:\n{off}");
    }
}
