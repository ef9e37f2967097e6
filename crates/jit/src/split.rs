//! Splitting a large function in two, so that Cranelift compiles the halves on two
//! threads (see [`crate::compile_parallel`]).
//!
//! A first-order term is a chain of `let`s ending in its result. The chain is cut between
//! two statements: the first part binds the statements before the cut and returns the
//! variables the rest reads (the **crossing** values), the second part takes them as extra
//! parameters after the function's own and computes the rest. The two parts run one after
//! the other, the crossing values in memory between them, so the result is the same;
//! what is lost is fusion across the cut (a map bound before it and read after it is
//! stored, where one function might have computed its elements in the loop that reads
//! them), which is why the cut goes where the parts are about as large.

use unfad_syntax::fast_hash::FastSet as HashSet;
use unfad_syntax::{Arena, ExprId, Func, Node, Type, Var};

/// Terms smaller than this (nodes of the DAG) compile in well under a millisecond: not
/// split, as the second thread would cost about what it saves.
pub const MIN_NODES: usize = 250;

/// The smaller part has at least this share of the nodes (in percent), or no cut is made.
const MIN_SHARE: usize = 25;

/// A function cut in two.
pub(crate) struct Parts {
    /// The statements before the cut, returning the crossing values.
    pub first: Func,
    /// The rest: the function's parameters, then one per crossing value.
    pub second: Func,
    /// Whether the first part is the larger (by nodes).
    pub first_larger: bool,
}

/// One statement of the chain: the variables it binds and the `let` node binding them.
struct Stmt {
    vars: Vec<Var>,
    node: ExprId,
}

/// The cut of `func`'s chain that balances the parts best, if the term is large enough
/// and some cut leaves each part a fair share; `None` to compile it whole. New nodes (the
/// first part's result and `let`s) are added to `arena`, typed.
pub(crate) fn split(arena: &mut Arena, func: &Func) -> Option<Parts> {
    split_where(arena, func, best_cut)
}

/// Whether the `let` node `e` binds a fold over something the variables `prev` (bound by
/// the statement before) make.
fn folds_previous(arena: &Arena, e: ExprId, prev: &[Var]) -> bool {
    let (Node::Let(_, r, _) | Node::LetTuple(_, r, _)) = arena[e] else {
        return false;
    };
    let (Node::Reduce(_, _, src) | Node::Foldl(_, _, src)) = arena[r] else {
        return false;
    };
    arena.free_vars(src).iter().any(|v| prev.contains(v))
}

/// The cut after statement `at` (1 or more) exactly, whatever the sizes; for tests.
pub(crate) fn split_at(arena: &mut Arena, func: &Func, at: usize) -> Option<Parts> {
    split_where(arena, func, |sizes, _| {
        (at >= 1 && at + 1 < sizes.len()).then_some(at)
    })
}

/// The cut at the index `choose` picks from the statements' sizes, if its crossing values
/// can be passed in memory (ground types: no conditions).
fn split_where(
    arena: &mut Arena,
    func: &Func,
    choose: impl Fn(&[usize], &[bool]) -> Option<usize>,
) -> Option<Parts> {
    let mut stmts = Vec::new();
    let mut cur = func.body;
    loop {
        match arena[cur] {
            Node::Let(x, _, b) => {
                stmts.push(Stmt {
                    vars: vec![x],
                    node: cur,
                });
                cur = b;
            }
            Node::LetTuple(xs, _, b) => {
                stmts.push(Stmt {
                    vars: arena.vars_of(xs).to_vec(),
                    node: cur,
                });
                cur = b;
            }
            _ => break,
        }
    }
    if stmts.len() < 2 {
        return None;
    }
    // The nodes each statement adds to those of the statements before it (and the tail's,
    // last), so that a prefix's size is a sum.
    let mut seen = HashSet::default();
    let mut sizes: Vec<usize> = stmts
        .iter()
        .map(|s| new_nodes(arena, rhs(arena, s.node), &mut seen))
        .collect();
    sizes.push(new_nodes(arena, cur, &mut seen));
    // No cut between a map and the fold of it that follows: the code generator computes
    // both in one loop, storing only what is read later (see `Translator::stored_then_folded`).
    let fused: Vec<bool> = (0..stmts.len())
        .map(|k| k > 0 && folds_previous(arena, stmts[k].node, &stmts[k - 1].vars))
        .collect();
    let at = choose(&sizes, &fused)?;
    let before: usize = sizes[..at].iter().sum();
    let first_larger = 2 * before > sizes.iter().sum::<usize>();
    let rest = stmts[at].node;
    let free: HashSet<Var> = arena.free_vars(rest).into_iter().collect();
    let crossing: Vec<Var> = stmts[..at]
        .iter()
        .flat_map(|s| s.vars.iter().copied())
        .filter(|v| free.contains(v))
        .collect();
    let types: Vec<Type> = crossing
        .iter()
        .map(|&v| arena.var_type(v).cloned())
        .collect::<Option<_>>()?;
    if crossing.is_empty() || !types.iter().all(Type::is_ground) {
        return None;
    }
    let ret = if types.len() == 1 {
        types[0].clone()
    } else {
        Type::Tuple(types.clone().into())
    };
    let items: Vec<ExprId> = crossing
        .iter()
        .zip(&types)
        .map(|(&v, t)| {
            let e = arena.var(v);
            arena.set_type(e, t.clone());
            e
        })
        .collect();
    let mut body = arena.tuple(&items);
    arena.set_type(body, ret.clone());
    for s in stmts[..at].iter().rev() {
        body = match arena[s.node] {
            Node::Let(x, r, _) => arena.let_(x, r, body),
            Node::LetTuple(_, r, _) => arena.let_tuple(&s.vars, r, body),
            _ => return None,
        };
        arena.set_type(body, ret.clone());
    }
    let mut params = func.params.clone();
    params.extend(&crossing);
    Some(Parts {
        first: Func {
            name: format!("{}_first", func.name),
            params: func.params.clone(),
            body,
            ret,
        },
        second: Func {
            name: format!("{}_second", func.name),
            params,
            body: rest,
            ret: func.ret.clone(),
        },
        first_larger,
    })
}

/// The right-hand side of the `let` node `e`.
fn rhs(arena: &Arena, e: ExprId) -> ExprId {
    match arena[e] {
        Node::Let(_, r, _) | Node::LetTuple(_, r, _) => r,
        _ => e,
    }
}

/// The nodes of `e`'s DAG not in `seen` (which they are added to).
fn new_nodes(arena: &Arena, e: ExprId, seen: &mut HashSet<ExprId>) -> usize {
    let mut count = 0;
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if seen.insert(x) {
            count += 1;
            arena.for_each_child(x, |c| stack.push(c));
        }
    }
    count
}

/// The cut (number of statements in the first part) that makes the parts' sizes closest,
/// `sizes` being the statements' and then the tail's, and no cut before a statement
/// `fused` marks; `None` if the term is small or no cut gives the smaller part its share.
fn best_cut(sizes: &[usize], fused: &[bool]) -> Option<usize> {
    let total: usize = sizes.iter().sum();
    if total < MIN_NODES {
        return None;
    }
    let mut before = 0;
    let mut best: Option<(usize, usize)> = None;
    for (at, &s) in sizes.iter().enumerate().take(sizes.len() - 1) {
        if at > 0 && !fused.get(at).copied().unwrap_or(false) {
            let smaller = before.min(total - before);
            if best.is_none_or(|(_, b)| smaller > b) {
                best = Some((at, smaller));
            }
        }
        before += s;
    }
    let (at, smaller) = best?;
    (smaller * 100 >= total * MIN_SHARE).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::best_cut;

    #[test]
    fn the_cut_balances_the_parts() {
        // statements 100, 50, 200 and a tail of 60: after the second (150 / 260) is the
        // most even of the cuts after the first, second and third.
        let free = [false; 4];
        assert_eq!(best_cut(&[100, 50, 200, 60], &free), Some(2));
        assert_eq!(best_cut(&[150, 10, 80, 20], &free), Some(1));
        // Not between a map and its fold: the next best.
        assert_eq!(best_cut(&[150, 10, 80, 20], &[false, true, false]), Some(2));
        // Too small, or too lopsided whatever the cut.
        assert_eq!(best_cut(&[10, 10, 300, 20], &free), None);
        assert_eq!(best_cut(&[10, 20, 30], &free), None);
        assert_eq!(best_cut(&[5, 400, 5], &free), None);
        assert_eq!(best_cut(&[400, 5], &free), None);
    }
}
