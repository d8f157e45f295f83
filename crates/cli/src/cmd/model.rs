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
use hpcscope_models::classes::ClassTable;
use hpcscope_models::difference::compare;
use hpcscope_models::fit::{FitOptions, fit_cpis, measured, rows_from_csv};
use hpcscope_models::kernel::{Selector, extract};
use hpcscope_models::laws::{Law, Mode, select};
use hpcscope_models::peak::{Dag, DagConfig, loop_peak};
use hpcscope_models::pop::{
    compose, computation_factors, decomposition_from_csv, fit_decomposition, fit_hockney,
    hybrid_efficiency, pop_metrics, pop_run_from_csv,
};
use hpcscope_models::ports::{Cpis, PortModel, Scheduler};
use hpcscope_models::strong::{ScalingInput, strong_scaling};

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
    },
    /// Strong scaling capped by a memory benchmark: CSV threads,clock_ghz,iters,memory_s
    /// [,proxy_cycles | ,stall_cycles] (eq. 5.12's stalled-cycle correction).
    Strong {
        /// Scaling table CSV.
        table: PathBuf,
        /// Predicted (or measured) cycles per iteration.
        #[arg(long)]
        cycles: f64,
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
        } => kernel(
            args.format,
            binary,
            function.as_deref(),
            range.as_deref(),
            (*hottest).then_some((bin_args.as_slice(), *hz)),
            classes.as_deref(),
            *all,
            *listing,
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
                out.push(serde_json::json!({"target": name, "comparison": c, "time_s": time, "measured_cycles_per_iter": tr.cycles_per_iter}));
            }
            let pre = vec![format!(
                "proxy '{proxy}': measured {} cycles per iteration; port model '{}'",
                num(c_proxy, 5),
                model.id
            )];
            (render(args.format, &out, &pre, &t, &[])?, ())
        }
        ModelCmd::Strong { table, cycles } => {
            let origin = table.display().to_string();
            let c = hpcscope_models::csv::Csv::parse(&read(table)?, &origin)?;
            let cols = ["threads", "clock_ghz", "iters", "memory_s"]
                .iter()
                .map(|n| c.require(n, "the table needs threads,clock_ghz,iters,memory_s"))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            // Eq. 5.12: an optional `proxy_cycles` column (a low flop/byte proxy's cycles
            // per iteration at each thread count) gives S_g,t = C_g,t - C_g; a
            // `stall_cycles` column gives S_g,t directly.
            let proxy_col = c.column("proxy_cycles");
            let stall_col = c.column("stall_cycles");
            if proxy_col.is_some() && stall_col.is_some() {
                bail!("{origin}: give proxy_cycles or stall_cycles, not both");
            }
            let mut inputs = Vec::new();
            for r in 0..c.rows.len() {
                let th = c.number(r, cols[0])?;
                if th < 1.0 || th.fract() != 0.0 {
                    return Err(c
                        .error_at(
                            r,
                            cols[0],
                            format!("threads must be a positive integer, got {th}"),
                        )
                        .into());
                }
                inputs.push(ScalingInput {
                    threads: th as u32,
                    clock_hz: c.number(r, cols[1])? * 1e9,
                    iters: c.number(r, cols[2])?,
                    memory_s: c.number(r, cols[3])?,
                    stall_cycles: match stall_col {
                        Some(k) => c.number(r, k)?,
                        None => 0.0,
                    },
                });
            }
            if let Some(k) = proxy_col {
                let proxy = (0..c.rows.len())
                    .map(|r| Ok((inputs[r].threads, c.number(r, k)?)))
                    .collect::<Result<Vec<_>>>()?;
                let s = hpcscope_models::strong::stall_cycles(&proxy)
                    .with_context(|| format!("{origin}: proxy_cycles (eq. 5.12)"))?;
                for i in &mut inputs {
                    i.stall_cycles = s.iter().find(|x| x.0 == i.threads).map_or(0.0, |x| x.1);
                }
            }
            let s = strong_scaling(*cycles, &inputs)?;
            let mut t = Table::new(&[
                "threads",
                "clock_ghz",
                "stall_cycles",
                "compute_s",
                "memory_s",
                "predicted_s",
                "bound",
            ]);
            for p in &s.points {
                t.row(vec![
                    p.threads.to_string(),
                    num(p.clock_hz / 1e9, 4),
                    num(p.stall_cycles, 4),
                    num(p.compute_s, 5),
                    num(p.memory_s, 5),
                    num(p.predicted_s, 5),
                    if p.memory_bound { "memory" } else { "compute" }.into(),
                ]);
            }
            let post = vec![match s.memory_bound_from {
                Some(t) => format!("memory-bound from {t} threads"),
                None => "compute-bound at every thread count".into(),
            }];
            (render(args.format, &s, &[], &t, &post)?, ())
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
            let json = serde_json::json!({"selection": sel, "predictions": preds});
            (
                render(
                    args.format,
                    &json,
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
            let json = serde_json::json!({"pop": m, "hybrid": h, "factors": factors});
            (
                render(
                    args.format,
                    &json,
                    &[format!(
                        "{} processes, runtime {} s",
                        m.n,
                        num(m.runtime_s, 5)
                    )],
                    &t,
                    &post,
                )?,
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
            let json = serde_json::json!({"composition": c, "hockney_us": hockney});
            (
                render(
                    args.format,
                    &json,
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
                    &serde_json::json!({"decomposition": d, "projected_ratio": projected}),
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
                (render(args.format, &r, &pre, &t, &[])?, ())
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
                        &p,
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

/// Hockney's model fitted to the `bytes` and `t_avg_us` columns of a CSV (rows of
/// `benchmark` when given, messages of `min_bytes` and more), and the rows used.
fn hockney_from_table(
    table: &Path,
    benchmark: Option<&str>,
    min_bytes: f64,
) -> Result<(hpcscope_models::pop::Hockney, usize)> {
    let origin = table.display().to_string();
    let c = hpcscope_models::csv::Csv::parse(&read(table)?, &origin)?;
    let b = c.require("bytes", "the message size of each row, bytes")?;
    let t = c.require("t_avg_us", "the mean time of each row, microseconds")?;
    let bench = c.column("benchmark");
    if benchmark.is_some() && bench.is_none() {
        bail!("{origin}: no `benchmark` column to pick --benchmark's rows from");
    }
    let mut kinds = std::collections::BTreeSet::new();
    let mut points = Vec::new();
    for r in 0..c.rows.len() {
        if let Some(k) = bench {
            let name = c.text(r, k).to_string();
            kinds.insert(name.clone());
            if benchmark.is_some_and(|w| !w.eq_ignore_ascii_case(&name)) {
                continue;
            }
        }
        let n = c.number(r, b)?;
        if n >= min_bytes {
            points.push((n, c.number(r, t)?));
        }
    }
    if benchmark.is_none() && kinds.len() > 1 {
        bail!(
            "{origin} holds several benchmarks ({}); pick one with --benchmark",
            kinds.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    if points.len() < 2 {
        bail!(
            "{origin}: {} row(s) of {} bytes or more; the fit needs two message sizes at least (lower --min-bytes?)",
            points.len(),
            min_bytes
        );
    }
    let n = points.len();
    Ok((fit_hockney(&points)?, n))
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
    let mut m = BTreeMap::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = part
            .split_once('=')
            .with_context(|| format!("'{part}' is not NAME=VALUE"))?;
        let v: f64 = v
            .trim()
            .parse()
            .with_context(|| format!("'{v}' in '{part}' is not a number"))?;
        m.insert(k.trim().to_string(), v);
    }
    Ok(m)
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
        let counts = l
            .counts
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
    let text = match &hot {
        // JSON keeps the sampling evidence beside the kernel.
        Some(h) => render(
            format,
            &serde_json::json!({
                "kernel": rep,
                "samples": h.total,
                "functions": h.functions,
                "hottest_loop": main,
            }),
            &pre,
            &t,
            &post,
        )?,
        None => render(format, &rep, &pre, &t, &post)?,
    };
    Ok((text, ()))
}
