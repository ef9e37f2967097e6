//! Sibling folds: folds of accumulations over the same array become one fold, whose
//! elements compute what they share once.
//!
//! Reverse mode gives every array a `foldl` (or a `scanl`) captures an adjoint of its own:
//! the optimizer turns each into an accumulation over the steps,
//! `foldl (acc, q. let ... in scatter_add(acc, P, V)) zeros_like(W) Q`, one per captured
//! array (an LSTM's weights, its biases, its output layer). Each recomputes the step's
//! primal and reverse pass, so the gradient runs the step once per captured array. Here
//! such folds over one array `Q` join:
//! `foldl (a, q. let ... in (adds0 over a.0, adds1 over a.1)) (z0, z1) Q`, whose `let`s the
//! two bodies share are made once ([`crate::siblings`]'s sharing of the joined bodies), and
//! each fold reads its component. The code generator adds into each component's array in
//! place ([`unfad_syntax::Arena::accumulations`]), as it does for one accumulation.
//!
//! A `scatter_add(Z, map2 (q, w. p) Q W, map2 (q, w. v) Q W)` (reads of an array at
//! positions computed per step, their adjoint) is the fold
//! `foldl (acc, s. scatter_add(acc, [p[s]], [v[s]])) Z (zip Q W)` and joins such folds too,
//! as does a fold or scatter started from another one over the same array (its additions
//! then follow the other's at each step). Those change the order in which a component's
//! additions are made where the component receives both: the same terms, summed in
//! another order.
//!
//! Runs last, after hoisting: the simplifier's `foldl_tuple_split` takes folds of tuples
//! apart, which is right before this pass (apart, each fold is an accumulation) and would
//! undo it after. Only folds a statement or the result computes outright move (not under
//! a function, a `let` or a branch), so the joint fold computes nothing the program would
//! not; the folds must read nothing bound at or after the first of them.

use unfad_syntax::fast_hash::{FastMap as HashMap, FastSet as HashSet};
use unfad_syntax::{with_stack, Arena, ExprId, Func, Node, Type, Var};

use crate::siblings::{
    bound_by, in_every_chain, rechain, replace, same_term, share_lets, unchain, Stmt,
};

/// Rounds of joining per chain at most (each joins the folds over one array).
const MAX_ROUNDS: usize = 4;

/// Join the sibling folds of accumulations over the same arrays, in every `let` chain.
pub fn join_sibling_folds(arena: &mut Arena, func: &Func) -> Func {
    in_every_chain(arena, func, MAX_ROUNDS, &mut |a, b| join_once(a, func, b))
}

/// The members (as `member` says) that `e` computes outright (not under a function, a
/// `let` or a branch), pushed to `out` once each. Shared with [`crate::row_sums`].
pub(crate) fn outright(
    arena: &Arena,
    e: ExprId,
    member: &dyn Fn(&Arena, ExprId) -> bool,
    out: &mut Vec<ExprId>,
) {
    with_stack(|| match arena[e] {
        _ if member(arena, e) => {
            if !out.contains(&e) {
                out.push(e);
            }
        }
        Node::Lambda(..) | Node::Let(..) | Node::LetTuple(..) => {}
        Node::If(c, _, _) => outright(arena, c, member, out),
        _ => arena.for_each_child(e, |c| outright(arena, c, member, out)),
    })
}

/// Whether `e` can join a group: a fold of an accumulation, or a scatter of per-step maps.
fn is_member(arena: &Arena, e: ExprId) -> bool {
    match arena[e] {
        Node::Foldl(f, _, _) => arena.accumulation(f).is_some(),
        Node::ScatterAdd(..) => scatter_of_maps(arena, e).is_some(),
        _ => false,
    }
}

/// Join the folds over one array in the chain `body`; the new chain, or `None`.
fn join_once(arena: &mut Arena, func: &Func, body: ExprId) -> Option<ExprId> {
    join_groups(
        arena,
        body,
        &is_member,
        &|arena, a, b| same_over(arena, &over_of(arena, a), &over_of(arena, b)),
        &mut |arena, members| joint_fold(arena, func, &over_of(arena, members[0]), members),
        "F",
    )
}

/// Each member (as `member` says) that the chain `stmts`, `tail` computes outright, with
/// the first statement that computes it (`stmts.len()`: the result), in order. Shared
/// with [`crate::one_pass`].
pub(crate) fn members_by_statement(
    arena: &Arena,
    stmts: &[Stmt],
    tail: ExprId,
    member: &dyn Fn(&Arena, ExprId) -> bool,
) -> Vec<(usize, ExprId)> {
    let mut found: Vec<(usize, ExprId)> = Vec::new();
    for at in 0..=stmts.len() {
        let e = if at < stmts.len() {
            stmts[at].rhs()
        } else {
            tail
        };
        let mut here = Vec::new();
        outright(arena, e, member, &mut here);
        for m in here {
            if !found.iter().any(|&(_, g)| g == m) {
                found.push((at, m));
            }
        }
    }
    found
}

/// Builds the joint term of a group of members, and its type (see [`join_groups`]).
pub(crate) type JointOf<'j> = dyn FnMut(&mut Arena, &[ExprId]) -> Option<(ExprId, Type)> + 'j;

/// Join one group of members of the chain `body` (found by `member`, outright in its
/// statements and result; grouped with the first by `same`) into the term `joint` builds
/// (and its type), bound by a new first statement named `name` whose components the
/// members then read; the new chain, or `None`. The joint term goes before the first
/// statement that computes a member, and each member must read nothing bound there or
/// later. Shared with [`crate::row_sums`].
pub(crate) fn join_groups(
    arena: &mut Arena,
    body: ExprId,
    member: &dyn Fn(&Arena, ExprId) -> bool,
    same: &dyn Fn(&Arena, ExprId, ExprId) -> bool,
    joint: &mut JointOf<'_>,
    name: &str,
) -> Option<ExprId> {
    let (mut stmts, tail) = unchain(arena, body);
    let found = members_by_statement(arena, &stmts, tail, member);
    for k in 0..found.len() {
        let mut group: Vec<(usize, ExprId)> = vec![found[k]];
        for &(at, g) in found.iter().skip(k + 1) {
            if same(arena, found[k].1, g) {
                group.push((at, g));
            }
        }
        if group.len() < 2 {
            continue;
        }
        let first = group.iter().map(|&(at, _)| at).min().unwrap_or(0);
        let mut later: HashSet<Var> = HashSet::default();
        bound_by(arena, &stmts[first..], &mut later);
        group.retain(|&(_, g)| !arena.free_vars(g).iter().any(|v| later.contains(v)));
        if group.len() < 2 {
            continue;
        }
        let members: Vec<ExprId> = group.iter().map(|&(_, g)| g).collect();
        let Some((term, ty)) = joint(arena, &members) else {
            continue;
        };
        let v = arena.fresh_var(name, Some(ty));
        let ve = arena.var(v);
        let reads: Vec<ExprId> = (0..members.len() as u32)
            .map(|i| arena.proj(i, ve))
            .collect();
        for s in stmts.iter_mut().skip(first) {
            *s = match *s {
                Stmt::One(x, a) => Stmt::One(x, replace(arena, a, &members, &reads)),
                Stmt::Many(xs, a) => Stmt::Many(xs, replace(arena, a, &members, &reads)),
            };
        }
        let tail = replace(arena, tail, &members, &reads);
        stmts.insert(first, Stmt::One(v, term));
        return Some(rechain(arena, &stmts, tail));
    }
    None
}

/// What a member of a group runs over: a fold's array, or the one or two operands of
/// the maps of a scatter's positions and values (the fold runs over their zip).
enum Over {
    Array(ExprId),
    Zip(Vec<ExprId>),
}

/// The array a fold runs over, or the operands of a scatter's maps.
fn over_of(arena: &Arena, e: ExprId) -> Over {
    match arena[e] {
        Node::Foldl(_, _, over) => match zipped(arena, over) {
            Some(ops) => Over::Zip(ops),
            None => Over::Array(over),
        },
        _ => match scatter_of_maps(arena, e) {
            Some((_, _, _, ops)) if ops.len() == 1 => Over::Array(ops[0]),
            Some((_, _, _, ops)) => Over::Zip(ops),
            None => Over::Array(e),
        },
    }
}

fn same_over(arena: &Arena, a: &Over, b: &Over) -> bool {
    match (a, b) {
        (Over::Array(x), Over::Array(y)) => same_term(arena, *x, *y),
        (Over::Zip(xs), Over::Zip(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(&x, &y)| same_term(arena, x, y))
        }
        _ => false,
    }
}

/// `[A, B]` if `e` is `map2 (a, b. (a, b)) A B`.
fn zipped(arena: &Arena, e: ExprId) -> Option<Vec<ExprId>> {
    let Node::Map2(f, x, y) = arena[e] else {
        return None;
    };
    crate::siblings::is_zip_function(arena, f).then(|| vec![x, y])
}

/// `(base, positions' function, values' function, operands)` if `e` is
/// `scatter_add(base, map f P.., map g P..)` over the same operands, one position per
/// element (the adjoint of reads `A[p]` made once per step).
fn scatter_of_maps(arena: &Arena, e: ExprId) -> Option<(ExprId, ExprId, ExprId, Vec<ExprId>)> {
    let Node::ScatterAdd(base, positions, values) = arena[e] else {
        return None;
    };
    let (fp, ops) = match arena[positions] {
        Node::Map(f, a) => (f, vec![a]),
        Node::Map2(f, a, b) => (f, vec![a, b]),
        _ => return None,
    };
    let (fv, ops_v) = match arena[values] {
        Node::Map(f, a) => (f, vec![a]),
        Node::Map2(f, a, b) => (f, vec![a, b]),
        _ => return None,
    };
    let same = ops.len() == ops_v.len()
        && ops
            .iter()
            .zip(&ops_v)
            .all(|(&a, &b)| same_term(arena, a, b));
    // A position is an int (one element per step), not an array of positions.
    let one_each =
        matches!(arena.lambda_parts(fp), Some((_, b)) if !matches!(arena[b], Node::Array(_)));
    (same && one_each).then_some((base, fp, fv, ops))
}

/// The fold `foldl f z over` that `e` (a member of a group) is, as its chain of steps
/// from the innermost: each step's function and the start of the innermost, when the
/// start of a member is itself a fold or scatter over the same array.
fn chain_of(arena: &Arena, e: ExprId, over: &Over) -> Option<(Vec<Step>, ExprId)> {
    let (step, start) = match arena[e] {
        Node::Foldl(f, z, _) if arena.accumulation(f).is_some() => (Step::Fold(f), z),
        _ => {
            let (base, fp, fv, _) = scatter_of_maps(arena, e)?;
            (Step::Scatter(fp, fv), base)
        }
    };
    let inner = is_member(arena, start) && same_over(arena, &over_of(arena, start), over);
    if inner {
        let (mut steps, z) = chain_of(arena, start, over)?;
        steps.push(step);
        return Some((steps, z));
    }
    Some((vec![step], start))
}

/// One step of a member: a fold's function, or a scatter's positions and values.
#[derive(Clone, Copy)]
enum Step {
    Fold(ExprId),
    Scatter(ExprId, ExprId),
}

/// `f(args)` for the function `f`: its body with its parameters replaced.
pub(crate) fn apply(arena: &mut Arena, f: ExprId, args: &[ExprId]) -> Option<ExprId> {
    let (ps, body) = arena.lambda_parts(f).map(|(p, b)| (p.to_vec(), b))?;
    if ps.len() != args.len() {
        return None;
    }
    let subs: HashMap<Var, ExprId> = ps.into_iter().zip(args.iter().copied()).collect();
    Some(arena.subst(body, &subs))
}

/// The type of the accumulator `e` (a member, or a start of one), read off variables:
/// a fold's accumulator parameter, a variable, zeros like one, a component or an element
/// of one.
pub(crate) fn type_of(arena: &Arena, e: ExprId) -> Option<Type> {
    match arena[e] {
        Node::Var(v) => arena.var_type(v).cloned(),
        Node::ZerosLike(x) => type_of(arena, x),
        Node::Index(a, _) => match type_of(arena, a)? {
            Type::Array(_, t) => Some((*t).clone()),
            _ => None,
        },
        Node::ScatterAdd(base, _, _) => type_of(arena, base),
        Node::Proj(i, x) => match type_of(arena, x)? {
            Type::Tuple(items) => items.get(i as usize).cloned(),
            _ => None,
        },
        Node::Foldl(f, _, _) => {
            let (ps, _) = arena.lambda_parts(f)?;
            arena.var_type(*ps.first()?).cloned()
        }
        _ => None,
    }
}

/// The element type of the array `e`, read off variables: a variable's, an `iota`'s, or a
/// `map`/`map2` whose function returns a parameter or a tuple of them (a zip).
fn elem_type(arena: &Arena, e: ExprId) -> Option<Type> {
    match arena[e] {
        Node::Var(v) => match arena.var_type(v)? {
            Type::Array(_, t) => Some((**t).clone()),
            _ => None,
        },
        Node::Iota(_) => Some(Type::Int),
        Node::Map(f, _) | Node::Map2(f, _, _) => {
            let (_, body) = arena.lambda_parts(f)?;
            param_tuple_type(arena, body)
        }
        _ => None,
    }
}

/// The type of `e` when it is a typed variable or a tuple of such terms.
fn param_tuple_type(arena: &Arena, e: ExprId) -> Option<Type> {
    match arena[e] {
        Node::Var(v) => arena.var_type(v).cloned(),
        Node::Tuple(items) => {
            let items: Vec<ExprId> = arena.exprs(items).to_vec();
            let types = items
                .iter()
                .map(|&i| param_tuple_type(arena, i))
                .collect::<Option<Vec<_>>>()?;
            Some(Type::tuple(types))
        }
        _ => None,
    }
}

/// `foldl (a, x. let shared in (adds_0 over a.0, ...)) (z_0, ...) over` for the members
/// `group` running over `over`, or `None` if their bodies do not join into
/// accumulations.
fn joint_fold(
    arena: &mut Arena,
    func: &Func,
    over: &Over,
    group: &[ExprId],
) -> Option<(ExprId, Type)> {
    let (array, operands) = match over {
        Over::Array(a) => (*a, 1),
        Over::Zip(ops) => {
            let (tx, ty) = (elem_type(arena, ops[0])?, elem_type(arena, ops[1])?);
            let x = arena.fresh_var("a", Some(tx));
            let y = arena.fresh_var("b", Some(ty));
            let (xe, ye) = (arena.var(x), arena.var(y));
            let pair = arena.tuple(&[xe, ye]);
            let f = arena.lambda(&[x, y], pair);
            (arena.add(Node::Map2(f, ops[0], ops[1])), 2)
        }
    };
    // Types are read off the variables (inferring a term out of its context would record
    // sizes of its own for its nodes): the array's, or a member fold's element's, where
    // the array's elements hold a constant (reverse mode's `map (i. (1, i))`, a position
    // beside its adjoint: a real or an int, as the fold reads it).
    let elem_ty = elem_type(arena, array).or_else(|| {
        group.iter().find_map(|&g| match arena[g] {
            Node::Foldl(f, _, _) => match arena.lambda_parts(f)? {
                (&[_, e], _) => arena.var_type(e).cloned(),
                _ => None,
            },
            _ => None,
        })
    })?;
    let x = arena.fresh_var("x", Some(elem_ty));
    let xe = arena.var(x);
    // What a scatter's maps read per step: the element, or its two components.
    let args: Vec<ExprId> = if operands == 1 {
        vec![xe]
    } else {
        vec![arena.proj(0, xe), arena.proj(1, xe)]
    };
    let mut chains = Vec::with_capacity(group.len());
    let mut acc_types = Vec::with_capacity(group.len());
    let mut starts = Vec::with_capacity(group.len());
    for &g in group {
        let (steps, z) = chain_of(arena, g, over)?;
        acc_types.push(type_of(arena, g)?);
        starts.push(z);
        chains.push(steps);
    }
    let joint_ty = Type::tuple(acc_types);
    let a = arena.fresh_var("a", Some(joint_ty.clone()));
    let ae = arena.var(a);
    let mut items = Vec::with_capacity(chains.len());
    for (i, steps) in chains.iter().enumerate() {
        // Each step's `let`s, then its additions onto the previous step's.
        let mut lets = Vec::new();
        let mut spine = arena.proj(i as u32, ae);
        for &step in steps {
            spine = match step {
                Step::Fold(f) => {
                    let body = apply(arena, f, &[spine, xe])?;
                    let (l, t) = unchain(arena, body);
                    lets.extend(l);
                    t
                }
                Step::Scatter(fp, fv) => {
                    let p = apply(arena, fp, &args)?;
                    let v = apply(arena, fv, &args)?;
                    let (ps, vs) = (arena.array(&[p]), arena.array(&[v]));
                    arena.add(Node::ScatterAdd(spine, ps, vs))
                }
            };
        }
        items.push(rechain(arena, &lets, spine));
    }
    // What the members read from outside: the joint fold may read nothing else.
    let mut outside: HashSet<Var> = HashSet::default();
    for &g in group {
        outside.extend(arena.free_vars(g));
    }
    outside.extend(arena.free_vars(array));
    let start = arena.tuple(&starts);
    // The bodies' `let`s shared where they compute alike: the joint function must read
    // nothing the members do not.
    let body = share_lets(arena, func, &items);
    let lam = arena.lambda(&[a, x], body);
    let closed = arena.free_vars(lam).iter().all(|v| outside.contains(v));
    if closed && arena.accumulations(lam).is_some() {
        return Some((arena.add(Node::Foldl(lam, start, array)), joint_ty));
    }
    None
}
