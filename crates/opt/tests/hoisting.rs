//! Hoisting (`unfad_opt::hoist`) moves loop-invariant work before its loop and precomputes
//! terms of invariant arrays' elements; it never changes a value, not even in the last
//! bit (it computes the same operations on the same operands, fewer times), and it leaves
//! alone the programs where nothing is invariant.

mod common;

use common::value;

use expect_test::{expect, Expect};
use unfad_interp::args_from_json;
use unfad_opt::hoist::hoist_invariants;
use unfad_syntax::print_func;
use unfad_test_support::load;
use unfad_testgen::{generate, Features};

/// Hoists each seed's program (`gradient`: its reverse derivative, optimized up to
/// hoisting) and compares the values exactly; returns how many
/// of the terms hoisting changed.
fn check(features: &Features, seeds: std::ops::Range<u64>, gradient: bool) -> usize {
    let mut changed = 0;
    for seed in seeds {
        let g = generate(seed, features);
        let (mut prog, func) = load(&g.source);
        let (args, _) = args_from_json::<f64>(&prog.arena, &func, &g.input).unwrap();
        let term = if gradient {
            let all: Vec<usize> = (0..func.params.len()).collect();
            let rev = unfad_ad::reverse(&mut prog.arena, &func, &all).unwrap();
            unfad_opt::optimize_before_hoisting(&mut prog.arena, &rev)
        } else {
            func
        };
        let hoisted = hoist_invariants(&mut prog.arena, &term);
        if hoisted.body == term.body {
            continue;
        }
        changed += 1;
        let free = prog.arena.free_vars(hoisted.body);
        assert!(
            free.iter().all(|v| hoisted.params.contains(v)),
            "seed {seed}: a variable moved out of its scope\n{}",
            print_func(&prog.arena, &hoisted)
        );
        let (before, after) = (
            value(&prog.arena, &term, &args),
            value(&prog.arena, &hoisted, &args),
        );
        assert_eq!(
            before,
            after,
            "seed {seed}\n{}\nhoisted:\n{}",
            print_func(&prog.arena, &term),
            print_func(&prog.arena, &hoisted)
        );
        unfad_opt::check_types(&mut prog.arena, &hoisted)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", print_func(&prog.arena, &hoisted)));
    }
    changed
}

#[test]
fn hoisting_random_programs_changes_no_value() {
    let changed = check(&Features::all(), 0..600, false);
    // The test means something only if hoisting happens often.
    assert!(
        changed >= 60,
        "hoisting changed only {changed} of 600 programs"
    );
}

#[test]
fn hoisting_random_gradients_changes_no_value() {
    let changed = check(&Features::all(), 0..400, true);
    assert!(
        changed >= 30,
        "hoisting changed only {changed} of 400 gradients"
    );
}

fn check_hoisted(src: &str, expect: Expect) {
    expect.assert_eq(&common::after_pass(src, hoist_invariants));
}

#[test]
fn nothing_moves_where_everything_depends_on_the_loop() {
    check_hoisted(
        "def f(A: [n]real, B: [n]real) = reduce + 0 (map2 (a, b. exp(a) * b) A B)",
        expect!["unchanged"],
    );
    check_hoisted(
        "def f(W: [n][m]real, x: [m]real) =
           reduce + 0 (map (row. tanh(reduce + 0 (map2 * row x))) W)",
        expect!["unchanged"],
    );
    check_hoisted(
        "def f(A: [n]real, h: real) = foldl (s, a. tanh(0.9 * s + a * h)) 0 A",
        expect!["unchanged"],
    );
}

#[test]
fn invariant_work_moves_before_the_outermost_loop_it_does_not_depend_on() {
    check_hoisted(
        "def f(X: [n][m]real, w: [m]real) =
           reduce + 0 (map (x. reduce + 0 (map (xd. xd * reduce + 0 (map (t. exp(t)) w)) x)) X)",
        expect![[r#"
            def f(X: [n][m]real, w: [m]real): real =
              reduce + 0 (let h = reduce + 0 (map (t. exp(t)) w) in
                 map (x. reduce + 0 (map (xd. xd * h) x)) X)
        "#]],
    );
}

#[test]
fn a_conditional_on_an_invariant_condition_moves_with_its_branches_bindings() {
    // The condition (a comparison) moves, and so does the `if` on it, `let`s in its
    // branches and all: a Jacobian's rows share the projection its rotation makes.
    check_hoisted(
        "def f(x: [n]real, a: real) =
           map (v.
             let b = a != 0 in
             let s = if b then (let t = sqrt(a * a) in sin(t) * cos(t) / t) else a in
             s * v) x",
        expect![[r#"
            def f(x: [n]real, a: real): [n]real =
              let b = a != 0 in
              let s =
                if b then
                  let t = sqrt(a * a) in
                  sin(t) * cos(t) / t
                else
                  a
              in
              map (v. s * v) x
        "#]],
    );
    // A branch's binding that reads the loop's element keeps the conditional in the loop.
    check_hoisted(
        "def f(x: [n]real, a: real) =
           map (v. if a != 0 then (let t = sqrt(v * v) in t / a) else v) x",
        expect![[r#"
            def f(x: [n]real, a: real): [n]real =
              let h = a != 0 in
              map (v.
                if h then
                  let t = sqrt(v * v) in
                  t / a
                else
                  v) x
        "#]],
    );
}

#[test]
fn nothing_moves_out_of_a_branch() {
    check_hoisted(
        "def f(X: [n]real, w: [m]real) =
           reduce + 0 (map (x. if x > 0 then x * reduce + 0 (map (t. exp(t)) w) else x) X)",
        expect!["unchanged"],
    );
}

#[test]
fn terms_of_an_invariant_arrays_elements_are_precomputed_then_hoisted() {
    // `exp(qd)` does not depend on the point: computed K*D times, not N*K*D.
    check_hoisted(
        "def f(q: [k][m]real, X: [n][m]real) =
           reduce + 0 (map (x. reduce + 0 (map (qk. reduce + 0 (map2 (qd, xd. exp(qd) * xd) qk x)) q)) X)",
        expect![[r#"
            def f(q: [k][m]real, X: [n][m]real): real =
              reduce + 0 (let h = map (qk. map (qd. exp(qd)) qk) q in
                 map (x. reduce + 0 (map (pe. reduce + 0 (map2 * pe x)) h)) X)
        "#]],
    );
}

#[test]
fn a_term_precomputed_twice_for_one_loop_is_one_component() {
    // Two reads of `exp` of the same row, under other names: one array of exponentials.
    check_hoisted(
        "def f(q: [k][m]real, X: [n][m]real) =
           reduce + 0 (map (x. reduce + 0 (map (qk.
             reduce + 0 (map2 (qd, xd. exp(qd) * xd) qk x)
               * reduce + 0 (map2 (qe, xd. exp(qe) - xd) qk x)) q)) X)",
        expect![[r#"
            def f(q: [k][m]real, X: [n][m]real): real =
              reduce + 0 (let h = map (qk. map (qd. exp(qd)) qk) q in
                 map (x. reduce + 0 (map (pe. reduce + 0 (map2 * pe x) * reduce + 0 (map2 - pe x)) h)) X)
        "#]],
    );
}

/// A term placed before an inner loop keeps what it reads: here it reads the fold's
/// accumulator, so the loop around it stays in the fold (it once moved out of it, the
/// accumulator then read where it is not bound).
#[test]
fn a_binding_placed_before_a_loop_keeps_the_outer_loop_in_place() {
    check_hoisted(
        "def f(y: real, A: [n]real, B: [n]real) =
           foldl (acc, x. reduce + 0 (map (b. reduce + 0 (map (c. if b <= 2 then y else acc) B)) A)) 0 A",
        expect![[r#"
            def f(y: real, A: [n]real, B: [n]real): real =
              foldl (acc, x.
                reduce + 0 (map (b.
                     reduce + 0 (let h = if b <= 2 then y else acc in
                        map (c. h) B)) A)) 0 A
        "#]],
    );
}

/// Work on a row read in a loop (`let c = C[i]`) moves out of the loops the read does
/// not change in, when they run at least once: there the program reads the row anyway,
/// so an index out of bounds still stops it at the same read. Out of a loop that may run
/// zero times the read, which can fail, stays in place.
#[test]
fn work_on_a_read_moves_out_of_loops_that_run() {
    check_hoisted(
        "def f(C: [n][3]real, o: [p]int) =
           reduce + 0 (map (i. reduce + 0 (map (r. let c = C[i] in sin(c[0]) * real(r)) (iota 2))) o)",
        expect![[r#"
            def f(C: [n][3]real, o: [p]int): real =
              reduce + 0 (let h = map (r. real(r)) (iota 2) in
                 map (i.
                   reduce + 0 (let h_1 = sin(C[i][0]) in
                      map (pe. h_1 * pe) h)) o)
        "#]],
    );
    check_hoisted(
        "def f(C: [n][3]real, o: [p]int, k: int) =
           reduce + 0 (map (i. reduce + 0 (map (r. let c = C[i] in sin(c[0]) * real(r)) (iota k))) o)",
        expect![[r#"
            def f(C: [n][3]real, o: [p]int, k: int): real =
              reduce + 0 (let h = map (r. real(r)) (iota k) in
                 map (i.
                   reduce + 0 (map (pe.
                        let c = C[i] in
                        sin(c[0]) * pe) h)) o)
        "#]],
    );
}

/// A per-feature term read by position inside the loop over the rows, over `iota len(x)`
/// of the row `x`: the row's length is the parameter's (`len_of_known_length`), so the
/// inner loop's operand does not change from row to row, and the gradient computes
/// `log(sig[j])` once per feature, before the loop over the rows.
#[test]
fn a_per_feature_term_of_a_row_loop_over_its_positions_moves_out_of_the_rows() {
    let src = "def gnll(X: [n][d]real, mu: [d]real, sig: [d]real): real =
  sum(map (x. sum(map (j. log(sig[j]) + (x[j] - mu[j]) * (x[j] - mu[j]) / (2 * sig[j] * sig[j])) (iota len(x)))) X)";
    let (mut prog, func) = load(src);
    let rev = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1, 2]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &rev).unwrap();
    let text = print_func(&prog.arena, &opt);
    assert_eq!(text.matches("log(").count(), 1, "{text}");
    let line = text.lines().find(|l| l.contains("log(")).unwrap();
    assert!(
        line.starts_with("  let ") && line.contains("(iota len(mu))"),
        "log is not computed per feature before the rows' loop:\n{text}"
    );
    // The loops over the features keep their positions (`map2 (j, pe. ..) (iota ..) h`),
    // not positions stored beside the precomputed terms and read back (`x[fst pe]`).
    assert!(!text.contains("[fst pe"), "{text}");
}

/// `len(x)` of a row of a parameter is the length of a parameter as long as its rows, so a
/// loop over a row's positions is invariant in the loop over rows: what it computes from
/// other parameters and the positions alone is computed once, for every position.
#[test]
fn a_loop_over_a_rows_positions_precomputes_what_reads_only_parameters() {
    check_hoisted(
        "def f(X: [n][d]real, mu: [d]real, sig: [d]real) =
           sum(map (x. sum(map (j. log(sig[j]) + (x[j] - mu[j]) * (x[j] - mu[j])) (iota len(x)))) X)",
        expect![[r#"
            def f(X: [n][d]real, mu: [d]real, sig: [d]real): real =
              let A =
                let h = map (j. log(sig[j])) (iota len(mu)) in
                map (x.
                  let A_1 = map2 (j, pe. pe + (x[j] - mu[j]) * (x[j] - mu[j])) (iota len(mu)) h in
                  reduce + 0 A_1) X
              in
              reduce + 0 A
        "#]],
    );
    // No parameter as long as the rows: nothing to name the length by.
    check_hoisted(
        "def f(X: [n][d]real, s: [n]real) =
           sum(map (x. sum(map (j. log(s[j]) * x[j]) (iota len(x)))) X)",
        expect!["unchanged"],
    );
}

/// For gradients (smooth semantics), a division by a term that moves out of the loop is a
/// product by its reciprocal, which moves instead; a division by a term of the loop, or by
/// a constant, stays. Plain hoisting leaves every division as it is.
#[test]
fn gradients_divide_once_per_invariant_divisor() {
    let src = "def f(X: [n][d]real, s: [d]real, c: real) =
                 sum(map (x. sum(map2 (a, t. a / t + a / (c * c) + t / a + a / 3) x s)) X)";
    expect![[r#"
        def f(X: [n][d]real, s: [d]real, c: real): real =
          let A =
            let h = 1 / (c * c) in
            let h_1 = map (t. (t, 1 / t)) s in
            map (x.
              let A_1 = map2 (a, pe. a * snd pe + a * h + fst pe / a + a / 3) x h_1 in
              reduce + 0 A_1) X
          in
          reduce + 0 A
    "#]]
    .assert_eq(&common::after_pass(
        src,
        unfad_opt::hoist::hoist_invariants_and_reciprocals,
    ));
    check_hoisted(
        src,
        expect![[r#"
        def f(X: [n][d]real, s: [d]real, c: real): real =
          let A =
            let h = c * c in
            map (x.
              let A_1 = map2 (a, t. a / t + a / h + t / a + a / 3) x s in
              reduce + 0 A_1) X
          in
          reduce + 0 A
    "#]],
    );
}

/// A fold over the rows whose body binds its positions (`let js = iota len(mu)`, as reverse
/// mode writes the accumulation of a per-position adjoint) still loops over an array that
/// does not change: the positions stand for themselves, and what the body computes from
/// them alone is precomputed once per position, a `let` of it included (`v`), so that for
/// gradients no division is left in the fold.
#[test]
fn a_fold_binding_its_positions_precomputes_per_position_work() {
    let src = "def f(X: [n][d]real, mu: [d]real, s: [d]real) =
                 sum(foldl (acc, x.
                   let js = iota len(mu) in
                   scatter_add(acc, js, map (j.
                     let v = 2 * s[j] * s[j] in
                     (x[j] - mu[j]) / v / v) js)) zeros_like(mu) X)";
    expect![[r#"
        def f(X: [n][d]real, mu: [d]real, s: [d]real): real =
          let A =
            let h = map (j. 1 / (2 * s[j] * s[j])) (iota len(mu)) in
            foldl (acc, x. scatter_add(acc, iota len(mu), map2 (j, pe. (x[j] - mu[j]) * pe * pe) (iota len(mu)) h)) zeros_like(mu) X
          in
          reduce + 0 A
    "#]].assert_eq(&common::after_pass(
        src,
        unfad_opt::hoist::hoist_invariants_and_reciprocals,
    ));
    check_hoisted(
        src,
        expect![[r#"
            def f(X: [n][d]real, mu: [d]real, s: [d]real): real =
              let A =
                let h = map (j. 2 * s[j] * s[j]) (iota len(mu)) in
                foldl (acc, x. scatter_add(acc, iota len(mu), map2 (j, pe. (x[j] - mu[j]) / pe / pe) (iota len(mu)) h)) zeros_like(mu) X
              in
              reduce + 0 A
        "#]],
    );
}
