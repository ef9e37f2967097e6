//! Ints, `iota`, indexing and `scatter_add` in native code, against the reference
//! interpreter bit for bit (with guard cells around every buffer): `iota` over literal,
//! `len` and int-parameter sizes, `A[i]` on arrays of reals, rows and tuples and on
//! unevaluated arrays, gathers, int division and remainder, `scatter_add` at depths 1 and 2
//! with repeated positions; and the errors of a call: indices out of bounds, a zero
//! divisor, an int argument that is not a whole number.

mod common;

use common::{check, check_func, mat_of, run_guarded, vec_of};
use serde_json::{json, Value as Json};
use unfad_interp::{args_from_json, eval_func};
use unfad_jit::fault::{self, Fault};
use unfad_jit::{compile, JitError};
use unfad_test_support::load;

/// `f` of `src` on `input` is an error of the call, natively (a failed check, the guard
/// cells intact) and in the interpreter; returns the native error's text.
fn fails(src: &str, input: &Json) -> String {
    let (prog, func) = load(src);
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, input).unwrap();
    assert!(
        eval_func(&prog.arena, &func, &args).is_err(),
        "the interpreter accepts {input} for {src}"
    );
    let compiled = compile(&prog.arena, &func).unwrap_or_else(|e| panic!("{e}\n{src}"));
    match run_guarded(&prog.arena, &func, &compiled, input).0 {
        Err(JitError::Stopped { why, at }) => {
            // The source position of the failed read or division is known.
            assert!(at.is_some(), "{src}: no position for `{why}`");
            why
        }
        other => panic!("{src} on {input}: expected a failed check, got {other:?}"),
    }
}

#[test]
fn iota_over_literal_len_and_int_parameter_sizes() {
    let src = "def f(A: [n]real) = (iota 4, iota (len(A)), map (i. real(i) * 2.0) \
               (iota (len(A) - 1)), sum(map (i. real(i) * A[i]) (iota (len(A)))), \
               map (i. real(i) + 0.5) (iota (len(A) + 2)))";
    check(
        src,
        &[
            json!({"A": []}),
            json!({"A": [1.5]}),
            json!({"A": vec_of(9, 0.3)}),
        ],
    );
    let src = "def f(n: int, x: real) = (map (i. real(i) * x) (iota n), iota (n - 1), \
               sum(map (i. real(i)) (iota n)), real(n) * x)";
    let inputs: Vec<Json> = [0.0, 1.0, 3.0, 7.0, -2.0]
        .iter()
        .map(|&n| json!({"n": n, "x": 1.25}))
        .collect();
    check(src, &inputs);
    // An int parameter that is also the size of an array parameter.
    let src = "def f(n: int, x: [n]real) = map (i. x[i] * real(i)) (iota n)";
    check(
        src,
        &[
            json!({"n": 0.0, "x": []}),
            json!({"n": 5.0, "x": vec_of(5, 0.7)}),
        ],
    );
    // A `let` of a size.
    let src = "def f(A: [n]real) = let m = len(A) - 1 in map (i. A[i + 1] - A[i]) (iota m)";
    check(src, &[json!({"A": [2.0]}), json!({"A": vec_of(6, 0.4)})]);
}

#[test]
fn indexing_reads_elements_rows_and_tuples_in_place() {
    let src = "def f(A: [n]real, B: [m][k]real, i: int, j: int) = \
               (A[i], B[i][j], A[len(A) - 1], B[j], B[i][len(B[i]) - 1] * A[0])";
    let inputs: Vec<Json> = [(0.0, 0.0), (1.0, 2.0), (2.0, 1.0)]
        .iter()
        .map(|&(i, j)| json!({"A": vec_of(4, 0.9), "B": mat_of(3, 3, 0.2), "i": i, "j": j}))
        .collect();
    check(src, &inputs);
    let src = "def f(P: [n](real, real), i: int) = let (a, b) = P[i] in (a * b, P[len(P) - 1])";
    check(
        src,
        &[json!({"P": [[1.0, 2.0], [3.0, -0.0], [0.5, 4.0]], "i": 1.0})],
    );
    // Unevaluated arrays: an element computed, not the whole array.
    let src = "def f(A: [n]real, i: int) = ((map (a. a * a + 1.0) A)[i], (iota (len(A)))[i], \
               (map2 (a, b. a - b) A (map (a. a * 3.0) A))[len(A) - 1 - i])";
    check(
        src,
        &[
            json!({"A": vec_of(5, 0.1), "i": 0.0}),
            json!({"A": vec_of(5, 0.1), "i": 4.0}),
        ],
    );
    // A conditional guards an index: the branch not taken reads nothing.
    let src = "def f(A: [n]real, i: int) = if i < len(A) then A[i] else -1.0";
    check(
        src,
        &[
            json!({"A": vec_of(3, 0.5), "i": 2.0}),
            json!({"A": vec_of(3, 0.5), "i": 3.0}),
        ],
    );
}

#[test]
fn gathers_and_index_arithmetic() {
    let src = "def f(X: [n]real, I: [m]int) = map (k. X[I[k]]) (iota (len(I)))";
    check(
        src,
        &[
            json!({"X": vec_of(5, 0.3), "I": [4.0, 0.0, 0.0, 2.0, 4.0, 1.0]}),
            json!({"X": vec_of(5, 0.3), "I": []}),
        ],
    );
    let src = "def f(X: [n][d]real, I: [m]int) = (map (i. sum(X[i])) I, map (i. X[i]) I)";
    check(
        src,
        &[json!({"X": mat_of(3, 4, 0.6), "I": [2.0, 2.0, 0.0]})],
    );
    // A packed lower triangle, read at i*(i+1)/2 + j.
    let src = "def f(L: [p]real, n: int) = map (i. map (j. if j <= i then \
               L[div(i * (i + 1), 2) + j] else 0.0) (iota n)) (iota n)";
    check(src, &[json!({"L": vec_of(10, 0.8), "n": 4.0})]);
    let src = "def f(X: [n]real, i: int, j: int) = (X[div(i, j) + 3], X[(i % j) + 3], \
               real(div(i, j)), real(i % j), real(i) / 2.0, real(max(i, j) - min(i, j) * 2))";
    let inputs: Vec<Json> = [
        (7.0, 2.0),
        (-7.0, 2.0),
        (-4.0, 2.0),
        (7.0, -3.0),
        (0.0, 5.0),
    ]
    .iter()
    .map(|&(i, j)| json!({"X": vec_of(8, 0.4), "i": i, "j": j}))
    .collect();
    check(src, &inputs);
}

/// Chains of scatters, as reverse mode makes them for reads of an array at constant
/// positions: added in place into one buffer, innermost first, each element without a
/// branch (a position outside the array, at either end or past a short array, adds
/// nothing; `-0.0` added to `-0.0` stays `-0.0`). Into the zeros of a result, into a new
/// buffer beside it (the chain's base is an argument), and a chain whose positions are
/// arrays and whose values are a loop's.
#[test]
fn chains_of_scatters_add_in_place_at_constant_positions() {
    let src = "def f(X: [n]real, a: real, b: real) = \
               (scatter_add(scatter_add(scatter_add(scatter_add(zeros_like(X), [1], [a]), \
                  [0], [b]), [3], [a * b]), [1], [-0.0]), \
                scatter_add(scatter_add(scatter_add(X, [2], [a]), [5], [b]), [0], [-0.0]), \
                scatter_add(scatter_add(X, [0, 1, 1], map (x. x * a) [b, a, 2.0]), iota 2, [b, b]))";
    check(
        src,
        &[
            json!({"X": [1.0, -0.0, 3.0, 4.0], "a": 0.25, "b": -1.5}),
            json!({"X": [-0.0, 2.0], "a": -0.0, "b": 7.0}),
            json!({"X": [], "a": 1.0, "b": 2.0}),
        ],
    );
}

/// A chain of scatters at constant positions is straight-line code: its function has as
/// many blocks for 40 scatters as for 4 (long programs read many elements, and every
/// block costs the register allocator a pass over the values live across it).
#[test]
fn a_chain_of_scatters_adds_no_blocks_per_scatter() {
    let blocks = |k: usize| {
        let mut e = "zeros_like(X)".to_string();
        for j in 0..k {
            e = format!("scatter_add({e}, [{}], [a * {j}.5])", j % 5);
        }
        let src = format!("def f(X: [n]real, a: real) = {e}");
        let (prog, func) = load(&src);
        let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
        text.lines().filter(|l| l.starts_with("block")).count()
    };
    assert_eq!(blocks(4), blocks(40));
    check(
        "def f(X: [n]real, a: real) = \
         scatter_add(scatter_add(scatter_add(zeros_like(X), [4], [a]), [0], [a]), [4], [a])",
        &[
            json!({"X": vec_of(5, 0.1), "a": 0.5}),
            json!({"X": vec_of(3, 0.1), "a": 0.5}),
        ],
    );
}

#[test]
fn scatter_add_at_depth_one_and_two_with_repeated_positions() {
    let src = "def f(Z: [n]real, I: [m]int, V: [m]real) = scatter_add(Z, I, V)";
    check(
        src,
        &[
            json!({"Z": vec_of(4, 0.5), "I": [1.0, 3.0, 1.0, 0.0, 1.0], "V": [0.1, 1e16, -0.3, 2.0, 1.0]}),
            json!({"Z": vec_of(4, 0.5), "I": [], "V": []}),
        ],
    );
    // Rows added at depth 1, reals at depth 2.
    let src = "def f(Z: [n][k]real, I: [m]int, V: [m][k]real) = scatter_add(Z, I, V)";
    check(
        src,
        &[json!({"Z": mat_of(3, 2, 0.1), "I": [2.0, 0.0, 2.0], "V": mat_of(3, 2, 0.9)})],
    );
    let src = "def f(Z: [n][k]real, I: [m](int, int), V: [m]real) = scatter_add(Z, I, V)";
    check(
        src,
        &[
            json!({"Z": mat_of(3, 2, 0.1), "I": [[2.0, 1.0], [0.0, 0.0], [2.0, 1.0], [1.0, 0.0]], "V": [1.0, 2.0, 3.0, -0.0]}),
        ],
    );
    // Positions that are sums of loop positions and constants, computed as integers:
    // those past either end add nothing.
    let src = "def f(X: [n]real, V: [m]real) = \
               (scatter_add(zeros_like(X), map (i. i + -2) (iota len(V)), V), \
                scatter_add(zeros_like(X), map (i. i + 3) (iota len(V)), V), \
                map (i. X[i + 1]) (iota (len(X) - 1)))";
    check(
        src,
        &[
            json!({"X": vec_of(4, 0.2), "V": vec_of(6, 1.3)}),
            json!({"X": vec_of(1, 0.2), "V": vec_of(0, 1.3)}),
        ],
    );
    // Into zeros, from unevaluated positions and values; an array of tuples.
    let src = "def f(X: [n]real, I: [m]int, V: [m]real) = \
               scatter_add(zeros_like(X), map (i. i % 3) I, map (v. v * 2.0) V)";
    check(
        src,
        &[json!({"X": vec_of(4, 0.2), "I": [5.0, 7.0, 3.0, 1.0], "V": [1.0, 2.0, 3.0, 4.0]})],
    );
    let src = "def f(Z: [n](real, real), I: [m]int, V: [m](real, real)) = \
               (scatter_add(Z, I, V), sum(map (i. real(i)) I))";
    check(
        src,
        &[
            json!({"Z": [[1.0, 2.0], [3.0, 4.0]], "I": [1.0, 1.0, 0.0], "V": [[0.5, 0.25], [1.0, 1.0], [-1.0, 0.0]]}),
        ],
    );
    // In a loop: an accumulator scattered into, and a row of a map.
    let src = "def f(Z: [n]real, I: [m]int) = foldl (acc, i. scatter_add(acc, [i, 0], [2.0, real(i)])) Z I";
    check(src, &[json!({"Z": vec_of(3, 0.5), "I": [2.0, 1.0, 2.0]})]);
    let src = "def f(Z: [n][k]real, I: [m]int, V: [m]real) = map (r. scatter_add(r, I, map (v. v * r[0]) V)) Z";
    check(
        src,
        &[json!({"Z": mat_of(3, 4, 0.2), "I": [3.0, 0.0, 3.0], "V": [1.0, 2.0, 4.0]})],
    );
    // Into zeros, written straight to the result (a component of a tuple).
    let src = "def f(X: [n]real, I: [m]int, V: [m]real) = \
               (sum(X), scatter_add(zeros_like(X), I, V), scatter_add(ones_like(X), I, V))";
    check(
        src,
        &[json!({"X": vec_of(4, 0.2), "I": [3.0, 0.0, 3.0], "V": [1.0, 2.0, 4.0]})],
    );
    // The adjoint of a gather, as reverse mode writes it.
    let src = "def f(X: [n]real, I: [m]int, G: [m]real) = \
               scatter_add(zeros_like(X), I, map2 (g, x. g * x) G (map (i. X[i]) I))";
    check(
        src,
        &[json!({"X": vec_of(5, 0.3), "I": [4.0, 0.0, 4.0], "G": [1.0, -2.0, 0.5]})],
    );
}

#[test]
fn out_of_bounds_indices_and_zero_divisors_are_errors_of_the_call() {
    let a = vec_of(3, 0.5);
    let index = "def f(A: [n]real, i: int) = A[i] * 2.0";
    // The error names the index and the length, in the interpreter's words.
    for i in [-1.0, 3.0, 100.0] {
        let msg = fails(index, &json!({"A": a, "i": i}));
        assert_eq!(
            msg,
            format!("index {i} is out of bounds for an array of 3 elements")
        );
    }
    let msg = fails(index, &json!({"A": [], "i": 0.0}));
    assert_eq!(msg, "index 0 is out of bounds for an array of 0 elements");
    let row = "def f(B: [n][k]real, i: int, j: int) = B[i][j]";
    let msg = fails(row, &json!({"B": mat_of(2, 3, 0.1), "i": 1.0, "j": 3.0}));
    assert!(
        msg.starts_with("index 3 is out of bounds for an array of 3 "),
        "{msg}"
    );
    let msg = fails(row, &json!({"B": mat_of(2, 1, 0.1), "i": -1.0, "j": 0.0}));
    assert!(
        msg.starts_with("index -1 is out of bounds for an array of 2 "),
        "{msg}"
    );
    let gather = "def f(X: [n]real, I: [m]int) = map (k. X[I[k]]) (iota (len(I)))";
    let msg = fails(gather, &json!({"X": a, "I": [0.0, 3.0]}));
    assert!(msg.starts_with("index 3 is out of bounds"), "{msg}");
    // A scatter's position outside its target adds nothing (its semantics), as in the
    // interpreter: the same values, and the guard cells untouched.
    let scatter = "def f(Z: [n]real, I: [m]int, V: [m]real) = scatter_add(Z, I, V)";
    check(
        scatter,
        &[
            json!({"Z": a, "I": [0.0, 3.0, -1.0, 1.0], "V": [1.0, 1.0, 5.0, 2.0]}),
            json!({"Z": [], "I": [0.0], "V": [1.0]}),
        ],
    );
    let deep = "def f(Z: [n][k]real, I: [m](int, int), V: [m]real) = scatter_add(Z, I, V)";
    check(
        deep,
        &[
            json!({"Z": mat_of(2, 2, 0.1), "I": [[1.0, 2.0], [2.0, 0.0], [-1.0, 1.0], [1.0, 1.0]], "V": [1.0, 2.0, 3.0, 4.0]}),
        ],
    );
    for src in [
        "def f(i: int, j: int) = real(div(i, j))",
        "def f(i: int, j: int) = real(i % j)",
    ] {
        let msg = fails(src, &json!({"i": 7.0, "j": 0.0}));
        assert!(msg.contains("by zero"), "{msg}");
        fails(src, &json!({"i": 7.0, "j": -0.0}));
        check(src, &[json!({"i": 7.0, "j": 3.0})]);
    }
    // A constant zero divisor, in a map.
    fails(
        "def f(I: [m]int) = map (i. real(div(i, 0))) I",
        &json!({"I": [1.0]}),
    );
    check(
        "def f(I: [m]int) = map (i. real(div(i, 0))) I",
        &[json!({"I": []})],
    );
}

#[test]
fn the_checked_call_refuses_int_arguments_that_are_not_whole_or_disagree_with_their_size() {
    let (prog, func) = load("def f(n: int, x: real) = map (i. real(i) * x) (iota n)");
    let compiled = check_func(&prog.arena, &func, &json!({"n": 3.0, "x": 2.0}));
    assert_eq!(compiled.size_vars(), ["n"]);
    let call = |n: f64, size: u64| {
        let mut out = vec![0.0; size as usize];
        let mut ws = vec![0.0; compiled.workspace_len(&[size])];
        compiled.call(&[&[n], &[2.0]], &[size], &mut [&mut out], &mut ws)
    };
    assert!(call(3.0, 3).is_ok());
    assert!(call(-4.0, 0).is_ok());
    for (n, size) in [(2.5, 2), (3.0, 2), (-1.0, 1), (f64::NAN, 0), (1e300, 0)] {
        match call(n, size) {
            Err(JitError::Call(msg)) => assert!(msg.contains("`n`"), "{msg}"),
            other => panic!("n = {n}, size {size}: {other:?}"),
        }
    }
}

/// Programs that index, scatter into and iterate over arrays whose lengths the shape
/// analysis may get wrong (an `if` of arrays whose lengths differ at small sizes, shifts,
/// an `iota` whose length is only bounded).
const UNEVEN: [&str; 9] = [
    "def f(A: [n]real, I: [m]int, x: real) = (if x > 0 then A else scanl (a, b. a + b) 0 (shift1L A))[I[0] % 4]",
    "def f(A: [n]real, I: [m]int, x: real) = scatter_add(if x > 0 then A else scanl (a, b. a + b) 0 (shift1L A), I, map (i. real(i)) I)",
    "def f(A: [n]real, I: [m]int, x: real) = map (i. real(i) + A[i % 3]) (iota (len(I) + 2))",
    "def f(A: [n]real, I: [m]int, x: real) = (map2 (a, i. a * real(i)) (shift1L A) (iota (len(A) - 1)), shift1L (iota (len(I))))",
    "def f(A: [n]real, I: [m]int, x: real) = scatter_add(map (a. map (b. a * b) A) A, map (i. (i, i % 2)) I, map (i. real(i)) I)",
    "def f(A: [n]real, I: [m]int, x: real) = map (i. (if x > 0 then A else scanl (a, b. a + b) 0 (shift1L A))[i]) I",
    "def f(A: [n]real, I: [m]int, x: real) = if x > 0 then scatter_add(zeros_like(A), I, map (i. A[i % 2]) I) else scanl (a, b. a + b) 0 (shift1L A)",
    // Windows: in bounds by the sizes (no test), and one past (tested).
    "def f(A: [n]real, I: [m]int, x: real) = map (i. sum (map2 (j, k. A[i + j] * real(k)) (iota (len(I))) I)) (iota (len(A) - len(I) + 1))",
    "def f(A: [n]real, I: [m]int, x: real) = map (i. sum (map2 (j, k. A[i + j + 1] * real(k)) (iota (len(I))) I)) (iota (len(A) - len(I) + 1))",
];

/// Inputs for [`UNEVEN`]: `A` of 0 to 3 elements, positions in and out of bounds.
fn uneven_inputs() -> Vec<Json> {
    let mut all = Vec::new();
    for n in 0..4 {
        for x in [-1.0, 1.0] {
            for is in [vec![0.0], vec![2.0, 0.0], vec![-1.0, 1.0], vec![3.0]] {
                let a: Vec<f64> = (0..n).map(|i| i as f64 * 0.75 - 0.5).collect();
                all.push(json!({"A": a, "I": is, "x": x}));
            }
        }
    }
    all
}

#[test]
fn indices_stay_in_their_buffers_whatever_the_shape_analysis_says() {
    // Without a fault the native code agrees with the interpreter or both fail.
    for src in UNEVEN {
        let (prog, func) = load(src);
        let compiled = compile(&prog.arena, &func).unwrap_or_else(|e| panic!("{e}\n{src}"));
        for input in uneven_inputs() {
            let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
            let native = run_guarded(&prog.arena, &func, &compiled, &input).0;
            match (eval_func(&prog.arena, &func, &args), native) {
                (Err(_), Err(JitError::Check(_) | JitError::Stopped { .. })) | (Ok(_), Ok(_)) => {}
                (want, got) => panic!("{src} on {input}: interpreter {want:?}, native {got:?}"),
            }
        }
    }
    let mut ran = 0;
    for f in Fault::ALL {
        for src in UNEVEN {
            let (prog, func) = load(src);
            let Ok(compiled) = fault::with(f, || compile(&prog.arena, &func)) else {
                continue;
            };
            for input in uneven_inputs() {
                match run_guarded(&prog.arena, &func, &compiled, &input).0 {
                    Ok(_) => ran += 1,
                    Err(JitError::Check(_) | JitError::Stopped { .. }) => {}
                    Err(e) => panic!("{f:?}: {e}\n{src}"),
                }
            }
        }
    }
    assert!(ran > 100, "only {ran} calls ran");
}

/// A chain of `count` steps using an int parameter (`iota n`, indices), with an int
/// `let` crossing every cut (a value there, not a size variable).
fn long_chain_with_ints(count: usize) -> String {
    let mut src =
        String::from("def f(n: int, A: [k]real, x: real) = let m = n - 1 in let s0 = x * 1.01 in ");
    for j in 1..=count {
        let p = j - 1;
        src.push_str(&format!(
            "let s{j} = s{p} * 0.99 + A[{j} % len(A)] * real(m) + \
             sum(map (i. real(i) * s{p}) (iota n)) in "
        ));
    }
    src.push_str(&format!("map (i. real(i) * s{count} + real(m)) (iota n)"));
    src
}

#[test]
fn functions_compiled_in_parts_check_and_read_their_int_parameters() {
    // `iota m` with `m` crossing the cut: compiled whole.
    let src = long_chain_with_ints(400).replace("(iota n)) in", "(iota m)) in");
    let (mut prog, func) = load(&src);
    let compiled = unfad_jit::compile_parallel(&mut prog.arena, &func).unwrap();
    for n in [0.0, 3.0] {
        let input = json!({"n": n, "A": vec_of(3, 0.4), "x": 0.5});
        common::check_compiled(&prog.arena, &func, &compiled, &input);
    }
    for count in [40, 400] {
        let src = long_chain_with_ints(count);
        let (mut prog, func) = load(&src);
        let compiled =
            unfad_jit::compile_parallel(&mut prog.arena, &func).unwrap_or_else(|e| panic!("{e}"));
        assert!(compiled.parts() > 1, "{count} steps in one part");
        for n in [0.0, 1.0, 4.0] {
            let input = json!({"n": n, "A": vec_of(3, 0.4), "x": 0.5});
            common::check_compiled(&prog.arena, &func, &compiled, &input);
        }
    }
}

#[test]
fn indices_the_lengths_show_in_bounds_are_not_checked() {
    for (src, input) in [
        (
            "def f(A: [n]real) = map (i. A[i] * real(i)) (iota (len(A)))",
            json!({"A": vec_of(5, 0.3)}),
        ),
        (
            "def f(n: int, X: [n]real, Y: [n][k]real) = \
             sum(map (i. X[i] + sum(Y[i])) (iota n))",
            json!({"n": 3.0, "X": vec_of(3, 0.3), "Y": mat_of(3, 2, 0.1)}),
        ),
    ] {
        let (prog, func) = load(src);
        let compiled = check_func(&prog.arena, &func, &input);
        let sizes = common::native_arguments(&prog.arena, &func, &compiled, &input).1;
        assert_eq!(compiled.status_cell(&sizes), None, "{src}");
    }
    // Windows and stencils whose largest index the sizes show below the length: `i`
    // below `len(x) - len(w) + 1` and `j` below `len(w)`, so `i + j <= len(x) - 1`; the
    // same after `scatter_add` into the signal's adjoint (the gradient).
    let window = "def f(x: [n]real, w: [m]real) = \
                  sum(map (i. sum(map (j. x[i + j] * w[j]) (iota (len(w))))) \
                  (iota (len(x) - len(w) + 1)))";
    let stencil =
        "def f(x: [n]real) = map (i. x[i] - 2.0 * x[i + 1] + x[i + 2]) (iota (len(x) - 2))";
    for (src, inputs) in [
        (
            window,
            vec![
                json!({"x": vec_of(7, 0.3), "w": vec_of(3, 0.2)}),
                json!({"x": vec_of(3, 0.3), "w": vec_of(3, 0.2)}),
                json!({"x": vec_of(2, 0.3), "w": vec_of(3, 0.2)}),
                json!({"x": vec_of(4, 0.3), "w": vec_of(0, 0.2)}),
            ],
        ),
        (
            stencil,
            vec![json!({"x": vec_of(6, 0.3)}), json!({"x": vec_of(1, 0.3)})],
        ),
    ] {
        let (prog, func) = load(src);
        for input in &inputs {
            let compiled = check_func(&prog.arena, &func, input);
            let sizes = common::native_arguments(&prog.arena, &func, &compiled, input).1;
            assert_eq!(compiled.status_cell(&sizes), None, "{src}");
        }
    }
    let (prog, func) = common::gradient(window).unwrap();
    let input = json!({"x": vec_of(7, 0.3), "w": vec_of(3, 0.2)});
    let compiled = check_func(&prog.arena, &func, &input);
    let sizes = common::native_arguments(&prog.arena, &func, &compiled, &input).1;
    assert_eq!(
        compiled.status_cell(&sizes),
        None,
        "the gradient of {window}"
    );
    // A size whose formula holds a quotient, remainder, `min` or product of a difference
    // may exceed the length it seems to stay below (the atom may be negative): tested.
    for size in [
        "len(x) - div(len(a) - len(b), 2)",
        "len(x) - (len(a) - len(b)) % 3",
        "len(x) - min(len(a) - len(b), 0)",
        "len(x) - (len(a) - len(b)) * len(b)",
    ] {
        let input = json!({"x": [1.0, 2.0, 3.0], "a": [], "b": [1.0, 2.0, 3.0, 4.0]});
        let src =
            format!("def f(x: [n]real, a: [m]real, b: [p]real) = map (i. x[i]) (iota ({size}))");
        fails(&src, &input);
        let (prog, func) = common::gradient(&format!(
            "def f(x: [n]real, a: [m]real, b: [p]real) = sum(map (i. x[i]) (iota ({size})))"
        ))
        .unwrap();
        let compiled = compile(&prog.arena, &func).unwrap();
        match run_guarded(&prog.arena, &func, &compiled, &input).0 {
            Err(JitError::Stopped { .. }) => {}
            other => panic!("the gradient for {size}: expected a failed check, got {other:?}"),
        }
    }
    // One past the end: tested, and out of bounds for every signal that has a window.
    let src = window.replace("x[i + j]", "x[i + j + 1]");
    let (prog, func) = load(&src);
    let compiled = compile(&prog.arena, &func).unwrap();
    assert!(compiled.status_cell(&[3, 2, 2]).is_some());
    fails(&src, &json!({"x": vec_of(4, 0.3), "w": vec_of(2, 0.2)}));
    // An index computed from an iota's element is checked.
    let src = "def f(A: [n]real) = map (i. A[i + 1]) (iota (len(A)))";
    let (prog, func) = load(src);
    let compiled = compile(&prog.arena, &func).unwrap();
    assert!(compiled.status_cell(&[2]).is_some());
    fails(src, &json!({"A": [1.0, 2.0]}));
}

/// A whole number of a random magnitude (up to 2^53) and sign, never 0 if `nonzero`.
fn random_int(rng: &mut common::Rng, nonzero: bool) -> f64 {
    let bits = rng.below(54);
    let x = (rng.next() >> (64 - bits.max(1))) as f64;
    let x = if nonzero && x == 0.0 { 1.0 } else { x };
    if rng.below(2) == 0 {
        -x
    } else {
        x
    }
}

#[test]
fn int_division_and_remainder_equal_the_interpreter_bit_for_bit() {
    let src = "def f(I: [m]int, J: [m]int) = \
               (map2 (i, j. real(i % j)) I J, map2 (i, j. real(div(i, j))) I J)";
    let mut rng = common::Rng(0x5eed_1275);
    let mut inputs = Vec::new();
    for _ in 0..20 {
        let mut is = Vec::new();
        let mut js = Vec::new();
        for _ in 0..200 {
            is.push(random_int(&mut rng, false));
            js.push(random_int(&mut rng, true));
        }
        // Edges: the largest ints, exact multiples, a divisor of 1 and -1.
        is.extend([
            9007199254740992.0,
            -9007199254740992.0,
            12.0,
            -12.0,
            0.0,
            7.0,
        ]);
        js.extend([3.0, -9007199254740991.0, 4.0, 4.0, -5.0, -1.0]);
        inputs.push(json!({"I": is, "J": js}));
    }
    check(src, &inputs);
}

/// Differences, small multiples and comparisons of `iota` elements are computed as
/// integers (no conversion to a real and back, no test that the index is whole), and
/// still agree with the interpreter, out-of-bounds reads included.
#[test]
fn index_differences_multiples_and_comparisons_are_integers() {
    let src = "def f(x: [n]real) = map (i. if i == 0 then x[0] else x[i] * x[i - 1]) \
               (iota len(x))";
    check(
        src,
        &[
            json!({"x": []}),
            json!({"x": [2.0]}),
            json!({"x": vec_of(7, 0.3)}),
        ],
    );
    let (prog, func) = load(src);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    assert!(!text.contains("fcvt_to_sint"), "{text}");
    assert!(!text.contains("fcmp"), "{text}");
    // Gates cut out of one vector, `w[2 * b + i]`, and comparisons of every kind.
    let src = "def f(w: [m]real, b: int) = (map (i. w[2 * b + i] + w[i * 3]) (iota b), \
               map (i. if i < 2 then 1.0 else if i >= b - 1 then 2.0 else if i != 3 then \
               3.0 else if i <= 4 then 4.0 else 5.0) (iota b), \
               map (i. if i > b - i then real(i - b) else real(2 * i - 1)) (iota b))";
    check(
        src,
        &[
            json!({"w": vec_of(12, 0.7), "b": 4.0}),
            json!({"w": vec_of(12, 0.7), "b": 0.0}),
            json!({"w": vec_of(3, 0.7), "b": 1.0}),
        ],
    );
    // `x[i - 1]` at `i = 0` and `x[2 * i + 1]` past the end are errors of the call.
    fails(
        "def f(x: [n]real) = map (i. x[i - 1]) (iota len(x))",
        &json!({"x": vec_of(3, 0.2)}),
    );
    fails(
        "def f(x: [n]real) = map (i. x[2 * i + 1]) (iota len(x))",
        &json!({"x": vec_of(3, 0.2)}),
    );
}

/// A division by a power of two is a multiplication by its inverse, bit for bit with the
/// interpreter's division: overflowing, subnormal, zero, infinite and NaN quotients.
#[test]
fn division_by_a_power_of_two_is_a_multiplication_bit_for_bit() {
    let src = "def f(x: [n]real) = map (v. (v / 2.0, v / 0.5, v / -4.0, v / 1024.0, \
               (v * 1e308) / 0.25, (v / 1e308) / 2.0, (v / 1e300) / 8.98846567431158e307, \
               (0.0 * v / v) / 2.0, v / 3.0, v / 0.0)) x";
    check(
        src,
        &[json!({"x": [0.0, -0.0, 1.0, -3.5, 1e-310, 5e-324, 1.7e308, 0.1, 7.0]})],
    );
    let (prog, func) = load("def f(x: real) = x / 2.0 + x / 0.125");
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    assert!(!text.contains("fdiv"), "{text}");
}

/// A map over an `iota` whose body compares the element with a small constant (`if i == 0`,
/// a boundary treated apart) runs its first iterations apart, and the rest without the
/// comparison; every length, shorter than the part run apart included, agrees with the
/// interpreter, and reads at `i - 1` past the split are not tested.
#[test]
fn maps_split_where_their_index_passes_a_constant() {
    let programs = [
        "def f(x: [n]real, y: [n]real) = \
         map (i. if i == 0 then x[0] else x[i] * y[i - 1]) (iota len(x))",
        "def f(x: [n]real, y: [n]real) = \
         map (i. if 2 > i then y[i] else if i <= 2 then 0.5 else x[i] + x[i - 3]) (iota len(x))",
        "def f(x: [n]real, y: [n]real) = \
         map2 (i, v. if i != 1 && i >= 0 then v * real(i) else -v) (iota len(x)) y",
        "def f(x: [n]real, y: [n]real) = \
         (map (i. if i < 0 then 1.0 else if real(i) == 2.5 then 2.0 else if 3 == i then 0.25 else real(i - 1)) (iota len(x)), \
          map (i. map (j. if j == 0 then x[i] else y[j - 1] * x[i]) (iota len(y))) (iota len(x)))",
    ];
    for src in programs {
        let inputs: Vec<Json> = (0..8)
            .map(|n| json!({"x": vec_of(n, 0.3), "y": vec_of(n, 0.7)}))
            .collect();
        check(src, &inputs);
    }
    // Their gradients: the adjoints of `y[i - 1]` are added in place by a fold over the
    // elements zipped with their index, split the same way.
    for src in [
        "def f(x: [n]real, y: [n]real) = \
         sum(map (i. if i == 0 then x[0] else x[i] * y[i - 1]) (iota len(x)))",
        "def f(x: [n]real, y: [n]real) = sum(map (i. if i < 2 then x[i] * x[i] else \
         x[i] * (y[i - 1] + y[i - 2])) (iota len(x)))",
    ] {
        let inputs: Vec<Json> = (0..7)
            .map(|n| json!({"x": vec_of(n, 0.3), "y": vec_of(n, 0.7)}))
            .collect();
        assert!(common::check_gradient(src, &inputs), "{src}");
    }
    // Past the first element, `y[i - 1]` is in bounds: only the first iteration tests.
    let (prog, func) = load(programs[0]);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    let tests = text.matches(" cold").count();
    assert!(tests <= 4, "{tests} tests: {text}");
}

/// An `iota` whose length's formula reads a shifted array's length is laid out by that
/// formula only with a check: at an empty array the shift's length saturates at 0 where
/// the formula (`n - 1`) goes below, and the native code stops with an error saying so
/// rather than return an array of the formula's length (it returned `0` here, where the
/// length is 1). Beyond, it agrees with the interpreter.
#[test]
fn an_iota_of_a_shifted_length_is_checked_against_its_formula() {
    let src = "def f(x: [n]real, w: [m]real) = \
               sum(map (i. real(i) + 1) (iota (len(shift1L x) - len(w) + 1)))";
    check(
        src,
        &[
            json!({"x": vec_of(5, 0.3), "w": vec_of(2, 0.1)}),
            json!({"x": vec_of(1, 0.3), "w": []}),
        ],
    );
    let (prog, func) = load(src);
    let compiled = compile(&prog.arena, &func).unwrap();
    match run_guarded(&prog.arena, &func, &compiled, &json!({"x": [], "w": []})).0 {
        Err(JitError::Stopped { why, at }) => {
            assert!(at.is_some() && why.contains("shifted array"), "{why}");
        }
        other => panic!("expected a failed check, got {other:?}"),
    }
}
