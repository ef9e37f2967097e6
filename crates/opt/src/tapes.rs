//! A fold whose states a scan of the same chain keeps (its tape) reads its value there.
//!
//! Reverse mode differentiates `foldl f z A` by a scan, `S = scanl f z A`, whose states the
//! backward pass reads. At the top of a program the fold's value then comes from the scan's
//! last state. Inside a loop's function (a fold per row: a recurrence over each sequence of
//! a batch, Horner's rule at each point) the value's map and the gradient's map are joined
//! into one (`siblings`), and their body computes the fold for the value and the scan for
//! the adjoint: every step twice, `tanh` and all. Here, in each `let` chain, a fold equal
//! (up to the names of its binders) to a scan the chain binds becomes the scan's last
//! state, `foldl (acc, x. x) z S`, which the simplifier then shares with the adjoint's own
//! read of it; the scan's `let` moves up before the fold's statement when that one came
//! first (it reads nothing bound between them). Exact: the last state of the scan is the
//! fold's value, computed by the same operations.

use unfad_syntax::fast_hash::{FastMap as HashMap, FastSet as HashSet};
use unfad_syntax::{alpha_eq, with_stack, Arena, ExprId, Func, Node, Var};

use crate::siblings::{bound_by, in_every_chain, rechain, unchain, Stmt};

/// `func` with every fold that a scan of its chain computes read from that scan.
pub fn fold_from_scan(arena: &mut Arena, func: &Func) -> Func {
    if !has_node(arena, func.body, true, |e| {
        matches!(arena[e], Node::Scanl(..))
    }) {
        return func.clone();
    }
    in_every_chain(arena, func, 1, &mut |arena, e| {
        let (mut stmts, mut tail) = unchain(arena, e);
        chain(arena, &mut stmts, &mut tail).then(|| rechain(arena, &stmts, tail))
    })
}

/// Rewrite the folds of the chain `stmts` (then `tail`) that its scans compute; whether
/// any was.
fn chain(arena: &mut Arena, stmts: &mut Vec<Stmt>, tail: &mut ExprId) -> bool {
    // Most chains have no fold outside functions (a long straight-line program's): then
    // nothing to look for, found by one walk of each statement.
    let folds = |arena: &Arena, e: ExprId| {
        has_node(arena, e, false, |x| matches!(arena[x], Node::Foldl(..)))
    };
    if !stmts.iter().any(|st| folds(arena, st.rhs())) && !folds(arena, *tail) {
        return false;
    }
    let mut changed = false;
    let mut k = 0;
    while k < stmts.len() {
        let Stmt::One(s, rhs) = stmts[k] else {
            k += 1;
            continue;
        };
        let Node::Scanl(f, z, a) = arena[rhs] else {
            k += 1;
            continue;
        };
        let scan = (f, z, a);
        let free = free_of(arena, scan);
        // The first statement with such a fold, or the tail.
        let first = (0..stmts.len())
            .filter(|&j| j != k)
            .find(|&j| has_fold(arena, stmts[j].rhs(), scan, &free));
        let in_tail = has_fold(arena, *tail, scan, &free);
        if first.is_none() && !in_tail {
            k += 1;
            continue;
        }
        // The scan must be bound before its first reader: moved up when it reads nothing
        // bound in between.
        let mut at = k;
        if let Some(j) = first.filter(|&j| j < k) {
            let mut bound = HashSet::default();
            bound_by(arena, &stmts[j..k], &mut bound);
            let between: Vec<Var> = bound.into_iter().collect();
            if arena.mentions_any(rhs, &between) {
                k += 1;
                continue;
            }
            let st = stmts.remove(k);
            stmts.insert(j, st);
            at = j;
        }
        // Each fold after the scan reads its last state.
        let last = last_state(arena, s, z);
        let mut memo = HashMap::default();
        for st in stmts.iter_mut().skip(at + 1) {
            let r = replace_folds(arena, st.rhs(), scan, &free, last, &mut memo);
            *st = st.with_rhs(r);
        }
        *tail = replace_folds(arena, *tail, scan, &free, last, &mut memo);
        changed = true;
        k = k.max(at) + 1;
    }
    changed
}

/// Whether a node of `e` satisfies `pred`, inside functions too if `into_functions` (each
/// node visited once).
fn has_node(arena: &Arena, e: ExprId, into_functions: bool, pred: impl Fn(ExprId) -> bool) -> bool {
    let mut seen = HashSet::default();
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        if !seen.insert(e) {
            continue;
        }
        if pred(e) {
            return true;
        }
        if into_functions || !matches!(arena[e], Node::Lambda(..)) {
            arena.for_each_child(e, |c| stack.push(c));
        }
    }
    false
}

/// `foldl (acc, x. x) z S`: the last state of the scan `S` from `z`.
fn last_state(arena: &mut Arena, s: Var, z: ExprId) -> ExprId {
    let ty = arena.var_type(s).and_then(|t| match t {
        unfad_syntax::Type::Array(_, el) => Some((**el).clone()),
        _ => None,
    });
    let acc = arena.fresh_var("acc", ty.clone());
    let x = arena.fresh_var("x", ty);
    let body = arena.var(x);
    let f = arena.lambda(&[acc, x], body);
    let sv = arena.var(s);
    arena.add(Node::Foldl(f, z, sv))
}

/// A scan's function, initial value and array.
type Scan = (ExprId, ExprId, ExprId);

/// Whether `e` is the fold the scan `(f, z, a)` computes the states of: the same up to the
/// names of the binders inside, each free variable the same (`free`, which pairs every
/// free variable of the scan with itself).
fn is_fold_of(arena: &Arena, e: ExprId, (f, z, a): Scan, free: &HashMap<Var, Var>) -> bool {
    let Node::Foldl(g, y, b) = arena[e] else {
        return false;
    };
    (b == a || alpha_eq(arena, b, arena, a, free))
        && (y == z || alpha_eq(arena, y, arena, z, free))
        && alpha_eq(arena, g, arena, f, free)
}

/// Every free variable of the scan paired with itself (see [`is_fold_of`]).
fn free_of(arena: &Arena, (f, z, a): Scan) -> HashMap<Var, Var> {
    [f, z, a]
        .into_iter()
        .flat_map(|e| arena.free_vars(e))
        .map(|v| (v, v))
        .collect()
}

/// Whether such a fold occurs in `e` (not inside a function: there its operands may be
/// bound otherwise).
fn has_fold(arena: &Arena, e: ExprId, scan: Scan, free: &HashMap<Var, Var>) -> bool {
    has_node(arena, e, false, |x| is_fold_of(arena, x, scan, free))
}

/// `e` with each such fold (outside functions) replaced by `last`.
fn replace_folds(
    arena: &mut Arena,
    e: ExprId,
    scan: Scan,
    free: &HashMap<Var, Var>,
    last: ExprId,
    memo: &mut HashMap<ExprId, ExprId>,
) -> ExprId {
    if let Some(&r) = memo.get(&e) {
        return r;
    }
    let out = with_stack(|| {
        if is_fold_of(arena, e, scan, free) {
            return last;
        }
        if matches!(arena[e], Node::Lambda(..)) {
            return e;
        }
        let node = arena[e];
        let new = arena.map_children(node, |a, c| replace_folds(a, c, scan, free, last, memo));
        arena.rebuild(e, new)
    });
    memo.insert(e, out);
    out
}
