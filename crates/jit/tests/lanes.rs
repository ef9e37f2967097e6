//! Two elements per instruction (`f64x2` lanes): maps and blocked reductions whose
//! elements run through arithmetic, selects and the math kernels agree with the
//! interpreter bit for bit, on arrays of every length from 0 to 40 (odd lengths leave a
//! scalar tail) with signed zeros, NaN, infinities, huge and tiny reals among the elements;
//! values and gradients.

mod common;

use common::check;
use serde_json::{json, Value as Json};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Mostly ordinary reals, sometimes a special value or one at the kernels' edges.
    fn real(&mut self, special: bool) -> Json {
        let k = if special { self.below(24) } else { 23 };
        match k {
            0 => json!(-0.0),
            1 => json!(0.0),
            2 => json!("NaN"),
            3 => json!("Infinity"),
            4 => json!("-Infinity"),
            5 => json!(710.0),
            6 => json!(-745.5),
            7 => json!(1e-310),
            8 => json!(-1e300),
            9 => json!(20.5),
            _ => {
                let m = (self.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                let e = self.below(4) as i32 - 1;
                json!(m * 10f64.powi(e))
            }
        }
    }

    fn reals(&mut self, n: usize, special: bool) -> Json {
        Json::Array((0..n).map(|_| self.real(special)).collect())
    }
}

/// Random inputs `A` and `B` of each length from 0 to 40.
fn inputs(seed: u64, special: bool) -> Vec<Json> {
    let mut rng = Rng(seed);
    (0..=40)
        .map(|n| json!({"A": rng.reals(n, special), "B": rng.reals(n, special)}))
        .collect()
}

/// Element functions of one variable `x` (and `y`, the other array's element).
const BODIES: [&str; 10] = [
    "exp(x)",
    "log(abs(x) + y * y)",
    "tanh(x) * y",
    "sigmoid(x - y)",
    "log1p(abs(x)) - expm1(y)",
    "sin(x) + cos(y)",
    "max(x, y) - min(x * 2, y)",
    "if x < y then x * x else y - 0.5",
    "sqrt(abs(x)) / (1 + y * y)",
    "exp(x - y) * 0.25 + abs(x)",
];

#[test]
fn maps_on_two_lanes_agree_with_the_interpreter() {
    for (k, body) in BODIES.iter().enumerate() {
        let src = format!("def g(A: [n]real, B: [n]real) = map2 (x, y. {body}) A B");
        check(&src, &inputs(k as u64 + 1, true));
    }
}

#[test]
fn reductions_on_two_lanes_agree_with_the_interpreter() {
    for (k, body) in BODIES.iter().enumerate() {
        for op in ["+", "*", "max", "min"] {
            let src = format!(
                "def g(A: [n]real, B: [n]real) = \
                 (reduce {op} 0.5 (map2 (x, y. {body}) A B), map2 (x, y. {body} * 2) A B)"
            );
            check(&src, &inputs(50 + k as u64, true));
        }
    }
}

#[test]
fn gradients_on_two_lanes_agree_with_the_interpreter() {
    for (k, body) in BODIES.iter().enumerate() {
        let src = format!("def g(A: [n]real, B: [n]real) = sum(map2 (x, y. {body}) A B)");
        assert!(
            common::check_gradient(&src, &inputs(200 + k as u64, false)),
            "{src}"
        );
    }
    let lse = "def g(A: [n]real, B: [n]real) = \
               let m = reduce max (0 - 1e300) A in m + log(sum(map (a. exp(a - m)) A))";
    assert!(common::check_gradient(lse, &inputs(300, false)));
}
