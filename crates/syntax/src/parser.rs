//! Recursive-descent parser from text to untyped terms.
//!
//! Names are resolved while parsing: every binder gets a fresh [`Var`], so the parsed term
//! already satisfies the unique-binder invariant. Operator sections become lambdas. A
//! syntax error names the line, the column and what was expected.

use crate::fast_hash::FastMap as HashMap;

use crate::definitions::Def;
use crate::error::{Error, ErrorKind};
use crate::lexer::{lex, TokKind, Token};
use crate::ops::{BinOp, CmpOp, Partial, Partial2, UnOp};
use crate::size_expr::{is_size_name, Linear};
use crate::span::{SourceId, Span};
use crate::term::{Arena, DefId, ExprId, Node, Var};
use crate::types::{Size, Type};

type PResult<T> = Result<T, Error>;

/// A parser of one source text: terms go into an arena, definitions are returned (see
/// [`Parser::program`]). Every span it reports an error at is in its own text.
pub struct Parser<'p> {
    arena: &'p mut Arena,
    text: &'p str,
    toks: Vec<Token>,
    pos: usize,
    src: SourceId,
    /// Variables in scope, innermost last.
    scope: Scope,
    /// The definitions of the texts parsed before this one (the prelude's): callable,
    /// numbered from 0.
    prior: &'p [Def],
    /// The definitions of this text parsed so far, numbered after `prior`.
    parsed: Vec<Def>,
    /// Definitions visible so far, by name (later ones shadow earlier ones).
    defs: HashMap<String, DefId>,
}

/// The variables in scope: a stack of bindings, innermost last, with the innermost binding
/// of each name found by a table (a linear search from the top was quadratic in a long
/// chain of `let`s that reads a parameter, or names a built-in function, in every
/// statement: issue 23).
#[derive(Default)]
struct Scope {
    /// Each binding, and the index of the binding of the same name it hides.
    stack: Vec<(String, Var, Option<usize>)>,
    innermost: HashMap<String, usize>,
}

impl Scope {
    fn push(&mut self, (name, v): (String, Var)) {
        let hidden = self.innermost.insert(name.clone(), self.stack.len());
        self.stack.push((name, v, hidden));
    }

    fn len(&self) -> usize {
        self.stack.len()
    }

    /// Drop the bindings made since the scope had `depth` of them.
    fn truncate(&mut self, depth: usize) {
        while self.stack.len() > depth {
            let Some((name, _, hidden)) = self.stack.pop() else {
                break;
            };
            match hidden {
                Some(i) => {
                    self.innermost.insert(name, i);
                }
                None => {
                    self.innermost.remove(&name);
                }
            }
        }
    }

    fn clear(&mut self) {
        self.stack.clear();
        self.innermost.clear();
    }

    fn lookup(&self, name: &str) -> Option<Var> {
        self.innermost.get(name).map(|&i| self.stack[i].1)
    }
}

/// Names that can never be bound: built-in functions.
fn is_builtin(name: &str) -> bool {
    UnOp::from_name(name).is_some() || BinOp::from_name(name).is_some()
}

impl<'p> Parser<'p> {
    /// A parser of `text`, the source `src`, adding terms to `arena`; `prior` are the
    /// definitions parsed before (numbered from 0), which `text` may call.
    pub fn new(arena: &'p mut Arena, text: &'p str, src: SourceId, prior: &'p [Def]) -> Parser<'p> {
        let toks = lex(text, src);
        let defs = prior
            .iter()
            .enumerate()
            .map(|(i, d)| (d.name.clone(), DefId(i as u32)))
            .collect();
        Parser {
            arena,
            text,
            toks,
            pos: 0,
            src,
            scope: Scope::default(),
            prior,
            parsed: Vec::new(),
            defs,
        }
    }

    /// Bring `vars` into scope, for parsing a lone expression.
    pub fn with_scope(mut self, vars: &[(String, Var)]) -> Self {
        for v in vars {
            self.scope.push(v.clone());
        }
        self
    }

    // ---- token helpers ----------------------------------------------------------------

    fn peek(&self) -> Token {
        self.toks[self.pos]
    }

    fn peek_at(&self, k: usize) -> Token {
        self.toks[(self.pos + k).min(self.toks.len() - 1)]
    }

    fn at(&self, kind: TokKind) -> bool {
        self.peek().kind == kind
    }

    fn bump(&mut self) -> Token {
        let t = self.peek();
        if t.kind != TokKind::Eof {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, kind: TokKind) -> bool {
        if self.at(kind) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn text(&self, t: Token) -> &str {
        &self.text[t.span.lo as usize..t.span.hi as usize]
    }

    fn error(&self, span: Span, message: impl Into<String>) -> Error {
        Error::at(ErrorKind::Syntax, span, self.text, message)
    }

    fn found(&self) -> String {
        let t = self.peek();
        match t.kind {
            TokKind::Ident | TokKind::Number => format!("`{}`", self.text(t)),
            TokKind::Unknown => format!("the character `{}`", self.text(t)),
            k => k.describe().to_string(),
        }
    }

    fn expect(&mut self, kind: TokKind, context: &str) -> PResult<Token> {
        if self.at(kind) {
            Ok(self.bump())
        } else {
            Err(self.error(
                self.peek().span,
                format!(
                    "expected {} {}, found {}",
                    kind.describe(),
                    context,
                    self.found()
                ),
            ))
        }
    }

    fn ident(&mut self, context: &str) -> PResult<(String, Span)> {
        let t = self.expect(TokKind::Ident, context)?;
        Ok((self.text(t).to_string(), t.span))
    }

    /// A name introduced by a binder: not a built-in function.
    fn binder_name(&mut self, context: &str) -> PResult<(String, Span)> {
        let (name, span) = self.ident(context)?;
        if is_builtin(&name) {
            return Err(self.error(
                span,
                format!("`{name}` is a built-in function and cannot name a variable"),
            ));
        }
        Ok((name, span))
    }

    fn lookup(&self, name: &str) -> Option<Var> {
        self.scope.lookup(name)
    }

    fn add(&mut self, node: Node, span: Span) -> ExprId {
        self.arena.add_at(node, span)
    }

    fn span_from(&self, start: Span) -> Span {
        let prev = self.toks[self.pos.saturating_sub(1)].span;
        start.to(prev)
    }

    // ---- programs -----------------------------------------------------------------------

    /// `def*` up to the end of the input: the definitions of the text, in order (numbered
    /// after the prior ones).
    pub fn program(mut self) -> PResult<Vec<Def>> {
        while !self.at(TokKind::Eof) {
            let def = self.def()?;
            let id = DefId((self.prior.len() + self.parsed.len()) as u32);
            self.defs.insert(def.name.clone(), id);
            self.parsed.push(def);
        }
        Ok(self.parsed)
    }

    /// The definition `d`, prior or parsed from this text.
    fn definition(&self, d: DefId) -> &Def {
        let i = d.0 as usize;
        match i.checked_sub(self.prior.len()) {
            Some(j) => &self.parsed[j],
            None => &self.prior[i],
        }
    }

    fn def(&mut self) -> PResult<Def> {
        self.expect(TokKind::Def, "at the start of a definition")?;
        let (name, name_span) = self.binder_name("after `def`")?;
        if let Some(&prev) = self.defs.get(&name) {
            if self.definition(prev).span.src == self.src {
                return Err(self.error(name_span, format!("`{name}` is already defined")));
            }
        }
        self.expect(TokKind::LParen, "before the parameters")?;
        let mut params = Vec::new();
        if !self.at(TokKind::RParen) {
            loop {
                let (pname, pspan) = self.binder_name("as a parameter name")?;
                if params.iter().any(|(n, _): &(String, Var)| *n == pname) {
                    return Err(self.error(pspan, format!("parameter `{pname}` appears twice")));
                }
                self.expect(
                    TokKind::Colon,
                    "after the parameter name (every parameter has a type)",
                )?;
                let ty = self.ty()?;
                let v = self.arena.fresh_var(&pname, Some(ty));
                params.push((pname, v));
                if !self.eat(TokKind::Comma) {
                    break;
                }
            }
        }
        self.expect(TokKind::RParen, "after the parameters")?;
        let ret = if self.eat(TokKind::Colon) {
            Some(self.ty()?)
        } else {
            None
        };
        self.expect(TokKind::Eq, "before the body of the definition")?;
        self.scope.clear();
        for p in &params {
            self.scope.push(p.clone());
        }
        let body = self.expr()?;
        self.scope.clear();
        let param_types = params
            .iter()
            .map(|(_, v)| self.arena.var_type(*v).cloned().expect("annotated"))
            .collect();
        Ok(Def {
            name,
            params: params.into_iter().map(|(_, v)| v).collect(),
            param_types,
            ret_annot: ret,
            body,
            span: name_span,
            ret: None,
        })
    }

    // ---- types ------------------------------------------------------------------------

    pub fn ty(&mut self) -> PResult<Type> {
        let t = self.ty_atom()?;
        if self.eat(TokKind::Arrow) {
            let params = match t {
                Type::Tuple(items) if self.toks[self.pos - 2].kind == TokKind::RParen => {
                    items.to_vec()
                }
                t => vec![t],
            };
            let ret = self.ty()?;
            return Ok(Type::func(params, ret));
        }
        Ok(t)
    }

    fn ty_atom(&mut self) -> PResult<Type> {
        match self.peek().kind {
            TokKind::Real => {
                self.bump();
                Ok(Type::Real)
            }
            TokKind::Bool => {
                self.bump();
                Ok(Type::Bool)
            }
            // `int` is not a keyword, so that programs may still name a variable `int`.
            TokKind::Ident if self.text(self.peek()) == "int" => {
                self.bump();
                Ok(Type::Int)
            }
            TokKind::LBracket => {
                self.bump();
                let size = self.size()?;
                self.expect(TokKind::RBracket, "after the array size")?;
                let elem = self.ty_atom()?;
                Ok(Type::array(size, elem))
            }
            TokKind::LParen => {
                self.bump();
                let mut items = vec![self.ty()?];
                while self.eat(TokKind::Comma) {
                    items.push(self.ty()?);
                }
                self.expect(TokKind::RParen, "after the types of the tuple")?;
                if items.len() == 1 && !self.at(TokKind::Arrow) {
                    return Ok(items.pop().unwrap());
                }
                Ok(Type::tuple(items))
            }
            _ => Err(self.error(
                self.peek().span,
                format!(
                    "expected a type (`real`, `int`, `[n]real`, `(real, real)`, ...), found {}",
                    self.found()
                ),
            )),
        }
    }

    fn size(&mut self) -> PResult<Size> {
        if let Some(s) = self.size_formula()? {
            return Ok(s);
        }
        let t = self.peek();
        match t.kind {
            TokKind::Number | TokKind::Ident => {
                self.bump();
                let mut s = if t.kind == TokKind::Number {
                    Size::lit(self.integer(t)?)
                } else {
                    Size::var(self.text(t))
                };
                loop {
                    let sign = match self.peek().kind {
                        TokKind::Plus => 1,
                        TokKind::Minus => -1,
                        _ => break,
                    };
                    self.bump();
                    let k = self.expect(TokKind::Number, "in a size (`n+1`, `n-1`)")?;
                    s = s.plus(sign * self.integer(k)? as i64);
                }
                Ok(s)
            }
            _ => Err(self.error(
                t.span,
                format!(
                    "expected an array size (a number or a size variable), found {}",
                    self.found()
                ),
            )),
        }
    }

    /// A size written as a formula of sizes beyond `n`, `n + 1` and `n - 1` (those, and
    /// malformed sizes, are left to [`Parser::size`] and its messages): `n - m + 1`,
    /// `n + m`, `2 * n`, `n / 2`, `max(n, m)`, as types print the sizes programs compute.
    /// `None` (nothing consumed) unless the tokens up to the closing `]` are such a formula.
    fn size_formula(&mut self) -> PResult<Option<Size>> {
        use TokKind::*;
        // The tokens of the size: up to the `]` outside parentheses.
        let (mut end, mut depth, mut simple) = (self.pos, 0i32, true);
        loop {
            let t = self.toks[end.min(self.toks.len() - 1)];
            match t.kind {
                RBracket if depth == 0 => break,
                LParen => depth += 1,
                RParen if depth > 0 => depth -= 1,
                Number | Ident | Plus | Minus | Star | Slash | Percent | Comma => {}
                _ => return Ok(None),
            }
            // `n`, `3`, then `+ 1` / `- 1`: the simple form.
            let k = end - self.pos;
            simple &= match k {
                0 => matches!(t.kind, Number | Ident),
                _ if k % 2 == 1 => matches!(t.kind, Plus | Minus),
                _ => t.kind == Number,
            };
            end += 1;
            if end >= self.toks.len() {
                return Ok(None);
            }
        }
        if simple || end == self.pos {
            return Ok(None);
        }
        let (first, last) = (self.toks[self.pos], self.toks[end - 1]);
        let text = &self.text[first.span.lo as usize..last.span.hi as usize];
        let atom = |name: &str| is_size_name(name).then(|| Linear::atom(name));
        match crate::size_expr::parse::<Linear>(text, &atom) {
            Some(x) => {
                self.pos = end;
                Ok(Some(x.to_size()))
            }
            None => Err(self.error(
                Span::new(first.span.src, first.span.lo as usize, last.span.hi as usize),
                format!("expected an array size: a number, a size variable, or a formula of them by `+ - * / %`, `max` and `min` (`n - m + 1`, `2 * n`), found `{text}`"),
            )),
        }
    }

    fn integer(&self, t: Token) -> PResult<u64> {
        self.text(t)
            .parse::<u64>()
            .ok()
            .filter(|k| *k <= u32::MAX as u64)
            .ok_or_else(|| {
                self.error(
                    t.span,
                    format!("expected a whole number, found `{}`", self.text(t)),
                )
            })
    }

    // ---- expressions ------------------------------------------------------------------

    pub fn expr(&mut self) -> PResult<ExprId> {
        crate::term::with_stack(|| match self.peek().kind {
            TokKind::Let => self.let_expr(),
            TokKind::If => self.if_expr(),
            TokKind::Fun => self.fun_expr(),
            _ => self.or_expr(),
        })
    }

    /// An entire input that must be one expression (used by tests and tools).
    pub fn lone_expr(mut self) -> PResult<ExprId> {
        let e = self.expr()?;
        if !self.at(TokKind::Eof) {
            return Err(self.error(
                self.peek().span,
                format!("expected the end of the expression, found {}", self.found()),
            ));
        }
        Ok(e)
    }

    fn let_expr(&mut self) -> PResult<ExprId> {
        let start = self.bump().span;
        // Patterns: `x`, `(p, ...)` (nested), and `x, y, ...` without parentheses.
        let pat = if self.at(TokKind::Ident) && self.peek_at(1).kind == TokKind::Comma {
            let mut items = Vec::new();
            loop {
                let (n, _) = self.binder_name("in the pattern")?;
                items.push(Pattern::Name(n));
                if !self.eat(TokKind::Comma) {
                    break;
                }
            }
            Pattern::Tuple(items)
        } else {
            self.pattern()?
        };
        let annot = if self.eat(TokKind::Colon) {
            Some(self.ty()?)
        } else {
            None
        };
        self.expect(TokKind::Eq, "after the pattern of `let`")?;
        let rhs = self.expr()?;
        self.expect(TokKind::In, "after the bound expression of `let`")?;
        let depth = self.scope.len();
        // Bind the pattern: a name binds directly; a tuple pattern binds its components.
        let mut pending: Vec<(Vec<Var>, Var)> = Vec::new();
        let top = self.bind_pattern(&pat, annot, &mut pending);
        let body = self.expr()?;
        self.scope.truncate(depth);
        let span = self.span_from(start);
        // Nested patterns: the innermost destructuring is closest to the body.
        let mut e = body;
        for (vars, whole) in pending.into_iter().rev() {
            let w = self.add(Node::Var(whole), span);
            let l = self.arena.var_list(&vars);
            e = self.add(Node::LetTuple(l, w, e), span);
        }
        Ok(match top {
            Bound::One(x) => self.add(Node::Let(x, rhs, e), span),
            Bound::Many(xs) => {
                let l = self.arena.var_list(&xs);
                self.add(Node::LetTuple(l, rhs, e), span)
            }
        })
    }

    fn pattern(&mut self) -> PResult<Pattern> {
        if self.eat(TokKind::LParen) {
            let mut items = vec![self.pattern()?];
            while self.eat(TokKind::Comma) {
                items.push(self.pattern()?);
            }
            self.expect(TokKind::RParen, "after the tuple pattern")?;
            if items.len() == 1 {
                return Ok(items.pop().unwrap());
            }
            Ok(Pattern::Tuple(items))
        } else {
            let (n, _) = self.binder_name("after `let` (a name or a tuple pattern)")?;
            Ok(Pattern::Name(n))
        }
    }

    /// Create the variables of a pattern and put them in scope. Nested tuple components
    /// get a hidden variable each, destructured by the `LetTuple`s listed in `pending`.
    fn bind_pattern(
        &mut self,
        pat: &Pattern,
        annot: Option<Type>,
        pending: &mut Vec<(Vec<Var>, Var)>,
    ) -> Bound {
        match pat {
            Pattern::Name(n) => {
                let v = self.arena.fresh_var(n, annot);
                self.scope.push((n.clone(), v));
                Bound::One(v)
            }
            Pattern::Tuple(items) => {
                let annots: Vec<Option<Type>> = match &annot {
                    Some(Type::Tuple(ts)) if ts.len() == items.len() => {
                        ts.iter().cloned().map(Some).collect()
                    }
                    _ => vec![None; items.len()],
                };
                let mut vars = Vec::new();
                for (item, a) in items.iter().zip(annots) {
                    match self.bind_pattern(item, a, pending) {
                        Bound::One(v) => vars.push(v),
                        Bound::Many(inner) => {
                            let hidden = self.arena.fresh_var("t", None);
                            pending.insert(0, (inner, hidden));
                            vars.push(hidden);
                        }
                    }
                }
                Bound::Many(vars)
            }
        }
    }

    fn if_expr(&mut self) -> PResult<ExprId> {
        let start = self.bump().span;
        let c = self.expr()?;
        self.expect(TokKind::Then, "after the condition of `if`")?;
        let a = self.expr()?;
        self.expect(
            TokKind::Else,
            "after the `then` branch (every `if` has an `else`)",
        )?;
        let b = self.expr()?;
        let span = self.span_from(start);
        Ok(self.add(Node::If(c, a, b), span))
    }

    fn fun_expr(&mut self) -> PResult<ExprId> {
        let start = self.bump().span;
        let mut params = Vec::new();
        let parens = self.eat(TokKind::LParen);
        loop {
            let (n, _) = self.binder_name("as a parameter of `fun`")?;
            if !parens && self.at(TokKind::Colon) {
                return Err(self.error(
                    self.peek().span,
                    "an annotated parameter needs parentheses: `fun (x: real) -> e`",
                ));
            }
            let ty = if self.eat(TokKind::Colon) {
                Some(self.ty()?)
            } else {
                None
            };
            params.push((n, ty));
            if !parens || !self.eat(TokKind::Comma) {
                break;
            }
        }
        if parens {
            self.expect(TokKind::RParen, "after the parameters of `fun`")?;
        }
        self.expect(TokKind::Arrow, "after the parameters of `fun`")?;
        let depth = self.scope.len();
        let mut vars = Vec::new();
        for (n, ty) in params {
            let v = self.arena.fresh_var(&n, ty);
            self.scope.push((n, v));
            vars.push(v);
        }
        let body = self.expr()?;
        self.scope.truncate(depth);
        let span = self.span_from(start);
        let l = self.arena.var_list(&vars);
        Ok(self.add(Node::Lambda(l, body), span))
    }

    fn or_expr(&mut self) -> PResult<ExprId> {
        let mut e = self.and_expr()?;
        while self.eat(TokKind::OrOr) {
            let r = self.and_expr()?;
            let span = self.arena.span(e).to(self.arena.span(r));
            e = self.add(Node::Or(e, r), span);
        }
        Ok(e)
    }

    fn and_expr(&mut self) -> PResult<ExprId> {
        let mut e = self.cmp_expr()?;
        while self.eat(TokKind::AndAnd) {
            let r = self.cmp_expr()?;
            let span = self.arena.span(e).to(self.arena.span(r));
            e = self.add(Node::And(e, r), span);
        }
        Ok(e)
    }

    fn cmp_op(&self) -> Option<CmpOp> {
        Some(match self.peek().kind {
            TokKind::Lt => CmpOp::Lt,
            TokKind::Le => CmpOp::Le,
            TokKind::Gt => CmpOp::Gt,
            TokKind::Ge => CmpOp::Ge,
            TokKind::EqEq => CmpOp::Eq,
            TokKind::Ne => CmpOp::Ne,
            _ => return None,
        })
    }

    fn cmp_expr(&mut self) -> PResult<ExprId> {
        let e = self.add_expr()?;
        if let Some(op) = self.cmp_op() {
            self.bump();
            let r = self.add_expr()?;
            if self.cmp_op().is_some() {
                return Err(self.error(
                    self.peek().span,
                    "comparisons do not chain: write `a < b && b < c` instead of `a < b < c`",
                ));
            }
            let span = self.arena.span(e).to(self.arena.span(r));
            return Ok(self.add(Node::Cmp(op, e, r), span));
        }
        Ok(e)
    }

    fn add_expr(&mut self) -> PResult<ExprId> {
        let mut e = self.mul_expr()?;
        loop {
            let op = match self.peek().kind {
                TokKind::Plus => BinOp::Add,
                TokKind::Minus => BinOp::Sub,
                _ => return Ok(e),
            };
            self.bump();
            let r = self.mul_expr()?;
            let span = self.arena.span(e).to(self.arena.span(r));
            e = self.add(Node::Op2(op, e, r), span);
        }
    }

    fn mul_expr(&mut self) -> PResult<ExprId> {
        let mut e = self.unary()?;
        loop {
            let op = match self.peek().kind {
                TokKind::Star => BinOp::Mul,
                TokKind::Slash => BinOp::Div,
                TokKind::Percent => BinOp::Rem,
                _ => return Ok(e),
            };
            self.bump();
            let r = self.unary()?;
            let span = self.arena.span(e).to(self.arena.span(r));
            e = self.add(Node::Op2(op, e, r), span);
        }
    }

    fn unary(&mut self) -> PResult<ExprId> {
        crate::term::with_stack(|| match self.peek().kind {
            TokKind::Minus => {
                let start = self.bump().span;
                let e = self.unary()?;
                let span = self.span_from(start);
                Ok(self.add(Node::Op1(UnOp::Neg, e), span))
            }
            TokKind::Bang => {
                let start = self.bump().span;
                let e = self.unary()?;
                let span = self.span_from(start);
                Ok(self.add(Node::Not(e), span))
            }
            // `2 * if c then a else b`: like ML, these extend as far right as possible.
            TokKind::Let | TokKind::If | TokKind::Fun => self.expr(),
            _ => self.operand(),
        })
    }

    /// An atom followed by projections `.i` and adjacent applications `(args)`.
    fn operand(&mut self) -> PResult<ExprId> {
        let mut e = self.atom()?;
        loop {
            let t = self.peek();
            if t.kind == TokKind::Dot && !t.space_before && self.peek_at(1).kind == TokKind::Number
            {
                self.bump();
                let n = self.bump();
                let text = self.text(n);
                let i = text.parse::<u32>().map_err(|_| {
                    self.error(n.span, format!("a projection needs a whole number, found `{text}` (write `(e.1).0` for nested projections)"))
                })?;
                let span = self.span_from(self.arena.span(e));
                e = self.add(Node::Proj(i, e), span);
            } else if t.kind == TokKind::LBracket && !t.space_before {
                // `A[i]`, `A[i][j]`, and `A[i, j]` for `A[i][j]`: the bracket touches what
                // it indexes (`f [1, 2]` is two operands).
                self.bump();
                loop {
                    // `A[a:b]`, `A[a:]`, `A[:b]`: a slice.
                    let lo = if self.at(TokKind::Colon) {
                        None
                    } else {
                        Some(self.expr()?)
                    };
                    if self.eat(TokKind::Colon) {
                        let hi = if self.at(TokKind::RBracket) {
                            None
                        } else {
                            Some(self.expr()?)
                        };
                        let span = self.span_from(self.arena.span(e));
                        e = self.slice(e, lo, hi, span);
                        break;
                    }
                    let Some(i) = lo else {
                        return Err(self.error(self.peek().span, "expected an index"));
                    };
                    let span = self.span_from(self.arena.span(e));
                    e = self.add(Node::Index(e, i), span);
                    if !self.eat(TokKind::Comma) {
                        break;
                    }
                }
                let close = self.expect(TokKind::RBracket, "to close the index")?;
                let span = self.arena.span(e).to(close.span);
                self.arena.set_span(e, span);
            } else if t.kind == TokKind::LParen && !t.space_before && self.applicable(e) {
                self.bump();
                let args = self.args()?;
                let span = self.span_from(self.arena.span(e));
                let l = self.arena.expr_list(&args);
                e = self.add(Node::App(e, l), span);
            } else {
                return Ok(e);
            }
        }
    }

    /// Only variables, parenthesised expressions and applications can be applied; a
    /// constant or an array operation followed by `(` starts the next operand.
    fn applicable(&self, e: ExprId) -> bool {
        let prev = self.toks[self.pos - 1].kind;
        matches!(self.arena[e], Node::Var(_) | Node::App(..))
            || prev == TokKind::RParen && !matches!(self.arena[e], Node::Const(_))
    }

    /// Comma-separated expressions up to `)`, the `(` already consumed.
    fn args(&mut self) -> PResult<Vec<ExprId>> {
        let mut args = Vec::new();
        if !self.eat(TokKind::RParen) {
            loop {
                args.push(self.expr()?);
                if !self.eat(TokKind::Comma) {
                    break;
                }
            }
            self.expect(TokKind::RParen, "after the arguments")?;
        }
        Ok(args)
    }

    fn call_args(&mut self, what: &str) -> PResult<Vec<ExprId>> {
        self.expect(
            TokKind::LParen,
            &format!("after `{what}` (its arguments are in parentheses)"),
        )?;
        self.args()
    }

    fn atom(&mut self) -> PResult<ExprId> {
        let t = self.peek();
        let start = t.span;
        match t.kind {
            TokKind::Number => {
                self.bump();
                let c: f64 = self
                    .text(t)
                    .parse()
                    .map_err(|_| self.error(t.span, "malformed number"))?;
                Ok(self.add(Node::Const(c), t.span))
            }
            TokKind::True | TokKind::False => {
                self.bump();
                Ok(self.add(Node::Bool(t.kind == TokKind::True), t.span))
            }
            TokKind::Ident => self.name(),
            TokKind::Real if self.peek_at(1).kind == TokKind::LParen => {
                self.bump();
                let args = self.call_args("real")?;
                let span = self.span_from(start);
                if args.len() != 1 {
                    return Err(self.error(
                        span,
                        format!("`real` takes 1 argument, {} given", args.len()),
                    ));
                }
                Ok(self.add(Node::Op1(UnOp::ToReal, args[0]), span))
            }
            TokKind::LParen => {
                self.bump();
                if self.at(TokKind::RParen) {
                    return Err(
                        self.error(self.peek().span, "the language has no empty tuple `()`")
                    );
                }
                let mut items = vec![self.expr()?];
                while self.eat(TokKind::Comma) {
                    items.push(self.expr()?);
                }
                self.expect(TokKind::RParen, "to close the parenthesis")?;
                if items.len() == 1 {
                    return Ok(items[0]);
                }
                let span = self.span_from(start);
                let l = self.arena.expr_list(&items);
                Ok(self.add(Node::Tuple(l), span))
            }
            TokKind::LBracket => {
                self.bump();
                let mut items = Vec::new();
                if !self.at(TokKind::RBracket) {
                    loop {
                        items.push(self.expr()?);
                        if !self.eat(TokKind::Comma) {
                            break;
                        }
                    }
                }
                self.expect(TokKind::RBracket, "to close the array literal")?;
                let span = self.span_from(start);
                let l = self.arena.expr_list(&items);
                Ok(self.add(Node::Array(l), span))
            }
            TokKind::Fst | TokKind::Snd => {
                self.bump();
                let e = self.operand()?;
                let span = self.span_from(start);
                Ok(self.add(
                    Node::Proj(if t.kind == TokKind::Fst { 0 } else { 1 }, e),
                    span,
                ))
            }
            TokKind::Len | TokKind::ZerosLike | TokKind::OnesLike => {
                self.bump();
                let what = self.text(t).to_string();
                let args = self.call_args(&what)?;
                if args.len() != 1 {
                    return Err(self.error(
                        self.span_from(start),
                        format!("`{what}` takes one argument, {} given", args.len()),
                    ));
                }
                let span = self.span_from(start);
                let node = match t.kind {
                    TokKind::Len => Node::Len(args[0]),
                    TokKind::ZerosLike => Node::ZerosLike(args[0]),
                    _ => Node::OnesLike(args[0]),
                };
                Ok(self.add(node, span))
            }
            TokKind::Shift1L | TokKind::Shift1R => {
                self.bump();
                let a = self.operand()?;
                let span = self.span_from(start);
                Ok(self.add(
                    if t.kind == TokKind::Shift1L {
                        Node::Shift1L(a)
                    } else {
                        Node::Shift1R(a)
                    },
                    span,
                ))
            }
            TokKind::Map => {
                self.bump();
                let f = self.function_arg("map", 1)?;
                let a = self.operand()?;
                let span = self.span_from(start);
                Ok(self.add(Node::Map(f, a), span))
            }
            TokKind::Map2 | TokKind::Reduce | TokKind::Foldl | TokKind::Scanl | TokKind::Scanr => {
                self.bump();
                let what = self.text(t).to_string();
                let f = self.function_arg(&what, 2)?;
                let a = self.operand()?;
                let b = self.operand()?;
                let span = self.span_from(start);
                let node = match t.kind {
                    TokKind::Map2 => Node::Map2(f, a, b),
                    TokKind::Reduce => Node::Reduce(f, a, b),
                    TokKind::Foldl => Node::Foldl(f, a, b),
                    TokKind::Scanl => Node::Scanl(f, a, b),
                    _ => Node::Scanr(f, a, b),
                };
                Ok(self.add(node, span))
            }
            _ => Err(self.error(
                t.span,
                format!("expected an expression, found {}", self.found()),
            )),
        }
    }

    /// `grad(f)(args)`, `grad(f, i)(args)` or `jvp(f)(P, T)`, after the name: `f` is a
    /// definition's name or a `fun` with annotated parameters.
    fn derivative(&mut self, what: &str, start: crate::span::Span) -> PResult<ExprId> {
        self.bump();
        let f = if self.at(TokKind::Fun) {
            self.fun_expr()?
        } else {
            let t = self.peek();
            let name = self.text(t).to_string();
            let Some(&d) = (t.kind == TokKind::Ident)
                .then(|| self.defs.get(&name))
                .flatten()
            else {
                return Err(self.error(
                    t.span,
                    format!(
                        "`{what}` takes the name of a definition or a `fun`, found {}",
                        self.found()
                    ),
                ));
            };
            self.bump();
            // `fun (x1: t1, ..., xk: tk) -> f(x1, ..., xk)`, which inlining makes the
            // definition's body.
            let def = self.definition(d).clone();
            let mut vars = Vec::with_capacity(def.params.len());
            let mut refs = Vec::with_capacity(def.params.len());
            for (&p, ty) in def.params.iter().zip(&def.param_types) {
                let n = self.arena.var_name(p).to_string();
                let v = self.arena.fresh_var(&n, Some(ty.clone()));
                vars.push(v);
                refs.push(self.add(Node::Var(v), t.span));
            }
            let l = self.arena.expr_list(&refs);
            let call = self.add(Node::Call(d, l), t.span);
            let vl = self.arena.var_list(&vars);
            self.add(Node::Lambda(vl, call), t.span)
        };
        let wrt = if what == "grad" && self.eat(TokKind::Comma) {
            let t = self.peek();
            let i = (t.kind == TokKind::Number)
                .then(|| self.text(t).parse::<u32>().ok())
                .flatten();
            let Some(i) = i else {
                return Err(self.error(
                    t.span,
                    format!(
                        "`grad(f, i)` takes the position of a parameter (0, 1, ...), found {}",
                        self.found()
                    ),
                ));
            };
            self.bump();
            Some(i)
        } else {
            None
        };
        self.expect(TokKind::RParen, &format!("after the function of `{what}`"))?;
        let args = self.call_args(&format!("{what}(...)"))?;
        let span = self.span_from(start);
        let kind = if what == "grad" {
            crate::term::Derivative::Grad { wrt }
        } else {
            crate::term::Derivative::Jvp
        };
        let l = self.arena.expr_list(&args);
        Ok(self.add(Node::Derivative(kind, f, l), span))
    }

    /// A name: a variable, a call of a definition, or a call of a built-in function.
    fn name(&mut self) -> PResult<ExprId> {
        let t = self.bump();
        let name = self.text(t).to_string();
        if let Some(v) = self.lookup(&name) {
            return Ok(self.add(Node::Var(v), t.span));
        }
        if let Some(&d) = self.defs.get(&name) {
            let args = self.call_args(&name)?;
            let span = self.span_from(t.span);
            let want = self.definition(d).params.len();
            if args.len() != want {
                return Err(self.error(
                    span,
                    format!("`{name}` takes {want} argument(s), {} given", args.len()),
                ));
            }
            let l = self.arena.expr_list(&args);
            return Ok(self.add(Node::Call(d, l), span));
        }
        // `grad` and `jvp` are not keywords either.
        if (name == "grad" || name == "jvp") && self.at(TokKind::LParen) {
            return self.derivative(&name, t.span);
        }
        // `iota` and `scatter_add` are not keywords: a variable or definition of that name
        // hides them.
        if name == "iota" {
            let n = self.operand()?;
            let span = self.span_from(t.span);
            return Ok(self.add(Node::Iota(n), span));
        }
        if let Some(e) = self.derived_form(&name, t.span)? {
            return Ok(e);
        }
        if name == "scatter_add" {
            let args = self.call_args(&name)?;
            let span = self.span_from(t.span);
            let &[z, i, v] = args.as_slice() else {
                return Err(self.error(
                    span,
                    format!("`scatter_add` takes 3 arguments, {} given", args.len()),
                ));
            };
            return Ok(self.add(Node::ScatterAdd(z, i, v), span));
        }
        // The derivative primitives, so that printed Target terms load. Not keywords
        // either: a variable or definition of the same name hides them.
        let unary = UnOp::from_name(&name).or_else(|| Partial::from_name(&name).map(UnOp::Partial));
        if let Some(op) = unary {
            let args = self.call_args(&name)?;
            let span = self.span_from(t.span);
            if args.len() != 1 {
                return Err(self.error(
                    span,
                    format!("`{name}` takes 1 argument, {} given", args.len()),
                ));
            }
            return Ok(self.add(Node::Op1(op, args[0]), span));
        }
        let binary =
            BinOp::from_name(&name).or_else(|| Partial2::from_name(&name).map(BinOp::Partial));
        if let Some(op) = binary {
            let args = self.call_args(&name)?;
            let span = self.span_from(t.span);
            if args.len() != 2 {
                return Err(self.error(
                    span,
                    format!("`{name}` takes 2 arguments, {} given", args.len()),
                ));
            }
            return Ok(self.add(Node::Op2(op, args[0], args[1]), span));
        }
        Err(self.error(t.span, format!("unknown name `{name}`")))
    }

    /// `let x = value in body(x)` with a fresh `x` named `hint`.
    fn bind_fresh(
        &mut self,
        hint: &str,
        value: ExprId,
        span: Span,
        body: impl FnOnce(&mut Self, ExprId) -> ExprId,
    ) -> ExprId {
        let v = self.arena.fresh_var(hint, None);
        let x = self.add(Node::Var(v), span);
        let b = body(self, x);
        self.add(Node::Let(v, value, b), span)
    }

    /// `map (i. body(i)) (iota n)` with a fresh `i`.
    fn tabulate(
        &mut self,
        n: ExprId,
        span: Span,
        body: impl FnOnce(&mut Self, ExprId) -> ExprId,
    ) -> ExprId {
        let i = self.arena.fresh_var("i", None);
        let iv = self.add(Node::Var(i), span);
        let b = body(self, iv);
        let l = self.arena.var_list(&[i]);
        let f = self.add(Node::Lambda(l, b), span);
        let iota = self.add(Node::Iota(n), span);
        self.add(Node::Map(f, iota), span)
    }

    /// The slice `a[lo:hi]` (bounds absent: 0 and `len(a)`): `let r = a in let lo = .. in
    /// let hi = .. in map (i. r[lo + i]) (iota (hi - lo))`. Its size is `hi - lo` where the
    /// type checker can tell it (a formula of literals, lengths and int parameters, in
    /// which other ints cancel: see `Checker::size_of`).
    fn slice(&mut self, a: ExprId, lo: Option<ExprId>, hi: Option<ExprId>, span: Span) -> ExprId {
        self.bind_fresh("r", a, span, |p, r| {
            let lo = lo.unwrap_or_else(|| p.add(Node::Const(0.0), span));
            p.bind_fresh("lo", lo, span, |p, lo| {
                let hi = match hi {
                    Some(h) => h,
                    None => p.add(Node::Len(r), span),
                };
                p.bind_fresh("hi", hi, span, |p, hi| {
                    let n = p.add(Node::Op2(BinOp::Sub, hi, lo), span);
                    p.tabulate(n, span, |p, i| {
                        let at = p.add(Node::Op2(BinOp::Add, lo, i), span);
                        p.add(Node::Index(r, at), span)
                    })
                })
            })
        })
    }

    /// The forms written with iota and indexing, which are not keywords (a variable or a
    /// definition of that name hides them): `reverse A`, `rotate k A` (element `i` is
    /// `A[(i + k) mod len(A)]`), `concat A B` (of size `len(A) + len(B)`, a derived size
    /// when both are size variables), `replicate n e`, `iterate n (x. e) z` (`e` applied `n` times to
    /// `z`) and `iterate_while n (x. c) (x. e) z` (`e` applied to `z` while `c` holds, at
    /// most `n` times). Their operands are atoms, as those of the array operations.
    fn derived_form(&mut self, name: &str, start: Span) -> PResult<Option<ExprId>> {
        Ok(Some(match name {
            "reverse" => {
                let a = self.operand()?;
                let span = self.span_from(start);
                self.bind_fresh("r", a, span, |p, r| {
                    let n = p.add(Node::Len(r), span);
                    p.tabulate(n, span, |p, i| {
                        let len = p.add(Node::Len(r), span);
                        let one = p.add(Node::Const(1.0), span);
                        let last = p.add(Node::Op2(BinOp::Sub, len, one), span);
                        let at = p.add(Node::Op2(BinOp::Sub, last, i), span);
                        p.add(Node::Index(r, at), span)
                    })
                })
            }
            "transpose" => {
                // map (j. map (i. r[i][j]) (iota len(r))) (iota len(r[0])): the columns'
                // length is the type's inner size, read without reading a row in native
                // code; the interpreter reads row 0, so it refuses an empty matrix.
                let a = self.operand()?;
                let span = self.span_from(start);
                self.bind_fresh("r", a, span, |p, r| {
                    let zero = p.add(Node::Const(0.0), span);
                    let row0 = p.add(Node::Index(r, zero), span);
                    let m = p.add(Node::Len(row0), span);
                    p.tabulate(m, span, |p, j| {
                        let n = p.add(Node::Len(r), span);
                        p.tabulate(n, span, |p, i| {
                            let row = p.add(Node::Index(r, i), span);
                            p.add(Node::Index(row, j), span)
                        })
                    })
                })
            }
            "rotate" => {
                let k = self.operand()?;
                let a = self.operand()?;
                let span = self.span_from(start);
                self.bind_fresh("r", a, span, |p, r| {
                    p.bind_fresh("k", k, span, |p, k| {
                        let n = p.add(Node::Len(r), span);
                        p.tabulate(n, span, |p, i| {
                            // ((i + k) % n + n) % n: a position for every k, negative too.
                            let len = |p: &mut Self| p.add(Node::Len(r), span);
                            let sum = p.add(Node::Op2(BinOp::Add, i, k), span);
                            let n1 = len(p);
                            let m = p.add(Node::Op2(BinOp::Rem, sum, n1), span);
                            let n2 = len(p);
                            let up = p.add(Node::Op2(BinOp::Add, m, n2), span);
                            let n3 = len(p);
                            let at = p.add(Node::Op2(BinOp::Rem, up, n3), span);
                            p.add(Node::Index(r, at), span)
                        })
                    })
                })
            }
            "concat" => {
                let a = self.operand()?;
                let b = self.operand()?;
                let span = self.span_from(start);
                self.bind_fresh("a", a, span, |p, a| {
                    p.bind_fresh("b", b, span, |p, b| {
                        let la = p.add(Node::Len(a), span);
                        let lb = p.add(Node::Len(b), span);
                        let n = p.add(Node::Op2(BinOp::Add, la, lb), span);
                        p.tabulate(n, span, |p, i| {
                            // `a[i]` below `len(a)`, `b[i - len(a)]` from there.
                            let la = p.add(Node::Len(a), span);
                            let first = p.add(Node::Cmp(CmpOp::Lt, i, la), span);
                            let from_a = p.add(Node::Index(a, i), span);
                            let la2 = p.add(Node::Len(a), span);
                            let j = p.add(Node::Op2(BinOp::Sub, i, la2), span);
                            let from_b = p.add(Node::Index(b, j), span);
                            p.add(Node::If(first, from_a, from_b), span)
                        })
                    })
                })
            }
            "replicate" => {
                let n = self.operand()?;
                let e = self.operand()?;
                let span = self.span_from(start);
                self.bind_fresh("v", e, span, |p, v| p.tabulate(n, span, |_, _| v))
            }
            "iterate" => {
                let n = self.operand()?;
                let f = self.function_arg("iterate", 1)?;
                let z = self.operand()?;
                let span = self.span_from(start);
                let Node::Lambda(ps, body) = self.arena[f] else {
                    return Err(self.error(span, "`iterate` needs a function `(x. e)`"));
                };
                let x = self.arena.vars_of(ps)[0];
                let step = self.arena.fresh_var("step", Some(crate::types::Type::Int));
                let l = self.arena.var_list(&[x, step]);
                let g = self.add(Node::Lambda(l, body), span);
                let iota = self.add(Node::Iota(n), span);
                self.add(Node::Foldl(g, z, iota), span)
            }
            "iterate_while" => {
                let n = self.operand()?;
                let c = self.function_arg("iterate_while", 1)?;
                let f = self.function_arg("iterate_while", 1)?;
                let z = self.operand()?;
                let span = self.span_from(start);
                let parts = |p: &Self, g: ExprId| match p.arena[g] {
                    Node::Lambda(ps, body) => Some((p.arena.vars_of(ps)[0], body)),
                    _ => None,
                };
                let (Some((y, cond)), Some((w, next))) = (parts(self, c), parts(self, f)) else {
                    return Err(self.error(
                        span,
                        "`iterate_while` needs a condition `(x. c)` and a step `(x. e)`",
                    ));
                };
                // foldl (s, step. let (go, x) = s in
                //          if go > 0 && (let y = x in c) then (1, let w = x in e) else (0, x))
                //       (1, z) (iota n), its second component: the state stops changing
                //       once the condition fails (a real flag, so that the state holds no
                //       int where it holds reals).
                let s_var = self.arena.fresh_var("s", None);
                let go = self.arena.fresh_var("go", None);
                let x = self.arena.fresh_var("x", None);
                let step = self.arena.fresh_var("step", Some(crate::types::Type::Int));
                let xe = |p: &mut Self| p.add(Node::Var(x), span);
                let go_e = self.add(Node::Var(go), span);
                let zero = self.add(Node::Const(0.0), span);
                let running = self.add(Node::Cmp(CmpOp::Gt, go_e, zero), span);
                let x1 = xe(self);
                let holds = self.add(Node::Let(y, x1, cond), span);
                let test = self.add(Node::And(running, holds), span);
                let one = self.add(Node::Const(1.0), span);
                let x2 = xe(self);
                let moved = self.add(Node::Let(w, x2, next), span);
                let l = self.arena.expr_list(&[one, moved]);
                let on = self.add(Node::Tuple(l), span);
                let zero2 = self.add(Node::Const(0.0), span);
                let x3 = xe(self);
                let l = self.arena.expr_list(&[zero2, x3]);
                let off = self.add(Node::Tuple(l), span);
                let choice = self.add(Node::If(test, on, off), span);
                let s_e = self.add(Node::Var(s_var), span);
                let vl = self.arena.var_list(&[go, x]);
                let body = self.add(Node::LetTuple(vl, s_e, choice), span);
                let vl = self.arena.var_list(&[s_var, step]);
                let g = self.add(Node::Lambda(vl, body), span);
                let one = self.add(Node::Const(1.0), span);
                let l = self.arena.expr_list(&[one, z]);
                let init = self.add(Node::Tuple(l), span);
                let iota = self.add(Node::Iota(n), span);
                let fold = self.add(Node::Foldl(g, init, iota), span);
                self.add(Node::Proj(1, fold), span)
            }
            _ => return Ok(None),
        }))
    }

    /// The function argument of an array operation: a binder `(x, y. e)` or an operator
    /// section `+ - * / max min`.
    fn function_arg(&mut self, what: &str, arity: usize) -> PResult<ExprId> {
        let t = self.peek();
        let section = match t.kind {
            TokKind::Plus | TokKind::Minus | TokKind::Star | TokKind::Slash => {
                BinOp::from_section(self.text(t))
            }
            TokKind::Ident if self.lookup(self.text(t)).is_none() => {
                BinOp::from_section(self.text(t))
            }
            _ => None,
        };
        if let Some(op) = section {
            self.bump();
            if arity != 2 {
                return Err(self.error(
                    t.span,
                    format!("`{what}` needs a function of {arity} argument(s); the operator `{}` takes 2", op.name()),
                ));
            }
            let f = self.arena.section(op, "x", "y");
            self.arena.set_span(f, t.span);
            return Ok(f);
        }
        if t.kind == TokKind::LParen && self.is_binder_start() {
            self.bump();
            let mut names = Vec::new();
            loop {
                names.push(self.binder_name("in the binder")?);
                if !self.eat(TokKind::Comma) {
                    break;
                }
            }
            self.expect(TokKind::Dot, "after the binder's variables")?;
            if names.len() != arity {
                return Err(self.error(
                    t.span.to(names.last().unwrap().1),
                    format!(
                        "`{what}` needs a function of {arity} argument(s), this binder has {}",
                        names.len()
                    ),
                ));
            }
            let depth = self.scope.len();
            let mut vars = Vec::new();
            for (n, _) in names {
                let v = self.arena.fresh_var(&n, None);
                self.scope.push((n, v));
                vars.push(v);
            }
            let body = self.expr()?;
            self.scope.truncate(depth);
            self.expect(TokKind::RParen, "to close the binder")?;
            let span = self.span_from(t.span);
            let l = self.arena.var_list(&vars);
            return Ok(self.add(Node::Lambda(l, body), span));
        }
        let example = if arity == 1 {
            "`(x. e)`"
        } else {
            "`(x, y. e)` or an operator such as `+`"
        };
        Err(self.error(
            t.span,
            format!(
                "expected the function argument of `{what}`: a binder such as {example}, found {}",
                self.found()
            ),
        ))
    }

    /// `( name (, name)* .` starts a binder.
    fn is_binder_start(&self) -> bool {
        let mut k = 1;
        loop {
            if self.peek_at(k).kind != TokKind::Ident {
                return false;
            }
            match self.peek_at(k + 1).kind {
                TokKind::Dot => return true,
                TokKind::Comma => k += 2,
                _ => return false,
            }
        }
    }
}

enum Pattern {
    Name(String),
    Tuple(Vec<Pattern>),
}

enum Bound {
    One(Var),
    Many(Vec<Var>),
}
