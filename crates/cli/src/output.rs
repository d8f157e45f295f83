//! Output formats (table, JSON, CSV, Markdown) and safe file writing.
//!
//! Every command builds its result as a `Serialize` value plus a [`Table`] view; this module
//! renders either, and writes files atomically so a failure never leaves half a file.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use clap::ValueEnum;

/// How to print a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Aligned text for a terminal.
    #[default]
    Table,
    /// JSON (the documented, stable shape).
    Json,
    /// CSV of the main table.
    Csv,
    /// Markdown table.
    Md,
}

/// A table: headers and rows of cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these headers.
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Aligned text.
    pub fn text(&self) -> String {
        let n = self.headers.len();
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate().take(n) {
                let pad = w[i] - c.chars().count();
                // Numbers right-aligned, text left-aligned.
                if looks_numeric(c) {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                } else {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                }
                if i + 1 < n {
                    s.push_str("  ");
                }
            }
            s.trim_end().to_string()
        };
        let mut out = line(&self.headers);
        out.push('\n');
        out.push_str(
            &w.iter()
                .map(|x| "-".repeat(*x))
                .collect::<Vec<_>>()
                .join("  "),
        );
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
            out.push('\n');
        }
        out
    }

    /// CSV (RFC 4180 quoting).
    pub fn csv(&self) -> String {
        let q = |c: &String| {
            if c.contains([',', '"', '\n']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.clone()
            }
        };
        let mut out = self.headers.iter().map(q).collect::<Vec<_>>().join(",");
        out.push('\n');
        for r in &self.rows {
            out.push_str(&r.iter().map(q).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
        out
    }

    /// Markdown.
    pub fn md(&self) -> String {
        let esc = |c: &String| c.replace('|', "\\|");
        let mut out = format!(
            "| {} |\n",
            self.headers.iter().map(esc).collect::<Vec<_>>().join(" | ")
        );
        out.push_str(&format!(
            "|{}\n",
            self.headers.iter().map(|_| "---|").collect::<String>()
        ));
        for r in &self.rows {
            out.push_str(&format!(
                "| {} |\n",
                r.iter().map(esc).collect::<Vec<_>>().join(" | ")
            ));
        }
        out
    }
}

fn looks_numeric(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_digit() || ".-+eE%x[], ".contains(c))
        && s.chars().any(|c| c.is_ascii_digit())
}

/// Renders `value` in `format`; `table` is the tabular view, `preamble` lines are printed
/// before the table in text and Markdown forms.
pub fn render<T: serde::Serialize>(
    format: Format,
    value: &T,
    preamble: &[String],
    table: &Table,
    epilogue: &[String],
) -> Result<String> {
    Ok(match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(value).context("serializing the result")?;
            s.push('\n');
            s
        }
        Format::Csv => table.csv(),
        Format::Table => {
            let mut s = String::new();
            for l in preamble {
                s.push_str(l);
                s.push('\n');
            }
            if !preamble.is_empty() {
                s.push('\n');
            }
            s.push_str(&table.text());
            if !epilogue.is_empty() {
                s.push('\n');
            }
            for l in epilogue {
                s.push_str(l);
                s.push('\n');
            }
            s
        }
        Format::Md => {
            let mut s = String::new();
            for l in preamble {
                s.push_str(l);
                s.push_str("  \n");
            }
            if !preamble.is_empty() {
                s.push('\n');
            }
            s.push_str(&table.md());
            for l in epilogue {
                s.push('\n');
                s.push_str(l);
                s.push('\n');
            }
            s
        }
    })
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

/// Formats a number with `sig` significant digits, without exponent for usual magnitudes.
pub fn num(v: f64, sig: usize) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "NaN".into()
        } else {
            "inf".into()
        };
    }
    if v == 0.0 {
        return "0".into();
    }
    let mag = v.abs().log10().floor() as i32;
    if !(-4..=9).contains(&mag) {
        return format!("{:.*e}", sig.saturating_sub(1), v);
    }
    let decimals = (sig as i32 - 1 - mag).max(0) as usize;
    format!("{v:.decimals$}")
}
