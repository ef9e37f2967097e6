//! The reverse derivatives of the folds and scans: `reduce` (Figures "Reverse-mode
//! transformation from source to target language" and "... reduce without restrictions on
//! its function argument"), `foldl` (Figure "... foldl and map operators") and `scanl` /
//! `scanr` in Source programs (following "Recipe for Adding More Constructs").
//!
//! A left fold computes `acc_i = e(acc_{i-1}, a_i)` from `acc_0 = y0`. With `s_i` the
//! adjoint of `acc_i` (`s_n = z` for the fold's result), the backward pass is
//! `s_{i-1} = J^T_acc e(acc_{i-1}, a_i) · s_i`, `ā_i = J^T_x e(acc_{i-1}, a_i) · s_i`,
//! `c̄ = Σ_i J^T_c e(acc_{i-1}, a_i) · s_i` for a captured `c`, and `ȳ0 = s_0`.
//!
//! **Real accumulators: the paper's form.** `s_i = z * Π_{j>i} ∂x e_j`, the products of the
//! later `∂x` factors, are a `scanr * 1`; the tape binds
//! ```text
//! let A0 = shift1R (scanl (x, y. e) y0 A) in    -- the accumulator before each element
//! let Ax = map2 (a, b. ∇x e) A0 A in             -- ∂x at each step
//! let A2 = map2 (a, b. ∇y e) A0 A in             -- ∂y at each step (of the elements' type)
//! let A3 = scanr * 1 (shift1L Ax) in             -- products of the later ∂x factors
//! ```
//! and the adjoints are `ȳ0 = z * reduce * 1 Ax`, `Ā = map2 (a, b. a * b * z) A3 A2` (for
//! other element types `b` is scaled by `a * z`), and for each capture
//! `c̄ = Σ map2 (a, g. (a * z) ·̂ g) A3 (map2 (a, b. ∇c e) A0 A)`. When the function captures
//! reals, one reverse pass per step gives all the partial derivatives,
//! `G = map2 (a, b. (∇x e, ∇y e, ∇c1 e, ...)) A0 A`, and `Ax`, `A2` and the `∇c e` are its
//! columns (see [`crate::arrays`] for why; captured arrays keep passes of their own).
//!
//! Departures from the printed figures, each for correctness:
//! - the unit `y0` gets an adjoint (the figures pass none, or `0`), which is wrong when it
//!   depends on the inputs;
//! - the product is `map2 (a, b. a * b * z) A3 A2`, `A3` first as in the paper's
//!   derivation of the closed form of `∇prod` (its Figure writes `A2 A3`; the product
//!   commutes), so that `∇prod` comes out as the paper prints it;
//! - captured variables: the paper's Figure for `reduce` without restrictions builds
//!   `B1 = scanr 1_Γ ×̂ B0`, products of the gradients with respect to the context. The
//!   contribution of step `i` to `c̄` is `∇c e_i` scaled by the adjoint `s_i` of that step's
//!   result, which is `A3_i * z` (above): products of the `∂x` factors, not of the `∇c`.
//!
//! **Sums.** `reduce + y0 A` over reals (the closed section, so the same `foldl`) passes the
//! adjoint of its result unchanged to the unit and to every element, `Ā = map (b. z) A`,
//! the closed form the general rule reaches only after partial evaluation (every `∂x e` and
//! `∂y e` is 1), built directly: sums are everywhere (`dot`, `sum`) and the general rule's
//! terms for them are most of the work of reverse mode and of the optimizer.
//!
//! **Extrema.** For `reduce max y0 A` with the closed section (so `min`, and the same
//! `foldl`) the factors `∂x e` are 0 or 1: the derivative goes to the accumulator when
//! `acc >= x` (ties included, see [`crate::derivatives`]) and to the element otherwise, so
//! the whole adjoint goes to the last step that took its element, or to `y0` if none did.
//! Without NaN the maximum only grows and grows strictly at those steps, so that step is
//! the one whose element beats the maximum before it and equals the result `m`: the first
//! element equal to `m`, unless `y0` is `m`; with a NaN anywhere (`m` is NaN) every step
//! after it takes its element, so it is the last step. A reduction finds that position
//! and a map puts the adjoint there (`extremum_adjoint`), where the general form multiplies
//! 0/1 factors in a `scanr` (and a scan of the maxima before each step would wait for one
//! maximum per element).
//!
//! **Other accumulators: a reverse scan.** For tuples or arrays the paper's `A3 = scanr
//! tilde-* 1 A1` multiplies Jacobians (matrices of size `|T| x |T|` at every step), which
//! costs far more than the fold. Instead the adjoints are scanned from the right with the
//! body's reverse pass (`hat-*` without forming the Jacobian):
//! ```text
//! let Q = map2 (a, b. (a, b)) A0 A in
//! let R = scanr (q, t. J^T_x e[q.0, q.1] · t) z Q in    -- [s_0, ..., s_n]
//! let W = shift1L R in                                    -- [s_1, ..., s_n]
//! ȳ0 = first(R), Ā = map2 (q, t. J^T_y e[q.0, q.1] · t) Q W, c̄ = Σ map2 (... J^T_c ...) Q W
//! ```
//! (with captured reals, `Ā` and their `c̄` come from one pass per step, as above).
//! (`first` is a left fold keeping the first element, see [`crate::elem::first`]: the
//! paper's language has no indexing.)
//!
//! **One joint backward fold.** The reverse scan computes the body's reverse pass once per
//! step in `R` and again per step for each captured array (whose adjoints get passes of
//! their own, see [`shared_captures`]). Where the step captures an array and runs a
//! sequential loop of its own (an LSTM's scan over its layers), each pass reruns that
//! loop and the optimizer cannot read it back from the stored states; where it reads the
//! captured arrays only at its element's positions, each pass reruns the step for one
//! slice of an adjoint. There the backward pass is one left fold over the steps from the
//! last, carrying the accumulator's adjoint, the elements' and the captures'
//! ([`joint_backward`]): one reverse pass per step, and no array of adjoints stored.
//! (`scanr` keeps its forward scan of adjoints.)
//!
//! **Scans.** `scanl` returns every `acc_i`, so its adjoint `Z` adds `Z_i` to each `s_i`:
//! `s_n = Z_n`, `s_{i-1} = Z_{i-1} +̂ J^T_acc · s_i`, a `scanr` over `(acc_{i-1}, a_i,
//! Z_{i-1})`. `scanr` runs from the right (`r_{i-1} = e(a_i, r_i)`, `r_n = y0`), so its
//! adjoints flow from the left, a `scanl`: with `v_0 = 0` and `v_i = J^T_acc e(a_i, r_i) ·
//! (v_{i-1} +̂ Z_{i-1})`, the adjoint of `r_i` is `Z_i +̂ v_i`, so `ȳ0 = last(Z) +̂ last(V)`
//! and `ā_i = J^T_x e(a_i, r_i) · (v_{i-1} +̂ Z_{i-1})`. Both cost a constant times the scan
//! (one reverse pass of the body per element, and linear work), and are checked against
//! the unrolled programs and forward mode.

use unfad_syntax::{Arena, BinOp, CmpOp, ExprId, Node, Type, Var};

use crate::build::{self, component, map2, section};
use crate::elem::{
    self, column, column_at, elem_type, elementwise, first, gradient_fun, gradients_fun, last,
    shared_captures, vjp, vjp_many, Capture, Wrt,
};
use crate::error::AdError;
use crate::ground;
use crate::reverse::Reverse;

/// Which left fold: the value of `reduce` is recomputed as the paper's rule does; the
/// value of `foldl` is the last element of the scan the backward pass needs anyway
/// (`foldl (acc, x. x) y0 S` costs 3 moves per element, recomputing costs the body and 2
/// moves; the optimizer turns it back into the fold when nothing else uses the scan).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FoldKind {
    Reduce,
    Foldl,
}

/// A fold or scan being differentiated: its function, the function's captures, and the
/// atoms holding its initial value and its array.
#[derive(Copy, Clone)]
pub struct Fold<'c> {
    pub f: ExprId,
    pub captures: &'c [Capture],
    pub init: ExprId,
    pub array: ExprId,
}

/// What the backward pass of a fold needs from the forward pass, and the fold's value.
pub struct FoldTape {
    /// Bindings of the forward pass, in order.
    pub bindings: Vec<(Var, ExprId)>,
    /// The value of the fold.
    pub value: ExprId,
    recorded: Recorded,
}

/// The forward pass's arrays: none for an extremum, the accumulators and the partial
/// derivatives at every step for the other folds.
enum Recorded {
    /// `max` or `min` of the elements and the unit: its adjoint needs only the value (the
    /// first position holding it, whichever the operator).
    Extremum,
    /// A sum of reals: every element and the unit get the adjoint of the result.
    Sum,
    Steps(StepTape),
}

/// The accumulators before each step and what the backward pass reads of the steps.
struct StepTape {
    acc_ty: Type,
    a0: ExprId,
    /// `Ax`, `A2`, `A3` of the paper's form (real accumulators only).
    paper: Option<(ExprId, ExprId, ExprId)>,
    /// With captures: `G`, every step's partial derivatives `(∂x, ∂y, ∂c1, ..., ∂ck)`
    /// from one reverse pass of the body (`Ax` and `A2` are its first two columns), for
    /// the captures listed (see [`shared_captures`]).
    partials: Option<(ExprId, Vec<usize>)>,
}

/// The adjoints a fold or scan sends to its operands: bindings to make first (inside the
/// continuation), then the adjoint of the initial value, of the array, and of each
/// capture.
pub struct FoldAdjoint {
    pub bindings: Vec<(Var, ExprId)>,
    pub init: ExprId,
    pub array: ExprId,
    pub captures: Vec<ExprId>,
}

/// Bind `e` to a fresh variable named `name` (typed from `e`), recording the binding.
fn bind(
    a: &mut Arena,
    bindings: &mut Vec<(Var, ExprId)>,
    name: &str,
    e: ExprId,
) -> Result<ExprId, AdError> {
    let t = elem::retype(a, e)?;
    let v = a.fresh_var(name, Some(t));
    bindings.push((v, e));
    Ok(a.var(v))
}

/// The type of an atom.
fn type_of_atom(a: &mut Arena, e: ExprId) -> Result<Type, AdError> {
    match a[e] {
        Node::Var(v) => a
            .var_type(v)
            .cloned()
            .ok_or_else(|| AdError::Internal("an untyped variable".into())),
        _ => elem::retype(a, e),
    }
}

/// The forward pass of a left fold (`reduce` or `foldl`).
pub fn fold_tape(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    fold: &Fold,
    kind: FoldKind,
) -> Result<FoldTape, AdError> {
    let acc_ty = type_of_atom(a, fold.init)?;
    let mut bindings = Vec::new();
    let op = operator_section(a, fold);
    let sum =
        op == Some(BinOp::Add) && acc_ty == Type::Real && elem_type(a, fold.array)? == Type::Real;
    let dedicated = matches!(op, Some(BinOp::Max | BinOp::Min)) || sum;
    if dedicated && !rev.names().paper_rules_only {
        let f_copy = elem::instantiate(a, fold.f, &[]);
        let node = match kind {
            FoldKind::Reduce => Node::Reduce(f_copy, fold.init, fold.array),
            FoldKind::Foldl => Node::Foldl(f_copy, fold.init, fold.array),
        };
        let value_e = a.add(node);
        let (value, recorded) = match op {
            Some(BinOp::Max | BinOp::Min) => {
                let m = bind(a, &mut bindings, "M", value_e)?;
                (m, Recorded::Extremum)
            }
            _ => (value_e, Recorded::Sum),
        };
        return Ok(FoldTape {
            bindings,
            value,
            recorded,
        });
    }
    let f_copy = a.copy_fresh(fold.f);
    let scan = a.add(Node::Scanl(f_copy, fold.init, fold.array));
    let (a0, value) = match kind {
        FoldKind::Reduce => {
            let shifted = a.add(Node::Shift1R(scan));
            let a0 = bind(a, &mut bindings, "A0", shifted)?;
            let f_copy = elem::instantiate(a, fold.f, &[]);
            (a0, build::reduce(a, f_copy, fold.init, fold.array))
        }
        FoldKind::Foldl => {
            let s = bind(a, &mut bindings, "S", scan)?;
            let shifted = a.add(Node::Shift1R(s));
            let a0 = bind(a, &mut bindings, "A0", shifted)?;
            (a0, last(a, s, fold.init)?)
        }
    };
    let mut partials = None;
    let paper = if acc_ty == Type::Real {
        let shared = shared_captures(a, fold.captures);
        let (ax_e, a2_e) = if shared.is_empty() {
            let dx = gradient_fun(a, rev, fold.f, fold.captures, Wrt::Param(0), &[])?;
            let dy = gradient_fun(a, rev, fold.f, fold.captures, Wrt::Param(1), &[])?;
            (map2(a, dx, a0, fold.array), map2(a, dy, a0, fold.array))
        } else {
            // One reverse pass per step for every partial derivative (see `partials`).
            let mut targets = vec![Wrt::Param(0), Wrt::Param(1)];
            targets.extend(shared.iter().map(|&j| Wrt::Capture(j)));
            let df = gradients_fun(a, rev, fold.f, fold.captures, &targets)?;
            let g_e = map2(a, df, a0, fold.array);
            let g = bind(a, &mut bindings, "G", g_e)?;
            let columns = (column(a, g, 0)?, column(a, g, 1)?);
            partials = Some((g, shared));
            columns
        };
        let ax = bind(a, &mut bindings, "Ax", ax_e)?;
        let a2 = bind(a, &mut bindings, "A2", a2_e)?;
        let times = section(a, BinOp::Mul);
        let one = build::num(a, 1.0);
        // At run time `scanr` of the shifted empty array has one element where `A2` has
        // none; `map2` stops at the shorter array (formally both have size `n`).
        let later = a.add(Node::Shift1L(ax));
        let a3_e = a.add(Node::Scanr(times, one, later));
        let a3 = bind(a, &mut bindings, "A3", a3_e)?;
        Some((ax, a2, a3))
    } else {
        None
    };
    Ok(FoldTape {
        bindings,
        value,
        recorded: Recorded::Steps(StepTape {
            acc_ty,
            a0,
            paper,
            partials,
        }),
    })
}

/// The backward pass of a left fold for the adjoint `z` (an atom) of its result.
pub fn fold_adjoint(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    fold: &Fold,
    tape: &FoldTape,
    z: ExprId,
) -> Result<FoldAdjoint, AdError> {
    let tape = match &tape.recorded {
        Recorded::Extremum => return extremum_adjoint(a, fold, tape.value, z),
        Recorded::Sum => {
            // ȳ0 = z, Ā = map (b. z) A
            let spread = build::lambda(a, &[("b", Type::Real)], |_, _| Ok(z))?;
            return Ok(FoldAdjoint {
                bindings: Vec::new(),
                init: z,
                array: build::map(a, spread, fold.array),
                captures: Vec::new(),
            });
        }
        Recorded::Steps(steps) => steps,
    };
    let Some((ax, a2, a3)) = tape.paper else {
        return reverse_fold(a, rev, fold, tape, z);
    };
    // ȳ0 = z * reduce * 1 Ax
    let times = section(a, BinOp::Mul);
    let one = build::num(a, 1.0);
    let product = build::reduce(a, times, one, ax);
    let init = build::mul(a, z, product);
    // Ā = map2 (a, b. a * b * z) A3 A2
    let elem_ty = elem_type(a, fold.array)?;
    let array = if elem_ty == Type::Real {
        build::lambda(a, &[("a", Type::Real), ("b", Type::Real)], |a, p| {
            let ab = build::mul(a, p[0], p[1]);
            Ok(build::mul(a, ab, z))
        })?
    } else {
        build::lambda(a, &[("a", Type::Real), ("g", elem_ty.clone())], |a, p| {
            let s = build::mul(a, p[0], z);
            ground::scale(a, &elem_ty, s, p[1])
        })?
    };
    let array = map2(a, array, a3, a2);
    // c̄ = Σ map2 (a, g. (a * z) ·̂ g) A3 (map2 (a, b. ∇c e) A0 A), ∇c e a column of G
    let mut captures = Vec::with_capacity(fold.captures.len());
    for j in 0..fold.captures.len() {
        captures.push(capture_sum(
            a,
            fold,
            j,
            &mut Vec::new(),
            &mut |a, path, ty| {
                let shared_column = tape
                    .partials
                    .as_ref()
                    .and_then(|(g, shared)| Some((*g, shared.iter().position(|&s| s == j)?)));
                let per_step = match shared_column {
                    Some((g, col)) => column_at(a, g, 2 + col, path)?,
                    None => {
                        let dc =
                            gradient_fun(a, rev, fold.f, fold.captures, Wrt::Capture(j), path)?;
                        map2(a, dc, tape.a0, fold.array)
                    }
                };
                let f = build::lambda(a, &[("a", Type::Real), ("g", ty.clone())], |a, p| {
                    let s = build::mul(a, p[0], z);
                    ground::scale(a, ty, s, p[1])
                })?;
                Ok(map2(a, f, a3, per_step))
            },
        )?);
    }
    Ok(FoldAdjoint {
        bindings: Vec::new(),
        init,
        array,
        captures,
    })
}

/// `Some(op)` if the fold's function is the section `(acc, x. acc op x)`, capturing
/// nothing.
fn operator_section(a: &Arena, fold: &Fold) -> Option<BinOp> {
    let (ps, body) = a.lambda_parts(fold.f)?;
    let Node::Op2(op, x, y) = a[body] else {
        return None;
    };
    let params = [Node::Var(*ps.first()?), Node::Var(*ps.get(1)?)];
    (fold.captures.is_empty() && [a[x], a[y]] == params).then_some(op)
}

/// The backward pass of `reduce max y0 A` (or `min`, or `foldl`) with value `m`, for the
/// adjoint `z` (see the module docs). Without NaN the whole adjoint goes to `y0` if it is
/// `m`, else to the first element equal to `m`: the maximum grows strictly there and never
/// again (ties keep the accumulator); with a NaN, to the last step:
/// ```text
/// let L = if m == m then -2 else len(A) - 1 in       -- the last step, if m is NaN
/// let K = reduce min (len(A))                        -- the first element equal to m
///           (map2 (x, i. if x == m then i else len(A)) A (iota len(A))) in
/// let k = if y0 == m then -1 else if m == m then K else len(A) - 1 in    -- ints
/// ȳ0 = if y0 == m || L == -1 then z else 0
/// Ā  = map2 (x, i. if i == k then z else 0) A (iota len(A))
/// ```
/// `K` is a reduction (blocked, on two lanes) and `Ā` a map, where following the maxima
/// before each step was a scan, one dependent maximum per element.
fn extremum_adjoint(
    a: &mut Arena,
    fold: &Fold,
    m: ExprId,
    z: ExprId,
) -> Result<FoldAdjoint, AdError> {
    let mut bindings = Vec::new();
    let defined = build::cmp(a, CmpOp::Eq, m, m);
    let never = build::num(a, -2.0);
    let n = a.add(Node::Len(fold.array));
    let one = build::num(a, 1.0);
    let last = build::sub(a, n, one);
    let l_e = build::if_(a, defined, never, last);
    let l = bind(a, &mut bindings, "L", l_e)?;
    // ȳ0: `y0` is the extremum, or it is NaN and `A` empty.
    let init = {
        let by_value = build::cmp(a, CmpOp::Eq, fold.init, m);
        let before_first = build::num(a, -1.0);
        let by_index = build::cmp(a, CmpOp::Eq, before_first, l);
        let won = a.add(Node::Or(by_value, by_index));
        let zero = build::num(a, 0.0);
        build::if_(a, won, z, zero)
    };
    // The first position holding `m` (`len(A)` if none), an int: the map that reads it
    // compares ints, two positions per instruction.
    let positions = |a: &mut Arena| {
        let len = a.add(Node::Len(fold.array));
        a.add(Node::Iota(len))
    };
    let first = build::lambda(a, &[("x", Type::Real), ("i", Type::Int)], |a, p| {
        let hit = build::cmp(a, CmpOp::Eq, p[0], m);
        let none = a.add(Node::Len(fold.array));
        Ok(build::if_(a, hit, p[1], none))
    })?;
    let iota = positions(a);
    let marks = map2(a, first, fold.array, iota);
    let min = section(a, BinOp::Min);
    let none = a.add(Node::Len(fold.array));
    let k_e = build::reduce(a, min, none, marks);
    let k_first = bind(a, &mut bindings, "K", k_e)?;
    let k_e = {
        let y0_won = build::cmp(a, CmpOp::Eq, fold.init, m);
        let nobody = build::num(a, -1.0);
        let defined = build::cmp(a, CmpOp::Eq, m, m);
        let len = a.add(Node::Len(fold.array));
        let one = build::num(a, 1.0);
        let last = build::sub(a, len, one);
        let in_a = build::if_(a, defined, k_first, last);
        build::if_(a, y0_won, nobody, in_a)
    };
    let k = bind(a, &mut bindings, "k", k_e)?;
    let g = build::lambda(a, &[("x", Type::Real), ("i", Type::Int)], |a, p| {
        let won = build::cmp(a, CmpOp::Eq, p[1], k);
        let zero = build::num(a, 0.0);
        Ok(build::if_(a, won, z, zero))
    })?;
    let iota = positions(a);
    let array = map2(a, g, fold.array, iota);
    Ok(FoldAdjoint {
        bindings,
        init,
        array,
        captures: Vec::new(),
    })
}

/// The per-step contributions to a component (at a path, of a type) of a capture.
type PerStep<'p> = dyn FnMut(&mut Arena, &[usize], &Type) -> Result<ExprId, AdError> + 'p;

/// The sum over the steps of the contributions `per_step(path, ty)` to capture `j`, split
/// into the components of a tuple-typed capture.
fn capture_sum(
    a: &mut Arena,
    fold: &Fold,
    j: usize,
    path: &mut Vec<usize>,
    per_step: &mut PerStep,
) -> Result<ExprId, AdError> {
    let c = fold.captures[j];
    let whole = a
        .var_type(c.var)
        .cloned()
        .ok_or_else(|| AdError::Internal("a captured variable has no type".into()))?;
    let ty = elem::component_type(&whole, path)?;
    if let Type::Tuple(items) = &ty {
        let mut parts = Vec::with_capacity(items.len());
        for i in 0..items.len() {
            path.push(i);
            parts.push(capture_sum(a, fold, j, path, per_step)?);
            path.pop();
        }
        return build::tuple(a, &parts);
    }
    let contributions = per_step(a, path, &ty)?;
    let mut witness = c.value;
    for &i in path.iter() {
        witness = component(a, witness, i);
    }
    ground::sum(a, &ty, contributions, witness)
}

/// The reverse-scan form of the backward pass of a left fold (accumulators that are not
/// reals).
fn reverse_fold(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    fold: &Fold,
    tape: &StepTape,
    z: ExprId,
) -> Result<FoldAdjoint, AdError> {
    let mut bindings = Vec::new();
    if joint(a, rev, fold) {
        let seeded = Seeded::Once(z);
        return joint_backward(a, rev, fold, &tape.acc_ty, seeded, tape.a0, bindings);
    }
    let q_e = elementwise(a, &[tape.a0, fold.array], &["acc", "x"], build::tuple)?;

    let q = bind(a, &mut bindings, "Q", q_e)?;
    // R = scanr (q, t. J^T_acc e[q.0, q.1] · t) z Q
    let step = step_fun(a, q, &tape.acc_ty, |a, qe, t| {
        let args = [a.proj(0, qe), a.proj(1, qe)];
        vjp(a, rev, fold.f, fold.captures, &args, t, Wrt::Param(0), &[])
    })?;
    backward_scan(a, rev, fold, &tape.acc_ty, step, z, q, bindings)
}

/// Whether the backward pass of `fold` is one joint fold ([`joint_backward`]): when the
/// function captures an array and runs a sequential loop of its own (a `foldl` or a scan,
/// such as an LSTM's layers in the step over the characters). The reverse scan makes each
/// captured array's adjoint by a pass of its own, each computing every step, inner loop
/// included, again; and the optimizer reads a step's result back from the stored states
/// only when the step is a map or a tuple of maps (`unfad_opt`'s `rules::steps`). For
/// other folds the reverse scan's passes are those the optimizer simplifies best: a sum's
/// adjoint is constant, a recurrence's layer (`map (i. tanh(dot(W[i], h) + ...))`) reads
/// its next state back, and each captured matrix's adjoint is one sum of outer products.
///
/// Also when every captured array is read only at positions that depend on the step's
/// element (`W[t]` in a fold over `t`, an LSTM's layer reading `weights[i]`): each step
/// then adds to a slice of the array's adjoint, and a pass per capture would compute
/// every step again for that slice.
fn joint(a: &Arena, rev: &dyn Reverse, fold: &Fold) -> bool {
    let arrays = |t: &Type| t.has_arrays() && t.has_reals();
    let captured: Vec<Var> = fold
        .captures
        .iter()
        .filter(|c| a.var_type(c.var).is_some_and(arrays))
        .map(|c| c.var)
        .collect();
    if rev.names().paper_rules_only || captured.is_empty() {
        return false;
    }
    if runs_a_sequential_loop(a, fold.f) {
        return true;
    }
    let Some((ps, body)) = a.lambda_parts(fold.f) else {
        return false;
    };
    let Some(&x) = ps.get(1) else {
        return false;
    };
    captured.iter().all(|&c| read_per_step(a, body, c, x))
}

/// Whether every occurrence of `c` in `e` is indexed, `c[i]`, at a position `i` that
/// mentions the element `x` (or is its length).
fn read_per_step(a: &Arena, e: ExprId, c: Var, x: Var) -> bool {
    unfad_syntax::with_stack(|| match a[e] {
        Node::Index(base, i) if a[base] == Node::Var(c) => {
            a.mentions_any(i, &[x]) && read_per_step(a, i, c, x)
        }
        // Its length is no read.
        Node::Len(inner) if a[inner] == Node::Var(c) => true,
        Node::Var(v) => v != c,
        _ => a.children(e).into_iter().all(|k| read_per_step(a, k, c, x)),
    })
}

/// Whether `e` holds a `foldl`, `scanl` or `scanr`.
fn runs_a_sequential_loop(a: &Arena, e: ExprId) -> bool {
    unfad_syntax::with_stack(|| match a[e] {
        Node::Foldl(..) | Node::Scanl(..) | Node::Scanr(..) => true,
        _ => a
            .children(e)
            .into_iter()
            .any(|c| runs_a_sequential_loop(a, c)),
    })
}

/// Where the adjoints of a fold's or scan's accumulators come from: the adjoint `z` of a
/// fold's result alone, or, for `scanl`, the adjoints `Z` of all its accumulators (`Z_n` is
/// the seed of the last step, and `Z_k` is added to the adjoint of accumulator `k`).
#[derive(Copy, Clone)]
enum Seeded {
    Once(ExprId),
    Every { last: ExprId, before: ExprId },
}

/// The backward pass as one left fold over the steps, from the last to the first, that
/// carries the adjoint of the accumulator together with the adjoints of the elements and
/// of the captured variables, each step's reverse pass made once:
/// ```text
/// B = foldl (st, i.
///       let k = len(A) - 1 - i in
///       let acc = A0[k] in let x = A[k] in
///       let g = J^T_(acc, x, c1, ..., cm) e[acc, x] · st.0 in
///       (g.0 [+̂ Z[k] for scanl], scatter_add(st.1, [k], [g.1]), st.2 +̂ g.2, ...))
///     (z, 0_A, 0_c1, ...) (iota len(A))
/// ȳ0 = B.0, Ā = B.1, c̄j = B.(j + 1)
/// ```
/// The reverse scan (`R = scanr ...`, then a pass per capture over `Q` and `shift1L R`)
/// computes the body's reverse pass once for the accumulators' adjoints and again for
/// every other adjoint, and stores every step's adjoint; here the elements' adjoints are
/// added at their positions and the captures' summed as the steps go (in place, see
/// `unfad_jit`'s folds). Elements and captures without reals (ints) get no component.
fn joint_backward(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    fold: &Fold,
    acc_ty: &Type,
    seeded: Seeded,
    a0: ExprId,
    mut bindings: Vec<(Var, ExprId)>,
) -> Result<FoldAdjoint, AdError> {
    let arr_ty = type_of_atom(a, fold.array)?;
    let elem_ty = elem_type(a, fold.array)?;
    let elems = elem_ty.has_reals();
    let cap_tys = fold
        .captures
        .iter()
        .map(|c| {
            a.var_type(c.var)
                .cloned()
                .ok_or_else(|| AdError::Internal("a captured variable has no type".into()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let caps: Vec<usize> = (0..cap_tys.len())
        .filter(|&j| cap_tys[j].has_reals())
        .collect();
    // The state: the accumulator's adjoint, then the elements', then the captures'.
    let mut tys = vec![acc_ty.clone()];
    let mut start = vec![match seeded {
        Seeded::Once(z) => z,
        Seeded::Every { last, .. } => last,
    }];
    let mut targets = vec![Wrt::Param(0)];
    if elems {
        tys.push(arr_ty.clone());
        start.push(ground::zero(a, &arr_ty, fold.array)?);
        targets.push(Wrt::Param(1));
    }
    for &j in &caps {
        tys.push(cap_tys[j].clone());
        start.push(ground::zero(a, &cap_tys[j], fold.captures[j].value)?);
        targets.push(Wrt::Capture(j));
    }
    let single = tys.len() == 1;
    let st_ty = if single {
        acc_ty.clone()
    } else {
        Type::tuple(tys.clone())
    };
    let start = if single {
        start[0]
    } else {
        build::tuple(a, &start)?
    };
    let step = build::lambda(a, &[("st", st_ty), ("i", Type::Int)], |a, p| {
        let (st, i) = (p[0], p[1]);
        let part =
            |a: &mut Arena, e: ExprId, j: usize| if single { e } else { a.proj(j as u32, e) };
        let mut lets = Vec::new();
        let n = a.add(Node::Len(fold.array));
        let one = build::num(a, 1.0);
        let last = build::sub(a, n, one);
        let k_e = build::sub(a, last, i);
        let k = bind(a, &mut lets, "k", k_e)?;
        let acc_e = a.add(Node::Index(a0, k));
        let acc = bind(a, &mut lets, "acc", acc_e)?;
        let x_e = a.add(Node::Index(fold.array, k));
        let x = bind(a, &mut lets, "x", x_e)?;
        let t = part(a, st, 0);
        let g_e = vjp_many(a, rev, fold.f, fold.captures, &[acc, x], t, &targets)?;
        let g = bind(a, &mut lets, "g", g_e)?;
        let got = |a: &mut Arena, j: usize| if single { g } else { a.proj(j as u32, g) };
        let mut items = Vec::with_capacity(tys.len());
        let back = got(a, 0);
        items.push(match seeded {
            Seeded::Once(_) => back,
            Seeded::Every { before, .. } => {
                let zk = a.add(Node::Index(before, k));
                ground::add_hat_shared(a, acc_ty, zk, back)?
            }
        });
        for (j, ty) in tys.iter().enumerate().skip(1) {
            let old = part(a, st, j);
            let new = got(a, j);
            items.push(if elems && j == 1 {
                let at = a.expr_list(&[k]);
                let at = a.add(Node::Array(at));
                let value = a.expr_list(&[new]);
                let value = a.add(Node::Array(value));
                a.add(Node::ScatterAdd(old, at, value))
            } else {
                ground::add_hat_shared(a, ty, old, new)?
            });
        }
        let result = if single {
            items[0]
        } else {
            build::tuple(a, &items)?
        };
        Ok(wrap_lets(a, &lets, result))
    })?;
    let n = a.add(Node::Len(fold.array));
    let steps = a.add(Node::Iota(n));
    let b_e = a.add(Node::Foldl(step, start, steps));
    let b = bind(a, &mut bindings, "B", b_e)?;
    let got = |a: &mut Arena, j: usize| if single { b } else { a.proj(j as u32, b) };
    let init = got(a, 0);
    let array = if elems {
        got(a, 1)
    } else {
        elementwise(a, &[fold.array], &["x"], |a, p| {
            ground::zero(a, &elem_ty, p[0])
        })?
    };
    let mut captures = Vec::with_capacity(cap_tys.len());
    for (j, ty) in cap_tys.iter().enumerate() {
        captures.push(match caps.iter().position(|&c| c == j) {
            Some(pos) => got(a, 1 + usize::from(elems) + pos),
            None => ground::zero(a, ty, fold.captures[j].value)?,
        });
    }
    Ok(FoldAdjoint {
        bindings,
        init,
        array,
        captures,
    })
}

/// The end of a backward pass by a reverse scan: the accumulators' adjoints
/// `R = scanr step seed Q` (`R[0]` is the initial value's), and from the adjoint of each
/// step's accumulator, `shift1L R`, those of the elements and the captured variables.
#[allow(clippy::too_many_arguments)]
fn backward_scan(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    fold: &Fold,
    acc_ty: &Type,
    step: ExprId,
    seed: ExprId,
    q: ExprId,
    mut bindings: Vec<(Var, ExprId)>,
) -> Result<FoldAdjoint, AdError> {
    let r_e = a.add(Node::Scanr(step, seed, q));
    let r = bind(a, &mut bindings, "R", r_e)?;
    let w_e = a.add(Node::Shift1L(r));
    let w = bind(a, &mut bindings, "W", w_e)?;
    let zero = ground::zero(a, acc_ty, fold.init)?;
    let init = first(a, r, zero)?;
    let steps = Steps {
        f: fold.f,
        captures: fold.captures,
        q,
        seeds: w,
        seed: &|_, _, t| Ok(t),
    };
    let (array, captures) = steps.adjoints(a, rev, fold, Wrt::Param(1), &mut bindings)?;
    Ok(FoldAdjoint {
        bindings,
        init,
        array,
        captures,
    })
}

/// The function argument `(q, t. body(q, t))` of a scan over the steps `Q` whose
/// accumulator (the adjoint) has type `acc_ty`; `left` scans take `(t, q)`.
fn step_fun_ordered(
    a: &mut Arena,
    q: ExprId,
    acc_ty: &Type,
    left: bool,
    body: impl FnOnce(&mut Arena, ExprId, ExprId) -> Result<ExprId, AdError>,
) -> Result<ExprId, AdError> {
    let qt = elem_type(a, q)?;
    if left {
        build::lambda(a, &[("t", acc_ty.clone()), ("q", qt)], |a, p| {
            body(a, p[1], p[0])
        })
    } else {
        build::lambda(a, &[("q", qt), ("t", acc_ty.clone())], |a, p| {
            body(a, p[0], p[1])
        })
    }
}

/// The function argument `(q, t. body(q, t))` of a right scan over the steps `Q`.
fn step_fun(
    a: &mut Arena,
    q: ExprId,
    acc_ty: &Type,
    body: impl FnOnce(&mut Arena, ExprId, ExprId) -> Result<ExprId, AdError>,
) -> Result<ExprId, AdError> {
    step_fun_ordered(a, q, acc_ty, false, body)
}

/// Per-step reverse passes `J^T_v e[q.0, q.1] · seed(q, w)` over the steps `Q` and an
/// array `W` of the same length (adjoints, or what the seeds are made of).
struct Steps<'s> {
    f: ExprId,
    captures: &'s [Capture],
    q: ExprId,
    seeds: ExprId,
    seed: &'s dyn Fn(&mut Arena, ExprId, ExprId) -> Result<ExprId, AdError>,
}

impl Steps<'_> {
    /// `map2 (q, w. π_path(J^T_v e[q.0, q.1] · seed(q, w))) Q W`.
    fn map(
        &self,
        a: &mut Arena,
        rev: &mut dyn Reverse,
        wrt: Wrt,
        path: &[usize],
    ) -> Result<ExprId, AdError> {
        elementwise(a, &[self.q, self.seeds], &["q", "w"], |a, p| {
            let args = [a.proj(0, p[0]), a.proj(1, p[0])];
            let s = (self.seed)(a, p[0], p[1])?;
            vjp(a, rev, self.f, self.captures, &args, s, wrt, path)
        })
    }

    /// The adjoints of the elements (parameter `x` of the function) and of every capture
    /// (the sum of its per-step contributions). With captures, one reverse pass per step
    /// gives them all: `G = map2 (q, w. (J^T_x e · s, J^T_c1 e · s, ...)) Q W` is bound,
    /// and the adjoints are its columns.
    fn adjoints(
        &self,
        a: &mut Arena,
        rev: &mut dyn Reverse,
        fold: &Fold,
        x: Wrt,
        bindings: &mut Vec<(Var, ExprId)>,
    ) -> Result<(ExprId, Vec<ExprId>), AdError> {
        let shared = shared_captures(a, fold.captures);
        if shared.is_empty() {
            let array = self.map(a, rev, x, &[])?;
            let mut out = Vec::with_capacity(fold.captures.len());
            for j in 0..fold.captures.len() {
                out.push(capture_sum(
                    a,
                    fold,
                    j,
                    &mut Vec::new(),
                    &mut |a, path, _| self.map(a, rev, Wrt::Capture(j), path),
                )?);
            }
            return Ok((array, out));
        }
        let mut targets = vec![x];
        targets.extend(shared.iter().map(|&j| Wrt::Capture(j)));
        let g_e = elementwise(a, &[self.q, self.seeds], &["q", "w"], |a, p| {
            let args = [a.proj(0, p[0]), a.proj(1, p[0])];
            let s = (self.seed)(a, p[0], p[1])?;
            vjp_many(a, rev, self.f, self.captures, &args, s, &targets)
        })?;
        let g = bind(a, bindings, "G", g_e)?;
        let array = column(a, g, 0)?;
        let mut out = Vec::with_capacity(fold.captures.len());
        for j in 0..fold.captures.len() {
            let col = shared.iter().position(|&s| s == j);
            out.push(capture_sum(
                a,
                fold,
                j,
                &mut Vec::new(),
                &mut |a, path, _| match col {
                    Some(c) => column_at(a, g, 1 + c, path),
                    None => self.map(a, rev, Wrt::Capture(j), path),
                },
            )?);
        }
        Ok((array, out))
    }
}

/// The backward pass of `S = scanl (acc, x. e) y0 A` (the atom `scan`) for its adjoint
/// `z` (an atom).
pub fn scanl_adjoint(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    fold: &Fold,
    scan: ExprId,
    z: ExprId,
) -> Result<FoldAdjoint, AdError> {
    let acc_ty = type_of_atom(a, fold.init)?;
    let mut bindings = Vec::new();
    // The states before each step and the adjoints of those states.
    let before = a.add(Node::Shift1R(scan));
    let z_before = a.add(Node::Shift1R(z));
    let before = bind(a, &mut bindings, "S0", before)?;
    let z_before = bind(a, &mut bindings, "Z0", z_before)?;
    if joint(a, rev, fold) {
        let zero = ground::zero(a, &acc_ty, fold.init)?;
        let last = last(a, z, zero)?;
        let last = bind(a, &mut bindings, "Zn", last)?;
        let seeded = Seeded::Every {
            last,
            before: z_before,
        };
        return joint_backward(a, rev, fold, &acc_ty, seeded, before, bindings);
    }
    // Q = [(acc_{i-1}, a_i, Z_{i-1})]
    let q_e = elementwise(
        a,
        &[before, fold.array, z_before],
        &["acc", "x", "z"],
        build::tuple,
    )?;
    let q = bind(a, &mut bindings, "Q", q_e)?;
    // R = scanr (q, t. q.2 +̂ J^T_acc e[q.0, q.1] · t) last(Z) Q = [s_0, ..., s_n]
    let step = step_fun(a, q, &acc_ty, |a, qe, t| {
        let args = [a.proj(0, qe), a.proj(1, qe)];
        let back = vjp(a, rev, fold.f, fold.captures, &args, t, Wrt::Param(0), &[])?;
        let zi = a.proj(2, qe);
        ground::add_hat_shared(a, &acc_ty, zi, back)
    })?;
    let zero = ground::zero(a, &acc_ty, fold.init)?;
    let z_last = last(a, z, zero)?;
    backward_scan(a, rev, fold, &acc_ty, step, z_last, q, bindings)
}

/// The backward pass of `R = scanr (x, acc. e) y0 A` (the atom `scan`) for its adjoint
/// `z` (an atom).
pub fn scanr_adjoint(
    a: &mut Arena,
    rev: &mut dyn Reverse,
    fold: &Fold,
    scan: ExprId,
    z: ExprId,
) -> Result<FoldAdjoint, AdError> {
    let acc_ty = type_of_atom(a, fold.init)?;
    let mut bindings = Vec::new();
    // Q = [(a_i, r_i, Z_{i-1})]
    let after = a.add(Node::Shift1L(scan));
    let z_before = a.add(Node::Shift1R(z));
    let after = bind(a, &mut bindings, "R1", after)?;
    let z_before = bind(a, &mut bindings, "Z0", z_before)?;
    let q_e = elementwise(
        a,
        &[fold.array, after, z_before],
        &["x", "acc", "z"],
        build::tuple,
    )?;
    let q = bind(a, &mut bindings, "Q", q_e)?;
    let acc = acc_ty.clone();
    let seed = move |a: &mut Arena, qe: ExprId, v: ExprId| {
        let zi = a.proj(2, qe);
        ground::add_hat_shared(a, &acc, v, zi)
    };
    // V = scanl (v, q. J^T_acc e[q.0, q.1] · (v +̂ q.2)) 0 Q = [v_0, ..., v_n]
    let step = step_fun_ordered(a, q, &acc_ty, true, |a, qe, v| {
        let args = [a.proj(0, qe), a.proj(1, qe)];
        let s = seed(a, qe, v)?;
        vjp(a, rev, fold.f, fold.captures, &args, s, Wrt::Param(1), &[])
    })?;
    let zero = ground::zero(a, &acc_ty, fold.init)?;
    let v_e = a.add(Node::Scanl(step, zero, q));
    let v = bind(a, &mut bindings, "V", v_e)?;
    let u_e = a.add(Node::Shift1R(v));
    let u = bind(a, &mut bindings, "U", u_e)?;
    // ȳ0 = last(Z) +̂ last(V)
    let zero = ground::zero(a, &acc_ty, fold.init)?;
    let z_last = last(a, z, zero)?;
    let zero = ground::zero(a, &acc_ty, fold.init)?;
    let v_last = last(a, v, zero)?;
    let init = ground::add_hat_shared(a, &acc_ty, z_last, v_last)?;
    let steps = Steps {
        f: fold.f,
        captures: fold.captures,
        q,
        seeds: u,
        seed: &seed,
    };
    let (array, captures) = steps.adjoints(a, rev, fold, Wrt::Param(0), &mut bindings)?;
    Ok(FoldAdjoint {
        bindings,
        init,
        array,
        captures,
    })
}

/// `let x1 = e1 in ... let xk = ek in body`.
pub(crate) fn wrap_lets(a: &mut Arena, bindings: &[(Var, ExprId)], body: ExprId) -> ExprId {
    bindings
        .iter()
        .rev()
        .fold(body, |acc, &(v, e)| a.let_(v, e, acc))
}
