//! The monoid `(G, +̂, 0_G)` on ground types (the paper's notation section).
//!
//! `0_R = 0`, zeros of a tuple are the tuple of zeros, and the zero of an array is
//! `zeros_like(w)` for a *witness* `w` of that type (an atom in scope): zeros stay symbolic
//! so that a later optimizer can rewrite `map2 + A (zeros_like B)` to `A`. `+̂` is `+` on
//! reals, componentwise on tuples and `map2 +` on arrays.
//!
//! Ints have no derivative: their adjoints are the trivial monoid, always the int `0`
//! (reverse mode never adds anything into them, and the optimizer drops them).

use unfad_syntax::{Arena, BinOp, ExprId, Type};

use crate::build::{self, component, lambda, map2, section};
use crate::error::{internal, AdError};

/// `0_G` for the ground type `ty`, shaped like the atom `witness` (of type `ty`).
pub fn zero(a: &mut Arena, ty: &Type, witness: ExprId) -> Result<ExprId, AdError> {
    match ty {
        Type::Real | Type::Int => Ok(build::num(a, 0.0)),
        Type::Tuple(items) => {
            let zs = items
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let w = component(a, witness, i);
                    zero(a, t, w)
                })
                .collect::<Result<Vec<_>, _>>()?;
            build::tuple(a, &zs)
        }
        Type::Array(..) => Ok(build::zeros_like(a, witness)),
        Type::Bool | Type::Func(..) => internal(format!("no zero of the non-ground type `{ty}`")),
    }
}

/// `x +̂_G y`. For tuples both operands are projected once per component: pass atoms or
/// tuple literals.
pub fn add_hat(a: &mut Arena, ty: &Type, x: ExprId, y: ExprId) -> Result<ExprId, AdError> {
    match ty {
        Type::Real => Ok(build::add(a, x, y)),
        Type::Int => Ok(x),
        Type::Tuple(items) => {
            let sums = items
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let (xi, yi) = (component(a, x, i), component(a, y, i));
                    add_hat(a, t, xi, yi)
                })
                .collect::<Result<Vec<_>, _>>()?;
            build::tuple(a, &sums)
        }
        Type::Array(_, elem) => {
            let f = binary_fun(a, elem, |a, s, t| add_hat(a, elem, s, t))?;
            Ok(map2(a, f, x, y))
        }
        Type::Bool | Type::Func(..) => internal(format!("no sum of the non-ground type `{ty}`")),
    }
}

/// `z ·̂ g`: the value `g` of ground type `ty` scaled by the real `z` (an atom).
pub fn scale(a: &mut Arena, ty: &Type, z: ExprId, g: ExprId) -> Result<ExprId, AdError> {
    match ty {
        Type::Real => Ok(build::mul(a, z, g)),
        Type::Int => Ok(g),
        Type::Tuple(items) => {
            let parts = items
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let gi = component(a, g, i);
                    scale(a, t, z, gi)
                })
                .collect::<Result<Vec<_>, _>>()?;
            build::tuple(a, &parts)
        }
        Type::Array(_, elem) => {
            let f = lambda(a, &[("s", (**elem).clone())], |a, p| {
                scale(a, elem, z, p[0])
            })?;
            Ok(build::map(a, f, g))
        }
        Type::Bool | Type::Func(..) => {
            internal(format!("no scaling of the non-ground type `{ty}`"))
        }
    }
}

/// The function argument `(s, t. body(s, t))` on elements of type `elem`; the operator
/// section `+` when the elements are reals.
fn binary_fun(
    a: &mut Arena,
    elem: &Type,
    body: impl FnOnce(&mut Arena, ExprId, ExprId) -> Result<ExprId, AdError>,
) -> Result<ExprId, AdError> {
    if *elem == Type::Real {
        return Ok(section(a, BinOp::Add));
    }
    lambda(a, &[("s", elem.clone()), ("t", elem.clone())], |a, p| {
        body(a, p[0], p[1])
    })
}

/// `reduce +̂ 0_G G`: the sum of the elements of the array `g` of elements of type `ty`;
/// `witness` (of type `ty`) shapes the zero.
pub fn sum(a: &mut Arena, ty: &Type, g: ExprId, witness: ExprId) -> Result<ExprId, AdError> {
    let f = binary_fun(a, ty, |a, s, t| add_hat(a, ty, s, t))?;
    let z = zero(a, ty, witness)?;
    Ok(build::reduce(a, f, z, g))
}

/// `0_G` for a type made of reals and tuples only, which needs no witness; `None` for
/// types with arrays (whose zeros need a shape).
pub fn zero_of_type(a: &mut Arena, ty: &Type) -> Option<ExprId> {
    match ty {
        Type::Real | Type::Int => Some(build::num(a, 0.0)),
        Type::Tuple(items) => {
            let zs = items
                .iter()
                .map(|t| zero_of_type(a, t))
                .collect::<Option<Vec<_>>>()?;
            build::tuple(a, &zs).ok()
        }
        Type::Array(..) | Type::Bool | Type::Func(..) => None,
    }
}

/// `x +̂ y` for operands that may be any terms: a tuple-typed operand that is neither an
/// atom nor a tuple literal is bound to a variable first, so that `+̂`'s projections do
/// not compute it once per component.
pub fn add_hat_shared(a: &mut Arena, ty: &Type, x: ExprId, y: ExprId) -> Result<ExprId, AdError> {
    if !matches!(ty, Type::Tuple(_)) {
        return add_hat(a, ty, x, y);
    }
    let mut bindings = Vec::new();
    let mut share = |a: &mut Arena, e: ExprId| {
        if build::is_atom(a, e) || matches!(a[e], unfad_syntax::Node::Tuple(_)) {
            e
        } else {
            let v = a.fresh_var("s", Some(ty.clone()));
            bindings.push((v, e));
            a.var(v)
        }
    };
    let (x, y) = (share(a, x), share(a, y));
    let sum = add_hat(a, ty, x, y)?;
    Ok(bindings
        .into_iter()
        .rev()
        .fold(sum, |acc, (v, e)| a.let_(v, e, acc)))
}

/// The inner product `⟨x, y⟩` of two values of the ground type `ty`: `x * y` on reals, the
/// sum over the components of tuples and the elements of arrays, `0` on ints. Pass atoms
/// (tuples are projected once per component).
pub fn dot(a: &mut Arena, ty: &Type, x: ExprId, y: ExprId) -> Result<ExprId, AdError> {
    match ty {
        Type::Real => Ok(build::mul(a, x, y)),
        Type::Int => Ok(build::num(a, 0.0)),
        Type::Tuple(items) => {
            let mut total = None;
            for (i, t) in items.iter().enumerate() {
                let (xi, yi) = (component(a, x, i), component(a, y, i));
                let d = dot(a, t, xi, yi)?;
                total = Some(match total {
                    None => d,
                    Some(acc) => build::add(a, acc, d),
                });
            }
            total.map_or_else(|| internal("an empty tuple"), Ok)
        }
        Type::Array(_, elem) => {
            let f = lambda(
                a,
                &[("s", (**elem).clone()), ("t", (**elem).clone())],
                |a, p| dot(a, elem, p[0], p[1]),
            )?;
            let products = map2(a, f, x, y);
            let plus = section(a, BinOp::Add);
            let zero = build::num(a, 0.0);
            Ok(build::reduce(a, plus, zero, products))
        }
        Type::Bool | Type::Func(..) => internal(format!("no inner product on `{ty}`")),
    }
}
