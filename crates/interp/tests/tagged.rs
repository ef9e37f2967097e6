//! `grad` and `jvp` inside programs, evaluated by the interpreter with tagged dual numbers:
//! the classic perturbation-confusion counterexample, derivatives of derivatives, `jvp` of a
//! gradient against the nested-dual Hessian-vector product, parameters of every kind, and
//! the tagged gradient of programs holding `grad` against finite differences.

use serde_json::json;
use unfad_interp::{
    args_from_json, eval_func, eval_with_derivatives, forward_gradient, gradient_with_derivatives,
    hvp, value_to_json, Dual, Scalar, Tagged, Value,
};
use unfad_syntax::{Arena, BinOp, Func, UnOp};
use unfad_test_support::{close, close_json, load};

fn args(arena: &Arena, func: &Func, input: serde_json::Value) -> Vec<Value<f64>> {
    args_from_json::<f64>(arena, func, &input).unwrap().0
}

/// The entry point of `src` evaluated with tagged dual numbers at `input`, as JSON.
fn run(src: &str, input: serde_json::Value) -> serde_json::Value {
    let (prog, func) = load(src);
    let a = args(&prog.arena, &func, input);
    let v = eval_with_derivatives(&prog.arena, &func, &a).unwrap_or_else(|e| panic!("{e}"));
    value_to_json(&v)
}

fn assert_close_json(got: &serde_json::Value, want: &serde_json::Value, tolerance: f64) {
    assert!(close_json(got, want, tolerance), "got {got}, want {want}");
}

const CONFUSION: &str = "
def inner(x: real, y: real) = x + y
def outer(x: real) = x * grad(inner, 1)(x, x)
def main(x: real) = grad(outer)(x)
";

#[test]
fn nested_derivatives_do_not_confuse_their_perturbations() {
    // d/dx (x * d/dy (x + y)) = d/dx (x * 1) = 1; a single untagged perturbation would
    // count the outer one as the inner's and give 2.
    for x in [0.0, 1.0, -2.5, 7.0] {
        assert_eq!(run(CONFUSION, json!({ "x": x })), json!(1.0), "at x = {x}");
    }
}

#[test]
fn second_and_third_derivatives_by_nested_grad() {
    let src = "
def f(x: real) = x * x * x + sin(x)
def g(x: real) = grad(f)(x)
def h(x: real) = grad(g)(x)
def k(x: real) = grad(h)(x)
";
    for x in [0.3f64, -1.7, 2.0] {
        let at = |name: &str| {
            let mut prog = load(src).0;
            let entry = prog.entry(Some(name)).unwrap();
            let func = prog.inline(entry).unwrap();
            let v = eval_with_derivatives(&prog.arena, &func, &[Value::Real(x)]).unwrap();
            v.as_real().unwrap()
        };
        assert!(close(at("g"), 3.0 * x * x + x.cos(), 1e-14));
        assert!(close(at("h"), 6.0 * x - x.sin(), 1e-14));
        assert!(close(at("k"), 6.0 - x.cos(), 1e-14));
    }
}

#[test]
fn jvp_of_a_gradient_is_the_hessian_vector_product() {
    let f = "def f(A: [n]real) = sum(map (a. a * a * a) A) + prod(A) * sin(A[0])";
    let src = format!(
        "{f}\ndef main(A: [n]real, V: [n]real) = jvp(fun (x: [n]real) -> grad(f)(x))(A, V)"
    );
    let (a, v) = (json!([1.5, -0.5, 2.0, 0.7]), json!([0.3, 1.0, -2.0, 0.5]));
    let got = run(&src, json!({ "A": a, "V": v }));
    let (fprog, ffunc) = load(f);
    let point = args(&fprog.arena, &ffunc, json!({ "A": a }));
    let direction = args(&fprog.arena, &ffunc, json!({ "A": v }));
    let (_, gradient, product) = hvp(&fprog.arena, &ffunc, &point, &direction).unwrap();
    assert_close_json(&got, &json!([gradient[0], product[0]]), 1e-13);
}

#[test]
fn grad_with_respect_to_one_parameter_or_all() {
    let f = "def f(x: real, y: real) = x * x * y + exp(y)";
    let (x, y) = (1.5f64, -0.5f64);
    let one = run(
        &format!("{f}\ndef main(x: real, y: real) = grad(f, 1)(x, y)"),
        json!({ "x": x, "y": y }),
    );
    assert_close_json(&one, &json!(x * x + y.exp()), 1e-15);
    let first = run(
        &format!("{f}\ndef main(x: real, y: real) = grad(f, 0)(x, y)"),
        json!({ "x": x, "y": y }),
    );
    assert_close_json(&first, &json!(2.0 * x * y), 1e-15);
    let all = run(
        &format!("{f}\ndef main(x: real, y: real) = grad(f)(x, y)"),
        json!({ "x": x, "y": y }),
    );
    assert_close_json(&all, &json!([2.0 * x * y, x * x + y.exp()]), 1e-15);
}

#[test]
fn gradients_are_shaped_like_tuple_and_array_parameters() {
    let src = "
def f(p: (real, real), A: [n][2]real) = p.0 * sum(map (r. r[0] * r[1]) A) + p.1 * A[1][0]
def main(p: (real, real), A: [n][2]real) = grad(f)(p, A)
";
    let got = run(
        src,
        json!({ "p": [2.0, 3.0], "A": [[1.0, 4.0], [5.0, -1.0]] }),
    );
    // d/dp = (Σ r0 r1, A[1][0]) = (4 - 5, 5); d/dA[i][j] = p0 · the other element, plus p1
    // at [1][0].
    let want = json!([[-1.0, 5.0], [[8.0, 2.0], [-2.0 + 3.0, 10.0]]]);
    assert_close_json(&got, &want, 1e-15);
}

#[test]
fn ints_are_parameters_without_gradient() {
    // The int parameter `k` is left out of the tuple of gradients; the int inside the
    // tuple parameter gets a gradient of 0.
    let src = "
def f(k: int, q: (int, real), A: [n]real) = real(k) * q.1 * sum(A) + real(q.0) * A[k]
def main(k: int, q: (int, real), A: [n]real) = grad(f)(k, q, A)
";
    let got = run(src, json!({ "k": 1, "q": [4, 0.5], "A": [1.0, 2.0, 3.0] }));
    let want = json!([[0, 6.0], [0.5, 0.5 + 4.0, 0.5]]);
    assert_close_json(&got, &want, 1e-15);
    // With respect to the int-holding tuple alone.
    let src = src.replace("grad(f)", "grad(f, 1)");
    let got = run(&src, json!({ "k": 1, "q": [4, 0.5], "A": [1.0, 2.0, 3.0] }));
    assert_close_json(&got, &json!([0, 6.0]), 1e-15);
}

#[test]
fn jvp_of_functions_returning_arrays_and_tuples() {
    let src = "
def f(x: real, A: [n]real) = (x * x, (map (a. a * x) A, len(A) - 1))
def main(x: real, A: [n]real, dx: real, dA: [n]real) = jvp(f)((x, A), (dx, dA))
";
    let (x, dx) = (1.5f64, 0.25f64);
    let (a, da) = ([1.0, -2.0], [0.5, 3.0]);
    let got = run(src, json!({ "x": x, "A": a, "dx": dx, "dA": da }));
    let value = json!([x * x, [[a[0] * x, a[1] * x], 1]]);
    let tangent = json!([
        2.0 * x * dx,
        [[da[0] * x + a[0] * dx, da[1] * x + a[1] * dx], 0.0]
    ]);
    assert_close_json(&got, &json!([value, tangent]), 1e-15);
    // An int parameter returned as it is: its tangent is a real 0, whatever the tangent
    // given for it.
    let src = "
def f(k: int, x: real) = (k, x * real(k))
def main(k: int, x: real, dk: real, dx: real) = jvp(f)((k, x), (dk, dx))
";
    let got = run(src, json!({ "k": 3, "x": 2.0, "dk": 5.0, "dx": 0.5 }));
    assert_close_json(&got, &json!([[3, 6.0], [0.0, 1.5]]), 1e-15);
    // One parameter: the point and the tangent are the values themselves.
    let src = "
def f(A: [n]real) = map (a. sin(a)) A
def main(A: [n]real, dA: [n]real) = jvp(f)(A, dA)
";
    let got = run(src, json!({ "A": a, "dA": da }));
    let want = json!([
        [a[0].sin(), a[1].sin()],
        [a[0].cos() * da[0], a[1].cos() * da[1]]
    ]);
    assert_close_json(&got, &want, 1e-15);
}

/// The entry point's gradient by central differences of its values, each evaluated with
/// tagged dual numbers (the interpreter on `f64` refuses derivatives inside programs).
fn fd_gradient_with_derivatives(arena: &Arena, func: &Func, args: &[Value<f64>]) -> Vec<Vec<f64>> {
    let eval = |a: &[Value<f64>]| {
        eval_with_derivatives(arena, func, a)
            .unwrap()
            .as_real()
            .unwrap()
    };
    let mut grads = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let n = a.leaves().len();
        let mut g = Vec::with_capacity(n);
        for j in 0..n {
            let x = a.leaves()[j];
            let h = 1e-5 * x.abs().max(1.0);
            let shifted = |delta: f64| {
                let mut k = 0;
                let mut moved = args.to_vec();
                moved[i] = a.map_leaves(&mut |y| {
                    k += 1;
                    if k - 1 == j {
                        y + delta
                    } else {
                        y
                    }
                });
                moved
            };
            g.push((eval(&shifted(h)) - eval(&shifted(-h))) / (2.0 * h));
        }
        grads.push(g);
    }
    grads
}

#[test]
fn gradients_of_programs_holding_grad_match_finite_differences() {
    let programs = [
        (CONFUSION, json!({ "x": 0.7 })),
        (
            // A gradient-descent step on a quadratic whose centre is the input.
            "
def loss(w: [n]real, c: [n]real) = sum(map2 (a, b. (a - b) * (a - b) * exp(a * 0.1)) w c)
def main(c: [n]real, w: [n]real) =
  let g = grad(loss, 0)(w, c) in
  loss(map2 (a, d. a - 0.1 * d) w g, c)
",
            json!({ "c": [0.5, -1.0, 2.0], "w": [0.0, 0.3, 1.0] }),
        ),
        (
            // The gradient's norm, and a jvp inside.
            "
def f(x: real, y: real) = sin(x * y) + x * x * x
def main(x: real, y: real) =
  let (gx, gy) = grad(f)(x, y) in
  let (v, t) = jvp(f)((x, y), (y, x)) in
  gx * gx + gy * gy + v * t
",
            json!({ "x": 0.4, "y": -1.2 }),
        ),
    ];
    for (src, input) in programs {
        let (prog, func) = load(src);
        let a = args(&prog.arena, &func, input);
        let (value, gradient) = gradient_with_derivatives(&prog.arena, &func, &a).unwrap();
        let direct = eval_with_derivatives(&prog.arena, &func, &a).unwrap();
        assert_eq!(Some(value), direct.as_real(), "{src}");
        let fd = fd_gradient_with_derivatives(&prog.arena, &func, &a);
        for (g, f) in gradient.iter().flatten().zip(fd.iter().flatten()) {
            assert!(close(*g, *f, 1e-7), "{src}\ngot {gradient:?}, want {fd:?}");
        }
        assert_eq!(gradient.concat().len(), fd.concat().len());
    }
}

#[test]
fn gradient_with_derivatives_of_a_program_without_them_is_forward_mode() {
    let (prog, func) = load("def f(A: [n]real, k: int) = prod(A) * A[k] + log(sum(A))");
    let a = args(&prog.arena, &func, json!({ "A": [1.5, 2.0, 0.5], "k": 2 }));
    let (value, gradient) = gradient_with_derivatives(&prog.arena, &func, &a).unwrap();
    let (want_value, want) = forward_gradient(&prog.arena, &func, &a).unwrap();
    assert_eq!(value, want_value);
    assert_eq!(gradient, want);
}

#[test]
fn the_untagged_interpreter_refuses_derivatives_with_a_clear_error() {
    let (prog, func) = load(CONFUSION);
    let err = eval_func(&prog.arena, &func, &[Value::Real(1.0)]).unwrap_err();
    assert!(
        err.0
            .contains("need the tagged interpreter (eval_with_derivatives)"),
        "{err}"
    );
    let err = eval_func(&prog.arena, &func, &[Value::Real(Dual::new(1.0, 1.0))]).unwrap_err();
    assert!(err.0.contains("eval_with_derivatives"), "{err}");
}

/// The tagged number with primal `x` and tangent `d` at `tag`.
fn tagged(x: f64, d: f64, tag: u32) -> Tagged {
    Tagged::perturbed(Tagged::Real(x), Tagged::Real(d), tag)
}

#[test]
fn one_tag_computes_what_dual_numbers_compute() {
    let points = [-2.5, -1.0, -0.5, 0.0, 0.3, 1.0, 2.0];
    for op in UnOp::ALL {
        for &x in &points {
            let want = Dual::unary(op, Dual::new(x, 1.0));
            let got = Tagged::unary(op, tagged(x, 1.0, 0));
            let (v, d) = got.parts(0);
            assert_eq!(
                (v.value().to_bits(), d.value().to_bits()),
                (want.v.to_bits(), want.d.to_bits()),
                "{op:?} at {x}"
            );
        }
    }
    for op in BinOp::ALL {
        for &x in &points {
            for &y in &points {
                let want = Dual::binary(op, Dual::new(x, 1.0), Dual::new(y, 0.5));
                // The same perturbation in both operands, and the second operand's alone
                // at a different tag (a constant at the first's level).
                let got = Tagged::binary(op, tagged(x, 1.0, 3), tagged(y, 0.5, 3));
                let (v, d) = got.parts(3);
                assert_eq!(
                    (v.value().to_bits(), d.value().to_bits()),
                    (want.v.to_bits(), want.d.to_bits()),
                    "{op:?} at {x}, {y}"
                );
                let want_y = Dual::binary(op, Dual::new(x, 0.0), Dual::new(y, 0.5));
                let got = Tagged::binary(op, tagged(x, 1.0, 3), tagged(y, 0.5, 5));
                let d_y = got.parts(5).1.parts(3).0.value();
                assert_eq!(d_y.to_bits(), want_y.d.to_bits(), "{op:?} at {x}, {y}");
            }
        }
    }
}

#[test]
fn two_tags_compute_what_nested_dual_numbers_compute() {
    // x perturbed at tag 1, y at tag 2, in either order of creation: the mixed part of
    // x·y·sin(x) is ∂²/∂x∂y, the same as Dual<Dual<f64>> gives.
    let f = |x: Tagged, y: Tagged| {
        let xy = Tagged::binary(BinOp::Mul, x.clone(), y);
        Tagged::binary(BinOp::Mul, xy, Tagged::unary(UnOp::Sin, x))
    };
    let (x, y) = (0.8, -1.3);
    let r = f(tagged(x, 1.0, 1), tagged(y, 1.0, 2));
    let (outer_primal, outer_tangent) = r.parts(2);
    let mixed = outer_tangent.parts(1).1.value();
    let dx = outer_primal.parts(1).1.value();
    let d2 = |x: Dual<Dual>, y: Dual<Dual>| {
        let xy = Dual::binary(BinOp::Mul, x, y);
        Dual::binary(BinOp::Mul, xy, Dual::unary(UnOp::Sin, x))
    };
    let want = d2(
        Dual::new(Dual::new(x, 1.0), Dual::new(0.0, 0.0)),
        Dual::new(Dual::new(y, 0.0), Dual::new(1.0, 0.0)),
    );
    assert_eq!(mixed.to_bits(), want.d.d.to_bits());
    assert_eq!(dx.to_bits(), want.v.d.to_bits());
    // Reading the tags in the other order gives the same parts.
    assert_eq!(r.parts(1).1.parts(2).1.value().to_bits(), mixed.to_bits());
}
