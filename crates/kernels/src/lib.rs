//! unfad's math kernels: `exp`, `log`, `tanh`, `sigmoid`, `log1p`, `expm1`, `sin` and `cos`,
//! by range reduction and a polynomial (`exp`, and the exponential inside `tanh` and
//! `sigmoid`, with a table of `2^(j/128)` read by [`Arith::lookup`]).
//!
//! Each kernel is written once, as a generic function over [`Arith`], the few arithmetic
//! operations it uses (IEEE operations on reals, `mul_add`, comparisons and selects, and
//! integer operations on the bits of a real for building and taking apart powers of two).
//! There are two instances: [`Scalar`] computes on `f64` (the *scalar twin*, which the
//! interpreter and constant folding call through [`Kernel::eval`]), and the JIT's emits
//! Cranelift instructions into the function it builds. Both perform the same IEEE
//! operations in the same order, so native code equals the interpreter bit for bit by
//! construction, with no call of the platform's libm.
//!
//! Kernels have no data-dependent branches: special values (NaN, infinities, overflow,
//! underflow, signed zeros) are handled by selects, so that a later instance on two lanes
//! (`f64x2`) can reuse the same definitions. The one branch is outside the kernels: `sin`
//! and `cos` of arguments beyond [`TRIG_BOUND`] (and of NaN and infinities) call the
//! standard library, on both sides ([`Kernel::eval`] here, a cold block in the JIT).
//!
//! Whether `mul_add` is fused is a fact about the host ([`host_has_fma`]) that both
//! instances read, so that they agree on every host; the twin can be run with either
//! setting ([`Kernel::eval_with`]) and the tests check both. docs/kernels.md has the
//! measured accuracy (at most 1 ulp) and speed.

// Every `unsafe` block of the crate is in `x86`: the vector intrinsics of the x86-64
// instances, `unsafe` to call outside the functions whose target features they need.
#![deny(unsafe_code)]

mod arith;
mod exp;
mod log;
mod scalar;
mod table;
mod trig;
mod wide;
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86;

pub use arith::{Arith, Cmp};
pub use scalar::{host_has_fma, Scalar};
pub use table::{Table, TABLES};
pub use trig::TRIG_BOUND;
pub use wide::{apply_lanes, host_lanes, Lanes};
#[cfg(target_arch = "x86_64")]
pub use x86::{apply_avx2, apply_avx512};

/// The functions computed by a kernel.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Kernel {
    Exp,
    Log,
    Tanh,
    Sigmoid,
    Log1p,
    Expm1,
    Sin,
    Cos,
}

impl Kernel {
    pub const ALL: [Kernel; 8] = [
        Kernel::Exp,
        Kernel::Log,
        Kernel::Tanh,
        Kernel::Sigmoid,
        Kernel::Log1p,
        Kernel::Expm1,
        Kernel::Sin,
        Kernel::Cos,
    ];

    /// The function's name in unfad's language.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Exp => "exp",
            Kernel::Log => "log",
            Kernel::Tanh => "tanh",
            Kernel::Sigmoid => "sigmoid",
            Kernel::Log1p => "log1p",
            Kernel::Expm1 => "expm1",
            Kernel::Sin => "sin",
            Kernel::Cos => "cos",
        }
    }

    /// The kernel on `x` in the arithmetic `a` (no branch: for `sin` and `cos`, the result
    /// is NaN unless `|x| <= TRIG_BOUND`, see [`Kernel::needs_fallback`]).
    #[inline(always)]
    pub fn emit<A: Arith>(self, a: &mut A, x: A::Real) -> A::Real {
        let y = self.emit_finite(a, x);
        // A NaN argument is the result, bit for bit: the NaN the arithmetic would make of
        // it depends on the instructions (a fused multiply-add in hardware or in libm's
        // `fma` keeps or drops its sign), so the native code and its twin could differ.
        let nan = arith::Cmp::Ne;
        let is_nan = a.cmp(nan, x, x);
        a.select(is_nan, x, y)
    }

    #[inline(always)]
    fn emit_finite<A: Arith>(self, a: &mut A, x: A::Real) -> A::Real {
        match self {
            Kernel::Exp => exp::exp(a, x),
            Kernel::Log => log::log(a, x),
            Kernel::Tanh => exp::tanh(a, x),
            Kernel::Sigmoid => exp::sigmoid(a, x),
            Kernel::Log1p => log::log1p(a, x),
            Kernel::Expm1 => exp::expm1(a, x),
            Kernel::Sin => trig::sin(a, x),
            Kernel::Cos => trig::cos(a, x),
        }
    }

    /// Whether the kernel reads a table ([`Arith::lookup`]): native code then needs the
    /// tables' address ([`TABLES`]).
    pub fn reads_tables(self) -> bool {
        matches!(self, Kernel::Exp | Kernel::Tanh | Kernel::Sigmoid)
    }

    /// Whether the value at `x` comes from the standard library rather than the kernel:
    /// `sin` and `cos` of NaN, of infinities and of `|x| > TRIG_BOUND` (where the
    /// kernel's reduction modulo π/2 would lose accuracy).
    pub fn needs_fallback(self, x: f64) -> bool {
        matches!(self, Kernel::Sin | Kernel::Cos) && (x.abs() > TRIG_BOUND || x.is_nan())
    }

    /// The standard library's function, which the fallback calls.
    pub fn std(self, x: f64) -> f64 {
        match self {
            Kernel::Exp => x.exp(),
            Kernel::Log => x.ln(),
            Kernel::Tanh => x.tanh(),
            Kernel::Sigmoid => {
                if x >= 0.0 {
                    1.0 / (1.0 + (-x).exp())
                } else {
                    let e = x.exp();
                    e / (1.0 + e)
                }
            }
            Kernel::Log1p => x.ln_1p(),
            Kernel::Expm1 => x.exp_m1(),
            Kernel::Sin => x.sin(),
            Kernel::Cos => x.cos(),
        }
    }

    /// The function at `x`, with `mul_add` fused exactly when the host has FMA: the value
    /// the interpreter and the native code compute.
    #[inline]
    pub fn eval(self, x: f64) -> f64 {
        self.eval_with(host_has_fma(), x)
    }

    /// The function at `x`, with `mul_add` fused or not as `fused` says.
    #[inline]
    pub fn eval_with(self, fused: bool, x: f64) -> f64 {
        if self.needs_fallback(x) {
            return self.std(x);
        }
        if fused {
            // Compiled for FMA where the host has it: each `mul_add` one instruction, where
            // this crate's baseline code calls libm's `fma` (the same value, rounded once,
            // at five times the cost of the kernel).
            #[cfg(target_arch = "x86_64")]
            if let Some(y) = x86::fused_twin(self, x) {
                return y;
            }
            self.emit(&mut Scalar::<true>, x)
        } else {
            self.emit(&mut Scalar::<false>, x)
        }
    }
}

/// What the tests of the wide instances share.
#[cfg(test)]
pub(crate) mod testing {
    /// `count` reals from the xorshift sequence started at `seed`: uniform mantissas, both
    /// signs, exponents over the `binades` binades centred on 1.
    pub fn random_reals(seed: u64, count: usize, binades: u64) -> Vec<f64> {
        let mut s = seed;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        (0..count)
            .map(|_| {
                let r = next();
                let mag = (r >> 11) as f64 / (1u64 << 53) as f64;
                let e = (next() % binades) as i32 - (binades / 2) as i32;
                let sign = if r & 1 == 0 { 1.0 } else { -1.0 };
                sign * mag * 2f64.powi(e)
            })
            .collect()
    }
}
