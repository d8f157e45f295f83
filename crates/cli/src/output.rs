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

/// Prints to stdout, or writes to `output` when given (`-` is stdout too).
pub fn emit(text: &str, output: Option<&Path>) -> Result<()> {
    emit_with(text, output, &[])
}

/// Writes the side files `files` (charts: `--svg`, `--html`...) and the result `text`
/// (to `output`, or stdout) together: every file is staged first, so when one cannot be
/// written (a missing directory, a full disk) none is left behind.
pub fn emit_with(text: &str, output: Option<&Path>, files: &[(&Path, &str)]) -> Result<()> {
    let mut set = hpcscope_core::fs::Outputs::new();
    for (p, t) in files {
        set.add(p, t.as_bytes().to_vec())
            .with_context(|| format!("cannot write '{}'", p.display()))?;
    }
    if let Some(p) = output {
        set.add(p, text.as_bytes().to_vec())
            .with_context(|| format!("cannot write '{}'", p.display()))?;
    }
    set.commit().context("cannot write the results")?;
    if output.is_none() {
        let mut out = std::io::stdout().lock();
        // A closed pipe (`| head`) is not an error.
        match out.write_all(text.as_bytes()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => r.context("writing to standard output"),
        }
    } else {
        Ok(())
    }
}
