//! Tuples whose components are loops over the same length run as one fused loop, with
//! common loads and subexpressions computed once (local value numbering). Results are
//! checked bit for bit against the interpreter (with guard cells around every buffer), and
//! the loop structure in the Cranelift IR.

mod common;

use common::{check, vec_of, workspace_at};
use serde_json::{json, Value as Json};
use unfad_syntax::reduction::ACCUMULATORS;

fn inputs_ab(w: bool) -> Vec<Json> {
    [0, 1, 2, 7]
        .iter()
        .map(|&n| {
            let mut j = json!({"A": vec_of(n, 0.3), "B": vec_of(n, 1.7)});
            if w {
                j["w"] = json!(0.7);
            }
            j
        })
        .collect()
}

/// The forward loops of one loop running a `reduce` with several accumulators: its blocks
/// of elements, then the remaining elements.
const BLOCKED: usize = 2;

/// Forward loops in the IR of `src` (each ends with one unsigned compare of its index).
fn loops(src: &str) -> usize {
    let (prog, func) = unfad_test_support::load(src);
    // The inline kernels' code (batches would replace it on a host with AVX2).
    unfad_jit::set_batch_mode(unfad_jit::BatchMode::Off);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    text.matches("icmp ult").count()
}

#[test]
fn a_fold_and_copies_run_in_one_loop() {
    let src = "def f(A: [n]real, B: [n]real) = (reduce + 0 (map2 * A B), B, A)";
    check(src, &inputs_ab(false));
    assert_eq!(loops(src), BLOCKED);
}

#[test]
fn folds_and_maps_share_loads_and_calls() {
    // The gradient of sum(exp(a) * sin(b)) as the optimizer writes it: three loops, one
    // after fusion, with exp(a) and sin(b) computed once per element.
    let src = "def f(A: [n]real, B: [n]real) = (\
               reduce + 0 (map2 (a, b. exp(a) * sin(b)) A B), \
               map2 (a, b. exp(a) * sin(b)) A B, \
               map2 (a, b. cos(b) * exp(a)) A B)";
    check(src, &inputs_ab(false));
    assert_eq!(loops(src), BLOCKED);
    let (prog, func) = unfad_test_support::load(src);
    // The inline kernels' code (batches would replace it on a host with AVX2).
    unfad_jit::set_batch_mode(unfad_jit::BatchMode::Off);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    // Three calls in an element's code, emitted once per element of an iteration (four
    // when the element computes a transcendental) and once for the remaining elements (calls of the kernels' functions there, which run once per call);
    // the kernels' functions follow the function.
    let function = text.split("; the function of the kernel").next().unwrap();
    assert_eq!(
        function.matches("call fn").count(),
        3 * (ACCUMULATORS.min(4) + 1),
        "{text}"
    );
}

#[test]
fn several_folds_with_free_variables() {
    let src = "def f(A: [n]real, B: [n]real, w: real) = (\
               reduce + 0 (map2 (a, b. (w * a - b) * (w * a - b)) A B), \
               map2 (a, b. let z = w * (w * a - b) in z + z) A B, \
               reduce max (-1e300) A, \
               foldl (acc, x. acc * 0.5 + x) w B, \
               w)";
    check(src, &inputs_ab(true));
    assert_eq!(loops(src), BLOCKED);
}

#[test]
fn loops_of_other_lengths_run_alone() {
    // `shift1L A` has n - 1 elements, `B` n, `C` m: three groups.
    let src = "def f(A: [n]real, B: [n]real, C: [m]real) = (\
               reduce + 0 A, map (x. x * 2) B, reduce * 1 (shift1L A), C, sum(C))";
    let inputs: Vec<Json> = [(0, 0), (1, 3), (5, 2)]
        .iter()
        .map(|&(n, m)| json!({"A": vec_of(n, 0.4), "B": vec_of(n, 0.9), "C": vec_of(m, 2.1)}))
        .collect();
    check(src, &inputs);
}

#[test]
fn arrays_of_tuples_and_rows_are_written_in_the_fused_loop() {
    let src = "def f(A: [n]real, M: [n][m]real) = (\
               map (a. (a, a * a)) A, \
               map2 (r, a. map (x. x * a) r) M A, \
               reduce + 0 (map (r. reduce + 0 r) M), \
               zeros_like(A))";
    let inputs: Vec<Json> = [(0, 2), (1, 1), (4, 3)]
        .iter()
        .map(|&(n, m)| {
            let rows: Vec<Json> = (0..n).map(|i| vec_of(m, 0.5 + i as f64)).collect();
            json!({"A": vec_of(n, 0.4), "M": rows})
        })
        .collect();
    check(src, &inputs);
}

#[test]
fn a_value_stored_and_read_back_is_not_merged_with_an_older_load() {
    // The scan writes the buffer that the fused loop then reads; the tuple's first
    // component is written to the output that the others read through `let`.
    let src = "def f(A: [n]real) = \
               let S = scanl + 0 A in \
               let T = map (x. x * 2) A in \
               (T, reduce + 0 S, map2 (s, t. s + t) (shift1L S) T, S)";
    let inputs: Vec<Json> = [0, 1, 6]
        .iter()
        .map(|&n| json!({"A": vec_of(n, 0.8)}))
        .collect();
    check(src, &inputs);
}

#[test]
fn max_and_min_reductions_run_in_lanes_bit_for_bit() {
    let srcs = [
        "def f(A: [n]real, z: real) = reduce max z A",
        "def f(A: [n]real, z: real) = reduce min z A",
        "def f(A: [n]real, z: real) = reduce (a, b. max(b, a)) z A",
    ];
    for src in srcs {
        assert_eq!(loops(src), 2, "a loop of four lanes and a tail loop: {src}");
    }
    let specials = [
        json!(0.0),
        json!(-0.0),
        json!("NaN"),
        json!("Infinity"),
        json!("-Infinity"),
        json!(1.5),
    ];
    let mut inputs = Vec::new();
    for n in 0..10 {
        for (k, z) in specials.iter().enumerate() {
            let a: Vec<Json> = (0..n)
                .map(|i| match (i * 7 + k) % 9 {
                    0 => json!(-0.0),
                    1 => json!(0.0),
                    2 if k == 2 => json!("NaN"),
                    j => json!((j as f64 - 4.0) * 0.75),
                })
                .collect();
            inputs.push(json!({"A": a, "z": z}));
        }
    }
    for src in srcs {
        check(src, &inputs);
    }
}

/// Workspace of `src` at `n`, in reals.
fn workspace(src: &str, n: u64) -> usize {
    workspace_at(src, &[n])
}

#[test]
fn a_shifted_scan_is_computed_in_the_loop_that_reads_it() {
    // The gradient of prod: only the suffix products are stored, in the result's buffer
    // (`scratch.rs`), and the prefix products are computed in the loop of the product.
    let src = "def f(A: [n]real, B: [n]real) = \
               map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))";
    check(src, &inputs_ab(false));
    assert_eq!(workspace(src, 7), 0);
    // Accumulators that are tuples, elements after each step, read by a fold, by a map of a
    // map, and in a row of a nested loop.
    for src in [
        "def f(A: [n]real, B: [n]real) = \
         map2 (p, b. fst p * b + snd p) (shift1L (scanl (s, a. (fst s * 0.5 + a, max(snd s, a))) (1, -1) A)) B",
        "def f(A: [n]real, B: [n]real) = reduce + 0 (map2 * (shift1R (scanl + 0 A)) B)",
        "def f(A: [n]real, B: [n]real) = map (c. c * 2) (map2 - B (shift1L (scanl * 1 A)))",
        "def f(A: [n]real, B: [n]real) = map (b. sum(map2 * (shift1R (scanl (s, a. s + a * b) b A)) A)) B",
    ] {
        check(src, &inputs_ab(false));
        assert_eq!(workspace(src, 7), 0, "{src}");
    }
}

#[test]
fn a_scan_read_otherwise_is_stored() {
    // Read from the last element first, shifted again, or read twice: in memory first.
    for src in [
        "def f(A: [n]real, B: [n]real) = scanr + 0 (map2 * (shift1R (scanl + 0 A)) B)",
        "def f(A: [n]real, B: [n]real) = map2 * (shift1L (shift1R (scanl + 0 A))) (shift1L B)",
        "def f(A: [n]real, B: [n]real) = let S = shift1R (scanl + 1 A) in (map2 * S B, map2 + S A)",
        "def f(A: [n]real, B: [n]real) = map (b. sum(map2 * (shift1R (scanl + b A)) A)) (shift1L (scanl * 1 B))",
        // Read at a computed position, inside a loop: the lowering finds out only when it
        // reads, and lowers the function again with its scans in memory.
        "def f(A: [n]real, B: [n]real) = \
         reduce + 0 (map (i. let V = map2 * B (shift1L (scanl (s, a. s * 0.5 + a) 0 A)) in \
           V[(len(V) - 1 + i) % len(V)] - A[i]) (iota len(A)))",
    ] {
        check(src, &inputs_ab(false));
    }
}

#[test]
fn an_array_stored_for_later_is_folded_in_the_loop_that_stores_it() {
    // log-sum-exp's gradient: exp(a - m) stored, summed, then read again.
    let src = "def f(A: [n]real, B: [n]real) = \
               let m = reduce max (-1e300) A in \
               let E = map (a. exp(a - m)) A in \
               let s = reduce + 0 E in \
               map2 (e, b. e / s + b) E B";
    check(src, &inputs_ab(false));
    // The maximum, the stored and summed exponentials (each blocked: two loops), the
    // result.
    assert_eq!(loops(src), 2 * BLOCKED + 1);
    // A fold whose unit reads the array, and a fold of tuples.
    for src in [
        "def f(A: [n]real, B: [n]real) = \
         let E = map (a. a * a) A in let s = reduce + (reduce max 0 E) E in map (e. e * s) E",
        "def f(A: [n]real, B: [n]real) = \
         let E = map2 * A B in let p = foldl (q, e. (fst q + e, snd q * e)) (0, 1) E in \
         map (e. e * fst p + snd p) E",
    ] {
        check(src, &inputs_ab(false));
    }
}

#[test]
fn a_component_folded_where_it_is_made_is_never_stored() {
    // Reverse mode's shared pass over a map that maps over a captured array: per element,
    // the operand's adjoint (kept) and the contributions to the captured array's (summed).
    let src = "def f(X: [n]real, C: [m]real) = \
               let G = map (x. (x * x, map (c. c * exp(x)) C)) X in \
               let dC = reduce (a, b. map2 + a b) zeros_like(C) (map (t. snd t) G) in \
               (map (t. fst t) G, dC)";
    let inputs: Vec<Json> = [(0, 0), (1, 1), (3, 2), (7, 5)]
        .iter()
        .map(|&(n, m)| json!({"X": vec_of(n, 0.3), "C": vec_of(m, 1.1)}))
        .collect();
    check(src, &inputs);
    // The accumulator, added into in place (m): G's first components are written where
    // the result's first component goes, and the second ones are folded where they are
    // made and point at the stack's sink (never written); not n * m, nor n.
    assert_eq!(workspace_at(src, &[1000, 10]), 10);
    // Read again, the folded component must be stored.
    let again = "def f(X: [n]real, C: [m]real) = \
                 let G = map (x. (x * x, map (c. c * exp(x)) C)) X in \
                 let dC = reduce (a, b. map2 + a b) zeros_like(C) (map (t. snd t) G) in \
                 (map (t. fst t) G, dC, map (t. snd t) G)";
    check(again, &inputs);
    assert!(workspace_at(again, &[1000, 10]) >= 1000 * 10);
}

#[test]
fn a_result_component_that_folds_a_column_is_folded_where_it_is_made() {
    // The gradient of `sum(tanh(W x))` as the optimizer leaves it: the fold is a component
    // of the result tuple, not bound by a `let`. The contributions to `x`'s adjoint are
    // summed where each row makes them, never stored, and each row's adjoint of `W` is
    // written where the result goes.
    let src = "def f(W: [n][m]real, x: [m]real, E: [n]real) = \
               let G = map2 (row, e. let z = 1 - e * e in (map (a. a * z) x, map (b. b * z) row)) W E in \
               (reduce + 0 E, map (g. fst g) G, reduce (s, t. map2 + s t) zeros_like(x) (map (g. snd g) G))";
    let inputs: Vec<Json> = [(0, 0), (0, 2), (1, 1), (3, 2), (6, 5)]
        .iter()
        .map(|&(n, m)| {
            let w: Vec<Json> = (0..n).map(|i| vec_of(m, 0.3 + i as f64)).collect();
            json!({"W": w, "x": vec_of(m, 1.1), "E": vec_of(n, 0.7)})
        })
        .collect();
    check(src, &inputs);
    // G's first components go straight to the result (the adjoint of `W`), the second are
    // summed where they are made (their column points at the stack's sink), and the
    // accumulator is the result's place, added into in place: no workspace, not 2 n * m.
    assert_eq!(workspace_at(src, &[1000, 10]), 0);
    // A component that reads the folded column too: stored, and summed from memory.
    let again = "def f(W: [n][m]real, x: [m]real, E: [n]real) = \
                 let G = map2 (row, e. let z = 1 - e * e in (map (a. a * z) x, map (b. b * z) row)) W E in \
                 (map (g. snd g) G, reduce (s, t. map2 + s t) zeros_like(x) (map (g. snd g) G))";
    check(again, &inputs);
    assert!(workspace_at(again, &[1000, 10]) >= 2 * 1000 * 10);
}

#[test]
fn several_result_components_that_fold_columns_run_in_one_loop() {
    // A mixture's gradient as the optimizer leaves it: per point, the point's adjoint
    // (kept, a result) and contributions to the adjoints of two captured arrays (summed,
    // results too), one scalar among them. All are folded where each point is computed:
    // nothing of size n * m is stored.
    let src = "def f(X: [n]real, C: [m]real, D: [m]real) = \
               let G = map (x. (x * x, map (c. c * exp(x)) C, map (c. c * sin(x)) D, x + 1)) X in \
               (map (g. g.0) G, \
                reduce (s, t. map2 + s t) zeros_like(C) (map (g. g.1) G), \
                reduce (s, t. map2 + s t) zeros_like(D) (map (g. g.2) G), \
                reduce + 0 (map (g. g.3) G))";
    let inputs: Vec<Json> = [(0, 0), (1, 1), (3, 2), (7, 5)]
        .iter()
        .map(|&(n, m)| json!({"X": vec_of(n, 0.3), "C": vec_of(m, 1.1), "D": vec_of(m, 0.9)}))
        .collect();
    check(src, &inputs);
    // One element's room for each summed column and for the kept one (3 m + 1), and two
    // accumulators per summed array (4 m): not n * m.
    assert!(workspace_at(src, &[1000, 10]) <= 8 * 10);
}

#[test]
fn folds_bound_by_lets_and_folds_in_the_result_run_in_one_loop() {
    // The mixture's gradient as the optimizer leaves it when the captured arrays are
    // zipped: one column summed into a `let`, which the result reads, and more columns
    // folded by result components. Nothing of size n * m is stored, and nothing of size n
    // but the kept column, which goes straight to the result.
    let src = "def f(X: [n]real, C: [m]real, D: [m]real) = \
               let G = map (x. (x * x, map (c. c * exp(x)) C, map (c. c * sin(x)) D, x + 1)) X in \
               let dC = reduce (s, t. map2 + s t) zeros_like(C) (map (g. g.1) G) in \
               let dD = reduce (s, t. map2 + s t) zeros_like(D) (map (g. g.2) G) in \
               (map (g. g.0) G, map (c. c * 2) dC, dD, reduce + 0 (map (g. g.3) G))";
    let inputs: Vec<Json> = [(0, 0), (1, 1), (3, 2), (7, 5)]
        .iter()
        .map(|&(n, m)| json!({"X": vec_of(n, 0.3), "C": vec_of(m, 1.1), "D": vec_of(m, 0.9)}))
        .collect();
    check(src, &inputs);
    assert!(workspace_at(src, &[1000, 10]) <= 8 * 10);
    // A fold that reads an earlier `let`'s result cannot run in the loop: it stays after
    // it, and reads its column from memory.
    let reads = "def f(X: [n]real, C: [m]real, D: [m]real) = \
                 let G = map (x. (x * x, map (c. c * exp(x)) C, map (c. c * sin(x)) D, x + 1)) X in \
                 let dC = reduce (s, t. map2 + s t) zeros_like(C) (map (g. g.1) G) in \
                 let s = reduce (a, g. a + g * reduce + 0 dC) 0 (map (g. g.3) G) in \
                 (map (g. g.0) G, dC, s)";
    check(reads, &inputs);
    assert!(workspace_at(reads, &[1000, 10]) >= 1000);
    // A component that reads a column a `let` folds: that column is stored.
    let again = "def f(X: [n]real, C: [m]real, D: [m]real) = \
                 let G = map (x. (x * x, map (c. c * exp(x)) C, map (c. c * sin(x)) D, x + 1)) X in \
                 let dC = reduce (s, t. map2 + s t) zeros_like(C) (map (g. g.1) G) in \
                 (map (g. g.1) G, dC, reduce + 0 (map (g. g.3) G))";
    check(again, &inputs);
    assert!(workspace_at(again, &[1000, 10]) >= 1000 * 10);
}

#[test]
fn folds_inside_the_result_run_in_the_loop_that_makes_their_column() {
    // The adjoint of a transposed matrix as the optimizer leaves it: the sum of a column
    // is the operand of more work (here a map), not a component of the result. It is
    // summed where each element is made: nothing of size n * m is stored.
    let src = "def f(X: [n]real, C: [m]real) = \
               let G = map (x. (x * x, map (c. c * exp(x)) C)) X in \
               (map (g. fst g) G, map (c. c + 1) (reduce (s, t. map2 + s t) zeros_like(C) (map (g. snd g) G)))";
    let inputs: Vec<Json> = [(0, 0), (1, 1), (3, 2), (7, 5)]
        .iter()
        .map(|&(n, m)| json!({"X": vec_of(n, 0.3), "C": vec_of(m, 1.1)}))
        .collect();
    check(src, &inputs);
    assert!(workspace_at(src, &[1000, 10]) <= 1000 + 6 * 10);
    // Two folds of one column (alike but for their names) inside the result: neither can
    // leave the column unstored, and both read it from memory.
    let twice = "def f(X: [n]real, C: [m]real) = \
                 let G = map (x. (x * x, map (c. c * exp(x)) C)) X in \
                 (map (g. snd g) G, reduce + 0 (map (g. fst g) G) * 2, reduce + 0 (map (h. fst h) G) + 1)";
    check(twice, &inputs);
}

/// A `let`-bound map of a few arithmetic operations read by two loops is computed at each
/// read, not stored; one that calls a kernel, or is read inside another loop, is stored.
#[test]
fn cheap_maps_read_twice_are_computed_at_each_read() {
    let workspace = |src: &str| {
        let (prog, func) = unfad_test_support::load(src);
        unfad_jit::compile(&prog.arena, &func)
            .unwrap()
            .workspace_len(&[1000])
    };
    let cheap = "def f(A: [n]real, B: [n]real, w: real) = \
                 let z = map2 (a, b. a * b + w) A B in \
                 (map2 + (scanl (acc, x. x) 0 z) (scanr (x, acc. x) 1 z), reduce + 0 z)";
    check(cheap, &inputs_ab(true));
    assert_eq!(workspace(cheap), 0);
    let dear = "def f(A: [n]real, B: [n]real, w: real) = \
                let z = map2 (a, b. exp(a * b) + w) A B in \
                (map2 + (scanl (acc, x. x) 0 z) (scanr (x, acc. x) 1 z), reduce + 0 z)";
    check(dear, &inputs_ab(true));
    assert_eq!(workspace(dear), 1000);
    let inside = "def f(A: [n]real, B: [n]real, w: real) = \
                  let z = map2 (a, b. a * b + w) A B in \
                  map (a. a * reduce + 0 z) A";
    check(inside, &inputs_ab(true));
    assert_eq!(workspace(inside), 1000);
}

#[test]
fn kernels_in_a_loop_of_the_last_rows_stay_inline() {
    // The rows left after the blocks of the sum over rows run a few times per call, but
    // the loop over each row's elements inside them runs as long as the row: its `exp`
    // is inline, as in the blocks (a call there made 3 rows of 10^5 elements 1.26 times
    // slower). The function calls no kernel.
    let src = "def f(W: [n][m]real) = sum(map (row. sum(map (v. exp(v) * sin(v)) row)) W)";
    let (prog, func) = unfad_test_support::load(src);
    // The inline kernels' code (batches would replace it on a host with AVX2).
    unfad_jit::set_batch_mode(unfad_jit::BatchMode::Off);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    // A kernel's function is in the module only if some code calls it.
    assert!(
        !text.contains("; the function of the kernel"),
        "a kernel is called:\n{text}"
    );
    let rows = json!({"W": [[0.5, -1.0, 2.0], [0.25, 3.0, -0.5], [1.5, -2.5, 0.0]]});
    check(src, &[rows]);
}

#[test]
fn an_element_stored_and_folded_writes_its_scalars_after_its_loops() {
    // Logistic regression's optimized gradient: each row's element has two array
    // components (one stored, one folded into `w`'s gradient) and scalars that the value's
    // fold and `y`'s gradient read, among them `log(p)` and `log(1 - p)`. The loop writes
    // the arrays, runs the folds, then stores the scalars (so the logarithms run after the
    // row's loops): the same values, bit for bit.
    let src = "def logistic(X: [n][m]real, w: [m]real, b: real, y: [n]real): \
               (real, [n][m]real, [m]real, real, [n]real) =
  let A =
    map2 (x, t.
      let p = sigmoid(reduce + 0 (map2 * w x) + b) in
      let v32 = log(p) in
      let v35 = 1 - t in
      let v39 = 1 - p in
      let v38 = log(v39) in
      let z = -(p * -v35) + v39 * -t in
      (-(t * v32 + v35 * v38), (map (a. a * z) w, v38 + -v32, map (a_1. a_1 * z) x, z))) X y
  in
  (
    reduce + 0 (map (g. fst g) A),
    map (g_1. fst (snd g_1)) A,
    reduce (s, t_1. map2 + s t_1) zeros_like(w) (map (g_2. (snd g_2).2) A),
    reduce + 0 (map (g_3. (snd g_3).3) A),
    map (g_4. snd (snd g_4)) A
  )";
    let inputs: Vec<Json> = [(0, 3), (1, 1), (2, 5), (5, 4), (9, 7)]
        .iter()
        .map(|&(n, m)| {
            let y: Vec<f64> = (0..n).map(|i| (i % 2) as f64).collect();
            json!({"X": common::mat_of(n, m, 0.4), "w": vec_of(m, 0.2), "b": 0.1, "y": y})
        })
        .collect();
    check(src, &inputs);
}

#[test]
fn an_element_is_computed_where_its_kept_arrays_go() {
    // A softmax-like gradient per point: each point's row of the result is a sum over
    // the rows of W, accumulated in that row of the result (not in a buffer of its own,
    // then copied), and each point's exponentials are stored in its row of the other
    // result (`scratch_place`). Only `z` per point is stored (k reals).
    let src = "def f(X: [n][m]real, W: [k][m]real) = \
               let G = map (x. \
                 let z = map (row. reduce + 0 (map2 * row x)) W in \
                 let E = map (c. exp(c)) z in \
                 let s = reduce + 0 E in \
                 (log(s) - reduce + 0 z, \
                  reduce (a, t. map2 + a t) zeros_like(x) (map2 (c, row. map (r. c * r) row) z W), \
                  map (e. e / s) E)) X in \
               (reduce + 0 (map (g. fst g) G), map (g. g.1) G, map (g. g.2) G)";
    let inputs: Vec<Json> = [(0, 0, 0), (1, 2, 3), (3, 2, 1), (5, 4, 3)]
        .iter()
        .map(|&(n, m, k)| {
            let x: Vec<Json> = (0..n).map(|i| vec_of(m, 0.2 * i as f64)).collect();
            let w: Vec<Json> = (0..k).map(|i| vec_of(m, 0.5 + 0.1 * i as f64)).collect();
            json!({"X": x, "W": w})
        })
        .collect();
    check(src, &inputs);
    assert_eq!(workspace_at(src, &[100, 30, 10]), 10);
}

#[test]
fn a_scaled_sum_of_rows_accumulates_where_it_goes() {
    // A mean loss's gradient (`unfad_ad::reverse_factored`): the sum of each element's
    // contributions to a captured array's adjoint, scaled once after the loop. It adds
    // where the result goes, then the scale runs there in place: no buffer of its own.
    let src = "def f(X: [n]real, C: [m]real, d: real) = \
               let G = map (x. (x * x, map (c. c * exp(x)) C)) X in \
               (map (t. fst t) G, map (s. d * s) (reduce (a, b. map2 + a b) zeros_like(C) (map (t. snd t) G)))";
    let inputs: Vec<Json> = [(0, 0), (1, 1), (3, 2), (7, 5)]
        .iter()
        .map(|&(n, m)| json!({"X": vec_of(n, 0.3), "C": vec_of(m, 1.1), "d": 0.25}))
        .collect();
    check(src, &inputs);
    assert_eq!(workspace_at(src, &[1000, 10]), 0);
    // Per element, beside another loop over the same rows (a point's adjoint of its own
    // row and the contributions to a captured matrix's), the scaled sum of rows adds in
    // the loop the tuple's components share.
    let per_point = "def f(X: [n][m]real, W: [k][m]real, v: [k]real, d: real) = \
                     map (x. (map (s. d * s) (reduce (a, b. map2 + a b) zeros_like(x) \
                     (map2 (row, c. map (w. w * c) row) W v)), map2 (c, row. c * row[0]) v W)) X";
    let inputs: Vec<Json> = [(0, 1, 1), (1, 1, 1), (3, 2, 4), (4, 5, 3)]
        .iter()
        .map(|&(n, m, k)| {
            let rows = |r: usize, s: f64| -> Vec<Json> {
                (0..r).map(|i| vec_of(m, s + i as f64)).collect()
            };
            json!({"X": rows(n, 0.3), "W": rows(k, -0.7), "v": vec_of(k, 1.3), "d": 0.5})
        })
        .collect();
    check(per_point, &inputs);
    // A few reals whatever the sizes: no buffer of a row's length for the sum.
    let (large, small) = (
        workspace_at(per_point, &[100, 50, 20]),
        workspace_at(per_point, &[100, 7, 3]),
    );
    assert_eq!(large, small);
    assert!(large < 7, "{large} reals");
}

#[test]
fn a_scaled_sum_folded_in_its_columns_loop_is_not_summed_again() {
    // A negated mean log-likelihood beside a prior (GMM): the sums of the per-point loop's
    // columns are folded in that loop, whose columns are then not kept; the negations
    // around them must take those sums, not sum the columns again.
    let src = "def f(X: [n]real, t: [k]real, mu: [k]real) = \
               let D = map2 (a, m. (a * m, a + m)) t mu in \
               let L = map (x. (x * x, map (g. fst g) D, map (g. snd g) D)) X in \
               (reduce + 0 (map (g. fst g) L) + 1, \
                map (s. -s) (reduce (a, b. map2 + a b) zeros_like(mu) (map (g. g.1) L)), \
                map (s. -s) (reduce (a, b. map2 + a b) zeros_like(mu) (map (g. g.2) L)))";
    let inputs: Vec<Json> = [(0, 1), (1, 1), (3, 2), (5, 3)]
        .iter()
        .map(|&(n, k)| json!({"X": vec_of(n, 0.3), "t": vec_of(k, 1.1), "mu": vec_of(k, -0.4)}))
        .collect();
    check(src, &inputs);
}
