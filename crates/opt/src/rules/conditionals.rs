//! Conditionals: known conditions are folded by the walk; these rules handle the rest.

use unfad_syntax::{ExprId, Node, Var};

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
/// trivial `c` (or one comparison of trivial terms): each component can then simplify
/// (and be bound) on its own. A branch may bind a few scalar operations before its tuple
/// (`let i = j - 1 in (1, scatter_add(..., [i], ...))`, the adjoint of a read at a
/// neighbour's position): they are substituted into the components that read them, in
/// the same branch. Reverse mode makes such
/// conditionals of a constant adjoint beside an array's; split, the constant is known
/// outside the conditional and the array's additions become conditional scatters into
/// one accumulator, instead of an array per element added up.
pub fn split_tuple_branches(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::If(c, a, b) = cx.arena()[e] else {
        return None;
    };
    let (lets_a, a) = scalar_lets(cx, a)?;
    let (lets_b, b) = scalar_lets(cx, b)?;
    let (Node::Tuple(la), Node::Tuple(lb)) = (cx.arena()[a], cx.arena()[b]) else {
        return None;
    };
    // The condition is copied into each component: a name, or one comparison of names.
    let cheap = cx.is_trivial(c)
        || matches!(cx.arena()[c], Node::Cmp(_, x, y) if cx.is_trivial(x) && cx.is_trivial(y));
    if la.len() != lb.len() || !cheap {
        return None;
    }
    let (xs, ys) = (cx.arena().exprs(la).to_vec(), cx.arena().exprs(lb).to_vec());
    let parts: Vec<ExprId> = xs
        .iter()
        .zip(&ys)
        .map(|(&x, &y)| {
            let x = substitute(cx, &lets_a, x);
            let y = substitute(cx, &lets_b, y);
            let i = cx.mk(Node::If(c, x, y));
            crate::rules::apply(cx, i).unwrap_or(i)
        })
        .collect();
    Some(cx.tuple(&parts))
}

/// The `let`s of scalar arithmetic (at most a few operations each, no arrays) before the
/// term `e` ends in, and that term; `None` if some `let` does more.
fn scalar_lets(cx: &RuleCx, mut e: ExprId) -> Option<(Vec<(Var, ExprId)>, ExprId)> {
    let mut lets = Vec::new();
    while let Node::Let(v, rhs, body) = cx.arena()[e] {
        let light = cx.arena().within_operations(rhs, &mut { 3 }, &|n| {
            matches!(
                n,
                Node::Op1(..) | Node::Op2(..) | Node::Index(..) | Node::Len(_)
            )
        });
        if !light {
            return None;
        }
        lets.push((v, rhs));
        e = body;
    }
    Some((lets, e))
}

/// `e` with the variables of `lets` replaced by their terms (each component gets its own
/// copy of the few operations, so that no variable is bound twice); `e` itself when
/// there are none.
fn substitute(cx: &mut RuleCx, lets: &[(Var, ExprId)], e: ExprId) -> ExprId {
    let mut out = e;
    for &(v, rhs) in lets.iter().rev() {
        out = cx.simplify_with(out, &[(v, rhs)]);
    }
    out
}
