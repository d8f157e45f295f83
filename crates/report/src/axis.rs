//! Axis math: data-to-pixel scales, decade ticks for log axes, "nice" ticks for linear axes,
//! and short tick labels (`0.01`, `0.1`, `1`, `10`, `100`, `1k`).

/// Linear or logarithmic (base 10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Linear.
    Linear,
    /// Base-10 logarithmic.
    Log,
}

/// A map from a data interval to a pixel interval (`p0` maps `lo`, `p1` maps `hi`; for a
/// vertical axis `p0` is the bottom).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    /// Linear or log.
    pub kind: Kind,
    /// Lowest data value shown.
    pub lo: f64,
    /// Highest data value shown.
    pub hi: f64,
    /// Pixel of `lo`.
    pub p0: f64,
    /// Pixel of `hi`.
    pub p1: f64,
}

impl Scale {
    fn t(&self, v: f64) -> f64 {
        match self.kind {
            Kind::Linear => (v - self.lo) / (self.hi - self.lo),
            Kind::Log => (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10()),
        }
    }

    /// Pixel of data value `v` (values outside the domain map outside the pixel range; a
    /// non-positive value on a log scale maps to the low end).
    pub fn px(&self, v: f64) -> f64 {
        let v = if self.kind == Kind::Log && v <= 0.0 {
            self.lo
        } else {
            v
        };
        self.p0 + self.t(v) * (self.p1 - self.p0)
    }

    /// Whether `v` lies in the domain (with a small tolerance).
    pub fn contains(&self, v: f64) -> bool {
        let eps = match self.kind {
            Kind::Linear => 1e-9 * (self.hi - self.lo).abs(),
            Kind::Log => 0.0,
        };
        v.is_finite() && v >= self.lo * (1.0 - 1e-9) - eps && v <= self.hi * (1.0 + 1e-9) + eps
    }
}

/// One tick of an axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// Data value.
    pub value: f64,
    /// Label, when the tick is labelled.
    pub label: Option<String>,
    /// A major tick (drawn with a grid line).
    pub major: bool,
}

/// Smallest decade interval `[10^a, 10^b]` (b > a) that holds the positive finite values of
/// `values`; `(1, 10)` when there is none.
pub fn log_domain(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values {
        if v.is_finite() && v > 0.0 {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    if !lo.is_finite() {
        return (1.0, 10.0);
    }
    let a = (lo.log10() + 1e-9).floor();
    let mut b = (hi.log10() - 1e-9).ceil();
    if b <= a {
        b = a + 1.0;
    }
    (10f64.powf(a), 10f64.powf(b))
}

/// Ticks of a log axis over `[lo, hi]` (lo > 0): every decade is a major tick, labelled (every
/// second or third decade only when there are more than 8); over at most two decades the 2
/// and 5 multiples are labelled too; the other multiples are unlabelled minor ticks when the
/// axis spans at most five decades.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<Tick> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let a = (lo.log10() - 1e-9).floor() as i32;
    let b = (hi.log10() + 1e-9).ceil() as i32;
    let decades = hi.log10() - lo.log10();
    let every = if decades > 16.0 {
        4
    } else if decades > 12.0 {
        3
    } else if decades > 8.0 {
        2
    } else {
        1
    };
    let mut out = Vec::new();
    let inside = |v: f64| v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9);
    for d in a..=b {
        let base = 10f64.powi(d);
        if inside(base) {
            out.push(Tick {
                value: base,
                label: (d.rem_euclid(every) == 0).then(|| fmt_tick(base)),
                major: true,
            });
        }
        if decades <= 5.0 {
            for m in 2..10 {
                let v = base * f64::from(m);
                if inside(v) {
                    let labelled = decades <= 2.0 && (m == 2 || m == 5);
                    out.push(Tick {
                        value: v,
                        label: labelled.then(|| fmt_tick(v)),
                        major: false,
                    });
                }
            }
        }
    }
    out
}

/// A "nice" step (1, 2 or 5 times a power of ten) near `range / target` steps.
pub fn nice_step(range: f64, target: usize) -> f64 {
    let raw = range / target.max(1) as f64;
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm < 1.5 {
        1.0
    } else if norm < 3.0 {
        2.0
    } else if norm < 7.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Linear domain rounded out to a nice step with about `target` ticks, and the ticks (all
/// labelled, major). `lo == hi` is widened; non-finite bounds give `[0, 1]`.
pub fn linear_ticks(lo: f64, hi: f64, target: usize) -> (f64, f64, Vec<Tick>) {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() {
        (lo.min(hi), lo.max(hi))
    } else {
        (0.0, 1.0)
    };
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        lo -= pad;
        hi += pad;
    }
    let step = nice_step(hi - lo, target);
    let i0 = (lo / step + 1e-9).floor() as i64;
    let i1 = (hi / step - 1e-9).ceil() as i64;
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    // i x step, rounded to the step's decimals (7 x 0.2 is 1.4, not 1.4000000000000001).
    let scale = 10f64.powi(decimals as i32 + 1);
    let at = |i: i64| (i as f64 * step * scale).round() / scale;
    let suffix = at(i1).abs().max(at(i0).abs()) >= 1e4;
    let ticks = (i0..=i1)
        .map(|i| {
            let v = at(i);
            Tick {
                value: v,
                label: Some(if suffix {
                    fmt_tick(v)
                } else {
                    let s = format!("{v:.decimals$}");
                    if s.trim_start_matches('-')
                        .chars()
                        .all(|c| c == '0' || c == '.')
                    {
                        "0".to_string()
                    } else {
                        s
                    }
                }),
                major: true,
            }
        })
        .collect();
    (at(i0), at(i1), ticks)
}

/// Short tick label: `0.001`, `0.02`, `1`, `50`, `1k`, `20k`, `1M`, `5G`; scientific below 1e-4
/// and above 1e15.
pub fn fmt_tick(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    let a = v.abs();
    let sign = if v < 0.0 { "-" } else { "" };
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if !(1e-4..1e15).contains(&a) {
        let e = a.log10().floor() as i32;
        let m = a / 10f64.powi(e);
        let m = trim(format!("{m:.2}"));
        return if m == "1" {
            format!("{sign}1e{e}")
        } else {
            format!("{sign}{m}e{e}")
        };
    }
    for (div, suf) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if a >= div {
            return format!("{sign}{}{suf}", trim(format!("{:.3}", a / div)));
        }
    }
    let decimals = if a >= 1.0 {
        3
    } else {
        (-a.log10().floor()) as usize + 3
    };
    format!("{sign}{}", trim(format!("{a:.decimals$}")))
}

/// A value with three significant digits for labels: `36.2`, `17.5`, `1.40`, `0.692`, `1234`.
pub fn fmt_value(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "n/a".into()
        } else {
            "∞".into()
        };
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 1e-4 {
        let d = (-a.log10().floor()) as usize + 2;
        format!("{v:.d$}")
    } else {
        format!("{v:.2e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(t: &[Tick]) -> Vec<String> {
        t.iter().filter_map(|t| t.label.clone()).collect()
    }

    #[test]
    fn log_domain_snaps_to_decades() {
        assert_eq!(log_domain([0.125, 3.125]), (0.1, 10.0));
        assert_eq!(log_domain([1.0, 10.0]), (1.0, 10.0));
        assert_eq!(log_domain([5.0]), (1.0, 10.0));
        assert_eq!(log_domain([1.0]), (1.0, 10.0));
        assert_eq!(log_domain([0.04, 9.4]), (0.01, 10.0));
        assert_eq!(log_domain([f64::NAN, -1.0, f64::INFINITY]), (1.0, 10.0));
        let (lo, hi) = log_domain([2e3, 3e9]);
        assert_eq!((lo, hi), (1e3, 1e10));
    }

    #[test]
    fn decade_labels_are_readable() {
        let t = log_ticks(0.01, 1000.0);
        assert_eq!(labels(&t), ["0.01", "0.1", "1", "10", "100", "1k"]);
        assert_eq!(t.iter().filter(|t| t.major).count(), 6);
        // Minor ticks 2..9 in each of the five decades.
        assert_eq!(t.iter().filter(|t| !t.major).count(), 5 * 8);
    }

    #[test]
    fn narrow_log_ranges_label_2_and_5() {
        let t = log_ticks(0.1, 10.0);
        assert_eq!(labels(&t), ["0.1", "0.2", "0.5", "1", "2", "5", "10"]);
    }

    #[test]
    fn wide_log_ranges_thin_out_labels() {
        let t = log_ticks(1.0, 1e12);
        assert_eq!(labels(&t), ["1", "100", "10k", "1M", "100M", "10G", "1T"]);
        assert!(t.iter().all(|t| t.major), "no minor ticks over 12 decades");
    }

    #[test]
    fn log_ticks_over_arbitrary_ranges_stay_inside() {
        for (lo, hi) in [(0.37, 42.0), (3e-7, 2e-3), (1.5, 1.6), (64.0, 1.1e9)] {
            let t = log_ticks(lo, hi);
            for tick in &t {
                assert!(tick.value >= lo * (1.0 - 1e-9) && tick.value <= hi * (1.0 + 1e-9));
            }
            let vals: Vec<f64> = t.iter().map(|t| t.value).collect();
            let mut sorted = vals.clone();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(vals.len(), sorted.len());
        }
        assert!(log_ticks(0.0, 10.0).is_empty());
        assert!(log_ticks(10.0, 1.0).is_empty());
    }

    #[test]
    fn nice_linear_ticks() {
        let (lo, hi, t) = linear_ticks(0.0, 1.4, 5);
        assert_eq!((lo, hi), (0.0, 1.4));
        assert_eq!(
            labels(&t),
            ["0", "0.2", "0.4", "0.6", "0.8", "1.0", "1.2", "1.4"]
        );
        let (lo, hi, t) = linear_ticks(0.0, 9.3, 5);
        assert_eq!((lo, hi), (0.0, 10.0));
        assert_eq!(labels(&t), ["0", "2", "4", "6", "8", "10"]);
        let (lo, hi, t) = linear_ticks(-3.0, 47.0, 5);
        assert_eq!((lo, hi), (-10.0, 50.0));
        assert_eq!(t.len(), 7);
        let (_, _, t) = linear_ticks(0.0, 120_000.0, 4);
        assert_eq!(labels(&t), ["0", "50k", "100k", "150k"]);
        // Degenerate and non-finite input.
        let (lo, hi, _) = linear_ticks(5.0, 5.0, 5);
        assert!(lo < 5.0 && hi > 5.0);
        let (lo, hi, _) = linear_ticks(f64::NAN, 1.0, 5);
        assert_eq!((lo, hi), (0.0, 1.0));
    }

    #[test]
    fn tick_and_value_formats() {
        assert_eq!(fmt_tick(0.001), "0.001");
        assert_eq!(fmt_tick(0.02), "0.02");
        assert_eq!(fmt_tick(1500.0), "1.5k");
        assert_eq!(fmt_tick(2e6), "2M");
        assert_eq!(fmt_tick(1e-5), "1e-5");
        assert_eq!(fmt_tick(-20.0), "-20");
        assert_eq!(fmt_value(36.17), "36.2");
        assert_eq!(fmt_value(17.53), "17.5");
        assert_eq!(fmt_value(1.399931), "1.40");
        assert_eq!(fmt_value(0.691643), "0.692");
        assert_eq!(fmt_value(1234.4), "1234");
        assert_eq!(fmt_value(f64::INFINITY), "∞");
    }

    #[test]
    fn scales_map_both_ways() {
        let s = Scale {
            kind: Kind::Log,
            lo: 0.01,
            hi: 100.0,
            p0: 0.0,
            p1: 400.0,
        };
        assert!((s.px(1.0) - 200.0).abs() < 1e-9);
        let l = Scale {
            kind: Kind::Linear,
            lo: 0.0,
            hi: 10.0,
            p0: 300.0,
            p1: 100.0,
        };
        assert!((l.px(5.0) - 200.0).abs() < 1e-9);
        assert!(l.contains(10.0) && !l.contains(10.1));
    }
}
