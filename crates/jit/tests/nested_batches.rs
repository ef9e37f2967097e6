//! Loops of kernels inside other loops, in the host's batch mode (`lower/batch.rs`,
//! `Batches::ByCount`): an inner loop whose count is known only at run time is emitted
//! twice, batched and inline, and its count chooses. Against the interpreter bit for bit,
//! with rows on both sides of the threshold and across a chunk's end. Every test of this
//! binary sets the host's mode (on a host without AVX2 nothing batches, and the tests
//! check the inline loops alone).

mod common;

use common::{check, check_func, gradient, mat_of, vec_of};
use serde_json::json;
use unfad_jit::{host_batch_lanes, set_batch_mode, BatchMode};
use unfad_test_support::load;

/// Row lengths below the threshold, at it, above it, and past a chunk of 256 elements.
const ROWS: [usize; 9] = [1, 5, 15, 16, 17, 33, 100, 257, 300];

/// The batch function's trampoline signature, which only batched loops call.
const BATCH_SIGNATURE: &str = "(i64, i64, i64) preserve_all";

fn host() {
    set_batch_mode(BatchMode::Host);
}

const PROGRAMS: &[&str] = &[
    "def f(X: [n][m]real) = reduce + 0 (map (r. log(reduce + 0 (map (a. exp(a)) r))) X)",
    "def f(X: [n][m]real, w: [m]real) = map (r. map2 (a, b. tanh(a * b) + sigmoid(a)) r w) X",
    "def f(X: [n][m]real) = map (r. let m = reduce max (-1.0 / 0.0) r in \
     map (a. exp(a - m)) r) X",
];

#[test]
fn inner_loops_of_a_run_time_count_equal_the_interpreter_either_way() {
    host();
    for src in PROGRAMS {
        if host_batch_lanes().is_some() {
            let (prog, func) = load(src);
            let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
            assert!(text.contains(BATCH_SIGNATURE), "{src}: no batch\n{text}");
        }
        let inputs: Vec<_> = ROWS
            .iter()
            .map(|&m| {
                let mut input = json!({ "X": mat_of(3, m, 0.37) });
                if src.contains("w:") {
                    input["w"] = vec_of(m, 0.8);
                }
                input
            })
            .collect();
        eprintln!("{src}");
        check(src, &inputs);
    }
}

#[test]
fn gradients_with_inner_loops_of_a_run_time_count_equal_the_interpreter() {
    host();
    let programs = [
        PROGRAMS[0],
        "def f(X: [n][m]real, W: [k][m]real, Y: [n][k]real): real = \
         reduce + 0 (map2 (x, y. let z = map (row. reduce + 0 (map2 * row x)) W in \
         let lse = log(reduce + 0 (map (c. exp(c)) z)) in \
         reduce + 0 (map2 (yc, zc. yc * (lse - zc)) y z)) X Y)",
    ];
    for src in programs {
        let (prog, func) = gradient(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        for m in ROWS {
            let input = json!({
                "X": mat_of(4, m.min(40), 0.21),
                "W": mat_of(m, m.min(40), 0.13),
                "Y": mat_of(4, m, 0.5),
            });
            let input = if src.contains("W:") {
                input
            } else {
                json!({ "X": mat_of(4, m, 0.21) })
            };
            eprintln!("{src}, rows of {m}");
            check_func(&prog.arena, &func, &input);
        }
    }
}
