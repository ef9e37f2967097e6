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

/// `map2 (h, x. ... e[h, x] ...) (shift1R S) X` (the shift written there or bound by a
/// `let`), with `S = scanl (h', x'. e) z X` bound and
/// `e` doing a non-linear operation, reads `e[h, x]`, the next state, from `shift1L S`:
/// `map2 (q, s. ...s...) (map2 (h, x. (h, x)) (shift1R S) X) (shift1L S)` (either operand
/// order), or a `map2` of two of those arrays when the body no longer needs the third.
pub fn scan_next_element(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map2(g, a, b) = cx.arena()[e] else {
        return None;
    };
    // `shift1R S` written as the operand or bound by a `let` (read more than once).
    let states_of = |cx: &RuleCx, x: ExprId| match cx.arena()[x] {
        Node::Shift1R(sv) => Some(sv),
        Node::Var(v) => match cx.arena()[cx.definition(v)?] {
            Node::Shift1R(sv) => Some(sv),
            _ => None,
        },
        _ => None,
    };
    let (states, elems, state_first) = match (states_of(cx, a), states_of(cx, b)) {
        (Some(sv), _) => (sv, b, true),
        (_, Some(sv)) => (sv, a, false),
        _ => return None,
    };
    let Node::Var(scan_var) = cx.arena()[states] else {
        return None;
    };
    let Node::Scanl(f, _, x) = cx.arena()[cx.definition(scan_var)?] else {
        return None;
    };
    if x != elems {
        return None;
    }
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
