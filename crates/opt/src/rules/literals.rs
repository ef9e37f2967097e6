//! Array literals: their shifts and last elements are literals again, and array
//! operations over small literals are unrolled into scalar code. These turn the adjoints
//! of array literals (read element by element with `foldl (acc, x. x)` and `shift1R`)
//! back into the literal's components.

use unfad_syntax::reduction::{blocked_fold, reduce_order, unit, ReduceOrder};
use unfad_syntax::{BinOp, ExprId, Node, Type, Var};

use crate::simplify::RuleCx;

/// Literals of at most this many elements are unrolled (and substituted when bound).
pub const UNROLL: usize = 8;

/// The elements of an array literal, written here or bound to a variable (then only a
/// literal of constants and variables, which reading again costs nothing: an adjoint's
/// zeros).
fn literal(cx: &RuleCx, e: ExprId) -> Option<Vec<ExprId>> {
    match cx.arena()[e] {
        Node::Array(l) => Some(cx.arena().exprs(l).to_vec()),
        Node::Var(v) => {
            let d = cx.definition(v)?;
            let Node::Array(l) = cx.arena()[d] else {
                return None;
            };
            let items = cx.arena().exprs(l).to_vec();
            items
                .iter()
                .all(|&i| matches!(cx.arena()[i], Node::Const(_) | Node::Var(_)))
                .then_some(items)
        }
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

/// `[a[0], ..., a[k-1]]` is `a` when `a` (a variable, or a component of one) has `k`
/// elements: the literal an unrolled `map2 + zeros a` leaves.
pub fn literal_eta(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let items = literal(cx, e).filter(|_| matches!(cx.arena()[e], Node::Array(_)))?;
    let Node::Index(a, _) = cx.arena()[*items.first()?] else {
        return None;
    };
    if !component_of_variable(cx, a) {
        return None;
    }
    let read_in_order = items.iter().enumerate().all(|(i, &x)| match cx.arena()[x] {
        Node::Index(b, c) => same_component(cx, a, b) && cx.arena()[c] == Node::Const(i as f64),
        _ => false,
    });
    // The same type too (a literal's length is a number, an array's may be a size
    // variable known to be that number).
    (read_in_order
        && cx.len_of(a)?.as_constant()? == items.len() as u64
        && cx.ty(a)? == cx.ty(e)?)
    .then_some(a)
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

/// `map f [a1, ..., ak]` is `[f(a1), ..., f(ak)]`, and `map2 f [..] [..]` likewise; the
/// other operand of a `map2` over a literal may also be a short `iota` or a variable
/// holding as many reals ([`beside`]).
pub fn map_literal(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let f = match cx.arena()[e] {
        Node::Map(f, _) | Node::Map2(f, ..) => f,
        _ => return None,
    };
    let (_, body) = params_and_body(cx, f)?;
    // Longer literals (an adjoint of a camera's 11 parameters, added into element by
    // element) are unrolled when each element costs a few operations.
    let light = cx
        .arena()
        .within_operations(body, &mut { LIGHT_BODY }, &|n| !n.is_array_op());
    let most = if light { SMALL_ADJOINT } else { UNROLL };
    let lit = |cx: &RuleCx, a: ExprId| literal(cx, a).filter(|items| items.len() <= most);
    let (f, columns) = match cx.arena()[e] {
        Node::Map(f, a) => (f, vec![lit(cx, a)?]),
        Node::Map2(f, a, b) => {
            let (xs, ys) = match (lit(cx, a), lit(cx, b)) {
                (Some(xs), Some(ys)) => (xs, ys),
                (Some(xs), None) => {
                    let ys = beside(cx, b, xs.len())?;
                    (xs, ys)
                }
                (None, Some(ys)) => (beside(cx, a, ys.len())?, ys),
                // A short `iota` beside a variable's elements.
                (None, None) => match (small_iota(cx, a), small_iota(cx, b)) {
                    (Some(k), _) => (positions(cx, k), beside(cx, b, k)?),
                    (None, Some(k)) => (beside(cx, a, k)?, positions(cx, k)),
                    (None, None) => return None,
                },
            };
            (f, vec![xs, ys])
        }
        _ => return None,
    };
    let (ps, body) = params_and_body(cx, f)?;
    unroll(cx, &ps, body, &columns)
}

/// `[f(c1[0], ...), ..., f(c1[k-1], ...)]` for the function `(ps. body)` and the operands'
/// elements `columns` (one column per parameter), simplified.
fn unroll(cx: &mut RuleCx, ps: &[Var], body: ExprId, columns: &[Vec<ExprId>]) -> Option<ExprId> {
    if ps.len() != columns.len() {
        return None;
    }
    let k = columns.iter().map(Vec::len).min()?;
    let raw: Vec<ExprId> = (0..k)
        .map(|i| {
            let args: Vec<ExprId> = columns.iter().map(|c| c[i]).collect();
            apply_raw(cx, ps, &args, body)
        })
        .collect();
    let l = cx.arena_mut().expr_list(&raw);
    let unrolled = cx.arena_mut().add(Node::Array(l));
    Some(cx.simplify(unrolled))
}

/// `[a[0], ..., a[k-1]]`: reads of the variable `a` at constant positions.
fn elements(cx: &mut RuleCx, a: ExprId, k: usize) -> Vec<ExprId> {
    (0..k)
        .map(|i| {
            let c = cx.constant(i as f64);
            cx.mk(Node::Index(a, c))
        })
        .collect()
}

/// `[0, ..., k-1]` as constants.
fn positions(cx: &mut RuleCx, k: usize) -> Vec<ExprId> {
    (0..k).map(|i| cx.constant(i as f64)).collect()
}

/// The elements of the other operand of a `map2` beside a literal of `k` elements:
/// `[0, ..., k-1]` for `iota k`, and `[a[0], ..., a[k-1]]` for a variable `a` holding `k`
/// reals, or a component of one (`snd G`, a tuple's array bound by an `if`).
fn beside(cx: &mut RuleCx, a: ExprId, k: usize) -> Option<Vec<ExprId>> {
    if small_iota(cx, a) == Some(k) {
        return Some(positions(cx, k));
    }
    if !component_of_variable(cx, a) || small_real_len(cx, a, SMALL_ADJOINT) != Some(k) {
        return None;
    }
    Some(elements(cx, a, k))
}

/// Whether the components of variables `a` and `b` are the same.
fn same_component(cx: &RuleCx, a: ExprId, b: ExprId) -> bool {
    a == b
        || match (cx.arena()[a], cx.arena()[b]) {
            (Node::Var(v), Node::Var(w)) => v == w,
            (Node::Proj(i, x), Node::Proj(j, y)) => i == j && same_component(cx, x, y),
            _ => false,
        }
}

/// A variable, or a projection of a component of one (reading it costs nothing).
fn component_of_variable(cx: &RuleCx, a: ExprId) -> bool {
    match cx.arena()[a] {
        Node::Var(_) => true,
        Node::Proj(_, t) => component_of_variable(cx, t),
        _ => false,
    }
}

/// The operations an element's function may have for a literal of up to
/// [`SMALL_ADJOINT`] elements to be unrolled (beyond [`UNROLL`]).
const LIGHT_BODY: usize = 6;

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
        let k = small_real_len(cx, z, usize::MAX)?;
        position(cx, i, k)?;
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

/// Arrays of reals of at most this many elements, of a constant length, are taken apart
/// into scalars where they are built: `map` over `iota k` ([`map_small_iota`]), their
/// zeros ([`small_zeros`]), a `map2` beside a literal ([`map_literal`]).
pub const SMALL: usize = 4;

/// Adjoints of arrays of reals of at most this many elements, of a constant length (a
/// camera's 11 parameters), are literals: [`small_zeros`] and [`scatter_into_literal`].
pub const SMALL_ADJOINT: usize = 16;

/// The constant length of an array of reals, if it is at most `most`.
fn small_real_len(cx: &mut RuleCx, a: ExprId, most: usize) -> Option<usize> {
    if !matches!(cx.ty(a), Some(Type::Array(_, ref el)) if **el == Type::Real) {
        return None;
    }
    let k = cx.len_of(a)?.as_constant()? as usize;
    (k <= most).then_some(k)
}

/// `zeros_like(a)` of a short array of reals of constant length `k` (at most
/// [`SMALL_ADJOINT`]) is `[0, ..., 0]`: the adjoint of a point or a camera, then added into by
/// [`scatter_into_literal`] element by element instead of array by array.
pub fn small_zeros(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::ZerosLike(a) = cx.arena()[e] else {
        return None;
    };
    if matches!(cx.arena()[a], Node::Array(_)) {
        return None;
    }
    let k = small_real_len(cx, a, SMALL_ADJOINT)?;
    let zero = cx.constant(0.0);
    let l = cx.arena_mut().expr_list(&vec![zero; k]);
    Some(cx.mk(Node::Array(l)))
}

/// `map (i. e) (iota k)` for a literal `k` of at most [`SMALL`] is `[e[0/i], ...,
/// e[k-1/i]]` when every array `e` reads has a constant length: the three coordinates of
/// a point, a camera's parameters. A body that reads an array of variable length (an
/// image in a stencil's loop) stays a loop: its reads' adjoints are accumulated by the
/// loop rules, which unrolled reads would defeat.
pub fn map_small_iota(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = cx.arena()[e] else {
        return None;
    };
    let k = small_iota(cx, a)?;
    let (ps, body) = params_and_body(cx, f)?;
    if !reads_only_constant_lengths(cx, body) {
        return None;
    }
    let column = positions(cx, k);
    unroll(cx, &ps, body, &[column])
}

/// `k` for `iota k` with a literal `k` in `1..=SMALL`, written there or bound by a `let`.
fn small_iota(cx: &RuleCx, a: ExprId) -> Option<usize> {
    let a = match cx.arena()[a] {
        Node::Var(v) => cx.definition(v)?,
        _ => a,
    };
    let Node::Iota(n) = cx.arena()[a] else {
        return None;
    };
    match cx.arena()[n] {
        Node::Const(c) if c >= 1.0 && c.fract() == 0.0 && c <= SMALL as f64 => Some(c as usize),
        _ => None,
    }
}

/// Every `A[i]` in `e` reads an array whose run-time length is a known constant, and `e`
/// has no loop of its own.
fn reads_only_constant_lengths(cx: &RuleCx, e: ExprId) -> bool {
    match cx.arena()[e] {
        Node::Index(a, _) if cx.len_of(a).and_then(|l| l.as_constant()).is_none() => false,
        node if node.is_array_op() => false,
        Node::ScatterAdd(..) | Node::Iota(_) | Node::Lambda(..) => false,
        _ => {
            let mut ok = true;
            cx.arena()
                .for_each_child(e, |c| ok = ok && reads_only_constant_lengths(cx, c));
            ok
        }
    }
}

/// `scatter_add([z0, ..., zk], P, V)` into a short literal of reals (at most
/// [`SMALL_ADJOINT`]), with positions that
/// are constants (a literal of them, or `iota k`), adds each value into its element:
/// `[z0, ..., zc + v, ..., zk]`; a position outside the array adds nothing, as
/// `scatter_add` does. The values are a literal or are read out one by one.
pub fn scatter_into_literal(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::ScatterAdd(z, at_positions, values) = cx.arena()[e] else {
        return None;
    };
    // The array added into: a literal, or a variable's (or a component's) elements. (Its
    // type is inferred only then: inferring the type of any other term here would record
    // types for its variables out of their context.)
    let mut items = match literal(cx, z) {
        Some(items) => {
            small_real_len(cx, z, SMALL_ADJOINT)?;
            items
        }
        None if component_of_variable(cx, z) => {
            let k = small_real_len(cx, z, SMALL_ADJOINT)?;
            elements(cx, z, k)
        }
        None => return None,
    };
    let at: Vec<f64> = match literal(cx, at_positions) {
        Some(ps) => ps
            .iter()
            .map(|&p| match cx.arena()[p] {
                Node::Const(c) if c.fract() == 0.0 => Some(c),
                _ => None,
            })
            .collect::<Option<_>>()?,
        None => (0..small_iota(cx, at_positions)?)
            .map(|i| i as f64)
            .collect(),
    };
    if at.len() > SMALL_ADJOINT {
        return None;
    }
    let vs: Vec<ExprId> = match literal(cx, values) {
        Some(vs) => vs,
        None => {
            if !matches!(cx.arena()[values], Node::Var(_))
                || cx.len_of(values)?.as_constant()? as usize != at.len()
            {
                return None;
            }
            elements(cx, values, at.len())
        }
    };
    if vs.len() != at.len() {
        return None;
    }
    for (c, v) in at.into_iter().zip(vs) {
        if c >= 0.0 && c < items.len() as f64 {
            let p = c as usize;
            let sum = cx.mk(Node::Op2(unfad_syntax::BinOp::Add, items[p], v));
            items[p] = crate::rules::apply(cx, sum).unwrap_or(sum);
        }
    }
    let l = cx.arena_mut().expr_list(&items);
    Some(cx.mk(Node::Array(l)))
}

/// `map2 + [0, ..., 0] B` and `map2 + B [0, ..., 0]` are `B` when `B` has as many
/// elements as the literal: the adjoint of a short row (a point's coordinates read by
/// position) starts as such a literal, and a sum of rows added to it (the row's adjoint
/// from a loop over other points) is then that sum itself, a reduction the rules and
/// passes over reductions see (a sibling loop's, here). As `0 + e -> e`, this follows the
/// smooth semantics (`0 + -0` is `+0`).
pub fn add_zero_literal(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = params_and_body(cx, f)?;
    let Node::Op2(BinOp::Add, x, y) = cx.arena()[body] else {
        return None;
    };
    let (p0, p1) = (Node::Var(*ps.first()?), Node::Var(*ps.get(1)?));
    let (vx, vy) = (cx.arena()[x], cx.arena()[y]);
    if !((vx == p0 && vy == p1) || (vx == p1 && vy == p0)) {
        return None;
    }
    // The number of zeros, if `l` is a literal of them.
    let zeros = |cx: &RuleCx, l: ExprId| {
        let items = literal(cx, l).filter(|_| matches!(cx.arena()[l], Node::Array(_)))?;
        items
            .iter()
            .all(|&i| matches!(cx.arena()[i], Node::Const(c) if c == 0.0))
            .then_some(items.len())
    };
    let (k, other) = match (zeros(cx, a), zeros(cx, b)) {
        (Some(k), _) => (k, b),
        (None, Some(k)) => (k, a),
        (None, None) => return None,
    };
    let n = cx.len_of(other)?.as_constant()?;
    (n == k as u64).then_some(other)
}
