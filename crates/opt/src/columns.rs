//! Unread columns of stored maps: `let X = map (i. (c0, c1, c2)) K in ...` where the rest
//! only ever reads `X` through maps that project its elements (`map (g. g.0 + g.2) X`)
//! keeps the components read, `let X = map (i. (c0, c2)) K`, and the projections are
//! renumbered. Reverse mode's shared passes make such maps (one component per adjoint,
//! some of which the scatter rules then make elsewhere, by an accumulation of their own):
//! a column left in them would be computed and stored per element for nothing, an array
//! per element when it is an array. Exact: the kept components are computed as before.

use std::collections::BTreeSet;

use unfad_syntax::{with_stack, Arena, ExprId, Func, Node, Type, UnOp, Var};

/// `func` with the unread columns of its stored maps dropped (the same term if none).
pub fn drop_unread_columns(arena: &mut Arena, func: &Func) -> Func {
    let body = walk(arena, func.body, &|arena, at, x, rhs, rest| {
        // A component that is a tuple written out, read only through its own components,
        // becomes those components first (`(a, (b, c))` read as `g.0`, `fst (g.1)`: `(a, b,
        // c)`), so that its unread parts go too.
        let flat = flatten(arena, x, rhs, rest);
        let (rhs1, rest1) = flat.unwrap_or((rhs, rest));
        match narrow(arena, x, rhs1, rest1) {
            Some((rhs, rest)) => Some(arena.rebuild(at, Node::Let(x, rhs, rest))),
            None if flat.is_some() => Some(arena.rebuild(at, Node::Let(x, rhs1, rest1))),
            None => None,
        }
    });
    Func {
        body,
        ..func.clone()
    }
}

/// A rewrite of one `let x = rhs in rest` (the node `at`, its parts already walked): the
/// term replacing it, or `None`.
type LetRewrite = dyn Fn(&mut Arena, ExprId, Var, ExprId, ExprId) -> Option<ExprId>;

/// `e` with `rewrite` applied to each of its `let`s, innermost first.
fn walk(arena: &mut Arena, e: ExprId, rewrite: &LetRewrite) -> ExprId {
    with_stack(|| {
        // `let` chains in a loop: programs nest thousands of them.
        let mut chain = Vec::new();
        let mut cur = e;
        while let Node::Let(x, rhs, rest) = arena[cur] {
            chain.push((x, rhs, cur));
            cur = rest;
        }
        if chain.is_empty() {
            let node = arena[e];
            let new = arena.map_children(node, |a, c| walk(a, c, rewrite));
            return if new == node {
                e
            } else {
                arena.rebuild(e, new)
            };
        }
        let mut out = walk(arena, cur, rewrite);
        for (x, rhs, at) in chain.into_iter().rev() {
            let rhs = walk(arena, rhs, rewrite);
            out = match rewrite(arena, at, x, rhs, out) {
                Some(new) => new,
                None => arena.rebuild(at, Node::Let(x, rhs, out)),
            };
        }
        out
    })
}

/// `func` with the unread components of its folds' accumulators dropped: `let B = foldl
/// (st, x. lets in (e_0, ..., e_m)) (z_0, ..., z_m) A in rest`, where `rest` reads `B`
/// only through projections and some components are read neither by `rest` nor by the
/// components kept (nor by the `let`s of the step, which every component is taken to
/// need), keeps only those: each step computes what is read, no more. Reverse mode's joint
/// backward fold carries the adjoint of every array the steps read, the parameters not
/// asked for among them; their accumulation would otherwise run at every step. Exact:
/// the kept components are computed as before.
pub fn drop_unread_fold_state(arena: &mut Arena, func: &Func) -> Func {
    let body = walk(arena, func.body, &|arena, _, x, rhs, rest| {
        narrow_fold(arena, x, rhs, rest)
    });
    Func {
        body,
        ..func.clone()
    }
}

/// `let x = rhs in rest` for [`drop_unread_fold_state`]: the narrower fold bound to a new
/// variable and `rest` reading it (`None` when nothing changes).
fn narrow_fold(arena: &mut Arena, x: Var, rhs: ExprId, rest: ExprId) -> Option<ExprId> {
    let Node::Foldl(f, z, over) = arena[rhs] else {
        return None;
    };
    let (ps, body) = arena.lambda_parts(f).map(|(p, b)| (p.to_vec(), b))?;
    let [st, elem] = ps[..] else {
        return None;
    };
    let mut lets = Vec::new();
    let mut inner = body;
    while let Node::Let(_, _, b) | Node::LetTuple(_, _, b) = arena[inner] {
        lets.push(inner);
        inner = b;
    }
    let Node::Tuple(l) = arena[inner] else {
        return None;
    };
    let items = arena.exprs(l).to_vec();
    let Node::Tuple(zl) = arena[z] else {
        return None;
    };
    let starts = arena.exprs(zl).to_vec();
    let Some(Type::Tuple(tys)) = arena.var_type(st).cloned() else {
        return None;
    };
    if starts.len() != items.len() || tys.len() != items.len() {
        return None;
    }
    // What `rest` reads, then what the step needs for it, to a fixed point.
    let mut read = BTreeSet::new();
    if !projected(arena, rest, x, &mut read) {
        return None;
    }
    for &l in &lets {
        let (Node::Let(_, e1, _) | Node::LetTuple(_, e1, _)) = arena[l] else {
            return None;
        };
        if !projected(arena, e1, st, &mut read) {
            return None;
        }
    }
    let mut reads = Vec::with_capacity(items.len());
    for &item in &items {
        let mut r = BTreeSet::new();
        if !projected(arena, item, st, &mut r) {
            return None;
        }
        reads.push(r);
    }
    loop {
        let more: BTreeSet<u32> = read
            .iter()
            .filter_map(|&k| reads.get(k as usize))
            .flatten()
            .copied()
            .collect();
        if more.is_subset(&read) {
            break;
        }
        read.extend(more);
    }
    // (Nothing read: the fold is dead, and goes with its `let`.)
    if read.is_empty()
        || read.len() >= items.len()
        || read.iter().any(|&k| k as usize >= items.len())
    {
        return None;
    }
    let kept: Vec<u32> = read.into_iter().collect();
    let pick = |v: &[ExprId]| -> Vec<ExprId> { kept.iter().map(|&k| v[k as usize]).collect() };
    let new_tys: Vec<Type> = kept.iter().map(|&k| tys[k as usize].clone()).collect();
    let new_ty = if kept.len() == 1 {
        new_tys[0].clone()
    } else {
        Type::tuple(new_tys)
    };
    let (new_items, new_starts) = (pick(&items), pick(&starts));
    let (step_result, start) = if kept.len() == 1 {
        (new_items[0], new_starts[0])
    } else {
        (arena.tuple(&new_items), arena.tuple(&new_starts))
    };
    let step = rewrap_lets(arena, &lets, step_result);
    let name = arena.var_name(st).to_string();
    let st2 = arena.fresh_var(&name, Some(new_ty.clone()));
    let step = reproject(arena, step, st, st2, &kept);
    let g = arena.lambda(&[st2, elem], step);
    let g = arena.copy_fresh(g);
    let fold = arena.add(Node::Foldl(g, start, over));
    let name = arena.var_name(x).to_string();
    let x2 = arena.fresh_var(&name, Some(new_ty));
    let rest = reproject(arena, rest, x, x2, &kept);
    Some(arena.let_(x2, fold, rest))
}

/// `let x = rhs in rest` with `rhs` a map of tuples some of whose components `rest` never
/// reads: the narrower map and `rest` reading it (`None` when nothing changes).
fn narrow(arena: &mut Arena, x: Var, rhs: ExprId, rest: ExprId) -> Option<(ExprId, ExprId)> {
    let TupleMap {
        operands,
        ps,
        lets,
        items,
    } = tuple_map(arena, rhs)?;
    // Columns that hold the same constant in every element (reverse mode's zero adjoint
    // of an array the element does not depend on): their readers read the constant, and
    // the column goes with the other unread ones.
    let consts = constant_columns(arena, &ps, &lets, &items);
    let rest = if consts.is_empty() {
        rest
    } else {
        inline_constants(arena, rest, x, &consts)
    };
    let mut read = BTreeSet::new();
    let all = readers(arena, rest, x, &mut |r| {
        read.extend(r.read);
        true
    });
    if !all || read.len() >= items.len() || read.is_empty() {
        return None;
    }
    let kept: Vec<u32> = read.into_iter().collect();
    // The element's new type, and where each kept component goes.
    let Some(Type::Array(n, elem)) = arena.var_type(x).cloned() else {
        return None;
    };
    let Type::Tuple(elem_items) = &*elem else {
        return None;
    };
    let new_elem = if kept.len() == 1 {
        elem_items.get(kept[0] as usize)?.clone()
    } else {
        Type::tuple(
            kept.iter()
                .map(|&k| elem_items.get(k as usize).cloned())
                .collect::<Option<Vec<_>>>()?,
        )
    };
    let new_items: Vec<ExprId> = kept.iter().map(|&k| items[k as usize]).collect();
    let new_body = if new_items.len() == 1 {
        new_items[0]
    } else {
        arena.tuple(&new_items)
    };
    let new_rhs = map_of(arena, &ps, &lets, new_body, &operands)?;
    arena.set_var_type(x, Type::array(n, new_elem.clone()));
    let new_rest = retarget(arena, rest, x, &|_| {
        Some((x, kept.clone(), new_elem.clone()))
    });
    Some((new_rhs, new_rest))
}

/// The components among `items` (of a map's element, under the `let`s `lets`, with
/// parameters `ps`) that are the same constant for every element: a literal, or the zeros
/// or ones of an array bound outside the function (`zeros_like(x)`, `zeros_like(p.1)`),
/// which a reader may then compute itself at no cost.
fn constant_columns(
    arena: &Arena,
    ps: &[Var],
    lets: &[ExprId],
    items: &[ExprId],
) -> Vec<(u32, ExprId)> {
    let mut inside: Vec<Var> = ps.to_vec();
    for &l in lets {
        inside.extend(arena.binders(arena[l]));
    }
    let outside_atom = |mut e: ExprId| {
        while let Node::Proj(_, inner) = arena[e] {
            e = inner;
        }
        matches!(arena[e], Node::Var(v) if !inside.contains(&v))
    };
    items
        .iter()
        .enumerate()
        .filter(|&(_, &it)| match arena[it] {
            Node::Const(_) => true,
            Node::ZerosLike(a) | Node::OnesLike(a) => outside_atom(a),
            _ => false,
        })
        .map(|(k, &it)| (k as u32, it))
        .collect()
}

/// `e` with each loop over `x` reading, for each column of `consts`, the constant instead
/// of `g.k` (`map (g. g.2) X` becomes `map (g. zeros_like(w)) X`).
fn inline_constants(arena: &mut Arena, e: ExprId, x: Var, consts: &[(u32, ExprId)]) -> ExprId {
    rewrite_loops(arena, e, x, &mut |arena, ps, which, body, operand| {
        Some((constants_for(arena, body, ps[which], consts), operand))
    })
}

/// `e` with each `g.k` of a column `k` of `consts` replaced by its constant.
fn constants_for(arena: &mut Arena, e: ExprId, g: Var, consts: &[(u32, ExprId)]) -> ExprId {
    with_stack(|| match arena[e] {
        Node::Proj(k, inner) if arena[inner] == Node::Var(g) => {
            consts.iter().find(|&&(j, _)| j == k).map_or(e, |&(_, c)| c)
        }
        node => {
            let new = arena.map_children(node, |a, c| constants_for(a, c, g, consts));
            arena.rebuild(e, new)
        }
    })
}

/// `let x = rhs in rest` with `rhs` a map whose element has a component `k` that is a
/// tuple written out, which `rest` reads only through projections of it (`fst (g.k)`):
/// that component's items spliced into the element in its place, and `rest` reading them
/// there (`None` if there is none such). Exact: the same items, computed alike.
fn flatten(arena: &mut Arena, x: Var, rhs: ExprId, rest: ExprId) -> Option<(ExprId, ExprId)> {
    let TupleMap {
        operands,
        ps,
        lets,
        items,
    } = tuple_map(arena, rhs)?;
    let Some(Type::Array(n, elem)) = arena.var_type(x).cloned() else {
        return None;
    };
    let Type::Tuple(elem_items) = &*elem else {
        return None;
    };
    if elem_items.len() != items.len() {
        return None;
    }
    // The first component that is a tuple written out and read only through its items.
    let (k, inner) = items.iter().enumerate().find_map(|(k, &it)| {
        let Node::Tuple(l) = arena[it] else {
            return None;
        };
        let inner = arena.exprs(l).to_vec();
        let mut ok = true;
        let mut read = BTreeSet::new();
        let all = readers(arena, rest, x, &mut |_| true);
        if all {
            nested_reads_only(arena, rest, x, k as u32, &mut ok, &mut read);
        }
        // Only where some item goes: the others keep their nesting (which the code
        // generator reads as it is).
        (all && ok && read.len() < inner.len()).then_some((k, inner))
    })?;
    let Type::Tuple(inner_tys) = &elem_items[k] else {
        return None;
    };
    if inner_tys.len() != inner.len() {
        return None;
    }
    let width = inner.len() as u32;
    let mut new_items = items[..k].to_vec();
    new_items.extend_from_slice(&inner);
    new_items.extend_from_slice(&items[k + 1..]);
    let mut new_tys: Vec<Type> = elem_items[..k].to_vec();
    new_tys.extend(inner_tys.iter().cloned());
    new_tys.extend(elem_items[k + 1..].iter().cloned());
    let new_elem = Type::tuple(new_tys);
    let body = arena.tuple(&new_items);
    let new_rhs = map_of(arena, &ps, &lets, body, &operands)?;
    arena.set_var_type(x, Type::array(n, new_elem.clone()));
    let new_rest = retarget_flat(arena, rest, x, (k as u32, width), &new_elem);
    Some((new_rhs, new_rest))
}

/// Clears `ok` if a loop over `x` in `e` reads component `k` of its elements other than
/// through a projection of it; the items it reads so go into `read`.
fn nested_reads_only(
    arena: &Arena,
    e: ExprId,
    x: Var,
    k: u32,
    ok: &mut bool,
    read: &mut BTreeSet<u32>,
) {
    with_stack(|| {
        if let Some((f, which)) = loop_over(arena, e, x) {
            if let Some((ps, body)) = arena.lambda_parts(f) {
                if !projected_twice(arena, body, ps[which], k, read) {
                    *ok = false;
                }
            }
        }
        for c in arena.children(e) {
            nested_reads_only(arena, c, x, k, ok, read);
        }
    })
}

/// Whether every `g.k` in `e` is itself projected (`fst (g.k)`, `(g.k).2`), the items so
/// read going into `read`.
fn projected_twice(arena: &Arena, e: ExprId, g: Var, k: u32, read: &mut BTreeSet<u32>) -> bool {
    with_stack(|| match arena[e] {
        Node::Proj(j, inner) if is_component(arena, inner, g, k) => {
            read.insert(j);
            true
        }
        _ if is_component(arena, e, g, k) => false,
        _ => arena
            .children(e)
            .into_iter()
            .all(|c| projected_twice(arena, c, g, k, read)),
    })
}

/// Whether `e` is `g.k`.
fn is_component(arena: &Arena, e: ExprId, g: Var, k: u32) -> bool {
    matches!(arena[e], Node::Proj(j, inner) if j == k && arena[inner] == Node::Var(g))
}

/// `e` with each loop over `x` reading the flattened elements (see [`flatten`]):
/// `(g.k).j` becoming `g2.(k + j)` and `g.i` for `i > k` becoming `g2.(i + width - 1)`,
/// `g2` a fresh parameter of the new element type.
fn retarget_flat(arena: &mut Arena, e: ExprId, x: Var, at: (u32, u32), elem: &Type) -> ExprId {
    rewrite_loops(arena, e, x, &mut |arena, ps, which, body, _| {
        let g = ps[which];
        let name = arena.var_name(g).to_string();
        let g2 = arena.fresh_var(&name, Some(elem.clone()));
        ps[which] = g2;
        // A new node for the array: the old one's type, recorded by the type checker, is
        // the nested one.
        Some((reproject_flat(arena, body, g, g2, at), arena.var(x)))
    })
}

/// `e` with the projections of `g` renumbered for the flattened element (see
/// [`retarget_flat`]).
fn reproject_flat(arena: &mut Arena, e: ExprId, g: Var, g2: Var, (k, width): (u32, u32)) -> ExprId {
    with_stack(|| match arena[e] {
        Node::Proj(j, inner) if is_component(arena, inner, g, k) => {
            let v = arena.var(g2);
            arena.rebuild(e, Node::Proj(k + j, v))
        }
        Node::Proj(i, inner) if arena[inner] == Node::Var(g) => {
            let v = arena.var(g2);
            let i = if i > k { i + width - 1 } else { i };
            arena.rebuild(e, Node::Proj(i, v))
        }
        node => {
            let new = arena.map_children(node, |a, c| reproject_flat(a, c, g, g2, (k, width)));
            arena.rebuild(e, new)
        }
    })
}

/// `map` (or `map2`) over `operands` of the function with parameters `ps` whose body is
/// `body` under the `let`s `lets` (nodes of the old body, outermost first), with fresh
/// binders: the old function may be shared elsewhere in the term.
fn map_of(
    arena: &mut Arena,
    ps: &[Var],
    lets: &[ExprId],
    body: ExprId,
    operands: &[ExprId],
) -> Option<ExprId> {
    let body = rewrap_lets(arena, lets, body);
    let f = arena.lambda(ps, body);
    let f = arena.copy_fresh(f);
    match *operands {
        [a] => Some(arena.add(Node::Map(f, a))),
        [a, b] => Some(arena.add(Node::Map2(f, a, b))),
        _ => None,
    }
}

/// `body` under the `let`s `lets` (nodes of an old body, outermost first), rebuilt.
fn rewrap_lets(arena: &mut Arena, lets: &[ExprId], mut body: ExprId) -> ExprId {
    for &l in lets.iter().rev() {
        body = match arena[l] {
            Node::Let(v, e1, _) => arena.let_(v, e1, body),
            Node::LetTuple(vs, e1, _) => arena.add(Node::LetTuple(vs, e1, body)),
            _ => body,
        };
    }
    body
}

/// A `map` or `map2` whose function's body is a tuple under `let`s.
struct TupleMap {
    operands: Vec<ExprId>,
    ps: Vec<Var>,
    /// The `let` nodes before the tuple, outermost first.
    lets: Vec<ExprId>,
    /// The tuple's components.
    items: Vec<ExprId>,
}

fn tuple_map(arena: &Arena, rhs: ExprId) -> Option<TupleMap> {
    let (f, operands) = match arena[rhs] {
        Node::Map(f, a) => (f, vec![a]),
        Node::Map2(f, a, b) => (f, vec![a, b]),
        _ => return None,
    };
    let (ps, body) = arena.lambda_parts(f).map(|(p, b)| (p.to_vec(), b))?;
    let mut lets = Vec::new();
    let mut inner = body;
    while let Node::Let(_, _, b) | Node::LetTuple(_, _, b) = arena[inner] {
        lets.push(inner);
        inner = b;
    }
    let Node::Tuple(l) = arena[inner] else {
        return None;
    };
    Some(TupleMap {
        operands,
        ps,
        lets,
        items: arena.exprs(l).to_vec(),
    })
}

/// What [`readers`] tells its caller of one loop over the array: the components of the
/// elements it reads, and whether it is a bare projection (`map (g. g.j) X`, `map (g.
/// fst (g.j)) X`), a loop that computes nothing of its own.
struct Reader {
    read: BTreeSet<u32>,
    bare: bool,
}

/// Whether every occurrence of `x` in `e` is the array of a `map` (or either array of a
/// `map2`) whose element is only projected, and `found` accepts each such loop.
fn readers(arena: &Arena, e: ExprId, x: Var, found: &mut dyn FnMut(Reader) -> bool) -> bool {
    with_stack(|| {
        let is_x = |c: ExprId| arena[c] == Node::Var(x);
        let over_x = match arena[e] {
            Node::Map(f, a) if is_x(a) => Some((f, 0)),
            Node::Map2(_, a, b) if is_x(a) && is_x(b) => return false,
            Node::Map2(f, a, _) if is_x(a) => Some((f, 0)),
            Node::Map2(f, _, b) if is_x(b) => Some((f, 1)),
            _ => None,
        };
        match (arena[e], over_x) {
            (Node::Var(v), _) => v != x,
            (_, Some((f, which))) => {
                let Some((ps, body)) = arena.lambda_parts(f) else {
                    return false;
                };
                let mut read = BTreeSet::new();
                let bare =
                    matches!(arena[e], Node::Map(..)) && projection_of(arena, body, ps[which]);
                projected(arena, body, ps[which], &mut read)
                    && found(Reader { read, bare })
                    && readers(arena, body, x, found)
                    && arena
                        .children(e)
                        .into_iter()
                        .skip(1)
                        .filter(|&c| !is_x(c))
                        .all(|c| readers(arena, c, x, found))
            }
            _ => arena
                .children(e)
                .into_iter()
                .all(|c| readers(arena, c, x, found)),
        }
    })
}

/// Whether `e` is `g` projected, once or more (`g.1`, `fst (g.2)`).
fn projection_of(arena: &Arena, e: ExprId, g: Var) -> bool {
    let mut e = e;
    let mut depth = 0;
    while let Node::Proj(_, inner) = arena[e] {
        e = inner;
        depth += 1;
    }
    depth > 0 && arena[e] == Node::Var(g)
}

/// Whether every occurrence of `g` in `e` is projected (`g.j`), the `j`s going into `read`.
fn projected(arena: &Arena, e: ExprId, g: Var, read: &mut BTreeSet<u32>) -> bool {
    with_stack(|| match arena[e] {
        Node::Proj(j, inner) if arena[inner] == Node::Var(g) => {
            read.insert(j);
            true
        }
        Node::Var(v) => v != g,
        _ => arena
            .children(e)
            .into_iter()
            .all(|c| projected(arena, c, g, read)),
    })
}

/// Where a loop over `x` that reads the components `read` of its elements reads instead:
/// the array, the components kept in its elements (by position), and its element type.
type Retarget<'t> = dyn Fn(&BTreeSet<u32>) -> Option<(Var, Vec<u32>, Type)> + 't;

/// `e` with each loop over `x` reading the array `to` gives it, `g.j` becoming
/// `g2.(position of j in kept)`, or `g2` itself when one component is kept, `g2` a fresh
/// parameter of the new element type.
fn retarget(arena: &mut Arena, e: ExprId, x: Var, to: &Retarget) -> ExprId {
    rewrite_loops(arena, e, x, &mut |arena, ps, which, body, _| {
        let g = ps[which];
        let mut read = BTreeSet::new();
        projected(arena, body, g, &mut read);
        let (target, kept, elem) = to(&read)?;
        // A fresh parameter of the new type (the old function may be shared).
        let name = arena.var_name(g).to_string();
        let g2 = arena.fresh_var(&name, Some(elem));
        ps[which] = g2;
        // A new node for the array: the old one's type, recorded by the type checker, is
        // the wide one.
        Some((reproject(arena, body, g, g2, &kept), arena.var(target)))
    })
}

/// The function of `e` and the position of `x` among its operands, if `e` is a `map` or
/// `map2` over `x` (the first operand when both are `x`).
fn loop_over(arena: &Arena, e: ExprId, x: Var) -> Option<(ExprId, usize)> {
    let (_, f, operands) = crate::siblings::elementwise(arena, e)?;
    let which = operands.iter().position(|&a| arena[a] == Node::Var(x))?;
    Some((f, which))
}

/// A rewrite of one loop over an array (see [`rewrite_loops`]): given its function's
/// parameters (the one at the position given reads the array's elements), body and that
/// operand, the new body and operand, the parameters changed in place; `None` leaves the
/// loop as it is.
type LoopRewrite<'r> =
    dyn FnMut(&mut Arena, &mut Vec<Var>, usize, ExprId, ExprId) -> Option<(ExprId, ExprId)> + 'r;

/// `e` with each loop over `x` rewritten by `rewrite`, then the loops over `x` in its new
/// body and its other operands: the new function with fresh binders (the old one may be
/// shared elsewhere) in a new node.
fn rewrite_loops(arena: &mut Arena, e: ExprId, x: Var, rewrite: &mut LoopRewrite) -> ExprId {
    with_stack(|| {
        let node = arena[e];
        let node = match loop_over(arena, e, x) {
            Some((f, which)) => {
                let Some((mut ps, body)) = arena.lambda_parts(f).map(|(p, b)| (p.to_vec(), b))
                else {
                    return e;
                };
                let kids: Vec<ExprId> = arena.children(e).into_iter().skip(1).collect();
                let Some((body, operand)) = rewrite(arena, &mut ps, which, body, kids[which])
                else {
                    return e;
                };
                let body = rewrite_loops(arena, body, x, rewrite);
                let f2 = arena.lambda(&ps, body);
                let f2 = arena.copy_fresh(f2);
                let kids: Vec<ExprId> = kids
                    .into_iter()
                    .enumerate()
                    .map(|(k, c)| {
                        if k == which {
                            operand
                        } else {
                            rewrite_loops(arena, c, x, rewrite)
                        }
                    })
                    .collect();
                match node {
                    Node::Map(..) => Node::Map(f2, kids[0]),
                    _ => Node::Map2(f2, kids[0], kids[1]),
                }
            }
            None => arena.map_children(node, |a, c| rewrite_loops(a, c, x, rewrite)),
        };
        arena.rebuild(e, node)
    })
}

/// `e` with each `g.j` made `g2.(position of j in kept)`, or `g2` when one is kept.
fn reproject(arena: &mut Arena, e: ExprId, g: Var, g2: Var, kept: &[u32]) -> ExprId {
    with_stack(|| match arena[e] {
        Node::Proj(j, inner) if arena[inner] == Node::Var(g) => {
            let pos = kept.iter().position(|&k| k == j).unwrap_or(0) as u32;
            let v = arena.var(g2);
            if kept.len() == 1 {
                v
            } else {
                arena.rebuild(e, Node::Proj(pos, v))
            }
        }
        node => {
            let new = arena.map_children(node, |a, c| reproject(a, c, g, g2, kept));
            if new == node {
                e
            } else {
                arena.rebuild(e, new)
            }
        }
    })
}

/// Stored maps whose columns different loops read, each loop one column, one of the columns
/// read an array per element (or all scalars, the `let`s before the tuple arithmetic): `let X = map (i. let .. in (c0, c1)) K in .. map (g. f g.0) X
/// .. map (g. h g.1) X ..` becomes one map per column read, `let X0 = map (i. let .. in c0)
/// K in let X1 = map (i. let .. in c1) K in .. map (g. f g) X0 .. map (g. h g) X1 ..`, each
/// then used once, so that it fuses into its reader. Reverse mode's combined pass makes the
/// first form: per element of a `map` that captures an array, a tuple of the element's
/// adjoint and the contribution to the captured array's, an array per element stored and
/// read back by the loop that adds it up. Only where the `let`s before the tuple run no
/// loop (they are computed once per column instead of once): exact, the same operations
/// per column as before.
pub fn split_read_columns(arena: &mut Arena, func: &Func) -> Func {
    let body = walk(arena, func.body, &|arena, _, x, rhs, rest| {
        split(arena, x, rhs, rest)
    });
    Func {
        body,
        ..func.clone()
    }
}

/// `let x = rhs in rest` as one map per column that `rest` reads, if [`split_read_columns`]
/// applies.
fn split(arena: &mut Arena, x: Var, rhs: ExprId, rest: ExprId) -> Option<ExprId> {
    let TupleMap {
        operands,
        ps,
        lets,
        items,
    } = tuple_map(arena, rhs)?;
    // Each loop over `x` reads one column.
    let mut columns = BTreeSet::new();
    // The columns some loop computes with, beyond projecting them.
    let mut computed = BTreeSet::new();
    let one_each = readers(arena, rest, x, &mut |r| {
        let one = r.read.len() == 1;
        if !r.bare {
            computed.extend(r.read.iter().copied());
        }
        columns.extend(r.read);
        one
    });
    if !one_each {
        return None;
    }
    // What is copied into the maps of two columns or more: a few scalar operations at
    // most. A `let` only one column needs (a loop included: a slice read by one column) is
    // computed by that column's map alone, once, as before.
    let needs = lets_needed(arena, &lets, &items, &columns)?;
    let mut budget = COPIED_OPERATIONS;
    for (&l, &users) in lets.iter().zip(&needs) {
        let (Node::Let(_, e1, _) | Node::LetTuple(_, e1, _)) = arena[l] else {
            return None;
        };
        if users >= 2 && !arena.within_operations(e1, &mut budget, &|n| !n.is_array_op()) {
            return None;
        }
    }
    let Some(Type::Array(n, elem)) = arena.var_type(x).cloned() else {
        return None;
    };
    let Type::Tuple(elem_items) = &*elem else {
        return None;
    };
    // An array per element that a loop computes with is worth any few operations copied
    // (the column's map fuses into that loop, and the array is never stored). One only
    // projected out (`map (g. g.j) X`, a component of the result or the operand of a sum
    // of arrays) is written where it goes as the stored map makes it, and copying
    // the shared `let`s would only compute them again (a distance's square root, once per
    // component of the point's adjoint). Scalars are worth copies of arithmetic only (a
    // kernel copied costs more than a real stored and read back).
    let worth = columns.len() >= 2
        && (computed
            .iter()
            .any(|&j| elem_items.get(j as usize).is_some_and(Type::has_arrays))
            || lets.iter().all(|&l| match arena[l] {
                Node::Let(_, e1, _) | Node::LetTuple(_, e1, _) => {
                    arena.within_operations(e1, &mut { usize::MAX }, &arithmetic_on_sizes)
                }
                _ => false,
            }));
    if !worth || columns.iter().any(|&j| j as usize >= items.len()) {
        return None;
    }
    // Operands that are terms rather than names are bound first, so that each column's map
    // reads them rather than computing them again.
    let mut bound: Vec<(Var, ExprId)> = Vec::new();
    let mut operands = operands;
    for (k, op) in operands.iter_mut().enumerate() {
        if matches!(arena[*op], Node::Var(_)) {
            continue;
        }
        let elem = arena.var_type(ps[k]).cloned()?;
        let v = arena.fresh_var("R", Some(Type::array(n.clone(), elem)));
        bound.push((v, *op));
        *op = arena.var(v);
    }
    // One map per column, the `let`s copied into each.
    let name = arena.var_name(x).to_string();
    let mut made: Vec<(u32, Var, ExprId, Type)> = Vec::new();
    for &j in &columns {
        let rhs_j = map_of(arena, &ps, &lets, items[j as usize], &operands)?;
        let ty = elem_items[j as usize].clone();
        let xj = arena.fresh_var(&name, Some(Type::array(n.clone(), ty.clone())));
        made.push((j, xj, rhs_j, ty));
    }
    let mut out = retarget(arena, rest, x, &|read| {
        let j = *read.first()?;
        let (_, xj, _, ty) = made.iter().find(|m| m.0 == j)?;
        Some((*xj, vec![j], ty.clone()))
    });
    for &(_, xj, rhs_j, _) in made.iter().rev() {
        out = arena.let_(xj, rhs_j, out);
    }
    for &(v, op) in bound.iter().rev() {
        out = arena.let_(v, op, out);
    }
    Some(out)
}

/// Arithmetic, or a length read as a real (`real(len(X))`, a constant of the loop): what
/// a column's map may copy of the others' `let`s when its elements are scalars.
fn arithmetic_on_sizes(n: Node) -> bool {
    n.is_arithmetic() || matches!(n, Node::Len(_) | Node::Op1(UnOp::ToReal, _))
}

/// For each of the `lets` before a split map's tuple, how many of the `columns` read
/// (`items[j]`) need it, directly or through a later `let`.
fn lets_needed(
    arena: &Arena,
    lets: &[ExprId],
    items: &[ExprId],
    columns: &BTreeSet<u32>,
) -> Option<Vec<usize>> {
    let mut counts = vec![0; lets.len()];
    for &j in columns {
        let mut needed: Vec<Var> = arena.free_vars(*items.get(j as usize)?);
        for (k, &l) in lets.iter().enumerate().rev() {
            let (bound, e1) = match arena[l] {
                Node::Let(v, e1, _) => (vec![v], e1),
                Node::LetTuple(vs, e1, _) => (arena.vars_of(vs).to_vec(), e1),
                _ => return None,
            };
            if bound.iter().any(|v| needed.contains(v)) {
                counts[k] += 1;
                needed.extend(arena.free_vars(e1));
            }
        }
    }
    Some(counts)
}

/// The operations of the `let`s before a split map's tuple that may be copied into the map
/// of each column: reading an array per element back costs more than a few operations.
const COPIED_OPERATIONS: usize = 16;
