//! Exact run-time lengths of arrays, for the rules that change which array a term is.
//!
//! Types carry *formal* sizes, where `(n-1)+1` is `n`. At run time a shift of an empty
//! array stays empty, so `(n-1)+1` is `max(n-1, 0) + 1`, which is 1, not 0, at `n = 0`.
//! A rule such as `map2 * A (ones_like B) -> A` keeps the meaning only if `A` is never
//! longer than `B` (`map2` stops at the shorter array). [`Len`] describes a length as a
//! size variable transformed by additions and saturating subtractions, exactly (the closed
//! form `max(n + offset, floor)` of [`unfad_syntax::Len`], shared with the JIT), and
//! [`unfad_syntax::Len::le`] decides `self <= other` for every value of the variable.
//! [`Shape`] gives the lengths of the arrays inside a value: in tuples, and in the elements
//! of arrays (gradients of general arrays add arrays of tuples of arrays).

use std::sync::Arc;

use unfad_syntax::{Size, Type};

/// A run-time length: a constant, or `max(n + offset, floor)` for a size variable `n`
/// named as in the types (see [`unfad_syntax::Len`]).
pub type Len = unfad_syntax::Len<Arc<str>>;

/// The length of an array whose formal size is `s`, when it is known to be exact (a
/// parameter's declared size).
pub fn exact(s: &Size) -> Len {
    match &s.var {
        None => Len::constant(s.offset.max(0) as u64),
        Some(v) => Len::of_var(v.clone()).step(s.offset),
    }
}

/// The exact run-time shape of a value: the lengths of the arrays in it, where known
/// (arrays in tuples, and the elements of arrays, which all have one shape).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Nothing known: a real, a condition, or a value of unknown shape.
    Unknown,
    Tuple(Arc<[Shape]>),
    /// An array: its length if known, and a shape all its elements have.
    Array(Option<Len>, Arc<Shape>),
}

impl Shape {
    /// The shape of a parameter of type `t` (whose sizes are exact).
    pub fn of_type(t: &Type) -> Shape {
        match t {
            Type::Tuple(items) => Shape::Tuple(items.iter().map(Shape::of_type).collect()),
            Type::Array(n, elem) => Shape::array(Some(exact(n)), Shape::of_type(elem)),
            Type::Real | Type::Int | Type::Bool | Type::Func(..) => Shape::Unknown,
        }
    }

    pub fn array(len: Option<Len>, elem: Shape) -> Shape {
        Shape::Array(len, Arc::new(elem))
    }

    /// The length, for an array.
    pub fn len(&self) -> Option<Len> {
        match self {
            Shape::Array(l, _) => l.clone(),
            _ => None,
        }
    }

    /// The shape of the elements, for an array.
    pub fn elem(&self) -> Shape {
        match self {
            Shape::Array(_, e) => (**e).clone(),
            _ => Shape::Unknown,
        }
    }

    /// The shape of component `i`, for a tuple.
    pub fn component(&self, i: usize) -> Shape {
        match self {
            Shape::Tuple(items) => items.get(i).cloned().unwrap_or(Shape::Unknown),
            _ => Shape::Unknown,
        }
    }

    /// What holds of a value that has one of the two shapes.
    pub fn meet(&self, other: &Shape) -> Shape {
        match (self, other) {
            (Shape::Tuple(a), Shape::Tuple(b)) if a.len() == b.len() => {
                Shape::Tuple(a.iter().zip(b.iter()).map(|(x, y)| x.meet(y)).collect())
            }
            (Shape::Array(la, ea), Shape::Array(lb, eb)) => {
                let len = if la == lb { la.clone() } else { None };
                Shape::array(len, ea.meet(eb))
            }
            _ => Shape::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n() -> Len {
        exact(&Size::var("n"))
    }

    #[test]
    fn exact_lengths_are_the_declared_sizes() {
        assert_eq!(exact(&Size::var("n").plus(-1)), n().dec());
        assert_eq!(exact(&Size::lit(3)), Len::constant(3));
        assert_eq!(exact(&Size::var("n").plus(-1)).eval(|_| Some(0)), Some(0));
    }

    #[test]
    fn shapes_keep_what_both_sides_have() {
        let n = || Some(n());
        let row = Shape::array(Some(Len::constant(2)), Shape::Unknown);
        let a = Shape::Tuple(vec![Shape::array(n(), row.clone()), Shape::Unknown].into());
        let b = Shape::Tuple(vec![Shape::array(None, row.clone()), Shape::Unknown].into());
        assert_eq!(
            a.meet(&b),
            Shape::Tuple(vec![Shape::array(None, row.clone()), Shape::Unknown].into())
        );
        assert_eq!(a.meet(&a), a);
        assert_eq!(a.component(0).elem().len(), Some(Len::constant(2)));
        assert_eq!(row.meet(&Shape::Unknown), Shape::Unknown);
    }
}
