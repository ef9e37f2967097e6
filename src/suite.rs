//! The programs of the cheap-gradient suite, each with its inputs, its hand-written Rust
//! primal and gradient (plain loops, the baselines every figure is a ratio against), and
//! the note explaining where its measured gradient/primal ratio and the cost model's
//! ratio differ.
//!
//! The suite covers the nesting depths p = 0 (scalar code), 1 (single loops over `[n]`
//! arrays) and 2 (loops over `[n][m]` data). A program whose gradient reverse mode does
//! not handle yet is kept: its primal is still measured, and the report shows the reason.

/// The sizes of one measurement: `n` (and `m` for `[n][m]` data; 0 when unused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub n: usize,
    pub m: usize,
}

impl Size {
    pub const fn scalar() -> Size {
        Size { n: 0, m: 0 }
    }

    pub const fn n(n: usize) -> Size {
        Size { n, m: 0 }
    }

    pub const fn nm(n: usize, m: usize) -> Size {
        Size { n, m }
    }

    /// The value of a size variable (`n` or `m`).
    pub fn var(&self, name: &str) -> Option<u64> {
        match name {
            "n" => Some(self.n as u64),
            "m" => Some(self.m as u64),
            _ => None,
        }
    }

    /// How the size reads in a table.
    pub fn label(&self) -> String {
        match (self.n, self.m) {
            (0, 0) => "-".into(),
            (n, 0) => n.to_string(),
            (n, m) => format!("{n}x{m}"),
        }
    }
}

/// One argument: a real, or an array of reals (row-major, with its shape).
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    Real(f64),
    Array(Vec<f64>, Vec<usize>),
}

impl Data {
    /// The argument for the `unfad` facade.
    pub fn arg(&self) -> unfad::Arg<'_> {
        match self {
            Data::Real(x) => unfad::Arg::Real(*x),
            Data::Array(v, shape) => unfad::Arg::array(v, shape),
        }
    }

    /// The reals, flat (one for a real).
    pub fn reals(&self) -> &[f64] {
        match self {
            Data::Real(x) => std::slice::from_ref(x),
            Data::Array(v, _) => v,
        }
    }
}

/// A real argument.
fn real(d: &[Data], k: usize) -> f64 {
    d[k].reals()[0]
}

/// An array argument, flat.
fn arr(d: &[Data], k: usize) -> &[f64] {
    d[k].reals()
}

/// Deterministic noise in [-1, 1) (a hash of `seed` and `i`), so that every run measures
/// the same inputs.
pub fn noise(seed: u64, i: usize) -> f64 {
    let mut x = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(i as u64)
        .wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

fn vector(seed: u64, n: usize, f: impl Fn(f64) -> f64) -> Data {
    Data::Array((0..n).map(|i| f(noise(seed, i))).collect(), vec![n])
}

fn matrix(seed: u64, n: usize, m: usize, f: impl Fn(f64) -> f64) -> Data {
    Data::Array((0..n * m).map(|i| f(noise(seed, i))).collect(), vec![n, m])
}

/// A hand-written primal: the value at the arguments.
pub type Primal = fn(&[Data]) -> f64;

/// A hand-written gradient: the value, with the gradient with respect to every parameter
/// written to `grads` (one buffer per parameter, of its length). `scratch` is memory it may
/// keep between calls.
pub type Gradient = fn(&[Data], &mut [Vec<f64>], &mut Vec<f64>) -> f64;

/// One program of the suite.
pub struct Program {
    pub name: &'static str,
    /// What it computes, in a few words.
    pub what: &'static str,
    /// The nesting depth of array operations it is meant to cover (checked against NAO).
    pub p: u32,
    /// The program, in unfad's language (its last definition is the entry point).
    pub source: &'static str,
    pub sizes: &'static [Size],
    pub inputs: fn(Size) -> Vec<Data>,
    pub primal: Primal,
    pub gradient: Gradient,
    /// Why the measured ratio and the model's differ by more than 2x, where they do.
    pub note: &'static str,
}

impl Program {
    /// Reals in the arguments at `s` (the `n` that times are fitted against).
    pub fn elements(&self, s: Size) -> usize {
        (self.inputs)(s).iter().map(|d| d.reals().len()).sum()
    }

    /// Zeroed gradient buffers for the arguments `d`.
    pub fn grad_buffers(d: &[Data]) -> Vec<Vec<f64>> {
        d.iter().map(|x| vec![0.0; x.reals().len()]).collect()
    }
}

const SCALAR: &[Size] = &[Size::scalar()];
const VECTOR: &[Size] = &[
    Size::n(10),
    Size::n(100),
    Size::n(1_000),
    Size::n(10_000),
    Size::n(100_000),
    Size::n(1_000_000),
];
const MATRIX: &[Size] = &[
    Size::nm(1, 100),
    Size::nm(10, 100),
    Size::nm(100, 100),
    Size::nm(1_000, 100),
    Size::nm(10_000, 100),
];

/// The suite, by nesting depth.
pub fn programs() -> Vec<Program> {
    vec![
        // ---- p = 0 ----------------------------------------------------------------------
        Program {
            name: "intro",
            what: "the paper's introductory term x1*x2*x1",
            p: 0,
            source: include_str!("../examples/intro.ad"),
            sizes: SCALAR,
            inputs: |_| vec![Data::Real(2.0), Data::Real(3.0), Data::Real(5.0)],
            primal: |d| {
                let (x1, x2) = (real(d, 0), real(d, 1));
                x1 * x2 * x1
            },
            gradient: |d, g, _| {
                let (x1, x2) = (real(d, 0), real(d, 1));
                let w1 = x1 * x2;
                g[0][0] = w1 + x2 * x1;
                g[1][0] = x1 * x1;
                g[2][0] = 0.0;
                w1 * x1
            },
            note: "Scalar code: each call takes a few nanoseconds, mostly the call itself; the model charges a move for every variable reference, which the native code keeps in registers.",
        },
        Program {
            name: "scalar",
            what: "straight-line code with sin, exp, log and a division",
            p: 0,
            source: "def f(x: real, y: real, z: real): real =\n  \
                     let a = sin(x) * y in\n  \
                     let b = exp(a - z) in\n  \
                     log(1 + b * b) + a * z / (1 + x * x)",
            sizes: SCALAR,
            inputs: |_| vec![Data::Real(0.7), Data::Real(-1.3), Data::Real(0.4)],
            primal: |d| {
                let (x, y, z) = (real(d, 0), real(d, 1), real(d, 2));
                let a = x.sin() * y;
                let b = (a - z).exp();
                (1.0 + b * b).ln() + a * z / (1.0 + x * x)
            },
            gradient: |d, g, _| {
                let (x, y, z) = (real(d, 0), real(d, 1), real(d, 2));
                let (s, c) = x.sin_cos();
                let a = s * y;
                let b = (a - z).exp();
                let q = 1.0 + x * x;
                let bb = b * b;
                let dlog = 2.0 * bb / (1.0 + bb);
                let da = dlog + z / q;
                g[0][0] = da * c * y - 2.0 * a * z * x / (q * q);
                g[1][0] = da * s;
                g[2][0] = -dlog + a / q;
                (1.0 + bb).ln() + a * z / q
            },
            note: "The time is that of the run-time calls (`sin`, `exp`, `log`, and the gradient's `cos`); the model weighs a call like an addition and charges moves the native code does not make, so it predicts more than is measured.",
        },
        // ---- p = 1 ----------------------------------------------------------------------
        Program {
            name: "sum",
            what: "sum of an array",
            p: 1,
            source: include_str!("../examples/sum.ad"),
            sizes: VECTOR,
            inputs: |s| vec![vector(1, s.n, |r| r)],
            primal: |d| {
                let mut s = 0.0;
                for &x in arr(d, 0) {
                    s += x;
                }
                s
            },
            gradient: |d, g, _| {
                let a = arr(d, 0);
                let mut s = 0.0;
                for (x, gx) in a.iter().zip(g[0].iter_mut()) {
                    s += x;
                    *gx = 1.0;
                }
                s
            },
            note: "",
        },
        Program {
            name: "dot",
            what: "dot product",
            p: 1,
            source: include_str!("../examples/dot.ad"),
            sizes: VECTOR,
            inputs: |s| vec![vector(2, s.n, |r| r), vector(3, s.n, |r| r)],
            primal: |d| {
                let (a, b) = (arr(d, 0), arr(d, 1));
                let mut s = 0.0;
                for i in 0..a.len().min(b.len()) {
                    s += a[i] * b[i];
                }
                s
            },
            gradient: |d, g, _| {
                let (a, b) = (arr(d, 0), arr(d, 1));
                let (ga, gb) = two(g);
                let mut s = 0.0;
                for i in 0..a.len().min(b.len()) {
                    s += a[i] * b[i];
                    ga[i] = b[i];
                    gb[i] = a[i];
                }
                s
            },
            note: "The gradient's copies of `B` and `A` run in the reduction's loop (fusion): the extra time is the two reals stored per element, which the model counts as two moves however much memory traffic they make.",
        },
        Program {
            name: "prod",
            what: "product of an array (prefix and suffix products)",
            p: 1,
            source: include_str!("../examples/prod.ad"),
            sizes: VECTOR,
            // Factors near 1, so that the product neither overflows nor becomes subnormal.
            inputs: |s| vec![vector(4, s.n, |r| 1.0 + 0.01 * r)],
            primal: |d| {
                let mut p = 1.0;
                for &x in arr(d, 0) {
                    p *= x;
                }
                p
            },
            gradient: |d, g, _| {
                let a = arr(d, 0);
                let ga = &mut g[0];
                let mut p = 1.0;
                for i in 0..a.len() {
                    ga[i] = p;
                    p *= a[i];
                }
                let mut s = 1.0;
                for i in (0..a.len()).rev() {
                    ga[i] *= s;
                    s *= a[i];
                }
                p
            },
            note: "The suffix products are stored in the workspace (a backward pass); the prefix products are computed in the loop that multiplies them (a shifted `scanl` read in order), with the value: two passes, as in the hand-written gradient. The model charges the scans' moves as much as the primal's multiplications.",
        },
        Program {
            name: "logsumexp",
            what: "log-sum-exp, stabilised by the maximum",
            p: 1,
            source: include_str!("../examples/logsumexp.ad"),
            sizes: VECTOR,
            inputs: |s| vec![vector(5, s.n, |r| 3.0 * r)],
            primal: |d| {
                let x = arr(d, 0);
                let mut m = -1e300f64;
                for &t in x {
                    m = m.max(t);
                }
                let mut s = 0.0;
                for &t in x {
                    s += (t - m).exp();
                }
                m + s.ln()
            },
            gradient: |d, g, _| {
                let x = arr(d, 0);
                let gx = &mut g[0];
                let mut m = -1e300f64;
                for &t in x {
                    m = m.max(t);
                }
                let mut s = 0.0;
                for (t, e) in x.iter().zip(gx.iter_mut()) {
                    *e = (t - m).exp();
                    s += *e;
                }
                let inv = 1.0 / s;
                for e in gx.iter_mut() {
                    *e *= inv;
                }
                m + s.ln()
            },
            note: "The optimizer computes `exp(x - m)` once for the sum, the adjoint of `m` and the softmax (one loop stores and sums it), and the adjoint of `m`'s sum becomes a product with the sum; the maximum's adjoint has its own rule, computed in the last loop with the running maximum and index. Three passes, as in the hand-written gradient, whose last one only scales: the bookkeeping the adjoint of `reduce max` needs to be exact on ties and NaN (the first element attaining the maximum) costs little beside `exp`, while the model charges it and the stores like the primal's work.",
        },
        Program {
            name: "sumexpsin",
            what: "sum of exp(a) * sin(b) over two arrays",
            p: 1,
            source: "def f(A: [n]real, B: [n]real): real =\n  \
                     reduce + 0 (map2 (a, b. exp(a) * sin(b)) A B)",
            sizes: VECTOR,
            inputs: |s| vec![vector(6, s.n, |r| r), vector(7, s.n, |r| 3.0 * r)],
            primal: |d| {
                let (a, b) = (arr(d, 0), arr(d, 1));
                let mut s = 0.0;
                for i in 0..a.len().min(b.len()) {
                    s += a[i].exp() * b[i].sin();
                }
                s
            },
            gradient: |d, g, _| {
                let (a, b) = (arr(d, 0), arr(d, 1));
                let (ga, gb) = two(g);
                let mut s = 0.0;
                for i in 0..a.len().min(b.len()) {
                    let e = a[i].exp();
                    let (sn, cs) = b[i].sin_cos();
                    s += e * sn;
                    ga[i] = e * sn;
                    gb[i] = e * cs;
                }
                s
            },
            note: "The three loops of the optimized gradient run as one, in which value numbering computes `exp(a)`, `sin(b)` and `cos(b)` once per element: three calls against the primal's two.",
        },
        Program {
            name: "leastsq",
            what: "squared residuals of a scalar fit, w * A - B",
            p: 1,
            source: "def leastsq(A: [n]real, B: [n]real, w: real): real =\n  \
                     reduce + 0 (map2 (a, b. (w * a - b) * (w * a - b)) A B)",
            sizes: VECTOR,
            inputs: |s| {
                vec![
                    vector(8, s.n, |r| r),
                    vector(9, s.n, |r| r),
                    Data::Real(0.7),
                ]
            },
            primal: |d| {
                let (a, b, w) = (arr(d, 0), arr(d, 1), real(d, 2));
                let mut s = 0.0;
                for i in 0..a.len().min(b.len()) {
                    let r = w * a[i] - b[i];
                    s += r * r;
                }
                s
            },
            gradient: |d, g, _| {
                let (a, b, w) = (arr(d, 0), arr(d, 1), real(d, 2));
                let (ga, rest) = g.split_at_mut(1);
                let (gb, gw) = rest.split_at_mut(1);
                let (ga, gb) = (&mut ga[0], &mut gb[0]);
                let (mut s, mut dw) = (0.0, 0.0);
                for i in 0..a.len().min(b.len()) {
                    let r = w * a[i] - b[i];
                    s += r * r;
                    ga[i] = 2.0 * r * w;
                    gb[i] = -2.0 * r;
                    dw += 2.0 * r * a[i];
                }
                gw[0][0] = dw;
                s
            },
            note: "The optimized gradient has four loops over `A` and `B`; they run as one, sharing the loads and `w * a - b`, while the model counts each loop's moves and arithmetic: it predicts a larger ratio than is measured.",
        },
        Program {
            name: "recurrence",
            what: "h <- tanh(w h + u x) folded over the inputs, squared",
            p: 1,
            source: include_str!("../examples/recurrence.ad"),
            sizes: VECTOR,
            inputs: |s| {
                vec![
                    vector(10, s.n, |r| r),
                    Data::Real(0.9),
                    Data::Real(0.6),
                    Data::Real(0.1),
                ]
            },
            primal: |d| {
                let (xs, w, u, mut h) = (arr(d, 0), real(d, 1), real(d, 2), real(d, 3));
                for &x in xs {
                    h = (w * h + u * x).tanh();
                }
                h * h
            },
            gradient: |d, g, hs| {
                let (xs, w, u, h0) = (arr(d, 0), real(d, 1), real(d, 2), real(d, 3));
                // Forward: every state; backward: the adjoint of the state.
                hs.clear();
                hs.push(h0);
                let mut h = h0;
                for &x in xs {
                    h = (w * h + u * x).tanh();
                    hs.push(h);
                }
                let (gx, rest) = g.split_at_mut(1);
                let gx = &mut gx[0];
                let (mut dh, mut dw, mut du) = (2.0 * h, 0.0, 0.0);
                for t in (0..xs.len()).rev() {
                    let next = hs[t + 1];
                    let dpre = dh * (1.0 - next * next);
                    dw += dpre * hs[t];
                    du += dpre * xs[t];
                    gx[t] = dpre * u;
                    dh = dpre * w;
                }
                rest[0][0] = dw;
                rest[1][0] = du;
                rest[2][0] = dh;
                h * h
            },
            note: "The time is the `tanh` calls, each dearer than many moves or multiplications: the primal and the gradient make one per element each (the partial derivatives read the next state from the scan, since `tanh(w * h + u * x)` is that state). The model weighs all operations alike, and most of the gradient's cost in it is moves (scans, shifts, reloads), which cost next to nothing beside a `tanh`: it predicts several times the measured ratio.",
        },
        // ---- p = 2 ----------------------------------------------------------------------
        Program {
            name: "matvec_sq",
            what: "sum of the squares of M x, row by row",
            p: 2,
            source: "def f(M: [n][m]real, x: [m]real): real =\n  \
                     sum(map (r. let d = dot(r, x) in d * d) M)",
            sizes: MATRIX,
            inputs: |s| vec![matrix(11, s.n, s.m, |r| r), vector(12, s.m, |r| r)],
            primal: |d| {
                let (mm, x) = (arr(d, 0), arr(d, 1));
                let mut s = 0.0;
                for row in mm.chunks_exact(x.len().max(1)) {
                    let mut dd = 0.0;
                    for j in 0..x.len() {
                        dd += row[j] * x[j];
                    }
                    s += dd * dd;
                }
                s
            },
            gradient: |d, g, _| {
                let (mm, x) = (arr(d, 0), arr(d, 1));
                let (gm, gx) = two(g);
                let m = x.len().max(1);
                gx.fill(0.0);
                let mut s = 0.0;
                for (row, grow) in mm.chunks_exact(m).zip(gm.chunks_exact_mut(m)) {
                    let mut dd = 0.0;
                    for j in 0..x.len() {
                        dd += row[j] * x[j];
                    }
                    s += dd * dd;
                    let k = 2.0 * dd;
                    for j in 0..x.len() {
                        grow[j] = k * x[j];
                        gx[j] += k * row[j];
                    }
                }
                s
            },
            note: "Per row the gradient recomputes the row's dot product for each of the two gradients and accumulates the gradient of `x` in alternating buffers of `m` reals.",
        },
        Program {
            name: "neural_layer",
            what: "dense tanh layer with a squared loss",
            p: 2,
            source: include_str!("../examples/neural_layer.ad"),
            sizes: MATRIX,
            inputs: |s| {
                let scale = 1.0 / (s.m.max(1) as f64).sqrt();
                vec![
                    matrix(13, s.n, s.m, move |r| r * scale),
                    vector(14, s.n, |r| 0.1 * r),
                    vector(15, s.m, |r| r),
                    vector(16, s.n, |r| 0.5 * r),
                ]
            },
            primal: |d| {
                let (w, b, x, t) = (arr(d, 0), arr(d, 1), arr(d, 2), arr(d, 3));
                let mut s = 0.0;
                for (i, row) in w.chunks_exact(x.len().max(1)).enumerate() {
                    let mut a = 0.0;
                    for j in 0..x.len() {
                        a += row[j] * x[j];
                    }
                    let h = (a + b[i]).tanh();
                    s += (h - t[i]) * (h - t[i]);
                }
                s
            },
            gradient: |d, g, _| {
                let (w, b, x, t) = (arr(d, 0), arr(d, 1), arr(d, 2), arr(d, 3));
                let m = x.len().max(1);
                let [gw, gb, gx, gt] = g else {
                    return f64::NAN;
                };
                gx.fill(0.0);
                let mut s = 0.0;
                for (i, (row, grow)) in w.chunks_exact(m).zip(gw.chunks_exact_mut(m)).enumerate() {
                    let mut a = 0.0;
                    for j in 0..x.len() {
                        a += row[j] * x[j];
                    }
                    let h = (a + b[i]).tanh();
                    let dh = 2.0 * (h - t[i]);
                    s += (h - t[i]) * (h - t[i]);
                    let dpre = dh * (1.0 - h * h);
                    for j in 0..x.len() {
                        grow[j] = dpre * x[j];
                        gx[j] += dpre * row[j];
                    }
                    gb[i] = dpre;
                    gt[i] = -dh;
                }
                s
            },
            note: "The rows' `tanh(dot(row, x) + b)` are computed once for the value and the gradients (the optimizer stores them); the gradient of `x` is accumulated in alternating buffers of `m` reals, where the hand-written gradient accumulates in place.",
        },
        Program {
            name: "row_lse",
            what: "sum over the rows of their log-sum-exp",
            p: 2,
            source: "def f(M: [n][m]real): real =\n  \
                     sum(map (r. let mx = reduce max (-1e300) r in \
                     mx + log(sum(map (t. exp(t - mx)) r))) M)",
            sizes: MATRIX,
            inputs: |s| vec![matrix(17, s.n, s.m, |r| 3.0 * r)],
            primal: |d| {
                let (mm, m) = (arr(d, 0), cols(&d[0]));
                let mut s = 0.0;
                for row in mm.chunks_exact(m) {
                    s += lse(row);
                }
                s
            },
            gradient: |d, g, _| {
                let (mm, m) = (arr(d, 0), cols(&d[0]));
                let mut s = 0.0;
                for (row, grow) in mm.chunks_exact(m).zip(g[0].chunks_exact_mut(m)) {
                    let mut mx = -1e300f64;
                    for &t in row {
                        mx = mx.max(t);
                    }
                    let mut sum = 0.0;
                    for (t, e) in row.iter().zip(grow.iter_mut()) {
                        *e = (t - mx).exp();
                        sum += *e;
                    }
                    let inv = 1.0 / sum;
                    for e in grow.iter_mut() {
                        *e *= inv;
                    }
                    s += mx + sum.ln();
                }
                s
            },
            note: "As `logsumexp`, per row: the rows' maxima and sums of exponentials are computed once for the value and the gradient (the optimizer stores them), but the softmax computes the exponentials again, two `exp` per element against the hand-written gradient's one.",
        },
    ]
}

/// The first two gradient buffers.
fn two(g: &mut [Vec<f64>]) -> (&mut [f64], &mut [f64]) {
    let (a, b) = g.split_at_mut(1);
    (&mut a[0], &mut b[0])
}

/// Columns of a `[n][m]` argument (at least 1, for `chunks_exact`).
fn cols(d: &Data) -> usize {
    match d {
        Data::Array(_, shape) => shape.get(1).copied().unwrap_or(1).max(1),
        Data::Real(_) => 1,
    }
}

fn lse(row: &[f64]) -> f64 {
    let mut mx = -1e300f64;
    for &t in row {
        mx = mx.max(t);
    }
    let mut s = 0.0;
    for &t in row {
        s += (t - mx).exp();
    }
    mx + s.ln()
}
