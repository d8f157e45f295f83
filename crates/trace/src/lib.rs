//! eBPF observability for HPC jobs: `hpcscope trace` and `hpcscope profile`.
//!
//! The probes are BPF C programs (`bpf/hpcscope.bpf.c`) written for CO-RE and compiled by
//! clang into an object that is committed and embedded in this crate, so building needs no
//! C toolchain; `bpf/build.sh` regenerates it and a test checks that it matches its sources.
//! aya loads it, relocates it against the running kernel's BTF and attaches only the probes
//! asked for. Aggregation happens in the kernel (per-CPU hash maps, log2 histograms, stack
//! maps); user space reads the maps once at the end and drains a small ring buffer of
//! process lifecycle (and, with a timeline, slice) events.
//!
//! Probes (seed 004 section 1.2): system calls (count, errors, latency histogram per syscall
//! per process), scheduler (on/off-CPU time, run-queue latency, context switches, migrations
//! per thread), page faults (minor/major per thread), block I/O (latency and size per
//! device), file I/O (bytes per descriptor and path), user functions via uprobes (with MPI
//! and OpenMP shortcuts; for MPI calls, message counts and sizes: see [`mpi`]), and
//! cpu-clock stack sampling. Kernel requirements are only
//! tracepoints, raw tracepoints, perf software events, uprobes and BTF: no kprobes or fentry.
//!
//! ```no_run
//! use hpcscope_trace::{Probes, Target, TraceOptions, trace};
//! let opts = TraceOptions {
//!     target: Target::Command(vec!["./app".into(), "42".into()]),
//!     probes: Probes { syscalls: true, sched: true, faults: true, ..Probes::default() },
//!     duration: None,
//!     quiet: false,
//! };
//! let out = trace(&opts)?;
//! for t in out.report.tables() {
//!     println!("{}: {} rows", t.title, t.rows.len());
//! }
//! # Ok::<(), hpcscope_trace::TraceError>(())
//! ```
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]
#![deny(missing_docs)]

pub mod doctor;
pub mod error;
mod guard;
pub mod hatchet;
pub mod hist;
pub mod linux;
pub mod mpi;
pub mod mpitime;
pub mod openmp;
pub mod perf_script;
pub mod pprof;
pub mod profile;
pub mod report;
pub mod speedscope;
pub mod symbolize;
pub mod syscalls;
pub mod usdt;
pub mod view;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;

pub use error::TraceError;
pub use linux::hand_over_detach;
pub use profile::{HotFunction, Profile, StackSample};
pub use report::{LevelTable, TraceReport};
pub use usdt::UsdtSpec;

/// What to watch.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Launch this command (program and arguments) and trace it and everything it forks.
    Command(Vec<String>),
    /// A running process, its threads, its live descendants and what it forks later.
    Pid(u32),
    /// Every process in a cgroup v2 (a batch job's cgroup), by directory.
    Cgroup(PathBuf),
    /// Every process on the machine.
    System,
}

impl Target {
    /// Short description for reports.
    pub fn describe(&self) -> String {
        match self {
            Target::Command(c) => format!("command {}", c.join(" ")),
            Target::Pid(p) => format!("pid {p}"),
            Target::Cgroup(p) => format!("cgroup {}", p.display()),
            Target::System => "system".into(),
        }
    }
}

/// A user function to time: `SYMBOL` (in the target's program), `BINARY:SYMBOL` (a path or a
/// library name such as `libmpi`); a trailing `*` in the symbol probes every symbol with
/// that prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSpec {
    /// Binary or library; `None` means the target's own program.
    pub binary: Option<String>,
    /// Symbol or prefix followed by `*`.
    pub symbol: String,
}

impl std::str::FromStr for FunctionSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (binary, symbol) = match s.rsplit_once(':') {
            Some((b, sym)) => (Some(b.to_string()), sym.to_string()),
            None => (None, s.to_string()),
        };
        if symbol.is_empty() || binary.as_deref() == Some("") {
            return Err(format!("`{s}`: expected SYMBOL or BINARY:SYMBOL"));
        }
        Ok(FunctionSpec { binary, symbol })
    }
}

/// Which probes run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Probes {
    /// System calls: count, errors, latency histogram per syscall per process.
    pub syscalls: bool,
    /// Scheduler: on/off-CPU time, run-queue latency, context switches, migrations.
    pub sched: bool,
    /// Minor and major page faults per thread.
    pub faults: bool,
    /// Block I/O latency and size histograms per device (whole machine: requests are issued
    /// by kernel threads on the processes' behalf).
    pub block: bool,
    /// Bytes read and written per file descriptor and path (syscall tracepoints).
    pub files: bool,
    /// User functions to time with uprobe/uretprobe pairs.
    pub functions: Vec<FunctionSpec>,
    /// Time the MPI calls of libmpi.
    pub mpi: bool,
    /// Time the OpenMP runtime's barriers and parallel regions (libgomp, libomp), and the
    /// program's outlined parallel-region functions, for the OpenMP thread efficiency.
    pub openmp: bool,
    /// USDT probes to count (hits per process and thread, instants on the timeline); at
    /// most 16.
    pub usdt: Vec<UsdtSpec>,
    /// Series over time, one bucket per interval: system calls, page faults, bytes read and
    /// written, context switches (each when its probe runs). `None`: no series.
    pub rate_interval: Option<Duration>,
    /// Count the instructions and cycles of a launched command with the hardware PMU (for
    /// eq. 3.12's factors); where the machine cannot, a note says why.
    pub counters: bool,
    /// Kernel functions to time with kprobes (only the first is used); where the kernel has
    /// no kprobes the report says so and the syscall tracepoints stand in.
    pub kfuncs: Vec<String>,
    /// cpu-clock stack sampling at this frequency, Hz.
    pub profile_hz: Option<u64>,
    /// Include kernel frames in sampled stacks.
    pub kernel_stacks: bool,
    /// Record on-CPU slices and probed-function calls for a timeline.
    pub timeline: bool,
    /// Keep only the timeline events with these names (a probed function's symbol, `on-cpu`,
    /// `exec`, `exit`, `fork`); empty keeps them all. The region boundaries of an MPI rank
    /// need four events, not the millions of calls in between.
    pub timeline_keep: Vec<String>,
    /// Room in the in-kernel tables for this many traced processes (their threads, system
    /// calls, files and stacks are sized from it); `None`: 16,384, or, for a cgroup or the
    /// whole machine, four times the processes running at the start if that is more. What
    /// does not fit is counted and reported (`TraceReport::lost`), never dropped silently.
    pub max_processes: Option<u32>,
}

impl Probes {
    /// Turns on the probes named (`syscalls`, `sched`, `faults`, `block`, `files`, or `all`;
    /// blank names are skipped).
    pub fn enable(&mut self, names: &[String]) -> Result<(), TraceError> {
        for name in names {
            match name.trim() {
                "syscalls" => self.syscalls = true,
                "sched" => self.sched = true,
                "faults" => self.faults = true,
                "block" => self.block = true,
                "files" => self.files = true,
                "all" => {
                    self.syscalls = true;
                    self.sched = true;
                    self.faults = true;
                    self.block = true;
                    self.files = true;
                }
                "" => {}
                other => {
                    return Err(TraceError::Invalid(format!(
                        "--probes: unknown probe `{other}`; choose from syscalls, sched, faults, block, files, all"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Sampling stacks only, at `hz` (with the kernel's stacks when `kernel_stacks`), in at
    /// most `max_processes` processes.
    pub fn profiling(hz: u64, kernel_stacks: bool, max_processes: Option<u32>) -> Probes {
        Probes {
            profile_hz: Some(hz),
            kernel_stacks,
            max_processes,
            ..Probes::default()
        }
    }

    /// Every probe (no functions), profiling at `hz`.
    pub fn all(hz: u64) -> Probes {
        Probes {
            syscalls: true,
            sched: true,
            faults: true,
            block: true,
            files: true,
            profile_hz: Some(hz),
            kernel_stacks: true,
            ..Probes::default()
        }
    }

    /// Names of the probes that run.
    pub fn names(&self) -> Vec<String> {
        let mut v = Vec::new();
        for (on, n) in [
            (self.syscalls, "syscalls"),
            (self.sched, "sched"),
            (self.faults, "faults"),
            (self.block, "block"),
            (self.files, "files"),
            (!self.functions.is_empty(), "functions"),
            (self.mpi, "mpi"),
            (self.openmp, "openmp"),
            (!self.usdt.is_empty(), "usdt"),
            (self.rate_interval.is_some(), "rates"),
            (self.counters, "counters"),
            (!self.kfuncs.is_empty(), "kfuncs"),
            (self.profile_hz.is_some(), "profile"),
            (self.timeline, "timeline"),
        ] {
            if on {
                v.push(n.to_string());
            }
        }
        v
    }
}

/// A trace request.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceOptions {
    /// What to watch.
    pub target: Target,
    /// Which probes.
    pub probes: Probes,
    /// Stop after this long (a launched command then gets SIGTERM).
    pub duration: Option<Duration>,
    /// A launched command's standard output goes to /dev/null (its output must not mix
    /// with hpcscope's own, as in `analyze`); `trace -- CMD` keeps it.
    pub quiet: bool,
}

/// What a trace returns.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct TraceOutcome {
    /// Counts, times and histograms by level.
    pub report: TraceReport,
    /// The CPU profile, when sampling was on.
    pub profile: Option<Profile>,
}

/// Set by SIGINT/SIGTERM (see [`install_signal_handlers`]); the trace loop then detaches
/// and returns what it has.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// The signal that set [`STOP`] (0 before any): a launched command is stopped with the same
/// signal, so that it (and so hpcscope, which passes its status on) ends as a shell's
/// would: 130 after Ctrl-C, 143 after SIGTERM.
static STOP_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// The signal that stopped the trace (SIGINT or SIGTERM), when one did.
pub fn stop_signal() -> Option<i32> {
    match STOP_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Makes Ctrl-C (SIGINT) and SIGTERM stop a running trace cleanly instead of killing the
/// process, so the results are still written.
pub fn install_signal_handlers() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// Runs a trace: checks permissions and BTF, launches or finds the target, attaches the
/// probes, waits for the target to end (or Ctrl-C, or the duration), then reads the maps.
pub fn trace(opts: &TraceOptions) -> Result<TraceOutcome, TraceError> {
    STOP.store(false, Ordering::SeqCst);
    linux::run(opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_specs_parse() {
        let f: FunctionSpec = "work".parse().unwrap();
        assert_eq!(
            f,
            FunctionSpec {
                binary: None,
                symbol: "work".into()
            }
        );
        let f: FunctionSpec = "libmpi:MPI_*".parse().unwrap();
        assert_eq!(f.binary.as_deref(), Some("libmpi"));
        assert_eq!(f.symbol, "MPI_*");
        assert!(":x".parse::<FunctionSpec>().is_err());
        assert!("a:".parse::<FunctionSpec>().is_err());
    }

    #[test]
    fn probe_names() {
        let p = Probes {
            syscalls: true,
            profile_hz: Some(99),
            ..Probes::default()
        };
        assert_eq!(p.names(), ["syscalls", "profile"]);
        assert_eq!(Probes::all(99).names().len(), 6);
    }
}
