//! The evaluation order of `reduce`: the one definition that every evaluator follows (the
//! interpreter, the optimizer's unrolling of literal arrays) and that the native code
//! mirrors, so that they all compute the same bits.
//!
//! `reduce (x, y. e) z A` requires `e` associative with unit `z` (the language's contract),
//! so an implementation may reassociate it; a left fold (`foldl`) may not. A chain of
//! dependent additions is bound by the latency of the addition, so a `reduce` whose
//! function is `+` or `*` of its two parameters (in either order) runs **blocked**, with
//! [`ACCUMULATORS`] (`K`) independent accumulators. With `n = K·q + r` elements `a_0 ..
//! a_{n-1}`:
//! - if `q = 0` (fewer than `K` elements) the result is the left fold `((z ⊕ a_0) ⊕ a_1) ...`;
//! - otherwise accumulator 0 starts at `z` and accumulators `1 .. K-1` at the operator's
//!   unit ([`unit`]: `-0` for `+`, the unit that is exact for every operand, signed zeros
//!   included; `1` for `*`); element `i < K·q` is added to accumulator `i mod K`, in
//!   increasing `i`; the accumulators are combined by a fixed tree ([`combine_tree`]: for
//!   `K = 8`, `((acc_0 ⊕ acc_4) ⊕ (acc_2 ⊕ acc_6)) ⊕ ((acc_1 ⊕ acc_5) ⊕ (acc_3 ⊕
//!   acc_7))`, the left one always the function's first argument); the `r` remaining
//!   elements are then folded into that, in order.
//!
//! `max` and `min` (IEEE maximum and minimum, any NaN giving the canonical NaN) are
//! associative and commutative on every input, so every order gives the same bits: the
//! evaluators keep the left fold for them ([`ReduceOrder::Left`]), whose tie-breaking on
//! equal elements is the one the reverse-mode rule and forward mode's dual numbers share
//! (the first element that reaches the maximum takes the derivative), while the native code
//! runs them blocked as well, for speed.

use crate::{Arena, BinOp, ExprId, Node, Var};

/// How many independent accumulators a blocked `reduce` keeps (a power of two): eight,
/// so that on two lanes four vectors of partial sums hide the addition's latency of
/// four cycles in a loop that streams memory, as a dot product does.
pub const ACCUMULATORS: usize = 8;

/// How an evaluator must run a `reduce` with a given function.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReduceOrder {
    /// Blocked (see the module's documentation), for the operator given.
    Blocked(BinOp),
    /// The left fold, element by element.
    Left,
}

/// The operator `op` if the function argument `f` is `(p, q. p op q)` or `(p, q. q op p)`
/// with `op` one of `+`, `*`, `max` and `min` (the operators that may run with several
/// accumulators).
pub fn lane_operator(arena: &Arena, f: ExprId) -> Option<BinOp> {
    let (ps, body) = arena.lambda_parts(f)?;
    let [p, q] = ps else {
        return None;
    };
    match arena[body] {
        Node::Op2(op @ (BinOp::Add | BinOp::Mul | BinOp::Max | BinOp::Min), a, b) => {
            let (a, b) = (arena[a], arena[b]);
            let pair = (Node::Var(*p), Node::Var(*q));
            (p != q && ((a, b) == pair || (b, a) == pair)).then_some(op)
        }
        _ => None,
    }
}

/// Whether `e` is the sum, element by element, of the components at `path` of the
/// variables `a` and `b`, `a`'s first: `a.p + b.p`, a `map2` of such sums over them, or a
/// tuple of sums of their components (reverse mode's sums of adjoints, `unfad_jit`'s
/// accumulators and `unfad_opt`'s rules read them).
pub fn sums_parts(arena: &Arena, a: Var, b: Var, path: &mut Vec<u32>, e: ExprId) -> bool {
    // Whether `x` is the component at `path` of `v`.
    let at = |x: ExprId, v: Var| {
        let mut x = x;
        for &k in path.iter().rev() {
            match arena[x] {
                Node::Proj(i, inner) if i == k => x = inner,
                _ => return false,
            }
        }
        arena[x] == Node::Var(v)
    };
    match arena[e] {
        Node::Op2(BinOp::Add, x, y) => at(x, a) && at(y, b),
        Node::Map2(f, x, y) if at(x, a) && at(y, b) => match arena.lambda_parts(f) {
            Some((&[s, t], inner)) => sums_parts(arena, s, t, &mut Vec::new(), inner),
            _ => false,
        },
        Node::Tuple(l) => arena.exprs(l).iter().enumerate().all(|(k, &item)| {
            path.push(k as u32);
            let ok = sums_parts(arena, a, b, path, item);
            path.pop();
            ok
        }),
        _ => false,
    }
}

/// `(x, z)` if `body` is the dot product `reduce + z (map2 * row x)` (or `map2 * x row`,
/// the products and the sum in either order) with `x` a variable other than `row`: the
/// shape that the code generator computes for the rows of a matrix at once, and that
/// `unfad_opt::fission` takes out of the maps that compute more.
pub fn dot_with_row(arena: &Arena, row: Var, body: ExprId) -> Option<(Var, ExprId)> {
    let Node::Reduce(g, z, a) = arena[body] else {
        return None;
    };
    if lane_operator(arena, g) != Some(BinOp::Add) {
        return None;
    }
    let Node::Map2(h, p, q) = arena[a] else {
        return None;
    };
    let (hs, hb) = arena.lambda_parts(h)?;
    let [u, v] = hs else {
        return None;
    };
    let Node::Op2(BinOp::Mul, l, r) = arena[hb] else {
        return None;
    };
    let (l, r) = (arena[l], arena[r]);
    let pair = (Node::Var(*u), Node::Var(*v));
    if u == v || ((l, r) != pair && (r, l) != pair) {
        return None;
    }
    match (arena[p], arena[q]) {
        (Node::Var(a), Node::Var(b)) if a == row && b != row => Some((b, z)),
        (Node::Var(a), Node::Var(b)) if b == row && a != row => Some((a, z)),
        _ => None,
    }
}

/// The order in which evaluators run `reduce f z A` (see the module's documentation).
pub fn reduce_order(arena: &Arena, f: ExprId) -> ReduceOrder {
    match lane_operator(arena, f) {
        Some(op @ (BinOp::Add | BinOp::Mul)) => ReduceOrder::Blocked(op),
        _ => ReduceOrder::Left,
    }
}

/// The unit the accumulators other than the first start from: exact for every operand
/// (`-0 + x` is `x` for `x = +0` too, where `+0 + -0` is `+0`).
pub fn unit(op: BinOp) -> Option<f64> {
    match op {
        BinOp::Add => Some(-0.0),
        BinOp::Mul => Some(1.0),
        BinOp::Max => Some(f64::NEG_INFINITY),
        BinOp::Min => Some(f64::INFINITY),
        _ => None,
    }
}

/// The blocked fold of `items` from `z`: `step(acc, x)` applies the function, `unit()`
/// makes the unit of the other accumulators. The order is the module's, step by step.
pub fn blocked_fold<T: Clone, E>(
    z: T,
    unit: impl Fn() -> T,
    items: &[T],
    mut step: impl FnMut(T, T) -> Result<T, E>,
) -> Result<T, E> {
    let k = ACCUMULATORS;
    let blocked = items.len() / k * k;
    let mut acc = z;
    if blocked > 0 {
        let mut accs: Vec<T> = std::iter::once(acc).chain((1..k).map(|_| unit())).collect();
        for block in items[..blocked].chunks_exact(k) {
            for (a, x) in accs.iter_mut().zip(block) {
                *a = step(a.clone(), x.clone())?;
            }
        }
        acc = combine_tree(accs, &mut step)?;
    }
    for x in &items[blocked..] {
        acc = step(acc, x.clone())?;
    }
    Ok(acc)
}

/// The tree combining `items` (a power of two of them): item `j` of the first half with
/// item `j` of the second half, the one of the first half the function's first argument,
/// then the same on the halved list, down to one. Where the accumulators sit two by two
/// in vectors, `(acc_0, acc_1), (acc_2, acc_3), ...`, each step but the last is then one
/// operation on whole vectors, and only the last adds the two lanes of one vector.
pub fn combine_tree<T, E>(
    mut items: Vec<T>,
    step: &mut impl FnMut(T, T) -> Result<T, E>,
) -> Result<T, E> {
    assert!(
        items.len().is_power_of_two(),
        "a tree of {} accumulators",
        items.len()
    );
    while items.len() > 1 {
        let second = items.split_off(items.len() / 2);
        items = items
            .into_iter()
            .zip(second)
            .map(|(a, b)| step(a, b))
            .collect::<Result<_, _>>()?;
    }
    match items.pop() {
        Some(x) => Ok(x),
        None => panic!("a tree of no accumulator"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order as text: which element goes where.
    fn order(n: usize) -> String {
        let items: Vec<String> = (0..n).map(|i| format!("a{i}")).collect();
        let r: Result<String, ()> = blocked_fold(
            "z".to_string(),
            || "u".to_string(),
            &items,
            |a, x| Ok(format!("({a}+{x})")),
        );
        r.unwrap()
    }

    #[test]
    fn short_arrays_are_left_folds_and_longer_ones_blocked() {
        assert_eq!(
            ACCUMULATORS, 8,
            "the orders below are those of eight accumulators"
        );
        assert_eq!(order(0), "z");
        assert_eq!(order(3), "(((z+a0)+a1)+a2)");
        assert_eq!(order(7), "(((((((z+a0)+a1)+a2)+a3)+a4)+a5)+a6)");
        assert_eq!(
            order(8),
            "((((z+a0)+(u+a4))+((u+a2)+(u+a6)))+(((u+a1)+(u+a5))+((u+a3)+(u+a7))))"
        );
        assert_eq!(
            order(18),
            "(((((((z+a0)+a8)+((u+a4)+a12))+(((u+a2)+a10)+((u+a6)+a14)))\
             +((((u+a1)+a9)+((u+a5)+a13))+(((u+a3)+a11)+((u+a7)+a15))))+a16)+a17)"
        );
    }

    #[test]
    fn the_unit_of_addition_keeps_every_operand() {
        for x in [0.0, -0.0, 1.5, f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            let u = unit(BinOp::Add).unwrap();
            assert_eq!((u + x).to_bits(), x.to_bits());
        }
    }
}
