//! Typed errors of the simulator: bad geometry, a failed background worker, a bad trace line.

use thiserror::Error;

/// A cache or hierarchy configuration that cannot be simulated.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The hierarchy has no cache level.
    #[error("hierarchy '{hierarchy}': `levels` is empty; give at least one cache level (e.g. L1d)")]
    NoLevels {
        /// Hierarchy name.
        hierarchy: String,
    },
    /// A size field is zero.
    #[error("hierarchy '{hierarchy}', level '{level}': `{field}` is 0; it must be positive")]
    Zero {
        /// Hierarchy name.
        hierarchy: String,
        /// Level name.
        level: String,
        /// The zero field: `size_bytes`, `line_bytes` or `associativity`.
        field: &'static str,
    },
    /// The line size is not a power of two of at least 4 bytes.
    #[error(
        "hierarchy '{hierarchy}', level '{level}': `line_bytes` = {line_bytes} must be a power of two \
         of at least 4 (typically 64)"
    )]
    LineBytes {
        /// Hierarchy name.
        hierarchy: String,
        /// Level name.
        level: String,
        /// The rejected line size.
        line_bytes: u64,
    },
    /// The capacity is not a whole number of sets.
    #[error(
        "hierarchy '{hierarchy}', level '{level}': `size_bytes` = {size_bytes} is not a multiple of \
         `line_bytes` × `associativity` = {line_bytes} × {associativity} = {way_bytes}; \
         use {lower} or {upper}, or change `associativity`"
    )]
    SizeNotMultiple {
        /// Hierarchy name.
        hierarchy: String,
        /// Level name.
        level: String,
        /// The rejected capacity.
        size_bytes: u64,
        /// Line size.
        line_bytes: u64,
        /// Ways per set.
        associativity: u32,
        /// Bytes per set, `line_bytes * associativity`.
        way_bytes: u64,
        /// Nearest valid capacity below.
        lower: u64,
        /// Nearest valid capacity above.
        upper: u64,
    },
    /// Tree pseudo-LRU asked for an associativity it cannot build a tree for.
    #[error(
        "hierarchy '{hierarchy}', level '{level}': tree pseudo-LRU needs a power-of-two \
         `associativity` of at most 64, got {associativity}; use `replacement = \"lru\"` instead"
    )]
    PlruAssociativity {
        /// Hierarchy name.
        hierarchy: String,
        /// Level name.
        level: String,
        /// The rejected associativity.
        associativity: u32,
    },
    /// A level with more lines than this host can index.
    #[error(
        "hierarchy '{hierarchy}', level '{level}': `size_bytes` = {size_bytes} holds {lines} \
         lines, more than this host can simulate (at most {max}); check the size's unit (bytes)"
    )]
    TooLarge {
        /// Hierarchy name.
        hierarchy: String,
        /// Level name.
        level: String,
        /// The rejected size.
        size_bytes: u64,
        /// Lines it holds.
        lines: u64,
        /// The largest number of lines accepted here.
        max: u64,
    },
    /// Levels of one hierarchy have different line sizes.
    #[error(
        "hierarchy '{hierarchy}', level '{level}': `line_bytes` = {line_bytes} differs from \
         {first_line_bytes} of level '{first_level}'; all levels of a hierarchy must share one line size"
    )]
    MixedLineSizes {
        /// Hierarchy name.
        hierarchy: String,
        /// Level name.
        level: String,
        /// This level's line size.
        line_bytes: u64,
        /// Name of the first level.
        first_level: String,
        /// The first level's line size.
        first_line_bytes: u64,
    },
    /// The cores sharing a level of a node do not nest with the level above.
    #[error(
        "node '{hierarchy}', level '{level}': `shared_by_cores` = {shared_by_cores} must be a \
         positive multiple of the level above's {previous} (cores sharing a level form groups \
         of the groups sharing the levels above it); fix the machine file's shared_by_cores"
    )]
    Sharing {
        /// Node name.
        hierarchy: String,
        /// Level name.
        level: String,
        /// This level's sharing.
        shared_by_cores: u32,
        /// The level above's.
        previous: u32,
    },
    /// A node cannot be simulated in parts split at this level (see `NodeSim::part`).
    #[error(
        "node '{hierarchy}': cannot simulate levels {from}..{to} apart from the others: {reason}"
    )]
    Split {
        /// Node name.
        hierarchy: String,
        /// First level of the part (0 = L1).
        from: usize,
        /// One past its last level.
        to: usize,
        /// Why not.
        reason: &'static str,
    },
}

/// The background simulator's worker stopped.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BackgroundError {
    /// The worker thread panicked; the message is the panic payload when it was a string.
    #[error("the cache-simulation worker thread panicked: {0}")]
    WorkerPanicked(String),
    /// The worker is gone (it panicked earlier); no more batches can be sent.
    #[error("the cache-simulation worker thread has stopped; call finish() to see why")]
    Disconnected,
    /// The worker thread could not be started.
    #[error("could not start the cache-simulation worker thread: {0}")]
    Spawn(String),
}

/// A line of a valgrind lackey trace that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("lackey trace line {line_no}: {reason}: '{text}'")]
pub struct TraceError {
    /// 1-based line number.
    pub line_no: u64,
    /// What was wrong.
    pub reason: &'static str,
    /// The offending line.
    pub text: String,
}

impl hpcscope_core::Classify for ConfigError {
    fn kind(&self) -> hpcscope_core::ErrorKind {
        hpcscope_core::ErrorKind::Input
    }
}

impl hpcscope_core::Classify for BackgroundError {
    fn kind(&self) -> hpcscope_core::ErrorKind {
        match self {
            BackgroundError::Spawn(_) => hpcscope_core::ErrorKind::Environment,
            _ => hpcscope_core::ErrorKind::Internal,
        }
    }
}

impl hpcscope_core::Classify for TraceError {
    fn kind(&self) -> hpcscope_core::ErrorKind {
        hpcscope_core::ErrorKind::Input
    }
}
