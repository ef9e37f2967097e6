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
    // `x[i]` and `x[i + 1]`: two positions, two arrays of adjoints (there were eight
    // scatters), contiguous and so added elementwise, the second moved by one place.
    assert_eq!(text.matches("scatter_add(").count(), 0, "{text}");
    assert_eq!(text.matches("scanl (").count(), 1, "{text}");
    assert_eq!(text.matches("scanr (").count(), 1, "{text}");
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

/// A random stencil written by position: arithmetic over reads `x[j]`, `x[j + 1]`,
/// `x[j + 2]` and `w[j]`, repeated at random, some under `if j > 0` beside `x[j - 1]`.
fn random_stencil(state: &mut u64) -> String {
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }
    fn expr(state: &mut u64, depth: u32) -> String {
        let pick = next(state) % if depth == 0 { 5 } else { 10 };
        match pick {
            0 => "x[j]".into(),
            1 => "x[j + 1]".into(),
            2 => "x[j + 2]".into(),
            3 => "w[j]".into(),
            4 => format!("{}", (next(state) % 7) as f64 * 0.5 - 1.0),
            5 => format!("({} + {})", expr(state, depth - 1), expr(state, depth - 1)),
            6 => format!("({} - {})", expr(state, depth - 1), expr(state, depth - 1)),
            7 => format!("({} * {})", expr(state, depth - 1), expr(state, depth - 1)),
            8 => format!("sin({})", expr(state, depth - 1)),
            _ => format!(
                "(if j > 0 then {} * x[j - 1] else {})",
                expr(state, depth - 1),
                expr(state, depth - 1)
            ),
        }
    }
    let body = expr(state, 4);
    format!(
        "def f(x: [n]real, w: [n]real): real = sum(map (j. {body} * {body}) (iota (len(x) - 2)))"
    )
}

/// On random stencils whose reads repeat, sharing the reads changes the gradient only by
/// rounding: the weakened route (which shares them), optimized, against the paper's
/// (which does not) as the macro makes it, on the same input.
#[test]
fn sharing_reads_keeps_random_gradients() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut shared = 0;
    for case in 0..200 {
        let src = random_stencil(&mut state);
        let (mut prog, func) = load(&src);
        let weak = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1]).unwrap();
        if print_func(&prog.arena, &weak).contains("_at = ") {
            shared += 1;
        }
        // The paper's term as the macro makes it, unoptimized: the reference for the
        // rules the shared reads' adjoints go through too.
        let paper = unfad_ad::reverse(&mut prog.arena, &func, &[0, 1]).unwrap();
        let weak = unfad_opt::optimize(&mut prog.arena, &weak).unwrap();
        let input = serde_json::json!({
            "x": [0.5, -1.25, 2.0, 0.75, 1.5, -0.5, 0.25],
            "w": [1.0, 0.5, -0.75, 2.0, -1.0, 0.3, 0.9]
        });
        let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
        let got = eval_func(&prog.arena, &weak, &args).unwrap().leaves();
        let want = eval_func(&prog.arena, &paper, &args).unwrap().leaves();
        assert_eq!(got.len(), want.len(), "case {case}: {src}");
        let scale = 1.0 + want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g - w).abs() <= 1e-12 * scale,
                "case {case}: {src}\n{got:?}\n{want:?}"
            );
        }
    }
    assert!(
        shared >= 100,
        "reads were shared in only {shared} of 200 stencils"
    );
}
