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
use crate::profile::AppMetrics;
use crate::roofline::{
    Bound, Ceilings, Scope, attainable, cumulative_oi, match_levels, weighted_bandwidth,
};

/// Which (OI level k, roofline level j) pairs give points in the single-core projection.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PairRule {
    /// j >= k: each OI against its own level's roofline and every slower level's (thesis
    /// section 6.1.3; 6 points with two cache levels).
    #[default]
    UpperTriangular,
    /// j = k only.
    Diagonal,
    /// Every pair.
    All,
}

/// Which ceilings the projection uses.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Gavoille: the peak weighted by each binary's instruction mix (eq. 6.2), all levels.
    #[default]
    Weighted,
    /// Kwack et al.: unweighted peak, main memory only.
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
    /// Precision.
    pub precision: Precision,
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
}

impl Projection {
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
    if !(source_gflops.is_finite() && source_gflops > 0.0) {
        return Err(Error::mismatch(
            format!("the source performance is {source_gflops} GFLOP/s"),
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
    let src_c = Ceilings::of(source.machine, precision, opts.scope)?;
    let tgt_c = Ceilings::of(target.machine, precision, opts.scope)?;
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
        // Each target thread's projected rate is its own, as if it ran alone; the threads
        // of a region finish together, so each one's part of the node's rate is its FLOPs
        // over the slowest thread's time (thesis A10), and eq. 7.5 sums those.
        let slowest = |rate: &dyn Fn(&ThreadProjection) -> f64| -> f64 {
            threads
                .iter()
                .zip(target.threads)
                .filter(|(t, m)| m.flops > 0.0 && rate(t) > 0.0)
                .map(|(t, m)| m.flops / rate(t))
                .fold(0.0, f64::max)
        };
        let (slow_lo, slow_hi) = (slowest(&|t| t.interval.lo), slowest(&|t| t.interval.hi));
        for (t, m) in threads.iter_mut().zip(target.threads) {
            if slow_lo > 0.0 && slow_hi > 0.0 {
                t.interval = Interval {
                    lo: m.flops / slow_lo,
                    hi: m.flops / slow_hi,
                };
            }
        }
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
    })
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
