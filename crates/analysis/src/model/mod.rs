//! The `hpcscope model` workflows: each reads its inputs (model CSV files, port models, class
//! tables, counters and profiles), measures or runs what it needs (the data-throughput
//! kernel, a program at each thread count, CPU-clock sampling), calls the models of
//! `hpcscope-models` and returns the result with its text view
//! ([`hpcscope_models::view::Report`]).
//!
//! * [`kernel()`]: a function's loops by class, the main loop chosen statically, by sampling
//!   (`--hottest`) or by measured instructions, with spills;
//! * [`fit()`], [`predict()`]: CPIs fitted to measured variants; the difference model;
//! * [`strong()`], [`dt()`]: strong scaling capped by the data-throughput kernel, from a table,
//!   a measurement or a saved one, with the BSP model and measured runtimes;
//! * [`similarity()`]: counter-vector similarity and IPC-ratio invariance;
//! * [`scaling()`], [`pop()`], [`compose()`], [`decompose()`], [`peak()`]: scaling laws, POP
//!   efficiencies, eq. 3.3, the time decomposition, theoretical peak.

mod kernel;
mod similarity;
mod strong;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use hpcscope_models::classes::ClassTable;
use hpcscope_models::difference::compare;
use hpcscope_models::fit::{fit_cpis, measured, rows_from_csv};
use hpcscope_models::inputs;
use hpcscope_models::kernel::{Selector, extract};
use hpcscope_models::laws::{Law, Mode, Run, select};
use hpcscope_models::output::{
    ComposeOutput, DecomposeOutput, PeakOutput, PopOutput, PredictOutput, PredictTarget,
    PredictValidation, ScalingOutput,
};
use hpcscope_models::peak::{Dag, DagConfig, loop_peak};
use hpcscope_models::pop::{
    compose as compose_terms, computation_factors, decomposition_from_csv, fit_decomposition,
    hybrid_efficiency, pop_metrics, pop_run_from_csv,
};
use hpcscope_models::ports::{Cpis, PortModel, Scheduler};
use hpcscope_models::view::{self, PeakLoop, Report};

pub use kernel::{KernelOptions, kernel};
pub use similarity::{SimilarityOptions, similarity};
pub use strong::{DtOptions, StrongOptions, StrongSource, dt, strong};

/// Reads an input file: bounded, with a byte-order mark dropped, as every input hpcscope
/// reads.
fn read(p: &Path) -> Result<String> {
    Ok(hpcscope_core::load::read(p, "the file", "check the path")?)
}

/// A port model: a TOML file when `arg` names one, else a built-in id.
fn port_model(arg: &str) -> Result<PortModel> {
    if Path::new(arg).is_file() {
        Ok(PortModel::from_toml(&read(Path::new(arg))?, arg)?)
    } else {
        Ok(PortModel::builtin(arg)?)
    }
}

/// CPIs from `CLASS=CPI,...` or a JSON file holding `{"cpi": {...}}` (as `model fit --format
/// json` writes) or a bare map.
fn parse_cpi(arg: &str) -> Result<Cpis> {
    if Path::new(arg).is_file() {
        let v: serde_json::Value = serde_json::from_str(&read(Path::new(arg))?)
            .with_context(|| format!("'{arg}' is not JSON"))?;
        let m = v.get("cpi").unwrap_or(&v);
        let cpi: Cpis = serde_json::from_value(m.clone())
            .with_context(|| format!("'{arg}' holds no CPI map; write it with `hpcscope model fit --format json -o {arg}`"))?;
        return Ok(cpi);
    }
    if !arg.contains('=') && (arg.contains('/') || arg.to_ascii_lowercase().ends_with(".json")) {
        // A file name, not a list: it said "'MISSING.JSON' is not NAME=VALUE".
        bail!(
            "--cpi {arg}: no such file; give the JSON `hpcscope model fit --format json -o FILE` \
             writes, or the CPIs as CLASS=CPI,... (e.g. load=0.5,fma=1)"
        );
    }
    Ok(inputs::pairs(&arg.to_ascii_uppercase())?
        .into_iter()
        .collect())
}

/// `model fit`: CPIs per class fitted to measured variants.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct FitOptions {
    /// Variants CSV.
    pub variants: PathBuf,
    /// Port model: a built-in id (skylake, skylake-avx512, haswell, sandybridge, knl, sapphirerapids, zen5, a64fx) or a TOML file.
    #[cfg_attr(feature = "clap", arg(long, default_value = "skylake"))]
    pub ports: String,
    /// Basin-hopping seed.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 65432))]
    pub seed: u64,
    /// Basin-hopping hops.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 40))]
    pub hops: usize,
    /// Lower bound of every CPI.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1.0, value_parser = hpcscope_core::range::option::positive))]
    pub cpi_min: f64,
    /// Upper bound of every CPI.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 100.0, value_parser = hpcscope_core::range::option::positive))]
    pub cpi_max: f64,
    /// Scheduler placement rule.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t))]
    pub scheduler: Scheduler,
}

/// Runs `model fit`.
pub fn fit(o: &FitOptions) -> Result<Report<hpcscope_models::fit::CpiFit>> {
    let model = port_model(&o.ports)?;
    let rows = rows_from_csv(
        &read(&o.variants)?,
        &o.variants.display().to_string(),
        &model,
    )?;
    let opts = hpcscope_models::fit::FitOptions {
        seed: o.seed,
        hops: o.hops,
        step: 4.0,
        cpi_min: o.cpi_min,
        cpi_max: o.cpi_max,
        scheduler: o.scheduler,
    };
    let fit = fit_cpis(&model, &measured(&rows), &opts)?;
    let v = view::fit(&fit);
    Ok(Report::plain(fit, v))
}

/// `model predict`: a target's cycles per iteration from a proxy (the difference model), or
/// with `validate` each model's error against the measured rows.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct PredictOptions {
    /// Variants CSV holding the proxy (measured) and the target (cycles may be empty).
    pub variants: PathBuf,
    /// CPIs: JSON written by `model fit --format json`, or `CLASS=CPI,...`.
    #[cfg_attr(feature = "clap", arg(long))]
    pub cpi: String,
    /// Name of the proxy row.
    #[cfg_attr(feature = "clap", arg(long))]
    pub proxy: String,
    /// Name of the target row (repeatable; default: every row without cycles).
    #[cfg_attr(feature = "clap", arg(long = "target", value_name = "TARGET"))]
    pub targets: Vec<String>,
    /// Port model id or TOML file.
    #[cfg_attr(feature = "clap", arg(long, default_value = "skylake"))]
    pub ports: String,
    /// R_c of the constant-R_c baseline.
    #[cfg_attr(feature = "clap", arg(long, value_parser = hpcscope_core::range::option::positive))]
    pub rc: Option<f64>,
    /// Clock in GHz, to convert cycles to time (eq. 5.2).
    #[cfg_attr(feature = "clap", arg(long, value_parser = hpcscope_core::range::option::ghz))]
    pub clock_ghz: Option<f64>,
    /// Loop iterations of the busiest thread (eq. 5.1).
    #[cfg_attr(feature = "clap", arg(long, value_parser = hpcscope_core::range::option::count))]
    pub iters: Option<f64>,
    /// Scheduler placement rule.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t))]
    pub scheduler: Scheduler,
    /// Compare with the measured rows instead: every row but the proxy that has
    /// cycles_per_iter (or the --target rows) is predicted, and each model's % error per
    /// variant and mean / SD / max over variants are printed side by side (Tables 5.2
    /// and 5.3).
    #[cfg_attr(feature = "clap", arg(long))]
    pub validate: bool,
}

/// Runs `model predict`.
pub fn predict(o: &PredictOptions) -> Result<Report<PredictOutput>> {
    let variants = &o.variants;
    let proxy = &o.proxy;
    let model = port_model(&o.ports)?;
    let rows = rows_from_csv(&read(variants)?, &variants.display().to_string(), &model)?;
    let cpi = parse_cpi(&o.cpi)?;
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
    if o.validate {
        let names: Vec<&str> = if o.targets.is_empty() {
            rows.iter()
                .filter(|r| r.name != *proxy && r.cycles_per_iter.is_some())
                .map(|r| r.name.as_str())
                .collect()
        } else {
            o.targets.iter().map(String::as_str).collect()
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
                o.rc,
                o.scheduler,
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
        let text =
            view::predict_validation(&v, proxy, c_proxy, &model.id, o.rc.is_some(), &skipped);
        let out = PredictOutput::Validation(PredictValidation {
            not_compared: skipped,
            proxy: proxy.clone(),
            validation: v,
        });
        return Ok(Report::sorted(out, text));
    }
    let targets: Vec<&str> = if o.targets.is_empty() {
        rows.iter()
            .filter(|r| r.name != *proxy && r.cycles_per_iter.is_none())
            .map(|r| r.name.as_str())
            .collect()
    } else {
        o.targets.iter().map(String::as_str).collect()
    };
    if targets.is_empty() {
        bail!(
            "no target: pass --target NAME, or leave cycles_per_iter empty on the rows to predict"
        );
    }
    let mut out = Vec::new();
    for name in targets {
        let tr = find(name)?;
        let c = compare(
            &model,
            &p.counts,
            &tr.counts,
            &cpi,
            c_proxy,
            o.rc,
            o.scheduler,
        )?;
        let time = match (o.clock_ghz, o.iters) {
            (Some(g), Some(i)) => Some(hpcscope_models::strong::runtime_s(
                c.final_model.c_target,
                &[i],
                g * 1e9,
            )?),
            _ => None,
        };
        out.push(PredictTarget {
            comparison: c,
            measured_cycles_per_iter: tr.cycles_per_iter,
            target: name.to_string(),
            time_s: time,
        });
    }
    let text = view::predict_targets(&out, proxy, c_proxy, &model.id);
    Ok(Report::sorted(PredictOutput::Targets(out), text))
}

/// `model scaling`: laws fitted to runs, and one chosen.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ScalingOptions {
    /// Laws to offer (default: all).
    #[cfg_attr(
        feature = "clap",
        arg(long = "law", value_delimiter = ',', value_name = "LAW")
    )]
    pub laws: Vec<String>,
    /// Work grows with p (weak scaling).
    #[cfg_attr(feature = "clap", arg(long))]
    pub weak: bool,
    /// Process counts to predict.
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', value_parser = hpcscope_core::range::option::processes))]
    pub predict: Vec<f64>,
}

/// Runs `model scaling` on `runs` (read by `hpcscope_job::scaling::scaling_runs`).
pub fn scaling(runs: &[Run], o: &ScalingOptions) -> Result<Report<ScalingOutput>> {
    let laws: Vec<Law> = if o.laws.is_empty() {
        Law::ALL.to_vec()
    } else {
        o.laws
            .iter()
            .map(|l| Law::parse(l))
            .collect::<std::result::Result<_, _>>()?
    };
    let mode = if o.weak { Mode::Weak } else { Mode::Strong };
    let sel = select(runs, &laws, mode)?;
    let preds: Vec<_> = o.predict.iter().map(|&p| sel.best().predict(p)).collect();
    let text = view::scaling(&sel, &preds, runs.len(), mode);
    Ok(Report::sorted(
        ScalingOutput {
            predictions: preds,
            selection: sel,
        },
        text,
    ))
}

/// `model pop`: POP efficiencies of a run, optionally against a reference run.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct PopOptions {
    /// Run CSV.
    pub run: PathBuf,
    /// Reference run CSV (for computation scaling and global efficiency).
    #[cfg_attr(feature = "clap", arg(long))]
    pub reference: Option<PathBuf>,
}

/// Runs `model pop`.
pub fn pop(o: &PopOptions) -> Result<Report<PopOutput>> {
    let r = pop_run_from_csv(&read(&o.run)?, &o.run.display().to_string())?;
    let refr = match &o.reference {
        Some(p) => Some(pop_run_from_csv(&read(p)?, &p.display().to_string())?),
        None => None,
    };
    // Eq. 3.12's factors when the run and the reference both count instructions and cycles.
    let factors = match (&r.counters, refr.as_ref().map(|x| &x.counters)) {
        (Some(a), Some(Some(b))) => Some(computation_factors(a, b)?),
        _ => None,
    };
    let mut notes = Vec::new();
    match (&r.counters, &refr) {
        (Some(_), None) => notes.push(
            "eq. 3.12's factors need a reference run with instructions and cycles too (--reference)".to_string(),
        ),
        (Some(_), Some(x)) if x.counters.is_none() => notes.push(format!(
            "eq. 3.12's factors: the reference {} gives no instructions and cycles; computation scaling is eq. 3.10's",
            o.reference.as_ref().map_or(String::new(), |p| p.display().to_string())
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
    let out = PopOutput {
        factors,
        hybrid: h,
        pop: m,
    };
    let text = view::pop(&out, notes);
    Ok(Report::sorted(out, text))
}

/// `model compose`: eq. 3.3, each term in seconds or from what it is made of.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ComposeOptions {
    /// Kernel invocations (sigma: time steps, SCF iterations).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1.0))]
    pub sigma: f64,
    /// Compute time of one invocation, s.
    #[cfg_attr(feature = "clap", arg(long, conflicts_with_all = ["flops", "gflops"]))]
    pub compute_s: Option<f64>,
    /// FLOPs of one invocation (with --gflops: T_c = flops / rate).
    #[cfg_attr(feature = "clap", arg(long, requires = "gflops"))]
    pub flops: Option<f64>,
    /// Sustained compute rate, GFLOP/s (a kernel benchmark's, or `model peak`).
    #[cfg_attr(feature = "clap", arg(long, requires = "flops"))]
    pub gflops: Option<f64>,
    /// Memory time of one invocation, s.
    #[cfg_attr(feature = "clap", arg(long, conflicts_with_all = ["bytes", "bandwidth_gbs"]))]
    pub memory_s: Option<f64>,
    /// Bytes one invocation moves to and from memory (with --bandwidth-gbs).
    #[cfg_attr(feature = "clap", arg(long, requires = "bandwidth_gbs"))]
    pub bytes: Option<f64>,
    /// Memory bandwidth, GB/s (STREAM triad, `hpcscope bench`).
    #[cfg_attr(feature = "clap", arg(long, requires = "bytes"))]
    pub bandwidth_gbs: Option<f64>,
    /// MPI time of one invocation, s.
    #[cfg_attr(feature = "clap", arg(long, conflicts_with_all = ["messages", "message_bytes", "mpi_table"]))]
    pub mpi_s: Option<f64>,
    /// Messages one invocation sends (with --message-bytes and --mpi-table: Hockney's
    /// t0 + n / bandwidth for each).
    #[cfg_attr(feature = "clap", arg(long, requires_all = ["message_bytes", "mpi_table"]))]
    pub messages: Option<f64>,
    /// Bytes of each message.
    #[cfg_attr(feature = "clap", arg(long, requires = "messages"))]
    pub message_bytes: Option<f64>,
    /// Point-to-point times to fit Hockney's model to: CSV with `bytes` and `t_avg_us`
    /// (`hpcscope bench mpi --format csv`, or an IMB table).
    #[cfg_attr(feature = "clap", arg(long, value_name = "CSV", requires = "messages"))]
    pub mpi_table: Option<PathBuf>,
    /// Benchmark rows of --mpi-table to fit (its `benchmark` column), e.g. sendrecv.
    #[cfg_attr(feature = "clap", arg(long, requires = "mpi_table"))]
    pub benchmark: Option<String>,
    /// Smallest message of --mpi-table in the fit, bytes (small messages follow the
    /// latency, not the bandwidth).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1024.0))]
    pub min_bytes: f64,
    /// I/O time of one invocation, s.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.0))]
    pub io_s: f64,
    /// Time of the rest of the program, s.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.0))]
    pub other_s: f64,
}

/// Runs `model compose`.
pub fn compose(o: &ComposeOptions) -> Result<Report<ComposeOutput>> {
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
    let t_c = match (o.compute_s, o.flops, o.gflops) {
        (Some(t), _, _) => nonneg("compute-s", t)?,
        (None, Some(f), Some(g)) => {
            let v = nonneg("flops", f)? / (positive("gflops", g)? * 1e9);
            how.push(("compute", format!("{f} FLOP / {g} GFLOP/s")));
            v
        }
        _ => 0.0,
    };
    let t_mem = match (o.memory_s, o.bytes, o.bandwidth_gbs) {
        (Some(t), _, _) => nonneg("memory-s", t)?,
        (None, Some(b), Some(bw)) => {
            let v = nonneg("bytes", b)? / (positive("bandwidth-gbs", bw)? * 1e9);
            how.push(("memory", format!("{b} B / {bw} GB/s")));
            v
        }
        _ => 0.0,
    };
    let mut hockney = None;
    let t_mpi = match (o.mpi_s, o.messages, o.message_bytes, &o.mpi_table) {
        (Some(t), ..) => nonneg("mpi-s", t)?,
        (None, Some(n), Some(b), Some(table)) => {
            let (h, used) = inputs::hockney_table(
                &read(table)?,
                &table.display().to_string(),
                o.benchmark.as_deref(),
                o.min_bytes,
            )?;
            let per = (h.t0 + nonneg("message-bytes", b)? * h.per_byte) * 1e-6;
            how.push((
                "MPI",
                format!(
                    "{n} messages x (t0 {} us + {b} B x {} us/B) = {n} x {} us; Hockney fit to {used} rows of {}",
                    hpcscope_report::fmt::num(h.t0, 4),
                    hpcscope_report::fmt::num(h.per_byte, 5),
                    hpcscope_report::fmt::num(per * 1e6, 6),
                    table.display()
                ),
            ));
            hockney = Some(h);
            nonneg("messages", n)? * per
        }
        _ => 0.0,
    };
    let c = compose_terms(
        nonneg("sigma", o.sigma)?,
        t_c,
        t_mem,
        t_mpi,
        nonneg("io-s", o.io_s)?,
        nonneg("other-s", o.other_s)?,
    );
    let out = ComposeOutput {
        composition: c,
        hockney_us: hockney,
    };
    let text = view::compose(&out, &how);
    Ok(Report::sorted(out, text))
}

/// `model decompose`: the weights of the time decomposition (eq. 3.2), and a projection.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct DecomposeOptions {
    /// Runs CSV: `ratio` (T/T_ref) and ref/run ratios per resource.
    pub runs: PathBuf,
    /// Project a configuration: NAME=RATIO,...
    #[cfg_attr(feature = "clap", arg(long))]
    pub project: Option<String>,
}

/// Runs `model decompose`.
pub fn decompose(o: &DecomposeOptions) -> Result<Report<DecomposeOutput>> {
    let (terms, x, y) = decomposition_from_csv(&read(&o.runs)?, &o.runs.display().to_string())?;
    let d = fit_decomposition(&terms, &x, &y)?;
    let mut projected = None;
    if let Some(p) = &o.project {
        let kv = inputs::pairs(p)?;
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
        projected = Some(hpcscope_models::pop::project_ratio(&d.alpha, &ratios));
    }
    let out = DecomposeOutput {
        decomposition: d,
        projected_ratio: projected,
    };
    let text = view::decompose(&out);
    Ok(Report::sorted(out, text))
}

/// What `model peak` analyses.
#[derive(Debug, Clone, PartialEq)]
pub enum PeakSource {
    /// A DAG in the assignment language (habakkuk-style).
    Dag(PathBuf),
    /// A binary's function's main loop.
    Loop {
        /// ELF binary.
        binary: PathBuf,
        /// Function symbol.
        function: String,
        /// Port model id or TOML file.
        ports: String,
        /// CPIs: JSON from `model fit` or `CLASS=CPI,...` (default: 1 for every class).
        cpi: Option<String>,
    },
}

/// `model peak`: theoretical single-core performance.
#[derive(Debug, Clone, PartialEq)]
pub struct PeakOptions {
    /// What to analyse.
    pub source: PeakSource,
    /// Clock, GHz.
    pub clock_ghz: f64,
}

/// Runs `model peak`.
pub fn peak(o: &PeakOptions) -> Result<Report<PeakOutput>> {
    let clock_ghz = o.clock_ghz;
    match &o.source {
        PeakSource::Dag(d) => {
            let mut cfg = DagConfig::habakkuk_ivybridge();
            cfg.clock_ghz = clock_ghz;
            let r = Dag::parse(&read(d)?, &d.display().to_string())?.analyze(&cfg)?;
            let text = view::peak_dag(&r);
            Ok(Report::plain(PeakOutput::Dag(r), text))
        }
        PeakSource::Loop {
            binary,
            function,
            ports,
            cpi,
        } => {
            let model = port_model(ports)?;
            let table = ClassTable::builtin(&model.isa)?;
            let rep = extract(binary, &Selector::Function(function.clone()), &table)?;
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
                clock_ghz,
            );
            let text = view::peak_loop(
                &p,
                &PeakLoop {
                    function,
                    start: l.start,
                    end: l.end,
                    flops_per_iter: l.flops_per_iter,
                    vector_bits: l.vector_bits,
                    binding_port: &a.binding_port,
                    clock_ghz,
                },
            );
            Ok(Report::plain(PeakOutput::Loop(p), text))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../models/tests/data")
            .join(name)
    }

    #[test]
    fn cpis_come_from_pairs_or_a_fit_file() {
        let c = parse_cpi("div=8,fp=1.5").unwrap();
        assert_eq!(c["DIV"], 8.0);
        assert_eq!(c["FP"], 1.5);
        let c = parse_cpi(data("cpi_a.json").to_str().unwrap()).unwrap();
        assert!(!c.is_empty());
    }

    #[test]
    fn compose_refuses_negative_terms_and_sums_the_given_ones() {
        let e = compose(&ComposeOptions {
            sigma: 1.0,
            compute_s: Some(-1.0),
            ..ComposeOptions::default()
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "--compute-s -1: give a number >= 0");
        let r = compose(&ComposeOptions {
            sigma: 2.0,
            compute_s: Some(1.0),
            memory_s: Some(0.5),
            other_s: 1.0,
            ..ComposeOptions::default()
        })
        .unwrap();
        assert!((r.output.composition.total_s - 4.0).abs() < 1e-12);
        assert_eq!(r.view.table.rows.len(), 7);
    }

    #[test]
    fn decompose_names_the_missing_term_of_a_projection() {
        let e = decompose(&DecomposeOptions {
            runs: data("decomposition.csv"),
            project: Some("nothing=1".into()),
        })
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--project lacks '"), "{e}");
    }

    #[test]
    fn predict_needs_a_target() {
        let e = predict(&PredictOptions {
            variants: data("variants_native.csv"),
            cpi: data("cpi_a.json").display().to_string(),
            proxy: "nope".into(),
            targets: Vec::new(),
            ports: "skylake".into(),
            rc: None,
            clock_ghz: None,
            iters: None,
            scheduler: Scheduler::Waterfill,
            validate: false,
        })
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("no row named 'nope' in '"), "{e}");
    }
}
