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
    #[error("{}", list_inputs(.0))]
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

/// At most this many problems of one input are listed; the rest are counted.
const MAX_LISTED: usize = 20;

fn list_inputs(errs: &[InputError]) -> String {
    let mut lines: Vec<String> = errs
        .iter()
        .take(MAX_LISTED)
        .map(|e| e.to_string())
        .collect();
    if errs.len() > MAX_LISTED {
        lines.push(format!(
            "... and {} more problems of the same input (fix these first)",
            errs.len() - MAX_LISTED
        ));
    }
    lines.join("\n")
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

/// Parses TOML text into `T`, with errors that name the field path (`levels[2].cache.size_bytes`)
/// besides the line, as [`json_from_str`] does for JSON.
pub fn toml_from_str<T: serde::de::DeserializeOwned>(
    src: &str,
    origin: &str,
    fix: &str,
) -> std::result::Result<T, InputError> {
    let de = toml::Deserializer::parse(src).map_err(|e| from_toml(origin, src, &e, fix))?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let mut ie = from_toml(origin, src, e.inner(), fix);
        if path != "." && !path.is_empty() {
            ie.field = path;
        }
        ie
    })
}

/// Converts a JSON parse error into an [`InputError`] with its line (and its column, for
/// one-line JSON where the line says nothing).
pub(crate) fn from_json(origin: &str, e: &serde_json::Error, fix: &str) -> InputError {
    let line = if e.line() > 0 { Some(e.line()) } else { None };
    // serde_json appends " at line L column C" to its message; keep only the message.
    let msg = e.to_string();
    let mut message = match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    if e.line() == 1 && e.column() > 1 {
        message.push_str(&format!(" (column {})", e.column()));
    }
    InputError {
        origin: origin.to_string(),
        field: String::new(),
        line,
        message,
        fix: fix.to_string(),
    }
}

/// Parses JSON text into `T`, with errors that name the field path (`regions[2].threads`),
/// the line and, on a one-line file, the column. A leading byte-order mark is ignored, as
/// the TOML and CSV readers do.
pub fn json_from_str<T: serde::de::DeserializeOwned>(
    src: &str,
    origin: &str,
    fix: &str,
) -> std::result::Result<T, InputError> {
    let src = src.strip_prefix('\u{feff}').unwrap_or(src);
    let mut de = serde_json::Deserializer::from_str(src);
    let v: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let mut ie = from_json(origin, e.inner(), fix);
        if path != "." && !path.is_empty() {
            ie.field = path;
        }
        ie
    })?;
    de.end().map_err(|e| from_json(origin, &e, fix))?;
    Ok(v)
}

/// Checks that `v` is a finite, strictly positive number.
pub(crate) fn check_positive(origin: &str, field: &str, v: f64, unit: &str) -> Option<InputError> {
    if v.is_nan() {
        Some(InputError::new(
            origin,
            field,
            "is NaN",
            format!("give a positive number{}", in_unit(unit)),
        ))
    } else if !v.is_finite() {
        Some(InputError::new(
            origin,
            field,
            format!("is infinite ({})", short_number(v)),
            format!("give a finite positive number{}", in_unit(unit)),
        ))
    } else if v <= 0.0 {
        Some(InputError::new(
            origin,
            field,
            format!("must be positive, found {}", short_number(v)),
            format!("give a positive number{}", in_unit(unit)),
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
            format!("must be a finite number >= 0, found {}", short_number(v)),
            format!("give a count or amount >= 0{}", in_unit(unit)),
        ))
    } else {
        None
    }
}

/// ` in UNIT`, or nothing for a number without a unit.
pub(crate) fn in_unit(unit: &str) -> String {
    if unit.trim().is_empty() {
        String::new()
    } else {
        format!(" in {unit}")
    }
}

/// A number as an error message shows it: plain when short, in scientific notation when
/// it would take more than about 15 digits (`1e300`, not three hundred digits).
pub fn short_number(v: f64) -> String {
    if v == 0.0 {
        // -0.0 too: a zero has no sign in a message.
        return "0".into();
    }
    let a = v.abs();
    if v != 0.0 && v.is_finite() && !(1e-6..1e15).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// `s` cut to at most `max` characters for a message, saying how much was left out.
pub fn shorten(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        s.to_string()
    } else {
        let head: String = s.chars().take(max).collect();
        format!("{head}... ({} more characters)", n - max)
    }
}

/// A list of names for a message: at most `max` of them, then how many more there are.
pub fn name_list<S: AsRef<str>>(names: &[S], max: usize) -> String {
    let mut out: Vec<String> = names
        .iter()
        .take(max)
        .map(|n| shorten(n.as_ref(), 60))
        .collect();
    if names.len() > max {
        out.push(format!("... and {} more", names.len() - max));
    }
    out.join(", ")
}

#[cfg(test)]
mod message_tests {
    use super::*;

    #[test]
    fn long_numbers_lists_and_control_characters_are_kept_short_and_safe() {
        // `flops = -0.0` printed "the source performance is -0 GFLOP/s".
        assert_eq!(short_number(-0.0), "0");
        assert_eq!(short_number(1e300), "1e300");
        assert_eq!(short_number(2.5), "2.5");
        assert_eq!(short_number(5e-324), "5e-324");
        let names: Vec<String> = (0..100_000).map(|i| format!("r{i}")).collect();
        let l = name_list(&names, 20);
        assert!(l.len() < 300 && l.ends_with("and 99980 more"), "{l}");
        assert_eq!(
            shorten(&"x".repeat(100), 10),
            "xxxxxxxxxx... (90 more characters)"
        );
    }

    #[test]
    fn json_errors_name_the_field_path_and_the_column() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            v: f64,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Outer {
            items: Vec<Inner>,
        }
        let e = json_from_str::<Outer>(r#"{"items": [{"v": 1}, {"v": "x"}]}"#, "f.json", "fix it")
            .unwrap_err();
        assert_eq!(e.field, "items[1].v");
        assert_eq!(e.line, Some(1));
        assert!(e.message.contains("column"), "{}", e.message);
        // A byte-order mark is ignored, as in TOML and CSV.
        assert!(json_from_str::<Outer>("\u{feff}{\"items\": []}", "f.json", "").is_ok());
        assert!(json_from_str::<Outer>("{\"items\": []} x", "f.json", "").is_err());
    }
}
