//! Exact run-time lengths of arrays as functions of one size variable, shared by the
//! optimizer (which decides whether one array is never longer than another) and the JIT
//! (which lays out buffers).
//!
//! Types carry *formal* sizes, where `(n-1)+1` is `n`. At run time a shift of an empty
//! array stays empty, so `(n-1)+1` is `max(n-1, 0) + 1`, which is 1, not 0, at `n = 0`.
//! Every length a term computes from a size variable `n >= 0` by adding elements (`+k`,
//! a scan) and dropping them (`-k`, saturating at 0, a shift) has the closed form
//! `max(n + offset, floor)`: the offset is the formal one, and the floor records what
//! happened at small sizes. [`Len`] is that closed form, generic in how the size variable
//! is named (the optimizer names it, the JIT numbers it).

use std::fmt;
use std::sync::Arc;

use crate::types::Size;

/// A run-time length `max(var + offset, floor)`, with `var` read as 0 when there is no
/// variable (a constant); never below 0 since `floor >= 0`.
///
/// The constructors and operations keep values in *normal form* (a constant has offset 0
/// and its value as floor; a floor that never matters is 0), where two lengths of the same
/// variable are equal as functions exactly when they are equal as values. Values built
/// from the public fields directly should go through [`Len::new`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Len<V> {
    /// The size variable the length depends on, if any.
    pub var: Option<V>,
    pub offset: i64,
    pub floor: u64,
}

impl<V> Len<V> {
    /// A length known at compile time.
    pub fn constant(k: u64) -> Len<V> {
        Len {
            var: None,
            offset: 0,
            floor: k,
        }
    }

    /// The length that is the size variable `var` itself.
    pub fn of_var(var: V) -> Len<V> {
        Len {
            var: Some(var),
            offset: 0,
            floor: 0,
        }
    }

    /// `max(var + offset, floor)` in normal form.
    pub fn new(var: Option<V>, offset: i64, floor: u64) -> Len<V> {
        match var {
            None => Len::constant(floor.max(offset.max(0) as u64)),
            // `n + offset >= offset >= floor` for every `n >= 0`: the floor never matters.
            Some(v) if offset >= 0 && offset as u64 >= floor => Len {
                var: Some(v),
                offset,
                floor: 0,
            },
            Some(v) => Len {
                var: Some(v),
                offset,
                floor,
            },
        }
    }

    /// The length of an array of formal size `size` where it is exact (at a parameter,
    /// whose declared size is its length); `var` names the size variable, `None` when it
    /// has no name here.
    pub fn of_size(size: &Size, var: impl FnOnce(&Arc<str>) -> Option<V>) -> Option<Len<V>> {
        match &size.var {
            None => Some(Len::constant(size.offset.max(0) as u64)),
            Some(name) => Some(Len::of_var(var(name)?).step(size.offset)),
        }
    }

    /// The value when it does not depend on a size variable.
    pub fn as_constant(&self) -> Option<u64> {
        match self.var {
            None => Some(self.floor.max(self.offset.max(0) as u64)),
            Some(_) => None,
        }
    }

    /// The length after `k` elements are added (`k >= 0`) or `-k` dropped (`k < 0`,
    /// saturating at 0): `max(n + o, f) + k` is `max(n + o + k, f + k)`, and
    /// `max(max(n + o, f) - k, 0)` is `max(n + o - k, max(f - k, 0))`.
    pub fn step(self, k: i64) -> Len<V> {
        let floor = if k >= 0 {
            self.floor.saturating_add(k as u64)
        } else {
            self.floor.saturating_sub(k.unsigned_abs())
        };
        Len::new(self.var, self.offset.saturating_add(k), floor)
    }

    /// The length after adding one element (the result of a scan).
    pub fn inc(self) -> Len<V> {
        self.step(1)
    }

    /// The length after dropping one element (a shift; 0 stays 0).
    pub fn dec(self) -> Len<V> {
        self.step(-1)
    }

    /// The value when the size variable has the value `value_of` gives it (`None` when it
    /// gives none, or on overflow).
    pub fn eval(&self, value_of: impl FnOnce(&V) -> Option<u64>) -> Option<u64> {
        match &self.var {
            None => self.as_constant(),
            Some(v) => {
                let n = i64::try_from(value_of(v)?).ok()?;
                let x = n.checked_add(self.offset)?.max(0) as u64;
                Some(x.max(self.floor))
            }
        }
    }

    /// The value at `n = 0`, the smallest the length takes.
    fn at_zero(&self) -> u64 {
        self.floor.max(self.offset.max(0) as u64)
    }

    /// The same length with its variable renamed (to print it with a name, say).
    pub fn map_var<W>(self, rename: impl FnOnce(V) -> W) -> Len<W> {
        Len {
            var: self.var.map(rename),
            offset: self.offset,
            floor: self.floor,
        }
    }
}

impl<V: PartialEq> Len<V> {
    /// True if `self <= other` for every value of the size variable (false when that is
    /// not so, or when they depend on different variables). With `max(n + o1, f1)` and
    /// `max(n + o2, f2)`: for large `n` the offsets decide, and since both are
    /// non-decreasing in `n`, the floor `f1` is below the other everywhere if it is at 0.
    pub fn le(&self, other: &Len<V>) -> bool {
        match (&self.var, &other.var) {
            (None, _) => self.at_zero() <= other.at_zero(),
            (Some(_), None) => false,
            (Some(a), Some(b)) => {
                a == b && self.offset <= other.offset && self.floor <= other.at_zero()
            }
        }
    }

    /// The pointwise minimum (the length of a `map2`) when expressible this simply: of two
    /// constants, or of two lengths with the same variable and offset.
    pub fn min(self, other: Len<V>) -> Option<Len<V>> {
        self.combine(other, u64::min)
    }

    /// The pointwise maximum (the length of an `if`) when expressible this simply: of two
    /// constants, or of two lengths with the same variable and offset.
    pub fn max(self, other: Len<V>) -> Option<Len<V>> {
        self.combine(other, u64::max)
    }

    /// [`Len::min`] and [`Len::max`]: constants, or the same variable and offset with
    /// `pick` of the floors.
    fn combine(self, other: Len<V>, pick: fn(u64, u64) -> u64) -> Option<Len<V>> {
        match (self.as_constant(), other.as_constant()) {
            (Some(a), Some(b)) => Some(Len::constant(pick(a, b))),
            _ if self.var == other.var && self.offset == other.offset => Some(Len::new(
                self.var,
                self.offset,
                pick(self.floor, other.floor),
            )),
            _ => None,
        }
    }

    /// The one of the two lengths that is never longer than the other, if one is (the
    /// pointwise minimum whenever it is one of them, a wider case than [`Len::min`]).
    pub fn shorter(&self, other: &Len<V>) -> Option<Len<V>>
    where
        V: Clone,
    {
        if self.le(other) {
            Some(self.clone())
        } else if other.le(self) {
            Some(other.clone())
        } else {
            None
        }
    }
}

/// `3`, `n`, `n+1`, `max(n-1, 0)`, `max(n, 1)`.
impl<V: fmt::Display> fmt::Display for Len<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(v) = &self.var else {
            return write!(f, "{}", self.as_constant().unwrap_or(0));
        };
        let base = match self.offset {
            0 => format!("{v}"),
            k if k > 0 => format!("{v}+{k}"),
            k => format!("{v}-{}", k.unsigned_abs()),
        };
        if self.floor > 0 || self.offset < 0 {
            write!(f, "max({base}, {})", self.floor)
        } else {
            write!(f, "{base}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type L = Len<&'static str>;

    fn n() -> L {
        Len::of_var("n")
    }

    fn at(l: &L, n: u64) -> u64 {
        l.eval(|_| Some(n)).unwrap()
    }

    #[test]
    fn steps_have_a_closed_form() {
        // shift1R (scanl f z A) has exactly A's length.
        assert_eq!(n().inc().dec(), n());
        // scanr f z (shift1L A) does not: it is 1 at n = 0.
        let s = n().dec().inc();
        assert_eq!(s, Len::new(Some("n"), 0, 1));
        assert_eq!((at(&s, 0), at(&s, 1), at(&s, 5)), (1, 1, 5));
        assert_eq!(L::constant(0).dec(), L::constant(0));
        assert_eq!(L::constant(2).step(-5).as_constant(), Some(0));
        assert_eq!(n().step(3).as_constant(), None);
        // A floor the offset covers is dropped.
        assert_eq!(Len::new(Some("n"), 2, 1), Len::new(Some("n"), 2, 0));
        assert_eq!(Len::<&str>::new(None, 3, 1), L::constant(3));
    }

    #[test]
    fn of_size_is_the_formal_size() {
        let size = Size::var("n").plus(-2);
        let l = Len::of_size(&size, |v| Some(v.clone())).unwrap();
        assert_eq!(l.to_string(), "max(n-2, 0)");
        assert_eq!(Len::<u32>::of_size(&size, |_| None), None);
        assert_eq!(
            Len::<u32>::of_size(&Size::lit(4), |_| None),
            Some(Len::constant(4))
        );
    }

    #[test]
    fn order_is_decided_for_every_n() {
        let a = n();
        let b = n().dec().inc();
        assert!(a.le(&b));
        assert!(!b.le(&a));
        assert_eq!(a.shorter(&b), Some(a));
        assert!(n().step(-2).le(&n().dec()));
        assert!(L::constant(1).le(&b));
        assert!(!L::constant(1).le(&n()));
        assert!(!n().le(&L::constant(100)));
        assert!(!n().le(&Len::of_var("m")));
        assert_eq!(n().shorter(&Len::of_var("m")), None);
    }

    #[test]
    fn min_and_max_keep_the_offset() {
        let b = n().dec().inc();
        assert_eq!(n().min(b), Some(n()));
        assert_eq!(n().max(b), Some(b));
        assert_eq!(n().min(n().inc()), None);
        assert_eq!(L::constant(2).max(L::constant(5)), Some(L::constant(5)));
        assert_eq!(L::constant(2).min(n()), None);
    }

    #[test]
    fn display() {
        assert_eq!(L::constant(3).to_string(), "3");
        assert_eq!(n().to_string(), "n");
        assert_eq!(n().inc().to_string(), "n+1");
        assert_eq!(n().dec().to_string(), "max(n-1, 0)");
        assert_eq!(n().dec().inc().to_string(), "max(n, 1)");
        assert_eq!(
            Len::of_var(2u32).map_var(|i| format!("#{i}")).to_string(),
            "#2"
        );
    }

    /// A small deterministic generator of pseudo-random numbers (xorshift).
    struct Random(u64);

    impl Random {
        fn below(&mut self, k: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % k
        }

        /// A length made by up to four steps of -3..=3 from `n` or from a constant, with
        /// the function it denotes, computed step by step.
        fn len(&mut self) -> (L, Vec<u64>) {
            let (mut l, mut values): (L, Vec<u64>) = if self.below(4) == 0 {
                let k = self.below(4);
                (L::constant(k), vec![k; 20])
            } else {
                (n(), (0..20).collect())
            };
            for _ in 0..self.below(5) {
                let k = self.below(7) as i64 - 3;
                l = l.step(k);
                for v in &mut values {
                    *v = (*v as i64 + k).max(0) as u64;
                }
            }
            (l, values)
        }
    }

    #[test]
    fn operations_agree_with_evaluation() {
        let mut random = Random(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2000 {
            let (a, va) = random.len();
            let (b, vb) = random.len();
            let values = |l: &L| (0..20).map(|n| at(l, n)).collect::<Vec<_>>();
            assert_eq!(values(&a), va, "{a}");
            // Steps of at most 12 settle before n = 20: sampling decides the order there.
            let below = va.iter().zip(&vb).all(|(x, y)| x <= y);
            assert_eq!(a.le(&b), below, "{a} <= {b}");
            let pointwise = |pick: fn(u64, u64) -> u64| {
                va.iter()
                    .zip(&vb)
                    .map(|(&x, &y)| pick(x, y))
                    .collect::<Vec<_>>()
            };
            if let Some(m) = a.min(b) {
                assert_eq!(values(&m), pointwise(u64::min), "min({a}, {b})");
            }
            if let Some(m) = a.max(b) {
                assert_eq!(values(&m), pointwise(u64::max), "max({a}, {b})");
            }
            match a.shorter(&b) {
                Some(m) => assert_eq!(values(&m), pointwise(u64::min), "shorter({a}, {b})"),
                None => assert!(!below && !vb.iter().zip(&va).all(|(x, y)| x <= y)),
            }
            // Equal functions are equal values (the normal form is unique).
            assert_eq!(a == b, va == vb, "{a} == {b}");
        }
    }
}
