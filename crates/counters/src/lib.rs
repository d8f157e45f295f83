//! hpcscope-counters: portable hardware-counter metrics after seed 001 (Gravelle 2022).
//!
//! The 21 metrics of the seed (time, flops/s, IPC, bytes per memory level, miss rates, byte
//! ratios, flops per instruction and per byte) are defined once in a catalogue
//! ([`catalogue`], `data/metrics/metrics.toml`); per CPU family a recipe
//! (`data/metrics/recipes/*.toml`) says which counters give each quantity, where the event
//! names come from and what cannot be measured there. Formulas are expressions ([`expr`])
//! that also read Linux perf's `pmu-events` metric syntax ([`import::pmu_events`]).
//!
//! Counter data comes from live collection through perf_event_open ([`perf`], Linux only),
//! from the region markers of `hpcscope-markers`, or from importers of what users already
//! have ([`import`]: `perf stat -x,` CSV, PAPI high-level and Caliper JSON, likwid-perfctr
//! CSV). All of it becomes [`raw::RawData`]; [`compute::compute`] turns that into a
//! [`compute::Report`] (per region, per thread), which [`output`] prints like the seed's
//! tables and [`profile`] converts into the foundation's `Profile`.
//!
//! ```
//! use hpcscope_counters::{catalogue::{Catalogue, Variant}, compute, raw::{RawData, Collector, Count}};
//! let cat = Catalogue::builtin();
//! let recipe = cat.find("clx").unwrap();
//! let compiled = cat.compile(recipe, Variant::AsPublished).unwrap();
//! let mut raw = RawData::new("demo", "manual", Collector::Papi);
//! let t = raw.thread_mut("triad", 0);
//! t.time_s = Some(1.0);
//! for w in ["SCALAR", "128B_PACKED", "256B_PACKED", "512B_PACKED"] {
//!     for p in ["SINGLE", "DOUBLE"] {
//!         let v = if w == "512B_PACKED" && p == "DOUBLE" { 2.5e8 } else { 0.0 };
//!         t.counters.insert(format!("FP_ARITH_INST_RETIRED:{w}_{p}"), Count::of(v));
//!     }
//! }
//! t.counters.insert("PAPI_LD_INS".into(), Count::of(2.5e8));
//! t.counters.insert("PAPI_SR_INS".into(), Count::of(1.25e8));
//! let order: Vec<String> = cat.metrics.metrics.iter().map(|m| m.id.clone()).collect();
//! let report = compute::compute(&compiled, &order, &raw, &compute::Options::default());
//! let r = report.region("triad").unwrap();
//! assert_eq!(r.value("flops"), Some(2e9));
//! assert_eq!(r.value("ls_bytes"), Some(24e9)); // 3.75e8 instructions x 64 B
//! assert!(r.value("ipc").is_none()); // no cycles in the data: NA, with the reason
//! assert!(r.get("ipc").unwrap().na.as_ref().unwrap().contains("not in the data"));
//! ```
#![deny(missing_docs)]
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

pub mod catalogue;
pub mod compute;
pub mod cpu;
pub mod error;
pub mod expr;
pub mod hatchet;
pub mod import;
pub mod measure;
pub mod output;
pub mod perf;
pub mod profile;
pub mod raw;
pub mod suite;
pub mod uprobe;
pub mod validate;

pub use catalogue::{Catalogue, Chosen, Variant};
pub use compute::{Options, Precision, Report, compute};
pub use error::{EnvLimit, Error, Result};
/// The marker library (environment variable names, output format), for the CLI.
pub use hpcscope_markers;
pub use measure::{MeasureOptions, Measurement, RecipeChoice, Regions, measure, measure_with};
pub use raw::RawData;
