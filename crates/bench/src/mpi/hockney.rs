//! Hockney's model of a message's time, t(n) = t0 + k n / B, fitted by weighted least
//! squares.
//!
//! t0 is the latency (the time of an empty message), B the asymptotic bandwidth and k the
//! benchmark's byte factor (1 for PingPong, 2 for Sendrecv, 4 for Exchange: the IMB
//! convention, so that B compares with the Mbytes/sec plateau). The half-performance
//! message size n_1/2 = t0 B / k is where the achieved bandwidth is half of B.
//!
//! With `relative` weights (1/t_i^2) the fit minimises the relative errors, so that the
//! microsecond times of small messages weigh as much as the millisecond times of large
//! ones: t0 comes from the small sizes, B from the large. `absolute` weights are ordinary
//! least squares, as research notes 004 section 6.9 fits Table 4.6.

use serde::{Deserialize, Serialize};

/// What the least squares minimise.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Weights {
    /// Minimise relative errors (weights 1/t^2): small and large messages count alike.
    #[default]
    Relative,
    /// Ordinary least squares on µs: the large messages dominate.
    Absolute,
}

impl Weights {
    /// The name in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Weights::Relative => "relative",
            Weights::Absolute => "absolute",
        }
    }
}

/// A fitted Hockney model.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HockneyFit {
    /// Latency t0, µs.
    pub t0_us: f64,
    /// Slope, µs per byte of message.
    pub slope_us_per_byte: f64,
    /// Asymptotic bandwidth B = k / slope in bytes per µs, i.e. MB/s with MB = 10^6 B.
    pub bandwidth_mbs: f64,
    /// The byte factor k the bandwidth counts with.
    pub bytes_factor: f64,
    /// Half-performance message size n_1/2 = t0 / slope, bytes.
    pub n_half_bytes: f64,
    /// The weights used.
    pub weights: Weights,
    /// The message sizes fitted, bytes.
    pub sizes_bytes: Vec<u64>,
    /// Coefficient of determination of the times (unweighted).
    pub r2: f64,
    /// Root mean square of the relative errors.
    pub rms_rel_error: f64,
    /// Largest |model - measured| / measured.
    pub max_rel_error: f64,
    /// The size where the largest relative error occurs, bytes.
    pub worst_bytes: u64,
}

impl HockneyFit {
    /// The model's time for an `bytes`-byte message, µs.
    pub fn time_us(&self, bytes: f64) -> f64 {
        self.t0_us + self.slope_us_per_byte * bytes
    }
}

/// Why a fit is impossible.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    /// Fewer than two distinct sizes.
    #[error("a latency and a bandwidth need at least two distinct message sizes, found {0}")]
    TooFewSizes(usize),
    /// A time is zero, negative or not finite.
    #[error("the time of {bytes} B is {t} µs: times must be positive")]
    BadTime {
        /// The size.
        bytes: u64,
        /// The time.
        t: f64,
    },
    /// The times do not grow with the size: no bandwidth can be read from them.
    #[error(
        "the times do not grow with the message size (slope {slope:.3e} µs/B): no bandwidth can be fitted"
    )]
    NoSlope {
        /// The fitted slope.
        slope: f64,
    },
}

/// Fits t = t0 + slope n to `points` (bytes, µs) with `weights`; `bytes_factor` is k.
pub fn fit(
    points: &[(u64, f64)],
    weights: Weights,
    bytes_factor: f64,
) -> Result<HockneyFit, FitError> {
    for &(b, t) in points {
        if !(t.is_finite() && t > 0.0) {
            return Err(FitError::BadTime { bytes: b, t });
        }
    }
    let mut distinct: Vec<u64> = points.iter().map(|p| p.0).collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 2 {
        return Err(FitError::TooFewSizes(distinct.len()));
    }
    // Normal equations of min sum w (t0 + s n - t)^2, centred on the weighted means for
    // accuracy (sizes span 0 .. 4e6, times 0.1 .. 1e4).
    let w = |t: f64| match weights {
        Weights::Relative => 1.0 / (t * t),
        Weights::Absolute => 1.0,
    };
    let sw: f64 = points.iter().map(|&(_, t)| w(t)).sum();
    let mn = points.iter().map(|&(n, t)| w(t) * n as f64).sum::<f64>() / sw;
    let mt = points.iter().map(|&(_, t)| w(t) * t).sum::<f64>() / sw;
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for &(n, t) in points {
        let dx = n as f64 - mn;
        sxx += w(t) * dx * dx;
        sxy += w(t) * dx * (t - mt);
    }
    let slope = sxy / sxx;
    if !(slope.is_finite() && slope > 0.0) {
        return Err(FitError::NoSlope { slope });
    }
    let t0 = mt - slope * mn;
    let mean_t = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
    let (mut ss_res, mut ss_tot, mut sq_rel, mut max_rel, mut worst) = (0.0, 0.0, 0.0, 0.0, 0);
    for &(n, t) in points {
        let m = t0 + slope * n as f64;
        ss_res += (m - t) * (m - t);
        ss_tot += (t - mean_t) * (t - mean_t);
        let rel = ((m - t) / t).abs();
        sq_rel += rel * rel;
        if rel > max_rel {
            max_rel = rel;
            worst = n;
        }
    }
    Ok(HockneyFit {
        t0_us: t0,
        slope_us_per_byte: slope,
        bandwidth_mbs: bytes_factor / slope,
        bytes_factor,
        n_half_bytes: t0 / slope,
        weights,
        sizes_bytes: distinct,
        r2: if ss_tot > 0.0 {
            1.0 - ss_res / ss_tot
        } else {
            1.0
        },
        rms_rel_error: (sq_rel / points.len() as f64).sqrt(),
        max_rel_error: max_rel,
        worst_bytes: worst,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes() -> Vec<u64> {
        std::iter::once(0)
            .chain((0..=22).map(|k| 1u64 << k))
            .collect()
    }

    /// Times made from a known model are fitted back exactly, with either weighting.
    #[test]
    fn recovers_a_known_model_exactly() {
        // t0 = 0.35 µs, B = 5000 MB/s (5000 B/µs): n_1/2 = 1750 B.
        let pts: Vec<(u64, f64)> = sizes()
            .into_iter()
            .map(|n| (n, 0.35 + n as f64 / 5000.0))
            .collect();
        for w in [Weights::Relative, Weights::Absolute] {
            let f = fit(&pts, w, 1.0).unwrap();
            assert!((f.t0_us - 0.35).abs() < 1e-9, "{w:?} {}", f.t0_us);
            assert!(
                (f.bandwidth_mbs - 5000.0).abs() < 1e-6,
                "{w:?} {}",
                f.bandwidth_mbs
            );
            assert!((f.n_half_bytes - 1750.0).abs() < 1e-6, "{}", f.n_half_bytes);
            assert!(f.max_rel_error < 1e-9 && (f.r2 - 1.0).abs() < 1e-12);
            assert_eq!(f.sizes_bytes.len(), 24);
            assert!((f.time_us(1750.0) - 0.70).abs() < 1e-9);
        }
        // Sendrecv counts both directions: the same times with k = 2 give twice the bandwidth.
        let f = fit(&pts, Weights::Relative, 2.0).unwrap();
        assert!((f.bandwidth_mbs - 10_000.0).abs() < 1e-6);
        assert!((f.n_half_bytes - 1750.0).abs() < 1e-6);
    }

    /// Research notes 004, section 6.9: OLS of Table 4.6's Sendrecv t_avg for bytes >= 1024
    /// gives t0 = 0.5896 µs and slope 0.0051889 µs/B (2 / slope = 385.4 MB/s).
    #[test]
    fn reproduces_the_seed_fit_of_table_4_6() {
        let rows = [
            (1024, 6.10),
            (2048, 11.39),
            (4096, 22.08),
            (8192, 43.32),
            (16384, 86.17),
            (32768, 172.19),
            (65536, 331.48),
            (131_072, 686.36),
            (262_144, 1369.50),
            (524_288, 2725.52),
            (1_048_576, 5433.15),
            (2_097_152, 10_872.46),
            (4_194_304, 21_770.60),
        ];
        let f = fit(&rows, Weights::Absolute, 2.0).unwrap();
        assert!((f.t0_us - 0.5896).abs() < 5e-4, "{}", f.t0_us);
        assert!(
            (f.slope_us_per_byte - 0.0051889).abs() < 5e-8,
            "{}",
            f.slope_us_per_byte
        );
        assert!(
            (f.bandwidth_mbs - 385.4).abs() < 0.05,
            "{}",
            f.bandwidth_mbs
        );
        assert!(f.r2 > 0.99999, "{}", f.r2);
    }

    /// Relative weights keep the latency of small messages even when a large message is
    /// slow; ordinary least squares let the large times set t0.
    #[test]
    fn relative_weights_protect_the_latency() {
        let mut pts: Vec<(u64, f64)> = sizes()
            .into_iter()
            .map(|n| (n, 1.0 + n as f64 / 1000.0))
            .collect();
        // 4 MiB 10% slower (a protocol switch, a noisy neighbour).
        let last = pts.len() - 1;
        pts[last].1 *= 1.1;
        let rel = fit(&pts, Weights::Relative, 1.0).unwrap();
        let abs = fit(&pts, Weights::Absolute, 1.0).unwrap();
        assert!((rel.t0_us - 1.0).abs() < 0.05, "{}", rel.t0_us);
        assert!((abs.t0_us - 1.0).abs() > 1.0, "{}", abs.t0_us);
        assert_eq!(rel.worst_bytes, 1 << 22);
    }

    #[test]
    fn impossible_fits_say_why() {
        assert_eq!(
            fit(&[(8, 1.0), (8, 1.1)], Weights::Relative, 1.0),
            Err(FitError::TooFewSizes(1))
        );
        assert!(matches!(
            fit(&[(8, 1.0), (16, 0.0)], Weights::Relative, 1.0),
            Err(FitError::BadTime { bytes: 16, .. })
        ));
        assert!(matches!(
            fit(&[(8, 2.0), (1 << 20, 1.0)], Weights::Absolute, 1.0),
            Err(FitError::NoSlope { .. })
        ));
    }
}
