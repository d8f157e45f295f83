//! `hpcscope model scaling`, `pop`, `compose` and `decompose`: scaling laws, POP
//! efficiencies, the kernel-composition model and the time decomposition.

use hpcscope_core::range::option as number;
use std::path::PathBuf;

use clap::Args;
use hpcscope_analysis::model::{ComposeOptions, DecomposeOptions, PopOptions, ScalingOptions};

// The arguments of `model scaling`.
#[derive(Args, Debug)]
pub struct ScalingArgs {
    /// Runs: one CSV (p or threads or ranks, and time_s), or merged jobs at several rank
    /// counts: JSON written by `hpcscope merge --format json`, or run directories.
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// Laws to offer (default: all).
    #[arg(long, value_delimiter = ',')]
    pub law: Vec<String>,
    /// Work grows with p (weak scaling).
    #[arg(long)]
    pub weak: bool,
    /// Process counts to predict.
    #[arg(long, value_delimiter = ',', value_parser = number::processes)]
    pub predict: Vec<f64>,
}

// The arguments of `model pop`.
#[derive(Args, Debug)]
pub struct PopArgs {
    /// Run CSV.
    pub run: PathBuf,
    /// Reference run CSV (for computation scaling and global efficiency).
    #[arg(long)]
    pub reference: Option<PathBuf>,
}

// The arguments of `model compose`.
#[derive(Args, Debug)]
pub struct ComposeArgs {
    /// Kernel invocations (sigma: time steps, SCF iterations).
    #[arg(long, default_value_t = 1.0)]
    pub sigma: f64,
    /// Compute time of one invocation, s.
    #[arg(long, conflicts_with_all = ["flops", "gflops"])]
    pub compute_s: Option<f64>,
    /// FLOPs of one invocation (with --gflops: T_c = flops / rate).
    #[arg(long, requires = "gflops")]
    pub flops: Option<f64>,
    /// Sustained compute rate, GFLOP/s (a kernel benchmark's, or `model peak`).
    #[arg(long, requires = "flops")]
    pub gflops: Option<f64>,
    /// Memory time of one invocation, s.
    #[arg(long, conflicts_with_all = ["bytes", "bandwidth_gbs"])]
    pub memory_s: Option<f64>,
    /// Bytes one invocation moves to and from memory (with --bandwidth-gbs).
    #[arg(long, requires = "bandwidth_gbs")]
    pub bytes: Option<f64>,
    /// Memory bandwidth, GB/s (STREAM triad, `hpcscope bench`).
    #[arg(long, requires = "bytes")]
    pub bandwidth_gbs: Option<f64>,
    /// MPI time of one invocation, s.
    #[arg(long, conflicts_with_all = ["messages", "message_bytes", "mpi_table"])]
    pub mpi_s: Option<f64>,
    /// Messages one invocation sends (with --message-bytes and --mpi-table: Hockney's
    /// t0 + n / bandwidth for each).
    #[arg(long, requires_all = ["message_bytes", "mpi_table"])]
    pub messages: Option<f64>,
    /// Bytes of each message.
    #[arg(long, requires = "messages")]
    pub message_bytes: Option<f64>,
    /// Point-to-point times to fit Hockney's model to: CSV with `bytes` and `t_avg_us`
    /// (`hpcscope bench mpi --format csv`, or an IMB table).
    #[arg(long, value_name = "CSV", requires = "messages")]
    pub mpi_table: Option<PathBuf>,
    /// Benchmark rows of --mpi-table to fit (its `benchmark` column), e.g. sendrecv.
    #[arg(long, requires = "mpi_table")]
    pub benchmark: Option<String>,
    /// Smallest message of --mpi-table in the fit, bytes (small messages follow the
    /// latency, not the bandwidth).
    #[arg(long, default_value_t = 1024.0)]
    pub min_bytes: f64,
    /// I/O time of one invocation, s.
    #[arg(long, default_value_t = 0.0)]
    pub io_s: f64,
    /// Time of the rest of the program, s.
    #[arg(long, default_value_t = 0.0)]
    pub other_s: f64,
}

// The arguments of `model decompose`.
#[derive(Args, Debug)]
pub struct DecomposeArgs {
    /// Runs CSV: `ratio` (T/T_ref) and ref/run ratios per resource.
    pub runs: PathBuf,
    /// Project a configuration: NAME=RATIO,...
    #[arg(long)]
    pub project: Option<String>,
}

/// The options of `model scaling`.
pub(super) fn scaling_options(a: &ScalingArgs) -> ScalingOptions {
    ScalingOptions {
        laws: a.law.clone(),
        weak: a.weak,
        predict: a.predict.clone(),
    }
}

/// The options of `model pop`.
pub(super) fn pop_options(a: &PopArgs) -> PopOptions {
    PopOptions {
        run: a.run.clone(),
        reference: a.reference.clone(),
    }
}

/// The options of `model compose`.
pub(super) fn compose_options(a: &ComposeArgs) -> ComposeOptions {
    ComposeOptions {
        sigma: a.sigma,
        compute_s: a.compute_s,
        flops: a.flops,
        gflops: a.gflops,
        memory_s: a.memory_s,
        bytes: a.bytes,
        bandwidth_gbs: a.bandwidth_gbs,
        mpi_s: a.mpi_s,
        messages: a.messages,
        message_bytes: a.message_bytes,
        mpi_table: a.mpi_table.clone(),
        benchmark: a.benchmark.clone(),
        min_bytes: a.min_bytes,
        io_s: a.io_s,
        other_s: a.other_s,
    }
}

/// The options of `model decompose`.
pub(super) fn decompose_options(a: &DecomposeArgs) -> DecomposeOptions {
    DecomposeOptions {
        runs: a.runs.clone(),
        project: a.project.clone(),
    }
}
