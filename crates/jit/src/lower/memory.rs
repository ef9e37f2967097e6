//! The memory plan: workspace buffers for arrays and accumulators, the layouts of their
//! elements, and the values and places that layouts describe (element `i`'s layout,
//! views of a buffer).

use std::rc::Rc;

use cranelift_codegen::ir::types::F64;
use cranelift_codegen::ir::{Block, BlockArg, InstBuilder, StackSlotData, StackSlotKind, Value};

use crate::error::{internal, unsupported, JitResult, Stop};
use crate::layout::{Dim, SizeExpr};
use crate::shape::{SArr, SShape};
use crate::value::{sized, Arr, Buf, Holds, IntVal, Kind, Layout, Place, RealVal, Val};

use super::prologue::PrologueValue;
use super::Translator;

impl<'a> Translator<'a> {
    /// The layout of the elements of an array whose element shape is `elem`, with leaf
    /// bases from `bases` (in component order) and the dimensions `inner` above them.
    pub(super) fn layout(
        &mut self,
        elem: &SShape,
        bases: &mut dyn FnMut(&mut Self) -> JitResult<Value>,
        inner: &mut Vec<Dim>,
    ) -> JitResult<Layout> {
        Ok(match elem {
            SShape::Real => {
                let base = bases(self)?;
                let strides: Vec<IntVal> = (0..=inner.len())
                    .map(|k| self.count(SizeExpr::product(&inner[k..])))
                    .collect();
                Layout::Real {
                    base,
                    strides: strides.into(),
                }
            }
            SShape::Bool => return unsupported("an array of conditions"),
            SShape::Tuple(items) => Layout::Tuple(
                items
                    .iter()
                    .map(|s| self.layout(s, bases, inner))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            SShape::Arr(sa) => {
                inner.push(sa.len);
                let elem = self.layout(&sa.elem, bases, inner);
                inner.pop();
                let len = self.dim(sa.len);
                Layout::Array {
                    len,
                    elem: Rc::new(elem?),
                }
            }
        })
    }

    /// A fresh workspace buffer for an array of shape `sa` (its length is the capacity).
    pub(super) fn alloc(&mut self, sa: &Rc<SArr>) -> JitResult<Rc<Arr>> {
        self.alloc_without(sa, &[])
    }

    /// [`Translator::alloc`], except that the components at `paths` of the elements (none
    /// is empty) are not kept: every real leaf under them points at the function's one
    /// sink, a real on the stack, with all its strides 0, whatever the index. Such a
    /// column is folded where it is made or written elsewhere, and never read from here;
    /// what is written to it (the zeros of a pad) lands in the sink, which nothing reads.
    /// So the column takes no workspace, and nothing can write outside the sink.
    pub(super) fn alloc_without(
        &mut self,
        sa: &Rc<SArr>,
        paths: &[Vec<usize>],
    ) -> JitResult<Rc<Arr>> {
        let mut leaves = Vec::new();
        leaves_under(
            &sa.elem,
            &mut vec![sa.len],
            &mut Vec::new(),
            paths,
            &mut leaves,
        );
        if leaves.iter().any(|(_, shared)| *shared) && self.sink.is_none() {
            let data = StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3);
            self.sink = Some(self.b.create_sized_stack_slot(data));
        }
        let sizes: Vec<Option<SizeExpr>> = leaves
            .iter()
            .map(|(dims, shared)| (!shared).then(|| SizeExpr::product(dims)))
            .collect();
        let total = SizeExpr::sum(sizes.iter().flatten().cloned());
        let buf: Rc<Buf> = self.slots.alloc(total);
        let slot = buf.slot;
        let mut offset = SizeExpr::K(0);
        let mut k = 0;
        let mut bases = |t: &mut Self| -> JitResult<Value> {
            let Some(size) = sizes.get(k) else {
                return internal("a buffer has more leaves than its shape");
            };
            k += 1;
            let v = match size {
                Some(size) => {
                    let v = t.prologue_value(PrologueValue::Addr(slot, offset.clone()));
                    offset = SizeExpr::add(offset.clone(), size.clone());
                    v
                }
                None => t.prologue_value(PrologueValue::Sink),
            };
            t.root(v);
            Ok(v)
        };
        let mut layout = self.layout(&sa.elem, &mut bases, &mut Vec::new())?;
        for path in paths {
            layout = shared_rows(&layout, path)?;
        }
        let len = self.dim(sa.len);
        Ok(self.arr(
            len,
            sa,
            Some(sa.len),
            Kind::Mem {
                layout,
                holds: Rc::from(vec![buf]),
            },
        ))
    }

    /// Places for an accumulator of shape `s`: scalars in registers, arrays in new buffers.
    pub(super) fn acc_place(&mut self, s: &SShape) -> JitResult<Place> {
        Ok(match s {
            SShape::Real | SShape::Bool => Place::Reg,
            SShape::Tuple(items) => Place::Tuple(
                items
                    .iter()
                    .map(|s| self.acc_place(s))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            SShape::Arr(sa) => Place::Arr(self.alloc(sa)?),
        })
    }

    /// The layout of element `i`, one level down.
    pub(super) fn layout_at(&mut self, lay: &Layout, i: IntVal) -> JitResult<Layout> {
        self.layout_offset(lay, i, true)
    }

    /// The layout moved by `i` elements at its outermost level; `down` also drops that
    /// level's stride (the result describes element `i`).
    pub(super) fn layout_offset(
        &mut self,
        lay: &Layout,
        i: IntVal,
        down: bool,
    ) -> JitResult<Layout> {
        Ok(match lay {
            Layout::Real { base, strides } => {
                let Some(&s0) = strides.first() else {
                    return internal("a leaf has no stride left");
                };
                let base = self.addr(*base, i, s0);
                let strides = if down {
                    strides[1..].into()
                } else {
                    strides.clone()
                };
                Layout::Real { base, strides }
            }
            Layout::Tuple(items) => Layout::Tuple(
                items
                    .iter()
                    .map(|l| self.layout_offset(l, i, down))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            Layout::Array { len, elem } => Layout::Array {
                len: *len,
                elem: Rc::new(self.layout_offset(elem, i, down)?),
            },
        })
    }

    /// The array in memory laid out as `elem` repeated `len` times, of shape `sa`.
    fn mem_arr(&mut self, len: IntVal, elem: &Layout, sa: &Rc<SArr>, holds: &Holds) -> Rc<Arr> {
        self.arr(
            len,
            sa,
            Some(sa.len),
            Kind::Mem {
                layout: elem.clone(),
                holds: holds.clone(),
            },
        )
    }

    /// The value described by the layout of one element (of shape `s`).
    pub(super) fn layout_val(&mut self, lay: &Layout, s: &SShape, holds: &Holds) -> JitResult<Val> {
        Ok(match (lay, s) {
            (Layout::Real { base, .. }, SShape::Real) => Val::Real(RealVal::Ssa(self.load(*base))),
            (Layout::Tuple(ls), SShape::Tuple(ss)) if ls.len() == ss.len() => Val::Tuple(
                ls.iter()
                    .zip(ss.iter())
                    .map(|(l, s)| self.layout_val(l, s, holds))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Layout::Array { len, elem }, SShape::Arr(sa)) => {
                Val::Arr(self.mem_arr(*len, elem, sa, holds))
            }
            _ => return internal("a layout does not match its shape"),
        })
    }

    /// The place of one element (of shape `s`) described by a layout.
    fn layout_place(&mut self, lay: &Layout, s: &SShape, holds: &Holds) -> JitResult<Place> {
        Ok(match (lay, s) {
            (Layout::Real { base, .. }, SShape::Real) => Place::Real(*base),
            (Layout::Tuple(ls), SShape::Tuple(ss)) if ls.len() == ss.len() => Place::Tuple(
                ls.iter()
                    .zip(ss.iter())
                    .map(|(l, s)| self.layout_place(l, s, holds))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Layout::Array { len, elem }, SShape::Arr(sa)) => {
                Place::Arr(self.mem_arr(*len, elem, sa, holds))
            }
            _ => return internal("a layout does not match its shape"),
        })
    }

    /// The place of element `i` of the in-memory array `p`.
    pub(super) fn place_elem(&mut self, p: &Arr, i: IntVal) -> JitResult<Place> {
        let Kind::Mem { layout, holds } = &p.kind else {
            return internal("a destination is not in memory");
        };
        let lay = self.layout_at(layout, i)?;
        self.layout_place(&lay, &p.shape.elem, holds)
    }

    /// The in-memory array at place `p`, with run-time length `len` (exactly `dim` if known),
    /// never longer than `p`: a length not shown at compile time to be at most `p`'s is
    /// clamped to it.
    pub(super) fn view(&mut self, p: &Arr, len: IntVal, dim: Option<Dim>) -> JitResult<Val> {
        let Kind::Mem { layout, holds } = &p.kind else {
            return internal("a destination is not in memory");
        };
        let (len, dim) = if Self::at_most((len, dim), (p.len, p.stat())) {
            (len, dim)
        } else {
            (self.umin(len, p.len), None)
        };
        let kind = Kind::Mem {
            layout: layout.clone(),
            holds: holds.clone(),
        };
        Ok(Val::Arr(self.arr(len, &p.shape, dim, kind)))
    }

    /// An array of shape `sa` and run-time length `len`, exact (of length `claim`) only if
    /// `len` is by construction the prologue's value of `claim`. Every array value is made
    /// here, so a length the lowering relies on as exact is never the shape analysis' word
    /// alone.
    pub(super) fn arr(
        &mut self,
        len: IntVal,
        sa: &Rc<SArr>,
        claim: Option<Dim>,
        kind: Kind,
    ) -> Rc<Arr> {
        let d = claim.and_then(|d| self.stat_of(len, d));
        Rc::new(Arr {
            len,
            shape: sized(sa, d),
            kind,
        })
    }

    /// Whether the length `a` is at most `b` at every size, shown at compile time: the same
    /// value, 0, two constants, or two lengths of the sizes of which `a` is the minimum. Each
    /// comes with its `Dim` if it is exactly that.
    pub(super) fn at_most(a: (IntVal, Option<Dim>), b: (IntVal, Option<Dim>)) -> bool {
        a.0 == b.0
            || a.0 == IntVal::Const(0)
            || matches!((a.0, b.0), (IntVal::Const(x), IntVal::Const(y)) if x <= y)
            || matches!((a.1, b.1), (Some(x), Some(y)) if x.min(y) == Some(x))
    }

    /// Leave the function with its status set (see [`Translator::check`]) if the in-memory
    /// array `a` is empty at run time, unless its length shows at compile time that it never
    /// is. A length the shape analysis got wrong then stops the function instead of writing
    /// outside a buffer.
    pub(super) fn check_nonempty(&mut self, a: &Arr) -> JitResult<()> {
        let shown = match (a.len, a.stat()) {
            (IntVal::Const(k), _) => k >= 1,
            (_, Some(d)) => d.floor >= 1 || d.as_constant().is_some_and(|k| k >= 1),
            _ => false,
        };
        if !shown {
            let len = self.int_value(a.len);
            self.check(len);
        }
        Ok(())
    }

    /// Go on only if `ok` (an integer or a condition) is not zero at run time; otherwise
    /// leave the function at once with its status cell set, which the checked call reports
    /// as an error. What was written before stays written; nothing is written outside a
    /// buffer.
    pub(super) fn check(&mut self, ok: Value) {
        self.check_that(ok, Stop::Length);
    }

    /// [`Translator::check`], the status cell telling `why` the function stopped (the block
    /// that sets it takes the code as its parameter).
    pub(super) fn check_that(&mut self, ok: Value, why: Stop) {
        let fail = self.fail_block();
        let go_on = self.b.create_block();
        let code = self.b.ins().f64const(why.code_at(self.site));
        let zero = self.b.ins().f64const(0.0);
        let args = [code, zero, zero].map(BlockArg::from);
        self.b.ins().brif(ok, go_on, &[], fail, &args);
        self.switch_to(go_on);
    }

    /// [`Translator::check_that`] for an index `index` (a real) checked against the length
    /// `len`: both go to the status cells after the code, so that the error names them.
    /// They are converted in a cold block of this check's own, off the path that passes.
    pub(super) fn check_index(&mut self, ok: Value, index: Value, len: IntVal) {
        self.check_with_details(ok, Stop::Index, |t| {
            let n = t.int_value(len);
            [index, t.b.ins().fcvt_from_sint(F64, n)]
        });
    }

    /// [`Translator::check_index`] for an index known as an integer `k` (its real is
    /// made in the cold block, so that the path that passes computes no real for it).
    pub(super) fn check_int_index(&mut self, ok: Value, k: Value, len: IntVal) {
        self.check_with_details(ok, Stop::Index, |t| {
            let n = t.int_value(len);
            [
                t.b.ins().fcvt_from_sint(F64, k),
                t.b.ins().fcvt_from_sint(F64, n),
            ]
        });
    }

    /// [`Translator::check_that`] that the length `len` of an `iota` is `size`, the formal
    /// size it was laid out for ([`Stop::Size`], naming both). They differ only where an int
    /// parameter the formula reads is negative (its size variable counts it as 0): longer,
    /// the array would not fit its buffer; shorter, a result would come out padded.
    pub(super) fn check_size(&mut self, len: IntVal, size: IntVal) {
        let (l, n) = (self.int_value(len), self.int_value(size));
        let ok = self
            .b
            .ins()
            .icmp(cranelift_codegen::ir::condcodes::IntCC::Equal, l, n);
        self.check_with_details(ok, Stop::Size, |t| {
            [
                t.b.ins().fcvt_from_sint(F64, l),
                t.b.ins().fcvt_from_sint(F64, n),
            ]
        });
    }

    /// Go on if `ok`; otherwise, in a cold block of this check's own, compute the two
    /// details of the stop `why` (`details`, off the path that passes) and leave with them
    /// in the status cells.
    fn check_with_details(
        &mut self,
        ok: Value,
        why: Stop,
        details: impl FnOnce(&mut Self) -> [Value; 2],
    ) {
        let fail = self.fail_block();
        let go_on = self.b.create_block();
        let failed = self.b.create_block();
        self.b.set_cold_block(failed);
        self.b.ins().brif(ok, go_on, &[], failed, &[]);
        self.switch_to(failed);
        let code = self.b.ins().f64const(why.code_at(self.site));
        let [a, b] = details(self);
        let args = [code, a, b].map(BlockArg::from);
        self.b.ins().jump(fail, &args);
        self.switch_to(go_on);
    }

    /// The block a failed check jumps to, with the status cells' values as parameters.
    fn fail_block(&mut self) -> Block {
        match self.status {
            Some(fail) => fail,
            None => {
                let fail = self.b.create_block();
                for _ in 0..crate::error::STATUS_CELLS {
                    self.b.append_block_param(fail, F64);
                }
                self.status = Some(fail);
                fail
            }
        }
    }

    pub(super) fn holds_of(v: &Val, out: &mut Vec<Rc<Buf>>) {
        match v {
            Val::Real(_) | Val::Bool(_) => {}
            Val::Tuple(items) => items.iter().for_each(|x| Self::holds_of(x, out)),
            Val::Arr(a) => {
                if let Kind::Mem { holds, .. } = &a.kind {
                    out.extend(holds.iter().cloned());
                }
            }
        }
    }

    pub(super) fn place_holds(p: &Place, out: &mut Vec<Rc<Buf>>) {
        match p {
            Place::Reg | Place::Real(_) => {}
            Place::Tuple(ps) => ps.iter().for_each(|p| Self::place_holds(p, out)),
            Place::Arr(a) | Place::AddTo(a) => {
                if let Kind::Mem { holds, .. } = &a.kind {
                    out.extend(holds.iter().cloned());
                }
            }
        }
    }
}

/// The leaves of an element of shape `s` in component order, each with its dimensions
/// (the outer array's length first) and whether it lies under one of the components
/// `paths`.
fn leaves_under(
    s: &SShape,
    dims: &mut Vec<Dim>,
    at: &mut Vec<usize>,
    paths: &[Vec<usize>],
    out: &mut Vec<(Vec<Dim>, bool)>,
) {
    match s {
        SShape::Real => out.push((dims.clone(), paths.iter().any(|p| at.starts_with(p)))),
        SShape::Bool => {}
        SShape::Tuple(items) => {
            for (i, s) in items.iter().enumerate() {
                at.push(i);
                leaves_under(s, dims, at, paths, out);
                at.pop();
            }
        }
        SShape::Arr(a) => {
            dims.push(a.len);
            leaves_under(&a.elem, dims, at, paths, out);
            dims.pop();
        }
    }
}

/// `lay` with each leaf under the component `path` at one place for every element and
/// every index inside it (all its strides are 0).
fn shared_rows(lay: &Layout, path: &[usize]) -> JitResult<Layout> {
    Ok(match (lay, path.split_first()) {
        (Layout::Tuple(items), Some((&i, rest))) => {
            let mut items = items.to_vec();
            let Some(item) = items.get(i) else {
                return internal("a component path outside its tuple");
            };
            items[i] = shared_rows(item, rest)?;
            Layout::Tuple(items.into())
        }
        (_, Some(_)) => return internal("a component path through a non-tuple"),
        (_, None) => zero_strides(lay),
    })
}

/// `lay` with the component at `path` (not empty) laid out as `column` instead.
pub(super) fn with_column(lay: &Layout, path: &[usize], column: &Layout) -> JitResult<Layout> {
    Ok(match (lay, path.split_first()) {
        (Layout::Tuple(items), Some((&i, rest))) => {
            let mut items = items.to_vec();
            let Some(item) = items.get(i) else {
                return internal("a component path outside its tuple");
            };
            items[i] = if rest.is_empty() {
                column.clone()
            } else {
                with_column(item, rest, column)?
            };
            Layout::Tuple(items.into())
        }
        _ => return internal("a component path through a non-tuple"),
    })
}

/// `lay` with every stride of every leaf 0.
fn zero_strides(lay: &Layout) -> Layout {
    match lay {
        Layout::Real { base, strides } => Layout::Real {
            base: *base,
            strides: strides.iter().map(|_| IntVal::Const(0)).collect(),
        },
        Layout::Tuple(items) => Layout::Tuple(items.iter().map(zero_strides).collect()),
        Layout::Array { len, elem } => Layout::Array {
            len: *len,
            elem: Rc::new(zero_strides(elem)),
        },
    }
}
