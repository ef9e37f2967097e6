//! Two elements per instruction: the pass that turns pairs of identical scalar computations
//! into one computation on two lanes (`f64x2`, `i64x2`), after the function is built.
//!
//! The lowering marks where two scalars are wanted side by side as a vector: a *pack*,
//! `insertlane(scalar_to_vector(a), b, 1)` of two reals (the two accumulators of a blocked
//! reduction that share a register, the two elements of a map stored with one vector
//! store), and reads a lane back with `extractlane`. Correct as it stands, the pack is
//! then replaced here by the same computation done on vectors: `a` and `b` are results of
//! the same operation (same opcode, same immediates) in the same block, so one vector
//! instruction computes both, lane 0 `a`'s and lane 1 `b`'s, from operands paired the same
//! way, down to pairs that are not alike (packed as they are), loads of adjacent reals (one
//! vector load) and a vector's two lanes (the vector itself). Every lane computes exactly
//! the IEEE operation its scalar did, so results are unchanged bit for bit: an `fma` stays
//! an `fma`, a comparison becomes a lane mask and a `select` a `bitselect` by that mask.
//! Scalar instructions left without uses are then removed.
//!
//! Vector instructions are placed right after the later of the two scalar instructions
//! they replace, so every operand is defined before them; two loads become one only when
//! nothing between them may write memory.

use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F64, F64X2, I64, I64X2, I8, I8X16};
use cranelift_codegen::ir::{
    Block, Endianness, Function, Inst, InstBuilder, InstructionData, MemFlagsData, Opcode, Type,
    Value, ValueDef,
};
use cranelift_codegen::isa::TargetIsa;
use target_lexicon::Architecture;
use unfad_syntax::fast_hash::FastMap as HashMap;

use super::kernels::TABLES_REGION;

/// Whether code for `isa` may compute on two lanes: x86-64 with SSE4.1 (64-bit lane
/// equality) and AArch64.
pub(crate) fn available(isa: &dyn TargetIsa) -> bool {
    match isa.triple().architecture {
        Architecture::X86_64 => isa
            .isa_flags()
            .iter()
            .any(|f| f.name == "has_sse41" && f.as_bool() == Some(true)),
        Architecture::Aarch64(_) => true,
        _ => false,
    }
}

/// What a lane holds.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Lane {
    /// A real (`f64x2`).
    Real,
    /// A 64-bit integer (`i64x2`).
    Int,
    /// A condition, as a mask of all ones or all zeros (`i64x2`); the scalar is an `i8`.
    Mask,
}

impl Lane {
    fn scalar(self) -> Type {
        match self {
            Lane::Real => F64,
            Lane::Int => I64,
            Lane::Mask => I8,
        }
    }
    fn vector(self) -> Type {
        match self {
            Lane::Real => F64X2,
            Lane::Int | Lane::Mask => I64X2,
        }
    }
}

/// A linear combination of values plus a constant: an address, to tell adjacent ones.
#[derive(Clone, PartialEq, Debug, Default)]
struct Linear {
    /// Inline: an address has a few terms, and the pass makes one per value it looks at.
    terms: Terms,
    constant: i64,
}

impl Linear {
    fn atom(v: Value) -> Self {
        Linear {
            terms: smallvec::smallvec![(v, 1)],
            constant: 0,
        }
    }
    fn scaled(mut self, k: i64) -> Self {
        for t in &mut self.terms {
            t.1 = t.1.wrapping_mul(k);
        }
        self.constant = self.constant.wrapping_mul(k);
        self
    }
    fn plus(mut self, other: Linear) -> Self {
        for (v, k) in other.terms {
            match self.terms.iter_mut().find(|t| t.0 == v) {
                Some(t) => t.1 = t.1.wrapping_add(k),
                None => self.terms.push((v, k)),
            }
        }
        self.terms.retain(|t| t.1 != 0);
        self.terms.sort_by_key(|t| t.0);
        self.constant = self.constant.wrapping_add(other.constant);
        self
    }
}

/// The stores at one address a store tries to pair with (see `pair_lanes`).
const TRIES: usize = 4;

/// Where a store writes: its address's linear combination's terms (in canonical order) and
/// its constant plus the store's offset (`Pairing::store_place`).
type StorePlace = (Terms, i64);

/// The terms of a [`Linear`].
type Terms = smallvec::SmallVec<[(Value, i64); 3]>;

/// A store's address as a key: the terms and the position (see [`StorePlace`]).
type AddressKey<'p> = (&'p [(Value, i64)], i64);

/// Replace every pack in `func` by the vector computation of its two lanes (see the
/// module's documentation).
///
/// `roots` maps addresses to the base of the buffer they are in (different buffers never
/// overlap): two stores of adjacent reals become one vector store when what lies between
/// them touches other buffers only.
pub(crate) fn pair_lanes(func: &mut Function, roots: &HashMap<Value, Value>) {
    let mut order = HashMap::default();
    let mut seeds = Vec::new();
    let mut stores: Vec<(Block, Vec<Inst>)> = Vec::new();
    let mut n = 0usize;
    for block in func.layout.blocks() {
        let mut here = Vec::new();
        for inst in func.layout.block_insts(block) {
            order.insert(inst, n);
            n += 1;
            if let Some((a, b)) = pack_of(func, inst) {
                seeds.push((block, inst, a, b));
            }
            if let InstructionData::Store {
                opcode: Opcode::Store,
                args: [x, _],
                ..
            } = func.dfg.insts[inst]
            {
                if func.dfg.value_type(x) == F64 {
                    here.push(inst);
                }
            }
        }
        if here.len() >= 2 {
            stores.push((block, here));
        }
    }
    if seeds.is_empty() && stores.is_empty() {
        return;
    }
    let mut p = Pairing {
        func,
        order,
        roots,
        made: HashMap::default(),
        rows: HashMap::default(),
        linear: HashMap::default(),
        block: None,
    };
    let mut touched = Vec::new();
    // The vectors made for a block's stores, which its packs reuse (a map stored and
    // folded in one loop pairs the same computations for both).
    let mut made_in: HashMap<Block, HashMap<(Value, Value, Lane), Value>> = HashMap::default();
    for (block, list) in stores {
        p.block = Some(block);
        p.made.clear();
        // Each store pairs with the first later one, not yet paired, at the real right
        // before or after its own (`adjacent`), found by address (the linear
        // combination's terms and its constant plus the offset): a block of many stores
        // costs a pass over them, not one per pair. At most `TRIES` stores at each of the
        // two addresses are tried: many stores to one address are a scratch buffer
        // written over and over, where a store past the first few later ones rarely pairs
        // (those between write its buffer), and trying them all was quadratic. A cursor
        // per address skips those before the store asking, and those paired, once.
        let places: Vec<Option<StorePlace>> = list.iter().map(|&s| p.store_place(s)).collect();
        // Per address, the stores there (in order) and the cursor.
        let mut at: HashMap<AddressKey, (Vec<usize>, usize)> = HashMap::default();
        for (i, place) in places.iter().enumerate() {
            if let Some((terms, pos)) = place {
                at.entry((terms.as_slice(), *pos)).or_default().0.push(i);
            }
        }
        let mut done = vec![false; list.len()];
        for i in 0..list.len() {
            let Some((terms, pos)) = &places[i] else {
                continue;
            };
            let mut near: Vec<usize> = Vec::with_capacity(2 * TRIES);
            for step in [8i64, -8] {
                if let Some((js, cursor)) = at.get_mut(&(terms.as_slice(), pos.wrapping_add(step)))
                {
                    while *cursor < js.len() && (js[*cursor] <= i || done[js[*cursor]]) {
                        *cursor += 1;
                    }
                    near.extend(
                        js[*cursor..]
                            .iter()
                            .copied()
                            .filter(|&j| !done[j])
                            .take(TRIES),
                    );
                }
            }
            near.sort_unstable();
            for &j in &near {
                if done[i] {
                    break;
                }
                if !done[j] && p.pair_stores(list[i], list[j]) {
                    done[i] = true;
                    done[j] = true;
                    touched.push(block);
                }
            }
        }
        made_in.insert(block, std::mem::take(&mut p.made));
    }
    p.block = None;
    for (block, inst, a, b) in seeds {
        if p.block != Some(block) {
            p.block = Some(block);
            p.made = made_in.remove(&block).unwrap_or_default();
        }
        let Some(v) = p.pair(a, b, Lane::Real) else {
            continue;
        };
        let w = p.func.dfg.first_result(inst);
        p.func.dfg.detach_inst_results(inst);
        p.func.layout.remove_inst(inst);
        p.func.dfg.change_to_alias(w, v);
        touched.push(block);
    }
    p.func.dfg.resolve_all_aliases();
    touched.sort();
    touched.dedup();
    remove_dead(p.func, &touched);
}

/// `(a, b)` if `inst` is `insertlane(scalar_to_vector(a), b, 1)` of reals.
fn pack_of(func: &Function, inst: Inst) -> Option<(Value, Value)> {
    let InstructionData::TernaryImm8 {
        opcode: Opcode::Insertlane,
        args: [v, b],
        imm,
    } = func.dfg.insts[inst]
    else {
        return None;
    };
    if imm != 1 || func.dfg.value_type(v) != F64X2 {
        return None;
    }
    let ValueDef::Result(def, _) = func.dfg.value_def(v) else {
        return None;
    };
    match func.dfg.insts[def] {
        InstructionData::Unary {
            opcode: Opcode::ScalarToVector,
            arg,
        } => Some((arg, b)),
        _ => None,
    }
}

struct Pairing<'f> {
    func: &'f mut Function,
    /// The position of every instruction of the function as built.
    order: HashMap<Inst, usize>,
    /// The vectors already computed in the current block, by pair.
    made: HashMap<(Value, Value, Lane), Value>,
    /// The 16-byte loads of the kernels' tables made at a pair of addresses and an offset
    /// ([`Pairing::table_gather`]), with the position of the instruction they follow.
    rows: HashMap<(Value, i32), (Value, Value, usize)>,
    linear: HashMap<Value, Linear>,
    roots: &'f HashMap<Value, Value>,
    block: Option<Block>,
}

impl Pairing<'_> {
    /// The instruction defining `v` in the current block, if any.
    fn def_here(&self, v: Value) -> Option<Inst> {
        match self.func.dfg.value_def(v) {
            ValueDef::Result(inst, 0)
                if self.func.layout.inst_block(inst) == self.block
                    && self.func.dfg.inst_results(inst).len() == 1 =>
            {
                Some(inst)
            }
            _ => None,
        }
    }

    /// The vector `(a, b)` computed by vector instructions, or `None` if the two are not
    /// alike (nothing is emitted then).
    fn pair(&mut self, a: Value, b: Value, lane: Lane) -> Option<Value> {
        if let Some(&v) = self.made.get(&(a, b, lane)) {
            return Some(v);
        }
        let (ia, ib) = (self.def_here(a)?, self.def_here(b)?);
        let dfg = &self.func.dfg;
        if dfg.value_type(a) != lane.scalar() || dfg.value_type(b) != lane.scalar() {
            return None;
        }
        let later = if self.order[&ia] < self.order[&ib] {
            ib
        } else {
            ia
        };
        let (da, db) = (dfg.insts[ia], dfg.insts[ib]);
        if a == b {
            // The same value in both lanes.
            let v = match lane {
                Lane::Real | Lane::Int => self.at(later).ins().splat(lane.vector(), a),
                Lane::Mask => return None,
            };
            self.made.insert((a, b, lane), v);
            return Some(v);
        }
        use InstructionData as D;
        let v = match (da, db, lane) {
            (D::UnaryIeee64 { imm: x, .. }, D::UnaryIeee64 { imm: y, .. }, Lane::Real)
                if x.bits() == y.bits() =>
            {
                self.at(later).ins().splat(F64X2, a)
            }
            (
                D::UnaryImm {
                    opcode: Opcode::Iconst,
                    imm: x,
                },
                D::UnaryImm {
                    opcode: Opcode::Iconst,
                    imm: y,
                },
                Lane::Int,
            ) if x == y => self.at(later).ins().splat(I64X2, a),
            (
                D::BinaryImm8 {
                    opcode: Opcode::Extractlane,
                    arg: x,
                    imm: i,
                },
                D::BinaryImm8 {
                    opcode: Opcode::Extractlane,
                    arg: y,
                    imm: j,
                },
                _,
            ) if x == y
                && i == 0
                && j == 1
                && dfg.value_type(x) == lane.vector()
                && lane != Lane::Mask =>
            {
                x
            }
            (
                D::Unary { opcode: op, arg: x },
                D::Unary {
                    opcode: op2,
                    arg: y,
                },
                Lane::Real,
            ) if op == op2 && matches!(op, Opcode::Fneg | Opcode::Fabs | Opcode::Sqrt) => {
                let x = self.operand(x, y, Lane::Real, later);
                let mut c = self.at(later);
                match op {
                    Opcode::Fneg => c.ins().fneg(x),
                    Opcode::Fabs => c.ins().fabs(x),
                    _ => c.ins().sqrt(x),
                }
            }
            (
                D::Binary {
                    opcode: op,
                    args: [x0, y0],
                },
                D::Binary {
                    opcode: op2,
                    args: [x1, y1],
                },
                _,
            ) if op == op2 => self.binary(op, lane, [x0, y0], [x1, y1], later)?,
            (
                D::Ternary {
                    opcode: op,
                    args: [x0, y0, z0],
                },
                D::Ternary {
                    opcode: op2,
                    args: [x1, y1, z1],
                },
                _,
            ) if op == op2 => match (op, lane) {
                (Opcode::Fma, Lane::Real) => {
                    let x = self.operand(x0, x1, Lane::Real, later);
                    let y = self.operand(y0, y1, Lane::Real, later);
                    let z = self.operand(z0, z1, Lane::Real, later);
                    self.at(later).ins().fma(x, y, z)
                }
                (Opcode::Select, Lane::Real | Lane::Int)
                    if self.func.dfg.value_type(x0) == I8 && self.func.dfg.value_type(x1) == I8 =>
                {
                    let m = self.operand(x0, x1, Lane::Mask, later);
                    let y = self.operand(y0, y1, lane, later);
                    let z = self.operand(z0, z1, lane, later);
                    let mut c = self.at(later);
                    let m = if lane == Lane::Real {
                        c.ins().bitcast(F64X2, little(), m)
                    } else {
                        m
                    };
                    c.ins().bitselect(m, y, z)
                }
                _ => return None,
            },
            (
                D::FloatCompare {
                    args: [x0, y0],
                    cond,
                    ..
                },
                D::FloatCompare {
                    args: [x1, y1],
                    cond: cond2,
                    ..
                },
                Lane::Mask,
            ) if cond == cond2 && vector_fcmp(cond) => {
                let x = self.operand(x0, x1, Lane::Real, later);
                let y = self.operand(y0, y1, Lane::Real, later);
                self.at(later).ins().fcmp(cond, x, y)
            }
            (
                D::IntCompare {
                    args: [x0, y0],
                    cond,
                    ..
                },
                D::IntCompare {
                    args: [x1, y1],
                    cond: cond2,
                    ..
                },
                Lane::Mask,
            ) if cond == cond2
                && matches!(cond, IntCC::Equal | IntCC::NotEqual)
                && dfg.value_type(x0) == I64 =>
            {
                let x = self.operand(x0, x1, Lane::Int, later);
                let y = self.operand(y0, y1, Lane::Int, later);
                self.at(later).ins().icmp(cond, x, y)
            }
            (
                D::LoadNoOffset {
                    opcode: Opcode::Bitcast,
                    arg: x,
                    ..
                },
                D::LoadNoOffset {
                    opcode: Opcode::Bitcast,
                    arg: y,
                    ..
                },
                Lane::Real | Lane::Int,
            ) => {
                let from = if lane == Lane::Real {
                    Lane::Int
                } else {
                    Lane::Real
                };
                if dfg.value_type(x) != from.scalar() || dfg.value_type(y) != from.scalar() {
                    return None;
                }
                let x = self.operand(x, y, from, later);
                self.at(later).ins().bitcast(lane.vector(), little(), x)
            }
            (
                D::Load {
                    opcode: Opcode::Load,
                    arg: p0,
                    flags: f0,
                    offset: o0,
                },
                D::Load {
                    opcode: Opcode::Load,
                    arg: p1,
                    flags: f1,
                    offset: o1,
                },
                Lane::Real,
            ) if f0 == f1 => {
                if self.adjacent((p0, o0.into()), (p1, o1.into())) {
                    if self.writes_between(ia, ib, self.roots.get(&p0).copied()) {
                        return None;
                    }
                    let flags = self.vector_flags(f0);
                    self.at(later).ins().load(F64X2, flags, p0, o0)
                } else {
                    // A gather from memory that never changes (the kernels' tables): the
                    // two addresses, computed alike, on two lanes, then one load per lane.
                    let flags = self.func.dfg.mem_flags[f0];
                    if o0 != o1 || !flags.readonly() || !flags.can_move() {
                        return None;
                    }
                    let addrs = self.pair(p0, p1, Lane::Int)?;
                    let tables = self.func.dfg.alias_regions.get(TABLES_REGION);
                    if tables.is_some() && flags.alias_region() == tables {
                        return Some(self.table_gather(addrs, o0.into(), flags, later));
                    }
                    let mut c = self.at(later);
                    let a0 = c.ins().extractlane(addrs, 0);
                    let a1 = c.ins().extractlane(addrs, 1);
                    let x0 = c.ins().load(F64, flags, a0, o0);
                    let x1 = c.ins().load(F64, flags, a1, o0);
                    // A splat of the first is two instructions, where moving a scalar into
                    // a vector's lane 0 is three.
                    let v = c.ins().splat(F64X2, x0);
                    c.ins().insertlane(v, x1, 1)
                }
            }
            _ => return None,
        };
        self.made.insert((a, b, lane), v);
        Some(v)
    }

    /// The reals at `offset` from each lane of `addrs` in the kernels' tables, loaded as
    /// the first lanes of two 16-byte loads, one per address, or, where such loads were
    /// made at `offset - 8` before `later`, as their second lanes (loads made at `offset`
    /// itself are read again): a table's two columns
    /// (`exp`'s `2^(j/128)` in two parts) are then read by two loads and two shuffles, where
    /// reading each real alone takes four loads and four moves between lanes. The tables
    /// lie in a data object padded at its end, so that a 16-byte load at any of their
    /// reals stays inside it (`kernel_tables`).
    fn table_gather(
        &mut self,
        addrs: Value,
        offset: i32,
        flags: MemFlagsData,
        later: Inst,
    ) -> Value {
        let here = self.order[&later];
        let before = |r: Option<&(Value, Value, usize)>| match r {
            Some(&(w0, w1, at)) if at <= here => Some((w0, w1)),
            _ => None,
        };
        let same = before(self.rows.get(&(addrs, offset)));
        let lower = before(self.rows.get(&(addrs, offset.wrapping_sub(8))));
        let (rows, second) = match (same, lower) {
            (Some(rows), _) => (rows, false),
            (None, Some(rows)) => (rows, true),
            (None, None) => {
                let mut c = self.at(later);
                let a0 = c.ins().extractlane(addrs, 0);
                let a1 = c.ins().extractlane(addrs, 1);
                let vflags = MemFlagsData::new()
                    .with_alias_region(flags.alias_region())
                    .with_notrap()
                    .with_readonly()
                    .with_can_move();
                let w0 = c.ins().load(F64X2, vflags, a0, offset);
                let w1 = c.ins().load(F64X2, vflags, a1, offset);
                self.rows.insert((addrs, offset), (w0, w1, here));
                ((w0, w1), false)
            }
        };
        let mut c = self.at(later);
        let x = c.ins().bitcast(I8X16, little(), rows.0);
        let y = c.ins().bitcast(I8X16, little(), rows.1);
        // Bytes 0..8 of each (their first reals) or 8..16 (their second): `punpcklqdq`
        // and `punpckhqdq` on x86-64.
        let mask: [u8; 16] = if second {
            [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31]
        } else {
            [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]
        };
        let mask = c.func.dfg.immediates.push(mask.to_vec().into());
        let v = c.ins().shuffle(x, y, mask);
        c.ins().bitcast(F64X2, little(), v)
    }

    /// The vector `(x0, x1)` of two operands: computed on vectors if they are alike, else
    /// packed from the scalars just after `later` (where both are defined).
    fn operand(&mut self, x0: Value, x1: Value, lane: Lane, later: Inst) -> Value {
        if let Some(v) = self.pair(x0, x1, lane) {
            return v;
        }
        let mut c = self.at(later);
        let (x0, x1) = match lane {
            Lane::Real | Lane::Int => (x0, x1),
            Lane::Mask => {
                // A condition (0 or 1) as a mask (all zeros or all ones).
                let w0 = c.ins().uextend(I64, x0);
                let m0 = c.ins().ineg(w0);
                let w1 = c.ins().uextend(I64, x1);
                let m1 = c.ins().ineg(w1);
                (m0, m1)
            }
        };
        if x0 == x1 {
            // One value in both lanes (defined in another block).
            return c.ins().splat(lane.vector(), x0);
        }
        let v = c.ins().scalar_to_vector(lane.vector(), x0);
        c.ins().insertlane(v, x1, 1)
    }

    /// Lanes of a binary operation `op`.
    fn binary(
        &mut self,
        op: Opcode,
        lane: Lane,
        [x0, y0]: [Value; 2],
        [x1, y1]: [Value; 2],
        later: Inst,
    ) -> Option<Value> {
        use Opcode as O;
        Some(match (op, lane) {
            (
                O::Fadd | O::Fsub | O::Fmul | O::Fdiv | O::Fmin | O::Fmax | O::Band | O::Bor,
                Lane::Real,
            )
            | (O::Iadd | O::Isub | O::Band | O::Bor | O::Bxor, Lane::Int)
            | (O::Band | O::Bor | O::Bxor, Lane::Mask) => {
                let x = self.operand(x0, x1, lane, later);
                let y = self.operand(y0, y1, lane, later);
                let mut c = self.at(later);
                let ins = c.ins();
                match op {
                    O::Fadd => ins.fadd(x, y),
                    O::Fsub => ins.fsub(x, y),
                    O::Fmul => ins.fmul(x, y),
                    O::Fdiv => ins.fdiv(x, y),
                    O::Fmin => ins.fmin(x, y),
                    O::Fmax => ins.fmax(x, y),
                    O::Iadd => ins.iadd(x, y),
                    O::Isub => ins.isub(x, y),
                    O::Band => ins.band(x, y),
                    O::Bor => ins.bor(x, y),
                    _ => ins.bxor(x, y),
                }
            }
            (O::Ishl | O::Sshr | O::Ushr, Lane::Int) => {
                // The shift amount is one scalar for both lanes.
                let (k0, k1) = (self.constant(y0)?, self.constant(y1)?);
                if k0 != k1 {
                    return None;
                }
                let x = self.operand(x0, x1, lane, later);
                let mut c = self.at(later);
                let ins = c.ins();
                match op {
                    O::Ishl => ins.ishl(x, y0),
                    O::Sshr => ins.sshr(x, y0),
                    _ => ins.ushr(x, y0),
                }
            }
            _ => return None,
        })
    }

    /// The integer constant `v`, if it is one.
    fn constant(&self, v: Value) -> Option<i64> {
        let ValueDef::Result(inst, _) = self.func.dfg.value_def(v) else {
            return None;
        };
        match self.func.dfg.insts[inst] {
            InstructionData::UnaryImm {
                opcode: Opcode::Iconst,
                imm,
            } => Some(imm.bits()),
            _ => None,
        }
    }

    /// A cursor inserting just after `inst`, after what this pass inserted there before:
    /// before the next instruction of the function as built (`inst` is never the last).
    fn at(&mut self, inst: Inst) -> FuncCursor<'_> {
        let mut next = self.func.layout.next_inst(inst);
        while let Some(i) = next {
            if self.order.contains_key(&i) {
                break;
            }
            next = self.func.layout.next_inst(i);
        }
        let mut c = FuncCursor::new(self.func);
        match next {
            Some(i) => c.goto_inst(i),
            None => c.goto_after_inst(inst),
        }
        c
    }

    /// Whether an instruction strictly between `x` and `y` (in either order) may write
    /// memory in the buffer `root` (any memory if `None`), or read it too if `reads`.
    /// With `apart_from`, an access provably disjoint from those bytes (address, offset,
    /// length) is no conflict even in `root`: the store being moved past it writes
    /// elsewhere.
    fn touches_between(
        &mut self,
        x: Inst,
        y: Inst,
        root: Option<Value>,
        reads: bool,
        apart_from: Option<(Value, i64, i64)>,
    ) -> bool {
        let (lo, hi) = if self.order[&x] < self.order[&y] {
            (x, y)
        } else {
            (y, x)
        };
        let mut at = self.func.layout.next_inst(lo);
        while let Some(i) = at {
            if i == hi {
                return false;
            }
            let data = self.func.dfg.insts[i];
            let op = data.opcode();
            let safe = match data {
                InstructionData::Store {
                    opcode: Opcode::Store,
                    args: [v, addr],
                    offset,
                    ..
                } => {
                    let len = i64::from(self.func.dfg.value_type(v).bytes());
                    self.elsewhere(root, addr) || self.apart(apart_from, (addr, offset.into(), len))
                }
                // Memory that never changes (the kernels' tables) is no buffer's.
                InstructionData::Load {
                    opcode: Opcode::Load,
                    arg,
                    flags,
                    offset,
                } => {
                    let len = self
                        .func
                        .dfg
                        .inst_results(i)
                        .first()
                        .map_or(16, |&r| i64::from(self.func.dfg.value_type(r).bytes()));
                    !reads
                        || self.elsewhere(root, arg)
                        || self.func.dfg.mem_flags[flags].readonly()
                        || self.apart(apart_from, (arg, offset.into(), len))
                }
                _ => {
                    !(op.can_store()
                        || op.is_call()
                        || op.other_side_effects()
                        || (reads && op.can_load()))
                }
            };
            if !safe {
                return true;
            }
            at = self.func.layout.next_inst(i);
        }
        true
    }

    /// Whether `addr` is known to lie in another buffer than `root`.
    fn elsewhere(&self, root: Option<Value>, addr: Value) -> bool {
        match (root, self.roots.get(&addr)) {
            (Some(r), Some(&s)) => r != s,
            _ => false,
        }
    }

    /// Whether the bytes `q` (address, offset, length) are provably disjoint from `p`'s:
    /// their addresses differ by a known constant at least the length of the first.
    fn apart(&mut self, p: Option<(Value, i64, i64)>, q: (Value, i64, i64)) -> bool {
        let Some(p) = p else {
            return false;
        };
        let lp = self.linear_of(p.0, 8);
        let lq = self.linear_of(q.0, 8);
        let diff = lq.plus(lp.scaled(-1));
        if !diff.terms.is_empty() {
            return false;
        }
        let d = diff.constant.wrapping_add(q.1).wrapping_sub(p.1);
        d >= p.2 || d <= -q.2
    }

    /// Whether an instruction strictly between `x` and `y` may write the buffer `root`.
    fn writes_between(&mut self, x: Inst, y: Inst, root: Option<Value>) -> bool {
        self.touches_between(x, y, root, false, None)
    }

    /// Replace the stores `s0` and `s1` by one vector store if they store adjacent reals
    /// (in either order) and nothing between them touches their buffer.
    fn pair_stores(&mut self, s0: Inst, s1: Inst) -> bool {
        let (
            InstructionData::Store {
                args: [x0, p0],
                flags: f0,
                offset: o0,
                ..
            },
            InstructionData::Store {
                args: [x1, p1],
                flags: f1,
                offset: o1,
                ..
            },
        ) = (self.func.dfg.insts[s0], self.func.dfg.insts[s1])
        else {
            return false;
        };
        if f0 != f1 {
            return false;
        }
        let (low, high, addr, offset) = if self.adjacent((p0, o0.into()), (p1, o1.into())) {
            ((x0, s0), (x1, s1), p0, o0)
        } else if self.adjacent((p1, o1.into()), (p0, o0.into())) {
            ((x1, s1), (x0, s0), p1, o1)
        } else {
            return false;
        };
        let root = self.roots.get(&addr).copied();
        let (earlier, later) = if self.order[&s0] < self.order[&s1] {
            ((p0, o0), s1)
        } else {
            ((p1, o1), s0)
        };
        // The earlier store moves down to the later one: what lies between may touch the
        // buffer, but not the real it writes (an array stored in the place of the result
        // that reads it, read at the next element before this one is written).
        let moved = Some((earlier.0, i64::from(earlier.1), 8));
        if root.is_none() || self.touches_between(s0, s1, root, true, moved) {
            return false;
        }
        // Gone from where it was before the vector's operands are paired, so that two
        // loads around it may pair (the vector store comes after both).
        let first = if later == s1 { s0 } else { s1 };
        self.func.layout.remove_inst(first);
        let v = self.operand(low.0, high.0, Lane::Real, later);
        let flags = self.vector_flags(f0);
        self.at(later).ins().store(flags, v, addr, offset);
        self.func.layout.remove_inst(later);
        true
    }

    /// The flags of a vector access where the scalar one had `f`: not aligned (to 16).
    fn vector_flags(&self, f: cranelift_codegen::ir::MemFlags) -> MemFlagsData {
        let f = self.func.dfg.mem_flags[f];
        let mut flags = MemFlagsData::new().with_alias_region(f.alias_region());
        if f.notrap() {
            flags = flags.with_notrap();
        }
        if f.readonly() {
            flags = flags.with_readonly();
        }
        flags
    }

    /// Where the store `s` writes, as the terms of its address's linear combination (in
    /// their canonical order) and the constant plus the offset: two stores write adjacent
    /// reals (`adjacent`) exactly when their terms are equal and their positions 8 apart.
    fn store_place(&mut self, s: Inst) -> Option<StorePlace> {
        let InstructionData::Store {
            args: [_, addr],
            offset,
            ..
        } = self.func.dfg.insts[s]
        else {
            return None;
        };
        let l = self.linear_of(addr, 8);
        let mut terms = Terms::with_capacity(l.terms.len());
        for (v, k) in l.terms {
            match terms.iter_mut().find(|t| t.0 == v) {
                Some(t) => t.1 = t.1.wrapping_add(k),
                None => terms.push((v, k)),
            }
        }
        terms.retain(|t| t.1 != 0);
        terms.sort_by_key(|t| t.0);
        Some((terms, l.constant.wrapping_add(i64::from(offset))))
    }

    /// Whether the real at `q` (address, offset) is the one right after the real at `p`.
    fn adjacent(&mut self, p: (Value, i64), q: (Value, i64)) -> bool {
        let lp = self.linear_of(p.0, 8);
        let lq = self.linear_of(q.0, 8);
        let diff = lq.plus(lp.scaled(-1));
        diff.terms.is_empty() && diff.constant.wrapping_add(q.1).wrapping_sub(p.1) == 8
    }

    /// `v` as a linear combination of the values it is computed from by additions,
    /// subtractions, and multiplications and shifts by constants.
    fn linear_of(&mut self, v: Value, depth: u32) -> Linear {
        if let Some(l) = self.linear.get(&v) {
            return l.clone();
        }
        let l = self.linear_new(v, depth);
        self.linear.insert(v, l.clone());
        l
    }

    fn linear_new(&mut self, v: Value, depth: u32) -> Linear {
        let ValueDef::Result(inst, _) = self.func.dfg.value_def(v) else {
            return Linear::atom(v);
        };
        if depth == 0 {
            return Linear::atom(v);
        }
        match self.func.dfg.insts[inst] {
            InstructionData::UnaryImm {
                opcode: Opcode::Iconst,
                imm,
            } => Linear {
                terms: Terms::new(),
                constant: imm.bits(),
            },
            InstructionData::Binary {
                opcode,
                args: [x, y],
            } => match opcode {
                Opcode::Iadd => self
                    .linear_of(x, depth - 1)
                    .plus(self.linear_of(y, depth - 1)),
                Opcode::Isub => {
                    let y = self.linear_of(y, depth - 1).scaled(-1);
                    self.linear_of(x, depth - 1).plus(y)
                }
                Opcode::Imul => match (self.constant(x), self.constant(y)) {
                    (_, Some(k)) => self.linear_of(x, depth - 1).scaled(k),
                    (Some(k), _) => self.linear_of(y, depth - 1).scaled(k),
                    _ => Linear::atom(v),
                },
                Opcode::Ishl => match self.constant(y) {
                    Some(k) if (0..63).contains(&k) => self.linear_of(x, depth - 1).scaled(1 << k),
                    _ => Linear::atom(v),
                },
                _ => Linear::atom(v),
            },
            _ => Linear::atom(v),
        }
    }
}

/// Little-endian lane order, which bitcasts between vector types must state.
fn little() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

/// Whether a comparison of `f64x2` lanes with condition `cc` has a lowering everywhere.
fn vector_fcmp(cc: FloatCC) -> bool {
    use FloatCC as C;
    matches!(
        cc,
        C::Equal
            | C::NotEqual
            | C::LessThan
            | C::LessThanOrEqual
            | C::GreaterThan
            | C::GreaterThanOrEqual
            | C::Unordered
            | C::Ordered
    )
}

/// Remove, in `blocks`, the instructions without effects whose results are unused (the
/// scalar computations the vectors replaced), loads included.
fn remove_dead(func: &mut Function, blocks: &[Block]) {
    let mut uses: HashMap<Value, usize> = HashMap::default();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            for v in func.dfg.inst_values(inst) {
                *uses.entry(v).or_default() += 1;
            }
        }
    }
    let mut changed = true;
    while changed {
        changed = false;
        for &block in blocks {
            let insts: Vec<Inst> = func.layout.block_insts(block).collect();
            for inst in insts.into_iter().rev() {
                let op = func.dfg.insts[inst].opcode();
                let removable = op == Opcode::Load
                    || !(op.is_terminator()
                        || op.is_branch()
                        || op.is_call()
                        || op.can_store()
                        || op.can_load()
                        || op.can_trap()
                        || op.other_side_effects());
                let results = func.dfg.inst_results(inst);
                if !removable
                    || results.is_empty()
                    || results
                        .iter()
                        .any(|r| uses.get(r).copied().unwrap_or(0) > 0)
                {
                    continue;
                }
                for v in func.dfg.inst_values(inst).collect::<Vec<_>>() {
                    if let Some(n) = uses.get_mut(&v) {
                        *n -= 1;
                    }
                }
                func.layout.remove_inst(inst);
                changed = true;
            }
        }
    }
}

impl super::Translator<'_> {
    /// The buffer each address is in (see [`pair_lanes`]).
    pub(crate) fn roots(&self) -> HashMap<Value, Value> {
        self.roots.clone()
    }

    /// The reals `a` and `b` as the two lanes of a vector: a pack, which [`pair_lanes`]
    /// replaces by the vector computation of both when they are alike.
    pub(super) fn pack(&mut self, a: Value, b: Value) -> Value {
        let v = self.b.ins().scalar_to_vector(F64X2, a);
        self.b.ins().insertlane(v, b, 1)
    }
}
