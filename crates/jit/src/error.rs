//! Errors of compilation and of calls through the checked entry point.

/// Why a function could not be compiled, or why a call was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JitError {
    /// The term is outside the first-order fragment the code generator handles.
    #[error("cannot compile: {0}")]
    Unsupported(String),
    /// The term is not (consistently) typed; run the type checker first.
    #[error("cannot compile an ill-typed term: {0}")]
    Type(String),
    /// Cranelift rejected the generated code or could not set up the host target.
    #[error("code generation failed: {0}")]
    Codegen(String),
    /// An invariant of the code generator does not hold (a bug of this crate).
    #[error("internal error of the code generator: {0}")]
    Internal(String),
    /// The arguments of a call do not fit the compiled function's layout.
    #[error("bad call: {0}")]
    Call(String),
    /// A check at run time failed: the native code stopped early (its outputs are not
    /// complete).
    #[error("the native code stopped: {0}")]
    Check(String),
}

pub(crate) type JitResult<T> = Result<T, JitError>;

/// Why a lowering failed that lowering again, differently, may complete: the caller
/// retries on this reason, never on an error's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// An unevaluated array was read twice: lower again with
    /// [`crate::lower::Translator::force_read_twice`].
    ReadTwice,
}

pub(crate) fn internal<T>(msg: impl Into<String>) -> JitResult<T> {
    Err(JitError::Internal(msg.into()))
}

pub(crate) fn unsupported<T>(msg: impl Into<String>) -> JitResult<T> {
    Err(JitError::Unsupported(msg.into()))
}
