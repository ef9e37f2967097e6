//! The interpreter against hand-computed values.

use serde_json::json;
use unfad_interp::{
    args_from_json, eval_func, fd_gradient, forward_gradient, value_to_json, Value,
};
use unfad_test_support::load;

/// Evaluate the entry point of `src` on the JSON `input`; the result as JSON.
fn run(src: &str, input: serde_json::Value) -> serde_json::Value {
    let (prog, func) = load(src);
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    value_to_json(&eval_func(&prog.arena, &func, &args).unwrap())
}

#[test]
fn scalars_lets_and_tuples() {
    let src = "def f(x1: real, x2: real, x3: real) = let w1 = x1 * x2 in let w2 = w1 * x1 in w2";
    assert_eq!(run(src, json!({"x1": 2, "x2": 3, "x3": 5})), json!(12.0));
    let src = "def f(p: (real, real)) = let (a, b) = p in (b, a * 2, fst p)";
    assert_eq!(run(src, json!({"p": [1.5, 4]})), json!([4.0, 3.0, 1.5]));
}

#[test]
fn prelude_and_array_operations() {
    let src = "def f(A: [n]real, B: [n]real) = (sum(A), prod(A), dot(A, B))";
    assert_eq!(
        run(src, json!({"A": [1, 2, 3], "B": [4, 5, 6]})),
        json!([6.0, 6.0, 32.0])
    );
    assert_eq!(run(src, json!({"A": [], "B": []})), json!([0.0, 1.0, 0.0]));
}

#[test]
fn scans_and_shifts_including_empty_arrays() {
    let src = "def f(A: [n]real) = (scanl + 0 A, scanr * 1 A, shift1L A, shift1R A)";
    assert_eq!(
        run(src, json!({"A": [2, 3, 4]})),
        json!([
            [0.0, 2.0, 5.0, 9.0],
            [24.0, 12.0, 4.0, 1.0],
            [3.0, 4.0],
            [2.0, 3.0]
        ])
    );
    assert_eq!(run(src, json!({"A": []})), json!([[0.0], [1.0], [], []]));
    // scanr passes the element first and the accumulator second.
    let src = "def f(A: [n]real) = scanr (x, acc. x - acc) 0 A";
    assert_eq!(
        run(src, json!({"A": [1, 2, 3]})),
        json!([2.0, -1.0, 3.0, 0.0])
    );
}

#[test]
fn paper_prod_gradient_closed_form_including_n_0() {
    // The paper's gradient of prod: each element's product of all the others.
    let src = "def g(A: [n]real) = map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))";
    assert_eq!(run(src, json!({"A": [2, 3, 4]})), json!([12.0, 8.0, 6.0]));
    assert_eq!(run(src, json!({"A": [5]})), json!([1.0]));
    // At n = 0 the two operands have run-time lengths 1 and 0: map2 takes the shorter.
    assert_eq!(run(src, json!({"A": []})), json!([]));
}

#[test]
fn folds_maps_nested_arrays_and_free_variables() {
    let src = "def f(M: [n][m]real, w: real) = map (row. foldl (acc, x. acc * w + x) 0 row) M";
    assert_eq!(
        run(src, json!({"M": [[1, 2], [3, 4]], "w": 10})),
        json!([12.0, 34.0])
    );
    let src = "def f(P: [n](real, real)) = map (p. snd p - fst p) P";
    assert_eq!(run(src, json!({"P": [[1, 5], [2, 3]]})), json!([4.0, 1.0]));
}

#[test]
fn conditionals_and_closures() {
    let src = "def f(x: real) = if x > 0 && x < 10 then x * 2 else -x";
    assert_eq!(run(src, json!({"x": 3})), json!(6.0));
    assert_eq!(run(src, json!({"x": 30})), json!(-30.0));
    // A closure captures `k` when it is made, not when it is applied.
    let src = "def f(x: real) =
                 let k = x * 2 in
                 let g = fun (y: real) -> y + k in
                 let h = fun (G: (real) -> real, z: real) -> G(G(z)) in
                 h(g, 1)";
    assert_eq!(run(src, json!({"x": 3})), json!(13.0));
}

#[test]
fn ieee_values_never_crash() {
    let src = "def f(x: real) = (log(x), sqrt(x), 1 / (x + 1), pow(x, 0.5))";
    assert_eq!(
        run(src, json!({"x": -1})),
        json!(["NaN", "NaN", "Infinity", "NaN"])
    );
}

#[test]
fn input_errors_name_the_parameter_and_both_sizes() {
    let (prog, func) = load("def f(A: [n]real, B: [n]real, M: [2][k]real) = 0");
    let err = |input: serde_json::Value| {
        args_from_json::<f64>(&prog.arena, &func, &input)
            .unwrap_err()
            .to_string()
    };
    let m = json!([[1], [2]]);
    assert_eq!(
        err(json!({"A": [1, 2], "B": [1, 2, 3], "M": m})),
        "parameter `B`: size `n` is 3 here (an array of 3 elements for `n`), but 2 from parameter `A`"
    );
    assert_eq!(
        err(json!({"A": [1], "B": [1], "M": [[1]]})),
        "parameter `M`: expected 2 elements (type `[2][k]real`), found 1"
    );
    assert_eq!(
        err(json!({"A": [1], "B": [1], "M": [[1], [2, 3]]})),
        "parameter `M`: size `k` is 2 here (an array of 2 elements for `k`), but 1 from parameter `M`"
    );
    assert_eq!(
        err(json!({"A": 1, "B": [1], "M": m})),
        "parameter `A`: expected an array of type `[n]real`, found the number 1"
    );
    assert_eq!(
        err(json!({"A": [1], "M": m})),
        "the input has no value for parameter `B` (type `[n]real`)"
    );
    assert_eq!(
        err(json!({"A": [1], "B": [1], "M": m, "C": 1})),
        "the input has `C`, which is not a parameter of `f` (its parameters: A, B, M)"
    );
    assert_eq!(err(json!([1])), "the input must be a JSON object from parameter name to value, found an array of 1 elements");
    assert_eq!(
        err(json!({"A": ["x"], "B": [1], "M": m})),
        "parameter `A[0]` (type `real`): expected a number, found the string \"x\""
    );
    assert_eq!(
        err(json!({"A": [1], "B": [1], "M": [[1, 2], [3, null]]})),
        "parameter `M[1][1]` (type `real`): expected a number, found null"
    );
}

#[test]
fn long_arrays_and_deep_let_chains() {
    let src = "def f(A: [n]real) = reduce + 0 (map (x. x * 2) (scanl + 0 A))";
    let a = vec![1.0; 1_000_000];
    let out = run(src, json!({ "A": a }));
    let n = 1_000_000f64;
    assert_eq!(out, json!(n * (n + 1.0)));

    let mut src = String::from("def f(x: real) =\n");
    for i in 0..100_000 {
        src.push_str(&format!(
            "let x{} = {} + 1 in\n",
            i + 1,
            if i == 0 {
                "x".to_string()
            } else {
                format!("x{i}")
            }
        ));
    }
    src.push_str("x100000");
    assert_eq!(run(&src, json!({"x": 0.5})), json!(100_000.5));
}

#[test]
fn forward_mode_agrees_with_finite_differences() {
    let src = "def f(A: [n]real, w: real) =
                 let B = map (a. sin(a) * w + exp(a / 4)) A in
                 log(reduce + 1 (map2 * B B)) + pow(w, 3) / (1 + sigmoid(w)) + max(w, 0.3) * tanh(w)";
    let (prog, func) = load(src);
    let args = vec![
        Value::array(vec![Value::Real(0.3), Value::Real(-1.2), Value::Real(2.0)]),
        Value::Real(0.7),
    ];
    let (_, fwd) = forward_gradient(&prog.arena, &func, &args).unwrap();
    let fd = fd_gradient(&prog.arena, &func, &args, 1e-6).unwrap();
    for (g, h) in fwd.iter().flatten().zip(fd.iter().flatten()) {
        assert!(
            (g - h).abs() <= 1e-7 * (1.0 + g.abs()),
            "forward {g} vs finite differences {h}"
        );
    }
}

#[test]
fn long_chains_of_continuations() {
    // Each continuation captures the previous one, as reverse mode's output does, and the
    // chain is built inside a binding: at the end only `G` holds it, so dropping `G` drops
    // the whole chain.
    let mut src = String::from("def f(x: real) =\n  let G =\n    let Y0 = fun (a: real) -> a in\n");
    for i in 1..=20_000 {
        src.push_str(&format!(
            "    let Y{i} = fun (a: real) -> Y{}(a + 1) in\n",
            i - 1
        ));
    }
    src.push_str("    Y20000\n  in\n  G(x)");
    assert_eq!(run(&src, json!({"x": 0.5})), json!(20_000.5));
}
