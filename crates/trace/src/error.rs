//! Typed errors of the tracer; their [`hpcscope_core::Classify`] kind tells which ones are
//! limits of this machine rather than bad input.

use thiserror::Error;

/// What went wrong while setting up or running a trace.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TraceError {
    /// Not allowed to load BPF programs.
    #[error(
        "not permitted to load BPF programs ({detail}); run as root, or grant CAP_BPF and \
         CAP_PERFMON (e.g. `sudo setcap cap_bpf,cap_perfmon+ep $(which hpcscope)`)"
    )]
    NotPermitted {
        /// What was refused.
        detail: String,
    },
    /// The kernel has no BTF, needed to relocate the CO-RE programs.
    #[error(
        "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing): the probes cannot be \
         relocated; use a kernel built with CONFIG_DEBUG_INFO_BTF=y (all major distributions \
         since 2020)"
    )]
    NoBtf,
    /// A kernel feature a probe needs is missing.
    #[error("{what} is not available on this kernel: {why}")]
    Unsupported {
        /// The probe or feature.
        what: String,
        /// Why, and what to do.
        why: String,
    },
    /// The process to attach to does not exist.
    #[error("no process with PID {0}; check the PID (`ps -p {0}`)")]
    NoSuchProcess(u32),
    /// The cgroup to trace does not exist.
    #[error(
        "cgroup {0} not found; give a cgroup v2 directory, e.g. /sys/fs/cgroup/system.slice/job.scope"
    )]
    NoSuchCgroup(String),
    /// A symbol to probe is not in the binary.
    #[error(
        "symbol `{symbol}` is not defined in {binary}; list candidates with `nm -D {binary}` or `nm {binary}`"
    )]
    SymbolNotFound {
        /// Symbol asked for.
        symbol: String,
        /// Binary searched.
        binary: String,
    },
    /// A binary or library to probe was not found.
    #[error("cannot find {0} to probe; give a path")]
    BinaryNotFound(String),
    /// Bad input (an empty command, a zero frequency, too many functions...).
    #[error("{0}")]
    Invalid(String),
    /// The command to launch could not be started.
    #[error("cannot run `{command}`: {reason}")]
    Spawn {
        /// Program, as given.
        command: String,
        /// Why, and what to do.
        reason: String,
    },
    /// Loading or attaching a BPF program failed for another reason.
    #[error("BPF {what}: {detail}")]
    Bpf {
        /// What was being done.
        what: String,
        /// The loader's message (with the verifier log when there is one).
        detail: String,
    },
    /// An I/O error.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

impl hpcscope_core::Classify for TraceError {
    /// Limits of this machine or its permissions are environment errors; the rest is input.
    fn kind(&self) -> hpcscope_core::ErrorKind {
        match self {
            TraceError::NotPermitted { .. }
            | TraceError::NoBtf
            | TraceError::Unsupported { .. } => hpcscope_core::ErrorKind::Environment,
            _ => hpcscope_core::ErrorKind::Input,
        }
    }
}
