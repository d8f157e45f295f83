//! Argument groups shared by several commands (flattened into their clap structs), each
//! turned into the options of the library that does the work.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use hpcscope_history::store::{Filter, default_db_path};
use hpcscope_job::rank::RankSession;
use hpcscope_job::slurm::{Plan, SlurmOptions};

/// `--run-dir DIR [--job-id ID]`, flattened into the commands that measure a program.
#[derive(Args, Debug, Clone, Default)]
pub struct RankFlags {
    /// Inside a parallel job (mpirun, srun, a Slurm job array): write this rank's result into
    /// DIR/<job id>/ for `hpcscope merge DIR`, instead of printing it. The rank, size, local
    /// rank and node come from the launcher's environment.
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
    /// The job's id in the run directory, the same on every rank (default: from the
    /// launcher: Open MPI's job id, Slurm's job and step ids, $HPCSCOPE_JOB_ID).
    #[arg(long, value_name = "ID", requires = "run_dir")]
    pub job_id: Option<String>,
}

impl RankFlags {
    /// Starts a rank session when `--run-dir` is given (see [`hpcscope_job::rank::begin`]).
    pub fn begin(&self, command: &str, argv: &[String]) -> Result<Option<RankSession>> {
        self.run_dir
            .as_deref()
            .map(|d| hpcscope_job::rank::begin(d, self.job_id.as_deref(), command, argv))
            .transpose()
    }

    /// Starts the session of task `index` of `count` when `--run-dir` is given (see
    /// [`hpcscope_job::rank::begin_task`]).
    pub fn begin_task(
        &self,
        command: &str,
        argv: &[String],
        index: usize,
        count: usize,
    ) -> Result<Option<RankSession>> {
        self.run_dir
            .as_deref()
            .map(|d| {
                hpcscope_job::rank::begin_task(
                    d,
                    self.job_id.as_deref(),
                    command,
                    argv,
                    index,
                    count,
                )
            })
            .transpose()
    }
}

/// `--slurm SCRIPT` and its options, flattened into the commands that sweep.
#[derive(Args, Debug, Clone, Default)]
pub struct SlurmFlags {
    /// Do not run: write an sbatch job-array script to SCRIPT, one array task per design
    /// point (explore) or repetition (record), and a merge job after them; submit it with
    /// `bash SCRIPT`. Results go to --run-dir.
    #[arg(long, value_name = "SCRIPT")]
    pub slurm: Option<PathBuf>,
    /// An sbatch option for the array tasks, repeatable: --sbatch=--partition=short
    /// --sbatch=--time=10 --sbatch=--ntasks=64.
    #[arg(
        long = "sbatch",
        value_name = "OPTION",
        allow_hyphen_values = true,
        requires = "slurm"
    )]
    pub sbatch: Vec<String>,
    /// When the merge job starts: after every task (afterany) or only if all succeeded
    /// (afterok).
    #[arg(long, value_enum, default_value_t, requires = "slurm")]
    pub dependency: hpcscope_job::slurm::Dependency,
    /// Run at most this many array tasks at a time (`--array=0-N%K`).
    #[arg(long, value_name = "K", requires = "slurm")]
    pub max_parallel: Option<u32>,
}

impl SlurmFlags {
    /// Writes the job-array script of `plan` to `--slurm SCRIPT`.
    pub fn write(&self, plan: &Plan) -> Result<()> {
        let Some(script) = &self.slurm else {
            anyhow::bail!("--slurm SCRIPT is missing");
        };
        hpcscope_job::slurm::write(
            plan,
            &SlurmOptions {
                script: script.clone(),
                sbatch: self.sbatch.clone(),
                dependency: self.dependency,
                max_parallel: self.max_parallel,
            },
        )
    }
}

/// `--record [--db FILE]`, flattened into each command that can record its result.
#[derive(Args, Debug, Clone, Default)]
pub struct RecordFlags {
    /// Also keep this result's numbers in the run history (see `hpcscope history`).
    #[arg(long)]
    pub record: bool,
    /// History store for --record (default: $HPCSCOPE_DB, else the per-user store).
    #[arg(long, value_name = "FILE", requires = "record")]
    pub db: Option<PathBuf>,
}

impl RecordFlags {
    /// Records `numbers` (every number in the JSON value becomes a metric, named by its
    /// path) as one run of `source` for `command`; returns a line to print, if recorded.
    pub fn store(
        &self,
        source: &str,
        command: &str,
        numbers: &serde_json::Value,
    ) -> Result<Option<String>> {
        if !self.record {
            return Ok(None);
        }
        let id = hpcscope_history::store::record_json_result(
            self.db.as_deref(),
            source,
            command,
            &[],
            numbers,
        )?;
        Ok(Some(format!("recorded as run {id} in the history store")))
    }
}

/// `--format` and `-o`: how a result is printed, and where.
#[derive(Args, Debug, Clone, Default)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: crate::output::Format,
    /// Write the result to this file instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// `--pid`, `--cgroup`, `--system` or a command: what `trace` and `profile` watch.
#[derive(Args, Debug, Clone, Default)]
pub struct TargetArgs {
    /// Attach to this running process (its threads, live descendants and later forks).
    #[arg(long, conflicts_with_all = ["cgroup", "system"])]
    pub pid: Option<u32>,
    /// Watch every process of this cgroup v2 (a batch job), by directory.
    #[arg(long, value_name = "DIR", conflicts_with = "system")]
    pub cgroup: Option<PathBuf>,
    /// Watch every process on the machine.
    #[arg(long)]
    pub system: bool,
    /// Stop after this many seconds (a launched command then gets SIGTERM).
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// Size the probes' tables for this many processes (default: from the target); what
    /// does not fit is counted and reported as lost.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_processes: Option<u32>,
}

impl TargetArgs {
    /// The target: exactly one of `--pid`, `--cgroup`, `--system` or `command`.
    pub fn target(&self, command: &[String]) -> Result<hpcscope_trace::Target> {
        use hpcscope_trace::Target;
        let n = self.pid.is_some() as u8
            + self.cgroup.is_some() as u8
            + self.system as u8
            + (!command.is_empty()) as u8;
        if n != 1 {
            anyhow::bail!(
                "give exactly one target: a command after `--`, --pid PID, --cgroup DIR or --system"
            );
        }
        Ok(match (self.pid, &self.cgroup, self.system) {
            (Some(p), _, _) => Target::Pid(p),
            (_, Some(c), _) => Target::Cgroup(c.clone()),
            (_, _, true) => Target::System,
            _ => Target::Command(command.to_vec()),
        })
    }

    /// `--duration` as a duration.
    pub fn duration(&self) -> Result<Option<Duration>> {
        match self.duration {
            None => Ok(None),
            Some(v) if v.is_finite() && v > 0.0 => Ok(Some(Duration::from_secs_f64(v))),
            Some(v) => anyhow::bail!("--duration {v}: give a positive number of seconds"),
        }
    }

    /// Checks what a rank of a job can do: measure its own command, nothing that would be
    /// written once per rank to one place.
    pub fn check_rank_target(&self, what: &str, command: &[String]) -> Result<()> {
        if self.pid.is_some() || self.cgroup.is_some() || self.system || command.is_empty() {
            anyhow::bail!(
                "{what} --run-dir measures the rank's own command: give it after `--` (mpirun -np 4 hpcscope {what} --run-dir DIR -- ./app), not --pid, --cgroup or --system"
            );
        }
        Ok(())
    }
}

/// The exit status of `trace` or `profile` once their own work succeeded: the traced
/// command's (128 + the signal that killed it), as strace and perf do; 0 for a PID, a cgroup
/// or the whole machine.
pub fn command_status(r: &hpcscope_trace::TraceReport) -> std::process::ExitCode {
    std::process::ExitCode::from(r.command_status().unwrap_or(0))
}

/// Which bandwidths and peaks the rooflines use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum BandwidthsArg {
    /// At each binary's vector width (`[[levels.widths]]`, `[[peaks.widths]]` of the
    /// machine file), where the machine gives them; else each level's own value.
    #[default]
    BinaryWidth,
    /// Each level's own bandwidth and the machine's peak (the seeds' form).
    Level,
}

/// The store to use.
#[derive(clap::Args, Debug, Clone)]
pub struct DbArg {
    /// History store (default: $HPCSCOPE_DB, else $XDG_DATA_HOME/hpcscope/history.sqlite,
    /// else ~/.local/share/hpcscope/history.sqlite).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
}

impl DbArg {
    /// The store path.
    pub fn path(&self) -> Result<PathBuf> {
        match &self.db {
            Some(p) => Ok(p.clone()),
            None => Ok(default_db_path()?),
        }
    }
}

/// Which runs to select.
#[derive(clap::Args, Debug, Clone)]
pub struct FilterArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Only runs whose command line contains TEXT.
    #[arg(long = "command", value_name = "TEXT")]
    pub command: Option<String>,
    /// Only runs with this tag (repeatable; all must match).
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub tags: Vec<(String, String)>,
    /// Only runs on the machine whose fingerprint id starts with ID.
    #[arg(long, value_name = "ID")]
    pub machine: Option<String>,
    /// Only runs of the git commit starting with SHA.
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,
    /// Only runs recorded by SOURCE (`record`, or the hpcscope subcommand that stored them).
    #[arg(long, value_name = "SOURCE")]
    pub source: Option<String>,
    /// Only runs started at or after DATE (YYYY-MM-DD, YYYY-MM-DDTHH:MM:SS UTC, or Unix seconds).
    #[arg(long, value_name = "DATE", value_parser = hpcscope_host::time::parse_time)]
    pub since: Option<f64>,
    /// Only runs started before DATE.
    #[arg(long, value_name = "DATE", value_parser = hpcscope_host::time::parse_time)]
    pub until: Option<f64>,
    /// Only the newest N runs.
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
}

impl FilterArgs {
    /// The store filter.
    pub fn filter(&self) -> Filter {
        Filter {
            command_contains: self.command.clone(),
            tags: self.tags.clone(),
            machine: self.machine.clone(),
            git_commit: self.commit.clone(),
            source: self.source.clone(),
            since: self.since,
            until: self.until,
            last: self.last,
            ..Filter::default()
        }
    }
}

/// Parses `KEY=VALUE`.
pub fn parse_kv(s: &str) -> std::result::Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!(
            "`{s}` is not KEY=VALUE (example: --tag branch=main)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags() {
        // Dates: hpcscope_host::time::parse_time has their tests.
        assert!(parse_kv("a=b=c").unwrap().1 == "b=c");
        assert!(parse_kv("=x").is_err());
    }
}
