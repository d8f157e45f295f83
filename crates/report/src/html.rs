//! A self-contained HTML page: inline CSS, inline SVG charts, no script, no network.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::svg::escape;

/// One section of a report page.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Section {
    /// Heading (plain text, escaped).
    pub title: String,
    /// The verdict in plain language, one or two sentences (plain text, escaped), shown
    /// prominently under the heading.
    pub summary: String,
    /// Trusted HTML placed after the summary: tables (see [`html_table`]), notes. It must be
    /// well-formed (close every element) and self-contained.
    pub body_html: String,
    /// SVG charts (from this crate), each shown in its own figure.
    pub svgs: Vec<String>,
}

const CSS: &str = "\
:root{color-scheme:light}\
body{margin:0;background:#f6f6f4;color:#1f1f1f;font:16px/1.55 -apple-system,'Segoe UI',Roboto,'DejaVu Sans',Verdana,sans-serif}\
main{max-width:860px;margin:0 auto;padding:24px 20px 48px}\
h1{font-size:1.7em;margin:.4em 0 .2em;line-height:1.25}\
h2{font-size:1.3em;margin:1.8em 0 .4em;padding-top:.6em;border-top:1px solid #ddd}\
p.generated{color:#666;margin-top:0}\
nav ol{padding-left:1.4em}\
p.summary{background:#fff;border-left:4px solid #0072B2;padding:.7em 1em;margin:.6em 0 1em;font-size:1.05em}\
table{border-collapse:collapse;margin:1em 0;font-size:.92em;background:#fff}\
th,td{border:1px solid #d8d8d8;padding:.35em .7em;text-align:left;vertical-align:top}\
th{background:#eef2f6;font-weight:600}\
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
tbody tr:nth-child(even){background:#fafafa}\
figure{margin:1.4em 0;background:#fff;border:1px solid #e2e2e2;padding:8px}\
figure svg{display:block;max-width:100%;height:auto}\
figcaption{color:#555;font-size:.85em;padding:4px 8px 0}\
code{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:.92em}\
@media print{body{background:#fff}figure{break-inside:avoid;border:none}}";

/// A complete HTML page with a table of contents and one part per section.
///
/// Every text given as plain text is escaped; `body_html` and the SVGs are inserted as they
/// are. The page needs nothing else to display: CSS is inline, charts are inline SVG.
pub fn html_page(title: &str, sections: &[Section]) -> String {
    let mut out = String::new();
    let t = escape(title);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<title>{t}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n<h1>{t}</h1>\n"
    );
    if sections.len() > 1 {
        out.push_str(&toc(sections));
    }
    let mut fig = 0;
    for (i, s) in sections.iter().enumerate() {
        let _ = writeln!(
            out,
            "<section id=\"s{}\">\n<h2>{}</h2>",
            i + 1,
            escape(&s.title)
        );
        if !s.summary.is_empty() {
            let _ = writeln!(out, "<p class=\"summary\">{}</p>", escape(&s.summary));
        }
        if !s.body_html.is_empty() {
            out.push_str(&s.body_html);
            out.push('\n');
        }
        for svg in &s.svgs {
            fig += 1;
            let label = svg_title(svg).unwrap_or_default();
            let _ = writeln!(
                out,
                "<figure>\n{}\n<figcaption>Figure {fig}{}{}</figcaption>\n</figure>",
                svg.trim_end(),
                if label.is_empty() { "" } else { ". " },
                escape(&label)
            );
        }
        out.push_str("</section>\n");
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// The table of contents. Consecutive sections titled `group: part` share one entry (the
/// group, then a link per part), so a report with many sections per workload stays a
/// short list.
fn toc(sections: &[Section]) -> String {
    let mut out = String::from("<nav><ol>\n");
    let group_of = |t: &str| {
        t.split_once(": ")
            .map(|(g, p)| (g.to_string(), p.to_string()))
    };
    let mut i = 0;
    while i < sections.len() {
        match group_of(&sections[i].title) {
            Some((g, _)) => {
                let mut links = Vec::new();
                while let Some((gj, part)) = sections.get(i).and_then(|s| group_of(&s.title)) {
                    if gj != g {
                        break;
                    }
                    links.push(format!("<a href=\"#s{}\">{}</a>", i + 1, escape(&part)));
                    i += 1;
                }
                let _ = writeln!(
                    out,
                    "<li><strong>{}</strong>: {}</li>",
                    escape(&g),
                    links.join(" &middot; ")
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "<li><a href=\"#s{}\">{}</a></li>",
                    i + 1,
                    escape(&sections[i].title)
                );
                i += 1;
            }
        }
    }
    out.push_str("</ol></nav>\n");
    out
}

/// The (unescaped) text of the first `<title>` of an SVG.
fn svg_title(svg: &str) -> Option<String> {
    let a = svg.find("<title>")? + "<title>".len();
    let b = a + svg[a..].find("</title>")?;
    Some(unescape(&svg[a..b]))
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// An HTML table: escaped headers and cells; cells that look like numbers are right-aligned.
pub fn html_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table>\n<thead><tr>");
    for h in headers {
        let _ = write!(out, "<th scope=\"col\">{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        out.push_str("<tr>");
        for c in r {
            if looks_numeric(c) {
                let _ = write!(out, "<td class=\"num\">{}</td>", escape(c));
            } else {
                let _ = write!(out, "<td>{}</td>", escape(c));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>");
    out
}

/// `1.40`, `-3%`, `0.69-1.40`, `[0.69, 1.40]`, `x1.3`, `12 GB/s`, `2 x 24`: the first word
/// (after a sign or bracket) is a number, perhaps with a unit after a space; `2D stencil`
/// and `64-bit` are text.
fn looks_numeric(s: &str) -> bool {
    let t = s.trim_start_matches(['-', '+', '[', '(', '×', 'x', '~', '≈']);
    let first = t
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_end_matches([',', ';', ']', ')', '%', '*']);
    first.starts_with(|c: char| c.is_ascii_digit())
        && first
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '-' | '+' | 'e' | 'E'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_escapes_and_aligns() {
        let t = html_table(
            &["name", "<GFLOP/s>"],
            &[
                vec!["a & b".into(), "1.40".into()],
                vec!["c".into(), "n/a".into()],
            ],
        );
        assert!(t.contains("<th scope=\"col\">&lt;GFLOP/s&gt;</th>"));
        assert!(t.contains("<td>a &amp; b</td>"));
        assert!(t.contains("<td class=\"num\">1.40</td>"));
        assert!(t.contains("<td>n/a</td>"));
        roxmltree::Document::parse(&t).unwrap();
    }

    #[test]
    fn page_has_toc_and_figure_titles() {
        let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\"><title>A &amp; B</title></svg>";
        let p = html_page(
            "T",
            &[
                Section {
                    title: "one".into(),
                    summary: "s <b>".into(),
                    body_html: String::new(),
                    svgs: vec![svg.into()],
                },
                Section {
                    title: "two".into(),
                    ..Section::default()
                },
            ],
        );
        assert!(p.contains("<a href=\"#s2\">two</a>"));
        assert!(p.contains("Figure 1. A &amp; B"));
        assert!(p.contains("s &lt;b&gt;"));
    }

    #[test]
    fn toc_groups_consecutive_sections_of_one_prefix() {
        let sec = |t: &str| Section {
            title: t.into(),
            ..Section::default()
        };
        let p = html_page(
            "T",
            &[
                sec("Overview"),
                sec("triad: Application"),
                sec("triad: trace: system level"),
                sec("a<b: Notes"),
                sec("Validation"),
            ],
        );
        let nav = &p[p.find("<nav>").unwrap()..p.find("</nav>").unwrap()];
        assert_eq!(nav.matches("<li>").count(), 4, "{nav}");
        assert!(nav.contains(
            "<li><strong>triad</strong>: <a href=\"#s2\">Application</a> &middot; <a href=\"#s3\">trace: system level</a></li>"
        ), "{nav}");
        assert!(nav.contains("<strong>a&lt;b</strong>"), "{nav}");
        // Every section keeps its anchor.
        for i in 1..=5 {
            assert!(p.contains(&format!("<section id=\"s{i}\">")));
        }
    }

    #[test]
    fn numeric_cells() {
        for s in [
            "1.4",
            "-3%",
            "[0.69, 1.40]",
            "×1.3",
            "0.69-1.40",
            "12 GB/s",
            "2 x 24",
            "1.2E4",
            "+12.1 %",
        ] {
            assert!(looks_numeric(s), "{s}");
        }
        for s in [
            "",
            "L1",
            "n/a",
            "-",
            "2D 5-point stencil",
            "64-bit",
            "3x faster",
        ] {
            assert!(!looks_numeric(s), "{s}");
        }
    }
}
