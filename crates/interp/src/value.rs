//! Run-time values of the interpreter.

use std::fmt;
use std::rc::Rc;

use unfad_syntax::{ExprId, Type, Var};

use crate::scalar::Scalar;

/// A value: reals, conditions, tuples, arrays and closures (Target).
#[derive(Clone, Debug)]
pub enum Value<S> {
    Real(S),
    Bool(bool),
    Tuple(Rc<[Value<S>]>),
    Array(Rc<[Value<S>]>),
    Closure(Rc<Closure<S>>),
}

/// A lambda with the values of its free variables at the time it was made.
#[derive(Debug)]
pub struct Closure<S> {
    pub params: Vec<Var>,
    pub body: ExprId,
    pub captured: Vec<(Var, Value<S>)>,
}

impl<S> Drop for Closure<S> {
    /// Continuations capture continuations, in chains as long as the program: drop them
    /// with a loop instead of recursively.
    fn drop(&mut self) {
        let mut stack: Vec<Value<S>> = std::mem::take(&mut self.captured)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        while let Some(v) = stack.pop() {
            match v {
                Value::Closure(rc) => {
                    if let Ok(mut c) = Rc::try_unwrap(rc) {
                        stack.extend(std::mem::take(&mut c.captured).into_iter().map(|(_, v)| v));
                    }
                }
                Value::Tuple(mut rc) | Value::Array(mut rc) => {
                    if let Some(items) = Rc::get_mut(&mut rc) {
                        stack.extend(
                            items
                                .iter_mut()
                                .map(|x| std::mem::replace(x, Value::Bool(false))),
                        );
                    }
                }
                Value::Real(_) | Value::Bool(_) => {}
            }
        }
    }
}

impl<S: Scalar> Value<S> {
    pub fn array(items: Vec<Value<S>>) -> Value<S> {
        Value::Array(items.into())
    }

    pub fn tuple(items: Vec<Value<S>>) -> Value<S> {
        Value::Tuple(items.into())
    }

    pub fn as_real(&self) -> Option<S> {
        match self {
            Value::Real(x) => Some(x.clone()),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value<S>]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The scalar leaves in row-major order (tuples component by component).
    pub fn leaves(&self) -> Vec<S> {
        let mut out = Vec::new();
        self.push_leaves(&mut out);
        out
    }

    fn push_leaves(&self, out: &mut Vec<S>) {
        match self {
            Value::Real(x) => out.push(x.clone()),
            Value::Bool(_) | Value::Closure(_) => {}
            Value::Tuple(items) | Value::Array(items) => {
                items.iter().for_each(|v| v.push_leaves(out))
            }
        }
    }

    /// The same shape with every leaf replaced through `f` (leaves in row-major order).
    pub fn map_leaves<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Value<T> {
        match self {
            Value::Real(x) => Value::Real(f(x.clone())),
            Value::Bool(b) => Value::Bool(*b),
            Value::Tuple(items) => Value::Tuple(items.iter().map(|v| v.map_leaves(f)).collect()),
            Value::Array(items) => Value::Array(items.iter().map(|v| v.map_leaves(f)).collect()),
            Value::Closure(_) => panic!("closures have no leaves"),
        }
    }
}

/// Which leaves of `v`, a value of type `ty`, are reals, in the order of [`Value::leaves`]
/// (ints are carried as reals but have no derivative). A value whose shape does not follow
/// the type (never the case for a well-typed program) counts all its leaves as reals.
pub(crate) fn real_leaves<S: Scalar>(ty: &Type, v: &Value<S>) -> Vec<bool> {
    fn push<S: Scalar>(ty: &Type, v: &Value<S>, out: &mut Vec<bool>) {
        match (ty, v) {
            (Type::Real, Value::Real(_)) => out.push(true),
            (Type::Int, Value::Real(_)) => out.push(false),
            (Type::Tuple(types), Value::Tuple(items)) if types.len() == items.len() => {
                for (t, x) in types.iter().zip(items.iter()) {
                    push(t, x, out);
                }
            }
            (Type::Array(_, elem), Value::Array(items)) => {
                for x in items.iter() {
                    push(elem, x, out);
                }
            }
            _ => out.extend(v.leaves().iter().map(|_| true)),
        }
    }
    let mut out = Vec::new();
    push(ty, v, &mut out);
    out
}

impl<S: Scalar> fmt::Display for Value<S> {
    /// JSON-like: reals as numbers, tuples and arrays as lists.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Real(x) => write!(f, "{}", x.value()),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Tuple(items) | Value::Array(items) => {
                write!(f, "[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{v}")?;
                }
                write!(f, "]")
            }
            Value::Closure(_) => write!(f, "<function>"),
        }
    }
}
