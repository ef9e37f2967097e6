//! Scans: the elements of a scan bound by `let` are read where a term computes them again.
//!
//! The gradient of `foldl (h, x. e) h0 X` takes the partial derivatives of `e` at every
//! step, over the states before each step (`shift1R S`, with `S = scanl (h, x. e) h0 X`) and
//! the elements; they recompute `e` itself (`tanh'(v) = 1 - tanh(v)^2`), which is the next
//! state, already in `S`.

use crate::fast_hash::FastMap as HashMap;

use unfad_syntax::{ExprId, Node, Type, Var};

use crate::expand::{expand, replace_expansion};
use crate::simplify::Simplifier;

/// `map2 (h, x. ... e[h, x] ...) (shift1R S) X`, with `S = scanl (h', x'. e) z X` bound and
/// `e` doing a non-linear operation, reads `e[h, x]`, the next state, from `shift1L S`:
/// `map2 (q, s. ...s...) (map2 (h, x. (h, x)) (shift1R S) X) (shift1L S)` (either operand
/// order), or a `map2` of two of those arrays when the body no longer needs the third.
pub fn scan_next_element(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map2(g, a, b) = s.arena[e] else {
        return None;
    };
    let (states, elems, state_first) = match (s.arena[a], s.arena[b]) {
        (Node::Shift1R(sv), _) => (sv, b, true),
        (_, Node::Shift1R(sv)) => (sv, a, false),
        _ => return None,
    };
    let Node::Var(scan_var) = s.arena[states] else {
        return None;
    };
    let Node::Scanl(f, _, x) = s.arena[s.definition(scan_var)?] else {
        return None;
    };
    if x != elems {
        return None;
    }
    let (fps, fbody) = s.arena.lambda_parts(f).map(|(p, b)| (p.to_vec(), b))?;
    let (gps, gbody) = s.arena.lambda_parts(g).map(|(p, b)| (p.to_vec(), b))?;
    if fps.len() != 2 || gps.len() != 2 || !crate::cost::has_nonlinear(s.arena, fbody) {
        return None;
    }
    let (h, y) = if state_first {
        (gps[0], gps[1])
    } else {
        (gps[1], gps[0])
    };
    // The next state in terms of the map's parameters.
    let (eh, ey) = (s.var(h), s.var(y));
    let mut env: HashMap<Var, ExprId> = [(fps[0], eh), (fps[1], ey)].into_iter().collect();
    let next = expand(s, fbody, &mut env, &mut HashMap::default());
    let state_ty = s.arena.var_type(h).cloned()?;
    let elem_ty = s.arena.var_type(y).cloned()?;
    let t = s.fresh("next", Some(state_ty.clone()));
    let et = s.var(t);
    let body = replace_expansion(
        s,
        gbody,
        &mut HashMap::default(),
        &mut HashMap::default(),
        next,
        et,
    )?;
    let after = s.mk(Node::Shift1L(states));
    let uses = s.arena.free_vars(body);
    let (uses_h, uses_y) = (uses.contains(&h), uses.contains(&y));
    let (params, operands, body) = match (uses_h, uses_y) {
        (true, true) => {
            let q = s.fresh("q", Some(Type::Tuple(vec![state_ty, elem_ty].into())));
            let eq = s.var(q);
            let (q0, q1) = (s.mk(Node::Proj(0, eq)), s.mk(Node::Proj(1, eq)));
            let body = s.simplify_with(body, &[(h, q0), (y, q1)]);
            let (h2, y2) = (
                s.fresh("h", s.arena.var_type(h).cloned()),
                s.fresh("x", s.arena.var_type(y).cloned()),
            );
            let (eh2, ey2) = (s.var(h2), s.var(y2));
            let pair = s.tuple(&[eh2, ey2]);
            let l = s.arena.var_list(&[h2, y2]);
            let zip = s.mk(Node::Lambda(l, pair));
            let before = s.mk(Node::Shift1R(states));
            let zipped = s.mk(Node::Map2(zip, before, elems));
            (vec![q, t], [zipped, after], body)
        }
        (true, false) => {
            let before = s.mk(Node::Shift1R(states));
            (vec![h, t], [before, after], s.scoped(body))
        }
        (false, _) => (vec![y, t], [elems, after], s.scoped(body)),
    };
    let l = s.arena.var_list(&params);
    let fun = s.mk(Node::Lambda(l, body));
    Some(s.mk(Node::Map2(fun, operands[0], operands[1])))
}
