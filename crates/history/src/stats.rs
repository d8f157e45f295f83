//! Small, hand-written statistics: location and spread, robust (modified) z-scores, the
//! Mann-Whitney U test, Student's t-test, a seeded bootstrap of the ratio of medians, and the
//! special functions they need (erf/erfc, log-gamma, regularised incomplete beta).
//!
//! Every function is pure. NaN inputs are the caller's business: the store never holds them.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

/// The constant of the modified z-score of Iglewicz and Hoaglin (1993): Φ⁻¹(0.75) = 0.6745,
/// so that `0.6745 (x − median) / MAD` is a standard score for normal data.
pub const MODIFIED_Z: f64 = 0.6745;

/// Arithmetic mean; NaN for an empty slice.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance with the n − 1 denominator; 0 for fewer than two values.
pub fn variance(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n < 2 {
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64
}

/// Sample standard deviation (n − 1 denominator).
pub fn std_dev(xs: &[f64]) -> f64 {
    variance(xs).sqrt()
}

fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Median of an already sorted slice (mean of the two middle values for an even length).
pub fn median_sorted(v: &[f64]) -> f64 {
    hpcscope_core::stats::median_sorted(v)
}

/// Median (mean of the two middle values for an even length); NaN for an empty slice.
pub fn median(xs: &[f64]) -> f64 {
    median_sorted(&sorted(xs))
}

/// Median absolute deviation from the median, unscaled: `median(|x_i − median(x)|)`.
pub fn mad(xs: &[f64]) -> f64 {
    let m = median(xs);
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

/// Location and robust spread of a baseline, for modified z-scores.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RobustScale {
    /// Median of the baseline.
    pub median: f64,
    /// Median absolute deviation (unscaled).
    pub mad: f64,
    /// Mean absolute deviation from the median, the fallback spread when MAD is 0.
    pub mean_ad: f64,
}

impl RobustScale {
    /// Median, MAD and mean absolute deviation of `baseline`.
    pub fn of(baseline: &[f64]) -> RobustScale {
        let m = median(baseline);
        let dev: Vec<f64> = baseline.iter().map(|x| (x - m).abs()).collect();
        RobustScale {
            median: m,
            mad: median(&dev),
            mean_ad: mean(&dev),
        }
    }

    /// Modified z-score of `x`: `M = 0.6745 (x − median) / MAD` (Iglewicz and Hoaglin).
    ///
    /// When MAD is 0 (more than half the baseline is identical), the mean absolute deviation
    /// is used instead, `M = (x − median) / (1.253314 MeanAD)`. When that is 0 too the
    /// baseline is constant ([`RobustScale::is_constant`]): it has no spread to measure a
    /// departure against, and there is no z-score (`None`, never an infinity).
    pub fn z(&self, x: f64) -> Option<f64> {
        let d = x - self.median;
        if self.mad > 0.0 {
            Some(MODIFIED_Z * d / self.mad)
        } else if self.mean_ad > 0.0 {
            Some(d / (1.253314 * self.mean_ad))
        } else {
            None
        }
    }

    /// Every baseline value is the same (both spreads are 0).
    pub fn is_constant(&self) -> bool {
        !(self.mad > 0.0 || self.mean_ad > 0.0)
    }
}

/// Modified z-scores of every value of `xs` against `baseline` (see [`RobustScale::z`]).
pub fn robust_z_scores(baseline: &[f64], xs: &[f64]) -> Vec<Option<f64>> {
    let s = RobustScale::of(baseline);
    xs.iter().map(|&x| s.z(x)).collect()
}

// ---------------------------------------------------------------------------------------
// Special functions
// ---------------------------------------------------------------------------------------

/// Error function erf(x), accurate to about 1e-15 (series below |x| = 3, continued fraction
/// for erfc above).
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x.abs() < 3.0 {
        erf_series(x)
    } else {
        x.signum() * (1.0 - erfc_cf(x.abs()))
    }
}

/// Complementary error function erfc(x) = 1 − erf(x), with full relative accuracy in the tail.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    if x < 0.0 {
        2.0 - erfc(-x)
    } else if x < 3.0 {
        1.0 - erf_series(x)
    } else {
        erfc_cf(x)
    }
}

fn erf_series(x: f64) -> f64 {
    // erf(x) = 2/√π Σ (−1)^n x^(2n+1) / (n! (2n+1))
    if x == 0.0 || x.is_nan() {
        return x;
    }
    let x2 = x * x;
    let mut term = x;
    let mut sum = x;
    for k in 1..200 {
        let n = k as f64;
        term *= -x2 / n;
        let add = term / (2.0 * n + 1.0);
        sum += add;
        if add.abs() <= 1e-17 * sum.abs() {
            break;
        }
    }
    sum * std::f64::consts::FRAC_2_SQRT_PI
}

fn erfc_cf(x: f64) -> f64 {
    // erfc(x) = exp(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + …))))), Lentz's method.
    let tiny = 1e-300;
    let mut f = x;
    let mut c = x;
    let mut d = 0.0;
    for k in 1..300 {
        let a = k as f64 / 2.0;
        d = x + a * d;
        d = if d.abs() < tiny { tiny } else { d };
        c = x + a / c;
        c = if c.abs() < tiny { tiny } else { c };
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (-x * x).exp() / (f * std::f64::consts::PI.sqrt())
}

/// Standard normal cumulative distribution Φ(z).
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// Standard normal survival function 1 − Φ(z), accurate in the upper tail.
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// Quantile of the standard normal distribution, Φ⁻¹(p), for 0 < p < 1 (Acklam's rational
/// approximation refined by one Halley step on [`erfc`]; about 1e-15 relative). Returns
/// ∓infinity at p = 0 and p = 1, NaN outside [0, 1].
pub fn normal_quantile(p: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) || p.is_nan() {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let lo = 0.024_25;
    let x = if p < lo {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - lo {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    // One Halley step: e = Φ(x) − p, computed in the tail that keeps precision, and
    // u = e / φ(x) as (e / t) · t / φ(x) with t the tail probability: past p ≈ 1e-308,
    // exp(x²/2) alone overflows (and φ(x) underflows), which made the step NaN for the
    // p-values of steps of 40 noise sd and more.
    let (e, t) = if x < 0.0 {
        (normal_cdf(x) - p, p)
    } else {
        ((1.0 - p) - normal_sf(x), 1.0 - p)
    };
    let u = e / t * (2.0 * std::f64::consts::PI).sqrt() * (t.ln() + x * x / 2.0).exp();
    let refined = x - u / (1.0 + x * u / 2.0);
    if refined.is_finite() { refined } else { x }
}

/// Benjamini-Hochberg step-up procedure: which of the hypotheses with p-values `p` are
/// rejected when the false discovery rate is controlled at level `q`. The largest k with
/// `p_(k) <= k q / m` is found and the k smallest p-values are rejected. NaN p-values are
/// never rejected (and still count in m).
pub fn benjamini_hochberg(p: &[f64], q: f64) -> Vec<bool> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).filter(|&i| !p[i].is_nan()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut k = 0;
    for (rank, &i) in order.iter().enumerate() {
        if p[i] <= (rank + 1) as f64 * q / m as f64 {
            k = rank + 1;
        }
    }
    let mut out = vec![false; m];
    for &i in &order[..k] {
        out[i] = true;
    }
    out
}

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, 9 terms; about 1e-15 relative).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).abs().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Regularised incomplete beta function I_x(a, b) (continued fraction, Numerical Recipes
/// §6.4), for a, b > 0 and 0 ≤ x ≤ 1.
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_cf(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    let tiny = 1e-300;
    let qab = a + b;
    let qap = a + 1.0;
    let qam = a - 1.0;
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < tiny {
        d = tiny;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..10_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// Two-sided p-value of Student's t distribution with `df` degrees of freedom:
/// `P(|T| ≥ |t|) = I_{df/(df+t²)}(df/2, 1/2)`.
pub fn student_t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t.is_nan() { 1.0 } else { 0.0 };
    }
    if df <= 0.0 {
        return 1.0;
    }
    inc_beta(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
}

/// Result of a two-sample t-test.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TTest {
    /// t statistic (positive when the second sample's mean is larger).
    pub t: f64,
    /// Degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub pvalue: f64,
}

/// Student's two-sample t-test with pooled variance, from summary statistics (as scipy's
/// `ttest_ind_from_stats(equal_var=True)`, which Otava uses):
/// `t = (m2 − m1) / (s_p √(1/n1 + 1/n2))`, `s_p² = ((n1−1)s1² + (n2−1)s2²)/(n1+n2−2)`.
///
/// Two constant, equal samples give p = 1; two constant, different samples give p = 0.
pub fn t_test_from_stats(m1: f64, s1: f64, n1: usize, m2: f64, s2: f64, n2: usize) -> TTest {
    let df = (n1 + n2) as f64 - 2.0;
    if n1 == 0 || n2 == 0 || df <= 0.0 {
        return TTest {
            t: 0.0,
            df: df.max(0.0),
            pvalue: 1.0,
        };
    }
    let sp2 = ((n1 as f64 - 1.0) * s1 * s1 + (n2 as f64 - 1.0) * s2 * s2) / df;
    let se = (sp2 * (1.0 / n1 as f64 + 1.0 / n2 as f64)).sqrt();
    let diff = m2 - m1;
    let scale = m1.abs().max(m2.abs()).max(1e-300);
    if se <= 1e-12 * scale {
        let equal = diff.abs() <= 1e-12 * scale;
        return TTest {
            t: if equal {
                0.0
            } else {
                diff.signum() * f64::INFINITY
            },
            df,
            pvalue: if equal { 1.0 } else { 0.0 },
        };
    }
    let t = diff / se;
    TTest {
        t,
        df,
        pvalue: student_t_two_sided_p(t, df),
    }
}

/// Student's pooled two-sample t-test on raw samples (see [`t_test_from_stats`]).
pub fn t_test(a: &[f64], b: &[f64]) -> TTest {
    t_test_from_stats(mean(a), std_dev(a), a.len(), mean(b), std_dev(b), b.len())
}

// ---------------------------------------------------------------------------------------
// Mann-Whitney U
// ---------------------------------------------------------------------------------------

/// Result of a Mann-Whitney U test of "the candidate tends to be larger than the baseline".
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U statistic of the candidate sample: the number of (candidate, baseline) pairs where
    /// the candidate is larger, ties counting one half.
    pub u: f64,
    /// Normal-approximation z score (with tie and continuity corrections).
    pub z: f64,
    /// One-sided p-value, alternative "candidate stochastically larger".
    pub p_greater: f64,
    /// One-sided p-value, alternative "candidate stochastically smaller".
    pub p_less: f64,
    /// Two-sided p-value.
    pub p_two_sided: f64,
}

/// Mann-Whitney U test of `candidate` against `baseline`, normal approximation with tie
/// correction and continuity correction (the defaults of scipy's `mannwhitneyu` with
/// `method="asymptotic"`).
///
/// `U = R₁ − n₁(n₁+1)/2` where R₁ is the rank sum of the candidate (average ranks for ties);
/// `μ = n₁n₂/2`; `σ² = n₁n₂/12 · ((n+1) − Σ(t³−t)/(n(n−1)))` over tie groups of size t;
/// `z = (U − μ ∓ 0.5)/σ`. Returns `None` when either sample is empty.
pub fn mann_whitney_u(candidate: &[f64], baseline: &[f64]) -> Option<MannWhitney> {
    let n1 = candidate.len();
    let n2 = baseline.len();
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut all: Vec<(f64, bool)> = candidate
        .iter()
        .map(|&x| (x, true))
        .chain(baseline.iter().map(|&x| (x, false)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = all.len();
    let mut r1 = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && all[j].0 == all[i].0 {
            j += 1;
        }
        // Positions i..j (0-based) share the average rank (i+1 + j)/2.
        let rank = (i + 1 + j) as f64 / 2.0;
        let t = (j - i) as f64;
        tie_term += t * t * t - t;
        r1 += rank * all[i..j].iter().filter(|p| p.1).count() as f64;
        i = j;
    }
    let (n1f, n2f, nf) = (n1 as f64, n2 as f64, n as f64);
    let u = r1 - n1f * (n1f + 1.0) / 2.0;
    let mu = n1f * n2f / 2.0;
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if var <= 0.0 {
        // Every value is identical: no evidence either way.
        return Some(MannWhitney {
            u,
            z: 0.0,
            p_greater: 1.0,
            p_less: 1.0,
            p_two_sided: 1.0,
        });
    }
    let sd = var.sqrt();
    let z_g = (u - mu - 0.5) / sd;
    let z_l = (u - mu + 0.5) / sd;
    let p_greater = normal_sf(z_g).min(1.0);
    let p_less = normal_cdf(z_l).min(1.0);
    let z_two = ((u - mu).abs() - 0.5).max(0.0) / sd;
    Some(MannWhitney {
        u,
        z: (u - mu) / sd,
        p_greater,
        p_less,
        p_two_sided: (2.0 * normal_sf(z_two)).min(1.0),
    })
}

// ---------------------------------------------------------------------------------------
// Bootstrap
// ---------------------------------------------------------------------------------------

/// A bootstrap percentile confidence interval.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceInterval {
    /// Point estimate on the original samples.
    pub estimate: f64,
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
    /// Confidence level, e.g. 0.95.
    pub level: f64,
}

/// Percentile bootstrap confidence interval of `median(candidate) / median(baseline)`.
///
/// Each of `resamples` rounds draws both samples with replacement (independently) and takes
/// the ratio of their medians; the interval is the (1−level)/2 and (1+level)/2 quantiles of
/// those ratios. Deterministic for a given `seed` (PCG-64 MCG). Returns `None` for an empty
/// sample or a zero baseline median.
pub fn bootstrap_ratio_of_medians(
    candidate: &[f64],
    baseline: &[f64],
    resamples: usize,
    level: f64,
    seed: u64,
) -> Option<ConfidenceInterval> {
    if candidate.is_empty() || baseline.is_empty() {
        return None;
    }
    let mb = median(baseline);
    if mb == 0.0 || !mb.is_finite() {
        return None;
    }
    let estimate = median(candidate) / mb;
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let resamples = resamples.max(1);
    let mut ratios = Vec::with_capacity(resamples);
    let mut bc = vec![0.0; candidate.len()];
    let mut bb = vec![0.0; baseline.len()];
    for _ in 0..resamples {
        for v in bc.iter_mut() {
            *v = candidate[rng.random_range(0..candidate.len())];
        }
        for v in bb.iter_mut() {
            *v = baseline[rng.random_range(0..baseline.len())];
        }
        bc.sort_by(f64::total_cmp);
        bb.sort_by(f64::total_cmp);
        let d = median_sorted(&bb);
        if d != 0.0 {
            ratios.push(median_sorted(&bc) / d);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let q = |p: f64| quantile_sorted(&ratios, p);
    Some(ConfidenceInterval {
        estimate,
        lower: q((1.0 - level) / 2.0),
        upper: q((1.0 + level) / 2.0),
        level,
    })
}

/// Linear-interpolated quantile (type 7, as numpy's default) of a sorted slice.
pub fn quantile_sorted(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let h = (v.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

#[cfg(test)]
mod tests {
    use super::*;

    use hpcscope_test_support::close_rel as close;

    #[test]
    fn erf_known_values() {
        // Abramowitz and Stegun Table 7.1 / high-precision references.
        assert!(close(erf(0.5), 0.520_499_877_813_046_5, 1e-14));
        assert!(close(erf(1.0), 0.842_700_792_949_714_9, 1e-14));
        assert!(close(erfc(2.0), 0.004_677_734_981_047_266, 1e-13));
        assert!(close(erfc(4.0), 1.541_725_790_028_002e-8, 1e-12));
        assert!(close(erfc(-1.0), 1.842_700_792_949_715, 1e-14));
        assert!(close(normal_cdf(1.959_963_984_540_054), 0.975, 1e-13));
        assert!(close(normal_sf(6.0), 9.865_876_450_376_98e-10, 1e-10));
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(normal_cdf(0.0), 0.5);
        assert_eq!(normal_sf(f64::INFINITY), 0.0);
        assert_eq!(normal_cdf(f64::NEG_INFINITY), 0.0);
    }

    #[test]
    fn gamma_and_beta_known_values() {
        assert!((ln_gamma(1.0)).abs() < 1e-14);
        assert!(close(ln_gamma(5.0), (24.0f64).ln(), 1e-14));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-13
        ));
        // I_x(1, 1) = x; I_x(2, 1) = x²; I_{0.5}(a, a) = 0.5.
        assert!(close(inc_beta(1.0, 1.0, 0.3), 0.3, 1e-13));
        assert!(close(inc_beta(2.0, 1.0, 0.3), 0.09, 1e-12));
        assert!(close(inc_beta(7.5, 7.5, 0.5), 0.5, 1e-12));
    }

    #[test]
    fn student_t_known_values() {
        // t table: two-sided 5% critical values.
        assert!(close(
            student_t_two_sided_p(2.228_138_851_986_274, 10.0),
            0.05,
            1e-9
        ));
        assert!(close(
            student_t_two_sided_p(12.706_204_736_174_7, 1.0),
            0.05,
            1e-9
        ));
        assert!(close(
            student_t_two_sided_p(1.959_963_984_540_054, 1e7),
            0.05,
            1e-5
        ));
        assert_eq!(student_t_two_sided_p(0.0, 5.0), 1.0);
    }

    #[test]
    fn t_test_matches_hand_computation() {
        // a = 1..5 (mean 3, s² 2.5), b = 3..7 (mean 5, s² 2.5): s_p² = 2.5,
        // se = √(2.5 · 0.4) = 1, t = 2, df = 8, two-sided p = 0.080516.
        let r = t_test(&[1.0, 2.0, 3.0, 4.0, 5.0], &[3.0, 4.0, 5.0, 6.0, 7.0]);
        assert!(close(r.t, 2.0, 1e-12));
        assert_eq!(r.df, 8.0);
        assert!(close(r.pvalue, 0.080_516_238_8, 1e-6), "{}", r.pvalue);
        let c = t_test(&[2.0, 2.0, 2.0], &[2.0, 2.0]);
        assert_eq!(c.pvalue, 1.0);
        let d = t_test(&[2.0, 2.0, 2.0], &[3.0, 3.0]);
        assert_eq!(d.pvalue, 0.0);
    }

    #[test]
    fn mann_whitney_without_ties() {
        // Candidate 6..10 vs baseline 1..5: every pair favours the candidate, U = 25,
        // μ = 12.5, σ² = 25/12 · 11 = 22.9167, z = (25 − 12.5 − 0.5)/4.7871 = 2.50672,
        // p = 0.0060923 (scipy: mannwhitneyu(c, b, alternative='greater',
        // method='asymptotic').pvalue = 0.006092...).
        let c = [6.0, 7.0, 8.0, 9.0, 10.0];
        let b = [1.0, 2.0, 3.0, 4.0, 5.0];
        let r = mann_whitney_u(&c, &b).unwrap();
        assert_eq!(r.u, 25.0);
        assert!(close(r.p_greater, 0.006_092_5, 1e-3), "{}", r.p_greater);
        assert!(r.p_less > 0.99);
        assert!(close(r.p_two_sided, 2.0 * 0.006_092_5, 1e-3));
    }

    #[test]
    fn mann_whitney_with_ties() {
        // c = [1, 2, 2, 3], b = [2, 3, 3, 4]. Ranks: 1→1, 2→3 (×3), 3→6 (×3), 4→8.
        // R₁ = 1 + 3 + 3 + 6 = 13, U = 13 − 10 = 3, μ = 8.
        // Ties: two groups of 3: Σ(t³−t) = 48; σ² = 16/12 · (9 − 48/56) = 10.857142857.
        // p_less = Φ((3 − 8 + 0.5)/3.2950) = Φ(−1.36571) = 0.086015.
        let r = mann_whitney_u(&[1.0, 2.0, 2.0, 3.0], &[2.0, 3.0, 3.0, 4.0]).unwrap();
        assert_eq!(r.u, 3.0);
        let sd = (16.0 / 12.0 * (9.0 - 48.0 / 56.0f64)).sqrt();
        assert!(close(r.p_less, normal_cdf(-4.5 / sd), 1e-12));
        assert!(close(r.p_less, 0.086_015, 1e-3), "{}", r.p_less);
        let same = mann_whitney_u(&[1.0, 1.0], &[1.0, 1.0]).unwrap();
        assert_eq!(same.p_two_sided, 1.0);
    }

    #[test]
    fn robust_scale_table_3_2() {
        // Seed 004 Table 3.2 time ratios; research note §6.10: median 1.0075, MAD 0.0030.
        let r = table_3_2_ratios();
        let s = RobustScale::of(&r);
        assert!(close(s.median, 1.0075, 1e-12));
        assert!(close(s.mad, 0.0030, 1e-9));
        assert!(close(s.z(1.030).unwrap(), 5.059, 1e-3));
        assert!(close(s.z(1.020).unwrap(), 2.810, 1e-3));
        assert!(close(s.z(0.994).unwrap(), -3.035, 1e-3));
        assert!(close(mean(&r), 1.005_812_5, 1e-12));
        assert!(close(variance(&r), 3.536_25e-5, 1e-9));
    }

    #[test]
    fn zero_mad_falls_back() {
        let s = RobustScale::of(&[1.0, 1.0, 1.0, 2.0]);
        assert_eq!(s.mad, 0.0);
        assert!(s.z(2.0).is_some_and(|z| z > 0.0 && z.is_finite()));
        assert!(!s.is_constant());
        // A constant baseline has no spread and no z-score, not an infinite one.
        let c = RobustScale::of(&[1.0, 1.0]);
        assert!(c.is_constant());
        assert_eq!(c.z(1.0), None);
        assert_eq!(c.z(2.0), None);
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_estimate() {
        let b: Vec<f64> = (0..30).map(|i| 100.0 + (i % 7) as f64 * 0.3).collect();
        let c: Vec<f64> = b.iter().map(|x| x * 1.10).collect();
        let ci = bootstrap_ratio_of_medians(&c, &b, 2000, 0.95, 7).unwrap();
        let ci2 = bootstrap_ratio_of_medians(&c, &b, 2000, 0.95, 7).unwrap();
        assert_eq!(ci, ci2);
        assert!(ci.lower <= ci.estimate && ci.estimate <= ci.upper);
        assert!(close(ci.estimate, 1.10, 1e-12));
        assert!(ci.lower > 1.05, "{ci:?}");
    }

    #[test]
    fn normal_quantile_inverts_the_cdf() {
        // Table values: Φ⁻¹(0.975) = 1.959963984540054, Φ⁻¹(0.999) = 3.090232306167813.
        assert!(close(normal_quantile(0.975), 1.959_963_984_540_054, 1e-13));
        assert!(close(normal_quantile(0.999), 3.090_232_306_167_813, 1e-12));
        assert!(close(normal_quantile(0.025), -1.959_963_984_540_054, 1e-13));
        assert_eq!(normal_quantile(0.5), 0.0);
        for p in [1e-300, 1e-20, 1e-8, 0.01, 0.3, 0.77, 0.99999] {
            let z = normal_quantile(p);
            assert!(close(normal_cdf(z), p, 1e-12), "{p} -> {z}");
        }
        assert_eq!(normal_quantile(0.0), f64::NEG_INFINITY);
        assert!(normal_quantile(1.5).is_nan());
        // Subnormal tail probabilities (the t-test's p of a step of 40 noise sd and more):
        // the refinement overflowed and the quantile came out NaN.
        for (p, z) in [
            (1e-310, -37.663_06),
            (1.566e-320, -38.257_41),
            (5e-324, -38.467_41),
        ] {
            let q = normal_quantile(p);
            assert!((q - z).abs() < 1e-4, "{p:e} -> {q}");
        }
    }

    #[test]
    fn benjamini_hochberg_by_hand() {
        // m = 5, q = 0.05: thresholds 0.01, 0.02, 0.03, 0.04, 0.05. Sorted p: 0.001, 0.015,
        // 0.035, 0.041, 0.3: the largest k with p_(k) <= k q / m is 2 (0.015 <= 0.02;
        // 0.035 > 0.03, 0.041 > 0.04): the two smallest are rejected.
        let p = [0.3, 0.015, 0.001, 0.041, 0.035];
        assert_eq!(
            benjamini_hochberg(&p, 0.05),
            vec![false, true, true, false, false]
        );
        // Step-up: a later rank passing rescues an earlier one that fails its own threshold.
        // (0.04 > 0.05/3 on its own, but 0.046 <= 3 · 0.05/3 rejects all three.)
        let p = [0.046, 0.04, 0.045];
        assert_eq!(benjamini_hochberg(&p, 0.05), vec![true, true, true]);
        assert_eq!(
            benjamini_hochberg(&[f64::NAN, 0.2], 0.05),
            vec![false, false]
        );
        assert!(benjamini_hochberg(&[], 0.05).is_empty());
    }

    #[test]
    fn quantiles() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&v, 0.5), 2.5);
        assert_eq!(quantile_sorted(&v, 0.0), 1.0);
        assert_eq!(quantile_sorted(&v, 1.0), 4.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 100.0]), 1.0);
    }

    /// Seed 004, Table 3.2, "Time Ratio" column (16 rows, N = 500…8000).
    pub(crate) fn table_3_2_ratios() -> Vec<f64> {
        vec![
            1.006, 1.003, 0.998, 1.011, 1.009, 0.994, 1.005, 1.009, 0.998, 1.015, 0.999, 1.009,
            1.006, 1.013, 1.009, 1.009,
        ]
    }
}
