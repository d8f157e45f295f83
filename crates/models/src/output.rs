//! The JSON shapes `hpcscope model ... --format json` prints, typed so that `hpcscope
//! schema model-*` describes exactly what is printed.
//!
//! Fields are declared in the alphabetical order the earlier untyped output used, so the
//! printed JSON is the same byte for byte.

use serde::Serialize;

use crate::difference::{Comparison, Validation};
use crate::kernel::{ByInstructions, KernelReport, Spills};
use crate::laws::{LawPrediction, Selection};
use crate::peak::{DagReport, LoopPeak};
use crate::pop::{
    Composition, ComputationFactors, Decomposition, Hockney, HybridEfficiency, PopMetrics,
};
use crate::similarity::{EventVector, IpcInvariance, VectorSimilarity};
use crate::strong::{BspRun, ErrorStats, ScalingPrediction};

/// `model kernel`: the loops of the function, with the loop chosen by measured instructions,
/// the spills and the sampling evidence of `--hottest` when asked for.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum KernelOutput {
    /// `--hottest`: the kernel beside the samples that chose its function and loop.
    Hottest {
        /// The loop chosen by `--ins-per-iter`, when given.
        by_instructions: Option<ByInstructions>,
        /// (function, samples) of the run, most first.
        functions: Vec<(String, u64)>,
        /// Start address of the innermost loop with the most samples, if any sample fell in one.
        hottest_loop: Option<u64>,
        /// The loops of the hottest function.
        kernel: KernelReport,
        /// Start address of the main loop (by instructions, else the hottest).
        main_loop: Option<u64>,
        /// Samples in all.
        samples: u64,
        /// Spills of the main loop (`--min-loads`/`--min-stores`).
        spills: Option<Spills>,
    },
    /// `--ins-per-iter` or `--min-loads`/`--min-stores` without `--hottest`.
    Picked {
        /// The loop chosen by `--ins-per-iter`, when given.
        by_instructions: Option<ByInstructions>,
        /// The loops of the function.
        kernel: KernelReport,
        /// Start address of the main loop.
        main_loop: Option<u64>,
        /// Spills of the main loop.
        spills: Option<Spills>,
    },
    /// The loops of the function only.
    Plain(KernelReport),
}

/// `model predict`: one prediction per target, or with `--validate` the errors against the
/// measured rows.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum PredictOutput {
    /// `--validate`.
    Validation(PredictValidation),
    /// One prediction per target.
    Targets(Vec<PredictTarget>),
}

/// `model predict --validate`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PredictValidation {
    /// Rows asked for that have no measured cycles per iteration.
    pub not_compared: Vec<String>,
    /// Name of the proxy row.
    pub proxy: String,
    /// Each model's errors per variant and over the variants.
    pub validation: Validation,
}

/// One target of `model predict`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PredictTarget {
    /// Every model's prediction for the target.
    pub comparison: Comparison,
    /// The target's measured cycles per iteration, when its row has them.
    pub measured_cycles_per_iter: Option<f64>,
    /// Name of the target row.
    pub target: String,
    /// Runtime of the final model's cycles (with `--clock-ghz` and `--iters`), seconds.
    pub time_s: Option<f64>,
}

/// `model strong`: the prediction alone (from a scaling table), the prediction beside a
/// measurement and measured runtimes, or the BSP model of `--partition`. `M` is the
/// data-throughput measurement (`model dt`).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum StrongOutput<M> {
    /// `--partition`.
    Bsp(StrongBsp<M>),
    /// `--measure`, `--dt`, `--actual` or a program.
    Measured(StrongMeasured<M>),
    /// A scaling table alone.
    Prediction(ScalingPrediction),
}

/// `model strong` with a measurement or measured runtimes.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StrongMeasured<M> {
    /// The measured runtimes and the prediction's error at each.
    pub actual: Vec<ActualPoint>,
    /// Statistics of the errors, when a runtime was measured.
    pub error_stats: Option<ErrorStats>,
    /// The data-throughput measurement (`--measure`, `--dt`).
    pub measurement: Option<M>,
    /// The prediction.
    pub prediction: ScalingPrediction,
}

/// A measured runtime beside the prediction.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ActualPoint {
    /// Measured runtime, seconds.
    pub actual_s: f64,
    /// Signed error of the prediction, percent (eq. 5.13).
    pub error_pct: f64,
    /// Threads.
    pub threads: u32,
}

/// `model strong --partition`: the BSP model per rank count.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StrongBsp<M> {
    /// One prediction per rank count.
    pub bsp: Vec<BspRun>,
    /// Statistics of the errors, when the partition gives actual times.
    pub error_stats: Option<ErrorStats>,
    /// The data-throughput measurement the clock and memory cap come from.
    pub measurement: Option<M>,
}

/// `model similarity`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SimilarityOutput {
    /// IPC-ratio invariance over the environments, when every input counts instructions
    /// and cycles.
    pub ipc: Option<IpcInvariance>,
    /// The kernel's event vector.
    pub kernel: EventVector,
    /// The parent's event vector.
    pub parent: EventVector,
    /// The counter-vector similarity.
    pub similarity: VectorSimilarity,
}

/// `model scaling`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ScalingOutput {
    /// The chosen law's predictions at `--predict`.
    pub predictions: Vec<LawPrediction>,
    /// Every fitted law and the chosen one.
    pub selection: Selection,
}

/// `model pop`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PopOutput {
    /// Eq. 3.12's factors, when the run and the reference count instructions and cycles.
    pub factors: Option<ComputationFactors>,
    /// The MPI + OpenMP split, when the run gives time outside MPI.
    pub hybrid: Option<HybridEfficiency>,
    /// The POP efficiencies.
    pub pop: PopMetrics,
}

/// `model compose`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ComposeOutput {
    /// The terms of eq. 3.3.
    pub composition: Composition,
    /// Hockney's model fitted to `--mpi-table`, when given.
    pub hockney_us: Option<Hockney>,
}

/// `model decompose`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DecomposeOutput {
    /// The fitted weights.
    pub decomposition: Decomposition,
    /// T/T_ref of the `--project` configuration.
    pub projected_ratio: Option<f64>,
}

/// `model peak`: a DAG's estimates, or a loop's peak.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum PeakOutput {
    /// `--dag`.
    Dag(DagReport),
    /// `--binary` and `--function`.
    Loop(LoopPeak),
}
