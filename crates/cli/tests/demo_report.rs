//! End to end: `hpcscope demo` on one workload, then the report opened in headless Chromium
//! (Debian's `chromium`, started here): every chart must be rendered (SVG elements present
//! and not empty), the page must log no console error, and a screenshot is saved next to
//! the report. Skipped, with a line saying why, without gcc, qemu-user, the plugin or
//! Chromium (`scripts/setup.sh` installs them; `scripts/test.sh` builds the plugin).

mod common;
use common::{qemu_plugin_ready, which};
use hpcscope_test_support::bin;

use std::path::PathBuf;
use std::process::Command;

#[test]
fn demo_report_renders_in_chromium() {
    let Some(plugin) = qemu_plugin_ready() else {
        return;
    };
    let Some(chromium) = which("chromium").or_else(|| which("chromium-browser")) else {
        println!("skipping: chromium is not installed (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    // A published machine as the source keeps the test independent of a benchmark run.
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
        .args([
            "demo",
            "--machine",
            "cascadelake-8260",
            "--workloads",
            "triad",
            "--no-sve",
            "--native-runs",
            "1",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "demo failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report = out.join("report.html");
    let html = std::fs::read_to_string(&report).unwrap();
    // The source machine's ceilings are node values in this machine file: the table shows
    // them and the per-core share the single-core roofline uses, never a bare "-".
    assert!(
        html.contains("GB/s per node; ") && html.contains("GB/s per core as the node"),
        "source machine table without the node ceilings"
    );
    // Nothing escaped twice (a table cell or summary escaped before the page escapes it).
    for twice in [
        "&amp;quot;",
        "&amp;lt;",
        "&amp;gt;",
        "&amp;#39;",
        "&amp;amp;",
    ] {
        assert!(
            !html.contains(twice),
            "double-escaped text in the report: {twice}"
        );
    }
    // One style sheet, the page's own: an inlined chart's CSS would restyle every chart.
    assert_eq!(
        html.matches("<style").count(),
        1,
        "a chart brought its own <style>"
    );
    let charts_in_file = html.matches("<svg").count();
    assert!(
        charts_in_file >= 3,
        "the report has {charts_in_file} charts"
    );

    let profile = dir.path().join("chromium-profile");
    let flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let url = format!("file://{}", report.display());
    // The DOM after load: the charts as the browser parsed them.
    let dom = Command::new(&chromium)
        .args(flags)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        dom.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    let svgs = top_level_svgs(&dom_text);
    assert_eq!(
        svgs.len(),
        top_level_svgs(&html).len(),
        "every chart of the file is in the rendered page"
    );
    for (i, s) in svgs.iter().enumerate() {
        let shapes = ["<path", "<line", "<polyline", "<rect", "<circle", "<text"]
            .iter()
            .map(|t| s.matches(t).count())
            .sum::<usize>();
        assert!(shapes > 10, "chart {i} is nearly empty ({shapes} shapes)");
    }
    let console_messages: Vec<String> = String::from_utf8_lossy(&dom.stderr)
        .lines()
        // The report has no script: any console message at all is a problem (Chromium logs
        // console.error and uncaught exceptions alike as `INFO:CONSOLE`).
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    assert!(
        console_messages.is_empty(),
        "console messages: {console_messages:?}"
    );
    // A screenshot next to the report, for a person to look at.
    let shot = out.join("report.png");
    let s = Command::new(&chromium)
        .args(flags)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--window-size=1200,3000")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(s.status.success());
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "screenshot of {} bytes",
        png.len()
    );
    // Keep the screenshot where a person can find it after the test.
    let keep = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("demo-report.png");
    std::fs::copy(&shot, &keep).unwrap();
    println!("screenshot: {}", keep.display());
}

/// The top-level `<svg>...</svg>` elements of a page (a flame graph nests one SVG in another).
fn top_level_svgs(page: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    let mut i = 0usize;
    while i < page.len() {
        let rest = &page[i..];
        if rest.starts_with("<svg") {
            if depth == 0 {
                start = i;
            }
            depth += 1;
            i += 4;
        } else if rest.starts_with("</svg>") {
            depth = depth.saturating_sub(1);
            i += 6;
            if depth == 0 {
                out.push(&page[start..i]);
            }
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}
