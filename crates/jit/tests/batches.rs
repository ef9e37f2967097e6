//! Math kernels in batches (`lower/batch.rs`): loops whose elements run kernels, in chunks
//! of a few elements so that chunks end inside small arrays, against the interpreter bit
//! for bit: random programs, their gradients and tangents, and programs built to meet
//! what the batches must leave inline (a kernel of a fold's state, of another kernel's
//! value, of memory the loop writes, a scan stepped where it is read). Every test of this
//! binary sets the process's batch mode first, to the same mode.

mod common;

use common::{
    check, check_func, check_random_gradients, check_random_primals, gradient, higher_order,
    mat_of, vec_of,
};
use serde_json::json;
use unfad_jit::{set_batch_mode, BatchMode};
use unfad_test_support::load;
use unfad_testgen::{generate, Features};

/// Chunks of four elements: two iterations of a paired loop, one of a blocked loop
/// running four copies.
fn forced() {
    set_batch_mode(BatchMode::Forced { chunk: 4 });
}

#[test]
fn random_primal_programs_agree_in_batches() {
    forced();
    let any_result = Features {
        real_result: false,
        ..Features::all()
    };
    check_random_primals(&any_result, 0..250);
    check_random_primals(&Features::indexing(), 500..650);
}

#[test]
fn random_gradients_agree_in_batches() {
    forced();
    let checked = check_random_gradients(&Features::core(), 0..120)
        + check_random_gradients(&Features::all(), 150..270)
        + check_random_gradients(&Features::indexing(), 300..420);
    assert!(checked >= 100, "only {checked} random gradients checked");
}

#[test]
fn random_tangents_agree_in_batches() {
    forced();
    for seed in 0..80 {
        let g = generate(seed, &Features::all());
        let (prog, funcs, input) =
            higher_order(&g.source, &g.input).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for f in &funcs {
            eprintln!("forward mode, seed {seed}");
            check_func(&prog.arena, f, &input);
        }
    }
}

/// Programs whose loops batch, or must leave a kernel inline, on vectors of every length
/// from 0 to 21 (chunks of 4 end everywhere: a whole chunk, a part, an odd last element).
const PROGRAMS: &[&str] = &[
    "def f(x: [n]real) = map (a. exp(a)) x",
    "def f(x: [n]real) = reduce + 0 (map (a. tanh(a)) x)",
    "def f(x: [n]real) = reduce * 1 (map (a. sigmoid(a)) x)",
    "def f(x: [n]real) = reduce max (-1.0 / 0.0) (map (a. log(a * a + 0.25)) x)",
    "def f(x: [n]real, y: [n]real) = map2 (a, b. sin(a) * cos(b) + expm1(a - b)) x y",
    "def f(x: [n]real) = map (a. log1p(a * a) + exp(-a)) x",
    // A kernel of another kernel's value: the outer one inline.
    "def f(x: [n]real) = map (a. tanh(exp(a)) + sigmoid(a)) x",
    // A kernel of a value computed before the loop (inline), beside one of the element.
    "def f(x: [n]real, c: real) = map (a. exp(c * 2) + exp(a * c)) x",
    // The log-sum-exp: a kernel of each element minus a reduction's result.
    "def f(x: [n]real) = let m = reduce max (-1.0 / 0.0) x in log(reduce + 0 (map (a. exp(a - m)) x)) + m",
    // A fold's state in a kernel: inline, the loop sequential.
    "def f(x: [n]real) = foldl (h, a. tanh(0.9 * h + a)) 0 x",
    // A fold carried beside a reduction in one loop.
    "def f(x: [n]real) = (reduce + 0 (map (a. exp(a)) x), foldl (h, a. sin(h) + a) 0 x)",
    // Kernels in both branches of a condition.
    "def f(x: [n]real) = map (a. if a > 0 then exp(-a) else log(1 + a * a)) x",
    // Kernels of elements read by position.
    "def f(x: [n]real) = map (i. exp(x[i]) * tanh(x[len(x) - 1 - i])) (iota (len(x)))",
    // A scan read where it is computed: no batches (lowered again without them).
    "def f(x: [n]real) = map (s. exp(s)) (scanl (acc, a. acc + a) 0 x)",
    // A tuple of a reduction and a map of the same kernels.
    "def f(x: [n]real) = (reduce + 0 (map (a. exp(a) * sin(a)) x), map (a. exp(a) * cos(a)) x)",
    // `sin` and `cos` beyond the kernels' reduction: the standard library's, per lane.
    "def f(x: [n]real) = map (a. sin(a * 1e7) + cos(a * 3e6)) x",
];

#[test]
fn kernels_in_batches_equal_the_interpreter_at_every_length() {
    forced();
    for src in PROGRAMS {
        let two = src.contains("y: [n]real");
        let with_c = src.contains("c: real");
        let inputs: Vec<_> = (0..22)
            .map(|n| {
                let mut x: Vec<f64> = (0..n)
                    .map(|i| ((i as f64 + 0.5) * 1.7).sin() * 3.0)
                    .collect();
                // Special values among the elements.
                if n > 5 {
                    x[2] = 0.0;
                    x[3] = -0.0;
                    x[5] = 800.0;
                }
                let mut input = json!({ "x": x });
                if two {
                    input["y"] = vec_of(n, 0.37);
                }
                if with_c {
                    input["c"] = json!(0.6);
                }
                input
            })
            .collect();
        eprintln!("{src}");
        check(src, &inputs);
    }
}

#[test]
fn rows_batch_their_kernels_one_row_at_a_time() {
    forced();
    let src = "def f(X: [n][m]real, w: [m]real) = \
               reduce + 0 (map (r. log(reduce + 0 (map2 (a, b. exp(a * b)) r w))) X)";
    let inputs: Vec<_> = [(0, 3), (1, 1), (3, 5), (4, 9), (2, 16)]
        .iter()
        .map(|&(n, m)| json!({ "X": mat_of(n, m, 0.3), "w": vec_of(m, 0.9) }))
        .collect();
    check(src, &inputs);
}

#[test]
fn gradients_of_kernel_heavy_losses_agree_in_batches() {
    forced();
    let programs = [
        "def f(x: [n]real) = log(reduce + 0 (map (a. exp(a)) x))",
        "def f(W: [n][m]real, x: [m]real) = reduce + 0 (map (r. tanh(reduce + 0 (map2 * r x))) W)",
        "def f(x: [n]real, y: [n]real) = reduce + 0 (map2 (a, t. log(1 + exp(-t * a))) x y)",
        "def f(x: [n]real) = reduce + 0 (map (a. sin(a) * sigmoid(a)) x)",
    ];
    for src in programs {
        let (prog, func) = gradient(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        for n in [0usize, 1, 3, 4, 7, 13] {
            let input = if src.contains("W:") {
                json!({ "W": mat_of(n, 5, 0.2), "x": vec_of(5, 0.4) })
            } else if src.contains("y: [n]real") {
                json!({ "x": vec_of(n, 0.7), "y": vec_of(n, 1.3) })
            } else {
                json!({ "x": vec_of(n, 0.7) })
            };
            check_func(&prog.arena, &func, &input);
        }
    }
}

/// The code of the function itself (the kernels' functions and the batch function's
/// trampoline, printed after it, apart).
fn function_text(src: &str) -> String {
    let (prog, func) = load(src);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    text.split("\n; the ").next().unwrap_or("").to_string()
}

/// The signature of the batch function's trampoline (kernel, address, length, every
/// register preserved), which only batches call.
const BATCH_SIGNATURE: &str = "(i64, i64, i64) preserve_all";

#[test]
fn loops_of_kernels_call_the_batch_function_and_inline_none() {
    forced();
    for src in [
        "def f(x: [n]real) = map (a. exp(a)) x",
        "def f(x: [n]real) = reduce + 0 (map (a. tanh(a)) x)",
    ] {
        let text = function_text(src);
        assert!(text.contains(BATCH_SIGNATURE), "{src}: no batch\n{text}");
        // The kernel's polynomial is in the batch function, not here.
        assert!(!text.contains("fma"), "{src}: an inline kernel\n{text}");
    }
}

#[test]
fn a_kernel_of_a_folds_state_stays_inline() {
    forced();
    let text = function_text("def f(x: [n]real) = foldl (h, a. tanh(0.9 * h + a)) 0 x");
    assert!(!text.contains(BATCH_SIGNATURE), "{text}");
}

#[test]
fn portable_batches_equal_the_interpreter() {
    // The baseline instance, which hosts without AVX2 run (see `BatchMode::Portable`); the
    // other tests of this binary set `Forced`, so this one checks both modes in turn.
    set_batch_mode(BatchMode::Portable { chunk: 4 });
    for src in &PROGRAMS[..6] {
        let inputs: Vec<_> = [0usize, 1, 5, 8, 11]
            .iter()
            .map(|&n| json!({ "x": vec_of(n, 0.45), "y": vec_of(n, 0.8) }))
            .collect();
        let src = if src.contains("y: [n]real") {
            src.to_string()
        } else {
            src.replace("def f(x: [n]real)", "def f(x: [n]real, y: [n]real)")
        };
        check(&src, &inputs);
    }
    forced();
}
