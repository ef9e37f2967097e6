//! Derivatives beyond the gradient from Python: `compile_jvp` (value and directional
//! derivative, by native forward mode), `compile_hvp` (value, gradient and Hessian-vector
//! product, forward over reverse) and `compile_hessian` (value, gradient and dense Hessian).
//!
//! Each wraps the facade's `JvpFn`, `HvpFn` or `HessianFn` the way `GradFunction` wraps
//! `GradFn`: the arguments and the directions are read by [`convert`] (a direction is
//! checked to have its argument's shape), the native call runs without the GIL with its
//! panics caught, and the results are shaped like the arguments (a gradient, a
//! Hessian-vector product) or like the result type (a jvp's value and tangent).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use unfad::{Arg, GradOptions, SecondOrder};
use unfad_syntax::{SizeBindings, Type};

use crate::convert::{self, Held, Params, Reader};
use crate::errors::{no_panic, Failure};
use crate::{engine, names_of, params_of, signature_text};

/// Compile with the facade's options made of `entry` and `wrt` (a name or a list of
/// names), the GIL released.
fn compile_derivative<T: Send>(
    py: Python<'_>,
    entry: Option<&str>,
    wrt: Option<&Bound<'_, PyAny>>,
    build: impl FnOnce(GradOptions<'_>) -> Result<T, Failure> + Send,
) -> PyResult<T> {
    let wrt = names_of(wrt)?;
    py.detach(|| {
        no_panic(|| {
            let wrt_refs: Option<Vec<&str>> =
                wrt.as_ref().map(|w| w.iter().map(String::as_str).collect());
            build(GradOptions {
                entry,
                wrt: wrt_refs.as_deref(),
            })
        })
    })
    .map_err(|f| f.into_pyerr(py))
}

/// Compile the value and directional derivative of a definition of `source` (default:
/// the last one; any result type), with tangents for the parameters named in `wrt`
/// (default: all holding reals; the others are held fixed). The GIL is released while
/// compiling.
#[pyfunction]
#[pyo3(signature = (source, entry = None, wrt = None))]
pub fn compile_jvp(
    py: Python<'_>,
    source: String,
    entry: Option<String>,
    wrt: Option<&Bound<'_, PyAny>>,
) -> PyResult<JvpFunction> {
    compile_derivative(py, entry.as_deref(), wrt, |options| {
        let jvp = engine().compile_jvp_with(&source, options)?;
        let func = jvp.function();
        let params = params_of(jvp.param_names(), |k| func.param_type(k).cloned())?;
        let value_type = jvp
            .value_type()
            .cloned()
            .ok_or_else(|| Failure::Internal("a jvp without a (value, tangent) result".into()))?;
        Ok(JvpFunction {
            jvp,
            params,
            value_type,
        })
    })
}

/// Compile the value, gradient and Hessian-vector product of a definition of `source`
/// (default: the last one), which must return `real`, with respect to the parameters
/// named in `wrt` (default: all), by forward mode over the optimized gradient. The GIL is
/// released while compiling.
#[pyfunction]
#[pyo3(signature = (source, entry = None, wrt = None))]
pub fn compile_hvp(
    py: Python<'_>,
    source: String,
    entry: Option<String>,
    wrt: Option<&Bound<'_, PyAny>>,
) -> PyResult<HvpFunction> {
    compile_derivative(py, entry.as_deref(), wrt, |options| {
        let hvp = engine().compile_hvp_with(&source, options, SecondOrder::ForwardOverReverse)?;
        let func = hvp.function();
        let params = params_of(hvp.param_names(), |k| func.param_type(k).cloned())?;
        Ok(HvpFunction { hvp, params })
    })
}

/// Compile the value, gradient and dense Hessian of a definition of `source` (default:
/// the last one), which must return `real`, with respect to the parameters named in `wrt`
/// (default: all): for small inputs, as a call costs one Hessian-vector product per real
/// input. The GIL is released while compiling.
#[pyfunction]
#[pyo3(signature = (source, entry = None, wrt = None))]
pub fn compile_hessian(
    py: Python<'_>,
    source: String,
    entry: Option<String>,
    wrt: Option<&Bound<'_, PyAny>>,
) -> PyResult<HessianFunction> {
    compile_derivative(py, entry.as_deref(), wrt, |options| {
        let hessian = engine().compile_hessian_with(&source, options)?;
        let func = hessian.function();
        let params = params_of(hessian.param_names(), |k| func.param_type(k).cloned())?;
        Ok(HessianFunction { hessian, params })
    })
}

/// The arguments of a call and, when it takes some, its directions (tangents, or the
/// direction of a Hessian-vector product): one per differentiated parameter, in `wrt`
/// order, each of its argument's shape.
struct Call<'py> {
    args: Vec<Held<'py>>,
    directions: Vec<Held<'py>>,
    /// The size variables as the arguments bind them (the result's shape).
    sizes: SizeBindings,
}

impl<'py> Call<'py> {
    /// Read the arguments (one per parameter) and the directions `given`: a tuple or list
    /// with one per differentiated parameter in order, or a dict keyed by their names.
    fn read(
        params: &Params,
        wrt: &[usize],
        args: &Bound<'py, PyTuple>,
        given: Option<&Bound<'py, PyAny>>,
        what: &str,
    ) -> Result<Call<'py>, Failure> {
        let mut reader = Reader::new(params);
        let held = reader.read_all(args)?;
        let directions = match given {
            Some(given) => read_directions(params, wrt, &held, given, what)?,
            None => Vec::new(),
        };
        Ok(Call {
            args: held,
            directions,
            sizes: reader.sizes,
        })
    }

    /// The facade's arguments.
    fn args(&self) -> Result<Vec<Arg<'_>>, Failure> {
        self.args.iter().map(Held::arg).collect()
    }

    /// The facade's directions: one per parameter, the argument itself (not read) for a
    /// parameter that is not differentiated.
    fn directions(&self, wrt: &[usize]) -> Result<Vec<Arg<'_>>, Failure> {
        (0..self.args.len())
            .map(|k| match wrt.iter().position(|&i| i == k) {
                Some(at) => self.directions[at].arg(),
                None => self.args[k].arg(),
            })
            .collect()
    }
}

/// The directions of the parameters of `wrt`, in order, from `given` (see [`Call::read`]),
/// each read against its parameter's type and checked to have its argument's shape.
fn read_directions<'py>(
    params: &Params,
    wrt: &[usize],
    args: &[Held<'py>],
    given: &Bound<'py, PyAny>,
    what: &str,
) -> Result<Vec<Held<'py>>, Failure> {
    let names = &params.names;
    let wrt_names: Vec<&str> = wrt.iter().map(|&i| names[i].as_str()).collect();
    let items: Vec<Bound<'py, PyAny>> = if let Ok(dict) = given.cast::<PyDict>() {
        for key in dict.keys() {
            let known = key
                .extract::<String>()
                .is_ok_and(|k| wrt_names.contains(&k.as_str()));
            if !known {
                return Err(Failure::Argument {
                    message: format!(
                        "{what}s: {} is not a differentiated parameter ({})",
                        key.repr()
                            .map_or_else(|_| "?".to_string(), |r| r.to_string()),
                        wrt_names.join(", ")
                    ),
                    parameter: None,
                });
            }
        }
        wrt.iter()
            .map(|&i| match dict.get_item(&names[i]) {
                Ok(Some(item)) => Ok(item),
                _ => Err(Failure::argument(
                    &names[i],
                    format!("no {what} given for parameter `{}`", names[i]),
                )),
            })
            .collect::<Result<_, _>>()?
    } else if let Ok(tuple) = given.cast::<PyTuple>() {
        tuple.iter().collect()
    } else if let Ok(list) = given.cast::<PyList>() {
        list.iter().collect()
    } else {
        return Err(Failure::Argument {
            message: format!(
                "give the {what}s as a tuple with one per differentiated parameter ({}) or a \
                 dict keyed by their names, not {}",
                wrt_names.join(", "),
                convert::describe(given)
            ),
            parameter: None,
        });
    };
    if items.len() != wrt.len() {
        return Err(Failure::Argument {
            message: format!(
                "{} {what}(s) given, one per differentiated parameter is needed ({})",
                items.len(),
                wrt_names.join(", ")
            ),
            parameter: None,
        });
    }
    let mut out = Vec::with_capacity(wrt.len());
    for (&i, item) in wrt.iter().zip(&items) {
        let name = &names[i];
        let held = Reader::new(params)
            .read_param(i, item)
            .map_err(|f| match f {
                Failure::Argument { message, parameter } => Failure::Argument {
                    message: format!("the {what} of `{name}`: {message}"),
                    parameter,
                },
                other => other,
            })?;
        if !convert::same_shape(&held, &args[i]) {
            return Err(Failure::argument(
                name,
                format!(
                    "the {what} of parameter `{name}` is {}, but its argument is {}: a {what} \
                     has its argument's shape",
                    convert::shape_of(&held),
                    convert::shape_of(&args[i])
                ),
            ));
        }
        out.push(held);
    }
    Ok(out)
}

/// The gradient-shaped leaves of parameter `i` (a gradient or a Hessian-vector product),
/// shaped like its argument.
fn shaped_like_param<'py>(
    py: Python<'py>,
    held: &[Held<'py>],
    i: usize,
    leaves: &[f64],
) -> Result<Bound<'py, PyAny>, Failure> {
    let mut rest = leaves;
    convert::shaped_like(py, &held[i], &mut rest)
}

/// One shaped value per differentiated parameter, as a tuple in `wrt` order.
fn tuple_of<'py, 'o>(
    py: Python<'py>,
    wrt: &[usize],
    held: &[Held<'py>],
    leaves: impl Fn(usize) -> &'o [f64],
) -> Result<Bound<'py, PyTuple>, Failure> {
    let items = wrt
        .iter()
        .map(|&i| shaped_like_param(py, held, i, leaves(i)))
        .collect::<Result<Vec<_>, _>>()?;
    PyTuple::new(py, items).map_err(|e| Failure::Internal(e.to_string()))
}

/// One shaped value per differentiated parameter, as a dict keyed by name.
fn dict_of<'py, 'o>(
    py: Python<'py>,
    params: &Params,
    wrt: &[usize],
    held: &[Held<'py>],
    leaves: impl Fn(usize) -> &'o [f64],
) -> Result<Bound<'py, PyDict>, Failure> {
    let dict = PyDict::new(py);
    for &i in wrt {
        dict.set_item(&params.names[i], shaped_like_param(py, held, i, leaves(i))?)
            .map_err(|e| Failure::Internal(e.to_string()))?;
    }
    Ok(dict)
}

/// The names of the parameters of `wrt`, in order.
fn wrt_names(params: &Params, wrt: &[usize]) -> Vec<String> {
    wrt.iter().map(|&i| params.names[i].clone()).collect()
}

/// A compiled value and directional derivative. Call it with one argument per parameter
/// and the tangents: `f(*args, tangents=...)`.
#[pyclass(frozen, name = "JvpFunction", module = "unfad")]
pub struct JvpFunction {
    jvp: unfad::JvpFn,
    params: Params,
    /// The entry point's result type: the value's and the tangent's.
    value_type: Type,
}

#[pymethods]
impl JvpFunction {
    /// `(value, tangent)`: the value at the arguments and its derivative in the direction
    /// `tangents` (a tuple with one tangent per differentiated parameter, in order, each of
    /// its argument's shape; or a dict keyed by their names). Both are shaped like
    /// `compile`'s value: a float for a real, an array for an array of reals, a tuple for
    /// a tuple, a list for an array of tuples.
    #[pyo3(signature = (*args, tangents))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        tangents: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let result = (|| {
            let wrt = self.jvp.wrt();
            let call = Call::read(&self.params, wrt, args, Some(tangents), "tangent")?;
            let (values, directions) = (call.args()?, call.directions(wrt)?);
            let out = py.detach(|| no_panic(|| Ok(self.jvp.call(&values, &directions)?)))?;
            let shaped = |leaves: &[f64]| {
                let mut rest = leaves;
                convert::shaped_as(py, &self.value_type, &call.sizes, &mut rest)
            };
            Ok::<_, Failure>((shaped(&out.value)?, shaped(&out.tangent)?))
        })();
        result.map_err(|f| f.into_pyerr(py))
    }

    /// The parameters' names, in order.
    #[getter]
    fn params(&self) -> Vec<String> {
        self.params.names.clone()
    }

    /// The names of the parameters given a tangent, in order (the order of `tangents`).
    #[getter]
    fn wrt(&self) -> Vec<String> {
        wrt_names(&self.params, self.jvp.wrt())
    }

    /// The parameters' types, as the language writes them.
    #[getter]
    fn types(&self) -> Vec<String> {
        self.params.types.iter().map(|t| t.to_string()).collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "<unfad.JvpFunction ({}) -> {} wrt ({})>",
            signature_text(&self.params),
            self.value_type,
            self.wrt().join(", ")
        )
    }
}

/// A compiled value, gradient and Hessian-vector product. Call it with one argument per
/// parameter and the direction: `f(*args, direction=...)`.
#[pyclass(frozen, name = "HvpFunction", module = "unfad")]
pub struct HvpFunction {
    hvp: unfad::HvpFn,
    params: Params,
}

impl HvpFunction {
    /// Read the arguments and the direction, run the native call without the GIL, and
    /// hand the output and the held arguments (whose shapes the results take) to `finish`.
    fn run<'py, T>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        direction: &Bound<'py, PyAny>,
        finish: impl FnOnce(&unfad::HvpOutput, &[Held<'py>]) -> Result<T, Failure>,
    ) -> PyResult<T> {
        let result = (|| {
            let wrt = self.hvp.wrt();
            let call = Call::read(&self.params, wrt, args, Some(direction), "direction")?;
            let (values, directions) = (call.args()?, call.directions(wrt)?);
            let out = py.detach(|| no_panic(|| Ok(self.hvp.call(&values, &directions)?)))?;
            finish(&out, &call.args)
        })();
        result.map_err(|f| f.into_pyerr(py))
    }
}

#[pymethods]
impl HvpFunction {
    /// `(value, gradients, hvps)`: the value as a float, and tuples of the gradients and
    /// of the Hessian times `direction`, one per differentiated parameter in order, each
    /// shaped like its argument (as `GradFunction` gives gradients). `direction` is a
    /// tuple with one direction per differentiated parameter, in order, each of its
    /// argument's shape, or a dict keyed by their names.
    #[pyo3(signature = (*args, direction))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        direction: &Bound<'py, PyAny>,
    ) -> PyResult<(f64, Bound<'py, PyTuple>, Bound<'py, PyTuple>)> {
        let wrt = self.hvp.wrt();
        self.run(py, args, direction, |out, held| {
            let gradients = tuple_of(py, wrt, held, |i| out.gradient(i))?;
            let hvps = tuple_of(py, wrt, held, |i| out.hvp(i))?;
            Ok((out.value, gradients, hvps))
        })
    }

    /// `(value, gradients, hvps)` with the gradients and the products in dicts keyed by
    /// parameter name.
    #[pyo3(signature = (*args, direction))]
    fn by_name<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        direction: &Bound<'py, PyAny>,
    ) -> PyResult<(f64, Bound<'py, PyDict>, Bound<'py, PyDict>)> {
        let wrt = self.hvp.wrt();
        self.run(py, args, direction, |out, held| {
            let gradients = dict_of(py, &self.params, wrt, held, |i| out.gradient(i))?;
            let hvps = dict_of(py, &self.params, wrt, held, |i| out.hvp(i))?;
            Ok((out.value, gradients, hvps))
        })
    }

    /// The parameters' names, in order.
    #[getter]
    fn params(&self) -> Vec<String> {
        self.params.names.clone()
    }

    /// The differentiated parameters' names, in order (the order of the gradients, the
    /// products and `direction`).
    #[getter]
    fn wrt(&self) -> Vec<String> {
        wrt_names(&self.params, self.hvp.wrt())
    }

    /// The parameters' types, as the language writes them.
    #[getter]
    fn types(&self) -> Vec<String> {
        self.params.types.iter().map(|t| t.to_string()).collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "<unfad.HvpFunction ({}) wrt ({})>",
            signature_text(&self.params),
            self.wrt().join(", ")
        )
    }
}

/// A compiled value, gradient and dense Hessian. Call it with one argument per parameter.
#[pyclass(frozen, name = "HessianFunction", module = "unfad")]
pub struct HessianFunction {
    hessian: unfad::HessianFn,
    params: Params,
}

impl HessianFunction {
    /// Read the arguments, run the native calls without the GIL, and hand the output,
    /// the Hessian as an `n x n` array and the held arguments to `finish`.
    fn run<'py, T>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        finish: impl FnOnce(
            &unfad::HessianOutput,
            Bound<'py, PyAny>,
            &[Held<'py>],
        ) -> Result<T, Failure>,
    ) -> PyResult<T> {
        let result = (|| {
            let call = Call::read(&self.params, self.hessian.wrt(), args, None, "direction")?;
            let values = call.args()?;
            let out = py.detach(|| no_panic(|| Ok(self.hessian.call(&values)?)))?;
            let n = out.hessian.len();
            if let Some(row) = out.hessian.iter().find(|row| row.len() != n) {
                return Err(Failure::Internal(format!(
                    "a Hessian of {n} rows has a row of {} reals",
                    row.len()
                )));
            }
            let flat: Vec<f64> = out.hessian.concat();
            let matrix = convert::ndarray(py, &[n, n], &flat)?;
            finish(&out, matrix, &call.args)
        })();
        result.map_err(|f| f.into_pyerr(py))
    }
}

#[pymethods]
impl HessianFunction {
    /// `(value, gradients, hessian)`: the value as a float, a tuple of the gradients (one
    /// per differentiated parameter in order, shaped like its argument), and the Hessian as
    /// an `n x n` float64 array over the differentiated parameters' reals, flattened in
    /// parameter order (each row-major).
    #[pyo3(signature = (*args))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<(f64, Bound<'py, PyTuple>, Bound<'py, PyAny>)> {
        let wrt = self.hessian.wrt();
        self.run(py, args, |out, matrix, held| {
            let gradients = tuple_of(py, wrt, held, |i| out.gradient(i))?;
            Ok((out.value, gradients, matrix))
        })
    }

    /// `(value, gradients, hessian)` with the gradients in a dict keyed by parameter name.
    #[pyo3(signature = (*args))]
    fn by_name<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<(f64, Bound<'py, PyDict>, Bound<'py, PyAny>)> {
        let wrt = self.hessian.wrt();
        self.run(py, args, |out, matrix, held| {
            let gradients = dict_of(py, &self.params, wrt, held, |i| out.gradient(i))?;
            Ok((out.value, gradients, matrix))
        })
    }

    /// The parameters' names, in order.
    #[getter]
    fn params(&self) -> Vec<String> {
        self.params.names.clone()
    }

    /// The differentiated parameters' names, in order (the order of the gradients and of
    /// the Hessian's blocks).
    #[getter]
    fn wrt(&self) -> Vec<String> {
        wrt_names(&self.params, self.hessian.wrt())
    }

    /// The parameters' types, as the language writes them.
    #[getter]
    fn types(&self) -> Vec<String> {
        self.params.types.iter().map(|t| t.to_string()).collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "<unfad.HessianFunction ({}) wrt ({})>",
            signature_text(&self.params),
            self.wrt().join(", ")
        )
    }
}
