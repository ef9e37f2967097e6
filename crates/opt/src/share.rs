//! Sharing the dear part of elementwise bodies between the loops of a `let` chain.
//!
//! A gradient recomputes what the primal computed: `logsumexp`'s gradient sums
//! `exp(x - m)` over `x` for the value, again for the adjoint of `m`, and again for the
//! softmax; these loops follow each other (each needs a scalar the previous one made), so
//! they cannot run as one. When a non-linear term of the elements (`exp(x - m)`, after
//! `let`s inside the bodies are substituted and up to the names of the parameters) occurs
//! in loops over the same arrays in two statements of a chain or more, it is computed once
//! into an array bound before the first, `E = map (x. exp(x - m)) X`, and each loop reads
//! its element instead: `map (x. ... exp(x - m) ...) X` becomes
//! `map2 (x, e. ... e ...) X E`. Reading an element costs less than any non-linear
//! operation; loops of one statement are not shared (the code generator runs them as one
//! loop and computes the term once there).
//!
//! Loops of the elements that cost many times the reals they make (a row's dot products
//! with every component of a mixture) are shared likewise, also between the loops of one
//! statement, since the code generator does not merge the loops inside a fused loop.
//!
//! Only loops that run whenever their statement does are counted (not those inside a
//! branch or a function argument), so that `E` is never computed for nothing; the rewrite
//! applies to every loop of the statements from the first one on. Function arguments are
//! chains of their own and are treated alike. Loops over the same component of a tuple
//! bound outside the chain (`snd r`, where `r` is an element of arrays that reverse mode
//! zipped) are loops over one array.

use unfad_syntax::fast_hash::FastSet as HashSet;

use unfad_syntax::{with_stack, Arena, ExprId, Func, Kids, Node, Type, Var};

use crate::expand::{expand, replace_expansion, Memo};
use crate::fast_hash::FastMap as HashMap;
use crate::simplify::{RuleCx, Simplifier};

/// Share the non-linear terms of loops over the same arrays between the statements of
/// every `let` chain of `func`.
///
/// Then once more with the dot products of rows inside loops' functions taken out of
/// their maps (`fission::split_nested_dots`): a mixture's value and adjoint compute `L_c
/// z` in maps of different bodies, a loop of their elements once named. Not first: where
/// the dot product is part of a larger shared term (a layer's `tanh(dot(row, x) + b)`,
/// which the adjoint reads from the value's map), naming it first would share the smaller
/// term and lose the larger. Kept only where the second round shares something (the
/// simplifier fuses the maps again otherwise).
pub fn share_elementwise(arena: &mut Arena, func: &Func) -> Func {
    if !crate::cost::has_nonlinear(arena, func.body) && !nested_loop(arena, func.body) {
        return func.clone();
    }
    let (first, _) = share_once(arena, func, false);
    let split = crate::fission::split_nested_dots(arena, &first);
    if split.body == first.body {
        return first;
    }
    let (second, shared) = share_once(arena, &split, true);
    if shared {
        second
    } else {
        first
    }
}

/// One round of [`share_elementwise`]; with `maps_only`, the terms shared are maps (of
/// the elements of other loops) alone, in the chains of loops' functions: the dot
/// products that the round after `split_nested_dots` names are shared as maps over the
/// rows, per iteration of the loop around, and a dot product that loops over the rows
/// themselves compute is left for the passes after (a layer's adjoint reads the value's
/// `tanh` of it, which sharing the dot product would lose). The result, and whether it
/// shared a term.
fn share_once(arena: &mut Arena, func: &Func, maps_only: bool) -> (Func, bool) {
    let mut pass = Simplifier::new(arena, func);
    let mut cx = pass.rule_cx();
    let mut sh = Sharer {
        placeholders: HashMap::default(),
        made: HashSet::default(),
        terms: HashMap::default(),
        offers: HashMap::default(),
        no_offers: std::rc::Rc::from([]),
        maps_only,
        shared: false,
        depth: 0,
    };
    let body = sh.scope(&mut cx, func.body);
    let f = Func {
        body,
        ..func.clone()
    };
    (f, sh.shared)
}

/// Arrays made per chain at most.
const MAX_SHARED: usize = 8;

struct Sharer {
    /// Stand-ins, in expansions, for the elements of each array loops run over.
    placeholders: HashMap<Var, Var>,
    /// The arrays this pass made.
    made: HashSet<Var>,
    /// What the expansion of each loop met found, by its node (a loop the rounds leave
    /// alone keeps its id, and is not expanded again).
    terms: HashMap<ExprId, LoopTerms>,
    /// What each statement offers to share, by its expression: the rounds of a chain
    /// change few statements, and finding the offers of all of them again each round
    /// made a long chain of loops cost several passes over it.
    offers: HashMap<ExprId, std::rc::Rc<[Offer]>>,
    no_offers: std::rc::Rc<[Offer]>,
    /// Share only loops that are maps (see [`share_once`]).
    maps_only: bool,
    /// Whether a term was shared.
    shared: bool,
    /// How many loops' functions the chain being shared is in.
    depth: usize,
}

/// A term one statement's loops could share: its key, the arrays it reads, the loop it is
/// in, its size, and for a loop, the occurrence as written (see [`Candidate`]).
struct Offer {
    key: ExprId,
    arrays: Vec<Var>,
    loop_node: ExprId,
    size: usize,
    written: Option<(ExprId, Vec<Var>, Vec<Option<Var>>)>,
}

/// The expansion of a loop's body: its dear terms that may be shared (each as its
/// expansion, the key, as written, and whether it is a loop), and the expansions of all
/// its subterms (a term whose expansion is none of them does not occur in the loop).
struct LoopTerms {
    shareable: Vec<(ExprId, ExprId, bool)>,
    all: HashSet<ExprId>,
    /// The expansion's environment and memo, for replacing terms in the body.
    env: HashMap<Var, ExprId>,
    memo: Memo,
}

/// One statement of a chain: `let x = rhs`, `let (xs) = rhs`, or the chain's result.
#[derive(Clone, Copy)]
enum Stmt {
    One(Var, ExprId),
    Many(unfad_syntax::VarList, ExprId),
    Tail(ExprId),
}

impl Stmt {
    fn expr(self) -> ExprId {
        match self {
            Stmt::One(_, e) | Stmt::Many(_, e) | Stmt::Tail(e) => e,
        }
    }

    fn with(self, e: ExprId) -> Stmt {
        match self {
            Stmt::One(x, _) => Stmt::One(x, e),
            Stmt::Many(xs, _) => Stmt::Many(xs, e),
            Stmt::Tail(_) => Stmt::Tail(e),
        }
    }
}

/// A `map` or `map2`: its parameters, body and operands (the variables among them).
struct Loop {
    node: ExprId,
    params: Vec<Var>,
    body: ExprId,
    operands: Vec<ExprId>,
    vars: Vec<Option<Var>>,
}

/// A term worth sharing: its expansion over the placeholders of the arrays it reads, and
/// the statements it occurs in.
struct Candidate {
    key: ExprId,
    /// The arrays whose elements it reads.
    arrays: Vec<Var>,
    statements: Vec<usize>,
    /// For a loop, one occurrence as written, with the parameters of its loop and their
    /// arrays.
    written: Option<(ExprId, Vec<Var>, Vec<Option<Var>>)>,
}

impl Sharer {
    /// The stand-in for the elements of the array `v`.
    fn placeholder(&mut self, cx: &mut RuleCx, v: Var) -> Var {
        if let Some(&p) = self.placeholders.get(&v) {
            return p;
        }
        let ty = match cx.arena().var_type(v) {
            Some(Type::Array(_, t)) => Some((**t).clone()),
            _ => None,
        };
        let p = cx.fresh("elem", ty);
        self.placeholders.insert(v, p);
        p
    }

    /// The loop `e`, if it is a `map` or `map2`.
    fn as_loop(&self, cx: &RuleCx, e: ExprId) -> Option<Loop> {
        let (f, operands) = match cx.arena()[e] {
            Node::Map(f, a) => (f, vec![a]),
            Node::Map2(f, a, b) => (f, vec![a, b]),
            _ => return None,
        };
        let vars = operands
            .iter()
            .map(|&o| match cx.arena()[o] {
                Node::Var(v) => Some(v),
                _ => None,
            })
            .collect();
        let (ps, body) = cx.arena().lambda_parts(f)?;
        (ps.len() == operands.len()).then(|| Loop {
            node: e,
            params: ps.to_vec(),
            body,
            operands,
            vars,
        })
    }

    /// The expansion environment of a loop: each parameter over a variable stands for
    /// that array's element.
    fn env_of(&mut self, cx: &mut RuleCx, l: &Loop) -> HashMap<Var, ExprId> {
        let mut env = HashMap::default();
        for (&p, o) in l.params.iter().zip(&l.vars) {
            if let Some(o) = *o {
                let ph = self.placeholder(cx, o);
                let e = cx.var(ph);
                env.insert(p, e);
            }
        }
        env
    }

    /// The chain starting at `e`, its nested functions first, with shared arrays bound.
    fn scope(&mut self, cx: &mut RuleCx, e: ExprId) -> ExprId {
        let mut stmts = Vec::new();
        let mut cur = e;
        loop {
            match cx.arena()[cur] {
                Node::Let(x, r, b) => {
                    stmts.push(Stmt::One(x, r));
                    cur = b;
                }
                Node::LetTuple(xs, r, b) => {
                    stmts.push(Stmt::Many(xs, r));
                    cur = b;
                }
                _ => break,
            }
        }
        stmts.push(Stmt::Tail(cur));
        // Loops over a component of a tuple (`snd r`, where `r` is an element of zipped
        // arrays) run over a variable bound first, so that they are seen to run over the
        // same array; kept only if something is shared (the passes after this substitute
        // those variables back).
        let original = stmts.clone();
        let named = self.name_components(cx, &mut stmts);
        // Share the largest term first, while there are some (each round removes the
        // occurrences it shares; the bound is a safeguard); then the chains of the
        // functions inside, which the arrays made here may have changed.
        let mut shared = false;
        for _ in 0..MAX_SHARED {
            match self.best(cx, &stmts) {
                Some(c) if self.apply(cx, &mut stmts, &c) => {
                    shared = true;
                    self.shared = true;
                }
                _ => break,
            }
        }
        if named && !shared {
            stmts = original;
        }
        let mut changed = shared;
        for st in stmts.iter_mut() {
            let inner = self.functions(cx, st.expr(), &mut HashMap::default());
            changed |= inner != st.expr();
            *st = st.with(inner);
        }
        // Nothing shared here or inside: the chain as it was, not a copy of it (which the
        // pipeline would simplify again for nothing).
        if !changed {
            return e;
        }
        let mut out = match stmts.pop() {
            Some(Stmt::Tail(t)) => t,
            _ => return e,
        };
        for st in stmts.into_iter().rev() {
            out = match st {
                Stmt::One(x, r) => cx.arena_mut().add(Node::Let(x, r, out)),
                Stmt::Many(xs, r) => cx.arena_mut().add(Node::LetTuple(xs, r, out)),
                Stmt::Tail(_) => out,
            };
        }
        out
    }

    /// Bind, before the chain `stmts`, every component of a tuple variable bound outside
    /// it that loops outside function arguments run over, and make those loops run over
    /// the new variables. Whether any was bound.
    fn name_components(&mut self, cx: &mut RuleCx, stmts: &mut Vec<Stmt>) -> bool {
        if !stmts
            .iter()
            .any(|st| loops_over_components(cx.arena(), st.expr()))
        {
            return false;
        }
        let mut inside = HashSet::default();
        for st in stmts.iter() {
            if let Stmt::One(x, _) = st {
                inside.insert(*x);
            }
            if let Stmt::Many(xs, _) = st {
                inside.extend(cx.arena().vars_of(*xs));
            }
            inside.extend(bound_inside(cx.arena(), st.expr()));
        }
        let mut names: Vec<(ExprId, Var)> = Vec::new();
        let mut done = HashMap::default();
        for st in stmts.iter_mut() {
            let e = self.component_loops(cx, st.expr(), &inside, &mut names, &mut done);
            *st = st.with(e);
        }
        let named = !names.is_empty();
        for (path, v) in names.into_iter().rev() {
            stmts.insert(0, Stmt::One(v, path));
        }
        named
    }

    /// `e` with the loops over components of tuples (see [`Sharer::name_components`])
    /// running over their names instead, outside function arguments.
    fn component_loops(
        &mut self,
        cx: &mut RuleCx,
        e: ExprId,
        inside: &HashSet<Var>,
        names: &mut Vec<(ExprId, Var)>,
        done: &mut HashMap<ExprId, ExprId>,
    ) -> ExprId {
        memoized(done, e, |done| {
            let node = cx.arena()[e];
            if matches!(node, Node::Lambda(..)) {
                return e;
            }
            let node = with_kids(cx, node, |cx, k| {
                self.component_loops(cx, k, inside, names, done)
            });
            let node = match node {
                Node::Map(f, a) => Node::Map(f, self.component_name(cx, a, inside, names)),
                Node::Map2(f, a, b) => {
                    let a = self.component_name(cx, a, inside, names);
                    Node::Map2(f, a, self.component_name(cx, b, inside, names))
                }
                other => other,
            };
            cx.arena_mut().rebuild(e, node)
        })
    }

    /// The variable naming `a` if it is a component of a tuple variable bound outside the
    /// chain (made on first use), else `a`.
    fn component_name(
        &mut self,
        cx: &mut RuleCx,
        a: ExprId,
        inside: &HashSet<Var>,
        names: &mut Vec<(ExprId, Var)>,
    ) -> ExprId {
        match component_root(cx.arena(), a) {
            Some(v) if !inside.contains(&v) => {}
            _ => return a,
        }
        if let Some(&(_, v)) = names.iter().find(|(p, _)| same_path(cx.arena(), *p, a)) {
            return cx.var(v);
        }
        let ty = cx.ty(a);
        let v = cx.fresh("c", ty);
        names.push((a, v));
        cx.var(v)
    }

    /// `e` with the body of every function argument in it processed as a chain.
    fn functions(
        &mut self,
        cx: &mut RuleCx,
        e: ExprId,
        done: &mut HashMap<ExprId, ExprId>,
    ) -> ExprId {
        memoized(done, e, |done| {
            let node = cx.arena()[e];
            let new = match node {
                Node::Lambda(ps, b) => {
                    self.depth += 1;
                    let body = self.scope(cx, b);
                    self.depth -= 1;
                    Node::Lambda(ps, body)
                }
                _ => with_kids(cx, node, |cx, k| self.functions(cx, k, done)),
            };
            cx.arena_mut().rebuild(e, new)
        })
    }

    /// The loops over variables that run whenever `e` is evaluated (not inside branches
    /// or function arguments).
    fn strict_loops(&self, cx: &RuleCx, e: ExprId, out: &mut Vec<Loop>) {
        with_stack(|| {
            let node = cx.arena()[e];
            if let Some(l) = self.as_loop(cx, e) {
                out.push(l);
            }
            let kids = cx.arena().node_children(node);
            for (i, k) in kids.into_iter().enumerate() {
                let conditional = match node {
                    Node::Lambda(..) => true,
                    Node::If(..) | Node::And(..) | Node::Or(..) => i > 0,
                    _ => false,
                };
                if !conditional {
                    self.strict_loops(cx, k, out);
                }
            }
        })
    }

    /// The expansion of loop `l`'s body (made once per loop node).
    fn loop_terms(&mut self, cx: &mut RuleCx, l: &Loop) -> &LoopTerms {
        if !self.terms.contains_key(&l.node) {
            let found = self.expand_loop(cx, l);
            self.terms.insert(l.node, found);
        }
        &self.terms[&l.node]
    }

    fn expand_loop(&mut self, cx: &mut RuleCx, l: &Loop) -> LoopTerms {
        // Expanding the body binds its `let`s in `env` for the terms inside.
        let mut env = self.env_of(cx, l);
        let mut memo = HashMap::default();
        expand(cx, l.body, &mut env, &mut memo);
        let all = memo.values().copied().collect();
        let mut terms = Vec::new();
        dear_terms(cx.arena(), l.body, &mut terms);
        let inner = bound_inside(cx.arena(), l.body);
        let mut shareable = Vec::new();
        for t in terms {
            // A loop is shared as it is written (its expansion would compute the body's
            // `let`s it reads again, once per use), with the `let`s of the body's chain
            // it reads, if they are cheap beside it.
            let is_loop = !is_nonlinear_op(cx.arena()[t]);
            let mut written = t;
            if is_loop {
                if !worth_storing(cx, t) {
                    continue;
                }
                let reads: Vec<Var> = cx
                    .arena()
                    .free_vars(t)
                    .into_iter()
                    .filter(|v| inner.contains(v))
                    .collect();
                if !reads.is_empty() {
                    match with_lets(cx, l.body, t, reads) {
                        Some(w) => written = w,
                        None => continue,
                    }
                }
            }
            let key = expand(cx, t, &mut env, &mut memo);
            shareable.push((key, written, is_loop));
        }
        LoopTerms {
            shareable,
            all,
            env,
            memo,
        }
    }

    /// The offers of the statement whose expression is `e` (found once, see
    /// [`Sharer::offers`]): the shareable terms of its loops outside function arguments
    /// and branches, which read the arrays of their loop and nothing bound inside `e`.
    fn offers_of(&mut self, cx: &mut RuleCx, e: ExprId) -> std::rc::Rc<[Offer]> {
        if let Some(o) = self.offers.get(&e) {
            return o.clone();
        }
        let mut loops = Vec::new();
        self.strict_loops(cx, e, &mut loops);
        if loops.is_empty() {
            // No loop (most statements of straight-line code): nothing to offer, found
            // again at no cost rather than kept.
            return self.no_offers.clone();
        }
        // Variables bound inside the statement are not in scope before it.
        let local = bound_inside(cx.arena(), e);
        let mut out = Vec::new();
        for l in loops {
            for (key, t, is_loop) in self.loop_terms(cx, &l).shareable.clone() {
                let free = cx.arena().free_vars(key);
                if free.iter().any(|v| local.contains(v)) {
                    continue;
                }
                let arrays: Vec<Var> = l
                    .vars
                    .iter()
                    .flatten()
                    .copied()
                    .filter(|o| free.contains(&self.placeholders[o]))
                    .collect();
                if arrays.is_empty() {
                    continue;
                }
                out.push(Offer {
                    key,
                    arrays,
                    loop_node: l.node,
                    size: cx.arena().tree_size(key),
                    written: is_loop.then(|| (t, l.params.clone(), l.vars.clone())),
                });
            }
        }
        let out: std::rc::Rc<[Offer]> = out.into();
        self.offers.insert(e, out.clone());
        out
    }

    /// The largest non-linear term of the elements of the same arrays that loops of two
    /// statements or more compute.
    fn best(&mut self, cx: &mut RuleCx, stmts: &[Stmt]) -> Option<Candidate> {
        /// A term's occurrences so far: where its first offer is (statement, offer), the
        /// statements and loops it occurs in. The winner alone becomes a [`Candidate`].
        struct Seen {
            first: (usize, usize),
            statements: Vec<usize>,
            loops: Vec<ExprId>,
            size: usize,
            written: bool,
            /// Whether the term is a map (after the `let`s it carries).
            map: bool,
        }
        let mut offers = Vec::with_capacity(stmts.len());
        let mut found: HashMap<ExprId, Seen> = HashMap::default();
        for (k, st) in stmts.iter().enumerate() {
            if matches!(st, Stmt::One(v, _) if self.made.contains(v)) {
                offers.push(self.no_offers.clone());
                continue;
            }
            let of_k = self.offers_of(cx, st.expr());
            for (i, o) in of_k.iter().enumerate() {
                let c = found.entry(o.key).or_insert_with(|| Seen {
                    first: (k, i),
                    statements: Vec::new(),
                    loops: Vec::new(),
                    size: o.size,
                    written: o.written.is_some(),
                    map: o.written.as_ref().is_some_and(|(t, ..)| {
                        let mut t = *t;
                        while let Node::Let(_, _, rest) = cx.arena()[t] {
                            t = rest;
                        }
                        matches!(cx.arena()[t], Node::Map(..) | Node::Map2(..))
                    }),
                });
                if !c.statements.contains(&k) {
                    c.statements.push(k);
                }
                if !c.loops.contains(&o.loop_node) {
                    c.loops.push(o.loop_node);
                }
            }
            offers.push(of_k);
        }
        let best = found
            .into_values()
            // A loop in loops of one statement too: the code generator runs those loops as
            // one, but not the loops inside them.
            .filter(|c| c.statements.len() >= 2 || (c.written && c.loops.len() >= 2))
            // Per iteration of a loop only: at the top, the map would hold a value per
            // element of the outer array (a perceptron's hidden layer for every point,
            // where the loops of its value and its gradient should run as one).
            .filter(|c| !self.maps_only || (c.map && self.depth > 0))
            .max_by_key(|c| (c.size, std::cmp::Reverse(c.statements[0])))?;
        let o = &offers[best.first.0][best.first.1];
        Some(Candidate {
            key: o.key,
            arrays: o.arrays.clone(),
            statements: best.statements,
            written: o.written.clone(),
        })
    }

    /// Make the loops of the statements from `c`'s first one on read its term from an
    /// array: the one the first statement binds if that is exactly the term's array, else
    /// one bound before it. False if nothing changed.
    fn apply(&mut self, cx: &mut RuleCx, stmts: &mut Vec<Stmt>, c: &Candidate) -> bool {
        let first = c.statements[0];
        let existing = match stmts[first] {
            Stmt::One(x, r) => self.as_loop(cx, r).and_then(|l| {
                let env = self.env_of(cx, &l);
                let whole = expand(cx, l.body, &mut env.clone(), &mut HashMap::default());
                let vars: Vec<Var> = l.vars.iter().flatten().copied().collect();
                (whole == c.key && l.vars.len() == vars.len() && vars == c.arrays).then_some(x)
            }),
            _ => None,
        };
        let (shared, from) = match existing {
            Some(x) => (x, first + 1),
            None => {
                let Some(array) = self.array_of(cx, c) else {
                    return false;
                };
                let ty = cx.ty(array);
                let e_var = cx.fresh("E", ty);
                stmts.insert(first, Stmt::One(e_var, array));
                (e_var, first + 1)
            }
        };
        self.made.insert(shared);
        let mut changed = existing.is_none();
        for st in stmts.iter_mut().skip(from) {
            // A loop over `c`'s arrays mentions them: a statement that does not has none.
            if !cx.arena().mentions_any(st.expr(), &c.arrays) {
                continue;
            }
            let mut done = HashMap::default();
            let new = self.read_shared(cx, st.expr(), c, shared, &mut done);
            changed |= new != st.expr();
            *st = st.with(new);
        }
        changed
    }

    /// `map (x. t) X` (or `map2` over two arrays) for the term of `c`.
    fn array_of(&mut self, cx: &mut RuleCx, c: &Candidate) -> Option<ExprId> {
        let mut sub = HashMap::default();
        let mut params = Vec::new();
        for &a in &c.arrays {
            let ph = self.placeholder(cx, a);
            let p = cx.fresh("x", cx.arena().var_type(ph).cloned());
            let ep = cx.var(p);
            sub.insert(ph, ep);
            if let Some((_, ps, vars)) = &c.written {
                for (&q, v) in ps.iter().zip(vars) {
                    if *v == Some(a) {
                        sub.insert(q, ep);
                    }
                }
            }
            params.push(p);
        }
        let term = match &c.written {
            Some((t, ..)) => *t,
            None => c.key,
        };
        let body = cx.arena_mut().subst(term, &sub);
        let l = cx.arena_mut().var_list(&params);
        // Fresh binders for the functions inside (the key's are stand-ins).
        let lam = cx.arena_mut().add(Node::Lambda(l, body));
        let lam = cx.arena_mut().copy_fresh(lam);
        let operands: Vec<ExprId> = c.arrays.iter().map(|&a| cx.var(a)).collect();
        Some(match operands[..] {
            [a] => cx.arena_mut().add(Node::Map(lam, a)),
            [a, b] => cx.arena_mut().add(Node::Map2(lam, a, b)),
            _ => return None,
        })
    }

    /// `e` with every loop over `c`'s arrays that computes its term reading it from the
    /// array `shared` instead.
    fn read_shared(
        &mut self,
        cx: &mut RuleCx,
        e: ExprId,
        c: &Candidate,
        shared: Var,
        done: &mut HashMap<ExprId, ExprId>,
    ) -> ExprId {
        memoized(done, e, |done| {
            let node = with_kids(cx, cx.arena()[e], |cx, k| {
                self.read_shared(cx, k, c, shared, done)
            });
            let rebuilt = cx.arena_mut().rebuild(e, node);
            self.reading(cx, rebuilt, c, shared).unwrap_or(rebuilt)
        })
    }

    /// The loop `e`, reading the shared array where its body computes `c`'s term.
    fn reading(
        &mut self,
        cx: &mut RuleCx,
        e: ExprId,
        c: &Candidate,
        shared: Var,
    ) -> Option<ExprId> {
        let l = self.as_loop(cx, e)?;
        if !c.arrays.iter().all(|a| l.vars.contains(&Some(*a)))
            || !self.loop_terms(cx, &l).all.contains(&c.key)
        {
            return None;
        }
        let elem_ty = match cx.arena().var_type(shared) {
            Some(Type::Array(_, t)) => Some((**t).clone()),
            _ => None,
        };
        let ev = cx.fresh("e", elem_ty);
        let by = cx.var(ev);
        let known = self.terms.get_mut(&l.node).expect("expanded above");
        let body = replace_expansion(cx, l.body, &mut known.env, &mut known.memo, c.key, by)?;
        let es = cx.var(shared);
        // The parameters the body still reads (the others' arrays are not zipped in).
        let free = cx.arena().free_vars(body);
        let (params, operands): (Vec<Var>, Vec<ExprId>) = l
            .params
            .iter()
            .zip(&l.operands)
            .filter(|(p, _)| free.contains(p))
            .map(|(&p, &o)| (p, o))
            .unzip();
        let (params, operands) = if params.is_empty() {
            (vec![l.params[0]], vec![l.operands[0]])
        } else {
            (params, operands)
        };
        let out = match params[..] {
            [p] => {
                let ps = cx.arena_mut().var_list(&[p, ev]);
                let lam = cx.arena_mut().add(Node::Lambda(ps, body));
                let lam = cx.arena_mut().copy_fresh(lam);
                cx.arena_mut().add(Node::Map2(lam, operands[0], es))
            }
            [p, q] => {
                // map2 (r, e. body[r.0/p, r.1/q]) (map2 (p, q. (p, q)) A B) E
                let tp = cx.arena().var_type(p).cloned()?;
                let tq = cx.arena().var_type(q).cloned()?;
                let r = cx.fresh("r", Some(Type::Tuple(vec![tp, tq].into())));
                let er = cx.var(r);
                let (r0, r1) = (cx.arena_mut().proj(0, er), cx.arena_mut().proj(1, er));
                let sub: unfad_syntax::fast_hash::FastMap<Var, ExprId> =
                    [(p, r0), (q, r1)].into_iter().collect();
                let body = cx.arena_mut().subst(body, &sub);
                let ps = cx.arena_mut().var_list(&[r, ev]);
                let lam = cx.arena_mut().add(Node::Lambda(ps, body));
                let lam = cx.arena_mut().copy_fresh(lam);
                let (p2, q2) = (cx.arena_mut().clone_var(p), cx.arena_mut().clone_var(q));
                let (ep2, eq2) = (cx.var(p2), cx.var(q2));
                let pair = cx.arena_mut().tuple(&[ep2, eq2]);
                let zl = cx.arena_mut().var_list(&[p2, q2]);
                let zip = cx.arena_mut().add(Node::Lambda(zl, pair));
                let zipped = cx
                    .arena_mut()
                    .add(Node::Map2(zip, operands[0], operands[1]));
                cx.arena_mut().add(Node::Map2(lam, zipped, es))
            }
            _ => return None,
        };
        Some(out)
    }
}

/// `walk(done)`, the image of `e` under a memoized walk, made once.
fn memoized(
    done: &mut HashMap<ExprId, ExprId>,
    e: ExprId,
    walk: impl FnOnce(&mut HashMap<ExprId, ExprId>) -> ExprId,
) -> ExprId {
    if let Some(&r) = done.get(&e) {
        return r;
    }
    let r = with_stack(|| walk(done));
    done.insert(e, r);
    r
}

/// `node` with each of its children `k` replaced by `f(k)`.
fn with_kids(
    cx: &mut RuleCx,
    node: Node,
    mut f: impl FnMut(&mut RuleCx, ExprId) -> ExprId,
) -> Node {
    let kids = cx.arena().node_children(node);
    let new: Kids = kids.iter().map(|&k| f(cx, k)).collect();
    let mut it = new.into_iter();
    cx.arena_mut()
        .map_children(node, |_, _| it.next().expect("one per child"))
}

/// `t` (a loop in the function body `body`) under the `let`s of `body`'s chain that it
/// reads, `reads` (bound inside `body`), transitively: `let z = x - m in map (row. dot(row,
/// z)) L`. `None` if it reads a variable bound elsewhere in `body` (a function's
/// parameter, a `let` inside an operand), or if those `let`s cost more than a quarter of
/// `t` (the shared array computes them again).
fn with_lets(cx: &mut RuleCx, body: ExprId, t: ExprId, reads: Vec<Var>) -> Option<ExprId> {
    let mut chain = Vec::new();
    let mut e = body;
    while let Node::Let(x, r, rest) = cx.arena()[e] {
        chain.push((x, r));
        e = rest;
    }
    let chain_vars: HashSet<Var> = chain.iter().map(|&(v, _)| v).collect();
    let mut wanted: HashSet<Var> = reads.into_iter().collect();
    let mut needed = Vec::new();
    // Last first: a `let` reads only those before it.
    for &(x, r) in chain.iter().rev() {
        if wanted.remove(&x) {
            needed.push((x, r));
            wanted.extend(
                cx.arena()
                    .free_vars(r)
                    .into_iter()
                    .filter(|v| chain_vars.contains(v)),
            );
        }
    }
    if !wanted.is_empty() {
        return None;
    }
    let sizes = |_: &str| Some(10);
    let cost = |cx: &RuleCx, e: ExprId| crate::cost::cost_of(cx.arena(), e, &sizes).total();
    let lets: u64 = needed.iter().map(|&(_, r)| cost(cx, r)).sum();
    if lets.saturating_mul(4) > cost(cx, t) {
        return None;
    }
    // `needed` is last first: wrap from the innermost.
    let mut out = t;
    for &(x, r) in &needed {
        out = cx.arena_mut().let_(x, r, out);
    }
    Some(out)
}

/// The dear terms in `e`: non-linear operations and loops, outside function arguments.
fn dear_terms(arena: &Arena, e: ExprId, out: &mut Vec<ExprId>) {
    with_stack(|| {
        let node = arena[e];
        if matches!(node, Node::Lambda(..)) {
            return;
        }
        let dear = is_nonlinear_op(node) || node.is_array_op();
        if dear && !out.contains(&e) {
            out.push(e);
        }
        arena.for_each_child(e, |k| dear_terms(arena, k, out));
    })
}

/// Whether a loop computes much more than it makes (at sizes of 10): storing its result
/// and reading it back is then cheaper than computing it again. The cost model's
/// operations count, a non-linear one (a run-time call) as many moves.
fn worth_storing(cx: &mut RuleCx, t: ExprId) -> bool {
    /// Weighted operations per real of the result.
    const RATIO: u64 = 16;
    /// The weight of a non-linear operation.
    const NLOP: u64 = 16;
    let Some(ty) = cx.ty(t) else {
        return false;
    };
    let sizes = |_: &str| Some(10);
    let leaves = ty.leaf_count(&sizes).unwrap_or(u64::MAX);
    let c = crate::cost::cost_of(cx.arena(), t, &sizes);
    let cost = c.total().saturating_add(c.nlops.saturating_mul(NLOP - 1));
    cost >= RATIO.saturating_mul(leaves)
}

/// A non-linear operator at the root of a node.
fn is_nonlinear_op(node: Node) -> bool {
    use unfad_syntax::{BinOp, UnOp};
    match node {
        Node::Op1(op, _) => !matches!(op, UnOp::Neg | UnOp::Abs),
        Node::Op2(op, ..) => matches!(op, BinOp::Pow | BinOp::Atan2),
        _ => false,
    }
}

/// Whether a loop runs inside the function argument of another in `e` (only those can be
/// worth storing).
fn nested_loop(arena: &Arena, e: ExprId) -> bool {
    let mut stack = vec![(e, false)];
    while let Some((x, inside)) = stack.pop() {
        let node = arena[x];
        let is_loop = node.is_array_op();
        if is_loop && inside {
            return true;
        }
        let deeper = inside || matches!(node, Node::Lambda(..));
        arena.for_each_child(x, |k| stack.push((k, deeper)));
    }
    false
}

/// Whether a loop outside function arguments in `e` runs over a projection of a variable.
fn loops_over_components(arena: &Arena, e: ExprId) -> bool {
    let is_path = |a| component_root(arena, a).is_some();
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        match arena[x] {
            Node::Lambda(..) => continue,
            Node::Map(_, a) if is_path(a) => return true,
            Node::Map2(_, a, b) if is_path(a) || is_path(b) => return true,
            _ => {}
        }
        arena.for_each_child(x, |k| stack.push(k));
    }
    false
}

/// `v` if `a` is a projection of a projection ... of the variable `v`.
fn component_root(arena: &Arena, mut a: ExprId) -> Option<Var> {
    let mut projected = false;
    while let Node::Proj(_, t) = arena[a] {
        (a, projected) = (t, true);
    }
    match arena[a] {
        Node::Var(v) if projected => Some(v),
        _ => None,
    }
}

/// Whether `a` and `b` are the same projections of the same variable.
fn same_path(arena: &Arena, mut a: ExprId, mut b: ExprId) -> bool {
    loop {
        match (arena[a], arena[b]) {
            (Node::Proj(i, x), Node::Proj(j, y)) if i == j => (a, b) = (x, y),
            (Node::Var(v), Node::Var(w)) => return v == w,
            _ => return false,
        }
    }
}

/// Every variable bound inside `e`.
fn bound_inside(arena: &Arena, e: ExprId) -> HashSet<Var> {
    let mut out = HashSet::default();
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        match arena[x] {
            Node::Let(v, ..) => {
                out.insert(v);
            }
            Node::LetTuple(vs, ..) | Node::Lambda(vs, _) => out.extend(arena.vars_of(vs)),
            _ => {}
        }
        arena.for_each_child(x, |k| stack.push(k));
    }
    out
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use crate::rules::tests::check_optimized;

    #[test]
    fn a_term_of_loops_in_two_statements_is_computed_once() {
        // log-sum-exp's shape: the sum, then a loop that needs it.
        check_optimized(
            "def f(x: [n]real, m: real) =
               let s = reduce + 0 (map (a. exp(a - m)) x) in
               map (b. exp(b - m) / s) x",
            expect![[r#"
                def f(x: [n]real, m: real): [n]real =
                  let E = map (x_1. exp(x_1 - m)) x in
                  let s = reduce + 0 E in
                  let h = 1 / s in
                  map (e. e * h) E
            "#]],
        );
        // Over two arrays, with `let`s inside the bodies and another name for the term.
        check_optimized(
            "def f(x: [n]real, y: [n]real) =
               let s = reduce + 0 (map2 (a, b. let t = a * b in sin(t) * a) x y) in
               map2 (c, d. let u = c * d in s * sin(u) + d) x y",
            expect![[r#"
                def f(x: [n]real, y: [n]real): [n]real =
                  let E = map2 (x_1, x_2. sin(x_1 * x_2)) x y in
                  let s = reduce + 0 (map2 (a, e. e * a) x E) in
                  map2 (d, e_1. s * e_1 + d) y E
            "#]],
        );
    }

    #[test]
    fn a_dear_loop_of_the_elements_is_computed_once() {
        // Each row's products with every row, in the value and in the gradient: the loop
        // costs many times the reals it makes.
        check_optimized(
            "def f(M: [n][m]real) =
               let s = sum(map (r. sum(map (c. dot(r, c)) M)) M) in
               map (r. let p = map (c. dot(r, c)) M in map (d. d * s * sum(p)) p) M",
            expect![[r#"
                def f(M: [n][m]real): [n][n]real =
                  let E = map (x. map (c. reduce + 0 (map2 * x c)) M) M in
                  let s = reduce + 0 (map (e. reduce + 0 e) E) in
                  map (e_1.
                    let h = reduce + 0 e_1 in
                    map (d. d * s * h) e_1) E
            "#]],
        );
    }

    #[test]
    fn a_dot_product_of_rows_in_two_loops_of_different_bodies_is_computed_once() {
        // A mixture's `L_c z` per component, in the value's loop (squared and summed) and
        // in the adjoint's (scaled): each a map over the rows inside a body of its own,
        // shared once the dot products are a loop of their own (`split_nested_dots`), with
        // the `let` of `z` it reads, per point (at the top, not: see `share_once`).
        check_optimized(
            "def f(X: [n][d]real, C: [k][d][d]real) =
               map (x.
                 let v = map (L. let z = map2 - x (L[0]) in sum(map2 (u, row. let y = u + dot(row, z) in y * y) z L)) C in
                 let s = sum(v) in
                 map (L. let z = map2 - x (L[0]) in map2 (u, row. (u + dot(row, z)) * s) z L) C) X",
            expect![[r#"
                def f(X: [n][d]real, C: [k][d][d]real): [n][k][d]real =
                  map (x.
                    let E =
                      map (x_1.
                        let z = map2 - x x_1[0] in
                        map (row. reduce + 0 (map2 * row z)) x_1) C
                    in
                    let s =
                      reduce + 0 (map2 (L, e.
                           reduce + 0 (map2 (z_1, e_1.
                                let y = fst z_1 - snd z_1 + e_1 in
                                y * y) (map2 (a, b. (a, b)) x L[0]) e)) C E)
                    in
                    map2 (L_1, e_2. map2 (z_2, e_3. (fst z_2 - snd z_2 + e_3) * s) (map2 (a_1, b_1. (a_1, b_1)) x L_1[0]) e_2) C E) X
            "#]],
        );
    }

    #[test]
    fn a_dear_loop_in_two_loops_of_one_statement_is_computed_once() {
        // The maximum of each row, in the value and in the gradient of a row-wise
        // log-sum-exp (one tuple: the loops over the rows run as one, not those inside).
        check_optimized(
            "def f(M: [n][m]real) =
               (sum(map (r. reduce max 0 r) M), map (r. let x = reduce max 0 r in map (t. t * x) r) M)",
            expect![[r#"
                def f(M: [n][m]real): (real, [n][m]real) =
                  let E_joint =
                    map (e.
                      let E_i = reduce max 0 e in
                      (E_i, map (t. t * E_i) e)) M
                  in
                  (reduce + 0 (map (g. fst g) E_joint), map (g_1. snd g_1) E_joint)
            "#]],
        );
    }

    #[test]
    fn loops_over_a_component_of_zipped_arrays_are_shared() {
        // `snd r` is the same array in both statements of the body (reverse mode makes
        // such zips of the primal's arrays with their adjoints).
        check_optimized(
            "def f(X: [k][n]real, c: [k]real, d: [k]real) =
               map2 (r, w. let s = sum(map (t. exp(t - fst r)) (snd r)) in
                           map (t. w * exp(t - fst r) / s) (snd r))
                    (map2 (a, x. (a, x)) c X) d",
            expect![[r#"
                def f(X: [k][n]real, c: [k]real, d: [k]real): [k][n]real =
                  map2 (r, w.
                    let E = map (x. exp(x - fst r)) (snd r) in
                    let s = reduce + 0 E in
                    let h = 1 / s in
                    map (e. w * e * h) E) (map2 (a, x_1. (a, x_1)) c X) d
            "#]],
        );
    }

    #[test]
    fn loops_of_one_statement_and_conditional_loops_are_left_alone() {
        // One statement: the code generator runs the loops as one.
        check_optimized(
            "def f(x: [n]real) = (reduce + 0 (map (a. exp(a)) x), map (b. exp(b) * 2) x)",
            expect![[r#"
                def f(x: [n]real): (real, [n]real) =
                  (reduce + 0 (map (a. exp(a)) x), map (b. exp(b) * 2) x)
            "#]],
        );
        // The second loop runs only sometimes: no array is made for the first alone.
        check_optimized(
            "def f(x: [n]real, c: real) =
               let s = reduce + 0 (map (a. exp(a)) x) in
               if c > 0 then reduce + 0 (map (b. exp(b) * b) x) else s",
            expect![[r#"
                def f(x: [n]real, c: real): real =
                  let s = reduce + 0 (map (a. exp(a)) x) in
                  if c > 0 then reduce + 0 (map (b. exp(b) * b) x) else s
            "#]],
        );
    }
}
