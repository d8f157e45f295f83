//! `hpcscope record`: runs a command N times and stores every run (wall, user and system
//! time, plus the numbers of a JSON file the command writes) with its context (machine
//! fingerprint, git state, binary hash, environment) in the history store.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use hpcscope_history::record::{
    Fingerprint, RunContext, cannot_run, measure_command, read_metrics_json,
};
use hpcscope_history::store::Store;

/// What `record` runs and keeps.
#[derive(Debug, Clone, Default)]
pub struct RecordOptions<'a> {
    /// Recorded runs (at least 1).
    pub runs: usize,
    /// Unrecorded warm-up runs before them.
    pub warmup: usize,
    /// The runs' tags.
    pub tags: BTreeMap<String, String>,
    /// A machine file the runs are tied to (part of the machine fingerprint).
    pub machine: Option<&'a Path>,
    /// A JSON file the command writes, whose numbers become metrics.
    pub metrics_json: Option<&'a Path>,
    /// The command.
    pub command: &'a [String],
}

/// How the command failed in a recorded run (the last such run): what happened, and the
/// status a shell would see, which `record` ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    /// What happened (`exit status 3`, `killed by signal 9`).
    pub how: String,
    /// The shell's status.
    pub status: i32,
}

/// Runs `o.command` as `o` says into `store` (at `store_path`, for the messages), each run's
/// progress on stderr. A run whose metrics file cannot be taken is recorded with its times
/// and makes the whole an error at the end, naming the runs; a command that fails is
/// recorded with its status and returned.
pub fn record(store: &mut Store, store_path: &Path, o: &RecordOptions) -> Result<Option<Failed>> {
    let mut fingerprint = Fingerprint::current();
    if let Some(m) = o.machine {
        // Bounded, as every input: a device that never ends is refused, not hashed forever.
        let text = hpcscope_core::load::read(
            m,
            "the machine file (--machine)",
            "give an hpcscope machine file (TOML)",
        )?;
        let name = m
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| m.display().to_string());
        fingerprint = fingerprint.with_machine_file(&name, text.as_bytes());
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let ctx = RunContext::capture(o.command, &cwd, o.tags.clone(), fingerprint.clone());
    let command = ctx.command().to_string();
    for i in 0..o.warmup {
        let m = measure_command(o.command).with_context(|| cannot_run(&o.command[0]))?;
        eprintln!("warm-up {}/{}: {:.4} s", i + 1, o.warmup, m.wall_s);
    }
    let mut failed = None;
    // Runs whose --metrics-json was refused: recorded with their times, reported at the end.
    let mut refused: Vec<(i64, String)> = Vec::new();
    eprintln!(
        "recording {} run(s) of `{command}` into {} (machine {})",
        o.runs,
        store_path.display(),
        fingerprint.id()
    );
    for i in 0..o.runs {
        if let Some(p) = o.metrics_json {
            // A stale file from an earlier run must not be taken for this run's output.
            let _ = std::fs::remove_file(p);
        }
        let m = measure_command(o.command).with_context(|| cannot_run(&o.command[0]))?;
        // The run is measured: a metrics file that cannot be taken loses its numbers, never
        // the run.
        let metrics = o.metrics_json.map(read_metrics_json);
        let r = ctx.record(&m, metrics.as_ref().and_then(|x| x.as_ref().ok()));
        let id = store.record(&r)?;
        if let Some(Err(why)) = metrics {
            eprintln!(
                "run {}/{} -> #{id}: {why}; the run is recorded with its times only",
                i + 1,
                o.runs
            );
            refused.push((id, why));
        }
        eprintln!(
            "run {}/{} -> #{id}: {:.4} s (user {:.4} s, sys {:.4} s){}",
            i + 1,
            o.runs,
            m.wall_s,
            m.user_s,
            m.sys_s,
            m.failure().map(|f| format!(", {f}")).unwrap_or_default()
        );
        if let Some(how) = m.failure() {
            failed = Some(Failed {
                how,
                status: m.shell_status(),
            });
        }
    }
    if let Some((_, why)) = refused.first() {
        let ids: Vec<String> = refused.iter().map(|(id, _)| format!("#{id}")).collect();
        bail!(
            "{why}; run(s) {} are recorded without the numbers of --metrics-json (their times \
             are kept): fix what the command writes there",
            ids.join(", ")
        );
    }
    Ok(failed)
}
