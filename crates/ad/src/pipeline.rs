//! What both pipelines share: the pair `(value, continuation)` a pipeline makes of a term,
//! and the ways the public API uses it (the gradient `∇`, and value plus gradient).

use unfad_syntax::{Arena, ExprId, Func, Type, Var};

use crate::build::Run;
use crate::error::AdError;
use crate::ground;

/// A reverse-mode pipeline: the direct macro, or `UNF^-1 ∘ D_ρ ∘ UNF`.
pub trait Reverse {
    /// The pair `<value, continuation>` of type `A × (Γ × A → ρ)` for the term `e : A` in
    /// the context `gamma`, with the continuation `y : Γ → ρ` (a variable, used once):
    /// the paper's `D^ρ_{Γ;Y}(e)`, or `UNF^-1(D_ρ(UNF(e)))`.
    fn pair(
        &mut self,
        a: &mut Arena,
        gamma: &[Var],
        rho: &Type,
        y: Var,
        e: ExprId,
    ) -> Result<ExprId, AdError>;

    /// The name hints of this run.
    fn names(&self) -> &Run;

    /// `∇`: the gradient of the real term `e` with respect to the context variables
    /// `gamma[wrt[i]]`, as the paper's `π2 D^ρ_{Γ;Y}(e)(0_Γ, 1)` with `Y` the projection
    /// on `wrt`. Its free variables are among `gamma`; `e`'s binders are used.
    fn gradient_term(
        &mut self,
        a: &mut Arena,
        gamma: &[Var],
        wrt: &[usize],
        e: ExprId,
    ) -> Result<ExprId, AdError> {
        let one = a.constant(1.0);
        self.vjp_term(a, gamma, wrt, e, one)
    }

    /// `J^T e · s`: the adjoints of the context variables `gamma[wrt[i]]` for the adjoint
    /// `seed` of `e`'s value, `π2 D^ρ_{Γ;Y}(e)(0_Γ, s)`. This is the paper's `∇Γ(e) ·̂ s`
    /// (its `hat-*`) without forming the Jacobian: one reverse pass, whatever `e`'s type.
    /// `seed` (of `e`'s type) is used once.
    fn vjp_term(
        &mut self,
        a: &mut Arena,
        gamma: &[Var],
        wrt: &[usize],
        e: ExprId,
        seed: ExprId,
    ) -> Result<ExprId, AdError> {
        let (y, proj, rho) = projection(a, self.names(), gamma, wrt)?;
        let pair = self.pair(a, gamma, &rho, y, e)?;
        let back = a.proj(1, pair);
        let mut args = zero_adjoints(a, gamma)?;
        args.push(seed);
        let call = a.app(back, &args);
        Ok(a.let_(y, proj, call))
    }
}

/// The types of the variables `vs` (all typed: an untyped one is a bug of the caller).
pub(crate) fn types_of(a: &Arena, vs: &[Var]) -> Result<Vec<Type>, AdError> {
    vs.iter()
        .map(|&v| {
            a.var_type(v).cloned().ok_or_else(|| {
                AdError::Internal(format!("the variable `{}` has no type", a.var_name(v)))
            })
        })
        .collect()
}

/// The hint for the adjoint of variable `v`: `d` and its name.
pub(crate) fn adjoint_name(a: &Arena, v: Var) -> String {
    format!("d{}", a.var_name(v))
}

/// The initial continuation `Y = fun (dx1, ..., dxn) -> (dx_wrt1, ..., dx_wrtk)` (the
/// paper's projection for `ρ ⊂ Γ`; `Id_Γ` when `wrt` is everything), its variable, and ρ.
pub(crate) fn projection(
    a: &mut Arena,
    names: &Run,
    gamma: &[Var],
    wrt: &[usize],
) -> Result<(Var, ExprId, Type), AdError> {
    let tys = types_of(a, gamma)?;
    let params: Vec<Var> = gamma
        .iter()
        .zip(&tys)
        .map(|(&g, t)| {
            let n = adjoint_name(a, g);
            a.fresh_var(&n, Some(t.clone()))
        })
        .collect();
    let mut picked = Vec::with_capacity(wrt.len());
    let mut rho = Vec::with_capacity(wrt.len());
    for &i in wrt {
        let Some(&p) = params.get(i) else {
            return Err(AdError::Internal(format!("no context variable {i}")));
        };
        picked.push(a.var(p));
        rho.push(tys[i].clone());
    }
    if picked.is_empty() {
        return Err(AdError::Request(
            "there is nothing to differentiate against: name at least one parameter".into(),
        ));
    }
    let body = a.tuple(&picked);
    let lam = a.lambda(&params, body);
    let rho = Type::product(rho);
    let y = a.fresh_var(
        &format!("Y{}", names.next()),
        Some(Type::func(tys, rho.clone())),
    );
    Ok((y, lam, rho))
}

/// `0_Γ`: the zero adjoint of every context variable.
fn zero_adjoints(a: &mut Arena, gamma: &[Var]) -> Result<Vec<ExprId>, AdError> {
    let tys = types_of(a, gamma)?;
    let mut args = Vec::with_capacity(gamma.len() + 1);
    for (&g, t) in gamma.iter().zip(&tys) {
        let w = a.var(g);
        args.push(ground::zero(a, t, w)?);
    }
    Ok(args)
}

/// `(0_Γ, 1)`: the zero adjoint of every context variable, and the seed 1 for the result.
fn initial_adjoints(a: &mut Arena, gamma: &[Var]) -> Result<Vec<ExprId>, AdError> {
    let mut args = zero_adjoints(a, gamma)?;
    args.push(a.constant(1.0));
    Ok(args)
}

/// Check the request: a real-valued function, and distinct, existing parameters.
fn check_request(a: &Arena, func: &Func, wrt: &[usize]) -> Result<(), AdError> {
    let ret = a.type_of(func.body).unwrap_or(&func.ret);
    if *ret != Type::Real {
        return Err(AdError::Request(format!(
            "`{}` returns `{ret}`; reverse mode computes gradients of functions returning `real`",
            func.name
        )));
    }
    if wrt.is_empty() {
        return Err(AdError::Request(
            "there is nothing to differentiate against: name at least one parameter".into(),
        ));
    }
    for (k, &i) in wrt.iter().enumerate() {
        if i >= func.params.len() {
            return Err(AdError::Request(format!(
                "`{}` has {} parameter(s); there is no parameter {i} to differentiate against",
                func.name,
                func.params.len()
            )));
        }
        if wrt[..k].contains(&i) {
            let name = a.var_name(func.params[i]);
            return Err(AdError::Request(format!(
                "parameter `{name}` is named twice in the parameters to differentiate against"
            )));
        }
    }
    for &p in &func.params {
        match a.var_type(p) {
            Some(t) if t.is_ground() => {}
            Some(t) => {
                return Err(AdError::Request(format!(
                    "parameter `{}` has the non-ground type `{t}`",
                    a.var_name(p)
                )))
            }
            None => {
                return Err(AdError::Request(format!(
                    "parameter `{}` has no type",
                    a.var_name(p)
                )))
            }
        }
    }
    Ok(())
}

/// Record the types of the function's body if the caller has not (a no-op otherwise).
fn ensure_typed(a: &mut Arena, func: &Func) -> Result<(), AdError> {
    crate::elem::retype(a, func.body).map(|_| ())
}

/// `∇`: the body returns the gradient tuple `π2 D(e)(0_Γ, 1)`.
pub(crate) fn gradient_with(
    rev: &mut dyn Reverse,
    a: &mut Arena,
    func: &Func,
    wrt: &[usize],
) -> Result<Func, AdError> {
    ensure_typed(a, func)?;
    check_request(a, func, wrt)?;
    let tys = types_of(a, &func.params)?;
    let body = rev.gradient_term(a, &func.params, wrt, func.body)?;
    Ok(Func {
        name: func.name.clone(),
        params: func.params.clone(),
        body,
        ret: Type::product(wrt.iter().map(|&i| tys[i].clone()).collect()),
    })
}

/// Value and gradient:
/// `let Y = proj in let (v, B) = D(e) in let (g1, ..., gk) = B(0_Γ, 1) in (v, g1, ..., gk)`.
pub(crate) fn reverse_with(
    rev: &mut dyn Reverse,
    a: &mut Arena,
    func: &Func,
    wrt: &[usize],
) -> Result<Func, AdError> {
    ensure_typed(a, func)?;
    check_request(a, func, wrt)?;
    let gamma = &func.params;
    let tys = types_of(a, gamma)?;
    let (y, proj, rho) = projection(a, rev.names(), gamma, wrt)?;
    let pair = rev.pair(a, gamma, &rho, y, func.body)?;
    let v = a.fresh_var("v", Some(Type::Real));
    let mut cont_params = tys.clone();
    cont_params.push(Type::Real);
    let back = a.fresh_var("B", Some(Type::func(cont_params, rho.clone())));
    let args = initial_adjoints(a, gamma)?;
    let back_e = a.var(back);
    let call = a.app(back_e, &args);
    let gs: Vec<Var> = wrt
        .iter()
        .map(|&i| {
            let n = format!("g{}", a.var_name(gamma[i]));
            a.fresh_var(&n, Some(tys[i].clone()))
        })
        .collect();
    let mut result = vec![a.var(v)];
    result.extend(gs.iter().map(|&g| a.var(g)));
    let result = a.tuple(&result);
    let body = match gs.as_slice() {
        [g] => a.let_(*g, call, result),
        _ => a.let_tuple(&gs, call, result),
    };
    let body = a.let_tuple(&[v, back], pair, body);
    let body = a.let_(y, proj, body);
    let mut ret = vec![Type::Real];
    ret.extend(wrt.iter().map(|&i| tys[i].clone()));
    Ok(Func {
        name: func.name.clone(),
        params: func.params.clone(),
        body,
        ret: Type::tuple(ret),
    })
}
