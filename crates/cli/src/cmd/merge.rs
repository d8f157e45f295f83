//! `hpcscope merge RUN_DIR`: one result for a parallel job from the files its ranks wrote
//! with `--run-dir` (the merge is `hpcscope_job::merge`, its tables and charts
//! `hpcscope_job::render`); this file picks the jobs, writes and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use hpcscope_job::merge::{MergedJob, choose_jobs, job_flame_profile, load_reference, merge_job};
use hpcscope_job::render::{html_report, job_svg, record_numbers, render_merged};

use crate::output::{Format, emit_with};

/// Arguments of `merge`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// A run directory (one directory per job inside) or one job's directory.
    pub run_dir: PathBuf,
    /// The job to merge when the run directory holds several (see the list the error gives).
    #[arg(long, value_name = "ID", conflicts_with = "all")]
    pub job: Option<String>,
    /// Merge every job of the run directory, each on its own, with a table across them
    /// (repetitions of one job, a sweep).
    #[arg(long)]
    pub all: bool,
    /// A reference run of the same program (fewer ranks, usually): a run directory with one
    /// job, a job directory, or the JSON of `merge --format json`. Adds computation scaling
    /// (eq. 3.10) and global efficiency (eq. 3.13).
    #[arg(long, value_name = "RUN")]
    pub reference: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Write the result to this file instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Also write an HTML report: efficiencies, tables, the imbalance chart (and the job's
    /// flame graph for a profile).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also draw the time of each rank (computation, MPI, start-up and shut-down) to this SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// For a `profile` job: the job's flame graph (each rank's stacks under its rank).
    #[arg(long, value_name = "FILE")]
    pub flamegraph: Option<PathBuf>,
    /// Keep the job's numbers (runtime, efficiencies) in the run history.
    #[command(flatten)]
    pub record: crate::args::RecordFlags,
}

/// Runs `merge`: 0 when the job is complete, 1 when ranks are missing, failed or
/// unreadable (the result is still written), 2 on bad input.
pub fn run(a: &MergeArgs) -> Result<ExitCode> {
    let chosen = choose_jobs(&a.run_dir, a.job.as_deref(), a.all)?;
    let reference = match &a.reference {
        Some(p) => Some(load_reference(p)?),
        None => None,
    };
    let merged: Vec<MergedJob> = chosen
        .iter()
        .map(|j| merge_job(&j.path, reference.clone()))
        .collect::<Result<_>>()?;
    let complete = merged.iter().all(|m| m.complete);
    let text = render_merged(&merged, a.all, &a.run_dir, a.format)?;
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    if let Some(svg) = &a.svg {
        match job_svg(&merged[0]) {
            Some(s) => files.push((svg.clone(), s)),
            None => eprintln!("note: no rank has data; {} not written", svg.display()),
        }
    }
    let flame = if merged[0].command == "profile" {
        let p = job_flame_profile(&merged[0])?;
        let title = format!("job {} ({} samples)", merged[0].job_id, p.total());
        if let Some(f) = &a.flamegraph {
            let svg = p
                .flamegraph_svg(&title)
                .map_err(|e| anyhow::anyhow!("drawing the flame graph: {e}"))?;
            files.push((f.clone(), svg));
        }
        p.flamegraph_svg_static(&title).ok()
    } else {
        if a.flamegraph.is_some() {
            eprintln!(
                "note: --flamegraph needs a `profile` job; job {} ran `{}`",
                merged[0].job_id, merged[0].command
            );
        }
        None
    };
    if let Some(h) = &a.html {
        files.push((h.clone(), html_report(&merged, flame, &a.run_dir)));
    }
    let files: Vec<(&std::path::Path, &str)> = files
        .iter()
        .map(|(p, s)| (p.as_path(), s.as_str()))
        .collect();
    emit_with(&text, a.output.as_deref(), &files)?;
    for m in &merged {
        if let Some(line) = a.record.store(
            "merge",
            &format!("{} {}", m.command, m.argv.join(" ")),
            &record_numbers(m),
        )? {
            eprintln!("{line}");
        }
    }
    if !complete {
        eprintln!(
            "hpcscope merge: incomplete job{}: see the problems listed (exit 1)",
            if merged.len() > 1 { "s" } else { "" }
        );
        return Ok(crate::exit::finding());
    }
    Ok(ExitCode::SUCCESS)
}
