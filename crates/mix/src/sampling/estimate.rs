//! The estimators of a sampled simulation and their 95 % intervals: the ratio estimator
//! over units (windows or set classes), L1's miss expansion, the regression on the bytes,
//! and the bytes' half-width.

/// The ratio estimate `sum(h) / sum(a)` over units `(a, h)` and the half-width of its
/// 95 % interval, with the finite-population correction for `n` of `big_n` units.
///
/// The interval is a Wilson score interval on the effective number of accesses, as Korn
/// and Graubard give for proportions estimated from cluster samples ("Confidence intervals
/// for proportions with small expected number of positive counts estimated from survey
/// data", Survey Methodology 24(2), 1998): the design effect `deff` is the ratio
/// estimator's variance from the between-unit residuals `h_i - R a_i` over the binomial
/// variance `R (1 - R) / sum(a)`, at least 1; the effective sample is
/// `sum(a) / deff x (1.96 / t)^2`, `t` Student's 97.5 % quantile with one degree of freedom
/// less than the units with accesses. The reported half-width is the larger distance from
/// `R` to the Wilson bounds, times `sqrt(1 - n/N)`. Where accesses are many and spread
/// over many units, it is the Student-t interval on the residuals; where few accesses fall
/// in few units (a level most accesses never reach, a ratio near 0 or 1), that interval is
/// far too narrow (the residuals of a handful of units say little of the variance) and this
/// one stays honest: `bench/mix/coverage.sh` measures both, docs/mix-performance.md has the
/// table.
pub fn ratio_estimate(units: &[(u64, u64)], big_n: u64) -> (Option<f64>, Option<f64>) {
    match residuals(units, big_n) {
        Ok(res) => (
            Some(res.r),
            Some(wilson_half(res.r, res.sa, res.var, res.used - 1, res.fpc)),
        ),
        Err(r) => (r, None),
    }
}

/// The relative half-width of the 95 % interval of a level's bytes, estimated from sampled
/// units `(bytes of the unit's accesses, bytes the level served)` by their ratio times the
/// known bytes of all `big_n` units (how the counters are extrapolated): Student's t on the
/// between-unit residuals `y - R x`, with the finite-population correction. None with fewer
/// than two units or no byte served. It measures the variation between the units drawn,
/// as the hit ratios' intervals do, not what the draw cannot see.
pub fn bytes_half_width(units: &[(u64, u64)], big_n: u64) -> Option<f64> {
    let n = units.len() as f64;
    let (sx, sy) = units
        .iter()
        .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x as f64, b + y as f64));
    if units.len() < 2 || sy <= 0.0 || sx <= 0.0 {
        return None;
    }
    let r = sy / sx;
    let s2 = units
        .iter()
        .map(|&(x, y)| (y as f64 - r * x as f64).powi(2))
        .sum::<f64>()
        / (n - 1.0);
    let fpc = (1.0 - n / big_n.max(units.len() as u64) as f64).max(0.0);
    Some(t975(units.len() - 1) * (fpc * s2 / n).sqrt() / (sy / n))
}

/// L1's hit ratio under set sampling, where the level's accesses are known: every access
/// of the program reaches L1, and the plugin counts those it leaves out. `units` are the
/// measured classes' `(accesses, hits, extra pieces)` (an access that straddles lines
/// counts as one access per piece; a class's extra pieces are the pieces of straddling
/// accesses that are not their first), `big_n` the classes in all and `records` the
/// program's accesses counted whole. The misses and the extra pieces of all classes are
/// each estimated by expansion, `g x mean` over the measured classes (unbiased under the
/// random choice of classes, whatever their sizes); L1's accesses are `records` plus the
/// extra pieces, its hit ratio one minus the misses over them. The interval is
/// [`ratio_estimate`]'s Wilson interval with the variance of the linearized residuals
/// `m - (M/A) x` over the classes, on `n - 1` degrees of freedom.
///
/// It replaces the ratio estimator (and the regression on the bytes that followed it) for
/// L1 because hits concentrate where misses do not: a few hot lines (a loop's scalars, an
/// accumulator, a short index array) add millions of hits to the one or two classes that
/// hold them and no miss. A draw without those classes gives the ratio estimator the other
/// classes' ratio with an interval of their (tiny) spread, which does not hold the
/// program's: on CG at `--sample 8`, 7 draws in 8 (cascadelake-8260's interval held the
/// full run's L1 hit ratio in 11 % of 400 draws, the regression's too). Misses are spread
/// over the classes, and the accesses are known, so neither the hot classes' presence nor
/// their absence moves the estimate (100 % of the draws on CG, 97.7 % to 99.5 % on
/// Monte-Carlo; `bench/mix/coverage.sh`). None with fewer than two classes or no access.
pub fn miss_expansion_estimate(
    units: &[(u64, u64, u64)],
    big_n: u64,
    records: u64,
) -> (Option<f64>, Option<f64>) {
    match ExpansionFit::new(units, big_n, records) {
        Some(fit) => (Some(fit.ratio), Some(fit.half)),
        None => (None, None),
    }
}

/// What [`miss_expansion_estimate`] fits: L1's estimated accesses (pieces) and hits over
/// all classes, their ratio and the half-width of its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ExpansionFit {
    pub(crate) accesses: f64,
    pub(crate) hits: f64,
    pub(crate) ratio: f64,
    pub(crate) half: f64,
}

impl ExpansionFit {
    /// None with fewer than two classes, or no access at all.
    pub(crate) fn new(units: &[(u64, u64, u64)], big_n: u64, records: u64) -> Option<Self> {
        if units.len() < 2 {
            return None;
        }
        let n = units.len() as f64;
        let g = big_n.max(units.len() as u64) as f64;
        let m: Vec<f64> = units
            .iter()
            .map(|&(a, h, _)| a.saturating_sub(h) as f64)
            .collect();
        let x: Vec<f64> = units.iter().map(|u| u.2 as f64).collect();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / n;
        let accesses = records as f64 + g * mean(&x);
        if accesses <= 0.0 {
            return None;
        }
        let misses = (g * mean(&m)).min(accesses);
        let rho = misses / accesses;
        let ratio = 1.0 - rho;
        let z: Vec<f64> = m.iter().zip(&x).map(|(mi, xi)| mi - rho * xi).collect();
        let mz = mean(&z);
        let s2 = z.iter().map(|v| (v - mz).powi(2)).sum::<f64>() / (n - 1.0);
        let var = g * g * s2 / n / (accesses * accesses);
        let sampled: f64 = units.iter().map(|u| u.0 as f64).sum();
        let fpc = (1.0 - n / g).max(0.0);
        Some(Self {
            accesses,
            hits: accesses - misses,
            ratio,
            half: wilson_half(ratio, sampled.max(1.0), var, units.len() - 1, fpc),
        })
    }
}

/// The half-width of [`ratio_estimate`]'s interval around `r`: a Wilson interval on the
/// effective number of accesses, from `sa` accesses sampled, the estimator's variance
/// `var` (without the finite-population correction), Student's t on `df` degrees of
/// freedom and the correction `fpc`.
fn wilson_half(r: f64, sa: f64, var: f64, df: usize, fpc: f64) -> f64 {
    let var_binomial = r * (1.0 - r) / sa;
    let deff = if var_binomial > 0.0 {
        (var / var_binomial).max(1.0)
    } else {
        1.0
    };
    let z = 1.96;
    let n_eff = sa / deff * (z / t975(df)).powi(2);
    let (lo, hi) = wilson(r, n_eff, z);
    (r - lo).max(hi - r) * fpc.sqrt()
}

/// `mix --sample` estimated L1 with this before [`miss_expansion_estimate`]; it stays for
/// the coverage study (`bench/mix/coverage.sh`), which compares the two.
///
/// The hit ratio of a level from sampled units `(bytes, accesses, hits)` when the bytes
/// of all `big_n` units, `total_bytes`, are known (the plugin counts the bytes of every
/// access, sampled or not): the regression estimator of a ratio (Cochran, Sampling
/// Techniques, 3rd ed., 1977, sections 7.1 and 6.11). The accesses and hits of the level
/// are each estimated as `g (mean + b (B/g - mean bytes))`, `b` their least-squares slope
/// on the bytes over the sampled units, and the ratio is the quotient of the two.
///
/// Where a level's accesses sit in a few units while its misses are spread over all
/// (a few hot lines: Monte-Carlo's L1, 99 % of the hits in an eighth of the classes), the
/// ratio estimator swings with how many hot units a draw holds; the regression corrects
/// the draw's accesses to the known bytes. Where hits and accesses are proportional to
/// the bytes, it is the ratio estimator. The interval is [`ratio_estimate`]'s Wilson
/// interval with the variance of the linearized residuals `h - R a` after their own
/// regression on the bytes, on `n - 2` degrees of freedom, as the prediction variance of
/// the regression at the population's mean bytes (`s^2 (1/n + (B/g - mean)^2 / Sxx)`,
/// Royall and Cumberland, JASA 76(373), 1981), which widens the interval where the draw's
/// bytes are unlike the population's. With fewer than four units,
/// or bytes alike in every unit, it is [`ratio_estimate`].
pub fn regression_estimate(
    units: &[(u64, u64, u64)],
    big_n: u64,
    total_bytes: u64,
) -> (Option<f64>, Option<f64>) {
    match RegressionFit::new(units, big_n, total_bytes) {
        Some(fit) => (Some(fit.ratio), Some(fit.half)),
        None => {
            let plain: Vec<(u64, u64)> = units.iter().map(|&(_, a, h)| (a, h)).collect();
            ratio_estimate(&plain, big_n)
        }
    }
}

/// What [`regression_estimate`] fits: the level's hit ratio and the half-width of its
/// interval.
#[derive(Debug, Clone, Copy, PartialEq)]
struct RegressionFit {
    ratio: f64,
    half: f64,
}

impl RegressionFit {
    /// None where [`regression_estimate`] falls back to the ratio estimator.
    fn new(units: &[(u64, u64, u64)], big_n: u64, total_bytes: u64) -> Option<Self> {
        let n = units.len() as f64;
        let f = |v: u64| v as f64;
        if units.len() < 4 || units.iter().all(|u| u.1 == 0) {
            return None;
        }
        let mean = |k: fn(&(u64, u64, u64)) -> u64| units.iter().map(|u| f(k(u))).sum::<f64>() / n;
        let (mx, ma, mh) = (mean(|u| u.0), mean(|u| u.1), mean(|u| u.2));
        let sxx: f64 = units.iter().map(|u| (f(u.0) - mx).powi(2)).sum();
        if sxx <= 0.0 {
            return None;
        }
        let slope = |k: fn(&(u64, u64, u64)) -> u64, m: f64| {
            units
                .iter()
                .map(|u| (f(u.0) - mx) * (f(k(u)) - m))
                .sum::<f64>()
                / sxx
        };
        let big = f(big_n.max(units.len() as u64));
        let shift = f(total_bytes) / big - mx;
        let a_reg = ma + slope(|u| u.1, ma) * shift;
        let h_reg = (mh + slope(|u| u.2, mh) * shift).clamp(0.0, a_reg.max(0.0));
        if a_reg <= 0.0 {
            return None;
        }
        let r = h_reg / a_reg;
        // Linearized residuals, then their regression on the bytes.
        let d: Vec<f64> = units.iter().map(|u| f(u.2) - r * f(u.1)).collect();
        let md = d.iter().sum::<f64>() / n;
        let bd = units
            .iter()
            .zip(&d)
            .map(|(u, &di)| (f(u.0) - mx) * (di - md))
            .sum::<f64>()
            / sxx;
        let s2 = units
            .iter()
            .zip(&d)
            .map(|(u, &di)| (di - md - bd * (f(u.0) - mx)).powi(2))
            .sum::<f64>()
            / (n - 2.0);
        // The regression's prediction variance at the known mean bytes: the slope's error
        // grows with how far the draw's mean bytes lie from the population's (a draw
        // without the few hot units extrapolates far).
        let var = s2 * (1.0 / n + shift * shift / sxx) / (a_reg * a_reg);
        if !(var.is_finite() && r.is_finite()) {
            return None;
        }
        let fpc = (1.0 - n / big).max(0.0);
        Some(Self {
            ratio: r,
            half: wilson_half(r, n * a_reg, var, units.len() - 2, fpc),
        })
    }
}

/// What both intervals start from: the ratio `r`, the accesses `sa` of the `used` units that
/// have any, the finite-population correction `fpc` and the ratio estimator's variance
/// from the between-unit residuals (without the correction).
struct Residuals {
    r: f64,
    sa: f64,
    used: usize,
    fpc: f64,
    var: f64,
}

/// The [`Residuals`] of `units`; `Err` with the ratio when there is none (no access:
/// `None`) or no interval (one unit with accesses).
fn residuals(units: &[(u64, u64)], big_n: u64) -> Result<Residuals, Option<f64>> {
    let used: Vec<(f64, f64)> = units
        .iter()
        .filter(|(a, _)| *a > 0)
        .map(|&(a, h)| (a as f64, h as f64))
        .collect();
    let sa: f64 = used.iter().map(|u| u.0).sum();
    let sh: f64 = used.iter().map(|u| u.1).sum();
    if sa == 0.0 {
        return Err(None);
    }
    let r = sh / sa;
    let n = used.len() as f64;
    if used.len() < 2 {
        return Err(Some(r));
    }
    let mean_a = sa / n;
    let s2 = used.iter().map(|&(a, h)| (h - r * a).powi(2)).sum::<f64>() / (n - 1.0);
    let fpc = (1.0 - units.len() as f64 / big_n.max(units.len() as u64) as f64).max(0.0);
    Ok(Residuals {
        r,
        sa,
        used: used.len(),
        fpc,
        var: s2 / (n * mean_a * mean_a),
    })
}

/// The Student-t interval on the between-unit residuals that [`ratio_estimate`] gave before
/// the Wilson interval (kept for the coverage study, `bench/mix/coverage.sh`): the same
/// estimate, half-width `t x sqrt(fpc x var)`.
pub fn t_interval(units: &[(u64, u64)], big_n: u64) -> (Option<f64>, Option<f64>) {
    match residuals(units, big_n) {
        Ok(res) => (
            Some(res.r),
            Some(t975(res.used - 1) * (res.fpc * res.var).sqrt()),
        ),
        Err(r) => (r, None),
    }
}

/// The Wilson score interval of a proportion `p` observed on `n` trials (`n` may be
/// fractional: an effective sample size), at the normal quantile `z`.
fn wilson(p: f64, n: f64, z: f64) -> (f64, f64) {
    let z2n = z * z / n;
    let centre = (p + z2n / 2.0) / (1.0 + z2n);
    let half = z / (1.0 + z2n) * (p * (1.0 - p) / n + z2n / (4.0 * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The 97.5 % quantile of Student's t distribution with `df` degrees of freedom (the
/// two-sided 95 % interval of a mean of `df + 1` units); 1.96 from 120 on.
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        31..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}
