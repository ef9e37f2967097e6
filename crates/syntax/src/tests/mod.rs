//! Data-driven tests of the front end: one `check` helper per stage.

mod errors;
mod printing;
mod roundtrip;
mod typing;
