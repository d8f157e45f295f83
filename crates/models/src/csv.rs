//! A small CSV reader for the models' inputs: a header row, numeric and text columns, `#`
//! comments, and errors that give the file, line and column and say how to fix the input.
//!
//! The records come from the csv crate (quoting as RFC 4180: `"a,b"`, `"say ""hi"""`, line
//! breaks inside quotes); numbers are plain decimal or scientific.

use crate::error::{ModelError, Result};

/// A parsed CSV table.
#[derive(Debug, Clone, PartialEq)]
pub struct Csv {
    /// Origin (file name) for errors.
    pub origin: String,
    /// Column names, trimmed.
    pub headers: Vec<String>,
    /// Rows with their 1-based line numbers.
    pub rows: Vec<(usize, Vec<String>)>,
}

impl Csv {
    /// Parses CSV text (the csv crate's reader: quoted fields may hold commas, quotes and
    /// line breaks); every row must have as many fields as the header. Blank lines and lines
    /// starting with `#` are skipped; fields are trimmed.
    pub fn parse(text: &str, origin: &str) -> Result<Csv> {
        let mut reader = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(::csv::Trim::All)
            .comment(Some(b'#'))
            .from_reader(text.as_bytes());
        // Lines from byte offsets (the reader's own line count skips blank lines), found by
        // a binary search in the offsets of the newlines: linear in the text as a whole.
        let newlines: Vec<usize> = newline_offsets(text.as_bytes());
        let line_at = |p: Option<&::csv::Position>| {
            p.map_or(1, |p| {
                // A record's position is where the reader started, before any empty lines
                // it skipped: step over those.
                let b = text.as_bytes();
                let mut end = (p.byte() as usize).min(b.len());
                while end < b.len() && matches!(b[end], b'\n' | b'\r') {
                    end += 1;
                }
                newlines.partition_point(|&n| n < end) + 1
            })
        };
        let mut headers: Option<Vec<String>> = None;
        let mut rows = Vec::new();
        for rec in reader.records() {
            let rec = rec.map_err(|e| ModelError::Csv {
                origin: origin.into(),
                line: line_at(e.position()),
                column: 1,
                message: format!("{e}; give plain CSV text (UTF-8, comma-separated)"),
            })?;
            let ln = line_at(rec.position());
            let fields: Vec<String> = rec.iter().map(str::to_string).collect();
            // A line of blanks, or a comment after leading blanks.
            if fields.iter().all(String::is_empty) || fields[0].starts_with('#') {
                continue;
            }
            match &headers {
                None => {
                    for (j, h) in fields.iter().enumerate() {
                        if h.is_empty() {
                            return Err(ModelError::Csv {
                                origin: origin.into(),
                                line: ln,
                                column: j + 1,
                                message: "empty column name in the header; name every column"
                                    .into(),
                            });
                        }
                        if fields[..j].contains(h) {
                            return Err(ModelError::Csv {
                                origin: origin.into(),
                                line: ln,
                                column: j + 1,
                                message: format!("column '{h}' appears twice in the header"),
                            });
                        }
                    }
                    headers = Some(fields);
                }
                Some(h) => {
                    if fields.len() != h.len() {
                        return Err(ModelError::Csv {
                            origin: origin.into(),
                            line: ln,
                            column: fields.len().min(h.len()) + 1,
                            message: format!(
                                "{} fields, but the header has {} columns ({}); make every row as wide as the header",
                                fields.len(),
                                h.len(),
                                h.join(",")
                            ),
                        });
                    }
                    rows.push((ln, fields));
                }
            }
        }
        let headers = headers.ok_or_else(|| ModelError::Csv {
            origin: origin.into(),
            line: 1,
            column: 1,
            message: "the file is empty; expected a header row then data rows".into(),
        })?;
        Ok(Csv {
            origin: origin.into(),
            headers,
            rows,
        })
    }

    /// Index of a column, if present.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.headers
            .iter()
            .position(|h| h.eq_ignore_ascii_case(name))
    }

    /// Index of a required column, or an error naming what the file has.
    pub fn require(&self, name: &str, hint: &str) -> Result<usize> {
        self.column(name).ok_or_else(|| ModelError::Csv {
            origin: self.origin.clone(),
            line: 1,
            column: self.headers.len() + 1,
            message: format!(
                "missing column '{name}' (the header has: {}); {hint}",
                self.headers.join(",")
            ),
        })
    }

    /// The number in row `r`, column `c`.
    pub fn number(&self, r: usize, c: usize) -> Result<f64> {
        let (line, fields) = &self.rows[r];
        let s = &fields[c];
        s.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| ModelError::Csv {
                origin: self.origin.clone(),
                line: *line,
                column: c + 1,
                message: format!(
                    "column '{}' must be a finite number, found '{s}'",
                    self.headers[c]
                ),
            })
    }

    /// The text in row `r`, column `c`.
    pub fn text(&self, r: usize, c: usize) -> &str {
        &self.rows[r].1[c]
    }

    /// An error located at row `r`, column `c`.
    pub fn error_at(&self, r: usize, c: usize, message: String) -> ModelError {
        ModelError::Csv {
            origin: self.origin.clone(),
            line: self.rows.get(r).map(|x| x.0).unwrap_or(1),
            column: c + 1,
            message,
        }
    }
}

/// The byte offsets of the newlines of `b`, in order.
fn newline_offsets(b: &[u8]) -> Vec<usize> {
    b.iter()
        .enumerate()
        .filter_map(|(i, &c)| (c == b'\n').then_some(i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ragged_rows_are_located() {
        let e = Csv::parse("p,time_s\n1,10\n2,5,7\n", "runs.csv")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("runs.csv:3:3:"), "{e}");
    }

    #[test]
    fn bad_numbers_are_located() {
        let c = Csv::parse("# comment\np,time_s\n1,ten\n", "r.csv").unwrap();
        let e = c.number(0, 1).unwrap_err().to_string();
        assert!(e.starts_with("r.csv:3:2:") && e.contains("'ten'"), "{e}");
    }

    #[test]
    fn quoted_fields() {
        let text = "name,x\n\"a,b\",1\n\"two\nlines\",2\n  # note\n\n3,4\n";
        let c = Csv::parse(text, "q").unwrap();
        assert_eq!(c.text(0, 0), "a,b");
        assert_eq!(c.text(1, 0), "two\nlines");
        assert_eq!(c.rows.len(), 3);
        // The row after the two-line field is located on its own line.
        assert_eq!(c.rows[2].0, 7, "{:?}", c.rows);
    }
}
