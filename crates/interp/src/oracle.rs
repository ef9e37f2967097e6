//! Independent oracles for gradients: forward mode with dual numbers, one directional
//! derivative per input coordinate, and central finite differences.

use unfad_syntax::{Arena, Func};

use crate::eval::{eval_func, EvalError};
use crate::scalar::{Dual, Scalar};
use crate::value::Value;

fn real_result<S: Scalar>(v: Value<S>) -> Result<S, EvalError> {
    v.as_real()
        .ok_or_else(|| EvalError("the function does not return a real".into(), None))
}

/// Value and gradient of a real-valued `func` at `args` by forward mode: for every leaf of
/// every parameter, one evaluation with that leaf's tangent set to 1. The gradient of each
/// parameter is flat, in row-major order.
pub fn forward_gradient(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
) -> Result<(f64, Vec<Vec<f64>>), EvalError> {
    let zero: Vec<Value<Dual>> = args
        .iter()
        .map(|a| a.map_leaves(&mut |x| Dual::new(x, 0.0)))
        .collect();
    let value = real_result(eval_func(arena, func, &zero)?)?.v;
    let mut grads = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let n = a.leaves().len();
        let mut g = Vec::with_capacity(n);
        for j in 0..n {
            let mut k = 0;
            let seeded = a.map_leaves(&mut |x| {
                let d = if k == j { 1.0 } else { 0.0 };
                k += 1;
                Dual::new(x, d)
            });
            let mut duals = zero.clone();
            duals[i] = seeded;
            g.push(real_result(eval_func(arena, func, &duals)?)?.d);
        }
        grads.push(g);
    }
    Ok((value, grads))
}

/// The derivative of a real-valued `func` at `args` in the direction `tangents` (one
/// value per argument, of the same shape), by one forward-mode evaluation.
pub fn directional_derivative(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
    tangents: &[Vec<f64>],
) -> Result<f64, EvalError> {
    let duals: Vec<Value<Dual>> = args
        .iter()
        .zip(tangents)
        .map(|(a, t)| {
            let mut k = 0;
            a.map_leaves(&mut |x| {
                let d = t.get(k).copied().unwrap_or(0.0);
                k += 1;
                Dual::new(x, d)
            })
        })
        .collect();
    Ok(real_result(eval_func(arena, func, &duals)?)?.d)
}

/// The gradient by central differences, `(f(x + h) - f(x - h)) / 2h` with
/// `h = rel_step * max(1, |x|)` per coordinate. Its error is O(h^2) plus rounding.
pub fn fd_gradient(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
    rel_step: f64,
) -> Result<Vec<Vec<f64>>, EvalError> {
    let mut grads = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let leaves = a.leaves();
        let mut g = Vec::with_capacity(leaves.len());
        for (j, &x) in leaves.iter().enumerate() {
            let h = rel_step * x.abs().max(1.0);
            let shifted = |delta: f64| {
                let mut k = 0;
                a.map_leaves(&mut |y| {
                    let r = if k == j { y + delta } else { y };
                    k += 1;
                    r
                })
            };
            let mut plus = args.to_vec();
            plus[i] = shifted(h);
            let mut minus = args.to_vec();
            minus[i] = shifted(-h);
            let fp = real_result(eval_func(arena, func, &plus)?)?;
            let fm = real_result(eval_func(arena, func, &minus)?)?;
            g.push((fp - fm) / (2.0 * h));
        }
        grads.push(g);
    }
    Ok(grads)
}
