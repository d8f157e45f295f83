//! `hpcscope analyze`: from a binary to a projection report in one command.
//!
//! Source machine (given, or this machine measured once and cached), the application timed
//! natively and characterized by `mix` for the source's caches and every target's, rooflines
//! on the source, projections to each target, a JSON result and a self-contained HTML report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use hpcscope_core::explore::DesignPoint;
use hpcscope_core::project::{Options, Projection, Side, project};
use hpcscope_core::roofline::{Bound, Ceilings, RooflineAnalysis, Scope, analyze as roofline};
use hpcscope_core::{AppMetrics, Machine, Profile, library};
use hpcscope_mix::{MixOptions, MixReport};
use hpcscope_report::{Section, escape, html_page, html_table};
use serde::Serialize;

use crate::load;
use crate::output::{emit, num, write_atomic};

/// Arguments of `analyze`.
#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Source machine (built-in id or file); default: this machine, measured once by
    /// `hpcscope bench --quick` and cached.
    #[arg(long, short)]
    pub machine: Option<String>,
    /// Target machine (built-in id or file); repeatable; default: every built-in machine.
    #[arg(long = "target", short)]
    pub targets: Vec<String>,
    /// The binary built for the targets (e.g. an SVE build), characterized for each target's
    /// caches; default: the same binary.
    #[arg(long)]
    pub target_binary: Option<PathBuf>,
    /// With an aarch64 SVE target binary: the vector length to emulate, bits (default: each
    /// target's vector width).
    #[arg(long)]
    pub sve_bits: Option<u32>,
    /// For an SVE target binary: a NEON or scalar build whose memory accesses stand for its
    /// own (QEMU 7.2 does not report SVE accesses).
    #[arg(long)]
    pub cache_binary: Option<PathBuf>,
    /// Analyse only inside this function (repeatable); its time is measured by sampling.
    #[arg(long = "function", value_name = "NAME")]
    pub functions: Vec<String>,
    /// Native runs to time (median).
    #[arg(long, default_value_t = 3)]
    pub native_runs: u32,
    /// Emulation time limit, seconds.
    #[arg(long)]
    pub timeout: Option<f64>,
    /// Output directory: result.json, report.html, profiles and charts.
    #[arg(long, short, default_value = "hpcscope-analysis")]
    pub output: PathBuf,
    /// Sweep these targets (a scenario file: `[[targets]]` with transforms, see
    /// docs/scenario-format.md) with the analyzed program as source and variant.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Skip the extra native runs: the eBPF trace and CPU profile, and the counters.
    #[arg(long)]
    pub no_trace: bool,
    /// Keep the analysis in the run history.
    #[command(flatten)]
    pub record: crate::recording::RecordFlags,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM [ARGS]")]
    pub command: Vec<String>,
}

/// One target's projection.
#[derive(Debug, Serialize)]
pub struct TargetResult {
    /// Target machine id.
    pub machine: String,
    /// Target machine name.
    pub name: String,
    /// Where the target binary's bytes per level come from.
    pub caches_from: String,
    /// The projection.
    pub projection: Projection,
    /// One sentence.
    pub verdict: String,
}

/// The result of `analyze`.
#[derive(Debug, Serialize)]
pub struct AnalyzeResult {
    /// Application name.
    pub application: String,
    /// Source machine.
    pub source_machine: Machine,
    /// The source profile.
    pub source_profile: Profile,
    /// Roofline analysis on the source.
    pub roofline: RooflineAnalysis,
    /// Measured GFLOP/s on the source, when timed.
    pub source_gflops: Option<f64>,
    /// Projections.
    pub targets: Vec<TargetResult>,
    /// The characterization of the binary.
    pub mix: MixReport,
    /// The characterization of the target binary, when one was given.
    pub target_mix: Option<MixReport>,
    /// An eBPF trace and CPU profile of one native run, where this machine allows it.
    pub trace: Option<hpcscope_trace::TraceOutcome>,
    /// The portable counter metrics of one native run (software events only where the PMU
    /// is not available).
    pub counters: Option<hpcscope_counters::compute::Report>,
    /// The design-space sweep of `--scenario`, when given.
    pub sweep: Option<Sweep>,
    /// One sentence on the source.
    pub verdict: String,
    /// Remarks.
    pub notes: Vec<String>,
}

/// The design-space sweep of `analyze --scenario`.
#[derive(Debug, Serialize)]
pub struct Sweep {
    /// Scenario title.
    pub name: String,
    /// Scenario description.
    pub description: String,
    /// One point per target.
    pub points: Vec<DesignPoint>,
}

/// The scenario `analyze --scenario` reads: the targets of an `explore` scenario; the
/// source and the variant are the analyzed program.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepScenario {
    name: String,
    #[serde(default)]
    description: String,
    targets: Vec<hpcscope_core::explore::TargetSpec>,
}

/// `--scenario` read and its targets resolved (before the analysis: a bad file fails fast).
struct ReadScenario {
    scenario: SweepScenario,
    origin: String,
    targets: Vec<(String, Machine)>,
}

/// Reads `--scenario` and resolves its targets' machines and transforms.
fn read_scenario(path: &Path) -> Result<ReadScenario> {
    use hpcscope_core::InputError;
    let text = load::read(
        path,
        "scenario",
        "give a scenario TOML file (see docs/scenario-format.md)",
    )?;
    let origin = path.display().to_string();
    let s: SweepScenario = toml::from_str(&text).map_err(|e| {
        let mut ie = hpcscope_core::error::from_toml(
            &origin,
            &text,
            &e,
            "see docs/scenario-format.md and examples/scenarios/",
        );
        if ie.message.contains("source") || ie.message.contains("variants") {
            ie.fix = "analyze takes the source and the variant from the analyzed program: remove [source] and [[variants]], or run `hpcscope explore` on this file".into();
        }
        hpcscope_core::Error::Input(ie)
    })?;
    if s.targets.is_empty() {
        return Err(hpcscope_core::Error::Input(InputError::new(
            &origin,
            "targets",
            "is empty",
            "add at least one [[targets]] (a machine, with transforms or not)",
        ))
        .into());
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let lookup = |id: &str| -> hpcscope_core::Result<Machine> {
        load::machine_rel(id, base).map_err(|e| match e.downcast::<hpcscope_core::Error>() {
            Ok(ce) => ce,
            Err(e) => hpcscope_core::Error::Input(InputError::new(id, "", format!("{e:#}"), "")),
        })
    };
    let mut targets = Vec::new();
    for t in &s.targets {
        let mut m = load::machine_rel(&t.machine, base)?;
        for tr in &t.transforms {
            m = hpcscope_core::explore::apply(&m, tr, &lookup)?;
        }
        targets.push((t.name.clone(), m));
    }
    Ok(ReadScenario {
        scenario: s,
        origin,
        targets,
    })
}

/// Sweeps the scenario's targets with the analyzed program as source and variant.
fn scenario_sweep(sc: ReadScenario, r: &AnalyzeResult) -> Result<Sweep> {
    let Some(g) = r.source_gflops else {
        anyhow::bail!(
            "{}: the sweep needs the application's measured GFLOP/s on the source, and its native run was not timed (see the notes)",
            sc.origin
        );
    };
    let (s, targets) = (sc.scenario, sc.targets);
    let origin_p = "the analyzed profile";
    let variant = match &r.target_mix {
        Some(tm) => tm.variants[0].profiles[0].regions[0].thread_metrics(origin_p)?,
        None => r.source_profile.regions[0].thread_metrics(origin_p)?,
    };
    let res = hpcscope_core::explore::Resolved {
        source_machine: r.source_machine.clone(),
        source_threads: r.source_profile.regions[0].thread_metrics(origin_p)?,
        source_gflops: g,
        variants: vec![(r.application.clone(), None, variant)],
        targets,
    };
    let points =
        hpcscope_core::explore::sweep(&res, r.source_profile.precision, Options::default())?;
    Ok(Sweep {
        name: s.name,
        description: s.description,
        points,
    })
}

/// The source machine: given, or this machine from the cache (measured when missing).
pub fn source_machine(arg: Option<&str>) -> Result<Machine> {
    match arg {
        Some(m) => load::machine(m),
        None => crate::host::machine_cached(),
    }
}

/// Runs the analysis (shared with `demo`).
#[allow(clippy::too_many_arguments)]
pub fn analyze_program(
    source: &Machine,
    targets: &[Machine],
    program: &Path,
    args: &[String],
    functions: &[String],
    target_binary: Option<(&Path, Option<u32>, Option<&Path>)>,
    native_runs: u32,
    timeout: Option<std::time::Duration>,
    application: Option<String>,
    with_trace: bool,
) -> Result<AnalyzeResult> {
    let mut notes = Vec::new();
    let simulable = |m: &Machine| hpcscope_mix::hierarchy(m).is_ok();
    let mut machines = vec![source.clone()];
    if target_binary.is_none() {
        machines.extend(targets.iter().filter(|m| simulable(m)).cloned());
    }
    let opts = MixOptions {
        program: program.to_path_buf(),
        args: args.to_vec(),
        machines,
        functions: functions.to_vec(),
        native_runs,
        timeout,
        application: application.clone(),
        per_function: true,
        ..Default::default()
    };
    let mix = hpcscope_mix::analyze(&opts).context(Uncharacterized)?;
    let v = &mix.variants[0];
    let source_profile = v.profiles[0].clone();
    // The characterization's own remarks (a crash, a partial count, how the region was
    // timed) come first: they qualify everything below.
    for n in mix.notes.iter().chain(&source_profile.notes) {
        if !notes.contains(n) {
            notes.push(n.clone());
        }
    }
    let origin = format!("the profile of {}", program.display());
    let src_metrics = source_profile.regions[0].thread_metrics(&origin)?;
    let agg = source_profile.regions[0].aggregate(&origin)?;
    let ceilings = Ceilings::of(source, source_profile.precision, Scope::Core)?;
    let roof = roofline(&ceilings, &agg, &origin)?;
    let source_gflops = agg.gflops();
    if source_gflops.is_none() {
        notes.push("the application has no measured time on the source: rooflines show its intensities, but nothing can be projected".into());
    }
    // The binary for the targets: characterized for each target's caches.
    let mut target_mix = None;
    let mut target_profiles: Vec<(String, Profile, String)> = Vec::new();
    if let Some((tb, sve, cache_bin)) = target_binary {
        let sim: Vec<Machine> = targets.iter().filter(|m| simulable(m)).cloned().collect();
        let mut per_len: Vec<(Option<u32>, Vec<Machine>)> = Vec::new();
        for m in &sim {
            let len = match (hpcscope_mix::ElfInfo::read(tb)?.arch, m.simd.as_str()) {
                (hpcscope_mix::Arch::Aarch64, "sve") => Some(sve.unwrap_or(m.vector_bits)),
                (hpcscope_mix::Arch::Aarch64, _) if sve.is_some() => sve,
                _ => None,
            };
            match per_len.iter_mut().find(|(l, _)| *l == len) {
                Some((_, v)) => v.push(m.clone()),
                None => per_len.push((len, vec![m.clone()])),
            }
        }
        let mut reports = Vec::new();
        for (len, ms) in per_len {
            let r = hpcscope_mix::analyze(&MixOptions {
                program: tb.to_path_buf(),
                args: args.to_vec(),
                sve_bits: len.into_iter().collect(),
                machines: ms,
                functions: functions.to_vec(),
                cache_binary: cache_bin.map(Path::to_path_buf),
                native_runs: 0,
                timeout,
                application: application.clone(),
                ..Default::default()
            })?;
            for p in &r.variants[0].profiles {
                let how = match len {
                    Some(b) => format!("{} at SVE {b} bits, simulated on its caches", tb.display()),
                    None => format!("{}, simulated on its caches", tb.display()),
                };
                target_profiles.push((p.machine.clone().unwrap_or_default(), p.clone(), how));
            }
            reports.push(r);
        }
        target_mix = reports.into_iter().next();
    } else {
        for p in v.profiles.iter().skip(1) {
            target_profiles.push((
                p.machine.clone().unwrap_or_default(),
                p.clone(),
                "the same binary, simulated on its caches".into(),
            ));
        }
    }
    let mut results = Vec::new();
    if let Some(g) = source_gflops {
        for t in targets {
            let (prof, how) = match target_profiles.iter().find(|(id, _, _)| id == &t.id) {
                Some((_, p, h)) => (p.clone(), h.clone()),
                None => (
                    source_profile.clone(),
                    format!("the source's caches ({} has no cache geometry)", t.id),
                ),
            };
            let to = format!("the target profile for {}", t.id);
            let tm: Vec<AppMetrics> = prof.regions[0].thread_metrics(&to)?;
            let p = match project(
                Side {
                    machine: source,
                    threads: &src_metrics,
                    origin: &origin,
                },
                g,
                Side {
                    machine: t,
                    threads: &tm,
                    origin: &to,
                },
                source_profile.precision,
                Options::default(),
            ) {
                Ok(p) => p,
                Err(e) => {
                    notes.push(format!("{}: not projected: {e}", t.id));
                    continue;
                }
            };
            let verdict = target_verdict(t, &p);
            results.push(TargetResult {
                machine: t.id.clone(),
                name: t.name.clone(),
                caches_from: how,
                projection: p,
                verdict,
            });
        }
    }
    let (trace, counters) = if with_trace {
        (
            trace_run(program, args, &mut notes),
            counters_run(program, args, &mut notes),
        )
    } else {
        (None, None)
    };
    let verdict = source_verdict(source, &roof);
    Ok(AnalyzeResult {
        application: mix.application.clone(),
        source_machine: source.clone(),
        source_profile,
        roofline: roof,
        source_gflops,
        targets: results,
        mix,
        target_mix,
        trace,
        counters,
        sweep: None,
        verdict,
        notes,
    })
}

/// Marks an analysis that failed because the program could not be characterized (not an
/// ELF, crashed before anything was counted, QEMU missing): `analyze` then still reports
/// what it could measure.
#[derive(Debug)]
pub struct Uncharacterized;

impl std::fmt::Display for Uncharacterized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the program could not be characterized")
    }
}

/// One native run under the counters (this CPU's recipe; software events where the PMU is
/// not available); on failure a note says why and the analysis goes on.
fn counters_run(
    program: &Path,
    args: &[String],
    notes: &mut Vec<String>,
) -> Option<hpcscope_counters::compute::Report> {
    let mut command = vec![program.display().to_string()];
    command.extend(args.iter().cloned());
    match hpcscope_counters::measure(&command) {
        Ok(r) => Some(r),
        Err(e) => {
            notes.push(format!("no counters: {e:#}"));
            None
        }
    }
}

/// The sweep of `--scenario` as a report section.
fn sweep_section(sw: &Sweep, r: &AnalyzeResult, title_prefix: &str) -> Section {
    let rows: Vec<Vec<String>> = sw
        .points
        .iter()
        .map(|p| {
            vec![
                p.target.clone(),
                num(p.interval.lo, 4),
                num(p.interval.hi, 4),
                format!("x{} - x{}", num(p.speedup.lo, 3), num(p.speedup.hi, 3)),
                format!("{} of {}", p.memory_bound_points, p.points),
                p.lower_bound_by.clone(),
            ]
        })
        .collect();
    let best = sw
        .points
        .iter()
        .max_by(|a, b| a.interval.hi.total_cmp(&b.interval.hi));
    let summary = match best {
        Some(b) => format!(
            "{}: the highest projected upper bound is on {} ({} to {} GFLOP/s).",
            sw.name,
            b.target,
            num(b.interval.lo, 3),
            num(b.interval.hi, 3)
        ),
        None => sw.name.clone(),
    };
    let mut body = format!("<p>{}</p>", escape(&sw.description));
    body.push_str(&html_table(
        &[
            "target",
            "lo GFLOP/s",
            "hi GFLOP/s",
            "speed-up",
            "memory-bound points",
            "lower bound set by",
        ],
        &rows,
    ));
    Section {
        title: format!("{title_prefix}Design-space sweep"),
        summary,
        body_html: body,
        svgs: vec![hpcscope_report::explore_svg(
            &sw.points,
            &format!("{}: {}", r.application, sw.name),
            r.source_gflops.unwrap_or(0.0),
        )],
    }
}

/// The counters' metrics as a report section.
pub fn counters_section(r: &hpcscope_counters::compute::Report, title_prefix: &str) -> Section {
    hpcscope_counters::output::html_section(r, title_prefix)
}

/// What `analyze` still measured of a program it could not characterize.
#[derive(Debug, Serialize)]
pub struct PartialAnalysis {
    /// The command.
    pub command: Vec<String>,
    /// Why the characterization (and with it rooflines and projections) is missing.
    pub not_characterized: String,
    /// The source machine.
    pub source_machine: Machine,
    /// Native runs: wall, user and system seconds and how each ended.
    pub native_runs: Vec<NativeRun>,
    /// Median wall time of the runs that exited with status 0.
    pub median_wall_s: Option<f64>,
    /// Counters of one native run.
    pub counters: Option<hpcscope_counters::compute::Report>,
    /// Trace and profile of one native run.
    pub trace: Option<hpcscope_trace::TraceOutcome>,
    /// What else could not be done.
    pub notes: Vec<String>,
}

/// One native run of [`PartialAnalysis`].
#[derive(Debug, Serialize)]
pub struct NativeRun {
    /// Wall time, s.
    pub wall_s: f64,
    /// User CPU time, s.
    pub user_s: f64,
    /// System CPU time, s.
    pub sys_s: f64,
    /// Exit status; none when a signal ended the run.
    pub exit_status: Option<i32>,
}

/// Measures what can still be measured of a program `mix` could not characterize, writes
/// result.json and report.html, and prints what was done.
fn partial(a: &AnalyzeArgs, source: &Machine, why: &anyhow::Error) -> Result<()> {
    let mut notes = Vec::new();
    let mut native_runs = Vec::new();
    for _ in 0..a.native_runs.max(1) {
        match hpcscope_history::record::measure_command(&a.command) {
            Ok(m) => native_runs.push(NativeRun {
                wall_s: m.wall_s,
                user_s: m.user_s,
                sys_s: m.sys_s,
                exit_status: m.exit_status,
            }),
            Err(e) => {
                notes.push(format!("cannot run {} natively: {e}", a.command[0]));
                break;
            }
        }
    }
    let mut ok: Vec<f64> = native_runs
        .iter()
        .filter(|r| r.exit_status == Some(0))
        .map(|r| r.wall_s)
        .collect();
    ok.sort_by(f64::total_cmp);
    let median_wall_s = (!ok.is_empty()).then(|| ok[ok.len() / 2]);
    if native_runs.iter().any(|r| r.exit_status != Some(0)) {
        notes.push("a native run did not exit with status 0: its time is not in the median".into());
    }
    let ran = !native_runs.is_empty();
    let program = PathBuf::from(&a.command[0]);
    let (trace, counters) = if ran && !a.no_trace {
        (
            trace_run(&program, &a.command[1..], &mut notes),
            counters_run(&program, &a.command[1..], &mut notes),
        )
    } else {
        (None, None)
    };
    let p = PartialAnalysis {
        command: a.command.clone(),
        not_characterized: format!("{why:#}"),
        source_machine: source.clone(),
        native_runs,
        median_wall_s,
        counters,
        trace,
        notes,
    };
    std::fs::create_dir_all(&a.output)
        .with_context(|| format!("cannot create {}", a.output.display()))?;
    write_atomic(
        &a.output.join("result.json"),
        &(serde_json::to_string_pretty(&p)? + "\n"),
    )?;
    let mut sections = vec![machine_section(source, "")];
    let rows: Vec<Vec<String>> = p
        .native_runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                (i + 1).to_string(),
                num(r.wall_s, 4),
                num(r.user_s, 4),
                num(r.sys_s, 4),
                r.exit_status
                    .map_or("killed by a signal".into(), |c| c.to_string()),
            ]
        })
        .collect();
    sections.push(Section {
        title: "What could not be done".into(),
        summary: "The program was not characterized: no FLOPs, bytes per level, rooflines or projections. What could be measured natively follows.".into(),
        body_html: format!(
            "<pre>{}</pre>{}",
            escape(&p.not_characterized),
            html_table(&["run", "wall (s)", "user (s)", "sys (s)", "exit status"], &rows)
        ),
        svgs: vec![],
    });
    if let Some(c) = &p.counters {
        sections.push(counters_section(c, ""));
    }
    if let Some(t) = &p.trace {
        sections.extend(hpcscope_trace::report::html_sections(
            &t.report,
            t.profile.as_ref(),
        ));
    }
    if !p.notes.is_empty() {
        sections.push(Section {
            title: "Notes".into(),
            summary: "What else could not be measured.".into(),
            body_html: format!(
                "<ul>{}</ul>",
                p.notes
                    .iter()
                    .map(|n| format!("<li>{}</li>", escape(n)))
                    .collect::<String>()
            ),
            svgs: vec![],
        });
    }
    let name = program
        .file_name()
        .map_or("program".into(), |s| s.to_string_lossy().into_owned());
    write_atomic(
        &a.output.join("report.html"),
        &html_page(&format!("hpcscope analysis: {name} (partial)"), &sections),
    )?;
    let mut text = String::new();
    match p.median_wall_s {
        Some(t) => text.push_str(&format!(
            "measured natively: median wall time {} s over {} run(s)\n",
            num(t, 4),
            ok.len()
        )),
        None => text.push_str("no successful native run\n"),
    }
    for n in &p.notes {
        text.push_str(&format!("note: {n}\n"));
    }
    text.push_str(&format!(
        "wrote a partial report: {} and {}\n",
        a.output.join("report.html").display(),
        a.output.join("result.json").display()
    ));
    emit(&text, None)
}

/// One native run under the eBPF probes (syscalls, scheduler, page faults) with CPU stack
/// sampling; on a machine that does not allow it, a note says why and the analysis goes on.
fn trace_run(
    program: &Path,
    args: &[String],
    notes: &mut Vec<String>,
) -> Option<hpcscope_trace::TraceOutcome> {
    let mut command = vec![program.display().to_string()];
    command.extend(args.iter().cloned());
    let opts = hpcscope_trace::TraceOptions {
        target: hpcscope_trace::Target::Command(command),
        probes: hpcscope_trace::Probes {
            syscalls: true,
            sched: true,
            faults: true,
            profile_hz: Some(999),
            ..Default::default()
        },
        duration: None,
    };
    match hpcscope_trace::trace(&opts) {
        Ok(t) => Some(t),
        Err(e) => {
            notes.push(format!(
                "no eBPF trace or profile: {e} (hpcscope doctor tells what this machine allows)"
            ));
            None
        }
    }
}

/// One sentence on the source run.
pub fn source_verdict(m: &Machine, r: &RooflineAnalysis) -> String {
    let eff = r
        .efficiency
        .map(|e| format!(", at {:.0} % of that ceiling", e * 100.0))
        .unwrap_or_default();
    let achieved = r
        .achieved_gflops
        .map(|g| format!("runs at {} GFLOP/s and ", num(g, 3)))
        .unwrap_or_default();
    let first = match r.binding_bound {
        Bound::Memory => format!(
            "On {} the application {achieved}is memory-bound on {}: that level's bandwidth allows {} GFLOP/s at its operational intensity{eff}.",
            m.name,
            r.binding_level,
            num(r.binding_gflops, 3)
        ),
        Bound::Compute => format!(
            "On {} the application {achieved}is compute-bound: its instruction mix allows {} GFLOP/s{eff}.",
            m.name,
            num(r.binding_gflops, 3)
        ),
    };
    // Far below the binding ceiling, "bound" alone misleads: say what the roofline cannot see.
    if !r.efficiency.is_some_and(|e| e < 0.5) {
        return first;
    }
    let tightest_bandwidth = r
        .levels
        .iter()
        .filter(|l| l.oi.is_finite() && l.bandwidth_gbs > 0.0)
        .map(|l| (l.level.as_str(), l.oi * l.bandwidth_gbs))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let what = "the latency and concurrency of cache misses, dependencies between instructions, or instruction issue (`hpcscope model` and the counters tell them apart)";
    match (r.binding_bound, tightest_bandwidth) {
        (Bound::Compute, Some((level, g))) => format!(
            "{first} No ceiling is reached: the tightest bandwidth roofline ({level}) allows {} GFLOP/s, so what limits the run is not drawn on the roofline: {what}.",
            num(g, 3)
        ),
        _ => format!(
            "{first} Well below that ceiling, what limits the run is not drawn on the roofline: {what}."
        ),
    }
}

/// One sentence on a target.
pub fn target_verdict(t: &Machine, p: &Projection) -> String {
    let lowest = p.points.iter().min_by(|a, b| a.gflops.total_cmp(&b.gflops));
    let what = match lowest {
        Some(pt) if pt.bound_target == Bound::Memory => {
            format!("the lower bound is set by {} bandwidth", pt.roof_level)
        }
        Some(_) => "the lower bound is compute-bound (the binary's instruction mix on that core)"
            .to_string(),
        None => String::new(),
    };
    format!(
        "On {} projected {} to {} GFLOP/s (x{} to x{} the source); {what}.",
        t.name,
        num(p.interval.lo, 3),
        num(p.interval.hi, 3),
        num(p.interval.lo / p.source_gflops, 3),
        num(p.interval.hi / p.source_gflops, 3)
    )
}

/// The section describing the source machine.
pub fn machine_section(m: &Machine, title_prefix: &str) -> Section {
    let mut rows = vec![
        vec!["machine".into(), format!("{} ({})", m.name, m.id)],
        vec![
            "ISA, vector".into(),
            format!(
                "{} {} {}-bit{}",
                m.isa,
                m.simd,
                m.vector_bits,
                if m.fma { ", FMA" } else { "" }
            ),
        ],
        vec![
            "cores".into(),
            format!("{} x {}", m.sockets, m.cores_per_socket),
        ],
    ];
    // Per core (what the single-core roofline uses: given, or the node's share) and per
    // node where the machine file gives it.
    let both = |core: Option<f64>, node: Option<f64>, unit: &str| -> String {
        let cores = f64::from(m.cores());
        match (core, node) {
            (Some(c), Some(n)) => format!(
                "{} {unit} per core; {} {unit} per node",
                num(c, 4),
                num(n, 4)
            ),
            (Some(c), None) => format!("{} {unit} per core", num(c, 4)),
            (None, Some(n)) => format!(
                "{} {unit} per node; {} {unit} per core as the node's share",
                num(n, 4),
                num(n / cores, 4)
            ),
            (None, None) => "not given".into(),
        }
    };
    for p in &m.peaks {
        rows.push(vec![
            format!("peak {}", p.precision),
            both(p.core_gflops, p.node_gflops, "GFLOP/s"),
        ]);
    }
    for l in &m.levels {
        rows.push(vec![
            format!("{} bandwidth", l.name),
            both(l.core_gbs, l.node_gbs, "GB/s"),
        ]);
    }
    Section {
        title: format!("{title_prefix}Source machine"),
        summary: format!("{}. Provenance: {}", m.name, m.provenance),
        body_html: html_table(&["quantity", "value"], &rows),
        svgs: vec![],
    }
}

/// The HTML sections of one analysis.
pub fn sections(r: &AnalyzeResult, title_prefix: &str, with_machine: bool) -> Vec<Section> {
    let mut out = Vec::new();
    let m = &r.source_machine;
    if with_machine {
        out.push(machine_section(m, title_prefix));
    }
    let th = &r.source_profile.regions[0].threads[0];
    let mut rows = vec![
        vec!["program".into(), r.mix.program.clone()],
        vec!["region".into(), r.source_profile.regions[0].name.clone()],
        vec!["FLOPs".into(), num(th.flops, 4)],
        vec!["FP instructions".into(), num(th.fp_instructions, 4)],
        vec![
            "FLOPs per FP instruction".into(),
            r.roofline
                .flops_per_instruction
                .map(|x| num(x, 3))
                .unwrap_or("-".into()),
        ],
        vec![
            "time (s)".into(),
            th.time_s
                .map(|t| num(t, 4))
                .unwrap_or("not measured".into()),
        ],
        vec![
            "GFLOP/s".into(),
            r.source_gflops.map(|g| num(g, 4)).unwrap_or("-".into()),
        ],
    ];
    for l in &r.roofline.levels {
        rows.push(vec![
            format!("bytes from {}", l.level),
            format!("{} (OI {} FLOP/B)", num(l.bytes, 4), num(l.oi, 3)),
        ]);
    }
    let hot: Vec<Vec<String>> = r.mix.variants[0]
        .functions
        .iter()
        .take(6)
        .map(|f| {
            vec![
                f.function.clone(),
                num(f.flops as f64, 4),
                num(f.instructions as f64, 4),
                num(f.bytes as f64, 4),
            ]
        })
        .collect();
    let mut body = html_table(&["metric", "value"], &rows);
    if !hot.is_empty() {
        body.push_str("<p>Where the work is, per function (emulated counts):</p>");
        body.push_str(&html_table(
            &["function", "FLOPs", "instructions", "bytes"],
            &hot,
        ));
    }
    out.push(Section {
        title: format!("{title_prefix}Application"),
        summary: r.verdict.clone(),
        body_html: body,
        svgs: vec![hpcscope_report::roofline_svg(
            &r.roofline,
            &format!("{} on {}", r.application, m.name),
        )],
    });
    if !r.targets.is_empty() {
        let rows: Vec<Vec<String>> = r
            .targets
            .iter()
            .map(|t| {
                vec![
                    t.name.clone(),
                    num(t.projection.interval.lo, 4),
                    num(t.projection.interval.hi, 4),
                    format!(
                        "x{} - x{}",
                        num(t.projection.interval.lo / t.projection.source_gflops, 3),
                        num(t.projection.interval.hi / t.projection.source_gflops, 3)
                    ),
                    t.projection
                        .points
                        .iter()
                        .min_by(|a, b| a.gflops.total_cmp(&b.gflops))
                        .map(|p| format!("{} ({})", p.roof_level, p.bound_target))
                        .unwrap_or_default(),
                    t.caches_from.clone(),
                ]
            })
            .collect();
        let dps: Vec<DesignPoint> = r
            .targets
            .iter()
            .map(|t| DesignPoint::from_projection(&r.application, &t.name, t.projection.clone()))
            .collect();
        let best = r.targets.iter().max_by(|a, b| {
            a.projection
                .interval
                .hi
                .total_cmp(&b.projection.interval.hi)
        });
        let mut summary = String::new();
        if let Some(b) = best {
            summary.push_str(&format!("Highest upper bound: {} ", b.verdict));
        }
        let mut svgs = vec![hpcscope_report::explore_svg(
            &dps,
            &format!("{}: projected performance per target", r.application),
            r.source_gflops.unwrap_or(0.0),
        )];
        if let Some(b) = best
            && let (Ok(sc), Ok(tc)) = (
                Ceilings::of(m, b.projection.precision, Scope::Core),
                load::machine(&b.machine)
                    .and_then(|t| Ok(Ceilings::of(&t, b.projection.precision, Scope::Core)?)),
            )
        {
            svgs.push(hpcscope_report::projection_svg(
                &b.projection,
                &sc,
                &tc,
                &format!("{} -> {}", m.name, b.name),
            ));
        }
        let mut body = html_table(
            &[
                "target",
                "lo GFLOP/s",
                "hi GFLOP/s",
                "speed-up",
                "lower bound set by",
                "target bytes from",
            ],
            &rows,
        );
        body.push_str("<ul>");
        for t in &r.targets {
            body.push_str(&format!("<li>{}</li>", escape(&t.verdict)));
        }
        body.push_str("</ul>");
        out.push(Section {
            title: format!("{title_prefix}Projection to other machines"),
            summary,
            body_html: body,
            svgs,
        });
    }
    if let Some(sw) = &r.sweep {
        out.push(sweep_section(sw, r, title_prefix));
    }
    if let Some(c) = &r.counters {
        out.push(counters_section(c, title_prefix));
    }
    if let Some(t) = &r.trace {
        for mut sec in hpcscope_trace::report::html_sections(&t.report, t.profile.as_ref()) {
            sec.title = format!("{title_prefix}{}", sec.title);
            out.push(sec);
        }
    }
    if !r.notes.is_empty() {
        let mut body = String::from("<ul>");
        for n in &r.notes {
            body.push_str(&format!("<li>{}</li>", escape(n)));
        }
        body.push_str("</ul>");
        out.push(Section {
            title: format!("{title_prefix}Notes"),
            summary: "What was assumed or could not be measured.".into(),
            body_html: body,
            svgs: vec![],
        });
    }
    out
}

/// The numbers of an analysis worth keeping in the history: time, rate, work, bytes per
/// level and each target's projected interval.
pub fn summary_metrics(r: &AnalyzeResult) -> serde_json::Value {
    let th = &r.source_profile.regions[0].threads[0];
    let mut m = serde_json::Map::new();
    m.insert("time_s".into(), serde_json::json!(th.time_s));
    m.insert("gflops".into(), serde_json::json!(r.source_gflops));
    m.insert("flops".into(), serde_json::json!(th.flops));
    m.insert(
        "fp_instructions".into(),
        serde_json::json!(th.fp_instructions),
    );
    m.insert("instructions".into(), serde_json::json!(th.instructions));
    for l in &r.roofline.levels {
        m.insert(format!("bytes_{}", l.level), serde_json::json!(l.bytes));
    }
    for t in &r.targets {
        m.insert(
            format!("projected_{}_lo_gflops", t.machine),
            serde_json::json!(t.projection.interval.lo),
        );
        m.insert(
            format!("projected_{}_hi_gflops", t.machine),
            serde_json::json!(t.projection.interval.hi),
        );
    }
    serde_json::Value::Object(m)
}

/// Runs `analyze`.
pub fn run(a: &AnalyzeArgs) -> Result<ExitCode> {
    let source = source_machine(a.machine.as_deref())?;
    let targets: Vec<Machine> = if a.targets.is_empty() {
        library::all()?
    } else {
        a.targets
            .iter()
            .map(|t| load::machine(t))
            .collect::<Result<_>>()?
    };
    let scenario = a.scenario.as_deref().map(read_scenario).transpose()?;
    let timeout = a.timeout.map(std::time::Duration::from_secs_f64);
    let program = PathBuf::from(&a.command[0]);
    let r = match analyze_program(
        &source,
        &targets,
        &program,
        &a.command[1..],
        &a.functions,
        a.target_binary
            .as_deref()
            .map(|t| (t, a.sve_bits, a.cache_binary.as_deref())),
        a.native_runs,
        timeout,
        None,
        !a.no_trace,
    ) {
        Ok(r) => r,
        Err(e) if e.downcast_ref::<Uncharacterized>().is_some() => {
            // Still report what can be measured, then fail with the reason.
            partial(a, &source, &e)?;
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    let mut r = r;
    if let Some(sc) = scenario {
        r.sweep = Some(scenario_sweep(sc, &r)?);
    }
    std::fs::create_dir_all(&a.output)
        .with_context(|| format!("cannot create {}", a.output.display()))?;
    write_atomic(
        &a.output.join("result.json"),
        &(serde_json::to_string_pretty(&r)? + "\n"),
    )?;
    let page = html_page(
        &format!("hpcscope analysis: {}", r.application),
        &sections(&r, "", true),
    );
    write_atomic(&a.output.join("report.html"), &page)?;
    let mut text = format!("{}\n", r.verdict);
    for t in &r.targets {
        text.push_str(&format!("  {}\n", t.verdict));
    }
    if let Some(sw) = &r.sweep {
        text.push_str(&format!("sweep: {}\n", sw.name));
        for p in &sw.points {
            text.push_str(&format!(
                "  {}: {} to {} GFLOP/s (lower bound set by {})\n",
                p.target,
                num(p.interval.lo, 4),
                num(p.interval.hi, 4),
                p.lower_bound_by
            ));
        }
    }
    for n in &r.notes {
        text.push_str(&format!("note: {n}\n"));
    }
    text.push_str(&format!(
        "wrote {} and {}\n",
        a.output.join("report.html").display(),
        a.output.join("result.json").display()
    ));
    if let Some(line) = a
        .record
        .store("analyze", &a.command.join(" "), &summary_metrics(&r))?
    {
        text.push_str(&line);
        text.push('\n');
    }
    emit(&text, None)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An application on ThunderX2's single-core ceilings (2 FLOPs per FP instruction), with
    /// `bytes` per level and timed to run at `gflops`.
    fn verdict(bytes: [f64; 3], gflops: f64) -> String {
        let m = library::builtin("thunderx2").unwrap();
        let c = Ceilings::of(&m, hpcscope_core::Precision::F64, Scope::Core).unwrap();
        let flops = 1.0e10;
        let app = AppMetrics {
            flops,
            fp_instructions: flops / 2.0,
            levels: vec!["L1".into(), "L2".into(), "L3".into(), "MM".into()],
            bytes: vec![bytes[0], bytes[1], bytes[2], 0.0],
            time_s: Some(flops / (gflops * 1e9)),
        };
        source_verdict(&m, &roofline(&c, &app, "test").unwrap())
    }

    #[test]
    fn a_run_far_below_its_ceiling_is_not_called_simply_bound() {
        // Almost no bytes: compute-bound by the roofline.
        let near = verdict([1e8, 0.0, 0.0], 1e3);
        let ceiling: f64 = near
            .split("allows ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|t| t.parse().ok())
            .unwrap();
        let near = verdict([1e8, 0.0, 0.0], 0.9 * ceiling);
        assert!(
            near.contains("is compute-bound") && !near.contains("No ceiling"),
            "{near}"
        );
        let far = verdict([1e8, 0.0, 0.0], 0.2 * ceiling);
        assert!(far.contains("is compute-bound"), "{far}");
        assert!(
            far.contains("No ceiling is reached: the tightest bandwidth roofline (L1)"),
            "{far}"
        );
        // Memory-bound and far below: the same warning without a second roofline.
        let mem = verdict([0.0, 0.0, 1e11], 0.01);
        assert!(
            mem.contains("is memory-bound") && mem.contains("Well below"),
            "{mem}"
        );
    }
}
