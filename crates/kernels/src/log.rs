//! The logarithms `log` and `log1p`.
//!
//! `x = 2^k m` with `m` in `[sqrt(2)/2, sqrt(2))` (from the bits of `x`), `f = m - 1`
//! (exact), and `log(1 + f) = 2 atanh(s)` with `s = f / (2 + f)`, written as
//! `f - f^2/2 + s (f^2/2 + R(s^2))` with `R` a degree-7 polynomial, then
//! `log(x) = k ln2 + log(1 + f)` with `ln2` in two parts.

use crate::arith::{estrin, int_to_real, Arith, Cmp};

/// `ln 2` to 32 significant bits, so that `k * LN2_HI` is exact.
const LN2_HI: f64 = 0.6931471806019545;
/// `ln 2 - LN2_HI`, rounded.
const LN2_LO: f64 = -4.2009150726810846e-11;

/// `R(z) / z` with `R(z) = 2 atanh(s)/s - 2`, `z = s^2 <= 0.0295` (a Chebyshev fit,
/// coefficients of `z^0, z^1, ...`).
const LOG_R: [f64; 8] = [
    0.6666666666666666,
    0.4000000000000088,
    0.2857142857080323,
    0.2222222239180047,
    0.18181795630884753,
    0.15386240205813478,
    0.13268759668560612,
    0.13086767009948175,
];

/// The bits of `sqrt(2)/2`, the lower end of `m`'s range.
const SQRT_HALF_BITS: i64 = 0x3fe6a09e667f3bcd;

/// `(k as a real, f)` with `x = 2^k (1 + f)`, `1 + f` in `[sqrt(2)/2, sqrt(2))`, for a
/// positive normal `x`.
#[inline(always)]
fn split<A: Arith>(a: &mut A, x: A::Real) -> (A::Real, A::Real) {
    let bits = a.to_bits(x);
    // Shifting the bits by `1 - sqrt(2)/2` (in the exponent field's units) moves the
    // binade boundary to sqrt(2)/2.
    let shift = a.int(0x3ff0000000000000 - SQRT_HALF_BITS);
    let u = a.iadd(bits, shift);
    // `u` is below `2^63` for every positive finite `x` (the only `x` whose result is
    // kept), so a logical shift, one instruction on two lanes, gives the exponent.
    let e = a.ushr(u, 52);
    let bias = a.int(1023);
    let k = a.isub(e, bias);
    let mask = a.int(0x000fffffffffffff);
    let frac = a.iand(u, mask);
    let base = a.int(SQRT_HALF_BITS);
    let mbits = a.iadd(frac, base);
    let m = a.bits_to_real(mbits);
    let one = a.real(1.0);
    let f = a.sub(m, one);
    (int_to_real(a, k), f)
}

/// `k ln2 + log(1 + f) + c`, for a small correction `c`.
#[inline(always)]
fn combine<A: Arith>(a: &mut A, k: A::Real, f: A::Real, c: A::Real) -> A::Real {
    let two = a.real(2.0);
    let d = a.add(two, f);
    let s = a.div(f, d);
    let z = a.mul(s, s);
    let p = estrin(a, z, &LOG_R);
    let r = a.mul(z, p);
    let half = a.real(0.5);
    let hf = a.mul(half, f);
    let hfsq = a.mul(hf, f);
    let ln2_lo = a.real(LN2_LO);
    let klo = a.mul(k, ln2_lo);
    let low = a.add(klo, c);
    let hr = a.add(hfsq, r);
    let shr = a.mul(s, hr);
    let t = a.add(shr, low);
    let t = a.sub(hfsq, t);
    let t = a.sub(f, t);
    let ln2_hi = a.real(LN2_HI);
    let khi = a.mul(k, ln2_hi);
    a.add(khi, t)
}

/// The natural logarithm: subnormal `x` are scaled by `2^54` first; `log(+inf) = +inf`,
/// `log(±0) = -inf`, and NaN below 0.
#[inline(always)]
pub(crate) fn log<A: Arith>(a: &mut A, x: A::Real) -> A::Real {
    let tiny = a.real(f64::MIN_POSITIVE);
    let subnormal = a.cmp(Cmp::Lt, x, tiny);
    let scale = a.real(18014398509481984.0); // 2^54
    let scaled = a.mul(x, scale);
    let xs = a.select(subnormal, scaled, x);
    let (k, f) = split(a, xs);
    let m54 = a.real(-54.0);
    let zero = a.real(0.0);
    let adjust = a.select(subnormal, m54, zero);
    let k = a.add(k, adjust);
    let y = combine(a, k, f, zero);
    special(a, x, zero, y)
}

/// The special values of a logarithm of `x` (`at` = the `x` whose logarithm is -inf):
/// `+inf` at `+inf`, `-inf` at `at`, NaN below it and at NaN.
#[inline(always)]
fn special<A: Arith>(a: &mut A, x: A::Real, at: A::Real, y: A::Real) -> A::Real {
    let inf = a.real(f64::INFINITY);
    let is_inf = a.cmp(Cmp::Eq, x, inf);
    let y = a.select(is_inf, inf, y);
    let ninf = a.real(f64::NEG_INFINITY);
    let is_pole = a.cmp(Cmp::Eq, x, at);
    let y = a.select(is_pole, ninf, y);
    let nan = a.real(f64::NAN);
    let below = a.cmp(Cmp::Lt, x, at);
    let y = a.select(below, nan, y);
    let is_nan = a.cmp(Cmp::Ne, x, x);
    a.select(is_nan, x, y)
}

/// `log(1 + x)`: `u = 1 + x` rounded, `log(u)` as above, plus the correction
/// `(x - (u - 1)) / u` for the rounding of `u`, added with the low part. `log1p(±0) = ±0`.
#[inline(always)]
pub(crate) fn log1p<A: Arith>(a: &mut A, x: A::Real) -> A::Real {
    let one = a.real(1.0);
    let u = a.add(one, x);
    let um1 = a.sub(u, one);
    let err = a.sub(x, um1);
    let c = a.div(err, u);
    let (k, f) = split(a, u);
    let y = combine(a, k, f, c);
    let m1 = a.real(-1.0);
    let y = special(a, x, m1, y);
    let zero = a.real(0.0);
    let is_zero = a.cmp(Cmp::Eq, x, zero);
    a.select(is_zero, x, y)
}
