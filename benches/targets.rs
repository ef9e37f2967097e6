//! Issue 5's targets, side by side in one run: at n = 10^6, unfad's native primal and value
//! and gradient against the hand-written Rust of `src/suite.rs` for `dot`, `prod`,
//! log-sum-exp and the `foldl` recurrence; and `compile_grad` (parse to native code) of
//! every program in `examples/`. `perf-report` turns the same measurements into the ratios
//! of `docs/performance.md`.
//!
//! `cargo bench --bench targets`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use unfad_suite::measure::Compiled;
use unfad_suite::native::Native;
use unfad_suite::report::TARGETS;
use unfad_suite::suite::{programs, Program, Size};

fn runtime(c: &mut Criterion) {
    let size = Size::n(1_000_000);
    for prog in programs().iter().filter(|p| TARGETS.contains(&p.name)) {
        let Ok(compiled) = Compiled::new(prog, 1) else {
            eprintln!("{}: does not compile", prog.name);
            continue;
        };
        let args = (prog.inputs)(size);
        let lookup = |v: &str| size.var(v);
        let mut g = c.benchmark_group(format!("targets/{}", prog.name));
        g.sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3))
            .throughput(Throughput::Elements(size.n as u64));
        if let Ok(mut primal) = Native::primal(&compiled.primal, &args, &lookup) {
            g.bench_function("unfad primal", |b| b.iter(|| black_box(primal.run())));
        }
        g.bench_function("hand primal", |b| {
            b.iter(|| black_box((prog.primal)(black_box(&args))))
        });
        match &compiled.gradient {
            Ok(grad) => {
                if let Ok(mut n) = Native::gradient(grad, &args, &lookup) {
                    g.bench_function("unfad gradient", |b| b.iter(|| black_box(n.run())));
                }
            }
            Err(e) => eprintln!("{}: no gradient yet ({e})", prog.name),
        }
        let mut grads = Program::grad_buffers(&args);
        let mut scratch = Vec::new();
        g.bench_function("hand gradient", |b| {
            b.iter(|| black_box((prog.gradient)(black_box(&args), &mut grads, &mut scratch)))
        });
        g.finish();
    }
}

fn compile(c: &mut Criterion) {
    let dir = unfad_suite::examples_dir();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ad"))
        .collect();
    files.sort();
    let engine = unfad::Engine::new();
    let mut g = c.benchmark_group("compile_grad");
    g.sample_size(30).measurement_time(Duration::from_secs(2));
    for f in files {
        let Ok(src) = std::fs::read_to_string(&f) else {
            continue;
        };
        let name = f
            .file_stem()
            .map_or(String::new(), |s| s.to_string_lossy().into_owned());
        match engine.compile_grad(&src) {
            Ok(_) => {
                g.bench_function(&name, |b| b.iter(|| black_box(engine.compile_grad(&src))));
            }
            Err(e) => eprintln!("examples/{name}.ad: no gradient yet ({e})"),
        }
    }
    g.finish();
}

criterion_group!(benches, runtime, compile);
criterion_main!(benches);
