//! Helpers shared by the end-to-end tests (`tests/`) and the benchmarks (`benches/`):
//! where the bundled examples are.

use std::path::PathBuf;

/// The directory of the bundled example programs.
pub fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples")
}
