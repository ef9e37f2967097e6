//! Small builders of Target terms shared by every rule.
//!
//! Every variable made here carries its type, so that generated terms type-check without
//! annotations.

use unfad_syntax::{Arena, BinOp, CmpOp, ExprId, Node, Type, Var};

use crate::error::AdError;

pub(crate) fn num(a: &mut Arena, c: f64) -> ExprId {
    a.constant(c)
}

pub(crate) fn add(a: &mut Arena, x: ExprId, y: ExprId) -> ExprId {
    a.op2(BinOp::Add, x, y)
}

pub(crate) fn sub(a: &mut Arena, x: ExprId, y: ExprId) -> ExprId {
    a.op2(BinOp::Sub, x, y)
}

pub(crate) fn mul(a: &mut Arena, x: ExprId, y: ExprId) -> ExprId {
    a.op2(BinOp::Mul, x, y)
}

pub(crate) fn div(a: &mut Arena, x: ExprId, y: ExprId) -> ExprId {
    a.op2(BinOp::Div, x, y)
}

pub(crate) fn cmp(a: &mut Arena, op: CmpOp, x: ExprId, y: ExprId) -> ExprId {
    a.add(Node::Cmp(op, x, y))
}

pub(crate) fn if_(a: &mut Arena, c: ExprId, t: ExprId, e: ExprId) -> ExprId {
    a.add(Node::If(c, t, e))
}

/// `fun (x1, ..., xk) -> body(x1, ..., xk)` with fresh parameters of the given names and
/// types; also the function argument `(x, y. e)` of array operations.
pub(crate) fn lambda(
    a: &mut Arena,
    params: &[(&str, Type)],
    body: impl FnOnce(&mut Arena, &[ExprId]) -> Result<ExprId, AdError>,
) -> Result<ExprId, AdError> {
    let vars: Vec<Var> = params
        .iter()
        .map(|(n, t)| a.fresh_var(n, Some(t.clone())))
        .collect();
    let refs: Vec<ExprId> = vars.iter().map(|&v| a.var(v)).collect();
    let b = body(a, &refs)?;
    Ok(a.lambda(&vars, b))
}

/// The operator section `(a, b. a op b)` on reals, with typed parameters.
pub(crate) fn section(a: &mut Arena, op: BinOp) -> ExprId {
    let x = a.fresh_var("a", Some(Type::Real));
    let y = a.fresh_var("b", Some(Type::Real));
    let (ex, ey) = (a.var(x), a.var(y));
    let body = a.op2(op, ex, ey);
    a.lambda(&[x, y], body)
}

pub(crate) fn map2(a: &mut Arena, f: ExprId, x: ExprId, y: ExprId) -> ExprId {
    a.add(Node::Map2(f, x, y))
}

pub(crate) fn map(a: &mut Arena, f: ExprId, x: ExprId) -> ExprId {
    a.add(Node::Map(f, x))
}

pub(crate) fn reduce(a: &mut Arena, f: ExprId, z: ExprId, x: ExprId) -> ExprId {
    a.add(Node::Reduce(f, z, x))
}

pub(crate) fn zeros_like(a: &mut Arena, x: ExprId) -> ExprId {
    a.add(Node::ZerosLike(x))
}

/// `(e1, ..., ek)` (the item itself for k = 1); an error for k = 0, where
/// `Arena::tuple` would panic: the language has no empty tuple.
pub(crate) fn tuple(a: &mut Arena, items: &[ExprId]) -> Result<ExprId, AdError> {
    if items.is_empty() {
        return Err(AdError::Internal("an empty tuple".into()));
    }
    Ok(a.tuple(items))
}

/// Component `i` of `e`: the item itself when `e` is a tuple literal, else `e.i`.
pub(crate) fn component(a: &mut Arena, e: ExprId, i: usize) -> ExprId {
    match a[e] {
        Node::Tuple(l) if i < l.len() => a.exprs(l)[i],
        _ => a.proj(i as u32, e),
    }
}

/// True for terms that may be duplicated freely: variables and constants.
pub(crate) fn is_atom(a: &Arena, e: ExprId) -> bool {
    matches!(a[e], Node::Var(_) | Node::Const(_))
}

/// The state shared by every part of one reverse-mode run: the counter that makes name
/// hints (`Y1`, `Y2`, ...) distinct, and which rules apply. Shared by reference between the
/// nested runs of one call (hence the `Cell`).
#[derive(Default)]
pub struct Run {
    next: std::cell::Cell<usize>,
    /// Only the paper's rules (no dedicated rules for sums and extrema).
    pub(crate) paper_rules_only: bool,
    /// The direct macro's continuations take only the adjoints of the variables live
    /// after their subterm, not of all of Γ (see `direct`).
    pub(crate) weakened: bool,
    /// The free variables of the Source subterms, for every continuation of the run
    /// (the macro of each loop body included): one memo, filled once.
    pub(crate) free: std::cell::RefCell<crate::live::FreeVars>,
}

impl Run {
    /// A run with the paper's rules only.
    pub(crate) fn paper() -> Run {
        Run {
            paper_rules_only: true,
            ..Run::default()
        }
    }

    /// A run of the direct macro with weakened continuations.
    pub(crate) fn weakened() -> Run {
        Run {
            weakened: true,
            ..Run::default()
        }
    }

    pub(crate) fn next(&self) -> usize {
        let n = self.next.get() + 1;
        self.next.set(n);
        n
    }
}
