//! Typed errors of the counters crate: what was wrong, where, and how to fix it.

use std::fmt;
use std::path::PathBuf;

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A formula failed to parse.
    #[error("{origin}: formula '{name}': {source}")]
    Formula {
        /// File or catalogue the formula comes from.
        origin: String,
        /// Metric, quantity or event the formula defines.
        name: String,
        /// The syntax error (with column).
        source: crate::expr::ParseError,
    },
    /// A catalogue or recipe file is inconsistent.
    #[error("{origin}: {message}\n  fix: {hint}")]
    Recipe {
        /// File.
        origin: String,
        /// What is wrong.
        message: String,
        /// How to fix it.
        hint: String,
    },
    /// Malformed input file (import): line and column, 1-based.
    #[error("{origin}:{line}:{column}: {message}")]
    Import {
        /// File name.
        origin: String,
        /// Line, 1-based.
        line: usize,
        /// Column, 1-based.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The CPU has no recipe.
    #[error(
        "no counter recipe for this CPU ({cpu})\n  known recipes: {}\n  fix: pass --recipe ID for a compatible CPU, or --recipe-file FILE with your own recipe (see data/metrics/recipes/ for the format)",
        known.join(", ")
    )]
    UnknownCpu {
        /// What was detected.
        cpu: String,
        /// Recipe ids known.
        known: Vec<String>,
    },
    /// A recipe id nobody knows.
    #[error(
        "unknown recipe '{id}'\n  known recipes: {}\n  fix: choose one of them, or give --recipe-file FILE",
        known.join(", ")
    )]
    UnknownRecipe {
        /// The id asked for.
        id: String,
        /// Recipe ids known.
        known: Vec<String>,
    },
    /// An event the recipe needs that the PMU does not have.
    #[error(
        "event '{event}' ({spelling}) of recipe '{recipe}' is not available on this machine: {reason}\n  fix: {hint}"
    )]
    MissingEvent {
        /// Recipe.
        recipe: String,
        /// Logical event.
        event: String,
        /// How it was spelled for the PMU.
        spelling: String,
        /// Why it could not be opened.
        reason: String,
        /// What to do.
        hint: String,
    },
    /// A limit of the environment (no PMU, permissions): exit code 3.
    #[error("{0}")]
    Env(#[from] EnvLimit),
    /// File I/O.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Anything else about the user's input.
    #[error("{0}")]
    Input(String),
}

/// Whether the hardware PMU can be used, and if not, why and what would be needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmuStatus {
    /// Hardware events can be opened.
    pub available: bool,
    /// The CPU reports a hypervisor.
    pub virtualized: bool,
    /// What failed.
    pub detail: String,
}

impl fmt::Display for PmuStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.available {
            return write!(
                f,
                "hardware performance counters available ({})",
                self.detail
            );
        }
        write!(
            f,
            "hardware performance counters are not available{}: {}. Software events (task-clock, page faults, context switches, CPU migrations) are still counted. Needed for the hardware metrics: {}",
            if self.virtualized {
                " (virtualized: the hypervisor exposes no PMU to this machine)"
            } else {
                ""
            },
            self.detail,
            if self.virtualized {
                "a bare-metal node, or a VM with a virtual PMU (KVM/QEMU: -cpu host with pmu=on; VMware: \"virtualize CPU performance counters\"; cloud: a bare-metal instance type)"
            } else {
                "a kernel with the CPU's PMU driver (CONFIG_PERF_EVENTS and the vendor PMU), and perf_event_paranoid <= 2 for counting your own processes"
            }
        )
    }
}

/// Limits of the machine or the permissions, which the user cannot fix by changing input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EnvLimit {
    /// Hardware counters are not exposed.
    #[error("{0}")]
    NoPmu(PmuStatus),
    /// perf_event_paranoid forbids what is asked.
    #[error(
        "perf_event_paranoid is {current}, {what} needs {needed} or lower (or CAP_PERFMON)\n  fix: sudo sysctl kernel.perf_event_paranoid={needed}   (or: echo {needed} | sudo tee /proc/sys/kernel/perf_event_paranoid)"
    )]
    Paranoid {
        /// The current value.
        current: i32,
        /// The needed value.
        needed: i32,
        /// What needs it.
        what: String,
    },
    /// A system call failed for another reason.
    #[error("{call} failed: {message}")]
    Syscall {
        /// The call.
        call: String,
        /// The OS error text.
        message: String,
    },
}

impl Error {
    pub(crate) fn recipe(
        origin: &str,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Error {
        Error::Recipe {
            origin: origin.to_string(),
            message: message.into(),
            hint: hint.into(),
        }
    }

    pub(crate) fn import(
        origin: &str,
        line: usize,
        column: usize,
        message: impl Into<String>,
    ) -> Error {
        Error::Import {
            origin: origin.to_string(),
            line,
            column,
            message: message.into(),
        }
    }
}

impl hpcscope_core::Classify for Error {
    fn kind(&self) -> hpcscope_core::ErrorKind {
        use hpcscope_core::ErrorKind;
        match self {
            Error::Env(_) => ErrorKind::Environment,
            Error::Io { source, .. } => hpcscope_core::kind::io_kind(source),
            _ => ErrorKind::Input,
        }
    }
}
