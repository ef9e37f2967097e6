//! Exact run-time lengths of arrays, for the rules that change which array a term is.
//!
//! Types carry *formal* sizes, where `(n-1)+1` is `n`. At run time a shift of an empty
//! array stays empty, so `(n-1)+1` is `max(n-1, 0) + 1`, which is 1, not 0, at `n = 0`.
//! A rule such as `map2 * A (ones_like B) -> A` keeps the meaning only if `A` is never
//! longer than `B` (`map2` stops at the shorter array). [`Len`] describes a length as a
//! size variable transformed by additions and saturating subtractions, exactly, and
//! [`Len::le`] decides `self <= other` for every value of the variable. [`Shape`] gives
//! the lengths of the arrays inside a value: in tuples, and in the elements of arrays
//! (gradients of general arrays add arrays of tuples of arrays).

use std::sync::Arc;

use unfad_syntax::{Size, Type};

/// A run-time length: a constant, or a size variable `n >= 0` followed by steps `+k`
/// and `-k` (the latter saturating at 0).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Len {
    Lit(u64),
    Sym { var: Arc<str>, steps: Vec<i64> },
}

impl Len {
    /// The length of an array whose formal size is `s`, when it is known to be exact (a
    /// parameter's declared size).
    pub fn of_size(s: &Size) -> Len {
        match &s.var {
            None => Len::Lit(s.offset.max(0) as u64),
            Some(v) => Len::Sym {
                var: v.clone(),
                steps: vec![],
            }
            .step(s.offset),
        }
    }

    /// `self + k` for `k >= 0`, `max(self + k, 0)` for `k < 0`.
    pub fn step(self, k: i64) -> Len {
        if k == 0 {
            return self;
        }
        match self {
            Len::Lit(n) => Len::Lit((n as i64 + k).max(0) as u64),
            Len::Sym { var, mut steps } => {
                match steps.last_mut() {
                    // Two steps of the same sign merge.
                    Some(last) if (*last > 0) == (k > 0) => *last += k,
                    // `+a` then `-b`: the value was at least `a`, so no saturation if a >= b.
                    Some(last) if *last > 0 => {
                        let net = *last + k;
                        steps.pop();
                        return Len::Sym { var, steps }.step(net);
                    }
                    _ => steps.push(k),
                }
                Len::Sym { var, steps }
            }
        }
    }

    /// The value when the size variable is `n`.
    pub fn eval(&self, n: u64) -> u64 {
        match self {
            Len::Lit(k) => *k,
            Len::Sym { steps, .. } => {
                steps.iter().fold(n as i64, |acc, &k| (acc + k).max(0)) as u64
            }
        }
    }

    /// For large `n` the length is `n + offset` (or a constant).
    fn eventual_offset(&self) -> Option<i64> {
        match self {
            Len::Lit(_) => None,
            Len::Sym { steps, .. } => Some(steps.iter().sum()),
        }
    }

    fn var(&self) -> Option<&Arc<str>> {
        match self {
            Len::Lit(_) => None,
            Len::Sym { var, .. } => Some(var),
        }
    }

    /// How far one must look before both lengths are affine.
    fn horizon(&self) -> u64 {
        match self {
            Len::Lit(k) => *k + 1,
            Len::Sym { steps, .. } => steps.iter().map(|k| k.unsigned_abs()).sum::<u64>() + 1,
        }
    }

    /// True if `self <= other` for every value of the size variable (false when unknown).
    pub fn le(&self, other: &Len) -> bool {
        match (self.var(), other.var()) {
            (Some(a), Some(b)) if a != b => false,
            (Some(_), None) => false,
            _ => {
                let h = self.horizon().max(other.horizon());
                let small = (0..=h).all(|n| self.eval(n) <= other.eval(n));
                // Beyond the horizon both are `n + c` (or constant): compare the offsets.
                let large = match (self.eventual_offset(), other.eventual_offset()) {
                    (Some(a), Some(b)) => a <= b,
                    (None, _) => true,
                    (Some(_), None) => false,
                };
                small && large
            }
        }
    }

    /// The shorter of two lengths, if one is provably the shorter.
    pub fn min(&self, other: &Len) -> Option<Len> {
        if self.le(other) {
            Some(self.clone())
        } else if other.le(self) {
            Some(other.clone())
        } else {
            None
        }
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
            Type::Array(n, elem) => Shape::array(Some(Len::of_size(n)), Shape::of_type(elem)),
            Type::Real | Type::Bool | Type::Func(..) => Shape::Unknown,
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
        Len::of_size(&Size::var("n"))
    }

    #[test]
    fn steps_normalise_exactly() {
        // shift1R (scanl f z A) has exactly A's length.
        assert_eq!(n().step(1).step(-1), n());
        // scanr f z (shift1L A) does not: it is 1 at n = 0.
        let s = n().step(-1).step(1);
        assert_ne!(s, n());
        assert_eq!((s.eval(0), s.eval(1), s.eval(5)), (1, 1, 5));
        assert_eq!(Len::Lit(0).step(-1), Len::Lit(0));
    }

    #[test]
    fn order_is_decided_for_every_n() {
        let a = n();
        let b = n().step(-1).step(1);
        assert!(a.le(&b));
        assert!(!b.le(&a));
        assert_eq!(a.min(&b), Some(a.clone()));
        assert!(n().step(-2).le(&n().step(-1)));
        assert!(Len::Lit(1).le(&n().step(-1).step(1)));
        assert!(!Len::Lit(1).le(&n()));
        let m = Len::of_size(&Size::var("m"));
        assert_eq!(n().min(&m), None);
    }

    #[test]
    fn shapes_keep_what_both_sides_have() {
        let n = || Some(n());
        let row = Shape::array(Some(Len::Lit(2)), Shape::Unknown);
        let a = Shape::Tuple(vec![Shape::array(n(), row.clone()), Shape::Unknown].into());
        let b = Shape::Tuple(vec![Shape::array(None, row.clone()), Shape::Unknown].into());
        assert_eq!(
            a.meet(&b),
            Shape::Tuple(vec![Shape::array(None, row.clone()), Shape::Unknown].into())
        );
        assert_eq!(a.meet(&a), a);
        assert_eq!(a.component(0).elem().len(), Some(Len::Lit(2)));
        assert_eq!(row.meet(&Shape::Unknown), Shape::Unknown);
    }
}
