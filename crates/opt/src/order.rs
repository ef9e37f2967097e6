//! Statements that do not read a loop move above it.
//!
//! The code generator folds the reductions of a stored loop's columns in the loop that
//! makes them, and writes its columns where the result goes, when the `let`s that follow
//! the loop are those folds (`let G = map ... in let s = reduce + 0 (map (g. g.0) G) in
//! ...`). A statement between them that reads nothing of the loop breaks that chain: a
//! penalized loss's `let p = reduce + 0 (map (v. v * v) w)`, which is a term of the value
//! and the gradient of the penalty's weight, left the per-point loop stored whole (n m
//! reals of a logistic regression's gradient). Such a statement, a reduction or scalar
//! arithmetic, moves above the loops before it that it does not read. A fold of a loop's
//! columns moves further, past any statement it does not read, to right after the loop
//! (after the folds of that loop already there): a mixture's gradient folds the per-point
//! contributions to the components' adjoints after the logsumexp of the weights, which
//! reads nothing of the loop over the points, and the code generator stored every
//! point's contributions (n k d^2 reals) to fold them after it. Pure statements evaluated
//! earlier compute the same values.

use unfad_syntax::fast_hash::FastSet as HashSet;
use unfad_syntax::{Arena, ExprId, Func, Node, Var};

use crate::siblings::{bound_by, elementwise, in_every_chain, rechain, unchain, Stmt};

/// `func` with, in every `let` chain, the reductions and scalar statements moved above
/// the loops (`map`s and `map2`s) before them that they do not read.
pub fn independent_first(arena: &mut Arena, func: &Func) -> Func {
    in_every_chain(arena, func, 1, &mut reorder)
}

/// Whether the statement may move above a loop: a reduction, or scalar arithmetic.
fn movable(arena: &Arena, s: Stmt) -> bool {
    let Stmt::One(_, rhs) = s else {
        return false;
    };
    matches!(
        arena[rhs],
        Node::Reduce(..)
            | Node::Foldl(..)
            | Node::Op1(..)
            | Node::Op2(..)
            | Node::Const(_)
            | Node::Len(_)
    )
}

/// The chain `body` with its movable statements above the loops they do not read, or
/// `None` if none moves.
fn reorder(arena: &mut Arena, body: ExprId) -> Option<ExprId> {
    let (stmts, tail) = unchain(arena, body);
    let mut out: Vec<Stmt> = Vec::with_capacity(stmts.len());
    let mut moved = false;
    for s in stmts {
        let mut at = out.len();
        if movable(arena, s) {
            let reads: HashSet<Var> = arena.free_vars(s.rhs()).into_iter().collect();
            let mut bound = HashSet::default();
            while at > 0 {
                let before = out[at - 1];
                bound.clear();
                bound_by(arena, std::slice::from_ref(&before), &mut bound);
                let loop_ = elementwise(arena, before.rhs()).is_some();
                if !loop_ || bound.iter().any(|v| reads.contains(v)) {
                    break;
                }
                at -= 1;
            }
            if let Some(to) = after_its_loop(arena, &out, s, &reads) {
                at = at.min(to);
            }
        }
        moved |= at < out.len();
        out.insert(at, s);
    }
    moved.then(|| rechain(arena, &out, tail))
}

/// Where a fold `s` of a loop's result goes when statements it does not read stand
/// between them: right after the loop, and after the folds of that loop already there
/// (in their order). `reads`: what `s` reads. `None` unless the last statement of `out`
/// that binds something `s` reads is a loop (`map` or `map2`) that `s` folds.
fn after_its_loop(arena: &Arena, out: &[Stmt], s: Stmt, reads: &HashSet<Var>) -> Option<usize> {
    if !matches!(arena[s.rhs()], Node::Reduce(..) | Node::Foldl(..)) {
        return None;
    }
    let mut bound = HashSet::default();
    let producer = out.iter().rposition(|before| {
        bound.clear();
        bound_by(arena, std::slice::from_ref(before), &mut bound);
        bound.iter().any(|v| reads.contains(v))
    })?;
    elementwise(arena, out[producer].rhs())?;
    let mut made = HashSet::default();
    bound_by(arena, &out[producer..=producer], &mut made);
    // The folds of the same loop already after it keep their place before `s`.
    let mut to = producer + 1;
    while to < out.len()
        && matches!(arena[out[to].rhs()], Node::Reduce(..) | Node::Foldl(..))
        && arena
            .free_vars(out[to].rhs())
            .iter()
            .any(|v| made.contains(v))
    {
        to += 1;
    }
    Some(to)
}
