//! `hpcscope explore SCENARIO.toml`: sweep a design space and compare the intervals.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use hpcscope_analysis::explore::{ExploreOptions, default_dirs, explore, keep_point};
use hpcscope_analysis::scenario::{Limits, resolve_within};

use crate::output::emit_with;

/// Arguments of `explore`.
#[derive(Args, Debug)]
pub struct ExploreArgs {
    /// Scenario TOML file (see docs/scenario-format.md and examples/scenarios/).
    pub scenario: PathBuf,
    /// Format and destination of the result.
    #[command(flatten)]
    pub out: crate::args::OutputArgs,
    /// Also draw the intervals across the sweep to this SVG file.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Leave out of the intervals the pairs whose roofline the measured source exceeds
    /// (efficiency above 1); the seeds keep them, and so does the default.
    #[arg(long)]
    pub drop_contradicted: bool,
    /// Leave out the carried-time points (the projection if the source's time a roofline
    /// does not explain carries over, rather than its efficiency).
    #[arg(long)]
    pub no_carried_time: bool,
    /// No calibration: no point estimates and no calibrated margin.
    #[arg(long, conflicts_with = "calibration")]
    pub no_calibration: bool,
    /// Bandwidths and peaks at each binary's vector width, or each level's own (the seeds').
    #[arg(long, value_enum, default_value_t)]
    pub bandwidths: crate::args::BandwidthsArg,
    /// The peak of every machine: the listed `[[peaks]]` values, or the DGEMM's
    /// (`[peaks.dgemm]`, what `bench --kernels dgemm` measures; the seeds use HPL).
    #[arg(long, value_enum, default_value_t)]
    pub peak: hpcscope_core::machine::PeakChoice,
    /// The calibration (point-estimate rule and interval margin: a file `validate
    /// --calibrate` wrote); default: the bundled one.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Keep every design point's interval in the run history.
    #[command(flatten)]
    pub record: crate::args::RecordFlags,
    /// Only design point I (0-based, variants outer, targets inner), e.g. one task of a job
    /// array; with --run-dir its result goes to the run directory for `hpcscope merge`.
    #[arg(long, value_name = "I")]
    pub point: Option<usize>,
    /// With --point: where the design point's result goes (one file per point).
    #[command(flatten)]
    pub rank: crate::args::RankFlags,
    /// Write a Slurm job-array script instead: one task per design point, then the merge.
    #[command(flatten)]
    pub slurm: crate::args::SlurmFlags,
    /// Refuse a sweep of more design points than this (variants x targets).
    #[arg(long, value_name = "N", default_value_t = hpcscope_core::explore::DEFAULT_MAX_POINTS)]
    pub max_points: u64,
    /// Refuse a sweep whose results would take more memory than this, MiB.
    #[arg(long, value_name = "M", default_value_t = hpcscope_core::explore::DEFAULT_MAX_BYTES >> 20)]
    pub max_memory_mb: u64,
    /// With a program: count only inside this function (repeatable), as `mix --function`.
    #[arg(long = "function", value_name = "NAME")]
    pub functions: Vec<String>,
    /// Where the re-simulated bytes per level are kept, one file per (program, cache
    /// geometry), so that the next exploration runs nothing (default: `resim-cache/` beside
    /// the -o file, or beside the scenario).
    #[arg(long, value_name = "DIR")]
    pub resim_dir: Option<PathBuf>,
    /// The program (and its arguments) of the variants whose scenario entry has no
    /// `command`: targets whose caches differ from those the profile was simulated for (a
    /// transformed cache, or another machine) get their bytes per level re-simulated with
    /// it (one `mix` run per program, every geometry at once).
    #[arg(last = true, value_name = "PROGRAM ARGS")]
    pub command: Vec<String>,
}

/// `--slurm`: the job-array script, one task per design point.
fn write_slurm(a: &ExploreArgs, name: &str, n: usize) -> Result<ExitCode> {
    let run_dir = a.rank.run_dir.as_deref().ok_or_else(|| {
        anyhow::anyhow!(
            "--slurm: give --run-dir DIR, a directory every node can write, for the design points' results"
        )
    })?;
    if a.point.is_some() {
        anyhow::bail!("--slurm writes one task per design point; leave out --point");
    }
    a.slurm.write(&hpcscope_job::slurm::Plan::explore(
        n,
        name,
        &a.scenario,
        run_dir,
    )?)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `explore`.
pub fn run(a: &ExploreArgs) -> Result<ExitCode> {
    // A job array runs one point per task: the whole sweep is never held at once.
    let whole = a.slurm.slurm.is_none() && a.point.is_none();
    let limits = Limits::of(a.max_points, a.max_memory_mb, whole);
    let (s, mut r, mut caches) = resolve_within(&a.scenario, limits)?;
    let n = r.variants.len() * r.targets.len();
    if let Some(notice) = hpcscope_core::explore::Cost::of(&r).notice() {
        eprintln!("{notice}");
    }
    if a.slurm.slurm.is_some() {
        return write_slurm(a, &s.name, n);
    }
    if let Some(i) = a.point {
        keep_point(&mut r, &mut caches, i, &a.scenario)?;
    }
    let session = match a.point {
        Some(i) => a
            .rank
            .begin_task("explore", &[a.scenario.display().to_string()], i, n)?,
        None if a.rank.run_dir.is_some() => anyhow::bail!(
            "--run-dir: explore writes one design point per task there; give --point I (or --slurm SCRIPT to make the tasks)"
        ),
        None => None,
    };
    let started = std::time::Instant::now();
    let (base, resim_dir) = default_dirs(&a.scenario, a.out.output.as_deref());
    let explored = explore(
        &s,
        r,
        &caches,
        &ExploreOptions {
            peak: a.peak,
            binary_width: a.bandwidths == crate::args::BandwidthsArg::BinaryWidth,
            calibration: a.calibration.clone(),
            calibrate: !a.no_calibration,
            drop_contradicted: a.drop_contradicted,
            carried_time: !a.no_carried_time,
            base,
            resim_dir: a.resim_dir.clone().unwrap_or(resim_dir),
            program: hpcscope_analysis::resim::Program {
                command: a.command.clone(),
                functions: a.functions.clone(),
            },
        },
    )?;
    let result = &explored.result;
    if let Some(session) = session {
        let mut data = serde_json::to_value(result)?;
        data["point_index"] = a.point.into();
        let outcome = hpcscope_job::rank::Outcome::succeeded(started, data);
        return Ok(ExitCode::from(session.finish(outcome)?));
    }
    let text = explored.render(a.out.format)?;
    let svg = a.svg.as_ref().map(|p| {
        (
            p.as_path(),
            hpcscope_core::view::explore_svg(&result.points, &s.name, result.source_gflops),
        )
    });
    let files: Vec<(&std::path::Path, &str)> = svg.iter().map(|(p, s)| (*p, s.as_str())).collect();
    emit_with(&text, a.out.output.as_deref(), &files)?;
    if let Some(line) = a.record.store(
        "explore",
        &a.scenario.display().to_string(),
        &explored.numbers(),
    )? {
        eprintln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
