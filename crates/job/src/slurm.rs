//! Sweeps as Slurm job arrays: `explore --slurm` and `record --slurm` write a script that
//! submits one array task per design point or repetition, and a job that merges their
//! results once the array is done (`--dependency=afterany`, or `afterok`).
//!
//! The script is its own submitter: `bash SCRIPT` (or `sbatch SCRIPT`) submits the array
//! and the merge job, which run the same script with `HPCSCOPE_SLURM_STEP` set to `task` or
//! `merge`. Each array writes into `RUN_DIR/array-<array job id>/`, so two sweeps never
//! share a directory.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use hpcscope_history::record::shell_join;

/// When the merge job may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dependency {
    /// After every task ended, however it ended (the merge reports the failed ones).
    #[default]
    Afterany,
    /// Only when every task succeeded (a failed task cancels the merge).
    Afterok,
}

impl Dependency {
    /// `afterany` or `afterok`.
    pub fn name(self) -> &'static str {
        match self {
            Dependency::Afterany => "afterany",
            Dependency::Afterok => "afterok",
        }
    }
}

/// How the job array is submitted.
#[derive(Debug, Clone, Default)]
pub struct SlurmOptions {
    /// Where the script goes.
    pub script: PathBuf,
    /// sbatch options for the array tasks (`--partition=short`).
    pub sbatch: Vec<String>,
    /// When the merge job starts.
    pub dependency: Dependency,
    /// At most this many array tasks at a time (`--array=0-N%K`).
    pub max_parallel: Option<u32>,
}

/// What the script runs.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `explore` or `record`: the job name and the comments.
    pub what: String,
    /// One line on what the array does, for the script's head.
    pub summary: String,
    /// Array tasks.
    pub tasks: u32,
    /// The directory the command was written from (relative paths are relative to it).
    pub workdir: PathBuf,
    /// Where the results go (absolute).
    pub run_dir: PathBuf,
    /// The task's command, shell text: may use `$HPCSCOPE`, `$RUN` (this array's result
    /// directory) and `$SLURM_ARRAY_TASK_ID`.
    pub task: String,
    /// The merge's `hpcscope merge` arguments after `"$RUN"`, shell text.
    pub merge: String,
}

/// The absolute form of `p` (relative to the current directory).
pub fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("cannot make {} absolute", p.display()))
}

/// `p` single-quoted for the shell when needed.
pub fn quote(p: &Path) -> String {
    shell_join(&[p.display().to_string()])
}

/// The script's text.
pub fn script(plan: &Plan, flags: &SlurmOptions, hpcscope: &Path) -> Result<String> {
    if plan.tasks == 0 {
        bail!("nothing to run: the {} has no task", plan.what);
    }
    for o in &flags.sbatch {
        if !o.starts_with('-') {
            bail!("--sbatch {o}: give an sbatch option, e.g. --sbatch=--partition=short");
        }
        if o.starts_with("--array") || o.starts_with("--dependency") || o == "-a" || o == "-d" {
            bail!(
                "--sbatch {o}: the script sets the array and the dependency itself; use --max-parallel and --dependency"
            );
        }
    }
    let array = match flags.max_parallel {
        Some(0) => bail!("--max-parallel 0: give at least 1"),
        Some(k) => format!("0-{}%{k}", plan.tasks - 1),
        None => format!("0-{}", plan.tasks - 1),
    };
    let opts = if flags.sbatch.is_empty() {
        String::new()
    } else {
        format!("{} ", shell_join(&flags.sbatch))
    };
    let run = quote(&plan.run_dir);
    Ok(format!(
        r#"#!/bin/bash
# Written by hpcscope {version}: {summary}
# A Slurm job array of {tasks} task(s), then one job that merges their results
# (--dependency={dep}). Submit with:   bash {name}   (or: sbatch {name})
# Results: {run_dir}/array-<array job id>/, merged into merged.json and report.html there.
#SBATCH --job-name=hpcscope-{what}
#SBATCH --output={run_dir}/slurm-%A_%a.out
set -euo pipefail
HPCSCOPE={hpcscope}
RUN_DIR={run}
cd {workdir}
case "${{HPCSCOPE_SLURM_STEP:-submit}}" in
submit)
    mkdir -p "$RUN_DIR"
    array=$(sbatch --parsable --array={array} {opts}--export=ALL,HPCSCOPE_SLURM_STEP=task "$0")
    array=${{array%%;*}}
    merge=$(sbatch --parsable --job-name=hpcscope-merge --dependency={dep}:"$array" \
        --output="$RUN_DIR/slurm-%j-merge.out" \
        --export=ALL,HPCSCOPE_SLURM_STEP=merge,HPCSCOPE_ARRAY_JOB="$array" "$0")
    echo "hpcscope: job array $array ({tasks} task(s)) and merge job ${{merge%%;*}}; results in $RUN_DIR/array-$array"
    ;;
task)
    RUN="$RUN_DIR/array-$SLURM_ARRAY_JOB_ID"
    mkdir -p "$RUN"
    {task}
    ;;
merge)
    RUN="$RUN_DIR/array-$HPCSCOPE_ARRAY_JOB"
    exec "$HPCSCOPE" merge "$RUN" {merge} --format json -o "$RUN/merged.json" --html "$RUN/report.html"
    ;;
*)
    echo "HPCSCOPE_SLURM_STEP=$HPCSCOPE_SLURM_STEP: expected submit, task or merge" >&2
    exit 2
    ;;
esac
"#,
        version = env!("CARGO_PKG_VERSION"),
        summary = plan.summary.replace('\n', " "),
        tasks = plan.tasks,
        dep = flags.dependency.name(),
        name = flags
            .script
            .file_name()
            .map_or("SCRIPT".into(), |n| n.to_string_lossy().into_owned()),
        run_dir = plan.run_dir.display(),
        what = plan.what,
        hpcscope = quote(hpcscope),
        workdir = quote(&plan.workdir),
        task = plan.task,
        merge = plan.merge,
    ))
}

/// Writes the script (executable) and says how to submit it.
pub fn write(plan: &Plan, flags: &SlurmOptions) -> Result<()> {
    let path = &flags.script;
    let me = std::env::current_exe().context("cannot find the hpcscope binary")?;
    let text = script(plan, flags, &me)?;
    hpcscope_core::fs::write_atomic(path, text.as_bytes())
        .with_context(|| format!("cannot write '{}'", path.display()))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))?;
    eprintln!(
        "wrote {}: {} array task(s) and a merge job; submit it with `bash {}`",
        path.display(),
        plan.tasks,
        path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            what: "explore".into(),
            summary: "3 design points of s.toml".into(),
            tasks: 3,
            workdir: "/home/u/my runs".into(),
            run_dir: "/scratch/u/sweep".into(),
            task:
                r#"exec "$HPCSCOPE" explore s.toml --point "$SLURM_ARRAY_TASK_ID" --run-dir "$RUN""#
                    .into(),
            merge: String::new(),
        }
    }

    #[test]
    fn the_script_submits_an_array_and_a_merge_after_it() {
        let flags = SlurmOptions {
            script: "sweep.sh".into(),
            sbatch: vec!["--partition=short".into(), "--time=10".into()],
            dependency: Dependency::Afterok,
            max_parallel: Some(2),
        };
        let s = script(&plan(), &flags, Path::new("/opt/hpcscope")).unwrap();
        assert!(s.starts_with("#!/bin/bash\n"));
        assert!(
            s.contains(
                "--array=0-2%2 --partition=short --time=10 --export=ALL,HPCSCOPE_SLURM_STEP=task"
            ),
            "{s}"
        );
        assert!(s.contains("--dependency=afterok:\"$array\""), "{s}");
        assert!(s.contains("cd '/home/u/my runs'"), "{s}");
        assert!(s.contains("HPCSCOPE=/opt/hpcscope"));
        assert!(s.contains("RUN=\"$RUN_DIR/array-$SLURM_ARRAY_JOB_ID\""));
        assert!(
            s.contains("merge \"$RUN\"  --format json -o \"$RUN/merged.json\""),
            "{s}"
        );
        // bash accepts it.
        if let Ok(o) = std::process::Command::new("bash")
            .arg("-n")
            .stdin(std::process::Stdio::piped())
            .arg("/dev/stdin")
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(s.as_bytes())?;
                c.wait_with_output()
            })
        {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
    }

    #[test]
    fn options_that_would_break_the_array_are_refused() {
        for bad in ["--array=0-9", "--dependency=afterok:1", "partition=x"] {
            let flags = SlurmOptions {
                script: "s.sh".into(),
                sbatch: vec![bad.into()],
                ..SlurmOptions::default()
            };
            let e = script(&plan(), &flags, Path::new("/h")).unwrap_err();
            assert!(e.to_string().contains("--sbatch"), "{e}");
        }
        let flags = SlurmOptions {
            max_parallel: Some(0),
            ..SlurmOptions::default()
        };
        assert!(script(&plan(), &flags, Path::new("/h")).is_err());
    }
}
