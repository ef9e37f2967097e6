//! Type checking with symbolic sizes, for both fragments.
//!
//! Every variable carries its type (unique binders), so the type of a term follows from
//! its subterms alone. The checker records the type of each node it visits in the arena
//! and the type of each variable bound by `let` or by an array operation's binder.
//! Errors point at the offending expression and show both types or sizes.

use crate::fast_hash::FastMap as HashMap;
use crate::fast_hash::FastSet as HashSet;
use std::sync::Arc;

use crate::error::{Error, ErrorKind};
use crate::ops::BinOp;
use crate::size_expr::{Linear, SizeOp};
use crate::span::Span;
use crate::term::{with_stack, Arena, DefId, ExprId, Node, Var};
use crate::types::{Size, Type};

/// Resolves spans to positions and gives the signatures of definitions (a program's
/// `Definitions`, or [`NoSource`]).
pub trait CheckEnv {
    fn error(&self, kind: ErrorKind, span: Span, message: String) -> Error;
    /// Parameter types and (checked) result type of a definition.
    fn signature(&self, d: DefId) -> Option<(Vec<Type>, Type, String)>;
    /// Whether ints and reals may stand for each other where a variable is declared: in
    /// terms the stages generate (whose variables were typed from a subterm alone, and
    /// whose int literals the optimizer may have folded), where it changes no value (ints
    /// are carried as reals); never in the user's program, where `real(i)` is asked for.
    fn ints_as_reals(&self) -> bool {
        false
    }
}

/// An environment for terms without calls and without source text (generated terms).
pub struct NoSource;

impl CheckEnv for NoSource {
    fn error(&self, kind: ErrorKind, span: Span, message: String) -> Error {
        Error {
            kind,
            position: None,
            message,
            span,
        }
    }
    fn signature(&self, _: DefId) -> Option<(Vec<Type>, Type, String)> {
        None
    }
    fn ints_as_reals(&self) -> bool {
        true
    }
}

/// Infer the type of `e`, recording the types of its nodes and bound variables.
pub fn infer(arena: &mut Arena, env: &dyn CheckEnv, e: ExprId) -> Result<Type, Error> {
    Checker {
        arena,
        env,
        flexible: HashSet::default(),
        bound: HashMap::default(),
    }
    .infer(e)
}

/// A variable or a component of one (`e.0.1`): the base of an affine int expression.
type Component = (Var, Vec<u32>);

/// The largest whole number a real holds exactly: ints are carried as reals.
pub const INT_LIMIT: f64 = 9007199254740992.0;

/// Whether `x` is an int as the language carries them: a whole number up to [`INT_LIMIT`]
/// in magnitude (NaN is not). Plain arithmetic the compiler vectorises, where `fract` is a
/// call and a conversion to an integer saturates: the argument checks run this on every
/// element of an array of ints at every call. Below 2^52, adding and subtracting 2^52
/// rounds to the nearest whole number, which gives `|x|` back exactly when it is whole;
/// from 2^52 every real is whole.
pub fn is_int(x: f64) -> bool {
    const WHOLE_FROM: f64 = 4503599627370496.0; // 2^52
    let a = x.abs();
    let rounded = (a + WHOLE_FROM) - WHOLE_FROM;
    ((rounded == a) | (a >= WHOLE_FROM)) & (a <= INT_LIMIT)
}

struct Checker<'a> {
    arena: &'a mut Arena,
    env: &'a dyn CheckEnv,
    /// `let`-bound variables typed `real` whose value is a whole number by construction
    /// (see [`Checker::is_flexible`]): they may also be used where an int is needed.
    flexible: HashSet<Var>,
    /// Variables bound inside the term by `let` (with their right-hand side) or by a
    /// binder (`None`); an int variable bound nowhere in the term is a parameter.
    bound: HashMap<Var, Option<ExprId>>,
}

/// "a real", "an array `[n]real`", ...: how a type is named in messages.
pub fn describe(t: &Type) -> String {
    match t {
        Type::Real => "`real`".into(),
        Type::Int => "`int`".into(),
        Type::Bool => "`bool` (a condition)".into(),
        Type::Tuple(_) => format!("the tuple type `{t}`"),
        Type::Array(..) => format!("the array type `{t}`"),
        Type::Func(..) => format!("the function type `{t}`"),
    }
}

fn contains_bool(t: &Type) -> bool {
    match t {
        Type::Bool => true,
        Type::Real | Type::Int => false,
        Type::Tuple(items) => items.iter().any(contains_bool),
        Type::Array(_, e) => contains_bool(e),
        Type::Func(..) => false,
    }
}

impl Checker<'_> {
    fn err(&self, e: ExprId, message: String) -> Error {
        self.env.error(ErrorKind::Type, self.arena.span(e), message)
    }

    fn infer(&mut self, e: ExprId) -> Result<Type, Error> {
        if let Some(t) = self.arena.type_of(e) {
            return Ok(t.clone());
        }
        let t = with_stack(|| self.infer_node(e))?;
        self.arena.set_type(e, t.clone());
        Ok(t)
    }

    fn expect_real(&mut self, e: ExprId, what: &str) -> Result<(), Error> {
        let t = self.infer(e)?;
        if t != Type::Real {
            let hint = if t == Type::Int {
                " (write `real(...)` to use an int as a real)"
            } else {
                ""
            };
            return Err(self.err(
                e,
                format!("{what} must be a real, but this has {}{hint}", describe(&t)),
            ));
        }
        Ok(())
    }

    /// True if `e`, typed `real`, is a whole number by construction and may stand where an
    /// int is needed: a whole-number literal, `len(A)`, a `let`-bound variable of such a
    /// value, and `-`, `+`, `*`, `max`, `min` and `if` of those. (Literals and lengths are
    /// reals unless the context needs an int, so every program without ints means what it
    /// meant before ints existed.) `/` is not among them: `len(A) / 2` divides reals; the
    /// int quotient is `div(len(A), 2)`.
    fn is_flexible(&self, e: ExprId) -> bool {
        match self.arena[e] {
            Node::Const(c) => c.fract() == 0.0 && c.abs() <= INT_LIMIT,
            Node::Len(_) => true,
            Node::Var(v) => self.flexible.contains(&v),
            Node::Op1(crate::ops::UnOp::Neg, a) => self.is_flexible(a),
            Node::Op2(BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Max | BinOp::Min, a, b) => {
                self.is_flexible(a) && self.is_flexible(b)
            }
            Node::If(_, a, b) => self.is_flexible(a) && self.is_flexible(b),
            _ => false,
        }
    }

    /// `e` must be an int: typed `int`, or a real that is a whole number by construction
    /// ([`Checker::is_flexible`]).
    fn expect_int(&mut self, e: ExprId, what: &str) -> Result<(), Error> {
        self.expect_int_or(e, what, "")
    }

    /// [`Checker::expect_int`], with `hint` added to the message when `e` is a real.
    fn expect_int_or(&mut self, e: ExprId, what: &str, hint: &str) -> Result<(), Error> {
        let t = self.infer(e)?;
        match t {
            Type::Int => Ok(()),
            // In generated terms a real may stand for an int its variable was typed as
            // out of context (ints are carried as reals; a read checks its index anyway).
            Type::Real if self.is_flexible(e) || self.env.ints_as_reals() => Ok(()),
            Type::Real => Err(self.err(
                e,
                format!("{what} must be an int, but this is a real (ints are int parameters, `len(A)`, elements of `iota`, whole-number literals, and `+ - * / %` of ints; `div(a, b)` divides whole numbers){hint}"),
            )),
            t => Err(self.err(
                e,
                format!("{what} must be an int, but this has {}", describe(&t)),
            )),
        }
    }

    /// The type shared by two scalar operands `a` (typed `ta`) and `b`: equal types, or
    /// `int` when one is an int and the other a whole number by construction (in generated
    /// terms, any int for a real).
    fn join_numeric(&self, a: ExprId, ta: &Type, b: ExprId, tb: &Type) -> Option<Type> {
        match (ta, tb) {
            _ if ta == tb => Some(ta.clone()),
            (Type::Int, Type::Real) if self.is_flexible(b) || self.env.ints_as_reals() => {
                Some(Type::Int)
            }
            (Type::Real, Type::Int) if self.is_flexible(a) || self.env.ints_as_reals() => {
                Some(Type::Int)
            }
            // Tuples component by component (`if c then (i, j) else (-1, -1)`).
            (Type::Tuple(xs), Type::Tuple(ys)) if xs.len() == ys.len() => {
                let parts = |e: ExprId| match self.arena[e] {
                    Node::Tuple(l) => Some(self.arena.exprs(l).to_vec()),
                    _ => None,
                };
                let (pa, pb) = (parts(a), parts(b));
                let by_component = || {
                    let mut out = Vec::with_capacity(xs.len());
                    for (k, (x, y)) in xs.iter().zip(ys.iter()).enumerate() {
                        if x == y {
                            out.push(x.clone());
                            continue;
                        }
                        let ea = pa.as_ref()?.get(k).copied()?;
                        let eb = pb.as_ref()?.get(k).copied()?;
                        out.push(self.join_numeric(ea, x, eb, y)?);
                    }
                    Some(Type::tuple(out))
                };
                by_component().or_else(|| self.same(ta, tb).then(|| ta.clone()))
            }
            // In generated terms, any two types laid out alike.
            _ if self.same(ta, tb) => Some(ta.clone()),
            _ => None,
        }
    }

    /// How many ints each element of the array of positions `e` (of element type `t`) holds:
    /// 1 for ints, `d` for tuples of `d` ints. Elements typed `real` count as ints where
    /// they are whole numbers by construction (an array literal `[0]`, a map whose body is
    /// `i + 1`, after the optimizer folded an int into a constant).
    fn int_path_depth(&self, e: ExprId, t: &Type) -> Option<usize> {
        let scalar = |t: &Type| matches!(t, Type::Int | Type::Real);
        let (want, depth) = match t {
            Type::Int | Type::Real => (Type::Int, 1),
            Type::Tuple(items) if items.iter().all(scalar) => (
                Type::tuple(items.iter().map(|_| Type::Int).collect()),
                items.len(),
            ),
            _ => return None,
        };
        let n = Size::lit(0);
        let fits = *t == want
            || self.env.ints_as_reals()
            || self.int_from_flexible(&Type::array(n.clone(), want), &Type::array(n, t.clone()), e);
        fits.then_some(depth)
    }

    /// `ta`, the type of `a`, with `int` for the reals of `a` that are whole numbers by
    /// construction where `want` has an int: `a` itself, or the components of a tuple
    /// written out.
    fn ints_where_flexible(&self, want: &Type, ta: Type, a: ExprId) -> Type {
        match (want, ta) {
            (Type::Int, Type::Real) if self.is_flexible(a) => Type::Int,
            (Type::Tuple(ws), Type::Tuple(ts)) if ws.len() == ts.len() => match self.arena[a] {
                Node::Tuple(l) => Type::tuple(
                    ws.iter()
                        .zip(ts.iter())
                        .zip(self.arena.exprs(l))
                        .map(|((w, t), &x)| self.ints_where_flexible(w, t.clone(), x))
                        .collect(),
                ),
                _ => Type::Tuple(ts),
            },
            (_, ta) => ta,
        }
    }

    /// Whether `a`, of type `ta`, stands for a value of type `want` by being whole numbers
    /// by construction where ints are wanted: a flexible real for an int, and tuples of
    /// those (`(0, x)` for `(int, real)`, as reverse mode passes an int's zero adjoint).
    fn int_from_flexible(&self, want: &Type, ta: &Type, a: ExprId) -> bool {
        if want == ta {
            return true;
        }
        match self.arena[a] {
            Node::Let(_, _, body) | Node::LetTuple(_, _, body) => {
                return self.int_from_flexible(want, ta, body)
            }
            Node::If(_, x, y) => {
                return self.int_from_flexible(want, ta, x) && self.int_from_flexible(want, ta, y)
            }
            Node::Var(v) => {
                if let Some(Some(rhs)) = self.bound.get(&v) {
                    return self.int_from_flexible(want, ta, *rhs);
                }
            }
            _ => {}
        }
        match (want, ta) {
            (Type::Int, Type::Real) => self.is_flexible(a),
            (Type::Tuple(ws), Type::Tuple(ts)) if ws.len() == ts.len() => match self.arena[a] {
                Node::Tuple(l) => {
                    let items = self.arena.exprs(l);
                    ws.iter()
                        .zip(ts.iter())
                        .zip(items)
                        .all(|((w, t), &x)| self.int_from_flexible(w, t, x))
                }
                _ => false,
            },
            // Arrays whose elements are made in view: literals, and maps' bodies; zeros.
            (Type::Array(n, w), Type::Array(m, t)) if n == m => match self.arena[a] {
                Node::ZerosLike(_) | Node::OnesLike(_) => !t.has_ints() || **w == **t,
                Node::Array(l) => self
                    .arena
                    .exprs(l)
                    .iter()
                    .all(|&x| self.int_from_flexible(w, t, x)),
                Node::Map(f, _) | Node::Map2(f, _, _) => match self.arena[f] {
                    Node::Lambda(_, body) => self.int_from_flexible(w, t, body),
                    _ => false,
                },
                _ => false,
            },
            _ => false,
        }
    }

    /// `e` as `v + k` (a variable or a component of one, through `let`s, plus a literal)
    /// or `k`.
    fn affine(&self, e: ExprId) -> Option<(Option<Component>, i64)> {
        let literal = |c: f64| (c.fract() == 0.0 && c.abs() <= u32::MAX as f64).then_some(c as i64);
        match self.arena[e] {
            Node::Const(c) => Some((None, literal(c)?)),
            Node::Var(v) => match self.bound.get(&v) {
                Some(Some(rhs)) => self.affine(*rhs).or(Some((Some((v, Vec::new())), 0))),
                _ => Some((Some((v, Vec::new())), 0)),
            },
            // A component of a variable (`e.0`): a variable of its own.
            Node::Proj(k, inner) => match self.affine(inner)? {
                (Some((v, mut path)), 0) => {
                    path.push(k);
                    Some((Some((v, path)), 0))
                }
                _ => None,
            },
            // Sums and differences with at most one variable left: `i + 1`, `1 + i`,
            // `(i + 1) - i`.
            Node::Op2(op @ (BinOp::Add | BinOp::Sub), a, b) => {
                let ((u, p), (w, q)) = (self.affine(a)?, self.affine(b)?);
                match (op, u, w) {
                    (BinOp::Add, u, None) | (BinOp::Add, None, u) => Some((u, p + q)),
                    (BinOp::Sub, u, None) => Some((u, p - q)),
                    (BinOp::Sub, Some(u), Some(w)) if u == w => Some((None, p - q)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The size an int expression gives `iota`: a literal, `len(A)`, an int parameter (the
    /// size variable of its name), a `let`-bound variable of one, plus or minus constants.
    fn size_of(&mut self, e: ExprId) -> Option<Size> {
        match self.arena[e] {
            Node::Const(c) if c.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&c) => {
                Some(Size::lit(c as u64))
            }
            Node::Len(a) => match self.infer(a).ok()? {
                Type::Array(n, _) => Some(n),
                _ => None,
            },
            Node::Var(v) => match self.bound.get(&v) {
                Some(Some(rhs)) => self.size_of(*rhs),
                Some(None) => None,
                None if self.arena.var_type(v) == Some(&Type::Int) => {
                    Some(Size::var(self.arena.var_name(v)))
                }
                None => None,
            },
            // Sums and differences whose size variables cancel or are at most one:
            // `n + 1`, `len(A) - 1`, `(k + 3) - k` (a slice's length).
            Node::Op2(op @ (BinOp::Add | BinOp::Sub), a, b) => {
                // `(j + 2) - j` for any int `j` (a loop's element too): a constant.
                if let Some((None, k)) = self.affine(e) {
                    return Some(Size {
                        var: None,
                        offset: k,
                    });
                }
                let (Some(x), Some(y)) = (self.size_of(a), self.size_of(b)) else {
                    return self.size_of_linear(e);
                };
                match (op, &x.var, &y.var) {
                    (_, _, None) => Some(x.plus(if op == BinOp::Add {
                        y.offset
                    } else {
                        -y.offset
                    })),
                    (BinOp::Add, None, Some(_)) => Some(y.plus(x.offset)),
                    (BinOp::Sub, Some(v), Some(w)) if v == w => Some(Size {
                        var: None,
                        offset: x.offset - y.offset,
                    }),
                    _ => self.size_of_linear(e),
                }
            }
            _ => self.size_of_linear(e),
        }
    }

    /// The size `e` computes, as [`Checker::linear_of`] reads it, if every variable that is
    /// not a size cancels out.
    fn size_of_linear(&mut self, e: ExprId) -> Option<Size> {
        self.linear_of(e)
            .filter(|x| !x.has_local())
            .map(|x| x.to_size())
    }

    /// A bound int variable that is not a size (a loop's element, a `let` of one) as an
    /// atom of its own, which must cancel for a size to come out: the `i` of a slice
    /// `x[i : i + len(w)]`, whose length is `(i + len(w)) - i`. Its name, with `#`, is no
    /// size's (see [`Linear::has_local`]).
    fn local_atom(&self, v: Var) -> Option<Linear> {
        (self.arena.var_type(v) == Some(&Type::Int))
            .then(|| Linear::atom(&format!("{}#{}", self.arena.var_name(v), v.index())))
    }

    /// An int expression computed from sizes alone (literals, `len(A)`, int parameters,
    /// `let`s of those, and `+ - * div % max min` of them) as a canonical form: the
    /// derived size of an `iota` such as a convolution's `iota (len(x) - len(w) + 1)`.
    /// `None` when it reads anything else (a loop's element, a real).
    fn linear_of(&mut self, e: ExprId) -> Option<Linear> {
        match self.arena[e] {
            Node::Const(c) if c.fract() == 0.0 && c.abs() <= u32::MAX as f64 => {
                Some(Linear::constant(c as i64))
            }
            Node::Len(a) => match self.infer(a).ok()? {
                Type::Array(n, _) => Linear::of_size(&n),
                _ => None,
            },
            Node::Var(v) => match self.bound.get(&v) {
                Some(Some(rhs)) => {
                    let rhs = *rhs;
                    self.linear_of(rhs).or_else(|| self.local_atom(v))
                }
                Some(None) => self.local_atom(v),
                None if self.arena.var_type(v) == Some(&Type::Int) => {
                    Some(Linear::atom(self.arena.var_name(v)))
                }
                None => None,
            },
            Node::Op1(crate::ops::UnOp::Neg, a) => self.linear_of(a)?.scale(-1),
            Node::Op2(op, a, b) => {
                let (x, y) = (self.linear_of(a)?, self.linear_of(b)?);
                match op {
                    BinOp::Add => x.add(&y),
                    BinOp::Sub => x.sub(&y),
                    BinOp::Mul => x.mul(&y),
                    BinOp::IntDiv => Linear::nonlinear(SizeOp::Div, &x, &y),
                    BinOp::Rem => Linear::nonlinear(SizeOp::Rem, &x, &y),
                    BinOp::Max => Linear::nonlinear(SizeOp::Max, &x, &y),
                    BinOp::Min => Linear::nonlinear(SizeOp::Min, &x, &y),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn expect_bool(&mut self, e: ExprId, what: &str) -> Result<(), Error> {
        let t = self.infer(e)?;
        if t != Type::Bool {
            return Err(self.err(
                e,
                format!(
                    "{what} must be a condition (a comparison), but this has {}",
                    describe(&t)
                ),
            ));
        }
        Ok(())
    }

    fn expect_array(&mut self, e: ExprId, what: &str) -> Result<(Size, Type), Error> {
        match self.infer(e)? {
            Type::Array(n, elem) => Ok((n, (*elem).clone())),
            t => Err(self.err(
                e,
                format!("{what} must be an array, but this has {}", describe(&t)),
            )),
        }
    }

    /// The function `f` of a fold checked for the accumulator type `tz` and the element
    /// type `s`: it must return `tz`.
    fn fold_function(&mut self, f: ExprId, tz: &Type, s: &Type, what: &str) -> Result<Type, Error> {
        let t = self.function_arg(f, &[tz.clone(), s.clone()], what)?;
        if !self.same(&t, tz) {
            return Err(self.err(f, format!("the function of `{what}` must return the accumulator's type `{tz}`, but returns `{t}`")));
        }
        Ok(t)
    }

    /// The nodes of `e`, and the variables bound inside it with their declared types
    /// (before checking): what checking `e` again must start from.
    fn binder_types(&self, e: ExprId) -> (Vec<ExprId>, Vec<(Var, Option<Type>)>) {
        let (mut nodes, mut vars) = (Vec::new(), Vec::new());
        let mut stack = vec![e];
        let mut seen = HashSet::default();
        while let Some(x) = stack.pop() {
            if !seen.insert(x) {
                continue;
            }
            nodes.push(x);
            for v in self.arena.binders(self.arena[x]) {
                vars.push((v, self.arena.var_type(v).cloned()));
            }
            stack.extend(self.arena.children(x));
        }
        (nodes, vars)
    }

    /// [`Checker::fold_function`] again with some whole-number literals of the initial value
    /// `z` (itself, or components of a tuple written out, typed `real`) taken as ints: each choice, the
    /// fewest ints first, with the binders of `f` back to their declared types `saved`.
    /// The accumulator type that checks, if one does.
    fn fold_with_int_literals(
        &mut self,
        f: ExprId,
        z: ExprId,
        tz: &Type,
        s: &Type,
        what: &str,
        saved: &(Vec<ExprId>, Vec<(Var, Option<Type>)>),
    ) -> Option<Type> {
        // A scalar initial value (`scanl (p, c. 2 * p) 1 (iota n)` for powers of two) is a
        // tuple of one.
        let scalar = *tz == Type::Real;
        let (items, parts): (Vec<Type>, Vec<ExprId>) = match (tz, &self.arena[z]) {
            (Type::Tuple(items), &Node::Tuple(l)) => (items.to_vec(), self.arena.exprs(l).to_vec()),
            (Type::Real, _) => (vec![Type::Real], vec![z]),
            _ => return None,
        };
        let spots: Vec<usize> = (0..items.len())
            .filter(|&k| items[k] == Type::Real && self.is_flexible(parts[k]))
            .collect();
        if spots.is_empty() || spots.len() > 4 {
            return None;
        }
        let mut choices: Vec<u32> = (1..1u32 << spots.len()).collect();
        choices.sort_by_key(|c| c.count_ones());
        for choice in choices {
            let mut trial = items.to_vec();
            for (bit, &k) in spots.iter().enumerate() {
                if choice & (1 << bit) != 0 {
                    trial[k] = Type::Int;
                }
            }
            let trial = if scalar {
                trial.swap_remove(0)
            } else {
                Type::tuple(trial)
            };
            for &x in &saved.0 {
                self.arena.clear_type(x);
            }
            for (v, t) in &saved.1 {
                self.arena.restore_var_type(*v, t.clone());
                self.flexible.remove(v);
                self.bound.remove(v);
            }
            if self.fold_function(f, &trial, s, what).is_ok() {
                return Some(trial);
            }
        }
        None
    }

    /// Whether `a` and `b` are the same type, up to ints and reals in generated terms
    /// ([`CheckEnv::ints_as_reals`]).
    fn same(&self, a: &Type, b: &Type) -> bool {
        a == b || self.env.ints_as_reals() && same_layout(a, b)
    }

    /// Bind `v` to `t`, checking it against an annotation the variable may carry.
    fn bind(&mut self, v: Var, t: &Type, at: ExprId) -> Result<(), Error> {
        match self.arena.var_type(v) {
            Some(annot) if annot.has_ints() && self.int_from_flexible(&annot.clone(), t, at) => {
                Ok(())
            }
            Some(annot) if self.same(annot, t) => Ok(()),
            Some(annot) if annot != t => {
                let name = self.arena.var_name(v).to_string();
                Err(self.err(
                    at,
                    format!(
                        "`{name}` is declared as `{annot}` but is bound to a value of type `{t}`"
                    ),
                ))
            }
            _ => {
                self.arena.set_var_type(v, t.clone());
                Ok(())
            }
        }
    }

    /// Check the function argument `f` of an array operation with parameter types `params`;
    /// returns the type of its body.
    fn function_arg(&mut self, f: ExprId, params: &[Type], what: &str) -> Result<Type, Error> {
        let Node::Lambda(ps, body) = self.arena[f] else {
            return Err(self.err(
                f,
                format!("the function argument of `{what}` must be a binder such as `(x, y. e)`"),
            ));
        };
        let vars = self.arena.vars_of(ps).to_vec();
        if vars.len() != params.len() {
            return Err(self.err(
                f,
                format!(
                    "`{what}` needs a function of {} argument(s), this one has {}",
                    params.len(),
                    vars.len()
                ),
            ));
        }
        for (v, t) in vars.iter().zip(params) {
            self.bind(*v, t, f)?;
            self.bound.insert(*v, None);
        }
        let ret = self.infer(body)?;
        self.arena
            .set_type(f, Type::func(params.to_vec(), ret.clone()));
        Ok(ret)
    }

    fn infer_node(&mut self, e: ExprId) -> Result<Type, Error> {
        use Node::*;
        Ok(match self.arena[e] {
            Const(_) => Type::Real,
            Bool(_) => Type::Bool,
            Var(v) => match self.arena.var_type(v) {
                Some(t) => t.clone(),
                None => {
                    let name = self.arena.var_name(v).to_string();
                    return Err(self.err(e, format!("the type of `{name}` is unknown: annotate the parameter (`{name}: real`)")));
                }
            },
            Let(..) => return self.let_chain(e),
            LetTuple(xs, e1, e2) => {
                let t1 = self.infer(e1)?;
                let vars = self.arena.vars_of(xs).to_vec();
                match &t1 {
                    Type::Tuple(items) if items.len() == vars.len() => {
                        for (v, t) in vars.iter().zip(items.iter()) {
                            self.bind(*v, t, e1)?;
                            self.bound.insert(*v, None);
                        }
                    }
                    _ => {
                        return Err(self.err(
                            e1,
                            format!(
                                "the pattern has {} components, but the value has {}",
                                vars.len(),
                                describe(&t1)
                            ),
                        ))
                    }
                }
                self.infer(e2)?
            }
            Tuple(l) => {
                let items = self.arena.exprs(l).to_vec();
                let mut ts = Vec::new();
                for &i in &items {
                    let t = self.infer(i)?;
                    if contains_bool(&t) {
                        return Err(self.err(
                            i,
                            "a condition cannot be stored in a tuple; use `if`".into(),
                        ));
                    }
                    ts.push(t);
                }
                Type::tuple(ts)
            }
            Proj(i, a) => match self.infer(a)? {
                Type::Tuple(items) if (i as usize) < items.len() => items[i as usize].clone(),
                t => {
                    let what = match i {
                        0 => "`fst`".to_string(),
                        1 => "`snd`".to_string(),
                        _ => format!("`.{i}`"),
                    };
                    return Err(self.err(e, format!("{what} needs a tuple with at least {} components, but the operand has {}", i + 1, describe(&t))));
                }
            },
            Op1(crate::ops::UnOp::ToReal, a) => {
                self.expect_int_or(
                    a,
                    "the argument of `real`",
                    ". A count kept in a loop's state (`foldl`, `scanl`, `iterate`, `iterate_while`) whose start is a whole-number literal is a real unless the steps use it as an int: start it from an int (`let zero: int = 0`) to count in ints, or leave out `real`",
                )?;
                Type::Real
            }
            Op1(crate::ops::UnOp::Neg, a) => match self.infer(a)? {
                Type::Int => Type::Int,
                _ => {
                    self.expect_real(a, "the operand of `-`")?;
                    Type::Real
                }
            },
            Op1(op, a) => {
                self.expect_real(a, &format!("the argument of `{}`", op.name()))?;
                Type::Real
            }
            Op2(op, a, b) if op.is_integer_only() => {
                let name = if op == BinOp::Rem { "%" } else { "div" };
                self.expect_int(a, &format!("the left operand of `{name}`"))?;
                self.expect_int(b, &format!("the right operand of `{name}`"))?;
                Type::Int
            }
            Op2(
                op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Max | BinOp::Min),
                a,
                b,
            ) => {
                let name = op.name();
                let (ta, tb) = (self.infer(a)?, self.infer(b)?);
                match self.join_numeric(a, &ta, b, &tb) {
                    Some(Type::Int) => Type::Int,
                    _ if ta == Type::Int || tb == Type::Int => {
                        let (x, t) = if ta == Type::Int { (b, &tb) } else { (a, &ta) };
                        return Err(self.err(
                            x,
                            format!("`{name}` has an int operand, so this one must be an int too, but it has {} (write `real(...)` around the int to compute with reals)", describe(t)),
                        ));
                    }
                    _ => {
                        self.expect_real(a, &format!("the left operand of `{name}`"))?;
                        self.expect_real(b, &format!("the right operand of `{name}`"))?;
                        Type::Real
                    }
                }
            }
            Op2(op, a, b) => {
                let name = op.name();
                self.expect_real(a, &format!("the left operand of `{name}`"))?;
                self.expect_real(b, &format!("the right operand of `{name}`"))?;
                Type::Real
            }
            Cmp(op, a, b) => {
                let name = op.name();
                let (ta, tb) = (self.infer(a)?, self.infer(b)?);
                if !matches!(self.join_numeric(a, &ta, b, &tb), Some(Type::Int)) {
                    if ta == Type::Int || tb == Type::Int {
                        let (x, t) = if ta == Type::Int { (b, &tb) } else { (a, &ta) };
                        return Err(self.err(
                            x,
                            format!("`{name}` compares an int with this, which must be an int too, but it has {} (write `real(...)` around the int to compare reals)", describe(t)),
                        ));
                    }
                    self.expect_real(a, &format!("the left operand of `{name}`"))?;
                    self.expect_real(b, &format!("the right operand of `{name}`"))?;
                }
                Type::Bool
            }
            Not(a) => {
                self.expect_bool(a, "the operand of `!`")?;
                Type::Bool
            }
            And(a, b) | Or(a, b) => {
                let name = if matches!(self.arena[e], And(..)) {
                    "&&"
                } else {
                    "||"
                };
                self.expect_bool(a, &format!("the left operand of `{name}`"))?;
                self.expect_bool(b, &format!("the right operand of `{name}`"))?;
                Type::Bool
            }
            If(c, a, b) => {
                self.expect_bool(c, "the condition of `if`")?;
                let ta = self.infer(a)?;
                let tb = self.infer(b)?;
                match self.join_numeric(a, &ta, b, &tb) {
                    Some(t) => t,
                    None => return Err(self.err(e, format!("the branches of `if` differ: `then` has type `{ta}` but `else` has type `{tb}`"))),
                }
            }
            Lambda(ps, body) => {
                let vars = self.arena.vars_of(ps).to_vec();
                let mut params = Vec::new();
                for v in vars {
                    match self.arena.var_type(v) {
                        Some(t) => params.push(t.clone()),
                        None => {
                            let name = self.arena.var_name(v).to_string();
                            return Err(self.err(e, format!("the parameter `{name}` of this `fun` needs a type annotation (`{name}: real`)")));
                        }
                    }
                }
                let ret = self.infer(body)?;
                Type::func(params, ret)
            }
            App(f, l) => {
                let tf = self.infer(f)?;
                let Type::Func(params, ret) = tf else {
                    return Err(self.err(
                        f,
                        format!(
                            "only functions can be applied, but this has {}",
                            describe(&tf)
                        ),
                    ));
                };
                let args = self.arena.exprs(l).to_vec();
                if args.len() != params.len() {
                    return Err(self.err(
                        e,
                        format!(
                            "the function takes {} argument(s), {} given",
                            params.len(),
                            args.len()
                        ),
                    ));
                }
                for (i, (&a, p)) in args.iter().zip(params.iter()).enumerate() {
                    let ta = self.infer(a)?;
                    if !self.same(&ta, p) && !self.int_from_flexible(p, &ta, a) {
                        return Err(self.err(
                            a,
                            format!(
                                "argument {} should have type `{p}`, but has type `{ta}`",
                                i + 1
                            ),
                        ));
                    }
                }
                (*ret).clone()
            }
            Call(d, l) => self.call(e, d, l)?,
            Derivative(k, f, l) => self.derivative(e, k, f, l)?,
            Array(l) => {
                let items = self.arena.exprs(l).to_vec();
                let Some(&first) = items.first() else {
                    return Err(self.err(
                        e,
                        "the type of an empty array literal `[]` cannot be inferred".into(),
                    ));
                };
                let mut t0 = self.infer(first)?;
                if contains_bool(&t0) || t0.is_higher_order() {
                    return Err(self.err(first, format!("arrays cannot hold {}", describe(&t0))));
                }
                let mut ints = t0 == Type::Int;
                for &i in &items[1..] {
                    let t = self.infer(i)?;
                    ints |= t == Type::Int;
                    if t != t0
                        && !(t0 == Type::Real && t == Type::Int
                            || t0 == Type::Int && t == Type::Real)
                    {
                        return Err(self.err(i, format!("array elements must have one type: the first has type `{t0}`, this one `{t}`")));
                    }
                }
                if ints {
                    // Ints with whole-number literals: an array of ints.
                    for &i in &items {
                        self.expect_int(i, "every element of an array with int elements")?;
                    }
                    t0 = Type::Int;
                }
                Type::array(Size::lit(items.len() as u64), t0)
            }
            Len(a) => {
                self.expect_array(a, "the argument of `len`")?;
                Type::Real
            }
            ZerosLike(a) | OnesLike(a) => {
                let t = self.infer(a)?;
                if !t.is_ground() {
                    let what = if matches!(self.arena[e], ZerosLike(_)) {
                        "zeros_like"
                    } else {
                        "ones_like"
                    };
                    return Err(self.err(
                        a,
                        format!(
                            "`{what}` needs a value made of reals, but this has {}",
                            describe(&t)
                        ),
                    ));
                }
                t
            }
            Map(f, a) => {
                let (n, s) = self.expect_array(a, "the operand of `map`")?;
                let t = self.function_arg(f, &[s], "map")?;
                self.element_result(f, &t, "map")?;
                Type::array(n, t)
            }
            Map2(f, a, b) => {
                let (n, s) = self.expect_array(a, "the first array of `map2`")?;
                let (m, u) = self.expect_array(b, "the second array of `map2`")?;
                if n != m {
                    let (ta, tb) = (self.infer(a)?, self.infer(b)?);
                    return Err(self.err(
                        e,
                        format!("`map2` needs two arrays of the same size, but the first has type `{ta}` (size {n}) and the second `{tb}` (size {m})"),
                    ));
                }
                let t = self.function_arg(f, &[s, u], "map2")?;
                self.element_result(f, &t, "map2")?;
                Type::array(n, t)
            }
            Reduce(f, z, a) => {
                let tz = self.infer(z)?;
                let (_, s) = self.expect_array(a, "the array of `reduce`")?;
                // A whole-number literal is the unit of a reduction of ints too.
                let tz = if s != tz && self.int_from_flexible(&s, &tz, z) {
                    s.clone()
                } else {
                    tz
                };
                if !self.same(&s, &tz) {
                    return Err(self.err(
                        e,
                        format!("`reduce` needs a unit of the array's element type: the unit has type `{tz}` but the elements have type `{s}`"),
                    ));
                }
                let t = self.function_arg(f, &[tz.clone(), tz.clone()], "reduce")?;
                if !self.same(&t, &tz) {
                    return Err(self.err(f, format!("the function of `reduce` must return the element type `{tz}`, but returns `{t}`")));
                }
                tz
            }
            Foldl(f, z, a) | Scanl(f, z, a) => {
                let what = if matches!(self.arena[e], Foldl(..)) {
                    "foldl"
                } else {
                    "scanl"
                };
                let tz = self.infer(z)?;
                let (n, s) = self.expect_array(a, &format!("the array of `{what}`"))?;
                let saved = self.binder_types(f);
                let tz = match self.fold_function(f, &tz, &s, what) {
                    // The function's parameters declared with ints (a term checked before,
                    // whose initial value is a whole-number literal): the accumulator is
                    // what the function returns, as the first check found.
                    Ok(t) if t != tz && self.int_from_flexible(&t, &tz, z) => t,
                    Ok(_) => tz,
                    // `(0, 0)` for an accumulator `(int, real)`: the whole-number literals
                    // of the initial value tried as ints.
                    Err(err) => self
                        .fold_with_int_literals(f, z, &tz, &s, what, &saved)
                        .ok_or(err)?,
                };
                self.element_result(f, &tz, what)?;
                if what == "foldl" {
                    tz
                } else {
                    Type::array(n.plus(1), tz)
                }
            }
            Scanr(f, z, a) => {
                let tz = self.infer(z)?;
                let (n, s) = self.expect_array(a, "the array of `scanr`")?;
                let t = self.function_arg(f, &[s, tz.clone()], "scanr")?;
                if !self.same(&t, &tz) {
                    return Err(self.err(f, format!("the function of `scanr` must return the accumulator's type `{tz}`, but returns `{t}`")));
                }
                self.element_result(f, &tz, "scanr")?;
                Type::array(n.plus(1), tz)
            }
            Iota(k) => {
                self.expect_int(k, "the length of `iota`")?;
                let Some(n) = self.size_of(k) else {
                    let text = crate::printer::print_expr(self.arena, k);
                    return Err(self.err(
                        k,
                        format!("the length of `iota` must be a size: an int computed from whole-number literals, `len(A)` and int parameters (by `+ - *`, `div`, `%`, `max`, `min`), in which any other int, such as a loop's element, cancels; but it is `{text}` (a slice `A[a:b]` is an `iota` of `b - a` elements, `A[a:]` of `len(A) - a`: its bounds must differ by such a size, as in `A[1:]`, `A[k:k + 3]` or `x[i : i + len(w)]`)"),
                    ));
                };
                // A negative constant length (`x[2:1]`, `iota (0 - 1)`) makes an empty array.
                let n = if n.var.is_none() && n.offset < 0 {
                    Size::lit(0)
                } else {
                    n
                };
                Type::array(n, Type::Int)
            }
            Index(a, i) => {
                let (_, elem) = self.expect_array(a, "an indexed value")?;
                self.expect_int(i, "an index")?;
                elem
            }
            ScatterAdd(z, i, v) => {
                let tz = self.infer(z)?;
                let (n, ti) = self.expect_array(i, "the positions of `scatter_add`")?;
                let (m, tv) = self.expect_array(v, "the values of `scatter_add`")?;
                if n != m {
                    return Err(self.err(e, format!("`scatter_add` needs as many positions as values, but has {n} positions and {m} values")));
                }
                // Each position is a path of ints into `z`; the value has the type there.
                let Some(depth) = self.int_path_depth(i, &ti) else {
                    return Err(self.err(i, format!("the positions of `scatter_add` must be ints or tuples of ints, but are {}", describe(&ti))));
                };
                let mut at = tz.clone();
                for _ in 0..depth {
                    at = match at {
                        Type::Array(_, elem) => (*elem).clone(),
                        t => {
                            return Err(self.err(
                                z,
                                format!(
                                    "`scatter_add` indexes {depth} levels deep, but this has {}",
                                    describe(&t)
                                ),
                            ))
                        }
                    };
                }
                if !self.same(&at, &tv) {
                    return Err(self.err(v, format!("`scatter_add` adds values of type `{tv}` where the target holds `{at}`")));
                }
                tz
            }
            Shift1L(a) | Shift1R(a) => {
                let what = if matches!(self.arena[e], Shift1L(_)) {
                    "shift1L"
                } else {
                    "shift1R"
                };
                let (n, s) = self.expect_array(a, &format!("the operand of `{what}`"))?;
                Type::array(n.plus(-1), s)
            }
        })
    }

    /// Array elements and accumulators are values: no conditions, no functions.
    fn element_result(&self, f: ExprId, t: &Type, what: &str) -> Result<(), Error> {
        if contains_bool(t) || t.is_higher_order() {
            return Err(self.err(
                f,
                format!(
                    "the function of `{what}` must compute a value made of reals, but it has {}",
                    describe(t)
                ),
            ));
        }
        Ok(())
    }

    /// `let` chains are checked in a loop: programs may nest thousands of them.
    fn let_chain(&mut self, e: ExprId) -> Result<Type, Error> {
        let mut chain = Vec::new();
        let mut cur = e;
        while let Node::Let(x, e1, e2) = self.arena[cur] {
            if self.arena.type_of(cur).is_some() {
                break;
            }
            let t1 = self.infer(e1)?;
            self.bind(x, &t1, e1)?;
            self.bound.insert(x, Some(e1));
            if t1 == Type::Real
                && self.arena.var_type(x) == Some(&Type::Real)
                && self.is_flexible(e1)
            {
                self.flexible.insert(x);
            }
            chain.push(cur);
            cur = e2;
        }
        let t = self.infer(cur)?;
        for c in chain {
            self.arena.set_type(c, t.clone());
        }
        Ok(t)
    }

    fn call(&mut self, e: ExprId, d: DefId, l: crate::term::ExprList) -> Result<Type, Error> {
        let Some((params, ret, name)) = self.env.signature(d) else {
            return Err(self.err(e, "call of a definition that has not been checked".into()));
        };
        let args = self.arena.exprs(l).to_vec();
        if args.len() != params.len() {
            return Err(self.err(
                e,
                format!(
                    "`{name}` takes {} argument(s), {} given",
                    params.len(),
                    args.len()
                ),
            ));
        }
        let mut subst: HashMap<Arc<str>, Size> = HashMap::default();
        for (i, (&a, p)) in args.iter().zip(&params).enumerate() {
            let ta = self.infer(a)?;
            if *p == Type::Int && ta == Type::Real && self.is_flexible(a) {
                continue;
            }
            if let Err(why) = unify(p, &ta, &mut subst) {
                return Err(self.err(
                    a,
                    format!(
                        "argument {} of `{name}` should have type `{p}`, but has type `{ta}`{why}",
                        i + 1
                    ),
                ));
            }
        }
        let mut ret_sizes = Vec::new();
        ret.size_vars(&mut ret_sizes);
        // A derived size (`n - m + 1`) is given when the sizes it is computed from are.
        let given = |v: &Arc<str>| crate::size_expr::known_from(v, &|n| subst.contains_key(n));
        if let Some(v) = ret_sizes.iter().find(|v| !given(v)) {
            return Err(self.err(
                e,
                format!("`{name}` returns an array of size `{v}`, which no array argument gives (a size taken from an int parameter is only allowed in the result of the entry point)"),
            ));
        }
        Ok(ret.subst_sizes(&|v| subst.get(v).cloned()))
    }
}

impl Checker<'_> {
    /// `grad(f)(args)`, `grad(f, i)(args)`, `jvp(f)(P, T)`: `f` is closed, its parameters
    /// are matched against the arguments as a call's (binding its sizes), and the result is
    /// the gradient (the types of the parameters differentiated) or `(value, tangent)`.
    fn derivative(
        &mut self,
        e: ExprId,
        kind: crate::term::Derivative,
        f: ExprId,
        l: crate::term::ExprList,
    ) -> Result<Type, Error> {
        use crate::term::Derivative as D;
        let what = match kind {
            D::Grad { .. } => "grad",
            D::Jvp => "jvp",
        };
        let Type::Func(params, ret) = self.infer(f)? else {
            return Err(self.err(f, format!("`{what}` takes a function")));
        };
        let ret = (*ret).clone();
        if let Some(v) = self.arena.free_vars(f).first() {
            let name = self.arena.var_name(*v).to_string();
            return Err(self.err(
                f,
                format!("the function of `{what}` reads `{name}` from around it; pass it as a parameter instead"),
            ));
        }
        let args = self.arena.exprs(l).to_vec();
        let mut subst: HashMap<Arc<str>, Size> = HashMap::default();
        let mut expect = |me: &mut Self, a: ExprId, want: &Type, lenient: bool, which: String| {
            let ta = me.infer(a)?;
            // Whole-number literals (and lengths) where the parameter is an int, also as
            // components of a tuple: `jvp(f)((x, 3), (1, 0))`.
            let ta = me.ints_where_flexible(want, ta, a);
            let mut trial = subst.clone();
            match unify(want, &ta, &mut trial) {
                Ok(()) => {
                    subst = trial;
                    Ok(())
                }
                Err(_) if lenient && unify(&want.tangent(), &ta, &mut subst).is_ok() => Ok(()),
                Err(why) => Err(me.err(
                    a,
                    format!(
                        "{which} of `{what}` should have type `{want}`, but has type `{ta}`{why}"
                    ),
                )),
            }
        };
        let result = match kind {
            D::Grad { wrt } => {
                if args.len() != params.len() {
                    return Err(self.err(
                        e,
                        format!(
                            "the function of `grad` takes {} argument(s), {} given",
                            params.len(),
                            args.len()
                        ),
                    ));
                }
                for (i, (&a, p)) in args.iter().zip(params.iter()).enumerate() {
                    expect(self, a, p, false, format!("argument {}", i + 1))?;
                }
                if ret != Type::Real {
                    return Err(self.err(
                        f,
                        format!("`grad` needs a function that returns `real`; this one returns `{ret}` (`jvp` takes any result)"),
                    ));
                }
                match wrt {
                    None => {
                        let ds: Vec<Type> = params.iter().filter(|p| p.has_reals()).cloned().collect();
                        if ds.is_empty() {
                            return Err(self.err(f, "`grad` of a function none of whose parameters holds a real".into()));
                        }
                        Type::product(ds)
                    }
                    Some(i) => match params.get(i as usize) {
                        Some(p) if p.has_reals() => p.clone(),
                        Some(p) => return Err(self.err(e, format!("parameter {i} of the function has type `{p}`, which has no gradient"))),
                        None => return Err(self.err(e, format!("the function has {} parameter(s); `grad(f, {i})` asks for the gradient with respect to parameter {i} (counted from 0)", params.len()))),
                    },
                }
            }
            D::Jvp => {
                if args.len() != 2 {
                    return Err(self.err(
                        e,
                        format!("`jvp(f)` takes two arguments, the point and the tangent (tuples for a function of several parameters), {} given", args.len()),
                    ));
                }
                let point = Type::product(params.to_vec());
                expect(self, args[0], &point, false, "the point".into())?;
                expect(self, args[1], &point, true, "the tangent".into())?;
                let tangent = ret.tangent();
                Type::tuple(vec![ret, tangent])
            }
        };
        Ok(result.subst_sizes(&|v| subst.get(v).cloned()))
    }
}

/// `want` and `got` are the same type up to ints and reals, which are laid out alike (ints
/// are carried as reals): in generated terms an int folded into a literal is typed `real`,
/// and a real may have been inferred for an int out of context.
fn same_layout(want: &Type, got: &Type) -> bool {
    match (want, got) {
        (Type::Real, Type::Int) | (Type::Int, Type::Real) => true,
        (Type::Tuple(ws), Type::Tuple(gs)) if ws.len() == gs.len() => {
            ws.iter().zip(gs.iter()).all(|(w, g)| same_layout(w, g))
        }
        (Type::Array(n, w), Type::Array(m, g)) if n == m => same_layout(w, g),
        (Type::Func(ws, w), Type::Func(gs, g)) if ws.len() == gs.len() => {
            ws.iter().zip(gs.iter()).all(|(w, g)| same_layout(w, g)) && same_layout(w, g)
        }
        _ => want == got,
    }
}

/// Match a definition's parameter type against an argument type, binding the
/// definition's size variables. Returns a reason on failure (possibly empty).
pub fn unify(param: &Type, arg: &Type, subst: &mut HashMap<Arc<str>, Size>) -> Result<(), String> {
    match (param, arg) {
        (Type::Real, Type::Real) | (Type::Int, Type::Int) | (Type::Bool, Type::Bool) => Ok(()),
        (Type::Tuple(ps), Type::Tuple(as_)) if ps.len() == as_.len() => ps
            .iter()
            .zip(as_.iter())
            .try_for_each(|(p, a)| unify(p, a, subst)),
        (Type::Array(n, p), Type::Array(m, a)) => {
            match &n.var {
                None => {
                    if n != m {
                        return Err(format!(" (size {m} where {n} is required)"));
                    }
                }
                Some(v) => {
                    // n = v + k, so v = m - k.
                    let want = m.plus(-n.offset);
                    if m.var.is_none() && m.offset < n.offset {
                        return Err(format!(" (size {m} is too small for {n})"));
                    }
                    match subst.get(v) {
                        Some(prev) if *prev != want => {
                            return Err(format!(" (size `{v}` is already {prev} from an earlier argument, here it would be {want})"));
                        }
                        _ => {
                            subst.insert(v.clone(), want);
                        }
                    }
                }
            }
            unify(p, a, subst)
        }
        (Type::Func(ps, r), Type::Func(as_, b)) if ps.len() == as_.len() => {
            ps.iter()
                .zip(as_.iter())
                .try_for_each(|(p, a)| unify(p, a, subst))?;
            unify(r, b, subst)
        }
        _ => Err(String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::{is_int, INT_LIMIT};

    #[test]
    fn ints_are_whole_numbers_up_to_the_limit() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -7.0,
            4503599627370495.0,
            4503599627370496.0,
            INT_LIMIT,
            -INT_LIMIT,
        ] {
            assert!(is_int(x), "{x}");
        }
        for x in [
            0.5,
            -2.25,
            4503599627370495.5,
            1e-300,
            2.0 * INT_LIMIT,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert!(!is_int(x), "{x}");
        }
    }
}
