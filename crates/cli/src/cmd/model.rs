//! `hpcscope model`: performance models. Kernel extraction from binaries, CPI fitting and the
//! difference model (seed 003), strong scaling with a memory cap, scaling laws, POP
//! efficiencies and the time-decomposition projection (seed 004), theoretical peak.
//!
//! All model logic lives in `hpcscope-models`; this file parses arguments, reads files and
//! renders results.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use hpcscope_bench::dt::{DtConfig, DtReport};
use hpcscope_models::classes::ClassTable;
use hpcscope_models::difference::compare;
use hpcscope_models::fit::{FitOptions, fit_cpis, measured, rows_from_csv};
use hpcscope_models::inputs;
use hpcscope_models::kernel::{Selector, extract};
use hpcscope_models::laws::{Law, Mode, select};
use hpcscope_models::output::{
    ActualPoint, ComposeOutput, DecomposeOutput, KernelOutput, PeakOutput, PopOutput,
    PredictOutput, PredictTarget, PredictValidation, ScalingOutput, SimilarityOutput, StrongBsp,
    StrongMeasured, StrongOutput,
};
use hpcscope_models::peak::{Dag, DagConfig, loop_peak};
use hpcscope_models::pop::{
    compose, computation_factors, decomposition_from_csv, fit_decomposition, hybrid_efficiency,
    pop_metrics, pop_run_from_csv,
};
use hpcscope_models::ports::{Cpis, PortModel, Scheduler};
use hpcscope_models::similarity::{EventVector, ipc_invariance, vector_similarity};
use hpcscope_models::strong::{
    Halo, Measured, ScalingInput, bsp_run, inputs_from_measured, strong_scaling,
};

use crate::output::{Format, Table, emit, num, render};

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
    Kernel {
        /// ELF binary (x86-64, or aarch64 with NEON/SVE).
        binary: PathBuf,
        /// Function symbol, e.g. kernel_triad.
        #[arg(long, short = 'f', required_unless_present_any = ["range", "hottest"])]
        function: Option<String>,
        /// Address range START:END (hex with 0x, or decimal) instead of a function.
        #[arg(long, conflicts_with = "function")]
        range: Option<String>,
        /// Run the binary natively (with the arguments after `--`) under CPU-clock sampling,
        /// as `hpcscope profile` does, and analyse the hottest function's hottest innermost
        /// loop.
        #[arg(long, conflicts_with_all = ["function", "range"])]
        hottest: bool,
        /// Sampling frequency of --hottest, Hz.
        #[arg(long, default_value_t = 4999, requires = "hottest")]
        hz: u64,
        /// The binary's arguments for --hottest.
        #[arg(last = true, value_name = "ARGS", requires = "hottest")]
        args: Vec<String>,
        /// Class table TOML (default: the built-in table of the binary's instruction set).
        #[arg(long)]
        classes: Option<PathBuf>,
        /// Show every loop, not only the innermost ones.
        #[arg(long)]
        all: bool,
        /// Print the disassembly of each loop (table format).
        #[arg(long)]
        listing: bool,
        /// Measured instructions per loop iteration (counted instructions / iterations):
        /// choose the innermost loop whose instruction count is closest, the thesis's
        /// criterion (section 5.3), shown beside the hottest sampled loop with --hottest.
        #[arg(long)]
        ins_per_iter: Option<f64>,
        /// Minimum loads per iteration the loop's data needs: loads beyond it are spills,
        /// the LOAD count of the difference model (section 5.3).
        #[arg(long)]
        min_loads: Option<f64>,
        /// Minimum stores per iteration: stores beyond it are spills.
        #[arg(long)]
        min_stores: Option<f64>,
    },
    /// Fit CPIs per class to measured variants (CSV: name, cycles_per_iter, one column per class).
    Fit {
        /// Variants CSV.
        variants: PathBuf,
        /// Port model: a built-in id (skylake, skylake-avx512, haswell, sandybridge, knl, sapphirerapids, zen5, a64fx) or a TOML file.
        #[arg(long, default_value = "skylake")]
        ports: String,
        /// Basin-hopping seed.
        #[arg(long, default_value_t = 65432)]
        seed: u64,
        /// Basin-hopping hops.
        #[arg(long, default_value_t = 40)]
        hops: usize,
        /// Lower bound of every CPI.
        #[arg(long, default_value_t = 1.0)]
        cpi_min: f64,
        /// Upper bound of every CPI.
        #[arg(long, default_value_t = 100.0)]
        cpi_max: f64,
        /// Scheduler placement rule.
        #[arg(long, value_enum, default_value_t)]
        scheduler: SchedArg,
    },
    /// Predict a target's cycles per iteration from a proxy (difference model, eqs. 5.8-5.11, with v1, v2 and baselines).
    Predict {
        /// Variants CSV holding the proxy (measured) and the target (cycles may be empty).
        variants: PathBuf,
        /// CPIs: JSON written by `model fit --format json`, or `CLASS=CPI,...`.
        #[arg(long)]
        cpi: String,
        /// Name of the proxy row.
        #[arg(long)]
        proxy: String,
        /// Name of the target row (repeatable; default: every row without cycles).
        #[arg(long)]
        target: Vec<String>,
        /// Port model id or TOML file.
        #[arg(long, default_value = "skylake")]
        ports: String,
        /// R_c of the constant-R_c baseline.
        #[arg(long)]
        rc: Option<f64>,
        /// Clock in GHz, to convert cycles to time (eq. 5.2).
        #[arg(long)]
        clock_ghz: Option<f64>,
        /// Loop iterations of the busiest thread (eq. 5.1).
        #[arg(long)]
        iters: Option<f64>,
        /// Scheduler placement rule.
        #[arg(long, value_enum, default_value_t)]
        scheduler: SchedArg,
        /// Compare with the measured rows instead: every row but the proxy that has
        /// cycles_per_iter (or the --target rows) is predicted, and each model's % error per
        /// variant and mean / SD / max over variants are printed side by side (Tables 5.2
        /// and 5.3).
        #[arg(long)]
        validate: bool,
    },
    /// Strong scaling capped by a memory benchmark (eqs. 5.1, 5.2 and section 5.5.1):
    /// from a CSV threads,clock_ghz,iters,memory_s[,proxy_cycles | ,stall_cycles], or
    /// measured: --measure runs the data-throughput kernel and the clock at each thread
    /// count, --dt reads a saved measurement; --partition adds the BSP model (eqs. 3.1,
    /// 3.2), --actual or a program after `--` the error statistics (eq. 5.13).
    Strong {
        /// Scaling table CSV (instead of --measure or --dt).
        #[arg(required_unless_present_any = ["measure", "dt"], conflicts_with_all = ["measure", "dt"])]
        table: Option<PathBuf>,
        /// Predicted (or measured) cycles per iteration of the target loop.
        #[arg(long)]
        cycles: f64,
        /// Measure the data-throughput kernel and the clock now, at each of --threads.
        #[arg(long, conflicts_with = "dt")]
        measure: bool,
        /// A data-throughput measurement saved by `model dt --format json -o FILE`.
        #[arg(long)]
        dt: Option<PathBuf>,
        /// Thread counts to measure (default: 1, 2, 4... up to the CPUs this process may use).
        #[arg(long, value_delimiter = ',', requires = "measure")]
        threads: Vec<usize>,
        /// MiB of each thread's mesh copy for --measure (default: twice the last-level cache).
        #[arg(long, requires = "measure")]
        dt_mib: Option<f64>,
        /// Loop iterations of each thread, the same at every thread count (weak-scaled, as
        /// the thesis runs the proxy).
        #[arg(long, conflicts_with = "total_iters")]
        iters: Option<f64>,
        /// Loop iterations of the whole problem, split evenly: the busiest thread does
        /// ceil(N / t).
        #[arg(long)]
        total_iters: Option<f64>,
        /// Measured runtimes to compare with: CSV threads,seconds.
        #[arg(long, conflicts_with = "program")]
        actual: Option<PathBuf>,
        /// Partition of the BSP model: CSV [ranks,]level,rank,n_indep,n_dep[,actual_s];
        /// the clock and the memory benchmark at `ranks` come from the measurement.
        #[arg(long, conflicts_with_all = ["table", "iters", "total_iters"])]
        partition: Option<PathBuf>,
        /// Halo-exchange latency alpha of eq. 3.2, microseconds.
        #[arg(long, default_value_t = 0.0, requires = "partition")]
        alpha_us: f64,
        /// Halo-exchange bandwidth 1/beta of eq. 3.2, GB/s (default: no transfer cost).
        #[arg(long, requires = "partition")]
        bandwidth_gbs: Option<f64>,
        /// Bytes per halo element B of eq. 3.2.
        #[arg(long, default_value_t = 0.0, requires = "partition")]
        bytes_per_element: f64,
        /// A program to run at each thread count (OMP_NUM_THREADS=t); its wall time is the
        /// measured runtime the prediction is compared with.
        #[arg(last = true, value_name = "PROGRAM")]
        program: Vec<String>,
    },
    /// Measure the data-throughput kernel of an unstructured-grid edge loop (seed 003's
    /// memory-bound cap) and the clock at each thread count; save it with --format json -o.
    Dt {
        /// Thread counts (default: 1, 2, 4... up to the CPUs this process may use).
        #[arg(long, value_delimiter = ',')]
        threads: Vec<usize>,
        /// MiB of each thread's mesh copy (default: twice the last-level cache).
        #[arg(long)]
        dt_mib: Option<f64>,
        /// Timed samples per thread count.
        #[arg(long, default_value_t = 5)]
        reps: usize,
    },
    /// Is a mini-app kernel representative of its parent? IPC-ratio invariance and
    /// counter-vector similarity (section 4.1) from counters files (`counters run --save`,
    /// perf stat CSV, PAPI, likwid) or profiles (`mix`, `counters --profile`).
    Similarity {
        /// The kernel's (mini-app's) counters or profile.
        kernel: PathBuf,
        /// The parent code's counters or profile.
        parent: PathBuf,
        /// More environments: KERNEL,PARENT file pairs (another machine, ISA, compiler),
        /// for the IPC-ratio invariance.
        #[arg(long, value_name = "KERNEL,PARENT")]
        also: Vec<String>,
        /// Region to compare (default: every region summed).
        #[arg(long)]
        region: Option<String>,
        /// Relative difference above which a counter is dissimilar.
        #[arg(long, default_value_t = 0.1)]
        threshold: f64,
        /// Largest deviation of the IPC ratio from its mean still called invariant, percent.
        #[arg(long, default_value_t = 10.0)]
        tolerance: f64,
    },
    /// Fit Amdahl, Gustafson, USL and Extra-P-style laws to runs (CSV p,time_s, or merged
    /// parallel jobs) and choose one.
    Scaling {
        /// Runs: one CSV (p or threads or ranks, and time_s), or merged jobs at several rank
        /// counts: JSON written by `hpcscope merge --format json`, or run directories.
        #[arg(required = true, num_args = 1..)]
        runs: Vec<PathBuf>,
        /// Laws to offer (default: all).
        #[arg(long, value_delimiter = ',')]
        law: Vec<String>,
        /// Work grows with p (weak scaling).
        #[arg(long)]
        weak: bool,
        /// Process counts to predict.
        #[arg(long, value_delimiter = ',')]
        predict: Vec<f64>,
    },
    /// POP efficiencies of a run (CSV comp_s,runtime_s[,rank,out_mpi_s][,instructions,cycles
    /// or frequency_ghz]), optionally against a reference run (eq. 3.12's factors when both
    /// give instructions and cycles).
    Pop {
        /// Run CSV.
        run: PathBuf,
        /// Reference run CSV (for computation scaling and global efficiency).
        #[arg(long)]
        reference: Option<PathBuf>,
    },
    /// The kernel-composition model of eq. 3.3: T = sigma (T_c + T_mem + T_MPI + T_IO) +
    /// T_other, each term given in seconds or from what it is made of.
    Compose {
        /// Kernel invocations (sigma: time steps, SCF iterations).
        #[arg(long, default_value_t = 1.0)]
        sigma: f64,
        /// Compute time of one invocation, s.
        #[arg(long, conflicts_with_all = ["flops", "gflops"])]
        compute_s: Option<f64>,
        /// FLOPs of one invocation (with --gflops: T_c = flops / rate).
        #[arg(long, requires = "gflops")]
        flops: Option<f64>,
        /// Sustained compute rate, GFLOP/s (a kernel benchmark's, or `model peak`).
        #[arg(long, requires = "flops")]
        gflops: Option<f64>,
        /// Memory time of one invocation, s.
        #[arg(long, conflicts_with_all = ["bytes", "bandwidth_gbs"])]
        memory_s: Option<f64>,
        /// Bytes one invocation moves to and from memory (with --bandwidth-gbs).
        #[arg(long, requires = "bandwidth_gbs")]
        bytes: Option<f64>,
        /// Memory bandwidth, GB/s (STREAM triad, `hpcscope bench`).
        #[arg(long, requires = "bytes")]
        bandwidth_gbs: Option<f64>,
        /// MPI time of one invocation, s.
        #[arg(long, conflicts_with_all = ["messages", "message_bytes", "mpi_table"])]
        mpi_s: Option<f64>,
        /// Messages one invocation sends (with --message-bytes and --mpi-table: Hockney's
        /// t0 + n / bandwidth for each).
        #[arg(long, requires_all = ["message_bytes", "mpi_table"])]
        messages: Option<f64>,
        /// Bytes of each message.
        #[arg(long, requires = "messages")]
        message_bytes: Option<f64>,
        /// Point-to-point times to fit Hockney's model to: CSV with `bytes` and `t_avg_us`
        /// (`hpcscope bench mpi --format csv`, or an IMB table).
        #[arg(long, value_name = "CSV", requires = "messages")]
        mpi_table: Option<PathBuf>,
        /// Benchmark rows of --mpi-table to fit (its `benchmark` column), e.g. sendrecv.
        #[arg(long, requires = "mpi_table")]
        benchmark: Option<String>,
        /// Smallest message of --mpi-table in the fit, bytes (small messages follow the
        /// latency, not the bandwidth).
        #[arg(long, default_value_t = 1024.0)]
        min_bytes: f64,
        /// I/O time of one invocation, s.
        #[arg(long, default_value_t = 0.0)]
        io_s: f64,
        /// Time of the rest of the program, s.
        #[arg(long, default_value_t = 0.0)]
        other_s: f64,
    },
    /// Fit the weights of the time decomposition (eq. 3.2) and project (CSV ratio + one column per resource).
    Decompose {
        /// Runs CSV: `ratio` (T/T_ref) and ref/run ratios per resource.
        runs: PathBuf,
        /// Project a configuration: NAME=RATIO,...
        #[arg(long)]
        project: Option<String>,
    },
    /// Theoretical single-core performance: a DAG file (habakkuk-style), or a binary's main loop.
    Peak {
        /// DAG in the assignment language (`x = a + b`), one statement a line.
        #[arg(long, conflicts_with = "binary")]
        dag: Option<PathBuf>,
        /// ELF binary whose function's main loop to analyse.
        #[arg(long, requires = "function")]
        binary: Option<PathBuf>,
        /// Function symbol.
        #[arg(long, short = 'f')]
        function: Option<String>,
        /// Port model id or TOML file (binary mode).
        #[arg(long, default_value = "sapphirerapids")]
        ports: String,
        /// CPIs (binary mode): JSON from `model fit` or CLASS=CPI,... (default: 1 for every class).
        #[arg(long)]
        cpi: Option<String>,
        /// Clock, GHz.
        #[arg(long, default_value_t = 3.85)]
        clock_ghz: f64,
    },
}

/// `value` with the keys of every object sorted, as these outputs have always been printed
/// (the typed shapes of `hpcscope_models::output` are what `hpcscope schema model-*`
/// describes).
fn sorted<T: serde::Serialize>(value: &T) -> Result<serde_json::Value> {
    serde_json::to_value(value).context("serializing the result")
}

/// Runs `model`.
pub fn run(args: &ModelArgs) -> Result<ExitCode> {
    let (text, _) = match &args.command {
        ModelCmd::Kernel {
            binary,
            function,
            range,
            classes,
            all,
            listing,
            hottest,
            hz,
            args: bin_args,
            ins_per_iter,
            min_loads,
            min_stores,
        } => kernel(
            args.format,
            binary,
            function.as_deref(),
            range.as_deref(),
            (*hottest).then_some((bin_args.as_slice(), *hz)),
            classes.as_deref(),
            *all,
            *listing,
            Pick {
                ins_per_iter: *ins_per_iter,
                min_loads: *min_loads,
                min_stores: *min_stores,
            },
        )?,
        ModelCmd::Fit {
            variants,
            ports,
            seed,
            hops,
            cpi_min,
            cpi_max,
            scheduler,
        } => {
            let model = port_model(ports)?;
            let rows = rows_from_csv(&read(variants)?, &variants.display().to_string(), &model)?;
            let opts = FitOptions {
                seed: *seed,
                hops: *hops,
                step: 4.0,
                cpi_min: *cpi_min,
                cpi_max: *cpi_max,
                scheduler: (*scheduler).into(),
            };
            let fit = fit_cpis(&model, &measured(&rows), &opts)?;
            let mut t = Table::new(&["class", "cpi", "status"]);
            for (k, v) in &fit.cpi {
                let status = if fit.non_contributing.contains(k) {
                    "binds no port: not identifiable, set to the lower bound"
                } else if fit.absent.contains(k) {
                    "absent from every variant"
                } else {
                    "fitted"
                };
                t.row(vec![k.clone(), num(*v, 4), status.into()]);
            }
            let pre = vec![format!(
                "CPIs of port model '{}' from {} variants (seed {}, {} hops): RMSE {} cycles, R2 {}, mean |error| {} %, max {} %",
                fit.port_model,
                fit.residuals.len(),
                fit.options.seed,
                fit.options.hops,
                num(fit.rmse, 3),
                num(fit.r2, 4),
                num(fit.mean_abs_pct, 3),
                num(fit.max_abs_pct, 3)
            )];
            let post: Vec<String> = fit
                .residuals
                .iter()
                .map(|r| {
                    format!(
                        "  {}: measured {} modelled {} ({} %, port {})",
                        r.name,
                        num(r.measured, 4),
                        num(r.modelled, 4),
                        num(r.error_pct, 3),
                        r.binding_port
                    )
                })
                .collect();
            (render(args.format, &fit, &pre, &t, &post)?, ())
        }
        ModelCmd::Predict {
            variants,
            cpi,
            proxy,
            target,
            ports,
            rc,
            clock_ghz,
            iters,
            scheduler,
            validate,
        } => {
            let model = port_model(ports)?;
            let rows = rows_from_csv(&read(variants)?, &variants.display().to_string(), &model)?;
            let cpi = parse_cpi(cpi)?;
            let find = |n: &str| {
                rows.iter().find(|r| r.name == n).with_context(|| {
                    format!(
                        "no row named '{n}' in '{}' (rows: {})",
                        variants.display(),
                        rows.iter()
                            .map(|r| r.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
            };
            let p = find(proxy)?;
            let c_proxy = p.cycles_per_iter.with_context(|| {
                format!("proxy '{proxy}' has no measured cycles_per_iter in '{}'; the difference model needs it", variants.display())
            })?;
            if *validate {
                let names: Vec<&str> = if target.is_empty() {
                    rows.iter()
                        .filter(|r| r.name != *proxy && r.cycles_per_iter.is_some())
                        .map(|r| r.name.as_str())
                        .collect()
                } else {
                    target.iter().map(String::as_str).collect()
                };
                let mut triples = Vec::new();
                let mut skipped = Vec::new();
                for name in names {
                    let tr = find(name)?;
                    let Some(m) = tr.cycles_per_iter else {
                        skipped.push(name.to_string());
                        continue;
                    };
                    let c = compare(
                        &model,
                        &p.counts,
                        &tr.counts,
                        &cpi,
                        c_proxy,
                        *rc,
                        (*scheduler).into(),
                    )?;
                    triples.push((name.to_string(), c, m));
                }
                if triples.is_empty() {
                    bail!(
                        "--validate: no row of '{}' besides the proxy has measured cycles_per_iter to compare with",
                        variants.display()
                    );
                }
                let v = hpcscope_models::difference::validate(&triples)?;
                let mut heads = vec!["variant", "measured"];
                let labels: Vec<&str> = v.models.iter().map(|m| model_label(&m.model)).collect();
                heads.extend(labels.iter());
                let mut t = Table::new(&heads);
                t.group("signed % error per variant (negative: under-prediction)");
                for (i, name) in v.variants.iter().enumerate() {
                    let mut row = vec![name.clone(), num(v.measured[i], 5)];
                    row.extend(v.models.iter().map(|m| num(m.errors_pct[i], 3)));
                    t.row(row);
                }
                t.group(format!(
                    "|error| % over {} variants (Table 5.2)",
                    v.variants.len()
                ));
                for (stat, f) in [
                    (
                        "mean",
                        (|s: &hpcscope_models::strong::ErrorStats| s.mean_pct) as fn(&_) -> f64,
                    ),
                    ("SD", |s| s.sd_pct),
                    ("max", |s| s.max_pct),
                ] {
                    let mut row = vec![stat.to_string(), String::new()];
                    row.extend(v.models.iter().map(|m| num(f(&m.stats), 3)));
                    t.row(row);
                }
                let mut pre = vec![format!(
                    "proxy '{proxy}': measured {} cycles per iteration; port model '{}'",
                    num(c_proxy, 5),
                    model.id
                )];
                if rc.is_none() {
                    pre.push("constant R_c baseline: give --rc to include it".into());
                }
                let post: Vec<String> = skipped
                    .iter()
                    .map(|n| format!("'{n}' has no measured cycles_per_iter: not compared"))
                    .collect();
                let json = PredictOutput::Validation(PredictValidation {
                    not_compared: skipped,
                    proxy: proxy.clone(),
                    validation: v,
                });
                let text = render(args.format, &sorted(&json)?, &pre, &t, &post)?;
                emit(&text, args.output.as_deref())?;
                return Ok(ExitCode::SUCCESS);
            }
            let targets: Vec<&str> = if target.is_empty() {
                rows.iter()
                    .filter(|r| r.name != *proxy && r.cycles_per_iter.is_none())
                    .map(|r| r.name.as_str())
                    .collect()
            } else {
                target.iter().map(String::as_str).collect()
            };
            if targets.is_empty() {
                bail!(
                    "no target: pass --target NAME, or leave cycles_per_iter empty on the rows to predict"
                );
            }
            let mut out = Vec::new();
            let mut t = Table::new(&[
                "target",
                "final (eq. 5.11)",
                "dC (eq. 5.10)",
                "v1",
                "v2",
                "equal IPC",
                "const R_c",
                "measured",
                "time_s",
            ]);
            for name in targets {
                let tr = find(name)?;
                let c = compare(
                    &model,
                    &p.counts,
                    &tr.counts,
                    &cpi,
                    c_proxy,
                    *rc,
                    (*scheduler).into(),
                )?;
                let time = match (clock_ghz, iters) {
                    (Some(g), Some(i)) => Some(hpcscope_models::strong::runtime_s(
                        c.final_model.c_target,
                        &[*i],
                        g * 1e9,
                    )?),
                    _ => None,
                };
                t.row(vec![
                    name.to_string(),
                    num(c.final_model.c_target, 5),
                    num(c.final_model.delta_c, 5),
                    num(c.v1, 5),
                    num(c.v2, 5),
                    num(c.equal_ipc, 5),
                    c.constant_rc
                        .map(|v| num(v, 5))
                        .unwrap_or_else(|| "-".into()),
                    tr.cycles_per_iter
                        .map(|v| num(v, 5))
                        .unwrap_or_else(|| "-".into()),
                    time.map(|v| num(v, 5)).unwrap_or_else(|| "-".into()),
                ]);
                out.push(PredictTarget {
                    comparison: c,
                    measured_cycles_per_iter: tr.cycles_per_iter,
                    target: name.to_string(),
                    time_s: time,
                });
            }
            let pre = vec![format!(
                "proxy '{proxy}': measured {} cycles per iteration; port model '{}'",
                num(c_proxy, 5),
                model.id
            )];
            let out = PredictOutput::Targets(out);
            (render(args.format, &sorted(&out)?, &pre, &t, &[])?, ())
        }
        ModelCmd::Strong {
            table,
            cycles,
            measure,
            dt,
            threads,
            dt_mib,
            iters,
            total_iters,
            actual,
            partition,
            alpha_us,
            bandwidth_gbs,
            bytes_per_element,
            program,
        } => {
            let measured = match (table, measure, dt) {
                (Some(_), ..) => None,
                (None, true, _) => Some(measure_dt(threads, *dt_mib, 5)?),
                (None, false, Some(f)) => {
                    Some(DtReport::from_json(&read(f)?, &f.display().to_string())?)
                }
                (None, false, None) => bail!("give a scaling table, --measure or --dt FILE"),
            };
            let points: Vec<Measured> = measured
                .as_ref()
                .map(|r| {
                    r.points
                        .iter()
                        .map(|p| Measured {
                            threads: p.threads as u32,
                            clock_hz: p.clock_ghz * 1e9,
                            memory_s_per_iter: p.seconds_per_iter.median,
                        })
                        .collect()
                })
                .unwrap_or_default();
            let mut pre = Vec::new();
            if let Some(r) = &measured {
                pre.push(format!(
                    "data-throughput kernel: {} edges per thread ({} MiB per thread copy) on {}; clock from {}",
                    r.edges_per_thread,
                    num(r.bytes_per_thread as f64 / 1048576.0, 4),
                    r.cpu_model,
                    r.points
                        .iter()
                        .map(|p| p.clock_source.as_str())
                        .collect::<std::collections::BTreeSet<_>>()
                        .into_iter()
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if let Some(part) = partition {
                let text = bsp(
                    args.format,
                    *cycles,
                    &points,
                    part,
                    Halo {
                        alpha_s: alpha_us * 1e-6,
                        beta_s_per_byte: match bandwidth_gbs {
                            Some(b) if *b > 0.0 && b.is_finite() => 1.0 / (b * 1e9),
                            Some(b) => bail!("--bandwidth-gbs must be positive, got {b}"),
                            None => 0.0,
                        },
                        bytes_per_element: *bytes_per_element,
                    },
                    pre,
                    &measured,
                )?;
                emit(&text, args.output.as_deref())?;
                return Ok(ExitCode::SUCCESS);
            }
            let inputs = match table {
                Some(table) => scaling_table(table)?,
                None => {
                    let per_thread = |t: u32| match (iters, total_iters) {
                        (Some(n), _) => *n,
                        (None, Some(n)) => (n / t as f64).ceil(),
                        (None, None) => f64::NAN,
                    };
                    if iters.is_none() && total_iters.is_none() {
                        bail!(
                            "give the loop's iterations: --iters (per thread) or --total-iters (split over threads)"
                        );
                    }
                    inputs_from_measured(&points, per_thread)?
                }
            };
            let s = strong_scaling(*cycles, &inputs)?;
            // Measured runtimes to compare with: a CSV, or the program run at each count.
            let actual: Option<Vec<(u32, f64)>> = match (actual, program.is_empty()) {
                (Some(a), _) => Some(actual_table(a)?),
                (None, false) => Some(run_program(
                    program,
                    &s.points.iter().map(|p| p.threads).collect::<Vec<_>>(),
                )?),
                (None, true) => None,
            };
            let mut heads = vec![
                "threads",
                "clock_ghz",
                "stall_cycles",
                "compute_s",
                "memory_s",
                "predicted_s",
                "bound",
            ];
            if actual.is_some() {
                heads.extend(["actual_s", "error_pct"]);
            }
            let mut t = Table::new(&heads);
            let mut errors = Vec::new();
            let mut unmatched = Vec::new();
            for p in &s.points {
                let mut row = vec![
                    p.threads.to_string(),
                    num(p.clock_hz / 1e9, 4),
                    num(p.stall_cycles, 4),
                    num(p.compute_s, 5),
                    num(p.memory_s, 5),
                    num(p.predicted_s, 5),
                    if p.memory_bound { "memory" } else { "compute" }.into(),
                ];
                if let Some(a) = &actual {
                    match a.iter().find(|x| x.0 == p.threads) {
                        Some(&(_, v)) => {
                            let e = hpcscope_models::strong::pct_error(p.predicted_s, v);
                            errors.push((p.threads, v, e));
                            row.extend([num(v, 5), num(e, 3)]);
                        }
                        None => {
                            unmatched.push(p.threads);
                            row.extend(["-".into(), "-".into()]);
                        }
                    }
                }
                t.row(row);
            }
            let mut post = vec![match s.memory_bound_from {
                Some(t) => format!("memory-bound from {t} threads (t_b)"),
                None => "compute-bound at every thread count".into(),
            }];
            let stats = if errors.is_empty() {
                None
            } else {
                let st = hpcscope_models::strong::stats_of(
                    &errors.iter().map(|e| e.2).collect::<Vec<_>>(),
                );
                post.push(format!(
                    "|error| over {} thread counts (Table 5.3): mean {} %, SD {} %, max {} %; mean signed {} %",
                    st.n,
                    num(st.mean_pct, 3),
                    num(st.sd_pct, 3),
                    num(st.max_pct, 3),
                    num(st.mean_signed_pct, 3)
                ));
                Some(st)
            };
            if !unmatched.is_empty() {
                post.push(format!(
                    "no measured runtime at {} thread(s): not in the error statistics",
                    unmatched
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            let json = if measured.is_some() || actual.is_some() {
                StrongOutput::Measured(StrongMeasured {
                    actual: errors
                        .iter()
                        .map(|e| ActualPoint {
                            actual_s: e.1,
                            error_pct: e.2,
                            threads: e.0,
                        })
                        .collect(),
                    error_stats: stats,
                    measurement: measured,
                    prediction: s,
                })
            } else {
                StrongOutput::Prediction(s)
            };
            (render(args.format, &sorted(&json)?, &pre, &t, &post)?, ())
        }
        ModelCmd::Dt {
            threads,
            dt_mib,
            reps,
        } => {
            let r = measure_dt(threads, *dt_mib, *reps)?;
            let mut t = Table::new(&[
                "threads",
                "ns_per_iter",
                "spread_pct",
                "gbs",
                "gbs_own",
                "clock_ghz",
                "clock_source",
            ]);
            for p in &r.points {
                t.row(vec![
                    p.threads.to_string(),
                    num(p.seconds_per_iter.median * 1e9, 4),
                    num(p.seconds_per_iter.spread() * 100.0, 3),
                    num(p.gbs, 4),
                    num(p.gbs_own, 4),
                    num(p.clock_ghz, 4),
                    p.clock_source.clone(),
                ]);
            }
            let pre = vec![format!(
                "data-throughput kernel on {}: {} edges per thread, {} MiB per thread copy; per edge {} FLOPs, {} loads, {} stores, {} B of its own, {} B from memory",
                r.cpu_model,
                r.edges_per_thread,
                num(r.bytes_per_thread as f64 / 1048576.0, 4),
                r.per_edge.flops,
                r.per_edge.loads,
                r.per_edge.stores,
                r.per_edge.bytes,
                num(r.per_edge.memory_bytes, 4)
            )];
            let post = vec!["ns_per_iter: nanoseconds per edge per thread, all threads running (median of the samples); gbs: compulsory memory traffic (comparable with STREAM), gbs_own: the kernel's own loads and stores; save with --format json -o FILE for `model strong --dt FILE`".to_string()];
            (render(args.format, &r, &pre, &t, &post)?, ())
        }
        ModelCmd::Similarity {
            kernel,
            parent,
            also,
            region,
            threshold,
            tolerance,
        } => {
            let a = event_vector(kernel, region.as_deref())?;
            let b = event_vector(parent, region.as_deref())?;
            let sim = vector_similarity(&a, &b, *threshold)?;
            let mut envs = vec![(a.clone(), b.clone())];
            for pair in also {
                let (k, p) = pair.split_once(',').with_context(|| {
                    format!("--also '{pair}' is not KERNEL,PARENT (two files separated by a comma)")
                })?;
                envs.push((
                    event_vector(Path::new(k.trim()), region.as_deref())?,
                    event_vector(Path::new(p.trim()), region.as_deref())?,
                ));
            }
            let have_ipc = envs.iter().all(|(k, p)| k.ipc().is_ok() && p.ipc().is_ok());
            let ipc = if have_ipc {
                let triples: Vec<_> = envs
                    .iter()
                    .map(|(k, p)| (format!("{} / {}", k.name, p.name), k, p))
                    .collect();
                Some(ipc_invariance(&triples, *tolerance)?)
            } else {
                if !also.is_empty() {
                    // Asked for invariance: say exactly what is missing.
                    for (k, p) in &envs {
                        k.ipc()?;
                        p.ipc()?;
                    }
                }
                None
            };
            let mut t = Table::new(&["event", "kernel", "parent", "rel_diff", "similar"]);
            for e in &sim.events {
                t.row(vec![
                    e.event.clone(),
                    num(e.a, 5),
                    num(e.b, 5),
                    num(e.relative_difference, 3),
                    if e.dissimilar { "no" } else { "yes" }.into(),
                ]);
            }
            let pre = vec![format!(
                "counter-vector similarity of '{}' and '{}' ({}): cosine {} over {} events; {} differ by more than {}",
                a.name,
                b.name,
                sim.basis.label(),
                num(sim.cosine, 4),
                sim.events.len(),
                sim.dissimilar,
                sim.threshold
            )];
            let mut post = Vec::new();
            for (what, v) in [
                ("kernel only", &sim.only_a),
                ("parent only", &sim.only_b),
                ("zero in both", &sim.zero_in_both),
            ] {
                if !v.is_empty() {
                    post.push(format!("not compared, {what}: {}", v.join(", ")));
                }
            }
            match &ipc {
                Some(i) => {
                    for p in &i.pairs {
                        post.push(format!(
                            "IPC {}: kernel {}, parent {}, ratio parent/kernel {} ({} % from the mean)",
                            p.environment,
                            num(p.kernel_ipc, 4),
                            num(p.parent_ipc, 4),
                            num(p.ratio, 4),
                            num(p.deviation_pct, 3)
                        ));
                    }
                    post.push(match i.invariant {
                        Some(true) => format!("IPC ratio invariant: every environment within {} % of the mean {}", i.tolerance_pct, num(i.mean_ratio, 4)),
                        Some(false) => format!("IPC ratio NOT invariant: {} % from the mean {} (tolerance {} %): the kernel's runtime cannot stand for the parent's without a model", num(i.max_deviation_pct, 3), num(i.mean_ratio, 4), i.tolerance_pct),
                        None => "IPC-ratio invariance needs two environments at least: add --also KERNEL,PARENT".into(),
                    });
                }
                None => post.push(
                    "IPC ratio: not available, the inputs do not count both instructions and cycles".into(),
                ),
            }
            let json = SimilarityOutput {
                ipc,
                kernel: a,
                parent: b,
                similarity: sim,
            };
            (render(args.format, &sorted(&json)?, &pre, &t, &post)?, ())
        }
        ModelCmd::Scaling {
            runs,
            law,
            weak,
            predict,
        } => {
            let r = hpcscope_job::scaling::scaling_runs(runs)?;
            let laws: Vec<Law> = if law.is_empty() {
                Law::ALL.to_vec()
            } else {
                law.iter()
                    .map(|l| Law::parse(l))
                    .collect::<std::result::Result<_, _>>()?
            };
            let mode = if *weak { Mode::Weak } else { Mode::Strong };
            let sel = select(&r, &laws, mode)?;
            let mut t = Table::new(&[
                "law",
                "chosen",
                "cv_rms_rel_error",
                "rms_log_error",
                "formula",
            ]);
            for f in &sel.fits {
                t.row(vec![
                    format!("{:?}", f.law).to_lowercase(),
                    if f.law == sel.chosen {
                        "*".into()
                    } else {
                        String::new()
                    },
                    num(f.cv_rms_rel_error, 4),
                    num(f.rms_log_error, 4),
                    f.formula.clone(),
                ]);
            }
            let preds: Vec<_> = predict.iter().map(|&p| sel.best().predict(p)).collect();
            let post: Vec<String> = preds
                .iter()
                .map(|p| {
                    format!(
                        "p = {}: {} s (band {} to {} s), speedup {}",
                        p.p,
                        num(p.time_s, 5),
                        num(p.low_s, 5),
                        num(p.high_s, 5),
                        num(p.speedup, 4)
                    )
                })
                .collect();
            let json = ScalingOutput {
                predictions: preds,
                selection: sel,
            };
            (
                render(
                    args.format,
                    &sorted(&json)?,
                    &[format!("{} runs, {:?} scaling", r.len(), mode)],
                    &t,
                    &post,
                )?,
                (),
            )
        }
        ModelCmd::Pop { run, reference } => {
            let r = pop_run_from_csv(&read(run)?, &run.display().to_string())?;
            let refr = match reference {
                Some(p) => Some(pop_run_from_csv(&read(p)?, &p.display().to_string())?),
                None => None,
            };
            // Eq. 3.12's factors when the run and the reference both count instructions and
            // cycles.
            let factors = match (&r.counters, refr.as_ref().map(|x| &x.counters)) {
                (Some(a), Some(Some(b))) => Some(computation_factors(a, b)?),
                _ => None,
            };
            let mut post = Vec::new();
            match (&r.counters, &refr) {
                (Some(_), None) => post.push(
                    "eq. 3.12's factors need a reference run with instructions and cycles too (--reference)".to_string(),
                ),
                (Some(_), Some(x)) if x.counters.is_none() => post.push(format!(
                    "eq. 3.12's factors: the reference {} gives no instructions and cycles; computation scaling is eq. 3.10's",
                    reference.as_ref().map_or(String::new(), |p| p.display().to_string())
                )),
                _ => {}
            }
            let m = pop_metrics(
                &r.comp_s,
                r.runtime_s,
                refr.as_ref().map(|x| x.comp_s.as_slice()),
                factors.map(|f| (f.instruction, f.ipc, f.frequency)),
            )?;
            let h = match &r.out_mpi_s {
                Some(o) => Some(hybrid_efficiency(&r.comp_s, o, r.runtime_s)?),
                None => None,
            };
            let mut t = Table::new(&["metric", "value", "equation"]);
            let opt = |v: Option<f64>| {
                v.map(|x| num(x, 4))
                    .unwrap_or_else(|| "- (needs --reference)".into())
            };
            t.row(vec![
                "parallel efficiency".into(),
                num(m.parallel_efficiency, 4),
                "3.7".into(),
            ]);
            t.row(vec![
                "load balance".into(),
                num(m.load_balance, 4),
                "3.8".into(),
            ]);
            t.row(vec![
                "communication efficiency".into(),
                num(m.communication_efficiency, 4),
                "3.9".into(),
            ]);
            t.row(vec![
                "strong scaling (computation)".into(),
                opt(m.strong_scaling),
                "3.10".into(),
            ]);
            t.row(vec![
                "weak scaling".into(),
                opt(m.weak_scaling),
                "3.11".into(),
            ]);
            if let Some(f) = &factors {
                for (name, v) in [
                    ("instruction scaling", f.instruction),
                    ("IPC scaling", f.ipc),
                    ("frequency scaling", f.frequency),
                ] {
                    t.row(vec![name.into(), num(v, 4), "3.12".into()]);
                }
                post.push(format!(
                    "IPC {} against {}, clock {} GHz against {} GHz over the computation",
                    num(f.ipc_run, 4),
                    num(f.ipc_reference, 4),
                    num(f.frequency_ghz, 4),
                    num(f.frequency_reference_ghz, 4)
                ));
            }
            t.row(vec![
                if factors.is_some() {
                    "computation scaling (product)"
                } else {
                    "computation scaling"
                }
                .into(),
                opt(m.computation_scaling),
                "3.12".into(),
            ]);
            t.row(vec![
                "global efficiency".into(),
                opt(m.global_efficiency),
                "3.13".into(),
            ]);
            if let Some(h) = &h {
                t.row(vec![
                    "MPI efficiency".into(),
                    num(h.mpi_efficiency, 4),
                    "3.15".into(),
                ]);
                t.row(vec![
                    "OpenMP efficiency".into(),
                    num(h.openmp_efficiency, 4),
                    "3.16".into(),
                ]);
            }
            let head = format!("{} processes, runtime {} s", m.n, num(m.runtime_s, 5));
            let json = PopOutput {
                factors,
                hybrid: h,
                pop: m,
            };
            (
                render(args.format, &sorted(&json)?, &[head], &t, &post)?,
                (),
            )
        }
        ModelCmd::Compose {
            sigma,
            compute_s,
            flops,
            gflops,
            memory_s,
            bytes,
            bandwidth_gbs,
            mpi_s,
            messages,
            message_bytes,
            mpi_table,
            benchmark,
            min_bytes,
            io_s,
            other_s,
        } => {
            let mut how = Vec::new();
            let positive = |name: &str, v: f64| -> Result<f64> {
                if v.is_finite() && v > 0.0 {
                    Ok(v)
                } else {
                    bail!("--{name} {v}: give a positive number")
                }
            };
            let nonneg = |name: &str, v: f64| -> Result<f64> {
                if v.is_finite() && v >= 0.0 {
                    Ok(v)
                } else {
                    bail!("--{name} {v}: give a number >= 0")
                }
            };
            let t_c = match (compute_s, flops, gflops) {
                (Some(t), _, _) => nonneg("compute-s", *t)?,
                (None, Some(f), Some(g)) => {
                    let v = nonneg("flops", *f)? / (positive("gflops", *g)? * 1e9);
                    how.push(("compute", format!("{f} FLOP / {g} GFLOP/s")));
                    v
                }
                _ => 0.0,
            };
            let t_mem = match (memory_s, bytes, bandwidth_gbs) {
                (Some(t), _, _) => nonneg("memory-s", *t)?,
                (None, Some(b), Some(bw)) => {
                    let v = nonneg("bytes", *b)? / (positive("bandwidth-gbs", *bw)? * 1e9);
                    how.push(("memory", format!("{b} B / {bw} GB/s")));
                    v
                }
                _ => 0.0,
            };
            let mut hockney = None;
            let t_mpi = match (mpi_s, messages, message_bytes, mpi_table) {
                (Some(t), ..) => nonneg("mpi-s", *t)?,
                (None, Some(n), Some(b), Some(table)) => {
                    let (h, used) = hockney_from_table(table, benchmark.as_deref(), *min_bytes)?;
                    let per = (h.t0 + nonneg("message-bytes", *b)? * h.per_byte) * 1e-6;
                    how.push((
                        "MPI",
                        format!(
                            "{n} messages x (t0 {} us + {b} B x {} us/B) = {n} x {} us; Hockney fit to {used} rows of {}",
                            num(h.t0, 4),
                            num(h.per_byte, 5),
                            num(per * 1e6, 6),
                            table.display()
                        ),
                    ));
                    hockney = Some(h);
                    nonneg("messages", *n)? * per
                }
                _ => 0.0,
            };
            let c = compose(
                nonneg("sigma", *sigma)?,
                t_c,
                t_mem,
                t_mpi,
                nonneg("io-s", *io_s)?,
                nonneg("other-s", *other_s)?,
            );
            let mut t = Table::new(&["term", "seconds", "from"]);
            let from = |k: &str| {
                how.iter()
                    .find(|(n, _)| *n == k)
                    .map_or("given".to_string(), |(_, v)| v.clone())
            };
            t.row(vec![
                "T_c (compute)".into(),
                num(c.compute_s, 5),
                from("compute"),
            ]);
            t.row(vec![
                "T_mem (memory)".into(),
                num(c.memory_s, 5),
                from("memory"),
            ]);
            t.row(vec![
                "T_MPI (communication)".into(),
                num(c.mpi_s, 5),
                from("MPI"),
            ]);
            t.row(vec!["T_IO".into(), num(c.io_s, 5), "given".into()]);
            t.row(vec![
                "T_kernel".into(),
                num(c.kernel_s, 5),
                "the sum of the four".into(),
            ]);
            t.row(vec!["T_other".into(), num(c.other_s, 5), "given".into()]);
            t.row(vec![
                "T".into(),
                num(c.total_s, 5),
                format!("sigma {} x T_kernel + T_other", num(c.sigma, 6)),
            ]);
            let json = ComposeOutput {
                composition: c,
                hockney_us: hockney,
            };
            (
                render(
                    args.format,
                    &sorted(&json)?,
                    &["eq. 3.3: T = sigma T_kernel + T_other, T_kernel = T_c + T_mem + T_MPI + T_IO".to_string()],
                    &t,
                    &[],
                )?,
                (),
            )
        }
        ModelCmd::Decompose { runs, project } => {
            let (terms, x, y) = decomposition_from_csv(&read(runs)?, &runs.display().to_string())?;
            let d = fit_decomposition(&terms, &x, &y)?;
            let mut t = Table::new(&["term", "alpha"]);
            for (k, a) in d.terms.iter().zip(&d.alpha) {
                t.row(vec![k.clone(), num(*a, 5)]);
            }
            let mut post = vec![format!(
                "sum of alpha {}, R2 {}",
                num(d.alpha_sum, 5),
                num(d.r2, 6)
            )];
            let mut projected = None;
            if let Some(p) = project {
                let kv = parse_pairs(p)?;
                let ratios = d
                    .terms
                    .iter()
                    .map(|k| {
                        kv.get(k).copied().with_context(|| {
                            format!(
                                "--project lacks '{k}'; give every term: {}",
                                d.terms.join(", ")
                            )
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                let v = hpcscope_models::pop::project_ratio(&d.alpha, &ratios);
                post.push(format!("projected T/T_ref = {}", num(v, 6)));
                projected = Some(v);
            }
            (
                render(
                    args.format,
                    &sorted(&DecomposeOutput {
                        decomposition: d,
                        projected_ratio: projected,
                    })?,
                    &[],
                    &t,
                    &post,
                )?,
                (),
            )
        }
        ModelCmd::Peak {
            dag,
            binary,
            function,
            ports,
            cpi,
            clock_ghz,
        } => {
            if let Some(d) = dag {
                let mut cfg = DagConfig::habakkuk_ivybridge();
                cfg.clock_ghz = *clock_ghz;
                let r = Dag::parse(&read(d)?, &d.display().to_string())?.analyze(&cfg)?;
                let mut t = Table::new(&[
                    "estimate",
                    "cycles",
                    "flops_per_cycle",
                    "bytes_per_cycle",
                    "gflops",
                    "gbs",
                ]);
                for (n, e) in [
                    ("no ILP", r.serial),
                    ("computed schedule", r.schedule),
                    ("perfect schedule", r.perfect),
                    ("critical path", r.critical_path),
                ] {
                    t.row(vec![
                        n.into(),
                        num(e.cycles, 5),
                        num(e.flops_per_cycle, 5),
                        num(e.bytes_per_cycle, 5),
                        num(e.gflops, 5),
                        num(e.gbs, 5),
                    ]);
                }
                let pre = vec![format!(
                    "{} FLOPs, {} array references, naive FLOPs/byte {}; critical path {} nodes, {} FLOPs; at {} GHz",
                    r.flops,
                    r.array_refs,
                    num(r.naive_flops_per_byte, 4),
                    r.critical_path_nodes,
                    r.critical_path_flops,
                    r.clock_ghz
                )];
                (render(args.format, &PeakOutput::Dag(r), &pre, &t, &[])?, ())
            } else if let (Some(b), Some(f)) = (binary, function) {
                let model = port_model(ports)?;
                let table = ClassTable::builtin(&model.isa)?;
                let rep = extract(b, &Selector::Function(f.clone()), &table)?;
                let l = rep.main_loop().context("no innermost loop")?;
                let cpi: Cpis = match cpi {
                    Some(c) => parse_cpi(c)?,
                    None => model
                        .classes
                        .iter()
                        .map(|c| (c.name.clone(), 1.0))
                        .collect(),
                };
                let a = model.allocate(&l.counts, &cpi, Scheduler::Waterfill)?;
                let p = loop_peak(
                    l.flops_per_iter,
                    a.cycles,
                    l.critical_path_cycles,
                    *clock_ghz,
                );
                let mut t = Table::new(&["bound", "cycles_per_iter", "flops_per_cycle", "gflops"]);
                t.row(vec![
                    format!("busiest port ({})", a.binding_port),
                    num(p.port_cycles, 5),
                    num(p.flops_per_cycle_ports, 5),
                    num(p.flops_per_cycle_ports * clock_ghz, 5),
                ]);
                t.row(vec![
                    "loop-carried critical path".into(),
                    num(p.critical_path_cycles, 5),
                    num(p.flops_per_cycle_cp, 5),
                    num(p.flops_per_cycle_cp * clock_ghz, 5),
                ]);
                let pre = vec![format!(
                    "{f}: loop {:#x}..{:#x}, {} FLOPs per iteration, {}-bit vectors",
                    l.start, l.end, l.flops_per_iter, l.vector_bits
                )];
                (
                    render(
                        args.format,
                        &PeakOutput::Loop(p),
                        &pre,
                        &t,
                        &[format!(
                            "peak {} GFLOP/s at {} GHz",
                            num(p.gflops, 5),
                            clock_ghz
                        )],
                    )?,
                    (),
                )
            } else {
                bail!("give --dag FILE, or --binary FILE --function NAME");
            }
        }
    };
    emit(&text, args.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

/// The scaling inputs of a CSV threads,clock_ghz,iters,memory_s[,proxy_cycles|,stall_cycles].
fn scaling_table(table: &Path) -> Result<Vec<ScalingInput>> {
    Ok(inputs::scaling_table(
        &read(table)?,
        &table.display().to_string(),
    )?)
}

/// Thread counts 1, 2, 4... up to the CPUs this process may use (the last one included).
fn default_threads(n: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut t = 1;
    while t < n {
        v.push(t);
        t *= 2;
    }
    v.push(n.max(1));
    v
}

/// Runs the data-throughput kernel and the clock at each thread count.
fn measure_dt(threads: &[usize], mib: Option<f64>, reps: usize) -> Result<DtReport> {
    let cpus = hpcscope_bench::affinity::allowed_cpus()
        .filter(|c| !c.is_empty())
        .context("cannot tell which CPUs this process may use (sched_getaffinity failed)")?;
    let threads = if threads.is_empty() {
        default_threads(cpus.len())
    } else {
        threads.to_vec()
    };
    let bytes = match mib {
        Some(m) if m.is_finite() && m > 0.0 => (m * 1048576.0) as u64,
        Some(m) => bail!("--dt-mib must be positive, got {m}"),
        None => hpcscope_bench::topology::Topology::detect()
            .llc()
            .map_or(64 << 20, |c| 2 * c.size_bytes),
    };
    let max_t = threads.iter().copied().max().unwrap_or(1) as u64;
    if let Some(avail) = hpcscope_host::facts::mem_available_bytes()
        && bytes.saturating_mul(max_t) > avail / 2
    {
        bail!(
            "--dt-mib: {} threads x {} MiB is more than half the available memory ({} MiB); give a smaller --dt-mib",
            max_t,
            bytes >> 20,
            avail >> 20
        );
    }
    Ok(hpcscope_bench::dt::run(&DtConfig {
        threads,
        cpus,
        nodes_per_thread: DtConfig::nodes_for_bytes(bytes),
        reps: reps.max(1),
        target_s: 0.1,
    })?)
}

/// Measured runtimes from a CSV threads,seconds.
fn actual_table(path: &Path) -> Result<Vec<(u32, f64)>> {
    Ok(inputs::actual_table(
        &read(path)?,
        &path.display().to_string(),
    )?)
}

/// Runs `program` once per thread count with OMP_NUM_THREADS set; its wall time is the
/// measured runtime.
fn run_program(program: &[String], threads: &[u32]) -> Result<Vec<(u32, f64)>> {
    let mut out = Vec::new();
    for &t in threads {
        let mut cmd = std::process::Command::new(&program[0]);
        cmd.args(&program[1..])
            .env("OMP_NUM_THREADS", t.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null());
        hpcscope_host::child::die_with_parent(&mut cmd);
        let t0 = std::time::Instant::now();
        let st = cmd
            .status()
            .with_context(|| format!("cannot run '{}'", program[0]))?;
        let dt = t0.elapsed().as_secs_f64();
        if !st.success() {
            bail!(
                "'{}' failed at {t} threads ({st}); its runtime is not a measurement",
                program.join(" ")
            );
        }
        out.push((t, dt));
    }
    Ok(out)
}

/// Eqs. 3.1 and 3.2 over a partition CSV, per rank count, with eq. 5.13 where measured.
#[allow(clippy::too_many_arguments)]
fn bsp(
    format: Format,
    cycles: f64,
    points: &[Measured],
    part: &Path,
    halo: Halo,
    pre: Vec<String>,
    measured: &Option<DtReport>,
) -> Result<String> {
    let origin = part.display().to_string();
    let mut runs = Vec::new();
    for (n, rs) in inputs::partition(&read(part)?, &origin)? {
        let m = points.iter().find(|p| p.threads == n).with_context(|| {
            format!(
                "{origin}: {n} ranks, but the clock and the memory benchmark were measured at {} threads only; measure at {n} too (--threads)",
                points.iter().map(|p| p.threads.to_string()).collect::<Vec<_>>().join(", ")
            )
        })?;
        runs.push(bsp_run(cycles, m, &halo, &rs)?);
    }
    let mut t = Table::new(&[
        "ranks",
        "clock_ghz",
        "grind_ns",
        "bound",
        "levels",
        "total_s",
        "error_pct (eq. 5.13)",
    ]);
    for r in &runs {
        t.row(vec![
            r.ranks.to_string(),
            num(r.clock_hz / 1e9, 4),
            num(r.grind_s * 1e9, 4),
            if r.memory_bound { "memory" } else { "compute" }.into(),
            r.levels.len().to_string(),
            num(r.total_s, 5),
            r.error_pct.map(|e| num(e, 3)).unwrap_or_else(|| "-".into()),
        ]);
    }
    let errs: Vec<f64> = runs.iter().filter_map(|r| r.error_pct).collect();
    let mut post = Vec::new();
    let stats = if errs.is_empty() {
        None
    } else {
        let st = hpcscope_models::strong::stats_of(&errs);
        post.push(format!(
            "eq. 5.13 error over {} rank counts (Table 5.3): mean {} %, SD {} %, max {} %",
            st.n,
            num(st.mean_pct, 3),
            num(st.sd_pct, 3),
            num(st.max_pct, 3)
        ));
        Some(st)
    };
    for r in runs.iter().filter(|r| r.cells_without_actual > 0) {
        post.push(format!(
            "{} ranks: {} rank/level cell(s) without actual_s are not in the error",
            r.ranks, r.cells_without_actual
        ));
    }
    let json = StrongOutput::Bsp(StrongBsp {
        bsp: runs,
        error_stats: stats,
        measurement: measured.clone(),
    });
    render(format, &sorted(&json)?, &pre, &t, &post)
}

/// Counters (any format `counters import` reads) or a profile, as an event vector.
fn event_vector(path: &Path, region: Option<&str>) -> Result<EventVector> {
    let text = read(path)?;
    let name = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    // A profile (mix, counters --profile) carries a format version; counters files do not.
    let is_profile = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .is_some_and(|v| v.get("format_version").is_some() && v.get("regions").is_some());
    if is_profile {
        let p = hpcscope_core::profile::Profile::from_json_str(&text, &path.display().to_string())?;
        return Ok(hpcscope_models::similarity::from_profile(
            &p, &name, region,
        )?);
    }
    let raw = hpcscope_counters::import::import_file(path, None, &name)?;
    let mut events: BTreeMap<String, f64> = BTreeMap::new();
    let mut time: Option<f64> = None;
    let mut uncounted = std::collections::BTreeSet::new();
    let mut found = false;
    for r in raw
        .regions
        .iter()
        .filter(|r| region.is_none_or(|n| r.name == n))
    {
        found = true;
        for t in &r.threads {
            if let Some(s) = t.time_s {
                time = Some(time.map_or(s, |x: f64| x.max(s)));
            }
            for (k, c) in &t.counters {
                match c.value {
                    Some(v) => *events.entry(k.clone()).or_insert(0.0) += v,
                    None => {
                        uncounted.insert(k.clone());
                    }
                }
            }
        }
    }
    if !found {
        bail!(
            "{}: no region '{}' (regions: {})",
            path.display(),
            region.unwrap_or(""),
            raw.regions
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !uncounted.is_empty() {
        // A counter missing in one thread would bias its total: leave it out, and say so.
        for k in &uncounted {
            events.remove(k);
        }
        eprintln!(
            "warning: {}: {} counter(s) not counted in some thread, left out: {}",
            path.display(),
            uncounted.len(),
            uncounted.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(EventVector {
        name,
        events,
        time_s: time,
    })
}

/// Hockney's model fitted to the `bytes` and `t_avg_us` columns of a CSV (rows of
/// `benchmark` when given, messages of `min_bytes` and more), and the rows used.
fn hockney_from_table(
    table: &Path,
    benchmark: Option<&str>,
    min_bytes: f64,
) -> Result<(hpcscope_models::pop::Hockney, usize)> {
    Ok(inputs::hockney_table(
        &read(table)?,
        &table.display().to_string(),
        benchmark,
        min_bytes,
    )?)
}

/// Column label of a model in the validation table.
fn model_label(id: &str) -> &'static str {
    match id {
        "difference" => "difference (eq. 5.11)",
        "v1" => "v1 (eq. 5.5)",
        "v2" => "v2 (eq. 5.7)",
        "equal_ipc" => "equal IPC",
        "constant_rc" => "constant R_c",
        _ => "model",
    }
}

fn read(p: &Path) -> Result<String> {
    // Bounded, with a byte-order mark dropped, as every input hpcscope reads.
    Ok(hpcscope_core::load::read(p, "the file", "check the path")?)
}

fn port_model(arg: &str) -> Result<PortModel> {
    if Path::new(arg).is_file() {
        Ok(PortModel::from_toml(&read(Path::new(arg))?, arg)?)
    } else {
        Ok(PortModel::builtin(arg)?)
    }
}

fn parse_pairs(s: &str) -> Result<BTreeMap<String, f64>> {
    Ok(inputs::pairs(s)?)
}

/// CPIs from `CLASS=CPI,...` or a JSON file holding `{"cpi": {...}}` (as `model fit --format json` writes) or a bare map.
fn parse_cpi(arg: &str) -> Result<Cpis> {
    if Path::new(arg).is_file() {
        let v: serde_json::Value = serde_json::from_str(&read(Path::new(arg))?)
            .with_context(|| format!("'{arg}' is not JSON"))?;
        let m = v.get("cpi").unwrap_or(&v);
        let cpi: Cpis = serde_json::from_value(m.clone())
            .with_context(|| format!("'{arg}' holds no CPI map; write it with `hpcscope model fit --format json -o {arg}`"))?;
        return Ok(cpi);
    }
    Ok(parse_pairs(&arg.to_ascii_uppercase())?
        .into_iter()
        .collect())
}

/// How `model kernel` picks its loop beyond the default, and counts spills.
#[derive(Debug, Clone, Copy)]
struct Pick {
    ins_per_iter: Option<f64>,
    min_loads: Option<f64>,
    min_stores: Option<f64>,
}

#[allow(clippy::too_many_arguments)]
fn kernel(
    format: Format,
    binary: &Path,
    function: Option<&str>,
    range: Option<&str>,
    hot_run: Option<(&[String], u64)>,
    classes: Option<&Path>,
    all: bool,
    listing: bool,
    pick: Pick,
) -> Result<(String, ())> {
    let table = match classes {
        Some(p) => ClassTable::from_toml(&read(p)?, &p.display().to_string())?,
        None => ClassTable::builtin(hpcscope_models::kernel::binary_isa(binary)?)?,
    };
    let hot = match hot_run {
        Some((args, hz)) => {
            let h = hpcscope_mix::sample::hottest(binary, args, hz)?;
            if !h.success {
                eprintln!(
                    "warning: the program did not exit with status 0; its samples are used as they are"
                );
            }
            Some(h)
        }
        None => None,
    };
    let sel = match (function, range) {
        _ if hot.is_some() => Selector::Function(hot.as_ref().unwrap().functions[0].0.clone()),
        (Some(f), _) => Selector::Function(f.to_string()),
        (None, Some(r)) => {
            let (a, b) = r.split_once(':').context("--range must be START:END")?;
            let p = |s: &str| -> Result<u64> {
                let s = s.trim();
                Ok(match s.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16)?,
                    None => s.parse()?,
                })
            };
            Selector::Range(
                p(a).context("bad START in --range")?,
                p(b).context("bad END in --range")?,
            )
        }
        (None, None) => bail!("give --function NAME or --range START:END"),
    };
    let rep = extract(binary, &sel, &table)?;
    let samples_in = |a: u64, b: u64| -> u64 {
        hot.as_ref()
            .map_or(0, |h| h.ips.range(a..b).map(|(_, n)| n).sum())
    };
    let mut pre = Vec::new();
    let main = match &hot {
        Some(h) => {
            let pct = |n: u64| 100.0 * n as f64 / h.total.max(1) as f64;
            let top: Vec<String> = h
                .functions
                .iter()
                .take(3)
                .map(|(f, n)| format!("{f} {:.1} %", pct(*n)))
                .collect();
            pre.push(format!(
                "hottest functions ({} samples): {}",
                h.total,
                top.join(", ")
            ));
            let best = rep
                .innermost()
                .map(|l| (l, samples_in(l.start, l.end)))
                .max_by_key(|(_, n)| *n)
                .filter(|(_, n)| *n > 0);
            match best {
                Some((l, n)) => {
                    pre.push(format!(
                        "hottest innermost loop: {:#x}..{:#x} with {:.1} % of all samples",
                        l.start,
                        l.end,
                        pct(n)
                    ));
                    Some(l.start)
                }
                None => {
                    pre.push(format!(
                        "no sample fell in an innermost loop of {}: its time is outside loops; the main loop below is chosen statically",
                        rep.function
                    ));
                    rep.main_loop().map(|l| l.start)
                }
            }
        }
        None => rep.main_loop().map(|l| l.start),
    };
    let h_main = main;
    // The thesis's criterion: the loop whose instructions match the measured count.
    let by_ins = match pick.ins_per_iter {
        Some(n) => {
            let b = rep.select_by_instructions(n)?;
            pre.push(format!(
                "by measured instructions per iteration ({}): loop {:#x} with {} instructions ({} %{}){}",
                num(n, 5),
                b.start,
                b.instructions,
                num(b.mismatch_pct, 3),
                b.runner_up_pct
                    .map(|r| format!(", next candidate {} %", num(r, 3)))
                    .unwrap_or_default(),
                match main {
                    Some(m) if hot.is_some() && m != b.start => format!(
                        "; the hottest sampled loop is {m:#x}: they differ, check the iteration count"
                    ),
                    Some(m) if hot.is_some() => format!("; it is the hottest sampled loop {m:#x} too"),
                    _ => String::new(),
                }
            ));
            Some(b)
        }
        None => None,
    };
    let main = by_ins.as_ref().map(|b| b.start).or(main);
    let spill = match (pick.min_loads, pick.min_stores) {
        (None, None) => None,
        (l, s) => {
            let lp = rep
                .loops
                .iter()
                .find(|l| Some(l.start) == main)
                .context("no main loop to count spills in")?;
            let sp =
                hpcscope_models::kernel::spills(&lp.counts, l.unwrap_or(0.0), s.unwrap_or(0.0))?;
            pre.push(format!(
                "spills of loop {:#x} (section 5.3): {} loads - minimum {} = {} spill loads; {} stores - minimum {} = {} spill stores",
                lp.start,
                num(sp.loads, 4),
                num(sp.min_loads, 4),
                num(sp.spill_loads, 4),
                num(sp.stores, 4),
                num(sp.min_stores, 4),
                num(sp.spill_stores, 4)
            ));
            Some((lp.start, sp))
        }
    };
    let mut t = Table::new(&[
        "loop",
        "innermost",
        "main",
        "instr",
        "flops",
        "bits",
        "cp_cycles",
        "counts",
        "other",
    ]);
    let mut post = Vec::new();
    if rep.loops.iter().any(|l| l.scalable) {
        post.push(
            "SVE loops: FLOPs per iteration are per 128-bit granule; multiply by VL/128".into(),
        );
    }
    for l in rep.loops.iter().filter(|l| all || l.innermost) {
        let spilled = spill
            .as_ref()
            .filter(|(a, _)| *a == l.start)
            .map(|(_, sp)| hpcscope_models::kernel::with_spills(&l.counts, sp));
        let counts = spilled
            .as_ref()
            .unwrap_or(&l.counts)
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let other = l
            .other
            .iter()
            .map(|(k, v)| format!("{k}x{v}"))
            .collect::<Vec<_>>()
            .join(" ");
        t.row(vec![
            format!("{:#x}..{:#x}", l.start, l.end),
            l.innermost.to_string(),
            if Some(l.start) == main {
                "*".into()
            } else {
                String::new()
            },
            l.instructions.to_string(),
            num(l.flops_per_iter, 4),
            l.vector_bits.to_string(),
            num(l.critical_path_cycles, 3),
            counts,
            other,
        ]);
        if !l.other.is_empty() {
            post.push(format!(
                "loop {:#x}: {} instruction(s) of unknown class counted as OTHER ({}); add rules to a class table and pass --classes",
                l.start,
                l.other.values().sum::<u32>(),
                l.other.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        if listing {
            for i in &l.listing {
                post.push(format!(
                    "  {:#x}  {:40} {}",
                    i.address,
                    i.text,
                    i.class.as_deref().unwrap_or("-")
                ));
            }
        }
    }
    pre.insert(
        0,
        format!(
            "{} in {} ({}), {:#x}..{:#x}",
            rep.function,
            rep.binary.display(),
            rep.isa,
            rep.start,
            rep.end
        ),
    );
    if spill.is_some() {
        post.push(
            "the main loop's LOAD and STORE counts above are spills (beyond the minimum), as the difference model takes them".into(),
        );
    }
    let text = match &hot {
        // JSON keeps the sampling evidence beside the kernel.
        Some(h) => render(
            format,
            &sorted(&KernelOutput::Hottest {
                by_instructions: by_ins,
                functions: h.functions.clone(),
                hottest_loop: h_main,
                kernel: rep,
                main_loop: main,
                samples: h.total,
                spills: spill.as_ref().map(|x| x.1),
            })?,
            &pre,
            &t,
            &post,
        )?,
        None if by_ins.is_some() || spill.is_some() => render(
            format,
            &sorted(&KernelOutput::Picked {
                by_instructions: by_ins,
                kernel: rep,
                main_loop: main,
                spills: spill.as_ref().map(|x| x.1),
            })?,
            &pre,
            &t,
            &post,
        )?,
        None => render(format, &KernelOutput::Plain(rep), &pre, &t, &post)?,
    };
    Ok((text, ()))
}
