//! Errors of the run store and of the analyses.

use std::path::PathBuf;

/// An error of the history store or of a non-regression analysis.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The file exists but is not an SQLite database.
    #[error(
        "{path}: not an hpcscope history store ({detail}); the file was left untouched. \
         Choose another file with --db or $HPCSCOPE_DB"
    )]
    NotAStore {
        /// The file.
        path: PathBuf,
        /// What was found instead.
        detail: String,
    },
    /// The file is an SQLite database that is truncated or damaged.
    #[error(
        "{path}: the history store is damaged ({detail}); it was opened read-only and left \
         untouched. Restore it from a backup, or try `sqlite3 {path} .recover`, or start a new \
         store with --db"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// SQLite's diagnosis.
        detail: String,
    },
    /// The store cannot be written (read-only file, immutable file or directory, read-only
    /// file system): an environment limit, found before anything runs.
    #[error(
        "{path}: the history store cannot be written: {detail}. Nothing was run or recorded. \
         Make it writable (its file and its directory: SQLite keeps its journal beside it), \
         or choose another store with --db or $HPCSCOPE_DB"
    )]
    ReadOnly {
        /// The file.
        path: PathBuf,
        /// What refused.
        detail: String,
    },
    /// A transaction a killed process left unfinished cannot be rolled back (the journal
    /// needs write access).
    #[error(
        "{path}: a process was killed in the middle of a transaction and its journal ({journal}) \
         could not be rolled back ({source}); the store was left as it is. Give write access to \
         the store and its directory, then run any hpcscope command on it (or `sqlite3 {path} \
         'PRAGMA quick_check'`), which rolls it back"
    )]
    Unfinished {
        /// The file.
        path: PathBuf,
        /// The hot journal.
        journal: PathBuf,
        /// SQLite's answer.
        source: rusqlite::Error,
    },
    /// The store was written by a newer hpcscope.
    #[error(
        "{path}: schema version {found} is newer than this hpcscope understands ({supported}); \
         upgrade hpcscope"
    )]
    TooNew {
        /// The file.
        path: PathBuf,
        /// Schema version in the file.
        found: i64,
        /// Newest schema version this build knows.
        supported: i64,
    },
    /// The store does not exist (read-only open).
    #[error(
        "{path}: no history store here; record runs first with `hpcscope record -- CMD`, or \
         point --db / $HPCSCOPE_DB at an existing store"
    )]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// A run record is not valid (empty or duplicate metric name, non-finite value...).
    #[error("invalid run record: {0}")]
    InvalidRecord(String),
    /// No default location for the store could be found.
    #[error(
        "no location for the history store: set $HPCSCOPE_DB, $XDG_DATA_HOME or $HOME, or pass --db"
    )]
    NoDefaultPath,
    /// Not enough data for the requested analysis.
    #[error("{0}")]
    Insufficient(String),
    /// An SQLite error on an otherwise valid store.
    #[error("{path}: {source}")]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// An I/O error on the store's file or directory.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, HistoryError>;

impl HistoryError {
    /// SQLite answered "busy" or "locked": another connection holds the lock, and trying
    /// again later can succeed.
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            HistoryError::Sqlite {
                source: rusqlite::Error::SqliteFailure(f, _),
                ..
            } if matches!(
                f.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            )
        )
    }
}

impl hpcscope_core::Classify for HistoryError {
    fn kind(&self) -> hpcscope_core::ErrorKind {
        use hpcscope_core::ErrorKind;
        match self {
            HistoryError::NoDefaultPath
            | HistoryError::ReadOnly { .. }
            | HistoryError::Unfinished { .. } => ErrorKind::Environment,
            HistoryError::Io { source, .. } => hpcscope_core::kind::io_kind(source),
            HistoryError::Sqlite {
                source: rusqlite::Error::SqliteFailure(f, _),
                ..
            } if matches!(
                f.code,
                rusqlite::ErrorCode::ReadOnly
                    | rusqlite::ErrorCode::PermissionDenied
                    | rusqlite::ErrorCode::DiskFull
                    | rusqlite::ErrorCode::CannotOpen
                    | rusqlite::ErrorCode::SystemIoFailure
                    | rusqlite::ErrorCode::OutOfMemory
                    | rusqlite::ErrorCode::FileLockingProtocolFailed
            ) =>
            {
                ErrorKind::Environment
            }
            _ => ErrorKind::Input,
        }
    }
}
