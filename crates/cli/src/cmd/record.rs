//! `hpcscope record [-n N] [--tag k=v] -- CMD`: runs a command N times and stores every run
//! (wall, user and system time, plus the numbers of a JSON file the command writes) with its
//! context (machine fingerprint, git state, binary hash, environment) in the history store.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use hpcscope_analysis::record::{Failed, RecordOptions, record};
use hpcscope_history::store::Store;

use crate::args::{DbArg, parse_kv};

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
    let options = RecordOptions {
        runs: args.runs,
        warmup: args.warmup,
        tags: args.tags.iter().cloned().collect(),
        machine: args.machine.as_deref(),
        metrics_json: args.metrics_json.as_deref(),
        command: &args.command,
    };
    let Some(Failed { how, status }) = record(&mut store, &path, &options)? else {
        return Ok(ExitCode::SUCCESS);
    };
    // hpcscope ends as the command did (as `trace` and `counters run` do), so that a script
    // sees the command's own status.
    eprintln!(
        "error: the command failed ({how}); its runs were recorded with their exit status, \
         fix the command or filter them out"
    );
    Ok(ExitCode::from(u8::try_from(status).unwrap_or(1)))
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
    let out = hpcscope_job::rank::recorded(
        session.context.rank,
        &args.command,
        args.metrics_json.as_deref(),
        &args.tags,
    )?;
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
    let plan = hpcscope_job::slurm::Plan::record(
        args.runs,
        &args.command,
        &args.tags,
        args.metrics_json.as_deref(),
        args.launcher.as_deref(),
        run_dir,
    )?;
    args.slurm.write(&plan)?;
    Ok(ExitCode::SUCCESS)
}
