//! `shift1L` and `shift1R`: views that drop the first or the last element.

use std::rc::Rc;

use crate::error::{internal, JitResult};
use crate::shape::SArr;
use crate::value::{Arr, IntVal, Kind};

use super::{expect_arr, Translator};

impl<'a> Translator<'a> {
    /// `shift1L a` (drop the first element) or `shift1R a` (drop the last): a view.
    pub(super) fn shift(&mut self, a: &Arr, left: bool) -> JitResult<Rc<Arr>> {
        if let Kind::Pad(p) = &a.kind {
            // Dropping the fill leaves the source; dropping the other end, the pad is
            // computed into memory first.
            if p.at_end != left {
                return Ok(p.src.clone());
            }
            let dst = self.alloc(&a.shape)?;
            let v = expect_arr(self.write_arr(a, &dst)?)?;
            return self.shift(&v, left);
        }
        if let Kind::Scan(_) = a.kind {
            // Its elements come in order from the first: computed into memory first.
            let p = self.alloc(&a.shape)?;
            let v = expect_arr(self.write_arr(a, &p)?)?;
            return self.shift(&v, left);
        }
        let shape = Rc::new(SArr {
            len: a.shape.len.dec(),
            exact: false,
            elem: a.shape.elem.clone(),
        });
        let (len, claim) = match a.stat() {
            Some(d) => (self.dim(d.dec()), Some(d.dec())),
            None => (self.dec(a.len), None),
        };
        let kind = match &a.kind {
            Kind::Mem { layout, holds } => Kind::Mem {
                layout: if left {
                    self.layout_offset(layout, IntVal::Const(1), false)?
                } else {
                    layout.clone()
                },
                holds: holds.clone(),
            },
            Kind::Fill { elem } => Kind::Fill { elem: elem.clone() },
            Kind::Iota { start } => Kind::Iota {
                start: if left { start + 1 } else { *start },
            },
            Kind::Map { f, src, read } => {
                if read.spent() {
                    return self.read_twice("a map shifted after it was read");
                }
                Kind::Map {
                    f: *f,
                    src: self.shift(src, left)?,
                    read: read.fresh(),
                }
            }
            Kind::Map2 { f, a, b, read } => {
                if read.spent() {
                    return self.read_twice("a map2 shifted after it was read");
                }
                Kind::Map2 {
                    f: *f,
                    a: self.shift(a, left)?,
                    b: self.shift(b, left)?,
                    read: read.fresh(),
                }
            }
            Kind::Scan(_) | Kind::Pad(_) => {
                return internal("a scan computed where it is read is shifted")
            }
        };
        Ok(self.arr(len, &shape, claim, kind))
    }
}
