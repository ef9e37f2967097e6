//! Precomputed arrays read again (`unfad_opt::reuse`): a `let`-bound map whose element's
//! components an earlier map of the same chain holds reads them from it. It never changes
//! a value, not even in the last bit (each component is read where the same operations
//! computed it).

mod common;

use common::value;

use expect_test::{expect, Expect};
use unfad_interp::{args_from_json, Value};
use unfad_opt::hoist::hoist_invariants;
use unfad_opt::reuse::{read_columns_in_place, reuse_precomputed};
use unfad_syntax::{print_func, Func, Program};
use unfad_test_support::{close_json, load};
use unfad_testgen::{generate, Features};

/// `source`'s gradient, optimized up to hoisting, hoisted, then reused: if the reuse
/// changed the term, the values before and after are compared exactly on `input` and the
/// types checked, and the program, its reverse-mode term and the arguments are returned.
fn reused_gradient(
    source: &str,
    input: &serde_json::Value,
) -> Option<(Program, Func, Vec<Value<f64>>)> {
    let (mut prog, func) = load(source);
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, input).unwrap();
    let all: Vec<usize> = (0..func.params.len()).collect();
    let rev = unfad_ad::reverse(&mut prog.arena, &func, &all).unwrap();
    let term = unfad_opt::optimize_up_to_hoisting(&mut prog.arena, &rev);
    let hoisted = hoist_invariants(&mut prog.arena, &term);
    let reused = reuse_precomputed(&mut prog.arena, &hoisted);
    if reused.body == hoisted.body {
        return None;
    }
    let (before, after) = (
        value(&prog.arena, &hoisted, &args),
        value(&prog.arena, &reused, &args),
    );
    assert_eq!(
        before,
        after,
        "{source}\n{}\nreused:\n{}",
        print_func(&prog.arena, &hoisted),
        print_func(&prog.arena, &reused)
    );
    unfad_opt::check_types(&mut prog.arena, &reused)
        .unwrap_or_else(|e| panic!("{e}\n{}", print_func(&prog.arena, &reused)));
    Some((prog, rev, args))
}

#[test]
fn reusing_in_random_gradients_changes_no_value() {
    // The generator's programs rarely hoist the same term for two loops; the test runs
    // them for the values, and the mixtures below for the rewrite.
    for seed in 0..300 {
        let g = generate(seed, &Features::all());
        reused_gradient(&g.source, &g.input);
    }
}

/// A mixture-like program drawn from `seed`: per point, a reduction over components of a
/// term reading the point and, through functions that do not depend on it, the
/// component's parameters. Reverse mode makes two loops over the components (the
/// value's and the adjoint's) that hoisting precomputes the invariant terms for.
fn mixture(seed: u64) -> (String, serde_json::Value) {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut pick = |n: usize| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) as usize) % n
    };
    let unary = [
        "exp(#)",
        "sin(#)",
        "# * # + 1",
        "log(# * # + 1)",
        "tanh(#)",
        "exp(-#) * #",
    ];
    let g = unary[pick(unary.len())].replace('#', "qd");
    let extra = [
        "",
        " + reduce + 0 (map (t. t) qk)",
        " + reduce + 0 (map (t. exp(t)) qk)",
        " + reduce + 0 (map (t. exp(t)) mu)",
    ][pick(4)];
    let (first, second, zip) = if pick(2) == 0 {
        ("mu", "qk", "map2 (mu, qk. (mu, qk)) M Q")
    } else {
        ("qk", "mu", "map2 (qk, mu. (qk, mu)) Q M")
    };
    let combine = [
        "reduce + 0 (map (t. t * t) v)",
        "let mx = reduce max (-1e300) v in mx + log(reduce + 0 (map (t. exp(t - mx)) v))",
        "reduce max (-1e300) v",
    ][pick(3)];
    let src = format!(
        "def f(a: [k]real, M: [k][m]real, Q: [k][m]real, X: [n][m]real) =
           let comps = {zip} in
           reduce + 0 (map (x.
             let v = map2 (ak, c.
               let {first} = fst c in
               let {second} = snd c in
               let z = map2 (xd, md. xd - md) x mu in
               let s = map2 (qd, zd. {g} * zd) qk z in
               ak{extra} - 0.5 * reduce + 0 (map (t. t * t) s)) a comps in
             {combine}) X)"
    );
    let k = 2 + pick(3);
    let m = 1 + pick(3);
    let n = 1 + pick(3);
    let mut noise =
        |len: usize| -> Vec<f64> { (0..len).map(|_| pick(2001) as f64 / 1000.0 - 1.0).collect() };
    let matrix = |rows: usize, v: Vec<f64>| -> Vec<Vec<f64>> {
        v.chunks(v.len() / rows.max(1))
            .map(|c| c.to_vec())
            .collect()
    };
    let input = serde_json::json!({
        "a": noise(k),
        "M": matrix(k, noise(k * m)),
        "Q": matrix(k, noise(k * m)),
        "X": matrix(n, noise(n * m)),
    });
    (src, input)
}

#[test]
fn reusing_in_the_gradients_of_random_mixtures_changes_no_value() {
    let mut changed = 0;
    let seeds = 0..60u64;
    for seed in seeds.clone() {
        let (src, input) = mixture(seed);
        let Some((mut prog, rev, args)) = reused_gradient(&src, &input) else {
            continue;
        };
        changed += 1;
        // The whole optimizer, which reuses after hoisting, keeps the gradient's value.
        let optimized = unfad_opt::optimize(&mut prog.arena, &rev).unwrap();
        let plain = value(&prog.arena, &rev, &args);
        let fast = value(&prog.arena, &optimized, &args);
        let parse = |s: &str| -> serde_json::Value { serde_json::from_str(s).unwrap() };
        assert!(
            close_json(&parse(&plain), &parse(&fast), 1e-9),
            "seed {seed}: {src}\n{plain}\n{fast}"
        );
    }
    // The rewrite must happen for the test to mean something: it does where the value's
    // loop and the adjoint's stay apart (a log-sum-exp needs its maximum first); a sum
    // of squares joins them, and hoisting itself then precomputes each term once.
    assert!(
        changed * 6 >= seeds.count(),
        "the reuse changed only {changed} gradients of mixtures"
    );
}

fn check_reused(src: &str, expect: Expect) {
    expect.assert_eq(&common::after_pass(src, reuse_precomputed));
}

#[test]
fn a_map_repeating_an_earlier_maps_elements_reads_them() {
    // What hoisting makes of a mixture's gradient: `exp(q)` once per loop reading it.
    check_reused(
        "def f(alpha: [k]real, means: [k][m]real, q: [k][m]real) =
           let h = map2 (a, c. (c, map (qd. exp(qd)) (snd c), a + reduce + 0 (snd c)))
                     alpha (map2 (mu, qk. (mu, qk)) means q) in
           let h1 = map2 (mu1, b. ((mu1, b), map (e. exp(e)) b)) means q in
           (h, h1)",
        expect![[r#"
            def f(alpha: [k]real, means: [k][m]real, q: [k][m]real): ([k](([m]real, [m]real), [m]real, real), [k](([m]real, [m]real), [m]real)) =
              let h = map2 (a, c. (c, map (qd. exp(qd)) (snd c), a + reduce + 0 (snd c))) alpha (map2 (mu, qk. (mu, qk)) means q) in
              let h1 = map (pe. (fst pe, snd pe)) h in
              (h, h1)
        "#]],
    );
}

#[test]
fn maps_that_compute_something_else_or_over_other_arrays_stay() {
    // The later map's `exp` is of the other array.
    check_reused(
        "def f(means: [k][m]real, q: [k][m]real) =
           let h = map2 (mu, qk. (mu, map (qd. exp(qd)) qk)) means q in
           let h1 = map2 (mu1, b. (b, map (e. exp(e)) mu1)) means q in
           (h, h1)",
        expect!["unchanged"],
    );
    // The later map reads an array the earlier one does not zip.
    check_reused(
        "def f(means: [k][m]real, q: [k][m]real, r: [k]real) =
           let h = map (qk. map (qd. exp(qd)) qk) q in
           let h1 = map2 (qk, c. (map (e. exp(e)) qk, c)) q r in
           (h, h1)",
        expect!["unchanged"],
    );
    // A zip does no work: it stays a view rather than a read of a stored array.
    check_reused(
        "def f(means: [k][m]real, q: [k][m]real) =
           let h = map2 (mu, qk. ((mu, qk), map (qd. exp(qd)) qk)) means q in
           let h1 = map2 (mu1, b. (mu1, b)) means q in
           (h, h1)",
        expect!["unchanged"],
    );
}

#[test]
fn maps_over_the_same_index_range_are_made_once() {
    // What `one_pass` brings into one chain: the reciprocal hoisted once for each loop
    // that read it, each a map over `iota len(s)`.
    check_reused(
        "def f(s: [m]real) =
           let h = map (j. (1 / (2 * s[j]), log(s[j]))) (iota len(s)) in
           let h1 = map (i. 1 / (2 * s[i])) (iota len(s)) in
           let h2 = map (i. 1 / (2 * s[i])) (iota (len(s) - 1)) in
           (h, h1, h2)",
        expect![[r#"
            def f(s: [m]real): ([m](real, real), [m]real, [m-1]real) =
              let h = map (j. (1 / (2 * s[j]), log(s[j]))) (iota len(s)) in
              let h1 = map (pe. fst pe) h in
              let h2 = map (i. 1 / (2 * s[i])) (iota (len(s) - 1)) in
              (h, h1, h2)
        "#]],
    );
}

fn check_columns(src: &str, expect: Expect) {
    expect.assert_eq(&common::after_pass(src, read_columns_in_place));
}

#[test]
fn loops_reading_a_column_read_the_stored_array() {
    // `h1` holds `h`'s first column: the loops read `h` itself, and `h1` goes.
    check_columns(
        "def f(s: [m]real, x: [m]real) =
           let h = map (j. (1 / (2 * s[j]), log(s[j]))) (iota len(s)) in
           let h1 = map (pe. fst pe) h in
           (map2 (a, b. a * b) x h1, map (c. c + 1) h1, h1[0])",
        expect![[r#"
            def f(s: [m]real, x: [m]real): ([m]real, [m]real, real) =
              let h = map (j. (1 / (2 * s[j]), log(s[j]))) (iota len(s)) in
              (map2 (a, pe. a * fst pe) x h, map (pe_1. fst pe_1 + 1) h, fst h[0])
        "#]],
    );
    // Read whole elsewhere (here as the result), the column stays for that reader.
    check_columns(
        "def f(s: [m]real, x: [m]real) =
           let h = map (j. (1 / (2 * s[j]), log(s[j]))) (iota len(s)) in
           let h1 = map (pe. fst pe) h in
           (map2 (a, b. a * b) x h1, h1)",
        expect![[r#"
            def f(s: [m]real, x: [m]real): ([m]real, [m]real) =
              let h = map (j. (1 / (2 * s[j]), log(s[j]))) (iota len(s)) in
              let h1 = map (pe. fst pe) h in
              (map2 (a, pe_1. a * fst pe_1) x h, h1)
        "#]],
    );
}
