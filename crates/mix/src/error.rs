//! Errors of mix: each says what, where and how to fix it.

/// Errors of the mix driver.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MixError {
    /// The program cannot be analysed as given.
    #[error("{path}: {message}\n  fix: {fix}")]
    Program {
        /// The program path.
        path: String,
        /// What is wrong.
        message: String,
        /// How to fix it.
        fix: String,
    },
    /// A tool is missing (QEMU, the plugin): an environment limit.
    #[error("{message}\n  fix: {fix}")]
    Missing {
        /// What is missing.
        message: String,
        /// How to get it.
        fix: String,
    },
    /// A machine cannot be simulated.
    #[error("machine '{machine}': {message}\n  fix: {fix}")]
    Machine {
        /// Machine id.
        machine: String,
        /// What is wrong.
        message: String,
        /// How to fix it.
        fix: String,
    },
    /// Running or reading the emulation failed.
    #[error("{0}")]
    Run(String),
    /// Bad options.
    #[error("{message}\n  fix: {fix}")]
    Usage {
        /// What is wrong.
        message: String,
        /// How to fix it.
        fix: String,
    },
}

impl hpcscope_core::Classify for MixError {
    fn kind(&self) -> hpcscope_core::ErrorKind {
        match self {
            MixError::Missing { .. } => hpcscope_core::ErrorKind::Environment,
            _ => hpcscope_core::ErrorKind::Input,
        }
    }
}
