//! Conditionals: known conditions are folded by the walk; these rules handle the rest.

use unfad_syntax::{ExprId, Node};

use crate::simplify::RuleCx;

/// `if c then e else e` is `e`.
pub fn same_branches(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::If(_, a, b) = cx.arena()[e] else {
        return None;
    };
    (a == b).then_some(a)
}

/// `if c then true else false` is `c`; the other way round it is `!c`.
pub fn boolean_branches(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::If(c, a, b) = cx.arena()[e] else {
        return None;
    };
    match (cx.arena()[a], cx.arena()[b]) {
        (Node::Bool(true), Node::Bool(false)) => Some(c),
        (Node::Bool(false), Node::Bool(true)) => Some(cx.mk(Node::Not(c))),
        _ => None,
    }
}

/// `f(if c then a else b)` is `if c then f(a) else f(b)`, for a scalar operator `f`
/// whose other operand is trivial and when a branch is a constant (so that it folds).
pub fn push_into_if(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let node = cx.arena()[e];
    let kids = cx.arena().node_children(node);
    let (pos, c, a, b) = kids
        .iter()
        .enumerate()
        .find_map(|(i, &k)| match cx.arena()[k] {
            Node::If(c, a, b) => Some((i, c, a, b)),
            _ => None,
        })?;
    let others_trivial = kids
        .iter()
        .enumerate()
        .all(|(i, &k)| i == pos || cx.is_trivial(k));
    let constant_branch =
        matches!(cx.arena()[a], Node::Const(_)) || matches!(cx.arena()[b], Node::Const(_));
    if !others_trivial || !constant_branch {
        return None;
    }
    let branch = |cx: &mut RuleCx, x: ExprId| {
        let mut it = kids
            .iter()
            .enumerate()
            .map(|(i, &k)| if i == pos { x } else { k })
            .collect::<Vec<_>>()
            .into_iter();
        let n = cx
            .arena_mut()
            .map_children(node, |_, _| it.next().expect("one per child"));
        let n = cx.mk(n);
        crate::rules::apply(cx, n).unwrap_or(n)
    };
    let (fa, fb) = (branch(cx, a), branch(cx, b));
    Some(cx.mk(Node::If(c, fa, fb)))
}

/// `if c then (a1, ..., ak) else (b1, ..., bk)` is `(if c then a1 else b1, ...)` for a
/// trivial `c`: each component can then simplify (and be bound) on its own.
pub fn split_tuple_branches(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::If(c, a, b) = cx.arena()[e] else {
        return None;
    };
    let (Node::Tuple(la), Node::Tuple(lb)) = (cx.arena()[a], cx.arena()[b]) else {
        return None;
    };
    if la.len() != lb.len() || !cx.is_trivial(c) {
        return None;
    }
    let (xs, ys) = (cx.arena().exprs(la).to_vec(), cx.arena().exprs(lb).to_vec());
    let parts: Vec<ExprId> = xs
        .iter()
        .zip(&ys)
        .map(|(&x, &y)| {
            let i = cx.mk(Node::If(c, x, y));
            crate::rules::apply(cx, i).unwrap_or(i)
        })
        .collect();
    Some(cx.tuple(&parts))
}
