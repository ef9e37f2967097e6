//! Unary Normal Form (section "Unary Normal Form"): Source UNF, Target UNF, their
//! judgments and a printer, and the three transformations of the UNF pipeline
//! (`UNF`, the simple `D_ρ`, and `UNF^-1`).
//!
//! A UNF term has no variables: every primitive is indexed by the list of types of the
//! context it runs in, reads the last entries of that list, and returns the whole
//! context extended (or shortened) — a judgment `T1 ⊢ e : T2` between lists of types.
//! `e1 ; e2` is sequential composition.
//!
//! Choices and departures from the figures:
//! - Indices are 0-based inside; the printer shows `var` indices 1-based, as the paper.
//! - `pair` is n-ary (`pair[T; A1, ..., Ak]`, k ≥ 2), since Source has n-tuples, and
//!   `unpack` (its inverse, `T, A1×...×Ak ⊢ T, A1, ..., Ak`) translates `let (x, y) = e`.
//! - `op` has typed arguments: besides constants and scalar operators it covers the tuple
//!   projections `πi` (the paper's "πi seen as a unary operator"), `len`, `zeros_like`
//!   and `ones_like`: `T, A1, ..., An ⊢ op : T, A1, ..., An, B`.
//! - `reduce` takes its unit from the context, `T, R, [n]R ⊢ reduce : T, R, [n]R, R`, where
//!   the paper embeds the unit as a Source term: the paper's `J^T reduce` then drops the
//!   unit's derivative, which is wrong when the unit depends on the inputs.
//! - `J^T p` for `T1 ⊢ p : T2` is typed `T1, T2 ⊢ J^T p : T1`: it reads the primal values
//!   (`T1`, the linearization point) and the adjoint of its output (`T2`). The paper's
//!   figure gives it only the adjoints and lets `UNF^-1` read the primal values from
//!   variables that its `∘` rule then also renames. Correspondingly `e1 ∘ e2` is typed
//!   `T1 ⊢ e1 : [T3 → B]`, `T1, T2 ⊢ e2 : T3` gives `T1 ⊢ e1 ∘ e2 : [T2 → B]`: the
//!   function's parameters `T2` are appended to the context of `e2`.
//! - In `J^T map2` and `J^T op`, the adjoints of the operands are *added to* (the paper's
//!   `J^T map2` overwrites them; that is only right when a projection dropped them).

pub mod diff;
pub(crate) mod inverse;
pub mod translate;

use std::fmt::Write;

use unfad_syntax::{Arena, BinOp, ExprId, Printer, Type, UnOp, Var};

/// A UNF type: a list of types of Source (or Target).
pub type Ctx = Vec<Type>;

/// A judgment that does not hold, or a malformed primitive.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnfError(pub String);

/// What an `op` primitive computes from its arguments.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum OpKind {
    /// A real constant: a 0-ary operator.
    Const(f64),
    Un(UnOp),
    Bin(BinOp),
    /// `πi` of a tuple (0-based).
    Pi(usize),
    Len,
    ZerosLike,
    OnesLike,
}

/// The primitives of Source UNF.
#[derive(Clone, Debug, PartialEq)]
pub enum Prim {
    /// `var_{T;i}`: `T ⊢ T, T_i`.
    Var { ctx: Ctx, i: usize },
    /// `op_{T;n}`: `T, A1..An ⊢ T, A1..An, B`.
    Op {
        ctx: Ctx,
        op: OpKind,
        args: Vec<Type>,
        ret: Type,
    },
    /// `pair_{T;A1×...×Ak}`: `T, A1..Ak ⊢ T, A1×...×Ak`.
    Pair { ctx: Ctx, items: Vec<Type> },
    /// `unpack_{T;A1×...×Ak}`: `T, A1×...×Ak ⊢ T, A1..Ak`.
    Unpack { ctx: Ctx, items: Vec<Type> },
    /// `proj_{T1;T2;T3}`: `T1, T2, T3 ⊢ T1, T3`.
    Proj { keep: Ctx, drop: Ctx, rest: Ctx },
    /// `map2_{T;x,y.e}`: `T, [n]R, [n]R ⊢ T, [n]R, [n]R, [n]R`. `f` is the Source function
    /// `(x, y. e)`; its free variables are `captures`, each with its index in `T`.
    Map2 {
        ctx: Ctx,
        f: ExprId,
        captures: Vec<(Var, usize)>,
        arr: Type,
    },
    /// `reduce_{T;x,y.e}`: `T, R, [n]R ⊢ T, R, [n]R, R`; `f` is closed.
    Reduce { ctx: Ctx, f: ExprId, arr: Type },
}

/// A term of Source UNF: a sequential composition `p1 ; ... ; pn` of primitives.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceUnf {
    pub prims: Vec<Prim>,
}

/// A term of Target UNF.
#[derive(Clone, Debug, PartialEq)]
pub enum TargetUnf {
    Prim(Prim),
    /// `J^T p`: the transposed Jacobian of a primitive.
    JT(Prim),
    /// `e1 ; ... ; en`
    Seq(Vec<TargetUnf>),
    /// `<e1, e2>`
    Pair(Box<TargetUnf>, Box<TargetUnf>),
    /// `e1 ∘ e2`: internal composition (pre-composition of the function `e1` by `e2`).
    Compose(Box<TargetUnf>, Box<TargetUnf>),
}

fn err<T>(msg: impl Into<String>) -> Result<T, UnfError> {
    Err(UnfError(msg.into()))
}

fn concat(a: &[Type], b: &[Type]) -> Ctx {
    let mut v = a.to_vec();
    v.extend_from_slice(b);
    v
}

/// `[A1, ..., An]` as printed in messages and by the printer.
pub fn show_ctx(ctx: &[Type]) -> String {
    let items: Vec<String> = ctx.iter().map(|t| t.to_string()).collect();
    items.join(", ")
}

impl OpKind {
    /// The result type for the argument types `args`, or why they do not fit.
    fn signature(self, args: &[Type]) -> Result<Type, UnfError> {
        let bad = || {
            err(format!(
                "operator `{}` cannot take arguments [{}]",
                self.name(),
                show_ctx(args)
            ))
        };
        match (self, args) {
            (OpKind::Const(_), []) => Ok(Type::Real),
            (OpKind::Un(_), [Type::Real]) => Ok(Type::Real),
            (OpKind::Bin(_), [Type::Real, Type::Real]) => Ok(Type::Real),
            (OpKind::Pi(i), [Type::Tuple(items)]) if i < items.len() => Ok(items[i].clone()),
            (OpKind::Len, [Type::Array(..)]) => Ok(Type::Real),
            (OpKind::ZerosLike | OpKind::OnesLike, [t]) if t.is_ground() => Ok(t.clone()),
            _ => bad(),
        }
    }

    /// The printed name: the operator, the constant, `pi1`, ...
    pub fn name(self) -> String {
        match self {
            OpKind::Const(c) => unfad_syntax::format_const(c),
            OpKind::Un(UnOp::Neg) => "neg".into(),
            OpKind::Un(op) => op.name().into(),
            OpKind::Bin(op) => op.name().into(),
            OpKind::Pi(i) => format!("pi{}", i + 1),
            OpKind::Len => "len".into(),
            OpKind::ZerosLike => "zeros_like".into(),
            OpKind::OnesLike => "ones_like".into(),
        }
    }
}

fn binary_function(a: &Arena, f: ExprId) -> Result<(Var, Var, ExprId), UnfError> {
    match a.lambda_parts(f) {
        Some((&[x, y], body)) => Ok((x, y, body)),
        _ => err("the function of an array primitive is not a binder `(x, y. e)`"),
    }
}

fn expect_real_array(arr: &Type, what: &str) -> Result<(), UnfError> {
    match arr {
        Type::Array(_, e) if **e == Type::Real => Ok(()),
        _ => err(format!("`{what}` works on arrays of reals, not `{arr}`")),
    }
}

impl Prim {
    /// The judgment `T1 ⊢ p : T2` of the primitive, checking its indices.
    pub fn judgment(&self, a: &Arena) -> Result<(Ctx, Ctx), UnfError> {
        match self {
            Prim::Var { ctx, i } => match ctx.get(*i) {
                Some(t) => Ok((ctx.clone(), concat(ctx, std::slice::from_ref(t)))),
                None => err(format!(
                    "`var` index {} is outside its context [{}]",
                    i + 1,
                    show_ctx(ctx)
                )),
            },
            Prim::Op { ctx, op, args, ret } => {
                let r = op.signature(args)?;
                if r != *ret {
                    return err(format!(
                        "operator `{}` on [{}] returns `{r}`, not `{ret}`",
                        op.name(),
                        show_ctx(args)
                    ));
                }
                let input = concat(ctx, args);
                let output = concat(&input, std::slice::from_ref(ret));
                Ok((input, output))
            }
            Prim::Pair { ctx, items } | Prim::Unpack { ctx, items } => {
                if items.len() < 2 {
                    return err("`pair` and `unpack` need at least two components");
                }
                let tuple = Type::tuple(items.clone());
                let flat = concat(ctx, items);
                let packed = concat(ctx, &[tuple]);
                Ok(match self {
                    Prim::Pair { .. } => (flat, packed),
                    _ => (packed, flat),
                })
            }
            Prim::Proj { keep, drop, rest } => {
                let input = concat(&concat(keep, drop), rest);
                Ok((input, concat(keep, rest)))
            }
            Prim::Map2 {
                ctx,
                f,
                captures,
                arr,
            } => {
                expect_real_array(arr, "map2")?;
                binary_function(a, *f)?;
                for &(c, p) in captures {
                    let Some(t) = ctx.get(p) else {
                        return err(format!(
                            "`map2` captures `{}` at index {}, outside its context",
                            a.var_name(c),
                            p + 1
                        ));
                    };
                    if a.var_type(c) != Some(t) {
                        return err(format!(
                            "`map2` captures `{}` at index {}, which has type `{t}`",
                            a.var_name(c),
                            p + 1
                        ));
                    }
                }
                let two = [arr.clone(), arr.clone()];
                let three = [arr.clone(), arr.clone(), arr.clone()];
                Ok((concat(ctx, &two), concat(ctx, &three)))
            }
            Prim::Reduce { ctx, f, arr } => {
                expect_real_array(arr, "reduce")?;
                binary_function(a, *f)?;
                if let Some(&v) = a.free_vars(*f).first() {
                    return err(format!(
                        "the function of `reduce` must be closed, it uses `{}`",
                        a.var_name(v)
                    ));
                }
                let input = concat(ctx, &[Type::Real, arr.clone()]);
                let output = concat(&input, &[Type::Real]);
                Ok((input, output))
            }
        }
    }
}

impl SourceUnf {
    /// The judgment `T1 ⊢ p1 ; ... ; pn : T2`, checking every composition.
    pub fn judgment(&self, a: &Arena) -> Result<(Ctx, Ctx), UnfError> {
        seq_judgment(
            self.prims
                .iter()
                .map(|p| (p.judgment(a), || print_prim(a, p))),
        )
    }
}

/// The judgment of a sequence from the judgments of its steps (with their printed forms
/// for messages).
fn seq_judgment<F: Fn() -> String>(
    steps: impl Iterator<Item = (Result<(Ctx, Ctx), UnfError>, F)>,
) -> Result<(Ctx, Ctx), UnfError> {
    let mut acc: Option<(Ctx, Ctx)> = None;
    for (k, (j, show)) in steps.enumerate() {
        let (i, o) = j?;
        acc = Some(match acc {
            None => (i, o),
            Some((first, prev)) => {
                if prev != i {
                    return err(format!(
                        "`;` does not compose at step {}: the steps before produce [{}] but `{}` \
                         expects [{}]",
                        k + 1,
                        show_ctx(&prev),
                        show(),
                        show_ctx(&i)
                    ));
                }
                (first, o)
            }
        });
    }
    acc.ok_or_else(|| UnfError("an empty sequence has no judgment".into()))
}

impl TargetUnf {
    /// The judgment `T1 ⊢ e : T2`.
    pub fn judgment(&self, a: &Arena) -> Result<(Ctx, Ctx), UnfError> {
        match self {
            TargetUnf::Prim(p) => p.judgment(a),
            TargetUnf::JT(p) => {
                let (i, o) = p.judgment(a)?;
                Ok((concat(&i, &o), i))
            }
            TargetUnf::Seq(es) => {
                seq_judgment(es.iter().map(|e| (e.judgment(a), || inline(a, e, false))))
            }
            TargetUnf::Pair(e1, e2) => {
                let (i1, o1) = e1.judgment(a)?;
                let (i2, o2) = e2.judgment(a)?;
                if i1 != i2 {
                    return err(format!(
                        "the components of `<e1, e2>` run in different contexts: [{}] and [{}]",
                        show_ctx(&i1),
                        show_ctx(&i2)
                    ));
                }
                Ok((i1, concat(&o1, &o2)))
            }
            TargetUnf::Compose(e1, e2) => {
                let (t1, o1) = e1.judgment(a)?;
                let (params, ret) = match o1.as_slice() {
                    [Type::Func(ps, r)] => (ps.to_vec(), (**r).clone()),
                    _ => {
                        return err(format!(
                            "the left of `∘` must produce one function, it produces [{}]",
                            show_ctx(&o1)
                        ))
                    }
                };
                let (i2, o2) = e2.judgment(a)?;
                if !i2.starts_with(&t1) {
                    return err(format!(
                        "the right of `∘` must run in the context [{}] extended by the \
                         function's parameters, it runs in [{}]",
                        show_ctx(&t1),
                        show_ctx(&i2)
                    ));
                }
                if o2 != params {
                    return err(format!(
                        "the right of `∘` produces [{}] but the function takes [{}]",
                        show_ctx(&o2),
                        show_ctx(&params)
                    ));
                }
                let t2 = i2[t1.len()..].to_vec();
                Ok((t1, vec![Type::func(t2, ret)]))
            }
        }
    }
}

/// `map2[T; x, y. e]`, with the captures' indices: `map2[T; x, y. e; w = #3]`.
fn print_function(a: &Arena, f: ExprId, captures: &[(Var, usize)]) -> String {
    let mut p = Printer::new(a);
    let Ok((x, y, body)) = binary_function(a, f) else {
        return p.expr(f);
    };
    let (nx, ny) = (p.name(x), p.name(y));
    let mut s = format!("{nx}, {ny}. {}", p.expr(body));
    for &(c, i) in captures {
        let _ = write!(s, "; {} = #{}", p.name(c), i + 1);
    }
    s
}

/// One primitive, e.g. `var[real, real; 1]` or `op *[real; real, real]`.
pub fn print_prim(a: &Arena, p: &Prim) -> String {
    match p {
        Prim::Var { ctx, i } => format!("var[{}; {}]", show_ctx(ctx), i + 1),
        Prim::Op { ctx, op, args, .. } => {
            format!("op {}[{}; {}]", op.name(), show_ctx(ctx), show_ctx(args))
        }
        Prim::Pair { ctx, items } => format!("pair[{}; {}]", show_ctx(ctx), show_ctx(items)),
        Prim::Unpack { ctx, items } => format!("unpack[{}; {}]", show_ctx(ctx), show_ctx(items)),
        Prim::Proj { keep, drop, rest } => format!(
            "proj[{}; {}; {}]",
            show_ctx(keep),
            show_ctx(drop),
            show_ctx(rest)
        ),
        Prim::Map2 {
            ctx, f, captures, ..
        } => format!(
            "map2[{}; {}]",
            show_ctx(ctx),
            print_function(a, *f, captures)
        ),
        Prim::Reduce { ctx, f, .. } => {
            format!("reduce[{}; {}]", show_ctx(ctx), print_function(a, *f, &[]))
        }
    }
}

/// A Source UNF term, one primitive per line.
pub fn print_source(a: &Arena, e: &SourceUnf) -> String {
    let lines: Vec<String> = e.prims.iter().map(|p| print_prim(a, p)).collect();
    lines.join(" ;\n") + "\n"
}

/// A Target UNF term; a top-level sequence is printed one step per line.
pub fn print_target(a: &Arena, e: &TargetUnf) -> String {
    match e {
        TargetUnf::Seq(es) => {
            let lines: Vec<String> = es.iter().map(|e| inline(a, e, false)).collect();
            lines.join(" ;\n") + "\n"
        }
        _ => inline(a, e, false) + "\n",
    }
}

/// `e` on one line; `operand` asks for parentheses around compositions.
fn inline(a: &Arena, e: &TargetUnf, operand: bool) -> String {
    match e {
        TargetUnf::Prim(p) => print_prim(a, p),
        TargetUnf::JT(p) => format!("J^T {}", print_prim(a, p)),
        TargetUnf::Seq(es) => {
            let parts: Vec<String> = es.iter().map(|e| inline(a, e, true)).collect();
            let s = parts.join(" ; ");
            if operand && es.len() > 1 {
                format!("({s})")
            } else {
                s
            }
        }
        TargetUnf::Pair(e1, e2) => format!("<{}, {}>", inline(a, e1, false), inline(a, e2, false)),
        TargetUnf::Compose(e1, e2) => {
            let s = format!("{} ∘ {}", inline(a, e1, true), inline(a, e2, true));
            if operand {
                format!("({s})")
            } else {
                s
            }
        }
    }
}
