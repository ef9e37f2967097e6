//! Sizes computed from other sizes: `len(x) - len(w) + 1`, `2 * n`, `div(len(x), 2)`.
//!
//! A [`Size`] is `var + offset`. Most lengths a program computes have that form, but a
//! convolution's output has `n - m + 1` elements and an interleaved pair of arrays `n / 2`.
//! Such a size is carried as a *derived* size variable: a `Size` whose `var` is the
//! canonical text of an integer expression over the size variables (`n - m + 1`), which
//! is never an identifier, so it cannot clash with a size variable the program names.
//! Two sizes computed the same way, or in ways equal as linear forms (`(n + 1) - m` and
//! `1 + n - m`), get the same text, so arrays of those sizes can be zipped.
//!
//! [`Linear`] is that canonical form: an integer linear combination of *atoms* plus a
//! constant. An atom is a size variable, or a product, quotient, remainder, `max` or `min`
//! of two forms that do not reduce to a linear one (`n*m`, `n / 2`), kept as its text.
//! Texts are parsed back by one small parser, generic in what it computes: the form
//! itself (to add to a derived size, or substitute into it at a call) or its value (to
//! evaluate it on the sizes of the arguments).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::types::Size;

/// Whether `name` is a size variable the program names (an identifier), as opposed to the
/// text of a derived size.
pub fn is_size_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '\'')
}

/// An integer linear combination of atoms plus a constant, in canonical form (no zero
/// coefficients; atoms ordered by their text).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Linear {
    terms: BTreeMap<Arc<str>, i64>,
    constant: i64,
}

impl Linear {
    /// The constant `k`.
    pub fn constant(k: i64) -> Linear {
        Linear {
            terms: BTreeMap::new(),
            constant: k,
        }
    }

    /// The atom (a size variable, or the text of a product or quotient) `name`.
    pub fn atom(name: &str) -> Linear {
        let mut terms = BTreeMap::new();
        terms.insert(Arc::from(name), 1);
        Linear { terms, constant: 0 }
    }

    /// The form of a size: its variable (parsed, when derived) plus its offset.
    pub fn of_size(size: &Size) -> Option<Linear> {
        let base = match &size.var {
            None => Linear::constant(0),
            Some(v) if is_size_name(v) => Linear::atom(v),
            Some(v) => parse(v, &|name| Some(Linear::atom(name)))?,
        };
        base.add(&Linear::constant(size.offset))
    }

    /// The size this form is: `var + offset` when it is one size variable plus a constant
    /// (or a constant), else a derived size variable with offset 0.
    pub fn to_size(&self) -> Size {
        if self.terms.is_empty() {
            return Size {
                var: None,
                offset: self.constant,
            };
        }
        if self.terms.len() == 1 {
            let (name, &k) = self.terms.iter().next().expect("one term");
            if k == 1 && is_size_name(name) {
                return Size {
                    var: Some(name.clone()),
                    offset: self.constant,
                };
            }
        }
        Size {
            var: Some(self.to_string().into()),
            offset: 0,
        }
    }

    /// Whether an atom reads a variable that is not a size (named with `#` by the type
    /// checker: a loop's element), so that the form is no size.
    pub fn has_local(&self) -> bool {
        self.terms.keys().any(|k| k.contains('#'))
    }

    /// Whether the form is at least 0 whatever the values of its atoms, given that the
    /// atoms `nonnegative` accepts are at least 0: a constant at least 0, a coefficient at
    /// least 0 on each of those atoms, and no other atom (a quotient, remainder, `min`,
    /// `max` or product of differences may be negative).
    pub fn is_nonnegative(&self, nonnegative: &dyn Fn(&str) -> bool) -> bool {
        self.constant >= 0 && self.terms.iter().all(|(a, &k)| k >= 0 && nonnegative(a))
    }

    /// The constant, when the form has no atom.
    pub fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    /// `self + other` (`None` on overflow).
    pub fn add(&self, other: &Linear) -> Option<Linear> {
        let mut out = self.clone();
        for (name, &k) in &other.terms {
            let entry = out.terms.entry(name.clone()).or_insert(0);
            *entry = entry.checked_add(k)?;
            if *entry == 0 {
                out.terms.remove(name);
            }
        }
        out.constant = out.constant.checked_add(other.constant)?;
        Some(out)
    }

    /// `k * self` (`None` on overflow).
    pub fn scale(&self, k: i64) -> Option<Linear> {
        if k == 0 {
            return Some(Linear::constant(0));
        }
        let mut terms = BTreeMap::new();
        for (name, &c) in &self.terms {
            terms.insert(name.clone(), c.checked_mul(k)?);
        }
        Some(Linear {
            terms,
            constant: self.constant.checked_mul(k)?,
        })
    }

    /// `self - other`.
    pub fn sub(&self, other: &Linear) -> Option<Linear> {
        self.add(&other.scale(-1)?)
    }

    /// `self * other`: a scaling when either is a constant, else an atom.
    pub fn mul(&self, other: &Linear) -> Option<Linear> {
        match (self.as_constant(), other.as_constant()) {
            (Some(k), _) => other.scale(k),
            (_, Some(k)) => self.scale(k),
            _ => Some(Linear::atom(&commuting("*", self, other))),
        }
    }

    /// An operation that is not linear (`div`, `%`, `max`, `min`): its value when both
    /// operands are constants, else an atom.
    pub fn nonlinear(op: SizeOp, a: &Linear, b: &Linear) -> Option<Linear> {
        if let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) {
            return Some(Linear::constant(op.apply(x, y)?));
        }
        // `div(n, 1)` is `n`.
        if op == SizeOp::Div && b.as_constant() == Some(1) {
            return Some(a.clone());
        }
        let text = match op {
            SizeOp::Div => format!("{} / {}", operand(a), operand(b)),
            SizeOp::Rem => format!("{} % {}", operand(a), operand(b)),
            SizeOp::Max => commuting_call("max", a, b),
            SizeOp::Min => commuting_call("min", a, b),
        };
        Some(Linear::atom(&text))
    }
}

/// The operations a size may use besides `+`, `-` and `*`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SizeOp {
    /// Division of ints, rounding toward zero (`div(a, b)`).
    Div,
    /// Remainder with the sign of the dividend (`a % b`).
    Rem,
    Max,
    Min,
}

impl SizeOp {
    /// The operation on values (`None` when dividing by zero or overflowing).
    pub fn apply(self, x: i64, y: i64) -> Option<i64> {
        match self {
            SizeOp::Div => x.checked_div(y),
            SizeOp::Rem => x.checked_rem(y),
            SizeOp::Max => Some(x.max(y)),
            SizeOp::Min => Some(x.min(y)),
        }
    }
}

/// A form as an operand of `*`, `/` or `%`: bare when it is a size variable or a
/// non-negative constant, else in parentheses.
fn operand(x: &Linear) -> String {
    let text = x.to_string();
    if is_size_name(&text) || text.bytes().all(|b| b.is_ascii_digit()) {
        text
    } else {
        format!("({text})")
    }
}

/// `a op b` for a commutative `op`, its operands in a fixed order.
fn commuting(op: &str, a: &Linear, b: &Linear) -> String {
    let (x, y) = (operand(a), operand(b));
    let (x, y) = if x <= y { (x, y) } else { (y, x) };
    format!("{x}{op}{y}")
}

/// `f(a, b)` for a commutative `f`, its arguments in a fixed order.
fn commuting_call(f: &str, a: &Linear, b: &Linear) -> String {
    let (x, y) = (a.to_string(), b.to_string());
    let (x, y) = if x <= y { (x, y) } else { (y, x) };
    format!("{f}({x}, {y})")
}

/// Terms with positive coefficients first, then the others, then the constant:
/// `n - m + 1`, `2*n`, `n*m - 1`, `-n + 3`.
impl fmt::Display for Linear {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let positive = self.terms.iter().filter(|(_, &k)| k > 0);
        let negative = self.terms.iter().filter(|(_, &k)| k < 0);
        let mut first = true;
        for (name, &k) in positive.chain(negative) {
            let sign = if k < 0 { "-" } else { "+" };
            match (first, k < 0) {
                (true, false) => {}
                (true, true) => write!(f, "-")?,
                (false, _) => write!(f, " {sign} ")?,
            }
            let a = k.unsigned_abs();
            if a == 1 {
                write!(f, "{name}")?;
            } else if is_size_name(name) {
                write!(f, "{a}*{name}")?;
            } else {
                write!(f, "{a}*({name})")?;
            }
            first = false;
        }
        match (first, self.constant) {
            (true, k) => write!(f, "{k}"),
            (false, 0) => Ok(()),
            (false, k) if k > 0 => write!(f, " + {k}"),
            (false, k) => write!(f, " - {}", k.unsigned_abs()),
        }
    }
}

/// What the parser computes: the canonical form, or a value.
pub trait SizeAlgebra: Sized {
    fn num(k: i64) -> Option<Self>;
    fn add(&self, other: &Self) -> Option<Self>;
    fn sub(&self, other: &Self) -> Option<Self>;
    fn mul(&self, other: &Self) -> Option<Self>;
    fn op(op: SizeOp, a: &Self, b: &Self) -> Option<Self>;
}

impl SizeAlgebra for Linear {
    fn num(k: i64) -> Option<Linear> {
        Some(Linear::constant(k))
    }
    fn add(&self, other: &Linear) -> Option<Linear> {
        Linear::add(self, other)
    }
    fn sub(&self, other: &Linear) -> Option<Linear> {
        Linear::sub(self, other)
    }
    fn mul(&self, other: &Linear) -> Option<Linear> {
        Linear::mul(self, other)
    }
    fn op(op: SizeOp, a: &Linear, b: &Linear) -> Option<Linear> {
        Linear::nonlinear(op, a, b)
    }
}

impl SizeAlgebra for i64 {
    fn num(k: i64) -> Option<i64> {
        Some(k)
    }
    fn add(&self, other: &i64) -> Option<i64> {
        self.checked_add(*other)
    }
    fn sub(&self, other: &i64) -> Option<i64> {
        self.checked_sub(*other)
    }
    fn mul(&self, other: &i64) -> Option<i64> {
        self.checked_mul(*other)
    }
    fn op(op: SizeOp, a: &i64, b: &i64) -> Option<i64> {
        op.apply(*a, *b)
    }
}

/// The value of a derived size's text, each size variable having the value `var` gives.
pub fn evaluate(text: &str, var: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
    parse(text, var)
}

/// The size variables a derived size's text reads (`None` if it is not one).
pub fn variables(text: &str) -> Option<Vec<Arc<str>>> {
    let names = std::cell::RefCell::new(Vec::new());
    parse(text, &|name: &str| {
        names.borrow_mut().push(Arc::from(name));
        Some(Linear::atom(name))
    })?;
    Some(names.into_inner())
}

/// Whether the size variable `name` is known where the sizes `known` says are: itself
/// for one the program names, every size it is computed from for a derived one.
pub fn known_from(name: &str, known: &dyn Fn(&str) -> bool) -> bool {
    if is_size_name(name) {
        return known(name);
    }
    variables(name).is_some_and(|names| names.iter().all(|n| known(n)))
}

/// Parse the text of a derived size (as [`Linear`]'s `Display` writes it) into `T`, each
/// size variable being `var(name)`. `None` when the text is not one, or on overflow.
pub fn parse<T: SizeAlgebra>(text: &str, var: &dyn Fn(&str) -> Option<T>) -> Option<T> {
    let mut p = Parser {
        text: text.as_bytes(),
        at: 0,
        var,
    };
    let x = p.sum()?;
    p.skip_space();
    (p.at == p.text.len()).then_some(x)
}

struct Parser<'a, T> {
    text: &'a [u8],
    at: usize,
    var: &'a dyn Fn(&str) -> Option<T>,
}

impl<T: SizeAlgebra> Parser<'_, T> {
    fn skip_space(&mut self) {
        while self.text.get(self.at) == Some(&b' ') {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_space();
        if self.text.get(self.at) == Some(&c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// `product (('+' | '-') product)*`, with an optional leading `-`.
    fn sum(&mut self) -> Option<T> {
        let mut x = if self.eat(b'-') {
            T::num(0)?.sub(&self.product()?)?
        } else {
            self.product()?
        };
        loop {
            if self.eat(b'+') {
                x = x.add(&self.product()?)?;
            } else if self.eat(b'-') {
                x = x.sub(&self.product()?)?;
            } else {
                return Some(x);
            }
        }
    }

    /// `atom (('*' | '/' | '%') atom)*`.
    fn product(&mut self) -> Option<T> {
        let mut x = self.atom()?;
        loop {
            if self.eat(b'*') {
                x = x.mul(&self.atom()?)?;
            } else if self.eat(b'/') {
                x = T::op(SizeOp::Div, &x, &self.atom()?)?;
            } else if self.eat(b'%') {
                x = T::op(SizeOp::Rem, &x, &self.atom()?)?;
            } else {
                return Some(x);
            }
        }
    }

    /// A number, a size variable, `(sum)`, or `max(sum, sum)` / `min(sum, sum)`.
    fn atom(&mut self) -> Option<T> {
        self.skip_space();
        let start = self.at;
        if self.eat(b'(') {
            let x = self.sum()?;
            return self.eat(b')').then_some(x);
        }
        while let Some(&c) = self.text.get(self.at) {
            if c.is_ascii_alphanumeric() || c == b'_' || c == b'\'' || c >= 0x80 {
                self.at += 1;
            } else {
                break;
            }
        }
        let word = std::str::from_utf8(&self.text[start..self.at]).ok()?;
        if word.is_empty() {
            return None;
        }
        if word.bytes().all(|b| b.is_ascii_digit()) {
            return T::num(word.parse().ok()?);
        }
        let call = match word {
            "max" => Some(SizeOp::Max),
            "min" => Some(SizeOp::Min),
            _ => None,
        };
        if let Some(op) = call {
            if self.eat(b'(') {
                let a = self.sum()?;
                if !self.eat(b',') {
                    return None;
                }
                let b = self.sum()?;
                return self.eat(b')').then(|| T::op(op, &a, &b))?;
            }
        }
        (self.var)(word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lin(text: &str) -> Linear {
        parse(text, &|name| Some(Linear::atom(name))).unwrap()
    }

    #[test]
    fn forms_are_canonical() {
        assert_eq!(lin("n - m + 1").to_string(), "n - m + 1");
        assert_eq!(lin("1 + n - m"), lin("(n + 1) - m"));
        assert_eq!(lin("m*n").to_string(), lin("n*m").to_string());
        assert_eq!(lin("n*m").to_string(), "m*n");
        assert_eq!(lin("2*n - n").to_size(), Size::var("n"));
        assert_eq!(lin("n + 3").to_size(), Size::var("n").plus(3));
        assert_eq!(lin("7 - 2*3").to_size(), Size::lit(1));
        assert_eq!(lin("n / 2").to_string(), "n / 2");
        assert_eq!(lin("(n - 1) / 2").to_string(), "(n - 1) / 2");
        assert_eq!(lin("max(m, n)"), lin("max(n, m)"));
        assert_eq!(lin("-n + 3").to_string(), "-n + 3");
        assert_eq!(lin("3*(n*m)").to_string(), "3*(m*n)");
        // Every text a form prints parses back to the same form.
        for text in [
            "n - m + 1",
            "m*n - 1",
            "(n - 1) / 2 + m",
            "max(m, n) % 3",
            "-2*n",
        ] {
            let x = lin(text);
            assert_eq!(lin(&x.to_string()), x, "{text}");
        }
    }

    #[test]
    fn values_follow_int_arithmetic() {
        let sizes = |name: &str| match name {
            "n" => Some(10),
            "m" => Some(3),
            _ => None,
        };
        assert_eq!(evaluate("n - m + 1", &sizes), Some(8));
        assert_eq!(evaluate("(n - 1) / 2 + m", &sizes), Some(7));
        assert_eq!(evaluate("m - n", &sizes), Some(-7));
        assert_eq!(evaluate("(m - n) / 2", &sizes), Some(-3));
        assert_eq!(evaluate("(m - n) % 4", &sizes), Some(-3));
        assert_eq!(evaluate("max(m, n) * 2", &sizes), Some(20));
        assert_eq!(evaluate("n / (m - 3)", &sizes), None);
        assert_eq!(evaluate("n + k", &sizes), None);
        assert_eq!(evaluate("n +", &sizes), None);
    }

    #[test]
    fn names_are_told_from_derived_sizes() {
        assert!(is_size_name("n"));
        assert!(is_size_name("len_x2"));
        assert!(!is_size_name("n - m + 1"));
        assert!(!is_size_name("m*n"));
        assert!(!is_size_name("3"));
    }
}
