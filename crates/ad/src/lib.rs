//! Reverse-mode differentiation of Source terms: the paper's direct macro and its UNF
//! pipeline (Huot & Shaikhha, "Denotationally Correct, Purely Functional, Efficient
//! Reverse-mode AD", sections "Simple pure reverse-mode differentiation", "Unary Normal
//! Form" and "Beyond the Source language").
//!
//! Two pipelines:
//! - [`reverse`] and [`gradient`] apply the direct macro `D^ρ_{Γ;Y}` (module `direct`) to
//!   the whole Source language: reals, `let` (and tuple patterns), tuples and projections,
//!   the scalar operators (partial and non-smooth ones included, with the intensional
//!   derivatives of [`derivatives`]), conditionals (the paper's "Solution"), `map`,
//!   `map2`, `reduce`, `foldl`, `scanl` and `scanr` over arrays of any ground type with
//!   free variables in their functions, array literals, `len`, `zeros_like`, `ones_like`,
//!   and the shifts random programs use;
//! - [`reverse_via_unf`] and [`gradient_via_unf`] compute `UNF^-1(D_ρ(UNF(e)))` ([`unf`])
//!   for the paper's core Source, where the paper gives UNF rules: scalars, tuples, `let`,
//!   `map2` over arrays of reals (its function may use the context) and `reduce` with a
//!   closed function. Everything beyond is the direct macro's only (following the paper's
//!   "Recipe for Adding More Constructs": no need to go through UNF), and the UNF pipeline
//!   rejects it with [`AdError::Unsupported`], pointing at the construct.
//!
//! Where both apply they give the same terms up to names (tested). Both produce Target
//! terms with continuations (lambdas used linearly), to be simplified by a later
//! optimizer.
//!
//! ```
//! use unfad_syntax::Program;
//! let mut prog = Program::load("def f(x: real, y: real) = x * y + sin(x)").unwrap();
//! let func = prog.inline(prog.entry(None).unwrap()).unwrap();
//! let rev = unfad_ad::reverse(&mut prog.arena, &func, &[0, 1]).unwrap();
//! let args = [unfad_interp::Value::Real(2.0), unfad_interp::Value::Real(3.0)];
//! let out = unfad_interp::eval_func(&prog.arena, &rev, &args).unwrap();
//! // (value, d/dx, d/dy)
//! assert_eq!(out.to_string(), format!("[{}, {}, 2]", 6.0 + 2f64.sin(), 3.0 + 2f64.cos()));
//! ```
//!
//! [`reverse_weakened`] and [`gradient_weakened`] are the direct macro with each
//! continuation weakened to the variables still live after its subterm instead of the
//! whole context Γ: the same terms up to that weakening, linear in the program instead of
//! O(nodes × |Γ|). The facade's `compile_grad` takes this route; [`reverse`] keeps the
//! paper's form (`unfad emit --stage target` prints it), and random programs check that
//! both give the same gradients after optimization.
//!
//! Layers, bottom up:
//! - [`derivatives`]: the scalar derivative table (`∂op` as Target terms);
//! - [`ground`]: the monoid `(G, +̂, 0_G)` on ground types, with symbolic zeros;
//! - [`request`]: the validation of a request (result type, parameters), also run by the
//!   facade;
//! - `reverse`: the interface of a pipeline (`Reverse`: the pair `D(e)`, and `J^T e · s`
//!   from it), through which the rules below call back into the run that meets them;
//! - `elem`: function arguments of array operations, their captures, `∇` and the reverse
//!   pass `J^T e · s` of their bodies (the paper's `hat-*` without Jacobians);
//! - `arrays`: the reverse derivatives of `map` and `map2` (shared with `UNF^-1`);
//! - `folds`: those of `reduce`, `foldl`, `scanl` and `scanr` (`reduce`'s is shared);
//! - `live`: the free variables of every subterm, memoized (the weakened macro's
//!   liveness);
//! - `direct`: the direct macro, one rule per Source construct, by family;
//! - [`unf`]: the UNF IR (Source and Target UNF, judgments, printer) and its three
//!   transformations `UNF`, `D_ρ`, `UNF^-1`;
//! - `pipeline`: the top of a run (`∇`, value and gradient, after the request's check),
//!   calling the rules through `Reverse`;
//! - [`reverse_factored`] (module `factor`): the weakened route with the result's constant
//!   factors (`sum(l) / real(len(X))`) taken out of the reverse pass, the gradients scaled
//!   once after it (reverse mode is linear in its seed): the route `compile_grad` takes;
//! - [`checks`]: the invariants of generated terms (linear continuations, unique binders).
//!
//! Where this crate departs from the paper's figures (typos, and rules that are wrong as
//! printed), the module that implements the rule says so and why.
//!
//! **Architecture Invariant:** this crate only transforms terms; it evaluates nothing and
//! depends on nothing but `unfad-syntax`.

#![forbid(unsafe_code)]

mod arrays;
mod build;
pub mod checks;
pub mod derivatives;
mod direct;
mod elem;
pub mod error;
mod factor;
mod folds;
mod forward;
pub mod ground;
mod live;
mod pipeline;
mod reads;
pub mod request;
mod reverse;
pub mod unf;

pub use error::AdError;
pub use factor::reverse_factored;
pub use forward::forward;
pub use request::RequestError;

#[cfg(test)]
mod tests;

use unfad_syntax::{Arena, ExprId, Func, Type, Var};

use build::Run;
use reverse::Reverse;

/// Value and gradient by the direct macro: the result has `func`'s parameters and its body
/// evaluates to `(value, g_1, ..., g_k)`, `g_i` the gradient with respect to parameter
/// `wrt[i]` (of that parameter's type). `func` must return `real`.
pub fn reverse(arena: &mut Arena, func: &Func, wrt: &[usize]) -> Result<Func, AdError> {
    // The macro's term is tens of times the program's (continuations over the context);
    // growing the arena's tables step by step copied them several times. (Room only:
    // nothing is touched until used. Bounded for very large programs.)
    arena.reserve((64 * arena.node_count()).min(1 << 22));
    let names = Run::default();
    pipeline::reverse_with(&mut direct::Direct { names: &names }, arena, func, wrt)
}

/// [`reverse`] with *weakened continuations*: each continuation of the direct macro takes
/// the adjoints of the variables still live after its subterm (read by the rest of the
/// program), not of the whole context Γ (module `direct`). The term means the same as
/// [`reverse`]'s and is linear in the program where [`reverse`]'s is O(nodes × |Γ|),
/// quadratic for a straight-line program: this is the route `compile_grad` takes.
/// [`reverse`] keeps the paper's form, for printing and for comparison.
///
/// Positions of an array read several times in one scope are bound once first
/// (`reads.rs`), so that their adjoints reach the array's by one `scatter_add` each.
pub fn reverse_weakened(arena: &mut Arena, func: &Func, wrt: &[usize]) -> Result<Func, AdError> {
    let run = Run::weakened();
    let func = reads::share_repeated_reads(arena, func)?;
    pipeline::reverse_with(&mut direct::Direct { names: &run }, arena, &func, wrt)
}

/// [`gradient`] with weakened continuations (see [`reverse_weakened`]).
pub fn gradient_weakened(arena: &mut Arena, func: &Func, wrt: &[usize]) -> Result<Func, AdError> {
    let run = Run::weakened();
    let func = reads::share_repeated_reads(arena, func)?;
    pipeline::gradient_with(&mut direct::Direct { names: &run }, arena, &func, wrt)
}

/// The paper's `∇ = π2 D^ρ_{Γ;Y}(e)(0_Γ, 1)` by the direct macro: the body evaluates to
/// the gradients `(g_1, ..., g_k)` (one value when `k = 1`).
pub fn gradient(arena: &mut Arena, func: &Func, wrt: &[usize]) -> Result<Func, AdError> {
    let names = Run::default();
    pipeline::gradient_with(&mut direct::Direct { names: &names }, arena, func, wrt)
}

/// [`gradient`] with the paper's rules only: no dedicated rules for sums and extrema
/// (`reduce +`, `reduce max`, `reduce min` with the closed section), whose closed forms
/// then come out of partial evaluation, as in the paper's section "Gradient from the
/// introduction". The dedicated rules give the same closed forms directly, with far less
/// work for the optimizer; [`reverse`] and [`gradient`] use them.
pub fn gradient_paper(arena: &mut Arena, func: &Func, wrt: &[usize]) -> Result<Func, AdError> {
    let run = Run::paper();
    pipeline::gradient_with(&mut direct::Direct { names: &run }, arena, func, wrt)
}

/// [`gradient_paper`] through UNF.
pub fn gradient_via_unf_paper(
    arena: &mut Arena,
    func: &Func,
    wrt: &[usize],
) -> Result<Func, AdError> {
    let run = Run::paper();
    pipeline::gradient_with(&mut ViaUnf { names: &run }, arena, func, wrt)
}

/// [`reverse`] through UNF: `UNF^-1(D_ρ(UNF(e)))`.
pub fn reverse_via_unf(arena: &mut Arena, func: &Func, wrt: &[usize]) -> Result<Func, AdError> {
    let names = Run::default();
    pipeline::reverse_with(&mut ViaUnf { names: &names }, arena, func, wrt)
}

/// [`gradient`] through UNF.
pub fn gradient_via_unf(arena: &mut Arena, func: &Func, wrt: &[usize]) -> Result<Func, AdError> {
    let names = Run::default();
    pipeline::gradient_with(&mut ViaUnf { names: &names }, arena, func, wrt)
}

/// The UNF pipeline.
struct ViaUnf<'n> {
    names: &'n Run,
}

impl Reverse for ViaUnf<'_> {
    fn pair(
        &mut self,
        a: &mut Arena,
        gamma: &[Var],
        rho: &Type,
        y: Var,
        e: ExprId,
    ) -> Result<ExprId, AdError> {
        let source = unf::translate::unf(a, gamma, e)?;
        let target = unf::diff::diff(a, &source, rho)?;
        let (input, output) = target.judgment(a)?;
        let mut expected = reverse::types_of(a, gamma)?;
        expected.push(Type::func(expected.clone(), rho.clone()));
        if input != expected || output.len() != gamma.len() + 2 {
            return Err(AdError::Internal(format!(
                "D_ρ(UNF(e)) has the judgment [{}] ⊢ [{}]",
                unf::show_ctx(&input),
                unf::show_ctx(&output)
            )));
        }
        let mut items: Vec<ExprId> = gamma.iter().map(|&g| a.var(g)).collect();
        items.push(a.var(y));
        let (lets, outs) = unf::inverse::inverse(a, self, &target, items)?;
        let [.., value, cont] = outs.as_slice() else {
            return Err(AdError::Internal("UNF^-1 lost the result".into()));
        };
        let pair = a.tuple(&[*value, *cont]);
        Ok(unf::inverse::wrap(a, lets, pair))
    }

    fn names(&self) -> &Run {
        self.names
    }
}

/// `UNF(e)` of a function's body, in the context of its parameters (for printing and
/// inspection).
pub fn source_unf(arena: &Arena, func: &Func) -> Result<unf::SourceUnf, AdError> {
    unf::translate::unf(arena, &func.params, func.body)
}

/// `D_ρ(UNF(e))` of a function's body, with ρ the product of the types of the
/// parameters `wrt`.
pub fn target_unf(arena: &Arena, func: &Func, wrt: &[usize]) -> Result<unf::TargetUnf, AdError> {
    let tys = reverse::types_of(arena, &func.params)?;
    let rho = wrt
        .iter()
        .map(|&i| {
            tys.get(i)
                .cloned()
                .ok_or_else(|| AdError::Request(format!("there is no parameter {i}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let source = source_unf(arena, func)?;
    unf::diff::diff(arena, &source, &Type::product(rho))
}

/// Forward over reverse: value, gradient and Hessian-vector product, from `grad`, a
/// value-and-gradient function (`(value, g_1, ..., g_k)` of the parameters `wrt`, as
/// [`reverse`] makes it, best optimized first: it must be first-order). The result takes
/// `grad`'s parameters and then a direction per parameter of `wrt` (of its type), and
/// returns `(value, g_1, ..., g_k, h_1, ..., h_k)`, where `h_i` is the derivative of `g_i`
/// in that direction: the Hessian times the direction.
pub fn hessian_vector(arena: &mut Arena, grad: &Func, wrt: &[usize]) -> Result<Func, AdError> {
    let k = match &grad.ret {
        Type::Tuple(items) if items.len() == wrt.len() + 1 => items.len(),
        t => {
            return Err(AdError::Internal(format!(
                "a Hessian-vector product of a function returning `{t}`, not a value and {} \
                 gradient(s)",
                wrt.len()
            )))
        }
    };
    let tangent = forward::forward(arena, grad, wrt)?;
    let pair = arena.fresh_var("r", Some(tangent.ret.clone()));
    let mut items = Vec::with_capacity(2 * k - 1);
    for (side, range) in [(0, 0..k), (1, 1..k)] {
        for i in range {
            let r = arena.var(pair);
            let half = arena.proj(side, r);
            items.push(arena.proj(i as u32, half));
        }
    }
    let result = arena.tuple(&items);
    let body = arena.let_(pair, tangent.body, result);
    let mut ret = match &grad.ret {
        Type::Tuple(items) => items.to_vec(),
        _ => unreachable!(),
    };
    ret.extend(ret[1..].to_vec());
    elem::retype(arena, body)?;
    Ok(Func {
        name: grad.name.clone(),
        params: tangent.params,
        body,
        ret: Type::tuple(ret),
    })
}

/// Reverse over reverse: the same result as [`hessian_vector`], as the gradient of
/// `⟨∇f(x), v⟩` with respect to `x` (reverse mode applied to the gradient `grad`, which
/// must be first-order: optimized). Slower than forward over reverse; it is there to check
/// it, and for completeness.
pub fn hessian_vector_by_reverse(
    arena: &mut Arena,
    grad: &Func,
    wrt: &[usize],
) -> Result<Func, AdError> {
    let gtypes = match &grad.ret {
        Type::Tuple(items) if items.len() == wrt.len() + 1 => items[1..].to_vec(),
        t => {
            return Err(AdError::Internal(format!(
                "a Hessian-vector product of a function returning `{t}`"
            )))
        }
    };
    // h(x, v) = sum_i <g_i(x), v_i>.
    let directions: Vec<Var> = wrt
        .iter()
        .zip(&gtypes)
        .map(|(&i, t)| {
            let name = format!("d{}", arena.var_name(grad.params[i]));
            arena.fresh_var(&name, Some(t.clone()))
        })
        .collect();
    let inner = arena.copy_fresh(grad.body);
    let r = arena.fresh_var("r", Some(grad.ret.clone()));
    let mut total = None;
    for (k, (t, &d)) in gtypes.iter().zip(&directions).enumerate() {
        let re = arena.var(r);
        let g = arena.proj(k as u32 + 1, re);
        let de = arena.var(d);
        let dot = ground::dot(arena, t, g, de)?;
        total = Some(match total {
            None => dot,
            Some(acc) => build::add(arena, acc, dot),
        });
    }
    let total = total.ok_or(AdError::Request(
        "no parameter to differentiate against".into(),
    ))?;
    let h_body = arena.let_(r, inner, total);
    let mut params = grad.params.clone();
    params.extend(&directions);
    let h = Func {
        name: grad.name.clone(),
        params: params.clone(),
        body: h_body,
        ret: Type::Real,
    };
    elem::retype(arena, h.body)?;
    let second = reverse_weakened(arena, &h, wrt)?;
    // (value, g..) from the gradient, (_, h..) from the second pass.
    let (first, rest) = (
        arena.fresh_var("r", Some(grad.ret.clone())),
        arena.fresh_var("s", Some(second.ret.clone())),
    );
    let mut items = Vec::with_capacity(2 * wrt.len() + 1);
    for i in 0..=wrt.len() {
        let e = arena.var(first);
        items.push(arena.proj(i as u32, e));
    }
    for i in 1..=wrt.len() {
        let e = arena.var(rest);
        items.push(arena.proj(i as u32, e));
    }
    let result = arena.tuple(&items);
    let body = arena.let_(rest, second.body, result);
    let body = arena.let_(first, grad.body, body);
    let mut ret = vec![Type::Real];
    ret.extend(gtypes.iter().cloned());
    ret.extend(gtypes);
    elem::retype(arena, body)?;
    Ok(Func {
        name: grad.name.clone(),
        params,
        body,
        ret: Type::tuple(ret),
    })
}
