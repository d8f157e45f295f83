//! hpcscope-job: parallel jobs.
//!
//! * [`rank`]: which rank this process is (from the launcher's environment: Open MPI,
//!   MPICH's Hydra, Slurm), the run directory every rank writes one result file into, and
//!   the rank's own command run and timed;
//! * [`merge`]: one result for a job from its ranks' files: per rank, per node, MPI calls,
//!   the POP efficiencies, and every missing, lost, failed or conflicting rank reported;
//! * [`render`]: a merged job as tables, charts and report sections;
//! * [`slurm`]: sweeps as Slurm job arrays with a merge job after them;
//! * [`scaling`]: merged jobs at several rank counts as the runs of a scaling study.
//!
//! The layout and the file format are in docs/multinode.md.
#![deny(missing_docs)]
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

pub mod jobs;
pub mod merge;
pub mod rank;
pub mod render;
pub mod scaling;
#[cfg(feature = "schema")]
pub mod schema;
pub mod slurm;
