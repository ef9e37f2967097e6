//! Algebraic simplifications and constant folding on scalars and conditions.

use unfad_syntax::{BinOp, ExprId, Node, Partial, Type, UnOp};

use crate::simplify::RuleCx;

fn constant(cx: &RuleCx, e: ExprId) -> Option<f64> {
    match cx.arena()[e] {
        Node::Const(c) => Some(c),
        _ => None,
    }
}

fn is(cx: &RuleCx, e: ExprId, c: f64) -> bool {
    constant(cx, e) == Some(c)
}

/// `op c` on a constant is the constant result (when finite).
pub fn fold_unary(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Op1(op, a) = cx.arena()[e] else {
        return None;
    };
    let r = op.eval(constant(cx, a)?);
    r.is_finite().then(|| cx.constant(r))
}

/// `c1 op c2` on constants is the constant result (when finite).
pub fn fold_binary(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Op2(op, a, b) = cx.arena()[e] else {
        return None;
    };
    let r = op.eval(constant(cx, a)?, constant(cx, b)?);
    r.is_finite().then(|| cx.constant(r))
}

/// `--e` is `e`.
pub fn double_negation(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Op1(UnOp::Neg, a) = cx.arena()[e] else {
        return None;
    };
    match cx.arena()[a] {
        Node::Op1(UnOp::Neg, inner) => Some(inner),
        _ => None,
    }
}

/// `0 * e` and `e * 0` are `0`.
pub fn times_zero(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Op2(BinOp::Mul, a, b) = cx.arena()[e] else {
        return None;
    };
    (is(cx, a, 0.0) || is(cx, b, 0.0)).then(|| cx.constant(0.0))
}

/// `0 + e`, `e + 0` and `e - 0` are `e`.
pub fn plus_zero(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    match cx.arena()[e] {
        Node::Op2(BinOp::Add, a, b) if is(cx, a, 0.0) => Some(b),
        Node::Op2(BinOp::Add | BinOp::Sub, a, b) if is(cx, b, 0.0) => Some(a),
        _ => None,
    }
}

/// `(a + b) - a` is `b` and `(a + b) - b` is `a` on ints, which are exact (a slice's
/// length, `(i + len(w)) - i`, is then `len(w)`, and the optimizer sees it is as long as
/// `w`). Not on reals, where rounding makes them differ.
pub fn int_sum_minus_term(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Op2(BinOp::Sub, s, t) = cx.arena()[e] else {
        return None;
    };
    let Node::Op2(BinOp::Add, a, b) = cx.arena()[s] else {
        return None;
    };
    if cx.ty(e)? != Type::Int {
        return None;
    }
    // Hash-consed terms are equal when their ids are; names are compared as names.
    let same = |x: ExprId| {
        x == t || matches!((cx.arena()[x], cx.arena()[t]), (Node::Var(u), Node::Var(v)) if u == v)
    };
    if same(a) {
        Some(b)
    } else if same(b) {
        Some(a)
    } else {
        None
    }
}

/// `1 * e`, `e * 1` and `e / 1` are `e`.
pub fn times_one(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    match cx.arena()[e] {
        Node::Op2(BinOp::Mul, a, b) if is(cx, a, 1.0) => Some(b),
        Node::Op2(BinOp::Mul | BinOp::Div, a, b) if is(cx, b, 1.0) => Some(a),
        _ => None,
    }
}

/// `0 - e` is `-e`.
pub fn zero_minus(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Op2(BinOp::Sub, a, b) = cx.arena()[e] else {
        return None;
    };
    is(cx, a, 0.0).then(|| cx.mk(Node::Op1(UnOp::Neg, b)))
}

/// `-1 * e` and `e * -1` are `-e`.
pub fn times_minus_one(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Op2(BinOp::Mul, a, b) = cx.arena()[e] else {
        return None;
    };
    let other = if is(cx, a, -1.0) {
        b
    } else if is(cx, b, -1.0) {
        a
    } else {
        return None;
    };
    Some(cx.mk(Node::Op1(UnOp::Neg, other)))
}

/// `0 / e` is `0`.
pub fn zero_divided(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Op2(BinOp::Div, a, _) = cx.arena()[e] else {
        return None;
    };
    is(cx, a, 0.0).then(|| cx.constant(0.0))
}

/// Comparisons of constants and connectives of known conditions are folded.
pub fn fold_boolean(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let known = |cx: &RuleCx, x: ExprId| match cx.arena()[x] {
        Node::Bool(b) => Some(b),
        _ => None,
    };
    let r = match cx.arena()[e] {
        Node::Cmp(op, a, b) => Some(op.eval(constant(cx, a)?, constant(cx, b)?)),
        Node::Not(a) => match cx.arena()[a] {
            Node::Not(inner) => return Some(inner),
            _ => Some(!known(cx, a)?),
        },
        Node::And(a, b) => match (known(cx, a), known(cx, b)) {
            (Some(false), _) => Some(false),
            (Some(true), _) => return Some(b),
            (_, Some(true)) => return Some(a),
            _ => None,
        },
        Node::Or(a, b) => match (known(cx, a), known(cx, b)) {
            (Some(true), _) => Some(true),
            (Some(false), _) => return Some(b),
            (_, Some(false)) => return Some(a),
            _ => None,
        },
        _ => None,
    }?;
    Some(cx.mk(Node::Bool(r)))
}

/// `(1 / a) * a` is 1 and `(1 / a) * -a` is -1, either way round, the reciprocal seen
/// through the `let` binding it: exact in the reals, the smooth semantics the rules assume
/// (IEEE rounds the product to within an ulp of 1, and makes NaN where `a` is 0 or
/// infinite). Reverse mode makes `1 + (1 / s) * -s` wherever a log-sum-exp subtracts its
/// maximum `m` (`m + log(s)` with `s = sum(exp(x - m))`): the adjoint of `m`, zero in the
/// reals, and with it zero the pass that finds the maximum's position for it goes.
pub fn reciprocal_product(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Op2(BinOp::Mul, x, y) = cx.arena()[e] else {
        return None;
    };
    let reciprocal = |cx: &RuleCx, t: ExprId| {
        let t = match cx.arena()[t] {
            Node::Var(v) => cx.definition(v).unwrap_or(t),
            _ => t,
        };
        match cx.arena()[t] {
            Node::Op2(BinOp::Div, one, a) if is(cx, one, 1.0) => Some(a),
            _ => None,
        }
    };
    let same = |cx: &RuleCx, a: ExprId, b: ExprId| a == b || cx.arena()[a] == cx.arena()[b];
    for (r, other) in [(x, y), (y, x)] {
        let Some(a) = reciprocal(cx, r) else {
            continue;
        };
        if same(cx, other, a) {
            return Some(cx.constant(1.0));
        }
        if let Node::Op1(UnOp::Neg, b) = cx.arena()[other] {
            if same(cx, b, a) {
                return Some(cx.constant(-1.0));
            }
        }
    }
    None
}

/// `(1 / a) * b` and `b * (1 / a)` are `b / a` (one operation instead of two), unless `b`
/// is a reciprocal too, or a quotient by `a`: `(1 / a) * (1 / a)` and `(x / a) * (1 / a)`
/// (a quotient's adjoint, `-q t` with `q = x / a` and `t = z / a`, at `z = 1`) are one
/// division beside the quotient and a product, where `(x / a) / a` would divide again,
/// the dearer operation.
pub fn reciprocal_times(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Op2(BinOp::Mul, x, y) = cx.arena()[e] else {
        return None;
    };
    let reciprocal = |cx: &RuleCx, t: ExprId| match cx.arena()[t] {
        Node::Op2(BinOp::Div, one, a) if is(cx, one, 1.0) => Some(a),
        _ => None,
    };
    let divides_by = |cx: &RuleCx, t: ExprId, a: ExprId| match cx.arena()[t] {
        Node::Op2(BinOp::Div, n, d) => d == a || cx.arena()[d] == cx.arena()[a] || is(cx, n, 1.0),
        _ => false,
    };
    if let Some(a) = reciprocal(cx, x) {
        if divides_by(cx, y, a) {
            return None;
        }
    }
    if let Some(a) = reciprocal(cx, y) {
        if divides_by(cx, x, a) {
            return None;
        }
    }
    if let Some(a) = reciprocal(cx, x) {
        return Some(cx.mk(Node::Op2(BinOp::Div, y, a)));
    }
    let a = reciprocal(cx, y)?;
    Some(cx.mk(Node::Op2(BinOp::Div, x, a)))
}

/// `s_one_minus_s(p) * Q`, where `Q` adds and subtracts quotients by `p` and by `1 - p`, is
/// the same sum with each quotient `u / p` replaced by `(1 - p) * u` and each `u / (1 - p)`
/// by `p * u`: `p (1 - p)` cancels their denominators. Reverse mode makes this product
/// whenever `log` is applied to a sigmoid `p` or to `1 - p` (a logistic or cross-entropy
/// loss): the adjoint `p (1 - p) ((1 - t) / (1 - p) - t / p)` becomes `p (1 - t) - (1 - p) t`,
/// without its two divisions (and finite where `p` saturates at 0 or 1).
pub fn logistic_quotients(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    let Node::Op2(BinOp::Mul, x, y) = cx.arena()[e] else {
        return None;
    };
    let logistic = |cx: &RuleCx, t: ExprId| match cx.arena()[t] {
        Node::Op1(UnOp::Partial(Partial::Logistic), p) => Some(p),
        _ => None,
    };
    let (p, q) = match (logistic(cx, x), logistic(cx, y)) {
        (Some(p), _) => (p, y),
        (None, Some(p)) => (p, x),
        (None, None) => return None,
    };
    let mut terms = Vec::new();
    quotients_by(cx, q, p, false, &mut terms)?;
    let one = cx.constant(1.0);
    let mut sum: Option<ExprId> = None;
    for (negated, u, by_p) in terms {
        let factor = if by_p {
            cx.mk(Node::Op2(BinOp::Sub, one, p))
        } else {
            p
        };
        let t = cx.mk(Node::Op2(BinOp::Mul, factor, u));
        sum = Some(match (sum, negated) {
            (None, false) => t,
            (None, true) => cx.mk(Node::Op1(UnOp::Neg, t)),
            (Some(s), false) => cx.mk(Node::Op2(BinOp::Add, s, t)),
            (Some(s), true) => cx.mk(Node::Op2(BinOp::Sub, s, t)),
        });
    }
    sum
}

/// The terms of `q`, a sum of (negated) quotients by `p` or `1 - p` (directly or through a
/// `let`-bound name), as (negated, numerator, by `p`); `None` if some term is not such a
/// quotient, or there are more than eight.
fn quotients_by(
    cx: &RuleCx,
    q: ExprId,
    p: ExprId,
    negated: bool,
    out: &mut Vec<(bool, ExprId, bool)>,
) -> Option<()> {
    if out.len() >= 8 {
        return None;
    }
    match cx.arena()[q] {
        Node::Op2(BinOp::Add, a, b) => {
            quotients_by(cx, a, p, negated, out)?;
            quotients_by(cx, b, p, negated, out)
        }
        Node::Op2(BinOp::Sub, a, b) => {
            quotients_by(cx, a, p, negated, out)?;
            quotients_by(cx, b, p, !negated, out)
        }
        Node::Op1(UnOp::Neg, a) => quotients_by(cx, a, p, !negated, out),
        Node::Op2(BinOp::Div, u, d) => {
            // The same term: one node once hash-consed, or the same name.
            let same = |a: ExprId, b: ExprId| {
                a == b
                    || matches!((cx.arena()[a], cx.arena()[b]), (Node::Var(x), Node::Var(y)) if x == y)
            };
            let d = match cx.arena()[d] {
                Node::Var(v) if !same(d, p) => cx.definition(v).unwrap_or(d),
                _ => d,
            };
            let by_p = if same(d, p) {
                true
            } else if matches!(cx.arena()[d], Node::Op2(BinOp::Sub, one, r) if same(r, p) && is(cx, one, 1.0))
            {
                false
            } else {
                return None;
            };
            out.push((negated, u, by_p));
            Some(())
        }
        _ => None,
    }
}
