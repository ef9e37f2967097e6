//! Timing (medians of interleaved samples), the measurement of one suite program at every
//! size (its primal, gradient and hand-written baselines, and in rounds of their own its
//! native jvp and Hessian-vector product beside the primal and the gradient), and the fit of
//! time against size.

use std::cell::RefCell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use unfad::{Engine, Func, GradFn, HvpFn, JvpFn, Pipeline};

use crate::native::Native;
use crate::suite::{noise, Data, Program, Size};

/// How long measurements take.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Interleaved rounds; every figure is a median over them.
    pub rounds: usize,
    /// The least time of one sample (a batch of calls).
    pub sample: Duration,
}

impl Budget {
    /// About a second per size of a program (the report).
    pub const REPORT: Budget = Budget {
        rounds: 15,
        sample: Duration::from_millis(4),
    };
    /// A quick look (tests of the harness itself).
    pub const QUICK: Budget = Budget {
        rounds: 3,
        sample: Duration::from_micros(200),
    };
}

/// Calls of `f` per sample so that a sample takes at least `target`.
fn calibrate(f: &mut dyn FnMut(), target: Duration) -> u64 {
    let mut iters = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        let e = t.elapsed();
        if e >= target || iters >= 1 << 30 {
            return iters;
        }
        let grow = if e.is_zero() {
            16.0
        } else {
            (target.as_secs_f64() / e.as_secs_f64() * 1.2).clamp(1.5, 16.0)
        };
        iters = ((iters as f64) * grow).ceil() as u64;
    }
}

/// Nanoseconds per call of each of `fs`, sampled in turn (round-robin) so that the machine's
/// drift affects them alike: `result[k][r]` is function `k` in round `r`.
pub fn interleaved(fs: &mut [&mut dyn FnMut()], budget: Budget) -> Vec<Vec<f64>> {
    let iters: Vec<u64> = fs
        .iter_mut()
        .map(|f| {
            f();
            calibrate(*f, budget.sample)
        })
        .collect();
    let mut out = vec![Vec::with_capacity(budget.rounds); fs.len()];
    for _ in 0..budget.rounds {
        for (k, f) in fs.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..iters[k] {
                f();
            }
            out[k].push(t.elapsed().as_secs_f64() * 1e9 / iters[k] as f64);
        }
    }
    out
}

/// The median (of a non-empty list; NaN otherwise).
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let k = v.len() / 2;
    if v.len() % 2 == 1 {
        v[k]
    } else {
        (v[k - 1] + v[k]) / 2.0
    }
}

/// The median over rounds of `a[r] / b[r]` (a ratio measured side by side).
pub fn median_ratio(a: &[f64], b: &[f64]) -> f64 {
    let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    median(&r)
}

/// The median time of `f` in milliseconds, over `reps` runs.
pub fn median_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    let t: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    median(&t)
}

/// A suite program compiled by unfad: its primal, and its gradient or why there is none;
/// its native jvp and Hessian-vector product (forward over reverse), or why there are none.
pub struct Compiled {
    pub primal: Func,
    pub gradient: Result<GradFn, String>,
    pub jvp: Result<JvpFn, String>,
    pub hvp: Result<HvpFn, String>,
    /// Median time of `compile_grad`, parse to native code, in milliseconds.
    pub compile_grad_ms: Option<f64>,
    /// Median time of `compile`, in milliseconds.
    pub compile_primal_ms: f64,
}

impl Compiled {
    pub fn new(prog: &Program, reps: usize) -> Result<Compiled, String> {
        let engine = Engine::new();
        let primal = engine.compile(prog.source).map_err(|e| e.to_string())?;
        let gradient = engine.compile_grad(prog.source).map_err(|e| e.to_string());
        let jvp = engine.compile_jvp(prog.source).map_err(|e| e.to_string());
        let hvp = engine.compile_hvp(prog.source).map_err(|e| e.to_string());
        let compile_primal_ms = median_ms(reps, || {
            let _ = black_box(engine.compile(prog.source));
        });
        let compile_grad_ms = gradient.is_ok().then(|| {
            median_ms(reps, || {
                let _ = black_box(engine.compile_grad(prog.source));
            })
        });
        Ok(Compiled {
            primal,
            gradient,
            jvp,
            hvp,
            compile_grad_ms,
            compile_primal_ms,
        })
    }
}

/// The cost model's view of a program at one size.
#[derive(Clone, Copy, Debug)]
pub struct Model {
    /// `Cost(grad e) / Cost(e)` on MOVES + ADDS + MULTS + NLOPS.
    pub ratio: f64,
    /// `4 * 3^p`.
    pub bound: u64,
    pub p: u32,
}

/// The model at `size`, or why there is none (reverse mode refuses the program).
pub fn model(source: &str, size: Size) -> Result<Model, String> {
    let mut p = Pipeline::load(source, None).map_err(|e| e.to_string())?;
    let all = p.wrt(None).map_err(|e| e.to_string())?;
    let grad = p.optimized_reverse(&all).map_err(|e| e.to_string())?;
    let lookup = |v: &str| size.var(v);
    let b = unfad_opt::Bound::measure(&p.program.arena, &p.source, &grad, &lookup);
    Ok(Model {
        ratio: b.ratio(),
        bound: b.factor(),
        p: b.p,
    })
}

/// NAO of the program (which needs no gradient).
pub fn nesting(source: &str) -> Result<u32, String> {
    let p = Pipeline::load(source, None).map_err(|e| e.to_string())?;
    Ok(unfad_opt::nao(&p.program.arena, p.source.body))
}

/// Everything measured at one size of one program. Times are medians in nanoseconds per
/// call; ratios are medians of ratios taken within a round.
#[derive(Clone, Debug)]
pub struct Point {
    pub size: Size,
    /// Reals in the arguments.
    pub elements: usize,
    pub primal_ns: f64,
    pub hand_primal_ns: f64,
    pub gradient_ns: Option<f64>,
    pub hand_gradient_ns: f64,
    /// unfad's gradient / unfad's primal.
    pub ratio: Option<f64>,
    /// The hand-written gradient / the hand-written primal.
    pub hand_ratio: f64,
    /// unfad's primal / the hand-written primal.
    pub primal_vs_hand: f64,
    /// unfad's gradient / the hand-written gradient.
    pub gradient_vs_hand: Option<f64>,
    pub model: Option<Model>,
    /// Workspace in reals: the primal's, the gradient's, the hand-written gradient's.
    pub workspace_primal: usize,
    pub workspace_gradient: Option<usize>,
    pub workspace_hand: usize,
    /// Whether unfad's and the hand-written results agree (value and gradient).
    pub agree: bool,
}

/// Relative agreement of two results (sums of up to 10^6 terms in different orders).
fn close(x: f64, y: f64) -> bool {
    (x - y).abs() <= 1e-7 * (1.0 + x.abs().max(y.abs())) || (x.is_nan() && y.is_nan())
}

/// unfad's native jvp and Hessian-vector product at one size of one program, timed in
/// rounds of their own with its primal and gradient (after those of its [`Point`]). Times are medians in nanoseconds per call; ratios are
/// medians of ratios taken within a round. `None` where the program has no such function.
#[derive(Clone, Debug)]
pub struct SecondOrderPoint {
    pub size: Size,
    /// Value and directional derivative (`JvpFn`'s native code), in the direction
    /// [`direction`].
    pub jvp_ns: Option<f64>,
    /// Value, gradient and Hessian-vector product (`HvpFn`'s native code: forward mode over
    /// the optimized gradient), in the same direction.
    pub hvp_ns: Option<f64>,
    /// The jvp / unfad's primal.
    pub jvp_ratio: Option<f64>,
    /// The Hessian-vector product / unfad's value and gradient.
    pub hvp_ratio: Option<f64>,
    /// Whether the jvp's value is the primal's and its tangent the gradient's dot product
    /// with the direction (the value alone without a gradient).
    pub jvp_agrees: Option<bool>,
    /// Whether the Hessian-vector product's value and gradient are the gradient's, and
    /// `⟨d, H d⟩` the central difference of the jvp's tangent along `d`.
    pub hvp_agrees: Option<bool>,
}

/// The direction of the jvp and the Hessian-vector product at `args`: the shapes of the
/// arguments, deterministic noise in [-1, 1) (the same for JAX, which reads it from files).
pub fn direction(args: &[Data]) -> Vec<Data> {
    args.iter()
        .enumerate()
        .map(|(k, d)| {
            let seed = 0xD1EC_7104 + k as u64;
            match d {
                Data::Real(_) => Data::Real(noise(seed, 0)),
                Data::Array(v, shape) => Data::Array(
                    (0..v.len()).map(|i| noise(seed, i)).collect(),
                    shape.clone(),
                ),
            }
        })
        .collect()
}

/// `args + h * dir`, element by element.
fn shifted(args: &[Data], dir: &[Data], h: f64) -> Vec<Data> {
    let step =
        |x: &[f64], d: &[f64]| -> Vec<f64> { x.iter().zip(d).map(|(x, d)| x + h * d).collect() };
    args.iter()
        .zip(dir)
        .map(|(a, d)| match a {
            Data::Real(x) => Data::Real(x + h * d.reals()[0]),
            Data::Array(v, shape) => Data::Array(step(v, d.reals()), shape.clone()),
        })
        .collect()
}

/// The step of the differences that check a Hessian-vector product: small, so that a
/// step rarely crosses a kink of the program (a ReLU's `max(0, .)` over 10^5 hidden units
/// crossed one about every other step at 1e-5), large enough that the tangent's rounding
/// error over it stays far below [`DIFFERENCE_TOLERANCE`].
const DIFFERENCE_STEP: f64 = 1e-6;

/// How closely the central difference must match `⟨d, H d⟩`, relative to 1 + the larger of
/// it and the tangent (the difference's rounding error grows with the tangent over the
/// step, and a kink of the program crossed by the step adds to it).
const DIFFERENCE_TOLERANCE: f64 = 1e-4;

/// Whether the jvp of `c` at `args` in the direction `dir` agrees with the primal's value
/// and the gradient's outputs (`gradient`, when there is one).
fn jvp_agrees(
    jvp: &mut Native,
    value: f64,
    gradient: Option<&[Vec<f64>]>,
    dir: &[Data],
) -> Result<bool, String> {
    jvp.run()?;
    let outs = jvp.outputs();
    let mut ok = outs.len() == 2 && outs[1].len() == 1 && close(outs[0][0], value);
    if let (true, Some(g)) = (ok, gradient) {
        let dot: f64 = g[1..]
            .iter()
            .zip(dir)
            .flat_map(|(g, d)| g.iter().zip(d.reals()).map(|(a, b)| a * b))
            .sum();
        ok &= g.len() == dir.len() + 1 && close(outs[1][0], dot);
    }
    Ok(ok)
}

/// The jvp's tangent of `f` at `args` in the direction `dir`.
fn tangent_at(f: &Func, args: &[Data], dir: &[Data], size: Size) -> Result<f64, String> {
    let lookup = |v: &str| size.var(v);
    let mut n = Native::with_directions(f, args, dir, &lookup)?;
    n.run()?;
    Ok(n.outputs()[1][0])
}

/// Whether the Hessian-vector product's outputs `hvp` at `args` in the direction `dir`
/// agree with the gradient's outputs and with a difference of the jvp's tangent (`⟨d, H
/// d⟩`, the derivative of `⟨∇f, d⟩` along `d`): the central one, or else either one-sided
/// one (a kink crossed on one side spoils the central difference and that side's only).
fn hvp_agrees(
    hvp: &[Vec<f64>],
    gradient: &[Vec<f64>],
    jvp: &Func,
    args: &[Data],
    dir: &[Data],
    size: Size,
) -> Result<bool, String> {
    let k = dir.len();
    if hvp.len() != 1 + 2 * k || gradient.len() != 1 + k {
        return Ok(false);
    }
    let same = hvp[..=k]
        .iter()
        .zip(gradient)
        .all(|(a, b)| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| close(*x, *y)));
    let quadratic: f64 = hvp[1 + k..]
        .iter()
        .zip(dir)
        .flat_map(|(h, d)| h.iter().zip(d.reals()).map(|(a, b)| a * b))
        .sum();
    let h = DIFFERENCE_STEP;
    let up = tangent_at(jvp, &shifted(args, dir, h), dir, size)?;
    let down = tangent_at(jvp, &shifted(args, dir, -h), dir, size)?;
    let here = tangent_at(jvp, args, dir, size)?;
    let differences = [(up - down) / (2.0 * h), (up - here) / h, (here - down) / h];
    let scale = 1.0 + quadratic.abs().max(here.abs());
    let matches = differences
        .iter()
        .any(|d| (d - quadratic).abs() <= DIFFERENCE_TOLERANCE * scale);
    Ok(same && matches)
}

/// Measure `prog` (compiled as `c`) at `size`.
pub fn measure_point(
    prog: &Program,
    c: &Compiled,
    size: Size,
    budget: Budget,
) -> Result<Point, String> {
    measure_point_with_second_order(prog, c, size, budget).map(|(p, _)| p)
}

/// The indices of the variants timed in one round, in the order they are sampled.
const PRIMAL: usize = 0;
const GRADIENT: usize = 1;
const HAND_PRIMAL: usize = 2;
const HAND_GRADIENT: usize = 3;
const JVP: usize = 4;
const HVP: usize = 5;
/// How many variants there are.
const VARIANTS: usize = 6;

/// The samples of `variants` taken in interleaved rounds ([`interleaved`]), by the
/// variants' indices (empty where a variant was not sampled).
fn sampled(mut variants: Vec<(usize, Box<dyn FnMut() + '_>)>, budget: Budget) -> Vec<Vec<f64>> {
    let mut fs: Vec<&mut dyn FnMut()> = variants
        .iter_mut()
        .map(|(_, f)| f.as_mut() as &mut dyn FnMut())
        .collect();
    let samples = interleaved(&mut fs, budget);
    let mut t = vec![Vec::new(); VARIANTS];
    for ((k, _), s) in variants.iter().zip(samples) {
        t[*k] = s;
    }
    t
}

/// [`measure_point`], with unfad's jvp and Hessian-vector product timed too, in rounds of
/// their own with the primal and the gradient (the four variants of the [`Point`] are
/// sampled in rounds without them).
pub fn measure_point_with_second_order(
    prog: &Program,
    c: &Compiled,
    size: Size,
    budget: Budget,
) -> Result<(Point, SecondOrderPoint), String> {
    let args: Vec<Data> = (prog.inputs)(size);
    let dir = direction(&args);
    let lookup = |v: &str| size.var(v);
    let mut primal = Native::primal(&c.primal, &args, &lookup)?;
    let mut grad = match &c.gradient {
        Ok(g) => Some(Native::gradient(g, &args, &lookup)?),
        Err(_) => None,
    };
    let mut jvp = match &c.jvp {
        Ok(j) => Some(Native::with_directions(j.function(), &args, &dir, &lookup)?),
        Err(_) => None,
    };
    let mut hvp = match &c.hvp {
        Ok(h) => Some(Native::with_directions(h.function(), &args, &dir, &lookup)?),
        Err(_) => None,
    };
    let mut grads = Program::grad_buffers(&args);
    let mut scratch = Vec::new();
    // Check the baselines against unfad before timing them.
    let hand_value = (prog.gradient)(&args, &mut grads, &mut scratch);
    let value = primal.run()?;
    let mut agree = close((prog.primal)(&args), value) && close(hand_value, value);
    let mut gradient_outputs = None;
    if let Some(g) = grad.as_mut() {
        g.run()?;
        let outs = g.outputs();
        agree &= close(outs[0][0], hand_value)
            && outs.len() == grads.len() + 1
            && outs[1..]
                .iter()
                .zip(&grads)
                .all(|(a, b)| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| close(*x, *y)));
        gradient_outputs = Some(outs.to_vec());
    }
    let jvp_agrees = match jvp.as_mut() {
        Some(j) => Some(jvp_agrees(j, value, gradient_outputs.as_deref(), &dir)?),
        None => None,
    };
    let hvp_agrees = match (hvp.as_mut(), &gradient_outputs, &c.jvp) {
        (Some(h), Some(g), Ok(j)) => {
            h.run()?;
            Some(hvp_agrees(h.outputs(), g, j.function(), &args, &dir, size)?)
        }
        (Some(_), _, _) => Some(false),
        (None, _, _) => None,
    };
    let a = &args;
    // A run that stops at a failed check is reported after the timing, as from the runs
    // above (which passed with these same arguments).
    let failed: RefCell<Option<String>> = RefCell::new(None);
    let fail = |r: Result<f64, String>| {
        if let Err(e) = r {
            failed.borrow_mut().get_or_insert(e);
        }
    };
    // The four variants of the `Point` are sampled in rounds of their own, so that each
    // follows a variant of the same weight; the jvp and the Hessian-vector product then
    // in rounds with the primal and the gradient they are compared with. (Sampled in the
    // same rounds, unfad's primal followed the Hessian-vector product, whose large
    // outputs slowed its next calls: column_stats' primal measured 1.7x the hand-written
    // one, 1.15x in rounds of the four alone.)
    let t = {
        let mut variants: Vec<(usize, Box<dyn FnMut() + '_>)> = Vec::new();
        variants.push((PRIMAL, Box::new(|| fail(black_box(primal.run())))));
        if let Some(g) = grad.as_mut() {
            variants.push((GRADIENT, Box::new(|| fail(black_box(g.run())))));
        }
        variants.push((
            HAND_PRIMAL,
            Box::new(|| {
                black_box((prog.primal)(black_box(a)));
            }),
        ));
        variants.push((
            HAND_GRADIENT,
            Box::new(|| {
                black_box((prog.gradient)(black_box(a), &mut grads, &mut scratch));
            }),
        ));
        sampled(variants, budget)
    };
    let second = if jvp.is_some() || hvp.is_some() {
        let mut variants: Vec<(usize, Box<dyn FnMut() + '_>)> = Vec::new();
        variants.push((PRIMAL, Box::new(|| fail(black_box(primal.run())))));
        if let Some(j) = jvp.as_mut() {
            variants.push((JVP, Box::new(|| fail(black_box(j.run())))));
        }
        if let Some(g) = grad.as_mut() {
            variants.push((GRADIENT, Box::new(|| fail(black_box(g.run())))));
        }
        if let Some(h) = hvp.as_mut() {
            variants.push((HVP, Box::new(|| fail(black_box(h.run())))));
        }
        sampled(variants, budget)
    } else {
        vec![Vec::new(); VARIANTS]
    };
    let workspace_hand = scratch.len();
    if let Some(e) = failed.into_inner() {
        return Err(e);
    }
    let has = |k: usize| !t[k].is_empty();
    let has2 = |k: usize| !second[k].is_empty();
    // Sizes the parameters name, then those computed from them (`n - k + 1`).
    let base = |v: &str| Some(size.var(v).unwrap_or(0));
    let point = Point {
        size,
        elements: args.iter().map(|d| d.reals().len()).sum(),
        primal_ns: median(&t[PRIMAL]),
        gradient_ns: has(GRADIENT).then(|| median(&t[GRADIENT])),
        hand_primal_ns: median(&t[HAND_PRIMAL]),
        hand_gradient_ns: median(&t[HAND_GRADIENT]),
        ratio: has(GRADIENT).then(|| median_ratio(&t[GRADIENT], &t[PRIMAL])),
        hand_ratio: median_ratio(&t[HAND_GRADIENT], &t[HAND_PRIMAL]),
        primal_vs_hand: median_ratio(&t[PRIMAL], &t[HAND_PRIMAL]),
        gradient_vs_hand: has(GRADIENT).then(|| median_ratio(&t[GRADIENT], &t[HAND_GRADIENT])),
        model: model(prog.source, size).ok(),
        workspace_primal: c
            .primal
            .workspace_len(&c.primal.sizes_from(&base).unwrap_or_default()),
        workspace_gradient: c
            .gradient
            .as_ref()
            .ok()
            .map(|g| g.workspace_len(&g.sizes_from(&base).unwrap_or_default())),
        workspace_hand,
        agree,
    };
    let second = SecondOrderPoint {
        size,
        jvp_ns: has2(JVP).then(|| median(&second[JVP])),
        hvp_ns: has2(HVP).then(|| median(&second[HVP])),
        jvp_ratio: has2(JVP).then(|| median_ratio(&second[JVP], &second[PRIMAL])),
        hvp_ratio: (has2(HVP) && has2(GRADIENT))
            .then(|| median_ratio(&second[HVP], &second[GRADIENT])),
        jvp_agrees,
        hvp_agrees,
    };
    Ok((point, second))
}

/// All sizes of one program.
pub struct Measured {
    pub name: &'static str,
    pub p: u32,
    pub points: Vec<Point>,
    /// Why there is no gradient, if reverse mode refused the program.
    pub gradient_error: Option<String>,
    pub compile_grad_ms: Option<f64>,
    pub compile_primal_ms: f64,
}

/// Measure `prog` at every size of `sizes` (its own when `None`).
pub fn measure_program(
    prog: &Program,
    sizes: Option<&[Size]>,
    budget: Budget,
) -> Result<Measured, String> {
    measure_program_with_second_order(prog, sizes, budget).map(|(m, _)| m)
}

/// The jvp and the Hessian-vector product of one program at every size measured.
#[derive(Clone, Debug)]
pub struct SecondOrder {
    pub name: &'static str,
    pub points: Vec<SecondOrderPoint>,
    /// Why there is no jvp, or no Hessian-vector product, if unfad refused to compile it.
    pub jvp_error: Option<String>,
    pub hvp_error: Option<String>,
}

/// [`measure_program`], with the jvp and the Hessian-vector product timed in the same
/// rounds.
pub fn measure_program_with_second_order(
    prog: &Program,
    sizes: Option<&[Size]>,
    budget: Budget,
) -> Result<(Measured, SecondOrder), String> {
    let c = Compiled::new(prog, 5)?;
    let (points, second): (Vec<Point>, Vec<SecondOrderPoint>) = sizes
        .unwrap_or(prog.sizes)
        .iter()
        .map(|&s| measure_point_with_second_order(prog, &c, s, budget))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    let measured = Measured {
        name: prog.name,
        p: prog.p,
        points,
        gradient_error: c.gradient.as_ref().err().cloned(),
        compile_grad_ms: c.compile_grad_ms,
        compile_primal_ms: c.compile_primal_ms,
    };
    let second = SecondOrder {
        name: prog.name,
        points: second,
        jvp_error: c.jvp.as_ref().err().cloned(),
        hvp_error: c.hvp.as_ref().err().cloned(),
    };
    Ok((measured, second))
}

/// A line `t = a + b x` fitted by least squares on relative errors (every size counts
/// alike): `b` is the time per element, `a` the fixed cost of a call.
#[derive(Clone, Copy, Debug)]
pub struct Fit {
    pub a: f64,
    pub b: f64,
    /// The exponent of a power law `t ~ x^k` fitted on logarithms (1 for linear scaling).
    pub exponent: f64,
}

/// Fit `ys` against `xs` (at least two distinct `xs`).
pub fn fit(xs: &[f64], ys: &[f64]) -> Option<Fit> {
    if xs.len() < 2 || xs.len() != ys.len() {
        return None;
    }
    // Weighted least squares with weights 1/y^2.
    let (mut s, mut sx, mut sxx, mut sy, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (&x, &y) in xs.iter().zip(ys) {
        let w = 1.0 / (y * y);
        s += w;
        sx += w * x;
        sxx += w * x * x;
        sy += w * y;
        sxy += w * x * y;
    }
    let det = s * sxx - sx * sx;
    if det.abs() < f64::MIN_POSITIVE {
        return None;
    }
    let b = (s * sxy - sx * sy) / det;
    let a = (sy - b * sx) / s;
    // Power law on the sizes where the per-element cost dominates (the upper half).
    let mut pts: Vec<(f64, f64)> = xs.iter().copied().zip(ys.iter().copied()).collect();
    pts.sort_by(|p, q| p.0.total_cmp(&q.0));
    let upper = &pts[pts.len() / 2..];
    let n = upper.len() as f64;
    let (lx, ly): (Vec<f64>, Vec<f64>) = upper.iter().map(|&(x, y)| (x.ln(), y.ln())).unzip();
    let mx = lx.iter().sum::<f64>() / n;
    let my = ly.iter().sum::<f64>() / n;
    let cov: f64 = lx.iter().zip(&ly).map(|(x, y)| (x - mx) * (y - my)).sum();
    let var: f64 = lx.iter().map(|x| (x - mx) * (x - mx)).sum();
    let exponent = if var > 0.0 { cov / var } else { f64::NAN };
    Some(Fit { a, b, exponent })
}

/// What memory safety costs a call of one program's gradient (issue 22).
#[derive(Clone, Debug)]
pub struct SafetyRow {
    pub name: &'static str,
    pub size: Size,
    /// Nanoseconds per call through the facade's checked call (`GradFn::call_into`: every
    /// argument checked against the parameter types and flattened, the status cell read).
    pub checked_ns: f64,
    /// Nanoseconds per call of the same native code bound to its arguments once
    /// (`GradFn::bind`, then `Bound::run`: the raw call and the status cell).
    pub bound_ns: f64,
    /// The checks the native code makes at run time: whether it has a status cell.
    pub run_time_checks: bool,
}

/// The checked call of `p`'s gradient at `size` against the same code called bound.
pub fn measure_safety(p: &Program, size: Size, budget: Budget) -> Result<SafetyRow, String> {
    let g = Engine::new()
        .compile_grad(p.source)
        .map_err(|e| e.to_string())?;
    let args = (p.inputs)(size);
    let facade: Vec<unfad::Arg> = args.iter().map(Data::arg).collect();
    let mut out = unfad::Output::default();
    g.call_into(&facade, &mut out).map_err(|e| e.to_string())?;
    let mut native = Native::gradient(&g, &args, &|v| size.var(v))?;
    native.run()?;
    let sizes: Vec<u64> = g.sizes_from(&|v| size.var(v)).unwrap_or_default();
    let mut failed = None;
    let mut checked = || {
        if let Err(e) = g.call_into(black_box(&facade), &mut out) {
            failed = Some(e.to_string());
        }
    };
    let mut bound_failed = None;
    let mut bound = || {
        if let Err(e) = native.run() {
            bound_failed = Some(e);
        }
    };
    let t = interleaved(&mut [&mut checked, &mut bound], budget);
    if let Some(e) = failed.or(bound_failed) {
        return Err(e);
    }
    Ok(SafetyRow {
        name: p.name,
        size,
        checked_ns: median(&t[0]),
        bound_ns: median(&t[1]),
        run_time_checks: g.status_cell(&sizes).is_some(),
    })
}

/// A reduction's primal against a loop that only streams its inputs from memory (issue
/// 18): the bound a reduction cannot beat.
#[derive(Clone, Debug)]
pub struct StreamingRow {
    pub name: &'static str,
    pub size: Size,
    /// Nanoseconds per call of unfad's primal (bound to its arguments).
    pub primal_ns: f64,
    /// Nanoseconds per pass of [`stream`] over the same arguments.
    pub stream_ns: f64,
    /// The median of the ratios `primal / stream` within a round.
    pub ratio: f64,
}

/// Every real of `args` read once, with as little work per element as a loop can do: the
/// bits added as integers in eight independent sums, which the compiler vectorises (integer
/// addition is associative), so the loop runs at the speed of the memory.
pub fn stream(args: &[Data]) -> u64 {
    let mut total = 0u64;
    for d in args {
        let mut acc = [0u64; 8];
        let chunks = d.reals().chunks_exact(8);
        let rest = chunks.remainder();
        for c in chunks {
            for (a, x) in acc.iter_mut().zip(c) {
                *a = a.wrapping_add(x.to_bits());
            }
        }
        for x in rest {
            acc[0] = acc[0].wrapping_add(x.to_bits());
        }
        total = acc.iter().fold(total, |t, a| t.wrapping_add(*a));
    }
    total
}

/// `p`'s primal at `size` against [`stream`] over its arguments, timed in turn.
pub fn measure_streaming(p: &Program, size: Size, budget: Budget) -> Result<StreamingRow, String> {
    let f = Engine::new().compile(p.source).map_err(|e| e.to_string())?;
    let args = (p.inputs)(size);
    let mut native = Native::primal(&f, &args, &|v| size.var(v))?;
    native.run()?;
    let mut failed = None;
    let mut primal = || {
        if let Err(e) = native.run() {
            failed = Some(e);
        }
    };
    let mut streaming = || {
        black_box(stream(black_box(&args)));
    };
    let t = interleaved(&mut [&mut primal, &mut streaming], budget);
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(StreamingRow {
        name: p.name,
        size,
        primal_ns: median(&t[0]),
        stream_ns: median(&t[1]),
        ratio: median_ratio(&t[0], &t[1]),
    })
}
