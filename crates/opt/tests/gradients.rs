//! Optimized gradients of random programs of the whole Source language (`unfad-testgen`,
//! `Features::all()`): every program is differentiated by the direct macro; before and
//! after optimization the value and the gradient agree with forward mode; the optimized
//! term is first-order (Lemma noHO), within the cheap-gradient bound
//! `Cost(grad e) <= 4 * 3^p * Cost(e)` ([`Bound::measure`], arguments included), and its
//! cost grows like the program's (no term with an extra factor of a size).

use std::collections::BTreeMap;

use unfad_interp::{args_from_json, eval_func, forward_gradient, Value};
use unfad_opt::{check_first_order, nao, Bound};
use unfad_syntax::{print_func, Arena, Func};
use unfad_test_support::load;
use unfad_testgen::{generate, Features};

/// Against forward mode, whose sums run in another order.
fn close(a: f64, b: f64) -> bool {
    unfad_test_support::close(a, b, 1e-10)
}

fn eval_reverse(arena: &Arena, rev: &Func, args: &[Value<f64>]) -> (f64, Vec<Vec<f64>>) {
    let out = eval_func(arena, rev, args).unwrap_or_else(|e| panic!("{e}"));
    let Value::Tuple(items) = out else {
        panic!("not a tuple: {out}")
    };
    let v = items[0].as_real().expect("the value is a real");
    (v, items[1..].iter().map(|g| g.leaves()).collect())
}

/// Checks the seeds; returns the worst cost ratio observed per NAO depth `p`.
fn check(features: &Features, seeds: std::ops::Range<u64>) -> BTreeMap<u32, f64> {
    let mut worst: BTreeMap<u32, f64> = BTreeMap::new();
    for seed in seeds {
        let g = generate(seed, features);
        let (mut prog, func) = load(&g.source);
        let (args, _) = args_from_json::<f64>(&prog.arena, &func, &g.input).unwrap();
        let (v0, g0) = forward_gradient(&prog.arena, &func, &args).unwrap();
        let all: Vec<usize> = (0..func.params.len()).collect();
        let rev = unfad_ad::reverse(&mut prog.arena, &func, &all)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        let opt = unfad_opt::optimize(&mut prog.arena, &rev)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        check_first_order(&prog.arena, &opt).unwrap();
        for (stage, f) in [("reverse", &rev), ("optimized", &opt)] {
            let (v, grads) = eval_reverse(&prog.arena, f, &args);
            let show = || format!("{}\n{}", g.source, print_func(&prog.arena, f));
            assert!(
                close(v, v0),
                "seed {seed}, {stage}: value {v} vs {v0}\n{}",
                show()
            );
            for (gi, fi) in grads.iter().zip(&g0) {
                assert_eq!(gi.len(), fi.len(), "seed {seed}, {stage}\n{}", show());
                for (x, y) in gi.iter().zip(fi) {
                    assert!(
                        close(*x, *y),
                        "seed {seed}, {stage}: {gi:?} vs forward {fi:?}\n{}",
                        show()
                    );
                }
            }
        }
        let p = nao(&prog.arena, func.body);
        for (n, m) in [(10, 3), (32, 4)] {
            let sizes = move |v: &str| Some(if v == "m" { m } else { n });
            let bound = Bound::measure(&prog.arena, &func, &opt, &sizes);
            assert!(
                bound.holds(),
                "seed {seed}, sizes {n}: ratio {} above {}\n{}\n{}",
                bound.ratio(),
                bound.factor(),
                g.source,
                print_func(&prog.arena, &opt)
            );
            let w = worst.entry(p).or_insert(0.0);
            *w = w.max(bound.ratio());
        }
        if let Err(why) = Bound::same_growth(&prog.arena, &func, &opt) {
            panic!(
                "seed {seed}: {why}\n{}\n{}",
                g.source,
                print_func(&prog.arena, &opt)
            );
        }
    }
    worst
}

#[test]
fn random_programs_of_the_whole_source_language() {
    let worst = check(&Features::all(), 0..300);
    eprintln!("worst cost ratio per NAO depth: {worst:?}");
}

/// Reads under two conditions (a neighbour's position on each side of a stencil, `if j <
/// len(x) - 1` and `if j >= 1`): the gradient adds each read's adjoint in place where its
/// condition holds, in time linear in the array, not one array of zeros per element summed
/// (quadratic: 3000 times the primal at 4000 elements); the values are the simplified
/// gradient's.
#[test]
fn reads_under_two_conditions_have_a_linear_gradient() {
    let src = "def g(x: [n]real): real =
  sum(map (j. let a = (if j < len(x) - 1 then x[j + 1] * x[j] else 0) in if j >= 1 then a + x[j - 1] * x[j] else a) (iota len(x)))";
    let (mut prog, func) = unfad_test_support::load(src);
    let rev = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0]).unwrap();
    let plain = unfad_opt::simplify_to_fixed_point(&mut prog.arena, &rev);
    let opt = unfad_opt::optimize(&mut prog.arena, &rev).unwrap();
    let text = unfad_syntax::print_func(&prog.arena, &opt);
    assert!(!text.contains("reduce (s, t. map2 + s t)"), "{text}");
    let input = serde_json::json!({"x": [0.5, -1.25, 2.0, 0.75, 3.5]});
    let (args, _) = unfad_interp::args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    let a = unfad_interp::eval_func(&prog.arena, &plain, &args)
        .unwrap()
        .leaves();
    let b = unfad_interp::eval_func(&prog.arena, &opt, &args)
        .unwrap()
        .leaves();
    assert_eq!(a.len(), 6);
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() <= 1e-12 * (1.0 + x.abs()), "{a:?}\n{b:?}");
    }
}

/// Gradients with respect to one parameter only: reverse mode still zips and sums the
/// adjoints of every array a loop reads, and the optimizer drops the components nothing
/// reads (`map_of_summed_component`, `drop_unread_fold_state`, `drop_unread_columns`). The
/// optimized gradient agrees with the unoptimized one (to 1e-10: sums may be reordered).
#[test]
fn gradients_with_respect_to_one_parameter_keep_their_values() {
    for seed in 0..400 {
        let g = generate(seed, &Features::all());
        let (mut prog, func) = load(&g.source);
        let types = func.param_types(&prog.arena);
        let Some(first) = (0..types.len()).find(|&i| types[i].has_reals()) else {
            continue;
        };
        let (args, _) = args_from_json::<f64>(&prog.arena, &func, &g.input).unwrap();
        let rev = unfad_ad::reverse(&mut prog.arena, &func, &[first]).unwrap();
        let opt = unfad_opt::optimize(&mut prog.arena, &rev)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        let (v0, g0) = eval_reverse(&prog.arena, &rev, &args);
        let (v1, g1) = eval_reverse(&prog.arena, &opt, &args);
        let shown = || {
            format!(
                "seed {seed}\n{}\n{}",
                g.source,
                print_func(&prog.arena, &opt)
            )
        };
        assert!(close(v0, v1), "value {v0} against {v1}: {}", shown());
        for (a, b) in g0.iter().flatten().zip(g1.iter().flatten()) {
            assert!(close(*a, *b), "gradient {a} against {b}: {}", shown());
        }
    }
}
