//! Function arguments of array operations `(x1, ..., xk. e)`: their captured variables,
//! and the derivatives of their bodies that the array rules are made of.
//!
//! Two forms of derivative are used:
//! - `∇v e`, the paper's gradient of a real body with respect to `v` (the seed 1), which
//!   the rules then scale by an adjoint (`map2 * (map2 (a, b. ∇x e) A B) Z`);
//! - `J^T_v e · s`, the body's reverse pass on an adjoint `s` of its value. For a body of
//!   any ground type this is the paper's `∇v e ·̂ s` (`hat-*`, "matrix-vector product")
//!   computed without forming the Jacobian, so that its cost is a constant times the
//!   body's whatever the size of the element types.
//!
//! Both come from the pipeline itself ([`Reverse::vjp_term`]) run on a fresh copy of the
//! body, in the context of its parameters and captures.

use unfad_syntax::fast_hash::{FastMap as HashMap, FastSet as HashSet};

use unfad_syntax::{typeck, Arena, ExprId, Node, Type, Var};

use crate::build::{self, component};
use crate::error::{internal, AdError};
use crate::reverse::Reverse;

/// A free variable of a function argument: the variable in the function's body, and the
/// atom that holds its value where the adjoint is built.
#[derive(Copy, Clone, Debug)]
pub struct Capture {
    pub var: Var,
    pub value: ExprId,
}

/// The parameters and body of a function argument.
pub(crate) fn lambda_parts(a: &Arena, f: ExprId) -> Result<(Vec<Var>, ExprId), AdError> {
    match a.lambda_parts(f) {
        Some((ps, body)) => Ok((ps.to_vec(), body)),
        None => internal("the function argument of an array operation is not a binder"),
    }
}

/// The parts of a binary function argument `(x, y. e)`.
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

/// Record the types of a copied term (copies of nodes carry no type).
pub(crate) fn retype(a: &mut Arena, e: ExprId) -> Result<Type, AdError> {
    typeck::infer(a, &typeck::NoSource, e).map_err(|err| AdError::IllTyped {
        expr: e,
        span: a.span(e),
        message: err.message,
    })
}

/// The element type of the array `arr` (typed, or typed now).
pub(crate) fn elem_type(a: &mut Arena, arr: ExprId) -> Result<Type, AdError> {
    let t = match a[arr] {
        Node::Var(v) => a.var_type(v).cloned(),
        _ => None,
    };
    match t.map_or_else(|| retype(a, arr), Ok)? {
        Type::Array(_, elem) => Ok((*elem).clone()),
        t => internal(format!("an array operation over a value of type `{t}`")),
    }
}

/// Which variable a derivative is taken with respect to: parameter `i` of the function,
/// or capture `i`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Wrt {
    Param(usize),
    Capture(usize),
}

/// `π_path(J^T_v e · seed)` for the function `f = (x1, ..., xk. e)` at the arguments
/// `args` (terms used as often as `e` uses its parameters: atoms or projections of atoms),
/// `v` given by `wrt`. The body is differentiated in the context `x'1..x'k, c'1..c'm` of
/// fresh variables (distinct even when two captures have the same value), which are then
/// replaced by the arguments and the captures' values.
#[allow(clippy::too_many_arguments)]
pub(crate) fn vjp(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    f: ExprId,
    captures: &[Capture],
    args: &[ExprId],
    seed: ExprId,
    wrt: Wrt,
    path: &[usize],
) -> Result<ExprId, AdError> {
    let mut g = vjp_many(a, rev, f, captures, args, seed, &[wrt])?;
    for &i in path {
        g = component(a, g, i);
    }
    Ok(g)
}

/// The tuple `(J^T_v1 e · seed, ..., J^T_vr e · seed)` (the item itself for one target):
/// the adjoints of several variables from one reverse pass of the body, so that work
/// the partial derivatives share (`1 - tanh(v)^2` for all of `w`, `b`, `x` in
/// `tanh(w * x + b)`) is done once. See [`vjp`].
pub(crate) fn vjp_many(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    f: ExprId,
    captures: &[Capture],
    args: &[ExprId],
    seed: ExprId,
    targets: &[Wrt],
) -> Result<ExprId, AdError> {
    let (ps, body) = lambda_parts(a, f)?;
    if ps.len() != args.len() {
        return internal(format!(
            "a function of {} parameter(s) applied to {} argument(s)",
            ps.len(),
            args.len()
        ));
    }
    // The context of the body's reverse pass: for each parameter and capture, the
    // variable holding its value where it is a variable not already in the context, else
    // a fresh one bound to its value afterwards. The body is copied with its parameters
    // and captures renamed to the context (no substitution walks the reverse pass, which
    // would be quadratic in the nesting of array operations).
    // A variable the body uses freely cannot stand for another one: its uses would get
    // that one's adjoint.
    let free = a.free_vars(f);
    let mut renaming = HashMap::default();
    let mut context = Vec::with_capacity(ps.len() + captures.len());
    let mut bound = Vec::new();
    let values = args.iter().copied().chain(captures.iter().map(|c| c.value));
    for (v, value) in ps
        .iter()
        .copied()
        .chain(captures.iter().map(|c| c.var))
        .zip(values)
    {
        let w = match a[value] {
            Node::Var(w) if !context.contains(&w) && (w == v || !free.contains(&w)) => w,
            _ => {
                let w = a.clone_var(v);
                bound.push((w, value));
                w
            }
        };
        renaming.insert(v, w);
        context.push(w);
    }
    let body = a.copy_fresh_with(body, &mut renaming);
    retype(a, body)?;
    let indices = targets
        .iter()
        .map(|&wrt| match wrt {
            Wrt::Param(i) if i < ps.len() => Ok(i),
            Wrt::Capture(j) if j < captures.len() => Ok(ps.len() + j),
            _ => internal(format!("no variable {wrt:?} to differentiate against")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut g = rev.vjp_term(a, &context, &indices, body, seed)?;
    for &(w, value) in bound.iter().rev() {
        g = a.let_(w, value, g);
    }
    Ok(g)
}

/// The captures whose adjoints share one reverse pass with the parameters' (their indices):
/// reals and tuples of reals. An array (or a tuple holding one) is often used in part or
/// in a way that gives it a zero adjoint, which a shared pass would hold for every element
/// (a zero array each) where a pass of its own lets the optimizer drop it.
pub(crate) fn shared_captures(a: &Arena, captures: &[Capture]) -> Vec<usize> {
    fn reals(t: &Type) -> bool {
        match t {
            Type::Real => true,
            Type::Tuple(items) => items.iter().all(reals),
            _ => false,
        }
    }
    (0..captures.len())
        .filter(|&j| a.var_type(captures[j].var).is_some_and(reals))
        .collect()
}

/// `(x'1, ..., x'k. (∇v1 e, ..., ∇vr e))` for the function `f` with a real body: the
/// partial derivatives with respect to several variables from one reverse pass.
pub(crate) fn gradients_fun(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    f: ExprId,
    captures: &[Capture],
    targets: &[Wrt],
) -> Result<ExprId, AdError> {
    let (params, _) = lambda_parts(a, f)?;
    let fresh: Vec<Var> = params.iter().map(|&p| a.clone_var(p)).collect();
    let args: Vec<ExprId> = fresh.iter().map(|&p| a.var(p)).collect();
    let one = a.constant(1.0);
    let g = vjp_many(a, rev, f, captures, &args, one, targets)?;
    Ok(a.lambda(&fresh, g))
}

/// `(x'1, ..., x'k. π_path(∇v e))` for the function `f = (x1, ..., xk. e)` with a real
/// body: the paper's `(a, b. (∇x e)[a/x, b/y])`.
pub(crate) fn gradient_fun(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    f: ExprId,
    captures: &[Capture],
    wrt: Wrt,
    path: &[usize],
) -> Result<ExprId, AdError> {
    let (params, _) = lambda_parts(a, f)?;
    let fresh: Vec<Var> = params.iter().map(|&p| a.clone_var(p)).collect();
    let args: Vec<ExprId> = fresh.iter().map(|&p| a.var(p)).collect();
    let one = a.constant(1.0);
    let g = vjp(a, rev, f, captures, &args, one, wrt, path)?;
    Ok(a.lambda(&fresh, g))
}

/// The type of component `path` of a value of type `ty`.
pub(crate) fn component_type(ty: &Type, path: &[usize]) -> Result<Type, AdError> {
    let mut t = ty.clone();
    for &i in path {
        t = match &t {
            Type::Tuple(items) if i < items.len() => items[i].clone(),
            _ => return internal(format!("component {i} of a value of type `{t}`")),
        };
    }
    Ok(t)
}

/// An elementwise operation over one to three arrays (atoms), the body built from the
/// elements: `map (x. body) A`, `map2 (x, y. body) A B`, or, for three arrays,
/// `map2 (x, q. body[q.0/y, q.1/z]) A (map2 (y, z. (y, z)) B C)`.
pub(crate) fn elementwise(
    a: &mut Arena,
    arrays: &[ExprId],
    names: &[&str],
    body: impl FnOnce(&mut Arena, &[ExprId]) -> Result<ExprId, AdError>,
) -> Result<ExprId, AdError> {
    let tys = arrays
        .iter()
        .map(|&x| elem_type(a, x))
        .collect::<Result<Vec<_>, _>>()?;
    let name = |i: usize| names.get(i).copied().unwrap_or("e");
    match arrays {
        [x] => {
            let f = build::lambda(a, &[(name(0), tys[0].clone())], |a, p| body(a, p))?;
            Ok(build::map(a, f, *x))
        }
        [x, y] => {
            let f = build::lambda(
                a,
                &[(name(0), tys[0].clone()), (name(1), tys[1].clone())],
                |a, p| body(a, p),
            )?;
            Ok(build::map2(a, f, *x, *y))
        }
        [x, y, z] => {
            let zipped = zip(a, *y, *z, (name(1), &tys[1]), (name(2), &tys[2]))?;
            let pair = Type::tuple(vec![tys[1].clone(), tys[2].clone()]);
            let f = build::lambda(a, &[(name(0), tys[0].clone()), ("q", pair)], |a, p| {
                let (q0, q1) = (a.proj(0, p[1]), a.proj(1, p[1]));
                body(a, &[p[0], q0, q1])
            })?;
            Ok(build::map2(a, f, *x, zipped))
        }
        _ => internal("an elementwise operation over no or too many arrays"),
    }
}

/// `map (g. g.i) G`: column `i` of an array of tuples.
pub(crate) fn column(a: &mut Arena, g: ExprId, i: usize) -> Result<ExprId, AdError> {
    elementwise(a, &[g], &["g"], |a, p| Ok(component(a, p[0], i)))
}

/// `map (g. π_path(g.i)) G`.
pub(crate) fn column_at(
    a: &mut Arena,
    g: ExprId,
    i: usize,
    path: &[usize],
) -> Result<ExprId, AdError> {
    elementwise(a, &[g], &["g"], |a, p| {
        let mut c = component(a, p[0], i);
        for &j in path {
            c = component(a, c, j);
        }
        Ok(c)
    })
}

/// `map2 (x, y. (x, y)) X Y`.
pub(crate) fn zip(
    a: &mut Arena,
    x: ExprId,
    y: ExprId,
    (nx, tx): (&str, &Type),
    (ny, ty): (&str, &Type),
) -> Result<ExprId, AdError> {
    let f = build::lambda(a, &[(nx, tx.clone()), (ny, ty.clone())], |a, p| {
        build::tuple(a, p)
    })?;
    Ok(build::map2(a, f, x, y))
}

/// `foldl (acc, x. x) init X`: the last element of `X`, or `init` when `X` is empty.
pub(crate) fn last(a: &mut Arena, x: ExprId, init: ExprId) -> Result<ExprId, AdError> {
    let t = elem_type(a, x)?;
    let f = build::lambda(a, &[("acc", t.clone()), ("x", t)], |_, p| Ok(p[1]))?;
    Ok(a.add(Node::Foldl(f, init, x)))
}

/// The first element of `X` (`init` when `X` is empty), by a left fold that keeps the
/// first element it meets: `(foldl (p, x. if p.0 > 0 then p else (1, x)) (0, init) X).1`.
/// There is no indexing primitive, and the folds need an initial value of the element
/// type, which `init` provides.
pub(crate) fn first(a: &mut Arena, x: ExprId, init: ExprId) -> Result<ExprId, AdError> {
    let t = elem_type(a, x)?;
    let flagged = Type::tuple(vec![Type::Real, t.clone()]);
    let f = build::lambda(a, &[("p", flagged), ("x", t)], |a, p| {
        let flag = a.proj(0, p[0]);
        let zero = build::num(a, 0.0);
        let seen = build::cmp(a, unfad_syntax::CmpOp::Gt, flag, zero);
        let one = build::num(a, 1.0);
        let fresh = build::tuple(a, &[one, p[1]])?;
        Ok(build::if_(a, seen, p[0], fresh))
    })?;
    let zero = build::num(a, 0.0);
    let z = build::tuple(a, &[zero, init])?;
    let fold = a.add(Node::Foldl(f, z, x));
    Ok(a.proj(1, fold))
}

/// The free variables of `e` that derivatives flow through, in order of first occurrence:
/// those with an occurrence outside `len`, `zeros_like`, `ones_like` and conditions (whose
/// operands only give shapes or choose branches) and outside the right-hand sides of
/// inert `let`s (see [`inert_lets`]). The others have zero adjoints.
pub(crate) fn differentiable_free_vars(a: &Arena, e: ExprId) -> Vec<Var> {
    let mut inert = HashSet::default();
    let mut out = Flow::default();
    flow(a, e, &mut out, &mut inert);
    out.order
}

/// The variables bound by the `let`s of `e` that carry no derivative: unused in their
/// scope, or used only as shapes and conditions (conditions themselves, for instance). The
/// macro binds them as values without differentiating their right-hand sides, and they
/// are not in the context Γ.
pub(crate) fn inert_lets(a: &Arena, e: ExprId) -> HashSet<Var> {
    let mut inert = HashSet::default();
    flow(a, e, &mut Flow::default(), &mut inert);
    inert
}

/// Free variables that derivatives flow through, in order, with a set for membership.
#[derive(Default)]
struct Flow {
    order: Vec<Var>,
    set: HashSet<Var>,
}

impl Flow {
    fn add(&mut self, v: Var) {
        if self.set.insert(v) {
            self.order.push(v);
        }
    }

    fn absorb(&mut self, other: Flow, except: &[Var]) {
        for v in other.order {
            if !except.contains(&v) {
                self.add(v);
            }
        }
    }
}

/// True if `e`'s value has no reals (an int, an array of ints, an index computation,
/// `iota`): no derivative flows through it, and its variables need no adjoint there.
/// Conditions are handled by the rules that use them.
pub(crate) fn carries_no_derivative(a: &Arena, e: ExprId) -> bool {
    match a.type_of(e) {
        Some(t @ (Type::Int | Type::Tuple(_) | Type::Array(..))) => !t.has_reals(),
        _ => false,
    }
}

/// True if no derivative flows out of `e` to its variables: a value without reals
/// ([`carries_no_derivative`]), a constant, and the terms whose operands only give shapes
/// or make conditions (`len`, `zeros_like`, `ones_like`, comparisons and connectives).
/// The one definition the flow here and the live sets ([`crate::live`]) share.
pub(crate) fn no_derivative_flows(a: &Arena, e: ExprId) -> bool {
    carries_no_derivative(a, e)
        || matches!(
            a[e],
            Node::Len(_)
                | Node::ZerosLike(_)
                | Node::OnesLike(_)
                | Node::Cmp(..)
                | Node::And(..)
                | Node::Or(..)
                | Node::Not(_)
                | Node::Bool(_)
                | Node::Const(_)
        )
}

fn flow(a: &Arena, e: ExprId, out: &mut Flow, inert: &mut HashSet<Var>) {
    if no_derivative_flows(a, e) {
        return;
    }
    unfad_syntax::with_stack(|| match a[e] {
        Node::Var(v) => out.add(v),
        Node::If(_, t, f) => {
            flow(a, t, out, inert);
            flow(a, f, out, inert);
        }
        node @ (Node::Let(_, e1, e2) | Node::LetTuple(_, e1, e2)) => {
            let xs = a.binders(node);
            let mut body = Flow::default();
            flow(a, e2, &mut body, inert);
            if xs.iter().any(|x| body.set.contains(x)) {
                flow(a, e1, out, inert);
            } else {
                inert.extend(xs.iter().copied());
            }
            out.absorb(body, &xs);
        }
        node => {
            let bound = a.binders(node);
            let mut inner = Flow::default();
            a.for_each_child(e, |c| flow(a, c, &mut inner, inert));
            out.absorb(inner, &bound);
        }
    })
}
