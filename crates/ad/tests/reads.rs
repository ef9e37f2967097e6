//! Repeated reads bound once before differentiation (`reads.rs`, on the route that
//! `compile_grad` takes): one `scatter_add` per position read, the same value, and the
//! same gradient to rounding; reads that only a condition's branch makes, or whose
//! index a `let` of the scope computes, are left where they are.

use unfad_interp::{args_from_json, eval_func};
use unfad_syntax::print_func;
use unfad_test_support::load;

/// The gradient of `src` by the weakened route, optimized, printed; and its outputs
/// against the paper's route at `input`, to a relative 1e-13.
fn optimized(src: &str, input: serde_json::Value) -> String {
    let (mut prog, func) = load(src);
    let all: Vec<usize> = (0..func.params.len()).collect();
    let weak = unfad_ad::reverse_weakened(&mut prog.arena, &func, &all).unwrap();
    let paper = unfad_ad::reverse(&mut prog.arena, &func, &all).unwrap();
    let weak = unfad_opt::optimize(&mut prog.arena, &weak).unwrap();
    let paper = unfad_opt::optimize(&mut prog.arena, &paper).unwrap();
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    let got = eval_func(&prog.arena, &weak, &args).unwrap().leaves();
    let want = eval_func(&prog.arena, &paper, &args).unwrap().leaves();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g - w).abs() <= 1e-13 * (1.0 + w.abs()),
            "{got:?}\n{want:?}"
        );
    }
    print_func(&prog.arena, &weak)
}

#[test]
fn rosenbrock_scatters_once_per_position_read() {
    let text = optimized(
        "def rosen(x: [n]real): real =
           sum(map (i. 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i])) (iota (len(x) - 1)))",
        serde_json::json!({"x": [0.5, -1.25, 2.0, 0.75, 3.5, -0.5]}),
    );
    // `x[i]` and `x[i + 1]`: two positions, two scatters (there were eight).
    assert_eq!(text.matches("scatter_add(").count(), 2, "{text}");
}

#[test]
fn a_read_only_a_branch_makes_stays_in_the_branch() {
    // `x[i - 1]` is read only where `i > 0`: binding it first would read `x[-1]`.
    let text = optimized(
        "def f(x: [n]real): real =
           sum(map (i. if i > 0 then x[i - 1] * x[i - 1] + x[i] else x[i]) (iota len(x)))",
        serde_json::json!({"x": [0.5, -1.25, 2.0, 0.75]}),
    );
    assert!(!text.contains("x_at = x[i - 1]"), "{text}");
}

#[test]
fn a_read_at_a_position_a_let_computes_is_left_alone() {
    let (mut prog, func) = load(
        "def f(x: [n]real): real =
           sum(map (i. let j = i in x[j] * x[j]) (iota len(x)))",
    );
    let weak = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0]).unwrap();
    let text = print_func(&prog.arena, &weak);
    assert!(!text.contains("x_at"), "{text}");
}
