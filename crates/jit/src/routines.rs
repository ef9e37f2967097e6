//! The vector routines native code calls on arrays in memory (`lower/routines.rs` makes the
//! calls): in-place row updates that the code Cranelift emits runs two reals per
//! instruction, compiled here for the host's widest vectors. With `compiled.rs` and
//! `batch.rs` this is the crate's unsafe boundary: native code calls Rust with pointers.
//!
//! - `add`: `dst[e] = dst[e] + src[e]`;
//! - `axpy`: `dst[e] = dst[e] + s * src[e]`;
//! - `scale`: `dst[e] = s * src[e]`;
//! - `axpy2` and `scale2`: the same with `s * (src[e] * r)` for `s * src[e]` (a chain rule's
//!   two factors, as reverse mode writes `z * (a * g)`);
//! - `dots`: `out[i] = reduce + z (map2 * W[i] x)` for each row `W[i]` of a matrix, the
//!   sum in the blocked order that `unfad_syntax::reduction` defines.
//!
//! In `add` and `axpy` each element is one addition (after one multiplication for `axpy`),
//! the accumulator's element first, as the native code's own loop computes it, and in
//! `scale` one multiplication: the elements are independent, so any vector width gives the
//! same bits, and nothing is fused (no FMA). `dots` computes each product alone and adds it to the accumulator its index
//! falls to: element `e < 8·q` to accumulator `e mod 8` (accumulator 0 starting at `z`, the
//! others at `-0`), the eight combined by the reduction's tree, the rest added in order.
//! One AVX-512 register holds a row's eight accumulators (two AVX2 registers, four each),
//! so the lanes compute what the native code's blocked loop and the interpreter compute;
//! four rows run side by side, so that their additions do not wait for one another.
//!
//! The native code passes the addresses of the reals its own loop would have read and
//! written (its lengths come from the shape analysis, as for every access it makes). In
//! `add`, `axpy` and `scale`, `dst` and `src` are the same array, or do not overlap; a partial
//! overlap, which the lowering never makes, is computed element by element in order. The
//! rows `dots` writes are a fresh array, apart from the matrix and the vector it reads.

use crate::batch::Width;

/// A routine of this module, as the native code names it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Routine {
    Add,
    Axpy,
    Scale,
    Axpy2,
    Scale2,
    Dots,
}

/// The factors of a row update's elements: none (`src[e]`), one (`s * src[e]`), or two
/// (`s * (src[e] * r)`), applied in that order.
#[derive(Clone, Copy, Debug)]
enum Factors {
    None,
    One(f64),
    Two(f64, f64),
}

impl Factors {
    /// The term for the element `x`.
    fn apply(self, x: f64) -> f64 {
        match self {
            Factors::None => x,
            Factors::One(s) => s * x,
            Factors::Two(s, r) => s * (x * r),
        }
    }
}

impl Routine {
    /// The symbol of the routine's instance for `w`.
    pub(crate) fn symbol(self, w: Width) -> &'static str {
        match (self, w) {
            (Routine::Add, Width::Avx512) => "unfad_add_avx512",
            (Routine::Add, Width::Avx2) => "unfad_add_avx2",
            (Routine::Add, Width::Portable) => "unfad_add_portable",
            (Routine::Axpy, Width::Avx512) => "unfad_axpy_avx512",
            (Routine::Axpy, Width::Avx2) => "unfad_axpy_avx2",
            (Routine::Axpy, Width::Portable) => "unfad_axpy_portable",
            (Routine::Scale, Width::Avx512) => "unfad_scale_avx512",
            (Routine::Scale, Width::Avx2) => "unfad_scale_avx2",
            (Routine::Scale, Width::Portable) => "unfad_scale_portable",
            (Routine::Axpy2, Width::Avx512) => "unfad_axpy2_avx512",
            (Routine::Axpy2, Width::Avx2) => "unfad_axpy2_avx2",
            (Routine::Axpy2, Width::Portable) => "unfad_axpy2_portable",
            (Routine::Scale2, Width::Avx512) => "unfad_scale2_avx512",
            (Routine::Scale2, Width::Avx2) => "unfad_scale2_avx2",
            (Routine::Scale2, Width::Portable) => "unfad_scale2_portable",
            (Routine::Dots, Width::Avx512) => "unfad_dots_avx512",
            (Routine::Dots, Width::Avx2) => "unfad_dots_avx2",
            (Routine::Dots, Width::Portable) => "unfad_dots_portable",
        }
    }
}

/// `dst[..n] += s * src[..n]` (or `+= src[..n]` without `s`): on `w`'s vectors where the
/// two arrays are one or apart, element by element in order otherwise.
///
/// # Safety
///
/// `dst` and `src` each point to `n` reals that nothing else reads or writes during the
/// call (`dst` is written, `src` only read, unless they are the same), and `w` is
/// [`Width::Portable`] or one that [`Width::host`] allows.
// SAFETY: a contract on the caller, stated above; every caller is a routine, whose caller,
// the native code, passes the rows its own loop would have read and written.
unsafe fn update(w: Width, dst: *mut f64, src: *const f64, f: Factors, n: u64) {
    // SAFETY: the caller's contract.
    unsafe { elementwise::<true>(w, dst, src, f, n) }
}

/// `dst[..n] = s * src[..n]` (or `s * (src * r)`): as [`update`] without the addition.
///
/// # Safety
///
/// As for [`update`].
// SAFETY: a contract on the caller, stated above (the routine's instances keep it).
unsafe fn scale(w: Width, dst: *mut f64, src: *const f64, f: Factors, n: u64) {
    // SAFETY: the caller's contract.
    unsafe { elementwise::<false>(w, dst, src, f, n) }
}

/// `dst[e] = dst[e] + t` (`ADD`) or `dst[e] = t`, `t` the element's term (`f.apply`), for
/// `e < n`: on `w`'s vectors where the two arrays are one or apart, element by element in
/// order otherwise.
///
/// # Safety
///
/// As for [`update`].
// SAFETY: a contract on the caller, stated above; its callers `update` and `scale` keep it.
unsafe fn elementwise<const ADD: bool>(
    w: Width,
    dst: *mut f64,
    src: *const f64,
    f: Factors,
    n: u64,
) {
    let Ok(n) = usize::try_from(n) else {
        return;
    };
    if n == 0 || dst.is_null() || src.is_null() {
        return;
    }
    let (d, x) = (dst as usize, src as usize);
    let bytes = n * std::mem::size_of::<f64>();
    if d == x || d + bytes <= x || x + bytes <= d {
        // SAFETY: the caller's contract; the arrays are one or apart (tested above), so
        // each element is read before it is written, by one lane.
        unsafe {
            match f {
                Factors::None => vector::<ADD, 0>(w, dst, src, (0.0, 0.0), n),
                Factors::One(s) => vector::<ADD, 1>(w, dst, src, (s, 0.0), n),
                Factors::Two(s, r) => vector::<ADD, 2>(w, dst, src, (s, r), n),
            }
        }
    } else {
        for e in 0..n {
            // SAFETY: the caller's contract: `e < n` is inside both arrays.
            unsafe {
                let x = *src.add(e);
                let t = f.apply(x);
                *dst.add(e) = if ADD { *dst.add(e) + t } else { t };
            }
        }
    }
}

/// `dst[e] = dst[e] + t` (`ADD`) or `dst[e] = t`, `t` the element times `FACTORS` factors
/// (`src[e]`, `s * src[e]`, `s * (src[e] * r)` for `(s, r)`), for `e < n`, on `w`'s
/// vectors: whole vectors, then one masked
/// vector for the rest (rows of tens of reals, the common case, would leave an unrolled
/// loop's tail to run element by element).
///
/// # Safety
///
/// As for [`update`], with the arrays one or apart.
// SAFETY: a contract on the caller, stated above; its one caller, `update`, keeps it.
unsafe fn vector<const ADD: bool, const FACTORS: u8>(
    w: Width,
    dst: *mut f64,
    src: *const f64,
    (s, r): (f64, f64),
    n: usize,
) {
    match w {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract, and `w` is allowed here: AVX-512 was found.
        Width::Avx512 => unsafe { x86::avx512::<ADD, FACTORS>(dst, src, (s, r), n) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above: AVX2 was found.
        Width::Avx2 => unsafe { x86::avx2::<ADD, FACTORS>(dst, src, (s, r), n) },
        _ => {
            for e in 0..n {
                // SAFETY: the caller's contract: `e < n` is inside both arrays.
                unsafe {
                    let x = *src.add(e);
                    let t = match FACTORS {
                        0 => x,
                        1 => s * x,
                        _ => s * (x * r),
                    };
                    *dst.add(e) = if ADD { *dst.add(e) + t } else { t };
                }
            }
        }
    }
}

/// The rows `W[i]` (`W[i][e]` at `w + i·stride + e`, `e < m`) and the vector `x` (`m`
/// reals) that [`dots`] reads.
#[derive(Clone, Copy)]
struct Rows {
    w: *const f64,
    stride: usize,
    x: *const f64,
    m: usize,
}

/// `out[i] = reduce + z (map2 * W[i] x)` for `i < n`, in the blocked order (see the
/// module's documentation), on `w`'s vectors.
///
/// # Safety
///
/// `out` points to `n` reals that nothing else reads or writes during the call; for every
/// `i < n`, the `m` reals of row `i` and the `m` reals of `x` are readable; and `wd` is
/// [`Width::Portable`] or one that [`Width::host`] allows.
// SAFETY: a contract on the caller, stated above; its callers are the routine's instances,
// whose caller, the native code, passes the rows its own loop would have read.
unsafe fn dots(wd: Width, out: *mut f64, rows: Rows, n: usize, z: f64) {
    let k = unfad_syntax::reduction::ACCUMULATORS;
    let blocked = rows.m / k * k;
    let mut i = 0;
    if blocked > 0 {
        match wd {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the caller's contract, and AVX-512 was found.
            Width::Avx512 => i = unsafe { x86::dots_avx512(out, rows, n, z) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the caller's contract, and AVX2 was found.
            Width::Avx2 => i = unsafe { x86::dots_avx2(out, rows, n, z) },
            _ => {}
        }
    }
    // The rows the vectors left (all of them on the portable instance or for rows shorter
    // than a block): the same order, one accumulator at a time.
    while i < n {
        // SAFETY: the caller's contract: row `i < n` and `x` hold `m` reals each.
        unsafe {
            let row = rows.w.add(i * rows.stride);
            let mut acc = z;
            if blocked > 0 {
                let mut accs = [-0.0f64; 8];
                accs[0] = z;
                for b in (0..blocked).step_by(k) {
                    for (j, a) in accs.iter_mut().enumerate() {
                        *a += *row.add(b + j) * *rows.x.add(b + j);
                    }
                }
                let [a0, a1, a2, a3, a4, a5, a6, a7] = accs;
                acc = ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7));
            }
            for e in blocked..rows.m {
                acc += *row.add(e) * *rows.x.add(e);
            }
            *out.add(i) = acc;
        }
        i += 1;
    }
}

/// The x86-64 instances: each element one multiplication (when scaled) then one addition,
/// as separate instructions (no FMA), so that every lane computes what the native code's
/// own loop computes.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// [`super::vector`] on AVX-512 vectors of 8 reals.
    ///
    /// # Safety
    ///
    /// As for [`super::vector`], on a host with AVX-512F.
    // SAFETY: a contract on the caller, stated above; `vector` calls it for `Avx512` only.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512<const ADD: bool, const FACTORS: u8>(
        dst: *mut f64,
        src: *const f64,
        (s, r): (f64, f64),
        n: usize,
    ) {
        let (c, q) = (_mm512_set1_pd(s), _mm512_set1_pd(r));
        let step = |d: __m512d, x: __m512d| {
            let t = match FACTORS {
                0 => x,
                1 => _mm512_mul_pd(c, x),
                _ => _mm512_mul_pd(c, _mm512_mul_pd(x, q)),
            };
            if ADD {
                _mm512_add_pd(d, t)
            } else {
                t
            }
        };
        let mut e = 0;
        while e + 8 <= n {
            // SAFETY: `e + 8 <= n`: the 8 reals at `e` are inside both arrays.
            unsafe {
                let x = _mm512_loadu_pd(src.add(e));
                let d = if ADD { _mm512_loadu_pd(dst.add(e)) } else { x };
                _mm512_storeu_pd(dst.add(e), step(d, x));
            }
            e += 8;
        }
        if e < n {
            // The last `n - e` (1 to 7) reals: the lanes past them neither read nor written.
            let k: __mmask8 = (1u8 << (n - e)) - 1;
            // SAFETY: masked loads and stores touch only the lanes of `k`, inside the
            // arrays (masked-off lanes do not fault).
            unsafe {
                let x = _mm512_maskz_loadu_pd(k, src.add(e));
                let d = if ADD {
                    _mm512_maskz_loadu_pd(k, dst.add(e))
                } else {
                    x
                };
                _mm512_mask_storeu_pd(dst.add(e), k, step(d, x));
            }
        }
    }

    /// [`super::dots`] on AVX-512 vectors, four rows at a time: for every row `i` of the
    /// rows it computes, `out[i]`; returns how many rows (a multiple of four) it computed.
    ///
    /// # Safety
    ///
    /// As for [`super::dots`], with rows of at least 8 reals, on a host with AVX-512F.
    // SAFETY: a contract on the caller, stated above; `dots` calls it for `Avx512` only.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn dots_avx512(out: *mut f64, rows: super::Rows, n: usize, z: f64) -> usize {
        let blocked = rows.m / 8 * 8;
        let start = _mm512_set_pd(-0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, z);
        let mut i = 0;
        while i + 4 <= n {
            // SAFETY: rows `i .. i + 4` are below `n`, and every load is of 8 reals at
            // `b + 8 <= blocked <= m` inside a row and inside `x`.
            unsafe {
                let r = |k: usize| rows.w.add((i + k) * rows.stride);
                let (r0, r1, r2, r3) = (r(0), r(1), r(2), r(3));
                let (mut a0, mut a1, mut a2, mut a3) = (start, start, start, start);
                let mut b = 0;
                while b < blocked {
                    let x = _mm512_loadu_pd(rows.x.add(b));
                    a0 = _mm512_add_pd(a0, _mm512_mul_pd(_mm512_loadu_pd(r0.add(b)), x));
                    a1 = _mm512_add_pd(a1, _mm512_mul_pd(_mm512_loadu_pd(r1.add(b)), x));
                    a2 = _mm512_add_pd(a2, _mm512_mul_pd(_mm512_loadu_pd(r2.add(b)), x));
                    a3 = _mm512_add_pd(a3, _mm512_mul_pd(_mm512_loadu_pd(r3.add(b)), x));
                    b += 8;
                }
                for (k, (a, row)) in [(a0, r0), (a1, r1), (a2, r2), (a3, r3)]
                    .into_iter()
                    .enumerate()
                {
                    let half =
                        _mm256_add_pd(_mm512_castpd512_pd256(a), _mm512_extractf64x4_pd::<1>(a));
                    *out.add(i + k) = tail(tree(half), row, rows, blocked);
                }
            }
            i += 4;
        }
        i
    }

    /// [`super::dots`] on AVX2 vectors, four rows at a time, each row's accumulators
    /// `0..4` in one register and `4..8` in another (see [`dots_avx512`]).
    ///
    /// # Safety
    ///
    /// As for [`super::dots`], with rows of at least 8 reals, on a host with AVX2.
    // SAFETY: a contract on the caller, stated above; `dots` calls it for `Avx2` only.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn dots_avx2(out: *mut f64, rows: super::Rows, n: usize, z: f64) -> usize {
        let blocked = rows.m / 8 * 8;
        let low = _mm256_set_pd(-0.0, -0.0, -0.0, z);
        let high = _mm256_set1_pd(-0.0);
        let mut i = 0;
        while i + 4 <= n {
            // SAFETY: as in `dots_avx512`: loads of 4 reals at `b` and `b + 4`, with
            // `b + 8 <= blocked <= m`.
            unsafe {
                let r = |k: usize| rows.w.add((i + k) * rows.stride);
                let rs = [r(0), r(1), r(2), r(3)];
                let mut lo = [low; 4];
                let mut hi = [high; 4];
                let mut b = 0;
                while b < blocked {
                    let x0 = _mm256_loadu_pd(rows.x.add(b));
                    let x1 = _mm256_loadu_pd(rows.x.add(b + 4));
                    for k in 0..4 {
                        lo[k] =
                            _mm256_add_pd(lo[k], _mm256_mul_pd(_mm256_loadu_pd(rs[k].add(b)), x0));
                        hi[k] = _mm256_add_pd(
                            hi[k],
                            _mm256_mul_pd(_mm256_loadu_pd(rs[k].add(b + 4)), x1),
                        );
                    }
                    b += 8;
                }
                for k in 0..4 {
                    let half = _mm256_add_pd(lo[k], hi[k]);
                    *out.add(i + k) = tail(tree(half), rs[k], rows, blocked);
                }
            }
            i += 4;
        }
        i
    }

    /// The last two levels of the reduction's tree on `(c_0, c_1, c_2, c_3)` (the first
    /// level's sums `acc_j + acc_{j+4}`): `(c_0 + c_2) + (c_1 + c_3)`.
    #[target_feature(enable = "avx")]
    #[inline]
    fn tree(half: __m256d) -> f64 {
        let q = _mm_add_pd(
            _mm256_castpd256_pd128(half),
            _mm256_extractf128_pd::<1>(half),
        );
        _mm_cvtsd_f64(q) + _mm_cvtsd_f64(_mm_unpackhi_pd(q, q))
    }

    /// `acc` with the products of the row's elements from `from` to `m` added in order.
    ///
    /// # Safety
    ///
    /// `row` and `rows.x` hold `rows.m` reals.
    // SAFETY: a contract on the caller, stated above; both callers pass a row below `n`.
    #[inline]
    unsafe fn tail(mut acc: f64, row: *const f64, rows: super::Rows, from: usize) -> f64 {
        for e in from..rows.m {
            // SAFETY: the caller's contract: `e < m`.
            unsafe { acc += *row.add(e) * *rows.x.add(e) };
        }
        acc
    }

    /// [`super::vector`] on AVX2 vectors of 4 reals.
    ///
    /// # Safety
    ///
    /// As for [`super::vector`], on a host with AVX2.
    // SAFETY: a contract on the caller, stated above; `vector` calls it for `Avx2` only.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2<const ADD: bool, const FACTORS: u8>(
        dst: *mut f64,
        src: *const f64,
        (s, r): (f64, f64),
        n: usize,
    ) {
        let (c, q) = (_mm256_set1_pd(s), _mm256_set1_pd(r));
        let step = |d: __m256d, x: __m256d| {
            let t = match FACTORS {
                0 => x,
                1 => _mm256_mul_pd(c, x),
                _ => _mm256_mul_pd(c, _mm256_mul_pd(x, q)),
            };
            if ADD {
                _mm256_add_pd(d, t)
            } else {
                t
            }
        };
        let mut e = 0;
        while e + 4 <= n {
            // SAFETY: `e + 4 <= n`: the 4 reals at `e` are inside both arrays.
            unsafe {
                let x = _mm256_loadu_pd(src.add(e));
                let d = if ADD { _mm256_loadu_pd(dst.add(e)) } else { x };
                _mm256_storeu_pd(dst.add(e), step(d, x));
            }
            e += 4;
        }
        if e < n {
            // The last `n - e` (1 to 3) reals: a lane is on where its mask's top bit is.
            let r = (n - e) as i64;
            let k = _mm256_set_epi64x(
                if r > 3 { -1 } else { 0 },
                if r > 2 { -1 } else { 0 },
                if r > 1 { -1 } else { 0 },
                -1,
            );
            // SAFETY: masked loads and stores touch only the lanes of `k`, inside the
            // arrays (masked-off lanes do not fault).
            unsafe {
                let x = _mm256_maskload_pd(src.add(e), k);
                let d = if ADD {
                    _mm256_maskload_pd(dst.add(e), k)
                } else {
                    x
                };
                _mm256_maskstore_pd(dst.add(e), k, step(d, x));
            }
        }
    }
}

macro_rules! instances {
    ($($add:ident, $axpy:ident, $scale:ident, $axpy2:ident, $scale2:ident, $dots:ident => $w:expr;)*) => {$(
        /// `dst[..n] += src[..n]` (see the module's documentation).
        extern "C" fn $add(dst: *mut f64, src: *const f64, n: u64) {
            // SAFETY: the native code passes `n` reals at each address, which its own
            // loop would have read and written (see the module's documentation).
            unsafe { update($w, dst, src, Factors::None, n) }
        }

        /// `dst[..n] += s * src[..n]` (see the module's documentation).
        extern "C" fn $axpy(dst: *mut f64, src: *const f64, s: f64, n: u64) {
            // SAFETY: as for the addition above.
            unsafe { update($w, dst, src, Factors::One(s), n) }
        }

        /// `dst[..n] = s * src[..n]` (see the module's documentation).
        extern "C" fn $scale(dst: *mut f64, src: *const f64, s: f64, n: u64) {
            // SAFETY: as for the addition above.
            unsafe { scale($w, dst, src, Factors::One(s), n) }
        }

        /// `dst[..n] += s * (src[..n] * r)` (see the module's documentation).
        extern "C" fn $axpy2(dst: *mut f64, src: *const f64, s: f64, r: f64, n: u64) {
            // SAFETY: as for the addition above.
            unsafe { update($w, dst, src, Factors::Two(s, r), n) }
        }

        /// `dst[..n] = s * (src[..n] * r)` (see the module's documentation).
        extern "C" fn $scale2(dst: *mut f64, src: *const f64, s: f64, r: f64, n: u64) {
            // SAFETY: as for the addition above.
            unsafe { scale($w, dst, src, Factors::Two(s, r), n) }
        }

        /// `out[i] = reduce + z (map2 * W[i] x)` for `i < n`, row `i` of `W` at
        /// `w + i·stride`, rows and `x` of `m` reals (see the module's documentation).
        extern "C" fn $dots(out: *mut f64, w: *const f64, stride: u64, x: *const f64, m: u64, n: u64, z: f64) {
            let (Ok(stride), Ok(m), Ok(n)) = (usize::try_from(stride), usize::try_from(m), usize::try_from(n)) else {
                return;
            };
            if n == 0 || out.is_null() || (m > 0 && (w.is_null() || x.is_null())) {
                return;
            }
            // SAFETY: the native code passes a fresh destination of `n` reals, and the
            // rows and vector its own loop would have read.
            unsafe { dots($w, out, Rows { w, stride, x, m }, n, z) }
        }
    )*};
}

instances! {
    unfad_add_avx512, unfad_axpy_avx512, unfad_scale_avx512, unfad_axpy2_avx512, unfad_scale2_avx512,
        unfad_dots_avx512 => Width::Avx512;
    unfad_add_avx2, unfad_axpy_avx2, unfad_scale_avx2, unfad_axpy2_avx2, unfad_scale2_avx2,
        unfad_dots_avx2 => Width::Avx2;
    unfad_add_portable, unfad_axpy_portable, unfad_scale_portable, unfad_axpy2_portable,
        unfad_scale2_portable, unfad_dots_portable => Width::Portable;
}

/// The signature of the `dots` instances.
type DotsFn = extern "C" fn(*mut f64, *const f64, u64, *const f64, u64, u64, f64);

/// The routines, for registration with the JIT.
pub(crate) fn symbols() -> [(&'static str, *const u8); 18] {
    type Add = extern "C" fn(*mut f64, *const f64, u64);
    type Axpy = extern "C" fn(*mut f64, *const f64, f64, u64);
    let add = |w: Width, f: Add| (Routine::Add.symbol(w), f as *const u8);
    let axpy = |w: Width, f: Axpy| (Routine::Axpy.symbol(w), f as *const u8);
    let scale = |w: Width, f: Axpy| (Routine::Scale.symbol(w), f as *const u8);
    type Two = extern "C" fn(*mut f64, *const f64, f64, f64, u64);
    let axpy2 = |w: Width, f: Two| (Routine::Axpy2.symbol(w), f as *const u8);
    let scale2 = |w: Width, f: Two| (Routine::Scale2.symbol(w), f as *const u8);
    let dots = |w: Width, f: DotsFn| (Routine::Dots.symbol(w), f as *const u8);
    [
        add(Width::Avx512, unfad_add_avx512),
        add(Width::Avx2, unfad_add_avx2),
        add(Width::Portable, unfad_add_portable),
        axpy(Width::Avx512, unfad_axpy_avx512),
        axpy(Width::Avx2, unfad_axpy_avx2),
        axpy(Width::Portable, unfad_axpy_portable),
        scale(Width::Avx512, unfad_scale_avx512),
        scale(Width::Avx2, unfad_scale_avx2),
        scale(Width::Portable, unfad_scale_portable),
        axpy2(Width::Avx512, unfad_axpy2_avx512),
        axpy2(Width::Avx2, unfad_axpy2_avx2),
        axpy2(Width::Portable, unfad_axpy2_portable),
        scale2(Width::Avx512, unfad_scale2_avx512),
        scale2(Width::Avx2, unfad_scale2_avx2),
        scale2(Width::Portable, unfad_scale2_portable),
        dots(Width::Avx512, unfad_dots_avx512),
        dots(Width::Avx2, unfad_dots_avx2),
        dots(Width::Portable, unfad_dots_portable),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every instance the host runs computes, element by element, the native code's own
    /// loop: `d + s * x` (or `d + x`), for lengths around the vector widths, with the
    /// arrays apart, the same, and overlapping.
    #[test]
    fn the_routines_compute_the_elementwise_update_bit_for_bit() {
        let widths = [Width::Portable]
            .into_iter()
            .chain(Width::host())
            .chain((Width::host() == Some(Width::Avx512)).then_some(Width::Avx2));
        let reals = |seed: u64, n: usize| -> Vec<f64> {
            let mut s = seed;
            (0..n)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    ((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2f64.powi((s % 40) as i32 - 20)
                })
                .collect()
        };
        for w in widths {
            type Scaled = extern "C" fn(*mut f64, *const f64, f64, u64);
            let (add, axpy, scale): (extern "C" fn(*mut f64, *const f64, u64), Scaled, Scaled) =
                match w {
                    Width::Avx512 => (unfad_add_avx512, unfad_axpy_avx512, unfad_scale_avx512),
                    Width::Avx2 => (unfad_add_avx2, unfad_axpy_avx2, unfad_scale_avx2),
                    Width::Portable => (
                        unfad_add_portable,
                        unfad_axpy_portable,
                        unfad_scale_portable,
                    ),
                };
            type Two = extern "C" fn(*mut f64, *const f64, f64, f64, u64);
            let (axpy2, scale2): (Two, Two) = match w {
                Width::Avx512 => (unfad_axpy2_avx512, unfad_scale2_avx512),
                Width::Avx2 => (unfad_axpy2_avx2, unfad_scale2_avx2),
                Width::Portable => (unfad_axpy2_portable, unfad_scale2_portable),
            };
            for n in [0usize, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 1001] {
                let d0 = reals(n as u64 + 1, n);
                let x = reals(n as u64 + 77, n);
                let s = -1.375e-3;
                let mut d = d0.clone();
                axpy(d.as_mut_ptr(), x.as_ptr(), s, n as u64);
                let mut e = d0.clone();
                add(e.as_mut_ptr(), x.as_ptr(), n as u64);
                let mut sc = d0.clone();
                scale(sc.as_mut_ptr(), x.as_ptr(), s, n as u64);
                let r = 3.0625e2;
                let mut d2 = d0.clone();
                axpy2(d2.as_mut_ptr(), x.as_ptr(), s, r, n as u64);
                let mut s2 = d0.clone();
                scale2(s2.as_mut_ptr(), x.as_ptr(), s, r, n as u64);
                for j in 0..n {
                    let t = s * (x[j] * r);
                    assert_eq!(
                        d2[j].to_bits(),
                        (d0[j] + t).to_bits(),
                        "{w:?} axpy2 n={n} at {j}"
                    );
                    assert_eq!(s2[j].to_bits(), t.to_bits(), "{w:?} scale2 n={n} at {j}");
                }
                for j in 0..n {
                    assert_eq!(
                        sc[j].to_bits(),
                        (s * x[j]).to_bits(),
                        "{w:?} scale n={n} at {j}"
                    );
                }
                for j in 0..n {
                    assert_eq!(
                        d[j].to_bits(),
                        (d0[j] + s * x[j]).to_bits(),
                        "{w:?} axpy n={n} at {j}"
                    );
                    assert_eq!(
                        e[j].to_bits(),
                        (d0[j] + x[j]).to_bits(),
                        "{w:?} add n={n} at {j}"
                    );
                }
                // The same array as both operands.
                let mut d = d0.clone();
                let p = d.as_mut_ptr();
                axpy(p, p, s, n as u64);
                for j in 0..n {
                    assert_eq!(
                        d[j].to_bits(),
                        (d0[j] + s * d0[j]).to_bits(),
                        "{w:?} self n={n}"
                    );
                }
                // Overlapping by one element: in order, element by element.
                if n > 1 {
                    let mut d = d0.clone();
                    let p = d.as_mut_ptr();
                    // `p + 1 .. p + n` and `p .. p + n - 1` are inside `d`.
                    axpy(p.wrapping_add(1), p, s, n as u64 - 1);
                    let mut want = d0.clone();
                    for j in 1..n {
                        want[j] += s * want[j - 1];
                    }
                    for j in 0..n {
                        assert_eq!(d[j].to_bits(), want[j].to_bits(), "{w:?} overlap n={n}");
                    }
                }
            }
        }
    }

    /// Every `dots` instance the host runs computes each row's sum of products in the
    /// blocked order the interpreter follows (`reduction::blocked_fold`), bit for bit, for
    /// row counts around four and row lengths around the block, with a padded row stride
    /// and an initial value other than zero.
    #[test]
    fn the_dots_routines_sum_in_the_reductions_order() {
        let widths = [Width::Portable]
            .into_iter()
            .chain(Width::host())
            .chain((Width::host() == Some(Width::Avx512)).then_some(Width::Avx2));
        let mut seed = 12345u64;
        let mut real = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            ((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2f64.powi((seed % 30) as i32 - 15)
        };
        for w in widths {
            let dots: DotsFn = match w {
                Width::Avx512 => unfad_dots_avx512,
                Width::Avx2 => unfad_dots_avx2,
                Width::Portable => unfad_dots_portable,
            };
            for n in [0usize, 1, 3, 4, 5, 8, 11] {
                for m in [0usize, 1, 7, 8, 9, 15, 16, 17, 32, 33, 100] {
                    for (stride, z) in [(m, 0.0), (m + 3, -2.5)] {
                        let wm: Vec<f64> = (0..n * stride).map(|_| real()).collect();
                        let x: Vec<f64> = (0..m).map(|_| real()).collect();
                        let mut out = vec![f64::NAN; n];
                        dots(
                            out.as_mut_ptr(),
                            wm.as_ptr(),
                            stride as u64,
                            x.as_ptr(),
                            m as u64,
                            n as u64,
                            z,
                        );
                        for i in 0..n {
                            let products: Vec<f64> =
                                (0..m).map(|e| wm[i * stride + e] * x[e]).collect();
                            let want = unfad_syntax::reduction::blocked_fold(
                                z,
                                || -0.0,
                                &products,
                                |a, b| Ok::<f64, ()>(a + b),
                            )
                            .unwrap();
                            assert_eq!(
                                out[i].to_bits(),
                                want.to_bits(),
                                "{w:?} n={n} m={m} stride={stride} row {i}"
                            );
                        }
                    }
                }
            }
        }
    }
}
