//! The performance report: `docs/performance.md` (tables) and `docs/performance.svg` (the
//! measured and model ratios against the bound), written from measurements only.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use plotters::prelude::*;

use crate::batches::{BatchRow, KernelRow};
use crate::gradbench::GmmFigures;
use crate::measure::{fit, Budget, Measured, Point, SafetyRow, SecondOrder, StreamingRow};
use crate::peers::{
    hvp_agreed, Jax, JaxHvpRow, AGREEMENT, INSTALL, MAX_SECONDS_PER_PROGRAM, SCRIPT,
};
use crate::suite::{Family, Program, Size};
use unfad_jit::BATCH_CHUNK;

/// The command that regenerates the report.
pub const COMMAND: &str = "cargo run --release -p unfad-suite --bin perf-report";

/// The programs whose unfad/hand-written ratios issue 5 sets targets for, at n = 10^6.
pub const TARGETS: &[&str] = &["dot", "prod", "logsumexp", "recurrence"];
/// Issue 5: unfad's primal within this factor of the hand-written primal.
pub const PRIMAL_TARGET: f64 = 1.2;
/// Issue 18's target for `sum` and `dot`: the primal within this factor of a loop that
/// streams the same arrays from memory.
pub const STREAMING_TARGET: f64 = 1.5;
/// Issue 5: unfad's value and gradient within this factor of the hand-written gradient.
pub const GRADIENT_TARGET: f64 = 1.5;
/// Issue 5: `compile_grad` of every example under this many milliseconds.
pub const COMPILE_TARGET_MS: f64 = 10.0;
/// Issue 21: the jvp (value and directional derivative) within a small constant of the
/// primal. The issue names no number; the report holds it to 3, the textbook constant of
/// dual numbers (`docs/cheap-gradient.md` gives the cost model's view).
pub const JVP_TARGET: f64 = 3.0;
/// Issue 21: the Hessian-vector product at most this many times the gradient's time.
pub const HVP_TARGET: f64 = 5.0;
/// Measured and model ratios further apart than this factor need an explanation.
pub const EXPLAIN_FACTOR: f64 = 2.0;

/// Where and when the measurements were taken.
#[derive(Clone, Debug)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub rustc: String,
    /// UTC, `YYYY-MM-DD HH:MM`.
    pub date: String,
    pub commit: String,
}

impl Machine {
    /// The machine this runs on (what cannot be found out reads "unknown").
    pub fn detect() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let run = |cmd: &str, args: &[&str]| {
            std::process::Command::new(cmd)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_else(|| "unknown".into())
        };
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        Machine {
            cpu,
            cores,
            rustc: run(&rustc, &["--version"]),
            date: utc_now(),
            commit: run("git", &["rev-parse", "--short", "HEAD"]),
        }
    }
}

/// The current UTC time as `YYYY-MM-DD HH:MM`.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// `compile_grad` of one bundled example.
#[derive(Clone, Debug)]
pub struct CompileRow {
    pub file: String,
    /// Median milliseconds, or why it does not compile: by one engine that compiled
    /// before (and keeps its memory), and by a new engine each time.
    pub grad_ms: Result<f64, String>,
    pub grad_new_engine_ms: Result<f64, String>,
    pub primal_ms: Result<f64, String>,
    /// Medians of the stages of `compile_grad`, in milliseconds: parsing and inlining,
    /// reverse mode, the optimizer, the JIT (lowering and Cranelift).
    pub stages: Option<[f64; 4]>,
}

/// Everything the report shows.
pub struct Report<'a> {
    pub machine: Machine,
    pub budget: Budget,
    pub programs: &'a [Program],
    pub measured: &'a [Measured],
    pub compile: &'a [CompileRow],
    /// What memory safety costs a call (none when not measured).
    pub safety: &'a [SafetyRow],
    /// Reductions against a loop that streams their inputs (none when not measured).
    pub streaming: &'a [StreamingRow],
    /// The Python door's call overhead (`python/bench_overhead.py --json`): its rows (a
    /// name and seconds per call, `None` for a peer not installed), or why there are none.
    pub python: Result<Vec<(String, Option<f64>)>, String>,
    /// JAX's figures at each program's largest size (`bench/peers/jax_suite.py`), or why
    /// there are none (the JAX column then reads "—").
    pub jax: Result<Jax, String>,
    /// Each math kernel's loop with batches off and on (issue 18), or why not measured.
    pub kernel_loops: Result<Vec<KernelRow>, String>,
    /// The programs that run kernels, batches off and on (none when not measured).
    pub batches: &'a [BatchRow],
    /// Seconds the measurements took.
    pub seconds: f64,
}

fn ns(t: f64) -> String {
    if t.is_nan() {
        "-".into()
    } else if t < 0.0 {
        format!("-{}", ns(-t))
    } else if t < 1e3 {
        format!("{t:.1} ns")
    } else if t < 1e6 {
        format!("{:.2} µs", t / 1e3)
    } else {
        format!("{:.2} ms", t / 1e6)
    }
}

fn x(r: f64) -> String {
    if r.is_nan() {
        "-".into()
    } else {
        format!("{r:.2}")
    }
}

/// A ratio with two significant digits at least (JAX's fixed cost of a call makes unfad's
/// scalar programs thousands of times faster).
fn ratio(r: f64) -> String {
    if r.is_nan() || r <= 0.0 || r >= 0.1 {
        return x(r);
    }
    let decimals = (1 - r.log10().floor() as i64).max(2) as usize;
    format!("{r:.decimals$}")
}

fn opt(r: Option<f64>) -> String {
    r.map_or("-".into(), x)
}

/// Whether the measured and model ratios of `pt` are more than [`EXPLAIN_FACTOR`] apart.
pub fn differs(pt: &Point) -> bool {
    match (pt.ratio, pt.model) {
        (Some(r), Some(m)) => {
            let q = r / m.ratio;
            !(1.0 / EXPLAIN_FACTOR..=EXPLAIN_FACTOR).contains(&q)
        }
        _ => false,
    }
}

/// The point of `m` at `size`.
fn at(m: &Measured, size: Size) -> Option<&Point> {
    m.points.iter().find(|p| p.size == size)
}

fn yes(ok: bool) -> &'static str {
    if ok {
        "yes"
    } else {
        "**no**"
    }
}

/// The GradBench gmm section.
fn gradbench_section(s: &mut String, g: &Result<GmmFigures, String>) {
    let _ = writeln!(
        s,
        "## GradBench: gmm (issue 8)\n\n\
         The GradBench tool's own timings (`crates/gradbench`), measured through its code: \
         `unfad_gradbench::define(\"gmm\")` compiles the module, then its `objective` and \
         `jacobian` calls run as `evaluate` messages run them (arguments converted once, \
         untimed; each run checks its arguments and, for the jacobian, fills the gradients of \
         `alpha`, `mu`, `q` and `L`). The input is generated as GradBench generates its gmm \
         inputs: `x`, `alpha`, `q` and `l` standard normal, `mu` uniform in [0, 1), `m = 0`, \
         `gamma = 1` (`src/gradbench.rs`, a fixed seed). The two calls are sampled in turn as \
         above; the ratio is the median of the ratios within a round.\n"
    );
    match g {
        Ok(f) => {
            let _ = writeln!(
                s,
                "| d | k | n | `define` (compile) | objective | jacobian | jacobian / objective |\n\
                 |---:|---:|---:|---:|---:|---:|---:|\n\
                 | {} | {} | {} | {:.1} ms | {} | {} | {} |\n",
                f.d,
                f.k,
                f.n,
                f.define_ms,
                ns(f.objective_ns),
                ns(f.jacobian_ns),
                x(f.ratio)
            );
        }
        Err(e) => {
            let _ = writeln!(s, "Not measured: {e}\n");
        }
    }
}

/// What a JAX cell reads when JAX was not measured.
pub const ABSENT: &str = "—";

/// Why JAX was not measured ("" when it was).
/// The section on the math kernels in batches (issue 18): each kernel's loop, then the
/// programs that run kernels, batches off against on, timed in turn in one process.
pub fn batches_section(
    s: &mut String,
    kernels: &Result<Vec<KernelRow>, String>,
    rows: &[BatchRow],
) {
    let lanes = crate::batches::host_lanes();
    let _ = writeln!(
        s,
        "## Math kernels in batches (issue 18)\n\n\
         A loop whose elements run math kernels runs in chunks of {} elements: a first pass \
         writes each kernel's argument to the stack, one call per kernel applies the kernel \
         to the whole chunk on the host's widest vectors (the kernels' definitions compiled \
         by rustc for AVX2 or AVX-512, every lane the scalar twin's operations: the results \
         are the same bit for bit, checked here on every program), and a second pass reads \
         the values back (`unfad_jit`'s `lower/batch.rs`). Where the host has no vectors \
         wider than two lanes, or a loop runs inside another for fewer than 16 elements, the \
         kernels stay inline on two lanes (an inner loop whose count is known at run time \
         only, a row's length, is emitted both ways, and the count chooses). {}. Batches off (`BatchMode::Off`) \
         against on (the default), compiled and timed in turn in one process; the speedup is \
         the median of the ratios `off / on` within a round.\n",
        BATCH_CHUNK,
        match lanes {
            Some(l) => format!("This host's batches compute {l} reals at once"),
            None => "This host has no wider vectors: both columns time the same code".into(),
        }
    );
    match kernels {
        Ok(k) => {
            let _ = writeln!(
                s,
                "Each kernel alone, `reduce + 0 (map (a. f(a)) x)` over {} reals in [-5, 5] \
                 (`log(a * a + 0.5)` and `log1p(a * a)` for the logarithms), per element:\n\n\
                 | kernel | inline | batched | speedup |\n|---|---:|---:|---:|",
                crate::batches::KERNEL_ELEMENTS
            );
            for r in k {
                let _ = writeln!(
                    s,
                    "| `{}` | {:.2} ns | {:.2} ns | {} |",
                    r.kernel,
                    r.inline_ns,
                    r.batched_ns,
                    x(r.speedup)
                );
            }
            let _ = writeln!(s);
        }
        Err(e) => {
            let _ = writeln!(s, "The kernels' loops were not measured: {e}\n");
        }
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "The suite's programs that run a kernel, at their largest size:\n\n\
         | program | size | primal: inline | batched | speedup | value+grad: inline | batched | speedup |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in rows {
        let (g_off, g_on, g_x) = match (r.gradient, r.gradient_speedup) {
            (Some((a, b)), Some(q)) => (ns(a), ns(b), x(q)),
            _ => ("-".into(), "-".into(), "-".into()),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            r.size.label(),
            ns(r.primal.0),
            ns(r.primal.1),
            x(r.primal_speedup),
            g_off,
            g_on,
            g_x
        );
    }
    let mut p: Vec<f64> = rows.iter().map(|r| r.primal_speedup).collect();
    let mut g: Vec<f64> = rows.iter().filter_map(|r| r.gradient_speedup).collect();
    p.sort_by(f64::total_cmp);
    g.sort_by(f64::total_cmp);
    let med = |v: &[f64]| v.get(v.len() / 2).copied().unwrap_or(f64::NAN);
    let _ = writeln!(
        s,
        "\nSpeedup over the inline kernels: primal median {}, range {} to {}; value and \
         gradient median {}, range {} to {}. The machine is shared and a program's time \
         moves by a few percent from run to run (more for one whose loops are short), so \
         ratios near 1 are the same code's noise.\n",
        x(med(&p)),
        x(*p.first().unwrap_or(&f64::NAN)),
        x(*p.last().unwrap_or(&f64::NAN)),
        x(med(&g)),
        x(*g.first().unwrap_or(&f64::NAN)),
        x(*g.last().unwrap_or(&f64::NAN)),
    );
}

fn jax_absence(jax: &Result<Jax, String>) -> &str {
    jax.as_ref()
        .err()
        .map_or("", |why| why.trim_end_matches('.'))
}

/// unfad's value-and-gradient time over JAX's for `name` at `pt`'s size: "—" when JAX was
/// not measured, "-" when there is nothing to compare (no gradient, JAX failed or disagreed
/// with unfad, another size).
fn jax_ratio(jax: &Result<Jax, String>, name: &str, pt: &Point) -> String {
    let Ok(jax) = jax else {
        return ABSENT.into();
    };
    match (jax.agreed(name, pt.size), pt.gradient_ns) {
        (Some(j), Some(unfad)) => ratio(unfad / j.gradient_ns),
        _ => "-".into(),
    }
}

/// The section of JAX beside unfad and the hand-written code (issue 18): one table per
/// family at each program's largest size (and at the other sizes JAX measured), with the
/// method, JAX's versions, and why a
/// program has no JAX figure. Without JAX the JAX cells read [`ABSENT`] and the section
/// says why.
pub fn jax_section(
    s: &mut String,
    programs: &[Program],
    measured: &[Measured],
    jax: &Result<Jax, String>,
    budget: Budget,
) {
    let _ = writeln!(
        s,
        "## Beside JAX (issue 18)\n\n\
         The same programs written plainly in JAX (`{SCRIPT}`: `jax.numpy`, and `lax.scan` \
         for the recurrences), on the same inputs (perf-report writes the suite's arguments \
         to files the script reads), at each program's largest size (and the diagonal GMM \
         also at GradBench's size). JAX runs on the CPU in \
         float64 (`jax_enable_x64`): `jax.jit(f)` for the primal, \
         `jax.jit(jax.value_and_grad(f, argnums=<every parameter>))` for the value and \
         gradient, each compiled and called once before timing. The two are sampled in turn \
         as above: a sample is a batch of calls lasting at least {} ms (every call waited \
         for with `block_until_ready`), a time is the median over {} rounds (fewer, at least \
         3, where a program's rounds would take more than {MAX_SECONDS_PER_PROGRAM} s). \
         JAX runs in its own process after unfad's measurements, so `unfad / JAX` is the \
         ratio of two medians of the same run rather than a median of ratios within a \
         round; XLA may run a matrix product on every core, unfad's code runs on one. \
         Before a time is shown, JAX's value and gradient are checked against unfad's (to \
         {AGREEMENT:e} relative to 1 + the largest magnitude): a program where they disagree \
         is marked and not compared. Install the peer with `{INSTALL}`, and run perf-report \
         with `UNFAD_PYTHON` naming that Python.\n",
        budget.sample.as_secs_f64() * 1e3,
        budget.rounds,
    );
    match jax {
        Ok(j) => {
            let versions: Vec<String> =
                j.versions.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ = writeln!(s, "Measured with {}.\n", versions.join(", "));
        }
        Err(_) => {
            let _ = writeln!(s, "{ABSENT}: {}.\n", jax_absence(jax));
        }
    }
    let mut notes = Vec::new();
    for (family, title) in [
        (Family::Core, "Core programs"),
        (Family::Plain, "Plainly written programs"),
    ] {
        let rows: Vec<&Measured> = measured
            .iter()
            .filter(|m| {
                programs
                    .iter()
                    .any(|p| p.name == m.name && p.family == family)
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "### {title}\n\n\
             | program | size | primal: unfad | hand | JAX | value+grad: unfad | hand | JAX | unfad / JAX |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        // Each program at its largest size, then at the other sizes JAX measured.
        let points = rows.iter().flat_map(|m| {
            let extra = m
                .points
                .iter()
                .rev()
                .skip(1)
                .filter(|pt| jax.as_ref().is_ok_and(|j| j.row(m.name, pt.size).is_some()));
            m.points
                .last()
                .into_iter()
                .chain(extra)
                .map(move |pt| (*m, pt))
        });
        for (m, pt) in points {
            let (jax_primal, jax_gradient) = match jax {
                Err(_) => (ABSENT.to_string(), ABSENT.to_string()),
                Ok(j) => match j.row(m.name, pt.size).map(|r| &r.outcome) {
                    None => ("-".into(), "-".into()),
                    Some(Err(e)) => {
                        notes.push(format!("- **{}**: JAX failed: {e}", m.name));
                        ("failed".into(), "failed".into())
                    }
                    Some(Ok(p)) => {
                        if let Some(d) = &p.disagreement {
                            notes.push(format!("- **{}**: JAX disagrees with unfad: {d}", m.name));
                        }
                        if p.rounds < budget.rounds {
                            notes.push(format!(
                                "- **{}**: JAX's medians are over {} rounds.",
                                m.name, p.rounds
                            ));
                        }
                        let mark = if p.disagreement.is_some() {
                            " **disagrees**"
                        } else {
                            ""
                        };
                        (
                            format!("{}{mark}", ns(p.primal_ns)),
                            format!("{}{mark}", ns(p.gradient_ns)),
                        )
                    }
                },
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {jax_primal} | {} | {} | {jax_gradient} | {} |",
                m.name,
                pt.size.label(),
                ns(pt.primal_ns),
                ns(pt.hand_primal_ns),
                pt.gradient_ns.map_or("-".into(), ns),
                ns(pt.hand_gradient_ns),
                jax_ratio(jax, m.name, pt),
            );
        }
        s.push('\n');
    }
    if !notes.is_empty() {
        let _ = writeln!(s, "{}\n", notes.join("\n"));
    }
}

/// unfad's jvp and Hessian-vector product of every program, and JAX's `jvp(grad(f))`.
#[derive(Clone, Copy)]
pub struct SecondOrderFigures<'a> {
    pub measured: &'a [SecondOrder],
    /// JAX's Hessian-vector products (empty when JAX was not measured: `Report::jax` says
    /// why).
    pub jax: &'a [JaxHvpRow],
}

/// The median of `v` (sorted by ratio) and its last element.
fn median_and_worst<'a>(v: &mut [(f64, &'a str)]) -> Option<(f64, (f64, &'a str))> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2].0
    } else {
        (v[n / 2 - 1].0 + v[n / 2].0) / 2.0
    };
    Some((median, v[n - 1]))
}

/// A ratio against its target: bold when above it.
fn against(r: Option<f64>, target: f64) -> String {
    match r {
        Some(r) if r > target => format!("**{}**", x(r)),
        Some(r) => x(r),
        None => "-".into(),
    }
}

/// The section of forward mode and Hessian-vector products (issue 21): for each program
/// at its largest size (and the other sizes JAX measured), unfad's jvp against its primal
/// and its Hessian-vector product against its gradient, timed in rounds of their own, and
/// JAX's `jvp(grad(f))` beside it; the medians and worst ratios and every program above
/// the targets, computed from the figures.
pub fn second_order_section(
    s: &mut String,
    measured: &[Measured],
    second: SecondOrderFigures,
    jax: &Result<Jax, String>,
    budget: Budget,
) {
    let _ = writeln!(
        s,
        "## Forward mode and Hessian-vector products (issue 21)\n\n\
         The native jvp (`Engine::compile_jvp`: the value and the derivative in the direction \
         of one tangent per parameter, by forward mode, optimized and compiled like the \
         gradient) and the native Hessian-vector product (`Engine::compile_hvp`: value, \
         gradient and the Hessian times a direction, by forward mode over the optimized \
         gradient), their compiled functions bound to the arguments and a direction once \
         (`JvpFn::function`, `HvpFn::function`, `Func::bind`), are sampled in turn with the \
         primal and the gradient, in rounds of their own after those above ({} rounds of at \
         least {} ms; sampled in the same rounds, the Hessian-vector product's large outputs \
         slowed the primal's calls after it): `jvp / primal` and `hvp / gradient` are medians \
         of the ratios within a round. The direction is \
         deterministic noise in [-1, 1) shaped like the arguments (`measure::direction`). \
         Targets: the jvp within a small constant of the primal (the issue names none; held \
         here to {JVP_TARGET}x, the textbook constant of dual numbers; the cost model's view \
         is in [cheap-gradient.md](cheap-gradient.md)), the Hessian-vector product at most \
         {HVP_TARGET}x the gradient's time. Ratios above a target are in bold. `checked`: \
         the jvp's value is the primal's and its tangent the gradient's dot product with the \
         direction; the Hessian-vector product's value and gradient are the gradient's, and \
         `<d, H d>` matches a difference of the jvp's tangent along `d` (the central one, or \
         a one-sided one where a kink of the program spoils the other side). JAX's \
         `jax.jit` of `jax.jvp(jax.grad(f, argnums=<every parameter>), args, direction)` is \
         sampled in JAX's rounds with its primal and gradient (section above), in the same \
         direction, and checked against unfad's Hessian-vector product to {AGREEMENT:e} \
         before it is shown.\n",
        budget.rounds,
        budget.sample.as_secs_f64() * 1e3,
    );
    if let Err(why) = jax {
        let _ = writeln!(s, "{ABSENT}: {}.\n", why.trim_end_matches('.'));
    }
    let _ = writeln!(
        s,
        "| program | size | primal | jvp | jvp / primal | value+grad | hvp | hvp / gradient | JAX hvp | unfad hvp / JAX hvp | checked |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|"
    );
    let mut notes = Vec::new();
    let (mut jvps, mut hvps) = (Vec::new(), Vec::new());
    for m in measured {
        let Some(so) = second.measured.iter().find(|so| so.name == m.name) else {
            continue;
        };
        if let Some(e) = &so.jvp_error {
            notes.push(format!("- **{}**: no jvp: {e}", m.name));
        }
        if let Some(e) = &so.hvp_error {
            notes.push(format!("- **{}**: no Hessian-vector product: {e}", m.name));
        }
        let jax_row = |size: Size| {
            second
                .jax
                .iter()
                .find(|r| r.name == m.name && r.size == size)
        };
        // The largest size, then the other sizes JAX measured.
        let last = m.points.len().saturating_sub(1);
        let chosen = (0..m.points.len())
            .rev()
            .filter(|&i| i == last || jax_row(m.points[i].size).is_some());
        for i in chosen {
            let (pt, sp) = (&m.points[i], &so.points[i]);
            if i == last {
                if let Some(r) = sp.jvp_ratio {
                    jvps.push((r, m.name));
                }
                if let Some(r) = sp.hvp_ratio {
                    hvps.push((r, m.name));
                }
            }
            let jax_hvp = match (jax, jax_row(pt.size)) {
                (Err(_), _) => ABSENT.to_string(),
                (Ok(_), None) => "-".into(),
                (Ok(_), Some(r)) => match &r.outcome {
                    Err(e) => {
                        notes.push(format!(
                            "- **{}** ({}): no JAX Hessian-vector product: {e}",
                            m.name,
                            pt.size.label()
                        ));
                        "failed".into()
                    }
                    Ok(h) => match &h.disagreement {
                        Some(d) => {
                            notes.push(format!(
                                "- **{}** ({}): JAX's Hessian-vector product disagrees with \
                                 unfad's: {d}",
                                m.name,
                                pt.size.label()
                            ));
                            format!("{} **disagrees**", ns(h.hvp_ns))
                        }
                        None => ns(h.hvp_ns),
                    },
                },
            };
            let versus_jax = match (jax, hvp_agreed(second.jax, m.name, pt.size), sp.hvp_ns) {
                (Err(_), _, _) => ABSENT.to_string(),
                (Ok(_), Some(h), Some(ours)) => ratio(ours / h.hvp_ns),
                _ => "-".into(),
            };
            let checked = match (sp.jvp_agrees, sp.hvp_agrees) {
                (None, None) => "-",
                (a, b) => yes(a.unwrap_or(true) && b.unwrap_or(true)),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {jax_hvp} | {versus_jax} | {checked} |",
                m.name,
                pt.size.label(),
                ns(pt.primal_ns),
                sp.jvp_ns.map_or("-".into(), ns),
                against(sp.jvp_ratio, JVP_TARGET),
                pt.gradient_ns.map_or("-".into(), ns),
                sp.hvp_ns.map_or("-".into(), ns),
                against(sp.hvp_ratio, HVP_TARGET),
            );
        }
    }
    s.push('\n');
    for (what, v, target, against_what) in [
        ("jvp / primal", &mut jvps, JVP_TARGET, "primal"),
        ("hvp / gradient", &mut hvps, HVP_TARGET, "gradient"),
    ] {
        let within = v.iter().filter(|(r, _)| *r <= target).count();
        let total = v.len();
        let Some((median, worst)) = median_and_worst(v) else {
            continue;
        };
        let above: Vec<String> = v
            .iter()
            .filter(|(r, _)| *r > target)
            .map(|(r, n)| format!("{n} ({})", x(*r)))
            .collect();
        let _ = write!(
            s,
            "`{what}` at each program's largest size: median {}, worst {} ({}); {within} of \
             {total} within the target of {target}x the {against_what}.",
            x(median),
            x(worst.0),
            worst.1,
        );
        if above.is_empty() {
            let _ = writeln!(s, "\n");
        } else {
            let _ = writeln!(s, " Above the target: {}.\n", above.join(", "));
        }
    }
    if !notes.is_empty() {
        let _ = writeln!(s, "{}\n", notes.join("\n"));
    }
}

impl Report<'_> {
    fn program(&self, name: &str) -> Option<&Program> {
        self.programs.iter().find(|p| p.name == name)
    }

    /// The Markdown text of `docs/performance.md`.
    pub fn markdown(&self) -> String {
        self.markdown_with_gmm(None)
    }

    /// [`Report::markdown`] with the section of the GradBench tool's gmm figures (or why
    /// they could not be measured).
    pub fn markdown_with_gmm(&self, gmm: Option<&Result<GmmFigures, String>>) -> String {
        self.markdown_with(gmm, None)
    }

    /// [`Report::markdown_with_gmm`] with the section of forward mode and Hessian-vector
    /// products (when measured).
    pub fn markdown_with(
        &self,
        gmm: Option<&Result<GmmFigures, String>>,
        second: Option<SecondOrderFigures>,
    ) -> String {
        let mut s = String::new();
        let m = &self.machine;
        let _ = writeln!(
            s,
            "# Performance\n\n\
             Regenerate this file and `performance.svg` with\n\n\
             ```sh\n{COMMAND}\n```\n\n\
             (about {:.0} s). Every number below is measured by that command; none is typed \
             by hand.\n\n\
             - Machine: {}, {} core(s); {}; generated {} UTC at commit `{}`.\n\
             - Method: native code called directly (no argument checks), the hand-written \
             Rust baselines (plain loops, `--release`, in `src/suite.rs`) timed in the same \
             run. The four variants of a measurement (unfad's primal and gradient, the hand-written \
             ones) are sampled in turn, {} rounds of at least {} ms each (then, in rounds of \
             their own, the jvp and the Hessian-vector product of issue 21 with the primal and \
             the gradient); times are medians, and every ratio is the median of the ratios \
             taken within a round. The machine is shared, so expect a few percent of noise.\n\
             - Programs and baselines: `src/suite.rs`; harness: `src/measure.rs`; criterion \
             benchmarks of the same: `cargo bench --bench targets`, `cargo bench --bench \
             cheap_gradient`.\n",
            self.seconds,
            m.cpu,
            m.cores,
            m.rustc,
            m.date,
            m.commit,
            self.budget.rounds,
            self.budget.sample.as_secs_f64() * 1e3,
        );
        self.targets(&mut s);
        if let Some(g) = gmm {
            gradbench_section(&mut s, g);
        }
        self.plain(&mut s);
        jax_section(&mut s, self.programs, self.measured, &self.jax, self.budget);
        self.streaming(&mut s);
        self.batches(&mut s);
        if let Some(second) = second {
            second_order_section(&mut s, self.measured, second, &self.jax, self.budget);
        }
        self.safety(&mut s);
        self.python(&mut s);
        self.summary(&mut s);
        self.scaling(&mut s);
        self.details(&mut s);
        self.sources(&mut s);
        s
    }

    /// The per-call cost of the Python door (issue 20).
    fn python(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "## The Python door (issue 20)\n\n\
             `python/bench_overhead.py`: the gradient of `dot` on two arrays of 10 elements, \
             per call, from Python (`f(A, B)`: NumPy arrays in and out) against the facade's \
             native call repeated in Rust (`GradFn::call_into`), and JAX's `jit(value_and_grad)` \
             when it is installed. Target: the Python door at most 2 µs above the native call. \
             perf-report runs the script with the Python named by `UNFAD_PYTHON` (one where \
             `pip install ./python` was run).\n"
        );
        match &self.python {
            Ok(rows) => {
                let _ = writeln!(s, "| call | per call |\n|---|---:|");
                for (name, t) in rows {
                    let shown = t.map_or("not installed".to_string(), |t| ns(t * 1e9));
                    let _ = writeln!(s, "| {} | {shown} |", name.trim());
                }
                let _ = writeln!(s);
            }
            Err(why) => {
                let _ = writeln!(s, "Not measured in this run: {why}.\n");
            }
        }
    }

    /// The cost of the checks that keep calls memory safe (issue 22).
    fn streaming(&self, s: &mut String) {
        if self.streaming.is_empty() {
            return;
        }
        let _ = writeln!(
            s,
            "### Reductions against the memory\n\n\
             A reduction cannot be faster than reading its inputs. unfad's primal (bound to its \
             arguments) against a loop that only streams the same arrays from memory (their \
             bits added as integers in eight independent sums, which rustc vectorises: \
             `measure::stream`), timed in turn. Target (issue 18): within \
             {STREAMING_TARGET}x.\n\n\
             | program | size | primal | streaming loop | primal / streaming | met |\n\
             |---|---:|---:|---:|---:|:---:|"
        );
        for r in self.streaming {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                r.name,
                r.size.label(),
                ns(r.primal_ns),
                ns(r.stream_ns),
                x(r.ratio),
                yes(r.ratio <= STREAMING_TARGET),
            );
        }
        let _ = writeln!(s);
    }

    /// The math kernels in batches against inline (issue 18).
    pub fn batches(&self, s: &mut String) {
        batches_section(s, &self.kernel_loops, self.batches);
    }

    fn safety(&self, s: &mut String) {
        if self.safety.is_empty() {
            return;
        }
        let _ = writeln!(
            s,
            "## Memory safety (issue 22)\n\n\
             The native code never reads or writes outside the buffers of a call, whatever \
             the shape analysis says (docs/ARCHITECTURE.md, \"memory safety\"). What that \
             costs: a call through the facade's checked door (`GradFn::call_into`: every \
             argument checked against the parameter types and flattened, then the native \
             code, then its status cell read) against the same native code bound to its \
             arguments once (`GradFn::bind`, then `Bound::run`: the raw call and the status \
             cell), timed in turn; and whether the code checks something at run time (a \
             branch before a scan whose destination the code cannot show non-empty; a \
             function without such checks is the code it was before the checks existed).\n\n\
             | program | size | checked call | bound call | checked - bound | checked / bound | run-time checks |\n\
             |---|---:|---:|---:|---:|---:|:---:|"
        );
        for r in self.safety {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} |",
                r.name,
                r.size.label(),
                ns(r.checked_ns),
                ns(r.bound_ns),
                ns(r.checked_ns - r.bound_ns),
                x(r.checked_ns / r.bound_ns),
                if r.run_time_checks { "yes" } else { "no" },
            );
        }
        let _ = writeln!(s);
    }

    fn targets(&self, s: &mut String) {
        let big = Size::n(1_000_000);
        let _ = writeln!(
            s,
            "## Targets (issue 5)\n\n\
             At n = 10^6: unfad's primal within {PRIMAL_TARGET}x of the hand-written \
             primal, unfad's value and gradient within {GRADIENT_TARGET}x of the hand-written \
             gradient.\n\n\
             | program | primal: unfad / hand | met | gradient: unfad / hand | met | hand gradient / hand primal |\n\
             |---|---:|:---:|---:|:---:|---:|"
        );
        for name in TARGETS {
            let Some(m) = self.measured.iter().find(|m| m.name == *name) else {
                continue;
            };
            let Some(pt) = at(m, big) else { continue };
            let grad = match (pt.gradient_vs_hand, &m.gradient_error) {
                (Some(r), _) => (x(r), yes(r <= GRADIENT_TARGET).to_string()),
                (None, Some(e)) => ("-".into(), format!("no gradient yet: {e}")),
                (None, None) => ("-".into(), "-".into()),
            };
            let _ = writeln!(
                s,
                "| {name} | {} | {} | {} | {} | {} |",
                x(pt.primal_vs_hand),
                yes(pt.primal_vs_hand <= PRIMAL_TARGET),
                grad.0,
                grad.1,
                x(pt.hand_ratio)
            );
        }
        let _ = writeln!(
            s,
            "\n`compile_grad` (parse to native code) of each program in `examples/`, median of \
             20 compilations made in 10 rounds that take the examples in turn (so that a burst \
             of load on the machine does not fall on one program); target under \
             {COMPILE_TARGET_MS} ms. Twice: by one `Engine` \
             that compiled the program before (an engine keeps the term arenas of finished \
             compilations and fills them again), and by a new `Engine` each time (its arenas \
             allocated afresh, as for the first compilation of a process). The \
             stages of `compile_grad`, each timed alone (medians, new arenas): parsing with \
             inlining, reverse mode, the optimizer (`unfad_opt::optimize`), the JIT (lowering \
             and Cranelift).\n\n\
             | example | `compile_grad` | met | new engine | met | parse | reverse mode | optimizer | JIT | `compile` (primal) |\n\
             |---|---:|:---:|---:|:---:|---:|---:|---:|---:|---:|"
        );
        for c in self.compile {
            let (g, met) = match &c.grad_ms {
                Ok(t) => (
                    format!("{t:.2} ms"),
                    yes(*t < COMPILE_TARGET_MS).to_string(),
                ),
                Err(e) => ("-".into(), format!("no gradient yet: {e}")),
            };
            let (g_new, met_new) = match &c.grad_new_engine_ms {
                Ok(t) => (
                    format!("{t:.2} ms"),
                    yes(*t < COMPILE_TARGET_MS).to_string(),
                ),
                Err(_) => ("-".into(), "-".into()),
            };
            let p = match &c.primal_ms {
                Ok(t) => format!("{t:.2} ms"),
                Err(e) => e.clone(),
            };
            let st = match c.stages {
                Some(t) => t.map(|x| format!("{x:.2} ms")).join(" | "),
                None => "- | - | - | -".into(),
            };
            let _ = writeln!(
                s,
                "| `{}` | {g} | {met} | {g_new} | {met_new} | {st} | {p} |",
                c.file
            );
        }
        s.push('\n');
        self.compile_notes(s);
    }

    /// Why the examples over the compile-time target are: their largest stages, and what
    /// makes those stages slow.
    fn compile_notes(&self, s: &mut String) {
        const STAGES: [&str; 4] = ["parsing", "reverse mode", "the optimizer", "the JIT"];
        let slow: Vec<&CompileRow> = self
            .compile
            .iter()
            .filter(|c| {
                [&c.grad_ms, &c.grad_new_engine_ms]
                    .iter()
                    .any(|r| matches!(r, Ok(t) if *t >= COMPILE_TARGET_MS))
            })
            .collect();
        if slow.is_empty() {
            return;
        }
        let _ = writeln!(s, "Not met:\n");
        for c in slow {
            let Some(st) = c.stages else { continue };
            let mut order: Vec<usize> = (0..4).collect();
            order.sort_by(|&a, &b| st[b].total_cmp(&st[a]));
            let _ = writeln!(
                s,
                "- `{}`: {} {:.1} ms, {} {:.1} ms, {} {:.1} ms.",
                c.file,
                STAGES[order[0]],
                st[order[0]],
                STAGES[order[1]],
                st[order[1]],
                STAGES[order[2]],
                st[order[2]]
            );
        }
        let _ = writeln!(
            s,
            "\nThese programs nest `map`s deepest of the examples (GMM: a map over the points, of \
             a map over the components, of maps over the dimensions and the rows of `L`). The \
             reverse pass is linear in the program now (weakened continuations, \
             `unfad_ad::reverse_weakened`); what is left is the code the JIT hands to Cranelift, \
             whose register allocation and e-graph pass take most of the JIT's time: the math \
             kernels are inline in loops (an `exp` or a `log` is about 70 instructions \
             wherever it appears; only where it runs at most once per call is it a call of \
             the kernel's function), and a light element of a blocked reduction or a map is \
             emitted several times per iteration (four copies per block of a reduction, two \
             per iteration of a map, and once more for the remainder), which the lanes pass \
             then pairs into `f64x2` code. That is what makes the loops fast and the \
             functions long. The \
             optimizer's fixed point (hash-consing, occurrence counts, several passes over the \
             whole term) is the next largest stage. Long chains are cut into chunks compiled on \
             every core (`unfad_jit::compile_parallel`); GMM's term is below the size where \
             that starts, and is cut in two. The compile-time curve against the length of a \
             straight-line program is in [compile-scaling.md](compile-scaling.md).\n"
        );
    }

    /// The plain family (issue 17) as a group: unfad against the hand-written code at each
    /// program's largest size.
    fn plain(&self, s: &mut String) {
        let plain: Vec<&Measured> = self
            .measured
            .iter()
            .filter(|m| {
                self.program(m.name)
                    .is_some_and(|p| p.family == Family::Plain)
            })
            .collect();
        if plain.is_empty() {
            return;
        }
        let _ = writeln!(
            s,
            "## Plainly written programs (issue 17)\n\n\
             Programs written the way a new user would write them, with nothing hoisted or \
             fused by hand (`Family::Plain` in `src/suite.rs`), against hand-written Rust that \
             hoists what does not change inside a loop and accumulates the gradients in place. \
             At each program's largest size:\n\n\
             | program | p | size | primal: unfad / hand | gradient: unfad / hand | gradient: unfad / JAX | unfad gradient / primal | hand gradient / primal |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|"
        );
        for &m in &plain {
            let Some(pt) = m.points.last() else { continue };
            let grad = match (pt.gradient_vs_hand, &m.gradient_error) {
                (Some(r), _) => x(r),
                (None, Some(e)) => format!("no gradient yet: {e}"),
                (None, None) => "-".into(),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {grad} | {} | {} | {} |",
                m.name,
                m.p,
                pt.size.label(),
                x(pt.primal_vs_hand),
                jax_ratio(&self.jax, m.name, pt),
                opt(pt.ratio),
                x(pt.hand_ratio),
            );
        }
        if self.jax.is_err() {
            let _ = writeln!(s, "\n{ABSENT}: {}.", jax_absence(&self.jax));
        }
        self.plain_targets(s, &plain);
        s.push('\n');
    }

    /// The median and the worst of the plain family against the hand-written code, and
    /// each program above issue 17's targets with its explanation.
    fn plain_targets(&self, s: &mut String, plain: &[&Measured]) {
        let last = |m: &Measured| m.points.last().cloned();
        let mut grads: Vec<(f64, &str)> = plain
            .iter()
            .filter_map(|m| Some((last(m)?.gradient_vs_hand?, m.name)))
            .collect();
        let mut primals: Vec<(f64, &str)> = plain
            .iter()
            .filter_map(|m| Some((last(m)?.primal_vs_hand, m.name)))
            .collect();
        if grads.is_empty() || primals.is_empty() {
            return;
        }
        let by_ratio = |a: &(f64, &str), b: &(f64, &str)| a.0.total_cmp(&b.0);
        grads.sort_by(by_ratio);
        primals.sort_by(by_ratio);
        let median = |v: &[(f64, &str)]| {
            let n = v.len();
            if n % 2 == 1 {
                v[n / 2].0
            } else {
                (v[n / 2 - 1].0 + v[n / 2].0) / 2.0
            }
        };
        let (gw, pw) = (grads[grads.len() - 1], primals[primals.len() - 1]);
        let within = |v: &[(f64, &str)], t: f64| v.iter().filter(|(r, _)| *r <= t).count();
        let _ = writeln!(
            s,
            "\nGradient against the hand-written gradient: median {}, worst {} ({}); {} of {} \
             within the target of 1.3x. Primal against the hand-written primal: median {}, \
             worst {} ({}); {} of {} within the target of 1.2x.",
            x(median(&grads)),
            x(gw.0),
            gw.1,
            within(&grads, 1.3),
            grads.len(),
            x(median(&primals)),
            x(pw.0),
            pw.1,
            within(&primals, 1.2),
            primals.len(),
        );
        let mut first = true;
        for &m in plain {
            let Some(pt) = last(m) else { continue };
            let g = pt.gradient_vs_hand.unwrap_or(0.0);
            if g <= 1.3 && pt.primal_vs_hand <= 1.2 {
                continue;
            }
            if first {
                let _ = writeln!(s, "\nAbove the targets, and why:\n");
                first = false;
            }
            let why = self
                .program(m.name)
                .map(|p| p.versus_hand)
                .filter(|w| !w.is_empty())
                .unwrap_or("not explained yet.");
            let _ = writeln!(
                s,
                "- **{}** (gradient {}, primal {}): {why}",
                m.name,
                x(g),
                x(pt.primal_vs_hand)
            );
        }
    }

    fn summary(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "## The cheap gradient: measured against the model\n\n\
             ![measured and model ratios](performance.svg)\n\n\
             For each program at its largest size: the measured ratio (unfad's value and \
             gradient time over unfad's primal time), the cost model's ratio \
             `Cost(grad e) / Cost(e)` (`unfad_opt::Bound::measure` of the source and of the \
             optimized gradient, on MOVES + ADDS + MULTS + NLOPS), the bound `4 * 3^p`, the \
             same ratio for the hand-written code, and the workspace (in reals) of the \
             gradient against the primal's and the hand-written gradient's. Rows marked † \
             differ from the model by more than {EXPLAIN_FACTOR}x: the notes below explain them.\n\n\
             | program | p | size | measured | model | bound | measured / model | hand | workspace: primal | gradient | hand |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for m in self.measured {
            let Some(pt) = m.points.last() else { continue };
            let mark = if differs(pt) { " †" } else { "" };
            let _ = writeln!(
                s,
                "| {}{mark} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                m.name,
                m.p,
                pt.size.label(),
                opt(pt.ratio),
                opt(pt.model.map(|m| m.ratio)),
                4 * 3u64.pow(m.p),
                opt(pt.ratio.zip(pt.model).map(|(r, m)| r / m.ratio)),
                x(pt.hand_ratio),
                pt.workspace_primal,
                pt.workspace_gradient
                    .map_or("-".into(), |w: usize| w.to_string()),
                pt.workspace_hand,
            );
        }
        let _ = writeln!(s, "\n### Notes\n");
        for m in self.measured {
            let note = self.program(m.name).map_or("", |p| p.note);
            let flagged = m.points.iter().any(differs);
            if let Some(e) = &m.gradient_error {
                let _ = writeln!(
                    s,
                    "- **{}**: no gradient yet; reverse mode says: {e}. Only the primal is \
                     measured.",
                    m.name
                );
            } else if !note.is_empty() {
                let _ = writeln!(
                    s,
                    "- **{}**{}: {note}",
                    m.name,
                    if flagged { " †" } else { "" }
                );
            } else if flagged {
                let _ = writeln!(
                    s,
                    "- **{}** †: differs from the model by more than {EXPLAIN_FACTOR}x; no \
                     explanation recorded yet.",
                    m.name
                );
            }
        }
        s.push('\n');
    }

    fn scaling(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "## Scaling\n\n\
             Time against the number of reals in the arguments, fitted over all sizes as \
             `t = a + b * elements` (least squares on relative errors), for unfad's primal and \
             gradient; the exponent `k` of `t ~ elements^k` is fitted on the upper half of the \
             sizes (1 is linear). A flat ratio means the gradient scales like the primal.\n\n\
             | program | primal ns/element | gradient ns/element | slope ratio | k primal | k gradient | measured ratio, smallest to largest size |\n\
             |---|---:|---:|---:|---:|---:|---|"
        );
        for m in self.measured.iter().filter(|m| m.points.len() > 1) {
            let xs: Vec<f64> = m.points.iter().map(|p| p.elements as f64).collect();
            let tp: Vec<f64> = m.points.iter().map(|p| p.primal_ns).collect();
            let fp = fit(&xs, &tp);
            let tg: Option<Vec<f64>> = m.points.iter().map(|p| p.gradient_ns).collect();
            let fg = tg.as_deref().and_then(|tg| fit(&xs, tg));
            let ratios: Vec<String> = m.points.iter().map(|p| opt(p.ratio)).collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} |",
                m.name,
                fp.map_or("-".into(), |f| format!("{:.3}", f.b)),
                fg.map_or("-".into(), |f| format!("{:.3}", f.b)),
                fp.zip(fg).map_or("-".into(), |(p, g)| x(g.b / p.b)),
                fp.map_or("-".into(), |f| x(f.exponent)),
                fg.map_or("-".into(), |f| x(f.exponent)),
                ratios.join(", "),
            );
        }
        s.push('\n');
    }

    fn details(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "## Every size\n\n\
             Times per call. `vs hand`: unfad over the hand-written code, primal and gradient. \
             Workspace in reals (8 bytes each).\n"
        );
        for m in self.measured {
            let _ = writeln!(
                s,
                "### {} (p = {})\n\n\
                 | size | elements | primal | gradient | ratio | model | bound | hand primal | hand gradient | hand ratio | vs hand: primal | gradient | workspace: primal | gradient | hand | agree |\n\
                 |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
                m.name, m.p
            );
            for pt in &m.points {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    pt.size.label(),
                    pt.elements,
                    ns(pt.primal_ns),
                    pt.gradient_ns.map_or("-".into(), ns),
                    opt(pt.ratio),
                    if differs(pt) { " †" } else { "" },
                    opt(pt.model.map(|m| m.ratio)),
                    pt.model.map_or("-".into(), |m| m.bound.to_string()),
                    ns(pt.hand_primal_ns),
                    ns(pt.hand_gradient_ns),
                    x(pt.hand_ratio),
                    x(pt.primal_vs_hand),
                    opt(pt.gradient_vs_hand),
                    pt.workspace_primal,
                    pt.workspace_gradient.map_or("-".into(), |w| w.to_string()),
                    pt.workspace_hand,
                    if pt.agree { "yes" } else { "**no**" },
                );
            }
            let _ = writeln!(
                s,
                "\n`compile_grad` {}; `compile` {:.2} ms.\n",
                m.compile_grad_ms
                    .map_or("-".into(), |t| format!("{t:.2} ms")),
                m.compile_primal_ms
            );
        }
    }

    fn sources(&self, s: &mut String) {
        let _ = writeln!(s, "## The programs\n");
        for p in self.programs {
            let _ = writeln!(
                s,
                "- **{}** (p = {}): {}.\n\n  ```\n{}\n  ```\n",
                p.name,
                p.p,
                p.what,
                p.source
                    .trim()
                    .lines()
                    .map(|l| format!("  {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }

    /// Draw the measured ratio at every size, the model's ratio and the bound per p.
    pub fn svg(&self, path: &Path) -> Result<(), String> {
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let progs: Vec<&Measured> = self.measured.iter().collect();
        let k = progs.len() as i32;
        if k == 0 {
            return Err("nothing to plot".into());
        }
        let ys = progs
            .iter()
            .flat_map(|m| m.points.iter())
            .flat_map(|p| [p.ratio, p.model.map(|m| m.ratio)])
            .flatten()
            .chain(progs.iter().map(|m| 4.0 * 3f64.powi(m.p as i32)));
        let (lo, hi) = ys.fold((1.0f64, 1.0f64), |(a, b), y| (a.min(y), b.max(y)));
        let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let names: Vec<String> = progs.iter().map(|m| m.name.to_string()).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "unfad: gradient time / primal time, measured and in the cost model",
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(70)
            .y_label_area_size(60)
            .build_cartesian_2d(
                (0..k - 1).into_segmented(),
                ((lo * 0.7)..(hi * 1.4)).log_scale(),
            )
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(k as usize)
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                    names.get(*i as usize).cloned().unwrap_or_default()
                }
                SegmentValue::Last => String::new(),
            })
            .x_label_style(
                ("sans-serif", 13)
                    .into_font()
                    .transform(FontTransform::Rotate90),
            )
            .y_desc("ratio (log scale)")
            .draw()
            .map_err(|e| err(&e))?;
        // The bound, one segment per nesting depth over that depth's programs.
        let mut first = 0;
        while first < progs.len() {
            let p = progs[first].p;
            let last = (first..progs.len())
                .take_while(|&i| progs[i].p == p)
                .last()
                .unwrap_or(first);
            let b = 4.0 * 3f64.powi(p as i32);
            let line = vec![
                (SegmentValue::Exact(first as i32), b),
                (SegmentValue::Exact(last as i32 + 1), b),
            ];
            let series = chart
                .draw_series(LineSeries::new(line, RED.stroke_width(2)))
                .map_err(|e| err(&e))?;
            if first == 0 {
                series
                    .label("bound 4 * 3^p")
                    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED));
            }
            first = last + 1;
        }
        let measured: Vec<(SegmentValue<i32>, f64)> = progs
            .iter()
            .enumerate()
            .flat_map(|(i, m)| {
                m.points
                    .iter()
                    .filter_map(move |p| p.ratio.map(|r| (SegmentValue::CenterOf(i as i32), r)))
            })
            .collect();
        chart
            .draw_series(
                measured
                    .into_iter()
                    .map(|(x, y)| Circle::new((x, y), 4, BLUE.mix(0.6).filled())),
            )
            .map_err(|e| err(&e))?
            .label("measured (every size)")
            .legend(|(x, y)| Circle::new((x + 8, y), 4, BLUE.filled()));
        let model: Vec<(SegmentValue<i32>, f64)> = progs
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let r = m.points.last()?.model?.ratio;
                Some((SegmentValue::CenterOf(i as i32), r))
            })
            .collect();
        chart
            .draw_series(
                model
                    .into_iter()
                    .map(|(x, y)| Cross::new((x, y), 7, BLACK.stroke_width(2))),
            )
            .map_err(|e| err(&e))?
            .label("cost model")
            .legend(|(x, y)| Cross::new((x + 8, y), 5, BLACK.stroke_width(2)));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
        Ok(())
    }
}
