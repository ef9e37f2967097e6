//! Folds whose accumulator is a tuple with some components updated where they are and
//! others made anew at every step (`Translator::acc_places`, mixed places): reverse mode's
//! joint backward fold carries the adjoint of the accumulator beside the adjoints of the
//! arrays its steps read. The components a scatter adds into, which nothing else in the
//! step reads, keep one buffer and are added to in place; the others alternate between two
//! buffers. Against the interpreter bit for bit, where the rule applies and where it must
//! not (a component read elsewhere in the step).

mod common;

use common::{check, check_gradient, mat_of, vec_of, workspace_at};
use serde_json::json;

/// Folds over positions with a scatter into a component of the accumulator, and the same
/// folds where that component is read by the rest of the step (two buffers then).
const PROGRAMS: &[&str] = &[
    // A real and an array added into at one position per step.
    "def f(A: [n]real, h: real) = \
     foldl (st, i. (fst st * A[i] + 1, scatter_add(snd st, [i], [fst st]))) (h, zeros_like(A)) (iota len(A))",
    // An array made anew and an array added into at two positions per step.
    "def f(A: [n]real, B: [m]real) = \
     foldl (st, i. (map (v. v * A[i] + 0.5) (fst st), \
       scatter_add(scatter_add(snd st, [i], [reduce + 0 (fst st)]), [len(A) - 1 - i], [A[i]]))) \
       (B, zeros_like(A)) (iota len(A))",
    // Two components added into, one of them rows.
    "def f(X: [n][m]real, h: real) = \
     foldl (st, i. (st.0 * 0.9 + reduce + 0 X[i], scatter_add(st.1, [i], [map (v. v * st.0) X[i]]), \
       scatter_add(st.2, [len(X) - 1 - i], [st.0]))) (h, zeros_like(X), zeros_like(X[0])) (iota len(X))",
    // The added-into component read by another component: not in place.
    "def f(A: [n]real, h: real) = \
     foldl (st, i. (fst st * A[i] + (snd st)[i], scatter_add(snd st, [i], [fst st]))) (h, zeros_like(A)) (iota len(A))",
    // Its own values read it: not in place either.
    "def f(A: [n]real, h: real) = \
     foldl (st, i. (fst st * A[i], scatter_add(snd st, [i], [(snd st)[0] + fst st]))) (h, A) (iota len(A))",
];

fn inputs(src: &str) -> Vec<serde_json::Value> {
    [1, 2, 7, 33]
        .iter()
        .map(|&n| {
            if src.contains("X:") {
                json!({ "X": mat_of(n, 3, 0.41), "h": 0.7 })
            } else if src.contains("B:") {
                json!({ "A": vec_of(n, 0.29), "B": vec_of(4, 0.53) })
            } else {
                json!({ "A": vec_of(n, 0.29), "h": 0.7 })
            }
        })
        .collect()
}

#[test]
fn folds_with_components_added_into_in_place_equal_the_interpreter() {
    for src in PROGRAMS {
        eprintln!("{src}");
        check(src, &inputs(src));
    }
}

/// The component added into keeps one buffer: the fold needs `n` reals fewer than when
/// the rest of the step reads that component (two buffers, each step copying it).
#[test]
fn a_component_added_into_in_place_has_one_buffer() {
    let n = 1000;
    let in_place = workspace_at(PROGRAMS[0], &[n]);
    let read_elsewhere = workspace_at(PROGRAMS[3], &[n]);
    assert!(
        in_place + n as usize <= read_elsewhere,
        "workspace {in_place} in place, {read_elsewhere} otherwise"
    );
}

/// Gradients of folds whose step captures arrays and runs a loop of its own (or reads
/// them at its element's positions only): reverse
/// mode's joint backward fold (`unfad_ad`'s `folds::joint_backward`), whose components for
/// the arrays' adjoints are added into in place. Over positions (the elements, ints, get
/// no adjoint) and over rows (each row's adjoint added at its position).
#[test]
fn gradients_of_folds_reading_captured_arrays_equal_the_interpreter() {
    let programs = [
        "def f(W: [k][m]real, X: [n][m]real, h0: [m]real) = \
         reduce + 0 (foldl (h, t. map2 (v, w. tanh(v * w + X[t][2])) h W[t % len(W)]) h0 (iota len(X)))",
        "def f(W: [k][m]real, X: [n][m]real, h0: [m]real) = \
         reduce + 0 (foldl (h, t. foldl (g, w. map2 (v, wi. tanh(v * wi + X[t][0])) g w) h W) h0 (iota len(X)))",
        "def f(W: [k][m]real, X: [n][m]real, h0: [m]real) = \
         let L = foldl (acc, t. let S = scanl (g, w. map2 (v, wi. sigmoid(v * wi) + X[t][1]) g w) acc W in \
           S[len(W)]) h0 (iota len(X)) in reduce + 0 (map (v. v * v) L)",
        "def f(W: [k][m]real, X: [n][m]real, h0: [m]real) = \
         reduce + 0 (foldl (h, x. foldl (g, w. map2 (a, b. tanh(a * b)) g w) (map2 + h x) W) h0 X)",
    ];
    for src in programs {
        let (prog, func) = common::gradient(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        let shown = unfad_syntax::print_func(&prog.arena, &func);
        assert!(
            shown.contains("let B ="),
            "{src}: no joint backward fold:\n{shown}"
        );
        let mut inputs = Vec::new();
        for n in [1, 3, 20] {
            inputs.push(json!({
                "W": mat_of(3, 4, 0.31),
                "X": mat_of(n, 4, 0.17),
                "h0": vec_of(4, 0.6),
            }));
        }
        eprintln!("{src}");
        assert!(check_gradient(src, &inputs), "{src}: no gradient");
    }
}
