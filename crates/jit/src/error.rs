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
    /// The program stopped on its arguments: an index out of bounds or an int division by
    /// zero (as the interpreter does), at the position `at` of the source if known
    /// (`(source, byte offset)`: a [`unfad_syntax::SourceId`]'s number and an offset into
    /// that text).
    #[error("{why}")]
    Stopped { why: String, at: Option<(u16, u32)> },
}

pub(crate) type JitResult<T> = Result<T, JitError>;

/// Why a lowering failed that lowering again, differently, may complete: the caller
/// retries on this reason, never on an error's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// An unevaluated array was read twice: lower again with
    /// [`crate::lower::Translator::force_read_twice`].
    ReadTwice,
    /// A scan computed where it is read was read out of order: lower again with
    /// [`crate::lower::Translator::force_eager_scans`].
    ScanOrder,
    /// A batched loop could not batch its kernels: lower again without batches (see
    /// `lower/batch.rs`).
    NoBatch,
}

/// How many cells the status of a function takes in its workspace: the code of the stop
/// ([`Stop::code_at`], 0 while nothing failed), then two details of it (for an index out of
/// bounds, the index and the length), written only when a check fails.
pub(crate) const STATUS_CELLS: u64 = 3;

/// Why the native code stopped early: the code a failed run-time check writes to the
/// function's status cell (0 while nothing failed), read back by the checked call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// A length the shape analysis promised did not hold (a bug of this crate).
    Length = 1,
    /// An index (of `A[i]` or of a position of `scatter_add`) out of the array's bounds.
    Index = 2,
    /// An int division or remainder whose divisor is 0.
    DivisionByZero = 3,
    /// An `iota` longer than the size its type's formula gives, which the native code laid
    /// it out for (an int parameter in the formula is negative, and size variables are
    /// never below 0): the length and that size.
    Size = 4,
}

impl Stop {
    /// The value of the status cell that means this stop.
    pub(crate) fn code(self) -> f64 {
        self as u8 as f64
    }

    /// The value of the status cell that means this stop at `site` of the source: the kind
    /// in the three low bits, then the source and the byte offset (1 + offset +
    /// source·2^32; 0 for a generated term), which an `f64` holds exactly for fewer than
    /// 2^17 sources.
    pub(crate) fn code_at(self, site: unfad_syntax::Span) -> f64 {
        if self == Stop::Length || site.src == unfad_syntax::SourceId::GENERATED {
            return self.code();
        }
        let place = 1 + site.lo as u64 + ((site.src.0 as u64) << 32);
        (self as u64 + 8 * place) as f64
    }

    /// The error of a call whose status cells hold `code` (not 0) and its two details.
    pub(crate) fn error(code: f64, details: [f64; 2]) -> JitError {
        let whole = code as u64;
        let (kind, place) = (whole % 8, whole / 8);
        let at = (place > 0).then(|| {
            (
                ((place - 1) >> 32) as u16,
                ((place - 1) & 0xffff_ffff) as u32,
            )
        });
        if kind == Stop::Index as u64 {
            // The interpreter's words (`unfad_interp::position`).
            let [index, len] = details;
            return JitError::Stopped {
                why: format!(
                    "index {index} is out of bounds for an array of {len} element{}",
                    if len == 1.0 { "" } else { "s" }
                ),
                at,
            };
        }
        if kind == Stop::DivisionByZero as u64 {
            return JitError::Stopped {
                why: "an integer division or remainder by zero".into(),
                at,
            };
        }
        if kind == Stop::Size as u64 {
            let [len, size] = details;
            return JitError::Stopped {
                why: format!(
                    "this `iota` has {len} elements, where the native code laid it out for \
                     {size} from its length's formula (its type's size), which counts an int \
                     parameter as 0 when negative and a shifted array's length as its \
                     array's less one, also when that array is empty: give the int \
                     parameters values of 0 or more, and shift no empty array"
                ),
                at,
            };
        }
        JitError::Check(
            "a length check failed, and the native code stopped rather than read or write \
             outside a buffer; this is a bug of unfad's code generator: please report it with \
             the program and the sizes"
                .into(),
        )
    }
}

pub(crate) fn internal<T>(msg: impl Into<String>) -> JitResult<T> {
    Err(JitError::Internal(msg.into()))
}

pub(crate) fn unsupported<T>(msg: impl Into<String>) -> JitResult<T> {
    Err(JitError::Unsupported(msg.into()))
}
