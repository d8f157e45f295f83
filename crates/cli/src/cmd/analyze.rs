//! `hpcscope analyze`: from a binary to a projection report in one command. The work is
//! in `hpcscope_analysis`; this file turns the arguments into its options, writes the
//! report and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use hpcscope_analysis::analyze::{partial, summary_metrics, sweep};
use hpcscope_analysis::{
    AnalyzeOptions, TargetBinary, Uncharacterized, analyze, host_machine, render, scenario,
};
use hpcscope_core::{Machine, library, load};
use hpcscope_mix::{MixError, RunSpec, SpecError};

use crate::output::emit;

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
    /// Which engine counts: auto (native for x86-64 programs here when DynamoRIO is built,
    /// else QEMU), native or qemu. Default: HPCSCOPE_ENGINE, else auto.
    #[arg(long, value_name = "ENGINE", value_parser = hpcscope_mix::engine::Choice::parse)]
    pub engine: Option<hpcscope_mix::engine::Choice>,
    /// Run the program with this many threads (sets OMP_NUM_THREADS, natively and under
    /// emulation; default: the environment's). With several threads the analysis is at
    /// node scope: per-thread rooflines, load imbalance, node projections.
    #[arg(long)]
    pub threads: Option<u32>,
    /// How the threads sit on each simulated node's cores: compact (thread t on core t),
    /// scatter (spread over the groups of cores sharing the last cache level) or a list of
    /// cores (0,12,24,36).
    #[arg(long, default_value = "compact", value_parser = hpcscope_mix::Placement::parse)]
    pub placement: hpcscope_mix::Placement,
    /// Simulate one cache set in K of every level (as `mix --sample K`) and extrapolate the
    /// bytes per level: much faster on miss-heavy programs, at an error the report gives
    /// per machine and level (95 % intervals of the hit ratios). Default: every access.
    #[arg(long, value_name = "K")]
    pub sample: Option<u64>,
    /// Keep the analysis in the run history.
    #[command(flatten)]
    pub record: crate::args::RecordFlags,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM [ARGS]")]
    pub command: Vec<String>,
}

/// Runs `analyze`.
pub fn run(a: &AnalyzeArgs) -> Result<ExitCode> {
    let started = std::time::Instant::now();
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
    // The report's directory first: a place it cannot go is said before hours of work.
    std::fs::create_dir_all(&a.output)
        .with_context(|| format!("cannot create {}", a.output.display()))?;
    let source = host_machine::source_machine(a.machine.as_deref())?;
    let timeout = RunSpec::timeout_of(a.timeout).map_err(|_| {
        anyhow::anyhow!(
            "--timeout {}: give a positive number of seconds",
            a.timeout.unwrap_or_default()
        )
    })?;
    let opts = AnalyzeOptions {
        run: RunSpec {
            // Found on PATH as a shell would, so that `analyze -- gzip ...` characterizes
            // the gzip that the native runs time.
            program: hpcscope_host::tools::resolve_program(&a.command[0])
                .unwrap_or_else(|| PathBuf::from(&a.command[0])),
            args: a.command[1..].to_vec(),
            functions: a.functions.clone(),
            timeout,
            threads: a.threads,
            placement: a.placement.clone(),
            sample: a.sample.map(hpcscope_mix::SampleSpec::sets).transpose()?,
            engine: a.engine,
            ..RunSpec::default()
        },
        source: source.clone(),
        targets,
        target_binary: a.target_binary.as_ref().map(|p| TargetBinary {
            path: p.clone(),
            sve_bits: a.sve_bits,
            cache_binary: a.cache_binary.clone(),
        }),
        native_runs: a.native_runs,
        application: None,
        with_trace: !a.no_trace,
        calibration: None,
        sweep_machines: sweep_targets
            .iter()
            .flat_map(|s| s.targets.iter().map(|(_, m)| m.clone()))
            .collect(),
    };
    let mut r = match analyze(&opts).map_err(phrase) {
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
    // (Timed up to here: the history record below is a file append.)
    text.push_str(&r.timings.line(started.elapsed().as_secs_f64()));
    text.push('\n');
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

/// A request the analysis refuses, in the words of `analyze`'s options.
fn phrase(e: anyhow::Error) -> anyhow::Error {
    if let Some(SpecError::NoThreads) = e.downcast_ref::<SpecError>() {
        return hpcscope_core::InputError::new(
            "--threads",
            "",
            "is 0",
            "give the number of threads to run the program with (1 or more)",
        )
        .into();
    }
    if let Some(MixError::SetClasses {
        period,
        machine,
        classes,
        most,
    }) = e.downcast_ref::<MixError>()
    {
        // analyze samples cache sets only: mix's other way out is not an option here.
        return MixError::Usage {
            message: format!(
                "--sample {period}: machine '{machine}' has {classes} classes of cache sets (the greatest common divisor of its levels' set counts), fewer than 2 x {period}"
            ),
            fix: format!("give --sample {most} or less"),
        }
        .into();
    }
    e
}

/// Writes result.json and report.html into the output directory (made by [`run`]).
fn write_report(a: &AnalyzeArgs, json: &str, page: &str) -> Result<()> {
    // Both staged first: a failure (a full disk) leaves neither half of the pair, and
    // neither replaces an input.
    let (j, h) = (a.output.join("result.json"), a.output.join("report.html"));
    crate::output::write_files(&[(&j, json), (&h, page)])
        .with_context(|| format!("cannot write the report into {}", a.output.display()))
}
