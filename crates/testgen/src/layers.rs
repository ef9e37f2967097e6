//! Layer-like programs: per row of `W` (or per index into it), one or two loops over the
//! row, then a tail of their results (a kernel, mostly) with the row's bias; summed, or
//! squared and summed, inside a map over the points or not. The shape that
//! `unfad_opt::fission` splits, and the ones it must leave alone (a tail without a
//! kernel), for its property tests and the code generator's.

use serde_json::{json, Value as Json};

use crate::Rng;

/// The program of seed `seed`, and an input for it. Its parameters are always
/// `W: [k][m]real, bias: [k]real, X: [n][m]real, x: [m]real, c: real`.
pub fn layer(seed: u64) -> (String, Json) {
    let mut rng = Rng::new(seed);
    let loops = [
        "reduce + 0 (map2 * row x)",
        "reduce + 0 (map2 (a, b. a * b + 0.5) row x)",
        "reduce max (-1e300) (map2 * row x)",
        "foldl (s, a. 0.5 * s + a) 0 row",
    ];
    let l1 = *rng.pick(&loops);
    let l2 = *rng.pick(&loops);
    let tails = [
        "tanh(#1 + b)",
        "exp(#1) * b",
        "log(#1 * #1 + 1) + b",
        "sigmoid(#1 - #2) + b",
        "tanh(#1) * exp(-#2)",
        "let s = #1 in let t = s + b in tanh(t) * s",
        "#1 * #2 + b",
        "sin(#1 + c)",
        "tanh(#1 + b) * real(len(row))",
    ];
    let tail = rng
        .pick(&tails)
        .replace("#1", &format!("({l1})"))
        .replace("#2", &format!("({l2})"));
    let over = if rng.chance(0.5) {
        format!("map2 (row, b. {tail}) W bias")
    } else {
        format!("map (i. let row = W[i] in let b = bias[i] in {tail}) (iota len(W))")
    };
    let body = match rng.below(3) {
        0 => format!("reduce + 0 ({over})"),
        1 => format!("reduce + 0 (map (x. reduce + 0 ({over})) X)"),
        _ => format!("reduce + 0 (map (x. reduce + 0 (map (v. v * v) ({over}))) X)"),
    };
    let source = format!(
        "def f(W: [k][m]real, bias: [k]real, X: [n][m]real, x: [m]real, c: real) =\n  {body}"
    );
    let (k, m, n) = (1 + rng.below(4), 1 + rng.below(5), 1 + rng.below(3));
    let mut noise = |len: usize| -> Vec<f64> { (0..len).map(|_| rng.real(-1.0, 1.0)).collect() };
    let matrix = |rows: usize, v: Vec<f64>| -> Vec<Vec<f64>> {
        v.chunks(v.len() / rows.max(1))
            .map(|c| c.to_vec())
            .collect()
    };
    let input = json!({
        "W": matrix(k, noise(k * m)),
        "bias": noise(k),
        "X": matrix(n, noise(n * m)),
        "x": noise(m),
        "c": 0.25,
    });
    (source, input)
}
