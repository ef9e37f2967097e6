//! `zeros_like` and `ones_like`: arrays every leaf of which is the same known constant,
//! written out only when they must be in memory.

use std::rc::Rc;

use unfad_syntax::ExprId;

use crate::error::{internal, JitError, JitResult};
use crate::shape::SShape;
use crate::value::{FillElem, Kind, Layout, RealVal, Val};

use super::Translator;

impl<'a> Translator<'a> {
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
                    Kind::Map { .. } | Kind::Map2 { .. } | Kind::Scan(_) => {
                        self.fill_elem_from_shape(&a.shape.elem, c)?
                    }
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
