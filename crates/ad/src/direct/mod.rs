//! The direct macro `D^ρ_{Γ;Y}` (Figure "Reverse-mode transformation from source to target
//! language" and section "Beyond the Source language"): one rule per construct of the
//! Source term. The rules of the core fragment are here; [`arrays`] has the array
//! operations and [`conditionals`] the conditions.
//!
//! `D_{Γ;Y}(e)` for `Γ ⊢ e : A` and a continuation variable `Y : Γ → ρ` is a Target term of
//! type `A × (Γ × A → ρ)`: the value of `e`, and the continuation that takes adjoints of
//! the whole context and of the value, adds the contributions of `e`, and passes them on
//! to `Y`. Every continuation variable is used exactly once. The rules follow the figure;
//! where it has typos (the continuation called after a `pair`, a projection or an
//! operator is the *new* one, `Y1` or `Y2`, not `Y`), the types decide.
//!
//! Variables of the Source term are reused in the result where the figure binds them
//! (`let x, Y1 = D(e1) in ...`); the bodies of array functions, which the rules use
//! several times, are copied with fresh binders at every use.
//!
//! Conditions (`bool` values) are not differentiated: they are in scope as values but
//! not in the context Γ (they have no adjoint), as the paper treats array sizes.

use unfad_syntax::fast_hash::{FastMap as HashMap, FastSet as HashSet};

mod arrays;
mod conditionals;

use unfad_syntax::{with_stack, Arena, ExprId, Node, Type, Var};

use crate::build::{component, is_atom, Run};
use crate::derivatives::{binary_partials, unary_partial};
use crate::error::AdError;
use crate::folds::FoldKind;
use crate::ground::{add_hat, zero};
use crate::reverse::{adjoint_name, types_of, Reverse};

/// The direct pipeline.
pub struct Direct<'n> {
    pub(crate) names: &'n Run,
}

impl Reverse for Direct<'_> {
    fn pair(
        &mut self,
        a: &mut Arena,
        gamma: &[Var],
        rho: &Type,
        y: Var,
        e: ExprId,
    ) -> Result<ExprId, AdError> {
        let mut m = Macro {
            inert: crate::elem::inert_lets(a, e),
            a,
            names: self.names,
            rho: rho.clone(),
            ctx: Vec::new(),
            pos: HashMap::default(),
            adjoint_names: HashMap::default(),
        };
        for &g in gamma {
            m.push(g);
        }
        m.d(e, y)
    }

    fn names(&self) -> &Run {
        self.names
    }
}

/// One run of the macro: the arena, ρ, and the current context Γ.
struct Macro<'a, 'n> {
    a: &'a mut Arena,
    names: &'n Run,
    rho: Type,
    ctx: Vec<Var>,
    pos: HashMap<Var, usize>,
    /// Variables of `let`s that carry no derivative ([`crate::elem::inert_lets`]).
    inert: HashSet<Var>,
    /// The name of the adjoint of each variable (`d` and its name), made once: every
    /// continuation has a parameter for each variable of its context.
    adjoint_names: HashMap<Var, std::sync::Arc<str>>,
}

/// An error for a construct the macro has no rule for.
pub(crate) fn unsupported(a: &Arena, e: ExprId, what: &str) -> AdError {
    AdError::Unsupported {
        expr: e,
        span: a.span(e),
        message: format!("reverse mode does not support {what}"),
    }
}

/// What a node is, for error messages.
pub(crate) fn describe(node: Node) -> &'static str {
    match node {
        Node::Bool(_) | Node::Cmp(..) | Node::Not(_) | Node::And(..) | Node::Or(..) => {
            "conditions as values"
        }
        Node::If(..) => "`if`",
        Node::Lambda(..) => "`fun` (a Target construct)",
        Node::App(..) => "application (a Target construct)",
        Node::Call(..) => "calls (inline them first)",
        Node::Array(_) => "array literals",
        Node::Map(..) => "`map`",
        Node::Foldl(..) => "`foldl`",
        Node::Scanl(..) => "`scanl`",
        Node::Scanr(..) => "`scanr`",
        Node::Shift1L(_) | Node::Shift1R(_) => "shifts (a Target construct)",
        _ => "this construct",
    }
}

/// The type of the Source node `e`, recorded by the type checker.
pub(crate) fn type_of(a: &Arena, e: ExprId) -> Result<Type, AdError> {
    a.type_of(e).cloned().ok_or_else(|| AdError::IllTyped {
        expr: e,
        span: a.span(e),
        message: "this term has not been type-checked".into(),
    })
}

impl Macro<'_, '_> {
    fn push(&mut self, v: Var) {
        self.pos.insert(v, self.ctx.len());
        self.ctx.push(v);
    }

    fn pop(&mut self, n: usize) {
        for _ in 0..n {
            if let Some(v) = self.ctx.pop() {
                self.pos.remove(&v);
            }
        }
    }

    /// A fresh continuation variable `Y_k : Γ × extra → ρ` for the current Γ, and `k`.
    fn cont_var(&mut self, extra: &[Type]) -> Result<(Var, usize), AdError> {
        let mut params = types_of(self.a, &self.ctx)?;
        params.extend_from_slice(extra);
        let k = self.names.next();
        let y = self
            .a
            .fresh_var(&format!("Y{k}"), Some(Type::func(params, self.rho.clone())));
        Ok((y, k))
    }

    fn value_var(&mut self, k: usize, ty: Type) -> Var {
        self.a.fresh_var(&format!("v{k}"), Some(ty))
    }

    /// `fun (dx1, ..., dxn, z) -> body(dx, z)` over the current context; `z : z_ty`.
    fn cont(
        &mut self,
        z_ty: &Type,
        body: impl FnOnce(&mut Self, Vec<ExprId>, ExprId) -> Result<ExprId, AdError>,
    ) -> Result<ExprId, AdError> {
        let tys = types_of(self.a, &self.ctx)?;
        let mut params: Vec<Var> = Vec::with_capacity(self.ctx.len() + 1);
        for (i, t) in tys.into_iter().enumerate() {
            params.push(self.adjoint_var(self.ctx[i], Some(t)));
        }
        let z = self.a.fresh_var("z", Some(z_ty.clone()));
        let dx: Vec<ExprId> = params.iter().map(|&p| self.a.var(p)).collect();
        let ez = self.a.var(z);
        let b = body(self, dx, ez)?;
        params.push(z);
        Ok(self.a.lambda(&params, b))
    }

    /// A fresh variable for an adjoint of `g`, of type `ty`.
    fn adjoint_var(&mut self, g: Var, ty: Option<Type>) -> Var {
        let a = &*self.a;
        let name = self
            .adjoint_names
            .entry(g)
            .or_insert_with(|| adjoint_name(a, g).into())
            .clone();
        self.a.fresh_var_named(name, ty)
    }

    /// `Y(args)`.
    fn call(&mut self, y: Var, args: &[ExprId]) -> ExprId {
        let f = self.a.var(y);
        self.a.app(f, args)
    }

    /// `<value, continuation>`.
    fn pair(&mut self, value: ExprId, cont: ExprId) -> ExprId {
        self.a.tuple(&[value, cont])
    }

    /// `let (x, Y) = d in rest`.
    fn bind(&mut self, x: Var, y: Var, d: ExprId, rest: ExprId) -> ExprId {
        self.a.let_tuple(&[x, y], d, rest)
    }

    /// `D_{Γ;Y}(e)`.
    fn d(&mut self, e: ExprId, y: Var) -> Result<ExprId, AdError> {
        with_stack(|| self.rule(e, y))
    }

    fn rule(&mut self, e: ExprId, y: Var) -> Result<ExprId, AdError> {
        match self.a[e] {
            Node::Const(c) => self.rule_const(c, y),
            Node::Var(x) => self.rule_var(e, x, y),
            Node::Let(x, e1, e2) if self.inert.contains(&x) => {
                self.rule_inert_let(e, &[x], e1, e2, y)
            }
            Node::Let(x, e1, e2) => self.rule_let(e, x, e1, e2, y),
            Node::LetTuple(xs, e1, e2) => {
                let xs = self.a.vars_of(xs).to_vec();
                if xs.iter().all(|x| self.inert.contains(x)) {
                    self.rule_inert_let(e, &xs, e1, e2, y)
                } else {
                    self.rule_let_tuple(e, &xs, e1, e2, y)
                }
            }
            Node::Tuple(l) => {
                let items = self.a.exprs(l).to_vec();
                self.rule_tuple(e, &items, y)
            }
            Node::Proj(i, e1) => self.rule_proj(i as usize, e1, y),
            Node::Op1(op, e1) => self.rule_op1(op, e1, y),
            Node::Op2(op, e1, e2) => self.rule_op2(op, e1, e2, y),
            Node::Map(f, e1) => self.rule_map(e, f, &[e1], y),
            Node::Map2(f, e1, e2) => self.rule_map(e, f, &[e1, e2], y),
            Node::Reduce(f, e1, e2) => self.rule_fold(e, f, e1, e2, y, FoldKind::Reduce),
            Node::Foldl(f, e1, e2) => self.rule_fold(e, f, e1, e2, y, FoldKind::Foldl),
            Node::Scanl(f, e1, e2) => self.rule_scan(e, f, e1, e2, y, true),
            Node::Scanr(f, e1, e2) => self.rule_scan(e, f, e1, e2, y, false),
            Node::Shift1L(e1) => self.rule_shift(e, e1, y, true),
            Node::Shift1R(e1) => self.rule_shift(e, e1, y, false),
            Node::Array(l) => {
                let items = self.a.exprs(l).to_vec();
                self.rule_array(e, &items, y)
            }
            Node::If(c, e2, e3) => self.rule_if(e, c, e2, e3, y),
            Node::Len(e1) | Node::ZerosLike(e1) | Node::OnesLike(e1) => {
                self.rule_constant_op(e, e1, y)
            }
            node => Err(unsupported(self.a, e, describe(node))),
        }
    }

    /// `<c, fun (x, z) -> Y(x)>`
    fn rule_const(&mut self, c: f64, y: Var) -> Result<ExprId, AdError> {
        let value = self.a.constant(c);
        let k = self.cont(&Type::Real, |m, dx, _z| Ok(m.call(y, &dx)))?;
        Ok(self.pair(value, k))
    }

    /// `<x, fun (x, z) -> Y(x +̂ [pos(x)]z)>`
    fn rule_var(&mut self, e: ExprId, x: Var, y: Var) -> Result<ExprId, AdError> {
        let Some(&p) = self.pos.get(&x) else {
            return Err(AdError::IllTyped {
                expr: e,
                span: self.a.span(e),
                message: format!("`{}` is not bound in the context", self.a.var_name(x)),
            });
        };
        let ty = type_of(self.a, e)?;
        let value = self.a.var(x);
        let k = self.cont(&ty, |m, mut dx, z| {
            dx[p] = add_hat(m.a, &ty, dx[p], z)?;
            Ok(m.call(y, &dx))
        })?;
        Ok(self.pair(value, k))
    }

    /// ```text
    /// let x, Y1 = D_{Γ;Y}(e1) in
    /// let y, Y2 = D_{Γ,x;Y1}(e2) in
    /// <y, fun (x, z) -> Y2(x, 0_A, z)>
    /// ```
    fn rule_let(
        &mut self,
        e: ExprId,
        x: Var,
        e1: ExprId,
        e2: ExprId,
        y: Var,
    ) -> Result<ExprId, AdError> {
        let tx = self.var_type(e, x)?;
        let t = type_of(self.a, e)?;
        let (y1, _) = self.cont_var(std::slice::from_ref(&tx))?;
        let d1 = self.d(e1, y)?;
        self.push(x);
        let (y2, k2) = self.cont_var(std::slice::from_ref(&t))?;
        let d2 = self.d(e2, y1);
        self.pop(1);
        let d2 = d2?;
        let v = self.value_var(k2, t.clone());
        let value = self.a.var(v);
        let k = self.cont(&t, |m, mut dx, z| {
            let w = m.a.var(x);
            dx.push(zero(m.a, &tx, w)?);
            dx.push(z);
            Ok(m.call(y2, &dx))
        })?;
        let result = self.pair(value, k);
        let inner = self.bind(v, y2, d2, result);
        Ok(self.bind(x, y1, d1, inner))
    }

    /// The free variables of `f` that derivatives flow through (see
    /// [`crate::elem::differentiable_free_vars`]; conditions have no adjoints), with their
    /// positions in Γ.
    fn captures(&self, e: ExprId, f: ExprId) -> Result<Vec<(Var, usize)>, AdError> {
        let mut out = Vec::new();
        for c in crate::elem::differentiable_free_vars(self.a, f) {
            if self.a.var_type(c) == Some(&Type::Bool) {
                continue;
            }
            match self.pos.get(&c) {
                Some(&p) => out.push((c, p)),
                None => {
                    return Err(AdError::IllTyped {
                        expr: e,
                        span: self.a.span(e),
                        message: format!("this uses `{}`, which is not bound", self.a.var_name(c)),
                    })
                }
            }
        }
        Ok(out)
    }

    /// `dx[p] +̂= contribution` for each variable of `vars` (with its position), binding
    /// a tuple-typed contribution that `+̂` would otherwise project (and so compute) once
    /// per component; the bindings are pushed to `lets`.
    fn accumulate(
        &mut self,
        at: ExprId,
        dx: &mut [ExprId],
        vars: &[(Var, usize)],
        contributions: Vec<ExprId>,
        lets: &mut Vec<(Var, ExprId)>,
    ) -> Result<(), AdError> {
        for (&(c, p), mut g) in vars.iter().zip(contributions) {
            let tc = self.var_type(at, c)?;
            if matches!(tc, Type::Tuple(_))
                && !is_atom(self.a, g)
                && !matches!(self.a[g], Node::Tuple(_))
            {
                let v = self.a.fresh_var("g", Some(tc.clone()));
                lets.push((v, g));
                g = self.a.var(v);
            }
            dx[p] = add_hat(self.a, &tc, dx[p], g)?;
        }
        Ok(())
    }

    fn var_type(&self, e: ExprId, x: Var) -> Result<Type, AdError> {
        self.a
            .var_type(x)
            .cloned()
            .ok_or_else(|| AdError::IllTyped {
                expr: e,
                span: self.a.span(e),
                message: format!("`{}` has no type", self.a.var_name(x)),
            })
    }

    /// `let (x1, ..., xk) = e1 in e2`: the `let` rule for a context extended by k variables.
    /// ```text
    /// let p, Y1 = D_{Γ;Y}(e1) in
    /// let (x1, ..., xk) = p in
    /// let Yp = fun (x, dx1, ..., dxk) -> Y1(x, (dx1, ..., dxk)) in
    /// let y, Y2 = D_{Γ,x1,...,xk;Yp}(e2) in
    /// <y, fun (x, z) -> Y2(x, 0_A1, ..., 0_Ak, z)>
    /// ```
    fn rule_let_tuple(
        &mut self,
        e: ExprId,
        xs: &[Var],
        e1: ExprId,
        e2: ExprId,
        y: Var,
    ) -> Result<ExprId, AdError> {
        let t1 = type_of(self.a, e1)?;
        let t = type_of(self.a, e)?;
        let txs = xs
            .iter()
            .map(|&x| self.var_type(e, x))
            .collect::<Result<Vec<_>, _>>()?;
        let (y1, k1) = self.cont_var(std::slice::from_ref(&t1))?;
        let d1 = self.d(e1, y)?;
        let p = self.value_var(k1, t1);
        // Yp: the continuation Y1 seen from the context Γ, x1, ..., xk.
        let yp = {
            let mut tys = types_of(self.a, &self.ctx)?;
            tys.extend(txs.iter().cloned());
            let k = self.names.next();
            self.a
                .fresh_var(&format!("Y{k}"), Some(Type::func(tys, self.rho.clone())))
        };
        let mut params = Vec::new();
        let ctx = self.ctx.clone();
        for &g in ctx.iter().chain(xs) {
            let ty = self.a.var_type(g).cloned();
            params.push(self.adjoint_var(g, ty));
        }
        let refs: Vec<ExprId> = params.iter().map(|&v| self.a.var(v)).collect();
        let (ctx_part, x_part) = refs.split_at(self.ctx.len());
        let mut args = ctx_part.to_vec();
        args.push(crate::build::tuple(self.a, x_part)?);
        let yp_body = self.call(y1, &args);
        let yp_lambda = self.a.lambda(&params, yp_body);

        for &x in xs {
            self.push(x);
        }
        let cv = self.cont_var(std::slice::from_ref(&t));
        let d2 = cv.and_then(|(y2, k2)| Ok((y2, k2, self.d(e2, yp)?)));
        self.pop(xs.len());
        let (y2, k2, d2) = d2?;
        let v = self.value_var(k2, t.clone());
        let value = self.a.var(v);
        let k = self.cont(&t, |m, mut dx, z| {
            for (&x, tx) in xs.iter().zip(&txs) {
                let w = m.a.var(x);
                dx.push(zero(m.a, tx, w)?);
            }
            dx.push(z);
            Ok(m.call(y2, &dx))
        })?;
        let result = self.pair(value, k);
        let body = self.bind(v, y2, d2, result);
        let body = self.a.let_(yp, yp_lambda, body);
        let pv = self.a.var(p);
        let body = self.a.let_tuple(xs, pv, body);
        Ok(self.bind(p, y1, d1, body))
    }

    /// The operands of a construct, differentiated left to right, each in the context
    /// extended by the values before it:
    /// `let x1, Y1 = D_{Γ;Y}(e1) in let x2, Y2 = D_{Γ,x1;Y1}(e2) in ...`.
    fn operands(&mut self, es: &[ExprId], y: Var) -> Result<Operands, AdError> {
        let mut ops = Operands {
            steps: Vec::with_capacity(es.len()),
            last: y,
        };
        let outcome = self.operands_into(es, &mut ops);
        self.pop(ops.steps.len());
        outcome.map(|()| ops)
    }

    fn operands_into(&mut self, es: &[ExprId], ops: &mut Operands) -> Result<(), AdError> {
        for &e in es {
            let t = type_of(self.a, e)?;
            let (yi, ki) = self.cont_var(std::slice::from_ref(&t))?;
            let di = self.d(e, ops.last)?;
            let vi = self.value_var(ki, t);
            ops.steps.push((vi, yi, di));
            self.push(vi);
            ops.last = yi;
        }
        Ok(())
    }

    /// `let x1, Y1 = D(e1) in ... let xk, Yk = D(ek) in result`.
    fn bind_operands(&mut self, ops: Operands, result: ExprId) -> ExprId {
        ops.steps
            .into_iter()
            .rev()
            .fold(result, |acc, (v, k, d)| self.bind(v, k, d, acc))
    }

    /// The `pair` rule, for k-tuples:
    /// ```text
    /// let y1, Y1 = D_{Γ;Y}(e1) in
    /// let y2, Y2 = D_{Γ,y1;Y1}(e2) in ...
    /// <(y1, ..., yk), fun (x, z) -> Yk(x, π1 z, ..., πk z)>
    /// ```
    fn rule_tuple(&mut self, e: ExprId, items: &[ExprId], y: Var) -> Result<ExprId, AdError> {
        let t = type_of(self.a, e)?;
        let ops = self.operands(items, y)?;
        let values: Vec<ExprId> = ops.steps.iter().map(|s| self.a.var(s.0)).collect();
        let value = crate::build::tuple(self.a, &values)?;
        let last = ops.last;
        let k = self.cont(&t, |m, mut dx, z| {
            for i in 0..items.len() {
                dx.push(component(m.a, z, i));
            }
            Ok(m.call(last, &dx))
        })?;
        let result = self.pair(value, k);
        Ok(self.bind_operands(ops, result))
    }

    /// `let x, Y1 = D(e) in <πi x, fun (x, z) -> Y1(x, (0, ..., z, ..., 0))>`
    fn rule_proj(&mut self, i: usize, e1: ExprId, y: Var) -> Result<ExprId, AdError> {
        let t1 = type_of(self.a, e1)?;
        let parts = match &t1 {
            Type::Tuple(parts) if i < parts.len() => parts.to_vec(),
            _ => {
                return Err(AdError::IllTyped {
                    expr: e1,
                    span: self.a.span(e1),
                    message: format!("projection {i} of a value of type `{t1}`"),
                })
            }
        };
        let ops = self.operands(&[e1], y)?;
        let (ve, y1) = (self.a.var(ops.value(0)), ops.last);
        let value = self.a.proj(i as u32, ve);
        let k = self.cont(&parts[i], |m, mut dx, z| {
            let mut one_hot = Vec::with_capacity(parts.len());
            for (j, tj) in parts.iter().enumerate() {
                if j == i {
                    one_hot.push(z);
                } else {
                    let w = m.a.proj(j as u32, ve);
                    one_hot.push(zero(m.a, tj, w)?);
                }
            }
            dx.push(crate::build::tuple(m.a, &one_hot)?);
            Ok(m.call(y1, &dx))
        })?;
        let result = self.pair(value, k);
        Ok(self.bind_operands(ops, result))
    }

    /// `let x, Y1 = D(e) in <op1 x, fun (x, z) -> Y1(x, ∂op1(x) * z)>`
    fn rule_op1(&mut self, op: unfad_syntax::UnOp, e1: ExprId, y: Var) -> Result<ExprId, AdError> {
        let ops = self.operands(&[e1], y)?;
        let (ve, y1) = (self.a.var(ops.value(0)), ops.last);
        let value = self.a.op1(op, ve);
        let k = self.cont(&Type::Real, |m, mut dx, z| {
            let d = unary_partial(m.a, op, ve);
            dx.push(crate::build::mul(m.a, d, z));
            Ok(m.call(y1, &dx))
        })?;
        let result = self.pair(value, k);
        Ok(self.bind_operands(ops, result))
    }

    /// ```text
    /// let x1, Y1 = D_{Γ;Y}(e1) in
    /// let x2, Y2 = D_{Γ,x1;Y1}(e2) in
    /// <x1 op2 x2, fun (x, z) -> Y2(x, ∂1op2(x1, x2) * z, ∂2op2(x1, x2) * z)>
    /// ```
    fn rule_op2(
        &mut self,
        op: unfad_syntax::BinOp,
        e1: ExprId,
        e2: ExprId,
        y: Var,
    ) -> Result<ExprId, AdError> {
        let ops = self.operands(&[e1, e2], y)?;
        let (x1, x2, y2) = (self.a.var(ops.value(0)), self.a.var(ops.value(1)), ops.last);
        let value = self.a.op2(op, x1, x2);
        let k = self.cont(&Type::Real, |m, mut dx, z| {
            let (p1, p2) = binary_partials(m.a, op, x1, x2);
            dx.push(crate::build::mul(m.a, p1, z));
            dx.push(crate::build::mul(m.a, p2, z));
            Ok(m.call(y2, &dx))
        })?;
        let result = self.pair(value, k);
        Ok(self.bind_operands(ops, result))
    }

    /// `len`, `zeros_like`, `ones_like`: constant in their operand, which only gives a
    /// shape and is not differentiated (its variables need not be in Γ):
    /// `<op e, fun (x, z) -> Y(x)>`
    fn rule_constant_op(&mut self, e: ExprId, e1: ExprId, y: Var) -> Result<ExprId, AdError> {
        let t = type_of(self.a, e)?;
        let operand = self.a.copy_fresh(e1);
        let node = match self.a[e] {
            Node::Len(_) => Node::Len(operand),
            Node::ZerosLike(_) => Node::ZerosLike(operand),
            _ => Node::OnesLike(operand),
        };
        let value = self.a.add(node);
        let k = self.cont(&t, |m, dx, _z| Ok(m.call(y, &dx)))?;
        Ok(self.pair(value, k))
    }
}

/// The operands of a construct after [`Macro::operands`]: per operand, the variable of
/// its value, its continuation and its pair `D(e_i)`; and the last continuation.
struct Operands {
    steps: Vec<(Var, Var, ExprId)>,
    last: Var,
}

impl Operands {
    fn value(&self, i: usize) -> Var {
        self.steps[i].0
    }
}
