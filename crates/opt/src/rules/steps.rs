//! The steps of a scan read its next state: a loop over the steps that computes a step's
//! result again (whole, a component of it, or element by element) reads it from the scan.
//!
//! Reverse mode differentiates `foldl (h, x. e) z X` over the steps
//! `map2 (h, x. (h, x)) (shift1R S) X`, with `S = scanl (h, x. e) z X` bound: the reverse
//! `scanr` of the states' adjoints and the loops of the captured arrays' adjoints each take
//! one step `q` at a time and compute `e[fst q, snd q]` again, for the partial derivatives
//! of its non-linear operations (`tanh'(v) = 1 - tanh(v)^2`). When the step is a map, or a
//! tuple with maps among its components (a layer of a recurrent network,
//! `map2 (row, c. tanh(dot(row, h) + c)) W B`), the consumer computes the map's body again
//! element by element, inside a loop of its own over the map's operands (zipped, or beside
//! another array such as the state's adjoint). That value is the next state, `shift1L S` at
//! the step, or its element.
//!
//! The consumer then takes the steps zipped with the next states,
//! `map2 (q, n. (q, n)) steps (shift1L S)`. Its body reads `n` (or its component) for the
//! whole, and each inner loop over the step map's operands gets the element of `n` zipped in
//! as one more operand. [`super::scans::scan_next_element`] does the same for a `map2` over
//! the states and the elements themselves, before they are zipped.

use crate::fast_hash::FastMap as HashMap;

use unfad_syntax::{with_stack, ExprId, Kids, Node, Type, Var};

use crate::expand::{expand, rebuilt, replace_expansion, Memo};
use crate::simplify::RuleCx;

use super::arrays::{lam, lambda};
use super::scans::states_beside_elements;

/// A `map`, `map2`, `scanr` or `foldl` over the steps of a scan (see the module's doc) that
/// computes the next state again reads it from the scan.
pub fn scan_next_in_consumer(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let node = cx.arena()[e];
    // The consumer's function, its operand of steps, and the parameter that takes a step.
    let (f, operand, param, steps) = match node {
        Node::Map(f, a) | Node::Scanr(f, _, a) => (f, a, 0, steps_of(cx, a)?),
        Node::Foldl(f, _, a) => (f, a, 1, steps_of(cx, a)?),
        Node::Map2(f, a, b) => match steps_of(cx, a) {
            Some(steps) => (f, a, 0, steps),
            None => (f, b, 1, steps_of(cx, b)?),
        },
        _ => return None,
    };
    let (ps, body) = lambda(cx, f)?;
    let q = *ps.get(param)?;
    let q_ty = cx.arena().var_type(q).cloned()?;
    let Type::Tuple(parts) = &q_ty else {
        return None;
    };
    let state_ty = parts.get(steps.state_part)?.clone();
    // The step's result in terms of `q`, and its parts worth reading back.
    let (sps, sbody) = lambda(cx, steps.step)?;
    let eq = cx.var(q);
    let (hq, xq) = (
        cx.mk(Node::Proj(steps.state_part as u32, eq)),
        cx.mk(Node::Proj(1 - steps.state_part as u32, eq)),
    );
    let mut step_env: HashMap<Var, ExprId> = [(sps[0], hq), (sps[1], xq)].into_iter().collect();
    let whole = expand(cx, sbody, &mut step_env, &mut HashMap::default());
    let next = cx.fresh("next", Some(state_ty.clone()));
    let parts = step_parts(cx, whole, &state_ty, next);
    if parts.is_empty() {
        return None;
    }
    let mut reader = NextReader {
        parts,
        env: HashMap::default(),
        memo: HashMap::default(),
    };
    let new_body = reader.walk(cx, body);
    if new_body == body {
        return None;
    }
    // The steps zipped with the next states; `q` and `next` read from the pair.
    let pair_ty = Type::Tuple(vec![q_ty.clone(), state_ty.clone()].into());
    let q2 = cx.fresh("q", Some(pair_ty));
    let eq2 = cx.var(q2);
    let (first, second) = (cx.mk(Node::Proj(0, eq2)), cx.mk(Node::Proj(1, eq2)));
    let new_body = cx.simplify_with(new_body, &[(q, first), (next, second)]);
    let after = cx.mk(Node::Shift1L(steps.states));
    let zipped = zip(cx, operand, after, q_ty, state_ty);
    let mut new_ps = ps.clone();
    new_ps[param] = q2;
    let g = lam(cx, &new_ps, new_body);
    Some(cx.mk(match node {
        Node::Map(..) => Node::Map(g, zipped),
        Node::Scanr(_, z, _) => Node::Scanr(g, z, zipped),
        Node::Foldl(_, z, _) => Node::Foldl(g, z, zipped),
        Node::Map2(_, _, b) if param == 0 => Node::Map2(g, zipped, b),
        Node::Map2(_, a, _) => Node::Map2(g, a, zipped),
        _ => unreachable!("the consumer is one of the nodes matched above"),
    }))
}

/// `map2 (a, b. (a, b)) x y`, with `a: ta` and `b: tb`.
fn zip(cx: &mut RuleCx, x: ExprId, y: ExprId, ta: Type, tb: Type) -> ExprId {
    let (a, b) = (cx.fresh("a", Some(ta)), cx.fresh("b", Some(tb)));
    let (ea, eb) = (cx.var(a), cx.var(b));
    let pair = cx.tuple(&[ea, eb]);
    let f = lam(cx, &[a, b], pair);
    cx.mk(Node::Map2(f, x, y))
}

/// The steps of a scan: `map2 (h, x. (h, x)) (shift1R S) X` (either order, the zip or the
/// shift bound by a `let`), with `S = scanl step z X` bound.
struct Steps {
    /// `S`, whose `shift1L` is the state after each step.
    states: ExprId,
    /// The scan's function.
    step: ExprId,
    /// Which component of a step is the state before it.
    state_part: usize,
}

fn steps_of(cx: &RuleCx, e: ExprId) -> Option<Steps> {
    let bound = |cx: &RuleCx, x: ExprId| match cx.arena()[x] {
        Node::Var(v) => cx.definition(v),
        _ => Some(x),
    };
    let Node::Map2(f, a, b) = cx.arena()[bound(cx, e)?] else {
        return None;
    };
    if !is_zip(cx, f) {
        return None;
    }
    let (states, _, step, first) = states_beside_elements(cx, a, b)?;
    let state_part = if first { 0 } else { 1 };
    Some(Steps {
        states,
        step,
        state_part,
    })
}

/// `(a, b. (a, b))`.
pub(super) fn is_zip(cx: &RuleCx, f: ExprId) -> bool {
    crate::siblings::is_zip_function(cx.arena(), f)
}

/// A part of a step's result that a consumer may compute again: the whole result or one
/// component of a tuple result, in terms of the consumer's step.
struct Part {
    /// The part's expansion, if it does a non-linear operation (else reading it back saves
    /// nothing).
    whole: Option<ExprId>,
    /// The part's value in the next state: `next` or its component.
    read: ExprId,
    /// If the part is a map with a non-linear body: the map's parameters (stand-ins), body
    /// and operands (expansions), and the type of its elements.
    map: Option<(Vec<Var>, ExprId, Vec<ExprId>, Type)>,
}

/// The parts of the step's result `whole` (an expansion) of type `ty`, read from `next`.
fn step_parts(cx: &mut RuleCx, whole: ExprId, ty: &Type, next: Var) -> Vec<Part> {
    let en = cx.var(next);
    let items: Vec<(ExprId, ExprId, Type)> = match (cx.arena()[whole], ty) {
        (Node::Tuple(l), Type::Tuple(tys)) => {
            let items = cx.arena().exprs(l).to_vec();
            if items.len() != tys.len() {
                return Vec::new();
            }
            items
                .into_iter()
                .zip(tys.iter())
                .enumerate()
                .map(|(i, (item, t))| (item, cx.mk(Node::Proj(i as u32, en)), t.clone()))
                .collect()
        }
        _ => vec![(whole, en, ty.clone())],
    };
    let mut parts = Vec::new();
    for (item, read, t) in items {
        let whole = crate::cost::has_nonlinear(cx.arena(), item).then_some(item);
        let map = match (cx.arena()[item], &t) {
            (Node::Map(g, a), Type::Array(_, el)) => Some((g, vec![a], (**el).clone())),
            (Node::Map2(g, a, b), Type::Array(_, el)) => Some((g, vec![a, b], (**el).clone())),
            _ => None,
        }
        .and_then(|(g, operands, el)| {
            let (gps, gbody) = lambda(cx, g)?;
            crate::cost::has_nonlinear(cx.arena(), gbody).then_some((gps, gbody, operands, el))
        });
        if whole.is_some() || map.is_some() {
            parts.push(Part { whole, read, map });
        }
    }
    parts
}

/// The walk of [`scan_next_in_consumer`] over a consumer's body.
struct NextReader {
    parts: Vec<Part>,
    /// The `let`s of the body walked so far, and their expansions.
    env: HashMap<Var, ExprId>,
    memo: Memo,
}

impl NextReader {
    /// `e` with the next state read where it is computed again. Functions inside are not
    /// entered (their parameters stand for other values), except the inner loops over a
    /// step map's operands.
    fn walk(&mut self, cx: &mut RuleCx, e: ExprId) -> ExprId {
        with_stack(|| {
            let node = cx.arena()[e];
            if let Node::Lambda(..) = node {
                return e;
            }
            if let Node::Let(v, rhs, b) = node {
                let r2 = self.walk(cx, rhs);
                let x = expand(cx, rhs, &mut self.env, &mut self.memo);
                self.env.insert(v, x);
                let b2 = self.walk(cx, b);
                return if (r2, b2) == (rhs, b) {
                    e
                } else {
                    cx.mk(Node::Let(v, r2, b2))
                };
            }
            if !cx.is_trivial(e) {
                let x = expand(cx, e, &mut self.env, &mut self.memo);
                if let Some(part) = self.parts.iter().find(|p| p.whole == Some(x)) {
                    return part.read;
                }
            }
            for i in 0..self.parts.len() {
                if let Some(r) = self.inner_loop(cx, e, i) {
                    return r;
                }
            }
            let kids = cx.arena().node_children(node);
            let new: Kids = kids.iter().map(|&k| self.walk(cx, k)).collect();
            rebuilt(cx, e, &kids, new)
        })
    }

    /// An inner loop `map (k. K) O` or `map2 (k0, k1. K) O0 O1` whose operands hold the
    /// operands of part `i`'s map (themselves, or zipped), with `K` computing that map's
    /// element again: the same loop with the part's elements zipped in, `K` reading them.
    fn inner_loop(&mut self, cx: &mut RuleCx, e: ExprId, i: usize) -> Option<ExprId> {
        let (params, body, wanted, elem_ty) = self.parts[i].map.clone()?;
        let (f, operands) = match cx.arena()[e] {
            Node::Map(f, a) => (f, vec![a]),
            Node::Map2(f, a, b) => (f, vec![a, b]),
            _ => return None,
        };
        let (ks, kbody) = lambda(cx, f)?;
        // Where each operand of the part's map lies in the loop's elements.
        let mut found: Vec<Option<ExprId>> = vec![None; wanted.len()];
        for (&o, &k) in operands.iter().zip(&ks) {
            let ek = cx.var(k);
            self.locate(cx, o, ek, &wanted, &mut found);
        }
        let found: Vec<ExprId> = found.into_iter().collect::<Option<_>>()?;
        // The map's element in terms of the loop's parameters, replaced in `K` (where the
        // loop's parameters stand for themselves: an expansion of the whole loop, made
        // before, mapped them to stand-ins).
        let mut env: HashMap<Var, ExprId> = params.iter().copied().zip(found).collect();
        let target = expand(cx, body, &mut env, &mut HashMap::default());
        let mut kenv = self.env.clone();
        for k in &ks {
            kenv.remove(k);
        }
        let n = cx.fresh("n", Some(elem_ty));
        let en = cx.var(n);
        let kbody = replace_expansion(cx, kbody, &mut kenv, &mut HashMap::default(), target, en)?;
        let read = self.parts[i].read;
        if ks.len() == 1 {
            let g = lam(cx, &[ks[0], n], kbody);
            return Some(cx.mk(Node::Map2(g, operands[0], read)));
        }
        let types: Vec<Type> = ks
            .iter()
            .map(|&k| cx.arena().var_type(k).cloned())
            .collect::<Option<_>>()?;
        let pp = cx.fresh("p", Some(Type::Tuple(types.clone().into())));
        let epp = cx.var(pp);
        let (p0, p1) = (cx.mk(Node::Proj(0, epp)), cx.mk(Node::Proj(1, epp)));
        let kbody = cx.simplify_with(kbody, &[(ks[0], p0), (ks[1], p1)]);
        let [t0, t1] = [types[0].clone(), types[1].clone()];
        let zipped = zip(cx, operands[0], operands[1], t0, t1);
        let g = lam(cx, &[pp, n], kbody);
        Some(cx.mk(Node::Map2(g, zipped, read)))
    }

    /// Marks in `found` the operands of `wanted` that the array `o` holds, through zips:
    /// its element is `elem`.
    fn locate(
        &mut self,
        cx: &mut RuleCx,
        o: ExprId,
        elem: ExprId,
        wanted: &[ExprId],
        found: &mut [Option<ExprId>],
    ) {
        let x = expand(cx, o, &mut self.env, &mut self.memo);
        if let Some(j) =
            (0..wanted.len()).find(|&j| found[j].is_none() && same_array(cx, x, wanted[j]))
        {
            found[j] = Some(elem);
            return;
        }
        if let Node::Map2(f, a, b) = cx.arena()[o] {
            if is_zip(cx, f) {
                let (ea, eb) = (cx.mk(Node::Proj(0, elem)), cx.mk(Node::Proj(1, elem)));
                self.locate(cx, a, ea, wanted, found);
                self.locate(cx, b, eb, wanted, found);
            }
        }
    }
}

/// Whether the expansions `a` and `b` are the same array: equal, or `iota` of two lengths
/// the types say are equal (the optimizer writes `len(h)` of a state as `len(W)` of a
/// parameter as long).
fn same_array(cx: &RuleCx, a: ExprId, b: ExprId) -> bool {
    if a == b {
        return true;
    }
    let (Node::Iota(la), Node::Iota(lb)) = (cx.arena()[a], cx.arena()[b]) else {
        return false;
    };
    let (Node::Len(x), Node::Len(y)) = (cx.arena()[la], cx.arena()[lb]) else {
        return false;
    };
    match (static_len(cx, x), static_len(cx, y)) {
        (Some(s), Some(t)) => s == t,
        _ => false,
    }
}

/// The length of a variable or a component of one, from its type, if it is a size variable.
fn static_len(cx: &RuleCx, e: ExprId) -> Option<unfad_syntax::Size> {
    let ty = match cx.arena()[e] {
        Node::Var(v) => cx.arena().var_type(v)?.clone(),
        Node::Proj(i, t) => match cx.arena()[t] {
            Node::Var(v) => match cx.arena().var_type(v)? {
                Type::Tuple(items) => items.get(i as usize)?.clone(),
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    };
    match ty {
        Type::Array(s, _) if s.var.is_some() => Some(s),
        _ => None,
    }
}
