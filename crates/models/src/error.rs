//! The crate's error type: what went wrong, where, and how to fix it.

use std::path::PathBuf;

/// Errors of the models crate. Each variant carries what the user needs to fix the input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A data file (port model, class table, CSV) could not be parsed.
    #[error("{origin}: {message}")]
    Parse {
        /// File name or other origin of the text.
        origin: String,
        /// What is wrong, with line and column when known, and how to fix it.
        message: String,
    },
    /// A CSV file has a bad header or row.
    #[error("{origin}:{line}:{column}: {message}")]
    Csv {
        /// File name.
        origin: String,
        /// 1-based line.
        line: usize,
        /// 1-based column (field index).
        column: usize,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// Input values that a model cannot use.
    #[error("{0}")]
    Invalid(String),
    /// Not enough data points to fit a model.
    #[error("too few {what} to fit: {got} given, at least {needed} needed ({why})")]
    TooFew {
        /// What is counted (variants, runs).
        what: &'static str,
        /// How many were given.
        got: usize,
        /// How many are needed.
        needed: usize,
        /// Why that many.
        why: String,
    },
    /// A port model or class table names something unknown.
    #[error("unknown {what} '{name}'; known: {known}")]
    Unknown {
        /// Kind of name (port model, class, port).
        what: &'static str,
        /// The name given.
        name: String,
        /// The names that exist.
        known: String,
    },
    /// A binary could not be read or analysed.
    #[error("{path}: {message}")]
    Binary {
        /// The binary.
        path: PathBuf,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A function has no loop to extract.
    #[error(
        "{path}: function '{function}' has no loop (no backward branch inside it); pass another function, or an address range with --range"
    )]
    NoLoop {
        /// The binary.
        path: PathBuf,
        /// The function.
        function: String,
    },
    /// I/O error reading a file.
    #[error("cannot read '{path}': {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// Shorthand result type.
pub type Result<T> = std::result::Result<T, ModelError>;

impl hpcscope_core::Classify for ModelError {
    fn kind(&self) -> hpcscope_core::ErrorKind {
        match self {
            ModelError::Io { source, .. } => hpcscope_core::kind::io_kind(source),
            _ => hpcscope_core::ErrorKind::Input,
        }
    }
}
