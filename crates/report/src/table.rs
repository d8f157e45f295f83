//! Tables and the four output formats of every command: aligned text for a terminal, JSON
//! (the result itself), CSV (RFC 4180) and Markdown; and the HTML form for reports
//! ([`crate::html_table`]).
//!
//! A command builds its result as a `Serialize` value plus a [`Table`] view of it, and
//! [`render`] prints either.

use serde::Serialize;

/// How to print a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
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

/// A table: headers and rows of cells, optionally in groups (a heading before a run of
/// rows: the categories of the counter metrics).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows.
    pub rows: Vec<Vec<String>>,
    /// Group headings: (index of the first row of the group, heading).
    pub groups: Vec<(usize, String)>,
}

impl Table {
    /// A table with these headers.
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            groups: Vec::new(),
        }
    }

    /// A table from owned headers and rows.
    pub fn from_parts(headers: Vec<String>, rows: Vec<Vec<String>>) -> Table {
        Table {
            headers,
            rows,
            groups: Vec::new(),
        }
    }

    /// Starts a group: `heading` stands before the rows added next.
    pub fn group(&mut self, heading: impl Into<String>) {
        self.groups.push((self.rows.len(), heading.into()));
    }

    fn heading_before(&self, row: usize) -> impl Iterator<Item = &str> {
        self.groups
            .iter()
            .filter(move |(i, _)| *i == row)
            .map(|(_, h)| h.as_str())
    }

    /// The group of each row (empty before the first group).
    fn group_of_rows(&self) -> Vec<&str> {
        let mut g = "";
        (0..self.rows.len())
            .map(|i| {
                if let Some(h) = self.heading_before(i).last() {
                    g = h;
                }
                g
            })
            .collect()
    }

    /// Appends a row.
    pub fn row(&mut self, cells: Vec<String>) {
        // Cells often hold names read from files: a control character (an escape sequence,
        // a carriage return, a newline) must not reach the terminal or break the layout.
        let cells = cells
            .into_iter()
            .map(|c| match crate::text::escape_line(&c) {
                std::borrow::Cow::Borrowed(_) => c,
                std::borrow::Cow::Owned(e) => e,
            })
            .collect();
        self.rows.push(cells);
    }

    /// Aligned text: numbers right-aligned, text left-aligned; a group's heading on a line of
    /// its own, its rows indented by two.
    pub fn text(&self) -> String {
        let n = self.headers.len();
        let indent = if self.groups.is_empty() { "" } else { "  " };
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                let mut r = r.clone();
                if let Some(first) = r.first_mut() {
                    *first = format!("{indent}{first}");
                }
                r
            })
            .collect();
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &rows {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate().take(n) {
                let pad = w[i] - c.chars().count();
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
        for (i, r) in rows.iter().enumerate() {
            for h in self.heading_before(i) {
                out.push_str(h);
                out.push('\n');
            }
            out.push_str(&line(r));
            out.push('\n');
        }
        out
    }

    /// CSV (RFC 4180 quoting); with groups, a first `category` column holds each row's group.
    pub fn csv(&self) -> String {
        if self.groups.is_empty() {
            let mut out = csv_line(&self.headers);
            for r in &self.rows {
                out.push_str(&csv_line(r));
            }
            return out;
        }
        let mut head = vec!["category".to_string()];
        head.extend(self.headers.iter().cloned());
        let mut out = csv_line(&head);
        for (r, g) in self.rows.iter().zip(self.group_of_rows()) {
            let mut line = vec![g.to_string()];
            line.extend(r.iter().cloned());
            out.push_str(&csv_line(&line));
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
        for (i, r) in self.rows.iter().enumerate() {
            for h in self.heading_before(i) {
                out.push_str(&format!(
                    "| **{}** |{}\n",
                    esc(&h.to_string()),
                    " |".repeat(self.headers.len().saturating_sub(1))
                ));
            }
            out.push_str(&format!(
                "| {} |\n",
                r.iter().map(esc).collect::<Vec<_>>().join(" | ")
            ));
        }
        out
    }

    /// The HTML form (see [`crate::html_table`]).
    pub fn html(&self) -> String {
        crate::html_table(
            &self.headers.iter().map(String::as_str).collect::<Vec<_>>(),
            &self.rows,
        )
    }
}

/// One CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One CSV record, fields quoted as needed, ending with a newline.
pub fn csv_line<S: AsRef<str>>(fields: &[S]) -> String {
    let mut out = fields
        .iter()
        .map(|f| csv_field(f.as_ref()))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    out
}

fn looks_numeric(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_digit() || ".-+eE%x[], ".contains(c))
        && s.chars().any(|c| c.is_ascii_digit())
}

/// Renders `value` in `format`: JSON is `value` itself; CSV is `table`; text and Markdown
/// are the `preamble` lines, the table, then the `epilogue` lines.
pub fn render<T: Serialize>(
    format: Format,
    value: &T,
    preamble: &[String],
    table: &Table,
    epilogue: &[String],
) -> Result<String, serde_json::Error> {
    Ok(match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(value)?;
            s.push('\n');
            s
        }
        Format::Csv => table.csv(),
        Format::Table => {
            let mut s = String::new();
            for l in preamble {
                s.push_str(&crate::text::escape_control(l));
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
                s.push_str(&crate::text::escape_control(l));
                s.push('\n');
            }
            s
        }
        Format::Md => {
            let mut s = String::new();
            for l in preamble {
                s.push_str(&crate::text::escape_control(l));
                s.push_str("  \n");
            }
            if !preamble.is_empty() {
                s.push('\n');
            }
            s.push_str(&table.md());
            for l in epilogue {
                s.push('\n');
                s.push_str(&crate::text::escape_control(l));
                s.push('\n');
            }
            s
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let mut t = Table::new(&["name", "value"]);
        t.row(vec!["a, b".into(), "1.5".into()]);
        t.row(vec!["say \"hi\"".into(), "20".into()]);
        assert_eq!(t.csv(), "name,value\n\"a, b\",1.5\n\"say \"\"hi\"\"\",20\n");
        let text = t.text();
        assert!(text.contains("a, b        1.5"), "{text}");
        assert!(t.md().starts_with("| name | value |\n|---|---|\n"));
        let r = render(Format::Json, &serde_json::json!({"x": 1}), &[], &t, &[]).unwrap();
        assert_eq!(r, "{\n  \"x\": 1\n}\n");
        assert_eq!(csv_field("line\nbreak"), "\"line\nbreak\"");
    }

    #[test]
    fn groups() {
        let mut t = Table::new(&["metric", "run"]);
        t.group("Compute");
        t.row(vec!["flops".into(), "2.5".into()]);
        t.group("Memory");
        t.row(vec!["bytes".into(), "10".into()]);
        assert_eq!(
            t.text(),
            "metric   run\n-------  ---\nCompute\n  flops  2.5\nMemory\n  bytes   10\n"
        );
        assert_eq!(
            t.csv(),
            "category,metric,run\nCompute,flops,2.5\nMemory,bytes,10\n"
        );
        assert!(
            t.md().contains("| **Memory** | |\n| bytes | 10 |"),
            "{}",
            t.md()
        );
    }

    #[test]
    fn control_characters_from_names_never_reach_the_terminal() {
        let mut t = Table::new(&["region"]);
        t.row(vec!["evil\x1b[2J\rname\nnext".into()]);
        let out = render(
            Format::Table,
            &serde_json::json!({}),
            &["region \x1b]0;title\x07".into()],
            &t,
            &["note \x1b[31mred".into()],
        )
        .unwrap();
        assert!(
            !out.contains('\x1b') && !out.contains('\r') && !out.contains('\x07'),
            "{out:?}"
        );
        assert!(out.contains("evil\\x1b[2J\\rname\\nnext"), "{out}");
    }
}
