//! Deliberate mistakes of the shape analysis, for the tests that check that memory safety
//! does not rest on it (with the feature `fault-injection`; without it every hook here is
//! the identity and no mistake can be made).
//!
//! The lowering takes buffer capacities and the lengths of outputs from the analysis, and
//! it must stay inside its buffers whatever those are: a wrong length may give wrong
//! values, or stop the native code with a failed check, never a read or write outside a
//! buffer (crate docs, "Memory safety"). `tests/memory_safety.rs` compiles random programs
//! under each [`Fault`] and runs them with guard cells around every buffer.

use crate::layout::Dim;

/// A way for the shape analysis to be wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Every array length is claimed exact.
    AllExact,
    /// The two branches of an `if` meet at the shorter length, claimed exact.
    ExactShorterJoins,
    /// A scan is as long as its operand (not one longer).
    ScansNoLonger,
    /// A shifted array is as long as its operand (not one shorter).
    ShiftsNoShorter,
    /// `map2` is as long as its longer operand.
    LongerMap2,
}

impl Fault {
    /// Every fault.
    pub const ALL: [Fault; 5] = [
        Fault::AllExact,
        Fault::ExactShorterJoins,
        Fault::ScansNoLonger,
        Fault::ShiftsNoShorter,
        Fault::LongerMap2,
    ];
}

#[cfg(feature = "fault-injection")]
mod active {
    use super::Fault;
    use std::cell::Cell;

    thread_local! {
        static FAULT: Cell<Option<Fault>> = const { Cell::new(None) };
    }

    /// Run `f` with the shape analysis making the mistake `fault` on this thread.
    pub fn with<R>(fault: Fault, f: impl FnOnce() -> R) -> R {
        let before = FAULT.with(|c| c.replace(Some(fault)));
        let r = f();
        FAULT.with(|c| c.set(before));
        r
    }

    pub(crate) fn active(fault: Fault) -> bool {
        FAULT.with(|c| c.get()) == Some(fault)
    }
}

#[cfg(feature = "fault-injection")]
pub use active::with;

#[cfg(feature = "fault-injection")]
use active::active;

#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
fn active(_: Fault) -> bool {
    false
}

/// Whether an array's length is exact, as the analysis (perhaps wrongly) says.
pub(crate) fn exact(exact: bool) -> bool {
    exact || active(Fault::AllExact)
}

/// The length and exactness where two arrays meet, as the analysis (perhaps wrongly) says.
pub(crate) fn join(a: Dim, b: Dim, met: (Dim, bool)) -> (Dim, bool) {
    if active(Fault::ExactShorterJoins) {
        (a.min(b).unwrap_or(a), true)
    } else {
        met
    }
}

/// A scan's length, as the analysis (perhaps wrongly) says.
pub(crate) fn scan(operand: Dim) -> Dim {
    if active(Fault::ScansNoLonger) {
        operand
    } else {
        operand.inc()
    }
}

/// A shifted array's length, as the analysis (perhaps wrongly) says.
pub(crate) fn shift(operand: Dim) -> Dim {
    if active(Fault::ShiftsNoShorter) {
        operand
    } else {
        operand.dec()
    }
}

/// `map2`'s length from its operands' and their minimum, as the analysis (perhaps wrongly)
/// says.
pub(crate) fn map2(a: Dim, b: Dim, min: Dim) -> Dim {
    if active(Fault::LongerMap2) {
        a.max(b).unwrap_or(a)
    } else {
        min
    }
}
