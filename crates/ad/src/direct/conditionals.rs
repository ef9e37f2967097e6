//! The direct macro's rules for conditions: `if` (section "Conditionals", the paper's
//! "Solution") and `let`s whose variables carry no derivative (`let`-bound conditions
//! among them). Comparisons and `&&`, `||`, `!` are not
//! differentiated: a condition is computed once, as a value, and chooses between the
//! branches' adjoints.

use unfad_syntax::{ExprId, Type, Var};

use super::{type_of, Direct, Macro};
use crate::build::{self, component};
use crate::error::AdError;
use crate::reverse::Reverse;

impl Macro<'_, '_> {
    /// The paper's "Solution", with the continuation used once:
    /// ```text
    /// let b = e1 in
    /// <if b then e2 else e3,
    ///  fun (x, z) -> let G = if b then J^T e2 · z else J^T e3 · z in Y(x +̂ G)>
    /// ```
    /// `J^T e · z = π2 D_{Δ;Id}(e)(0_Δ, z)` is the reverse pass of a branch for the adjoint
    /// `z` (the paper's `∇Γ(e) * z`, for branches of any type), over the variables `Δ` of
    /// the context the branches use (the others get nothing). The paper combines the two
    /// with `b * ∇e2 + (1 - b) * ∇e3`; `if` does the same without evaluating both branches
    /// and without turning an infinity of the other branch into NaN.
    pub(super) fn rule_if(
        &mut self,
        e: ExprId,
        c: ExprId,
        e2: ExprId,
        e3: ExprId,
        y: Var,
    ) -> Result<ExprId, AdError> {
        let t = type_of(self.a, e)?;
        let b = self.a.fresh_var("b", Some(Type::Bool));
        let cond = self.a.copy_fresh(c);
        let used = self.used_variables(e, &[e2, e3])?;
        let be = self.a.var(b);
        let (then_copy, else_copy) = (self.a.copy_fresh(e2), self.a.copy_fresh(e3));
        let value = build::if_(self.a, be, then_copy, else_copy);
        let k = self.cont(&t, |m, mut dx, z| {
            if used.is_empty() {
                return m.call(y, dx, &[]);
            }
            let vars: Vec<Var> = used.iter().map(|&(v, _)| v).collect();
            let all: Vec<usize> = (0..vars.len()).collect();
            let mut rev = Direct { names: m.names };
            let g2 = rev.vjp_term(m.a, &vars, &all, e2, z)?;
            let g3 = rev.vjp_term(m.a, &vars, &all, e3, z)?;
            let chosen = build::if_(m.a, be, g2, g3);
            let tys = crate::reverse::types_of(m.a, &vars)?;
            let g = m.a.fresh_var("G", Some(Type::product(tys.clone())));
            let ge = m.a.var(g);
            for (j, (&(v, _), ty)) in used.iter().zip(&tys).enumerate() {
                let gj = if vars.len() == 1 {
                    ge
                } else {
                    component(m.a, ge, j)
                };
                dx.add(m.a, v, ty, gj)?;
            }
            let call = m.call(y, dx, &[])?;
            Ok(m.a.let_(g, chosen, call))
        })?;
        let result = self.pair(value, k);
        Ok(self.a.let_(b, cond, result))
    }

    /// `let x = e1 in e2` where `x` carries no derivative in `e2` (a condition, a value
    /// only used for its shape, or unused): `let x = e1 in D_{Γ;Y}(e2)`. `x` is in scope
    /// for the value and the continuation, and is not in Γ; `e1` is not differentiated.
    pub(super) fn rule_inert_let(
        &mut self,
        e: ExprId,
        xs: &[Var],
        e1: ExprId,
        e2: ExprId,
        y: Var,
    ) -> Result<ExprId, AdError> {
        let value = self.a.copy_fresh(e1);
        let d2 = self.d(e2, y)?;
        Ok(match xs {
            [x] if matches!(self.a[e], unfad_syntax::Node::Let(..)) => self.a.let_(*x, value, d2),
            _ => self.a.let_tuple(xs, value, d2),
        })
    }

    /// The variables of Γ that derivatives of the terms `es` flow through (see
    /// [`crate::elem::differentiable_free_vars`]), with their positions, in order of first
    /// use.
    fn used_variables(&self, at: ExprId, es: &[ExprId]) -> Result<Vec<(Var, usize)>, AdError> {
        let mut out: Vec<(Var, usize)> = Vec::new();
        for &e in es {
            for v in crate::elem::differentiable_free_vars(self.a, e) {
                if self.a.var_type(v) == Some(&Type::Bool) || out.iter().any(|&(w, _)| w == v) {
                    continue;
                }
                match self.pos.get(&v) {
                    Some(&p) => out.push((v, p)),
                    None => {
                        return Err(AdError::IllTyped {
                            expr: at,
                            span: self.a.span(at),
                            message: format!(
                                "this uses `{}`, which is not bound",
                                self.a.var_name(v)
                            ),
                        })
                    }
                }
            }
        }
        Ok(out)
    }
}
