//! Sibling sums of rows joined (`unfad_opt::row_sums`): sums of the rows of loops over
//! the same arrays become one sum of tuples of rows. Each component is summed in the
//! order it was, so no value changes, not even in the last bit.

mod common;

use common::{before_and_after, value};

use expect_test::{expect, Expect};
use serde_json::json;
use unfad_interp::args_from_json;
use unfad_opt::row_sums::join_sibling_row_sums;
use unfad_syntax::{print_func, Arena, Func};
use unfad_test_support::load;
use unfad_testgen::{generate, Features, Rng};

/// `after`'s value equals `before`'s exactly on `input` (arguments read for `source`'s
/// parameters), and `after` type-checks.
fn same_values(
    arena: &mut Arena,
    source: &Func,
    before: &Func,
    after: &Func,
    input: &serde_json::Value,
) {
    let (args, _) = args_from_json::<f64>(arena, source, input).unwrap();
    assert_eq!(
        value(arena, before, &args),
        value(arena, after, &args),
        "joined:\n{}",
        print_func(arena, after)
    );
    unfad_opt::check_types(arena, after)
        .unwrap_or_else(|e| panic!("{e}\n{}", print_func(arena, after)));
}

#[test]
fn joining_in_random_gradients_changes_no_value() {
    for seed in 0..300 {
        let g = generate(seed, &Features::all());
        let (mut prog, func, term, after) = before_and_after(&g.source, join_sibling_row_sums);
        if after.body != term.body {
            same_values(&mut prog.arena, &func, &term, &after, &g.input);
        }
    }
}

/// A program of two to four sums of the rows of `X`, each from zeros, some reading the
/// result of an earlier one (which must not join it), combined into a real.
fn statistics(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let rows = [
        "map2 (x, u. (x - u) * (x - u)) row v",
        "map2 (x, u. x * u + 1) row v",
        "map (x. x) row",
        "map (x. exp(0.1 * x)) row",
        "let d = map2 (x, u. x - u) row v in map2 * d d",
        "map2 (x, u. -(x - u)) row v",
    ];
    let k = 2 + rng.below(3);
    let mut lets = String::new();
    for i in 0..k {
        let reads_earlier = i > 0 && rng.chance(0.3);
        let row = if reads_earlier {
            format!("map2 (x, u. x * u) row S{}", rng.below(i))
        } else {
            rng.pick(&rows).to_string()
        };
        lets.push_str(&format!(
            "let S{i} = reduce (s, t. map2 + s t) (zeros_like(v)) (map (row. {row}) X) in\n"
        ));
    }
    let total: Vec<String> = (0..k).map(|i| format!("sum(S{i})")).collect();
    format!(
        "def f(X: [n][m]real, v: [m]real): real =\n{lets}{}",
        total.join(" + ")
    )
}

#[test]
fn joining_random_column_statistics_changes_no_value() {
    let mut joined = 0;
    for seed in 0..200 {
        let src = statistics(seed);
        let (mut prog, func) = load(&src);
        let after = join_sibling_row_sums(&mut prog.arena, &func);
        if after.body == func.body {
            continue;
        }
        joined += 1;
        for (n, m) in [(0, 3), (1, 1), (3, 2), (5, 4)] {
            let x: Vec<Vec<f64>> = (0..n)
                .map(|i| {
                    (0..m)
                        .map(|j| 0.3 * i as f64 - 0.2 * j as f64 + 0.1)
                        .collect()
                })
                .collect();
            let v: Vec<f64> = (0..m).map(|j| 0.05 * j as f64 - 0.1).collect();
            let input = json!({ "X": x, "v": v });
            same_values(&mut prog.arena, &func, &func, &after, &input);
        }
    }
    // Two independent sums among the first statements are the common case.
    assert!(joined >= 150, "only {joined} of 200 programs were joined");
}

fn check(src: &str, expect: Expect) {
    expect.assert_eq(&common::after_pass(src, join_sibling_row_sums));
}

#[test]
fn two_sums_over_the_rows_of_one_matrix_are_one() {
    check(
        "def f(X: [n][m]real, mu: [m]real) =
           let A = reduce (s, t. map2 + s t) (zeros_like(mu)) (map (row. map2 (x, u. (x - u) * (x - u)) row mu) X) in
           let B = reduce (s, t. map2 + s t) (zeros_like(mu)) (map (row. map2 (x, u. x - u) row mu) X) in
           map2 * A B",
        expect![[r#"
            def f(X: [n][m]real, mu: [m]real): [m]real =
              let S = reduce (p, q. (map2 + (fst p) (fst q), map2 + (snd p) (snd q))) (zeros_like(mu), zeros_like(mu)) (map (x. (map2 (x_1, u. (x_1 - u) * (x_1 - u)) x mu, map2 - x mu)) X) in
              let A = fst S in
              let B = snd S in
              map2 * A B
        "#]],
    );
}

#[test]
fn sums_over_two_matrices_zipped_are_one() {
    check(
        "def f(X: [n][m]real, Y: [n][m]real) =
           let A = reduce (s, t. map2 + s t) (zeros_like(X[0])) (map2 (r, q. map2 * r q) X Y) in
           let B = reduce (s, t. map2 + s t) (zeros_like(X[0])) (map2 (r, q. map2 - r q) X Y) in
           sum(map2 * A B)",
        expect![[r#"
            def f(X: [n][m]real, Y: [n][m]real): real =
              let S = reduce (p, q. (map2 + (fst p) (fst q), map2 + (snd p) (snd q))) (zeros_like(X[0]), zeros_like(X[0])) (map2 (x, y. (map2 * x y, map2 - x y)) X Y) in
              let A = fst S in
              let B = snd S in
              let A_1 = map2 * A B in
              reduce + 0 A_1
        "#]],
    );
}

#[test]
fn a_sum_reading_another_or_over_other_rows_stays_apart() {
    // The second sum reads the first's result.
    check(
        "def f(X: [n][m]real, mu: [m]real) =
           let A = reduce (s, t. map2 + s t) (zeros_like(mu)) (map (row. map2 - row mu) X) in
           let B = reduce (s, t. map2 + s t) (zeros_like(mu)) (map (row. map2 * row A) X) in
           map2 * A B",
        expect!["unchanged"],
    );
    // Over different matrices.
    check(
        "def f(X: [n][m]real, Y: [n][m]real, mu: [m]real) =
           let A = reduce (s, t. map2 + s t) (zeros_like(mu)) (map (row. map2 - row mu) X) in
           let B = reduce (s, t. map2 + s t) (zeros_like(mu)) (map (row. map2 - row mu) Y) in
           map2 * A B",
        expect!["unchanged"],
    );
    // Not from zeros.
    check(
        "def f(X: [n][m]real, mu: [m]real) =
           let A = reduce (s, t. map2 + s t) mu (map (row. map2 - row mu) X) in
           let B = reduce (s, t. map2 + s t) mu (map (row. map2 * row mu) X) in
           map2 * A B",
        expect!["unchanged"],
    );
}

#[test]
fn a_columns_variance_reads_the_matrix_three_times() {
    // Its gradient: the mean's pass, the variance's beside the mean's adjoint through the
    // deviations (its scale taken out by `sum_of_scaled_rows`), and the gradient's.
    let src = "def f(X: [n][m]real): real =
      let mean = map (t. t / real(len(X))) (reduce (a, b. map2 + a b) (map (t. 0) X[0]) X) in
      let var = map (t. t / real(len(X))) (reduce (a, b. map2 + a b) (map (t. 0) X[0])
        (map (row. map2 (x, mu. (x - mu) * (x - mu)) row mean) X)) in
      sum(map (v. log(v + 1)) var)";
    let (mut prog, func) = load(src);
    let rev = unfad_ad::reverse(&mut prog.arena, &func, &[0]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &rev).unwrap();
    expect![[r#"
        def f(X: [n][m]real): (real, [n][m]real) =
          let v5 = X[0] in
          let h = 1 / real(len(X)) in
          let mean = map (t. t * h) (reduce (a, b. map2 + a b) zeros_like(v5) X) in
          let S =
            reduce (p, q. (map2 + (fst p) (fst q), map2 + (snd p) (snd q))) (zeros_like(v5), zeros_like(mean)) (map (x.
                 (
                   map2 (x_1, mu. (x_1 - mu) * (x_1 - mu)) x mean,
                   map2 (x_2, mu_1.
                     let z = -(x_2 - mu_1) in
                     z + z) x mean
                 )) X)
          in
          let R = fst S in
          let c = map (t_1. h / (t_1 * h + 1)) R in
          let c_1 = map2 (a_1, b_1. a_1 * b_1 * h) (snd S) c in
          (
            reduce + 0 (map (t_2. log(t_2 * h + 1)) R),
            map (a_2.
              map2 + (map2 * (map2 (x_3, mu_2.
                      let v41 = x_3 - mu_2 in
                      v41 + v41) a_2 mean) c) c_1) X
          )
    "#]]
    .assert_eq(&print_func(&prog.arena, &opt));
}
