//! Writing values to places: element by element, one loop per leaf when the layouts agree,
//! padding with zeros, and computing unevaluated arrays into memory.

use std::rc::Rc;

use cranelift_codegen::ir::types::F64;
use cranelift_codegen::ir::{InstBuilder, Value};

use crate::error::{internal, JitError, JitResult};
use crate::layout::Dim;
use crate::shape::SShape;
use crate::value::{concat_holds, Arr, FillElem, Holds, IntVal, Kind, Layout, Place, RealVal, Val};

use unfad_syntax::{ExprId, Node, Var};

use super::Translator;

/// Where the reals of one leaf come from, for [`Translator::write_flat`].
#[derive(Clone, Copy)]
enum Leaf {
    Mem(Value),
    Const(f64),
}

impl<'a> Translator<'a> {
    /// Write `v` to `p`; returns the value as written (arrays as views of `p`).
    pub(super) fn write(&mut self, v: &Val, p: &Place) -> JitResult<Val> {
        match (v, p) {
            (_, Place::Reg) => Ok(v.clone()),
            (Val::Real(x), Place::Real(addr)) => {
                let x = self.real_value(*x);
                self.store(x, *addr);
                Ok(Val::Real(RealVal::Ssa(x)))
            }
            (Val::Tuple(vs), Place::Tuple(ps)) if vs.len() == ps.len() => {
                self.write_components(vs, ps, None, |_| Vec::new())
            }
            (Val::Arr(a), Place::Arr(p)) => self.write_arr(a, p),
            (Val::Arr(a), Place::AddTo(p)) => {
                if !in_place(a, p) {
                    self.add_into(a, p)?;
                }
                self.view(p, p.len, p.stat())
            }
            _ => internal("a value does not fit its destination"),
        }
    }

    /// Add the array `a` into the in-memory array `p`, element by element over the
    /// shorter of the two (nested arrays likewise): `p[j] = p[j] + a[j]`, the accumulator's
    /// element first, in the order of the elements, as a sum's `map2 + s t` over `p` and
    /// `a` computes it.
    pub(super) fn add_into(&mut self, a: &Rc<Arr>, p: &Arr) -> JitResult<()> {
        let (count, _) = self.min_len(&[(a.len, a.stat()), (p.len, p.stat())]);
        // Reals two per iteration, as a map's (the lanes pass makes them vector loads,
        // additions and stores); rows one loop each.
        let paired = !p.shape.elem.has_arrays();
        let mut inline = |t: &mut Self| {
            t.peeled_loop(count, &[a], 0, &[a], &[], paired, &mut |t, i, _| {
                let x = t.elem(a, IntVal::Ssa(i))?;
                let dst = t.place_elem(p, IntVal::Ssa(i))?;
                t.add_val(&x, &dst)
            })?;
            Ok(())
        };
        // Rows of reals on the host's widest vectors (`routines.rs`).
        match self.routine_update(a, p, count) {
            Some(u) => self.rows_by_routine(&[(u, a.clone())], count, &[a], &mut inline),
            None => inline(self),
        }
    }

    /// Add `v` into the place `p` (see [`Translator::add_into`]).
    pub(super) fn add_val(&mut self, v: &Val, p: &Place) -> JitResult<Vec<Value>> {
        match (v, p) {
            (Val::Real(x), Place::Real(addr)) => {
                let x = self.real_value(*x);
                let old = self.load(*addr);
                let sum = self.b.ins().fadd(old, x);
                self.store(sum, *addr);
            }
            (Val::Arr(a), Place::Arr(d) | Place::AddTo(d)) => self.add_into(a, d)?,
            (Val::Tuple(vs), Place::Tuple(ps)) if vs.len() == ps.len() => {
                for (v, p) in vs.iter().zip(ps.iter()) {
                    self.add_val(v, p)?;
                }
            }
            _ => return internal("a term added to an accumulator of another shape"),
        }
        Ok(Vec::new())
    }

    /// `v` written to `p` except its components at `paths`, which the result keeps as they
    /// are (unwritten; a fold reads them where they are computed); all of `v` for no path.
    /// Of that, only the arrays (`only` is `Some(true)`) or only the other leaves
    /// (`Some(false)`), the rest kept as it is: a loop that folds the elements it stores
    /// writes their arrays, runs its folds, then stores their scalars (see
    /// [`Translator::write_components`]).
    pub(super) fn write_some(
        &mut self,
        v: &Val,
        p: &Place,
        paths: &[&[usize]],
        only: Option<bool>,
    ) -> JitResult<Val> {
        if paths.iter().any(|q| q.is_empty()) {
            return Ok(v.clone());
        }
        match (v, p) {
            (Val::Tuple(items), Place::Tuple(places)) if items.len() == places.len() => self
                .write_components(items, places, only, |k| {
                    paths
                        .iter()
                        .filter(|q| q.first() == Some(&k))
                        .map(|q| &q[1..])
                        .collect()
                }),
            (Val::Tuple(_), _) | (_, Place::Tuple(_)) if !paths.is_empty() => {
                internal("a component path through a non-tuple")
            }
            (Val::Real(_) | Val::Bool(_) | Val::Arr(_), _)
                if only.is_some_and(|arrays| arrays != v.has_arrays()) =>
            {
                Ok(v.clone())
            }
            _ => self.write(v, p),
        }
    }

    /// The components `items` written to `places` (only some leaves, as `only` says; see
    /// [`Translator::write_some`]) except, in component `k`, the paths `except(k)`: those
    /// with arrays first, then the others, as `emit_into` computes a tuple's. An
    /// unevaluated array is computed where it is written, so its loop then runs before the
    /// scalars are stored, and what only they need (a `log` that the value and a scalar
    /// adjoint read) comes after the loops: Cranelift computes a pure value where it is
    /// first used. Before them, its chain of dependent operations would hold up the loops
    /// (logistic regression's gradient, per row).
    fn write_components<'p>(
        &mut self,
        items: &[Val],
        places: &[Place],
        only: Option<bool>,
        except: impl Fn(usize) -> Vec<&'p [usize]>,
    ) -> JitResult<Val> {
        let mut out: Vec<Option<Val>> = vec![None; items.len()];
        for arrays in [true, false] {
            for (k, (item, place)) in items.iter().zip(places.iter()).enumerate() {
                if item.has_arrays() == arrays {
                    out[k] = Some(self.write_some(item, place, &except(k), only)?);
                }
            }
        }
        let out = out
            .into_iter()
            .map(|v| v.ok_or_else(|| JitError::Internal("a component was lost".into())))
            .collect::<JitResult<Vec<_>>>()?;
        Ok(Val::Tuple(out.into()))
    }

    /// Write the array `a` to the in-memory array `p` (at most its capacity), padding the
    /// rest of `p` with zeros when `a` may be shorter.
    pub(super) fn write_arr(&mut self, a: &Arr, p: &Arr) -> JitResult<Val> {
        // An unevaluated map is written by passing the destination to its body.
        match &a.kind {
            Kind::Map { f, src, read } => {
                if read.second() {
                    return self.read_twice("an unevaluated map");
                }
                return self.map_into(*f, vec![src.clone()], p);
            }
            Kind::Map2 { f, a, b, read } => {
                if read.second() {
                    return self.read_twice("an unevaluated map2");
                }
                return self.map_into(*f, vec![a.clone(), b.clone()], p);
            }
            Kind::Mem { .. }
            | Kind::Fill { .. }
            | Kind::Scan(_)
            | Kind::Iota { .. }
            | Kind::Pad(_) => {}
        }
        let (count, dim) = self.min_len(&[(a.len, a.stat()), (p.len, p.stat())]);
        if in_place(a, p) {
            self.pad(p, count, dim)?;
            return self.view(p, count, dim);
        }
        if self.write_flat(a, p, count)? {
            self.pad(p, count, dim)?;
            return self.view(p, count, dim);
        }
        // A pad's fill is written in the first or last iteration, peeled off the loop.
        let reads: Vec<&Rc<Arr>> = match &a.kind {
            Kind::Pad(pad) => vec![&pad.src],
            _ => Vec::new(),
        };
        self.peeled_loop(count, &[a], 0, &reads, &[], false, &mut |t, i, _| {
            let x = t.elem(a, IntVal::Ssa(i))?;
            let dst = t.place_elem(p, IntVal::Ssa(i))?;
            t.write(&x, &dst)?;
            Ok(Vec::new())
        })?;
        self.pad(p, count, dim)?;
        self.view(p, count, dim)
    }

    /// Write the first `count` elements of `a` to `p` with one loop per leaf, when the
    /// elements are arrays laid out identically in both (so that `count` elements are
    /// consecutive reals in every leaf). Returns false, writing nothing, otherwise.
    fn write_flat(&mut self, a: &Arr, p: &Arr, count: IntVal) -> JitResult<bool> {
        if !p.shape.elem.has_arrays() {
            return Ok(false);
        }
        let Kind::Mem { layout: dst, .. } = &p.kind else {
            return internal("a destination is not in memory");
        };
        let mut leaves = Vec::new();
        let same = match &a.kind {
            Kind::Mem { layout: src, .. } => same_layout(src, dst, &mut leaves),
            Kind::Fill { elem } => fill_layout(elem, dst, &mut leaves),
            Kind::Map { .. }
            | Kind::Map2 { .. }
            | Kind::Scan(_)
            | Kind::Iota { .. }
            | Kind::Pad(_) => false,
        };
        if !same {
            return Ok(false);
        }
        for (src, dst, row) in leaves {
            let n = self.imul(count, row);
            self.loop_(n, false, Vec::new(), &mut |t, i, _| {
                let x = match src {
                    Leaf::Mem(base) => {
                        let at = t.addr(base, IntVal::Ssa(i), IntVal::Const(1));
                        t.b.ins().load(F64, t.flags, at, 0)
                    }
                    Leaf::Const(c) => t.b.ins().f64const(c),
                };
                let at = t.addr(dst, IntVal::Ssa(i), IntVal::Const(1));
                t.store(x, at);
                Ok(Vec::new())
            })?;
        }
        Ok(true)
    }

    /// Zero the elements of `p` from `from` to its capacity (none if `from` is past it);
    /// `from_dim` is `from`'s `Dim` if it is exactly that.
    pub(super) fn pad(&mut self, p: &Arr, from: IntVal, from_dim: Option<Dim>) -> JitResult<()> {
        if from == p.len {
            return Ok(());
        }
        let from = if Self::at_most((from, from_dim), (p.len, p.stat())) {
            from
        } else {
            self.umin(from, p.len)
        };
        let n = self.isub(p.len, from);
        self.loop_(n, false, Vec::new(), &mut |t, j, _| {
            let i = t.iadd_value(from, j);
            let dst = t.place_elem(p, i)?;
            t.zero(&dst)?;
            Ok(Vec::new())
        })?;
        Ok(())
    }

    fn zero(&mut self, p: &Place) -> JitResult<()> {
        match p {
            Place::Reg => Ok(()),
            Place::Real(addr) => {
                let z = self.b.ins().f64const(0.0);
                self.store(z, *addr);
                Ok(())
            }
            Place::Tuple(ps) => ps.iter().try_for_each(|p| self.zero(p)),
            // Zeros added change nothing.
            Place::AddTo(_) => Ok(()),
            Place::Arr(a) => {
                let a = a.clone();
                self.pad(&a, IntVal::Const(0), None)
            }
        }
    }

    /// Evaluate the maps inside `v`, so that its elements can be read more than once.
    pub(super) fn force(&mut self, v: Val) -> JitResult<Val> {
        Ok(match v {
            Val::Real(_) | Val::Bool(_) => v,
            Val::Tuple(items) => Val::Tuple(
                items
                    .iter()
                    .map(|x| self.force(x.clone()))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            Val::Arr(a) => match a.kind {
                // An iota is read as often as needed: nothing to compute.
                Kind::Mem { .. } | Kind::Fill { .. } | Kind::Iota { .. } => Val::Arr(a),
                Kind::Map { .. } | Kind::Map2 { .. } => {
                    let copies = copied_columns(self.arena, &a);
                    if copies.is_empty() {
                        let p = self.alloc(&a.shape)?;
                        return self.write_arr(&a, &p);
                    }
                    // The columns that copy an array in memory are that array, not stored:
                    // their elements are written to the sink, then read from the source.
                    let paths: Vec<Vec<usize>> = copies.iter().map(|(q, ..)| q.clone()).collect();
                    let p = self.alloc_without(&a.shape, &paths)?;
                    let Val::Arr(w) = self.write_arr(&a, &p)? else {
                        return internal("a map was written as no array");
                    };
                    let Kind::Mem { layout, holds } = &w.kind else {
                        return internal("a map was written outside memory");
                    };
                    let mut layout = layout.clone();
                    let mut holds = holds.clone();
                    for (q, column, kept) in &copies {
                        layout = super::memory::with_column(&layout, q, column)?;
                        holds = concat_holds(&holds, kept);
                    }
                    let kind = Kind::Mem { layout, holds };
                    Val::Arr(self.arr(w.len, &w.shape, w.stat(), kind))
                }
                Kind::Scan(_) => {
                    let p = self.alloc(&a.shape)?;
                    self.write_arr(&a, &p)?
                }
                // The source computed; the pad stays a view of it.
                Kind::Pad(ref p) => {
                    let src = super::expect_arr(self.force(Val::Arr(p.src.clone()))?)?;
                    let kind = Kind::Pad(Rc::new(crate::value::Pad {
                        src,
                        fill: p.fill.clone(),
                        at_end: p.at_end,
                    }));
                    Val::Arr(self.arr(a.len, &a.shape, a.stat(), kind))
                }
            },
        })
    }

    /// `v` with every array in memory, the ones not yet there written to buffers of shape
    /// `s` (the `k`-th array of the value to `bufs[k]`, allocated on first need).
    pub(super) fn in_memory(
        &mut self,
        v: Val,
        s: &SShape,
        bufs: &mut Vec<Option<Rc<Arr>>>,
        k: &mut usize,
    ) -> JitResult<Val> {
        Ok(match (v, s) {
            (v @ (Val::Real(_) | Val::Bool(_)), _) => v,
            (Val::Tuple(items), SShape::Tuple(ss)) if items.len() == ss.len() => Val::Tuple(
                items
                    .iter()
                    .zip(ss.iter())
                    .map(|(x, s)| self.in_memory(x.clone(), s, bufs, k))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Val::Arr(a), SShape::Arr(sa)) => {
                let idx = *k;
                *k += 1;
                if matches!(a.kind, Kind::Mem { .. }) {
                    return Ok(Val::Arr(a));
                }
                if bufs.len() <= idx {
                    bufs.resize(idx + 1, None);
                }
                let p = match &bufs[idx] {
                    Some(p) => p.clone(),
                    None => {
                        let p = self.alloc(sa)?;
                        bufs[idx] = Some(p.clone());
                        p
                    }
                };
                self.write_arr(&a, &p)?
            }
            _ => return internal("a value does not match its shape"),
        })
    }
}

/// Whether the in-memory array `a` is already in `p` (it was computed there).
pub(super) fn in_place(a: &Arr, p: &Arr) -> bool {
    match (&a.kind, &p.kind) {
        (Kind::Mem { layout: from, .. }, Kind::Mem { layout: to, .. }) => from == to,
        _ => false,
    }
}

/// Pair the leaves of two layouts that place the elements identically (equal strides and
/// inner lengths), as (source, destination base, reals per element).
fn same_layout(src: &Layout, dst: &Layout, out: &mut Vec<(Leaf, Value, IntVal)>) -> bool {
    match (src, dst) {
        (
            Layout::Real {
                base: a,
                strides: sa,
            },
            Layout::Real {
                base: b,
                strides: sb,
            },
        ) => match sa.first() {
            Some(&row) if sa == sb => {
                out.push((Leaf::Mem(*a), *b, row));
                true
            }
            _ => false,
        },
        (Layout::Tuple(xs), Layout::Tuple(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .zip(ys.iter())
                    .all(|(x, y)| same_layout(x, y, out))
        }
        (Layout::Array { len: l1, elem: e1 }, Layout::Array { len: l2, elem: e2 }) => {
            l1 == l2 && same_layout(e1, e2, out)
        }
        _ => false,
    }
}

/// Pair the leaves of a fill's element with a destination layout whose inner arrays have
/// the fill's lengths.
fn fill_layout(fill: &FillElem, dst: &Layout, out: &mut Vec<(Leaf, Value, IntVal)>) -> bool {
    match (fill, dst) {
        (FillElem::Real(c), Layout::Real { base, strides }) => match strides.first() {
            Some(&row) => {
                out.push((Leaf::Const(*c), *base, row));
                true
            }
            None => false,
        },
        (FillElem::Tuple(xs), Layout::Tuple(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .zip(ys.iter())
                    .all(|(x, y)| fill_layout(x, y, out))
        }
        (
            FillElem::Array {
                len: l1, elem: e1, ..
            },
            Layout::Array { len: l2, elem: e2 },
        ) => l1 == l2 && fill_layout(e1, e2, out),
        _ => false,
    }
}

/// The columns of the elements of `a`, an unevaluated `map` or `map2`, that are copies of
/// a column of an array in memory: the element's component at a path is a parameter of
/// the function, or a component of one, whose source holds it in memory (directly, or
/// through a map that again copies it: a zip), or a tuple of such. Each with the source's
/// column (its layout) and the buffers that keep it (`holds`). Hoisting makes such maps:
/// `map2 (m, q. ((m, q), map exp q)) means Q` keeps the rows of `means` and `Q` beside
/// what it computes, which need not be copied.
fn copied_columns(arena: &unfad_syntax::Arena, a: &Arr) -> Vec<(Vec<usize>, Layout, Holds)> {
    let f = match &a.kind {
        Kind::Map { f, .. } | Kind::Map2 { f, .. } => *f,
        _ => return Vec::new(),
    };
    let Some((_, body)) = arena.lambda_parts(f) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut path = Vec::new();
    copies_in(arena, a, body, &mut path, &mut out);
    out
}

/// The copied columns ([`copied_columns`]) of `a` at `path` (whose component of the
/// function's result is `e`) and below: the whole component if it is copied, else those
/// of its items if it is a tuple. The whole element is never one (the map is then a copy).
fn copies_in(
    arena: &unfad_syntax::Arena,
    a: &Arr,
    e: ExprId,
    path: &mut Vec<usize>,
    out: &mut Vec<(Vec<usize>, Layout, Holds)>,
) {
    if !path.is_empty() {
        if let Some((column, holds)) = column_in(arena, a, path) {
            out.push((path.clone(), column, holds));
            return;
        }
    }
    if let Node::Tuple(l) = arena[e] {
        for (k, &item) in arena.exprs(l).iter().enumerate() {
            path.push(k);
            copies_in(arena, a, item, path, out);
            path.pop();
        }
    }
}

/// The parameter `e` is, or is a component of (`π_i ... p`), with the path to that
/// component (`within`, outermost first).
fn parameter_of(
    arena: &unfad_syntax::Arena,
    params: &[Var],
    e: ExprId,
    within: &mut Vec<usize>,
) -> Option<usize> {
    match arena[e] {
        Node::Var(v) => params.iter().position(|&p| p == v),
        Node::Proj(i, inner) => {
            let j = parameter_of(arena, params, inner, within)?;
            within.push(i as usize);
            Some(j)
        }
        _ => None,
    }
}

/// The layout of the column at `path` of the elements of `a`, if it lies in memory as it
/// is: a component of an in-memory array's layout, or, for an unevaluated map, the column
/// its function copies there from a source (a parameter or a component of one), or a tuple
/// of such columns.
fn column_in(arena: &unfad_syntax::Arena, a: &Arr, path: &[usize]) -> Option<(Layout, Holds)> {
    let (f, srcs): (ExprId, Vec<&Arr>) = match &a.kind {
        Kind::Mem { layout, holds } => {
            let mut lay = layout;
            for &k in path {
                match lay {
                    Layout::Tuple(items) => lay = items.get(k)?,
                    _ => return None,
                }
            }
            return Some((lay.clone(), holds.clone()));
        }
        Kind::Map { f, src, .. } => (*f, vec![&**src]),
        Kind::Map2 { f, a, b, .. } => (*f, vec![&**a, &**b]),
        _ => return None,
    };
    let (params, body) = arena.lambda_parts(f)?;
    // The function's component at `path`, as far as its result is written as tuples.
    let mut e = body;
    let mut rest = path;
    while let (Node::Tuple(l), Some((&k, tail))) = (arena[e], rest.split_first()) {
        e = *arena.exprs(l).get(k)?;
        rest = tail;
    }
    if let Node::Tuple(l) = arena[e] {
        let mut columns = Vec::new();
        let mut holds: Holds = Vec::new().into();
        for k in 0..l.len() {
            let mut sub = path.to_vec();
            sub.push(k);
            let (c, h) = column_in(arena, a, &sub)?;
            columns.push(c);
            holds = concat_holds(&holds, &h);
        }
        return Some((Layout::Tuple(columns.into()), holds));
    }
    let mut within = Vec::new();
    let j = parameter_of(arena, params, e, &mut within)?;
    within.extend_from_slice(rest);
    column_in(arena, srcs.get(j)?, &within)
}
