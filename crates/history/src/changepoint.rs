//! Change-point detection over a metric's history.
//!
//! * [`detect`] with [`Method::Robust`] (the default): level shifts against trends,
//!   seasonality, autocorrelated noise, outliers and quantized values (see [`crate::robust`]).
//! * [`e_divisive`]: E-divisive means (Matteson and James 2014) with the Student t-test
//!   significance step and the split/merge scheme of Hunter and Apache Otava (Fleming et al.,
//!   "Hunter: Using Change Point Detection to Hunt for Performance Regressions", ICPE'23).
//! * [`pelt`]: PELT (Killick, Fearnhead and Eckley 2012) with a normal mean-change cost and a
//!   BIC penalty, as a second opinion.
//!
//! Both are deterministic (no random permutation test), so the same history always gives the
//! same answer; both run in time linear in the history length for a fixed window.
//!
//! # How E-divisive scales to 100,000 points
//!
//! The textbook algorithm needs all pairwise distances: O(n²) memory and O(n²)–O(n³) time.
//! As in Otava, the *split* step runs E-divisive only inside overlapping windows of `window`
//! points (step `window/2`, restarting at the last change found), with a relaxed significance
//! level (10 × `max_pvalue`). Inside a window of W points the energy statistic
//! `Q(τ, κ)` for every split τ and right end κ is computed in O(W²) from column prefix sums of
//! the W × W distance matrix. The *merge* step then re-tests every weak change point with a
//! t-test between its neighbouring change points (segment means and variances come in O(1)
//! from prefix sums) and removes the weakest one at a time until every survivor has
//! `p < max_pvalue` and passes the effect-size floors. Total cost: O(n · W) for the split and
//! O(c²) for the merge of c weak change points.

use serde::{Deserialize, Serialize};

use crate::robust::{Change, Detection, LevelModel, RobustOptions, prepare};
use crate::stats::{TTest, t_test_from_stats};

/// The change-point detectors, by name: what each is, [`DetectorChoice::method`] says (the
/// variants have no doc of their own, so that `--help` lists their names only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[allow(missing_docs)]
pub enum Detector {
    Robust,
    Edivisive,
    Pelt,
}

/// A detector and its settings, as a user gives them (`history plot`, `history changes`).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct DetectorChoice {
    /// Detector: `robust` (steps against a trend, seasonality and autocorrelated noise),
    /// `edivisive` (Otava's E-divisive with a t-test) or `pelt` (PELT, normal mean cost).
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = Detector::Robust))]
    pub method: Detector,
    /// Minimum step, in noise standard deviations (robust; for E-divisive, the effect size
    /// in pooled standard deviations).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1.0, value_name = "D"))]
    pub min_effect: f64,
    /// Penalty multiplier of the robust detector: a change needs z² >= PENALTY x ln(runs).
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value_t = 3.0, value_name = "PENALTY")
    )]
    pub penalty: f64,
    /// Minimum runs on each side of a change (robust and PELT).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 5, value_name = "N"))]
    pub min_segment: usize,
    /// Seasonal period in runs (robust): `auto` (detected), `off`, or a number.
    #[cfg_attr(feature = "clap", arg(long, default_value = "auto", value_name = "auto|off|N", value_parser = crate::robust::Seasonality::parse))]
    pub period: crate::robust::Seasonality,
    /// Robust: model plain steps of a constant level (no local trend).
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_trend: bool,
    /// E-divisive: significance level of the change points.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.001, value_name = "P"))]
    pub max_pvalue: f64,
    /// E-divisive: minimum relative change of a change point, percent.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.0, value_name = "PCT"))]
    pub min_change: f64,
    /// E-divisive: window length.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 50, value_name = "N"))]
    pub window: usize,
}

impl DetectorChoice {
    /// The method these settings choose.
    pub fn method(&self) -> Method {
        match self.method {
            Detector::Robust => Method::Robust(RobustOptions {
                min_segment: self.min_segment,
                penalty: self.penalty,
                min_effect: self.min_effect,
                trend: !self.no_trend,
                seasonality: self.period,
                ..RobustOptions::default()
            }),
            Detector::Edivisive => Method::EDivisive(EDivisiveOptions {
                window: self.window,
                max_pvalue: self.max_pvalue,
                min_magnitude: self.min_change / 100.0,
                min_effect_size: self.min_effect,
            }),
            Detector::Pelt => Method::Pelt(PeltOptions {
                min_size: self.min_segment,
                ..PeltOptions::default()
            }),
        }
    }
}

/// A change-point method with its options, for [`detect`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "method", content = "options")]
pub enum Method {
    /// The default: steps of the level against a local trend, with an autocorrelation-aware
    /// test, seasonality and outlier handling ([`crate::robust::detect`]).
    Robust(RobustOptions),
    /// E-divisive means with a t-test (Otava's split/merge) and effect-size floors.
    EDivisive(EDivisiveOptions),
    /// PELT with a normal mean cost.
    Pelt(PeltOptions),
}

impl Default for Method {
    fn default() -> Self {
        Method::Robust(RobustOptions::default())
    }
}

impl Method {
    /// `robust`, `edivisive` or `pelt`.
    pub fn name(&self) -> &'static str {
        match self {
            Method::Robust(_) => "robust",
            Method::EDivisive(_) => "edivisive",
            Method::Pelt(_) => "pelt",
        }
    }
}

/// Change points of `x` by `method`, with the same explicit handling of missing values
/// (left out, counted, indices kept), too-short and constant series for every method: the
/// [`Detection`]'s status and notes say what was done.
pub fn detect(x: &[f64], method: &Method) -> Detection {
    let (opts_ed, opts_pelt) = match method {
        Method::Robust(o) => return crate::robust::detect(x, o),
        Method::EDivisive(o) => (Some(o), None),
        Method::Pelt(o) => (None, Some(o)),
    };
    let min_points = match opts_pelt {
        Some(o) => 2 * o.min_size.max(1),
        None => 4,
    };
    let (idx, vals, mut det) = match prepare(method.name(), x, min_points) {
        Ok(v) => v,
        Err(d) => return d,
    };
    let cps = match (opts_ed, opts_pelt) {
        (Some(o), _) => e_divisive(&vals, o),
        (_, Some(o)) => pelt(&vals, o),
        _ => unreachable!(),
    };
    det.noise_sd = noise_sd(&vals);
    det.changes = cps
        .iter()
        .map(|c| {
            let step = c.after.mean - c.before.mean;
            let sd = if c.effect_size > 0.0 && c.effect_size.is_finite() {
                step.abs() / c.effect_size
            } else {
                0.0
            };
            Change {
                index: idx[c.index],
                before: c.before,
                after: c.after,
                step,
                level_before: c.before.mean,
                rel_change: c.rel_change,
                noise_sd: sd,
                step_over_noise: if sd > 0.0 { step / sd } else { 0.0 },
                model: LevelModel::Constant,
                autocorrelation: 0.0,
                pvalue: c.pvalue,
                strength: 0.0,
            }
        })
        .collect();
    det
}

/// Summary statistics of one segment of a history.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SegmentStats {
    /// Number of points.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1).
    pub std: f64,
}

/// A change point: the history changes level between `index − 1` and `index`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChangePoint {
    /// Index of the first point after the change.
    pub index: usize,
    /// The segment before the change (from the previous change point).
    pub before: SegmentStats,
    /// The segment after the change (up to the next change point).
    pub after: SegmentStats,
    /// Two-sided p-value of Student's t-test between the two segments, at this position.
    pub pvalue: f64,
    /// The p-value of the same change corrected for the choice of its position among the
    /// `before.n + after.n − 1` positions between its neighbours ([`scan_pvalue`]), or, when
    /// its shorter side ends at another change, for the choice of both ends of that segment
    /// ([`segment_scan_pvalue`]): what E-divisive's merge step compares with `max_pvalue`.
    pub scan_pvalue: f64,
    /// Relative change of the mean, `after.mean / before.mean − 1`.
    pub rel_change: f64,
    /// Standardised effect size, `|after.mean − before.mean| / pooled std` (Cohen's d).
    pub effect_size: f64,
    /// Two-sided Mann-Whitney p-value between the two segments: the rank-based confirmation
    /// that keeps one extreme outlier from making a short segment "significant".
    pub rank_pvalue: f64,
}

impl ChangePoint {
    /// Otava's magnitude: the larger of the forward and backward relative changes,
    /// `max(|m2/m1 − 1|, |m1/m2 − 1|)`.
    pub fn magnitude(&self) -> f64 {
        let f = if self.before.mean != 0.0 {
            (self.after.mean / self.before.mean - 1.0).abs()
        } else {
            0.0
        };
        let b = if self.after.mean != 0.0 {
            (self.before.mean / self.after.mean - 1.0).abs()
        } else {
            0.0
        };
        f.max(b)
    }
}

/// Options of [`e_divisive`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EDivisiveOptions {
    /// Window length of the split step (Otava's default is 50).
    pub window: usize,
    /// Significance level of the final change points (Otava's default is 0.001); the split
    /// step uses 10 times this value.
    pub max_pvalue: f64,
    /// Minimum relative change `max(|m2/m1 − 1|, |m1/m2 − 1|)` of a change point (0 = none).
    pub min_magnitude: f64,
    /// Minimum standardised effect size (Cohen's d) of a change point (0 = none). This keeps
    /// slow drifts and changes smaller than the noise from being reported when the segments
    /// are long enough to make them statistically significant.
    pub min_effect_size: f64,
}

impl Default for EDivisiveOptions {
    fn default() -> Self {
        EDivisiveOptions {
            window: 50,
            max_pvalue: 0.001,
            min_magnitude: 0.0,
            min_effect_size: 1.0,
        }
    }
}

/// Prefix sums for O(1) segment means and variances. Values are shifted by a reference to
/// keep the sums of squares accurate when the level is large against the noise.
struct Prefix {
    shift: f64,
    s1: Vec<f64>,
    s2: Vec<f64>,
}

impl Prefix {
    fn new(x: &[f64]) -> Prefix {
        let shift = if x.is_empty() { 0.0 } else { x[x.len() / 2] };
        let mut s1 = Vec::with_capacity(x.len() + 1);
        let mut s2 = Vec::with_capacity(x.len() + 1);
        s1.push(0.0);
        s2.push(0.0);
        let (mut a, mut b) = (0.0, 0.0);
        for &v in x {
            let d = v - shift;
            a += d;
            b += d * d;
            s1.push(a);
            s2.push(b);
        }
        Prefix { shift, s1, s2 }
    }

    /// Mean and sample std of x[a..b].
    fn stats(&self, a: usize, b: usize) -> SegmentStats {
        let n = b - a;
        if n == 0 {
            return SegmentStats {
                n,
                mean: f64::NAN,
                std: 0.0,
            };
        }
        let nf = n as f64;
        let sum = self.s1[b] - self.s1[a];
        let sq = self.s2[b] - self.s2[a];
        let m = sum / nf;
        let var = if n > 1 {
            ((sq - sum * m) / (nf - 1.0)).max(0.0)
        } else {
            0.0
        };
        SegmentStats {
            n,
            mean: m + self.shift,
            std: var.sqrt(),
        }
    }

    /// Sum of squared deviations from the mean over x[a..b].
    fn sse(&self, a: usize, b: usize) -> f64 {
        let n = (b - a) as f64;
        if n == 0.0 {
            return 0.0;
        }
        let sum = self.s1[b] - self.s1[a];
        let sq = self.s2[b] - self.s2[a];
        (sq - sum * sum / n).max(0.0)
    }
}

/// Builds the change point at `index` between segments `[lo, index)` and `[index, hi)`.
fn change_point(p: &Prefix, lo: usize, index: usize, hi: usize) -> ChangePoint {
    let before = p.stats(lo, index);
    let after = p.stats(index, hi);
    let TTest { pvalue, .. } = t_test_from_stats(
        before.mean,
        before.std,
        before.n,
        after.mean,
        after.std,
        after.n,
    );
    let df = (before.n + after.n) as f64 - 2.0;
    let pooled = if df > 0.0 {
        (((before.n as f64 - 1.0) * before.std * before.std
            + (after.n as f64 - 1.0) * after.std * after.std)
            / df)
            .sqrt()
    } else {
        0.0
    };
    let diff = (after.mean - before.mean).abs();
    let effect_size = if pooled > 0.0 {
        diff / pooled
    } else if diff > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    let rel_change = if before.mean != 0.0 {
        after.mean / before.mean - 1.0
    } else {
        0.0
    };
    ChangePoint {
        index,
        before,
        after,
        pvalue,
        scan_pvalue: scan_pvalue(pvalue, before.n + after.n),
        rel_change,
        effect_size,
        rank_pvalue: f64::NAN,
    }
}

/// The p-value of a change found by searching a segment of `m` points for its best split,
/// from the p-value `p` of the two-sample test at the split chosen.
///
/// A test at the position that looks best among `m − 1` is not a test at one position: in
/// 10,000 runs of pure noise some 10-run stretch always sits 3.3 standard errors from the
/// rest (p < 1e-3 there), which made E-divisive report pairs of "significant" changes about
/// 10 runs apart, more the longer the history. The p-value of the largest standardised
/// two-sample statistic over the positions is the smaller of two upper approximations:
/// Bonferroni, `(m − 1) p`, and the Gaussian scan approximation of James, James and Siegmund
/// (1987) for the standardised bridge over `t ∈ [1/m, 1 − 1/m]`,
/// `z φ(z) ln((m − 1)²) + 4 φ(z)/z` with `z` the normal equivalent of `p`. Never below `p`,
/// at most 1; 1 for a NaN `p`.
pub fn scan_pvalue(p: f64, m: usize) -> f64 {
    if p.is_nan() {
        return 1.0;
    }
    if p <= 0.0 {
        return 0.0;
    }
    let positions = m.saturating_sub(1) as f64;
    if positions <= 1.0 {
        return p.min(1.0);
    }
    let Some((z, phi)) = normal_equivalent(p) else {
        return (positions * p).min(1.0);
    };
    let scan = z * phi * 2.0 * positions.ln() + 4.0 * phi / z;
    (positions * p).min(scan).max(p).min(1.0)
}

/// The normal equivalent `z` of a two-sided p-value and the density `φ(z)` there; `None`
/// when `z` is not a finite positive number.
fn normal_equivalent(p: f64) -> Option<(f64, f64)> {
    let z = -crate::stats::normal_quantile((p / 2.0).min(0.5));
    (z.is_finite() && z > 0.0).then(|| {
        (
            z,
            (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt(),
        )
    })
}

/// The p-value of a change that ends a short segment whose other end is a change too, from
/// the p-value `p` of the two-sample test between the segment of `short` runs and its
/// neighbour, `m` runs in the two together.
///
/// Both ends of such a segment were chosen, not one: [`scan_pvalue`] covers the choice of
/// one position, and in long stationary histories pairs of "changes" 15 runs apart kept
/// p < 1e-3 after it (a 16-run stretch 5 standard errors off somewhere among 70,000 runs is
/// the rule, not the exception). The tail probability of the largest standardised sum over
/// the segments of at least `short` runs among `m` is about `m z³ φ(z) / (2 short)`
/// (two-sided; Siegmund 1988, from the two-parameter Gaussian field of the segment's ends,
/// continuous time, so an upper approximation for runs). The result is the larger of that
/// and [`scan_pvalue`]; never below `p`, at most 1; 1 for a NaN `p`.
pub fn segment_scan_pvalue(p: f64, short: usize, m: usize) -> f64 {
    let single = scan_pvalue(p, m);
    if p.is_nan() || p <= 0.0 || short == 0 || short >= m {
        return single;
    }
    let Some((z, phi)) = normal_equivalent(p) else {
        return single;
    };
    let segment = m as f64 * z.powi(3) * phi / (2.0 * short as f64);
    segment.max(single).min(1.0)
}

/// [`change_point`] plus the Mann-Whitney p-value between the two segments.
fn change_point_ranked(x: &[f64], p: &Prefix, lo: usize, index: usize, hi: usize) -> ChangePoint {
    let mut c = change_point(p, lo, index, hi);
    c.rank_pvalue = rank_pvalue(x, lo, index, hi);
    c
}

/// The two-sided Mann-Whitney p-value between `x[lo..index]` and `x[index..hi]`.
fn rank_pvalue(x: &[f64], lo: usize, index: usize, hi: usize) -> f64 {
    crate::stats::mann_whitney_u(&x[index..hi], &x[lo..index])
        .map(|m| m.p_two_sided)
        .unwrap_or(1.0)
}

/// Best E-divisive split of `z` (one window): maximises over τ and κ the energy statistic
/// `Q(τ, κ) = 2/(n+m) ΣΣ|x_i − y_j| − 2m/((n+m)(n−1)) Σ_{i<k}|x_i − x_k|
/// − 2n/((n+m)(m−1)) Σ_{j<k}|y_j − y_k|` with `X = z[..τ]` (n points) and `Y = z[τ..κ]`
/// (m points); a within-sample term with a single point counts 0, as in Otava.
/// Returns (τ, Q) or `None` for fewer than two points.
fn best_split(z: &[f64], scratch: &mut Vec<f64>) -> Option<(usize, f64)> {
    let w = z.len();
    if w < 2 {
        return None;
    }
    // colcum[k * (w + 1) + t] = Σ_{j < t} |z_j − z_k|, for t ≤ k.
    scratch.clear();
    scratch.resize(w * (w + 1), 0.0);
    for k in 0..w {
        let row = &mut scratch[k * (w + 1)..(k + 1) * (w + 1)];
        let mut acc = 0.0;
        for t in 0..k {
            acc += (z[t] - z[k]).abs();
            row[t + 1] = acc;
        }
    }
    let col = |k: usize, t: usize| scratch[k * (w + 1) + t];
    let mut best: Option<(usize, f64)> = None;
    // Within-X sum for the current τ.
    let mut wxx = 0.0;
    for tau in 1..w {
        if tau >= 2 {
            // Add the pairs (i, τ−1) for i < τ−1.
            wxx += col(tau - 1, tau - 1);
        }
        let n = tau as f64;
        let mut wxy = 0.0;
        let mut wyy = 0.0;
        for kappa in (tau + 1)..=w {
            let k = kappa - 1; // the point added to Y
            wxy += col(k, tau);
            wyy += col(k, k) - col(k, tau);
            let m = (kappa - tau) as f64;
            let a = 2.0 / (n + m) * wxy;
            let b = if tau > 1 {
                2.0 * m / ((n + m) * (n - 1.0)) * wxx
            } else {
                0.0
            };
            let c = if kappa - tau > 1 {
                2.0 * n / ((n + m) * (m - 1.0)) * wyy
            } else {
                0.0
            };
            let q = a - b - c;
            if best.is_none_or(|(_, bq)| q > bq) {
                best = Some((tau, q));
            }
        }
    }
    best
}

/// The best split of an interval: (index, Q), if the interval has one.
type Split = Option<(usize, f64)>;

/// E-divisive inside one window `x[start..end]` with the t-test significance step at level
/// `pvalue`: repeatedly takes the best split over all current segments and keeps it while
/// it is significant. Returns absolute indices, sorted.
fn e_divisive_window(
    x: &[f64],
    p: &Prefix,
    start: usize,
    end: usize,
    pvalue: f64,
    scratch: &mut Vec<f64>,
) -> Vec<usize> {
    let mut cps: Vec<usize> = Vec::new();
    // Cached best split per interval: (lo, hi, candidate).
    let mut cache: Vec<(usize, usize, Split)> = Vec::new();
    loop {
        let mut bounds = Vec::with_capacity(cps.len() + 2);
        bounds.push(start);
        bounds.extend(cps.iter().copied());
        bounds.push(end);
        let mut best: Option<(usize, usize, usize, f64)> = None;
        for win in bounds.windows(2) {
            let (lo, hi) = (win[0], win[1]);
            if hi - lo < 2 {
                continue;
            }
            let cand = match cache.iter().find(|c| c.0 == lo && c.1 == hi) {
                Some(c) => c.2,
                None => {
                    let c = best_split(&x[lo..hi], scratch).map(|(t, q)| (t + lo, q));
                    cache.push((lo, hi, c));
                    c
                }
            };
            if let Some((tau, q)) = cand
                && best.is_none_or(|b| q > b.3)
            {
                best = Some((lo, hi, tau, q));
            }
        }
        let Some((lo, hi, tau, _)) = best else { break };
        let cp = change_point(p, lo, tau, hi);
        if cp.pvalue <= pvalue {
            cps.push(tau);
            cps.sort_unstable();
        } else {
            break;
        }
    }
    cps
}

/// Change points of `x` by E-divisive means with a t-test significance step, windowed split
/// and bottom-up merge (Otava's `compute_change_points`), plus effect-size floors.
///
/// A change point survives the merge when its t-test p-value against its neighbouring
/// segments, corrected for the choice of its position between them ([`scan_pvalue`], or of
/// both ends of its shorter side when a change bounds it, [`segment_scan_pvalue`]; Otava
/// takes the p-value at the position as it is, which in long histories of pure noise lets
/// the best-looking of thousands of positions through), is below `max_pvalue`, its magnitude exceeds `min_magnitude` and its effect size
/// is at least `min_effect_size`. Deterministic. Returned sorted by index.
pub fn e_divisive(x: &[f64], opts: &EDivisiveOptions) -> Vec<ChangePoint> {
    let n = x.len();
    if n < 4 || x.iter().any(|v| !v.is_finite()) {
        return Vec::new();
    }
    let p = Prefix::new(x);
    let window = opts.window.max(4);
    let first_pass = if opts.max_pvalue < 0.05 {
        opts.max_pvalue * 10.0
    } else if opts.max_pvalue < 0.5 {
        opts.max_pvalue * 2.0
    } else {
        opts.max_pvalue
    };
    // Split.
    let step = window / 2;
    let mut start = 0;
    let mut weak: Vec<usize> = Vec::new();
    let mut scratch = Vec::new();
    while start < n {
        let end = (start + window).min(n);
        let found = e_divisive_window(x, &p, start, end, first_pass, &mut scratch);
        let last = found.last().copied().unwrap_or(0);
        weak.extend(found);
        start = last.max(start + step);
    }
    weak.sort_unstable();
    weak.dedup();
    merge(x, &p, weak, opts)
}

/// Otava's merge step with effect-size floors and a rank confirmation: removes the weakest
/// change point (largest t-test p-value, corrected for the choice of the position
/// ([`scan_pvalue`], [`segment_scan_pvalue`]), while any is not significant; then, among those
/// whose Mann-Whitney p-value is not below `max_pvalue` or that fall below the effect-size
/// floors, the smallest effect), recomputing its neighbours, until every change point is
/// acceptable.
fn merge(x: &[f64], p: &Prefix, idx: Vec<usize>, opts: &EDivisiveOptions) -> Vec<ChangePoint> {
    let n = x.len();
    // The segment around change i: from the change before it to the one after.
    let bounds = |idx: &[usize], i: usize| {
        let lo = if i == 0 { 0 } else { idx[i - 1] };
        let hi = if i + 1 == idx.len() { n } else { idx[i + 1] };
        (lo, hi)
    };
    let stats_at = |idx: &[usize], i: usize| {
        let (lo, hi) = bounds(idx, i);
        // The Mann-Whitney p-value is taken only when the floors are looked at (below):
        // a sort of both segments at each of thousands of removals in a long history.
        let mut c = change_point(p, lo, idx[i], hi);
        // The shorter side, when a change bounds it (not the start or end of the history),
        // is a segment both of whose ends were chosen.
        let (nb, na) = (c.before.n, c.after.n);
        let short = if na <= nb && i + 1 < idx.len() {
            Some(na)
        } else if nb < na && i > 0 {
            Some(nb)
        } else {
            None
        };
        if let Some(short) = short {
            c.scan_pvalue = segment_scan_pvalue(c.pvalue, short, nb + na);
        }
        c
    };
    let mut idx = idx;
    let mut cps: Vec<ChangePoint> = (0..idx.len()).map(|i| stats_at(&idx, i)).collect();
    let weak_effect = |c: &ChangePoint| {
        c.magnitude() <= opts.min_magnitude
            || c.effect_size < opts.min_effect_size
            || c.rank_pvalue >= opts.max_pvalue
    };
    while !cps.is_empty() {
        let (mut worst, mut worst_p) = (0, f64::NEG_INFINITY);
        for (i, c) in cps.iter().enumerate() {
            if c.scan_pvalue > worst_p {
                worst = i;
                worst_p = c.scan_pvalue;
            }
        }
        if worst_p < opts.max_pvalue {
            // All significant: look at the effect-size floors.
            for (i, c) in cps.iter_mut().enumerate() {
                if c.rank_pvalue.is_nan() {
                    let (lo, hi) = bounds(&idx, i);
                    c.rank_pvalue = rank_pvalue(x, lo, c.index, hi);
                }
            }
            let mut weakest: Option<(usize, f64)> = None;
            for (i, c) in cps.iter().enumerate() {
                if weak_effect(c) && weakest.is_none_or(|(_, e)| c.effect_size < e) {
                    weakest = Some((i, c.effect_size));
                }
            }
            match weakest {
                Some((i, _)) => worst = i,
                None => break,
            }
        }
        idx.remove(worst);
        cps.remove(worst);
        if worst > 0 {
            cps[worst - 1] = stats_at(&idx, worst - 1);
        }
        if worst < idx.len() {
            cps[worst] = stats_at(&idx, worst);
        }
    }
    cps
}

/// Penalty of [`pelt`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Penalty {
    /// Bayesian information criterion for a change in mean with known variance: 2 ln n
    /// (one mean and one location per change).
    Bic,
    /// A fixed penalty per change point, in units of the normalised cost.
    Manual(f64),
}

/// Options of [`pelt`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PeltOptions {
    /// Penalty per change point.
    pub penalty: Penalty,
    /// Minimum segment length (at least 1); a few points keep isolated outliers from being
    /// cut out as their own segment.
    pub min_size: usize,
}

impl Default for PeltOptions {
    fn default() -> Self {
        PeltOptions {
            penalty: Penalty::Bic,
            min_size: 5,
        }
    }
}

/// Robust estimate of the noise standard deviation of a piecewise-constant series: the MAD of
/// its first differences, `1.4826 · MAD(Δx) / √2` (level changes are rare differences and do
/// not move the median).
pub fn noise_sd(x: &[f64]) -> f64 {
    if x.len() < 3 {
        return 0.0;
    }
    let d: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
    1.4826 * crate::stats::mad(&d) / std::f64::consts::SQRT_2
}

/// Change points of `x` by PELT: minimises `Σ_segments C(segment) + β · (#changes)` exactly,
/// with the normal mean-change cost `C(y) = Σ (y_i − ȳ)² / σ²` (σ from
/// [`crate::robust::noise_scale`]) and
/// `β` from `opts.penalty`, pruning candidates that can never be optimal again
/// (`F(τ) + C(y_{τ..t}) > F(t)`). Returns the change points with the same statistics as
/// [`e_divisive`] (t-test between neighbouring change points). Deterministic.
pub fn pelt(x: &[f64], opts: &PeltOptions) -> Vec<ChangePoint> {
    let n = x.len();
    let min_size = opts.min_size.max(1);
    if n < 2 * min_size || x.iter().any(|v| !v.is_finite()) {
        return Vec::new();
    }
    let p = Prefix::new(x);
    let scale = x.iter().fold(0.0f64, |a, v| a.max(v.abs())).max(1.0);
    // Pseudo-residual scale (removes a local trend; falls back to the mean absolute deviation
    // on quantized series, where the MAD of differences is 0).
    let sigma = crate::robust::noise_scale(x).max(1e-9 * scale);
    let inv_var = 1.0 / (sigma * sigma);
    let beta = match opts.penalty {
        Penalty::Bic => 2.0 * (n as f64).ln(),
        Penalty::Manual(b) => b,
    };
    let cost = |a: usize, b: usize| p.sse(a, b) * inv_var;
    let mut f = vec![f64::INFINITY; n + 1];
    let mut last = vec![0usize; n + 1];
    f[0] = -beta;
    let mut cands: Vec<usize> = Vec::new();
    let mut vals: Vec<f64> = Vec::new();
    for t in min_size..=n {
        let new = t - min_size;
        if f[new].is_finite() {
            cands.push(new);
        }
        vals.clear();
        let mut best = f64::INFINITY;
        let mut arg = 0;
        for &tau in &cands {
            let v = f[tau] + cost(tau, t);
            vals.push(v);
            if v + beta < best {
                best = v + beta;
                arg = tau;
            }
        }
        f[t] = best;
        last[t] = arg;
        // Pruning (Killick et al., Theorem 3.1, with K = 0 for this cost).
        let mut k = 0;
        cands.retain(|_| {
            let keep = vals[k] <= best;
            k += 1;
            keep
        });
    }
    let mut idx = Vec::new();
    let mut t = n;
    while t > 0 {
        let tau = last[t];
        if tau > 0 {
            idx.push(tau);
        }
        t = tau;
    }
    idx.reverse();
    (0..idx.len())
        .map(|i| {
            let lo = if i == 0 { 0 } else { idx[i - 1] };
            let hi = if i + 1 == idx.len() { n } else { idx[i + 1] };
            change_point_ranked(x, &p, lo, idx[i], hi)
        })
        .collect()
}

/// One change point of `history changes --format json`, with the run it starts at.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChangeRow {
    /// Lag-1 autocorrelation of the residuals (see [`Change::autocorrelation`]).
    pub autocorrelation: f64,
    /// Git commit of the first run after the change, if recorded.
    pub git_commit: Option<String>,
    /// Index of the first run after the change in the series.
    pub index: usize,
    /// The fitted level just before the change.
    pub level_before: f64,
    /// Mean of the segment after.
    pub mean_after: f64,
    /// Mean of the segment before.
    pub mean_before: f64,
    /// The model of the level around the change.
    pub model: LevelModel,
    /// Noise standard deviation around the model, in the metric's unit.
    pub noise_sd: f64,
    /// Two-sided p-value of the step.
    pub pvalue: f64,
    /// `step / level_before`.
    pub rel_change: f64,
    /// Id of the first run after the change.
    pub run_id: i64,
    /// Runs in the segment after.
    pub runs_after: usize,
    /// Runs in the segment before.
    pub runs_before: usize,
    /// Standard deviation of the segment after.
    pub std_after: f64,
    /// Standard deviation of the segment before.
    pub std_before: f64,
    /// Step of the level, in the metric's unit.
    pub step: f64,
    /// `step / noise_sd`.
    pub step_over_noise: f64,
    /// Whether the model has a trend.
    pub trend: bool,
}

impl ChangeRow {
    /// The row of change `c`, which starts at run `run_id` (commit `git_commit`).
    pub fn new(c: &Change, run_id: i64, git_commit: Option<String>) -> ChangeRow {
        ChangeRow {
            autocorrelation: c.autocorrelation,
            git_commit,
            index: c.index,
            level_before: c.level_before,
            mean_after: c.after.mean,
            mean_before: c.before.mean,
            model: c.model,
            noise_sd: c.noise_sd,
            pvalue: c.pvalue,
            rel_change: c.rel_change,
            run_id,
            runs_after: c.after.n,
            runs_before: c.before.n,
            std_after: c.after.std,
            std_before: c.before.std,
            step: c.step,
            step_over_noise: c.step_over_noise,
            trend: c.model.has_trend(),
        }
    }
}

/// `history changes --format json`: the change points of one metric's series.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChangesReport {
    /// The change points, by index.
    pub change_points: Vec<ChangeRow>,
    /// `robust`, `edivisive` or `pelt`.
    pub method: String,
    /// The metric.
    pub metric: String,
    /// Non-finite points left out.
    pub missing: usize,
    /// Noise standard deviation of the whole series; null when it was not analysed.
    pub noise_sd: Option<f64>,
    /// What was left out, skipped or removed, and why.
    pub notes: Vec<String>,
    /// The method with its options.
    pub options: Method,
    /// Points pulled in by the winsorizing.
    pub outliers: usize,
    /// Seasonal period removed, if any.
    pub period: Option<usize>,
    /// Runs in the series.
    pub runs: usize,
    /// What could be done with the series.
    pub status: crate::robust::Status,
}

impl ChangesReport {
    /// The change points `det` that `m` found in the series `pts` of `metric`, with the
    /// notes.
    pub fn of(
        metric: &str,
        pts: &[crate::store::SeriesPoint],
        det: Detection,
        m: Method,
        notes: Vec<String>,
    ) -> ChangesReport {
        ChangesReport {
            change_points: det
                .changes
                .iter()
                .map(|c| {
                    let p = &pts[c.index];
                    ChangeRow::new(c, p.run_id, p.git_commit.clone())
                })
                .collect(),
            method: m.name().to_string(),
            metric: metric.to_string(),
            missing: det.missing,
            noise_sd: det.noise_sd.is_finite().then_some(det.noise_sd),
            notes,
            options: m,
            outliers: det.outliers,
            period: det.period,
            runs: pts.len(),
            status: det.status,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded Gaussian noise of standard deviation 0.3.
    fn noise(n: usize, seed: u64) -> Vec<f64> {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let u1: f64 = 1.0 - rng.random::<f64>();
                let u2: f64 = rng.random::<f64>();
                0.3 * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
            })
            .collect()
    }

    fn step_series(n: usize, at: usize, lo: f64, hi: f64) -> Vec<f64> {
        noise(n, 1)
            .into_iter()
            .enumerate()
            .map(|(i, e)| (if i < at { lo } else { hi }) + e)
            .collect()
    }

    #[test]
    fn best_split_matches_brute_force() {
        let z = [1.0, 2.0, 1.5, 8.0, 9.0, 7.5, 8.2, 3.0];
        let mut s = Vec::new();
        let (tau, q) = best_split(&z, &mut s).unwrap();
        // Brute force over all (τ, κ).
        let mut best = (0, f64::NEG_INFINITY);
        for t in 1..z.len() {
            for k in t + 1..=z.len() {
                let x = &z[..t];
                let y = &z[t..k];
                let (n, m) = (x.len() as f64, y.len() as f64);
                let mut xy = 0.0;
                for a in x {
                    for b in y {
                        xy += (a - b).abs();
                    }
                }
                let pairs = |v: &[f64]| {
                    let mut s = 0.0;
                    for i in 0..v.len() {
                        for j in i + 1..v.len() {
                            s += (v[i] - v[j]).abs();
                        }
                    }
                    s
                };
                let bx = if x.len() > 1 {
                    2.0 * m / ((n + m) * (n - 1.0)) * pairs(x)
                } else {
                    0.0
                };
                let cy = if y.len() > 1 {
                    2.0 * n / ((n + m) * (m - 1.0)) * pairs(y)
                } else {
                    0.0
                };
                let qq = 2.0 / (n + m) * xy - bx - cy;
                if qq > best.1 {
                    best = (t, qq);
                }
            }
        }
        assert_eq!(tau, best.0);
        assert!((q - best.1).abs() < 1e-9);
        assert_eq!(tau, 3);
    }

    #[test]
    fn finds_a_single_step() {
        let x = step_series(200, 120, 100.0, 110.0);
        let cps = e_divisive(&x, &EDivisiveOptions::default());
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].index, 120);
        assert!((cps[0].rel_change - 0.1).abs() < 0.01);
        assert!(cps[0].pvalue < 1e-10);
        let pc = pelt(&x, &PeltOptions::default());
        assert_eq!(pc.len(), 1, "{pc:?}");
        assert_eq!(pc[0].index, 120);
    }

    #[test]
    fn finds_several_steps_and_ignores_a_single_outlier() {
        let mut x = step_series(300, 100, 100.0, 105.0);
        for v in x.iter_mut().skip(200) {
            *v -= 10.0;
        }
        x[50] += 2.4; // 8 noise standard deviations
        let cps: Vec<usize> = e_divisive(&x, &EDivisiveOptions::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(cps, vec![100, 200]);
        let pc: Vec<usize> = pelt(&x, &PeltOptions::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(pc, vec![100, 200]);
    }

    #[test]
    fn constant_and_short_series_have_no_change_point() {
        assert!(e_divisive(&[5.0; 100], &EDivisiveOptions::default()).is_empty());
        assert!(pelt(&[5.0; 100], &PeltOptions::default()).is_empty());
        assert!(e_divisive(&[1.0, 2.0], &EDivisiveOptions::default()).is_empty());
        assert!(pelt(&[1.0], &PeltOptions::default()).is_empty());
        assert!(
            e_divisive(
                &[1.0, f64::NAN, 2.0, 3.0, 4.0],
                &EDivisiveOptions::default()
            )
            .is_empty()
        );
    }

    #[test]
    fn effect_size_floor_removes_a_slow_drift() {
        // A linear drift of 1.5 noise standard deviations over 400 points: significant with
        // long segments, but not a step.
        let x: Vec<f64> = noise(400, 2)
            .into_iter()
            .enumerate()
            .map(|(i, e)| 100.0 + 0.45 * (i as f64 / 400.0) + e)
            .collect();
        assert!(e_divisive(&x, &EDivisiveOptions::default()).is_empty());
    }

    #[test]
    fn magnitude_is_symmetric() {
        let p = Prefix::new(&[1.0, 1.0, 2.0, 2.0]);
        let c = change_point(&p, 0, 2, 4);
        assert!((c.magnitude() - 1.0).abs() < 1e-12);
        assert!((c.rel_change - 1.0).abs() < 1e-12);
        assert_eq!(c.pvalue, 0.0);
    }

    #[test]
    fn the_best_of_many_positions_is_not_significant_by_itself() {
        // p = 1e-3 at the best of 10,000 positions is what noise gives.
        assert!(
            scan_pvalue(1e-3, 10_000) > 0.1,
            "{}",
            scan_pvalue(1e-3, 10_000)
        );
        // One position: the p-value as it is; more positions, a larger p-value.
        assert_eq!(scan_pvalue(0.02, 2), 0.02);
        let mut last = 0.0;
        for m in [3, 10, 100, 1_000, 100_000] {
            let q = scan_pvalue(1e-6, m);
            assert!(q > last && q <= (m - 1) as f64 * 1e-6, "{m}: {q}");
            last = q;
        }
        // A real step stays significant in a million runs; the edges of the domain.
        assert!(scan_pvalue(1e-14, 1_000_000) < 1e-9);
        assert_eq!(scan_pvalue(0.0, 100), 0.0);
        assert_eq!(scan_pvalue(f64::NAN, 100), 1.0);
        assert_eq!(scan_pvalue(0.9, 100), 1.0);
        // A step of 17 noise sd between two segments of 300 and 80 runs has a t-test p of
        // 1.6e-320: its normal equivalent was NaN, its scan p-value 1, and the merge dropped
        // it first, keeping two weaker changes on either side.
        assert!(scan_pvalue(1.566e-320, 380) < 1e-300);
        assert!(scan_pvalue(5e-324, 1_000_000) < 1e-300);
    }

    #[test]
    fn a_short_segment_pays_for_both_of_its_ends() {
        // The pair found 16 runs apart in a stationary tail of 200,000 runs: p = 6.1e-7 at
        // the position, 1.9e-4 for the choice of one position, not significant for the
        // choice of both ends.
        assert!(scan_pvalue(6.06e-7, 199_611) < 1e-3);
        assert!(segment_scan_pvalue(6.06e-7, 16, 199_611) > 0.1);
        // Never below the single-position correction; shorter segments pay more; a real
        // short regression (10 runs of 5 sd: z about 16) stays significant.
        let mut last = 0.0;
        for short in [1_000, 100, 10, 2] {
            let q = segment_scan_pvalue(1e-9, short, 10_000);
            assert!(q >= scan_pvalue(1e-9, 10_000) && q > last, "{short}: {q}");
            last = q;
        }
        assert!(segment_scan_pvalue(1e-56, 10, 1_000_000) < 1e-40);
        assert_eq!(segment_scan_pvalue(f64::NAN, 10, 100), 1.0);
        assert_eq!(segment_scan_pvalue(0.0, 10, 100), 0.0);
        assert!(segment_scan_pvalue(1e-3, 2, 100_000) <= 1.0);
    }

    #[test]
    fn noise_sd_ignores_steps() {
        let x = step_series(1000, 500, 0.0, 1000.0);
        let s = noise_sd(&x);
        assert!(s > 0.05 && s < 1.0, "{s}");
    }
}
