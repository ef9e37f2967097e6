//! `grad` and `jvp` inside programs, through the API: nested derivatives against closed
//! forms (perturbation confusion included), against the API's own Hessian-vector
//! products, and the errors of derivatives that cannot be taken.

mod common;

use common::{agrees, native_output};
use unfad::{Arg, Engine};
use unfad_test_support::close;

fn value(src: &str, args: &[Arg]) -> Vec<f64> {
    Engine::new()
        .compile(src)
        .unwrap_or_else(|e| panic!("{e}\n{src}"))
        .call(args)
        .unwrap_or_else(|e| panic!("{e}\n{src}"))
}

fn error(src: &str) -> String {
    match Engine::new().compile(src) {
        Ok(_) => panic!("compiled: {src}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn no_perturbation_confusion() {
    // d/dx (x * d/dy (x + y)) = d/dx (x * 1) = 1; a confused implementation gives 2.
    let src = "def inner(x: real, y: real) = x + y
               def outer(x: real) = x * grad(inner, 1)(x, x)
               def main(x: real) = grad(outer)(x)";
    for x in [0.0, 1.0, -3.5] {
        assert_eq!(value(src, &[x.into()]), [1.0]);
    }
    // The same through the gradient of the program itself.
    let g = Engine::new()
        .compile_grad(
            "def inner(x: real, y: real) = x + y
                       def main(x: real) = x * grad(inner, 1)(x, x)",
        )
        .unwrap();
    assert_eq!(g.call(&[2.0.into()]).unwrap().gradient(0), &[1.0]);
}

#[test]
fn nested_gradients_are_higher_derivatives() {
    let src = "def f(x: real) = x * x * x * sin(x)
               def df(x: real) = grad(f)(x)
               def d2f(x: real) = grad(df)(x)
               def main(x: real) = (df(x), d2f(x), grad(d2f)(x))";
    let x: f64 = 0.7;
    let (s, c) = (x.sin(), x.cos());
    let d1 = 3.0 * x * x * s + x * x * x * c;
    let d2 = 6.0 * x * s + 6.0 * x * x * c - x * x * x * s;
    let d3 = 6.0 * s + 18.0 * x * c - 9.0 * x * x * s - x * x * x * c;
    let got = value(src, &[x.into()]);
    for (g, e) in got.iter().zip([d1, d2, d3]) {
        assert!(close(*g, e, 1e-13), "{got:?} vs {d1} {d2} {d3}");
    }
}

#[test]
fn jvp_of_grad_is_the_hessian_vector_product() {
    let f = "def f(x: [n]real, w: real) = reduce + 0 (map (a. exp(w * a) * a) x) + x[0] * x[1]";
    let src = format!(
        "{f}
         def g(x: [n]real, w: real) = grad(f)(x, w)
         def main(x: [n]real, w: real, v: [n]real) = jvp(g)((x, w), (v, 0.5))"
    );
    let x = [0.3, -0.2, 1.1];
    let v = [1.0, 0.5, -2.0];
    let w = 0.8;
    let got = value(&src, &[x.as_slice().into(), w.into(), v.as_slice().into()]);
    // ((gx, gw), (hx, hw)) flattened: gx (3), gw, hx (3), hw.
    let hvp = Engine::new().compile_hvp(f).unwrap();
    let out = hvp
        .call(
            &[x.as_slice().into(), w.into()],
            &[v.as_slice().into(), 0.5.into()],
        )
        .unwrap();
    let mut expected = out.gradient(0).to_vec();
    expected.extend_from_slice(out.gradient(1));
    expected.extend_from_slice(out.hvp(0));
    expected.extend_from_slice(out.hvp(1));
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(&expected) {
        assert!(close(*g, *e, 1e-12), "{got:?} vs {expected:?}");
    }
}

#[test]
fn gradients_of_several_parameters_and_anonymous_functions() {
    let src = "def f(A: [n]real, s: real, k: int) = reduce + 0 (map (a. s * a * a) A) + A[k]
               def main(A: [n]real, s: real) =
                 let (gA, gs) = grad(f)(A, s, 1) in
                 (gA, gs, grad(f, 1)(A, s, 0), grad(fun (y: real) -> y * sin(y))(s))";
    let a = [1.0, 2.0, -1.0];
    let s = 0.5;
    let got = value(src, &[a.as_slice().into(), s.into()]);
    let mut expected: Vec<f64> = a.iter().map(|x| 2.0 * s * x).collect();
    expected[1] += 1.0;
    let sum_sq: f64 = a.iter().map(|x| x * x).sum();
    expected.push(sum_sq);
    expected.push(sum_sq);
    expected.push(s.sin() + s * s.cos());
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(&expected) {
        assert!(close(*g, *e, 1e-14), "{got:?} vs {expected:?}");
    }
}

#[test]
fn jvp_of_functions_returning_arrays_and_tuples() {
    let src = "def f(A: [n]real, s: real) = (map (a. tanh(s * a)) A, s * s)
               def main(A: [n]real, s: real, dA: [n]real) = jvp(f)((A, s), (dA, 1))";
    let a = [0.5, -1.0];
    let da = [2.0, 0.25];
    let s = 0.3;
    let got = value(src, &[a.as_slice().into(), s.into(), da.as_slice().into()]);
    let t: Vec<f64> = a.iter().map(|x| (s * x).tanh()).collect();
    let expected = [
        t[0],
        t[1],
        s * s,
        (1.0 - t[0] * t[0]) * (da[0] * s + a[0]),
        (1.0 - t[1] * t[1]) * (da[1] * s + a[1]),
        2.0 * s,
    ];
    for (g, e) in got.iter().zip(&expected) {
        assert!(close(*g, *e, 1e-14), "{got:?} vs {expected:?}");
    }
}

#[test]
fn derivatives_that_cannot_be_taken_are_errors() {
    let e = error("def f(x: real) = (x, x)\ndef main(x: real) = grad(f)(x)");
    assert!(e.contains("returns `real`") && e.contains("line 2"), "{e}");
    let e = error("def f(x: real, k: int) = x\ndef main(x: real) = grad(f, 1)(x, 2)");
    assert!(e.contains("no gradient"), "{e}");
    let e = error("def f(x: real) = x\ndef main(x: real) = grad(f, 3)(x)");
    assert!(e.contains("parameter 3"), "{e}");
    let e = error("def main(x: real) = grad(fun (y: real) -> x * y)(x)");
    assert!(e.contains("reads `x`"), "{e}");
    let e = error("def f(x: real, y: real) = x\ndef main(x: real) = grad(f)(x)");
    assert!(e.contains("takes 2 argument"), "{e}");
    let e = error("def f(x: [n]real) = x[0]\ndef main(x: real) = jvp(f)(x, x)");
    assert!(e.contains("the point"), "{e}");
}

#[test]
fn iterate_while_stops_where_its_condition_fails_in_every_mode() {
    // Newton's method for sqrt(a), to a tolerance: the root's derivative 1 / (2 sqrt(a))
    // comes out of differentiating the steps taken, in reverse and forward mode.
    let src = "def f(x: real, a: real) = x * x - a
               def main(a: real) =
                 iterate_while 100 (x. abs(f(x, a)) > 1e-15 * a) (x. x - f(x, a) / grad(f, 0)(x, a)) a";
    let a = 2.0f64;
    assert!(close(value(src, &[a.into()])[0], a.sqrt(), 1e-15));
    let g = Engine::new().compile_grad(src).unwrap();
    let out = g.call(&[a.into()]).unwrap();
    assert!(close(out.gradient(0)[0], 0.5 / a.sqrt(), 1e-12), "{out:?}");
    let jvp = Engine::new().compile_jvp(src).unwrap();
    let t = jvp.call(&[a.into()], &[1.0.into()]).unwrap();
    assert!(close(t.tangent[0], 0.5 / a.sqrt(), 1e-12), "{t:?}");
    // The bound is a bound: one step only.
    let once = "def main(a: real) = iterate_while 1 (x. x > 0) (x. x - 1) a";
    assert_eq!(value(once, &[5.0.into()]), [4.0]);
    // The condition is tested before each step: none here.
    assert_eq!(value(once, &[(-5.0).into()]), [-5.0]);
}

#[test]
fn random_programs_with_derivatives_agree_with_tagged_dual_numbers() {
    use unfad_interp::{args_from_json, gradient_with_derivatives};
    use unfad_testgen::{generate, Features};
    let mut checked = 0;
    for seed in 0..1000 {
        let g = generate(seed, &Features::derivatives());
        if !g.source.contains("grad(") && !g.source.contains("jvp(") {
            continue;
        }
        // The oracle: the program as written, derivatives evaluated by tagged duals.
        let (prog, func) = unfad_test_support::load(&g.source);
        let (args, _) = args_from_json::<f64>(&prog.arena, &func, &g.input).unwrap();
        let Ok((value, grads)) = gradient_with_derivatives(&prog.arena, &func, &args) else {
            continue;
        };
        // Native code of the expanded program, and its gradient (derivatives of
        // derivatives: the outer reverse pass differentiates the expansions).
        let grad = Engine::new()
            .compile_grad(&g.source)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        let out = native_output(&grad, &args)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        let ok = agrees(&out, value, &grads, grad.wrt());
        assert!(
            ok,
            "seed {seed}: native {} {:?} vs tagged duals {value} {grads:?}\n{}",
            out.value,
            grad.wrt()
                .iter()
                .map(|&i| out.gradient(i))
                .collect::<Vec<_>>(),
            g.source
        );
        checked += 1;
    }
    assert!(
        checked >= 150,
        "only {checked} programs with derivatives checked"
    );
}

#[test]
fn whole_number_literals_stand_for_int_parameters() {
    // A literal in a tuple of arguments is an int where the parameter is one, as it is in
    // a call: `jvp(f)((x, 3), (1, 0))` once failed with "the point of `jvp` should have
    // type `(real, int)`".
    let src = "def f(x: real, k: int) = x * x * real(k)
               def g(x: real, y: real) =
                 let (v, t) = jvp(f)((x, 3), (1, 0)) in t + y * grad(f, 0)(x, 2) + v";
    let (x, y) = (1.5, 2.0);
    let want = 6.0 * x + y * 4.0 * x + 3.0 * x * x;
    assert!(close(value(src, &[x.into(), y.into()])[0], want, 1e-15));
}
