//! The direct macro's rules for array operations: `map` and `map2` (any element types,
//! free variables in the function), `reduce` and `foldl` (free variables, any unit), the
//! scans of Source programs, shifts, and array literals. The adjoint terms are built by
//! [`crate::arrays`] and [`crate::folds`], whose docs give the rules and their departures
//! from the paper's figures.

use unfad_syntax::{CmpOp, ExprId, Node, Type, Var};

use super::{type_of, Direct, Macro};
use crate::arrays::map_adjoint;
use crate::build;
use crate::elem::{self, Capture};
use crate::error::{internal, AdError};
use crate::folds::{self, wrap_lets, Fold, FoldKind};
use crate::ground;

impl Macro<'_, '_> {
    /// The captured variables as [`Capture`]s (their values are the variables
    /// themselves, in scope where the adjoints are built).
    fn capture_values(&mut self, captures: &[(Var, usize)]) -> Vec<Capture> {
        captures
            .iter()
            .map(|&(c, _)| Capture {
                var: c,
                value: self.a.var(c),
            })
            .collect()
    }

    /// `map (x. e) A` and `map2 (x, y. e) A B`:
    /// ```text
    /// let A, Y1 = D_{Γ;Y}(e2) in
    /// let B, Y2 = D_{Γ,A;Y1}(e3) in
    /// <map2 (x, y. e) A B, fun (x, Z) ->
    ///    Y2(x +̂ [c](sum of Z ·̂ ∇c e for each free c of e), Ā, B̄)>
    /// ```
    /// with `Ā`, `B̄` as in [`crate::arrays`].
    pub(super) fn rule_map(
        &mut self,
        e: ExprId,
        f: ExprId,
        arrays: &[ExprId],
        y: Var,
    ) -> Result<ExprId, AdError> {
        let t = type_of(self.a, e)?;
        let Type::Array(_, result) = &t else {
            return internal(format!("`map` of type `{t}`"));
        };
        let result = (**result).clone();
        let captures = self.captures(e, f)?;
        let captured: Vec<Var> = captures.iter().map(|&(c, _)| c).collect();
        let ops = self.operands(arrays, y, &captured)?;
        let arrs: Vec<ExprId> = (0..arrays.len())
            .map(|i| self.a.var(ops.value(i)))
            .collect();
        let last = ops.last;
        let caps = self.capture_values(&captures);
        let f_copy = elem::instantiate(self.a, f, &[]);
        let value = match arrs[..] {
            [x] => build::map(self.a, f_copy, x),
            [x, z] => build::map2(self.a, f_copy, x, z),
            _ => return internal("`map` over no or too many arrays"),
        };
        let k = self.cont(&t, |m, mut dx, z| {
            let mut rev = Direct { names: m.names };
            let adj = map_adjoint(m.a, &mut rev, f, &caps, &arrs, z, &result)?;
            let mut lets = adj.bindings;
            m.accumulate(e, &mut dx, &captures, adj.captures, &mut lets)?;
            for (i, g) in adj.operands.into_iter().enumerate() {
                dx.set(ops.value(i), g);
            }
            let call = m.call(last, dx, &[])?;
            Ok(wrap_lets(m.a, &lets, call))
        })?;
        let result = self.pair(value, k);
        Ok(self.bind_operands(ops, result))
    }

    /// `reduce (x, y. e) e2 e3` and `foldl (acc, x. e) e2 e3`:
    /// ```text
    /// let y1, Y1 = D_{Γ;Y}(e2) in
    /// let A, Y2 = D_{Γ,y1;Y1}(e3) in
    /// let A0 = ..., ... in                      -- the tape, see crate::folds
    /// <value, fun (x, z) -> Y2(x +̂ [c](c̄ for each free c of e), ȳ1, Ā)>
    /// ```
    pub(super) fn rule_fold(
        &mut self,
        e: ExprId,
        f: ExprId,
        e1: ExprId,
        e2: ExprId,
        y: Var,
        kind: FoldKind,
    ) -> Result<ExprId, AdError> {
        let t = type_of(self.a, e)?;
        elem::binary_lambda(self.a, f)?;
        let captures = self.captures(e, f)?;
        let captured: Vec<Var> = captures.iter().map(|&(c, _)| c).collect();
        let ops = self.operands(&[e1, e2], y, &captured)?;
        let (init, array, last) = (self.a.var(ops.value(0)), self.a.var(ops.value(1)), ops.last);
        let caps = self.capture_values(&captures);
        let fold = Fold {
            f,
            captures: &caps,
            init,
            array,
        };
        let tape = folds::fold_tape(self.a, &mut Direct { names: self.names }, &fold, kind)?;
        let k = self.cont(&t, |m, mut dx, z| {
            let mut rev = Direct { names: m.names };
            let back = folds::fold_adjoint(m.a, &mut rev, &fold, &tape, z)?;
            let mut lets = back.bindings;
            m.accumulate(e, &mut dx, &captures, back.captures, &mut lets)?;
            dx.set(ops.value(0), back.init);
            dx.set(ops.value(1), back.array);
            let call = m.call(last, dx, &[])?;
            Ok(wrap_lets(m.a, &lets, call))
        })?;
        let result = self.pair(tape.value, k);
        let result = wrap_lets(self.a, &tape.bindings, result);
        Ok(self.bind_operands(ops, result))
    }

    /// `scanl (acc, x. e) e2 e3` and `scanr (x, acc. e) e2 e3`, by the paper's recipe
    /// (their transposed Jacobians are in [`crate::folds`]):
    /// ```text
    /// let y1, Y1 = D_{Γ;Y}(e2) in
    /// let A, Y2 = D_{Γ,y1;Y1}(e3) in
    /// let S = scanl (acc, x. e) y1 A in
    /// <S, fun (x, Z) -> Y2(x +̂ [c](c̄ for each free c of e), ȳ1, Ā)>
    /// ```
    pub(super) fn rule_scan(
        &mut self,
        e: ExprId,
        f: ExprId,
        e1: ExprId,
        e2: ExprId,
        y: Var,
        left: bool,
    ) -> Result<ExprId, AdError> {
        let t = type_of(self.a, e)?;
        elem::binary_lambda(self.a, f)?;
        let captures = self.captures(e, f)?;
        let captured: Vec<Var> = captures.iter().map(|&(c, _)| c).collect();
        let ops = self.operands(&[e1, e2], y, &captured)?;
        let (init, array, last) = (self.a.var(ops.value(0)), self.a.var(ops.value(1)), ops.last);
        let caps = self.capture_values(&captures);
        let fold = Fold {
            f,
            captures: &caps,
            init,
            array,
        };
        let f_copy = elem::instantiate(self.a, f, &[]);
        let scan = self.a.add(if left {
            Node::Scanl(f_copy, init, array)
        } else {
            Node::Scanr(f_copy, init, array)
        });
        let s = self.a.fresh_var("S", Some(t.clone()));
        let se = self.a.var(s);
        let k = self.cont(&t, |m, mut dx, z| {
            let mut rev = Direct { names: m.names };
            let back = if left {
                folds::scanl_adjoint(m.a, &mut rev, &fold, se, z)?
            } else {
                folds::scanr_adjoint(m.a, &mut rev, &fold, se, z)?
            };
            let mut lets = back.bindings;
            m.accumulate(e, &mut dx, &captures, back.captures, &mut lets)?;
            dx.set(ops.value(0), back.init);
            dx.set(ops.value(1), back.array);
            let call = m.call(last, dx, &[])?;
            Ok(wrap_lets(m.a, &lets, call))
        })?;
        let result = self.pair(se, k);
        let result = self.a.let_(s, scan, result);
        Ok(self.bind_operands(ops, result))
    }

    /// `shift1L e` and `shift1R e` (Target constructs that random Source programs use):
    /// linear, their adjoints put back the dropped element as a zero.
    /// ```text
    /// let A, Y1 = D_{Γ;Y}(e) in
    /// <shift1L A, fun (x, Z) -> Y1(x, scanl (acc, z. z) 0 Z)>     -- [0, Z...]
    /// <shift1R A, fun (x, Z) -> Y1(x, scanr (z, acc. z) 0 Z)>     -- [Z..., 0]
    /// ```
    /// Elements with arrays have no zero without a shape; their adjoint reads `Z` at each
    /// position instead, with zeros shaped like `A`'s element where the shift dropped it:
    /// `map2 (i, xr. if i > 0 then Z[i - 1] else zeros_like(xr)) (iota len(A)) A` for
    /// `shift1L`, `if i < len(A) - 1 then Z[i] else zeros_like(xr)` for `shift1R` (a map the
    /// adjoint's consumer reads in place; a scatter into zeros made a copy of `A`'s shape).
    pub(super) fn rule_shift(
        &mut self,
        e: ExprId,
        e1: ExprId,
        y: Var,
        left: bool,
    ) -> Result<ExprId, AdError> {
        let (t1, t) = (type_of(self.a, e1)?, type_of(self.a, e)?);
        let Type::Array(_, elem) = &t1 else {
            return internal(format!("a shift of a value of type `{t1}`"));
        };
        let elem = (**elem).clone();
        let ops = self.operands(&[e1], y, &[])?;
        let (v, last) = (self.a.var(ops.value(0)), ops.last);
        let value = self.a.add(if left {
            Node::Shift1L(v)
        } else {
            Node::Shift1R(v)
        });
        let k = self.cont(&t, |m, mut dx, z| {
            let Some(zero) = ground::zero_of_type(m.a, &elem) else {
                // Elements that are arrays have no zero literal (their size is the
                // operand's): element `i` of the adjoint, over the operand's elements `xr`,
                // is `Z[i - 1]` (left) or `Z[i]` (right) where the shift kept it, else
                // `zeros_like(xr)`. A map the adjoint's consumer reads in place, rather
                // than a scatter into a copy of zeros.
                let count = m.a.add(Node::Len(v));
                let positions = m.a.add(Node::Iota(count));
                let params = [("i", Type::Int), ("xr", elem.clone())];
                let pick = build::lambda(m.a, &params, |a, p| {
                    let (i, xr) = (p[0], p[1]);
                    let one = build::num(a, 1.0);
                    let (kept, at) = if left {
                        let zero = build::num(a, 0.0);
                        (build::cmp(a, CmpOp::Gt, i, zero), build::sub(a, i, one))
                    } else {
                        let n = a.add(Node::Len(v));
                        let last = build::sub(a, n, one);
                        (build::cmp(a, CmpOp::Lt, i, last), i)
                    };
                    let read = a.add(Node::Index(z, at));
                    let none = build::zeros_like(a, xr);
                    Ok(build::if_(a, kept, read, none))
                })?;
                dx.set(ops.value(0), build::map2(m.a, pick, positions, v));
                return m.call(last, dx, &[]);
            };
            let params = [("acc", elem.clone()), ("z", elem.clone())];
            let keep = build::lambda(m.a, &params, |_, p| Ok(p[1]))?;
            let params = [("z", elem.clone()), ("acc", elem.clone())];
            let keep_r = build::lambda(m.a, &params, |_, p| Ok(p[0]))?;
            let back = m.a.add(if left {
                Node::Scanl(keep, zero, z)
            } else {
                Node::Scanr(keep_r, zero, z)
            });
            dx.set(ops.value(0), back);
            m.call(last, dx, &[])
        })?;
        let result = self.pair(value, k);
        Ok(self.bind_operands(ops, result))
    }

    /// The array literal `[e1, ..., ek]`, like a tuple:
    /// ```text
    /// let y1, Y1 = D_{Γ;Y}(e1) in ... let yk, Yk = D_{Γ,y1..;Yk-1}(ek) in
    /// <[y1, ..., yk], fun (x, Z) -> Yk(x, Z[0], ..., Z[k-1])>
    /// ```
    /// There is no indexing: `Z[i]` is the last element of `Z` shifted right `k-1-i`
    /// times (`foldl (acc, z. z) 0 (shift1R ... Z)`), moves only (no arithmetic, so
    /// infinities stay where they are), O(k^2) for a literal of k elements.
    pub(super) fn rule_array(
        &mut self,
        e: ExprId,
        items: &[ExprId],
        y: Var,
    ) -> Result<ExprId, AdError> {
        let t = type_of(self.a, e)?;
        let Type::Array(_, elem) = &t else {
            return internal(format!("an array literal of type `{t}`"));
        };
        let elem = (**elem).clone();
        let ops = self.operands(items, y, &[])?;
        let values: Vec<ExprId> = (0..items.len()).map(|i| self.a.var(ops.value(i))).collect();
        let last = ops.last;
        let value = self.a.array(&values);
        let k = self.cont(&t, |m, mut dx, z| {
            let n = values.len();
            for (i, &v) in values.iter().enumerate() {
                let mut shifted = z;
                for _ in i + 1..n {
                    shifted = m.a.add(Node::Shift1R(shifted));
                }
                let zero = ground::zero(m.a, &elem, v)?;
                dx.set(ops.value(i), elem::last(m.a, shifted, zero)?);
            }
            m.call(last, dx, &[])
        })?;
        let result = self.pair(value, k);
        Ok(self.bind_operands(ops, result))
    }

    /// `scatter_add(Z, P, V)` (in Source: an accumulation by position, Futhark's
    /// `reduce_by_index` with `+`):
    /// ```text
    /// let z, Y1 = D(e1) in let p, Y2 = D(e2) in let v, Y3 = D(e3) in
    /// <scatter_add(z, p, v), fun (x, R) -> Y3(x, R, 0, map2 (q, w. R[q] if q is inside R, else 0) p v)>
    /// ```
    /// The target's adjoint is the result's; each value's is the result's adjoint at its
    /// position (a gather), zero where the position is outside (the value was dropped); the
    /// positions are ints.
    pub(super) fn rule_scatter_add(
        &mut self,
        e: ExprId,
        es: [ExprId; 3],
        y: Var,
    ) -> Result<ExprId, AdError> {
        let t = type_of(self.a, e)?;
        let ops = self.operands(&es, y, &[])?;
        let [zv, pv, vv] = [0, 1, 2].map(|i| self.a.var(ops.value(i)));
        let last = ops.last;
        let value = self.a.add(Node::ScatterAdd(zv, pv, vv));
        let pos_ty = elem::elem_type(self.a, pv)?;
        let val_ty = elem::elem_type(self.a, vv)?;
        let depth = match &pos_ty {
            Type::Tuple(items) => items.len(),
            _ => 1,
        };
        let k = self.cont(&t, |m, mut dx, r| {
            let gather = build::lambda(
                m.a,
                &[("q", pos_ty.clone()), ("w", val_ty.clone())],
                |a, p| {
                    let (q, w) = (p[0], p[1]);
                    // Inside: each index from 0 to the length at its level (short-circuit,
                    // so that a row is read only once its index is known inside).
                    let mut inside: Option<ExprId> = None;
                    let mut at = r;
                    for level in 0..depth {
                        let i = if depth == 1 {
                            q
                        } else {
                            a.proj(level as u32, q)
                        };
                        let zero = build::num(a, 0.0);
                        let len = a.add(Node::Len(at));
                        let lo = build::cmp(a, unfad_syntax::CmpOp::Ge, i, zero);
                        let hi = build::cmp(a, unfad_syntax::CmpOp::Lt, i, len);
                        let here = a.add(Node::And(lo, hi));
                        inside = Some(match inside {
                            None => here,
                            Some(c) => a.add(Node::And(c, here)),
                        });
                        at = a.add(Node::Index(at, i));
                    }
                    let zero = ground::zero(a, &val_ty, w)?;
                    let inside = inside.unwrap_or_else(|| a.add(Node::Bool(true)));
                    Ok(build::if_(a, inside, at, zero))
                },
            )?;
            let dv = build::map2(m.a, gather, pv, vv);
            dx.set(ops.value(0), r);
            let dp = build::zeros_like(m.a, pv);
            dx.set(ops.value(1), dp);
            dx.set(ops.value(2), dv);
            m.call(last, dx, &[])
        })?;
        let result = self.pair(value, k);
        Ok(self.bind_operands(ops, result))
    }
}
