//! Expansions: a term with its `let`s substituted and some variables replaced, hash-consed
//! in a pass of the simplifier, so that two terms computing the same value from the same
//! variables (however they name their intermediate results) have one expansion.

use unfad_syntax::{with_stack, ExprId, Node, Var};

use crate::fast_hash::FastMap as HashMap;
use crate::simplify::Simplifier;

/// `e` with the variables of `env` replaced by their terms and every `let` inside it
/// substituted, rebuilt through the pass's hash-consing (so equal expansions are one node):
/// two terms compute the same value when their expansions are equal.
pub(crate) fn expand(
    s: &mut Simplifier,
    e: ExprId,
    env: &mut HashMap<Var, ExprId>,
    memo: &mut HashMap<ExprId, ExprId>,
) -> ExprId {
    if let Some(&r) = memo.get(&e) {
        return r;
    }
    let r = with_stack(|| match s.arena[e] {
        Node::Var(v) => match env.get(&v) {
            Some(&r) => r,
            None => s.var(v),
        },
        Node::Let(x, r, b) => {
            let r = expand(s, r, env, memo);
            env.insert(x, r);
            expand(s, b, env, memo)
        }
        node => {
            let kids = s.arena.node_children(node);
            let new: Vec<ExprId> = kids.iter().map(|&k| expand(s, k, env, memo)).collect();
            let mut it = new.into_iter();
            let n = s
                .arena
                .map_children(node, |_, _| it.next().expect("one per child"));
            s.mk(n)
        }
    });
    memo.insert(e, r);
    r
}

/// `body` with every subterm whose expansion (with the variables of `env` replaced) is
/// `target` replaced by `by` (`None` if there is none).
pub(crate) fn replace_expansion(
    s: &mut Simplifier,
    body: ExprId,
    mut env: HashMap<Var, ExprId>,
    target: ExprId,
    by: ExprId,
) -> Option<ExprId> {
    fn go(
        s: &mut Simplifier,
        e: ExprId,
        target: ExprId,
        by: ExprId,
        env: &mut HashMap<Var, ExprId>,
        memo: &mut HashMap<ExprId, ExprId>,
        done: &mut HashMap<ExprId, ExprId>,
    ) -> ExprId {
        if let Some(&r) = done.get(&e) {
            return r;
        }
        let r = with_stack(|| {
            if expand(s, e, env, memo) == target {
                return by;
            }
            let node = s.arena[e];
            let kids = s.arena.node_children(node);
            let new: Vec<ExprId> = kids
                .iter()
                .map(|&k| go(s, k, target, by, env, memo, done))
                .collect();
            if new == kids {
                return e;
            }
            let mut it = new.into_iter();
            let n = s
                .arena
                .map_children(node, |_, _| it.next().expect("one per child"));
            s.mk(n)
        });
        done.insert(e, r);
        r
    }
    let mut done = HashMap::default();
    let r = go(
        s,
        body,
        target,
        by,
        &mut env,
        &mut HashMap::default(),
        &mut done,
    );
    (r != body).then_some(r)
}
