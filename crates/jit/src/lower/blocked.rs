//! Blocked loops: a `reduce` of `+`, `*`, `max` or `min` with several independent
//! accumulators, in the order `unfad_syntax::reduction` defines (which the interpreter
//! follows), so that consecutive elements do not wait for one another's addition.
//!
//! A loop with such folds runs `q = n / K` iterations of `K` elements (`K` =
//! [`ACCUMULATORS`]), the per-element code emitted `K` times in the body, element `K·b + j`
//! folded into accumulator `j` (or `K / c` times as many iterations of `c` elements, see
//! [`Translator::blocked_loop`], or one element per iteration, see
//! `rotating_loop`); the accumulators are then combined by the tree (`combine_tree`),
//! and a second loop runs the `n mod K` remaining elements one by one. What the loop
//! carries besides (other folds' accumulators, the phase of an accumulator alternating
//! between buffers) goes from element to element as in a plain loop. Accumulator 0 starts
//! at the fold's initial value, the others at the operator's unit; with `q = 0` the
//! combination is skipped (a `select`), and the result is the left fold of the remaining
//! elements from the initial value, as the definition says.
//!
//! Emitting the per-element code several times means replaying it: each copy starts from
//! the variables' bindings (and their counts of remaining uses) as they were before the
//! first, and from the unevaluated maps it reads marked unread ([`Replay`]). A scan
//! computed where it is read is read once per element in order all the same: copy `j`
//! steps it to element `K·b + j`, and the loop of the remaining elements goes on from
//! there.
//!
//! Pairs of accumulators are independent values of the same operator, ready to become
//! the lanes of one vector register.
//!
//! The same replay runs loops without such folds two elements per iteration
//! ([`Translator::paired_loop`]), when the elements are light scalars: the two copies'
//! stores, loads and computations are then side by side for [`lanes`] to pair.

use std::rc::Rc;

use cranelift_codegen::ir::types::{F64, I64};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value};
use unfad_syntax::fast_hash::FastMap as HashMap;
use unfad_syntax::reduction::{combine_tree, unit, ACCUMULATORS};
use unfad_syntax::{BinOp, ExprId, Node, UnOp, Var};

use crate::error::{internal, JitResult};
use crate::value::{Arr, IntVal, Kind, Layout, Pad, Val};

use super::lanes;
use super::variables::Entry;
use super::Translator;

/// A fold run with [`ACCUMULATORS`] accumulators: where its (real) accumulator is in the
/// loop's state, and the unit the other accumulators start from.
pub(super) struct Lane {
    pub at: usize,
    pub unit: f64,
}

/// One element's code: given the element's index and the state, the next state.
pub(super) type Step<'b, 'a> =
    dyn FnMut(&mut Translator<'a>, Value, &[Value]) -> JitResult<Vec<Value>> + 'b;

/// The combination of two accumulators of lane `k` (the fold's function applied to them).
pub(super) type Combine<'b, 'a> =
    dyn FnMut(&mut Translator<'a>, usize, Value, Value) -> JitResult<Value> + 'b;

/// What emitting the per-element code again starts from: the bindings before the first
/// copy, and the unevaluated maps that were unread then.
pub(super) struct Replay {
    env: HashMap<Var, Entry>,
    unread: Vec<Rc<Arr>>,
}

impl<'a> Translator<'a> {
    /// The operator and its unit if the fold `(pa, px. body)` is `pa op px` or `px op pa`
    /// with `op` one of `+`, `*`, `max` and `min`: such a fold runs blocked.
    pub(super) fn lane_of(&self, pa: Var, px: Var, body: ExprId) -> Option<(BinOp, f64)> {
        let arena = self.arena;
        match arena[body] {
            Node::Op2(op, a, b) => {
                let pair = (Node::Var(pa), Node::Var(px));
                let (a, b) = (arena[a], arena[b]);
                if pa != px && ((a, b) == pair || (b, a) == pair) {
                    unit(op).map(|u| (op, u))
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// A loop over `count` elements carrying `init`, with the folds `lanes` blocked (see
    /// the module's documentation). `step` emits one element's code, `combine` the
    /// combination of two accumulators; `reads` are the arrays the elements are read from.
    /// Without such folds, a plain loop, which runs two elements per iteration (see
    /// [`Translator::paired_loop`]) if `bodies` is given: the functions the elements run
    /// through besides the reads' own. Returns the state after the last element.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn blocked_loop(
        &mut self,
        count: IntVal,
        init: Vec<Value>,
        lanes: &[Lane],
        reads: &[&Rc<Arr>],
        bodies: Option<&[ExprId]>,
        step: &mut Step<'_, 'a>,
        combine: &mut Combine<'_, 'a>,
    ) -> JitResult<Vec<Value>> {
        if lanes.is_empty() {
            return match bodies {
                Some(bodies) => self.paired_loop(count, init, reads, bodies, step),
                None => self.loop_(count, false, init, step),
            };
        }
        if reads
            .iter()
            .any(|a| heavy(self.arena, a, &mut { HEAVY_BODY }, &[]))
        {
            return self.rotating_loop(count, init, lanes, reads, step, combine);
        }
        const K: usize = ACCUMULATORS;
        let blocks = self.blocks_of(count);
        let replay = self.replay_point(reads);
        let width = init.len();
        // On two lanes, the accumulators of a fold are carried as `K / 2` vectors, lanes
        // (0, 1), (2, 3), ...; the scalar slot at `lane.at` then keeps the initial value.
        // An iteration runs `copies` elements (all `K`, or fewer for an element whose code
        // is not tiny or a loop with several folds, see `unrolled_copies`), folded into the
        // first `copies / 2` vectors, which then go last: after `K / copies` iterations
        // every vector is back in its place, each accumulator having folded the elements
        // the order gives it.
        let paired = lanes::available(self.module.isa());
        const H: usize = ACCUMULATORS / 2;
        let copies = if paired {
            self.unrolled_copies(lanes, reads)
        } else {
            K
        };
        let used = copies / 2;
        let iterations = match blocks {
            _ if copies == K => blocks,
            IntVal::Const(q) => IntVal::Const(q * (K / copies) as i64),
            IntVal::Ssa(q) => IntVal::Ssa(
                self.b
                    .ins()
                    .ishl_imm_s(q, (K / copies).trailing_zeros() as i64),
            ),
        };
        let mut state = init.clone();
        if paired {
            for lane in lanes {
                let unit = self.b.ins().f64const(lane.unit);
                let first = self.pack(init[lane.at], unit);
                state.push(first);
                for _ in 1..H {
                    let next = self.pack(unit, unit);
                    state.push(next);
                }
            }
        } else {
            for _ in 1..K {
                for lane in lanes {
                    state.push(self.b.ins().f64const(lane.unit));
                }
            }
        }
        let step_shift = copies.trailing_zeros() as i64;
        let batched = self.batches(count, reads, &[]);
        let mut block = |t: &mut Self, b: Value, cur: &[Value]| {
            let base = t.b.ins().ishl_imm_s(b, step_shift);
            let mut running = cur[..width].to_vec();
            let mut others = cur[width..].to_vec();
            let mut accs = vec![Vec::with_capacity(copies); lanes.len()];
            for j in 0..copies {
                if j > 0 {
                    t.rewind(&replay);
                }
                let mut view = running.clone();
                for (l, lane) in lanes.iter().enumerate() {
                    if paired {
                        let v = cur[width + H * l + j / 2];
                        view[lane.at] = t.b.ins().extractlane(v, (j % 2) as u8);
                    } else if j > 0 {
                        view[lane.at] = others[(j - 1) * lanes.len() + l];
                    }
                }
                let i = if j == 0 {
                    base
                } else {
                    t.b.ins().iadd_imm_s(base, j as i64)
                };
                t.count_at(i);
                let mut next = t.copy_step(j, i, &view, step)?;
                for (l, lane) in lanes.iter().enumerate() {
                    if paired {
                        accs[l].push(next[lane.at]);
                        next[lane.at] = cur[lane.at];
                    } else if j > 0 {
                        others[(j - 1) * lanes.len() + l] = next[lane.at];
                        next[lane.at] = running[lane.at];
                    }
                }
                running = next;
            }
            if paired {
                others.clear();
                for (l, acc) in accs.iter().enumerate() {
                    let vectors = &cur[width + H * l..width + H * (l + 1)];
                    others.extend_from_slice(&vectors[used..]);
                    for h in 0..used {
                        others.push(t.pack(acc[2 * h], acc[2 * h + 1]));
                    }
                }
            }
            running.extend(others);
            Ok(running)
        };
        let out = self.by_count(batched, count, &replay, &mut |t, batched| {
            if batched {
                t.chunked(iterations, copies, state.clone(), &replay, &mut block)
            } else {
                t.loop_(iterations, false, state.clone(), &mut block)
            }
        })?;
        let mut state = out[..width].to_vec();
        if blocks != IntVal::Const(0) {
            for (l, lane) in lanes.iter().enumerate() {
                let accs: Vec<Value> = if paired {
                    let vectors = out[width + H * l..width + H * (l + 1)].to_vec();
                    self.combined_lanes(l, vectors, combine)?
                } else {
                    std::iter::once(out[lane.at])
                        .chain((1..K).map(|j| out[width + (j - 1) * lanes.len() + l]))
                        .collect()
                };
                state[lane.at] = self.combined(l, lane, accs, out[lane.at], blocks, combine)?;
            }
        }
        let (done, rest) = self.after_blocks(count, blocks)?;
        self.rewind(&replay);
        self.loop_(rest, false, state, &mut |t, i, cur| {
            t.remainder_step(done, i, cur, step)
        })
    }

    /// How many elements an iteration of a blocked loop on two lanes runs (a divisor of
    /// [`ACCUMULATORS`], even). All of them when the element's code is a few arithmetic
    /// operations on a few arrays (a dot product's): the `K / 2` vectors of partial sums
    /// then hide the addition's latency, as hand-written code that streams memory does.
    /// The vectors of partial sums of each fold and the vectors loaded from each array
    /// must then fit in the registers (16): at most [`WIDE_STREAMS`] of folds and arrays
    /// (beyond, one of them went to the stack, and a dot product's tangent ran 1.6 times
    /// slower). Four otherwise, so that a transcendental's code is not replayed beyond
    /// what the registers hold; four copies rotate the vectors of partial sums through the
    /// state, a few register moves per iteration.
    fn unrolled_copies(&self, lanes: &[Lane], reads: &[&Rc<Arr>]) -> usize {
        let mut budget = TINY_BODY * lanes.len();
        let mut arrays = Vec::new();
        let tiny = reads
            .iter()
            .all(|a| tiny(self.arena, a, &mut budget, &mut arrays));
        if tiny && lanes.len() + arrays.len() <= WIDE_STREAMS {
            ACCUMULATORS
        } else {
            ACCUMULATORS.min(4)
        }
    }

    /// [`Translator::blocked_loop`] for an element whose code is long (a loop of its own,
    /// or many operations): one copy of it per iteration instead of [`ACCUMULATORS`], the
    /// accumulators of each fold kept in a stack slot of `K` reals, element `i` folded
    /// into the one at `i mod K` (a load before the element's code, a store after). The
    /// same results as the unrolled loop, in a `K`th of the code, and no register held
    /// through the element's code for the accumulators (which then spilled around its
    /// inner loops); what the unrolled loop gains (independent additions, lanes) is nothing
    /// beside such an element.
    fn rotating_loop(
        &mut self,
        count: IntVal,
        init: Vec<Value>,
        lanes: &[Lane],
        reads: &[&Rc<Arr>],
        step: &mut Step<'_, 'a>,
        combine: &mut Combine<'_, 'a>,
    ) -> JitResult<Vec<Value>> {
        const K: usize = ACCUMULATORS;
        let blocks = self.blocks_of(count);
        // The element's code is emitted twice: in the blocks' loop and the remainder's.
        let replay = self.replay_point(reads);
        let (done, rest) = self.after_blocks(count, blocks)?;
        let flags = MemFlagsData::trusted();
        let mut slots = Vec::with_capacity(lanes.len());
        for lane in lanes {
            let bytes = (8 * K) as u32;
            let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                bytes,
                3,
            ));
            let unit = self.b.ins().f64const(lane.unit);
            for j in 0..K {
                let v = if j == 0 { init[lane.at] } else { unit };
                self.b.ins().stack_store(I64, v, slot, (8 * j) as i32);
            }
            slots.push(slot);
        }
        let accumulator = |t: &mut Self, slot, i: Value| {
            let j = t.b.ins().band_imm_s(i, K as i64 - 1);
            let offset = t.b.ins().ishl_imm_s(j, 3);
            let base = t.b.ins().stack_addr(I64, slot, 0);
            t.b.ins().iadd(base, offset)
        };
        let out = self.loop_(done, false, init, &mut |t, i, cur| {
            t.count_at(i);
            let mut view = cur.to_vec();
            for (lane, &slot) in lanes.iter().zip(&slots) {
                let at = accumulator(t, slot, i);
                view[lane.at] = t.b.ins().load(F64, flags, at, 0);
            }
            let mut next = step(t, i, &view)?;
            // The address again rather than held through the element's code (which may
            // run loops): a mask, a shift and an addition.
            for (lane, &slot) in lanes.iter().zip(&slots) {
                let at = accumulator(t, slot, i);
                t.b.ins().store(flags, next[lane.at], at, 0);
                next[lane.at] = cur[lane.at];
            }
            Ok(next)
        })?;
        let mut state = out;
        if blocks != IntVal::Const(0) {
            for (l, (lane, &slot)) in lanes.iter().zip(&slots).enumerate() {
                let accs: Vec<Value> = (0..K)
                    .map(|j| self.b.ins().stack_load(I64, F64, slot, (8 * j) as i32))
                    .collect();
                let first = state[lane.at];
                state[lane.at] = self.combined(l, lane, accs, first, blocks, combine)?;
            }
        }
        self.rewind(&replay);
        self.loop_(rest, false, state, &mut |t, i, cur| {
            t.remainder_step(done, i, cur, step)
        })
    }

    /// A loop over `count` elements carrying `init` from element to element, two elements
    /// per iteration when they are light (see [`Translator::pairs_well`]): `step` emitted
    /// for element `2b`, then replayed for element `2b + 1` (from the same bindings, see
    /// [`Replay`]), and the last element alone when `count` is odd. The elements are
    /// computed by the same operations in the same order as in a plain loop, so the results
    /// are the same bit for bit; the two copies sit in one block, where [`lanes`] turns
    /// their adjacent stores (and loads) into vector ones and their alike computations into
    /// one computation on two lanes. `reads` are the arrays the elements are read from,
    /// `bodies` the functions run on them besides theirs (a map's, a fold's).
    pub(super) fn paired_loop(
        &mut self,
        count: IntVal,
        init: Vec<Value>,
        reads: &[&Rc<Arr>],
        bodies: &[ExprId],
        step: &mut Step<'_, 'a>,
    ) -> JitResult<Vec<Value>> {
        self.paired_loop_reading(count, init, reads, bodies, &[], step)
    }

    /// [`Translator::paired_loop`] where the pads `in_place` are read in place at the
    /// loop's index (see `peeled_loop`), which costs no branch.
    pub(super) fn paired_loop_reading(
        &mut self,
        count: IntVal,
        init: Vec<Value>,
        reads: &[&Rc<Arr>],
        bodies: &[ExprId],
        in_place: &[*const Pad],
        step: &mut Step<'_, 'a>,
    ) -> JitResult<Vec<Value>> {
        if !self.pairs_well(reads, bodies, in_place) || count == IntVal::Const(1) {
            return self.loop_(count, false, init, step);
        }
        let (pairs, done, rest) = match count {
            IntVal::Const(n) => (
                IntVal::Const(n >> 1),
                IntVal::Const(n & !1),
                IntVal::Const(n & 1),
            ),
            IntVal::Ssa(n) => {
                let pairs = self.b.ins().ushr_imm_s(n, 1);
                let done = self.b.ins().band_imm_s(n, !1);
                let rest = self.b.ins().band_imm_s(n, 1);
                (IntVal::Ssa(pairs), IntVal::Ssa(done), IntVal::Ssa(rest))
            }
        };
        let replay = self.replay_point(reads);
        let batched = self.batches(count, reads, bodies);
        let mut pair = |t: &mut Self, b: Value, cur: &[Value]| {
            let first = t.b.ins().ishl_imm_s(b, 1);
            t.count_at(first);
            let mid = t.copy_step(0, first, cur, step)?;
            t.rewind(&replay);
            let second = t.b.ins().iadd_imm_s(first, 1);
            t.count_at(second);
            t.copy_step(1, second, &mid, step)
        };
        let out = self.by_count(batched, count, &replay, &mut |t, batched| {
            if batched {
                t.chunked(pairs, 2, init.clone(), &replay, &mut pair)
            } else {
                t.loop_(pairs, false, init.clone(), &mut pair)
            }
        })?;
        self.rewind(&replay);
        self.at_most_once(rest, out, &mut |t, i, cur| {
            t.remainder_step(done, i, cur, step)
        })
    }

    /// Whether elements read from `reads` and run through `bodies` are worth computing two
    /// per iteration ([`Translator::paired_loop`]): the target computes on two lanes, the
    /// elements are scalars or tuples of them (no array to write or read per element), and
    /// their code is light (no loop inside, at most [`HEAVY_BODY`] operations in all).
    pub(super) fn pairs_well(
        &self,
        reads: &[&Rc<Arr>],
        bodies: &[ExprId],
        in_place: &[*const Pad],
    ) -> bool {
        let mut budget = HEAVY_BODY;
        lanes::available(self.module.isa())
            && reads.iter().all(|a| !a.shape.elem.has_arrays())
            && !reads
                .iter()
                .any(|a| heavy(self.arena, a, &mut budget, in_place))
            && !bodies
                .iter()
                .any(|&e| heavy_expr(self.arena, e, &mut budget))
    }

    /// The number of whole blocks of [`ACCUMULATORS`] elements among `count`.
    fn blocks_of(&mut self, count: IntVal) -> IntVal {
        let shift = ACCUMULATORS.trailing_zeros() as i64;
        match count {
            IntVal::Const(n) => IntVal::Const(n >> shift),
            IntVal::Ssa(v) => IntVal::Ssa(self.b.ins().ushr_imm_s(v, shift)),
        }
    }

    /// The elements the `blocks` whole blocks of `count` cover, and the elements left.
    fn after_blocks(&mut self, count: IntVal, blocks: IntVal) -> JitResult<(IntVal, IntVal)> {
        const K: i64 = ACCUMULATORS as i64;
        Ok(match (count, blocks) {
            (IntVal::Const(n), IntVal::Const(q)) => {
                (IntVal::Const(q * K), IntVal::Const(n - q * K))
            }
            (IntVal::Ssa(n), IntVal::Ssa(q)) => (
                IntVal::Ssa(self.b.ins().ishl_imm_s(q, K.trailing_zeros() as i64)),
                IntVal::Ssa(self.b.ins().band_imm_s(n, K - 1)),
            ),
            _ => return internal("a count and its blocks of different kinds"),
        })
    }

    /// One element after the whole groups: `step` at index `done + i`.
    fn remainder_step(
        &mut self,
        done: IntVal,
        i: Value,
        cur: &[Value],
        step: &mut Step<'_, 'a>,
    ) -> JitResult<Vec<Value>> {
        let at = match self.iadd_value(done, i) {
            IntVal::Ssa(v) => v,
            IntVal::Const(c) => self.b.ins().iconst(cranelift_codegen::ir::types::I64, c),
        };
        self.count_at(at);
        // The last elements of a loop inside no other run a few times per call of the
        // function (at most one after pairs, three after blocks): the kernels of their
        // code, outside any loop of its own, are calls of their functions, which cost
        // Cranelift nothing more to compile. (Inside another loop, they may run as often
        // as the pairs: a call there, and sin and cos of one argument then reducing it
        // apart, made a map of three elements per row 1.3 times slower. Inside a loop of
        // the element's own, as often as that loop: a sum over 3 rows of 10^5 elements
        // had its gradient 1.26 times slower.)
        let outer = self.counters.len() <= 1;
        let saved = self.few_per_call;
        if outer {
            self.few_per_call = Some(self.counters.len());
        }
        let r = step(self, at, cur);
        self.few_per_call = saved;
        r
    }

    /// The steps of `combine_tree` on accumulators carried as `vectors` (accumulator `j`
    /// in lane `j mod 2` of vector `j / 2`) that combine whole vectors: each pairs vector
    /// `h` of the first half with vector `h` of the second, lane by lane, and packs the
    /// two results, which [`lanes`] turns into one operation on two lanes. Returns the
    /// two accumulators left, the lanes of the last vector, for the tree's last step.
    fn combined_lanes(
        &mut self,
        l: usize,
        mut vectors: Vec<Value>,
        combine: &mut Combine<'_, 'a>,
    ) -> JitResult<Vec<Value>> {
        while vectors.len() > 1 {
            let second = vectors.split_off(vectors.len() / 2);
            let mut next = Vec::with_capacity(vectors.len());
            for (a, b) in vectors.into_iter().zip(second) {
                let mut halves = [a; 2];
                for (k, half) in halves.iter_mut().enumerate() {
                    let x = self.b.ins().extractlane(a, k as u8);
                    let y = self.b.ins().extractlane(b, k as u8);
                    *half = combine(self, l, x, y)?;
                }
                next.push(self.pack(halves[0], halves[1]));
            }
            vectors = next;
        }
        let v = vectors[0];
        Ok(vec![
            self.b.ins().extractlane(v, 0),
            self.b.ins().extractlane(v, 1),
        ])
    }

    /// A fold's result after the blocks: its accumulators combined by the tree, or, with
    /// no whole block, the value so far (`first`, accumulator 0 as it started). For `+`
    /// and `*` the tree gives that value itself when there is no block (the other
    /// accumulators are still the unit, `-0` or `1`, which leaves every operand's bits
    /// as they are), so no choice is made; `max` and `min` would make a NaN canonical.
    fn combined(
        &mut self,
        l: usize,
        lane: &Lane,
        accs: Vec<Value>,
        first: Value,
        blocks: IntVal,
        combine: &mut Combine<'_, 'a>,
    ) -> JitResult<Value> {
        let all = combine_tree(accs, &mut |x, y| combine(self, l, x, y))?;
        let exact_unit = lane.unit.to_bits() == (-0.0f64).to_bits() || lane.unit == 1.0;
        Ok(match blocks {
            IntVal::Ssa(q) if !exact_unit => self.b.ins().select(q, all, first),
            IntVal::Ssa(_) | IntVal::Const(_) => all,
        })
    }

    /// Make `i` the index of the element the innermost loop is at: a scan computed where
    /// it is read checks that it is read there, in order (copy by copy, then the
    /// remaining elements).
    fn count_at(&mut self, i: Value) {
        if let Some(c) = self.counters.last_mut() {
            *c = Some(i);
        }
    }

    /// What emitting code again starts from (see [`Replay`]).
    pub(super) fn replay_point(&self, reads: &[&Rc<Arr>]) -> Replay {
        let mut unread = Vec::new();
        for a in reads {
            unread_maps(a, &mut unread);
        }
        for ent in self.env.values() {
            unread_in(ent.value(), &mut unread);
        }
        Replay {
            env: self.env.clone(),
            unread,
        }
    }

    /// Back to the bindings of `r`, its maps unread again.
    pub(super) fn rewind(&mut self, r: &Replay) {
        self.env = r.env.clone();
        for a in &r.unread {
            match &a.kind {
                Kind::Map { read, .. } | Kind::Map2 { read, .. } => read.reset(),
                Kind::Scan(scan) => scan.read.set(false),
                Kind::Mem { .. } | Kind::Fill { .. } | Kind::Iota { .. } | Kind::Pad(_) => {}
            }
        }
    }
}

/// The operations an element's code may have for [`Translator::blocked_loop`] to emit it
/// [`ACCUMULATORS`] times (beyond, or with a loop inside, it rotates the accumulators),
/// and for a loop to compute two elements at a time. A Hessian-vector product's element
/// (the value, the gradient and their tangents) has several dozen.
const HEAVY_BODY: usize = 80;

/// The operations per fold an element's code may have for a blocked loop to run all
/// [`ACCUMULATORS`] elements of a block per iteration.
const TINY_BODY: usize = 6;

/// How many folds and arrays read together a blocked loop may have to run all
/// [`ACCUMULATORS`] elements of a block per iteration: each takes `K / 2` vector
/// registers.
const WIDE_STREAMS: usize = 3;

/// True if computing an element of `a` takes at most `budget` operations, each a machine
/// operation (no transcendental, division or square root), reading memory in place
/// (arrays in memory, indexed or not, `iota`, fills; no scan, no pad behind a test). The
/// arrays in memory it reads are added to `arrays`, once each.
fn tiny(
    arena: &unfad_syntax::Arena,
    a: &Rc<Arr>,
    budget: &mut usize,
    arrays: &mut Vec<Layout>,
) -> bool {
    match &a.kind {
        Kind::Map { f, src, .. } => {
            tiny_expr(arena, *f, budget) && tiny(arena, src, budget, arrays)
        }
        Kind::Map2 { f, a: x, b: y, .. } => {
            tiny_expr(arena, *f, budget)
                && tiny(arena, x, budget, arrays)
                && tiny(arena, y, budget, arrays)
        }
        Kind::Scan(_) | Kind::Pad(_) => false,
        Kind::Mem { layout, .. } => {
            if !arrays.contains(layout) {
                arrays.push(layout.clone());
            }
            true
        }
        Kind::Fill { .. } | Kind::Iota { .. } => true,
    }
}

/// True if `e` is at most `budget` of the operations [`tiny`] allows.
fn tiny_expr(arena: &unfad_syntax::Arena, e: ExprId, budget: &mut usize) -> bool {
    let op = match arena[e] {
        Node::Op1(op, _) => matches!(op, UnOp::Neg | UnOp::Abs | UnOp::ToReal),
        Node::Op2(op, _, _) => matches!(
            op,
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Max | BinOp::Min
        ),
        Node::Var(_)
        | Node::Const(_)
        | Node::Lambda(..)
        | Node::Proj(..)
        | Node::Tuple(_)
        | Node::Index(..) => true,
        _ => false,
    };
    if !op {
        return false;
    }
    if matches!(arena[e], Node::Op1(..) | Node::Op2(..)) {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
    }
    let mut ok = true;
    arena.for_each_child(e, |c| ok = ok && tiny_expr(arena, c, budget));
    ok
}

/// True if computing an element of `a` runs a loop or more than `budget` operations (the
/// functions of the unevaluated maps and scans it reads), or branches: a pad read with a
/// test (not among `in_place`, the pads read in place at the loop's index).
fn heavy(
    arena: &unfad_syntax::Arena,
    a: &Rc<Arr>,
    budget: &mut usize,
    in_place: &[*const Pad],
) -> bool {
    let body = heavy_expr;
    let heavy = |a: &Rc<Arr>, budget: &mut usize| heavy(arena, a, budget, in_place);
    match &a.kind {
        Kind::Map { f, src, .. } => body(arena, *f, budget) || heavy(src, budget),
        Kind::Map2 { f, a: x, b: y, .. } => {
            body(arena, *f, budget) || heavy(x, budget) || heavy(y, budget)
        }
        Kind::Scan(scan) => body(arena, scan.f, budget) || heavy(&scan.src, budget),
        Kind::Pad(p) => !in_place.contains(&Rc::as_ptr(p)) || heavy(&p.src, budget),
        Kind::Mem { .. } | Kind::Fill { .. } | Kind::Iota { .. } => false,
    }
}

/// True if the expression `e` runs a loop or more than `budget` operations (each counted
/// once per occurrence; the budget is what is left after them otherwise).
fn heavy_expr(arena: &unfad_syntax::Arena, e: ExprId, budget: &mut usize) -> bool {
    if *budget == 0 || arena[e].is_array_op() {
        return true;
    }
    if !arena[e].is_structural() {
        *budget -= 1;
    }
    let mut found = false;
    arena.for_each_child(e, |c| found = found || heavy_expr(arena, c, budget));
    found
}

/// The unevaluated maps inside `v` not read yet.
fn unread_in(v: &Val, out: &mut Vec<Rc<Arr>>) {
    match v {
        Val::Real(_) | Val::Bool(_) => {}
        Val::Tuple(items) => items.iter().for_each(|x| unread_in(x, out)),
        Val::Arr(a) => unread_maps(a, out),
    }
}

/// The unevaluated maps `a` reads (itself included) not read yet.
fn unread_maps(a: &Rc<Arr>, out: &mut Vec<Rc<Arr>>) {
    match &a.kind {
        Kind::Map { src, read, .. } => {
            if !read.spent() {
                out.push(a.clone());
            }
            unread_maps(src, out);
        }
        Kind::Map2 {
            a: x, b: y, read, ..
        } => {
            if !read.spent() {
                out.push(a.clone());
            }
            unread_maps(x, out);
            unread_maps(y, out);
        }
        Kind::Scan(scan) => {
            if !scan.read.get() {
                out.push(a.clone());
            }
            unread_maps(&scan.src, out);
        }
        Kind::Pad(p) => unread_maps(&p.src, out),
        Kind::Mem { .. } | Kind::Fill { .. } | Kind::Iota { .. } => {}
    }
}
