//! hpcscope-bench: measures what this machine can sustain and describes it as an
//! [`hpcscope_core::Machine`].
//!
//! - [`topology`]: sockets, cores, SMT, NUMA nodes, caches (sysfs, cpuid), ISA, frequency;
//! - [`kernels`]: load, store, copy, STREAM triad, four-stream triad, daxpy, per vector
//!   width, normal and non-temporal stores;
//! - [`flops`]: add, mul, FMA peak kernels per precision and width;
//! - [`oplat`]: the latency of add, mul, FMA, divide and square root (one dependent chain);
//! - [`plateau`]: bandwidth-vs-size plateaus and Gravelle's level rule (pure functions);
//! - [`latency`]: pointer chasing over a Sattolo cycle;
//! - [`dt`]: the data-throughput kernel of an unstructured-grid edge loop (seed 003) and the
//!   clock at each thread count;
//! - [`run`]: the orchestration, including thread scaling with pinned threads;
//! - [`report`]: the JSON report, the machine file and the sweep chart;
//! - [`mpi`]: IMB-style MPI benchmarks under a launcher, the Hockney fit, the network link.
//!
//! ```no_run
//! let cfg = hpcscope_bench::BenchConfig { quick: true, ..Default::default() };
//! let report = hpcscope_bench::run(&cfg).expect("benchmark");
//! println!("{}", report.machine.to_toml_string());
//! ```
#![deny(missing_docs)]
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

pub mod affinity;
pub mod dgemm;
pub mod dt;
pub mod error;
pub mod flops;
pub mod kernels;
pub mod latency;
pub mod measure;
pub mod mpi;
pub mod oplat;
pub mod plateau;
pub mod report;
pub mod run;
pub mod stats;
pub mod topology;
pub mod units;

pub use error::BenchError;
pub use report::{MachineNames, Report};
pub use run::{BenchConfig, CpuRequest, Selection, run};
