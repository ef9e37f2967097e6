//! Types and symbolic array sizes.

use std::fmt;
use std::sync::Arc;

use crate::size_expr::{self, is_size_name, Linear};

/// A symbolic array size: `var + offset`, or the constant `offset` when there is no variable.
///
/// Sizes are *formal*: `n-1` stands for `max(n-1, 0)` at run time, yet `(n-1)+1` is
/// normalised to `n`. The two differ only when an empty array is shifted (`n = 0`); the
/// language's array operations over two arrays use the shorter length, which gives the
/// mathematically intended (empty) result in exactly that case. Constants are formal in
/// the same way: `shift1L` of a `[0]` array has size `0-1` (which is 0 at run time), so
/// that `(0-1)+1` is `0` as `(n-1)+1` is `n`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Size {
    pub var: Option<Arc<str>>,
    pub offset: i64,
}

impl Size {
    pub fn lit(k: u64) -> Size {
        Size {
            var: None,
            offset: k as i64,
        }
    }

    pub fn var(name: &str) -> Size {
        Size {
            var: Some(name.into()),
            offset: 0,
        }
    }

    /// `self + k` (formal: no saturation, see the type's docs). A derived size takes `k`
    /// into its text, so that `(n - m) + 1` is the size `n - m + 1` however it was reached.
    pub fn plus(&self, k: i64) -> Size {
        if self.is_derived() {
            if let Some(x) = Linear::of_size(self).and_then(|x| x.add(&Linear::constant(k))) {
                return x.to_size();
            }
        }
        Size {
            var: self.var.clone(),
            offset: self.offset + k,
        }
    }

    /// Whether the variable is a *derived* size, computed from size variables by more than
    /// adding a constant (`n - m + 1`, `2*n`: see [`crate::size_expr`]).
    pub fn is_derived(&self) -> bool {
        self.var.as_deref().is_some_and(|v| !is_size_name(v))
    }

    /// The value of this size when size variables have the values given by `lookup`.
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<u64>) -> Option<u64> {
        let base = match &self.var {
            None => 0,
            Some(v) if is_size_name(v) => lookup(v)? as i64,
            Some(v) => size_expr::evaluate(v, &|name| i64::try_from(lookup(name)?).ok())?.max(0),
        };
        Some(base.checked_add(self.offset)?.max(0) as u64)
    }

    /// Replace the size variables through `f` (used when a definition's size variables are
    /// instantiated at a call); in a derived size, each one it is computed from.
    pub fn subst(&self, f: &dyn Fn(&str) -> Option<Size>) -> Size {
        match &self.var {
            None => self.clone(),
            Some(v) if is_size_name(v) => match f(v) {
                Some(s) => s.plus(self.offset),
                None => self.clone(),
            },
            Some(v) => {
                let each = |name: &str| match f(name) {
                    Some(s) => Linear::of_size(&s),
                    None => Some(Linear::atom(name)),
                };
                match size_expr::parse(v, &each) {
                    Some(x) => x.to_size().plus(self.offset),
                    None => self.clone(),
                }
            }
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.var, self.offset) {
            (None, k) if k >= 0 => write!(f, "{k}"),
            (None, k) => write!(f, "0-{}", -k),
            (Some(v), 0) => write!(f, "{v}"),
            (Some(v), k) if !is_size_name(v) && k > 0 => write!(f, "({v})+{k}"),
            (Some(v), k) if !is_size_name(v) => write!(f, "({v})-{}", -k),
            (Some(v), k) if k > 0 => write!(f, "{v}+{k}"),
            (Some(v), k) => write!(f, "{v}-{}", -k),
        }
    }
}

/// Values of size variables read off the lengths of arguments, each with the index of the
/// parameter that fixed it. Everything that checks arguments against parameter types (the
/// interpreter's JSON input, the native functions' arguments) binds sizes through this, so
/// that a mismatch is reported the same way everywhere: naming the parameter and both sizes.
#[derive(Clone, Debug, Default)]
pub struct SizeBindings {
    entries: Vec<(Arc<str>, u64, usize)>,
    /// Size variables met only inside an empty array (`d` of an `[n][d]` argument with no
    /// row), whose value the argument does not give: 0 unless another argument gives it.
    undetermined: Vec<Arc<str>>,
}

impl SizeBindings {
    pub fn clear(&mut self) {
        self.entries.clear();
        self.undetermined.clear();
    }

    /// The value of size variable `var`, if bound (0 if it was only met inside an empty
    /// array: see [`SizeBindings::bind_undetermined`]).
    pub fn get(&self, var: &str) -> Option<u64> {
        if !is_size_name(var) {
            // A derived size (`n * m`): its formula on the others, never below 0.
            let value = size_expr::evaluate(var, &|name| i64::try_from(self.get(name)?).ok())?;
            return Some(value.max(0) as u64);
        }
        self.entries
            .iter()
            .find(|(v, _, _)| v.as_ref() == var)
            .map(|(_, n, _)| *n)
            .or_else(|| {
                self.undetermined
                    .iter()
                    .any(|v| v.as_ref() == var)
                    .then_some(0)
            })
    }

    /// Record that the size `size` belongs to an array inside an empty one, whose length
    /// the argument does not give: its variable is 0 unless another argument binds it
    /// (`X: [n][d]real` given `[]` beside `w: [d]real` given two elements: `d` is 2).
    pub fn bind_undetermined(&mut self, size: &Size) {
        if let Some(v) = &size.var {
            if !self.undetermined.contains(v) {
                self.undetermined.push(v.clone());
            }
        }
    }

    /// Record that an array of formal size `size` in parameter `param` (of type `ty`; its
    /// name is `names[param]`) has `len` elements.
    pub fn bind(
        &mut self,
        names: &[impl AsRef<str>],
        param: usize,
        ty: &Type,
        size: &Size,
        len: u64,
    ) -> Result<(), String> {
        let name = names.get(param).map_or("?", |n| n.as_ref());
        match &size.var {
            None => {
                if size.offset.max(0) as u64 != len {
                    return Err(format!(
                        "parameter `{name}`: expected {} elements (type `{ty}`), found {len}",
                        size.offset.max(0)
                    ));
                }
            }
            Some(v) => {
                let value = len as i64 - size.offset;
                if value < 0 {
                    return Err(format!(
                        "parameter `{name}`: {len} elements is too few for size {size}"
                    ));
                }
                match self.entries.iter().find(|(w, _, _)| w == v) {
                    Some(&(_, prev, from)) if prev != value as u64 => {
                        let from = names.get(from).map_or("?", |n| n.as_ref());
                        return Err(format!(
                            "parameter `{name}`: size `{v}` is {value} here (an array of {len} elements for `{size}`), but {prev} from parameter `{from}`"
                        ));
                    }
                    Some(_) => {}
                    None => self.entries.push((v.clone(), value as u64, param)),
                }
            }
        }
        Ok(())
    }
}

/// Types of both fragments. `Bool` only types conditions; `Func` only exists in the Target.
/// `Int` values (sizes, indices, counters) are carried at run time as reals holding whole
/// numbers, exact up to 2^53 in magnitude; they have no derivative.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Type {
    Real,
    Int,
    Bool,
    Tuple(Arc<[Type]>),
    Array(Size, Arc<Type>),
    Func(Arc<[Type]>, Arc<Type>),
}

impl Type {
    pub fn tuple(items: Vec<Type>) -> Type {
        Type::Tuple(items.into())
    }

    pub fn array(size: Size, elem: Type) -> Type {
        Type::Array(size, Arc::new(elem))
    }

    pub fn func(params: Vec<Type>, ret: Type) -> Type {
        Type::Func(params.into(), Arc::new(ret))
    }

    /// The tuple of `items`, or the item itself when there is exactly one (the paper's
    /// `A1 x ... x An` for n = 1).
    pub fn product(mut items: Vec<Type>) -> Type {
        if items.len() == 1 {
            items.pop().unwrap()
        } else {
            Type::tuple(items)
        }
    }

    /// The type of the tangents (and adjoints) of values of this type: ints made reals (a
    /// tangent is a real 0 where the value is an int; ints are carried as reals, so both
    /// are laid out alike).
    pub fn tangent(&self) -> Type {
        match self {
            Type::Int => Type::Real,
            Type::Tuple(items) => Type::tuple(items.iter().map(Type::tangent).collect()),
            Type::Array(n, elem) => Type::array(n.clone(), elem.tangent()),
            t => t.clone(),
        }
    }

    /// Ground types: reals, ints, and tuples and arrays of ground types. These are the types
    /// that values at the boundary, gradients and zeros have.
    pub fn is_ground(&self) -> bool {
        match self {
            Type::Real | Type::Int => true,
            Type::Bool | Type::Func(..) => false,
            Type::Tuple(items) => items.iter().all(Type::is_ground),
            Type::Array(_, elem) => elem.is_ground(),
        }
    }

    pub fn is_real(&self) -> bool {
        matches!(self, Type::Real)
    }

    /// True if a real occurs anywhere inside: a value of this type can carry a derivative.
    /// Ints, conditions and values made of them only (`[n]int`, `(int, int)`) carry none.
    pub fn has_reals(&self) -> bool {
        match self {
            Type::Real => true,
            Type::Int | Type::Bool => false,
            Type::Tuple(items) => items.iter().any(Type::has_reals),
            Type::Array(_, elem) => elem.has_reals(),
            Type::Func(ps, r) => ps.iter().any(Type::has_reals) || r.has_reals(),
        }
    }

    /// True if an int occurs anywhere inside.
    pub fn has_ints(&self) -> bool {
        match self {
            Type::Int => true,
            Type::Real | Type::Bool => false,
            Type::Tuple(items) => items.iter().any(Type::has_ints),
            Type::Array(_, elem) => elem.has_ints(),
            Type::Func(ps, r) => ps.iter().any(Type::has_ints) || r.has_ints(),
        }
    }

    /// True if a value of this type holds an array (itself, or in a tuple).
    pub fn has_arrays(&self) -> bool {
        match self {
            Type::Array(..) => true,
            Type::Tuple(items) => items.iter().any(Type::has_arrays),
            Type::Real | Type::Int | Type::Bool | Type::Func(..) => false,
        }
    }

    /// True if a function type occurs anywhere inside.
    pub fn is_higher_order(&self) -> bool {
        match self {
            Type::Real | Type::Int | Type::Bool => false,
            Type::Func(..) => true,
            Type::Tuple(items) => items.iter().any(Type::is_higher_order),
            Type::Array(_, elem) => elem.is_higher_order(),
        }
    }

    /// Number of scalar leaves of a ground type whose arrays have the sizes `lookup` gives.
    pub fn leaf_count(&self, lookup: &dyn Fn(&str) -> Option<u64>) -> Option<u64> {
        match self {
            Type::Real | Type::Int | Type::Bool => Some(1),
            Type::Func(..) => None,
            Type::Tuple(items) => items.iter().map(|t| t.leaf_count(lookup)).sum(),
            Type::Array(n, elem) => Some(n.eval(lookup)? * elem.leaf_count(lookup)?),
        }
    }

    /// Apply a size substitution everywhere in the type.
    pub fn subst_sizes(&self, f: &dyn Fn(&str) -> Option<Size>) -> Type {
        match self {
            Type::Real | Type::Int | Type::Bool => self.clone(),
            Type::Tuple(items) => Type::tuple(items.iter().map(|t| t.subst_sizes(f)).collect()),
            Type::Array(n, elem) => Type::array(n.subst(f), elem.subst_sizes(f)),
            Type::Func(ps, r) => Type::func(
                ps.iter().map(|t| t.subst_sizes(f)).collect(),
                r.subst_sizes(f),
            ),
        }
    }

    /// Size variables occurring in the type, in order of first occurrence.
    pub fn size_vars(&self, out: &mut Vec<Arc<str>>) {
        match self {
            Type::Real | Type::Int | Type::Bool => {}
            Type::Tuple(items) => items.iter().for_each(|t| t.size_vars(out)),
            Type::Array(n, elem) => {
                if let Some(v) = &n.var {
                    if !out.contains(v) {
                        out.push(v.clone());
                    }
                }
                elem.size_vars(out)
            }
            Type::Func(ps, r) => {
                ps.iter().for_each(|t| t.size_vars(out));
                r.size_vars(out)
            }
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Real => write!(f, "real"),
            Type::Int => write!(f, "int"),
            Type::Bool => write!(f, "bool"),
            Type::Tuple(items) => {
                write!(f, "(")?;
                for (i, t) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{t}")?;
                }
                write!(f, ")")
            }
            Type::Array(n, elem) => write!(f, "[{n}]{elem}"),
            Type::Func(ps, r) => {
                write!(f, "(")?;
                for (i, t) in ps.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{t}")?;
                }
                write!(f, ") -> {r}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_normalise_and_print() {
        let n = Size::var("n");
        assert_eq!(n.plus(1).plus(-1), n);
        assert_eq!(n.plus(-1).to_string(), "n-1");
        assert_eq!(n.plus(2).to_string(), "n+2");
        assert_eq!(Size::lit(0).plus(-1).to_string(), "0-1");
        assert_eq!(Size::lit(0).plus(-1).plus(1), Size::lit(0));
        assert_eq!(Size::lit(0).plus(-1).eval(&|_| None), Some(0));
        let look = |v: &str| (v == "n").then_some(0);
        assert_eq!(n.plus(-1).eval(&look), Some(0));
        assert_eq!(n.plus(3).eval(&look), Some(3));
    }

    #[test]
    fn types_print_in_surface_syntax() {
        let n = Size::var("n");
        let m = Size::var("m");
        let t = Type::func(
            vec![
                Type::array(n, Type::array(m, Type::Real)),
                Type::tuple(vec![Type::Real, Type::Real]),
            ],
            Type::Real,
        );
        assert_eq!(t.to_string(), "([n][m]real, (real, real)) -> real");
        assert!(!t.is_ground());
        assert!(t.is_higher_order());
    }
}

/// Where a part of an argument sits inside its parameter's value, as a chain on the stack
/// (nothing is allocated unless an error names it): printed `A`, `A[2]`, `p.0[1]`.
#[derive(Clone, Copy, Debug)]
pub struct At<'p> {
    outer: Option<&'p At<'p>>,
    step: Step,
}

#[derive(Clone, Copy, Debug)]
enum Step {
    /// Element `i` of an array.
    Element(usize),
    /// Item `i` of a tuple (`e.i` in the language, from 0).
    Item(usize),
}

impl<'p> At<'p> {
    /// Element `i` of the array at `outer` (`None`: the parameter itself).
    pub fn element(outer: Option<&'p At<'p>>, i: usize) -> At<'p> {
        At {
            outer,
            step: Step::Element(i),
        }
    }

    /// Item `i` of the tuple at `outer`.
    pub fn item(outer: Option<&'p At<'p>>, i: usize) -> At<'p> {
        At {
            outer,
            step: Step::Item(i),
        }
    }
}

impl At<'_> {
    /// The parameter's name followed by the position `at`.
    pub fn place(param: &str, at: Option<&At>) -> String {
        let mut steps = Vec::new();
        let mut cur = at;
        while let Some(a) = cur {
            steps.push(a.step);
            cur = a.outer;
        }
        let mut out = param.to_string();
        for step in steps.iter().rev() {
            match step {
                Step::Element(i) => out.push_str(&format!("[{i}]")),
                Step::Item(i) => out.push_str(&format!(".{i}")),
            }
        }
        out
    }
}
