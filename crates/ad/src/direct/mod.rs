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
//!
//! **Weakened continuations** (the route `compile_grad` takes, [`crate::reverse_weakened`]).
//! As printed, every continuation takes an adjoint for every variable of Γ, so the term is
//! O(nodes × |Γ|): quadratic in a straight-line program. With `Run::weakened`, the
//! continuation of a subterm `e` takes adjoints only for the variables of Γ that are
//! *live after* `e` (read by what remains of the program after `e`: the rest of the
//! enclosing `let` bodies and the operands still to come), its *domain*; the continuation
//! it calls, `Y`, has the domain of the variables live *before* `e` (those after, and
//! `e`'s free variables). A variable that `e` does not touch passes through unchanged; one
//! that is live before `e` but not after starts at `0` there (the paper's `0_A` of the
//! `let` rule, moved to where the variable's last use is met; the sums are the paper's,
//! in the same order, from the same `0`). This is the paper's rule
//! with a weakening of each continuation's context, so the term means the same; its size
//! is the sum of the live sets, linear for a straight-line program. The whole term's
//! continuation takes no adjoint of Γ at all: every caller starts from `0_Γ`
//! ([`Reverse::pair`]), so the top-level adjoints of Γ are ignored and `Y` receives the
//! sums. Without the flag every domain is the whole of Γ and the terms are the paper's.

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
            live: Vec::new(),
            domains: HashMap::default(),
        };
        for &g in gamma {
            m.push(g);
        }
        m.domains.insert(y, gamma.to_vec());
        if !self.names.weakened {
            m.live = gamma.to_vec();
            return m.d(e, y);
        }
        // Weakened: the term's own continuation takes no adjoint of Γ (the callers pass
        // `0_Γ`): `let (v, K) = D(e) in <v, fun (dΓ, z) -> K(z)>`.
        let t = type_of(m.a, e)?;
        let (k, n) = m.cont_var(&[], std::slice::from_ref(&t))?;
        let d = m.d(e, y)?;
        let v = m.value_var(n, t.clone());
        m.live = gamma.to_vec();
        let inner = m.a.var(k);
        let cont = m.cont(&t, |m, _dx, z| Ok(m.a.app(inner, &[z])))?;
        let value = m.a.var(v);
        let pair = m.pair(value, cont);
        Ok(m.bind(v, k, d, pair))
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
    /// The domain of the continuation of the subterm being differentiated: the variables
    /// of Γ live after it, in the order of Γ (all of Γ unless weakened).
    live: Vec<Var>,
    /// The domain of each continuation variable: the variables of Γ whose adjoints it
    /// takes first, in order (its other arguments, such as the adjoint `z` of a value,
    /// are passed explicitly).
    domains: HashMap<Var, Vec<Var>>,
}

/// The adjoints a continuation holds while it adds a subterm's contributions: one term
/// per variable, those of its domain to start with.
pub(crate) struct Adjoints {
    vars: Vec<Var>,
    terms: Vec<ExprId>,
    index: HashMap<Var, usize>,
}

impl Adjoints {
    fn new(vars: Vec<Var>, terms: Vec<ExprId>) -> Adjoints {
        let index = vars.iter().enumerate().map(|(i, &v)| (v, i)).collect();
        Adjoints { vars, terms, index }
    }

    /// The adjoint of `v` (absent: zero).
    fn get(&self, v: Var) -> Option<ExprId> {
        self.index.get(&v).map(|&i| self.terms[i])
    }

    /// The adjoint of a variable that has none yet (an operand's value).
    fn set(&mut self, v: Var, term: ExprId) {
        match self.index.get(&v) {
            Some(&i) => self.terms[i] = term,
            None => {
                self.index.insert(v, self.vars.len());
                self.vars.push(v);
                self.terms.push(term);
            }
        }
    }

    /// `dv +̂= g`. When `v` has no adjoint yet (it is not live after), `dv = 0 +̂ g`: the
    /// paper's sum from its `0_A`, so that both routes compute the same numbers, the
    /// sign of a zero included (`0 + -0` is `0`).
    fn add(&mut self, a: &mut Arena, v: Var, ty: &Type, g: ExprId) -> Result<(), AdError> {
        let d = match self.get(v) {
            Some(d) => d,
            None => {
                let w = a.var(v);
                zero(a, ty, w)?
            }
        };
        let sum = add_hat(a, ty, d, g)?;
        self.set(v, sum);
        Ok(())
    }

    /// `dv = scatter_add(dv, [at], [g])`: `g` added into the array adjoint of `v` (of type
    /// `ty`) at the one position `at` (an int, or a tuple of ints for nested arrays).
    fn scatter(
        &mut self,
        a: &mut Arena,
        v: Var,
        ty: &Type,
        at: ExprId,
        g: ExprId,
    ) -> Result<(), AdError> {
        let d = match self.get(v) {
            Some(d) => d,
            None => {
                let w = a.var(v);
                zero(a, ty, w)?
            }
        };
        let sum = scatter_one(a, d, at, g);
        self.set(v, sum);
        Ok(())
    }
}

/// `scatter_add(target, [at], [g])`: `g` added at the one position `at`.
pub(crate) fn scatter_one(a: &mut Arena, target: ExprId, at: ExprId, g: ExprId) -> ExprId {
    let positions = a.array(&[at]);
    let values = a.array(&[g]);
    a.add(Node::ScatterAdd(target, positions, values))
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

    /// A fresh continuation variable `Y_k : Δ × extra → ρ` with the domain `Δ = domain`
    /// (a part of Γ, in order), and `k`.
    fn cont_var(&mut self, domain: &[Var], extra: &[Type]) -> Result<(Var, usize), AdError> {
        let mut params = types_of(self.a, domain)?;
        params.extend_from_slice(extra);
        let k = self.names.next();
        let y = self
            .a
            .fresh_var(&format!("Y{k}"), Some(Type::func(params, self.rho.clone())));
        self.domains.insert(y, domain.to_vec());
        Ok((y, k))
    }

    /// The variables of Γ among `vars`, in the order of Γ: the domain of a continuation
    /// whose live variables are `vars`. All of Γ unless the run is weakened.
    fn live_set(&self, vars: impl IntoIterator<Item = Var>) -> Vec<Var> {
        if !self.names.weakened {
            return self.ctx.clone();
        }
        let mut out: Vec<(usize, Var)> = vars
            .into_iter()
            .filter_map(|v| self.pos.get(&v).map(|&p| (p, v)))
            .collect();
        out.sort_unstable();
        out.dedup();
        out.into_iter().map(|(_, v)| v).collect()
    }

    /// The free variables of `e` that derivatives flow through (weakened runs only: the
    /// paper's domains are all of Γ).
    fn free_vars(&mut self, e: ExprId) -> std::rc::Rc<[Var]> {
        if !self.names.weakened {
            return std::rc::Rc::from([]);
        }
        self.names.free.borrow_mut().of(self.a, e)
    }

    /// `D(e)` for a continuation whose domain is `live`.
    fn d_live(&mut self, e: ExprId, y: Var, live: Vec<Var>) -> Result<ExprId, AdError> {
        let outer = std::mem::replace(&mut self.live, live);
        let d = self.d(e, y);
        self.live = outer;
        d
    }

    fn value_var(&mut self, k: usize, ty: Type) -> Var {
        self.a.fresh_var(&format!("v{k}"), Some(ty))
    }

    /// `fun (dx1, ..., dxn, z) -> body(dx, z)` over the current domain (the variables
    /// live after the subterm); `z : z_ty`.
    fn cont(
        &mut self,
        z_ty: &Type,
        body: impl FnOnce(&mut Self, Adjoints, ExprId) -> Result<ExprId, AdError>,
    ) -> Result<ExprId, AdError> {
        let domain = self.live.clone();
        let tys = types_of(self.a, &domain)?;
        let mut params: Vec<Var> = Vec::with_capacity(domain.len() + 1);
        for (i, t) in tys.into_iter().enumerate() {
            params.push(self.adjoint_var(domain[i], Some(t)));
        }
        let z = self.a.fresh_var("z", Some(z_ty.clone()));
        let dx: Vec<ExprId> = params.iter().map(|&p| self.a.var(p)).collect();
        let ez = self.a.var(z);
        let b = body(self, Adjoints::new(domain, dx), ez)?;
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

    /// `Y(dx, extra)`: the adjoints of `Y`'s domain from `dx` (a variable without one
    /// gets `0`), then `extra`. An adjoint outside the domain would be lost: an error.
    fn call(&mut self, y: Var, dx: Adjoints, extra: &[ExprId]) -> Result<ExprId, AdError> {
        let domain = self.domains.get(&y).cloned().unwrap_or_default();
        let mut args = Vec::with_capacity(domain.len() + extra.len());
        let mut used = 0;
        for v in domain {
            match dx.get(v) {
                Some(d) => {
                    used += 1;
                    args.push(d);
                }
                None => {
                    let ty = self.a.var_type(v).cloned().ok_or_else(|| {
                        AdError::Internal(format!("`{}` has no type", self.a.var_name(v)))
                    })?;
                    let w = self.a.var(v);
                    args.push(zero(self.a, &ty, w)?);
                }
            }
        }
        if used != dx.vars.len() {
            return Err(AdError::Internal(format!(
                "a continuation drops the adjoint of `{}`",
                dx.vars
                    .iter()
                    .map(|&v| self.a.var_name(v).to_string())
                    .collect::<Vec<_>>()
                    .join("`, `")
            )));
        }
        args.extend_from_slice(extra);
        let f = self.a.var(y);
        Ok(self.a.app(f, &args))
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
        if crate::elem::carries_no_derivative(self.a, e) {
            return self.rule_constant(e, y);
        }
        match self.a[e] {
            Node::Op1(unfad_syntax::UnOp::ToReal, _) => self.rule_constant(e, y),
            Node::Index(..) => self.rule_index(e, y),
            Node::ScatterAdd(z, p, v) => self.rule_scatter_add(e, [z, p, v], y),
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
        let k = self.cont(&Type::Real, |m, dx, _z| m.call(y, dx, &[]))?;
        Ok(self.pair(value, k))
    }

    /// `<x, fun (x, z) -> Y(x +̂ [pos(x)]z)>`
    fn rule_var(&mut self, e: ExprId, x: Var, y: Var) -> Result<ExprId, AdError> {
        if !self.pos.contains_key(&x) {
            return Err(AdError::IllTyped {
                expr: e,
                span: self.a.span(e),
                message: format!("`{}` is not bound in the context", self.a.var_name(x)),
            });
        }
        let ty = type_of(self.a, e)?;
        let value = self.a.var(x);
        let k = self.cont(&ty, |m, mut dx, z| {
            dx.add(m.a, x, &ty, z)?;
            m.call(y, dx, &[])
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
        // Live after e1: those after the `let`, and those e2 reads (but x).
        let rest = self.free_vars(e2);
        let live1 = self.live_set(self.live.iter().chain(rest.iter()).copied());
        let (y1, _) = self.cont_var(&live1, std::slice::from_ref(&tx))?;
        let d1 = self.d_live(e1, y, live1)?;
        // Seen from e2, Y1 takes the adjoint of x with those of its domain.
        if let Some(d) = self.domains.get_mut(&y1) {
            d.push(x);
        }
        self.push(x);
        let live2 = self.live_set(self.live.clone());
        let cv = self.cont_var(&live2, std::slice::from_ref(&t));
        let d2 = cv.and_then(|(y2, k2)| Ok((y2, k2, self.d_live(e2, y1, live2)?)));
        self.pop(1);
        let (y2, k2, d2) = d2?;
        let v = self.value_var(k2, t.clone());
        let value = self.a.var(v);
        // Y2 also takes x's adjoint unless weakened: `0_A`, from `call`.
        let k = self.cont(&t, |m, dx, z| m.call(y2, dx, &[z]))?;
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
        dx: &mut Adjoints,
        vars: &[(Var, usize)],
        contributions: Vec<ExprId>,
        lets: &mut Vec<(Var, ExprId)>,
    ) -> Result<(), AdError> {
        for (&(c, _), mut g) in vars.iter().zip(contributions) {
            let tc = self.var_type(at, c)?;
            if matches!(tc, Type::Tuple(_))
                && !is_atom(self.a, g)
                && !matches!(self.a[g], Node::Tuple(_))
            {
                let v = self.a.fresh_var("g", Some(tc.clone()));
                lets.push((v, g));
                g = self.a.var(v);
            }
            dx.add(self.a, c, &tc, g)?;
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
        // Live after e1: those after the `let`, and those e2 reads (but the xs).
        let rest = self.free_vars(e2);
        let live1 = self.live_set(self.live.iter().chain(rest.iter()).copied());
        let (y1, k1) = self.cont_var(&live1, std::slice::from_ref(&t1))?;
        let d1 = self.d_live(e1, y, live1.clone())?;
        let p = self.value_var(k1, t1);
        // Yp: the continuation Y1 seen from the context Γ, x1, ..., xk.
        let yp = {
            let mut tys = types_of(self.a, &live1)?;
            tys.extend(txs.iter().cloned());
            let k = self.names.next();
            self.a
                .fresh_var(&format!("Y{k}"), Some(Type::func(tys, self.rho.clone())))
        };
        let mut params = Vec::new();
        for &g in live1.iter().chain(xs) {
            let ty = self.a.var_type(g).cloned();
            params.push(self.adjoint_var(g, ty));
        }
        let refs: Vec<ExprId> = params.iter().map(|&v| self.a.var(v)).collect();
        let (ctx_part, x_part) = refs.split_at(live1.len());
        let mut args = ctx_part.to_vec();
        args.push(crate::build::tuple(self.a, x_part)?);
        let f1 = self.a.var(y1);
        let yp_body = self.a.app(f1, &args);
        let yp_lambda = self.a.lambda(&params, yp_body);
        let mut yp_domain = live1;
        yp_domain.extend_from_slice(xs);
        self.domains.insert(yp, yp_domain);

        for &x in xs {
            self.push(x);
        }
        let live2 = self.live_set(self.live.clone());
        let cv = self.cont_var(&live2, std::slice::from_ref(&t));
        let d2 = cv.and_then(|(y2, k2)| Ok((y2, k2, self.d_live(e2, yp, live2)?)));
        self.pop(xs.len());
        let (y2, k2, d2) = d2?;
        let v = self.value_var(k2, t.clone());
        let value = self.a.var(v);
        // Y2 also takes the adjoints of the xs unless weakened: `0_Ai`, from `call`.
        let k = self.cont(&t, |m, dx, z| m.call(y2, dx, &[z]))?;
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
    /// `also_live` are the variables of Γ whose adjoints the construct's continuation
    /// adds to besides the operands' (the captures of a function argument).
    fn operands(&mut self, es: &[ExprId], y: Var, also_live: &[Var]) -> Result<Operands, AdError> {
        let mut ops = Operands {
            steps: Vec::with_capacity(es.len()),
            last: y,
        };
        let outcome = self.operands_into(es, also_live, &mut ops);
        self.pop(ops.steps.len());
        outcome.map(|()| ops)
    }

    fn operands_into(
        &mut self,
        es: &[ExprId],
        also_live: &[Var],
        ops: &mut Operands,
    ) -> Result<(), AdError> {
        // The free variables of the operands after each one.
        let mut after: Vec<std::rc::Rc<[Var]>> = Vec::with_capacity(es.len());
        for &e in es {
            after.push(self.free_vars(e));
        }
        for (i, &e) in es.iter().enumerate() {
            let t = type_of(self.a, e)?;
            // Live after operand i: those after the construct, the values before it and
            // its own (read by the construct), the captures, the later operands' reads.
            let live = {
                let later = after[i + 1..].iter().flat_map(|s| s.iter().copied());
                let values = ops.steps.iter().map(|s| s.0);
                let outer = self.live.iter().chain(also_live).copied();
                self.live_set(outer.chain(values).chain(later))
            };
            let (yi, ki) = self.cont_var(&live, std::slice::from_ref(&t))?;
            let di = self.d_live(e, ops.last, live)?;
            let vi = self.value_var(ki, t);
            ops.steps.push((vi, yi, di));
            self.push(vi);
            // Seen from the next operand (or the construct), Yi takes vi's adjoint too.
            if let Some(d) = self.domains.get_mut(&yi) {
                d.push(vi);
            }
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
        let ops = self.operands(items, y, &[])?;
        let values: Vec<ExprId> = ops.steps.iter().map(|s| self.a.var(s.0)).collect();
        let value = crate::build::tuple(self.a, &values)?;
        let last = ops.last;
        let k = self.cont(&t, |m, mut dx, z| {
            for (i, s) in ops.steps.iter().enumerate() {
                dx.set(s.0, component(m.a, z, i));
            }
            m.call(last, dx, &[])
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
        let ops = self.operands(&[e1], y, &[])?;
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
            dx.set(ops.value(0), crate::build::tuple(m.a, &one_hot)?);
            m.call(y1, dx, &[])
        })?;
        let result = self.pair(value, k);
        Ok(self.bind_operands(ops, result))
    }

    /// `let x, Y1 = D(e) in <op1 x, fun (x, z) -> Y1(x, ∂op1(x) * z)>`
    fn rule_op1(&mut self, op: unfad_syntax::UnOp, e1: ExprId, y: Var) -> Result<ExprId, AdError> {
        let ops = self.operands(&[e1], y, &[])?;
        let (ve, y1) = (self.a.var(ops.value(0)), ops.last);
        let value = self.a.op1(op, ve);
        let k = self.cont(&Type::Real, |m, mut dx, z| {
            let d = unary_partial(m.a, op, ve);
            dx.set(ops.value(0), crate::build::mul(m.a, d, z));
            m.call(y1, dx, &[])
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
        let ops = self.operands(&[e1, e2], y, &[])?;
        let (x1, x2, y2) = (self.a.var(ops.value(0)), self.a.var(ops.value(1)), ops.last);
        let value = self.a.op2(op, x1, x2);
        let k = self.cont(&Type::Real, |m, mut dx, z| {
            if op == unfad_syntax::BinOp::Div {
                // `∂1 = 1 / x2` and `∂2 = -x1 / (x2 x2)` times `z`, as `t = z / x2` and
                // `-(q t)` with `q = x1 / x2`, the quotient (which sharing finds in the
                // primal): one division per quotient in the gradient where there were
                // two, and no square of `x2` to overflow or underflow where the quotient
                // does not.
                let t = crate::build::div(m.a, z, x2);
                let q = m.a.op2(op, x1, x2);
                let qt = crate::build::mul(m.a, q, t);
                let dy = m.a.op1(unfad_syntax::UnOp::Neg, qt);
                dx.set(ops.value(0), t);
                dx.set(ops.value(1), dy);
                return m.call(y2, dx, &[]);
            }
            let (p1, p2) = binary_partials(m.a, op, x1, x2);
            dx.set(ops.value(0), crate::build::mul(m.a, p1, z));
            dx.set(ops.value(1), crate::build::mul(m.a, p2, z));
            m.call(y2, dx, &[])
        })?;
        let result = self.pair(value, k);
        Ok(self.bind_operands(ops, result))
    }

    /// A term no derivative flows through (a value without reals, `real(i)`): its value,
    /// computed as written, and a continuation that adds nothing:
    /// `<e, fun (x, z) -> Y(x)>`
    fn rule_constant(&mut self, e: ExprId, y: Var) -> Result<ExprId, AdError> {
        let t = type_of(self.a, e)?;
        let value = self.a.copy_fresh(e);
        let k = self.cont(&t, |m, dx, _z| m.call(y, dx, &[]))?;
        Ok(self.pair(value, k))
    }

    /// Indexing, `e0[i1]...[id]` (a chain of `d` indices into one array term `e0`): the
    /// adjoint is added at that one element, `scatter_add(dA, [(i1, ..., id)], [z])`,
    /// never as an array of zeros with one element set. When `e0` is a variable `A`, its
    /// adjoint is updated in place:
    /// ```text
    /// let i1 = e1 in ... let id = ed in
    /// <A[i1]...[id], fun (x, z) -> Y(x[A := scatter_add(dA, [(i1, ..., id)], [z])])>
    /// ```
    /// otherwise `e0` is differentiated as an operand whose adjoint is
    /// `scatter_add(zeros_like(a), [(i1, ..., id)], [z])`. The indices are ints: they are
    /// computed, not differentiated.
    fn rule_index(&mut self, e: ExprId, y: Var) -> Result<ExprId, AdError> {
        let t = type_of(self.a, e)?;
        let mut indices = Vec::new();
        let mut spans = Vec::new();
        let mut base = e;
        while let Node::Index(inner, i) = self.a[base] {
            indices.push(i);
            spans.push(self.a.span(base));
            base = inner;
        }
        indices.reverse();
        spans.reverse();
        // Each index's own type: `int`, or `real` for a whole number by construction
        // (a literal, `len(A)`), which stands where an int is needed.
        let index_vars: Vec<Var> = indices
            .iter()
            .map(|&i| {
                let ty = self.a.type_of(i).cloned().unwrap_or(Type::Int);
                self.a.fresh_var("i", Some(ty))
            })
            .collect();
        let index_terms: Vec<ExprId> = index_vars.iter().map(|&v| self.a.var(v)).collect();
        let position = |a: &mut Arena| {
            if index_terms.len() == 1 {
                Ok(index_terms[0])
            } else {
                crate::build::tuple(a, &index_terms)
            }
        };
        // The reads keep the source's positions (a read out of bounds says where).
        let read = |a: &mut Arena, mut arr: ExprId| {
            for (&i, &span) in index_terms.iter().zip(&spans) {
                arr = a.add_at(Node::Index(arr, i), span);
            }
            arr
        };
        let result = match self.a[base] {
            Node::Var(x) if self.pos.contains_key(&x) => {
                let tx = type_of(self.a, base)?;
                let xv = self.a.var(x);
                let value = read(self.a, xv);
                let k = self.cont(&t, |m, mut dx, z| {
                    let at = position(m.a)?;
                    dx.scatter(m.a, x, &tx, at, z)?;
                    m.call(y, dx, &[])
                })?;
                self.pair(value, k)
            }
            _ => {
                let ops = self.operands(&[base], y, &[])?;
                let (arr, y1) = (self.a.var(ops.value(0)), ops.last);
                let value = read(self.a, arr);
                let k = self.cont(&t, |m, mut dx, z| {
                    let zeros = crate::build::zeros_like(m.a, arr);
                    let at = position(m.a)?;
                    let g = scatter_one(m.a, zeros, at, z);
                    dx.set(ops.value(0), g);
                    m.call(y1, dx, &[])
                })?;
                let result = self.pair(value, k);
                self.bind_operands(ops, result)
            }
        };
        // The indices are bound around the pair, outermost first.
        let mut out = result;
        for (&v, &i) in index_vars.iter().zip(&indices).rev() {
            let value = self.a.copy_fresh(i);
            out = self.a.let_(v, value, out);
        }
        Ok(out)
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
        let k = self.cont(&t, |m, dx, _z| m.call(y, dx, &[]))?;
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
