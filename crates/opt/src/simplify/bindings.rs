//! The substitution and the bindings the pass emits: what each variable of the input
//! stands for (a simplified term, a term copied at each use, or a suspended continuation
//! inlined at its only use), `let` chains with let-floating and tuple splitting, the
//! sweep of dead bindings, and the scopes rules simplify sub-terms in.

use unfad_syntax::{Arena, ExprId, Kids, Node, Var};

use super::{Simplifier, Vars};

/// What a variable stands for during the pass.
#[derive(Copy, Clone, Debug)]
pub(super) enum Sub {
    /// An already simplified term (a variable, a constant, a tuple of those).
    Done(ExprId),
    /// An already simplified term with functions inside (a map that only rearranges its
    /// elements): each use gets a copy with fresh binders, so that binders stay unique.
    Copied(ExprId),
    /// A lambda not yet simplified, to be inlined at its only use.
    Suspended(ExprId),
}

/// A table by variable: the variables of an arena are numbered densely, so a vector
/// indexed by number is cheaper than hashing for the tables every node visits.
pub(super) struct ByVar<T> {
    slots: Vec<Option<T>>,
}

impl<T: Clone> ByVar<T> {
    /// Room for the variables of an arena with `n` of them (more grow the table).
    pub(super) fn with_room(n: usize) -> Self {
        ByVar {
            slots: Vec::with_capacity(n + n / 2),
        }
    }

    pub(super) fn get(&self, v: &Var) -> Option<&T> {
        self.slots.get(v.index()).and_then(Option::as_ref)
    }

    pub(super) fn insert(&mut self, v: Var, x: T) -> Option<T> {
        if v.index() >= self.slots.len() {
            self.slots.resize(v.index() + 1, None);
        }
        self.slots[v.index()].replace(x)
    }

    pub(super) fn remove(&mut self, v: &Var) -> Option<T> {
        self.slots.get_mut(v.index()).and_then(Option::take)
    }
}

/// A binding emitted by the pass.
pub(super) enum Binding {
    One(Var, ExprId),
    Many(Vars, ExprId),
}

impl Simplifier<'_> {
    /// Simplify `e` in a scope of its own: bindings made inside are not available after.
    pub(super) fn scoped(&mut self, e: ExprId) -> ExprId {
        let m = self.mark();
        let r = self.simplify(e);
        self.pop_to(m);
        r
    }

    /// Simplify `e` with extra substitutions (used by rules that specialise a binder body).
    /// The rewrites inside are not counted: the rule counts one if it applies, and a rule
    /// that tries and does not apply has changed nothing (counting them kept a pass that
    /// changed nothing from being a fixed point). The substitutions hold for `e` only:
    /// what the variables stood for before is restored after (a rule that specialises
    /// one body several times, a fold's function once per component, must not find the
    /// last specialisation's parameter in place of its own).
    pub(super) fn simplify_with(&mut self, e: ExprId, subs: &[(Var, ExprId)]) -> ExprId {
        let saved: Vec<(Var, Option<Sub>)> = subs
            .iter()
            .map(|&(v, r)| (v, self.subst.insert(v, Sub::Done(r))))
            .collect();
        let rewrites = self.rewrites;
        let r = self.scoped(e);
        self.rewrites = rewrites;
        for (v, old) in saved.into_iter().rev() {
            match old {
                Some(s) => self.subst.insert(v, s),
                None => self.subst.remove(&v),
            };
        }
        r
    }

    /// The output variable for binder `x`: `x` itself the first time, a fresh copy after.
    pub(super) fn bind_var(&mut self, x: Var) -> Var {
        if self.emitted.insert(x, ()).is_none() {
            x
        } else {
            let y = self.arena.clone_var(x);
            self.emitted.insert(y, ());
            if let Some(sh) = self.shapes.get(&x).cloned() {
                self.set_shape(y, sh);
            }
            let ey = self.var(y);
            self.subst.insert(x, Sub::Done(ey));
            y
        }
    }

    /// The term a variable bound by `let` in this pass's output stands for.
    pub(super) fn definition(&self, v: Var) -> Option<ExprId> {
        self.defs.get(&v).copied()
    }

    pub(super) fn wrap(&mut self, mut chain: Vec<Binding>, mut body: ExprId) -> ExprId {
        while let Some(b) = chain.pop() {
            body = match b {
                Binding::One(x, r) => self.mk(Node::Let(x, r, body)),
                Binding::Many(xs, r) => {
                    let l = self.arena.var_list(&xs);
                    self.mk(Node::LetTuple(l, r, body))
                }
            };
        }
        self.chains.push(chain);
        body
    }

    /// An empty chain of bindings (one given back by [`Simplifier::wrap`] if any: chains
    /// are made and dropped for every application and `let`, and growing new ones was a
    /// large share of the pass's allocations).
    pub(super) fn chain(&mut self) -> Vec<Binding> {
        self.chains.pop().unwrap_or_default()
    }

    /// A chain of `let`s and its tail.
    pub(super) fn bindings(&mut self, e: ExprId) -> ExprId {
        let m = self.mark();
        let rewrites = self.rewrites;
        let mut out = self.chain();
        let mut cur = e;
        loop {
            match self.arena[cur] {
                Node::Let(x, rhs, body) => {
                    self.bind_one(x, rhs, &mut out);
                    cur = body;
                }
                Node::LetTuple(xs, rhs, body) => {
                    let xs: Vars = self.arena.vars_of(xs).into();
                    self.bind_tuple(&xs, rhs, &mut out);
                    cur = body;
                }
                _ => break,
            }
        }
        let mut tail = self.simplify(cur);
        self.pop_to(m);
        // `let y = e in y` is `e`.
        if let Some(Binding::One(y, r)) = out.last() {
            if self.arena[tail] == Node::Var(*y) {
                tail = *r;
                out.pop();
                self.fired();
            }
        }
        // A binding dropped (a rewrite too), or a rewrite that may have removed the last
        // use of one.
        if self.rewrites > rewrites && !out.is_empty() {
            self.sweep_dead(&mut out, tail);
        }
        self.wrap(out, tail)
    }

    /// Drop the bindings of `chain` that neither `tail` nor a binding kept after them
    /// reads: those only a dropped binding read, or whose last use a rewrite removed
    /// (otherwise the next pass would drop them, one link of the chain per pass). Binders
    /// are unique, so a mention is a use.
    pub(super) fn sweep_dead(&mut self, chain: &mut Vec<Binding>, tail: ExprId) {
        // Sets, not tables by variable and node: a chain in a loop's body is short, and
        // tables grown to the arena's size for each made long programs quadratic. A chain
        // long beside the arena (a straight-line program's) takes tables all the same,
        // whose cost its length pays for.
        let dense = 64 * chain.len() >= self.arena.node_count();
        let mut needed = Marks::new(dense, self.arena.var_count());
        let mut seen = Marks::new(dense, self.arena.node_count());
        let mut stack = Vec::new();
        let mut mark = |arena: &Arena, e: ExprId, needed: &mut Marks| {
            stack.push(e);
            while let Some(x) = stack.pop() {
                if seen.insert(x.index()) {
                    if let Node::Var(v) = arena[x] {
                        needed.insert(v.index());
                    }
                    arena.for_each_child(x, |c| stack.push(c));
                }
            }
        };
        mark(self.arena, tail, &mut needed);
        let mut keep = vec![true; chain.len()];
        for (k, b) in chain.iter().enumerate().rev() {
            let (used, rhs) = match b {
                Binding::One(x, r) => (needed.contains(x.index()), *r),
                Binding::Many(xs, r) => (xs.iter().any(|x| needed.contains(x.index())), *r),
            };
            if used {
                mark(self.arena, rhs, &mut needed);
            } else {
                keep[k] = false;
            }
        }
        let dropped = keep.iter().filter(|k| !**k).count();
        if dropped > 0 {
            self.rewrites += dropped;
            let mut k = 0;
            chain.retain(|_| {
                k += 1;
                keep[k - 1]
            });
        }
    }

    /// Process `let x = rhs` (rhs not yet simplified).
    pub(super) fn bind_one(&mut self, x: Var, rhs: ExprId, out: &mut Vec<Binding>) {
        if self.uses(x) == 0 {
            // Dead: terms are pure, so the binding goes (with whatever it would compute).
            self.fired();
            return;
        }
        match self.arena[rhs] {
            // Let normalisation: `let x = (let y = a in b) in e` is `let y = a in let x = b in e`.
            Node::Let(y, a, b) => {
                self.fired();
                self.bind_one(y, a, out);
                self.bind_one(x, b, out);
            }
            Node::LetTuple(ys, a, b) => {
                self.fired();
                let ys: Vars = self.arena.vars_of(ys).into();
                self.bind_tuple(&ys, a, out);
                self.bind_one(x, b, out);
            }
            Node::Lambda(..) if self.uses(x) == 1 => {
                self.subst.insert(x, Sub::Suspended(rhs));
            }
            _ => {
                if matches!(self.arena[rhs], Node::Lambda(..)) {
                    self.kept_function();
                }
                let r = self.simplify(rhs);
                self.bind_value(x, r, out);
            }
        }
    }

    /// Process `let (x1, ..., xk) = rhs`. On a growing stack: reverse mode nests the rest
    /// of a straight-line program in the right-hand side of each statement's `let`, as
    /// deep as the program is long.
    pub(super) fn bind_tuple(&mut self, xs: &[Var], rhs: ExprId, out: &mut Vec<Binding>) {
        unfad_syntax::with_stack(|| self.bind_tuple_here(xs, rhs, out))
    }

    fn bind_tuple_here(&mut self, xs: &[Var], rhs: ExprId, out: &mut Vec<Binding>) {
        match self.arena[rhs] {
            Node::Let(y, a, b) => {
                self.fired();
                self.bind_one(y, a, out);
                self.bind_tuple(xs, b, out);
            }
            Node::LetTuple(ys, a, b) => {
                self.fired();
                let ys: Vars = self.arena.vars_of(ys).into();
                self.bind_tuple(&ys, a, out);
                self.bind_tuple(xs, b, out);
            }
            Node::Tuple(l) if l.len() == xs.len() => {
                // `let (x, y) = (a, b)` is `let x = a in let y = b`.
                self.fired();
                let items: Kids = self.arena.exprs(l).into();
                for (&x, &i) in xs.iter().zip(&items) {
                    self.bind_one(x, i, out);
                }
            }
            _ => {
                let r = self.simplify(rhs);
                let r = self.peel(r, out);
                match self.arena[r] {
                    Node::Tuple(l) if l.len() == xs.len() => {
                        self.fired();
                        let items: Kids = self.arena.exprs(l).into();
                        for (&x, &i) in xs.iter().zip(&items) {
                            if self.uses(x) > 0 {
                                self.bind_value(x, i, out);
                            }
                        }
                    }
                    _ if self.is_trivial(r) => {
                        // `let (a, b) = p`: substitute the projections of `p`.
                        self.fired();
                        for (i, &x) in xs.iter().enumerate() {
                            let p = self.mk(Node::Proj(i as u32, r));
                            let p = self.rewrite(p);
                            self.subst.insert(x, Sub::Done(p));
                        }
                    }
                    _ => {
                        let new: Vars = xs.iter().map(|&x| self.bind_var(x)).collect();
                        out.push(Binding::Many(new, r));
                    }
                }
            }
        }
    }

    /// Move the `let`s at the top of a simplified term into `out`; returns the tail.
    pub(super) fn peel(&mut self, mut r: ExprId, out: &mut Vec<Binding>) -> ExprId {
        loop {
            match self.arena[r] {
                Node::Let(y, a, b) => {
                    self.make_available(a, y);
                    self.defs.insert(y, a);
                    out.push(Binding::One(y, a));
                    r = b;
                }
                Node::LetTuple(ys, a, b) => {
                    out.push(Binding::Many(self.arena.vars_of(ys).into(), a));
                    r = b;
                }
                _ => return r,
            }
        }
    }

    /// Bind `x` to the simplified term `r`: substitute it, split it, share it, or emit it.
    pub(super) fn bind_value(&mut self, x: Var, r: ExprId, out: &mut Vec<Binding>) {
        let r = self.peel(r, out);
        if self.is_trivial(r) {
            self.fired();
            let shape = self.shape_of(r);
            self.set_shape(x, shape);
            self.subst.insert(x, Sub::Done(r));
            return;
        }
        if !self.light && self.is_reshaping(r) {
            self.fired();
            let shape = self.shape_of(r);
            self.set_shape(x, shape);
            self.subst.insert(x, Sub::Copied(r));
            return;
        }
        // (Up to the length of the adjoints taken apart into scalars: a camera's 11.)
        let small_literal = matches!(self.arena[r], Node::Array(l)
            if l.len() <= crate::rules::literals::SMALL_ADJOINT);
        if matches!(self.arena[r], Node::Tuple(_)) || small_literal {
            // Tuple splitting: bind the components, and `x` is the tuple of their variables
            // (so for the elements of a small array literal).
            let (Node::Tuple(l) | Node::Array(l)) = self.arena[r] else {
                return;
            };
            self.fired();
            let items: Kids = self.arena.exprs(l).into();
            let mut parts = Kids::new();
            for (i, &item) in items.iter().enumerate() {
                if self.is_trivial(item) {
                    parts.push(item);
                } else if let Some(y) = self.available(item) {
                    parts.push(self.var(y));
                } else {
                    let name = format!("{}{}", self.arena.var_name(x), i);
                    let ty = self.ty(item);
                    let y = self.fresh(&name, ty);
                    let shape = self.shape_of(item);
                    self.set_shape(y, shape);
                    self.make_available(item, y);
                    self.defs.insert(y, item);
                    out.push(Binding::One(y, item));
                    parts.push(self.var(y));
                }
            }
            let t = if small_literal {
                let l = self.arena.expr_list(&parts);
                self.mk(Node::Array(l))
            } else {
                self.tuple(&parts)
            };
            let shape = self.shape_of(t);
            self.set_shape(x, shape);
            self.subst.insert(x, Sub::Done(t));
            return;
        }
        if let Some(y) = self.available(r) {
            // Common subexpression: reuse the variable already bound to it.
            self.fired();
            let ey = self.var(y);
            self.subst.insert(x, Sub::Done(ey));
            return;
        }
        let x2 = self.bind_var(x);
        let shape = self.shape_of(r);
        self.set_shape(x2, shape);
        if let Some(parts) = self.columns_of(r) {
            self.constant_columns.insert(x2, parts);
        }
        self.make_available(r, x2);
        self.defs.insert(x2, r);
        out.push(Binding::One(x2, r));
    }
}

/// A set of indices (of nodes or variables): hashed, or a bit per index where most
/// indices will be in it.
enum Marks {
    Hashed(crate::fast_hash::FastSet<usize>),
    Bits(Vec<u64>),
}

impl Marks {
    fn new(dense: bool, size: usize) -> Marks {
        if dense {
            Marks::Bits(vec![0; size.div_ceil(64)])
        } else {
            Marks::Hashed(Default::default())
        }
    }

    /// Add `i`; whether it was new.
    fn insert(&mut self, i: usize) -> bool {
        match self {
            Marks::Hashed(set) => set.insert(i),
            Marks::Bits(bits) => {
                if i / 64 >= bits.len() {
                    bits.resize(i / 64 + 1, 0);
                }
                let (w, b) = (i / 64, 1u64 << (i % 64));
                let new = bits[w] & b == 0;
                bits[w] |= b;
                new
            }
        }
    }

    fn contains(&self, i: usize) -> bool {
        match self {
            Marks::Hashed(set) => set.contains(&i),
            Marks::Bits(bits) => bits
                .get(i / 64)
                .is_some_and(|w| w & (1u64 << (i % 64)) != 0),
        }
    }
}
