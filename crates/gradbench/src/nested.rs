//! The modules of nested derivatives: `kmeans` (`dir` is a gradient divided by a
//! Hessian-vector product, `jvp(grad(cost))`) and `saddle` and `particle` (gradient
//! descents whose objectives contain gradients, in the four mode combinations `ff`, `fr`,
//! `rf`, `rr`). Each is a program of `programs/` whose entries are the eval's functions,
//! compiled once per entry at `define`; this file only converts JSON.

use serde_json::Value as Json;
use unfad::{Arg, Engine, Func};

use crate::modules::{unknown, Module};
use crate::{field, matrix, number, numbers, reals, rows_json, Call, Fail};

/// `kmeans`: `cost` and `dir` of `programs/kmeans.ad`.
pub struct Kmeans {
    cost: Func,
    dir: Func,
}

impl Kmeans {
    pub fn compile(engine: &Engine) -> Result<Kmeans, unfad::Error> {
        let src = include_str!("../programs/kmeans.ad");
        Ok(Kmeans {
            cost: engine.compile_entry(src, "cost")?,
            dir: engine.compile_entry(src, "dir")?,
        })
    }
}

/// A prepared `kmeans` call: the points and centroids row-major, `[n][d]` and `[k][d]`.
struct KmeansCall<'m> {
    function: &'m Func,
    dir: bool,
    points: Vec<f64>,
    centroids: Vec<f64>,
    n: usize,
    k: usize,
    d: usize,
    result: Vec<f64>,
}

impl Module for Kmeans {
    fn prepare(&mut self, function: &str, input: &Json) -> Result<Box<dyn Call + '_>, Fail> {
        let (function, dir) = match function {
            "cost" => (&self.cost, false),
            "dir" => (&self.dir, true),
            f => return Err(unknown("kmeans", f)),
        };
        let (points, n, d) = matrix(field(input, "points")?, "points")?;
        let (centroids, k, dc) = matrix(field(input, "centroids")?, "centroids")?;
        if dc != d && k > 0 && n > 0 {
            return Err(format!(
                "kmeans: the points have {d} coordinates but the centroids {dc}"
            ));
        }
        Ok(Box::new(KmeansCall {
            function,
            dir,
            points,
            centroids,
            n,
            k,
            d,
            result: Vec::new(),
        }))
    }
}

impl Call for KmeansCall<'_> {
    fn run(&mut self) -> Result<(), Fail> {
        let args = [
            Arg::array(&self.points, &[self.n, self.d]),
            Arg::array(&self.centroids, &[self.k, self.d]),
        ];
        self.result = self.function.call(&args).map_err(|e| e.to_string())?;
        Ok(())
    }

    fn output(&self) -> Result<Json, Fail> {
        match (self.dir, self.result.as_slice()) {
            (true, dir) => rows_json(dir, self.k),
            (false, [cost]) => number(*cost),
            (false, other) => Err(format!("kmeans: `cost` gave {} numbers", other.len())),
        }
    }
}

/// `saddle` or `particle`: the four entries `ff`, `fr`, `rf`, `rr` of one program, all of
/// the same input (`saddle`'s `start`, two numbers; `particle`'s `w`, a number) and output.
pub struct FourModes {
    module: &'static str,
    entries: Vec<(&'static str, Func)>,
}

/// The names of the entries: the mode of the outer derivative, then the inner one.
const MODES: [&str; 4] = ["ff", "fr", "rf", "rr"];

impl FourModes {
    pub fn saddle(engine: &Engine) -> Result<FourModes, unfad::Error> {
        FourModes::compile(engine, "saddle", include_str!("../programs/saddle.ad"))
    }

    pub fn particle(engine: &Engine) -> Result<FourModes, unfad::Error> {
        FourModes::compile(engine, "particle", include_str!("../programs/particle.ad"))
    }

    fn compile(
        engine: &Engine,
        module: &'static str,
        src: &str,
    ) -> Result<FourModes, unfad::Error> {
        let entries = MODES
            .iter()
            .map(|&mode| Ok((mode, engine.compile_entry(src, mode)?)))
            .collect::<Result<_, unfad::Error>>()?;
        Ok(FourModes { module, entries })
    }
}

/// A prepared `saddle` or `particle` call.
struct FourModesCall<'m> {
    function: &'m Func,
    /// `saddle`'s start point, or `particle`'s `w` alone.
    input: Vec<f64>,
    /// `particle`'s result is a number, `saddle`'s an array.
    scalar: bool,
    result: Vec<f64>,
}

impl Module for FourModes {
    fn prepare(&mut self, function: &str, input: &Json) -> Result<Box<dyn Call + '_>, Fail> {
        let Some((_, func)) = self.entries.iter().find(|(mode, _)| *mode == function) else {
            return Err(unknown(self.module, function));
        };
        let (input, scalar) = if self.module == "particle" {
            let w = field(input, "w")?
                .as_f64()
                .ok_or("particle: `w` is a number")?;
            (vec![w], true)
        } else {
            let start = reals(field(input, "start")?, "start")?;
            if start.len() != 2 {
                return Err(format!(
                    "saddle: `start` is a point of 2 numbers, not {}",
                    start.len()
                ));
            }
            (start, false)
        };
        Ok(Box::new(FourModesCall {
            function: func,
            input,
            scalar,
            result: Vec::new(),
        }))
    }
}

impl Call for FourModesCall<'_> {
    fn run(&mut self) -> Result<(), Fail> {
        let arg = if self.scalar {
            Arg::from(self.input[0])
        } else {
            Arg::from(self.input.as_slice())
        };
        self.result = self.function.call(&[arg]).map_err(|e| e.to_string())?;
        Ok(())
    }

    fn output(&self) -> Result<Json, Fail> {
        match (self.scalar, self.result.as_slice()) {
            (true, [w]) => number(*w),
            (false, point) => numbers(point),
            (true, other) => Err(format!("particle: the result has {} numbers", other.len())),
        }
    }
}
