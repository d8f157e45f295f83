//! The engine seam: what runs the program and counts it. An [`Engine`] runs a [`Launch`]
//! (the program, its arguments and environment, the regions to count, the time limit) and
//! delivers its counts report ([`PluginOutput`], at the end) and, when asked, its record
//! stream ([`RecordStream`], while it runs: the memory accesses in
//! `hpcscope_plugin_format`'s records, each after its thread's marker). The cache
//! simulation ([`crate::simulate`]), set sampling and the profiles read only those: they do
//! not know which engine produced them.
//!
//! [`qemu::QemuEngine`] is the engine by default: QEMU user mode with the hpcscope TCG
//! plugin. [`native::NativeEngine`] (`HPCSCOPE_ENGINE=native`) runs x86-64 programs natively
//! under DynamoRIO with hpcscope's client: counts only, no record stream yet.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::elf::Arch;
use crate::error::MixError;

pub mod native;
pub mod qemu;
pub mod transport;

/// The counts report an engine delivers at the end (the QEMU plugin's `out=` file): the
/// fields mix reads.
pub use hpcscope_plugin_format::report::{
    MemWidthCounts, PluginOutput, RegionCounts, StreamStats, TbCounts, ThreadCounts, Totals,
    WidthCounts,
};
pub use transport::{RecordStream, Transport};

/// One run of a program under an engine.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its architecture.
    pub arch: Arch,
    /// SVE vector length, bits (aarch64).
    pub sve_bits: Option<u32>,
    /// In-function regions (link-time ranges).
    pub regions: Vec<(u64, u64)>,
    /// Start/stop scopes, callees included (link-time ranges).
    pub scopes: Vec<(u64, u64)>,
    /// Variables set in the program's environment.
    pub env: Vec<(String, String)>,
    /// Per-block breakdown.
    pub tbs: bool,
    /// Time limit: the run is stopped with its counts so far.
    pub timeout: Option<Duration>,
    /// The record stream to deliver (None: counts only).
    pub stream: Option<StreamRequest>,
}

/// The record stream asked of an engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRequest {
    /// Repeated accesses inside a line of this many bytes share a record.
    pub coalesce: u64,
    /// Set sampling's gate: only the accesses to these classes of lines are streamed, with
    /// counts of those left out (`hpcscope_plugin_format`'s skip records); None: every
    /// access.
    pub gate: Option<String>,
}

/// How the program ended.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// Exit status 0.
    Success,
    /// Non-zero exit status.
    Failed(i32),
    /// Killed by a signal (crash).
    Signal(i32),
    /// Stopped by mix at the time limit.
    TimedOut,
}

/// What an engine delivers at the end of a run.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The counts (None when the engine counted nothing: it could not start the program).
    pub counts: Option<PluginOutput>,
    /// How the program ended.
    pub ending: Ending,
    /// Wall time of the run, seconds.
    pub wall_s: f64,
    /// Last lines the program and the engine printed on standard error.
    pub stderr_tail: String,
}

/// A program running under an engine.
pub trait Running {
    /// Its record stream, once (None when none was asked or after the first call). It is
    /// read while the program runs, on another thread than the one that calls
    /// [`Running::finish`].
    fn take_stream(&mut self) -> Option<RecordStream>;

    /// Waits for the end (stopping the program at the time limit) and delivers the counts.
    fn finish(self: Box<Self>) -> Result<Finished, MixError>;
}

/// What runs a program and counts it.
pub trait Engine {
    /// Starts the program.
    fn start(&self, launch: &Launch) -> Result<Box<dyn Running>, MixError>;

    /// What counted, for the notes of a report.
    fn counted_by(&self) -> String;

    /// The collector named in the profiles.
    fn collector(&self) -> &'static str;

    /// Host CPUs the engine keeps busy while it runs (left to it by the simulation).
    fn busy_cpus(&self) -> usize {
        1
    }

    /// When a run that ended so is the engine's fault, not the program's: the note saying
    /// it was run again (once).
    fn rerun_note(&self, _program: &Path, _ending: &Ending) -> Option<String> {
        None
    }
}
