//! Moving scans as views: `scanl (acc, z. z) c A` is `c` followed by `A`, and
//! `scanr (z, acc. z) c A` is `A` followed by `c` ([`Kind::Pad`]). Reverse mode makes them
//! as the adjoints of `shift1L` and `shift1R`, and a stencil written through shifts has
//! several, nested. In memory each would be a pass writing `n + 1` elements and another
//! reading them; as views, the loop that reads them reads `A` in place.
//!
//! Element `i` of a pad is the fill at one end and `A`'s element `i - 1` or `i` elsewhere:
//! read anywhere, a branch decides ([`Translator::pad_elem`]). The loops that write arrays
//! to memory (a fused tuple's too, when it folds nothing) instead peel the iterations where
//! some pad they read is at its end
//! ([`Translator::peeled_loop`]): at most a few at each end, with the branches, and between
//! them the loop proper, which reads every pad's source at a fixed offset, without a test,
//! and still computes two elements at a time.

use std::rc::Rc;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Type, Value};
use unfad_syntax::{Arena, ExprId, Node, Var};

use crate::error::{internal, JitResult};
use crate::shape::lambda;
use crate::value::{Arr, IntVal, Kind, Pad, Val};

use super::blocked::Step;
use super::state::ssa_ints;
use super::{blockargs, shape_arr, Translator, MAX_BLOCK_PARAMS};

/// Whether `f`, the function of a `scanl` (`right` false) or a `scanr`, only moves
/// elements: it returns its element parameter (`(acc, z. z)` or `(z, acc. z)`).
pub(super) fn moving(arena: &unfad_syntax::Arena, f: ExprId, right: bool) -> bool {
    let Ok((ps, body)) = lambda(arena, f, 2, "a scan") else {
        return false;
    };
    let elem = if right { ps[0] } else { ps[1] };
    arena[body] == Node::Var(elem)
}

/// How many iterations at the start and at the end of a loop over `a` read some pad at
/// its end (the pads it reads through maps, nested ones included).
pub(super) fn pad_extent(a: &Arr) -> (i64, i64) {
    match &a.kind {
        Kind::Pad(p) => {
            let (f, b) = pad_extent(&p.src);
            if p.at_end {
                (f, b + 1)
            } else {
                (f + 1, b)
            }
        }
        Kind::Map { src, .. } => pad_extent(src),
        Kind::Map2 { a, b, .. } => {
            let (fa, ba) = pad_extent(a);
            let (fb, bb) = pad_extent(b);
            (fa.max(fb), ba.max(bb))
        }
        Kind::Mem { .. } | Kind::Fill { .. } | Kind::Iota { .. } | Kind::Scan(_) => (0, 0),
    }
}

impl<'a> Translator<'a> {
    /// The moving scan `e` (`scanl (acc, z. z) z x`, or `scanr (z, acc. z) z x` if
    /// `right`) as a view of `x`'s elements, when they are scalars or tuples of them (a
    /// branch's join carries them) and come from no scan computed where it is read (the
    /// branch would break its order). `None`, emitting nothing, otherwise.
    pub(super) fn moving_scan(
        &mut self,
        e: ExprId,
        z: ExprId,
        x: ExprId,
        right: bool,
    ) -> JitResult<Option<Val>> {
        let sa = shape_arr(&self.shape(e)?)?;
        if sa.elem.has_arrays() {
            return Ok(None);
        }
        let fill = self.emit(z)?;
        let mut src = self.emit_arr(x)?;
        if super::folds::reads_scan(&src) {
            src = super::expect_arr(self.force(Val::Arr(src))?)?;
        }
        // A length known from the sizes is the prologue's value, so that loops over this
        // view and over other arrays of the same length are seen to be of one length.
        let claim = src.stat().map(|d| d.inc());
        let len = match claim {
            Some(d) => self.dim(d),
            None => self.iadd(src.len, 1),
        };
        let kind = Kind::Pad(Rc::new(Pad {
            src,
            fill,
            at_end: right,
        }));
        Ok(Some(Val::Arr(self.arr(len, &sa, claim, kind))))
    }

    /// Element `i` of the pad `p`: `p.src`'s element `i - 1` (at the front) or `i` (at
    /// the end), unless `i` is the fill's position. Inside the loop proper of a
    /// [`Translator::peeled_loop`] it never is; elsewhere a branch decides, unless `i`
    /// is known.
    pub(super) fn pad_elem(&mut self, p: &Pad, i: IntVal) -> JitResult<Val> {
        let inner = if p.at_end { i } else { self.iadd(i, -1) };
        if let IntVal::Ssa(v) = i {
            if self.in_place.contains(&(p as *const Pad, v)) {
                // A pad inside, read at `inner`, is off its fill too: the loop was
                // peeled for both (`pad_extent` counts nested pads).
                if let (Kind::Pad(q), IntVal::Ssa(w)) = (&p.src.kind, inner) {
                    self.in_place.push((Rc::as_ptr(q), w));
                }
                return self.elem(&p.src, inner);
            }
        }
        let at_fill = if p.at_end {
            match (i, p.src.len) {
                (IntVal::Const(k), IntVal::Const(n)) => Some(k == n),
                _ => None,
            }
        } else {
            match i {
                IntVal::Const(k) => Some(k == 0),
                IntVal::Ssa(_) => None,
            }
        };
        match at_fill {
            Some(true) => return Ok(p.fill.clone()),
            Some(false) => return self.elem(&p.src, inner),
            None => {}
        }
        let cond = if p.at_end {
            let (iv, n) = (self.int_value(i), self.int_value(p.src.len));
            self.b.ins().icmp(IntCC::Equal, iv, n)
        } else {
            let iv = self.int_value(i);
            self.b.ins().icmp_imm_s(IntCC::Equal, iv, 0)
        };
        let fill_b = self.b.create_block();
        let read_b = self.b.create_block();
        let join_b = self.b.create_block();
        self.b.ins().brif(cond, fill_b, &[], read_b, &[]);
        self.switch_to(read_b);
        let v = self.elem(&p.src, inner)?;
        let mut from_src = Vec::new();
        self.flatten(&v, &mut from_src)?;
        self.b.ins().jump(join_b, &blockargs(&from_src));
        self.switch_to(fill_b);
        let mut from_fill = Vec::new();
        self.flatten(&p.fill, &mut from_fill)?;
        self.b.ins().jump(join_b, &blockargs(&from_fill));
        let types: Vec<Type> = from_src
            .iter()
            .map(|&x| self.b.func.dfg.value_type(x))
            .collect();
        let fill_types: Vec<Type> = from_fill
            .iter()
            .map(|&x| self.b.func.dfg.value_type(x))
            .collect();
        if types != fill_types || types.len() >= MAX_BLOCK_PARAMS {
            return internal("a moving scan's fill is not like its elements");
        }
        self.switch_to(join_b);
        let params: Vec<Value> = types
            .iter()
            .map(|&t| self.b.append_block_param(join_b, t))
            .collect();
        let elem = p.src.shape.elem.clone();
        self.rebuild(
            &v,
            &elem,
            &mut ssa_ints(&params).iter(),
            &Rc::from(Vec::new()),
        )
    }

    /// A loop over `0..count` running `step` (no carried values), which reads the arrays
    /// `reads` at its index: the iterations where a pad among `covers` (the arrays the
    /// loop reads at its index, `reads` or what they are views of) is at its end come
    /// first or last, each read of a pad tested, and the others run with those pads read
    /// in place at the loop's index (see `in_place`), as a [`Translator::paired_loop`] if
    /// `paired`. `split` iterations at least run first (see [`split_at_constants`]): the
    /// loop proper then knows its index is at least that (`floors`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn peeled_loop(
        &mut self,
        count: IntVal,
        covers: &[&Arr],
        split: i64,
        reads: &[&Rc<Arr>],
        bodies: &[ExprId],
        paired: bool,
        step: &mut Step<'_, 'a>,
    ) -> JitResult<()> {
        let whole = |t: &mut Self,
                     n: IntVal,
                     in_place: &[*const Pad],
                     step: &mut Step<'_, 'a>|
         -> JitResult<()> {
            if paired {
                t.paired_loop_reading(n, Vec::new(), reads, bodies, in_place, step)?;
            } else {
                t.loop_(n, false, Vec::new(), step)?;
            }
            Ok(())
        };
        let (front, back) = extent_of(covers);
        let front = front.max(split);
        if front == 0 && back == 0 {
            return whole(self, count, &[], step);
        }
        let replay = self.replay_point(reads);
        // Iterations 0 .. min(count, front), tested.
        let first = self.umin(count, IntVal::Const(front));
        self.loop_(first, false, Vec::new(), step)?;
        self.rewind(&replay);
        // front .. count - back, in place.
        let ends = front + back;
        let middle = match count {
            IntVal::Const(n) => IntVal::Const((n - ends).max(0)),
            IntVal::Ssa(n) => {
                let e = self.b.ins().iconst(cranelift_codegen::ir::types::I64, ends);
                let m = self.b.ins().umax(n, e);
                IntVal::Ssa(self.b.ins().iadd_imm_s(m, -ends))
            }
        };
        // The pads of `covers` are read in place there, at the loop's index only: a read of
        // another pad, or of these at another index (a nested loop's, a constant), is
        // tested as anywhere.
        let mut pads = Vec::new();
        for a in covers {
            pads_of(a, &mut pads);
        }
        let scope = self.in_place.len();
        let r = whole(self, middle, &pads, &mut |t, i, cur| {
            let at = t.b.ins().iadd_imm_s(i, front);
            t.floors.insert(at, front);
            t.in_place.extend(pads.iter().map(|&p| (p, at)));
            step(t, at, cur)
        });
        self.in_place.truncate(scope);
        r?;
        self.rewind(&replay);
        // What is left (the last `back`, or fewer), tested.
        let done = self.iadd(middle, front);
        let start = self.umin(count, done);
        let last = self.isub(count, start);
        self.loop_(last, false, Vec::new(), &mut |t, j, cur| {
            let at = match t.iadd_value(start, j) {
                IntVal::Ssa(v) => v,
                IntVal::Const(c) => t.b.ins().iconst(cranelift_codegen::ir::types::I64, c),
            };
            step(t, at, cur)
        })?;
        Ok(())
    }
}

/// The pads `a` reads at its index, through maps, nested ones included (those
/// [`pad_extent`] counts).
fn pads_of(a: &Arr, out: &mut Vec<*const Pad>) {
    match &a.kind {
        Kind::Pad(p) => {
            out.push(Rc::as_ptr(p));
            pads_of(&p.src, out);
        }
        Kind::Map { src, .. } => pads_of(src, out),
        Kind::Map2 { a, b, .. } => {
            pads_of(a, out);
            pads_of(b, out);
        }
        Kind::Mem { .. } | Kind::Fill { .. } | Kind::Iota { .. } | Kind::Scan(_) => {}
    }
}

/// The largest [`pad_extent`] at each end among `reads`.
pub(super) fn extent_of(reads: &[&Arr]) -> (i64, i64) {
    reads.iter().fold((0, 0), |(f, b), a| {
        let (fa, ba) = pad_extent(a);
        (f.max(fa), b.max(ba))
    })
}

/// How many first iterations of a loop over `srcs` (read as the parameters `ps` of its
/// body) to run apart, so that in the rest every comparison of an `iota` element with a
/// small constant in the body is known: 1 for `if i == 0 then .. else ..` (a boundary
/// treated apart), `c + 1` for a constant `c` below [`SPLIT_LIMIT`]; 0 where there is no
/// such comparison. An element is a parameter, or a component of one (`snd e`), whose
/// source has an `iota` in it (a zip with one).
pub(super) fn split_at_constants(arena: &Arena, ps: &[Var], srcs: &[&Arr], body: ExprId) -> i64 {
    let elems: Vec<Var> = ps
        .iter()
        .zip(srcs)
        .filter(|(_, s)| has_iota(s))
        .map(|(&p, _)| p)
        .collect();
    if elems.is_empty() {
        return 0;
    }
    let is_elem = |mut e: ExprId| {
        while let Node::Proj(_, inner) = arena[e] {
            e = inner;
        }
        matches!(arena[e], Node::Var(v) if elems.contains(&v))
    };
    let small = |e: ExprId| match arena[e] {
        Node::Const(c) if c >= 0.0 && c < SPLIT_LIMIT as f64 => Some(c.floor() as i64 + 1),
        _ => None,
    };
    let mut front = 0;
    let mut stack = vec![body];
    while let Some(e) = stack.pop() {
        if let Node::Cmp(_, a, b) = arena[e] {
            let at = if is_elem(a) {
                small(b)
            } else if is_elem(b) {
                small(a)
            } else {
                None
            };
            front = front.max(at.unwrap_or(0));
        }
        arena.for_each_child(e, |c| stack.push(c));
    }
    front
}

/// Whether the elements of `a` are, or hold, elements of an `iota` from 0.
fn has_iota(a: &Arr) -> bool {
    match &a.kind {
        Kind::Iota { start } => *start == 0,
        Kind::Map { src, .. } => has_iota(src),
        Kind::Map2 { a, b, .. } => has_iota(a) || has_iota(b),
        Kind::Mem { .. } | Kind::Fill { .. } | Kind::Scan(_) | Kind::Pad(_) => false,
    }
}

/// The constants below which [`split_at_constants`] runs iterations apart.
const SPLIT_LIMIT: i64 = 4;
