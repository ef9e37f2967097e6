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

use crate::value::{IntVal, RealVal};

use super::Translator;

/// A pure computation already emitted in the current block, for local value numbering.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) enum PureOp {
    /// `base + 8 * i * stride`.
    Addr(Value, IntVal, IntVal),
    /// A load of a real from an address.
    Load(Value),
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
        self.numbered.clear();
        self.b.switch_to_block(blk);
    }

    /// Store `x` at `addr`, forgetting the loads it may change.
    pub(super) fn store(&mut self, x: Value, addr: Value) {
        self.b.ins().store(self.flags, x, addr, 0);
        let root = self.roots.get(&addr).copied();
        let roots = &self.roots;
        self.numbered.retain(|k, _| match (k, root) {
            (PureOp::Load(a), Some(r)) => roots.get(a).is_some_and(|ra| *ra != r),
            (PureOp::Load(_), None) => false,
            _ => true,
        });
    }

    /// A real loaded from `addr` (once per block while nothing may have changed it).
    pub(super) fn load(&mut self, addr: Value) -> Value {
        if let Some(&v) = self.numbered.get(&PureOp::Load(addr)) {
            return v;
        }
        let v = self.b.ins().load(F64, self.flags, addr, 0);
        self.numbered.insert(PureOp::Load(addr), v);
        v
    }

    /// Record that `v` is the base pointer of a buffer.
    pub(super) fn root(&mut self, v: Value) -> Value {
        self.roots.insert(v, v);
        v
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
