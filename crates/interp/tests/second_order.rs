//! The second-order oracles (`jvp`, `hvp`, `hessian`, `fd_hvp`) on small programs, against
//! hand-derived derivatives and against each other.

use serde_json::json;
use unfad_interp::{
    args_from_json, directional_derivative, eval_func, fd_hvp, forward_gradient, hessian, hvp, jvp,
    value_to_json, Value,
};
use unfad_syntax::{Arena, Func};
use unfad_test_support::{close, close_json, load};

fn args(arena: &Arena, func: &Func, input: serde_json::Value) -> Vec<Value<f64>> {
    args_from_json::<f64>(arena, func, &input).unwrap().0
}

fn assert_all_close(got: &[f64], want: &[f64], tolerance: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            close(*g, *w, tolerance),
            "{what}: got {got:?}, want {want:?}"
        );
    }
}

/// `H v` for a dense `H`.
fn times(h: &[Vec<f64>], v: &[f64]) -> Vec<f64> {
    h.iter()
        .map(|row| row.iter().zip(v).map(|(a, b)| a * b).sum())
        .collect()
}

#[test]
fn hessian_of_a_scalar_program_is_the_hand_derived_one() {
    // f = x² y + y² sin x
    let (prog, func) = load("def f(x: real, y: real) = x * x * y + y * y * sin(x)");
    let (x, y) = (0.8f64, -1.3f64);
    let a = args(&prog.arena, &func, json!({"x": x, "y": y}));
    let (value, gradient, h) = hessian(&prog.arena, &func, &a).unwrap();
    assert!(close(value, x * x * y + y * y * x.sin(), 1e-14));
    assert_all_close(
        &gradient.concat(),
        &[2.0 * x * y + y * y * x.cos(), x * x + 2.0 * y * x.sin()],
        1e-13,
        "gradient",
    );
    let mixed = 2.0 * x + 2.0 * y * x.cos();
    assert_all_close(&h[0], &[2.0 * y - y * y * x.sin(), mixed], 1e-13, "row 0");
    assert_all_close(&h[1], &[mixed, 2.0 * x.sin()], 1e-13, "row 1");
    // The gradient is forward mode's, bit for bit.
    let (_, forward) = forward_gradient(&prog.arena, &func, &a).unwrap();
    assert_eq!(gradient, forward);
}

#[test]
fn hessian_of_array_programs_is_the_hand_derived_one() {
    // Σ a³ has the diagonal Hessian 6a; prod over three elements has, off the diagonal,
    // the product of the third element.
    let (prog, func) = load("def f(A: [n]real) = sum(map (a. a * a * a) A) + prod(A)");
    let xs = [1.5, -0.5, 2.0];
    let a = args(&prog.arena, &func, json!({ "A": xs }));
    let (value, gradient, h) = hessian(&prog.arena, &func, &a).unwrap();
    assert_eq!(value, 1.5f64.powi(3) - 0.125 + 8.0 - 1.5);
    let want_gradient: Vec<f64> = (0..3)
        .map(|i| 3.0 * xs[i] * xs[i] + (0..3).filter(|&k| k != i).map(|k| xs[k]).product::<f64>())
        .collect();
    assert_all_close(&gradient[0], &want_gradient, 1e-14, "gradient");
    for i in 0..3 {
        let want: Vec<f64> = (0..3)
            .map(|j| if i == j { 6.0 * xs[i] } else { xs[3 - i - j] })
            .collect();
        assert_all_close(&h[i], &want, 1e-14, &format!("row {i}"));
    }
}

#[test]
fn int_parameters_and_tuples_have_no_row() {
    // The Hessian is over the real leaves only: p.0, p.1 and w (k is an int); the gradient
    // keeps every leaf, with 0 for the int.
    let src =
        "def f(k: int, p: (real, real), w: real) = let (a, b) = p in a * b * real(k) + w * w * a";
    let (prog, func) = load(src);
    let (a, b, w) = (0.5, 2.0, -3.0);
    let input = args(&prog.arena, &func, json!({"k": 3, "p": [a, b], "w": w}));
    let (_, gradient, h) = hessian(&prog.arena, &func, &input).unwrap();
    assert_eq!(
        gradient,
        vec![vec![0.0], vec![3.0 * b + w * w, 3.0 * a], vec![2.0 * w * a]]
    );
    assert_eq!(
        h,
        vec![
            vec![0.0, 3.0, 2.0 * w],
            vec![3.0, 0.0, 0.0],
            vec![2.0 * w, 0.0, 2.0 * a]
        ]
    );
    // The direction of an int leaf is ignored; hvp is laid out like the gradient.
    let direction = args(
        &prog.arena,
        &func,
        json!({"k": 100, "p": [1.0, 0.0], "w": 2.0}),
    );
    let (_, _, product) = hvp(&prog.arena, &func, &input, &direction).unwrap();
    assert_eq!(
        product,
        vec![vec![0.0], vec![4.0 * w, 3.0], vec![2.0 * w + 4.0 * a]]
    );
}

/// A program mixing most operators, with its input and a direction.
const MIXED: &str = "def f(A: [n]real, p: (real, real), w: real) =
    let (s, t) = p in
    let B = map (a. exp(a * s) / (1 + a * a) + pow(t, a + 2)) A in
    log(1 + dot(B, B)) * atan2(w, t) + sum(map (b. sqrt(b * b + w * w)) B) * sinh(s) / cosh(w)";

fn mixed_input() -> serde_json::Value {
    json!({"A": [0.3, -0.8, 1.1], "p": [0.45, 1.7], "w": -0.6})
}

#[test]
fn the_hessian_is_symmetric_and_hvp_is_hessian_times_direction() {
    let (prog, func) = load(MIXED);
    let a = args(&prog.arena, &func, mixed_input());
    let (value, gradient, h) = hessian(&prog.arena, &func, &a).unwrap();
    let n = h.len();
    assert_eq!(n, 6);
    for (i, row) in h.iter().enumerate() {
        assert_eq!(row.len(), n);
        for (j, entry) in row.iter().enumerate() {
            assert!(
                close(*entry, h[j][i], 1e-12),
                "H[{i}][{j}] = {entry} but H[{j}][{i}] = {}",
                h[j][i]
            );
        }
    }
    // Not trivially symmetric: the mixed partials are there.
    assert!(h[0][3] != 0.0 && h[4][5] != 0.0 && h[2][5] != 0.0, "{h:?}");
    let direction = args(
        &prog.arena,
        &func,
        json!({"A": [1.0, -2.0, 0.5], "p": [0.25, -1.0], "w": 3.0}),
    );
    let flat_direction: Vec<f64> = direction.iter().flat_map(|d| d.leaves()).collect();
    let (hvp_value, hvp_gradient, product) = hvp(&prog.arena, &func, &a, &direction).unwrap();
    assert_eq!(hvp_value, value);
    assert_eq!(hvp_gradient, gradient);
    assert_all_close(
        &product.concat(),
        &times(&h, &flat_direction),
        1e-12,
        "hvp against H v",
    );
    // The value is the interpreter's.
    let plain = eval_func(&prog.arena, &func, &a).unwrap();
    assert_eq!(plain.as_real(), Some(value));
}

/// `hvp` against `fd_hvp` on `src` at `input` in `direction`.
fn agrees_with_finite_differences(
    src: &str,
    input: serde_json::Value,
    direction: serde_json::Value,
) {
    let (prog, func) = load(src);
    let a = args(&prog.arena, &func, input);
    let d = args(&prog.arena, &func, direction);
    let (_, _, product) = hvp(&prog.arena, &func, &a, &d).unwrap();
    let fd = fd_hvp(&prog.arena, &func, &a, &d, 1e-5).unwrap();
    assert_eq!(product.len(), fd.len());
    let (exact, approx) = (product.concat(), fd.concat());
    assert!(
        exact.iter().any(|x| x.abs() > 1e-3),
        "a trivial test: {exact:?}"
    );
    assert_all_close(&exact, &approx, 1e-6, src);
}

#[test]
fn hvp_agrees_with_finite_differences_of_gradients() {
    agrees_with_finite_differences(
        "def f(A: [n]real, w: real) = reduce + 0 (map (a. sin(a * w) * a) A) + log(1 + dot(A, A))",
        json!({"A": [0.3, -1.2, 2.0, 0.7], "w": 0.9}),
        json!({"A": [1.0, 0.5, -0.25, 2.0], "w": -1.0}),
    );
    agrees_with_finite_differences(
        "def f(xs: [n]real, w: real, u: real) = foldl (h, x. tanh(w * h + u * x)) 0.5 xs",
        json!({"xs": [0.3, -1.2, 2.0, 0.7, 0.1], "w": 0.8, "u": -0.6}),
        json!({"xs": [1.0, 0.0, -1.0, 0.5, 2.0], "w": 0.3, "u": 1.0}),
    );
    agrees_with_finite_differences(
        "def f(A: [n]real, B: [n]real) =
           sum(map2 (a, b. if a > b then a * a * b else max(a, 0.2) * exp(b)) A B)",
        json!({"A": [0.3, -1.2, 2.0, 0.7], "B": [0.1, 0.4, -0.5, 1.5]}),
        json!({"A": [1.0, 0.5, -0.25, 2.0], "B": [0.3, -1.0, 1.0, 0.2]}),
    );
    agrees_with_finite_differences(
        MIXED,
        mixed_input(),
        json!({"A": [1.0, -2.0, 0.5], "p": [0.25, -1.0], "w": 3.0}),
    );
}

#[test]
fn jvp_of_array_and_tuple_results() {
    // (map (a. a * a * w) A, (w * w, n + 1)): the tangent has the result's shape, and the
    // int leaf n + 1 gets tangent 0 even though n's tangent is not.
    let src = "def f(n: int, A: [n]real, w: real) = (map (a. a * a * w) A, (w * w, n + 1))";
    let (prog, func) = load(src);
    let a = args(
        &prog.arena,
        &func,
        json!({"n": 2, "A": [1.5, -2.0], "w": 3.0}),
    );
    let t = args(
        &prog.arena,
        &func,
        json!({"n": 2, "A": [1.0, 0.5], "w": -1.0}),
    );
    let (value, tangent) = jvp(&prog.arena, &func, &a, &t).unwrap();
    assert_eq!(value_to_json(&value), json!([[6.75, 12.0], [9.0, 3.0]]));
    // d(a² w) = 2 a w da + a² dw; d(w²) = 2 w dw.
    let want = json!([
        [2.0 * 1.5 * 3.0 * 1.0 - 2.25, 2.0 * -2.0 * 3.0 * 0.5 - 4.0],
        [-6.0, 0.0]
    ]);
    assert!(
        close_json(&value_to_json(&tangent), &want, 1e-14),
        "{tangent} vs {want}"
    );
    // On a real result it is the directional derivative.
    let (prog, func) = load(MIXED);
    let a = args(&prog.arena, &func, mixed_input());
    let t = args(
        &prog.arena,
        &func,
        json!({"A": [0.5, 1.0, -1.0], "p": [2.0, 0.1], "w": 0.7}),
    );
    let (value, tangent) = jvp(&prog.arena, &func, &a, &t).unwrap();
    let flat: Vec<Vec<f64>> = t.iter().map(|v| v.leaves()).collect();
    let want = directional_derivative(&prog.arena, &func, &a, &flat).unwrap();
    assert_eq!(tangent.as_real(), Some(want));
    assert_eq!(
        value.as_real(),
        eval_func(&prog.arena, &func, &a).unwrap().as_real()
    );
}

#[test]
fn tangents_and_directions_of_another_shape_are_errors_naming_the_parameter() {
    let (prog, func) = load("def f(A: [n]real, w: real) = sum(A) * w");
    let a = args(&prog.arena, &func, json!({"A": [1.0, 2.0], "w": 3.0}));
    let short = vec![Value::array(vec![Value::Real(1.0)]), Value::Real(1.0)];
    let e = jvp(&prog.arena, &func, &a, &short).unwrap_err();
    assert!(e.0.contains("tangent of parameter `A`"), "{e}");
    let tuple_for_real = vec![
        Value::array(vec![Value::Real(1.0), Value::Real(0.0)]),
        Value::tuple(vec![Value::Real(1.0), Value::Real(0.0)]),
    ];
    let e = hvp(&prog.arena, &func, &a, &tuple_for_real).unwrap_err();
    assert!(e.0.contains("direction of parameter `w`"), "{e}");
    let e = fd_hvp(&prog.arena, &func, &a, &tuple_for_real[..1], 1e-5).unwrap_err();
    assert!(e.0.contains("1 direction(s) for 2 parameter(s)"), "{e}");
}
