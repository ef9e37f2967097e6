//! What the math kernels in batches buy (issue 18; `unfad_jit`'s `lower/batch.rs`): the
//! same programs compiled with batches off (two lanes, inline) and on (the host's widest
//! instance), timed in turn in one process, their results checked equal bit for bit.
//!
//! Two views: each kernel alone, `reduce + 0 (map (a. f(a)) x)` over [`KERNEL_ELEMENTS`]
//! reals, in nanoseconds per element ([`measure_kernels`]); and the suite's programs that
//! run a kernel, primal and gradient at their largest size ([`measure_batches`]).

use std::hint::black_box;

use unfad::Engine;
use unfad_jit::{set_batch_mode, BatchMode};

use crate::measure::{interleaved, median, median_ratio, Budget};
use crate::native::Native;
use crate::suite::{Data, Program, Size};

/// The reals each kernel runs on in [`measure_kernels`]: enough that the loop runs many
/// chunks, few enough that they stay in the second-level cache.
pub const KERNEL_ELEMENTS: usize = 100_000;

/// One kernel's loop with batches off and on.
#[derive(Clone, Debug)]
pub struct KernelRow {
    pub kernel: &'static str,
    /// Nanoseconds per element, batches off (inline, two lanes) and on.
    pub inline_ns: f64,
    pub batched_ns: f64,
    /// The median of the ratios `inline / batched` within a round.
    pub speedup: f64,
}

/// A suite program's primal and gradient with batches off and on.
#[derive(Clone, Debug)]
pub struct BatchRow {
    pub name: &'static str,
    pub size: Size,
    /// Nanoseconds per call: primal off, primal on, gradient off, gradient on.
    pub primal: (f64, f64),
    pub gradient: Option<(f64, f64)>,
    /// Medians of the ratios `off / on` within a round.
    pub primal_speedup: f64,
    pub gradient_speedup: Option<f64>,
}

/// The kernels the report times alone, with the program applying each one (a logarithm's
/// argument kept positive).
pub const KERNELS: [(&str, &str); 8] = [
    ("exp", "exp(a)"),
    ("log", "log(a * a + 0.5)"),
    ("tanh", "tanh(a)"),
    ("sigmoid", "sigmoid(a)"),
    ("log1p", "log1p(a * a)"),
    ("expm1", "expm1(a)"),
    ("sin", "sin(a)"),
    ("cos", "cos(a)"),
];

/// The lanes a batch computes at once on this host (two registers per value: sixteen
/// on AVX-512, eight on AVX2), or `None` where the host has no wider instance than the
/// JIT's own two lanes, so that batches do not run (and both columns time the same code).
pub fn host_lanes() -> Option<usize> {
    unfad_jit::host_batch_lanes()
}

/// What a row compares: one switch of the JIT, off against on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Switch {
    /// The math kernels in batches (`BatchMode::Off` against `BatchMode::Host`).
    Batches,
    /// The vector routines of in-place row updates (`unfad_jit::set_vector_routines`),
    /// batches on in both.
    Routines,
}

impl Switch {
    fn set(self, on: bool) {
        match self {
            Switch::Batches => set_batch_mode(if on { BatchMode::Host } else { BatchMode::Off }),
            Switch::Routines => unfad_jit::set_vector_routines(on),
        }
    }

    fn what(self) -> &'static str {
        match self {
            Switch::Batches => "batches",
            Switch::Routines => "routines",
        }
    }
}

/// `f` compiled with batches off, then on (the host's mode, as every other figure).
fn both<T>(f: impl Fn() -> Result<T, String>) -> Result<(T, T), String> {
    switched(Switch::Batches, f)
}

/// `f` compiled with `switch` off, then on (the default, as every other figure).
fn switched<T>(switch: Switch, f: impl Fn() -> Result<T, String>) -> Result<(T, T), String> {
    switch.set(false);
    let off = f();
    switch.set(true);
    Ok((off?, f()?))
}

/// Equal bits in every output of the two runs.
fn same_outputs(a: &Native, b: &Native) -> bool {
    a.outputs().len() == b.outputs().len()
        && a.outputs().iter().zip(b.outputs()).all(|(x, y)| {
            x.len() == y.len() && x.iter().zip(y).all(|(u, v)| u.to_bits() == v.to_bits())
        })
}

/// Two bound functions timed in turn: medians and the median ratio `a / b`.
fn in_turn(a: &mut Native, b: &mut Native, budget: Budget) -> Result<(f64, f64, f64), String> {
    let mut failed = None;
    let mut fa = || {
        if let Err(e) = a.run() {
            failed = Some(e);
        }
    };
    let mut failed_b = None;
    let mut fb = || {
        if let Err(e) = b.run() {
            failed_b = Some(e);
        }
    };
    let t = interleaved(&mut [&mut fa, &mut fb], budget);
    if let Some(e) = failed.or(failed_b) {
        return Err(e);
    }
    Ok((median(&t[0]), median(&t[1]), median_ratio(&t[0], &t[1])))
}

/// Each of [`KERNELS`] in a sum over [`KERNEL_ELEMENTS`] reals in [-5, 5], batches off
/// against on.
pub fn measure_kernels(budget: Budget) -> Result<Vec<KernelRow>, String> {
    let n = KERNEL_ELEMENTS;
    let x: Vec<f64> = (0..n)
        .map(|i| ((i as f64 * 0.618_033_988_7).fract() - 0.5) * 10.0)
        .collect();
    let args = [Data::Array(x, vec![n])];
    let size = |v: &str| (v == "n").then_some(n as u64);
    let mut rows = Vec::new();
    for (kernel, body) in KERNELS {
        let src = format!("def f(x: [n]real) = reduce + 0 (map (a. {body}) x)");
        let (f_off, f_on) = both(|| Engine::new().compile(&src).map_err(|e| e.to_string()))?;
        let mut off = Native::primal(&f_off, &args, &size)?;
        let mut on = Native::primal(&f_on, &args, &size)?;
        let (a, b) = (off.run()?, on.run()?);
        if a.to_bits() != b.to_bits() {
            return Err(format!(
                "{kernel}: batches changed the value ({a:e}, {b:e})"
            ));
        }
        let (t_off, t_on, speedup) = in_turn(&mut off, &mut on, budget)?;
        black_box((a, b));
        rows.push(KernelRow {
            kernel,
            inline_ns: t_off / n as f64,
            batched_ns: t_on / n as f64,
            speedup,
        });
    }
    Ok(rows)
}

/// Whether `p` runs a math kernel (so that batches may change its code).
pub fn runs_kernels(p: &Program) -> bool {
    [
        "exp(", "log(", "tanh(", "sigmoid(", "log1p(", "expm1(", "sin(", "cos(",
    ]
    .iter()
    .any(|k| p.source.contains(k))
}

/// `p`'s primal and gradient at `size`, batches off against on.
pub fn measure_batches(p: &Program, size: Size, budget: Budget) -> Result<BatchRow, String> {
    measure_switch(Switch::Batches, p, size, budget)
}

/// `p`'s primal and gradient at `size`, `switch` off against on, the results checked
/// equal bit for bit.
pub fn measure_switch(
    switch: Switch,
    p: &Program,
    size: Size,
    budget: Budget,
) -> Result<BatchRow, String> {
    let args = (p.inputs)(size);
    let sizes = |v: &str| size.var(v);
    let what = switch.what();
    let (f_off, f_on) = switched(switch, || {
        Engine::new().compile(p.source).map_err(|e| e.to_string())
    })?;
    let mut off = Native::primal(&f_off, &args, &sizes)?;
    let mut on = Native::primal(&f_on, &args, &sizes)?;
    off.run()?;
    on.run()?;
    if !same_outputs(&off, &on) {
        return Err(format!("{}: {what} changed the primal's value", p.name));
    }
    let (p_off, p_on, primal_speedup) = in_turn(&mut off, &mut on, budget)?;
    let grads = switched(switch, || {
        Engine::new()
            .compile_grad(p.source)
            .map_err(|e| e.to_string())
    });
    let (gradient, gradient_speedup) = match &grads {
        Ok((g_off, g_on)) => {
            let mut off = Native::gradient(g_off, &args, &sizes)?;
            let mut on = Native::gradient(g_on, &args, &sizes)?;
            off.run()?;
            on.run()?;
            if !same_outputs(&off, &on) {
                return Err(format!("{}: {what} changed the gradient", p.name));
            }
            let (g_off, g_on, speedup) = in_turn(&mut off, &mut on, budget)?;
            (Some((g_off, g_on)), Some(speedup))
        }
        Err(_) => (None, None),
    };
    Ok(BatchRow {
        name: p.name,
        size,
        primal: (p_off, p_on),
        gradient,
        primal_speedup,
        gradient_speedup,
    })
}
