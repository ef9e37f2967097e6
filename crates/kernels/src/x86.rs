//! The kernels on the x86-64 vector registers: [`Avx2`] (four reals per 256-bit register)
//! and [`Avx512`] (eight per 512-bit register), two more instances of [`Arith`] whose
//! values are the registers themselves, each operation one instruction (or, for what
//! AVX2 lacks, a short sequence computing the same bits).
//!
//! [`Lanes`](crate::Lanes) computes the same on arrays of reals and leaves the choice of
//! registers to rustc; compiled for 8 and 16 lanes, its kernels' polynomials (arrays of
//! arrays, `estrin`'s terms among them) stayed in memory and its table lookups went
//! through the stack, a third to a half of the speed these reach. As there, every
//! operation is the scalar twin's on each lane, rounded once, in the same order: each lane
//! computes what [`Kernel::eval_with`]`(true, x)` computes, bit for bit (`mul_add` is
//! always fused here, as it is on a host with these instructions).
//!
//! The methods are `#[inline(always)]` without target features of their own: they are
//! only called from [`apply_avx2`] and [`apply_avx512`], whose features (checked by their
//! callers, see [`crate::host_lanes`]) then apply to the intrinsics inlined into them.

use core::arch::x86_64::*;

use crate::arith::{Arith, Cmp};
use crate::table::{Table, TABLES};
use crate::wide::fallback;
use crate::{Kernel, Scalar};

/// [`Arith`] on AVX2 and FMA registers, four reals each.
#[derive(Copy, Clone, Debug, Default)]
struct Avx2;

/// [`Arith`] on AVX-512 (F and DQ) registers, eight reals each.
#[derive(Copy, Clone, Debug, Default)]
struct Avx512;

/// Intrinsics of this module's instructions, run where their features are the host's.
/// The instances are private to this module, and only [`apply_avx2`] and
/// [`apply_avx512`] call their methods, inlined into those functions, whose callers check
/// the host's features (`unsafe` to call them elsewhere); the only memory the intrinsics
/// touch is what `load`, `store` and `lookup` name.
#[allow(clippy::macro_metavars_in_unsafe)]
macro_rules! vector {
    ($($code:tt)*) => {
        // SAFETY: the instructions exist on the host (above); `load` and `store` assert
        // their slices' lengths, and `lookup` reads `TABLES` inside its bounds.
        unsafe { $($code)* }
    };
}

/// The shift count `n` as the shift instructions take it, reduced as `wrapping_shl` and
/// `wrapping_shr` reduce it.
#[inline(always)]
fn count(n: u32) -> __m128i {
    vector!(_mm_cvtsi32_si128((n & 63) as i32))
}

impl Arith for Avx2 {
    type Real = __m256d;
    type Int = __m256i;
    /// All ones in a lane where the comparison holds.
    type Mask = __m256d;

    #[inline(always)]
    fn fused(&self) -> bool {
        true
    }
    #[inline(always)]
    fn real(&mut self, c: f64) -> __m256d {
        vector!(_mm256_set1_pd(c))
    }
    #[inline(always)]
    fn int(&mut self, c: i64) -> __m256i {
        vector!(_mm256_set1_epi64x(c))
    }
    #[inline(always)]
    fn add(&mut self, a: __m256d, b: __m256d) -> __m256d {
        vector!(_mm256_add_pd(a, b))
    }
    #[inline(always)]
    fn sub(&mut self, a: __m256d, b: __m256d) -> __m256d {
        vector!(_mm256_sub_pd(a, b))
    }
    #[inline(always)]
    fn mul(&mut self, a: __m256d, b: __m256d) -> __m256d {
        vector!(_mm256_mul_pd(a, b))
    }
    #[inline(always)]
    fn div(&mut self, a: __m256d, b: __m256d) -> __m256d {
        vector!(_mm256_div_pd(a, b))
    }
    #[inline(always)]
    fn mul_add(&mut self, a: __m256d, b: __m256d, c: __m256d) -> __m256d {
        vector!(_mm256_fmadd_pd(a, b, c))
    }
    #[inline(always)]
    fn neg(&mut self, a: __m256d) -> __m256d {
        vector!(_mm256_xor_pd(a, _mm256_set1_pd(-0.0)))
    }
    #[inline(always)]
    fn abs(&mut self, a: __m256d) -> __m256d {
        vector!(_mm256_andnot_pd(_mm256_set1_pd(-0.0), a))
    }
    #[inline(always)]
    fn cmp(&mut self, op: Cmp, a: __m256d, b: __m256d) -> __m256d {
        // Ordered and quiet, as Rust's comparisons of reals; `!=` holds of a NaN.
        vector! {
            match op {
                Cmp::Lt => _mm256_cmp_pd::<_CMP_LT_OQ>(a, b),
                Cmp::Le => _mm256_cmp_pd::<_CMP_LE_OQ>(a, b),
                Cmp::Gt => _mm256_cmp_pd::<_CMP_GT_OQ>(a, b),
                Cmp::Ge => _mm256_cmp_pd::<_CMP_GE_OQ>(a, b),
                Cmp::Eq => _mm256_cmp_pd::<_CMP_EQ_OQ>(a, b),
                Cmp::Ne => _mm256_cmp_pd::<_CMP_NEQ_UQ>(a, b),
            }
        }
    }
    #[inline(always)]
    fn select(&mut self, m: __m256d, a: __m256d, b: __m256d) -> __m256d {
        vector!(_mm256_blendv_pd(b, a, m))
    }
    #[inline(always)]
    fn to_bits(&mut self, a: __m256d) -> __m256i {
        vector!(_mm256_castpd_si256(a))
    }
    #[inline(always)]
    fn bits_to_real(&mut self, i: __m256i) -> __m256d {
        vector!(_mm256_castsi256_pd(i))
    }
    #[inline(always)]
    fn iadd(&mut self, a: __m256i, b: __m256i) -> __m256i {
        vector!(_mm256_add_epi64(a, b))
    }
    #[inline(always)]
    fn isub(&mut self, a: __m256i, b: __m256i) -> __m256i {
        vector!(_mm256_sub_epi64(a, b))
    }
    #[inline(always)]
    fn iand(&mut self, a: __m256i, b: __m256i) -> __m256i {
        vector!(_mm256_and_si256(a, b))
    }
    #[inline(always)]
    fn ixor(&mut self, a: __m256i, b: __m256i) -> __m256i {
        vector!(_mm256_xor_si256(a, b))
    }
    #[inline(always)]
    fn shl(&mut self, a: __m256i, n: u32) -> __m256i {
        vector!(_mm256_sll_epi64(a, count(n)))
    }
    #[inline(always)]
    fn sshr(&mut self, a: __m256i, n: u32) -> __m256i {
        // AVX2 has no arithmetic shift of 64-bit lanes: shift the value with its sign
        // flipped away (`x ^ s`, `s` all ones where `x < 0`), then flip it back.
        vector! {
            let s = _mm256_cmpgt_epi64(_mm256_setzero_si256(), a);
            _mm256_xor_si256(_mm256_srl_epi64(_mm256_xor_si256(a, s), count(n)), s)
        }
    }
    #[inline(always)]
    fn ushr(&mut self, a: __m256i, n: u32) -> __m256i {
        vector!(_mm256_srl_epi64(a, count(n)))
    }
    #[inline(always)]
    fn ieq(&mut self, a: __m256i, b: __m256i) -> __m256d {
        vector!(_mm256_castsi256_pd(_mm256_cmpeq_epi64(a, b)))
    }
    #[inline(always)]
    fn lookup(&mut self, t: Table, i: __m256i, column: usize) -> __m256d {
        assert!(column < t.width(), "a column of the table");
        vector! {
            let row = _mm256_and_si256(i, _mm256_set1_epi64x(t.rows() as i64 - 1));
            let at = _mm256_add_epi64(
                _mm256_sll_epi64(row, count(t.width().trailing_zeros())),
                _mm256_set1_epi64x((t.start() + column) as i64),
            );
            // Each lane's entry loaded alone, not gathered: on AMD Zen 4 a gather is slow,
            // and on an AVX-512 host the batches race this instance against `Avx512`,
            // which gathers (the JIT's `prefers_avx2`), so each host runs the faster way.
            let mut row = [0i64; 4];
            _mm256_storeu_si256(row.as_mut_ptr().cast(), at);
            let entry = |k: usize| f64::from_bits(TABLES[row[k] as usize]);
            _mm256_set_pd(entry(3), entry(2), entry(1), entry(0))
        }
    }
}

impl Arith for Avx512 {
    type Real = __m512d;
    type Int = __m512i;
    type Mask = __mmask8;

    #[inline(always)]
    fn fused(&self) -> bool {
        true
    }
    #[inline(always)]
    fn real(&mut self, c: f64) -> __m512d {
        vector!(_mm512_set1_pd(c))
    }
    #[inline(always)]
    fn int(&mut self, c: i64) -> __m512i {
        vector!(_mm512_set1_epi64(c))
    }
    #[inline(always)]
    fn add(&mut self, a: __m512d, b: __m512d) -> __m512d {
        vector!(_mm512_add_pd(a, b))
    }
    #[inline(always)]
    fn sub(&mut self, a: __m512d, b: __m512d) -> __m512d {
        vector!(_mm512_sub_pd(a, b))
    }
    #[inline(always)]
    fn mul(&mut self, a: __m512d, b: __m512d) -> __m512d {
        vector!(_mm512_mul_pd(a, b))
    }
    #[inline(always)]
    fn div(&mut self, a: __m512d, b: __m512d) -> __m512d {
        vector!(_mm512_div_pd(a, b))
    }
    #[inline(always)]
    fn mul_add(&mut self, a: __m512d, b: __m512d, c: __m512d) -> __m512d {
        vector!(_mm512_fmadd_pd(a, b, c))
    }
    #[inline(always)]
    fn neg(&mut self, a: __m512d) -> __m512d {
        vector!(_mm512_xor_pd(a, _mm512_set1_pd(-0.0)))
    }
    #[inline(always)]
    fn abs(&mut self, a: __m512d) -> __m512d {
        vector!(_mm512_andnot_pd(_mm512_set1_pd(-0.0), a))
    }
    #[inline(always)]
    fn cmp(&mut self, op: Cmp, a: __m512d, b: __m512d) -> __mmask8 {
        vector! {
            match op {
                Cmp::Lt => _mm512_cmp_pd_mask::<_CMP_LT_OQ>(a, b),
                Cmp::Le => _mm512_cmp_pd_mask::<_CMP_LE_OQ>(a, b),
                Cmp::Gt => _mm512_cmp_pd_mask::<_CMP_GT_OQ>(a, b),
                Cmp::Ge => _mm512_cmp_pd_mask::<_CMP_GE_OQ>(a, b),
                Cmp::Eq => _mm512_cmp_pd_mask::<_CMP_EQ_OQ>(a, b),
                Cmp::Ne => _mm512_cmp_pd_mask::<_CMP_NEQ_UQ>(a, b),
            }
        }
    }
    #[inline(always)]
    fn select(&mut self, m: __mmask8, a: __m512d, b: __m512d) -> __m512d {
        vector!(_mm512_mask_blend_pd(m, b, a))
    }
    #[inline(always)]
    fn to_bits(&mut self, a: __m512d) -> __m512i {
        vector!(_mm512_castpd_si512(a))
    }
    #[inline(always)]
    fn bits_to_real(&mut self, i: __m512i) -> __m512d {
        vector!(_mm512_castsi512_pd(i))
    }
    #[inline(always)]
    fn iadd(&mut self, a: __m512i, b: __m512i) -> __m512i {
        vector!(_mm512_add_epi64(a, b))
    }
    #[inline(always)]
    fn isub(&mut self, a: __m512i, b: __m512i) -> __m512i {
        vector!(_mm512_sub_epi64(a, b))
    }
    #[inline(always)]
    fn iand(&mut self, a: __m512i, b: __m512i) -> __m512i {
        vector!(_mm512_and_si512(a, b))
    }
    #[inline(always)]
    fn ixor(&mut self, a: __m512i, b: __m512i) -> __m512i {
        vector!(_mm512_xor_si512(a, b))
    }
    #[inline(always)]
    fn shl(&mut self, a: __m512i, n: u32) -> __m512i {
        vector!(_mm512_sll_epi64(a, count(n)))
    }
    #[inline(always)]
    fn sshr(&mut self, a: __m512i, n: u32) -> __m512i {
        vector!(_mm512_sra_epi64(a, count(n)))
    }
    #[inline(always)]
    fn ushr(&mut self, a: __m512i, n: u32) -> __m512i {
        vector!(_mm512_srl_epi64(a, count(n)))
    }
    #[inline(always)]
    fn ieq(&mut self, a: __m512i, b: __m512i) -> __mmask8 {
        vector!(_mm512_cmpeq_epi64_mask(a, b))
    }
    #[inline(always)]
    fn lookup(&mut self, t: Table, i: __m512i, column: usize) -> __m512d {
        assert!(column < t.width(), "a column of the table");
        vector! {
            let row = _mm512_and_si512(i, _mm512_set1_epi64(t.rows() as i64 - 1));
            let at = _mm512_add_epi64(
                _mm512_sll_epi64(row, count(t.width().trailing_zeros())),
                _mm512_set1_epi64((t.start() + column) as i64),
            );
            // Every index is below `start + rows * width`, inside `TABLES`.
            _mm512_i64gather_pd::<8>(at, TABLES.as_ptr().cast::<f64>())
        }
    }
}

/// The registers of an instance, moved to and from memory.
trait Registers: Arith {
    /// Reals per register.
    const LANES: usize;
    /// A register of the reals `v[..LANES]`.
    fn load(v: &[f64]) -> Self::Real;
    /// `r` into `out[..LANES]`.
    fn store(r: Self::Real, out: &mut [f64]);
}

impl Registers for Avx2 {
    const LANES: usize = 4;
    #[inline(always)]
    fn load(v: &[f64]) -> __m256d {
        assert!(v.len() >= 4);
        vector!(_mm256_loadu_pd(v.as_ptr()))
    }
    #[inline(always)]
    fn store(r: __m256d, out: &mut [f64]) {
        assert!(out.len() >= 4);
        vector!(_mm256_storeu_pd(out.as_mut_ptr(), r))
    }
}

impl Registers for Avx512 {
    const LANES: usize = 8;
    #[inline(always)]
    fn load(v: &[f64]) -> __m512d {
        assert!(v.len() >= 8);
        vector!(_mm512_loadu_pd(v.as_ptr()))
    }
    #[inline(always)]
    fn store(r: __m512d, out: &mut [f64]) {
        assert!(out.len() >= 8);
        vector!(_mm512_storeu_pd(out.as_mut_ptr(), r))
    }
}

/// Kernel `k` on `xs` in place, a register at a time; the last `len mod LANES` padded
/// with zeros to a whole register (a lane computes alone: the padding changes no other
/// lane). Inlined with `k` a constant (see `instance!`), so that each kernel has a loop of
/// its own, compiled with the caller's target features.
#[inline(always)]
fn groups<A: Registers + Default>(k: Kernel, xs: &mut [f64]) {
    let mut a = A::default();
    let mut chunks = xs.chunks_exact_mut(A::LANES);
    for c in &mut chunks {
        let r = with_fallback(k, &mut a, c);
        A::store(r, c);
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let mut v = [0.0; 8];
        v[..rest.len()].copy_from_slice(rest);
        let r = with_fallback(k, &mut a, &v[..A::LANES]);
        let mut out = [0.0; 8];
        A::store(r, &mut out);
        rest.copy_from_slice(&out[..rest.len()]);
    }
}

/// Kernel `k` on the reals `v[..LANES]`, with the standard library's value in the lanes
/// whose argument the kernel does not reduce ([`Kernel::needs_fallback`]: `sin` and `cos`
/// only), as [`Kernel::eval_with`] has it.
#[inline(always)]
fn with_fallback<A: Registers>(k: Kernel, a: &mut A, v: &[f64]) -> A::Real {
    let r = k.emit(a, A::load(v));
    if !matches!(k, Kernel::Sin | Kernel::Cos) {
        return r;
    }
    let v = &v[..A::LANES];
    if v.iter().all(|x| !k.needs_fallback(*x)) {
        return r;
    }
    let mut out = [0.0; 8];
    A::store(r, &mut out);
    fallback(k, v, &mut out[..A::LANES]);
    A::load(&out)
}

/// A function `$apply(k, xs)` running kernel `k` over `xs` on the instance `$instance`,
/// compiled for `$features`: one function of its own per kernel, the kernel a constant in
/// each, the choice made once per call. Apart, because in a debug build (no stack slots
/// shared) the eight kernels' temporaries in one frame overflowed a test thread's 2 MiB
/// stack.
macro_rules! instance {
    ($(#[$doc:meta])* $apply:ident, $instance:ty, $features:literal) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        pub fn $apply(k: Kernel, xs: &mut [f64]) {
            #[target_feature(enable = $features)]
            fn exp(xs: &mut [f64]) {
                groups::<$instance>(Kernel::Exp, xs)
            }
            #[target_feature(enable = $features)]
            fn log(xs: &mut [f64]) {
                groups::<$instance>(Kernel::Log, xs)
            }
            #[target_feature(enable = $features)]
            fn tanh(xs: &mut [f64]) {
                groups::<$instance>(Kernel::Tanh, xs)
            }
            #[target_feature(enable = $features)]
            fn sigmoid(xs: &mut [f64]) {
                groups::<$instance>(Kernel::Sigmoid, xs)
            }
            #[target_feature(enable = $features)]
            fn log1p(xs: &mut [f64]) {
                groups::<$instance>(Kernel::Log1p, xs)
            }
            #[target_feature(enable = $features)]
            fn expm1(xs: &mut [f64]) {
                groups::<$instance>(Kernel::Expm1, xs)
            }
            #[target_feature(enable = $features)]
            fn sin(xs: &mut [f64]) {
                groups::<$instance>(Kernel::Sin, xs)
            }
            #[target_feature(enable = $features)]
            fn cos(xs: &mut [f64]) {
                groups::<$instance>(Kernel::Cos, xs)
            }
            match k {
                Kernel::Exp => exp(xs),
                Kernel::Log => log(xs),
                Kernel::Tanh => tanh(xs),
                Kernel::Sigmoid => sigmoid(xs),
                Kernel::Log1p => log1p(xs),
                Kernel::Expm1 => expm1(xs),
                Kernel::Sin => sin(xs),
                Kernel::Cos => cos(xs),
            }
        }
    };
}

/// The scalar twin with `mul_add` fused, [`Kernel::emit`] on [`Scalar`]`::<true>`
/// compiled for FMA (the fallback of `sin` and `cos` is the caller's), if the host has
/// FMA: the same operations, each `mul_add` an instruction rather than a call of libm's
/// `fma`.
#[inline]
pub(crate) fn fused_twin(k: Kernel, x: f64) -> Option<f64> {
    if !crate::host_has_fma() {
        return None;
    }
    // SAFETY: the host has FMA, checked above.
    Some(unsafe { twin_fma(k, x) })
}

/// [`fused_twin`]'s code, compiled for FMA.
#[target_feature(enable = "fma")]
fn twin_fma(k: Kernel, x: f64) -> f64 {
    k.emit(&mut Scalar::<true>, x)
}

instance!(
    /// Kernel `k` on every real of `xs` in place, four at a time in AVX2 registers: each
    /// result is [`Kernel::eval_with`]`(true, x)`, bit for bit.
    ///
    /// # Safety
    ///
    /// The host has AVX2 and FMA ([`crate::host_lanes`] is 4 or more): on another the
    /// instructions do not exist.
    apply_avx2,
    Avx2,
    "avx2,fma"
);

instance!(
    /// Kernel `k` on every real of `xs` in place, eight at a time in AVX-512 registers:
    /// each result is [`Kernel::eval_with`]`(true, x)`, bit for bit.
    ///
    /// # Safety
    ///
    /// The host has AVX-512 F and DQ and FMA ([`crate::host_lanes`] is 8): on another the
    /// instructions do not exist.
    apply_avx512,
    Avx512,
    "avx512f,avx512dq,fma"
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Reals over many binades, both signs, every kernel's special values, and the
    /// arguments of `sin` and `cos` beyond their reduction (the fallback lanes).
    fn points() -> Vec<f64> {
        let mut v = crate::testing::random_reals(0x2545f4914f6cdd1d, 20000, 60);
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
            -f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            f64::MAX,
            f64::MIN,
            709.78,
            709.79,
            710.0,
            -708.4,
            -745.13,
            -745.2,
            -746.0,
            20.0,
            -20.0,
            1e7,
            -3e9,
            1e300,
        ]);
        v
    }

    fn check(lanes: usize, apply: fn(Kernel, &mut [f64])) {
        let xs = points();
        for k in Kernel::ALL {
            // Every length up to a few registers, so that the padded tail is run too.
            for len in [0, 1, lanes - 1, lanes, lanes + 1, 3 * lanes + 2, xs.len()] {
                let mut ys = xs[..len].to_vec();
                apply(k, &mut ys);
                for (&x, &y) in xs.iter().zip(&ys) {
                    let want = k.eval_with(true, x);
                    assert_eq!(
                        y.to_bits(),
                        want.to_bits(),
                        "{}({x:e}) on {lanes} lanes: {y:e}, the twin {want:e}",
                        k.name()
                    );
                }
            }
        }
    }

    #[test]
    fn the_twin_compiled_for_fma_computes_what_the_twin_computes_with_libm_fma() {
        for k in Kernel::ALL {
            for x in points() {
                let Some(y) = fused_twin(k, x) else {
                    eprintln!("skipped: the host has no FMA");
                    return;
                };
                let want = k.emit(&mut Scalar::<true>, x);
                assert_eq!(y.to_bits(), want.to_bits(), "{}({x:e})", k.name());
            }
        }
    }

    #[test]
    fn avx2_registers_compute_what_the_fused_scalar_twin_computes() {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            eprintln!("skipped: the host has no AVX2 and FMA");
            return;
        }
        // SAFETY: the host has the instructions, checked above.
        check(4, |k, xs| unsafe { apply_avx2(k, xs) });
    }

    #[test]
    fn avx512_registers_compute_what_the_fused_scalar_twin_computes() {
        if !(is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("fma"))
        {
            eprintln!("skipped: the host has no AVX-512 F and DQ and FMA");
            return;
        }
        // SAFETY: the host has the instructions, checked above.
        check(8, |k, xs| unsafe { apply_avx512(k, xs) });
    }
}
