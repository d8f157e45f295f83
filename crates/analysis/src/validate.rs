//! The seeds' validation protocol on a change that can be measured here: project from the
//! build for one vector width (SSE2) to the build for another (AVX2) on this machine, run
//! the latter, and check whether its measured performance falls inside the interval.

use std::path::Path;

use anyhow::Result;
use hpcscope_core::project::{Check, Interval, Options, Side, check, project};
use hpcscope_core::{Machine, Profile};
use hpcscope_mix::MixOptions;
use hpcscope_report::fmt::num;
use hpcscope_report::{Section, ValidationRow, html_table};
use serde::Serialize;

use crate::workloads::{Builds, Workload};

/// One validation pair: projected from one build to another on the same machine, then measured.
#[derive(Debug, Clone, Serialize)]
pub struct ValidationResult {
    /// Workload.
    pub workload: String,
    /// `SSE2 -> AVX2` or the reverse.
    pub pair: String,
    /// Projected interval, GFLOP/s.
    pub interval: Interval,
    /// Measured GFLOP/s of the target build and how it compares.
    pub check: Check,
    /// Measured GFLOP/s of the source build.
    pub source_gflops: f64,
}

/// Characterizes `bin`'s kernel on `m` (counts, caches, native time).
fn profile_of(m: &Machine, w: &Workload, bin: &Path, native_runs: u32) -> Result<Profile> {
    let r = hpcscope_mix::analyze(&MixOptions {
        program: bin.to_path_buf(),
        args: w.args.iter().map(|s| s.to_string()).collect(),
        machines: vec![m.clone()],
        functions: vec![format!("kernel_{}", w.name)],
        native_runs,
        application: Some(w.name.to_string()),
        ..Default::default()
    })?;
    Ok(r.variants[0].profiles[0].clone())
}

/// Projects `from` to `to` on machine `m` and checks against `to`'s measured performance.
pub fn validate_pair(
    m: &Machine,
    w: &str,
    pair: &str,
    from: &Profile,
    to: &Profile,
) -> Result<Option<ValidationResult>> {
    let fo = format!("{w} ({})", pair.split(' ').next().unwrap_or(""));
    let to_o = format!("{w} ({})", pair.rsplit(' ').next().unwrap_or(""));
    let fa = from.regions[0].aggregate(&fo)?;
    let ta = to.regions[0].aggregate(&to_o)?;
    let (Some(fg), Some(tg)) = (fa.gflops(), ta.gflops()) else {
        return Ok(None);
    };
    let p = project(
        Side {
            machine: m,
            threads: &from.regions[0].thread_metrics(&fo)?,
            origin: &fo,
        },
        fg,
        Side {
            machine: m,
            threads: &to.regions[0].thread_metrics(&to_o)?,
            origin: &to_o,
        },
        from.precision,
        Options::default(),
    )?;
    Ok(Some(ValidationResult {
        workload: w.to_string(),
        pair: pair.to_string(),
        interval: p.interval,
        check: check(p.interval, tg),
        source_gflops: fg,
    }))
}

/// The validation summary: fraction inside, median and max error of the nearest bound.
#[derive(Debug, Clone, Serialize)]
pub struct ValidationSummary {
    /// Pairs evaluated.
    pub pairs: usize,
    /// Fraction of measurements inside the interval.
    pub inside_fraction: f64,
    /// Median |error| of the nearest bound (0 inside).
    pub median_error: f64,
    /// Largest |error|.
    pub max_error: f64,
}

/// Summarizes validation results.
pub fn summarize(v: &[ValidationResult]) -> ValidationSummary {
    let mut e: Vec<f64> = v.iter().map(|r| r.check.nearest_bound_error).collect();
    e.sort_by(f64::total_cmp);
    ValidationSummary {
        pairs: v.len(),
        inside_fraction: if v.is_empty() {
            0.0
        } else {
            v.iter().filter(|r| r.check.inside).count() as f64 / v.len() as f64
        },
        median_error: hpcscope_core::stats::median(&e).unwrap_or(0.0),
        max_error: e.last().copied().unwrap_or(0.0),
    }
}

/// The validation as a report section: the table of pairs and the chart of intervals
/// against measurements.
pub fn validation_section(v: &[ValidationResult], machine: &Machine) -> Section {
    let s = summarize(v);
    let rows: Vec<Vec<String>> = v
        .iter()
        .map(|r| {
            vec![
                r.workload.clone(),
                r.pair.clone(),
                num(r.source_gflops, 4),
                format!("[{}, {}]", num(r.interval.lo, 4), num(r.interval.hi, 4)),
                num(r.check.measured_gflops, 4),
                if r.check.inside {
                    "inside".into()
                } else {
                    format!("{:+.1} %", r.check.error * 100.0)
                },
            ]
        })
        .collect();
    let chart_rows: Vec<ValidationRow> = v
        .iter()
        .map(|r| ValidationRow {
            label: format!("{} {}", r.workload, r.pair),
            lo: r.interval.lo,
            hi: r.interval.hi,
            measured: r.check.measured_gflops,
        })
        .collect();
    Section {
        title: "Validation: projection across vector widths, measured here".into(),
        summary: format!(
            "On {}, the projection from one build to the other fell inside the interval for {:.0} % of {} pairs; the nearest bound was off by {:.1} % at the median and {:.1} % at most. (Error: 0 inside; otherwise (bound - measured) / measured.)",
            machine.name,
            s.inside_fraction * 100.0,
            s.pairs,
            s.median_error * 100.0,
            s.max_error * 100.0
        ),
        body_html: html_table(
            &[
                "workload",
                "pair",
                "source GFLOP/s",
                "projected GFLOP/s",
                "measured GFLOP/s",
                "result",
            ],
            &rows,
        ),
        svgs: vec![hpcscope_report::validation_svg(
            &chart_rows,
            "Projected interval and measured performance, SSE2 <-> AVX2 builds",
        )],
    }
}

/// Runs the validation protocol over `ws`.
pub fn validate_all(
    m: &Machine,
    ws: &[&Workload],
    builds: &[Builds],
    native_runs: u32,
    progress: &dyn Fn(&str),
) -> Result<Vec<ValidationResult>> {
    let mut out = Vec::new();
    for (w, b) in ws.iter().zip(builds) {
        let (Some(s), Some(a)) = (&b.sse2, &b.avx2) else {
            continue;
        };
        progress(&format!("validate {}: SSE2 and AVX2 builds", w.name));
        let ps = profile_of(m, w, s, native_runs)?;
        let pa = profile_of(m, w, a, native_runs)?;
        out.extend(validate_pair(m, w.name, "SSE2 -> AVX2", &ps, &pa)?);
        out.extend(validate_pair(m, w.name, "AVX2 -> SSE2", &pa, &ps)?);
    }
    Ok(out)
}

/// What `validate` prints: one line per pair, then the summary.
pub fn validation_text(v: &[ValidationResult], s: &ValidationSummary) -> String {
    let mut text = String::new();
    for r in v {
        text.push_str(&format!(
            "{:<11} {:<13} projected [{}, {}] GFLOP/s, measured {} -> {}\n",
            r.workload,
            r.pair,
            num(r.interval.lo, 4),
            num(r.interval.hi, 4),
            num(r.check.measured_gflops, 4),
            if r.check.inside {
                "inside".to_string()
            } else {
                format!("outside, nearest bound {:+.1} %", r.check.error * 100.0)
            }
        ));
    }
    text.push_str(&format!(
        "summary: {} pairs, {:.0} % inside, median error {:.1} %, max error {:.1} %\n",
        s.pairs,
        s.inside_fraction * 100.0,
        s.median_error * 100.0,
        s.max_error * 100.0
    ));
    text
}
