//! The engine seam: what runs the program and counts it. An [`Engine`] runs a [`Launch`]
//! (the program, its arguments and environment, the regions to count, the time limit) and
//! delivers its counts report ([`PluginOutput`], at the end) and, when asked, its record
//! stream ([`RecordStream`], while it runs: the memory accesses in
//! `hpcscope_plugin_format`'s records, each after its thread's marker). The cache
//! simulation ([`crate::simulate`]), set sampling and the profiles read only those: they do
//! not know which engine produced them.
//!
//! [`qemu::QemuEngine`]: QEMU user mode with the hpcscope TCG plugin, for any program
//! (aarch64 on x86, every SVE vector length). [`native::NativeEngine`]: x86-64 programs on
//! an x86-64 host, natively under DynamoRIO with hpcscope's client (AVX-512 included, at
//! close to native speed). [`choose`] picks one ([`Choice`]: `--engine`, else
//! `HPCSCOPE_ENGINE`, else auto).

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
    /// Statically linked (no dynamic loader).
    pub static_binary: bool,
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

    /// Whether it emulates the program (QEMU) rather than running it on this machine.
    fn emulated(&self) -> bool {
        true
    }

    /// How a program runs under it, for messages ("under emulation").
    fn under(&self) -> &'static str {
        if self.emulated() {
            "under emulation"
        } else {
            "natively under DynamoRIO"
        }
    }

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

/// Which engine counts (`--engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Choice {
    /// Native when the program is of this host's ISA (x86-64), DynamoRIO is built and the
    /// run needs nothing only QEMU does (SVE vector lengths); QEMU otherwise.
    #[default]
    Auto,
    /// DynamoRIO, natively.
    Native,
    /// QEMU, emulated.
    Qemu,
}

/// The variable that picks the engine when `--engine` is not given.
pub const ENGINE_ENV: &str = "HPCSCOPE_ENGINE";

impl Choice {
    /// `auto`, `native` or `qemu`.
    pub fn parse(s: &str) -> Result<Choice, String> {
        match s {
            "auto" => Ok(Choice::Auto),
            "native" => Ok(Choice::Native),
            "qemu" => Ok(Choice::Qemu),
            _ => Err(format!("engine '{s}': expected auto, native or qemu")),
        }
    }

    /// The name `parse` reads.
    pub fn name(self) -> &'static str {
        match self {
            Choice::Auto => "auto",
            Choice::Native => "native",
            Choice::Qemu => "qemu",
        }
    }

    /// `given`, else `HPCSCOPE_ENGINE`, else auto.
    pub fn resolve(given: Option<Choice>) -> Result<Choice, MixError> {
        if let Some(c) = given {
            return Ok(c);
        }
        match std::env::var(ENGINE_ENV) {
            Ok(v) if !v.is_empty() => Choice::parse(&v).map_err(|e| MixError::Usage {
                message: format!("{ENGINE_ENV}={v}: {e}"),
                fix: format!("set {ENGINE_ENV} to auto, native or qemu, or unset it"),
            }),
            _ => Ok(Choice::Auto),
        }
    }
}

/// Whether AVX-512 programs are counted here: the machine has AVX-512F and the engine
/// `HPCSCOPE_ENGINE` (or auto) picks for an x86-64 program is the native one, built (QEMU
/// has no AVX-512).
pub fn avx512_counted_here() -> bool {
    #[cfg(target_arch = "x86_64")]
    let avx512 = std::arch::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    let avx512 = false;
    avx512
        && native::built(&hpcscope_host::tools::dynamorio_dir())
        && Choice::resolve(None).is_ok_and(|c| c != Choice::Qemu)
}

/// What a run needs of its engine.
#[derive(Debug, Clone, Copy, Default)]
pub struct Needs {
    /// An SVE vector length.
    pub sve: bool,
}

/// Why the native engine cannot run a program of `arch` with `needs` (None: it can).
fn native_cannot(arch: Arch, needs: Needs) -> Option<String> {
    if arch != Arch::X86_64 || Arch::host() != Some(Arch::X86_64) {
        return Some(format!(
            "the native engine runs x86-64 programs on an x86-64 host; this is a {} program{}",
            arch.name(),
            match Arch::host() {
                Some(h) if h != arch => format!(" on an {} host", h.name()),
                _ => String::new(),
            }
        ));
    }
    if needs.sve {
        return Some("SVE vector lengths are QEMU's".into());
    }
    None
}

/// The engine of `choice` for a program of `arch` whose run needs `needs`.
pub fn choose(choice: Choice, arch: Arch, needs: Needs) -> Result<Box<dyn Engine>, MixError> {
    match choice {
        Choice::Qemu => Ok(Box::new(qemu::QemuEngine::for_arch(arch)?)),
        Choice::Native => {
            if let Some(why) = native_cannot(arch, needs) {
                return Err(MixError::Usage {
                    message: why,
                    fix: "use --engine qemu (or auto)".into(),
                });
            }
            Ok(Box::new(native::NativeEngine::from_cache()?))
        }
        Choice::Auto => match (
            native_cannot(arch, needs),
            native::NativeEngine::from_cache(),
        ) {
            (None, Ok(e)) => Ok(Box::new(e)),
            _ => Ok(Box::new(qemu::QemuEngine::for_arch(arch)?)),
        },
    }
}
