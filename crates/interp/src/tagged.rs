//! Tagged dual numbers: forward mode with a tower of perturbations of any depth, decided
//! at run time, each perturbation named by a tag. The interpreter evaluates `grad` and
//! `jvp` inside programs with them, a fresh tag per derivative, so that nested
//! derivatives never confuse their perturbations (Siskind and Pearlmutter, "Perturbation
//! confusion and referential transparency").
//!
//! A number is a real, or `v + d·ε_t` with `ε_t² = 0`, where every tag inside `v` and `d`
//! is lower than `t`: the tags of a number are sorted, highest outermost, each at most once.
//! The perturbations commute (`ε_s ε_t = ε_t ε_s`), so that order is a representation, not
//! a meaning: an operation on two numbers whose highest tags differ takes the one with the
//! lower tag as a constant at the higher tag's level, and works there as [`crate::Dual`]
//! does, with the same formulas, computed in this type's own arithmetic one level down.

use std::rc::Rc;

use unfad_syntax::{BinOp, UnOp};

use crate::scalar::{binary_with_partials, scale, unary_with_derivative, Scalar};

/// A real with tagged perturbations (see the module documentation). Clones are cheap:
/// the levels are shared.
#[derive(Clone, Debug, PartialEq)]
pub enum Tagged {
    /// A number that holds no perturbation.
    Real(f64),
    /// `v + d·ε_tag`.
    Dual(Rc<Level>),
}

/// One level of a [`Tagged`] number: `v + d·ε_tag`, every tag inside `v` and `d` lower
/// than `tag`.
#[derive(Debug, PartialEq)]
pub struct Level {
    pub tag: u32,
    pub v: Tagged,
    pub d: Tagged,
}

impl Tagged {
    /// `v + d·ε_tag`; every tag inside `v` and `d` must be lower than `tag`.
    fn level(tag: u32, v: Tagged, d: Tagged) -> Tagged {
        debug_assert!(v.top_tag() < Some(tag) && d.top_tag() < Some(tag));
        Tagged::Dual(Rc::new(Level { tag, v, d }))
    }

    /// The highest tag the number holds, `None` for a plain real.
    pub fn top_tag(&self) -> Option<u32> {
        match self {
            Tagged::Real(_) => None,
            Tagged::Dual(level) => Some(level.tag),
        }
    }

    /// `(p, t)` with `self = p + t·ε_tag`, neither holding `tag`.
    pub fn parts(&self, tag: u32) -> (Tagged, Tagged) {
        match self {
            Tagged::Dual(level) if level.tag == tag => (level.v.clone(), level.d.clone()),
            // `tag` sits below the top level: split both parts of that level there, and
            // rebuild it on each side.
            Tagged::Dual(level) if level.tag > tag => {
                let (vp, vt) = level.v.parts(tag);
                let (dp, dt) = level.d.parts(tag);
                (
                    Tagged::level(level.tag, vp, dp),
                    Tagged::level(level.tag, vt, dt),
                )
            }
            // Every tag of the number is lower (or it has none): it is constant along `tag`.
            _ => (self.clone(), Tagged::Real(0.0)),
        }
    }

    /// `primal + tangent·ε_tag`, for a `tag` that neither number holds.
    pub fn perturbed(primal: Tagged, tangent: Tagged, tag: u32) -> Tagged {
        match primal.top_tag().max(tangent.top_tag()) {
            Some(top) if top > tag => {
                // `(pv + pd ε_top) + (tv + td ε_top) ε_tag`
                // `= (pv + tv ε_tag) + (pd + td ε_tag) ε_top`.
                let (pv, pd) = primal.parts(top);
                let (tv, td) = tangent.parts(top);
                Tagged::level(
                    top,
                    Tagged::perturbed(pv, tv, tag),
                    Tagged::perturbed(pd, td, tag),
                )
            }
            _ => Tagged::level(tag, primal, tangent),
        }
    }
}

impl Scalar for Tagged {
    const TAGGED: bool = true;

    fn constant(c: f64) -> Tagged {
        Tagged::Real(c)
    }
    fn value(&self) -> f64 {
        match self {
            Tagged::Real(x) => *x,
            Tagged::Dual(level) => level.v.value(),
        }
    }
    fn is_zero(&self) -> bool {
        match self {
            Tagged::Real(x) => *x == 0.0,
            Tagged::Dual(level) => level.v.is_zero() && level.d.is_zero(),
        }
    }
    fn unary(op: UnOp, x: Tagged) -> Tagged {
        match x {
            Tagged::Real(x) => Tagged::Real(op.eval(x)),
            Tagged::Dual(level) => {
                let (v, dv) = unary_with_derivative(op, &level.v);
                Tagged::level(level.tag, v, scale(level.d.clone(), dv))
            }
        }
    }
    fn binary(op: BinOp, x: Tagged, y: Tagged) -> Tagged {
        let Some(tag) = x.top_tag().max(y.top_tag()) else {
            return Tagged::Real(op.eval(x.value(), y.value()));
        };
        let (xv, xd) = x.parts(tag);
        let (yv, yd) = y.parts(tag);
        let (v, dx, dy) = binary_with_partials(op, &xv, &yv);
        let d = Tagged::binary(BinOp::Add, scale(xd, dx), scale(yd, dy));
        Tagged::level(tag, v, d)
    }
    fn perturb(primal: Tagged, tangent: Tagged, tag: u32) -> Option<Tagged> {
        Some(Tagged::perturbed(primal, tangent, tag))
    }
    fn split(&self, tag: u32) -> Option<(Tagged, Tagged)> {
        Some(self.parts(tag))
    }
}
