//! Algebraic simplifications and constant folding on scalars and conditions.

use unfad_syntax::{BinOp, ExprId, Node, UnOp};

use crate::simplify::Simplifier;

fn constant(s: &Simplifier, e: ExprId) -> Option<f64> {
    match s.arena[e] {
        Node::Const(c) => Some(c),
        _ => None,
    }
}

fn is(s: &Simplifier, e: ExprId, c: f64) -> bool {
    constant(s, e) == Some(c)
}

/// `op c` on a constant is the constant result (when finite).
pub fn fold_unary(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Op1(op, a) = s.arena[e] else {
        return None;
    };
    let r = op.eval(constant(s, a)?);
    r.is_finite().then(|| s.constant(r))
}

/// `c1 op c2` on constants is the constant result (when finite).
pub fn fold_binary(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Op2(op, a, b) = s.arena[e] else {
        return None;
    };
    let r = op.eval(constant(s, a)?, constant(s, b)?);
    r.is_finite().then(|| s.constant(r))
}

/// `--e` is `e`.
pub fn double_negation(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Op1(UnOp::Neg, a) = s.arena[e] else {
        return None;
    };
    match s.arena[a] {
        Node::Op1(UnOp::Neg, inner) => Some(inner),
        _ => None,
    }
}

/// `0 * e` and `e * 0` are `0`.
pub fn times_zero(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Op2(BinOp::Mul, a, b) = s.arena[e] else {
        return None;
    };
    (is(s, a, 0.0) || is(s, b, 0.0)).then(|| s.constant(0.0))
}

/// `0 + e`, `e + 0` and `e - 0` are `e`.
pub fn plus_zero(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    match s.arena[e] {
        Node::Op2(BinOp::Add, a, b) if is(s, a, 0.0) => Some(b),
        Node::Op2(BinOp::Add | BinOp::Sub, a, b) if is(s, b, 0.0) => Some(a),
        _ => None,
    }
}

/// `1 * e`, `e * 1` and `e / 1` are `e`.
pub fn times_one(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    match s.arena[e] {
        Node::Op2(BinOp::Mul, a, b) if is(s, a, 1.0) => Some(b),
        Node::Op2(BinOp::Mul | BinOp::Div, a, b) if is(s, b, 1.0) => Some(a),
        _ => None,
    }
}

/// `0 - e` is `-e`.
pub fn zero_minus(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Op2(BinOp::Sub, a, b) = s.arena[e] else {
        return None;
    };
    is(s, a, 0.0).then(|| s.mk(Node::Op1(UnOp::Neg, b)))
}

/// `-1 * e` and `e * -1` are `-e`.
pub fn times_minus_one(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Op2(BinOp::Mul, a, b) = s.arena[e] else {
        return None;
    };
    let other = if is(s, a, -1.0) {
        b
    } else if is(s, b, -1.0) {
        a
    } else {
        return None;
    };
    Some(s.mk(Node::Op1(UnOp::Neg, other)))
}

/// `0 / e` is `0`.
pub fn zero_divided(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Op2(BinOp::Div, a, _) = s.arena[e] else {
        return None;
    };
    is(s, a, 0.0).then(|| s.constant(0.0))
}

/// Comparisons of constants and connectives of known conditions are folded.
pub fn fold_boolean(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let known = |s: &Simplifier, x: ExprId| match s.arena[x] {
        Node::Bool(b) => Some(b),
        _ => None,
    };
    let r = match s.arena[e] {
        Node::Cmp(op, a, b) => Some(op.eval(constant(s, a)?, constant(s, b)?)),
        Node::Not(a) => match s.arena[a] {
            Node::Not(inner) => return Some(inner),
            _ => Some(!known(s, a)?),
        },
        Node::And(a, b) => match (known(s, a), known(s, b)) {
            (Some(false), _) => Some(false),
            (Some(true), _) => return Some(b),
            (_, Some(true)) => return Some(a),
            _ => None,
        },
        Node::Or(a, b) => match (known(s, a), known(s, b)) {
            (Some(true), _) => Some(true),
            (Some(false), _) => return Some(b),
            (_, Some(false)) => return Some(a),
            _ => None,
        },
        _ => None,
    }?;
    Some(s.mk(Node::Bool(r)))
}

/// `(1 / a) * b` and `b * (1 / a)` are `b / a` (one operation instead of two).
pub fn reciprocal_times(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Op2(BinOp::Mul, x, y) = s.arena[e] else {
        return None;
    };
    let reciprocal = |s: &Simplifier, t: ExprId| match s.arena[t] {
        Node::Op2(BinOp::Div, one, a) if is(s, one, 1.0) => Some(a),
        _ => None,
    };
    if let Some(a) = reciprocal(s, x) {
        return Some(s.mk(Node::Op2(BinOp::Div, y, a)));
    }
    let a = reciprocal(s, y)?;
    Some(s.mk(Node::Op2(BinOp::Div, x, a)))
}
