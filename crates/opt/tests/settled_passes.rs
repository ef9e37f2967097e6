//! A simplifier pass that reports it left no work (`Simplifier::may_rewrite_more` is
//! false) leaves a term the next pass rewrites nothing in: the optimizer then skips that
//! pass. Checked on the passes over random programs' gradients, as the optimizer runs them
//! (the administrative pass first), and on a long straight-line program, whose first full
//! pass is the one that reports it.

use unfad_opt::Simplifier;
use unfad_syntax::{print_func, Arena, Func};
use unfad_test_support::load;
use unfad_testgen::{generate, Features};

/// One full pass over `f`: its result, its rewrites, and whether it may have left work.
fn pass(arena: &mut Arena, f: &Func) -> (Func, usize, bool) {
    let mut s = Simplifier::new(arena, f);
    let body = s.run(f.body);
    let (rewrites, more) = (s.rewrites, s.may_rewrite_more());
    (Func { body, ..f.clone() }, rewrites, more)
}

/// The passes over the gradient of `source` until one reports no work left (at most
/// six); then the one after it, which must rewrite nothing. Whether a pass reported it.
fn check(source: &str, what: &str) -> bool {
    let (mut prog, func) = load(source);
    let all: Vec<usize> = (0..func.params.len()).collect();
    let rev = unfad_ad::reverse_weakened(&mut prog.arena, &func, &all).unwrap();
    let body = Simplifier::new(&mut prog.arena, &rev)
        .administrative()
        .run(rev.body);
    let mut f = Func { body, ..rev };
    for _ in 0..6 {
        let (next, _, more) = pass(&mut prog.arena, &f);
        if !more {
            let (again, rewrites, _) = pass(&mut prog.arena, &next);
            assert_eq!(
                rewrites,
                0,
                "{what}: a pass that left no work was followed by one rewriting\n{}\nto\n{}",
                print_func(&prog.arena, &next),
                print_func(&prog.arena, &again)
            );
            return true;
        }
        f = next;
    }
    false
}

#[test]
fn a_pass_that_left_no_work_leaves_nothing_to_rewrite() {
    let mut reported = 0;
    for seed in 0..1500 {
        let g = generate(seed, &Features::all());
        reported += usize::from(check(&g.source, &format!("seed {seed}")));
    }
    // The test means something only if passes often report it.
    assert!(
        reported >= 300,
        "only {reported} of 1500 gradients had a pass that left no work"
    );
}

#[test]
fn the_first_pass_over_a_long_chain_leaves_no_work() {
    let mut src = String::from("def f(x0: real): real =\n");
    for i in 1..=200 {
        src.push_str(&format!(
            "  let x{i} = sin(x{}) * 0.5 + x{} in\n",
            i - 1,
            i - 1
        ));
    }
    src.push_str("  x200\n");
    let (mut prog, func) = load(&src);
    let rev = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0]).unwrap();
    let body = Simplifier::new(&mut prog.arena, &rev)
        .administrative()
        .run(rev.body);
    let f = Func { body, ..rev };
    let (next, rewrites, more) = pass(&mut prog.arena, &f);
    assert!(rewrites > 0 && !more, "{rewrites} rewrites, more: {more}");
    assert_eq!(pass(&mut prog.arena, &next).1, 0);
}
