//! `hpcscope analyze`: from a binary to a projection report in one command. The work is
//! in `hpcscope_analysis`; this file turns the arguments into its options, writes the
//! report and prints.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use hpcscope_analysis::analyze::{partial, summary_metrics, sweep};
use hpcscope_analysis::{
    AnalyzeOptions, TargetBinary, Uncharacterized, analyze, host_machine, render, scenario,
};
use hpcscope_core::{Machine, library, load};

use crate::output::{emit, write_atomic};

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
    pub record: crate::args::RecordFlags,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM [ARGS]")]
    pub command: Vec<String>,
}

/// Runs `analyze`.
pub fn run(a: &AnalyzeArgs) -> Result<ExitCode> {
    let source = host_machine::source_machine(a.machine.as_deref())?;
    let targets: Vec<Machine> = if a.targets.is_empty() {
        library::all()?
    } else {
        a.targets
            .iter()
            .map(|t| load::machine(t))
            .collect::<Result<_, _>>()?
    };
    let sweep_targets = a
        .scenario
        .as_deref()
        .map(scenario::read_sweep_targets)
        .transpose()?;
    let timeout = match a.timeout {
        Some(t) if t.is_finite() && t > 0.0 => Some(Duration::from_secs_f64(t)),
        Some(t) => anyhow::bail!("--timeout {t}: give a positive number of seconds"),
        None => None,
    };
    let opts = AnalyzeOptions {
        source: source.clone(),
        targets,
        program: PathBuf::from(&a.command[0]),
        args: a.command[1..].to_vec(),
        functions: a.functions.clone(),
        target_binary: a.target_binary.as_ref().map(|p| TargetBinary {
            path: p.clone(),
            sve_bits: a.sve_bits,
            cache_binary: a.cache_binary.clone(),
        }),
        native_runs: a.native_runs,
        timeout,
        application: None,
        with_trace: !a.no_trace,
        calibration: None,
    };
    let mut r = match analyze(&opts) {
        Ok(r) => r,
        Err(e) if e.downcast_ref::<Uncharacterized>().is_some() => {
            // Still report what can be measured, then fail with the reason.
            let p = partial(&a.command, &source, &e, a.native_runs, !a.no_trace);
            write_report(
                a,
                &(serde_json::to_string_pretty(&p)? + "\n"),
                &render::partial_page(&p),
            )?;
            emit(
                &format!(
                    "{}wrote a partial report: {} and {}\n",
                    render::partial_text(&p),
                    a.output.join("report.html").display(),
                    a.output.join("result.json").display()
                ),
                None,
            )?;
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    if let Some(sc) = sweep_targets {
        r.sweep = Some(sweep(sc, &r)?);
    }
    write_report(
        a,
        &(serde_json::to_string_pretty(&r)? + "\n"),
        &render::page(&r),
    )?;
    let mut text = render::text(&r);
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

/// Writes result.json and report.html into the output directory.
fn write_report(a: &AnalyzeArgs, json: &str, page: &str) -> Result<()> {
    std::fs::create_dir_all(&a.output)
        .with_context(|| format!("cannot create {}", a.output.display()))?;
    write_atomic(&a.output.join("result.json"), json)?;
    write_atomic(&a.output.join("report.html"), page)
}
