//! Blocked loops: a `reduce` of `+`, `*`, `max` or `min` with several independent
//! accumulators, in the order `unfad_syntax::reduction` defines (which the interpreter
//! follows), so that consecutive elements do not wait for one another's addition.
//!
//! A loop with such folds runs `q = n / K` iterations of `K` elements (`K` =
//! [`ACCUMULATORS`]), the per-element code emitted `K` times in the body, element `K·b + j`
//! folded into accumulator `j`; the accumulators are then combined by the pairwise tree,
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

use cranelift_codegen::ir::{InstBuilder, Value};
use unfad_syntax::fast_hash::FastMap as HashMap;
use unfad_syntax::reduction::{combine_tree, unit, ACCUMULATORS};
use unfad_syntax::{BinOp, ExprId, Node, Var};

use crate::error::{internal, JitResult};
use crate::value::{Arr, IntVal, Kind, Pad, Val};

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
        let shift = K.trailing_zeros() as i64;
        let blocks = self.blocks_of(count);
        let replay = self.replay_point(reads);
        let width = init.len();
        // On two lanes, the accumulators of a fold are carried as two vectors, lanes
        // (0, 1) and (2, 3); the scalar slot at `lane.at` then keeps the initial value.
        let paired = K == 4 && lanes::available(self.module.isa());
        let mut state = init.clone();
        if paired {
            for lane in lanes {
                let unit = self.b.ins().f64const(lane.unit);
                let first = self.pack(init[lane.at], unit);
                let second = self.pack(unit, unit);
                state.extend([first, second]);
            }
        } else {
            for _ in 1..K {
                for lane in lanes {
                    state.push(self.b.ins().f64const(lane.unit));
                }
            }
        }
        let out = self.loop_(blocks, false, state, &mut |t, b, cur| {
            let base = t.b.ins().ishl_imm_s(b, shift);
            let mut running = cur[..width].to_vec();
            let mut others = cur[width..].to_vec();
            let mut accs = vec![Vec::with_capacity(K); lanes.len()];
            for j in 0..K {
                if j > 0 {
                    t.rewind(&replay);
                }
                let mut view = running.clone();
                for (l, lane) in lanes.iter().enumerate() {
                    if paired {
                        let v = cur[width + 2 * l + j / 2];
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
                let mut next = step(t, i, &view)?;
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
                for acc in &accs {
                    others.push(t.pack(acc[0], acc[1]));
                    others.push(t.pack(acc[2], acc[3]));
                }
            }
            running.extend(others);
            Ok(running)
        })?;
        let mut state = out[..width].to_vec();
        if blocks != IntVal::Const(0) {
            for (l, lane) in lanes.iter().enumerate() {
                let accs: Vec<Value> = if paired {
                    let (first, second) = (out[width + 2 * l], out[width + 2 * l + 1]);
                    let ins = |t: &mut Self, v, k: u8| t.b.ins().extractlane(v, k);
                    vec![
                        ins(self, first, 0),
                        ins(self, first, 1),
                        ins(self, second, 0),
                        ins(self, second, 1),
                    ]
                } else {
                    std::iter::once(out[lane.at])
                        .chain((1..K).map(|j| out[width + (j - 1) * lanes.len() + l]))
                        .collect()
                };
                state[lane.at] = self.combined(l, accs, out[lane.at], blocks, combine)?;
            }
        }
        let (done, rest) = self.after_blocks(count, blocks)?;
        self.rewind(&replay);
        self.loop_(rest, false, state, &mut |t, i, cur| {
            t.remainder_step(done, i, cur, step)
        })
    }

    /// [`Translator::blocked_loop`] for an element whose code is long (a loop of its own,
    /// or many operations): one copy of it per iteration instead of [`ACCUMULATORS`], the
    /// accumulators of each fold rotating through the state (element `i` is folded into
    /// the first, which then goes last), so that after each block of `K` elements every
    /// accumulator is back in its place and has folded the elements the order gives it.
    /// The same results as the unrolled loop, in a quarter of the code; what the unrolled
    /// loop gains (independent additions, lanes) is nothing beside such an element.
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
        let width = init.len();
        // The element's code is emitted twice: in the blocks' loop and the remainder's.
        let replay = self.replay_point(reads);
        let (done, rest) = self.after_blocks(count, blocks)?;
        // The state: the loop's own, then accumulators 1 .. K of each fold (accumulator 0
        // is in the fold's slot).
        let mut state = init.clone();
        for lane in lanes {
            for _ in 1..K {
                state.push(self.b.ins().f64const(lane.unit));
            }
        }
        let out = self.loop_(done, false, state, &mut |t, i, cur| {
            t.count_at(i);
            let mut next = step(t, i, &cur[..width])?;
            for (l, lane) in lanes.iter().enumerate() {
                let others = &cur[width + l * (K - 1)..width + (l + 1) * (K - 1)];
                let folded = next[lane.at];
                next[lane.at] = others[0];
                next.extend_from_slice(&others[1..]);
                next.push(folded);
            }
            Ok(next)
        })?;
        let mut state = out[..width].to_vec();
        if blocks != IntVal::Const(0) {
            for (l, lane) in lanes.iter().enumerate() {
                let accs: Vec<Value> = std::iter::once(out[lane.at])
                    .chain(
                        out[width + l * (K - 1)..width + (l + 1) * (K - 1)]
                            .iter()
                            .copied(),
                    )
                    .collect();
                state[lane.at] = self.combined(l, accs, out[lane.at], blocks, combine)?;
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
        let out = self.loop_(pairs, false, init, &mut |t, b, cur| {
            let first = t.b.ins().ishl_imm_s(b, 1);
            t.count_at(first);
            let mid = step(t, first, cur)?;
            t.rewind(&replay);
            let second = t.b.ins().iadd_imm_s(first, 1);
            t.count_at(second);
            step(t, second, &mid)
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

    /// A fold's result after the blocks: its accumulators combined by the tree, or, with
    /// no whole block, the value so far (`first`, accumulator 0 as it started).
    fn combined(
        &mut self,
        l: usize,
        accs: Vec<Value>,
        first: Value,
        blocks: IntVal,
        combine: &mut Combine<'_, 'a>,
    ) -> JitResult<Value> {
        let all = combine_tree(accs, &mut |x, y| combine(self, l, x, y))?;
        Ok(match blocks {
            IntVal::Ssa(q) => self.b.ins().select(q, all, first),
            IntVal::Const(_) => all,
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
