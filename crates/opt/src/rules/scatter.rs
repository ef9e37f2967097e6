//! Accumulation of the adjoints of indexing: `scatter_add` in place of arrays of zeros.
//!
//! Reverse mode gives a read `A[i]` the adjoint `scatter_add(dA, [i], [z])`: `z` added at
//! one position. Inside a loop, the paper's rule for a captured array sums one such
//! contribution per element, `reduce +̂ 0 (map (k. scatter_add(0_A, [p], [v])) K)`, which
//! as written builds an array of the size of `A` per element. These rules turn it into
//! one accumulation, `scatter_add(0_A, map (k. p) K, map (k. v) K)`: every contribution
//! added at its position, in order, into one array (Futhark's accumulators and JAX's
//! scatter-add play this part). The additions then happen in element order rather than
//! in the blocked order of the `reduce`: the same sum, rounded differently (the paper's
//! smooth semantics, like the algebraic rules).

use unfad_syntax::{BinOp, ExprId, Node, Size, Type, Var};

use crate::simplify::RuleCx;

/// The parameters and body of a function argument.
fn lambda(cx: &RuleCx, f: ExprId) -> Option<(Vec<Var>, ExprId)> {
    cx.arena().lambda_parts(f).map(|(ps, b)| (ps.to_vec(), b))
}

/// Whether `f` is `+̂` on the elements of arrays (reals, arrays, tuples of those): the `+`
/// section, `(s, t. map2 g s t)` with `g` such a function, or `(s, t. (g0(s.0, t.0), ...))`
/// componentwise on tuples.
fn is_array_sum(cx: &RuleCx, f: ExprId) -> bool {
    let Some((ps, body)) = lambda(cx, f) else {
        return false;
    };
    let [s, t] = ps[..] else {
        return false;
    };
    is_elem_sum(cx, body, (s, &[]), (t, &[]))
}

/// Whether `x` is the component at `path` of the variable `v` (`v`, `v.0`, `(v.1).0`).
fn is_component(cx: &RuleCx, x: ExprId, (v, path): (Var, &[u32])) -> bool {
    match (cx.arena()[x], path.split_last()) {
        (Node::Var(w), None) => w == v,
        (Node::Proj(i, inner), Some((&last, rest))) => {
            i == last && is_component(cx, inner, (v, rest))
        }
        _ => false,
    }
}

/// Whether `body` is `x +̂ y` for the components `x` of `s` and `y` of `t` at the given
/// paths (either order).
fn is_elem_sum(cx: &RuleCx, body: ExprId, s: (Var, &[u32]), t: (Var, &[u32])) -> bool {
    let operands = |x: ExprId, y: ExprId| {
        (is_component(cx, x, s) && is_component(cx, y, t))
            || (is_component(cx, x, t) && is_component(cx, y, s))
    };
    match cx.arena()[body] {
        Node::Op2(BinOp::Add, x, y) => operands(x, y),
        Node::Map2(g, x, y) => operands(x, y) && is_array_sum(cx, g),
        Node::Tuple(l) => cx.arena().exprs(l).iter().enumerate().all(|(k, &item)| {
            let mut sp = s.1.to_vec();
            sp.push(k as u32);
            let mut tp = t.1.to_vec();
            tp.push(k as u32);
            is_elem_sum(cx, item, (s.0, &sp), (t.0, &tp))
        }),
        _ => false,
    }
}

/// `body` as its chain of `let`s (outermost first) and the term they scope.
fn peel_lets(cx: &RuleCx, mut body: ExprId) -> (Vec<ExprId>, ExprId) {
    let mut lets = Vec::new();
    while let Node::Let(_, _, rest) | Node::LetTuple(_, _, rest) = cx.arena()[body] {
        lets.push(body);
        body = rest;
    }
    (lets, body)
}

/// `let`s around `inner`: the chain `lets` (their nodes, outermost first) rebuilt with
/// `inner` as the innermost body.
pub(super) fn rewrap(cx: &mut RuleCx, lets: &[ExprId], inner: ExprId) -> ExprId {
    let mut out = inner;
    for &l in lets.iter().rev() {
        out = match cx.arena()[l] {
            Node::Let(x, e1, _) => cx.mk(Node::Let(x, e1, out)),
            Node::LetTuple(xs, e1, _) => cx.mk(Node::LetTuple(xs, e1, out)),
            _ => out,
        };
    }
    out
}

/// `map` or `map2` (as `like`, over the same operands) of a function with parameters
/// `ps` and body `body`, copied with fresh binders (the copies must not share binders).
fn map_like(cx: &mut RuleCx, like: ExprId, ps: &[Var], body: ExprId) -> Option<ExprId> {
    let l = cx.arena_mut().var_list(ps);
    let f = cx.mk(Node::Lambda(l, body));
    let f = cx.arena_mut().copy_fresh(f);
    Some(cx.mk(match cx.arena()[like] {
        Node::Map(_, x) => Node::Map(f, x),
        Node::Map2(_, x, y) => Node::Map2(f, x, y),
        _ => return None,
    }))
}

/// The one-position contributions a loop body's result adds to zeros: `zeros_like(W)`
/// adds none; `scatter_add(B, [p1, ...], [v1, ...])` adds those of `B` and its own; `if c
/// then a else b` adds, at each rank, `(if c then p_a else p_b, if c then v_a else v_b)`,
/// the branch with fewer padded with a position outside every array (dropped: see
/// [`Node::ScatterAdd`]). `None` for other terms, and `Some((Some(B), ...))` when the
/// innermost target `B` is not zeros (only outside branches).
type Entries = (Option<ExprId>, Vec<(ExprId, ExprId)>);

fn entries(cx: &mut RuleCx, t: ExprId, in_branch: bool) -> Option<Entries> {
    match cx.arena()[t] {
        Node::ZerosLike(_) => Some((None, Vec::new())),
        // In a branch, an array named by a variable adds nothing of its own: it is what
        // is left (the same in both branches, or the branch is not understood).
        Node::Var(_) if in_branch => Some((Some(t), Vec::new())),
        Node::ScatterAdd(base, positions, values) => {
            let (Node::Array(pl), Node::Array(vl)) = (cx.arena()[positions], cx.arena()[values])
            else {
                return None;
            };
            let ps = cx.arena().exprs(pl).to_vec();
            let vs = cx.arena().exprs(vl).to_vec();
            if ps.len() != vs.len() {
                return None;
            }
            let (rest, mut out) = match entries(cx, base, in_branch) {
                Some(found) => found,
                None if !in_branch => (Some(base), Vec::new()),
                None => return None,
            };
            out.extend(ps.into_iter().zip(vs));
            Some((rest, out))
        }
        // `let x = e in S`: each position and value keeps the binding (copied with fresh
        // binders where the two are used apart).
        Node::Let(..) | Node::LetTuple(..) if in_branch => {
            let (lets, inner) = peel_lets(cx, t);
            let (rest, found) = entries(cx, inner, true)?;
            let mut out = Vec::with_capacity(found.len());
            for (p, v) in found {
                let p = rewrap(cx, &lets, p);
                let p = cx.arena_mut().copy_fresh(p);
                let v = rewrap(cx, &lets, v);
                let v = cx.arena_mut().copy_fresh(v);
                out.push((p, v));
            }
            Some((rest, out))
        }
        Node::If(c, a, b) => {
            let (ra, ea) = entries(cx, a, true)?;
            let (rb, eb) = entries(cx, b, true)?;
            // Both branches add to the same array, a variable (`if c then scatter_add(G,
            // ..) else G`, the adjoints of reads under two conditions): that array is
            // what is left, the branches' additions conditional.
            let rest = match (ra, rb) {
                (None, None) => None,
                (Some(x), Some(y)) if x == y || cx.arena()[x] == cx.arena()[y] => Some(x),
                _ => return None,
            };
            let n = ea.len().max(eb.len());
            let mut out = Vec::with_capacity(n);
            for k in 0..n {
                // A padding value is never added, but it is evaluated: a zero of the type,
                // never the other branch's value, which may read where this branch's
                // condition says it must not (`if i >= 1 then .. x[i - 1] .. else 0`).
                let (pa, va) = match ea.get(k) {
                    Some(&e) => e,
                    None => (outside(cx, eb[k].0)?, zero_of(cx, eb[k].1)?),
                };
                let (pb, vb) = match eb.get(k) {
                    Some(&e) => e,
                    None => (outside(cx, ea[k].0)?, zero_of(cx, ea[k].1)?),
                };
                let p = cx.mk(Node::If(c, pa, pb));
                let v = cx.mk(Node::If(c, va, vb));
                out.push((p, v));
            }
            Some((rest, out))
        }
        _ => None,
    }
}

/// The zero of the type of `like` if it is a real or a tuple of reals, built without
/// evaluating `like`; `None` for arrays (whose zero needs a length).
fn zero_of(cx: &mut RuleCx, like: ExprId) -> Option<ExprId> {
    fn build(cx: &mut RuleCx, t: &unfad_syntax::Type) -> Option<ExprId> {
        match t {
            unfad_syntax::Type::Real | unfad_syntax::Type::Int => Some(cx.constant(0.0)),
            unfad_syntax::Type::Tuple(items) => {
                let items: Vec<ExprId> =
                    items.iter().map(|t| build(cx, t)).collect::<Option<_>>()?;
                Some(cx.tuple(&items))
            }
            _ => None,
        }
    }
    let t = cx.ty(like)?;
    build(cx, &t)
}

/// A position outside every array, shaped like the position `like` (an int, or a tuple
/// literal of ints).
fn outside(cx: &mut RuleCx, like: ExprId) -> Option<ExprId> {
    let (_, like) = peel_lets(cx, like);
    match cx.arena()[like] {
        Node::Tuple(l) => {
            let k = l.len();
            let items: Vec<ExprId> = (0..k).map(|_| cx.constant(-1.0)).collect();
            Some(cx.tuple(&items))
        }
        _ => match cx.ty(like)? {
            unfad_syntax::Type::Int | unfad_syntax::Type::Real => Some(cx.constant(-1.0)),
            _ => None,
        },
    }
}

/// `reduce +̂ Z (map (k. lets in scatter_add(B, [p1, ...], [v1, ...])) K)` is
/// `scatter_add(... scatter_add(reduce +̂ Z (map (k. lets in B) K), map (k. lets in p1) K,
/// map (k. lets in v1) K) ...)`: the contributions of every element added where they go,
/// instead of an array per element summed. With `B = 0_A` the inner sum is `Z`; a body
/// `if c then ... else ...` of such scatters (or zeros) contributes by rank, each position
/// and value chosen by `c` (see [`entries`]). (`map2` alike.)
pub fn sum_of_scatters(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Reduce(f, z, m) = cx.arena()[e] else {
        return None;
    };
    if !is_array_sum(cx, f) {
        return None;
    }
    let g = match cx.arena()[m] {
        Node::Map(g, _) | Node::Map2(g, _, _) => g,
        // A sum of zero arrays (whatever made their shapes) is the initial value.
        Node::ZerosLike(_) => return Some(z),
        _ => return None,
    };
    if let Some(column) = scatter_column(cx, m) {
        let sum = cx.mk(Node::Reduce(f, z, column));
        return Some(cx.simplify(sum));
    }
    let (ps, body) = lambda(cx, g)?;
    let (lets, inner) = peel_lets(cx, body);
    // Every element adds zeros: the initial value.
    if matches!(cx.arena()[inner], Node::ZerosLike(_)) {
        return Some(z);
    }
    if let Node::Foldl(..) = cx.arena()[inner] {
        return scatters_in_a_fold(cx, z, m, &ps, &lets, inner);
    }
    if !matches!(cx.arena()[inner], Node::ScatterAdd(..) | Node::If(..)) {
        return None;
    }
    let Some((rest, found)) = entries(cx, inner, false) else {
        return scatters_in_a_fold(cx, z, m, &ps, &lets, inner);
    };
    if found.is_empty() {
        return None;
    }
    // The sum of what is left at each element.
    let mut acc = match rest {
        None => z,
        Some(base) => {
            let rest = rewrap(cx, &lets, base);
            let rest = map_like(cx, m, &ps, rest)?;
            let sum = cx.mk(Node::Reduce(f, z, rest));
            cx.simplify(sum)
        }
    };
    for (p, v) in found {
        let p = rewrap(cx, &lets, p);
        let p = map_like(cx, m, &ps, p)?;
        let v = rewrap(cx, &lets, v);
        let v = map_like(cx, m, &ps, v)?;
        let next = cx.mk(Node::ScatterAdd(acc, p, v));
        acc = cx.simplify(next);
    }
    Some(acc)
}

/// `map (g. g.k) X` where `X` is bound to `map (i. lets in (..., S, ...)) K` (or `map2`)
/// and its component `k`, `S`, scatters into zeros: the column made again by a map of its
/// own, `map (i. lets in S) K`, so that its sum becomes one accumulation rather than an
/// array stored per element (the other columns stay where they are).
fn scatter_column(cx: &mut RuleCx, m: ExprId) -> Option<ExprId> {
    let Node::Map(g, x) = cx.arena()[m] else {
        return None;
    };
    let (ps, body) = lambda(cx, g)?;
    let Node::Proj(k, inner) = cx.arena()[body] else {
        return None;
    };
    if cx.arena()[inner] != Node::Var(ps[0]) {
        return None;
    }
    let Node::Var(xv) = cx.arena()[x] else {
        return None;
    };
    let def = cx.definition(xv)?;
    let h = match cx.arena()[def] {
        Node::Map(h, _) | Node::Map2(h, _, _) => h,
        _ => return None,
    };
    let (hps, hbody) = lambda(cx, h)?;
    let (lets, tuple) = peel_lets(cx, hbody);
    let Node::Tuple(l) = cx.arena()[tuple] else {
        return None;
    };
    let component = *cx.arena().exprs(l).get(k as usize)?;
    let (_, comp_inner) = peel_lets(cx, component);
    let scatters = |cx: &RuleCx, t: ExprId| match cx.arena()[t] {
        Node::ScatterAdd(..) => true,
        Node::If(_, a, b) => [a, b].iter().all(|&t| {
            matches!(
                cx.arena()[peel_lets(cx, t).1],
                Node::ScatterAdd(..) | Node::ZerosLike(_)
            )
        }),
        _ => false,
    };
    if !scatters(cx, comp_inner) {
        return None;
    }
    let column = rewrap(cx, &lets, component);
    map_like(cx, def, &hps, column)
}

/// The general case of [`sum_of_scatters`], each element scattering arrays of positions
/// and values (an inner loop's reads): `reduce +̂ Z (map (k. lets in scatter_add(0_A, P,
/// V)) K)` is `foldl (acc, k. lets in scatter_add(acc, P, V)) Z K`, one accumulator that
/// every element adds into (the code generator updates it in place). A chain of scatters
/// onto zeros (an element reading the array at several places, `U[i, j] * U[i, j + 1]`)
/// becomes the same chain onto the accumulator. `map2` alike, over the pairs of its
/// operands.
fn scatters_in_a_fold(
    cx: &mut RuleCx,
    z: ExprId,
    m: ExprId,
    ps: &[Var],
    lets: &[ExprId],
    inner: ExprId,
) -> Option<ExprId> {
    if matches!(cx.arena()[inner], Node::ZerosLike(_)) {
        return None;
    }
    let acc_ty = cx.ty(z)?;
    let acc = cx.fresh("acc", Some(acc_ty));
    let acc_term = cx.var(acc);
    // The element: the operand's, or the pair of both operands' (then projected).
    let (elem, over, subs): (Var, ExprId, Vec<(Var, ExprId)>) = match (cx.arena()[m], ps) {
        (Node::Map(_, x), [p]) => (*p, x, Vec::new()),
        (Node::Map2(_, x, y), [p, q]) => {
            let (tx, ty) = match (cx.ty(x)?, cx.ty(y)?) {
                (unfad_syntax::Type::Array(_, a), unfad_syntax::Type::Array(_, b)) => {
                    ((*a).clone(), (*b).clone())
                }
                _ => return None,
            };
            let pair_ty = unfad_syntax::Type::tuple(vec![tx.clone(), ty.clone()]);
            let (a, b) = (cx.fresh("a", Some(tx)), cx.fresh("b", Some(ty)));
            let (av, bv) = (cx.var(a), cx.var(b));
            let pair = cx.tuple(&[av, bv]);
            let l = cx.arena_mut().var_list(&[a, b]);
            let zip = cx.mk(Node::Lambda(l, pair));
            let zipped = cx.mk(Node::Map2(zip, x, y));
            let e = cx.fresh("e", Some(pair_ty));
            let ev = cx.var(e);
            let first = cx.mk(Node::Proj(0, ev));
            let second = cx.mk(Node::Proj(1, ev));
            (e, zipped, vec![(*p, first), (*q, second)])
        }
        _ => return None,
    };
    let added = onto(cx, inner, acc_term)?;
    let body = rewrap(cx, lets, added);
    let body = cx.arena_mut().copy_fresh(body);
    let body = if subs.is_empty() {
        body
    } else {
        cx.simplify_with(body, &subs)
    };
    let l = cx.arena_mut().var_list(&[acc, elem]);
    let g = cx.mk(Node::Lambda(l, body));
    Some(cx.mk(Node::Foldl(g, z, over)))
}

/// The additions `t` makes to zeros (scatters, folds of accumulations, conditionals and
/// `let`s of those, down to `zeros_like(_)`) made to `acc` instead; `None` if `t` has
/// another form.
fn onto(cx: &mut RuleCx, t: ExprId, acc: ExprId) -> Option<ExprId> {
    let node = match cx.arena()[t] {
        Node::ZerosLike(_) => return Some(acc),
        Node::ScatterAdd(base, positions, values) => {
            Node::ScatterAdd(onto(cx, base, acc)?, positions, values)
        }
        Node::Foldl(g, base, over) if cx.arena().accumulation(g).is_some() => {
            Node::Foldl(g, onto(cx, base, acc)?, over)
        }
        Node::If(c, x, y) => Node::If(c, onto(cx, x, acc)?, onto(cx, y, acc)?),
        Node::Let(v, e1, b) => Node::Let(v, e1, onto(cx, b, acc)?),
        _ => return None,
    };
    Some(cx.mk(node))
}

/// The zeros that the additions `t` (as [`onto`] takes them) start from, into `out`;
/// false if `t` has another form.
fn zero_bases(cx: &RuleCx, t: ExprId, out: &mut Vec<ExprId>) -> bool {
    match cx.arena()[t] {
        Node::ZerosLike(_) => {
            out.push(t);
            true
        }
        Node::ScatterAdd(base, _, _) | Node::Let(_, _, base) => zero_bases(cx, base, out),
        Node::Foldl(g, base, _) if cx.arena().accumulation(g).is_some() => {
            zero_bases(cx, base, out)
        }
        Node::If(_, x, y) => zero_bases(cx, x, out) && zero_bases(cx, y, out),
        _ => false,
    }
}

/// A `foldl` whose step adds to a component of its accumulator an array that is zero
/// but at some positions, `foldl (st, x. lets in (..., map2 +̂ st.k T, ...)) (..., Z_k, ...)
/// X` with `T` scatters into zeros at least as long as `Z_k`, adds at those positions
/// only: the component becomes `T`'s additions made onto `st.k` ([`onto`]), which the
/// code generator makes in place. (Every step then keeps `st.k` as long as `Z_k`, so
/// `map2`, which stops at the shorter operand, kept it so too.) Reverse mode's joint
/// backward fold accumulates the adjoints of the arrays its steps read this way. An
/// accumulator that is one array (`map2 +̂ st T`) alike.
pub fn fold_adds_in_place(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Foldl(f, z, x) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    let [st, _] = ps[..] else {
        return None;
    };
    let (lets, inner) = peel_lets(cx, body);
    let (items, tuple) = match cx.arena()[inner] {
        Node::Tuple(l) => (cx.arena().exprs(l).to_vec(), true),
        _ => (vec![inner], false),
    };
    let starts: Vec<ExprId> = match (cx.arena()[z], tuple) {
        (Node::Tuple(l), true) => cx.arena().exprs(l).to_vec(),
        (_, true) => (0..items.len())
            .map(|k| cx.mk(Node::Proj(k as u32, z)))
            .collect(),
        (_, false) => vec![z],
    };
    if starts.len() != items.len() {
        return None;
    }
    let mut changed = false;
    let mut new_items = items.clone();
    for (k, &item) in items.iter().enumerate() {
        let Node::Map2(g, a, b) = cx.arena()[item] else {
            continue;
        };
        if !is_array_sum(cx, g) {
            continue;
        }
        let path: &[u32] = if tuple { &[k as u32] } else { &[] };
        let (own, t) = if is_component(cx, a, (st, path)) {
            (a, b)
        } else if is_component(cx, b, (st, path)) {
            (b, a)
        } else {
            continue;
        };
        let mut bases = Vec::new();
        if !zero_bases(cx, t, &mut bases) || !bases.iter().all(|&w| cx.not_longer(starts[k], w)) {
            continue;
        }
        if let Some(added) = onto(cx, t, own) {
            new_items[k] = added;
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    let inner = if tuple {
        cx.tuple(&new_items)
    } else {
        new_items[0]
    };
    let body = rewrap(cx, &lets, inner);
    let l = cx.arena_mut().var_list(&ps);
    let g = cx.mk(Node::Lambda(l, body));
    Some(cx.mk(Node::Foldl(g, z, x)))
}

/// If `f` is `(s. c * s)` (or `s * c`, `-s`) with `c` free of `s`, wrapped in `depth`
/// levels of `map` (`(r. map (s. c * s) r)` for depth 1): the scalar function inside.
fn linear_scalar(cx: &RuleCx, f: ExprId, depth: usize) -> Option<ExprId> {
    let (ps, body) = lambda(cx, f)?;
    let [s] = ps[..] else {
        return None;
    };
    let a = cx.arena();
    if depth > 0 {
        return match a[body] {
            Node::Map(g, x) if a[x] == Node::Var(s) => linear_scalar(cx, g, depth - 1),
            _ => None,
        };
    }
    let free_of_s = |t: ExprId| !a.mentions_any(t, &[s]);
    // `c * x` (either order) or `-x` where `x` is `is_x`.
    let scaled = |t: ExprId, is_x: &dyn Fn(ExprId) -> bool| match a[t] {
        Node::Op2(BinOp::Mul, c, x) => (is_x(x) && free_of_s(c)) || (is_x(c) && free_of_s(x)),
        Node::Op1(unfad_syntax::UnOp::Neg, x) => is_x(x),
        _ => false,
    };
    let linear = match a[body] {
        // A tuple of reals scaled component by component: `(c * s.0, c * s.1)`.
        Node::Tuple(l) => a.exprs(l).iter().enumerate().all(|(k, &item)| {
            scaled(item, &|x| {
                matches!(a[x], Node::Proj(j, inner) if j == k as u32 && a[inner] == Node::Var(s))
            })
        }),
        _ => scaled(body, &|x| a[x] == Node::Var(s)),
    };
    linear.then_some(f)
}

/// The number of array levels of `t` above its reals, if it is arrays down to reals.
fn real_rank(t: &unfad_syntax::Type) -> Option<usize> {
    match t {
        unfad_syntax::Type::Real => Some(0),
        // A tuple of reals is scaled as one element.
        unfad_syntax::Type::Tuple(items) if items.iter().all(|t| t.is_real()) => Some(0),
        unfad_syntax::Type::Array(_, elem) => Some(1 + real_rank(elem)?),
        _ => None,
    }
}

/// `map g (scatter_add(0_A, P, V))` where `g` scales each real of an element (`(s. c * s)`
/// on arrays of reals, `(r. map (s. c * s) r)` on arrays of rows, ...) is
/// `scatter_add(0_A, P, V')` with every real of the values `V` scaled alike: scaling is
/// linear and keeps zero, so the positions the scatter leaves at zero stay so.
pub fn scale_of_scatter(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, x) = cx.arena()[e] else {
        return None;
    };
    if !matches!(
        cx.arena()[peel_lets(cx, x).1],
        Node::ScatterAdd(..) | Node::If(..) | Node::Foldl(..)
    ) {
        return None;
    }
    scale_through(cx, f, x)
}

/// `map f t` for the scaling `f` (see [`scale_of_scatter`]), pushed into `t`: through
/// `let`s and both branches of an `if`, zeros staying zeros, a scatter into zeros scaling
/// its values. `None` if `t` has another form somewhere.
fn scale_through(cx: &mut RuleCx, f: ExprId, t: ExprId) -> Option<ExprId> {
    match cx.arena()[t] {
        Node::ZerosLike(_) => Some(t),
        Node::Let(x, e1, b) => {
            let b = scale_through(cx, f, b)?;
            Some(cx.mk(Node::Let(x, e1, b)))
        }
        Node::LetTuple(xs, e1, b) => {
            let b = scale_through(cx, f, b)?;
            Some(cx.mk(Node::LetTuple(xs, e1, b)))
        }
        Node::If(c, a, b) => {
            let a = scale_through(cx, f, a)?;
            let f2 = cx.arena_mut().copy_fresh(f);
            let b = scale_through(cx, f2, b)?;
            Some(cx.mk(Node::If(c, a, b)))
        }
        Node::ScatterAdd(base, positions, values) => {
            // The target scaled too: zeros stay zeros, an inner scatter scales its values.
            let scaled_base = scale_base(cx, f, base)?;
            let rank = real_rank(&cx.ty(base)?)?;
            let scalar = linear_scalar(cx, f, rank - 1)?;
            let scaled = scale_values(cx, scalar, values)?;
            Some(cx.mk(Node::ScatterAdd(scaled_base, positions, scaled)))
        }
        // A fold of an accumulation from zeros is the sum of its additions: each scaled.
        Node::Foldl(g, start, over) if cx.arena().accumulation(g).is_some() => {
            let scaled_start = scale_base(cx, f, start)?;
            let rank = real_rank(&cx.ty(start)?)?;
            let scalar = linear_scalar(cx, f, rank - 1)?;
            let g = scale_accumulation(cx, scalar, g)?;
            Some(cx.mk(Node::Foldl(g, scaled_start, over)))
        }
        _ => None,
    }
}

/// The target of a scatter (or the start of an accumulation) that [`scale_through`]
/// scales: zeros as they are, an inner scatter or accumulation scaled in turn.
fn scale_base(cx: &mut RuleCx, f: ExprId, base: ExprId) -> Option<ExprId> {
    match cx.arena()[base] {
        Node::ZerosLike(_) => Some(base),
        Node::ScatterAdd(..) | Node::Foldl(..) => {
            let f2 = cx.arena_mut().copy_fresh(f);
            scale_through(cx, f2, base)
        }
        _ => None,
    }
}

/// `values` (an array of arrays down to reals, or of tuples of reals) with the scalar
/// scaling `scalar` applied to every real: the function through as many levels of `map`.
fn scale_values(cx: &mut RuleCx, scalar: ExprId, values: ExprId) -> Option<ExprId> {
    let value_rank = match cx.ty(values)? {
        unfad_syntax::Type::Array(_, elem) => real_rank(&elem)?,
        _ => return None,
    };
    let mut g = scalar;
    for _ in 0..value_rank {
        let r = cx.fresh("r", None);
        let rv = cx.var(r);
        let inner = cx.arena_mut().copy_fresh(g);
        let body = cx.mk(Node::Map(inner, rv));
        let l = cx.arena_mut().var_list(&[r]);
        g = cx.mk(Node::Lambda(l, body));
    }
    let g = cx.arena_mut().copy_fresh(g);
    let scaled = cx.mk(Node::Map(g, values));
    Some(cx.simplify(scaled))
}

/// The accumulation `g` (a fold's function adding into its accumulator, see
/// [`unfad_syntax::Arena::accumulation`]) with every value it adds scaled by `scalar`:
/// a copy with fresh binders, its nested accumulations scaled alike.
fn scale_accumulation(cx: &mut RuleCx, scalar: ExprId, g: ExprId) -> Option<ExprId> {
    let g = cx.arena_mut().copy_fresh(g);
    let (ps, body) = lambda(cx, g)?;
    let acc = *ps.first()?;
    let (lets, spine) = peel_lets(cx, body);
    fn walk(cx: &mut RuleCx, scalar: ExprId, acc: Var, t: ExprId) -> Option<ExprId> {
        match cx.arena()[t] {
            Node::Var(v) if v == acc => Some(t),
            Node::ScatterAdd(base, positions, values) => {
                let base = walk(cx, scalar, acc, base)?;
                let values = scale_values(cx, scalar, values)?;
                Some(cx.mk(Node::ScatterAdd(base, positions, values)))
            }
            Node::Foldl(h, base, over) => {
                let base = walk(cx, scalar, acc, base)?;
                let h = scale_accumulation(cx, scalar, h)?;
                Some(cx.mk(Node::Foldl(h, base, over)))
            }
            Node::If(c, x, y) => {
                let x = walk(cx, scalar, acc, x)?;
                let y = walk(cx, scalar, acc, y)?;
                Some(cx.mk(Node::If(c, x, y)))
            }
            Node::Let(v, e1, b) => {
                let b = walk(cx, scalar, acc, b)?;
                Some(cx.mk(Node::Let(v, e1, b)))
            }
            _ => None,
        }
    }
    let spine = walk(cx, scalar, acc, spine)?;
    let body = rewrap(cx, &lets, spine);
    let l = cx.arena_mut().var_list(&ps);
    Some(cx.mk(Node::Lambda(l, body)))
}

/// `scatter_add(Z, iota len(Z), V)` with `V` as long as `Z` zero is `V` (every position
/// gets its value); and `scatter_add(Z, P, 0)`, adding zeros anywhere, is `Z`. The zeros
/// may be a literal of them, `[zeros_like(r)]`: reverse mode gives that to a row read only
/// for its shape, as in `map (t. 0) X[0]`, a sum's first accumulator.
pub fn scatter_everywhere(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::ScatterAdd(z, positions, values) = cx.arena()[e] else {
        return None;
    };
    // Adding zeros anywhere changes nothing.
    let zero = |n: Node| matches!(n, Node::ZerosLike(_)) || n == Node::Const(0.0);
    let all_zero = match cx.arena()[values] {
        Node::ZerosLike(_) => true,
        Node::Array(items) => {
            let items = cx.arena().exprs(items);
            items.iter().all(|&v| zero(cx.arena()[v]))
        }
        _ => false,
    };
    if all_zero {
        return Some(z);
    }
    let k = iota_operand(cx, positions)?;
    let lz = cx.len_of(z)?;
    let Node::Len(of) = cx.arena()[k] else {
        return None;
    };
    if cx.len_of(of)? != lz || cx.len_of(values)? != lz {
        return None;
    }
    if matches!(cx.arena()[z], Node::ZerosLike(_)) {
        return Some(values);
    }
    None
}

/// How far past the scatter's values [`contiguous_scatter`] pads with zeros at most, at
/// either end (each zero is a scan, fused by the code generator into the loop over `Z`).
const MAX_PAD: u32 = 3;

/// `scatter_add(Z, iota m, V)` and `scatter_add(Z, map (i. i + c) (iota m), V)`, with `Z`
/// and `V` arrays of reals and `c` a small integer literal (of either sign), is `map2 +̂ Z
/// V'`, where `V'` is `V` moved by `c` places: `c` zeros before it (`scanl (acc, v. v) 0`
/// per zero) or its first `-c` elements dropped (`shift1L`), and zeros after it until it
/// is at least as long as `Z`, its last ones dropped (`shift1R`) down to `Z`'s formal size
/// (`map2`'s operands have one). A read's adjoint at contiguous positions, `x[i + 1]` over
/// `i < len(x) - 1`, is then one elementwise pass fused with its neighbours' (a stencil
/// written by position differentiates as one written with `shift1L`), where a scatter is
/// a loop of its own adding one element at a time. Positions outside `Z` add nothing in
/// both forms: `map2` stops at the shorter array, and the padding only makes `V'` longer.
/// Not into a variable or a component of one (a fold's accumulator, of one array or of
/// several), which the scatter adds into in place where `map2` would split a fold of
/// several in one per component (a pass over the fold's array each).
pub fn contiguous_scatter(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::ScatterAdd(z, positions, values) = cx.arena()[e] else {
        return None;
    };
    // A variable or a component of one (a fold's accumulator) is added into in place by
    // the scatter; as `map2`, a fold of several would split into one pass per component.
    let accumulator = match cx.arena()[z] {
        Node::Var(_) => true,
        Node::Proj(_, t) => matches!(cx.arena()[t], Node::Var(_)),
        _ => false,
    };
    if accumulator {
        return None;
    }
    // The positions: `iota m`, or `i + c` (`c + i`, `i - c`) over it.
    let (offset, iota) = if iota_operand(cx, positions).is_some() {
        (0i64, positions)
    } else {
        let Node::Map(f, iota) = cx.arena()[positions] else {
            return None;
        };
        iota_operand(cx, iota)?;
        let (ps, body) = lambda(cx, f)?;
        let [i] = ps[..] else {
            return None;
        };
        let literal = |x: ExprId| match cx.arena()[x] {
            Node::Const(c) if c.fract() == 0.0 && c.abs() <= f64::from(MAX_PAD) => Some(c as i64),
            _ => None,
        };
        let var = |x: ExprId| cx.arena()[x] == Node::Var(i);
        match cx.arena()[body] {
            Node::Op2(BinOp::Add, x, y) if var(x) => (literal(y)?, iota),
            Node::Op2(BinOp::Add, x, y) if var(y) => (literal(x)?, iota),
            Node::Op2(BinOp::Sub, x, y) if var(x) => (-literal(y)?, iota),
            _ => return None,
        }
    };
    // One value per position.
    if cx.len_of(values)? != cx.len_of(iota)? {
        return None;
    }
    // The formal sizes, found without inferring the types of the values (whose binders
    // would be typed out of their context): `Z` an array of reals (so the values are
    // reals too) and the positions' `iota`.
    let z_size = real_array_size(cx, z)?;
    let iota_node = match cx.arena()[iota] {
        Node::Var(v) => cx.definition(v)?,
        _ => iota,
    };
    let Some(Type::Array(mut size, _)) = cx.ty(iota_node) else {
        return None;
    };
    if size.var != z_size.var {
        return None;
    }
    let mut moved = values;
    for _ in 0..(-offset).max(0) {
        moved = cx.mk(Node::Shift1L(moved));
        size = size.plus(-1);
    }
    let keep_last = |cx: &mut RuleCx, left: bool| {
        let (v, acc) = (
            cx.fresh("v", Some(Type::Real)),
            cx.fresh("acc", Some(Type::Real)),
        );
        let params = if left { [acc, v] } else { [v, acc] };
        let l = cx.arena_mut().var_list(&params);
        let body = cx.var(v);
        cx.mk(Node::Lambda(l, body))
    };
    let zero = cx.constant(0.0);
    for _ in 0..offset.max(0) {
        let f = keep_last(cx, true);
        moved = cx.mk(Node::Scanl(f, zero, moved));
        size = size.plus(1);
    }
    let mut pads = 0;
    while !cx.not_longer(z, moved) {
        if pads == MAX_PAD {
            return None;
        }
        let f = keep_last(cx, false);
        moved = cx.mk(Node::Scanr(f, zero, moved));
        size = size.plus(1);
        pads += 1;
    }
    // `map2` takes arrays of one formal size: the values past `Z`'s go (`shift1R`), as
    // long as what is left is not shorter than `Z` at run time.
    if size.offset < z_size.offset || size.offset - z_size.offset > 2 * i64::from(MAX_PAD) {
        return None;
    }
    for _ in 0..size.offset - z_size.offset {
        moved = cx.mk(Node::Shift1R(moved));
    }
    if !cx.not_longer(z, moved) {
        return None;
    }
    let (s, t) = (
        cx.fresh("s", Some(Type::Real)),
        cx.fresh("t", Some(Type::Real)),
    );
    let l = cx.arena_mut().var_list(&[s, t]);
    let (vs, vt) = (cx.var(s), cx.var(t));
    let sum = cx.mk(Node::Op2(BinOp::Add, vs, vt));
    let plus = cx.mk(Node::Lambda(l, sum));
    let out = cx.mk(Node::Map2(plus, z, moved));
    Some(crate::rules::apply(cx, out).unwrap_or(out))
}

/// The formal size of `z` if it is an array of reals whose type is known without
/// inferring a term with binders: a variable of known type, `zeros_like` of one, or such an
/// array plus another (`map2 +̂`, as [`contiguous_scatter`] leaves a chain of scatters) or
/// with another's reals in its place (`map2 (s, t. t)`).
fn real_array_size(cx: &mut RuleCx, z: ExprId) -> Option<Size> {
    match cx.arena()[z] {
        Node::Var(v) => match cx.arena().var_type(v) {
            Some(Type::Array(size, elem)) if **elem == Type::Real => Some(size.clone()),
            _ => None,
        },
        Node::ZerosLike(a) => real_array_size(cx, a),
        Node::Map2(f, a, _) if is_array_sum(cx, f) => real_array_size(cx, a),
        // `map2 (s, t. t) A B`, what adding `B` to zeros leaves: `B` cut to `A`'s length.
        Node::Map2(f, a, _) => {
            let (ps, body) = lambda(cx, f)?;
            match cx.arena()[body] {
                Node::Var(p) if ps.contains(&p) && cx.arena().var_type(p) == Some(&Type::Real) => {
                    real_array_size(cx, a)
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// The operand of `iota`, seen through a `let`-bound variable.
fn iota_operand(cx: &RuleCx, e: ExprId) -> Option<ExprId> {
    match cx.arena()[e] {
        Node::Iota(k) => Some(k),
        Node::Var(v) => match cx.arena()[cx.definition(v)?] {
            Node::Iota(k) => Some(k),
            _ => None,
        },
        _ => None,
    }
}

/// `scatter_add(Z, map (j. (p, j)) (iota len(Z[p])), V)`, a whole row `p` of `Z` (an
/// array of rows of reals, `p` free of `j`), is `scatter_add(Z, [p], [V])`: one row added.
pub fn scatter_row(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::ScatterAdd(z, positions, values) = cx.arena()[e] else {
        return None;
    };
    let Node::Map(f, over) = cx.arena()[positions] else {
        return None;
    };
    let k = iota_operand(cx, over)?;
    let (ps, body) = lambda(cx, f)?;
    let [j] = ps[..] else {
        return None;
    };
    let Node::Tuple(l) = cx.arena()[body] else {
        return None;
    };
    let &[p, last] = cx.arena().exprs(l) else {
        return None;
    };
    if cx.arena()[last] != Node::Var(j) || cx.arena().mentions_any(p, &[j]) {
        return None;
    }
    // The row's length is the iota's and the values'.
    let row_len = match cx.ty(z)? {
        unfad_syntax::Type::Array(_, row) => match &*row {
            unfad_syntax::Type::Array(m, _) => crate::len::exact(m),
            _ => return None,
        },
        _ => return None,
    };
    let Node::Len(of) = cx.arena()[k] else {
        return None;
    };
    if cx.len_of(of)? != row_len || cx.len_of(values)? != row_len {
        return None;
    }
    let at = cx.arena_mut().expr_list(&[p]);
    let at = cx.mk(Node::Array(at));
    let vs = cx.arena_mut().expr_list(&[values]);
    let vs = cx.mk(Node::Array(vs));
    Some(cx.mk(Node::ScatterAdd(z, at, vs)))
}

/// `map2 +̂ X (scatter_add(0_A, P, V))` (either order) is `scatter_add(X, P, V)`: adding
/// an array that is zero but at some positions adds at those positions only; so for a
/// chain of scatters into zeros, rebuilt on `X`. And `map2 +̂ X (if c then B else 0_A)`
/// is `if c then map2 +̂ X B else X`: a read's adjoint made only where a condition holds
/// (a neighbour's, `x[j - 1]` where `j >= 1`) then adds in place where it holds, instead
/// of an array of zeros added elsewhere.
pub fn add_scatter(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, x, y) = cx.arena()[e] else {
        return None;
    };
    // `map2 +̂` is the sum of two arrays when its function is `+̂` of their elements.
    if !is_array_sum(cx, f) {
        return None;
    }
    // The chain's additions, innermost first, and its zeros.
    let scatter = |cx: &RuleCx, v: ExprId| {
        let mut adds = Vec::new();
        let mut at = v;
        while let Node::ScatterAdd(base, p, vals) = cx.arena()[at] {
            adds.push((p, vals));
            at = base;
        }
        (!adds.is_empty() && matches!(cx.arena()[at], Node::ZerosLike(_))).then(|| {
            adds.reverse();
            (at, adds)
        })
    };
    let zeros = |cx: &RuleCx, v: ExprId| matches!(cx.arena()[v], Node::ZerosLike(_));
    let conditional = |cx: &RuleCx, v: ExprId| match cx.arena()[v] {
        Node::If(c, b, z) if zeros(cx, z) => Some((c, b, z)),
        _ => None,
    };
    if let Some((other, (base, adds))) = match (scatter(cx, x), scatter(cx, y)) {
        (_, Some(sc)) => Some((x, sc)),
        (Some(sc), None) => Some((y, sc)),
        (None, None) => None,
    } {
        // `map2` stops at the shorter array: the result keeps `other`'s length only if
        // the scatter's target is not shorter.
        if !cx.not_longer(other, base) {
            return None;
        }
        let mut out = other;
        for (p, vals) in adds {
            out = cx.mk(Node::ScatterAdd(out, p, vals));
        }
        return Some(out);
    }
    let (other, (c, b, z)) = match (conditional(cx, x), conditional(cx, y)) {
        (_, Some(cd)) => (x, cd),
        (Some(cd), None) => (y, cd),
        (None, None) => return None,
    };
    if !cx.not_longer(other, z) {
        return None;
    }
    let sum = cx.mk(Node::Map2(f, other, b));
    let sum = crate::rules::apply(cx, sum).unwrap_or(sum);
    Some(cx.mk(Node::If(c, sum, other)))
}

/// `foldl (acc, x. lets in scatter_add(acc, [p1, ...], [v1, ...])) Z X`, each element adding
/// at a few positions it computes (`acc` nowhere else), is `scatter_add(... scatter_add(Z,
/// map (x. lets in p1) X, map (x. lets in v1) X) ...)`: the same additions, in the same
/// order, which the other rules can then see (a scatter at every position is its values).
pub fn fold_of_scatters(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Foldl(f, z, x) = cx.arena()[e] else {
        return None;
    };
    let (ps, body) = lambda(cx, f)?;
    let [acc, elem] = ps[..] else {
        return None;
    };
    let (lets, inner) = peel_lets(cx, body);
    let Node::ScatterAdd(target, positions, values) = cx.arena()[inner] else {
        return None;
    };
    // `acc` only as the target.
    let reads_acc = |cx: &RuleCx, t: ExprId| cx.arena().mentions_any(t, &[acc]);
    if cx.arena()[target] != Node::Var(acc)
        || reads_acc(cx, positions)
        || reads_acc(cx, values)
        || lets.iter().any(|&l| match cx.arena()[l] {
            Node::Let(_, e1, _) | Node::LetTuple(_, e1, _) => reads_acc(cx, e1),
            _ => true,
        })
    {
        return None;
    }
    let (Node::Array(pl), Node::Array(vl)) = (cx.arena()[positions], cx.arena()[values]) else {
        return None;
    };
    let ps_items = cx.arena().exprs(pl).to_vec();
    let vs_items = cx.arena().exprs(vl).to_vec();
    // One position per element: element order is the scatter's order. (With several,
    // the fold adds element by element, the scatters position column by column.)
    if ps_items.len() != 1 || vs_items.len() != 1 {
        return None;
    }
    let like = cx.mk(Node::Map(f, x));
    let mut out = z;
    for (p, v) in ps_items.into_iter().zip(vs_items) {
        let p = rewrap(cx, &lets, p);
        let p = map_like(cx, like, &[elem], p)?;
        let v = rewrap(cx, &lets, v);
        let v = map_like(cx, like, &[elem], v)?;
        let next = cx.mk(Node::ScatterAdd(out, p, v));
        out = cx.simplify(next);
    }
    Some(out)
}

/// `zeros_like(scatter_add(Z, P, V))` is `zeros_like(Z)`: a scatter has its target's shape.
pub fn zeros_of_scatter(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::ZerosLike(x) = cx.arena()[e] else {
        return None;
    };
    let Node::ScatterAdd(z, _, _) = cx.arena()[x] else {
        return None;
    };
    Some(cx.mk(Node::ZerosLike(z)))
}
