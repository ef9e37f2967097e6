//! The free variables that derivatives flow through, of every node of one Source term,
//! each computed once: what the weakened direct macro (`direct`, [`crate::reverse_weakened`])
//! needs to know which adjoints a continuation must carry.
//!
//! The sets are those of [`crate::elem::differentiable_free_vars`] (occurrences as shapes,
//! in conditions and in the right-hand sides of inert `let`s do not count), but memoized
//! per node: the macro asks for the free variables of the rest of every `let` body, and
//! recomputing them each time would walk the rest of the program once per statement.

use std::rc::Rc;

use unfad_syntax::{with_stack, Arena, ExprId, Node, Var};

/// The memo of free variables, filled on demand (a node's set needs its children's).
#[derive(Default)]
pub(crate) struct FreeVars {
    /// By node index (the arena's nodes are numbered densely): a table lookup per node
    /// asked for, without hashing, since the macro asks for millions in a long program.
    sets: Vec<Option<Rc<[Var]>>>,
}

impl FreeVars {
    /// The free variables of `e` that derivatives flow through, sorted and without
    /// repeats.
    pub(crate) fn of(&mut self, a: &Arena, e: ExprId) -> Rc<[Var]> {
        if let Some(Some(s)) = self.sets.get(e.index()) {
            return s.clone();
        }
        let set = with_stack(|| self.compute(a, e));
        if e.index() >= self.sets.len() {
            self.sets.resize(a.node_count().max(e.index() + 1), None);
        }
        self.sets[e.index()] = Some(set.clone());
        set
    }

    fn compute(&mut self, a: &Arena, e: ExprId) -> Rc<[Var]> {
        if crate::elem::no_derivative_flows(a, e) {
            return Rc::from([]);
        }
        match a[e] {
            Node::Var(v) => Rc::from([v]),
            Node::If(_, t, f) => {
                let (st, sf) = (self.of(a, t), self.of(a, f));
                union(st.iter().chain(sf.iter()).copied(), &[])
            }
            node @ (Node::Let(_, e1, e2) | Node::LetTuple(_, e1, e2)) => {
                let xs = a.binders(node);
                let body = self.of(a, e2);
                if xs.iter().any(|x| body.binary_search(x).is_ok()) {
                    let rhs = self.of(a, e1);
                    union(rhs.iter().chain(body.iter()).copied(), &xs)
                } else {
                    // The body's set as it is (no binder in it): shared, not copied.
                    body
                }
            }
            node => {
                let bound = a.binders(node);
                let mut children: smallvec::SmallVec<[ExprId; 4]> = smallvec::SmallVec::new();
                a.for_each_child(e, |c| children.push(c));
                let mut sets: smallvec::SmallVec<[Rc<[Var]>; 4]> = smallvec::SmallVec::new();
                for c in children {
                    let s = self.of(a, c);
                    if !s.is_empty() {
                        sets.push(s);
                    }
                }
                match sets.len() {
                    0 => Rc::from([]),
                    // One child's set with no binder of the node in it: shared.
                    1 if !bound.iter().any(|x| sets[0].binary_search(x).is_ok()) => {
                        sets.pop().expect("one set")
                    }
                    _ => union(sets.iter().flat_map(|s| s.iter().copied()), &bound),
                }
            }
        }
    }
}

/// The sorted set of `vars` without those of `except`.
fn union(vars: impl IntoIterator<Item = Var>, except: &[Var]) -> Rc<[Var]> {
    let mut out: Vec<Var> = vars.into_iter().filter(|v| !except.contains(v)).collect();
    out.sort_unstable();
    out.dedup();
    Rc::from(out)
}
