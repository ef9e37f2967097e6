//! Sibling sums of rows: sums of the rows of loops over the same arrays become one sum,
//! whose rows are tuples, so that the arrays are read once.
//!
//! A sum of rows, `reduce (s, t. map2 + s t) zeros_like(z) (map (x. row) X)`, is added in
//! place into one buffer by the code generator, one pass over `X`. A gradient often has
//! several over the same `X` (a column's variance and the mean's adjoint through the
//! deviations, once [`crate::rules::arrays::sum_of_scaled_rows`] has taken the scale out
//! of the second), and each pass reads all of `X` again. Here such sums join:
//! `reduce (p, q. (map2 + p.0 q.0, map2 + p.1 q.1)) (z0, z1) (map (x. (row0, row1)) X)`,
//! whose rows' `let`s are shared where they compute alike
//! ([`crate::siblings::share_lets`]), and each sum reads its component. The code
//! generator adds into each component's buffer in place, in one pass.
//!
//! A sum of arrays runs as a left fold (`unfad_syntax::reduction`: only a sum of reals is
//! blocked), so each component is summed in the order it was: values do not change. Runs
//! last, beside [`crate::folds`] (the simplifier's `reduce_tuple_split` takes such sums
//! apart). Only sums a statement or the result computes outright move (not under a
//! function, a `let` or a branch), and they must read nothing bound at or after the
//! first of them. A sum of a stored map's column (`map (g. g.2) G`) stays: the code
//! generator adds it in where the map makes it, so it costs no pass of its own.

use unfad_syntax::fast_hash::FastSet as HashSet;
use unfad_syntax::{Arena, BinOp, ExprId, Func, Node, Type, Var};

use crate::consumers::column_read;
use crate::folds::{apply, join_groups, type_of};
use crate::rules::arrays::row_sum_rank;
use crate::siblings::{in_every_chain, same_term, share_lets};

/// Rounds of joining per chain at most (each joins the sums over one array).
const MAX_ROUNDS: usize = 4;

/// Join the sibling sums of rows over the same arrays, in every `let` chain.
pub fn join_sibling_row_sums(arena: &mut Arena, func: &Func) -> Func {
    in_every_chain(arena, func, MAX_ROUNDS, &mut |a, b| join_once(a, func, b))
}

/// `(start's array, the map's function, its operands)` if `e` is a sum of rows
/// `reduce (s, t. map2 + s t) zeros_like(z) (map f X..)` whose rows are arrays of reals.
fn row_sum(arena: &Arena, e: ExprId) -> Option<(ExprId, ExprId, Vec<ExprId>)> {
    let Node::Reduce(f, z, m) = arena[e] else {
        return None;
    };
    let Node::ZerosLike(like) = arena[z] else {
        return None;
    };
    if row_sum_rank(arena, f) != Some(1)
        || !matches!(type_of(arena, like), Some(Type::Array(_, t)) if *t == Type::Real)
    {
        return None;
    }
    // A column of a stored map costs no pass of its own: the code generator adds it into
    // the sum where the map makes it.
    if column_read(arena, m) {
        return None;
    }
    match arena[m] {
        Node::Map(g, a) => Some((like, g, vec![a])),
        Node::Map2(g, a, b) => Some((like, g, vec![a, b])),
        _ => None,
    }
}

/// Join the sums over one array (or pair of arrays) in the chain `body`; the new chain,
/// or `None`.
fn join_once(arena: &mut Arena, func: &Func, body: ExprId) -> Option<ExprId> {
    let over = |arena: &Arena, e: ExprId| row_sum(arena, e).map_or_else(Vec::new, |(_, _, o)| o);
    join_groups(
        arena,
        body,
        &|arena, e| row_sum(arena, e).is_some(),
        &|arena, a, b| {
            let (x, y) = (over(arena, a), over(arena, b));
            x.len() == y.len() && x.iter().zip(&y).all(|(&p, &q)| same_term(arena, p, q))
        },
        &mut |arena, members| {
            let operands = over(arena, members[0]);
            joint_sum(arena, func, &operands, members)
        },
        "S",
    )
}

/// `reduce (p, q. (map2 + p.0 q.0, ...)) (zeros_like(z0), ...) (map (x. (row0, ...)) X)`
/// (`map2` over two arrays alike) for the sums `members` over `over`, and its type.
fn joint_sum(
    arena: &mut Arena,
    func: &Func,
    over: &[ExprId],
    members: &[ExprId],
) -> Option<(ExprId, Type)> {
    let params: Vec<Var> = over
        .iter()
        .enumerate()
        .map(|(i, &a)| match type_of(arena, a) {
            Some(Type::Array(_, t)) => Some(arena.fresh_var(["x", "y"][i], Some((*t).clone()))),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let args: Vec<ExprId> = params.iter().map(|&p| arena.var(p)).collect();
    let mut rows = Vec::with_capacity(members.len());
    let mut starts = Vec::with_capacity(members.len());
    let mut types = Vec::with_capacity(members.len());
    for &m in members {
        let (like, g, _) = row_sum(arena, m)?;
        let Node::Reduce(_, z, _) = arena[m] else {
            return None;
        };
        types.push(type_of(arena, like)?);
        starts.push(z);
        rows.push(apply(arena, g, &args)?);
    }
    let joint_ty = Type::tuple(types.clone());
    // Each row's `let`s shared where they compute alike, then the tuple of rows.
    let row = share_lets(arena, func, &rows);
    let row_fn = arena.lambda(&params, row);
    let rows_of = match args.len() {
        1 => arena.add(Node::Map(row_fn, over[0])),
        _ => arena.add(Node::Map2(row_fn, over[0], over[1])),
    };
    // The componentwise sum of two tuples of rows, each component a fresh `map2 +`.
    let p = arena.fresh_var("p", Some(joint_ty.clone()));
    let q = arena.fresh_var("q", Some(joint_ty.clone()));
    let (pe, qe) = (arena.var(p), arena.var(q));
    let mut sums = Vec::with_capacity(members.len());
    for (i, t) in types.iter().enumerate() {
        let Type::Array(_, elem) = t else {
            return None;
        };
        let u = arena.fresh_var("u", Some((**elem).clone()));
        let w = arena.fresh_var("w", Some((**elem).clone()));
        let (ue, we) = (arena.var(u), arena.var(w));
        let plus_body = arena.add(Node::Op2(BinOp::Add, ue, we));
        let plus = arena.lambda(&[u, w], plus_body);
        let (pi, qi) = (arena.proj(i as u32, pe), arena.proj(i as u32, qe));
        sums.push(arena.add(Node::Map2(plus, pi, qi)));
    }
    let sum_body = arena.tuple(&sums);
    let sum = arena.lambda(&[p, q], sum_body);
    let start = arena.tuple(&starts);
    // What the members read from outside: the joint sum may read nothing else.
    let mut outside: HashSet<Var> = HashSet::default();
    for &m in members {
        outside.extend(arena.free_vars(m));
    }
    let joint = arena.add(Node::Reduce(sum, start, rows_of));
    let closed = arena.free_vars(joint).iter().all(|v| outside.contains(v));
    closed.then_some((joint, joint_ty))
}
