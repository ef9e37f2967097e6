//! `UNF^-1`: from Target UNF back to Target (Figure "Transformation from Target UNF to
//! Target").
//!
//! A context `[A1, ..., An]` is a list of Target atoms (variables or constants) `x1..xn`.
//! A primitive reads the last atoms and extends the list; its result is bound by `let` to
//! a variable named after its index (the paper's `x_{n+1}`), so that the output is in
//! A-normal form. `e1 ∘ e2` becomes `fun (y1, ..., ym) -> e1(e2)`, where `e2` runs in the
//! context extended by the parameters `y`. `J^T` primitives produce the adjoint terms of
//! the figure, which stay inline when used once (`Y(y1 + y4, y2, y3)`) and are bound to a
//! variable first when a rule would duplicate them.

use unfad_syntax::{Arena, ExprId, Node, Type, Var};

use super::{Ctx, OpKind, Prim, TargetUnf};
use crate::arrays;
use crate::build::{self, component, is_atom, Run};
use crate::derivatives::{binary_partials, unary_partial};
use crate::elem::{self, Capture};
use crate::error::{internal, AdError};
use crate::folds::{self, Fold, FoldKind};
use crate::ground::{add_hat, zero};
use crate::reverse::Reverse;

/// `UNF^-1(e)` applied to the atoms `inputs`: the bindings it makes, in order, and the
/// atoms or terms of its output context.
pub fn inverse(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    e: &TargetUnf,
    inputs: Vec<ExprId>,
) -> Result<(Vec<Binding>, Vec<ExprId>), AdError> {
    let mut inv = Inverse {
        a,
        rev,
        lets: Vec::new(),
    };
    let out = inv.run(e, inputs)?;
    Ok((inv.lets, out))
}

/// A binding of the output: `let x = e` or `let (x1, ..., xk) = e`.
pub enum Binding {
    One(Var, ExprId),
    Many(Vec<Var>, ExprId),
}

/// `let ... in body` for the bindings, in order.
pub fn wrap(a: &mut Arena, lets: Vec<Binding>, body: ExprId) -> ExprId {
    lets.into_iter().rev().fold(body, |acc, b| match b {
        Binding::One(v, e) => a.let_(v, e, acc),
        Binding::Many(vs, e) => a.let_tuple(&vs, e, acc),
    })
}

struct Inverse<'a, 'r> {
    a: &'a mut Arena,
    rev: &'r mut dyn Reverse,
    lets: Vec<Binding>,
}

impl Inverse<'_, '_> {
    fn names(&self) -> &Run {
        self.rev.names()
    }

    /// Bind `e : ty` to a fresh variable named after context index `index` (1-based in
    /// the name).
    fn bind(&mut self, e: ExprId, ty: &Type, hint: &str, index: usize) -> ExprId {
        let v = self
            .a
            .fresh_var(&format!("{hint}{}", index + 1), Some(ty.clone()));
        self.lets.push(Binding::One(v, e));
        self.a.var(v)
    }

    /// Make `items[i]` an atom, binding it if it is a compound term.
    fn atomize(&mut self, items: &mut [ExprId], i: usize, ty: &Type, hint: &str) -> ExprId {
        if !is_atom(self.a, items[i]) {
            items[i] = self.bind(items[i], ty, hint, i);
        }
        items[i]
    }

    fn atomize_all(&mut self, items: &mut [ExprId], tys: &[Type], hint: &str) {
        for (i, t) in tys.iter().enumerate() {
            self.atomize(items, i, t, hint);
        }
    }

    fn run(&mut self, e: &TargetUnf, items: Vec<ExprId>) -> Result<Vec<ExprId>, AdError> {
        match e {
            TargetUnf::Prim(p) => self.prim(p, items),
            TargetUnf::JT(p) => self.transpose(p, items),
            TargetUnf::Seq(es) => es.iter().try_fold(items, |acc, e| self.run(e, acc)),
            TargetUnf::Pair(e1, e2) => {
                let (input, _) = e1.judgment(self.a)?;
                let mut items = items;
                check_len(&items, &input)?;
                self.atomize_all(&mut items, &input, "x");
                let mut out = self.run(e1, items.clone())?;
                out.extend(self.run(e2, items)?);
                Ok(out)
            }
            TargetUnf::Compose(e1, e2) => self.compose(e1, e2, items),
        }
    }

    /// `e1 ∘ e2` = `fun (y1, ..., ym) -> e1(e2)`, bound to a continuation variable.
    fn compose(
        &mut self,
        e1: &TargetUnf,
        e2: &TargetUnf,
        mut items: Vec<ExprId>,
    ) -> Result<Vec<ExprId>, AdError> {
        let (t1, o1) = e1.judgment(self.a)?;
        let (i2, _) = e2.judgment(self.a)?;
        check_len(&items, &t1)?;
        let Some(Type::Func(_, ret)) = o1.first().cloned() else {
            return internal("the left of `∘` is not a function");
        };
        self.atomize_all(&mut items, &t1, "x");
        let f = match self.run(e1, items.clone())?.as_slice() {
            [f] => *f,
            _ => return internal("the left of `∘` does not produce one function"),
        };
        let t2: Ctx = i2[t1.len()..].to_vec();
        let params: Vec<Var> = t2
            .iter()
            .enumerate()
            .map(|(j, t)| self.a.fresh_var(&format!("y{}", j + 1), Some(t.clone())))
            .collect();
        let outer = std::mem::take(&mut self.lets);
        let mut inner_items = items;
        inner_items.extend(params.iter().map(|&p| self.a.var(p)));
        let outs = self.run(e2, inner_items);
        let inner = std::mem::replace(&mut self.lets, outer);
        let call = self.a.app(f, &outs?);
        let body = wrap(self.a, inner, call);
        let lam = self.a.lambda(&params, body);
        let k = self.names().next();
        let y = self
            .a
            .fresh_var(&format!("Y{k}"), Some(Type::func(t2, (*ret).clone())));
        self.lets.push(Binding::One(y, lam));
        Ok(vec![self.a.var(y)])
    }

    /// A primitive of Source UNF.
    fn prim(&mut self, p: &Prim, mut items: Vec<ExprId>) -> Result<Vec<ExprId>, AdError> {
        let (input, output) = p.judgment(self.a)?;
        check_len(&items, &input)?;
        match p {
            Prim::Var { i, .. } => {
                let x = self.atomize(&mut items, *i, &input[*i], "x");
                items.push(x);
            }
            Prim::Op { ctx, op, args, ret } => {
                let n = ctx.len();
                for (j, t) in args.iter().enumerate() {
                    self.atomize(&mut items, n + j, t, "x");
                }
                let arg = |j: usize| items[n + j];
                let r = match *op {
                    OpKind::Const(c) => self.a.constant(c),
                    OpKind::Un(u) => self.a.op1(u, arg(0)),
                    OpKind::Bin(b) => self.a.op2(b, arg(0), arg(1)),
                    OpKind::Pi(i) => self.a.proj(i as u32, arg(0)),
                    OpKind::Len => self.a.add(Node::Len(arg(0))),
                    OpKind::ZerosLike => self.a.add(Node::ZerosLike(arg(0))),
                    OpKind::OnesLike => self.a.add(Node::OnesLike(arg(0))),
                };
                let r = if matches!(op, OpKind::Const(_)) {
                    r
                } else {
                    self.bind(r, ret, "x", items.len())
                };
                items.push(r);
            }
            Prim::Pair { ctx, .. } => {
                let parts = items.split_off(ctx.len());
                let t = build::tuple(self.a, &parts)?;
                let r = self.bind(t, &output[ctx.len()], "x", ctx.len());
                items.push(r);
            }
            Prim::Unpack { ctx, items: tys } => {
                let n = ctx.len();
                let packed = self.atomize(&mut items, n, &input[n], "x");
                items.pop();
                let vars: Vec<Var> = tys
                    .iter()
                    .enumerate()
                    .map(|(j, t)| {
                        self.a
                            .fresh_var(&format!("x{}", n + j + 1), Some(t.clone()))
                    })
                    .collect();
                self.lets.push(Binding::Many(vars.clone(), packed));
                items.extend(vars.iter().map(|&v| self.a.var(v)));
            }
            Prim::Proj { keep, drop, .. } => {
                items.drain(keep.len()..keep.len() + drop.len());
            }
            Prim::Map2 {
                ctx, f, captures, ..
            } => {
                let n = ctx.len();
                let arr_a = self.atomize(&mut items, n, &input[n], "x");
                let arr_b = self.atomize(&mut items, n + 1, &input[n + 1], "x");
                let caps = self.captures(&mut items, captures, &input);
                let f_copy = elem::instantiate(self.a, *f, &caps);
                let m = build::map2(self.a, f_copy, arr_a, arr_b);
                let r = self.bind(m, &output[n + 2], "x", n + 2);
                items.push(r);
            }
            Prim::Reduce { ctx, f, .. } => {
                let n = ctx.len();
                let unit = self.atomize(&mut items, n, &input[n], "x");
                let arr = self.atomize(&mut items, n + 1, &input[n + 1], "x");
                let f_copy = elem::instantiate(self.a, *f, &[]);
                let r = build::reduce(self.a, f_copy, unit, arr);
                let r = self.bind(r, &Type::Real, "x", n + 2);
                items.push(r);
            }
        }
        Ok(items)
    }

    /// The captured variables of `map2` and the atoms holding their values.
    fn captures(
        &mut self,
        items: &mut [ExprId],
        captures: &[(Var, usize)],
        input: &[Type],
    ) -> Vec<Capture> {
        captures
            .iter()
            .map(|&(var, p)| Capture {
                var,
                value: self.atomize(items, p, &input[p], "x"),
            })
            .collect()
    }

    /// `J^T p`: the atoms are the primal input of `p`, then the adjoint of its output;
    /// the result is the adjoint of its input.
    fn transpose(&mut self, p: &Prim, items: Vec<ExprId>) -> Result<Vec<ExprId>, AdError> {
        let (input, output) = p.judgment(self.a)?;
        let tys = [input.clone(), output.clone()].concat();
        check_len(&items, &tys)?;
        let mut primal = items;
        let mut adj = primal.split_off(input.len());
        match p {
            // (y1, ..., yi +̂ z, ..., yn)
            Prim::Var { ctx, i } => {
                let z = self.pop_adjoint(&mut adj, &output)?;
                self.atomize_for_sum(&mut adj, *i, &ctx[*i]);
                adj[*i] = add_hat(self.a, &ctx[*i], adj[*i], z)?;
            }
            // (y1, ..., yn, y_{n+j} + ∂j op * z, ...)
            Prim::Op { ctx, op, args, .. } => {
                let n = ctx.len();
                let z = self.pop_adjoint(&mut adj, &output)?;
                match *op {
                    OpKind::Un(u) => {
                        let x = self.atomize(&mut primal, n, &input[n], "x");
                        let d = unary_partial(self.a, u, x);
                        let dz = build::mul(self.a, d, z);
                        adj[n] = build::add(self.a, adj[n], dz);
                    }
                    OpKind::Bin(b) => {
                        let x1 = self.atomize(&mut primal, n, &input[n], "x");
                        let x2 = self.atomize(&mut primal, n + 1, &input[n + 1], "x");
                        let (d1, d2) = binary_partials(self.a, b, x1, x2);
                        let (d1z, d2z) = (build::mul(self.a, d1, z), build::mul(self.a, d2, z));
                        adj[n] = build::add(self.a, adj[n], d1z);
                        adj[n + 1] = build::add(self.a, adj[n + 1], d2z);
                    }
                    OpKind::Pi(i) => {
                        let Type::Tuple(parts) = &args[0] else {
                            return internal("projection of a non-tuple");
                        };
                        let w = self.atomize(&mut primal, n, &input[n], "x");
                        let mut one_hot = Vec::with_capacity(parts.len());
                        for (j, t) in parts.iter().enumerate() {
                            if j == i {
                                one_hot.push(z);
                            } else {
                                let wj = component(self.a, w, j);
                                one_hot.push(zero(self.a, t, wj)?);
                            }
                        }
                        let hot = build::tuple(self.a, &one_hot)?;
                        self.atomize_for_sum(&mut adj, n, &args[0]);
                        adj[n] = add_hat(self.a, &args[0], adj[n], hot)?;
                    }
                    OpKind::Const(_) | OpKind::Len | OpKind::ZerosLike | OpKind::OnesLike => {}
                }
            }
            // (y1, ..., yn, π1 z, ..., πk z)
            Prim::Pair { items: parts, .. } => {
                let z = self.pop_adjoint(&mut adj, &output)?;
                for j in 0..parts.len() {
                    adj.push(component(self.a, z, j));
                }
            }
            // (y1, ..., yn, (z1, ..., zk))
            Prim::Unpack { ctx, .. } => {
                let parts = adj.split_off(ctx.len());
                adj.push(build::tuple(self.a, &parts)?);
            }
            // (y1, ..., yk, 0, ..., 0, y_{k+p}, ..., yn)
            Prim::Proj { keep, drop, .. } => {
                let rest = adj.split_off(keep.len());
                for (j, t) in drop.iter().enumerate() {
                    let w = self.atomize(&mut primal, keep.len() + j, t, "x");
                    adj.push(zero(self.a, t, w)?);
                }
                adj.extend(rest);
            }
            Prim::Map2 {
                ctx,
                f,
                captures,
                arr,
            } => {
                let n = ctx.len();
                let z = self.pop_adjoint(&mut adj, &output)?;
                let arr_a = self.atomize(&mut primal, n, &input[n], "x");
                let arr_b = self.atomize(&mut primal, n + 1, &input[n + 1], "x");
                let caps = self.captures(&mut primal, captures, &input);
                let res = arrays::map_adjoint(
                    self.a,
                    self.rev,
                    *f,
                    &caps,
                    &[arr_a, arr_b],
                    z,
                    &Type::Real,
                )?;
                for (v, e) in res.bindings {
                    self.lets.push(Binding::One(v, e));
                }
                for (&(_, p), contribution) in captures.iter().zip(res.captures) {
                    self.atomize_for_sum(&mut adj, p, &ctx[p]);
                    adj[p] = add_hat(self.a, &ctx[p], adj[p], contribution)?;
                }
                let [first, second] = res.operands[..] else {
                    return internal("`map2` has two operands");
                };
                adj[n] = add_hat(self.a, arr, adj[n], first)?;
                adj[n + 1] = add_hat(self.a, arr, adj[n + 1], second)?;
            }
            Prim::Reduce { ctx, f, arr } => {
                let n = ctx.len();
                let z = self.pop_adjoint(&mut adj, &output)?;
                let unit = self.atomize(&mut primal, n, &input[n], "x");
                let array = self.atomize(&mut primal, n + 1, &input[n + 1], "x");
                let fold = Fold {
                    f: *f,
                    captures: &[],
                    init: unit,
                    array,
                };
                let tape = folds::fold_tape(self.a, self.rev, &fold, FoldKind::Reduce)?;
                for (v, e) in tape.bindings.iter().copied() {
                    self.lets.push(Binding::One(v, e));
                }
                let back = folds::fold_adjoint(self.a, self.rev, &fold, &tape, z)?;
                for (v, e) in back.bindings {
                    self.lets.push(Binding::One(v, e));
                }
                adj[n] = build::add(self.a, adj[n], back.init);
                adj[n + 1] = add_hat(self.a, arr, adj[n + 1], back.array)?;
            }
        }
        Ok(adj)
    }

    /// Remove the adjoint of the last output (an atom: rules use it several times).
    fn pop_adjoint(&mut self, adj: &mut Vec<ExprId>, output: &[Type]) -> Result<ExprId, AdError> {
        let last = adj.len().checked_sub(1);
        let (Some(i), Some(t)) = (last, output.last()) else {
            return internal("a primitive without output");
        };
        let z = self.atomize(adj, i, t, "y");
        adj.pop();
        Ok(z)
    }

    /// `+̂` projects tuples: make such an adjoint an atom first.
    fn atomize_for_sum(&mut self, adj: &mut [ExprId], i: usize, ty: &Type) {
        if matches!(ty, Type::Tuple(_)) {
            self.atomize(adj, i, ty, "y");
        }
    }
}

fn check_len(items: &[ExprId], tys: &[Type]) -> Result<(), AdError> {
    if items.len() == tys.len() {
        Ok(())
    } else {
        internal(format!(
            "UNF^-1 got {} atoms for a context of {} types",
            items.len(),
            tys.len()
        ))
    }
}
