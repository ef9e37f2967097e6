//! Dead code of the primal: what a program computes and never reads.
//!
//! The native primal runs the program as written (loop invariants hoisted, nothing else
//! rewritten: `unfad::Pipeline::prepared_primal`), so a part of a value that nothing
//! reads was computed, and stored when it was a column of a map: a helper returning a
//! tuple of which the caller keeps one component (`fst stats(row)`), a `let` left unused,
//! `let (m, v) = (mean, variance) in m`, or `map (r. (sum(r), map (x. x * x) r)) X` of
//! which only the sums are read (every row's squares stored, an n x m array, for nothing).
//! The gradient never had these costs: the optimizer's simplifier removes them on the way.
//!
//! [`drop_dead_code`] removes them without the simplifier, exactly: every value that is
//! read is computed by the same operations as before, so the primal still equals the
//! interpreter bit for bit. What goes is only what no read reaches (a projection of a
//! tuple written out keeps its component, a `let` whose variable is never read goes, a
//! tuple `let` keeps the components read, and the unread columns of stored maps go by
//! [`crate::columns::drop_unread_columns`]). Dead code cannot fail any more: an index out
//! of bounds in a value nobody reads is no error, as in the gradient.

use unfad_syntax::fast_hash::FastSet;
use unfad_syntax::{with_stack, Arena, ExprId, Func, Node, Var};

use crate::fast_hash::FastMap;

/// `func` without the code whose value nothing reads (the same term if there is none).
pub fn drop_dead_code(arena: &mut Arena, func: &Func) -> Func {
    let mut f = func.clone();
    // Dropping a `let` can leave the `let`s its value read unread in turn: a few rounds
    // (each one walk over the term) take the chains a program has.
    for _ in 0..4 {
        let read = read_vars(arena, f.body);
        let mut memo = FastMap::default();
        let body = sweep(arena, f.body, &read, &mut memo);
        let narrowed = crate::columns::drop_unread_columns(arena, &Func { body, ..f.clone() });
        if narrowed.body == f.body {
            break;
        }
        f = narrowed;
    }
    f
}

/// Every variable some node of `e` reads (each node visited once, however often shared).
fn read_vars(arena: &Arena, e: ExprId) -> FastSet<Var> {
    let mut read = FastSet::default();
    let mut seen = vec![false; arena.node_count()];
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        if std::mem::replace(&mut seen[e.index()], true) {
            continue;
        }
        if let Node::Var(v) = arena[e] {
            read.insert(v);
        }
        arena.for_each_child(e, |c| stack.push(c));
    }
    read
}

/// `e` with projections of written-out tuples taken, and the `let`s that bind only
/// variables outside `read` removed (their components, for a tuple written out).
fn sweep(
    arena: &mut Arena,
    e: ExprId,
    read: &FastSet<Var>,
    memo: &mut FastMap<ExprId, ExprId>,
) -> ExprId {
    if let Some(&r) = memo.get(&e) {
        return r;
    }
    let out = with_stack(|| {
        // Chains of `let`s iteratively: programs nest thousands of them.
        let mut chain = Vec::new();
        let mut cur = e;
        while let Node::Let(_, _, rest) | Node::LetTuple(_, _, rest) = arena[cur] {
            chain.push(cur);
            cur = rest;
        }
        let inner = sweep_node(arena, cur, read, memo);
        rewrap(arena, &chain, inner, read, memo)
    });
    memo.insert(e, out);
    out
}

/// [`sweep`] of a node that is not a `let`.
fn sweep_node(
    arena: &mut Arena,
    e: ExprId,
    read: &FastSet<Var>,
    memo: &mut FastMap<ExprId, ExprId>,
) -> ExprId {
    if let Node::Proj(i, inner) = arena[e] {
        if let Some((lets, l)) = tuple_under_lets(arena, inner) {
            if let Some(&item) = arena.exprs(l).get(i as usize) {
                let item = sweep(arena, item, read, memo);
                return rewrap(arena, &lets, item, read, memo);
            }
        }
    }
    let node = arena[e];
    let new = arena.map_children(node, |a, c| sweep(a, c, read, memo));
    arena.rebuild(e, new)
}

/// The tuple written at the end of the `let` chain `e` (`let a = .. in (x, y)`), and the
/// chain's `let`s, outermost first.
fn tuple_under_lets(arena: &Arena, e: ExprId) -> Option<(Vec<ExprId>, unfad_syntax::ExprList)> {
    let mut lets = Vec::new();
    let mut cur = e;
    loop {
        match arena[cur] {
            Node::Let(_, _, rest) | Node::LetTuple(_, _, rest) => {
                lets.push(cur);
                cur = rest;
            }
            Node::Tuple(l) => return Some((lets, l)),
            _ => return None,
        }
    }
}

/// `inner` under the `lets` (outermost first) of a chain, each swept: a `let` whose
/// variable is not `read` goes, and so does a tuple `let` none of whose variables is; one
/// of a tuple written out (under `let`s of its own) keeps the components read, each bound
/// alone (binders are unique, so neither the items nor the rest read a variable bound
/// beside them).
fn rewrap(
    arena: &mut Arena,
    lets: &[ExprId],
    inner: ExprId,
    read: &FastSet<Var>,
    memo: &mut FastMap<ExprId, ExprId>,
) -> ExprId {
    let mut out = inner;
    for &at in lets.iter().rev() {
        out = match arena[at] {
            Node::Let(x, rhs, _) if read.contains(&x) => {
                let rhs = sweep(arena, rhs, read, memo);
                arena.rebuild(at, Node::Let(x, rhs, out))
            }
            Node::LetTuple(xs, rhs, _) => {
                let vars = arena.vars_of(xs).to_vec();
                let used: Vec<bool> = vars.iter().map(|v| read.contains(v)).collect();
                let written = tuple_under_lets(arena, rhs);
                if !used.contains(&true) {
                    out
                } else if let (false, Some((inner_lets, l))) = (used.iter().all(|&u| u), written) {
                    let items = arena.exprs(l).to_vec();
                    for (i, &x) in vars.iter().enumerate().rev() {
                        if used[i] {
                            let item = sweep(arena, items[i], read, memo);
                            out = arena.add_at(Node::Let(x, item, out), arena.span(at));
                        }
                    }
                    rewrap(arena, &inner_lets, out, read, memo)
                } else {
                    let rhs = sweep(arena, rhs, read, memo);
                    arena.rebuild(at, Node::LetTuple(xs, rhs, out))
                }
            }
            _ => out,
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use unfad_syntax::print_func;

    fn dead(src: &str) -> String {
        let (mut prog, func) = unfad_test_support::load(src);
        let f = super::drop_dead_code(&mut prog.arena, &func);
        print_func(&prog.arena, &f)
    }

    #[test]
    fn unread_components_lets_and_columns_go() {
        expect![[r#"
            def f(x: [n]real, w: real): real =
              let A = map (a. (a * w, sin(a * w))) x in
              (let A_1 = map (t. fst t) A in
               reduce + 0 A_1) * (let A_2 = map (t_1. snd t_1) A in
               reduce + 0 A_2)
        "#]]
        .assert_eq(&dead(
            "def f(x: [n]real, w: real): real =
               let A = map (a. (a * w, sin(a * w), map (b. cos(a * b)) x)) x in
               sum(map (t. t.0) A) * sum(map (t. t.1) A)",
        ));
        expect![[r#"
            def f(x: [n]real, w: real): real =
              let A =
                map (a.
                  let a_1 = a in
                  let w_1 = w in
                  let m = sin(a_1 * w_1) in
                  m) x
              in
              reduce + 0 A
        "#]]
        .assert_eq(&dead(
            "def stats(a: real, w: real): (real, real) = (sin(a * w), cos(a * w))
             def f(x: [n]real, w: real): real =
               sum(map (a. let unused = exp(a) in let (m, v) = stats(a, w) in m) x)",
        ));
    }

    /// A component read only through its own components (`fst (snd t)`) loses its unread
    /// items too: the element `(a w, (sin(a w), map (b. cos(a b)) x))` stored n x n
    /// cosines for nothing.
    #[test]
    fn unread_items_of_a_nested_column_go() {
        expect![[r#"
            def f(x: [n]real, w: real): real =
              let A = map (a. (a * w, sin(a * w))) x in
              (let A_1 = map (t. fst t) A in
               reduce + 0 A_1) * (let A_2 = map (t_1. snd t_1) A in
               reduce + 0 A_2)
        "#]]
        .assert_eq(&dead(
            "def f(x: [n]real, w: real): real =
               let A = map (a. (a * w, (sin(a * w), map (b. cos(a * b)) x))) x in
               sum(map (t. fst t) A) * sum(map (t. fst (snd t)) A)",
        ));
    }

    #[test]
    fn a_program_without_dead_code_is_unchanged() {
        let src = "def f(x: [n]real, w: real): real =
               let A = map (a. (a * w, sin(a))) x in
               sum(map (t. t.0 * t.1) A)";
        let (mut prog, func) = unfad_test_support::load(src);
        let f = super::drop_dead_code(&mut prog.arena, &func);
        assert_eq!(f.body, func.body);
    }
}
