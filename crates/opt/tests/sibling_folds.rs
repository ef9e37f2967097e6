//! Joining sibling folds of accumulations over the same array (`unfad_opt::folds`): the
//! values stay those of the folds apart (to rounding: a component that receives both a
//! fold's and a scatter's additions gets them in another order), the joint fold is an
//! accumulation into every component, and folds that must stay apart do.

mod common;

use unfad_interp::{args_from_json, eval_func, Value};
use unfad_opt::folds::join_sibling_folds;
use unfad_syntax::{print_func, Arena, Func};
use unfad_test_support::load;
use unfad_testgen::{generate, Features};

fn reals(v: &Value<f64>, out: &mut Vec<f64>) {
    match v {
        Value::Real(x) => out.push(*x),
        Value::Tuple(items) | Value::Array(items) => items.iter().for_each(|i| reals(i, out)),
        _ => {}
    }
}

/// The reals of `f`'s value on `args`, or the error's text.
fn value(arena: &Arena, f: &Func, args: &[Value<f64>]) -> Result<Vec<f64>, String> {
    let v = eval_func(arena, f, args).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    reals(&v, &mut out);
    Ok(out)
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(&x, &y)| {
            x.to_bits() == y.to_bits() || (x - y).abs() <= 1e-12 * (1.0 + x.abs().max(y.abs()))
        })
}

fn before_and_after(src: &str) -> (unfad_syntax::Program, Func, Func, Func) {
    common::before_and_after(src, join_sibling_folds)
}

#[test]
fn joining_the_folds_of_random_gradients_keeps_their_values() {
    let mut changed = 0;
    let runs = (0..1500)
        .map(|s| (s, Features::all()))
        .chain((0..1500).map(|s| (s, Features::indexing())));
    for (seed, features) in runs {
        let g = generate(seed, &features);
        let (mut prog, func) = load(&g.source);
        let (args, _) = args_from_json::<f64>(&prog.arena, &func, &g.input).unwrap();
        let types = func.param_types(&prog.arena);
        let wrt: Vec<usize> = (0..types.len()).filter(|&i| types[i].has_reals()).collect();
        let Ok(rev) = unfad_ad::reverse(&mut prog.arena, &func, &wrt) else {
            continue;
        };
        let term = unfad_opt::optimize_before_hoisting(&mut prog.arena, &rev);
        let joined = join_sibling_folds(&mut prog.arena, &term);
        if joined.body == term.body {
            continue;
        }
        changed += 1;
        let shown = format!(
            "seed {seed}\n{}\njoined:\n{}",
            print_func(&prog.arena, &term),
            print_func(&prog.arena, &joined)
        );
        let (before, after) = (
            value(&prog.arena, &term, &args),
            value(&prog.arena, &joined, &args),
        );
        match (&before, &after) {
            (Ok(b), Ok(a)) => assert!(close(b, a), "{b:?}\n{a:?}\n{shown}"),
            _ => assert_eq!(
                before.is_ok(),
                after.is_ok(),
                "{before:?} {after:?}\n{shown}"
            ),
        }
        unfad_opt::check_types(&mut prog.arena, &joined).unwrap_or_else(|e| panic!("{e}\n{shown}"));
    }
    eprintln!("folds joined in {changed} of 3000 gradients");
    // The test means something only if folds are joined now and then.
    assert!(
        changed >= 10,
        "folds were joined in only {changed} of 3000 gradients"
    );
}

/// A recurrence over a sequence that reads two captured weight arrays and its inputs by
/// index: reverse mode gives each captured array a fold of its own over the steps.
const RNN: &str = "def f(w: [k]real, b: [k]real, xs: [n]real) = \
    foldl (h, t. tanh(h * w[0] + xs[t] * w[1] + b[0]) + b[1] * h) 0.5 (iota len(xs))";

#[test]
fn the_adjoints_of_a_recurrences_captured_arrays_come_from_one_fold() {
    let (prog, func, term, joined) = before_and_after(RNN);
    let before = print_func(&prog.arena, &term);
    let after = print_func(&prog.arena, &joined);
    // Apart, one reverse pass per captured array recomputes the step's `tanh`.
    assert!(
        before.matches("tanh(").count() > after.matches("tanh(").count(),
        "{before}\n{after}"
    );
    assert!(after.contains("let F ="), "{after}");
    for xs in [vec![], vec![0.5], vec![0.5, -1.0, 2.0, 0.25]] {
        let input = serde_json::json!({"w": [0.7, -0.4], "b": [0.1, 0.3], "xs": xs});
        let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
        let b = value(&prog.arena, &term, &args).unwrap();
        let a = value(&prog.arena, &joined, &args).unwrap();
        assert!(close(&b, &a), "{b:?}\n{a:?}");
    }
    // The cost model counts the joint fold as accumulations in place: less work than the
    // folds apart.
    let sizes = |s: &str| match s {
        "k" => Some(2),
        "n" => Some(1000),
        _ => None,
    };
    let cost_before = unfad_opt::cost_of(&prog.arena, term.body, &sizes);
    let cost_after = unfad_opt::cost_of(&prog.arena, joined.body, &sizes);
    assert!(
        cost_after.total() < cost_before.total(),
        "{cost_before:?} {cost_after:?}"
    );
}

#[test]
fn folds_over_different_arrays_stay_apart() {
    // The same weights read by two recurrences over different sequences: the adjoints of
    // each sequence are folds over that recurrence's steps.
    let src = "def f(w: [k]real, b: [k]real, h0: [k]real, xs: [n]real, ys: [m]real) = \
               reduce + 0 (foldl (h, t. map (i. tanh(h[i] * w[i] + xs[t] * b[i])) (iota len(h))) \
                 h0 (iota len(xs))) + \
               reduce + 0 (foldl (h, t. map (i. tanh(h[i] * b[i] + ys[t] * w[i])) (iota len(h))) \
                 h0 (iota len(ys)))";
    let (prog, _, term, joined) = before_and_after(src);
    let before = print_func(&prog.arena, &term);
    let after = print_func(&prog.arena, &joined);
    assert!(before.matches("foldl (acc").count() >= 2, "{before}");
    assert!(!after.contains("let F ="), "{before}\n{after}");
}

/// A convolution written by position: each element's square adds into the adjoints of the
/// signal (a window) and of the weights, two folds over the positions paired with their
/// adjoint, a constant (`(1, i)`). They join, and the window's dot product is computed
/// once per position for both.
#[test]
fn folds_over_positions_beside_a_constant_adjoint_join() {
    let src = "def f(x: [n]real, w: [k]real) =
                 sum(map (i. let s = sum(map (j. w[j] * x[i + j]) (iota len(w))) in s * s)
                   (iota (len(x) - len(w) + 1)))";
    let (prog, func, term, joined) = before_and_after(src);
    let before = print_func(&prog.arena, &term);
    let after = print_func(&prog.arena, &joined);
    assert!(after.contains("let F ="), "{before}\n{after}");
    assert!(
        before.matches("reduce + 0 (map (j").count() > after.matches("reduce + 0 (map (j").count(),
        "{before}\n{after}"
    );
    let input = serde_json::json!({"x": [0.5, -1.0, 2.0, 0.25, 1.5, -0.75], "w": [0.7, -0.4, 0.2]});
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    let b = value(&prog.arena, &term, &args).unwrap();
    let a = value(&prog.arena, &joined, &args).unwrap();
    assert!(close(&b, &a), "{b:?}\n{a:?}");
}
