//! Log2 histograms as the BPF programs fill them (BCC's `bpf_log2l` bucketing).
//!
//! Slot 0 holds the value 0; slot k >= 1 holds values in [2^(k-1), 2^k - 1] (seed 004,
//! Code 3.1.1.3 and the research notes section 6.12: 1000 ns lands in slot 10, [512, 1023]).
//! The last slot also holds everything larger.

use serde::Serialize;

/// Slot of `v` (same arithmetic as `log2_slot` in `bpf/hpcscope.bpf.c`).
pub fn slot(v: u64, slots: usize) -> usize {
    let s = if v == 0 {
        0
    } else {
        64 - v.leading_zeros() as usize
    };
    s.min(slots - 1)
}

/// Inclusive value range `[lo, hi]` of slot `k`.
pub fn bounds(k: usize) -> (u64, u64) {
    match k {
        0 => (0, 0),
        k if k >= 64 => (1 << 63, u64::MAX),
        k => (1u64 << (k - 1), (1u64 << k) - 1),
    }
}

/// One non-empty bucket.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bucket {
    /// Smallest value in the bucket.
    pub lo: u64,
    /// Largest value in the bucket.
    pub hi: u64,
    /// How many values fell in it.
    pub count: u64,
}

/// A log2 histogram: only non-empty buckets, in increasing order.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Log2Hist {
    /// Non-empty buckets.
    pub buckets: Vec<Bucket>,
}

impl Log2Hist {
    /// Builds the histogram from raw slot counts.
    pub fn from_slots(slots: &[u64]) -> Log2Hist {
        let buckets = slots
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(k, &count)| {
                let (lo, hi) = bounds(k);
                Bucket { lo, hi, count }
            })
            .collect();
        Log2Hist { buckets }
    }

    /// Total number of values.
    pub fn total(&self) -> u64 {
        self.buckets.iter().map(|b| b.count).sum()
    }

    /// Approximate quantile `q` in [0, 1], interpolated linearly inside the bucket.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.total();
        if n == 0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * n as f64;
        let mut seen = 0.0;
        for b in &self.buckets {
            let c = b.count as f64;
            if seen + c >= rank {
                let f = if c > 0.0 { (rank - seen) / c } else { 0.0 };
                return Some(b.lo as f64 + f * (b.hi - b.lo) as f64);
            }
            seen += c;
        }
        self.buckets.last().map(|b| b.hi as f64)
    }

    /// Quantile `q` as [`Log2Hist::quantile`] gives it, with the smallest and largest values
    /// observed, `min` and `max`, as the bounds of the first and last non-empty buckets: a
    /// bucket's width says nothing of values beyond those seen, so no quantile lies outside
    /// `[min, max]` (with `max` 6,310 in a bucket [4,096, 8,191], p99 is at most 6,310).
    /// `max` 0 means unknown (no clamping above).
    pub fn quantile_within(&self, q: f64, min: u64, max: u64) -> Option<f64> {
        let n = self.total();
        if n == 0 {
            return None;
        }
        let max = if max == 0 { u64::MAX } else { max };
        let rank = q.clamp(0.0, 1.0) * n as f64;
        let mut seen = 0.0;
        for b in &self.buckets {
            let c = b.count as f64;
            let lo = b.lo.max(min).min(max) as f64;
            let hi = b.hi.min(max).max(lo as u64) as f64;
            if seen + c >= rank {
                let f = if c > 0.0 { (rank - seen) / c } else { 0.0 };
                return Some(lo + f * (hi - lo));
            }
            seen += c;
        }
        self.buckets.last().map(|b| b.hi.min(max) as f64)
    }

    /// BCC-style text rendering, one line per bucket, with a bar of stars.
    pub fn render(&self, unit: &str) -> String {
        let max = self
            .buckets
            .iter()
            .map(|b| b.count)
            .max()
            .unwrap_or(0)
            .max(1);
        let mut s = String::new();
        for b in &self.buckets {
            let stars = ((b.count as f64 / max as f64) * 40.0).round() as usize;
            s.push_str(&format!(
                "{:>12} -> {:<12} {unit}: {:>10} |{:<40}|\n",
                b.lo,
                b.hi,
                b.count,
                "*".repeat(stars)
            ));
        }
        s
    }
}

/// Adds per-CPU slot arrays element by element.
pub fn sum_slots<'a>(per_cpu: impl IntoIterator<Item = &'a [u64]>, slots: usize) -> Vec<u64> {
    let mut out = vec![0u64; slots];
    for s in per_cpu {
        for (o, v) in out.iter_mut().zip(s) {
            *o += v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_004_bucketing_examples() {
        // Research notes 6.12.
        assert_eq!(slot(1000, 48), 10);
        assert_eq!(bounds(10), (512, 1023));
        assert_eq!(slot(1, 48), 1);
        assert_eq!(slot(1 << 32, 48), 33);
        assert_eq!(slot(32_768, 48), 16);
        assert_eq!(slot(65_535, 48), 16);
        assert_eq!(slot(32_000, 48), 15);
        assert_eq!(bounds(16), (32_768, 65_535));
        assert_eq!(slot(0, 48), 0);
        assert_eq!(slot(u64::MAX, 48), 47);
    }

    #[test]
    fn quantiles_interpolate_inside_buckets() {
        let mut s = vec![0u64; 48];
        s[10] = 100; // [512, 1023]
        let h = Log2Hist::from_slots(&s);
        assert_eq!(h.total(), 100);
        assert_eq!(h.quantile(0.0), Some(512.0));
        assert_eq!(h.quantile(1.0), Some(1023.0));
        let p50 = h.quantile(0.5).unwrap();
        assert!((p50 - 767.5).abs() < 1e-9);
        assert_eq!(Log2Hist::default().quantile(0.5), None);
    }

    #[test]
    fn quantiles_stay_within_the_observed_range() {
        // The case: openat with max 6.31 us, its last bucket [4096, 8191]; the
        // unclamped p99 was 7.49 us, above the max.
        let mut s = vec![0u64; 48];
        s[12] = 60; // [2048, 4095]
        s[13] = 40; // [4096, 8191]
        let h = Log2Hist::from_slots(&s);
        let raw = h.quantile(0.99).unwrap();
        assert!(raw > 6310.0, "{raw}");
        let p99 = h.quantile_within(0.99, 2500, 6310).unwrap();
        assert!((4096.0..=6310.0).contains(&p99), "{p99}");
        assert_eq!(h.quantile_within(1.0, 2500, 6310), Some(6310.0));
        assert_eq!(h.quantile_within(0.0, 2500, 6310), Some(2500.0));
        // One value: every quantile is that value.
        let mut one = vec![0u64; 48];
        one[11] = 1;
        let h = Log2Hist::from_slots(&one);
        for q in [0.0, 0.5, 0.99, 1.0] {
            assert_eq!(h.quantile_within(q, 1500, 1500), Some(1500.0), "{q}");
        }
        // Max unknown (0): only the bucket bounds.
        assert_eq!(h.quantile_within(1.0, 0, 0), Some(2047.0));
        assert_eq!(Log2Hist::default().quantile_within(0.5, 1, 2), None);
    }

    #[test]
    fn per_cpu_sum() {
        let a = [1u64, 2, 3];
        let b = [10u64, 20, 30];
        assert_eq!(sum_slots([&a[..], &b[..]], 3), vec![11, 22, 33]);
    }
}
