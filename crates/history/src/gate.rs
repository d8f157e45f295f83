//! Two-sample gate ("are these runs worse than the baseline?"), label-free multi-metric
//! anomaly scores, and the explanation of a change by the metrics that moved with it.
//!
//! The gate follows asv (Mann-Whitney U) and criterion (bootstrap confidence interval of the
//! relative change against a noise threshold), plus the modified z-score rule of the seed 004
//! design (research note §1.7 and §6.10): a single new run cannot reach significance with a
//! rank test, but it can be many robust standard deviations away from the baseline.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::{
    ConfidenceInterval, MannWhitney, RobustScale, bootstrap_ratio_of_medians, mann_whitney_u,
    median,
};

/// Which way is worse for a metric.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Time, cycles, bytes moved, misses: larger is worse.
    LowerIsBetter,
    /// Bandwidth, FLOP rate, throughput, IPC: smaller is worse.
    HigherIsBetter,
}

impl Direction {
    /// Guesses the direction from the metric name and unit: rates and throughputs
    /// (`gbs`, `gflops`, `per_s`, `/s`, `bandwidth`, `throughput`, `ipc`, `speedup`,
    /// `efficiency`) are higher-is-better; everything else (times, counts) lower-is-better.
    pub fn infer(name: &str, unit: &str) -> Direction {
        let n = name.to_ascii_lowercase();
        let u = unit.to_ascii_lowercase();
        let higher = [
            "gbs",
            "mbs",
            "gflops",
            "mflops",
            "flops",
            "per_s",
            "_rate",
            "bandwidth",
            "throughput",
            "ipc",
            "speedup",
            "efficiency",
            "ops_s",
            "score",
        ];
        if higher.iter().any(|h| n.contains(h))
            || u.ends_with("/s")
            || u.contains("flop")
            || u.contains("ops")
        {
            Direction::HigherIsBetter
        } else {
            Direction::LowerIsBetter
        }
    }

    /// +1 when larger is worse, −1 when smaller is worse.
    pub fn worse_sign(self) -> f64 {
        match self {
            Direction::LowerIsBetter => 1.0,
            Direction::HigherIsBetter => -1.0,
        }
    }
}

/// Thresholds of the gate.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GateOptions {
    /// Significance level of the one-sided Mann-Whitney test.
    pub alpha: f64,
    /// Practical floor: the relative change of the median must exceed this (0.02 = 2%).
    pub min_effect: f64,
    /// Modified z-score threshold (Iglewicz and Hoaglin's 3.5).
    pub z_threshold: f64,
    /// Bootstrap resamples for the confidence interval of the ratio of medians.
    pub resamples: usize,
    /// Confidence level of that interval.
    pub level: f64,
    /// Seed of the bootstrap.
    pub seed: u64,
}

impl Default for GateOptions {
    fn default() -> Self {
        GateOptions {
            alpha: 0.01,
            min_effect: 0.02,
            z_threshold: 3.5,
            resamples: 5000,
            level: 0.95,
            seed: 0,
        }
    }
}

/// Outcome of the gate for one metric.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly and materially worse.
    Regression,
    /// Significantly and materially better.
    Improvement,
    /// Within noise or below the practical floor.
    Unchanged,
    /// Too few runs to decide (fewer than 3 baseline runs or no candidate).
    Insufficient,
}

impl Verdict {
    /// Lower-case label.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::Unchanged => "unchanged",
            Verdict::Insufficient => "insufficient data",
        }
    }
}

/// The gate's result for one metric.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    /// Metric name.
    pub metric: String,
    /// Unit.
    pub unit: String,
    /// Which way is worse.
    pub direction: Direction,
    /// Baseline runs.
    pub n_baseline: usize,
    /// Candidate runs.
    pub n_candidate: usize,
    /// Median of the baseline.
    pub baseline_median: f64,
    /// Median of the candidate runs.
    pub candidate_median: f64,
    /// `candidate_median / baseline_median − 1`; null when the baseline median is 0 and the
    /// candidate median is not (no relative change of 0 exists), or with too few runs.
    pub rel_change: Option<f64>,
    /// Modified z-score of the candidate median against the baseline; null when the
    /// baseline is constant (no spread to measure against, see [`RobustScale::z`]) or with
    /// too few runs.
    pub robust_z: Option<f64>,
    /// Mann-Whitney test (when both samples have at least 2 runs).
    pub mann_whitney: Option<MannWhitney>,
    /// One-sided p-value in the worse direction.
    pub p_worse: Option<f64>,
    /// Bootstrap confidence interval of `median(candidate) / median(baseline)`.
    pub ratio_ci: Option<ConfidenceInterval>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in one sentence.
    pub reason: String,
    /// The step against the noise and the baseline's trend (at least 3 baseline runs).
    pub context: Option<StepContext>,
}

/// What a change between baseline and candidate runs looks like against the baseline's own
/// behaviour: the means, the step against the noise, and whether the baseline drifts.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepContext {
    /// Mean of the baseline runs.
    pub baseline_mean: f64,
    /// Mean of the candidate runs.
    pub candidate_mean: f64,
    /// The baseline's level where the candidates are: its mean, or, with a trend, its trend
    /// line extrapolated to the candidates.
    pub expected: f64,
    /// `candidate_mean − expected`, in the metric's unit.
    pub step: f64,
    /// Noise standard deviation of the baseline around its level (or trend line).
    pub noise_sd: f64,
    /// `step / noise_sd` (0 when the noise is 0).
    pub step_over_noise: f64,
    /// Slope of the baseline per run, when significant (p < 0.01 with an autocorrelation-
    /// corrected standard error); `None` without a trend.
    pub trend_per_run: Option<f64>,
    /// p-value of that slope.
    pub trend_pvalue: f64,
    /// One sentence.
    pub summary: String,
}

/// The step of `candidate` against `baseline` (runs in time order) and the baseline's trend:
/// an ordinary least-squares line over the baseline runs, kept when its slope is significant
/// (two-sided p < 0.01, standard error inflated by the residuals' lag-1 autocorrelation);
/// `None` with fewer than 3 baseline runs or no candidate.
pub fn step_context(baseline: &[f64], candidate: &[f64], unit: &str) -> Option<StepContext> {
    let nb = baseline.len();
    if nb < 3 || candidate.is_empty() {
        return None;
    }
    let bm = crate::stats::mean(baseline);
    let cm = crate::stats::mean(candidate);
    let tb = (nb as f64 - 1.0) / 2.0;
    let sxx: f64 = (0..nb).map(|i| (i as f64 - tb).powi(2)).sum();
    let sxy: f64 = baseline
        .iter()
        .enumerate()
        .map(|(i, y)| (i as f64 - tb) * (y - bm))
        .sum();
    let slope = sxy / sxx;
    let resid: Vec<f64> = baseline
        .iter()
        .enumerate()
        .map(|(i, y)| y - bm - slope * (i as f64 - tb))
        .collect();
    let rss: f64 = resid.iter().map(|e| e * e).sum();
    let df = nb as f64 - 2.0;
    let rho = if rss > 0.0 {
        (resid.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / rss).clamp(0.0, 0.95)
    } else {
        0.0
    };
    let infl = (1.0 + rho) / (1.0 - rho);
    let (trend_p, trend) = if df >= 1.0 && rss > 0.0 {
        let se = (rss / df / sxx * infl).sqrt();
        let p = crate::stats::student_t_two_sided_p(slope / se, (nb as f64 / infl - 2.0).max(1.0));
        (p, (p < 0.01).then_some(slope))
    } else if slope != 0.0 && df >= 1.0 {
        (0.0, Some(slope))
    } else {
        (1.0, None)
    };
    let nc = candidate.len() as f64;
    let tc = nb as f64 + (nc - 1.0) / 2.0;
    let expected = match trend {
        Some(b) => bm + b * (tc - tb),
        None => bm,
    };
    let noise = match trend {
        Some(_) => (rss / df.max(1.0)).sqrt(),
        None => crate::stats::std_dev(baseline),
    };
    let step = cm - expected;
    let son = if noise > 0.0 { step / noise } else { 0.0 };
    let u = if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit}")
    };
    let num = |x: f64| {
        crate::robust::fmt_sig(x)
            .trim_start_matches('+')
            .to_string()
    };
    let summary = format!(
        "mean {}{u} over {nb} baseline run(s), {}{u} over {} candidate(s): a step of {}{u} = {:+.1} noise sd (noise {}{u}); {}",
        num(bm),
        num(cm),
        candidate.len(),
        crate::robust::fmt_sig(step),
        son,
        num(noise),
        match trend {
            Some(b) => format!(
                "the baseline drifts by {}{u}/run (p = {trend_p:.1e}), so the step is measured against its trend line (expected {}{u})",
                crate::robust::fmt_sig(b),
                num(expected)
            ),
            None => "no trend in the baseline".to_string(),
        }
    );
    Some(StepContext {
        baseline_mean: bm,
        candidate_mean: cm,
        expected,
        step,
        noise_sd: noise,
        step_over_noise: son,
        trend_per_run: trend,
        trend_pvalue: trend_p,
        summary,
    })
}

/// Compares `candidate` runs to `baseline` runs of one metric.
///
/// Let `r = median(c)/median(b) − 1`, signed so that positive is worse, and `M` the modified
/// z-score of `median(c)` against the baseline, signed the same way. The verdict is
/// *regression* when `r > min_effect` **and** the change is significant by either
/// * the rank test: at least 2 runs on each side, one-sided Mann-Whitney `p < alpha` and the
///   bootstrap interval of the ratio of medians entirely on the worse side of 1; or
/// * the robust score: `M > z_threshold` (this is what decides for a single new run).
///
/// *Improvement* is the mirror image; anything else is *unchanged*.
pub fn gate(
    metric: &str,
    unit: &str,
    baseline: &[f64],
    candidate: &[f64],
    direction: Direction,
    opts: &GateOptions,
) -> GateResult {
    let mut res = GateResult {
        metric: metric.to_string(),
        unit: unit.to_string(),
        direction,
        n_baseline: baseline.len(),
        n_candidate: candidate.len(),
        baseline_median: median(baseline),
        candidate_median: median(candidate),
        rel_change: None,
        robust_z: None,
        mann_whitney: None,
        p_worse: None,
        ratio_ci: None,
        verdict: Verdict::Insufficient,
        reason: String::new(),
        context: step_context(baseline, candidate, unit),
    };
    if baseline.len() < 3 || candidate.is_empty() {
        res.reason = format!(
            "{} baseline and {} candidate runs: need at least 3 and 1",
            baseline.len(),
            candidate.len()
        );
        return res;
    }
    let scale = RobustScale::of(baseline);
    res.rel_change = rel_change(res.baseline_median, res.candidate_median);
    res.robust_z = scale.z(res.candidate_median);
    let s = direction.worse_sign();
    if baseline.len() >= 2 && candidate.len() >= 2 {
        res.mann_whitney = mann_whitney_u(candidate, baseline);
        res.p_worse = res.mann_whitney.map(|m| match direction {
            Direction::LowerIsBetter => m.p_greater,
            Direction::HigherIsBetter => m.p_less,
        });
    }
    res.ratio_ci =
        bootstrap_ratio_of_medians(candidate, baseline, opts.resamples, opts.level, opts.seed);
    let judge = |sign: f64| -> (bool, String) {
        // `sign` = +1 tests "worse", −1 tests "better".
        let t = s * sign;
        let departure = t * (res.candidate_median - res.baseline_median);
        let p = if sign > 0.0 {
            res.p_worse
        } else {
            res.mann_whitney.map(|m| match direction {
                Direction::LowerIsBetter => m.p_less,
                Direction::HigherIsBetter => m.p_greater,
            })
        };
        let ci_clear = res.ratio_ci.is_some_and(|ci| {
            // On the tested side of 1 entirely.
            if s * sign > 0.0 {
                ci.lower > 1.0
            } else {
                ci.upper < 1.0
            }
        });
        let rank = p.is_some_and(|p| p < opts.alpha) && ci_clear;
        // A constant baseline has no noise: any departure from it is beyond the noise.
        let robust = match res.robust_z {
            Some(z) => t * z > opts.z_threshold,
            None => departure > 0.0,
        };
        let material = beyond_floor(res.rel_change.map(|r| t * r), departure, opts.min_effect);
        let mw = match p {
            Some(p) => format!(", Mann-Whitney p = {p:.2e} (alpha {})", opts.alpha),
            None => String::new(),
        };
        let why = match res.robust_z {
            Some(z) => format!(
                "median {} (floor {:.2}%), modified z {z:+.2} (threshold {:.1}){mw}",
                change_text(res.rel_change, res.baseline_median, res.candidate_median),
                opts.min_effect * 100.0,
                opts.z_threshold,
            ),
            None => format!(
                "{}; a baseline without spread has no z-score, so any departure beyond the floor ({:.2}% of the baseline value; any non-zero value when it is 0) is a change{mw}",
                constant_text(res.n_baseline, res.baseline_median, res.candidate_median),
                opts.min_effect * 100.0,
            ),
        };
        (material && (rank || robust), why)
    };
    let (worse, why) = judge(1.0);
    if worse {
        res.verdict = Verdict::Regression;
        res.reason = why;
        return res;
    }
    let (better, why_b) = judge(-1.0);
    if better {
        res.verdict = Verdict::Improvement;
        res.reason = why_b;
    } else {
        res.verdict = Verdict::Unchanged;
        res.reason = why;
    }
    res
}

/// `to / from − 1`: `Some(0)` when both are 0, `None` when only `from` is (a move away from
/// 0 has no relative size).
pub fn rel_change(from: f64, to: f64) -> Option<f64> {
    if from != 0.0 {
        Some(to / from - 1.0)
    } else if to == 0.0 {
        Some(0.0)
    } else {
        None
    }
}

/// The practical floor: a (signed) relative change above `min_effect`; without a relative
/// change (the baseline is 0), any `departure` above 0.
fn beyond_floor(rel: Option<f64>, departure: f64, min_effect: f64) -> bool {
    match rel {
        Some(r) => r > min_effect,
        None => departure > 0.0,
    }
}

/// A change for the reader: `+2.23%`, or `0 -> 0.001` when it has no relative size.
pub fn change_text(rel: Option<f64>, from: f64, to: f64) -> String {
    match rel {
        Some(r) => format!("{:+.2}%", r * 100.0),
        None => format!("{} -> {}", fmt_num(from), fmt_num(to)),
    }
}

/// `baseline constant at 0 over 5 runs; now 0.001`.
fn constant_text(n: usize, baseline: f64, now: f64) -> String {
    format!(
        "baseline constant at {} over {n} runs; now {}",
        fmt_num(baseline),
        fmt_num(now)
    )
}

use hpcscope_report::fmt::plain as fmt_num;

/// One metric's score in an anomaly report.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricScore {
    /// Metric name.
    pub metric: String,
    /// The run's value.
    pub value: f64,
    /// Baseline median.
    pub baseline_median: f64,
    /// Baseline MAD (unscaled).
    pub baseline_mad: f64,
    /// Modified z-score; null when the baseline is constant (no spread).
    pub z: Option<f64>,
    /// Relative change against the baseline median; null when that median is 0 and the
    /// value is not.
    pub rel_change: Option<f64>,
    /// `|z| > threshold`; with a constant baseline (no z-score), the value departs from it
    /// beyond the floor: by more than `min_effect` of the baseline value, or by anything when
    /// the baseline is 0 (the rule of [`gate`]).
    pub flagged: bool,
}

/// Label-free anomaly scores of one run against a baseline of runs, over every metric the run
/// and at least 3 baseline runs share.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnomalyReport {
    /// Largest |modified z| over the metrics that have one (0 when none has).
    pub max_abs_z: f64,
    /// Root mean square of the modified z-scores (over the metrics that have one).
    pub rms_z: f64,
    /// Per metric, most anomalous first.
    pub metrics: Vec<MetricScore>,
}

/// Scores `run` (metric → value) against `baseline` runs with modified z-scores
/// (median/MAD per metric, threshold `z_threshold`). A metric whose baseline is constant has
/// no z-score; it is flagged when it departs from the baseline value by more than
/// `min_effect` of it (by anything when the baseline is 0), as [`gate`] decides.
pub fn anomaly_scores(
    baseline: &[BTreeMap<String, f64>],
    run: &BTreeMap<String, f64>,
    z_threshold: f64,
    min_effect: f64,
) -> AnomalyReport {
    let mut metrics = Vec::new();
    for (name, &value) in run {
        let b: Vec<f64> = baseline
            .iter()
            .filter_map(|m| m.get(name).copied())
            .collect();
        if b.len() < 3 {
            continue;
        }
        let s = RobustScale::of(&b);
        let z = s.z(value);
        let rel_change = rel_change(s.median, value);
        let flagged = match z {
            Some(z) => z.abs() > z_threshold,
            None => {
                let d = (value - s.median).abs();
                beyond_floor(rel_change.map(f64::abs), d, min_effect)
            }
        };
        metrics.push(MetricScore {
            metric: name.clone(),
            value,
            baseline_median: s.median,
            baseline_mad: s.mad,
            z,
            rel_change,
            flagged,
        });
    }
    // Most anomalous first: a flagged departure from a constant baseline before any z-score.
    let rank = |m: &MetricScore| match m.z {
        Some(z) => z.abs(),
        None if m.flagged => f64::INFINITY,
        None => 0.0,
    };
    metrics.sort_by(|a, b| rank(b).total_cmp(&rank(a)).then(a.metric.cmp(&b.metric)));
    let finite: Vec<f64> = metrics.iter().filter_map(|m| m.z).collect();
    AnomalyReport {
        max_abs_z: finite.iter().map(|z| z.abs()).fold(0.0, f64::max),
        rms_z: if finite.is_empty() {
            0.0
        } else {
            (finite.iter().map(|z| z * z).sum::<f64>() / finite.len() as f64).sqrt()
        },
        metrics,
    }
}

/// How one metric moved between a baseline and a candidate set of runs.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Movement {
    /// Metric name.
    pub metric: String,
    /// Relative change of the median (null from a baseline median of 0).
    pub rel_change: Option<f64>,
    /// Modified z-score of the candidate median (null against a constant baseline).
    pub robust_z: Option<f64>,
    /// Whether it changed (gate verdict regression or improvement, with the explanation's
    /// lower floor).
    pub changed: bool,
}

/// The metrics that moved with a change of a primary metric.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// The primary metric's movement.
    pub primary: Movement,
    /// Other metrics that changed, largest |z| first.
    pub moved: Vec<Movement>,
    /// Other metrics that did not change.
    pub unchanged: Vec<String>,
    /// One line: `time_s +8.0%, l2_bytes +40.0%, instructions unchanged`.
    pub summary: String,
}

/// Explains a change of `primary` between `baseline` and `candidate` runs by every other
/// metric both sides have (at least 3 baseline runs): each metric goes through [`gate`] with
/// a practical floor of `min_effect` (default use: 1%), and those that changed are listed
/// by decreasing |z|.
pub fn explain(
    primary: &str,
    baseline: &[BTreeMap<String, f64>],
    candidate: &[BTreeMap<String, f64>],
    min_effect: f64,
) -> Explanation {
    let opts = GateOptions {
        min_effect,
        resamples: 1000,
        ..GateOptions::default()
    };
    let mut names: Vec<&String> = candidate.iter().flat_map(|m| m.keys()).collect();
    names.sort();
    names.dedup();
    let movement = |name: &str| -> Option<(Movement, String)> {
        let b: Vec<f64> = baseline
            .iter()
            .filter_map(|m| m.get(name).copied())
            .collect();
        let c: Vec<f64> = candidate
            .iter()
            .filter_map(|m| m.get(name).copied())
            .collect();
        if b.len() < 3 || c.is_empty() {
            return None;
        }
        // Direction does not matter for "did it move": test both ways.
        let g = gate(name, "", &b, &c, Direction::LowerIsBetter, &opts);
        Some((
            Movement {
                metric: name.to_string(),
                rel_change: g.rel_change,
                robust_z: g.robust_z,
                changed: matches!(g.verdict, Verdict::Regression | Verdict::Improvement),
            },
            match g.rel_change {
                Some(r) => format!("{:+.1}%", r * 100.0),
                None => change_text(None, g.baseline_median, g.candidate_median),
            },
        ))
    };
    let (primary_m, primary_text) = movement(primary).unwrap_or((
        Movement {
            metric: primary.to_string(),
            rel_change: None,
            robust_z: None,
            changed: false,
        },
        "not measured".to_string(),
    ));
    let mut moved = Vec::new();
    let mut unchanged = Vec::new();
    for n in names {
        if n == primary {
            continue;
        }
        if let Some((m, text)) = movement(n) {
            if m.changed {
                moved.push((m, text));
            } else {
                unchanged.push(m.metric);
            }
        }
    }
    // Largest |z| first; a change from a constant baseline (no z) before any.
    let rank = |m: &Movement| m.robust_z.map_or(f64::INFINITY, f64::abs);
    moved.sort_by(|(a, _), (b, _)| rank(b).total_cmp(&rank(a)).then(a.metric.cmp(&b.metric)));
    let mut parts = vec![format!("{} {primary_text}", primary_m.metric)];
    parts.extend(moved.iter().map(|(m, t)| format!("{} {t}", m.metric)));
    match unchanged.len() {
        0 => {}
        1..=3 => parts.push(format!("{} unchanged", unchanged.join(", "))),
        n => parts.push(format!(
            "{}, … ({n} metrics) unchanged",
            unchanged[..3].join(", ")
        )),
    }
    Explanation {
        summary: parts.join(", "),
        primary: primary_m,
        moved: moved.into_iter().map(|(m, _)| m).collect(),
        unchanged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 004, Table 3.2, "Time Ratio" column.
    const TABLE_3_2: [f64; 16] = [
        1.006, 1.003, 0.998, 1.011, 1.009, 0.994, 1.005, 1.009, 0.998, 1.015, 0.999, 1.009, 1.006,
        1.013, 1.009, 1.009,
    ];

    #[test]
    fn table_3_2_fixture_regression_and_noise() {
        // Research note §6.10: with Table 3.2 as the noise baseline, a run at ratio 1.030 is a
        // regression (M = 5.059, +2.23%), and 1.020 (M = 2.810), 1.015 and 0.994 are not.
        let o = GateOptions::default();
        let d = Direction::LowerIsBetter;
        let r = gate("time_ratio", "", &TABLE_3_2, &[1.030], d, &o);
        assert_eq!(r.verdict, Verdict::Regression, "{}", r.reason);
        assert!((r.robust_z.unwrap() - 5.059).abs() < 1e-3);
        assert!((r.rel_change.unwrap() - 0.02233).abs() < 1e-4);
        for x in [1.020, 1.015, 0.994] {
            let r = gate("time_ratio", "", &TABLE_3_2, &[x], d, &o);
            assert_eq!(r.verdict, Verdict::Unchanged, "{x}: {}", r.reason);
        }
        // No baseline point is flagged against the baseline itself (max |M| = 3.035).
        for &x in &TABLE_3_2 {
            let r = gate("time_ratio", "", &TABLE_3_2, &[x], d, &o);
            assert_eq!(r.verdict, Verdict::Unchanged);
        }
    }

    #[test]
    fn table_3_2_multivariate_warning() {
        // §6.10 multivariate extension: baseline medians (1.0075, 12000, 300), MADs
        // (0.003, 400, 20); the run (1.012, 14500, 305) passes on time and is flagged on
        // syscalls/s (M = 4.216).
        let mut base = Vec::new();
        for (i, dv) in [-2.0, -1.0, -1.0, 0.0, 0.0, 1.0, 1.0, 2.0, 3.0]
            .iter()
            .enumerate()
        {
            let _ = i;
            let mut m = BTreeMap::new();
            // Symmetric offsets around the medians giving MAD = 1 step.
            m.insert("time_ratio".to_string(), 1.0075 + 0.003 * dv);
            m.insert("syscalls_per_s".to_string(), 12_000.0 + 400.0 * dv);
            m.insert("page_faults_per_s".to_string(), 300.0 + 20.0 * dv);
            base.push(m);
        }
        let mut run = BTreeMap::new();
        run.insert("time_ratio".to_string(), 1.012);
        run.insert("syscalls_per_s".to_string(), 14_500.0);
        run.insert("page_faults_per_s".to_string(), 305.0);
        let rep = anomaly_scores(&base, &run, 3.5, 0.02);
        assert_eq!(rep.metrics[0].metric, "syscalls_per_s");
        assert!((rep.metrics[0].z.unwrap() - 4.216).abs() < 1e-3, "{rep:?}");
        assert!(rep.metrics[0].flagged);
        let t = rep
            .metrics
            .iter()
            .find(|m| m.metric == "time_ratio")
            .unwrap();
        assert!((t.z.unwrap() - 1.012).abs() < 1e-3 && !t.flagged);
    }

    #[test]
    fn gate_with_many_runs_uses_the_rank_test() {
        let b: Vec<f64> = (0..20).map(|i| 100.0 + (i % 5) as f64 * 0.4).collect();
        let c: Vec<f64> = b.iter().map(|x| x * 1.05).collect();
        let r = gate(
            "time_s",
            "s",
            &b,
            &c,
            Direction::LowerIsBetter,
            &GateOptions::default(),
        );
        assert_eq!(r.verdict, Verdict::Regression);
        assert!(r.p_worse.unwrap() < 1e-4);
        assert!(r.ratio_ci.unwrap().lower > 1.0);
        // The same change on a bandwidth is an improvement.
        let r = gate(
            "triad_gbs",
            "GB/s",
            &b,
            &c,
            Direction::HigherIsBetter,
            &GateOptions::default(),
        );
        assert_eq!(r.verdict, Verdict::Improvement);
        // 1% is below the 2% floor.
        let c1: Vec<f64> = b.iter().map(|x| x * 1.01).collect();
        let r = gate(
            "time_s",
            "s",
            &b,
            &c1,
            Direction::LowerIsBetter,
            &GateOptions::default(),
        );
        assert_eq!(r.verdict, Verdict::Unchanged);
        let r = gate(
            "time_s",
            "s",
            &b[..2],
            &c1,
            Direction::LowerIsBetter,
            &GateOptions::default(),
        );
        assert_eq!(r.verdict, Verdict::Insufficient);
    }

    #[test]
    fn explanation_names_the_metrics_that_moved() {
        let mk = |t: f64, l2: f64, ins: f64| {
            let mut m = BTreeMap::new();
            m.insert("time_s".to_string(), t);
            m.insert("l2_bytes".to_string(), l2);
            m.insert("instructions".to_string(), ins);
            m
        };
        let jit = [0.0, 0.002, -0.003, 0.001, -0.001, 0.003, -0.002, 0.0];
        let base: Vec<_> = jit
            .iter()
            .map(|j| mk(1.0 + j, 1e9 * (1.0 + j), 5e9 * (1.0 + j / 10.0)))
            .collect();
        let cand: Vec<_> = jit
            .iter()
            .map(|j| mk(1.08 + j, 1.4e9 * (1.0 + j), 5e9 * (1.0 - j / 10.0)))
            .collect();
        let e = explain("time_s", &base, &cand, 0.01);
        assert_eq!(
            e.summary,
            "time_s +8.0%, l2_bytes +40.0%, instructions unchanged"
        );
    }

    #[test]
    fn step_context_against_noise_and_trend() {
        // Flat baseline 10 ± 0.1, candidates at 10.5: a step of 5 noise sd, no trend.
        let b: Vec<f64> = (0..20).map(|i| 10.0 + [0.1, -0.1][i % 2]).collect();
        let c = step_context(&b, &[10.5, 10.5], "s").unwrap();
        assert!(c.trend_per_run.is_none(), "{c:?}");
        assert!((c.step - 0.5).abs() < 1e-12);
        assert!((c.step_over_noise - 0.5 / crate::stats::std_dev(&b)).abs() < 1e-9);
        assert!(c.summary.contains("no trend"), "{}", c.summary);
        // A baseline drifting +0.1/run: the candidate on the trend line is no step.
        let b: Vec<f64> = (0..20)
            .map(|i| 10.0 + 0.1 * i as f64 + [0.02, -0.02, 0.0][i % 3])
            .collect();
        let c = step_context(&b, &[12.0], "s").unwrap();
        assert!((c.trend_per_run.unwrap() - 0.1).abs() < 0.01, "{c:?}");
        assert!((c.expected - 12.0).abs() < 0.05, "{c:?}");
        assert!(c.step.abs() < 0.05, "{c:?}");
        assert!(c.summary.contains("drifts"), "{}", c.summary);
        assert!(step_context(&[1.0, 2.0], &[3.0], "").is_none());
    }

    #[test]
    fn direction_inference() {
        assert_eq!(Direction::infer("time_s", "s"), Direction::LowerIsBetter);
        assert_eq!(Direction::infer("triad_gbs", ""), Direction::HigherIsBetter);
        assert_eq!(Direction::infer("x", "GB/s"), Direction::HigherIsBetter);
        assert_eq!(Direction::infer("l2_bytes", "B"), Direction::LowerIsBetter);
    }
}
