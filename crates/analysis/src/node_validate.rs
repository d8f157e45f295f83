//! The node projection checked on this machine: the OpenMP workloads projected from one
//! thread to several (the same binary; the source is one core alone, the target the
//! threads on the per-core shares of the loaded node, eq. 7.1) and from the SSE2 to the
//! AVX2 build (and back) at that thread count, each against the measured run.
//!
//! Measured performance is the region's FLOPs over its time: the longest per-thread CPU
//! time in the parallel region (CPU-clock sampling per thread id), which a loaded host
//! does not stretch the way it stretches wall time.
//!
//! The interval has the core scope's width components: the model's points (with the
//! carried-time ones), the calibrated margin, and the source's run-to-run band (the spread
//! of its timed native runs), so a projection whose model points coincide is not printed as
//! a point when its source was noisy. Each pair keeps the model's interval and how the width
//! splits into those parts, and the calibrated point estimate inside the interval, as the
//! core scope's pairs do.
//!
//! The measurement is checked as the core scope checks it ([`Projection::validate`]): the
//! band of the target's timed runs against the interval (the headline, comparable with the
//! core scope's inside fraction), and its median alone against the interval (the strict
//! check, kept beside it).

use std::path::Path;

use anyhow::{Context, Result};
use hpcscope_core::node::cores_alone;
use hpcscope_core::point::{Calibration, PointEstimate};
use hpcscope_core::project::{
    Inputs, Interval, Options, Projection, Side, Spread, Validation, Widening, project_with,
};
use hpcscope_core::roofline::{AccessWidths, Scope};
use hpcscope_core::view::ValidationRow;
use hpcscope_core::{AppMetrics, Precision};
use hpcscope_core::{Machine, Profile};
use hpcscope_mix::MixOptions;
use hpcscope_report::fmt::num;
use hpcscope_report::{Section, html_table};
use serde::Serialize;

use crate::workloads::{Builds, Workload};

/// One node validation pair.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct NodePair {
    /// Workload.
    pub workload: String,
    /// `1 -> 2 threads (SSE2)`, `SSE2 -> AVX2 (2 threads)`...
    pub pair: String,
    /// Threads of the source and target runs.
    pub source_threads: usize,
    /// Threads of the target run.
    pub target_threads: usize,
    /// Measured GFLOP/s of the source run.
    pub source_gflops: f64,
    /// Projected interval, GFLOP/s: the model's interval widened by the calibrated margin
    /// and the source's run-to-run band.
    pub interval: Interval,
    /// The model's interval, GFLOP/s: its points with their carried-time values, before
    /// the margin and the band.
    pub model_interval: Interval,
    /// How the interval's width splits into the model's, the calibrated margin's and the
    /// source band's (`interval` = [model lo x band low / (1 + margin), model hi x band high
    /// x (1 + margin)]); absent when neither a margin nor a band widened it (the width is
    /// then the model's alone).
    pub widening: Option<Widening>,
    /// The calibrated point estimate, inside the model's interval (absent without a
    /// calibration or where its rule has no value).
    pub point: Option<PointEstimate>,
    /// The point estimate's error against the measurement: (point - measured) / measured.
    pub point_error: Option<f64>,
    /// Measured GFLOP/s of the target run (its median) and how it compares, as the core
    /// scope's pairs do: `inside_within_noise` when the band of the target's runs meets the
    /// interval (the headline); `check` the median alone against the interval (strict).
    pub validation: Validation,
    /// Interval width over the measurement: (hi - lo) / measured.
    pub width: f64,
    /// Distance of the interval's midpoint from the measurement: |(lo + hi)/2 - m| / m.
    pub midpoint_error: f64,
}

/// The node validation summary.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct NodeSummary {
    /// Pairs evaluated.
    pub pairs: usize,
    /// Fraction whose measurement, with the band of the target's runs, meets the interval
    /// (which carries the source's band): what the core scope's `inside_fraction` counts.
    pub inside_fraction: f64,
    /// Fraction whose median measurement alone is inside the interval (the strict check).
    pub inside_fraction_strict: f64,
    /// Median of (hi - lo) / measured.
    pub median_width: f64,
    /// Median of |midpoint - measured| / measured.
    pub median_midpoint_error: f64,
    /// Pairs with a point estimate.
    pub point_pairs: usize,
    /// Median of |point - measured| / measured over the pairs with a point estimate.
    pub median_point_error: Option<f64>,
    /// Largest |point - measured| / measured.
    pub max_point_error: Option<f64>,
    /// Median error of the interval's nearest bound against the median measurement (0
    /// inside; the strict check's).
    pub median_error: f64,
    /// Largest error of the nearest bound against the median measurement.
    pub max_error: f64,
}

/// A characterized run: its profile and the spread of its timed native runs.
#[derive(Debug, Clone)]
pub struct Threaded {
    /// The profile.
    pub profile: Profile,
    /// Run-to-run spread of the native runs (`None` with fewer than two).
    pub spread: Option<Spread>,
    /// How its bytes and FP instructions split by width, with its divides and its loops'
    /// dependency chains ([`crate::validate::access_widths`]): the ceilings at its own
    /// widths, as at core scope (`None`: the machine's widest peak, as the seeds).
    pub widths: Option<AccessWidths>,
}

/// Characterizes `bin`'s parallel region on `m` with `threads` threads.
pub fn profile_threads(
    m: &Machine,
    w: &Workload,
    bin: &Path,
    threads: u32,
    native_runs: u32,
) -> Result<Threaded> {
    let args: Vec<String> = w.args.iter().map(|s| s.to_string()).collect();
    profile_program(
        m,
        (w.name, bin, &args),
        (Some(&w.region()), false),
        threads,
        native_runs,
    )
}

/// Characterizes program `(name, bin, args)` (its function `function`, with its callees when
/// `scope`, or the whole program) on `m` with `threads` threads (`OMP_NUM_THREADS`), timed by
/// `native_runs` native runs.
pub fn profile_program(
    m: &Machine,
    (name, bin, args): (&str, &Path, &[String]),
    (function, scope): (Option<&str>, bool),
    threads: u32,
    native_runs: u32,
) -> Result<Threaded> {
    let r = hpcscope_mix::analyze(&MixOptions {
        run: hpcscope_mix::RunSpec {
            program: bin.to_path_buf(),
            args: args.to_vec(),
            functions: function
                .iter()
                .filter(|_| !scope)
                .map(|f| f.to_string())
                .collect(),
            scope: function
                .iter()
                .filter(|_| scope)
                .map(|f| f.to_string())
                .collect(),
            threads: Some(threads),
            ..Default::default()
        },
        machines: vec![m.clone()],
        native_runs,
        application: Some(name.to_string()),
        ..Default::default()
    })
    .with_context(|| format!("characterizing {name} with {threads} threads"))?;
    Ok(Threaded {
        profile: r.variants[0].profiles[0].clone(),
        spread: Spread::from_times(&r.native_times_s),
        widths: Some(crate::validate::access_widths(&r, 0)),
    })
}

/// What a node projection takes beside the threads' metrics: each side's split by width
/// (the ceilings at the binaries' own widths, with the divider and the dependency chains,
/// when both sides have one; the widest peak otherwise) and each side's instructions (the
/// carried-rate points, when both counted them).
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeSides<'a> {
    /// Source's and target's split by width.
    pub widths: (Option<&'a AccessWidths>, Option<&'a AccessWidths>),
    /// Source's and target's instructions.
    pub instructions: Option<(f64, f64)>,
}

/// The node projection of `from` (on `src_machine`, `source_gflops` measured, `spread` its
/// run-to-run spread) onto `to` (on `m`), with the width components of the core scope:
/// carried-time points, the calibrated margin of `calibration` and the source's band.
#[allow(clippy::too_many_arguments)]
pub fn node_projection(
    src_machine: &Machine,
    from: &[AppMetrics],
    source_gflops: f64,
    spread: Option<Spread>,
    m: &Machine,
    to: &[AppMetrics],
    precision: Precision,
    calibration: Option<&Calibration>,
    origins: (&str, &str),
    sides: NodeSides<'_>,
) -> Result<Projection> {
    let widths = match sides.widths {
        (Some(a), Some(b)) => (Some(a.clone()), Some(b.clone())),
        _ => (None, None),
    };
    let mut p = project_with(
        Side {
            machine: src_machine,
            threads: from,
            origin: origins.0,
        },
        source_gflops,
        Side {
            machine: m,
            threads: to,
            origin: origins.1,
        },
        precision,
        Options {
            scope: Scope::Node,
            ..Options::default()
        },
        &Inputs {
            source_widths: widths.0,
            target_widths: widths.1,
            source_spread: spread,
            calibration,
            carried_time: true,
            instructions: sides.instructions,
            ..Inputs::default()
        },
    )?;
    // One machine, other thread counts: the error of thread-count pairs, if any were measured.
    if let Some(c) = calibration
        && from.len() != to.len()
        && hpcscope_core::project::machine_change(src_machine, m)
            == hpcscope_core::point::ChangeKind::Builds
    {
        p.restate_change(c, hpcscope_core::point::ChangeKind::ThreadCount);
    }
    Ok(p)
}

/// Projects `from` (on `src_machine`) to `to` (on `m`) at node scope and checks against
/// `to`'s measured performance with the spread of its runs; `None` when a side has no time.
pub fn node_pair(
    src_machine: &Machine,
    m: &Machine,
    w: &str,
    pair: &str,
    from: &Threaded,
    to: &Threaded,
    calibration: Option<&Calibration>,
) -> Result<Option<NodePair>> {
    let spread = from.spread;
    let (from_widths, to_widths) = (&from.widths, &to.widths);
    let from = &from.profile;
    let (to, to_spread) = (&to.profile, to.spread);
    let fo = format!("{w} ({pair}, source)");
    let to_o = format!("{w} ({pair}, target)");
    let fa = from.regions[0].aggregate(&fo)?;
    let ta = to.regions[0].aggregate(&to_o)?;
    let (Some(fg), Some(tg)) = (fa.gflops(), ta.gflops()) else {
        return Ok(None);
    };
    // The node's cores take the working threads: a main thread that only waits for its
    // workers takes none (validate_node_builds notes it). The rates stay every thread's.
    let ft = from.regions[0].working_thread_metrics(&fo)?.0;
    let tt = to.regions[0].working_thread_metrics(&to_o)?.0;
    let p = node_projection(
        src_machine,
        &ft,
        fg,
        spread,
        m,
        &tt,
        from.precision,
        calibration,
        (&fo, &to_o),
        NodeSides {
            widths: (from_widths.as_ref(), to_widths.as_ref()),
            instructions: from.regions[0]
                .instructions()
                .zip(to.regions[0].instructions()),
        },
    )?;
    Ok(Some(pair_result(
        w,
        pair,
        (ft.len(), tt.len()),
        fg,
        (tg, to_spread),
        &p,
    )))
}

/// The node pair of projection `p` (`threads` source and target threads, `source_gflops`
/// the source run's GFLOP/s, `measured` the target's and the spread of its runs).
fn pair_result(
    w: &str,
    pair: &str,
    threads: (usize, usize),
    source_gflops: f64,
    (measured, spread): (f64, Option<Spread>),
    p: &Projection,
) -> NodePair {
    let i = p.interval;
    let point = p.point.clone();
    NodePair {
        workload: w.to_string(),
        pair: pair.to_string(),
        source_threads: threads.0,
        target_threads: threads.1,
        source_gflops,
        interval: i,
        model_interval: p.widening.map_or(i, |w| w.model_interval),
        widening: p.widening,
        point_error: point.as_ref().map(|e| (e.gflops - measured) / measured),
        point,
        validation: p.validate(measured, spread),
        width: (i.hi - i.lo) / measured,
        midpoint_error: ((i.lo + i.hi) / 2.0 - measured).abs() / measured,
    }
}

/// Warnings about node values that cannot be what the machine's cores sustain together: a
/// node peak, or a private cache's node bandwidth, below one core's (measured while the
/// machine was busy with other work?). The per-core shares (eq. 7.1) are then too low, and
/// so is every node projection onto or from this machine.
pub fn node_values_check(m: &Machine) -> Vec<String> {
    let mut out = Vec::new();
    for p in &m.peaks {
        if let (Some(c), Some(n)) = (p.core_gflops, p.node_gflops)
            && m.cores() > 1
            && n < c
        {
            out.push(format!(
                "{}: the {} node peak ({n} GFLOP/s on {} cores) is below one core's ({c}): it was probably measured while the machine was busy; the per-core share (eq. 7.1) is {:.3} of a core alone, and node projections from and onto it are that much too low (measure again on a quiet machine: hpcscope bench --quick)",
                m.id,
                p.precision,
                m.cores(),
                n / f64::from(m.cores()) / c
            ));
        }
    }
    for l in &m.levels {
        let private = l
            .cache
            .as_ref()
            .is_some_and(|g| g.shared_by_cores.unwrap_or(1) <= 1);
        if let (true, Some(c), Some(n)) = (private, l.core_gbs, l.node_gbs)
            && m.cores() > 1
            && n < c
        {
            out.push(format!(
                "{}: the node bandwidth of the private {} ({n} GB/s) is below one core's ({c}): probably measured while the machine was busy",
                m.id, l.name
            ));
        }
    }
    out
}

/// The node pairs of a user's builds (`validate --build ... --threads N`): each build from
/// one thread to `threads`, and every ordered pair of builds at `threads`; the program
/// (`args`, `function` or the whole program) characterized and timed by `mix` at each
/// thread count.
#[allow(clippy::too_many_arguments)]
pub fn validate_node_builds(
    m: &Machine,
    builds: &[crate::validate::Build],
    args: &[String],
    function: (Option<&str>, bool),
    threads: u32,
    native_runs: u32,
    calibration: Option<&Calibration>,
    progress: &dyn Fn(&str),
) -> Result<(Vec<NodePair>, Vec<String>)> {
    let alone = cores_alone(m);
    let name = builds
        .first()
        .and_then(|b| b.path.file_name())
        .map_or("program".into(), |f| f.to_string_lossy().into_owned());
    let mut one = Vec::new();
    let mut many = Vec::new();
    for b in builds {
        progress(&format!(
            "{name} ({}): characterize and time at node scope, 1 and {threads} threads",
            b.label
        ));
        let prog = (name.as_str(), b.path.as_path(), args);
        one.push(profile_program(m, prog, function, 1, native_runs)?);
        many.push(profile_program(m, prog, function, threads, native_runs)?);
    }
    // Threads that only wait for the others (a main thread joining its workers) take no
    // core in the node pairs: said once per build and thread count.
    let mut waiting_notes = Vec::new();
    // A build whose run with OMP_NUM_THREADS=1 still has several working threads does not
    // follow it (pthreads, std::thread): its 1 -> N pair would compare like with like.
    let mut ignores = vec![false; builds.len()];
    for (i, (b, (a, n))) in builds.iter().zip(one.iter().zip(&many)).enumerate() {
        for (t, run) in [(1, a), (threads, n)] {
            let origin = format!("{name} ({}, OMP_NUM_THREADS={t})", b.label);
            let region = &run.profile.regions[0];
            let (working, waiting) = region.working_thread_metrics(&origin)?;
            if !waiting.is_empty() {
                let said = region.waiting_threads_said(&origin, &waiting)?;
                let n = working.len();
                waiting_notes.push(format!(
                    "{origin}: {said}: the node pairs take its {n} working thread{}, one per core (the rate is still the whole run's)",
                    if n > 1 { "s" } else { "" }
                ));
            }
            if t == 1 && working.len() > 1 {
                ignores[i] = true;
                waiting_notes.push(format!(
                    "{origin}: {} threads worked although OMP_NUM_THREADS was 1 (the program starts its own threads: pthreads, std::thread): its 1 -> {threads} threads pair is left out, the pairs between builds at {threads} threads are kept",
                    working.len()
                ));
            }
        }
    }
    let (mut out, mut untimed) = (Vec::new(), Vec::new());
    let mut add = |source: &Machine, pair: String, from: &Threaded, to: &Threaded| {
        match node_pair(source, m, &name, &pair, from, to, calibration)? {
            Some(p) => out.push(p),
            None => untimed.push(pair),
        }
        anyhow::Ok(())
    };
    for (i, b) in builds.iter().enumerate().filter(|(i, _)| !ignores[*i]) {
        add(
            &alone,
            format!("1 -> {threads} threads ({})", b.label),
            &one[i],
            &many[i],
        )?;
    }
    for (i, s) in builds.iter().enumerate() {
        for (j, t) in builds.iter().enumerate().filter(|(j, _)| *j != i) {
            add(
                m,
                format!("{} -> {} ({threads} threads)", s.label, t.label),
                &many[i],
                &many[j],
            )?;
        }
    }
    // Said, not dropped: a pair whose runs have no time is not projected.
    let notes = waiting_notes
        .into_iter()
        .chain(untimed
        .into_iter()
        .map(|p| format!("{name} {p}: no measured time on one side (see the profiles' notes): this node pair is left out")))
        .collect();
    Ok((out, notes))
}

/// Runs the node validation over the OpenMP workloads `ws` with `threads` threads; the
/// intervals are widened by `calibration`'s margin and each source's run-to-run spread.
pub fn validate_node(
    m: &Machine,
    ws: &[&Workload],
    builds: &[Builds],
    threads: u32,
    native_runs: u32,
    calibration: Option<&Calibration>,
    progress: &dyn Fn(&str),
) -> Result<Vec<NodePair>> {
    let alone = cores_alone(m);
    let mut out = Vec::new();
    for (w, b) in ws.iter().zip(builds) {
        let (Some(s), Some(a)) = (&b.sse2, &b.avx2) else {
            continue;
        };
        progress(&format!(
            "validate {} at node scope: 1 and {threads} threads, SSE2 and AVX2 builds",
            w.name
        ));
        let s1 = profile_threads(m, w, s, 1, native_runs)?;
        let sn = profile_threads(m, w, s, threads, native_runs)?;
        let a1 = profile_threads(m, w, a, 1, native_runs)?;
        let an = profile_threads(m, w, a, threads, native_runs)?;
        let t = threads;
        out.extend(node_pair(
            &alone,
            m,
            w.name,
            &format!("1 -> {t} threads (SSE2)"),
            &s1,
            &sn,
            calibration,
        )?);
        out.extend(node_pair(
            &alone,
            m,
            w.name,
            &format!("1 -> {t} threads (AVX2)"),
            &a1,
            &an,
            calibration,
        )?);
        out.extend(node_pair(
            m,
            m,
            w.name,
            &format!("SSE2 -> AVX2 ({t} threads)"),
            &sn,
            &an,
            calibration,
        )?);
        out.extend(node_pair(
            m,
            m,
            w.name,
            &format!("AVX2 -> SSE2 ({t} threads)"),
            &an,
            &sn,
            calibration,
        )?);
    }
    Ok(out)
}

/// Summarizes node validation pairs.
pub fn summarize_node(v: &[NodePair]) -> NodeSummary {
    let med = |mut x: Vec<f64>| {
        x.sort_by(f64::total_cmp);
        hpcscope_core::stats::median(&x).unwrap_or(0.0)
    };
    let errs: Vec<f64> = v
        .iter()
        .map(|r| r.validation.check.nearest_bound_error)
        .collect();
    let point_errs: Vec<f64> = v
        .iter()
        .filter_map(|r| r.point_error)
        .map(f64::abs)
        .collect();
    let frac = |inside: &dyn Fn(&Validation) -> bool| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().filter(|r| inside(&r.validation)).count() as f64 / v.len() as f64
        }
    };
    NodeSummary {
        pairs: v.len(),
        inside_fraction: frac(&|c| c.inside_within_noise),
        inside_fraction_strict: frac(&|c| c.check.inside),
        median_width: med(v.iter().map(|r| r.width).collect()),
        median_midpoint_error: med(v.iter().map(|r| r.midpoint_error).collect()),
        point_pairs: point_errs.len(),
        median_point_error: (!point_errs.is_empty()).then(|| med(point_errs.clone())),
        max_point_error: point_errs.iter().copied().reduce(f64::max),
        median_error: med(errs.clone()),
        max_error: errs.iter().copied().fold(0.0, f64::max),
    }
}

/// What `validate` prints of the node pairs.
pub fn node_validation_text(v: &[NodePair], s: &NodeSummary) -> String {
    let mut text = String::new();
    for r in v {
        text.push_str(&format!(
            "{:<11} {:<24} projected [{}, {}] point {} GFLOP/s, measured {}{} -> {}\n",
            r.workload,
            r.pair,
            num(r.interval.lo, 4),
            num(r.interval.hi, 4),
            r.point.as_ref().map_or("-".into(), |p| num(p.gflops, 4)),
            num(r.validation.check.measured_gflops, 4),
            crate::validate::band_text(r.validation.spread),
            verdict(&r.validation)
        ));
        text.push_str(&format!("{:<36} {}\n", "", width_parts(r)));
    }
    text.push_str(&format!(
        "node summary: {} pairs, {:.0} % inside with the runs' spread ({:.0} % for the median alone), median width {:.1} %, median midpoint error {:.1} %, the median's nearest bound off by {:.1} % at the median ({:.1} % at most); {}\n",
        s.pairs,
        s.inside_fraction * 100.0,
        s.inside_fraction_strict * 100.0,
        s.median_width * 100.0,
        s.median_midpoint_error * 100.0,
        s.median_error * 100.0,
        s.max_error * 100.0,
        point_summary(s)
    ));
    text
}

/// A pair's result: `inside`; `inside with the runs' spread (median outside, nearest bound
/// +3.2 %)`; or `outside by -4.0 % (median: nearest bound -9.1 %)`.
fn verdict(v: &Validation) -> String {
    let c = &v.check;
    match (v.inside_within_noise, c.inside) {
        (true, true) => "inside".into(),
        (true, false) => format!(
            "inside with the runs' spread (median outside, nearest bound {:+.1} %)",
            c.error * 100.0
        ),
        (false, _) => format!(
            "outside by {:+.1} % (median: nearest bound {:+.1} %)",
            v.error_within_noise * 100.0,
            c.error * 100.0
        ),
    }
}

/// `inside`, or the signed distance `+3.2 %`.
fn result_cell(inside: bool, error: f64) -> String {
    if inside {
        "inside".into()
    } else {
        format!("{:+.1} %", error * 100.0)
    }
}

/// `point error 4.1 % at the median (9.0 % at most) over 16 pairs`, or why there is none.
fn point_summary(s: &NodeSummary) -> String {
    match (s.median_point_error, s.max_point_error) {
        (Some(med), Some(max)) => format!(
            "point error {:.1} % at the median ({:.1} % at most) over {} pairs",
            med * 100.0,
            max * 100.0,
            s.point_pairs
        ),
        _ => "no point estimate (no calibration)".into(),
    }
}

/// How a pair's width splits: `width x1.31: model x1.00 (0 %), margin ±6.5 % (47 %),
/// source band -4.1/+5.3 % (53 %)`.
fn width_parts(r: &NodePair) -> String {
    let m = r.model_interval;
    let model_width = if m.lo > 0.0 { m.hi / m.lo } else { 1.0 };
    match r.widening {
        None => format!(
            "width x{}: the model's alone (no calibrated margin, no source band)",
            num(model_width, 4)
        ),
        Some(w) => format!(
            "width x{}: model x{} ({:.0} %), margin \u{b1}{:.1} % ({:.0} %), source band {}",
            num(w.total_width, 4),
            num(w.model_width, 4),
            w.model_share * 100.0,
            w.margin * 100.0,
            w.margin_share * 100.0,
            match w.source {
                Some(b) => format!(
                    "{:+.1}/{:+.1} % ({:.0} %)",
                    (b.low.min(1.0) - 1.0) * 100.0,
                    (b.high.max(1.0) - 1.0) * 100.0,
                    w.noise_share * 100.0
                ),
                None => "not measured".into(),
            }
        ),
    }
}

/// The node validation as a report section.
pub fn node_validation_section(v: &[NodePair], machine: &Machine) -> Section {
    let s = summarize_node(v);
    let rows: Vec<Vec<String>> = v
        .iter()
        .map(|r| {
            vec![
                r.workload.clone(),
                r.pair.clone(),
                num(r.source_gflops, 4),
                format!("[{}, {}]", num(r.interval.lo, 4), num(r.interval.hi, 4)),
                crate::render::estimate_cell(r.point.as_ref()),
                crate::render::widening_cell(r.widening),
                num(r.validation.check.measured_gflops, 4),
                result_cell(
                    r.validation.inside_within_noise,
                    r.validation.error_within_noise,
                ),
                result_cell(r.validation.check.inside, r.validation.check.error),
            ]
        })
        .collect();
    let chart_rows: Vec<ValidationRow> = v
        .iter()
        .map(|r| ValidationRow {
            label: format!("{} {}", r.workload, r.pair),
            lo: r.interval.lo,
            hi: r.interval.hi,
            measured: r.validation.check.measured_gflops,
            point: r.point.as_ref().map(|p| p.gflops),
        })
        .collect();
    Section {
        title: "Validation at node scope: thread counts and vector widths, measured here".into(),
        summary: format!(
            "On {}, {} pairs: the measurement met the node projection (per thread, eqs. 7.1-7.5; both with their run-to-run spread) for {:.0} % of them, the median measurement alone fell inside the interval for {:.0} %; median width {:.1} % and median midpoint error {:.1} % of the measurement; the median's nearest bound was off by {:.1} % at the median and {:.1} % at most; {}.",
            machine.name,
            s.pairs,
            s.inside_fraction * 100.0,
            s.inside_fraction_strict * 100.0,
            s.median_width * 100.0,
            s.median_midpoint_error * 100.0,
            s.median_error * 100.0,
            s.max_error * 100.0,
            point_summary(&s)
        ),
        body_html: html_table(
            &[
                "workload",
                "pair",
                "source GFLOP/s",
                "projected GFLOP/s",
                "point GFLOP/s",
                "width: model / margin / noise",
                "measured GFLOP/s",
                "result (with the runs' spread)",
                "median alone",
            ],
            &rows,
        ),
        svgs: vec![hpcscope_core::view::validation_svg(
            &chart_rows,
            "Projected interval, point estimate and measured performance at node scope",
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One thread of 1 GFLOP moving 1 GB, over 0.5 s.
    fn thread() -> AppMetrics {
        AppMetrics {
            flops: 1e9,
            fp_instructions: 5e8,
            levels: vec!["L1".into(), "L2".into(), "L3".into(), "MM".into()],
            bytes: vec![8e8, 1e8, 0.0, 1e8],
            time_s: Some(0.5),
        }
    }

    #[test]
    fn node_intervals_have_the_core_scopes_width() {
        let mut m = hpcscope_core::library::builtin("cascadelake-8260").unwrap();
        m.peaks[0].core_gflops = Some(80.0);
        for (l, c) in m.levels.iter_mut().zip([400.0, 150.0, 40.0, 15.0]) {
            l.core_gbs = Some(c);
        }
        let alone = cores_alone(&m);
        let cal = Calibration::bundled();
        // A source whose five runs spread by 10 % either way.
        let spread = Spread::from_times(&[1.0, 1.1, 0.9, 1.05, 0.95]);
        assert!(spread.is_some_and(|s| s.low < 1.0 && s.high > 1.0));
        let one = [thread()];
        let two = [thread(), thread()];
        // The core projection of the same inputs has a width: the source's band.
        let core = project_with(
            Side {
                machine: &alone,
                threads: &one,
                origin: "s",
            },
            2.0,
            Side {
                machine: &alone,
                threads: &one,
                origin: "t",
            },
            Precision::F64,
            Options::default(),
            &Inputs {
                source_spread: spread,
                calibration: Some(&cal),
                carried_time: true,
                ..Inputs::default()
            },
        )
        .unwrap();
        assert!(core.interval.lo < core.interval.hi, "{:?}", core.interval);
        // The node projection onto two such threads of the same machine: the model's
        // points coincide (twice the source's rate), and the source's band still widens it.
        let node = node_projection(
            &alone,
            &one,
            2.0,
            spread,
            &alone,
            &two,
            Precision::F64,
            Some(&cal),
            ("s", "t"),
            NodeSides::default(),
        )
        .unwrap();
        let w = node.widening.expect("the node interval was widened");
        assert!((w.model_interval.lo - w.model_interval.hi).abs() < 1e-9 * w.model_interval.hi);
        assert!(node.interval.lo < node.interval.hi, "{:?}", node.interval);
        let s = spread.unwrap();
        assert!((node.interval.lo - 4.0 * s.low / (1.0 + w.margin)).abs() < 1e-9);
        assert!((node.interval.hi - 4.0 * s.high * (1.0 + w.margin)).abs() < 1e-9);
        // The same relative width as the core projection of one thread.
        let rel = |i: Interval| i.hi / i.lo;
        assert!((rel(node.interval) - rel(core.interval)).abs() < 1e-9);
        // Without a spread or margin, the model's point stays a point (no made-up width).
        let bare = node_projection(
            &alone,
            &one,
            2.0,
            None,
            &alone,
            &two,
            Precision::F64,
            None,
            ("s", "t"),
            NodeSides::default(),
        )
        .unwrap();
        assert!(bare.widening.is_none());
        assert!((bare.interval.hi - bare.interval.lo).abs() < 1e-9);
    }

    /// A profile of `n` threads like [`thread`], each over `time_s`.
    fn profile(n: u32, time_s: f64) -> Profile {
        use hpcscope_core::profile::{LevelBytes, Memory, Region, ThreadMetrics};
        let lv = |level: &str, bytes| LevelBytes {
            level: level.into(),
            bytes,
        };
        let t = |i| ThreadMetrics {
            thread: i,
            time_s: Some(time_s),
            flops: 1e9,
            fp_instructions: 5e8,
            memory: Memory {
                bytes_per_level: Some(vec![
                    lv("L1", 8e8),
                    lv("L2", 1e8),
                    lv("L3", 0.0),
                    lv("MM", 1e8),
                ]),
                bytes_total: None,
                hit_ratios: None,
            },
            loads: None,
            stores: None,
            instructions: None,
        };
        Profile {
            format_version: 1,
            application: "t".into(),
            binary: None,
            isa: "x86_64".into(),
            vector_bits: 128,
            precision: Precision::F64,
            machine: None,
            collector: None,
            partial: false,
            regions: vec![Region {
                name: "r".into(),
                threads: (0..n).map(t).collect(),
                access_widths: None,
            }],
            notes: vec![],
        }
    }

    #[test]
    fn node_pairs_carry_the_point_estimate_and_the_width_parts() {
        let mut m = hpcscope_core::library::builtin("cascadelake-8260").unwrap();
        m.peaks[0].core_gflops = Some(80.0);
        for (l, c) in m.levels.iter_mut().zip([400.0, 150.0, 40.0, 15.0]) {
            l.core_gbs = Some(c);
        }
        let alone = cores_alone(&m);
        // A margin, so that all three parts show (the bundled calibration's is 0).
        let mut cal = Calibration::bundled();
        cal.interval.margin = 0.05;
        let spread = Spread::from_times(&[1.0, 1.1, 0.9, 1.05, 0.95]);
        // One thread at 2 GFLOP/s onto two threads measured at 3.5 GFLOP/s in all.
        let from = Threaded {
            profile: profile(1, 0.5),
            spread,
            widths: None,
        };
        let to = Threaded {
            profile: profile(2, 2.0 / 3.5),
            spread: None,
            widths: None,
        };
        let r = node_pair(&alone, &m, "w", "1 -> 2 threads", &from, &to, Some(&cal))
            .unwrap()
            .expect("both sides have a time");
        assert_eq!((r.source_threads, r.target_threads), (1, 2));
        assert!((r.validation.check.measured_gflops - 3.5).abs() < 1e-9);
        // The same projection as node_projection gives: its point and its widening.
        let tm = |p: &Profile| p.regions[0].thread_metrics("x").unwrap();
        let p = node_projection(
            &alone,
            &tm(&from.profile),
            2.0,
            spread,
            &m,
            &tm(&to.profile),
            Precision::F64,
            Some(&cal),
            ("s", "t"),
            NodeSides::default(),
        )
        .unwrap();
        let point = r.point.as_ref().expect("a calibrated point estimate");
        assert_eq!(Some(point), p.point.as_ref());
        assert_eq!(r.interval, p.interval);
        // One machine from one thread to two: a thread-count change, whose error the bundled
        // calibration does not state, not another machine's (the one-thread side is the
        // machine's cores taken alone, a description that differs from the machine's own).
        assert_eq!(point.change, hpcscope_core::point::ChangeKind::ThreadCount);
        assert_eq!(point.error, cal.error_for(point.change));
        assert!(point.error.is_none(), "{point:?}");
        // The point lies inside the model's interval, hence inside the widened one.
        let (mi, i) = (r.model_interval, r.interval);
        assert!(
            mi.lo <= point.gflops && point.gflops <= mi.hi,
            "{point:?} {mi:?}"
        );
        assert!(i.lo <= mi.lo && mi.hi <= i.hi, "{i:?} {mi:?}");
        assert!((r.point_error.unwrap() - (point.gflops - 3.5) / 3.5).abs() < 1e-12);
        // The parts add up as project_with combines them: the model's interval times the
        // band and the margin on each side, and the shares of the width on a log scale.
        let w = r.widening.expect("margin and band widen the interval");
        assert_eq!(w.model_interval, mi);
        let s = w.source.expect("the source's band");
        assert!(w.margin > 0.0 && s.low < 1.0 && s.high > 1.0, "{w:?}");
        assert!((i.lo - mi.lo * s.low / (1.0 + w.margin)).abs() < 1e-9 * i.lo);
        assert!((i.hi - mi.hi * s.high * (1.0 + w.margin)).abs() < 1e-9 * i.hi);
        assert!((w.total_width - i.hi / i.lo).abs() < 1e-9 * w.total_width);
        let product = w.model_width * (s.high / s.low) * (1.0 + w.margin).powi(2);
        assert!((w.total_width - product).abs() < 1e-9 * product);
        assert!((w.model_share + w.margin_share + w.noise_share - 1.0).abs() < 1e-9);
        assert!(w.margin_share > 0.0 && w.noise_share > 0.0);
        // Text, table and chart show them.
        let v = vec![r.clone()];
        let sum = summarize_node(&v);
        assert_eq!(sum.point_pairs, 1);
        assert!((sum.median_point_error.unwrap() - r.point_error.unwrap().abs()).abs() < 1e-12);
        let text = node_validation_text(&v, &sum);
        assert!(
            text.contains(&format!("point {} GFLOP/s", num(point.gflops, 4))),
            "{text}"
        );
        assert!(
            text.contains(&format!("width x{}", num(w.total_width, 4)))
                && text.contains(&format!("margin \u{b1}{:.1} %", w.margin * 100.0)),
            "{text}"
        );
        let sec = node_validation_section(&v, &m);
        assert!(
            sec.body_html
                .contains(&crate::render::estimate_cell(Some(point))),
            "{}",
            sec.body_html
        );
        assert!(
            sec.body_html
                .contains(&crate::render::widening_cell(Some(w))),
            "{}",
            sec.body_html
        );
        assert_eq!(sec.svgs[0].matches("point-estimate").count(), 1);
        // Without a calibration there is no point, no margin, and the band alone widens.
        let bare = node_pair(&alone, &m, "w", "1 -> 2 threads", &from, &to, None)
            .unwrap()
            .unwrap();
        assert!(bare.point.is_none() && bare.point_error.is_none());
        let bw = bare.widening.expect("the band still widens");
        assert_eq!(bw.margin, 0.0);
        assert_eq!(bare.model_interval, mi);
        let bare = [bare];
        let sum = summarize_node(&bare);
        assert_eq!((sum.point_pairs, sum.median_point_error), (0, None));
        assert!(node_validation_text(&bare, &sum).contains("point - GFLOP/s"));
        assert_eq!(
            node_validation_section(&bare, &m).svgs[0]
                .matches("point-estimate")
                .count(),
            0
        );
    }

    #[test]
    fn a_main_thread_that_waits_takes_no_core_in_a_node_pair() {
        let mut m = hpcscope_core::library::builtin("cascadelake-8260").unwrap();
        m.peaks[0].core_gflops = Some(80.0);
        for (l, c) in m.levels.iter_mut().zip([400.0, 150.0, 40.0, 15.0]) {
            l.core_gbs = Some(c);
        }
        let alone = cores_alone(&m);
        let from = Threaded {
            profile: profile(1, 0.5),
            spread: None,
            widths: None,
        };
        let two = Threaded {
            profile: profile(2, 0.6),
            spread: None,
            widths: None,
        };
        // The same two workers and a main thread that joins them: 1 FLOP and 64 bytes.
        let mut three = two.clone();
        let mut main = three.profile.regions[0].threads[0].clone();
        main.flops = 1.0;
        main.fp_instructions = 1.0;
        main.memory.bytes_per_level = main.memory.bytes_per_level.map(|v| {
            v.into_iter()
                .map(|mut l| {
                    l.bytes = if l.level == "L1" { 64.0 } else { 0.0 };
                    l
                })
                .collect()
        });
        three.profile.regions[0].threads.insert(0, main);
        for (i, t) in three.profile.regions[0].threads.iter_mut().enumerate() {
            t.thread = i as u32;
        }
        let (working, waiting) = three.profile.regions[0]
            .working_thread_metrics("x")
            .unwrap();
        assert_eq!((working.len(), waiting), (2, vec![0]));
        let a = node_pair(&alone, &m, "w", "1 -> 2 threads", &from, &two, None)
            .unwrap()
            .unwrap();
        let b = node_pair(&alone, &m, "w", "1 -> 2 threads", &from, &three, None)
            .unwrap()
            .unwrap();
        // Two cores, as without the main thread, not three on a two-core node.
        assert_eq!((b.source_threads, b.target_threads), (1, 2));
        let rel = |x: f64, y: f64| (x / y - 1.0).abs();
        assert!(
            rel(a.interval.lo, b.interval.lo) < 1e-6 && rel(a.interval.hi, b.interval.hi) < 1e-6,
            "{:?} {:?}",
            a.interval,
            b.interval
        );
        // The measured rate is still the whole run's (its FLOPs over the longest thread).
        assert!(rel(b.validation.check.measured_gflops, (2e9 + 1.0) / 0.6 / 1e9) < 1e-12);
    }

    /// The 1 -> 2 thread pair of `node_pairs_carry_the_point_estimate_and_the_width_parts`
    /// (source band about +-10 %, no calibration) with the target measured at `measured`
    /// GFLOP/s, its runs spread by `spread`.
    fn measured_pair(measured: f64, spread: Option<Spread>) -> NodePair {
        let mut m = hpcscope_core::library::builtin("cascadelake-8260").unwrap();
        m.peaks[0].core_gflops = Some(80.0);
        for (l, c) in m.levels.iter_mut().zip([400.0, 150.0, 40.0, 15.0]) {
            l.core_gbs = Some(c);
        }
        let from = Threaded {
            profile: profile(1, 0.5),
            spread: Spread::from_times(&[1.0, 1.1, 0.9, 1.05, 0.95]),
            widths: None,
        };
        // Two threads of 1 GFLOP each: `measured` GFLOP/s over the longest one's time.
        let to = Threaded {
            profile: profile(2, 2.0 / measured),
            spread,
            widths: None,
        };
        node_pair(
            &cores_alone(&m),
            &m,
            "w",
            "1 -> 2 threads",
            &from,
            &to,
            None,
        )
        .unwrap()
        .unwrap()
    }

    /// The target's runs: rates of +-20 % around the median, a band of about +-10 %.
    fn target_spread() -> Option<Spread> {
        let s = Spread::from_rates(&[1.0, 0.8, 1.2, 0.9, 1.1, 0.85, 1.15]);
        assert!(s.is_some_and(|s| s.low < 0.95 && s.high > 1.05), "{s:?}");
        s
    }

    #[test]
    fn a_median_outside_whose_band_meets_the_interval_is_inside_with_the_spread() {
        let hi = measured_pair(1.0, None).interval.hi;
        // 4 % above the interval: the median is outside, its band reaches into it.
        let r = measured_pair(hi * 1.04, target_spread());
        // The target's measurement does not move the projection.
        assert_eq!(r.interval.hi, hi);
        let v = r.validation;
        assert!(!v.check.inside && v.inside_within_noise, "{v:?}");
        assert!((v.check.error - (1.0 / 1.04 - 1.0)).abs() < 1e-9, "{v:?}");
        assert_eq!(v.error_within_noise, 0.0);
        assert_eq!(v.spread, target_spread());
        let s = summarize_node(std::slice::from_ref(&r));
        assert_eq!((s.inside_fraction, s.inside_fraction_strict), (1.0, 0.0));
        // The strict check's errors stay the median's.
        assert!((s.max_error - v.check.nearest_bound_error).abs() < 1e-12);
        let text = node_validation_text(std::slice::from_ref(&r), &s);
        assert!(
            text.contains("(band ")
                && text.contains(
                    "-> inside with the runs' spread (median outside, nearest bound -3.8 %)"
                )
                && text.contains("100 % inside with the runs' spread (0 % for the median alone)"),
            "{text}"
        );
        let m = hpcscope_core::library::builtin("cascadelake-8260").unwrap();
        let sec = node_validation_section(&[r], &m);
        assert!(
            sec.summary.contains("for 100 % of them")
                && sec
                    .summary
                    .contains("alone fell inside the interval for 0 %"),
            "{}",
            sec.summary
        );
        assert!(
            sec.body_html
                .contains("<td>inside</td><td class=\"num\">-3.8 %</td>"),
            "{}",
            sec.body_html
        );
    }

    #[test]
    fn a_band_that_misses_the_interval_is_outside_both_ways() {
        let hi = measured_pair(1.0, None).interval.hi;
        let sp = target_spread().unwrap();
        let measured = hi * 1.5;
        let r = measured_pair(measured, Some(sp));
        let v = r.validation;
        assert!(!v.check.inside && !v.inside_within_noise, "{v:?}");
        // The distance from the interval to the band's low end, nearer than the median's.
        let d = (hi - measured * sp.low) / measured;
        assert!(d < 0.0 && (v.error_within_noise - d).abs() < 1e-9, "{v:?}");
        assert!(v.error_within_noise > v.check.error, "{v:?}");
        let s = summarize_node(std::slice::from_ref(&r));
        assert_eq!((s.inside_fraction, s.inside_fraction_strict), (0.0, 0.0));
        let text = node_validation_text(std::slice::from_ref(&r), &s);
        assert!(
            text.contains(&format!(
                "-> outside by {:+.1} % (median: nearest bound {:+.1} %)",
                d * 100.0,
                (hi / measured - 1.0) * 100.0
            )),
            "{text}"
        );
    }

    #[test]
    fn a_single_target_run_is_checked_by_its_median_alone() {
        // One run has no spread: the check with the spread is the strict one.
        let one = Spread::from_times(&[0.7]);
        assert!(one.is_none());
        let i = measured_pair(1.0, None).interval;
        let mut v = Vec::new();
        for measured in [i.hi * 1.04, i.lo * 0.9, (i.lo + i.hi) / 2.0] {
            let r = measured_pair(measured, one);
            let c = r.validation;
            assert_eq!(c.spread, None);
            assert_eq!(c.inside_within_noise, c.check.inside, "{c:?}");
            assert!(
                (c.error_within_noise - c.check.error).abs() < 1e-12,
                "{c:?}"
            );
            v.push(r);
        }
        let s = summarize_node(&v);
        assert!((s.inside_fraction - 1.0 / 3.0).abs() < 1e-12, "{s:?}");
        assert_eq!(s.inside_fraction, s.inside_fraction_strict);
        let text = node_validation_text(&v, &s);
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        assert!(
            text.contains("33 % inside with the runs' spread (33 % for the median alone)"),
            "{text}"
        );
        // No pair: zeros, not NaN.
        let e = summarize_node(&[]);
        assert_eq!((e.inside_fraction, e.inside_fraction_strict), (0.0, 0.0));
    }

    #[test]
    fn node_values_below_one_core_are_flagged() {
        let mut m = hpcscope_core::library::builtin("cascadelake-8260").unwrap();
        assert!(node_values_check(&m).is_empty());
        m.peaks[0].core_gflops = Some(4000.0);
        m.levels[0].core_gbs = Some(20000.0);
        let w = node_values_check(&m);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].contains("node peak") && w[1].contains("private L1"),
            "{w:?}"
        );
    }
}
