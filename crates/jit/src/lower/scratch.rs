//! A `let`-bound array stored in the place of the result that reads it last.
//!
//! `let E = map (t. exp(t - m)) x in let s = sum(E) in (m + log(s), map2 (b, e. e / s + b)
//! B E)`, the gradient of a log-sum-exp: `E` must be stored (the sum reads it, then the
//! gradient does), and the gradient is written to the caller's buffer by a loop that reads
//! element `i` of `E` only where it writes element `i` of the result. `E` is then stored in
//! that buffer: each element is read before it is overwritten, and nothing reads `E` after
//! the loop. The array takes no workspace, as in hand-written code that keeps the
//! exponentials in the output array and scales them in place.
//!
//! The same holds per element of an outer loop (a row's exponentials kept in the row of
//! the gradient), since the place is wherever the chain's result goes.
//!
//! A `let`-bound sum of arrays of tuples whose columns are components of the result
//! (`let dcomps = reduce (s, t. map2 ... s t) zeros (...) in (..., map (z. fst z) dcomps,
//! map (z. snd z) dcomps)`, the adjoints of zipped captured arrays) accumulates in those
//! components' places: its columns are laid out there (`columns_place`).

use std::rc::Rc;

use unfad_syntax::{ExprId, Node, Var};

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value};

use crate::error::{internal, JitResult};
use crate::layout::Dim;
use crate::shape::{SArr, SShape};
use crate::value::{Arr, IntVal, Kind, Place, Val};

use super::access::{arr_bases, val_bases};
use super::fusion::{column_of, leaf_places};
use super::memory::with_column;
use super::pad;

use super::Translator;

/// A component of a result written where it goes by the code that makes a binding
/// (`columns_place`): the component, and its buffer.
pub(super) type Written = (ExprId, Rc<Arr>);

impl<'a> Translator<'a> {
    /// The array of `p` where `x`, bound by `let x = ... in rest` (`rest` written to `p`),
    /// may be stored: `rest` is a chain of `let`s ending in the place's consumer of `x`, or
    /// in a tuple with such a component. That consumer is a `map` or `map2` with `x` itself
    /// as an operand, whose function and other operand read neither `x` nor an array bound
    /// after it (which could read `x` later or elsewhere); no other component reads them
    /// either; and its place is a buffer of `x`'s shape. `None` otherwise.
    pub(super) fn scratch_place(&self, x: Var, rest: ExprId, p: &Place) -> Option<Rc<Arr>> {
        let SShape::Arr(sa) = self.an.var_shape(x).ok()? else {
            return None;
        };
        let fits = |place: &Place| -> Option<Rc<Arr>> {
            match place {
                Place::Arr(d) if matches!(d.kind, Kind::Mem { .. }) && *d.shape == **sa => {
                    Some(d.clone())
                }
                _ => None,
            }
        };
        self.scratch_place_with(x, rest, p, false, &fits)
            .map(|(d, _)| d)
    }

    /// [`Translator::scratch_place`] for `x` bound to a scan that must be stored, where the
    /// other components of the result may read `x` if they are reals: they are then
    /// computed before the component whose buffer holds `x` (`readers_first`, see
    /// [`Translator::readers_before_writer`]). The buffer, and the chain's result (the
    /// tuple whose components are so ordered).
    ///
    /// The scan `scan` (`x`'s value) need not have the buffer's length: its elements have
    /// the buffer's element shape, and its source fits in the buffer (at most its length
    /// less one), so the scan fits too wherever the buffer has a row; an empty buffer gets
    /// a spare row (see [`Translator::scan_place`]).
    pub(super) fn scan_scratch_place(
        &self,
        x: Var,
        scan: ExprId,
        rest: ExprId,
        p: &Place,
    ) -> JitResult<Option<(Rc<Arr>, ExprId)>> {
        let Some((_, _, src, _, shifted)) = scan_parts(self.arena, scan) else {
            return Ok(None);
        };
        let (SShape::Arr(sa), SShape::Arr(ss)) = (self.an.var_shape(x)?, self.shape(src)?) else {
            return Ok(None);
        };
        if !sa.exact || !ss.exact {
            return Ok(None);
        }
        let fits = |place: &Place| -> Option<Rc<Arr>> {
            match place {
                Place::Arr(d) if matches!(d.kind, Kind::Mem { .. }) && d.shape.elem == sa.elem => {
                    // A shifted scan has as many rows as its source, a scan one more.
                    let room = if shifted { d.stat()? } else { d.stat()?.dec() };
                    (ss.len.min(room) == Some(ss.len)).then(|| d.clone())
                }
                _ => None,
            }
        };
        Ok(self.scratch_place_with(x, rest, p, true, &fits))
    }

    /// The scan `(g, z, x)` (see [`scan_parts`]) written to `d`, of the scan's length, if
    /// `d` has a row (a scan always has a state, the place may have none: a map over the
    /// scan then has no element, a shifted scan is empty); `d`'s view.
    pub(super) fn scan_where_a_row(
        &mut self,
        g: ExprId,
        z: ExprId,
        x: ExprId,
        d: &Rc<Arr>,
        right: bool,
        shifted: bool,
    ) -> JitResult<Val> {
        let (once, _) = self.min_len(&[(d.len, d.stat()), (IntVal::Const(1), None)]);
        let dst = d.clone();
        self.at_most_once(once, Vec::new(), &mut |t, _, _| {
            t.scan_into(g, z, x, &dst, right, true, shifted)?;
            Ok(Vec::new())
        })?;
        self.view(d, d.len, d.stat())
    }

    /// Whether the array `e` is known to have exactly `d`'s length (both static and
    /// equal), so that `d` whole is its value once written.
    pub(super) fn exactly_as_long(&self, e: ExprId, d: &Arr) -> JitResult<bool> {
        Ok(match self.shape(e)? {
            SShape::Arr(sa) => sa.exact && d.stat() == Some(sa.len),
            _ => false,
        })
    }

    /// The place of `x`, a scan of shape `sa` (exact) stored in the buffer `d` by
    /// [`Translator::scan_scratch_place`]: `d` itself, with the scan's length, where `d`
    /// has at least that many rows, else (`d` is then empty, the scan one row) a spare
    /// buffer of one row. Its base is given `d`'s root: it is `d` wherever `d` is read or
    /// written at all.
    pub(super) fn scan_place(&mut self, sa: &Rc<SArr>, d: &Rc<Arr>) -> JitResult<Rc<Arr>> {
        let len = self.dim(sa.len);
        let one = Rc::new(SArr {
            len: Dim::constant(1),
            exact: true,
            elem: sa.elem.clone(),
        });
        let spare = self.alloc(&one)?;
        let full = self.int_value(d.len);
        let need = self.int_value(len);
        let c = self
            .b
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, full, need);
        let mem = |a: &Arr| match &a.kind {
            Kind::Mem { layout, holds } => Some(Kind::Mem {
                layout: layout.clone(),
                holds: holds.clone(),
            }),
            _ => None,
        };
        let (Some(dk), Some(sk)) = (mem(d), mem(&spare)) else {
            return internal("a scan's buffer is not in memory");
        };
        let here = self.arr(len, sa, Some(sa.len), dk);
        let spare = self.arr(len, sa, Some(sa.len), sk);
        let Place::Arr(a) = self.select_place(c, &Place::Arr(here), &Place::Arr(spare))? else {
            return internal("a selected place is not an array");
        };
        let mut bases = Vec::new();
        arr_bases(d, &mut bases);
        let mut selected = Vec::new();
        arr_bases(&a, &mut selected);
        if let Some(&b) = bases.first() {
            let root = self.roots.get(&b).copied().unwrap_or(b);
            for s in selected {
                self.roots.insert(s, root);
            }
            // Loads are kept by the root their address had (see `access::Loads`).
            self.loads.clear();
        }
        Ok(a)
    }

    fn scratch_place_with(
        &self,
        x: Var,
        rest: ExprId,
        p: &Place,
        scalar_readers: bool,
        fits: &dyn Fn(&Place) -> Option<Rc<Arr>>,
    ) -> Option<(Rc<Arr>, ExprId)> {
        let arena = self.arena;
        // `x` and the arrays bound after it.
        let mut watched = vec![x];
        let mut cur = rest;
        loop {
            match arena[cur] {
                Node::Let(y, _, body) => {
                    if y == x {
                        return None;
                    }
                    if self.an.var_shape(y).ok()?.has_arrays() {
                        watched.push(y);
                    }
                    cur = body;
                }
                Node::LetTuple(ys, _, body) => {
                    for &y in arena.vars_of(ys) {
                        if y == x {
                            return None;
                        }
                        if self.an.var_shape(y).ok()?.has_arrays() {
                            watched.push(y);
                        }
                    }
                    cur = body;
                }
                _ => break,
            }
        }
        // Whether `e` reads `x` only as the operand of its loop, where it writes element
        // `i` after reading element `i`.
        let consumer = |e: ExprId| -> bool {
            let (f, operands) = match arena[e] {
                Node::Map(f, a) => (f, vec![a]),
                Node::Map2(f, a, b) => (f, vec![a, b]),
                _ => return false,
            };
            let direct = operands
                .iter()
                .filter(|&&o| arena[o] == Node::Var(x))
                .count();
            direct == 1
                && !arena.mentions_any(f, &watched)
                && operands
                    .iter()
                    .all(|&o| arena[o] == Node::Var(x) || !arena.mentions_any(o, &watched))
        };
        match (arena[cur], p) {
            (Node::Tuple(l), Place::Tuple(ps)) => {
                let items = arena.exprs(l);
                if items.len() != ps.len() {
                    return None;
                }
                let k = items.iter().position(|&item| consumer(item))?;
                let reals = |item: ExprId| {
                    scalar_readers && self.an.shape(item).is_ok_and(|s| !s.has_arrays())
                };
                let others_apart = items
                    .iter()
                    .enumerate()
                    .all(|(j, &item)| j == k || !arena.mentions_any(item, &watched) || reals(item));
                others_apart
                    .then(|| fits(&ps[k]))
                    .flatten()
                    .map(|d| (d, cur))
            }
            (_, Place::Arr(_)) if consumer(cur) => fits(p).map(|d| (d, cur)),
            _ => None,
        }
    }

    /// The components of the tuple `e` (`items`, written to `places`) that are reals and
    /// read the buffer a scan was stored in for another component (`readers_first`, see
    /// [`Translator::scan_scratch_place`]), computed now, in one loop where they fuse, and
    /// recorded as `precomputed` (the caller removes them): the component that overwrites
    /// the scan comes after them. The components so computed.
    pub(super) fn readers_before_writer(
        &mut self,
        e: ExprId,
        items: &[ExprId],
        places: &[Place],
    ) -> JitResult<Vec<ExprId>> {
        let Some((tuple, d)) = self.readers_first.last().cloned() else {
            return Ok(Vec::new());
        };
        if tuple != e {
            return Ok(Vec::new());
        }
        let mut first = Vec::new();
        let mut at = Vec::new();
        for (&item, place) in items.iter().zip(places) {
            if !self.shape(item)?.has_arrays()
                && !self.precomputed.contains_key(&item)
                && self.may_read_place(item, &d)
            {
                first.push(item);
                at.push(place.clone());
            }
        }
        if first.is_empty() {
            return Ok(first);
        }
        let vals = match self.fused_tuple(&first, &at)? {
            Some(Val::Tuple(vs)) if vs.len() == first.len() => vs.to_vec(),
            Some(_) => return internal("a fused tuple of reals made no tuple"),
            None => {
                let mut vs = Vec::with_capacity(first.len());
                for (&item, place) in first.iter().zip(&at) {
                    vs.push(self.emit_into(item, place)?);
                }
                vs
            }
        };
        for (&item, v) in first.iter().zip(vals) {
            self.precomputed.insert(item, v);
        }
        Ok(first)
    }

    /// `let x = e1 in rest` written to `p`, when `e1` is a fold that adds arrays in place,
    /// or a map, and `rest` reads `x` only as columns of its result
    /// ([`Translator::columns_place`]): the fold accumulates in the result's buffers, or
    /// the map writes its elements' components there, and those components are not written
    /// again. `None` (nothing emitted) otherwise.
    pub(super) fn fold_into_columns(
        &mut self,
        x: Var,
        e1: ExprId,
        rest: ExprId,
        p: &Place,
    ) -> JitResult<Option<Val>> {
        let fits = match self.arena[e1] {
            Node::Reduce(f, ..) | Node::Foldl(f, ..) => self.adds_in_place(f)?,
            Node::Map(..) | Node::Map2(..) => true,
            _ => false,
        };
        if !fits {
            return Ok(None);
        }
        let Some((place, written)) = self.columns_place(x, rest, p)? else {
            return Ok(None);
        };
        let v = self.emit_into(e1, &place)?;
        let Val::Arr(a) = &v else {
            return internal("a fold or map of arrays made no array");
        };
        let (len, dim) = (a.len, a.stat());
        self.bind_let(x, v)?;
        // Each such component's value is its column, where it is already.
        for (item, dst) in &written {
            let column = self.view(dst, len, dim)?;
            self.skip(*item);
            self.precomputed.insert(*item, column);
        }
        let r = self.emit_into(rest, p);
        for (item, _) in &written {
            self.precomputed.remove(item);
        }
        let r = r?;
        self.end_scope(&[x], &r);
        Ok(Some(r))
    }

    /// A place for `x`, bound by `let x = ... in rest` (`rest` written to `p`) to an array
    /// of tuples, whose columns `rest` reads only as components of its result (`map (z.
    /// π_q z) x`, each written to a buffer of its shape in `p`) and nowhere else: the
    /// columns laid out in those buffers, the rest of the elements in a new one. Also the
    /// components so written, whose values are then the columns. `None` otherwise.
    pub(super) fn columns_place(
        &mut self,
        x: Var,
        rest: ExprId,
        p: &Place,
    ) -> JitResult<Option<(Place, Vec<Written>)>> {
        let arena = self.arena;
        let Place::Tuple(ps) = p else {
            return Ok(None);
        };
        let Ok(SShape::Arr(sa)) = self.an.var_shape(x) else {
            return Ok(None);
        };
        let sa = sa.clone();
        let mut cur = rest;
        loop {
            match arena[cur] {
                Node::Let(y, rhs, body) => {
                    if y == x || arena.mentions_any(rhs, &[x]) {
                        return Ok(None);
                    }
                    cur = body;
                }
                Node::LetTuple(ys, rhs, body) => {
                    if arena.vars_of(ys).contains(&x) || arena.mentions_any(rhs, &[x]) {
                        return Ok(None);
                    }
                    cur = body;
                }
                _ => break,
            }
        }
        let Node::Tuple(l) = arena[cur] else {
            return Ok(None);
        };
        if arena.exprs(l).len() != ps.len() {
            return Ok(None);
        }
        // The result's components, through its nested tuples (a loop body's value beside
        // the tuple of its adjoints).
        let mut leaves = Vec::new();
        leaf_places(arena, cur, p, &mut leaves);
        let mut columns: Vec<(ExprId, Vec<usize>, Rc<Arr>)> = Vec::new();
        for (item, place) in &leaves {
            let (item, place) = (*item, place);
            if !arena.mentions_any(item, &[x]) {
                continue;
            }
            let Some(q) = column_of(arena, item, x) else {
                return Ok(None);
            };
            let Place::Arr(dst) = place else {
                return Ok(None);
            };
            let apart = columns
                .iter()
                .all(|(_, r, _)| !r.starts_with(&q) && !q.starts_with(r));
            let fits = matches!(dst.kind, Kind::Mem { .. })
                && dst.shape.len == sa.len
                && dst.shape.exact == sa.exact
                && component(&sa.elem, &q) == Some(&dst.shape.elem);
            if q.is_empty() || !apart || !fits {
                return Ok(None);
            }
            columns.push((item, q, dst.clone()));
        }
        if columns.is_empty() {
            return Ok(None);
        }
        let paths: Vec<Vec<usize>> = columns.iter().map(|(_, q, _)| q.clone()).collect();
        let d = self.alloc_without(&sa, &paths)?;
        let Kind::Mem { layout, holds } = &d.kind else {
            return Ok(None);
        };
        let mut layout = layout.clone();
        for (_, q, dst) in &columns {
            let Kind::Mem { layout: column, .. } = &dst.kind else {
                return Ok(None);
            };
            layout = with_column(&layout, q, column)?;
        }
        let kind = Kind::Mem {
            layout,
            holds: holds.clone(),
        };
        let d = self.arr(d.len, &d.shape, d.stat(), kind);
        let written = columns
            .into_iter()
            .map(|(item, _, dst)| (item, dst))
            .collect();
        Ok(Some((Place::Arr(d), written)))
    }
}

impl<'a> Translator<'a> {
    /// The components of a result (`items`, written to `places`) that are `map f S`,
    /// `map2 f S B` or `map2 f A S` written to a buffer `d`, where `S` is a scan that must
    /// be stored (`scanl` or `scanr` of a function that is not a move, see `pad.rs`): the
    /// scan is written to `d` itself, and the map then reads it there (`precomputed`, until
    /// the caller removes it), element `i` where it writes element `i`. The gradient of a
    /// product, `map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))`, then keeps its
    /// suffix products in the gradient's buffer, as hand-written code does, rather than in
    /// a workspace of the array's size. Returns the scans so stored.
    ///
    /// Only where the scan's elements have `d`'s element shape, a `scanr`'s source fits in
    /// `d` (its length at most `d`'s less one: a `scanr` cut short would start from the
    /// wrong end), nothing else of the results reads the scan, and nothing the results
    /// read may lie in `d`'s buffer ([`Translator::may_read_place`]). A scan always has
    /// an element, where `d` may have none: the scan is written only if `d` has a row (the
    /// map then has no element to compute otherwise).
    pub(super) fn scans_in_results(
        &mut self,
        items: &[ExprId],
        places: &[Place],
    ) -> JitResult<Vec<ExprId>> {
        let mut stored = Vec::new();
        for (k, (&item, place)) in items.iter().zip(places).enumerate() {
            let Place::Arr(d) = place else {
                continue;
            };
            let Some(scan) = self.scan_to_store(item, d)? else {
                continue;
            };
            let apart = items
                .iter()
                .enumerate()
                .all(|(j, &other)| j == k || !contains(self.arena, other, scan))
                && items.iter().all(|&other| !self.may_read_place(other, d));
            if !apart || self.precomputed.contains_key(&scan) {
                continue;
            }
            let Some((g, z, x, right, shifted)) = scan_parts(self.arena, scan) else {
                continue;
            };
            let view = self.scan_where_a_row(g, z, x, d, right, shifted)?;
            self.precomputed.insert(scan, view);
            stored.push(scan);
        }
        Ok(stored)
    }

    /// The scan that `e`, a `map` or `map2` to be written to `d`, reads element for element
    /// (an operand, or one of a map among its operands: [`aligned_scan`]), if it may be
    /// stored in `d` (see [`Translator::scans_in_results`]): of `d`'s element shape, a
    /// `scanr` whose source fits, read by `e` only there.
    fn scan_to_store(&self, e: ExprId, d: &Arr) -> JitResult<Option<ExprId>> {
        let arena = self.arena;
        if !matches!(d.kind, Kind::Mem { .. }) {
            return Ok(None);
        }
        let Some(scan) = aligned_scan(arena, e, 4) else {
            return Ok(None);
        };
        let Some((g, _, x, right, shifted)) = scan_parts(arena, scan) else {
            return Ok(None);
        };
        if pad::moving(arena, g, right) {
            return Ok(None);
        }
        let SShape::Arr(shape) = self.shape(scan)? else {
            return Ok(None);
        };
        if shape.elem != d.shape.elem {
            return Ok(None);
        }
        if right {
            let SShape::Arr(src) = self.shape(x)? else {
                return Ok(None);
            };
            // A shifted `scanr` runs over the source less its first element.
            let room = if shifted {
                d.stat()
            } else {
                d.stat().map(|n| n.dec())
            };
            let fits = matches!((src.exact.then_some(src.len), room),
                (Some(a), Some(b)) if a.min(b) == Some(a));
            if !fits {
                return Ok(None);
            }
        }
        Ok((occurrences_of(arena, e, scan) == 1).then_some(scan))
    }

    /// Whether evaluating `e` may read memory of `d`'s buffers: whether it mentions a
    /// variable whose value lies in one of them (a base of the same root), or is computed
    /// where it is read from such a value or from a function that mentions one.
    fn may_read_place(&self, e: ExprId, d: &Arr) -> bool {
        let root = |v: Value| self.roots.get(&v).copied().unwrap_or(v);
        let mut bases = Vec::new();
        arr_bases(d, &mut bases);
        let roots: Vec<Value> = bases.into_iter().map(root).collect();
        let in_d = |v: &Val| {
            let mut bs = Vec::new();
            val_bases(v, &mut bs);
            bs.into_iter().any(|b| roots.contains(&root(b)))
        };
        let mut vars: Vec<Var> = Vec::new();
        loop {
            let before = vars.len();
            for (&var, ent) in self.env.iter() {
                if !vars.contains(&var) && touches(self.arena, ent.value(), &in_d, &vars) {
                    vars.push(var);
                }
            }
            if vars.len() == before {
                break;
            }
        }
        self.arena.mentions_any(e, &vars)
    }
}

/// Whether the value `v` lies in memory `in_d` tells of, or is computed where it is read
/// from such a value or by a function that mentions one of `vars`.
fn touches(
    arena: &unfad_syntax::Arena,
    v: &Val,
    in_d: &dyn Fn(&Val) -> bool,
    vars: &[Var],
) -> bool {
    if in_d(v) {
        return true;
    }
    match v {
        Val::Real(_) | Val::Bool(_) => false,
        Val::Tuple(items) => items.iter().any(|x| touches(arena, x, in_d, vars)),
        Val::Arr(a) => arr_touches(arena, a, in_d, vars),
    }
}

fn arr_touches(
    arena: &unfad_syntax::Arena,
    a: &Arr,
    in_d: &dyn Fn(&Val) -> bool,
    vars: &[Var],
) -> bool {
    let src = |s: &Rc<Arr>| in_d(&Val::Arr(s.clone())) || arr_touches(arena, s, in_d, vars);
    match &a.kind {
        Kind::Mem { .. } | Kind::Fill { .. } | Kind::Iota { .. } => false,
        Kind::Map { f, src: s, .. } => arena.mentions_any(*f, vars) || src(s),
        Kind::Map2 { f, a, b, .. } => arena.mentions_any(*f, vars) || src(a) || src(b),
        Kind::Scan(scan) => {
            arena.mentions_any(scan.f, vars)
                || src(&scan.src)
                || touches(arena, &scan.template, in_d, vars)
        }
        Kind::Pad(pad) => src(&pad.src) || touches(arena, &pad.fill, in_d, vars),
    }
}

/// The function, start, source and direction of the scan `e` (`scanl f z x`, or `scanr`
/// if `right`), and whether it is `shifted`: `shift1R (scanl f z x)` or
/// `shift1L (scanr f z x)`, the scan less the state its shift drops, which is stored as
/// the scan of the source's shift ([`Translator::scan_into`]).
pub(super) fn scan_parts(
    arena: &unfad_syntax::Arena,
    e: ExprId,
) -> Option<(ExprId, ExprId, ExprId, bool, bool)> {
    match arena[e] {
        Node::Scanl(g, z, x) => Some((g, z, x, false, false)),
        Node::Scanr(g, z, x) => Some((g, z, x, true, false)),
        Node::Shift1R(s) => match arena[s] {
            Node::Scanl(g, z, x) => Some((g, z, x, false, true)),
            _ => None,
        },
        Node::Shift1L(s) => match arena[s] {
            Node::Scanr(g, z, x) => Some((g, z, x, true, true)),
            _ => None,
        },
        _ => None,
    }
}

/// A `scanl` or `scanr` that the `map` or `map2` `e` reads element for element: one of its
/// arrays, or one that a `map` or `map2` among its arrays reads so (index for index, never
/// through a shift), at most `depth` such maps down.
fn aligned_scan(arena: &unfad_syntax::Arena, e: ExprId, depth: u32) -> Option<ExprId> {
    let operands = match arena[e] {
        Node::Map(_, x) => vec![x],
        Node::Map2(_, x, y) => vec![x, y],
        _ => return None,
    };
    operands.into_iter().find_map(|o| match arena[o] {
        Node::Scanl(..) | Node::Scanr(..) => Some(o),
        Node::Shift1L(_) | Node::Shift1R(_) if scan_parts(arena, o).is_some() => Some(o),
        Node::Map(..) | Node::Map2(..) if depth > 1 => aligned_scan(arena, o, depth - 1),
        _ => None,
    })
}

/// How many times the term `sub` occurs in the tree of `e` (a shared subterm once per
/// place it is read), counting at most to 2.
fn occurrences_of(arena: &unfad_syntax::Arena, e: ExprId, sub: ExprId) -> usize {
    let mut n = 0;
    let mut stack = vec![e];
    let mut budget = 4096;
    while let Some(x) = stack.pop() {
        budget -= 1;
        if budget == 0 {
            return 2;
        }
        if x == sub {
            n += 1;
            if n >= 2 {
                return n;
            }
            continue;
        }
        arena.for_each_child(x, |c| stack.push(c));
    }
    n
}

/// Whether the term `sub` occurs in `e` (`e` itself included).
fn contains(arena: &unfad_syntax::Arena, e: ExprId, sub: ExprId) -> bool {
    let mut seen = unfad_syntax::fast_hash::FastSet::default();
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if x == sub {
            return true;
        }
        if seen.insert(x) {
            arena.for_each_child(x, |c| stack.push(c));
        }
    }
    false
}

/// The shape of the component at `path` of an element of shape `s`.
fn component<'s>(s: &'s SShape, path: &[usize]) -> Option<&'s SShape> {
    match path.split_first() {
        None => Some(s),
        Some((&k, rest)) => match s {
            SShape::Tuple(items) => component(items.get(k)?, rest),
            _ => None,
        },
    }
}
