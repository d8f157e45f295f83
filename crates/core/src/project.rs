//! Relative performance projection (Gavoille 2024 thesis, eq. 6.4 and chapter 7).
//!
//! The architectural efficiency measured on the source, `Perf_source / roofline_source(OI)`,
//! is assumed conserved on the target:
//! `Perf_target = Perf_source / roofline_source(OI_source) x roofline_target(OI_target)`.
//!
//! * Single core (chapter 6, scope [`Scope::Core`]): every pair (OI of level k, roofline of
//!   level j) selected by the [`PairRule`] (default: j >= k, n(n+1)/2 points) gives a point;
//!   the projection is the interval [min, max] of the points.
//! * Node (chapter 7, scope [`Scope::Node`]): per-core share of the node ceilings (eq. 7.1),
//!   hit-ratio weighted harmonic bandwidth per level (eq. 7.2), per-thread OIs (eq. 7.3), one
//!   point per level and thread (eq. 7.4), node interval = [sum of the per-thread minima,
//!   sum of the per-thread maxima] (eq. 7.5). Source and target need the same thread count,
//!   or one source thread: then every target thread keeps the source's efficiency per level
//!   (projecting a change of thread count, e.g. 1 to 2 threads of the same binary).
//! * [`Method::Kwack`]: the baseline of Kwack et al.: unweighted peak, main-memory OI and
//!   main-memory roofline only, one point.
//!
//! Levels are matched by name. Only levels with a bandwidth on both machines give rooflines;
//! OIs are cumulative over each profile's own level list (eq. 6.3), so a level present on one
//! side only still counts in the OIs of the levels above it.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::machine::{Machine, Precision};
use crate::point::{Calibration, ChangeKind, PointEstimate};
use crate::profile::AppMetrics;
use crate::roofline::{
    AccessWidths, Bound, Ceilings, Scope, attainable, cumulative_oi, match_levels,
    weighted_bandwidth,
};
use crate::stats::quantile_sorted as quantile;

/// Which (OI level k, roofline level j) pairs give points in the single-core projection.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum PairRule {
    /// Each OI against its own level's roofline and every slower level's (thesis default).
    #[default]
    UpperTriangular,
    /// Each OI against its own level's roofline only.
    Diagonal,
    /// Every OI against every roofline.
    All,
}

/// Which ceilings the projection uses.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Gavoille: peak weighted by each binary's instruction mix, every level.
    #[default]
    Weighted,
    /// Kwack et al.: raw peak, main memory only.
    Kwack,
}

/// Projection options.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Options {
    /// Pair rule (single-core scope).
    pub pair_rule: PairRule,
    /// Method.
    pub method: Method,
    /// Scope: single core (chapter 6) or node (chapter 7).
    pub scope: Scope,
}

/// One side of a projection: a machine and the metrics of the binary meant for it.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    /// The machine.
    pub machine: &'a Machine,
    /// Per-thread metrics (one entry for a single-core projection).
    pub threads: &'a [AppMetrics],
    /// Where the metrics come from, for error messages.
    pub origin: &'a str,
}

/// A closed interval of GFLOP/s (or seconds).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
}

impl Interval {
    fn of(values: impl IntoIterator<Item = f64>) -> Interval {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for v in values {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        Interval { lo, hi }
    }

    /// Width relative to the lower bound.
    pub fn relative_width(&self) -> f64 {
        (self.hi - self.lo) / self.lo
    }

    /// Whether `v` lies in the interval (inclusive, with a relative tolerance of 1e-9).
    pub fn contains(&self, v: f64) -> bool {
        v >= self.lo * (1.0 - 1e-9) && v <= self.hi * (1.0 + 1e-9)
    }
}

/// One projected point.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Level of the OI (k).
    pub oi_level: String,
    /// Level of the roofline (j).
    pub roof_level: String,
    /// OI_k of the source binary, FLOP/byte (`null` when infinite).
    #[serde(
        serialize_with = "crate::roofline::ser_f64_inf",
        deserialize_with = "crate::roofline::de_f64_inf"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<f64>"))]
    pub oi_source: f64,
    /// OI_k of the target binary, FLOP/byte (`null` when infinite).
    #[serde(
        serialize_with = "crate::roofline::ser_f64_inf",
        deserialize_with = "crate::roofline::de_f64_inf"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<f64>"))]
    pub oi_target: f64,
    /// Bandwidth of roofline j on the source, GB/s.
    pub bandwidth_source_gbs: f64,
    /// Bandwidth of roofline j on the target, GB/s.
    pub bandwidth_target_gbs: f64,
    /// roofline_source(OI_source), GFLOP/s.
    pub roof_source_gflops: f64,
    /// roofline_target(OI_target), GFLOP/s.
    pub roof_target_gflops: f64,
    /// Source point memory- or compute-bound.
    pub bound_source: Bound,
    /// Target point memory- or compute-bound.
    pub bound_target: Bound,
    /// Perf_source / roofline_source: the conserved efficiency.
    pub efficiency: f64,
    /// Projected GFLOP/s.
    pub gflops: f64,
    /// Left out of the interval: the measured source runs above this roofline (efficiency
    /// above 1 beyond its noise), so this roofline does not limit it
    /// ([`Inputs::drop_contradicted`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub excluded: bool,
    /// The projection if what carries over is the source's time this roofline does not
    /// explain, `(1 - efficiency) x t_s`, unchanged, rather than its efficiency: `F_t /
    /// (F_t / roof_target + (1 - efficiency) x t_s)`, GFLOP/s ([`Inputs::carried_time`];
    /// only for an efficiency of at most 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried_time_gflops: Option<f64>,
    /// The same with that time scaled by the binaries' instruction counts (the part the
    /// roofline does not explain runs at the source's instruction rate): `F_t / (F_t /
    /// roof_target + (1 - efficiency) x t_s x I_t / I_s)`, GFLOP/s ([`Inputs::instructions`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried_rate_gflops: Option<f64>,
    /// The carried time in core cycles rather than seconds, across machines of different
    /// clocks ([`Projection::clock_ratio`] `k`): `F_t / (F_t / roof_target + (1 -
    /// efficiency) x t_s x k)`, GFLOP/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried_cycles_gflops: Option<f64>,
}

/// The projection of one thread (node scope).
///
/// With one source thread and several target threads, the points give each target
/// thread's rate as if it ran alone, and the interval its part of the node's rate: its
/// FLOPs over the slowest thread's projected time (the threads of a region finish together).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadProjection {
    /// Thread index.
    pub thread: usize,
    /// Source GFLOP/s of this thread (its FLOPs over the region's wall time).
    pub source_gflops: f64,
    /// One point per level.
    pub points: Vec<Point>,
    /// [min, max] of the points.
    pub interval: Interval,
}

/// A projection from a source to a target.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    /// Source machine id.
    pub source_machine: String,
    /// Target machine id.
    pub target_machine: String,
    /// Precision (of the source, and of the target unless `target_precision` says another).
    pub precision: Precision,
    /// The target's precision when it is not the source's (a float build of a double
    /// program): its ceilings are that precision's peaks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_precision: Option<Precision>,
    /// Options used.
    pub options: Options,
    /// Levels with a roofline on both machines, ordered from the core outwards.
    pub levels: Vec<String>,
    /// Measured source GFLOP/s (whole node for node scope).
    pub source_gflops: f64,
    /// Source unweighted peak (per core), GFLOP/s.
    pub source_peak_gflops: f64,
    /// Target unweighted peak (per core), GFLOP/s.
    pub target_peak_gflops: f64,
    /// Source compute ceiling used (weighted, or raw for Kwack), GFLOP/s (thread 0 in node scope).
    pub source_ceiling_gflops: f64,
    /// Target compute ceiling used, GFLOP/s (thread 0 in node scope).
    pub target_ceiling_gflops: f64,
    /// Source FLOPs per FP instruction (all threads).
    pub source_flops_per_instruction: Option<f64>,
    /// Target FLOPs per FP instruction (all threads).
    pub target_flops_per_instruction: Option<f64>,
    /// Points (single-core scope).
    pub points: Vec<Point>,
    /// Per-thread projections (node scope).
    pub threads: Vec<ThreadProjection>,
    /// The projected interval, GFLOP/s.
    pub interval: Interval,
    /// Projected time of the target binary's region, seconds: [FLOPs/hi, FLOPs/lo].
    pub target_time_s: Option<Interval>,
    /// Remarks: derived values, dropped levels, clamping.
    pub notes: Vec<String>,
    /// The binding ceiling of each side (the lowest roofline of a level at its own OI), per
    /// thread with FP work (one entry in single-core scope): what the point estimate scales.
    #[serde(default)]
    pub binding: Vec<Binding>,
    /// At which access widths the bandwidths were taken (none: each level's own value).
    #[serde(default)]
    pub bandwidths: Bandwidths,
    /// How the model's interval was widened (calibrated margin, the source's noise) and
    /// how much of the width each part is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widening: Option<Widening>,
    /// The point estimate inside the interval, with its stated error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<PointEstimate>,
    /// The Kwack et al. baseline's single value (raw peak, main memory only), GFLOP/s, for
    /// comparison with the point estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kwack_gflops: Option<f64>,
    /// The source machine's core clock over the target's (`frequency_ghz`), when the two
    /// machines give different clocks: the source's time that the binding ceiling does not
    /// explain (latencies, dependencies, front end) is carried over in core cycles, this
    /// factor times its seconds, by the point estimate; the interval holds both (see
    /// [`Point::carried_cycles_gflops`]). `None`: one machine, or a clock unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_ratio: Option<f64>,
}

/// The binding ceilings of one thread's source and target: the lowest of the rooflines of
/// each level at that level's own OI (single-core: the source's and target's binding
/// ceilings of the roofline analysis).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Binding {
    /// The thread's FLOPs on the source.
    #[serde(default)]
    pub source_flops: f64,
    /// The thread's FLOPs on the target.
    #[serde(default)]
    pub target_flops: f64,
    /// The thread's measured GFLOP/s on the source.
    pub source_gflops: f64,
    /// The source's binding ceiling, GFLOP/s.
    pub source_ceiling_gflops: f64,
    /// The target's binding ceiling, GFLOP/s.
    pub target_ceiling_gflops: f64,
}

/// Access widths the bandwidths of each side were taken at.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Bandwidths {
    /// Source side (none: each level's own bandwidth, the seeds' form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<AccessWidths>,
    /// Target side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<AccessWidths>,
}

/// The run-to-run spread of a measured rate (relative to the median of its runs), and the
/// band it gives the median.
///
/// The band is the median's uncertainty: `median +- K x IQR / sqrt(runs)`, where the
/// interquartile range of the rates estimates their standard deviation robustly (IQR /
/// 1.349; a run slowed by another program moves it little), `1.2533 sigma / sqrt(n)` is the
/// standard error of a median, and `K = 1.163 x 1.2533 / 1.349 = 1.0805` makes a check of
/// two medians, each with its band, pass 90 % of the time when nothing but noise separates
/// them (|d| <= 2 x 1.163 SE for d with standard deviation sqrt(2) SE). The band never
/// reaches beyond the slowest and fastest runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Spread {
    /// Timed runs.
    pub runs: usize,
    /// Slowest run's rate / the median rate (at most 1).
    pub min: f64,
    /// Fastest run's rate / the median rate (at least 1).
    pub max: f64,
    /// Lower end of the median's band, relative to the median (at most 1).
    pub low: f64,
    /// Upper end of the median's band, relative to the median (at least 1).
    pub high: f64,
}

/// `K` of [`Spread`]: band half-width = K x IQR / sqrt(runs).
pub const SPREAD_BAND_K: f64 = 1.0805;

impl Spread {
    /// The spread of the rates of runs that took `times` (seconds) each for the same work.
    /// `None` with fewer than two positive, finite times.
    pub fn from_times(times: &[f64]) -> Option<Spread> {
        let rates: Vec<f64> = times
            .iter()
            .copied()
            .filter(|t| t.is_finite() && *t > 0.0)
            .map(|t| 1.0 / t)
            .collect();
        Spread::from_rates(&rates)
    }

    /// The spread of `rates` (one per run). `None` with fewer than two positive, finite
    /// rates.
    pub fn from_rates(rates: &[f64]) -> Option<Spread> {
        let mut r: Vec<f64> = rates
            .iter()
            .copied()
            .filter(|r| r.is_finite() && *r > 0.0)
            .collect();
        if r.len() < 2 {
            return None;
        }
        r.sort_by(f64::total_cmp);
        let med = crate::stats::median_sorted(&r);
        let (min, max) = (r[0] / med, r[r.len() - 1] / med);
        let iqr = (quantile(&r, 0.75) - quantile(&r, 0.25)) / med;
        let h = SPREAD_BAND_K * iqr / (r.len() as f64).sqrt();
        Some(Spread {
            runs: r.len(),
            min,
            max,
            low: (1.0 - h).max(min),
            high: (1.0 + h).min(max),
        })
    }

    /// `(fastest - slowest) / median`, the spread `bench` warns about above 10 %.
    pub fn relative(&self) -> f64 {
        self.max - self.min
    }
}

/// How the model's interval was widened, and how its width splits between the model, the
/// calibrated margin and the source's noise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Widening {
    /// The model's interval, before any widening, GFLOP/s.
    pub model_interval: Interval,
    /// The calibrated margin: the interval is widened by `1 + margin` on each side (the
    /// model's error on the calibration pairs, [`crate::point::Calibration`]).
    pub margin: f64,
    /// The source's run-to-run spread; its band widens the interval.
    pub source: Option<Spread>,
    /// Width of the model's interval, hi / lo.
    pub model_width: f64,
    /// Width of the widened interval, hi / lo.
    pub total_width: f64,
    /// Share of the width (on a log scale) of the model's interval, in [0, 1].
    pub model_share: f64,
    /// Share of the calibrated margin.
    pub margin_share: f64,
    /// Share of the source's noise.
    pub noise_share: f64,
    /// Share of the sampling error of the bytes per level (`analyze --sample`; see
    /// [`Projection::take_in`]), 0 otherwise.
    #[serde(default)]
    pub sampling_share: f64,
}

impl Projection {
    /// Widens the interval (and the target's time) to take in `others`: the same
    /// projection with inputs moved within their errors (`analyze --sample` moves each
    /// side's bytes per level to the ends of their intervals). The widening, when there is
    /// one, gives the part of the width that adds as [`Widening::sampling_share`] and
    /// scales the other shares down. Returns how many times wider the interval became
    /// (1 when it did not).
    pub fn take_in(&mut self, others: &[Projection]) -> f64 {
        let before = self.interval;
        for q in others {
            if !(q.interval.lo > 0.0 && q.interval.hi.is_finite()) {
                continue;
            }
            self.interval.lo = self.interval.lo.min(q.interval.lo);
            self.interval.hi = self.interval.hi.max(q.interval.hi);
            if let (Some(x), Some(y)) = (self.target_time_s.as_mut(), q.target_time_s) {
                x.lo = x.lo.min(y.lo);
                x.hi = x.hi.max(y.hi);
            }
        }
        if !(before.lo > 0.0 && self.interval.lo > 0.0) {
            return 1.0;
        }
        let total = self.interval.hi / self.interval.lo;
        if let Some(w) = self.widening.as_mut()
            && total > w.total_width
            && w.total_width >= 1.0
        {
            let f = w.total_width.ln() / total.ln();
            w.model_share *= f;
            w.margin_share *= f;
            w.noise_share *= f;
            w.sampling_share = 1.0 - w.model_share - w.margin_share - w.noise_share;
            w.total_width = total;
        }
        (before.lo / self.interval.lo).max(self.interval.hi / before.hi)
    }

    /// The projected speed-up over the source: the interval divided by the source GFLOP/s.
    pub fn speedup(&self) -> Interval {
        Interval {
            lo: self.interval.lo / self.source_gflops,
            hi: self.interval.hi / self.source_gflops,
        }
    }

    /// Every point, of every thread in node scope.
    pub fn all_points(&self) -> Vec<&Point> {
        if self.points.is_empty() {
            self.threads.iter().flat_map(|t| &t.points).collect()
        } else {
            self.points.iter().collect()
        }
    }

    /// The ceilings the projection used on each side (at the binaries' widths when it took
    /// them there), for the charts: `source` and `target` are its machines.
    pub fn ceilings(&self, source: &Machine, target: &Machine) -> Result<(Ceilings, Ceilings)> {
        let c = |m: &Machine, p: Precision, w: &Option<AccessWidths>| match w {
            Some(w) => Ceilings::at_widths(m, p, self.options.scope, w),
            None => Ceilings::of(m, p, self.options.scope),
        };
        let tp = self.target_precision.unwrap_or(self.precision);
        Ok((
            c(source, self.precision, &self.bandwidths.source)?,
            c(target, tp, &self.bandwidths.target)?,
        ))
    }

    /// The point that sets the lower bound (the lowest projected GFLOP/s).
    pub fn lowest_point(&self) -> Option<&Point> {
        self.all_points()
            .into_iter()
            .min_by(|a, b| a.gflops.total_cmp(&b.gflops))
    }
}

struct SideCeilings {
    c: Ceilings,
    /// Index of each common level in the ceilings.
    ci: Vec<usize>,
}

/// Projects the source's measured performance onto the target.
///
/// `source_gflops` is the measured performance of the source run (whole region; for node
/// scope, of all threads together, shared between threads in proportion of their FLOPs).
pub fn project(
    source: Side<'_>,
    source_gflops: f64,
    target: Side<'_>,
    precision: Precision,
    opts: Options,
) -> Result<Projection> {
    project_inner(
        source,
        source_gflops,
        target,
        (precision, precision),
        opts,
        None,
        None,
    )
}

/// What a projection can use beyond the seeds' inputs.
#[derive(Debug, Clone, Default)]
pub struct Inputs<'a> {
    /// The source binary's access widths: its bandwidths are taken at these widths on a
    /// machine that gives per-width bandwidths (`None`: each level's own bandwidth, the
    /// seeds' form).
    pub source_widths: Option<AccessWidths>,
    /// The target binary's access widths.
    pub target_widths: Option<AccessWidths>,
    /// The source's run-to-run spread: it widens the interval.
    pub source_spread: Option<Spread>,
    /// The calibration: the rule that places a point estimate in the interval, and the
    /// margin that widens it.
    pub calibration: Option<&'a Calibration>,
    /// Add to the interval, for every pair, the projections that carry over the source's
    /// time its roofline does not explain instead of its efficiency: unchanged
    /// ([`Point::carried_time_gflops`]) and, with `instructions`, at the source's
    /// instruction rate ([`Point::carried_rate_gflops`]).
    pub carried_time: bool,
    /// All instructions of the source's and the target's binary (every thread), for the
    /// carried-rate points.
    pub instructions: Option<(f64, f64)>,
    /// The target binary's precision when it differs from the source's (`None`: the same).
    pub target_precision: Option<Precision>,
    /// Leave out of the interval the pairs whose roofline the measured source exceeds
    /// (efficiency above 1, beyond the upper end of the source's band): the measurement
    /// shows that roofline does not limit the source at that OI, so carrying an efficiency
    /// above 1 to the target has no ground. When every pair is above its roofline, all are
    /// kept, with a note.
    pub drop_contradicted: bool,
}

/// The kind of change of a projection from `source` onto `target` as far as the machines
/// tell: another machine of the same or another instruction set, else two builds on one
/// machine (a caller that knows what differs between them says so with
/// [`Projection::restate_change`]). A machine and its cores taken alone
/// ([`crate::node::cores_alone`]: the node's values set from one core's, as node validation
/// does for its one-thread side) are one machine.
pub fn machine_change(source: &Machine, target: &Machine) -> ChangeKind {
    if std::ptr::eq(source, target) || source == target || one_machine(source, target) {
        ChangeKind::Builds
    } else if source.isa == target.isa {
        ChangeKind::SameIsaMachine
    } else {
        ChangeKind::CrossIsaMachine
    }
}

/// `a` and `b` describe one machine: equal but for the node's peaks and bandwidths and the
/// notes (what [`crate::node::cores_alone`] changes).
fn one_machine(a: &Machine, b: &Machine) -> bool {
    let strip = |m: &Machine| {
        let mut m = m.clone();
        m.notes.clear();
        for p in &mut m.peaks {
            p.node_gflops = None;
        }
        for l in &mut m.levels {
            l.node_gbs = None;
        }
        m
    };
    a.id == b.id && strip(a) == strip(b)
}

impl Projection {
    /// States the point estimate's error for the kind of change the caller knows the
    /// projection makes (a vector width, a compiler, ...), from `c`'s pairs of that kind.
    pub fn restate_change(&mut self, c: &Calibration, change: ChangeKind) {
        if let Some(pt) = &mut self.point {
            pt.change = change;
            pt.error = c.error_for(change);
        }
    }
}

/// [`project`] with what the seeds do not use: ceilings at each binary's vector widths, the
/// carried-time points, a point estimate and a calibrated margin ([`Calibration`]), the
/// source's run-to-run spread (the interval becomes `[lo x low / (1 + margin), hi x high x
/// (1 + margin)]`, and [`Projection::widening`] says how much of its width each part is),
/// and (weighted method) the Kwack baseline's value beside them.
pub fn project_with(
    source: Side<'_>,
    source_gflops: f64,
    target: Side<'_>,
    precision: Precision,
    opts: Options,
    inputs: &Inputs<'_>,
) -> Result<Projection> {
    let precisions = (precision, inputs.target_precision.unwrap_or(precision));
    let mut p = project_inner(
        source,
        source_gflops,
        target,
        precisions,
        opts,
        inputs.source_widths.as_ref(),
        inputs.target_widths.as_ref(),
    )?;
    p.clock_ratio = clock_ratio(source.machine, target.machine);
    if inputs.carried_time {
        let ratio = inputs
            .instructions
            .filter(|(s, t)| s.is_finite() && t.is_finite() && *s > 0.0 && *t > 0.0)
            .map(|(s, t)| t / s);
        add_carried_time(&mut p, ratio);
    }
    if inputs.drop_contradicted {
        drop_contradicted(
            &mut p,
            inputs.source_spread.map_or(1.0, |s| s.high.max(1.0)),
        );
    }
    // Both recompute each thread's interval from its own points: one source thread onto
    // several, the threads finish together again.
    let scaling =
        opts.scope == Scope::Node && source.threads.len() == 1 && target.threads.len() > 1;
    if scaling && (inputs.carried_time || inputs.drop_contradicted) {
        finish_together(&mut p.threads, target.threads);
        p.interval = Interval {
            lo: p.threads.iter().map(|t| t.interval.lo).sum(),
            hi: p.threads.iter().map(|t| t.interval.hi).sum(),
        };
    }
    if opts.method == Method::Weighted {
        let k = project_inner(
            source,
            source_gflops,
            target,
            precisions,
            Options {
                method: Method::Kwack,
                ..opts
            },
            None,
            None,
        )?;
        p.kwack_gflops = Some(k.interval.lo);
    }
    if let Some(c) = inputs.calibration {
        p.point = c.estimate(&p, machine_change(source.machine, target.machine));
    }
    let margin = inputs
        .calibration
        .map_or(0.0, |c| c.interval.margin.max(0.0));
    if margin > 0.0 || inputs.source_spread.is_some() {
        let model = p.interval;
        let (low, high) = inputs
            .source_spread
            .map_or((1.0, 1.0), |s| (s.low.min(1.0), s.high.max(1.0)));
        p.interval = Interval {
            lo: model.lo * low / (1.0 + margin),
            hi: model.hi * high * (1.0 + margin),
        };
        let model_width = model.hi / model.lo;
        let total_width = p.interval.hi / p.interval.lo;
        let (model_share, margin_share, noise_share) = if total_width > 1.0 {
            let t = total_width.ln();
            (
                model_width.ln() / t,
                2.0 * (1.0 + margin).ln() / t,
                (high / low).ln() / t,
            )
        } else {
            (1.0, 0.0, 0.0)
        };
        p.widening = Some(Widening {
            model_interval: model,
            margin,
            source: inputs.source_spread,
            model_width,
            total_width,
            model_share,
            margin_share,
            noise_share,
            sampling_share: 0.0,
        });
    }
    let tgt_flops: f64 = target.threads.iter().map(|t| t.flops).sum();
    p.target_time_s = (tgt_flops > 0.0 && p.interval.lo > 0.0).then(|| Interval {
        lo: tgt_flops / (p.interval.hi * 1e9),
        hi: tgt_flops / (p.interval.lo * 1e9),
    });
    Ok(p)
}

/// The source's core clock over the target's, when both machines give one and they differ
/// ([`Projection::clock_ratio`]).
pub fn clock_ratio(source: &Machine, target: &Machine) -> Option<f64> {
    let (fs, ft) = (source.frequency_ghz?, target.frequency_ghz?);
    let k = fs / ft;
    (k.is_finite() && k > 0.0 && (k - 1.0).abs() > 1e-9).then_some(k)
}

/// Adds every point's carried-time values (efficiency of at most 1) to the interval; with
/// `rate_ratio` (target / source instructions), the carried-rate values too; across
/// clocks ([`Projection::clock_ratio`]), the carried-cycles values too.
fn add_carried_time(p: &mut Projection, rate_ratio: Option<f64>) {
    let clock = p.clock_ratio;
    let add = |pts: &mut [Point], b: &Binding| -> Option<Interval> {
        let mut out: Option<Interval> = None;
        for pt in pts.iter_mut() {
            if pt.efficiency <= 1.0
                && pt.efficiency.is_finite()
                && b.source_gflops > 0.0
                && b.target_flops > 0.0
            {
                // Times in ns (FLOPs over GFLOP/s); only their ratio matters.
                let t_s = b.source_flops / b.source_gflops;
                let (roof, efficiency) = (pt.roof_target_gflops, pt.efficiency);
                let carried = |r: f64| {
                    let t_t = b.target_flops / roof + (1.0 - efficiency) * t_s * r;
                    Some(b.target_flops / t_t).filter(|v| v.is_finite() && *v > 0.0)
                };
                pt.carried_time_gflops = Some(1.0).and_then(carried);
                pt.carried_rate_gflops = rate_ratio.and_then(carried);
                pt.carried_cycles_gflops = clock.and_then(carried);
            }
            for v in std::iter::once(pt.gflops)
                .chain(pt.carried_time_gflops)
                .chain(pt.carried_rate_gflops)
                .chain(pt.carried_cycles_gflops)
            {
                out = Some(match out {
                    None => Interval { lo: v, hi: v },
                    Some(i) => Interval {
                        lo: i.lo.min(v),
                        hi: i.hi.max(v),
                    },
                });
            }
        }
        out
    };
    if p.threads.is_empty() {
        if let Some(b) = p.binding.first().copied()
            && let Some(i) = add(&mut p.points, &b)
        {
            p.interval = i;
        }
    } else {
        let mut bi = p.binding.iter();
        for t in &mut p.threads {
            if t.source_gflops <= 0.0 {
                continue;
            }
            if let Some(b) = bi.next().copied()
                && let Some(i) = add(&mut t.points, &b)
            {
                t.interval = i;
            }
        }
        p.interval = Interval {
            lo: p.threads.iter().map(|t| t.interval.lo).sum(),
            hi: p.threads.iter().map(|t| t.interval.hi).sum(),
        };
    }
}

/// Marks the points whose efficiency exceeds `tolerance` as excluded and recomputes the
/// interval from the others (per thread in node scope).
fn drop_contradicted(p: &mut Projection, tolerance: f64) {
    let limit = tolerance * (1.0 + 1e-9);
    let mark = |pts: &mut [Point]| -> Option<Interval> {
        if !pts.iter().any(|pt| pt.efficiency <= limit) {
            return None;
        }
        for pt in pts.iter_mut() {
            pt.excluded = pt.efficiency > limit;
        }
        Some(Interval::of(pts.iter().filter(|pt| !pt.excluded).flat_map(
            |pt| {
                std::iter::once(pt.gflops)
                    .chain(pt.carried_time_gflops)
                    .chain(pt.carried_rate_gflops)
                    .chain(pt.carried_cycles_gflops)
            },
        )))
    };
    let mut kept_all = false;
    if p.threads.is_empty() {
        match mark(&mut p.points) {
            Some(i) => p.interval = i,
            None => kept_all = true,
        }
    } else {
        for t in &mut p.threads {
            if t.source_gflops <= 0.0 {
                continue;
            }
            match mark(&mut t.points) {
                Some(i) => t.interval = i,
                None => kept_all = true,
            }
        }
        p.interval = Interval {
            lo: p.threads.iter().map(|t| t.interval.lo).sum(),
            hi: p.threads.iter().map(|t| t.interval.hi).sum(),
        };
    }
    let excluded = p.all_points().iter().filter(|pt| pt.excluded).count();
    if excluded > 0 {
        p.notes.push(format!(
            "{excluded} of {} pairs left out of the interval: the measured source runs above their roofline (efficiency above 1), so they do not limit it",
            p.all_points().len()
        ));
    }
    if kept_all {
        p.notes.push("the measured source runs above every roofline (efficiency above 1 for every pair): the machine's ceilings are below what it sustained; every pair is kept".into());
    }
}

#[allow(clippy::too_many_lines)]
fn project_inner(
    source: Side<'_>,
    source_gflops: f64,
    target: Side<'_>,
    (precision, target_precision): (Precision, Precision),
    opts: Options,
    source_widths: Option<&AccessWidths>,
    target_widths: Option<&AccessWidths>,
) -> Result<Projection> {
    if !(source_gflops.is_finite() && source_gflops > 0.0) {
        return Err(Error::mismatch(
            format!(
                "the source performance is {} GFLOP/s",
                crate::error::short_number(source_gflops)
            ),
            "give the source profile a time_s and FLOPs > 0, or pass --source-gflops with a positive value",
        ));
    }
    for side in [&source, &target] {
        if side.threads.is_empty() {
            return Err(Error::mismatch(
                format!("{} has no thread", side.origin),
                "give at least one thread's metrics",
            ));
        }
    }
    let src_flops: f64 = source.threads.iter().map(|t| t.flops).sum();
    if src_flops <= 0.0 {
        return Err(Error::mismatch(
            format!("{} counts no FLOP", source.origin),
            "the projection is in GFLOP/s: it needs a binary that does floating-point work",
        ));
    }
    let mut notes = Vec::new();
    let ceilings = |m: &Machine, p: Precision, w: Option<&AccessWidths>| match w {
        Some(w) => Ceilings::at_widths(m, p, opts.scope, w),
        None => Ceilings::of(m, p, opts.scope),
    };
    let mut src_c = ceilings(source.machine, precision, source_widths)?;
    let mut tgt_c = ceilings(target.machine, target_precision, target_widths)?;
    if src_c.divider_unknown || tgt_c.divider_unknown {
        // One side cannot say what its divides cost: a divider on the other side alone
        // would read as a change of machine.
        for c in [&mut src_c, &mut tgt_c] {
            if c.divider_rate.is_some() {
                c.without_divider();
                c.notes.push(format!(
                    "{}: the divider is left out, as the other side has no divide or square-root ceiling",
                    c.machine
                ));
            }
        }
    }
    let chains = |c: &Ceilings| c.access_widths.as_ref().is_some_and(|w| w.has_chains());
    if src_c.latency_unknown || tgt_c.latency_unknown || chains(&src_c) != chains(&tgt_c) {
        // A dependency chain on one side only would read as a change of machine (one
        // side's engine does not count chains, or its machine gives no latency).
        let why = if src_c.latency_unknown || tgt_c.latency_unknown {
            "the other side has no latency for them"
        } else {
            "the other side's profile records none"
        };
        for c in [&mut src_c, &mut tgt_c] {
            if c.latency_rate.is_some() {
                c.without_latency();
                c.notes.push(format!(
                    "{}: the loops' dependency chains are left out, as {why}",
                    c.machine
                ));
            }
        }
    }
    notes.extend(src_c.notes.iter().cloned());
    notes.extend(tgt_c.notes.iter().cloned());
    let mut common: Vec<String> = src_c
        .levels
        .iter()
        .filter(|l| tgt_c.levels.contains(l))
        .cloned()
        .collect();
    for (c, other) in [(&src_c, &tgt_c), (&tgt_c, &src_c)] {
        for l in &c.levels {
            if !other.levels.contains(l) {
                notes.push(format!(
                    "level {l} has a roofline on '{}' but not on '{}': not projected",
                    c.machine, other.machine
                ));
            }
        }
    }
    if common.is_empty() {
        return Err(Error::mismatch(
            format!(
                "machines '{}' ({}) and '{}' ({}) share no level with a bandwidth",
                src_c.machine,
                src_c.levels.join(", "),
                tgt_c.machine,
                tgt_c.levels.join(", ")
            ),
            "give both machines a main-memory level with the same name (MM)",
        ));
    }
    if opts.method == Method::Kwack {
        let last = common.pop().expect("not empty");
        common = vec![last];
    }
    let restrict = |c: &Ceilings| -> SideCeilings {
        let ci = common
            .iter()
            .map(|l| c.levels.iter().position(|x| x == l).expect("common"))
            .collect();
        SideCeilings { c: c.clone(), ci }
    };
    let (s, t) = (restrict(&src_c), restrict(&tgt_c));
    // Map each common level to its index in every thread's metrics.
    let map = |side: &Side<'_>, c: &Ceilings| -> Result<Vec<Vec<usize>>> {
        let sub = Ceilings {
            levels: common.clone(),
            bandwidth_gbs: common
                .iter()
                .map(|l| c.bandwidth(l).expect("common"))
                .collect(),
            ..c.clone()
        };
        side.threads
            .iter()
            .map(|m| match_levels(&sub, m, side.origin))
            .collect()
    };
    let s_idx = map(&source, &src_c)?;
    let t_idx = map(&target, &tgt_c)?;

    let fpi = |ts: &[AppMetrics]| {
        let f: f64 = ts.iter().map(|t| t.flops).sum();
        let i: f64 = ts.iter().map(|t| t.fp_instructions).sum();
        (i > 0.0).then(|| f / i)
    };
    let ceiling = |c: &Ceilings, m: &AppMetrics, notes: &mut Vec<String>| -> f64 {
        if opts.method == Method::Kwack {
            return c.peak_gflops;
        }
        let (w, clamped) = c.weighted_peak(m);
        if clamped {
            notes.push(format!(
                "on '{}', FLOPs per FP instruction exceed 2 x lanes of a {}-bit machine: clamped (the binary is wider than the machine declares)",
                c.machine, c.vector_bits
            ));
        }
        w
    };

    let mut points = Vec::new();
    let mut threads = Vec::new();
    let mut scaling = false;
    let mut binding = Vec::new();
    let src_ceiling0;
    let tgt_ceiling0;
    match opts.scope {
        Scope::Core => {
            let sm = aggregate(source.threads);
            let tm = aggregate(target.threads);
            let si = merge_idx(&s_idx);
            let ti = merge_idx(&t_idx);
            let sp = ceiling(&s.c, &sm, &mut notes);
            let tp = ceiling(&t.c, &tm, &mut notes);
            src_ceiling0 = sp;
            tgt_ceiling0 = tp;
            let so = cumulative_oi(sm.flops, &sm.bytes);
            let to = cumulative_oi(tm.flops, &tm.bytes);
            let n = common.len();
            binding.push(Binding {
                source_flops: sm.flops,
                target_flops: tm.flops,
                source_gflops,
                source_ceiling_gflops: (0..n)
                    .map(|k| attainable(s.c.bandwidth_gbs[s.ci[k]], sp, so[si[k]]))
                    .fold(f64::INFINITY, f64::min),
                target_ceiling_gflops: (0..n)
                    .map(|k| attainable(t.c.bandwidth_gbs[t.ci[k]], tp, to[ti[k]]))
                    .fold(f64::INFINITY, f64::min),
            });
            for k in 0..n {
                for j in 0..n {
                    let keep = match opts.pair_rule {
                        PairRule::UpperTriangular => j >= k,
                        PairRule::Diagonal => j == k,
                        PairRule::All => true,
                    };
                    if !keep {
                        continue;
                    }
                    let sbw = s.c.bandwidth_gbs[s.ci[j]];
                    let tbw = t.c.bandwidth_gbs[t.ci[j]];
                    points.push(point(
                        &common[k],
                        &common[j],
                        so[si[k]],
                        to[ti[k]],
                        sbw,
                        tbw,
                        sp,
                        tp,
                        source_gflops,
                    ));
                }
            }
        }
        Scope::Node => {
            // One source thread projects onto any number of target threads: each target
            // thread keeps the source's efficiency per level (a change of thread count).
            scaling = source.threads.len() == 1 && target.threads.len() > 1;
            if source.threads.len() != target.threads.len() && !scaling {
                return Err(Error::mismatch(
                    format!(
                        "the source has {} threads and the target {}",
                        source.threads.len(),
                        target.threads.len()
                    ),
                    "the node projection (eqs. 7.1-7.5) needs the same thread count on both sides, or one source thread: profile both binaries with the same number of threads",
                ));
            }
            let mut s0 = None;
            let mut t0 = None;
            for (th, tm) in target.threads.iter().enumerate() {
                let sth = if scaling { 0 } else { th };
                let sm = &source.threads[sth];
                let perf = source_gflops * sm.flops / src_flops;
                let sp = ceiling(&s.c, sm, &mut notes);
                let tp = ceiling(&t.c, tm, &mut notes);
                s0.get_or_insert(sp);
                t0.get_or_insert(tp);
                let so = cumulative_oi(sm.flops, &sm.bytes);
                let to = cumulative_oi(tm.flops, &tm.bytes);
                let sbw = node_bandwidths(&s, sm, &s_idx[sth]);
                let tbw = node_bandwidths(&t, tm, &t_idx[th]);
                let pts: Vec<Point> = (0..common.len())
                    .map(|k| {
                        point(
                            &common[k],
                            &common[k],
                            so[s_idx[sth][k]],
                            to[t_idx[th][k]],
                            sbw[k],
                            tbw[k],
                            sp,
                            tp,
                            perf,
                        )
                    })
                    .collect();
                if perf > 0.0 {
                    binding.push(Binding {
                        source_flops: sm.flops,
                        target_flops: tm.flops,
                        source_gflops: perf,
                        source_ceiling_gflops: pts
                            .iter()
                            .map(|p| p.roof_source_gflops)
                            .fold(f64::INFINITY, f64::min),
                        target_ceiling_gflops: pts
                            .iter()
                            .map(|p| p.roof_target_gflops)
                            .fold(f64::INFINITY, f64::min),
                    });
                }
                // A thread that does no FP work contributes nothing.
                let interval = if perf > 0.0 {
                    Interval::of(pts.iter().map(|p| p.gflops))
                } else {
                    Interval { lo: 0.0, hi: 0.0 }
                };
                threads.push(ThreadProjection {
                    thread: th,
                    source_gflops: perf,
                    points: pts,
                    interval,
                });
            }
            src_ceiling0 = s0.unwrap_or(0.0);
            tgt_ceiling0 = t0.unwrap_or(0.0);
        }
    }
    if scaling {
        finish_together(&mut threads, target.threads);
        notes.push(format!(
            "one source thread onto {} target threads: each target thread keeps the source's efficiency per level; the node's rate is all FLOPs over the slowest thread's projected time",
            target.threads.len()
        ));
    }
    let interval = match opts.scope {
        Scope::Core => Interval::of(points.iter().map(|p| p.gflops)),
        Scope::Node => Interval {
            lo: threads.iter().map(|t| t.interval.lo).sum(),
            hi: threads.iter().map(|t| t.interval.hi).sum(),
        },
    };
    let tgt_flops: f64 = target.threads.iter().map(|t| t.flops).sum();
    let target_time_s = (tgt_flops > 0.0 && interval.lo > 0.0).then(|| Interval {
        lo: tgt_flops / (interval.hi * 1e9),
        hi: tgt_flops / (interval.lo * 1e9),
    });
    Ok(Projection {
        source_machine: source.machine.id.clone(),
        target_machine: target.machine.id.clone(),
        precision,
        target_precision: (target_precision != precision).then_some(target_precision),
        options: opts,
        levels: common,
        source_gflops,
        source_peak_gflops: s.c.peak_gflops,
        target_peak_gflops: t.c.peak_gflops,
        source_ceiling_gflops: src_ceiling0,
        target_ceiling_gflops: tgt_ceiling0,
        source_flops_per_instruction: fpi(source.threads),
        target_flops_per_instruction: fpi(target.threads),
        points,
        threads,
        interval,
        target_time_s,
        notes: dedup(notes),
        binding,
        bandwidths: Bandwidths {
            source: src_c.access_widths.clone(),
            target: tgt_c.access_widths.clone(),
        },
        widening: None,
        point: None,
        kwack_gflops: None,
        clock_ratio: None,
    })
}

/// Each target thread's projected rate is its own, as if it ran alone; the threads of a
/// region finish together, so each one's part of the node's rate is its FLOPs over the
/// slowest thread's time (thesis A10), and eq. 7.5 sums those. `threads` must hold each
/// thread's own interval (from its points) when called.
fn finish_together(threads: &mut [ThreadProjection], target: &[AppMetrics]) {
    let slowest = |rate: &dyn Fn(&ThreadProjection) -> f64| -> f64 {
        threads
            .iter()
            .zip(target)
            .filter(|(t, m)| m.flops > 0.0 && rate(t) > 0.0)
            .map(|(t, m)| m.flops / rate(t))
            .fold(0.0, f64::max)
    };
    let (slow_lo, slow_hi) = (slowest(&|t| t.interval.lo), slowest(&|t| t.interval.hi));
    for (t, m) in threads.iter_mut().zip(target) {
        if slow_lo > 0.0 && slow_hi > 0.0 {
            t.interval = Interval {
                lo: m.flops / slow_lo,
                hi: m.flops / slow_hi,
            };
        }
    }
}

fn dedup(v: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in v {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Eq. 7.2 over the common levels of one thread: the bytes of each common level (levels
/// without a bandwidth are left out of the weighting) against the per-core bandwidths.
fn node_bandwidths(s: &SideCeilings, m: &AppMetrics, idx: &[usize]) -> Vec<f64> {
    let fractions: Vec<f64> = idx.iter().map(|&i| m.bytes[i]).collect();
    let bws: Vec<f64> = s.ci.iter().map(|&i| s.c.bandwidth_gbs[i]).collect();
    weighted_bandwidth(&fractions, &bws)
}

#[allow(clippy::too_many_arguments)]
fn point(
    k: &str,
    j: &str,
    oi_s: f64,
    oi_t: f64,
    bw_s: f64,
    bw_t: f64,
    peak_s: f64,
    peak_t: f64,
    perf: f64,
) -> Point {
    let rs = attainable(bw_s, peak_s, oi_s);
    let rt = attainable(bw_t, peak_t, oi_t);
    let eff = perf / rs;
    Point {
        oi_level: k.to_string(),
        roof_level: j.to_string(),
        oi_source: oi_s,
        oi_target: oi_t,
        bandwidth_source_gbs: bw_s,
        bandwidth_target_gbs: bw_t,
        roof_source_gflops: rs,
        roof_target_gflops: rt,
        bound_source: Bound::at(bw_s, peak_s, oi_s),
        bound_target: Bound::at(bw_t, peak_t, oi_t),
        efficiency: eff,
        gflops: eff * rt,
        excluded: false,
        carried_time_gflops: None,
        carried_rate_gflops: None,
        carried_cycles_gflops: None,
    }
}

/// Sums per-thread metrics (levels of thread 0; time = the slowest thread's).
pub fn aggregate(threads: &[AppMetrics]) -> AppMetrics {
    let levels = threads[0].levels.clone();
    let mut bytes = vec![0.0; levels.len()];
    for t in threads {
        for (i, l) in levels.iter().enumerate() {
            bytes[i] += t.bytes_of(l).unwrap_or(0.0);
        }
    }
    AppMetrics {
        flops: threads.iter().map(|t| t.flops).sum(),
        fp_instructions: threads.iter().map(|t| t.fp_instructions).sum(),
        levels,
        bytes,
        time_s: threads
            .iter()
            .filter_map(|t| t.time_s)
            .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.max(t)))),
    }
}

fn merge_idx(per_thread: &[Vec<usize>]) -> Vec<usize> {
    per_thread[0].clone()
}

/// How a measurement compares with a projected interval (thesis ambiguity A13).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Check {
    /// Measured GFLOP/s.
    pub measured_gflops: f64,
    /// Whether it falls inside the interval.
    pub inside: bool,
    /// Signed relative error of the nearest bound: 0 inside; (lo - m)/m > 0 when the
    /// interval is above the measurement (over-prediction); (hi - m)/m < 0 below it.
    pub error: f64,
    /// Relative error of the interval's nearest bound, as a magnitude (0 inside).
    pub nearest_bound_error: f64,
}

/// A projection with its validation: what `project` prints.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Serialize)]
pub struct ProjectResult {
    /// The projection.
    #[serde(flatten)]
    pub projection: Projection,
    /// The validation, when a measurement was given.
    pub validation: Option<Validation>,
}

/// How a measurement with its own run-to-run spread compares with a projection.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Validation {
    /// The median measurement against the interval.
    pub check: Check,
    /// The measurement's run-to-run spread, when it was timed more than once.
    pub spread: Option<Spread>,
    /// Whether the measured range (the band of the median over its runs: `low` to `high` of
    /// its spread) meets the interval; with no spread, whether the median is inside.
    pub inside_within_noise: bool,
    /// Distance from the interval to the measured range relative to the median measurement:
    /// 0 when they meet; > 0 when the interval is above it, < 0 below.
    pub error_within_noise: f64,
    /// The point estimate's signed error, (point - measured) / measured.
    pub point_error: Option<f64>,
    /// The Kwack baseline's signed error.
    pub kwack_error: Option<f64>,
}

impl Projection {
    /// Compares the measured GFLOP/s of the target (its median, with the spread of its
    /// runs when known) with this projection: interval, point estimate and Kwack value.
    pub fn validate(&self, measured_gflops: f64, spread: Option<Spread>) -> Validation {
        let c = check(self.interval, measured_gflops);
        let m = measured_gflops;
        let (lo_m, hi_m) = match spread {
            Some(s) => (m * s.low.min(1.0), m * s.high.max(1.0)),
            None => (m, m),
        };
        let error_within_noise = if self.interval.lo > hi_m * (1.0 + 1e-9) {
            (self.interval.lo - hi_m) / m
        } else if self.interval.hi < lo_m * (1.0 - 1e-9) {
            (self.interval.hi - lo_m) / m
        } else {
            0.0
        };
        Validation {
            check: c,
            spread,
            inside_within_noise: error_within_noise == 0.0,
            error_within_noise,
            point_error: self.point.as_ref().map(|p| (p.gflops - m) / m),
            kwack_error: self.kwack_gflops.map(|k| (k - m) / m),
        }
    }
}

/// Compares a measurement with an interval.
pub fn check(interval: Interval, measured_gflops: f64) -> Check {
    let m = measured_gflops;
    let error = if interval.contains(m) {
        0.0
    } else if m < interval.lo {
        (interval.lo - m) / m
    } else {
        (interval.hi - m) / m
    };
    Check {
        measured_gflops: m,
        inside: error == 0.0,
        error,
        nearest_bound_error: error.abs(),
    }
}
