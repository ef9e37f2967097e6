//! Programs: the prelude and the user's text, parsed into one arena and assembled from the
//! parser's definitions, each type-checked in the program's [`Definitions`]; entry points,
//! and inlining of calls.

use crate::fast_hash::FastMap as HashMap;
use std::sync::Arc;

pub use crate::definitions::Def;
use crate::definitions::Definitions;
use crate::error::{Error, ErrorKind};
use crate::ops::BinOp;
use crate::parser::Parser;
use crate::span::{SourceId, Span};
use crate::term::{with_stack, Arena, DefId, ExprId, Node, Var};
use crate::typeck::{self, unify};
use crate::types::{Size, Type};

/// The built-in prelude, in the language itself; every program can call these.
pub const PRELUDE: &str = "\
// The prelude: definitions every program can call.
def sum(A: [n]real) = reduce + 0 A
def prod(A: [n]real) = reduce * 1 A
def dot(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)
";

/// A parsed (and, after [`Program::load`], type-checked) program.
#[derive(Clone, Debug)]
pub struct Program {
    pub arena: Arena,
    pub defs: Vec<Def>,
    sources: Vec<String>,
}

/// A closed function: the entry point with every call inlined. This is what the later
/// stages transform. Its parameters carry their types; `ret` is the result type.
#[derive(Clone, Debug)]
pub struct Func {
    pub name: String,
    pub params: Vec<Var>,
    pub body: ExprId,
    pub ret: Type,
}

impl Func {
    pub fn param_types(&self, arena: &Arena) -> Vec<Type> {
        self.params
            .iter()
            .map(|&p| arena.var_type(p).cloned().expect("parameters are typed"))
            .collect()
    }

    pub fn param_names(&self, arena: &Arena) -> Vec<String> {
        self.params
            .iter()
            .map(|&p| arena.var_name(p).to_string())
            .collect()
    }

    /// Size variables of the parameters, in order of first occurrence: the sizes in their
    /// types, and the name of each int parameter (whose value is a size, as in `iota n`).
    pub fn size_vars(&self, arena: &Arena) -> Vec<Arc<str>> {
        let mut out = Vec::new();
        for (&p, t) in self.params.iter().zip(self.param_types(arena)) {
            t.size_vars(&mut out);
            if t == Type::Int {
                let name: Arc<str> = arena.var_name(p).into();
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        out
    }
}

impl Program {
    /// Parse the prelude and `text` (no type checking).
    pub fn parse(text: &str) -> Result<Program, Error> {
        Program::parse_in(text, Arena::new())
    }

    /// Parse and type-check every definition.
    pub fn load(text: &str) -> Result<Program, Error> {
        Program::load_in(text, Arena::new())
    }

    /// [`Program::parse`] into `arena`, emptied first (its tables keep their room: a
    /// compiler that reuses one arena does not allocate and fault in its memory again).
    pub fn parse_in(text: &str, mut arena: Arena) -> Result<Program, Error> {
        arena.clear();
        let mut defs = Parser::new(&mut arena, PRELUDE, SourceId::PRELUDE, &[]).program()?;
        let user = Parser::new(&mut arena, text, SourceId::USER, &defs).program()?;
        defs.extend(user);
        Ok(Program {
            arena,
            defs,
            sources: vec![PRELUDE.to_string(), text.to_string()],
        })
    }

    /// [`Program::load`] into `arena` (see [`Program::parse_in`]).
    pub fn load_in(text: &str, arena: Arena) -> Result<Program, Error> {
        let mut prog = Program::parse_in(text, arena)?;
        for i in 0..prog.defs.len() {
            prog.check_def(DefId(i as u32))?;
        }
        Ok(prog)
    }

    /// The definitions and texts, as the type checker sees them.
    pub fn definitions(&self) -> Definitions<'_> {
        Definitions {
            defs: &self.defs,
            sources: &self.sources,
        }
    }

    pub fn source_text(&self, src: SourceId) -> &str {
        self.definitions().source_text(src)
    }

    /// An error at `span`, with its line and column.
    pub fn error_at(&self, kind: ErrorKind, span: Span, message: impl Into<String>) -> Error {
        self.definitions().error_at(kind, span, message)
    }

    /// Parse `text` as one expression in which `scope` names are visible (for tools and
    /// tests); the text becomes the program's user source.
    pub fn parse_expr(&mut self, text: &str, scope: &[(String, Var)]) -> Result<ExprId, Error> {
        self.sources[SourceId::USER.0 as usize] = text.to_string();
        Parser::new(&mut self.arena, text, SourceId::USER, &self.defs)
            .with_scope(scope)
            .lone_expr()
    }

    fn check_def(&mut self, d: DefId) -> Result<(), Error> {
        let def = self.defs[d.0 as usize].clone();
        let mut sizes = Vec::new();
        for (&p, t) in def.params.iter().zip(&def.param_types) {
            if !t.is_ground() {
                let name = self.arena.var_name(p).to_string();
                return Err(self.error_at(
                    ErrorKind::Type,
                    def.span,
                    format!("parameter `{name}` has type `{t}`; parameters are reals, tuples and arrays"),
                ));
            }
            t.size_vars(&mut sizes);
            if *t == Type::Int {
                // An int parameter is also the size variable of its name (`iota n`).
                sizes.push(self.arena.var_name(p).into());
            }
        }
        let env = Definitions {
            defs: &self.defs,
            sources: &self.sources,
        };
        let ret = typeck::infer(&mut self.arena, &env, def.body)?;
        if let Some(annot) = &def.ret_annot {
            if *annot != ret {
                return Err(self.error_at(
                    ErrorKind::Type,
                    self.arena.span(def.body),
                    format!(
                        "`{}` is declared to return `{annot}` but its body has type `{ret}`",
                        def.name
                    ),
                ));
            }
        }
        let mut ret_sizes = Vec::new();
        ret.size_vars(&mut ret_sizes);
        // A derived size (`n - m + 1`) is known when the sizes it is computed from are.
        let known =
            |v: &Arc<str>| crate::size_expr::known_from(v, &|n| sizes.iter().any(|s| &**s == n));
        if let Some(v) = ret_sizes.iter().find(|v| !known(v)) {
            return Err(self.error_at(
                ErrorKind::Type,
                def.span,
                format!(
                    "the size `{v}` of the result of `{}` is not the size of any parameter",
                    def.name
                ),
            ));
        }
        if ret == Type::Bool {
            return Err(self.error_at(
                ErrorKind::Type,
                self.arena.span(def.body),
                format!(
                    "`{}` returns a condition; a definition returns reals, tuples or arrays",
                    def.name
                ),
            ));
        }
        self.defs[d.0 as usize].ret = Some(ret);
        Ok(())
    }

    /// The definition called `name`, or by default the last definition of the user's text.
    pub fn entry(&self, name: Option<&str>) -> Result<DefId, Error> {
        match name {
            Some(n) => self
                .defs
                .iter()
                .rposition(|d| d.name == n)
                .map(|i| DefId(i as u32))
                .ok_or_else(|| {
                    let user: Vec<&str> = self
                        .defs
                        .iter()
                        .filter(|d| d.span.src == SourceId::USER)
                        .map(|d| d.name.as_str())
                        .collect();
                    Error::whole_program(
                        ErrorKind::Usage,
                        format!(
                            "there is no definition named `{n}` (the program defines: {})",
                            user.join(", ")
                        ),
                    )
                }),
            None => self
                .defs
                .iter()
                .rposition(|d| d.span.src == SourceId::USER)
                .map(|i| DefId(i as u32))
                .ok_or_else(|| {
                    Error::whole_program(
                        ErrorKind::Syntax,
                        "the program has no definition (`def f(x: real) = ...`)",
                    )
                }),
        }
    }

    /// The definition `d` as a closed function: every call inlined (arguments bound by
    /// `let`), every binder fresh, every node typed.
    pub fn inline(&mut self, d: DefId) -> Result<Func, Error> {
        let def = self.defs[d.0 as usize].clone();
        let Some(ret) = def.ret.clone() else {
            return Err(Error::whole_program(
                ErrorKind::Type,
                format!("`{}` has not been type-checked", def.name),
            ));
        };
        let mut ren = HashMap::default();
        let params: Vec<Var> = def
            .params
            .iter()
            .map(|&p| {
                let q = self.arena.clone_var(p);
                ren.insert(p, q);
                q
            })
            .collect();
        let no_sizes = HashMap::default();
        let body = inline_expr(&mut self.arena, &self.defs, def.body, &mut ren, &no_sizes);
        let func = Func {
            name: def.name.clone(),
            params,
            body,
            ret,
        };
        let env = Definitions {
            defs: &self.defs,
            sources: &self.sources,
        };
        let t = typeck::infer(&mut self.arena, &env, func.body)?;
        debug_assert_eq!(t, func.ret);
        Ok(func)
    }
}

/// Copy `e` with fresh binders (types instantiated by `sizes`) and calls inlined.
fn inline_expr(
    arena: &mut Arena,
    defs: &[Def],
    e: ExprId,
    ren: &mut HashMap<Var, Var>,
    sizes: &HashMap<Arc<str>, Size>,
) -> ExprId {
    with_stack(|| {
        let span = arena.span(e);
        match arena[e] {
            Node::Var(v) => match ren.get(&v) {
                Some(&w) => arena.add_at(Node::Var(w), span),
                None => e,
            },
            Node::Call(d, l) => {
                let args = arena.exprs(l).to_vec();
                let def = &defs[d.0 as usize];
                // Instantiate the callee's sizes from the (checked) argument types.
                let mut callee_sizes: HashMap<Arc<str>, Size> = HashMap::default();
                for (&a, &p) in args.iter().zip(&def.params) {
                    let ta = arena.type_of(a).cloned().expect("arguments are typed");
                    let ta = ta.subst_sizes(&|v| sizes.get(v).cloned());
                    let tp = arena.var_type(p).cloned().expect("parameters are typed");
                    // A whole-number literal or length for an int parameter (typed `real`,
                    // accepted by the checker's `call`) binds no size.
                    if tp == Type::Int && ta == Type::Real {
                        continue;
                    }
                    unify(&tp, &ta, &mut callee_sizes).expect("calls are checked");
                }
                let new_args: Vec<ExprId> = args
                    .iter()
                    .map(|&a| inline_expr(arena, defs, a, ren, sizes))
                    .collect();
                let mut callee_ren = HashMap::default();
                let mut params = Vec::new();
                for &p in &def.params {
                    let tp = arena
                        .var_type(p)
                        .map(|t| t.subst_sizes(&|v| callee_sizes.get(v).cloned()));
                    let name = arena.var_name(p).to_string();
                    let q = arena.fresh_var(&name, tp);
                    callee_ren.insert(p, q);
                    params.push(q);
                }
                let mut body = inline_expr(arena, defs, def.body, &mut callee_ren, &callee_sizes);
                for (q, a) in params.into_iter().zip(new_args).rev() {
                    body = arena.add_at(Node::Let(q, a, body), span);
                }
                body
            }
            // The function of a derivative is inlined as a call's body is, its sizes bound
            // by the arguments: the term the pipeline differentiates is closed and has the
            // sizes of the program around it.
            Node::Derivative(k, f, l) => {
                let args = arena.exprs(l).to_vec();
                let Some((ps, body)) = arena.lambda_parts(f).map(|(p, b)| (p.to_vec(), b)) else {
                    return e;
                };
                let ptypes: Vec<Type> = ps
                    .iter()
                    .map(|&p| arena.var_type(p).cloned().expect("parameters are typed"))
                    .collect();
                let arg_type = |arena: &Arena, a: ExprId| {
                    let t = arena.type_of(a).cloned().expect("arguments are typed");
                    t.subst_sizes(&|v| sizes.get(v).cloned())
                };
                let mut callee_sizes: HashMap<Arc<str>, Size> = HashMap::default();
                match k {
                    crate::term::Derivative::Jvp => {
                        let point = Type::product(ptypes.clone());
                        let _ = unify(&point, &arg_type(arena, args[0]), &mut callee_sizes);
                    }
                    crate::term::Derivative::Grad { .. } => {
                        for (&a, tp) in args.iter().zip(&ptypes) {
                            let _ = unify(tp, &arg_type(arena, a), &mut callee_sizes);
                        }
                    }
                }
                let new_args: Vec<ExprId> = args
                    .iter()
                    .map(|&a| inline_expr(arena, defs, a, ren, sizes))
                    .collect();
                let mut callee_ren = HashMap::default();
                let mut params = Vec::with_capacity(ps.len());
                for (&p, tp) in ps.iter().zip(&ptypes) {
                    let name = arena.var_name(p).to_string();
                    let tp = tp.subst_sizes(&|v| callee_sizes.get(v).cloned());
                    let q = arena.fresh_var(&name, Some(tp));
                    callee_ren.insert(p, q);
                    params.push(q);
                }
                let body = inline_expr(arena, defs, body, &mut callee_ren, &callee_sizes);
                let fspan = arena.span(f);
                let vl = arena.var_list(&params);
                let lam = arena.add_at(Node::Lambda(vl, body), fspan);
                let al = arena.expr_list(&new_args);
                arena.add_at(Node::Derivative(k, lam, al), span)
            }
            node => {
                let node = arena.map_binders(node, |arena, v| {
                    let name = arena.var_name(v).to_string();
                    let ty = arena
                        .var_type(v)
                        .map(|t| t.subst_sizes(&|s| sizes.get(s).cloned()));
                    let w = arena.fresh_var(&name, ty);
                    ren.insert(v, w);
                    w
                });
                let new =
                    arena.map_children(node, |arena, c| inline_expr(arena, defs, c, ren, sizes));
                // `/` on ints is the int quotient: one operator per meaning from here on.
                let new = match new {
                    Node::Op2(BinOp::Div, a, b) if arena.type_of(e) == Some(&Type::Int) => {
                        Node::Op2(BinOp::IntDiv, a, b)
                    }
                    new => new,
                };
                arena.add_at(new, span)
            }
        }
    })
}
