//! Tuple partial evaluation, and zeros and ones of reals and tuples.

use unfad_syntax::{ExprId, Node, Type};

use crate::simplify::RuleCx;

/// `(e1, ..., en).i` is `ei`.
pub fn project_tuple(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Proj(i, a) = cx.arena()[e] else {
        return None;
    };
    match cx.arena()[a] {
        Node::Tuple(l) => cx.arena().exprs(l).get(i as usize).copied(),
        _ => None,
    }
}

/// A projection of `zeros_like(t)` is `zeros_like(t.i)` (and so for ones).
pub fn project_constant(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Proj(i, a) = cx.arena()[e] else {
        return None;
    };
    match cx.arena()[a] {
        Node::ZerosLike(t) => {
            let p = cx.mk(Node::Proj(i, t));
            Some(cx.mk(Node::ZerosLike(p)))
        }
        Node::OnesLike(t) => {
            let p = cx.mk(Node::Proj(i, t));
            Some(cx.mk(Node::OnesLike(p)))
        }
        _ => None,
    }
}

fn fill(cx: &RuleCx, e: ExprId) -> Option<(ExprId, f64)> {
    match cx.arena()[e] {
        Node::ZerosLike(a) => Some((a, 0.0)),
        Node::OnesLike(a) => Some((a, 1.0)),
        _ => None,
    }
}

/// `zeros_like(x)` of a real is `0`, `ones_like(x)` is `1`.
pub fn constant_of_real(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (a, c) = fill(cx, e)?;
    (cx.ty(a)? == Type::Real).then(|| cx.constant(c))
}

/// `zeros_like(t)` of a tuple is the tuple of the components' zeros (so for ones).
pub fn constant_of_tuple(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (a, c) = fill(cx, e)?;
    let Type::Tuple(items) = cx.ty(a)? else {
        return None;
    };
    let parts: Vec<ExprId> = (0..items.len())
        .map(|i| {
            let p = match cx.arena()[a] {
                Node::Tuple(l) => cx.arena().exprs(l)[i],
                _ => cx.mk(Node::Proj(i as u32, a)),
            };
            let z = cx.mk(if c == 0.0 {
                Node::ZerosLike(p)
            } else {
                Node::OnesLike(p)
            });
            crate::rules::apply(cx, z).unwrap_or(z)
        })
        .collect();
    Some(cx.tuple(&parts))
}

/// `(if c then a else b).i` is `if c then a.i else b.i` (each branch still runs at most once).
pub fn project_into_if(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Proj(i, x) = cx.arena()[e] else {
        return None;
    };
    let Node::If(c, a, b) = cx.arena()[x] else {
        return None;
    };
    let branch = |cx: &mut RuleCx, t: ExprId| {
        let p = cx.mk(Node::Proj(i, t));
        crate::rules::apply(cx, p).unwrap_or(p)
    };
    let (pa, pb) = (branch(cx, a), branch(cx, b));
    Some(cx.mk(Node::If(c, pa, pb)))
}

/// `(t.0, ..., t.(k-1))` for a tuple `t` of k components is `t`.
pub fn tuple_eta(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Tuple(l) = cx.arena()[e] else {
        return None;
    };
    let items = cx.arena().exprs(l).to_vec();
    let Node::Proj(0, t) = cx.arena()[items[0]] else {
        return None;
    };
    let all = items
        .iter()
        .enumerate()
        .all(|(i, &x)| cx.arena()[x] == Node::Proj(i as u32, t));
    match cx.ty(t)? {
        Type::Tuple(parts) if all && parts.len() == items.len() => Some(t),
        _ => None,
    }
}

/// `p.i` is the constant `c` when `p` ranges over the elements of an array whose
/// components `i` are all `c` (`map (x. (0, f(x))) A`).
pub fn project_constant_part(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Proj(i, p) = cx.arena()[e] else {
        return None;
    };
    let Node::Var(v) = cx.arena()[p] else {
        return None;
    };
    cx.constant_part(v, i as usize)
}
