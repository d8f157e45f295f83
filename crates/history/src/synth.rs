//! Labelled synthetic histories for evaluating change-point detection (the Hunter paper's
//! method: known changes injected into noisy series), and precision/recall/F1 scoring.
//!
//! A history is `base · level(i) · (1 + noise · ε_i) · drift(i)` with ε standard normal,
//! `level` a piecewise-constant product of steps of ±`step` at the labelled change points,
//! optional outliers (a few slow runs, 4–8 noise standard deviations up) and an optional
//! slow linear drift (one noise standard deviation over the whole history) that is *not* a
//! change point.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

/// Parameters of one synthetic history.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SynthSpec {
    /// Number of points.
    pub n: usize,
    /// Relative step size at each change point (0.05 = 5%).
    pub step: f64,
    /// Relative noise standard deviation (0.01 = 1%).
    pub noise: f64,
    /// Number of change points.
    pub changes: usize,
    /// Minimum distance between change points, and from the ends.
    pub min_gap: usize,
    /// Probability that a point is an outlier.
    pub outlier_rate: f64,
    /// Add a slow drift of one noise standard deviation over the history.
    pub drift: bool,
    /// Seed.
    pub seed: u64,
}

impl Default for SynthSpec {
    fn default() -> Self {
        SynthSpec {
            n: 300,
            step: 0.05,
            noise: 0.01,
            changes: 3,
            min_gap: 30,
            outlier_rate: 0.01,
            drift: false,
            seed: 0,
        }
    }
}

/// A synthetic history with its true change points.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SynthHistory {
    /// The spec it came from.
    pub spec: SynthSpec,
    /// The values.
    pub values: Vec<f64>,
    /// True change points (index of the first point after each step), sorted.
    pub change_points: Vec<usize>,
    /// Indices of the injected outliers.
    pub outliers: Vec<usize>,
}

fn normal(rng: &mut Pcg64Mcg) -> f64 {
    // Box-Muller.
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Generates one labelled history; deterministic for a given spec (seed included).
pub fn generate(spec: &SynthSpec) -> SynthHistory {
    let mut rng = Pcg64Mcg::seed_from_u64(spec.seed ^ 0x9E37_79B9_7F4A_7C15);
    let n = spec.n;
    let gap = spec.min_gap.max(1);
    // Change points: rejection sampling with spacing `gap` from each other and the ends.
    let mut cps: Vec<usize> = Vec::new();
    if n > 2 * gap {
        let mut tries = 0;
        while cps.len() < spec.changes && tries < 10_000 {
            tries += 1;
            let c = rng.random_range(gap..=n - gap);
            if cps.iter().all(|&o| o.abs_diff(c) >= gap) {
                cps.push(c);
            }
        }
    }
    cps.sort_unstable();
    let mut level = 1.0;
    let mut next = 0;
    let base = 100.0;
    let mut values = Vec::with_capacity(n);
    let mut outliers = Vec::new();
    for i in 0..n {
        while next < cps.len() && cps[next] == i {
            let sign = if rng.random::<bool>() { 1.0 } else { -1.0 };
            level *= 1.0 + sign * spec.step;
            next += 1;
        }
        let drift = if spec.drift {
            1.0 + spec.noise * (i as f64 / n as f64)
        } else {
            1.0
        };
        let mut v = base * level * drift * (1.0 + spec.noise * normal(&mut rng));
        if rng.random::<f64>() < spec.outlier_rate {
            v *= 1.0 + spec.noise * rng.random_range(4.0..8.0);
            outliers.push(i);
        }
        values.push(v);
    }
    SynthHistory {
        spec: *spec,
        values,
        change_points: cps,
        outliers,
    }
}

/// Counts of a detection against the truth.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confusion {
    /// Detected change points matched to a true one.
    pub tp: usize,
    /// Detected change points matched to none.
    pub fp: usize,
    /// True change points not detected.
    pub fn_: usize,
}

impl Confusion {
    /// Adds another count.
    pub fn add(&mut self, o: Confusion) {
        self.tp += o.tp;
        self.fp += o.fp;
        self.fn_ += o.fn_;
    }

    /// tp / (tp + fp); 1 when nothing was detected.
    pub fn precision(&self) -> f64 {
        if self.tp + self.fp == 0 {
            1.0
        } else {
            self.tp as f64 / (self.tp + self.fp) as f64
        }
    }

    /// tp / (tp + fn); 1 when there was nothing to find.
    pub fn recall(&self) -> f64 {
        if self.tp + self.fn_ == 0 {
            1.0
        } else {
            self.tp as f64 / (self.tp + self.fn_) as f64
        }
    }

    /// Harmonic mean of precision and recall.
    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

/// Matches detected change points to true ones within `tolerance` indices (greedy by
/// distance, each true point matched at most once).
pub fn score(truth: &[usize], found: &[usize], tolerance: usize) -> Confusion {
    let mut pairs: Vec<(usize, usize, usize)> = Vec::new();
    for (i, &t) in truth.iter().enumerate() {
        for (j, &f) in found.iter().enumerate() {
            let d = t.abs_diff(f);
            if d <= tolerance {
                pairs.push((d, i, j));
            }
        }
    }
    pairs.sort_unstable();
    let mut used_t = vec![false; truth.len()];
    let mut used_f = vec![false; found.len()];
    let mut tp = 0;
    for (_, i, j) in pairs {
        if !used_t[i] && !used_f[j] {
            used_t[i] = true;
            used_f[j] = true;
            tp += 1;
        }
    }
    Confusion {
        tp,
        fp: found.len() - tp,
        fn_: truth.len() - tp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_labelled() {
        let s = SynthSpec {
            seed: 42,
            ..SynthSpec::default()
        };
        let a = generate(&s);
        assert_eq!(a, generate(&s));
        assert_eq!(a.change_points.len(), 3);
        assert!(a.change_points.windows(2).all(|w| w[1] - w[0] >= 30));
        let b = generate(&SynthSpec { seed: 43, ..s });
        assert_ne!(a.values, b.values);
    }

    #[test]
    fn scoring() {
        let c = score(&[100, 200], &[98, 150, 203, 205], 5);
        assert_eq!(
            c,
            Confusion {
                tp: 2,
                fp: 2,
                fn_: 0
            }
        );
        assert_eq!(c.precision(), 0.5);
        assert_eq!(c.recall(), 1.0);
        assert!((c.f1() - 2.0 / 3.0).abs() < 1e-12);
    }
}
