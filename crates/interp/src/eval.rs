//! The reference interpreter: call-by-value, following the paper's operational semantics
//! (appendix, "Operational semantics of the source and target languages").
//!
//! The environment is a table indexed by variable. Binders are unique, so binding a
//! variable, evaluating the scope and restoring the previous entry is lexical scoping.
//! Closures capture the values of their free variables when they are made. `let` chains
//! are evaluated in a loop and other recursion runs on a growing stack, so long arrays and
//! deeply nested terms are fine.

use std::collections::HashMap;
use std::rc::Rc;

use unfad_syntax::reduction::{blocked_fold, reduce_order, unit, ReduceOrder};
use unfad_syntax::{with_stack, Arena, Derivative, ExprId, ExprList, Func, Node, Type, Var};

use crate::scalar::Scalar;
use crate::value::{real_leaves, Closure, Value};

/// Why evaluation stopped: the program's error on its input (an index out of bounds, an
/// int division by zero), at the source position of the failing term when known; for a
/// well-typed term, anything else is a bug.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("evaluation failed: {0}")]
pub struct EvalError(pub String, pub Option<unfad_syntax::Span>);

impl EvalError {
    /// The error, said to happen at `span` (unless it already has a place).
    fn at(self, span: unfad_syntax::Span) -> EvalError {
        let place = self
            .1
            .or((span.src != unfad_syntax::SourceId::GENERATED).then_some(span));
        EvalError(self.0, place)
    }
}

type R<T> = Result<T, EvalError>;

fn fail<T>(msg: impl Into<String>) -> R<T> {
    Err(EvalError(msg.into(), None))
}

/// The position `i` (an int, carried as a real) in an array of `len` elements, or the
/// out-of-bounds error.
pub fn position(i: f64, len: usize) -> R<usize> {
    if i >= 0.0 && (i as usize) < len && i.fract() == 0.0 {
        Ok(i as usize)
    } else {
        fail(format!(
            "index {i} is out of bounds for an array of {len} element{}",
            if len == 1 { "" } else { "s" }
        ))
    }
}

/// `target` with `v` added (leaf by leaf) at the element `path` names; a path outside the
/// array adds nothing (`scatter_add` drops such positions: the optimizer makes them for
/// elements that contribute nothing, and reverse mode never makes one for a read).
fn add_at<S: Scalar>(target: Value<S>, path: &[f64], v: &Value<S>) -> R<Value<S>> {
    let Some((&first, rest)) = path.split_first() else {
        return add_values(&target, v);
    };
    let Value::Array(items) = target else {
        return fail("`scatter_add` indexes a value that is not an array");
    };
    let Ok(k) = position(first, items.len()) else {
        return Ok(Value::Array(items));
    };
    let mut items = items.to_vec();
    let old = std::mem::replace(&mut items[k], Value::Bool(false));
    items[k] = add_at(old, rest, v)?;
    Ok(Value::array(items))
}

/// `x +̂ y` on values of one ground type.
fn add_values<S: Scalar>(x: &Value<S>, y: &Value<S>) -> R<Value<S>> {
    Ok(match (x, y) {
        (Value::Real(a), Value::Real(b)) => {
            Value::Real(S::binary(unfad_syntax::BinOp::Add, a.clone(), b.clone()))
        }
        (Value::Tuple(a), Value::Tuple(b)) if a.len() == b.len() => Value::tuple(
            a.iter()
                .zip(b.iter())
                .map(|(p, q)| add_values(p, q))
                .collect::<R<Vec<_>>>()?,
        ),
        (Value::Array(a), Value::Array(b)) => Value::array(
            a.iter()
                .zip(b.iter())
                .map(|(p, q)| add_values(p, q))
                .collect::<R<Vec<_>>>()?,
        ),
        _ => return fail("`scatter_add` adds values of different shapes"),
    })
}

/// An interpreter over one arena.
pub struct Interp<'a, S> {
    arena: &'a Arena,
    env: Vec<Option<Value<S>>>,
    free_vars: HashMap<ExprId, Rc<[Var]>>,
    /// The next perturbation tag (see [`Interp::fresh_tag`]).
    next_tag: u32,
}

/// Evaluate `func` on `args` with scalars of type `S`.
pub fn eval_func<S: Scalar>(arena: &Arena, func: &Func, args: &[Value<S>]) -> R<Value<S>> {
    Interp::new(arena).call(func, args)
}

/// Why a `grad` or `jvp` inside a program cannot be evaluated with scalars without tags.
const UNTAGGED: &str =
    "derivatives inside programs need the tagged interpreter (eval_with_derivatives)";

impl<'a, S: Scalar> Interp<'a, S> {
    pub fn new(arena: &'a Arena) -> Self {
        Interp {
            arena,
            env: vec![None; arena.var_count()],
            free_vars: HashMap::new(),
            next_tag: 0,
        }
    }

    /// A perturbation tag this interpreter has not given before. Every derivative inside
    /// the program takes one when it is evaluated, so a caller that perturbs the arguments
    /// itself takes its tag here too, to keep it apart from the program's.
    pub fn fresh_tag(&mut self) -> u32 {
        let tag = self.next_tag;
        self.next_tag = tag.checked_add(1).expect("perturbation tags run out");
        tag
    }

    /// Evaluate `func` on `args` (its parameters bound, then unbound again).
    pub fn call(&mut self, func: &Func, args: &[Value<S>]) -> R<Value<S>> {
        if args.len() != func.params.len() {
            return fail(format!(
                "{} argument(s) for {} parameter(s)",
                args.len(),
                func.params.len()
            ));
        }
        let saved: Vec<Option<Value<S>>> = func
            .params
            .iter()
            .zip(args)
            .map(|(&p, a)| self.bind(p, a.clone()))
            .collect();
        let r = self.eval(func.body);
        for (&p, old) in func.params.iter().zip(saved).rev() {
            self.restore(p, old);
        }
        r
    }

    /// Bind `v` (for free variables of a term), returning the previous value.
    pub fn bind(&mut self, v: Var, value: Value<S>) -> Option<Value<S>> {
        self.env[v.index()].replace(value)
    }

    fn restore(&mut self, v: Var, old: Option<Value<S>>) {
        self.env[v.index()] = old;
    }

    fn lookup(&self, v: Var) -> R<Value<S>> {
        match &self.env[v.index()] {
            Some(x) => Ok(x.clone()),
            None => fail(format!("unbound variable `{}`", self.arena.var_name(v))),
        }
    }

    /// Evaluate `e` in the current environment.
    pub fn eval(&mut self, e: ExprId) -> R<Value<S>> {
        with_stack(|| {
            let mut saved: Vec<(Var, Option<Value<S>>)> = Vec::new();
            let mut cur = e;
            let result = loop {
                match self.arena[cur] {
                    Node::Let(x, e1, e2) => match self.eval(e1) {
                        Ok(v) => {
                            saved.push((x, self.bind(x, v)));
                            cur = e2;
                        }
                        Err(err) => break Err(err),
                    },
                    Node::LetTuple(xs, e1, e2) => match self.eval(e1) {
                        Ok(Value::Tuple(items)) if items.len() == xs.len() => {
                            for (&x, v) in self.arena.vars_of(xs).iter().zip(items.iter()) {
                                saved.push((x, self.bind(x, v.clone())));
                            }
                            cur = e2;
                        }
                        Ok(_) => break fail("tuple pattern of the wrong size"),
                        Err(err) => break Err(err),
                    },
                    _ => break self.eval_node(cur),
                }
            };
            for (x, old) in saved.into_iter().rev() {
                self.restore(x, old);
            }
            result
        })
    }

    fn real(&mut self, e: ExprId) -> R<S> {
        match self.eval(e)? {
            Value::Real(x) => Ok(x),
            v => fail(format!("expected a real, got {v}")),
        }
    }

    fn boolean(&mut self, e: ExprId) -> R<bool> {
        match self.eval(e)? {
            Value::Bool(b) => Ok(b),
            v => fail(format!("expected a condition, got {v}")),
        }
    }

    fn array(&mut self, e: ExprId) -> R<Rc<[Value<S>]>> {
        match self.eval(e)? {
            Value::Array(items) => Ok(items),
            v => fail(format!("expected an array, got {v}")),
        }
    }

    /// Apply the function argument `f` (a `Lambda` node) to `args` in the current
    /// environment (its free variables are those of the enclosing scope).
    fn call_binder(&mut self, f: ExprId, args: &[Value<S>]) -> R<Value<S>> {
        let Node::Lambda(ps, body) = self.arena[f] else {
            return fail("the function argument of an array operation is not a binder");
        };
        let params = self.arena.vars_of(ps);
        if params.len() != args.len() {
            return fail("binder applied to the wrong number of arguments");
        }
        let saved: Vec<Option<Value<S>>> = params
            .iter()
            .zip(args)
            .map(|(&p, a)| self.bind(p, a.clone()))
            .collect();
        let r = self.eval(body);
        for (&p, old) in params.iter().zip(saved) {
            self.restore(p, old);
        }
        r
    }

    fn apply(&mut self, clo: &Closure<S>, args: Vec<Value<S>>) -> R<Value<S>> {
        if clo.params.len() != args.len() {
            return fail("function applied to the wrong number of arguments");
        }
        let mut saved = Vec::new();
        for (v, val) in &clo.captured {
            saved.push((*v, self.bind(*v, val.clone())));
        }
        for (&p, a) in clo.params.iter().zip(args) {
            saved.push((p, self.bind(p, a)));
        }
        let r = self.eval(clo.body);
        for (v, old) in saved.into_iter().rev() {
            self.restore(v, old);
        }
        r
    }

    fn eval_node(&mut self, e: ExprId) -> R<Value<S>> {
        use Node::*;
        let arena = self.arena;
        Ok(match arena[e] {
            Const(c) => Value::Real(S::constant(c)),
            Bool(b) => Value::Bool(b),
            Var(v) => self.lookup(v)?,
            Let(..) | LetTuple(..) => self.eval(e)?,
            Tuple(l) => {
                let items = arena
                    .exprs(l)
                    .iter()
                    .map(|&i| self.eval(i))
                    .collect::<R<Vec<_>>>()?;
                Value::tuple(items)
            }
            Array(l) => {
                let items = arena
                    .exprs(l)
                    .iter()
                    .map(|&i| self.eval(i))
                    .collect::<R<Vec<_>>>()?;
                Value::array(items)
            }
            Proj(i, x) => match self.eval(x)? {
                Value::Tuple(items) if (i as usize) < items.len() => items[i as usize].clone(),
                v => return fail(format!("projection .{i} of {v}")),
            },
            Op1(op, x) => Value::Real(S::unary(op, self.real(x)?)),
            Op2(op, x, y) => {
                let a = self.real(x)?;
                let b = self.real(y)?;
                if op.is_integer_only() && b.value() == 0.0 {
                    return fail::<Value<S>>(format!(
                        "{} by zero: `{}` of {} and 0",
                        if op == unfad_syntax::BinOp::Rem {
                            "remainder"
                        } else {
                            "integer division"
                        },
                        op.name(),
                        a.value()
                    ))
                    .map_err(|err| err.at(arena.span(e)));
                }
                Value::Real(S::binary(op, a, b))
            }
            Cmp(op, x, y) => {
                let a = self.real(x)?;
                let b = self.real(y)?;
                Value::Bool(op.eval(a.value(), b.value()))
            }
            Not(x) => Value::Bool(!self.boolean(x)?),
            And(x, y) => Value::Bool(self.boolean(x)? && self.boolean(y)?),
            Or(x, y) => Value::Bool(self.boolean(x)? || self.boolean(y)?),
            If(c, x, y) => {
                if self.boolean(c)? {
                    self.eval(x)?
                } else {
                    self.eval(y)?
                }
            }
            Lambda(ps, body) => {
                let fv = match self.free_vars.get(&e) {
                    Some(fv) => fv.clone(),
                    None => {
                        let fv: Rc<[unfad_syntax::Var]> = arena.free_vars(e).into();
                        self.free_vars.insert(e, fv.clone());
                        fv
                    }
                };
                let captured = fv
                    .iter()
                    .map(|&v| Ok((v, self.lookup(v)?)))
                    .collect::<R<Vec<_>>>()?;
                Value::Closure(Rc::new(Closure {
                    params: arena.vars_of(ps).to_vec(),
                    body,
                    captured,
                }))
            }
            App(f, l) => {
                let Value::Closure(clo) = self.eval(f)? else {
                    return fail("application of a value that is not a function");
                };
                let args = arena
                    .exprs(l)
                    .iter()
                    .map(|&i| self.eval(i))
                    .collect::<R<Vec<_>>>()?;
                self.apply(&clo, args)?
            }
            Call(..) => return fail("calls are inlined before evaluation"),
            Derivative(kind, f, l) => self
                .derivative(kind, f, l)
                .map_err(|err| err.at(arena.span(e)))?,
            Len(x) => Value::Real(S::constant(self.array(x)?.len() as f64)),
            ZerosLike(x) => self.eval(x)?.map_leaves(&mut |_| S::constant(0.0)),
            OnesLike(x) => self.eval(x)?.map_leaves(&mut |_| S::constant(1.0)),
            Map(f, x) => {
                let xs = self.array(x)?;
                let out = xs
                    .iter()
                    .map(|a| self.call_binder(f, std::slice::from_ref(a)))
                    .collect::<R<Vec<_>>>()?;
                Value::array(out)
            }
            Map2(f, x, y) => {
                let xs = self.array(x)?;
                let ys = self.array(y)?;
                // Formal sizes can differ from run-time lengths only through a shifted empty
                // array; the shorter length is then the intended one.
                let out = xs
                    .iter()
                    .zip(ys.iter())
                    .map(|(a, b)| self.call_binder(f, &[a.clone(), b.clone()]))
                    .collect::<R<Vec<_>>>()?;
                Value::array(out)
            }
            Reduce(f, z, x) => {
                let z = self.eval(z)?;
                let xs = self.array(x)?;
                // The order every evaluator follows (`unfad_syntax::reduction`).
                match reduce_order(arena, f) {
                    ReduceOrder::Blocked(op) => {
                        let Some(u) = unit(op) else {
                            return fail("a blocked reduction without a unit");
                        };
                        blocked_fold(
                            z,
                            || Value::Real(S::constant(u)),
                            &xs,
                            |a, b| self.call_binder(f, &[a, b]),
                        )?
                    }
                    ReduceOrder::Left => {
                        let mut acc = z;
                        for a in xs.iter() {
                            acc = self.call_binder(f, &[acc, a.clone()])?;
                        }
                        acc
                    }
                }
            }
            Foldl(f, z, x) => {
                let mut acc = self.eval(z)?;
                let xs = self.array(x)?;
                for a in xs.iter() {
                    acc = self.call_binder(f, &[acc, a.clone()])?;
                }
                acc
            }
            Scanl(f, z, x) => {
                let mut acc = self.eval(z)?;
                let xs = self.array(x)?;
                let mut out = Vec::with_capacity(xs.len() + 1);
                out.push(acc.clone());
                for a in xs.iter() {
                    acc = self.call_binder(f, &[acc, a.clone()])?;
                    out.push(acc.clone());
                }
                Value::array(out)
            }
            Scanr(f, z, x) => {
                let mut acc = self.eval(z)?;
                let xs = self.array(x)?;
                let mut out = vec![acc.clone()];
                for a in xs.iter().rev() {
                    acc = self.call_binder(f, &[a.clone(), acc])?;
                    out.push(acc.clone());
                }
                out.reverse();
                Value::array(out)
            }
            Shift1L(x) => {
                let xs = self.array(x)?;
                Value::array(xs.iter().skip(1).cloned().collect())
            }
            Shift1R(x) => {
                let xs = self.array(x)?;
                let n = xs.len().saturating_sub(1);
                Value::array(xs[..n].to_vec())
            }
            Iota(n) => {
                let n = self.real(n)?.value().max(0.0) as usize;
                // A length from the arguments may ask for more than the machine has: an
                // error, not an abort of the process.
                let mut items = Vec::new();
                if items.try_reserve_exact(n).is_err() {
                    return Err(EvalError(
                        format!("`iota {n}`: an array of {n} elements cannot be allocated"),
                        Some(arena.span(e)),
                    ));
                }
                items.extend((0..n).map(|i| Value::Real(S::constant(i as f64))));
                Value::array(items)
            }
            Index(x, i) => {
                let xs = self.array(x)?;
                let i = self.real(i)?.value();
                let k = position(i, xs.len()).map_err(|err| err.at(arena.span(e)))?;
                xs[k].clone()
            }
            ScatterAdd(z, is, vs) => {
                let mut target = self.eval(z)?;
                let is = self.array(is)?;
                let vs = self.array(vs)?;
                for (at, v) in is.iter().zip(vs.iter()) {
                    let path: Vec<f64> = match at {
                        Value::Real(i) => vec![i.value()],
                        Value::Tuple(items) => items
                            .iter()
                            .map(|i| match i {
                                Value::Real(i) => Ok(i.value()),
                                v => fail(format!("a position of `scatter_add` holds {v}")),
                            })
                            .collect::<R<Vec<_>>>()?,
                        v => return fail(format!("a position of `scatter_add` is {v}")),
                    };
                    target = add_at(target, &path, v)?;
                }
                target
            }
        })
    }

    /// `grad(f)(args)`, `grad(f, i)(args)` or `jvp(f)(P, T)` by tagged forward mode: the
    /// arguments perturbed at a tag of this derivative's own, the body of `f` (a closed
    /// lambda) evaluated, and the parts along that tag read from the result. A derivative
    /// inside `f` takes a later tag, so its perturbations stay apart from this one's.
    fn derivative(&mut self, kind: Derivative, f: ExprId, l: ExprList) -> R<Value<S>> {
        if !S::TAGGED {
            return fail(UNTAGGED);
        }
        let arena = self.arena;
        let Some((params, _)) = arena.lambda_parts(f) else {
            return fail("the function of a derivative is not a lambda");
        };
        let types = params
            .iter()
            .map(|&p| match arena.var_type(p) {
                Some(t) => Ok(t.clone()),
                None => fail(format!(
                    "the parameter `{}` of a derivative's function has no type",
                    arena.var_name(p)
                )),
            })
            .collect::<R<Vec<Type>>>()?;
        let args = arena
            .exprs(l)
            .iter()
            .map(|&a| self.eval(a))
            .collect::<R<Vec<_>>>()?;
        let tag = self.fresh_tag();
        match kind {
            Derivative::Grad { wrt } => {
                if args.len() != params.len() {
                    return fail("`grad` applied to the wrong number of arguments");
                }
                let wrt: Vec<usize> = match wrt {
                    Some(i) => vec![i as usize],
                    None => (0..types.len()).filter(|&i| types[i].has_reals()).collect(),
                };
                let mut grads = Vec::with_capacity(wrt.len());
                for &i in &wrt {
                    let (Some(ty), Some(arg)) = (types.get(i), args.get(i)) else {
                        return fail(format!(
                            "`grad` with respect to a parameter {i} it does not have"
                        ));
                    };
                    if !ty.is_ground() {
                        return fail(format!("`grad` with respect to parameter {i}, of type `{ty}`, which holds a function"));
                    }
                    let mask = real_leaves(ty, arg);
                    let mut gradient = Vec::with_capacity(mask.len());
                    for (j, &real) in mask.iter().enumerate() {
                        if !real {
                            gradient.push(S::constant(0.0));
                            continue;
                        }
                        let seeded = map_leaves_indexed(arg, |k, x| {
                            if k == j {
                                S::perturb(x, S::constant(1.0), tag).ok_or_else(untagged)
                            } else {
                                Ok(x)
                            }
                        })?;
                        let mut perturbed = args.clone();
                        perturbed[i] = seeded;
                        let Value::Real(r) = self.call_binder(f, &perturbed)? else {
                            return fail("the function of `grad` does not return a real");
                        };
                        gradient.push(tangent_part(&r, tag)?);
                    }
                    let mut gradient = gradient.into_iter();
                    grads.push(map_leaves_indexed(arg, |_, _| {
                        gradient
                            .next()
                            .ok_or_else(|| EvalError("a gradient of the wrong size".into(), None))
                    })?);
                }
                match grads.len() {
                    0 => fail("`grad` of a function none of whose parameters holds a real"),
                    1 => Ok(grads.pop().expect("one gradient")),
                    _ => Ok(Value::tuple(grads)),
                }
            }
            Derivative::Jvp => {
                let [point, tangent] = &args[..] else {
                    return fail("`jvp(f)` applied to other than a point and a tangent");
                };
                // One parameter's value is itself, several are a tuple.
                let (points, tangents): (Vec<Value<S>>, Vec<Value<S>>) = match (point, tangent) {
                    _ if params.len() == 1 => (vec![point.clone()], vec![tangent.clone()]),
                    (Value::Tuple(p), Value::Tuple(t)) if p.len() == params.len() && t.len() == params.len() => {
                        (p.to_vec(), t.to_vec())
                    }
                    _ => return fail("the point or the tangent of `jvp` is not a tuple of the function's arguments"),
                };
                let mut perturbed = Vec::with_capacity(points.len());
                for ((ty, p), t) in types.iter().zip(&points).zip(&tangents) {
                    let mask = real_leaves(ty, p);
                    let t = t.leaves();
                    if t.len() != mask.len() {
                        return fail("the tangent of `jvp` does not have the shape of the point");
                    }
                    perturbed.push(map_leaves_indexed(p, |k, x| {
                        if mask[k] {
                            S::perturb(x, t[k].clone(), tag).ok_or_else(untagged)
                        } else {
                            Ok(x)
                        }
                    })?);
                }
                let result = self.call_binder(f, &perturbed)?;
                // Ints never carry a perturbation (they are computed from ints only, and
                // the int leaves of the point are not perturbed), so their tangents are
                // real zeros here.
                let value = map_leaves_indexed(&result, |_, x| primal_part(&x, tag))?;
                let tangent = map_leaves_indexed(&result, |_, x| tangent_part(&x, tag))?;
                Ok(Value::tuple(vec![value, tangent]))
            }
        }
    }
}

fn untagged() -> EvalError {
    EvalError(UNTAGGED.into(), None)
}

/// The part of `x` along the perturbation `tag`.
fn tangent_part<S: Scalar>(x: &S, tag: u32) -> R<S> {
    x.split(tag).map(|(_, t)| t).ok_or_else(untagged)
}

/// `x` without its perturbation `tag`.
fn primal_part<S: Scalar>(x: &S, tag: u32) -> R<S> {
    x.split(tag).map(|(p, _)| p).ok_or_else(untagged)
}

/// `v` with its leaves replaced by `f(leaf index, leaf)` in row-major order, conditions
/// kept; an error for a value holding a function.
fn map_leaves_indexed<S: Scalar>(v: &Value<S>, mut f: impl FnMut(usize, S) -> R<S>) -> R<Value<S>> {
    fn go<S: Scalar>(
        v: &Value<S>,
        k: &mut usize,
        f: &mut impl FnMut(usize, S) -> R<S>,
    ) -> R<Value<S>> {
        Ok(match v {
            Value::Real(x) => {
                let y = f(*k, x.clone())?;
                *k += 1;
                Value::Real(y)
            }
            Value::Bool(b) => Value::Bool(*b),
            Value::Tuple(items) => Value::Tuple(
                items
                    .iter()
                    .map(|x| go(x, k, f))
                    .collect::<R<Vec<_>>>()?
                    .into(),
            ),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|x| go(x, k, f))
                    .collect::<R<Vec<_>>>()?
                    .into(),
            ),
            Value::Closure(_) => return fail("a derivative's argument or result holds a function"),
        })
    }
    go(v, &mut 0, &mut f)
}
