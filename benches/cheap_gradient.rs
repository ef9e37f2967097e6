//! Issue 7's harness under criterion: every program of the suite (`src/suite.rs`) at every
//! size, unfad's native primal and value and gradient beside the hand-written ones. The
//! ratios, the cost model, the fits and the plot are `perf-report`'s
//! (`docs/performance.md`).
//!
//! `cargo bench --bench cheap_gradient [-- FILTER]`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use unfad_suite::measure::Compiled;
use unfad_suite::native::Native;
use unfad_suite::suite::{programs, Program};

fn suite(c: &mut Criterion) {
    for prog in programs() {
        let Ok(compiled) = Compiled::new(&prog, 1) else {
            eprintln!("{}: does not compile", prog.name);
            continue;
        };
        if let Err(e) = &compiled.gradient {
            eprintln!("{}: no gradient yet ({e}); primal only", prog.name);
        }
        let mut g = c.benchmark_group(prog.name);
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_millis(600));
        for &size in prog.sizes {
            let args = (prog.inputs)(size);
            let lookup = |v: &str| size.var(v);
            let label = size.label();
            g.throughput(Throughput::Elements(prog.elements(size) as u64));
            if let Ok(mut n) = Native::primal(&compiled.primal, &args, &lookup) {
                g.bench_function(BenchmarkId::new("unfad primal", &label), |b| {
                    b.iter(|| black_box(n.run()))
                });
            }
            if let Ok(grad) = &compiled.gradient {
                if let Ok(mut n) = Native::gradient(grad, &args, &lookup) {
                    g.bench_function(BenchmarkId::new("unfad gradient", &label), |b| {
                        b.iter(|| black_box(n.run()))
                    });
                }
            }
            g.bench_function(BenchmarkId::new("hand primal", &label), |b| {
                b.iter(|| black_box((prog.primal)(black_box(&args))))
            });
            let mut grads = Program::grad_buffers(&args);
            let mut scratch = Vec::new();
            g.bench_function(BenchmarkId::new("hand gradient", &label), |b| {
                b.iter(|| black_box((prog.gradient)(black_box(&args), &mut grads, &mut scratch)))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, suite);
criterion_main!(benches);
