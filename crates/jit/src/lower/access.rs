//! Memory accesses and local value numbering: element addresses, loads and stores of
//! reals, and the pure computations of the current block that are emitted once
//! ([`PureOp`]). Every element address the body computes goes through
//! [`Translator::addr`], and every store of a real to a buffer through
//! [`Translator::store`]; loads go through [`Translator::load`], except the copy loops of
//! `write_flat` (in `write`, not numbered: each address is loaded once) and a real
//! parameter's load (in `boundary`).

use cranelift_codegen::ir::types::F64;
use cranelift_codegen::ir::{Block, InstBuilder, Value};
use unfad_syntax::{BinOp, UnOp};

use unfad_syntax::fast_hash::FastMap as HashMap;

use crate::value::{Arr, IntVal, Kind, Layout, Place, RealVal, Val};

use super::Translator;

/// A pure computation already emitted in the current block, for local value numbering.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) enum PureOp {
    /// `base + 8 * i * stride`.
    Addr(Value, IntVal, IntVal),
    /// A unary operator applied to a real.
    Unary(UnOp, Value),
    /// A binary operator applied to two reals.
    Binary(BinOp, RealKey, RealKey),
}

/// A real operand as a key of [`PureOp`]: a constant by its bits, or an SSA value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) enum RealKey {
    /// A constant, by its bits.
    Bits(u64),
    Ssa(Value),
}

impl<'a> Translator<'a> {
    /// Continue in `blk`: values of other blocks may not dominate it.
    pub(super) fn switch_to(&mut self, blk: Block) {
        self.forget_block();
        self.b.switch_to_block(blk);
    }

    /// Forget what was numbered and loaded in the current block (another one follows).
    pub(super) fn forget_block(&mut self) {
        self.numbered.clear();
        self.loads.clear();
    }

    /// Store `x` at `addr`, forgetting the loads it may change: those from its buffer and
    /// those from unknown buffers, or every load if its own buffer is unknown. Loads are
    /// kept by the buffer they read, so that a store costs the loads it forgets, not a
    /// pass over the block's numbered values (long straight-line code has many).
    pub(super) fn store(&mut self, x: Value, addr: Value) {
        // A batched loop's collecting pass writes nothing (see `batch`).
        if !self.collecting_store(addr) {
            self.b.ins().store(self.flags, x, addr, 0);
        }
        match self.roots.get(&addr).copied() {
            Some(r) => {
                self.loads.forget(Some(r));
                self.loads.forget(None);
            }
            None => self.loads.clear(),
        }
    }

    /// A real loaded from `addr` (once per block while nothing may have changed it).
    pub(super) fn load(&mut self, addr: Value) -> Value {
        if let Some(v) = self.loads.get(addr) {
            return v;
        }
        let v = self.b.ins().load(F64, self.flags, addr, 0);
        self.collecting_load(addr, v);
        let root = self.roots.get(&addr).copied();
        self.loads.insert(addr, v, root);
        v
    }

    /// Record that `v` is the base pointer of a buffer.
    pub(super) fn root(&mut self, v: Value) -> Value {
        self.roots.insert(v, v);
        v
    }

    /// Make the buffers of `places` (the two buffers an accumulator alternates between)
    /// one buffer to the alias analysis: every leaf's base gets the root of the first. A
    /// pointer to the current state (a loop's block parameter, a `select` of the two) is
    /// then given that root too ([`Translator::share_root`]), and accesses to other
    /// buffers are known apart from it, which lets the lanes pass pair the stores of a map
    /// that reads the state. Returns the shared root, if there is a leaf.
    pub(super) fn group_roots(&mut self, places: &[&Place]) -> Option<Value> {
        let mut bases = Vec::new();
        for p in places {
            place_bases(p, &mut bases);
        }
        let group = bases.first().copied();
        self.give_root(bases, group);
        group
    }

    /// Give the root `group` (see [`Translator::group_roots`]) to the bases of `v`, a value
    /// that lies in the group's buffers whichever of them holds it.
    pub(super) fn share_root(&mut self, v: &Val, group: Option<Value>) {
        let mut bases = Vec::new();
        val_bases(v, &mut bases);
        self.give_root(bases, group);
    }

    /// [`Translator::share_root`] for a place in the group's buffers.
    pub(super) fn share_place_root(&mut self, p: &Place, group: Option<Value>) {
        let mut bases = Vec::new();
        place_bases(p, &mut bases);
        self.give_root(bases, group);
    }

    fn give_root(&mut self, bases: Vec<Value>, group: Option<Value>) {
        if let Some(rep) = group {
            self.roots.extend(bases.into_iter().map(|b| (b, rep)));
            // Loads are kept by the root their address had (see `Loads`).
            self.loads.clear();
        }
    }

    /// `base + 8 * i * stride`.
    pub(super) fn addr(&mut self, base: Value, i: IntVal, stride: IntVal) -> Value {
        let key = PureOp::Addr(base, i, stride);
        if let Some(&v) = self.numbered.get(&key) {
            return v;
        }
        let v = self.addr_new(base, i, stride);
        if let Some(&r) = self.roots.get(&base) {
            self.roots.insert(v, r);
        }
        self.numbered.insert(key, v);
        v
    }

    fn addr_new(&mut self, base: Value, i: IntVal, stride: IntVal) -> Value {
        match (i, stride) {
            (IntVal::Const(0), _) | (_, IntVal::Const(0)) => base,
            (IntVal::Const(a), IntVal::Const(s)) => self
                .b
                .ins()
                .iadd_imm_s(base, a.wrapping_mul(s).wrapping_mul(8)),
            (IntVal::Ssa(x), IntVal::Const(s)) | (IntVal::Const(s), IntVal::Ssa(x)) => {
                let t = if s == 1 {
                    self.b.ins().ishl_imm_s(x, 3)
                } else {
                    self.b.ins().imul_imm_s(x, s.wrapping_mul(8))
                };
                self.b.ins().iadd(base, t)
            }
            (IntVal::Ssa(x), IntVal::Ssa(s)) => {
                let t = self.b.ins().imul(x, s);
                let t = self.b.ins().ishl_imm_s(t, 3);
                self.b.ins().iadd(base, t)
            }
        }
    }
}

pub(super) fn real_key(x: RealVal) -> RealKey {
    match x {
        RealVal::Const(c) => RealKey::Bits(c.to_bits()),
        RealVal::Ssa(v) => RealKey::Ssa(v),
    }
}

/// The base pointers of the leaves of the arrays in `p`.
pub(super) fn place_bases(p: &Place, out: &mut Vec<Value>) {
    match p {
        Place::Reg | Place::Real(_) => {}
        Place::Tuple(ps) => ps.iter().for_each(|p| place_bases(p, out)),
        Place::Arr(a) | Place::AddTo(a) => arr_bases(a, out),
    }
}

/// The base pointers of the leaves of the arrays in `v` (in memory).
pub(super) fn val_bases(v: &Val, out: &mut Vec<Value>) {
    match v {
        Val::Real(_) | Val::Bool(_) => {}
        Val::Tuple(vs) => vs.iter().for_each(|v| val_bases(v, out)),
        Val::Arr(a) => arr_bases(a, out),
    }
}

pub(super) fn arr_bases(a: &Arr, out: &mut Vec<Value>) {
    if let Kind::Mem { layout, .. } = &a.kind {
        layout_bases(layout, out);
    }
}

fn layout_bases(l: &Layout, out: &mut Vec<Value>) {
    match l {
        Layout::Real { base, .. } => out.push(*base),
        Layout::Tuple(ls) => ls.iter().for_each(|l| layout_bases(l, out)),
        Layout::Array { elem, .. } => layout_bases(elem, out),
    }
}

/// The reals loaded in the current block, by address, each listed under the buffer (root)
/// its address had when it was loaded (`None`: unknown). A store forgets the loads of its
/// buffer and of unknown ones. An address's root may change (buffers made one to the
/// alias analysis, `give_root`): every load is forgotten then.
#[derive(Default)]
pub(super) struct Loads {
    value: HashMap<Value, Value>,
    by_root: HashMap<Option<Value>, Vec<Value>>,
}

impl Loads {
    fn get(&self, addr: Value) -> Option<Value> {
        self.value.get(&addr).copied()
    }

    fn insert(&mut self, addr: Value, v: Value, root: Option<Value>) {
        self.value.insert(addr, v);
        self.by_root.entry(root).or_default().push(addr);
    }

    fn forget(&mut self, root: Option<Value>) {
        if let Some(addrs) = self.by_root.remove(&root) {
            for a in addrs {
                self.value.remove(&a);
            }
        }
    }

    pub(super) fn clear(&mut self) {
        self.value.clear();
        self.by_root.clear();
    }
}
