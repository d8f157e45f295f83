//! `hpcscope mix`: FLOPs, FP instructions and bytes per memory level of any binary.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use hpcscope_mix::{MixError, MixOptions, MixReport, RunSpec, SpecError, analyze};

use crate::output::{Format, emit, render, write_files};
use hpcscope_core::load;

/// Arguments of `mix`.
#[derive(Args, Debug)]
pub struct MixArgs {
    /// Machine whose caches to simulate (built-in id or file); repeat for several: one
    /// profile each (the source machine and every target).
    #[arg(long, short, required = true)]
    pub machine: Vec<String>,
    /// SVE vector lengths to analyse an aarch64 SVE binary at, bits (e.g. 128,256,512).
    #[arg(long, value_delimiter = ',')]
    pub sve_bits: Vec<u32>,
    /// Count only inside this function (its own instructions); repeatable.
    #[arg(long = "function", value_name = "NAME")]
    pub functions: Vec<String>,
    /// Count while this function runs, its callees included; repeatable.
    #[arg(long, value_name = "NAME")]
    pub scope: Vec<String>,
    /// Simulate the caches on this build of the same source instead (for SVE binaries,
    /// whose accesses QEMU 7.2 does not report): a NEON or scalar build.
    #[arg(long, value_name = "BINARY")]
    pub cache_binary: Option<PathBuf>,
    /// Time limit of each run, seconds: an emulation is stopped with the counts so far kept,
    /// marked partial; a native timing run is stopped and no native time is used.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Native runs to time (median), when this host can run the program.
    #[arg(long, default_value_t = 3)]
    pub native_runs: u32,
    /// Add a per-function breakdown.
    #[arg(long)]
    pub per_function: bool,
    /// Application name in the profiles (default: the program's file name).
    #[arg(long)]
    pub application: Option<String>,
    /// Which engine counts: auto (native for x86-64 programs here when DynamoRIO is built,
    /// else QEMU), native or qemu. Default: HPCSCOPE_ENGINE, else auto.
    #[arg(long, value_name = "ENGINE", value_parser = hpcscope_mix::engine::Choice::parse)]
    pub engine: Option<hpcscope_mix::engine::Choice>,
    /// Run the program with this many threads (sets OMP_NUM_THREADS, natively and under
    /// emulation; default: the environment's).
    #[arg(long)]
    pub threads: Option<u32>,
    /// How the threads sit on each simulated node's cores: compact (thread t on core t),
    /// scatter (spread over the groups of cores sharing the last cache level) or a list of
    /// cores (0,12,24,36).
    #[arg(long, default_value = "compact", value_parser = hpcscope_mix::Placement::parse)]
    pub placement: hpcscope_mix::Placement,
    /// Sampled cache simulation: simulate one cache set in K of every level (or, with
    /// --sample-method time, one window of accesses in K) and extrapolate, each level's
    /// hit ratio given with its 95 % interval. FLOPs and instruction counts stay exact.
    #[arg(long, value_name = "K")]
    pub sample: Option<u64>,
    /// What --sample samples: sets (no warm-up needed, the default) or time (windows of
    /// --sample-unit accesses after --sample-warmup accesses simulated uncounted).
    #[arg(long, value_enum, default_value = "sets", requires = "sample")]
    pub sample_method: SampleMethodArg,
    /// Accesses (coalesced records) per unit of --sample.
    #[arg(long, value_name = "RECORDS", default_value_t = hpcscope_mix::SampleSpec::UNIT, requires = "sample")]
    pub sample_unit: u64,
    /// Accesses simulated without counting before each measured unit (default: two units).
    #[arg(long, value_name = "RECORDS", requires = "sample")]
    pub sample_warmup: Option<u64>,
    /// Where to write: a `.json` file when there is one profile, else a directory that
    /// receives one profile per machine and vector length plus `mix-report.json`.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Keep the counts in the run history.
    #[command(flatten)]
    pub record: crate::args::RecordFlags,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM [ARGS]")]
    pub command: Vec<String>,
}

/// What `--sample` samples.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleMethodArg {
    /// Cache sets.
    Sets,
    /// Time windows.
    Time,
}

/// The options of the analysis.
pub fn options(a: &MixArgs) -> Result<MixOptions> {
    let machines = a
        .machine
        .iter()
        .map(|m| load::machine(m))
        .collect::<Result<Vec<_>, _>>()?;
    let timeout = RunSpec::timeout_of(a.timeout).map_err(phrase)?;
    let run = RunSpec {
        program: PathBuf::from(&a.command[0]),
        args: a.command[1..].to_vec(),
        functions: a.functions.clone(),
        scope: a.scope.clone(),
        timeout,
        placement: a.placement.clone(),
        sample: match (a.sample, a.sample_method) {
            (Some(k), SampleMethodArg::Sets) => Some(hpcscope_mix::SampleSpec::sets(k)?),
            (Some(k), SampleMethodArg::Time) => Some(hpcscope_mix::SampleSpec::new(
                k,
                a.sample_unit,
                a.sample_warmup.unwrap_or(a.sample_unit.saturating_mul(2)),
            )?),
            (None, _) => None,
        },
        threads: a.threads,
        engine: a.engine,
        ..RunSpec::default()
    };
    Ok(MixOptions {
        run,
        sve_bits: a.sve_bits.clone(),
        machines,
        cache_binary: a.cache_binary.clone(),
        native_runs: a.native_runs,
        application: a.application.clone(),
        per_function: a.per_function,
    })
}

/// A run specification mix refuses, in the words of its options.
fn phrase(e: SpecError) -> anyhow::Error {
    match e {
        SpecError::Timeout(t) => {
            anyhow::anyhow!("--timeout {t}: give a positive number of seconds")
        }
        SpecError::NoThreads => {
            anyhow::anyhow!("--threads 0: give the number of threads (1 or more)")
        }
        e => e.into(),
    }
}

/// Writes the profiles (and the report) under `out`, all or none.
fn write_outputs(r: &MixReport, out: &Path) -> Result<Vec<PathBuf>> {
    let files = hpcscope_mix::view::output_files(r, out)?;
    write_files(&files)?;
    Ok(files.into_iter().map(|(p, _)| p).collect())
}

/// Runs `mix`.
pub fn run(a: &MixArgs) -> Result<ExitCode> {
    let opts = options(a)?;
    // A `.json` file takes one profile: refused before the program runs, not after.
    if let Some(out) = &a.output {
        hpcscope_mix::view::one_file(out, a.machine.len() * a.sve_bits.len().max(1))?;
    }
    // (The specification is checked by the analysis, before anything runs.)
    let r = analyze(&opts).map_err(|e| match e {
        MixError::Spec(s) => phrase(s),
        e => e.into(),
    })?;
    let pre = hpcscope_mix::view::preamble(&r);
    let mut epi = hpcscope_mix::view::notes(&r, &a.functions, matches!(a.format, Format::Table));
    let partial = r.variants.iter().any(|v| v.partial);
    let mut unwritten = None;
    match a.output.as_ref().map(|out| write_outputs(&r, out)) {
        Some(Ok(files)) => epi.extend(files.iter().map(|f| format!("wrote {}", f.display()))),
        // A failed write still shows the counts (they took the whole run to get).
        Some(Err(e)) => unwritten = Some(e),
        None => {
            epi.push("profiles not written: give -o DIR (or -o FILE.json for one profile)".into())
        }
    }
    let numbers = hpcscope_mix::view::record_numbers(&r)?;
    if let Some(line) = a.record.store("mix", &a.command.join(" "), &numbers)? {
        epi.push(line);
    }
    emit(
        &render(a.format, &r, &pre, &hpcscope_mix::view::summary(&r)?, &epi)?,
        None,
    )?;
    if let Some(e) = unwritten {
        return Err(e.context("the profiles were NOT written (the counts are above)"));
    }
    // Partial counts (a crash, a failure, the time limit) are a finding.
    Ok(if partial {
        crate::exit::finding()
    } else {
        ExitCode::SUCCESS
    })
}
