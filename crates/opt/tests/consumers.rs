//! Joining the loops that read a stored loop element by element to it
//! (`unfad_opt::consumers`) changes no value, not even in the last bit: each element is
//! computed by the same operations, and each reduction reduces the same values in the same
//! order. Where a joined loop would still be read otherwise, nothing changes.

mod common;

use common::value;

use unfad_interp::args_from_json;
use unfad_opt::consumers::join_consumers;
use unfad_syntax::{print_func, Func};
use unfad_test_support::load;
use unfad_testgen::{generate, Features};

fn before_and_after(src: &str) -> (unfad_syntax::Program, Func, Func, Func) {
    common::before_and_after(src, join_consumers)
}

#[test]
fn joining_consumers_in_random_gradients_changes_no_value() {
    let runs = [(Features::all(), 0..700), (Features::indexing(), 700..1000)];
    let mut changed = 0;
    for (features, seeds) in &runs {
        for seed in seeds.clone() {
            let g = generate(seed, features);
            let (mut prog, func, term, joined) = before_and_after(&g.source);
            if joined.body == term.body {
                continue;
            }
            changed += 1;
            let (args, _) = args_from_json::<f64>(&prog.arena, &func, &g.input).unwrap();
            let shown = format!(
                "seed {seed}\n{}\njoined:\n{}",
                print_func(&prog.arena, &term),
                print_func(&prog.arena, &joined)
            );
            unfad_opt::check_types(&mut prog.arena, &joined)
                .unwrap_or_else(|e| panic!("{e}\n{shown}"));
            assert_eq!(
                value(&prog.arena, &term, &args),
                value(&prog.arena, &joined, &args),
                "{shown}"
            );
            // A second pass finds nothing more to join: the joint loop's columns are no
            // consumers.
            let again = join_consumers(&mut prog.arena, &joined);
            assert_eq!(again.body, joined.body, "{shown}");
        }
    }
    // The test means something only if consumers are often joined.
    assert!(
        changed >= 40,
        "consumers were joined in only {changed} of 1000 gradients"
    );
}

#[test]
fn a_residuals_adjoints_are_made_in_the_loop_that_makes_it() {
    // `||A x - b||^2`: per row, the residual's square (the value), the row of `A`'s
    // adjoint, the contribution to `x`'s and `b`'s adjoint. Before, the residuals were
    // stored and read back by four loops.
    let src = "def least_squares(A: [n][m]real, x: [m]real, b: [n]real): real =
           let Ax = map (row. dot(row, x)) A in
           let r = map2 (p, bi. p - bi) Ax b in
           dot(r, r)";
    let (prog, func, term, joined) = before_and_after(src);
    let before = print_func(&prog.arena, &term);
    let printed = print_func(&prog.arena, &joined);
    assert_ne!(before, printed);
    // One statement, the joint loop over `A` and `b`; every component reads its columns.
    assert_eq!(printed.matches("\n  let ").count(), 1, "{printed}");
    assert_eq!(printed.matches(") A b").count(), 1, "{printed}");
    assert_eq!(printed.matches("_joint").count(), 5, "{printed}");
    let input = serde_json::json!({
        "A": [[1.0, 2.0, -0.5], [0.25, -1.0, 3.0]],
        "x": [0.5, -2.0, 1.5],
        "b": [1.0, -0.75]
    });
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    assert_eq!(
        value(&prog.arena, &term, &args),
        value(&prog.arena, &joined, &args)
    );
}

#[test]
fn a_batchs_mean_loss_joins_its_scaled_reductions() {
    // The mean over a batch scales every adjoint by `1 / len(X)`: the weights' adjoints
    // are scaled sums of the per-example loop's columns (`map (s. dv * s) (reduce ...)`,
    // `dv * reduce + 0 (...)`). They join as the bare sums do, the scales staying around
    // them; before, they counted as other reads of the loop, which was then stored whole
    // (a matrix of the weights' shape per example).
    // `examples/mlp.ad`: a dense layer written as a definition, a ReLU by `max`.
    let src = "def dense(W: [h][d]real, c: [h]real, x: [d]real): [h]real =
           map2 (row, ci. dot(row, x) + ci) W c
         def relu(a: real): real = max(0, a)
         def f(X: [b][d]real, T: [b]real, W: [h][d]real, c: [h]real, w2: [h]real): real =
           let errors = map2 (x, t.
               let hidden = map (a. relu(a)) (dense(W, c, x)) in
               let out = tanh(dot(w2, hidden)) in
               (out - t) * (out - t)) X T in
           sum(errors) / len(X)";
    let (mut prog, func, term, joined) = before_and_after(src);
    let printed = print_func(&prog.arena, &joined);
    assert_ne!(print_func(&prog.arena, &term), printed);
    // The weights' adjoints read columns of the joint loop, under their scales
    // (`map (s. dv * s)`).
    for marker in ["zeros_like(W)", "zeros_like(c)"] {
        let line = printed.lines().find(|l| l.contains(marker)).unwrap_or("");
        assert!(line.contains("_joint"), "`{marker}`: {printed}");
    }
    assert!(
        printed.contains("(reduce (s"),
        "the weights' sums stay under their scales: {printed}"
    );
    unfad_opt::check_types(&mut prog.arena, &joined).unwrap();
    let input = serde_json::json!({
        "X": [[1.0, 2.0], [0.25, -1.0], [-0.5, 0.75]],
        "T": [0.5, -0.25, 0.1],
        "W": [[0.3, -0.2], [0.1, 0.4], [-0.6, 0.2]],
        "c": [0.1, -0.3, 0.2],
        "w2": [0.5, -0.7, 0.3]
    });
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    assert_eq!(
        value(&prog.arena, &term, &args),
        value(&prog.arena, &joined, &args)
    );
}

#[test]
fn consumers_over_more_arrays_zip_them_into_the_joint_loop() {
    // A dense tanh layer's loss: the layer's outputs `E` map over `W` and `b`, the
    // residuals over `E` and the target `t`, which the joint loop reads too.
    let src = "def loss(W: [n][m]real, b: [n]real, x: [m]real, t: [n]real): real =
           let h = map2 (row, bi. tanh(dot(row, x) + bi)) W b in
           sum(map2 (hi, ti. (hi - ti) * (hi - ti)) h t)";
    let (prog, func, term, joined) = before_and_after(src);
    let printed = print_func(&prog.arena, &joined);
    assert_eq!(printed.matches("\n  let ").count(), 1, "{printed}");
    assert!(printed.contains(") W b) t"), "{printed}");
    let input = serde_json::json!({
        "W": [[1.0, 2.0], [0.25, -1.0], [0.5, 0.5]],
        "b": [0.1, -0.2, 0.3],
        "x": [0.5, -0.25],
        "t": [0.0, 1.0, -1.0]
    });
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    assert_eq!(
        value(&prog.arena, &term, &args),
        value(&prog.arena, &joined, &args)
    );
}

#[test]
fn consumers_in_a_loop_bodys_nested_result_join_too() {
    // A softmax layer per point: its result is `(value, (adjoint of x, adjoint of z, rows
    // of W's gradient))`. The logits' adjoint needs their sum, then the adjoint of `x` (a
    // sum over the rows) and the rows of `W`'s gradient loop over it and `W`: nested in
    // the body's result, they join it, one loop over the rows.
    let src = "def f(X: [n][m]real, W: [k][m]real, Y: [n][k]real): real =
           sum(map2 (x, y.
             let z = map (row. dot(row, x)) W in
             let lse = log(sum(map (zc. exp(zc)) z)) in
             sum(map2 (yc, zc. yc * (lse - zc)) y z)) X Y)";
    let (prog, func, term, joined) = before_and_after(src);
    let printed = print_func(&prog.arena, &joined);
    assert!(!print_func(&prog.arena, &term).contains("_joint"));
    assert_eq!(printed.matches("_joint =").count(), 1, "{printed}");
    assert!(printed.contains(") W\n"), "{printed}");
    let input = serde_json::json!({
        "X": [[1.0, 2.0], [0.25, -1.0], [0.5, 0.5]],
        "W": [[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]],
        "Y": [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    });
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    assert_eq!(
        value(&prog.arena, &term, &args),
        value(&prog.arena, &joined, &args)
    );
}

#[test]
fn loops_read_otherwise_or_after_a_reduction_stay_apart() {
    // logsumexp: the exponentials' consumer in the gradient reads `1 / sum`, bound after
    // them; second differences: the adjoints are read by scans. Joining would store what
    // the code generator recomputes or folds.
    for src in [
        "def lse(x: [n]real): real = log(sum(map (v. exp(v)) x))",
        "def f(x: [n]real): real =
           let left = shift1R (shift1R x) in
           let middle = shift1L (shift1R x) in
           let right = shift1L (shift1L x) in
           let outer = map2 (l, r. l + r) left right in
           sum(map2 (o, c. (o - 2 * c) * (o - 2 * c)) outer middle)",
    ] {
        let (prog, _, term, joined) = before_and_after(src);
        assert_eq!(
            print_func(&prog.arena, &term),
            print_func(&prog.arena, &joined),
            "{src}"
        );
    }
    // A maximum is folded in a loop of its own, and a scan reads the whole array: the
    // exponentials stay stored, and their other consumer in its own loop.
    for src in [
        "def f(x: [n]real): (real, [n]real) =
           let d = map (v. exp(v)) x in
           (reduce max (-1e300) (map (v. v * v) d), map (v. v + 1) d)",
        "def f(x: [n]real): ([n+1]real, [n]real) =
           let d = map (v. exp(v)) x in
           (scanl + 0 d, map (v. v + 1) d)",
    ] {
        let (mut prog, func) = load(src);
        let func = unfad_opt::simplify_to_fixed_point(&mut prog.arena, &func);
        let joined = join_consumers(&mut prog.arena, &func);
        assert_eq!(joined.body, func.body, "{src}");
    }
    // Without the maximum, the two loops are one.
    let (mut prog, func) = load(
        "def f(x: [n]real): (real, [n]real) =
           let d = map (v. exp(v)) x in
           (sum(map (v. v * v) d), map (v. v + 1) d)",
    );
    let func = unfad_opt::simplify_to_fixed_point(&mut prog.arena, &func);
    let joined = join_consumers(&mut prog.arena, &func);
    let printed = print_func(&prog.arena, &joined);
    assert!(printed.contains("d_joint"), "{printed}");
}
