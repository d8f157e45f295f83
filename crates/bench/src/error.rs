//! Errors of the bench crate: bad input, environment limits, and bugs (see
//! [`hpcscope_core::ErrorKind`]).

/// Everything that can stop a benchmark run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// A kernel name given on the command line is not known.
    #[error("--kernels: unknown kernel '{name}'\n  fix: use a comma-separated list of: {known}")]
    UnknownKernel {
        /// The name given.
        name: String,
        /// The known names.
        known: String,
    },
    /// A command-line value is unusable (size, CPU list, repetition count...).
    #[error("{flag}: {what}\n  fix: {fix}")]
    BadInput {
        /// The flag concerned (`--sizes`).
        flag: String,
        /// What is wrong.
        what: String,
        /// How to fix it.
        fix: String,
    },
    /// The machine or the process cannot do what was asked (pinning refused, allocation
    /// failed, no usable kernel).
    #[error("{what}\n  fix: {fix}")]
    Environment {
        /// What failed.
        what: String,
        /// How to get past it.
        fix: String,
    },
    /// A kernel cannot run on this CPU; callers skip it with a note.
    #[error("{what} skipped: {reason}")]
    Unsupported {
        /// The kernel's label.
        what: String,
        /// Why.
        reason: String,
    },
    /// Writing an output file failed.
    #[error(
        "cannot write '{path}': {source}\n  fix: check that the directory exists and is writable"
    )]
    Write {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A bug: an invariant of this crate does not hold.
    #[error("internal error: {0}")]
    Internal(String),
}

impl BenchError {
    /// Shorthand for [`BenchError::BadInput`].
    pub fn bad_input(flag: &str, what: impl Into<String>, fix: impl Into<String>) -> BenchError {
        BenchError::BadInput {
            flag: flag.into(),
            what: what.into(),
            fix: fix.into(),
        }
    }
}

impl hpcscope_core::Classify for BenchError {
    fn kind(&self) -> hpcscope_core::ErrorKind {
        use hpcscope_core::ErrorKind;
        match self {
            BenchError::UnknownKernel { .. } | BenchError::BadInput { .. } => ErrorKind::Input,
            BenchError::Internal(_) => ErrorKind::Internal,
            _ => ErrorKind::Environment,
        }
    }
}
