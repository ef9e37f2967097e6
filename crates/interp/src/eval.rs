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
use unfad_syntax::{with_stack, Arena, ExprId, Func, Node, Var};

use crate::scalar::Scalar;
use crate::value::{Closure, Value};

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
            Value::Real(S::binary(unfad_syntax::BinOp::Add, *a, *b))
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
}

/// Evaluate `func` on `args` with scalars of type `S`.
pub fn eval_func<S: Scalar>(arena: &Arena, func: &Func, args: &[Value<S>]) -> R<Value<S>> {
    if args.len() != func.params.len() {
        return fail(format!(
            "{} argument(s) for {} parameter(s)",
            args.len(),
            func.params.len()
        ));
    }
    let mut it = Interp::new(arena);
    for (&p, a) in func.params.iter().zip(args) {
        it.bind(p, a.clone());
    }
    it.eval(func.body)
}

impl<'a, S: Scalar> Interp<'a, S> {
    pub fn new(arena: &'a Arena) -> Self {
        Interp {
            arena,
            env: vec![None; arena.var_count()],
            free_vars: HashMap::new(),
        }
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
            Derivative(..) => {
                return fail(
                    "`grad` and `jvp` inside a program are evaluated with tagged dual numbers",
                )
            }
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
                Value::array((0..n).map(|i| Value::Real(S::constant(i as f64))).collect())
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
}
