//! Constant factors of the result, taken out of the reverse pass.
//!
//! Reverse mode is linear in its seed: the gradient of `c * e`, for a `c` that does not
//! depend on the parameters being differentiated, is `c` times the gradient of `e`. A batch
//! loss divided by the batch's size (`sum(losses) / real(len(X))`) is the common case. The
//! direct macro seeds `e` with `1 / c` instead of 1, and that seed then multiplies every
//! contribution, deep in the loops of the reverse pass: the optimizer cannot take it out of
//! a sum of rows once it is inside each row's partial derivatives, and adjoints that were
//! accumulated where they are made get stored first (a mean loss's gradient took twice
//! the time of the sum's, and a matrix per example of workspace).
//!
//! [`reverse_factored`] takes the factors out first: it differentiates `e` (seed 1), then
//! computes the value as the program does (`v / c`, same operations in the same order)
//! and scales each gradient once by the product of the factors' derivatives. Gradients
//! then differ from the seeded macro's by rounding only (`d * (a * b)` against
//! `(d * a) * b`).
//!
//! A factor is an operand of `*`, the divisor of `/`, a negation (a negative
//! log-likelihood, `-sum(l)`: its seed -1 inside the loops cost as much as `1 / n`), or a
//! term added or subtracted (which scales nothing, or by -1), around the result (after the
//! `let`s that lead to it, at any depth), that is *inactive*: built from
//! constants, parameters that are not differentiated (and ints), lengths of arrays whose
//! length the parameters give, and scalar arithmetic and functions of those, directly or
//! through `let`-bound variables. It has no loop, so it is computed again at the top,
//! before the value and gradient.

use std::collections::HashMap;

use unfad_syntax::{Arena, BinOp, ExprId, Func, Node, Type, UnOp, Var};

use crate::error::AdError;
use crate::ground;

/// One factor around the result, outermost first, its term over the parameters apart.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Factor {
    /// `c * e`
    Left,
    /// `e * c`
    Right,
    /// `e / c`
    Divisor,
    /// `-e`
    Negation,
    /// `c + e`
    Plus,
    /// `e + c`
    PlusRight,
    /// `e - c`
    Minus,
    /// `c - e`
    From,
}

/// What the walk down to the result knows of the variables in scope.
#[derive(Default)]
struct Scope {
    /// The parameters, and whether each is differentiated.
    params: HashMap<Var, bool>,
    /// `let`-bound variables in scope at the result, with their definitions.
    lets: HashMap<Var, ExprId>,
}

/// Deepest chain of terms followed to resolve one factor: a guard against pathological
/// chains, far beyond what programs write.
const MAX_DEPTH: usize = 64;

impl Scope {
    /// `e` as an inactive scalar term over the parameters only (its `let`-bound variables
    /// replaced by their definitions, lengths by lengths of parameters), built anew, or
    /// `None` if `e` may depend on a differentiated parameter or is not such a term.
    fn inactive(&self, a: &mut Arena, e: ExprId, depth: usize) -> Option<ExprId> {
        if depth > MAX_DEPTH {
            return None;
        }
        match a[e] {
            Node::Const(c) => Some(a.constant(c)),
            Node::Var(v) => match self.params.get(&v) {
                Some(false) => Some(a.var(v)),
                Some(true) => (a.var_type(v) == Some(&Type::Int)).then(|| a.var(v)),
                None => {
                    let def = *self.lets.get(&v)?;
                    self.inactive(a, def, depth + 1)
                }
            },
            Node::Len(arr) => {
                let p = self.length_source(a, arr, depth + 1)?;
                let pe = a.var(p);
                Some(a.add(Node::Len(pe)))
            }
            Node::Op1(op, x) => {
                let x = self.inactive(a, x, depth + 1)?;
                Some(a.op1(op, x))
            }
            Node::Op2(op, x, y) => {
                let x = self.inactive(a, x, depth + 1)?;
                let y = self.inactive(a, y, depth + 1)?;
                Some(a.op2(op, x, y))
            }
            _ => None,
        }
    }

    /// A parameter as long as the array `e`: `e` is that parameter, a `let`-bound alias
    /// of it, or a map over it (a `map2` over two arrays of one declared length).
    fn length_source(&self, a: &Arena, e: ExprId, depth: usize) -> Option<Var> {
        if depth > MAX_DEPTH {
            return None;
        }
        match a[e] {
            Node::Var(v) if self.params.contains_key(&v) => Some(v),
            Node::Var(v) => self.length_source(a, *self.lets.get(&v)?, depth + 1),
            Node::Map(_, x) | Node::ZerosLike(x) | Node::OnesLike(x) => {
                self.length_source(a, x, depth + 1)
            }
            Node::Map2(_, x, y) => {
                let p = self.length_source(a, x, depth + 1)?;
                let q = self.length_source(a, y, depth + 1)?;
                let same = p == q
                    || match (a.var_type(p)?, a.var_type(q)?) {
                        (Type::Array(n, _), Type::Array(m, _)) => n == m && n.var.is_some(),
                        _ => false,
                    };
                same.then_some(p)
            }
            Node::Let(_, _, body) => self.length_source(a, body, depth + 1),
            _ => None,
        }
    }
}

/// `e` without the factors around its result, which go into `factors` (outermost first,
/// each with its inactive term over the parameters); `e` itself when it has none.
fn peel(
    scope: &mut Scope,
    a: &mut Arena,
    e: ExprId,
    factors: &mut Vec<(Factor, ExprId)>,
) -> ExprId {
    match a[e] {
        Node::Let(x, e1, e2) => {
            scope.lets.insert(x, e1);
            let inner = peel(scope, a, e2, factors);
            if inner == e2 {
                e
            } else {
                a.let_(x, e1, inner)
            }
        }
        Node::Op2(BinOp::Mul, x, y) => {
            if let Some(c) = scope.inactive(a, x, 0) {
                factors.push((Factor::Left, c));
                peel(scope, a, y, factors)
            } else if let Some(c) = scope.inactive(a, y, 0) {
                factors.push((Factor::Right, c));
                peel(scope, a, x, factors)
            } else {
                e
            }
        }
        Node::Op2(op @ (BinOp::Add | BinOp::Sub), x, y) => {
            if let Some(c) = scope.inactive(a, x, 0) {
                let f = if op == BinOp::Add {
                    Factor::Plus
                } else {
                    Factor::From
                };
                factors.push((f, c));
                peel(scope, a, y, factors)
            } else if let Some(c) = scope.inactive(a, y, 0) {
                let f = if op == BinOp::Add {
                    Factor::PlusRight
                } else {
                    Factor::Minus
                };
                factors.push((f, c));
                peel(scope, a, x, factors)
            } else {
                e
            }
        }
        Node::Op2(BinOp::Div, x, y) => match scope.inactive(a, y, 0) {
            Some(c) => {
                factors.push((Factor::Divisor, c));
                peel(scope, a, x, factors)
            }
            None => e,
        },
        Node::Op1(UnOp::Neg, x) => {
            let c = a.constant(-1.0);
            factors.push((Factor::Negation, c));
            peel(scope, a, x, factors)
        }
        _ => e,
    }
}

/// Value and gradient with respect to `wrt` ([`crate::reverse_weakened`]'s), with the
/// result's inactive factors taken out of the reverse pass (see the module's
/// documentation): `let c1 = .. in let d = .. in let (v, g1, ..., gk) = R in
/// (v / c1 ..., d ·̂ g1, ..., d ·̂ gk)`, `R` the value and gradient of the result without
/// its factors. [`crate::reverse_weakened`]'s term itself when the result has no factor.
/// A sum of two terms that share no statement is differentiated term by term
/// ([`split_sum`]).
pub fn reverse_factored(a: &mut Arena, func: &Func, wrt: &[usize]) -> Result<Func, AdError> {
    if let Some((first, second)) = split_sum(a, func, wrt) {
        return reverse_of_sum(a, func, wrt, &first, &second);
    }
    let mut scope = Scope::default();
    for (i, &p) in func.params.iter().enumerate() {
        scope.params.insert(p, wrt.contains(&i));
    }
    let mut factors = Vec::new();
    let body = peel(&mut scope, a, func.body, &mut factors);
    if factors.is_empty() {
        return crate::reverse_weakened(a, func, wrt);
    }
    let inner = Func {
        body,
        ..func.clone()
    };
    let rev = crate::reverse_weakened(a, &inner, wrt)?;
    let tys = crate::reverse::types_of(a, &func.params)?;

    // The factors' values, bound once at the top, and the gradients' scale `d`: the
    // product of the factors' derivatives, outermost first.
    let mut binds: Vec<(Var, ExprId)> = Vec::new();
    let mut cs = Vec::with_capacity(factors.len());
    let mut d: Option<ExprId> = None;
    for &(f, term) in &factors {
        let c = a.fresh_var("c", Some(Type::Real));
        binds.push((c, term));
        cs.push(c);
        let ce = a.var(c);
        let df = match f {
            Factor::Left | Factor::Right | Factor::Negation => ce,
            Factor::Divisor => {
                let one = a.constant(1.0);
                a.op2(BinOp::Div, one, ce)
            }
            Factor::From => a.constant(-1.0),
            // A constant added changes no gradient.
            Factor::Plus | Factor::PlusRight | Factor::Minus => continue,
        };
        d = Some(match d {
            None => df,
            Some(prev) => a.op2(BinOp::Mul, prev, df),
        });
    }
    // The gradients' scale, if not 1.
    let dv = match d {
        Some(d) => {
            let dv = a.fresh_var("d", Some(Type::Real));
            binds.push((dv, d));
            Some(dv)
        }
        None => None,
    };

    // The value as the program computes it, innermost factor first.
    let v = a.fresh_var("v", Some(Type::Real));
    let mut value = a.var(v);
    for (&(f, _), &c) in factors.iter().zip(&cs).rev() {
        let ce = a.var(c);
        value = match f {
            Factor::Left => a.op2(BinOp::Mul, ce, value),
            Factor::Right => a.op2(BinOp::Mul, value, ce),
            Factor::Divisor => a.op2(BinOp::Div, value, ce),
            Factor::Negation => a.op1(UnOp::Neg, value),
            Factor::Plus => a.op2(BinOp::Add, ce, value),
            Factor::PlusRight => a.op2(BinOp::Add, value, ce),
            Factor::Minus => a.op2(BinOp::Sub, value, ce),
            Factor::From => a.op2(BinOp::Sub, ce, value),
        };
    }
    let gs: Vec<Var> = wrt
        .iter()
        .map(|&i| {
            let n = format!("g{}", a.var_name(func.params[i]));
            a.fresh_var(&n, Some(tys[i].clone()))
        })
        .collect();
    let mut items = vec![value];
    for (&g, &i) in gs.iter().zip(wrt) {
        let ge = a.var(g);
        items.push(match dv {
            Some(dv) => {
                let de = a.var(dv);
                ground::scale(a, &tys[i], de, ge)?
            }
            None => ge,
        });
    }
    let result = a.tuple(&items);
    let mut pattern = vec![v];
    pattern.extend(&gs);
    let mut body = a.let_tuple(&pattern, rev.body, result);
    for &(x, e) in binds.iter().rev() {
        body = a.let_(x, e, body);
    }
    crate::elem::retype(a, body)?;
    Ok(Func { body, ..rev })
}

/// A statement of the `let` chain that leads to the result.
#[derive(Clone, Copy)]
enum Stmt {
    One(Var, ExprId),
    Many(unfad_syntax::VarList, ExprId),
}

/// The statements of the chain of `let`s at the top of `e`, and its tail.
fn unchain(a: &Arena, mut e: ExprId) -> (Vec<Stmt>, ExprId) {
    let mut stmts = Vec::new();
    loop {
        match a[e] {
            Node::Let(x, e1, e2) => {
                stmts.push(Stmt::One(x, e1));
                e = e2;
            }
            Node::LetTuple(xs, e1, e2) => {
                stmts.push(Stmt::Many(xs, e1));
                e = e2;
            }
            _ => return (stmts, e),
        }
    }
}

/// The statements of `stmts` that `e` needs (reads, or reads through those it reads), in
/// order.
fn needed(a: &Arena, stmts: &[Stmt], e: ExprId) -> Vec<usize> {
    let mut wanted: std::collections::HashSet<Var> = a.free_vars(e).into_iter().collect();
    let mut out = Vec::new();
    for (i, s) in stmts.iter().enumerate().rev() {
        let (bound, rhs): (Vec<Var>, ExprId) = match *s {
            Stmt::One(x, rhs) => (vec![x], rhs),
            Stmt::Many(xs, rhs) => (a.vars_of(xs).to_vec(), rhs),
        };
        if bound.iter().any(|v| wanted.contains(v)) {
            wanted.extend(a.free_vars(rhs));
            out.push(i);
        }
    }
    out.reverse();
    out
}

/// `func` with the body `stmts` (those of `keep`) leading to `tail`.
fn with_body(a: &mut Arena, func: &Func, stmts: &[Stmt], keep: &[usize], tail: ExprId) -> Func {
    let mut body = tail;
    for &i in keep.iter().rev() {
        body = match stmts[i] {
            Stmt::One(x, rhs) => a.let_(x, rhs, body),
            Stmt::Many(xs, rhs) => {
                let xs = a.vars_of(xs).to_vec();
                a.let_tuple(&xs, rhs, body)
            }
        };
    }
    Func {
        body,
        ..func.clone()
    }
}

/// Whether `func`'s result has a factor to take out ([`peel`] finds one).
fn has_factor(a: &mut Arena, func: &Func, wrt: &[usize]) -> bool {
    let mut scope = Scope::default();
    for (i, &p) in func.params.iter().enumerate() {
        scope.params.insert(p, wrt.contains(&i));
    }
    let mut factors = Vec::new();
    peel(&mut scope, a, func.body, &mut factors);
    !factors.is_empty()
}

/// A result that is the sum `t1 + t2` (or difference, `t1 + -t2`) of terms that share no
/// statement of the chain leading to them, one of which has a factor to take out (a
/// mean's loss beside a penalty, `sum(l) / real(len(X)) + lam * sum(w * w)`): the two
/// functions computing them, each with its statements.
fn split_sum(a: &mut Arena, func: &Func, wrt: &[usize]) -> Option<(Func, Func)> {
    let (stmts, tail) = unchain(a, func.body);
    let (op, t1, t2) = match a[tail] {
        Node::Op2(op @ (BinOp::Add | BinOp::Sub), x, y) => (op, x, y),
        _ => return None,
    };
    let (n1, n2) = (needed(a, &stmts, t1), needed(a, &stmts, t2));
    if n1.iter().any(|i| n2.contains(i)) {
        return None;
    }
    let t2 = if op == BinOp::Sub {
        a.op1(UnOp::Neg, t2)
    } else {
        t2
    };
    let first = with_body(a, func, &stmts, &n1, t1);
    let second = with_body(a, func, &stmts, &n2, t2);
    (has_factor(a, &first, wrt) || has_factor(a, &second, wrt)).then_some((first, second))
}

/// Value and gradient of `func`, whose result is the sum of those of `first` and
/// `second`: each differentiated with its own factors taken out, then `(v1 + v2, g1 +̂
/// h1, ...)`. The value is the program's (`t1 - t2` is `t1 + -t2` in floating point).
fn reverse_of_sum(
    a: &mut Arena,
    func: &Func,
    wrt: &[usize],
    first: &Func,
    second: &Func,
) -> Result<Func, AdError> {
    let r1 = reverse_factored(a, first, wrt)?;
    let r2 = reverse_factored(a, second, wrt)?;
    let tys = crate::reverse::types_of(a, &func.params)?;
    let bind = |a: &mut Arena| -> Vec<Var> {
        let mut vars = vec![a.fresh_var("v", Some(Type::Real))];
        for &i in wrt {
            let n = format!("g{}", a.var_name(func.params[i]));
            vars.push(a.fresh_var(&n, Some(tys[i].clone())));
        }
        vars
    };
    let (xs, ys) = (bind(a), bind(a));
    let mut items = Vec::with_capacity(xs.len());
    for (k, (&x, &y)) in xs.iter().zip(&ys).enumerate() {
        let (xe, ye) = (a.var(x), a.var(y));
        let ty = if k == 0 {
            Type::Real
        } else {
            tys[wrt[k - 1]].clone()
        };
        items.push(ground::add_hat(a, &ty, xe, ye)?);
    }
    let result = a.tuple(&items);
    let body = a.let_tuple(&ys, r2.body, result);
    let body = a.let_tuple(&xs, r1.body, body);
    crate::elem::retype(a, body)?;
    Ok(Func { body, ..r1 })
}
