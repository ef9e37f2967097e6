//! Loop fusion across bindings and tuple components: a stored map folded in the loop that
//! stores it, a `let`-bound component computed where the result goes, the components of a
//! tuple that loop over the same length run as one loop, and a map written by its body
//! straight into its destination.

use std::rc::Rc;

use cranelift_codegen::ir::types::I8;
use cranelift_codegen::ir::{InstBuilder, Value};
use unfad_syntax::{Arena, ExprId, Node, Var};

use crate::error::{internal, JitError, JitResult};
use crate::layout::Dim;
use crate::shape::{lambda, SShape};
use crate::value::{no_holds, Arr, Holds, IntVal, Kind, Place, RealVal, Val};

use super::blocked::Lane;
use super::memory::with_column;
use super::state::{ssa_ints, Fixed};
use super::write::in_place;
use super::Translator;

/// A fold with a scalar accumulator, ready to run in a (fused) loop.
pub(super) struct FoldPrep {
    pub pa: Var,
    pub px: Var,
    pub body: ExprId,
    /// The accumulator's shape.
    pub shape: SShape,
    pub zv: Val,
    pub src: Rc<Arr>,
    /// A `reduce` (which may run blocked), not a `foldl`.
    pub reduce: bool,
}

/// What follows the folds that [`Translator::stored_then_folded`] runs in the loop storing
/// the map they fold: the variables of the `let`s that bind the first folds, in order,
/// then the rest of the term.
struct AfterFold {
    lets: Vec<Var>,
    tail: Tail,
    /// Folds inside the tail whose results are computed in the loop (after the others).
    embedded: Vec<ExprId>,
}

/// The term after the `let`s of [`AfterFold`].
enum Tail {
    /// Any term, which reads only the columns the folds leave.
    Rest(ExprId),
    /// The tuple `items`, the result, whose components `ks` are the remaining folds.
    Components(Vec<ExprId>, Vec<usize>),
}

/// The accumulator of one fold run in the loop that stores the map it folds.
struct FoldAcc {
    /// Two buffers the accumulator alternates between, when it holds arrays (the same
    /// buffer twice when it is updated in place, see `Translator::acc_places`).
    buffers: Option<(Place, Place)>,
    /// The initial accumulator, whose structure the loop's state is rebuilt into.
    start: Val,
    holds: Holds,
    fixed: Fixed,
    /// How many values of the loop's state are this accumulator's.
    width: usize,
    /// Those values at the start (moved into the loop's initial state).
    carried: Vec<Value>,
}

/// A component of a tuple whose loop may be fused with its siblings'.
enum Prep {
    Fold(FoldPrep),
    /// An array written element by element: `count` elements of `a` into `d`.
    Array {
        a: Rc<Arr>,
        d: Rc<Arr>,
        count: IntVal,
        dim: Option<Dim>,
    },
    /// An array added element by element into an accumulator (its place adds, see
    /// `Place::AddTo`): element `i` of `a` added to element `i` of `d`.
    Add {
        a: Rc<Arr>,
        d: Rc<Arr>,
        count: IntVal,
    },
    /// A sum of arrays updated in place (`reduce (s, t. map2 + s t) z src`, see
    /// `sums_elementwise`) whose accumulator is its place `acc`, which holds `z` already:
    /// each element of `src` added to all of `acc`, in order.
    Sum {
        src: Rc<Arr>,
        acc: Rc<Arr>,
        /// A map of each element alone applied to the sum in place after the loop (`map
        /// (s. c * s) (reduce ...)`, a gradient scaled by the result's constant factor).
        then: Option<ExprId>,
    },
    /// Not a loop: already written.
    Done(Val),
}

/// The additions a fused loop makes per element: `(a, d)`, element `i` of `a` added to
/// element `i` of `d` ([`Prep::Add`]); `(src, acc)`, element `i` of `src` added to `acc`
/// ([`Prep::Sum`]).
#[derive(Default)]
pub(super) struct Additions<'p> {
    pub by_index: Vec<(&'p Rc<Arr>, &'p Rc<Arr>)>,
    pub sums: Vec<(&'p Rc<Arr>, &'p Rc<Arr>)>,
}

impl<'a> Translator<'a> {
    /// `let x = v in let y = fold f z x in rest` where the map `v` must be stored (it is read
    /// again later): one loop computes each element, stores it and folds it, where storing
    /// `x` and then folding it would take two (`let E = map (t. exp(t - m)) A in let s =
    /// sum(E)`). Also `let y = fold f z (map (t. π_path t) x) in rest` where `rest` reads
    /// only other components of the elements (`map (t. π_q t) x`): the component folded is
    /// then not kept (one element's room, which every index reuses), and the accumulator
    /// may hold arrays. Reverse mode's combined pass makes that shape: per element, an
    /// operand's adjoint, kept, and the contributions to a captured array's adjoint,
    /// summed. The folds may also be components of the tuple `e2` (`(value, map (t. π_q t)
    /// x, fold f z (map (t. π_p t) x), fold g w (map (t. π_r t) x))`, a gradient's result),
    /// each of its own column, which the other components do not read: all run in the one
    /// loop. `None` (nothing emitted) for other terms.
    pub(super) fn stored_then_folded(
        &mut self,
        x: Var,
        v: &Val,
        e2: ExprId,
        into: Option<&Place>,
        scratch: Option<&Rc<Arr>>,
    ) -> JitResult<Option<Val>> {
        let arena = self.arena;
        let Val::Arr(a) = v else {
            return Ok(None);
        };
        if !matches!(a.kind, Kind::Map { .. } | Kind::Map2 { .. }) || self.an.lazy_ok(x) {
            return Ok(None);
        }
        // The folds bound by the chain of `let`s that starts `e2`: one of the whole
        // elements, or several of columns apart from one another's, none reading another's
        // result (they all run in the one loop).
        let fold_of = |e: ExprId| match arena[e] {
            Node::Reduce(_, z, src) | Node::Foldl(_, z, src)
                if !arena.free_vars(z).contains(&x) =>
            {
                if arena[src] == Node::Var(x) {
                    Some(Vec::new())
                } else {
                    column_of(arena, src, x)
                }
            }
            _ => None,
        };
        let mut lets: Vec<(Var, ExprId, Vec<usize>)> = Vec::new();
        // The term after each `let` of the chain.
        let mut rests: Vec<ExprId> = Vec::new();
        let mut cur = e2;
        while let Node::Let(y, fold, rest) = arena[cur] {
            let Some(path) = fold_of(fold) else {
                break;
            };
            let free = arena.free_vars(fold);
            let fits = !lets.iter().any(|(v, ..)| free.contains(v))
                && lets.iter().all(|(_, _, q)| {
                    !path.is_empty()
                        && !q.is_empty()
                        && !q.starts_with(&path)
                        && !path.starts_with(q)
                });
            if !fits {
                break;
            }
            lets.push((y, fold, path));
            rests.push(rest);
            cur = rest;
        }
        // The longest prefix of the chain after which the term reads only the columns its
        // folds leave (a single fold of whole elements leaves them all stored).
        while let Some(&rest) = rests.last() {
            let whole = lets.len() == 1 && lets[0].2.is_empty();
            if whole
                || lets
                    .iter()
                    .all(|(_, _, p)| reads_other_columns(arena, rest, x, p))
            {
                cur = rest;
                break;
            }
            lets.pop();
            rests.pop();
            cur = rests.last().copied().unwrap_or(e2);
        }
        // A whole-element fold's `rest` is not checked against columns: it reads `x` as
        // the stored map (the elements are all stored).
        let whole = lets.first().is_some_and(|(_, _, p)| p.is_empty());
        let bound: Vec<Var> = lets.iter().map(|(y, ..)| *y).collect();
        let taken: Vec<Vec<usize>> = lets.iter().map(|(_, _, p)| p.clone()).collect();
        let tail_folds = match arena[cur] {
            Node::Tuple(l) if !whole => {
                let items = arena.exprs(l).to_vec();
                // The components that fold a column of `x` each, apart from one another's
                // and from the `let`s' columns, which no other component reads and which
                // read no `let`'s result.
                let folded_column = |e: ExprId| match fold_of(e) {
                    Some(p) if !p.is_empty() => {
                        let free = arena.free_vars(e);
                        (!bound.iter().any(|v| free.contains(v))).then_some(p)
                    }
                    _ => None,
                };
                let mut chosen: Vec<(usize, Vec<usize>)> = Vec::new();
                for (k, &item) in items.iter().enumerate() {
                    let Some(path) = folded_column(item) else {
                        continue;
                    };
                    let apart = chosen
                        .iter()
                        .map(|(_, q)| q)
                        .chain(&taken)
                        .all(|q| !q.starts_with(&path) && !path.starts_with(q));
                    let unread = (0..items.len()).all(|j| {
                        j == k
                            || chosen.iter().any(|(c, _)| *c == j)
                            || reads_other_columns(arena, items[j], x, &path)
                    });
                    if apart && unread {
                        chosen.push((k, path));
                    }
                }
                // A component chosen first may read the column of one chosen after it.
                let chosen: Vec<(usize, Vec<usize>)> = chosen
                    .iter()
                    .filter(|(k, _)| {
                        chosen
                            .iter()
                            .all(|(c, q)| c == k || reads_other_columns(arena, items[*k], x, q))
                    })
                    .cloned()
                    .collect();
                // With none chosen, the components are still written one by one if some
                // are columns of `x`, so that those go straight to their places (a mean's
                // value and the gradients it scales are folds inside components).
                // Otherwise the tuple is written whole, its loops fused (`fused_tuple`).
                let ks: Vec<usize> = chosen.iter().map(|(k, _)| *k).collect();
                let columns = items.iter().any(|&e| column_of(arena, e, x).is_some());
                (!ks.is_empty() || columns).then_some((items, ks))
            }
            _ => None,
        };
        let mut folds: Vec<ExprId> = lets.iter().map(|(_, f, _)| *f).collect();
        let mut after = match tail_folds {
            Some((items, ks)) => {
                folds.extend(ks.iter().map(|&k| items[k]));
                AfterFold {
                    lets: bound,
                    tail: Tail::Components(items, ks),
                    embedded: Vec::new(),
                }
            }
            None => AfterFold {
                lets: bound,
                tail: Tail::Rest(cur),
                embedded: Vec::new(),
            },
        };
        // Folds of further columns found inside what follows, where it evaluates them once
        // (not under a function) and they read nothing it binds: `foldl (acc, e. ...)
        // zeros (map2 (a, b. (a, b)) v (reduce (s, t. map2 + s t) zeros (map (g. g.2) x)))`,
        // a transposed matrix's adjoint. They run in the loop too, and their results are
        // taken where the term reads them.
        let mut taken: Vec<Vec<usize>> = Vec::new();
        for &fold in &folds {
            taken.extend(fold_of(fold));
        }
        let roots: Vec<ExprId> = match &after.tail {
            Tail::Rest(r) => vec![*r],
            Tail::Components(items, ks) => (0..items.len())
                .filter(|j| !ks.contains(j))
                .map(|j| items[j])
                .collect(),
        };
        for (e, path) in embedded_folds(arena, &roots, &after.lets, x, &fold_of) {
            let apart = taken
                .iter()
                .all(|q| !q.starts_with(&path) && !path.starts_with(q));
            // Nothing else reads its column (another fold of it included), so the column
            // need not be stored.
            let unread = roots
                .iter()
                .all(|&r| reads_other_columns_except(arena, r, x, &path, Some(e)));
            if apart && unread {
                taken.push(path);
                folds.push(e);
                after.embedded.push(e);
            }
        }
        if folds.is_empty() {
            return Ok(None);
        }
        // Each fold: its function's parameters and body, its accumulator's shape, the column
        // of `x` it folds (all of it for an empty path), its operand and initial value.
        let mut specs = Vec::with_capacity(folds.len());
        for &fold in &folds {
            let (Node::Reduce(f, z, src) | Node::Foldl(f, z, src)) = arena[fold] else {
                return Ok(None);
            };
            let (ps, body) = lambda(arena, f, 2, "a fold")?;
            let (pa, px) = (ps[0], ps[1]);
            let acc_shape = self.an.var_shape(pa)?.clone();
            // The columns were checked against what follows when the folds were chosen.
            let Some(path) = fold_of(fold) else {
                return Ok(None);
            };
            if (path.is_empty() && acc_shape.has_arrays())
                || self.extremum(pa, px, body).is_some()
                || arena.free_vars(z).contains(&x)
            {
                return Ok(None);
            }
            specs.push((pa, px, body, acc_shape, path, src, z));
        }
        // Which folds are `reduce`s (which may run blocked).
        let reduces: Vec<bool> = folds
            .iter()
            .map(|&fold| matches!(arena[fold], Node::Reduce(..)))
            .collect();
        let paths: Vec<Vec<usize>> = specs.iter().map(|s| s.4.clone()).collect();
        // The columns of `x` that components of the result read as they are (`map (t. π_q
        // t) x`, written to an array's place) are stored straight into those places.
        let redirected: Vec<(usize, Vec<usize>, Rc<Arr>)> = match (&after.tail, into) {
            (Tail::Components(items, ks), Some(Place::Tuple(ps))) if ps.len() == items.len() => {
                let mut taken: Vec<Vec<usize>> = paths.clone();
                let mut out = Vec::new();
                for (j, (&item, p)) in items.iter().zip(ps.iter()).enumerate() {
                    let (Some(q), Place::Arr(dst)) = (column_of(arena, item, x), p) else {
                        continue;
                    };
                    let apart = |t: &Vec<usize>| !q.starts_with(t) && !t.starts_with(&q);
                    if !ks.contains(&j)
                        && !q.is_empty()
                        && taken.iter().all(apart)
                        && matches!(dst.kind, Kind::Mem { .. })
                    {
                        taken.push(q.clone());
                        out.push((j, q, dst.clone()));
                    }
                }
                out
            }
            _ => Vec::new(),
        };
        // The columns of `x` that the result adds to an accumulator (a `Place::AddTo` at
        // any depth of its tuples: an enclosing loop's sum of arrays, see below), which
        // nothing else reads: each element's part is added where it is computed, and the
        // column is not stored.
        let added: Vec<(ExprId, Vec<usize>, Rc<Arr>)> = match into {
            Some(p) if p.adds() => {
                let roots: Vec<ExprId> = match &after.tail {
                    Tail::Rest(r) => vec![*r],
                    Tail::Components(items, _) => items.clone(),
                };
                // A folded component is a fold, never a column: no leaf of its own.
                let leaves =
                    tail_leaves(arena, &after.tail, p)
                        .into_iter()
                        .filter_map(|(e, place)| match place {
                            Place::AddTo(acc) => Some((e, acc)),
                            _ => None,
                        });
                let mut taken: Vec<Vec<usize>> = paths.clone();
                taken.extend(redirected.iter().map(|(_, q, _)| q.clone()));
                let mut out = Vec::new();
                for (leaf, acc) in leaves {
                    let Some(q) = column_of(arena, leaf, x) else {
                        continue;
                    };
                    let apart = taken
                        .iter()
                        .all(|t| !q.starts_with(t) && !t.starts_with(&q));
                    let unread = roots
                        .iter()
                        .all(|&r| reads_other_columns_except(arena, r, x, &q, Some(leaf)));
                    if !q.is_empty() && apart && unread && matches!(acc.kind, Kind::Mem { .. }) {
                        taken.push(q.clone());
                        out.push((leaf, q, acc));
                    }
                }
                out
            }
            _ => Vec::new(),
        };
        let mut unkept: Vec<Vec<usize>> = redirected.iter().map(|(_, q, _)| q.clone()).collect();
        unkept.extend(paths.iter().filter(|p| !p.is_empty()).cloned());
        unkept.extend(added.iter().map(|(_, q, _)| q.clone()));
        let mut d = match scratch {
            // Stored where the result that reads it last goes (see `scratch_place`).
            Some(d) if unkept.is_empty() && *d.shape == *a.shape => d.clone(),
            _ => self.alloc_without(&a.shape, &unkept)?,
        };
        let mut lens = vec![(a.len, a.stat()), (d.len, d.stat())];
        // An accumulator added to by index runs no further than its length.
        lens.extend(added.iter().map(|(_, _, acc)| (acc.len, acc.stat())));
        if !redirected.is_empty() {
            let Kind::Mem { layout, holds } = &d.kind else {
                return internal("a buffer is not in memory");
            };
            let mut layout = layout.clone();
            for (_, q, dst) in &redirected {
                let Kind::Mem { layout: column, .. } = &dst.kind else {
                    return internal("a destination is not in memory");
                };
                layout = with_column(&layout, q, column)?;
                lens.push((dst.len, dst.stat()));
            }
            let kind = Kind::Mem {
                layout,
                holds: holds.clone(),
            };
            d = self.arr(d.len, &d.shape, d.stat(), kind);
        }
        // A component of the result that is a fold adding in place accumulates in the
        // place the result goes (no buffer of its own, no copy at the end), as `emit_fold`
        // does for such a fold alone.
        let mut result_places: Vec<Option<Place>> = match (&after.tail, into) {
            (Tail::Components(items, ks), Some(Place::Tuple(ps))) if ps.len() == items.len() => {
                let mut out = vec![None; lets.len()];
                for &k in ks {
                    let (Node::Reduce(f, ..) | Node::Foldl(f, ..)) = arena[items[k]] else {
                        return internal("a folded component is not a fold");
                    };
                    let p = &ps[k];
                    let fits =
                        matches!(p, Place::Arr(_) | Place::Tuple(_)) && self.adds_in_place(f)?;
                    out.push(fits.then(|| p.clone()));
                }
                out
            }
            _ => Vec::new(),
        };
        // A fold bound by a `let` whose columns are components of what follows's result
        // accumulates in their places (`columns_place`); those components are then its
        // columns, where they are.
        let mut column_items: Vec<(Var, ExprId, Rc<Arr>)> = Vec::new();
        if let Some(p) = into {
            // What follows the folded `let`s: the chain's tail, a tuple if its components
            // are folds too.
            let rest = cur;
            for (s, (y, fold, _)) in lets.iter().enumerate() {
                let (Node::Reduce(f, ..) | Node::Foldl(f, ..)) = arena[*fold] else {
                    return internal("a folded `let` is not a fold");
                };
                let found = if self.adds_in_place(f)? {
                    self.columns_place(*y, rest, p)?
                } else {
                    None
                };
                if let Some((place, written)) = found {
                    column_items.extend(written.into_iter().map(|(item, d)| (*y, item, d)));
                    if result_places.len() <= s {
                        result_places.resize(s + 1, None);
                    }
                    result_places[s] = Some(place);
                }
            }
        }
        // An embedded fold that adds arrays in place and is itself a component of the
        // result (inside its tuples: a loop body's adjoints beside its value) accumulates
        // where that component goes, as the folds above.
        if let (Some(p), None) = (into, scratch) {
            let leaves = tail_leaves(arena, &after.tail, p);
            let first = folds.len() - after.embedded.len();
            for (j, &e) in after.embedded.iter().enumerate() {
                let (Node::Reduce(f, ..) | Node::Foldl(f, ..)) = arena[e] else {
                    return internal("an embedded fold is not a fold");
                };
                // The fold itself, or a map of each element alone over it (`map (s. c *
                // s) fold`, a gradient scaled by the result's constant factor), which then
                // runs in that place after the loop (see `emit_into_node`).
                let mut places = leaves.iter().filter(|(leaf, _)| {
                    *leaf == e
                        || matches!(arena[*leaf], Node::Map(g, r)
                            if r == e && super::elementwise(arena, g))
                });
                let (Some((_, place)), None) = (places.next(), places.next()) else {
                    continue;
                };
                if matches!(place, Place::Arr(_) | Place::Tuple(_))
                    && !place.adds()
                    && self.adds_in_place(f)?
                {
                    if result_places.len() <= first + j {
                        result_places.resize(first + j + 1, None);
                    }
                    result_places[first + j] = Some(place.clone());
                }
            }
        }
        // Each fold's accumulator: scalars in registers; one holding arrays in its place in
        // the result (above), or alternating between two buffers, or staying in one
        // updated in place (as in a fold of its own), all such folds in the same phase,
        // which comes first in the loop's state when there is one.
        let mut accs = Vec::with_capacity(specs.len());
        for (s, (pa, _, body, acc_shape, _, _, z)) in specs.iter().enumerate() {
            let zv = self.emit(*z)?;
            let buffers = match result_places.get(s).cloned().flatten() {
                Some(p) if acc_shape.has_arrays() => Some((p.clone(), p)),
                // (A fold fused into a loop writes its function's result whole: no mixed
                // places.)
                _ if acc_shape.has_arrays() => {
                    let (a, b, _) = self.acc_places(*pa, *body, acc_shape, false)?;
                    Some((a, b))
                }
                _ => None,
            };
            let (start, holds) = match &buffers {
                Some((pa_place, pb_place)) => {
                    let v0 = self.write(&zv, pa_place)?;
                    let mut h = Vec::new();
                    Self::place_holds(pa_place, &mut h);
                    Self::place_holds(pb_place, &mut h);
                    (v0, Holds::from(h))
                }
                None => (zv, no_holds()),
            };
            let places: Vec<&Place> = buffers.iter().flat_map(|(a, b)| [a, b]).collect();
            let at_base = buffers
                .as_ref()
                .is_some_and(|(a, b)| super::state::same_place(a, b));
            let (fixed, carried) = self.loop_state(&start, &places, acc_shape, at_base)?;
            accs.push(FoldAcc {
                buffers,
                start,
                holds,
                fixed,
                width: carried.len(),
                carried,
            });
        }
        let (count, dim) = self.min_len(&lens);
        let phased = usize::from(accs.iter().any(|acc| acc.buffers.is_some()));
        let mut init = Vec::new();
        if phased == 1 {
            init.push(self.b.ins().iconst(I8, 0));
        }
        for acc in &mut accs {
            init.append(&mut acc.carried);
        }
        // The folded columns are not stored (a fold of whole elements stores them all).
        let unwritten: Vec<&[usize]> = paths
            .iter()
            .filter(|p| !p.is_empty())
            .map(Vec::as_slice)
            .chain(added.iter().map(|(_, q, _)| q.as_slice()))
            .collect();
        // A fold of a column that sums arrays into one buffer (`map2 + s t`, nested) gives
        // the element's computation that buffer to add its part to (`Place::AddTo`): a part
        // made by a loop (a map of rows, say) is then added row by row where it is made,
        // not stored in the element and added after. What the element leaves unadded is
        // added here; the fold's function does not run.
        let mut adding: Vec<Option<Rc<Arr>>> = Vec::with_capacity(specs.len());
        for ((pa, px, body, _, path, _, _), acc) in specs.iter().zip(&accs) {
            let buffer = match &acc.buffers {
                Some((Place::Arr(p1), Place::Arr(p2)))
                    if Rc::ptr_eq(p1, p2) && matches!(p1.kind, Kind::Mem { .. }) =>
                {
                    Some(p1.clone())
                }
                _ => None,
            };
            adding.push(buffer.filter(|_| {
                !path.is_empty()
                    && a.shape.elem.has_arrays()
                    && sums_elementwise(arena, *pa, *px, *body)
            }));
        }
        // The `reduce`s of `+`, `*`, `max` and `min` run blocked (see `blocked`).
        let mut lanes = Vec::new();
        let mut lane_specs = Vec::new();
        let mut at = phased;
        for ((k, (pa, px, body, ..)), acc) in specs.iter().enumerate().zip(&accs) {
            if let (true, 1, Some((_, unit))) =
                (reduces[k], acc.width, self.lane_of(*pa, *px, *body))
            {
                lanes.push(Lane { at, unit });
                lane_specs.push((*pa, *px, *body));
            }
            at += acc.width;
        }
        // Without blocked folds, two elements per iteration when the accumulators are reals.
        let bodies: Vec<ExprId> = specs.iter().map(|s| s.2).collect();
        let out = self.blocked_loop(
            count,
            init,
            &lanes,
            &[a],
            (phased == 0).then_some(&bodies[..]),
            &mut |t, i, cur| {
                let dst = t.place_elem(&d, IntVal::Ssa(i))?;
                // The arrays first, computed where they go (`elem_into`), then the folds,
                // then the scalars (see `write_some`).
                let xi = if a.shape.elem.has_arrays() {
                    let mut arrays = arrays_only(&dst, &unwritten, &mut Vec::new());
                    for (spec, buffer) in specs.iter().zip(&adding) {
                        if let Some(acc) = buffer {
                            arrays = put_at(&arrays, &spec.4, Place::AddTo(acc.clone()))?;
                        }
                    }
                    t.elem_into(a, IntVal::Ssa(i), &arrays)?
                } else {
                    t.elem(a, IntVal::Ssa(i))?
                };
                let xi = t.write_some(&xi, &dst, &unwritten, Some(true))?;
                for (_, q, acc) in &added {
                    let part = project(&xi, q)?;
                    let to = t.place_elem(acc, IntVal::Ssa(i))?;
                    t.add_val(&part, &to)?;
                }
                let mut next = Vec::with_capacity(cur.len());
                if phased == 1 {
                    next.push(t.b.ins().bxor_imm_s(cur[0], 1));
                }
                let mut at = phased;
                for (((pa, px, body, acc_shape, path, _, _), acc), buffer) in
                    specs.iter().zip(&accs).zip(&adding)
                {
                    let slots = acc.fixed.slots(&cur[at..at + acc.width])?;
                    at += acc.width;
                    let value = t.rebuild(&acc.start, acc_shape, &mut slots.iter(), &acc.holds)?;
                    if let Some(buffer) = buffer {
                        // Added already where the element made it, or added now.
                        t.write(&project(&xi, path)?, &Place::AddTo(buffer.clone()))?;
                        next.extend(t.carry(&value, &acc.fixed)?);
                        continue;
                    }
                    t.bind(*pa, value)?;
                    t.bind(*px, project(&xi, path)?)?;
                    let r = t.emit(*body);
                    t.unbind(*pa);
                    t.unbind(*px);
                    let r = r?;
                    match &acc.buffers {
                        Some((pa_place, pb_place)) => {
                            // Phase 0: the accumulator is in the first buffer, the next goes to
                            // the second.
                            let other = t.select_place(cur[0], pa_place, pb_place)?;
                            let nv = t.write(&r, &other)?;
                            next.extend(t.carry(&nv, &acc.fixed)?);
                        }
                        None => next.extend(t.carry(&r, &acc.fixed)?),
                    }
                }
                t.write_some(&xi, &dst, &unwritten, Some(false))?;
                Ok(next)
            },
            &mut |t, l, x, y| {
                let (pa, px, body) = lane_specs[l];
                t.combine_with(pa, px, body, x, y)
            },
        )?;
        self.pad(&d, count, dim)?;
        let stored = self.view(&d, count, dim)?;
        let mut folded = Vec::with_capacity(accs.len());
        let mut at = phased;
        for ((_, _, _, acc_shape, _, src, _), acc) in specs.iter().zip(&accs) {
            let slots = acc.fixed.slots(&out[at..at + acc.width])?;
            at += acc.width;
            folded.push(self.rebuild(&acc.start, acc_shape, &mut slots.iter(), &acc.holds)?);
            // The fold's reading of `x` is done.
            self.skip(*src);
        }
        self.bind(x, stored)?;
        let mut folded = folded.into_iter();
        for &y in &after.lets {
            let Some(value) = folded.next() else {
                return internal("a fold lost its result");
            };
            let len = match &value {
                Val::Arr(a) => Some((a.len, a.stat())),
                _ => None,
            };
            self.bind_let(y, value)?;
            if let Some((len, dim)) = len {
                for (_, item, dst) in column_items.iter().filter(|c| c.0 == y) {
                    let column = self.view(dst, len, dim)?;
                    self.skip(*item);
                    self.precomputed.insert(*item, column);
                }
            }
        }
        let mut folded: Vec<Val> = folded.collect();
        // The embedded folds come last: their results stand for their nodes from now on.
        let tail_count = folded.len() - after.embedded.len();
        for (&e, v) in after.embedded.iter().zip(folded.drain(tail_count..)) {
            self.precomputed.insert(e, v);
        }
        for (leaf, _, acc) in &added {
            // Added where each element was made: the result's component is the sum.
            self.skip(*leaf);
            let sum = self.view(acc, acc.len, acc.stat())?;
            self.precomputed.insert(*leaf, sum);
        }
        let r = match after.tail {
            Tail::Rest(rest) => match into {
                Some(p) => self.emit_into(rest, p)?,
                None => self.emit(rest)?,
            },
            Tail::Components(items, ks) => {
                let places = match into {
                    Some(Place::Tuple(ps)) if ps.len() == items.len() => Some(ps.clone()),
                    Some(_) => return internal("a tuple written to a place of another shape"),
                    None => None,
                };
                let mut out = Vec::with_capacity(items.len());
                for (j, &item) in items.iter().enumerate() {
                    if let Some((_, _, dst)) = redirected.iter().find(|(r, _, _)| *r == j) {
                        // Stored there by the loop; what the component reads of `x` is read.
                        self.skip(item);
                        self.pad(dst, count, dim)?;
                        out.push(self.view(dst, count, dim)?);
                        continue;
                    }
                    let fold = ks.iter().position(|&k| k == j);
                    let in_place = fold.is_some_and(|f| {
                        result_places
                            .get(lets.len() + f)
                            .is_some_and(Option::is_some)
                    });
                    let v = match (fold, &places) {
                        // Accumulated where it goes.
                        (Some(f), Some(_)) if in_place => folded[f].clone(),
                        (Some(f), Some(ps)) => self.write(&folded[f], &ps[j])?,
                        (Some(f), None) => folded[f].clone(),
                        (None, Some(ps)) => self.emit_into(item, &ps[j])?,
                        (None, None) => self.emit(item)?,
                    };
                    out.push(v);
                }
                Val::Tuple(out.into())
            }
        };
        for e in &after.embedded {
            self.precomputed.remove(e);
        }
        for (_, item, _) in &column_items {
            self.precomputed.remove(item);
        }
        for (leaf, ..) in &added {
            self.precomputed.remove(leaf);
        }
        self.end_scope(&after.lets, &r);
        self.end_scope(&[x], &r);
        Ok(Some(r))
    }

    /// `Some(i)` if the `let`-chain `e` ends in a tuple whose component `i` (of `places`, an
    /// array's place) is the variable `x` itself, which no other component is and no
    /// binding of the chain binds again: then `x` may be computed into `places[i]`.
    pub(super) fn result_slot(&self, x: Var, e: ExprId, places: &[Place]) -> Option<usize> {
        let arena = self.arena;
        let items = result_items(arena, x, e, places.len())?;
        let mut at = (0..items.len()).filter(|&i| arena[items[i]] == Node::Var(x));
        match (at.next(), at.next()) {
            (Some(i), None) if matches!(places[i], Place::Arr(_)) => Some(i),
            _ => None,
        }
    }

    /// Places for the components of the tuple `x` bound by `let x = ... in e` (`e` written
    /// to `places`), where `e`'s result has `x.k` itself as an item: component `k` goes
    /// where that item goes, so that writing the item is writing the array onto itself.
    /// Components that are no such item get `Place::Reg` (a buffer of their own). `None`
    /// if no component is a result's item.
    pub(super) fn result_components(&self, x: Var, e: ExprId, places: &[Place]) -> Option<Place> {
        let arena = self.arena;
        let Ok(crate::shape::SShape::Tuple(shapes)) = self.an.var_shape(x) else {
            return None;
        };
        let items = result_items(arena, x, e, places.len())?;
        let mut out = vec![Place::Reg; shapes.len()];
        let mut found = false;
        for (i, &item) in items.iter().enumerate() {
            let Node::Proj(k, inner) = arena[item] else {
                continue;
            };
            let k = k as usize;
            if arena[inner] == Node::Var(x)
                && k < out.len()
                && matches!(out[k], Place::Reg)
                && matches!(places[i], Place::Arr(_))
            {
                out[k] = places[i].clone();
                found = true;
            }
        }
        found.then(|| Place::Tuple(out.into()))
    }

    /// The components of a tuple written to `places` with their loops fused: scalar folds
    /// and arrays written element by element (maps, copies, fills) that run over the same
    /// length share one loop, so their common loads and subexpressions are computed once
    /// (local value numbering) and every input is read once. `None` (nothing emitted) when
    /// fewer than two components are such loops.
    pub(super) fn fused_tuple(
        &mut self,
        items: &[ExprId],
        places: &[Place],
    ) -> JitResult<Option<Val>> {
        let arena = self.arena;
        // A fold computed already (`precomputed`) is written as a value, not run again.
        let fold_like = |t: &Self, e: ExprId, p: &Place| -> JitResult<bool> {
            if t.precomputed.contains_key(&e) {
                return Ok(false);
            }
            Ok(match (arena[e], p) {
                (Node::Reduce(f, ..) | Node::Foldl(f, ..), Place::Reg | Place::Real(_)) => {
                    let (ps, _) = lambda(arena, f, 2, "a fold")?;
                    !t.an.var_shape(ps[0])?.has_arrays()
                }
                _ => false,
            })
        };
        // Copies and fills of nested arrays stay single flat loops (`write_flat`).
        let flat = |e: ExprId| match self.an.shape(e) {
            Ok(SShape::Arr(sa)) => !sa.elem.has_arrays(),
            _ => false,
        };
        // A component computed already (`precomputed`, a column written in place) too.
        let computed: Vec<ExprId> = items
            .iter()
            .copied()
            .filter(|e| self.precomputed.contains_key(e))
            .collect();
        let array_like = |e: ExprId, p: &Place| match (arena[e], p) {
            _ if computed.contains(&e) => false,
            (Node::Map(..) | Node::Map2(..), Place::Arr(_)) => true,
            (
                Node::Var(_)
                | Node::ZerosLike(_)
                | Node::OnesLike(_)
                | Node::Shift1L(_)
                | Node::Shift1R(_),
                Place::Arr(_),
            ) => flat(e),
            _ => false,
        };
        // Arrays added to an accumulator, and sums of arrays that add in place into their
        // place: loops that add element by element.
        let adding_like = |t: &Self, e: ExprId, p: &Place| -> JitResult<bool> {
            if computed.contains(&e) {
                return Ok(false);
            }
            Ok(match (arena[e], p) {
                (Node::Map(..) | Node::Map2(..), Place::AddTo(d)) => {
                    matches!(d.kind, Kind::Mem { .. })
                }
                (Node::Reduce(f, ..), Place::Arr(d)) if matches!(d.kind, Kind::Mem { .. }) => {
                    let (ps, body) = lambda(arena, f, 2, "a fold")?;
                    t.an.var_shape(ps[0])?.has_arrays()
                        && sums_elementwise(arena, ps[0], ps[1], body)
                }
                // Its sum not computed already (a fold run in the loop of the stored map
                // whose column it sums, `stored_then_folded`: the column is not kept).
                (Node::Map(g, r), Place::Arr(d))
                    if matches!(d.kind, Kind::Mem { .. })
                        && matches!(arena[r], Node::Reduce(..))
                        && !t.precomputed.contains_key(&r)
                        && super::elementwise(arena, g) =>
                {
                    let Node::Reduce(f, ..) = arena[r] else {
                        return Ok(false);
                    };
                    let (ps, body) = lambda(arena, f, 2, "a fold")?;
                    t.an.var_shape(ps[0])?.has_arrays()
                        && sums_elementwise(arena, ps[0], ps[1], body)
                }
                _ => false,
            })
        };
        let mut loops = 0;
        for (&e, p) in items.iter().zip(places) {
            if fold_like(self, e, p)? || array_like(e, p) || adding_like(self, e, p)? {
                loops += 1;
            }
        }
        if loops < 2 {
            return Ok(None);
        }
        // Prepare every component in order: loops up to their sources, the others in full.
        let mut preps: Vec<Prep> = Vec::with_capacity(items.len());
        for (&e, p) in items.iter().zip(places) {
            preps.push(if adding_like(self, e, p)? {
                match (arena[e], p) {
                    (Node::Reduce(..) | Node::Map(..), Place::Arr(acc)) => {
                        // The sum, and the map of its elements (`then`) if scaled.
                        let (sum, then) = match arena[e] {
                            Node::Map(g, r) => (r, Some(g)),
                            _ => (e, None),
                        };
                        let Node::Reduce(_, z, x) = arena[sum] else {
                            return internal("a sum changed its node");
                        };
                        let zv = self.emit(z)?;
                        self.write(&zv, p)?;
                        let src = self.emit_arr(x)?;
                        Prep::Sum {
                            src,
                            acc: acc.clone(),
                            then,
                        }
                    }
                    (_, Place::AddTo(d)) => {
                        let a = self.emit_arr(e)?;
                        let (count, _) = self.min_len(&[(a.len, a.stat()), (d.len, d.stat())]);
                        Prep::Add {
                            a,
                            d: d.clone(),
                            count,
                        }
                    }
                    _ => return internal("an addition changed its node"),
                }
            } else if fold_like(self, e, p)? {
                let (Node::Reduce(f, z, x) | Node::Foldl(f, z, x)) = arena[e] else {
                    return internal("a fold changed its node");
                };
                let (ps, body) = lambda(arena, f, 2, "a fold")?;
                let zv = self.emit(z)?;
                let src = self.emit_arr(x)?;
                Prep::Fold(FoldPrep {
                    pa: ps[0],
                    px: ps[1],
                    body,
                    shape: self.an.var_shape(ps[0])?.clone(),
                    zv,
                    src,
                    reduce: matches!(arena[e], Node::Reduce(..)),
                })
            } else if let (true, Place::Arr(d)) = (array_like(e, p), p) {
                let a = self.emit_arr(e)?;
                let (count, dim) = self.min_len(&[(a.len, a.stat()), (d.len, d.stat())]);
                if in_place(&a, d) {
                    self.pad(d, count, dim)?;
                    Prep::Done(self.view(d, count, dim)?)
                } else {
                    Prep::Array {
                        a,
                        d: d.clone(),
                        count,
                        dim,
                    }
                }
            } else {
                Prep::Done(self.emit_into(e, p)?)
            });
        }
        // The loops over the first loop's length run fused; the others alone.
        let count_of = |p: &Prep| match p {
            Prep::Fold(f) => Some(f.src.len),
            Prep::Array { count, .. } | Prep::Add { count, .. } => Some(*count),
            Prep::Sum { src, .. } => Some(src.len),
            Prep::Done(_) => None,
        };
        let Some(count) = preps.iter().find_map(count_of) else {
            // Every array was already in place: nothing left to run.
            let items = preps
                .into_iter()
                .map(|p| match p {
                    Prep::Done(v) => Ok(v),
                    _ => internal("a fused tuple lost a loop"),
                })
                .collect::<JitResult<Vec<_>>>()?;
            return Ok(Some(Val::Tuple(items.into())));
        };
        // A blocked fold's loop emits several copies of the element per iteration, which
        // the lanes pass pairs. Sums of whole rows, every element adding into the same
        // accumulator, keep a loop of their own; additions by index write each element's
        // own position, so they join it and share its loads and subexpressions.
        let mut laned = false;
        for p in &preps {
            if let Prep::Fold(f) = p {
                laned |= f.reduce && self.lane_of(f.pa, f.px, f.body).is_some();
            }
        }
        let group: Vec<usize> = (0..preps.len())
            .filter(|&k| count_of(&preps[k]) == Some(count))
            .filter(|&k| !(laned && matches!(preps[k], Prep::Sum { .. })))
            .collect();
        let mut out: Vec<Option<Val>> = vec![None; preps.len()];
        for k in 0..preps.len() {
            if group.contains(&k) {
                continue;
            }
            out[k] = Some(match &preps[k] {
                Prep::Done(v) => v.clone(),
                Prep::Array { a, d, .. } => self.write_arr(a, d)?,
                Prep::Fold(f) => {
                    let n = f.src.len;
                    let v = self
                        .fused_loop(n, &[f], &[], &Additions::default())?
                        .remove(0);
                    self.write(&v, &places[k])?
                }
                Prep::Add { a, .. } => self.write(&Val::Arr(a.clone()), &places[k])?,
                Prep::Sum { src, acc, then } => {
                    let sums = Additions {
                        by_index: Vec::new(),
                        sums: vec![(src, acc)],
                    };
                    self.fused_loop(src.len, &[], &[], &sums)?;
                    self.sum_then(acc, *then)?
                }
            });
        }
        let folds: Vec<&FoldPrep> = group
            .iter()
            .filter_map(|&k| match &preps[k] {
                Prep::Fold(f) => Some(f),
                _ => None,
            })
            .collect();
        let arrays: Vec<(&Rc<Arr>, &Rc<Arr>)> = group
            .iter()
            .filter_map(|&k| match &preps[k] {
                Prep::Array { a, d, .. } => Some((a, d)),
                _ => None,
            })
            .collect();
        let mut additions = Additions::default();
        for &k in &group {
            match &preps[k] {
                Prep::Add { a, d, .. } => additions.by_index.push((a, d)),
                Prep::Sum { src, acc, .. } => additions.sums.push((src, acc)),
                _ => {}
            }
        }
        let mut results = self
            .fused_loop(count, &folds, &arrays, &additions)?
            .into_iter();
        for &k in &group {
            out[k] = Some(match &preps[k] {
                Prep::Fold(_) => {
                    let v = results
                        .next()
                        .ok_or_else(|| JitError::Internal("a fold lost its result".into()))?;
                    self.write(&v, &places[k])?
                }
                Prep::Array { d, count, dim, .. } => {
                    self.pad(d, *count, *dim)?;
                    self.view(d, *count, *dim)?
                }
                // The accumulator, as an `AddTo` write yields it.
                Prep::Add { d, .. } => self.view(d, d.len, d.stat())?,
                Prep::Sum { acc, then, .. } => self.sum_then(acc, *then)?,
                Prep::Done(v) => v.clone(),
            });
        }
        let items = out
            .into_iter()
            .map(|v| v.ok_or_else(|| JitError::Internal("a tuple component was lost".into())))
            .collect::<JitResult<Vec<_>>>()?;
        Ok(Some(Val::Tuple(items.into())))
    }

    /// One loop of `count` iterations running the folds `folds` (scalar accumulators),
    /// writing element `i` of each `(array, destination)` of `arrays` and making the
    /// additions `adds` (after the writes, in the order of the elements); returns the
    /// folds' results. A `reduce` of `+`, `*`, `max` or `min` among the folds makes it a blocked
    /// loop (see [`super::blocked`]).
    pub(super) fn fused_loop(
        &mut self,
        count: IntVal,
        folds: &[&FoldPrep],
        arrays: &[(&Rc<Arr>, &Rc<Arr>)],
        adds: &Additions,
    ) -> JitResult<Vec<Val>> {
        let mut init = Vec::new();
        let mut widths = Vec::with_capacity(folds.len());
        let mut lanes = Vec::new();
        let mut lane_folds = Vec::new();
        for f in folds {
            let before = init.len();
            self.flatten(&f.zv, &mut init)?;
            widths.push(init.len() - before);
            if let (true, Some((_, unit))) = (f.reduce, self.lane_of(f.pa, f.px, f.body)) {
                lanes.push(Lane { at: before, unit });
                lane_folds.push(*f);
            }
        }
        let srcs: Vec<&Rc<Arr>> = folds.iter().map(|f| &f.src).collect();
        let reads: Vec<&Rc<Arr>> = srcs
            .iter()
            .copied()
            .chain(arrays.iter().map(|(a, _)| *a))
            .chain(adds.by_index.iter().map(|(a, _)| *a))
            .chain(adds.sums.iter().map(|(a, _)| *a))
            .collect();
        let holds = no_holds();
        let bodies: Vec<ExprId> = folds.iter().map(|f| f.body).collect();
        if folds.is_empty() {
            // Nothing is carried: the iterations where a pad among the arrays is at its end
            // run apart, and the others read the pads in place, without a test, and pair
            // where `pairs_well` says (not elements holding arrays).
            let covers: Vec<&Arr> = reads.iter().map(|a| a.as_ref()).collect();
            let mut fused = |t: &mut Self| {
                t.peeled_loop(count, &covers, 0, &reads, &[], true, &mut |t, i, _| {
                    t.fused_elements(i, arrays, adds)?;
                    Ok(Vec::new())
                })?;
                Ok(())
            };
            // Rows scaled into rows and added to accumulators, one routine each rather than
            // one loop (`routines.rs`): a matrix-vector product's gradient per row.
            match self.routine_rows(count, arrays, adds) {
                Some(calls) => self.rows_by_routine(&calls, count, &reads, &mut fused)?,
                None => fused(self)?,
            }
            return Ok(Vec::new());
        }
        let outs = self.blocked_loop(
            count,
            init,
            &lanes,
            &reads,
            Some(&bodies),
            &mut |t, i, cur| {
                let mut next = Vec::with_capacity(cur.len());
                let mut at = 0;
                for ((f, &w), src) in folds.iter().zip(&widths).zip(&srcs) {
                    let acc = t.rebuild(
                        &f.zv,
                        &f.shape,
                        &mut ssa_ints(&cur[at..at + w]).iter(),
                        &holds,
                    )?;
                    at += w;
                    let xi = t.elem(src, IntVal::Ssa(i))?;
                    t.bind(f.pa, acc)?;
                    t.bind(f.px, xi)?;
                    let r = t.emit(f.body);
                    t.unbind(f.pa);
                    t.unbind(f.px);
                    t.flatten(&r?, &mut next)?;
                }
                t.fused_elements(i, arrays, adds)?;
                Ok(next)
            },
            &mut |t, l, x, y| t.combine_fold(lane_folds[l], x, y),
        )?;
        let mut at = 0;
        let mut results = Vec::with_capacity(folds.len());
        for (f, &w) in folds.iter().zip(&widths) {
            results.push(self.rebuild(
                &f.zv,
                &f.shape,
                &mut ssa_ints(&outs[at..at + w]).iter(),
                &holds,
            )?);
            at += w;
        }
        Ok(results)
    }

    /// Element `i` of a [`Translator::fused_loop`]'s arrays written to their destinations,
    /// then its additions made.
    fn fused_elements(
        &mut self,
        i: Value,
        arrays: &[(&Rc<Arr>, &Rc<Arr>)],
        adds: &Additions,
    ) -> JitResult<()> {
        for (a, d) in arrays {
            let x = self.elem(a, IntVal::Ssa(i))?;
            let dst = self.place_elem(d, IntVal::Ssa(i))?;
            self.write(&x, &dst)?;
        }
        for (a, d) in &adds.by_index {
            let x = self.elem(a, IntVal::Ssa(i))?;
            let dst = self.place_elem(d, IntVal::Ssa(i))?;
            self.add_val(&x, &dst)?;
        }
        for (src, acc) in &adds.sums {
            let x = self.elem(src, IntVal::Ssa(i))?;
            self.write(&x, &Place::AddTo((*acc).clone()))?;
        }
        Ok(())
    }

    /// The fold `f`'s function applied to two of its (real) accumulators `x` and `y`.
    fn combine_fold(&mut self, f: &FoldPrep, x: Value, y: Value) -> JitResult<Value> {
        self.combine_with(f.pa, f.px, f.body, x, y)
    }

    /// The function `(pa, px. body)` applied to the reals `x` and `y`.
    pub(super) fn combine_with(
        &mut self,
        pa: Var,
        px: Var,
        body: ExprId,
        x: Value,
        y: Value,
    ) -> JitResult<Value> {
        self.bind(pa, Val::Real(RealVal::Ssa(x)))?;
        self.bind(px, Val::Real(RealVal::Ssa(y)))?;
        let r = self.emit(body);
        self.unbind(pa);
        self.unbind(px);
        match r? {
            Val::Real(v) => Ok(self.real_value(v)),
            _ => internal("a reduction of reals gives a non-real"),
        }
    }

    /// `map f srcs...` written to `d`: two elements per iteration when they are light
    /// scalars (see [`Translator::paired_loop`]).
    /// The sum accumulated in `acc`, with the map `then` (if any) applied to it in place:
    /// each element read, then written (see `elementwise`).
    fn sum_then(&mut self, acc: &Rc<Arr>, then: Option<ExprId>) -> JitResult<Val> {
        let sum = self.view(acc, acc.len, acc.stat())?;
        match (then, sum) {
            (None, sum) => Ok(sum),
            (Some(g), Val::Arr(a)) => self.map_into(g, vec![a], acc),
            (Some(_), _) => internal("a sum of arrays is not an array"),
        }
    }

    /// Whether `map2 f acc _` written to `d` adds into `d` in place: `f` is `(s, t. s + t)`
    /// on reals and `acc` is `d`'s own row of reals.
    fn in_place_sum(&self, f: ExprId, acc: &Arr, d: &Arr) -> bool {
        let Some((&[s, t], body)) = self.arena.lambda_parts(f) else {
            return false;
        };
        let (Kind::Mem { layout: la, .. }, Kind::Mem { layout: ld, .. }) = (&acc.kind, &d.kind)
        else {
            return false;
        };
        matches!(self.arena[body], Node::Op2(unfad_syntax::BinOp::Add, x, y)
            if self.arena[x] == Node::Var(s) && self.arena[y] == Node::Var(t))
            && matches!(acc.shape.elem, SShape::Real)
            && la == ld
    }

    pub(super) fn map_into(&mut self, f: ExprId, srcs: Vec<Rc<Arr>>, d: &Arr) -> JitResult<Val> {
        let mut lens = vec![(d.len, d.stat())];
        lens.extend(srcs.iter().map(|s| (s.len, s.stat())));
        let (count, dim) = self.min_len(&lens);
        // Dot products of a matrix's rows with one vector: one routine call
        // (`routines.rs`).
        if let Some(u) = self.routine_dots(f, &srcs, d)? {
            self.call_dots(&u, f, d, count)?;
            self.pad(d, count, dim)?;
            return self.view(d, count, dim);
        }
        // `map2 + acc row` written over `acc` itself (a sum of rows updating its
        // accumulator in place, `reduce (s, t. map2 + s t) z X`): the row added by a
        // routine, as `add_into` adds it (`routines.rs`).
        if let [acc, added] = &srcs[..] {
            if self.in_place_sum(f, acc, d) && self.routine_update(added, d, count).is_some() {
                let (_, body) = lambda(self.arena, f, 2, "map2")?;
                self.skip(body);
                self.add_into(added, d)?;
                self.pad(d, count, dim)?;
                return self.view(d, count, dim);
            }
        }
        let (ps, body) = lambda(self.arena, f, srcs.len(), "map")?;
        let reads: Vec<&Rc<Arr>> = srcs.iter().collect();
        // An element that is an array (a loop of its own) is not paired.
        let paired = !d.shape.elem.has_arrays();
        let mut step = |t: &mut Self, i: Value, _: &[Value]| -> JitResult<Vec<Value>> {
            for (&p, s) in ps.iter().zip(&srcs) {
                let x = t.elem(s, IntVal::Ssa(i))?;
                t.bind(p, x)?;
            }
            let dst = t.place_elem(d, IntVal::Ssa(i))?;
            let r = t.emit_into(body, &dst);
            for &p in ps {
                t.unbind(p);
            }
            r?;
            Ok(Vec::new())
        };
        let arrs: Vec<&Arr> = srcs.iter().map(|s| &**s).collect();
        let split = super::pad::split_at_constants(self.arena, ps, &arrs, body);
        self.peeled_loop(count, &arrs, split, &reads, &[body], paired, &mut step)?;
        self.pad(d, count, dim)?;
        self.view(d, count, dim)
    }
}

/// The component path `π_path` of `src = map (t. π_path t) x` (projections of the
/// function's parameter, outermost first), if `src` has that form.
pub(crate) fn column_of(arena: &Arena, src: ExprId, x: Var) -> Option<Vec<usize>> {
    let Node::Map(f, s0) = arena[src] else {
        return None;
    };
    if arena[s0] != Node::Var(x) {
        return None;
    }
    let (ps, mut body) = arena.lambda_parts(f)?;
    let [t] = ps else {
        return None;
    };
    let mut path = Vec::new();
    while let Node::Proj(i, inner) = arena[body] {
        path.push(i as usize);
        body = inner;
    }
    path.reverse();
    (arena[body] == Node::Var(*t)).then_some(path)
}

/// Whether `e` reads `x` only as `map (t. π_q t) x` with `q` apart from `path` (neither
/// a prefix of the other).
fn reads_other_columns(arena: &Arena, e: ExprId, x: Var, path: &[usize]) -> bool {
    reads_other_columns_except(arena, e, x, path, None)
}

/// The folds of a column of `x` (`fold_of` gives it, not empty) inside `roots` where they
/// are evaluated once (not under a function), whose function and free variables involve
/// nothing bound inside `roots` nor in `lets`, and that read `x` only as that column.
fn embedded_folds(
    arena: &Arena,
    roots: &[ExprId],
    lets: &[Var],
    x: Var,
    fold_of: &dyn Fn(ExprId) -> Option<Vec<usize>>,
) -> Vec<(ExprId, Vec<usize>)> {
    let mut seen = unfad_syntax::fast_hash::FastSet::default();
    let mut inner: unfad_syntax::fast_hash::FastSet<Var> = lets.iter().copied().collect();
    let mut stack = roots.to_vec();
    while let Some(e) = stack.pop() {
        if seen.insert(e) {
            inner.extend(arena.binders(arena[e]));
            arena.for_each_child(e, |c| stack.push(c));
        }
    }
    let mut out = Vec::new();
    let mut seen = unfad_syntax::fast_hash::FastSet::default();
    let mut stack = roots.to_vec();
    while let Some(e) = stack.pop() {
        if !seen.insert(e) || matches!(arena[e], Node::Lambda(..)) {
            continue;
        }
        if let (Some(path), Node::Reduce(f, _, _) | Node::Foldl(f, _, _)) = (fold_of(e), arena[e]) {
            let free = arena.free_vars(e);
            if !path.is_empty()
                && !arena.free_vars(f).contains(&x)
                && !free.iter().any(|v| inner.contains(v))
            {
                out.push((e, path));
                continue;
            }
        }
        arena.for_each_child(e, |c| stack.push(c));
    }
    out
}

/// [`reads_other_columns`], not counting what the node `except` reads.
fn reads_other_columns_except(
    arena: &Arena,
    e: ExprId,
    x: Var,
    path: &[usize],
    except: Option<ExprId>,
) -> bool {
    // One visit per node of the DAG (optimized terms share subterms).
    let mut seen = unfad_syntax::fast_hash::FastSet::default();
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        if !seen.insert(e) || Some(e) == except {
            continue;
        }
        if let Some(q) = column_of(arena, e, x) {
            if q.starts_with(path) || path.starts_with(&q) {
                return false;
            }
            continue;
        }
        if arena[e] == Node::Var(x) {
            return false;
        }
        arena.for_each_child(e, |c| stack.push(c));
    }
    true
}

/// The components of what follows a stored map's folds (see [`leaf_places`]), written to
/// `p`, each with its place.
fn tail_leaves(arena: &Arena, tail: &Tail, p: &Place) -> Vec<(ExprId, Place)> {
    let mut leaves = Vec::new();
    match tail {
        Tail::Rest(r) => leaf_places(arena, *r, p, &mut leaves),
        Tail::Components(items, _) => {
            if let Place::Tuple(ps) = p {
                for (&item, q) in items.iter().zip(ps.iter()) {
                    leaf_places(arena, item, q, &mut leaves);
                }
            }
        }
    }
    leaves
}

/// The components of the result `e` written to `p`, through its tuples nested alike in
/// `p`, each with its place.
pub(super) fn leaf_places(arena: &Arena, e: ExprId, p: &Place, out: &mut Vec<(ExprId, Place)>) {
    match (arena[e], p) {
        (Node::Tuple(l), Place::Tuple(ps)) if l.len() == ps.len() => {
            for (&item, q) in arena.exprs(l).iter().zip(ps.iter()) {
                leaf_places(arena, item, q, out);
            }
        }
        _ => out.push((e, p.clone())),
    }
}

/// Whether the fold's function `(a, b. body)` adds its two arrays element by element,
/// the accumulator `a` first: `map2 + a b`, `map2 (s, t. map2 + s t) a b`, or an array of
/// tuples summed component by component (`map2 (s, t. (map2 + s.0 t.0, s.1 + t.1)) a b`).
fn sums_elementwise(arena: &Arena, a: Var, b: Var, body: ExprId) -> bool {
    matches!(arena[body], Node::Map2(..))
        && unfad_syntax::reduction::sums_parts(arena, a, b, &mut Vec::new(), body)
}

/// `p` with the place at `path` (through its tuples) replaced by `new`.
fn put_at(p: &Place, path: &[usize], new: Place) -> JitResult<Place> {
    let Some((&k, rest)) = path.split_first() else {
        return Ok(new);
    };
    match p {
        Place::Tuple(items) if k < items.len() => {
            let mut items: Vec<Place> = items.to_vec();
            items[k] = put_at(&items[k], rest, new)?;
            Ok(Place::Tuple(items.into()))
        }
        _ => internal("a component path through a place that is not a tuple"),
    }
}

/// The component at `path` of the tuple value `v`.
fn project(v: &Val, path: &[usize]) -> JitResult<Val> {
    let mut v = v.clone();
    for &i in path {
        v = match &v {
            Val::Tuple(items) => match items.get(i) {
                Some(item) => item.clone(),
                None => return internal("a projection outside its tuple"),
            },
            _ => return internal("a projection of a non-tuple"),
        };
    }
    Ok(v)
}

/// `p` with only its arrays outside the components at `skip` kept: the rest in registers
/// (an element's scalars are stored after its folds run, and a folded column not at all).
fn arrays_only(p: &Place, skip: &[&[usize]], at: &mut Vec<usize>) -> Place {
    if skip.iter().any(|q| at.starts_with(q)) {
        return Place::Reg;
    }
    match p {
        Place::Arr(_) | Place::AddTo(_) => p.clone(),
        Place::Real(_) | Place::Reg => Place::Reg,
        Place::Tuple(items) => Place::Tuple(
            items
                .iter()
                .enumerate()
                .map(|(k, q)| {
                    at.push(k);
                    let r = arrays_only(q, skip, at);
                    at.pop();
                    r
                })
                .collect(),
        ),
    }
}

/// The items of the tuple the `let`-chain `e` ends in, if it has `n` of them and no
/// binding of the chain binds `x` again.
fn result_items(arena: &Arena, x: Var, e: ExprId, n: usize) -> Option<&[ExprId]> {
    match arena[chain_end(arena, x, e)?] {
        Node::Tuple(l) if arena.exprs(l).len() == n => Some(arena.exprs(l)),
        _ => None,
    }
}

/// Whether the `let`-chain `e` ends in `x` itself, which no binding of the chain binds
/// again.
pub(super) fn result_is(arena: &Arena, x: Var, e: ExprId) -> bool {
    chain_end(arena, x, e).is_some_and(|end| arena[end] == Node::Var(x))
}

/// What the `let`-chain `e` ends in, if no binding of the chain binds `x` again.
fn chain_end(arena: &Arena, x: Var, e: ExprId) -> Option<ExprId> {
    let mut cur = e;
    loop {
        match arena[cur] {
            Node::Let(y, _, b) if y != x => cur = b,
            Node::LetTuple(ys, _, b) if !arena.vars_of(ys).contains(&x) => cur = b,
            Node::Let(..) | Node::LetTuple(..) => return None,
            _ => return Some(cur),
        }
    }
}
