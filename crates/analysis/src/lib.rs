//! hpcscope-analysis: the workflows that tie the crates together, each split into "compute
//! a result, then render it" (as Kerncraft does).
//!
//! * [`analyze`]: a program characterized under emulation, timed natively, placed on this
//!   machine's rooflines and projected onto others; or, when it cannot be characterized,
//!   what can still be measured natively ([`analyze::partial`]);
//! * [`node`]: the node scope of a run with several threads (per-thread rooflines, load
//!   imbalance, node projections);
//! * [`verdict`]: the sentences that say what bounds a run;
//! * [`render`]: an analysis as text and HTML report sections;
//! * [`scenario`]: scenario files resolved into machines and profiles (shared by `explore`
//!   and `analyze --scenario`);
//! * [`explore`]: a scenario's design space swept, with re-simulation where caches differ;
//! * [`project`]: a profiled binary projected from one machine to another, and validated;
//! * [`validate`]: the seeds' validation protocol on builds measurable here, and
//!   [`validate_run`] the `validate` workflow over it;
//!   [`node_validate`]: the same at node scope (thread counts, vector widths);
//! * [`workloads`], [`demo`]: the bundled reference workloads and the demo over them;
//! * [`host_machine`]: this machine's description, measured once and cached;
//! * [`model`]: the `hpcscope model` workflows (kernel extraction, sampling for the hottest
//!   loop, CPI fits, the difference model, strong scaling with the data-throughput kernel
//!   measured or read, similarity of counters, scaling laws, POP, composition, peak);
//! * [`hosts`]: host records (a machine file and the bundled workloads measured there) and
//!   projections from one recorded host onto another, checked against its measurements.
//!
//! Errors are `anyhow` chains whose links keep their types: the command line reads their
//! kind ([`hpcscope_core::Classify`]) to choose the exit code.
#![deny(missing_docs)]
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

pub mod analyze;
pub mod demo;
pub mod explore;
pub mod export;
pub mod host_machine;
pub mod hosts;
pub mod kernel_suite;
pub mod model;
pub mod node;
pub mod node_validate;
pub mod project;
pub mod record;
pub mod render;
pub mod resim;
pub mod scenario;
#[cfg(feature = "schema")]
pub mod schema;
pub mod validate;
pub mod validate_run;
pub mod verdict;
pub mod workloads;

pub use analyze::{
    AnalyzeOptions, AnalyzeResult, PartialAnalysis, TargetBinary, TargetResult, Uncharacterized,
    analyze,
};
