//! Runtime from cycles, the memory-bound cap and strong-scaling prediction (seed 003,
//! sections 5.2.1 and 5.5), the BSP model of the production code (section 3.2.1, eqs. 3.1
//! and 3.2), and the error statistics of the thesis (section 5.4, eq. 5.13).

use serde::Serialize;

use crate::error::{ModelError, Result};

/// Eqs. 5.1/5.2: `W = max_t (C_g iters_t) / Hz_T`, the runtime of the slowest thread.
pub fn runtime_s(cycles_per_iter: f64, iters_per_thread: &[f64], clock_hz: f64) -> Result<f64> {
    if !(clock_hz.is_finite() && clock_hz > 0.0) {
        return Err(ModelError::Invalid(format!(
            "clock must be positive, got {clock_hz} Hz"
        )));
    }
    if iters_per_thread.is_empty() {
        return Err(ModelError::Invalid(
            "no threads: give the iterations of each thread".into(),
        ));
    }
    let m = iters_per_thread
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    Ok(cycles_per_iter * m / clock_hz)
}

/// One thread count of a strong-scaling prediction.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScalingPoint {
    /// Threads (or ranks).
    pub threads: u32,
    /// Measured clock at this thread count, Hz.
    pub clock_hz: f64,
    /// Compute-bound prediction, eqs. 5.1/5.2, seconds.
    pub compute_s: f64,
    /// Memory-bound time of the data-throughput benchmark, seconds.
    pub memory_s: f64,
    /// Stalled cycles per iteration added at this thread count (eq. 5.12; 0 without the
    /// correction).
    pub stall_cycles: f64,
    /// `max(compute, memory)`, seconds.
    pub predicted_s: f64,
    /// True when the memory time is the larger.
    pub memory_bound: bool,
}

/// A strong-scaling prediction and the thread count where it turns memory-bound.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScalingPrediction {
    /// One entry per thread count, ascending.
    pub points: Vec<ScalingPoint>,
    /// `t_b`: the lowest thread count predicted memory-bound, if any.
    pub memory_bound_from: Option<u32>,
}

/// Input of one thread count: threads, clock (Hz), iterations of the busiest thread,
/// memory-bound (DT benchmark) seconds.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct ScalingInput {
    /// Threads (or ranks).
    pub threads: u32,
    /// Measured clock at this thread count, Hz.
    pub clock_hz: f64,
    /// Loop iterations of the busiest thread.
    pub iters: f64,
    /// Data-throughput benchmark time at this thread count, seconds.
    pub memory_s: f64,
    /// `S_g,t`, stalled cycles per iteration near memory saturation (eq. 5.12, see
    /// [`stall_cycles`]); 0 leaves the model as the thesis ran it.
    #[serde(default)]
    pub stall_cycles: f64,
}

/// Eq. 5.12: `S_g,t = C_g,t - C_g`, the cycles per iteration a compute-bound code gains at
/// `t` threads as memory saturates, measured with a low flop/byte proxy variant (the
/// thesis's proposed fix, section 5.5.1): `proxy` holds (threads, cycles per iteration);
/// `C_g` is its single-thread value (the smallest thread count given, which must be 1).
pub fn stall_cycles(proxy: &[(u32, f64)]) -> Result<Vec<(u32, f64)>> {
    let mut p = proxy.to_vec();
    p.sort_by_key(|x| x.0);
    let Some(&(t0, c_g)) = p.first() else {
        return Err(ModelError::Invalid(
            "no proxy measurements: give cycles per iteration at 1 thread and more".into(),
        ));
    };
    if t0 != 1 {
        return Err(ModelError::Invalid(format!(
            "eq. 5.12 needs the proxy's single-thread cycles C_g, but the smallest thread count given is {t0}"
        )));
    }
    if let Some((t, c)) = p.iter().find(|(_, c)| !(c.is_finite() && *c > 0.0)) {
        return Err(ModelError::Invalid(format!(
            "proxy cycles per iteration at {t} threads must be positive, got {c}"
        )));
    }
    Ok(p.iter().map(|&(t, c)| (t, c - c_g)).collect())
}

/// Section 5.5.1: `T_t = max(T_t,compute, T_t,DT)` per thread count; `t_b` is the lowest `t`
/// with `T_t,compute < T_t,DT`.
pub fn strong_scaling(cycles_per_iter: f64, inputs: &[ScalingInput]) -> Result<ScalingPrediction> {
    let mut points = Vec::with_capacity(inputs.len());
    let mut sorted = inputs.to_vec();
    sorted.sort_by_key(|i| i.threads);
    for i in &sorted {
        if !(i.stall_cycles.is_finite() && cycles_per_iter + i.stall_cycles > 0.0) {
            return Err(ModelError::Invalid(format!(
                "stalled cycles at {} threads ({}) leave no positive cycles per iteration",
                i.threads, i.stall_cycles
            )));
        }
        let compute_s = runtime_s(cycles_per_iter + i.stall_cycles, &[i.iters], i.clock_hz)?;
        if !(i.memory_s.is_finite() && i.memory_s >= 0.0) {
            return Err(ModelError::Invalid(format!(
                "memory-bound time at {} threads must be >= 0, got {}",
                i.threads, i.memory_s
            )));
        }
        let memory_bound = compute_s < i.memory_s;
        points.push(ScalingPoint {
            threads: i.threads,
            clock_hz: i.clock_hz,
            compute_s,
            memory_s: i.memory_s,
            stall_cycles: i.stall_cycles,
            predicted_s: compute_s.max(i.memory_s),
            memory_bound,
        });
    }
    let memory_bound_from = points.iter().find(|p| p.memory_bound).map(|p| p.threads);
    Ok(ScalingPrediction {
        points,
        memory_bound_from,
    })
}

/// Eq. 2.2: speedup `S(N) = runtime_1 / runtime_N`.
pub fn speedup(runtime_1: f64, runtime_n: f64) -> f64 {
    runtime_1 / runtime_n
}

/// Eq. 2.3: parallel efficiency `E(N) = S(N) / N`.
pub fn efficiency(runtime_1: f64, runtime_n: f64, n: f64) -> f64 {
    speedup(runtime_1, runtime_n) / n
}

/// Eq. 3.2: halo-exchange time `C = alpha + beta N_d B` (latency s, reciprocal bandwidth s/B,
/// dependent elements, bytes per element).
pub fn halo_time_s(
    alpha_s: f64,
    beta_s_per_byte: f64,
    n_dependent: f64,
    bytes_per_element: f64,
) -> f64 {
    alpha_s + beta_s_per_byte * n_dependent * bytes_per_element
}

/// Eq. 3.1: one rank's loop time at one level, `W = max(N_i W_g, C) + N_d W_g`.
pub fn bsp_loop_time_s(n_independent: f64, n_dependent: f64, grind_s: f64, halo_s: f64) -> f64 {
    (n_independent * grind_s).max(halo_s) + n_dependent * grind_s
}

/// Summary statistics of absolute percentage errors.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ErrorStats {
    /// Number of predictions.
    pub n: usize,
    /// Mean of |error| in percent.
    pub mean_pct: f64,
    /// Sample standard deviation of |error| in percent (0 for one value).
    pub sd_pct: f64,
    /// Maximum |error| in percent.
    pub max_pct: f64,
    /// Mean signed error in percent (negative: under-prediction).
    pub mean_signed_pct: f64,
}

/// Signed percentage error `(pred - actual) / actual x 100` (section 5.4).
pub fn pct_error(predicted: f64, actual: f64) -> f64 {
    (predicted - actual) / actual * 100.0
}

/// Mean, SD and maximum of the absolute percentage errors of `(predicted, actual)` pairs,
/// as Tables 5.2 and 5.3 report them.
pub fn error_stats(pairs: &[(f64, f64)]) -> Result<ErrorStats> {
    if pairs.is_empty() {
        return Err(ModelError::Invalid("no predictions to summarise".into()));
    }
    let signed: Vec<f64> = pairs.iter().map(|&(p, a)| pct_error(p, a)).collect();
    Ok(stats_of(&signed))
}

/// Statistics of signed percentage errors.
pub fn stats_of(signed_pct: &[f64]) -> ErrorStats {
    let n = signed_pct.len();
    let abs: Vec<f64> = signed_pct.iter().map(|e| e.abs()).collect();
    let mean = abs.iter().sum::<f64>() / n as f64;
    let sd = if n > 1 {
        (abs.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    ErrorStats {
        n,
        mean_pct: mean,
        sd_pct: sd,
        max_pct: abs.iter().copied().fold(0.0, f64::max),
        mean_signed_pct: signed_pct.iter().sum::<f64>() / n as f64,
    }
}

/// Eq. 5.13: aggregate error over levels and ranks,
/// `100 x sum_l,r |pred - actual| / sum_l,r actual`; `actual[l][r]`, `predicted[l][r]`.
pub fn aggregate_error_pct(actual: &[Vec<f64>], predicted: &[Vec<f64>]) -> Result<f64> {
    if actual.len() != predicted.len()
        || actual
            .iter()
            .zip(predicted)
            .any(|(a, p)| a.len() != p.len())
    {
        return Err(ModelError::Invalid(
            "actual and predicted tables must have the same levels and ranks".into(),
        ));
    }
    let mut err = 0.0;
    let mut tot = 0.0;
    for (a, p) in actual.iter().zip(predicted) {
        for (x, y) in a.iter().zip(p) {
            err += (y - x).abs();
            tot += x;
        }
    }
    if tot <= 0.0 {
        return Err(ModelError::Invalid("the actual times sum to zero".into()));
    }
    Ok(100.0 * err / tot)
}

/// The memory-bound benchmark and the clock measured at one thread count: what a
/// strong-scaling prediction needs besides the target's cycles per iteration.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Measured {
    /// Threads (or ranks on the node).
    pub threads: u32,
    /// Clock at this thread count, Hz.
    pub clock_hz: f64,
    /// Data-throughput benchmark, seconds per loop iteration per thread at this count.
    pub memory_s_per_iter: f64,
}

/// Scaling inputs from measurements: the DT time per iteration times the busiest thread's
/// iterations at each thread count (`iters(t)`).
pub fn inputs_from_measured(
    measured: &[Measured],
    iters: impl Fn(u32) -> f64,
) -> Result<Vec<ScalingInput>> {
    measured
        .iter()
        .map(|m| {
            let n = iters(m.threads);
            if !(n.is_finite() && n > 0.0) {
                return Err(ModelError::Invalid(format!(
                    "iterations of the busiest thread at {} threads must be positive, got {n}",
                    m.threads
                )));
            }
            if !(m.memory_s_per_iter.is_finite() && m.memory_s_per_iter > 0.0) {
                return Err(ModelError::Invalid(format!(
                    "the memory benchmark's seconds per iteration at {} threads must be positive, got {}",
                    m.threads, m.memory_s_per_iter
                )));
            }
            Ok(ScalingInput {
                threads: m.threads,
                clock_hz: m.clock_hz,
                iters: n,
                memory_s: n * m.memory_s_per_iter,
                stall_cycles: 0.0,
            })
        })
        .collect()
}

/// One rank's elements at one multigrid level of a partition (section 3.2.1).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct PartitionRow {
    /// Ranks of the run this row belongs to.
    pub ranks: u32,
    /// Multigrid level.
    pub level: u32,
    /// Rank.
    pub rank: u32,
    /// Independent elements `N_i`.
    pub n_independent: f64,
    /// Halo-dependent elements `N_d`.
    pub n_dependent: f64,
    /// Measured compute time of this rank at this level, seconds (`V_l,r` of eq. 5.13).
    pub actual_s: Option<f64>,
}

/// Halo-exchange parameters of eq. 3.2.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Halo {
    /// Latency `alpha`, seconds.
    pub alpha_s: f64,
    /// Reciprocal bandwidth `beta`, seconds per byte.
    pub beta_s_per_byte: f64,
    /// Bytes per dependent element `B`.
    pub bytes_per_element: f64,
}

/// One rank at one level of a BSP prediction.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BspCell {
    /// Level.
    pub level: u32,
    /// Rank.
    pub rank: u32,
    /// Halo-exchange time, eq. 3.2, seconds.
    pub halo_s: f64,
    /// Loop time, eq. 3.1, seconds.
    pub predicted_s: f64,
    /// Measured time, when given.
    pub actual_s: Option<f64>,
}

/// The BSP prediction of one rank count.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BspRun {
    /// Ranks.
    pub ranks: u32,
    /// Clock used, Hz.
    pub clock_hz: f64,
    /// Grind time per element: `max(C_g / Hz, DT seconds per iteration)`, seconds.
    pub grind_s: f64,
    /// True when the DT time per iteration is the larger (memory-bound).
    pub memory_bound: bool,
    /// Per level: the slowest rank's time (BSP), seconds.
    pub levels: Vec<(u32, f64)>,
    /// Sum over levels of the slowest rank, seconds.
    pub total_s: f64,
    /// Every rank and level.
    pub cells: Vec<BspCell>,
    /// Eq. 5.13 over the cells with a measured time, percent.
    pub error_pct: Option<f64>,
    /// Cells without a measured time while others have one (not in the error).
    pub cells_without_actual: usize,
}

/// Eqs. 3.1 and 3.2 over a partition, with the grind time of eq. 5.2 (`C_g / Hz`) capped by
/// the memory benchmark, and eq. 5.13 where measured times are given. `rows` holds one rank
/// count's partition.
pub fn bsp_run(
    cycles_per_iter: f64,
    m: &Measured,
    halo: &Halo,
    rows: &[PartitionRow],
) -> Result<BspRun> {
    if !(cycles_per_iter.is_finite() && cycles_per_iter > 0.0) {
        return Err(ModelError::Invalid(format!(
            "cycles per iteration must be positive, got {cycles_per_iter}"
        )));
    }
    if !(m.clock_hz.is_finite() && m.clock_hz > 0.0) {
        return Err(ModelError::Invalid(format!(
            "clock at {} ranks must be positive, got {} Hz",
            m.threads, m.clock_hz
        )));
    }
    for (what, v) in [
        ("alpha", halo.alpha_s),
        ("beta", halo.beta_s_per_byte),
        ("bytes per element", halo.bytes_per_element),
        ("memory seconds per iteration", m.memory_s_per_iter),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(ModelError::Invalid(format!("{what} must be >= 0, got {v}")));
        }
    }
    if rows.is_empty() {
        return Err(ModelError::Invalid(format!(
            "no partition rows for {} ranks",
            m.threads
        )));
    }
    let compute = cycles_per_iter / m.clock_hz;
    let grind = compute.max(m.memory_s_per_iter);
    let mut cells = Vec::with_capacity(rows.len());
    let mut levels: BTreeMapLevels = BTreeMapLevels::new();
    for r in rows {
        if !(r.n_independent >= 0.0 && r.n_dependent >= 0.0) {
            return Err(ModelError::Invalid(format!(
                "rank {} level {}: element counts must be >= 0",
                r.rank, r.level
            )));
        }
        let c = halo_time_s(
            halo.alpha_s,
            halo.beta_s_per_byte,
            r.n_dependent,
            halo.bytes_per_element,
        );
        let w = bsp_loop_time_s(r.n_independent, r.n_dependent, grind, c);
        let e = levels.entry(r.level).or_insert(0.0);
        *e = e.max(w);
        cells.push(BspCell {
            level: r.level,
            rank: r.rank,
            halo_s: c,
            predicted_s: w,
            actual_s: r.actual_s,
        });
    }
    let with: Vec<&BspCell> = cells.iter().filter(|c| c.actual_s.is_some()).collect();
    let error_pct = if with.is_empty() {
        None
    } else {
        let actual = vec![with.iter().map(|c| c.actual_s.expect("filtered")).collect()];
        let pred = vec![with.iter().map(|c| c.predicted_s).collect()];
        Some(aggregate_error_pct(&actual, &pred)?)
    };
    let cells_without_actual = if with.is_empty() {
        0
    } else {
        cells.len() - with.len()
    };
    Ok(BspRun {
        ranks: m.threads,
        clock_hz: m.clock_hz,
        grind_s: grind,
        memory_bound: m.memory_s_per_iter > compute,
        total_s: levels.values().sum(),
        levels: levels.into_iter().collect(),
        cells,
        error_pct,
        cells_without_actual,
    })
}

type BTreeMapLevels = std::collections::BTreeMap<u32, f64>;
