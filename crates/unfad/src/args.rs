//! Arguments: user values (`Arg`) checked against parameter types and laid out as the
//! native ABI's components.

use unfad_syntax::{At, Size, SizeBindings, Type};

use crate::Error;

/// An argument of a compiled function.
///
/// - `Arg::from(x)` for a `real` (or an `int`: a whole number up to 2^53 in magnitude);
/// - `Arg::from(&[f64])` for a `[n]real` (or a `[n]int`);
/// - `Arg::array(data, shape)` for any array of reals, nested ones included, row-major
///   (`[n][m]real` is `shape = [n, m]`, `data.len() == n * m`);
/// - `Arg::tuple(items)` for a tuple;
/// - `Arg::elements(items)` for an array of anything else (e.g. of tuples), one `Arg`
///   per element.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg<'a> {
    Real(f64),
    Array { data: &'a [f64], shape: Vec<usize> },
    Tuple(Vec<Arg<'a>>),
    Elements(Vec<Arg<'a>>),
}

impl From<f64> for Arg<'_> {
    fn from(x: f64) -> Self {
        Arg::Real(x)
    }
}

impl<'a> From<&'a [f64]> for Arg<'a> {
    fn from(data: &'a [f64]) -> Self {
        Arg::Array {
            data,
            shape: vec![data.len()],
        }
    }
}

impl<'a> From<&'a Vec<f64>> for Arg<'a> {
    fn from(data: &'a Vec<f64>) -> Self {
        Arg::from(data.as_slice())
    }
}

impl<'a> Arg<'a> {
    /// An array of reals of any rank, row-major.
    pub fn array(data: &'a [f64], shape: &[usize]) -> Arg<'a> {
        Arg::Array {
            data,
            shape: shape.to_vec(),
        }
    }

    pub fn tuple(items: Vec<Arg<'a>>) -> Arg<'a> {
        Arg::Tuple(items)
    }

    /// An array given element by element.
    pub fn elements(items: Vec<Arg<'a>>) -> Arg<'a> {
        Arg::Elements(items)
    }
}

/// Checks arguments against parameter types and scatters their leaves into components.
/// `sizes` collects each size variable's value (reused between calls).
pub(crate) struct Binder<'n> {
    pub names: &'n [String],
    pub sizes: &'n mut SizeBindings,
}

fn kind(a: &Arg) -> String {
    match a {
        Arg::Real(_) => "a real".into(),
        Arg::Array { shape, .. } => format!("an array of shape {shape:?}"),
        Arg::Tuple(items) => format!("a tuple of {} items", items.len()),
        Arg::Elements(items) => format!("an array of {} elements", items.len()),
    }
}

impl Binder<'_> {
    fn bind_size(&mut self, param: usize, ty: &Type, size: &Size, len: usize) -> Result<(), Error> {
        self.sizes
            .bind(self.names, param, ty, size, len as u64)
            .map_err(Error::Argument)
    }

    /// Check `arg` against `ty` for parameter `param`, binding sizes, and push its leaves
    /// onto the components `comps[base..]` (arrays distribute over tuples, so every
    /// component receives its leaves in row-major order). `at` is where `arg` sits inside
    /// the parameter's value, for error messages.
    pub fn scatter(
        &mut self,
        param: usize,
        ty: &Type,
        arg: &Arg,
        comps: &mut [Vec<f64>],
        base: usize,
        at: Option<&At>,
    ) -> Result<(), Error> {
        match (ty, arg) {
            (Type::Real, Arg::Real(x)) => {
                comps[base].push(*x);
                Ok(())
            }
            (Type::Int, Arg::Real(x)) => {
                self.check_int(param, *x, at)?;
                comps[base].push(*x);
                Ok(())
            }
            (Type::Tuple(items), Arg::Tuple(args)) => {
                if items.len() != args.len() {
                    return Err(Error::Argument(format!(
                        "parameter `{}`: a tuple of type `{ty}` has {} items, found {}",
                        self.place(param, at),
                        items.len(),
                        args.len()
                    )));
                }
                let mut offset = base;
                for (i, (t, a)) in items.iter().zip(args).enumerate() {
                    let here = At::item(at, i);
                    self.scatter(param, t, a, comps, offset, Some(&here))?;
                    offset += component_count(t);
                }
                Ok(())
            }
            (Type::Array(size, elem), Arg::Elements(items)) => {
                self.bind_size(param, ty, size, items.len())?;
                for (i, a) in items.iter().enumerate() {
                    let here = At::element(at, i);
                    self.scatter(param, elem, a, comps, base, Some(&here))?;
                }
                Ok(())
            }
            (Type::Array(..), Arg::Array { data, shape }) => {
                self.check_array(param, ty, data, shape)?;
                comps[base].extend_from_slice(data);
                Ok(())
            }
            _ => Err(Error::Argument(format!(
                "parameter `{}` has type `{ty}`, but the argument is {}",
                self.place(param, at),
                kind(arg)
            ))),
        }
    }

    fn place(&self, param: usize, at: Option<&At>) -> String {
        At::place(&self.names[param], at)
    }

    /// Check that `x`, an int of parameter `param` (at `at` inside it), is a whole number
    /// up to 2^53 in magnitude (ints are carried as such reals); an int parameter itself
    /// (`at` is `None`) also binds the size variable of its name to `max(0, x)` (`iota n`).
    pub fn check_int(&mut self, param: usize, x: f64, at: Option<&At>) -> Result<(), Error> {
        if !unfad_syntax::typeck::is_int(x) {
            return Err(Error::Argument(format!(
                "parameter `{}` is an int, but the argument has {x} (ints are whole numbers up \
                 to 2^53 in magnitude)",
                self.place(param, at)
            )));
        }
        if at.is_none() {
            let name = &self.names[param];
            self.bind_size(param, &Type::Int, &Size::var(name), x.max(0.0) as usize)?;
        }
        Ok(())
    }
}

impl Binder<'_> {
    /// Check an array of reals given as `data` with `shape` against `ty`, binding sizes.
    pub fn check_array(
        &mut self,
        param: usize,
        ty: &Type,
        data: &[f64],
        shape: &[usize],
    ) -> Result<(), Error> {
        let names = self.names;
        let name = &names[param];
        let (dims, leaf) = array_dims(ty);
        let rank = dims.count();
        if *leaf != Type::Real && *leaf != Type::Int {
            return Err(Error::Argument(format!(
                "parameter `{name}` has type `{ty}`: give its elements with `Arg::elements`"
            )));
        }
        if shape.len() != rank {
            return Err(Error::Argument(format!(
                "parameter `{name}` has type `{ty}` ({rank} dimensions), but the argument has shape {shape:?}"
            )));
        }
        let count: Option<usize> = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        if count != Some(data.len()) {
            return Err(Error::Argument(format!(
                "parameter `{name}`: shape {shape:?} needs {} values, but the data has {}",
                count.map_or("too many".to_string(), |c| c.to_string()),
                data.len()
            )));
        }
        // Below an empty dimension the lengths are not given (`[]` for `[n][d]real` says
        // nothing of `d`).
        let mut empty = false;
        for (d, &len) in array_dims(ty).0.zip(shape) {
            if empty {
                self.sizes.bind_undetermined(d);
            } else {
                self.bind_size(param, ty, d, len)?;
            }
            empty |= len == 0;
        }
        // Every element a whole number: a fold without an early exit, which the compiler
        // vectorises (the check runs at every call); then the first that is not, to say so.
        if *leaf == Type::Int
            && data
                .iter()
                .fold(false, |bad, &x| bad | !unfad_syntax::typeck::is_int(x))
        {
            if let Some(&x) = data.iter().find(|&&x| !unfad_syntax::typeck::is_int(x)) {
                return Err(Error::Argument(format!(
                    "parameter `{name}` holds ints, but the argument has {x} (ints are whole \
                     numbers up to 2^53 in magnitude)"
                )));
            }
        }
        Ok(())
    }
}

/// The sizes of nested arrays around the leaf type, outermost first, and the leaf:
/// `[n][m]real` is `([n, m], real)`. Borrowed, so that checking a call allocates nothing.
pub(crate) fn array_dims(ty: &Type) -> (impl Iterator<Item = &Size>, &Type) {
    let mut leaf = ty;
    while let Type::Array(_, e) = leaf {
        leaf = e;
    }
    let dims = std::iter::successors(Some(ty), |t| match t {
        Type::Array(_, e) => Some(e),
        _ => None,
    })
    .filter_map(|t| match t {
        Type::Array(n, _) => Some(n),
        _ => None,
    });
    (dims, leaf)
}

/// How many ABI components a value of type `ty` has (one per real leaf of the tuples,
/// arrays distributing over tuples).
pub fn component_count(ty: &Type) -> usize {
    match ty {
        Type::Real | Type::Int | Type::Bool => 1,
        Type::Tuple(items) => items.iter().map(component_count).sum(),
        Type::Array(_, elem) => component_count(elem),
        Type::Func(..) => 0,
    }
}

/// True if a value of `ty` is one component whose buffer is the row-major leaves
/// (reals and arrays of reals of any rank): no reordering is needed.
pub fn is_single_component(ty: &Type) -> bool {
    matches!(array_dims(ty).1, Type::Real | Type::Int)
}
