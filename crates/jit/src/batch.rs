//! The functions native code calls to apply a math kernel to a buffer of reals in place
//! (`lower/batch.rs` makes the calls): the kernels on four or eight lanes at a time, in
//! AVX2 or AVX-512 registers ([`unfad_kernels::apply_avx2`], [`unfad_kernels::apply_avx512`];
//! [`unfad_kernels::apply_lanes`] on four where the host has neither), where the code
//! Cranelift emits has two. With
//! `compiled.rs` this is the crate's unsafe boundary: `compiled.rs` is where Rust calls
//! native code, this module where native code calls Rust with a pointer.
//!
//! Each function takes the kernel's index in [`Kernel::ALL`], the buffer's address and its
//! length in reals. The native code passes a region of its own stack frame (a stack slot
//! of [`crate::lower::BATCH_CHUNK`] reals per kernel site) and a length it has clamped to
//! that region, so the slice is valid and nothing else refers to it during the call.
//! Every instance computes, lane by lane, what the scalar twin computes
//! ([`Kernel::eval`]), so results equal the interpreter's bit for bit whichever runs.

use unfad_kernels::{apply_lanes, host_has_fma, Kernel};

/// The instance the native code's batches run on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Width {
    /// Eight lanes: one AVX-512 register per value.
    Avx512,
    /// Four lanes: one AVX2 register per value.
    Avx2,
    /// Four lanes compiled for the baseline (SSE2, `mul_add` fused as the host decides):
    /// for tests on hosts without AVX2, which check the batching machinery itself.
    Portable,
}

impl Width {
    /// The widest instance this host runs, if it is wider than the JIT's own code: AVX2
    /// and FMA at least.
    pub(crate) fn host() -> Option<Width> {
        match unfad_kernels::host_lanes() {
            Some(8) => Some(Width::Avx512),
            Some(4) => Some(Width::Avx2),
            _ => None,
        }
    }

    /// The reals the instance computes at once.
    pub(crate) fn lanes(self) -> usize {
        match self {
            Width::Avx512 => 8,
            Width::Avx2 => 4,
            Width::Portable => 4,
        }
    }

    /// The symbol of the function running this instance.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            Width::Avx512 => "unfad_batch_avx512",
            Width::Avx2 => "unfad_batch_avx2",
            Width::Portable => "unfad_batch_portable",
        }
    }
}

/// The kernel with index `k` in [`Kernel::ALL`], and the buffer `ptr[..n]`.
///
/// # Safety
///
/// `ptr` points to `n` reals that nothing else reads or writes during the call.
// SAFETY: a contract on the caller, stated above; every caller is a batch function, whose
// caller, the native code, passes a region of its own stack of at least `n` reals.
unsafe fn parts<'b>(k: u64, ptr: *mut f64, n: u64) -> Option<(Kernel, &'b mut [f64])> {
    let kernel = *Kernel::ALL.get(usize::try_from(k).ok()?)?;
    if ptr.is_null() || n == 0 {
        return None;
    }
    let n = usize::try_from(n).ok()?;
    // SAFETY: the caller's contract: `n` reals at `ptr`, ours alone for the call.
    Some((kernel, unsafe { std::slice::from_raw_parts_mut(ptr, n) }))
}

/// Kernel `k` on `ptr[..n]` in place, eight lanes at a time (AVX-512), or four (AVX2)
/// where this host runs that kernel faster so ([`prefers_avx2`]).
extern "C" fn unfad_batch_avx512(k: u64, ptr: *mut f64, n: u64) {
    // SAFETY: the native code passes a stack region of its own of at least `n` reals
    // (see the module's documentation).
    if let Some((kernel, xs)) = unsafe { parts(k, ptr, n) } {
        if prefers_avx2(kernel) {
            avx2(kernel, xs);
        } else {
            avx512(kernel, xs);
        }
    }
}

/// Per kernel (by index in [`Kernel::ALL`]), whether [`prefers_avx2`] chose AVX2.
static PREFER_AVX2: [std::sync::OnceLock<bool>; Kernel::ALL.len()] =
    [const { std::sync::OnceLock::new() }; Kernel::ALL.len()];

/// Whether, on this AVX-512 host, kernel `k` runs faster on four lanes of AVX2 than on
/// eight of AVX-512: measured once per process, the first time it is asked (the JIT
/// asks when it emits a batch of `k`, so that no run pays for it). Which wins depends on
/// the processor, not on the kernel alone: where AVX-512 is two 256-bit halves and a
/// gather is slow (AMD Zen 4), the kernels that read tables (`exp`, `tanh`, `sigmoid`) ran
/// 1.4-2.4x slower on AVX-512, whose code gathers, than on AVX2, whose code loads each
/// lane's entry; the others ran faster (on an Intel Xeon, AVX-512 won every kernel). Both instances compute the scalar twin's
/// operations lane by lane, so the choice changes no result, only the time.
pub(crate) fn prefers_avx2(k: Kernel) -> bool {
    let i = usize::try_from(index(k)).unwrap_or(0);
    *PREFER_AVX2[i].get_or_init(|| measure_prefers_avx2(k))
}

/// The race behind [`prefers_avx2`]: both instances on one chunk of reals of many
/// magnitudes, in turn, the fastest of several trials each (about 50 µs in all).
fn measure_prefers_avx2(k: Kernel) -> bool {
    if Width::host() != Some(Width::Avx512) {
        return false;
    }
    let base: Vec<f64> = (0..crate::lower::BATCH_CHUNK)
        .map(|i| {
            let u = (i as f64 * 0.618_033_988_749_895).fract();
            // Positive for the logarithms, spread over the range the others reduce.
            if matches!(k, Kernel::Log | Kernel::Log1p) {
                0.5 + 8.0 * u
            } else {
                -8.0 + 16.0 * u
            }
        })
        .collect();
    let mut buf = base.clone();
    let mut time = |wide: bool| {
        let start = std::time::Instant::now();
        for _ in 0..8 {
            buf.copy_from_slice(&base);
            if wide {
                avx512(k, &mut buf);
            } else {
                avx2(k, &mut buf);
            }
            std::hint::black_box(&mut buf);
        }
        start.elapsed()
    };
    let (mut narrow, mut wide) = (std::time::Duration::MAX, std::time::Duration::MAX);
    for _ in 0..5 {
        narrow = narrow.min(time(false));
        wide = wide.min(time(true));
    }
    narrow < wide
}

#[cfg(target_arch = "x86_64")]
fn avx512(kernel: Kernel, xs: &mut [f64]) {
    // SAFETY: the JIT calls the batch function only where `Width::host` found AVX-512 (F
    // and DQ) and FMA on this host.
    unsafe { unfad_kernels::apply_avx512(kernel, xs) }
}

#[cfg(target_arch = "x86_64")]
fn avx2(kernel: Kernel, xs: &mut [f64]) {
    // SAFETY: the JIT calls the batch function only where `Width::host` found AVX2 and
    // FMA on this host.
    unsafe { unfad_kernels::apply_avx2(kernel, xs) }
}

/// Elsewhere no host has these instances ([`Width::host`] is `None`).
#[cfg(not(target_arch = "x86_64"))]
fn avx512(kernel: Kernel, xs: &mut [f64]) {
    apply_lanes::<4, true>(kernel, xs)
}

/// Elsewhere no host has these instances ([`Width::host`] is `None`).
#[cfg(not(target_arch = "x86_64"))]
fn avx2(kernel: Kernel, xs: &mut [f64]) {
    apply_lanes::<4, true>(kernel, xs)
}

/// Kernel `k` on `ptr[..n]` in place, eight lanes at a time (AVX2).
extern "C" fn unfad_batch_avx2(k: u64, ptr: *mut f64, n: u64) {
    // SAFETY: the native code passes a stack region of its own of at least `n` reals
    // (see the module's documentation).
    if let Some((kernel, xs)) = unsafe { parts(k, ptr, n) } {
        avx2(kernel, xs);
    }
}

/// Kernel `k` on `ptr[..n]` in place, four lanes at a time in baseline code.
extern "C" fn unfad_batch_portable(k: u64, ptr: *mut f64, n: u64) {
    // SAFETY: the native code passes a stack region of its own of at least `n` reals
    // (see the module's documentation).
    if let Some((kernel, xs)) = unsafe { parts(k, ptr, n) } {
        apply(Width::Portable, kernel, xs);
    }
}

/// Kernel `k` on `xs` in place by the instance `w`, as the native code's batches run it.
/// `w` must be [`Width::Portable`] or one that [`Width::host`] allows.
pub(crate) fn apply(w: Width, k: Kernel, xs: &mut [f64]) {
    match (w, host_has_fma()) {
        (Width::Portable, true) => apply_lanes::<4, true>(k, xs),
        (Width::Portable, false) => apply_lanes::<4, false>(k, xs),
        (Width::Avx2, _) => avx2(k, xs),
        (Width::Avx512, _) => avx512(k, xs),
    }
}

/// The index of `k` in [`Kernel::ALL`], which the batch functions take.
pub(crate) fn index(k: Kernel) -> u64 {
    Kernel::ALL.iter().position(|&x| x == k).unwrap_or(0) as u64
}

/// The batch functions, for registration with the JIT.
pub(crate) fn symbols() -> [(&'static str, *const u8); 3] {
    type Batch = extern "C" fn(u64, *mut f64, u64);
    [
        (
            Width::Avx512.symbol(),
            unfad_batch_avx512 as Batch as *const u8,
        ),
        (Width::Avx2.symbol(), unfad_batch_avx2 as Batch as *const u8),
        (
            Width::Portable.symbol(),
            unfad_batch_portable as Batch as *const u8,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The batch functions compute what the scalar twin computes, on every width the host
    /// has: random reals of many magnitudes, the special values, and every length up to a
    /// few groups (the padded last group).
    #[test]
    fn batches_equal_the_scalar_twin_bit_for_bit() {
        let mut s = 0x243f6a8885a308d3u64;
        let mut xs: Vec<f64> = (0..4000)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let m = (s >> 11) as f64 / (1u64 << 53) as f64;
                let e = (s % 48) as i32 - 24;
                if s & 1 == 0 {
                    m * 2f64.powi(e)
                } else {
                    -m * 2f64.powi(e)
                }
            })
            .collect();
        xs.extend([
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            5e-324,
            709.8,
            -745.1,
            7e6,
            -1e300,
        ]);
        let widths = [Width::Portable]
            .into_iter()
            .chain(Width::host())
            .chain((Width::host() == Some(Width::Avx512)).then_some(Width::Avx2));
        for w in widths {
            for k in Kernel::ALL {
                for len in [1, 3, 8, 17, 31, xs.len()] {
                    let mut ys = xs[..len].to_vec();
                    apply(w, k, &mut ys);
                    for (x, y) in xs.iter().zip(&ys) {
                        let want = k.eval(*x);
                        assert_eq!(
                            y.to_bits(),
                            want.to_bits(),
                            "{}({x:e}) by {w:?}: {y:e}, the interpreter {want:e}",
                            k.name()
                        );
                    }
                }
            }
        }
    }

    /// The batch function of AVX-512 hosts computes the scalar twin's results whichever
    /// instance its race chose for a kernel, and the choice is made once: asked again, it
    /// answers the same. Elsewhere there is nothing to choose.
    #[test]
    fn the_chosen_instance_is_fixed_per_kernel_and_computes_the_scalar_twin() {
        for k in Kernel::ALL {
            let first = prefers_avx2(k);
            assert_eq!(prefers_avx2(k), first, "{}", k.name());
            if Width::host() != Some(Width::Avx512) {
                assert!(!first, "{}: no AVX-512, nothing to prefer", k.name());
                continue;
            }
            let xs: Vec<f64> = (0..300).map(|i| -9.0 + 0.061 * i as f64).collect();
            let mut ys = xs.clone();
            // `ys` holds `ys.len()` reals that nothing else touches during the call.
            unfad_batch_avx512(index(k), ys.as_mut_ptr(), ys.len() as u64);
            for (x, y) in xs.iter().zip(&ys) {
                assert_eq!(y.to_bits(), k.eval(*x).to_bits(), "{}({x})", k.name());
            }
        }
    }
}
