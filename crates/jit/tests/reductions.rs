//! `reduce` of `+`, `*`, `max` and `min` with several accumulators: the native code
//! follows the order `unfad_syntax::reduction` defines, which the interpreter follows, bit
//! for bit, on random arrays of every length up to past a few blocks, with signed zeros,
//! NaN and infinities among the elements; alone and fused with the loops around it.

mod common;

use common::{check, Rng};
use serde_json::{json, Value as Json};

/// Mostly ordinary reals, one in eight a signed zero, NaN or an infinity.
fn real(rng: &mut Rng) -> Json {
    match rng.below(16) {
        0 => json!(-0.0),
        1 => json!(0.0),
        2 => json!("NaN"),
        3 => json!("Infinity"),
        4 => json!("-Infinity"),
        _ => {
            let m = rng.centred();
            let e = rng.below(7) as i32 - 3;
            json!(m * 10f64.powi(e))
        }
    }
}

fn reals(rng: &mut Rng, n: usize) -> Json {
    Json::Array((0..n).map(|_| real(rng)).collect())
}

/// Random inputs `A` and `B` of one length from 0 to 40 each.
fn inputs(seed: u64) -> Vec<Json> {
    let mut rng = Rng(seed);
    (0..40)
        .map(|_| {
            let n = rng.below(41) as usize;
            json!({"A": reals(&mut rng, n), "B": reals(&mut rng, n)})
        })
        .collect()
}

/// The four operators, as the function of a `reduce` (both orders of the parameters),
/// with their units.
const OPERATORS: [(&str, &str); 8] = [
    ("(s, t. s + t)", "0"),
    ("(s, t. t + s)", "0"),
    ("(s, t. s * t)", "1"),
    ("(s, t. t * s)", "1"),
    ("(s, t. max(s, t))", "(0 - 1e308 * 10)"),
    ("(s, t. max(t, s))", "(0 - 1e308 * 10)"),
    ("(s, t. min(s, t))", "(1e308 * 10)"),
    ("(s, t. min(t, s))", "(1e308 * 10)"),
];

#[test]
fn plain_reductions_agree_with_the_interpreter() {
    for (k, (f, z)) in OPERATORS.iter().enumerate() {
        for src in [
            format!("def g(A: [n]real, B: [n]real) = reduce {f} {z} A"),
            // An initial value that is not the unit.
            format!("def g(A: [n]real, B: [n]real) = reduce {f} (0 - 0) A + reduce {f} 0.75 B"),
        ] {
            check(&src, &inputs(k as u64 + 1));
        }
    }
}

#[test]
fn fused_reductions_agree_with_the_interpreter() {
    for (k, (f, z)) in OPERATORS.iter().enumerate() {
        for src in [
            // The elements computed in the loop (`dot` for `+`).
            format!("def g(A: [n]real, B: [n]real) = reduce {f} {z} (map2 * A B)"),
            format!(
                "def g(A: [n]real, B: [n]real) = reduce {f} {z} (map2 (a, b. a * 0.375 - b) A B)"
            ),
            // With copies and maps in the same loop, and a left fold beside it.
            format!(
                "def g(A: [n]real, B: [n]real) = \
                 (reduce {f} {z} (map2 * A B), map (x. x * 3) A, B, foldl (a, x. a * 0.5 + x) 0 A)"
            ),
            // Stored (read again later) and folded in the loop that stores it.
            format!(
                "def g(A: [n]real, B: [n]real) = \
                 let E = map2 (a, b. a - b) A B in let s = reduce {f} {z} E in map (e. e * 2 + s) E"
            ),
            // A shifted scan computed where the reduction reads it.
            format!(
                "def g(A: [n]real, B: [n]real) = reduce {f} {z} (map2 * (shift1R (scanl + 0 A)) B)"
            ),
            // Elements with a transcendental (fewer elements per iteration than
            // accumulators, the vectors of partial sums rotating), one fold and two.
            format!(
                "def g(A: [n]real, B: [n]real) = reduce {f} {z} (map2 (a, b. exp(a * 0.01) * b) A B)"
            ),
            format!(
                "def g(A: [n]real, B: [n]real) = \
                 (reduce {f} {z} (map (a. tanh(a)) A), reduce {f} {z} (map2 (a, b. exp(b * 0.01) - a) A B))"
            ),
            // A dot product's tangent: two folds reading two arrays each.
            format!(
                "def g(A: [n]real, B: [n]real) = \
                 (reduce {f} {z} (map2 * A B), reduce {f} {z} (map2 (a, b. b * a + a * b) A B))"
            ),
            // Elements that run a loop of their own (the accumulators in a stack slot), one
            // fold and two.
            format!(
                "def g(A: [n]real, B: [n]real) = reduce {f} {z} (map (a. reduce + 0 (map (c. c * a) B)) A)"
            ),
            format!(
                "def g(A: [n]real, B: [n]real) = \
                 (reduce {f} {z} (map (a. reduce + 0 (map (c. c - a) B)) A), reduce {f} {z} (map (a. reduce * 1 (map (c. c * a) B)) A))"
            ),
        ] {
            check(&src, &inputs(100 + k as u64));
        }
    }
}

#[test]
fn reductions_in_random_gradients_agree_with_the_interpreter() {
    // Reverse mode makes reductions of its own (sums of adjoints).
    for (k, src) in [
        "def g(A: [n]real, B: [n]real) = reduce + 0 (map2 (a, b. a * b * b) A B)",
        "def g(A: [n]real, B: [n]real) = reduce * 1 (map2 + A B)",
        "def g(A: [n]real, B: [n]real) = reduce max (0 - 1e300) (map2 * A B) + reduce + 0 B",
    ]
    .iter()
    .enumerate()
    {
        let mut rng = Rng(1000 + k as u64);
        let inputs: Vec<Json> = (0..20)
            .map(|_| {
                let n = rng.below(41) as usize;
                let finite =
                    |rng: &mut Rng| Json::Array((0..n).map(|_| json!(rng.centred())).collect());
                json!({"A": finite(&mut rng), "B": finite(&mut rng)})
            })
            .collect();
        assert!(common::check_gradient(src, &inputs), "{src}");
    }
}
