//! The modules beyond `mock_eval.py`'s (`llsq`, `ode`), checked independently of GradBench:
//! their values against plain Rust implementations of the evals' formulas, and their
//! gradients against finite differences of those (and, for `llsq`, against the
//! hand-derived gradient of GradBench's manual tool).

use serde_json::{json, Value as Json};

/// Define `module` and evaluate `function` on `input` through the protocol; the output.
fn evaluate(module: &str, function: &str, input: Json) -> Json {
    let mut modules = Vec::new();
    let defined = unfad_gradbench::respond(
        &json!({"id": 0, "kind": "define", "module": module}),
        &mut modules,
    );
    assert_eq!(defined["success"], true, "{defined}");
    let reply = unfad_gradbench::respond(
        &json!({"id": 1, "kind": "evaluate", "module": module, "function": function, "input": input}),
        &mut modules,
    );
    assert_eq!(reply["success"], true, "{reply}");
    reply["output"].clone()
}

fn numbers(j: &Json) -> Vec<f64> {
    j.as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_f64().expect("a number"))
        .collect()
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * a.abs().max(b.abs()).max(1.0)
}

/// Deterministic values in [0, 1).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        })
        .collect()
}

/// Central differences of `f` at `x`.
fn fd(f: impl Fn(&[f64]) -> f64, x: &[f64]) -> Vec<f64> {
    (0..x.len())
        .map(|k| {
            let h = 1e-6 * x[k].abs().max(1.0);
            let mut p = x.to_vec();
            p[k] += h;
            let mut m = x.to_vec();
            m[k] -= h;
            (f(&p) - f(&m)) / (2.0 * h)
        })
        .collect()
}

/// The eval's formula, as GradBench's C++ writes it.
fn llsq(x: &[f64], n: usize) -> f64 {
    let mut sum = 0.0;
    for i in 0..n {
        let t = -1.0 + i as f64 * 2.0 / (n as f64 - 1.0);
        let mut r = if t > 0.0 {
            1.0
        } else if t < 0.0 {
            -1.0
        } else {
            0.0
        };
        let mut p = 1.0;
        for &xj in x {
            r -= xj * p;
            p *= t;
        }
        sum += r * r;
    }
    sum / 2.0
}

/// GradBench's manual tool's gradient: `-sum_i r_i t_i^j`.
fn llsq_gradient(x: &[f64], n: usize) -> Vec<f64> {
    let mut g = vec![0.0; x.len()];
    for i in 0..n {
        let t = -1.0 + i as f64 * 2.0 / (n as f64 - 1.0);
        let mut r = (0.0 < t) as i32 as f64 - (t < 0.0) as i32 as f64;
        let mut p = 1.0;
        for &xj in x {
            r -= xj * p;
            p *= t;
        }
        let mut term = 1.0;
        for gj in g.iter_mut() {
            *gj -= r * term;
            term *= t;
        }
    }
    g
}

#[test]
fn llsq_value_and_gradient() {
    for (m, n, seed) in [(1, 2, 1), (4, 7, 2), (16, 100, 3), (128, 64, 4)] {
        let x = values(m, seed);
        let input = json!({"x": x, "n": n, "min_runs": 1, "min_seconds": 0});
        let value = evaluate("llsq", "primal", input.clone()).as_f64().unwrap();
        assert!(
            close(value, llsq(&x, n), 1e-12),
            "m={m} n={n}: {value} vs {}",
            llsq(&x, n)
        );
        let g = numbers(&evaluate("llsq", "gradient", input));
        let manual = llsq_gradient(&x, n);
        let numeric = fd(|x| llsq(x, n), &x);
        for j in 0..m {
            assert!(
                close(g[j], manual[j], 1e-9),
                "m={m} n={n} j={j}: {} vs {}",
                g[j],
                manual[j]
            );
            assert!(
                close(g[j], numeric[j], 1e-5),
                "m={m} n={n} j={j}: {} vs fd {}",
                g[j],
                numeric[j]
            );
        }
    }
}

/// The eval's formula: `s` steps of RK4 on `y_0' = x_0`, `y_i' = x_i y_{i-1}` from 0 to 2.
fn ode(x: &[f64], s: usize) -> Vec<f64> {
    let n = x.len();
    let h = 2.0 / s as f64;
    let fun = |y: &[f64]| -> Vec<f64> {
        (0..n)
            .map(|i| if i == 0 { x[0] } else { x[i] * y[i - 1] })
            .collect()
    };
    let mut y = vec![0.0; n];
    for _ in 0..s {
        let k1 = fun(&y);
        let y1: Vec<f64> = (0..n).map(|i| y[i] + h * k1[i] / 2.0).collect();
        let k2 = fun(&y1);
        let y2: Vec<f64> = (0..n).map(|i| y[i] + h * k2[i] / 2.0).collect();
        let k3 = fun(&y2);
        let y3: Vec<f64> = (0..n).map(|i| y[i] + h * k3[i]).collect();
        let k4 = fun(&y3);
        for i in 0..n {
            y[i] += h * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]) / 6.0;
        }
    }
    y
}

#[test]
fn ode_value_and_gradient() {
    for (n, s, seed) in [(1, 1, 5), (2, 3, 6), (10, 10, 7), (50, 4, 8)] {
        let x = values(n, seed);
        let input = json!({"x": x, "s": s, "min_runs": 1, "min_seconds": 0});
        let y = numbers(&evaluate("ode", "primal", input.clone()));
        let want = ode(&x, s);
        assert_eq!(y.len(), n);
        for i in 0..n {
            assert!(
                close(y[i], want[i], 1e-12),
                "n={n} s={s} i={i}: {} vs {}",
                y[i],
                want[i]
            );
        }
        let g = numbers(&evaluate("ode", "gradient", input));
        let numeric = fd(|x| ode(x, s)[n - 1], &x);
        for j in 0..n {
            assert!(
                close(g[j], numeric[j], 1e-6),
                "n={n} s={s} j={j}: {} vs fd {}",
                g[j],
                numeric[j]
            );
        }
    }
}
