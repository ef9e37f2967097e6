//! The programs of the cheap-gradient suite, each with its inputs, its hand-written Rust
//! primal and gradient (plain loops, the baselines every figure is a ratio against), and
//! the note explaining where its measured gradient/primal ratio and the cost model's
//! ratio differ.
//!
//! The suite has two families. The core programs cover the nesting depths p = 0 (scalar
//! code), 1 (single loops over `[n]` arrays) and 2 (loops over `[n][m]` data). The plain
//! programs (issue 17) are what users commonly write (a small network, a mixture model's
//! likelihood, regressions, stencils, a loss with a branch), written the obvious way with
//! nothing hoisted or fused by hand, to measure unfad on code nobody tuned for it. A
//! program whose gradient reverse mode does not handle yet is kept: its primal is still
//! measured, and the report shows the reason.

/// The sizes of one measurement: `n` (and `m` for `[n][m]` data, `k` for a third
/// dimension such as hidden units, classes or mixture components; 0 when unused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub n: usize,
    pub m: usize,
    pub k: usize,
}

impl Size {
    pub const fn scalar() -> Size {
        Size { n: 0, m: 0, k: 0 }
    }

    pub const fn n(n: usize) -> Size {
        Size { n, m: 0, k: 0 }
    }

    pub const fn nm(n: usize, m: usize) -> Size {
        Size { n, m, k: 0 }
    }

    pub const fn nmk(n: usize, m: usize, k: usize) -> Size {
        Size { n, m, k }
    }

    /// The value of a size variable (`n`, `m` or `k`).
    pub fn var(&self, name: &str) -> Option<u64> {
        match name {
            "n" => Some(self.n as u64),
            "m" => Some(self.m as u64),
            "k" => Some(self.k as u64),
            _ => None,
        }
    }

    /// How the size reads in a table.
    pub fn label(&self) -> String {
        match (self.n, self.m, self.k) {
            (0, 0, 0) => "-".into(),
            (n, 0, 0) => n.to_string(),
            (n, m, 0) => format!("{n}x{m}"),
            (n, m, k) => format!("{n}x{m}, k={k}"),
        }
    }
}

/// Which family of the suite a program belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// The programs chosen to cover each nesting depth, some written with unfad in mind.
    Core,
    /// Programs written the way a new user would write them, nothing hoisted or fused by
    /// hand (issue 17): unfad's gradient should still run at hand-written speed.
    Plain,
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

/// `sum((x - y)^2)`, the fit of the denoising programs.
fn squared_distance(x: &[f64], y: &[f64]) -> f64 {
    let mut fit = 0.0;
    for (xi, yi) in x.iter().zip(y) {
        fit += (xi - yi) * (xi - yi);
    }
    fit
}

/// [`squared_distance`], with its gradients with respect to `x` and `y` written to `gx`
/// and `gy`.
fn squared_distance_gradient(x: &[f64], y: &[f64], gx: &mut [f64], gy: &mut [f64]) -> f64 {
    let mut fit = 0.0;
    for i in 0..x.len() {
        let r = x[i] - y[i];
        fit += r * r;
        gx[i] = 2.0 * r;
        gy[i] = -2.0 * r;
    }
    fit
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
    pub family: Family,
    /// The program, in unfad's language (its last definition is the entry point).
    pub source: &'static str,
    pub sizes: &'static [Size],
    pub inputs: fn(Size) -> Vec<Data>,
    pub primal: Primal,
    pub gradient: Gradient,
    /// Why the measured ratio and the model's differ by more than 2x, where they do.
    pub note: &'static str,
    /// For the plain programs: why unfad's time is above the targets against the
    /// hand-written code (gradient 1.3x, primal 1.2x), where it is (issue 17).
    pub versus_hand: &'static str,
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

/// The suite: the core programs by nesting depth, then the plain ones.
pub fn programs() -> Vec<Program> {
    let mut all = core();
    all.extend(plain());
    all
}

/// The core family, by nesting depth.
fn core() -> Vec<Program> {
    vec![
        // ---- p = 0 ----------------------------------------------------------------------
        Program {
            name: "intro",
            what: "the paper's introductory term x1*x2*x1",
            p: 0,
            family: Family::Core,
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
            versus_hand: "",
        },
        Program {
            name: "scalar",
            what: "straight-line code with sin, exp, log and a division",
            p: 0,
            family: Family::Core,
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
            versus_hand: "",
        },
        // ---- p = 1 ----------------------------------------------------------------------
        Program {
            name: "sum",
            what: "sum of an array",
            p: 1,
            family: Family::Core,
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
            note: "The primal reads 10^6 reals in a blocked reduction that runs at the memory's read bandwidth; the gradient's array of ones writes as many, and a write to memory costs a read of the line and a write back, about twice a read. The model counts one move per element either way.",
            versus_hand: "",
        },
        Program {
            name: "dot",
            what: "dot product",
            p: 1,
            family: Family::Core,
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
            versus_hand: "",
        },
        Program {
            name: "prod",
            what: "product of an array (prefix and suffix products)",
            p: 1,
            family: Family::Core,
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
            note: "The suffix products are stored in the gradient's buffer (a backward pass), then multiplied there in place by the prefix products, which are computed in that loop (a shifted `scanl` read in order), with the value: two passes and no workspace, as in the hand-written gradient (the suffix products took a workspace of the array's size before `scans_in_results`). The model charges the scans' moves as much as the primal's multiplications.",
            versus_hand: "",
        },
        Program {
            name: "logsumexp",
            what: "log-sum-exp, stabilised by the maximum",
            p: 1,
            family: Family::Core,
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
            note: "The optimizer computes `exp(x - m)` once for the sum, the adjoint of `m` and the softmax (one loop stores and sums it), and the adjoint of `m`'s sum becomes a product with the sum; the maximum's adjoint has its own rule: a reduction finds the first position holding the maximum (exact on ties and NaN), and the last loop compares each position with it. Four passes where the hand-written gradient makes three, the last one only scaling: the position's reduction is cheap beside `exp`, while the model charges it and the stores like the primal's work.",
            versus_hand: "",
        },
        Program {
            name: "sumexpsin",
            what: "sum of exp(a) * sin(b) over two arrays",
            p: 1,
            family: Family::Core,
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
            note: "The three loops of the optimized gradient run as one, in which value numbering computes `exp(a)`, `sin(b)` and `cos(b)` once per element; `sin(b)` and `cos(b)` share their kernel's reduction and polynomials (computed once, the quadrant's choice apart), so the gradient does little more kernel work than the primal, where the model counts `cos` as a third NLOP.",
            versus_hand: "",
        },
        Program {
            name: "leastsq",
            what: "squared residuals of a scalar fit, w * A - B",
            p: 1,
            family: Family::Core,
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
            versus_hand: "",
        },
        Program {
            name: "recurrence",
            what: "h <- tanh(w h + u x) folded over the inputs, squared",
            p: 1,
            family: Family::Core,
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
            versus_hand: "",
        },
        // ---- p = 2 ----------------------------------------------------------------------
        Program {
            name: "matvec_sq",
            what: "sum of the squares of M x, row by row",
            p: 2,
            family: Family::Core,
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
            versus_hand: "",
        },
        Program {
            name: "neural_layer",
            what: "dense tanh layer with a squared loss",
            p: 2,
            family: Family::Core,
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
            versus_hand: "",
        },
        Program {
            name: "row_lse",
            what: "sum over the rows of their log-sum-exp",
            p: 2,
            family: Family::Core,
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
            versus_hand: "",
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

/// Square matrices, up to 1000 x 1000.
const SQUARE: &[Size] = &[
    Size::nm(10, 10),
    Size::nm(30, 30),
    Size::nm(100, 100),
    Size::nm(300, 300),
    Size::nm(1_000, 1_000),
];
/// A batch of `n` examples of 32 features through 32 hidden units.
const BATCH_HIDDEN: &[Size] = &[
    Size::nmk(10, 32, 32),
    Size::nmk(100, 32, 32),
    Size::nmk(1_000, 32, 32),
    Size::nmk(3_000, 32, 32),
];
/// A batch of `n` examples of 32 features in 10 classes.
const BATCH_CLASSES: &[Size] = &[
    Size::nmk(10, 32, 10),
    Size::nmk(100, 32, 10),
    Size::nmk(1_000, 32, 10),
    Size::nmk(10_000, 32, 10),
];
/// `A: [n][k]`, `B: [k][m]`: square products.
const PRODUCT: &[Size] = &[
    Size::nmk(10, 10, 10),
    Size::nmk(30, 30, 30),
    Size::nmk(100, 100, 100),
    Size::nmk(200, 200, 200),
];
/// A signal of `n` samples and a filter of `k` taps.
const SIGNAL: &[Size] = &[
    Size::nmk(100, 1, 16),
    Size::nmk(10_000, 1, 16),
    Size::nmk(100_000, 1, 16),
];
/// A sequence of `n` steps through a layer of width 32.
const SEQUENCE: &[Size] = &[
    Size::nm(10, 32),
    Size::nm(100, 32),
    Size::nm(1_000, 32),
    Size::nm(3_000, 32),
];
/// `n` points of 10 dimensions under 25 components (GradBench's gmm sizes at n = 1000).
const MIXTURE: &[Size] = &[
    Size::nmk(10, 10, 25),
    Size::nmk(100, 10, 25),
    Size::nmk(1_000, 10, 25),
    Size::nmk(3_000, 10, 25),
];

/// The plain family (issue 17): programs written as a new user would write them, the
/// obvious way, with nothing hoisted out of a loop or fused by hand; their hand-written
/// baselines are what a competent engineer would write (reverse mode derived by hand,
/// loop invariants hoisted, gradients accumulated in place).
fn plain() -> Vec<Program> {
    vec![
        Program {
            name: "mlp_tanh",
            what: "two-layer perceptron with tanh hidden units, squared error over a batch",
            p: 3,
            family: Family::Plain,
            source: "def mlp(X: [n][m]real, W1: [k][m]real, b1: [k]real, w2: [k]real, y: [n]real): real =\n  \
                     sum(map2 (x, t.\n    \
                     let h = map2 (row, b. tanh(dot(row, x) + b)) W1 b1 in\n    \
                     let out = dot(w2, h) in\n    \
                     (out - t) * (out - t)) X y)",
            sizes: BATCH_HIDDEN,
            inputs: |s| {
                let (sm, sk) = (scale(s.m), scale(s.k));
                vec![
                    matrix(20, s.n, s.m, |r| r),
                    matrix(21, s.k, s.m, move |r| r * sm),
                    vector(22, s.k, |r| 0.1 * r),
                    vector(23, s.k, move |r| r * sk),
                    vector(24, s.n, |r| 0.5 * r),
                ]
            },
            primal: |d| {
                let (x, w1, b1, w2, y) = (arr(d, 0), arr(d, 1), arr(d, 2), arr(d, 3), arr(d, 4));
                let m = cols(&d[0]);
                let mut s = 0.0;
                for (xi, t) in x.chunks_exact(m).zip(y) {
                    let mut out = 0.0;
                    for (row, (b, v)) in w1.chunks_exact(m).zip(b1.iter().zip(w2)) {
                        out += v * (dot(row, xi) + b).tanh();
                    }
                    s += (out - t) * (out - t);
                }
                s
            },
            gradient: |d, g, h| {
                let (x, w1, b1, w2, y) = (arr(d, 0), arr(d, 1), arr(d, 2), arr(d, 3), arr(d, 4));
                let m = cols(&d[0]);
                let [gx, gw1, gb1, gw2, gy] = g else {
                    return f64::NAN;
                };
                gw1.fill(0.0);
                gb1.fill(0.0);
                gw2.fill(0.0);
                h.clear();
                h.resize(b1.len(), 0.0);
                let mut s = 0.0;
                for (i, (xi, gxi)) in x.chunks_exact(m).zip(gx.chunks_exact_mut(m)).enumerate() {
                    let mut out = 0.0;
                    for (j, row) in w1.chunks_exact(m).enumerate() {
                        h[j] = (dot(row, xi) + b1[j]).tanh();
                        out += w2[j] * h[j];
                    }
                    let r = out - y[i];
                    s += r * r;
                    let dout = 2.0 * r;
                    gy[i] = -dout;
                    gxi.fill(0.0);
                    for (j, (row, grow)) in w1.chunks_exact(m).zip(gw1.chunks_exact_mut(m)).enumerate() {
                        gw2[j] += dout * h[j];
                        let da = dout * w2[j] * (1.0 - h[j] * h[j]);
                        gb1[j] += da;
                        for c in 0..m {
                            grow[c] += da * xi[c];
                            gxi[c] += da * row[c];
                        }
                    }
                }
                s
            },
            note: "The model counts the gradient as reverse mode writes it, a loop per adjoint over the hidden units and `W1`'s rows, each with its loads and moves; the code generator runs the adjoint of `x`, the rows of `W1`'s gradient and the biases' and `w2`'s gradients in one loop over the rows (`fused_tuple`, the rows added where made), sharing the loads and the derivative of `tanh`, while the primal's `tanh` per hidden unit, a kernel of some 40 instructions, counts in the model as one operation: the measured ratio is below the model's.",
            versus_hand: "The workspace is the hand-written gradient's (the hidden layer of one point). Per point, one pass over `W1`'s rows makes the hidden layer, then, once the output's adjoint is known, one more makes the adjoint of `x` (summed in its row of the result) and adds each row's `delta_j * x` into `W1`'s gradient, with the biases' and `w2`'s gradients (`fused_tuple`, additions into `Place::AddTo`), as the hand-written gradient does. (JAX runs the layer as matrix products, on both cores.)",
        },
        Program {
            name: "mlp_mean",
            what: "two-layer perceptron with ReLU hidden units and a tanh output, mean squared error over a batch",
            p: 3,
            family: Family::Plain,
            source: "def mlp(X: [n][m]real, T: [n]real, W1: [k][m]real, b1: [k]real, w2: [k]real, b2: real): real =\n  \
                     let errors = map2 (x, t.\n    \
                     let hidden = map2 (row, c. max(0, dot(row, x) + c)) W1 b1 in\n    \
                     let out = tanh(dot(w2, hidden) + b2) in\n    \
                     (out - t) * (out - t)) X T in\n  \
                     sum(errors) / real(len(X))",
            sizes: BATCH_HIDDEN,
            inputs: |s| {
                let (sm, sk) = (scale(s.m), scale(s.k));
                vec![
                    matrix(90, s.n, s.m, |r| r),
                    vector(91, s.n, |r| 0.5 * r),
                    matrix(92, s.k, s.m, move |r| r * sm),
                    vector(93, s.k, |r| 0.1 * r),
                    vector(94, s.k, move |r| r * sk),
                    Data::Real(0.1),
                ]
            },
            primal: |d| {
                let (x, t, w1, b1, w2, b2) =
                    (arr(d, 0), arr(d, 1), arr(d, 2), arr(d, 3), arr(d, 4), real(d, 5));
                let m = cols(&d[0]);
                let mut s = 0.0;
                for (xi, ti) in x.chunks_exact(m).zip(t) {
                    let mut z = b2;
                    for (row, (c, v)) in w1.chunks_exact(m).zip(b1.iter().zip(w2)) {
                        z += v * (dot(row, xi) + c).max(0.0);
                    }
                    let out = z.tanh();
                    s += (out - ti) * (out - ti);
                }
                s / t.len() as f64
            },
            gradient: |d, g, a| {
                let (x, t, w1, b1, w2, b2) =
                    (arr(d, 0), arr(d, 1), arr(d, 2), arr(d, 3), arr(d, 4), real(d, 5));
                let m = cols(&d[0]);
                let [gx, gt, gw1, gb1, gw2, gb2] = g else {
                    return f64::NAN;
                };
                gw1.fill(0.0);
                gb1.fill(0.0);
                gw2.fill(0.0);
                a.clear();
                a.resize(b1.len(), 0.0);
                let scale = 1.0 / t.len() as f64;
                let (mut s, mut db2) = (0.0, 0.0);
                for (i, (xi, gxi)) in x.chunks_exact(m).zip(gx.chunks_exact_mut(m)).enumerate() {
                    let mut z = b2;
                    for (j, row) in w1.chunks_exact(m).enumerate() {
                        a[j] = dot(row, xi) + b1[j];
                        z += w2[j] * a[j].max(0.0);
                    }
                    let out = z.tanh();
                    let r = out - t[i];
                    s += r * r;
                    gt[i] = -2.0 * r * scale;
                    // The derivative of `max(0, a)` is 0 at `a = 0`, as unfad's `max` has it.
                    let dz = 2.0 * r * scale * (1.0 - out * out);
                    db2 += dz;
                    gxi.fill(0.0);
                    for (j, (row, grow)) in w1.chunks_exact(m).zip(gw1.chunks_exact_mut(m)).enumerate() {
                        gw2[j] += dz * a[j].max(0.0);
                        if a[j] > 0.0 {
                            let da = dz * w2[j];
                            gb1[j] += da;
                            for c in 0..m {
                                grow[c] += da * xi[c];
                                gxi[c] += da * row[c];
                            }
                        }
                    }
                }
                gb2[0] = db2;
                s * scale
            },
            note: "",
            versus_hand: "One loop per point computes the hidden layer once and makes every adjoint, the mean's `1 / len(X)` scaling the gradients once after the loops (`unfad_ad::reverse_factored`). Each hidden unit's two row updates of 32 reals (the point's row of `X`'s gradient, `W1`'s row), `z * (a * g)` with two scalars, run as one routine call each on the host's widest vectors (`unfad_axpy2_*`), where they ran two reals per instruction (1.9x). Before the factor was taken out, the per-point value and gradient ran in separate loops, the gradient computing every dot product `W1_j . x` again (1.7x, 7088 reals of workspace); before the scaled sums joined the per-point loop, the gradient stored one matrix of `W1`'s gradient per point (4.8-5.0x).",
        },
        Program {
            name: "softmax_ce",
            what: "softmax cross-entropy of a linear model against one-hot labels",
            p: 3,
            family: Family::Plain,
            source: "def softmax_ce(X: [n][m]real, W: [k][m]real, Y: [n][k]real): real =\n  \
                     sum(map2 (x, y.\n    \
                     let z = map (row. dot(row, x)) W in\n    \
                     let lse = log(sum(map (zc. exp(zc)) z)) in\n    \
                     sum(map2 (yc, zc. yc * (lse - zc)) y z)) X Y)",
            sizes: BATCH_CLASSES,
            inputs: |s| {
                let sm = scale(s.m);
                let mut labels = vec![0.0; s.n * s.k];
                for i in 0..s.n {
                    let class = ((noise(27, i) + 1.0) / 2.0 * s.k as f64) as usize;
                    labels[i * s.k + class.min(s.k.max(1) - 1)] = 1.0;
                }
                vec![
                    matrix(25, s.n, s.m, |r| r),
                    matrix(26, s.k, s.m, move |r| 2.0 * r * sm),
                    Data::Array(labels, vec![s.n, s.k]),
                ]
            },
            primal: |d| {
                let (x, w, labels) = (arr(d, 0), arr(d, 1), arr(d, 2));
                let (m, k) = (cols(&d[0]), cols(&d[2]));
                let mut z = vec![0.0; k];
                let mut s = 0.0;
                for (xi, yi) in x.chunks_exact(m).zip(labels.chunks_exact(k)) {
                    let mut sum_exp = 0.0;
                    for (zc, row) in z.iter_mut().zip(w.chunks_exact(m)) {
                        *zc = dot(row, xi);
                        sum_exp += zc.exp();
                    }
                    let lse = sum_exp.ln();
                    for (yc, zc) in yi.iter().zip(&z) {
                        s += yc * (lse - zc);
                    }
                }
                s
            },
            gradient: |d, g, scratch| {
                let (x, w, labels) = (arr(d, 0), arr(d, 1), arr(d, 2));
                let (m, k) = (cols(&d[0]), cols(&d[2]));
                let [gx, gw, gy] = g else {
                    return f64::NAN;
                };
                gw.fill(0.0);
                scratch.clear();
                scratch.resize(2 * k, 0.0);
                let (z, e) = scratch.split_at_mut(k);
                let mut s = 0.0;
                let rows = x.chunks_exact(m).zip(gx.chunks_exact_mut(m));
                for ((xi, gxi), (yi, gyi)) in rows.zip(labels.chunks_exact(k).zip(gy.chunks_exact_mut(k))) {
                    let mut sum_exp = 0.0;
                    for c in 0..k {
                        z[c] = dot(&w[c * m..(c + 1) * m], xi);
                        e[c] = z[c].exp();
                        sum_exp += e[c];
                    }
                    let lse = sum_exp.ln();
                    let mut weight = 0.0;
                    for c in 0..k {
                        s += yi[c] * (lse - z[c]);
                        gyi[c] = lse - z[c];
                        weight += yi[c];
                    }
                    gxi.fill(0.0);
                    for (c, (row, grow)) in w.chunks_exact(m).zip(gw.chunks_exact_mut(m)).enumerate() {
                        let dz = weight * e[c] / sum_exp - yi[c];
                        for j in 0..m {
                            grow[j] += dz * xi[j];
                            gxi[j] += dz * row[j];
                        }
                    }
                }
                s
            },
            note: "",
            versus_hand: "The workspace is the hand-written gradient's (the logits and their exponentials of one point). Per point, one pass over `W`'s rows makes the logits; once their adjoint is known (it needs the sum of the exponentials), one more makes the adjoint of `x` and adds the rows of `W`'s gradient where they are made (the optimizer's joint loop, `unfad_opt::consumers`, and `Place::AddTo`), as the hand-written gradient does. The adjoint of the logits goes through `e * (1/sum)` as reverse mode writes it.",
        },
        Program {
            name: "gmm_plain",
            what: "log-likelihood of a diagonal Gaussian mixture, exp(q) inside the map over points",
            p: 3,
            family: Family::Plain,
            source: "def logsumexp(v: [k]real): real =\n  \
                     let mx = reduce max (-1e300) v in\n  \
                     mx + log(sum(map (t. exp(t - mx)) v))\n\n\
                     def component(x: [m]real, a: real, mu: [m]real, q: [m]real): real =\n  \
                     let z = map2 (xd, md. xd - md) x mu in\n  \
                     let s = map2 (qd, zd. exp(qd) * zd) q z in\n  \
                     a + sum(q) - 0.5 * sum(map (t. t * t) s)\n\n\
                     def gmm(alpha: [k]real, means: [k][m]real, q: [k][m]real, X: [n][m]real): real =\n  \
                     let comps = map2 (mu, qk. (mu, qk)) means q in\n  \
                     sum(map (x. logsumexp(map2 (a, c. component(x, a, fst c, snd c)) alpha comps)) X)",
            sizes: MIXTURE,
            inputs: |s| {
                vec![
                    vector(30, s.k, |r| r),
                    matrix(31, s.k, s.m, |r| r),
                    matrix(32, s.k, s.m, |r| 0.3 * r),
                    matrix(33, s.n, s.m, |r| r),
                ]
            },
            primal: |d| {
                let (alpha, mu, q, x) = (arr(d, 0), arr(d, 1), arr(d, 2), arr(d, 3));
                let m = cols(&d[1]);
                // exp(2 q) and alpha + sum(q) once per component, not once per point.
                let e2: Vec<f64> = q.iter().map(|v| (2.0 * v).exp()).collect();
                let base: Vec<f64> = alpha
                    .iter()
                    .zip(q.chunks_exact(m))
                    .map(|(a, qc)| a + qc.iter().sum::<f64>())
                    .collect();
                let mut terms = vec![0.0; alpha.len()];
                let mut s = 0.0;
                for xi in x.chunks_exact(m) {
                    for (c, t) in terms.iter_mut().enumerate() {
                        let mut sq = 0.0;
                        for j in 0..m {
                            let z = xi[j] - mu[c * m + j];
                            sq += e2[c * m + j] * z * z;
                        }
                        *t = base[c] - 0.5 * sq;
                    }
                    s += lse(&terms);
                }
                s
            },
            gradient: |d, g, scratch| {
                let (alpha, mu, q, x) = (arr(d, 0), arr(d, 1), arr(d, 2), arr(d, 3));
                let (m, k) = (cols(&d[1]), alpha.len());
                let [galpha, gmu, gq, gx] = g else {
                    return f64::NAN;
                };
                galpha.fill(0.0);
                gmu.fill(0.0);
                gq.fill(0.0);
                scratch.clear();
                scratch.resize(k * m + 2 * k, 0.0);
                let (e2, rest) = scratch.split_at_mut(k * m);
                let (base, w) = rest.split_at_mut(k);
                for (e, v) in e2.iter_mut().zip(q) {
                    *e = (2.0 * v).exp();
                }
                for (c, b) in base.iter_mut().enumerate() {
                    *b = alpha[c] + q[c * m..(c + 1) * m].iter().sum::<f64>();
                }
                let mut s = 0.0;
                for (xi, gxi) in x.chunks_exact(m).zip(gx.chunks_exact_mut(m)) {
                    let mut mx = -1e300f64;
                    for c in 0..k {
                        let mut sq = 0.0;
                        for j in 0..m {
                            let z = xi[j] - mu[c * m + j];
                            sq += e2[c * m + j] * z * z;
                        }
                        w[c] = base[c] - 0.5 * sq;
                        mx = mx.max(w[c]);
                    }
                    let mut sum_exp = 0.0;
                    for wc in w.iter_mut() {
                        *wc = (*wc - mx).exp();
                        sum_exp += *wc;
                    }
                    s += mx + sum_exp.ln();
                    // w becomes the posterior of each component (the softmax).
                    gxi.fill(0.0);
                    for c in 0..k {
                        let wc = w[c] / sum_exp;
                        galpha[c] += wc;
                        for j in 0..m {
                            let at = c * m + j;
                            let z = xi[j] - mu[at];
                            let wz = wc * e2[at] * z;
                            gmu[at] += wz;
                            gq[at] += wc - wz * z;
                            gxi[j] -= wz;
                        }
                    }
                }
                s
            },
            note: "`exp(q)` is computed once per component, out of the map over points (hoisting), and once only: the primal's loop over the components and the adjoint's, which zip other arrays, each had their own copy (K D reals each) until the adjoint's was rewritten to read the primal's (`unfad_opt::reuse`). The rows of `mu` and `q` zipped beside them are read where they are (`copied_columns`; they used to be copied, 1000 more reals), and the per-point contributions to the adjoints of `mu` and `q` are added where they are made. The gradient's workspace, 355 reals against the hand-written 300, is the exponentials, the components' constants and one point's log-likelihoods and weights.",
            versus_hand: "Per point and component, the gradient's contributions to `mu` and `q` (D reals each) are added into the accumulators where they are made (`Place::AddTo`), in the one loop over the components that also makes the adjoint of `x` (the optimizer's joint loop, reading the posterior weights beside the components), and the posterior weights go through the logsumexp's adjoint as written (a scan for the maximum's adjoint); the hand-written gradient makes one pass with one softmax. The primal computes `exp(q_k)` once per component (hoisted), and squares `exp(q) * (x - mu)` where the hand-written code multiplies by a precomputed `exp(2q)`.",
        },
        Program {
            name: "matvec_tanh",
            what: "sum of tanh of the rows' dot products with x",
            p: 2,
            family: Family::Plain,
            source: "def f(W: [n][m]real, x: [m]real): real =\n  \
                     reduce + 0 (map (row. tanh(reduce + 0 (map2 * row x))) W)",
            sizes: SQUARE,
            inputs: |s| {
                let sm = scale(s.m);
                vec![matrix(34, s.n, s.m, move |r| r * sm), vector(35, s.m, |r| r)]
            },
            primal: |d| {
                let (w, x) = (arr(d, 0), arr(d, 1));
                let mut s = 0.0;
                for row in w.chunks_exact(cols(&d[0])) {
                    s += dot(row, x).tanh();
                }
                s
            },
            gradient: |d, g, _| {
                let (w, x) = (arr(d, 0), arr(d, 1));
                let m = cols(&d[0]);
                let (gw, gx) = two(g);
                gx.fill(0.0);
                let mut s = 0.0;
                for (row, grow) in w.chunks_exact(m).zip(gw.chunks_exact_mut(m)) {
                    let t = dot(row, x).tanh();
                    s += t;
                    let da = 1.0 - t * t;
                    for j in 0..m {
                        grow[j] = da * x[j];
                        gx[j] += da * row[j];
                    }
                }
                s
            },
            note: "The primal is a dot product per row, streamed at two elements per cycle (eight partial sums on four vectors), plus a `tanh`; the gradient reads `W` twice more, writing its gradient row by row (n m stores) and adding each row into `x`'s in place. Those streams of memory the model counts as moves, so the measured ratio is above the model's; the hand-written gradient makes the same passes in one loop (1.7-1.9x its primal).",
            versus_hand: "",
        },
        Program {
            name: "rnn_captured",
            what: "h <- tanh(a h + w . x_t + c) folded over a sequence of vectors, squared error of the last state",
            p: 2,
            family: Family::Plain,
            source: "def rnn(X: [n][m]real, w: [m]real, a: real, c: real, y: real): real =\n  \
                     let h = foldl (h, x. tanh(a * h + dot(w, x) + c)) 0 X in\n  \
                     (h - y) * (h - y)",
            sizes: MATRIX,
            inputs: |s| {
                let sm = scale(s.m);
                vec![
                    matrix(36, s.n, s.m, |r| r),
                    vector(37, s.m, move |r| r * sm),
                    Data::Real(0.8),
                    Data::Real(-0.2),
                    Data::Real(0.3),
                ]
            },
            primal: |d| {
                let (x, w, a, c, y) = (arr(d, 0), arr(d, 1), real(d, 2), real(d, 3), real(d, 4));
                let mut h = 0.0;
                for xt in x.chunks_exact(cols(&d[0])) {
                    h = (a * h + dot(w, xt) + c).tanh();
                }
                (h - y) * (h - y)
            },
            gradient: |d, g, hs| {
                let (x, w, a, c, y) = (arr(d, 0), arr(d, 1), real(d, 2), real(d, 3), real(d, 4));
                let m = cols(&d[0]);
                // Forward: every state; backward: the adjoint of the state.
                hs.clear();
                hs.push(0.0);
                let mut h = 0.0;
                for xt in x.chunks_exact(m) {
                    h = (a * h + dot(w, xt) + c).tanh();
                    hs.push(h);
                }
                let [gx, gw, ga, gc, gy] = g else {
                    return f64::NAN;
                };
                gw.fill(0.0);
                let (mut dh, mut da, mut dc) = (2.0 * (h - y), 0.0, 0.0);
                gy[0] = -dh;
                for (t, (xt, gxt)) in x.chunks_exact(m).zip(gx.chunks_exact_mut(m)).enumerate().rev() {
                    let next = hs[t + 1];
                    let dpre = dh * (1.0 - next * next);
                    da += dpre * hs[t];
                    dc += dpre;
                    for j in 0..m {
                        gw[j] += dpre * xt[j];
                        gxt[j] = dpre * w[j];
                    }
                    dh = dpre * a;
                }
                ga[0] = da;
                gc[0] = dc;
                (h - y) * (h - y)
            },
            note: "",
            versus_hand: "",
        },
        Program {
            name: "batch_recurrence",
            what: "h <- tanh(a h + x_t + c) folded over each row of a batch, squared error of each last state",
            p: 2,
            family: Family::Plain,
            source: "def batch_recurrence(X: [n][m]real, y: [n]real, a: real, c: real): real =\n  \
                     sum(map2 (row, t. let h = foldl (h, x. tanh(a * h + x + c)) 0 row in (h - t) * (h - t)) X y)",
            sizes: MATRIX,
            inputs: |s| {
                vec![
                    matrix(38, s.n, s.m, |r| r),
                    vector(39, s.n, |r| r),
                    Data::Real(0.8),
                    Data::Real(-0.1),
                ]
            },
            primal: |d| {
                let (x, y, a, c) = (arr(d, 0), arr(d, 1), real(d, 2), real(d, 3));
                let mut s = 0.0;
                for (row, t) in x.chunks_exact(cols(&d[0])).zip(y) {
                    let mut h = 0.0;
                    for xt in row {
                        h = (a * h + xt + c).tanh();
                    }
                    s += (h - t) * (h - t);
                }
                s
            },
            gradient: |d, g, hs| {
                let (x, y, a, c) = (arr(d, 0), arr(d, 1), real(d, 2), real(d, 3));
                let m = cols(&d[0]);
                let [gx, gy, ga, gc] = g else {
                    return f64::NAN;
                };
                let (mut s, mut da, mut dc) = (0.0, 0.0, 0.0);
                for ((row, grow), (t, gt)) in x
                    .chunks_exact(m)
                    .zip(gx.chunks_exact_mut(m))
                    .zip(y.iter().zip(gy.iter_mut()))
                {
                    // Forward: the row's states; backward: the adjoint of the state.
                    hs.clear();
                    hs.push(0.0);
                    let mut h = 0.0;
                    for xt in row {
                        h = (a * h + xt + c).tanh();
                        hs.push(h);
                    }
                    s += (h - t) * (h - t);
                    let mut dh = 2.0 * (h - t);
                    *gt = -dh;
                    for j in (0..m).rev() {
                        let next = hs[j + 1];
                        let dpre = dh * (1.0 - next * next);
                        da += dpre * hs[j];
                        dc += dpre;
                        grow[j] = dpre;
                        dh = dpre * a;
                    }
                }
                ga[0] = da;
                gc[0] = dc;
                s
            },
            note: "The time is the `tanh` per step, one dependent chain per row: the primal and the gradient make one `tanh` per element each, the gradient reading the value from the tape's last state (`unfad_opt::tapes`: the joined value and gradient body computed every step twice, a fold for the value beside the tape's scan, 2.1x the primal before) and the derivative from the next state. The model weighs the tape's scans, shifts and moves like the `tanh`, so it predicts several times the measured ratio. JAX runs the rows' recurrences side by side (a scan over the columns of the batch, each step a vector `tanh`), where unfad runs each row's chain in turn.",
            versus_hand: "",
        },
        Program {
            name: "rnn_layer",
            what: "a recurrent layer h <- tanh(W h + U x_t + b) over a sequence, squared norm of the last state",
            p: 3,
            family: Family::Plain,
            source: "def rnn_layer(W: [m][m]real, U: [m][m]real, b: [m]real, h0: [m]real, X: [n][m]real): real =\n  \
                     let h = foldl (h, x. map (i. tanh(dot(W[i], h) + dot(U[i], x) + b[i])) (iota len(h))) h0 X in\n  \
                     sum(map (v. v * v) h)",
            sizes: SEQUENCE,
            inputs: |s| {
                let sm = scale(s.m);
                vec![
                    matrix(60, s.m, s.m, move |r| r * sm),
                    matrix(61, s.m, s.m, move |r| r * sm),
                    vector(62, s.m, |r| 0.1 * r),
                    vector(63, s.m, |r| r),
                    matrix(64, s.n, s.m, |r| r),
                ]
            },
            primal: |d| {
                let (w, u, b, h0, x) = (arr(d, 0), arr(d, 1), arr(d, 2), arr(d, 3), arr(d, 4));
                let m = h0.len();
                let mut h = h0.to_vec();
                let mut next = vec![0.0; m];
                for xt in x.chunks_exact(m.max(1)) {
                    for (i, v) in next.iter_mut().enumerate() {
                        let (wr, ur) = (&w[i * m..(i + 1) * m], &u[i * m..(i + 1) * m]);
                        *v = (dot(wr, &h) + dot(ur, xt) + b[i]).tanh();
                    }
                    std::mem::swap(&mut h, &mut next);
                }
                h.iter().map(|v| v * v).sum()
            },
            gradient: |d, g, hs| {
                let (w, u, b, h0, x) = (arr(d, 0), arr(d, 1), arr(d, 2), arr(d, 3), arr(d, 4));
                let m = h0.len();
                let n = x.len().checked_div(m).unwrap_or(0);
                // Forward: every state, then room for the pre-activations' adjoints.
                hs.clear();
                hs.resize((n + 2) * m, 0.0);
                hs[..m].copy_from_slice(h0);
                for t in 0..n {
                    let (done, rest) = hs.split_at_mut((t + 1) * m);
                    let (prev, xt) = (&done[t * m..], &x[t * m..(t + 1) * m]);
                    for (i, v) in rest[..m].iter_mut().enumerate() {
                        let (wr, ur) = (&w[i * m..(i + 1) * m], &u[i * m..(i + 1) * m]);
                        *v = (dot(wr, prev) + dot(ur, xt) + b[i]).tanh();
                    }
                }
                let (states, dpre) = hs.split_at_mut((n + 1) * m);
                let last = &states[n * m..];
                let value = last.iter().map(|v| v * v).sum();
                let [gw, gu, gb, gh, gx] = g else {
                    return f64::NAN;
                };
                gw.fill(0.0);
                gu.fill(0.0);
                gb.fill(0.0);
                // Backward: `gh` holds the adjoint of the state.
                for (j, v) in last.iter().enumerate() {
                    gh[j] = 2.0 * v;
                }
                for t in (0..n).rev() {
                    let (prev, next) = (&states[t * m..(t + 1) * m], &states[(t + 1) * m..(t + 2) * m]);
                    let xt = &x[t * m..(t + 1) * m];
                    for i in 0..m {
                        dpre[i] = gh[i] * (1.0 - next[i] * next[i]);
                        gb[i] += dpre[i];
                    }
                    let gxt = &mut gx[t * m..(t + 1) * m];
                    gxt.fill(0.0);
                    gh.fill(0.0);
                    for (i, &di) in dpre.iter().enumerate() {
                        let (wr, ur) = (&w[i * m..(i + 1) * m], &u[i * m..(i + 1) * m]);
                        let gwr = &mut gw[i * m..(i + 1) * m];
                        let gur = &mut gu[i * m..(i + 1) * m];
                        for j in 0..m {
                            gwr[j] += di * prev[j];
                            gur[j] += di * xt[j];
                            gh[j] += di * wr[j];
                            gxt[j] += di * ur[j];
                        }
                    }
                }
                value
            },
            note: "",
            versus_hand: "The gradient reads each step's `tanh` from the stored states (`rules/steps.rs`), so it does the hand-written gradient's arithmetic: four products of the pre-activations' adjoint with a matrix or a state per step (`W`'s and `U`'s gradients, the state's and the input's adjoints). The hand-written gradient makes them in one pass over the rows per step; unfad makes four (the reverse scan of the state's adjoint, one accumulation each for `W` and `U`, and the map of the inputs' adjoints), each reading the stored states and the adjoints again and computing the pre-activations' adjoint again.",
        },
        Program {
            name: "least_squares",
            what: "||A x - b||^2 with a matrix A",
            p: 2,
            family: Family::Plain,
            source: "def least_squares(A: [n][m]real, x: [m]real, b: [n]real): real =\n  \
                     let Ax = map (row. dot(row, x)) A in\n  \
                     let r = map2 (p, bi. p - bi) Ax b in\n  \
                     dot(r, r)",
            sizes: MATRIX,
            inputs: |s| {
                vec![
                    matrix(38, s.n, s.m, |r| r),
                    vector(39, s.m, |r| r),
                    vector(40, s.n, |r| r),
                ]
            },
            primal: |d| {
                let (a, x, b) = (arr(d, 0), arr(d, 1), arr(d, 2));
                let mut s = 0.0;
                for (row, bi) in a.chunks_exact(cols(&d[0])).zip(b) {
                    let r = dot(row, x) - bi;
                    s += r * r;
                }
                s
            },
            gradient: |d, g, _| {
                let (a, x, b) = (arr(d, 0), arr(d, 1), arr(d, 2));
                let m = cols(&d[0]);
                let [ga, gx, gb] = g else {
                    return f64::NAN;
                };
                gx.fill(0.0);
                let mut s = 0.0;
                for (i, (row, grow)) in a.chunks_exact(m).zip(ga.chunks_exact_mut(m)).enumerate() {
                    let r = dot(row, x) - b[i];
                    s += r * r;
                    let dr = 2.0 * r;
                    gb[i] = -dr;
                    for j in 0..m {
                        grow[j] = dr * x[j];
                        gx[j] += dr * row[j];
                    }
                }
                s
            },
            note: "The rows' residuals (the value and twice the residual, n pairs) are stored by the loop that makes them and read back by three more loops over the rows (`A`'s gradient, `b`'s, and the sum into `x`'s, which rereads `A`): streams of memory, while the model counts each read as one move, so the measured ratio runs above it at the largest size, where `A` no longer fits in the cache.",
            versus_hand: "The gradient of `x`, the sum over rows of `r_i * row_i`, is added into its accumulator row by row where each is made (`Place::AddTo`), in the one loop over the rows that also makes the value and the adjoints of `A` and `b`, as the hand-written loop does.",
        },
        Program {
            name: "row_logsumexp",
            what: "sum over the rows of log(sum(exp(row))), without the maximum's shift",
            p: 2,
            family: Family::Plain,
            source: "def f(M: [n][m]real): real =\n  \
                     sum(map (row. log(sum(map (t. exp(t)) row))) M)",
            sizes: MATRIX,
            inputs: |s| vec![matrix(41, s.n, s.m, |r| 3.0 * r)],
            primal: |d| {
                let mut s = 0.0;
                for row in arr(d, 0).chunks_exact(cols(&d[0])) {
                    let mut sum_exp = 0.0;
                    for t in row {
                        sum_exp += t.exp();
                    }
                    s += sum_exp.ln();
                }
                s
            },
            gradient: |d, g, _| {
                let m = cols(&d[0]);
                let mut s = 0.0;
                for (row, grow) in arr(d, 0).chunks_exact(m).zip(g[0].chunks_exact_mut(m)) {
                    let mut sum_exp = 0.0;
                    for (t, e) in row.iter().zip(grow.iter_mut()) {
                        *e = t.exp();
                        sum_exp += *e;
                    }
                    s += sum_exp.ln();
                    let inv = 1.0 / sum_exp;
                    for e in grow.iter_mut() {
                        *e *= inv;
                    }
                }
                s
            },
            note: "",
            versus_hand: "The time is the `exp` of every element: the inline kernel (`crates/kernels`, a table of `2^(j/128)` and a polynomial of degree 5, two elements per instruction) against glibc's `exp`, which the hand-written code calls one element at a time; both the primal and the gradient compute each `exp` once.",
        },
        Program {
            name: "smoothing",
            what: "denoising: squared distance to the data plus a smoothness penalty through shifts",
            p: 1,
            family: Family::Plain,
            source: "def smoothing(x: [n]real, y: [n]real, lam: real): real =\n  \
                     let fit = sum(map2 (xi, yi. (xi - yi) * (xi - yi)) x y) in\n  \
                     let diffs = map2 (next, prev. next - prev) (shift1L x) (shift1R x) in\n  \
                     fit + lam * sum(map (t. t * t) diffs)",
            sizes: VECTOR,
            inputs: |s| {
                vec![
                    vector(42, s.n, |r| r),
                    vector(43, s.n, |r| r),
                    Data::Real(0.5),
                ]
            },
            primal: |d| {
                let (x, y, lam) = (arr(d, 0), arr(d, 1), real(d, 2));
                let fit = squared_distance(x, y);
                let mut smooth = 0.0;
                for i in 1..x.len() {
                    let t = x[i] - x[i - 1];
                    smooth += t * t;
                }
                fit + lam * smooth
            },
            gradient: |d, g, _| {
                let (x, y, lam) = (arr(d, 0), arr(d, 1), real(d, 2));
                let [gx, gy, glam] = g else {
                    return f64::NAN;
                };
                let fit = squared_distance_gradient(x, y, gx, gy);
                let mut smooth = 0.0;
                for i in 1..x.len() {
                    let t = x[i] - x[i - 1];
                    smooth += t * t;
                    gx[i] += 2.0 * lam * t;
                    gx[i - 1] -= 2.0 * lam * t;
                }
                glam[0] = smooth;
                fit + lam * smooth
            },
            note: "The adjoint of each shift is a scan that only moves elements (`scanl (acc, z. z) 0 A`: a 0, then `A`), read in place as a view by the loop that writes the gradient; the penalty's adjoint per difference (`2 lam t`, two operations) is computed where each of the two views reads it, at neighbouring positions, rather than stored. The model counts the scans' moves like any other operation, so it predicts more than is measured.",
            versus_hand: "The gradients of `x` and `y` are written by one loop, whose first and last iterations are run apart (where a shift's adjoint reads its 0) and whose middle reads the shifts' adjoints in place and computes two elements at a time; the penalty's adjoint is computed at both neighbours there, not stored. The value's two sums (the fit over n elements, the penalty over n - 1) run in loops of their own: three passes over memory where the hand-written gradient makes one. Before the pads' lengths were known from the sizes, the two gradients ran apart, one of them with a test per element, and the ratio was 1.4-1.6.",
        },
        Program {
            name: "column_stats",
            what: "each column's mean and variance, written as sums of rows from `map (t. 0) X[0]`",
            p: 2,
            family: Family::Plain,
            source: "def f(X: [n][m]real): real =\n  \
                     let mean = map (t. t / real(len(X))) (reduce (a, b. map2 + a b) (map (t. 0) X[0]) X) in\n  \
                     let var = map (t. t / real(len(X))) (reduce (a, b. map2 + a b) (map (t. 0) X[0])\n    \
                     (map (row. map2 (x, mu. (x - mu) * (x - mu)) row mean) X)) in\n  \
                     sum(map (v. log(v + 1)) var)",
            sizes: MATRIX,
            inputs: |s| vec![matrix(81, s.n, s.m, |r| 2.0 * r)],
            primal: |d| {
                let x = arr(d, 0);
                let m = cols(&d[0]);
                let n = x.len() / m.max(1);
                let mut mean = vec![0.0; m];
                for row in x.chunks_exact(m) {
                    for (s, v) in mean.iter_mut().zip(row) {
                        *s += v;
                    }
                }
                for s in &mut mean {
                    *s /= n as f64;
                }
                let mut var = vec![0.0; m];
                for row in x.chunks_exact(m) {
                    for ((s, v), mu) in var.iter_mut().zip(row).zip(&mean) {
                        *s += (v - mu) * (v - mu);
                    }
                }
                var.iter().map(|v| (v / n as f64 + 1.0).ln()).sum()
            },
            gradient: |d, g, scratch| {
                let x = arr(d, 0);
                let m = cols(&d[0]);
                let n = x.len() / m.max(1);
                let h = n as f64;
                scratch.clear();
                scratch.resize(3 * m, 0.0);
                let (mean, rest) = scratch.split_at_mut(m);
                let (var, dev) = rest.split_at_mut(m);
                for row in x.chunks_exact(m) {
                    for (s, v) in mean.iter_mut().zip(row) {
                        *s += v;
                    }
                }
                for s in mean.iter_mut() {
                    *s /= h;
                }
                for row in x.chunks_exact(m) {
                    for (((s, t), v), mu) in var.iter_mut().zip(dev.iter_mut()).zip(row).zip(&*mean) {
                        *s += (v - mu) * (v - mu);
                        *t += v - mu;
                    }
                }
                let mut value = 0.0;
                // Per column: c = d f / d var_sum, and the (tiny) adjoint of the mean
                // through the deviations, spread over the rows.
                for j in 0..m {
                    let v = var[j] / h + 1.0;
                    value += v.ln();
                    let c = 1.0 / v / h;
                    var[j] = c;
                    dev[j] = -2.0 * c * dev[j] / h;
                }
                for (row, grow) in x.chunks_exact(m).zip(g[0].chunks_exact_mut(m)) {
                    for j in 0..m {
                        grow[j] = 2.0 * var[j] * (row[j] - mean[j]) + dev[j];
                    }
                }
                value
            },
            note: "",
            versus_hand: "The gradient reads `X` three times, as the hand-written one does: the mean's sum, then the variance's sum beside the sum of the deviations that the mean's adjoint needs (its scale `c = 1 / (v + 1) / n` per column taken out of the sum by `sum_of_scaled_rows`, and the two sums joined into one pass by `unfad_opt::row_sums`), then the gradient's map. Each pass over `X` is a sum of rows added in place into one buffer, two reals per instruction: one iteration adds two elements where the hand-written loops, vectorised and unrolled by rustc, add several, so the rows of 100 reals cost more per element. Before the zero scatters of `X[0]`'s adjoint went and the in-place sums paired, the gradient was 2.5x the hand-written one and its workspace the size of `X`, twice; before the sums joined, it read `X` four times (1.5x).",
        },
        Program {
            name: "total_variation",
            what: "denoising with a smoothed total-variation penalty: sqrt of each squared difference, through shifts",
            p: 1,
            family: Family::Plain,
            source: "def tv(x: [n]real, y: [n]real, lam: real): real =\n  \
                     sum(map2 (a, b. (a - b) * (a - b)) x y) +\n  \
                     lam * sum(map2 (u, v. sqrt((u - v) * (u - v) + 1e-6)) (shift1L x) (shift1R x))",
            sizes: VECTOR,
            inputs: |s| {
                vec![
                    vector(71, s.n, |r| r),
                    vector(72, s.n, |r| r),
                    Data::Real(0.5),
                ]
            },
            primal: |d| {
                let (x, y, lam) = (arr(d, 0), arr(d, 1), real(d, 2));
                let fit = squared_distance(x, y);
                let mut tv = 0.0;
                for i in 1..x.len() {
                    let t = x[i] - x[i - 1];
                    tv += (t * t + 1e-6).sqrt();
                }
                fit + lam * tv
            },
            gradient: |d, g, _| {
                let (x, y, lam) = (arr(d, 0), arr(d, 1), real(d, 2));
                let [gx, gy, glam] = g else {
                    return f64::NAN;
                };
                let fit = squared_distance_gradient(x, y, gx, gy);
                let mut tv = 0.0;
                for i in 1..x.len() {
                    let t = x[i] - x[i - 1];
                    let s = (t * t + 1e-6).sqrt();
                    tv += s;
                    let c = lam * t / s;
                    gx[i] += c;
                    gx[i - 1] -= c;
                }
                glam[0] = tv;
                fit + lam * tv
            },
            note: "",
            versus_hand: "",
        },
        Program {
            name: "second_difference",
            what: "sum of the squared 3-point stencil x[i-1] - 2 x[i] + x[i+1], through shifts",
            p: 1,
            family: Family::Plain,
            source: "def f(x: [n]real): real =\n  \
                     let left = shift1R (shift1R x) in\n  \
                     let middle = shift1L (shift1R x) in\n  \
                     let right = shift1L (shift1L x) in\n  \
                     let outer = map2 (l, r. l + r) left right in\n  \
                     sum(map2 (o, c. (o - 2 * c) * (o - 2 * c)) outer middle)",
            sizes: VECTOR,
            inputs: |s| vec![vector(44, s.n, |r| r)],
            primal: |d| {
                let x = arr(d, 0);
                let mut s = 0.0;
                for i in 1..x.len().saturating_sub(1) {
                    let t = x[i - 1] - 2.0 * x[i] + x[i + 1];
                    s += t * t;
                }
                s
            },
            gradient: |d, g, _| {
                let x = arr(d, 0);
                let gx = &mut g[0];
                gx.fill(0.0);
                let mut s = 0.0;
                for i in 1..x.len().saturating_sub(1) {
                    let t = x[i - 1] - 2.0 * x[i] + x[i + 1];
                    s += t * t;
                    gx[i - 1] += 2.0 * t;
                    gx[i] -= 4.0 * t;
                    gx[i + 1] += 2.0 * t;
                }
                s
            },
            note: "Six scans that only move elements, the adjoints of the four shifts (`scanl (acc, z. z) 0 A` is a 0 then `A`), are views that the loop writing the gradient reads in place; the residuals' three adjoints are stored (3n reals) by the loop that computes them. The model counts the scans' moves like any other operation, so it predicts more than is measured.",
            versus_hand: "The residuals' adjoints are stored (three arrays) and a second loop adds them into the gradient, reading them at three offsets; the hand-written gradient adds each residual into its three neighbours in place.",
        },
        Program {
            name: "huber",
            what: "Huber loss of residuals, a branch per element",
            p: 1,
            family: Family::Plain,
            source: "def huber(pred: [n]real, y: [n]real, delta: real): real =\n  \
                     sum(map2 (p, t.\n    \
                     let r = p - t in\n    \
                     if abs(r) <= delta then 0.5 * r * r else delta * (abs(r) - 0.5 * delta)) pred y)",
            sizes: VECTOR,
            inputs: |s| {
                vec![
                    vector(45, s.n, |r| 2.0 * r),
                    vector(46, s.n, |r| r),
                    Data::Real(1.0),
                ]
            },
            primal: |d| {
                let (pred, y, delta) = (arr(d, 0), arr(d, 1), real(d, 2));
                let mut s = 0.0;
                for (p, t) in pred.iter().zip(y) {
                    let r = p - t;
                    s += if r.abs() <= delta {
                        0.5 * r * r
                    } else {
                        delta * (r.abs() - 0.5 * delta)
                    };
                }
                s
            },
            gradient: |d, g, _| {
                let (pred, y, delta) = (arr(d, 0), arr(d, 1), real(d, 2));
                let [gp, gy, gdelta] = g else {
                    return f64::NAN;
                };
                let (mut s, mut dd) = (0.0, 0.0);
                // Without branches (the residuals fall on either side at random): the
                // derivative is the residual clamped to [-delta, delta].
                for i in 0..pred.len() {
                    let r = pred[i] - y[i];
                    let a = r.abs();
                    let dr = r.max(-delta).min(delta);
                    let c = dr.abs();
                    s += c * (a - 0.5 * c);
                    dd += (a - delta).max(0.0);
                    gp[i] = dr;
                    gy[i] = -dr;
                }
                gdelta[0] = dd;
                s
            },
            note: "The `if` is computed branch-free in the primal and the gradient (both branches, then a conditional move of the result's bits), so the measured ratio follows the model's counts of both branches.",
            versus_hand: "Both `if`s (the value's and the adjoints') are computed branch-free, each evaluating both of its branches and choosing by a conditional move, two elements at a time; they are not merged into one though their condition is the same. The hand-written gradient takes one branch per element (which the compiler also makes branch-free), one element at a time.",
        },
        Program {
            name: "logistic",
            what: "negative log-likelihood of logistic regression, log(p) and log(1 - p) of the sigmoid",
            p: 2,
            family: Family::Plain,
            source: "def logistic(X: [n][m]real, w: [m]real, b: real, y: [n]real): real =\n  \
                     sum(map2 (x, t.\n    \
                     let p = sigmoid(dot(w, x) + b) in\n    \
                     -(t * log(p) + (1 - t) * log(1 - p))) X y)",
            sizes: MATRIX,
            inputs: |s| {
                let sm = scale(s.m);
                vec![
                    matrix(47, s.n, s.m, |r| r),
                    vector(48, s.m, move |r| 2.0 * r * sm),
                    Data::Real(0.1),
                    vector(49, s.n, |r| if r < 0.0 { 0.0 } else { 1.0 }),
                ]
            },
            primal: |d| {
                let (x, w, b, y) = (arr(d, 0), arr(d, 1), real(d, 2), arr(d, 3));
                let mut s = 0.0;
                for (xi, t) in x.chunks_exact(cols(&d[0])).zip(y) {
                    let p = sigmoid(dot(w, xi) + b);
                    s -= t * p.ln() + (1.0 - t) * (1.0 - p).ln();
                }
                s
            },
            gradient: |d, g, _| {
                let (x, w, b, y) = (arr(d, 0), arr(d, 1), real(d, 2), arr(d, 3));
                let m = cols(&d[0]);
                let [gx, gw, gb, gy] = g else {
                    return f64::NAN;
                };
                gw.fill(0.0);
                let (mut s, mut db) = (0.0, 0.0);
                for (i, (xi, gxi)) in x.chunks_exact(m).zip(gx.chunks_exact_mut(m)).enumerate() {
                    let p = sigmoid(dot(w, xi) + b);
                    let (lp, lq) = (p.ln(), (1.0 - p).ln());
                    s -= y[i] * lp + (1.0 - y[i]) * lq;
                    gy[i] = lq - lp;
                    let dz = p - y[i];
                    db += dz;
                    for j in 0..m {
                        gw[j] += dz * xi[j];
                        gxi[j] = dz * w[j];
                    }
                }
                gb[0] = db;
                s
            },
            note: "",
            versus_hand: "Reverse mode differentiates `log(p)` and `log(1 - p)` of the sigmoid separately; the optimizer cancels the sigmoid's derivative against their quotients (`p (1 - t) - (1 - p) t`, no division), as the hand-written gradient has it. The two logarithms are read only by the value and by `y`'s gradient: the loop over rows writes each row's arrays, runs its folds, and only then stores the row's scalars (`write_some`), so that the logarithms are computed after the row's loops rather than holding them up (they cost 0.83 ms of the gradient's 1.97 ms when they came first, 10000x100). `w`'s gradient is added row by row through two alternating buffers, element by element.",
        },
        Program {
            name: "matmul_fit",
            what: "||A B - C||^2 with B read through `transpose`",
            p: 3,
            family: Family::Plain,
            source: "def f(A: [n][k]real, B: [k][m]real, C: [n][m]real): real =\n  \
                     let Bt = transpose B in\n  \
                     sum(map2 (arow, crow. sum(map2 (bcol, c. let d = dot(arow, bcol) - c in d * d) Bt crow)) A C)",
            sizes: PRODUCT,
            inputs: |s| {
                vec![
                    matrix(60, s.n, s.k, |r| r),
                    matrix(61, s.k, s.m, |r| r * scale(s.k)),
                    matrix(62, s.n, s.m, |r| r),
                ]
            },
            // Row by row of the product, B read by rows (the order that streams memory).
            primal: |d| {
                let (a, b, c) = (arr(d, 0), arr(d, 1), arr(d, 2));
                let (k, m) = (cols(&d[0]), cols(&d[1]));
                let mut row = vec![0.0; m];
                let mut s = 0.0;
                for (arow, crow) in a.chunks_exact(k).zip(c.chunks_exact(m)) {
                    row.copy_from_slice(crow);
                    row.iter_mut().for_each(|x| *x = -*x);
                    for (aik, brow) in arow.iter().zip(b.chunks_exact(m)) {
                        for (x, bkj) in row.iter_mut().zip(brow) {
                            *x += aik * bkj;
                        }
                    }
                    s += dot(&row, &row);
                }
                s
            },
            gradient: |d, g, scratch| {
                let (a, b, c) = (arr(d, 0), arr(d, 1), arr(d, 2));
                let (k, m) = (cols(&d[0]), cols(&d[1]));
                let [ga, gb, gc] = g else {
                    return f64::NAN;
                };
                gb.fill(0.0);
                scratch.resize(m, 0.0);
                let row = &mut scratch[..m];
                let mut s = 0.0;
                for (i, (arow, crow)) in a.chunks_exact(k).zip(c.chunks_exact(m)).enumerate() {
                    row.copy_from_slice(crow);
                    row.iter_mut().for_each(|x| *x = -*x);
                    for (aik, brow) in arow.iter().zip(b.chunks_exact(m)) {
                        for (x, bkj) in row.iter_mut().zip(brow) {
                            *x += aik * bkj;
                        }
                    }
                    s += dot(row, row);
                    row.iter_mut().for_each(|x| *x *= 2.0);
                    for (gcij, x) in gc[i * m..(i + 1) * m].iter_mut().zip(row.iter()) {
                        *gcij = -x;
                    }
                    let garow = &mut ga[i * k..(i + 1) * k];
                    for ((gaik, aik), (brow, gbrow)) in garow
                        .iter_mut()
                        .zip(arow)
                        .zip(b.chunks_exact(m).zip(gb.chunks_exact_mut(m)))
                    {
                        *gaik = dot(row, brow);
                        for (gbkj, x) in gbrow.iter_mut().zip(row.iter()) {
                            *gbkj += aik * x;
                        }
                    }
                }
                s
            },
            note: "Per entry of the product, the gradient makes the dot product and two updates of k reals (the row of `A`'s gradient, the column of `B`'s), which the hand-written gradient makes too (6.5x its primal): the measured ratio follows the hand-written one, above the model, which counts the updates' loads and stores as moves.",
            versus_hand: "The program takes each entry of the product as a dot product of a row of `A` with a column of `B` (a row of `transpose B`, made once and stored), each a blocked reduction of k terms with its own setup and final sum, eight elements per iteration on four vectors of partial sums (with four partial sums, two vectors, the loop waited on its additions and the primal was 1.29x the hand-written one): the hand-written primal runs the product row by row instead, streaming `B` by rows into one row of sums (no reduction per entry). The gradient adds each row's contributions to the adjoint of `transpose B` where they are made (`Place::AddTo`; they used to be stored, k x m reals per row, and added after), and is faster than the hand-written one, which is bound by its sequential dot products; JAX calls a matrix-product library on both cores.",
        },
        Program {
            name: "conv1d",
            what: "sum of squares of a valid convolution of a signal by a 16-tap filter",
            p: 2,
            family: Family::Plain,
            source: "def f(x: [n]real, w: [k]real): real =\n  \
                     let y = map (i. sum(map2 (a, b. a * b) (x[i : i + len(w)]) w)) (iota (len(x) - len(w) + 1)) in\n  \
                     sum(map (v. v * v) y)",
            sizes: SIGNAL,
            inputs: |s| vec![vector(63, s.n, |r| r), vector(64, s.k, |r| r * 0.25)],
            primal: |d| {
                let (x, w) = (arr(d, 0), arr(d, 1));
                let k = w.len();
                let mut s = 0.0;
                for i in 0..(x.len() + 1).saturating_sub(k) {
                    let y = dot(&x[i..i + k], w);
                    s += y * y;
                }
                s
            },
            gradient: |d, g, _| {
                let (x, w) = (arr(d, 0), arr(d, 1));
                let [gx, gw] = g else {
                    return f64::NAN;
                };
                gx.fill(0.0);
                gw.fill(0.0);
                let k = w.len();
                let mut s = 0.0;
                for i in 0..(x.len() + 1).saturating_sub(k) {
                    let window = &x[i..i + k];
                    let y = dot(window, w);
                    s += y * y;
                    let dy = 2.0 * y;
                    for j in 0..k {
                        gw[j] += dy * window[j];
                        gx[i + j] += dy * w[j];
                    }
                }
                s
            },
            note: "",
            versus_hand: "Each output's inner product of 16 taps runs as a short blocked reduction on two lanes, with no bounds test: the sizes show `i + j <= len(x) - 1` for `i` below `len(x) - len(w) + 1` and `j` below `len(w)`. The gradient adds each window's adjoint into `x`'s in place (a fold of scatters, whose positions the sizes also show in bounds), but stores the outputs and their adjoints (2n reals), which the hand-written gradient keeps in registers.",
        },
        Program {
            name: "rosenbrock",
            what: "the Rosenbrock function written by position, x[i] and x[i + 1]",
            p: 1,
            family: Family::Plain,
            source: "def rosenbrock(x: [n]real): real =\n  \
                     sum(map (i. 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i]))\n    \
                     (iota (len(x) - 1)))",
            sizes: VECTOR,
            inputs: |s| vec![vector(91, s.n, |r| r)],
            primal: |d| {
                let x = arr(d, 0);
                let mut s = 0.0;
                for i in 0..x.len().saturating_sub(1) {
                    let a = x[i + 1] - x[i] * x[i];
                    let b = 1.0 - x[i];
                    s += 100.0 * a * a + b * b;
                }
                s
            },
            gradient: |d, g, _| {
                let x = arr(d, 0);
                let gx = &mut g[0];
                let mut s = 0.0;
                if let Some(first) = gx.first_mut() {
                    *first = 0.0;
                }
                for i in 0..x.len().saturating_sub(1) {
                    let a = x[i + 1] - x[i] * x[i];
                    let b = 1.0 - x[i];
                    s += 100.0 * a * a + b * b;
                    gx[i] += -400.0 * a * x[i] - 2.0 * b;
                    gx[i + 1] = 200.0 * a;
                }
                s
            },
            note: "",
            versus_hand: "The adjoints of the reads `x[i]` and `x[i + 1]` are two arrays of contiguous positions (one scatter per position read, `unfad_ad::reads`), each moved into place (a zero before the second) and added elementwise (`contiguous_scatter`), in one loop computing two elements at a time; the value's sum runs in a loop of its own, and each of the three loops computes `x[i + 1] - x[i]^2` again, where the hand-written gradient makes one pass.",
        },
        Program {
            name: "gauss_nll",
            what: "a diagonal Gaussian's negative log-likelihood of the rows, by position: log(sig[j]) + (x[j] - mu[j])^2 / (2 sig[j]^2)",
            p: 2,
            family: Family::Plain,
            source: "def gauss_nll(X: [n][m]real, mu: [m]real, sig: [m]real): real =\n  \
                     sum(map (x. sum(map (j. log(sig[j]) + (x[j] - mu[j]) * (x[j] - mu[j]) / (2 * sig[j] * sig[j]))\n    \
                     (iota len(x)))) X)",
            sizes: MATRIX,
            inputs: |s| {
                vec![
                    matrix(92, s.n, s.m, |r| r),
                    vector(93, s.m, |r| 0.5 * r),
                    vector(94, s.m, |r| 1.5 + 0.5 * r),
                ]
            },
            primal: |d| {
                let (x, mu, sig) = (arr(d, 0), arr(d, 1), arr(d, 2));
                let m = mu.len().max(1);
                let n = x.len() / m;
                let inv: Vec<f64> = sig.iter().map(|s| 1.0 / (2.0 * s * s)).collect();
                let mut s = n as f64 * sig.iter().map(|v| v.ln()).sum::<f64>();
                for row in x.chunks_exact(m) {
                    for j in 0..m {
                        let r = row[j] - mu[j];
                        s += r * r * inv[j];
                    }
                }
                s
            },
            gradient: |d, g, scratch| {
                let (x, mu, sig) = (arr(d, 0), arr(d, 1), arr(d, 2));
                let m = mu.len().max(1);
                let n = x.len() / m;
                scratch.clear();
                scratch.resize(3 * m, 0.0);
                let (inv, sums) = scratch.split_at_mut(m);
                let (sum_r, sum_rr) = sums.split_at_mut(m);
                for j in 0..mu.len() {
                    inv[j] = 1.0 / (2.0 * sig[j] * sig[j]);
                }
                let [gx, gmu, gsig] = g else {
                    return f64::NAN;
                };
                for (row, grow) in x.chunks_exact(m).zip(gx.chunks_exact_mut(m)) {
                    for j in 0..m {
                        let r = row[j] - mu[j];
                        sum_r[j] += r;
                        sum_rr[j] += r * r;
                        grow[j] = 2.0 * r * inv[j];
                    }
                }
                let mut s = 0.0;
                for j in 0..mu.len() {
                    s += n as f64 * sig[j].ln() + sum_rr[j] * inv[j];
                    gmu[j] = -2.0 * inv[j] * sum_r[j];
                    gsig[j] = n as f64 / sig[j] - sum_rr[j] / (sig[j] * sig[j] * sig[j]);
                }
                s
            },
            note: "",
            versus_hand: "The loop over a row's positions is invariant in the loop over rows (`len(x)` of a row is `len(mu)`), so the value's `log(sig[j])` and `2 sig[j]^2` are computed once per position, in the primal and the gradient alike, and no division is left in a loop over the elements (a division by an invariant is a product by its reciprocal). Reverse mode gives `mu` and `sig` a fold over the rows that adds a whole row into each adjoint; `unfad_opt::one_pass` joins it with the value's sum and `X`'s gradient into one map over `X` whose columns are written and summed in the loop that makes them, never stored, so the gradient reads `X` once, as the hand-written one does (it read it three times: 2.5x). That pass is one loop per row: the value's blocked sum and the additions into both adjoints run together (additions by position may join a blocked loop), so `x[j] - mu[j]` is computed once per element, and the reciprocal `1 / (2 sig[j]^2)` that each joined loop had hoisted for itself is made once and read in place (`reuse` after `one_pass`). What is left: the per-element work of the two adjoints' rows, with the invariant factors inside (about ten loads and sixteen operations per pair of elements), where the hand-written loop sums `r` and `r^2` per column and scales the sums once, outside the loop over rows (a distributivity the optimizer does not apply to column sums).",
        },
    ]
}

/// `1/sqrt(m)`: weights of this scale keep the sums of `m` products of order 1.
fn scale(m: usize) -> f64 {
    1.0 / (m.max(1) as f64).sqrt()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for (x, y) in a.iter().zip(b) {
        s += x * y;
    }
    s
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}
