//! A loop's (or a join's) state as SSA values: values flattened into the block parameters
//! they pass through and rebuilt from them, and the slots every iteration leaves as they
//! are ([`Fixed`]), which the loop does not carry.

use std::rc::Rc;

use cranelift_codegen::ir::Value;

use crate::error::{internal, JitError, JitResult};
use crate::shape::SShape;
use crate::value::{CondVal, Holds, IntVal, Kind, Layout, Place, RealVal, Val};

use super::Translator;

/// The slots of a loop's state (in [`Translator::flatten`]'s order) that are the same on
/// every iteration (`Some`): they are not carried, so the body sees the lengths and
/// strides themselves (often constants or the sizes' values) rather than block parameters.
pub(super) struct Fixed(Vec<Option<IntVal>>);

impl Fixed {
    /// Nothing fixed: every one of `n` slots is carried.
    fn none(n: usize) -> Fixed {
        Fixed(vec![None; n])
    }

    /// The slots of `flat` (a whole state) that the loop carries.
    fn carried(&self, flat: &[Value]) -> JitResult<Vec<Value>> {
        if flat.len() != self.0.len() {
            return internal("a loop's state changed its number of slots");
        }
        Ok(flat
            .iter()
            .zip(&self.0)
            .filter(|(_, f)| f.is_none())
            .map(|(&v, _)| v)
            .collect())
    }

    /// The whole state from the carried slots.
    pub(super) fn slots(&self, carried: &[Value]) -> JitResult<Vec<IntVal>> {
        let mut it = carried.iter();
        let out = self
            .0
            .iter()
            .map(|f| f.or_else(|| it.next().map(|&v| IntVal::Ssa(v))))
            .collect::<Option<Vec<IntVal>>>();
        match out {
            Some(out) if it.next().is_none() => Ok(out),
            _ => internal("a loop's carried state does not fit its slots"),
        }
    }
}

impl<'a> Translator<'a> {
    /// The SSA values that make up `v` (every array in it must be in memory).
    pub(super) fn flatten(&mut self, v: &Val, out: &mut Vec<Value>) -> JitResult<()> {
        match v {
            Val::Real(x) => out.push(self.real_value(*x)),
            Val::Bool(x) => out.push(self.cond_value(*x)),
            Val::Tuple(items) => {
                for x in items.iter() {
                    self.flatten(x, out)?;
                }
            }
            Val::Arr(a) => {
                let Kind::Mem { layout, .. } = &a.kind else {
                    return internal("only arrays in memory are passed between blocks");
                };
                out.push(self.int_value(a.len));
                self.flatten_layout(layout, out);
            }
        }
        Ok(())
    }

    fn flatten_layout(&mut self, lay: &Layout, out: &mut Vec<Value>) {
        match lay {
            Layout::Real { base, strides } => {
                out.push(*base);
                for &s in strides.iter() {
                    out.push(self.int_value(s));
                }
            }
            Layout::Tuple(items) => items.iter().for_each(|l| self.flatten_layout(l, out)),
            Layout::Array { len, elem } => {
                out.push(self.int_value(*len));
                self.flatten_layout(elem, out);
            }
        }
    }

    /// The value with the structure of `template` made of the slots `vals` (as
    /// [`Translator::flatten`] produced them, or lengths and strides known to be the same),
    /// arrays with shapes from `s` and buffers `holds`.
    pub(super) fn rebuild(
        &mut self,
        template: &Val,
        s: &SShape,
        vals: &mut std::slice::Iter<'_, IntVal>,
        holds: &Holds,
    ) -> JitResult<Val> {
        let mut value = || match vals.next() {
            Some(&IntVal::Ssa(v)) => Ok(v),
            Some(IntVal::Const(_)) => internal("a constant slot for a value"),
            None => internal("too few block parameters"),
        };
        Ok(match (template, s) {
            (Val::Real(_), _) => Val::Real(RealVal::Ssa(value()?)),
            (Val::Bool(_), _) => Val::Bool(CondVal::Ssa(value()?)),
            (Val::Tuple(items), SShape::Tuple(ss)) if items.len() == ss.len() => Val::Tuple(
                items
                    .iter()
                    .zip(ss.iter())
                    .map(|(x, s)| self.rebuild(x, s, vals, holds))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Val::Arr(a), SShape::Arr(sa)) => {
                let Kind::Mem { layout, .. } = &a.kind else {
                    return internal("only arrays in memory are passed between blocks");
                };
                let Some(&carried) = vals.next() else {
                    return internal("too few block parameters");
                };
                // The length is what the block received (a fixed slot when every state is
                // kept in places of one capacity, see `place_slots`), never the shape's
                // claim alone: an array's length stays within the buffer it is in whatever
                // the shape analysis says.
                let layout = Self::rebuild_layout(layout, vals)?;
                Val::Arr(self.arr(
                    carried,
                    sa,
                    Some(sa.len),
                    Kind::Mem {
                        layout,
                        holds: holds.clone(),
                    },
                ))
            }
            _ => return internal("a value does not match its shape"),
        })
    }

    fn rebuild_layout(lay: &Layout, vals: &mut std::slice::Iter<'_, IntVal>) -> JitResult<Layout> {
        let mut next = || {
            vals.next()
                .copied()
                .ok_or_else(|| JitError::Internal("too few block parameters".into()))
        };
        Ok(match lay {
            Layout::Real { strides, .. } => {
                let IntVal::Ssa(base) = next()? else {
                    return internal("a constant slot for an address");
                };
                let strides = strides
                    .iter()
                    .map(|_| next())
                    .collect::<JitResult<Vec<_>>>()?;
                Layout::Real {
                    base,
                    strides: strides.into(),
                }
            }
            Layout::Tuple(items) => Layout::Tuple(
                items
                    .iter()
                    .map(|l| Self::rebuild_layout(l, vals))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            Layout::Array { elem, .. } => {
                let len = next()?;
                Layout::Array {
                    len,
                    elem: Rc::new(Self::rebuild_layout(elem, vals)?),
                }
            }
        })
    }

    /// `p`'s lengths and strides in [`Translator::flatten`]'s order for a value of shape `s`
    /// kept in `p`: `None` for what may differ between values kept there (reals, lengths
    /// that are not exact, and addresses unless `at_base`: every value is kept at `p`'s
    /// own addresses, not at a row of it).
    fn place_slots(&mut self, p: &Place, s: &SShape, at_base: bool, out: &mut Vec<Option<IntVal>>) {
        match (p, s) {
            (Place::Tuple(items), SShape::Tuple(ss)) if items.len() == ss.len() => {
                for (p, s) in items.iter().zip(ss.iter()) {
                    self.place_slots(p, s, at_base, out);
                }
            }
            (Place::Arr(a), SShape::Arr(sa)) => {
                // A state kept in `p` is never longer than `p`'s capacity, so that is its
                // length when the shape says every state has the same one.
                out.push(sa.exact.then_some(a.len));
                if let Kind::Mem { layout, .. } = &a.kind {
                    layout_slots(layout, at_base, out);
                }
            }
            // A real or condition, or a place that does not match (then nothing is fixed:
            // the slot count differs from the state's).
            _ => out.push(None),
        }
    }

    /// A loop's initial state `v` of shape `s`, kept in `places` on every iteration (none:
    /// nothing fixed): its fixed slots, and the values the loop carries. With `at_base`,
    /// every state is kept at the places' own addresses (a fold updating one buffer in
    /// place), which are then fixed too: the loop reads and writes the accumulator at
    /// addresses known before it, which the lanes pass can tell apart.
    pub(super) fn loop_state(
        &mut self,
        v: &Val,
        places: &[&Place],
        s: &SShape,
        at_base: bool,
    ) -> JitResult<(Fixed, Vec<Value>)> {
        let mut flat = Vec::new();
        self.flatten(v, &mut flat)?;
        let mut fixed = if places.is_empty() {
            Fixed::none(flat.len())
        } else {
            self.fixed_slots(places, s, at_base, flat.len())
        };
        if at_base {
            // An address is fixed only where the initial state already lies at it.
            for (slot, &v) in fixed.0.iter_mut().zip(&flat) {
                if matches!(*slot, Some(IntVal::Ssa(w)) if w != v) {
                    *slot = None;
                }
            }
        }
        let carried = fixed.carried(&flat)?;
        Ok((fixed, carried))
    }

    /// The values a loop carries of its next state `v`.
    pub(super) fn carry(&mut self, v: &Val, fixed: &Fixed) -> JitResult<Vec<Value>> {
        let mut flat = Vec::new();
        self.flatten(v, &mut flat)?;
        fixed.carried(&flat)
    }

    /// The slots of a loop's state of shape `s` that every iteration leaves as they are,
    /// when each iteration's state is a view of one of `places` (accumulator buffers
    /// allocated alike, or rows of one array): their strides and inner lengths, and the
    /// lengths the shape says are exact. `n` is the number of slots.
    fn fixed_slots(&mut self, places: &[&Place], s: &SShape, at_base: bool, n: usize) -> Fixed {
        let mut all: Option<Vec<Option<IntVal>>> = None;
        for p in places {
            let mut slots = Vec::with_capacity(n);
            self.place_slots(p, s, at_base, &mut slots);
            all = Some(match all {
                None => slots,
                Some(prev) if prev.len() == slots.len() => prev
                    .iter()
                    .zip(&slots)
                    .map(|(a, b)| if a == b { *a } else { None })
                    .collect(),
                Some(_) => vec![None; n],
            });
        }
        match all {
            Some(slots) if slots.len() == n => Fixed(slots),
            _ => Fixed(vec![None; n]),
        }
    }
}

/// Every slot carried.
pub(super) fn ssa_ints(vals: &[Value]) -> Vec<IntVal> {
    vals.iter().map(|&v| IntVal::Ssa(v)).collect()
}

/// A layout's slots in [`Translator::flatten`]'s order: its strides and inner lengths, and
/// its addresses if `at_base`.
fn layout_slots(lay: &Layout, at_base: bool, out: &mut Vec<Option<IntVal>>) {
    match lay {
        Layout::Real { base, strides } => {
            out.push(at_base.then_some(IntVal::Ssa(*base)));
            out.extend(strides.iter().map(|&s| Some(s)));
        }
        Layout::Tuple(items) => items.iter().for_each(|l| layout_slots(l, at_base, out)),
        Layout::Array { len, elem } => {
            out.push(Some(*len));
            layout_slots(elem, at_base, out);
        }
    }
}

/// Whether two places are one: the same addresses, leaf by leaf (a fold whose function
/// updates its accumulator in place gets one buffer as both of its places).
pub(super) fn same_place(a: &Place, b: &Place) -> bool {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    super::access::place_bases(a, &mut x);
    super::access::place_bases(b, &mut y);
    !x.is_empty() && x == y
}
