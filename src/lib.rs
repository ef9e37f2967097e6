//! The cheap-gradient suite and its harness, shared by the end-to-end tests (`tests/`), the
//! criterion benchmarks (`benches/`) and the report generator (`src/bin/perf-report.rs`,
//! which writes `docs/performance.md`).
//!
//! - [`suite`]: the programs, their inputs and hand-written Rust baselines;
//! - [`native`]: calls of the compiled code with the arguments checked once, not per call;
//! - [`measure`]: timing (the gradient; then, in rounds of their own, the jvp and the
//!   Hessian-vector product), the cost model's ratio, fits of time against size;
//! - [`report`]: the Markdown report and its SVG plot;
//! - [`gradbench`]: the GradBench tool's own figures for its `gmm` module;
//! - [`peers`]: JAX beside unfad (`bench/peers/jax_suite.py`), checked against unfad;
//! - [`batches`]: the math kernels in batches against inline, in one process.

#![forbid(unsafe_code)]

use std::path::PathBuf;

pub mod batches;
pub mod gradbench;
pub mod measure;
pub mod native;
pub mod peers;
pub mod report;
pub mod suite;

/// The directory of the bundled example programs.
pub fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples")
}
