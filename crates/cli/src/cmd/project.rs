//! `hpcscope project`: relative performance projection from a source to a target.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use hpcscope_analysis::project::{ProjectOptions, Projected, project};
use hpcscope_core::machine::PeakChoice;
use hpcscope_core::project::{Method, Options, PairRule};
use hpcscope_core::roofline::Scope;

use crate::output::emit_with;

/// Scope choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ScopeArg {
    /// Single core (thesis chapter 6).
    #[default]
    Core,
    /// Whole node, per thread then summed (thesis chapter 7).
    Node,
}

/// Arguments of `project`.
#[derive(Args, Debug)]
pub struct ProjectArgs {
    /// Source machine: built-in id or TOML file.
    #[arg(long)]
    pub source_machine: String,
    /// Profile of the source binary measured on the source machine (with its time).
    #[arg(long)]
    pub source_profile: PathBuf,
    /// Region of the source profile.
    #[arg(long)]
    pub source_region: Option<String>,
    /// Measured source GFLOP/s, overriding the profile's FLOPs / time.
    #[arg(long)]
    pub source_gflops: Option<f64>,
    /// Target machine: built-in id or TOML file.
    #[arg(long)]
    pub target_machine: String,
    /// The peak of both machines: the listed `[[peaks]]` values, or the DGEMM's
    /// (`[peaks.dgemm]`, what `bench --kernels dgemm` measures; the seeds use HPL).
    #[arg(long, value_enum, default_value_t)]
    pub peak: PeakChoice,
    /// Profile of the target binary, analysed for the target's caches (default: the source
    /// profile, i.e. the same binary and hit ratios).
    #[arg(long)]
    pub target_profile: Option<PathBuf>,
    /// Region of the target profile (default: the source region's name, or the only one).
    #[arg(long)]
    pub target_region: Option<String>,
    /// Which (OI, roofline) pairs give points.
    #[arg(long, value_enum, default_value_t)]
    pub pair_rule: PairRule,
    /// Weighted peaks (Gavoille) or the Kwack baseline.
    #[arg(long, value_enum, default_value_t)]
    pub method: Method,
    /// Single core or whole node.
    #[arg(long, value_enum, default_value_t)]
    pub scope: ScopeArg,
    /// Node scope: the source ran alone on the source machine (one thread), so its per-core
    /// share is the single-core values (e.g. projecting 1 thread to N on the same machine).
    #[arg(long)]
    pub source_alone: bool,
    /// Leave out of the interval the pairs whose roofline the measured source exceeds
    /// (efficiency above 1); the seeds keep them, and so does the default.
    #[arg(long)]
    pub drop_contradicted: bool,
    /// Leave out the carried-time points (the projection if the source's time a roofline
    /// does not explain carries over, rather than its efficiency).
    #[arg(long)]
    pub no_carried_time: bool,
    /// No calibration: no point estimate and no calibrated margin (the model's interval,
    /// widened by the source's noise only).
    #[arg(long, conflicts_with = "calibration")]
    pub no_calibration: bool,
    /// Bandwidths and peaks at each binary's vector width, or each level's own (the seeds').
    #[arg(long, value_enum, default_value_t)]
    pub bandwidths: crate::args::BandwidthsArg,
    /// Times of the source's timed runs, seconds (comma-separated): their spread widens the
    /// interval (only their spread is used; the rate comes from the profile).
    #[arg(long, value_delimiter = ',', value_name = "S,S,...")]
    pub source_times: Vec<f64>,
    /// The calibration (point-estimate rule and interval margin: a file `validate
    /// --calibrate` wrote); default: the bundled one.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Validation: the GFLOP/s measured on the target, one per run (comma-separated); the
    /// median is compared, their spread is the target's own; exit 1 if outside.
    #[arg(
        long,
        conflicts_with = "measured_profile",
        value_delimiter = ',',
        value_name = "G,G,..."
    )]
    pub measured: Vec<f64>,
    /// Validation: a profile measured on the target (FLOPs and time); exit 1 if outside.
    #[arg(long)]
    pub measured_profile: Option<PathBuf>,
    /// Format and destination of the result.
    #[command(flatten)]
    pub out: crate::args::OutputArgs,
    /// Also draw source and target rooflines with the projected interval to this SVG file.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Keep the projected interval in the run history.
    #[command(flatten)]
    pub record: crate::args::RecordFlags,
}

/// The library's options of `a`.
fn options(a: &ProjectArgs) -> ProjectOptions {
    ProjectOptions {
        source_machine: a.source_machine.clone(),
        source_profile: a.source_profile.clone(),
        source_region: a.source_region.clone(),
        source_gflops: a.source_gflops,
        target_machine: a.target_machine.clone(),
        peak: a.peak,
        target_profile: a.target_profile.clone(),
        target_region: a.target_region.clone(),
        options: Options {
            pair_rule: a.pair_rule,
            method: a.method,
            scope: match a.scope {
                ScopeArg::Core => Scope::Core,
                ScopeArg::Node => Scope::Node,
            },
        },
        source_alone: a.source_alone,
        drop_contradicted: a.drop_contradicted,
        carried_time: !a.no_carried_time,
        calibrate: !a.no_calibration,
        binary_width: a.bandwidths == crate::args::BandwidthsArg::BinaryWidth,
        source_times: a.source_times.clone(),
        calibration: a.calibration.clone(),
        measured: a.measured.clone(),
        measured_profile: a.measured_profile.clone(),
        svg: a.svg.is_some(),
    }
}

/// Runs `project`.
pub fn run(a: &ProjectArgs) -> Result<ExitCode> {
    let Projected { result, svg } = project(&options(a))?;
    let text = hpcscope_core::view::project::render(a.out.format, &result)?;
    let files: Vec<(&std::path::Path, &str)> =
        a.svg.as_deref().zip(svg.as_deref()).into_iter().collect();
    emit_with(&text, a.out.output.as_deref(), &files)?;
    let p = &result.projection;
    let numbers = serde_json::json!({
        "source_gflops": p.source_gflops,
        "projected_lo_gflops": p.interval.lo,
        "projected_hi_gflops": p.interval.hi,
        "measured_gflops": result.validation.map(|v| v.check.measured_gflops),
        "point_gflops": p.point.as_ref().map(|e| e.gflops),
    });
    let what = format!("{} -> {}", p.source_machine, p.target_machine);
    if let Some(line) = a.record.store("project", &what, &numbers)? {
        eprintln!("{line}");
    }
    Ok(match result.validation {
        Some(v) if !v.inside_within_noise => crate::exit::finding(),
        _ => ExitCode::SUCCESS,
    })
}
