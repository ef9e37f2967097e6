//! Tuple partial evaluation, and zeros and ones of reals and tuples.

use unfad_syntax::{ExprId, Node, Type};

use crate::simplify::Simplifier;

/// `(e1, ..., en).i` is `ei`.
pub fn project_tuple(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Proj(i, a) = s.arena[e] else {
        return None;
    };
    match s.arena[a] {
        Node::Tuple(l) => s.arena.exprs(l).get(i as usize).copied(),
        _ => None,
    }
}

/// A projection of `zeros_like(t)` is `zeros_like(t.i)` (and so for ones).
pub fn project_constant(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Proj(i, a) = s.arena[e] else {
        return None;
    };
    match s.arena[a] {
        Node::ZerosLike(t) => {
            let p = s.mk(Node::Proj(i, t));
            Some(s.mk(Node::ZerosLike(p)))
        }
        Node::OnesLike(t) => {
            let p = s.mk(Node::Proj(i, t));
            Some(s.mk(Node::OnesLike(p)))
        }
        _ => None,
    }
}

fn fill(s: &Simplifier, e: ExprId) -> Option<(ExprId, f64)> {
    match s.arena[e] {
        Node::ZerosLike(a) => Some((a, 0.0)),
        Node::OnesLike(a) => Some((a, 1.0)),
        _ => None,
    }
}

/// `zeros_like(x)` of a real is `0`, `ones_like(x)` is `1`.
pub fn constant_of_real(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let (a, c) = fill(s, e)?;
    (s.ty(a)? == Type::Real).then(|| s.constant(c))
}

/// `zeros_like(t)` of a tuple is the tuple of the components' zeros (so for ones).
pub fn constant_of_tuple(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let (a, c) = fill(s, e)?;
    let Type::Tuple(items) = s.ty(a)? else {
        return None;
    };
    let parts: Vec<ExprId> = (0..items.len())
        .map(|i| {
            let p = match s.arena[a] {
                Node::Tuple(l) => s.arena.exprs(l)[i],
                _ => s.mk(Node::Proj(i as u32, a)),
            };
            let z = s.mk(if c == 0.0 {
                Node::ZerosLike(p)
            } else {
                Node::OnesLike(p)
            });
            crate::rules::apply(s, z).unwrap_or(z)
        })
        .collect();
    Some(s.tuple(&parts))
}

/// `(if c then a else b).i` is `if c then a.i else b.i` (each branch still runs at most once).
pub fn project_into_if(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Proj(i, x) = s.arena[e] else {
        return None;
    };
    let Node::If(c, a, b) = s.arena[x] else {
        return None;
    };
    let branch = |s: &mut Simplifier, t: ExprId| {
        let p = s.mk(Node::Proj(i, t));
        crate::rules::apply(s, p).unwrap_or(p)
    };
    let (pa, pb) = (branch(s, a), branch(s, b));
    Some(s.mk(Node::If(c, pa, pb)))
}

/// `(t.0, ..., t.(k-1))` for a tuple `t` of k components is `t`.
pub fn tuple_eta(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Tuple(l) = s.arena[e] else {
        return None;
    };
    let items = s.arena.exprs(l).to_vec();
    let Node::Proj(0, t) = s.arena[items[0]] else {
        return None;
    };
    let all = items
        .iter()
        .enumerate()
        .all(|(i, &x)| s.arena[x] == Node::Proj(i as u32, t));
    match s.ty(t)? {
        Type::Tuple(parts) if all && parts.len() == items.len() => Some(t),
        _ => None,
    }
}

/// `p.i` is the constant `c` when `p` ranges over the elements of an array whose
/// components `i` are all `c` (`map (x. (0, f(x))) A`).
pub fn project_constant_part(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Proj(i, p) = s.arena[e] else {
        return None;
    };
    let Node::Var(v) = s.arena[p] else {
        return None;
    };
    s.constant_part(v, i as usize)
}
