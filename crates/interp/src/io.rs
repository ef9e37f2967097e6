//! Values at the boundary: JSON in and out, and the binding of size variables.
//!
//! A real is a JSON number, arrays and tuples are JSON arrays (the type says which), and an
//! input is an object from parameter name to value. Sizes are read off the values; a value
//! that does not fit its parameter's type is an error naming the parameter and both sizes.
//! Non-finite numbers, which JSON lacks, are written as the strings `"NaN"`, `"Infinity"`
//! and `"-Infinity"` and read back from them.

use serde_json::Value as Json;
use unfad_syntax::{Arena, At, Func, Size, SizeBindings, Type};

use crate::scalar::Scalar;
use crate::value::Value;

/// An argument that does not fit its parameter.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

/// The values of the size variables, and which parameter fixed each one.
#[derive(Clone, Debug, Default)]
pub struct SizeEnv {
    bindings: SizeBindings,
    /// Parameter names in the order they were first bound.
    names: Vec<String>,
}

impl SizeEnv {
    pub fn get(&self, var: &str) -> Option<u64> {
        self.bindings.get(var)
    }

    /// Record that array `size` of parameter `param` has `len` elements.
    pub fn bind(
        &mut self,
        param: &str,
        ty: &Type,
        size: &Size,
        len: u64,
    ) -> Result<(), InputError> {
        let index = match self.names.iter().position(|n| n == param) {
            Some(i) => i,
            None => {
                self.names.push(param.to_string());
                self.names.len() - 1
            }
        };
        self.bindings
            .bind(&self.names, index, ty, size, len)
            .map_err(InputError)
    }

    pub fn lookup(&self) -> impl Fn(&str) -> Option<u64> + '_ {
        move |v| self.get(v)
    }
}

fn number(param: &str, at: Option<&At>, ty: &Type, j: &Json) -> Result<f64, InputError> {
    let path = || At::place(param, at);
    match j {
        Json::Number(n) => n
            .as_f64()
            .ok_or_else(|| InputError(format!("parameter `{}`: {n} is not a double", path()))),
        Json::String(s) if s == "NaN" => Ok(f64::NAN),
        Json::String(s) if s == "Infinity" => Ok(f64::INFINITY),
        Json::String(s) if s == "-Infinity" => Ok(f64::NEG_INFINITY),
        other => Err(InputError(format!(
            "parameter `{}` (type `{ty}`): expected a number, found {}",
            path(),
            kind(other)
        ))),
    }
}

fn kind(j: &Json) -> String {
    match j {
        Json::Null => "null".into(),
        Json::Bool(b) => format!("`{b}`"),
        Json::Number(n) => format!("the number {n}"),
        Json::String(s) => format!("the string {s:?}"),
        Json::Array(a) => format!("an array of {} elements", a.len()),
        Json::Object(_) => "an object".into(),
    }
}

/// Read the value of parameter `param` of type `ty`, binding sizes in `sizes`. Errors name
/// the parameter and, inside arrays and tuples, the element (`A[2]`, `p.0`).
pub fn value_from_json<S: Scalar>(
    param: &str,
    ty: &Type,
    j: &Json,
    sizes: &mut SizeEnv,
) -> Result<Value<S>, InputError> {
    read(param, None, ty, j, sizes)
}

fn read<S: Scalar>(
    param: &str,
    at: Option<&At>,
    ty: &Type,
    j: &Json,
    sizes: &mut SizeEnv,
) -> Result<Value<S>, InputError> {
    match ty {
        Type::Real => Ok(Value::Real(S::constant(number(param, at, ty, j)?))),
        Type::Int => {
            let x = number(param, at, ty, j)?;
            if !unfad_syntax::typeck::is_int(x) {
                return Err(InputError(format!(
                    "parameter `{}` is an int, but the input has {x} (ints are whole numbers up to 2^53 in magnitude)",
                    At::place(param, at)
                )));
            }
            if at.is_none() {
                // An int parameter is also the size variable of its name (`iota n`).
                sizes.bind(param, ty, &Size::var(param), x.max(0.0) as u64)?;
            }
            Ok(Value::Real(S::constant(x)))
        }
        Type::Tuple(items) => match j {
            Json::Array(xs) if xs.len() == items.len() => {
                let vals = items
                    .iter()
                    .zip(xs)
                    .enumerate()
                    .map(|(i, (t, x))| read(param, Some(&At::item(at, i)), t, x, sizes))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Value::tuple(vals))
            }
            other => Err(InputError(format!(
                "parameter `{}`: a tuple of type `{ty}` is a JSON array of {} elements, found {}",
                At::place(param, at),
                items.len(),
                kind(other)
            ))),
        },
        Type::Array(size, elem) => match j {
            Json::Array(xs) => {
                sizes.bind(param, ty, size, xs.len() as u64)?;
                let vals = xs
                    .iter()
                    .enumerate()
                    .map(|(i, x)| read(param, Some(&At::element(at, i)), elem, x, sizes))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Value::array(vals))
            }
            other => Err(InputError(format!(
                "parameter `{}`: expected an array of type `{ty}`, found {}",
                At::place(param, at),
                kind(other)
            ))),
        },
        Type::Bool | Type::Func(..) => Err(InputError(format!(
            "parameter `{}` has type `{ty}`, which has no JSON form",
            At::place(param, at)
        ))),
    }
}

/// Read the arguments of `func` from a JSON object mapping parameter names to values.
pub fn args_from_json<S: Scalar>(
    arena: &Arena,
    func: &Func,
    input: &Json,
) -> Result<(Vec<Value<S>>, SizeEnv), InputError> {
    let Json::Object(map) = input else {
        return Err(InputError(format!(
            "the input must be a JSON object from parameter name to value, found {}",
            kind(input)
        )));
    };
    let names = func.param_names(arena);
    if let Some(extra) = map.keys().find(|k| !names.contains(k)) {
        return Err(InputError(format!(
            "the input has `{extra}`, which is not a parameter of `{}` (its parameters: {})",
            func.name,
            names.join(", ")
        )));
    }
    let mut sizes = SizeEnv::default();
    let mut args = Vec::new();
    for (name, ty) in names.iter().zip(func.param_types(arena)) {
        let Some(j) = map.get(name) else {
            return Err(InputError(format!(
                "the input has no value for parameter `{name}` (type `{ty}`)"
            )));
        };
        args.push(value_from_json(name, &ty, j, &mut sizes)?);
    }
    Ok((args, sizes))
}

/// A number as JSON; non-finite numbers as strings.
pub fn number_to_json(x: f64) -> Json {
    match serde_json::Number::from_f64(x) {
        Some(n) => Json::Number(n),
        None if x.is_nan() => Json::String("NaN".into()),
        None if x > 0.0 => Json::String("Infinity".into()),
        None => Json::String("-Infinity".into()),
    }
}

/// A value as JSON (reals as numbers, tuples and arrays as arrays).
pub fn value_to_json<S: Scalar>(v: &Value<S>) -> Json {
    match v {
        Value::Real(x) => number_to_json(x.value()),
        Value::Bool(b) => Json::Bool(*b),
        Value::Tuple(items) | Value::Array(items) => {
            Json::Array(items.iter().map(value_to_json).collect())
        }
        Value::Closure(_) => Json::String("<function>".into()),
    }
}

/// Rebuild a value of type `ty` from its leaves in row-major order (the inverse of
/// [`Value::leaves`]), with array sizes from `sizes`.
pub fn value_from_leaves(
    ty: &Type,
    leaves: &[f64],
    sizes: &dyn Fn(&str) -> Option<u64>,
) -> Option<Value<f64>> {
    fn go(
        ty: &Type,
        leaves: &[f64],
        pos: &mut usize,
        sizes: &dyn Fn(&str) -> Option<u64>,
    ) -> Option<Value<f64>> {
        Some(match ty {
            Type::Real | Type::Int => {
                let x = *leaves.get(*pos)?;
                *pos += 1;
                Value::Real(x)
            }
            Type::Tuple(items) => Value::tuple(
                items
                    .iter()
                    .map(|t| go(t, leaves, pos, sizes))
                    .collect::<Option<Vec<_>>>()?,
            ),
            Type::Array(n, elem) => {
                let n = n.eval(sizes)?;
                Value::array(
                    (0..n)
                        .map(|_| go(elem, leaves, pos, sizes))
                        .collect::<Option<Vec<_>>>()?,
                )
            }
            Type::Bool | Type::Func(..) => return None,
        })
    }
    let mut pos = 0;
    let v = go(ty, leaves, &mut pos, sizes)?;
    (pos == leaves.len()).then_some(v)
}
