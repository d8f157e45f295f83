//! `hpcscope merge RUN_DIR`: one result for a parallel job from the files its ranks wrote
//! with `--run-dir` (the merge is `hpcscope_job::merge`, its tables and charts
//! `hpcscope_job::render`); this file picks the jobs, writes and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use hpcscope_job::merge::{
    JobDir, MergedJob, MergedRuns, Spread, job_flame_profile, list_jobs, load_reference, merge_job,
};
use hpcscope_job::render::{html_sections, job_svg, record_numbers, render_job, render_runs};
use hpcscope_report::html_page;

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
    let jobs = list_jobs(&a.run_dir)?;
    if jobs.is_empty() {
        bail!(
            "{}: no rank results (rank-*.json) in it or in its subdirectories; give the --run-dir the ranks wrote to",
            a.run_dir.display()
        );
    }
    let listing = || {
        jobs.iter()
            .map(|j| {
                format!(
                    "  {} ({} file(s){}{})",
                    j.id,
                    j.files,
                    j.command
                        .as_ref()
                        .map(|c| format!(", {c}"))
                        .unwrap_or_default(),
                    j.size.map(|s| format!(", {s} ranks")).unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let chosen: Vec<&JobDir> = match (&a.job, a.all) {
        (Some(id), _) => match jobs.iter().find(|j| &j.id == id) {
            Some(j) => vec![j],
            None => bail!(
                "no job '{id}' in {}; its jobs:\n{}",
                a.run_dir.display(),
                listing()
            ),
        },
        (None, true) => jobs.iter().collect(),
        (None, false) if jobs.len() == 1 => vec![&jobs[0]],
        (None, false) => bail!(
            "{} holds {} jobs; merge one with --job ID, or each on its own with --all:\n{}",
            a.run_dir.display(),
            jobs.len(),
            listing()
        ),
    };
    let reference = match &a.reference {
        Some(p) => Some(load_reference(p)?),
        None => None,
    };
    let merged: Vec<MergedJob> = chosen
        .iter()
        .map(|j| merge_job(&j.path, reference.clone()))
        .collect::<Result<_>>()?;
    let complete = merged.iter().all(|m| m.complete);
    let text = if a.all {
        let runs = MergedRuns {
            format: "hpcscope-merged-runs".into(),
            directory: a.run_dir.display().to_string(),
            jobs: merged.clone(),
            runtime: Spread::of(&merged),
        };
        render_runs(&runs, a.format)?
    } else {
        render_job(&merged[0], a.format)?
    };
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
        let mut sections = Vec::new();
        for (i, m) in merged.iter().enumerate() {
            sections.extend(html_sections(m, if i == 0 { flame.clone() } else { None }));
        }
        files.push((
            h.clone(),
            html_page(
                &format!("hpcscope merge: {}", a.run_dir.display()),
                &sections,
            ),
        ));
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
