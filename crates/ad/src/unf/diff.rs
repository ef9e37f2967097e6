//! The simple reverse-mode transformation `D_ρ` from Source UNF to Target UNF (Figure
//! "Reverse-mode differentiation from Source UNF to Target UNF").
//!
//! `T ⊢ e : T'` becomes `T, [T → ρ] ⊢ D_ρ(e) : T', [T' → ρ]`: the context gains the
//! continuation. Composition is preserved, `D_ρ(e1 ; e2) = D_ρ(e1) ; D_ρ(e2)`, and every
//! primitive `p` becomes `F(p, J^T p)`.
//!
//! Departure: the paper's `F(A, B)` pre-composes `B` with `proj_{T;T→ρ;[]}`, which drops
//! the adjoint the continuation receives; with `J^T p : T, T' ⊢ T` (see the module `unf`)
//! the projection keeps it: `proj_{T;[T→ρ];T'}`.

use unfad_syntax::{Arena, Type};

use super::{Prim, SourceUnf, TargetUnf};
use crate::error::AdError;

/// `D_ρ(e)`.
pub fn diff(a: &Arena, e: &SourceUnf, rho: &Type) -> Result<TargetUnf, AdError> {
    let steps = e
        .prims
        .iter()
        .map(|p| f(a, p, rho))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TargetUnf::Seq(steps))
}

/// `F(p, J^T p) = <proj_{T;[T→ρ];[]} ; p, proj_{[];T;[T→ρ]} ∘ (proj_{T;[T→ρ];T'} ; J^T p)>`
/// for `T ⊢ p : T'`.
pub fn f(a: &Arena, p: &Prim, rho: &Type) -> Result<TargetUnf, AdError> {
    let (t, t2) = p.judgment(a)?;
    let k = vec![Type::func(t.clone(), rho.clone())];
    let proj = |keep: &[Type], drop: &[Type], rest: &[Type]| {
        TargetUnf::Prim(Prim::Proj {
            keep: keep.to_vec(),
            drop: drop.to_vec(),
            rest: rest.to_vec(),
        })
    };
    let primal = TargetUnf::Seq(vec![proj(&t, &k, &[]), TargetUnf::Prim(p.clone())]);
    let adjoint = TargetUnf::Compose(
        Box::new(proj(&[], &t, &k)),
        Box::new(TargetUnf::Seq(vec![
            proj(&t, &k, &t2),
            TargetUnf::JT(p.clone()),
        ])),
    );
    Ok(TargetUnf::Pair(Box::new(primal), Box::new(adjoint)))
}
