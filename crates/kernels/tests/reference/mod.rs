//! The high-precision reference of the accuracy tests and of the `accuracy` example: each
//! kernel's function at 256 bits (astro-float), the error of an `f64` result in ulps, and
//! the random points the measurements draw.

use astro_float::{BigFloat, Consts, RoundingMode};
use unfad_kernels::Kernel;

/// The precision of the reference, in bits: enough for `sin` and `cos` up to 2^22 (the
/// reduction loses at most about 90 bits there) and for `1 + x` with `|x| >= 2^-100`.
const P: usize = 256;

/// The precision used for `k`: [`P`] where needed, 128 bits (faster) elsewhere.
fn precision(k: Kernel) -> usize {
    match k {
        Kernel::Sin | Kernel::Cos | Kernel::Log1p => P,
        _ => 128,
    }
}
const RM: RoundingMode = RoundingMode::ToEven;

pub struct Reference {
    cc: Consts,
}

impl Default for Reference {
    fn default() -> Self {
        Reference {
            cc: Consts::new().expect("astro-float's constants"),
        }
    }
}

/// `x` exactly (astro-float's conversion of subnormals is not exact, so they are scaled).
fn big(x: f64) -> BigFloat {
    if x != 0.0 && x.abs() < f64::MIN_POSITIVE {
        let scaled = BigFloat::from_f64(x * 2f64.powi(600), P);
        scaled.mul(&BigFloat::from_f64(2f64.powi(-600), P), P, RM)
    } else {
        BigFloat::from_f64(x, P)
    }
}

impl Reference {
    /// `f(x)` to `P` bits.
    pub fn value(&mut self, k: Kernel, x: f64) -> BigFloat {
        let cc = &mut self.cc;
        let p = precision(k);
        let b = big(x);
        let one = big(1.0);
        match k {
            Kernel::Exp => b.exp(p, RM, cc),
            Kernel::Log => b.ln(p, RM, cc),
            Kernel::Tanh => b.tanh(p, RM, cc),
            Kernel::Sigmoid => {
                let e = b.neg().exp(p, RM, cc);
                one.div(&one.add(&e, p, RM), p, RM)
            }
            Kernel::Log1p if x.abs() < 2f64.powi(-100) => {
                // x - x^2/2, exact enough (the next term is below 2^-200 relative).
                let sq = b.mul(&b, p, RM);
                b.sub(&sq.div(&big(2.0), p, RM), p, RM)
            }
            Kernel::Log1p => {
                // 1 + x is exact at P bits for |x| >= 2^-100 and |x| < 2^150.
                one.add(&b, 2 * p + 1100, RM).ln(p, RM, cc)
            }
            Kernel::Expm1 if x.abs() < 2f64.powi(-100) => {
                let sq = b.mul(&b, p, RM);
                b.add(&sq.div(&big(2.0), p, RM), p, RM)
            }
            Kernel::Expm1 => b.exp(2 * p, RM, cc).sub(&one, p, RM),
            Kernel::Sin => b.sin(p, RM, cc),
            Kernel::Cos => b.cos(p, RM, cc),
        }
    }
}

/// `|y - r|` in ulps of `r`.
pub fn error_in_ulps(r: &BigFloat, y: f64) -> f64 {
    if r.is_nan() {
        return if y.is_nan() { 0.0 } else { f64::INFINITY };
    }
    if y.is_nan() {
        return f64::INFINITY;
    }
    if r.is_inf() {
        let right = y.is_infinite() && (y > 0.0) == r.is_inf_pos();
        return if right { 0.0 } else { f64::INFINITY };
    }
    if r.is_zero() {
        return if y == 0.0 { 0.0 } else { f64::INFINITY };
    }
    // astro-float's exponent e: 2^(e-1) <= |r| < 2^e.
    let e = r.exponent().expect("a finite reference") as i64;
    if y.is_infinite() {
        // Right when r rounds to infinity: |r| >= MAX + ulp/2 = 2^1024 (1 - 2^-54).
        let limit = big(f64::MAX).add(&big(2f64.powi(970)), P, RM);
        let right = r.abs().cmp(&limit).is_some_and(|c| c >= 0) && (y > 0.0) == r.is_positive();
        return if right { 0.0 } else { f64::INFINITY };
    }
    let ulp_exp = (e - 1 - 52).max(-1074);
    let d = big(y).sub(r, P, RM);
    if d.is_zero() {
        return 0.0;
    }
    let (m, _, _, de, _) = d.as_raw_parts().expect("a finite difference");
    let top = *m.last().expect("a mantissa word") as f64;
    top * 2f64.powi((de as i64 - 64 - ulp_exp) as i32)
}

/// A small deterministic generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    /// `2^e (1 + f)` with `e` uniform in `[lo, hi)` and a random significand, subnormals
    /// below -1022: magnitudes spread over many binades.
    pub fn log_uniform(&mut self, lo: i32, hi: i32) -> f64 {
        let e = lo + (self.next() % (hi - lo) as u64) as i32;
        let frac = (self.next() >> 12) as f64 / (1u64 << 52) as f64;
        (1.0 + frac) * 2f64.powi(e.max(-1022)) * 2f64.powi((e + 1022).min(0))
    }
    /// [`Rng::log_uniform`] with a random sign.
    pub fn signed(&mut self, lo: i32, hi: i32) -> f64 {
        let x = self.log_uniform(lo, hi);
        if self.next() & 1 == 0 {
            x
        } else {
            -x
        }
    }
}

/// A random point of `k`'s domain: log-uniform magnitudes of both signs, uniform spans,
/// and points near the function's special points (multiples of ln 2 and of π/2, 1 for
/// `log`, -1 for `log1p`, the overflow and underflow thresholds).
pub fn point(k: Kernel, rng: &mut Rng) -> f64 {
    let pick = rng.next() % 4;
    let ln2 = std::f64::consts::LN_2;
    let pio2 = std::f64::consts::FRAC_PI_2;
    let near = |rng: &mut Rng, at: f64| at + rng.signed(-60, -2) * at.abs().max(1.0);
    match k {
        Kernel::Exp => match pick {
            0 => rng.uniform(-745.2, 709.78),
            1 => {
                let at = (rng.next() % 2048) as f64 * ln2 - 1074.0 * ln2;
                near(rng, at).clamp(-745.2, 709.78)
            }
            2 => rng.uniform(-745.2, -708.0),
            _ => rng.signed(-70, 9).clamp(-745.2, 709.78),
        },
        Kernel::Expm1 => match pick {
            0 => rng.uniform(-40.0, 709.78),
            1 => {
                let at = ((rng.next() % 120) as f64 - 60.0) * ln2;
                near(rng, at)
            }
            2 => rng.signed(-1074, -20),
            _ => rng.signed(-30, 9).clamp(-40.0, 709.78),
        },
        Kernel::Log => match pick {
            0 | 1 => rng.log_uniform(-1074, 1024),
            2 => 1.0 + rng.signed(-60, -1),
            _ => rng.uniform(0.0, 4.0),
        },
        Kernel::Log1p => match pick {
            0 => rng.log_uniform(-1074, 1024),
            1 => -rng.log_uniform(-1074, 0).min(0.9999999999999999),
            2 => -1.0 + rng.log_uniform(-52, -1),
            _ => rng.uniform(-1.0, 4.0).max(-0.9999999999999999),
        },
        Kernel::Tanh => match pick {
            0 => rng.signed(-1074, 6),
            1 => rng.uniform(-20.0, 20.0),
            2 => rng.uniform(-1.0, 1.0),
            _ => rng.signed(-30, 2),
        },
        Kernel::Sigmoid => match pick {
            0 => rng.signed(-60, 9).max(-745.0),
            1 => rng.uniform(-745.0, 40.0),
            2 => rng.uniform(-2.0, 2.0),
            _ => rng.uniform(-40.0, 40.0),
        },
        Kernel::Sin | Kernel::Cos => match pick {
            0 => rng.signed(-60, 22),
            1 => rng.uniform(-10.0, 10.0),
            2 => {
                let j = (rng.next() % 2_000_000) as f64 - 1_000_000.0;
                j * pio2 + rng.signed(-40, -1)
            }
            _ => ((rng.next() % 200) as f64 - 100.0) * pio2,
        },
    }
}
