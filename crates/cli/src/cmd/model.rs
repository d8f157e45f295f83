//! `hpcscope model`: performance models. Kernel extraction from binaries, CPI fitting and the
//! difference model (seed 003), strong scaling with a memory cap, scaling laws, POP
//! efficiencies and the time-decomposition projection (seed 004), theoretical peak.
//!
//! The workflows live in `hpcscope_analysis::model` (the models themselves, their CSV inputs
//! and text views in `hpcscope-models`); this file turns the arguments into their options and
//! prints the result.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use hpcscope_analysis::model::{
    self, ComposeOptions, DecomposeOptions, DtOptions, FitOptions, KernelOptions, PeakOptions,
    PeakSource, PopOptions, PredictOptions, ScalingOptions, SimilarityOptions, StrongOptions,
    StrongSource,
};
use hpcscope_models::ports::Scheduler;
use hpcscope_models::view::Report;

use crate::output::{Format, emit};

/// Arguments of `model`.
#[derive(Args, Debug)]
pub struct ModelArgs {
    /// What to model.
    #[command(subcommand)]
    pub command: ModelCmd,
    /// Output format.
    #[arg(long, value_enum, default_value_t, global = true)]
    pub format: Format,
    /// Write the result to this file instead of standard output.
    #[arg(long, short, global = true)]
    pub output: Option<PathBuf>,
}

/// Placement rule of the port model's bulk scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum SchedArg {
    /// Min-max optimal water-filling.
    #[default]
    Waterfill,
    /// The thesis author's public code.
    GreedyExt,
}

impl From<SchedArg> for Scheduler {
    fn from(s: SchedArg) -> Scheduler {
        match s {
            SchedArg::Waterfill => Scheduler::Waterfill,
            SchedArg::GreedyExt => Scheduler::GreedyExt,
        }
    }
}

/// Subcommands of `model`.
#[derive(Subcommand, Debug)]
pub enum ModelCmd {
    /// Find a function's innermost loops in a binary and count instructions per iteration by class.
    Kernel(KernelArgs),
    /// Fit CPIs per class to measured variants (CSV: name, cycles_per_iter, one column per class).
    Fit(FitArgs),
    /// Predict a target's cycles per iteration from a proxy (difference model, eqs. 5.8-5.11, with v1, v2 and baselines).
    Predict(PredictArgs),
    /// Strong scaling capped by a memory benchmark (eqs. 5.1, 5.2 and section 5.5.1):
    /// from a CSV threads,clock_ghz,iters,memory_s[,proxy_cycles | ,stall_cycles], or
    /// measured: --measure runs the data-throughput kernel and the clock at each thread
    /// count, --dt reads a saved measurement; --partition adds the BSP model (eqs. 3.1,
    /// 3.2), --actual or a program after `--` the error statistics (eq. 5.13).
    Strong(StrongArgs),
    /// Measure the data-throughput kernel of an unstructured-grid edge loop (seed 003's
    /// memory-bound cap) and the clock at each thread count; save it with --format json -o.
    Dt(DtArgs),
    /// Is a mini-app kernel representative of its parent? IPC-ratio invariance and
    /// counter-vector similarity (section 4.1) from counters files (`counters run --save`,
    /// perf stat CSV, PAPI, likwid) or profiles (`mix`, `counters --profile`).
    Similarity(SimilarityArgs),
    /// Fit Amdahl, Gustafson, USL and Extra-P-style laws to runs (CSV p,time_s, or merged
    /// parallel jobs) and choose one.
    Scaling(ScalingArgs),
    /// POP efficiencies of a run (CSV comp_s,runtime_s[,rank,out_mpi_s][,instructions,cycles
    /// or frequency_ghz]), optionally against a reference run (eq. 3.12's factors when both
    /// give instructions and cycles).
    Pop(PopArgs),
    /// The kernel-composition model of eq. 3.3: T = sigma (T_c + T_mem + T_MPI + T_IO) +
    /// T_other, each term given in seconds or from what it is made of.
    Compose(ComposeArgs),
    /// Fit the weights of the time decomposition (eq. 3.2) and project (CSV ratio + one column per resource).
    Decompose(DecomposeArgs),
    /// Theoretical single-core performance: a DAG file (habakkuk-style), or a binary's main loop.
    Peak(PeakArgs),
}

// The arguments of `model kernel`.
#[derive(Args, Debug)]
pub struct KernelArgs {
    /// ELF binary (x86-64, or aarch64 with NEON/SVE).
    pub binary: PathBuf,
    /// Function symbol, e.g. kernel_triad.
    #[arg(long, short = 'f', required_unless_present_any = ["range", "hottest"])]
    pub function: Option<String>,
    /// Address range START:END (hex with 0x, or decimal) instead of a function.
    #[arg(long, conflicts_with = "function")]
    pub range: Option<String>,
    /// Run the binary natively (with the arguments after `--`) under CPU-clock sampling,
    /// as `hpcscope profile` does, and analyse the hottest function's hottest innermost
    /// loop.
    #[arg(long, conflicts_with_all = ["function", "range"])]
    pub hottest: bool,
    /// Sampling frequency of --hottest, Hz.
    #[arg(long, default_value_t = 4999, requires = "hottest")]
    pub hz: u64,
    /// The binary's arguments for --hottest.
    #[arg(last = true, value_name = "ARGS", requires = "hottest")]
    pub args: Vec<String>,
    /// Class table TOML (default: the built-in table of the binary's instruction set).
    #[arg(long)]
    pub classes: Option<PathBuf>,
    /// Show every loop, not only the innermost ones.
    #[arg(long)]
    pub all: bool,
    /// Print the disassembly of each loop (table format).
    #[arg(long)]
    pub listing: bool,
    /// Measured instructions per loop iteration (counted instructions / iterations):
    /// choose the innermost loop whose instruction count is closest, the thesis's
    /// criterion (section 5.3), shown beside the hottest sampled loop with --hottest.
    #[arg(long)]
    pub ins_per_iter: Option<f64>,
    /// Minimum loads per iteration the loop's data needs: loads beyond it are spills,
    /// the LOAD count of the difference model (section 5.3).
    #[arg(long)]
    pub min_loads: Option<f64>,
    /// Minimum stores per iteration: stores beyond it are spills.
    #[arg(long)]
    pub min_stores: Option<f64>,
}

// The arguments of `model fit`.
#[derive(Args, Debug)]
pub struct FitArgs {
    /// Variants CSV.
    pub variants: PathBuf,
    /// Port model: a built-in id (skylake, skylake-avx512, haswell, sandybridge, knl, sapphirerapids, zen5, a64fx) or a TOML file.
    #[arg(long, default_value = "skylake")]
    pub ports: String,
    /// Basin-hopping seed.
    #[arg(long, default_value_t = 65432)]
    pub seed: u64,
    /// Basin-hopping hops.
    #[arg(long, default_value_t = 40)]
    pub hops: usize,
    /// Lower bound of every CPI.
    #[arg(long, default_value_t = 1.0)]
    pub cpi_min: f64,
    /// Upper bound of every CPI.
    #[arg(long, default_value_t = 100.0)]
    pub cpi_max: f64,
    /// Scheduler placement rule.
    #[arg(long, value_enum, default_value_t)]
    pub scheduler: SchedArg,
}

// The arguments of `model predict`.
#[derive(Args, Debug)]
pub struct PredictArgs {
    /// Variants CSV holding the proxy (measured) and the target (cycles may be empty).
    pub variants: PathBuf,
    /// CPIs: JSON written by `model fit --format json`, or `CLASS=CPI,...`.
    #[arg(long)]
    pub cpi: String,
    /// Name of the proxy row.
    #[arg(long)]
    pub proxy: String,
    /// Name of the target row (repeatable; default: every row without cycles).
    #[arg(long)]
    pub target: Vec<String>,
    /// Port model id or TOML file.
    #[arg(long, default_value = "skylake")]
    pub ports: String,
    /// R_c of the constant-R_c baseline.
    #[arg(long)]
    pub rc: Option<f64>,
    /// Clock in GHz, to convert cycles to time (eq. 5.2).
    #[arg(long)]
    pub clock_ghz: Option<f64>,
    /// Loop iterations of the busiest thread (eq. 5.1).
    #[arg(long)]
    pub iters: Option<f64>,
    /// Scheduler placement rule.
    #[arg(long, value_enum, default_value_t)]
    pub scheduler: SchedArg,
    /// Compare with the measured rows instead: every row but the proxy that has
    /// cycles_per_iter (or the --target rows) is predicted, and each model's % error per
    /// variant and mean / SD / max over variants are printed side by side (Tables 5.2
    /// and 5.3).
    #[arg(long)]
    pub validate: bool,
}

// The arguments of `model strong`.
#[derive(Args, Debug)]
pub struct StrongArgs {
    /// Scaling table CSV (instead of --measure or --dt).
    #[arg(required_unless_present_any = ["measure", "dt"], conflicts_with_all = ["measure", "dt"])]
    pub table: Option<PathBuf>,
    /// Predicted (or measured) cycles per iteration of the target loop.
    #[arg(long)]
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
    #[arg(long, conflicts_with = "total_iters")]
    pub iters: Option<f64>,
    /// Loop iterations of the whole problem, split evenly: the busiest thread does
    /// ceil(N / t).
    #[arg(long)]
    pub total_iters: Option<f64>,
    /// Measured runtimes to compare with: CSV threads,seconds.
    #[arg(long, conflicts_with = "program")]
    pub actual: Option<PathBuf>,
    /// Partition of the BSP model: CSV [ranks,]level,rank,n_indep,n_dep[,actual_s];
    /// the clock and the memory benchmark at `ranks` come from the measurement.
    #[arg(long, conflicts_with_all = ["table", "iters", "total_iters"])]
    pub partition: Option<PathBuf>,
    /// Halo-exchange latency alpha of eq. 3.2, microseconds.
    #[arg(long, default_value_t = 0.0, requires = "partition")]
    pub alpha_us: f64,
    /// Halo-exchange bandwidth 1/beta of eq. 3.2, GB/s (default: no transfer cost).
    #[arg(long, requires = "partition")]
    pub bandwidth_gbs: Option<f64>,
    /// Bytes per halo element B of eq. 3.2.
    #[arg(long, default_value_t = 0.0, requires = "partition")]
    pub bytes_per_element: f64,
    /// A program to run at each thread count (OMP_NUM_THREADS=t); its wall time is the
    /// measured runtime the prediction is compared with.
    #[arg(last = true, value_name = "PROGRAM")]
    pub program: Vec<String>,
}

// The arguments of `model dt`.
#[derive(Args, Debug)]
pub struct DtArgs {
    /// Thread counts (default: 1, 2, 4... up to the CPUs this process may use).
    #[arg(long, value_delimiter = ',')]
    pub threads: Vec<usize>,
    /// MiB of each thread's mesh copy (default: twice the last-level cache).
    #[arg(long)]
    pub dt_mib: Option<f64>,
    /// Timed samples per thread count.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
}

// The arguments of `model similarity`.
#[derive(Args, Debug)]
pub struct SimilarityArgs {
    /// The kernel's (mini-app's) counters or profile.
    pub kernel: PathBuf,
    /// The parent code's counters or profile.
    pub parent: PathBuf,
    /// More environments: KERNEL,PARENT file pairs (another machine, ISA, compiler),
    /// for the IPC-ratio invariance.
    #[arg(long, value_name = "KERNEL,PARENT")]
    pub also: Vec<String>,
    /// Region to compare (default: every region summed).
    #[arg(long)]
    pub region: Option<String>,
    /// Relative difference above which a counter is dissimilar.
    #[arg(long, default_value_t = 0.1)]
    pub threshold: f64,
    /// Largest deviation of the IPC ratio from its mean still called invariant, percent.
    #[arg(long, default_value_t = 10.0)]
    pub tolerance: f64,
}

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
    #[arg(long, value_delimiter = ',')]
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

// The arguments of `model peak`.
#[derive(Args, Debug)]
pub struct PeakArgs {
    /// DAG in the assignment language (`x = a + b`), one statement a line.
    #[arg(long, conflicts_with = "binary")]
    pub dag: Option<PathBuf>,
    /// ELF binary whose function's main loop to analyse.
    #[arg(long, requires = "function")]
    pub binary: Option<PathBuf>,
    /// Function symbol.
    #[arg(long, short = 'f')]
    pub function: Option<String>,
    /// Port model id or TOML file (binary mode).
    #[arg(long, default_value = "sapphirerapids")]
    pub ports: String,
    /// CPIs (binary mode): JSON from `model fit` or CLASS=CPI,... (default: 1 for every class).
    #[arg(long)]
    pub cpi: Option<String>,
    /// Clock, GHz.
    #[arg(long, default_value_t = 3.85)]
    pub clock_ghz: f64,
}

/// `report` in `format`.
fn render<T: serde::Serialize>(format: Format, report: &Report<T>) -> Result<String> {
    report.render(format).context("serializing the result")
}

/// Runs `model`.
pub fn run(args: &ModelArgs) -> Result<ExitCode> {
    let f = args.format;
    let text = match &args.command {
        ModelCmd::Kernel(a) => render(f, &model::kernel(&kernel_options(a))?)?,
        ModelCmd::Fit(a) => render(f, &model::fit(&fit_options(a))?)?,
        ModelCmd::Predict(a) => render(f, &model::predict(&predict_options(a))?)?,
        ModelCmd::Strong(a) => render(f, &model::strong(&strong_options(a)?)?)?,
        ModelCmd::Dt(a) => render(f, &model::dt(&dt_options(a))?)?,
        ModelCmd::Similarity(a) => render(f, &model::similarity(&similarity_options(a))?)?,
        ModelCmd::Scaling(a) => {
            let runs = hpcscope_job::scaling::scaling_runs(&a.runs)?;
            render(f, &model::scaling(&runs, &scaling_options(a))?)?
        }
        ModelCmd::Pop(a) => render(f, &model::pop(&pop_options(a))?)?,
        ModelCmd::Compose(a) => render(f, &model::compose(&compose_options(a))?)?,
        ModelCmd::Decompose(a) => render(f, &model::decompose(&decompose_options(a))?)?,
        ModelCmd::Peak(a) => render(f, &model::peak(&peak_options(a)?)?)?,
    };
    emit(&text, args.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

fn kernel_options(a: &KernelArgs) -> KernelOptions {
    KernelOptions {
        binary: a.binary.clone(),
        function: a.function.clone(),
        range: a.range.clone(),
        hottest: a.hottest.then(|| (a.args.clone(), a.hz)),
        classes: a.classes.clone(),
        all: a.all,
        listing: a.listing,
        ins_per_iter: a.ins_per_iter,
        min_loads: a.min_loads,
        min_stores: a.min_stores,
    }
}

fn fit_options(a: &FitArgs) -> FitOptions {
    FitOptions {
        variants: a.variants.clone(),
        ports: a.ports.clone(),
        seed: a.seed,
        hops: a.hops,
        cpi_min: a.cpi_min,
        cpi_max: a.cpi_max,
        scheduler: a.scheduler.into(),
    }
}

fn predict_options(a: &PredictArgs) -> PredictOptions {
    PredictOptions {
        variants: a.variants.clone(),
        cpi: a.cpi.clone(),
        proxy: a.proxy.clone(),
        targets: a.target.clone(),
        ports: a.ports.clone(),
        rc: a.rc,
        clock_ghz: a.clock_ghz,
        iters: a.iters,
        scheduler: a.scheduler.into(),
        validate: a.validate,
    }
}

fn strong_options(a: &StrongArgs) -> Result<StrongOptions> {
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

fn dt_options(a: &DtArgs) -> DtOptions {
    DtOptions {
        threads: a.threads.clone(),
        dt_mib: a.dt_mib,
        reps: a.reps,
    }
}

fn similarity_options(a: &SimilarityArgs) -> SimilarityOptions {
    SimilarityOptions {
        kernel: a.kernel.clone(),
        parent: a.parent.clone(),
        also: a.also.clone(),
        region: a.region.clone(),
        threshold: a.threshold,
        tolerance: a.tolerance,
    }
}

fn scaling_options(a: &ScalingArgs) -> ScalingOptions {
    ScalingOptions {
        laws: a.law.clone(),
        weak: a.weak,
        predict: a.predict.clone(),
    }
}

fn pop_options(a: &PopArgs) -> PopOptions {
    PopOptions {
        run: a.run.clone(),
        reference: a.reference.clone(),
    }
}

fn compose_options(a: &ComposeArgs) -> ComposeOptions {
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

fn decompose_options(a: &DecomposeArgs) -> DecomposeOptions {
    DecomposeOptions {
        runs: a.runs.clone(),
        project: a.project.clone(),
    }
}

fn peak_options(a: &PeakArgs) -> Result<PeakOptions> {
    let source = if let Some(d) = &a.dag {
        PeakSource::Dag(d.clone())
    } else if let (Some(b), Some(f)) = (&a.binary, &a.function) {
        PeakSource::Loop {
            binary: b.clone(),
            function: f.clone(),
            ports: a.ports.clone(),
            cpi: a.cpi.clone(),
        }
    } else {
        bail!("give --dag FILE, or --binary FILE --function NAME");
    };
    Ok(PeakOptions {
        source,
        clock_ghz: a.clock_ghz,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        model: ModelArgs,
    }

    fn parse(args: &[&str]) -> ModelCmd {
        Cli::try_parse_from(std::iter::once("model").chain(args.iter().copied()))
            .unwrap()
            .model
            .command
    }

    #[test]
    fn kernel_arguments_become_options() {
        let ModelCmd::Kernel(a) = parse(&["kernel", "bin", "--hottest", "--hz", "99", "--", "x"])
        else {
            panic!()
        };
        let o = kernel_options(&a);
        assert_eq!(o.binary, PathBuf::from("bin"));
        assert_eq!(o.hottest, Some((vec!["x".to_string()], 99)));
        assert_eq!(o.function, None);
        let ModelCmd::Kernel(a) = parse(&["kernel", "bin", "-f", "k", "--min-loads", "3"]) else {
            panic!()
        };
        let o = kernel_options(&a);
        assert_eq!(o.hottest, None);
        assert_eq!(o.function.as_deref(), Some("k"));
        assert_eq!(o.min_loads, Some(3.0));
    }

    #[test]
    fn fit_and_predict_arguments_become_options() {
        let ModelCmd::Fit(a) = parse(&["fit", "v.csv", "--scheduler", "greedy-ext"]) else {
            panic!()
        };
        let o = fit_options(&a);
        assert_eq!(o.ports, "skylake");
        assert_eq!((o.seed, o.hops), (65432, 40));
        assert_eq!((o.cpi_min, o.cpi_max), (1.0, 100.0));
        assert_eq!(o.scheduler, Scheduler::GreedyExt);
        let ModelCmd::Predict(a) = parse(&[
            "predict",
            "v.csv",
            "--cpi",
            "FP=1",
            "--proxy",
            "p",
            "--target",
            "a",
            "--target",
            "b",
            "--validate",
        ]) else {
            panic!()
        };
        let o = predict_options(&a);
        assert_eq!(o.targets, vec!["a".to_string(), "b".to_string()]);
        assert!(o.validate);
        assert_eq!(o.scheduler, Scheduler::Waterfill);
    }

    #[test]
    fn strong_arguments_choose_the_source() {
        let ModelCmd::Strong(a) = parse(&["strong", "t.csv", "--cycles", "20"]) else {
            panic!()
        };
        let o = strong_options(&a).unwrap();
        assert_eq!(o.source, StrongSource::Table("t.csv".into()));
        assert_eq!(o.cycles, 20.0);
        let ModelCmd::Strong(a) = parse(&[
            "strong",
            "--cycles",
            "20",
            "--measure",
            "--threads",
            "1,2",
            "--partition",
            "p.csv",
            "--bandwidth-gbs",
            "5",
        ]) else {
            panic!()
        };
        let o = strong_options(&a).unwrap();
        assert_eq!(
            o.source,
            StrongSource::Measure {
                threads: vec![1, 2],
                dt_mib: None
            }
        );
        assert_eq!(o.bandwidth_gbs, Some(5.0));
        let ModelCmd::Strong(a) = parse(&["strong", "--cycles", "1", "--dt", "d.json"]) else {
            panic!()
        };
        assert_eq!(
            strong_options(&a).unwrap().source,
            StrongSource::Saved("d.json".into())
        );
        let ModelCmd::Strong(mut a) = parse(&["strong", "--cycles", "1", "--dt", "d.json"]) else {
            panic!()
        };
        a.dt = None;
        assert_eq!(
            strong_options(&a).unwrap_err().to_string(),
            "give a scaling table, --measure or --dt FILE"
        );
    }

    #[test]
    fn dt_similarity_and_scaling_arguments_become_options() {
        let ModelCmd::Dt(a) = parse(&["dt", "--threads", "1,4"]) else {
            panic!()
        };
        assert_eq!(
            dt_options(&a),
            DtOptions {
                threads: vec![1, 4],
                dt_mib: None,
                reps: 5
            }
        );
        let ModelCmd::Similarity(a) = parse(&["similarity", "k", "p", "--also", "a,b"]) else {
            panic!()
        };
        let o = similarity_options(&a);
        assert_eq!(o.also, vec!["a,b".to_string()]);
        assert_eq!((o.threshold, o.tolerance), (0.1, 10.0));
        let ModelCmd::Scaling(a) = parse(&["scaling", "r.csv", "--law", "amdahl,usl", "--weak"])
        else {
            panic!()
        };
        let o = scaling_options(&a);
        assert_eq!(o.laws, vec!["amdahl".to_string(), "usl".to_string()]);
        assert!(o.weak);
    }

    #[test]
    fn pop_compose_and_decompose_arguments_become_options() {
        let ModelCmd::Pop(a) = parse(&["pop", "r.csv", "--reference", "x.csv"]) else {
            panic!()
        };
        assert_eq!(pop_options(&a).reference, Some("x.csv".into()));
        let ModelCmd::Compose(a) = parse(&["compose", "--flops", "1e12", "--gflops", "50"]) else {
            panic!()
        };
        let o = compose_options(&a);
        assert_eq!((o.sigma, o.flops, o.gflops), (1.0, Some(1e12), Some(50.0)));
        assert_eq!(o.min_bytes, 1024.0);
        let ModelCmd::Decompose(a) = parse(&["decompose", "d.csv", "--project", "a=1"]) else {
            panic!()
        };
        assert_eq!(decompose_options(&a).project.as_deref(), Some("a=1"));
    }

    #[test]
    fn peak_arguments_choose_the_dag_or_the_binary() {
        let ModelCmd::Peak(a) = parse(&["peak", "--dag", "d.dag"]) else {
            panic!()
        };
        let o = peak_options(&a).unwrap();
        assert_eq!(o.source, PeakSource::Dag("d.dag".into()));
        assert_eq!(o.clock_ghz, 3.85);
        let ModelCmd::Peak(a) = parse(&["peak", "--binary", "b", "-f", "k"]) else {
            panic!()
        };
        let PeakSource::Loop { ports, cpi, .. } = peak_options(&a).unwrap().source else {
            panic!()
        };
        assert_eq!((ports.as_str(), cpi), ("sapphirerapids", None));
        let ModelCmd::Peak(a) = parse(&["peak"]) else {
            panic!()
        };
        assert_eq!(
            peak_options(&a).unwrap_err().to_string(),
            "give --dag FILE, or --binary FILE --function NAME"
        );
    }
}
