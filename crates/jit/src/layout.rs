//! Array lengths as functions of the size variables, and the layout of the ABI's components.
//!
//! A [`Dim`] is the *structural* run-time length of an array dimension, computed exactly as
//! the semantics computes it (`shift1L` of an empty array is empty, a scan adds one), not
//! the formal size of the type, which normalises `(n-1)+1` to `n`. Every such length has the
//! closed form `max(n + offset, floor)` for the one size variable `n` of its formal size:
//! the formal offset is kept, and only the floor records what happened at small sizes.
//! That closed form is the syntax crate's [`Len`], shared with the optimizer; this module
//! adds what it means here ([`DimExt`]: the variable is a position in the size variables).

use std::sync::Arc;

use unfad_syntax::{Len, Size};

use crate::error::{JitError, JitResult};

/// The length of one array dimension: `max(sizes[var] + offset, floor)` (with `sizes[var]`
/// read as 0 when there is no variable), never below 0. Its variable is an index into the
/// size variables (`Func::size_vars` order); the closed form and its operations (`inc`,
/// `dec`, `min`, `max`, ...) are the shared [`Len`] the optimizer reasons with.
pub type Dim = Len<u32>;

/// What a [`Dim`] means in the JIT, where its variable is an index into the size
/// variables: its value for a slice of sizes, and its text with a slice of their names.
///
/// An extension trait (bring it into scope with `use unfad_jit::DimExt`), since the
/// shared [`Len`] cannot have inherent methods outside its crate, and these read the
/// variable as a position, which the shared type leaves open.
pub trait DimExt {
    /// The length for the given sizes, if it is representable (`None` on overflow or a
    /// missing size).
    fn eval_at(&self, sizes: &[u64]) -> Option<u64>;

    /// The length with its variable named from `names` (`#i` for a position past their
    /// end), to print: `3`, `n`, `n+1`, `max(n-1, 0)`, `max(n, 1)`.
    fn display(&self, names: &[String]) -> Len<String>;
}

impl DimExt for Dim {
    fn eval_at(&self, sizes: &[u64]) -> Option<u64> {
        self.eval(|&v| sizes.get(v as usize).copied())
    }

    fn display(&self, names: &[String]) -> Len<String> {
        self.map_var(|v| {
            names
                .get(v as usize)
                .map_or_else(|| format!("#{v}"), String::clone)
        })
    }
}

/// The length of an array of formal size `size`, as it is at a parameter (exactly the
/// formal value); `index` maps size-variable names to their positions.
pub(crate) fn dim_of_size(size: &Size, index: &dyn Fn(&str) -> Option<u32>) -> JitResult<Dim> {
    Len::of_size(size, |name| index(name)).ok_or_else(|| {
        JitError::Type(format!(
            "the size `{}` is not the size of any parameter",
            size.var.as_deref().unwrap_or_default()
        ))
    })
}

/// One step of the path from a parameter (or the result) to a component.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum PathStep {
    /// Field `i` of a tuple.
    Field(u32),
    /// The elements of an array (arrays distribute over the tuples inside them).
    Elements,
}

/// One leaf component of the ABI: a flat row-major buffer of reals.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Component {
    /// The parameter it belongs to (0 for the result).
    pub index: usize,
    /// The way from the parameter (or result) to this component.
    pub path: Vec<PathStep>,
    /// The array dimensions above the leaf, outermost first; the component has their
    /// product as element count (1 when there is none).
    pub dims: Vec<Dim>,
}

impl Component {
    /// The element count for the given sizes (`None` on overflow).
    pub fn len(&self, sizes: &[u64]) -> Option<usize> {
        let mut n: u64 = 1;
        for d in &self.dims {
            n = n.checked_mul(d.eval_at(sizes)?)?;
        }
        usize::try_from(n).ok()
    }

    /// `A.1[]`-style description of where the component is, given the owner's name.
    pub fn describe(&self, owner: &str) -> String {
        let mut s = owner.to_string();
        for step in &self.path {
            match step {
                PathStep::Field(i) => s.push_str(&format!(".{i}")),
                PathStep::Elements => s.push_str("[]"),
            }
        }
        s
    }
}

/// Cursors of scatter and gather live on the stack up to this many components.
const CURSORS_ON_STACK: usize = 64;

/// `n` zeroed cursors, on the stack when they fit.
fn cursors<'a>(
    stack: &'a mut [usize; CURSORS_ON_STACK],
    heap: &'a mut Vec<usize>,
    n: usize,
) -> &'a mut [usize] {
    if n <= CURSORS_ON_STACK {
        &mut stack[..n]
    } else {
        heap.resize(n, 0);
        heap
    }
}

/// The shape of a parameter or of the result: its type with array lengths as [`Dim`]s.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Shape {
    Real,
    Tuple(Vec<Shape>),
    Array(Dim, Box<Shape>),
}

impl Shape {
    /// The number of reals, for the given sizes (`None` on overflow).
    pub fn leaf_count(&self, sizes: &[u64]) -> Option<usize> {
        match self {
            Shape::Real => Some(1),
            Shape::Tuple(items) => items
                .iter()
                .try_fold(0usize, |acc, s| acc.checked_add(s.leaf_count(sizes)?)),
            Shape::Array(d, elem) => usize::try_from(d.eval_at(sizes)?)
                .ok()?
                .checked_mul(elem.leaf_count(sizes)?),
        }
    }

    /// Whether the leaves in row-major order are the components one after the other: no
    /// array holds a tuple (an array of pairs interleaves its two components). Copying
    /// between leaves and components is then one copy per component.
    pub fn components_in_order(&self) -> bool {
        fn no_tuple(s: &Shape) -> bool {
            match s {
                Shape::Real => true,
                Shape::Tuple(_) => false,
                Shape::Array(_, elem) => no_tuple(elem),
            }
        }
        match self {
            Shape::Tuple(items) => items.iter().all(|s| s.components_in_order()),
            s => no_tuple(s),
        }
    }

    /// The number of ABI components.
    pub fn component_count(&self) -> usize {
        match self {
            Shape::Real => 1,
            Shape::Tuple(items) => items.iter().map(Shape::component_count).sum(),
            Shape::Array(_, elem) => elem.component_count(),
        }
    }

    /// Copy `leaves`, the reals of a value of this shape in row-major order (tuples field
    /// by field, arrays element by element), into its components `comps` (which must have
    /// the lengths of the layout).
    pub fn scatter(
        &self,
        sizes: &[u64],
        leaves: &[f64],
        comps: &mut [&mut [f64]],
    ) -> Result<(), JitError> {
        self.check(sizes, leaves.len(), comps.iter().map(|c| c.len()))?;
        if self.components_in_order() {
            let mut pos = 0;
            for c in comps.iter_mut() {
                let n = c.len();
                c.copy_from_slice(&leaves[pos..pos + n]);
                pos += n;
            }
            return Ok(());
        }
        let (mut stack, mut heap) = ([0usize; CURSORS_ON_STACK], Vec::new());
        let cursors = cursors(&mut stack, &mut heap, comps.len());
        let mut pos = 0;
        self.walk(sizes, 0, cursors, &mut |c, at| {
            let slot = comps.get_mut(c).and_then(|x| x.get_mut(at));
            match (slot, leaves.get(pos)) {
                (Some(dst), Some(&x)) => {
                    *dst = x;
                    pos += 1;
                    Ok(())
                }
                _ => Err(JitError::Call("a value does not fit its layout".into())),
            }
        })
    }

    /// The inverse of [`Shape::scatter`]: the reals of the components in row-major order.
    pub fn gather(
        &self,
        sizes: &[u64],
        comps: &[&[f64]],
        leaves: &mut [f64],
    ) -> Result<(), JitError> {
        self.check(sizes, leaves.len(), comps.iter().map(|c| c.len()))?;
        if self.components_in_order() {
            let mut pos = 0;
            for c in comps {
                leaves[pos..pos + c.len()].copy_from_slice(c);
                pos += c.len();
            }
            return Ok(());
        }
        let (mut stack, mut heap) = ([0usize; CURSORS_ON_STACK], Vec::new());
        let cursors = cursors(&mut stack, &mut heap, comps.len());
        let mut pos = 0;
        self.walk(sizes, 0, cursors, &mut |c, at| {
            let src = comps.get(c).and_then(|x| x.get(at));
            match (src, leaves.get_mut(pos)) {
                (Some(&x), Some(dst)) => {
                    *dst = x;
                    pos += 1;
                    Ok(())
                }
                _ => Err(JitError::Call("a value does not fit its layout".into())),
            }
        })
    }

    fn check(
        &self,
        sizes: &[u64],
        leaves: usize,
        comps: impl ExactSizeIterator<Item = usize>,
    ) -> Result<(), JitError> {
        let want = self.leaf_count(sizes);
        if want != Some(leaves) {
            return Err(JitError::Call(format!(
                "{leaves} real(s) given where the sizes {sizes:?} make {}",
                want.map_or("too many".into(), |n| n.to_string())
            )));
        }
        // Compare component by component, without collecting (calls allocate nothing).
        let mut comps = comps;
        let mut bad = None;
        let mut k = 0;
        self.component_lens(sizes, 1, &mut |want| {
            let got = comps.next();
            if bad.is_none() && got != Some(want) {
                bad = Some((k, got, want));
            }
            k += 1;
        })
        .ok_or_else(|| JitError::Call(format!("the sizes {sizes:?} are too large")))?;
        if let Some((k, got, want)) = bad {
            return Err(JitError::Call(format!(
                "component {k} has {} element(s) where the layout has {want}",
                got.map_or("no".into(), |g| g.to_string())
            )));
        }
        if comps.next().is_some() {
            return Err(JitError::Call(format!(
                "more than the layout's {k} component(s) given"
            )));
        }
        Ok(())
    }

    fn component_lens(
        &self,
        sizes: &[u64],
        outer: usize,
        out: &mut dyn FnMut(usize),
    ) -> Option<()> {
        match self {
            Shape::Real => out(outer),
            Shape::Tuple(items) => {
                for s in items {
                    s.component_lens(sizes, outer, out)?;
                }
            }
            Shape::Array(d, elem) => {
                let n = usize::try_from(d.eval_at(sizes)?).ok()?;
                elem.component_lens(sizes, outer.checked_mul(n)?, out)?;
            }
        }
        Some(())
    }

    /// Visit the leaves in row-major order; `f` gets each one's component (from `first`)
    /// and its index in that component.
    fn walk(
        &self,
        sizes: &[u64],
        first: usize,
        cursors: &mut [usize],
        f: &mut dyn FnMut(usize, usize) -> Result<(), JitError>,
    ) -> Result<(), JitError> {
        match self {
            Shape::Real => {
                let at = cursors
                    .get_mut(first)
                    .ok_or_else(|| JitError::Call("a value does not fit its layout".into()))?;
                f(first, *at)?;
                *at += 1;
            }
            Shape::Tuple(items) => {
                let mut c = first;
                for s in items {
                    s.walk(sizes, c, cursors, f)?;
                    c += s.component_count();
                }
            }
            Shape::Array(d, elem) => {
                let n = d.eval_at(sizes).unwrap_or(0);
                for _ in 0..n {
                    elem.walk(sizes, first, cursors, f)?;
                }
            }
        }
        Ok(())
    }
}

/// An element count computed from the sizes before a call (buffer sizes and offsets).
/// Sums and maxima are n-ary, so that long ones do not nest deeply.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) enum SizeExpr {
    K(u64),
    D(Dim),
    Sum(Arc<[SizeExpr]>),
    Mul(Arc<SizeExpr>, Arc<SizeExpr>),
    Max(Arc<[SizeExpr]>),
}

impl SizeExpr {
    pub fn dim(d: Dim) -> SizeExpr {
        match d.as_constant() {
            Some(k) => SizeExpr::K(k),
            None => SizeExpr::D(d),
        }
    }

    /// The sum of `items` (nested sums flattened, constants folded).
    pub fn sum(items: impl IntoIterator<Item = SizeExpr>) -> SizeExpr {
        let mut k: u64 = 0;
        let mut rest = Vec::new();
        for x in items {
            match x {
                SizeExpr::K(c) => k = k.saturating_add(c),
                SizeExpr::Sum(xs) => {
                    for y in xs.iter() {
                        match y {
                            SizeExpr::K(c) => k = k.saturating_add(*c),
                            y => rest.push(y.clone()),
                        }
                    }
                }
                x => rest.push(x),
            }
        }
        if k > 0 {
            rest.push(SizeExpr::K(k));
        }
        match rest.len() {
            0 => SizeExpr::K(0),
            1 => rest.pop().unwrap_or(SizeExpr::K(0)),
            _ => SizeExpr::Sum(rest.into()),
        }
    }

    pub fn add(a: SizeExpr, b: SizeExpr) -> SizeExpr {
        SizeExpr::sum([a, b])
    }

    pub fn mul(a: SizeExpr, b: SizeExpr) -> SizeExpr {
        match (a, b) {
            (SizeExpr::K(0), _) | (_, SizeExpr::K(0)) => SizeExpr::K(0),
            (SizeExpr::K(1), x) | (x, SizeExpr::K(1)) => x,
            (SizeExpr::K(x), SizeExpr::K(y)) => SizeExpr::K(x.saturating_mul(y)),
            (x, y) => SizeExpr::Mul(Arc::new(x), Arc::new(y)),
        }
    }

    /// The largest of `items` (duplicates and zeros dropped, constants folded).
    pub fn max_of(items: impl IntoIterator<Item = SizeExpr>) -> SizeExpr {
        let mut k: u64 = 0;
        let mut rest: Vec<SizeExpr> = Vec::new();
        for x in items {
            match x {
                SizeExpr::K(c) => k = k.max(c),
                x if !rest.contains(&x) => rest.push(x),
                _ => {}
            }
        }
        if k > 0 {
            rest.push(SizeExpr::K(k));
        }
        match rest.len() {
            0 => SizeExpr::K(0),
            1 => rest.pop().unwrap_or(SizeExpr::K(0)),
            _ => SizeExpr::Max(rest.into()),
        }
    }

    /// The product of the dimensions.
    pub fn product(dims: &[Dim]) -> SizeExpr {
        dims.iter().fold(SizeExpr::K(1), |acc, d| {
            SizeExpr::mul(acc, SizeExpr::dim(*d))
        })
    }

    /// The value for the given sizes; `None` on overflow. A value that fits also fits in an
    /// `i64` multiplied by 8, so native code computing it with wrapping arithmetic agrees.
    pub fn eval(&self, sizes: &[u64]) -> Option<u64> {
        const LIMIT: u64 = (i64::MAX as u64) / 8;
        let v = match self {
            SizeExpr::K(k) => *k,
            SizeExpr::D(d) => d.eval_at(sizes)?,
            SizeExpr::Sum(xs) => xs
                .iter()
                .try_fold(0u64, |acc, x| acc.checked_add(x.eval(sizes)?))?,
            SizeExpr::Mul(a, b) => a.eval(sizes)?.checked_mul(b.eval(sizes)?)?,
            SizeExpr::Max(xs) => xs
                .iter()
                .try_fold(0u64, |acc, x| Some(acc.max(x.eval(sizes)?)))?,
        };
        (v <= LIMIT).then_some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structural_lengths_keep_the_floor() {
        let n = Dim::of_var(0);
        // scanr * 1 (shift1L A) has length max(n, 1); shift1R (scanl * 1 A) has length n.
        let left = n.dec().inc();
        let right = n.inc().dec();
        assert_eq!(left, Dim::new(Some(0), 0, 1));
        assert_eq!(right, n);
        assert_eq!(left.eval_at(&[0]), Some(1));
        assert_eq!(left.eval_at(&[3]), Some(3));
        assert_eq!(left.eval_at(&[]), None);
        assert_eq!(left.min(right), Some(n));
        assert_eq!(left.max(right), Some(left));
        assert_eq!(n.dec().dec().eval_at(&[1]), Some(0));
        assert_eq!(Dim::constant(0).dec(), Dim::constant(0));
        let names = vec!["n".to_string()];
        assert_eq!(left.display(&names).to_string(), "max(n, 1)");
        assert_eq!(n.inc().display(&names).to_string(), "n+1");
        assert_eq!(
            Dim::of_var(1).dec().display(&names).to_string(),
            "max(#1-1, 0)"
        );
    }

    #[test]
    fn parameter_lengths_are_their_formal_sizes() {
        let index = |name: &str| (name == "n").then_some(0);
        let size = Size::var("n").plus(-2);
        assert_eq!(
            dim_of_size(&size, &index).ok(),
            Some(Dim::of_var(0).step(-2))
        );
        assert_eq!(
            dim_of_size(&Size::lit(4), &index).ok(),
            Some(Dim::constant(4))
        );
        let missing = dim_of_size(&Size::var("m"), &index).unwrap_err();
        assert!(missing.to_string().contains("`m`"), "{missing}");
    }

    #[test]
    fn size_expressions_fold_and_check_overflow() {
        let n = SizeExpr::dim(Dim::of_var(0));
        let e = SizeExpr::add(SizeExpr::mul(n.clone(), SizeExpr::K(1)), SizeExpr::K(0));
        assert_eq!(e, n);
        assert_eq!(SizeExpr::max_of([n.clone(), n.clone(), SizeExpr::K(0)]), n);
        assert_eq!(
            SizeExpr::sum([SizeExpr::K(2), SizeExpr::add(n.clone(), SizeExpr::K(3))]),
            SizeExpr::sum([n.clone(), SizeExpr::K(5)])
        );
        let sq = SizeExpr::mul(n.clone(), n);
        assert_eq!(sq.eval(&[1 << 20]), Some(1 << 40));
        assert_eq!(sq.eval(&[1 << 31]), None);
        assert_eq!(sq.eval(&[u64::MAX]), None);
    }
}
