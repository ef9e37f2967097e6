//! The scalar twin: [`Arith`] on `f64`, the instance the interpreter and constant folding
//! compute with, and the host's FMA, which decides whether its `mul_add` is fused.

use crate::arith::{Arith, Cmp};
use crate::table::Table;

/// [`Arith`] on `f64`; `mul_add` is fused when `FUSED` (`f64::mul_add`, one rounding) and a
/// product then a sum otherwise (Rust never contracts `a * b + c`).
#[derive(Copy, Clone, Debug, Default)]
pub struct Scalar<const FUSED: bool>;

/// Whether the host has fused multiply-add; kernels fuse `mul_add` exactly when it does, in
/// the native code and in the twin alike (the JIT checks that its ISA agrees). The
/// standard library caches the detection.
pub fn host_has_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("fma")
    }
    #[cfg(target_arch = "aarch64")]
    {
        true
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

impl<const FUSED: bool> Arith for Scalar<FUSED> {
    type Real = f64;
    type Int = i64;
    type Mask = bool;

    #[inline(always)]
    fn fused(&self) -> bool {
        FUSED
    }
    #[inline(always)]
    fn real(&mut self, c: f64) -> f64 {
        c
    }
    #[inline(always)]
    fn int(&mut self, c: i64) -> i64 {
        c
    }
    #[inline(always)]
    fn add(&mut self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn sub(&mut self, a: f64, b: f64) -> f64 {
        a - b
    }
    #[inline(always)]
    fn mul(&mut self, a: f64, b: f64) -> f64 {
        a * b
    }
    #[inline(always)]
    fn div(&mut self, a: f64, b: f64) -> f64 {
        a / b
    }
    #[inline(always)]
    fn mul_add(&mut self, a: f64, b: f64, c: f64) -> f64 {
        if FUSED {
            a.mul_add(b, c)
        } else {
            a * b + c
        }
    }
    #[inline(always)]
    fn neg(&mut self, a: f64) -> f64 {
        -a
    }
    #[inline(always)]
    fn abs(&mut self, a: f64) -> f64 {
        a.abs()
    }
    #[inline(always)]
    fn cmp(&mut self, op: Cmp, a: f64, b: f64) -> bool {
        match op {
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
        }
    }
    #[inline(always)]
    fn select(&mut self, m: bool, a: f64, b: f64) -> f64 {
        if m {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn to_bits(&mut self, a: f64) -> i64 {
        a.to_bits() as i64
    }
    #[inline(always)]
    fn bits_to_real(&mut self, i: i64) -> f64 {
        f64::from_bits(i as u64)
    }
    #[inline(always)]
    fn iadd(&mut self, a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    #[inline(always)]
    fn isub(&mut self, a: i64, b: i64) -> i64 {
        a.wrapping_sub(b)
    }
    #[inline(always)]
    fn iand(&mut self, a: i64, b: i64) -> i64 {
        a & b
    }
    #[inline(always)]
    fn ixor(&mut self, a: i64, b: i64) -> i64 {
        a ^ b
    }
    #[inline(always)]
    fn shl(&mut self, a: i64, n: u32) -> i64 {
        a.wrapping_shl(n)
    }
    #[inline(always)]
    fn sshr(&mut self, a: i64, n: u32) -> i64 {
        a.wrapping_shr(n)
    }
    #[inline(always)]
    fn ushr(&mut self, a: i64, n: u32) -> i64 {
        ((a as u64) >> n) as i64
    }
    #[inline(always)]
    fn ieq(&mut self, a: i64, b: i64) -> bool {
        a == b
    }
    #[inline(always)]
    fn lookup(&mut self, t: Table, i: i64, column: usize) -> f64 {
        t.get(i, column)
    }
}
