//! The calibration of projections: a point estimate inside the interval with a stated
//! error, and the margin that gives the interval its coverage.
//!
//! The interval of eq. 6.4 says where the target's performance can be; a user also needs
//! one number to decide with. Three rules place it, each with one parameter fitted on
//! measurements (pairs of builds projected one onto the other and then measured):
//!
//! * [`PointMethod::ExplainedTime`]: the source's time splits into the part its binding
//!   ceiling `C` explains, `e^gamma` of it (`e = Perf_source / C_source` its efficiency),
//!   which scales with the ceiling, and the rest, which carries over unchanged:
//!   `F_t / (e^gamma x t_s x (F_t / F_s) x C_s / C_t + (1 - e^gamma) x t_s)`. A run near its
//!   ceiling follows the ceiling; a run far below it (latency, dependencies) barely moves;
//! * [`PointMethod::BindingRatio`]: `Perf_source x (C_target / C_source)^beta`;
//! * [`PointMethod::IntervalPosition`]: `lo x (hi / lo)^theta`, the position inside the
//!   model's interval on a log scale where measurements fall.
//!
//! Each estimate is kept inside the model's interval (clamped to it).
//!
//! The margin is split conformal prediction: on the calibration pairs, the factor each
//! interval (with both runs' bands) misses its measurement by; the margin is the
//! `ceil((n + 1) x coverage)`-th smallest, so that the interval widened by it holds
//! `coverage` of pairs like them.
//!
//! The fitted calibration is a data file (`data/projection/calibration.toml`) that names
//! the pairs it was fitted on and their error; [`fit`] makes it from measurements.

use serde::{Deserialize, Serialize};

use crate::error::{InputError, Result};
use crate::project::{Projection, Spread};

/// The calibration format version this library reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// The bundled calibration, fitted on a declared subset of the bundled validation pairs.
pub const BUNDLED: &str = include_str!("../../../data/projection/calibration.toml");

/// How the point is placed.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PointMethod {
    /// The binding ceiling explains `e^parameter` of the source's time; that part scales.
    ExplainedTime,
    /// `Perf_source x (C_target / C_source)^parameter`.
    BindingRatio,
    /// `lo x (hi / lo)^parameter` on the model's interval.
    IntervalPosition,
}

impl PointMethod {
    /// Every method, in the order [`fit`] tries them.
    pub const ALL: [PointMethod; 3] = [
        PointMethod::ExplainedTime,
        PointMethod::BindingRatio,
        PointMethod::IntervalPosition,
    ];

    /// The range of the parameter.
    pub fn range(self) -> (f64, f64) {
        match self {
            PointMethod::ExplainedTime => (0.0, 4.0),
            PointMethod::BindingRatio | PointMethod::IntervalPosition => (0.0, 1.0),
        }
    }

    /// The rule in words, with its parameter.
    pub fn describe(self, parameter: f64) -> String {
        match self {
            PointMethod::ExplainedTime => format!(
                "the binding ceiling explains efficiency^{parameter:.2} of the source's time, which scales with the ceiling; the rest carries over"
            ),
            PointMethod::BindingRatio => format!(
                "source GFLOP/s x (target binding ceiling / source binding ceiling)^{parameter:.2}"
            ),
            PointMethod::IntervalPosition => {
                format!("lo x (hi / lo)^{parameter:.2} on the model's interval")
            }
        }
    }
}

/// What a projection changes between its source and its target: the point rule's error
/// is stated per kind, from pairs of that kind only, and a projection of a kind without
/// pairs says "not validated for this kind of change" instead of borrowing another kind's.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// The vector width of one program's builds (scalar, SSE2, AVX2, ...), same machine.
    VectorWidth,
    /// The compiler, same machine and width.
    Compiler,
    /// The optimization level, same machine.
    OptimizationLevel,
    /// The floating-point precision (float and double builds).
    Precision,
    /// The number of threads.
    ThreadCount,
    /// The same binary on another machine of the same instruction set.
    SameIsaMachine,
    /// Another machine of another instruction set (another build of the program).
    CrossIsaMachine,
    /// Two builds of unknown difference on one machine (a user's builds).
    Builds,
}

impl ChangeKind {
    /// Every kind.
    pub const ALL: [ChangeKind; 8] = [
        ChangeKind::VectorWidth,
        ChangeKind::Compiler,
        ChangeKind::OptimizationLevel,
        ChangeKind::Precision,
        ChangeKind::ThreadCount,
        ChangeKind::SameIsaMachine,
        ChangeKind::CrossIsaMachine,
        ChangeKind::Builds,
    ];
}

impl std::fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ChangeKind::VectorWidth => "vector width",
            ChangeKind::Compiler => "compiler",
            ChangeKind::OptimizationLevel => "optimization level",
            ChangeKind::Precision => "precision",
            ChangeKind::ThreadCount => "thread count",
            ChangeKind::SameIsaMachine => "same-ISA machine",
            ChangeKind::CrossIsaMachine => "cross-ISA machine",
            ChangeKind::Builds => "builds",
        })
    }
}

/// Relative errors `(estimate - measured) / measured` of a rule on a set of pairs, as
/// magnitudes.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointError {
    /// Pairs.
    pub pairs: usize,
    /// Median magnitude.
    pub median: f64,
    /// 90th percentile of the magnitudes (nearest rank).
    pub p90: f64,
    /// Largest magnitude.
    pub max: f64,
}

impl PointError {
    /// The statistics of `errors` (signed or not); `None` when empty.
    pub fn of(errors: &[f64]) -> Option<PointError> {
        let mut e: Vec<f64> = errors
            .iter()
            .filter(|x| x.is_finite())
            .map(|x| x.abs())
            .collect();
        if e.is_empty() {
            return None;
        }
        e.sort_by(f64::total_cmp);
        let rank = ((0.9 * e.len() as f64).ceil() as usize).clamp(1, e.len());
        Some(PointError {
            pairs: e.len(),
            median: crate::stats::median_sorted(&e),
            p90: e[rank - 1],
            max: e[e.len() - 1],
        })
    }
}

/// The point rule of a calibration.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointRule {
    /// The rule.
    pub method: PointMethod,
    /// Its fitted parameter.
    pub parameter: f64,
    /// Its error on the pairs it was fitted on (all of the kind `fitted_change`).
    pub error: PointError,
    /// The kind of change of the pairs it was fitted on (older files: vector width, the only
    /// kind they were fitted on).
    #[serde(default = "vector_width")]
    pub fitted_change: ChangeKind,
}

fn vector_width() -> ChangeKind {
    ChangeKind::VectorWidth
}

/// The margin of a calibration.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalMargin {
    /// The interval is widened by `1 + margin` on each side.
    pub margin: f64,
    /// The share of the calibration pairs the widened interval was made to hold.
    pub coverage: f64,
    /// The share it holds on them (at least `coverage`; more with ties).
    pub fitted_coverage: f64,
}

/// A fitted calibration.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// Must be [`FORMAT_VERSION`].
    pub format_version: u32,
    /// The point rule.
    pub point: PointRule,
    /// The interval's margin.
    pub interval: IntervalMargin,
    /// The pairs it was fitted on (`workload: build -> build`).
    pub fitted_on: Vec<String>,
    /// The rule's error on pairs of each kind of change, each from pairs of that kind only
    /// (held-out kinds included: measured, not fitted). The fitted kind's is `point.error`
    /// when absent here.
    #[serde(default)]
    pub errors: std::collections::BTreeMap<ChangeKind, PointError>,
    /// Where, when and how it was fitted (machine, date, load, command).
    pub provenance: String,
}

impl Calibration {
    /// Parses and checks a calibration; `origin` names the source in errors.
    pub fn from_toml_str(src: &str, origin: &str) -> Result<Calibration> {
        let m: Calibration = crate::error::toml_from_str(
            src,
            origin,
            "see data/projection/calibration.toml; `hpcscope validate --calibrate FILE` writes one",
        )?;
        let bad = |field: &str, message: String, fix: &str| -> crate::Error {
            InputError::new(origin, field, message, fix).into()
        };
        if m.format_version != FORMAT_VERSION {
            return Err(bad(
                "format_version",
                format!(
                    "is {}, this hpcscope reads version {FORMAT_VERSION}",
                    m.format_version
                ),
                "fit the calibration again with this hpcscope (hpcscope validate --calibrate FILE)",
            ));
        }
        let (a, b) = m.point.method.range();
        if !(m.point.parameter.is_finite() && (a..=b).contains(&m.point.parameter)) {
            return Err(bad(
                "point.parameter",
                format!("{} is not in [{a}, {b}]", m.point.parameter),
                "give the fitted parameter of the rule",
            ));
        }
        let e = &m.point.error;
        if e.pairs == 0
            || [e.median, e.p90, e.max]
                .iter()
                .any(|v| !(v.is_finite() && *v >= 0.0))
        {
            return Err(bad(
                "point.error",
                "needs pairs > 0 and finite, non-negative median, p90 and max".into(),
                "copy the error of the fit (hpcscope validate --calibrate writes it)",
            ));
        }
        let i = &m.interval;
        let valid = i.margin.is_finite()
            && (0.0..10.0).contains(&i.margin)
            && (0.0..=1.0).contains(&i.coverage)
            && (0.0..=1.0).contains(&i.fitted_coverage);
        if !valid {
            return Err(bad(
                "interval",
                format!(
                    "margin {} must be in [0, 10), coverage {} and fitted_coverage {} in [0, 1]",
                    i.margin, i.coverage, i.fitted_coverage
                ),
                "copy the margin of the fit (a relative widening: 0.05 is 5 %)",
            ));
        }
        if m.provenance.trim().is_empty() {
            return Err(bad(
                "provenance",
                "is empty".into(),
                "say on which machine, when and with which command the calibration was fitted",
            ));
        }
        Ok(m)
    }

    /// The bundled calibration.
    pub fn bundled() -> Calibration {
        Calibration::from_toml_str(BUNDLED, "bundled calibration")
            .expect("the bundled calibration is valid (tested)")
    }

    /// Serializes as TOML.
    pub fn to_toml_string(&self) -> String {
        toml::to_string_pretty(self).expect("a calibration always serializes to TOML")
    }

    /// The point of projection `p` by this rule, GFLOP/s (from the model's interval, before
    /// any widening). `None` when the projection lacks what the rule needs.
    pub fn value(&self, p: &Projection) -> Option<f64> {
        value(self.point.method, self.point.parameter, p)
    }

    /// Measures the fitted rule's error on `samples`, all pairs of kind `change` (not fitted
    /// on: held out), and states it for that kind; samples the rule cannot place are left
    /// out. Nothing is stated for a kind without a usable sample.
    pub fn measure_error(&mut self, change: ChangeKind, samples: &[Sample<'_>]) {
        let errors: Vec<f64> = samples
            .iter()
            .filter_map(|s| {
                value(self.point.method, self.point.parameter, s.projection)
                    .map(|v| (v - s.measured_gflops) / s.measured_gflops)
            })
            .collect();
        if let Some(e) = PointError::of(&errors) {
            self.errors.insert(change, e);
        }
    }

    /// The rule's error on pairs of kind `change`; `None` when no pair of that kind was
    /// measured (the estimate is then not validated for that kind of change).
    pub fn error_for(&self, change: ChangeKind) -> Option<PointError> {
        self.errors
            .get(&change)
            .copied()
            .or_else(|| (change == self.point.fitted_change).then_some(self.point.error))
    }

    /// The estimate of `p`, a projection of kind `change`, with the error the calibration
    /// states for that kind (none when it has no pairs of that kind).
    pub fn estimate(&self, p: &Projection, change: ChangeKind) -> Option<PointEstimate> {
        let gflops = self.value(p)?;
        Some(PointEstimate {
            gflops,
            speedup: gflops / p.source_gflops,
            change,
            error: self.error_for(change),
            rule: match (self.point.method, p.clock_ratio) {
                (PointMethod::ExplainedTime, Some(k)) => format!(
                    "{} in core cycles (x{} of its seconds: the source's clock over the target's)",
                    self.point.method.describe(self.point.parameter),
                    (k * 1000.0).round() / 1000.0
                ),
                _ => self.point.method.describe(self.point.parameter),
            },
        })
    }
}

/// A point estimate with the error its calibration states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PointEstimate {
    /// Estimated GFLOP/s.
    pub gflops: f64,
    /// Estimated speed-up over the source.
    pub speedup: f64,
    /// What the projection changes.
    pub change: ChangeKind,
    /// The rule's error on measured pairs of this kind of change; `None`: not validated for
    /// this kind of change (no pair of the kind was measured), and no figure is stated.
    pub error: Option<PointError>,
    /// The rule, in words.
    pub rule: String,
}

impl PointEstimate {
    /// "typically within 2 % (on 42 vector width pairs)", or "not validated for this kind of
    /// change (cross-ISA machine)".
    pub fn error_words(&self) -> String {
        match &self.error {
            Some(e) => format!(
                "typically within {:.0} % (90 % within {:.0} %, on {} measured {} pairs)",
                e.median * 100.0,
                e.p90 * 100.0,
                e.pairs,
                self.change
            ),
            None => format!("not validated for this kind of change ({})", self.change),
        }
    }

    /// The median error as a short suffix, " ±2 %", or "" when not validated.
    pub fn error_suffix(&self) -> String {
        self.error
            .map(|e| format!(" ±{:.0} %", e.median * 100.0))
            .unwrap_or_default()
    }
}

fn value(method: PointMethod, parameter: f64, p: &Projection) -> Option<f64> {
    let v = match method {
        PointMethod::ExplainedTime => {
            if p.binding.is_empty() {
                return None;
            }
            let mut sum = 0.0;
            for b in &p.binding {
                let e = (b.source_gflops / b.source_ceiling_gflops).clamp(0.0, 1.0);
                let f = e.powf(parameter);
                // Older results lack FLOPs: take them equal.
                let (fs, ft) = if b.source_flops > 0.0 && b.target_flops > 0.0 {
                    (b.source_flops, b.target_flops)
                } else {
                    (1.0, 1.0)
                };
                let t_s = fs / b.source_gflops;
                let explained =
                    f * t_s * (ft / fs) * b.source_ceiling_gflops / b.target_ceiling_gflops;
                // The rest carries over in core cycles (across clocks; seconds on one).
                sum += ft / (explained + (1.0 - f) * t_s * p.clock_ratio.unwrap_or(1.0));
            }
            sum
        }
        PointMethod::BindingRatio => {
            if p.binding.is_empty() {
                return None;
            }
            p.binding
                .iter()
                .map(|b| {
                    b.source_gflops
                        * (b.target_ceiling_gflops / b.source_ceiling_gflops).powf(parameter)
                })
                .sum()
        }
        PointMethod::IntervalPosition => {
            let i = p.widening.map(|w| w.model_interval).unwrap_or(p.interval);
            if i.lo <= 0.0 {
                return None;
            }
            i.lo * (i.hi / i.lo).powf(parameter)
        }
    };
    // The estimate stays inside the model's interval.
    let i = p.widening.map(|w| w.model_interval).unwrap_or(p.interval);
    let v = if i.lo > 0.0 && i.lo <= i.hi {
        v.clamp(i.lo, i.hi)
    } else {
        v
    };
    (v.is_finite() && v > 0.0).then_some(v)
}

/// One measured pair for [`fit`]: a projection (its model interval, before any widening)
/// and the target's measured GFLOP/s, with the bands of both runs.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    /// The projection (weighted method).
    pub projection: &'a Projection,
    /// The source's run-to-run spread.
    pub source_spread: Option<Spread>,
    /// The target's measured GFLOP/s.
    pub measured_gflops: f64,
    /// The target's run-to-run spread.
    pub measured_spread: Option<Spread>,
}

/// The factor by which the model interval of `s`, with the source's band, misses the
/// measured band: 0 when they meet.
pub fn miss_factor(s: &Sample<'_>) -> f64 {
    let p = s.projection;
    let i = p.widening.map(|w| w.model_interval).unwrap_or(p.interval);
    let (sl, sh) = s.source_spread.map_or((1.0, 1.0), |x| (x.low, x.high));
    let (tl, th) = s.measured_spread.map_or((1.0, 1.0), |x| (x.low, x.high));
    let (lo, hi) = (i.lo * sl, i.hi * sh);
    let (ml, mh) = (s.measured_gflops * tl, s.measured_gflops * th);
    if lo > mh {
        lo / mh - 1.0
    } else if ml > hi {
        ml / hi - 1.0
    } else {
        0.0
    }
}

/// Fits the calibration on `samples`: every point rule's parameter (a grid of 0.01 over its
/// range, least median |log error|, ties broken by the mean), keeping the rule with the
/// lowest median error, and the margin that makes the intervals hold `coverage` of the
/// samples (split conformal). `labels` name the samples (`workload: build -> build`),
/// `provenance` says where and how, `change` what kind of change every sample is (the
/// error is stated for that kind only). `None` without a usable sample.
pub fn fit(
    samples: &[Sample<'_>],
    coverage: f64,
    labels: &[String],
    provenance: &str,
    change: ChangeKind,
) -> Option<Calibration> {
    let mut best: Option<(f64, f64, PointMethod, f64)> = None;
    for method in PointMethod::ALL {
        let (a, b) = method.range();
        let steps = ((b - a) * 100.0).round() as u32;
        for step in 0..=steps {
            let parameter = a + f64::from(step) / 100.0;
            let logs: Vec<f64> = samples
                .iter()
                .filter_map(|s| {
                    value(method, parameter, s.projection)
                        .map(|v| (v / s.measured_gflops).ln().abs())
                })
                .filter(|x| x.is_finite())
                .collect();
            if logs.len() < samples.len() || logs.is_empty() {
                continue;
            }
            let med = crate::stats::median(&logs)?;
            let mean = logs.iter().sum::<f64>() / logs.len() as f64;
            let better = match best {
                None => true,
                Some((m, a, _, _)) => med < m - 1e-12 || ((med - m).abs() <= 1e-12 && mean < a),
            };
            if better {
                best = Some((med, mean, method, parameter));
            }
        }
    }
    let (_, _, method, parameter) = best?;
    let errors: Vec<f64> = samples
        .iter()
        .filter_map(|s| {
            value(method, parameter, s.projection)
                .map(|v| (v - s.measured_gflops) / s.measured_gflops)
        })
        .collect();
    let mut misses: Vec<f64> = samples.iter().map(miss_factor).collect();
    misses.sort_by(f64::total_cmp);
    let n = misses.len();
    let rank = ((((n + 1) as f64) * coverage).ceil() as usize).clamp(1, n);
    let margin = misses[rank - 1];
    let held = misses
        .iter()
        .filter(|m| **m <= margin * (1.0 + 1e-12))
        .count();
    let error = PointError::of(&errors)?;
    Some(Calibration {
        format_version: FORMAT_VERSION,
        point: PointRule {
            method,
            parameter,
            error,
            fitted_change: change,
        },
        errors: [(change, error)].into(),
        interval: IntervalMargin {
            margin,
            coverage,
            fitted_coverage: held as f64 / n as f64,
        },
        fitted_on: labels.to_vec(),
        provenance: provenance.to_string(),
    })
}
