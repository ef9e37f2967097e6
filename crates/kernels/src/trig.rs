//! `sin` and `cos`: `x = j π/2 + r` with `|r| <= π/4` (Cody–Waite, π/2 in three 30-bit
//! parts and a rounded fourth, carried as `r = r_hi + r_lo`), polynomials for `sin(r)` and
//! `cos(r)`, and the quadrant `j mod 4` choosing and negating them.
//!
//! The reduction is exact up to `|j| < 2^22`, hence [`TRIG_BOUND`]; beyond it (and for NaN
//! and infinities) the kernels return NaN and [`crate::Kernel::eval`] and the JIT call the
//! standard library instead.

use crate::arith::{horner, round_to_int, two_sum, Arith, Cmp};

/// The largest `|x|` the kernels reduce: `|x| 2/π < 2^22`, so `j` times each 30-bit part of
/// π/2 is exact.
pub const TRIG_BOUND: f64 = 4194304.0; // 2^22

/// `2/π`.
const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;
/// π/2 = `PIO2_1 + PIO2_2 + PIO2_3 + PIO2_4`, the first three of 30 significant bits.
const PIO2_1: f64 = 1.5707963276654482;
const PIO2_2: f64 = -8.705515692000731e-10;
const PIO2_3: f64 = -3.503434396954818e-19;
const PIO2_4: f64 = -1.1351118607522202e-28;

/// `S(z) = (sin(r) - r) / r^3`, `z = r^2 <= (π/4)^2` (coefficients of `z^0, z^1, ...`).
const SIN_S: [f64; 7] = [
    -0.16666666666666666,
    0.008333333333333331,
    -0.0001984126984126506,
    2.7557319219335453e-06,
    -2.5052106231157904e-08,
    1.605853141458901e-10,
    -7.586685070091267e-13,
];

/// `C(z) = (cos(r) - 1 + z/2) / z^2`, `z = r^2 <= (π/4)^2`.
const COS_C: [f64; 6] = [
    0.041666666666666664,
    -0.0013888888888887395,
    2.4801587298763433e-05,
    -2.7557317270560326e-07,
    2.0876146024689747e-09,
    -1.1382614868556325e-11,
];

/// `(j, r_hi, r_lo)` with `x = j π/2 + r_hi + r_lo`.
#[inline(always)]
fn reduce<A: Arith>(a: &mut A, x: A::Real) -> (A::Int, A::Real, A::Real) {
    let two_over_pi = a.real(TWO_OVER_PI);
    let scaled = a.mul(x, two_over_pi);
    let (jf, j) = round_to_int(a, scaled);
    let p1 = a.real(PIO2_1);
    let w1 = a.mul(jf, p1);
    let y1 = a.sub(x, w1); // exact (Sterbenz)
    let p2 = a.real(PIO2_2);
    let w2 = a.mul(jf, p2);
    let w2 = a.neg(w2);
    let (y2, e2) = two_sum(a, y1, w2);
    let p3 = a.real(PIO2_3);
    let w3 = a.mul(jf, p3);
    let w3 = a.neg(w3);
    let (y3, e3) = two_sum(a, y2, w3);
    let p4 = a.real(PIO2_4);
    let w4 = a.mul(jf, p4);
    let e = a.add(e2, e3);
    let tail = a.sub(e, w4);
    let hi = a.add(y3, tail);
    let back = a.sub(hi, y3);
    let lo = a.sub(tail, back);
    (j, hi, lo)
}

/// `(sin r, cos r)` for `r = hi + lo`, `|r| <= π/4`.
#[inline(always)]
fn sin_cos<A: Arith>(a: &mut A, hi: A::Real, lo: A::Real) -> (A::Real, A::Real) {
    let z = a.mul(hi, hi);
    let half = a.real(0.5);
    let hz = a.mul(half, z);
    // sin(hi + lo) = hi + hi z S(z) + lo (1 - z/2).
    let s = horner(a, z, &SIN_S);
    let hiz = a.mul(hi, z);
    let poly = a.mul(hiz, s);
    let hzlo = a.mul(hz, lo);
    let lo_term = a.sub(lo, hzlo);
    let small = a.add(poly, lo_term);
    let sin = a.add(hi, small);
    // cos(hi + lo) = w + (((1 - w) - z/2) + (z^2 C(z) - hi lo)), w = 1 - z/2.
    let one = a.real(1.0);
    let w = a.sub(one, hz);
    let c = horner(a, z, &COS_C);
    let zz = a.mul(z, z);
    let zzc = a.mul(zz, c);
    let hilo = a.mul(hi, lo);
    let tail = a.sub(zzc, hilo);
    let back = a.sub(one, w);
    let back = a.sub(back, hz);
    let tail = a.add(back, tail);
    let cos = a.add(w, tail);
    (sin, cos)
}

/// The value in quadrant `q` (of `j + shift`): `f0` or `f1` as `q` is even or odd, negated
/// for quadrants 2 and 3; NaN unless `|x| <= TRIG_BOUND`.
#[inline(always)]
fn quadrant<A: Arith>(
    a: &mut A,
    x: A::Real,
    j: A::Int,
    shift: i64,
    f0: A::Real,
    f1: A::Real,
) -> A::Real {
    let shift = a.int(shift);
    let q = a.iadd(j, shift);
    let one = a.int(1);
    let odd = a.iand(q, one);
    let odd = a.ieq(odd, one);
    let v = a.select(odd, f1, f0);
    let two = a.int(2);
    let sign = a.iand(q, two);
    let sign = a.shl(sign, 62);
    let bits = a.to_bits(v);
    let bits = a.ixor(bits, sign);
    let v = a.bits_to_real(bits);
    let ax = a.abs(x);
    let bound = a.real(TRIG_BOUND);
    let inside = a.cmp(Cmp::Le, ax, bound);
    let nan = a.real(f64::NAN);
    a.select(inside, v, nan)
}

/// `sin(x)` for `|x| <= TRIG_BOUND` (NaN elsewhere); `sin(±0) = ±0`.
#[inline(always)]
pub(crate) fn sin<A: Arith>(a: &mut A, x: A::Real) -> A::Real {
    let (j, hi, lo) = reduce(a, x);
    let (s, c) = sin_cos(a, hi, lo);
    let y = quadrant(a, x, j, 0, s, c);
    let zero = a.real(0.0);
    let is_zero = a.cmp(Cmp::Eq, x, zero);
    a.select(is_zero, x, y)
}

/// `cos(x)` for `|x| <= TRIG_BOUND` (NaN elsewhere).
#[inline(always)]
pub(crate) fn cos<A: Arith>(a: &mut A, x: A::Real) -> A::Real {
    let (j, hi, lo) = reduce(a, x);
    let (s, c) = sin_cos(a, hi, lo);
    // cos(x) = sin(x + π/2): quadrant j + 1 of sin.
    quadrant(a, x, j, 1, s, c)
}
