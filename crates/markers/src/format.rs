//! The JSON file the markers write at exit (`HPCSCOPE_MARKERS_OUT`), read back by
//! `hpcscope counters`. The shape only grows.
//!
//! ```json
//! {"format": "hpcscope-markers", "version": 1, "pid": 4242,
//!  "events": ["task-clock", "page-faults"],
//!  "event_errors": [{"event": "cycles", "error": "not supported: ..."}],
//!  "threads": [{"thread": 0, "tid": 4242, "regions": [
//!     {"name": "solve", "calls": 10, "time_ns": 5000000, "counts": [4900000, 12],
//!      "enabled_ns": 4900000, "running_ns": 4900000}], "warnings": []}],
//!  "warnings": []}
//! ```

use serde::{Deserialize, Serialize};

/// Value of the `format` field.
pub const FORMAT: &str = "hpcscope-markers";
/// Current version.
pub const VERSION: u32 = 1;

/// An event that could not be counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventError {
    /// Event name.
    pub event: String,
    /// Why.
    pub error: String,
}

/// One region of one thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionOut {
    /// Region name.
    pub name: String,
    /// Completed start/stop pairs.
    pub calls: u64,
    /// Wall time inside the region, summed over calls, ns.
    pub time_ns: u64,
    /// Counts per event (order of `events`), scaled when multiplexed.
    pub counts: Vec<f64>,
    /// Time the group was enabled inside the region, ns.
    pub enabled_ns: u64,
    /// Time the group was running on the PMU inside the region, ns.
    pub running_ns: u64,
}

/// One thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadOut {
    /// Index in order of first marker use (0 = the first thread).
    pub thread: u64,
    /// Kernel thread id.
    pub tid: i64,
    /// Regions with at least one completed call.
    pub regions: Vec<RegionOut>,
    /// Unbalanced markers of this thread.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MarkerOutput {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`].
    pub version: u32,
    /// Process id.
    pub pid: u32,
    /// Events counted, in `counts` order.
    pub events: Vec<String>,
    /// Events that could not be opened.
    #[serde(default)]
    pub event_errors: Vec<EventError>,
    /// Per thread.
    pub threads: Vec<ThreadOut>,
    /// Other problems.
    #[serde(default)]
    pub warnings: Vec<String>,
}
