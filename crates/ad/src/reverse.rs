//! The interface of a reverse-mode pipeline, [`Reverse`], and the helpers every rule shares
//! with it: the types of a context, the names of adjoints, the initial continuation `Y`.
//!
//! This is the bottom of the rules' layers: the array rules (`elem`, `arrays`, `folds`) and
//! both pipelines (`direct`, `unf`) call back into a run through [`Reverse`] (an array
//! operation's function is differentiated by the pipeline that meets it), and `pipeline`
//! drives a run from the top. It imports nothing from the rule modules.

use unfad_syntax::{Arena, ExprId, Type, Var};

use crate::build::Run;
use crate::error::AdError;
use crate::ground;
use crate::request::RequestError;

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
        return Err(RequestError::NothingToDifferentiate.into());
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
pub(crate) fn zero_adjoints(a: &mut Arena, gamma: &[Var]) -> Result<Vec<ExprId>, AdError> {
    let tys = types_of(a, gamma)?;
    let mut args = Vec::with_capacity(gamma.len() + 1);
    for (&g, t) in gamma.iter().zip(&tys) {
        let w = a.var(g);
        args.push(ground::zero(a, t, w)?);
    }
    Ok(args)
}
