//! Folds and scans: `reduce`/`foldl` with the accumulator in registers (its arrays
//! alternating between two buffers, or in one buffer updated in place), `max`/`min`
//! reductions in lanes, `scanl`/`scanr` written to memory, and shifted scans computed
//! where they are read.

use std::rc::Rc;

use cranelift_codegen::ir::types::I8;
use cranelift_codegen::ir::{InstBuilder, Value};
use unfad_syntax::{BinOp, ExprId, Node, Var};

use crate::error::{internal, JitResult, Retry};
use crate::layout::Dim;
use crate::shape::lambda;
use crate::value::{no_holds, Arr, Holds, IntVal, Kind, Place, Scan, Val};

use super::fusion::FoldPrep;
use super::state::ssa_ints;
use super::{expect_arr, shape_arr, Translator};

impl<'a> Translator<'a> {
    /// `reduce f z x` (`reduce` set) / `foldl f z x`: the accumulator in registers, its
    /// arrays alternating between two buffers (or in one, see [`Translator::acc_places`]);
    /// a `reduce` of `+`, `*`, `max` or `min` with several accumulators. `into`: the place
    /// the result goes, given only for a fold that [adds in place](Self::adds_in_place) or
    /// a fold of scatters, whose accumulator is then that place itself.
    pub(super) fn emit_fold(
        &mut self,
        e: ExprId,
        f: ExprId,
        z: ExprId,
        x: ExprId,
        reduce: bool,
        into: Option<&Place>,
    ) -> JitResult<Val> {
        let (ps, body) = lambda(self.arena, f, 2, "a fold")?;
        let (pa, px) = (ps[0], ps[1]);
        let acc_shape = self.an.var_shape(pa)?.clone();
        if !reduce {
            let place = match into {
                Some(Place::Arr(d)) => Some(d),
                _ => None,
            };
            if let Some(v) = self.fold_of_scatters(e, f, z, x, place)? {
                return Ok(v);
            }
            if let Some(v) = self.fold_of_scatter_tuple(e, f, z, x, into)? {
                return Ok(v);
            }
        }
        let zv = self.emit(z)?;
        let src = self.emit_arr(x)?;
        if reduce && self.lane_of(pa, px, body).is_some() {
            // `+`, `*`, `max` or `min`: with several accumulators (see `blocked`).
            let n = src.len;
            let fold = FoldPrep {
                pa,
                px,
                body,
                shape: acc_shape,
                zv,
                src,
                reduce,
            };
            return Ok(self
                .fused_loop(n, &[&fold], &[], &super::fusion::Additions::default())?
                .remove(0));
        }
        if !acc_shape.has_arrays() {
            let mut init = Vec::new();
            self.flatten(&zv, &mut init)?;
            let holds = no_holds();
            let out = self.loop_(src.len, false, init, &mut |t, i, cur| {
                let acc = t.rebuild(&zv, &acc_shape, &mut ssa_ints(cur).iter(), &holds)?;
                let xi = t.elem(&src, IntVal::Ssa(i))?;
                t.bind(pa, acc)?;
                t.bind(px, xi)?;
                let r = t.emit(body);
                t.unbind(pa);
                t.unbind(px);
                let mut out = Vec::new();
                t.flatten(&r?, &mut out)?;
                Ok(out)
            })?;
            return self.rebuild(&zv, &acc_shape, &mut ssa_ints(&out).iter(), &holds);
        }
        let (pa_place, pb_place, mixed) = match into {
            // Added into where the result goes: no buffer of its own, no copy at the end.
            Some(p) => (p.clone(), p.clone(), false),
            None => self.acc_places(pa, body, &acc_shape, true)?,
        };
        // Every state lies in one of the two buffers: `write` leaves its arrays there.
        let group = self.group_roots(&[&pa_place, &pb_place]);
        let v0 = self.write(&zv, &pa_place)?;
        drop(zv);
        let holds = {
            let mut h = Vec::new();
            Self::place_holds(&pa_place, &mut h);
            Self::place_holds(&pb_place, &mut h);
            Holds::from(h)
        };
        // (Mixed places: the components in one buffer stay at its address, the others'
        // addresses alternate and are carried.)
        let at_base = mixed || super::state::same_place(&pa_place, &pb_place);
        let (fixed, carried) =
            self.loop_state(&v0, &[&pa_place, &pb_place], &acc_shape, at_base)?;
        let mut init = vec![self.b.ins().iconst(I8, 0)];
        init.extend(carried);
        let out = self.loop_(src.len, false, init, &mut |t, i, cur| {
            let phase = cur[0];
            let slots = fixed.slots(&cur[1..])?;
            let acc = t.rebuild(&v0, &acc_shape, &mut slots.iter(), &holds)?;
            t.share_root(&acc, group);
            // Phase 0: the accumulator is in the first buffer, the next one goes to the second.
            let other = t.select_place(phase, &pa_place, &pb_place)?;
            t.share_place_root(&other, group);
            let xi = t.elem(&src, IntVal::Ssa(i))?;
            t.bind(pa, acc)?;
            t.bind(px, xi)?;
            // Components updated in place are computed where they are (a scatter adds
            // into its own buffer); the others go to the other buffer.
            let nv = if mixed {
                t.own_accumulators.push(pa);
                let nv = t.emit_into(body, &other);
                t.own_accumulators.pop();
                nv
            } else {
                t.emit(body).and_then(|r| t.write(&r, &other))
            };
            t.unbind(pa);
            t.unbind(px);
            let nv = nv?;
            let mut out = vec![t.b.ins().bxor_imm_s(phase, 1)];
            out.extend(t.carry(&nv, &fixed)?);
            Ok(out)
        })?;
        let slots = fixed.slots(&out[1..])?;
        let result = self.rebuild(&v0, &acc_shape, &mut slots.iter(), &holds)?;
        self.share_root(&result, group);
        Ok(result)
    }

    /// True if the fold with function `f` has arrays in its accumulator and updates them in
    /// place ([`Translator::in_place_update`]): its accumulator can then be the place its
    /// result goes.
    pub(super) fn adds_in_place(&self, f: ExprId) -> JitResult<bool> {
        let Some((ps, body)) = self.arena.lambda_parts(f) else {
            return Ok(false);
        };
        let [pa, _] = ps else {
            return Ok(false);
        };
        let Ok(shape) = self.an.var_shape(*pa) else {
            return Ok(false);
        };
        Ok(shape.has_arrays() && self.in_place_update(*pa, &mut Vec::new(), body)?)
    }

    /// The two places the arrays of a fold's accumulator alternate between: two buffers,
    /// or one buffer twice when the fold's function updates the accumulator in place
    /// ([`Translator::in_place_update`], as the adjoints' sums `map2 + s t` do). One
    /// buffer then holds the accumulator from the first element to the last, as the
    /// accumulators of hand-written code do.
    ///
    /// A tuple accumulator some of whose components are updated in place and others not
    /// (reverse mode's joint backward fold: the adjoint of the accumulator, made anew at
    /// every step, beside the adjoints of the arrays the steps read, added into at a few
    /// positions) gets, if `mixed` allows, one buffer for each component that
    /// [`Translator::own_update`] allows and two for the others; the third result is then
    /// true, and the fold's function must be computed into the second place (see
    /// [`Translator::emit_fold`]).
    pub(super) fn acc_places(
        &mut self,
        pa: Var,
        body: ExprId,
        acc_shape: &crate::shape::SShape,
        mixed: bool,
    ) -> JitResult<(Place, Place, bool)> {
        let first = self.acc_place(acc_shape)?;
        if self.in_place_update(pa, &mut Vec::new(), body)? {
            return Ok((first.clone(), first, false));
        }
        let own = if mixed {
            self.own_updates(pa, body)?
        } else {
            None
        };
        if let (Some(own), Place::Tuple(firsts), crate::shape::SShape::Tuple(shapes)) =
            (&own, &first, acc_shape)
        {
            let mut seconds = Vec::with_capacity(firsts.len());
            for (k, (p, s)) in firsts.iter().zip(shapes.iter()).enumerate() {
                seconds.push(if own[k] {
                    p.clone()
                } else {
                    self.acc_place(s)?
                });
            }
            return Ok((first, Place::Tuple(seconds.into()), true));
        }
        let second = self.acc_place(acc_shape)?;
        Ok((first, second, false))
    }

    /// For a fold's function `(acc, x. lets in (e_0, ..., e_m))` over a tuple accumulator:
    /// which components may stay in one buffer, `None` if none holding arrays may. Component
    /// `k` may if `e_k` updates it where it is ([`Translator::own_update`]) and nothing
    /// else reads it: no `let`, no other component (so that writing it early or late
    /// changes nothing that is read).
    fn own_updates(&self, pa: Var, body: ExprId) -> JitResult<Option<Vec<bool>>> {
        let arena = self.arena;
        let mut lets = Vec::new();
        let mut inner = body;
        while let Node::Let(_, e1, rest) = arena[inner] {
            lets.push(e1);
            inner = rest;
        }
        let Node::Tuple(l) = arena[inner] else {
            return Ok(None);
        };
        let items = arena.exprs(l);
        let crate::shape::SShape::Tuple(shapes) = self.an.var_shape(pa)? else {
            return Ok(None);
        };
        if shapes.len() != items.len() {
            return Ok(None);
        }
        let mut own = vec![false; items.len()];
        for (k, &item) in items.iter().enumerate() {
            if !shapes[k].has_arrays() || !self.own_update(pa, k as u32, item)? {
                continue;
            }
            let read_elsewhere = lets
                .iter()
                .any(|&e| reads_component(arena, e, pa, k as u32))
                || items
                    .iter()
                    .enumerate()
                    .any(|(j, &e)| j != k && reads_component(arena, e, pa, k as u32));
            own[k] = !read_elsewhere;
        }
        Ok(own.contains(&true).then_some(own))
    }

    /// Whether `e` computes component `k` of the accumulator `acc` where that component
    /// is: as [`Translator::in_place_update`] allows, or as a chain of scatters onto it
    /// whose positions and values do not read it (each addition then changes only the
    /// position it adds to, after its value is computed).
    fn own_update(&self, acc: Var, k: u32, e: ExprId) -> JitResult<bool> {
        let arena = self.arena;
        if let Node::ScatterAdd(z, is, vs) = arena[e] {
            let (base, levels) = super::index::scatter_chain(arena, z, is, vs);
            return Ok(is_component(arena, base, acc, &[k])
                && levels.iter().all(|&(is, vs)| {
                    !reads_component(arena, is, acc, k) && !reads_component(arena, vs, acc, k)
                }));
        }
        self.in_place_update(acc, &mut vec![k], e)
    }

    /// True if `e`, written over the component at `path` of the accumulator `acc`, reads
    /// `acc` only at the positions it writes, each before writing it: `e` reads no
    /// accumulator at all, or is that component itself, or a tuple of such terms (one per
    /// component), or a `map`/`map2` over that component (and arrays that do not read the
    /// accumulator) whose function's result is again such a term over the element, or a
    /// value without arrays (read into registers before it is stored). Element `j` of the
    /// result then depends on element `j` of the component only, and writing the result
    /// element by element over the component computes what writing it elsewhere would.
    fn in_place_update(&self, acc: Var, path: &mut Vec<u32>, e: ExprId) -> JitResult<bool> {
        let arena = self.arena;
        if !arena.mentions_any(e, &[acc]) || is_component(arena, e, acc, path) {
            return Ok(true);
        }
        // Whether the component at `path` holds arrays (`None` if its shape is unknown).
        let component = |t: &Self, path: &[u32]| -> Option<bool> {
            let mut s = t.an.var_shape(acc).ok()?;
            for &k in path {
                s = match s {
                    crate::shape::SShape::Tuple(items) => items.get(k as usize)?,
                    _ => return None,
                };
            }
            Some(s.has_arrays())
        };
        match component(self, path) {
            None => return Ok(false),
            // A value in registers: read whole before it is written.
            Some(false) => return Ok(true),
            Some(true) => {}
        }
        match arena[e] {
            Node::Tuple(items) => {
                for (k, &item) in arena.exprs(items).iter().enumerate() {
                    path.push(k as u32);
                    let ok = self.in_place_update(acc, path, item)?;
                    path.pop();
                    if !ok {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Node::Map(f, a) => self.elementwise(acc, path, f, &[a]),
            Node::Map2(f, a, b) => self.elementwise(acc, path, f, &[a, b]),
            _ => Ok(false),
        }
    }

    /// For [`Translator::in_place_update`]: `map`/`map2 f args` over the component at `path`
    /// of `acc` (one of `args`, the others not reading `acc`), with `f` updating that
    /// operand's element in place and reading `acc` nowhere else.
    fn elementwise(&self, acc: Var, path: &[u32], f: ExprId, args: &[ExprId]) -> JitResult<bool> {
        let arena = self.arena;
        let Some((ps, body)) = arena.lambda_parts(f) else {
            return Ok(false);
        };
        if ps.len() != args.len() || arena.mentions_any(body, &[acc]) {
            return Ok(false);
        }
        let ps = ps.to_vec();
        let mut over = None;
        for (k, &a) in args.iter().enumerate() {
            if is_component(arena, a, acc, path) && over.is_none() {
                over = Some(ps[k]);
            } else if arena.mentions_any(a, &[acc]) {
                return Ok(false);
            }
        }
        match over {
            Some(p) => self.in_place_update(p, &mut Vec::new(), body),
            None => Ok(false),
        }
    }

    /// `Some(max)` or `Some(min)` if `body` is `max(pa, px)` or `min(pa, px)` (either order).
    pub(super) fn extremum(&self, pa: Var, px: Var, body: ExprId) -> Option<BinOp> {
        let arena = self.arena;
        match arena[body] {
            Node::Op2(op @ (BinOp::Max | BinOp::Min), a, b) => match (arena[a], arena[b]) {
                (Node::Var(x), Node::Var(y)) if (x, y) == (pa, px) || (x, y) == (px, pa) => {
                    Some(op)
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// `scanl f z x` (or `scanr`) written to `d`. `nonempty`: the code that runs this has
    /// made sure that `d` has a row (its length is then not checked again). `shifted`: the
    /// scan of `shift1R x` instead (of `shift1L x` for a `scanr`), which is
    /// `shift1R (scanl f z x)` (`shift1L (scanr f z x)`) wherever `x` has an element: the
    /// scan without the state its shift drops, written where the shift goes.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scan_into(
        &mut self,
        f: ExprId,
        z: ExprId,
        x: ExprId,
        d: &Arr,
        right: bool,
        nonempty: bool,
        shifted: bool,
    ) -> JitResult<Val> {
        let (ps, body) = lambda(self.arena, f, 2, "a scan")?;
        let (pa, px) = if right {
            (ps[1], ps[0])
        } else {
            (ps[0], ps[1])
        };
        let zv = self.emit(z)?;
        let mut src = self.emit_arr(x)?;
        if shifted {
            src = self.shift(&src, right)?;
        }
        if right && reads_scan(&src) {
            // Read from the last element first: scans computed where they are read cannot.
            src = expect_arr(self.force(Val::Arr(src))?)?;
        }
        let room = match d.stat() {
            Some(dd) => (self.dim(dd.dec()), Some(dd.dec())),
            None => (self.dec(d.len), None),
        };
        let (count, count_dim) = self.min_len(&[(src.len, src.stat()), room]);
        // The first accumulator goes to row 0 (or row `count`, at most `d.len - 1` then): a
        // scan's result is never empty, and `d` must have a row for it.
        if !nonempty {
            self.check_nonempty(d)?;
        }
        let first = if right { count } else { IntVal::Const(0) };
        let dst = self.place_elem(d, first)?;
        let v0 = self.write(&zv, &dst)?;
        drop(zv);
        let acc_shape = self.an.var_shape(pa)?.clone();
        // Every state is a row of `d`: its strides and inner lengths stay.
        let (fixed, init) = self.loop_state(&v0, &[&dst], &acc_shape, false)?;
        let holds = {
            let mut h = Vec::new();
            Self::holds_of(&v0, &mut h);
            Holds::from(h)
        };
        self.loop_(count, right, init, &mut |t, i, cur| {
            let slots = fixed.slots(cur)?;
            let acc = t.rebuild(&v0, &acc_shape, &mut slots.iter(), &holds)?;
            let xi = t.elem(&src, IntVal::Ssa(i))?;
            t.bind(pa, acc)?;
            t.bind(px, xi)?;
            let at = if right {
                IntVal::Ssa(i)
            } else {
                IntVal::Ssa(t.b.ins().iadd_imm_s(i, 1))
            };
            let dst = t.place_elem(d, at)?;
            // The result is written while the parameters are bound: an unevaluated map in
            // it may refer to them.
            let nv = t.emit(body).and_then(|r| t.write(&r, &dst));
            t.unbind(pa);
            t.unbind(px);
            t.carry(&nv?, &fixed)
        })?;
        let n_dim = count_dim.map(Dim::inc);
        let n = match n_dim {
            Some(nd) => self.dim(nd),
            None => self.iadd(count, 1),
        };
        self.pad(d, n, n_dim)?;
        self.view(d, n, n_dim)
    }

    /// `shift1R (scanl f z x)` or `shift1L` of it, with an accumulator of reals, as a
    /// [`Scan`] (`None` for other shifts).
    pub(super) fn lazy_scan(&mut self, e: ExprId, x: ExprId, left: bool) -> JitResult<Option<Val>> {
        let Node::Scanl(f, z, src) = self.arena[x] else {
            return Ok(None);
        };
        if self.eager_scans {
            return Ok(None);
        }
        let (ps, _) = lambda(self.arena, f, 2, "a scan")?;
        let acc = self.an.var_shape(ps[0])?.clone();
        if acc.has_arrays() {
            return Ok(None);
        }
        let sa = shape_arr(&self.shape(e)?)?;
        let template = self.emit(z)?;
        let src = self.emit_arr(src)?;
        let mut init = Vec::new();
        self.flatten(&template, &mut init)?;
        let state = init
            .into_iter()
            .map(|v| {
                let ty = self.b.func.dfg.value_type(v);
                let var = self.b.declare_var(ty);
                self.b.def_var(var, v);
                var
            })
            .collect();
        let claim = src.stat();
        Ok(Some(Val::Arr(self.arr(
            src.len,
            &sa,
            claim,
            Kind::Scan(Rc::new(Scan {
                f,
                src,
                state,
                template,
                acc,
                after: left,
                depth: self.frames.len(),
                read: Default::default(),
            })),
        ))))
    }

    /// Element `i` of a scan computed where it is read: the accumulator before the step,
    /// or after it; the step itself updates the state for the next element.
    pub(super) fn scan_step(&mut self, scan: &Scan, i: IntVal) -> JitResult<Val> {
        self.refuse_scan_in_batch()?;
        if scan.read.replace(true) {
            return self.read_twice("a scan computed where it is read");
        }
        let in_order = match self.counters.last() {
            Some(&Some(c)) => i == IntVal::Ssa(c) && self.counters.len() == scan.depth + 1,
            _ => false,
        };
        if !in_order {
            self.retry = Some(Retry::ScanOrder);
            return internal("a scan computed where it is read is not read in order");
        }
        let cur: Vec<Value> = scan.state.iter().map(|&v| self.b.use_var(v)).collect();
        let acc = self.rebuild(
            &scan.template,
            &scan.acc,
            &mut ssa_ints(&cur).iter(),
            &no_holds(),
        )?;
        let x = self.elem(&scan.src, i)?;
        let (ps, body) = lambda(self.arena, scan.f, 2, "a scan")?;
        self.bind(ps[0], acc.clone())?;
        self.bind(ps[1], x)?;
        let next = self.emit(body);
        self.unbind(ps[0]);
        self.unbind(ps[1]);
        let next = next?;
        let mut vals = Vec::with_capacity(scan.state.len());
        self.flatten(&next, &mut vals)?;
        if vals.len() != scan.state.len() {
            return internal("a scan's step changes the shape of its accumulator");
        }
        for (&var, v) in scan.state.iter().zip(vals) {
            self.b.def_var(var, v);
        }
        Ok(if scan.after { next } else { acc })
    }
}

/// Whether reading the elements of `a` computes a [`Scan`].
pub(super) fn reads_scan(a: &Arr) -> bool {
    match &a.kind {
        Kind::Scan(_) => true,
        Kind::Map { src, .. } => reads_scan(src),
        Kind::Pad(p) => reads_scan(&p.src),
        Kind::Map2 { a, b, .. } => reads_scan(a) || reads_scan(b),
        Kind::Mem { .. } | Kind::Fill { .. } | Kind::Iota { .. } => false,
    }
}

/// True if `e` is `acc` projected along `path` (`acc` itself for an empty path).
/// Whether `e` may read component `k` of the tuple `acc`: it mentions `acc` other than
/// as `acc.j` for `j != k`.
fn reads_component(arena: &unfad_syntax::Arena, e: ExprId, acc: Var, k: u32) -> bool {
    if !arena.mentions_any(e, &[acc]) {
        return false;
    }
    match arena[e] {
        Node::Proj(j, inner) if arena[inner] == Node::Var(acc) => j == k,
        Node::Var(v) => v == acc,
        _ => arena
            .children(e)
            .into_iter()
            .any(|c| reads_component(arena, c, acc, k)),
    }
}

fn is_component(arena: &unfad_syntax::Arena, e: ExprId, acc: Var, path: &[u32]) -> bool {
    match (arena[e], path.split_last()) {
        (Node::Var(v), None) => v == acc,
        (Node::Proj(k, inner), Some((&last, rest))) => {
            k == last && is_component(arena, inner, acc, rest)
        }
        _ => false,
    }
}
