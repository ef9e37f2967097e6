//! The public API: layouts, the checked call, the bound function, and errors (the raw
//! function pointer is called in `compiled`'s unit tests, where `unsafe` is allowed).

mod common;

use unfad_jit::fault::{self, Fault};
use unfad_jit::{compile, Compiled, DimExt, JitError, PathStep};
use unfad_test_support::load;

#[test]
fn compiled_functions_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<Compiled>();
    let (prog, func) = load("def f(A: [n]real) = sum(A)");
    let c = compile(&prog.arena, &func).unwrap();
    let handle = std::thread::spawn(move || {
        let mut out = [0.0];
        c.call(&[&[1.0, 2.0]], &[2], &mut [&mut out], &mut [])
            .unwrap();
        out[0]
    });
    assert_eq!(handle.join().unwrap(), 3.0);
}

#[test]
fn layouts_follow_the_abi() {
    let (prog, func) = load(
        "def f(x: real, P: [n](real, [m]real), t: (real, [k][m]real)) = \
         (map (p. fst p) P, scanl + 0 (shift1L (map (p. fst p) P)))",
    );
    let c = compile(&prog.arena, &func).unwrap();
    assert_eq!(c.size_vars(), ["n", "m", "k"]);
    assert_eq!(c.param_names(), ["x", "P", "t"]);
    let described: Vec<String> = c
        .inputs()
        .iter()
        .map(|comp| {
            let dims: Vec<String> = comp
                .dims
                .iter()
                .map(|d| d.display(c.size_vars()).to_string())
                .collect();
            format!(
                "{} [{}]",
                comp.describe(&c.param_names()[comp.index]),
                dims.join(", ")
            )
        })
        .collect();
    assert_eq!(
        described,
        [
            "x []",
            "P[].0 [n]",
            "P[].1[] [n, m]",
            "t.0 []",
            "t.1[][] [k, m]"
        ]
    );
    assert_eq!(
        c.inputs()[2].path,
        [PathStep::Elements, PathStep::Field(1), PathStep::Elements]
    );
    let sizes = [3, 2, 4];
    let lens: Vec<usize> = c
        .inputs()
        .iter()
        .map(|comp| comp.len(&sizes).unwrap())
        .collect();
    assert_eq!(lens, [1, 3, 6, 1, 8]);
    // The scan over a shifted empty array has one element at n = 0.
    let out: Vec<String> = c
        .outputs()
        .iter()
        .map(|comp| comp.dims[0].display(c.size_vars()).to_string())
        .collect();
    assert_eq!(out, ["n", "max(n, 1)"]);
    assert_eq!(c.outputs()[1].len(&[0, 0, 0]), Some(1));
}

#[test]
fn calls_with_wrong_lengths_are_refused() {
    let (prog, func) = load("def f(A: [n]real, M: [n][m]real) = map2 (a, r. a * sum(r)) A (M)");
    let c = compile(&prog.arena, &func).unwrap();
    let a = [1.0, 2.0];
    let m = [1.0; 6];
    let mut out = [0.0; 2];
    let mut ws = vec![0.0; c.workspace_len(&[2, 3])];
    let err = |r: Result<(), JitError>| match r {
        Err(JitError::Call(msg)) => msg,
        other => panic!("expected a refused call, got {other:?}"),
    };
    assert!(c.call(&[&a, &m], &[2, 3], &mut [&mut out], &mut ws).is_ok());
    assert_eq!(out, [3.0, 6.0]);
    let msg = err(c.call(&[&a, &m[..5]], &[2, 3], &mut [&mut out], &mut ws));
    assert!(msg.contains("`M[][]`") && msg.contains("has 5"), "{msg}");
    let msg = err(c.call(&[&a], &[2, 3], &mut [&mut out], &mut ws));
    assert!(msg.contains("1 input component"), "{msg}");
    let msg = err(c.call(&[&a, &m], &[2], &mut [&mut out], &mut ws));
    assert!(msg.contains("1 size(s) given"), "{msg}");
    let msg = err(c.call(&[&a, &m], &[2, 3], &mut [&mut out[..1]], &mut ws));
    assert!(msg.contains("output component 0"), "{msg}");
    let msg = err(c.call(&[&a, &m], &[u64::MAX, 3], &mut [&mut out], &mut ws));
    assert!(msg.contains("too large"), "{msg}");
    let msg = err(c.call(&[&a, &m], &[1 << 40, 1 << 40], &mut [&mut out], &mut ws));
    assert!(msg.contains("too large") || msg.contains("need"), "{msg}");
}

#[test]
fn a_short_workspace_is_refused() {
    let (prog, func) = load("def f(A: [n]real) = let B = map (x. exp(x)) A in dot(B, B)");
    let c = compile(&prog.arena, &func).unwrap();
    assert_eq!(c.workspace_len(&[4]), 4);
    let mut out = [0.0];
    let r = c.call(
        &[&[1.0, 2.0, 3.0, 4.0]],
        &[4],
        &mut [&mut out],
        &mut [0.0; 3],
    );
    assert!(matches!(r, Err(JitError::Call(m)) if m.contains("workspace")));
    c.call(
        &[&[1.0, 2.0, 3.0, 4.0]],
        &[4],
        &mut [&mut out],
        &mut [0.0; 4],
    )
    .unwrap();
    let want: f64 = [1.0f64, 2.0, 3.0, 4.0]
        .iter()
        .map(|x| (2.0 * x).exp())
        .sum();
    assert!(
        (out[0] - want).abs() <= 1e-12 * want,
        "{} vs {want}",
        out[0]
    );
}

#[test]
fn a_bound_function_is_checked_once_and_runs_like_the_checked_call() {
    let (prog, func) = load("def f(x: real, A: [n]real) = (map (a. a * x) A, sum(A))");
    let c = compile(&prog.arena, &func).unwrap();
    let (x, a) = ([2.0], [1.0, 2.0, 3.0]);
    // The same checks as the checked call, with the same messages.
    for (inputs, sizes) in [
        (vec![&x[..], &a[..]], vec![4u64]),
        (vec![&x[..]], vec![3]),
        (vec![&x[..], &a[..]], vec![]),
    ] {
        let mut outs = [vec![0.0; 3], vec![0.0]];
        let mut outs: Vec<&mut [f64]> = outs.iter_mut().map(|o| o.as_mut_slice()).collect();
        let called = c.call(&inputs, &sizes, &mut outs, &mut []).unwrap_err();
        let bound = c.bind(&inputs, &sizes).unwrap_err();
        assert!(matches!(&bound, JitError::Call(_)), "{bound}");
        assert_eq!(bound, called);
    }
    let mut bound = c.bind(&[&x, &a], &[3]).unwrap();
    assert_eq!(bound.sizes(), [3]);
    assert_eq!(bound.outputs(), [vec![0.0; 3], vec![0.0]]);
    for _ in 0..3 {
        bound.run().unwrap();
        assert_eq!(bound.outputs(), [vec![2.0, 4.0, 6.0], vec![6.0]]);
    }
    // The bound function keeps the native code alive.
    drop(c);
    bound.run().unwrap();
    assert_eq!(bound.outputs()[1], [6.0]);
}

#[test]
fn a_bound_function_reports_a_failed_run_time_check() {
    // Writing a scan into memory checks at run time that its buffer has a row for the
    // first accumulator. Under the deliberate mistake that a scan is no longer than its
    // operand, that buffer is empty at n = 0 and the check fails.
    let src = "def f(A: [n]real) = sum(scanl + 0 (shift1L A))";
    let (prog, func) = load(src);
    let c = fault::with(Fault::ScansNoLonger, || compile(&prog.arena, &func)).unwrap();
    for n in [0usize, 2, 3] {
        let sizes = [n as u64];
        assert!(c.status_cell(&sizes).is_some(), "n = {n}");
        let a: Vec<f64> = (0..n).map(|i| i as f64 + 1.0).collect();
        let mut checked = [0.0];
        let mut workspace = vec![0.0; c.workspace_len(&sizes)];
        let called = c.call(&[&a], &sizes, &mut [&mut checked], &mut workspace);
        let mut bound = c.bind(&[&a], &sizes).unwrap();
        let ran = bound.run();
        assert_eq!(ran, called, "n = {n}");
        match ran {
            Err(JitError::Check(_)) => assert_eq!(n, 0),
            Ok(()) => assert_eq!(bound.outputs(), [checked.to_vec()]),
            Err(e) => panic!("n = {n}: {e}"),
        }
    }
}

#[test]
fn terms_outside_the_first_order_fragment_are_refused() {
    for (src, why) in [
        (
            "def f(x: real) = (fun (y: real) -> y * 2)(x)",
            "application",
        ),
        (
            "def f(x: real) = let g = fun (y: real) -> y * 2 in x",
            "function value",
        ),
    ] {
        let (prog, func) = load(src);
        match compile(&prog.arena, &func) {
            Err(JitError::Unsupported(msg)) => assert!(msg.contains(why), "{msg}"),
            other => panic!("{src}: expected Unsupported, got {other:?}"),
        }
        assert!(unfad_jit::clif_text(&prog.arena, &func).is_err());
    }
    // Calls are inlined by `Program::inline`; the body as parsed still has them.
    let prog =
        unfad_syntax::Program::load("def g(x: real) = x * 2\ndef f(x: real) = g(x)").unwrap();
    let def = &prog.defs[prog.entry(None).unwrap().0 as usize];
    let func = unfad_syntax::Func {
        name: def.name.clone(),
        params: def.params.clone(),
        body: def.body,
        ret: def.ret.clone().unwrap(),
    };
    match compile(&prog.arena, &func) {
        Err(JitError::Unsupported(msg)) => assert!(msg.contains("call"), "{msg}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn untyped_terms_are_type_checked_first() {
    let mut arena = unfad_syntax::Arena::new();
    let x = arena.fresh_var("x", Some(unfad_syntax::Type::Real));
    let ex = arena.var(x);
    let two = arena.constant(2.0);
    let body = arena.op2(unfad_syntax::BinOp::Mul, ex, two);
    let func = unfad_syntax::Func {
        name: "f".into(),
        params: vec![x],
        body,
        ret: unfad_syntax::Type::Real,
    };
    let c = compile(&arena, &func).unwrap();
    let mut out = [0.0];
    c.call(&[&[21.0]], &[], &mut [&mut out], &mut []).unwrap();
    assert_eq!(out[0], 42.0);
}

#[test]
fn many_components_are_passed_through_the_heap() {
    let params: Vec<String> = (0..20).map(|i| format!("x{i}: real")).collect();
    let sum: Vec<String> = (0..20).map(|i| format!("x{i}")).collect();
    let tuple: Vec<String> = (0..20).map(|i| format!("x{i} * 2")).collect();
    let src = format!(
        "def f({}) = ({}, {})",
        params.join(", "),
        sum.join(" + "),
        tuple.join(", ")
    );
    let (prog, func) = load(&src);
    let c = compile(&prog.arena, &func).unwrap();
    let ins: Vec<[f64; 1]> = (0..20).map(|i| [i as f64]).collect();
    let ins: Vec<&[f64]> = ins.iter().map(|v| v.as_slice()).collect();
    let mut outs = [[0.0f64; 1]; 21];
    let mut out_refs: Vec<&mut [f64]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
    c.call(&ins, &[], &mut out_refs, &mut []).unwrap();
    assert_eq!(outs[0][0], 190.0);
    assert_eq!(outs[20][0], 38.0);
}

#[test]
fn shapes_scatter_and_gather_row_major_values() {
    let src = "def f(x: real, P: [n](real, [m]real), t: (real, [k][m]real)) = \
               (P, map (p. (snd p, fst p)) P, t)";
    let (prog, func) = load(src);
    let c = compile(&prog.arena, &func).unwrap();
    let input = serde_json::json!({
        "x": 0.5,
        "P": [[1.0, [2.0, 3.0]], [4.0, [5.0, 6.0]], [7.0, [8.0, 9.0]]],
        "t": [10.0, [[11.0, 12.0]]],
    });
    let (args, env) = unfad_interp::args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    let sizes: Vec<u64> = c.size_vars().iter().map(|v| env.get(v).unwrap()).collect();
    let mut all_comps: Vec<Vec<f64>> = Vec::new();
    for (k, (a, &p)) in args.iter().zip(&func.params).enumerate() {
        let shape = c.param_shape(k).unwrap();
        let mut want = Vec::new();
        common::components(a, prog.arena.var_type(p).unwrap(), &mut want);
        assert_eq!(shape.component_count(), want.len());
        let mut got: Vec<Vec<f64>> = want.iter().map(|w| vec![0.0; w.len()]).collect();
        let mut refs: Vec<&mut [f64]> = got.iter_mut().map(|v| v.as_mut_slice()).collect();
        shape.scatter(&sizes, &a.leaves(), &mut refs).unwrap();
        assert_eq!(got, want);
        let mut back = vec![0.0; shape.leaf_count(&sizes).unwrap()];
        let views: Vec<&[f64]> = got.iter().map(|v| v.as_slice()).collect();
        shape.gather(&sizes, &views, &mut back).unwrap();
        assert_eq!(back, a.leaves());
        all_comps.extend(got);
    }
    // The result, read back in row-major order, is the interpreter's value.
    let mut outs: Vec<Vec<f64>> = c
        .outputs()
        .iter()
        .map(|o| vec![0.0; o.len(&sizes).unwrap()])
        .collect();
    {
        let ins: Vec<&[f64]> = all_comps.iter().map(|v| v.as_slice()).collect();
        let mut refs: Vec<&mut [f64]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
        c.call(
            &ins,
            &sizes,
            &mut refs,
            &mut vec![0.0; c.workspace_len(&sizes)],
        )
        .unwrap();
    }
    let expected = unfad_interp::eval_func(&prog.arena, &func, &args).unwrap();
    let mut leaves = vec![0.0; c.result_shape().leaf_count(&sizes).unwrap()];
    let views: Vec<&[f64]> = outs.iter().map(|v| v.as_slice()).collect();
    c.result_shape()
        .gather(&sizes, &views, &mut leaves)
        .unwrap();
    assert_eq!(leaves, expected.leaves());
    // Wrong lengths are refused, not read past.
    let shape = c.param_shape(1).unwrap();
    let mut short = [0.0; 2];
    assert!(shape
        .gather(&sizes, &[&[1.0; 3], &[1.0; 6]], &mut short)
        .is_err());
    assert!(shape
        .scatter(&sizes, &[0.0; 9], &mut [&mut [0.0; 3], &mut [0.0; 5]])
        .is_err());
}

#[test]
fn one_compiled_function_runs_on_many_threads_at_once() {
    let (prog, func) =
        load("def f(A: [n]real) = let B = map (x. x * x) A in (dot(B, B), scanl + 0 B)");
    let c = compile(&prog.arena, &func).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let c = c.clone();
            std::thread::spawn(move || {
                for k in 0..200usize {
                    let n = (t + k) % 9;
                    let a: Vec<f64> = (0..n).map(|i| (i + t) as f64).collect();
                    let b: Vec<f64> = a.iter().map(|x| x * x).collect();
                    let mut dot = [0.0];
                    let mut scan = vec![0.0; n + 1];
                    let mut ws = vec![0.0; c.workspace_len(&[n as u64])];
                    c.call(&[&a], &[n as u64], &mut [&mut dot, &mut scan], &mut ws)
                        .unwrap();
                    assert_eq!(dot[0], b.iter().map(|x| x * x).sum::<f64>());
                    let mut acc = 0.0;
                    assert_eq!(scan[0], 0.0);
                    for (i, x) in b.iter().enumerate() {
                        acc += x;
                        assert_eq!(scan[i + 1], acc);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
