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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScalingPrediction {
    /// One entry per thread count, ascending.
    pub points: Vec<ScalingPoint>,
    /// `t_b`: the lowest thread count predicted memory-bound, if any.
    pub memory_bound_from: Option<u32>,
}

/// Input of one thread count: threads, clock (Hz), iterations of the busiest thread,
/// memory-bound (DT benchmark) seconds.
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
