//! Regenerates `docs/performance.md` and `docs/performance.svg`: measures every program of
//! the suite at every size, unfad against the hand-written baselines, and the compile
//! times of the bundled examples; with each program, in rounds of their own, its native jvp
//! and Hessian-vector product (issue 21).
//!
//! `cargo run --release -p unfad-suite --bin perf-report [-- --quick] [--out DIR]`
//!
//! `--only NAME,...` measures those programs at their largest size (and at the sizes JAX
//! is also measured at) and prints the figures without writing the report (a quick look while working on one program); `--compile`
//! prints the compile times of the examples alone, `--gradbench` the GradBench gmm figures,
//! `--batches` the section on the math kernels in batches, `--routines` every program at
//! every size with the vector routines of row updates off and on (`unfad_jit`'s
//! `lower/routines.rs`), timed in turn, results checked equal bit for bit.
//!
//! JAX is measured beside unfad (`bench/peers/jax_suite.py`, at each program's largest
//! size) when `UNFAD_PYTHON` names a Python with JAX installed; `--no-jax` leaves it out.
//! With `--only`, the JAX table is printed on stdout.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::time::Instant;

use unfad::Engine;
use unfad_suite::batches::{
    measure_batches, measure_kernels, measure_switch, runs_kernels, BatchRow, KernelRow, Switch,
};
use unfad_suite::gradbench::{gmm_input, measure_gmm, GmmFigures, GMM_SIZE};
use unfad_suite::measure::{
    measure_program_with_second_order, measure_safety, measure_streaming, Budget, Measured,
    SafetyRow, StreamingRow,
};
use unfad_suite::peers::{measure_jax, Jax, JaxHvpRow, EXTRA_POINTS};
use unfad_suite::report::{
    batches_section, jax_section, second_order_section, CompileRow, Machine, Report,
    SecondOrderFigures,
};
use unfad_suite::suite::{programs, Program, Size};

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
    let mut with_jax = true;
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
            "--batches" => {
                let progs = programs();
                let (kernels, rows) = batch_figures(&progs, budget)?;
                let mut s = String::new();
                batches_section(&mut s, &kernels, &rows);
                println!("{s}");
                return Ok(());
            }
            "--routines" => {
                // Every program at every size: the routines must not cost where they do
                // not pay (short rows, rows known at run time only).
                println!("| program | size | primal: off | on | speedup | value+grad: off | on | speedup |\n|---|---:|---:|---:|---:|---:|---:|---:|");
                for p in &programs() {
                    for &size in p.sizes.iter() {
                        let r = measure_switch(Switch::Routines, p, size, budget)?;
                        let (g_off, g_on) = r.gradient.unwrap_or((f64::NAN, f64::NAN));
                        println!(
                            "| {} | {} | {:.0} ns | {:.0} ns | {:.2}x | {:.0} ns | {:.0} ns | {:.2}x |",
                            r.name,
                            size.label(),
                            r.primal.0,
                            r.primal.1,
                            r.primal_speedup,
                            g_off,
                            g_on,
                            r.gradient_speedup.unwrap_or(f64::NAN)
                        );
                    }
                }
                return Ok(());
            }
            "--gradbench" => {
                eprintln!("{:?}", gradbench_gmm(budget));
                return Ok(());
            }
            "--no-jax" => with_jax = false,
            "--only" => {
                let names = args.next().ok_or("--only needs program names")?;
                only = Some(names.split(',').map(str::to_string).collect());
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}` (--quick, --out DIR, --only NAME,..., --no-jax, --compile, --gradbench, --batches, --routines)"
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
    let mut second = Vec::new();
    for p in &progs {
        // With `--only`: the largest size, after the sizes JAX is also measured at.
        let chosen: Option<Vec<Size>> = match &only {
            Some(names) if !names.iter().any(|n| n == p.name) => continue,
            Some(_) => {
                let largest = p.sizes.last().copied();
                let extra = EXTRA_POINTS.iter().filter(|&&(name, size)| {
                    name == p.name && p.sizes.contains(&size) && Some(size) != largest
                });
                Some(extra.map(|&(_, size)| size).chain(largest).collect())
            }
            None => None,
        };
        eprint!("{:<14}", p.name);
        let (m, so) = measure_program_with_second_order(p, chosen.as_deref(), budget)
            .map_err(|e| format!("{}: {e}", p.name))?;
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
        if let Some(sp) = so.points.last() {
            let r = |r: Option<f64>| r.map_or("-".into(), |r| format!("{r:.2}"));
            eprintln!(
                "{:<14} jvp / primal {:>6} hvp / gradient {:>6}{}{}",
                "",
                r(sp.jvp_ratio),
                r(sp.hvp_ratio),
                so.jvp_error
                    .as_ref()
                    .map_or(String::new(), |e| format!("  no jvp: {e}")),
                so.hvp_error
                    .as_ref()
                    .map_or(String::new(), |e| format!("  no hvp: {e}")),
            );
        }
        measured.push(m);
        second.push(so);
    }
    let (jax, jax_hvp) = match jax_figures(&progs, &measured, budget, with_jax) {
        Ok((jax, hvp)) => (Ok(jax), hvp),
        Err(e) => (Err(e), Vec::new()),
    };
    let second = SecondOrderFigures {
        measured: &second,
        jax: &jax_hvp,
    };
    if only.is_some() {
        let mut table = String::new();
        jax_section(&mut table, &progs, &measured, &jax, budget);
        second_order_section(&mut table, &measured, second, &jax, budget);
        println!("{table}");
        return Ok(());
    }
    eprint!("gradbench gmm ");
    let gmm = gradbench_gmm(budget);
    eprintln!("{gmm:?}");
    let compile = compile_times()?;
    let safety = safety_costs(&progs, budget)?;
    let streaming = streaming_costs(&progs, budget)?;
    let python = python_door();
    let (kernel_loops, batches) = batch_figures(&progs, budget)?;
    let report = Report {
        machine: Machine::detect(),
        budget,
        programs: &progs,
        measured: &measured,
        compile: &compile,
        safety: &safety,
        streaming: &streaming,
        python,
        jax,
        kernel_loops,
        batches: &batches,
        seconds: start.elapsed().as_secs_f64(),
    };
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let md = out.join("performance.md");
    std::fs::write(&md, report.markdown_with(Some(&gmm), Some(second)))
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

/// The kernels' loops (or why they were not measured) and the programs' rows.
type BatchFigures = (Result<Vec<KernelRow>, String>, Vec<BatchRow>);

/// Each math kernel's loop, and every program of the suite that runs a kernel at its
/// largest size, with batches off and on (issue 18).
fn batch_figures(progs: &[Program], budget: Budget) -> Result<BatchFigures, String> {
    eprintln!("kernels in batches");
    let kernels = measure_kernels(budget);
    let mut rows = Vec::new();
    for p in progs.iter().filter(|p| runs_kernels(p)) {
        let size = *p.sizes.last().ok_or("a program without sizes")?;
        eprintln!("batches {} {}", p.name, size.label());
        rows.push(measure_batches(p, size, budget).map_err(|e| format!("{}: {e}", p.name))?);
    }
    Ok((kernels, rows))
}

/// The suite's program `name`.
fn program<'p>(progs: &'p [Program], name: &str) -> Result<&'p Program, String> {
    progs
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| format!("no program `{name}` in the suite"))
}

/// The programs whose calls the memory-safety section times: with and without run-time
/// checks, at their smallest size (where a call's fixed cost shows) and their largest.
const SAFETY_PROGRAMS: [&str; 3] = ["dot", "recurrence", "matvec_tanh"];

/// The checked call against the bound call of [`SAFETY_PROGRAMS`].
fn safety_costs(progs: &[Program], budget: Budget) -> Result<Vec<SafetyRow>, String> {
    let mut rows = Vec::new();
    for name in SAFETY_PROGRAMS {
        let p = program(progs, name)?;
        for size in [p.sizes.first(), p.sizes.last()].into_iter().flatten() {
            eprintln!("safety {name} {}", size.label());
            rows.push(measure_safety(p, *size, budget).map_err(|e| format!("{name}: {e}"))?);
        }
    }
    Ok(rows)
}

/// The reductions whose primal the report holds against a loop streaming their inputs.
const STREAMING_PROGRAMS: [&str; 2] = ["sum", "dot"];

/// [`STREAMING_PROGRAMS`] at their largest size against [`unfad_suite::measure::stream`].
fn streaming_costs(progs: &[Program], budget: Budget) -> Result<Vec<StreamingRow>, String> {
    let mut rows = Vec::new();
    for name in STREAMING_PROGRAMS {
        let p = program(progs, name)?;
        let size = *p.sizes.last().ok_or("a program without sizes")?;
        eprintln!("streaming {name} {}", size.label());
        rows.push(measure_streaming(p, size, budget).map_err(|e| format!("{name}: {e}"))?);
    }
    Ok(rows)
}

/// The Python door's figures: `python/bench_overhead.py --json` run by the Python that
/// `UNFAD_PYTHON` names, if any.
fn python_door() -> Result<Vec<(String, Option<f64>)>, String> {
    let python = std::env::var("UNFAD_PYTHON")
        .map_err(|_| "`UNFAD_PYTHON` names no Python with the package installed".to_string())?;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/bench_overhead.py");
    eprintln!("python door: {python} {}", script.display());
    let out = std::process::Command::new(&python)
        .arg(&script)
        .arg("--json")
        .output()
        .map_err(|e| format!("{python}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{python} {}: {}",
            script.display(),
            err.lines().last().unwrap_or("failed")
        ));
    }
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("the benchmark's output is not JSON: {e}"))?;
    let rows = json["rows"]
        .as_array()
        .ok_or("the benchmark's output has no rows")?
        .iter()
        .map(|r| (r[0].as_str().unwrap_or("?").to_string(), r[1].as_f64()))
        .collect();
    Ok(rows)
}

/// JAX's figures at the largest size of every program of `measured`, and its
/// Hessian-vector products (`Err` says why there are none).
fn jax_figures(
    progs: &[Program],
    measured: &[Measured],
    budget: Budget,
    with_jax: bool,
) -> Result<(Jax, Vec<JaxHvpRow>), String> {
    if !with_jax {
        return Err("JAX not measured (--no-jax)".into());
    }
    let python = unfad_suite::peers::python()?;
    // Each program's largest size, and the extra points at sizes unfad measured.
    let mut points: Vec<(&Program, Size)> = measured
        .iter()
        .filter_map(|m| {
            let p = progs.iter().find(|p| p.name == m.name)?;
            Some((p, m.points.last()?.size))
        })
        .collect();
    for &(name, size) in EXTRA_POINTS {
        let unfad_measured = measured
            .iter()
            .any(|m| m.name == name && m.points.iter().any(|pt| pt.size == size));
        let program = progs.iter().find(|p| p.name == name);
        if let (true, Some(p)) = (unfad_measured, program) {
            if !points.iter().any(|&(q, s)| q.name == name && s == size) {
                points.push((p, size));
            }
        }
    }
    let (jax, hvp) = measure_jax(&python, &points, budget)?;
    for row in &hvp {
        match &row.outcome {
            Ok(h) => eprintln!(
                "jax {:<18} {:>14} hvp {:>10.3} ms{}",
                row.name,
                row.size.label(),
                h.hvp_ns * 1e-6,
                h.disagreement
                    .as_ref()
                    .map_or(String::new(), |d| format!("  DISAGREES: {d}"))
            ),
            Err(e) => eprintln!("jax {:<18} hvp failed: {e}", row.name),
        }
    }
    for row in &jax.rows {
        match &row.outcome {
            Ok(p) => eprintln!(
                "jax {:<18} {:>14} primal {:>10.3} ms value+grad {:>10.3} ms{}",
                row.name,
                row.size.label(),
                p.primal_ns * 1e-6,
                p.gradient_ns * 1e-6,
                p.disagreement
                    .as_ref()
                    .map_or(String::new(), |d| format!("  DISAGREES: {d}"))
            ),
            Err(e) => eprintln!("jax {:<18} failed: {e}", row.name),
        }
    }
    Ok((jax, hvp))
}

/// The GradBench tool's gmm figures at GradBench's `d = 10, k = 25, n = 1000`.
fn gradbench_gmm(budget: Budget) -> Result<GmmFigures, String> {
    let (d, k, n) = GMM_SIZE;
    measure_gmm(&gmm_input(d, k, n, 1), budget)
}

fn debug() -> bool {
    cfg!(debug_assertions)
}

/// Rounds of the compile-time measurements; each round compiles every example in turn
/// (twice each way, and its stages once), so that a burst of load on the machine does not
/// fall on one example's measurements only. Medians over the rounds: 20 compilations each
/// way, 10 timings of the stages.
const COMPILE_ROUNDS: usize = 10;

/// `compile_grad` and `compile` of every example.
fn compile_times() -> Result<Vec<CompileRow>, String> {
    let dir = unfad_suite::examples_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ad"))
        .collect();
    files.sort();
    let engine = Engine::new();
    let first_line = |e: unfad::Error| e.to_string().lines().next().unwrap_or("").to_string();
    struct Example {
        file: String,
        src: String,
        /// Whether each way compiles (the error if not): gradient, primal, stages.
        grad: Result<(), String>,
        primal: Result<(), String>,
        stages_ok: bool,
        samples: [Vec<f64>; 3],
        stages: [Vec<f64>; 4],
    }
    let mut examples = Vec::new();
    for f in files {
        let src = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let grad = engine.compile_grad(&src).map(|_| ()).map_err(first_line);
        let primal = engine.compile(&src).map(|_| ()).map_err(first_line);
        let stages_ok = stages(&src).is_some();
        examples.push(Example {
            file: format!(
                "examples/{}",
                f.file_name()
                    .map_or(String::new(), |n| n.to_string_lossy().into_owned())
            ),
            src,
            grad,
            primal,
            stages_ok,
            samples: Default::default(),
            stages: Default::default(),
        });
    }
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64() * 1e3
    };
    for _ in 0..COMPILE_ROUNDS {
        for ex in examples.iter_mut() {
            let src = ex.src.as_str();
            for _ in 0..2 {
                if ex.grad.is_ok() {
                    let t = time(&mut || {
                        let _ = std::hint::black_box(engine.compile_grad(src));
                    });
                    ex.samples[0].push(t);
                    let t = time(&mut || {
                        let _ = std::hint::black_box(Engine::new().compile_grad(src));
                    });
                    ex.samples[1].push(t);
                }
                if ex.primal.is_ok() {
                    let t = time(&mut || {
                        let _ = std::hint::black_box(engine.compile(src));
                    });
                    ex.samples[2].push(t);
                }
            }
            if ex.stages_ok {
                if let Some(s) = stages(src) {
                    for (k, d) in s.into_iter().enumerate() {
                        ex.stages[k].push(d);
                    }
                }
            }
        }
    }
    let median = unfad_suite::measure::median;
    Ok(examples
        .into_iter()
        .map(|ex| CompileRow {
            file: ex.file,
            grad_ms: ex.grad.clone().map(|()| median(&ex.samples[0])),
            grad_new_engine_ms: ex.grad.map(|()| median(&ex.samples[1])),
            primal_ms: ex.primal.map(|()| median(&ex.samples[2])),
            stages: ex
                .stages_ok
                .then(|| ex.stages.each_ref().map(|s| median(s))),
        })
        .collect())
}

/// The stages of one `compile_grad` of `src` in milliseconds, each timed alone with a new
/// arena (`None` if one fails).
fn stages(src: &str) -> Option<[f64; 4]> {
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
    Some([t1, t2 - t1, t3 - t2, t4 - t3].map(|d| d.as_secs_f64() * 1e3))
}
