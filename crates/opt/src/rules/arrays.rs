//! Array algebraic simplifications and map fusion.
//!
//! `zeros_like(A)` and `ones_like(A)` are kept symbolic so that these rules see them; a
//! rule that replaces an array operation by one of its operands first checks with the
//! exact length analysis that the operand is never longer than the result (see
//! [`crate::len`]), since `map2` stops at the shorter array.

use unfad_syntax::reduction::{lane_operator, reduce_order, sums_parts, unit, ReduceOrder};
use unfad_syntax::{with_stack, Arena, BinOp, ExprId, Node, Type, UnOp, Var};

use crate::simplify::RuleCx;

/// Parameters and body of a function argument.
pub(super) fn lambda(cx: &RuleCx, f: ExprId) -> Option<(Vec<Var>, ExprId)> {
    cx.arena().lambda_parts(f).map(|(ps, b)| (ps.to_vec(), b))
}

/// Whether `v` occurs in `body` (binders being unique, a parameter of the function around
/// `body` is free wherever it occurs there).
fn mentions(cx: &RuleCx, body: ExprId, v: Var) -> bool {
    cx.arena().mentions_any(body, &[v])
}

/// `zeros_like(A)` / `ones_like(A)` of an array of reals: `(A, 0.0 or 1.0)`.
fn constant_array(cx: &mut RuleCx, e: ExprId) -> Option<(ExprId, f64)> {
    let (a, c) = match cx.arena()[e] {
        Node::ZerosLike(a) => (a, 0.0),
        Node::OnesLike(a) => (a, 1.0),
        _ => return None,
    };
    match cx.ty(a)? {
        Type::Array(_, elem) if *elem == Type::Real => Some((a, c)),
        _ => None,
    }
}

fn elem_is_real(cx: &mut RuleCx, a: ExprId) -> bool {
    matches!(cx.ty(a), Some(Type::Array(_, elem)) if *elem == Type::Real)
}

fn fill(cx: &mut RuleCx, like: ExprId, c: f64) -> ExprId {
    cx.mk(if c == 0.0 {
        Node::ZerosLike(like)
    } else {
        Node::OnesLike(like)
    })
}

pub(super) fn lam(cx: &mut RuleCx, params: &[Var], body: ExprId) -> ExprId {
    let l = cx.arena_mut().var_list(params);
    cx.mk(Node::Lambda(l, body))
}

/// `map2` of the function `(ps. body)` with parameter `i` replaced by `param` and operand
/// `i` of `(a, b)` by `operand`: what the rules that move an operand's work into the body
/// build.
fn map2_replacing(
    cx: &mut RuleCx,
    ps: &[Var],
    i: usize,
    param: Var,
    body: ExprId,
    (a, b): (ExprId, ExprId),
    operand: ExprId,
) -> ExprId {
    let mut params = ps.to_vec();
    params[i] = param;
    let h = lam(cx, &params, body);
    let (na, nb) = if i == 0 { (operand, b) } else { (a, operand) };
    cx.mk(Node::Map2(h, na, nb))
}

/// `map (x. x) A` is `A`.
pub fn map_identity(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    (cx.arena()[body] == Node::Var(ps[0])).then_some(a)
}

/// `map (x. e) (zeros_like A)` is `map (x. e[0/x]) A` (so for ones): only the length of
/// the operand matters once its elements are known.
pub fn map_constant_operand(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = cx.arena()[e] else {
        return None;
    };
    let (a0, c) = constant_array(cx, a)?;
    let (ps, body) = lambda(cx, f)?;
    let k = cx.constant(c);
    let body = if mentions(cx, body, ps[0]) {
        cx.simplify_with(body, &[(ps[0], k)])
    } else {
        body
    };
    let f = lam(cx, &ps, body);
    Some(cx.mk(Node::Map(f, a0)))
}

/// `map (x. 0) A` over reals is `zeros_like(A)`, and `map (x. 1) A` is `ones_like(A)`.
pub fn map_constant_body(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = cx.arena()[e] else {
        return None;
    };
    let (_, body) = lambda(cx, f)?;
    let c = match cx.arena()[body] {
        Node::Const(c) if c == 0.0 || c == 1.0 => c,
        _ => return None,
    };
    elem_is_real(cx, a).then(|| fill(cx, a, c))
}

/// Map fusion: `map (x. e1) (map2 (y1, y2. e2) A B)` is `map2 (y1, y2. let x = e2 in e1) A B`,
/// and `map (x. e1) (map (y. e2) A)` is `map (y. let x = e2 in e1) A`.
pub fn map_fusion(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = cx.arena()[e] else {
        return None;
    };
    let (ps, e1) = lambda(cx, f)?;
    let (inner_f, node) = match cx.arena()[a] {
        Node::Map(g, x) => (g, Node::Map(g, x)),
        Node::Map2(g, x, y) => (g, Node::Map2(g, x, y)),
        _ => return None,
    };
    let (qs, e2) = lambda(cx, inner_f)?;
    let fused = cx.arena_mut().let_(ps[0], e2, e1);
    let body = cx.simplify(fused);
    let g = lam(cx, &qs, body);
    Some(match node {
        Node::Map(_, x) => cx.mk(Node::Map(g, x)),
        Node::Map2(_, x, y) => cx.mk(Node::Map2(g, x, y)),
        _ => unreachable!("matched above"),
    })
}

/// `map2 (x, y. e) A A` is `map (x. e[x/y]) A`.
pub fn map2_same_operands(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = cx.arena()[e] else {
        return None;
    };
    if a != b {
        return None;
    }
    let (ps, body) = lambda(cx, f)?;
    let x = cx.var(ps[0]);
    let body = cx.simplify_with(body, &[(ps[1], x)]);
    let g = lam(cx, &ps[..1], body);
    Some(cx.mk(Node::Map(g, a)))
}

/// `map2 (x, y. e) A (zeros_like B)` specialises `y` to `0` (so for ones, either side):
/// `map2 * A (ones_like B)` becomes `map2 (x, y. x) A (ones_like B)`, then `A`.
pub fn map2_constant_operand(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    for (i, operand) in [a, b].into_iter().enumerate() {
        if let Some((_, c)) = constant_array(cx, operand) {
            if mentions(cx, body, ps[i]) {
                let k = cx.constant(c);
                let body = cx.simplify_with(body, &[(ps[i], k)]);
                let g = lam(cx, &ps, body);
                return Some(cx.mk(Node::Map2(g, a, b)));
            }
        }
    }
    None
}

/// `map2 (x, y. e) A B` with `y` unused is `map (x. e) A` if `A` is never longer than `B`
/// (and symmetrically).
pub fn map2_unused_param(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    let (uses_x, uses_y) = (mentions(cx, body, ps[0]), mentions(cx, body, ps[1]));
    let (keep, operand) = if !uses_y && cx.not_longer(a, b) {
        (0, a)
    } else if !uses_x && cx.not_longer(b, a) {
        (1, b)
    } else {
        return None;
    };
    let g = lam(cx, &ps[keep..keep + 1], body);
    Some(cx.mk(Node::Map(g, operand)))
}

/// The `map` or `map2` of `(ps. body)` over `operands`, its parameter `i` replaced by `x`
/// and operand `i` by `operand` (`body` reads `x`, and is simplified here): what the
/// rules that narrow an operand to one component of its elements build.
fn map_replacing(
    cx: &mut RuleCx,
    ps: &[Var],
    body: ExprId,
    operands: &[ExprId],
    i: usize,
    x: Var,
    operand: ExprId,
) -> ExprId {
    let body = cx.simplify(body);
    let mut params = ps.to_vec();
    params[i] = x;
    let h = lam(cx, &params, body);
    let mut ops = operands.to_vec();
    ops[i] = operand;
    cx.mk(match ops[..] {
        [a] => Node::Map(h, a),
        [a, b] => Node::Map2(h, a, b),
        _ => unreachable!("a map has one or two operands"),
    })
}

/// A `map` or `map2` whose function reads the elements of an operand only through one
/// component, `p.c`, where that operand is a sum of arrays of tuples element by element
/// (`reduce (s, t. map2 (u, v. (u.0 + v.0, map2 + u.1 v.1)) s t) Z S`: reverse mode's
/// adjoint of an array it zipped, the mixture's components), reads the sum of that
/// component alone: `reduce (s, t. map2 (u, v. u + v) s t) (map (w. w.c) Z) (map (g. map
/// (w. w.c) g) S)`. The other components' sums, which nothing reads (the adjoints of
/// parameters not asked for), go, and with them what made their summands. Exact: the
/// component kept is summed in the same order.
pub fn map_of_summed_component(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (_, f, operands) = crate::siblings::elementwise(cx.arena(), e)?;
    let (ps, body) = lambda(cx, f)?;
    for (i, &operand) in operands.iter().enumerate() {
        let Node::Reduce(op, z, src) = cx.arena()[operand] else {
            continue;
        };
        let Some((st, op_body)) = lambda(cx, op) else {
            continue;
        };
        let [s_var, t_var] = st[..] else {
            continue;
        };
        let Node::Map2(g, sa, ta) = cx.arena()[op_body] else {
            continue;
        };
        if cx.arena()[sa] != Node::Var(s_var) || cx.arena()[ta] != Node::Var(t_var) {
            continue;
        }
        let Some((uv, pair_sum)) = lambda(cx, g) else {
            continue;
        };
        let [u, v] = uv[..] else {
            continue;
        };
        let Node::Tuple(items) = cx.arena()[pair_sum] else {
            continue;
        };
        let items = cx.arena().exprs(items).to_vec();
        for (c, &item) in items.iter().enumerate() {
            if !sums_parts(cx.arena(), u, v, &mut vec![c as u32], item) {
                continue;
            }
            let component = |ty: Option<Type>| match ty {
                Some(Type::Tuple(ts)) => ts.get(c).cloned(),
                _ => None,
            };
            let Some(comp_ty) = component(cx.arena().var_type(u).cloned()) else {
                continue;
            };
            let x = cx.fresh(
                cx.arena().var_name(ps[i]).to_string().as_str(),
                Some(comp_ty.clone()),
            );
            let Some(new_body) = project_params(cx, body, c as u32, &[(ps[i], x)]) else {
                continue;
            };
            // The component's sum: its operator, zero and summands.
            let (u2, v2) = (
                cx.fresh("s", Some(comp_ty.clone())),
                cx.fresh("t", Some(comp_ty.clone())),
            );
            let item2 = project_params(cx, item, c as u32, &[(u, u2), (v, v2)])?;
            let g2 = lam(cx, &[u2, v2], item2);
            let arr_ty = match cx.arena().var_type(s_var) {
                Some(Type::Array(n, _)) => {
                    Type::Array(n.clone(), std::sync::Arc::new(comp_ty.clone()))
                }
                _ => continue,
            };
            let (s2, t2) = (
                cx.fresh("s", Some(arr_ty.clone())),
                cx.fresh("t", Some(arr_ty)),
            );
            let (es2, et2) = (cx.var(s2), cx.var(t2));
            let summed = cx.mk(Node::Map2(g2, es2, et2));
            let op2 = lam(cx, &[s2, t2], summed);
            let w = cx.fresh("w", cx.arena().var_type(u).cloned());
            let ew = cx.var(w);
            let pw = cx.mk(Node::Proj(c as u32, ew));
            let take = lam(cx, &[w], pw);
            let z2 = cx.mk(Node::Map(take, z));
            let row_ty = cx.arena().var_type(s_var).cloned();
            let r = cx.fresh("r", row_ty);
            let w2 = cx.fresh("w", cx.arena().var_type(u).cloned());
            let ew2 = cx.var(w2);
            let pw2 = cx.mk(Node::Proj(c as u32, ew2));
            let take2 = lam(cx, &[w2], pw2);
            let er = cx.var(r);
            let row = cx.mk(Node::Map(take2, er));
            let rows = lam(cx, &[r], row);
            let src2 = cx.mk(Node::Map(rows, src));
            let sum = cx.mk(Node::Reduce(op2, z2, src2));
            return Some(map_replacing(cx, &ps, new_body, &operands, i, x, sum));
        }
    }
    None
}

/// A `map` or `map2` over pairs `map2 (u, v. (u, v)) A B` whose function reads only one
/// component of each pair, say `p.0`, runs over that component's array: `map2 (p, y.
/// e[p.0]) (map2 (u, v. (u, v)) A B) C` is `map2 (x, y. e[x]) A C` when `A` is never longer
/// than `B` (so the pairs were as many as `A`'s elements). Forward mode pairs every array
/// with its tangent; what reads only the values (the primal's reductions in a
/// Hessian-vector product) then reads the values alone, and two such operands meet in
/// one `map2` that the code generator runs without building any pair.
pub fn map_of_zip_half(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (f, operands) = match cx.arena()[e] {
        Node::Map(f, a) => (f, vec![a]),
        Node::Map2(f, a, b) => (f, vec![a, b]),
        _ => return None,
    };
    let (ps, body) = lambda(cx, f)?;
    for (i, &operand) in operands.iter().enumerate() {
        let Node::Map2(g, inner_a, inner_b) = cx.arena()[operand] else {
            continue;
        };
        let Some((qs, pair)) = lambda(cx, g) else {
            continue;
        };
        let is_zip = matches!(cx.arena()[pair], Node::Tuple(l)
            if l.len() == 2
                && cx.arena().exprs(l).iter().zip(&qs).all(|(&x, &q)| cx.arena()[x] == Node::Var(q)));
        if !is_zip {
            continue;
        }
        for (c, (kept, other)) in [(inner_a, inner_b), (inner_b, inner_a)]
            .into_iter()
            .enumerate()
        {
            if !cx.not_longer(kept, other) {
                continue;
            }
            let x = cx.fresh(
                cx.arena().var_name(qs[c]).to_string().as_str(),
                cx.arena().var_type(qs[c]).cloned(),
            );
            let Some(new_body) = project_params(cx, body, c as u32, &[(ps[i], x)]) else {
                continue;
            };
            return Some(map_replacing(cx, &ps, new_body, &operands, i, x, kept));
        }
    }
    None
}

/// `map2 (x, y. e) (map (z. e2) A) B` is `map2 (z, y. let x = e2 in e) A B` (either side);
/// so through a shift, `map2 (x, y. e) (shift1L (map (z. e2) A)) B` is `map2 (z, y. let x =
/// e2 in e) (shift1L A) B` (the shift of a map is the map of the shift).
pub fn map2_fusion(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    for (i, operand) in [a, b].into_iter().enumerate() {
        let (g, inner) = match cx.arena()[operand] {
            Node::Map(g, inner) => (g, inner),
            Node::Shift1L(s) | Node::Shift1R(s) => {
                let Node::Map(g, inner) = cx.arena()[s] else {
                    continue;
                };
                let shifted = match cx.arena()[operand] {
                    Node::Shift1L(_) => Node::Shift1L(inner),
                    _ => Node::Shift1R(inner),
                };
                (g, cx.mk(shifted))
            }
            _ => continue,
        };
        let (qs, e2) = lambda(cx, g)?;
        let fused = cx.arena_mut().let_(ps[i], e2, body);
        let new_body = cx.simplify(fused);
        return Some(map2_replacing(cx, &ps, i, qs[0], new_body, (a, b), inner));
    }
    None
}

/// Whether values of type `t` hold arrays.
fn contains_array(t: &Type) -> bool {
    match t {
        Type::Array(..) => true,
        Type::Tuple(items) => items.iter().any(contains_array),
        _ => false,
    }
}

/// `map2 (x, y. e) (map2 (u, v. e2) A B) C`, whose inner elements are arrays (per element, a
/// `scatter_add` into zeros, an adjoint), is `map2 (p, y. let x = (let u = p.0 in let v =
/// p.1 in e2) in e) (map2 (u', v'. (u', v')) A B) C` (either side): the inner function
/// moves into the outer one over the pairs of its operands, so that what the outer body
/// does with each array (scale it, add it) meets the array's own term (the scatter rules
/// then make the sum of them one accumulation, where an array per element would be
/// stored and added). Elements that are scalars are computed where they are read anyway,
/// and an operand that already only pairs its operands is left as it is.
pub fn map2_zip_fusion(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    for (i, operand) in [a, b].into_iter().enumerate() {
        let Node::Map2(g, inner_a, inner_b) = cx.arena()[operand] else {
            continue;
        };
        let (qs, e2) = lambda(cx, g)?;
        let elem_has_arrays = match cx.ty(operand) {
            Some(Type::Array(_, elem)) => contains_array(&elem),
            _ => false,
        };
        let is_zip = matches!(cx.arena()[e2], Node::Tuple(l)
            if cx.arena().exprs(l).iter().zip(&qs).all(|(&x, &q)| cx.arena()[x] == Node::Var(q))
                && l.len() == 2);
        if !elem_has_arrays || is_zip {
            continue;
        }
        let (tu, tv) = (
            cx.arena().var_type(qs[0])?.clone(),
            cx.arena().var_type(qs[1])?.clone(),
        );
        let pair_ty = Type::tuple(vec![tu.clone(), tv.clone()]);
        let u2 = cx.fresh(cx.arena().var_name(qs[0]).to_string().as_str(), Some(tu));
        let v2 = cx.fresh(cx.arena().var_name(qs[1]).to_string().as_str(), Some(tv));
        let (u2e, v2e) = (cx.var(u2), cx.var(v2));
        let pair = cx.tuple(&[u2e, v2e]);
        let zip_f = lam(cx, &[u2, v2], pair);
        let zip = cx.mk(Node::Map2(zip_f, inner_a, inner_b));
        let p = cx.fresh("p", Some(pair_ty));
        let pe = cx.var(p);
        let first = cx.arena_mut().proj(0, pe);
        let second = cx.arena_mut().proj(1, pe);
        let inner = cx.arena_mut().let_(qs[1], second, e2);
        let inner = cx.arena_mut().let_(qs[0], first, inner);
        let fused = cx.arena_mut().let_(ps[i], inner, body);
        let new_body = cx.simplify(fused);
        return Some(map2_replacing(cx, &ps, i, p, new_body, (a, b), zip));
    }
    None
}

/// A term equal to every element of the array `a`, when all are one known value:
/// `c` for `zeros_like`/`ones_like` of reals, `e` for `map (x. e) A` with a trivial `e`
/// that does not use `x`.
fn constant_elements(cx: &mut RuleCx, a: ExprId) -> Option<ExprId> {
    if let Some((_, c)) = constant_array(cx, a) {
        return Some(cx.constant(c));
    }
    let Node::Map(f, _) = cx.arena()[a] else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    (cx.is_trivial(body) && !mentions(cx, body, ps[0])).then_some(body)
}

/// `reduce f z A` (or `foldl`) over an array of elements all equal to `c` is `z` when
/// `f(z, c)` is `z`: this is `reduce + 0 (zeros_like A) -> 0`, `reduce * 1 (ones_like A)
/// -> 1`, sums of arrays of zero arrays, and more.
pub fn fold_constant_array(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (Node::Reduce(f, z, a) | Node::Foldl(f, z, a)) = cx.arena()[e] else {
        return None;
    };
    if !cx.is_trivial(z) {
        return None;
    }
    let c = constant_elements(cx, a)?;
    // A blocked `reduce` (`unfad_syntax::reduction`) also applies the function to the
    // operator's unit and `c`, and to partial results: `z` stays its value when it is that
    // unit (`-0 + 0` is `+0` though: only `+0` for sums).
    if let (Node::Reduce(..), ReduceOrder::Blocked(op)) =
        (cx.arena()[e], reduce_order(cx.arena(), f))
    {
        let unit_z = match op {
            BinOp::Add => matches!(cx.arena()[z], Node::Const(k) if k.to_bits() == 0),
            _ => unit(op).is_some_and(|u| cx.arena().is_const(z, u)),
        };
        if !unit_z {
            return None;
        }
    }
    let (ps, body) = lambda(cx, f)?;
    let step = cx.simplify_with(body, &[(ps[0], z), (ps[1], c)]);
    (step == z).then_some(z)
}

/// `reduce + 0 (ones_like A)` (or of `map (x. 1) A`) is `len(A)`.
pub fn count_ones(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Reduce(f, z, a) = cx.arena()[e] else {
        return None;
    };
    let (a0, c) = match constant_array(cx, a) {
        Some(found) => found,
        // `map (x. 1) A` over elements of any type
        None => match cx.arena()[a] {
            Node::Map(g, a0) => match cx.arena()[lambda(cx, g)?.1] {
                Node::Const(c) => (a0, c),
                _ => return None,
            },
            _ => return None,
        },
    };
    let (ps, body) = lambda(cx, f)?;
    let plus = matches!(cx.arena()[body], Node::Op2(BinOp::Add, x, y)
        if cx.arena()[x] == Node::Var(ps[0]) && cx.arena()[y] == Node::Var(ps[1]));
    (plus && c == 1.0 && cx.arena().is_const(z, 0.0)).then(|| cx.mk(Node::Len(a0)))
}

/// A constant made of reals and tuples only (no shape), all zeros or all ones: the value.
fn scalar_fill(cx: &RuleCx, e: ExprId) -> Option<f64> {
    match cx.arena()[e] {
        Node::Const(c) if c == 0.0 || c == 1.0 => Some(c),
        Node::Tuple(l) => {
            let items = cx.arena().exprs(l);
            let first = scalar_fill(cx, items[0])?;
            items
                .iter()
                .all(|&i| scalar_fill(cx, i) == Some(first))
                .then_some(first)
        }
        _ => None,
    }
}

/// `map2 (x, y. (0, 0)) A P` is `zeros_like(P)` when `(0, 0)` has the type of `P`'s
/// elements and `P` is never longer than `A` (either side; so for ones).
pub fn map2_fill_body(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = cx.arena()[e] else {
        return None;
    };
    let (_, body) = lambda(cx, f)?;
    let c = scalar_fill(cx, body)?;
    let t = cx.ty(body)?;
    for (x, other) in [(a, b), (b, a)] {
        let elem = match cx.ty(x)? {
            Type::Array(_, elem) => (*elem).clone(),
            _ => return None,
        };
        if elem == t && cx.not_longer(x, other) {
            return Some(fill(cx, x, c));
        }
    }
    None
}

/// `map (x. zeros_like(x)) A` is `zeros_like(A)`, and `map (x. (0, 0)) P` is
/// `zeros_like(P)` when `(0, 0)` has the type of `P`'s elements (so for ones).
pub fn map_fill_body(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    let x = Node::Var(*ps.first()?);
    match cx.arena()[body] {
        Node::ZerosLike(w) if cx.arena()[w] == x => Some(fill(cx, a, 0.0)),
        Node::OnesLike(w) if cx.arena()[w] == x => Some(fill(cx, a, 1.0)),
        _ => {
            let c = scalar_fill(cx, body)?;
            let elem = match cx.ty(a)? {
                Type::Array(_, elem) => (*elem).clone(),
                _ => return None,
            };
            (cx.ty(body)? == elem).then(|| fill(cx, a, c))
        }
    }
}

/// A `reduce` over tuples whose function adds componentwise is a tuple of reductions,
/// one per component (the paper's `reduce hat+ hat0 G`): each can then fuse with the map
/// that computes its component.
pub fn reduce_tuple_split(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Reduce(f, z, a) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    let (p, q) = (ps[0], ps[1]);
    let Node::Tuple(items) = cx.arena()[body] else {
        return None;
    };
    let items = cx.arena().exprs(items).to_vec();
    let Some(Type::Tuple(comp_types)) = cx.ty(z) else {
        return None;
    };
    let mut parts = Vec::new();
    for (i, &item) in items.iter().enumerate() {
        let ty = comp_types.get(i)?.clone();
        let x = cx.fresh("x", Some(ty.clone()));
        let y = cx.fresh("y", Some(ty.clone()));
        let comp = project_params(cx, item, i as u32, &[(p, x), (q, y)])?;
        let g = lam(cx, &[x, y], comp);
        let zi = match cx.arena()[z] {
            Node::Tuple(l) => cx.arena().exprs(l)[i],
            _ => cx.mk(Node::Proj(i as u32, z)),
        };
        let elem_ty = cx.ty(a).and_then(|t| match t {
            Type::Array(_, el) => Some((*el).clone()),
            _ => None,
        });
        let t = cx.fresh("t", elem_ty);
        let et = cx.var(t);
        let pt = cx.mk(Node::Proj(i as u32, et));
        let pick = lam(cx, &[t], pt);
        let column = cx.mk(Node::Map(pick, a));
        let column = crate::rules::apply(cx, column).unwrap_or(column);
        let r = cx.mk(Node::Reduce(g, zi, column));
        parts.push(crate::rules::apply(cx, r).unwrap_or(r));
    }
    Some(cx.tuple(&parts))
}

/// A `foldl` whose accumulator is a tuple holding arrays, each component of whose step
/// reads only the same component of the accumulator, is a tuple of folds, one per
/// component: `foldl (s, x. (f0(s.0, x), f1(s.1, x))) (z0, z1) A` is `(foldl (s0, x. f0(s0,
/// x)) z0 A, foldl (s1, x. f1(s1, x)) z1 A)`. Forward mode makes such folds (a value and
/// its tangent carried together, each updated by scatters); apart, each is an
/// accumulation the code generator updates in place, where the pair was copied whole at
/// every step. Only where a component holds arrays: for reals, one loop is cheaper.
pub fn foldl_tuple_split(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Foldl(f, z, a) = cx.arena()[e] else {
        return None;
    };
    let Some(Type::Tuple(comp_types)) = cx.ty(z) else {
        return None;
    };
    if !comp_types.iter().any(Type::has_arrays) {
        return None;
    }
    let (ps, body) = lambda(cx, f)?;
    let (s_var, x_var) = (ps[0], ps[1]);
    let elem_ty = match cx.ty(a)? {
        Type::Array(_, el) => (*el).clone(),
        _ => return None,
    };
    let mut parts = Vec::new();
    for (i, ty) in comp_types.iter().enumerate() {
        // Component `i` of the step, with the projection pushed into its `let`s and `if`s.
        let item = project_into(cx, body, i as u32);
        let si = cx.fresh("s", Some(ty.clone()));
        let x = cx.fresh("x", Some(elem_ty.clone()));
        let item = project_params(cx, item, i as u32, &[(s_var, si)])?;
        let ex = cx.var(x);
        let item = cx.simplify_with(item, &[(x_var, ex)]);
        let g = lam(cx, &[si, x], item);
        let zi = match cx.arena()[z] {
            Node::Tuple(l) => cx.arena().exprs(l)[i],
            _ => cx.mk(Node::Proj(i as u32, z)),
        };
        parts.push(cx.mk(Node::Foldl(g, zi, a)));
    }
    Some(cx.tuple(&parts))
}

/// Component `i` of the tuple `e`, the projection pushed through tuples, `let`s and `if`s
/// (a tuple bound by `let (u, v) = rhs` is read as the components of `rhs`).
fn project_into(cx: &mut RuleCx, e: ExprId, i: u32) -> ExprId {
    match cx.arena()[e] {
        Node::Tuple(l) => cx.arena().exprs(l)[i as usize],
        Node::Let(v, rhs, body) => {
            let b = project_into(cx, body, i);
            cx.mk(Node::Let(v, rhs, b))
        }
        Node::LetTuple(vs, rhs, body) => {
            let vars = cx.arena().vars_of(vs).to_vec();
            let b = project_into(cx, body, i);
            let used = cx.arena().free_vars(b);
            let subs: unfad_syntax::fast_hash::FastMap<Var, ExprId> = vars
                .iter()
                .enumerate()
                .filter(|(_, v)| used.contains(v))
                .map(|(j, &v)| (v, project_into(cx, rhs, j as u32)))
                .collect();
            // Substituted, not simplified: the caller simplifies the whole component once.
            // Simplifying here too would simplify the part inside twice, once per pass, and
            // a second component's inner pass would find the first's renamed binders.
            cx.arena_mut().subst(b, &subs)
        }
        Node::If(c, t, f) => {
            let (t, f) = (project_into(cx, t, i), project_into(cx, f, i));
            cx.mk(Node::If(c, t, f))
        }
        _ => cx.mk(Node::Proj(i, e)),
    }
}

/// `item` with `p.i` replaced by `x` for each pair `(p, x)` of `params`; `None` if some
/// `p` is used any other way (the function is then not componentwise).
fn project_params(cx: &mut RuleCx, item: ExprId, i: u32, params: &[(Var, Var)]) -> Option<ExprId> {
    match cx.arena()[item] {
        Node::Proj(j, t) if j == i => {
            let found = params.iter().find(|(p, _)| cx.arena()[t] == Node::Var(*p));
            match found {
                Some(&(_, x)) => Some(cx.var(x)),
                None => {
                    let t = project_params(cx, t, i, params)?;
                    Some(cx.mk(Node::Proj(j, t)))
                }
            }
        }
        Node::Var(v) if params.iter().any(|(p, _)| *p == v) => None,
        node => {
            let kids = cx.arena().node_children(node);
            let mut new = Vec::new();
            for k in kids {
                new.push(project_params(cx, k, i, params)?);
            }
            let mut it = new.into_iter();
            let n = cx
                .arena_mut()
                .map_children(node, |_, _| it.next().expect("one per child"));
            Some(cx.mk(n))
        }
    }
}

/// `scanl f z (c_like A)` with `f(z, c) = z` for a constant `z` in {0, 1} is filled with
/// `z` (so `scanl + 0 zeros` and `scanr * 1 ones`); its shape is the scan's.
pub fn scan_constant_array(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (f, z, a, left) = match cx.arena()[e] {
        Node::Scanl(f, z, a) => (f, z, a, true),
        Node::Scanr(f, z, a) => (f, z, a, false),
        _ => return None,
    };
    let (_, c) = constant_array(cx, a)?;
    let zc = match cx.arena()[z] {
        Node::Const(k) if k == 0.0 || k == 1.0 => k,
        _ => return None,
    };
    let (ps, body) = lambda(cx, f)?;
    let k = cx.constant(c);
    let subs = if left {
        [(ps[0], z), (ps[1], k)]
    } else {
        [(ps[0], k), (ps[1], z)]
    };
    let step = cx.simplify_with(body, &subs);
    (step == z).then(|| fill(cx, e, zc))
}

/// `shift1L (zeros_like A)` is `zeros_like(shift1L A)` (so for ones and `shift1R`).
pub fn shift_constant_array(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (a, left) = match cx.arena()[e] {
        Node::Shift1L(a) => (a, true),
        Node::Shift1R(a) => (a, false),
        _ => return None,
    };
    let (inner, c) = match cx.arena()[a] {
        Node::ZerosLike(x) => (x, 0.0),
        Node::OnesLike(x) => (x, 1.0),
        _ => return None,
    };
    let shifted = cx.mk(if left {
        Node::Shift1L(inner)
    } else {
        Node::Shift1R(inner)
    });
    Some(fill(cx, shifted, c))
}

/// An element of a map whose function is cheap is that function of the operand's element:
/// `(map (x. -x) Z)[i]` is `-(Z[i])`, and `(map2 f A B)[i]` is `f(A[i], B[i])`, also when
/// the map is bound by a `let` (`let N = map (x. -x) Z in .. N[i] ..`) over variables or
/// their shifts. Reverse mode makes such maps of adjoints
/// (`-z` of the adjoint of a difference) that are then read at computed positions; read
/// where they are needed, they are never stored. Only a function of at most
/// [`CHEAP_ELEMENT`] operations (counting those of the maps inside it, which stay lazy)
/// qualifies, so that reading an element again costs about what reading a stored one does.
pub fn index_of_cheap_map(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Index(a, i) = cx.arena()[e] else {
        return None;
    };
    // Through a `let`, the operands must be variables (or their shifts), to read rather
    // than compute.
    let read_only = |cx: &RuleCx, x: ExprId| match cx.arena()[x] {
        Node::Var(_) => true,
        Node::Shift1L(y) | Node::Shift1R(y) => matches!(cx.arena()[y], Node::Var(_)),
        _ => false,
    };
    let (f, srcs) = match cx.arena()[a] {
        Node::Map(f, src) => (f, vec![src]),
        Node::Map2(f, x, y) => (f, vec![x, y]),
        Node::Var(v) => match cx.arena()[cx.definition(v)?] {
            Node::Map(f, src) if read_only(cx, src) => (f, vec![src]),
            Node::Map2(f, x, y) if read_only(cx, x) && read_only(cx, y) => (f, vec![x, y]),
            _ => return None,
        },
        _ => return None,
    };
    let (ps, body) = lambda(cx, f)?;
    let mut budget = CHEAP_ELEMENT;
    if !cheap(cx, body, &mut budget) {
        return None;
    }
    // Each read keeps the source position of the index it replaces, for its error (an
    // index past the shorter operand of a `map2` fails at that operand's read).
    let at = cx.arena().span(e);
    let mut bound = body;
    for (&p, &src) in ps.iter().zip(&srcs).rev() {
        let elem = cx.mk(Node::Index(src, i));
        if cx.arena().span(elem) == unfad_syntax::Span::NONE {
            cx.arena_mut().set_span(elem, at);
        }
        bound = cx.arena_mut().let_(p, elem, bound);
    }
    Some(cx.simplify(bound))
}

/// The operations an element's function may have for [`index_of_cheap_map`].
const CHEAP_ELEMENT: usize = 2;

/// Whether `e` computes at most `budget` operations: variables, constants, tuples and
/// projections are free; a `map` or `map2` counts its function's operations (it stays
/// lazy).
fn cheap(cx: &RuleCx, e: ExprId, budget: &mut usize) -> bool {
    match cx.arena()[e] {
        Node::Var(_) | Node::Const(_) => true,
        Node::Proj(_, t) => cheap(cx, t, budget),
        Node::Tuple(l) => cx.arena().exprs(l).iter().all(|&x| cheap(cx, x, budget)),
        Node::Op1(_, x) => {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            cheap(cx, x, budget)
        }
        Node::Op2(_, x, y) => {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            cheap(cx, x, budget) && cheap(cx, y, budget)
        }
        Node::Map(g, a) => match cx.arena().lambda_parts(g) {
            Some((_, b)) => cheap(cx, b, budget) && cheap(cx, a, budget),
            None => false,
        },
        Node::Map2(g, a, b) => match cx.arena().lambda_parts(g) {
            Some((_, body)) => {
                cheap(cx, body, budget) && cheap(cx, a, budget) && cheap(cx, b, budget)
            }
            None => false,
        },
        _ => false,
    }
}

/// `len(e)` of a term exactly as long as a parameter `P` is `len(P)`: of a loop's element
/// too (`len(x)` of a row `x` of `X: [n][d]real`, when `mu: [d]real` is a parameter),
/// which then does not change from one iteration to the next, and a loop over `iota
/// len(x)` inside the loop over `X` computes what reads only `mu` and its index once
/// (hoisting).
pub fn len_of_known_length(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Len(a) = cx.arena()[e] else {
        return None;
    };
    let p = cx.array_param_of_len(a)?;
    if cx.arena()[a] == Node::Var(p) {
        return None;
    }
    let ep = cx.var(p);
    Some(cx.mk(Node::Len(ep)))
}

/// `len(x)` of a name bound to `map f A` is `len(A)` (of `map2 f A B`, the length of the
/// operand that is never longer): asking the length of a map does not read it, so the map
/// can stay where it is used once.
pub fn len_of_bound_map(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Len(a) = cx.arena()[e] else {
        return None;
    };
    let Node::Var(v) = cx.arena()[a] else {
        return None;
    };
    let of = match cx.arena()[cx.definition(v)?] {
        Node::Map(_, x) => x,
        Node::Map2(_, x, y) if cx.not_longer(x, y) => x,
        Node::Map2(_, x, y) if cx.not_longer(y, x) => y,
        _ => return None,
    };
    Some(cx.mk(Node::Len(of)))
}

/// `len(zeros_like A)` is `len(A)`.
pub fn len_of_constant_array(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Len(a) = cx.arena()[e] else {
        return None;
    };
    match cx.arena()[a] {
        Node::ZerosLike(x) | Node::OnesLike(x) => Some(cx.mk(Node::Len(x))),
        _ => None,
    }
}

/// `zeros_like` only needs the shape of its operand: of a parameter of the same length if
/// there is one; otherwise `zeros_like(ones_like A)` is `zeros_like(A)`, and
/// `zeros_like(map2 f A B)` over reals is `zeros_like` of the operand that is never
/// longer (so for `map` and `ones_like`).
pub fn constant_array_witness(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (a, c) = match cx.arena()[e] {
        Node::ZerosLike(a) => (a, 0.0),
        Node::OnesLike(a) => (a, 1.0),
        _ => return None,
    };
    let node = cx.arena()[a];
    // The simplest witness of a shape is a parameter of the same exact length.
    if elem_is_real(cx, a) {
        if let Some(p) = cx.param_of_len(a) {
            if cx.arena()[a] != Node::Var(p) {
                let ep = cx.var(p);
                return Some(fill(cx, ep, c));
            }
        }
    }
    let witness = match node {
        Node::ZerosLike(x) | Node::OnesLike(x) => x,
        Node::Map(_, x) if elem_is_real(cx, a) && elem_is_real(cx, x) => x,
        Node::Map2(_, x, y)
            if elem_is_real(cx, a) && elem_is_real(cx, x) && elem_is_real(cx, y) =>
        {
            if cx.not_longer(x, y) {
                x
            } else if cx.not_longer(y, x) {
                y
            } else {
                return None;
            }
        }
        _ => return None,
    };
    Some(fill(cx, witness, c))
}

/// `zeros_like(W)` / `ones_like(W)` of an array whose elements are not reals:
/// `(W, true for zeros)`.
fn element_fill(cx: &mut RuleCx, a: ExprId) -> Option<(ExprId, bool)> {
    let (w, zero) = match cx.arena()[a] {
        Node::ZerosLike(w) => (w, true),
        Node::OnesLike(w) => (w, false),
        _ => return None,
    };
    match cx.ty(a)? {
        Type::Array(_, elem) if *elem != Type::Real => Some((w, zero)),
        _ => None,
    }
}

/// The function argument over `W`'s elements equal to `(x. body)` applied to the fills of
/// those elements: `(w. body[zeros_like(w)/x])`.
fn over_fill(cx: &mut RuleCx, x: Var, body: ExprId, zero: bool) -> (Var, ExprId) {
    let name = cx.arena().var_name(x).to_string();
    let w = cx.fresh(&name, cx.arena().var_type(x).cloned());
    let ew = cx.var(w);
    let fill = cx.mk(if zero {
        Node::ZerosLike(ew)
    } else {
        Node::OnesLike(ew)
    });
    (w, cx.simplify_with(body, &[(x, fill)]))
}

/// `map (x. e) (zeros_like W)` over tuples or arrays is `map (w. e[zeros_like(w)/x]) W`
/// (so for ones): the fill's elements are fills of `W`'s.
pub fn map_fill_operand(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = cx.arena()[e] else {
        return None;
    };
    let (w, zero) = element_fill(cx, a)?;
    let (ps, body) = lambda(cx, f)?;
    let (q, body) = over_fill(cx, *ps.first()?, body, zero);
    let g = lam(cx, &[q], body);
    Some(cx.mk(Node::Map(g, w)))
}

/// `map2 (x, y. e) (zeros_like W) B` over tuples or arrays is
/// `map2 (w, y. e[zeros_like(w)/x]) W B` (so for ones, either side).
pub fn map2_fill_operand(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    if ps.len() != 2 {
        return None;
    }
    for (i, operand) in [a, b].into_iter().enumerate() {
        if let Some((w, zero)) = element_fill(cx, operand) {
            let (q, body) = over_fill(cx, ps[i], body, zero);
            return Some(map2_replacing(cx, &ps, i, q, body, (a, b), w));
        }
    }
    None
}

/// `foldl (acc, x. x) z X`, the last element of `X` (or `z`): `(z, X)`.
fn last_of(cx: &RuleCx, e: ExprId) -> Option<(ExprId, ExprId)> {
    let Node::Foldl(f, z, x) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    (cx.arena()[body] == Node::Var(*ps.get(1)?)).then_some((z, x))
}

/// The last element of `scanl f z A` is `foldl f z A`; of `scanr f z A`, `z`.
pub fn last_of_scan(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (_, x) = last_of(cx, e)?;
    match cx.arena()[x] {
        Node::Scanl(f, z, a) => Some(cx.mk(Node::Foldl(f, z, a))),
        Node::Scanr(_, z, _) => Some(z),
        _ => None,
    }
}

/// The last element of `c_like(A)` over reals, with `A` never empty, is `c`.
pub fn last_of_fill(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (_, x) = last_of(cx, e)?;
    let (inner, c) = constant_array(cx, x)?;
    let nonempty = cx.len_of(inner)?;
    crate::len::Len::constant(1)
        .le(&nonempty)
        .then(|| cx.constant(c))
}

/// A shift of `scanl (acc, x. acc) z A` or of `scanr (x, acc. acc) z A` (a scan that keeps
/// its accumulator) is `map (x. z) A`: it repeats `z`, once per element. A `z` that is not
/// trivial is bound by a `let` first, so that it is computed once (reverse mode makes
/// `scanr (x, acc. acc) (map (o. o + o) R) ...` for the adjoint of a `reduce` of arrays
/// written with a lambda, `reduce (acc, r. map2 + acc r)`).
pub fn shift_of_constant_scan(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (Node::Shift1L(inner) | Node::Shift1R(inner)) = cx.arena()[e] else {
        return None;
    };
    let (f, z, a, acc) = match cx.arena()[inner] {
        Node::Scanl(f, z, a) => (f, z, a, 0),
        Node::Scanr(f, z, a) => (f, z, a, 1),
        _ => return None,
    };
    let (ps, body) = lambda(cx, f)?;
    if cx.arena()[body] != Node::Var(*ps.get(acc)?) {
        return None;
    }
    let elem = match cx.ty(a)? {
        Type::Array(_, elem) => (*elem).clone(),
        _ => return None,
    };
    let x = cx.fresh("x", Some(elem));
    if cx.is_trivial(z) {
        let g = lam(cx, &[x], z);
        return Some(cx.mk(Node::Map(g, a)));
    }
    let zt = cx.ty(z)?;
    let c = cx.fresh("c", Some(zt));
    let ec = cx.var(c);
    let g = lam(cx, &[x], ec);
    let repeated = cx.mk(Node::Map(g, a));
    Some(cx.mk(Node::Let(c, z, repeated)))
}

/// The simplest array exactly as long as `x`: through fills, maps, shifts of scans (`n+1`
/// then `n`) and the never longer operand of a `map2`.
fn same_length(cx: &RuleCx, x: ExprId) -> ExprId {
    let next = match cx.arena()[x] {
        Node::ZerosLike(a) | Node::OnesLike(a) | Node::Map(_, a) => Some(a),
        Node::Shift1L(i) | Node::Shift1R(i) => match cx.arena()[i] {
            Node::Scanl(_, _, a) | Node::Scanr(_, _, a) => Some(a),
            _ => None,
        },
        Node::Map2(_, a, b) if cx.not_longer(a, b) => Some(a),
        Node::Map2(_, a, b) if cx.not_longer(b, a) => Some(b),
        _ => None,
    };
    match next {
        Some(a) => with_stack(|| same_length(cx, a)),
        None => x,
    }
}

/// `map (x. c) X` with `c` not using `x` only needs `X`'s length: `X` is replaced by the
/// simplest array as long (`map (x. c) (shift1R (scanl f z A))` is `map (x. c) A`).
pub fn map_constant_body_operand(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    if mentions(cx, body, *ps.first()?) {
        return None;
    }
    let w = same_length(cx, a);
    if w == a {
        return None;
    }
    let elem = match cx.ty(w)? {
        Type::Array(_, elem) => (*elem).clone(),
        _ => return None,
    };
    let name = cx.arena().var_name(ps[0]).to_string();
    let x = cx.fresh(&name, Some(elem));
    let g = lam(cx, &[x], body);
    Some(cx.mk(Node::Map(g, w)))
}

/// `reduce f z (map (ps. body) operands)` (`map2` for two operands), the rules applied
/// to the new `map` and to the new `reduce`: what the rules that take a factor out of a
/// sum leave.
fn reduce_of_map(
    cx: &mut RuleCx,
    f: ExprId,
    z: ExprId,
    ps: &[Var],
    body: ExprId,
    operands: &[ExprId],
) -> Option<ExprId> {
    let h = lam(cx, ps, body);
    let inner = cx.mk(match operands[..] {
        [x] => Node::Map(h, x),
        [x, y] => Node::Map2(h, x, y),
        _ => return None,
    });
    let inner = crate::rules::apply(cx, inner).unwrap_or(inner);
    let sum = cx.mk(Node::Reduce(f, z, inner));
    Some(crate::rules::apply(cx, sum).unwrap_or(sum))
}

/// `reduce + 0 X` with the function `(a, b. a + b)`.
fn is_sum(cx: &RuleCx, f: ExprId, z: ExprId) -> bool {
    let Some((ps, body)) = lambda(cx, f) else {
        return false;
    };
    cx.arena().is_const(z, 0.0)
        && matches!(cx.arena()[body], Node::Op2(BinOp::Add, x, y)
            if cx.arena()[x] == Node::Var(ps[0]) && cx.arena()[y] == Node::Var(ps[1]))
}

/// A sum of the elements of a `map` whose body is `c * e` (or `e * c`, or `-e`) with `c`
/// not depending on the elements is `c * ` (or `-`) the sum of `e` (distributivity: the
/// sums of `c * e` over a loop become one product after it).
pub fn sum_of_scaled(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Reduce(f, z, a) = cx.arena()[e] else {
        return None;
    };
    if !is_sum(cx, f, z) {
        return None;
    }
    let (_, g, operands) = crate::siblings::elementwise(cx.arena(), a)?;
    let (ps, body) = lambda(cx, g)?;
    let constant = |cx: &RuleCx, c: ExprId| {
        let free = cx.arena().free_vars(c);
        !ps.iter().any(|p| free.contains(p))
    };
    let (factor, rest) = match cx.arena()[body] {
        Node::Op1(UnOp::Neg, x) => (None, x),
        Node::Op2(BinOp::Mul, c, x) if constant(cx, c) => (Some(c), x),
        Node::Op2(BinOp::Mul, x, c) if constant(cx, c) => (Some(c), x),
        _ => return None,
    };
    let sum = reduce_of_map(cx, f, z, &ps, rest, &operands)?;
    Some(cx.mk(match factor {
        Some(c) => Node::Op2(BinOp::Mul, c, sum),
        None => Node::Op1(UnOp::Neg, sum),
    }))
}

/// The rank `d` of the arrays of reals `f` adds if it is `(s, t. map2 g s t)` (either
/// order) with `g` the `+` of reals (`d = 1`) or such a function of rank `d - 1`. Shared
/// with [`crate::row_sums`].
pub(crate) fn row_sum_rank(a: &Arena, f: ExprId) -> Option<usize> {
    let (ps, body) = a.lambda_parts(f)?;
    let [s, t] = ps[..] else {
        return None;
    };
    let Node::Map2(g, x, y) = a[body] else {
        return None;
    };
    let vars = (a[x] == Node::Var(s) && a[y] == Node::Var(t))
        || (a[x] == Node::Var(t) && a[y] == Node::Var(s));
    if !vars {
        return None;
    }
    if lane_operator(a, g) == Some(BinOp::Add) {
        Some(1)
    } else {
        row_sum_rank(a, g).map(|d| d + 1)
    }
}

/// Whether `h` scales arrays of reals of rank `rank` elementwise by a factor that reads
/// none of `bound`: `(t. k * t)`, `(t. t * k)` or `(t. -t)` for rank 1, `(r. map g r)`
/// with `g` such a function of rank `rank - 1` above.
fn scales(cx: &RuleCx, h: ExprId, rank: usize, bound: &[Var]) -> bool {
    let Some((ts, body)) = lambda(cx, h) else {
        return false;
    };
    let [t] = ts[..] else {
        return false;
    };
    let a = cx.arena();
    let is_t = |y: ExprId| a[y] == Node::Var(t);
    match a[body] {
        Node::Map(g, r) if rank > 1 => is_t(r) && scales(cx, g, rank - 1, bound),
        Node::Op1(UnOp::Neg, y) => rank == 1 && is_t(y),
        Node::Op2(BinOp::Mul, k, y) | Node::Op2(BinOp::Mul, y, k) if rank == 1 && is_t(y) => {
            !a.mentions_any(k, &[t]) && !a.mentions_any(k, bound)
        }
        _ => false,
    }
}

/// Whether `e` is an array of reals of rank `rank`.
fn real_array_of_rank(cx: &mut RuleCx, e: ExprId, rank: usize) -> bool {
    let Some(mut t) = cx.ty(e) else {
        return false;
    };
    for _ in 0..rank {
        match t {
            Type::Array(_, elem) => t = (*elem).clone(),
            _ => return false,
        }
    }
    t == Type::Real
}

/// The array version of [`sum_of_scaled`]: a sum of rows from zeros,
/// `reduce (s, t. map2 + s t) 0 (map (a. lets in map2 * E c) X)`, whose rows are all
/// scaled by the same array `c` (which depends neither on `a` nor on the `let`s) is the
/// sum of the unscaled rows, scaled once: `map2 * (reduce (s, t. map2 + s t) 0 (map (a.
/// lets in E) X)) c`. Matrices alike by a real (`reduce (s, t. map2 (u, v. map2 + u v)
/// s t)` of `map (r. map (t. k * t) r) E`, or negated). The sum then no longer waits for
/// the scale and can join the other loops over `X` (the gradient of a column's variance:
/// the mean's adjoint through the deviations is `c` times a sum of deviations the
/// variance's pass computes beside it), or be added into where its rows are made (a
/// batch's mean loss scales every weight matrix's adjoint by `1 / len(X)`). Rows of reals
/// scaled by a real stay: each point's adjoint of its input, a sum over a layer's rows,
/// is written where the result goes when its rows carry the scale, and taken out, it was
/// stored to be scaled (a mean loss's perceptron: its gradient's workspace 3000 x 32
/// reals more). Distributivity, as in [`sum_of_scaled`]: the same value, rounded
/// differently.
pub fn sum_of_scaled_rows(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Reduce(f, z, a) = cx.arena()[e] else {
        return None;
    };
    let rank = row_sum_rank(cx.arena(), f)?;
    if !matches!(cx.arena()[z], Node::ZerosLike(_)) {
        return None;
    }
    let (_, g, operands) = crate::siblings::elementwise(cx.arena(), a)?;
    let (ps, body) = lambda(cx, g)?;
    // The row's `let`s, outermost first, and the variables they bind.
    let mut lets = Vec::new();
    let mut bound = ps.clone();
    let mut row = body;
    loop {
        match cx.arena()[row] {
            Node::Let(x, _, rest) => {
                bound.push(x);
                lets.push(row);
                row = rest;
            }
            Node::LetTuple(xs, _, rest) => {
                bound.extend_from_slice(cx.arena().vars_of(xs));
                lets.push(row);
                row = rest;
            }
            _ => break,
        }
    }
    let invariant = |cx: &RuleCx, c: ExprId| !cx.arena().mentions_any(c, &bound);
    // The unscaled row, and how to scale the sum.
    enum Scale {
        /// `map2 h sum c`, or `map2 h c sum` when `c` came first.
        Map2 { h: ExprId, c: ExprId, first: bool },
        /// `map h sum`.
        Map(ExprId),
    }
    let (unscaled, scale) = match cx.arena()[row] {
        Node::Map2(h, x, c)
            if rank == 1
                && lane_operator(cx.arena(), h) == Some(BinOp::Mul)
                && invariant(cx, c) =>
        {
            (x, Scale::Map2 { h, c, first: false })
        }
        Node::Map2(h, c, x)
            if rank == 1
                && lane_operator(cx.arena(), h) == Some(BinOp::Mul)
                && invariant(cx, c) =>
        {
            (x, Scale::Map2 { h, c, first: true })
        }
        Node::Map(h, x) if rank > 1 && scales(cx, h, rank, &bound) => (x, Scale::Map(h)),
        _ => return None,
    };
    if !real_array_of_rank(cx, unscaled, rank) {
        return None;
    }
    // The rows unscaled, under the same `let`s (the old function goes: its binders move).
    let inner_body = crate::rules::scatter::rewrap(cx, &lets, unscaled);
    let sum = reduce_of_map(cx, f, z, &ps, inner_body, &operands)?;
    Some(cx.mk(match scale {
        Scale::Map2 { h, c, first: false } => Node::Map2(h, sum, c),
        Scale::Map2 { h, c, first: true } => Node::Map2(h, c, sum),
        Scale::Map(h) => Node::Map(h, sum),
    }))
}
