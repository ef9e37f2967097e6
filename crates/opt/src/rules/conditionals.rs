//! Conditionals: known conditions are folded by the walk; these rules handle the rest.

use unfad_syntax::{ExprId, Node};

use crate::simplify::Simplifier;

/// `if c then e else e` is `e`.
pub fn same_branches(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::If(_, a, b) = s.arena[e] else {
        return None;
    };
    (a == b).then_some(a)
}

/// `if c then true else false` is `c`; the other way round it is `!c`.
pub fn boolean_branches(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::If(c, a, b) = s.arena[e] else {
        return None;
    };
    match (s.arena[a], s.arena[b]) {
        (Node::Bool(true), Node::Bool(false)) => Some(c),
        (Node::Bool(false), Node::Bool(true)) => Some(s.mk(Node::Not(c))),
        _ => None,
    }
}

/// `f(if c then a else b)` is `if c then f(a) else f(b)`, for a scalar operator `f`
/// whose other operand is trivial and when a branch is a constant (so that it folds).
pub fn push_into_if(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let node = s.arena[e];
    let kids = s.arena.node_children(node);
    let (pos, c, a, b) = kids
        .iter()
        .enumerate()
        .find_map(|(i, &k)| match s.arena[k] {
            Node::If(c, a, b) => Some((i, c, a, b)),
            _ => None,
        })?;
    let others_trivial = kids
        .iter()
        .enumerate()
        .all(|(i, &k)| i == pos || s.is_trivial(k));
    let constant_branch =
        matches!(s.arena[a], Node::Const(_)) || matches!(s.arena[b], Node::Const(_));
    if !others_trivial || !constant_branch {
        return None;
    }
    let branch = |s: &mut Simplifier, x: ExprId| {
        let mut it = kids
            .iter()
            .enumerate()
            .map(|(i, &k)| if i == pos { x } else { k })
            .collect::<Vec<_>>()
            .into_iter();
        let n = s
            .arena
            .map_children(node, |_, _| it.next().expect("one per child"));
        let n = s.mk(n);
        crate::rules::apply(s, n).unwrap_or(n)
    };
    let (fa, fb) = (branch(s, a), branch(s, b));
    Some(s.mk(Node::If(c, fa, fb)))
}

/// `if c then (a1, ..., ak) else (b1, ..., bk)` is `(if c then a1 else b1, ...)` for a
/// trivial `c`: each component can then simplify (and be bound) on its own.
pub fn split_tuple_branches(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::If(c, a, b) = s.arena[e] else {
        return None;
    };
    let (Node::Tuple(la), Node::Tuple(lb)) = (s.arena[a], s.arena[b]) else {
        return None;
    };
    if la.len() != lb.len() || !s.is_trivial(c) {
        return None;
    }
    let (xs, ys) = (s.arena.exprs(la).to_vec(), s.arena.exprs(lb).to_vec());
    let parts: Vec<ExprId> = xs
        .iter()
        .zip(&ys)
        .map(|(&x, &y)| {
            let i = s.mk(Node::If(c, x, y));
            crate::rules::apply(s, i).unwrap_or(i)
        })
        .collect();
    Some(s.tuple(&parts))
}
