//! Forward mode, Hessian-vector products and Hessians through the API: closed forms,
//! both second-order routes against each other, and random programs against the
//! interpreter's dual numbers and finite differences of gradients.

use unfad::{Arg, Engine, GradOptions, SecondOrder};
use unfad_test_support::close;

fn all_close(a: &[f64], b: &[f64], tol: f64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| close(*x, *y, tol))
}

#[test]
fn jvp_of_a_scalar_function() {
    let f = Engine::new()
        .compile_jvp("def f(x: real, y: real) = x * sin(y) + exp(x * y)")
        .unwrap();
    let (x, y, dx, dy) = (0.7, -1.3, 0.25, 2.0);
    let out = f
        .call(&[x.into(), y.into()], &[dx.into(), dy.into()])
        .unwrap();
    let value = x * f64::sin(y) + f64::exp(x * y);
    let tangent =
        dx * (f64::sin(y) + y * f64::exp(x * y)) + dy * (x * f64::cos(y) + x * f64::exp(x * y));
    assert!(close(out.value[0], value, 1e-14), "{out:?}");
    assert!(close(out.tangent[0], tangent, 1e-14), "{out:?} {tangent}");
}

#[test]
fn jvp_of_an_array_and_tuple_result() {
    let src =
        "def f(A: [n]real, s: real) = (map (a. tanh(a * s)) A, reduce + 0 (map (a. a * a) A))";
    let f = Engine::new().compile_jvp(src).unwrap();
    let a = [0.5, -1.0, 2.0];
    let da = [1.0, 0.5, -0.25];
    let (s, ds) = (0.3, 0.1);
    let out = f
        .call(
            &[a.as_slice().into(), s.into()],
            &[da.as_slice().into(), ds.into()],
        )
        .unwrap();
    let mut value = Vec::new();
    let mut tangent = Vec::new();
    for i in 0..3 {
        let t = f64::tanh(a[i] * s);
        value.push(t);
        tangent.push((1.0 - t * t) * (da[i] * s + a[i] * ds));
    }
    value.push(a.iter().map(|x| x * x).sum());
    tangent.push(a.iter().zip(&da).map(|(x, d)| 2.0 * x * d).sum());
    assert!(all_close(&out.value, &value, 1e-14), "{out:?}");
    assert!(
        all_close(&out.tangent, &tangent, 1e-14),
        "{out:?} {tangent:?}"
    );
}

/// A result that holds an int made by a fold (a count, the position of the maximum):
/// its tangent is 0. The optimizer inlined the fold's `let x: int = ...`, and the type
/// check of its result then took the fold's literal `0` for a real ("the optimizer
/// produced an ill-typed term").
#[test]
fn jvp_of_a_result_holding_an_int_made_by_a_fold() {
    let x = [1.0, 5.0, 3.0];
    let dx = [0.5, -1.0, 2.0];
    for (src, value, tangent) in [
        (
            "def f(x: [n]real) = (sum(x), foldl (a, i. a + i) 0 (iota len(x)))",
            [9.0, 3.0],
            [1.5, 0.0],
        ),
        (
            "def f(x: [n]real) =
               foldl (acc, i. if x[i] > fst acc then (x[i], i) else acc) (-1e300, 0) (iota len(x))",
            [5.0, 1.0],
            [-1.0, 0.0],
        ),
    ] {
        let f = Engine::new()
            .compile_jvp(src)
            .unwrap_or_else(|e| panic!("{e}\n{src}"));
        let out = f
            .call(&[x.as_slice().into()], &[dx.as_slice().into()])
            .unwrap();
        assert_eq!(out.value, value, "{src}");
        assert_eq!(out.tangent, tangent, "{src}");
    }
}

#[test]
fn hvp_and_hessian_of_a_cubic() {
    // f(x) = sum x_i^3 + x_0 x_1: H = diag(6 x) + the x_0 x_1 coupling.
    let src = "def f(x: [n]real) = reduce + 0 (map (a. a * a * a) x) + x[0] * x[1]";
    let x = [1.0, -2.0, 0.5];
    let v = [0.3, 1.0, -1.0];
    let hessian = |i: usize, j: usize| {
        let mut h = if i == j { 6.0 * x[i] } else { 0.0 };
        if (i, j) == (0, 1) || (i, j) == (1, 0) {
            h += 1.0;
        }
        h
    };
    let engine = Engine::new();
    for route in [
        SecondOrder::ForwardOverReverse,
        SecondOrder::ReverseOverReverse,
    ] {
        let f = engine
            .compile_hvp_with(src, GradOptions::default(), route)
            .unwrap();
        let out = f
            .call(&[x.as_slice().into()], &[v.as_slice().into()])
            .unwrap();
        let expected: Vec<f64> = (0..3)
            .map(|i| (0..3).map(|j| hessian(i, j) * v[j]).sum())
            .collect();
        assert!(
            all_close(out.hvp(0), &expected, 1e-14),
            "{route:?}: {out:?}"
        );
        let grad = [
            3.0 * x[0] * x[0] + x[1],
            3.0 * x[1] * x[1] + x[0],
            3.0 * x[2] * x[2],
        ];
        assert!(
            all_close(out.gradient(0), &grad, 1e-14),
            "{route:?}: {out:?}"
        );
    }
    let h = engine.compile_hessian(src).unwrap();
    let out = h.call(&[x.as_slice().into()]).unwrap();
    for i in 0..3 {
        for j in 0..3 {
            assert!(
                close(out.hessian[i][j], hessian(i, j), 1e-14),
                "{:?}",
                out.hessian
            );
        }
    }
}

#[test]
fn arguments_that_do_not_fit_are_errors() {
    let f = Engine::new()
        .compile_jvp("def f(A: [n]real) = reduce + 0 A")
        .unwrap();
    let a = [1.0, 2.0];
    let da = [1.0, 2.0, 3.0];
    let e = f
        .call(&[Arg::from(a.as_slice())], &[Arg::from(da.as_slice())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("dA"), "{e}");
    let e = f
        .call(&[Arg::from(a.as_slice())], &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("tangent"), "{e}");
}

/// Both second-order routes agree on programs whose loops carry ints beside reals, or
/// whose steps read a variable from around them: reverse mode over the gradient once met
/// their continuations typed with ints where the optimizer had folded reals ("`Y118` is
/// declared as `(((real, real), int), ...)`", "argument 3 should have type `(int, real)`").
#[test]
fn both_routes_through_loops_that_carry_ints() {
    let engine = Engine::new();
    let cases: [(&str, f64, f64); 3] = [
        // r(c) = c / c^3 = c^-2 after three steps: r'' = 6 c^-4.
        (
            "def r(c: real) = iterate_while 3 (x. x > 0) (x. x / c) c
             def f(c: real) = grad(r)(c)",
            2.0,
            // f = r' = -2 c^-3, so f'' = -24 c^-5 and hvp(f) = f'' * v.
            -24.0 / 32.0,
        ),
        // sum over i of x_i^2 i, counted by an int: H = diag(2 i).
        (
            "def f(x: real) = let z: int = 0 in
               snd (foldl (st, a. let (i, s) = st in (i + 1, s + x * x * a * real(i)))
                          (z, 0.0) [1.0, 2.0, 3.0])",
            0.5,
            2.0 * (2.0 + 6.0),
        ),
        // y -> y x + k for k = 0, 1, 2, ...: a polynomial in x, while y < 100.
        (
            "def f(x: real) = let z: int = 0 in
               let (k, y) = iterate_while 20 (s. snd s < 100)
                              (s. let (k, y) = s in (k + 1, y * x + real(k))) (z, x) in y",
            1.7,
            f64::NAN,
        ),
    ];
    for (src, x, want) in cases {
        let mut hvps = Vec::new();
        for route in [
            SecondOrder::ForwardOverReverse,
            SecondOrder::ReverseOverReverse,
        ] {
            let f = engine
                .compile_hvp_with(src, GradOptions::default(), route)
                .unwrap_or_else(|e| panic!("{route:?}: {e}\n{src}"));
            let out = f.call(&[x.into()], &[1.0.into()]).unwrap();
            hvps.push(out.hvp(0)[0]);
        }
        assert!(close(hvps[0], hvps[1], 1e-12), "{src}: {hvps:?}");
        if !want.is_nan() {
            assert!(close(hvps[0], want, 1e-12), "{src}: {hvps:?} vs {want}");
        }
    }
}

/// Forward over reverse through a map whose body folds over the rows of a matrix, each
/// step a loop over a `let`-bound array, with a non-linear term of the fold's result
/// (GradBench's `lstm`, shrunk): sharing made an array of that term from its expansion,
/// whose functions bind one stand-in per depth, so an inner function rebinds the variable
/// of the one around it; copying it fresh renamed every occurrence after the last binder
/// met, and the code generator failed ("the variable `_` is used where it is not bound").
#[test]
fn hvp_through_a_fold_of_loops_inside_a_map() {
    let src = "def f(cell: [l][b]real, sequence: [c][b]real) =
                 reduce + 0 (map (x.
                   let top = foldl (below, i.
                       let c2 = map2 + cell[i] below in
                       map (j. c2[j] * c2[j]) (iota len(c2))) x (iota len(cell))
                   in
                   log(reduce + 0 top) * reduce + 0 top) sequence)";
    let engine = Engine::new();
    let cell = [0.0, 0.1, 0.2, 0.1];
    let seq = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0];
    let args = [Arg::array(&cell, &[2, 2]), Arg::array(&seq, &[3, 2])];
    let dcell = [0.3, -0.2, 0.5, 0.1];
    let dseq = [0.2, 0.4, -0.1, 0.3, 0.0, 0.6];
    let dir = [Arg::array(&dcell, &[2, 2]), Arg::array(&dseq, &[3, 2])];
    let mut outs = Vec::new();
    for route in [
        SecondOrder::ForwardOverReverse,
        SecondOrder::ReverseOverReverse,
    ] {
        let f = engine
            .compile_hvp_with(src, GradOptions::default(), route)
            .unwrap_or_else(|e| panic!("{route:?}: {e}"));
        outs.push(f.call(&args, &dir).unwrap());
    }
    for i in 0..2 {
        assert!(
            all_close(outs[0].hvp(i), outs[1].hvp(i), 1e-10),
            "parameter {i}: {:?} vs {:?}",
            outs[0].hvp(i),
            outs[1].hvp(i)
        );
        assert_eq!(outs[0].hvp(i).len(), [4, 6][i]);
    }
}

/// `call_into` reuses its output and the function's buffers from call to call, over sizes
/// that grow and shrink, and gives what a fresh `call` gives; so does `Func::call_into`,
/// for a result whose array holds pairs (its leaves interleave two components) and for
/// one whose components are in order (written into the output itself).
#[test]
fn calls_into_kept_outputs_equal_fresh_calls() {
    let src = "def f(a: [n]real, b: [n]real, s: real) =
                 s * sum(map2 (x, y. sin(x) * y * y) a b) / (1 + sum(map (x. x * x) a))";
    let engine = Engine::new();
    let hvp = engine.compile_hvp(src).unwrap();
    let jvp = engine.compile_jvp(src).unwrap();
    let (mut h, mut j) = (unfad::HvpOutput::default(), unfad::JvpOutput::default());
    for n in [5, 2, 9, 0, 3] {
        let a: Vec<f64> = (0..n).map(|i| 0.3 * i as f64 - 0.7).collect();
        let b: Vec<f64> = (0..n).map(|i| 1.1 - 0.2 * i as f64).collect();
        let args = [Arg::from(&a[..]), Arg::from(&b[..]), Arg::from(0.9)];
        let dir = [Arg::from(&b[..]), Arg::from(&a[..]), Arg::from(-0.4)];
        hvp.call_into(&args, &dir, &mut h).unwrap();
        assert_eq!(h, hvp.call(&args, &dir).unwrap(), "n = {n}");
        assert_eq!(h.gradient(0).len(), n);
        jvp.call_into(&args, &dir, &mut j).unwrap();
        assert_eq!(j, jvp.call(&args, &dir).unwrap(), "n = {n}");
    }
    let pairs = engine
        .compile("def f(a: [n]real) = (map (x. (x, 2 * x)) a, sum(a))")
        .unwrap();
    let mut out = vec![7.0; 11];
    for n in [3usize, 1, 4] {
        let a: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();
        pairs.call_into(&[Arg::from(&a[..])], &mut out).unwrap();
        let mut want: Vec<f64> = a.iter().flat_map(|&x| [x, 2.0 * x]).collect();
        want.push(a.iter().sum());
        assert_eq!(out, want, "n = {n}");
    }
    // Components in order (arrays of reals and a real): the native code writes into
    // `out` itself, which must still come back exactly the result's leaves.
    let in_order = engine
        .compile("def f(a: [n]real) = (map (x. 2 * x) a, sum(a), map (x. map (y. x * y) a) a)")
        .unwrap();
    let mut out = vec![7.0; 40];
    for n in [3usize, 1, 5, 0, 2] {
        let a: Vec<f64> = (0..n).map(|i| i as f64 - 0.5).collect();
        in_order.call_into(&[Arg::from(&a[..])], &mut out).unwrap();
        let mut want: Vec<f64> = a.iter().map(|&x| 2.0 * x).collect();
        want.push(a.iter().sum());
        want.extend(a.iter().flat_map(|&x| a.iter().map(move |&y| x * y)));
        assert_eq!(out, want, "n = {n}");
        assert_eq!(
            in_order.call(&[Arg::from(&a[..])]).unwrap(),
            want,
            "n = {n}"
        );
    }
}
