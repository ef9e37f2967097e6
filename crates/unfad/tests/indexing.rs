//! Ints, indexing and the forms written with them, through the Rust API: values against
//! plain Rust, gradients against central finite differences, and the errors of programs
//! that read out of bounds or cannot be typed.

use unfad::{Arg, Engine, Error};

fn value(src: &str, args: &[Arg]) -> Vec<f64> {
    Engine::new()
        .compile(src)
        .unwrap_or_else(|e| panic!("{e}\n{src}"))
        .call(args)
        .unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// The gradient with respect to the first parameter (an array `a`, the second an int
/// `k`), checked against central differences.
fn check_gradient(src: &str, a: &[f64], k: f64) {
    let grad = Engine::new()
        .compile_grad(src)
        .unwrap_or_else(|e| panic!("{e}\n{src}"));
    let out = grad
        .call(&[Arg::from(a), Arg::from(k)])
        .unwrap_or_else(|e| panic!("{e}\n{src}"));
    let f = Engine::new().compile(src).unwrap();
    for j in 0..a.len() {
        let h = 1e-6;
        let mut p = a.to_vec();
        p[j] += h;
        let mut m = a.to_vec();
        m[j] -= h;
        let fp = f.call(&[Arg::from(p.as_slice()), Arg::from(k)]).unwrap()[0];
        let fm = f.call(&[Arg::from(m.as_slice()), Arg::from(k)]).unwrap()[0];
        let fd = (fp - fm) / (2.0 * h);
        let g = out.gradient(0)[j];
        assert!(
            (g - fd).abs() <= 1e-6 * fd.abs().max(1.0),
            "{src}: d/dA[{j}] {g} vs {fd}"
        );
    }
    assert_eq!(grad.wrt(), &[0], "the int parameter has no gradient");
}

const A: [f64; 5] = [1.0, -2.0, 3.5, 0.25, 4.0];

#[test]
fn slices_reverse_rotate_replicate_iterate() {
    let run = |body: &str| {
        value(
            &format!("def f(A: [n]real, k: int) = {body}"),
            &[Arg::from(&A[..]), Arg::from(2.0)],
        )
    };
    assert_eq!(run("A[1:4]"), &A[1..4]);
    assert_eq!(run("A[2:]"), &A[2..]);
    assert_eq!(run("A[:3]"), &A[..3]);
    assert_eq!(run("A[k:k + 2]"), &A[2..4]);
    assert_eq!(run("A[3:1]"), Vec::<f64>::new());
    let reversed: Vec<f64> = A.iter().rev().copied().collect();
    assert_eq!(run("reverse A"), reversed);
    assert_eq!(run("rotate k A"), [A[2], A[3], A[4], A[0], A[1]]);
    assert_eq!(run("rotate (-1) A"), [A[4], A[0], A[1], A[2], A[3]]);
    assert_eq!(run("rotate 7 A"), run("rotate 2 A"));
    assert_eq!(run("replicate 3 (A[0] * 2)"), [2.0, 2.0, 2.0]);
    let mut joined = A.to_vec();
    joined.extend_from_slice(&A[..2]);
    assert_eq!(run("concat A (A[:2])"), joined);
    assert_eq!(run("concat (A[3:]) [1.5]"), [A[3], A[4], 1.5]);
    assert_eq!(run("iterate 3 (x. x * 0.5 + 1) A[0]"), [1.875]);
    assert_eq!(run("iterate k (x. map (y. y + 1) x) A"), A.map(|x| x + 2.0));
    assert_eq!(
        run("map (i. real(i % 2) + real(div(i, 2)) * 10 + real(div(-7, 2))) (iota len(A))"),
        [-3.0, -2.0, 7.0, 8.0, 17.0]
    );
}

#[test]
fn gradients_through_indexing_and_the_derived_forms() {
    for body in [
        "A[0] * A[len(A) - 1] + A[k] * A[k]",
        "reduce + 0 (map2 * (A[1:]) (reverse (A[:len(A) - 1])))",
        "reduce + 0 (map2 (x, y. x * sin(y)) (rotate k A) A)",
        "let c = concat A [A[0] * A[1], 2.0] in reduce + 0 (map2 (x, i. x * x * real(i + 1)) c (iota len(c)))",
        "reduce + 0 (iterate k (x. map (y. tanh(y) * 0.9) x) A)",
        "reduce + 0 (map (i. if i % 2 == 0 then A[i] * A[div(i, 2)] else exp(A[i])) (iota len(A)))",
        "let s = scanl (acc, x. acc * 0.5 + x) 0 A in reduce + 0 (map (i. s[i + 1] * A[i]) (iota len(A)))",
        // Reads guarded by a condition: the gradient must not read where the guard says
        // not to (the accumulation of per-element scatters once evaluated the guarded
        // read's adjoint for every element, `A[-1]` included).
        "reduce + 0 (map (i. if i >= 1 then sin(A[i - 1]) else 0) (iota len(A)))",
        "reduce + 0 (map (i. if i + 1 < len(A) then A[i + 1] * A[i] else 0) (iota len(A)))",
        "foldl (acc, i. if i >= k then acc + A[i - k] * A[i] else acc) 0 (iota len(A))",
        "reduce + 0 (map (i. reduce + 0 (map (j. let p = i + j - 1 in if p >= 0 && p < len(A) then A[j] * A[p] else 0) (iota 3))) (iota len(A)))",
    ] {
        check_gradient(&format!("def f(A: [n]real, k: int) = {body}"), &A, 2.0);
    }
}

#[test]
fn errors_say_where_and_what() {
    let src = "def f(A: [n]real, k: int) =\n  A[0] + A[k]";
    let f = Engine::new().compile(src).unwrap();
    let err = f.call(&[Arg::from(&A[..]), Arg::from(5.0)]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Argument(_)), "{msg}");
    assert!(
        msg.contains("out of bounds") && msg.contains("line 2, column 10"),
        "{msg}"
    );
    let grad = Engine::new().compile_grad(src).unwrap();
    let msg = grad
        .call(&[Arg::from(&A[..]), Arg::from(-1.0)])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("out of bounds") && msg.contains("line 2"),
        "{msg}"
    );
    // Positions that are sums of loop positions and constants are checked as integers:
    // past either end, the error names the index.
    for (src, index) in [
        ("def f(A: [n]real, k: int) = sum (map (i. A[i + 2]) (iota len(A)))", "index 5 "),
        ("def f(A: [n]real, k: int) = sum (map (i. A[i + -1]) (iota len(A)))", "index -1 "),
        (
            "def f(A: [n]real, k: int) = sum (map (i. sum (map (j. A[i + j]) (iota 3))) (iota len(A)))",
            "index 5 ",
        ),
    ] {
        let msg = Engine::new()
            .compile_grad(src)
            .unwrap()
            .call(&[Arg::from(&A[..]), Arg::from(0.0)])
            .unwrap_err()
            .to_string();
        assert!(msg.contains(index) && msg.contains("out of bounds"), "{src}: {msg}");
    }
    check_gradient(
        "def f(A: [n]real, k: int) = sum (map (i. sum (map (j. A[i + j] * A[j]) (iota 2))) (iota (len(A) - 1)))",
        &A,
        0.0,
    );
    let div = "def f(A: [n]real, k: int) = A[div(3, k)]";
    let msg = Engine::new()
        .compile(div)
        .unwrap()
        .call(&[Arg::from(&A[..]), Arg::from(0.0)])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("by zero") && msg.contains("line 1, column"),
        "{msg}"
    );
    // An int argument must be a whole number.
    let msg = f
        .call(&[Arg::from(&A[..]), Arg::from(1.5)])
        .unwrap_err()
        .to_string();
    assert!(msg.contains("`k`"), "{msg}");
    // Type errors name the position and say what to write.
    for (src, want) in [
        (
            "def f(A: [n]real, x: real) = A[x]",
            "an index must be an int",
        ),
        ("def f(A: [n]real, k: int) = A[0] * k", "real(...)"),
        (
            "def f(A: [n]real) = map (i. reduce + 0 (A[0:i])) (iota len(A))",
            "the length of `iota` must be a size",
        ),
        ("def f(A: [n]real) = A[len(A) / 2]", "div(a, b)"),
        (
            "def f(A: [n]real, x: real) = iota (len(A) * x)",
            "must be an int",
        ),
    ] {
        let Err(e) = Engine::new().compile(src) else {
            panic!("{src} compiles");
        };
        let msg = e.to_string();
        assert!(msg.contains(want) && msg.contains("line 1"), "{src}: {msg}");
    }
}

#[test]
fn a_reduction_of_ints_takes_a_literal_unit() {
    // The index of the smallest element, by `reduce` over `iota` with the unit `0`.
    let src = "def f(A: [n]real, k: int) =
                 let i = reduce (i, j. if A[i] <= A[j] then i else j) 0 (iota len(A)) in
                 A[i] * real(i + k)";
    assert_eq!(
        value(src, &[Arg::from(&A[..]), Arg::from(2.0)]),
        [-2.0 * 3.0]
    );
    check_gradient(src, &A, 2.0);
}

#[test]
fn accumulators_that_mix_ints_and_reals() {
    // The index of the smallest element found by a fold carrying (value, index): the
    // optimizer folds the int `first` into the literal `0`, which once made the term it
    // produced ill-typed ("`best` is declared as `(real, int)`").
    let argmin = "def f(A: [n]real, k: int) =
                    let first: int = 0 in
                    let j = snd (foldl (best, i. if A[i] < fst best then (A[i], i) else best)
                                       (1e300, first) (iota len(A))) in
                    A[j] * A[j] + real(j + k)";
    assert_eq!(
        value(argmin, &[Arg::from(&A[..]), Arg::from(2.0)]),
        [4.0 + 3.0]
    );
    check_gradient(argmin, &A, 2.0);
    // A derivative flowing through the real component while the int one counts.
    for body in [
        "let r = foldl (acc, x. let (p, c) = acc in if x > 0 then (p * x, c + 1) else (p, c)) (1, zero) A in fst r * real(snd r + k)",
        "let r = scanl (acc, x. let (p, c) = acc in if x > 0 then (p * x + real(c), c + 1) else (p, c)) (1, zero) A in reduce + 0 (map (q. fst q * real(snd q)) r)",
    ] {
        check_gradient(
            &format!("def f(A: [n]real, k: int) = let zero: int = 0 in {body}"),
            &A,
            2.0,
        );
    }
}

#[test]
fn literals_and_lengths_as_int_arguments() {
    // A whole-number literal or a length passed for an int parameter (the checker accepts
    // it; inlining once panicked: "calls are checked").
    let src = "def g(k: int, x: real): real = x * real(k)
               def f(A: [n]real, k: int) = g(1, A[0]) + g(len(A) - 1, A[1]) + g(k, A[2])";
    let want = A[0] + 4.0 * A[1] + 2.0 * A[2];
    assert_eq!(value(src, &[Arg::from(&A[..]), Arg::from(2.0)]), [want]);
    check_gradient(src, &A, 2.0);
}

#[test]
fn whole_number_literals_of_a_fold_accumulator_are_ints_where_used_as_ints() {
    // `(0, 0)` and `(-1e300, 0)` for accumulators `(int, real)` and `(real, int)`, and `0`
    // for an int: no annotation needed (the literals were typed real, and the steps then
    // failed to type).
    for (body, want) in [
        (
            "snd (foldl (acc, v. let (k, t) = acc in (k + 1, t + v * real(k))) (0, 0) A)",
            A.iter().enumerate().map(|(k, v)| v * k as f64).sum::<f64>(),
        ),
        (
            "let r = foldl (acc, i. let (bv, bi) = acc in if A[i] > bv then (A[i], i) else (bv, bi)) (-1e300, 0) (iota len(A)) in fst r * A[snd r] + real(k)",
            4.0 * 4.0 + 2.0,
        ),
        // A scan of ints from a literal: its running sums index `A` (0, 0, 1, 3, 6).
        (
            "let s = scanl (p, i. p + i) 0 (iota len(A)) in A[s[3] % len(A)] + A[s[2]]",
            A[3] + A[1],
        ),
    ] {
        let src = format!("def f(A: [n]real, k: int) = {body}");
        assert_eq!(value(&src, &[Arg::from(&A[..]), Arg::from(2.0)]), [want]);
        check_gradient(&src, &A, 2.0);
    }
}

#[test]
fn transpose_reads_columns_in_place() {
    // A 2 x 3 matrix: `transpose` gives 3 x 2, its gradient comes back in A's layout.
    let m = [1.0, 2.0, 3.0, 4.0, 5.0, -6.0];
    let a = Arg::array(&m, &[2, 3]);
    let src = "def f(A: [n][m]real) = transpose A";
    let f = Engine::new().compile(src).unwrap();
    assert_eq!(f.call(&[a]).unwrap(), [1.0, 4.0, 2.0, 5.0, 3.0, -6.0]);
    // A weighted sum of the transpose's columns times rows: each entry's partial is known.
    let src = "def f(A: [n][m]real) =
  let T = transpose A in
  reduce + 0 (map2 (row, i. real(i + 1) * reduce + 0 (map (x. x * x) row)) T (iota len(T)))";
    let g = Engine::new().compile_grad(src).unwrap();
    let out = g.call(&[Arg::array(&m, &[2, 3])]).unwrap();
    // d/dA[i][j] = 2 (j + 1) A[i][j]: row j of the transpose has weight j + 1.
    let want: Vec<f64> = m
        .iter()
        .enumerate()
        .map(|(p, x)| 2.0 * ((p % 3) as f64 + 1.0) * x)
        .collect();
    assert_eq!(out.gradient(0), want.as_slice());
    // Transposing twice is the identity, and its type is that of A again.
    let src = "def f(A: [n][m]real): [n][m]real = transpose (transpose A)";
    let f = Engine::new().compile(src).unwrap();
    assert_eq!(f.call(&[Arg::array(&m, &[2, 3])]).unwrap(), m);
}

#[test]
fn shifts_of_matrices_have_gradients() {
    // Total variation of an image, down the rows and along them: the rows' adjoints add
    // back into zeros shaped like the image, one position down for `shift1L`.
    let src = "def f(X: [n][m]real) =
  let across = map (row. map2 (a, b. a - b) (shift1L row) (shift1R row)) X in
  let down = map2 (r1, r2. map2 (a, b. a - b) r1 r2) (shift1L X) (shift1R X) in
  sum(map (r. sum(map (v. v * v) r)) across) + sum(map (r. sum(map (v. v * v) r)) down)";
    let f = Engine::new().compile(src).unwrap();
    let g = Engine::new().compile_grad(src).unwrap();
    for (n, m) in [(0, 0), (1, 1), (1, 3), (3, 1), (3, 4)] {
        let x: Vec<f64> = (0..n * m)
            .map(|i| ((i * 7 % 11) as f64) * 0.3 - 1.0)
            .collect();
        let out = g.call(&[Arg::array(&x, &[n, m])]).unwrap();
        for j in 0..x.len() {
            let (mut p, mut q) = (x.clone(), x.clone());
            p[j] += 1e-6;
            q[j] -= 1e-6;
            let fp = f.call(&[Arg::array(&p, &[n, m])]).unwrap()[0];
            let fq = f.call(&[Arg::array(&q, &[n, m])]).unwrap()[0];
            let fd = (fp - fq) / 2e-6;
            let d = out.gradient(0)[j];
            assert!(
                (d - fd).abs() <= 1e-6 * fd.abs().max(1.0),
                "{n}x{m}: d/dX[{j}] {d} vs {fd}"
            );
        }
    }
}

/// A plain valid convolution: output `i` is `sum_j x[i + j] * w[j]`.
fn convolve(x: &[f64], w: &[f64]) -> Vec<f64> {
    (0..(x.len() + 1).saturating_sub(w.len()))
        .map(|i| w.iter().enumerate().map(|(j, wj)| x[i + j] * wj).sum())
        .collect()
}

#[test]
fn sizes_computed_from_other_sizes() {
    let conv = "def conv(x: [n]real, w: [m]real) =
                  map (i. sum (map2 (a, b. a * b) (x[i : i + len(w)]) w))
                      (iota (len(x) - len(w) + 1))";
    let x = [1.0, -2.0, 3.5, 0.25, 4.0, -1.5, 2.0];
    let w = [0.5, -1.0, 2.0];
    let f = Engine::new().compile(conv).unwrap();
    for (x, w) in [
        (&x[..], &w[..]),
        (&x[..2], &w[..]),
        (&x[..3], &w[..]),
        (&x[..], &[][..]),
    ] {
        let got = f.call(&[Arg::from(x), Arg::from(w)]).unwrap();
        assert_eq!(got, convolve(x, w), "x {x:?}, w {w:?}");
    }
    // Its gradient: of the sum of squares, against central differences in `x` and `w`.
    let loss =
        format!("{conv}\ndef loss(x: [n]real, w: [m]real) = sum (map (v. v * v) (conv(x, w)))");
    let grad = Engine::new().compile_grad(&loss).unwrap();
    let out = grad.call(&[Arg::from(&x[..]), Arg::from(&w[..])]).unwrap();
    let loss_of = |x: &[f64], w: &[f64]| convolve(x, w).iter().map(|v| v * v).sum::<f64>();
    assert_eq!(out.value, loss_of(&x, &w));
    for (k, at) in [&x[..], &w[..]].into_iter().enumerate() {
        for j in 0..at.len() {
            let h = 1e-6;
            let shifted = |d: f64| {
                let (mut a, mut b) = (x.to_vec(), w.to_vec());
                [&mut a, &mut b][k][j] += d;
                loss_of(&a, &b)
            };
            let fd = (shifted(h) - shifted(-h)) / (2.0 * h);
            let g = out.gradient(k)[j];
            assert!(
                (g - fd).abs() <= 1e-6 * fd.abs().max(1.0),
                "d/d{k}[{j}] {g} vs {fd}"
            );
        }
    }
    // Products, quotients and sums of two sizes: an outer product flattened, pairs, concat.
    let run = value;
    let (a, b) = ([1.0, 2.0], [3.0, 4.0, 5.0]);
    assert_eq!(
        run(
            "def f(x: [n]real, y: [m]real) = map (k. x[div(k, len(y))] * y[k % len(y)]) (iota (len(x) * len(y)))",
            &[Arg::from(&a[..]), Arg::from(&b[..])]
        ),
        [3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
    );
    assert_eq!(
        run(
            "def f(x: [n]real) = map (i. x[2 * i] * x[2 * i + 1]) (iota (div(len(x), 2)))",
            &[Arg::from(&x[..])]
        ),
        [-2.0, 0.875, -6.0]
    );
    assert_eq!(
        run(
            "def f(x: [n]real, y: [m]real) = concat y x",
            &[Arg::from(&a[..]), Arg::from(&b[..])]
        ),
        [3.0, 4.0, 5.0, 1.0, 2.0]
    );
    // Arrays of equal derived sizes zip, however the size was written.
    assert_eq!(
        run(
            "def f(x: [n]real, y: [m]real) = map2 (s, t. s - t) (concat x y) (concat y x)",
            &[Arg::from(&a[..]), Arg::from(&b[..])]
        ),
        [-2.0, -2.0, -2.0, 3.0, 3.0]
    );
    // A slice whose bounds share a term that cancels: `A[k : 2 * k]` has `k` elements.
    assert_eq!(
        run(
            "def f(A: [n]real, k: int) = A[k : k * 2]",
            &[Arg::from(&A[..]), Arg::from(2.0)]
        ),
        &A[2..4]
    );
    check_gradient(
        "def f(A: [n]real, k: int) = sum (map (i. A[i] * A[i + k]) (iota (len(A) - k)))",
        &A,
        2.0,
    );
    // A negative int parameter counts as 0 in the size the native code lays out: an `iota`
    // of another length stops the call with an error that says so, never a short or a
    // padded result.
    let f = Engine::new()
        .compile("def f(A: [n]real, k: int) = map (i. A[i]) (iota (len(A) * 0 - k))")
        .unwrap();
    let msg = f
        .call(&[Arg::from(&A[..]), Arg::from(-2.0)])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("counts an int parameter as 0 when negative"),
        "{msg}"
    );
    assert_eq!(
        f.call(&[Arg::from(&A[..]), Arg::from(2.0)]).unwrap(),
        Vec::<f64>::new()
    );
    // A formula mixing an int parameter and a length is laid out by that formula (the
    // result's size), not by a looser bound: `iota (k - len(w))` has `k - len(w)`
    // elements, and a negative `k` that makes the formula disagree is an error.
    let f = Engine::new()
        .compile("def f(w: [m]real, k: int) = map (i. real(i)) (iota (k + len(w)))")
        .unwrap();
    let w = [0.5];
    assert_eq!(
        f.call(&[Arg::from(&w[..]), Arg::from(2.0)]).unwrap(),
        [0.0, 1.0, 2.0]
    );
    let msg = f
        .call(&[Arg::from(&w[..]), Arg::from(-1.0)])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("counts an int parameter as 0 when negative"),
        "{msg}"
    );
    let g = Engine::new()
        .compile("def f(w: [m]real, k: int) = map (i. real(i)) (iota (k - len(w)))")
        .unwrap();
    assert_eq!(
        g.call(&[Arg::from(&w[..]), Arg::from(3.0)]).unwrap(),
        [0.0, 1.0]
    );
}

/// A scatter at contiguous positions `k + j` adds its window inside the array as a map adds,
/// two elements at a time; positions outside add nothing: windows wholly before the array,
/// across either end, inside it and past it, of odd and even lengths.
#[test]
fn contiguous_scatters_add_the_window_inside_the_array() {
    let src = "def f(x: [n]real, v: [m]real, k: int): [n]real =
                 scatter_add(map (a. a * 2) x, map (j. k + j) (iota len(v)), map (t. t * t + 1) v)";
    let x: Vec<f64> = (0..8).map(|i| i as f64 * 0.5 - 1.0).collect();
    for m in [5, 6] {
        let v: Vec<f64> = (0..m).map(|i| 0.25 * i as f64 - 0.3).collect();
        for k in -8i64..=10 {
            let mut want: Vec<f64> = x.iter().map(|a| a * 2.0).collect();
            for (j, t) in v.iter().enumerate() {
                let at = k + j as i64;
                if (0..x.len() as i64).contains(&at) {
                    want[at as usize] += t * t + 1.0;
                }
            }
            let args = [
                Arg::from(x.as_slice()),
                Arg::from(v.as_slice()),
                Arg::from(k as f64),
            ];
            assert_eq!(value(src, &args), want, "m = {m}, k = {k}");
        }
    }
    // Rows side by side in one buffer: a position outside a row must not reach the next.
    let rows = "def f(M: [p][n]real, v: [m]real, k: int): [p][n]real =
                  map (r. scatter_add(map (a. a * 2) r, map (j. k + j) (iota len(v)), map (t. t * t + 1) v)) M";
    let v: Vec<f64> = (0..5).map(|i| 0.25 * i as f64 - 0.3).collect();
    for k in -8i64..=10 {
        let m: Vec<Vec<f64>> = (0..3)
            .map(|r| x.iter().map(|a| a + r as f64).collect())
            .collect();
        let flat: Vec<f64> = m.concat();
        let mut want = Vec::new();
        for row in &m {
            let mut w: Vec<f64> = row.iter().map(|a| a * 2.0).collect();
            for (j, t) in v.iter().enumerate() {
                let at = k + j as i64;
                if (0..w.len() as i64).contains(&at) {
                    w[at as usize] += t * t + 1.0;
                }
            }
            want.extend(w);
        }
        let args = [
            Arg::array(&flat, &[3, x.len()]),
            Arg::from(v.as_slice()),
            Arg::from(k as f64),
        ];
        assert_eq!(value(rows, &args), want, "rows, k = {k}");
    }
    // The adjoint of a window read in a loop, `A[i + j]`, is such a scatter.
    check_gradient(
        "def f(A: [n]real, k: int): real =
           sum(map (i. let s = sum(map (j. A[j] * A[i + j]) (iota k)) in s * s) (iota (len(A) - k + 1)))",
        &[0.5, -1.25, 2.0, 0.75, 3.5, -0.5, 1.5],
        3.0,
    );
}

/// A matrix made by a map whose rows are maps (`M = a a^T`), read whole by a loop whose
/// gradient scans each row several times (a product's), and also read at a position or
/// for its shape: the rows stayed unevaluated maps, and the code generator failed with an
/// internal error ("the variable `u` is used where it is not bound", or "a map is shifted
/// after it was read"). Now such a lowering is redone with the rows in memory.
#[test]
fn rows_of_an_unevaluated_matrix_read_by_several_scans() {
    let a = [1.0, 2.0, 3.0];
    // f = prod(a) sum_i a_i^3 + a_0 a_1: d/da_k = prod(a) / a_k * 36 + 3 prod(a) a_k^2
    // (+ the other factor of a_0 a_1).
    let want = [236.0, 181.0, 234.0];
    for body in [
        "(transpose M)[1][0] + sum(map (r. prod(r)) M)",
        "sum(map (r. prod(r)) M) + M[1][0]",
    ] {
        let src = format!(
            "def f(a: [n]real): real =\n  let M = map (u. map (y. u * y) a) a in\n  {body}"
        );
        let out = Engine::new()
            .compile_grad(&src)
            .unwrap_or_else(|e| panic!("{e}\n{src}"))
            .call(&[Arg::from(a.as_slice())])
            .unwrap();
        assert_eq!(out.value, 218.0, "{src}");
        assert_eq!(out.gradient(0), want, "{src}");
    }
    // The prefix products of each row, summed, beside a read of `M` for its shape.
    let src = "def f(a: [n]real, k: int): real =
  let M = map (u. map (y. u * y) a) a in
  sum(map (r. reduce + 0 (scanl * 1 r)) M) + sum(zeros_like(M)[1])";
    check_gradient(src, &a, 0.0);
}

/// An index out of bounds met by a gradient says where it is in the source, like the
/// primal's, also where the optimizer made the read anew (an index shared by a `let`, an
/// adjoint's scatter at the read's position).
#[test]
fn a_gradients_index_error_says_where() {
    let src = "def f(xs: [n]real, k: int) =\n  sum(map (t. xs[k + 1] * t) xs)";
    let grad = Engine::new().compile_grad(src).unwrap();
    let e = grad
        .call(&[Arg::from([1.0, 2.0].as_slice()), Arg::from(1.0)])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "the program stopped at line 2, column 15: index 2 is out of bounds for an array of 2 elements"
    );
}

/// A negative constant length (a slice whose end is before its start, `iota (0 - 1)`,
/// `replicate (0 - 2) e`) is an empty array, as docs/language.md says: it was a type error
/// where the array met a definition's `[n]` ("size 0-1 is too small for n").
#[test]
fn a_negative_constant_length_is_an_empty_array() {
    let x = [1.0, 2.0, 3.0];
    for (body, want) in [
        ("sum(x[2:1]) + len(x[2:1])", 0.0),
        ("sum(map (i. real(i)) (iota (0 - 1))) + sum(x)", 6.0),
        ("sum(replicate (0 - 2) 1.0) + sum(x)", 6.0),
    ] {
        let src = format!("def f(x: [n]real, k: int) = {body}");
        assert_eq!(
            value(&src, &[Arg::from(x.as_slice()), Arg::from(0.0)]),
            [want],
            "{src}"
        );
        check_gradient(&src, &x, 0.0);
    }
}
