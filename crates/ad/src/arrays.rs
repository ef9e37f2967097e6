//! The reverse derivatives of `map2` and `reduce`, shared by the direct macro (Figure
//! "Reverse-mode transformation from source to target language") and by `UNF^-1` of
//! `J^T map2` and `J^T reduce` (Figure "Transformation from Target UNF to Target").
//!
//! Both rules need the gradient `∇` of the body of the array operation's function. Each
//! pipeline computes it with itself, through [`Reverse`].
//!
//! Departures from the printed figures, each for correctness:
//! - `map2`: the paper builds one array `G` of gradients with respect to the whole
//!   context `Γ` and sums it with `reduce +̂ 0̂`. That is an array of tuples (of arrays,
//!   when the body uses an array of the context). Here the sum is built per free
//!   variable of the body, and per component of a tuple-typed one, so `G` is an array of
//!   the variable's type (reals in the common case) and variables the body does not use
//!   get nothing. Elementwise, it is the same sum.
//! - `reduce`: the printed rule passes no adjoint to the unit `y1` (the paper's example
//!   passes `0`), which is wrong when `y1` depends on the inputs. Here
//!   `ȳ1 = z * reduce * 1 Ax`, the product of all `∂x` factors, with
//!   `Ax = map2 (a, b. ∇x e1) A0 A` bound once.
//! - `reduce`: the final product is `map2 (a, b. a * b * z) A3 A2`, `A3` first as in
//!   the paper's derivation of the closed form of `∇prod` (its Figure writes `A2 A3`; the
//!   product commutes), so that `∇prod` comes out as the paper prints it.

use std::collections::HashMap;

use unfad_syntax::{typeck, Arena, BinOp, ExprId, Node, Size, Type, Var};

use crate::build::{self, component, map2, section};
use crate::error::{internal, AdError};
use crate::ground;
use crate::pipeline::Reverse;

/// A free variable of `map2`'s function: the variable in the function's body, and the
/// atom that holds its value where the adjoint is built.
#[derive(Copy, Clone, Debug)]
pub struct Capture {
    pub var: Var,
    pub value: ExprId,
}

/// The contributions of one `map2` to the adjoints of its operands.
pub struct Map2Adjoint {
    /// One per capture, in order: the adjoint the body's uses of it add up to.
    pub captures: Vec<ExprId>,
    /// Of the first and of the second array.
    pub first: ExprId,
    pub second: ExprId,
}

/// The parts of a lambda node `(x, y. e)`.
pub(crate) fn binary_lambda(a: &Arena, f: ExprId) -> Result<(Var, Var, ExprId), AdError> {
    match a.lambda_parts(f) {
        Some((&[x, y], body)) => Ok((x, y, body)),
        _ => internal("the function argument of an array operation is not a binder `(x, y. e)`"),
    }
}

/// A copy of the function `f` with fresh binders, its captured variables replaced by their
/// values.
pub(crate) fn instantiate(a: &mut Arena, f: ExprId, captures: &[Capture]) -> ExprId {
    let copy = a.copy_fresh(f);
    let map: HashMap<Var, ExprId> = captures
        .iter()
        .filter(|c| a[c.value] != Node::Var(c.var))
        .map(|c| (c.var, c.value))
        .collect();
    a.subst(copy, &map)
}

/// `(x', y'. π_path(∂ e / ∂ v))` for the function `f = (x, y. e)`, where `v` is `x`
/// (`wrt = 0`), `y` (`wrt = 1`) or capture `wrt - 2`. The body is differentiated in the
/// context `x', y', c'_1, ..., c'_m` of fresh variables (distinct even when two captures
/// have the same value), which are then replaced by the captures' values.
fn partial_fun(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    f: ExprId,
    captures: &[Capture],
    wrt: usize,
    path: &[usize],
) -> Result<ExprId, AdError> {
    let mut renaming = HashMap::new();
    let mut fresh = Vec::with_capacity(captures.len());
    for c in captures {
        let v = a.clone_var(c.var);
        renaming.insert(c.var, v);
        fresh.push(v);
    }
    let copy = a.copy_fresh_with(f, &mut renaming);
    let (x, y, body) = binary_lambda(a, copy)?;
    retype(a, body)?;
    let mut delta = vec![x, y];
    delta.extend(&fresh);
    let mut g = rev.gradient_term(a, &delta, &[wrt], body)?;
    for &i in path {
        g = component(a, g, i);
    }
    let values: HashMap<Var, ExprId> = fresh
        .iter()
        .zip(captures)
        .map(|(&v, c)| (v, c.value))
        .collect();
    let g = a.subst(g, &values);
    Ok(a.lambda(&[x, y], g))
}

/// Record the types of a copied body (copies of nodes carry no type).
pub(crate) fn retype(a: &mut Arena, e: ExprId) -> Result<Type, AdError> {
    typeck::infer(a, &typeck::NoSource, e).map_err(|err| AdError::IllTyped {
        expr: e,
        span: a.span(e),
        message: err.message,
    })
}

/// The adjoints `map2 (x, y. e)` sends to its arrays `arr_a`, `arr_b` (atoms) and to the
/// captured variables, for the adjoint `z` (an atom) of its result:
/// `Ā = map2 * (map2 (a, b. ∇x e) A B) Z`, the same for `B̄`, and for each capture `c`
/// the sum over the elements of `Z ·̂ ∇c e`.
pub fn map2_adjoint(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    f: ExprId,
    captures: &[Capture],
    arr_a: ExprId,
    arr_b: ExprId,
    z: ExprId,
) -> Result<Map2Adjoint, AdError> {
    let mut contributions = Vec::with_capacity(captures.len());
    for (j, c) in captures.iter().enumerate() {
        let ty = a
            .var_type(c.var)
            .cloned()
            .ok_or_else(|| AdError::Internal("a captured variable has no type".into()))?;
        let mut path = Vec::new();
        contributions.push(capture_sum(
            a, rev, f, captures, j, &ty, &mut path, arr_a, arr_b, z,
        )?);
    }
    let mut operand = |a: &mut Arena, wrt: usize| -> Result<ExprId, AdError> {
        let df = partial_fun(a, rev, f, captures, wrt, &[])?;
        let d = map2(a, df, arr_a, arr_b);
        let times = section(a, BinOp::Mul);
        Ok(map2(a, times, d, z))
    };
    let first = operand(a, 0)?;
    let second = operand(a, 1)?;
    Ok(Map2Adjoint {
        captures: contributions,
        first,
        second,
    })
}

/// The sum over the elements of `Z ·̂ π_path(∇c e)` for capture `j`, whose component at
/// `path` has type `ty`. Tuples are split into their components (no array of tuples).
#[allow(clippy::too_many_arguments)]
fn capture_sum(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    f: ExprId,
    captures: &[Capture],
    j: usize,
    ty: &Type,
    path: &mut Vec<usize>,
    arr_a: ExprId,
    arr_b: ExprId,
    z: ExprId,
) -> Result<ExprId, AdError> {
    if let Type::Tuple(items) = ty {
        let mut parts = Vec::with_capacity(items.len());
        for (i, t) in items.iter().enumerate() {
            path.push(i);
            parts.push(capture_sum(
                a, rev, f, captures, j, t, path, arr_a, arr_b, z,
            )?);
            path.pop();
        }
        return build::tuple(a, &parts);
    }
    let df = partial_fun(a, rev, f, captures, 2 + j, path)?;
    let per_element = map2(a, df, arr_a, arr_b);
    let scaled_fn = build::lambda(a, &[("z", Type::Real), ("g", ty.clone())], |a, p| {
        ground::scale(a, ty, p[0], p[1])
    })?;
    let scaled = map2(a, scaled_fn, z, per_element);
    let mut witness = captures[j].value;
    for &i in path.iter() {
        witness = component(a, witness, i);
    }
    ground::sum(a, ty, scaled, witness)
}

/// What the backward pass of `reduce (x, y. e) y0 A` needs from the forward pass: the
/// paper's `A0`, `A2`, `A3`, and `Ax` (its `A1` before the shift), as bindings in order.
pub struct ReduceTape {
    pub bindings: Vec<(Var, ExprId)>,
    ax: Var,
    a2: Var,
    a3: Var,
}

/// The bindings of the reduce rule, for the unit `y0` and the array `arr` (atoms) of type
/// `arr_ty`:
/// ```text
/// let A0 = shift1R (scanl (x, y. e) y0 A) in     -- the accumulator before each element
/// let Ax = map2 (a, b. ∇x e) A0 A in              -- ∂x at each step
/// let A2 = map2 (a, b. ∇y e) A0 A in              -- ∂y at each step
/// let A3 = scanr * 1 (shift1L Ax) in              -- products of the later ∂x factors
/// ```
pub fn reduce_tape(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    f: ExprId,
    y0: ExprId,
    arr: ExprId,
    arr_ty: &Type,
) -> Result<ReduceTape, AdError> {
    let Type::Array(n, _) = arr_ty else {
        return internal(format!("reduce over a value of type `{arr_ty}`"));
    };
    let ty = |size: Size| Type::array(size, Type::Real);
    let mut bindings = Vec::new();
    let mut bind = |a: &mut Arena, name: &str, t: Type, e: ExprId| {
        let v = a.fresh_var(name, Some(t));
        bindings.push((v, e));
        a.var(v)
    };
    let f_copy = a.copy_fresh(f);
    let scan = a.add(Node::Scanl(f_copy, y0, arr));
    let shifted = a.add(Node::Shift1R(scan));
    let a0 = bind(a, "A0", ty(n.clone()), shifted);
    let dx = partial_fun(a, rev, f, &[], 0, &[])?;
    let ax_e = map2(a, dx, a0, arr);
    let ax = bind(a, "Ax", ty(n.clone()), ax_e);
    let dy = partial_fun(a, rev, f, &[], 1, &[])?;
    let a2_e = map2(a, dy, a0, arr);
    let a2 = bind(a, "A2", ty(n.clone()), a2_e);
    let times = section(a, BinOp::Mul);
    let one = build::num(a, 1.0);
    // At run time `scanr` of the shifted empty array has one element where `A2` has none;
    // `map2` stops at the shorter array (formally both have size `n`).
    let later = a.add(Node::Shift1L(ax));
    let a3_e = a.add(Node::Scanr(times, one, later));
    let a3 = bind(a, "A3", ty(n.clone()), a3_e);
    let var_of = |a: &Arena, e: ExprId| match a[e] {
        Node::Var(v) => Ok(v),
        _ => internal("a tape binding is not a variable"),
    };
    Ok(ReduceTape {
        ax: var_of(a, ax)?,
        a2: var_of(a, a2)?,
        a3: var_of(a, a3)?,
        bindings,
    })
}

/// The adjoints of the unit and of the array for the adjoint `z` (an atom) of the result:
/// `(z * reduce * 1 Ax, map2 (a, b. a * b * z) A3 A2)`.
pub fn reduce_adjoint(a: &mut Arena, tape: &ReduceTape, z: ExprId) -> (ExprId, ExprId) {
    let times = section(a, BinOp::Mul);
    let one = build::num(a, 1.0);
    let ax = a.var(tape.ax);
    let product = build::reduce(a, times, one, ax);
    let unit = build::mul(a, z, product);
    let u = a.fresh_var("a", Some(Type::Real));
    let v = a.fresh_var("b", Some(Type::Real));
    let (eu, ev) = (a.var(u), a.var(v));
    let uv = build::mul(a, eu, ev);
    let uvz = build::mul(a, uv, z);
    let f = a.lambda(&[u, v], uvz);
    let (a2, a3) = (a.var(tape.a2), a.var(tape.a3));
    (unit, map2(a, f, a3, a2))
}

/// `let x1 = e1 in ... let xk = ek in body`.
pub(crate) fn wrap_lets(a: &mut Arena, bindings: &[(Var, ExprId)], body: ExprId) -> ExprId {
    bindings
        .iter()
        .rev()
        .fold(body, |acc, &(v, e)| a.let_(v, e, acc))
}
