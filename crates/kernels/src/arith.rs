//! The arithmetic kernels are written over: [`Arith`], with values that are reals, 64-bit
//! integers (a real's bits) and masks (the results of comparisons).

use crate::table::Table;

/// A comparison of reals, as IEEE defines it: every comparison with NaN is false except
/// [`Cmp::Ne`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// The operations of a kernel. Each is one IEEE operation (rounded once) or exact.
///
/// An instance either computes (`f64`) or emits instructions that compute; a kernel calls
/// the operations in the order it wants them done and never branches on a value, so every
/// instance performs the same operations in the same order. Integer operations wrap.
pub trait Arith {
    type Real: Copy;
    type Int: Copy;
    type Mask: Copy;

    /// Whether [`Arith::mul_add`] is fused (rounded once) rather than a product and a sum.
    fn fused(&self) -> bool;

    fn real(&mut self, c: f64) -> Self::Real;
    fn int(&mut self, c: i64) -> Self::Int;

    fn add(&mut self, a: Self::Real, b: Self::Real) -> Self::Real;
    fn sub(&mut self, a: Self::Real, b: Self::Real) -> Self::Real;
    fn mul(&mut self, a: Self::Real, b: Self::Real) -> Self::Real;
    fn div(&mut self, a: Self::Real, b: Self::Real) -> Self::Real;
    /// `a * b + c`: rounded once if [`Arith::fused`], else the product then the sum.
    fn mul_add(&mut self, a: Self::Real, b: Self::Real, c: Self::Real) -> Self::Real;
    fn neg(&mut self, a: Self::Real) -> Self::Real;
    fn abs(&mut self, a: Self::Real) -> Self::Real;

    fn cmp(&mut self, op: Cmp, a: Self::Real, b: Self::Real) -> Self::Mask;
    /// `a` where `m` holds, else `b`.
    fn select(&mut self, m: Self::Mask, a: Self::Real, b: Self::Real) -> Self::Real;

    /// The bits of `a`, as an integer.
    fn to_bits(&mut self, a: Self::Real) -> Self::Int;
    /// The real with bits `i`.
    fn bits_to_real(&mut self, i: Self::Int) -> Self::Real;
    fn iadd(&mut self, a: Self::Int, b: Self::Int) -> Self::Int;
    fn isub(&mut self, a: Self::Int, b: Self::Int) -> Self::Int;
    fn iand(&mut self, a: Self::Int, b: Self::Int) -> Self::Int;
    fn ixor(&mut self, a: Self::Int, b: Self::Int) -> Self::Int;
    /// `a << n`, for `n < 64`.
    fn shl(&mut self, a: Self::Int, n: u32) -> Self::Int;
    /// `a >> n`, arithmetic (the sign is copied in), for `n < 64`.
    fn sshr(&mut self, a: Self::Int, n: u32) -> Self::Int;
    /// `a >> n`, logical (zeros shifted in), for `n < 64`. On two lanes of x86-64 this is
    /// one instruction, where the arithmetic shift of 64-bit lanes takes five: kernels
    /// shift a biased, non-negative integer instead ([`round_product_biased`]).
    fn ushr(&mut self, a: Self::Int, n: u32) -> Self::Int;
    fn ieq(&mut self, a: Self::Int, b: Self::Int) -> Self::Mask;

    /// The real at `column` of row `i mod t.rows()` of the table `t` ([`Table::get`]):
    /// the index is reduced to the table by a mask, so a lookup never reads outside it,
    /// whatever `i` is.
    fn lookup(&mut self, t: Table, i: Self::Int, column: usize) -> Self::Real;
}

/// The polynomial `c[0] + c[1] z + c[2] z^2 + ...` by Horner's rule with `mul_add`: the
/// fewest operations, each waiting for the one before (see [`estrin`]).
#[inline(always)]
pub(crate) fn horner<A: Arith>(a: &mut A, z: A::Real, c: &[f64]) -> A::Real {
    let (&last, rest) = c.split_last().expect("a polynomial has a coefficient");
    let mut p = a.real(last);
    for &k in rest.iter().rev() {
        let k = a.real(k);
        p = a.mul_add(p, z, k);
    }
    p
}

/// The polynomial `c[0] + c[1] z + c[2] z^2 + ...` by Estrin's scheme: the pairs
/// `c[2i] + c[2i+1] z`, then pairs of those joined by `z^2`, then by `z^4`, and so on. The
/// same polynomial as [`horner`] up to rounding, but its chain of dependent operations is
/// about `2 log2(n)` long instead of `n`: the multiply-adds of one level are independent,
/// so a core with several floating-point pipes runs them at once, where Horner's rule
/// waits for each result (the latency of an `fma` is about four cycles). Used where the
/// polynomial is a small correction to the result, so that its slightly larger rounding
/// error does not show.
#[inline(always)]
pub(crate) fn estrin<A: Arith>(a: &mut A, z: A::Real, c: &[f64]) -> A::Real {
    const MAX: usize = 16;
    assert!(
        !c.is_empty() && c.len() <= MAX,
        "a polynomial of 1 to {MAX} coefficients"
    );
    let pair = |a: &mut A, i: usize| match c[i..] {
        [c0, c1, ..] => {
            let (c0, c1) = (a.real(c0), a.real(c1));
            a.mul_add(c1, z, c0)
        }
        [c0] => a.real(c0),
        [] => unreachable!("a pair starts inside the coefficients"),
    };
    let first = pair(a, 0);
    let mut terms = [first; MAX];
    let mut n = 1;
    for i in (2..c.len()).step_by(2) {
        terms[n] = pair(a, i);
        n += 1;
    }
    let mut power = z;
    while n > 1 {
        power = a.mul(power, power);
        let mut m = 0;
        for i in (0..n).step_by(2) {
            terms[m] = if i + 1 < n {
                a.mul_add(terms[i + 1], power, terms[i])
            } else {
                terms[i]
            };
            m += 1;
        }
        n = m;
    }
    terms[0]
}

/// `1.5 * 2^52`: adding it to a real of magnitude below `2^51` rounds the real to an
/// integer (ties to even), which then sits in the low bits of the sum's significand.
pub(crate) const SHIFTER: f64 = 6755399441055744.0;

/// `x` rounded to an integer, as a real and as an integer (for `|x| < 2^51`), without an
/// SSE4.1 rounding instruction.
#[inline(always)]
pub(crate) fn round_to_int<A: Arith>(a: &mut A, x: A::Real) -> (A::Real, A::Int) {
    let shifter = a.real(SHIFTER);
    let t = a.add(x, shifter);
    unshift(a, t, shifter, 0)
}

/// `x c` rounded to an integer by one multiply-add with [`SHIFTER`], as a real and as an
/// integer (for `|x c| < 2^51`): the `k` of a reduction modulo `1/c`.
#[inline(always)]
pub(crate) fn round_product<A: Arith>(a: &mut A, x: A::Real, c: f64) -> (A::Real, A::Int) {
    round_product_biased(a, x, c, 0)
}

/// [`round_product`] with `bias` added to the integer, in the same subtraction: `(k, k +
/// bias)`. With a bias above `|k|` that is a multiple of `2^s`, `(k + bias) >> s` is
/// `(k >> s) + bias / 2^s` by a logical shift, and the bias vanishes wherever the result
/// is then shifted left into a real's exponent field (`bias / 2^s` a multiple of `2^12`).
#[inline(always)]
pub(crate) fn round_product_biased<A: Arith>(
    a: &mut A,
    x: A::Real,
    c: f64,
    bias: i64,
) -> (A::Real, A::Int) {
    let c = a.real(c);
    let shifter = a.real(SHIFTER);
    let t = a.mul_add(x, c, shifter);
    unshift(a, t, shifter, bias)
}

/// The integer `t - SHIFTER` of a sum `t` rounded by [`SHIFTER`] (`shifter` its value), as
/// a real, and plus `bias` as an integer (the low bits of `t`'s significand).
#[inline(always)]
fn unshift<A: Arith>(a: &mut A, t: A::Real, shifter: A::Real, bias: i64) -> (A::Real, A::Int) {
    let kf = a.sub(t, shifter);
    let bits = a.to_bits(t);
    let base = a.int((SHIFTER.to_bits() as i64).wrapping_sub(bias));
    (kf, a.isub(bits, base))
}

/// The real `2^k`, for an integer `k` in the normal range `[-1022, 1023]`.
#[inline(always)]
pub(crate) fn pow2<A: Arith>(a: &mut A, k: A::Int) -> A::Real {
    let bias = a.int(1023);
    let e = a.iadd(k, bias);
    let bits = a.shl(e, 52);
    a.bits_to_real(bits)
}

/// The integer `k` (`|k| < 2^51`) as a real.
#[inline(always)]
pub(crate) fn int_to_real<A: Arith>(a: &mut A, k: A::Int) -> A::Real {
    let base = a.int(SHIFTER.to_bits() as i64);
    let bits = a.iadd(k, base);
    let t = a.bits_to_real(bits);
    let shifter = a.real(SHIFTER);
    a.sub(t, shifter)
}

/// `x + y = s + err` exactly for `|x| >= |y|` (Fast2Sum, three operations where
/// [`two_sum`] takes six): `(s, err)`.
#[inline(always)]
pub(crate) fn fast_two_sum<A: Arith>(a: &mut A, x: A::Real, y: A::Real) -> (A::Real, A::Real) {
    let s = a.add(x, y);
    let back = a.sub(x, s);
    (s, a.add(back, y))
}

/// `a + b = s + err` exactly (TwoSum): `(s, err)`.
#[inline(always)]
pub(crate) fn two_sum<A: Arith>(a: &mut A, x: A::Real, y: A::Real) -> (A::Real, A::Real) {
    let s = a.add(x, y);
    let yv = a.sub(s, x);
    let xv = a.sub(s, yv);
    let ey = a.sub(y, yv);
    let ex = a.sub(x, xv);
    (s, a.add(ex, ey))
}
