//! The text views of tracing: a trace's tables per level (`trace`), the probes of a file
//! (`trace --list-usdt`) and what this machine allows (`doctor`).

use std::path::Path;

use hpcscope_report::{Format, Table};

use crate::TraceOutcome;
use crate::doctor::Doctor;
use crate::perf_script::{FunctionDelta, Imported};
use crate::profile::Profile;
use crate::usdt::UsdtProbe;

/// Intervals of the rate series shown one per row in the text view; more are summarized.
const MAX_RATE_ROWS: usize = 30;

/// Text rendering: one table per level, then the notes.
pub fn text(out: &TraceOutcome) -> String {
    let r = &out.report;
    let mut s = format!(
        "trace of {} ({:.3} s{}{})\n",
        r.target,
        r.duration_s,
        if r.partial { ", partial" } else { "" },
        match (r.exit_code, r.exit_signal) {
            (Some(c), _) => format!(", exit code {c}"),
            (None, Some(s)) => format!(", killed by signal {s}"),
            _ => String::new(),
        }
    );
    for mut t in r.tables() {
        if t.title == "rate" && t.rows.len() > MAX_RATE_ROWS {
            // A long trace: the summary here, every interval in the JSON and the HTML.
            let n = t.rows.len();
            t = r.rates.as_ref().map(|x| x.summary()).unwrap_or(t);
            t.title = format!(
                "rate summary ({n} intervals of {} s: each one in --format json and --html)",
                r.rates.as_ref().map_or(0.0, |x| x.interval_s)
            );
        }
        let mut table = Table::new(&t.headers.iter().map(String::as_str).collect::<Vec<_>>());
        for row in t.rows {
            table.row(row);
        }
        s.push_str(&format!("\n[{}]\n", t.title));
        s.push_str(&table.text());
    }
    if let Some(p) = &out.profile {
        s.push_str(&format!(
            "\n[hot functions] {} samples at {} Hz\n",
            p.total(),
            p.hz
        ));
        s.push_str(&p.hot_table(15).text());
    }
    for n in &r.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

/// A trace in `format`: the tables per level as text, JSON, or the per-thread table (the
/// finest level with every probe) as CSV or Markdown.
pub fn render(format: Format, out: &TraceOutcome) -> Result<String, serde_json::Error> {
    Ok(match format {
        Format::Table => text(out),
        Format::Json => serde_json::to_string_pretty(out)? + "\n",
        f => {
            // CSV and Markdown: the per-thread table, the finest level with every probe.
            let tables = out.report.tables();
            let t = tables
                .iter()
                .find(|t| t.title == "thread")
                .or_else(|| tables.last());
            let mut table = Table::new(&[]);
            if let Some(t) = t {
                table = Table::new(&t.headers.iter().map(String::as_str).collect::<Vec<_>>());
                for row in &t.rows {
                    table.row(row.clone());
                }
            }
            hpcscope_report::render(f, out, &[], &table, &out.report.notes)?
        }
    })
}

/// The USDT probes of the file at `path`, one row per probe with its sites, semaphore and
/// arguments.
pub fn usdt_probes(
    format: Format,
    path: &Path,
    probes: &[UsdtProbe],
) -> Result<String, serde_json::Error> {
    let mut t = Table::new(&["probe", "sites", "semaphore", "arguments"]);
    for p in probes {
        t.row(vec![
            p.id(),
            p.sites.len().to_string(),
            p.sites
                .iter()
                .find(|s| s.semaphore != 0)
                .map(|s| format!("{:#x}", s.semaphore))
                .unwrap_or_else(|| "-".into()),
            p.sites
                .first()
                .map(|s| s.arguments.clone())
                .unwrap_or_default(),
        ]);
    }
    let pre = vec![format!(
        "{}: {} USDT probe(s){}",
        path.display(),
        probes.len(),
        if probes.is_empty() {
            " (no .note.stapsdt notes)"
        } else {
            ""
        }
    )];
    hpcscope_report::render(format, &probes, &pre, &t, &[])
}

/// What this machine allows, one row per check, and whether eBPF tracing is available.
pub fn doctor(format: Format, d: &Doctor) -> Result<String, serde_json::Error> {
    let mut t = Table::new(&["check", "ok", "found", "missing disables"]);
    for c in &d.checks {
        t.row(vec![
            c.name.clone(),
            if c.ok { "yes" } else { "no" }.into(),
            c.detail.clone(),
            c.disables.clone(),
        ]);
    }
    let pre = vec![format!("kernel {}, {} CPUs", d.kernel, d.cpus)];
    let post = if d.can_trace() {
        vec!["eBPF tracing and profiling: available".to_string()]
    } else {
        vec!["eBPF tracing and profiling: NOT available (see the rows marked no)".to_string()]
    };
    hpcscope_report::render(format, d, &pre, &t, &post)
}

/// A sampled profile (`profile`) in `format`: what was sampled and written (`wrote`), the
/// `top` hot functions, the notes; JSON holds the report, the profile and the hot functions.
pub fn profile(
    format: Format,
    out: &TraceOutcome,
    prof: &Profile,
    wrote: &str,
    top: usize,
) -> Result<String, serde_json::Error> {
    let mut pre = vec![format!(
        "{}: {} samples at {} Hz over {:.2} s{}; {wrote}",
        out.report.target,
        prof.total(),
        prof.hz,
        out.report.duration_s,
        if out.report.partial { " (partial)" } else { "" }
    )];
    if prof.missing_user_stacks > 0 {
        pre.push(format!(
            "{} samples had no user stack (code without frame pointers: rebuild with \
             -fno-omit-frame-pointer)",
            prof.missing_user_stacks
        ));
    }
    let table = prof.hot_table(top);
    Ok(match format {
        Format::Json => {
            // Keys sorted at every level, as this output has always been printed.
            serde_json::to_string_pretty(&serde_json::to_value(ProfileRun {
                hot_functions: prof.hot_functions(top),
                profile: prof,
                report: &out.report,
            })?)?
                + "\n"
        }
        f => hpcscope_report::render(f, prof, &pre, &table, &out.report.notes)?,
    })
}

/// `profile --format json`: what was sampled, as printed and as its schema says.
#[derive(serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ProfileRun<'a> {
    /// The hottest functions, by self samples.
    pub hot_functions: Vec<crate::profile::HotFunction>,
    /// The stack samples.
    pub profile: &'a Profile,
    /// Counts, times and histograms of the sampled run.
    pub report: &'a crate::report::TraceReport,
}

/// `profile import --format json`.
#[derive(serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ProfileImportJson<'a> {
    /// The hottest functions, by self weight.
    pub hot_functions: Vec<crate::profile::HotFunction>,
    /// The profile read and what its counts mean.
    pub import: &'a Imported,
}

/// One line on an imported profile: its origin, format, stacks and total weight.
pub fn summary(imp: &Imported) -> String {
    let p = &imp.profile;
    let stacks = p.samples.len();
    format!(
        "{} ({:?}): {} stacks, total weight {} {}",
        imp.origin,
        imp.format,
        stacks,
        p.total(),
        imp.weight.unit()
    )
}

/// An imported profile (`profile import`) in `format`: the lines `pre`, the `top` hot
/// functions and the notes; JSON holds the import and the hot functions.
pub fn imported(
    format: Format,
    imp: &Imported,
    pre: &[String],
    top: usize,
) -> Result<String, serde_json::Error> {
    let table = imp.profile.hot_table(top);
    Ok(match format {
        Format::Json => {
            // Keys sorted at every level, as this output has always been printed.
            serde_json::to_string_pretty(&serde_json::to_value(ProfileImportJson {
                hot_functions: imp.profile.hot_functions(top),
                import: imp,
            })?)?
                + "\n"
        }
        f => hpcscope_report::render(f, imp, pre, &table, &imp.notes)?,
    })
}

/// The functions whose share changed between two profiles (`profile diff`), with the lines
/// `pre` and the notes of both.
pub fn diff(
    format: Format,
    before: &Imported,
    after: &Imported,
    rows: &[FunctionDelta],
    pre: &[String],
) -> Result<String, serde_json::Error> {
    let table = crate::perf_script::diff_table(rows);
    let mut notes = before.notes.clone();
    notes.extend(after.notes.iter().cloned());
    hpcscope_report::render(format, &rows, pre, &table, &notes)
}
