//! Errors of the core library.
//!
//! Every error a user can cause carries what was wrong, where (file or built-in name, field
//! path, line when the parser knows it) and how to fix it, so the CLI can print it as is.

use std::fmt;

/// An input that cannot be used: a file that does not parse, a field that is missing,
/// misspelled, out of range or inconsistent with another input.
#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    /// Where the input came from: a file path, `built-in machine 'x'`, or `<string>`.
    pub origin: String,
    /// Dotted path of the offending field (`levels[2].core_gbs`), or empty when unknown.
    pub field: String,
    /// 1-based line in the origin, when the parser reported one.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl InputError {
    /// Builds an error for `field` of `origin`.
    pub fn new(
        origin: impl Into<String>,
        field: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        InputError {
            origin: origin.into(),
            field: field.into(),
            line: None,
            message: message.into(),
            fix: fix.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.field.is_empty() {
            write!(f, ": field `{}`", self.field)?;
        }
        write!(f, ": {}", self.message)?;
        if !self.fix.is_empty() {
            write!(f, "\n  fix: {}", self.fix)?;
        }
        Ok(())
    }
}

impl std::error::Error for InputError {}

/// Errors of the core library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// One input is unusable (see [`InputError`]).
    #[error("{0}")]
    Input(InputError),
    /// Several inputs are unusable; all are reported at once.
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
    Inputs(Vec<InputError>),
    /// Two inputs that must agree do not (machine and profile levels, thread counts...).
    #[error("{what}\n  fix: {fix}")]
    Mismatch {
        /// What disagrees with what.
        what: String,
        /// How to make them agree.
        fix: String,
    },
}

impl From<InputError> for Error {
    fn from(e: InputError) -> Self {
        Error::Input(e)
    }
}

impl Error {
    /// Builds a [`Error::Mismatch`].
    pub fn mismatch(what: impl Into<String>, fix: impl Into<String>) -> Self {
        Error::Mismatch {
            what: what.into(),
            fix: fix.into(),
        }
    }
}

/// Result alias of the core library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Converts a TOML parse error into an [`InputError`] with its line.
pub fn from_toml(origin: &str, src: &str, e: &toml::de::Error, fix: &str) -> InputError {
    let line = e
        .span()
        .map(|s| src[..s.start.min(src.len())].matches('\n').count() + 1);
    let message = e.message().trim().to_string();
    InputError {
        origin: origin.to_string(),
        field: String::new(),
        line,
        message,
        fix: fix.to_string(),
    }
}

/// Converts a JSON parse error into an [`InputError`] with its line.
pub(crate) fn from_json(origin: &str, e: &serde_json::Error, fix: &str) -> InputError {
    let line = if e.line() > 0 { Some(e.line()) } else { None };
    // serde_json appends " at line L column C" to its message; keep only the message.
    let msg = e.to_string();
    let message = match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    InputError {
        origin: origin.to_string(),
        field: String::new(),
        line,
        message,
        fix: fix.to_string(),
    }
}

/// Checks that `v` is a finite, strictly positive number.
pub(crate) fn check_positive(origin: &str, field: &str, v: f64, unit: &str) -> Option<InputError> {
    if v.is_nan() {
        Some(InputError::new(
            origin,
            field,
            "is NaN",
            format!("give a positive number in {unit}"),
        ))
    } else if !v.is_finite() {
        Some(InputError::new(
            origin,
            field,
            format!("is infinite ({v})"),
            format!("give a finite positive number in {unit}"),
        ))
    } else if v <= 0.0 {
        Some(InputError::new(
            origin,
            field,
            format!("must be positive, found {v}"),
            format!("give a positive number in {unit}"),
        ))
    } else {
        None
    }
}

/// Checks that `v` is a finite number >= 0.
pub(crate) fn check_non_negative(
    origin: &str,
    field: &str,
    v: f64,
    unit: &str,
) -> Option<InputError> {
    if !v.is_finite() || v < 0.0 {
        Some(InputError::new(
            origin,
            field,
            format!("must be a finite number >= 0, found {v}"),
            format!("give a count or amount >= 0 in {unit}"),
        ))
    } else {
        None
    }
}
