//! The top of a reverse-mode run: what the public API makes of a pipeline's pair
//! `(value, continuation)` (the gradient `∇`, and value plus gradient), after checking the
//! request. It calls the rules (through [`Reverse`]); no rule module imports from it.

use unfad_syntax::{Arena, ExprId, Func, Type, Var};

use crate::error::AdError;
use crate::request;
use crate::reverse::{projection, types_of, zero_adjoints, Reverse};

/// `(0_Γ, 1)`: the zero adjoint of every context variable, and the seed 1 for the result.
fn initial_adjoints(a: &mut Arena, gamma: &[Var]) -> Result<Vec<ExprId>, AdError> {
    let mut args = zero_adjoints(a, gamma)?;
    args.push(a.constant(1.0));
    Ok(args)
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
    request::check(a, func, wrt)?;
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
    request::check(a, func, wrt)?;
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
