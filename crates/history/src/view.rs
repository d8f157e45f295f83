//! The text views and the chart of the run history: the runs (`history list`), a metric's
//! series with its change points (`history plot`) and the change points as Markdown
//! (`history changes --format md`).

use std::fmt::Write as _;
use std::path::Path;

use hpcscope_report::{ChartOptions, Series, line_chart_svg};

use crate::changepoint::Method;
use crate::robust::Detection;
use crate::store::{MachineRow, SeriesPoint, StoredRun};

/// The runs as CSV: one column per field, then one per metric any run has.
pub fn runs_csv(runs: &[StoredRun]) -> String {
    let mut out = String::new();
    let mut names: Vec<String> = runs
        .iter()
        .flat_map(|r| r.record.metrics.iter().map(|m| m.name.clone()))
        .collect();
    names.sort();
    names.dedup();
    let q = hpcscope_report::table::csv_field;
    let mut head = vec![
        "id",
        "started_at",
        "machine_id",
        "git_commit",
        "git_dirty",
        "command",
        "tags",
        "exit_status",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    head.extend(names.iter().map(|n| q(n)));
    let _ = writeln!(out, "{}", head.join(","));
    for r in runs {
        let tags: Vec<String> = r
            .record
            .tags
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut row = vec![
            r.id.to_string(),
            r.started.clone(),
            r.machine_id.clone(),
            r.record
                .git
                .as_ref()
                .map(|g| g.commit.clone())
                .unwrap_or_default(),
            r.record
                .git
                .as_ref()
                .map(|g| g.dirty.to_string())
                .unwrap_or_default(),
            q(&r.record.command),
            q(&tags.join(";")),
            r.record
                .exit_status
                .map(|s| s.to_string())
                .unwrap_or_default(),
        ];
        row.extend(names.iter().map(|n| {
            r.record
                .metric(n)
                .map(|v| v.to_string())
                .unwrap_or_default()
        }));
        let _ = writeln!(out, "{}", row.join(","));
    }
    out
}

/// `history metrics`: each metric's name, unit and number of runs.
pub fn metrics_text(names: &[(String, String, usize)]) -> String {
    let mut t = String::new();
    if names.is_empty() {
        t.push_str("no metric stored for these runs\n");
    }
    let _ = writeln!(t, "{:<40} {:<10} {:>6}", "metric", "unit", "runs");
    for (n, u, c) in names {
        let _ = writeln!(t, "{n:<40} {u:<10} {c:>6}");
    }
    t
}

/// `history machines`: each machine of the store, its runs and its fingerprint.
pub fn machines_text(machines: &[MachineRow]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:<18} {:>5} {:<40} {:>5} {:<24} {:<12} machine file",
        "id", "runs", "cpu", "cpus", "kernel", "governor"
    );
    for m in machines {
        let f = &m.fingerprint;
        let _ = writeln!(
            t,
            "{:<18} {:>5} {:<40} {:>5} {:<24} {:<12} {}",
            m.id,
            m.runs,
            f.cpu_model,
            f.cpu_count,
            f.kernel,
            f.governor.as_deref().unwrap_or("-"),
            f.machine_file.as_deref().unwrap_or("-")
        );
    }
    t
}

/// The runs as an aligned table (id, date, machine, commit, time, tags, command); `store`
/// is named when no run matches.
pub fn runs_table(runs: &[StoredRun], store: &Path) -> String {
    let mut out = String::new();
    if runs.is_empty() {
        let _ = writeln!(out, "no run matches (store {})", store.display());
    }
    let _ = writeln!(
        out,
        "{:>6}  {:<24} {:<17} {:<10} {:>10} {:>6}  {:<30} command",
        "id", "started (UTC)", "machine", "commit", "time_s", "exit", "tags"
    );
    for r in runs {
        let tags: Vec<String> = r
            .record
            .tags
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let commit = r
            .record
            .git
            .as_ref()
            .map(|g| {
                format!(
                    "{}{}",
                    &g.commit[..g.commit.len().min(8)],
                    if g.dirty { "+" } else { "" }
                )
            })
            .unwrap_or_else(|| "-".into());
        // A failed run is kept and marked: its exit status, or `killed` (by a signal).
        let exit = match r.record.exit_status {
            Some(c) => c.to_string(),
            None if r.record.source == "record" => "killed".into(),
            None => "-".into(),
        };
        let _ = writeln!(
            out,
            "{:>6}  {:<24} {:<17} {:<10} {:>10} {:>6}  {:<30} {}",
            r.id,
            r.started,
            r.machine_id,
            commit,
            r.record
                .metric("time_s")
                .map(|t| format!("{t:.4}"))
                .unwrap_or_else(|| "-".into()),
            exit,
            tags.join(","),
            r.record.command
        );
    }
    out
}

/// The method in words, for captions.
pub fn describe(m: &Method) -> String {
    match m {
        Method::Robust(o) => format!(
            "steps of the level against a local trend (z² >= {} ln n, step >= {} noise sd, at least {} runs a side)",
            o.penalty, o.min_effect, o.min_segment
        ),
        Method::EDivisive(o) => format!(
            "E-divisive means with a t-test (p < {}, effect size >= {})",
            o.max_pvalue, o.min_effect_size
        ),
        Method::Pelt(o) => format!(
            "PELT (normal mean cost, BIC, at least {} runs a side)",
            o.min_size
        ),
    }
}

/// The series `xs` of `metric` (the values of `pts`) with its change points `det` found by
/// `m` and the segment means; `note` says which runs were left out.
pub fn plot_svg(
    metric: &str,
    pts: &[SeriesPoint],
    xs: &[f64],
    det: &Detection,
    m: &Method,
    note: Option<&str>,
) -> String {
    let ed = &det.changes;
    let unit = pts.last().map(|p| p.unit.clone()).unwrap_or_default();
    // Segment means as a dashed step line.
    let mut bounds = vec![0];
    bounds.extend(ed.iter().map(|c| c.index));
    bounds.push(xs.len());
    let mut means = Vec::new();
    for w in bounds.windows(2) {
        let seg: Vec<f64> = xs[w[0]..w[1]]
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        if seg.is_empty() {
            continue;
        }
        let m = seg.iter().sum::<f64>() / seg.len() as f64;
        means.push((w[0] as f64 + 1.0, m));
        means.push((w[1] as f64, m));
    }
    let series = vec![
        Series {
            name: metric.to_string(),
            points: xs
                .iter()
                .enumerate()
                .map(|(i, &v)| (i as f64 + 1.0, v))
                .collect(),
            dashed: false,
        },
        Series {
            name: "segment mean".into(),
            points: means,
            dashed: true,
        },
    ];
    let markers = ed
        .iter()
        .map(|c| {
            (
                c.index as f64 + 0.5,
                format!("run #{} {:+.1}%", pts[c.index].run_id, c.rel_change * 100.0),
            )
        })
        .collect();
    line_chart_svg(
        &series,
        &ChartOptions {
            title: format!("History of {}", metric),
            x_label: "Run (oldest to newest)".into(),
            y_label: if unit.is_empty() {
                metric.to_string()
            } else {
                format!("{} ({unit})", metric)
            },
            vertical_markers: markers,
            caption: format!(
                "{} runs{}. Vertical lines mark change points: {}; the dashed line is the mean of each segment.{}",
                xs.len(),
                note.map(|n| format!(" ({n})")).unwrap_or_default(),
                describe(m),
                det.notes
                    .iter()
                    .map(|n| format!(" Note: {n}."))
                    .collect::<String>()
            ),
            ..ChartOptions::default()
        },
    )
}

/// The change points `det` of `metric` (found by `m` over `runs` runs, `pts` the series) as
/// Markdown, with the notes.
pub fn changes_md(
    metric: &str,
    pts: &[SeriesPoint],
    runs: usize,
    det: &Detection,
    m: &Method,
    notes: &[String],
) -> String {
    let mut out = String::new();
    macro_rules! outln {
        ($($t:tt)*) => {
            let _ = writeln!(out, $($t)*);
        };
    }
    outln!(
        "## Change points of `{}` ({} runs)\n\nMethod: {}.\n",
        metric,
        runs,
        describe(m)
    );
    for n in notes {
        outln!("> **Note:** {n}\n");
    }
    if det.changes.is_empty() {
        outln!("No change point.");
    } else {
        outln!(
            "| first run after | commit | mean before | mean after | step | step / noise | model | p-value |"
        );
        outln!("|---|---|---:|---:|---:|---:|---|---:|");
    }
    for c in &det.changes {
        let p = &pts[c.index];
        outln!(
            "| #{} | {} | {} | {} | {} ({:+.2}%) | {:+.1} | {} | {:.2e} |",
            p.run_id,
            p.git_commit
                .as_deref()
                .map(|g| &g[..g.len().min(10)])
                .unwrap_or("-"),
            hpcscope_report::fmt::plain(c.before.mean),
            hpcscope_report::fmt::plain(c.after.mean),
            hpcscope_report::fmt::plain(c.step),
            c.rel_change * 100.0,
            c.step_over_noise,
            c.model.describe(),
            c.pvalue,
        );
    }
    out
}
