//! The ABI boundary: the values of the function's parameters and the places of its
//! result, read from the pointer arrays the caller passes.

use cranelift_codegen::ir::types::F64;
use cranelift_codegen::ir::{InstBuilder, Value};
use unfad_syntax::ExprId;

use crate::error::{internal, unsupported, JitError, JitResult};
use crate::shape::SShape;
use crate::value::{no_holds, Kind, Place, RealVal, Val};

use super::Translator;

/// A parameter's value or a result's place.
enum Boundary {
    Val(Val),
    Place(Place),
}

impl Boundary {
    fn expect_val(self) -> JitResult<Val> {
        match self {
            Boundary::Val(v) => Ok(v),
            Boundary::Place(_) => internal("a parameter has no value"),
        }
    }
}

impl<'a> Translator<'a> {
    /// The value of a parameter of shape `s` whose components are at `ptrs`.
    pub fn param_val(
        &mut self,
        s: &SShape,
        ptrs: &mut std::slice::Iter<'_, Value>,
    ) -> JitResult<Val> {
        let mut next = |t: &mut Self| {
            ptrs.next()
                .map(|&v| t.root(v))
                .ok_or_else(|| JitError::Internal("too few input components".into()))
        };
        self.boundary(s, &mut next, false).map(|p| p.expect_val())?
    }

    /// The place of a result of shape `s` whose components are at `ptrs`.
    pub fn result_place(
        &mut self,
        s: &SShape,
        ptrs: &mut std::slice::Iter<'_, Value>,
    ) -> JitResult<Place> {
        let mut next = |t: &mut Self| {
            ptrs.next()
                .map(|&v| t.root(v))
                .ok_or_else(|| JitError::Internal("too few output components".into()))
        };
        match self.boundary(s, &mut next, true)? {
            Boundary::Place(p) => Ok(p),
            Boundary::Val(_) => internal("a result has no place"),
        }
    }

    fn boundary(
        &mut self,
        s: &SShape,
        next: &mut dyn FnMut(&mut Self) -> JitResult<Value>,
        place: bool,
    ) -> JitResult<Boundary> {
        Ok(match s {
            SShape::Real => {
                let ptr = next(self)?;
                if place {
                    Boundary::Place(Place::Real(ptr))
                } else {
                    let x = self.b.ins().load(F64, self.flags, ptr, 0);
                    Boundary::Val(Val::Real(RealVal::Ssa(x)))
                }
            }
            SShape::Bool => return unsupported("a condition at the function boundary"),
            SShape::Tuple(items) => {
                let mut ps = Vec::new();
                let mut vs = Vec::new();
                for s in items.iter() {
                    match self.boundary(s, next, place)? {
                        Boundary::Place(p) => ps.push(p),
                        Boundary::Val(v) => vs.push(v),
                    }
                }
                if place {
                    Boundary::Place(Place::Tuple(ps.into()))
                } else {
                    Boundary::Val(Val::Tuple(vs.into()))
                }
            }
            SShape::Arr(sa) => {
                let layout = self.layout(&sa.elem, next, &mut Vec::new())?;
                let len = self.dim(sa.len);
                let kind = Kind::Mem {
                    layout,
                    holds: no_holds(),
                };
                let arr = self.arr(len, sa, Some(sa.len), kind);
                if place {
                    Boundary::Place(Place::Arr(arr))
                } else {
                    Boundary::Val(Val::Arr(arr))
                }
            }
        })
    }

    /// Write the function's result.
    pub fn emit_result(&mut self, body: ExprId, out: &Place) -> JitResult<()> {
        self.emit_into(body, out)?;
        Ok(())
    }
}
