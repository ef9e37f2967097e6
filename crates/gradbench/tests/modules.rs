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

/// The eval's objective, as its C++ writes it (rows as the eval gives them).
fn lstm(main: &[Vec<f64>], extra: &[Vec<f64>], state: &[Vec<f64>], sequence: &[Vec<f64>]) -> f64 {
    let l = main.len() / 2;
    let b = extra[0].len();
    let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
    let mut state = state.to_vec();
    let (mut total, mut count) = (0.0, 0.0);
    for t in 0..sequence.len() - 1 {
        let mut input: Vec<f64> = (0..b).map(|i| sequence[t][i] * extra[0][i]).collect();
        for layer in 0..l {
            let (w, bias) = (&main[2 * layer], &main[2 * layer + 1]);
            for i in 0..b {
                let hidden = state[2 * layer][i];
                let forget = sig(input[i] * w[i] + bias[i]);
                let ingate = sig(hidden * w[b + i] + bias[b + i]);
                let outgate = sig(input[i] * w[2 * b + i] + bias[2 * b + i]);
                let change = (hidden * w[3 * b + i] + bias[3 * b + i]).tanh();
                let cell = state[2 * layer + 1][i] * forget + ingate * change;
                state[2 * layer + 1][i] = cell;
                state[2 * layer][i] = outgate * cell.tanh();
            }
            input = state[2 * layer].clone();
        }
        let ypred: Vec<f64> = (0..b)
            .map(|i| input[i] * extra[1][i] + extra[2][i])
            .collect();
        let lse = (ypred.iter().map(|y| y.exp()).sum::<f64>() + 2.0).ln();
        for i in 0..b {
            total += sequence[t + 1][i] * (ypred[i] - lse);
        }
        count += b as f64;
    }
    -total / count
}

#[test]
fn lstm_objective_and_jacobian() {
    for (l, b, c, seed) in [(1, 2, 3, 9), (2, 3, 5, 10)] {
        let rows = |n: usize, width: usize, seed: u64| -> Vec<Vec<f64>> {
            let v = values(n * width, seed);
            v.chunks(width)
                .map(|r| r.iter().map(|x| x - 0.5).collect())
                .collect()
        };
        let main = rows(2 * l, 4 * b, seed);
        let extra = rows(3, b, seed + 100);
        let state = rows(2 * l, b, seed + 200);
        let sequence: Vec<Vec<f64>> = (0..c)
            .map(|t| (0..b).map(|i| ((t + i) % b == 0) as u8 as f64).collect())
            .collect();
        let input = json!({"main_params": main, "extra_params": extra, "state": state,
            "sequence": sequence, "min_runs": 1, "min_seconds": 0});
        let value = evaluate("lstm", "objective", input.clone())
            .as_f64()
            .unwrap();
        let want = lstm(&main, &extra, &state, &sequence);
        assert!(close(value, want, 1e-12), "l={l} b={b}: {value} vs {want}");
        let g = numbers(&evaluate("lstm", "jacobian", input));
        // Finite differences over the flattened main_params then extra_params.
        let flat: Vec<f64> = main.iter().chain(extra.iter()).flatten().copied().collect();
        let unflatten = |x: &[f64]| -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
            let m: Vec<Vec<f64>> = x[..2 * l * 4 * b]
                .chunks(4 * b)
                .map(|r| r.to_vec())
                .collect();
            let e: Vec<Vec<f64>> = x[2 * l * 4 * b..].chunks(b).map(|r| r.to_vec()).collect();
            (m, e)
        };
        let numeric = fd(
            |x| {
                let (m, e) = unflatten(x);
                lstm(&m, &e, &state, &sequence)
            },
            &flat,
        );
        assert_eq!(g.len(), numeric.len());
        for j in 0..g.len() {
            assert!(
                close(g[j], numeric[j], 1e-6),
                "l={l} b={b} j={j}: {} vs fd {}",
                g[j],
                numeric[j]
            );
        }
    }
}
