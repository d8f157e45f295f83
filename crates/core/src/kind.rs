//! The one error vocabulary of hpcscope: every crate's error says which kind of failure it
//! is, and the command line turns the kind into the exit code in one place.
//!
//! | kind | meaning | exit code |
//! |---|---|---|
//! | [`ErrorKind::Finding`] | the run worked and found something (a measurement outside its interval, a regression, an incomplete job) | 1 |
//! | [`ErrorKind::Input`] | bad input or usage: a file, a flag, a value the user can fix | 2 |
//! | [`ErrorKind::Environment`] | an environment limit: a missing tool, a permission, hardware (no PMU, no BPF) | 3 |
//! | [`ErrorKind::Internal`] | a bug of hpcscope's own (an invariant that does not hold) | 2 |

use std::fmt;

/// What kind of failure an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Bad input or usage.
    Input,
    /// An environment limit: a missing tool, a permission, hardware.
    Environment,
    /// A finding of the run itself (not a failure of hpcscope).
    Finding,
    /// A bug: an invariant of hpcscope does not hold.
    Internal,
}

impl ErrorKind {
    /// The process exit code of this kind (see the module documentation).
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::Finding => 1,
            ErrorKind::Input | ErrorKind::Internal => 2,
            ErrorKind::Environment => 3,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::Input => "input",
            ErrorKind::Environment => "environment",
            ErrorKind::Finding => "finding",
            ErrorKind::Internal => "internal",
        })
    }
}

/// An error that knows its kind. Every crate's error type implements it.
pub trait Classify {
    /// The kind of this failure.
    fn kind(&self) -> ErrorKind;
}

/// A failure no typed error describes: a message and its kind. The message says what went
/// wrong and how to fix it, as every hpcscope error does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The kind.
    pub kind: ErrorKind,
    /// What went wrong, and the fix.
    pub message: String,
}

impl Failure {
    /// A failure of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
        }
    }

    /// An environment limit (exit 3).
    pub fn environment(message: impl Into<String>) -> Failure {
        Failure::new(ErrorKind::Environment, message)
    }

    /// Bad input or usage (exit 2).
    pub fn input(message: impl Into<String>) -> Failure {
        Failure::new(ErrorKind::Input, message)
    }

    /// A finding (exit 1).
    pub fn finding(message: impl Into<String>) -> Failure {
        Failure::new(ErrorKind::Finding, message)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

impl Classify for Failure {
    fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl Classify for crate::Error {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Input
    }
}

impl Classify for crate::InputError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Input
    }
}

/// The kind of an I/O error: permissions, a read-only file system, a full disk, a missing
/// output directory and missing resources of the machine are environment limits; the rest
/// (a missing file the user named, bad data) is input.
pub fn io_kind(e: &std::io::Error) -> ErrorKind {
    use std::io::ErrorKind as K;
    // A missing output directory is a limit of the environment the command runs in.
    if e.get_ref()
        .is_some_and(|i| i.is::<crate::fs::MissingDirectory>())
    {
        return ErrorKind::Environment;
    }
    match e.kind() {
        K::PermissionDenied
        | K::ReadOnlyFilesystem
        | K::StorageFull
        | K::QuotaExceeded
        | K::OutOfMemory
        | K::ResourceBusy
        | K::FileTooLarge
        | K::Unsupported => ErrorKind::Environment,
        _ => ErrorKind::Input,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_the_documented_exit_codes() {
        assert_eq!(Failure::finding("x").kind().exit_code(), 1);
        assert_eq!(Failure::input("x").kind().exit_code(), 2);
        assert_eq!(Failure::environment("x").kind().exit_code(), 3);
        assert_eq!(ErrorKind::Internal.exit_code(), 2);
        let e = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(io_kind(&e), ErrorKind::Environment);
        let e = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(io_kind(&e), ErrorKind::Input);
    }
}
