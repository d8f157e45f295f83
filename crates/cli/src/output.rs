//! Printing results: the formats and tables of `hpcscope-report`, and safe file writing.
//!
//! Every command builds its result as a `Serialize` value plus a [`Table`] view; the report
//! crate renders either, and files are written atomically so a failure never leaves half a
//! file.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

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
/// interrupted or failed command never leaves a partial file behind. Refused, before anything
/// is written, when `path` is a file this command read or already wrote (see [`emit_with`]).
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let mut set = outputs();
    set.add(path, text.as_bytes().to_vec())
        .with_context(|| format!("cannot write '{}'", path.display()))?;
    commit(set, &[path]).with_context(|| format!("cannot write '{}'", path.display()))
}

/// Prints to stdout, or writes to `output` when given (`-` is stdout too).
pub fn emit(text: &str, output: Option<&Path>) -> Result<()> {
    emit_with(text, output, &[])
}

/// Writes the side files `files` (charts: `--svg`, `--html`...) and the result `text`
/// (to `output`, or stdout) together: every file is staged first, so when one cannot be
/// written (a missing directory, a full disk) none is left behind.
///
/// No file is written over an input of the command (every file read through
/// [`hpcscope_core::load`], and the ones it noted with [`hpcscope_core::fs::note_input`]: a
/// history store, a program), over another file of the same call, or over a file the command
/// already wrote: that is an error (exit 2) before anything is written, and the input is
/// left as it was.
pub fn emit_with(text: &str, output: Option<&Path>, files: &[(&Path, &str)]) -> Result<()> {
    let mut set = outputs();
    for (p, t) in files {
        set.add(p, t.as_bytes().to_vec())
            .with_context(|| format!("cannot write '{}'", p.display()))?;
    }
    if let Some(p) = output {
        set.add(p, text.as_bytes().to_vec())
            .with_context(|| format!("cannot write '{}'", p.display()))?;
    }
    let mut written: Vec<&Path> = files.iter().map(|(p, _)| *p).collect();
    written.extend(output);
    commit(set, &written).context("cannot write the results")?;
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

/// Writes the files `files` together (see [`emit_with`]): all or none.
pub fn write_files<P: AsRef<Path>, T: AsRef<str>>(files: &[(P, T)]) -> Result<()> {
    let mut set = outputs();
    for (p, t) in files {
        let p = p.as_ref();
        set.add(p, t.as_ref().as_bytes().to_vec())
            .with_context(|| format!("cannot write '{}'", p.display()))?;
    }
    let paths: Vec<&Path> = files.iter().map(|(p, _)| p.as_ref()).collect();
    commit(set, &paths).context("cannot write the results")
}

/// Whether `e` is the refusal of an output that names an input or another output
/// ([`hpcscope_core::fs::SameFile`]).
pub fn is_same_file(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .is_some_and(|i| i.is::<hpcscope_core::fs::SameFile>())
    })
}

/// The files this command wrote so far (through this module).
static WRITTEN: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// A set of outputs that refuses the command's inputs and the files it already wrote.
fn outputs() -> hpcscope_core::fs::Outputs {
    let written = WRITTEN.lock().unwrap_or_else(|e| e.into_inner()).clone();
    hpcscope_core::fs::Outputs::reading(hpcscope_core::fs::inputs()).written_before(written)
}

/// Commits `set` and notes its files as written.
fn commit(set: hpcscope_core::fs::Outputs, paths: &[&Path]) -> std::io::Result<()> {
    set.commit()?;
    let mut w = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
    for p in paths {
        if p.as_os_str() != "-" {
            w.push(std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
        }
    }
    Ok(())
}
