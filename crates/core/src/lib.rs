//! hpcscope-core: the model side of hpcscope.
//!
//! Machine descriptions ([`machine`]), application profiles ([`profile`]), cache-aware
//! rooflines ([`roofline`]), relative performance projection ([`project`]) after Gavoille
//! (2024 thesis, chapters 6 and 7), node rooflines from per-thread profiles ([`node`]) and
//! design-space exploration ([`explore`]), and what they look like ([`view`]: their charts
//! and text views, drawn with `hpcscope-report`). Pure
//! functions and types: no I/O besides (de)serialization and one atomic file writer
//! ([`fs::write_atomic`]) that every command's output goes through.
#![deny(missing_docs)]
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

pub mod error;
pub mod explore;
pub mod fs;
pub mod hatchet;
pub mod kerncraft;
pub mod kind;
pub mod library;
pub mod load;
pub mod machine;
pub mod node;
pub mod placement;
pub mod point;
pub mod profile;
pub mod project;
pub mod range;
pub mod roofline;
#[cfg(feature = "schema")]
pub mod schema;
pub mod stats;
pub mod view;

pub use error::{Error, InputError, Result};
pub use kind::{Classify, ErrorKind, Failure};
pub use machine::{Machine, Precision};
pub use profile::{AppMetrics, Profile};
