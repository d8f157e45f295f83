//! `hpcscope demo` and `hpcscope validate`: the bundled reference workloads (or the user's
//! own builds), built here, analysed, projected and validated (see `hpcscope_analysis::demo`,
//! `::validate` and `::node_validate`); this file writes the report and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use hpcscope_analysis::demo::{DemoOptions, demo};
use hpcscope_analysis::host_machine;
use hpcscope_analysis::node_validate::{
    node_validation_section, node_validation_text, node_values_check, summarize_node, validate_node,
};
use hpcscope_analysis::workloads::{build, build_protocol, selected_all};

use crate::output::{emit, write_atomic};

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
    /// Threads of the node section (the OpenMP workloads); default: this machine's cores.
    #[arg(long)]
    pub threads: Option<u32>,
}

/// Arguments of `validate`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Output directory: the builds, validation.json and one chart per program.
    #[arg(long, short, default_value = "out/validate")]
    pub output: PathBuf,
    /// Source machine (built-in id or file); default: this machine, measured once and cached.
    #[arg(long, short)]
    pub machine: Option<String>,
    /// Only these bundled workloads (comma-separated).
    #[arg(long, value_delimiter = ',', conflicts_with = "builds")]
    pub workloads: Vec<String>,
    /// Timed native runs per build (interleaved with the other builds of the program).
    #[arg(long, default_value_t = 11)]
    pub native_runs: u32,
    /// Threads of the node pairs (from one thread to this many, and SSE2 <-> AVX2 at this
    /// many); default: this machine's cores.
    #[arg(long)]
    pub threads: Option<u32>,
    /// Validate your own builds instead of the bundled ones: `[LABEL=]PATH`, at least two;
    /// every ordered pair is projected and checked. The program's arguments follow `--`.
    #[arg(long = "build", value_name = "[LABEL=]PATH")]
    pub builds: Vec<String>,
    /// With --build: count and time only this function (its time sampled by mix);
    /// default: the whole program, timed by its user + system CPU time.
    #[arg(long, value_name = "NAME", requires = "builds")]
    pub function: Option<String>,
    /// The calibration to use (point-estimate rule and interval margin: a file `--calibrate`
    /// wrote); default: the bundled one.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Also fit the calibration (point-estimate rule, interval margin) on this run's
    /// vector-width pairs (bundled protocol) and write it to FILE (the pairs are still
    /// checked with the calibration in use).
    #[arg(long, value_name = "FILE", conflicts_with = "builds")]
    pub calibrate: Option<PathBuf>,
    /// The program's arguments (with --build).
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

/// The threads of the node section: given, or this machine's CPUs (at least 2).
fn node_threads(t: Option<u32>) -> Result<u32> {
    match t {
        Some(0 | 1) => anyhow::bail!(hpcscope_core::InputError::new(
            "--threads",
            "",
            "must be at least 2",
            "the node section compares one thread with several: give 2 or more"
        )),
        Some(t) => Ok(t),
        None => Ok(std::thread::available_parallelism()
            .map_or(2, |n| n.get() as u32)
            .max(2)),
    }
}

fn progress(msg: &str) {
    eprintln!("[hpcscope demo] {msg}");
}

fn vprogress(msg: &str) {
    eprintln!("[hpcscope validate] {msg}");
}

/// Runs `validate`.
pub fn run_validate(a: &ValidateArgs) -> Result<ExitCode> {
    use hpcscope_analysis::validate::{self as v, Build, ProtocolOptions};
    use hpcscope_core::point::Calibration;
    let model = match &a.calibration {
        Some(p) => {
            let text = hpcscope_core::load::read(
                p,
                "calibration",
                "give a file written by hpcscope validate --calibrate",
            )?;
            Calibration::from_toml_str(&text, &p.display().to_string())?
        }
        None => Calibration::bundled(),
    };
    if a.native_runs < 2 {
        anyhow::bail!(
            "--native-runs {}: give at least 2 (the spread of the runs widens the intervals; 5 or more is better)",
            a.native_runs
        );
    }
    let mut notes = Vec::new();
    let (ws, nws) = selected_all(&a.workloads)?;
    let groups = if a.builds.is_empty() {
        if !a.args.is_empty() {
            anyhow::bail!(
                "arguments after -- are for your own builds (--build); the bundled workloads have their own"
            );
        }
        let builds = build_protocol(
            &a.output.join("build"),
            &ws.iter().map(|w| w.name).collect::<Vec<_>>(),
            &mut notes,
        )?;
        v::bundled_groups(&ws, &builds)
    } else {
        if a.threads.is_some() {
            // Said, not ignored: the node section projects the bundled OpenMP workloads only.
            return Err(hpcscope_core::Failure::input(
                "--threads with --build: node-scope pairs of your own builds are not projected yet (only the bundled OpenMP workloads get a node section); your builds are validated with one thread\n  fix: leave out --threads, or time each build at N threads yourself (OMP_NUM_THREADS=N) and compare with `hpcscope project --scope node`",
            )
            .into());
        }
        if a.builds.len() < 2 {
            anyhow::bail!(
                "--build: give at least two builds to project one onto the other\n  fix: --build sse2=./app-sse2 --build avx2=./app-avx2 -- ARGS"
            );
        }
        let builds: Vec<Build> = a
            .builds
            .iter()
            .map(|b| v::parse_build(b))
            .collect::<Result<_>>()?;
        vec![v::user_group(builds, a.args.clone(), a.function.clone())]
    };
    let m = host_machine::source_machine(a.machine.as_deref())?;
    let load_before = hpcscope_host::facts::loadavg();
    let started = std::time::Instant::now();
    let protocol = v::run(
        &m,
        &groups,
        &ProtocolOptions {
            runs: a.native_runs,
            calibration: Some(model.clone()),
        },
        &vprogress,
    )?;
    let load_after = hpcscope_host::facts::loadavg();
    notes.extend(protocol.notes.iter().cloned());
    let s = v::summarize(&protocol.pairs);
    // At node scope (bundled protocol only): the OpenMP workloads from one thread to N, and
    // SSE2 <-> AVX2 at N threads.
    let (nv, warnings, threads) = if a.builds.is_empty() && !nws.is_empty() {
        let threads = node_threads(a.threads)?;
        let nbuilds = build(
            &a.output.join("build"),
            &nws.iter().map(|w| w.name).collect::<Vec<_>>(),
            &mut notes,
        )?;
        let nv = validate_node(
            &m,
            &nws,
            &nbuilds,
            threads,
            a.native_runs,
            Some(&model),
            &vprogress,
        )?;
        let warnings = if nv.is_empty() {
            Vec::new()
        } else {
            node_values_check(&m)
        };
        (nv, warnings, threads)
    } else {
        (Vec::new(), Vec::new(), 0)
    };
    let ns = summarize_node(&nv);
    // After the node section too (load_after closes the core protocol, which a fit uses).
    let load_end = hpcscope_host::facts::loadavg();
    std::fs::create_dir_all(&a.output)?;
    let fitted = match &a.calibrate {
        Some(path) => {
            let prov = format!(
                "fitted by hpcscope {} validate --calibrate on {} ({}), {}, {} timed runs per build; load average {} before, {} after",
                env!("CARGO_PKG_VERSION"),
                m.name,
                m.id,
                hpcscope_host::time::utc_now(),
                a.native_runs,
                load_text(load_before),
                load_text(load_after)
            );
            let Some(fit) = v::calibrate(&protocol.pairs, &prov) else {
                anyhow::bail!(
                    "--calibrate: no vector-width pair to fit on (they come from the bundled protocol's gcc -O3 builds)"
                );
            };
            write_atomic(path, &fit.to_toml_string())?;
            Some(fit)
        }
        None => None,
    };
    write_atomic(
        &a.output.join("validation.json"),
        // Keys sorted at every level, as validation.json has always been written.
        &(serde_json::to_string_pretty(&serde_json::to_value(v::ValidationFile {
            builds: protocol.builds.clone(),
            calibration: model.clone(),
            fitted_calibration: fitted.clone(),
            load_average_after: load_end,
            load_average_before: load_before,
            machine: m.id.clone(),
            node: v::NodeSection {
                results: nv.clone(),
                summary: ns.clone(),
                threads,
                warnings: warnings.clone(),
            },
            notes: notes.clone(),
            pairs: protocol.pairs.clone(),
            seconds: started.elapsed().as_secs_f64(),
            summary: s.clone(),
        })?)?
            + "\n"),
    )?;
    let sec = v::validation_section(&protocol.pairs, &m);
    for (i, svg) in sec.svgs.iter().enumerate() {
        let name = if sec.svgs.len() == 1 {
            "validation.svg".to_string()
        } else {
            format!("validation-{}.svg", i + 1)
        };
        write_atomic(&a.output.join(name), svg)?;
    }
    if !nv.is_empty() {
        let sec = node_validation_section(&nv, &m);
        write_atomic(&a.output.join("validation-node.svg"), &sec.svgs[0])?;
    }
    let mut text = v::validation_text(&protocol.pairs, &s);
    if !nv.is_empty() {
        text.push_str(&node_validation_text(&nv, &ns));
    }
    for w in &warnings {
        text.push_str(&format!("warning: {w}\n"));
    }
    text.push_str(&format!(
        "load average (1, 5, 15 min): {} before, {} after; {:.0} s\n",
        load_text(load_before),
        load_text(load_end),
        started.elapsed().as_secs_f64()
    ));
    if let Some(f) = &fitted {
        text.push_str(&format!(
            "fitted calibration: point rule {} on {} pairs, median error {:.1} %, 90 % within {:.1} %; interval margin {:.1} % for {:.0} % coverage: written to {}\n",
            f.point.method.describe(f.point.parameter),
            f.point.error.pairs,
            f.point.error.median * 100.0,
            f.point.error.p90 * 100.0,
            f.interval.margin * 100.0,
            f.interval.coverage * 100.0,
            a.calibrate.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
        ));
    }
    for n in &notes {
        text.push_str(&format!("note: {n}\n"));
    }
    emit(&text, None)?;
    Ok(ExitCode::SUCCESS)
}

fn load_text(l: Option<[f64; 3]>) -> String {
    l.map_or("unknown".into(), |l| {
        format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2])
    })
}

/// Runs `demo`.
pub fn run(a: &DemoArgs) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    let (workloads, node_workloads) = selected_all(&a.workloads)?;
    let o = DemoOptions {
        build_dir: a.output.join("build"),
        source: host_machine::source_machine(a.machine.as_deref())?,
        workloads,
        no_sve: a.no_sve,
        native_runs: a.native_runs,
        node_workloads,
        threads: node_threads(a.threads)?,
    };
    let d = demo(&o, &progress)?;
    std::fs::create_dir_all(&a.output)?;
    write_atomic(&a.output.join("report.html"), &d.page)?;
    write_atomic(
        &a.output.join("result.json"),
        &(serde_json::to_string_pretty(&d.json())? + "\n"),
    )?;
    let mut text = d.text();
    text.push_str(&format!(
        "report: {} ({:.0} s)\n",
        a.output.join("report.html").display(),
        started.elapsed().as_secs_f64()
    ));
    emit(&text, None)?;
    Ok(ExitCode::SUCCESS)
}
