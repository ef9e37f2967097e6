//! A `let`-bound map that must be stored is stored in the place of the result that reads
//! it last, when that result reads element `i` only where it writes element `i`
//! (`lower/scratch.rs`). Results are checked bit for bit against the interpreter, with
//! guard cells around every buffer; the workspace says where the array went.

mod common;

use common::{check, check_gradient, gradient, vec_of, workspace_at};
use serde_json::{json, Value as Json};

fn inputs() -> Vec<Json> {
    [0, 1, 2, 7, 16]
        .iter()
        .map(|&n| json!({"A": vec_of(n, 0.3), "B": vec_of(n, 1.7)}))
        .collect()
}

/// The workspace `src` needs at `n`, in reals.
fn workspace(src: &str, n: u64) -> usize {
    workspace_at(src, &[n])
}

#[test]
fn a_softmax_keeps_its_exponentials_in_its_result() {
    for src in [
        // Alone, and as a component of a tuple beside a scalar that reads a sum of it.
        "def f(A: [n]real, B: [n]real) = \
         let E = map (a. exp(a - 1)) A in let s = reduce + 0 E in map2 (e, b. e / s + b) E B",
        "def f(A: [n]real, B: [n]real) = \
         let m = reduce max (-1e300) A in let E = map (a. exp(a - m)) A in \
         let s = reduce + 0 E in (m + log(s), map2 (b, e. e / s + b) B E)",
        // Read by two loops before the result's.
        "def f(A: [n]real, B: [n]real) = \
         let E = map2 (a, b. a * b + 1) A B in let s = reduce + 0 E in \
         let q = reduce max (-1e300) (map2 * E A) in (s * q, map (e. e * s - q) E)",
    ] {
        check(src, &inputs());
        assert_eq!(workspace(src, 1000), 0, "{src}");
    }
}

#[test]
fn a_row_keeps_its_exponentials_in_the_row_of_the_result() {
    let src = "def f(M: [n][m]real) = \
               map (r. let E = map (x. exp(x)) r in let s = reduce + 0 E in map (e. e / s) E) M";
    let inputs: Vec<Json> = [(0, 0), (1, 3), (4, 5)]
        .iter()
        .map(|&(n, m)| {
            let rows: Vec<Json> = (0..n).map(|i| vec_of(m, 0.1 * i as f64)).collect();
            json!({ "M": rows })
        })
        .collect();
    check(src, &inputs);
    assert_eq!(workspace_at(src, &[100, 50]), 0);
}

#[test]
fn an_array_read_elsewhere_after_the_result_has_a_buffer_of_its_own() {
    for src in [
        // Read at another index by the result's loop: element i + 1 before it is
        // written, element 0 after.
        "def f(A: [n]real, B: [n]real) = \
         let E = map (a. exp(a)) A in let s = reduce + 0 E in \
         map2 (e, d. e / s + d) E (map (i. E[(i + 1) % len(E)]) (iota len(E)))",
        // Read inside the result's function.
        "def f(A: [n]real, B: [n]real) = \
         let E = map (a. exp(a)) A in let s = reduce + 0 E in \
         map2 (e, b. e / s + b * reduce + 0 E) E B",
        // Read by another component of the result, or through an array bound after it.
        "def f(A: [n]real, B: [n]real) = \
         let E = map (a. exp(a)) A in let s = reduce + 0 E in (map (e. e / s) E, reduce * 1 E)",
        "def f(A: [n]real, B: [n]real) = \
         let E = map (a. exp(a)) A in let s = reduce + 0 E in let F = shift1L E in \
         (map (e. e / s) E, map2 + F (shift1L B))",
        // The result's buffer is not of the array's shape.
        "def f(A: [n]real, B: [n]real) = \
         let E = map (a. (exp(a), a)) A in let s = reduce + 0 (map (e. fst e) E) in \
         map (e. fst e / s + snd e) E",
    ] {
        check(src, &inputs());
        assert!(workspace(src, 1000) >= 1000, "{src}");
    }
}

#[test]
fn a_fold_of_scatters_adds_into_the_result() {
    // A convolution's gradient as the optimizer leaves it: the adjoint of the signal is a
    // fold of scatters, a component of the result, added into the result's buffer. Only
    // the outputs `y` are stored (read by the value and by the adjoint).
    let src = "def f(x: [n]real, w: [k]real) = \
               let v4 = iota (len(x) - len(w) + 1) in \
               let y = map (i. reduce + 0 (map2 (j, b. x[i + j] * b) (iota len(w)) w)) v4 in \
               let z = map (v. v + v) y in \
               (reduce + 0 (map (v. v * v) y), \
                foldl (acc, e. scatter_add(acc, map (j. snd e + j) (iota len(w)), map (s. fst e * s) w)) \
                  zeros_like(x) (map2 (a, b. (a, b)) z v4))";
    let inputs: Vec<Json> = [(3, 3), (4, 1), (9, 4), (20, 5)]
        .iter()
        .map(|&(n, k)| json!({"x": vec_of(n, 0.4), "w": vec_of(k, 1.3)}))
        .collect();
    check(src, &inputs);
    let (prog, func) = unfad_test_support::load(src);
    let c = unfad_jit::compile(&prog.arena, &func).unwrap();
    let sizes = c
        .sizes_from(&|name| match name {
            "n" => Some(100),
            "k" => Some(4),
            _ => None,
        })
        .unwrap();
    assert_eq!(c.workspace_len(&sizes), 97);
}

#[test]
fn a_sum_of_pairs_of_arrays_accumulates_in_the_results() {
    // The adjoints of two captured arrays zipped together (a mixture's means and
    // precisions): one sum of pairs of rows, whose columns are two components of the
    // result. They accumulate in those components' buffers (`columns_place`).
    let sum_of_pairs = "let D = reduce (s, t. map2 (s1, t1. \
                          (map2 + (fst s1) (fst t1), map2 + (snd s1) (snd t1))) s t) \
                        zeros_like(map2 (mu, q. (mu, q)) M Q) (map (g. snd g) G) in";
    let g =
        "let G = map (a. (a * a, map2 (mu, q. (map (x. x * a) mu, map (x. x + a) q)) M Q)) A in";
    let src = format!(
        "def f(A: [n]real, M: [k][m]real, Q: [k][m]real) = {g} {sum_of_pairs} \
         (reduce + 0 (map (g. fst g) G), map (z. fst z) D, map (z. snd z) D)"
    );
    // Read again by another component: its own buffer.
    let again = format!(
        "def f(A: [n]real, M: [k][m]real, Q: [k][m]real) = {g} {sum_of_pairs} \
         (reduce + 0 (map (z. reduce + 0 (fst z)) D), map (z. fst z) D, map (z. snd z) D)"
    );
    let inputs: Vec<Json> = [(0, 0, 0), (1, 1, 2), (3, 2, 3), (6, 3, 1)]
        .iter()
        .map(|&(n, k, m)| {
            let rows = |seed: f64| -> Vec<Json> {
                (0..k).map(|i| vec_of(m, seed + 0.1 * i as f64)).collect()
            };
            json!({"A": vec_of(n, 0.2), "M": rows(0.5), "Q": rows(1.5)})
        })
        .collect();
    // The same sum alone, over a map it reads once.
    let alone = "def f(A: [n]real, M: [k][m]real, Q: [k][m]real) = \
                 let D = reduce (s, t. map2 (s1, t1. \
                   (map2 + (fst s1) (fst t1), map2 + (snd s1) (snd t1))) s t) \
                   zeros_like(map2 (mu, q. (mu, q)) M Q) \
                   (map (a. map2 (mu, q. (map (x. x * a) mu, map (x. x + a) q)) M Q) A) in \
                 (map (z. fst z) D, map (z. snd z) D)";
    check(&src, &inputs);
    check(&again, &inputs);
    check(alone, &inputs);
    assert_eq!(workspace_at(&src, &[100, 10, 20]), 0);
    assert_eq!(workspace_at(alone, &[100, 10, 20]), 0);
    assert!(workspace_at(&again, &[100, 10, 20]) >= 2 * 10 * 20);
}

/// A scan that a result maps over is written to the result's buffer and mapped there in
/// place: the suffix products of a product's gradient, a `scanl` cut to the result's
/// length, a scan beside another component. Length 0 included, where the scan has an
/// element and the result none.
#[test]
fn a_scan_a_result_maps_over_is_kept_in_the_result() {
    for src in [
        "def f(A: [n]real, B: [n]real) = \
         map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))",
        "def f(A: [n]real, B: [n]real) = \
         (reduce * 1 A, map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A)))",
        // Read through a map among the result's arrays, element for element (the gradient
        // of a product of a map: the chain rule's factor applied after).
        "def f(A: [n]real, B: [n]real) = \
         map2 (g, b. g * b) (map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))) B",
        "def f(A: [n]real, B: [n]real) = map (s. s * s + 1) (scanl (a, x. a * 0.5 + x) 0 A)",
        "def f(A: [n]real, B: [n]real) = \
         map2 (s, c. s * c) (scanl (a, x. a * 0.5 + x) 0 A) (scanl (acc, x. x) 2 B)",
        "def f(A: [n]real, B: [n]real) = \
         (map (s. s * s) (scanr (x, a. a * 0.9 + x * x) 1 (shift1L A)), reduce + 0 B)",
    ] {
        check(src, &inputs());
        assert_eq!(workspace(src, 1000), 0, "{src}");
    }
}

/// A `let`-bound scan that a component of the result maps over is stored in that
/// component's buffer when the other components that read it are reals: they are computed
/// first (the suffix products of a recurrence's gradient, read by the sums of the
/// gradients of its weights). A spare row holds the scan where the buffer has none.
#[test]
fn a_scan_read_by_reals_of_the_result_is_kept_in_the_result() {
    for src in [
        "def f(A: [n]real, B: [n]real) = \
         let S = scanl (a, x. a * 0.5 + x) 0 A in (map (s. s * s) S, reduce + 0 S)",
        "def f(A: [n]real, B: [n]real) = \
         let S = scanr * 1 (shift1L A) in let q = reduce + 0 B in \
         (reduce + 0 (map2 (s, b. s * b * q) S B), map2 (s, b. s * b) S B, \
         reduce max (-1e300) (map2 + S A))",
    ] {
        check(src, &inputs());
        assert!(workspace(src, 1000) < 8, "{src}");
    }
}

/// A scan read again elsewhere keeps a buffer of its own: the result's loop would
/// overwrite it before the other reads.
#[test]
fn a_scan_read_elsewhere_has_a_buffer_of_its_own() {
    for src in [
        "def f(A: [n]real, B: [n]real) = \
         (map (s. s * s) (scanl (a, x. a * 0.5 + x) 0 A), \
         reduce + 0 (scanl (a, x. a * 0.5 + x) 0 A))",
        "def f(A: [n]real, B: [n]real) = \
         let S = scanl (a, x. a * 0.5 + x) 0 A in map2 (s, t. s * t) S (map (s. s + 1) S)",
        // Read twice by the result itself, through a map and directly.
        "def f(A: [n]real, B: [n]real) = \
         map2 (s, t. s * t) (map (s. s + 1) (scanl (a, x. a * 0.5 + x) 0 A)) \
         (scanl (a, x. a * 0.5 + x) 0 A)",
    ] {
        check(src, &inputs());
        assert!(workspace(src, 1000) >= 1001, "{src}");
    }
}

/// A stored map whose elements hold rows of the arrays it maps over (hoisting makes them:
/// the means and precisions of a mixture zipped beside their exponentials) keeps those
/// rows where they are: only what it computes is stored. Zips of zips too, and reads
/// through the copies see the arrays' values, whatever component they read.
#[test]
fn a_stored_map_does_not_copy_the_arrays_it_zips() {
    let rows = |n: usize, m: usize, seed: f64| -> Json {
        Json::Array((0..n).map(|i| vec_of(m, seed + 0.1 * i as f64)).collect())
    };
    let inputs: Vec<Json> = [(0, 0), (1, 1), (2, 3), (5, 4)]
        .iter()
        .map(|&(n, m)| json!({"M": rows(n, m, 0.2), "Q": rows(n, m, -0.4), "x": vec_of(m, 0.9)}))
        .collect();
    for src in [
        "def f(M: [n][m]real, Q: [n][m]real, x: [m]real) = \
         let H = map2 (a, b. ((a, b), map (t. exp(t)) b)) M Q in \
         reduce + 0 (map (h. reduce + 0 (map2 (u, v. u * v) (fst (fst h)) (snd h))) H) + \
         reduce + 0 (map (h. reduce + 0 (map2 (u, v. u - v) (snd (fst h)) x)) H)",
        "def f(M: [n][m]real, Q: [n][m]real, x: [m]real) = \
         let H = map2 (a, c. (c, map (t. exp(t)) (snd c))) (map (r. reduce + 0 r) M) \
         (map2 (u, v. (u, v)) M Q) in \
         reduce + 0 (map (h. reduce + 0 (map2 * (fst (fst h)) (snd h))) H) + \
         reduce + 0 (map (h. reduce + 0 (map2 * (snd (fst h)) x)) H)",
    ] {
        check(src, &inputs);
        // Only the exponentials: n m reals (the maps are read twice, so stored).
        assert_eq!(workspace_at(src, &[10, 8]), 80, "{src}");
    }
}

/// The shift of a scan that drops its last state (`shift1R (scanl ..)`, `shift1L (scanr
/// ..)`: the adjoints reverse mode makes for scans) is the scan of the source's shift,
/// written where the shift goes (a result's buffer, or the buffer of the result that maps
/// over it), with no buffer of its own for the state the shift drops. Where the source
/// is empty, so is the shift, and the scan (which always has a state) is not run.
#[test]
fn a_shifted_scan_is_written_where_its_shift_goes() {
    for src in [
        "def f(A: [n]real, B: [n]real) = shift1L (scanr (x, a. a * 0.9 + x) 1 A)",
        "def f(A: [n]real, B: [n]real) = shift1R (scanl (a, x. a * 0.5 + x * x) 0 A)",
        "def f(A: [n]real, B: [n]real) = \
         map (s. s * s) (shift1L (scanr (x, a. a * 0.9 + x) 1 A))",
        "def f(A: [n]real, B: [n]real) = \
         map2 (s, b. s * b) (shift1R (scanl (a, x. a * 0.5 + x) 1 A)) B",
        "def f(A: [n]real, B: [n]real) = \
         let S = shift1L (scanr (x, a. a * 0.9 + x) 1 A) in \
         (map2 (s, b. s * b) S B, reduce + 0 S)",
    ] {
        check(src, &inputs());
        assert!(workspace(src, 1000) < 8, "{src}");
    }
}

/// The gradients of a moving average and of discounted returns (a `scanl` and a `scanr`
/// read through a shift, as users write them): reverse mode's scan of the adjoints,
/// shifted, is written in the buffer of the gradient that maps over it, where it had a
/// buffer of its own.
#[test]
fn a_reverse_pass_over_a_shifted_scan_writes_where_the_gradient_goes() {
    let inputs: Vec<Json> = [0, 1, 2, 7, 16]
        .iter()
        .map(|&n| json!({"x": vec_of(n, 0.3), "y": vec_of(n, 1.7), "beta": 0.8}))
        .collect();
    for (src, most) in [
        (
            "def f(x: [n]real, y: [n]real, beta: real) = \
             let s = scanl (a, v. beta * a + (1 - beta) * v) 0 x in \
             sum(map2 (t, u. (t - u) * (t - u)) (shift1L s) y)",
            // The states (read at two offsets) and one adjoint array.
            2 * 1000 + 8,
        ),
        (
            "def f(x: [n]real, y: [n]real, beta: real) = \
             let g = scanr (r, acc. r + beta * acc) 0 x in \
             sum(map2 (t, u. (t - u) * (t - u)) (shift1R g) y)",
            // The returns only.
            1000 + 8,
        ),
    ] {
        assert!(check_gradient(src, &inputs));
        let (prog, func) = gradient(src).unwrap();
        let ws = unfad_jit::compile(&prog.arena, &func)
            .unwrap()
            .workspace_len(&[1000]);
        assert!(ws <= most, "workspace {ws} for {src}");
    }
}
