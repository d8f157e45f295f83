//! The text views of the models' results, as `hpcscope model` prints them: the lines before
//! a table, the table, the lines after it ([`View`]), rendered beside the JSON shape of
//! [`crate::output`] in any of the report kit's formats ([`Report::render`]).
//!
//! Every view is a pure function of a result (and of the few facts about how it was
//! obtained that the result does not hold: the proxy's measured cycles, the reference file).

use hpcscope_report::fmt::num;
use hpcscope_report::{Format, Table};
use serde::Serialize;

use crate::difference::Validation;
use crate::fit::CpiFit;
use crate::kernel::{ByInstructions, KernelReport, Spills};
use crate::laws::{LawPrediction, Mode, Selection};
use crate::output::{ComposeOutput, DecomposeOutput, PopOutput, PredictTarget, SimilarityOutput};
use crate::peak::{DagReport, LoopPeak};
use crate::pop::Composition;
use crate::strong::{BspRun, ErrorStats, ScalingPrediction};

/// A result as text: the lines before the table, the table, the lines after it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct View {
    /// Lines before the table (text and Markdown).
    pub preamble: Vec<String>,
    /// The table (text, Markdown and CSV).
    pub table: Table,
    /// Lines after the table (text and Markdown).
    pub epilogue: Vec<String>,
}

/// A result and its view, ready to print in any format.
#[derive(Debug, Clone)]
pub struct Report<T> {
    /// The result: what JSON prints.
    pub output: T,
    /// Its text view.
    pub view: View,
    /// Whether JSON prints the result with the keys of every object sorted (as these
    /// outputs have always been printed) rather than in declaration order.
    pub sorted: bool,
}

impl<T: Serialize> Report<T> {
    /// A report whose JSON is `output` as declared.
    pub fn plain(output: T, view: View) -> Report<T> {
        Report {
            output,
            view,
            sorted: false,
        }
    }

    /// A report whose JSON is `output` with the keys of every object sorted.
    pub fn sorted(output: T, view: View) -> Report<T> {
        Report {
            output,
            view,
            sorted: true,
        }
    }

    /// The report in `format` (see [`hpcscope_report::render`]).
    pub fn render(&self, format: Format) -> Result<String, serde_json::Error> {
        let v = &self.view;
        if self.sorted {
            let value = serde_json::to_value(&self.output)?;
            hpcscope_report::render(format, &value, &v.preamble, &v.table, &v.epilogue)
        } else {
            hpcscope_report::render(format, &self.output, &v.preamble, &v.table, &v.epilogue)
        }
    }
}

fn dash(v: Option<f64>, digits: usize) -> String {
    v.map(|v| num(v, digits)).unwrap_or_else(|| "-".into())
}

/// `model fit`: the fitted CPIs, the fit's quality and each variant's residual.
pub fn fit(fit: &CpiFit) -> View {
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
    let post = fit
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
    View {
        preamble: pre,
        table: t,
        epilogue: post,
    }
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

/// The line that names the proxy, its measured cycles and the port model.
fn proxy_line(proxy: &str, c_proxy: f64, port_model: &str) -> String {
    format!(
        "proxy '{proxy}': measured {} cycles per iteration; port model '{port_model}'",
        num(c_proxy, 5)
    )
}

/// `model predict --validate`: each model's signed error per variant and the statistics
/// over the variants (Tables 5.2 and 5.3). `rc_given`: whether the constant-R_c baseline
/// was asked for; `not_compared`: rows asked for without measured cycles.
pub fn predict_validation(
    v: &Validation,
    proxy: &str,
    c_proxy: f64,
    port_model: &str,
    rc_given: bool,
    not_compared: &[String],
) -> View {
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
        ("mean", (|s: &ErrorStats| s.mean_pct) as fn(&_) -> f64),
        ("SD", |s| s.sd_pct),
        ("max", |s| s.max_pct),
    ] {
        let mut row = vec![stat.to_string(), String::new()];
        row.extend(v.models.iter().map(|m| num(f(&m.stats), 3)));
        t.row(row);
    }
    let mut pre = vec![proxy_line(proxy, c_proxy, port_model)];
    if !rc_given {
        pre.push("constant R_c baseline: give --rc to include it".into());
    }
    let post = not_compared
        .iter()
        .map(|n| format!("'{n}' has no measured cycles_per_iter: not compared"))
        .collect();
    View {
        preamble: pre,
        table: t,
        epilogue: post,
    }
}

/// `model predict`: each target's prediction by the difference model and its baselines.
pub fn predict_targets(
    targets: &[PredictTarget],
    proxy: &str,
    c_proxy: f64,
    port_model: &str,
) -> View {
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
    for p in targets {
        let c = &p.comparison;
        t.row(vec![
            p.target.clone(),
            num(c.final_model.c_target, 5),
            num(c.final_model.delta_c, 5),
            num(c.v1, 5),
            num(c.v2, 5),
            num(c.equal_ipc, 5),
            dash(c.constant_rc, 5),
            dash(p.measured_cycles_per_iter, 5),
            dash(p.time_s, 5),
        ]);
    }
    View {
        preamble: vec![proxy_line(proxy, c_proxy, port_model)],
        table: t,
        epilogue: Vec::new(),
    }
}

/// `model strong`: the prediction at each thread count and, when measured runtimes were
/// given, each one's runtime and error (`actual`: one entry per point, `None` where no
/// runtime was measured at its thread count) and the statistics over them. `preamble`: the
/// lines before the table (the measurement's).
pub fn strong(
    s: &ScalingPrediction,
    actual: Option<&[Option<(f64, f64)>]>,
    stats: Option<&ErrorStats>,
    preamble: Vec<String>,
) -> View {
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
    let mut unmatched = Vec::new();
    for (i, p) in s.points.iter().enumerate() {
        let mut row = vec![
            p.threads.to_string(),
            num(p.clock_hz / 1e9, 4),
            num(p.stall_cycles, 4),
            num(p.compute_s, 5),
            num(p.memory_s, 5),
            num(p.predicted_s, 5),
            if p.memory_bound { "memory" } else { "compute" }.into(),
        ];
        if let Some(a) = actual {
            match a.get(i).copied().flatten() {
                Some((v, e)) => row.extend([num(v, 5), num(e, 3)]),
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
    if let Some(st) = stats {
        post.push(format!(
            "|error| over {} thread counts (Table 5.3): mean {} %, SD {} %, max {} %; mean signed {} %",
            st.n,
            num(st.mean_pct, 3),
            num(st.sd_pct, 3),
            num(st.max_pct, 3),
            num(st.mean_signed_pct, 3)
        ));
    }
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
    View {
        preamble,
        table: t,
        epilogue: post,
    }
}

/// `model strong --partition`: the BSP model at each rank count (eqs. 3.1 and 3.2) with
/// eq. 5.13's error where measured. `preamble`: the lines before the table.
pub fn bsp(runs: &[BspRun], stats: Option<&ErrorStats>, preamble: Vec<String>) -> View {
    let mut t = Table::new(&[
        "ranks",
        "clock_ghz",
        "grind_ns",
        "bound",
        "levels",
        "total_s",
        "error_pct (eq. 5.13)",
    ]);
    for r in runs {
        t.row(vec![
            r.ranks.to_string(),
            num(r.clock_hz / 1e9, 4),
            num(r.grind_s * 1e9, 4),
            if r.memory_bound { "memory" } else { "compute" }.into(),
            r.levels.len().to_string(),
            num(r.total_s, 5),
            dash(r.error_pct, 3),
        ]);
    }
    let mut post = Vec::new();
    if let Some(st) = stats {
        post.push(format!(
            "eq. 5.13 error over {} rank counts (Table 5.3): mean {} %, SD {} %, max {} %",
            st.n,
            num(st.mean_pct, 3),
            num(st.sd_pct, 3),
            num(st.max_pct, 3)
        ));
    }
    for r in runs.iter().filter(|r| r.cells_without_actual > 0) {
        post.push(format!(
            "{} ranks: {} rank/level cell(s) without actual_s are not in the error",
            r.ranks, r.cells_without_actual
        ));
    }
    View {
        preamble,
        table: t,
        epilogue: post,
    }
}

/// `model similarity`: each counter of the kernel beside the parent's, and the IPC-ratio
/// invariance when the inputs count instructions and cycles.
pub fn similarity(out: &SimilarityOutput) -> View {
    let (a, b, sim) = (&out.kernel, &out.parent, &out.similarity);
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
    match &out.ipc {
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
                Some(true) => format!(
                    "IPC ratio invariant: every environment within {} % of the mean {}",
                    i.tolerance_pct,
                    num(i.mean_ratio, 4)
                ),
                Some(false) => format!(
                    "IPC ratio NOT invariant: {} % from the mean {} (tolerance {} %): the kernel's runtime cannot stand for the parent's without a model",
                    num(i.max_deviation_pct, 3),
                    num(i.mean_ratio, 4),
                    i.tolerance_pct
                ),
                None => "IPC-ratio invariance needs two environments at least: add --also KERNEL,PARENT".into(),
            });
        }
        None => post.push(
            "IPC ratio: not available, the inputs do not count both instructions and cycles".into(),
        ),
    }
    View {
        preamble: pre,
        table: t,
        epilogue: post,
    }
}

/// `model scaling`: every law's fit, the chosen one marked, and the predictions. `runs`:
/// the number of runs fitted.
pub fn scaling(sel: &Selection, predictions: &[LawPrediction], runs: usize, mode: Mode) -> View {
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
    let post = predictions
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
    View {
        preamble: vec![format!("{runs} runs, {mode:?} scaling")],
        table: t,
        epilogue: post,
    }
}

/// `model pop`: the POP efficiencies with their equations. `notes`: the lines said first
/// after the table (what the reference lacks).
pub fn pop(out: &PopOutput, notes: Vec<String>) -> View {
    let (m, factors) = (&out.pop, &out.factors);
    let mut post = notes;
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
    if let Some(f) = factors {
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
    if let Some(h) = &out.hybrid {
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
    View {
        preamble: vec![format!(
            "{} processes, runtime {} s",
            m.n,
            num(m.runtime_s, 5)
        )],
        table: t,
        epilogue: post,
    }
}

/// `model compose`: each term of eq. 3.3 and where it came from. `how`: (term, how it was
/// computed) for the terms not given in seconds (`compute`, `memory`, `MPI`).
pub fn compose(out: &ComposeOutput, how: &[(&str, String)]) -> View {
    let c: &Composition = &out.composition;
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
    View {
        preamble: vec![
            "eq. 3.3: T = sigma T_kernel + T_other, T_kernel = T_c + T_mem + T_MPI + T_IO"
                .to_string(),
        ],
        table: t,
        epilogue: Vec::new(),
    }
}

/// `model decompose`: the fitted weights, the fit's quality and the projection.
pub fn decompose(out: &DecomposeOutput) -> View {
    let d = &out.decomposition;
    let mut t = Table::new(&["term", "alpha"]);
    for (k, a) in d.terms.iter().zip(&d.alpha) {
        t.row(vec![k.clone(), num(*a, 5)]);
    }
    let mut post = vec![format!(
        "sum of alpha {}, R2 {}",
        num(d.alpha_sum, 5),
        num(d.r2, 6)
    )];
    if let Some(v) = out.projected_ratio {
        post.push(format!("projected T/T_ref = {}", num(v, 6)));
    }
    View {
        preamble: Vec::new(),
        table: t,
        epilogue: post,
    }
}

/// `model peak --dag`: the four estimates of the DAG's performance.
pub fn peak_dag(r: &DagReport) -> View {
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
    View {
        preamble: vec![format!(
            "{} FLOPs, {} array references, naive FLOPs/byte {}; critical path {} nodes, {} FLOPs; at {} GHz",
            r.flops,
            r.array_refs,
            num(r.naive_flops_per_byte, 4),
            r.critical_path_nodes,
            r.critical_path_flops,
            r.clock_ghz
        )],
        table: t,
        epilogue: Vec::new(),
    }
}

/// The loop `model peak --binary` analysed: where it is and what it does per iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeakLoop<'a> {
    /// The function.
    pub function: &'a str,
    /// Start address of the loop.
    pub start: u64,
    /// End address of the loop.
    pub end: u64,
    /// FLOPs per iteration.
    pub flops_per_iter: f64,
    /// Vector width, bits.
    pub vector_bits: u32,
    /// The busiest port of the allocation.
    pub binding_port: &'a str,
    /// Clock, GHz.
    pub clock_ghz: f64,
}

/// `model peak --binary`: the busiest port's bound and the loop-carried critical path's.
pub fn peak_loop(p: &LoopPeak, l: &PeakLoop) -> View {
    let clock_ghz = l.clock_ghz;
    let mut t = Table::new(&["bound", "cycles_per_iter", "flops_per_cycle", "gflops"]);
    t.row(vec![
        format!("busiest port ({})", l.binding_port),
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
    View {
        preamble: vec![format!(
            "{}: loop {:#x}..{:#x}, {} FLOPs per iteration, {}-bit vectors",
            l.function, l.start, l.end, l.flops_per_iter, l.vector_bits
        )],
        table: t,
        epilogue: vec![format!(
            "peak {} GFLOP/s at {} GHz",
            num(p.gflops, 5),
            clock_ghz
        )],
    }
}

/// What `model kernel --hottest` sampled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampled<'a> {
    /// Samples in all.
    pub total: u64,
    /// (function, samples), most first.
    pub functions: &'a [(String, u64)],
    /// The innermost loop with the most samples (start, end, samples), if any sample fell
    /// in one.
    pub hottest_loop: Option<(u64, u64, u64)>,
}

/// How `model kernel` chose its main loop and counted its spills.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelPicks<'a> {
    /// The sampling of `--hottest`.
    pub sampled: Option<Sampled<'a>>,
    /// The main loop before `--ins-per-iter` (the hottest sampled, else the static choice).
    pub hottest_main: Option<u64>,
    /// The loop chosen by `--ins-per-iter`.
    pub by_instructions: Option<&'a ByInstructions>,
    /// The main loop.
    pub main: Option<u64>,
    /// The main loop's start and its spills (`--min-loads`/`--min-stores`).
    pub spills: Option<(u64, &'a Spills)>,
    /// Show every loop, not only the innermost ones.
    pub all: bool,
    /// Print each loop's disassembly.
    pub listing: bool,
}

/// `model kernel`: the function's loops by class, the main loop marked, with how it was
/// chosen, its spills and (on request) each loop's listing.
pub fn kernel(rep: &KernelReport, k: &KernelPicks) -> View {
    let mut pre = vec![format!(
        "{} in {} ({}), {:#x}..{:#x}",
        rep.function,
        rep.binary.display(),
        rep.isa,
        rep.start,
        rep.end
    )];
    if let Some(h) = &k.sampled {
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
        pre.push(match h.hottest_loop {
            Some((start, end, n)) => format!(
                "hottest innermost loop: {start:#x}..{end:#x} with {:.1} % of all samples",
                pct(n)
            ),
            None => format!(
                "no sample fell in an innermost loop of {}: its time is outside loops; the main loop below is chosen statically",
                rep.function
            ),
        });
    }
    if let Some(b) = k.by_instructions {
        let hot = k.sampled.is_some();
        pre.push(format!(
            "by measured instructions per iteration ({}): loop {:#x} with {} instructions ({} %{}){}",
            num(b.measured, 5),
            b.start,
            b.instructions,
            num(b.mismatch_pct, 3),
            b.runner_up_pct
                .map(|r| format!(", next candidate {} %", num(r, 3)))
                .unwrap_or_default(),
            match k.hottest_main {
                Some(m) if hot && m != b.start => format!(
                    "; the hottest sampled loop is {m:#x}: they differ, check the iteration count"
                ),
                Some(m) if hot => format!("; it is the hottest sampled loop {m:#x} too"),
                _ => String::new(),
            }
        ));
    }
    if let Some((start, sp)) = k.spills {
        pre.push(format!(
            "spills of loop {:#x} (section 5.3): {} loads - minimum {} = {} spill loads; {} stores - minimum {} = {} spill stores",
            start,
            num(sp.loads, 4),
            num(sp.min_loads, 4),
            num(sp.spill_loads, 4),
            num(sp.stores, 4),
            num(sp.min_stores, 4),
            num(sp.spill_stores, 4)
        ));
    }
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
    for l in rep.loops.iter().filter(|l| k.all || l.innermost) {
        let spilled = k
            .spills
            .filter(|(a, _)| *a == l.start)
            .map(|(_, sp)| crate::kernel::with_spills(&l.counts, sp));
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
            if Some(l.start) == k.main {
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
        if k.listing {
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
    if k.spills.is_some() {
        post.push(
            "the main loop's LOAD and STORE counts above are spills (beyond the minimum), as the difference model takes them".into(),
        );
    }
    View {
        preamble: pre,
        table: t,
        epilogue: post,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::DecomposeOutput;
    use crate::pop::Decomposition;

    fn decomposition() -> DecomposeOutput {
        DecomposeOutput {
            decomposition: Decomposition {
                terms: vec!["NB".into(), "f".into()],
                alpha: vec![0.25, 0.75],
                alpha_sum: 1.0,
                residuals: Vec::new(),
                r2: 0.5,
            },
            projected_ratio: Some(1.5),
        }
    }

    #[test]
    fn decompose_view_lists_the_weights_and_the_projection() {
        let v = decompose(&decomposition());
        assert!(v.preamble.is_empty());
        assert_eq!(v.table.headers, vec!["term", "alpha"]);
        assert_eq!(v.table.rows.len(), 2);
        assert_eq!(v.table.rows[0][0], "NB");
        assert_eq!(v.epilogue.len(), 2);
        assert!(v.epilogue[1].starts_with("projected T/T_ref = "), "{v:?}");
    }

    #[test]
    fn reports_render_json_sorted_or_as_declared() {
        #[derive(Serialize)]
        struct Out {
            b: u32,
            a: u32,
        }
        let plain = Report::plain(Out { b: 1, a: 2 }, View::default());
        let json = plain.render(Format::Json).unwrap();
        assert!(
            json.find("\"b\"").unwrap() < json.find("\"a\"").unwrap(),
            "{json}"
        );
        let sorted = Report::sorted(Out { b: 1, a: 2 }, View::default());
        let json = sorted.render(Format::Json).unwrap();
        assert!(
            json.find("\"a\"").unwrap() < json.find("\"b\"").unwrap(),
            "{json}"
        );
        let text = Report::plain(0, decompose(&decomposition()))
            .render(Format::Table)
            .unwrap();
        assert!(text.contains("sum of alpha"), "{text}");
    }

    #[test]
    fn the_validation_table_labels_each_model_and_says_what_is_missing() {
        assert_eq!(model_label("difference"), "difference (eq. 5.11)");
        assert_eq!(model_label("constant_rc"), "constant R_c");
        assert_eq!(model_label("?"), "model");
        let v = predict_targets(&[], "p", 170.0, "skylake");
        assert_eq!(
            v.preamble,
            vec![
                "proxy 'p': measured 170.00 cycles per iteration; port model 'skylake'".to_string()
            ]
        );
    }
}
