//! One pass over an array for the loops that read it: a fold that accumulates whole rows
//! beside maps and reductions over the same array becomes one map whose columns they read.
//!
//! Reverse mode gives parameters read by position in a loop over a matrix's rows (a
//! per-column mean and scale, `mu[j]` and `sig[j]` over `iota len(x)`) a fold over the rows
//! whose step adds a whole row into each adjoint, `foldl (a, x. lets in (scatter_add(a.0,
//! iota m, V0), scatter_add(a.1, iota m, V1))) (zeros_like(mu), zeros_like(sig)) X`, while
//! the value and `X`'s adjoint are a `reduce` and a `map` over `X` of their own: three
//! passes over `X` where the hand-written gradient makes one. Here they become
//! `let G = map (x. lets in (V0, V1, body of the map, body of the reduction)) X`, the fold
//! `(reduce +̂ zeros_like(mu) (map (g. g.0) G), reduce +̂ zeros_like(sig) (map (g. g.1) G))`
//! and the others `map (g. g.2) G`, `reduce op z (map (g. g.3) G)`: the code generator
//! writes the map's column where it goes and adds or folds the others in the loop that
//! makes `G`, which is never stored.
//!
//! Only scatters that fill their whole array (positions `iota n`, and values, as long as
//! the array from zeros, the array's size by the types) are rows: `scatter_add(0_A, iota
//! len(A), V)` is `V`. The fold then sums the same rows as `reduce` does, in the order
//! of the rows the code generator adds them in; its additions may be rounded differently
//! from the fold's when the interpreter sums them blocked (the paper's smooth semantics,
//! as for the optimizer's other sums). Runs last, after [`crate::folds`], whose joint folds
//! are the usual fold here.

use unfad_syntax::fast_hash::FastSet as HashSet;
use unfad_syntax::typeck::{infer, NoSource};
use unfad_syntax::{Addition, Arena, BinOp, ExprId, Func, Node, Type, Var};

use crate::folds::{apply, members_by_statement, outright};
use crate::siblings::{
    bound_by, in_every_chain, rechain, replace, same_term, share_lets, unchain, Stmt,
};

/// Rounds of joining per chain at most (each joins the loops over one array).
const MAX_ROUNDS: usize = 2;

/// Join, in every `let` chain, an accumulation of whole rows over an array with the maps
/// and reductions over the same array (see the module's documentation).
pub fn join_row_accumulations(arena: &mut Arena, func: &Func) -> Func {
    let f = in_every_chain(arena, func, MAX_ROUNDS, &mut |a, b| join_once(a, func, b));
    // A body that is its result alone (a tuple of loops, no `let`) is a chain too.
    if matches!(arena[f.body], Node::Let(..) | Node::LetTuple(..)) {
        return f;
    }
    match join_once(arena, func, f.body) {
        Some(body) => Func { body, ..f },
        None => f,
    }
}

/// What a member of a group is, and the function of its element.
enum Member {
    /// `foldl f Z X` adding the rows `(lets, values)` into the components of `Z` (or into
    /// `Z` itself, `tuple` false), each component's start `zeros`.
    Rows {
        elem: Var,
        lets: Vec<(Var, ExprId)>,
        values: Vec<ExprId>,
        zeros: Vec<ExprId>,
        tuple: bool,
    },
    /// `map g X`.
    Map { g: ExprId },
    /// `reduce op z (map g X)`.
    Reduce { op: ExprId, z: ExprId, g: ExprId },
}

/// The array `e` loops over, and what it is, if it is a member.
fn member(arena: &mut Arena, e: ExprId) -> Option<(ExprId, Member)> {
    match arena[e] {
        Node::Map(g, x) => Some((x, Member::Map { g })),
        Node::Reduce(op, z, m) => match arena[m] {
            Node::Map(g, x) => Some((x, Member::Reduce { op, z, g })),
            _ => None,
        },
        Node::Foldl(f, z, x) => rows_of(arena, f, z).map(|m| (x, m)),
        _ => None,
    }
}

/// The fold `foldl f z _` as [`Member::Rows`], if every component it accumulates into
/// starts from zeros and gets exactly one scatter that fills it.
fn rows_of(arena: &mut Arena, f: ExprId, z: ExprId) -> Option<Member> {
    let accs = match arena[z] {
        Node::Tuple(_) => arena.accumulations(f),
        _ => None,
    };
    let (elem, lets, parts, tuple) = if let Some(acc) = accs {
        (acc.elem, acc.lets, acc.parts, true)
    } else {
        let acc = arena.accumulation(f)?;
        (acc.elem, acc.lets, vec![acc.adds], false)
    };
    let zeros: Vec<ExprId> = match (arena[z], tuple) {
        (Node::Tuple(l), true) => arena.exprs(l).to_vec(),
        (_, false) => vec![z],
        _ => return None,
    };
    if zeros.len() != parts.len() {
        return None;
    }
    let mut values = Vec::with_capacity(parts.len());
    for (adds, &start) in parts.iter().zip(&zeros) {
        let [Addition::Scatter {
            positions,
            values: v,
        }] = adds[..]
        else {
            return None;
        };
        if !matches!(arena[start], Node::ZerosLike(_)) || !matches!(arena[positions], Node::Iota(_))
        {
            return None;
        }
        // The positions, the values and the array all of one size: every element of the
        // array gets exactly its value.
        let size = |arena: &mut Arena, e: ExprId| match infer(arena, &NoSource, e) {
            Ok(Type::Array(n, t)) => Some((n, t)),
            _ => None,
        };
        let (n, t) = size(arena, start)?;
        let (np, _) = size(arena, positions)?;
        let (nv, tv) = size(arena, v)?;
        if n != np || n != nv || t != tv || *t != Type::Real {
            return None;
        }
        values.push(v);
    }
    Some(Member::Rows {
        elem,
        lets,
        values,
        zeros,
        tuple,
    })
}

/// Join the loops over one array in the chain `body`: a group with an accumulation of
/// rows and another loop; the new chain, or `None`. The joint map goes before the first
/// statement that computes a member, each member must read nothing bound there or later,
/// and each member is replaced by what reads its columns; a statement that is an
/// accumulation of rows into a tuple becomes one statement per sum (the code generator
/// folds a statement's sum of a column in the loop that makes the column).
fn join_once(arena: &mut Arena, func: &Func, body: ExprId) -> Option<ExprId> {
    let (stmts, tail) = unchain(arena, body);
    // Maps join only from the chain's result: a map a statement binds may be read more
    // than once, and its column would then be stored, and with it all of `G`.
    let mut in_result = Vec::new();
    outright(
        arena,
        tail,
        &|a, e| matches!(a[e], Node::Map(..)),
        &mut in_result,
    );
    let joins = |arena: &Arena, e: ExprId| {
        is_member(arena, e) && (!matches!(arena[e], Node::Map(..)) || in_result.contains(&e))
    };
    // Each member with the first statement that computes it (`stmts.len()`: the result).
    let found = members_by_statement(arena, &stmts, tail, &joins);
    let over = |arena: &Arena, e: ExprId| match arena[e] {
        Node::Map(_, x) | Node::Foldl(_, _, x) => Some(x),
        Node::Reduce(_, _, m) => match arena[m] {
            Node::Map(_, x) => Some(x),
            _ => None,
        },
        _ => None,
    };
    for k in 0..found.len() {
        if !matches!(arena[found[k].1], Node::Foldl(..)) {
            continue;
        }
        let x = over(arena, found[k].1)?;
        let mut group: Vec<(usize, ExprId)> = found
            .iter()
            .copied()
            .filter(|&(_, g)| over(arena, g).is_some_and(|y| same_term(arena, x, y)))
            .collect();
        let first = group.iter().map(|&(at, _)| at).min().unwrap_or(0);
        let mut later: HashSet<Var> = HashSet::default();
        bound_by(arena, &stmts[first..], &mut later);
        group.retain(|&(_, g)| !arena.free_vars(g).iter().any(|v| later.contains(v)));
        let members: Vec<ExprId> = group.iter().map(|&(_, g)| g).collect();
        let Some((g, joint_map, reads)) = joint(arena, func, &members) else {
            continue;
        };
        let mut out = Vec::with_capacity(stmts.len() + 1);
        out.extend_from_slice(&stmts[..first]);
        out.push(Stmt::One(g, joint_map));
        // A statement `let F = <accumulation into a tuple>` whose later uses are all
        // projections `F.k`: each projection is its sum, read where it is used (the code
        // generator folds a sum of a column that the chain's result reads in the loop
        // that makes the column; bound apart, the column would be stored).
        let mut projected: Vec<(ExprId, ExprId)> = Vec::new();
        let mut dropped = Vec::new();
        for (at, &st) in stmts.iter().enumerate().skip(first) {
            let Stmt::One(v, rhs) = st else { continue };
            let Some(i) = members.iter().position(|&m| m == rhs) else {
                continue;
            };
            let Read::Sums(sums) = &reads[i] else {
                continue;
            };
            let mut uses = Vec::new();
            let later: Vec<ExprId> = stmts[at + 1..]
                .iter()
                .map(|s| s.rhs())
                .chain([tail])
                .collect();
            for &e in &later {
                projections_of(arena, e, v, &mut uses);
            }
            let all_projected = later.iter().all(|&e| {
                let to: Vec<ExprId> = uses.iter().map(|_| arena.constant(0.0)).collect();
                let from: Vec<ExprId> = uses.iter().map(|&(p, _)| p).collect();
                let without = replace(arena, e, &from, &to);
                !arena.free_vars(without).contains(&v)
            });
            if all_projected {
                projected.extend(uses.iter().map(|&(p, k)| (p, sums[k])));
                dropped.push(at);
            }
        }
        let mut from: Vec<ExprId> = members.clone();
        let mut to: Vec<ExprId> = reads.iter().map(|r| r.term(arena)).collect();
        from.extend(projected.iter().map(|&(p, _)| p));
        to.extend(projected.iter().map(|&(_, s)| s));
        for (at, &st) in stmts.iter().enumerate().skip(first) {
            if dropped.contains(&at) {
                continue;
            }
            out.push(match st {
                Stmt::One(x, a) => Stmt::One(x, replace(arena, a, &from, &to)),
                Stmt::Many(xs, a) => Stmt::Many(xs, replace(arena, a, &from, &to)),
            });
        }
        let tail = replace(arena, tail, &from, &to);
        return Some(rechain(arena, &out, tail));
    }
    None
}

/// The projections `v.k` in `e`, with their `k`, into `out` (once each).
fn projections_of(arena: &Arena, e: ExprId, v: Var, out: &mut Vec<(ExprId, usize)>) {
    unfad_syntax::with_stack(|| {
        if let Node::Proj(k, x) = arena[e] {
            if arena[x] == Node::Var(v) {
                if !out.iter().any(|&(p, _)| p == e) {
                    out.push((e, k as usize));
                }
                return;
            }
        }
        arena.for_each_child(e, |c| projections_of(arena, c, v, out));
    })
}

/// What a member becomes: its column read (a map's, a reduction's), or the sums of the
/// columns of an accumulation of rows (one, or a tuple of them).
enum Read {
    One(ExprId),
    Sums(Vec<ExprId>),
    Sum(ExprId),
}

impl Read {
    /// The term in place of the member.
    fn term(&self, arena: &mut Arena) -> ExprId {
        match self {
            Read::One(e) | Read::Sum(e) => *e,
            Read::Sums(sums) => arena.tuple(sums),
        }
    }
}

/// Whether `e` may join a group: a map, a reduction of a map or an accumulation of rows,
/// over a variable (checked without building anything).
fn is_member(arena: &Arena, e: ExprId) -> bool {
    let over_var = |x: ExprId| matches!(arena[x], Node::Var(_));
    match arena[e] {
        Node::Map(_, x) => over_var(x),
        Node::Reduce(_, _, m) => matches!(arena[m], Node::Map(_, x) if over_var(x)),
        Node::Foldl(f, _, x) => {
            over_var(x) && (arena.accumulations(f).is_some() || arena.accumulation(f).is_some())
        }
        _ => false,
    }
}

/// The variable and the term of the joint map of the group `members`, and what reads
/// each member's columns: `None` unless the group has an accumulation of rows and another
/// loop.
fn joint(arena: &mut Arena, func: &Func, members: &[ExprId]) -> Option<(Var, ExprId, Vec<Read>)> {
    let mut parsed = Vec::with_capacity(members.len());
    for &m in members {
        parsed.push(member(arena, m)?);
    }
    let rows = parsed
        .iter()
        .filter(|(_, m)| matches!(m, Member::Rows { .. }))
        .count();
    if rows == 0 || rows == parsed.len() {
        return None;
    }
    let over = parsed[0].0;
    let Ok(Type::Array(_, elem_ty)) = infer(arena, &NoSource, over) else {
        return None;
    };
    let x = arena.fresh_var("x", Some((*elem_ty).clone()));
    let xe = arena.var(x);
    // Each member's columns of the joint element, in order.
    let mut items = Vec::new();
    for (_, m) in &parsed {
        match m {
            Member::Rows {
                elem, lets, values, ..
            } => {
                for &v in values {
                    // `lets in V`, the fold's element read as `x`.
                    let mut t = v;
                    for &(w, e1) in lets.iter().rev() {
                        t = arena.add(Node::Let(w, e1, t));
                    }
                    let f = arena.lambda(&[*elem], t);
                    let t = apply(arena, f, &[xe])?;
                    items.push(arena.copy_fresh(t));
                }
            }
            Member::Map { g } | Member::Reduce { g, .. } => items.push(apply(arena, *g, &[xe])?),
        }
    }
    let row = share_lets(arena, func, &items);
    let row_fn = arena.lambda(&[x], row);
    let joint_map = arena.add(Node::Map(row_fn, over));
    let Ok(map_ty) = infer(arena, &NoSource, joint_map) else {
        return None;
    };
    let Type::Array(_, row_ty) = &map_ty else {
        return None;
    };
    let row_ty = (**row_ty).clone();
    let g = arena.fresh_var("G", Some(map_ty.clone()));
    let ge = arena.var(g);
    // `map (r. r.k) G`.
    let column = |arena: &mut Arena, k: usize| {
        let r = arena.fresh_var("r", Some(row_ty.clone()));
        let re = arena.var(r);
        let body = arena.proj(k as u32, re);
        let f = arena.lambda(&[r], body);
        arena.add(Node::Map(f, ge))
    };
    let mut reads = Vec::with_capacity(parsed.len());
    let mut at = 0;
    for (_, m) in &parsed {
        match m {
            Member::Rows { zeros, tuple, .. } => {
                let mut sums = Vec::with_capacity(zeros.len());
                for &z in zeros {
                    let col = column(arena, at);
                    at += 1;
                    let plus = row_plus(arena, z)?;
                    sums.push(arena.add(Node::Reduce(plus, z, col)));
                }
                reads.push(if *tuple {
                    Read::Sums(sums)
                } else {
                    Read::Sum(sums[0])
                });
            }
            Member::Map { .. } => {
                reads.push(Read::One(column(arena, at)));
                at += 1;
            }
            Member::Reduce { op, z, .. } => {
                let col = column(arena, at);
                at += 1;
                let op = arena.copy_fresh(*op);
                reads.push(Read::One(arena.add(Node::Reduce(op, *z, col))));
            }
        }
    }
    Some((g, joint_map, reads))
}

/// `(s, t. map2 (u, w. u + w) s t)` on arrays of reals shaped like `z`.
fn row_plus(arena: &mut Arena, z: ExprId) -> Option<ExprId> {
    let ty = infer(arena, &NoSource, z).ok()?;
    let (s, t) = (
        arena.fresh_var("s", Some(ty.clone())),
        arena.fresh_var("t", Some(ty)),
    );
    let (u, w) = (
        arena.fresh_var("u", Some(Type::Real)),
        arena.fresh_var("w", Some(Type::Real)),
    );
    let (ue, we) = (arena.var(u), arena.var(w));
    let add = arena.add(Node::Op2(BinOp::Add, ue, we));
    let plus = arena.lambda(&[u, w], add);
    let (se, te) = (arena.var(s), arena.var(t));
    let body = arena.add(Node::Map2(plus, se, te));
    Some(arena.lambda(&[s, t], body))
}
