//! Precomputed arrays read again: a `let`-bound map whose elements an earlier `let`-bound
//! map of the same chain already holds reads that earlier map instead of computing them.
//!
//! Hoisting precomputes a loop-invariant term once per loop that reads it
//! ([`crate::hoist`]). When the primal's loop and the adjoint's loop both read `exp(q)` of
//! a mixture's components, but over different zips (`alpha` with `(means, q)` for the
//! value, `means` with `q` for the adjoint), each gets its own array:
//!
//! ```text
//! let h   = map2 (a, c. (c, map (qd. exp(qd)) (snd c), a + sum(snd c))) alpha (map2 (mu, qk. (mu, qk)) means q) in
//! let h_1 = map2 (mu_1, b. ((mu_1, b), map (e. exp(e)) b)) means q in ...
//! ```
//!
//! Both are indexed like the arrays they zip. Written over those arrays' elements (each
//! parameter replaced by the elements it stands for: `c` by `(means[i], q[i])`), every
//! component of `h_1`'s element is one of `h`'s, up to the names of bound variables. So
//! `h_1` becomes `map (pe. (pe.0, pe.1)) h`: the exponentials are computed and stored once.
//!
//! Exact: each component is read where the same operations computed it. The later map's
//! arrays must be among the earlier one's (whose `map2`s have then checked their lengths
//! against each other, so the two are indexed alike), and one of its components must do
//! work (a zip is not rewritten into a read of a stored array).

use unfad_syntax::fast_hash::{FastMap as HashMap, FastSet as HashSet};
use unfad_syntax::{with_stack, Arena, ExprId, Func, Node, Type, Var};

use crate::siblings::{elementwise, every_chain, is_zip_function, rechain, unchain, Stmt};

/// Rewrite every `let` chain of `func` so that maps repeating an earlier map's elements
/// read them from it; `func` itself when nothing changes.
pub fn reuse_precomputed(arena: &mut Arena, func: &Func) -> Func {
    let mut leaves = Leaves::default();
    let mut memo = unfad_syntax::ExprMemo::for_arena(arena);
    let body = every_chain(
        arena,
        func.body,
        1,
        &mut |a, chain| reuse_in_chain(a, chain, &mut leaves),
        &mut memo,
    );
    Func {
        body,
        ..func.clone()
    }
}

/// The placeholders of the elements a map reads: one per array variable, and one per
/// length of `iota` (the index, at the loop's position), shared by every map of the term.
#[derive(Default)]
struct Leaves {
    arrays: HashMap<Var, Var>,
    /// The length expressions, each with its placeholder, compared up to bound names.
    iotas: Vec<(ExprId, Var)>,
}

/// What a map's operand zips: an array variable, or `iota` of a length.
#[derive(Clone, Copy)]
enum Source {
    Array(Var),
    Iota(ExprId),
}

impl Source {
    fn same(self, arena: &Arena, other: Source) -> bool {
        match (self, other) {
            (Source::Array(a), Source::Array(b)) => a == b,
            (Source::Iota(n), Source::Iota(m)) => same(arena, n, m),
            _ => false,
        }
    }
}

/// A `let`-bound map written over the elements of the arrays it zips.
struct Canonical {
    /// The arrays (variables) and index ranges (`iota`) its operands zip.
    arrays: Vec<Source>,
    /// Its element's components (the items of its body's tuple, or the body), each with
    /// the parameters replaced by the placeholders of the arrays' elements.
    components: Vec<ExprId>,
}

fn reuse_in_chain(arena: &mut Arena, chain: ExprId, leaves: &mut Leaves) -> Option<ExprId> {
    let (mut stmts, tail) = unchain(arena, chain);
    let candidate = |arena: &Arena, s: &Stmt| match *s {
        Stmt::One(_, rhs) => elementwise(arena, rhs)
            .is_some_and(|(_, _, operands)| operands.iter().all(|&o| zips_arrays(arena, o))),
        Stmt::Many(..) => false,
    };
    if stmts.iter().filter(|s| candidate(arena, s)).count() < 2 {
        return None;
    }
    let canon: Vec<Option<Canonical>> = stmts
        .iter()
        .map(|s| match *s {
            Stmt::One(_, rhs) if candidate(arena, s) => canonical(arena, rhs, leaves),
            _ => None,
        })
        .collect();
    let mut changed = false;
    for k in 0..stmts.len() {
        let (Some(later), Stmt::One(var, _)) = (&canon[k], stmts[k]) else {
            continue;
        };
        if !later.components.iter().any(|&c| works(arena, c)) {
            continue;
        }
        for j in 0..k {
            let Some(earlier) = &canon[j] else { continue };
            let Stmt::One(h, _) = stmts[j] else { continue };
            if !later
                .arrays
                .iter()
                .all(|&a| earlier.arrays.iter().any(|&b| a.same(arena, b)))
            {
                continue;
            }
            let Some(at) = later
                .components
                .iter()
                .map(|&c| earlier.components.iter().position(|&e| same(arena, c, e)))
                .collect::<Option<Vec<usize>>>()
            else {
                continue;
            };
            let ty = match arena.var_type(h) {
                Some(Type::Array(_, elem)) => Some(Type::clone(elem)),
                _ => None,
            };
            let pe = arena.fresh_var("pe", ty);
            let pv = arena.var(pe);
            let whole = earlier.components.len() == 1;
            let items: Vec<ExprId> = at
                .iter()
                .map(|&i| if whole { pv } else { arena.proj(i as u32, pv) })
                .collect();
            let element = arena.tuple(&items);
            let f = arena.lambda(&[pe], element);
            let src = arena.var(h);
            let read = arena.add(Node::Map(f, src));
            stmts[k] = Stmt::One(var, read);
            changed = true;
            break;
        }
    }
    changed.then(|| rechain(arena, &stmts, tail))
}

/// `rhs` (a `map` or `map2`) written over the elements of the arrays its operands zip, or
/// `None` if an operand is not an array variable or a zip of such.
fn canonical(arena: &mut Arena, rhs: ExprId, leaves: &mut Leaves) -> Option<Canonical> {
    let (_, f, operands) = elementwise(arena, rhs)?;
    let (params, body) = arena.lambda_parts(f)?;
    let (params, body) = (params.to_vec(), body);
    let mut arrays = Vec::new();
    let mut subst = HashMap::default();
    for (&p, &o) in params.iter().zip(&operands) {
        let e = element_of(arena, o, leaves, &mut arrays)?;
        subst.insert(p, e);
    }
    let items: Vec<ExprId> = match arena[body] {
        Node::Tuple(l) => arena.exprs(l).to_vec(),
        _ => vec![body],
    };
    let components = items
        .into_iter()
        .map(|c| {
            let c = arena.subst(c, &subst);
            projected(arena, c)
        })
        .collect();
    Some(Canonical { arrays, components })
}

/// The element of `o` at the loop's index, over placeholders of its arrays' elements:
/// the placeholder of an array variable, a tuple of elements for a zip.
fn element_of(
    arena: &mut Arena,
    o: ExprId,
    leaves: &mut Leaves,
    arrays: &mut Vec<Source>,
) -> Option<ExprId> {
    match arena[o] {
        Node::Var(x) => {
            let p = *leaves
                .arrays
                .entry(x)
                .or_insert_with(|| arena.fresh_var("elem", None));
            if !arrays.iter().any(|&a| a.same(arena, Source::Array(x))) {
                arrays.push(Source::Array(x));
            }
            Some(arena.var(p))
        }
        Node::Iota(n) => {
            let p = match leaves.iotas.iter().find(|&&(m, _)| same(arena, n, m)) {
                Some(&(_, p)) => p,
                None => {
                    let p = arena.fresh_var("index", None);
                    leaves.iotas.push((n, p));
                    p
                }
            };
            if !arrays.iter().any(|&a| a.same(arena, Source::Iota(n))) {
                arrays.push(Source::Iota(n));
            }
            Some(arena.var(p))
        }
        Node::Map2(f, a, b) => {
            if !is_zip_function(arena, f) {
                return None;
            }
            let x = element_of(arena, a, leaves, arrays)?;
            let y = element_of(arena, b, leaves, arrays)?;
            Some(arena.tuple(&[x, y]))
        }
        _ => None,
    }
}

/// True if `o` is an array variable, an `iota`, or a zip of such (`map2 (x, y. (x, y)) A
/// B`, nested).
fn zips_arrays(arena: &Arena, o: ExprId) -> bool {
    match arena[o] {
        Node::Var(_) | Node::Iota(_) => true,
        Node::Map2(f, a, b) => {
            is_zip_function(arena, f) && zips_arrays(arena, a) && zips_arrays(arena, b)
        }
        _ => false,
    }
}

/// `e` with every projection of a tuple replaced by the item it projects.
fn projected(arena: &mut Arena, e: ExprId) -> ExprId {
    let mut memo = HashMap::default();
    projected_rec(arena, e, &mut memo)
}

fn projected_rec(arena: &mut Arena, e: ExprId, memo: &mut HashMap<ExprId, ExprId>) -> ExprId {
    let node = arena[e];
    if matches!(node, Node::Var(_) | Node::Const(_) | Node::Bool(_)) {
        return e;
    }
    if let Some(&r) = memo.get(&e) {
        return r;
    }
    let r = with_stack(|| {
        if let Node::Proj(i, t) = node {
            let t = projected_rec(arena, t, memo);
            if let Node::Tuple(l) = arena[t] {
                return arena.exprs(l)[i as usize];
            }
            return arena.proj(i, t);
        }
        let new = arena.map_children(node, |a, c| projected_rec(a, c, memo));
        arena.rebuild(e, new)
    });
    memo.insert(e, r);
    r
}

/// True if `e` does work: anything but variables, tuples and projections of them.
fn works(arena: &Arena, e: ExprId) -> bool {
    match arena[e] {
        Node::Var(_) => false,
        Node::Proj(_, t) => works(arena, t),
        Node::Tuple(l) => arena.exprs(l).iter().any(|&c| works(arena, c)),
        _ => true,
    }
}

/// Alpha-equivalence of two terms of one scope (their free variables the same): the
/// siblings pass's test ([`crate::siblings::same_term`]).
pub(crate) fn same(arena: &Arena, a: ExprId, b: ExprId) -> bool {
    crate::siblings::same_term(arena, a, b)
}

/// Rewrite `func` so that loops reading a map of projections of a stored array (what
/// [`reuse_precomputed`] leaves: `let h_1 = map (pe. pe.0) h`) read `h` itself, the
/// projections moved into their bodies; such a map then goes unless something else reads
/// it. The code generator stores a tuple array's components apart, so the loop reads the
/// column of `h` in place (one load where two loops read the same column) rather than a
/// copy of it. `func` itself when nothing changes.
pub fn read_columns_in_place(arena: &mut Arena, func: &Func) -> Func {
    let mut columns: HashMap<Var, Column> = HashMap::default();
    collect_columns(arena, func.body, &mut columns, &mut HashSet::default());
    if columns.is_empty() {
        return func.clone();
    }
    let mut memo = HashMap::default();
    let body = columns_rec(arena, func.body, &columns, &mut memo);
    Func {
        body,
        ..func.clone()
    }
}

/// A `let`-bound `map (p. P) h` whose body `P` only projects `p` (or is a tuple of such).
#[derive(Clone, Copy)]
struct Column {
    h: Var,
    p: Var,
    projection: ExprId,
}

fn collect_columns(
    arena: &Arena,
    e: ExprId,
    out: &mut HashMap<Var, Column>,
    seen: &mut HashSet<ExprId>,
) {
    if !seen.insert(e) {
        return;
    }
    if let Node::Let(v, rhs, _) = arena[e] {
        if let Node::Map(f, src) = arena[rhs] {
            if let (Node::Var(h), Some((&[p], projection))) = (arena[src], arena.lambda_parts(f)) {
                if projects_only(arena, projection, p) && !matches!(arena[projection], Node::Var(_))
                {
                    out.insert(v, Column { h, p, projection });
                }
            }
        }
    }
    with_stack(|| {
        for c in arena.children(e) {
            collect_columns(arena, c, out, seen);
        }
    });
}

/// True if `e` is `p`, a projection of one, or a tuple of such.
fn projects_only(arena: &Arena, e: ExprId, p: Var) -> bool {
    match arena[e] {
        Node::Var(v) => v == p,
        Node::Proj(_, t) => projects_only(arena, t, p),
        Node::Tuple(l) => arena.exprs(l).iter().all(|&c| projects_only(arena, c, p)),
        _ => false,
    }
}

/// The element function `f` (whose parameter `at` reads the column `c`) made to read
/// `c.h`'s element instead: a fresh parameter of `h`'s element type, projected where the
/// old one was read.
fn reading_whole(arena: &mut Arena, f: ExprId, at: usize, c: Column) -> Option<ExprId> {
    let (params, body) = arena.lambda_parts(f)?;
    let (mut params, body) = (params.to_vec(), body);
    let ty = match arena.var_type(c.h) {
        Some(Type::Array(_, elem)) => Some(Type::clone(elem)),
        _ => return None,
    };
    let whole = arena.fresh_var("pe", ty);
    let wv = arena.var(whole);
    let mut to_whole = HashMap::default();
    to_whole.insert(c.p, wv);
    let projected = arena.subst(c.projection, &to_whole);
    let mut to_projected = HashMap::default();
    to_projected.insert(params[at], projected);
    let body = arena.subst(body, &to_projected);
    params[at] = whole;
    Some(arena.lambda(&params, body))
}

fn columns_rec(
    arena: &mut Arena,
    e: ExprId,
    columns: &HashMap<Var, Column>,
    memo: &mut HashMap<ExprId, ExprId>,
) -> ExprId {
    if let Some(&r) = memo.get(&e) {
        return r;
    }
    let r = with_stack(|| {
        let node = arena[e];
        let new = arena.map_children(node, |a, c| columns_rec(a, c, columns, memo));
        let column = |arena: &Arena, x: ExprId| match arena[x] {
            Node::Var(v) => columns.get(&v).copied(),
            _ => None,
        };
        match new {
            Node::Map(f, a) => {
                if let Some(c) = column(arena, a) {
                    if let Some(g) = reading_whole(arena, f, 0, c) {
                        let h = arena.var(c.h);
                        return arena.rebuild(e, Node::Map(g, h));
                    }
                }
            }
            Node::Map2(f, a, b) => {
                let (mut f, mut a, mut b) = (f, a, b);
                for (at, operand) in [(0, &mut a), (1, &mut b)] {
                    if let Some(c) = column(arena, *operand) {
                        if let Some(g) = reading_whole(arena, f, at, c) {
                            f = g;
                            *operand = arena.var(c.h);
                        }
                    }
                }
                return arena.rebuild(e, Node::Map2(f, a, b));
            }
            Node::Index(a, i) => {
                if let Some(c) = column(arena, a) {
                    let h = arena.var(c.h);
                    let read = arena.add(Node::Index(h, i));
                    let mut to_read = HashMap::default();
                    to_read.insert(c.p, read);
                    return arena.subst(c.projection, &to_read);
                }
            }
            // The column's binding goes once nothing reads it.
            Node::Let(v, _, rest)
                if columns.contains_key(&v) && !arena.mentions_any(rest, &[v]) =>
            {
                return rest;
            }
            _ => {}
        }
        arena.rebuild(e, new)
    });
    memo.insert(e, r);
    r
}
