//! Printing results: the formats and tables of `hpcscope-report`, and safe file writing.
//!
//! Every command builds its result as a `Serialize` value plus a [`Table`] view; the report
//! crate renders either, and files are written atomically so a failure never leaves half a
//! file.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

pub use hpcscope_report::fmt::num;
pub use hpcscope_report::{Format, Table};

/// Renders `value` in `format` (see [`hpcscope_report::render`]).
pub fn render<T: serde::Serialize>(
    format: Format,
    value: &T,
    preamble: &[String],
    table: &Table,
    epilogue: &[String],
) -> Result<String> {
    hpcscope_report::render(format, value, preamble, table, epilogue)
        .context("serializing the result")
}

/// Writes `text` to `path` atomically (see [`hpcscope_core::fs::write_atomic`]): an
/// interrupted or failed command never leaves a partial file behind.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    hpcscope_core::fs::write_atomic(path, text.as_bytes())
        .with_context(|| format!("cannot write '{}'", path.display()))
}

/// Prints to stdout, or writes to `output` when given.
pub fn emit(text: &str, output: Option<&Path>) -> Result<()> {
    match output {
        Some(p) => write_atomic(p, text),
        None => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error.
            match out.write_all(text.as_bytes()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                r => r.context("writing to standard output"),
            }
        }
    }
}
