//! Checks of the invariants of generated terms, for tests and for later stages.

use unfad_syntax::fast_hash::FastSet as HashSet;

use unfad_syntax::{with_stack, Arena, ExprId, Node, Type, Var};

/// Every variable of function type (a continuation) occurs exactly once in `e`: the paper's
/// linearity of `Y`, which keeps reverse mode efficient. Returns the offending variable's
/// name and count.
pub fn check_linear(a: &Arena, e: ExprId) -> Result<(), String> {
    let counts = a.occurrences(e);
    let mut bound = Vec::new();
    collect_binders(a, e, &mut bound);
    for v in bound {
        if matches!(a.var_type(v), Some(Type::Func(..))) {
            let n = counts.get(&v).copied().unwrap_or(0);
            if n != 1 {
                return Err(format!(
                    "the continuation `{}` is used {n} times, not once",
                    a.var_name(v)
                ));
            }
        }
    }
    Ok(())
}

/// Every variable is bound at most once in `e` (the arena's unique-binder invariant).
pub fn check_unique_binders(a: &Arena, e: ExprId) -> Result<(), String> {
    let mut bound = Vec::new();
    collect_binders(a, e, &mut bound);
    let mut seen = HashSet::default();
    for v in bound {
        if !seen.insert(v) {
            return Err(format!("`{}` is bound twice", a.var_name(v)));
        }
    }
    Ok(())
}

/// The variables bound in the tree of `e`, once per binding occurrence.
fn collect_binders(a: &Arena, e: ExprId, out: &mut Vec<Var>) {
    with_stack(|| {
        let node = a[e];
        if let Node::Let(..) | Node::LetTuple(..) | Node::Lambda(..) = node {
            out.extend(a.binders(node));
        }
        a.for_each_child(e, |c| collect_binders(a, c, out));
    })
}
