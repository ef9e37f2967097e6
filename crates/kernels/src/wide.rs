//! The kernels on `L` reals at once, for code that applies one kernel to a whole array:
//! [`Lanes`], the arithmetic on `[f64; L]` lane by lane, and [`apply_lanes`], a kernel
//! over a slice in place.
//!
//! This is a third instance of [`Arith`], beside the scalar twin and the JIT's: every
//! operation is the scalar twin's operation on each lane, in the same order, so each lane
//! computes what [`Kernel::eval_with`] computes, bit for bit (the same IEEE operations,
//! rounded once each; `mul_add` fused exactly when `FUSED`). Rust never reassociates or
//! contracts floating-point operations, so the compiler may only choose how to lay the
//! lanes out in registers. It runs where no x86-64 vector instance does (the JIT's
//! portable batches, and the tests on any host); on AVX2 and AVX-512, native code's batches
//! run the instances on the vector registers themselves (`x86.rs`, [`crate::apply_avx2`],
//! [`crate::apply_avx512`]): compiled for 8 and 16 lanes, rustc kept these arrays in
//! memory and ran the kernels at a third to half their speed.

use crate::arith::{Arith, Cmp};
use crate::table::Table;
use crate::Kernel;

/// [`Arith`] on `L` lanes of `f64`, each computed as the scalar twin computes it;
/// `mul_add` is fused when `FUSED`.
#[derive(Copy, Clone, Debug, Default)]
pub struct Lanes<const L: usize, const FUSED: bool>;

/// `f` on each lane of `a` (a loop rustc inlines: `[T; L]::map` it left out of line, a
/// call per operation whose lanes went through the stack).
#[inline(always)]
fn each<T: Copy, U: Copy + Default, const L: usize>(a: [T; L], f: impl Fn(T) -> U) -> [U; L] {
    let mut r = [U::default(); L];
    for k in 0..L {
        r[k] = f(a[k]);
    }
    r
}

/// `f` on each lane of `a` and `b`.
#[inline(always)]
fn zip<T: Copy, U: Copy + Default, const L: usize>(
    a: [T; L],
    b: [T; L],
    f: impl Fn(T, T) -> U,
) -> [U; L] {
    let mut r = [U::default(); L];
    for k in 0..L {
        r[k] = f(a[k], b[k]);
    }
    r
}

impl<const L: usize, const FUSED: bool> Arith for Lanes<L, FUSED> {
    type Real = [f64; L];
    type Int = [i64; L];
    type Mask = [bool; L];

    #[inline(always)]
    fn fused(&self) -> bool {
        FUSED
    }
    #[inline(always)]
    fn real(&mut self, c: f64) -> [f64; L] {
        [c; L]
    }
    #[inline(always)]
    fn int(&mut self, c: i64) -> [i64; L] {
        [c; L]
    }
    #[inline(always)]
    fn add(&mut self, a: [f64; L], b: [f64; L]) -> [f64; L] {
        zip(a, b, |x, y| x + y)
    }
    #[inline(always)]
    fn sub(&mut self, a: [f64; L], b: [f64; L]) -> [f64; L] {
        zip(a, b, |x, y| x - y)
    }
    #[inline(always)]
    fn mul(&mut self, a: [f64; L], b: [f64; L]) -> [f64; L] {
        zip(a, b, |x, y| x * y)
    }
    #[inline(always)]
    fn div(&mut self, a: [f64; L], b: [f64; L]) -> [f64; L] {
        zip(a, b, |x, y| x / y)
    }
    #[inline(always)]
    fn mul_add(&mut self, a: [f64; L], b: [f64; L], c: [f64; L]) -> [f64; L] {
        let mut r = [0.0; L];
        for k in 0..L {
            r[k] = if FUSED {
                a[k].mul_add(b[k], c[k])
            } else {
                a[k] * b[k] + c[k]
            };
        }
        r
    }
    #[inline(always)]
    fn neg(&mut self, a: [f64; L]) -> [f64; L] {
        each(a, |x| -x)
    }
    #[inline(always)]
    fn abs(&mut self, a: [f64; L]) -> [f64; L] {
        each(a, f64::abs)
    }
    #[inline(always)]
    fn cmp(&mut self, op: Cmp, a: [f64; L], b: [f64; L]) -> [bool; L] {
        match op {
            Cmp::Lt => zip(a, b, |x, y| x < y),
            Cmp::Le => zip(a, b, |x, y| x <= y),
            Cmp::Gt => zip(a, b, |x, y| x > y),
            Cmp::Ge => zip(a, b, |x, y| x >= y),
            Cmp::Eq => zip(a, b, |x, y| x == y),
            Cmp::Ne => zip(a, b, |x, y| x != y),
        }
    }
    #[inline(always)]
    fn select(&mut self, m: [bool; L], a: [f64; L], b: [f64; L]) -> [f64; L] {
        let mut r = [0.0; L];
        for k in 0..L {
            r[k] = if m[k] { a[k] } else { b[k] };
        }
        r
    }
    #[inline(always)]
    fn to_bits(&mut self, a: [f64; L]) -> [i64; L] {
        each(a, |x| x.to_bits() as i64)
    }
    #[inline(always)]
    fn bits_to_real(&mut self, i: [i64; L]) -> [f64; L] {
        each(i, |x| f64::from_bits(x as u64))
    }
    #[inline(always)]
    fn iadd(&mut self, a: [i64; L], b: [i64; L]) -> [i64; L] {
        zip(a, b, i64::wrapping_add)
    }
    #[inline(always)]
    fn isub(&mut self, a: [i64; L], b: [i64; L]) -> [i64; L] {
        zip(a, b, i64::wrapping_sub)
    }
    #[inline(always)]
    fn iand(&mut self, a: [i64; L], b: [i64; L]) -> [i64; L] {
        zip(a, b, |x, y| x & y)
    }
    #[inline(always)]
    fn ixor(&mut self, a: [i64; L], b: [i64; L]) -> [i64; L] {
        zip(a, b, |x, y| x ^ y)
    }
    #[inline(always)]
    fn shl(&mut self, a: [i64; L], n: u32) -> [i64; L] {
        each(a, |x| x.wrapping_shl(n))
    }
    #[inline(always)]
    fn sshr(&mut self, a: [i64; L], n: u32) -> [i64; L] {
        each(a, |x| x.wrapping_shr(n))
    }
    #[inline(always)]
    fn ushr(&mut self, a: [i64; L], n: u32) -> [i64; L] {
        each(a, |x| ((x as u64) >> n) as i64)
    }
    #[inline(always)]
    fn ieq(&mut self, a: [i64; L], b: [i64; L]) -> [bool; L] {
        zip(a, b, |x, y| x == y)
    }
    #[inline(always)]
    fn lookup(&mut self, t: Table, i: [i64; L], column: usize) -> [f64; L] {
        each(i, |x| t.get(x, column))
    }
}

/// Kernel `k` on `xs` in place, `L` reals at a time; the last `len mod L` are padded with
/// zeros to a whole group (a lane computes alone: the padding changes no other lane).
/// Inlined with `k` a constant (see [`apply_lanes`]), so that each kernel has a loop of
/// its own, compiled with the caller's target features (a closure or a call would be
/// compiled without them).
#[inline(always)]
fn groups<const L: usize, const FUSED: bool>(k: Kernel, xs: &mut [f64]) {
    let mut a = Lanes::<L, FUSED>;
    let mut chunks = xs.chunks_exact_mut(L);
    for c in &mut chunks {
        let mut v = [0.0; L];
        v.copy_from_slice(c);
        c.copy_from_slice(&with_fallback(k, &mut a, v));
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let mut v = [0.0; L];
        v[..rest.len()].copy_from_slice(rest);
        let r = with_fallback(k, &mut a, v);
        rest.copy_from_slice(&r[..rest.len()]);
    }
}

/// Kernel `k` on `v`, with the standard library's value in the lanes whose argument the
/// kernel does not reduce ([`Kernel::needs_fallback`]: `sin` and `cos` only), as
/// [`Kernel::eval_with`] has it.
#[inline(always)]
fn with_fallback<const L: usize, const FUSED: bool>(
    k: Kernel,
    a: &mut Lanes<L, FUSED>,
    v: [f64; L],
) -> [f64; L] {
    let mut r = k.emit(a, v);
    if !matches!(k, Kernel::Sin | Kernel::Cos) {
        return r;
    }
    // `needs_fallback` on every lane at once: `!(|x| <= TRIG_BOUND)` is it (NaN included).
    let ax = a.abs(v);
    let bound = a.real(crate::TRIG_BOUND);
    let inside = a.cmp(Cmp::Le, ax, bound);
    if !inside.iter().all(|&b| b) {
        fallback(k, &v, &mut r);
    }
    r
}

/// The standard library's value in the lanes of `r` whose argument in `v` needs it. Out of
/// line and cold: inlined, the compiler computed the standard library's `sin` on every
/// lane of every group (it may, the function being pure), three times the kernel's time.
#[cold]
#[inline(never)]
pub(crate) fn fallback(k: Kernel, v: &[f64], r: &mut [f64]) {
    for (r, &x) in r.iter_mut().zip(v) {
        if k.needs_fallback(x) {
            *r = k.std(x);
        }
    }
}

/// Kernel `k` applied in place to every real of `xs`, `L` at a time: each result is
/// [`Kernel::eval_with`]`(FUSED, x)`, bit for bit.
#[inline(always)]
pub fn apply_lanes<const L: usize, const FUSED: bool>(k: Kernel, xs: &mut [f64]) {
    // The kernel a constant in each arm: one loop per kernel, the choice made once.
    match k {
        Kernel::Exp => groups::<L, FUSED>(Kernel::Exp, xs),
        Kernel::Log => groups::<L, FUSED>(Kernel::Log, xs),
        Kernel::Tanh => groups::<L, FUSED>(Kernel::Tanh, xs),
        Kernel::Sigmoid => groups::<L, FUSED>(Kernel::Sigmoid, xs),
        Kernel::Log1p => groups::<L, FUSED>(Kernel::Log1p, xs),
        Kernel::Expm1 => groups::<L, FUSED>(Kernel::Expm1, xs),
        Kernel::Sin => groups::<L, FUSED>(Kernel::Sin, xs),
        Kernel::Cos => groups::<L, FUSED>(Kernel::Cos, xs),
    }
}

/// How many lanes the host's widest instance computes on: 8 with AVX-512 (F and DQ) and
/// FMA, 4 with AVX2 and FMA, `None` otherwise (then the JIT's own two-lane code is as
/// wide as it gets). Both instances fuse `mul_add`, as the scalar twin does on such a
/// host ([`crate::host_has_fma`]).
pub fn host_lanes() -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        let fma = std::is_x86_feature_detected!("fma");
        if fma
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512dq")
        {
            return Some(8);
        }
        if fma && std::is_x86_feature_detected!("avx2") {
            return Some(4);
        }
        None
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random reals over many binades, both signs, and the special values.
    fn points() -> Vec<f64> {
        let mut v = crate::testing::random_reals(0x9e3779b97f4a7c15, 3000, 40);
        v.extend([
            0.0,
            -0.0,
            1.0,
            -1.0,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            709.9,
            710.0,
            -745.2,
            -746.0,
            1e7,
            -3e9,
        ]);
        v
    }

    fn check<const L: usize, const FUSED: bool>() {
        let xs = points();
        for k in Kernel::ALL {
            // Every length up to a few groups, so that the padded tail is exercised too.
            for len in [0, 1, L - 1, L, L + 1, 3 * L + 2, xs.len()] {
                let len = len.min(xs.len());
                let mut ys = xs[..len].to_vec();
                apply_lanes::<L, FUSED>(k, &mut ys);
                for (&x, &y) in xs.iter().zip(&ys) {
                    let want = k.eval_with(FUSED, x);
                    assert_eq!(
                        y.to_bits(),
                        want.to_bits(),
                        "{}({x:e}) on {L} lanes (fused: {FUSED}): {y:e}, the twin {want:e}",
                        k.name()
                    );
                }
            }
        }
    }

    #[test]
    fn lanes_compute_what_the_scalar_twin_computes() {
        check::<2, false>();
        check::<4, true>();
        check::<4, false>();
        check::<8, true>();
    }
}
