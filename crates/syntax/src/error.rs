//! Errors of the front end, each pointing at a line and column.

use std::fmt;

use crate::span::{line_col, SourceId, Span};

/// What went wrong, broadly.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum ErrorKind {
    /// The text is not in the grammar (includes unknown names).
    Syntax,
    /// The program is not well typed.
    Type,
    /// The program is well typed but outside what the requested operation supports.
    Unsupported,
    /// The request does not fit the program (no such entry point, ...).
    Usage,
    /// The program stopped on its input (an index out of bounds, an int division by zero).
    Run,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::Syntax => "syntax error",
            ErrorKind::Type => "type error",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Usage => "usage error",
            ErrorKind::Run => "run-time error",
        })
    }
}

/// A front-end error: kind, position (1-based line and column) and an explanation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    pub kind: ErrorKind,
    /// `None` for errors about the program as a whole (no entry point, ...).
    pub position: Option<Position>,
    pub message: String,
    /// The span the position was computed from (for rendering a source excerpt).
    pub span: Span,
}

/// Where an error is: line and column, and whether it is in the built-in prelude.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub col: usize,
    pub in_prelude: bool,
}

impl Error {
    /// An error at `span`, with its line and column in `text`, the text `span` points into
    /// (no position for the span of generated terms).
    pub fn at(kind: ErrorKind, span: Span, text: &str, message: impl Into<String>) -> Error {
        let position = (!span.is_none()).then(|| {
            let (line, col) = line_col(text, span.lo as usize);
            Position {
                line,
                col,
                in_prelude: span.src == SourceId::PRELUDE,
            }
        });
        Error {
            kind,
            position,
            message: message.into(),
            span,
        }
    }

    pub fn whole_program(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            position: None,
            message: message.into(),
            span: Span::NONE,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some(p) => {
                let place = if p.in_prelude { " of the prelude" } else { "" };
                write!(
                    f,
                    "{} at line {}, column {}{}: {}",
                    self.kind, p.line, p.col, place, self.message
                )
            }
            None => write!(f, "{}: {}", self.kind, self.message),
        }
    }
}
