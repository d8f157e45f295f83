//! CPU profiles from cpu-clock stack samples: folded stacks, flame graphs (inferno) and
//! hot-function tables (self and total samples, the seed's hot-spot tables 4.4 and 4.5).

use std::collections::HashMap;

use serde::Serialize;

/// One distinct stack and how often it was sampled.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct StackSample {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Command name of the thread.
    pub comm: String,
    /// Frames from the outermost caller to the sampled function (user frames, then kernel
    /// frames suffixed `_[k]` as in Brendan Gregg's folded format).
    pub frames: Vec<String>,
    /// Samples.
    pub count: u64,
}

/// A CPU profile.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct Profile {
    /// Sampling frequency, Hz.
    pub hz: u64,
    /// Wall time sampled, seconds.
    pub duration_s: f64,
    /// Distinct stacks.
    pub samples: Vec<StackSample>,
    /// Samples whose user stack could not be read (no frame pointers, or a kernel thread).
    pub missing_user_stacks: u64,
}

/// One function in the hot-function table.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HotFunction {
    /// Function name.
    pub name: String,
    /// Samples with this function on top of the stack (exclusive).
    pub self_samples: u64,
    /// Samples with this function anywhere on the stack (inclusive, counted once per stack).
    pub total_samples: u64,
    /// `self_samples` as a percentage of all samples.
    pub self_pct: f64,
    /// `total_samples` as a percentage of all samples.
    pub total_pct: f64,
}

impl Profile {
    /// Total samples.
    pub fn total(&self) -> u64 {
        self.samples.iter().map(|s| s.count).sum()
    }

    /// Folded stacks, one line per stack: `comm;outer;...;leaf count`, sorted.
    pub fn folded(&self) -> String {
        let mut agg: HashMap<String, u64> = HashMap::new();
        for s in &self.samples {
            let mut line = sanitize(&s.comm);
            for f in &s.frames {
                line.push(';');
                line.push_str(&sanitize(f));
            }
            *agg.entry(line).or_default() += s.count;
        }
        let mut lines: Vec<(String, u64)> = agg.into_iter().collect();
        lines.sort();
        let mut out = String::new();
        for (l, c) in lines {
            out.push_str(&format!("{l} {c}\n"));
        }
        out
    }

    /// A flame graph SVG of the folded stacks (interactive: inferno's search and zoom script).
    pub fn flamegraph_svg(&self, title: &str) -> Result<String, String> {
        self.flamegraph(title, false)
    }

    /// The same flame graph without script or XML prolog, to inline in an HTML page.
    pub fn flamegraph_svg_static(&self, title: &str) -> Result<String, String> {
        let svg = self.flamegraph(title, true)?;
        let mut svg = svg
            .find("<svg")
            .map(|i| svg[i..].to_string())
            .unwrap_or(svg);
        // inferno leaves an empty script element; the report pages carry no script at all.
        while let Some(a) = svg.find("<script") {
            match svg[a..].find("</script>") {
                Some(b) => svg.replace_range(a..a + b + "</script>".len(), ""),
                None => break,
            }
        }
        // ...and event-handler attributes (`onload="init(evt)"`) that would call it.
        Ok(scope_for_inlining(&strip_event_handlers(&svg), title))
    }

    fn flamegraph(&self, title: &str, static_svg: bool) -> Result<String, String> {
        let folded = self.folded();
        let mut opts = inferno::flamegraph::Options::default();
        opts.no_javascript = static_svg;
        opts.title = title.to_string();
        opts.count_name = "samples".to_string();
        let mut out = Vec::new();
        // inferno refuses empty input; draw an explicit empty graph instead.
        let empty = ["[no samples] 1"];
        crate::guard::no_panic(|| {
            if folded.is_empty() {
                inferno::flamegraph::from_lines(&mut opts, empty.iter().copied(), &mut out)
            } else {
                inferno::flamegraph::from_lines(&mut opts, folded.lines(), &mut out)
            }
        })
        .map_err(|c| {
            format!(
                "drawing the flame graph failed, {}: {}",
                crate::perf_script::LIBRARY_FAULT,
                c.0
            )
        })?
        .map_err(|e| e.to_string())?;
        String::from_utf8(out).map_err(|e| e.to_string())
    }

    /// Functions by self samples (ties by total samples), at most `n`.
    pub fn hot_functions(&self, n: usize) -> Vec<HotFunction> {
        let total = self.total().max(1) as f64;
        let mut selfc: HashMap<&str, u64> = HashMap::new();
        let mut totc: HashMap<&str, u64> = HashMap::new();
        for s in &self.samples {
            if let Some(leaf) = s.frames.last() {
                *selfc.entry(leaf).or_default() += s.count;
            }
            let mut seen: Vec<&str> = Vec::new();
            for f in &s.frames {
                if !seen.contains(&f.as_str()) {
                    seen.push(f);
                    *totc.entry(f).or_default() += s.count;
                }
            }
        }
        let mut v: Vec<HotFunction> = totc
            .iter()
            .map(|(name, &t)| {
                let sc = selfc.get(name).copied().unwrap_or(0);
                HotFunction {
                    name: name.to_string(),
                    self_samples: sc,
                    total_samples: t,
                    self_pct: 100.0 * sc as f64 / total,
                    total_pct: 100.0 * t as f64 / total,
                }
            })
            .collect();
        v.sort_by(|a, b| {
            b.self_samples
                .cmp(&a.self_samples)
                .then(b.total_samples.cmp(&a.total_samples))
                .then(a.name.cmp(&b.name))
        });
        v.truncate(n);
        v
    }
}

/// Folded-format frames cannot hold `;` or a newline, and a trailing space-number would be
/// read as the count.
fn sanitize(s: &str) -> String {
    s.replace([';', '\n'], ":").replace(' ', "_")
}

impl Profile {
    /// The hot-function table: self and total samples and percentages of the `n` hottest.
    pub fn hot_table(&self, n: usize) -> hpcscope_report::Table {
        let mut t =
            hpcscope_report::Table::new(&["function", "self", "self_%", "total", "total_%"]);
        for h in self.hot_functions(n) {
            t.row(vec![
                h.name,
                h.self_samples.to_string(),
                format!("{:.1}", h.self_pct),
                h.total_samples.to_string(),
                format!("{:.1}", h.total_pct),
            ]);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> Profile {
        let s = |frames: &[&str], count| StackSample {
            pid: 1,
            tid: 1,
            comm: "app".into(),
            frames: frames.iter().map(|f| f.to_string()).collect(),
            count,
        };
        Profile {
            hz: 99,
            duration_s: 1.0,
            samples: vec![
                s(&["main", "solve", "dot"], 60),
                s(&["main", "solve"], 10),
                s(&["main", "io", "write_[k]"], 30),
            ],
            missing_user_stacks: 0,
        }
    }

    #[test]
    fn folded_lines_are_sorted_and_summed() {
        assert_eq!(
            p().folded(),
            "app;main;io;write_[k] 30\napp;main;solve 10\napp;main;solve;dot 60\n"
        );
    }

    #[test]
    fn hot_functions_self_and_total() {
        let h = p().hot_functions(10);
        assert_eq!(h[0].name, "dot");
        assert_eq!(h[0].self_samples, 60);
        assert_eq!(h[0].self_pct, 60.0);
        let main = h.iter().find(|f| f.name == "main").unwrap();
        assert_eq!((main.self_samples, main.total_samples), (0, 100));
        let solve = h.iter().find(|f| f.name == "solve").unwrap();
        assert_eq!((solve.self_samples, solve.total_samples), (10, 70));
    }

    #[test]
    fn an_inlined_flame_graph_keeps_its_styles_to_itself() {
        let a = p().flamegraph_svg_static("t").unwrap();
        let b = p().flamegraph_svg_static("t").unwrap();
        for svg in [&a, &b] {
            // No page-wide CSS, no script, no interactive-only texts, no repeated ids.
            assert!(!svg.contains("<style") && !svg.contains("<script"), "{svg}");
            assert!(
                !svg.contains("Reset Zoom") && !svg.contains(">Search<"),
                "{svg}"
            );
            for id in ["title", "frames", "search", "unzoom", "matched", "details"] {
                assert!(!svg.contains(&format!("id=\"{id}\"")), "id {id} left");
            }
            assert!(svg.starts_with("<svg font-family=") && svg.contains("font-size=\"17\""));
            assert!(svg.contains("dot") && svg.trim_end().ends_with("</svg>"));
            // Its own title comes first (a page takes its figure caption from it).
            let t = svg.find("<title>").unwrap();
            assert!(
                svg[t..].starts_with("<title>t</title>"),
                "{}",
                &svg[t..t + 40]
            );
        }
        // Each inlined graph has its own gradient.
        let id = |s: &str| {
            let i = s.find("url(#").unwrap();
            s[i..i + s[i..].find(')').unwrap()].to_string()
        };
        assert_ne!(id(&a), id(&b));
        assert!(a.contains(&format!("id=\"{}\"", &id(&a)[5..])));
    }

    #[test]
    fn flame_graph_is_svg() {
        let svg = p().flamegraph_svg("t").unwrap();
        assert!(svg.contains("<svg") && svg.contains("dot"));
        assert!(
            Profile::default()
                .flamegraph_svg("t")
                .unwrap()
                .contains("<svg")
        );
    }
}

/// Makes inferno's SVG safe to inline in a page with other charts: its `<style>` element
/// (`text { font-family:monospace; font-size:12px }`, rules on `#title`...) would apply to
/// every SVG text of the page, and its ids would repeat with each flame graph. The style
/// becomes presentation attributes on this SVG's own elements, the interactive-only texts
/// (Search, Reset Zoom, the details and match lines) go, the gradient id gets a number
/// unique in the process, and the graph gets a `<title>` of its own (a page's figure caption
/// would otherwise take the first frame's tooltip).
fn scope_for_inlining(svg: &str, title: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let mut s = svg.to_string();
    if let Some(a) = s.find("<style")
        && let Some(b) = s[a..].find("</style>")
    {
        s.replace_range(a..a + b + "</style>".len(), "");
    }
    // The root's own presentation attributes: inherited by its texts only.
    if s.starts_with("<svg ") {
        s.insert_str(
            4,
            r#" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12""#,
        );
        if let Some(end) = s.find('>') {
            s.insert_str(
                end + 1,
                &format!("<title>{}</title>", hpcscope_report::escape(title)),
            );
        }
    }
    for id in ["unzoom", "search", "matched", "details"] {
        let open = format!("<text id=\"{id}\"");
        if let Some(a) = s.find(&open)
            && let Some(b) = s[a..].find("</text>")
        {
            s.replace_range(a..a + b + "</text>".len(), "");
        }
    }
    s = s
        .replacen(
            r#"<text id="title""#,
            r#"<text text-anchor="middle" font-size="17""#,
            1,
        )
        .replacen(
            r#"<text id="subtitle""#,
            r#"<text text-anchor="middle" fill="rgb(160,160,160)""#,
            1,
        )
        .replacen(r#"<svg id="frames""#, "<svg", 1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    s.replace(r#"id="background""#, &format!(r#"id="hs-flame-bg-{n}""#))
        .replace("url(#background)", &format!("url(#hs-flame-bg-{n})"))
}

/// Removes ` on<name>="..."` attributes (event handlers) from markup.
fn strip_event_handlers(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(i) = rest.find(" on") {
        let after = &rest[i + 3..];
        let name_len = after.bytes().take_while(u8::is_ascii_lowercase).count();
        let tail = &after[name_len..];
        if name_len > 0
            && tail.starts_with("=\"")
            && let Some(end) = tail[2..].find('"')
        {
            out.push_str(&rest[..i]);
            rest = &tail[2 + end + 1..];
            continue;
        }
        out.push_str(&rest[..i + 3]);
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod strip_tests {
    #[test]
    fn event_handlers_are_removed_and_text_kept() {
        let s = r#"<svg onload="init(evt)" width="1"><text>on top onion</text><g onclick="z()"/></svg>"#;
        assert_eq!(
            super::strip_event_handlers(s),
            r#"<svg width="1"><text>on top onion</text><g/></svg>"#
        );
    }
}
