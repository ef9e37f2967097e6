//! Expansions: a term with its `let`s substituted and some variables replaced, hash-consed
//! in a pass of the simplifier, so that two terms computing the same value from the same
//! variables (however they name their intermediate results) have one expansion.

use unfad_syntax::{with_stack, ExprId, Kids, Node, Var};

use crate::fast_hash::FastMap as HashMap;
use crate::simplify::RuleCx;

/// `e` with the variables of `env` replaced by their terms, every `let` inside it
/// substituted and the parameters of the functions inside it renamed to stand-ins for
/// their depth, rebuilt through the pass's hash-consing (so equal expansions are one
/// node): two terms compute the same value when their expansions are equal.
pub(crate) fn expand(
    cx: &mut RuleCx,
    e: ExprId,
    env: &mut HashMap<Var, ExprId>,
    memo: &mut Memo,
) -> ExprId {
    expand_at(cx, e, 0, env, memo)
}

/// Expansions already made, by node and depth of functions around it.
pub(crate) type Memo = HashMap<(ExprId, u32), ExprId>;

pub(crate) fn expand_at(
    cx: &mut RuleCx,
    e: ExprId,
    depth: u32,
    env: &mut HashMap<Var, ExprId>,
    memo: &mut Memo,
) -> ExprId {
    if let Some(&r) = memo.get(&(e, depth)) {
        return r;
    }
    let r = with_stack(|| match cx.arena()[e] {
        Node::Var(v) => match env.get(&v) {
            Some(&r) => r,
            None => cx.var(v),
        },
        Node::Let(x, r, b) => {
            let r = expand_at(cx, r, depth, env, memo);
            env.insert(x, r);
            expand_at(cx, b, depth, env, memo)
        }
        Node::Lambda(ps, b) => {
            let ps = cx.arena().vars_of(ps).to_vec();
            let mut stand_ins = Vec::with_capacity(ps.len());
            for (i, &p) in ps.iter().enumerate() {
                let c = cx.stand_in(depth, i);
                let ec = cx.var(c);
                env.insert(p, ec);
                stand_ins.push(c);
            }
            let b = expand_at(cx, b, depth + 1, env, memo);
            let l = cx.arena_mut().var_list(&stand_ins);
            cx.mk(Node::Lambda(l, b))
        }
        node => {
            let kids = cx.arena().node_children(node);
            let new: Kids = kids
                .iter()
                .map(|&k| expand_at(cx, k, depth, env, memo))
                .collect();
            let mut it = new.into_iter();
            let n = cx
                .arena_mut()
                .map_children(node, |_, _| it.next().expect("one per child"));
            cx.mk(n)
        }
    });
    memo.insert((e, depth), r);
    r
}

/// `body` with every subterm whose expansion (with the variables of `env` replaced) is
/// `target` replaced by `by` (`None` if there is none). `memo` holds expansions already
/// made with `env` (the caller may keep both from an earlier expansion of `body`).
pub(crate) fn replace_expansion(
    cx: &mut RuleCx,
    body: ExprId,
    env: &mut HashMap<Var, ExprId>,
    memo: &mut Memo,
    target: ExprId,
    by: ExprId,
) -> Option<ExprId> {
    #[allow(clippy::too_many_arguments)]
    fn go(
        cx: &mut RuleCx,
        e: ExprId,
        depth: u32,
        target: ExprId,
        by: ExprId,
        env: &mut HashMap<Var, ExprId>,
        memo: &mut Memo,
        done: &mut HashMap<(ExprId, u32), ExprId>,
    ) -> ExprId {
        if let Some(&r) = done.get(&(e, depth)) {
            return r;
        }
        let r = with_stack(|| {
            if expand_at(cx, e, depth, env, memo) == target {
                return by;
            }
            let node = cx.arena()[e];
            let inner = depth + matches!(node, Node::Lambda(..)) as u32;
            let kids = cx.arena().node_children(node);
            let new: Kids = kids
                .iter()
                .map(|&k| go(cx, k, inner, target, by, env, memo, done))
                .collect();
            rebuilt(cx, e, &kids, new)
        });
        done.insert((e, depth), r);
        r
    }
    let mut done = HashMap::default();
    let r = go(cx, body, 0, target, by, env, memo, &mut done);
    (r != body).then_some(r)
}

/// `e`, whose children are `kids`, with them replaced by `new` through the pass's
/// hash-consing; `e` itself if they are the same.
pub(crate) fn rebuilt(cx: &mut RuleCx, e: ExprId, kids: &Kids, new: Kids) -> ExprId {
    if new == *kids {
        return e;
    }
    let node = cx.arena()[e];
    let mut it = new.into_iter();
    let n = cx
        .arena_mut()
        .map_children(node, |_, _| it.next().expect("one per child"));
    cx.mk(n)
}
