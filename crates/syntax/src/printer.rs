//! Pretty-printer in the surface syntax.
//!
//! The output parses back to the same term up to the names of bound variables: every
//! distinct variable gets a distinct printed name (its hint, made unique with a suffix),
//! so no shadowing can change the meaning. `let` chains are printed one binding per line
//! as in the paper's listings; free lambdas carry their parameter types, binders of array
//! operations do not (they are inferred).

use crate::fast_hash::{FastMap as HashMap, FastSet as HashSet};

use crate::lexer::KEYWORDS;
use crate::ops::{BinOp, UnOp};
use crate::program::Func;
use crate::term::{with_stack, Arena, DefId, ExprId, Node, Var};

// Precedence levels, loosest first.
const P_OPEN: u8 = 0; // let, if, fun: extend as far right as possible
const P_OR: u8 = 1;
const P_AND: u8 = 2;
const P_CMP: u8 = 3;
const P_ADD: u8 = 4;
const P_MUL: u8 = 5;
const P_UNARY: u8 = 6;
const P_OPERAND: u8 = 7; // atoms, including prefix forms (`fst e`, `map f A`)
const P_PRIMARY: u8 = 8; // what `.i` and `(args)` may follow

const WIDTH: usize = 100;

/// Prints terms of one arena, choosing names consistently across calls.
pub struct Printer<'a> {
    arena: &'a Arena,
    def_names: Vec<String>,
    names: HashMap<Var, String>,
    used: HashSet<String>,
}

/// Print one expression.
pub fn print_expr(arena: &Arena, e: ExprId) -> String {
    Printer::new(arena).expr(e)
}

/// Print a closed function as a definition.
pub fn print_func(arena: &Arena, f: &Func) -> String {
    Printer::new(arena).func(f)
}

fn valid_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '\'')
}

fn reserved(s: &str) -> bool {
    KEYWORDS.iter().any(|(k, _)| *k == s)
        || UnOp::from_name(s).is_some()
        || BinOp::from_name(s).is_some()
}

/// A constant as the parser reads it back (integers without a fraction).
pub fn format_const(c: f64) -> String {
    if c.is_nan() {
        "(0 / 0)".into()
    } else if c.is_infinite() {
        if c > 0.0 {
            "(1 / 0)".into()
        } else {
            "(-1 / 0)".into()
        }
    } else if c.fract() == 0.0 && c.abs() < 1e15 {
        if c == 0.0 && c.is_sign_negative() {
            "-0".into()
        } else {
            format!("{}", c as i64)
        }
    } else {
        format!("{c:?}")
    }
}

fn indent_str(n: usize) -> String {
    " ".repeat(n)
}

impl<'a> Printer<'a> {
    pub fn new(arena: &'a Arena) -> Printer<'a> {
        Printer {
            arena,
            def_names: Vec::new(),
            names: HashMap::default(),
            used: HashSet::default(),
        }
    }

    /// Names of the program's definitions, for printing calls (before inlining).
    pub fn with_defs(mut self, names: Vec<String>) -> Self {
        self.used.extend(names.iter().cloned());
        self.def_names = names;
        self
    }

    /// The printed name of `v`, chosen on first use.
    pub fn name(&mut self, v: Var) -> String {
        if let Some(n) = self.names.get(&v) {
            return n.clone();
        }
        let hint = self.arena.var_name(v);
        let base = if valid_ident(hint) && hint != "_" {
            hint.to_string()
        } else {
            "v".to_string()
        };
        let mut name = base.clone();
        let mut k = 1;
        while reserved(&name) || self.used.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.used.insert(name.clone());
        self.names.insert(v, name.clone());
        name
    }

    pub fn func(&mut self, f: &Func) -> String {
        let params: Vec<String> = f
            .params
            .iter()
            .map(|&p| {
                let n = self.name(p);
                match self.arena.var_type(p) {
                    Some(t) => format!("{n}: {t}"),
                    None => n,
                }
            })
            .collect();
        let body = self.print(f.body, P_OPEN, 2);
        format!(
            "def {}({}): {} =\n  {}\n",
            f.name,
            params.join(", "),
            f.ret,
            body
        )
    }

    pub fn expr(&mut self, e: ExprId) -> String {
        self.print(e, P_OPEN, 0)
    }

    /// `e` printed where an expression of level `min` is required, continuation lines
    /// indented by `ind`.
    fn print(&mut self, e: ExprId, min: u8, ind: usize) -> String {
        with_stack(|| {
            let (text, level) = self.form(e, ind);
            if level < min {
                format!("({})", text.replace('\n', "\n "))
            } else {
                text
            }
        })
    }

    /// An operand of a prefix form: prefix forms inside it are parenthesised, as in the
    /// paper's `reduce + 0 (map2 * A B)`.
    fn operand(&mut self, e: ExprId, ind: usize) -> String {
        self.print(e, P_PRIMARY, ind)
    }

    fn list(&mut self, items: &[ExprId], ind: usize) -> String {
        let parts: Vec<String> = items
            .iter()
            .map(|&i| self.print(i, P_OPEN + 1, ind + 2))
            .collect();
        let flat = parts.join(", ");
        if flat.contains('\n') || flat.len() > WIDTH {
            let pad = indent_str(ind + 2);
            format!(
                "\n{pad}{}\n{}",
                parts.join(&format!(",\n{pad}")),
                indent_str(ind)
            )
        } else {
            flat
        }
    }

    /// The function argument of an array operation: a section if it is one.
    fn function_arg(&mut self, f: ExprId, ind: usize) -> String {
        let Node::Lambda(ps, body) = self.arena[f] else {
            return self.print(f, P_PRIMARY, ind);
        };
        let params = self.arena.vars_of(ps).to_vec();
        if let (&[x, y], Node::Op2(op, a, b)) = (params.as_slice(), self.arena[body]) {
            let is_section = BinOp::from_section(op.name()).is_some();
            if is_section
                && x != y
                && self.arena[a] == Node::Var(x)
                && self.arena[b] == Node::Var(y)
            {
                return op.name().to_string();
            }
        }
        let names: Vec<String> = params.iter().map(|&p| self.name(p)).collect();
        let body = self.print(body, P_OPEN, ind + 2);
        if body.contains('\n') {
            format!("({}.\n{}{})", names.join(", "), indent_str(ind + 2), body)
        } else {
            format!("({}. {})", names.join(", "), body)
        }
    }

    /// The text of `e` and its precedence level.
    fn form(&mut self, e: ExprId, ind: usize) -> (String, u8) {
        use Node::*;
        let a = self.arena;
        match a[e] {
            Const(c) => (
                format_const(c),
                if c < 0.0 || (c == 0.0 && c.is_sign_negative()) {
                    P_UNARY
                } else {
                    P_PRIMARY
                },
            ),
            Bool(b) => (b.to_string(), P_PRIMARY),
            Var(v) => (self.name(v), P_PRIMARY),
            Let(..) | LetTuple(..) => (self.let_chain(e, ind), P_OPEN),
            Tuple(l) => {
                let items = a.exprs(l).to_vec();
                (format!("({})", self.list(&items, ind)), P_PRIMARY)
            }
            Array(l) => {
                let items = a.exprs(l).to_vec();
                (format!("[{}]", self.list(&items, ind)), P_PRIMARY)
            }
            Proj(i, x) if i < 2 => {
                let kw = if i == 0 { "fst" } else { "snd" };
                (format!("{kw} {}", self.operand(x, ind)), P_OPERAND)
            }
            Proj(i, x) => {
                let base = match a[x] {
                    Var(_) | Tuple(_) | App(..) | Call(..) => self.print(x, P_PRIMARY, ind),
                    _ => format!("({})", self.print(x, P_OPEN, ind)),
                };
                (format!("{base}.{i}"), P_PRIMARY)
            }
            Op1(UnOp::Neg, x) => {
                let inner = self.print(x, P_UNARY, ind);
                let sep = if inner.starts_with('-') { " " } else { "" };
                (format!("-{sep}{inner}"), P_UNARY)
            }
            Op1(op, x) => (
                format!("{}({})", op.name(), self.print(x, P_OPEN + 1, ind)),
                P_PRIMARY,
            ),
            Op2(op, x, y) if op.is_infix() => {
                let level = if matches!(op, BinOp::Add | BinOp::Sub) {
                    P_ADD
                } else {
                    P_MUL
                };
                let l = self.print(x, level, ind);
                let r = self.print(y, level + 1, ind);
                (format!("{l} {} {r}", op.name()), level)
            }
            Op2(op, x, y) => {
                let l = self.print(x, P_OPEN + 1, ind);
                let r = self.print(y, P_OPEN + 1, ind);
                (format!("{}({l}, {r})", op.name()), P_PRIMARY)
            }
            Cmp(op, x, y) => {
                let l = self.print(x, P_ADD, ind);
                let r = self.print(y, P_ADD, ind);
                (format!("{l} {} {r}", op.name()), P_CMP)
            }
            Not(x) => (format!("!{}", self.print(x, P_UNARY, ind)), P_UNARY),
            And(x, y) => {
                let l = self.print(x, P_AND, ind);
                let r = self.print(y, P_CMP, ind);
                (format!("{l} && {r}"), P_AND)
            }
            Or(x, y) => {
                let l = self.print(x, P_OR, ind);
                let r = self.print(y, P_AND, ind);
                (format!("{l} || {r}"), P_OR)
            }
            If(c, x, y) => {
                let c = self.print(c, P_OPEN, ind + 2);
                let t = self.print(x, P_OPEN, ind + 2);
                let f = self.print(y, P_OPEN, ind + 2);
                let flat = format!("if {c} then {t} else {f}");
                if flat.contains('\n') || flat.len() > WIDTH {
                    let pad = indent_str(ind + 2);
                    let here = indent_str(ind);
                    (
                        format!("if {c} then\n{pad}{t}\n{here}else\n{pad}{f}"),
                        P_OPEN,
                    )
                } else {
                    (flat, P_OPEN)
                }
            }
            Lambda(ps, body) => {
                let params: Vec<String> = a
                    .vars_of(ps)
                    .to_vec()
                    .into_iter()
                    .map(|p| {
                        let n = self.name(p);
                        match a.var_type(p) {
                            Some(t) => format!("{n}: {t}"),
                            None => n,
                        }
                    })
                    .collect();
                let body = self.print(body, P_OPEN, ind + 2);
                let head = format!("fun ({}) ->", params.join(", "));
                if body.contains('\n') || head.len() + body.len() > WIDTH {
                    (format!("{head}\n{}{body}", indent_str(ind + 2)), P_OPEN)
                } else {
                    (format!("{head} {body}"), P_OPEN)
                }
            }
            App(f, l) => {
                let base = match a[f] {
                    Var(_) | App(..) => self.print(f, P_PRIMARY, ind),
                    _ => format!("({})", self.print(f, P_OPEN, ind)),
                };
                let items = a.exprs(l).to_vec();
                (format!("{base}({})", self.list(&items, ind)), P_PRIMARY)
            }
            Derivative(k, f, l) => {
                let fun = self.print(f, P_OPEN, ind);
                let head = match k {
                    crate::term::Derivative::Grad { wrt: None } => format!("grad({fun})"),
                    crate::term::Derivative::Grad { wrt: Some(i) } => {
                        format!("grad({fun}, {i})")
                    }
                    crate::term::Derivative::Jvp => format!("jvp({fun})"),
                };
                let items = a.exprs(l).to_vec();
                (format!("{head}({})", self.list(&items, ind)), P_PRIMARY)
            }
            Call(d, l) => {
                let name = self.def_name(d);
                let items = a.exprs(l).to_vec();
                (format!("{name}({})", self.list(&items, ind)), P_PRIMARY)
            }
            Len(x) => (
                format!("len({})", self.print(x, P_OPEN + 1, ind)),
                P_PRIMARY,
            ),
            ZerosLike(x) => (
                format!("zeros_like({})", self.print(x, P_OPEN + 1, ind)),
                P_PRIMARY,
            ),
            OnesLike(x) => (
                format!("ones_like({})", self.print(x, P_OPEN + 1, ind)),
                P_PRIMARY,
            ),
            Shift1L(x) => (format!("shift1L {}", self.operand(x, ind)), P_OPERAND),
            Iota(x) => (format!("iota {}", self.operand(x, ind)), P_OPERAND),
            Index(x, i) => {
                let base = self.print(x, P_PRIMARY, ind);
                let i = self.print(i, P_OPEN + 1, ind);
                (format!("{base}[{i}]"), P_PRIMARY)
            }
            ScatterAdd(z, i, v) => (
                format!("scatter_add({})", self.list(&[z, i, v], ind)),
                P_PRIMARY,
            ),
            Shift1R(x) => (format!("shift1R {}", self.operand(x, ind)), P_OPERAND),
            Map(f, x) => {
                let f = self.function_arg(f, ind);
                (format!("map {f} {}", self.operand(x, ind)), P_OPERAND)
            }
            Map2(f, x, y) => self.array_op("map2", f, &[x, y], ind),
            Reduce(f, z, x) => self.array_op("reduce", f, &[z, x], ind),
            Foldl(f, z, x) => self.array_op("foldl", f, &[z, x], ind),
            Scanl(f, z, x) => self.array_op("scanl", f, &[z, x], ind),
            Scanr(f, z, x) => self.array_op("scanr", f, &[z, x], ind),
        }
    }

    fn array_op(&mut self, kw: &str, f: ExprId, operands: &[ExprId], ind: usize) -> (String, u8) {
        let f = self.function_arg(f, ind);
        let ops: Vec<String> = operands.iter().map(|&x| self.operand(x, ind + 2)).collect();
        (format!("{kw} {f} {}", ops.join(" ")), P_OPERAND)
    }

    fn def_name(&self, d: DefId) -> String {
        self.def_names
            .get(d.0 as usize)
            .cloned()
            .unwrap_or_else(|| format!("def{}", d.0))
    }

    /// A chain of `let`s, one binding per line, printed without recursion on the chain.
    fn let_chain(&mut self, e: ExprId, ind: usize) -> String {
        let pad = indent_str(ind);
        let mut out = String::new();
        let mut cur = e;
        loop {
            let (pat, rhs, body) = match self.arena[cur] {
                Node::Let(x, e1, e2) => {
                    // A variable declared with ints where its value is typed `real` (a
                    // whole-number literal for an int): the annotation, so that the
                    // printed term types again as it did.
                    let declared = self.arena.var_type(x);
                    let name = match (declared, self.arena.type_of(e1)) {
                        (Some(d), Some(t)) if d.has_ints() && d != t => {
                            format!("{}: {d}", self.name(x))
                        }
                        _ => self.name(x),
                    };
                    (name, e1, e2)
                }
                Node::LetTuple(xs, e1, e2) => {
                    let names: Vec<String> = self
                        .arena
                        .vars_of(xs)
                        .to_vec()
                        .into_iter()
                        .map(|v| self.name(v))
                        .collect();
                    (format!("({})", names.join(", ")), e1, e2)
                }
                _ => {
                    out.push_str(&self.print(cur, P_OPEN, ind));
                    return out;
                }
            };
            let rhs_text = self.print(rhs, P_OPEN, ind + 2);
            if rhs_text.contains('\n') {
                out.push_str(&format!(
                    "let {pat} =\n{}{rhs_text}\n{pad}in\n{pad}",
                    indent_str(ind + 2)
                ));
            } else {
                out.push_str(&format!("let {pat} = {rhs_text} in\n{pad}"));
            }
            cur = body;
        }
    }
}
