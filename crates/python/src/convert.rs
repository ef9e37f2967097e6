//! Python values in and out: arguments checked against the parameters' types and held as
//! the facade's `Arg`s (a float64 C-contiguous NumPy array is read in place, anything else
//! array-like is converted once, and counted), and flat results shaped back into floats,
//! NumPy arrays, tuples and lists.

use std::sync::atomic::{AtomicU64, Ordering};

use numpy::ndarray::{ArrayViewD, IxDyn};
use numpy::{
    PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArray,
    PyUntypedArrayMethods, ToPyArray,
};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyList, PyTuple};
use unfad::Arg;
use unfad_syntax::{Size, SizeBindings, Type};

use crate::errors::Failure;

/// How many arguments have been converted (copied) since the module was loaded: the
/// zero-copy path leaves it unchanged, which is how the tests check that path is taken.
pub static CONVERSIONS: AtomicU64 = AtomicU64::new(0);

/// The parameters of a compiled function: names and types, in order.
#[derive(Clone, Debug)]
pub struct Params {
    pub names: Vec<String>,
    pub types: Vec<Type>,
}

/// One argument as the call holds it while the native code runs: arrays of reals are
/// borrowed NumPy arrays (the caller's own, or the converted copy), read through a
/// read-only borrow so that Rust code cannot write to them meanwhile.
pub enum Held<'py> {
    Real(f64),
    Array {
        data: PyReadonlyArrayDyn<'py, f64>,
        shape: Vec<usize>,
    },
    Tuple(Vec<Held<'py>>),
    Elements(Vec<Held<'py>>),
}

impl Held<'_> {
    /// The facade's argument, borrowing this one's data.
    pub fn arg(&self) -> Result<Arg<'_>, Failure> {
        Ok(match self {
            Held::Real(x) => Arg::Real(*x),
            Held::Array { data, shape } => Arg::Array {
                data: data.as_slice().map_err(|e| {
                    Failure::Internal(format!("a held array is not contiguous: {e}"))
                })?,
                shape: shape.clone(),
            },
            Held::Tuple(items) => {
                Arg::Tuple(items.iter().map(Held::arg).collect::<Result<_, _>>()?)
            }
            Held::Elements(items) => {
                Arg::Elements(items.iter().map(Held::arg).collect::<Result<_, _>>()?)
            }
        })
    }
}

/// Checks Python arguments against the parameters, binding the size variables as it goes.
pub struct Reader<'a> {
    pub params: &'a Params,
    pub sizes: SizeBindings,
}

impl<'a> Reader<'a> {
    pub fn new(params: &'a Params) -> Reader<'a> {
        Reader {
            params,
            sizes: SizeBindings::default(),
        }
    }

    /// Hold every argument of a call (one per parameter, in order).
    pub fn read_all<'py>(&mut self, args: &Bound<'py, PyTuple>) -> Result<Vec<Held<'py>>, Failure> {
        let names = &self.params.names;
        if args.len() != names.len() {
            return Err(Failure::Argument {
                message: format!(
                    "{} argument(s) given, the function takes {} ({})",
                    args.len(),
                    names.len(),
                    names.join(", ")
                ),
                parameter: None,
            });
        }
        let mut held = Vec::with_capacity(names.len());
        for (i, arg) in args.iter().enumerate() {
            let ty = &self.params.types[i];
            held.push(self.read(i, ty, &arg, &names[i])?);
        }
        Ok(held)
    }

    /// Hold `obj` as a value of type `ty` for parameter `param`; `place` names where it sits
    /// in the parameter (`A`, `A[2]`, `p.1`) for error messages.
    fn read<'py>(
        &mut self,
        param: usize,
        ty: &Type,
        obj: &Bound<'py, PyAny>,
        place: &str,
    ) -> Result<Held<'py>, Failure> {
        let name = &self.params.names[param];
        match ty {
            Type::Int => match obj.extract::<f64>() {
                Ok(x) if !unfad_syntax::typeck::is_int(x) => Err(Failure::argument(
                    name,
                    format!(
                        "parameter `{place}` is an int, but the argument is {x} (ints are \
                             whole numbers up to 2^53 in magnitude)"
                    ),
                )),
                Ok(x) => {
                    if place == name.as_str() {
                        // An int parameter is also the size variable of its name (`iota n`).
                        let size = Size::var(name);
                        self.bind(param, ty, &size, x.max(0.0) as usize)?;
                    }
                    Ok(Held::Real(x))
                }
                Err(_) => Err(Failure::argument(
                    name,
                    format!(
                        "parameter `{place}` has type `{ty}`, but the argument is {}",
                        describe(obj)
                    ),
                )),
            },
            Type::Real | Type::Bool => match obj.extract::<f64>() {
                Ok(x) => Ok(Held::Real(x)),
                Err(_) => Err(Failure::argument(
                    name,
                    format!(
                        "parameter `{place}` has type `{ty}`, but the argument is {}",
                        describe(obj)
                    ),
                )),
            },
            Type::Tuple(items) => {
                let values = sequence(obj).filter(|v| v.len() == items.len());
                let Some(values) = values else {
                    return Err(Failure::argument(
                        name,
                        format!(
                            "parameter `{place}` has type `{ty}`: give a tuple of {} items, not {}",
                            items.len(),
                            describe(obj)
                        ),
                    ));
                };
                let mut held = Vec::with_capacity(items.len());
                for (k, (t, v)) in items.iter().zip(values).enumerate() {
                    held.push(self.read(param, t, &v, &format!("{place}.{k}"))?);
                }
                Ok(Held::Tuple(held))
            }
            Type::Array(size, elem) => {
                let (dims, leaf) = array_dims(ty);
                if matches!(leaf, Type::Real) {
                    return self.read_real_array(param, ty, &dims, obj, place);
                }
                let Some(values) = sequence(obj) else {
                    return Err(Failure::argument(
                        name,
                        format!(
                            "parameter `{place}` has type `{ty}`: give a list of its elements, \
                             not {}",
                            describe(obj)
                        ),
                    ));
                };
                self.bind(param, ty, size, values.len())?;
                let mut held = Vec::with_capacity(values.len());
                for (k, v) in values.iter().enumerate() {
                    held.push(self.read(param, elem, v, &format!("{place}[{k}]"))?);
                }
                Ok(Held::Elements(held))
            }
            Type::Func(..) => Err(Failure::argument(
                name,
                format!("parameter `{place}` has a function type `{ty}`"),
            )),
        }
    }

    /// Hold `obj` as the value of parameter `param` alone (a tangent or a direction, read
    /// against that parameter's type).
    pub fn read_param<'py>(
        &mut self,
        param: usize,
        obj: &Bound<'py, PyAny>,
    ) -> Result<Held<'py>, Failure> {
        let ty = self.params.types[param].clone();
        let name = self.params.names[param].clone();
        self.read(param, &ty, obj, &name)
    }

    fn bind(&mut self, param: usize, ty: &Type, size: &Size, len: usize) -> Result<(), Failure> {
        let names = &self.params.names;
        self.sizes
            .bind(names, param, ty, size, len as u64)
            .map_err(|m| Failure::argument(&names[param], m))
    }

    /// An array of reals of rank `dims.len()`: a float64 C-contiguous ndarray as it is,
    /// anything else through `numpy.ascontiguousarray(obj, float64)` when its dtype holds
    /// real numbers (floats, integers).
    fn read_real_array<'py>(
        &mut self,
        param: usize,
        ty: &Type,
        dims: &[Size],
        obj: &Bound<'py, PyAny>,
        place: &str,
    ) -> Result<Held<'py>, Failure> {
        let name = &self.params.names[param];
        let direct = obj
            .cast::<PyArrayDyn<f64>>()
            .ok()
            .filter(|a| a.is_c_contiguous() && a.is_aligned())
            .cloned();
        let array = match direct {
            Some(a) => a,
            None => convert(obj).map_err(|why| {
                Failure::argument(name, format!("parameter `{place}` has type `{ty}`: {why}"))
            })?,
        };
        let shape = array.shape().to_vec();
        if shape.len() != dims.len() {
            return Err(Failure::argument(
                name,
                format!(
                    "parameter `{place}` has type `{ty}` ({} dimension(s)), but the argument has \
                     shape {}",
                    dims.len(),
                    shape_text(&shape)
                ),
            ));
        }
        for (d, &len) in dims.iter().zip(&shape) {
            self.bind(param, ty, d, len)?;
        }
        let data = array.try_readonly().map_err(|e| {
            Failure::argument(
                name,
                format!("parameter `{place}`: the array cannot be read: {e}"),
            )
        })?;
        Ok(Held::Array { data, shape })
    }
}

/// Whether two held values have the same shape (kinds, array shapes, lengths).
pub fn same_shape(a: &Held, b: &Held) -> bool {
    match (a, b) {
        (Held::Real(_), Held::Real(_)) => true,
        (Held::Array { shape: x, .. }, Held::Array { shape: y, .. }) => x == y,
        (Held::Tuple(x), Held::Tuple(y)) | (Held::Elements(x), Held::Elements(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_shape(p, q))
        }
        _ => false,
    }
}

/// A held value's shape for error messages: `a float`, `an array of shape (3, 2)`, `a tuple
/// (a float, an array of shape (3,))`, `a list of 2 elements`.
pub fn shape_of(held: &Held) -> String {
    match held {
        Held::Real(_) => "a float".to_string(),
        Held::Array { shape, .. } => format!("an array of shape {}", shape_text(shape)),
        Held::Tuple(items) => {
            let parts: Vec<String> = items.iter().map(shape_of).collect();
            format!("a tuple ({})", parts.join(", "))
        }
        Held::Elements(items) => format!("a list of {} elements", items.len()),
    }
}

/// `obj` as a contiguous float64 array, converted by NumPy; an error says why not.
fn convert<'py>(obj: &Bound<'py, PyAny>) -> Result<Bound<'py, PyArrayDyn<f64>>, String> {
    let py = obj.py();
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        let dtype = a.dtype();
        if !matches!(dtype.kind(), b'f' | b'i' | b'u') {
            return Err(format!(
                "an array of dtype {dtype} cannot be read as reals (float64); floating-point \
                 and integer arrays are converted, others are refused"
            ));
        }
    } else if obj.is_instance_of::<pyo3::types::PyString>() || obj.is_none() {
        return Err(format!("the argument is {}, not an array", describe(obj)));
    }
    let numpy = py.import("numpy").map_err(|e| e.to_string())?;
    let converted = numpy
        .call_method1("ascontiguousarray", (obj, "float64"))
        .map_err(|e| {
            format!(
                "{} cannot be read as an array of reals ({e})",
                describe(obj)
            )
        })?;
    CONVERSIONS.fetch_add(1, Ordering::Relaxed);
    converted
        .cast_into::<PyArrayDyn<f64>>()
        .map_err(|e| format!("the conversion did not give a float64 array ({e})"))
}

/// The items of a tuple or list (not of an array or a string).
fn sequence<'py>(obj: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(t) = obj.cast::<PyTuple>() {
        return Some(t.iter().collect());
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return Some(l.iter().collect());
    }
    None
}

/// What an argument is, for error messages: `a float`, `an array of shape (3, 2) and dtype
/// float64`, `a str`.
pub fn describe(obj: &Bound<'_, PyAny>) -> String {
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        return format!(
            "an array of shape {} and dtype {}",
            shape_text(a.shape()),
            a.dtype()
        );
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return format!("a tuple of {} items", t.len());
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return format!("a list of {} items", l.len());
    }
    let type_name = obj
        .get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string());
    format!("a {type_name}")
}

/// A shape as Python writes it: `(3,)`, `(3, 2)`.
fn shape_text(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => {
            let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    }
}

/// The sizes of nested arrays around the leaf type: `[n][m]real` is `([n, m], real)`.
fn array_dims(ty: &Type) -> (Vec<Size>, &Type) {
    let mut dims = Vec::new();
    let mut t = ty;
    while let Type::Array(n, e) = t {
        dims.push(n.clone());
        t = e;
    }
    (dims, t)
}

/// Take the first `n` of `leaves`.
fn take<'l>(leaves: &mut &'l [f64], n: usize) -> Result<&'l [f64], Failure> {
    if leaves.len() < n {
        return Err(Failure::Internal(format!(
            "a result has {} reals where {n} were expected",
            leaves.len()
        )));
    }
    let (head, tail) = leaves.split_at(n);
    *leaves = tail;
    Ok(head)
}

/// A new NumPy array of `shape` holding `data` (row-major).
pub fn ndarray<'py>(
    py: Python<'py>,
    shape: &[usize],
    data: &[f64],
) -> Result<Bound<'py, PyAny>, Failure> {
    let view = ArrayViewD::from_shape(IxDyn(shape), data)
        .map_err(|e| Failure::Internal(format!("an array of shape {shape:?}: {e}")))?;
    Ok(view.to_pyarray(py).into_any())
}

/// The value shaped like the argument `held`, from its flat leaves (a gradient).
pub fn shaped_like<'py>(
    py: Python<'py>,
    held: &Held,
    leaves: &mut &[f64],
) -> Result<Bound<'py, PyAny>, Failure> {
    Ok(match held {
        Held::Real(_) => PyFloat::new(py, take(leaves, 1)?[0]).into_any(),
        Held::Array { shape, .. } => {
            let n = shape.iter().product();
            ndarray(py, shape, take(leaves, n)?)?
        }
        Held::Tuple(items) => {
            let values = items
                .iter()
                .map(|h| shaped_like(py, h, leaves))
                .collect::<Result<Vec<_>, _>>()?;
            PyTuple::new(py, values).map_err(python_failure)?.into_any()
        }
        Held::Elements(items) => {
            let values = items
                .iter()
                .map(|h| shaped_like(py, h, leaves))
                .collect::<Result<Vec<_>, _>>()?;
            PyList::new(py, values).map_err(python_failure)?.into_any()
        }
    })
}

/// A value of type `ty` from its flat leaves, with the sizes of the call (a result).
pub fn shaped_as<'py>(
    py: Python<'py>,
    ty: &Type,
    sizes: &SizeBindings,
    leaves: &mut &[f64],
) -> Result<Bound<'py, PyAny>, Failure> {
    // A size only mentioned below empty arrays has no data to fix it: it is 0.
    let size = |s: &Size| s.eval(&|v| Some(sizes.get(v).unwrap_or(0))).unwrap_or(0) as usize;
    Ok(match ty {
        Type::Real | Type::Int | Type::Bool => PyFloat::new(py, take(leaves, 1)?[0]).into_any(),
        Type::Tuple(items) => {
            let values = items
                .iter()
                .map(|t| shaped_as(py, t, sizes, leaves))
                .collect::<Result<Vec<_>, _>>()?;
            PyTuple::new(py, values).map_err(python_failure)?.into_any()
        }
        Type::Array(n, elem) => {
            let (dims, leaf) = array_dims(ty);
            if matches!(leaf, Type::Real) {
                let shape: Vec<usize> = dims.iter().map(size).collect();
                let count = shape.iter().product();
                ndarray(py, &shape, take(leaves, count)?)?
            } else {
                let values = (0..size(n))
                    .map(|_| shaped_as(py, elem, sizes, leaves))
                    .collect::<Result<Vec<_>, _>>()?;
                PyList::new(py, values).map_err(python_failure)?.into_any()
            }
        }
        Type::Func(..) => return Err(Failure::Internal(format!("a result of type `{ty}`"))),
    })
}

/// A Python error met while building a result (out of memory, ...), as an internal error.
fn python_failure(e: PyErr) -> Failure {
    Failure::Internal(e.to_string())
}
