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
    Record(hosts::RecordHost),
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

fn record(a: &hosts::RecordHost) -> Result<ExitCode> {
    let (files, text) = hosts::record_host(a, &progress)?;
    let files: Vec<(&std::path::Path, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_path(), t.as_str()))
        .collect();
    crate::output::write_files(&files)?;
    emit(&text, None)?;
    Ok(ExitCode::SUCCESS)
}
