//! Sibling loops: a reduction of a loop over the same arrays as an earlier statement's
//! loop is computed in that loop.
//!
//! Reverse mode computes the value of `sum(map2 (p, t. body) P Y)` apart from its
//! gradient: `let G = map2 (p, t. adjoints) P Y in (reduce + 0 (map2 (p1, t1. body) P Y),
//! ...)`. The two loops run over the same arrays and recompute what they share (`p - t`,
//! a dot product, a branch). Here the reduced loop's body joins the earlier loop's as one
//! more component of its elements, `let G2 = map2 (p, t. (adjoints, body)) P Y`, which the
//! hash-consing then shares the common terms of, and the reduction reads that component:
//! `reduce + 0 (map (g. snd g) G2)`. The code generator folds such a column in the loop
//! that makes it, so the value costs no loop of its own.
//!
//! Every `let` chain is treated, the body of a loop's function included (per point, a
//! softmax's value beside its gradient). Only reductions the chain's result has as
//! components move, so the earlier loop computes nothing the program would not; their
//! loops must read nothing bound at or after the earlier statement. Values do not change: each
//! element is computed by the same operations, and the reduction runs in the same order.

use unfad_syntax::fast_hash::{FastMap as HashMap, FastSet as HashSet};
use unfad_syntax::typeck::{infer, NoSource};
use unfad_syntax::{with_stack, Arena, ExprId, ExprMemo, Func, Node, Type, Var};

use crate::expand::{expand, replace_expansion, Memo};
use crate::simplify::Simplifier;

/// Rounds of merging at most (each merges the reductions of one statement's loop).
const MAX_ROUNDS: usize = 8;

/// Compute the reductions of loops over the same arrays as a statement's loop in that loop.
pub fn fuse_sibling_loops(arena: &mut Arena, func: &Func) -> Func {
    let mut memo = ExprMemo::for_arena(arena);
    let body = every_chain(
        arena,
        func.body,
        MAX_ROUNDS,
        &mut |a, b| merge_once(a, func, b),
        &mut memo,
    );
    Func {
        body,
        ..func.clone()
    }
}

/// `func` with `step` applied to every `let` chain of its body, up to `rounds` times per
/// chain (see [`every_chain`]).
pub(crate) fn in_every_chain(
    arena: &mut Arena,
    func: &Func,
    rounds: usize,
    step: &mut dyn FnMut(&mut Arena, ExprId) -> Option<ExprId>,
) -> Func {
    let mut memo = ExprMemo::for_arena(arena);
    let body = every_chain(arena, func.body, rounds, step, &mut memo);
    Func {
        body,
        ..func.clone()
    }
}

/// `e` with `step` applied to every `let` chain in it, up to `rounds` times per chain until
/// it changes nothing: the chains inside its statements, results and functions' bodies (a
/// loop's body, per element) first, then its own. `step` gets the whole chain and returns
/// the rewritten one, or `None`. Shared by this pass and [`crate::consumers`].
pub(crate) fn every_chain(
    arena: &mut Arena,
    e: ExprId,
    rounds: usize,
    step: &mut dyn FnMut(&mut Arena, ExprId) -> Option<ExprId>,
    memo: &mut ExprMemo,
) -> ExprId {
    if let Some(r) = memo.get(e) {
        return r;
    }
    let r = with_stack(|| {
        let node = arena[e];
        let inner = match node {
            Node::Const(_) | Node::Bool(_) | Node::Var(_) => return e,
            Node::Let(..) | Node::LetTuple(..) => {
                let (stmts, tail) = unchain(arena, e);
                let new_stmts: Vec<Stmt> = stmts
                    .iter()
                    .map(|&s| match s {
                        Stmt::One(v, a) => Stmt::One(v, every_chain(arena, a, rounds, step, memo)),
                        Stmt::Many(vs, a) => {
                            Stmt::Many(vs, every_chain(arena, a, rounds, step, memo))
                        }
                    })
                    .collect();
                let new_tail = every_chain(arena, tail, rounds, step, memo);
                // The same node when nothing inside changed (a new chain is a new node).
                let same = new_tail == tail
                    && stmts
                        .iter()
                        .zip(&new_stmts)
                        .all(|(a, b)| a.rhs() == b.rhs());
                if same {
                    e
                } else {
                    rechain(arena, &new_stmts, new_tail)
                }
            }
            _ => {
                let new = arena.map_children(node, |a, c| every_chain(a, c, rounds, step, memo));
                return arena.rebuild(e, new);
            }
        };
        let mut body = inner;
        for _ in 0..rounds {
            match step(arena, body) {
                Some(b) => body = b,
                None => break,
            }
        }
        body
    });
    memo.insert(e, r);
    r
}

/// A statement of a `let` chain.
#[derive(Clone, Copy)]
pub(crate) enum Stmt {
    One(Var, ExprId),
    Many(unfad_syntax::VarList, ExprId),
}

impl Stmt {
    pub(crate) fn rhs(self) -> ExprId {
        match self {
            Stmt::One(_, e) | Stmt::Many(_, e) => e,
        }
    }

    /// The same binding of `rhs` instead.
    pub(crate) fn with_rhs(self, rhs: ExprId) -> Stmt {
        match self {
            Stmt::One(x, _) => Stmt::One(x, rhs),
            Stmt::Many(xs, _) => Stmt::Many(xs, rhs),
        }
    }
}

/// The variables that `stmts` bind, added to `out`.
pub(crate) fn bound_by(arena: &Arena, stmts: &[Stmt], out: &mut HashSet<Var>) {
    for s in stmts {
        match *s {
            Stmt::One(v, _) => {
                out.insert(v);
            }
            Stmt::Many(vs, _) => out.extend(arena.vars_of(vs).iter().copied()),
        }
    }
}

pub(crate) fn unchain(arena: &Arena, mut e: ExprId) -> (Vec<Stmt>, ExprId) {
    let mut stmts = Vec::new();
    loop {
        match arena[e] {
            Node::Let(x, a, b) => {
                stmts.push(Stmt::One(x, a));
                e = b;
            }
            Node::LetTuple(xs, a, b) => {
                stmts.push(Stmt::Many(xs, a));
                e = b;
            }
            _ => return (stmts, e),
        }
    }
}

pub(crate) fn rechain(arena: &mut Arena, stmts: &[Stmt], tail: ExprId) -> ExprId {
    stmts.iter().rev().fold(tail, |acc, s| match *s {
        Stmt::One(x, a) => arena.let_(x, a, acc),
        Stmt::Many(xs, a) => arena.add(Node::LetTuple(xs, a, acc)),
    })
}

/// True if `f` is the zip function `(a, b. (a, b))`.
pub(crate) fn is_zip_function(arena: &Arena, f: ExprId) -> bool {
    let Some((ps, body)) = arena.lambda_parts(f) else {
        return false;
    };
    let Node::Tuple(items) = arena[body] else {
        return false;
    };
    let items = arena.exprs(items);
    ps.len() == 2
        && items.len() == 2
        && arena[items[0]] == Node::Var(ps[0])
        && arena[items[1]] == Node::Var(ps[1])
}

/// The loop a statement computes: its kind (`map` or `map2`), function and operands.
pub(crate) fn elementwise(arena: &Arena, e: ExprId) -> Option<(bool, ExprId, Vec<ExprId>)> {
    match arena[e] {
        Node::Map(f, a) => Some((false, f, vec![a])),
        Node::Map2(f, a, b) => Some((true, f, vec![a, b])),
        _ => None,
    }
}

/// What the chain's statements and result read, counted once per round.
struct Facts {
    /// How often each variable is read (in the tree: a shared term counts at each use).
    reads: HashMap<Var, usize>,
    /// The reductions the code generator folds in the loop that makes their operand, with
    /// the statement they are in (the number of statements for the result): the result's
    /// components (the tail, or its tuple's items) or terms of their scalar arithmetic
    /// (`arithmetic_terms`), and the reductions bound by
    /// statements whose variable is such a component, read elsewhere too or not (a sum
    /// that is the gradient of a scale and also a term of the value; the code generator
    /// folds a `let`-bound reduction of a column whatever reads its result).
    folds: Vec<(usize, ExprId)>,
}

impl Facts {
    fn of(arena: &Arena, stmts: &[Stmt], tail: ExprId) -> Facts {
        let mut reads: HashMap<Var, usize> = HashMap::default();
        for s in stmts {
            for (v, n) in arena.occurrences(s.rhs()) {
                *reads.entry(v).or_insert(0) += n;
            }
        }
        for (v, n) in arena.occurrences(tail) {
            *reads.entry(v).or_insert(0) += n;
        }
        // The result's components, through nested tuples (an element's value beside its
        // adjoints `(v, (dp, dq))`: the code generator folds a reduction at any depth of
        // the result's tuples).
        let mut items: Vec<ExprId> = Vec::new();
        let mut pending = vec![tail];
        while let Some(e) = pending.pop() {
            match arena[e] {
                Node::Tuple(l) => pending.extend(arena.exprs(l).iter().rev()),
                _ => items.push(e),
            }
        }
        // The terms of the items' scalar arithmetic: a mean's value `r / c`, a penalized
        // loss `r1 / c + lam * r2`, are their sums to the code generator.
        let defs: HashMap<Var, ExprId> = stmts
            .iter()
            .filter_map(|s| match *s {
                Stmt::One(v, rhs) => Some((v, rhs)),
                Stmt::Many(..) => None,
            })
            .collect();
        let mut terms = Vec::new();
        for &e in &items {
            arithmetic_terms(arena, &defs, e, MAX_SCALES, &mut terms);
        }
        let mut folds: Vec<(usize, ExprId)> = terms
            .iter()
            .filter(|&&e| matches!(arena[e], Node::Reduce(..)))
            .map(|&e| (stmts.len(), e))
            .collect();
        for (k, s) in stmts.iter().enumerate() {
            let Stmt::One(v, rhs) = *s else { continue };
            let component = terms.iter().any(|&e| arena[e] == Node::Var(v));
            if matches!(arena[rhs], Node::Reduce(..)) && component {
                folds.push((k, rhs));
            }
        }
        Facts { reads, folds }
    }

    /// True if `x` is read, and only as the array of reductions among `folds`.
    fn only_folded(&self, arena: &Arena, x: Var, folds: &[ExprId]) -> bool {
        let folded = folds
            .iter()
            .filter(|&&r| matches!(arena[r], Node::Reduce(_, _, a) if arena[a] == Node::Var(x)))
            .count();
        matches!(self.reads.get(&x), Some(&n) if n > 0 && n == folded)
    }
}

/// Scalar operations (and variables bound to them) around a reduction, at most.
const MAX_SCALES: usize = 6;

/// The terms of the scalar arithmetic `e` is (through at most `depth` operations with a
/// variable or a constant, negations and functions, and variables bound to them), pushed
/// onto `out`: `e` itself if it is no such operation. A mean's value `r / c` has the term
/// `r`; the code generator folds a reduction among the terms in the loop that makes its
/// operand as it folds a bare one (a mean's, once `unfad_ad::reverse_factored` has taken
/// the factor out of the reverse pass).
fn arithmetic_terms(
    arena: &Arena,
    defs: &HashMap<Var, ExprId>,
    e: ExprId,
    depth: usize,
    out: &mut Vec<ExprId>,
) {
    let atom = |e: ExprId| matches!(arena[e], Node::Var(_) | Node::Const(_));
    match arena[e] {
        Node::Op1(_, x) if depth > 0 => arithmetic_terms(arena, defs, x, depth - 1, out),
        // An operation with a variable or a constant: a scale, or a term beside another
        // (a seeded gradient's `r / len(X)`, where the seed scales the adjoints inside the
        // loops too, stays apart: joined, its scaled columns would be stored).
        Node::Op2(_, x, y) if depth > 0 && (atom(x) || atom(y)) => {
            if atom(y) {
                arithmetic_terms(arena, defs, x, depth - 1, out);
            }
            if atom(x) {
                arithmetic_terms(arena, defs, y, depth - 1, out);
            }
        }
        // A variable bound to such arithmetic (`let v = r / c in (v + p, ...)`, before
        // inlining), through its definition.
        Node::Var(v) if depth > 0 => match defs.get(&v) {
            Some(&rhs) if matches!(arena[rhs], Node::Op1(..) | Node::Op2(..)) => {
                arithmetic_terms(arena, defs, rhs, depth - 1, out)
            }
            _ => out.push(e),
        },
        _ => out.push(e),
    }
}

/// The same term: one node, or equal up to the names of bound variables.
pub(crate) fn same_term(arena: &Arena, a: ExprId, b: ExprId) -> bool {
    if a == b {
        return true;
    }
    let free: unfad_syntax::fast_hash::FastMap<Var, Var> =
        arena.free_vars(a).into_iter().map(|v| (v, v)).collect();
    unfad_syntax::alpha_eq(arena, a, arena, b, &free)
}

/// Replace every occurrence of the terms `from` (by id) in `e` by `to`.
pub(crate) fn replace(arena: &mut Arena, e: ExprId, from: &[ExprId], to: &[ExprId]) -> ExprId {
    if let Some(i) = from.iter().position(|&f| f == e) {
        return to[i];
    }
    with_stack(|| {
        let node = arena[e];
        let new = arena.map_children(node, |a, c| replace(a, c, from, to));
        arena.rebuild(e, new)
    })
}

/// Merge the reductions of one statement's loop into it; the new body, or `None`.
/// Whether `e` contains a `scatter_add`.
pub(crate) fn contains_scatter(arena: &Arena, e: ExprId) -> bool {
    unfad_syntax::with_stack(|| {
        if matches!(arena[e], Node::ScatterAdd(..)) {
            return true;
        }
        let mut found = false;
        arena.for_each_child(e, |c| found = found || contains_scatter(arena, c));
        found
    })
}

fn merge_once(arena: &mut Arena, func: &Func, body: ExprId) -> Option<ExprId> {
    let (mut stmts, tail) = unchain(arena, body);
    let facts = Facts::of(arena, &stmts, tail);
    // The statements whose loop may join an earlier one: the loops (`elementwise`), and
    // among them those only folded. A reduction reading `v` comes after `v`'s statement,
    // so whether `v` is only folded does not depend on which earlier statement asks (see
    // `folds` below): found once, not once per statement, which made a long chain of
    // loops quadratic.
    let all_folds: Vec<ExprId> = facts.folds.iter().map(|&(_, r)| r).collect();
    let loops: Vec<(usize, bool)> = stmts
        .iter()
        .enumerate()
        .filter_map(|(k, s)| match *s {
            Stmt::One(v, rhs) if elementwise(arena, rhs).is_some() => {
                Some((k, facts.only_folded(arena, v, &all_folds)))
            }
            _ => None,
        })
        .collect();
    // The loops by their operands (the variables among them): a loop joins only loops
    // over the same operands, and checking every later loop of a long chain of loops,
    // one statement after another, was quadratic.
    let operand_key = |arena: &Arena, ops: &[ExprId]| -> Vec<Option<Var>> {
        ops.iter()
            .map(|&o| match arena[o] {
                Node::Var(v) => Some(v),
                _ => None,
            })
            .collect()
    };
    let mut by_operands: HashMap<Vec<Option<Var>>, Vec<usize>> = HashMap::default();
    for (p, &(k, _)) in loops.iter().enumerate() {
        if let Some((_, _, ops)) = elementwise(arena, stmts[k].rhs()) {
            by_operands
                .entry(operand_key(arena, &ops))
                .or_default()
                .push(p);
        }
    }
    for i in 0..stmts.len() {
        let Stmt::One(x, rhs) = stmts[i] else {
            continue;
        };
        let Some((two, f, operands)) = elementwise(arena, rhs) else {
            continue;
        };
        let Some((params, gbody)) = arena.lambda_parts(f).map(|(p, b)| (p.to_vec(), b)) else {
            continue;
        };
        // A loop of scatters is an accumulation the scatter rules make one `scatter_add`
        // of: joined with other loops, its contributions would be stored per element.
        if contains_scatter(arena, gbody) {
            continue;
        }
        // A column of a joint loop (`map (g. g.k) G`, which a merge leaves) is no loop to
        // join others into: its siblings read `G` too, and joining them would only rebuild
        // `G`'s elements.
        if matches!(arena[gbody], Node::Proj(..)) {
            continue;
        }
        // Reductions the code generator folds in the loop that makes their operand: the
        // result's components, and `let`s of them the result reads as a component. Only
        // those move (elsewhere, the joint loop's column would be stored, then reduced).
        let folds: Vec<ExprId> = facts
            .folds
            .iter()
            .filter(|&&(at, _)| at > i)
            .map(|&(_, r)| r)
            .collect();
        let base_reduced = facts.only_folded(arena, x, &folds);
        let mut found = Vec::new();
        for &r in &folds {
            if let Node::Reduce(_, _, a) = arena[r] {
                if elementwise(arena, a).is_some() {
                    found.push(a);
                }
            }
        }
        // A later statement's loop joins if it is only folded so, or if the statement's
        // own loop is (a stored loop that other loops read is left to fuse into those).
        let first_later = loops.partition_point(|&(k, _)| k <= i);
        let same_operands: &[usize] = by_operands
            .get(&operand_key(arena, &operands))
            .map_or(&[], Vec::as_slice);
        let later_same = same_operands.partition_point(|&p| p < first_later);
        for &p in &same_operands[later_same..] {
            let (k, folded) = loops[p];
            if base_reduced || folded {
                found.push(stmts[k].rhs());
            }
        }
        // What the later statements bind: a merged loop may read none of it (found when
        // there is a loop to check).
        let mut later: Option<HashSet<Var>> = None;
        let mut merged: Vec<ExprId> = Vec::new();
        for m in found {
            if merged.contains(&m) || m == rhs {
                continue;
            }
            let Some((two_m, g, ops_m)) = elementwise(arena, m) else {
                continue;
            };
            if two_m != two
                || ops_m
                    .iter()
                    .zip(&operands)
                    .any(|(&a, &b)| !same_term(arena, a, b))
            {
                continue;
            }
            let Some((ps, _)) = arena.lambda_parts(g) else {
                continue;
            };
            if ps.len() != params.len() {
                continue;
            }
            let later = later.get_or_insert_with(|| {
                let mut later = HashSet::default();
                later.insert(x);
                bound_by(arena, &stmts[i + 1..], &mut later);
                later
            });
            if arena.free_vars(m).iter().any(|v| later.contains(v)) || contains_scatter(arena, m) {
                continue;
            }
            merged.push(m);
        }
        if merged.is_empty() {
            continue;
        }
        // The joint loop: the statement's element, then each merged loop's.
        let mut items = vec![gbody];
        for &m in &merged {
            let Some((_, g, _)) = elementwise(arena, m) else {
                continue;
            };
            let Some((ps, mbody)) = arena.lambda_parts(g).map(|(p, b)| (p.to_vec(), b)) else {
                continue;
            };
            let subs = ps
                .iter()
                .zip(&params)
                .map(|(&q, &p)| (q, arena.var(p)))
                .collect();
            items.push(arena.subst(mbody, &subs));
        }
        // The joined bodies are a chain whose loops may join in turn (per element, the
        // value's reduction beside the gradient's loop over the same arrays).
        let mut joint_body = share_lets(arena, func, &items);
        for _ in 0..MAX_ROUNDS {
            match merge_once(arena, func, joint_body) {
                Some(b) => joint_body = b,
                None => break,
            }
        }
        let joint_f = arena.lambda(&params, joint_body);
        let joint = if two {
            arena.add(Node::Map2(joint_f, operands[0], operands[1]))
        } else {
            arena.add(Node::Map(joint_f, operands[0]))
        };
        let name = arena.var_name(x).to_string();
        let Some((x2, elem_ty)) = typed_loop_var(arena, joint, &name) else {
            continue;
        };
        let x2e = arena.var(x2);
        // `x` and each merged loop read their component of the joint loop's elements.
        let column = |arena: &mut Arena, k: u32| {
            let g = arena.fresh_var("g", Some(elem_ty.clone()));
            let gv = arena.var(g);
            let pick = arena.proj(k, gv);
            let lam = arena.lambda(&[g], pick);
            arena.add(Node::Map(lam, x2e))
        };
        let first = column(arena, 0);
        let reads: Vec<ExprId> = (1..=merged.len() as u32)
            .map(|k| column(arena, k))
            .collect();
        for s in stmts.iter_mut().skip(i + 1) {
            *s = match *s {
                Stmt::One(v, a) => Stmt::One(v, replace(arena, a, &merged, &reads)),
                Stmt::Many(vs, a) => Stmt::Many(vs, replace(arena, a, &merged, &reads)),
            };
        }
        let tail = replace(arena, tail, &merged, &reads);
        stmts[i] = Stmt::One(x2, joint);
        stmts.insert(i + 1, Stmt::One(x, first));
        return Some(rechain(arena, &stmts, tail));
    }
    None
}

/// A fresh variable named `name` for the joint loop `loop_`, typed as its type, and the
/// type of its elements; `None` if the loop is not a well-typed array.
pub(crate) fn typed_loop_var(arena: &mut Arena, loop_: ExprId, name: &str) -> Option<(Var, Type)> {
    let Ok(loop_ty) = infer(arena, &NoSource, loop_) else {
        return None;
    };
    let Type::Array(_, elem_ty) = &loop_ty else {
        return None;
    };
    let elem_ty = (**elem_ty).clone();
    Some((arena.fresh_var(name, Some(loop_ty)), elem_ty))
}

/// The tuple of `items` (the bodies of the joined loops, over the same parameters), with
/// their `let`s first and a `let` whose term computes what an earlier one does (up to the
/// names of intermediate results and of functions' parameters: the two loops were
/// written apart) read from the earlier one.
pub(crate) fn share_lets(arena: &mut Arena, func: &Func, items: &[ExprId]) -> ExprId {
    let mut stmts = Vec::new();
    let mut tails = Vec::new();
    for &item in items {
        let (s, t) = unchain(arena, item);
        stmts.extend(s);
        tails.push(t);
    }
    let mut aliases: HashMap<Var, ExprId> = HashMap::default();
    let mut kept = Vec::with_capacity(stmts.len());
    {
        // A pass over the joined bodies only (its set-up walks the term it is made for).
        let local = arena.tuple(items);
        let scope = Func {
            body: local,
            ..func.clone()
        };
        let mut pass = Simplifier::new(arena, &scope);
        let mut cx = pass.rule_cx();
        let mut env: HashMap<Var, ExprId> = HashMap::default();
        let mut memo = Memo::default();
        let mut seen: HashMap<ExprId, Var> = HashMap::default();
        for st in stmts {
            match st {
                Stmt::One(v, rhs) => {
                    let x = expand(&mut cx, rhs, &mut env, &mut memo);
                    env.insert(v, x);
                    match seen.get(&x) {
                        Some(&w) => {
                            let w = cx.var(w);
                            aliases.insert(v, w);
                        }
                        None => {
                            seen.insert(x, v);
                            kept.push(st);
                        }
                    }
                }
                Stmt::Many(..) => kept.push(st),
            }
        }
        // What a tail computes again of a kept `let`, it reads from it.
        for t in tails.iter_mut() {
            for st in &kept {
                let Stmt::One(v, _) = *st else { continue };
                let Some(&x) = env.get(&v) else { continue };
                if matches!(cx.arena()[x], Node::Var(_) | Node::Const(_)) {
                    continue;
                }
                let by = cx.var(v);
                if let Some(r) = replace_expansion(&mut cx, *t, &mut env, &mut memo, x, by) {
                    *t = r;
                }
            }
        }
    }
    let tail = arena.tuple(&tails);
    let chained = rechain(arena, &kept, tail);
    arena.subst(chained, &aliases)
}
