//! hpcscope-history: the run history store and performance non-regression detection.
//!
//! * [`store`]: one SQLite file (bundled SQLite, WAL mode) holding every run with its
//!   command, binary hash, git state, machine fingerprint, environment, timestamps and
//!   metrics; schema versioning and migrations; concurrent writers; damaged files refused
//!   and never overwritten.
//! * [`record`]: the [`record::RunRecord`] type and the capture of its context.
//! * [`gate`]: the two-sample gate (Mann-Whitney U, bootstrap CI of the ratio of medians,
//!   modified z-scores), label-free anomaly scores and the explanation of a change by the
//!   metrics that moved with it.
//! * [`robust`]: the default change-point detector (steps of a local level against a trend,
//!   with an autocorrelation-aware test, seasonality, outliers, missing values).
//! * [`changepoint`]: [`changepoint::detect`] for any method; E-divisive means with a t-test
//!   (Otava's split/merge) and PELT.
//! * [`check`]: `regress check`, with Markdown, JSON and JUnit XML reports.
//! * [`stats`]: the hand-written statistics underneath; [`synth`]: labelled synthetic
//!   histories for evaluation.
//!
//! Any hpcscope command can store its result:
//!
//! ```
//! use hpcscope_history::record::{Fingerprint, Metric, RunRecord};
//! use hpcscope_history::store::{Filter, Store};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let mut store = Store::open(dir.path().join("history.sqlite")).unwrap();
//! for t in [1.00, 1.01, 0.99, 1.00, 1.12] {
//!     let mut run = RunRecord::new("./stream --size 1G", "bench");
//!     run.fingerprint = Fingerprint::current();
//!     run.metrics.push(Metric::new("time_s", t, "s"));
//!     run.tags.insert("kernel".into(), "triad".into());
//!     store.record(&run).unwrap();
//! }
//! let series = store.series("time_s", &Filter::default()).unwrap();
//! assert_eq!(series.len(), 5);
//!
//! let report = hpcscope_history::check::check(&store, &Default::default()).unwrap();
//! assert!(report.regression); // +12% against a baseline within ±1%
//! ```
#![deny(missing_docs)]
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

pub mod changepoint;
pub mod check;
pub mod error;
pub mod export;
pub mod gate;
pub mod github;
pub mod record;
pub mod robust;
pub mod sha256;
pub mod stats;
pub mod store;
pub mod synth;
pub mod view;

pub use error::{HistoryError, Result};
