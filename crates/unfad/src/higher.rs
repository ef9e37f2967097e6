//! Derivatives beyond the gradient: directional derivatives by native forward mode
//! ([`Engine::compile_jvp`]), Hessian-vector products by forward over reverse (or reverse
//! over reverse, to check it: [`SecondOrder`]) ([`Engine::compile_hvp`]), and dense
//! Hessians of small inputs ([`Engine::compile_hessian`]).
//!
//! Each is a primal function of the pipeline's making, compiled like [`Engine::compile`]'s:
//! the jvp takes the parameters and then one tangent per differentiated parameter and
//! returns `(value, tangent)`; the hvp takes the parameters and one direction per
//! differentiated parameter and returns `(value, g_1, ..., g_k, h_1, ..., h_k)`. The types
//! here split those results and shape the directions.

use std::sync::Mutex;

use crate::{with_scratch, Arg, Engine, Error, Func, GradOptions, Pipeline};

/// How a Hessian-vector product is computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SecondOrder {
    /// Forward mode over the optimized gradient: the derivative of the gradient in the
    /// direction (the default: its cost is a small multiple of the gradient's).
    #[default]
    ForwardOverReverse,
    /// Reverse mode over the optimized gradient: the gradient of `⟨∇f(x), v⟩` with
    /// respect to `x`.
    ReverseOverReverse,
}

/// A compiled directional derivative: value and tangent of the entry point.
pub struct JvpFn {
    func: Func,
    /// The parameters given a tangent.
    wrt: Vec<usize>,
    params: usize,
    /// The native call's leaves, kept between calls (see [`JvpFn::call_into`]).
    leaves: Mutex<Vec<Vec<f64>>>,
}

/// The result of a [`JvpFn`] call: the value's leaves and the tangent's, flat and
/// row-major, of the same length (the tangent has the value's shape).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JvpOutput {
    pub value: Vec<f64>,
    pub tangent: Vec<f64>,
}

impl JvpFn {
    /// The value at `args` and its derivative in the direction `tangents`: one argument
    /// per parameter each, a tangent of the same shape as its argument. The tangents of
    /// parameters that are not differentiated (ints, and those left out of `wrt`) are
    /// not read.
    pub fn call(&self, args: &[Arg], tangents: &[Arg]) -> Result<JvpOutput, Error> {
        let mut out = JvpOutput::default();
        self.call_into(args, tangents, &mut out)?;
        Ok(out)
    }

    /// [`JvpFn::call`] into `out`, reusing its vectors and the function's own buffers:
    /// once warm with the same sizes, no buffer of the arrays' size is allocated again.
    pub fn call_into(
        &self,
        args: &[Arg],
        tangents: &[Arg],
        out: &mut JvpOutput,
    ) -> Result<(), Error> {
        let all = with_directions(args, tangents, &self.wrt, self.params, "tangent")?;
        with_scratch(&self.leaves, |leaves: &mut Vec<f64>| {
            self.func.call_into(&all, leaves)?;
            let half = leaves.len() / 2;
            out.value.clear();
            out.value.extend_from_slice(&leaves[..half]);
            out.tangent.clear();
            out.tangent.extend_from_slice(&leaves[half..]);
            Ok(())
        })
    }

    /// Parameter names, in order (the tangents' names are `d` and these).
    pub fn param_names(&self) -> &[String] {
        &self.func.names[..self.params]
    }

    /// The parameters given a tangent, in order.
    pub fn wrt(&self) -> &[usize] {
        &self.wrt
    }

    /// The entry point's result type (the tangent's too).
    pub fn value_type(&self) -> Option<&unfad_syntax::Type> {
        match self.func.ret_type() {
            unfad_syntax::Type::Tuple(items) => items.first(),
            _ => None,
        }
    }

    /// The compiled function `(params, tangents) -> (value, tangent)` itself.
    pub fn function(&self) -> &Func {
        &self.func
    }
}

/// A compiled Hessian-vector product: value, gradient, and the Hessian times a direction.
pub struct HvpFn {
    func: Func,
    wrt: Vec<usize>,
    params: usize,
    /// The native call's leaves, kept between calls (see [`HvpFn::call_into`]).
    leaves: Mutex<Vec<Vec<f64>>>,
}

/// The result of a [`HvpFn`] call, by parameter: flat and row-major, empty for a parameter
/// that was not differentiated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HvpOutput {
    pub value: f64,
    gradients: Vec<Vec<f64>>,
    hvps: Vec<Vec<f64>>,
    names: Vec<String>,
}

impl HvpOutput {
    /// The gradient with respect to parameter `i`.
    pub fn gradient(&self, i: usize) -> &[f64] {
        self.gradients.get(i).map_or(&[], |g| g.as_slice())
    }

    /// Parameter `i`'s block of the Hessian times the direction: the derivative of
    /// [`HvpOutput::gradient`]`(i)` in the direction.
    pub fn hvp(&self, i: usize) -> &[f64] {
        self.hvps.get(i).map_or(&[], |g| g.as_slice())
    }

    pub fn gradient_by_name(&self, name: &str) -> Option<&[f64]> {
        let i = self.names.iter().position(|n| n == name)?;
        Some(self.gradient(i))
    }

    pub fn hvp_by_name(&self, name: &str) -> Option<&[f64]> {
        let i = self.names.iter().position(|n| n == name)?;
        Some(self.hvp(i))
    }
}

impl HvpFn {
    /// Value, gradient and Hessian-vector product at `args` in the direction `direction`
    /// (one argument per parameter each, of the same shapes; the directions of parameters
    /// that are not differentiated are not read).
    pub fn call(&self, args: &[Arg], direction: &[Arg]) -> Result<HvpOutput, Error> {
        let mut out = HvpOutput::default();
        self.call_into(args, direction, &mut out)?;
        Ok(out)
    }

    /// [`HvpFn::call`] into `out`, reusing its vectors and the function's own buffers:
    /// once warm with the same sizes, no buffer of the arrays' size is allocated again.
    pub fn call_into(
        &self,
        args: &[Arg],
        direction: &[Arg],
        out: &mut HvpOutput,
    ) -> Result<(), Error> {
        let all = with_directions(args, direction, &self.wrt, self.params, "direction")?;
        with_scratch(&self.leaves, |leaves: &mut Vec<f64>| {
            self.func.call_into(&all, leaves)?;
            let total: usize = self.wrt.iter().map(|&i| leaf_count(&args[i])).sum();
            if leaves.len() != 1 + 2 * total {
                return Err(Error::Internal(format!(
                    "a Hessian-vector product of {} leaves, expected {}",
                    leaves.len(),
                    1 + 2 * total
                )));
            }
            out.value = leaves[0];
            out.gradients.resize_with(self.params, Vec::new);
            out.hvps.resize_with(self.params, Vec::new);
            let mut at = 1;
            let slots = out.gradients.iter_mut().zip(out.hvps.iter_mut());
            for (i, ((g, h), arg)) in slots.zip(args).enumerate() {
                g.clear();
                h.clear();
                if self.wrt.contains(&i) {
                    let n = leaf_count(arg);
                    g.extend_from_slice(&leaves[at..at + n]);
                    h.extend_from_slice(&leaves[at + total..at + total + n]);
                    at += n;
                }
            }
            if out.names != self.param_names() {
                out.names = self.param_names().to_vec();
            }
            Ok(())
        })
    }

    /// Parameter names, in order.
    pub fn param_names(&self) -> &[String] {
        &self.func.names[..self.params]
    }

    /// The differentiated parameters, in order.
    pub fn wrt(&self) -> &[usize] {
        &self.wrt
    }

    /// The compiled function `(params, directions) -> (value, g.., h..)` itself.
    pub fn function(&self) -> &Func {
        &self.func
    }
}

/// A dense Hessian: one Hessian-vector product per real input.
pub struct HessianFn {
    hvp: HvpFn,
}

/// The result of a [`HessianFn`] call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HessianOutput {
    pub value: f64,
    gradients: Vec<Vec<f64>>,
    names: Vec<String>,
    /// Rows of the Hessian over the differentiated parameters' leaves, flattened in
    /// parameter order, row-major.
    pub hessian: Vec<Vec<f64>>,
}

impl HessianOutput {
    /// The gradient with respect to parameter `i` (empty if not differentiated).
    pub fn gradient(&self, i: usize) -> &[f64] {
        self.gradients.get(i).map_or(&[], |g| g.as_slice())
    }

    pub fn gradient_by_name(&self, name: &str) -> Option<&[f64]> {
        let i = self.names.iter().position(|n| n == name)?;
        Some(self.gradient(i))
    }
}

/// Inputs beyond this many reals make [`HessianFn::call`] refuse (the matrix alone would
/// hold `n²` reals).
pub const HESSIAN_MAX_INPUTS: usize = 4096;

impl HessianFn {
    /// Value, gradient and the dense Hessian at `args`: row `j` is the Hessian-vector
    /// product in the direction of the `j`-th real input (parameters in order, leaves
    /// row-major), so the cost is that many Hessian-vector products.
    pub fn call(&self, args: &[Arg]) -> Result<HessianOutput, Error> {
        let wrt = &self.hvp.wrt;
        if args.len() != self.hvp.params {
            return Err(Error::Argument(format!(
                "{} argument(s) given, the function takes {} ({})",
                args.len(),
                self.hvp.params,
                self.hvp.param_names().join(", ")
            )));
        }
        let counts: Vec<usize> = wrt.iter().map(|&i| leaf_count(&args[i])).collect();
        let n: usize = counts.iter().sum();
        if n > HESSIAN_MAX_INPUTS {
            return Err(Error::Argument(format!(
                "a dense Hessian of {n} inputs is {n}x{n} reals; the limit is \
                 {HESSIAN_MAX_INPUTS} inputs (use a Hessian-vector product)"
            )));
        }
        let mut buffers: Vec<Vec<f64>> = counts.iter().map(|&c| vec![0.0; c]).collect();
        let mut rows = Vec::with_capacity(n);
        let mut first = None;
        for j in 0..n {
            // The j-th unit direction, in the shapes of the arguments.
            let (mut k, mut off) = (0, j);
            while off >= counts[k] {
                off -= counts[k];
                k += 1;
            }
            buffers[k][off] = 1.0;
            let out = {
                let directions = unit_directions(args, wrt, &buffers);
                self.hvp.call(args, &directions)?
            };
            buffers[k][off] = 0.0;
            let mut row = Vec::with_capacity(n);
            for &i in wrt {
                row.extend_from_slice(out.hvp(i));
            }
            rows.push(row);
            first.get_or_insert(out);
        }
        let base = match first {
            Some(out) => out,
            // No real input: value and gradient from one call with any direction.
            None => self.hvp.call(args, args)?,
        };
        Ok(HessianOutput {
            value: base.value,
            gradients: base.gradients,
            names: base.names,
            hessian: rows,
        })
    }

    /// Parameter names, in order.
    pub fn param_names(&self) -> &[String] {
        self.hvp.param_names()
    }

    /// The differentiated parameters, in order.
    pub fn wrt(&self) -> &[usize] {
        self.hvp.wrt()
    }

    /// The compiled Hessian-vector product it calls once per real input (see
    /// [`HvpFn::function`]).
    pub fn function(&self) -> &Func {
        self.hvp.function()
    }
}

/// Directions shaped like `args`, with the data of `buffers` for the parameters of `wrt`
/// (in order) and the arguments themselves elsewhere (not read).
fn unit_directions<'a>(
    args: &'a [Arg<'a>],
    wrt: &[usize],
    buffers: &'a [Vec<f64>],
) -> Vec<Arg<'a>> {
    let mut out: Vec<Arg<'a>> = args.to_vec();
    for (&i, buf) in wrt.iter().zip(buffers) {
        let mut at = 0;
        out[i] = shaped_like(&args[i], buf, &mut at);
    }
    out
}

/// `template`'s shape with the leaves of `data` from `at` on.
fn shaped_like<'a>(template: &Arg, data: &'a [f64], at: &mut usize) -> Arg<'a> {
    match template {
        Arg::Real(_) => {
            let x = data.get(*at).copied().unwrap_or(0.0);
            *at += 1;
            Arg::Real(x)
        }
        Arg::Array { data: d, shape } => {
            let n = d.len();
            let start = (*at).min(data.len());
            let end = (*at + n).min(data.len());
            *at += n;
            Arg::Array {
                data: &data[start..end],
                shape: shape.clone(),
            }
        }
        Arg::Tuple(items) => Arg::Tuple(items.iter().map(|x| shaped_like(x, data, at)).collect()),
        Arg::Elements(items) => {
            Arg::Elements(items.iter().map(|x| shaped_like(x, data, at)).collect())
        }
    }
}

/// The number of reals an argument holds.
fn leaf_count(arg: &Arg) -> usize {
    match arg {
        Arg::Real(_) => 1,
        Arg::Array { data, .. } => data.len(),
        Arg::Tuple(items) | Arg::Elements(items) => items.iter().map(leaf_count).sum(),
    }
}

/// The arguments of a function of the parameters and then one direction per parameter
/// of `wrt`.
fn with_directions<'a>(
    args: &[Arg<'a>],
    directions: &[Arg<'a>],
    wrt: &[usize],
    params: usize,
    what: &str,
) -> Result<Vec<Arg<'a>>, Error> {
    if directions.len() != params {
        return Err(Error::Argument(format!(
            "{} {what}(s) given, one per parameter is needed ({params})",
            directions.len()
        )));
    }
    let mut all = args.to_vec();
    all.extend(wrt.iter().map(|&i| directions[i].clone()));
    Ok(all)
}

impl Engine {
    /// Value and directional derivative of the last definition of `src` (any ground
    /// result), by native forward mode, with respect to every parameter holding reals.
    pub fn compile_jvp(&self, src: &str) -> Result<JvpFn, Error> {
        self.compile_jvp_with(src, GradOptions::default())
    }

    /// [`Engine::compile_jvp`] of a chosen entry point, with tangents for the parameters
    /// of `wrt` only (the others held fixed).
    pub fn compile_jvp_with(&self, src: &str, options: GradOptions) -> Result<JvpFn, Error> {
        let mut p = Pipeline::load_in(src, options.entry, self.take_arena())?;
        let mut wrt = p.wrt(options.wrt)?;
        wrt.sort_unstable();
        let jvp = p.optimized_forward(&wrt)?;
        let params = p.source.params.len();
        let func = self.compile_derived(p, &jvp)?;
        Ok(JvpFn {
            func,
            wrt,
            params,
            leaves: Mutex::default(),
        })
    }

    /// Value, gradient and Hessian-vector product of the last definition of `src` (which
    /// must return `real`), by forward mode over the optimized gradient.
    pub fn compile_hvp(&self, src: &str) -> Result<HvpFn, Error> {
        self.compile_hvp_with(src, GradOptions::default(), SecondOrder::default())
    }

    /// [`Engine::compile_hvp`] of a chosen entry point and parameters, by either route.
    pub fn compile_hvp_with(
        &self,
        src: &str,
        options: GradOptions,
        route: SecondOrder,
    ) -> Result<HvpFn, Error> {
        let mut p = Pipeline::load_in(src, options.entry, self.take_arena())?;
        let mut wrt = p.wrt(options.wrt)?;
        wrt.sort_unstable();
        let hvp = p.optimized_hvp(&wrt, route)?;
        let params = p.source.params.len();
        let func = self.compile_derived(p, &hvp)?;
        Ok(HvpFn {
            func,
            wrt,
            params,
            leaves: Mutex::default(),
        })
    }

    /// Value, gradient and dense Hessian of the last definition of `src` (for small
    /// inputs: one Hessian-vector product per real input).
    pub fn compile_hessian(&self, src: &str) -> Result<HessianFn, Error> {
        self.compile_hessian_with(src, GradOptions::default())
    }

    /// [`Engine::compile_hessian`] of a chosen entry point and parameters.
    pub fn compile_hessian_with(
        &self,
        src: &str,
        options: GradOptions,
    ) -> Result<HessianFn, Error> {
        let hvp = self.compile_hvp_with(src, options, SecondOrder::default())?;
        Ok(HessianFn { hvp })
    }
}
