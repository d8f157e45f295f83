//! POP parallel-efficiency metrics (Wang 2023, seed 004, section 3.2.2, eqs. 3.7 to 3.16) and
//! the execution-time decomposition used to project between machines (section 3.1.4.2,
//! eqs. 3.1 to 3.3).
//!
//! `comp` is each process's (or thread's) useful computation time, `runtime` the elapsed
//! time of the region, `out_mpi` the time each rank spends outside MPI.

use serde::{Deserialize, Serialize};

use crate::error::{ModelError, Result};
use crate::optim::{least_squares, nnls};

/// POP efficiencies of one run.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PopMetrics {
    /// Processes (or threads).
    pub n: usize,
    /// Elapsed time, s.
    pub runtime_s: f64,
    /// Eq. 3.7: `sum(comp) / (n runtime)`.
    pub parallel_efficiency: f64,
    /// Eq. 3.8: `average(comp) / max(comp)`.
    pub load_balance: f64,
    /// Eq. 3.9: `max(comp) / runtime`.
    pub communication_efficiency: f64,
    /// Eq. 3.10 against a reference run: `sum(comp_ref) / sum(comp)`.
    pub strong_scaling: Option<f64>,
    /// Eq. 3.11 against a reference run: `average(comp_ref) / average(comp)`.
    pub weak_scaling: Option<f64>,
    /// Eq. 3.12: computation scaling (the strong-scaling value unless the instruction, IPC and
    /// frequency factors are given).
    pub computation_scaling: Option<f64>,
    /// Eq. 3.13: `computation scaling x parallel efficiency`.
    pub global_efficiency: Option<f64>,
}

fn check(comp: &[f64], runtime_s: f64) -> Result<()> {
    if comp.is_empty() {
        return Err(ModelError::Invalid(
            "no processes: give one computation time per process".into(),
        ));
    }
    if !(runtime_s.is_finite() && runtime_s > 0.0) {
        return Err(ModelError::Invalid(format!(
            "runtime must be positive, got {runtime_s} s"
        )));
    }
    if let Some(c) = comp.iter().find(|c| !(c.is_finite() && **c >= 0.0)) {
        return Err(ModelError::Invalid(format!(
            "computation times must be >= 0, got {c}"
        )));
    }
    if let Some(c) = comp.iter().find(|c| **c > runtime_s * (1.0 + 1e-9)) {
        return Err(ModelError::Invalid(format!(
            "a computation time ({c} s) exceeds the runtime ({runtime_s} s); comp must be the useful part of the run"
        )));
    }
    Ok(())
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// Computes eqs. 3.7 to 3.13 for one run, with an optional reference run (its comp times)
/// and optional eq. 3.12 factors `(instruction, IPC, frequency)` scaling.
pub fn pop_metrics(
    comp: &[f64],
    runtime_s: f64,
    reference_comp: Option<&[f64]>,
    factors: Option<(f64, f64, f64)>,
) -> Result<PopMetrics> {
    check(comp, runtime_s)?;
    let n = comp.len();
    let pe = comp.iter().sum::<f64>() / (n as f64 * runtime_s);
    let mx = max(comp);
    let lb = if mx > 0.0 { mean(comp) / mx } else { 1.0 };
    let ce = mx / runtime_s;
    let (strong, weak) = match reference_comp {
        Some(r) if !r.is_empty() => (
            Some(r.iter().sum::<f64>() / comp.iter().sum::<f64>()),
            Some(mean(r) / mean(comp)),
        ),
        _ => (None, None),
    };
    let computation = factors.map(|(i, ipc, f)| i * ipc * f).or(strong);
    Ok(PopMetrics {
        n,
        runtime_s,
        parallel_efficiency: pe,
        load_balance: lb,
        communication_efficiency: ce,
        strong_scaling: strong,
        weak_scaling: weak,
        computation_scaling: computation,
        global_efficiency: computation.map(|c| c * pe),
    })
}

/// What eq. 3.12's factors are computed from, for one run: the summed useful computation
/// time and the instructions and cycles counted over it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CounterSums {
    /// Sum over processes of the computation time, s.
    pub comp_s: f64,
    /// Sum over processes of the instructions.
    pub instructions: f64,
    /// Sum over processes of the cycles.
    pub cycles: f64,
}

/// Eq. 3.12's factors of computation scaling against a reference run (the POP definitions;
/// the thesis describes them in words only): instruction scaling `sum(I_ref) / sum(I)`, IPC
/// scaling `IPC / IPC_ref` with `IPC = sum(I) / sum(C)`, frequency scaling `f / f_ref` with
/// `f = sum(C) / sum(comp)`. Their product is eq. 3.10's `sum(comp_ref) / sum(comp)`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ComputationFactors {
    /// Instruction scaling: fewer instructions in all than the reference is above 1.
    pub instruction: f64,
    /// IPC scaling.
    pub ipc: f64,
    /// Frequency scaling.
    pub frequency: f64,
    /// The run's instructions per cycle.
    pub ipc_run: f64,
    /// The reference's instructions per cycle.
    pub ipc_reference: f64,
    /// The run's mean clock over its computation, GHz.
    pub frequency_ghz: f64,
    /// The reference's, GHz.
    pub frequency_reference_ghz: f64,
}

impl ComputationFactors {
    /// The product: computation scaling (eq. 3.12).
    pub fn product(&self) -> f64 {
        self.instruction * self.ipc * self.frequency
    }
}

/// Eq. 3.12's factors of `run` against `reference`.
pub fn computation_factors(
    run: &CounterSums,
    reference: &CounterSums,
) -> Result<ComputationFactors> {
    for (what, c) in [("run", run), ("reference", reference)] {
        for (name, v) in [
            ("computation time", c.comp_s),
            ("instructions", c.instructions),
            ("cycles", c.cycles),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(ModelError::Invalid(format!(
                    "eq. 3.12 needs a positive {name} for the {what}, got {v}; count instructions and cycles over the computation of every process"
                )));
            }
        }
    }
    let ipc = |c: &CounterSums| c.instructions / c.cycles;
    let freq = |c: &CounterSums| c.cycles / c.comp_s;
    Ok(ComputationFactors {
        instruction: reference.instructions / run.instructions,
        ipc: ipc(run) / ipc(reference),
        frequency: freq(run) / freq(reference),
        ipc_run: ipc(run),
        ipc_reference: ipc(reference),
        frequency_ghz: freq(run) * 1e-9,
        frequency_reference_ghz: freq(reference) * 1e-9,
    })
}

/// The hybrid MPI + OpenMP split of parallel efficiency (eqs. 3.14 to 3.16).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HybridEfficiency {
    /// Eq. 3.7 over all threads of all ranks.
    pub hybrid_parallel_efficiency: f64,
    /// Eq. 3.15: `average(out_MPI) / runtime`.
    pub mpi_efficiency: f64,
    /// Eq. 3.16: `hybrid / MPI`.
    pub openmp_efficiency: f64,
}

/// Eqs. 3.14 to 3.16 from per-thread computation times, per-rank time outside MPI and the
/// runtime. By construction `MPI x OpenMP = hybrid` (eq. 3.14).
pub fn hybrid_efficiency(
    thread_comp: &[f64],
    rank_out_mpi: &[f64],
    runtime_s: f64,
) -> Result<HybridEfficiency> {
    check(thread_comp, runtime_s)?;
    check(rank_out_mpi, runtime_s)?;
    let hpe = thread_comp.iter().sum::<f64>() / (thread_comp.len() as f64 * runtime_s);
    let mpi = mean(rank_out_mpi) / runtime_s;
    if mpi <= 0.0 {
        return Err(ModelError::Invalid(
            "time outside MPI is zero; MPI efficiency is undefined".into(),
        ));
    }
    Ok(HybridEfficiency {
        hybrid_parallel_efficiency: hpe,
        mpi_efficiency: mpi,
        openmp_efficiency: hpe / mpi,
    })
}

/// A fitted eq. 3.2 decomposition: `T/T_ref = sum_k alpha_k x_k` with `x_k` the ratio of the
/// reference resource to the run's resource (`f_ref/f`, `BW_ref/BW`, `NB_ref/NB`, ...).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decomposition {
    /// Term names (the resources).
    pub terms: Vec<String>,
    /// Fitted non-negative weights, one per term.
    pub alpha: Vec<f64>,
    /// Sum of the weights (1 when the terms cover the whole reference time).
    pub alpha_sum: f64,
    /// Residuals `predicted - measured` of the ratio, per run.
    pub residuals: Vec<f64>,
    /// Coefficient of determination.
    pub r2: f64,
}

/// Fits eq. 3.2's weights by non-negative least squares; `ratios[i]` are run i's resource
/// ratios, `y[i]` its measured `T/T_ref`.
pub fn fit_decomposition(
    terms: &[String],
    ratios: &[Vec<f64>],
    y: &[f64],
) -> Result<Decomposition> {
    let k = terms.len();
    if k == 0 || k > 16 {
        return Err(ModelError::Invalid(format!(
            "eq. 3.2 needs 1 to 16 resource terms, got {k}"
        )));
    }
    if ratios.len() < k {
        return Err(ModelError::TooFew {
            what: "runs",
            got: ratios.len(),
            needed: k,
            why: format!("one weight per resource term ({})", terms.join(", ")),
        });
    }
    if ratios.iter().any(|r| r.len() != k) || ratios.len() != y.len() {
        return Err(ModelError::Invalid(
            "every run needs one ratio per term and one measured T/T_ref".into(),
        ));
    }
    let alpha = nnls(ratios, y).ok_or_else(|| {
        ModelError::Invalid(
            "the runs do not determine the weights (vary each resource in some run)".into(),
        )
    })?;
    let residuals: Vec<f64> = ratios
        .iter()
        .zip(y)
        .map(|(r, yi)| project_ratio(&alpha, r) - yi)
        .collect();
    let my = mean(y);
    let sst: f64 = y.iter().map(|v| (v - my).powi(2)).sum();
    let sse: f64 = residuals.iter().map(|e| e * e).sum();
    Ok(Decomposition {
        terms: terms.to_vec(),
        alpha_sum: alpha.iter().sum(),
        alpha,
        residuals,
        r2: if sst > 0.0 { 1.0 - sse / sst } else { 1.0 },
    })
}

/// Eq. 3.2: `T/T_ref = sum_k alpha_k ratio_k`.
pub fn project_ratio(alpha: &[f64], ratios: &[f64]) -> f64 {
    alpha.iter().zip(ratios).map(|(a, r)| a * r).sum()
}

/// Terms of eq. 3.3's kernel composition, seconds.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Composition {
    /// Compute time `T_c(f)`.
    pub compute_s: f64,
    /// Memory time `T_mem(BW)`.
    pub memory_s: f64,
    /// Communication time `T_MPI(NB)`.
    pub mpi_s: f64,
    /// I/O time.
    pub io_s: f64,
    /// `T_kernel`, the sum of the four.
    pub kernel_s: f64,
    /// Kernel weight (invocations) `sigma`.
    pub sigma: f64,
    /// The rest of the program, `T_other`.
    pub other_s: f64,
    /// `T = sigma T_kernel + T_other`.
    pub total_s: f64,
}

/// Eq. 3.3: `T = sigma (T_c + T_mem + T_MPI + T_IO) + T_other`.
pub fn compose(
    sigma: f64,
    compute_s: f64,
    memory_s: f64,
    mpi_s: f64,
    io_s: f64,
    other_s: f64,
) -> Composition {
    let kernel_s = compute_s + memory_s + mpi_s + io_s;
    Composition {
        compute_s,
        memory_s,
        mpi_s,
        io_s,
        kernel_s,
        sigma,
        other_s,
        total_s: sigma * kernel_s + other_s,
    }
}

/// A Hockney model `t(n) = t0 + n / bandwidth` fitted by least squares.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Hockney {
    /// Latency, in the time unit of the data.
    pub t0: f64,
    /// Time per byte.
    pub per_byte: f64,
}

/// Fits `t = t0 + per_byte n` to (bytes, time) pairs.
pub fn fit_hockney(points: &[(f64, f64)]) -> Result<Hockney> {
    let x: Vec<Vec<f64>> = points.iter().map(|p| vec![1.0, p.0]).collect();
    let y: Vec<f64> = points.iter().map(|p| p.1).collect();
    let b = least_squares(&x, &y)
        .ok_or_else(|| ModelError::Invalid("need at least two distinct message sizes".into()))?;
    Ok(Hockney {
        t0: b[0],
        per_byte: b[1],
    })
}

/// Per-process data of one run read from CSV.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PopRun {
    /// Elapsed time, s.
    pub runtime_s: f64,
    /// Computation time of each row (process or thread), s.
    pub comp_s: Vec<f64>,
    /// Time outside MPI of each rank (first row of each rank), s, when given.
    pub out_mpi_s: Option<Vec<f64>>,
    /// Instructions and cycles over the computation, summed over the rows, when every row
    /// gives them (`instructions` and `cycles`, or `frequency_ghz` for the cycles).
    pub counters: Option<CounterSums>,
}

/// Reads a POP CSV: `comp_s` per process (or thread) and `runtime_s` (the same on every row),
/// optionally `rank` and `out_mpi_s` (time outside MPI, per rank) for the hybrid split, and
/// `instructions` with `cycles` or `frequency_ghz` (the mean clock over the computation) for
/// eq. 3.12's factors.
pub fn pop_run_from_csv(text: &str, origin: &str) -> Result<PopRun> {
    let c = crate::csv::Csv::parse(text, origin)?;
    let comp = c.require(
        "comp_s",
        "give each process's useful computation time in seconds",
    )?;
    let rt = c.require("runtime_s", "give the run's elapsed time on every row")?;
    let rank = c.column("rank");
    let out = c.column("out_mpi_s");
    let instr = c.column("instructions");
    let cycles = c.column("cycles");
    let freq = c.column("frequency_ghz");
    if cycles.is_some() && freq.is_some() {
        return Err(c.error_at(
            0,
            freq.unwrap_or(0),
            "give cycles or frequency_ghz, not both".into(),
        ));
    }
    if instr.is_some() != (cycles.is_some() || freq.is_some()) {
        return Err(c.error_at(
            0,
            instr.or(cycles).or(freq).unwrap_or(0),
            "eq. 3.12 needs instructions and cycles (or frequency_ghz) together".into(),
        ));
    }
    let mut sums = CounterSums {
        comp_s: 0.0,
        instructions: 0.0,
        cycles: 0.0,
    };
    if c.rows.is_empty() {
        return Err(c.error_at(0, 0, "no data rows".into()));
    }
    let runtime = c.number(0, rt)?;
    let mut comp_s = Vec::new();
    let mut per_rank: Vec<(String, f64)> = Vec::new();
    for r in 0..c.rows.len() {
        let t = c.number(r, rt)?;
        if (t - runtime).abs() > 1e-9 * runtime.abs().max(1.0) {
            return Err(c.error_at(
                r,
                rt,
                format!("runtime_s is {t} here but {runtime} on the first row; one run per file"),
            ));
        }
        let cr = c.number(r, comp)?;
        comp_s.push(cr);
        if let Some(i) = instr {
            sums.comp_s += cr;
            sums.instructions += c.number(r, i)?;
            sums.cycles += match (cycles, freq) {
                (Some(k), _) => c.number(r, k)?,
                (None, Some(f)) => c.number(r, f)? * 1e9 * cr,
                _ => 0.0,
            };
        }
        if let Some(o) = out {
            let key = rank
                .map(|k| c.text(r, k).to_string())
                .unwrap_or_else(|| r.to_string());
            if !per_rank.iter().any(|(k, _)| *k == key) {
                per_rank.push((key, c.number(r, o)?));
            }
        }
    }
    Ok(PopRun {
        runtime_s: runtime,
        comp_s,
        out_mpi_s: out.map(|_| per_rank.into_iter().map(|x| x.1).collect()),
        counters: instr.map(|_| sums),
    })
}

/// Eq. 3.2 fitting input: term names, per-run ratios, per-run measured `T/T_ref`.
pub type DecompositionInput = (Vec<String>, Vec<Vec<f64>>, Vec<f64>);

/// Reads eq. 3.2 runs from CSV: a `ratio` column (`T/T_ref`) and one column per resource
/// term holding `resource_ref / resource`; a `run` column, if any, names the rows.
pub fn decomposition_from_csv(text: &str, origin: &str) -> Result<DecompositionInput> {
    let c = crate::csv::Csv::parse(text, origin)?;
    let y = c.require("ratio", "add the measured T/T_ref of each run")?;
    let terms: Vec<usize> = (0..c.headers.len())
        .filter(|&j| j != y && !c.headers[j].eq_ignore_ascii_case("run"))
        .collect();
    if terms.is_empty() {
        return Err(c.error_at(
            0,
            c.headers.len(),
            "no resource columns (e.g. f, BW, NB holding ref/run ratios)".into(),
        ));
    }
    let mut x = Vec::new();
    let mut ys = Vec::new();
    for r in 0..c.rows.len() {
        x.push(
            terms
                .iter()
                .map(|&j| c.number(r, j))
                .collect::<Result<Vec<_>>>()?,
        );
        ys.push(c.number(r, y)?);
    }
    Ok((terms.iter().map(|&j| c.headers[j].clone()).collect(), x, ys))
}
