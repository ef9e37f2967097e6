//! `UNF`: from Source to Source UNF (Figure "Transformation from Source to Source UNF").
//!
//! `Γ ⊢ e : B` becomes `Γ ⊢ UNF(e) : Γ, B`: the term, sequentialized left to right, that
//! returns its context and its value. Intermediate results are hidden again by `proj`.
//! The second operand of a binary construct runs with the first one's result in its
//! context: it is *weakened* (`~UNF(e2)`).
//!
//! Departure: the paper's weakening appends the passed type at the end of every index
//! (`proj_{T1;T2;T3,A}`), which is wrong as soon as the weakened term has grown its
//! context (a `let` inside `e2`): the passed value sits right after `Γ`, below everything
//! `e2` pushes. [`weaken`] inserts the types at that position and shifts the indices
//! above it.
//!
//! The translation computes `~UNF(e2)` directly, as `UNF(e2)` in the context extended by
//! an anonymous entry (which `e2` cannot name): the same term as [`weaken`] gives (a test
//! checks it), without a pass over `UNF(e2)` per enclosing operator, which made deep terms
//! cost cubic time.

use unfad_syntax::fast_hash::FastMap as HashMap;

use unfad_syntax::{with_stack, Arena, ExprId, Node, Type, Var};

use super::{Ctx, OpKind, Prim, SourceUnf};
use crate::direct::{describe, type_of};
use crate::elem::binary_lambda;
use crate::error::{internal, AdError};

/// `UNF(e)` for `e` in the context `gamma`.
pub fn unf(a: &Arena, gamma: &[Var], e: ExprId) -> Result<SourceUnf, AdError> {
    let mut t = Translate {
        a,
        ctx: Vec::new(),
        tys: Vec::new(),
        pos: HashMap::default(),
    };
    for &g in gamma {
        t.push(g)?;
    }
    Ok(SourceUnf { prims: t.go(e)? })
}

/// `~e`: the types `ins` inserted at index `k` of every context of `e` (indices at or
/// above `k` shift up). `e` must not reach below `k` (no `proj` may drop index `k`).
pub fn weaken(prims: Vec<Prim>, k: usize, ins: &[Type]) -> Result<Vec<Prim>, AdError> {
    let widen = |ctx: Ctx| -> Result<Ctx, AdError> {
        if k > ctx.len() {
            return internal(format!(
                "weakening at index {k} of a context of {} types",
                ctx.len()
            ));
        }
        let mut c = ctx;
        c.splice(k..k, ins.iter().cloned());
        Ok(c)
    };
    let shift = |i: usize| if i >= k { i + ins.len() } else { i };
    prims
        .into_iter()
        .map(|p| {
            Ok(match p {
                Prim::Var { ctx, i } => Prim::Var {
                    ctx: widen(ctx)?,
                    i: shift(i),
                },
                Prim::Op { ctx, op, args, ret } => Prim::Op {
                    ctx: widen(ctx)?,
                    op,
                    args,
                    ret,
                },
                Prim::Pair { ctx, items } => Prim::Pair {
                    ctx: widen(ctx)?,
                    items,
                },
                Prim::Unpack { ctx, items } => Prim::Unpack {
                    ctx: widen(ctx)?,
                    items,
                },
                Prim::Proj { keep, drop, rest } => Prim::Proj {
                    keep: widen(keep)?,
                    drop,
                    rest,
                },
                Prim::Map2 {
                    ctx,
                    f,
                    captures,
                    arr,
                } => Prim::Map2 {
                    ctx: widen(ctx)?,
                    f,
                    captures: captures.into_iter().map(|(v, i)| (v, shift(i))).collect(),
                    arr,
                },
                Prim::Reduce { ctx, f, arr } => Prim::Reduce {
                    ctx: widen(ctx)?,
                    f,
                    arr,
                },
            })
        })
        .collect()
}

/// The translation's state: the context, as variables (`None` for the anonymous entries
/// of weakening) and their types.
struct Translate<'a> {
    a: &'a Arena,
    ctx: Vec<Option<Var>>,
    tys: Vec<Type>,
    pos: HashMap<Var, usize>,
}

impl Translate<'_> {
    fn push(&mut self, v: Var) -> Result<(), AdError> {
        let Some(t) = self.a.var_type(v).cloned() else {
            return internal(format!("the variable `{}` has no type", self.a.var_name(v)));
        };
        self.pos.insert(v, self.ctx.len());
        self.ctx.push(Some(v));
        self.tys.push(t);
        Ok(())
    }

    /// An entry no Source variable names: a value passed through by weakening.
    fn push_anonymous(&mut self, t: Type) {
        self.ctx.push(None);
        self.tys.push(t);
    }

    fn pop(&mut self, n: usize) {
        for _ in 0..n {
            if let Some(entry) = self.ctx.pop() {
                if let Some(v) = entry {
                    self.pos.remove(&v);
                }
                self.tys.pop();
            }
        }
    }

    fn gamma(&self) -> Ctx {
        self.tys.clone()
    }

    fn go(&mut self, e: ExprId) -> Result<Vec<Prim>, AdError> {
        with_stack(|| self.rule(e))
    }

    /// `UNF(e1) ; ~UNF(e2) ; ... ; ~...~UNF(ek)`: the operands, each weakened by the
    /// results of the ones before (translated with them as anonymous entries).
    fn operands(&mut self, es: &[ExprId]) -> Result<(Vec<Prim>, Vec<Type>), AdError> {
        let mut out = Vec::new();
        let mut passed: Vec<Type> = Vec::new();
        let mut result = Ok(());
        for &e in es {
            match self
                .go(e)
                .and_then(|prims| Ok((prims, type_of(self.a, e)?)))
            {
                Ok((prims, t)) => {
                    out.extend(prims);
                    self.push_anonymous(t.clone());
                    passed.push(t);
                }
                Err(err) => {
                    result = Err(err);
                    break;
                }
            }
        }
        self.pop(passed.len());
        result.map(|()| (out, passed))
    }

    /// `operands ; op ; proj[Γ; args; ret]`
    fn operator(&mut self, e: ExprId, op: OpKind, es: &[ExprId]) -> Result<Vec<Prim>, AdError> {
        let ret = type_of(self.a, e)?;
        let (mut out, args) = self.operands(es)?;
        let ctx = self.gamma();
        out.push(Prim::Op {
            ctx: ctx.clone(),
            op,
            args: args.clone(),
            ret: ret.clone(),
        });
        out.push(Prim::Proj {
            keep: ctx,
            drop: args,
            rest: vec![ret],
        });
        Ok(out)
    }

    fn rule(&mut self, e: ExprId) -> Result<Vec<Prim>, AdError> {
        let a = self.a;
        match a[e] {
            // c_{Γ,0}: a constant is a 0-ary operator.
            Node::Const(c) => self.operator(e, OpKind::Const(c), &[]),
            Node::Var(x) => match self.pos.get(&x) {
                Some(&i) => Ok(vec![Prim::Var {
                    ctx: self.gamma(),
                    i,
                }]),
                None => Err(AdError::IllTyped {
                    expr: e,
                    span: a.span(e),
                    message: format!("`{}` is not bound in the context", a.var_name(x)),
                }),
            },
            // UNF(e1) ; UNF(e2) ; proj[Γ; A; B]
            Node::Let(x, e1, e2) => {
                let mut out = self.go(e1)?;
                let tx = type_of(a, e1)?;
                self.push(x)?;
                let body = self.go(e2);
                self.pop(1);
                out.extend(body?);
                out.push(Prim::Proj {
                    keep: self.gamma(),
                    drop: vec![tx],
                    rest: vec![type_of(a, e)?],
                });
                Ok(out)
            }
            // UNF(e1) ; unpack[Γ; A1..Ak] ; UNF(e2) ; proj[Γ; A1..Ak; B]
            Node::LetTuple(xs, e1, e2) => {
                let xs = a.vars_of(xs).to_vec();
                let mut out = self.go(e1)?;
                let Type::Tuple(items) = type_of(a, e1)? else {
                    return Err(unsupported(a, e, "this tuple pattern"));
                };
                let items = items.to_vec();
                out.push(Prim::Unpack {
                    ctx: self.gamma(),
                    items: items.clone(),
                });
                let mut pushed = 0;
                let mut body: Result<(), AdError> = Ok(());
                for &x in &xs {
                    if let Err(err) = self.push(x) {
                        body = Err(err);
                        break;
                    }
                    pushed += 1;
                }
                let body = body.and_then(|()| self.go(e2));
                self.pop(pushed);
                out.extend(body?);
                out.push(Prim::Proj {
                    keep: self.gamma(),
                    drop: items,
                    rest: vec![type_of(a, e)?],
                });
                Ok(out)
            }
            // UNF(e1) ; ~UNF(e2) ; ... ; pair[Γ; A1..Ak]
            Node::Tuple(l) => {
                let items = a.exprs(l).to_vec();
                let (mut out, tys) = self.operands(&items)?;
                out.push(Prim::Pair {
                    ctx: self.gamma(),
                    items: tys,
                });
                Ok(out)
            }
            // UNF(e) ; πi ; proj[Γ; A1×...×An; Ai]
            Node::Proj(i, e1) => self.operator(e, OpKind::Pi(i as usize), &[e1]),
            Node::Op1(op, e1) => self.operator(e, OpKind::Un(op), &[e1]),
            Node::Op2(op, e1, e2) => self.operator(e, OpKind::Bin(op), &[e1, e2]),
            Node::Len(e1) => self.operator(e, OpKind::Len, &[e1]),
            Node::ZerosLike(e1) => self.operator(e, OpKind::ZerosLike, &[e1]),
            Node::OnesLike(e1) => self.operator(e, OpKind::OnesLike, &[e1]),
            // UNF(e2) ; ~UNF(e3) ; map2[Γ; x,y.e1] ; proj[Γ; [n]R, [n]R; [n]R]
            Node::Map2(f, e1, e2) => {
                let (ta, tb) = (type_of(a, e1)?, type_of(a, e2)?);
                expect_real_array(a, e1, &ta)?;
                expect_real_array(a, e2, &tb)?;
                expect_real_elements(a, e, f)?;
                let captures = a
                    .free_vars(f)
                    .into_iter()
                    .map(|c| match self.pos.get(&c) {
                        Some(&p) => Ok((c, p)),
                        None => Err(AdError::IllTyped {
                            expr: e,
                            span: a.span(e),
                            message: format!(
                                "the function of `map2` uses `{}`, which is not bound",
                                a.var_name(c)
                            ),
                        }),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let (mut out, args) = self.operands(&[e1, e2])?;
                let ctx = self.gamma();
                out.push(Prim::Map2 {
                    ctx: ctx.clone(),
                    f,
                    captures,
                    arr: ta.clone(),
                });
                out.push(Prim::Proj {
                    keep: ctx,
                    drop: args,
                    rest: vec![ta],
                });
                Ok(out)
            }
            // UNF(e2) ; ~UNF(e3) ; reduce[Γ; x,y.e1] ; proj[Γ; R, [n]R; R]
            Node::Reduce(f, e1, e2) => {
                let (t0, ta) = (type_of(a, e1)?, type_of(a, e2)?);
                expect_real_array(a, e2, &ta)?;
                if t0 != Type::Real {
                    return Err(unsupported(a, e, "`reduce` with a non-real unit"));
                }
                expect_closed(a, e, f)?;
                let (mut out, args) = self.operands(&[e1, e2])?;
                let ctx = self.gamma();
                out.push(Prim::Reduce {
                    ctx: ctx.clone(),
                    f,
                    arr: ta,
                });
                out.push(Prim::Proj {
                    keep: ctx,
                    drop: args,
                    rest: vec![Type::Real],
                });
                Ok(out)
            }
            node => Err(unsupported(a, e, describe(node))),
        }
    }
}

/// Check that `t` is `[n]real`, for the arrays of `map2` and `reduce`.
fn expect_real_array(a: &Arena, e: ExprId, t: &Type) -> Result<(), AdError> {
    match t {
        Type::Array(_, elem) if **elem == Type::Real => Ok(()),
        _ => Err(AdError::Unsupported {
            expr: e,
            span: a.span(e),
            message: format!(
                "the UNF pipeline differentiates `map2` and `reduce` over arrays of reals only \
                 (the paper's UNF rules), this has type `{t}`; the direct macro supports it"
            ),
        }),
    }
}

/// The free variables of `reduce`'s function must be none (the paper's UNF rule).
fn expect_closed(a: &Arena, at: ExprId, f: ExprId) -> Result<(), AdError> {
    match a.free_vars(f).first() {
        None => Ok(()),
        Some(&v) => Err(AdError::Unsupported {
            expr: at,
            span: a.span(at),
            message: format!(
                "the function of `reduce` uses `{}` from the enclosing scope; the UNF pipeline \
                 supports only closed `reduce` functions (the paper's UNF rule); the direct \
                 macro supports it",
                a.var_name(v)
            ),
        }),
    }
}

/// `[n]real` (elements real) as the result of `map2`.
fn expect_real_elements(a: &Arena, e: ExprId, f: ExprId) -> Result<(), AdError> {
    let (_, _, body) = binary_lambda(a, f)?;
    match a.type_of(body) {
        Some(Type::Real) => Ok(()),
        Some(t) => Err(AdError::Unsupported {
            expr: e,
            span: a.span(e),
            message: format!(
                "the UNF pipeline supports `map2` functions returning reals only (the paper's \
                 UNF rules), this one returns `{t}`; the direct macro supports it"
            ),
        }),
        None => Err(AdError::IllTyped {
            expr: body,
            span: a.span(body),
            message: "this term has not been type-checked".into(),
        }),
    }
}

/// An error for a construct the paper gives no UNF rule for.
fn unsupported(a: &Arena, e: ExprId, what: &str) -> AdError {
    AdError::Unsupported {
        expr: e,
        span: a.span(e),
        message: format!(
            "the UNF pipeline does not support {what} (the paper gives UNF rules for its core \
             Source only); the direct macro supports it"
        ),
    }
}
