//! The runs of a scaling study for `model scaling`: a CSV of (p, time), or merged parallel
//! jobs at several rank counts (the JSON of `hpcscope merge`, or run directories).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use hpcscope_models::laws::runs_from_csv;

use crate::merge::{MERGED_FORMAT, MergedJob, MergedRuns, list_jobs, merge_job};

/// The (ranks, runtime) points of `model scaling`: a CSV file, or merged jobs (the JSON of
/// `hpcscope merge`, or run directories merged here). Incomplete jobs are left out, loudly.
pub fn scaling_runs(paths: &[PathBuf]) -> Result<Vec<hpcscope_models::laws::Run>> {
    let mut runs = Vec::new();
    let mut csv = 0;
    for p in paths {
        let jobs: Vec<MergedJob> = if p.is_dir() {
            list_jobs(p)?
                .iter()
                .map(|j| merge_job(&j.path, None))
                .collect::<Result<_>>()?
        } else {
            let text = read(p)?;
            if !text.trim_start().starts_with('{') {
                csv += 1;
                runs.extend(runs_from_csv(&text, &p.display().to_string())?);
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{}: not valid JSON", p.display()))?;
            match v["format"].as_str() {
                Some(MERGED_FORMAT) => {
                    vec![serde_json::from_value(v).with_context(|| {
                        format!("{}: a merged job with missing fields", p.display())
                    })?]
                }
                Some("hpcscope-merged-runs") => {
                    serde_json::from_value::<MergedRuns>(v)
                        .with_context(|| {
                            format!("{}: merged runs with missing fields", p.display())
                        })?
                        .jobs
                }
                _ => bail!(
                    "{}: JSON but not a merged job; give the output of `hpcscope merge --format json`, a run directory, or a CSV with p and time_s",
                    p.display()
                ),
            }
        };
        if jobs.is_empty() {
            bail!("{}: no job in it", p.display());
        }
        for j in jobs {
            match (j.complete, j.runtime_s) {
                (true, Some(t)) if t > 0.0 => runs.push(hpcscope_models::laws::Run {
                    p: f64::from(j.size),
                    time_s: t,
                }),
                _ => eprintln!(
                    "warning: {}: job {} is left out: {} ({} of {} ranks with data)",
                    p.display(),
                    j.job_id,
                    if j.complete {
                        "no runtime"
                    } else {
                        "incomplete"
                    },
                    j.ranks_with_data,
                    j.size
                ),
            }
        }
    }
    if csv > 0 && paths.len() > 1 {
        bail!(
            "give one CSV file, or merged jobs (JSON of `hpcscope merge` or run directories), not both"
        );
    }
    Ok(runs)
}

fn read(p: &Path) -> Result<String> {
    // Bounded, with a byte-order mark dropped, as every input hpcscope reads.
    Ok(hpcscope_core::load::read(p, "the file", "check the path")?)
}
