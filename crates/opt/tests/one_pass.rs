//! One pass over an array (`unfad_opt::one_pass`): a fold accumulating whole rows beside
//! maps and reductions over the same array becomes one map whose columns they read. The
//! pass needs the settled term (the scatters' sizes known), so it is checked through
//! `optimize`: random per-position losses' optimized gradients against reverse mode's
//! term before optimization, to a relative 1e-12 (the sums may be rounded differently:
//! a `reduce` where there was a `foldl`), with their types, and most of them left with
//! no fold over the rows.

use serde_json::json;
use unfad_interp::{args_from_json, eval_func, value_to_json};
use unfad_syntax::{print_func, Arena, Func};
use unfad_test_support::load;
use unfad_testgen::Rng;

/// The reals of a JSON value, in order.
fn reals(v: &serde_json::Value, out: &mut Vec<f64>) {
    match v {
        serde_json::Value::Number(x) => out.push(x.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::Array(items) => items.iter().for_each(|i| reals(i, out)),
        serde_json::Value::Object(m) => m.values().for_each(|i| reals(i, out)),
        _ => {}
    }
}

/// The value of `f` at `input` (arguments read for `source`'s parameters), as reals.
fn value_of(arena: &Arena, source: &Func, f: &Func, input: &serde_json::Value) -> Vec<f64> {
    let (args, _) = args_from_json::<f64>(arena, source, input).unwrap();
    let v = eval_func(arena, f, &args).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    reals(&value_to_json(&v), &mut out);
    out
}

/// The gradient of `src` by reverse mode as `compile_grad` takes it, before and after
/// `optimize` (whose last passes include this one).
fn before_and_after(src: &str) -> (Arena, Func, Func, Func) {
    let (mut prog, func) = load(src);
    let types = func.param_types(&prog.arena);
    let wrt: Vec<usize> = (0..types.len()).filter(|&i| types[i].has_reals()).collect();
    let rev = unfad_ad::reverse_weakened(&mut prog.arena, &func, &wrt).unwrap();
    let after = unfad_opt::optimize(&mut prog.arena, &rev).unwrap();
    (prog.arena, func, rev, after)
}

/// A loss over the rows of `X` reading per-position parameters `a[j]` and `b[j]`, its
/// per-position term drawn from a few plainly written ones.
fn per_position(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let terms = [
        "(x[j] - a[j]) * (x[j] - a[j]) * b[j]",
        "log(b[j] * b[j] + 1) + x[j] * a[j]",
        "tanh(a[j] * x[j] + b[j])",
        "exp(-(x[j] - a[j]) * (x[j] - a[j])) * b[j]",
        "(x[j] - a[j]) * (x[j] - a[j]) / (2 * b[j] * b[j] + 1)",
        "a[j] * x[j] * x[j]",
    ];
    let k = 1 + rng.below(2);
    let body: Vec<&str> = (0..k).map(|_| *rng.pick(&terms)).collect();
    format!(
        "def f(X: [n][m]real, a: [m]real, b: [m]real): real =\n  \
         sum(map (x. sum(map (j. {}) (iota len(x)))) X)",
        body.join(" + ")
    )
}

#[test]
fn joining_random_per_position_losses_keeps_their_gradients() {
    let mut joined = 0;
    for seed in 0..60 {
        let src = per_position(seed);
        let (mut arena, func, term, after) = before_and_after(&src);
        let printed = print_func(&arena, &after);
        joined += usize::from(!printed.contains("foldl"));
        let shown = format!("{src}\nafter:\n{}", print_func(&arena, &after));
        unfad_opt::check_types(&mut arena, &after).unwrap_or_else(|e| panic!("{e}\n{shown}"));
        for (n, m) in [(0, 2), (1, 1), (3, 2), (4, 5)] {
            let x: Vec<Vec<f64>> = (0..n)
                .map(|i| {
                    (0..m)
                        .map(|j| 0.3 * i as f64 - 0.2 * j as f64 + 0.1)
                        .collect()
                })
                .collect();
            let a: Vec<f64> = (0..m).map(|j| 0.05 * j as f64 - 0.1).collect();
            let b: Vec<f64> = (0..m).map(|j| 0.5 + 0.25 * j as f64).collect();
            let input = json!({ "X": x, "a": a, "b": b });
            let (before, now) = (
                value_of(&arena, &func, &term, &input),
                value_of(&arena, &func, &after, &input),
            );
            assert_eq!(before.len(), now.len(), "{shown}");
            for (p, q) in before.iter().zip(&now) {
                assert!(
                    (p - q).abs() <= 1e-12 * (1.0 + p.abs()),
                    "{p} against {q} at n = {n}, m = {m}\n{shown}"
                );
            }
        }
    }
    // Every such loss reads both parameters by position (or one of them), and its
    // value and `X`'s adjoint loop over `X` beside the fold.
    assert!(joined >= 50, "only {joined} of 60 losses were joined");
}

#[test]
fn a_gaussian_losss_gradient_reads_its_matrix_once() {
    let src = "def f(X: [n][m]real, mu: [m]real, sig: [m]real): real =
      sum(map (x. sum(map (j. log(sig[j]) + (x[j] - mu[j]) * (x[j] - mu[j]) / (2 * sig[j] * sig[j]))
        (iota len(x)))) X)";
    let (mut prog, func) = load(src);
    let rev = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1, 2]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &rev).unwrap();
    let printed = print_func(&prog.arena, &opt);
    // No fold over the rows is left; one map over `X` computes every adjoint's row.
    assert!(!printed.contains("foldl"), "{printed}");
    assert_eq!(printed.matches(") X").count(), 1, "{printed}");
    // The loops joined had each hoisted `1 / (2 sig[j]^2)`: the copies that repeat another
    // are made once (`reuse`), and the loop reads that array's column in place.
    assert!(!printed.contains("map (pe"), "{printed}");
    assert!(printed.matches("1 / (2 * sig").count() <= 2, "{printed}");
}
