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
//!
//! When the chain ends in a tuple, the first part may also compute the components of the
//! result that read only what it binds (a gradient's value and the adjoints that need no
//! later statement), writing them where the function writes them: the second part then
//! computes only the other components, and a chain whose last statements are the largest
//! is still divided fairly.

use unfad_syntax::fast_hash::{FastMap as HashMap, FastSet as HashSet};
use unfad_syntax::{Arena, ExprId, Func, Node, Type, Var};

use crate::lower::column_of;

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
    /// How many values cross the cut (the first items of the first part's result).
    pub crossing: usize,
    /// The components of the function's result (a tuple) that the first part computes,
    /// in order, after the crossing values; the second part computes the others, in
    /// order (as a tuple if there are several). Empty: the second computes the result.
    pub taken: Vec<usize>,
    /// The number of components of the function's result when `taken` is not empty.
    pub result_items: usize,
}

/// A cut: the number of statements before it, and whether the first part also computes
/// the result's components that it can.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cut {
    pub at: usize,
    pub take: bool,
}

/// What the choice of a cut knows of the chain, in nodes.
pub(crate) struct Sizes {
    /// Each statement's (the nodes it adds to those before it).
    pub stmts: Vec<usize>,
    /// Whether a cut before statement `k` is forbidden (it folds the one before).
    pub fused: Vec<bool>,
    /// The result tuple's components (if the chain ends in one with two or more): the
    /// number of statements each needs before it, and its size.
    pub comps: Vec<(usize, usize)>,
    /// The rest of the tail (all of it when it is not divided).
    pub tail: usize,
}

impl Sizes {
    fn total(&self) -> usize {
        self.stmts.iter().sum::<usize>() + self.comps.iter().map(|c| c.1).sum::<usize>() + self.tail
    }

    /// The components the first part computes for a cut after `at` statements that
    /// takes them: those ready, unless all are (the second part would compute nothing).
    fn taken(&self, at: usize) -> Vec<usize> {
        let ready: Vec<usize> = (0..self.comps.len())
            .filter(|&j| self.comps[j].0 <= at)
            .collect();
        if ready.len() == self.comps.len() {
            Vec::new()
        } else {
            ready
        }
    }

    /// The nodes of the first part for `cut`.
    fn before(&self, cut: Cut) -> usize {
        let stmts: usize = self.stmts[..cut.at].iter().sum();
        let comps: usize = if cut.take {
            self.taken(cut.at).iter().map(|&j| self.comps[j].1).sum()
        } else {
            0
        };
        stmts + comps
    }
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
pub(crate) fn split_at(arena: &mut Arena, func: &Func, cut: Cut) -> Option<Parts> {
    split_where(arena, func, |sizes| {
        (cut.at >= 1 && cut.at < sizes.stmts.len()).then_some(cut)
    })
}

/// The cut at the index `choose` picks from the statements' sizes, if its crossing values
/// can be passed in memory (ground types: no conditions).
fn split_where(
    arena: &mut Arena,
    func: &Func,
    choose: impl Fn(&Sizes) -> Option<Cut>,
) -> Option<Parts> {
    let (stmts, cur) = chain_of(arena, func.body);
    if stmts.len() < 2 {
        return None;
    }
    // The nodes each statement adds to those of the statements before it (and the tail's
    // components', last), so that a prefix's size is a sum.
    // A flag per node of the arena: the term of a long program has millions.
    let mut seen = vec![false; arena.node_count()];
    let stmt_sizes: Vec<usize> = stmts
        .iter()
        .map(|s| new_nodes(arena, rhs(arena, s.node), &mut seen))
        .collect();
    // No cut between a map and the fold of it that follows: the code generator computes
    // both in one loop, storing only what is read later (see `Translator::stored_then_folded`).
    let fused: Vec<bool> = (0..stmts.len())
        .map(|k| k > 0 && folds_previous(arena, stmts[k].node, &stmts[k - 1].vars))
        .collect();
    let items: Vec<ExprId> = match arena[cur] {
        Node::Tuple(l) if arena.exprs(l).len() >= 2 => arena.exprs(l).to_vec(),
        _ => Vec::new(),
    };
    let mut bound_at: HashMap<Var, usize> = HashMap::default();
    for (k, s) in stmts.iter().enumerate() {
        for &v in &s.vars {
            bound_at.insert(v, k);
        }
    }
    let comps: Vec<(usize, usize)> = items
        .iter()
        .map(|&c| {
            let ready = arena
                .free_vars(c)
                .iter()
                .filter_map(|v| bound_at.get(v).map(|k| k + 1))
                .max()
                .unwrap_or(0);
            (ready, new_nodes(arena, c, &mut seen))
        })
        .collect();
    let tail = new_nodes(arena, cur, &mut seen);
    let sizes = Sizes {
        stmts: stmt_sizes,
        fused,
        comps,
        tail,
    };
    let cut = choose(&sizes)?;
    let at = cut.at;
    let taken = if cut.take {
        sizes.taken(at)
    } else {
        Vec::new()
    };
    let before = sizes.before(Cut { at, take: cut.take });
    let first_larger = 2 * before > sizes.total();
    // The second part: the statements after the cut and the components not taken.
    let rest = if taken.is_empty() {
        stmts[at].node
    } else {
        let left: Vec<ExprId> = (0..items.len())
            .filter(|j| !taken.contains(j))
            .map(|j| items[j])
            .collect();
        let (body, ty) = tuple_of(arena, &left)?;
        rebuild(arena, &stmts[at..], body, &ty)?
    };
    let (rest, free) = with_views(arena, &stmts[..at], rest)?;
    let bound: Vec<Var> = stmts[..at]
        .iter()
        .flat_map(|s| s.vars.iter().copied())
        .filter(|v| free.contains(v))
        .collect();
    let (rest, crossing, mut results) = crossing_columns(arena, &bound, rest)?;
    let types: Vec<Type> = results
        .iter()
        .map(|&e| arena.type_of(e).cloned())
        .collect::<Option<_>>()?;
    if crossing.is_empty() || !types.iter().all(Type::is_ground) {
        return None;
    }
    results.extend(taken.iter().map(|&j| items[j]));
    let (body, ret) = tuple_of(arena, &results)?;
    let body = rebuild(arena, &stmts[..at], body, &ret)?;
    let mut params = func.params.clone();
    params.extend(&crossing);
    let second_ret = arena.type_of(rest).cloned()?;
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
            ret: second_ret,
        },
        first_larger,
        crossing: crossing.len(),
        result_items: if taken.is_empty() { 0 } else { items.len() },
        taken,
    })
}

/// What crosses the cut for the variables `bound` before it that `rest` reads: the second
/// part's parameters, `rest` reading them, and the first part's results that give them.
/// A variable crosses as itself, except an array of tuples that `rest` reads only as
/// columns (`map (t. π_q t) x`, a gradient's value and an operand's adjoint, beside a
/// column the first part folds): then each column read crosses, as an array of its own.
/// The first part then stores only those columns, and computes the others in the loop
/// that folds them, as one function would (crossing whole, the per-point contributions to
/// a mixture's adjoints, folded before the cut, were stored too: n k d^2 reals).
fn crossing_columns(
    arena: &mut Arena,
    bound: &[Var],
    mut rest: ExprId,
) -> Option<(ExprId, Vec<Var>, Vec<ExprId>)> {
    let mut params = Vec::new();
    let mut results = Vec::new();
    for &x in bound {
        let whole = |arena: &mut Arena| {
            let ty = arena.var_type(x).cloned()?;
            let e = arena.var(x);
            arena.set_type(e, ty);
            Some(e)
        };
        let columns = match arena.var_type(x) {
            Some(Type::Array(_, elem)) if matches!(**elem, Type::Tuple(_)) => {
                column_reads(arena, rest, x)
            }
            _ => None,
        };
        // (`x` crosses because `rest` reads it, so a list of its reads is never empty.)
        let Some(columns) = columns else {
            params.push(x);
            results.push(whole(arena)?);
            continue;
        };
        // One parameter per column read (reads of one column are equal up to the names
        // of their functions' binders), the first read as the first part's result.
        let mut by_path: Vec<(Vec<usize>, Var)> = Vec::new();
        let mut replace: HashMap<ExprId, ExprId> = HashMap::default();
        for (e, path) in columns {
            let ty = arena.type_of(e).cloned()?;
            let v = match by_path.iter().find(|(p, _)| *p == path) {
                Some(&(_, v)) => v,
                None => {
                    let name = format!("{}_col", arena.var_name(x));
                    let v = arena.fresh_var(&name, Some(ty.clone()));
                    by_path.push((path, v));
                    params.push(v);
                    results.push(e);
                    v
                }
            };
            let read = arena.var(v);
            arena.set_type(read, ty);
            replace.insert(e, read);
        }
        rest = replaced(arena, rest, &replace, &mut HashMap::default())?;
    }
    Some((rest, params, results))
}

/// The reads of `x` in `e`, each `map (t. π_q t) x` with its path `q` (not empty), if
/// `e` reads `x` only so; `None` if it reads `x` otherwise.
fn column_reads(arena: &Arena, e: ExprId, x: Var) -> Option<Vec<(ExprId, Vec<usize>)>> {
    // A column read: `map (t. π_q t) x` with `q` not empty (`map (t. t) x` reads all).
    let column = |e: ExprId| column_of(arena, e, x).filter(|q| !q.is_empty());
    let mut seen: HashSet<ExprId> = HashSet::default();
    let mut out = Vec::new();
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        if !seen.insert(e) {
            continue;
        }
        if let Some(path) = column(e) {
            out.push((e, path));
            continue;
        }
        if arena[e] == Node::Var(x) {
            return None;
        }
        arena.for_each_child(e, |c| stack.push(c));
    }
    Some(out)
}

/// `e` with the nodes of `replace` replaced (their parents rebuilt, typed as before).
fn replaced(
    arena: &mut Arena,
    e: ExprId,
    replace: &HashMap<ExprId, ExprId>,
    memo: &mut HashMap<ExprId, ExprId>,
) -> Option<ExprId> {
    if let Some(&r) = replace.get(&e).or_else(|| memo.get(&e)) {
        return Some(r);
    }
    let out = unfad_syntax::with_stack(|| {
        let kids = arena.children(e);
        let mut new = Vec::with_capacity(kids.len());
        for &k in kids.iter() {
            new.push(replaced(arena, k, replace, memo)?);
        }
        if new.iter().eq(kids.iter()) {
            return Some(e);
        }
        let ty = arena.type_of(e).cloned()?;
        let span = arena.span(e);
        let mut it = new.into_iter();
        let node = arena.map_children(arena[e], |_, _| it.next().expect("one per child"));
        let r = arena.add_at(node, span);
        arena.set_type(r, ty);
        Some(r)
    })?;
    memo.insert(e, out);
    Some(out)
}

/// `rest` (the part after the cut) with the shifts and positions (`iota`) among `before`
/// (the statements before the cut) that it reads bound again at its start, and its free
/// variables. A shift is a view of the array it shifts: taken again after the cut, it costs nothing, where crossing
/// it would store a copy of the array beside the array (which crosses anyway when the
/// rest reads it, as a reverse pass reads a scan's states and their shift).
fn with_views(
    arena: &mut Arena,
    before: &[Stmt],
    mut rest: ExprId,
) -> Option<(ExprId, HashSet<Var>)> {
    let is_view = |arena: &Arena, s: &Stmt| match arena[s.node] {
        Node::Let(_, r, _) => match arena[r] {
            Node::Shift1L(x) | Node::Shift1R(x) => matches!(arena[x], Node::Var(_)),
            // Positions are never in memory: crossing, they would be stored, and every
            // loop over them after the cut would read its indices back and test each read
            // they make (a Hessian-vector product's `let A = iota len(mu)`, read by the
            // loops of both parts).
            Node::Iota(_) => true,
            _ => false,
        },
        _ => false,
    };
    loop {
        let free: HashSet<Var> = arena.free_vars(rest).into_iter().collect();
        let views: Vec<&Stmt> = before
            .iter()
            .filter(|s| is_view(arena, s) && s.vars.iter().any(|v| free.contains(v)))
            .collect();
        if views.is_empty() {
            return Some((rest, free));
        }
        let ty = arena.type_of(rest).cloned()?;
        for s in views.iter().rev() {
            let Node::Let(x, r, _) = arena[s.node] else {
                return None;
            };
            rest = arena.let_(x, r, rest);
            arena.set_type(rest, ty.clone());
        }
    }
}

/// The tuple of `items` (typed), or the one item, with its type.
fn tuple_of(arena: &mut Arena, items: &[ExprId]) -> Option<(ExprId, Type)> {
    let types = items
        .iter()
        .map(|&e| arena.type_of(e).cloned())
        .collect::<Option<Vec<_>>>()?;
    if let ([e], [t]) = (items, &types[..]) {
        return Some((*e, t.clone()));
    }
    let t = Type::Tuple(types.into());
    let e = arena.tuple(items);
    arena.set_type(e, t.clone());
    Some((e, t))
}

/// The statements `stmts` (of one chain) around `body`, whose type is `ty`: new `let`
/// nodes, typed.
fn rebuild(arena: &mut Arena, stmts: &[Stmt], mut body: ExprId, ty: &Type) -> Option<ExprId> {
    for s in stmts.iter().rev() {
        body = match arena[s.node] {
            Node::Let(x, r, _) => arena.let_(x, r, body),
            Node::LetTuple(_, r, _) => arena.let_tuple(&s.vars, r, body),
            _ => return None,
        };
        arena.set_type(body, ty.clone());
    }
    Some(body)
}

/// The right-hand side of the `let` node `e`.
fn rhs(arena: &Arena, e: ExprId) -> ExprId {
    match arena[e] {
        Node::Let(_, r, _) | Node::LetTuple(_, r, _) => r,
        _ => e,
    }
}

/// The nodes of `e`'s DAG not in `seen` (which they are added to).
fn new_nodes(arena: &Arena, e: ExprId, seen: &mut Vec<bool>) -> usize {
    let mut count = 0;
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if x.index() >= seen.len() {
            seen.resize(arena.node_count().max(x.index() + 1), false);
        }
        if !std::mem::replace(&mut seen[x.index()], true) {
            count += 1;
            arena.for_each_child(x, |c| stack.push(c));
        }
    }
    count
}

/// The cut that makes the parts' sizes closest, never before a statement that folds the
/// one before it; `None` if the term is small or no cut gives the smaller part its share.
fn best_cut(sizes: &Sizes) -> Option<Cut> {
    let total = sizes.total();
    if total < MIN_NODES {
        return None;
    }
    let mut best: Option<(Cut, usize)> = None;
    for at in 1..sizes.stmts.len() {
        if sizes.fused.get(at).copied().unwrap_or(false) {
            continue;
        }
        for take in [false, true] {
            let cut = Cut { at, take };
            if take && sizes.taken(at).is_empty() {
                continue;
            }
            let before = sizes.before(cut);
            let smaller = before.min(total - before);
            if best.is_none_or(|(_, b)| smaller > b) {
                best = Some((cut, smaller));
            }
        }
    }
    let (cut, smaller) = best?;
    (smaller * 100 >= total * MIN_SHARE).then_some(cut)
}

/// Terms of this many nodes or more are compiled in chunks ([`chunks`]): Cranelift's
/// register allocator takes a time that grows faster than the function (every value live
/// across a run-time call is spilled at each), so a long chain compiles much faster as
/// many small functions. Well above the gradients of the examples, which are cut in two
/// at most.
pub const CHUNK_MIN_NODES: usize = 4000;

/// The nodes a chunk has at least (the last one, with the chain's result, may have
/// fewer): small enough for Cranelift to be fast, large enough for the crossing values
/// to be few beside the work.
pub const CHUNK_NODES: usize = 300;

/// A long function cut into chunks of its chain, run one after the other. Part `j`
/// takes the function's parameters, then the values of earlier parts that it reads (its
/// imports); every part but the last returns the values later parts read (its exports,
/// one item each, a tuple if several); the last computes the function's result.
pub(crate) struct Chunks {
    pub parts: Vec<Func>,
    /// Each part's imports, in its parameter order: the part exporting it and the
    /// position among that part's exports.
    pub imports: Vec<Vec<(usize, usize)>>,
    /// How many values each part exports (0 for the last).
    pub exports: Vec<usize>,
}

/// The top-level chain of `let`s of `body`: its statements, and the term after them.
fn chain_of(arena: &Arena, body: ExprId) -> (Vec<Stmt>, ExprId) {
    let mut stmts = Vec::new();
    let mut cur = body;
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
            _ => return (stmts, cur),
        }
    }
}

/// `func` cut into chunks of about [`CHUNK_NODES`] nodes if it has [`CHUNK_MIN_NODES`]
/// or more; `None` to compile it as before (whole or in two). Not cut: a chain that binds
/// a variable twice (or a parameter's), values of non-ground types crossing a cut, a part
/// whose statements no later part reads, and the cuts between a map and its fold.
pub(crate) fn chunks(arena: &mut Arena, func: &Func) -> Option<Chunks> {
    let (stmts, tail) = chain_of(arena, func.body);
    if stmts.len() < 2 {
        return None;
    }
    let mut seen = vec![false; arena.node_count()];
    let sizes: Vec<usize> = stmts
        .iter()
        .map(|s| new_nodes(arena, rhs(arena, s.node), &mut seen))
        .collect();
    let tail_size = new_nodes(arena, tail, &mut seen);
    if sizes.iter().sum::<usize>() + tail_size < CHUNK_MIN_NODES {
        return None;
    }
    // Where each variable is bound: its statement.
    let mut bound_at: HashMap<Var, usize> = HashMap::default();
    for (k, s) in stmts.iter().enumerate() {
        for &v in &s.vars {
            if bound_at.insert(v, k).is_some() || func.params.contains(&v) {
                return None;
            }
        }
    }
    // The chunks: statements gathered until they reach the size, cut where allowed.
    let mut starts = vec![0];
    let mut size = 0;
    for k in 0..stmts.len() {
        let fused = k > 0 && folds_previous(arena, stmts[k].node, &stmts[k - 1].vars);
        if size >= CHUNK_NODES && !fused {
            starts.push(k);
            size = 0;
        }
        size += sizes[k];
    }
    let n = starts.len();
    if n < 2 {
        return None;
    }
    let chunk_of = |k: usize| starts.partition_point(|&s| s <= k) - 1;
    // What each chunk reads of earlier ones (in the order the variables are bound).
    let mut reads: Vec<Vec<Var>> = vec![Vec::new(); n];
    for (j, read) in reads.iter_mut().enumerate() {
        let end = starts.get(j + 1).copied().unwrap_or(stmts.len());
        let mut terms: Vec<ExprId> = stmts[starts[j]..end]
            .iter()
            .map(|s| rhs(arena, s.node))
            .collect();
        if j + 1 == n {
            terms.push(tail);
        }
        let mut set = HashSet::default();
        for e in terms {
            for v in arena.free_vars(e) {
                if bound_at.get(&v).is_some_and(|&k| chunk_of(k) < j) && set.insert(v) {
                    read.push(v);
                }
            }
        }
        read.sort_by_key(|v| bound_at[v]);
    }
    // Each chunk's exports: what later chunks read of it, in the order it binds them.
    let mut exports: Vec<Vec<Var>> = vec![Vec::new(); n];
    let mut exported: HashSet<Var> = HashSet::default();
    for read in &reads {
        for &v in read {
            if exported.insert(v) {
                exports[chunk_of(bound_at[&v])].push(v);
            }
        }
    }
    for e in &mut exports {
        e.sort_by_key(|v| bound_at[v]);
    }
    if exports[..n - 1].iter().any(Vec::is_empty) {
        return None;
    }
    let mut types: HashMap<Var, Type> = HashMap::default();
    for &v in &exported {
        let t = arena.var_type(v).cloned()?;
        if !t.is_ground() {
            return None;
        }
        types.insert(v, t);
    }
    let position: HashMap<Var, usize> = exports
        .iter()
        .flat_map(|e| e.iter().enumerate().map(|(p, &v)| (v, p)))
        .collect();
    let mut parts = Vec::with_capacity(n);
    for j in 0..n {
        let end = starts.get(j + 1).copied().unwrap_or(stmts.len());
        let (body, ret) = if j + 1 == n {
            let body = stmts[starts[j]].node;
            (body, arena.type_of(body).cloned()?)
        } else {
            let results: Vec<ExprId> = exports[j]
                .iter()
                .map(|v| {
                    let e = arena.var(*v);
                    arena.set_type(e, types[v].clone());
                    e
                })
                .collect();
            let (body, ret) = tuple_of(arena, &results)?;
            (rebuild(arena, &stmts[starts[j]..end], body, &ret)?, ret)
        };
        let mut params = func.params.clone();
        params.extend(&reads[j]);
        parts.push(Func {
            name: format!("{}_part{j}", func.name),
            params,
            body,
            ret,
        });
    }
    let imports = reads
        .iter()
        .map(|read| {
            read.iter()
                .map(|v| (chunk_of(bound_at[v]), position[v]))
                .collect()
        })
        .collect();
    Some(Chunks {
        parts,
        imports,
        exports: exports.iter().map(Vec::len).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::{best_cut, Cut, Sizes};

    fn sizes(stmts: &[usize], fused: &[usize], comps: &[(usize, usize)], tail: usize) -> Sizes {
        Sizes {
            stmts: stmts.to_vec(),
            fused: (0..stmts.len()).map(|k| fused.contains(&k)).collect(),
            comps: comps.to_vec(),
            tail,
        }
    }

    fn cut(at: usize) -> Option<Cut> {
        Some(Cut { at, take: false })
    }

    #[test]
    fn the_cut_balances_the_parts() {
        // statements 100, 50, 200 and a tail of 60: after the second (150 / 260) is the
        // most even of the cuts after the first, second and third.
        assert_eq!(best_cut(&sizes(&[100, 50, 200], &[], &[], 60)), cut(2));
        assert_eq!(best_cut(&sizes(&[150, 10, 80], &[], &[], 20)), cut(1));
        // Not between a map and its fold: the next best.
        assert_eq!(best_cut(&sizes(&[150, 10, 80], &[1], &[], 20)), cut(2));
        // Too small, or too lopsided whatever the cut.
        assert_eq!(best_cut(&sizes(&[10, 10, 300], &[], &[], 20)), None);
        assert_eq!(best_cut(&sizes(&[10, 20], &[], &[], 30)), None);
        assert_eq!(best_cut(&sizes(&[5, 400], &[], &[], 5)), None);
        assert_eq!(best_cut(&sizes(&[400], &[], &[], 5)), None);
    }

    #[test]
    fn the_first_part_takes_the_components_it_can_when_that_balances_better() {
        // 100 | 200 with a tail of components 80 (ready after the first statement) and 20
        // (after the second): 100 + 80 against 200 + 20 + 1.
        let s = sizes(&[100, 200], &[], &[(1, 80), (2, 20)], 1);
        assert_eq!(best_cut(&s), Some(Cut { at: 1, take: true }));
        assert_eq!(s.taken(1), vec![0]);
        // Taking would unbalance: 200 + 80 against 100 + 20.
        let s = sizes(&[200, 100], &[], &[(1, 80), (2, 20)], 1);
        assert_eq!(best_cut(&s), cut(1));
        // A cut after which every component is ready takes none of them.
        assert!(sizes(&[100, 100], &[], &[(1, 5), (1, 5)], 1)
            .taken(1)
            .is_empty());
    }
}
