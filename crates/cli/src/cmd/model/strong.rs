//! `hpcscope model strong` and `model dt`: strong scaling capped by the data-throughput
//! kernel, and the kernel's measurement.

use hpcscope_core::range::option as number;
use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;
use hpcscope_analysis::model::{StrongOptions, StrongSource};

// The arguments of `model strong`.
#[derive(Args, Debug)]
pub struct StrongArgs {
    /// Scaling table CSV (instead of --measure or --dt).
    #[arg(required_unless_present_any = ["measure", "dt"], conflicts_with_all = ["measure", "dt"])]
    pub table: Option<PathBuf>,
    /// Predicted (or measured) cycles per iteration of the target loop.
    #[arg(long, value_parser = number::positive)]
    pub cycles: f64,
    /// Measure the data-throughput kernel and the clock now, at each of --threads.
    #[arg(long, conflicts_with = "dt")]
    pub measure: bool,
    /// A data-throughput measurement saved by `model dt --format json -o FILE`.
    #[arg(long)]
    pub dt: Option<PathBuf>,
    /// Thread counts to measure (default: 1, 2, 4... up to the CPUs this process may use).
    #[arg(long, value_delimiter = ',', requires = "measure")]
    pub threads: Vec<usize>,
    /// MiB of each thread's mesh copy for --measure (default: twice the last-level cache).
    #[arg(long, requires = "measure")]
    pub dt_mib: Option<f64>,
    /// Loop iterations of each thread, the same at every thread count (weak-scaled, as
    /// the thesis runs the proxy).
    #[arg(long, conflicts_with = "total_iters", value_parser = number::count)]
    pub iters: Option<f64>,
    /// Loop iterations of the whole problem, split evenly: the busiest thread does
    /// ceil(N / t).
    #[arg(long, value_parser = number::count)]
    pub total_iters: Option<f64>,
    /// Measured runtimes to compare with: CSV threads,seconds.
    #[arg(long, conflicts_with = "program")]
    pub actual: Option<PathBuf>,
    /// Partition of the BSP model: CSV [ranks,]level,rank,n_indep,n_dep[,actual_s];
    /// the clock and the memory benchmark at `ranks` come from the measurement.
    #[arg(long, conflicts_with_all = ["table", "iters", "total_iters"])]
    pub partition: Option<PathBuf>,
    /// Halo-exchange latency alpha of eq. 3.2, microseconds.
    #[arg(long, default_value_t = 0.0, requires = "partition", value_parser = number::non_negative)]
    pub alpha_us: f64,
    /// Halo-exchange bandwidth 1/beta of eq. 3.2, GB/s (default: no transfer cost).
    #[arg(long, requires = "partition", value_parser = number::gbs)]
    pub bandwidth_gbs: Option<f64>,
    /// Bytes per halo element B of eq. 3.2.
    #[arg(long, default_value_t = 0.0, requires = "partition", value_parser = number::count)]
    pub bytes_per_element: f64,
    /// A program to run at each thread count (OMP_NUM_THREADS=t); its wall time is the
    /// measured runtime the prediction is compared with.
    #[arg(last = true, value_name = "PROGRAM")]
    pub program: Vec<String>,
}

/// The options of `model strong`.
pub(super) fn strong_options(a: &StrongArgs) -> Result<StrongOptions> {
    let source = match (&a.table, a.measure, &a.dt) {
        (Some(t), ..) => StrongSource::Table(t.clone()),
        (None, true, _) => StrongSource::Measure {
            threads: a.threads.clone(),
            dt_mib: a.dt_mib,
        },
        (None, false, Some(f)) => StrongSource::Saved(f.clone()),
        (None, false, None) => bail!("give a scaling table, --measure or --dt FILE"),
    };
    Ok(StrongOptions {
        source,
        cycles: a.cycles,
        iters: a.iters,
        total_iters: a.total_iters,
        actual: a.actual.clone(),
        partition: a.partition.clone(),
        alpha_us: a.alpha_us,
        bandwidth_gbs: a.bandwidth_gbs,
        bytes_per_element: a.bytes_per_element,
        program: a.program.clone(),
    })
}
