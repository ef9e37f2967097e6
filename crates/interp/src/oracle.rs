//! Independent oracles for derivatives: forward mode with dual numbers (one directional
//! derivative per input coordinate, or a Jacobian-vector product of any result), second
//! order with nested dual numbers (Hessian-vector products and dense Hessians), and central
//! finite differences (of values for gradients, of gradients for Hessian-vector products),
//! and the evaluation of programs holding `grad` and `jvp` with tagged dual numbers
//! (values, and gradients by tagged forward mode).
//!
//! They are written plainly, one evaluation of the interpreter per seeded coordinate, so that
//! they stay obviously right; they are meant for small inputs.

use unfad_syntax::{Arena, Func, Type};

use crate::eval::{eval_func, EvalError, Interp};
use crate::scalar::{Dual, Scalar};
use crate::tagged::Tagged;
use crate::value::{real_leaves, Value};

fn real_result<S: Scalar>(v: Value<S>) -> Result<S, EvalError> {
    v.as_real()
        .ok_or_else(|| EvalError("the function does not return a real".into(), None))
}

/// For each parameter of `func`, which leaves of its argument in `args` are reals (the
/// others are ints, which have no derivative: the gradient oracles give them 0, as the
/// native gradient does, and never perturb them, which could make an index not whole).
fn real_leaves_of_args<S: crate::Scalar>(
    arena: &Arena,
    func: &Func,
    args: &[Value<S>],
) -> Vec<Vec<bool>> {
    func.param_types(arena)
        .iter()
        .zip(args)
        .map(|(t, a)| real_leaves(t, a))
        .collect()
}

/// Value and gradient of a real-valued `func` at `args` by forward mode: for every real
/// leaf of every parameter, one evaluation with that leaf's tangent set to 1 (0 for the
/// leaves that are ints). The gradient of each parameter is flat, in row-major order.
pub fn forward_gradient(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
) -> Result<(f64, Vec<Vec<f64>>), EvalError> {
    let (value, grads) = forward_gradient_sampled(arena, func, args, usize::MAX)?;
    Ok((value, grads.into_iter().map(every_leaf).collect()))
}

/// A gradient per parameter, flat, with the leaves an oracle was not run at `None`.
pub type SampledGradient = Vec<Vec<Option<f64>>>;

/// [`forward_gradient`] at no more than `limit` leaves of each parameter (see [`sampled`]);
/// the others are `None`. Each leaf costs one evaluation, so this bounds the oracle's cost
/// on large inputs to `limit` evaluations per parameter.
pub fn forward_gradient_sampled(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
    limit: usize,
) -> Result<(f64, SampledGradient), EvalError> {
    let zero: Vec<Value<Dual>> = args
        .iter()
        .map(|a| a.map_leaves(&mut |x| Dual::new(x, 0.0)))
        .collect();
    let value = real_result(eval_func(arena, func, &zero)?)?.v;
    let mut grads = Vec::new();
    let reals = real_leaves_of_args(arena, func, args);
    for (i, a) in args.iter().enumerate() {
        let n = a.leaves().len();
        let mut g = vec![None; n];
        for j in sampled(n, limit) {
            if !reals[i].get(j).copied().unwrap_or(true) {
                g[j] = Some(0.0);
                continue;
            }
            let mut k = 0;
            let seeded = a.map_leaves(&mut |x| {
                let d = if k == j { 1.0 } else { 0.0 };
                k += 1;
                Dual::new(x, d)
            });
            let mut duals = zero.clone();
            duals[i] = seeded;
            g[j] = Some(real_result(eval_func(arena, func, &duals)?)?.d);
        }
        grads.push(g);
    }
    Ok((value, grads))
}

/// The positions of at most `limit` of `n` leaves, spread evenly and including the first
/// and the last: every position when `limit >= n`.
pub fn sampled(n: usize, limit: usize) -> Vec<usize> {
    if limit >= n {
        return (0..n).collect();
    }
    match limit {
        0 => Vec::new(),
        1 => vec![0],
        k => {
            let mut at: Vec<usize> = (0..k).map(|t| t * (n - 1) / (k - 1)).collect();
            at.dedup();
            at
        }
    }
}

/// A gradient computed at every leaf, unwrapped.
fn every_leaf(g: Vec<Option<f64>>) -> Vec<f64> {
    g.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect()
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
/// `h = rel_step * max(1, |x|)` per real coordinate (0 for the leaves that are ints). Its
/// error is O(h^2) plus rounding.
pub fn fd_gradient(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
    rel_step: f64,
) -> Result<Vec<Vec<f64>>, EvalError> {
    let grads = fd_gradient_sampled(arena, func, args, rel_step, usize::MAX)?;
    Ok(grads.into_iter().map(every_leaf).collect())
}

/// [`fd_gradient`] at no more than `limit` leaves of each parameter (see [`sampled`]);
/// the others are `None`.
pub fn fd_gradient_sampled(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
    rel_step: f64,
    limit: usize,
) -> Result<SampledGradient, EvalError> {
    let mut grads = Vec::new();
    let reals = real_leaves_of_args(arena, func, args);
    for (i, a) in args.iter().enumerate() {
        let leaves = a.leaves();
        let mut g = vec![None; leaves.len()];
        for j in sampled(leaves.len(), limit) {
            if !reals[i].get(j).copied().unwrap_or(true) {
                g[j] = Some(0.0);
                continue;
            }
            let x = leaves[j];
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
            g[j] = Some((fp - fm) / (2.0 * h));
        }
        grads.push(g);
    }
    Ok(grads)
}

/// Whether the type holds no function (its values have leaves all the way down).
fn is_ground(ty: &Type) -> bool {
    match ty {
        Type::Real | Type::Int | Type::Bool => true,
        Type::Tuple(items) => items.iter().all(is_ground),
        Type::Array(_, elem) => is_ground(elem),
        Type::Func(..) => false,
    }
}

/// Whether `a` and `b` have the same shape: the same tuple and array structure with reals at
/// the same places.
fn same_shape(a: &Value<f64>, b: &Value<f64>) -> bool {
    match (a, b) {
        (Value::Real(_), Value::Real(_)) => true,
        (Value::Bool(_), Value::Bool(_)) => true,
        (Value::Tuple(x), Value::Tuple(y)) | (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| same_shape(p, q))
        }
        _ => false,
    }
}

/// The real-leaf masks of the arguments, after checking that `others` (tangents or a
/// direction, called `what` in errors) has one value per argument, each of its shape.
fn check_like_args(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
    others: &[Value<f64>],
    what: &str,
) -> Result<Vec<Vec<bool>>, EvalError> {
    if args.len() != func.params.len() {
        return Err(EvalError(
            format!(
                "{} argument(s) for {} parameter(s)",
                args.len(),
                func.params.len()
            ),
            None,
        ));
    }
    if others.len() != args.len() {
        return Err(EvalError(
            format!("{} {what}(s) for {} parameter(s)", others.len(), args.len()),
            None,
        ));
    }
    let names = func.param_names(arena);
    for ((name, a), o) in names.iter().zip(args).zip(others) {
        if !same_shape(a, o) {
            return Err(EvalError(
                format!("the {what} of parameter `{name}` does not have the shape of its argument ({o} for {a})"),
                None,
            ));
        }
    }
    Ok(real_masks(arena, func, args))
}

/// For each argument, which of its leaves are reals.
fn real_masks(arena: &Arena, func: &Func, args: &[Value<f64>]) -> Vec<Vec<bool>> {
    func.param_types(arena)
        .iter()
        .zip(args)
        .map(|(t, a)| real_leaves(t, a))
        .collect()
}

/// `v` with its leaves replaced by `f(leaf index, leaf)`, in row-major order.
fn map_indexed<T: Scalar>(v: &Value<f64>, mut f: impl FnMut(usize, f64) -> T) -> Value<T> {
    let mut k = 0;
    v.map_leaves(&mut |x| {
        let y = f(k, x);
        k += 1;
        y
    })
}

/// Value and derivative of `func` at `args` in the direction `tangents` (a
/// Jacobian-vector product), by one forward-mode evaluation. The result may be of any type
/// without functions (a real, arrays, tuples, nested); the tangent has its shape. Tangents
/// have the shapes of the arguments; the tangents of int leaves are ignored (ints do not
/// vary), and int leaves of the result get tangent 0.
pub fn jvp(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
    tangents: &[Value<f64>],
) -> Result<(Value<f64>, Value<f64>), EvalError> {
    ground_result(func)?;
    let masks = check_like_args(arena, func, args, tangents, "tangent")?;
    let duals: Vec<Value<Dual>> = args
        .iter()
        .zip(tangents)
        .zip(&masks)
        .map(|((a, t), mask)| {
            let t = t.leaves();
            map_indexed(a, |k, x| Dual::new(x, if mask[k] { t[k] } else { 0.0 }))
        })
        .collect();
    let result = eval_func(arena, func, &duals)?;
    let value = result.map_leaves(&mut |x: Dual| x.v);
    let real = real_leaves(&func.ret, &value);
    let tangent = {
        let mut k = 0;
        result.map_leaves(&mut |x: Dual| {
            let d = if real[k] { x.d } else { 0.0 };
            k += 1;
            d
        })
    };
    Ok((value, tangent))
}

/// A second-order number: `v.v` the value, `v.d` the derivative along the inner
/// perturbation, `d.v` along the outer one, `d.d` the mixed second derivative.
type Dual2 = Dual<Dual<f64>>;

/// Evaluate `func` at `args` with nested duals: the inner tangent is 1 at real leaf `inner`
/// (real leaves counted over all parameters in order) and 0 elsewhere, the outer
/// tangent of leaf `j` of parameter `i` is `outer[i][j]`.
fn eval_second_order(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
    masks: &[Vec<bool>],
    inner: usize,
    outer: &[Vec<f64>],
) -> Result<Dual2, EvalError> {
    let mut real_index = 0;
    let duals: Vec<Value<Dual2>> = args
        .iter()
        .zip(masks)
        .zip(outer)
        .map(|((a, mask), outer)| {
            map_indexed(a, |k, x| {
                let mut seed = 0.0;
                if mask[k] {
                    if inner == real_index {
                        seed = 1.0;
                    }
                    real_index += 1;
                }
                Dual::new(Dual::new(x, seed), Dual::new(outer[k], 0.0))
            })
        })
        .collect();
    real_result(eval_func(arena, func, &duals)?)
}

/// The outer tangents of a direction: its leaves, 0 at int leaves.
fn direction_leaves(direction: &[Value<f64>], masks: &[Vec<bool>]) -> Vec<Vec<f64>> {
    direction
        .iter()
        .zip(masks)
        .map(|(v, mask)| {
            v.leaves()
                .iter()
                .zip(mask)
                .map(|(&x, &real)| if real { x } else { 0.0 })
                .collect()
        })
        .collect()
}

/// Value, gradient and Hessian-vector product `H v` of a real-valued `func` at `args`, in
/// the direction `v = direction` (one value per argument, of its shape), by nested forward
/// mode (forward over forward).
///
/// For every real leaf `x_j`, one evaluation with `Dual<Dual<f64>>` whose inner tangent is
/// `e_j` and whose outer tangent is `v`. The result's parts are then
/// `f`, `∂f/∂x_j`, `∇f · v` and `∂/∂x_j (∇f · v) = Σ_k ∂²f/∂x_j∂x_k v_k = (H v)_j`.
///
/// The gradient and `H v` are flat per parameter in row-major order, like
/// [`forward_gradient`]; int leaves do not vary: their entries are 0 and their direction is
/// ignored.
#[allow(clippy::type_complexity)]
pub fn hvp(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
    direction: &[Value<f64>],
) -> Result<(f64, Vec<Vec<f64>>, Vec<Vec<f64>>), EvalError> {
    let masks = check_like_args(arena, func, args, direction, "direction")?;
    let outer = direction_leaves(direction, &masks);
    let value = real_result(eval_func(arena, func, args)?)?;
    let mut grads = Vec::new();
    let mut products = Vec::new();
    let mut real_index = 0;
    for mask in &masks {
        let mut g = Vec::with_capacity(mask.len());
        let mut p = Vec::with_capacity(mask.len());
        for &real in mask {
            if real {
                let r = eval_second_order(arena, func, args, &masks, real_index, &outer)?;
                g.push(r.v.d);
                p.push(r.d.d);
                real_index += 1;
            } else {
                g.push(0.0);
                p.push(0.0);
            }
        }
        grads.push(g);
        products.push(p);
    }
    Ok((value, grads, products))
}

/// Value, gradient and dense Hessian of a real-valued `func` at `args`, by nested forward
/// mode. The Hessian is a square matrix over all real leaves of all parameters, flattened in
/// parameter order (int leaves are left out), row-major: `hessian[j][k] = ∂²f/∂x_j∂x_k`,
/// computed by one evaluation with inner tangent `e_j` and outer tangent `e_k` (every entry
/// separately, so that symmetry is a check, not an assumption). The gradient is flat per
/// parameter, like [`hvp`]'s.
#[allow(clippy::type_complexity)]
pub fn hessian(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
) -> Result<(f64, Vec<Vec<f64>>, Vec<Vec<f64>>), EvalError> {
    let masks = real_masks(arena, func, args);
    let value = real_result(eval_func(arena, func, args)?)?;
    let n: usize = masks.iter().flatten().filter(|&&real| real).count();
    // The outer tangents that are 1 at real leaf `k` only.
    let unit = |k: usize| -> Vec<Vec<f64>> {
        let mut real_index = 0;
        masks
            .iter()
            .map(|mask| {
                mask.iter()
                    .map(|&real| {
                        let mut x = 0.0;
                        if real {
                            if real_index == k {
                                x = 1.0;
                            }
                            real_index += 1;
                        }
                        x
                    })
                    .collect()
            })
            .collect()
    };
    let mut rows = vec![vec![0.0; n]; n];
    let mut flat_gradient = vec![0.0; n];
    for k in 0..n {
        let outer = unit(k);
        for (j, row) in rows.iter_mut().enumerate() {
            let r = eval_second_order(arena, func, args, &masks, j, &outer)?;
            row[k] = r.d.d;
            flat_gradient[j] = r.v.d;
        }
    }
    let mut next = flat_gradient.into_iter();
    let grads = masks
        .iter()
        .map(|mask| {
            mask.iter()
                .map(|&real| {
                    if real {
                        next.next().unwrap_or(0.0)
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect();
    Ok((value, grads, rows))
}

/// The Hessian-vector product by central differences of forward-mode gradients,
/// `(∇f(x + h v) - ∇f(x - h v)) / 2h`, an independent check of [`hvp`]. The step is
/// `h = rel_step * max(1, |x|∞) / max(1, |v|∞)`, so that no coordinate moves by more than
/// `rel_step * max(1, |x|∞)`; its error is O(h^2) plus rounding. Int leaves do not move
/// and their entries are 0. The result is flat per parameter.
pub fn fd_hvp(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
    direction: &[Value<f64>],
    rel_step: f64,
) -> Result<Vec<Vec<f64>>, EvalError> {
    let masks = check_like_args(arena, func, args, direction, "direction")?;
    let outer = direction_leaves(direction, &masks);
    let largest =
        |values: &mut dyn Iterator<Item = f64>| values.fold(1.0f64, |m, x| m.max(x.abs()));
    let x_size = largest(&mut args.iter().flat_map(|a| a.leaves()));
    let v_size = largest(&mut outer.iter().flatten().copied());
    let h = rel_step * x_size / v_size;
    let shifted = |sign: f64| -> Vec<Value<f64>> {
        args.iter()
            .zip(&outer)
            .map(|(a, v)| map_indexed(a, |k, x| x + sign * h * v[k]))
            .collect()
    };
    let (_, plus) = forward_gradient(arena, func, &shifted(1.0))?;
    let (_, minus) = forward_gradient(arena, func, &shifted(-1.0))?;
    Ok(plus
        .iter()
        .zip(&minus)
        .zip(&masks)
        .map(|((p, m), mask)| {
            p.iter()
                .zip(m)
                .zip(mask)
                .map(|((p, m), &real)| if real { (p - m) / (2.0 * h) } else { 0.0 })
                .collect()
        })
        .collect())
}

/// `func` at `args`, evaluated with tagged dual numbers ([`Tagged`]), which evaluate the
/// `grad` and `jvp` inside the program directly, an oracle independent of their expansion
/// by the compiler. The result holds no function.
pub fn eval_with_derivatives(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
) -> Result<Value<f64>, EvalError> {
    ground_result(func)?;
    let tagged: Vec<Value<Tagged>> = args
        .iter()
        .map(|a| a.map_leaves(&mut Tagged::Real))
        .collect();
    Ok(eval_func(arena, func, &tagged)?.map_leaves(&mut |x: Tagged| x.value()))
}

/// Value and gradient of a real-valued `func` at `args` by tagged forward mode, the
/// program's own `grad` and `jvp` evaluated as in [`eval_with_derivatives`]: for every
/// real leaf of every parameter, one evaluation with that leaf perturbed at a tag taken
/// before the program takes its own. The gradient of each parameter is flat, in row-major
/// order, like [`forward_gradient`]'s; int leaves do not vary and their entries are 0.
pub fn gradient_with_derivatives(
    arena: &Arena,
    func: &Func,
    args: &[Value<f64>],
) -> Result<(f64, Vec<Vec<f64>>), EvalError> {
    let masks = real_masks(arena, func, args);
    let plain: Vec<Value<Tagged>> = args
        .iter()
        .map(|a| a.map_leaves(&mut Tagged::Real))
        .collect();
    let value = real_result(eval_func(arena, func, &plain)?)?.value();
    let mut grads = Vec::with_capacity(args.len());
    for (i, (a, mask)) in args.iter().zip(&masks).enumerate() {
        let mut g = Vec::with_capacity(mask.len());
        for (j, &real) in mask.iter().enumerate() {
            if !real {
                g.push(0.0);
                continue;
            }
            let mut interp = Interp::<Tagged>::new(arena);
            let tag = interp.fresh_tag();
            let mut seeded = plain.clone();
            seeded[i] = map_indexed(a, |k, x| {
                if k == j {
                    Tagged::perturbed(Tagged::Real(x), Tagged::Real(1.0), tag)
                } else {
                    Tagged::Real(x)
                }
            });
            let r = real_result(interp.call(func, &seeded)?)?;
            g.push(r.parts(tag).1.value());
        }
        grads.push(g);
    }
    Ok((value, grads))
}

/// An error unless `func` returns a value without functions (what the oracles give back).
fn ground_result(func: &Func) -> Result<(), EvalError> {
    if is_ground(&func.ret) {
        return Ok(());
    }
    Err(EvalError(
        format!(
            "the function returns `{}`, which holds a function",
            func.ret
        ),
        None,
    ))
}
