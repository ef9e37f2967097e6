//! Recurrences whose step is a layer (a map over the rows of a weight matrix): their
//! gradients read the layer's output from the scan of states instead of computing it again
//! in every backward loop (`rules::steps::scan_next_in_consumer`).
//!
//! A family of such programs, assembled at random from the ways a user writes a layer
//! (rows zipped with a vector, rows read by index, a tuple state that also sums a loss), a
//! non-linearity and a loss. For each:
//! - the optimized gradient agrees with forward mode;
//! - where the non-linearity's derivative is a function of its value (`tanh`, `sigmoid`,
//!   `exp`), the optimized gradient applies it once, in the primal scan: no backward loop
//!   computes a row's pre-activation (a dot product of the state with a row) again;
//!   Its cost is then within 5 times the program's in the cost model (the gradient of a
//!   recurrence written by hand costs about 3 times; the backward loops that computed
//!   every row again cost 8 to 9 times).
//!
//! `sin`'s derivative needs the pre-activation, which the scan does not store: its backward
//! loops still compute each row's dot product again (a tape of such intermediate values is
//! not built).

use unfad_interp::{args_from_json, eval_func, forward_gradient, Value};
use unfad_opt::Bound;
use unfad_syntax::print_func;
use unfad_test_support::load;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> usize {
        (self.next() % n) as usize
    }

    /// Uniform in `[-s, s)`.
    fn real(&mut self, s: f64) -> f64 {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2.0 * s
    }

    fn vector(&mut self, n: usize, s: f64) -> String {
        let items: Vec<String> = (0..n).map(|_| format!("{:.6}", self.real(s))).collect();
        format!("[{}]", items.join(", "))
    }

    fn matrix(&mut self, n: usize, m: usize, s: f64) -> String {
        let rows: Vec<String> = (0..n).map(|_| self.vector(m, s)).collect();
        format!("[{}]", rows.join(", "))
    }
}

/// The non-linearities: name, and whether the derivative is a function of the value.
const NONLINEAR: [(&str, bool); 4] = [
    ("tanh", true),
    ("sigmoid", true),
    ("exp", true),
    ("sin", false),
];

/// A recurrence and its input (`m` the state's width, `n` the steps).
fn program(seed: u64) -> (String, String, &'static str, bool) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let (f, reads_value) = NONLINEAR[rng.below(4)];
    // `exp` grows: keep its argument small.
    let scale = if f == "exp" { 0.05 } else { 0.4 };
    let (m, n) = (2 + rng.below(4), 1 + rng.below(5));
    let dot = "def dot(a: [k]real, b: [k]real) = reduce + 0 (map2 * a b)\n";
    let loss = match rng.below(3) {
        0 => "reduce + 0 (map (v. v * v) hT)",
        1 => "reduce + 0 hT",
        _ => "reduce + 0 (map2 * hT c)",
    };
    let (src, input) = match rng.below(4) {
        // Rows zipped with a vector made from the element.
        0 => (
            format!(
                "{dot}def f(W: [m][m]real, U: [m]real, c: [m]real, h0: [m]real, xs: [n]real) =
                   let hT = foldl (h, x.
                     map2 (row, bi. {f}(dot(row, h) + bi)) W (map2 (u, cj. u * x + cj) U c)) h0 xs in
                   {loss}"
            ),
            format!(
                r#"{{"W": {}, "U": {}, "c": {}, "h0": {}, "xs": {}}}"#,
                rng.matrix(m, m, scale),
                rng.vector(m, scale),
                rng.vector(m, scale),
                rng.vector(m, 1.0),
                rng.vector(n, 1.0)
            ),
        ),
        // Rows read by index.
        1 => (
            format!(
                "{dot}def f(W: [m][m]real, c: [m]real, h0: [m]real, xs: [n][m]real) =
                   let hT = foldl (h, x.
                     map (i. {f}(dot(W[i], h) + x[i] * c[i])) (iota len(h))) h0 xs in
                   {loss}"
            ),
            format!(
                r#"{{"W": {}, "c": {}, "h0": {}, "xs": {}}}"#,
                rng.matrix(m, m, scale),
                rng.vector(m, scale),
                rng.vector(m, 1.0),
                rng.matrix(n, m, 1.0)
            ),
        ),
        // One matrix, the element scaling each row.
        2 => (
            format!(
                "{dot}def f(W: [m][m]real, c: [m]real, h0: [m]real, xs: [n]real) =
                   let hT = foldl (h, x. map (row. {f}(x * dot(row, h))) W) h0 xs in
                   {loss}"
            ),
            format!(
                r#"{{"W": {}, "c": {}, "h0": {}, "xs": {}}}"#,
                rng.matrix(m, m, scale),
                rng.vector(m, scale),
                rng.vector(m, 1.0),
                rng.vector(n, 1.0)
            ),
        ),
        // A tuple state: the layer's output and the loss summed over the steps.
        _ => (
            format!(
                "{dot}def f(W: [m][m]real, V: [m][m]real, h0: [m]real, xs: [n][m]real, ys: [n][m]real) =
                   let out = foldl (acc, t.
                     let h = map2 (row, v. {f}(dot(row, fst acc) + dot(v, xs[t]))) W V in
                     (h, snd acc + reduce + 0 (map2 (a, y. (a - y) * (a - y)) h ys[t])))
                     (h0, 0) (iota len(xs)) in
                   snd out"
            ),
            format!(
                r#"{{"W": {}, "V": {}, "h0": {}, "xs": {}, "ys": {}}}"#,
                rng.matrix(m, m, scale),
                rng.matrix(m, m, scale),
                rng.vector(m, 1.0),
                rng.matrix(n, m, 1.0),
                rng.matrix(n, m, 1.0)
            ),
        ),
    };
    (src, input, f, reads_value)
}

#[test]
fn layered_recurrences_read_the_layer_from_the_scan() {
    let mut read_back = 0;
    for seed in 0..40 {
        let (src, input, f, reads_value) = program(seed);
        let (mut prog, func) = load(&src);
        let input: serde_json::Value = serde_json::from_str(&input).unwrap();
        let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
        let (v0, g0) = forward_gradient(&prog.arena, &func, &args).unwrap();
        let all: Vec<usize> = (0..func.params.len()).collect();
        let rev = unfad_ad::reverse(&mut prog.arena, &func, &all).unwrap();
        let opt = unfad_opt::optimize(&mut prog.arena, &rev)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{src}"));
        let shown = print_func(&prog.arena, &opt);
        let Value::Tuple(items) = eval_func(&prog.arena, &opt, &args).unwrap() else {
            panic!("seed {seed}: not a tuple\n{shown}")
        };
        let close = |a: f64, b: f64| unfad_test_support::close(a, b, 1e-10);
        assert!(
            close(items[0].as_real().unwrap(), v0),
            "seed {seed}: value\n{src}\n{shown}"
        );
        for (g, fwd) in items[1..].iter().zip(&g0) {
            let g = g.leaves();
            assert_eq!(g.len(), fwd.len(), "seed {seed}\n{shown}");
            for (a, b) in g.iter().zip(fwd) {
                assert!(
                    close(*a, *b),
                    "seed {seed}: {a} vs forward {b}\n{src}\n{shown}"
                );
            }
        }
        if reads_value {
            let applied = shown.matches(&format!("{f}(")).count();
            assert_eq!(
                applied, 1,
                "seed {seed}: `{f}` applied {applied} times, the layer is computed again\n{src}\n{shown}"
            );
            read_back += 1;
            let sizes = |v: &str| Some(if v == "m" { 16 } else { 50 });
            let bound = Bound::measure(&prog.arena, &func, &opt, &sizes);
            assert!(
                bound.ratio() < 5.0,
                "seed {seed}: the gradient costs {} times the program\n{src}\n{shown}",
                bound.ratio()
            );
        }
    }
    assert!(
        read_back >= 20,
        "only {read_back} programs read the layer back"
    );
}
