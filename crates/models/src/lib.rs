//! Performance models of hpcscope.
//!
//! * [`kernel`]: find a function's innermost loops in a binary (x86-64, or AArch64 with NEON
//!   and SVE), disassemble them and count instructions per iteration by class (class tables
//!   are data, `data/ports/*-classes.toml`), with FLOPs and a loop-carried critical path.
//! * [`ports`] and [`difference`]: port models as data, the bulk scheduler and the difference
//!   model of Owenson (2020, seed 003, eqs. 5.3 to 5.11) with its baselines.
//! * [`fit`]: CPIs fitted to measured variants by seeded basin-hopping (section 5.3).
//! * [`strong`]: runtime from cycles at a measured clock, the memory-bound cap, strong-scaling
//!   prediction, the BSP model (eqs. 3.1/3.2) and the thesis's error statistics.
//! * [`laws`]: Amdahl, Gustafson, the Universal Scalability Law and an Extra-P-style search
//!   over `p^i log2^j p` terms, chosen by leave-one-out cross-validation.
//! * [`pop`]: POP efficiencies (Wang 2023, seed 004, eqs. 3.7 to 3.16) and the
//!   time-decomposition projection (eqs. 3.1 to 3.3).
//! * [`inputs`]: the CSV inputs of `hpcscope model` (scaling table, measured runtimes, BSP
//!   partition, point-to-point times) read into these types.
//! * [`peak`]: theoretical single-core performance from a kernel's dependency graph (the
//!   habakkuk estimates of seed 004) and from the busiest port of a classified loop.
//!
//! * [`view`]: the text views of the results (`hpcscope model`'s tables), rendered beside
//!   their JSON shapes ([`output`]) by the report kit.
//!
//! Everything except [`kernel`]'s file reading is a pure function of recorded data.
//!
//! ```
//! use hpcscope_models::ports::{PortModel, Scheduler};
//! use hpcscope_models::difference::predict;
//! let sky = PortModel::builtin("skylake").unwrap();
//! let cpi = [("DIV", 8.0), ("FAST_DIV", 1.0), ("FP_SHUF", 1.0), ("LOAD", 1.5), ("STORE", 2.0),
//!            ("FP", 1.5), ("SIMD_INT", 1.0), ("INT", 1.0)]
//!     .iter().map(|(k, v)| (k.to_string(), *v)).collect();
//! let proxy = [("DIV", 20.0), ("FP", 40.0)].iter().map(|(k, v)| (k.to_string(), *v)).collect();
//! let target = [("DIV", 20.0), ("FP", 39.0)].iter().map(|(k, v)| (k.to_string(), *v)).collect();
//! let p = predict(&sky, &proxy, &target, &cpi, 170.0, Scheduler::Waterfill).unwrap();
//! assert_eq!(p.delta_c, 0.0); // DIV-bound on port 0: one FP instruction less changes nothing
//! ```
#![deny(missing_docs)]
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

pub mod classes;
pub mod csv;
pub mod difference;
pub mod error;
pub mod fit;
pub mod inputs;
pub mod kernel;
pub mod laws;
pub mod optim;
pub mod output;
pub mod peak;
pub mod pop;
pub mod ports;
pub mod similarity;
pub mod strong;
pub mod view;

mod glob;

pub use error::{ModelError, Result};
