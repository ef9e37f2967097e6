//! Errors of reverse mode.

use unfad_syntax::{ExprId, Span};

use crate::unf::UnfError;

/// Why a term could not be differentiated.
///
/// Errors about the input program carry the offending node and its span, so that the
/// caller can report a line and column; the others describe the request or a broken
/// invariant.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AdError {
    /// The program uses a construct reverse mode does not handle (yet).
    #[error("{message}")]
    Unsupported {
        expr: ExprId,
        span: Span,
        message: String,
    },
    /// The term carries no type (it was not type-checked) or is ill-typed.
    #[error("{message}")]
    IllTyped {
        expr: ExprId,
        span: Span,
        message: String,
    },
    /// The request itself is wrong: parameters to differentiate against, result type.
    #[error("{0}")]
    Request(String),
    /// A UNF term failed its judgment (a bug of a UNF transformation).
    #[error("ill-typed UNF term: {0}")]
    Unf(#[from] UnfError),
    /// A broken invariant of this crate (a bug, reported rather than panicking).
    #[error("internal error of reverse mode: {0}")]
    Internal(String),
}

impl AdError {
    /// The node the error is about, if it is about one.
    pub fn expr(&self) -> Option<ExprId> {
        match self {
            AdError::Unsupported { expr, .. } | AdError::IllTyped { expr, .. } => Some(*expr),
            _ => None,
        }
    }

    /// The source span of that node (`Span::NONE` for generated nodes).
    pub fn span(&self) -> Option<Span> {
        match self {
            AdError::Unsupported { span, .. } | AdError::IllTyped { span, .. } => Some(*span),
            _ => None,
        }
    }
}

pub(crate) fn internal<T>(message: impl Into<String>) -> Result<T, AdError> {
    Err(AdError::Internal(message.into()))
}
