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

use crate::error::{internal, JitResult};
use crate::shape::SShape;
use crate::value::{Arr, Kind, Place, Val};

use super::fusion::{column_of, leaf_places};
use super::memory::with_column;

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
        let arena = self.arena;
        let SShape::Arr(sa) = self.an.var_shape(x).ok()? else {
            return None;
        };
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
        let fits = |place: &Place| -> Option<Rc<Arr>> {
            match place {
                Place::Arr(d) if matches!(d.kind, Kind::Mem { .. }) && *d.shape == **sa => {
                    Some(d.clone())
                }
                _ => None,
            }
        };
        match (arena[cur], p) {
            (Node::Tuple(l), Place::Tuple(ps)) => {
                let items = arena.exprs(l);
                if items.len() != ps.len() {
                    return None;
                }
                let k = items.iter().position(|&item| consumer(item))?;
                let others_apart = items
                    .iter()
                    .enumerate()
                    .all(|(j, &item)| j == k || !arena.mentions_any(item, &watched));
                others_apart.then(|| fits(&ps[k])).flatten()
            }
            (_, Place::Arr(_)) if consumer(cur) => fits(p),
            _ => None,
        }
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
