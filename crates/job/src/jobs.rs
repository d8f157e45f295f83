//! The jobs of a run directory: each job's directory of rank files, listed, and the ones a
//! merge takes.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::merge::is_rank_file;

/// A job directory inside a run directory.
#[derive(Debug, Clone)]
pub struct JobDir {
    /// Job id (the directory name).
    pub id: String,
    /// Its path.
    pub path: PathBuf,
    /// Rank files in it.
    pub files: usize,
    /// Earliest start of a rank, when readable.
    pub started: Option<f64>,
    /// The hpcscope command of its ranks, when readable.
    pub command: Option<String>,
    /// Ranks of the job, when readable.
    pub size: Option<u32>,
}

fn has_rank_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            is_rank_file(&n) || (n.starts_with(".rank-") && n.ends_with(".tmp"))
        })
    })
}

/// The jobs of `run_dir` to merge: the one named `job`, every one (`all`), or the only one;
/// the error lists the jobs there are when the choice is not one of them.
pub fn choose_jobs(run_dir: &Path, job: Option<&str>, all: bool) -> Result<Vec<JobDir>> {
    let mut jobs = list_jobs(run_dir)?;
    if jobs.is_empty() {
        bail!(
            "{}: no rank results (rank-*.json) in it or in its subdirectories; give the --run-dir the ranks wrote to",
            run_dir.display()
        );
    }
    let listing = |jobs: &[JobDir]| {
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
    match (job, all) {
        (Some(id), _) => match jobs.iter().position(|j| j.id == id) {
            Some(i) => Ok(vec![jobs.swap_remove(i)]),
            None => bail!(
                "no job '{id}' in {}; its jobs:\n{}",
                run_dir.display(),
                listing(&jobs)
            ),
        },
        (None, true) => Ok(jobs),
        (None, false) if jobs.len() == 1 => Ok(jobs),
        (None, false) => bail!(
            "{} holds {} jobs; merge one with --job ID, or each on its own with --all:\n{}",
            run_dir.display(),
            jobs.len(),
            listing(&jobs)
        ),
    }
}

/// The jobs of a run directory (or the directory itself when it is a job's), oldest first.
pub fn list_jobs(run_dir: &Path) -> Result<Vec<JobDir>> {
    let meta = std::fs::metadata(run_dir).with_context(|| {
        format!(
            "cannot read the run directory {}: give the --run-dir the ranks wrote to",
            run_dir.display()
        )
    })?;
    if !meta.is_dir() {
        bail!(
            "{} is not a directory: give the --run-dir the ranks wrote to",
            run_dir.display()
        );
    }
    let mut dirs = Vec::new();
    if has_rank_files(run_dir) {
        dirs.push(run_dir.to_path_buf());
    } else {
        for e in std::fs::read_dir(run_dir)
            .with_context(|| format!("cannot list {}", run_dir.display()))?
            .flatten()
        {
            let p = e.path();
            if p.is_dir() && has_rank_files(&p) {
                dirs.push(p);
            }
        }
    }
    let mut jobs: Vec<JobDir> = dirs
        .into_iter()
        .map(|p| {
            let mut files = 0;
            let mut started: Option<f64> = None;
            let mut command = None;
            let mut size = None;
            for e in std::fs::read_dir(&p).into_iter().flatten().flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if !is_rank_file(&n) {
                    continue;
                }
                files += 1;
                if let Ok(v) = hpcscope_core::load::read_text_bytes(&e.path())
                    .map_err(|_| ())
                    .and_then(|t| serde_json::from_slice::<serde_json::Value>(&t).map_err(|_| ()))
                {
                    if let Some(t) = v["started_unix"].as_f64() {
                        started = Some(started.map_or(t, |s| s.min(t)));
                    }
                    if command.is_none() {
                        command = v["command"].as_str().map(str::to_string);
                    }
                    if let Some(s) = v["context"]["size"].as_u64() {
                        size = Some(size.unwrap_or(0).max(s as u32));
                    }
                }
            }
            JobDir {
                id: p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                path: p,
                files,
                started,
                command,
                size,
            }
        })
        .collect();
    jobs.sort_by(|a, b| {
        a.started
            .unwrap_or(f64::MAX)
            .total_cmp(&b.started.unwrap_or(f64::MAX))
            .then(a.id.cmp(&b.id))
    });
    Ok(jobs)
}
