//! Consumers join their producer's loop: a `let`-bound `map` whose result later loops read
//! element by element computes, per element, what those loops compute of it, so that its
//! elements are never stored when nothing else reads them.
//!
//! Reverse mode makes this shape for every `map` whose elements feed several adjoints:
//! `let G = map2 (row, b. (r * r, r + r)) A B in (reduce + 0 (map (g. g.0) G), map (g. map
//! (s. g.1 * s) x) G, reduce (s, t. map2 + s t) 0s (map2 (g, row. map (s. g.1 * s) row) G A),
//! ...)`. `G` is stored, then read back by three loops; the hand-written gradient makes one
//! pass that adds each row's contributions where they go. Here the consumers' bodies become
//! components of one loop's elements, `let G2 = map2 (row, b. let g = (r * r, r + r) in
//! (g.0, map (s. g.1 * s) x, map (s. g.1 * s) row, ..)) A B`, and each consumer reads its
//! column (`map (g. g.k) G2`, `reduce op z (map (g. g.k) G2)`), which the code generator
//! writes where the result goes, or folds in the loop that makes it.
//!
//! A consumer is a `map` or `map2` whose arrays are each the producer, a loop joined
//! before it, one of the producer's arrays, an array the chain does not bind (a new array
//! of the joint loop, the consumer's `map2` having checked that its length is the
//! producer's), or a `map`, `map2`, `zeros_like` or `ones_like` of those (zips), and whose
//! function reads nothing bound at or after the producer. Joined are the `let`s binding
//! consumers, and the result's components that are consumers or joined loops, or
//! reductions of those that the code generator folds in the loop (not `max`, `min` or
//! scatters); a reduction of a column also under scales (`dv * reduce ...`, `map (s. dv *
//! s) (reduce ...)`: a batch's mean loss scales every adjoint).
//!
//! Only when nothing else reads a joined loop: a column read elsewhere would be stored,
//! and with it the joint loop's other columns, where the code generator may have
//! recomputed a cheap loop where read or folded a reduction in a loop of its own. Exact:
//! each element is computed by the same operations, and each reduction reduces the same
//! values in the same order.

use unfad_syntax::fast_hash::{FastMap as HashMap, FastSet as HashSet};
use unfad_syntax::{Arena, BinOp, ExprId, Func, Node, Var};

use crate::siblings::{
    bound_by, contains_scatter, elementwise, every_chain, rechain, same_term, unchain, Stmt,
};

/// Joins per chain at most (each joins the consumers of one producer).
const MAX_ROUNDS: usize = 8;

/// Statements of a chain at most: each is tried as a producer against those after it,
/// which is quadratic in the chain's length. Longer chains (the gradient of 400 unrolled
/// `map2`s has 800) are left as they are, so that compile time stays linear (issue 23).
const MAX_CHAIN: usize = 96;

/// Levels of `map`s, `map2`s, `zeros_like`s and `one_like`s around a consumer's arrays at
/// most (zips of zips are three).
const MAX_ZIP_DEPTH: usize = 4;

/// `let`-bound consumers joined to one producer at most. A long chain of maps would
/// otherwise become one loop whose body holds the whole chain: forward mode over it (the
/// Hessian-vector product) made terms whose sharing pass took time exponential in its
/// length (25 maps: 21 s).
const MAX_JOINED_LETS: usize = 6;

/// `func` with the consumers of its `let`-bound loops joined to them (the same term if
/// none).
pub fn join_consumers(arena: &mut Arena, func: &Func) -> Func {
    let mut memo = unfad_syntax::ExprMemo::for_arena(arena);
    let body = every_chain(arena, func.body, MAX_ROUNDS, &mut join_once, &mut memo);
    Func {
        body,
        ..func.clone()
    }
}

/// The loop being built: the producer's and its joined consumers' work per element.
struct Joint {
    /// The arrays the joint loop runs over, and the parameter each element is bound to.
    arrays: Vec<ExprId>,
    params: Vec<Var>,
    /// Per element, in order: each joined loop's element, and what it needs.
    lets: Vec<(Var, ExprId)>,
    /// The joined loops' results, by variable: the variable of their element.
    members: HashMap<Var, Var>,
    /// What the joint loop's elements hold, one component per column.
    columns: Vec<ExprId>,
    /// What the chain binds before the producer.
    chain: HashSet<Var>,
}

impl Joint {
    /// Whether `o`, an array a consumer loops over, is elementwise in the joint loop: see
    /// [`Joint::element_of`]. Whether it reads a joined loop goes into `touches`.
    fn elementwise_array(
        &self,
        arena: &Arena,
        o: ExprId,
        later: &HashSet<Var>,
        touches: &mut bool,
    ) -> bool {
        self.elementwise_array_within(arena, o, later, touches, MAX_ZIP_DEPTH)
    }

    /// [`Joint::elementwise_array`] with at most `depth` more `map`s, `map2`s, `zeros_like`s
    /// and `ones_like`s around the arrays (each level reads the free variables of what it
    /// holds: reverse mode nests hundreds of them in a long program).
    fn elementwise_array_within(
        &self,
        arena: &Arena,
        o: ExprId,
        later: &HashSet<Var>,
        touches: &mut bool,
        depth: usize,
    ) -> bool {
        let Some(reads_later) = reads(arena, o, &|v| later.contains(&v)) else {
            return false;
        };
        if !reads_later {
            // A new array must not be a loop of the chain written out: it would move into
            // the joint loop's operands, its own loop (a scan, say) with it, which
            // measured slower (gmm's gradient, 4.5%). A variable the chain binds is read
            // as it is (stored, or computed where read as before): the loops over the
            // components of a mixture read the posterior weights `dv` beside the
            // components' adjoints, and joined, the code generator adds the components'
            // contributions to the means' and the factors' adjoints where they are made
            // instead of storing every component's (gmm's gradient at d = 64: 2x faster,
            // a fifth less workspace).
            let new = !self.arrays.iter().any(|&a| same_term(arena, a, o));
            return !new
                || reads(arena, o, &|v| self.chain.contains(&v)) == Some(false)
                || matches!(arena[o], Node::Var(_));
        }
        match arena[o] {
            Node::Var(v) if self.members.contains_key(&v) => {
                *touches = true;
                true
            }
            _ if depth == 0 => false,
            Node::ZerosLike(a) | Node::OnesLike(a) => {
                self.elementwise_array_within(arena, a, later, touches, depth - 1)
            }
            Node::Map(f, a) => {
                lambda_free_of(arena, f, later)
                    && self.elementwise_array_within(arena, a, later, touches, depth - 1)
            }
            Node::Map2(f, a, b) => {
                lambda_free_of(arena, f, later)
                    && self.elementwise_array_within(arena, a, later, touches, depth - 1)
                    && self.elementwise_array_within(arena, b, later, touches, depth - 1)
            }
            _ => false,
        }
    }

    /// The element of `o` (checked by [`Joint::elementwise_array`]) at the joint loop's
    /// index: a new array of the loop's parameter, a joined loop's element, or the
    /// function of a `map` applied to the elements of its arrays.
    fn element_of(&mut self, arena: &mut Arena, o: ExprId, later: &HashSet<Var>) -> ExprId {
        // Too large to look at (`None`): one of the producer's own arrays, which read
        // nothing bound later (a consumer's such array was rejected).
        if reads(arena, o, &|v| later.contains(&v)) != Some(true) {
            if let Some(k) = self.arrays.iter().position(|&a| same_term(arena, a, o)) {
                return arena.var(self.params[k]);
            }
            let p = arena.fresh_var("e", None);
            self.arrays.push(o);
            self.params.push(p);
            return arena.var(p);
        }
        match arena[o] {
            Node::Var(v) => {
                let ev = self.members[&v];
                arena.var(ev)
            }
            Node::ZerosLike(a) => {
                let x = self.element_of(arena, a, later);
                arena.add(Node::ZerosLike(x))
            }
            Node::OnesLike(a) => {
                let x = self.element_of(arena, a, later);
                arena.add(Node::OnesLike(x))
            }
            Node::Map(..) | Node::Map2(..) => self.join(arena, o, later),
            _ => unreachable!("element_of an array elementwise_array rejects"),
        }
    }

    /// The body of the function `f` with its parameters bound to `args` by `let`s of fresh
    /// variables (the function may be shared elsewhere in the term).
    fn apply(&mut self, arena: &mut Arena, f: ExprId, args: &[ExprId]) -> ExprId {
        let (ps, body) = arena
            .lambda_parts(f)
            .map(|(p, b)| (p.to_vec(), b))
            .expect("a loop's function is a lambda");
        let mut subs = HashMap::default();
        for (&p, &a) in ps.iter().zip(args) {
            let q = arena.clone_var(p);
            self.lets.push((q, a));
            subs.insert(p, arena.var(q));
        }
        arena.subst(body, &subs)
    }

    /// Join the consumer `c` (accepted by [`consumer`], or a `map` among a consumer's
    /// arrays): its element, its function applied to its arrays' elements, as a term of
    /// the joint loop.
    fn join(&mut self, arena: &mut Arena, c: ExprId, later: &HashSet<Var>) -> ExprId {
        match arena[c] {
            Node::Map(f, a) => {
                let x = self.element_of(arena, a, later);
                self.apply(arena, f, &[x])
            }
            Node::Map2(f, a, b) => {
                let x = self.element_of(arena, a, later);
                let y = self.element_of(arena, b, later);
                self.apply(arena, f, &[x, y])
            }
            _ => unreachable!("join of a term `consumer` rejects"),
        }
    }
}

/// A fresh variable for an element of the array `x` (named after it, typed when bound).
fn element_var(arena: &mut Arena, x: Var) -> Var {
    let name = format!("{}_i", arena.var_name(x));
    arena.fresh_var(&name, None)
}

/// Whether the function `f` reads nothing in `later`.
fn lambda_free_of(arena: &Arena, f: ExprId, later: &HashSet<Var>) -> bool {
    arena.lambda_parts(f).is_some() && reads(arena, f, &|v| later.contains(&v)) == Some(false)
}

/// Whether `c` is a consumer of the joint loop: a `map` or `map2` over arrays elementwise
/// in it, at least one of which reads a joined loop, whose function reads nothing bound at
/// or after the producer and is not a loop of scatters.
fn consumer(arena: &Arena, joint: &Joint, c: ExprId, later: &HashSet<Var>) -> bool {
    let (f, arrays): (ExprId, Vec<ExprId>) = match arena[c] {
        Node::Map(f, a) => (f, vec![a]),
        Node::Map2(f, a, b) => (f, vec![a, b]),
        _ => return false,
    };
    let Some((_, body)) = arena.lambda_parts(f) else {
        return false;
    };
    if !lambda_free_of(arena, f, later) || contains_scatter(arena, body) {
        return false;
    }
    let mut touches = false;
    arrays
        .iter()
        .all(|&a| joint.elementwise_array(arena, a, later, &mut touches))
        && touches
}

/// Whether `c` only reads a component of its elements (`map (g. g.k) X`): joining only
/// such loops would rebuild the producer's elements, and a joint loop's own columns are
/// such loops.
pub(crate) fn column_read(arena: &Arena, c: ExprId) -> bool {
    let Node::Map(f, _) = arena[c] else {
        return false;
    };
    let Some((ps, body)) = arena.lambda_parts(f) else {
        return false;
    };
    let mut e = body;
    while let Node::Proj(_, inner) = arena[e] {
        e = inner;
    }
    e != body && matches!(arena[e], Node::Var(v) if ps.contains(&v))
}

/// Whether the code generator folds a reduction by `op` in the loop that makes its
/// operand's elements: a function of two parameters, neither an extremum (`max`, `min`,
/// folded apart) nor a scatter (an accumulation of its own).
fn folded_in_loop(arena: &Arena, op: ExprId) -> bool {
    let Some((ps, body)) = arena.lambda_parts(op) else {
        return false;
    };
    let extremum = match arena[body] {
        Node::Op2(BinOp::Max | BinOp::Min, a, b) => {
            matches!((arena[a], arena[b]), (Node::Var(x), Node::Var(y)) if ps.contains(&x) && ps.contains(&y))
        }
        _ => false,
    };
    ps.len() == 2 && !extremum && !contains_scatter(arena, body)
}

/// Whether `e` reads one of the joined loops' results.
fn reads_member(arena: &Arena, e: ExprId, joint: &Joint) -> bool {
    reads(arena, e, &|v| joint.members.contains_key(&v)) != Some(false)
}

/// Nodes of a term [`reads`] looks at, at most.
const READ_BUDGET: usize = 256;

/// Whether `e` reads a variable `wanted` accepts, or `None` when `e` has more than
/// [`READ_BUDGET`] nodes (the pass leaves such terms as they are: a consumer's arrays in a
/// long gradient nest hundreds of loops, which `free_vars` would walk again and again).
/// Binders are unique, so a variable bound outside `e` that occurs in it is free there.
fn reads(arena: &Arena, e: ExprId, wanted: &dyn Fn(Var) -> bool) -> Option<bool> {
    let mut seen: HashSet<ExprId> = HashSet::default();
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if !seen.insert(x) {
            continue;
        }
        if seen.len() > READ_BUDGET {
            return None;
        }
        if let Node::Var(v) = arena[x] {
            if wanted(v) {
                return Some(true);
            }
        }
        arena.for_each_child(x, |c| stack.push(c));
    }
    Some(false)
}

/// Join the consumers of one statement's loop into it; the new chain, or `None`.
fn join_once(arena: &mut Arena, body: ExprId) -> Option<ExprId> {
    let (stmts, tail) = unchain(arena, body);
    if stmts.len() > MAX_CHAIN {
        return None;
    }
    // What each statement and each of the result's components read, found once: a chain
    // may be thousands of statements long, each a producer to try.
    // The result's components, through nested tuples: reverse mode returns a loop body's
    // value beside the tuple of its adjoints, `(v, (dx, dW))`.
    let mut items: Vec<ExprId> = Vec::new();
    let shape = leaves(arena, tail, MAX_TUPLE_DEPTH, &mut items);
    let free_set =
        |arena: &Arena, e: ExprId| -> HashSet<Var> { arena.free_vars(e).into_iter().collect() };
    let stmt_reads: Vec<HashSet<Var>> = stmts.iter().map(|s| free_set(arena, s.rhs())).collect();
    let item_reads: Vec<HashSet<Var>> = items.iter().map(|&e| free_set(arena, e)).collect();
    'statements: for i in 0..stmts.len() {
        let Stmt::One(x, rhs) = stmts[i] else {
            continue;
        };
        if !stmt_reads[i + 1..]
            .iter()
            .chain(&item_reads)
            .any(|r| r.contains(&x))
        {
            continue;
        }
        let Some((_, f, arrays)) = elementwise(arena, rhs) else {
            continue;
        };
        let Some(pbody) = arena.lambda_parts(f).map(|(_, b)| b) else {
            continue;
        };
        if contains_scatter(arena, pbody) || matches!(arena[pbody], Node::Proj(..)) {
            continue;
        }
        let mut chain: HashSet<Var> = HashSet::default();
        bound_by(arena, &stmts[..i], &mut chain);
        let mut later: HashSet<Var> = HashSet::default();
        later.insert(x);
        bound_by(arena, &stmts[i + 1..], &mut later);
        let mut joint = Joint {
            arrays: Vec::new(),
            params: Vec::new(),
            lets: Vec::new(),
            members: HashMap::default(),
            columns: Vec::new(),
            chain,
        };
        let args: Vec<ExprId> = arrays
            .iter()
            .map(|&a| joint.element_of(arena, a, &later))
            .collect();
        let first = joint.apply(arena, f, &args);
        let ex = element_var(arena, x);
        joint.lets.push((ex, first));
        joint.members.insert(x, ex);
        // Later statements binding consumers join; the others stay.
        let mut joined_stmts: Vec<usize> = Vec::new();
        // Whether a joined consumer does more than read a column.
        let mut real = false;
        for (j, s) in stmts.iter().enumerate().skip(i + 1) {
            let Stmt::One(y, c) = *s else { continue };
            if !stmt_reads[j].iter().any(|v| joint.members.contains_key(v)) {
                continue;
            }
            if joined_stmts.len() < MAX_JOINED_LETS && consumer(arena, &joint, c, &later) {
                real |= !column_read(arena, c);
                let e = joint.join(arena, c, &later);
                let ey = element_var(arena, y);
                joint.lets.push((ey, e));
                joint.members.insert(y, ey);
                joined_stmts.push(j);
            }
        }
        // The result's components that are consumers, or reductions of one.
        let mut taken: Vec<(ExprId, usize)> = Vec::new();
        // Each consumed component: its index, its column, and the term of it that reads
        // the column (the component itself, or the reduction under its scales).
        let mut consumed: Vec<(usize, usize, ExprId)> = Vec::new();
        for (k, &item) in items.iter().enumerate() {
            if !item_reads[k].iter().any(|v| joint.members.contains_key(v)) {
                continue;
            }
            // A reduction under a scale (`dv * reduce + 0 (...)`, `map (s. dv * s) (reduce
            // ...)`: a batch's mean loss) is joined as the reduction is; the scale stays
            // around it.
            let item = wrapped_reduction(arena, item, &joint).unwrap_or(item);
            let c = match arena[item] {
                Node::Reduce(op, z, c) | Node::Foldl(op, z, c) => {
                    if reads_member(arena, op, &joint)
                        || reads_member(arena, z, &joint)
                        || !folded_in_loop(arena, op)
                    {
                        continue;
                    }
                    c
                }
                _ => item,
            };
            if let Some(&(_, col)) = taken.iter().find(|(t, _)| *t == c) {
                consumed.push((k, col, item));
                continue;
            }
            // A joined loop's result itself, or a consumer.
            let element = match arena[c] {
                Node::Var(v) if joint.members.contains_key(&v) => {
                    let ev = joint.members[&v];
                    Some(arena.var(ev))
                }
                _ if consumer(arena, &joint, c, &later) => {
                    real |= !column_read(arena, c);
                    Some(joint.join(arena, c, &later))
                }
                _ => None,
            };
            if let Some(e) = element {
                joint.columns.push(e);
                let col = joint.columns.len() - 1;
                taken.push((c, col));
                consumed.push((k, col, item));
            }
        }
        if !real {
            continue;
        }
        // What else reads a joined loop's result reads its column.
        let mut escaped: Vec<Var> = Vec::new();
        let escape = |reads: &HashSet<Var>, joint: &Joint, escaped: &mut Vec<Var>| {
            for v in reads {
                if joint.members.contains_key(v) && !escaped.contains(v) {
                    escaped.push(*v);
                }
            }
        };
        for (j, reads) in stmt_reads.iter().enumerate().skip(i + 1) {
            if !joined_stmts.contains(&j) {
                escape(reads, &joint, &mut escaped);
            }
        }
        for (k, reads) in item_reads.iter().enumerate() {
            if !consumed.iter().any(|&(c, _, _)| c == k) {
                escape(reads, &joint, &mut escaped);
            }
        }
        // A joined loop read otherwise would be stored as a column of the joint loop, with
        // the joint loop's other columns beside it: where the code generator would have
        // recomputed it where read (a cheap loop of shifts), or folded a consumer in its
        // own loop, storing would cost memory the program did not use.
        if !escaped.is_empty() {
            continue 'statements;
        }
        // The joint loop.
        let n = joint.columns.len();
        let tuple = if n == 1 {
            joint.columns[0]
        } else {
            arena.tuple(&joint.columns)
        };
        let elem_body = joint
            .lets
            .iter()
            .rev()
            .fold(tuple, |acc, &(v, e)| arena.let_(v, e, acc));
        let loop_ = over(arena, &joint.arrays, &joint.params, elem_body);
        let name = format!("{}_joint", arena.var_name(x));
        let Some((xj, elem_ty)) = crate::siblings::typed_loop_var(arena, loop_, &name) else {
            continue;
        };
        let xje = arena.var(xj);
        let column = |arena: &mut Arena, k: usize| {
            if n == 1 {
                return xje;
            }
            let g = arena.fresh_var("g", Some(elem_ty.clone()));
            let gv = arena.var(g);
            let pick = arena.proj(k as u32, gv);
            let lam = arena.lambda(&[g], pick);
            arena.add(Node::Map(lam, xje))
        };
        let mut out: Vec<Stmt> = stmts[..i].to_vec();
        out.push(Stmt::One(xj, loop_));
        for (j, s) in stmts.iter().enumerate().skip(i + 1) {
            if !joined_stmts.contains(&j) {
                out.push(*s);
            }
        }
        let mut new_items = items.clone();
        for &(k, col, item) in &consumed {
            let c = column(arena, col);
            let new = match arena[item] {
                Node::Reduce(op, z, _) => arena.add(Node::Reduce(op, z, c)),
                Node::Foldl(op, z, _) => arena.add(Node::Foldl(op, z, c)),
                _ => c,
            };
            new_items[k] = if item == items[k] {
                new
            } else {
                crate::siblings::replace(arena, items[k], &[item], &[new])
            };
        }
        let new_tail = rebuild(arena, &shape, &new_items);
        return Some(rechain(arena, &out, new_tail));
    }
    None
}

/// Levels of scales around a reduction [`wrapped_reduction`] looks through, at most.
const MAX_SCALES: usize = 4;

/// The reduction (`reduce` or `foldl`) inside `e` if `e` is one, or if `e` is a reduction
/// of a column (`reduce + 0 (map (g. g.5) G)`) under scales that read no joined loop: an
/// operation with a term (`dv * r`, `r / n`), a negation, or a `map` of a function
/// (`map (s. dv * s) r`), at most [`MAX_SCALES`] deep. A scaled reduction of anything
/// else is left out: the value of a mean squared error, `0.5 * reduce + 0 (map2 (b, e.
/// ...) B E) / n`, joined so, made a joint loop that zipped the rows and targets twice
/// and stored its elements (its gradient 1.4-1.6x slower); a scaled reduction of a
/// `let`-bound loop's own result (llsq's value) joined a loop that ran two elements at a
/// time to one that did not (15% slower).
fn wrapped_reduction(arena: &Arena, e: ExprId, joint: &Joint) -> Option<ExprId> {
    let top = e;
    let mut e = e;
    for _ in 0..=MAX_SCALES {
        e = match arena[e] {
            Node::Reduce(_, _, a) | Node::Foldl(_, _, a) => {
                return (e == top || column_read(arena, a)).then_some(e)
            }
            Node::Op1(_, a) => a,
            Node::Op2(_, a, b) => {
                let a_reads = reads_member(arena, a, joint);
                let b_reads = reads_member(arena, b, joint);
                match (a_reads, b_reads) {
                    (true, false) => a,
                    (false, true) => b,
                    _ => return None,
                }
            }
            Node::Map(f, a) if !reads_member(arena, f, joint) => a,
            // A penalty's gradient added to a scaled sum (`map2 (s, v. d * s + lam * v)
            // (reduce ...) w`): the side that reads no joined loop is the scale's operand.
            Node::Map2(f, a, b) if !reads_member(arena, f, joint) => {
                match (reads_member(arena, a, joint), reads_member(arena, b, joint)) {
                    (true, false) => a,
                    (false, true) => b,
                    _ => return None,
                }
            }
            _ => return None,
        };
    }
    None
}

/// Levels of nested tuples in a chain's result whose components are looked at, at most.
const MAX_TUPLE_DEPTH: usize = 4;

/// How a chain's result nests its components: [`leaves`] lists them, [`rebuild`] puts new
/// ones back in the same places.
enum Nesting {
    Leaf,
    Tuple(Vec<Nesting>),
}

/// Push the components of `e` (through at most `depth` levels of tuples) onto `out`.
fn leaves(arena: &Arena, e: ExprId, depth: usize, out: &mut Vec<ExprId>) -> Nesting {
    match arena[e] {
        Node::Tuple(l) if depth > 0 => Nesting::Tuple(
            arena
                .exprs(l)
                .to_vec()
                .into_iter()
                .map(|c| leaves(arena, c, depth - 1, out))
                .collect(),
        ),
        _ => {
            out.push(e);
            Nesting::Leaf
        }
    }
}

/// The term nested as `shape`, with `items` as its components in order.
fn rebuild(arena: &mut Arena, shape: &Nesting, items: &[ExprId]) -> ExprId {
    fn go(arena: &mut Arena, shape: &Nesting, items: &[ExprId], next: &mut usize) -> ExprId {
        match shape {
            Nesting::Leaf => {
                *next += 1;
                items[*next - 1]
            }
            Nesting::Tuple(cs) => {
                let parts: Vec<ExprId> = cs.iter().map(|c| go(arena, c, items, next)).collect();
                arena.tuple(&parts)
            }
        }
    }
    go(arena, shape, items, &mut 0)
}

/// `map` (one array), `map2` (two) or `map2` over a zip of all but the last (more) of the
/// function of `params` with body `body`.
fn over(arena: &mut Arena, arrays: &[ExprId], params: &[Var], body: ExprId) -> ExprId {
    match arrays.len() {
        1 => {
            let f = arena.lambda(params, body);
            arena.add(Node::Map(f, arrays[0]))
        }
        2 => {
            let f = arena.lambda(params, body);
            arena.add(Node::Map2(f, arrays[0], arrays[1]))
        }
        k => {
            // The first k - 1 arrays zipped into tuples, unpacked by `let`s per element.
            let zip = zip(arena, &arrays[..k - 1]);
            let t = arena.fresh_var("z", None);
            let tv = arena.var(t);
            let unpacked = params[..k - 1]
                .iter()
                .enumerate()
                .rev()
                .fold(body, |acc, (j, &p)| {
                    let pick = arena.proj(j as u32, tv);
                    arena.let_(p, pick, acc)
                });
            let f = arena.lambda(&[t, params[k - 1]], unpacked);
            arena.add(Node::Map2(f, zip, arrays[k - 1]))
        }
    }
}

/// The arrays (at least two) zipped: the array of tuples of their elements.
fn zip(arena: &mut Arena, arrays: &[ExprId]) -> ExprId {
    let (a, b) = (arena.fresh_var("a", None), arena.fresh_var("b", None));
    let (av, bv) = (arena.var(a), arena.var(b));
    if arrays.len() == 2 {
        let t = arena.tuple(&[av, bv]);
        let f = arena.lambda(&[a, b], t);
        return arena.add(Node::Map2(f, arrays[0], arrays[1]));
    }
    let inner = zip(arena, &arrays[..arrays.len() - 1]);
    let mut items: Vec<ExprId> = (0..arrays.len() as u32 - 1)
        .map(|j| arena.proj(j, av))
        .collect();
    items.push(bv);
    let t = arena.tuple(&items);
    let f = arena.lambda(&[a, b], t);
    arena.add(Node::Map2(f, inner, arrays[arrays.len() - 1]))
}
