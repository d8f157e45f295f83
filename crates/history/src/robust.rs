//! The default change-point detector: level shifts that hold against trends, seasonality,
//! autocorrelation, outliers, quantized values and gaps.
//!
//! A history is modelled as a *local level with an optional local trend*, plus noise that may
//! be autocorrelated; a change point is a **step of the level** that is both significant
//! under that model and material against the noise. Slow drifts, smooth growth and kinks of
//! the trend are not change points; a level shift on top of a drift is.
//!
//! The steps:
//!
//! 1. **Clean.** Non-finite values (NaN, ±inf) are left out and counted; indices of the
//!    result refer to the full series. A series with fewer than `2 · min_segment` usable
//!    points, or whose values are all equal, gets an explicit [`Status`] and a note, never an
//!    empty answer without a reason.
//! 2. **Noise scale.** The noise standard deviation σ is the MAD of the pseudo-residuals
//!    `(y[t−1] − 2 y[t] + y[t+1]) / √6` (Gasser, Sroka and Jennen-Steinmetz 1986): they remove
//!    a local linear trend exactly, so a drift or a step does not shrink or inflate σ the way
//!    first differences of a trend or of a step-heavy series do. When more than half of them
//!    are zero (quantized values), their mean absolute deviation is used instead.
//! 3. **Outliers.** Points further than `outlier_z · σ` from the running median (half width
//!    `min_segment`) are pulled back to that bound (winsorized) and counted. The running
//!    median follows steps, so a step's points are never touched.
//! 4. **Seasonality** (optional). A period is taken from the options or detected from the
//!    autocorrelation of the first differences (a peak after a trough, at least 4 cycles);
//!    the seasonal profile (per-phase medians around a running median) is removed when it
//!    explains a material part of the variation.
//! 5. **Candidates.** Multiscale moving-sum statistics (MOSUM, Eichinger and Kirch 2018):
//!    the difference of the means of the `G` points after and before each index, for
//!    `G = min_segment, 2 min_segment, 4 min_segment, …`; local maxima above 2 σ-units are
//!    candidates, at least `min_segment` apart. This over-segments on purpose.
//! 6. **Merge.** Every candidate is tested against its two neighbours `[l, τ)` and `[τ, r)`
//!    with three models of the level: two constants (a plain step), one shared slope plus a
//!    step (a level shift against a trend), two independent lines (a step where the trend
//!    also changes). The model is chosen by BIC; the step is the jump of the fitted level at
//!    the boundary, its standard error is inflated by the lag-1 autocorrelation ρ of the
//!    model's residuals, `√((1 + ρ)/(1 − ρ))` (the long-run variance of an AR(1) noise), so a
//!    smooth misfit (a curved trend, an oscillation) does not pass for a step. The weakest
//!    candidate is removed and its neighbours re-tested until every survivor passes: its
//!    z-equivalent statistic exceeds the penalty `β = penalty · ln n` (BIC-style, calibrated
//!    per series length: with the default 3, MBIC's constant) and its step is at least
//!    `min_effect` noise standard deviations. Prefix sums make each test O(1), the merge
//!    O(c log c) for c candidates.
//! 7. **Refine.** Each change point moves to the index that maximises its statistic between
//!    its neighbours, and the merge runs once more.
//!
//! The result explains every change: the segment means, the step and the noise in the
//! metric's unit, the model (whether a trend was present, with its slopes), the residual
//! autocorrelation and a p-value. [`Detection::series_pvalue`] (Bonferroni over the
//! positions) is what false-discovery control across many metrics works on
//! ([`crate::stats::benjamini_hochberg`]).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use serde::{Deserialize, Serialize};

use crate::changepoint::SegmentStats;
use crate::stats::{mad, mean, median, normal_quantile, std_dev, student_t_two_sided_p};

/// Seasonality handling of [`detect`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Seasonality {
    /// Detect a period from the autocorrelation of the differences; remove it when found.
    Auto,
    /// No seasonal component.
    Off,
    /// Remove a seasonal profile of this period (in points).
    Period(usize),
}

impl Seasonality {
    /// Parses `--period`: `auto`, `off` (or 0) or a period of at least 2 runs.
    pub fn parse(s: &str) -> Result<Seasonality, String> {
        match s {
            "auto" => Ok(Seasonality::Auto),
            "off" | "0" => Ok(Seasonality::Off),
            _ => match s.parse::<usize>() {
                Ok(p) if p >= 2 => Ok(Seasonality::Period(p)),
                _ => Err(format!(
                    "`{s}` is not a period: use auto, off or a number of runs >= 2 (7 for a weekly pattern of daily runs)"
                )),
            },
        }
    }
}

/// Options of [`detect`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RobustOptions {
    /// Minimum number of points on each side of a change (at least 2).
    pub min_segment: usize,
    /// Penalty multiplier: a change needs a z-equivalent statistic of at least
    /// `√(penalty · ln n)`.
    pub penalty: f64,
    /// Minimum step, in noise standard deviations (0 = none).
    pub min_effect: f64,
    /// Allow a local trend in the segments (step against a drift). Off: plain steps of a
    /// piecewise-constant level.
    pub trend: bool,
    /// Seasonality handling.
    pub seasonality: Seasonality,
    /// Winsorizing bound, in noise standard deviations from the running median (0 = off).
    pub outlier_z: f64,
    /// Largest residual autocorrelation the standard errors are inflated for.
    pub max_autocorrelation: f64,
}

impl Default for RobustOptions {
    fn default() -> Self {
        RobustOptions {
            min_segment: 5,
            penalty: 3.0,
            min_effect: 1.0,
            trend: true,
            seasonality: Seasonality::Auto,
            outlier_z: 3.0,
            max_autocorrelation: 0.95,
        }
    }
}

/// What the detector could do with a series.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The series was analysed (it may have no change point).
    Analysed,
    /// No finite value.
    NoData,
    /// Fewer usable points than two minimum segments.
    TooShort,
    /// Every usable value is the same: nothing can change.
    Constant,
}

/// How the level was modelled around a change point.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LevelModel {
    /// A constant level on each side: a plain step.
    Constant,
    /// One trend across both segments, with a step of the level at the change.
    SharedTrend {
        /// Slope, in the metric's unit per point.
        slope: f64,
    },
    /// An independent trend on each side, with a step of the level at the change.
    SeparateTrends {
        /// Slope before the change, per point.
        before: f64,
        /// Slope after the change, per point.
        after: f64,
    },
}

impl LevelModel {
    /// Whether a trend was part of the model.
    pub fn has_trend(&self) -> bool {
        !matches!(self, LevelModel::Constant)
    }

    /// Short description: `no trend`, `trend +0.012/run`, `trend +0.01/run -> -0.02/run`.
    pub fn describe(&self) -> String {
        let f = |x: f64| crate::robust::fmt_sig(x);
        match self {
            LevelModel::Constant => "no trend".into(),
            LevelModel::SharedTrend { slope } => format!("trend {}/run", f(*slope)),
            LevelModel::SeparateTrends { before, after } => {
                format!("trend {}/run -> {}/run", f(*before), f(*after))
            }
        }
    }
}

/// `+1.23e-4` style with 3 significant digits and a sign.
pub(crate) fn fmt_sig(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let a = x.abs();
    if a != 0.0 && !(1e-3..1e5).contains(&a) {
        format!("{x:+.2e}")
    } else {
        let s = format!("{x:+.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    }
}

/// One change point with its explanation.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Index (in the full series, missing values included) of the first point after the
    /// change.
    pub index: usize,
    /// The segment before (from the previous change point), raw values.
    pub before: SegmentStats,
    /// The segment after (up to the next change point), raw values.
    pub after: SegmentStats,
    /// Step of the level at the change, in the metric's unit (after minus before; with a
    /// trend, the jump of the fitted trend lines at the boundary).
    pub step: f64,
    /// The level just before the change (the fitted level at the boundary).
    pub level_before: f64,
    /// `step / level_before`: the relative change of the level (0 when the level is 0).
    pub rel_change: f64,
    /// Standard deviation of the noise around the model, in the metric's unit.
    pub noise_sd: f64,
    /// `step / noise_sd`.
    pub step_over_noise: f64,
    /// The model of the level around the change.
    pub model: LevelModel,
    /// Lag-1 autocorrelation of the residuals (0 when negative), which inflated the standard
    /// error of the step by `√((1 + ρ)/(1 − ρ))`.
    pub autocorrelation: f64,
    /// Two-sided p-value of the step (Student's t with the effective degrees of freedom), for
    /// this one position.
    pub pvalue: f64,
    /// Statistic over threshold: `z² / β`, at least 1 for a reported change.
    pub strength: f64,
}

/// The result of [`detect`] (or of [`crate::changepoint::detect`] for any method).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Detection {
    /// Method that produced it (`robust`, `edivisive`, `pelt`).
    pub method: String,
    /// What could be done with the series.
    pub status: Status,
    /// Points given.
    pub n: usize,
    /// Non-finite points left out.
    pub missing: usize,
    /// Change points, by index.
    pub changes: Vec<Change>,
    /// Noise standard deviation of the whole series (metric's unit), when analysed.
    pub noise_sd: f64,
    /// Seasonal period removed, if any.
    pub period: Option<usize>,
    /// Points pulled in by the winsorizing.
    pub outliers: usize,
    /// Threshold β of `z²` (0 for the methods without one).
    pub threshold: f64,
    /// Notes for the reader: what was left out, skipped or removed, and why.
    pub notes: Vec<String>,
}

impl Detection {
    /// The evidence that the series changed at all: the smallest change p-value times the
    /// number of positions tested (Bonferroni), capped at 1; 1 without a change.
    pub fn series_pvalue(&self) -> f64 {
        let used = (self.n - self.missing).max(1) as f64;
        self.changes
            .iter()
            .map(|c| (c.pvalue * used).min(1.0))
            .fold(1.0, f64::min)
    }

    pub(crate) fn empty(method: &str, x_len: usize, missing: usize) -> Detection {
        Detection {
            method: method.into(),
            status: Status::Analysed,
            n: x_len,
            missing,
            changes: Vec::new(),
            noise_sd: f64::NAN,
            period: None,
            outliers: 0,
            threshold: 0.0,
            notes: Vec::new(),
        }
    }
}

/// Finite points of `x` with their indices, and the shared checks of every method:
/// returns `Err(detection)` with the status and a note when there is nothing to analyse.
#[allow(clippy::result_large_err)] // built once per series; boxing would only add noise
pub(crate) fn prepare(
    method: &str,
    x: &[f64],
    min_points: usize,
) -> Result<(Vec<usize>, Vec<f64>, Detection), Detection> {
    let idx: Vec<usize> = (0..x.len()).filter(|&i| x[i].is_finite()).collect();
    let vals: Vec<f64> = idx.iter().map(|&i| x[i]).collect();
    let missing = x.len() - vals.len();
    let mut d = Detection::empty(method, x.len(), missing);
    if missing > 0 {
        d.notes.push(format!(
            "{missing} missing or non-finite value(s) left out; indices refer to the full series"
        ));
    }
    if vals.is_empty() {
        d.status = Status::NoData;
        d.notes
            .push("no finite value: nothing to analyse".to_string());
        return Err(d);
    }
    if vals.len() < min_points {
        d.status = Status::TooShort;
        d.notes.push(format!(
            "{} usable point(s): at least {min_points} are needed to find a change; not analysed",
            vals.len()
        ));
        return Err(d);
    }
    if vals.iter().all(|&v| v == vals[0]) {
        d.status = Status::Constant;
        d.notes.push(format!(
            "every value is {}: constant series, no change",
            vals[0]
        ));
        return Err(d);
    }
    Ok((idx, vals, d))
}

/// Robust noise standard deviation from the pseudo-residuals `(y[t−1] − 2y[t] + y[t+1])/√6`:
/// `1.4826 · MAD`, or `1.2533 ·` their mean absolute deviation from the median when the MAD
/// is 0 (more than half of them equal, as in quantized series). 0 only when the series is
/// exactly linear.
pub fn noise_scale(y: &[f64]) -> f64 {
    if y.len() < 3 {
        return 0.0;
    }
    let e: Vec<f64> = y
        .windows(3)
        .map(|w| (w[0] - 2.0 * w[1] + w[2]) / 6f64.sqrt())
        .collect();
    let s = 1.4826 * mad(&e);
    if s > 0.0 {
        return s;
    }
    let m = median(&e);
    1.2533 * e.iter().map(|v| (v - m).abs()).sum::<f64>() / e.len() as f64
}

/// Running median over `[t − h, t + h]` (clipped at the ends).
fn running_median(y: &[f64], h: usize) -> Vec<f64> {
    let n = y.len();
    let mut buf = Vec::with_capacity(2 * h + 1);
    (0..n)
        .map(|t| {
            let a = t.saturating_sub(h);
            let b = (t + h + 1).min(n);
            buf.clear();
            buf.extend_from_slice(&y[a..b]);
            let k = buf.len() / 2;
            let (_, m, _) = buf.select_nth_unstable_by(k, f64::total_cmp);
            let hi = *m;
            if buf.len() % 2 == 1 {
                hi
            } else {
                let lo = buf[..k].iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (lo + hi) / 2.0
            }
        })
        .collect()
}

/// Period of a seasonal pattern, from the autocorrelation of the (winsorized) first
/// differences: the smallest lag within 0.05 of the best peak that comes after a trough at
/// least 0.3 lower, with autocorrelation above 0.3 and at least 4 cycles in the series.
pub fn detect_period(y: &[f64], max_period: usize) -> Option<usize> {
    let n = y.len();
    if n < 16 {
        return None;
    }
    let mut d: Vec<f64> = y.windows(2).map(|w| w[1] - w[0]).collect();
    let md = median(&d);
    let s = 1.4826 * mad(&d);
    let s = if s > 0.0 {
        s
    } else {
        1.2533 * d.iter().map(|v| (v - md).abs()).sum::<f64>() / d.len() as f64
    };
    if s <= 0.0 {
        return None;
    }
    for v in d.iter_mut() {
        *v = (*v - md).clamp(-4.0 * s, 4.0 * s);
    }
    let mu = mean(&d);
    for v in d.iter_mut() {
        *v -= mu;
    }
    let var: f64 = d.iter().map(|v| v * v).sum();
    if var <= 0.0 {
        return None;
    }
    let lmax = (n / 4).min(max_period);
    if lmax < 2 {
        return None;
    }
    let acf: Vec<f64> = (0..=lmax + 1)
        .map(|l| {
            if l >= d.len() {
                0.0
            } else {
                d[l..].iter().zip(&d).map(|(a, b)| a * b).sum::<f64>() / var
            }
        })
        .collect();
    let mut peaks = Vec::new();
    let mut trough = f64::INFINITY;
    for p in 2..=lmax {
        trough = trough.min(acf[p - 1]);
        if acf[p] >= acf[p - 1] && acf[p] >= acf[p + 1] && acf[p] > 0.3 && trough < acf[p] - 0.3 {
            peaks.push(p);
        }
    }
    let best = peaks
        .iter()
        .map(|&p| acf[p])
        .fold(f64::NEG_INFINITY, f64::max);
    peaks.into_iter().find(|&p| acf[p] >= best - 0.05)
}

/// The seasonal profile of period `p` (per-phase medians of the deviations from a running
/// median of one period), centred; `None` when it does not reduce the mean absolute
/// deviation by at least 20 %.
fn seasonal_profile(y: &[f64], p: usize, force: bool) -> Option<Vec<f64>> {
    let n = y.len();
    if p < 2 || n < 2 * p {
        return None;
    }
    let trend = running_median(y, p / 2);
    let r: Vec<f64> = y.iter().zip(&trend).map(|(a, b)| a - b).collect();
    let mut prof: Vec<f64> = (0..p)
        .map(|ph| {
            let v: Vec<f64> = r.iter().skip(ph).step_by(p).copied().collect();
            median(&v)
        })
        .collect();
    let c = mean(&prof);
    for v in prof.iter_mut() {
        *v -= c;
    }
    let before: f64 = r.iter().map(|v| v.abs()).sum();
    let after: f64 = r
        .iter()
        .enumerate()
        .map(|(t, v)| (v - prof[t % p]).abs())
        .sum();
    (force || after <= 0.8 * before).then_some(prof)
}

/// Prefix sums for O(1) least-squares fits and lag-1 residual products over any segment.
struct Sums {
    y: Vec<f64>,
    yy: Vec<f64>,
    ty: Vec<f64>,
    /// lag[t] = Σ_{s=1}^{t−1} y_s y_{s−1}.
    lag: Vec<f64>,
}

impl Sums {
    fn new(y: &[f64]) -> Sums {
        let n = y.len();
        let mut s = Sums {
            y: Vec::with_capacity(n + 1),
            yy: Vec::with_capacity(n + 1),
            ty: Vec::with_capacity(n + 1),
            lag: Vec::with_capacity(n + 1),
        };
        let (mut a, mut b, mut c, mut d) = (0.0, 0.0, 0.0, 0.0);
        s.y.push(0.0);
        s.yy.push(0.0);
        s.ty.push(0.0);
        s.lag.push(0.0);
        for (t, &v) in y.iter().enumerate() {
            a += v;
            b += v * v;
            c += t as f64 * v;
            if t > 0 {
                d += v * y[t - 1];
            }
            s.y.push(a);
            s.yy.push(b);
            s.ty.push(c);
            s.lag.push(d);
        }
        s
    }

    /// Moments of segment [a, b). Times are taken from the segment's start: the sums of t
    /// and t² over a short segment far into a long history are differences of numbers near
    /// n³/3, which lose every digit beyond a few 100,000 points (a 7-run segment at run
    /// 900,000 got a spread of times of 28 ± 60 and with it any slope).
    fn seg(&self, a: usize, b: usize) -> Seg {
        let len = b - a;
        let n = len as f64;
        // Local time u = t − a: Σu = n(n−1)/2, Σ(u − ū)² = n(n² − 1)/12, exactly.
        let ubar = (n - 1.0) / 2.0;
        let sy = self.y[b] - self.y[a];
        let ybar = sy / n;
        let sxx = n * (n * n - 1.0) / 12.0;
        let suy = (self.ty[b] - self.ty[a]) - a as f64 * sy;
        let sxy = suy - ubar * sy;
        let syy = ((self.yy[b] - self.yy[a]) - sy * ybar).max(0.0);
        Seg {
            a,
            b,
            n,
            tbar: a as f64 + ubar,
            ybar,
            sxx,
            sxy,
            syy,
        }
    }

    /// Σ over consecutive pairs inside [a, b) of e_t e_{t−1}, the residuals of the line
    /// `e_t = y_t − (ybar + beta · (t − tbar))` (`tbar` the segment's mean time), in the
    /// segment's own time u = t − a (see [`Sums::seg`]).
    fn lag_resid(&self, a: usize, b: usize, ybar: f64, beta: f64, tbar: f64) -> f64 {
        if b < a + 2 {
            return 0.0;
        }
        let af = a as f64;
        // The line in local time: level `al` at u = 0, slope `beta`.
        let al = ybar - beta * (tbar - af);
        let yab = |x: usize, z: usize| self.y[z] - self.y[x];
        // Σ (t − o) y_t over [x, z).
        let uy = |x: usize, z: usize, o: f64| (self.ty[z] - self.ty[x]) - o * yab(x, z);
        // Σ_{t=a+1}^{b−1} y_t y_{t−1}: lag[b] − lag[a+1].
        let p = self.lag[b] - self.lag[a + 1];
        let s_cur = yab(a + 1, b); // Σ y_t
        let s_prev = yab(a, b - 1); // Σ y_{t−1}
        // With u = t − a for t = a+1..b−1: Σ (u − 1) y_t and Σ u y_{t−1}.
        let u1_cur = uy(a + 1, b, af + 1.0);
        let u_prev = uy(a, b - 1, af - 1.0);
        let q = (b - a - 1) as f64;
        let su = q * (q + 1.0) / 2.0;
        let su2 = q * (q + 1.0) * (2.0 * q + 1.0) / 6.0;
        p - al * (s_cur + s_prev) - beta * (u1_cur + u_prev)
            + q * al * al
            + al * beta * (2.0 * su - q)
            + beta * beta * (su2 - su)
    }
}

#[derive(Clone, Copy)]
struct Seg {
    a: usize,
    b: usize,
    n: f64,
    tbar: f64,
    ybar: f64,
    sxx: f64,
    sxy: f64,
    syy: f64,
}

/// One model's fit around a change: (model, residual sum of squares, parameters, step,
/// variance factor of the step, level before at the boundary, slope before, slope after).
type Fit = (LevelModel, f64, f64, f64, f64, f64, f64, f64);

/// The test of one change at τ between its neighbours.
#[derive(Clone, Copy, Debug)]
struct Test {
    model: LevelModel,
    step: f64,
    level_before: f64,
    sigma: f64,
    rho: f64,
    pvalue: f64,
    strength: f64,
}

struct Ctx<'a> {
    sums: &'a Sums,
    beta: f64,
    sigma_floor: f64,
    opts: &'a RobustOptions,
}

impl Ctx<'_> {
    /// Tests a step at `tau` between `[l, tau)` and `[tau, r)`.
    fn test(&self, l: usize, tau: usize, r: usize) -> Test {
        let sl = self.sums.seg(l, tau);
        let sr = self.sums.seg(tau, r);
        let big_n = sl.n + sr.n;
        let c = tau as f64 - 0.5;
        // (model, rss, k, step, c_step, level_before, slopes for the residual lags)
        let mut fits: Vec<Fit> = Vec::with_capacity(3);
        {
            let rss = sl.syy + sr.syy;
            let step = sr.ybar - sl.ybar;
            fits.push((
                LevelModel::Constant,
                rss,
                2.0,
                step,
                1.0 / sl.n + 1.0 / sr.n,
                sl.ybar,
                0.0,
                0.0,
            ));
        }
        let sxx = sl.sxx + sr.sxx;
        if self.opts.trend && big_n >= 6.0 && sxx > 0.0 {
            let b = (sl.sxy + sr.sxy) / sxx;
            let rss = (sl.syy + sr.syy - b * b * sxx).max(0.0);
            let step = (sr.ybar - sl.ybar) - b * (sr.tbar - sl.tbar);
            let cs = 1.0 / sl.n + 1.0 / sr.n + (sr.tbar - sl.tbar).powi(2) / sxx;
            let lb = sl.ybar + b * (c - sl.tbar);
            fits.push((
                LevelModel::SharedTrend { slope: b },
                rss,
                3.0,
                step,
                cs,
                lb,
                b,
                b,
            ));
        }
        if self.opts.trend && sl.n >= 3.0 && sr.n >= 3.0 && sl.sxx > 0.0 && sr.sxx > 0.0 {
            let bl = sl.sxy / sl.sxx;
            let br = sr.sxy / sr.sxx;
            let rss = (sl.syy - bl * bl * sl.sxx + sr.syy - br * br * sr.sxx).max(0.0);
            let lb = sl.ybar + bl * (c - sl.tbar);
            let ra = sr.ybar + br * (c - sr.tbar);
            let cs = 1.0 / sl.n
                + (c - sl.tbar).powi(2) / sl.sxx
                + 1.0 / sr.n
                + (c - sr.tbar).powi(2) / sr.sxx;
            fits.push((
                LevelModel::SeparateTrends {
                    before: bl,
                    after: br,
                },
                rss,
                4.0,
                ra - lb,
                cs,
                lb,
                bl,
                br,
            ));
        }
        // BIC with unknown variance; a floor keeps ln(0) away for exact data.
        let floor_rss = big_n * (self.sigma_floor * self.sigma_floor).max(1e-300);
        let bic =
            |rss: f64, k: f64| big_n * ((rss + 1e-3 * floor_rss) / big_n).ln() + k * big_n.ln();
        let (model, rss, k, step, cs, lb, bl, br) = *fits
            .iter()
            .min_by(|a, b| bic(a.1, a.2).total_cmp(&bic(b.1, b.2)))
            .expect("the constant model is always there");
        let df0 = big_n - k;
        if df0 < 1.0 {
            return Test {
                model,
                step,
                level_before: lb,
                sigma: self.sigma_floor,
                rho: 0.0,
                pvalue: 1.0,
                strength: 0.0,
            };
        }
        let sigma = (rss / df0).sqrt().max(self.sigma_floor);
        // Lag-1 autocorrelation of the residuals, pairs inside each segment.
        let rho = if rss > 0.0 {
            let num = self.sums.lag_resid(sl.a, sl.b, sl.ybar, bl, sl.tbar)
                + self.sums.lag_resid(sr.a, sr.b, sr.ybar, br, sr.tbar);
            (num / rss).clamp(0.0, self.opts.max_autocorrelation)
        } else {
            0.0
        };
        let infl = (1.0 + rho) / (1.0 - rho);
        let se = sigma * (cs * infl).sqrt();
        let t = if se > 0.0 { step / se } else { 0.0 };
        let df = (big_n / infl - k).max(1.0);
        let pvalue = student_t_two_sided_p(t, df);
        let z = if pvalue > 1e-300 {
            normal_quantile(1.0 - pvalue / 2.0).max(0.0)
        } else {
            t.abs()
        };
        let sig = z * z / self.beta;
        let eff = if self.opts.min_effect > 0.0 {
            (step.abs() / sigma / self.opts.min_effect).powi(2)
        } else {
            f64::INFINITY
        };
        Test {
            model,
            step,
            level_before: lb,
            sigma,
            rho,
            pvalue,
            strength: sig.min(eff),
        }
    }
}

/// Lag-1 autocorrelation of the residuals of the segment means (segments between the
/// change points `cps` of `0..n`), pooled over the pairs inside segments; 0 when negative
/// or undefined.
fn pooled_autocorrelation(sums: &Sums, n: usize, cps: &[usize]) -> f64 {
    let mut bounds = Vec::with_capacity(cps.len() + 2);
    bounds.push(0);
    bounds.extend(cps.iter().copied().filter(|&c| c > 0 && c < n));
    bounds.push(n);
    let (mut num, mut den) = (0.0, 0.0);
    for w in bounds.windows(2) {
        let (a, b) = (w[0], w[1]);
        if b < a + 2 {
            continue;
        }
        let s = sums.seg(a, b);
        num += sums.lag_resid(a, b, s.ybar, 0.0, s.tbar);
        den += s.syy;
    }
    if den > 0.0 { (num / den).max(0.0) } else { 0.0 }
}

/// Lag-1 correlation above which the series is whitened before the steps are tested.
const WHITEN_PHI: f64 = 0.5;

/// Points a series needs for its lag-1 correlation to be estimated and acted on.
const WHITEN_MIN_POINTS: usize = 100;

/// The lag-1 autocorrelation phi of an AR(1) noise, from its first differences: their own
/// lag-1 correlation is -(1 - phi) / 2, whatever the levels (a step moves one difference:
/// the differences are winsorized at 3 MAD first). 0 for white noise; at most 0.95.
fn ar1_from_differences(y: &[f64]) -> f64 {
    if y.len() < 8 {
        return 0.0;
    }
    let mut d: Vec<f64> = y.windows(2).map(|w| w[1] - w[0]).collect();
    let med = median(&d);
    let s = 1.4826 * mad(&d);
    if s <= 0.0 {
        return 0.0;
    }
    for v in &mut d {
        *v = med + (*v - med).clamp(-3.0 * s, 3.0 * s);
    }
    let mean = d.iter().sum::<f64>() / d.len() as f64;
    let den: f64 = d.iter().map(|v| (v - mean).powi(2)).sum();
    if den <= 0.0 {
        return 0.0;
    }
    let num: f64 = d.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    (1.0 + 2.0 * num / den).clamp(0.0, 0.95)
}

/// `y` whitened with `phi` (`z_j = y_(j+1) - phi y_j`), with its noise scale. A step of d
/// becomes a one-point spike of d and a step of d (1 - phi): the spike is an outlier of the
/// whitened series, pulled in to 3 noise sd of its running median (half-width `m`).
fn whiten(y: &[f64], phi: f64, m: usize) -> (Vec<f64>, f64) {
    let mut z: Vec<f64> = y.windows(2).map(|w| w[1] - phi * w[0]).collect();
    let sz = noise_scale(&z).max(1e-9);
    let med = running_median(&z, m);
    for (v, c) in z.iter_mut().zip(&med) {
        if (*v - c).abs() > 3.0 * sz {
            *v = c + (*v - c).signum() * 3.0 * sz;
        }
    }
    let sz = noise_scale(&z).max(1e-9);
    (z, sz)
}

/// Change points of `y` (noise scale `sigma`): candidates, merged, refined.
fn segment(ctx: &Ctx, y: &[f64], sigma: f64, m: usize) -> Vec<usize> {
    let n = y.len();
    let cands = candidates(y, m, sigma);
    let mut cps = merge(ctx, n, &cands);
    for _ in 0..2 {
        let before = cps.clone();
        refine(ctx, n, &mut cps, m);
        cps.dedup();
        cps = merge(ctx, n, &cps);
        if cps == before {
            break;
        }
    }
    cps
}

/// Multiscale MOSUM candidates, at least `m` apart, strongest kept.
fn candidates(y: &[f64], m: usize, sigma: f64) -> Vec<usize> {
    let n = y.len();
    let mut s = Vec::with_capacity(n + 1);
    s.push(0.0);
    let mut acc = 0.0;
    for &v in y {
        acc += v;
        s.push(acc);
    }
    let sigma = if sigma > 0.0 { sigma } else { 1e-300 };
    // (index, scale, statistic)
    let mut found: Vec<(usize, f64, f64)> = Vec::new();
    let mut g = m.max(1);
    while 2 * g <= n {
        let lo = g.max(m);
        let hi = n - g.max(m);
        if lo <= hi {
            let norm = sigma * (2.0 / g as f64).sqrt();
            let d: Vec<f64> = (lo..=hi)
                .map(|t| (((s[t + g] - s[t]) - (s[t] - s[t - g])) / g as f64 / norm).abs())
                .collect();
            let h = (g / 2).max(1);
            // Sliding maximum over [i − h, i + h] with a monotone deque.
            let len = d.len();
            let mut wmax = vec![0.0; len];
            let mut dq: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
            let mut next = 0;
            for (i, wm) in wmax.iter_mut().enumerate() {
                let end = (i + h).min(len - 1);
                while next <= end {
                    while dq.back().is_some_and(|&j| d[j] <= d[next]) {
                        dq.pop_back();
                    }
                    dq.push_back(next);
                    next += 1;
                }
                while dq.front().is_some_and(|&j| j + h < i) {
                    dq.pop_front();
                }
                *wm = d[*dq.front().expect("window is not empty")];
            }
            for i in 0..len {
                if d[i] >= 2.0 && d[i] >= wmax[i] {
                    found.push((i + lo, g as f64, d[i]));
                }
            }
        }
        g *= 2;
    }
    // The finest scale locates a change best: it goes first, then the strongest.
    found.sort_by(|a, b| {
        a.1.total_cmp(&b.1)
            .then(b.2.total_cmp(&a.2))
            .then(a.0.cmp(&b.0))
    });
    let mut kept: BTreeSet<usize> = BTreeSet::new();
    for (t, _, _) in found {
        let lo = t.saturating_sub(m - 1);
        if kept.range(lo..t + m).next().is_none() {
            kept.insert(t);
        }
    }
    kept.into_iter().collect()
}

/// Bottom-up merge: removes the weakest change point (strength < 1) and re-tests its
/// neighbours, until every survivor has strength >= 1.
fn merge(ctx: &Ctx, n: usize, cands: &[usize]) -> Vec<usize> {
    let k = cands.len();
    if k == 0 {
        return Vec::new();
    }
    let mut prev: Vec<Option<usize>> = (0..k).map(|i| i.checked_sub(1)).collect();
    let mut next: Vec<Option<usize>> = (0..k).map(|i| (i + 1 < k).then_some(i + 1)).collect();
    let mut alive = vec![true; k];
    let mut ver = vec![0u32; k];
    let bounds = |prev: &[Option<usize>], next: &[Option<usize>], i: usize| {
        (
            prev[i].map(|p| cands[p]).unwrap_or(0),
            next[i].map(|q| cands[q]).unwrap_or(n),
        )
    };
    let mut heap: BinaryHeap<Reverse<(Key, usize, u32)>> = BinaryHeap::with_capacity(k);
    for (i, &c) in cands.iter().enumerate() {
        let (l, r) = bounds(&prev, &next, i);
        let s = ctx.test(l, c, r).strength;
        heap.push(Reverse((Key(s), i, 0)));
    }
    while let Some(Reverse((Key(s), i, v))) = heap.pop() {
        if !alive[i] || v != ver[i] {
            continue;
        }
        if s >= 1.0 {
            break;
        }
        alive[i] = false;
        let (p, q) = (prev[i], next[i]);
        if let Some(p) = p {
            next[p] = q;
        }
        if let Some(q) = q {
            prev[q] = p;
        }
        for j in [p, q].into_iter().flatten() {
            ver[j] += 1;
            let (l, r) = bounds(&prev, &next, j);
            let s = ctx.test(l, cands[j], r).strength;
            heap.push(Reverse((Key(s), j, ver[j])));
        }
    }
    (0..k).filter(|&i| alive[i]).map(|i| cands[i]).collect()
}

/// Total order on f64 for the heap (NaN last).
#[derive(Clone, Copy, PartialEq)]
struct Key(f64);
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}

/// Moves each change point to the position in `[l + m, r − m]` with the largest strength.
fn refine(ctx: &Ctx, n: usize, cps: &mut [usize], m: usize) {
    for i in 0..cps.len() {
        let l = if i == 0 { 0 } else { cps[i - 1] };
        let r = if i + 1 == cps.len() { n } else { cps[i + 1] };
        if r < l + 2 * m {
            continue;
        }
        let mut best = (cps[i], ctx.test(l, cps[i], r).strength);
        let radius = 3 * m;
        for tau in (l + m).max(cps[i].saturating_sub(radius))..=(r - m).min(cps[i] + radius) {
            if tau == cps[i] {
                continue;
            }
            let s = ctx.test(l, tau, r).strength;
            if s > best.1 {
                best = (tau, s);
            }
        }
        cps[i] = best.0;
    }
}

fn segment_stats(v: &[f64]) -> SegmentStats {
    SegmentStats {
        n: v.len(),
        mean: mean(v),
        std: std_dev(v),
    }
}

/// Change points of `x` (see the module documentation). Deterministic; `x` may hold NaN.
#[allow(clippy::too_many_lines)]
pub fn detect(x: &[f64], opts: &RobustOptions) -> Detection {
    let m = opts.min_segment.max(2);
    let (idx, vals, mut det) = match prepare("robust", x, 2 * m) {
        Ok(v) => v,
        Err(d) => return d,
    };
    let n = vals.len();
    // Standardise (robust location and scale) for numerical comfort.
    let loc = median(&vals);
    let mut scale = noise_scale(&vals);
    if scale <= 0.0 {
        scale = 1.4826 * mad(&vals);
    }
    if scale <= 0.0 {
        let (lo, hi) = vals
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        scale = hi - lo;
    }
    let mut y: Vec<f64> = vals.iter().map(|v| (v - loc) / scale).collect();
    let mut sigma = noise_scale(&y);
    // The noise's lag-1 correlation, before anything is pulled in: strongly autocorrelated
    // noise wanders far from its running median without an outlier (and is whitened
    // below, where outliers are pulled in).
    // Below WHITEN_MIN_POINTS the estimate is too noisy to act on (its error is about
    // 2 / sqrt(n)).
    let mut phi = if n >= WHITEN_MIN_POINTS {
        ar1_from_differences(&y)
    } else {
        0.0
    };
    let pull_in = |y: &mut Vec<f64>, det: &mut Detection, sigma: f64| {
        if opts.outlier_z <= 0.0 || sigma <= 0.0 {
            return;
        }
        let med = running_median(y, m);
        let b = opts.outlier_z * sigma;
        for (v, c) in y.iter_mut().zip(&med) {
            if (*v - c).abs() > b {
                *v = c + (*v - c).signum() * b;
                det.outliers += 1;
            }
        }
        if det.outliers > 0 {
            det.notes.push(format!(
                "{} outlier(s) beyond {} noise sd of the running median pulled in",
                det.outliers, opts.outlier_z
            ));
        }
    };
    // Outliers.
    let mut pulled_in = phi < WHITEN_PHI;
    if pulled_in {
        pull_in(&mut y, &mut det, sigma);
    }
    // Seasonality.
    let period = match opts.seasonality {
        Seasonality::Off => None,
        Seasonality::Period(p) => Some(p),
        Seasonality::Auto => detect_period(&y, 400),
    };
    if let Some(p) = period {
        let force = matches!(opts.seasonality, Seasonality::Period(_));
        match seasonal_profile(&y, p, force) {
            Some(prof) => {
                for (t, v) in y.iter_mut().enumerate() {
                    *v -= prof[t % p];
                }
                det.period = Some(p);
                let amp = prof.iter().fold(0.0f64, |a, v| a.max(v.abs())) * scale;
                det.notes.push(format!(
                    "seasonal pattern of period {p} points (amplitude {}) removed before detection",
                    fmt_num(amp)
                ));
                sigma = noise_scale(&y);
            }
            None if force => det.notes.push(format!(
                "period {p} ignored: the series has fewer than two full periods"
            )),
            None => {}
        }
    }
    if det.period.is_some() && !pulled_in {
        // A seasonal pattern makes the differences look correlated: it is gone now, and
        // the noise may not be; its outliers are pulled in when it is not.
        phi = ar1_from_differences(&y);
        if phi < WHITEN_PHI {
            pull_in(&mut y, &mut det, sigma);
            pulled_in = true;
        }
    }
    if sigma <= 0.0 {
        // Exactly piecewise linear: any step is real; keep a tiny scale.
        sigma = 1e-9;
    }
    let beta = opts.penalty.max(0.0) * (n as f64).ln().max(1.0);
    det.threshold = beta;
    det.noise_sd = sigma * scale;
    // Strongly autocorrelated noise (an AR(1) of lag-1 correlation phi >= 0.5) is whitened
    // first, z_t = y_t - phi y_(t-1): its steps are tested against independent noise with
    // their real degrees of freedom (generalised least squares), where the test of the
    // levels themselves, corrected for the correlation, keeps a few degrees of freedom of a
    // segment and lets a 10-sd step pass unseen.
    // The differences' estimate of phi is noisy (about 0.1 at 300 points), and too high a
    // phi shrinks the steps to nothing (d (1 - phi)): once the steps of a first whitened
    // pass are known, phi is estimated again from the residuals of the series' own
    // segments (Cochrane-Orcutt), and the series whitened with it.
    let phi = if phi >= WHITEN_PHI && n > 4 * m {
        // The first pass whitens at most with 0.8, so that a step keeps at least a fifth of
        // its size whatever the estimate's error.
        let (z, sz) = whiten(&y, phi.min(0.8), m);
        let s = Sums::new(&z);
        let w = Ctx {
            sums: &s,
            beta,
            sigma_floor: 0.5 * sz,
            opts,
        };
        let first: Vec<usize> = segment(&w, &z, sz, m).into_iter().map(|j| j + 1).collect();
        pooled_autocorrelation(&Sums::new(&y), n, &first).min(0.95)
    } else {
        phi
    };
    if phi < WHITEN_PHI && !pulled_in {
        // The second estimate says the noise is not that correlated after all: its
        // outliers are pulled in, as for any series.
        pull_in(&mut y, &mut det, sigma);
    }
    let sums = Sums::new(&y);
    let ctx = Ctx {
        sums: &sums,
        beta,
        sigma_floor: 0.5 * sigma,
        opts,
    };
    let whitened = (phi >= WHITEN_PHI && n > 4 * m).then(|| whiten(&y, phi, m));
    let wsums = whitened.as_ref().map(|(z, _)| Sums::new(z));
    let wctx = whitened
        .as_ref()
        .zip(wsums.as_ref())
        .map(|((_, sz), s)| Ctx {
            sums: s,
            beta,
            sigma_floor: 0.5 * sz,
            opts,
        });
    let cps: Vec<usize> = match (&whitened, &wctx) {
        // z_j is y's point j + 1.
        (Some((z, sz)), Some(w)) => segment(w, z, *sz, m).into_iter().map(|j| j + 1).collect(),
        _ => segment(&ctx, &y, sigma, m),
    };
    if wctx.is_some() {
        det.notes.push(format!(
            "strongly autocorrelated noise (lag-1 correlation {phi:.2}): steps tested on the \
             whitened series y_t - {phi:.2} y_(t-1)"
        ));
    }
    for i in 0..cps.len() {
        let l = if i == 0 { 0 } else { cps[i - 1] };
        let r = if i + 1 == cps.len() { n } else { cps[i + 1] };
        let mut t = ctx.test(l, cps[i], r);
        if let Some(w) = &wctx {
            // The decision is the whitened test's; the step, levels and noise are the
            // series' own.
            let tw = w.test(l.saturating_sub(1), cps[i] - 1, r - 1);
            t.pvalue = tw.pvalue;
            t.strength = tw.strength;
        }
        let model = match t.model {
            LevelModel::Constant => LevelModel::Constant,
            LevelModel::SharedTrend { slope } => LevelModel::SharedTrend {
                slope: slope * scale,
            },
            LevelModel::SeparateTrends { before, after } => LevelModel::SeparateTrends {
                before: before * scale,
                after: after * scale,
            },
        };
        let level_before = loc + t.level_before * scale;
        let step = t.step * scale;
        det.changes.push(Change {
            index: idx[cps[i]],
            before: segment_stats(&vals[l..cps[i]]),
            after: segment_stats(&vals[cps[i]..r]),
            step,
            level_before,
            rel_change: if level_before != 0.0 {
                step / level_before
            } else {
                0.0
            },
            noise_sd: t.sigma * scale,
            step_over_noise: t.step / t.sigma,
            model,
            autocorrelation: t.rho,
            pvalue: t.pvalue,
            strength: t.strength,
        });
    }
    det
}

fn fmt_num(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && !(1e-3..1e6).contains(&a) {
        format!("{x:.3e}")
    } else {
        format!("{x:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: usize, seed: u64, sd: f64) -> Vec<f64> {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let u1: f64 = 1.0 - rng.random::<f64>();
                let u2: f64 = rng.random::<f64>();
                sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
            })
            .collect()
    }

    fn idx(d: &Detection) -> Vec<usize> {
        d.changes.iter().map(|c| c.index).collect()
    }

    /// Σ (t − t̄) y and Σ (y − ȳ)² of y[a..b] with times measured from the segment's mean.
    fn direct_moments(y: &[f64], a: usize, b: usize) -> (f64, f64, f64) {
        let ys = &y[a..b];
        let ym = mean(ys);
        let tb = (a + b - 1) as f64 / 2.0;
        let sxx: f64 = (a..b).map(|t| (t as f64 - tb).powi(2)).sum();
        let sxy: f64 = (a..b).map(|t| (t as f64 - tb) * (y[t] - ym)).sum();
        let syy: f64 = ys.iter().map(|v| (v - ym).powi(2)).sum();
        (sxx, sxy, syy)
    }

    #[test]
    fn lag_products_match_a_direct_sum() {
        let y: Vec<f64> = (0..40)
            .map(|i| ((i * 7) % 11) as f64 + 0.1 * i as f64)
            .collect();
        let s = Sums::new(&y);
        let (a, b, ym, be) = (5, 31, 0.7, 0.21);
        let tb = s.seg(a, b).tbar;
        let line = |t: usize| ym + be * (t as f64 - tb);
        let direct: f64 = (a + 1..b)
            .map(|t| (y[t] - line(t)) * (y[t - 1] - line(t - 1)))
            .sum();
        assert!((s.lag_resid(a, b, ym, be, tb) - direct).abs() < 1e-9);
        let g = s.seg(3, 20);
        let (sxx, sxy, syy) = direct_moments(&y, 3, 20);
        assert!((g.syy - syy).abs() < 1e-9 && (g.ybar - mean(&y[3..20])).abs() < 1e-12);
        assert!((g.sxx - sxx).abs() < 1e-9 && (g.sxy - sxy).abs() < 1e-9);
        assert_eq!(g.tbar, 11.0);
    }

    #[test]
    fn short_segments_far_into_a_long_history_keep_their_digits() {
        // A million points of noise 17 sd above the median (the tail after a step, in the
        // detector's units). The sums of t and t² over a 7-run segment at run 777,568 used
        // to be differences of numbers near 2·10^17: sxx came out as 28 ± 60, the slope of
        // that segment as anything, and the "step" of a trend model as -25 noise sd.
        let y: Vec<f64> = noise(1_000_000, 9, 1.0).iter().map(|v| 17.0 + v).collect();
        let s = Sums::new(&y);
        for (a, b) in [(777_568, 777_575), (999_990, 1_000_000), (600_000, 777_568)] {
            let g = s.seg(a, b);
            let (sxx, sxy, syy) = direct_moments(&y, a, b);
            assert!(
                (g.sxx - sxx).abs() <= 1e-9 * sxx,
                "{a}..{b}: {} vs {sxx}",
                g.sxx
            );
            // A slope error below a thousandth of a noise sd over the segment.
            let tol = 1e-6 * (sxx * syy).sqrt() + 1e-3 * sxx.sqrt();
            assert!((g.sxy - sxy).abs() <= tol, "{a}..{b}: {} vs {sxy}", g.sxy);
            assert!((g.syy - syy).abs() <= 1e-6 * syy + 1e-6, "{a}..{b}");
        }
        let opts = RobustOptions::default();
        let ctx = Ctx {
            sums: &s,
            beta: 3.0 * (1e6f64).ln(),
            sigma_floor: 0.5,
            opts: &opts,
        };
        // A 7-run stretch of the same noise is no step.
        for tau in [777_568, 904_864, 999_993] {
            let t = ctx.test(600_000, tau, (tau + 7).min(1_000_000));
            assert!(t.step.abs() < 3.0 && t.strength < 1.0, "{tau}: {t:?}");
        }
    }

    #[test]
    fn a_step_is_found_and_explained() {
        let x: Vec<f64> = noise(200, 1, 0.3)
            .into_iter()
            .enumerate()
            .map(|(i, e)| if i < 120 { 100.0 } else { 103.0 } + e)
            .collect();
        let d = detect(&x, &RobustOptions::default());
        assert_eq!(d.status, Status::Analysed);
        assert_eq!(idx(&d), vec![120], "{d:?}");
        let c = d.changes[0];
        assert!((c.step - 3.0).abs() < 0.3, "{c:?}");
        assert!((c.noise_sd - 0.3).abs() < 0.08, "{c:?}");
        assert!(c.step_over_noise > 7.0);
        assert!(!c.model.has_trend());
        assert!((c.rel_change - 0.03).abs() < 0.003);
        assert!(d.series_pvalue() < 1e-6);
    }

    #[test]
    fn a_trend_is_not_a_change_but_a_step_on_it_is() {
        let e = noise(400, 2, 0.3);
        let trend: Vec<f64> = e
            .iter()
            .enumerate()
            .map(|(i, v)| 100.0 + 0.05 * i as f64 + v)
            .collect();
        assert!(detect(&trend, &RobustOptions::default()).changes.is_empty());
        // A curved growth (exponential) with little noise.
        let growth: Vec<f64> = e
            .iter()
            .enumerate()
            .map(|(i, v)| 100.0 * (i as f64 / 150.0).exp() + 0.05 * v)
            .collect();
        let d = detect(&growth, &RobustOptions::default());
        assert!(d.changes.is_empty(), "{:?}", idx(&d));
        let stepped: Vec<f64> = trend
            .iter()
            .enumerate()
            .map(|(i, v)| if i >= 250 { v - 4.0 } else { *v })
            .collect();
        let d = detect(&stepped, &RobustOptions::default());
        assert_eq!(idx(&d), vec![250], "{d:?}");
        let c = d.changes[0];
        assert!(c.model.has_trend(), "{c:?}");
        assert!((c.step + 4.0).abs() < 0.5, "{c:?}");
    }

    #[test]
    fn seasonality_is_removed() {
        let e = noise(364, 3, 0.2);
        let x: Vec<f64> = e
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let week = if i % 7 >= 5 { -2.0 } else { 0.5 };
                50.0 + week + v + if i >= 200 { 1.5 } else { 0.0 }
            })
            .collect();
        let d = detect(&x, &RobustOptions::default());
        assert_eq!(d.period, Some(7), "{d:?}");
        assert_eq!(idx(&d), vec![200], "{d:?}");
    }

    #[test]
    fn missing_short_and_constant_series_are_explained() {
        let mut x: Vec<f64> = noise(120, 4, 0.1)
            .into_iter()
            .enumerate()
            .map(|(i, e)| if i < 60 { 10.0 } else { 12.0 } + e)
            .collect();
        x[10] = f64::NAN;
        x[70] = f64::INFINITY;
        let d = detect(&x, &RobustOptions::default());
        assert_eq!(d.missing, 2);
        assert_eq!(idx(&d), vec![60]);
        assert!(d.notes[0].contains("2 missing"), "{:?}", d.notes);
        let short = detect(&[1.0, 2.0, 3.0], &RobustOptions::default());
        assert_eq!(short.status, Status::TooShort);
        assert!(short.notes[0].contains("at least 10"), "{:?}", short.notes);
        let flat = detect(&[4.0; 50], &RobustOptions::default());
        assert_eq!(flat.status, Status::Constant);
        let none = detect(&[f64::NAN; 5], &RobustOptions::default());
        assert_eq!(none.status, Status::NoData);
    }

    #[test]
    fn quantized_series_without_a_change() {
        // Integer counts around 4 (more than half the differences are 0).
        let e = noise(300, 5, 0.45);
        let x: Vec<f64> = e.iter().map(|v| (4.0 + v).round()).collect();
        let zeros = x.windows(2).filter(|w| w[0] == w[1]).count();
        assert!(zeros > 100, "{zeros}");
        let d = detect(&x, &RobustOptions::default());
        assert!(d.changes.is_empty(), "{:?}", d.changes);
        // The same counts with a shift of 2 at 150.
        let y: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, v)| if i >= 150 { v + 2.0 } else { *v })
            .collect();
        assert_eq!(idx(&detect(&y, &RobustOptions::default())), vec![150]);
    }

    #[test]
    fn outliers_do_not_make_changes() {
        let mut x: Vec<f64> = noise(300, 6, 0.2).into_iter().map(|v| 5.0 + v).collect();
        for i in [30, 31, 100, 200, 201, 202] {
            x[i] += 5.0;
        }
        let d = detect(&x, &RobustOptions::default());
        assert!(d.changes.is_empty(), "{:?}", idx(&d));
        assert!(d.outliers >= 6);
    }

    #[test]
    fn detect_period_finds_a_week() {
        let x: Vec<f64> = noise(200, 7, 0.1)
            .iter()
            .enumerate()
            .map(|(i, v)| (2.0 * std::f64::consts::PI * i as f64 / 7.0).sin() + v)
            .collect();
        assert_eq!(detect_period(&x, 100), Some(7));
        let trend: Vec<f64> = (0..200).map(|i| (i as f64).sqrt()).collect();
        assert_eq!(detect_period(&trend, 100), None);
        assert_eq!(detect_period(&noise(300, 8, 1.0), 100), None);
    }
}
