//! The vector routines native code calls on arrays in memory (`lower/routines.rs` makes the
//! calls): in-place row updates that the code Cranelift emits runs two reals per
//! instruction, compiled here for the host's widest vectors. With `compiled.rs` and
//! `batch.rs` this is the crate's unsafe boundary: native code calls Rust with pointers.
//!
//! - `add`: `dst[e] = dst[e] + src[e]`;
//! - `axpy`: `dst[e] = dst[e] + s * src[e]`.
//!
//! Each element is one addition (after one multiplication for `axpy`), the accumulator's
//! element first, as the native code's own loop computes it: the elements are
//! independent, so any vector width gives the same bits, and nothing is fused (no FMA).
//!
//! The native code passes the addresses of `n` reals each that its own loop would have
//! read and written (its lengths come from the shape analysis, as for every access it
//! makes). `dst` and `src` are the same array, or do not overlap; a partial overlap,
//! which the lowering never makes, is computed element by element in order.

use crate::batch::Width;

/// A routine of this module, as the native code names it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Routine {
    Add,
    Axpy,
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
unsafe fn update(w: Width, dst: *mut f64, src: *const f64, s: Option<f64>, n: u64) {
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
            match s {
                Some(s) => vector::<true>(w, dst, src, s, n),
                None => vector::<false>(w, dst, src, 0.0, n),
            }
        }
    } else {
        for e in 0..n {
            // SAFETY: the caller's contract: `e < n` is inside both arrays.
            unsafe {
                let x = *src.add(e);
                let v = *dst.add(e);
                *dst.add(e) = v + s.map_or(x, |s| s * x);
            }
        }
    }
}

/// `dst[e] = dst[e] + s * src[e]` (`SCALED`) or `dst[e] + src[e]`, for `e < n`, on `w`'s
/// vectors: whole vectors, then one masked vector for the rest (rows of tens of reals, the
/// common case, would leave an unrolled loop's tail to run element by element).
///
/// # Safety
///
/// As for [`update`], with the arrays one or apart.
// SAFETY: a contract on the caller, stated above; its one caller, `update`, keeps it.
unsafe fn vector<const SCALED: bool>(w: Width, dst: *mut f64, src: *const f64, s: f64, n: usize) {
    match w {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract, and `w` is allowed here: AVX-512 was found.
        Width::Avx512 => unsafe { x86::avx512::<SCALED>(dst, src, s, n) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above: AVX2 was found.
        Width::Avx2 => unsafe { x86::avx2::<SCALED>(dst, src, s, n) },
        _ => {
            for e in 0..n {
                // SAFETY: the caller's contract: `e < n` is inside both arrays.
                unsafe {
                    let x = *src.add(e);
                    let t = if SCALED { s * x } else { x };
                    *dst.add(e) = *dst.add(e) + t;
                }
            }
        }
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
    pub(super) unsafe fn avx512<const SCALED: bool>(
        dst: *mut f64,
        src: *const f64,
        s: f64,
        n: usize,
    ) {
        let c = _mm512_set1_pd(s);
        let step =
            |d: __m512d, x: __m512d| _mm512_add_pd(d, if SCALED { _mm512_mul_pd(c, x) } else { x });
        let mut e = 0;
        while e + 8 <= n {
            // SAFETY: `e + 8 <= n`: the 8 reals at `e` are inside both arrays.
            unsafe {
                let x = _mm512_loadu_pd(src.add(e));
                let d = _mm512_loadu_pd(dst.add(e));
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
                let d = _mm512_maskz_loadu_pd(k, dst.add(e));
                _mm512_mask_storeu_pd(dst.add(e), k, step(d, x));
            }
        }
    }

    /// [`super::vector`] on AVX2 vectors of 4 reals.
    ///
    /// # Safety
    ///
    /// As for [`super::vector`], on a host with AVX2.
    // SAFETY: a contract on the caller, stated above; `vector` calls it for `Avx2` only.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2<const SCALED: bool>(
        dst: *mut f64,
        src: *const f64,
        s: f64,
        n: usize,
    ) {
        let c = _mm256_set1_pd(s);
        let step =
            |d: __m256d, x: __m256d| _mm256_add_pd(d, if SCALED { _mm256_mul_pd(c, x) } else { x });
        let mut e = 0;
        while e + 4 <= n {
            // SAFETY: `e + 4 <= n`: the 4 reals at `e` are inside both arrays.
            unsafe {
                let x = _mm256_loadu_pd(src.add(e));
                let d = _mm256_loadu_pd(dst.add(e));
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
                let d = _mm256_maskload_pd(dst.add(e), k);
                _mm256_maskstore_pd(dst.add(e), k, step(d, x));
            }
        }
    }
}

macro_rules! instances {
    ($($add:ident, $axpy:ident => $w:expr;)*) => {$(
        /// `dst[..n] += src[..n]` (see the module's documentation).
        extern "C" fn $add(dst: *mut f64, src: *const f64, n: u64) {
            // SAFETY: the native code passes `n` reals at each address, which its own
            // loop would have read and written (see the module's documentation).
            unsafe { update($w, dst, src, None, n) }
        }

        /// `dst[..n] += s * src[..n]` (see the module's documentation).
        extern "C" fn $axpy(dst: *mut f64, src: *const f64, s: f64, n: u64) {
            // SAFETY: as for the addition above.
            unsafe { update($w, dst, src, Some(s), n) }
        }
    )*};
}

instances! {
    unfad_add_avx512, unfad_axpy_avx512 => Width::Avx512;
    unfad_add_avx2, unfad_axpy_avx2 => Width::Avx2;
    unfad_add_portable, unfad_axpy_portable => Width::Portable;
}

/// The routines, for registration with the JIT.
pub(crate) fn symbols() -> [(&'static str, *const u8); 6] {
    type Add = extern "C" fn(*mut f64, *const f64, u64);
    type Axpy = extern "C" fn(*mut f64, *const f64, f64, u64);
    let add = |w: Width, f: Add| (Routine::Add.symbol(w), f as *const u8);
    let axpy = |w: Width, f: Axpy| (Routine::Axpy.symbol(w), f as *const u8);
    [
        add(Width::Avx512, unfad_add_avx512),
        add(Width::Avx2, unfad_add_avx2),
        add(Width::Portable, unfad_add_portable),
        axpy(Width::Avx512, unfad_axpy_avx512),
        axpy(Width::Avx2, unfad_axpy_avx2),
        axpy(Width::Portable, unfad_axpy_portable),
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
            let (add, axpy): (extern "C" fn(*mut f64, *const f64, u64), _) = match w {
                Width::Avx512 => (
                    unfad_add_avx512,
                    unfad_axpy_avx512 as extern "C" fn(*mut f64, *const f64, f64, u64),
                ),
                Width::Avx2 => (unfad_add_avx2, unfad_axpy_avx2),
                Width::Portable => (unfad_add_portable, unfad_axpy_portable),
            };
            for n in [0usize, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 1001] {
                let d0 = reals(n as u64 + 1, n);
                let x = reals(n as u64 + 77, n);
                let s = -1.375e-3;
                let mut d = d0.clone();
                axpy(d.as_mut_ptr(), x.as_ptr(), s, n as u64);
                let mut e = d0.clone();
                add(e.as_mut_ptr(), x.as_ptr(), n as u64);
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
}
