//! The exponential family: `exp`, `expm1`, and `tanh` and `sigmoid` built from them.
//!
//! `exp` (and the exponential inside `tanh` and `sigmoid`) reduces `x` to a multiple of
//! `ln2/128` plus `|r| <= ln2/256` and reads `2^(j/128)` from a table ([`table_parts`]);
//! `expm1` reduces to `x = k ln2 + r` with `|r| <= ln2/2` (Cody–Waite: `ln2` in two parts,
//! the first short enough that `k * LN2_HI` is exact) and `exp(r) = 1 + r + r^2 g(r)` with
//! `g` a degree-10 polynomial. `2^k` is built from its exponent bits.

use crate::arith::{
    estrin, fast_two_sum, horner, pow2, round_product, round_product_biased, round_to_int, two_sum,
    Arith, Cmp,
};
use crate::table::{Table, EXP2_N};

/// `1 / ln 2`.
const INV_LN2: f64 = std::f64::consts::LOG2_E;
/// `ln 2` to 32 significant bits, so that `k * LN2_HI` is exact for `|k| < 2^21`.
const LN2_HI: f64 = 0.6931471806019545;
/// `ln 2 - LN2_HI`, rounded.
const LN2_LO: f64 = -4.2009150726810846e-11;

/// `g(r) = (exp(r) - 1 - r) / r^2` on `|r| <= ln2/2` (a Chebyshev fit, coefficients of
/// `r^0, r^1, ...`; its error is below `2^-60` relative to `exp(r)`).
const EXP_G: [f64; 11] = [
    0.5,
    0.1666666666666667,
    0.04166666666666667,
    0.008333333333326136,
    0.0013888888888883748,
    0.00019841269874820627,
    2.4801587325547743e-05,
    2.7557255400206422e-06,
    2.75572736431103e-07,
    2.5105217004720745e-08,
    2.0914686968086876e-09,
];

/// `T(z) = (tanh(x) - x) / x^3` with `z = x^2`, on `|x| <= 0.625` (coefficients of
/// `z^0, z^1, ...`).
const TANH_T: [f64; 12] = [
    -0.3333333333333333,
    0.13333333333333042,
    -0.053968253967896666,
    0.021869488518994312,
    -0.008863235102935029,
    0.0035921217472709827,
    -0.0014557753814086393,
    0.0005896605030472117,
    -0.00023759014908800234,
    9.257015852602979e-05,
    -3.119996874178646e-05,
    6.484612156316395e-06,
];

/// Below this `|x|`, `tanh` is its odd polynomial; above, `tanh(|x|) >= 0.55`, so the
/// rounding of `1 - s` dominates that of `s` (`s < 0.45`).
const TANH_SMALL: f64 = 0.625;

/// `x = k ln2 + (hi + lo)`: `(k as a real, k, hi, lo)`, `hi` exact and `lo` rounded.
/// `k = round(x / ln2)` by [`round_product`], and `hi = x - k LN2_HI` by
/// another: exact whether fused or not (`k LN2_HI` is exact, and so is the difference, by
/// Sterbenz's lemma).
#[allow(clippy::type_complexity)]
#[inline(always)]
fn reduce<A: Arith>(a: &mut A, x: A::Real) -> (A::Real, A::Int, A::Real, A::Real) {
    let (kf, k) = round_product(a, x, INV_LN2);
    let neg_ln2_hi = a.real(-LN2_HI);
    let hi = a.mul_add(kf, neg_ln2_hi, x);
    let neg_ln2_lo = a.real(-LN2_LO);
    let lo = a.mul(kf, neg_ln2_lo);
    (kf, k, hi, lo)
}

/// `r^2 g(r) + lo` for `r = hi + lo`: `exp(r) - 1 = hi + q`, the `q` returned. `g` by
/// Estrin's scheme where `r^2 g(r)` is added to 1 (below 0.07 of `exp(r)`, its rounding does
/// not show, and the chain of dependent operations is half as long as by Horner's rule);
/// by Horner's rule for `expm1`, where it is up to a sixth of the result.
#[inline(always)]
fn tail<A: Arith>(a: &mut A, hi: A::Real, lo: A::Real, added_to_one: bool) -> A::Real {
    let r = a.add(hi, lo);
    let g = if added_to_one {
        estrin(a, r, &EXP_G)
    } else {
        horner(a, r, &EXP_G)
    };
    let z = a.mul(r, r);
    if added_to_one {
        a.mul_add(z, g, lo)
    } else {
        let zg = a.mul(z, g);
        a.add(zg, lo)
    }
}

/// `x` clamped to `[lo, hi]`; NaN stays NaN.
#[inline(always)]
fn clamp<A: Arith>(a: &mut A, x: A::Real, lo: f64, hi: f64) -> A::Real {
    let hi = a.real(hi);
    let above = a.cmp(Cmp::Gt, x, hi);
    let x = a.select(above, hi, x);
    let lo = a.real(lo);
    let below = a.cmp(Cmp::Lt, x, lo);
    a.select(below, lo, x)
}

/// `e^x = (yh + yl) 2^e` for `x` in `[-746, 710]`, `yh + yl` to about 2^-60 relative and
/// `|yl|` at most half an ulp of `yh`: `(yh, yl, e)`, from [`table_parts`] by Fast2Sum
/// (`|u| < |hi|`).
///
/// `e` is biased (a logical shift of [`table_parts`]'s `k`, biased by [`K_BIAS`]): it is
/// only ever added to and shifted into a real's exponent field, where the bias vanishes.
#[inline(always)]
fn exp_parts<A: Arith>(a: &mut A, x: A::Real) -> (A::Real, A::Real, A::Int) {
    let (hi, u, k) = table_parts(a, x);
    let (yh, yl) = fast_two_sum(a, hi, u);
    let e = a.ushr(k, 7);
    (yh, yl, e)
}

/// The bias of [`table_parts`]'s `k`: above `|k|` wherever the result means something
/// (`|k| < 2^18`), so that `k + K_BIAS >= 0` and a logical shift divides it; a multiple of
/// `2^20`, so that after a shift by 7 or 8 (and a halving, in [`scale`]) the bias left is a
/// multiple of `2^12`, which vanishes when shifted by 52 into an exponent field (it wraps
/// out of 64 bits). The results are those of signed shifts of an unbiased `k`, bit for bit.
const K_BIAS: i64 = 1 << 20;

/// `y 2^k` for `k` in `[-1076, 1024]`, as two factors `2^(k - k/2) * 2^(k/2)`, each a
/// normal number, so that results near overflow and subnormal results are rounded once.
/// `k` may carry a non-negative bias that is a multiple of `2^13` (see [`K_BIAS`]): the
/// halving is a logical shift, and each factor's exponent then carries a multiple of
/// `2^12`, which [`pow2`]'s shift drops.
#[inline(always)]
fn scale<A: Arith>(a: &mut A, y: A::Real, k: A::Int) -> A::Real {
    let k1 = a.ushr(k, 1);
    let k2 = a.isub(k, k1);
    let s1 = pow2(a, k1);
    let s2 = pow2(a, k2);
    let y = a.mul(y, s1);
    a.mul(y, s2)
}

/// `1 / ln 2` times [`EXP2_N`]: `x` times it is `x` in 128ths of `ln 2`.
const INV_LN2_N: f64 = 184.6649652337873;

/// `e^r - 1 = r + r^2 (1/2 + r/6 + r^2/24 + r^3/120)` on `|r| <= ln2/256`, where the first
/// omitted term, `r^6/720`, is below `2^-60`: the Taylor coefficients of `r^2 .. r^5`.
const EXP_R: [f64; 4] = [0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0];

/// `e^x = 2^e (hi + u)` with `e = k >> 7`, by a table of `2^(j/128)` (Tang's method):
/// `(hi, u, k + K_BIAS)` (see [`K_BIAS`]: the table's row `j` is the same, the bias
/// being a multiple of 128). `x = (128 e + j) ln2/128 + r` with `k = 128 e + j = round(128 x / ln2)`
/// and `|r| <= ln2/256`; `e^x = 2^e T_j (1 + p(r))` with `T_j = hi + lo` from
/// [`Table::Exp2`] and `p(r) = e^r - 1` of degree 5, and `u = hi p + lo` rounded once
/// (`|u| < 0.006 hi`, so its rounding is below 2^-60 of the result). For any `x` the table
/// is read inside (the index is reduced to it); the result means something for `x` in
/// `[-746, 710]`, where `|k| < 2^18`.
#[inline(always)]
fn table_parts<A: Arith>(a: &mut A, x: A::Real) -> (A::Real, A::Real, A::Int) {
    let (kf, k) = round_product_biased(a, x, INV_LN2_N, K_BIAS);
    // `k LN2_HI/128` is exact (`|k| < 2^18`, `LN2_HI` has 32 bits).
    let neg_hi = a.real(-LN2_HI / EXP2_N as f64);
    let r = a.mul_add(kf, neg_hi, x);
    let neg_lo = a.real(-LN2_LO / EXP2_N as f64);
    let r = a.mul_add(kf, neg_lo, r);
    let hi = a.lookup(Table::Exp2, k, 0);
    let lo = a.lookup(Table::Exp2, k, 1);
    let r2 = a.mul(r, r);
    let c = EXP_R.map(|c| a.real(c));
    let even = a.mul_add(r, c[1], c[0]);
    let odd = a.mul_add(r, c[3], c[2]);
    let g = a.mul_add(odd, r2, even);
    let p = a.mul_add(g, r2, r);
    let u = a.mul_add(hi, p, lo);
    (hi, u, k)
}

/// `e^x`, from [`table_parts`]: `hi + u` rounds twice, the multiply-add in `u` (below a
/// hundredth of an ulp of the result) and the sum (half an ulp). `2^e` is applied as
/// `2^(k >> 8)` added to the exponent bits (exact: the result stays normal) times the
/// normal number `2^(e - (k >> 8))`, so results near overflow and subnormal results are
/// rounded once. Beyond 710 the result is infinity and below -746 it is 0, chosen at the
/// end (there `k` is out of range); NaN stays NaN ([`crate::Kernel::emit`]). The table
/// gives a polynomial of degree 5 with four constants, where one on `|r| <= ln2/2` has
/// degree 12 and eleven: two lanes of it keep more of their constants in registers.
#[inline(always)]
pub(crate) fn exp<A: Arith>(a: &mut A, x: A::Real) -> A::Real {
    let (hi, u, k) = table_parts(a, x);
    let y = a.add(hi, u);
    // `2^e`, `e = k >> 7` in [-1077, 1024] for `x` in [-746, 710], as `2^e1 2^e2` with
    // `e1 = k >> 8` and `e2 = e - e1`, both in [-539, 512]: `y 2^e1` by its exponent bits.
    // Each carries a bias (`k`'s, shifted: `2^13`, `2^12`, and `2^12` for `e2`) that the
    // shifts by 52 drop.
    let e = a.ushr(k, 7);
    let e1 = a.ushr(k, 8);
    let e2 = a.isub(e, e1);
    let y_bits = a.to_bits(y);
    let e1_bits = a.shl(e1, 52);
    let y_bits = a.iadd(y_bits, e1_bits);
    let y = a.bits_to_real(y_bits);
    let s2 = pow2(a, e2);
    let y = a.mul(y, s2);
    let top = a.real(710.0);
    let above = a.cmp(Cmp::Gt, x, top);
    let inf = a.real(f64::INFINITY);
    let y = a.select(above, inf, y);
    let bottom = a.real(-746.0);
    let below = a.cmp(Cmp::Lt, x, bottom);
    let zero = a.real(0.0);
    a.select(below, zero, y)
}

/// `e^x = wh + wl` for `x <= 0`, clamped at `floor`, each part scaled by `2^k`. Above
/// -708 (`floor` a constant, not a value) every `2^k` is a normal number and one factor
/// scales both parts; below, results may be subnormal and [`scale`] takes two.
#[inline(always)]
fn exp_negative<A: Arith>(a: &mut A, x: A::Real, floor: f64) -> (A::Real, A::Real) {
    let lo = a.real(floor);
    let below = a.cmp(Cmp::Lt, x, lo);
    let x = a.select(below, lo, x);
    let (yh, yl, k) = exp_parts(a, x);
    if floor >= -708.0 {
        let s = pow2(a, k);
        (a.mul(yh, s), a.mul(yl, s))
    } else {
        (scale(a, yh, k), scale(a, yl, k))
    }
}

/// `e^x - 1`, as `(2^k - 1) + 2^k hi + 2^k q`: the first two terms are exact (the 1 moves
/// to the last term beyond `k = 52`) and their sum is carried with its rounding error, so
/// that the result is rounded about once; `k = 0` gives `hi + q` with
/// `hi = x`. Below -40 the result is -1; at `k = 1024` the sum is formed with `2^1023` and
/// doubled.
#[inline(always)]
pub(crate) fn expm1<A: Arith>(a: &mut A, x0: A::Real) -> A::Real {
    let x = clamp(a, x0, -40.0, 710.0);
    let (kf, _, hi, lo) = reduce(a, x);
    let q = tail(a, hi, lo, false);
    let top = a.real(1023.0);
    let big = a.cmp(Cmp::Gt, kf, top);
    let kc = a.select(big, top, kf);
    let (_, kc) = round_to_int(a, kc);
    let t = pow2(a, kc);
    let one = a.real(1.0);
    // 2^k - 1 is exact up to k = 52; beyond, the 1 joins the low part instead.
    let zero = a.real(0.0);
    let fifty_two = a.real(52.0);
    let large = a.cmp(Cmp::Gt, kf, fifty_two);
    let one_hi = a.select(large, zero, one);
    let one_lo = a.select(large, one, zero);
    let tm1 = a.sub(t, one_hi);
    let thi = a.mul(t, hi);
    let (y, err) = two_sum(a, tm1, thi);
    let tq = a.mul(t, q);
    let low = a.add(tq, err);
    let low = a.sub(low, one_lo);
    let y = a.add(y, low);
    let two = a.real(2.0);
    let factor = a.select(big, two, one);
    let y = a.mul(y, factor);
    // expm1(±0) = ±0.
    let is_zero = a.cmp(Cmp::Eq, x0, zero);
    a.select(is_zero, x0, y)
}

/// `c w / (1 + w) = q + corr` for `w = wh + wl` in `[0, 1]` and `c` 1 or 2: `(q, corr)`,
/// the quotient of the leading parts and its first-order correction for the low parts and
/// for the rounding of `1 + wh`.
#[inline(always)]
fn ratio<A: Arith>(a: &mut A, wh: A::Real, wl: A::Real, c_value: f64) -> (A::Real, A::Real) {
    let one = a.real(1.0);
    // d + ed = 1 + wh + wl (the rounding error of 1 + wh is exact: 1 >= wh).
    let (d, ed) = fast_two_sum(a, one, wh);
    let ed = a.add(ed, wl);
    let c = a.real(c_value);
    let n = a.mul(c, wh);
    let en = a.mul(c, wl);
    let q = a.div(n, d);
    // (n + en) / (d + ed) = q + (en - q ed) / d to first order, and 1 / d = 1 - wh / d
    // = 1 - q / c: a multiply-add instead of a second division (the correction needs only
    // a few correct bits of it).
    let qed = a.mul(q, ed);
    let u = a.sub(en, qed);
    let minus_inv_c = a.real(-1.0 / c_value);
    let inv_d = a.mul_add(q, minus_inv_c, one);
    let corr = a.mul(u, inv_d);
    (q, corr)
}

/// `1 - (q + corr)` for `q` in `[0, 1/2]`, rounded once (`1 - q` is carried exactly).
#[inline(always)]
fn one_minus<A: Arith>(a: &mut A, q: A::Real, corr: A::Real) -> A::Real {
    let one = a.real(1.0);
    let nq = a.neg(q);
    let (h, e) = two_sum(a, one, nq);
    let low = a.sub(e, corr);
    a.add(h, low)
}

/// `tanh` of `|x| <= TANH_SMALL` (and any smaller `x`): `x + x^3 T(x^2)`.
#[inline(always)]
fn tanh_small<A: Arith>(a: &mut A, x: A::Real) -> A::Real {
    let z = a.mul(x, x);
    let t = estrin(a, z, &TANH_T);
    let xz = a.mul(x, z);
    let c = a.mul(xz, t);
    a.add(x, c)
}

/// `tanh(x)`: the odd polynomial for `|x| < 0.625`, else `1 - 2w/(1 + w)` with
/// `w = e^(-2|x|)`, and `x`'s sign.
#[inline(always)]
pub(crate) fn tanh<A: Arith>(a: &mut A, x: A::Real) -> A::Real {
    let ax = a.abs(x);
    let small = tanh_small(a, x);
    let m2 = a.real(-2.0);
    let arg = a.mul(ax, m2);
    // Beyond |x| = 19.1, tanh(|x|) rounds to 1: w = e^-40 there is far below its ulp.
    let (wh, wl) = exp_negative(a, arg, -40.0);
    let (q, corr) = ratio(a, wh, wl, 2.0);
    let large = one_minus(a, q, corr);
    let neg_large = a.neg(large);
    let zero = a.real(0.0);
    let negative = a.cmp(Cmp::Lt, x, zero);
    let large = a.select(negative, neg_large, large);
    let bound = a.real(TANH_SMALL);
    let is_small = a.cmp(Cmp::Lt, ax, bound);
    let y = a.select(is_small, small, large);
    // tanh(±0) = ±0.
    let is_zero = a.cmp(Cmp::Eq, x, zero);
    a.select(is_zero, x, y)
}

/// `sigmoid(x) = 1 / (1 + e^-x)`: `1/2 + tanh(x/2)/2` for `|x| < 1`, else `s = w/(1 + w)`
/// with `w = e^(-|x|)` (never overflows), the result `s` for `x < 0` and `1 - s` for
/// `x > 0` (`s` as `w - w s` beyond `|x| = 4`).
#[inline(always)]
pub(crate) fn sigmoid<A: Arith>(a: &mut A, x: A::Real) -> A::Real {
    let ax = a.abs(x);
    let half = a.real(0.5);
    let hx = a.mul(x, half);
    let t = tanh_small(a, hx);
    let ht = a.mul(t, half);
    let small = a.add(half, ht);
    let nax = a.neg(ax);
    let (wh, wl) = exp_negative(a, nax, -746.0);
    let (q, corr) = ratio(a, wh, wl, 1.0);
    let near = a.add(q, corr);
    // Far out (w < e^-4), s = w - w s with s ~ q in the small term: one rounding of a sum
    // led by wh, where q + corr rounds twice.
    let wq = a.mul(wh, q);
    let small_term = a.sub(wl, wq);
    let far = a.add(wh, small_term);
    let four = a.real(4.0);
    let is_far = a.cmp(Cmp::Gt, ax, four);
    let s = a.select(is_far, far, near);
    let upper = one_minus(a, q, corr);
    let one = a.real(1.0);
    let zero = a.real(0.0);
    let negative = a.cmp(Cmp::Lt, x, zero);
    let large = a.select(negative, s, upper);
    let is_small = a.cmp(Cmp::Lt, ax, one);
    a.select(is_small, small, large)
}

#[cfg(test)]
mod tests {
    use crate::arith::int_to_real;
    use crate::Scalar;

    #[test]
    fn integers_round_trip_through_reals() {
        for k in [-1100i64, -54, -1, 0, 1, 7, 1024] {
            assert_eq!(int_to_real(&mut Scalar::<false>, k), k as f64);
        }
    }
}
