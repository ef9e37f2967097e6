//! Tokens of the surface language.

use crate::span::{SourceId, Span};

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum TokKind {
    Ident,
    Number,
    // keywords
    Def,
    Let,
    In,
    If,
    Then,
    Else,
    Fun,
    Fst,
    Snd,
    Map,
    Map2,
    Reduce,
    Foldl,
    Scanl,
    Scanr,
    Shift1L,
    Shift1R,
    ZerosLike,
    OnesLike,
    Len,
    True,
    False,
    Real,
    Bool,
    // punctuation
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Dot,
    Colon,
    Eq,
    Arrow,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Lt,
    Le,
    Gt,
    Ge,
    EqEq,
    Ne,
    OrOr,
    AndAnd,
    Bang,
    /// A character that starts no token.
    Unknown,
    Eof,
}

impl TokKind {
    /// How the token is named in "expected ..., found ..." messages.
    pub fn describe(self) -> &'static str {
        use TokKind::*;
        match self {
            Ident => "a name",
            Number => "a number",
            Def => "`def`",
            Let => "`let`",
            In => "`in`",
            If => "`if`",
            Then => "`then`",
            Else => "`else`",
            Fun => "`fun`",
            Fst => "`fst`",
            Snd => "`snd`",
            Map => "`map`",
            Map2 => "`map2`",
            Reduce => "`reduce`",
            Foldl => "`foldl`",
            Scanl => "`scanl`",
            Scanr => "`scanr`",
            Shift1L => "`shift1L`",
            Shift1R => "`shift1R`",
            ZerosLike => "`zeros_like`",
            OnesLike => "`ones_like`",
            Len => "`len`",
            True => "`true`",
            False => "`false`",
            Real => "`real`",
            Bool => "`bool`",
            LParen => "`(`",
            RParen => "`)`",
            LBracket => "`[`",
            RBracket => "`]`",
            Comma => "`,`",
            Dot => "`.`",
            Colon => "`:`",
            Eq => "`=`",
            Arrow => "`->`",
            Plus => "`+`",
            Minus => "`-`",
            Star => "`*`",
            Slash => "`/`",
            Percent => "`%`",
            Lt => "`<`",
            Le => "`<=`",
            Gt => "`>`",
            Ge => "`>=`",
            EqEq => "`==`",
            Ne => "`!=`",
            OrOr => "`||`",
            AndAnd => "`&&`",
            Bang => "`!`",
            Unknown => "an unknown character",
            Eof => "the end of the input",
        }
    }
}

/// Keywords, which can never name a variable or a definition.
pub const KEYWORDS: &[(&str, TokKind)] = &[
    ("def", TokKind::Def),
    ("let", TokKind::Let),
    ("in", TokKind::In),
    ("if", TokKind::If),
    ("then", TokKind::Then),
    ("else", TokKind::Else),
    ("fun", TokKind::Fun),
    ("fst", TokKind::Fst),
    ("snd", TokKind::Snd),
    ("map", TokKind::Map),
    ("map2", TokKind::Map2),
    ("reduce", TokKind::Reduce),
    ("foldl", TokKind::Foldl),
    ("scanl", TokKind::Scanl),
    ("scanr", TokKind::Scanr),
    ("shift1L", TokKind::Shift1L),
    ("shift1R", TokKind::Shift1R),
    ("zeros_like", TokKind::ZerosLike),
    ("ones_like", TokKind::OnesLike),
    ("len", TokKind::Len),
    ("true", TokKind::True),
    ("false", TokKind::False),
    ("real", TokKind::Real),
    ("bool", TokKind::Bool),
];

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Token {
    pub kind: TokKind,
    pub span: Span,
    /// True if whitespace or a comment comes right before the token (`f(x)` is a call,
    /// `f (x)` two operands).
    pub space_before: bool,
}

/// Split `text` into tokens; always ends with `Eof`. Unknown characters become `Unknown`
/// tokens so that the parser reports them with their position.
pub fn lex(text: &str, src: SourceId) -> Vec<Token> {
    let bytes = text.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    let mut space_before = true;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            space_before = true;
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            space_before = true;
            continue;
        }
        let start = i;
        let kind = if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'\'')
            {
                i += 1;
            }
            let word = &text[start..i];
            KEYWORDS
                .iter()
                .find(|(k, _)| *k == word)
                .map_or(TokKind::Ident, |(_, kind)| *kind)
        } else if c.is_ascii_digit() {
            i = number_end(bytes, i);
            TokKind::Number
        } else {
            let two = if i + 1 < bytes.len() {
                &bytes[i..i + 2]
            } else {
                &bytes[i..i + 1]
            };
            let (kind, len) = match two {
                b"->" => (TokKind::Arrow, 2),
                b"<=" => (TokKind::Le, 2),
                b">=" => (TokKind::Ge, 2),
                b"==" => (TokKind::EqEq, 2),
                b"!=" => (TokKind::Ne, 2),
                b"||" => (TokKind::OrOr, 2),
                b"&&" => (TokKind::AndAnd, 2),
                _ => (
                    match c {
                        b'(' => TokKind::LParen,
                        b')' => TokKind::RParen,
                        b'[' => TokKind::LBracket,
                        b']' => TokKind::RBracket,
                        b',' => TokKind::Comma,
                        b'.' => TokKind::Dot,
                        b':' => TokKind::Colon,
                        b'=' => TokKind::Eq,
                        b'+' => TokKind::Plus,
                        b'-' => TokKind::Minus,
                        b'*' => TokKind::Star,
                        b'/' => TokKind::Slash,
                        b'%' => TokKind::Percent,
                        b'<' => TokKind::Lt,
                        b'>' => TokKind::Gt,
                        b'!' => TokKind::Bang,
                        _ => TokKind::Unknown,
                    },
                    1,
                ),
            };
            i += len;
            if kind == TokKind::Unknown {
                // Swallow a whole UTF-8 character so the span is a valid slice.
                while i < bytes.len() && !text.is_char_boundary(i) {
                    i += 1;
                }
            }
            kind
        };
        toks.push(Token {
            kind,
            span: Span::new(src, start, i),
            space_before,
        });
        space_before = false;
    }
    toks.push(Token {
        kind: TokKind::Eof,
        span: Span::new(src, text.len(), text.len()),
        space_before,
    });
    toks
}

/// `digits ('.' digits)? ([eE] [+-]? digits)?`; a `.` not followed by a digit is not part
/// of the number, so `p.1` and `(x. 2)` lex as expected.
fn number_end(bytes: &[u8], mut i: usize) -> usize {
    let digits = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    i = digits(i);
    if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
        i = digits(i + 1);
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            i = digits(j);
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<TokKind> {
        lex(text, SourceId::USER)
            .into_iter()
            .map(|t| t.kind)
            .collect()
    }

    #[test]
    fn numbers_and_dots() {
        use TokKind::*;
        assert_eq!(
            kinds("2.5e-3 p.1 (x. 2)"),
            vec![Number, Ident, Dot, Number, LParen, Ident, Dot, Number, RParen, Eof]
        );
        assert_eq!(kinds("1e5 1e"), vec![Number, Number, Ident, Eof]);
    }

    #[test]
    fn operators_comments_and_unknown_characters() {
        use TokKind::*;
        assert_eq!(
            kinds("a->b <= >= == != || && ! // comment\n # é"),
            vec![Ident, Arrow, Ident, Le, Ge, EqEq, Ne, OrOr, AndAnd, Bang, Unknown, Unknown, Eof]
        );
    }

    #[test]
    fn adjacency_is_recorded() {
        let toks = lex("f(x) f (x)", SourceId::USER);
        assert!(!toks[1].space_before);
        assert!(toks[5].space_before);
    }
}
