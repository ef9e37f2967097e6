//! Joining a reduced loop to an earlier loop over the same arrays
//! (`unfad_opt::siblings`) changes no value, not even in the last bit: each element is
//! computed by the same operations, and each reduction runs over the same elements in the
//! same order.

mod common;

use common::{keeps_values, value};

use unfad_interp::args_from_json;
use unfad_opt::siblings::fuse_sibling_loops;
use unfad_syntax::print_func;
use unfad_test_support::load;
use unfad_testgen::Features;

#[test]
fn joining_the_loops_of_random_gradients_changes_no_value() {
    let changed = keeps_values(
        fuse_sibling_loops,
        |_, f| f.clone(),
        &[(Features::all(), 0..1500)],
    );
    // The test means something only if loops are often joined.
    assert!(
        changed >= 40,
        "loops were joined in only {changed} of 1500 gradients"
    );
}

#[test]
fn the_value_of_a_sum_is_computed_in_the_gradients_loop() {
    let (mut prog, func) = load(
        "def huber(pred: [n]real, y: [n]real, delta: real): real =
           sum(map2 (p, t.
             let r = p - t in
             if abs(r) <= delta then 0.5 * r * r else delta * (abs(r) - 0.5 * delta)) pred y)",
    );
    let rev = unfad_ad::reverse(&mut prog.arena, &func, &[0, 1, 2]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &rev).unwrap();
    let printed = print_func(&prog.arena, &opt);
    // One loop over `pred` and `y`: the value is a column of it, folded.
    assert_eq!(printed.matches(") pred y").count(), 1, "{printed}");
    assert!(printed.contains("reduce + 0 (map (g. fst g)"), "{printed}");
}

#[test]
fn a_sum_the_value_also_reads_joins_the_loop_over_the_same_arrays() {
    // Smoothing's gradient: the sum of squared differences is a term of the value and the
    // gradient of `lam`, and the penalty's adjoint maps over the same differences. The sum
    // joins that map's loop (its elements then hold both), and the values do not change.
    let src = "def smoothing(x: [n]real, y: [n]real, lam: real): real =
           let fit = sum(map2 (xi, yi. (xi - yi) * (xi - yi)) x y) in
           let diffs = map2 (next, prev. next - prev) (shift1L x) (shift1R x) in
           fit + lam * sum(map (t. t * t) diffs)";
    let (mut prog, func) = load(src);
    let rev = unfad_ad::reverse(&mut prog.arena, &func, &[0, 1, 2]).unwrap();
    let term = unfad_opt::simplify_to_fixed_point(&mut prog.arena, &rev);
    let joined = fuse_sibling_loops(&mut prog.arena, &term);
    let printed = print_func(&prog.arena, &joined);
    let statements: Vec<&str> = printed.split("\n  let ").collect();
    assert!(
        statements
            .iter()
            .any(|s| s.contains("t * t") && s.contains("* lam")),
        "{printed}"
    );
    let input = serde_json::json!({"x": [0.5, -1.25, 2.0, 0.75, 3.5], "y": [1.0, 0.0, -0.5, 2.0, 1.5], "lam": 0.3});
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    assert_eq!(
        value(&prog.arena, &term, &args),
        value(&prog.arena, &joined, &args)
    );
}

#[test]
fn a_means_value_joins_the_loop_of_its_gradient() {
    // A mean loss, its factor taken out of the reverse pass (`unfad_ad::reverse_factored`):
    // the value is the sum over the points divided by their number, which the code
    // generator folds in the loop that makes its terms as it folds a bare sum. The value's
    // loop over the points joins the gradient's, which then computes each point's hidden
    // layer once; values do not change.
    let src = "def loss(X: [n][m]real, y: [n]real, W: [k][m]real, v: [k]real): real =
           let err = map2 (x, t.
             let h = map (row. tanh(dot(row, x))) W in
             let o = dot(v, h) in
             (o - t) * (o - t)) X y in
           sum(err) / real(len(X))";
    let (mut prog, func) = load(src);
    let rev = unfad_ad::reverse_factored(&mut prog.arena, &func, &[0, 1, 2, 3]).unwrap();
    let term = unfad_opt::simplify_to_fixed_point(&mut prog.arena, &rev);
    let joined = fuse_sibling_loops(&mut prog.arena, &term);
    let printed = print_func(&prog.arena, &joined);
    // One loop over the points (without the factor out, two: the value's and the
    // gradient's, each computing the hidden layer).
    assert_eq!(printed.matches(") X y").count(), 1, "{printed}");
    let input = serde_json::json!({
        "X": [[0.5, -1.0], [0.25, 2.0], [1.5, 0.5]],
        "y": [1.0, -0.5, 0.25],
        "W": [[0.3, -0.2], [0.1, 0.4], [-0.6, 0.2]],
        "v": [0.5, -1.5, 2.0]
    });
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    assert_eq!(
        value(&prog.arena, &term, &args),
        value(&prog.arena, &joined, &args)
    );
}

/// Points as rows read by position, interacting with other points: per point, the value,
/// the point's adjoint (a sum of rows over the other points) and the rows of the other
/// points' adjoint all come from one loop over them, which computes each distance once.
/// The point's sum is a component of a nested tuple of the element (`(v, (dp, dQ))`),
/// and its unit a literal of zeros that the rules drop (`add_zero_literal`).
#[test]
fn a_sum_in_a_nested_component_joins_the_loop_over_the_same_points() {
    let src = "def repel(P: [n][2]real, Q: [m][2]real): real =
  sum(map (p. sum(map (q. 1 / sqrt((p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) + 0.01)) Q)) P)";
    let (mut prog, func) = load(src);
    let rev = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &rev).unwrap();
    let printed = print_func(&prog.arena, &opt);
    assert_eq!(printed.matches("sqrt(").count(), 1, "{printed}");
    assert_eq!(printed.matches(") Q").count(), 1, "{printed}");
    let input = serde_json::json!({"P": [[0.5, -1.25], [2.0, 0.75]], "Q": [[1.0, 0.0], [-0.5, 2.0], [1.5, 0.25]]});
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    let plain = unfad_opt::simplify_to_fixed_point(&mut prog.arena, &rev);
    // The same gradient as the simplified one, to rounding (the division's adjoint reads
    // the quotient, the other passes compute each number as before).
    let numbers = |f: &unfad_syntax::Func| {
        let text = value(&prog.arena, f, &args);
        let mut out = Vec::new();
        flatten(&serde_json::from_str(&text).expect(&text), &mut out);
        out
    };
    let (a, b) = (numbers(&plain), numbers(&opt));
    let close = |x: &f64, y: &f64| (x - y).abs() <= 1e-12 * (1.0 + x.abs());
    assert!(
        a.len() == 11 && a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| close(x, y)),
        "{a:?}\n{b:?}"
    );
}

fn flatten(v: &serde_json::Value, out: &mut Vec<f64>) {
    match v {
        serde_json::Value::Array(items) => items.iter().for_each(|i| flatten(i, out)),
        serde_json::Value::Number(n) => out.push(n.as_f64().unwrap()),
        other => panic!("not a number: {other}"),
    }
}
