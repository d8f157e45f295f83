//! `hpcscope record [-n N] [--tag k=v] -- CMD`: runs a command N times and stores every run
//! (wall, user and system time, plus the numbers of a JSON file the command writes) with its
//! context (machine fingerprint, git state, binary hash, environment) in the history store.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use hpcscope_history::record::{Fingerprint, RunContext, measure_command, shell_join};
use hpcscope_history::store::Store;

use super::history::{DbArg, parse_kv};

/// Run a command N times and store each run in the history.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// Number of runs to record.
    #[arg(short = 'n', long = "runs", default_value_t = 1, value_name = "N")]
    pub runs: usize,
    /// Unrecorded warm-up runs before the recorded ones.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub warmup: usize,
    /// Tag the runs (repeatable), e.g. --tag branch=main --tag size=large.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub tags: Vec<(String, String)>,
    /// Tie the runs to an hpcscope machine file (part of the machine fingerprint).
    #[arg(long, value_name = "FILE")]
    pub machine: Option<PathBuf>,
    /// After each run, read this JSON file (written by the command) and store every number in
    /// it as a metric named by its JSON path.
    #[arg(long, value_name = "FILE")]
    pub metrics_json: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArg,
    /// In a parallel job: one result per rank in a run directory (not the history store).
    #[command(flatten)]
    pub rank: crate::args::RankFlags,
    /// Write a Slurm job-array script instead: one task per run (-n), then the merge.
    #[command(flatten)]
    pub slurm: crate::args::SlurmFlags,
    /// With --slurm: what starts the ranks inside each task, quoted as one argument: `srun`,
    /// "mpirun -np 4" (default: the command runs once per task, as one process).
    #[arg(long, value_name = "CMD", requires = "slurm")]
    pub launcher: Option<String>,
    /// The command to run, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Runs `hpcscope record`.
pub fn run(args: &RecordArgs) -> Result<ExitCode> {
    if args.runs == 0 {
        bail!("-n/--runs must be at least 1");
    }
    if args.slurm.slurm.is_some() {
        return write_slurm(args);
    }
    if args.rank.run_dir.is_some() {
        return run_rank(args);
    }
    let path = args.db.path()?;
    // Open (and migrate) the store before running anything, so a bad store fails fast.
    let mut store = Store::open(&path)?;
    let mut fingerprint = Fingerprint::current();
    if let Some(m) = &args.machine {
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
    let tags = args.tags.iter().cloned().collect();
    let ctx = RunContext::capture(&args.command, &cwd, tags, fingerprint.clone());
    let command = ctx.command().to_string();
    for i in 0..args.warmup {
        let m = measure_command(&args.command).with_context(|| cannot_run(&args.command[0]))?;
        eprintln!("warm-up {}/{}: {:.4} s", i + 1, args.warmup, m.wall_s);
    }
    let mut failed = None;
    // Runs whose --metrics-json was refused: recorded with their times, reported at the end.
    let mut refused: Vec<(i64, String)> = Vec::new();
    eprintln!(
        "recording {} run(s) of `{command}` into {} (machine {})",
        args.runs,
        path.display(),
        fingerprint.id()
    );
    for i in 0..args.runs {
        if let Some(p) = &args.metrics_json {
            // A stale file from an earlier run must not be taken for this run's output.
            let _ = std::fs::remove_file(p);
        }
        let m = measure_command(&args.command).with_context(|| cannot_run(&args.command[0]))?;
        // The run is measured: a metrics file that cannot be taken loses its numbers, never
        // the run.
        let metrics = args.metrics_json.as_deref().map(metrics_of);
        let r = ctx.record(&m, metrics.as_ref().and_then(|x| x.as_ref().ok()));
        let id = store.record(&r)?;
        if let Some(Err(why)) = metrics {
            eprintln!(
                "run {}/{} -> #{id}: {why}; the run is recorded with its times only",
                i + 1,
                args.runs
            );
            refused.push((id, why));
        }
        eprintln!(
            "run {}/{} -> #{id}: {:.4} s (user {:.4} s, sys {:.4} s){}",
            i + 1,
            args.runs,
            m.wall_s,
            m.user_s,
            m.sys_s,
            m.failure().map(|f| format!(", {f}")).unwrap_or_default()
        );
        if let Some(f) = m.failure() {
            failed = Some((f, m.shell_status()));
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
    if let Some((how, status)) = failed {
        // hpcscope ends as the command did (as `trace` and `counters run` do), so that a
        // script sees the command's own status.
        eprintln!(
            "error: the command failed ({how}); its runs were recorded with their exit status, \
             fix the command or filter them out"
        );
        return Ok(ExitCode::from(u8::try_from(status).unwrap_or(1)));
    }
    Ok(ExitCode::SUCCESS)
}

/// `record --run-dir`: this rank runs the command once and writes its times (and the
/// numbers of `--metrics-json`, where `{rank}` in the path becomes the rank) to the run
/// directory.
fn run_rank(args: &RecordArgs) -> Result<ExitCode> {
    if args.runs != 1 || args.warmup != 0 {
        bail!(
            "--run-dir: each rank starts the program once (an MPI library refuses a second MPI_Init in the same rank), so -n and --warmup do not apply; repeat the whole job instead, or let `record -n {} --slurm SCRIPT --run-dir DIR` make each repetition a job-array task",
            args.runs
        );
    }
    let Some(session) = args.rank.begin("record", &args.command)? else {
        unreachable!("run_rank is called with --run-dir");
    };
    let metrics_path = args.metrics_json.as_ref().map(|p| {
        PathBuf::from(
            p.display()
                .to_string()
                .replace("{rank}", &session.context.rank.to_string()),
        )
    });
    if let Some(p) = &metrics_path {
        let _ = std::fs::remove_file(p);
    }
    let ran = hpcscope_job::rank::run_command(&args.command)?;
    let mut out = hpcscope_job::rank::Outcome::from_ran(&ran);
    let mut data = serde_json::json!({
        "time_s": ran.wall_s,
        "user_s": ran.user_s,
        "sys_s": ran.sys_s,
        "tags": args.tags.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
    });
    if let Some(p) = &metrics_path {
        match metrics_of(p) {
            Ok(v) => data["metrics"] = v,
            Err(why) => out.notes.push(why),
        }
    }
    out.data = data;
    Ok(ExitCode::from(session.finish(out)?))
}

/// `record --slurm`: a job-array script whose tasks each run the command once (under the
/// launcher, when given) with `record --run-dir`, and a merge of every repetition.
fn write_slurm(args: &RecordArgs) -> Result<ExitCode> {
    let Some(run_dir) = &args.rank.run_dir else {
        bail!(
            "--slurm: give --run-dir DIR, a directory every node can write, for the runs' results"
        );
    };
    if args.warmup != 0 {
        bail!("--slurm: each array task is one run; --warmup does not apply");
    }
    if args.rank.job_id.is_some() {
        bail!("--slurm: each repetition is a job of its own; leave out --job-id");
    }
    let launcher = match &args.launcher {
        Some(l) => {
            let w = hpcscope_bench::mpi::launch::split_words(l)
                .map_err(|e| anyhow::anyhow!("--launcher '{l}' {e}"))?;
            format!("{} ", shell_join(&w))
        }
        None => String::new(),
    };
    let mut rec: Vec<String> = Vec::new();
    for (k, v) in &args.tags {
        rec.push("--tag".into());
        rec.push(format!("{k}={v}"));
    }
    if let Some(m) = &args.metrics_json {
        rec.push("--metrics-json".into());
        rec.push(m.display().to_string());
    }
    let plan = hpcscope_job::slurm::Plan {
        what: "record".into(),
        summary: format!("{} run(s) of `{}`", args.runs, shell_join(&args.command)),
        tasks: args.runs as u32,
        workdir: std::env::current_dir()?,
        run_dir: crate::args::absolute(run_dir)?,
        task: format!(
            r#"exec {launcher}"$HPCSCOPE" record --run-dir "$RUN" {}-- {}"#,
            if rec.is_empty() {
                String::new()
            } else {
                format!("{} ", shell_join(&rec))
            },
            shell_join(&args.command)
        ),
        merge: "--all".into(),
    };
    args.slurm.write(&plan)?;
    Ok(ExitCode::SUCCESS)
}

/// The numbers the command wrote to `p` (`--metrics-json`), read with the input limit; the
/// error says what is wrong with the file and how to fix it.
fn metrics_of(p: &Path) -> std::result::Result<serde_json::Value, String> {
    if !p.exists() {
        return Err(format!(
            "the command did not write {} (--metrics-json): write a JSON object of numbers there",
            p.display()
        ));
    }
    let text = hpcscope_core::load::read(
        p,
        "the metrics file (--metrics-json)",
        "write a JSON object of numbers there",
    )
    .map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| {
        if e.to_string().starts_with("recursion limit exceeded") {
            format!(
                "{}: JSON nested deeper than 128 levels at line {} column {} (--metrics-json): \
                 write a JSON object of numbers, nested less",
                p.display(),
                e.line(),
                e.column()
            )
        } else {
            format!(
                "{}: not valid JSON (--metrics-json): {e}: write a JSON object of numbers there",
                p.display()
            )
        }
    })
}

fn cannot_run(prog: &str) -> String {
    format!("cannot run `{prog}`: check that it exists and is executable (is it on PATH?)")
}
