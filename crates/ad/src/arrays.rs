//! The reverse derivatives of `map` and `map2` (Figures "Reverse-mode transformation from
//! source to target language", "The reverse-mode AD transformation of foldl and map
//! operators" and "... of map2 and reduce for general arrays"), shared by the direct macro
//! and by `UNF^-1` of `J^T map2`.
//!
//! For `map2 (x, y. e) A B` with adjoint `Z` of the result:
//! - when `e` is real (any element types of `A` and `B`), the paper's form
//!   `Ā = map2 ·̂ (map2 (a, b. ∇x e) A B) Z`, where `·̂` scales the gradient (of `x`'s type)
//!   by the real adjoint, and the same for `B̄`;
//! - when `e` has another ground type `G`, the gradient is a Jacobian (`A ⊗ G`) and the
//!   paper's `hat-*` a matrix-vector product. Forming the Jacobian costs `|G|` times the
//!   body; instead each element runs the body's reverse pass on its adjoint,
//!   `Ā = map2 (a, q. J^T_x e[a, q.0] · q.1) A (map2 (b, z. (b, z)) B Z)`, which is the
//!   same vector at the cost of one reverse pass. `map` is the one-array case.
//!
//! Captured variables: the paper builds one array `G` of gradients with respect to the
//! whole context `Γ` and sums it with `reduce +̂ 0̂`. Here only the free variables of the
//! body that derivatives flow through get a contribution (the others none), and:
//! - captured reals (and tuples of reals) share one reverse pass per element with the
//!   operands: `G = map2 (a, b. (∇x e, ∇y e, ∇c1 e, ...)) A B`, whose columns make every
//!   adjoint (`c̄1 = Σ Z ·̂ G.2`). One pass per variable, as the paper's rule computes them,
//!   would redo the work their derivatives share (`1 - tanh(v)^2`) once per variable, and
//!   with a few captured weights exceeds the cheap-gradient bound;
//! - when the body maps over a captured array (`map (x. ... map (c. ...) C ...) X`, a
//!   mixture's components, a layer's weights), every operand and capture shares one
//!   reverse pass per element: a pass per adjoint would run the body's reverse pass,
//!   nested maps included, once per adjoint at every level of nesting (2^depth passes for
//!   maps in maps: GMM's gradient was four copies of the inner body's reverse pass). The
//!   code generator folds the captures' columns of `G` in the loop that makes `G`,
//!   without storing them;
//! - other captured arrays (and tuples holding arrays) get a pass of their own, per
//!   component, summed with `reduce +̂`: their contributions are often zero arrays (a
//!   tuple used in part, an array only measured), which the optimizer then drops, where
//!   a shared pass would keep one per element (the optimizer does not see through the
//!   columns of a stored array of tuples; this is also why the shared pass costs more,
//!   in the paper's cost model, on some random programs whose captures get zero
//!   adjoints).
//!
//! Elementwise, it is the same sum.

use unfad_syntax::{Arena, BinOp, ExprId, Node, Type, Var};

use crate::build::{self, component, map2, section};
use crate::elem::{
    self, column, column_at, elementwise, gradient_fun, gradients_fun, shared_captures, vjp,
    vjp_many, Capture, Wrt,
};
use crate::error::AdError;
use crate::ground;
use crate::reverse::Reverse;

/// The contributions of one `map` or `map2` to the adjoints of its operands.
pub struct MapAdjoint {
    /// Bindings to make first (where the adjoints are built).
    pub bindings: Vec<(Var, ExprId)>,
    /// One per capture, in order: the adjoint the body's uses of it add up to.
    pub captures: Vec<ExprId>,
    /// One per array operand.
    pub operands: Vec<ExprId>,
}

/// The adjoints `map`/`map2` with function `f` sends to its arrays `arrays` (atoms, one or
/// two) and to the captured variables, for the adjoint `z` (an atom) of its result, whose
/// elements have type `result`.
pub fn map_adjoint(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    f: ExprId,
    captures: &[Capture],
    arrays: &[ExprId],
    z: ExprId,
    result: &Type,
) -> Result<MapAdjoint, AdError> {
    let form = if *result == Type::Real {
        Form::Gradient
    } else {
        Form::Reverse
    };
    // Operands without reals (`iota`, an array of ints) carry no derivative: no pass.
    let mut live = Vec::with_capacity(arrays.len());
    for (i, &x) in arrays.iter().enumerate() {
        if crate::elem::elem_type(a, x)?.has_reals() {
            live.push(i);
        }
    }
    let m = Map {
        f,
        captures,
        arrays,
        live: &live,
        single_target: std::cell::Cell::new(false),
        z,
        form,
    };
    // A captured array: the body runs array operations on it, so that a reverse pass per
    // adjoint would run the body's reverse pass once per adjoint at every level of
    // nesting (2^depth passes for maps in maps). One pass makes every adjoint.
    if iterates_a_capture(a, f, captures) {
        let all: Vec<usize> = (0..captures.len()).collect();
        return m.combined(a, rev, &all);
    }
    let shared = shared_captures(a, captures);
    if !shared.is_empty() && live.len() + shared.len() >= 3 {
        return m.combined(a, rev, &shared);
    }
    let mut contributions = Vec::with_capacity(captures.len());
    for j in 0..captures.len() {
        contributions.push(m.separate_capture(a, rev, j)?);
    }
    let mut operands = Vec::with_capacity(arrays.len());
    for (i, &x) in arrays.iter().enumerate() {
        operands.push(if live.contains(&i) {
            m.operand(a, rev, i)?
        } else {
            build::zeros_like(a, x)
        });
    }
    Ok(MapAdjoint {
        bindings: Vec::new(),
        captures: contributions,
        operands,
    })
}

/// Which of the two forms of the rule applies (see the module's docs).
#[derive(Copy, Clone)]
enum Form {
    /// The body is real: gradients scaled by the adjoint.
    Gradient,
    /// The body's reverse pass on each element's adjoint.
    Reverse,
}

/// One `map`/`map2` being differentiated.
struct Map<'c> {
    f: ExprId,
    captures: &'c [Capture],
    arrays: &'c [ExprId],
    /// The operands holding reals, whose adjoints are computed (the others get zeros).
    live: &'c [usize],
    /// Set by the combined pass when it has one target only (an int operand and one
    /// capture): its `G` holds that target's values themselves.
    single_target: std::cell::Cell<bool>,
    z: ExprId,
    form: Form,
}

impl Map<'_> {
    /// All the adjoints from one reverse pass per element: `G` holds, for each element,
    /// the partial derivatives (or the reverse pass on the element's adjoint) with respect
    /// to the parameters and the `shared` captures; each adjoint is built from its column
    /// (the other captures get passes of their own). Used when that makes three adjoints
    /// or more: one pass per adjoint would redo the work they share as many times.
    fn combined(
        &self,
        a: &mut Arena,
        rev: &mut dyn Reverse,
        shared: &[usize],
    ) -> Result<MapAdjoint, AdError> {
        let k = self.arrays.len();
        let mut targets: Vec<Wrt> = self.live.iter().map(|&i| Wrt::Param(i)).collect();
        let first_capture = targets.len();
        targets.extend(shared.iter().map(|&j| Wrt::Capture(j)));
        self.single_target.set(targets.len() == 1);
        let g_e = match self.form {
            Form::Gradient => {
                let df = gradients_fun(a, rev, self.f, self.captures, &targets)?;
                per_element(a, df, self.arrays)
            }
            Form::Reverse => {
                let mut arrays = self.arrays.to_vec();
                arrays.push(self.z);
                let names = if k == 1 {
                    &["a", "z"][..]
                } else {
                    &["a", "b", "z"][..]
                };
                elementwise(a, &arrays, names, |a, els| {
                    vjp_many(a, rev, self.f, self.captures, &els[..k], els[k], &targets)
                })?
            }
        };
        let g_ty = elem::retype(a, g_e)?;
        let gv = a.fresh_var("G", Some(g_ty));
        let g = a.var(gv);
        let mut operands = Vec::with_capacity(k);
        for i in 0..k {
            let Some(c) = self.live.iter().position(|&l| l == i) else {
                operands.push(build::zeros_like(a, self.arrays[i]));
                continue;
            };
            let col = if self.single_target.get() {
                g
            } else {
                column(a, g, c)?
            };
            operands.push(match self.form {
                Form::Gradient => {
                    let ty = elem::elem_type(a, self.arrays[i])?;
                    scaled(a, &ty, col, self.z)?
                }
                Form::Reverse => col,
            });
        }
        let mut contributions = Vec::with_capacity(self.captures.len());
        for j in 0..self.captures.len() {
            contributions.push(match shared.iter().position(|&s| s == j) {
                Some(col) => {
                    let ty = capture_type(a, &self.captures[j])?;
                    self.column_sum(a, g, first_capture + col, j, &ty, &mut Vec::new())?
                }
                None => self.separate_capture(a, rev, j)?,
            });
        }
        Ok(MapAdjoint {
            bindings: vec![(gv, g_e)],
            captures: contributions,
            operands,
        })
    }

    /// The sum over the elements of the contributions in column `i` of `G` to capture
    /// `j` (at `path`, of type `ty`), split into the components of tuples.
    fn column_sum(
        &self,
        a: &mut Arena,
        g: ExprId,
        i: usize,
        j: usize,
        ty: &Type,
        path: &mut Vec<usize>,
    ) -> Result<ExprId, AdError> {
        if let Type::Tuple(items) = ty {
            let mut parts = Vec::with_capacity(items.len());
            for (c, t) in items.iter().enumerate() {
                path.push(c);
                parts.push(self.column_sum(a, g, i, j, t, path)?);
                path.pop();
            }
            return build::tuple(a, &parts);
        }
        // One target: `G`'s elements are that target's, not tuples of one.
        let col = if self.single_target.get() {
            elementwise(a, &[g], &["g"], |a, p| {
                let mut c = p[0];
                for &j in path.iter() {
                    c = component(a, c, j);
                }
                Ok(c)
            })?
        } else {
            column_at(a, g, i, path)?
        };
        self.capture_total(a, col, j, ty, path)
    }

    /// The adjoint of capture `j` from passes of its own, one per component.
    fn separate_capture(
        &self,
        a: &mut Arena,
        rev: &mut dyn Reverse,
        j: usize,
    ) -> Result<ExprId, AdError> {
        let ty = capture_type(a, &self.captures[j])?;
        self.capture_sum(a, rev, j, &ty, &mut Vec::new())
    }

    /// The adjoint of array operand `i`.
    fn operand(&self, a: &mut Arena, rev: &mut dyn Reverse, i: usize) -> Result<ExprId, AdError> {
        let ty = crate::elem::elem_type(a, self.arrays[i])?;
        match self.form {
            // map2 ·̂ (map2 (a, b. ∇x e) A B) Z
            Form::Gradient => {
                let df = gradient_fun(a, rev, self.f, self.captures, Wrt::Param(i), &[])?;
                let d = per_element(a, df, self.arrays);
                scaled(a, &ty, d, self.z)
            }
            // map2 (a, q. J^T_x e[a, q.0] · q.1) A (map2 (b, z. (b, z)) B Z)
            Form::Reverse => self.reverse_pass(a, rev, Wrt::Param(i), &[]),
        }
    }

    /// The elementwise `J^T_v e · Z_i` over the arrays and `Z`.
    fn reverse_pass(
        &self,
        a: &mut Arena,
        rev: &mut dyn Reverse,
        wrt: Wrt,
        path: &[usize],
    ) -> Result<ExprId, AdError> {
        let mut arrays = self.arrays.to_vec();
        arrays.push(self.z);
        let k = self.arrays.len();
        elementwise(
            a,
            &arrays,
            &["a", "b", "z"][3 - arrays.len()..],
            |a, els| vjp(a, rev, self.f, self.captures, &els[..k], els[k], wrt, path),
        )
    }

    /// The sum over the elements of `Z ·̂ π_path(∇c e)` for capture `j`, whose component at
    /// `path` has type `ty`. Tuples are split into their components (no array of tuples).
    fn capture_sum(
        &self,
        a: &mut Arena,
        rev: &mut dyn Reverse,
        j: usize,
        ty: &Type,
        path: &mut Vec<usize>,
    ) -> Result<ExprId, AdError> {
        if let Type::Tuple(items) = ty {
            let mut parts = Vec::with_capacity(items.len());
            for (i, t) in items.iter().enumerate() {
                path.push(i);
                parts.push(self.capture_sum(a, rev, j, t, path)?);
                path.pop();
            }
            return build::tuple(a, &parts);
        }
        let d = match self.form {
            Form::Gradient => {
                let df = gradient_fun(a, rev, self.f, self.captures, Wrt::Capture(j), path)?;
                per_element(a, df, self.arrays)
            }
            Form::Reverse => self.reverse_pass(a, rev, Wrt::Capture(j), path)?,
        };
        self.capture_total(a, d, j, ty, path)
    }

    /// Capture `j`'s adjoint (its component at `path`, of type `ty`) from `d`, the
    /// elements' contributions: summed, after scaling by the adjoint `Z` in the gradient
    /// form (where `d` holds partial derivatives).
    fn capture_total(
        &self,
        a: &mut Arena,
        d: ExprId,
        j: usize,
        ty: &Type,
        path: &[usize],
    ) -> Result<ExprId, AdError> {
        let scaled = match self.form {
            Form::Gradient => {
                let scale_fn =
                    build::lambda(a, &[("z", Type::Real), ("g", ty.clone())], |a, p| {
                        ground::scale(a, ty, p[0], p[1])
                    })?;
                map2(a, scale_fn, self.z, d)
            }
            Form::Reverse => d,
        };
        let mut witness = self.captures[j].value;
        for &i in path {
            witness = component(a, witness, i);
        }
        ground::sum(a, ty, scaled, witness)
    }
}

/// Whether the body of the function `f` maps over a captured array (or a component of a
/// captured tuple): `map (c. ...) C` in `map (x. ... map (c. ...) C ...) X`.
fn iterates_a_capture(a: &Arena, f: ExprId, captures: &[Capture]) -> bool {
    fn root(a: &Arena, mut e: ExprId) -> Option<Var> {
        loop {
            match a[e] {
                Node::Var(v) => return Some(v),
                Node::Proj(_, inner) => e = inner,
                _ => return None,
            }
        }
    }
    // `captured` grows with the variables a `let` binds to a captured array (inlined
    // calls bind their arguments so).
    fn walk(a: &Arena, e: ExprId, captured: &mut Vec<Var>) -> bool {
        let operands = match a[e] {
            Node::Map(_, x) => vec![x],
            Node::Map2(_, x, y) => vec![x, y],
            Node::Let(v, r, _) => {
                if root(a, r).is_some_and(|w| captured.contains(&w)) {
                    captured.push(v);
                }
                Vec::new()
            }
            _ => Vec::new(),
        };
        if operands
            .into_iter()
            .any(|o| root(a, o).is_some_and(|v| captured.contains(&v)))
        {
            return true;
        }
        a.children(e).into_iter().any(|c| walk(a, c, captured))
    }
    let mut captured: Vec<Var> = captures.iter().map(|c| c.var).collect();
    a.lambda_parts(f)
        .is_some_and(|(_, body)| walk(a, body, &mut captured))
}

/// The type of a captured variable.
fn capture_type(a: &Arena, c: &Capture) -> Result<Type, AdError> {
    a.var_type(c.var)
        .cloned()
        .ok_or_else(|| AdError::Internal("a captured variable has no type".into()))
}

/// `map df A` or `map2 df A B`.
fn per_element(a: &mut Arena, df: ExprId, arrays: &[ExprId]) -> ExprId {
    match *arrays {
        [x] => build::map(a, df, x),
        [x, y, ..] => map2(a, df, x, y),
        [] => df,
    }
}

/// `map2 * D Z` for gradients of reals, `map2 (g, z. z ·̂ g) D Z` for others.
fn scaled(a: &mut Arena, ty: &Type, d: ExprId, z: ExprId) -> Result<ExprId, AdError> {
    let f = if *ty == Type::Real {
        section(a, BinOp::Mul)
    } else {
        build::lambda(a, &[("g", ty.clone()), ("z", Type::Real)], |a, p| {
            ground::scale(a, ty, p[1], p[0])
        })?
    };
    Ok(map2(a, f, d, z))
}
