//! `hpcscope hosts validate|record`: host records (a machine file and the bundled workloads
//! measured there) and projections from one recorded host onto another, checked against its
//! measurements (see `hpcscope_analysis::hosts`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use hpcscope_analysis::hosts;

use crate::output::{emit, emit_with};

/// Host subcommands.
#[derive(Subcommand, Debug)]
pub enum HostsCmd {
    /// Project every recorded host's measurements onto every other host (the same binary,
    /// characterized under QEMU for both hosts' caches) and check them against that host's.
    Validate(ValidateArgs),
    /// Record this host: build the bundled workloads, time them, and write machine.toml
    /// and measurements.json into DIR.
    Record(RecordArgs),
}

/// How `hosts validate` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum HostsFormat {
    /// Text: one line per pair, the summaries, the targets.
    #[default]
    Text,
    /// JSON (`hpcscope schema hosts-validate`).
    Json,
}

/// Arguments of `hosts validate`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Host records: directories with machine.toml and measurements.json (two or more).
    #[arg(required = true, num_args = 1.., value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Only these workloads (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Only keys with these thread counts (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub threads: Vec<u32>,
    /// Where binaries are built when a record has no bin/ directory.
    #[arg(long, default_value = "out/hosts/build")]
    pub build_dir: PathBuf,
    /// The calibration to use (a file `validate --calibrate` wrote); default: the bundled
    /// one.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: HostsFormat,
    /// Write the result to this file instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Simulate one cache set in K of every level (as `mix --sample K`): faster, each host's
    /// bytes per level estimated.
    #[arg(long, value_name = "K")]
    pub sample: Option<u64>,
    /// Keep each characterization here, and take it back on the next run when the binary,
    /// its arguments, the hosts' machine files and the sampling are the same.
    #[arg(long, value_name = "DIR", default_value = "out/hosts/cache")]
    pub cache_dir: PathBuf,
    /// Characterize every binary again, without the cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Also write an HTML report (the summaries and the table of pairs).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Which run gives each host's rate: the fastest (`best`, the machine files'
    /// statistic) or the median.
    #[arg(long, value_enum, default_value = "best")]
    pub statistic: hosts::Statistic,
}

/// Arguments of `hosts record`.
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The record's directory (created; refused when it already holds measurements.json).
    pub dir: PathBuf,
    /// Timed rounds: each round runs every binary once.
    #[arg(long, default_value_t = 11)]
    pub runs: u32,
    /// Take this machine file instead of measuring this host with `hpcscope bench
    /// --cpu-clock --statistic best`.
    #[arg(long, short, value_name = "FILE")]
    pub machine: Option<String>,
    /// Only these workloads (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Thread counts of the OpenMP workloads (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub threads: Vec<u32>,
    /// Where the workloads are built.
    #[arg(long, default_value = "out/hosts/build")]
    pub build_dir: PathBuf,
}

fn progress(msg: &str) {
    eprintln!("[hpcscope hosts] {msg}");
}

/// Runs `hosts`.
pub fn run(c: HostsCmd) -> Result<ExitCode> {
    match c {
        HostsCmd::Validate(a) => validate(&a),
        HostsCmd::Record(a) => record(&a),
    }
}

fn validate(a: &ValidateArgs) -> Result<ExitCode> {
    let calibration = hpcscope_core::load::calibration(a.calibration.as_deref())?;
    let records = a
        .dirs
        .iter()
        .map(|d| hosts::load_record(d))
        .collect::<Result<Vec<_>>>()?;
    let v = hosts::validate(
        &records,
        &hosts::ValidateOptions {
            workloads: a.workloads.clone(),
            threads: a.threads.clone(),
            build_dir: a.build_dir.clone(),
            calibration: Some(calibration),
            sample: a.sample.map(hpcscope_mix::SampleSpec::sets).transpose()?,
            cache_dir: (!a.no_cache).then(|| a.cache_dir.clone()),
            statistic: a.statistic,
        },
        &progress,
    )?;
    let text = match a.format {
        HostsFormat::Text => hosts::text(&v),
        HostsFormat::Json => serde_json::to_string_pretty(&v)? + "\n",
    };
    let page = a
        .html
        .as_ref()
        .map(|_| hpcscope_report::html_page("hpcscope hosts validate", &[hosts::section(&v)]));
    match (&a.html, &page) {
        (Some(p), Some(html)) => emit_with(&text, a.output.as_deref(), &[(p, html)])?,
        _ => emit(&text, a.output.as_deref())?,
    }
    Ok(ExitCode::SUCCESS)
}

fn record(a: &RecordArgs) -> Result<ExitCode> {
    let mj = a.dir.join("measurements.json");
    if mj.exists() {
        anyhow::bail!(hpcscope_core::InputError::new(
            mj.display().to_string(),
            "",
            "already exists: a host record is not written over",
            "give a new directory, or remove the old record first"
        ));
    }
    // The machine first: a machine file that cannot be read is refused before the runs.
    let given = match &a.machine {
        Some(m) => Some(hpcscope_core::load::machine(m)?),
        None => None,
    };
    let file = hosts::record(
        &hosts::RecordOptions {
            build_dir: a.build_dir.clone(),
            runs: a.runs,
            workloads: a.workloads.clone(),
            threads: a.threads.clone(),
        },
        &progress,
    )?;
    let machine = match given {
        Some(m) => m,
        None => {
            progress("measuring this host: hpcscope bench --cpu-clock --statistic best");
            hosts::bench_machine()?
        }
    };
    std::fs::create_dir_all(&a.dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", a.dir.display()))?;
    let json = serde_json::to_string_pretty(&file)? + "\n";
    let toml = machine.to_toml_string();
    let mt = a.dir.join("machine.toml");
    let text = hosts::record_text(&file, &mt, &mj);
    crate::output::write_files(&[(&mt, &toml), (&mj, &json)])?;
    emit(&text, None)?;
    Ok(ExitCode::SUCCESS)
}
