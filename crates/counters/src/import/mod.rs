//! Importers of counter data users already have. Each produces a [`RawData`] that feeds
//! the same metric computation as live collection. Malformed input is an error with the
//! line and column; problems that do not stop the import are kept as warnings.

pub mod caliper;
pub mod likwid;
pub mod markers;
pub mod papi;
pub mod perf_csv;
pub mod pmu_events;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::raw::RawData;

/// Input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// `perf stat -x,` output (also with `-I`, `-A`, `--per-thread`).
    PerfCsv,
    /// PAPI high-level API output (`papi_hl_output/rank_*.json`).
    PapiJson,
    /// Caliper JSON (`CALI_REPORT_CONFIG="... FORMAT json"`), PAPI service attributes.
    CaliperJson,
    /// likwid-perfctr CSV (`-O` or `-o file.csv`), with or without the marker API.
    LikwidCsv,
    /// The region markers' output file.
    Markers,
    /// Raw counter data as hpcscope saves it (`counters run --save`).
    Raw,
}

impl Format {
    /// Parses a `--format` value.
    pub fn parse(s: &str) -> Option<Format> {
        Some(match s {
            "perf-csv" | "perf" => Format::PerfCsv,
            "papi-json" | "papi" => Format::PapiJson,
            "caliper-json" | "caliper" => Format::CaliperJson,
            "likwid-csv" | "likwid" => Format::LikwidCsv,
            "markers" | "hpcscope-markers" => Format::Markers,
            "raw" | "hpcscope-raw" => Format::Raw,
            _ => return None,
        })
    }

    /// Guesses the format from the content.
    pub fn detect(text: &str) -> Option<Format> {
        let t = text.trim_start();
        if t.starts_with('{') && t.contains("\"hpcscope-markers\"") {
            Some(Format::Markers)
        } else if t.starts_with('{') && t.contains("\"collector\"") && t.contains("\"regions\"") {
            Some(Format::Raw)
        } else if t.starts_with('{') && t.contains("\"threads\"") {
            Some(Format::PapiJson)
        } else if t.starts_with('[') || t.starts_with('{') {
            Some(Format::CaliperJson)
        } else if t.starts_with("STRUCT,") || t.contains("\nTABLE,") || t.starts_with("TABLE,") {
            Some(Format::LikwidCsv)
        } else if t.lines().any(|l| l.contains(',')) {
            Some(Format::PerfCsv)
        } else {
            None
        }
    }
}

/// Why the file `path` could not be read ([`hpcscope_core::load`]): the system's error, or
/// what is wrong with the file (too large, not text) as bad input.
pub(crate) fn read_error(path: &Path, e: hpcscope_core::load::ReadError) -> Error {
    match e {
        hpcscope_core::load::ReadError::Io(source) => Error::Io {
            path: path.to_path_buf(),
            source,
        },
        other => Error::Input(format!("{}: {other}", path.display())),
    }
}

/// The text of the file `path`, bounded by the input limit
/// ([`hpcscope_core::load::read_text_bytes`]).
pub(crate) fn read_text(path: &Path) -> Result<String> {
    let bytes = hpcscope_core::load::read_text_bytes(path).map_err(|e| read_error(path, e))?;
    hpcscope_core::load::text(bytes).map_err(|m| Error::Input(format!("{}: {m}", path.display())))
}

/// Imports the files of one configuration (`label`) and merges them (the counts of one run
/// split over several files, as `perf stat` writes one per event group).
pub fn import_files(files: &[PathBuf], format: Option<Format>, label: &str) -> Result<RawData> {
    let mut merged: Option<RawData> = None;
    for f in files {
        let r = import_file(f, format, label)?;
        match &mut merged {
            None => merged = Some(r),
            Some(m) => m.merge(&r),
        }
    }
    merged.ok_or_else(|| Error::Input("no input file".into()))
}

/// The configuration label of a file: its name without the extension (`run` when it has
/// none).
pub fn label_of(p: &Path) -> String {
    p.file_stem()
        .map_or("run".into(), |s| s.to_string_lossy().into_owned())
}

/// Imports a file; `format` `None` guesses from the content. `label` names the configuration.
pub fn import_file(path: &Path, format: Option<Format>, label: &str) -> Result<RawData> {
    let origin = path.display().to_string();
    let bytes = hpcscope_core::load::read_text_bytes(path).map_err(|e| match e {
        hpcscope_core::load::ReadError::Io(source) => Error::Io {
            path: path.to_path_buf(),
            source,
        },
        other => Error::import(&origin, 1, 1, other.to_string()),
    })?;
    let text = hpcscope_core::load::text(bytes).map_err(|m| Error::import(&origin, 1, 1, m))?;
    let f = match format.or_else(|| Format::detect(&text)) {
        Some(f) => f,
        None => {
            return Err(Error::import(
                &origin,
                1,
                1,
                "cannot tell the format: give --format perf-csv|papi-json|caliper-json|likwid-csv|markers",
            ));
        }
    };
    import_str(&text, f, &origin, label)
}

/// Imports text in a known format. Every count and time read must be finite and not
/// negative, whatever the format.
pub fn import_str(text: &str, format: Format, origin: &str, label: &str) -> Result<RawData> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let raw = import_unchecked(text, format, origin, label)?;
    check_values(&raw, origin)?;
    Ok(raw)
}

/// Refuses negative and non-finite counts and times, naming region, thread and event.
fn check_values(raw: &RawData, origin: &str) -> Result<()> {
    for r in &raw.regions {
        for t in &r.threads {
            let bad = |what: String, v: f64| {
                Err(Error::import(
                    origin,
                    1,
                    1,
                    format!(
                        "region '{}', thread {}: {what} is {}: counts and times are finite and not negative",
                        hpcscope_core::error::shorten(&r.name, 80),
                        t.thread,
                        hpcscope_core::error::short_number(v)
                    ),
                ))
            };
            if let Some(v) = t.time_s
                && (!v.is_finite() || v < 0.0)
            {
                return bad("the time".into(), v);
            }
            for (name, c) in &t.counters {
                if let Some(v) = c.value
                    && (!v.is_finite() || v < 0.0)
                {
                    return bad(
                        format!("event '{}'", hpcscope_core::error::shorten(name, 80)),
                        v,
                    );
                }
            }
        }
    }
    Ok(())
}

fn import_unchecked(text: &str, format: Format, origin: &str, label: &str) -> Result<RawData> {
    match format {
        Format::PerfCsv => perf_csv::parse(text, origin, label),
        Format::PapiJson => papi::parse(text, origin, label),
        Format::CaliperJson => caliper::parse(text, origin, label),
        Format::LikwidCsv => likwid::parse(text, origin, label),
        Format::Markers => markers::parse(text, origin, label),
        Format::Raw => {
            let mut r: RawData = typed_json(text, origin)?;
            r.label = label.to_string();
            Ok(r)
        }
    }
}

/// One record of a CSV file (see [`csv_records`]).
pub(crate) struct CsvRow {
    /// 1-based line the record starts on.
    pub line: usize,
    /// The fields, unquoted.
    pub fields: csv::StringRecord,
}

impl CsvRow {
    /// Field `i`, or "" past the end.
    pub fn get(&self, i: usize) -> &str {
        self.fields.get(i).unwrap_or("")
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// 1-based column (in characters) where field `i` starts; `i == len()` is one past the
    /// end of the line. Exact for unquoted fields, which is what perf and likwid write.
    pub fn col(&self, i: usize) -> usize {
        self.fields
            .iter()
            .take(i)
            .map(|f| f.chars().count() + 1)
            .sum::<usize>()
            + 1
    }

    /// 1-based column just after the last non-blank character of the record.
    pub fn end_col(&self) -> usize {
        let n = self.len();
        let last = self.fields.get(n.saturating_sub(1)).unwrap_or("");
        let blank = last.chars().count() - last.trim_end().chars().count();
        self.col(n).saturating_sub(1 + blank).max(1)
    }

    /// The record as text (separators restored), for messages.
    pub fn text(&self, sep: char) -> String {
        let mut s = String::new();
        for (k, f) in self.fields.iter().enumerate() {
            if k > 0 {
                s.push(sep);
            }
            s.push_str(f);
        }
        s.trim_end().to_string()
    }
}

/// The records of CSV `text` separated by `sep` (the csv crate: quoted fields, CRLF; blank
/// lines skipped), each with its line. Records may have any number of fields: the tools'
/// files mix sections of different widths (likwid's STRUCT and TABLE blocks).
pub(crate) fn csv_records(text: &str, sep: u8, origin: &str) -> Result<Vec<CsvRow>> {
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(sep)
        .from_reader(text.as_bytes());
    let mut rows = Vec::new();
    let mut rec = csv::StringRecord::new();
    loop {
        let line = rd.position().line().max(1) as usize;
        match rd.read_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => rows.push(CsvRow {
                line: rec.position().map_or(line, |p| p.line() as usize),
                fields: rec.clone(),
            }),
            Err(e) => {
                let line = e.position().map_or(line, |p| p.line() as usize);
                return Err(Error::import(
                    origin,
                    line,
                    1,
                    format!("not readable as CSV: {e}"),
                ));
            }
        }
    }
    Ok(rows)
}

/// JSON read into `T`, with errors that name the field path (`regions[0].threads[2].time_s`)
/// and the line.
pub(crate) fn typed_json<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T> {
    hpcscope_core::error::json_from_str(text, origin, "").map_err(|e| {
        let msg = if e.field.is_empty() {
            e.message
        } else {
            format!("field `{}`: {}", e.field, e.message)
        };
        Error::import(origin, e.line.unwrap_or(1), 1, msg)
    })
}

/// A serde_json error as an import error with line and column (said once: serde_json's
/// own " at line L column C" suffix is dropped).
pub(crate) fn json_err(origin: &str, e: &serde_json::Error) -> Error {
    let msg = e.to_string();
    let msg = match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    Error::import(origin, e.line().max(1), e.column().max(1), msg)
}
