//! `hpcscope validate`: the seeds' validation protocol on the bundled workloads' builds or
//! the user's own (see `hpcscope_analysis::validate_run`); this file checks the options,
//! writes the files and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use hpcscope_analysis::validate::{Build, parse_build};
use hpcscope_analysis::validate_run::{self, NoPairsToFit, ValidateOptions};
use hpcscope_analysis::workloads::selected_protocol;

use crate::output::{emit, write_atomic};

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
    /// many); default: this machine's cores. With --build: each of your builds from one
    /// thread to this many (OMP_NUM_THREADS) and every pair at this many, characterized and
    /// timed by mix (without it, your builds get no node pairs).
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
    /// With --build: count and time this function with its callees (mix --scope: counted
    /// while it runs, timed between its entry and return by uprobes, which need root).
    #[arg(
        long,
        value_name = "NAME",
        requires = "builds",
        conflicts_with = "function"
    )]
    pub scope: Option<String>,
    /// The calibration to use (point-estimate rule and interval margin: a file `--calibrate`
    /// wrote); default: the bundled one.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Also fit the calibration (point-estimate rule, interval margin) on this run's
    /// vector-width pairs (bundled protocol) and write it to FILE (the pairs are still
    /// checked with the calibration in use).
    #[arg(long, value_name = "FILE", conflicts_with = "builds")]
    pub calibrate: Option<PathBuf>,
    /// Project an earlier run's validation.json again with this model, on its builds as
    /// recorded (nothing built or timed); give its machine (-m).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["builds", "workloads", "threads"])]
    pub replay: Option<PathBuf>,
    /// The program's arguments (with --build).
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

fn progress(msg: &str) {
    eprintln!("[hpcscope validate] {msg}");
}

/// Runs `validate`.
pub fn run(a: &ValidateArgs) -> Result<ExitCode> {
    let calibration = hpcscope_core::load::calibration(a.calibration.as_deref())?;
    if a.native_runs < 2 {
        anyhow::bail!(
            "--native-runs {}: give at least 2 (the spread of the runs widens the intervals; 5 or more is better)",
            a.native_runs
        );
    }
    let workloads = selected_protocol(&a.workloads)?;
    let builds: Vec<Build> = if a.builds.is_empty() {
        if !a.args.is_empty() {
            anyhow::bail!(
                "arguments after -- are for your own builds (--build); the bundled workloads have their own"
            );
        }
        Vec::new()
    } else {
        if a.builds.len() < 2 {
            anyhow::bail!(
                "--build: give at least two builds to project one onto the other\n  fix: --build sse2=./app-sse2 --build avx2=./app-avx2 -- ARGS"
            );
        }
        a.builds
            .iter()
            .map(|b| parse_build(b))
            .collect::<Result<_>>()?
    };
    let r = validate_run::run(
        &ValidateOptions {
            output: a.output.clone(),
            machine: a.machine.clone(),
            workloads,
            native_runs: a.native_runs,
            threads: a.threads,
            builds,
            args: a.args.clone(),
            function: a.function.clone().or_else(|| a.scope.clone()),
            scope: a.scope.is_some(),
            calibration,
            calibrate: a.calibrate.clone(),
            replay: a.replay.clone(),
        },
        &progress,
    )
    .map_err(|e| match e.downcast_ref::<NoPairsToFit>() {
        Some(n) => anyhow::anyhow!("--calibrate: {n}"),
        None => e,
    })?;
    std::fs::create_dir_all(&a.output)?;
    if let Some((path, toml)) = &r.calibration_file {
        write_atomic(path, toml)?;
    }
    for (path, text) in &r.files {
        write_atomic(path, text)?;
    }
    emit(&r.text, None)?;
    Ok(ExitCode::SUCCESS)
}
