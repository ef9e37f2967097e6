//! Scans: the elements of a scan bound by `let` are read where a term computes them again.
//!
//! The gradient of `foldl (h, x. e) h0 X` takes the partial derivatives of `e` at every
//! step, over the states before each step (`shift1R S`, with `S = scanl (h, x. e) h0 X`) and
//! the elements; they recompute `e` itself (`tanh'(v) = 1 - tanh(v)^2`), which is the next
//! state, already in `S`.

use crate::fast_hash::FastMap as HashMap;

use unfad_syntax::{ExprId, Node, Type, Var};

use crate::expand::{expand, replace_expansion};
use crate::simplify::RuleCx;

use super::arrays::{lam, lambda};

/// `map2 (h, x. ... e[h, x] ...) (shift1R S) X` (the shift written there or bound by a
/// `let`), with `S = scanl (h', x'. e) z X` bound and
/// `e` doing a non-linear operation, reads `e[h, x]`, the next state, from `shift1L S`:
/// `map2 (q, s. ...s...) (map2 (h, x. (h, x)) (shift1R S) X) (shift1L S)` (either operand
/// order), or a `map2` of two of those arrays when the body no longer needs the third.
pub fn scan_next_element(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map2(g, a, b) = cx.arena()[e] else {
        return None;
    };
    let (states, elems, f, state_first) = states_beside_elements(cx, a, b)?;
    let (fps, fbody) = cx.arena().lambda_parts(f).map(|(p, b)| (p.to_vec(), b))?;
    let (gps, gbody) = cx.arena().lambda_parts(g).map(|(p, b)| (p.to_vec(), b))?;
    if fps.len() != 2 || gps.len() != 2 || !crate::cost::has_nonlinear(cx.arena(), fbody) {
        return None;
    }
    let (h, y) = if state_first {
        (gps[0], gps[1])
    } else {
        (gps[1], gps[0])
    };
    // The next state in terms of the map's parameters.
    let (eh, ey) = (cx.var(h), cx.var(y));
    let mut env: HashMap<Var, ExprId> = [(fps[0], eh), (fps[1], ey)].into_iter().collect();
    let next = expand(cx, fbody, &mut env, &mut HashMap::default());
    let state_ty = cx.arena().var_type(h).cloned()?;
    let elem_ty = cx.arena().var_type(y).cloned()?;
    let t = cx.fresh("next", Some(state_ty.clone()));
    let et = cx.var(t);
    let body = replace_expansion(
        cx,
        gbody,
        &mut HashMap::default(),
        &mut HashMap::default(),
        next,
        et,
    )?;
    let after = cx.mk(Node::Shift1L(states));
    let uses = cx.arena().free_vars(body);
    let (uses_h, uses_y) = (uses.contains(&h), uses.contains(&y));
    let (params, operands, body) = match (uses_h, uses_y) {
        (true, true) => {
            let q = cx.fresh("q", Some(Type::Tuple(vec![state_ty, elem_ty].into())));
            let eq = cx.var(q);
            let (q0, q1) = (cx.mk(Node::Proj(0, eq)), cx.mk(Node::Proj(1, eq)));
            let body = cx.simplify_with(body, &[(h, q0), (y, q1)]);
            let (h2, y2) = (
                cx.fresh("h", cx.arena().var_type(h).cloned()),
                cx.fresh("x", cx.arena().var_type(y).cloned()),
            );
            let (eh2, ey2) = (cx.var(h2), cx.var(y2));
            let pair = cx.tuple(&[eh2, ey2]);
            let l = cx.arena_mut().var_list(&[h2, y2]);
            let zip = cx.mk(Node::Lambda(l, pair));
            let before = cx.mk(Node::Shift1R(states));
            let zipped = cx.mk(Node::Map2(zip, before, elems));
            (vec![q, t], [zipped, after], body)
        }
        (true, false) => {
            let before = cx.mk(Node::Shift1R(states));
            (vec![h, t], [before, after], cx.simplify(body))
        }
        (false, _) => (vec![y, t], [elems, after], cx.simplify(body)),
    };
    let l = cx.arena_mut().var_list(&params);
    let fun = cx.mk(Node::Lambda(l, body));
    Some(cx.mk(Node::Map2(fun, operands[0], operands[1])))
}

/// Of the operands `a` and `b`, the states before each step of a scan over the other:
/// `shift1R S` (written there or bound by a `let`, read more than once) beside `X`, with
/// `S = scanl f z X` bound. Returns `S`, `X`, `f`, and whether the states are `a`.
pub(super) fn states_beside_elements(
    cx: &RuleCx,
    a: ExprId,
    b: ExprId,
) -> Option<(ExprId, ExprId, ExprId, bool)> {
    let shifted = |x: ExprId| {
        let bound = match cx.arena()[x] {
            Node::Var(v) => cx.definition(v)?,
            _ => x,
        };
        match cx.arena()[bound] {
            Node::Shift1R(s) => Some(s),
            _ => None,
        }
    };
    let (states, elems, first) = match (shifted(a), shifted(b)) {
        (Some(s), _) => (s, b, true),
        (_, Some(s)) => (s, a, false),
        _ => return None,
    };
    let Node::Var(scan_var) = cx.arena()[states] else {
        return None;
    };
    match cx.arena()[cx.definition(scan_var)?] {
        Node::Scanl(f, _, x) if x == elems => Some((states, elems, f, first)),
        _ => None,
    }
}

/// A scan whose tuple state keeps some components unchanged at every step carries them
/// apart, as the constants they are: `scanl (s, x. (s.0, f(s, x))) (z0, z1) A` is
/// `let c = z0 in map (t. (c, t)) (scanl (t, x. f((c, t), x)) z1 A)`, and the same for
/// `scanr`. Reverse mode makes such scans: the adjoint of a fold's accumulator component
/// that each step passes on plus a term (`fst acc - x * snd acc`) is the same at every
/// step. Apart, a consumer that reads only the constant component reads `c`, and the scan
/// of the other components is dead if nothing else needs it.
pub fn scan_invariant_component(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let (f, z, a, left) = match cx.arena()[e] {
        Node::Scanl(f, z, a) => (f, z, a, true),
        Node::Scanr(f, z, a) => (f, z, a, false),
        _ => return None,
    };
    let Some(Type::Tuple(comp_types)) = cx.ty(z) else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    let (s_var, x_var) = if left { (ps[0], ps[1]) } else { (ps[1], ps[0]) };
    // The step: `let`s around a tuple, and which of its components are the state's own.
    let k = comp_types.len();
    let mut binders = Vec::new();
    let mut at = body;
    while let Node::Let(_, _, b) | Node::LetTuple(_, _, b) = cx.arena()[at] {
        binders.push(at);
        at = b;
    }
    let items: Vec<ExprId> = match cx.arena()[at] {
        Node::Tuple(l) => cx.arena().exprs(l).to_vec(),
        _ => return None,
    };
    if items.len() != k {
        return None;
    }
    // Variables bound to a component of the state by `let (u, v) = s`.
    let mut parts_of_state: HashMap<Var, usize> = HashMap::default();
    for &b in &binders {
        if let Node::LetTuple(vs, rhs, _) = cx.arena()[b] {
            if cx.arena()[rhs] == Node::Var(s_var) {
                for (j, &v) in cx.arena().vars_of(vs).iter().enumerate() {
                    parts_of_state.insert(v, j);
                }
            }
        }
    }
    let invariant: Vec<bool> = items
        .iter()
        .enumerate()
        .map(|(i, &item)| match cx.arena()[item] {
            Node::Proj(j, t) => j as usize == i && cx.arena()[t] == Node::Var(s_var),
            Node::Var(v) => parts_of_state.get(&v) == Some(&i),
            _ => false,
        })
        .collect();
    let kept: Vec<usize> = (0..k).filter(|&i| !invariant[i]).collect();
    if kept.len() == k || kept.is_empty() {
        return None;
    }
    let elem_ty = match cx.ty(a)? {
        Type::Array(_, el) => (*el).clone(),
        _ => return None,
    };
    // The constants, bound once outside the scan; the initial state too when it is a term
    // to compute (it is read once per component).
    let mut lets = Vec::new();
    let z = match cx.arena()[z] {
        Node::Tuple(_) => z,
        _ if cx.is_trivial(z) => z,
        _ => {
            let v = cx.fresh("z", Some(Type::Tuple(comp_types.clone())));
            lets.push((v, z));
            cx.var(v)
        }
    };
    let z_part = |cx: &mut RuleCx, i: usize| match cx.arena()[z] {
        Node::Tuple(l) => cx.arena().exprs(l)[i],
        _ => cx.mk(Node::Proj(i as u32, z)),
    };
    let mut constants = vec![None; k];
    for i in (0..k).filter(|&i| invariant[i]) {
        let zi = z_part(cx, i);
        let c = if cx.is_trivial(zi) {
            zi
        } else {
            let v = cx.fresh("c", Some(comp_types[i].clone()));
            lets.push((v, zi));
            cx.var(v)
        };
        constants[i] = Some(c);
    }
    // The state of the new scan: the kept components (one, or a tuple of them).
    let kept_types: Vec<Type> = kept.iter().map(|&i| comp_types[i].clone()).collect();
    let state_ty = if kept.len() == 1 {
        kept_types[0].clone()
    } else {
        Type::Tuple(kept_types.into())
    };
    // The old state in terms of a new state variable `t`.
    let whole = |cx: &mut RuleCx, t: Var| {
        let et = cx.var(t);
        let mut parts = Vec::with_capacity(k);
        let mut at = 0u32;
        for c in &constants {
            parts.push(match c {
                Some(c) => *c,
                None if kept.len() == 1 => et,
                None => {
                    at += 1;
                    cx.mk(Node::Proj(at - 1, et))
                }
            });
        }
        cx.tuple(&parts)
    };
    let t = cx.fresh("t", Some(state_ty.clone()));
    let x = cx.fresh("x", Some(elem_ty));
    let old_state = whole(cx, t);
    let ex = cx.var(x);
    let new_items: Vec<ExprId> = kept.iter().map(|&i| items[i]).collect();
    let mut new_body = cx.tuple(&new_items);
    for &b in binders.iter().rev() {
        let node = match cx.arena()[b] {
            Node::Let(v, rhs, _) => Node::Let(v, rhs, new_body),
            Node::LetTuple(vs, rhs, _) => Node::LetTuple(vs, rhs, new_body),
            _ => unreachable!("binders holds lets only"),
        };
        new_body = cx.mk(node);
    }
    let new_body = cx.simplify_with(new_body, &[(s_var, old_state), (x_var, ex)]);
    let g = if left {
        lam(cx, &[t, x], new_body)
    } else {
        lam(cx, &[x, t], new_body)
    };
    let kept_z: Vec<ExprId> = kept.iter().map(|&i| z_part(cx, i)).collect();
    let new_z = cx.tuple(&kept_z);
    let scan = cx.mk(if left {
        Node::Scanl(g, new_z, a)
    } else {
        Node::Scanr(g, new_z, a)
    });
    let u = cx.fresh("t", Some(state_ty));
    let rebuilt = whole(cx, u);
    let back = lam(cx, &[u], rebuilt);
    let mut out = cx.mk(Node::Map(back, scan));
    for (v, rhs) in lets.into_iter().rev() {
        out = cx.mk(Node::Let(v, rhs, out));
    }
    Some(out)
}
