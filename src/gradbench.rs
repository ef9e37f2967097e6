//! The GradBench tool's own figures for its `gmm` module (issue 8): the objective and the
//! jacobian timed through the tool's code (`unfad_gradbench::define("gmm")`, then the
//! `Module`/`Call` API, as `evaluate` messages run them), on an input generated as
//! GradBench generates its gmm inputs: `x`, `alpha`, `q` and `l` standard normal, `mu`
//! uniform in [0, 1), `m = 0`, `gamma = 1`.

use std::time::Instant;

use serde_json::{json, Value as Json};

use crate::measure::{interleaved, median, median_ratio, Budget};

/// The gmm size of the report: GradBench's `d = 10, k = 25, n = 1000`.
pub const GMM_SIZE: (usize, usize, usize) = (10, 25, 1000);

/// The figures of one gmm input.
#[derive(Clone, Debug)]
pub struct GmmFigures {
    pub d: usize,
    pub k: usize,
    pub n: usize,
    /// `define("gmm")`: compiling the objective and the jacobian, in milliseconds.
    pub define_ms: f64,
    /// Median nanoseconds of one run.
    pub objective_ns: f64,
    pub jacobian_ns: f64,
    /// The median of the per-round ratios jacobian / objective.
    pub ratio: f64,
}

/// A deterministic source of uniform and normal deviates (SplitMix64, Box-Muller).
struct Deviates {
    state: u64,
    spare: Option<f64>,
}

impl Deviates {
    fn new(seed: u64) -> Deviates {
        Deviates {
            state: seed,
            spare: None,
        }
    }

    /// Uniform in [0, 1), 53 bits.
    fn uniform(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller: two deviates per pair of uniforms).
    fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let u1 = 1.0 - self.uniform(); // in (0, 1]: its logarithm is finite
        let u2 = self.uniform();
        let r = (-2.0 * u1.ln()).sqrt();
        let t = 2.0 * std::f64::consts::PI * u2;
        self.spare = Some(r * t.sin());
        r * t.cos()
    }

    fn rows(&mut self, rows: usize, cols: usize, f: fn(&mut Deviates) -> f64) -> Json {
        Json::Array(
            (0..rows)
                .map(|_| json!((0..cols).map(|_| f(self)).collect::<Vec<f64>>()))
                .collect(),
        )
    }
}

/// A gmm input of GradBench's form for sizes `d`, `k`, `n`.
pub fn gmm_input(d: usize, k: usize, n: usize, seed: u64) -> Json {
    let mut g = Deviates::new(seed);
    let alpha: Vec<f64> = (0..k).map(|_| g.normal()).collect();
    let mu = g.rows(k, d, Deviates::uniform);
    let q = g.rows(k, d, Deviates::normal);
    let l = g.rows(k, d * d.saturating_sub(1) / 2, Deviates::normal);
    let x = g.rows(n, d, Deviates::normal);
    json!({
        "d": d, "k": k, "n": n,
        "alpha": alpha, "mu": mu, "q": q, "l": l, "x": x,
        "m": 0, "gamma": 1.0,
    })
}

/// Define the `gmm` module and time its two functions on `input`, interleaved.
pub fn measure_gmm(input: &Json, budget: Budget) -> Result<GmmFigures, String> {
    let size = |name: &str| {
        input
            .get(name)
            .and_then(Json::as_u64)
            .map(|v| v as usize)
            .ok_or_else(|| format!("the input has no size `{name}`"))
    };
    let t = Instant::now();
    let mut objective_module = unfad_gradbench::define("gmm")?;
    let define_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut jacobian_module = unfad_gradbench::define("gmm")?;
    let mut objective = objective_module.prepare("objective", input)?;
    let mut jacobian = jacobian_module.prepare("jacobian", input)?;
    // One run each first: the outputs must be what GradBench accepts (finite numbers).
    objective.run()?;
    objective.output()?;
    jacobian.run()?;
    jacobian.output()?;
    let (mut failed_objective, mut failed_jacobian) = (None, None);
    let t = {
        let mut run_objective = || {
            if let Err(e) = objective.run() {
                failed_objective.get_or_insert(e);
            }
        };
        let mut run_jacobian = || {
            if let Err(e) = jacobian.run() {
                failed_jacobian.get_or_insert(e);
            }
        };
        interleaved(&mut [&mut run_objective, &mut run_jacobian], budget)
    };
    if let Some(e) = failed_objective.or(failed_jacobian) {
        return Err(e);
    }
    Ok(GmmFigures {
        d: size("d")?,
        k: size("k")?,
        n: size("n")?,
        define_ms,
        objective_ns: median(&t[0]),
        jacobian_ns: median(&t[1]),
        ratio: median_ratio(&t[1], &t[0]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_have_gradbench_shapes_and_distributions() {
        let input = gmm_input(3, 4, 500, 7);
        assert_eq!(
            input,
            gmm_input(3, 4, 500, 7),
            "the same seed gives the same input"
        );
        let rows = |name: &str| input[name].as_array().unwrap().len();
        let width = |name: &str| input[name][0].as_array().unwrap().len();
        assert_eq!((rows("mu"), width("mu")), (4, 3));
        assert_eq!((rows("q"), width("q")), (4, 3));
        assert_eq!((rows("l"), width("l")), (4, 3));
        assert_eq!((rows("x"), width("x")), (500, 3));
        assert_eq!(input["alpha"].as_array().unwrap().len(), 4);
        let all = |name: &str| -> Vec<f64> {
            input[name]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|r| r.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()))
                .collect()
        };
        let mu = all("mu");
        assert!(mu.iter().all(|&v| (0.0..1.0).contains(&v)));
        let x = all("x");
        let mean = x.iter().sum::<f64>() / x.len() as f64;
        let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / x.len() as f64;
        assert!(mean.abs() < 0.1 && (var - 1.0).abs() < 0.15, "{mean} {var}");
    }

    #[test]
    fn the_tool_times_both_functions() {
        let f = measure_gmm(&gmm_input(2, 3, 4, 1), Budget::QUICK).unwrap();
        assert_eq!((f.d, f.k, f.n), (2, 3, 4));
        assert!(f.objective_ns > 0.0 && f.jacobian_ns > 0.0 && f.ratio > 0.0);
    }
}
