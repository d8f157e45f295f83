//! A small CSV reader for the models' inputs: a header row, numeric and text columns, `#`
//! comments, and errors that give the file, line and column and say how to fix the input.
//!
//! Quoting is supported for text fields (`"a,b"`); numbers are plain decimal or scientific.

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

fn split(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(c),
        }
    }
    out.push(cur.trim().to_string());
    out
}

impl Csv {
    /// Parses CSV text; every row must have as many fields as the header.
    pub fn parse(text: &str, origin: &str) -> Result<Csv> {
        let mut headers: Option<Vec<String>> = None;
        let mut rows = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let ln = i + 1;
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let fields = split(t);
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
        let c = Csv::parse("name,x\n\"a,b\",1\n", "q").unwrap();
        assert_eq!(c.text(0, 0), "a,b");
    }
}
