//! Forward mode: the tangent transformation of first-order terms.
//!
//! Every variable of ground type `τ` that a derivative flows through gets a tangent
//! variable of the same type (the tangent of an int is the int 0), and every term `e`
//! becomes the pair of its value and its tangent, the directional derivative of `e` in the
//! direction the tangents of the function's parameters give. This is dual numbers as a
//! source transformation, one tangent per real, for the whole first-order language: the
//! Source constructs users write, and everything an optimized gradient is made of (scans,
//! shifts, `zeros_like`, `scatter_add`, the accumulations), so that forward mode applied to
//! an optimized gradient gives Hessian-vector products (forward over reverse,
//! [`crate::hessian_vector`]).
//!
//! The output is in A-normal form where it matters: the value of every compound subterm is
//! bound to a variable before its tangent reads it, so the tangent never recomputes the
//! value (`let y = exp(x) in let dy = y * dx`), and the term is linear in the input. The
//! optimizer then removes the bindings that only rename.
//!
//! Tangents are *symbolic zeros* where no derivative flows ([`Tangent::Zero`]): ints,
//! conditions, lengths, `zeros_like`, and everything computed from variables without
//! tangents. Zeros are only made into terms where a value needs a whole tangent (one
//! component of a tuple, one branch of an `if`, a loop's state), from the value itself
//! (`zeros_like`). A zero tangent is therefore never multiplied by a partial derivative,
//! so `pow(x, 2)` at `x < 0` has a finite tangent, as in the interpreter's dual numbers.
//!
//! Array operations run over the pairs of values and tangents: `map f A` becomes a `map`
//! whose function returns `(value, tangent)`, over `A` zipped with its tangent, and its
//! two columns are the value and the tangent. A `reduce` whose operator is a sum (`+`,
//! `map2 +`, componentwise on tuples) is linear, so its tangent is the same reduction of
//! the tangents; any other operator reduces pairs, by the tangent of the operator, which
//! is associative when the operator is. A `foldl` that only scatters into its accumulator
//! (reverse mode's accumulation) keeps that form for its tangent, so the code generator
//! still updates one buffer in place.
//!
//! The intensional choices are those of the derivative table and of the interpreter's
//! dual numbers: `abs'(0) = 0`, `max` and `min` follow their first operand on ties, and
//! the derivative of `pow` in its exponent is 0 at base 0.

use unfad_syntax::fast_hash::FastMap as HashMap;

use unfad_syntax::{Arena, BinOp, CmpOp, ExprId, Func, Node, Type, UnOp, Var};

use crate::build::{self, component};
use crate::derivatives::{binary_partials, unary_partial_with};
use crate::elem::{self, lambda_parts};
use crate::error::{internal, AdError};
use crate::ground;

/// The tangent of a term: structurally zero, or the term computing it (an atom once
/// bound).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tangent {
    Zero,
    Of(ExprId),
}

impl Tangent {
    fn is_zero(self) -> bool {
        self == Tangent::Zero
    }
}

/// The destructuring `let (x, dx) = p` of a pair parameter `p`, put around a body.
type PairParam = Option<(Vec<Var>, Var)>;

/// A binding of the output, in order.
enum Binding {
    Let(Var, ExprId),
    Tuple(Vec<Var>, ExprId),
}

/// The state of one transformation: the tangents of the variables in scope, and the
/// blocks of bindings being emitted (one per open scope: the function, a branch, the body
/// of an array operation).
struct Forward<'a> {
    a: &'a mut Arena,
    tangents: HashMap<Var, ExprId>,
    blocks: Vec<Vec<Binding>>,
}

/// The tangent transformation of `func` with respect to the parameters `wrt`: a function
/// of `func`'s parameters followed by one tangent per parameter of `wrt` (of the same
/// type, named `d<name>`), returning `(value, tangent)`, the tangent having the type of
/// the value. The other parameters are held fixed (their tangents are zero).
///
/// `func` must be first-order: lambdas only as the function arguments of array operations
/// (a Source function, or an optimized Target function).
pub fn forward(arena: &mut Arena, func: &Func, wrt: &[usize]) -> Result<Func, AdError> {
    elem::retype(arena, func.body)?;
    let types = func.param_types(arena);
    let mut fw = Forward {
        a: arena,
        tangents: HashMap::default(),
        blocks: vec![Vec::new()],
    };
    let mut params = func.params.clone();
    for &i in wrt {
        let Some(&p) = func.params.get(i) else {
            return Err(AdError::Request(format!(
                "there is no parameter {i} to take a tangent of"
            )));
        };
        let name = format!("d{}", fw.a.var_name(p));
        let dp = fw.a.fresh_var(&name, Some(types[i].tangent()));
        params.push(dp);
        if types[i].has_reals() {
            let e = fw.a.var(dp);
            fw.tangents.insert(p, e);
        }
    }
    let (value, tangent) = fw.expr(func.body)?;
    let value = fw.atom("v", &func.ret, value);
    let tangent = fw.whole(tangent, &func.ret, value)?;
    let pair = fw.a.tuple(&[value, tangent]);
    let body = fw.close(pair);
    elem::retype(arena, body)?;
    Ok(Func {
        name: func.name.clone(),
        params,
        body,
        ret: Type::tuple(vec![func.ret.clone(), func.ret.tangent()]),
    })
}

impl Forward<'_> {
    /// The type of a node of the input (typed by the caller's check).
    fn ty(&self, e: ExprId) -> Result<Type, AdError> {
        match self.a.type_of(e) {
            Some(t) => Ok(t.clone()),
            None => Err(AdError::IllTyped {
                expr: e,
                span: self.a.span(e),
                message: "forward mode met a term without a type".into(),
            }),
        }
    }

    fn push(&mut self, b: Binding) {
        self.blocks.last_mut().expect("a block is open").push(b);
    }

    /// `e` itself if it is an atom, else a fresh variable (of type `ty`) bound to it.
    fn atom(&mut self, hint: &str, ty: &Type, e: ExprId) -> ExprId {
        if build::is_atom(self.a, e) || matches!(self.a[e], Node::Bool(_)) {
            return e;
        }
        let v = self.a.fresh_var(hint, Some(ty.clone()));
        self.push(Binding::Let(v, e));
        self.a.var(v)
    }

    /// A tangent bound to an atom.
    fn tangent_atom(&mut self, ty: &Type, t: Tangent) -> Tangent {
        match t {
            Tangent::Zero => Tangent::Zero,
            Tangent::Of(e) => Tangent::Of(self.atom("d", &ty.tangent(), e)),
        }
    }

    /// The tangent as a term: zeros shaped like `value` (an atom of type `ty`) for a
    /// symbolic zero.
    fn whole(&mut self, t: Tangent, ty: &Type, value: ExprId) -> Result<ExprId, AdError> {
        match t {
            Tangent::Of(e) => Ok(e),
            Tangent::Zero => ground::zero(self.a, ty, value),
        }
    }

    fn open(&mut self) {
        self.blocks.push(Vec::new());
    }

    /// Close the innermost block around `result`.
    fn close(&mut self, result: ExprId) -> ExprId {
        let block = self.blocks.pop().expect("a block is open");
        block.into_iter().rev().fold(result, |acc, b| match b {
            Binding::Let(v, e) => self.a.let_(v, e, acc),
            Binding::Tuple(vs, e) => self.a.let_tuple(&vs, e, acc),
        })
    }

    /// Close the innermost block, discarding it (its term is not used).
    fn discard(&mut self) {
        self.blocks.pop();
    }

    /// `(value, tangent)` of `e`. The value is the input's node where nothing changed.
    fn expr(&mut self, e: ExprId) -> Result<(ExprId, Tangent), AdError> {
        unfad_syntax::with_stack(|| self.expr_inner(e))
    }

    fn expr_inner(&mut self, e: ExprId) -> Result<(ExprId, Tangent), AdError> {
        use Node::*;
        let node = self.a[e];
        let out = match node {
            Const(_) | Bool(_) => (e, Tangent::Zero),
            Var(v) => match self.tangents.get(&v) {
                Some(&t) => (e, Tangent::Of(t)),
                None => (e, Tangent::Zero),
            },
            // No derivative flows through conditions, lengths, shapes and ints: the
            // input's own term is the value.
            Cmp(..) | Not(_) | And(..) | Or(..) | Len(_) | ZerosLike(_) | OnesLike(_) | Iota(_) => {
                (e, Tangent::Zero)
            }
            Let(x, e1, e2) => {
                let (v1, t1) = self.expr(e1)?;
                self.push(Binding::Let(x, v1));
                self.bind_tangent(x, t1)?;
                return self.expr(e2);
            }
            LetTuple(xs, e1, e2) => {
                let xs = self.a.vars_of(xs).to_vec();
                let (v1, t1) = self.expr(e1)?;
                self.push(Binding::Tuple(xs.clone(), v1));
                if let Tangent::Of(t) = t1 {
                    let ty = self.ty(e1)?;
                    let t = self.atom("d", &ty.tangent(), t);
                    for (i, &x) in xs.iter().enumerate() {
                        let c = component(self.a, t, i);
                        self.bind_tangent(x, Tangent::Of(c))?;
                    }
                }
                return self.expr(e2);
            }
            Tuple(items) | Array(items) => {
                let items = self.a.exprs(items).to_vec();
                self.items(e, &items, matches!(node, Array(_)))?
            }
            Proj(i, x) => {
                let (v, t) = self.expr(x)?;
                let value = self.a.rebuild(e, Proj(i, v));
                let t = match t {
                    Tangent::Zero => Tangent::Zero,
                    Tangent::Of(t) => Tangent::Of(self.a.proj(i, t)),
                };
                (value, t)
            }
            Op1(op, x) => self.unary(e, op, x)?,
            Op2(op, x, y) => self.binary(e, op, x, y)?,
            If(c, e1, e2) => self.conditional(e, c, e1, e2)?,
            Index(arr, i) => {
                let (va, ta) = self.expr(arr)?;
                let value = if ta.is_zero() {
                    self.a.rebuild(e, Index(va, i))
                } else {
                    let ty = self.ty(arr)?;
                    let va = self.atom("A", &ty, va);
                    let ity = self.ty(i)?;
                    let i = self.atom("i", &ity, i);
                    let value = self.a.rebuild(e, Index(va, i));
                    let Tangent::Of(t) = ta else { unreachable!() };
                    let dt = self.a.rebuild(e, Index(t, i));
                    return Ok((value, Tangent::Of(dt)));
                };
                (value, Tangent::Zero)
            }
            ScatterAdd(z, positions, values) => self.scatter_add(e, z, positions, values)?,
            Shift1L(x) | Shift1R(x) => {
                let (v, t) = self.expr(x)?;
                let shift = |x| match node {
                    Shift1L(_) => Shift1L(x),
                    _ => Shift1R(x),
                };
                let value = self.a.rebuild(e, shift(v));
                let t = match t {
                    Tangent::Zero => Tangent::Zero,
                    Tangent::Of(t) => Tangent::Of(self.a.add(shift(t))),
                };
                (value, t)
            }
            Map(f, x) => self.map(e, f, &[x])?,
            Map2(f, x, y) => self.map(e, f, &[x, y])?,
            Reduce(f, z, x) => self.reduce(e, f, z, x)?,
            Foldl(f, z, x) | Scanl(f, z, x) | Scanr(f, z, x) => self.fold(e, f, z, x)?,
            Derivative(..) => {
                return Err(AdError::Unsupported {
                    expr: e,
                    span: self.a.span(e),
                    message: "a `grad` or `jvp` inside the program must be expanded \
                              (unfad_ad::expand) before forward mode"
                        .into(),
                })
            }
            Lambda(..) | App(..) | Call(..) => {
                return Err(AdError::Unsupported {
                    expr: e,
                    span: self.a.span(e),
                    message: "forward mode takes first-order terms: a function value \
                              or a call is left"
                        .into(),
                })
            }
        };
        // Ints carry no derivative, whatever their term.
        if !out.1.is_zero() && !self.ty(e)?.has_reals() {
            return Ok((out.0, Tangent::Zero));
        }
        Ok(out)
    }

    /// Bind the tangent of the variable `x` (bound to its value just before).
    fn bind_tangent(&mut self, x: Var, t: Tangent) -> Result<(), AdError> {
        if let Tangent::Of(t) = t {
            let ty = self
                .a
                .var_type(x)
                .cloned()
                .ok_or_else(|| AdError::Internal("an untyped binder".into()))?;
            if !ty.has_reals() {
                return Ok(());
            }
            let name = format!("d{}", self.a.var_name(x));
            let t = if build::is_atom(self.a, t) {
                t
            } else {
                let dx = self.a.fresh_var(&name, Some(ty.tangent()));
                self.push(Binding::Let(dx, t));
                self.a.var(dx)
            };
            self.tangents.insert(x, t);
        }
        Ok(())
    }

    /// A tuple or array literal: the literal of the values, and of the tangents when one
    /// of them is not zero.
    fn items(
        &mut self,
        e: ExprId,
        items: &[ExprId],
        array: bool,
    ) -> Result<(ExprId, Tangent), AdError> {
        let mut parts = Vec::with_capacity(items.len());
        for &item in items {
            let (v, t) = self.expr(item)?;
            parts.push((v, t, self.ty(item)?));
        }
        let literal = |a: &mut Arena, xs: &[ExprId]| {
            let l = a.expr_list(xs);
            if array {
                a.rebuild(e, Node::Array(l))
            } else {
                a.rebuild(e, Node::Tuple(l))
            }
        };
        if parts.iter().all(|p| p.1.is_zero()) {
            let values: Vec<ExprId> = parts.iter().map(|p| p.0).collect();
            return Ok((literal(self.a, &values), Tangent::Zero));
        }
        // Values bound to atoms, which the zeros of the tangent are shaped by.
        let mut values = Vec::with_capacity(parts.len());
        let mut tangents = Vec::with_capacity(parts.len());
        for (v, t, ty) in parts {
            let v = self.atom("x", &ty, v);
            values.push(v);
            tangents.push(self.whole(t, &ty, v)?);
        }
        let value = literal(self.a, &values);
        let t = if array {
            self.a.array(&tangents)
        } else {
            self.a.tuple(&tangents)
        };
        Ok((value, Tangent::Of(t)))
    }

    fn unary(&mut self, e: ExprId, op: UnOp, x: ExprId) -> Result<(ExprId, Tangent), AdError> {
        let (vx, tx) = self.expr(x)?;
        let Tangent::Of(dx) = tx else {
            return Ok((self.a.rebuild(e, Node::Op1(op, vx)), Tangent::Zero));
        };
        if op == UnOp::ToReal {
            return Ok((self.a.rebuild(e, Node::Op1(op, vx)), Tangent::Zero));
        }
        let vx = self.atom("x", &Type::Real, vx);
        let value = self.a.rebuild(e, Node::Op1(op, vx));
        let y = self.atom("y", &Type::Real, value);
        let a = &mut *self.a;
        // The derivative from the value where it is cheaper (`exp' = exp`, `tanh' = 1 -
        // tanh²`): the table reads the bound value `y` instead of computing it again.
        let t = match op {
            UnOp::Neg => a.op1(UnOp::Neg, dx),
            UnOp::Log => build::div(a, dx, vx),
            _ => {
                let d = unary_partial_with(a, op, vx, Some(y));
                build::mul(a, d, dx)
            }
        };
        Ok((y, Tangent::Of(t)))
    }

    fn binary(
        &mut self,
        e: ExprId,
        op: BinOp,
        x: ExprId,
        y: ExprId,
    ) -> Result<(ExprId, Tangent), AdError> {
        let (vx, tx) = self.expr(x)?;
        let (vy, ty) = self.expr(y)?;
        if (tx.is_zero() && ty.is_zero()) || matches!(op, BinOp::IntDiv | BinOp::Rem) {
            return Ok((self.a.rebuild(e, Node::Op2(op, vx, vy)), Tangent::Zero));
        }
        let vx = self.atom("x", &Type::Real, vx);
        let vy = self.atom("y", &Type::Real, vy);
        let value = self.a.rebuild(e, Node::Op2(op, vx, vy));
        let (dx, dy) = match (tx, ty) {
            (Tangent::Of(a), Tangent::Of(b)) => (Some(a), Some(b)),
            (Tangent::Of(a), Tangent::Zero) => (Some(a), None),
            (Tangent::Zero, Tangent::Of(b)) => (None, Some(b)),
            (Tangent::Zero, Tangent::Zero) => unreachable!(),
        };
        let a = &mut *self.a;
        let t = match op {
            BinOp::Add => match (dx, dy) {
                (Some(p), Some(q)) => build::add(a, p, q),
                (Some(p), None) | (None, Some(p)) => p,
                (None, None) => unreachable!(),
            },
            BinOp::Sub => match (dx, dy) {
                (Some(p), Some(q)) => build::sub(a, p, q),
                (Some(p), None) => p,
                (None, Some(q)) => a.op1(UnOp::Neg, q),
                (None, None) => unreachable!(),
            },
            BinOp::Mul => {
                let l = dx.map(|p| build::mul(a, p, vy));
                let r = dy.map(|q| build::mul(a, vx, q));
                sum(a, l, r)
            }
            BinOp::Max | BinOp::Min => {
                let c = if op == BinOp::Max {
                    CmpOp::Ge
                } else {
                    CmpOp::Le
                };
                let first = build::cmp(a, c, vx, vy);
                let p = dx.unwrap_or_else(|| a.constant(0.0));
                let q = dy.unwrap_or_else(|| a.constant(0.0));
                build::if_(a, first, p, q)
            }
            _ => {
                let (px, py) = binary_partials(a, op, vx, vy);
                let l = dx.map(|p| build::mul(a, px, p));
                let r = dy.map(|q| build::mul(a, py, q));
                sum(a, l, r)
            }
        };
        Ok((value, Tangent::Of(t)))
    }

    /// `if c then e1 else e2`: the pair of value and tangent from each branch, when a
    /// tangent flows out of one of them.
    fn conditional(
        &mut self,
        e: ExprId,
        c: ExprId,
        e1: ExprId,
        e2: ExprId,
    ) -> Result<(ExprId, Tangent), AdError> {
        let ty = self.ty(e)?;
        // Each branch in a block of its own, kept open until we know whether a tangent
        // flows out of either.
        let mut branches = Vec::with_capacity(2);
        for b in [e1, e2] {
            self.open();
            let (v, t) = self.expr(b)?;
            let v = self.atom("v", &ty, v);
            let t = self.tangent_atom(&ty, t);
            let block = self.blocks.pop().expect("a block is open");
            branches.push((block, v, t));
        }
        let flows = branches.iter().any(|b| !b.2.is_zero());
        let mut made = Vec::with_capacity(2);
        for (block, v, t) in branches {
            self.blocks.push(block);
            let result = if flows {
                let t = self.whole(t, &ty, v)?;
                self.a.tuple(&[v, t])
            } else {
                v
            };
            made.push(self.close(result));
        }
        let choice = self.a.rebuild(e, Node::If(c, made[0], made[1]));
        if !flows {
            return Ok((choice, Tangent::Zero));
        }
        let v = self.a.fresh_var("v", Some(ty.clone()));
        let dv = self.a.fresh_var("dv", Some(ty.tangent()));
        self.push(Binding::Tuple(vec![v, dv], choice));
        let (v, dv) = (self.a.var(v), self.a.var(dv));
        Ok((v, Tangent::Of(dv)))
    }

    /// `scatter_add(Z, I, V)` is linear in `Z` and `V`: its tangent scatters `V`'s tangent
    /// into `Z`'s at the same positions.
    fn scatter_add(
        &mut self,
        e: ExprId,
        z: ExprId,
        positions: ExprId,
        values: ExprId,
    ) -> Result<(ExprId, Tangent), AdError> {
        let (vz, tz) = self.expr(z)?;
        let (vv, tv) = self.expr(values)?;
        if tz.is_zero() && tv.is_zero() {
            let value = self.a.rebuild(e, Node::ScatterAdd(vz, positions, vv));
            return Ok((value, Tangent::Zero));
        }
        let zty = self.ty(z)?;
        let vz = self.atom("Z", &zty, vz);
        let Tangent::Of(dv) = tv else {
            let value = self.a.rebuild(e, Node::ScatterAdd(vz, positions, vv));
            return Ok((value, tz));
        };
        let ity = self.ty(positions)?;
        let positions = self.atom("I", &ity, positions);
        let value = self.a.rebuild(e, Node::ScatterAdd(vz, positions, vv));
        let dz = self.whole(tz, &zty, vz)?;
        let t = self.a.rebuild(e, Node::ScatterAdd(dz, positions, dv));
        Ok((value, Tangent::Of(t)))
    }

    /// The operands of an array operation: their values (atoms) and tangents (atoms).
    fn arrays(&mut self, xs: &[ExprId]) -> Result<Vec<(ExprId, Tangent, Type)>, AdError> {
        let mut out = Vec::with_capacity(xs.len());
        for &x in xs {
            let (v, t) = self.expr(x)?;
            let ty = self.ty(x)?;
            let v = self.atom("A", &ty, v);
            let t = self.tangent_atom(&ty, t);
            let elem = match ty {
                Type::Array(_, elem) => (*elem).clone(),
                t => return internal(format!("an array operation over a value of type `{t}`")),
            };
            out.push((v, t, elem));
        }
        Ok(out)
    }

    /// The initial value of a fold or reduction (its value and tangent as atoms, and its
    /// type) and its array operand.
    #[allow(clippy::type_complexity)]
    fn fold_operands(
        &mut self,
        z: ExprId,
        x: ExprId,
    ) -> Result<(ExprId, Tangent, Type, (ExprId, Tangent, Type)), AdError> {
        let (vz, tz) = self.expr(z)?;
        let zty = self.ty(z)?;
        let vz = self.atom("z", &zty, vz);
        let tz = self.tangent_atom(&zty, tz);
        let operand = self.arrays(&[x])?.remove(0);
        Ok((vz, tz, zty, operand))
    }

    /// The element parameter of a function over `(value, tangent)` pairs: for an operand
    /// with a tangent, a pair parameter destructured into the original parameter `x` and a
    /// fresh tangent `dx` at the top of the body; otherwise `x` itself. Returns the
    /// parameter, the array to run over, and the destructuring to put around the body.
    fn element_param(
        &mut self,
        x: Var,
        (value, tangent, elem): &(ExprId, Tangent, Type),
    ) -> Result<(Var, ExprId, PairParam), AdError> {
        match tangent {
            Tangent::Zero => Ok((x, *value, None)),
            Tangent::Of(t) => {
                let name = format!("d{}", self.a.var_name(x));
                let dx = self.a.fresh_var(&name, Some(elem.tangent()));
                let dxe = self.a.var(dx);
                self.tangents.insert(x, dxe);
                let pair = Type::tuple(vec![elem.clone(), elem.tangent()]);
                let p = self.a.fresh_var("p", Some(pair));
                let zipped = elem::zip(self.a, *value, *t, ("x", elem), ("dx", &elem.tangent()))?;
                Ok((p, zipped, Some((vec![x, dx], p))))
            }
        }
    }

    /// Put the destructurings of pair parameters around a body.
    fn destructure(&mut self, body: ExprId, pairs: Vec<PairParam>) -> ExprId {
        pairs
            .into_iter()
            .rev()
            .flatten()
            .fold(body, |acc, (xs, p)| {
                let pe = self.a.var(p);
                self.a.let_tuple(&xs, pe, acc)
            })
    }

    /// `map f A` and `map2 f A B`: one loop over the operands zipped with their tangents,
    /// whose function returns `(value, tangent)`; its two columns are the result.
    fn map(&mut self, e: ExprId, f: ExprId, xs: &[ExprId]) -> Result<(ExprId, Tangent), AdError> {
        let operands = self.arrays(xs)?;
        let (ps, body) = lambda_parts(self.a, f)?;
        let ty = self.ty(e)?;
        let Type::Array(_, out_elem) = &ty else {
            return internal("a map whose type is not an array");
        };
        let out_elem = (**out_elem).clone();
        let mut params = Vec::with_capacity(ps.len());
        let mut arrays = Vec::with_capacity(ps.len());
        let mut pairs = Vec::with_capacity(ps.len());
        self.open();
        for (&x, operand) in ps.iter().zip(&operands) {
            let (p, arr, pair) = self.element_param(x, operand)?;
            params.push(p);
            arrays.push(arr);
            pairs.push(pair);
        }
        let (vb, tb) = self.expr(body)?;
        let values: Vec<ExprId> = operands.iter().map(|o| o.0).collect();
        let Tangent::Of(tb) = tb else {
            // No tangent flows out of the body: the input's function over the values.
            self.discard();
            let node = match values[..] {
                [x] => Node::Map(f, x),
                [x, y] => Node::Map2(f, x, y),
                _ => return internal("a map of more than two arrays"),
            };
            return Ok((self.a.rebuild(e, node), Tangent::Zero));
        };
        let vb = self.atom("v", &out_elem, vb);
        let pair = self.a.tuple(&[vb, tb]);
        let inner = self.close(pair);
        let inner = self.destructure(inner, pairs);
        let lam = self.a.lambda(&params, inner);
        let node = match arrays[..] {
            [x] => Node::Map(lam, x),
            [x, y] => Node::Map2(lam, x, y),
            _ => return internal("a map of more than two arrays"),
        };
        let pair = Type::tuple(vec![out_elem.clone(), out_elem.tangent()]);
        let r = self.a.rebuild(e, node);
        self.columns(r, &Type::array(array_size(&ty), pair))
    }

    /// The value and tangent of an array of `(value, tangent)` pairs (of type `ty`): its
    /// two columns, from the array bound once.
    fn columns(&mut self, pairs: ExprId, ty: &Type) -> Result<(ExprId, Tangent), AdError> {
        let r = self.atom("R", ty, pairs);
        let value = elem::column(self.a, r, 0)?;
        let tangent = elem::column(self.a, r, 1)?;
        Ok((value, Tangent::Of(tangent)))
    }

    /// `reduce f z A`. The value is the input's reduction (so that its evaluation order,
    /// and bits, stay those of the primal); the tangent is the same reduction of the
    /// tangents when `f` is a sum, else a reduction of pairs by `f`'s tangent.
    fn reduce(
        &mut self,
        e: ExprId,
        f: ExprId,
        z: ExprId,
        x: ExprId,
    ) -> Result<(ExprId, Tangent), AdError> {
        let (vz, tz, zty, operand) = self.fold_operands(z, x)?;
        let (va, ta, elem) = operand.clone();
        let value = self.a.rebuild(e, Node::Reduce(f, vz, va));
        let value = self.atom("r", &zty, value);
        let captured = self
            .a
            .free_vars(f)
            .into_iter()
            .any(|v| self.tangents.contains_key(&v));
        if tz.is_zero() && ta.is_zero() && !captured {
            return Ok((value, Tangent::Zero));
        }
        if is_sum(self.a, f) && !captured {
            let dz = self.whole(tz, &zty, vz)?;
            let da = self.whole(ta, &Type::array(array_size(&self.ty(x)?), elem), va)?;
            let g = self.a.copy_fresh(f);
            let t = self.a.add(Node::Reduce(g, dz, da));
            return Ok((value, Tangent::Of(t)));
        }
        // Pairs, by the operator's tangent, on a copy of the operator (the input's is the
        // value's).
        let g = self.a.copy_fresh(f);
        let (s, t, body) = elem::binary_lambda(self.a, g)?;
        let pair_ty = Type::tuple(vec![elem.clone(), elem.tangent()]);
        let (sp, tp) = (
            self.a.fresh_var("s", Some(pair_ty.clone())),
            self.a.fresh_var("t", Some(pair_ty.clone())),
        );
        let (ds, dt) = (
            self.a.fresh_var("ds", Some(elem.tangent())),
            self.a.fresh_var("dt", Some(elem.tangent())),
        );
        self.open();
        let (dse, dte) = (self.a.var(ds), self.a.var(dt));
        self.tangents.insert(s, dse);
        self.tangents.insert(t, dte);
        let (vb, tb) = self.expr(body)?;
        let vb = self.atom("v", &elem, vb);
        let tb = self.whole(tb, &elem, vb)?;
        let result = self.a.tuple(&[vb, tb]);
        let inner = self.close(result);
        let tpe = self.a.var(tp);
        let inner = self.a.let_tuple(&[t, dt], tpe, inner);
        let spe = self.a.var(sp);
        let inner = self.a.let_tuple(&[s, ds], spe, inner);
        let op = self.a.lambda(&[sp, tp], inner);
        let dz = self.whole(tz, &zty, vz)?;
        let init = self.a.tuple(&[vz, dz]);
        let da = self.whole(ta, &Type::array(array_size(&self.ty(x)?), elem.clone()), va)?;
        let zipped = elem::zip(self.a, va, da, ("x", &elem), ("dx", &elem.tangent()))?;
        let r = self.a.add(Node::Reduce(op, init, zipped));
        let r = self.atom("R", &pair_ty, r);
        let t = self.a.proj(1, r);
        Ok((value, Tangent::Of(t)))
    }

    /// `foldl`, `scanl` and `scanr`: the loop over pairs, its state the pair of the
    /// accumulator and its tangent. A fold that only scatters into its accumulator keeps
    /// that shape for its tangent (see [`Forward::accumulation`]).
    fn fold(
        &mut self,
        e: ExprId,
        f: ExprId,
        z: ExprId,
        x: ExprId,
    ) -> Result<(ExprId, Tangent), AdError> {
        let node = self.a[e];
        if matches!(node, Node::Foldl(..)) {
            if let Some(out) = self.accumulation(e, f, z, x)? {
                return Ok(out);
            }
        }
        let (vz, tz, zty, operand) = self.fold_operands(z, x)?;
        let (ps, body) = lambda_parts(self.a, f)?;
        let (acc, elem_var) = match (node, ps.as_slice()) {
            (Node::Scanr(..), &[x, acc]) => (acc, x),
            (_, &[acc, x]) => (acc, x),
            _ => return internal("a fold's function of other than two parameters"),
        };
        self.open();
        let dacc = self
            .a
            .fresh_var(&format!("d{}", self.a.var_name(acc)), Some(zty.tangent()));
        let dacc_e = self.a.var(dacc);
        self.tangents.insert(acc, dacc_e);
        let (p, arr, pair) = self.element_param(elem_var, &operand)?;
        let (vb, tb) = self.expr(body)?;
        if tb.is_zero() && tz.is_zero() {
            self.discard();
            let node = self.a.rebuild(e, rebuild_fold(node, f, vz, operand.0));
            return Ok((node, Tangent::Zero));
        }
        let vb = self.atom("v", &zty, vb);
        let tb = self.whole(tb, &zty, vb)?;
        let result = self.a.tuple(&[vb, tb]);
        let inner = self.close(result);
        let inner = self.destructure(inner, vec![pair]);
        let state_ty = Type::tuple(vec![zty.clone(), zty.tangent()]);
        let state = self.a.fresh_var("s", Some(state_ty.clone()));
        let se = self.a.var(state);
        let inner = self.a.let_tuple(&[acc, dacc], se, inner);
        let lam = match node {
            Node::Scanr(..) => self.a.lambda(&[p, state], inner),
            _ => self.a.lambda(&[state, p], inner),
        };
        let dz = self.whole(tz, &zty, vz)?;
        let init = self.a.tuple(&[vz, dz]);
        let r = self.a.rebuild(e, rebuild_fold(node, lam, init, arr));
        match node {
            Node::Foldl(..) => {
                let r = self.atom("R", &state_ty, r);
                let value = self.a.proj(0, r);
                let t = self.a.proj(1, r);
                Ok((value, Tangent::Of(t)))
            }
            _ => {
                let ty = Type::array(array_size(&self.ty(e)?), state_ty);
                self.columns(r, &ty)
            }
        }
    }

    /// A fold whose function only scatters into its accumulator (`Arena::accumulation`):
    /// the value is the input's fold, and the tangent a fold of the same shape scattering
    /// the values' tangents into the accumulator's tangent, which the code generator
    /// updates in place as it does the value's. `None` when the fold is not one.
    fn accumulation(
        &mut self,
        e: ExprId,
        f: ExprId,
        z: ExprId,
        x: ExprId,
    ) -> Result<Option<(ExprId, Tangent)>, AdError> {
        // Folds nested in the accumulation take the general rule of folds.
        if self
            .a
            .accumulation(f)
            .and_then(|acc| acc.scatters())
            .is_none()
        {
            return Ok(None);
        }
        let (vz, tz, zty, operand) = self.fold_operands(z, x)?;
        let value = self.a.rebuild(e, Node::Foldl(f, vz, operand.0));
        let value = self.atom("r", &zty, value);
        // The tangent's fold, from a copy of the function.
        let g = self.a.copy_fresh(f);
        let Some(acc) = self.a.accumulation(g) else {
            return internal("a copy of an accumulation is not one");
        };
        let (ps, _) = lambda_parts(self.a, g)?;
        let elem_var = ps[1];
        self.open();
        let (p, arr, pair) = self.element_param(elem_var, &operand)?;
        for &(v, rhs) in &acc.lets {
            let (vr, tr) = self.expr(rhs)?;
            self.push(Binding::Let(v, vr));
            self.bind_tangent(v, tr)?;
        }
        let Some(adds) = acc.scatters() else {
            return internal("a copy of an accumulation of scatters is not one");
        };
        let mut tangents = Vec::with_capacity(adds.len());
        for (pos, vs) in adds {
            let (_, tv) = self.expr(vs)?;
            tangents.push((pos, tv));
        }
        if tz.is_zero() && tangents.iter().all(|(_, tv)| tv.is_zero()) {
            self.discard();
            return Ok(Some((value, Tangent::Zero)));
        }
        let dacc = self.a.fresh_var(
            &format!("d{}", self.a.var_name(acc.acc)),
            Some(zty.tangent()),
        );
        // The tangents' additions, in the value's order (those of zero tangents left out).
        let mut scattered = self.a.var(dacc);
        for (pos, tv) in tangents {
            if let Tangent::Of(dv) = tv {
                scattered = self.a.add(Node::ScatterAdd(scattered, pos, dv));
            }
        }
        let inner = self.close(scattered);
        let inner = self.destructure(inner, vec![pair]);
        let lam = self.a.lambda(&[dacc, p], inner);
        let dz = self.whole(tz, &zty, vz)?;
        let t = self.a.add(Node::Foldl(lam, dz, arr));
        Ok(Some((value, Tangent::Of(t))))
    }
}

/// `l + r` of optional terms (at least one present).
fn sum(a: &mut Arena, l: Option<ExprId>, r: Option<ExprId>) -> ExprId {
    match (l, r) {
        (Some(l), Some(r)) => build::add(a, l, r),
        (Some(t), None) | (None, Some(t)) => t,
        (None, None) => a.constant(0.0),
    }
}

/// The fold node of the same kind as `node` with new children.
fn rebuild_fold(node: Node, f: ExprId, z: ExprId, x: ExprId) -> Node {
    match node {
        Node::Scanl(..) => Node::Scanl(f, z, x),
        Node::Scanr(..) => Node::Scanr(f, z, x),
        _ => Node::Foldl(f, z, x),
    }
}

/// The size of an array type.
fn array_size(ty: &Type) -> unfad_syntax::Size {
    match ty {
        Type::Array(n, _) => n.clone(),
        _ => unfad_syntax::Size::lit(0),
    }
}

/// Whether the operator `f = (s, t. body)` is the sum `+̂` of its parameters: `s + t` (or
/// `t + s`), `map2 (u, v. u + v) s t`, or such sums componentwise on a tuple. Its tangent
/// is then the same operator on the tangents.
fn is_sum(a: &Arena, f: ExprId) -> bool {
    let Some((&[s, t], body)) = a.lambda_parts(f) else {
        return false;
    };
    let (s, t) = (Path::of(s), Path::of(t));
    sum_of(a, body, &s, &t)
}

/// A path from a parameter: the parameter, then projections.
#[derive(Clone, PartialEq)]
struct Path {
    var: Var,
    projections: Vec<u32>,
}

impl Path {
    fn of(var: Var) -> Path {
        Path {
            var,
            projections: Vec::new(),
        }
    }
}

/// The path of `e` if it is a parameter followed by projections.
fn path_of(a: &Arena, e: ExprId) -> Option<Path> {
    match a[e] {
        Node::Var(v) => Some(Path::of(v)),
        Node::Proj(i, x) => {
            let mut p = path_of(a, x)?;
            p.projections.push(i);
            Some(p)
        }
        _ => None,
    }
}

fn sum_of(a: &Arena, e: ExprId, s: &Path, t: &Path) -> bool {
    let is = |x: ExprId, p: &Path| path_of(a, x).as_ref() == Some(p);
    match a[e] {
        Node::Op2(BinOp::Add, x, y) => (is(x, s) && is(y, t)) || (is(x, t) && is(y, s)),
        Node::Map2(g, x, y) if (is(x, s) && is(y, t)) || (is(x, t) && is(y, s)) => {
            match a.lambda_parts(g) {
                Some((&[u, v], body)) => sum_of(a, body, &Path::of(u), &Path::of(v)),
                _ => false,
            }
        }
        Node::Tuple(items) => a.exprs(items).iter().enumerate().all(|(i, &item)| {
            let (mut si, mut ti) = (s.clone(), t.clone());
            si.projections.push(i as u32);
            ti.projections.push(i as u32);
            sum_of(a, item, &si, &ti)
        }),
        _ => false,
    }
}
