//! Reading element `i` of an array, whatever it is: in memory, a fill, an unevaluated map
//! (its function applied to the sources' elements), a scan computed where it is read, or an
//! `iota`'s element (its index as a real).

use unfad_syntax::ExprId;

use crate::error::JitResult;
use crate::shape::lambda;
use crate::value::{Arr, FillElem, IntVal, Kind, Place, RealVal, Val};

use super::Translator;

impl<'a> Translator<'a> {
    /// Element `i` of `a` (`i` is below its length).
    pub(super) fn elem(&mut self, a: &Arr, i: IntVal) -> JitResult<Val> {
        match &a.kind {
            Kind::Mem { layout, holds } => {
                let lay = self.layout_at(layout, i)?;
                self.layout_val(&lay, &a.shape.elem, holds)
            }
            Kind::Fill { elem } => Ok(self.fill_val(elem)),
            // Its function's value, kept as it is.
            Kind::Map { .. } | Kind::Map2 { .. } => self.elem_into(a, i, &Place::Reg),
            Kind::Scan(scan) => self.scan_step(scan, i),
            Kind::Pad(p) => self.pad_elem(p, i),
            Kind::Iota { start } => {
                let k = self.iadd(i, *start);
                let x = self.int_as_real(k);
                if let (RealVal::Ssa(v), IntVal::Ssa(k), 0) = (x, k, *start) {
                    self.note_iota_element(v, k, a);
                }
                Ok(Val::Real(x))
            }
        }
    }

    fn fill_val(&mut self, e: &FillElem) -> Val {
        match e {
            FillElem::Real(c) => Val::Real(RealVal::Const(*c)),
            FillElem::Tuple(items) => Val::Tuple(
                items
                    .iter()
                    .map(|x| self.fill_val(x))
                    .collect::<Vec<_>>()
                    .into(),
            ),
            FillElem::Array { len, shape, elem } => Val::Arr(self.arr(
                *len,
                shape,
                Some(shape.len),
                Kind::Fill {
                    elem: (**elem).clone(),
                },
            )),
        }
    }

    /// Element `i` of `a`, an unevaluated map's written to `p` as its function computes it
    /// (see [`Translator::emit_into`]: a sum of arrays accumulates where it goes, an array
    /// stored for later may be stored there; `Place::Reg` keeps it as it is); of any other
    /// array, read as it is.
    pub(super) fn elem_into(&mut self, a: &Arr, i: IntVal, p: &Place) -> JitResult<Val> {
        match &a.kind {
            Kind::Map { f, src, read } => {
                if read.second() {
                    return self.read_twice("an unevaluated map");
                }
                let x = self.elem(src, i)?;
                self.apply_into(*f, vec![x], p)
            }
            Kind::Map2 { f, a, b, read } => {
                if read.second() {
                    return self.read_twice("an unevaluated map2");
                }
                let x = self.elem(a, i)?;
                let y = self.elem(b, i)?;
                self.apply_into(*f, vec![x, y], p)
            }
            _ => self.elem(a, i),
        }
    }

    /// The body of the function argument `f` with its parameters bound to `args`, written
    /// to `p` (kept as it is for `Place::Reg`).
    fn apply_into(&mut self, f: ExprId, args: Vec<Val>, p: &Place) -> JitResult<Val> {
        let (ps, body) = lambda(self.arena, f, args.len(), "an array operation")?;
        for (&q, a) in ps.iter().zip(args) {
            self.bind(q, a)?;
        }
        let r = self.emit_into(body, p)?;
        // An element that is itself an unevaluated map may refer to the parameters; they
        // then stay bound until their last use.
        self.end_scope(ps, &r);
        Ok(r)
    }
}
