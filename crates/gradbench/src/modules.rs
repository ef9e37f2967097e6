//! The modules: `hello`, `lse`, `gmm`, `llsq`, `ode`, `lstm`, `kmeans`, `saddle`,
//! `particle`, `ba` and `det`, each compiled from a program of `programs/`.

use serde_json::Value as Json;
use unfad::{Arg, Engine, Func, GradFn, Output};

use crate::gmm::{Gmm, GmmInput};
use crate::nested::{FourModes, Kmeans};
use crate::{count, field, number, numbers, reals, Call, Fail};

/// A defined module: prepares calls of its functions.
pub trait Module {
    fn prepare(&mut self, function: &str, input: &Json) -> Result<Box<dyn Call + '_>, Fail>;
}

/// Compile the module `name` (`define`); unknown modules are an error, not a crash.
pub fn define(name: &str) -> Result<Box<dyn Module>, Fail> {
    let engine = Engine::new();
    let err = |e: unfad::Error| format!("compiling `{name}`: {e}");
    match name {
        "hello" => {
            let src = include_str!("../programs/hello.ad");
            Ok(Box::new(Hello {
                square: engine.compile(src).map_err(err)?,
                double: engine.compile_grad(src).map_err(err)?,
            }))
        }
        "lse" => {
            let src = include_str!("../programs/lse.ad");
            Ok(Box::new(Lse {
                primal: engine.compile(src).map_err(err)?,
                gradient: engine.compile_grad(src).map_err(err)?,
            }))
        }
        "gmm" => Ok(Box::new(Gmm::compile(&engine).map_err(err)?)),
        "llsq" => {
            let src = include_str!("../programs/llsq.ad");
            Ok(Box::new(VectorAndCount {
                module: "llsq",
                count: "n",
                primal: engine.compile(src).map_err(err)?,
                gradient: engine.compile_grad(src).map_err(err)?,
            }))
        }
        "ode" => {
            let src = include_str!("../programs/ode.ad");
            Ok(Box::new(VectorAndCount {
                module: "ode",
                count: "s",
                primal: engine.compile_entry(src, "rk4").map_err(err)?,
                gradient: engine.compile_grad_entry(src, "ode").map_err(err)?,
            }))
        }
        "lstm" => Ok(Box::new(crate::lstm::Lstm::compile(&engine).map_err(err)?)),
        "kmeans" => Ok(Box::new(Kmeans::compile(&engine).map_err(err)?)),
        "saddle" => Ok(Box::new(FourModes::saddle(&engine).map_err(err)?)),
        "particle" => Ok(Box::new(FourModes::particle(&engine).map_err(err)?)),
        "ba" => Ok(Box::new(crate::ba::Ba::compile(&engine).map_err(err)?)),
        "det" => {
            let src = include_str!("../programs/det.ad");
            Ok(Box::new(Det {
                primal: engine.compile(src).map_err(err)?,
                gradient: engine.compile_grad(src).map_err(err)?,
            }))
        }
        other => Err(format!(
            "unfad has no module `{other}` (it has hello, lse, gmm, llsq, lstm, ode, kmeans, saddle, particle, ba and det)"
        )),
    }
}

/// `unknown function` error.
pub(crate) fn unknown(module: &str, function: &str) -> Fail {
    format!("the module `{module}` has no function `{function}`")
}

struct Hello {
    square: Func,
    double: GradFn,
}

struct HelloCall<'m> {
    x: f64,
    square: Option<&'m Func>,
    double: Option<&'m GradFn>,
    result: f64,
    out: Output,
}

impl Module for Hello {
    fn prepare(&mut self, function: &str, input: &Json) -> Result<Box<dyn Call + '_>, Fail> {
        let x = input.as_f64().ok_or("the input of `hello` is a number")?;
        let (square, double) = match function {
            "square" => (Some(&self.square), None),
            "double" => (None, Some(&self.double)),
            f => return Err(unknown("hello", f)),
        };
        Ok(Box::new(HelloCall {
            x,
            square,
            double,
            result: f64::NAN,
            out: Output::default(),
        }))
    }
}

impl Call for HelloCall<'_> {
    fn run(&mut self) -> Result<(), Fail> {
        let args = [Arg::from(self.x)];
        if let Some(f) = self.square {
            self.result = f.call(&args).map_err(|e| e.to_string())?[0];
        } else if let Some(g) = self.double {
            g.call_into(&args, &mut self.out)
                .map_err(|e| e.to_string())?;
            self.result = self.out.gradient(0)[0];
        }
        Ok(())
    }
    fn output(&self) -> Result<Json, Fail> {
        number(self.result)
    }
}

struct Lse {
    primal: Func,
    gradient: GradFn,
}

struct LseCall<'m> {
    x: Vec<f64>,
    primal: Option<&'m Func>,
    gradient: Option<&'m GradFn>,
    value: f64,
    out: Output,
}

impl Module for Lse {
    fn prepare(&mut self, function: &str, input: &Json) -> Result<Box<dyn Call + '_>, Fail> {
        let x = reals(field(input, "x")?, "x")?;
        let (primal, gradient) = match function {
            "primal" => (Some(&self.primal), None),
            "gradient" => (None, Some(&self.gradient)),
            f => return Err(unknown("lse", f)),
        };
        Ok(Box::new(LseCall {
            x,
            primal,
            gradient,
            value: f64::NAN,
            out: Output::default(),
        }))
    }
}

impl Call for LseCall<'_> {
    fn run(&mut self) -> Result<(), Fail> {
        let args = [Arg::from(self.x.as_slice())];
        if let Some(f) = self.primal {
            self.value = f.call(&args).map_err(|e| e.to_string())?[0];
        } else if let Some(g) = self.gradient {
            g.call_into(&args, &mut self.out)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
    fn output(&self) -> Result<Json, Fail> {
        match self.primal {
            Some(_) => number(self.value),
            None => numbers(self.out.gradient(0)),
        }
    }
}

/// A module whose input is a vector `x` and a count (`llsq`'s `n` points, `ode`'s `s`
/// steps), both parameters of its program: `primal` returns the primal's value (a number,
/// or an array), `gradient` the gradient with respect to `x`.
struct VectorAndCount {
    module: &'static str,
    /// The name of the count in the input.
    count: &'static str,
    primal: Func,
    gradient: GradFn,
}

struct VectorAndCountCall<'m> {
    x: Vec<f64>,
    count: f64,
    primal: Option<&'m Func>,
    gradient: Option<&'m GradFn>,
    value: Vec<f64>,
    out: Output,
}

impl Module for VectorAndCount {
    fn prepare(&mut self, function: &str, input: &Json) -> Result<Box<dyn Call + '_>, Fail> {
        let x = reals(field(input, "x")?, "x")?;
        let count = count(input, self.count)?;
        let (primal, gradient) = match function {
            "primal" => (Some(&self.primal), None),
            "gradient" => (None, Some(&self.gradient)),
            f => return Err(unknown(self.module, f)),
        };
        Ok(Box::new(VectorAndCountCall {
            x,
            count: count as f64,
            primal,
            gradient,
            value: Vec::new(),
            out: Output::default(),
        }))
    }
}

impl Call for VectorAndCountCall<'_> {
    fn run(&mut self) -> Result<(), Fail> {
        let args = [Arg::from(self.x.as_slice()), Arg::from(self.count)];
        if let Some(f) = self.primal {
            self.value = f.call(&args).map_err(|e| e.to_string())?;
        } else if let Some(g) = self.gradient {
            g.call_into(&args, &mut self.out)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
    fn output(&self) -> Result<Json, Fail> {
        match (self.primal, self.value.as_slice()) {
            (Some(f), [v]) if f.ret_type().is_real() => number(*v),
            (Some(_), values) => numbers(values),
            (None, _) => numbers(self.out.gradient(0)),
        }
    }
}

/// A prepared `gmm` call.
pub(crate) struct GmmCall<'m> {
    pub gmm: &'m Gmm,
    pub input: GmmInput,
    pub jacobian: bool,
    pub value: f64,
    pub out: Output,
}

impl Module for Gmm {
    fn prepare(&mut self, function: &str, input: &Json) -> Result<Box<dyn Call + '_>, Fail> {
        let jacobian = match function {
            "objective" => false,
            "jacobian" => true,
            f => return Err(unknown("gmm", f)),
        };
        let input = GmmInput::from_json(input)?;
        Ok(Box::new(GmmCall {
            gmm: self,
            input,
            jacobian,
            value: f64::NAN,
            out: Output::default(),
        }))
    }
}

/// `det`: the determinant of an `ell x ell` matrix by expansion by minors, and its
/// gradient. The program takes the matrix and the number of column sets, `2^ell`.
struct Det {
    primal: Func,
    gradient: GradFn,
}

/// The largest `ell` taken: the program keeps a value per column set (`2^ell`), and its
/// gradient one array of them per row.
const DET_MAX_ELL: usize = 24;

struct DetCall<'m> {
    a: Vec<f64>,
    ell: usize,
    gradient: Option<&'m GradFn>,
    primal: &'m Func,
    value: f64,
    out: Output,
}

impl Module for Det {
    fn prepare(&mut self, function: &str, input: &Json) -> Result<Box<dyn Call + '_>, Fail> {
        let a = reals(field(input, "A")?, "A")?;
        let ell = count(input, "ell")?;
        if ell.checked_mul(ell) != Some(a.len()) {
            return Err(format!(
                "det: `A` must have ell * ell = {ell} * {ell} numbers, but it has {}",
                a.len()
            ));
        }
        if ell > DET_MAX_ELL {
            return Err(format!(
                "det: ell = {ell} is more than unfad's program takes ({DET_MAX_ELL}): it keeps 2^ell minors"
            ));
        }
        let gradient = match function {
            "primal" => None,
            "gradient" => Some(&self.gradient),
            f => return Err(unknown("det", f)),
        };
        Ok(Box::new(DetCall {
            a,
            ell,
            gradient,
            primal: &self.primal,
            value: f64::NAN,
            out: Output::default(),
        }))
    }
}

impl Call for DetCall<'_> {
    fn run(&mut self) -> Result<(), Fail> {
        let masks = (1u64 << self.ell) as f64;
        let args = [Arg::array(&self.a, &[self.ell, self.ell]), Arg::from(masks)];
        match self.gradient {
            Some(g) => g
                .call_into(&args, &mut self.out)
                .map_err(|e| e.to_string())?,
            None => self.value = self.primal.call(&args).map_err(|e| e.to_string())?[0],
        }
        Ok(())
    }
    fn output(&self) -> Result<Json, Fail> {
        match self.gradient {
            Some(_) => numbers(self.out.gradient(0)),
            None => number(self.value),
        }
    }
}
