//! `hpcscope demo` and `hpcscope validate`: the bundled reference workloads, built here for
//! several vector widths and for aarch64 SVE, analysed, projected, and written as one report.
//!
//! `validate` applies the seeds' validation protocol to a software-stack change that can be
//! measured on this machine: project from the binary built for one vector width (SSE2) to
//! the binary built for another (AVX2) on the same hardware, then run the latter and check
//! whether its measured performance falls inside the projected interval.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use clap::Args;
use hpcscope_core::explore::{DesignPoint, Resolved, Transform, apply, sweep};
use hpcscope_core::project::{Check, Interval, Options, Side, check, project};
use hpcscope_core::{Machine, Profile, library};
use hpcscope_mix::MixOptions;
use hpcscope_report::{Section, ValidationRow, escape, html_page, html_table};
use serde::Serialize;

use crate::cmd::analyze::{AnalyzeResult, analyze_program, sections};
use crate::output::{emit, num, write_atomic};

/// A bundled workload: name, arguments, and what it stands for.
pub struct Workload {
    /// Source file stem and `kernel_<name>` function.
    pub name: &'static str,
    /// Arguments (size, repetitions) sized for a few tens of milliseconds natively.
    pub args: &'static [&'static str],
    /// What it is.
    pub what: &'static str,
}

/// The demo's workloads.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        name: "triad",
        args: &["1000000", "10"],
        what: "STREAM triad (bandwidth-bound)",
    },
    Workload {
        name: "stencil",
        args: &["1000", "25"],
        what: "2D 5-point stencil",
    },
    Workload {
        name: "gemm",
        args: &["300", "5"],
        what: "dense matrix multiply (compute-bound)",
    },
    Workload {
        name: "cg",
        args: &["100000", "20"],
        what: "sparse conjugate gradient, in the spirit of MiniFE",
    },
    Workload {
        name: "edge",
        args: &["100000", "10"],
        what: "unstructured edge-flux loop, in the spirit of MG-CFD",
    },
    Workload {
        name: "montecarlo",
        args: &["150000", "1"],
        what: "Monte-Carlo particle transport, in the spirit of Quicksilver",
    },
    Workload {
        name: "nbody",
        args: &["1000", "2"],
        what: "N-body",
    },
];

/// Arguments of `demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Output directory: report.html, result.json, the built workloads.
    #[arg(long, short, default_value = "out/demo")]
    pub output: PathBuf,
    /// Source machine (built-in id or file); default: this machine, measured once and cached.
    #[arg(long, short)]
    pub machine: Option<String>,
    /// Only these workloads (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Skip the aarch64 SVE vector-length study.
    #[arg(long)]
    pub no_sve: bool,
    /// Native runs per binary (median).
    #[arg(long, default_value_t = 3)]
    pub native_runs: u32,
}

/// Arguments of `validate`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Output directory: the built workloads, validation.json and validation.svg.
    #[arg(long, short, default_value = "out/validate")]
    pub output: PathBuf,
    /// Source machine (built-in id or file); default: this machine, measured once and cached.
    #[arg(long, short)]
    pub machine: Option<String>,
    /// Only these workloads (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Native runs per binary (median).
    #[arg(long, default_value_t = 5)]
    pub native_runs: u32,
}

/// Builds of one workload.
#[derive(Debug, Clone, Default)]
pub struct Builds {
    /// x86-64 baseline (SSE2).
    pub sse2: Option<PathBuf>,
    /// x86-64-v3 (AVX2 + FMA).
    pub avx2: Option<PathBuf>,
    /// aarch64 NEON.
    pub neon: Option<PathBuf>,
    /// aarch64 SVE (vector-length agnostic).
    pub sve: Option<PathBuf>,
}

fn have(tool: &str) -> bool {
    hpcscope_host::tools::on_path(tool).is_some()
}

/// Writes the embedded sources and builds every variant this machine's compilers allow.
pub fn build(dir: &Path, names: &[&str], notes: &mut Vec<String>) -> Result<Vec<Builds>> {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).with_context(|| format!("cannot create {}", src.display()))?;
    for (f, text) in crate::workloads::SOURCES {
        std::fs::write(src.join(f), text)
            .with_context(|| format!("cannot write {}", src.join(f).display()))?;
    }
    let x86 = std::env::consts::ARCH == "x86_64" && have("gcc");
    let a64 = have("aarch64-linux-gnu-gcc");
    if !x86 {
        return Err(hpcscope_core::Failure::environment("the demo builds its workloads with gcc for x86-64: install gcc (apt-get install gcc) on an x86-64 machine").into());
    }
    if !a64 {
        notes.push("aarch64-linux-gnu-gcc is missing (apt-get install gcc-aarch64-linux-gnu): no NEON or SVE builds, no vector-length study".into());
    }
    let common = [
        "-O3",
        "-std=c11",
        "-D_POSIX_C_SOURCE=200809L",
        "-fno-omit-frame-pointer",
    ];
    let mut out = Vec::new();
    for n in names {
        let mut b = Builds::default();
        let c = src.join(format!("{n}.c"));
        let cc = |variant: &str, compiler: &str, flags: &[&str]| -> Result<PathBuf> {
            let d = dir.join(variant);
            std::fs::create_dir_all(&d)?;
            let exe = d.join(n);
            let o = Command::new(compiler)
                .args(common)
                .args(flags)
                .arg("-o")
                .arg(&exe)
                .arg(&c)
                .arg("-lm")
                .output()
                .with_context(|| format!("cannot run {compiler}"))?;
            if !o.status.success() {
                bail!(
                    "{compiler} failed on {}:\n{}",
                    c.display(),
                    String::from_utf8_lossy(&o.stderr)
                );
            }
            Ok(exe)
        };
        b.sse2 = Some(cc("x86-64", "gcc", &["-march=x86-64"])?);
        b.avx2 = Some(cc("x86-64-v3", "gcc", &["-march=x86-64-v3"])?);
        if a64 {
            b.neon = Some(cc(
                "aarch64-neon",
                "aarch64-linux-gnu-gcc",
                &["-march=armv8-a", "-static"],
            )?);
            b.sve = Some(cc(
                "aarch64-sve",
                "aarch64-linux-gnu-gcc",
                &["-march=armv8.2-a+sve", "-static"],
            )?);
        }
        out.push(b);
    }
    Ok(out)
}

fn selected(names: &[String]) -> Result<Vec<&'static Workload>> {
    if names.is_empty() {
        return Ok(WORKLOADS.iter().collect());
    }
    names
        .iter()
        .map(|n| {
            WORKLOADS.iter().find(|w| w.name == n).ok_or_else(|| {
                anyhow::anyhow!(
                    "--workloads: no workload named '{n}'\n  fix: choose among {}",
                    WORKLOADS
                        .iter()
                        .map(|w| w.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
        })
        .collect()
}

/// One validation pair: projected from one build to another on the same machine, then measured.
#[derive(Debug, Clone, Serialize)]
pub struct ValidationResult {
    /// Workload.
    pub workload: String,
    /// `SSE2 -> AVX2` or the reverse.
    pub pair: String,
    /// Projected interval, GFLOP/s.
    pub interval: Interval,
    /// Measured GFLOP/s of the target build and how it compares.
    pub check: Check,
    /// Measured GFLOP/s of the source build.
    pub source_gflops: f64,
}

/// Characterizes `bin`'s kernel on `m` (counts, caches, native time).
fn profile_of(m: &Machine, w: &Workload, bin: &Path, native_runs: u32) -> Result<Profile> {
    let r = hpcscope_mix::analyze(&MixOptions {
        program: bin.to_path_buf(),
        args: w.args.iter().map(|s| s.to_string()).collect(),
        machines: vec![m.clone()],
        functions: vec![format!("kernel_{}", w.name)],
        native_runs,
        application: Some(w.name.to_string()),
        ..Default::default()
    })?;
    Ok(r.variants[0].profiles[0].clone())
}

/// Projects `from` to `to` on machine `m` and checks against `to`'s measured performance.
pub fn validate_pair(
    m: &Machine,
    w: &str,
    pair: &str,
    from: &Profile,
    to: &Profile,
) -> Result<Option<ValidationResult>> {
    let fo = format!("{w} ({})", pair.split(' ').next().unwrap_or(""));
    let to_o = format!("{w} ({})", pair.rsplit(' ').next().unwrap_or(""));
    let fa = from.regions[0].aggregate(&fo)?;
    let ta = to.regions[0].aggregate(&to_o)?;
    let (Some(fg), Some(tg)) = (fa.gflops(), ta.gflops()) else {
        return Ok(None);
    };
    let p = project(
        Side {
            machine: m,
            threads: &from.regions[0].thread_metrics(&fo)?,
            origin: &fo,
        },
        fg,
        Side {
            machine: m,
            threads: &to.regions[0].thread_metrics(&to_o)?,
            origin: &to_o,
        },
        from.precision,
        Options::default(),
    )?;
    Ok(Some(ValidationResult {
        workload: w.to_string(),
        pair: pair.to_string(),
        interval: p.interval,
        check: check(p.interval, tg),
        source_gflops: fg,
    }))
}

/// The validation summary: fraction inside, median and max error of the nearest bound.
#[derive(Debug, Clone, Serialize)]
pub struct ValidationSummary {
    /// Pairs evaluated.
    pub pairs: usize,
    /// Fraction of measurements inside the interval.
    pub inside_fraction: f64,
    /// Median |error| of the nearest bound (0 inside).
    pub median_error: f64,
    /// Largest |error|.
    pub max_error: f64,
}

/// Summarizes validation results.
pub fn summarize(v: &[ValidationResult]) -> ValidationSummary {
    let mut e: Vec<f64> = v.iter().map(|r| r.check.nearest_bound_error).collect();
    e.sort_by(f64::total_cmp);
    ValidationSummary {
        pairs: v.len(),
        inside_fraction: if v.is_empty() {
            0.0
        } else {
            v.iter().filter(|r| r.check.inside).count() as f64 / v.len() as f64
        },
        median_error: if e.is_empty() {
            0.0
        } else if e.len() % 2 == 1 {
            e[e.len() / 2]
        } else {
            (e[e.len() / 2 - 1] + e[e.len() / 2]) / 2.0
        },
        max_error: e.last().copied().unwrap_or(0.0),
    }
}

fn validation_section(v: &[ValidationResult], machine: &Machine) -> Section {
    let s = summarize(v);
    let rows: Vec<Vec<String>> = v
        .iter()
        .map(|r| {
            vec![
                r.workload.clone(),
                r.pair.clone(),
                num(r.source_gflops, 4),
                format!("[{}, {}]", num(r.interval.lo, 4), num(r.interval.hi, 4)),
                num(r.check.measured_gflops, 4),
                if r.check.inside {
                    "inside".into()
                } else {
                    format!("{:+.1} %", r.check.error * 100.0)
                },
            ]
        })
        .collect();
    let chart_rows: Vec<ValidationRow> = v
        .iter()
        .map(|r| ValidationRow {
            label: format!("{} {}", r.workload, r.pair),
            lo: r.interval.lo,
            hi: r.interval.hi,
            measured: r.check.measured_gflops,
        })
        .collect();
    Section {
        title: "Validation: projection across vector widths, measured here".into(),
        summary: format!(
            "On {}, the projection from one build to the other fell inside the interval for {:.0} % of {} pairs; the nearest bound was off by {:.1} % at the median and {:.1} % at most. (Error: 0 inside; otherwise (bound - measured) / measured.)",
            machine.name,
            s.inside_fraction * 100.0,
            s.pairs,
            s.median_error * 100.0,
            s.max_error * 100.0
        ),
        body_html: html_table(
            &[
                "workload",
                "pair",
                "source GFLOP/s",
                "projected GFLOP/s",
                "measured GFLOP/s",
                "result",
            ],
            &rows,
        ),
        svgs: vec![hpcscope_report::validation_svg(
            &chart_rows,
            "Projected interval and measured performance, SSE2 <-> AVX2 builds",
        )],
    }
}

/// Runs the validation protocol over `ws`.
fn validate_all(
    m: &Machine,
    ws: &[&Workload],
    builds: &[Builds],
    native_runs: u32,
    progress: &dyn Fn(&str),
) -> Result<Vec<ValidationResult>> {
    let mut out = Vec::new();
    for (w, b) in ws.iter().zip(builds) {
        let (Some(s), Some(a)) = (&b.sse2, &b.avx2) else {
            continue;
        };
        progress(&format!("validate {}: SSE2 and AVX2 builds", w.name));
        let ps = profile_of(m, w, s, native_runs)?;
        let pa = profile_of(m, w, a, native_runs)?;
        out.extend(validate_pair(m, w.name, "SSE2 -> AVX2", &ps, &pa)?);
        out.extend(validate_pair(m, w.name, "AVX2 -> SSE2", &pa, &ps)?);
    }
    Ok(out)
}

fn progress(msg: &str) {
    eprintln!("[hpcscope demo] {msg}");
}

/// Runs `validate`.
pub fn run_validate(a: &ValidateArgs) -> Result<ExitCode> {
    let ws = selected(&a.workloads)?;
    let m = crate::cmd::analyze::source_machine(a.machine.as_deref())?;
    let mut notes = Vec::new();
    let builds = build(
        &a.output.join("build"),
        &ws.iter().map(|w| w.name).collect::<Vec<_>>(),
        &mut notes,
    )?;
    let v = validate_all(&m, &ws, &builds, a.native_runs, &progress)?;
    let s = summarize(&v);
    let mut text = String::new();
    for r in &v {
        text.push_str(&format!(
            "{:<11} {:<13} projected [{}, {}] GFLOP/s, measured {} -> {}\n",
            r.workload,
            r.pair,
            num(r.interval.lo, 4),
            num(r.interval.hi, 4),
            num(r.check.measured_gflops, 4),
            if r.check.inside {
                "inside".to_string()
            } else {
                format!("outside, nearest bound {:+.1} %", r.check.error * 100.0)
            }
        ));
    }
    text.push_str(&format!(
        "summary: {} pairs, {:.0} % inside, median error {:.1} %, max error {:.1} %\n",
        s.pairs,
        s.inside_fraction * 100.0,
        s.median_error * 100.0,
        s.max_error * 100.0
    ));
    std::fs::create_dir_all(&a.output)?;
    write_atomic(
        &a.output.join("validation.json"),
        &(serde_json::to_string_pretty(
            &serde_json::json!({"machine": m.id, "results": v, "summary": s}),
        )? + "\n"),
    )?;
    let sec = validation_section(&v, &m);
    write_atomic(&a.output.join("validation.svg"), &sec.svgs[0])?;
    emit(&text, None)?;
    Ok(ExitCode::SUCCESS)
}

/// The SVE vector-length study of one workload: the SVE build analysed at each length for
/// A64FX's caches, projected from the x86 source onto A64FX-like cores of that length.
fn sve_study(
    source: &Machine,
    src: &AnalyzeResult,
    w: &Workload,
    b: &Builds,
) -> Result<Option<(Vec<DesignPoint>, f64)>> {
    let (Some(sve), Some(neon), Some(g)) = (&b.sve, &b.neon, src.source_gflops) else {
        return Ok(None);
    };
    let a64 = library::builtin("a64fx")?;
    let r = hpcscope_mix::analyze(&MixOptions {
        program: sve.clone(),
        args: w.args.iter().map(|s| s.to_string()).collect(),
        sve_bits: vec![128, 256, 512, 1024, 2048],
        machines: vec![a64.clone()],
        functions: vec![format!("kernel_{}", w.name)],
        cache_binary: Some(neon.clone()),
        application: Some(w.name.to_string()),
        ..Default::default()
    })?;
    let origin = "source profile";
    let variants = r
        .variants
        .iter()
        .map(|v| -> Result<_> {
            Ok((
                format!("SVE {}", v.sve_bits.unwrap_or(0)),
                v.sve_bits,
                v.profiles[0].regions[0].thread_metrics("SVE profile")?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let tx2 = library::builtin("thunderx2")?;
    let lookup = |id: &str| library::builtin(id);
    let targets = vec![
        ("A64FX core".to_string(), a64.clone()),
        (
            "A64FX core, DDR4 of ThunderX2".to_string(),
            apply(&a64, &Transform::ReplaceMemory(tx2.id.clone()), &lookup)?,
        ),
    ];
    let res = Resolved {
        source_machine: source.clone(),
        source_threads: src.source_profile.regions[0].thread_metrics(origin)?,
        source_gflops: g,
        variants,
        targets,
    };
    Ok(Some((
        sweep(&res, src.source_profile.precision, Options::default())?,
        g,
    )))
}

/// Runs `demo`.
pub fn run(a: &DemoArgs) -> Result<ExitCode> {
    let ws = selected(&a.workloads)?;
    let started = std::time::Instant::now();
    let source = crate::cmd::analyze::source_machine(a.machine.as_deref())?;
    let mut notes = Vec::new();
    progress("building the workloads");
    let builds = build(
        &a.output.join("build"),
        &ws.iter().map(|w| w.name).collect::<Vec<_>>(),
        &mut notes,
    )?;
    let targets: Vec<Machine> = ["thunderx2", "neoverse-n1", "a64fx", "a64fx-node"]
        .iter()
        .map(|t| library::builtin(t))
        .collect::<Result<_, _>>()?;
    let mut sections_all: Vec<Section> = Vec::new();
    let mut results = Vec::new();
    let mut overview = Vec::new();
    for (w, b) in ws.iter().zip(&builds) {
        let Some(sse2) = &b.sse2 else { continue };
        progress(&format!("analyze {} ({})", w.name, w.what));
        let r = analyze_program(
            &source,
            &targets,
            sse2,
            &w.args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            &[format!("kernel_{}", w.name)],
            None,
            a.native_runs,
            None,
            Some(w.name.to_string()),
            true,
        )?;
        overview.push(vec![
            w.name.to_string(),
            w.what.to_string(),
            r.source_gflops.map(|g| num(g, 3)).unwrap_or("-".into()),
            match r.roofline.binding_bound {
                hpcscope_core::roofline::Bound::Memory => {
                    format!("{} bandwidth", r.roofline.binding_level)
                }
                hpcscope_core::roofline::Bound::Compute => "compute (instruction mix)".to_string(),
            },
            r.targets
                .iter()
                .find(|t| t.machine == "a64fx")
                .map(|t| {
                    format!(
                        "{} - {}",
                        num(t.projection.interval.lo, 3),
                        num(t.projection.interval.hi, 3)
                    )
                })
                .unwrap_or("-".into()),
        ]);
        let mut secs = sections(&r, &format!("{}: ", w.name), false);
        if !a.no_sve {
            progress(&format!("SVE vector-length study of {}", w.name));
            match sve_study(&source, &r, w, b) {
                Ok(Some((dps, g))) => secs.push(Section {
                    title: format!("{}: SVE vector length on A64FX-like cores", w.name),
                    summary: sve_verdict(&dps),
                    body_html: html_table(
                        &["variant", "target", "lo GFLOP/s", "hi GFLOP/s"],
                        &dps.iter()
                            .map(|d| {
                                vec![
                                    d.variant.clone(),
                                    d.target.clone(),
                                    num(d.interval.lo, 3),
                                    num(d.interval.hi, 3),
                                ]
                            })
                            .collect::<Vec<_>>(),
                    ),
                    svgs: vec![hpcscope_report::explore_svg(
                        &dps,
                        &format!("{}: SVE vector length x memory on A64FX-like cores", w.name),
                        g,
                    )],
                }),
                Ok(None) => {}
                Err(e) => notes.push(format!("{}: no SVE study: {e:#}", w.name)),
            }
        }
        sections_all.extend(secs);
        results.push(r);
    }
    progress("validation: SSE2 <-> AVX2 builds on this machine");
    let validation = validate_all(&source, &ws, &builds, a.native_runs, &progress)?;
    let mut page_sections = vec![Section {
        title: "Overview".into(),
        summary: format!(
            "Each bundled workload was built here, timed natively, characterized under emulation (FLOPs, FP instructions, bytes per memory level for each machine's caches), placed on this machine's rooflines and projected onto published machines. Source machine: {}.",
            source.name
        ),
        body_html: html_table(
            &[
                "workload",
                "what",
                "GFLOP/s here",
                "binding ceiling here",
                "projected on A64FX (GFLOP/s)",
            ],
            &overview,
        ),
        svgs: vec![hpcscope_report::speedup_svg(
            &results
                .iter()
                .flat_map(|r| {
                    r.targets.iter().map(|t| hpcscope_report::SpeedupRow {
                        workload: r.application.clone(),
                        target: t.name.clone(),
                        lo: t.projection.interval.lo / t.projection.source_gflops,
                        hi: t.projection.interval.hi / t.projection.source_gflops,
                    })
                })
                .collect::<Vec<_>>(),
            &format!(
                "Projected speed-up over {} on published machines",
                source.name
            ),
        )],
    }];
    page_sections.push(crate::cmd::analyze::machine_section(&source, ""));
    page_sections.push(validation_section(&validation, &source));
    page_sections.extend(sections_all);
    if !notes.is_empty() {
        page_sections.push(Section {
            title: "Notes".into(),
            summary: "What this machine could not do.".into(),
            body_html: format!(
                "<ul>{}</ul>",
                notes
                    .iter()
                    .map(|n| format!("<li>{}</li>", escape(n)))
                    .collect::<String>()
            ),
            svgs: vec![],
        });
    }
    std::fs::create_dir_all(&a.output)?;
    let page = html_page("hpcscope demo: reference workloads", &page_sections);
    write_atomic(&a.output.join("report.html"), &page)?;
    let s = summarize(&validation);
    write_atomic(
        &a.output.join("result.json"),
        &(serde_json::to_string_pretty(
            &serde_json::json!({"analyses": results, "validation": {"results": validation, "summary": s}, "notes": notes}),
        )? + "\n"),
    )?;
    let mut text = String::new();
    for r in &results {
        text.push_str(&format!("{}: {}\n", r.application, r.verdict));
    }
    text.push_str(&format!(
        "validation: {} pairs, {:.0} % inside the projected interval, median error {:.1} %, max {:.1} %\n",
        s.pairs,
        s.inside_fraction * 100.0,
        s.median_error * 100.0,
        s.max_error * 100.0
    ));
    for n in &notes {
        text.push_str(&format!("note: {n}\n"));
    }
    text.push_str(&format!(
        "report: {} ({:.0} s)\n",
        a.output.join("report.html").display(),
        started.elapsed().as_secs_f64()
    ));
    emit(&text, None)?;
    Ok(ExitCode::SUCCESS)
}

fn sve_verdict(dps: &[DesignPoint]) -> String {
    let best = dps
        .iter()
        .max_by(|a, b| a.interval.hi.total_cmp(&b.interval.hi));
    let worst = dps
        .iter()
        .min_by(|a, b| a.interval.hi.total_cmp(&b.interval.hi));
    match (best, worst) {
        (Some(b), Some(w)) => format!(
            "The upper bound goes from {} GFLOP/s ({}, {}) to {} GFLOP/s ({}, {}): the longer vectors help only as far as the binary's instruction mix and the memory bandwidth let them.",
            num(w.interval.hi, 3),
            w.variant,
            w.target,
            num(b.interval.hi, 3),
            b.variant,
            b.target
        ),
        _ => String::new(),
    }
}
