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
    /// A run specification that cannot be run.
    #[error(transparent)]
    Spec(#[from] crate::spec::SpecError),
    /// Set sampling of one set class in `period` where a machine has fewer than two such
    /// classes to draw.
    #[error(
        "--sample {period}: machine '{machine}' has {classes} classes of cache sets (the greatest common divisor of its levels' set counts), fewer than 2 x {period}\n  fix: give --sample {most} or less, or --sample-method time"
    )]
    SetClasses {
        /// One class in this many asked.
        period: u64,
        /// The machine.
        machine: String,
        /// Its classes of cache sets.
        classes: u64,
        /// The largest period it takes.
        most: u64,
    },
    /// A node the cache simulator refuses (its error kept, with its kind).
    #[error(transparent)]
    Simulator(#[from] hpcscope_cachesim::ConfigError),
    /// A machine's node the cache simulator refuses.
    #[error("machine '{machine}': {source}")]
    SimulatedMachine {
        /// Machine id.
        machine: String,
        /// Why.
        source: hpcscope_cachesim::ConfigError,
    },
}

use hpcscope_core::Classify;

impl Classify for MixError {
    fn kind(&self) -> hpcscope_core::ErrorKind {
        match self {
            MixError::Missing { .. } => hpcscope_core::ErrorKind::Environment,
            MixError::Spec(e) => e.kind(),
            MixError::Simulator(e) | MixError::SimulatedMachine { source: e, .. } => e.kind(),
            _ => hpcscope_core::ErrorKind::Input,
        }
    }
}
