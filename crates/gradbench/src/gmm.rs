//! The `gmm` module: the GMM log posterior of ADBench and GradBench.
//!
//! The objective is the program `programs/gmm.ad`. Two things happen here, in the
//! adapter, and nowhere else:
//! - **`l` is unpacked.** GradBench gives, per component `c`, the strictly lower triangle
//!   of `Q_c` packed column by column (`(1,0), (2,0), ..., (d-1,0), (2,1), ...`). The
//!   program takes a dense `[k][d][d]` array `L` with zeros on and above the diagonal;
//!   its gradient is packed back the same way (the entries on and above the diagonal of
//!   the gradient of `L` do not belong to a parameter and are dropped).
//! - **Constants are added.** The terms of the log posterior that depend on no parameter,
//!   `-n d/2 log(2 pi)` and the Wishart normaliser `k (nu d (log gamma - log(2)/2) -
//!   log Gamma_d(nu/2))` with `nu = d + m + 1`, are computed here (they need `lgamma`);
//!   they do not change the gradient.

use serde_json::Value as Json;
use unfad::{Arg, Engine, Func, GradFn};

use crate::modules::GmmCall;
use crate::{count, field, matrix, number, numbers, reals, rows_json, Call, Fail};

/// The compiled objective and its gradient with respect to `alpha`, `mu`, `q` and `L`.
pub struct Gmm {
    objective: Func,
    jacobian: GradFn,
}

impl Gmm {
    pub fn compile(engine: &Engine) -> Result<Gmm, unfad::Error> {
        let src = include_str!("../programs/gmm.ad");
        Ok(Gmm {
            objective: engine.compile(src)?,
            jacobian: engine.compile_grad_wrt(src, None, &["alpha", "mu", "q", "L"])?,
        })
    }
}

/// A gmm input, converted once before the timed runs.
pub struct GmmInput {
    pub d: usize,
    pub k: usize,
    pub n: usize,
    alpha: Vec<f64>,
    mu: Vec<f64>,
    q: Vec<f64>,
    /// Dense `[k][d][d]`, strictly lower triangular.
    big_l: Vec<f64>,
    x: Vec<f64>,
    gamma: f64,
    m: f64,
    constant: f64,
}

/// The positions `(row, column)` of the packed strictly lower triangle, in packing order.
pub fn packed_positions(d: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..d).flat_map(move |col| (col + 1..d).map(move |row| (row, col)))
}

impl GmmInput {
    pub fn from_json(input: &Json) -> Result<GmmInput, Fail> {
        let (d, k, n) = (count(input, "d")?, count(input, "k")?, count(input, "n")?);
        let alpha = reals(field(input, "alpha")?, "alpha")?;
        let (mu, mk, md) = matrix(field(input, "mu")?, "mu")?;
        let (q, qk, qd) = matrix(field(input, "q")?, "q")?;
        let (l, lk, lw) = matrix(field(input, "l")?, "l")?;
        let (x, xn, xd) = matrix(field(input, "x")?, "x")?;
        let gamma = field(input, "gamma")?
            .as_f64()
            .ok_or("`gamma` must be a number")?;
        let m = field(input, "m")?.as_f64().ok_or("`m` must be a number")?;
        let tri = d * d.saturating_sub(1) / 2;
        if alpha.len() != k
            || (mk, md) != (k, d)
            || (qk, qd) != (k, d)
            || (lk, lw) != (k, tri)
            || (xn, xd) != (n, d)
        {
            return Err(format!(
                "the gmm input does not have the sizes d={d}, k={k}, n={n}: alpha {}, mu {mk}x{md}, q {qk}x{qd}, l {lk}x{lw}, x {xn}x{xd}",
                alpha.len()
            ));
        }
        let mut big_l = vec![0.0; k * d * d];
        for c in 0..k {
            for (idx, (row, col)) in packed_positions(d).enumerate() {
                big_l[(c * d + row) * d + col] = l[c * tri + idx];
            }
        }
        let constant = constant(d, k, n, gamma, m);
        Ok(GmmInput {
            d,
            k,
            n,
            alpha,
            mu,
            q,
            big_l,
            x,
            gamma,
            m,
            constant,
        })
    }

    fn args(&self) -> [Arg<'_>; 7] {
        let (d, k, n) = (self.d, self.k, self.n);
        [
            Arg::from(self.alpha.as_slice()),
            Arg::array(&self.mu, &[k, d]),
            Arg::array(&self.q, &[k, d]),
            Arg::array(&self.big_l, &[k, d, d]),
            Arg::array(&self.x, &[n, d]),
            Arg::from(self.gamma),
            Arg::from(self.m),
        ]
    }
}

/// The terms of the log posterior that depend on no parameter.
pub fn constant(d: usize, k: usize, n: usize, gamma: f64, m: f64) -> f64 {
    let (df, kf, nf) = (d as f64, k as f64, n as f64);
    let nu = df + m + 1.0;
    let wishart = nu * df * (gamma.ln() - 0.5 * 2f64.ln()) - log_multigamma(0.5 * nu, d);
    -nf * 0.5 * df * (2.0 * std::f64::consts::PI).ln() + kf * wishart
}

/// `log Gamma_d(a) = d(d-1)/4 log(pi) + sum_{j=1..d} lgamma(a + (1-j)/2)`.
pub fn log_multigamma(a: f64, d: usize) -> f64 {
    let df = d as f64;
    df * (df - 1.0) / 4.0 * std::f64::consts::PI.ln()
        + (1..=d)
            .map(|j| lgamma(a + (1.0 - j as f64) / 2.0))
            .sum::<f64>()
}

/// `log |Gamma(x)|` for `x > 0`: the Lanczos approximation (g = 7, 9 terms), accurate to
/// about 1e-15 relative; small arguments go through `Gamma(x) = Gamma(x+1) / x`.
pub fn lgamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Gamma(x) Gamma(1-x) = pi / sin(pi x).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin())
            .abs()
            .ln()
            - lgamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

impl Call for GmmCall<'_> {
    fn run(&mut self) -> Result<(), Fail> {
        let args = self.input.args();
        if self.jacobian {
            self.gmm
                .jacobian
                .call_into(&args, &mut self.out)
                .map_err(|e| e.to_string())?;
        } else {
            self.value = self.gmm.objective.call(&args).map_err(|e| e.to_string())?[0];
        }
        Ok(())
    }

    fn output(&self) -> Result<Json, Fail> {
        if !self.jacobian {
            return number(self.value + self.input.constant);
        }
        let (d, k) = (self.input.d, self.input.k);
        let grad_l = self.out.gradient(3);
        let mut packed = Vec::with_capacity(k * d * d.saturating_sub(1) / 2);
        for c in 0..k {
            for (row, col) in packed_positions(d) {
                packed.push(grad_l[(c * d + row) * d + col]);
            }
        }
        Ok(serde_json::json!({
            "alpha": numbers(self.out.gradient(0))?,
            "mu": rows_json(self.out.gradient(1), k)?,
            "q": rows_json(self.out.gradient(2), k)?,
            "l": rows_json(&packed, k)?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lgamma_matches_known_values() {
        // Gamma(1) = Gamma(2) = 1, Gamma(1/2) = sqrt(pi), Gamma(5) = 24, Gamma(0.1) = 9.5135...
        let cases = [
            (1.0, 0.0),
            (2.0, 0.0),
            (0.5, 0.5 * std::f64::consts::PI.ln()),
            (5.0, 24f64.ln()),
            (10.5, 13.940_625_219_403_763),
            (0.1, 2.252_712_651_734_206),
        ];
        for (x, want) in cases {
            let got = lgamma(x);
            assert!(
                (got - want).abs() <= 1e-13 * want.abs().max(1.0),
                "lgamma({x}) = {got}, want {want}"
            );
        }
    }

    #[test]
    fn packing_is_column_by_column() {
        let order: Vec<_> = packed_positions(4).collect();
        assert_eq!(order, vec![(1, 0), (2, 0), (3, 0), (2, 1), (3, 1), (3, 2)]);
    }
}
