//! The one validation of a differentiation request: a function that returns `real`, whose
//! parameters have ground types, and the parameters to differentiate against, each of
//! them existing and named once, at least one.
//!
//! `pipeline` runs the whole check ([`check`]) before every run. The facade (`unfad`) runs
//! its parts where it meets them (the parameters named by the user, the loaded function's
//! result) and words two of these errors its own way; the conditions are decided here only.

use unfad_syntax::{Arena, Func, Type};

use crate::error::AdError;

/// Why a request cannot be differentiated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The function returns something other than `real`.
    #[error(
        "`{function}` returns `{ret}`; reverse mode computes gradients of functions returning `real`"
    )]
    NotReal { function: String, ret: Type },
    /// No parameter to differentiate against.
    #[error("there is nothing to differentiate against: name at least one parameter")]
    NothingToDifferentiate,
    /// A position beyond the function's parameters.
    #[error("`{function}` has {count} parameter(s); there is no parameter {index} to differentiate against")]
    NoParameterAt {
        function: String,
        count: usize,
        index: usize,
    },
    /// A name that is no parameter's.
    #[error("`{name}` is not a parameter of `{function}` (its parameters: {})", .parameters.join(", "))]
    NotAParameter {
        name: String,
        function: String,
        parameters: Vec<String>,
    },
    /// A parameter wanted twice.
    #[error("parameter `{name}` is named twice in the parameters to differentiate against")]
    NamedTwice { name: String },
    /// A parameter without reals (an int, an array of ints): nothing to differentiate.
    #[error("parameter `{name}` has type `{ty}`, which holds no reals: ints have no derivative")]
    NoDerivative { name: String, ty: Type },
    /// A parameter whose type has no adjoint (a condition or a function).
    #[error("parameter `{name}` has the non-ground type `{ty}`")]
    NotGround { name: String, ty: Type },
    /// A parameter without a type (the function was not type-checked).
    #[error("parameter `{name}` has no type")]
    Untyped { name: String },
}

impl From<RequestError> for AdError {
    fn from(e: RequestError) -> AdError {
        AdError::Request(e.to_string())
    }
}

/// A parameter the caller wants to differentiate against: by position or by name.
#[derive(Copy, Clone, Debug)]
pub enum Parameter<'a> {
    At(usize),
    Named(&'a str),
}

/// The positions of the parameters `wanted` of `func`, in the order given. The first
/// that does not exist, or that repeats an earlier one, is the error; an empty list is one.
pub fn parameters(
    arena: &Arena,
    func: &Func,
    wanted: &[Parameter],
) -> Result<Vec<usize>, RequestError> {
    let names = func.param_names(arena);
    let mut positions = Vec::with_capacity(wanted.len());
    for &w in wanted {
        let i = match w {
            Parameter::At(i) if i < names.len() => i,
            Parameter::At(index) => {
                return Err(RequestError::NoParameterAt {
                    function: func.name.clone(),
                    count: names.len(),
                    index,
                })
            }
            Parameter::Named(name) => match names.iter().position(|n| n == name) {
                Some(i) => i,
                None => {
                    return Err(RequestError::NotAParameter {
                        name: name.to_string(),
                        function: func.name.clone(),
                        parameters: names,
                    })
                }
            },
        };
        if let Some(t) = arena.var_type(func.params[i]).filter(|t| !t.has_reals()) {
            return Err(RequestError::NoDerivative {
                name: names[i].clone(),
                ty: t.clone(),
            });
        }
        if positions.contains(&i) {
            return Err(RequestError::NamedTwice {
                name: names[i].clone(),
            });
        }
        positions.push(i);
    }
    if positions.is_empty() {
        return Err(RequestError::NothingToDifferentiate);
    }
    Ok(positions)
}

/// `func` returns `real` (the type recorded on its body, else the declared one).
pub fn check_result(arena: &Arena, func: &Func) -> Result<(), RequestError> {
    let ret = arena.type_of(func.body).unwrap_or(&func.ret);
    if *ret != Type::Real {
        return Err(RequestError::NotReal {
            function: func.name.clone(),
            ret: ret.clone(),
        });
    }
    Ok(())
}

/// Every parameter of `func` has a ground type: each has an adjoint.
pub fn check_parameter_types(arena: &Arena, func: &Func) -> Result<(), RequestError> {
    for &p in &func.params {
        let name = || arena.var_name(p).to_string();
        match arena.var_type(p) {
            Some(t) if t.is_ground() => {}
            Some(t) => {
                return Err(RequestError::NotGround {
                    name: name(),
                    ty: t.clone(),
                })
            }
            None => return Err(RequestError::Untyped { name: name() }),
        }
    }
    Ok(())
}

/// The whole request: a real result, then the parameters at the positions `wrt`, then the
/// types of all parameters.
pub fn check(arena: &Arena, func: &Func, wrt: &[usize]) -> Result<(), RequestError> {
    check_result(arena, func)?;
    let wanted: Vec<Parameter> = wrt.iter().map(|&i| Parameter::At(i)).collect();
    parameters(arena, func, &wanted)?;
    check_parameter_types(arena, func)
}
