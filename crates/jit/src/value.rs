//! Compile-time descriptions of run-time values: what the lowering knows of the value of
//! each subterm while it emits code.
//!
//! Scalars are SSA values (or constants known at compile time); tuples are flattened into
//! their components and never live in memory as such. An array is one of:
//! - in memory ([`Kind::Mem`]): a [`Layout`] saying where each real leaf is (arrays of tuples
//!   are stored as tuples of arrays, nested arrays row-major in one buffer);
//! - a fill ([`Kind::Fill`]): every leaf the same known constant (`zeros_like`, `ones_like`);
//! - unevaluated ([`Kind::Map`], [`Kind::Map2`]): a `map` whose element is computed where a
//!   consumer reads it, which fuses the map into the consumer's loop;
//! - a shifted `scanl` computed in the loop that reads it ([`Kind::Scan`]);
//! - a scan that only moves elements, a view of its source with a fill at one end
//!   ([`Kind::Pad`]);
//! - `iota n`, element `i` being `start + i` as a real ([`Kind::Iota`]), never in memory.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use cranelift_codegen::ir::Value;
use cranelift_frontend::Variable;
use unfad_syntax::ExprId;

use crate::layout::Dim;
use crate::shape::{SArr, SShape};

/// An integer (a length, an index or a stride): known, or computed at run time.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum IntVal {
    /// Known at compile time.
    Const(i64),
    /// An SSA value computed at run time.
    Ssa(Value),
}

/// A real: known, or computed at run time.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RealVal {
    /// Known at compile time.
    Const(f64),
    /// An SSA value computed at run time.
    Ssa(Value),
}

/// A condition: known, or computed at run time (an `i8` that is 0 or 1).
#[derive(Clone, Copy, Debug)]
pub(crate) enum CondVal {
    /// Known at compile time.
    Const(bool),
    /// An SSA value computed at run time.
    Ssa(Value),
}

#[derive(Clone, Debug)]
pub(crate) enum Val {
    Real(RealVal),
    Bool(CondVal),
    Tuple(Rc<[Val]>),
    Arr(Rc<Arr>),
}

#[derive(Debug)]
pub(crate) struct Arr {
    /// The run-time length.
    pub len: IntVal,
    /// The static shape: its length bounds `len`, and is `len` if it is exact.
    pub shape: Rc<SArr>,
    pub kind: Kind,
}

#[derive(Debug)]
pub(crate) enum Kind {
    /// In memory; `holds` keeps the workspace buffers it lives in allocated.
    Mem { layout: Layout, holds: Holds },
    /// Every leaf is the same constant.
    Fill { elem: FillElem },
    /// `map f src`, computed element by element where it is read (at most once, unless
    /// [`Reads::again`]).
    Map {
        f: ExprId,
        src: Rc<Arr>,
        read: Reads,
    },
    /// `map2 f a b`, likewise.
    Map2 {
        f: ExprId,
        a: Rc<Arr>,
        b: Rc<Arr>,
        read: Reads,
    },
    /// A shifted `scanl`, computed in the loop that reads it (see [`Scan`]).
    Scan(Rc<Scan>),
    /// A moving scan: `src` with `fill` before it, or after it if `at_end` (see
    /// `lower/pad.rs`).
    Pad(Rc<Pad>),
    /// `iota n` (an int is carried as a real holding a whole number): element `i` is the
    /// real `start + i`, computed where it is read, as often as it is read (`start` is 1
    /// more for each `shift1L`).
    Iota { start: i64 },
}

/// Whether an unevaluated map's elements were read, and whether they may be read again
/// (computed anew at every read: a cheap function of sources that can be read again, see
/// `Translator::bind_let`).
#[derive(Debug, Default)]
pub(crate) struct Reads {
    read: Cell<bool>,
    again: Cell<bool>,
}

impl Reads {
    /// Record a read; true if it is a second one that is not allowed.
    pub fn second(&self) -> bool {
        self.read.replace(true) && !self.again.get()
    }
    /// Whether a read that is not allowed again happened.
    pub fn spent(&self) -> bool {
        self.read.get() && !self.again.get()
    }
    /// Unread again (the replay of a loop body).
    pub fn reset(&self) {
        self.read.set(false);
    }
    /// Allow any number of reads.
    pub fn allow_again(&self) {
        self.again.set(true);
    }
    /// A fresh record for a view of the same map (a shift), reads allowed as here.
    pub fn fresh(&self) -> Reads {
        Reads {
            read: Cell::new(false),
            again: Cell::new(self.again.get()),
        }
    }
}

/// `shift1R (scanl f z src)`, the accumulator before each step, or `shift1L`, after each
/// step: computed in the loop that reads it, which must read every element once and in
/// order from the first, with the accumulator in variables of the function being built
/// (one per leaf) instead of an array in memory.
#[derive(Debug)]
pub(crate) struct Scan {
    pub f: ExprId,
    pub src: Rc<Arr>,
    pub state: Vec<Variable>,
    /// The initial accumulator, whose structure the state's values are rebuilt into.
    pub template: Val,
    pub acc: SShape,
    /// Whether element `i` is the accumulator after step `i` (`shift1L`).
    pub after: bool,
    /// The loop depth where it was made; the loop reading it is one deeper.
    pub depth: usize,
    pub read: Cell<bool>,
}

/// `scanl (acc, z. z) fill src` (`fill`, then `src`'s elements) or, if `at_end`,
/// `scanr (z, acc. z) fill src` (`src`'s elements, then `fill`); elements are scalars or
/// tuples of them, and reading `src` computes no [`Scan`].
#[derive(Debug)]
pub(crate) struct Pad {
    pub src: Rc<Arr>,
    pub fill: Val,
    pub at_end: bool,
}

/// Where the elements of an in-memory array are; mirrors the element type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Layout {
    /// A real leaf: element `i` of the array is at `base + 8 * i * strides[0]`; the other
    /// strides index the arrays inside the element (the last one is 1).
    Real {
        base: Value,
        strides: Rc<[IntVal]>,
    },
    Tuple(Rc<[Layout]>),
    /// An array inside the element, of length `len` (the same for every element).
    Array {
        len: IntVal,
        elem: Rc<Layout>,
    },
}

/// The element of a fill.
#[derive(Clone, Debug)]
pub(crate) enum FillElem {
    Real(f64),
    Tuple(Rc<[FillElem]>),
    Array {
        len: IntVal,
        shape: Rc<SArr>,
        elem: Rc<FillElem>,
    },
}

/// Where a value is to be written.
#[derive(Clone, Debug)]
pub(crate) enum Place {
    /// A scalar kept in registers (accumulators).
    Reg,
    /// The address of one real.
    Real(Value),
    Tuple(Rc<[Place]>),
    /// An array in memory whose `len` is the capacity.
    Arr(Rc<Arr>),
    /// An array in memory that what is written is added to, element by element: the
    /// accumulator of a sum of arrays updated in place (`reduce (s, t. map2 + s t) z X`),
    /// given to the loop that makes each term so that the term is added where it is made
    /// rather than stored and then added. Writing `v` makes element `j` `p[j] + v[j]`, the
    /// accumulator's element first, as the sum's function computes it; the value written
    /// is then the accumulator's (a view of `p`), which nothing but the sum reads.
    AddTo(Rc<Arr>),
}

impl Place {
    /// Whether some part of the place adds to an accumulator ([`Place::AddTo`]).
    pub(crate) fn adds(&self) -> bool {
        match self {
            Place::AddTo(_) => true,
            Place::Tuple(ps) => ps.iter().any(Place::adds),
            Place::Reg | Place::Real(_) | Place::Arr(_) => false,
        }
    }

    /// The place with its parts that add to an accumulator kept in registers instead.
    pub(crate) fn without_adds(&self) -> Place {
        match self {
            Place::AddTo(_) => Place::Reg,
            Place::Tuple(ps) => Place::Tuple(ps.iter().map(Place::without_adds).collect()),
            Place::Reg | Place::Real(_) | Place::Arr(_) => self.clone(),
        }
    }
}

/// One workspace buffer; dropping the last handle frees its slot for reuse.
#[derive(Debug)]
pub(crate) struct Buf {
    pub slot: usize,
    freed: Rc<RefCell<Vec<usize>>>,
}

impl Drop for Buf {
    fn drop(&mut self) {
        self.freed.borrow_mut().push(self.slot);
    }
}

pub(crate) type Holds = Rc<[Rc<Buf>]>;

pub(crate) fn no_holds() -> Holds {
    Rc::from(Vec::new())
}

pub(crate) fn concat_holds(a: &Holds, b: &Holds) -> Holds {
    a.iter().chain(b.iter()).cloned().collect::<Vec<_>>().into()
}

/// Assignment of buffers to slots of the workspace: buffers whose lifetimes do not
/// overlap share a slot, which is as large as its largest buffer.
pub(crate) struct Slots {
    /// The sizes of the buffers each slot has held.
    pub members: Vec<Vec<crate::layout::SizeExpr>>,
    busy: Vec<bool>,
    freed: Rc<RefCell<Vec<usize>>>,
}

impl Slots {
    pub fn new() -> Slots {
        Slots {
            members: Vec::new(),
            busy: Vec::new(),
            freed: Rc::new(RefCell::new(Vec::new())),
        }
    }

    /// A buffer of `size` reals, in a slot that is free now (preferring one that held a
    /// buffer of the same size), or in a new slot.
    pub fn alloc(&mut self, size: crate::layout::SizeExpr) -> Rc<Buf> {
        for s in self.freed.borrow_mut().drain(..) {
            if let Some(b) = self.busy.get_mut(s) {
                *b = false;
            }
        }
        let free = |i: &usize| !self.busy[*i];
        let same = (0..self.busy.len())
            .filter(free)
            .find(|&i| self.members[i].contains(&size));
        let slot = match same.or_else(|| (0..self.busy.len()).find(free)) {
            Some(i) => {
                if !self.members[i].contains(&size) {
                    self.members[i].push(size);
                }
                i
            }
            None => {
                self.members.push(vec![size]);
                self.busy.push(false);
                self.members.len() - 1
            }
        };
        self.busy[slot] = true;
        Rc::new(Buf {
            slot,
            freed: self.freed.clone(),
        })
    }
}

impl Arr {
    /// The length as a function of the sizes, when the run-time length is exactly that.
    pub fn stat(&self) -> Option<Dim> {
        self.shape.exact.then_some(self.shape.len)
    }
}

/// `sa` with the length `Some(d)` (exactly `d`) or `None` (a run-time length at most
/// `sa.len`).
pub(crate) fn sized(sa: &Rc<SArr>, d: Option<Dim>) -> Rc<SArr> {
    match d {
        Some(d) if sa.exact && sa.len == d => sa.clone(),
        Some(d) => Rc::new(SArr {
            len: d,
            exact: true,
            elem: sa.elem.clone(),
        }),
        None if !sa.exact => sa.clone(),
        None => Rc::new(SArr {
            len: sa.len,
            exact: false,
            elem: sa.elem.clone(),
        }),
    }
}

impl Val {
    /// Whether the value contains arrays.
    pub fn has_arrays(&self) -> bool {
        match self {
            Val::Real(_) | Val::Bool(_) => false,
            Val::Tuple(items) => items.iter().any(Val::has_arrays),
            Val::Arr(_) => true,
        }
    }

    /// Whether the value contains arrays that are not yet evaluated.
    pub fn has_lazy(&self) -> bool {
        match self {
            Val::Real(_) | Val::Bool(_) => false,
            Val::Tuple(items) => items.iter().any(Val::has_lazy),
            Val::Arr(a) => matches!(a.kind, Kind::Map { .. } | Kind::Map2 { .. } | Kind::Scan(_)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::SizeExpr;

    #[test]
    fn slots_are_reused_after_the_last_handle_is_dropped() {
        let mut slots = Slots::new();
        let n = SizeExpr::dim(Dim {
            var: Some(0),
            offset: 0,
            floor: 0,
        });
        let a = slots.alloc(n.clone());
        let b = slots.alloc(SizeExpr::K(3));
        assert_ne!(a.slot, b.slot);
        let a2 = a.clone();
        drop(a);
        let c = slots.alloc(SizeExpr::K(3));
        assert_ne!(c.slot, a2.slot, "a slot still held is not reused");
        drop(a2);
        let d = slots.alloc(n);
        assert_eq!(d.slot, 0, "a freed slot is reused");
        assert_eq!(slots.members.len(), 3);
    }
}
