//! Reverse mode beyond the paper's core Source (section "Beyond the Source language" and
//! the appendix): `map`, `foldl`, free variables in every function argument, conditionals,
//! partial and non-smooth operators, general arrays, scans, array literals. Each construct
//! has snapshots of its optimized gradient (`unfad_ad::gradient`, then
//! `unfad_opt::optimize`), and every case is checked against forward mode and finite
//! differences, before and after optimization, with the cheap-gradient bound.

use expect_test::{expect, Expect};
use unfad_interp::{args_from_json, eval_func, fd_gradient, forward_gradient, Value};
use unfad_opt::{check_first_order, Bound};
use unfad_syntax::{print_func, Arena, Func};
use unfad_test_support::{close, load};

/// The optimized gradient of the entry point of `src` with respect to every parameter.
fn check(src: &str, expect: Expect) {
    let (mut prog, func) = load(src);
    let all: Vec<usize> = (0..func.params.len()).collect();
    let grad = unfad_ad::gradient(&mut prog.arena, &func, &all).unwrap_or_else(|e| panic!("{e}"));
    let opt = unfad_opt::optimize(&mut prog.arena, &grad).unwrap_or_else(|e| panic!("{e}"));
    expect.assert_eq(&print_func(&prog.arena, &opt));
}

/// Value and flat gradients of a `reverse` result.
fn eval_reverse(arena: &Arena, rev: &Func, args: &[Value<f64>]) -> (f64, Vec<Vec<f64>>) {
    let out = eval_func(arena, rev, args).unwrap_or_else(|e| panic!("{e}"));
    let Value::Tuple(items) = out else {
        panic!("not a tuple: {out}")
    };
    let v = items[0].as_real().expect("the value is a real");
    (v, items[1..].iter().map(|g| g.leaves()).collect())
}

/// Reverse mode (before and after optimization) agrees with forward mode to rounding and
/// with central differences to their accuracy at `input`; the optimized gradient is
/// first-order and within the cheap-gradient bound.
fn agrees(src: &str, input: &str) {
    let (mut prog, func) = load(src);
    let json: serde_json::Value = serde_json::from_str(input).unwrap();
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &json).unwrap();
    let (v0, g0) = forward_gradient(&prog.arena, &func, &args).unwrap();
    let fd = fd_gradient(&prog.arena, &func, &args, 1e-6).unwrap();
    for (g, d) in g0.iter().zip(&fd) {
        for (x, y) in g.iter().zip(d) {
            assert!(close(*x, *y, 1e-5), "forward {g:?} vs differences {d:?}");
        }
    }
    let all: Vec<usize> = (0..func.params.len()).collect();
    let rev = unfad_ad::reverse(&mut prog.arena, &func, &all).unwrap_or_else(|e| panic!("{e}"));
    let opt = unfad_opt::optimize(&mut prog.arena, &rev).unwrap_or_else(|e| panic!("{e}"));
    check_first_order(&prog.arena, &opt).unwrap();
    for (stage, f) in [("reverse", &rev), ("optimized", &opt)] {
        let (v, g) = eval_reverse(&prog.arena, f, &args);
        assert!(close(v, v0, 1e-12), "{stage}: value {v} vs {v0}");
        for (gi, fi) in g.iter().zip(&g0) {
            assert_eq!(gi.len(), fi.len(), "{stage}");
            for (x, y) in gi.iter().zip(fi) {
                assert!(
                    close(*x, *y, 1e-12),
                    "{stage}: {gi:?} vs forward {fi:?}\n{}",
                    print_func(&prog.arena, f)
                );
            }
        }
    }
    check_bound(&prog.arena, &func, &opt);
}

/// `Cost(grad e) <= 4 * 3^p * Cost(e)` ([`Bound::measure`]) with the sizes at 10 (`m` at
/// 3) and at 32 (`m` at 4).
fn check_bound(arena: &Arena, func: &Func, opt: &Func) {
    for (n, m) in [(10, 3), (32, 4)] {
        let sizes = move |v: &str| Some(if v == "m" { m } else { n });
        let bound = Bound::measure(arena, func, opt, &sizes);
        assert!(
            bound.holds(),
            "sizes {n}, {m}: cost ratio {} above {}: {bound:?}\n{}",
            bound.ratio(),
            bound.factor(),
            print_func(arena, opt)
        );
    }
    if let Err(why) = Bound::same_growth(arena, func, opt) {
        panic!("{why}\n{}", print_func(arena, opt));
    }
}

// ---- map ------------------------------------------------------------------------------

#[test]
fn map_of_reals() {
    let src = "def f(A: [n]real) = sum(map (a. sin(a) * a) A)";
    check(
        src,
        expect![[r#"
            def f(A: [n]real): [n]real =
              map (a. sin(a) + cos(a) * a) A
        "#]],
    );
    agrees(src, r#"{"A": [0.5, -1, 2]}"#);
}

#[test]
fn map_with_free_variables() {
    let src = "def f(A: [n]real, w: real, b: real) = sum(map (a. tanh(w * a + b)) A)";
    check(
        src,
        expect![[r#"
            def f(A: [n]real, w: real, b: real): ([n]real, real, real) =
              let G =
                map (a.
                  let z = one_minus_sq(tanh(w * a + b)) in
                  (w * z, a * z, z)) A
              in
              (map (g. fst g) G, reduce + 0 (map (g_1. snd g_1) G), reduce + 0 (map (g_2. g_2.2) G))
        "#]],
    );
    agrees(src, r#"{"A": [0.5, -1, 2], "w": 0.7, "b": -0.2}"#);
}

#[test]
fn map_returning_arrays() {
    let src = "def f(A: [n]real, w: real) = sum(map (r. sum(r)) (map (a. [a * w, a * a]) A))";
    check(
        src,
        expect![[r#"
            def f(A: [n]real, w: real): ([n]real, real) =
              (map (b. b + b + w) A, reduce + 0 A)
        "#]],
    );
    agrees(src, r#"{"A": [0.5, -1, 2], "w": 0.7}"#);
}

// ---- foldl ----------------------------------------------------------------------------

#[test]
fn foldl_of_reals() {
    let src =
        "def f(xs: [n]real, w: real, u: real, h0: real) = foldl (h, x. tanh(w * h + u * x)) h0 xs";
    check(
        src,
        expect![[r#"
            def f(xs: [n]real, w: real, u: real, h0: real): ([n]real, real, real, real) =
              let S = scanl (h, x. tanh(w * h + u * x)) h0 xs in
              let G =
                map2 (q, next.
                  let z = one_minus_sq(next) in
                  (w * z, u * z, fst q * z, snd q * z)) (map2 (h_1, x_1. (h_1, x_1)) (shift1R S) xs) (shift1L S)
              in
              let A3 = scanr * 1 (shift1L (map (g. fst g) G)) in
              (
                map2 (a, g_1. a * snd g_1) A3 G,
                reduce + 0 (map2 (a_1, g_2. a_1 * g_2.2) A3 G),
                reduce + 0 (map2 (a_2, g_3. a_2 * g_3.3) A3 G),
                reduce * 1 (map (g_4. fst g_4) G)
              )
        "#]],
    );
    agrees(
        src,
        r#"{"xs": [0.5, -1, 2], "w": 0.7, "u": -0.3, "h0": 0.1}"#,
    );
    agrees(src, r#"{"xs": [], "w": 0.7, "u": -0.3, "h0": 0.1}"#);
}

#[test]
fn foldl_with_constants_reads_each_next_state_from_the_scan() {
    // The issue's plain recurrence: the states before each step are bound by a `let` (read
    // by two maps), and the partial derivatives read `tanh(0.9 * h + a)` from the scan
    // instead of computing it again.
    let src = "def f(A: [n]real) = foldl (h, a. tanh(0.9 * h + a)) 0 A";
    check(
        src,
        expect![[r#"
            def f(A: [n]real): [n]real =
              let S = scanl (h, a. tanh(0.9 * h + a)) 0 A in
              map2 (a_1, next.
                let b = one_minus_sq(next) in
                a_1 * b) (scanr * 1 (shift1L (map (next_1. 0.9 * one_minus_sq(next_1)) (shift1L S)))) (shift1L S)
        "#]],
    );
    agrees(src, r#"{"A": [0.5, -1, 2, 0.25]}"#);
}

#[test]
fn foldl_with_a_pair_accumulator() {
    let src = "def f(xs: [n]real, w: real) =
      let p = foldl (acc, x. (fst acc * x + w, snd acc + sin(x * fst acc))) (1, w) xs in
      fst p * snd p";
    check(
        src,
        expect![[r#"
            def f(xs: [n]real, w: real): ([n]real, real) =
              let S = scanl (acc, x. (fst acc * x + w, snd acc + sin(x * fst acc))) (1, w) xs in
              let A0 = shift1R S in
              let p = foldl (acc_1, x_1. x_1) (1, w) S in
              let R = map (t. (t, fst p)) (scanr (x_2, t_1. snd x_2 * (cos(snd x_2 * fst (fst x_2)) * fst p) + snd x_2 * t_1) (snd p) (map2 (acc_2, x_3. (acc_2, x_3)) A0 xs)) in
              let R_1 = shift1L R in
              (
                map2 (q, w_1. fst (fst q) * (cos(snd q * fst (fst q)) * snd w_1) + fst (fst q) * fst w_1) (map2 (acc_3, x_4. (acc_3, x_4)) A0 xs) R_1,
                reduce + 0 (map (w_2. fst w_2) R_1) + snd (snd (foldl (p_1, x_5. if fst p_1 > 0 then p_1 else (1, x_5)) (0, (0, 0)) R))
              )
        "#]],
    );
    agrees(src, r#"{"xs": [0.5, -1, 2], "w": 0.7}"#);
    agrees(src, r#"{"xs": [], "w": 0.7}"#);
}

// ---- reduce ---------------------------------------------------------------------------

#[test]
fn reduce_with_a_free_variable() {
    let src = "def f(A: [n]real, w: real) = reduce (a, b. a + b * w) 0 A";
    check(
        src,
        expect![[r#"
        def f(A: [n]real, w: real): ([n]real, real) =
          (map (b. w) A, reduce + 0 A)
    "#]],
    );
    agrees(src, r#"{"A": [0.5, -1, 2], "w": 0.7}"#);
}

#[test]
fn reduce_with_a_unit_that_depends_on_the_input() {
    let src = "def f(A: [n]real, u: real) = reduce * (u * u) A";
    check(
        src,
        expect![[r#"
        def f(A: [n]real, u: real): ([n]real, real) =
          let dv3 = u * reduce * 1 A in
          (map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * (u * u) A)), dv3 + dv3)
    "#]],
    );
    agrees(src, r#"{"A": [0.5, -1, 2], "u": 0.7}"#);
}

// ---- conditionals ---------------------------------------------------------------------

#[test]
fn relu_with_if() {
    let src = "def f(x: real) = if x > 0 then x else 0";
    check(
        src,
        expect![[r#"
        def f(x: real): real =
          if x > 0 then 1 else 0
    "#]],
    );
    agrees(src, r#"{"x": 0.5}"#);
    agrees(src, r#"{"x": -0.5}"#);
}

#[test]
fn conditional_with_let_bound_condition() {
    let src = "def f(x: real, y: real) = let b = x > y && y > 0 in if b then x * y else if !b || x < 1 then sin(y) else x";
    check(
        src,
        expect![[r#"
            def f(x: real, y: real): (real, real) =
              let b = x > y && y > 0 in
              if b then
                (y, x)
              else
                let b_1 = !b || x < 1 in
                ((if b_1 then 0 else 1), (if b_1 then cos(y) else 0))
        "#]],
    );
    agrees(src, r#"{"x": 0.5, "y": 0.25}"#);
    agrees(src, r#"{"x": -0.5, "y": 2}"#);
}

#[test]
fn conditional_inside_map() {
    let src = "def f(A: [n]real, w: real) = sum(map (a. if a > 0 then w * a else 0.1 * a) A)";
    check(
        src,
        expect![[r#"
            def f(A: [n]real, w: real): ([n]real, real) =
              (map (a. if a > 0 then w else 0.1) A, reduce + 0 (map (a_1. if a_1 > 0 then a_1 else 0) A))
        "#]],
    );
    agrees(src, r#"{"A": [0.5, -1, 2], "w": 0.7}"#);
}

#[test]
fn max_min_abs() {
    let src = "def f(x: real, y: real) = max(0, x) + min(x, y) * abs(y)";
    check(
        src,
        expect![[r#"
            def f(x: real, y: real): (real, real) =
              let v9 = abs(y) in
              (
                (if x <= y then v9 else 0) + (if 0 >= x then 0 else 1),
                sign0(y) * min(x, y) + (if x <= y then 0 else v9)
              )
        "#]],
    );
    agrees(src, r#"{"x": 0.5, "y": -0.25}"#);
}

// ---- general arrays -------------------------------------------------------------------

#[test]
fn matrix_vector_product() {
    let src = "def f(M: [n][m]real, v: [m]real) = sum(map (row. dot(row, v)) M)";
    check(
        src,
        expect![[r#"
            def f(M: [n][m]real, v: [m]real): ([n][m]real, [m]real) =
              (map (s. v) M, reduce (s_1, t. map2 + s_1 t) zeros_like(v) M)
        "#]],
    );
    agrees(src, r#"{"M": [[1, 2], [3, 4], [5, 6]], "v": [0.5, -1]}"#);
}

#[test]
fn arrays_of_pairs() {
    let src = "def f(P: [n](real, real)) = sum(map (q. fst q * snd q) P)";
    check(
        src,
        expect![[r#"
            def f(P: [n](real, real)): [n](real, real) =
              map (q. (snd q, fst q)) P
        "#]],
    );
    agrees(src, r#"{"P": [[1, 2], [3, 4]]}"#);
}

#[test]
fn map2_returning_pairs() {
    let src = "def f(A: [n]real, B: [n]real) = sum(map (q. fst q * snd q) (map2 (a, b. (a + b, a * b)) A B))";
    check(
        src,
        expect![[r#"
            def f(A: [n]real, B: [n]real): ([n]real, [n]real) =
              let v3_joint =
                map2 (e, e_1.
                  let v3_i0 = e + e_1 in
                  let v3_i1 = e * e_1 in
                  (e_1 * v3_i0 + v3_i1, e * v3_i0 + v3_i1)) A B
              in
              (map (g. fst g) v3_joint, map (g_1. snd g_1) v3_joint)
        "#]],
    );
    agrees(src, r#"{"A": [1, 2, 3], "B": [0.5, -1, 2]}"#);
}

// ---- scans ----------------------------------------------------------------------------

#[test]
fn scanl_in_source() {
    let src = "def f(A: [n]real, w: real) = sum(scanl (acc, x. acc * w + x) 1 A)";
    check(
        src,
        expect![[r#"
            def f(A: [n]real, w: real): ([n]real, real) =
              let S0 = shift1R (scanl (acc, x. acc * w + x) 1 A) in
              let R = shift1L (scanr (q, t. q.2 + w * t) 1 (map2 (acc_1, x_1. (acc_1, x_1, 1)) S0 A)) in
              (R, reduce + 0 (map2 (q_1, w_1. fst q_1 * w_1) (map2 (acc_2, x_2. (acc_2, x_2, 1)) S0 A) R))
        "#]],
    );
    agrees(src, r#"{"A": [0.5, -1, 2], "w": 0.7}"#);
}

#[test]
fn scanr_in_source() {
    let src = "def f(A: [n]real, w: real) = sum(scanr (x, acc. acc * w + sin(x)) w A)";
    check(
        src,
        expect![[r#"
            def f(A: [n]real, w: real): ([n]real, real) =
              let R1 = shift1L (scanr (x, acc. acc * w + sin(x)) w A) in
              let V = scanl (t, q. w * (t + q.2)) 0 (map2 (x_1, acc_1. (x_1, acc_1, 1)) A R1) in
              let R = shift1R V in
              (
                map2 (q_1, w_1. cos(fst q_1) * (w_1 + 1)) (map2 (x_2, acc_2. (x_2, acc_2, 1)) A R1) R,
                reduce + 0 (map2 (q_2, w_2. snd q_2 * (w_2 + 1)) (map2 (x_3, acc_3. (x_3, acc_3, 1)) A R1) R) + (1 + foldl (acc_4, x_4. x_4) 0 V)
              )
        "#]],
    );
    agrees(src, r#"{"A": [0.5, -1, 2], "w": 0.7}"#);
}

// ---- literals -------------------------------------------------------------------------

#[test]
fn array_literal() {
    let src = "def f(x: real, y: real) = prod([x, y * y, 2])";
    check(
        src,
        expect![[r#"
            def f(x: real, y: real): (real, real) =
              let dv5 = y * (2 * x) in
              (y * y * 2, dv5 + dv5)
        "#]],
    );
    agrees(src, r#"{"x": 0.5, "y": -3}"#);
}

// ---- the bundled examples -------------------------------------------------------------

/// An example program and its input, from `examples/`.
fn example(name: &str) -> (String, String) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let read = |ext: &str| std::fs::read_to_string(dir.join(format!("{name}.{ext}"))).unwrap();
    (read("ad"), read("json"))
}

#[test]
fn rnn_example() {
    let (src, input) = example("rnn");
    agrees(&src, &input);
}

#[test]
fn mlp_example() {
    let (src, input) = example("mlp");
    agrees(&src, &input);
}

#[test]
fn gmm_diag_example() {
    let (src, input) = example("gmm_diag");
    agrees(&src, &input);
}

#[test]
fn softmax_ce_example() {
    let (src, input) = example("softmax_ce");
    agrees(&src, &input);
}

#[test]
fn gmm_example() {
    let (src, input) = example("gmm");
    agrees(&src, &input);
}

// ---- more cases per construct (values and gradients against the oracles) ---------------

#[test]
fn map_over_tuples_and_rows() {
    agrees(
        "def f(P: [n](real, real), w: real) = sum(map (q. let (a, b) = q in a * w + sin(b)) P)",
        r#"{"P": [[1, 2], [3, -4], [0.5, 0.25]], "w": 0.3}"#,
    );
    agrees(
        "def f(M: [n][m]real, v: [m]real) = sum(map (r. sum(map2 (a, b. a * b * b) r v)) M)",
        r#"{"M": [[1, 2], [3, 4], [-1, 0.5]], "v": [0.5, -1]}"#,
    );
}

#[test]
fn map_returning_tuples_of_arrays() {
    agrees(
        "def f(M: [n][m]real, x: real) =
           let T = map (r. (map (a. a * x) r, sum(r) * x)) M in
           sum(map (t. sum(fst t) * snd t) T)",
        r#"{"M": [[1, 2], [3, 4]], "x": 0.7}"#,
    );
}

#[test]
fn captured_arrays_and_tuples() {
    agrees(
        "def f(A: [n]real, B: [n]real, p: (real, real)) =
           sum(map (a. a * dot(A, B) * fst p + snd p) A)",
        r#"{"A": [1, 2, -3], "B": [0.5, -1, 2], "p": [0.3, 0.4]}"#,
    );
    agrees(
        "def f(M: [n][m]real, v: [m]real) = sum(map (r. dot(r, v) * sum(v)) M)",
        r#"{"M": [[1, 2], [3, 4], [5, 6]], "v": [0.5, -1]}"#,
    );
}

#[test]
fn reduce_over_tuples_and_rows() {
    agrees(
        "def f(A: [n]real) =
           let p = reduce (p, q. (fst p + fst q, snd p * snd q)) (0, 1) (map (a. (a, a + 2)) A) in
           fst p * snd p",
        r#"{"A": [1, 2, -3]}"#,
    );
    agrees(
        "def f(M: [n][m]real, v: [m]real) = dot(v, reduce (r, s. map2 (a, b. a * b + a) r s) v M)",
        r#"{"M": [[1, 2], [3, 4]], "v": [0.5, -1]}"#,
    );
}

#[test]
fn reduce_max_and_min() {
    agrees(
        "def f(A: [n]real, x: real) = reduce max (-1000) A + reduce min 1000 (map (a. a * x) A)",
        r#"{"A": [1, 3, -3, 2.5], "x": 0.7}"#,
    );
}

#[test]
fn foldl_over_rows_with_an_array_state() {
    // a vector recurrence: h' = tanh(W x + h * u)
    agrees(
        "def f(X: [n][m]real, u: real, h0: [m]real) =
           sum(foldl (h, x. map2 (a, b. tanh(a * u + b)) h x) h0 X)",
        r#"{"X": [[0.5, -1], [2, 0.3], [-0.7, 1.1]], "u": 0.8, "h0": [0.1, -0.2]}"#,
    );
    agrees(
        "def f(X: [n][m]real, u: real, h0: [m]real) =
           sum(foldl (h, x. map2 (a, b. tanh(a * u + b)) h x) h0 X)",
        r#"{"X": [], "u": 0.8, "h0": [0.1, -0.2]}"#,
    );
}

#[test]
fn foldl_with_captured_arrays() {
    agrees(
        "def f(A: [n]real, B: [n]real, z: real) = foldl (acc, a. acc * dot(A, B) + a * sum(B)) z A",
        r#"{"A": [1, 2, -3], "B": [0.5, -1, 0.25], "z": 0.3}"#,
    );
}

#[test]
fn scans_with_tuples_and_captures() {
    agrees(
        "def f(A: [n]real, w: real, z: real) =
           sum(map (p. fst p * snd p) (scanl (p, a. (fst p * w + a, snd p + a * a)) (z, 1) A))",
        r#"{"A": [1, 2, -3], "w": 0.5, "z": 0.3}"#,
    );
    agrees(
        "def f(A: [n]real, w: real) = sum(map (p. fst p - snd p) (scanr (a, p. (snd p * w, fst p + a)) (w, 1) A))",
        r#"{"A": [1, 2, -3], "w": 0.5}"#,
    );
    agrees(
        "def f(A: [n]real, w: real) = sum(scanr (a, acc. acc * w + a) w A)",
        r#"{"A": [], "w": 0.5}"#,
    );
}

#[test]
fn shifts_of_scans() {
    agrees(
        "def f(A: [n]real, w: real) = sum(map2 (s, t. s * t) A (shift1L (scanl (acc, x. acc * w + x) 1 A))) + sum(shift1R (scanr * 1 A))",
        r#"{"A": [1, 2, -3], "w": 0.5}"#,
    );
    agrees(
        "def f(A: [n]real, w: real) = sum(shift1R (scanr * w A))",
        r#"{"A": [], "w": 0.5}"#,
    );
}

#[test]
fn literals_of_tuples_and_arrays() {
    agrees(
        "def f(x: real, y: real) = sum(map (p. fst p * snd p) [(x, y), (y, 2), (x * x, x)])",
        r#"{"x": 0.5, "y": -3}"#,
    );
    agrees(
        "def f(A: [n]real, x: real) = sum(map (r. sum(r)) [A, map (a. a * x) A])",
        r#"{"A": [1, 2], "x": 0.5}"#,
    );
}

#[test]
fn conditionals_of_arrays_and_in_folds() {
    agrees(
        "def f(A: [n]real, x: real) = sum(if x > 0 then map (a. a * x) A else A)",
        r#"{"A": [1, 2, -3], "x": 0.5}"#,
    );
    agrees(
        "def f(A: [n]real, x: real) = sum(if x > 0 then map (a. a * x) A else A)",
        r#"{"A": [1, 2, -3], "x": -0.5}"#,
    );
    agrees(
        "def f(A: [n]real, w: real) = foldl (acc, a. if a > acc || !(w < 0) && a > 0 then acc * w + a else acc - a) 0 A",
        r#"{"A": [1, 2, -3, 0.5], "w": 0.5}"#,
    );
}

#[test]
fn constants_of_general_arrays() {
    agrees(
        "def f(M: [n][m]real, P: [n](real, real), x: real) =
           x * len(M) + sum(map (r. sum(r)) (ones_like(M))) * x + sum(map (p. fst p) (zeros_like(P)))",
        r#"{"M": [[1, 2], [3, 4]], "P": [[1, 2], [3, 4]], "x": 0.5}"#,
    );
}

#[test]
fn tuples_of_arrays() {
    agrees(
        "def f(A: [n]real, B: [n]real) = let t = (A, map (b. b * b) B) in dot(fst t, snd t) + sum(snd t)",
        r#"{"A": [1, 2, -3], "B": [0.5, -1, 2]}"#,
    );
}

// ---- scans and folds against their unrolled programs ("Recipe for Adding More Constructs")

/// The optimized reverse-mode gradient of `src` at `input`, flattened in parameter order.
fn flat_gradient(src: &str, input: &str) -> Vec<f64> {
    let (mut prog, func) = load(src);
    let json: serde_json::Value = serde_json::from_str(input).unwrap();
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &json).unwrap();
    let all: Vec<usize> = (0..func.params.len()).collect();
    let rev = unfad_ad::reverse(&mut prog.arena, &func, &all).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &rev).unwrap();
    eval_reverse(&prog.arena, &opt, &args).1.concat()
}

/// The gradient of the array program equals that of the program written out by hand (its
/// parameters flattened in the same order).
fn same_as_unrolled(src: &str, input: &str, unrolled: &str, unrolled_input: &str) {
    agrees(src, input);
    let (g, u) = (
        flat_gradient(src, input),
        flat_gradient(unrolled, unrolled_input),
    );
    assert_eq!(g.len(), u.len());
    for (x, y) in g.iter().zip(&u) {
        assert!(close(*x, *y, 1e-12), "{g:?} vs unrolled {u:?}");
    }
}

const SCAN_INPUT: &str = r#"{"z": 0.3, "A": [0.5, -1.2, 2], "W": [1, -0.5, 2, 0.25], "c": 0.7}"#;
const UNROLLED_INPUT: &str = r#"{"z": 0.3, "a0": 0.5, "a1": -1.2, "a2": 2, "w0": 1, "w1": -0.5, "w2": 2, "w3": 0.25, "c": 0.7}"#;
const UNROLLED_PARAMS: &str =
    "z: real, a0: real, a1: real, a2: real, w0: real, w1: real, w2: real, w3: real, c: real";

#[test]
fn scanl_is_its_unrolled_program() {
    same_as_unrolled(
        "def f(z: real, A: [3]real, W: [4]real, c: real) =
           dot(W, scanl (acc, x. sin(acc) * x + acc * c) z A)",
        SCAN_INPUT,
        &format!(
            "def f({UNROLLED_PARAMS}) =
               let s1 = sin(z) * a0 + z * c in
               let s2 = sin(s1) * a1 + s1 * c in
               let s3 = sin(s2) * a2 + s2 * c in
               w0 * z + w1 * s1 + w2 * s2 + w3 * s3"
        ),
        UNROLLED_INPUT,
    );
}

#[test]
fn scanr_is_its_unrolled_program() {
    same_as_unrolled(
        "def f(z: real, A: [3]real, W: [4]real, c: real) =
           dot(W, scanr (x, acc. exp(x * acc) * c + x) z A)",
        SCAN_INPUT,
        &format!(
            "def f({UNROLLED_PARAMS}) =
               let r2 = exp(a2 * z) * c + a2 in
               let r1 = exp(a1 * r2) * c + a1 in
               let r0 = exp(a0 * r1) * c + a0 in
               w0 * r0 + w1 * r1 + w2 * r2 + w3 * z"
        ),
        UNROLLED_INPUT,
    );
}

#[test]
fn scanl_of_pairs_is_its_unrolled_program() {
    same_as_unrolled(
        "def f(z: real, A: [3]real, W: [4]real, c: real) =
           dot(W, map (p. fst p * snd p) (scanl (p, x. (fst p * x + c, snd p + sin(fst p))) (z, c) A))",
        SCAN_INPUT,
        &format!(
            "def f({UNROLLED_PARAMS}) =
               let (p1, q1) = (z * a0 + c, c + sin(z)) in
               let (p2, q2) = (p1 * a1 + c, q1 + sin(p1)) in
               let (p3, q3) = (p2 * a2 + c, q2 + sin(p2)) in
               w0 * (z * c) + w1 * (p1 * q1) + w2 * (p2 * q2) + w3 * (p3 * q3)"
        ),
        UNROLLED_INPUT,
    );
}

#[test]
fn foldl_is_its_unrolled_program() {
    same_as_unrolled(
        "def f(z: real, A: [3]real, W: [4]real, c: real) =
           foldl (acc, x. tanh(acc * c + x)) z A * sum(W)",
        SCAN_INPUT,
        &format!(
            "def f({UNROLLED_PARAMS}) =
               let s1 = tanh(z * c + a0) in
               let s2 = tanh(s1 * c + a1) in
               let s3 = tanh(s2 * c + a2) in
               s3 * (w0 + w1 + w2 + w3)"
        ),
        UNROLLED_INPUT,
    );
}

// ---- partial and non-smooth operators outside their domains ---------------------------

/// Value and gradient by reverse mode (before and after optimization) at a point where
/// the operators give IEEE specials: they are the forward-mode ones, NaN and infinities
/// included, and nothing fails. Returns the optimized gradient for the snapshot.
fn ieee(src: &str, input: &str) -> String {
    let (mut prog, func) = load(src);
    let json: serde_json::Value = serde_json::from_str(input).unwrap();
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &json).unwrap();
    let (v0, g0) = forward_gradient(&prog.arena, &func, &args).unwrap();
    let all: Vec<usize> = (0..func.params.len()).collect();
    let rev = unfad_ad::reverse(&mut prog.arena, &func, &all).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &rev).unwrap();
    let mut shown = Vec::new();
    for (stage, f) in [("reverse", &rev), ("optimized", &opt)] {
        let (v, g) = eval_reverse(&prog.arena, f, &args);
        assert!(close(v, v0, 1e-12), "{stage}: value {v} vs {v0}");
        let g = g.concat();
        let f0 = g0.concat();
        assert!(
            g.iter().zip(&f0).all(|(x, y)| close(*x, *y, 1e-12)),
            "{stage}: {g:?} vs forward {f0:?}\n{}",
            print_func(&prog.arena, f)
        );
        shown = g;
    }
    format!("{v0} {shown:?}")
}

#[test]
fn operators_outside_their_domains() {
    let cases = [
        ("def f(x: real) = log(x)", r#"{"x": 0}"#),
        ("def f(x: real) = log(x)", r#"{"x": -1}"#),
        ("def f(x: real) = sqrt(x)", r#"{"x": 0}"#),
        ("def f(x: real) = sqrt(x)", r#"{"x": -1}"#),
        ("def f(x: real, y: real) = x / y", r#"{"x": 1, "y": 0}"#),
        ("def f(x: real, y: real) = x / y", r#"{"x": 0, "y": 0}"#),
        (
            "def f(x: real, y: real) = pow(x, y)",
            r#"{"x": 0, "y": 0.5}"#,
        ),
        (
            "def f(x: real, y: real) = pow(x, y)",
            r#"{"x": -1, "y": 0.5}"#,
        ),
        ("def f(x: real, y: real) = pow(x, y)", r#"{"x": 0, "y": 2}"#),
        (
            "def f(x: real, y: real) = atan2(x, y)",
            r#"{"x": 0, "y": 0}"#,
        ),
        ("def f(x: real) = abs(x)", r#"{"x": 0}"#),
        (
            "def f(x: real, y: real) = max(x, y) + min(x, y)",
            r#"{"x": 1, "y": 1}"#,
        ),
        ("def f(x: real) = sigmoid(x)", r#"{"x": -800}"#),
        ("def f(x: real) = asin(x) + acos(x)", r#"{"x": 1}"#),
        ("def f(x: real) = log1p(x)", r#"{"x": -1}"#),
    ];
    let shown: Vec<String> = cases
        .iter()
        .map(|(src, input)| format!("{src} at {input}: {}", ieee(src, input)))
        .collect();
    expect![[r#"
        def f(x: real) = log(x) at {"x": 0}: -inf [inf]
        def f(x: real) = log(x) at {"x": -1}: NaN [-1.0]
        def f(x: real) = sqrt(x) at {"x": 0}: 0 [inf]
        def f(x: real) = sqrt(x) at {"x": -1}: NaN [NaN]
        def f(x: real, y: real) = x / y at {"x": 1, "y": 0}: inf [inf, -inf]
        def f(x: real, y: real) = x / y at {"x": 0, "y": 0}: NaN [inf, NaN]
        def f(x: real, y: real) = pow(x, y) at {"x": 0, "y": 0.5}: 0 [inf, 0.0]
        def f(x: real, y: real) = pow(x, y) at {"x": -1, "y": 0.5}: NaN [NaN, NaN]
        def f(x: real, y: real) = pow(x, y) at {"x": 0, "y": 2}: 0 [0.0, 0.0]
        def f(x: real, y: real) = atan2(x, y) at {"x": 0, "y": 0}: 0 [NaN, NaN]
        def f(x: real) = abs(x) at {"x": 0}: 0 [0.0]
        def f(x: real, y: real) = max(x, y) + min(x, y) at {"x": 1, "y": 1}: 2 [2.0, 0.0]
        def f(x: real) = sigmoid(x) at {"x": -800}: 0 [0.0]
        def f(x: real) = asin(x) + acos(x) at {"x": 1}: 1.5707963267948966 [NaN]
        def f(x: real) = log1p(x) at {"x": -1}: -inf [inf]"#]]
    .assert_eq(&shown.join("\n"));
}

// ---- structural zeros of general arrays ------------------------------------------------

#[test]
fn zero_gradients_of_arrays_of_pairs_are_fills() {
    check(
        "def f(P: [n](real, real), x: real) = sum(map (q. fst q * 0 + x) P)",
        expect![[r#"
            def f(P: [n](real, real), x: real): ([n](real, real), real) =
              (zeros_like(P), len(P))
        "#]],
    );
    check(
        "def f(A: [n]real, P: [n](real, real)) = sum(map2 (a, q. a * a) A P)",
        expect![[r#"
            def f(A: [n]real, P: [n](real, real)): ([n]real, [n](real, real)) =
              (map (a. a + a) A, zeros_like(P))
        "#]],
    );
}

#[test]
fn rows_used_only_for_their_lengths_get_zeros() {
    check(
        "def f(M: [n][m]real, x: real) = sum(map (r. x * len(r)) M)",
        expect![[r#"
            def f(M: [n][m]real, x: real): ([n][m]real, real) =
              (zeros_like(M), reduce + 0 (map (r. len(r)) M))
        "#]],
    );
}

#[test]
fn gradients_through_pairs_and_rows() {
    let src = "def f(P: [n](real, real), M: [n][m]real) = sum(map2 (q, r. fst q * sum(r)) P M)";
    check(
        src,
        expect![[r#"
            def f(P: [n](real, real), M: [n][m]real): ([n](real, real), [n][m]real) =
              (
                map (r.
                  let t0 = reduce + 0 r in
                  (t0, 0)) M,
                map2 (q, r_1. map (b. fst q) r_1) P M
              )
        "#]],
    );
    agrees(
        src,
        r#"{"P": [[1, 2], [3, 4]], "M": [[0.5, -1, 2], [1, 1, 1]]}"#,
    );
}

/// `C = A B` without indexing: each row of `C` folds the rows of `B` scaled by the row of
/// `A` (an accumulator that is an array); the loss is the sum of the squares of `C`. The
/// gradient keeps the product's complexity: no Jacobian of the accumulator is formed.
#[test]
fn matrix_product() {
    let src = "def f(A: [n][k]real, B: [k][m]real, v: [m]real) =
      let C = map (a.
          foldl (acc, p. map2 (c, b. c + fst p * b) acc (snd p)) (zeros_like(v))
                (map2 (x, brow. (x, brow)) a B)) A in
      sum(map (row. dot(row, row)) C)";
    check(
        src,
        expect![[r#"
            def f(A: [n][k]real, B: [k][m]real, v: [m]real): ([n][k]real, [k][m]real, [m]real) =
              let G =
                map (a.
                  let z = map (a_1. a_1 + a_1) (foldl (acc, p. map2 (c, b. c + fst p * b) acc (snd p)) zeros_like(v) (map2 (x, brow. (x, brow)) a B)) in
                  (map (brow_1. reduce + 0 (map2 * z brow_1)) B, map (x_1. map (b_1. x_1 * b_1) z) a)) A
              in
              (
                map (g. fst g) G,
                reduce (s, t. map2 (s_1, t_1. map2 + s_1 t_1) s t) zeros_like(B) (map (g_1. snd g_1) G),
                zeros_like(v)
              )
        "#]],
    );
    agrees(
        src,
        r#"{"A": [[1, 2], [3, -4], [0.5, 1]], "B": [[0.5, -1, 2], [1, 0.25, -0.5]], "v": [0, 0, 0]}"#,
    );
}

// ---- functions capturing several variables -------------------------------------------

/// Three captured weights: one reverse pass per step gives every partial derivative (a
/// pass per weight would recompute `1 - tanh(v)^2` each time, and exceed the bound).
#[test]
fn foldl_capturing_several_weights() {
    let src = "def f(xs: [n]real, w: real, u: real, b: real, h0: real) =
      foldl (h, x. tanh(w * h + u * x + b)) h0 xs";
    check(
        src,
        expect![[r#"
            def f(xs: [n]real, w: real, u: real, b: real, h0: real): ([n]real, real, real, real, real) =
              let S = scanl (h, x. tanh(w * h + u * x + b)) h0 xs in
              let G =
                map2 (q, next.
                  let z = one_minus_sq(next) in
                  (w * z, u * z, fst q * z, snd q * z, z)) (map2 (h_1, x_1. (h_1, x_1)) (shift1R S) xs) (shift1L S)
              in
              let A3 = scanr * 1 (shift1L (map (g. fst g) G)) in
              (
                map2 (a, g_1. a * snd g_1) A3 G,
                reduce + 0 (map2 (a_1, g_2. a_1 * g_2.2) A3 G),
                reduce + 0 (map2 (a_2, g_3. a_2 * g_3.3) A3 G),
                reduce + 0 (map2 (a_3, g_4. a_3 * g_4.4) A3 G),
                reduce * 1 (map (g_5. fst g_5) G)
              )
        "#]],
    );
    agrees(
        src,
        r#"{"xs": [0.5, -1, 2], "w": 0.7, "u": -0.3, "b": 0.2, "h0": 0.1}"#,
    );
}

#[test]
fn map_capturing_several_weights() {
    let src = "def f(A: [n]real, B: [n]real, w: real, b: real, c: real, d: real) =
      sum(map2 (a, e. tanh(w * a + b * e) * c + d * e) A B)";
    check(
        src,
        expect![[r#"
            def f(A: [n]real, B: [n]real, w: real, b: real, c: real, d: real): ([n]real, [n]real, real, real, real, real) =
              let G =
                map2 (a, e.
                  let v7 = tanh(w * a + b * e) in
                  let z = one_minus_sq(v7) * c in
                  (w * z, d + b * z, a * z, e * z, v7, e)) A B
              in
              (
                map (g. fst g) G,
                map (g_1. snd g_1) G,
                reduce + 0 (map (g_2. g_2.2) G),
                reduce + 0 (map (g_3. g_3.3) G),
                reduce + 0 (map (g_4. g_4.4) G),
                reduce + 0 (map (g_5. g_5.5) G)
              )
        "#]],
    );
    agrees(
        src,
        r#"{"A": [0.5, -1, 2], "B": [1, 0.25, -0.5], "w": 0.7, "b": -0.3, "c": 0.2, "d": 1.5}"#,
    );
}
