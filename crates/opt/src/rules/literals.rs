//! Array literals: their shifts and last elements are literals again, and array
//! operations over small literals are unrolled into scalar code. These turn the adjoints
//! of array literals (read element by element with `foldl (acc, x. x)` and `shift1R`)
//! back into the literal's components.

use unfad_syntax::reduction::{blocked_fold, reduce_order, unit, ReduceOrder};
use unfad_syntax::{ExprId, Node, Type, Var};

use crate::simplify::RuleCx;

/// Literals of at most this many elements are unrolled (and substituted when bound).
pub const UNROLL: usize = 8;

/// The elements of an array literal.
fn literal(cx: &RuleCx, e: ExprId) -> Option<Vec<ExprId>> {
    match cx.arena()[e] {
        Node::Array(l) => Some(cx.arena().exprs(l).to_vec()),
        _ => None,
    }
}

/// The elements of a literal small enough to unroll.
fn small_literal(cx: &RuleCx, e: ExprId) -> Option<Vec<ExprId>> {
    literal(cx, e).filter(|items| items.len() <= UNROLL)
}

fn params_and_body(cx: &RuleCx, f: ExprId) -> Option<(Vec<Var>, ExprId)> {
    cx.arena().lambda_parts(f).map(|(ps, b)| (ps.to_vec(), b))
}

/// `let p1 = a1 in ... let pk = ak in body`, as a raw term to simplify.
fn apply_raw(cx: &mut RuleCx, params: &[Var], args: &[ExprId], body: ExprId) -> ExprId {
    params
        .iter()
        .zip(args)
        .rev()
        .fold(body, |acc, (&p, &a)| cx.arena_mut().let_(p, a, acc))
}

/// `shift1L [e1, ..., ek]` is `[e2, ..., ek]` and `shift1R` drops `ek` (k >= 2).
pub fn shift_literal(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (a, left) = match cx.arena()[e] {
        Node::Shift1L(a) => (a, true),
        Node::Shift1R(a) => (a, false),
        _ => return None,
    };
    let items = literal(cx, a)?;
    if items.len() < 2 {
        return None;
    }
    let kept = if left {
        &items[1..]
    } else {
        &items[..items.len() - 1]
    };
    let l = cx.arena_mut().expr_list(kept);
    Some(cx.mk(Node::Array(l)))
}

/// The last element `foldl (acc, x. x) z [e1, ..., ek]` is `ek`.
pub fn last_of_literal(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Foldl(f, _, x) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = params_and_body(cx, f)?;
    if cx.arena()[body] != Node::Var(*ps.get(1)?) {
        return None;
    }
    literal(cx, x)?.last().copied()
}

/// `map f [a1, ..., ak]` is `[f(a1), ..., f(ak)]`, and `map2 f [..] [..]` likewise.
pub fn map_literal(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (f, columns) = match cx.arena()[e] {
        Node::Map(f, a) => (f, vec![small_literal(cx, a)?]),
        Node::Map2(f, a, b) => {
            let (xs, ys) = (small_literal(cx, a)?, small_literal(cx, b)?);
            (f, vec![xs, ys])
        }
        _ => return None,
    };
    let (ps, body) = params_and_body(cx, f)?;
    if ps.len() != columns.len() {
        return None;
    }
    let k = columns.iter().map(Vec::len).min()?;
    let raw: Vec<ExprId> = (0..k)
        .map(|i| {
            let args: Vec<ExprId> = columns.iter().map(|c| c[i]).collect();
            apply_raw(cx, &ps, &args, body)
        })
        .collect();
    let l = cx.arena_mut().expr_list(&raw);
    let unrolled = cx.arena_mut().add(Node::Array(l));
    Some(cx.simplify(unrolled))
}

/// `scanl f z [a1, ..., ak]` is `let s1 = f(z, a1) in ... [z, s1, ..., sk]` (and `scanr`
/// from the right); `reduce`/`foldl` give `sk`.
pub fn fold_literal(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (f, z, a, kind) = match cx.arena()[e] {
        Node::Scanl(f, z, a) => (f, z, a, Kind::ScanLeft),
        Node::Scanr(f, z, a) => (f, z, a, Kind::ScanRight),
        Node::Reduce(f, z, a) | Node::Foldl(f, z, a) => (f, z, a, Kind::Fold),
        _ => return None,
    };
    let mut items = small_literal(cx, a)?;
    let (ps, body) = params_and_body(cx, f)?;
    if ps.len() != 2 {
        return None;
    }
    let acc_ty = cx.ty(z);
    let mut steps = Vec::new();
    if let (Node::Reduce(..), ReduceOrder::Blocked(op)) =
        (cx.arena()[e], reduce_order(cx.arena(), f))
    {
        // The order every evaluator follows (`unfad_syntax::reduction`).
        let u = cx.mk(Node::Const(unit(op)?));
        let result = blocked_fold(
            z,
            || u,
            &items,
            |acc, x| -> Result<ExprId, ()> {
                let step = apply_raw(cx, &ps, &[acc, x], body);
                let v = cx.arena_mut().fresh_var("s", acc_ty.clone());
                steps.push((v, step));
                Ok(cx.arena_mut().var(v))
            },
        )
        .ok()?;
        let raw = steps
            .into_iter()
            .rev()
            .fold(result, |acc, (v, step)| cx.arena_mut().let_(v, step, acc));
        return Some(cx.simplify(raw));
    }
    if kind == Kind::ScanRight {
        items.reverse();
    }
    let mut accs = vec![z];
    for &x in &items {
        let prev = *accs.last()?;
        let args = if kind == Kind::ScanRight {
            [x, prev]
        } else {
            [prev, x]
        };
        let step = apply_raw(cx, &ps, &args, body);
        let v = cx.arena_mut().fresh_var("s", acc_ty.clone());
        steps.push((v, step));
        accs.push(cx.arena_mut().var(v));
    }
    let result = match kind {
        Kind::Fold => *accs.last()?,
        Kind::ScanLeft => {
            let l = cx.arena_mut().expr_list(&accs);
            cx.arena_mut().add(Node::Array(l))
        }
        Kind::ScanRight => {
            accs.reverse();
            let l = cx.arena_mut().expr_list(&accs);
            cx.arena_mut().add(Node::Array(l))
        }
    };
    let raw = steps
        .into_iter()
        .rev()
        .fold(result, |acc, (v, step)| cx.arena_mut().let_(v, step, acc));
    Some(cx.simplify(raw))
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Kind {
    ScanLeft,
    ScanRight,
    Fold,
}

/// `zeros_like([e1, ..., ek])` is `[zeros_like(e1), ..., zeros_like(ek)]` (so for ones).
pub fn fill_literal(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (a, zero) = match cx.arena()[e] {
        Node::ZerosLike(a) => (a, true),
        Node::OnesLike(a) => (a, false),
        _ => return None,
    };
    let items = small_literal(cx, a)?;
    let fills: Vec<ExprId> = items
        .iter()
        .map(|&i| {
            let f = cx.mk(if zero {
                Node::ZerosLike(i)
            } else {
                Node::OnesLike(i)
            });
            crate::rules::apply(cx, f).unwrap_or(f)
        })
        .collect();
    let l = cx.arena_mut().expr_list(&fills);
    Some(cx.mk(Node::Array(l)))
}

/// `[e0, ..., ek][c]` is `ec` for a constant position `c` in bounds (out of bounds, the
/// read stays and is an error at run time); `zeros_like(A)[c]` is 0 where `A` holds reals
/// and has more than `c` elements. Small arrays built as literals (a cross product, a
/// point's coordinates) are then never built when only their elements are read.
pub fn index_of_literal(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Index(a, i) = cx.arena()[e] else {
        return None;
    };
    if let Node::ZerosLike(z) = cx.arena()[a] {
        let real = matches!(cx.ty(z), Some(Type::Array(_, ref el)) if **el == Type::Real);
        let k = cx.len_of(z)?.as_constant()? as usize;
        position(cx, i, k).filter(|_| real)?;
        return Some(cx.constant(0.0));
    }
    let items = literal(cx, a)?;
    let at = position(cx, i, items.len())?;
    Some(items[at])
}

/// A whole-number constant in `0..k`.
fn position(cx: &RuleCx, e: ExprId, k: usize) -> Option<usize> {
    match cx.arena()[e] {
        Node::Const(c) if c >= 0.0 && c.fract() == 0.0 && c < k as f64 => Some(c as usize),
        _ => None,
    }
}
