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

use std::rc::Rc;

use unfad_syntax::{ExprId, Node, Var};

use crate::shape::SShape;
use crate::value::{Arr, Kind, Place};

use super::Translator;

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
}
