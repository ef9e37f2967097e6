//! Type checking with symbolic sizes, for both fragments.
//!
//! Every variable carries its type (unique binders), so the type of a term follows from
//! its subterms alone. The checker records the type of each node it visits in the arena
//! and the type of each variable bound by `let` or by an array operation's binder.
//! Errors point at the offending expression and show both types or sizes.

use crate::fast_hash::FastMap as HashMap;
use std::sync::Arc;

use crate::error::{Error, ErrorKind};
use crate::span::Span;
use crate::term::{with_stack, Arena, DefId, ExprId, Node, Var};
use crate::types::{Size, Type};

/// Resolves spans to positions and gives the signatures of definitions (a program's
/// `Definitions`, or [`NoSource`]).
pub trait CheckEnv {
    fn error(&self, kind: ErrorKind, span: Span, message: String) -> Error;
    /// Parameter types and (checked) result type of a definition.
    fn signature(&self, d: DefId) -> Option<(Vec<Type>, Type, String)>;
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
}

/// Infer the type of `e`, recording the types of its nodes and bound variables.
pub fn infer(arena: &mut Arena, env: &dyn CheckEnv, e: ExprId) -> Result<Type, Error> {
    Checker { arena, env }.infer(e)
}

struct Checker<'a> {
    arena: &'a mut Arena,
    env: &'a dyn CheckEnv,
}

/// "a real", "an array `[n]real`", ...: how a type is named in messages.
pub fn describe(t: &Type) -> String {
    match t {
        Type::Real => "`real`".into(),
        Type::Bool => "`bool` (a condition)".into(),
        Type::Tuple(_) => format!("the tuple type `{t}`"),
        Type::Array(..) => format!("the array type `{t}`"),
        Type::Func(..) => format!("the function type `{t}`"),
    }
}

fn contains_bool(t: &Type) -> bool {
    match t {
        Type::Bool => true,
        Type::Real => false,
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
            return Err(self.err(
                e,
                format!("{what} must be a real, but this has {}", describe(&t)),
            ));
        }
        Ok(())
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

    /// Bind `v` to `t`, checking it against an annotation the variable may carry.
    fn bind(&mut self, v: Var, t: &Type, at: ExprId) -> Result<(), Error> {
        match self.arena.var_type(v) {
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
            Op1(op, a) => {
                let what = if op == crate::ops::UnOp::Neg {
                    "the operand of `-`".to_string()
                } else {
                    format!("the argument of `{}`", op.name())
                };
                self.expect_real(a, &what)?;
                Type::Real
            }
            Op2(op, a, b) => {
                let name = op.name();
                self.expect_real(a, &format!("the left operand of `{name}`"))?;
                self.expect_real(b, &format!("the right operand of `{name}`"))?;
                Type::Real
            }
            Cmp(op, a, b) => {
                let name = op.name();
                self.expect_real(a, &format!("the left operand of `{name}`"))?;
                self.expect_real(b, &format!("the right operand of `{name}`"))?;
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
                if ta != tb {
                    return Err(self.err(e, format!("the branches of `if` differ: `then` has type `{ta}` but `else` has type `{tb}`")));
                }
                ta
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
                    if &ta != p {
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
            Array(l) => {
                let items = self.arena.exprs(l).to_vec();
                let Some(&first) = items.first() else {
                    return Err(self.err(
                        e,
                        "the type of an empty array literal `[]` cannot be inferred".into(),
                    ));
                };
                let t0 = self.infer(first)?;
                if contains_bool(&t0) || t0.is_higher_order() {
                    return Err(self.err(first, format!("arrays cannot hold {}", describe(&t0))));
                }
                for &i in &items[1..] {
                    let t = self.infer(i)?;
                    if t != t0 {
                        return Err(self.err(i, format!("array elements must have one type: the first has type `{t0}`, this one `{t}`")));
                    }
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
                if s != tz {
                    return Err(self.err(
                        e,
                        format!("`reduce` needs a unit of the array's element type: the unit has type `{tz}` but the elements have type `{s}`"),
                    ));
                }
                let t = self.function_arg(f, &[tz.clone(), tz.clone()], "reduce")?;
                if t != tz {
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
                let t = self.function_arg(f, &[tz.clone(), s], what)?;
                if t != tz {
                    return Err(self.err(f, format!("the function of `{what}` must return the accumulator's type `{tz}`, but returns `{t}`")));
                }
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
                if t != tz {
                    return Err(self.err(f, format!("the function of `scanr` must return the accumulator's type `{tz}`, but returns `{t}`")));
                }
                self.element_result(f, &tz, "scanr")?;
                Type::array(n.plus(1), tz)
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
        Ok(ret.subst_sizes(&|v| subst.get(v).cloned()))
    }
}

/// Match a definition's parameter type against an argument type, binding the
/// definition's size variables. Returns a reason on failure (possibly empty).
pub fn unify(param: &Type, arg: &Type, subst: &mut HashMap<Arc<str>, Size>) -> Result<(), String> {
    match (param, arg) {
        (Type::Real, Type::Real) | (Type::Bool, Type::Bool) => Ok(()),
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
