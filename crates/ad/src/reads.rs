//! Repeated reads bound once, before differentiation.
//!
//! A program that reads one position of an array several times (Rosenbrock's
//! `(x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i])`, six
//! reads of `x[i]`) gets from the macro one adjoint per read: each is a `scatter_add`
//! into the array's adjoint, an array operation that the optimizer cannot add to the
//! others as it adds scalars, and that the code generator runs as a loop of its own. Here
//! such reads become one `let` per position read, `let v = x[i] in ...`, so that their
//! adjoints are summed as reals in the body and reach the array by one scatter per
//! position. Exact for the value: the read is the same, made once.
//!
//! A *read* is a chain of indices into a variable, `A[i]` or `A[i][j]`, whose indices are
//! variables, constants and `+ - *` of them. Reads are shared within one *scope*, the
//! function's body or a lambda's body, when every variable they mention is bound outside
//! the scope or as its parameters (not by a `let` inside it), and when one of them is
//! evaluated whatever the conditions say (outside the branches of an `if` and the right
//! operands of `&&` and `||`): the `let` is evaluated first, so it must not read a
//! position the program would not have read (a read out of bounds is an error). Reads
//! inside nested lambdas are left to their own scope.

use std::collections::BTreeMap;

use unfad_syntax::fast_hash::FastSet as HashSet;
use unfad_syntax::{with_stack, Arena, BinOp, ExprId, Func, Node, Var};

use crate::elem::retype;
use crate::error::AdError;

/// `func` with the positions its scopes read more than once bound once per scope.
pub(crate) fn share_repeated_reads(arena: &mut Arena, func: &Func) -> Result<Func, AdError> {
    let body = scope(arena, func.body)?;
    Ok(Func {
        body,
        ..func.clone()
    })
}

/// A read's shape, by which equal reads are found: the array and the indices, each as
/// a small tree of variables, constants and operators.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Key {
    Var(u32),
    Const(u64),
    Op(u8, Box<Key>, Box<Key>),
    Index(Box<Key>, Box<Key>),
}

/// The key of `e` if it is a read (see the module docs); `vars` gets the variables it
/// mentions.
fn read_key(arena: &Arena, e: ExprId, vars: &mut Vec<Var>) -> Option<Key> {
    let Node::Index(a, i) = arena[e] else {
        return None;
    };
    let base = match arena[a] {
        Node::Var(v) => {
            vars.push(v);
            Key::Var(v.index() as u32)
        }
        Node::Index(..) => read_key(arena, a, vars)?,
        _ => return None,
    };
    Some(Key::Index(
        Box::new(base),
        Box::new(index_key(arena, i, vars, 0)?),
    ))
}

/// The key of an index expression: variables, constants and `+ - *` of them.
fn index_key(arena: &Arena, e: ExprId, vars: &mut Vec<Var>, depth: usize) -> Option<Key> {
    if depth > 8 {
        return None;
    }
    match arena[e] {
        Node::Var(v) => {
            vars.push(v);
            Some(Key::Var(v.index() as u32))
        }
        Node::Const(c) => Some(Key::Const(c.to_bits())),
        Node::Op2(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), x, y) => Some(Key::Op(
            match op {
                BinOp::Add => 0,
                BinOp::Sub => 1,
                _ => 2,
            },
            Box::new(index_key(arena, x, vars, depth + 1)?),
            Box::new(index_key(arena, y, vars, depth + 1)?),
        )),
        _ => None,
    }
}

/// What one scope's walk finds: each read's occurrences (and whether one is evaluated
/// unconditionally), and the variables bound inside the scope.
#[derive(Default)]
struct Found {
    reads: BTreeMap<Key, Reads>,
    bound: HashSet<Var>,
}

struct Reads {
    first: ExprId,
    count: usize,
    always: bool,
    vars: Vec<Var>,
}

/// The scope whose body is `e`: its reads shared, then the scopes of its lambdas.
fn scope(arena: &mut Arena, e: ExprId) -> Result<ExprId, AdError> {
    let mut found = Found::default();
    collect(arena, e, true, &mut found);
    let shared: Vec<(Key, ExprId)> = found
        .reads
        .into_iter()
        .filter(|(_, r)| {
            r.count >= 2 && r.always && r.vars.iter().all(|v| !found.bound.contains(v))
        })
        .map(|(k, r)| (k, r.first))
        .collect();
    // Inner lambdas are scopes of their own.
    let mut body = lambdas(arena, e)?;
    if shared.is_empty() {
        return Ok(body);
    }
    let mut lets = Vec::with_capacity(shared.len());
    for (_, read) in &shared {
        let ty = retype(arena, *read)?;
        let name = match arena[base_var(arena, *read)] {
            Node::Var(v) => format!("{}_at", arena.var_name(v)),
            _ => "read".to_string(),
        };
        let v = arena.fresh_var(&name, Some(ty));
        lets.push((v, *read));
    }
    let by_key: BTreeMap<Key, Var> = shared
        .iter()
        .zip(&lets)
        .map(|((k, _), &(v, _))| (k.clone(), v))
        .collect();
    body = replace(arena, body, &by_key);
    for &(v, read) in lets.iter().rev() {
        body = arena.let_(v, read, body);
    }
    Ok(body)
}

/// The array variable a read chain starts from.
fn base_var(arena: &Arena, mut e: ExprId) -> ExprId {
    while let Node::Index(a, _) = arena[e] {
        e = a;
    }
    e
}

/// Record the reads of `e` (not inside its lambdas), `always` false under a condition.
fn collect(arena: &Arena, e: ExprId, always: bool, found: &mut Found) {
    with_stack(|| {
        let node = arena[e];
        if let Node::Index(..) = node {
            let mut vars = Vec::new();
            if let Some(key) = read_key(arena, e, &mut vars) {
                let r = found.reads.entry(key).or_insert(Reads {
                    first: e,
                    count: 0,
                    always: false,
                    vars,
                });
                r.count += 1;
                r.always |= always;
                return;
            }
        }
        match node {
            Node::Lambda(..) => {}
            Node::Let(x, e1, e2) => {
                found.bound.insert(x);
                collect(arena, e1, always, found);
                collect(arena, e2, always, found);
            }
            Node::LetTuple(xs, e1, e2) => {
                found.bound.extend(arena.vars_of(xs).iter().copied());
                collect(arena, e1, always, found);
                collect(arena, e2, always, found);
            }
            Node::If(c, x, y) => {
                collect(arena, c, always, found);
                collect(arena, x, false, found);
                collect(arena, y, false, found);
            }
            Node::And(x, y) | Node::Or(x, y) => {
                collect(arena, x, always, found);
                collect(arena, y, false, found);
            }
            _ => {
                for c in arena.children(e) {
                    collect(arena, c, always, found);
                }
            }
        }
    })
}

/// `e` with the bodies of its lambdas (not inside another lambda) made scopes.
fn lambdas(arena: &mut Arena, e: ExprId) -> Result<ExprId, AdError> {
    with_stack(|| {
        let node = arena[e];
        if let Node::Lambda(ps, body) = node {
            let body = scope(arena, body)?;
            return Ok(arena.rebuild(e, Node::Lambda(ps, body)));
        }
        let mut err = None;
        let new = arena.map_children(node, |a, c| match lambdas(a, c) {
            Ok(x) => x,
            Err(x) => {
                err = Some(x);
                c
            }
        });
        if let Some(x) = err {
            return Err(x);
        }
        Ok(if new == node {
            e
        } else {
            arena.rebuild(e, new)
        })
    })
}

/// `e` with every read of `by_key` (not inside a lambda) replaced by its variable.
fn replace(arena: &mut Arena, e: ExprId, by_key: &BTreeMap<Key, Var>) -> ExprId {
    with_stack(|| {
        let node = arena[e];
        if let Node::Index(..) = node {
            if let Some(v) = read_key(arena, e, &mut Vec::new()).and_then(|k| by_key.get(&k)) {
                return arena.var(*v);
            }
        }
        if let Node::Lambda(..) = node {
            return e;
        }
        let new = arena.map_children(node, |a, c| replace(a, c, by_key));
        if new == node {
            e
        } else {
            arena.rebuild(e, new)
        }
    })
}
