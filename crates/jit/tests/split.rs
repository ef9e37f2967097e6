//! Functions cut in two and compiled on two threads (`compile_parallel`): the same
//! results as the interpreter, bit for bit, wherever the cut is.

mod common;

use common::{check_compiled, gradient};
use unfad_jit::fault::{self, Fault};
use unfad_jit::{compile_parallel, compile_split_at, JitError};
use unfad_syntax::{Arena, Func, Node};
use unfad_test_support::load;
use unfad_testgen::{generate, Features};

/// The number of statements of `func`'s top-level chain of `let`s.
fn statements(arena: &Arena, func: &Func) -> usize {
    let mut n = 0;
    let mut e = func.body;
    while let Node::Let(_, _, b) | Node::LetTuple(_, _, b) = arena[e] {
        n += 1;
        e = b;
    }
    n
}

/// Every cut of `func`'s chain, with and without the first part computing the result's
/// components it can, checked against the interpreter on `input`; the number of cuts
/// that made two parts.
fn check_every_cut(arena: &mut Arena, func: &Func, input: &serde_json::Value) -> usize {
    let mut split = 0;
    for at in 1..statements(arena, func) {
        for take in [false, true] {
            let compiled = compile_split_at(arena, func, at, take).unwrap_or_else(|e| {
                panic!(
                    "cut after {at} (take {take}): {e}\n{}",
                    unfad_syntax::print_func(arena, func)
                )
            });
            split += usize::from(compiled.parts() == 2);
            check_compiled(arena, func, &compiled, input);
        }
    }
    split
}

#[test]
fn every_cut_of_random_programs_and_gradients_agrees_with_the_interpreter() {
    let mut split = 0;
    for seed in 0..400 {
        let g = generate(seed, &Features::all());
        let (mut prog, func) = load(&g.source);
        split += check_every_cut(&mut prog.arena, &func, &g.input);
        if let Ok((mut prog, func)) = gradient(&g.source) {
            split += check_every_cut(&mut prog.arena, &func, &g.input);
        }
    }
    eprintln!("{split} cuts made two parts");
    assert!(split >= 1000, "only {split} cuts made two parts");
}

#[test]
fn large_gradients_are_compiled_in_two_parts() {
    let two_cores = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    // gmm's gradient has two large statements (its objective's loops and the reverse
    // pass), compiled apart. gmm_diag's is one (the value's loop joined the reverse pass's,
    // `unfad_opt::siblings`) with small ones around it: no cut is fair, it is compiled whole.
    for (name, parts) in [("gmm", 2), ("gmm_diag", 1)] {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/");
        let src = std::fs::read_to_string(format!("{dir}{name}.ad")).unwrap();
        let input: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{dir}{name}.json")).unwrap())
                .unwrap();
        let (mut prog, func) = gradient(&src).unwrap();
        let compiled = compile_parallel(&mut prog.arena, &func).unwrap();
        assert_eq!(
            compiled.parts(),
            if two_cores { parts } else { 1 },
            "{name}"
        );
        check_compiled(&prog.arena, &func, &compiled, &input);
    }
}

/// A scan over a range that may be empty crossing the cut: it has one element more than
/// the range (`max(c, 1)` here), which its type (`[c]`) does not say when `c` is 0. The
/// second part reads it as the first part lays it out, so the cut is kept (it was compiled
/// whole when the part reading the scan took its length from the type).
#[test]
fn a_scan_over_a_range_that_may_be_empty_crosses_the_cut() {
    let src = "def f(A: [c]real) =
                 let S = scanl (h, i. h * 0.5 + A[i]) 1 (iota (len(A) - 1)) in
                 let t = reduce + 0 (map (x. x * x) S) in
                 (t, map (x. x + t) S)";
    let (mut prog, func) = load(src);
    for n in [0, 1, 2, 5] {
        let a: Vec<f64> = (0..n).map(|i| 0.25 * i as f64 - 0.5).collect();
        let input = serde_json::json!({ "A": a });
        let compiled = compile_split_at(&mut prog.arena, &func, 1, false).unwrap();
        assert_eq!(compiled.parts(), 2, "c = {n}");
        check_compiled(&prog.arena, &func, &compiled, &input);
    }
}

/// A shift of an array bound before the cut is taken again after it (a view, no copy):
/// only the scan crosses, so the workspace holds it once, not beside a copy of its shift.
#[test]
fn a_shift_of_a_crossing_array_is_taken_again_after_the_cut() {
    let src = "def f(A: [n]real) =
                 let S = scanl (h, a. h * 0.5 + a) 0 A in
                 let B = shift1R S in
                 let t = reduce + 0 (map2 * B A) in
                 (t, map2 (x, y. x * y + t) B A)";
    let (mut prog, func) = load(src);
    let compiled = compile_split_at(&mut prog.arena, &func, 2, false).unwrap();
    assert_eq!(compiled.parts(), 2);
    let ws = compiled.workspace_len(&[1000]);
    assert!(ws < 1100, "workspace {ws} for a scan of 1001 reals");
    for n in [0, 1, 5] {
        let a: Vec<f64> = (0..n).map(|i| 0.5 - 0.25 * i as f64).collect();
        check_compiled(
            &prog.arena,
            &func,
            &compiled,
            &serde_json::json!({ "A": a }),
        );
    }
}

/// An array of tuples the part after the cut reads only as columns crosses as those
/// columns: the column that the first part folds (the per-row contributions to an
/// adjoint, summed) is folded in the loop that makes it and never stored, as in the
/// function compiled whole.
#[test]
fn only_the_columns_read_after_the_cut_cross_it() {
    let src = "def f(X: [n][m]real, w: [m]real) =
                 let G = map (x. (reduce + 0 (map2 * x w), (map (a. a * 2) x, map2 * x w))) X in
                 let s = reduce (s, t. map2 + s t) (map (v. 0) w) (map (g. snd (snd g)) G) in
                 let c = reduce + 0 s in
                 (c, map (g. fst g) G, map (g. fst (snd g)) G, s)";
    let (mut prog, func) = load(src);
    let compiled = compile_split_at(&mut prog.arena, &func, 2, false).unwrap();
    assert_eq!(compiled.parts(), 2);
    // Rows of 50: the columns read after the cut are 51 reals a row, the one folded 50.
    let ws = compiled.workspace_len(&[100, 50]);
    assert!(
        ws < 100 * 51 + 500,
        "workspace {ws}: the folded column crossed the cut"
    );
    for (n, m) in [(0, 3), (1, 1), (4, 3)] {
        let x: Vec<Vec<f64>> = (0..n)
            .map(|i| (0..m).map(|j| 0.5 - 0.25 * (i * m + j) as f64).collect())
            .collect();
        let w: Vec<f64> = (0..m).map(|j| 1.0 + j as f64).collect();
        check_compiled(
            &prog.arena,
            &func,
            &compiled,
            &serde_json::json!({ "X": x, "w": w }),
        );
    }
}

/// Positions bound before the cut are bound again after it: never in memory, they do not
/// cross (crossing, they would be stored, and the loops after the cut would read their
/// indices back and test every read made at them).
#[test]
fn positions_bound_before_the_cut_are_bound_again_after_it() {
    let src = "def f(A: [n]real, s: [n]real) =
                 let P = iota len(A) in
                 let t = reduce + 0 (map (j. A[j] * s[j]) P) in
                 let u = reduce + 0 (map (j. A[j] * t + s[j]) P) in
                 (t, map (j. A[j] * u + s[j]) P)";
    let (mut prog, func) = load(src);
    let compiled = compile_split_at(&mut prog.arena, &func, 2, false).unwrap();
    assert_eq!(compiled.parts(), 2);
    let ws = compiled.workspace_len(&[1000]);
    assert!(ws < 500, "workspace {ws}: the positions crossed the cut");
    for n in [0, 1, 5] {
        let a: Vec<f64> = (0..n).map(|i| 0.5 - 0.25 * i as f64).collect();
        let s: Vec<f64> = (0..n).map(|i| 1.0 + i as f64).collect();
        check_compiled(
            &prog.arena,
            &func,
            &compiled,
            &serde_json::json!({ "A": a, "s": s }),
        );
    }
}

#[test]
fn small_functions_are_compiled_whole() {
    let (mut prog, func) = gradient("def f(A: [n]real) = let s = sum(A) in s * s").unwrap();
    assert_eq!(compile_parallel(&mut prog.arena, &func).unwrap().parts(), 1);
}

/// The value and gradient of a straight line of `n` statements, each reading the one
/// before (every value live from the forward pass into the reverse one), differentiated
/// by the route `compile_grad` takes.
fn chain_gradient(n: usize) -> (unfad_syntax::Program, Func) {
    let mut src = String::from("def f(x0: real, y: real): real =\n");
    for i in 1..=n {
        let p = i - 1;
        src.push_str(&format!("  let x{i} = sin(x{p}) * 0.5 + x{p} * y in\n"));
    }
    src.push_str(&format!("  x{n}\n"));
    let (mut prog, func) = load(&src);
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
    (prog, opt)
}

#[test]
fn long_chains_are_compiled_in_chunks_that_agree_with_the_interpreter() {
    let (mut prog, func) = chain_gradient(3000);
    let compiled = compile_parallel(&mut prog.arena, &func).unwrap();
    assert!(compiled.parts() > 4, "{} parts", compiled.parts());
    for input in [
        serde_json::json!({"x0": 0.3, "y": 0.999}),
        serde_json::json!({"x0": -2.5, "y": 1.0}),
    ] {
        check_compiled(&prog.arena, &func, &compiled, &input);
    }
}

/// The chunks of a long program call each math kernel's scalar twin instead of inlining
/// it (a hundred instructions per use, most of Cranelift's time on such chains): the same
/// operations, so the value and the gradient still equal the interpreter's bit for bit,
/// for every kernel, `sin` and `cos` beyond their reduction's range included.
#[test]
fn long_chains_call_the_kernels_and_agree_with_the_interpreter() {
    let kernels = [
        "sin(v)",
        "cos(v)",
        "tanh(v)",
        "sigmoid(v)",
        "exp(-v * v)",
        "log(1 + v * v)",
        "log1p(v * v)",
        "expm1(-v * v)",
        "sin(v * y)",
    ];
    let mut src = String::from("def f(x0: real, y: real): real =\n");
    let n = 1500;
    for i in 1..=n {
        let k = kernels[i % kernels.len()].replace('v', &format!("x{}", i - 1));
        src.push_str(&format!("  let x{i} = {k} * 0.5 + x{} * 0.5 in\n", i - 1));
    }
    src.push_str(&format!("  x{n}\n"));
    let (mut prog, func) = load(&src);
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
    let compiled = compile_parallel(&mut prog.arena, &opt).unwrap();
    assert!(compiled.parts() > 4, "{} parts", compiled.parts());
    for input in [
        serde_json::json!({"x0": 0.3, "y": 0.999}),
        serde_json::json!({"x0": -2.5, "y": 3.0e7}),
    ] {
        check_compiled(&prog.arena, &opt, &compiled, &input);
    }
}

/// A function with many kernels outside its loops calls their twins there (and inlines
/// those in its loops): the same bits as the interpreter, `sin` and `cos` of huge
/// arguments included.
#[test]
fn many_kernels_outside_loops_are_calls_that_agree_with_the_interpreter() {
    let mut src = String::from("def f(x0: real, y: real, A: [n]real): real =\n");
    let kernels = ["sin", "cos", "tanh", "sigmoid", "exp", "log1p", "expm1"];
    for i in 1..=40 {
        let k = kernels[i % kernels.len()];
        src.push_str(&format!(
            "  let x{i} = {k}(x{p} * 0.25) * 0.5 + x{p} * 0.5 + log(1 + y * y) in\n",
            p = i - 1
        ));
    }
    src.push_str("  x40 + sum(map (a. exp(a) * sin(a * y)) A)\n");
    let (mut prog, func) = load(&src);
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1, 2]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
    let compiled = compile_parallel(&mut prog.arena, &opt).unwrap();
    let (primal_prog, primal) = load(&src);
    let compiled_primal = unfad_jit::compile(&primal_prog.arena, &primal).unwrap();
    for input in [
        serde_json::json!({"x0": 0.3, "y": 0.999, "A": [0.5, -1.5, 2.0]}),
        serde_json::json!({"x0": 4.0e7, "y": 3.0e7, "A": [1.0e8]}),
    ] {
        check_compiled(&prog.arena, &opt, &compiled, &input);
        check_compiled(&primal_prog.arena, &primal, &compiled_primal, &input);
    }
}

#[test]
fn chunked_functions_passing_arrays_agree_with_the_interpreter() {
    // Arrays crossing the cuts (whose lengths are the size variable's), one read long
    // after it is made.
    let n = 400;
    let mut src = String::from("def f(A: [n]real, B: [n]real): real =\n  let a0 = A in\n");
    for i in 1..=n {
        let p = i - 1;
        src.push_str(&format!(
            "  let a{i} = map2 (x, y. sin(x) * 0.5 + x * y) a{p} B in\n"
        ));
    }
    src.push_str(&format!("  sum(map2 (x, y. x * y) a{n} a{})\n", n / 3));
    let (mut prog, func) = load(&src);
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1]).unwrap();
    let func = unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
    let compiled = compile_parallel(&mut prog.arena, &func).unwrap();
    assert!(compiled.parts() > 2, "{} parts", compiled.parts());
    let input = serde_json::json!({"A": [0.5, -1.0, 2.0], "B": [0.9, 1.0, -0.3]});
    check_compiled(&prog.arena, &func, &compiled, &input);
}

#[test]
fn a_chunked_function_reports_a_failed_run_time_check_in_a_middle_part() {
    // Writing a scan into memory checks at run time that its buffer has a row for the
    // first accumulator; under the deliberate mistake that a scan is no longer than its
    // operand, that buffer is empty at n = 0 and the check fails. The scan is in a part
    // between others: its status is the function's, and the call stops there.
    let n = 1500;
    let mut src = String::from("def f(A: [n]real, x0: real): real =\n");
    for i in 1..=n {
        let p = i - 1;
        if i == n / 2 {
            src.push_str(&format!(
                "  let x{i} = x{p} + sum(scanl (s, a. s + a) 0 (shift1L A)) in\n"
            ));
        } else {
            src.push_str(&format!("  let x{i} = sin(x{p}) * 0.5 + x{p} in\n"));
        }
    }
    src.push_str(&format!("  x{n}\n"));
    let (mut prog, func) = load(&src);
    let compiled = compile_parallel(&mut prog.arena, &func).unwrap();
    assert!(compiled.parts() > 2, "{} parts", compiled.parts());
    check_compiled(
        &prog.arena,
        &func,
        &compiled,
        &serde_json::json!({"A": [1.0, 2.0, 3.0], "x0": 0.25}),
    );
    let faulty = fault::with(Fault::ScansNoLonger, || {
        compile_parallel(&mut prog.arena, &func)
    })
    .unwrap();
    assert!(faulty.parts() > 2, "{} parts", faulty.parts());
    for size in [0usize, 3] {
        let sizes = [size as u64];
        assert!(faulty.status_cell(&sizes).is_some(), "n = {size}");
        let a: Vec<f64> = (0..size).map(|i| i as f64 + 1.0).collect();
        let mut out = [0.0];
        let mut workspace = vec![0.0; faulty.workspace_len(&sizes)];
        let called = faulty.call(&[&a, &[0.25]], &sizes, &mut [&mut out], &mut workspace);
        match called {
            Err(JitError::Check(_)) => assert_eq!(size, 0),
            Ok(()) => assert_ne!(size, 0),
            Err(e) => panic!("n = {size}: {e}"),
        }
    }
}
