//! Derivatives inside programs: `grad(f)(args)`, `grad(f, i)(args)` and `jvp(f)(P, T)`
//! expanded into the terms that compute them, before the program is differentiated or
//! compiled.
//!
//! A derivative's function is closed (a definition, or a `fun` that reads nothing from
//! around it), so its derivative is a function of its own: reverse mode (the weakened
//! macro) or forward mode, then the optimizer, give a first-order term in the Source
//! constructs, which is bound to the arguments where the derivative stood. Expansion goes
//! from the innermost derivative out: the function of an outer derivative is
//! differentiated after the derivatives inside it have become ordinary terms, so nested
//! derivatives are derivatives of derivatives, each with respect to its own variables, and
//! no perturbation is confused with another (`d/dx (x * d/dy (x + y)) = 1`).

use unfad_ad::AdError;
use unfad_syntax::fast_hash::FastMap as HashMap;
use unfad_syntax::{with_stack, Arena, Derivative, ExprId, Func, Node};

/// Why a derivative could not be expanded: a refusal of differentiation (positioned), or
/// a failure of the optimizer (a bug).
pub(crate) enum ExpandError {
    Ad(AdError),
    Optimizer(String),
}

impl From<AdError> for ExpandError {
    fn from(e: AdError) -> Self {
        ExpandError::Ad(e)
    }
}

/// Whether `e` holds a derivative.
pub(crate) fn has_derivatives(arena: &Arena, e: ExprId) -> bool {
    with_stack(|| {
        if matches!(arena[e], Node::Derivative(..)) {
            return true;
        }
        let mut found = false;
        arena.for_each_child(e, |c| found = found || has_derivatives(arena, c));
        found
    })
}

/// `e` with every derivative expanded (an equal term if it has none).
pub(crate) fn expand(arena: &mut Arena, e: ExprId) -> Result<ExprId, ExpandError> {
    let mut memo = HashMap::default();
    expand_rec(arena, e, &mut memo)
}

fn expand_rec(
    arena: &mut Arena,
    e: ExprId,
    memo: &mut HashMap<ExprId, ExprId>,
) -> Result<ExprId, ExpandError> {
    if let Some(&r) = memo.get(&e) {
        return Ok(r);
    }
    let r = with_stack(|| -> Result<ExprId, ExpandError> {
        // Nodes without a derivative below come back as they are (`rebuild` of unchanged
        // children), so one walk serves; the caller checked that there is one at all.
        let node = arena[e];
        let mut failure = None;
        let new = arena.map_children(node, |a, c| match expand_rec(a, c, memo) {
            Ok(c) => c,
            Err(err) => {
                failure.get_or_insert(err);
                c
            }
        });
        if let Some(err) = failure {
            return Err(err);
        }
        match new {
            Node::Derivative(kind, f, l) => {
                let args = arena.exprs(l).to_vec();
                derivative(arena, kind, f, &args)
            }
            new => Ok(arena.rebuild(e, new)),
        }
    })?;
    memo.insert(e, r);
    Ok(r)
}

/// The term of one derivative whose function `f` holds no derivative.
fn derivative(
    arena: &mut Arena,
    kind: Derivative,
    f: ExprId,
    args: &[ExprId],
) -> Result<ExprId, ExpandError> {
    let Some((params, body)) = arena.lambda_parts(f).map(|(p, b)| (p.to_vec(), b)) else {
        return Err(ExpandError::Optimizer(
            "the function of a derivative is not a lambda".into(),
        ));
    };
    let ret = unfad_syntax::typeck::infer(arena, &unfad_syntax::typeck::NoSource, body)
        .map_err(|e| ExpandError::Optimizer(e.message))?;
    let func = Func {
        name: "derivative".into(),
        params: params.clone(),
        body,
        ret,
    };
    let types = func.param_types(arena);
    let differentiated: Vec<usize> = (0..types.len()).filter(|&i| types[i].has_reals()).collect();
    let optimize = |arena: &mut Arena, g: &Func| {
        unfad_opt::optimize(arena, g).map_err(|e| ExpandError::Optimizer(e.to_string()))
    };
    match kind {
        Derivative::Grad { wrt } => {
            let wrt: Vec<usize> = match wrt {
                Some(i) => vec![i as usize],
                None => differentiated,
            };
            let grad = unfad_ad::reverse_weakened(arena, &func, &wrt)?;
            let grad = optimize(arena, &grad)?;
            // `(value, g_1, ..., g_k)` bound, the gradients projected.
            let r = arena.fresh_var("r", Some(grad.ret.clone()));
            let items: Vec<ExprId> = (1..=wrt.len())
                .map(|i| {
                    let re = arena.var(r);
                    arena.proj(i as u32, re)
                })
                .collect();
            let result = arena.tuple(&items);
            let body = arena.let_(r, grad.body, result);
            Ok(bind_all(arena, &params, args, body))
        }
        Derivative::Jvp => {
            // A tangent written as zeros (`zeros_like(x)`, `0`) is a symbolic zero: its
            // parameter is held fixed, and nothing of its tangent is computed.
            let written_zero = |arena: &Arena, t: ExprId| match arena[t] {
                Node::ZerosLike(_) => true,
                Node::Const(c) => c == 0.0,
                _ => false,
            };
            let differentiated: Vec<usize> = match arena[args[1]] {
                Node::Tuple(l) if params.len() > 1 => {
                    let items = arena.exprs(l).to_vec();
                    differentiated
                        .into_iter()
                        .filter(|&i| !written_zero(arena, items[i]))
                        .collect()
                }
                _ if written_zero(arena, args[1]) => Vec::new(),
                _ => differentiated,
            };
            let fwd = unfad_ad::forward(arena, &func, &differentiated)?;
            let fwd = optimize(arena, &fwd)?;
            // `let (x_1, ..., x_k) = P in let (t_1, ..., t_k) = T in` the forward
            // function's body, its tangent parameters bound to the differentiated `t_i`.
            let tangents: Vec<_> = params
                .iter()
                .zip(&types)
                .map(|(&p, t)| {
                    let name = format!("t{}", arena.var_name(p));
                    arena.fresh_var(&name, Some(t.tangent()))
                })
                .collect();
            let mut body = fwd.body;
            for (k, &i) in differentiated.iter().enumerate().rev() {
                let dp = fwd.params[params.len() + k];
                let t = arena.var(tangents[i]);
                body = arena.let_(dp, t, body);
            }
            let body = bind_pattern(arena, &tangents, args[1], body);
            Ok(bind_pattern(arena, &params, args[0], body))
        }
    }
}

/// `let x_1 = a_1 in ... let x_k = a_k in body`.
fn bind_all(
    arena: &mut Arena,
    vars: &[unfad_syntax::Var],
    args: &[ExprId],
    body: ExprId,
) -> ExprId {
    vars.iter()
        .zip(args)
        .rev()
        .fold(body, |acc, (&v, &a)| arena.let_(v, a, acc))
}

/// `let (x_1, ..., x_k) = e in body` (`let x_1 = e` for one).
fn bind_pattern(arena: &mut Arena, vars: &[unfad_syntax::Var], e: ExprId, body: ExprId) -> ExprId {
    match vars {
        [v] => arena.let_(*v, e, body),
        _ => arena.let_tuple(vars, e, body),
    }
}
