//! Regenerates `docs/performance.md` and `docs/performance.svg`: measures every program of
//! the suite at every size, unfad against the hand-written baselines, and the compile
//! times of the bundled examples.
//!
//! `cargo run --release -p unfad-suite --bin perf-report [-- --quick] [--out DIR]`
//!
//! `--only NAME,...` measures those programs at their largest size and prints the figures
//! without writing the report (a quick look while working on one program); `--compile`
//! prints the compile times of the examples alone, `--gradbench` the GradBench gmm figures.

use std::path::PathBuf;
use std::time::Instant;

use unfad::Engine;
use unfad_suite::gradbench::{gmm_input, measure_gmm, GmmFigures, GMM_SIZE};
use unfad_suite::measure::{measure_program, median_ms, Budget};
use unfad_suite::report::{CompileRow, Machine, Report};
use unfad_suite::suite::programs;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut budget = Budget::REPORT;
    let mut out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut only: Option<Vec<String>> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => budget = Budget::QUICK,
            "--out" => out = PathBuf::from(args.next().ok_or("--out needs a directory")?),
            "--compile" => {
                for row in compile_times()? {
                    let ms = |r: &Result<f64, String>| {
                        r.as_ref()
                            .map_or_else(|e| e.clone(), |t| format!("{t:.2} ms"))
                    };
                    let stages = row.stages.map_or(String::from("-"), |s| {
                        format!("{:.2} / {:.2} / {:.2} / {:.2}", s[0], s[1], s[2], s[3])
                    });
                    eprintln!(
                        "{:<28} compile_grad {:>10} (new engine {:>10})  (parse / reverse / optimize / JIT: {stages} ms)  compile {}",
                        row.file,
                        ms(&row.grad_ms),
                        ms(&row.grad_new_engine_ms),
                        ms(&row.primal_ms)
                    );
                }
                return Ok(());
            }
            "--gradbench" => {
                eprintln!("{:?}", gradbench_gmm(budget));
                return Ok(());
            }
            "--only" => {
                let names = args.next().ok_or("--only needs program names")?;
                only = Some(names.split(',').map(str::to_string).collect());
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}` (--quick, --out DIR, --only NAME,..., --compile, --gradbench)"
                ))
            }
        }
    }
    if debug() {
        eprintln!("warning: a debug build measures unoptimised baselines; use --release");
    }
    let start = Instant::now();
    let progs = programs();
    if let Some(names) = &only {
        if let Some(n) = names.iter().find(|n| !progs.iter().any(|p| p.name == *n)) {
            return Err(format!("no program `{n}` in the suite"));
        }
    }
    let mut measured = Vec::new();
    for p in &progs {
        let largest = match &only {
            Some(names) if !names.iter().any(|n| n == p.name) => continue,
            Some(_) => p.sizes.last().map(std::slice::from_ref),
            None => None,
        };
        eprint!("{:<14}", p.name);
        let m = measure_program(p, largest, budget).map_err(|e| format!("{}: {e}", p.name))?;
        if let Some(pt) = m.points.last() {
            eprintln!(
                " ratio {:>6} model {:>6} vs hand: primal {:.2} gradient {} ({} against {:.3} ms)",
                pt.ratio.map_or("-".into(), |r| format!("{r:.2}")),
                pt.model.map_or("-".into(), |m| format!("{:.2}", m.ratio)),
                pt.primal_vs_hand,
                pt.gradient_vs_hand
                    .map_or("-".into(), |r| format!("{r:.2}")),
                pt.gradient_ns
                    .map_or("-".into(), |t| format!("{:.3} ms", t * 1e-6)),
                pt.hand_gradient_ns * 1e-6,
            );
        }
        measured.push(m);
    }
    if only.is_some() {
        return Ok(());
    }
    eprint!("gradbench gmm ");
    let gmm = gradbench_gmm(budget);
    eprintln!("{gmm:?}");
    let compile = compile_times()?;
    let report = Report {
        machine: Machine::detect(),
        budget,
        programs: &progs,
        measured: &measured,
        compile: &compile,
        seconds: start.elapsed().as_secs_f64(),
    };
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let md = out.join("performance.md");
    std::fs::write(&md, report.markdown_with_gmm(Some(&gmm)))
        .map_err(|e| format!("{}: {e}", md.display()))?;
    let svg = out.join("performance.svg");
    report.svg(&svg)?;
    eprintln!(
        "wrote {} and {} in {:.0} s",
        md.display(),
        svg.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The GradBench tool's gmm figures at GradBench's `d = 10, k = 25, n = 1000`.
fn gradbench_gmm(budget: Budget) -> Result<GmmFigures, String> {
    let (d, k, n) = GMM_SIZE;
    measure_gmm(&gmm_input(d, k, n, 1), budget)
}

fn debug() -> bool {
    cfg!(debug_assertions)
}

/// `compile_grad` and `compile` of every example, median of 20 compilations.
fn compile_times() -> Result<Vec<CompileRow>, String> {
    let dir = unfad_suite::examples_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ad"))
        .collect();
    files.sort();
    let engine = Engine::new();
    let mut rows = Vec::new();
    for f in files {
        let src = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let new_engine = || -> Result<f64, String> {
            let once = || {
                Engine::new()
                    .compile_grad(&src)
                    .map(|_| ())
                    .map_err(|e| e.to_string().lines().next().unwrap_or("").to_string())
            };
            once()?;
            Ok(median_ms(20, || {
                let _ = std::hint::black_box(once());
            }))
        };
        let time = |grad: bool| -> Result<f64, String> {
            let once = |engine: &Engine| -> Result<(), String> {
                if grad {
                    engine.compile_grad(&src).map(|_| ())
                } else {
                    engine.compile(&src).map(|_| ())
                }
                .map_err(|e| e.to_string().lines().next().unwrap_or("").to_string())
            };
            once(&engine)?;
            Ok(median_ms(20, || {
                let _ = std::hint::black_box(once(&engine));
            }))
        };
        rows.push(CompileRow {
            file: format!(
                "examples/{}",
                f.file_name()
                    .map_or(String::new(), |n| n.to_string_lossy().into_owned())
            ),
            grad_ms: time(true),
            grad_new_engine_ms: new_engine(),
            primal_ms: time(false),
            stages: stages(&src),
        });
    }
    Ok(rows)
}

/// Medians of the stages of `compile_grad` on `src` (`None` if one fails).
fn stages(src: &str) -> Option<[f64; 4]> {
    let mut runs: [Vec<f64>; 4] = Default::default();
    for _ in 0..10 {
        let t = Instant::now();
        let mut p = unfad::Pipeline::load(src, None).ok()?;
        let t1 = t.elapsed();
        let all = p.wrt(None).ok()?;
        let rev = p.reverse(&all).ok()?;
        let t2 = t.elapsed();
        let opt = p.optimize(&rev).ok()?;
        let t3 = t.elapsed();
        unfad_jit::compile_parallel(&mut p.program.arena, &opt).ok()?;
        let t4 = t.elapsed();
        for (k, d) in [t1, t2 - t1, t3 - t2, t4 - t3].into_iter().enumerate() {
            runs[k].push(d.as_secs_f64() * 1e3);
        }
    }
    Some(runs.map(|r| unfad_suite::measure::median(&r)))
}
