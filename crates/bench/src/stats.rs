//! Repetition statistics: median and spread of repeated measurements.

use hpcscope_core::stats::quantile_sorted as quantile;
use serde::{Deserialize, Serialize};

/// Summary of repeated measurements of one quantity.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Median.
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// First quartile (linear interpolation).
    pub q1: f64,
    /// Third quartile.
    pub q3: f64,
    /// Number of repetitions.
    pub n: usize,
}

/// Which statistic of the repetitions a machine file keeps.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Statistic {
    /// The median repetition.
    #[default]
    Median,
    /// The best repetition.
    Best,
}

impl Statistic {
    /// `median` or `best`.
    pub fn name(self) -> &'static str {
        match self {
            Statistic::Median => "median",
            Statistic::Best => "best",
        }
    }
}

impl Summary {
    /// The median, or the largest value (the best rate) for [`Statistic::Best`].
    pub fn pick(&self, s: Statistic) -> f64 {
        match s {
            Statistic::Median => self.median,
            Statistic::Best => self.max,
        }
    }

    /// Summarizes `xs` (non-finite values are dropped); `None` when nothing is left.
    pub fn of(xs: &[f64]) -> Option<Summary> {
        let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Summary {
            median: quantile(&v, 0.5),
            min: v[0],
            max: v[v.len() - 1],
            q1: quantile(&v, 0.25),
            q3: quantile(&v, 0.75),
            n: v.len(),
        })
    }

    /// Relative spread `(max - min) / median`.
    pub fn spread(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            (self.max - self.min) / self.median
        }
    }

    /// Relative interquartile range `(q3 - q1) / median`.
    pub fn iqr(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            (self.q3 - self.q1) / self.median
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        let s = Summary::of(&[3.0, 1.0, 2.0, f64::NAN, 4.0, 5.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!((s.min, s.max, s.n), (1.0, 5.0, 5));
        assert_eq!((s.q1, s.q3), (2.0, 4.0));
        assert!((s.spread() - 4.0 / 3.0).abs() < 1e-12);
        assert!(Summary::of(&[]).is_none());
        assert_eq!(Summary::of(&[1.0, 2.0]).unwrap().median, 1.5);
    }
}
