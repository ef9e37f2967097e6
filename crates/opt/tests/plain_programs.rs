//! The optimized gradients (what `unfad emit --stage optimized` prints) of the three plainly
//! written programs of issue 17, as a user wrote them. The recurrence's gradient reads
//! `tanh` from the stored scan (`next`) instead of computing it again; the mixture's
//! `exp(q)` and `sum(q)` run once per component (`h`, which the value's loop over the
//! components and the adjoint's both read: `unfad_opt::reuse`), not once per point. The
//! sums of array adjoints (`reduce (s, t. map2 + s t) zeros_like(x) (...)`) stay in the
//! term: the code generator runs each as one accumulator added into in the loop that
//! makes the summands (see `crates/jit/src/lower/fusion.rs` and its CLIF snapshots).

use expect_test::{expect, Expect};
use unfad_syntax::print_func;
use unfad_test_support::load;

fn check(src: &str, expect: Expect) {
    let (mut prog, func) = load(src);
    let all: Vec<usize> = (0..func.params.len()).collect();
    let rev = unfad_ad::reverse(&mut prog.arena, &func, &all).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &rev).unwrap();
    expect.assert_eq(&print_func(&prog.arena, &opt));
}

/// A log-sum-exp written stably (its maximum subtracted): the maximum's adjoint, `1 + (1 /
/// s) * -s` in reverse mode's term, is zero (`reciprocal_product`), so the gradient is the
/// softmax alone, without the pass finding the maximum's position (`reduce min` over
/// `iota`) that the adjoint would have been added at.
#[test]
fn stable_log_sum_exp() {
    check(
        "def f(x: [n]real): real = let m = reduce max (-1e300) x in m + log(reduce + 0 (map (a. exp(a - m)) x))",
        expect![[r#"
            def f(x: [n]real): (real, [n]real) =
              let M = reduce max (-1e300) x in
              let E = map (x_1. exp(x_1 - M)) x in
              let v8 = reduce + 0 E in
              let z = 1 / v8 in
              (M + log(v8), map (e. e * z) E)
        "#]],
    );
}

#[test]
fn recurrence() {
    check(
        "def f(A: [n]real): real = foldl (h, a. tanh(0.9 * h + a)) 0 A",
        expect![[r#"
            def f(A: [n]real): (real, [n]real) =
              let S = scanl (h, a. tanh(0.9 * h + a)) 0 A in
              (
                foldl (acc, x. x) 0 S,
                map2 (a_1, next.
                  let b = one_minus_sq(next) in
                  a_1 * b) (scanr * 1 (shift1L (map (next_1. 0.9 * one_minus_sq(next_1)) (shift1L S)))) (shift1L S)
              )
        "#]],
    );
}

/// A recurrent layer: the backward loops read each row's `tanh` from the stored states
/// (`n`, zipped with `shift1L S`) instead of computing the row's dot product again.
#[test]
fn matrix_recurrence() {
    check(
        "def f(W: [m][m]real, U: [m]real, b: [m]real, h0: [m]real, xs: [n]real) =
           let hT = foldl (h, x.
             map2 (row, bi. tanh(reduce + 0 (map2 * row h) + bi)) W (map2 (u, bj. u * x + bj) U b)) h0 xs in
           reduce + 0 (map (v. v * v) hT)",
        expect![[r#"
            def f(W: [m][m]real, U: [m]real, b: [m]real, h0: [m]real, xs: [n]real): (real, [m][m]real, [m]real, [m]real, [m]real, [n]real) =
              let S =
                scanl (h, x.
                  let d = map (row. reduce + 0 (map2 * row h)) W in
                  map2 (e, bi. tanh(e + bi)) d (map2 (u, bj. u * x + bj) U b)) h0 xs
              in
              let A0 = shift1R S in
              let hT = foldl (acc, x_1. x_1) h0 S in
              let R =
                scanr (q, t.
                  reduce (s, t_1. map2 + s t_1) zeros_like(U) (map2 (z, p.
                       let z_1 = one_minus_sq(snd p) in
                       map (e_1. z * (e_1 * z_1)) (fst p)) t (map2 (a, n. (a, n)) W (snd q)))) (map (v. v + v) hT) (map2 (a_1, b_1. (a_1, b_1)) (map2 (acc_1, x_2. (acc_1, x_2)) A0 xs) (shift1L S))
              in
              let W_1 = shift1L R in
              (
                reduce + 0 (map (v_1. v_1 * v_1) hT),
                reduce (s_1, t_2. map2 (s_2, t_3. map2 + s_2 t_3) s_1 t_2) zeros_like(W) (map2 (q_1, w.
                     map2 (n_1, z_2.
                       let z_3 = one_minus_sq(n_1) in
                       map (e_2. z_2 * (e_2 * z_3)) (fst (fst q_1))) (snd q_1) w) (map2 (a_2, b_2. (a_2, b_2)) (map2 (acc_2, x_3. (acc_2, x_3)) A0 xs) (shift1L S)) W_1),
                reduce (s_3, t_4. map2 + s_3 t_4) zeros_like(U) (map2 (q_2, w_1. map2 (n_2, b_3. snd (fst q_2) * (one_minus_sq(n_2) * b_3)) (snd q_2) w_1) (map2 (a_3, b_4. (a_3, b_4)) (map2 (acc_3, x_4. (acc_3, x_4)) A0 xs) (shift1L S)) W_1),
                reduce (s_4, t_5. map2 + s_4 t_5) zeros_like(U) (map2 (b_5, w_2. map2 (n_3, b_6. one_minus_sq(n_3) * b_6) b_5 w_2) (shift1L S) W_1),
                snd (foldl (p_1, x_5. if fst p_1 > 0 then p_1 else (1, x_5)) (0, zeros_like(U)) R),
                map2 (b_7, w_3. reduce + 0 (map2 * (map2 (n_4, b_8. one_minus_sq(n_4) * b_8) b_7 w_3) U)) (shift1L S) W_1
              )
        "#]],
    );
}

#[test]
fn matvec_tanh() {
    check(
        "def f(W: [n][m]real, x: [m]real): real =
           reduce + 0 (map (row. tanh(reduce + 0 (map2 * row x))) W)",
        expect![[r#"
            def f(W: [n][m]real, x: [m]real): (real, [n][m]real, [m]real) =
              let d = map (row. reduce + 0 (map2 * row x)) W in
              let v3 =
                map2 (row_1, e.
                  let v6 = e in
                  let z = one_minus_sq(tanh(v6)) in
                  (tanh(v6), (map (a. a * z) x, map (a_1. a_1 * z) row_1))) W d
              in
              (
                reduce + 0 (map (g. fst g) v3),
                map (g_1. fst (snd g_1)) v3,
                reduce (s, t. map2 + s t) zeros_like(x) (map (g_2. snd (snd g_2)) v3)
              )
        "#]],
    );
}

#[test]
fn mixture() {
    check(
        "def logsumexp(v: [k]real): real =
           let mx = reduce max (-1e300) v in
           mx + log(sum(map (t. exp(t - mx)) v))

         def component(x: [m]real, a: real, mu: [m]real, q: [m]real): real =
           let z = map2 (xd, md. xd - md) x mu in
           let s = map2 (qd, zd. exp(qd) * zd) q z in
           a + sum(q) - 0.5 * sum(map (t. t * t) s)

         def gmm(alpha: [k]real, means: [k][m]real, q: [k][m]real, X: [n][m]real): real =
           let comps = map2 (mu, qk. (mu, qk)) means q in
           sum(map (x. logsumexp(map2 (a, c. component(x, a, fst c, snd c)) alpha comps)) X)",
        expect![[r#"
            def gmm(alpha: [k]real, means: [k][m]real, q: [k][m]real, X: [n][m]real): (real, [k]real, [k][m]real, [k][m]real, [n][m]real) =
              let h = map2 (a, c. (c, map (qd. exp(qd)) (snd c), a + reduce + 0 (snd c))) alpha (map2 (mu, qk. (mu, qk)) means q) in
              let A =
                map (x.
                  let v =
                    map (pe.
                      pe.2 - 0.5 * reduce + 0 (map2 (pe_1, zd.
                           let t = pe_1 * zd in
                           t * t) (snd pe) (map2 - x (fst (fst pe))))) h
                  in
                  let mx = reduce max (-1e300) v in
                  let E = map (x_1. exp(x_1 - mx)) v in
                  let v87 = reduce + 0 E in
                  let z = 1 / v87 in
                  let dv_joint =
                    map2 (e, pe_2.
                      let dv_i = e * z in
                      let E_joint =
                        map2 (pe_3, e_1.
                          let s_i = pe_3 * e_1 in
                          let b = (s_i + s_i) * -0.5 in
                          let z_i = pe_3 * b in
                          (-z_i, 1 + s_i * b, z_i)) (snd pe_2) (map2 - x (fst (fst pe_2)))
                      in
                      (
                        map (g. dv_i * g.2) E_joint,
                        dv_i,
                        (map (g_1. dv_i * fst g_1) E_joint, map (g_2. dv_i * snd g_2) E_joint)
                      )) E h
                  in
                  (
                    mx + log(v87),
                    (
                      reduce (s, t_1. map2 + s t_1) zeros_like(x) (map (g_3. fst g_3) dv_joint),
                      map (g_4. snd g_4) dv_joint,
                      map (g_5. g_5.2) dv_joint
                    )
                  )) X
              in
              let dcomps = reduce (s_1, t_2. map2 (s_2, t_3. (map2 + (fst s_2) (fst t_3), map2 + (snd s_2) (snd t_3))) s_1 t_2) zeros_like(map2 (mu_1, qk_1. (mu_1, qk_1)) means q) (map (g_6. (snd g_6).2) A) in
              (
                reduce + 0 (map (g_7. fst g_7) A),
                reduce (s_3, t_4. map2 + s_3 t_4) zeros_like(alpha) (map (g_8. snd (snd g_8)) A),
                map (z_1. fst z_1) dcomps,
                map (z_2. snd z_2) dcomps,
                map (g_9. fst (snd g_9)) A
              )
        "#]],
    );
}
