//! The modules beyond `mock_eval.py`'s (`llsq`, `ode`, `lstm`, `kmeans`, `saddle`,
//! `particle`, `ba`, `det`), checked independently of GradBench: their values against plain Rust
//! implementations of the evals' formulas, and their gradients against finite differences
//! of those (and, for `llsq`, against the hand-derived gradient of GradBench's manual
//! tool). `kmeans`' `dir` is checked against its closed form (each centroid minus the mean
//! of its points); `saddle` and `particle` against a plain Rust gradient descent with
//! hand-derived gradients, all four mode combinations alike, and the gradients inside
//! their programs against the hand-derived ones and finite differences.

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

/// `kmeans`' cost, as the eval defines it: each point's squared distance to its closest
/// centroid; and that centroid's index (the first of equals).
fn kmeans_cost(points: &[Vec<f64>], centroids: &[Vec<f64>]) -> (f64, Vec<usize>) {
    let mut cost = 0.0;
    let mut closest = Vec::new();
    for p in points {
        let (mut best, mut best_j) = (f64::INFINITY, 0);
        for (j, c) in centroids.iter().enumerate() {
            let d: f64 = p.iter().zip(c).map(|(a, b)| (a - b) * (a - b)).sum();
            if d < best {
                (best, best_j) = (d, j);
            }
        }
        cost += best;
        closest.push(best_j);
    }
    (cost, closest)
}

/// `dir` in closed form: the gradient in C_j is `2 sum_{i in j} (C_j - P_i)` and the
/// Hessian's diagonal `2 |j|`, so `dir_j = C_j - mean of the points of j`.
fn kmeans_dir(points: &[Vec<f64>], centroids: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let (_, closest) = kmeans_cost(points, centroids);
    centroids
        .iter()
        .enumerate()
        .map(|(j, c)| {
            let mine: Vec<&Vec<f64>> = points
                .iter()
                .zip(&closest)
                .filter(|(_, &cj)| cj == j)
                .map(|(p, _)| p)
                .collect();
            (0..c.len())
                .map(|l| c[l] - mine.iter().map(|p| p[l]).sum::<f64>() / mine.len() as f64)
                .collect()
        })
        .collect()
}

#[test]
fn kmeans_cost_and_dir() {
    let engine = unfad::Engine::new();
    let src = include_str!("../programs/kmeans.ad");
    let through_min = engine.compile_entry(src, "dir_through_min").unwrap();
    for (n, k, d, seed) in [(5, 1, 1, 11), (20, 3, 2, 12), (100, 7, 5, 13)] {
        let points: Vec<Vec<f64>> = values(n * d, seed).chunks(d).map(|r| r.to_vec()).collect();
        // The last k points are the centroids, as the eval chooses them: none is empty.
        let centroids = points[n - k..].to_vec();
        let input =
            json!({"points": points, "centroids": centroids, "min_runs": 1, "min_seconds": 0});
        let cost = evaluate("kmeans", "cost", input.clone()).as_f64().unwrap();
        let (want, _) = kmeans_cost(&points, &centroids);
        assert!(
            close(cost, want, 1e-12),
            "n={n} k={k} d={d}: {cost} vs {want}"
        );

        let dir: Vec<Vec<f64>> = evaluate("kmeans", "dir", input)
            .as_array()
            .unwrap()
            .iter()
            .map(numbers)
            .collect();
        let want = kmeans_dir(&points, &centroids);
        assert_eq!(dir.len(), k);
        // The gradient is 2 |j| dir_j; finite differences of the cost check it.
        let (_, closest) = kmeans_cost(&points, &centroids);
        let flat: Vec<f64> = centroids.iter().flatten().copied().collect();
        let numeric = fd(
            |c| {
                let cs: Vec<Vec<f64>> = c.chunks(d).map(|r| r.to_vec()).collect();
                kmeans_cost(&points, &cs).0
            },
            &flat,
        );
        let points_flat: Vec<f64> = points.iter().flatten().copied().collect();
        let dense = through_min
            .call(&[
                unfad::Arg::array(&points_flat, &[n, d]),
                unfad::Arg::array(&flat, &[k, d]),
            ])
            .unwrap();
        for j in 0..k {
            let count = closest.iter().filter(|&&c| c == j).count() as f64;
            for l in 0..d {
                assert!(
                    close(dir[j][l], want[j][l], 1e-12),
                    "n={n} k={k} d={d} ({j}, {l}): {} vs {}",
                    dir[j][l],
                    want[j][l]
                );
                assert!(
                    close(2.0 * count * dir[j][l], numeric[j * d + l], 1e-6),
                    "n={n} k={k} d={d} ({j}, {l}): gradient {} vs fd {}",
                    2.0 * count * dir[j][l],
                    numeric[j * d + l]
                );
                assert!(
                    close(dense[j * d + l], dir[j][l], 1e-12),
                    "n={n} k={k} d={d} ({j}, {l}): through min {} vs {}",
                    dense[j * d + l],
                    dir[j][l]
                );
            }
        }
    }
}

/// The gradient descent of `saddle` and `particle` (Pearlmutter and Siskind's, as
/// GradBench's tools write it), with the gradient `g` given; its result and step count.
fn argmin(
    f: impl Fn(&[f64]) -> f64,
    g: impl Fn(&[f64]) -> Vec<f64>,
    start: &[f64],
) -> (Vec<f64>, usize) {
    let norm = |v: &[f64]| v.iter().map(|a| a * a).sum::<f64>().sqrt();
    let (mut x, mut fx, mut gx) = (start.to_vec(), f(start), g(start));
    let (mut eta, mut accepted, mut steps) = (1e-5, 0, 0);
    loop {
        steps += 1;
        if norm(&gx) <= 1e-5 {
            return (x, steps);
        }
        if accepted == 10 {
            eta *= 2.0;
            accepted = 0;
            continue;
        }
        let xp: Vec<f64> = x.iter().zip(&gx).map(|(a, b)| a - eta * b).collect();
        let step: Vec<f64> = x.iter().zip(&xp).map(|(a, b)| a - b).collect();
        if norm(&step) <= 1e-5 {
            return (x, steps);
        }
        let fxp = f(&xp);
        if fxp < fx {
            (x, fx, gx) = (xp.clone(), fxp, g(&xp));
            accepted += 1;
        } else {
            eta /= 2.0;
            accepted = 0;
        }
    }
}

/// `saddle`'s f(p1, p) = (p1_0^2 + p1_1^2) - (p_0^2 + p_1^2).
fn saddle_f(p1: &[f64], p: &[f64]) -> f64 {
    (p1[0] * p1[0] + p1[1] * p1[1]) - (p[0] * p[0] + p[1] * p[1])
}

/// The inner argmax over p of f(p1, p): the descent on -f, whose gradient in p is 2p.
fn saddle_argmax(p1: &[f64], start: &[f64]) -> Vec<f64> {
    let (p, steps) = argmin(
        |p| -saddle_f(p1, p),
        |p| vec![2.0 * p[0], 2.0 * p[1]],
        start,
    );
    assert!(steps < 1000, "the program's descents stop at 1000 steps");
    p
}

/// `saddle` by hand: the outer objective f(p1, argmax(p1)) has the gradient 2 p1 in p1,
/// since the inner descent's steps do not depend on p1.
fn saddle(start: &[f64]) -> Vec<f64> {
    let outer = |p1: &[f64]| saddle_f(p1, &saddle_argmax(p1, start));
    let (r1, steps) = argmin(outer, |p1| vec![2.0 * p1[0], 2.0 * p1[1]], start);
    assert!(steps < 1000, "the program's descents stop at 1000 steps");
    let r2 = saddle_argmax(&r1, start);
    vec![r1[0], r1[1], r2[0], r2[1]]
}

#[test]
fn saddle_in_all_four_modes() {
    for start in [[1.0, 1.0], [0.5, -2.0], [-3.0, 0.25]] {
        let want = saddle(&start);
        for mode in ["ff", "fr", "rf", "rr"] {
            let input = json!({"start": start, "min_runs": 1, "min_seconds": 0});
            let got = numbers(&evaluate("saddle", mode, input));
            assert_eq!(got.len(), 4);
            for i in 0..4 {
                assert!(
                    (got[i] - want[i]).abs() <= 1e-12,
                    "{mode} from {start:?}: {got:?} vs {want:?}"
                );
            }
        }
    }
}

#[test]
fn saddle_outer_gradients() {
    let engine = unfad::Engine::new();
    let src = include_str!("../programs/saddle.ad");
    let start = [1.0, 1.0];
    for (seed, p1) in [[0.3, -0.7], [2.0, 1.5], [-1.0, 0.01]].iter().enumerate() {
        let numeric = fd(|p1| saddle_f(p1, &saddle_argmax(p1, &start)), p1);
        for mode in ["ff", "fr", "rf", "rr"] {
            let gradient = engine
                .compile_entry(src, &format!("outer_grad_{mode}"))
                .unwrap()
                .call(&[unfad::Arg::from(&p1[..]), unfad::Arg::from(&start[..])])
                .unwrap();
            for i in 0..2 {
                assert!(
                    close(gradient[i], 2.0 * p1[i], 1e-12),
                    "{mode} at {seed}: {gradient:?} vs 2 p1 = {p1:?} * 2"
                );
                assert!(
                    close(gradient[i], numeric[i], 1e-6),
                    "{mode} at {seed}: {gradient:?} vs fd {numeric:?}"
                );
            }
        }
    }
}

/// grad_x p(x; w) of `particle`'s potential and its derivative in the direction (dx, dw):
/// for each charge c, grad_x 1/|u| = -u/|u|^3 with u = x - c, whose derivative is
/// -du/|u|^3 + 3 u (u . du)/|u|^5; the first charge (10, 10 - w) moves with w.
fn particle_force(x: [f64; 2], dx: [f64; 2], w: f64, dw: f64) -> ([f64; 2], [f64; 2]) {
    let mut g = [0.0; 2];
    let mut dg = [0.0; 2];
    for (c, dc) in [([10.0, 10.0 - w], [0.0, -dw]), ([10.0, 0.0], [0.0, 0.0])] {
        let u = [x[0] - c[0], x[1] - c[1]];
        let du = [dx[0] - dc[0], dx[1] - dc[1]];
        let r = (u[0] * u[0] + u[1] * u[1]).sqrt();
        let udu = u[0] * du[0] + u[1] * du[1];
        for i in 0..2 {
            g[i] += -u[i] / r.powi(3);
            dg[i] += -du[i] / r.powi(3) + 3.0 * u[i] * udu / r.powi(5);
        }
    }
    (g, dg)
}

/// `particle`'s objective at w, Euler's steps carried with their derivative in w (forward
/// mode by hand), and the number of steps: (x_f0^2, its derivative, steps).
fn particle_objective(w: f64) -> (f64, f64, usize) {
    let (mut x, mut v) = ([0.0, 8.0], [0.75, 0.0]);
    let (mut dx, mut dv) = ([0.0; 2], [0.0; 2]);
    let mut steps = 0;
    loop {
        steps += 1;
        let (g, dg) = particle_force(x, dx, w, 1.0);
        let next = [x[0] + 0.1 * v[0], x[1] + 0.1 * v[1]];
        if next[1] <= 0.0 {
            break;
        }
        dx = [dx[0] + 0.1 * dv[0], dx[1] + 0.1 * dv[1]];
        x = next;
        v = [v[0] + 0.1 * -g[0], v[1] + 0.1 * -g[1]];
        dv = [dv[0] - 0.1 * dg[0], dv[1] - 0.1 * dg[1]];
    }
    let t = -x[1] / v[1];
    let dt = -(dx[1] * v[1] - x[1] * dv[1]) / (v[1] * v[1]);
    let xf = x[0] + t * v[0];
    let dxf = dx[0] + dt * v[0] + t * dv[0];
    (xf * xf, 2.0 * xf * dxf, steps)
}

#[test]
fn particle_gradients_in_all_four_modes() {
    let engine = unfad::Engine::new();
    let src = include_str!("../programs/particle.ad");
    for w in [0.0, 0.1, 0.2071918746486116, 0.35] {
        let (_, want, steps) = particle_objective(w);
        assert!(steps < 2000, "the program's Euler loop stops at 2000 steps");
        let numeric = fd(|w| particle_objective(w[0]).0, &[w])[0];
        assert!(close(want, numeric, 1e-6), "w={w}: {want} vs fd {numeric}");
        for mode in ["ff", "fr", "rf", "rr"] {
            let gradient = engine
                .compile_entry(src, &format!("gradient_{mode}"))
                .unwrap()
                .call(&[unfad::Arg::from(&[w][..])])
                .unwrap();
            assert!(
                close(gradient[0], want, 1e-10),
                "{mode} at w={w}: {} vs {want}",
                gradient[0]
            );
        }
    }
}

#[test]
fn particle_in_all_four_modes() {
    for w0 in [0.0, 0.1] {
        let (want, steps) = argmin(
            |w| particle_objective(w[0]).0,
            |w| vec![particle_objective(w[0]).1],
            &[w0],
        );
        assert!(steps < 1000, "the program's descent stops at 1000 steps");
        for mode in ["ff", "fr", "rf", "rr"] {
            let input = json!({"w": w0, "min_runs": 1, "min_seconds": 0});
            let got = evaluate("particle", mode, input).as_f64().unwrap();
            assert!(
                (got - want[0]).abs() <= 1e-10,
                "{mode} from {w0}: {got} vs {}",
                want[0]
            );
        }
    }
    // The eval's expected result from w = 0.
    let got = evaluate("particle", "rr", json!({"w": 0.0}))
        .as_f64()
        .unwrap();
    assert!((got - 0.2071918746486116).abs() <= 1e-12, "{got}");
}

// ---- ba -----------------------------------------------------------------------

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// The weighted reprojection error of GradBench's `ba` (ADBench's `computeReprojError`),
/// as its C++ writes it; `v` is the camera's 11 parameters, the point's 3 and the weight.
fn ba_error(v: &[f64], feat: [f64; 2]) -> [f64; 2] {
    let (cam, x, w) = (&v[..11], &v[11..14], v[14]);
    let xo = [x[0] - cam[3], x[1] - cam[4], x[2] - cam[5]];
    let rot = [cam[0], cam[1], cam[2]];
    let sq: f64 = rot.iter().map(|r| r * r).sum();
    let xc = if sq != 0.0 {
        let theta = sq.sqrt();
        let (c, s) = (theta.cos(), theta.sin());
        let wv = rot.map(|r| r / theta);
        let wx = cross(wv, xo);
        let t = (wv[0] * xo[0] + wv[1] * xo[1] + wv[2] * xo[2]) * (1.0 - c);
        [0, 1, 2].map(|i| xo[i] * c + wx[i] * s + wv[i] * t)
    } else {
        let rx = cross(rot, xo);
        [0, 1, 2].map(|i| xo[i] + rx[i])
    };
    let p = [xc[0] / xc[2], xc[1] / xc[2]];
    let rsq = p[0] * p[0] + p[1] * p[1];
    let l = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq;
    [
        w * (p[0] * l * cam[6] + cam[7] - feat[0]),
        w * (p[1] * l * cam[6] + cam[8] - feat[1]),
    ]
}

#[test]
fn ba_objective_and_jacobian() {
    // ADBench's first problem's camera, point, weight and feature; then a camera without
    // rotation, which takes Rodrigues' first-order branch.
    let turned = [
        -0.758453, -1.109613, -0.845551, 34.556073, 39.676747, 53.881673, 419.194514, 5.864426,
        -8.51887, 0.087812, 0.002739,
    ];
    let mut straight = turned;
    straight[..3].copy_from_slice(&[0.0, 0.0, 0.0]);
    for cam in [turned, straight] {
        let (x, w, feat) = (
            [7.203245, 0.001144, 3.023326],
            0.417022,
            [271.760969, 834.209256],
        );
        let input = json!({"n": 3, "m": 4, "p": 7, "cam": cam, "x": x, "w": w, "feat": feat});
        let v: Vec<f64> = cam.iter().chain(&x).chain([w].iter()).copied().collect();
        let want = ba_error(&v, feat);

        let out = evaluate("ba", "objective", input.clone());
        let errs = numbers(&out["reproj_error"]["elements"]);
        assert!(
            close(errs[0], want[0], 1e-12) && close(errs[1], want[1], 1e-12),
            "{out}"
        );
        assert_eq!(out["reproj_error"]["repeated"], 7);
        assert!(close(
            out["w_err"]["element"].as_f64().unwrap(),
            1.0 - w * w,
            1e-15
        ));

        // The first observation's two rows against central differences, then the last
        // weight's derivative; rows and columns in GradBench's compressed layout.
        let jac = evaluate("ba", "jacobian", input);
        let vals = numbers(&jac["vals"]);
        assert_eq!(vals.len(), 31, "{jac}");
        for r in 0..2 {
            let d = fd(|v| ba_error(v, feat)[r], &v);
            for k in 0..15 {
                let got = vals[15 * r + k];
                assert!(
                    close(got, d[k], 1e-6),
                    "row {r}, entry {k}: {got} vs {}",
                    d[k]
                );
            }
        }
        assert!(close(vals[30], -2.0 * w, 1e-15));
        let rows: Vec<u64> = jac["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(rows[..3], [0, 15, 30]);
        assert_eq!(*rows.last().unwrap(), 7 * 30 + 7);
        let cols: Vec<u64> = jac["cols"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        let first: Vec<u64> = (0..11).chain(33..36).chain([33 + 12]).collect();
        assert_eq!(cols[..15], first[..]);
        assert_eq!(cols[30], 33 + 12 + 6);
    }
}

// ---- det ----------------------------------------------------------------------

/// The determinant by recursive expansion along the first row, as GradBench's C++ does.
fn det_by_minors(a: &[Vec<f64>]) -> f64 {
    let n = a.len();
    if n == 1 {
        return a[0][0];
    }
    (0..n)
        .map(|c| {
            let minor: Vec<Vec<f64>> = a[1..]
                .iter()
                .map(|row| (0..n).filter(|&k| k != c).map(|k| row[k]).collect())
                .collect();
            let sign = if c % 2 == 0 { 1.0 } else { -1.0 };
            sign * a[0][c] * det_by_minors(&minor)
        })
        .sum()
}

#[test]
fn det_primal_and_gradient() {
    for ell in [1usize, 2, 3, 6] {
        let flat = values(ell * ell, 7 + ell as u64);
        let rows = |v: &[f64]| -> Vec<Vec<f64>> { v.chunks(ell).map(<[f64]>::to_vec).collect() };
        let input = json!({"A": flat, "ell": ell});
        let got = evaluate("det", "primal", input.clone()).as_f64().unwrap();
        let want = det_by_minors(&rows(&flat));
        assert!(close(got, want, 1e-13), "ell = {ell}: {got} vs {want}");
        // The gradient is the cofactor matrix: its entry (i, j) is (-1)^(i+j) times the
        // minor without row i and column j, which is linear in A[i][j].
        let grad = numbers(&evaluate("det", "gradient", input));
        let d = fd(|v| det_by_minors(&rows(v)), &flat);
        for k in 0..ell * ell {
            assert!(
                close(grad[k], d[k], 1e-7),
                "ell = {ell}, entry {k}: {} vs {}",
                grad[k],
                d[k]
            );
        }
    }
    // A size the module does not take, and a matrix that is not square, are errors.
    let mut modules = Vec::new();
    unfad_gradbench::respond(
        &json!({"id": 0, "kind": "define", "module": "det"}),
        &mut modules,
    );
    for input in [
        json!({"A": [1.0, 2.0, 3.0], "ell": 2}),
        json!({"A": [], "ell": 40}),
    ] {
        let reply = unfad_gradbench::respond(
            &json!({"id": 1, "kind": "evaluate", "module": "det", "function": "primal", "input": input}),
            &mut modules,
        );
        assert_eq!(reply["success"], false, "{reply}");
    }
}
