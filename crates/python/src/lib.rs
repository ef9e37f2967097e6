//! The Python package `unfad` (its native module `unfad._native`): compile a program once,
//! then call its value and gradient on NumPy arrays.
//!
//! ```python
//! import numpy as np, unfad
//! f = unfad.compile_grad("def dot(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)")
//! value, (dA, dB) = f(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
//! ```
//!
//! A call reads its arguments ([`convert`]), releases the GIL, runs the facade's checked call
//! with a pooled [`unfad::Output`], takes the GIL back and shapes the results like the
//! arguments. Errors become exceptions of `unfad._errors` ([`errors`]); a panic is caught
//! before it reaches Python. `emit` and `cost` run the pipeline again ([`stages`]).
//! Directional derivatives, Hessian-vector products and dense Hessians go through the
//! same door ([`higher`]).
//!
//! Built by maturin from `python/pyproject.toml`; in the workspace it builds like any crate
//! (`cargo clippy --workspace`), and `python/tests/` tests it under pytest.

#![forbid(unsafe_code)]

mod convert;
mod errors;
mod higher;
mod stages;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use unfad::{Engine, GradOptions, Output};
use unfad_syntax::Type;

use convert::{Held, Params, Reader};
use errors::{no_panic, Failure};
use stages::Origin;

/// The engine every compilation goes through (it keeps term arenas for reuse).
fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(Engine::new)
}

/// The parameter names and types of a compiled function, as the facade keeps them.
fn params_of(names: &[String], ty: impl Fn(usize) -> Option<Type>) -> Result<Params, Failure> {
    let types = (0..names.len())
        .map(|k| ty(k).ok_or_else(|| Failure::Internal("an untyped parameter".into())))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Params {
        names: names.to_vec(),
        types,
    })
}

/// `wrt` as names: a list (or tuple) of names, or one name.
fn names_of(wrt: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<String>>> {
    match wrt {
        None => Ok(None),
        Some(w) if w.is_none() => Ok(None),
        Some(w) => match w.extract::<String>() {
            Ok(one) => Ok(Some(vec![one])),
            Err(_) => Ok(Some(w.extract::<Vec<String>>()?)),
        },
    }
}

/// Compile the value and gradient of a definition of `source` (default: the last one),
/// with respect to the parameters named in `wrt` (default: all). The GIL is released while
/// compiling.
#[pyfunction]
#[pyo3(signature = (source, entry = None, wrt = None))]
fn compile_grad(
    py: Python<'_>,
    source: String,
    entry: Option<String>,
    wrt: Option<&Bound<'_, PyAny>>,
) -> PyResult<GradFunction> {
    let wrt = names_of(wrt)?;
    py.detach(|| {
        no_panic(|| {
            let wrt_refs: Option<Vec<&str>> =
                wrt.as_ref().map(|w| w.iter().map(String::as_str).collect());
            let grad = engine().compile_grad_with(
                &source,
                GradOptions {
                    entry: entry.as_deref(),
                    wrt: wrt_refs.as_deref(),
                },
            )?;
            let params = params_of(grad.param_names(), |k| grad.param_type(k).cloned())?;
            let origin = Origin {
                wrt: Some(grad.wrt().to_vec()),
                source,
                entry,
            };
            Ok(GradFunction {
                grad,
                params,
                origin,
                outputs: Mutex::new(Vec::new()),
            })
        })
    })
    .map_err(|f| f.into_pyerr(py))
}

/// Compile the value alone of a definition of `source` (default: the last one), whatever
/// its result type. The GIL is released while compiling.
#[pyfunction]
#[pyo3(signature = (source, entry = None))]
fn compile(py: Python<'_>, source: String, entry: Option<String>) -> PyResult<Function> {
    py.detach(|| {
        no_panic(|| {
            let func = match &entry {
                Some(e) => engine().compile_entry(&source, e)?,
                None => engine().compile(&source)?,
            };
            let params = params_of(func.param_names(), |k| func.param_type(k).cloned())?;
            let ret = func.ret_type().clone();
            Ok(Function {
                func,
                params,
                ret,
                origin: Origin {
                    source,
                    entry,
                    wrt: None,
                },
            })
        })
    })
    .map_err(|f| f.into_pyerr(py))
}

/// How many array arguments have been converted (copied) so far in this process. A
/// float64 C-contiguous array is read in place and does not count.
#[pyfunction]
fn conversions() -> u64 {
    convert::CONVERSIONS.load(Ordering::Relaxed)
}

/// A compiled value and gradient. Call it with one argument per parameter.
#[pyclass(frozen, name = "GradFunction", module = "unfad")]
struct GradFunction {
    grad: unfad::GradFn,
    params: Params,
    origin: Origin,
    /// Outputs of finished calls, reused (one per call running at once).
    outputs: Mutex<Vec<Output>>,
}

impl GradFunction {
    /// Read `args`, run the native call without the GIL, and hand the output and the held
    /// arguments (whose shapes the gradients take) to `finish`.
    fn run<'py, T>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        finish: impl FnOnce(&Output, &[Held<'py>]) -> Result<T, Failure>,
    ) -> PyResult<T> {
        let result = (|| {
            let held = Reader::new(&self.params).read_all(args)?;
            let call_args = held.iter().map(Held::arg).collect::<Result<Vec<_>, _>>()?;
            let mut out = self
                .outputs
                .lock()
                .ok()
                .and_then(|mut o| o.pop())
                .unwrap_or_default();
            py.detach(|| no_panic(|| Ok(self.grad.call_into(&call_args, &mut out)?)))?;
            let shaped = finish(&out, &held);
            if let Ok(mut pool) = self.outputs.lock() {
                pool.push(out);
            }
            shaped
        })();
        result.map_err(|f| f.into_pyerr(py))
    }

    /// The gradient with respect to parameter `i`, shaped like its argument.
    fn gradient<'py>(
        py: Python<'py>,
        out: &Output,
        held: &[Held<'py>],
        i: usize,
    ) -> Result<Bound<'py, PyAny>, Failure> {
        let mut leaves = out.gradient(i);
        convert::shaped_like(py, &held[i], &mut leaves)
    }

    fn wrt_indices(&self) -> &[usize] {
        self.grad.wrt()
    }
}

#[pymethods]
impl GradFunction {
    /// `(value, gradients)`: the value as a float, and a tuple of the gradients with
    /// respect to the differentiated parameters, in parameter order, each shaped like its
    /// argument (an array for an array, a float for a real, a tuple for a tuple).
    #[pyo3(signature = (*args))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<(f64, Bound<'py, PyTuple>)> {
        self.run(py, args, |out, held| {
            let grads = self
                .wrt_indices()
                .iter()
                .map(|&i| Self::gradient(py, out, held, i))
                .collect::<Result<Vec<_>, _>>()?;
            let grads = PyTuple::new(py, grads).map_err(|e| Failure::Internal(e.to_string()))?;
            Ok((out.value, grads))
        })
    }

    /// `(value, gradients)` with the gradients in a dict keyed by parameter name.
    #[pyo3(signature = (*args))]
    fn by_name<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<(f64, Bound<'py, PyDict>)> {
        self.run(py, args, |out, held| {
            let grads = PyDict::new(py);
            for &i in self.wrt_indices() {
                grads
                    .set_item(&self.params.names[i], Self::gradient(py, out, held, i)?)
                    .map_err(|e| Failure::Internal(e.to_string()))?;
            }
            Ok((out.value, grads))
        })
    }

    /// Seconds per call of the facade's native call alone (`GradFn::call_into`), the mean
    /// of `number` calls made in Rust on these arguments, read once: what a Python call
    /// costs beyond this is the Python door's overhead.
    #[pyo3(signature = (*args, number = 100_000))]
    fn time_native<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        number: u32,
    ) -> PyResult<f64> {
        let result = (|| {
            let held = Reader::new(&self.params).read_all(args)?;
            let call_args = held.iter().map(Held::arg).collect::<Result<Vec<_>, _>>()?;
            py.detach(|| {
                no_panic(|| {
                    let mut out = Output::default();
                    self.grad.call_into(&call_args, &mut out)?;
                    let start = Instant::now();
                    for _ in 0..number {
                        self.grad.call_into(&call_args, &mut out)?;
                    }
                    Ok(start.elapsed().as_secs_f64() / f64::from(number.max(1)))
                })
            })
        })();
        result.map_err(|f| f.into_pyerr(py))
    }

    /// The parameters' names, in order.
    #[getter]
    fn params(&self) -> Vec<String> {
        self.params.names.clone()
    }

    /// The differentiated parameters' names, in order (the order of the gradients).
    #[getter]
    fn wrt(&self) -> Vec<String> {
        self.wrt_indices()
            .iter()
            .map(|&i| self.params.names[i].clone())
            .collect()
    }

    /// The parameters' types, as the language writes them.
    #[getter]
    fn types(&self) -> Vec<String> {
        self.params.types.iter().map(|t| t.to_string()).collect()
    }

    /// The text of a stage: "source", "unf", "target", "optimized" or "clif".
    fn emit(&self, py: Python<'_>, stage: &str) -> PyResult<String> {
        py.detach(|| no_panic(|| self.origin.emit(stage)))
            .map_err(|f| f.into_pyerr(py))
    }

    /// The cost model's measure of the primal and the gradient, with sizes from `sizes`
    /// (a dict; 100 for sizes it does not name), `p` and the bound `4 * 3^p`.
    #[pyo3(signature = (sizes = None))]
    fn cost<'py>(
        &self,
        py: Python<'py>,
        sizes: Option<HashMap<String, u64>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        cost_dict(py, &self.origin, sizes)
    }

    fn __repr__(&self) -> String {
        format!(
            "<unfad.GradFunction ({}) wrt ({})>",
            signature_text(&self.params),
            self.wrt().join(", ")
        )
    }
}

/// A compiled value. Call it with one argument per parameter.
#[pyclass(frozen, name = "Function", module = "unfad")]
struct Function {
    func: unfad::Func,
    params: Params,
    ret: Type,
    origin: Origin,
}

#[pymethods]
impl Function {
    /// The value: a float for a real, an array for an array of reals, a tuple for a tuple,
    /// a list for an array of tuples.
    #[pyo3(signature = (*args))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let result = (|| {
            let mut reader = Reader::new(&self.params);
            let held = reader.read_all(args)?;
            let call_args = held.iter().map(Held::arg).collect::<Result<Vec<_>, _>>()?;
            let leaves = py.detach(|| no_panic(|| Ok(self.func.call(&call_args)?)))?;
            let mut rest = leaves.as_slice();
            convert::shaped_as(py, &self.ret, &reader.sizes, &mut rest)
        })();
        result.map_err(|f| f.into_pyerr(py))
    }

    /// The parameters' names, in order.
    #[getter]
    fn params(&self) -> Vec<String> {
        self.params.names.clone()
    }

    /// The parameters' types, as the language writes them.
    #[getter]
    fn types(&self) -> Vec<String> {
        self.params.types.iter().map(|t| t.to_string()).collect()
    }

    /// The text of a stage: "source", "optimized" or "clif".
    fn emit(&self, py: Python<'_>, stage: &str) -> PyResult<String> {
        py.detach(|| no_panic(|| self.origin.emit(stage)))
            .map_err(|f| f.into_pyerr(py))
    }

    /// The cost model's measure of the value, with sizes from `sizes` (a dict; 100 for
    /// sizes it does not name), and `p`.
    #[pyo3(signature = (sizes = None))]
    fn cost<'py>(
        &self,
        py: Python<'py>,
        sizes: Option<HashMap<String, u64>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        cost_dict(py, &self.origin, sizes)
    }

    fn __repr__(&self) -> String {
        format!(
            "<unfad.Function ({}) -> {}>",
            signature_text(&self.params),
            self.ret
        )
    }
}

/// `A: [n]real, B: [n]real`.
fn signature_text(params: &Params) -> String {
    let parts: Vec<String> = params
        .names
        .iter()
        .zip(&params.types)
        .map(|(n, t)| format!("{n}: {t}"))
        .collect();
    parts.join(", ")
}

/// The cost report as a dict, with the keys of `unfad cost`'s JSON.
fn cost_dict<'py>(
    py: Python<'py>,
    origin: &Origin,
    sizes: Option<HashMap<String, u64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut given: Vec<(String, u64)> = sizes.unwrap_or_default().into_iter().collect();
    given.sort();
    let report = py
        .detach(|| no_panic(|| origin.cost(&given)))
        .map_err(|f| f.into_pyerr(py))?;
    let cost = |c: &unfad_opt::Cost| -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("moves", c.moves)?;
        d.set_item("adds", c.adds)?;
        d.set_item("mults", c.mults)?;
        d.set_item("nlops", c.nlops)?;
        d.set_item("total", c.total())?;
        Ok(d)
    };
    let d = PyDict::new(py);
    let sizes = PyDict::new(py);
    for (k, v) in &report.sizes {
        sizes.set_item(k, v)?;
    }
    d.set_item("sizes", sizes)?;
    let bound = &report.bound;
    d.set_item("primal", cost(&bound.primal)?)?;
    d.set_item("p", bound.p)?;
    if report.gradient {
        d.set_item("gradient", cost(&bound.gradient)?)?;
        d.set_item("bound", bound.factor())?;
        d.set_item("ratio", bound.ratio())?;
        d.set_item("holds", bound.holds())?;
    }
    Ok(d)
}

/// The native module `unfad._native`; the package `unfad` re-exports it.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compile_grad, m)?)?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(conversions, m)?)?;
    m.add_class::<GradFunction>()?;
    m.add_class::<Function>()?;
    m.add_function(wrap_pyfunction!(higher::compile_jvp, m)?)?;
    m.add_function(wrap_pyfunction!(higher::compile_hvp, m)?)?;
    m.add_function(wrap_pyfunction!(higher::compile_hessian, m)?)?;
    m.add_class::<higher::JvpFunction>()?;
    m.add_class::<higher::HvpFunction>()?;
    m.add_class::<higher::HessianFunction>()?;
    Ok(())
}
