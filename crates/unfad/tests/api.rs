//! The Rust API end to end: `Engine::compile_grad`, `GradFn::call`, shapes and errors.

use unfad::{Arg, Engine, Error, Output};

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn compiled_functions_are_send_and_sync() {
    assert_send_sync::<unfad::GradFn>();
    assert_send_sync::<unfad::Func>();
}

/// Gradient by forward mode in the interpreter, flat per parameter.
fn oracle(src: &str, input: serde_json::Value) -> (f64, Vec<Vec<f64>>) {
    let (prog, func) = unfad_test_support::load(src);
    let (args, _) = unfad_interp::args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    unfad_interp::forward_gradient(&prog.arena, &func, &args).unwrap()
}

fn assert_close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!(
            (x - y).abs() <= 1e-12 * (1.0 + x.abs().max(y.abs())),
            "{a:?} vs {b:?}"
        );
    }
}

#[test]
fn the_interface_example() {
    let engine = Engine::new();
    let grad = engine
        .compile_grad("def f(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)")
        .unwrap();
    let (a, b) = (vec![1.0, 2.0, 3.0], vec![4.0, -5.0, 6.0]);
    let out = grad
        .call(&[a.as_slice().into(), b.as_slice().into()])
        .unwrap();
    assert_eq!(out.value, 12.0);
    assert_eq!(out.gradient(0), b.as_slice());
    assert_eq!(out.gradient(1), a.as_slice());
    assert_eq!(out.gradient_by_name("B"), Some(a.as_slice()));
    assert_eq!(out.gradient_by_name("C"), None);
}

#[test]
fn scalars_tuples_matrices_and_arrays_of_tuples() {
    // (Arrays of tuples and matrices as parameters of gradients: see the general-arrays tests.)
    let src = "def f(x: real, p: (real, real), A: [n]real) =
                 fst p * x + snd p * reduce + 0 (map2 (a, b. a * b * x) A A)";
    let grad = Engine::new().compile_grad(src).unwrap();
    let a = [1.0, 2.0, 3.0];
    let args = [
        Arg::from(0.5),
        Arg::tuple(vec![Arg::from(2.0), Arg::from(-1.0)]),
        a.as_slice().into(),
    ];
    let out = grad.call(&args).unwrap();
    let (value, g) = oracle(
        src,
        serde_json::json!({"x": 0.5, "p": [2, -1], "A": [1, 2, 3]}),
    );
    assert!((out.value - value).abs() < 1e-12);
    for (i, gi) in g.iter().enumerate() {
        assert_close(out.gradient(i), gi);
    }
    // The tuple's gradient is flat, its leaves in order.
    assert_eq!(out.gradient(1).len(), 2);
}

#[test]
fn primal_functions_of_any_result_type() {
    let f = Engine::new()
        .compile("def f(A: [n]real, x: real) = (map (a. a * x) A, x + 1)")
        .unwrap();
    let a = [1.0, 2.0];
    assert_eq!(
        f.call(&[a.as_slice().into(), 3.0.into()]).unwrap(),
        vec![3.0, 6.0, 4.0]
    );
    let g = Engine::new()
        .compile("def f(A: [n]real) = map (a. (a, a * a)) A")
        .unwrap();
    assert_eq!(
        g.call(&[a.as_slice().into()]).unwrap(),
        vec![1.0, 1.0, 2.0, 4.0]
    );
}

#[test]
fn a_subset_of_parameters_and_a_named_entry_point() {
    let src = "def g(x: real, y: real) = x * y
               def f(x: real, y: real, z: real) = g(x, y) * z";
    let grad = Engine::new()
        .compile_grad_wrt(src, Some("f"), &["z", "x"])
        .unwrap();
    assert_eq!(grad.wrt(), &[0, 2]);
    let out = grad.call(&[2.0.into(), 3.0.into(), 4.0.into()]).unwrap();
    assert_eq!(
        (out.value, out.gradient(0), out.gradient(1), out.gradient(2)),
        (24.0, &[12.0][..], &[][..], &[6.0][..])
    );
    assert_eq!(out.gradient_by_name("y"), None);
    let g = Engine::new().compile_grad_entry(src, "g").unwrap();
    assert_eq!(
        g.call(&[2.0.into(), 3.0.into()]).unwrap().gradient(1),
        &[2.0]
    );
}

#[test]
fn call_into_reuses_the_output() {
    let grad = Engine::new()
        .compile_grad("def f(A: [n]real) = prod(A)")
        .unwrap();
    let mut out = Output::default();
    for n in [3, 5, 0, 5] {
        let a: Vec<f64> = (1..=n).map(|i| i as f64).collect();
        grad.call_into(&[a.as_slice().into()], &mut out).unwrap();
        let total: f64 = a.iter().product();
        assert_eq!(out.value, total);
        let expected: Vec<f64> = a.iter().map(|x| total / x).collect();
        assert_close(out.gradient(0), &expected);
    }
}

#[test]
fn a_bound_function_runs_the_native_code_on_components_checked_once() {
    let engine = Engine::new();
    let src = "def f(A: [n]real, x: real) = reduce + 0 (map (a. a * a * x) A)";
    let g = engine.compile_grad(src).unwrap();
    let f = engine.compile(src).unwrap();
    let (a, x) = ([1.0, 2.0, 3.0], [2.0]);
    let mut bound = g.bind(&[&a, &x], &[3]).unwrap();
    for _ in 0..2 {
        bound.run().unwrap();
        assert_eq!(
            bound.outputs(),
            [vec![28.0], vec![4.0, 8.0, 12.0], vec![14.0]]
        );
    }
    let mut primal = f.bind(&[&a, &x], &[3]).unwrap();
    primal.run().unwrap();
    assert_eq!(primal.outputs(), [vec![28.0]]);
    assert_eq!(f.status_cell(&[3]), None);
    // Components that do not fit the sizes are the caller's mistake.
    for bad in [g.bind(&[&a, &x], &[4]), g.bind(&[&a], &[3])] {
        assert!(matches!(bad, Err(Error::Argument(_))), "{bad:?}");
    }
}

#[test]
fn calls_from_several_threads_at_once() {
    let grad = Engine::new()
        .compile_grad("def f(A: [n]real) = reduce + 0 (map2 (a, b. sin(a) * b) A A)")
        .unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let grad = &grad;
            s.spawn(move || {
                for k in 0..200 {
                    let a: Vec<f64> = (0..(t * 10 + k % 7)).map(|i| i as f64 * 0.1).collect();
                    let out = grad.call(&[a.as_slice().into()]).unwrap();
                    let expected: Vec<f64> = a.iter().map(|x| x.cos() * x + x.sin()).collect();
                    assert_close(out.gradient(0), &expected);
                }
            });
        }
    });
}

/// An engine reuses the arenas of earlier compilations: what it compiles afterwards, one
/// program after another, after a failure, or from several threads at once, is what a new
/// engine compiles.
#[test]
fn an_engine_that_compiled_before_compiles_the_same() {
    let programs = [
        "def f(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)",
        "def g(x: real, A: [n]real) = reduce + 0 (map (a. sin(a * x)) A) * x",
        "def h(M: [m][n]real) = reduce + 0 (map (r. log(reduce + 0 (map (v. exp(v)) r))) M)",
    ];
    let args: [Vec<Arg>; 3] = [
        vec![[1.0, 2.0, 3.0][..].into(), [4.0, -5.0, 6.0][..].into()],
        vec![0.7.into(), [0.5, -1.5][..].into()],
        vec![Arg::array(&[0.1, 0.2, 0.3, -0.4, 0.5, 0.6], &[2, 3])],
    ];
    let fresh: Vec<Output> = programs
        .iter()
        .zip(&args)
        .map(|(p, a)| Engine::new().compile_grad(p).unwrap().call(a).unwrap())
        .collect();
    // Compile program `k` with `engine`, run it, and compare with a new engine's result.
    let check = |engine: &Engine, k: usize| {
        let out = engine
            .compile_grad(programs[k])
            .unwrap()
            .call(&args[k])
            .unwrap();
        assert_eq!(out.value.to_bits(), fresh[k].value.to_bits());
        for i in 0..args[k].len() {
            let bits = |g: &[f64]| g.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(out.gradient(i)), bits(fresh[k].gradient(i)));
        }
    };
    let engine = Engine::new();
    for k in [2, 0, 1, 2, 1, 0] {
        check(&engine, k);
        assert!(engine.compile_grad("def bad(x: real) = x +").is_err());
        assert!(engine.compile(programs[k]).is_ok());
    }
    std::thread::scope(|s| {
        for t in 0..4 {
            let (engine, check) = (&engine, &check);
            s.spawn(move || {
                for j in 0..6 {
                    check(engine, (t + j) % 3);
                }
            });
        }
    });
}

fn arg_error(src: &str, args: &[Arg]) -> String {
    match Engine::new().compile_grad(src).unwrap().call(args) {
        Err(Error::Argument(m)) => m,
        other => panic!("expected an argument error, got {other:?}"),
    }
}

#[test]
fn wrong_arguments_are_errors_with_a_clear_message() {
    let dot = "def f(A: [n]real, B: [n]real) = dot(A, B)";
    let (a3, a2) = ([1.0, 2.0, 3.0], [1.0, 2.0]);
    assert_eq!(
        arg_error(dot, &[a3.as_slice().into()]),
        "1 argument(s) given, the function takes 2 (A, B)"
    );
    assert_eq!(
        arg_error(dot, &[a3.as_slice().into(), a2.as_slice().into()]),
        "parameter `B`: size `n` is 2 here (an array of 2 elements for `n`), but 3 from parameter `A`"
    );
    assert_eq!(
        arg_error(dot, &[a3.as_slice().into(), 1.0.into()]),
        "parameter `B` has type `[n]real`, but the argument is a real"
    );
    let mat = Engine::new()
        .compile("def f(M: [n][m]real) = map (r. reduce + 0 r) M")
        .unwrap();
    let primal_error = |args: &[Arg]| match mat.call(args) {
        Err(Error::Argument(m)) => m,
        other => panic!("expected an argument error, got {other:?}"),
    };
    assert_eq!(
        primal_error(&[Arg::array(&a3, &[2, 2])]),
        "parameter `M`: shape [2, 2] needs 4 values, but the data has 3"
    );
    assert_eq!(
        primal_error(&[a3.as_slice().into()]),
        "parameter `M` has type `[n][m]real` (2 dimensions), but the argument has shape [3]"
    );
    let fixed = "def f(A: [3]real) = sum(A)";
    assert_eq!(
        arg_error(fixed, &[a2.as_slice().into()]),
        "parameter `A`: expected 3 elements (type `[3]real`), found 2"
    );
    let tup = "def f(p: (real, real)) = fst p";
    assert_eq!(
        arg_error(tup, &[Arg::tuple(vec![1.0.into()])]),
        "parameter `p`: a tuple of type `(real, real)` has 2 items, found 1"
    );
    let nested = "def f(ps: [n]((real, real), real)) = reduce + 0 (map (p. (p.0).1 * p.1) ps)";
    let pair =
        |x: f64, y: f64, w: f64| Arg::tuple(vec![Arg::tuple(vec![x.into(), y.into()]), w.into()]);
    let bad = Arg::tuple(vec![
        Arg::tuple(vec![1.0.into(), a2.as_slice().into()]),
        2.0.into(),
    ]);
    assert_eq!(
        arg_error(nested, &[Arg::elements(vec![pair(1.0, 2.0, 3.0), bad])]),
        "parameter `ps[1].0.1` has type `real`, but the argument is an array of shape [2]"
    );
}

#[test]
fn bad_programs_are_errors_with_line_and_column() {
    let err = |src: &str| Engine::new().compile_grad(src).unwrap_err().to_string();
    assert_eq!(
        err("def f(x: real) =\n  x +"),
        "syntax error at line 2, column 6: expected an expression, found the end of the input"
    );
    assert_eq!(
        err("def f(A: [n]real) = map (a. a) A"),
        "type error: `f` returns `[n]real`; a gradient needs a function that returns `real`"
    );
    assert_eq!(
        err("def f(x: real) = (fun (y: real) -> y)(x)"),
        "unsupported at line 1, column 19: application of a function value is only in the Target fragment; a program to differentiate is written in the Source fragment"
    );
    assert!(Engine::new()
        .compile_grad_wrt("def f(x: real) = x", None, &["y"])
        .unwrap_err()
        .to_string()
        .contains("`y` is not a parameter"));
}

#[test]
fn shifts_and_scans_in_source_programs() {
    // The sum of the differences of neighbours, sum(A[i+1] - A[i]), is A[n-1] - A[0].
    let grad = Engine::new()
        .compile_grad("def f(A: [n]real) = sum(map2 - (shift1L A) (shift1R A))")
        .unwrap();
    let a = [3.0, 1.0, 4.0, 1.0, 5.0];
    let out = grad.call(&[a.as_slice().into()]).unwrap();
    assert_eq!(out.value, 2.0);
    assert_eq!(out.gradient(0), &[-1.0, 0.0, 0.0, 0.0, 1.0]);
    let grad = Engine::new()
        .compile_grad("def f(A: [n]real) = sum(scanl * 1 A)")
        .unwrap();
    let (value, g) = oracle(
        "def f(A: [n]real) = sum(scanl * 1 A)",
        serde_json::json!({"A": [2, 3, 0.5]}),
    );
    let out = grad.call(&[[2.0, 3.0, 0.5].as_slice().into()]).unwrap();
    assert!((out.value - value).abs() < 1e-12);
    assert_close(out.gradient(0), &g[0]);
}

#[test]
fn int_parameters_are_sizes_and_whole_numbers() {
    let f = Engine::new()
        .compile(
            "def f(n: int, I: [m]int, X: [k]real) = \
             (sum(map (i. real(i) * X[i % len(X)]) (iota n)), map (i. X[i]) I)",
        )
        .unwrap();
    let (idx, x) = (vec![2.0, 0.0, 2.0], vec![1.0, 10.0, 100.0]);
    let out = f
        .call(&[Arg::from(4.0), Arg::from(&idx), Arg::from(&x)])
        .unwrap();
    // 0*1 + 1*10 + 2*100 + 3*1, then the gather.
    assert_eq!(out, vec![213.0, 100.0, 1.0, 100.0]);
    let empty = f
        .call(&[Arg::from(-3.0), Arg::from(&idx), Arg::from(&x)])
        .unwrap();
    assert_eq!(empty, vec![0.0, 100.0, 1.0, 100.0]);
    let err = f
        .call(&[Arg::from(2.5), Arg::from(&idx), Arg::from(&x)])
        .unwrap_err();
    assert!(
        matches!(&err, Error::Argument(m) if m.contains("`n`") && m.contains("2.5")),
        "{err}"
    );
    let bad = vec![0.5];
    let err = f
        .call(&[Arg::from(1.0), Arg::from(&bad), Arg::from(&x)])
        .unwrap_err();
    assert!(
        matches!(&err, Error::Argument(m) if m.contains("`I`")),
        "{err}"
    );
    let far = vec![3.0];
    let err = f
        .call(&[Arg::from(1.0), Arg::from(&far), Arg::from(&x)])
        .unwrap_err();
    assert!(err.to_string().contains("out of bounds"), "{err}");
}

#[test]
fn an_empty_batch_leaves_its_rows_length_to_the_other_arguments() {
    // `X` has no row, so it says nothing of `d`; `w` gives it (the empty `X` once bound
    // `d` to 0 and the call was refused as disagreeing with `w`).
    let g = Engine::new()
        .compile_grad(
            "def f(X: [n][d]real, w: [d]real) = reduce + 0 (map (x. dot(x, w)) X) + dot(w, w)",
        )
        .unwrap();
    let w = [1.0, 2.0];
    let out = g
        .call(&[Arg::array(&[], &[0, 0]), Arg::from(&w[..])])
        .unwrap();
    assert_eq!(out.value, 5.0);
    assert_eq!(out.gradient(1), &[2.0, 4.0]);
    assert_eq!(out.gradient(0), &[] as &[f64]);
}

#[test]
fn sizes_computed_by_formulas_are_filled_in_and_checked_at_binding() {
    // A convolution's output has `n - k + 1` elements: a size of its own, after those the
    // parameters name, which `sizes_from` computes and `bind` checks.
    let src = "def f(x: [n]real, w: [k]real) = \
               map (i. sum (map2 (a, b. a * b) (x[i : i + len(w)]) w)) (iota (len(x) - len(w) + 1))";
    let f = Engine::new().compile(src).unwrap();
    assert_eq!(f.size_vars(), ["n", "k", "n - k + 1"]);
    let (x, w) = ([1.0, 2.0, 3.0, 4.0], [1.0, -1.0]);
    let sizes = f
        .sizes_from(&|v| match v {
            "n" => Some(4),
            "k" => Some(2),
            _ => None,
        })
        .unwrap();
    assert_eq!(sizes, [4, 2, 3]);
    let mut bound = f.bind(&[&x, &w], &sizes).unwrap();
    bound.run().unwrap();
    assert_eq!(bound.outputs(), [vec![-1.0, -1.0, -1.0]]);
    // A derived size that its formula does not give is refused, never trusted.
    for bad in [[4, 2, 4], [4, 2, 2]] {
        let r = f.bind(&[&x, &w], &bad);
        assert!(
            matches!(&r, Err(Error::Argument(m)) if m.contains("n - k + 1")),
            "{r:?}"
        );
    }
    assert!(f.sizes_from(&|v| (v == "n").then_some(4)).is_none());
}
