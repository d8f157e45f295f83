//! The difference model (seed 003, Owenson 2020, chapter 5): predict a target kernel's cycles
//! per iteration from a proxy's measured cycles and the difference of their instruction mixes.
//!
//! * Final model, eqs. 5.8 to 5.11: model both totals with the same port model, subtract:
//!   `C_target = C_proxy,measured - (C_model(proxy) - C_model(target))`.
//! * Model v1, eqs. 5.3 to 5.5: every class on its own port: `dC = max_i dI_i c_i`.
//! * Model v2, eqs. 5.6 and 5.7: the port model applied to the difference vector `dI`.
//! * Baselines (section 5.4): equal IPC, `C_t = I_t C_p / I_p`; constant `R_c`, `C_t = R_c C_p`.
//!
//! v1 and v2 are kept for comparison only: the thesis shows (and the tests reproduce) that
//! a change in a class that does not bind the busiest port changes nothing, which only the
//! final model captures.

use serde::Serialize;

use crate::error::{ModelError, Result};
use crate::ports::{Allocation, ClassCounts, Cpis, OTHER, PortModel, Scheduler};

/// A prediction of the final difference model with its intermediate values.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DifferencePrediction {
    /// Eq. 5.8: the model's cycles of the proxy.
    pub c_model_proxy: f64,
    /// Eq. 5.9: the model's cycles of the target.
    pub c_model_target: f64,
    /// Eq. 5.10: `C_model,proxy - C_model,target`.
    pub delta_c: f64,
    /// The proxy's measured cycles per iteration.
    pub c_proxy_measured: f64,
    /// Eq. 5.11: the predicted target cycles per iteration.
    pub c_target: f64,
    /// The proxy's port allocation.
    pub proxy_allocation: Allocation,
    /// The target's port allocation.
    pub target_allocation: Allocation,
}

/// Eqs. 5.8 to 5.11: the final difference model.
pub fn predict(
    model: &PortModel,
    proxy: &ClassCounts,
    target: &ClassCounts,
    cpi: &Cpis,
    c_proxy_measured: f64,
    sched: Scheduler,
) -> Result<DifferencePrediction> {
    check_cycles(c_proxy_measured)?;
    let pa = model.allocate(proxy, cpi, sched)?;
    let ta = model.allocate(target, cpi, sched)?;
    let delta_c = pa.cycles - ta.cycles;
    Ok(DifferencePrediction {
        c_model_proxy: pa.cycles,
        c_model_target: ta.cycles,
        delta_c,
        c_proxy_measured,
        c_target: c_proxy_measured - delta_c,
        proxy_allocation: pa,
        target_allocation: ta,
    })
}

/// Eqs. 5.3 to 5.5 (model v1): dedicated ports, `C_t = C_p - max_i (dI_i c_i)` with
/// `dI = I_proxy - I_target`.
pub fn predict_v1(
    model: &PortModel,
    proxy: &ClassCounts,
    target: &ClassCounts,
    cpi: &Cpis,
    c_proxy_measured: f64,
) -> Result<f64> {
    check_cycles(c_proxy_measured)?;
    let p = model.count_vector(proxy)?;
    let t = model.count_vector(target)?;
    let c = model.cpi_vector(cpi)?;
    let dc = (0..p.len())
        .map(|i| (p[i] - t[i]) * c[i])
        .fold(f64::NEG_INFINITY, f64::max);
    Ok(c_proxy_measured - dc)
}

/// Eqs. 5.6 and 5.7 (model v2): the port model applied to the difference vector;
/// negative entries are drained from the highest ports.
pub fn predict_v2(
    model: &PortModel,
    proxy: &ClassCounts,
    target: &ClassCounts,
    cpi: &Cpis,
    c_proxy_measured: f64,
    sched: Scheduler,
) -> Result<f64> {
    check_cycles(c_proxy_measured)?;
    let p = model.count_vector(proxy)?;
    let t = model.count_vector(target)?;
    let c = model.cpi_vector(cpi)?;
    let d: Vec<f64> = p.iter().zip(&t).map(|(a, b)| a - b).collect();
    Ok(c_proxy_measured - model.cycles_of(&d, &c, sched))
}

/// Total instructions of a count vector, loads and stores included, `OTHER` included.
pub fn total_instructions(counts: &ClassCounts) -> f64 {
    counts.values().sum()
}

/// Equal-IPC baseline (section 5.4): `C_target = I_target C_proxy / I_proxy`.
pub fn equal_ipc(proxy: &ClassCounts, target: &ClassCounts, c_proxy_measured: f64) -> Result<f64> {
    check_cycles(c_proxy_measured)?;
    let ip = total_instructions(proxy);
    if ip <= 0.0 {
        return Err(ModelError::Invalid(
            "the proxy has no instructions; equal-IPC needs a non-empty count vector".into(),
        ));
    }
    Ok(total_instructions(target) * c_proxy_measured / ip)
}

/// Constant-`R_c` baseline (section 5.4): `C_target = R_c C_proxy`, with `R_c` measured on
/// one reference system.
pub fn constant_rc(c_proxy_measured: f64, rc: f64) -> Result<f64> {
    check_cycles(c_proxy_measured)?;
    if !(rc.is_finite() && rc > 0.0) {
        return Err(ModelError::Invalid(format!(
            "R_c must be positive, got {rc}"
        )));
    }
    Ok(rc * c_proxy_measured)
}

/// All models side by side for one proxy/target pair.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Final difference model (eqs. 5.8 to 5.11).
    pub final_model: DifferencePrediction,
    /// Model v1 (eqs. 5.3 to 5.5).
    pub v1: f64,
    /// Model v2 (eqs. 5.6 and 5.7).
    pub v2: f64,
    /// Equal-IPC baseline.
    pub equal_ipc: f64,
    /// Constant-`R_c` baseline, when an `R_c` is given.
    pub constant_rc: Option<f64>,
    /// Instruction classes counted as `OTHER` (not modelled), proxy then target.
    pub other: (f64, f64),
}

/// Runs every model on one pair.
pub fn compare(
    model: &PortModel,
    proxy: &ClassCounts,
    target: &ClassCounts,
    cpi: &Cpis,
    c_proxy_measured: f64,
    rc: Option<f64>,
    sched: Scheduler,
) -> Result<Comparison> {
    Ok(Comparison {
        final_model: predict(model, proxy, target, cpi, c_proxy_measured, sched)?,
        v1: predict_v1(model, proxy, target, cpi, c_proxy_measured)?,
        v2: predict_v2(model, proxy, target, cpi, c_proxy_measured, sched)?,
        equal_ipc: equal_ipc(proxy, target, c_proxy_measured)?,
        constant_rc: rc.map(|r| constant_rc(c_proxy_measured, r)).transpose()?,
        other: (
            proxy.get(OTHER).copied().unwrap_or(0.0),
            target.get(OTHER).copied().unwrap_or(0.0),
        ),
    })
}

/// Prediction errors of one model over the variants with a measurement.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelErrors {
    /// The model: `difference`, `v1`, `v2`, `equal_ipc`, `constant_rc`.
    pub model: String,
    /// Signed percentage error per variant, in the order of [`Validation::variants`].
    pub errors_pct: Vec<f64>,
    /// Mean, SD and maximum of the absolute errors (Tables 5.2 and 5.3).
    pub stats: crate::strong::ErrorStats,
}

/// Every model's errors against measured variants, side by side (Table 5.2's layout).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Validation {
    /// Variant names.
    pub variants: Vec<String>,
    /// Their measured cycles per iteration.
    pub measured: Vec<f64>,
    /// One entry per model, the final difference model first.
    pub models: Vec<ModelErrors>,
}

/// Errors of every model over `(name, comparison, measured cycles)` triples. The
/// constant-`R_c` baseline is included when every comparison has it.
pub fn validate(rows: &[(String, Comparison, f64)]) -> Result<Validation> {
    if rows.is_empty() {
        return Err(ModelError::Invalid(
            "no variant with measured cycles to compare the predictions with".into(),
        ));
    }
    for (n, _, m) in rows {
        if !(m.is_finite() && *m > 0.0) {
            return Err(ModelError::Invalid(format!(
                "variant '{n}': measured cycles per iteration must be positive, got {m}"
            )));
        }
    }
    let mut models: Vec<(&str, Vec<f64>)> = vec![
        (
            "difference",
            rows.iter().map(|r| r.1.final_model.c_target).collect(),
        ),
        ("v1", rows.iter().map(|r| r.1.v1).collect()),
        ("v2", rows.iter().map(|r| r.1.v2).collect()),
        ("equal_ipc", rows.iter().map(|r| r.1.equal_ipc).collect()),
    ];
    if rows.iter().all(|r| r.1.constant_rc.is_some()) {
        models.push((
            "constant_rc",
            rows.iter()
                .map(|r| r.1.constant_rc.expect("checked"))
                .collect(),
        ));
    }
    let models = models
        .into_iter()
        .map(|(name, pred)| {
            let errors_pct: Vec<f64> = pred
                .iter()
                .zip(rows)
                .map(|(p, r)| crate::strong::pct_error(*p, r.2))
                .collect();
            ModelErrors {
                model: name.into(),
                stats: crate::strong::stats_of(&errors_pct),
                errors_pct,
            }
        })
        .collect();
    Ok(Validation {
        variants: rows.iter().map(|r| r.0.clone()).collect(),
        measured: rows.iter().map(|r| r.2).collect(),
        models,
    })
}

fn check_cycles(c: f64) -> Result<()> {
    if c.is_finite() && c > 0.0 {
        Ok(())
    } else {
        Err(ModelError::Invalid(format!(
            "the proxy's measured cycles per iteration must be positive, got {c}"
        )))
    }
}
