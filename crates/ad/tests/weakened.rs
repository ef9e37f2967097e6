//! The two routes of the direct macro checked against each other on random programs of
//! the whole Source language (`unfad-testgen`, `Features::all()`): the paper's
//! (`unfad_ad::reverse`, continuations over the whole context Γ) and the weakened one that
//! `compile_grad` takes (`unfad_ad::reverse_weakened`, continuations over the variables
//! still live). Both terms satisfy the macro's invariants; after optimization they give
//! the same value and gradients, bit for bit (before too). And the weakened term is linear in the
//! length of a straight-line program, where the paper's is quadratic.

use unfad_ad::checks::{check_linear, check_unique_binders};
use unfad_interp::{args_from_json, eval_func, Value};
use unfad_syntax::{print_func, Arena, Func};
use unfad_test_support::load;
use unfad_testgen::{generate, Features};

/// The value and the gradients' leaves, as bits (a NaN is any NaN).
fn outputs(arena: &Arena, f: &Func, args: &[Value<f64>]) -> Result<Vec<u64>, String> {
    let out = eval_func(arena, f, args).map_err(|e| e.to_string())?;
    Ok(out
        .leaves()
        .into_iter()
        .map(|x| {
            if x.is_nan() {
                f64::NAN.to_bits()
            } else {
                x.to_bits()
            }
        })
        .collect())
}

#[test]
fn both_routes_give_the_same_gradients_on_random_programs() {
    let (mut same_terms, mut count) = (0, 0);
    for seed in 0..300 {
        let g = generate(seed, &Features::all());
        let (mut prog, func) = load(&g.source);
        let (args, _) = args_from_json::<f64>(&prog.arena, &func, &g.input).unwrap();
        let all: Vec<usize> = (0..func.params.len()).collect();
        let paper = unfad_ad::reverse(&mut prog.arena, &func, &all)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        let weak = unfad_ad::reverse_weakened(&mut prog.arena, &func, &all)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        let show = |a: &Arena, f: &Func| format!("{}\n{}", g.source, print_func(a, f));
        check_linear(&prog.arena, weak.body)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", show(&prog.arena, &weak)));
        check_unique_binders(&prog.arena, weak.body)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", show(&prog.arena, &weak)));
        let opt_paper = unfad_opt::optimize(&mut prog.arena, &paper)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        let opt_weak = unfad_opt::optimize(&mut prog.arena, &weak)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        let a = &prog.arena;
        let expected = outputs(a, &opt_paper, &args);
        let got = outputs(a, &opt_weak, &args);
        assert_eq!(
            got,
            expected,
            "seed {seed}: the weakened route differs\npaper:\n{}\nweakened:\n{}",
            show(a, &opt_paper),
            print_func(a, &opt_weak)
        );
        // Before optimization too, where both evaluate: the weakened route starts an
        // adjoint at the paper's `0` where the variable's last use is met, and adds the
        // same contributions in the same order.
        if let (Ok(x), Ok(y)) = (outputs(a, &paper, &args), outputs(a, &weak, &args)) {
            assert_eq!(y, x, "seed {seed}: unoptimized\n{}", show(a, &weak));
        }
        count += 1;
        same_terms += usize::from(print_func(a, &opt_paper) == print_func(a, &opt_weak));
    }
    eprintln!("{same_terms} of {count} optimized terms are the same text");
}

/// The straight-line program of `n` statements.
fn chain(n: usize) -> String {
    let mut s = String::from("def f(x0: real, w: real): real =\n");
    for i in 1..=n {
        s.push_str(&format!(
            "  let x{i} = sin(x{}) * w + x{} in\n",
            i - 1,
            i - 1
        ));
    }
    s.push_str(&format!("  x{n}\n"));
    s
}

/// The number of nodes the macro adds to the arena for the chain of `n` statements.
fn macro_nodes(n: usize, weakened: bool) -> usize {
    let (mut prog, func) = load(&chain(n));
    let before = prog.arena.node_count();
    let rev = if weakened {
        unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1])
    } else {
        unfad_ad::reverse(&mut prog.arena, &func, &[0, 1])
    };
    rev.unwrap();
    prog.arena.node_count() - before
}

#[test]
fn the_weakened_term_is_linear_in_a_straight_line_program() {
    let (small, large) = (macro_nodes(50, true), macro_nodes(200, true));
    let ratio = large as f64 / small as f64;
    assert!(
        ratio < 4.2,
        "4 times the statements, {ratio:.2} times the nodes"
    );
    let (small, large) = (macro_nodes(50, false), macro_nodes(200, false));
    let ratio = large as f64 / small as f64;
    assert!(ratio > 10.0, "the paper's term is quadratic: {ratio:.2}");
}
