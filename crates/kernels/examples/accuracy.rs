//! Measures the kernels: the largest error in ulps against a high-precision reference on
//! random points of each function's domain (the kernel with the host's setting of
//! `mul_add`, the other setting, and the standard library on the same points), and the time
//! per call of the twin against the standard library. The output is the table of
//! docs/kernels.md.
//!
//! `cargo run --release -p unfad-kernels --example accuracy [points per function]
//! [names,...]` (default 10^6 points, every function; two threads).

#[path = "../tests/reference/mod.rs"]
mod reference;

use std::hint::black_box;
use std::time::Instant;

use reference::{error_in_ulps, point, Reference, Rng};
use unfad_kernels::{host_has_fma, Kernel};

/// The largest error and where.
#[derive(Clone, Copy, Default)]
struct Worst {
    ulps: f64,
    at: f64,
}

impl Worst {
    fn see(&mut self, ulps: f64, at: f64) {
        if ulps > self.ulps || ulps.is_nan() {
            *self = Worst { ulps, at };
        }
    }
}

struct Row {
    kernel: Kernel,
    host: Worst,
    other: Worst,
    std: Worst,
}

fn measure(k: Kernel, n: usize, seed: u64) -> Row {
    let mut reference = Reference::default();
    let mut rng = Rng::new(seed);
    let fused = host_has_fma();
    let (mut host, mut other, mut std) = (Worst::default(), Worst::default(), Worst::default());
    for _ in 0..n {
        let x = point(k, &mut rng);
        let r = reference.value(k, x);
        host.see(error_in_ulps(&r, k.eval_with(fused, x)), x);
        other.see(error_in_ulps(&r, k.eval_with(!fused, x)), x);
        std.see(error_in_ulps(&r, k.std(x)), x);
    }
    Row {
        kernel: k,
        host,
        other,
        std,
    }
}

/// Nanoseconds per call of `f` over `xs` (best of 5 passes).
fn time(xs: &[f64], f: impl Fn(f64) -> f64) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = Instant::now();
        let mut acc = 0.0;
        for &x in xs {
            acc += f(black_box(x));
        }
        black_box(acc);
        best = best.min(start.elapsed().as_secs_f64() * 1e9 / xs.len() as f64);
    }
    best
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("a number of points"))
        .unwrap_or(1_000_000);
    let fused = host_has_fma();
    println!("host FMA: {fused}; {n} random points per function\n");
    // A second argument names the functions to measure (`exp,tanh`); all by default.
    let only = std::env::args().nth(2);
    let kernels: &'static [Kernel] = Box::leak(
        Kernel::ALL
            .into_iter()
            .filter(|k| {
                only.as_ref()
                    .is_none_or(|o| o.split(',').any(|n| n == k.name()))
            })
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    let rows: Vec<Row> = std::thread::scope(|s| {
        let (left, right) = kernels.split_at(kernels.len() / 2);
        let spawn = |part: &'static [Kernel]| {
            s.spawn(move || {
                part.iter()
                    .map(|&k| measure(k, n, 7 + k as u64))
                    .collect::<Vec<_>>()
            })
        };
        let a = spawn(left);
        let b = spawn(right);
        let mut rows = a.join().expect("a thread");
        rows.extend(b.join().expect("a thread"));
        rows
    });
    println!(
        "| function | max ulp (mul_add fused: {fused}) | at | max ulp (fused: {}) | at | std max ulp | at |",
        !fused
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.3} | {:e} | {:.3} | {:e} | {:.3} | {:e} |",
            r.kernel.name(),
            r.host.ulps,
            r.host.at,
            r.other.ulps,
            r.other.at,
            r.std.ulps,
            r.std.at
        );
    }
    println!("\nTime per call over {n} points (twin compiled by rustc, one process):\n");
    println!("| function | kernel, unfused (ns) | kernel, fused (ns) | std (ns) | unfused / std | fused / std |");
    println!("|---|---|---|---|---|---|");
    for &k in kernels {
        let mut rng = Rng::new(99 + k as u64);
        let xs: Vec<f64> = (0..n).map(|_| point(k, &mut rng)).collect();
        let unfused = time(&xs, |x| k.eval_with(false, x));
        let fused = time(&xs, |x| k.eval_with(true, x));
        let std = time(&xs, |x| k.std(x));
        println!(
            "| {} | {unfused:.2} | {fused:.2} | {std:.2} | {:.2} | {:.2} |",
            k.name(),
            unfused / std,
            fused / std
        );
    }
}
