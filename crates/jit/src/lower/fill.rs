//! Arrays computed from their index alone, written out only when they must be in memory:
//! `zeros_like` and `ones_like` (every leaf the same known constant), and `iota n` (element
//! `i` is `i`, computed where it is read).

use std::rc::Rc;

use unfad_syntax::ExprId;

use crate::error::{internal, JitError, JitResult};
use crate::shape::SShape;
use crate::value::{FillElem, Kind, Layout, RealVal, Val};

use super::{shape_arr, Translator};

impl<'a> Translator<'a> {
    /// `iota n` (node `e`): the ints `0 .. max(0, n) - 1`, unevaluated. Its length is the
    /// sizes' value when the analysis shows it (a literal, `len(A)`, an int parameter, minus
    /// literals); otherwise `n`'s value, at most the analysis' bound.
    pub(super) fn emit_iota(&mut self, e: ExprId, n: ExprId) -> JitResult<Val> {
        let sa = shape_arr(&self.shape(e)?)?;
        let len = if sa.exact {
            self.skip(n);
            self.dim(sa.len)
        } else {
            let x = self.emit_real(n)?;
            let k = self.length_of_real(x);
            let bound = self.dim(sa.len);
            if self.an.checked_iota(e) {
                // A failed check says where the `iota` is.
                self.site = self.arena.span(e);
                self.check_size(k, bound);
            }
            self.umin(k, bound)
        };
        Ok(Val::Arr(self.arr(
            len,
            &sa,
            Some(sa.len),
            Kind::Iota { start: 0 },
        )))
    }

    /// `zeros_like(x)` (`c` = 0) or `ones_like(x)` (`c` = 1).
    pub(super) fn emit_fill(&mut self, x: ExprId, c: f64) -> JitResult<Val> {
        let s = self.shape(x)?;
        if s.all_exact() {
            self.skip(x);
            return self.fill_from_shape(&s, c);
        }
        let v = self.emit(x)?;
        self.fill_from_val(&v, c)
    }

    fn fill_from_shape(&mut self, s: &SShape, c: f64) -> JitResult<Val> {
        Ok(match s {
            SShape::Real => Val::Real(RealVal::Const(c)),
            SShape::Bool => return Err(JitError::Type("`zeros_like` of a condition".into())),
            SShape::Tuple(items) => Val::Tuple(
                items
                    .iter()
                    .map(|s| self.fill_from_shape(s, c))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            SShape::Arr(sa) => {
                let len = self.dim(sa.len);
                let kind = Kind::Fill {
                    elem: self.fill_elem_from_shape(&sa.elem, c)?,
                };
                Val::Arr(self.arr(len, sa, Some(sa.len), kind))
            }
        })
    }

    fn fill_elem_from_shape(&mut self, s: &SShape, c: f64) -> JitResult<FillElem> {
        Ok(match s {
            SShape::Real => FillElem::Real(c),
            SShape::Bool => return Err(JitError::Type("`zeros_like` of a condition".into())),
            SShape::Tuple(items) => FillElem::Tuple(
                items
                    .iter()
                    .map(|s| self.fill_elem_from_shape(s, c))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            SShape::Arr(sa) => FillElem::Array {
                len: self.dim(sa.len),
                shape: sa.clone(),
                elem: Rc::new(self.fill_elem_from_shape(&sa.elem, c)?),
            },
        })
    }

    fn fill_from_val(&mut self, v: &Val, c: f64) -> JitResult<Val> {
        Ok(match v {
            Val::Real(_) => Val::Real(RealVal::Const(c)),
            Val::Bool(_) => return Err(JitError::Type("`zeros_like` of a condition".into())),
            Val::Tuple(items) => Val::Tuple(
                items
                    .iter()
                    .map(|x| self.fill_from_val(x, c))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            Val::Arr(a) => {
                let elem = match &a.kind {
                    Kind::Mem { layout, .. } => {
                        Self::fill_elem_from_layout(layout, &a.shape.elem, c)?
                    }
                    Kind::Fill { elem } => Self::refill(elem, c),
                    Kind::Map { .. }
                    | Kind::Map2 { .. }
                    | Kind::Scan(_)
                    | Kind::Iota { .. }
                    | Kind::Pad(_) => self.fill_elem_from_shape(&a.shape.elem, c)?,
                };
                Val::Arr(self.arr(a.len, &a.shape, a.stat(), Kind::Fill { elem }))
            }
        })
    }

    fn fill_elem_from_layout(lay: &Layout, s: &SShape, c: f64) -> JitResult<FillElem> {
        Ok(match (lay, s) {
            (Layout::Real { .. }, SShape::Real) => FillElem::Real(c),
            (Layout::Tuple(ls), SShape::Tuple(ss)) if ls.len() == ss.len() => FillElem::Tuple(
                ls.iter()
                    .zip(ss.iter())
                    .map(|(l, s)| Self::fill_elem_from_layout(l, s, c))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Layout::Array { len, elem }, SShape::Arr(sa)) => FillElem::Array {
                len: *len,
                shape: sa.clone(),
                elem: Rc::new(Self::fill_elem_from_layout(elem, &sa.elem, c)?),
            },
            _ => return internal("a layout does not match its shape"),
        })
    }

    fn refill(e: &FillElem, c: f64) -> FillElem {
        match e {
            FillElem::Real(_) => FillElem::Real(c),
            FillElem::Tuple(items) => FillElem::Tuple(
                items
                    .iter()
                    .map(|x| Self::refill(x, c))
                    .collect::<Vec<_>>()
                    .into(),
            ),
            FillElem::Array { len, shape, elem } => FillElem::Array {
                len: *len,
                shape: shape.clone(),
                elem: Rc::new(Self::refill(elem, c)),
            },
        }
    }
}
