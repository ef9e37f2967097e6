//! Indexing and its adjoint: `A[i]` reads element `i` of `A` where it is (a row of a
//! nested array is a view, an element of an unevaluated map is computed), and
//! `scatter_add(Z, I, V)` adds each `V[k]` at the position `I[k]` of a copy of `Z`, in one
//! loop over `k` that reads `I` and `V` where their elements are made. Every index is
//! checked at run time against the length of the array it indexes, so no index reads or
//! writes outside a buffer whatever its value: a read out of bounds stops the call with
//! [`Stop::Index`], a scatter's position out of bounds adds nothing (its semantics); the
//! check goes where the lengths show the index in bounds (an element of an `iota` no
//! longer than the array, as in `map (i. A[i]) (iota (len(A)))`, or a sum of such whose
//! largest value the sizes show below the length, as a window's `x[i + j]`).

use std::rc::Rc;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F64, I64};
use cranelift_codegen::ir::{InstBuilder, Value};
use unfad_syntax::{Addition, Arena, BinOp, Branch, ExprId, Node, Var};

use crate::error::{internal, JitError, JitResult};
use crate::layout::Dim;
use crate::shape::SShape;
use crate::value::{Arr, CondVal, IntVal, Kind, Place, RealVal, Val};

use super::{expect_arr, shape_arr, IntRange, IotaElement, Translator};

impl<'a> Translator<'a> {
    /// `x[i]` (the node `e`): element `i` of `x`, read in place.
    pub(super) fn emit_index(&mut self, e: ExprId, x: ExprId, i: ExprId) -> JitResult<Val> {
        let a = self.emit_arr(x)?;
        // The read's position in the source, for the error if the check fails.
        let site = self.arena.span(e);
        let i = self.emit_real(i)?;
        self.site = site;
        // A scan computed where it is read gives its elements in order only: into memory.
        let a = if matches!(a.kind, Kind::Scan(_)) {
            let p = self.alloc(&a.shape)?;
            expect_arr(self.write_arr(&a, &p)?)?
        } else {
            a
        };
        let k = self.position(i, a.len, a.stat())?;
        self.elem(&a, k)
    }

    /// The position `i` (an int carried as a real) in an array of `len` elements, after a
    /// check at run time that it is a whole number from 0 to `len - 1` (the interpreter's
    /// `position`); a failure stops the call with [`Stop::Index`].
    fn position(&mut self, i: RealVal, len: IntVal, dim: Option<Dim>) -> JitResult<IntVal> {
        if let (RealVal::Const(c), IntVal::Const(n)) = (i, len) {
            if c >= 0.0 && c.fract() == 0.0 && c < n as f64 {
                return Ok(IntVal::Const(c as i64));
            }
        }
        // An element of an `iota` no longer than the array: in bounds, no check.
        if let RealVal::Ssa(v) = i {
            if let Some(el) = self.iota_elements.get(&v).copied() {
                if Self::at_most((el.len, el.dim), (len, dim)) {
                    return Ok(IntVal::Ssa(el.k));
                }
            }
        }
        // Known as an integer (a sum of `iota` elements): only the bounds are tested, and
        // not even they where the sizes show the largest value in bounds.
        if let RealVal::Ssa(_) = i {
            if let Some(k) = self.exact_int(i) {
                if self.in_bounds_by_sizes(i, dim) {
                    return Ok(IntVal::Ssa(k));
                }
                let n = self.int_value(len);
                let ok = self.b.ins().icmp(IntCC::UnsignedLessThan, k, n);
                self.check_int_index(ok, k, len);
                return Ok(IntVal::Ssa(k));
            }
        }
        match self.position_if_inside(i, len, None) {
            Some((k, Some(ok))) => {
                let index = self.real_value(i);
                self.check_index(ok, index, len);
                Ok(k)
            }
            Some((k, None)) => Ok(k),
            // Outside at compile time: the check fails whenever this runs.
            None => {
                let never = self.b.ins().iconst(cranelift_codegen::ir::types::I8, 0);
                let index = self.real_value(i);
                self.check_index(never, index, len);
                Ok(IntVal::Const(0))
            }
        }
    }

    /// The range of the whole number `x` as a sum of `iota` elements and a constant, if it
    /// is one (see [`IntRange`]).
    pub(super) fn int_range(&self, x: RealVal) -> Option<IntRange> {
        match x {
            RealVal::Const(c) if self.is_exact_int(x) => Some(IntRange {
                terms: Vec::new(),
                constant: c as i64,
                min: c as i64,
            }),
            RealVal::Const(_) => None,
            RealVal::Ssa(v) => match self.iota_elements.get(&v) {
                Some(el) => Some(IntRange {
                    terms: vec![el.dim?],
                    constant: 0,
                    min: self.floor_of(el.k),
                }),
                None => self.int_sums.get(&v).and_then(|(_, r)| r.clone()),
            },
        }
    }

    /// Whether the sizes show the sum `i` of `iota` elements (see [`IntRange`]) in bounds
    /// for an array of exactly `dim` elements, whatever their values: at least 0, and at
    /// most the sum of the `iota`s' lengths less one each, which the linear forms of the
    /// sizes show below the array's length. A window `x[i + j]`, `i` below
    /// `len(x) - len(w) + 1` and `j` below `len(w)`, is at most `len(x) - 1`.
    ///
    /// The element of an `iota` exists only when it is not empty; its length `max(v +
    /// offset, 0)` is then `v + offset`, and a derived size `v` is then its formula (which
    /// is at least 1, not clamped at 0) when `offset <= 0`. The array's length is at least
    /// its size's form plus its offset (a derived size is its formula or more). The slack
    /// left must read only size variables (at least 0), not a formula's atom such as
    /// `(m - p) / 2`, which may be negative.
    fn in_bounds_by_sizes(&self, i: RealVal, dim: Option<Dim>) -> bool {
        use unfad_syntax::size_expr::Linear;
        let (Some(range), Some(dx)) = (self.int_range(i), dim) else {
            return false;
        };
        if range.min < 0 {
            return false;
        }
        let form = |d: &Dim, upper: bool| -> Option<Linear> {
            let Some(var) = d.var else {
                return Some(Linear::constant(i64::try_from(d.floor).ok()?));
            };
            let (f, derived) = self.size_forms.get(var as usize)?.as_ref()?;
            if upper && d.floor != 0 {
                return None;
            }
            if upper && *derived && d.offset > 0 {
                return None;
            }
            f.add(&Linear::constant(d.offset))
        };
        let terms = i64::try_from(range.terms.len()).unwrap_or(i64::MAX);
        let mut upper = Linear::constant(range.constant - terms + 1);
        for d in &range.terms {
            match form(d, true).and_then(|f| upper.add(&f)) {
                Some(u) => upper = u,
                None => return false,
            }
        }
        // Size variables are at least 0; an atom that is a formula (`(m - p) / 2`) may not
        // be, so the slack may not read one.
        form(&dx, false)
            .and_then(|lower| lower.sub(&upper))
            .is_some_and(|slack| slack.is_nonnegative(&unfad_syntax::size_expr::is_size_name))
    }

    /// Give the size variables' linear forms (see `size_forms`), in the order of the
    /// function's size variables.
    pub(crate) fn set_size_forms(&mut self, size_vars: &[std::sync::Arc<str>]) {
        use unfad_syntax::size_expr::{is_size_name, parse, Linear};
        self.size_forms = size_vars
            .iter()
            .map(|name| {
                if is_size_name(name) {
                    Some((Linear::atom(name), false))
                } else {
                    parse(name, &|n| Some(Linear::atom(n))).map(|f| (f, true))
                }
            })
            .collect();
    }

    /// The least value of the index `k` (see `floors`): 0 unless known to be more.
    pub(super) fn floor_of(&self, k: Value) -> i64 {
        self.floors.get(&k).copied().unwrap_or(0)
    }

    /// Record that the real `v` is element `k` of the `iota` `a` (see [`Translator::position`]).
    pub(super) fn note_iota_element(&mut self, v: Value, k: Value, a: &Arr) {
        let el = IotaElement {
            k,
            len: a.len,
            dim: a.stat(),
        };
        self.iota_elements.insert(v, el);
    }

    /// `scatter_add(z, is, vs)` (of shape that of `e`): `z` copied into a new buffer (a fill
    /// written out), then for `k` from 0 to `min(len is, len vs) - 1`, in order, `vs[k]`
    /// added leaf by leaf (`old + v`, as the interpreter's `add_at`) to the element at the
    /// position `is[k]`: an int (an element of the array) or a tuple of ints (`(i, j)` an
    /// element of its row `i`, and so on down). A chain of scatters (`z` one in turn, as
    /// reverse mode makes for the reads of an array) is one buffer, the innermost scatter's
    /// operand copied once and every scatter added in place, innermost first (see
    /// [`scatter_chain`]).
    pub(super) fn emit_scatter_add(
        &mut self,
        e: ExprId,
        z: ExprId,
        is: ExprId,
        vs: ExprId,
    ) -> JitResult<Val> {
        let sa = shape_arr(&self.shape(e)?)?;
        let (base, levels) = scatter_chain(self.arena, z, is, vs);
        let zv = self.emit_arr(base)?;
        let dst = self.alloc(&sa)?;
        self.scatter_add_into(zv, &levels, &dst)
    }

    /// The scatters `levels` (innermost first, see [`scatter_chain`]) written to the
    /// in-memory array `dst`, their base being the value `zv` (see
    /// [`Translator::emit_scatter_add`]). Nothing the positions and values read may live in
    /// `dst` (a fill or a new buffer is written there first).
    pub(super) fn scatter_add_into(
        &mut self,
        zv: Rc<Arr>,
        levels: &[(ExprId, ExprId)],
        dst: &Arr,
    ) -> JitResult<Val> {
        let target = expect_arr(self.write_arr(&zv, dst)?)?;
        drop(zv);
        for &(is, vs) in levels {
            self.scatter_in_place(&target, is, vs)?;
        }
        Ok(Val::Arr(target))
    }

    /// `foldl (acc, x. scatter_add(acc, is, vs)) z src` with `acc` nowhere in `is` and `vs`
    /// (an accumulation, as the optimizer makes it from the adjoints of reads in a loop; or
    /// a chain of such scatters): `z` written once to a new buffer of the fold's shape (that
    /// of `e`), or to `into`, the place the result goes, when it is such a buffer; then
    /// every element's positions and values added there in place, in order. `None` if `f`
    /// is not so.
    pub(super) fn fold_of_scatters(
        &mut self,
        e: ExprId,
        f: ExprId,
        z: ExprId,
        src: ExprId,
        into: Option<&Rc<Arr>>,
    ) -> JitResult<Option<Val>> {
        if self.arena.accumulation(f).is_none() {
            return Ok(None);
        }
        let Ok(sa) = shape_arr(&self.shape(e)?) else {
            return Ok(None);
        };
        let zv = self.emit_arr(z)?;
        // Added into where the result goes, if that is a buffer of its shape (reverse
        // mode's adjoint of an indexed array, a component of the gradient): no buffer of
        // its own, no copy at the end.
        let dst = match into {
            Some(d) if matches!(d.kind, Kind::Mem { .. }) && *d.shape == *sa => d.clone(),
            _ => self.alloc(&sa)?,
        };
        let target = expect_arr(self.write_arr(&zv, &dst)?)?;
        drop(zv);
        self.accumulate_into(&target, f, src)?;
        Ok(Some(Val::Arr(target)))
    }

    /// `foldl f z src` (the node `e`) with `f` accumulating into every component of a tuple
    /// of arrays ([`unfad_syntax::Arena::accumulations`]: sibling folds of accumulations
    /// over one array, joined by the optimizer): each component of `z` written once to its
    /// place in `into` when that is a buffer of its shape, or to a new buffer; then one
    /// loop over `src` whose elements make the shared `let`s once and add each
    /// component's values into its array in place. `None` if `f` is not so.
    pub(super) fn fold_of_scatter_tuple(
        &mut self,
        e: ExprId,
        f: ExprId,
        z: ExprId,
        src: ExprId,
        into: Option<&Place>,
    ) -> JitResult<Option<Val>> {
        let Some(acc) = self.arena.accumulations(f) else {
            return Ok(None);
        };
        let SShape::Tuple(items) = self.shape(e)? else {
            return Ok(None);
        };
        let mut shapes = Vec::with_capacity(items.len());
        for s in items.iter() {
            match s {
                SShape::Arr(a) => shapes.push(a.clone()),
                _ => return Ok(None),
            }
        }
        let zv = self.emit(z)?;
        let Val::Tuple(zs) = &zv else {
            return internal("a tuple accumulator's start is not a tuple");
        };
        if zs.len() != shapes.len() || acc.parts.len() != shapes.len() {
            return internal("a tuple accumulator's start has the wrong number of components");
        }
        let mut targets = Vec::with_capacity(shapes.len());
        for (k, sa) in shapes.iter().enumerate() {
            // Added into where the result's component goes, if that is a buffer of its
            // shape: no buffer of its own, no copy at the end.
            let dst = match into {
                Some(Place::Tuple(ps)) => match ps.get(k) {
                    Some(Place::Arr(d))
                        if matches!(d.kind, Kind::Mem { .. }) && *d.shape == **sa =>
                    {
                        d.clone()
                    }
                    _ => self.alloc(sa)?,
                },
                _ => self.alloc(sa)?,
            };
            let zk = expect_arr(zs[k].clone())?;
            targets.push(expect_arr(self.write_arr(&zk, &dst)?)?);
        }
        drop(zv);
        let x = acc.elem;
        let srcv = self.emit_arr(src)?;
        let front = super::pad::split_at_constants(self.arena, &[x], &[&srcv], f);
        let lets = acc.lets;
        let parts = acc.parts;
        self.peeled_loop(
            srcv.len,
            &[],
            front,
            &[&srcv],
            &[],
            false,
            &mut |t, i, _| {
                let xi = t.elem(&srcv, IntVal::Ssa(i))?;
                t.bind(x, xi)?;
                let r = (|| {
                    for &(v, e1) in &lets {
                        let value = t.emit(e1)?;
                        t.bind_let(v, value)?;
                    }
                    let adds: Vec<&[Addition]> = parts.iter().map(Vec::as_slice).collect();
                    if !t.joint_windows(&targets, &adds)? {
                        for (target, adds) in targets.iter().zip(&parts) {
                            t.branch_into(target, &[], adds)?;
                        }
                    }
                    Ok(())
                })();
                let bound: Vec<_> = lets.iter().map(|&(v, _)| v).collect();
                let out = Val::Tuple(targets.iter().map(|a| Val::Arr(a.clone())).collect());
                t.end_scope(&bound, &out);
                t.unbind(x);
                r?;
                Ok(Vec::new())
            },
        )?;
        Ok(Some(Val::Tuple(
            targets.into_iter().map(Val::Arr).collect(),
        )))
    }

    /// Every element of `src` through the accumulation `f`, its additions made in place in
    /// `target` (in order; a nested fold of an accumulation runs its own loop into the same
    /// array).
    fn accumulate_into(&mut self, target: &Rc<Arr>, f: ExprId, src: ExprId) -> JitResult<()> {
        let Some(acc) = self.arena.accumulation(f) else {
            return internal("an accumulation is not one");
        };
        let (x, lets, adds) = (acc.elem, acc.lets, acc.adds);
        let src = self.emit_arr(src)?;
        // A boundary treated apart (`if snd e == 0`, `e` an element of a zip with an
        // `iota`): the first iterations run apart (see `split_at_constants`).
        let front = super::pad::split_at_constants(self.arena, &[x], &[&src], f);
        self.peeled_loop(src.len, &[], front, &[&src], &[], false, &mut |t, i, _| {
            let xi = t.elem(&src, IntVal::Ssa(i))?;
            t.bind(x, xi)?;
            let r = t.branch_into(target, &lets, &adds);
            t.unbind(x);
            r?;
            Ok(Vec::new())
        })?;
        Ok(())
    }

    /// The `let`s, then the additions `adds` made in place in `target`, in order: a
    /// scatter, a nested accumulation's loop, or a conditional one (a branch per case,
    /// joining after).
    fn branch_into(
        &mut self,
        target: &Rc<Arr>,
        lets: &[(Var, ExprId)],
        adds: &[Addition],
    ) -> JitResult<()> {
        let r = (|| {
            for &(v, e1) in lets {
                let value = self.emit(e1)?;
                self.bind_let(v, value)?;
            }
            if self.joint_windows(std::slice::from_ref(target), &[adds])? {
                return Ok(());
            }
            for add in adds {
                match add {
                    &Addition::Scatter { positions, values } => {
                        self.scatter_in_place(target, positions, values)?
                    }
                    &Addition::Fold { f, over } => self.accumulate_into(target, f, over)?,
                    Addition::Branch {
                        cond,
                        then,
                        otherwise,
                    } => match self.emit_bool(*cond)? {
                        CondVal::Const(k) => {
                            let (taken, other) = if k {
                                (then, otherwise)
                            } else {
                                (otherwise, then)
                            };
                            self.skip_branch(other);
                            self.branch_into(target, &taken.lets, &taken.adds)?;
                        }
                        CondVal::Ssa(c) => {
                            let (then_b, else_b, join) = (
                                self.b.create_block(),
                                self.b.create_block(),
                                self.b.create_block(),
                            );
                            self.b.ins().brif(c, then_b, &[], else_b, &[]);
                            for (blk, b) in [(then_b, then), (else_b, otherwise)] {
                                self.switch_to(blk);
                                self.branch_into(target, &b.lets, &b.adds)?;
                                self.b.ins().jump(join, &[]);
                            }
                            self.switch_to(join);
                        }
                    },
                }
            }
            Ok(())
        })();
        let bound: Vec<_> = lets.iter().map(|&(v, _)| v).collect();
        self.end_scope(&bound, &Val::Arr(target.clone()));
        r
    }

    /// Count the uses in a branch not taken (see [`Translator::skip`]).
    fn skip_branch(&mut self, b: &Branch) {
        for &(_, e1) in &b.lets {
            self.skip(e1);
        }
        for add in &b.adds {
            match add {
                &Addition::Scatter { positions, values } => {
                    self.skip(positions);
                    self.skip(values);
                }
                &Addition::Fold { f, over } => {
                    self.skip(f);
                    self.skip(over);
                }
                Addition::Branch {
                    cond,
                    then,
                    otherwise,
                } => {
                    self.skip(*cond);
                    self.skip_branch(then);
                    self.skip_branch(otherwise);
                }
            }
        }
    }

    /// Add `vs[k]` at position `is[k]` of the in-memory array `target`, in place, for `k`
    /// from 0 to `min(len is, len vs) - 1` in order (positions outside add nothing).
    fn scatter_in_place(&mut self, target: &Rc<Arr>, is: ExprId, vs: ExprId) -> JitResult<()> {
        let target = target.clone();
        // Literals of positions and values (reverse mode's adjoint of a read, `[i]` and
        // `[v]`): each pair added as it is computed, in order, the literals never stored.
        if let (Node::Array(il), Node::Array(vl)) = (self.arena[is], self.arena[vs]) {
            let items: Vec<(ExprId, ExprId)> = self
                .arena
                .exprs(il)
                .iter()
                .copied()
                .zip(self.arena.exprs(vl).iter().copied())
                .collect();
            for (i, v) in items {
                let path = position_path(self.emit(i)?)?;
                let v = self.emit(v)?;
                self.add_at_path(&target, &path, &v)?;
            }
            return Ok(());
        }
        let is = self.emit_arr(is)?;
        let vs = self.emit_arr(vs)?;
        self.scatter_emitted(&target, &is, &vs)
    }

    /// [`Translator::scatter_in_place`] of positions and values already emitted.
    fn scatter_emitted(&mut self, target: &Rc<Arr>, is: &Rc<Arr>, vs: &Rc<Arr>) -> JitResult<()> {
        let (target, is, vs) = (target.clone(), is.clone(), vs.clone());
        let (count, _) = self.min_len(&[(is.len, is.stat()), (vs.len, vs.stat())]);
        if let Some(start) = self.contiguous_start(&is, &target, &vs)? {
            return self.add_window(&target, start, count, &vs);
        }
        self.loop_(count, false, Vec::new(), &mut |t, k, _| {
            let at = t.elem(&is, IntVal::Ssa(k))?;
            let v = t.elem(&vs, IntVal::Ssa(k))?;
            let path = position_path(at)?;
            t.add_at_path(&target, &path, &v)?;
            Ok(Vec::new())
        })?;
        Ok(())
    }

    /// The first position of `is` when its positions are contiguous, `start + j` at `j` (an
    /// `iota`, or `p + j` over one with `p` free of `j`: a read `x[p + j]` in a loop over
    /// `j`), and the scatter adds reals into an array of reals: the positions are then a
    /// window of `target` ([`Translator::add_window`]). `None` otherwise.
    fn contiguous_start(&mut self, is: &Arr, target: &Arr, vs: &Arr) -> JitResult<Option<RealVal>> {
        if !matches!(target.shape.elem, SShape::Real) || !matches!(vs.shape.elem, SShape::Real) {
            return Ok(None);
        }
        match &is.kind {
            Kind::Iota { start } => Ok(Some(RealVal::Const(*start as f64))),
            Kind::Map { f, src, .. } => {
                let Kind::Iota { start } = src.kind else {
                    return Ok(None);
                };
                let Some((ps, body)) = self.arena.lambda_parts(*f) else {
                    return Ok(None);
                };
                let [j] = ps[..] else {
                    return Ok(None);
                };
                let Node::Op2(BinOp::Add, a, b) = self.arena[body] else {
                    return Ok(None);
                };
                let other = match (self.arena[a], self.arena[b]) {
                    (Node::Var(v), _) if v == j => b,
                    (_, Node::Var(v)) if v == j => a,
                    _ => return Ok(None),
                };
                if self.arena.mentions_any(other, &[j]) {
                    return Ok(None);
                }
                let Val::Real(p) = self.emit(other)? else {
                    return Ok(None);
                };
                Ok(Some(self.binary(
                    BinOp::Add,
                    p,
                    RealVal::Const(start as f64),
                )?))
            }
            _ => Ok(None),
        }
    }

    /// The additions `parts` of one step of a fold into the tuple of arrays `targets`, if
    /// each is scatters at the positions `iota n` (contiguous from 0, see
    /// [`Translator::contiguous_start`]), over windows of the same length of arrays of the
    /// same length: one loop adds every scatter's value at each position (reverse
    /// mode's adjoints of the reads `mu[j]`, `sig[j]` in a loop over a row's positions `j`:
    /// one pass over the row where there was one per scatter; their values share what
    /// they read, `x[j] - mu[j]`). Each element of each array gets the same additions in
    /// the same order as from one loop per scatter. False, having emitted nothing, if the
    /// parts are not all such scatters; the scatters one loop each if they are but their
    /// lengths do not line up.
    fn joint_windows(&mut self, targets: &[Rc<Arr>], parts: &[&[Addition]]) -> JitResult<bool> {
        if targets.len() != parts.len() || parts.iter().map(|p| p.len()).sum::<usize>() < 2 {
            return Ok(false);
        }
        let mut scatters = Vec::new();
        for (target, adds) in targets.iter().zip(parts) {
            for add in adds.iter() {
                let &Addition::Scatter { positions, values } = add else {
                    return Ok(false);
                };
                // `iota n`: positions from 0, known before anything is emitted.
                if !matches!(self.arena[positions], Node::Iota(_)) {
                    return Ok(false);
                }
                scatters.push((target, positions, values));
            }
        }
        let mut emitted = Vec::with_capacity(scatters.len());
        for (target, positions, values) in scatters {
            let is = self.emit_arr(positions)?;
            let vs = self.emit_arr(values)?;
            emitted.push((target.clone(), is, vs));
        }
        // The common start, window length and array length, if there are.
        let mut common: Option<(f64, IntVal, IntVal)> = None;
        let mut lined_up = true;
        for (target, is, vs) in &emitted {
            // Emits nothing for an `iota`'s positions.
            let Some(RealVal::Const(start)) = self.contiguous_start(is, target, vs)? else {
                lined_up = false;
                break;
            };
            let (count, _) = self.min_len(&[(is.len, is.stat()), (vs.len, vs.stat())]);
            let this = (start, count, target.len);
            if *common.get_or_insert(this) != this {
                lined_up = false;
                break;
            }
        }
        let (Some((start, count, len)), true) = (common, lined_up) else {
            for (target, is, vs) in &emitted {
                self.scatter_emitted(target, is, vs)?;
            }
            return Ok(true);
        };
        let k = self.b.ins().iconst(I64, start as i64);
        let (lo, n) = self.window(k, len, count);
        let reads: Vec<&Rc<Arr>> = emitted.iter().map(|(_, _, vs)| vs).collect();
        self.paired_loop(IntVal::Ssa(n), Vec::new(), &reads, &[], &mut |t, i, _| {
            let j = t.b.ins().iadd(lo, i);
            let at = t.b.ins().iadd(k, j);
            for (target, _, vs) in &emitted {
                let v = t.elem(vs, IntVal::Ssa(j))?;
                let p = t.place_elem(target, IntVal::Ssa(at))?;
                t.add_to_place(&p, &v)?;
            }
            Ok(Vec::new())
        })?;
        Ok(true)
    }

    /// `target[k + j] += vs[j]` for every `j < count` with `k + j` inside `target`, `k` the
    /// int `start` (positions are ints, whole numbers): the window of a contiguous scatter
    /// ([`Translator::contiguous_start`]) added as a map adds, two elements per iteration
    /// ([`Translator::paired_loop`]), where a scatter tests and adds one position at a
    /// time. The positions outside `target` add nothing, as `scatter_add`'s, and their
    /// values are not computed.
    fn add_window(
        &mut self,
        target: &Rc<Arr>,
        start: RealVal,
        count: IntVal,
        vs: &Rc<Arr>,
    ) -> JitResult<()> {
        let k = match self.exact_int(start) {
            Some(k) => k,
            None => {
                let x = self.real_value(start);
                self.b.ins().fcvt_to_sint_sat(I64, x)
            }
        };
        let (lo, n) = self.window(k, target.len, count);
        let (target, vs) = (target.clone(), vs.clone());
        self.paired_loop(IntVal::Ssa(n), Vec::new(), &[&vs], &[], &mut |t, i, _| {
            let j = t.b.ins().iadd(lo, i);
            let at = t.b.ins().iadd(k, j);
            let v = t.elem(&vs, IntVal::Ssa(j))?;
            let p = t.place_elem(&target, IntVal::Ssa(at))?;
            t.add_to_place(&p, &v)?;
            Ok(Vec::new())
        })?;
        Ok(())
    }

    /// The part of a window of `count` positions from `k` inside an array of `len`
    /// elements: its first position in the window, `max(0, -k)`, and its length, up to
    /// `min(count, len - k)` (at least 0).
    fn window(&mut self, k: Value, len: IntVal, count: IntVal) -> (Value, Value) {
        let len = self.int_value(len);
        let count = self.int_value(count);
        let zero = self.b.ins().iconst(I64, 0);
        let minus_k = self.b.ins().ineg(k);
        let lo = self.b.ins().smax(zero, minus_k);
        let room = self.b.ins().isub(len, k);
        let hi = self.b.ins().smin(count, room);
        let n = self.b.ins().isub(hi, lo);
        (lo, self.b.ins().smax(n, zero))
    }

    /// Add `v` at the element at `path` (one index per level) of the in-memory array `a`,
    /// if every index is in bounds; a position outside the array adds nothing (the
    /// semantics of `scatter_add`: the optimizer makes such positions for loop elements
    /// that contribute nothing, and reverse mode never makes one for a read).
    fn add_at_path(&mut self, a: &Rc<Arr>, path: &[RealVal], v: &Val) -> JitResult<()> {
        let Some((&first, rest)) = path.split_first() else {
            return Err(JitError::Type("an empty position of `scatter_add`".into()));
        };
        let Some((k, inside)) = self.position_if_inside(first, a.len, a.stat()) else {
            return Ok(()); // outside at compile time
        };
        let rest = rest.to_vec();
        let v = v.clone();
        let a = a.clone();
        let mut body = |t: &mut Translator<'a>, _: Value, _: &[Value]| -> JitResult<Vec<Value>> {
            let p = t.place_elem(&a, k)?;
            if rest.is_empty() {
                t.add_to_place(&p, &v)?;
                return Ok(Vec::new());
            }
            match p {
                Place::Arr(row) => t.add_at_path(&row, &rest, &v)?,
                _ => {
                    return Err(JitError::Type(
                        "a position of `scatter_add` goes below the arrays of its target".into(),
                    ))
                }
            }
            Ok(Vec::new())
        };
        match inside {
            None => {
                let zero = self.b.ins().iconst(I64, 0);
                body(self, zero, &[])?;
            }
            // One real at a position checked at run time: added without a branch, at the
            // element's address or, outside the array, at a stack slot nothing reads (a
            // chain of reverse mode's scatters is straight-line code then).
            Some(ok) if rest.is_empty() && matches!(v, Val::Real(_)) => {
                let p = self.place_elem(&a, k)?;
                let Place::Real(at) = p else {
                    return Err(JitError::Type(
                        "`scatter_add` adds a real to an element that is not one".into(),
                    ));
                };
                let slot = self.discard_slot();
                let nowhere = self.b.ins().stack_addr(I64, slot, 0);
                let addr = self.b.ins().select(ok, at, nowhere);
                self.add_to_place(&Place::Real(addr), &v)?;
            }
            Some(ok) => {
                let once = self.b.ins().uextend(I64, ok);
                self.at_most_once(IntVal::Ssa(once), Vec::new(), &mut body)?;
            }
        }
        Ok(())
    }

    /// The position `i` (an int carried as a real) in an array of `len` elements, and the
    /// condition that it is a whole number from 0 to `len - 1` (`None`: known at compile
    /// time to hold: also where the sizes show it in bounds for an array of exactly `dim`
    /// elements). `None` altogether when it is known to fail.
    fn position_if_inside(
        &mut self,
        i: RealVal,
        len: IntVal,
        dim: Option<Dim>,
    ) -> Option<(IntVal, Option<Value>)> {
        if let RealVal::Const(c) = i {
            let whole = c >= 0.0 && c.fract() == 0.0;
            match len {
                IntVal::Const(n) if whole && c < n as f64 => {
                    return Some((IntVal::Const(c as i64), None))
                }
                _ if !whole || c >= i64::MAX as f64 => return None,
                // A whole constant against a length known at run time: the bounds only.
                IntVal::Ssa(n) => {
                    let k = c as i64;
                    let inside = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThan, n, k);
                    return Some((IntVal::Const(k), Some(inside)));
                }
                IntVal::Const(_) => {}
            }
        }
        // An element of an `iota` or a sum of such and whole constants, computed as an
        // integer too: only the bounds are tested (unsigned, a negative sum is beyond
        // every length).
        if let RealVal::Ssa(_) = i {
            if let Some(k) = self.exact_int(i) {
                if self.in_bounds_by_sizes(i, dim) {
                    return Some((IntVal::Ssa(k), None));
                }
                let n = self.int_value(len);
                let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, k, n);
                return Some((IntVal::Ssa(k), Some(inside)));
            }
        }
        let x = self.real_value(i);
        // The integer part (saturated; a NaN is 0), which must give back `x` exactly.
        let k = self.b.ins().fcvt_to_sint_sat(I64, x);
        let back = self.b.ins().fcvt_from_sint(F64, k);
        let whole = self.b.ins().fcmp(FloatCC::Equal, back, x);
        // Unsigned, a negative position is beyond every length.
        let inside = match len {
            IntVal::Const(n) => self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, k, n),
            IntVal::Ssa(n) => self.b.ins().icmp(IntCC::UnsignedLessThan, k, n),
        };
        let ok = self.b.ins().band(whole, inside);
        let k = match i {
            // A whole constant (checked against a length known only at run time).
            RealVal::Const(c) => IntVal::Const(c as i64),
            _ => IntVal::Ssa(k),
        };
        Some((k, Some(ok)))
    }

    /// Add `v` leaf by leaf to the value at `p` (in memory), in place: each real becomes
    /// `old + v`; arrays are added element by element over the shorter length.
    fn add_to_place(&mut self, p: &Place, v: &Val) -> JitResult<()> {
        match (p, v) {
            (Place::Real(addr), Val::Real(x)) => {
                let old = RealVal::Ssa(self.load(*addr));
                let sum = self.binary(BinOp::Add, old, *x)?;
                let sum = self.real_value(sum);
                self.store(sum, *addr);
                Ok(())
            }
            (Place::Tuple(ps), Val::Tuple(vs)) if ps.len() == vs.len() => {
                for (p, v) in ps.iter().zip(vs.iter()) {
                    self.add_to_place(p, v)?;
                }
                Ok(())
            }
            (Place::Arr(a), Val::Arr(b)) => {
                let (count, _) = self.min_len(&[(a.len, a.stat()), (b.len, b.stat())]);
                self.loop_(count, false, Vec::new(), &mut |t, j, _| {
                    let x = t.elem(b, IntVal::Ssa(j))?;
                    let q = t.place_elem(a, IntVal::Ssa(j))?;
                    t.add_to_place(&q, &x)?;
                    Ok(Vec::new())
                })?;
                Ok(())
            }
            (Place::Reg, _) => Err(JitError::Internal(
                "`scatter_add` adds to a place in registers".into(),
            )),
            _ => Err(JitError::Type(
                "`scatter_add` adds a value of another shape".into(),
            )),
        }
    }
}

/// The scatters of `scatter_add(z, is, vs)` and of the scatters it adds to, down to the
/// first operand that is not one: that base, and the positions and values of each scatter,
/// innermost (applied first) first. The chain adds in place into one buffer: an inner
/// scatter's sum is not made apart (a term that reads it elsewhere makes its own).
pub(super) fn scatter_chain(
    arena: &Arena,
    z: ExprId,
    is: ExprId,
    vs: ExprId,
) -> (ExprId, Vec<(ExprId, ExprId)>) {
    let mut levels = vec![(is, vs)];
    let mut base = z;
    while let Node::ScatterAdd(z2, is2, vs2) = arena[base] {
        levels.push((is2, vs2));
        base = z2;
    }
    levels.reverse();
    (base, levels)
}

/// A position of `scatter_add` as one index per level: an int, or a tuple of ints.
fn position_path(at: Val) -> JitResult<Vec<RealVal>> {
    match at {
        Val::Real(i) => Ok(vec![i]),
        Val::Tuple(items) => items
            .iter()
            .map(|i| match i {
                Val::Real(i) => Ok(*i),
                _ => Err(JitError::Type(
                    "a position of `scatter_add` holds a non-int".into(),
                )),
            })
            .collect(),
        _ => Err(JitError::Type(
            "a position of `scatter_add` is not an int or a tuple of ints".into(),
        )),
    }
}
