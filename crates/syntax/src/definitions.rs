//! Definitions `def name(params): ret = body` as the parser makes them, and
//! [`Definitions`], a program's definitions with the texts they were parsed from: the
//! environment in which the type checker checks calls and places its errors.
//!
//! This sits below both the parser (which returns [`Def`]s) and the program (which owns
//! them), so that neither the parser nor the type checker needs to know of
//! [`Program`](crate::program::Program).

use crate::error::{Error, ErrorKind};
use crate::span::{SourceId, Span};
use crate::term::{DefId, ExprId, Var};
use crate::typeck::CheckEnv;
use crate::types::Type;

/// A definition `def name(params): ret = body`.
#[derive(Clone, Debug)]
pub struct Def {
    pub name: String,
    /// Parameters, each with its declared type on the variable.
    pub params: Vec<Var>,
    /// The declared parameter types (the same as on the variables).
    pub param_types: Vec<Type>,
    /// The declared result type, if any.
    pub ret_annot: Option<Type>,
    pub body: ExprId,
    /// Where the name is.
    pub span: Span,
    /// The result type, once checked.
    pub ret: Option<Type>,
}

/// A program's definitions (indexed by [`DefId`]) and its source texts (indexed by
/// [`SourceId`]), borrowed: what the type checker needs to know of a program.
#[derive(Copy, Clone, Debug)]
pub struct Definitions<'p> {
    pub defs: &'p [Def],
    pub sources: &'p [String],
}

impl<'p> Definitions<'p> {
    /// The text of the source `src` (empty for generated terms).
    pub fn source_text(&self, src: SourceId) -> &'p str {
        self.sources.get(src.0 as usize).map_or("", |s| s.as_str())
    }

    /// An error at `span`, with its line and column.
    pub fn error_at(&self, kind: ErrorKind, span: Span, message: impl Into<String>) -> Error {
        Error::at(kind, span, self.source_text(span.src), message)
    }
}

impl CheckEnv for Definitions<'_> {
    fn error(&self, kind: ErrorKind, span: Span, message: String) -> Error {
        self.error_at(kind, span, message)
    }

    fn signature(&self, d: DefId) -> Option<(Vec<Type>, Type, String)> {
        let def = self.defs.get(d.0 as usize)?;
        Some((def.param_types.clone(), def.ret.clone()?, def.name.clone()))
    }
}
