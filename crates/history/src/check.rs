//! `regress check`: compares the newest runs to the baseline before them, on the same
//! machine fingerprint unless asked otherwise, and renders the result as Markdown, JSON or
//! JUnit XML for CI.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::changepoint::{Method, detect};
use crate::error::{HistoryError, Result};
use crate::gate::{
    AnomalyReport, Direction, Explanation, GateOptions, GateResult, Verdict, anomaly_scores,
    change_text, explain, gate,
};
use crate::stats::benjamini_hochberg;

/// The direction of each metric named: `higher` better, or `lower` (named in both: lower).
pub fn directions(higher: &[String], lower: &[String]) -> BTreeMap<String, Direction> {
    let mut d = BTreeMap::new();
    for m in higher {
        d.insert(m.clone(), Direction::HigherIsBetter);
    }
    for m in lower {
        d.insert(m.clone(), Direction::LowerIsBetter);
    }
    d
}
use crate::store::{Filter, Store, StoredRun};

/// Options of [`check`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckOptions {
    /// Metrics to gate on. Empty: `time_s` when the newest run has it, else all its metrics.
    pub metrics: Vec<String>,
    /// The newest `candidates` runs are the candidate.
    pub candidates: usize,
    /// At most this many runs before the candidates form the baseline.
    pub baseline: usize,
    /// Which runs to consider (command, tags, commit...).
    pub filter: Filter,
    /// Compare runs across machine fingerprints.
    pub mix_machines: bool,
    /// Gate thresholds.
    pub gate: GateOptions,
    /// Direction overrides, by metric name (else [`Direction::infer`]).
    pub directions: BTreeMap<String, Direction>,
    /// Change-point detection over each gated metric's history (default: the robust
    /// detector).
    pub change_points: Option<Method>,
    /// False-discovery rate across the gated metrics' histories: a metric's change points
    /// are reported only when its series p-value survives Benjamini-Hochberg at this level
    /// (1 = no control).
    pub fdr: f64,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            metrics: Vec::new(),
            candidates: 1,
            baseline: 30,
            filter: Filter::default(),
            mix_machines: false,
            gate: GateOptions::default(),
            directions: BTreeMap::new(),
            change_points: Some(Method::default()),
            fdr: 0.05,
        }
    }
}

/// A change of machine fingerprint seen in the history.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineChange {
    /// Fingerprint id before.
    pub from: String,
    /// Fingerprint id after (the candidates').
    pub to: String,
    /// Last run on the previous machine.
    pub last_run_before: i64,
    /// Fields that differ: (field, before, after).
    pub fields: Vec<(String, String, String)>,
}

/// A change point in a metric's history, tied to runs.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryChange {
    /// Metric.
    pub metric: String,
    /// First run after the change.
    pub run_id: i64,
    /// Its git commit, if known.
    pub git_commit: Option<String>,
    /// Relative change of the level.
    pub rel_change: f64,
    /// p-value of the step at this position.
    pub pvalue: f64,
    /// Whether the change is in the worse direction.
    pub worse: bool,
    /// Mean of the segment before (from the previous change point).
    pub mean_before: f64,
    /// Mean of the segment after (up to the next change point).
    pub mean_after: f64,
    /// Step of the level at the change (against the trend when there is one), metric's unit.
    pub step: f64,
    /// Noise standard deviation around the level.
    pub noise_sd: f64,
    /// `step / noise_sd`.
    pub step_over_noise: f64,
    /// A trend was part of the model around the change.
    pub trend: bool,
    /// The model in words: `no trend`, `trend +0.01/run`, ...
    pub model: String,
}

/// Result of [`check`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// The store.
    pub db: String,
    /// Fingerprint id of the candidates' machine.
    pub machine_id: String,
    /// Candidate run ids.
    pub candidate_runs: Vec<i64>,
    /// Baseline run ids.
    pub baseline_runs: Vec<i64>,
    /// Runs left out because they ran on another machine.
    pub other_machine_runs: usize,
    /// The machine changed just before the candidates.
    pub machine_change: Option<MachineChange>,
    /// Gate result per metric.
    pub results: Vec<GateResult>,
    /// The metrics that moved with the (first) regression, or with the primary metric.
    pub explanation: Option<Explanation>,
    /// Anomaly scores of the newest run against the baseline, all metrics.
    pub anomalies: Option<AnomalyReport>,
    /// Change points in the gated metrics' histories (same machine unless mixed).
    pub change_points: Vec<HistoryChange>,
    /// Notes for the reader (machine changes, missing data).
    pub notes: Vec<String>,
    /// At least one gated metric regressed.
    pub regression: bool,
}

fn values(runs: &[StoredRun]) -> Vec<BTreeMap<String, f64>> {
    runs.iter()
        .map(|r| {
            r.record
                .metrics
                .iter()
                .map(|m| (m.name.clone(), m.value))
                .collect()
        })
        .collect()
}

/// The change points of each checked metric's series over `pool` (`method`), those of the
/// series that false-discovery control (`fdr` < 1) withholds left out with a note.
fn history_changes(
    pool: &[StoredRun],
    results: &[GateResult],
    method: &Method,
    fdr: f64,
    notes: &mut Vec<String>,
) -> Vec<HistoryChange> {
    let mut change_points = Vec::new();
    let mut per_metric = Vec::new();
    for r in results {
        let pts: Vec<(&StoredRun, f64)> = pool
            .iter()
            .filter_map(|run| run.record.metric(&r.metric).map(|v| (run, v)))
            .collect();
        let xs: Vec<f64> = pts.iter().map(|p| p.1).collect();
        let det = detect(&xs, method);
        for n in &det.notes {
            notes.push(format!("change points of `{}`: {n}", r.metric));
        }
        per_metric.push((r, pts, det));
    }
    let pvals: Vec<f64> = per_metric.iter().map(|m| m.2.series_pvalue()).collect();
    let keep = if fdr < 1.0 {
        benjamini_hochberg(&pvals, fdr)
    } else {
        vec![true; pvals.len()]
    };
    let withheld: Vec<&str> = per_metric
        .iter()
        .zip(&keep)
        .filter(|(m, k)| !**k && !m.2.changes.is_empty())
        .map(|(m, _)| m.0.metric.as_str())
        .collect();
    if !withheld.is_empty() {
        notes.push(format!(
            "change points of {} withheld by false-discovery control across the {} metrics checked (Benjamini-Hochberg, q = {})",
            withheld
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", "),
            per_metric.len(),
            fdr
        ));
    }
    for ((r, pts, det), k) in per_metric.iter().zip(&keep) {
        if !k {
            continue;
        }
        for cp in &det.changes {
            let run = pts[cp.index].0;
            change_points.push(HistoryChange {
                metric: r.metric.clone(),
                run_id: run.id,
                git_commit: run.record.git.as_ref().map(|g| g.commit.clone()),
                rel_change: cp.rel_change,
                pvalue: cp.pvalue,
                worse: cp.step * r.direction.worse_sign() > 0.0,
                mean_before: cp.before.mean,
                mean_after: cp.after.mean,
                step: cp.step,
                noise_sd: cp.noise_sd,
                step_over_noise: cp.step_over_noise,
                trend: cp.model.has_trend(),
                model: cp.model.describe(),
            });
        }
    }
    change_points
}

/// Compares the newest runs to the baseline (see [`CheckOptions`]).
pub fn check(store: &Store, opts: &CheckOptions) -> Result<CheckReport> {
    let mut all = store.runs(&opts.filter)?;
    // A run whose command failed measured something else: leave it out.
    let before_failed = all.len();
    all.retain(|r| matches!(r.record.exit_status, Some(0) | None));
    let failed = before_failed - all.len();
    let Some(newest) = all.last() else {
        return Err(HistoryError::Insufficient(format!(
            "{}: no run matches the filter; record runs with `hpcscope record -- CMD`",
            store.path().display()
        )));
    };
    let machine = newest.machine_id.clone();
    let pool: Vec<StoredRun> = if opts.mix_machines {
        all.clone()
    } else {
        all.iter()
            .filter(|r| r.machine_id == machine)
            .cloned()
            .collect()
    };
    let other = all.len() - pool.len();
    let k = opts.candidates.max(1).min(pool.len());
    let (before, cands) = pool.split_at(pool.len() - k);
    let base = &before[before.len().saturating_sub(opts.baseline)..];
    let mut notes = Vec::new();
    if failed > 0 {
        notes.push(format!(
            "{failed} run(s) whose command exited with a non-zero status left out"
        ));
    }
    // Machine change: the run just before the first candidate, in time, on another machine.
    let first_cand = cands[0].id;
    let pos = all.iter().position(|r| r.id == first_cand).unwrap_or(0);
    let machine_change = all[..pos]
        .last()
        .filter(|r| r.machine_id != machine)
        .map(|prev| MachineChange {
            from: prev.machine_id.clone(),
            to: machine.clone(),
            last_run_before: prev.id,
            fields: prev.record.fingerprint.diff(&cands[0].record.fingerprint),
        });
    if let Some(mc) = &machine_change {
        let what: Vec<String> = mc
            .fields
            .iter()
            .map(|(f, a, b)| format!("{f}: {a} -> {b}"))
            .collect();
        notes.push(format!(
            "the machine fingerprint changed after run #{} ({} -> {}{}){}",
            mc.last_run_before,
            mc.from,
            mc.to,
            if what.is_empty() {
                String::new()
            } else {
                format!("; {}", what.join(", "))
            },
            if opts.mix_machines {
                ""
            } else {
                "; runs on the other machine are not compared (use --mix-machines to compare them)"
            }
        ));
    }
    if other > 0 && !opts.mix_machines {
        notes.push(format!(
            "{other} run(s) on other machines left out of the comparison"
        ));
    }
    if base.is_empty() {
        notes.push("no baseline run on this machine yet: nothing to compare".into());
    }
    let base_v = values(base);
    let cand_v = values(cands);
    let newest_v = cand_v.last().cloned().unwrap_or_default();
    let metrics: Vec<String> = if !opts.metrics.is_empty() {
        opts.metrics.clone()
    } else if newest_v.contains_key("time_s") {
        vec!["time_s".into()]
    } else {
        newest_v.keys().cloned().collect()
    };
    let unit_of = |name: &str| {
        cands
            .iter()
            .rev()
            .flat_map(|r| r.record.metrics.iter())
            .find(|m| m.name == name)
            .map(|m| m.unit.clone())
            .unwrap_or_default()
    };
    let mut results = Vec::new();
    for (i, name) in metrics.iter().enumerate() {
        let b: Vec<f64> = base_v.iter().filter_map(|m| m.get(name).copied()).collect();
        let c: Vec<f64> = cand_v.iter().filter_map(|m| m.get(name).copied()).collect();
        if c.is_empty() {
            notes.push(format!(
                "metric `{name}` is not in the candidate runs (see `hpcscope history metrics`)"
            ));
        }
        let unit = unit_of(name);
        let dir = opts
            .directions
            .get(name)
            .copied()
            .unwrap_or_else(|| Direction::infer(name, &unit));
        let g = GateOptions {
            seed: opts.gate.seed.wrapping_add(i as u64),
            ..opts.gate
        };
        results.push(gate(name, &unit, &b, &c, dir, &g));
    }
    let regression = results.iter().any(|r| r.verdict == Verdict::Regression);
    let primary = results
        .iter()
        .find(|r| r.verdict == Verdict::Regression)
        .or(results.first())
        .map(|r| r.metric.clone());
    let explanation = match &primary {
        Some(p) if base_v.len() >= 3 => Some(explain(p, &base_v, &cand_v, 0.01)),
        _ => None,
    };
    let anomalies = (base_v.len() >= 3).then(|| {
        anomaly_scores(
            &base_v,
            &newest_v,
            opts.gate.z_threshold,
            opts.gate.min_effect,
        )
    });
    let change_points = match &opts.change_points {
        Some(method) => history_changes(&pool, &results, method, opts.fdr, &mut notes),
        None => Vec::new(),
    };
    Ok(CheckReport {
        db: store.path().display().to_string(),
        machine_id: machine,
        candidate_runs: cands.iter().map(|r| r.id).collect(),
        baseline_runs: base.iter().map(|r| r.id).collect(),
        other_machine_runs: other,
        machine_change,
        results,
        explanation,
        anomalies,
        change_points,
        notes,
        regression,
    })
}

use hpcscope_report::fmt::plain as fmt_num;

fn fmt_pct(x: Option<f64>) -> String {
    match x {
        Some(x) if x.is_finite() => format!("{:+.2}%", x * 100.0),
        _ => "–".into(),
    }
}

fn ids(v: &[i64]) -> String {
    match v {
        [] => "none".into(),
        [a] => format!("#{a}"),
        [a, .., b] => format!("#{a}…#{b}"),
    }
}

impl CheckReport {
    /// Markdown report (a heading, a table per section), for CI logs and PR comments.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        let status = if self.regression {
            "REGRESSION"
        } else {
            "no regression"
        };
        let _ = writeln!(s, "## hpcscope regress check: {status}\n");
        let _ = writeln!(
            s,
            "Machine `{}`; {} candidate run(s) ({}) against {} baseline run(s) ({}).\n",
            self.machine_id,
            self.candidate_runs.len(),
            ids(&self.candidate_runs),
            self.baseline_runs.len(),
            ids(&self.baseline_runs)
        );
        for n in &self.notes {
            let _ = writeln!(s, "> **Note:** {n}\n");
        }
        let _ = writeln!(
            s,
            "| metric | baseline median | candidate median | change | modified z | p (worse) | 95% CI of ratio | verdict |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---|---|");
        for r in &self.results {
            let unit = if r.unit.is_empty() {
                String::new()
            } else {
                format!(" {}", r.unit)
            };
            let _ = writeln!(
                s,
                "| `{}` | {}{unit} | {}{unit} | {} | {} | {} | {} | {} |",
                r.metric,
                fmt_num(r.baseline_median),
                fmt_num(r.candidate_median),
                if r.verdict == Verdict::Insufficient {
                    "–".into()
                } else {
                    change_text(r.rel_change, r.baseline_median, r.candidate_median)
                },
                match r.robust_z {
                    Some(z) => format!("{z:+.2}"),
                    None if r.verdict != Verdict::Insufficient => "none (constant baseline)".into(),
                    None => "–".into(),
                },
                r.p_worse.map(|p| format!("{p:.2e}")).unwrap_or("–".into()),
                r.ratio_ci
                    .map(|c| format!("[{:.4}, {:.4}]", c.lower, c.upper))
                    .unwrap_or("–".into()),
                if r.verdict == Verdict::Regression {
                    "**regression**".to_string()
                } else {
                    r.verdict.label().to_string()
                }
            );
        }
        for r in &self.results {
            if matches!(r.verdict, Verdict::Regression | Verdict::Improvement)
                && let Some(c) = &r.context
            {
                let _ = writeln!(s, "\n**`{}`:** {}.", r.metric, c.summary);
            }
        }
        if let Some(e) = &self.explanation {
            let _ = writeln!(s, "\n**What moved with it:** {}", e.summary);
        }
        if let Some(a) = &self.anomalies {
            let flagged: Vec<_> = a.metrics.iter().filter(|m| m.flagged).collect();
            let _ = writeln!(
                s,
                "\n**Anomaly score of the newest run:** max |z| = {:.2}, RMS z = {:.2}; {} of {} metrics beyond the threshold{}",
                a.max_abs_z,
                a.rms_z,
                flagged.len(),
                a.metrics.len(),
                if flagged.is_empty() {
                    ".".to_string()
                } else {
                    format!(
                        ": {}.",
                        flagged
                            .iter()
                            .take(8)
                            .map(|m| match m.z {
                                Some(z) => format!(
                                    "`{}` (z {z:+.1}, {})",
                                    m.metric,
                                    change_text(m.rel_change, m.baseline_median, m.value)
                                ),
                                None => format!(
                                    "`{}` (baseline constant at {}; now {})",
                                    m.metric,
                                    fmt_num(m.baseline_median),
                                    fmt_num(m.value)
                                ),
                            })
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            );
        }
        if !self.change_points.is_empty() {
            let _ = writeln!(s, "\n### Change points in the history\n");
            let _ = writeln!(
                s,
                "| metric | first run after | commit | mean before | mean after | step | step / noise | model | p-value | direction |"
            );
            let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---|---:|---|");
            for c in &self.change_points {
                let _ = writeln!(
                    s,
                    "| `{}` | #{} | {} | {} | {} | {} ({}) | {:+.1} | {} | {:.2e} | {} |",
                    c.metric,
                    c.run_id,
                    c.git_commit
                        .as_deref()
                        .map(|g| format!("`{}`", &g[..g.len().min(10)]))
                        .unwrap_or("–".into()),
                    fmt_num(c.mean_before),
                    fmt_num(c.mean_after),
                    fmt_num(c.step),
                    fmt_pct(Some(c.rel_change)),
                    c.step_over_noise,
                    c.model,
                    c.pvalue,
                    if c.worse { "worse" } else { "better" }
                );
            }
        }
        s
    }

    /// JUnit XML: one test case per gated metric, failed on a regression, skipped when there
    /// was not enough data.
    pub fn to_junit_xml(&self) -> String {
        let esc = |t: &str| {
            t.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
        };
        let failures = self
            .results
            .iter()
            .filter(|r| r.verdict == Verdict::Regression)
            .count();
        let skipped = self
            .results
            .iter()
            .filter(|r| r.verdict == Verdict::Insufficient)
            .count();
        let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            s,
            "<testsuites name=\"hpcscope regress check\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">",
            self.results.len()
        );
        let _ = writeln!(
            s,
            "  <testsuite name=\"hpcscope.regress.{}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\" errors=\"0\">",
            esc(&self.machine_id),
            self.results.len()
        );
        for r in &self.results {
            let _ = write!(
                s,
                "    <testcase classname=\"hpcscope.regress\" name=\"{}\">",
                esc(&r.metric)
            );
            match r.verdict {
                Verdict::Regression => {
                    let mut body = r.reason.clone();
                    if let Some(c) = &r.context {
                        body.push_str(&format!("\n{}", c.summary));
                    }
                    if let Some(e) = &self.explanation {
                        body.push_str(&format!("\nWhat moved with it: {}", e.summary));
                    }
                    let _ = write!(
                        s,
                        "\n      <failure message=\"{} regressed by {}\" type=\"regression\">{}</failure>\n    ",
                        esc(&r.metric),
                        change_text(r.rel_change, r.baseline_median, r.candidate_median),
                        esc(&body)
                    );
                }
                Verdict::Insufficient => {
                    let _ = write!(s, "\n      <skipped message=\"{}\"/>\n    ", esc(&r.reason));
                }
                _ => {
                    let _ = write!(
                        s,
                        "\n      <system-out>{}: {}</system-out>\n    ",
                        r.verdict.label(),
                        esc(&r.reason)
                    );
                }
            }
            s.push_str("</testcase>\n");
        }
        s.push_str("  </testsuite>\n</testsuites>\n");
        s
    }
}
