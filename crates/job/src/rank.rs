//! Inside a parallel job: which rank this process is (from the launcher's environment), and
//! the run directory the job shares, where every rank writes one result file.
//!
//! `mpirun -np 4 hpcscope trace --run-dir runs -- ./app` starts four hpcscope processes;
//! each finds its rank, size, local rank and node in the variables its launcher sets (Open
//! MPI, MPICH's Hydra, Slurm's srun), measures only its own copy of `./app`, and writes
//! `runs/<job>/rank-000002.<node>.json` atomically. `hpcscope merge runs` reads them back.
//! The layout and the file format are described in docs/multinode.md.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// Format tag of a rank's result file.
pub const RESULT_FORMAT: &str = "hpcscope-rank-result";
/// Format tag of a rank's start record.
pub const START_FORMAT: &str = "hpcscope-rank-start";
/// Version of both formats.
pub const VERSION: u32 = 1;

/// Who this process is in its job.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankContext {
    /// The job's id, safe as a directory name; the same on every rank of one job.
    pub job_id: String,
    /// Where the rank numbers come from: `open-mpi`, `pmi` (MPICH Hydra, srun --mpi=pmi2),
    /// `slurm` (srun), `slurm-array` (a job-array task), `none` (one process).
    pub launcher: String,
    /// This process's rank.
    pub rank: u32,
    /// Ranks in the job.
    pub size: u32,
    /// Rank among the job's ranks on this node, when the launcher says.
    pub local_rank: Option<u32>,
    /// Node name (Slurm's name for it, else the host name).
    pub node: String,
    /// The environment variables the context was read from, `NAME=value`.
    pub evidence: Vec<String>,
    /// Slurm job array and task, when the job is one task of an array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<(String, u32)>,
}

/// Keeps `[A-Za-z0-9._-]`, replaces anything else by `_`: ids and node names become file
/// names that no node can read differently.
pub fn sanitize(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let t = t.trim_start_matches('.').to_string();
    if t.is_empty() { "_".into() } else { t }
}

fn number(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Result<Option<u32>> {
    match env(name) {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => Ok(None),
        Some(v) => v.trim().parse().map(Some).with_context(|| {
            format!("{name}={v} is not a rank number; the launcher's environment is inconsistent")
        }),
    }
}

impl RankContext {
    /// Reads the context from `env` (a variable lookup), with `host` the host name, `job`
    /// an explicit job id (`--job-id`) and `fallback_id` the id of a job of one process
    /// that nothing names.
    pub fn detect(
        env: &dyn Fn(&str) -> Option<String>,
        host: &str,
        job: Option<&str>,
        fallback_id: &str,
    ) -> Result<RankContext> {
        let mut evidence = Vec::new();
        let mut seen = |n: &str| {
            if let Some(v) = env(n) {
                evidence.push(format!("{n}={v}"));
            }
        };
        let node = env("SLURMD_NODENAME")
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| host.to_string());
        let slurm_step = match (env("SLURM_JOB_ID"), env("SLURM_STEP_ID")) {
            (Some(j), Some(s)) if !j.is_empty() && !s.is_empty() => Some(format!("{j}.{s}")),
            _ => None,
        };
        let explicit = job
            .map(str::to_string)
            .or_else(|| env("HPCSCOPE_JOB_ID").filter(|s| !s.is_empty()));
        let (launcher, rank, size, local, auto_id) = if let (Some(r), Some(n)) = (
            number(env, "OMPI_COMM_WORLD_RANK")?,
            number(env, "OMPI_COMM_WORLD_SIZE")?,
        ) {
            for v in [
                "OMPI_COMM_WORLD_RANK",
                "OMPI_COMM_WORLD_SIZE",
                "OMPI_COMM_WORLD_LOCAL_RANK",
                "OMPI_MCA_ess_base_jobid",
                "PMIX_NAMESPACE",
            ] {
                seen(v);
            }
            let id = env("OMPI_MCA_ess_base_jobid")
                .or_else(|| env("PMIX_NAMESPACE"))
                .filter(|s| !s.is_empty())
                .map(|j| match env("SLURM_JOB_ID").filter(|s| !s.is_empty()) {
                    // mpirun inside an allocation: several mpiruns may share the job.
                    Some(s) => format!("slurm-{s}-ompi-{j}"),
                    None => format!("ompi-{j}"),
                });
            (
                "open-mpi",
                r,
                n,
                number(env, "OMPI_COMM_WORLD_LOCAL_RANK")?,
                id,
            )
        } else if let (Some(r), Some(n)) = (number(env, "PMI_RANK")?, number(env, "PMI_SIZE")?) {
            for v in [
                "PMI_RANK",
                "PMI_SIZE",
                "MPI_LOCALRANKID",
                "PMI_JOBID",
                "SLURM_JOB_ID",
                "SLURM_STEP_ID",
            ] {
                seen(v);
            }
            let id = slurm_step
                .clone()
                .map(|s| format!("slurm-{s}"))
                .or_else(|| env("PMI_JOBID").map(|j| format!("pmi-{j}")));
            let local = match number(env, "MPI_LOCALRANKID")? {
                Some(l) => Some(l),
                None => number(env, "SLURM_LOCALID")?,
            };
            ("pmi", r, n, local, id)
        } else if let (Some(r), Some(step)) = (number(env, "SLURM_PROCID")?, slurm_step.clone()) {
            // srun: a job step (a batch script also has SLURM_PROCID=0 but no step id).
            for v in [
                "SLURM_PROCID",
                "SLURM_STEP_NUM_TASKS",
                "SLURM_NTASKS",
                "SLURM_LOCALID",
                "SLURM_JOB_ID",
                "SLURM_STEP_ID",
            ] {
                seen(v);
            }
            let n = match number(env, "SLURM_STEP_NUM_TASKS")? {
                Some(n) => n,
                None => number(env, "SLURM_NTASKS")?.unwrap_or(1),
            };
            (
                "slurm",
                r,
                n,
                number(env, "SLURM_LOCALID")?,
                Some(format!("slurm-{step}")),
            )
        } else {
            // One process: a plain run, or a Slurm batch script (one repetition of an array).
            seen("SLURM_JOB_ID");
            let id = env("SLURM_JOB_ID")
                .filter(|s| !s.is_empty())
                .map(|j| format!("slurm-{j}"));
            ("none", 0, 1, Some(0), id)
        };
        if size == 0 || rank >= size {
            bail!(
                "the launcher says rank {rank} of {size} ranks ({}); the environment is inconsistent",
                evidence.join(" ")
            );
        }
        let job_id = match (explicit, auto_id) {
            (Some(j), _) => j,
            (None, Some(j)) => j,
            (None, None) if size == 1 => fallback_id.to_string(),
            (None, None) => bail!(
                "rank {rank} of {size}: the launcher ({launcher}) gives no job id that every rank shares, so the ranks' results cannot be told apart from another job's; give the same --job-id on every rank (or set HPCSCOPE_JOB_ID, e.g. `mpiexec -genv HPCSCOPE_JOB_ID run-$(date +%s) ...`)"
            ),
        };
        let array = match (
            env("SLURM_ARRAY_JOB_ID"),
            number(env, "SLURM_ARRAY_TASK_ID")?,
        ) {
            (Some(j), Some(t)) if !j.is_empty() => Some((j, t)),
            _ => None,
        };
        Ok(RankContext {
            job_id: sanitize(&job_id),
            launcher: launcher.into(),
            rank,
            size,
            local_rank: local,
            node: sanitize(&node),
            evidence,
            array,
        })
    }

    /// This process's context from its real environment.
    pub fn current(job: Option<&str>) -> Result<RankContext> {
        let host = hostname();
        let fallback = format!(
            "local-{}-{}-{}",
            sanitize(&host),
            std::process::id(),
            hpcscope_host::time::now_unix() as u64
        );
        RankContext::detect(
            &|k| std::env::var(k).ok(),
            &host,
            job.filter(|s| !s.is_empty()),
            &fallback,
        )
    }

    /// The base of this rank's file names: `rank-000002.node7`.
    pub fn stem(&self) -> String {
        format!("rank-{:06}.{}", self.rank, self.node)
    }

    /// `rank 2 of 4 on node7`.
    pub fn describe(&self) -> String {
        format!("rank {} of {} on {}", self.rank, self.size, self.node)
    }
}

/// The host name (the kernel's), `localhost` when unreadable.
pub fn hostname() -> String {
    hpcscope_host::facts::hostname().unwrap_or_else(|| "localhost".into())
}

/// How the measured command ended.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Exit {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal that killed it, when one did.
    pub signal: Option<i32>,
}

impl Exit {
    /// Whether the command succeeded.
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// `exit code 3`, `killed by signal 9 (SIGKILL)`, `unknown`.
    pub fn describe(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("killed by signal {s}{}", signal_name(s)),
            (None, None) => "end unknown".into(),
        }
    }

    /// The exit code hpcscope passes on to the launcher: the command's own, 128 + the
    /// signal that killed it.
    pub fn passed_on(&self) -> u8 {
        match (self.code, self.signal) {
            (Some(c), _) => c.clamp(0, 255) as u8,
            (None, Some(s)) => (128 + s).clamp(0, 255) as u8,
            (None, None) => 1,
        }
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        1 => " (SIGHUP)",
        2 => " (SIGINT)",
        6 => " (SIGABRT)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        15 => " (SIGTERM)",
        _ => "",
    }
}

pub use hpcscope_trace::mpitime::{MpiCall, MpiTime};

/// What a rank writes when it starts (so that a rank killed before it could write its
/// result is still known to have run), and the head of its result.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankStart {
    /// [`START_FORMAT`] or [`RESULT_FORMAT`].
    pub format: String,
    /// [`VERSION`].
    pub version: u32,
    /// The rank.
    pub context: RankContext,
    /// The hpcscope command that measures it (`trace`, `record`, `counters`, `profile`,
    /// `explore`).
    pub command: String,
    /// The measured command.
    pub argv: Vec<String>,
    /// hpcscope's process id.
    pub pid: u32,
    /// Start of the measured command, seconds since the Unix epoch.
    pub started_unix: f64,
}

/// One rank's result.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankResult {
    /// Who, what, when (the start record's fields).
    #[serde(flatten)]
    pub head: RankStart,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// Elapsed time of the measured command, seconds.
    pub wall_s: f64,
    /// CPU time in user mode of the command and its children, seconds, when known.
    pub user_s: Option<f64>,
    /// CPU time in the kernel, seconds, when known.
    pub sys_s: Option<f64>,
    /// How the command ended.
    pub exit: Exit,
    /// Set when hpcscope was told to stop (SIGTERM or SIGINT: the launcher aborting the job,
    /// a time limit): the data covers the run up to then.
    pub interrupted: Option<String>,
    /// Time inside MPI, when it was measured.
    pub mpi: Option<MpiTime>,
    /// What the reader should know (a missing permission, a fallback).
    pub notes: Vec<String>,
    /// The command's own result (its JSON summary).
    pub data: serde_json::Value,
}

/// What a measurement in a rank produced, before it is written.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Elapsed time, s.
    pub wall_s: f64,
    /// User CPU time, s.
    pub user_s: Option<f64>,
    /// System CPU time, s.
    pub sys_s: Option<f64>,
    /// How the command ended.
    pub exit: Exit,
    /// Stopped by a signal to hpcscope.
    pub interrupted: bool,
    /// MPI time.
    pub mpi: Option<MpiTime>,
    /// Notes.
    pub notes: Vec<String>,
    /// The command's summary.
    pub data: serde_json::Value,
}

/// A rank at work: its context, its job directory, its start record on disk.
#[derive(Debug)]
pub struct RankSession {
    /// Who this rank is.
    pub context: RankContext,
    /// `RUN_DIR/<job id>`.
    pub dir: PathBuf,
    start: RankStart,
    start_file: PathBuf,
}

/// The job directory of `job_id` in `run_dir`.
pub fn job_dir(run_dir: &Path, job_id: &str) -> PathBuf {
    run_dir.join(job_id)
}

/// Starts a rank session in `run_dir`: detects the rank from the launcher's environment
/// (`job_id` names the job explicitly), creates the job directory, writes the start record
/// and makes SIGTERM/SIGINT stop the measurement cleanly (the launcher sends them when it
/// aborts the job) so the result is still written.
pub fn begin(
    run_dir: &Path,
    job_id: Option<&str>,
    command: &str,
    argv: &[String],
) -> Result<RankSession> {
    let context = RankContext::current(job_id)?;
    RankSession::begin(run_dir, context, command, argv)
}

/// Starts the session of task `index` of `count` (a design point of a sweep, one task of a
/// job array). The tasks share the job id `job_id`, else $HPCSCOPE_JOB_ID, else
/// `slurm-array-<array job id>`.
pub fn begin_task(
    run_dir: &Path,
    job_id: Option<&str>,
    command: &str,
    argv: &[String],
    index: usize,
    count: usize,
) -> Result<RankSession> {
    let id = job_id
        .map(str::to_string)
        .or_else(|| std::env::var("HPCSCOPE_JOB_ID").ok())
        .or_else(|| {
            std::env::var("SLURM_ARRAY_JOB_ID")
                .ok()
                .map(|j| format!("slurm-array-{j}"))
        })
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "--run-dir with one task of {count}: give the tasks' shared --job-id (outside a Slurm job array nothing else names them)"
            )
        })?;
    let mut context = RankContext::current(Some(&id))?;
    context.rank = index as u32;
    context.size = count as u32;
    context.local_rank = None;
    context.launcher = "tasks".into();
    RankSession::begin(run_dir, context, command, argv)
}

impl RankSession {
    /// Starts the session of `context` (see [`begin`]).
    pub fn begin(
        run_dir: &Path,
        context: RankContext,
        command: &str,
        argv: &[String],
    ) -> Result<RankSession> {
        let dir = job_dir(run_dir, &context.job_id);
        std::fs::create_dir_all(&dir).with_context(|| {
            format!(
                "{}: cannot create the job directory {} (--run-dir must be writable from every node, e.g. on a shared file system)",
                context.describe(),
                dir.display()
            )
        })?;
        hpcscope_trace::install_signal_handlers();
        let started_unix = hpcscope_host::time::now_unix();
        let start = RankStart {
            format: START_FORMAT.into(),
            version: VERSION,
            context: context.clone(),
            command: command.into(),
            argv: argv.to_vec(),
            pid: std::process::id(),
            started_unix,
        };
        let start_file = dir.join(format!("{}.start.json", context.stem()));
        write_durable(&start_file, &serde_json::to_string_pretty(&start)?, true)?;
        if context.rank == 0 {
            eprintln!(
                "hpcscope: job {} ({} rank{}, {}): results in {}; merge them with `hpcscope merge {}`",
                context.job_id,
                context.size,
                if context.size == 1 { "" } else { "s" },
                context.launcher,
                dir.display(),
                run_dir.display()
            );
        }
        Ok(RankSession {
            context,
            dir,
            start,
            start_file,
        })
    }

    /// Writes the result (atomically, never over another rank's file) and returns the exit
    /// code to give the launcher: the measured command's own.
    pub fn finish(self, o: Outcome) -> Result<u8> {
        let interrupted = o.interrupted.then(|| {
            "SIGTERM or SIGINT: hpcscope was told to stop (the launcher aborting the job, a time limit); the data covers the run up to then".to_string()
        });
        let r = RankResult {
            head: RankStart {
                format: RESULT_FORMAT.into(),
                ..self.start.clone()
            },
            started_at: hpcscope_host::time::format_rfc3339(self.start.started_unix),
            wall_s: o.wall_s,
            user_s: o.user_s,
            sys_s: o.sys_s,
            exit: o.exit,
            interrupted,
            mpi: o.mpi,
            notes: o.notes,
            data: o.data,
        };
        let text = serde_json::to_string_pretty(&r)? + "\n";
        let path = self.dir.join(format!("{}.json", self.context.stem()));
        if !write_durable(&path, &text, false)? {
            // Another process already wrote this rank of this job: keep both, and let the
            // merge report the clash rather than lose or mix anything.
            let other = self.dir.join(format!(
                "{}.pid{}.json",
                self.context.stem(),
                std::process::id()
            ));
            write_durable(&other, &text, true)?;
            eprintln!(
                "warning: {}: {} already exists (two jobs with one job id?); this result went to {}",
                self.context.describe(),
                path.display(),
                other.display()
            );
        }
        let _ = std::fs::remove_file(&self.start_file);
        if o.interrupted {
            eprintln!(
                "hpcscope: {}: stopped by a signal; the partial result is in {}",
                self.context.describe(),
                self.dir.display()
            );
        }
        Ok(if o.interrupted && o.exit.ok() {
            143
        } else {
            o.exit.passed_on()
        })
    }
}

/// Writes `text` to `path` atomically (see [`hpcscope_core::fs`]): readers never see half a
/// file. With `replace` false an existing file is kept and `false` returned.
pub fn write_durable(path: &Path, text: &str, replace: bool) -> Result<bool> {
    let placed = if replace {
        hpcscope_core::fs::write_atomic(path, text.as_bytes()).map(|_| true)
    } else {
        hpcscope_core::fs::write_new(path, text.as_bytes())
    };
    placed.with_context(|| format!("cannot write {}", path.display()))
}

/// A finished run of the measured command.
#[derive(Debug, Clone, Copy)]
pub struct Ran {
    /// Elapsed, s.
    pub wall_s: f64,
    /// User CPU of the command and its waited-for children, s.
    pub user_s: f64,
    /// System CPU, s.
    pub sys_s: f64,
    /// How it ended.
    pub exit: Exit,
    /// hpcscope got SIGTERM or SIGINT while it ran (the command was then stopped).
    pub interrupted: bool,
}

/// Runs `argv` and waits for it; a SIGTERM or SIGINT to hpcscope (see
/// [`hpcscope_trace::install_signal_handlers`]) is passed on to the command, which gets half
/// a second before SIGKILL.
pub fn run_command(argv: &[String]) -> Result<Ran> {
    let Some((prog, args)) = argv.split_first() else {
        bail!("no command given after `--`");
    };
    let t0 = Instant::now();
    // The program dies with hpcscope (a killed rank leaves nothing running).
    let child = hpcscope_host::child::die_with_parent(&mut std::process::Command::new(prog))
        .args(args)
        .spawn()
        .with_context(|| {
            format!("cannot run `{prog}`: check that it exists and is executable (is it on PATH?)")
        })?;
    let pid = child.id() as libc::pid_t;
    let mut interrupted = false;
    let mut term_at: Option<Instant> = None;
    loop {
        let mut st: libc::c_int = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waiting for our own child, into valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut st, libc::WNOHANG, &mut ru) };
        if r == pid {
            let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
            let exit = if libc::WIFEXITED(st) {
                Exit {
                    code: Some(libc::WEXITSTATUS(st)),
                    signal: None,
                }
            } else {
                Exit {
                    code: None,
                    signal: libc::WIFSIGNALED(st).then(|| libc::WTERMSIG(st)),
                }
            };
            return Ok(Ran {
                wall_s: t0.elapsed().as_secs_f64(),
                user_s: tv(ru.ru_utime),
                sys_s: tv(ru.ru_stime),
                exit,
                interrupted,
            });
        }
        if r < 0 {
            bail!(
                "waiting for `{prog}` failed: {}",
                std::io::Error::last_os_error()
            );
        }
        if hpcscope_trace::STOP.load(std::sync::atomic::Ordering::SeqCst) && !interrupted {
            interrupted = true;
            term_at = Some(Instant::now());
            // SAFETY: signalling our own unreaped child.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        if term_at.is_some_and(|t| t.elapsed() > Duration::from_millis(500)) {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            term_at = None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

impl Outcome {
    /// The outcome of work done in this process since `started`, which succeeded with `data`.
    pub fn succeeded(started: Instant, data: serde_json::Value) -> Outcome {
        Outcome {
            wall_s: started.elapsed().as_secs_f64(),
            exit: Exit {
                code: Some(0),
                signal: None,
            },
            data,
            ..Outcome::default()
        }
    }

    /// The outcome of a plain run (no measurement beyond times).
    pub fn from_ran(r: &Ran) -> Outcome {
        Outcome {
            wall_s: r.wall_s,
            user_s: Some(r.user_s),
            sys_s: Some(r.sys_s),
            exit: r.exit,
            interrupted: r.interrupted,
            ..Outcome::default()
        }
    }
}

/// A rank whose eBPF measurement (`what`: trace, profile) cannot start on this machine
/// (`why`): the command runs anyway (the job needs every rank), timed, and the result says
/// what is missing and why.
pub fn without_bpf(what: &str, why: &str, command: &[String]) -> Result<Outcome> {
    eprintln!("warning: {what}: {why}; running the rank's command without eBPF");
    let ran = run_command(command)?;
    let mut o = Outcome::from_ran(&ran);
    o.notes.push(format!(
        "eBPF is not available here ({why}): no {what} and no time in MPI for this rank; what remains is its elapsed, user and system time"
    ));
    o.data = serde_json::json!({
        "time_s": ran.wall_s,
        "user_s": ran.user_s,
        "sys_s": ran.sys_s,
        "bpf_unavailable": why,
    });
    Ok(o)
}

/// A rank of `record --run-dir`: runs `command` once and keeps its times, its `tags` and
/// the numbers of the JSON file it writes to `metrics_json` (where `{rank}` in the path
/// becomes `rank`); a metrics file that cannot be taken becomes a note, never a lost run.
pub fn recorded(
    rank: u32,
    command: &[String],
    metrics_json: Option<&Path>,
    tags: &[(String, String)],
) -> Result<Outcome> {
    let metrics_path = metrics_json
        .map(|p| PathBuf::from(p.display().to_string().replace("{rank}", &rank.to_string())));
    if let Some(p) = &metrics_path {
        let _ = std::fs::remove_file(p);
    }
    let ran = run_command(command)?;
    let mut out = Outcome::from_ran(&ran);
    let mut data = serde_json::json!({
        "time_s": ran.wall_s,
        "user_s": ran.user_s,
        "sys_s": ran.sys_s,
        "tags": tags.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
    });
    if let Some(p) = &metrics_path {
        match hpcscope_history::record::read_metrics_json(p) {
            Ok(v) => data["metrics"] = v,
            Err(why) => out.notes.push(why),
        }
    }
    out.data = data;
    Ok(out)
}

/// What an eBPF measurement (`what`: trace, profile) of a rank's `command` gave: its outcome,
/// or, where eBPF is an environment limit, the command's run without it ([`without_bpf`]);
/// any other error is returned.
fn bpf_ran(
    what: &str,
    ran: Result<hpcscope_trace::TraceOutcome, hpcscope_trace::TraceError>,
    command: &[String],
) -> Result<std::result::Result<hpcscope_trace::TraceOutcome, Outcome>> {
    match ran {
        Ok(out) => Ok(Ok(out)),
        Err(e) if hpcscope_core::Classify::kind(&e) == hpcscope_core::ErrorKind::Environment => {
            Ok(Err(without_bpf(what, &e.to_string(), command)?))
        }
        Err(e) => Err(e.into()),
    }
}

/// A rank that traced its command (`trace --run-dir`, MPI probes on): the outcome of
/// `traced`, with its time in MPI. Where eBPF is an environment limit, the command runs
/// anyway, timed, and the result says what is missing; any other error is returned.
pub fn traced(
    traced: Result<hpcscope_trace::TraceOutcome, hpcscope_trace::TraceError>,
    command: &[String],
) -> Result<Outcome> {
    let out = match bpf_ran("trace", traced, command)? {
        Ok(out) => out,
        Err(without) => return Ok(without),
    };
    let r = &out.report;
    let mut notes = r.notes.clone();
    let mpi = MpiTime::from_trace(r);
    if mpi.as_ref().is_some_and(|m| !m.initialized) {
        notes.push(
            "no MPI_Init returned in this rank: not an MPI program, or it did not get that far"
                .into(),
        );
    }
    Ok(Outcome {
        wall_s: mpi
            .as_ref()
            .and_then(|m| m.process_s)
            .unwrap_or(r.duration_s),
        user_s: None,
        sys_s: None,
        exit: Exit {
            code: r.exit_code,
            signal: r.exit_signal,
        },
        interrupted: hpcscope_trace::STOP.load(std::sync::atomic::Ordering::SeqCst),
        mpi,
        notes,
        data: out.report.summary(),
    })
}

/// A rank that profiled its command (`profile --run-dir`): the outcome of `profiled`, with
/// its stacks and its `top` hottest functions. Where eBPF is an environment limit, the
/// command runs anyway, timed, and the result says what is missing; any other error is
/// returned.
pub fn profiled(
    profiled: Result<hpcscope_trace::TraceOutcome, hpcscope_trace::TraceError>,
    command: &[String],
    top: usize,
) -> Result<Outcome> {
    let out = match bpf_ran("profile", profiled, command)? {
        Ok(out) => out,
        Err(without) => return Ok(without),
    };
    let prof = out.profile.clone().unwrap_or_default();
    let r = &out.report;
    Ok(Outcome {
        wall_s: r.duration_s,
        exit: Exit {
            code: r.exit_code,
            signal: r.exit_signal,
        },
        interrupted: hpcscope_trace::STOP.load(std::sync::atomic::Ordering::SeqCst),
        notes: r.notes.clone(),
        data: serde_json::json!({
            "hz": prof.hz,
            "samples": prof.total(),
            "missing_user_stacks": prof.missing_user_stacks,
            "hot_functions": prof.hot_functions(top),
            "stacks": prof.samples,
        }),
        ..Outcome::default()
    })
}

/// A rank that counted its command with hardware counters (`counters run --run-dir`):
/// the outcome of `measured`, the measurement started at `started`. Where the counters are an
/// environment limit (no PMU, `perf_event_paranoid`), the command runs anyway, timed (the job
/// needs every rank), and the result says what is missing and why; any other error is
/// returned.
pub fn counted(
    measured: Result<hpcscope_counters::Measurement>,
    command: &[String],
    started: Instant,
) -> Result<Outcome> {
    let e = match measured {
        Ok(hpcscope_counters::Measurement {
            raw, report: rep, ..
        }) => {
            let status = raw.exit_status;
            return Ok(Outcome {
                wall_s: started.elapsed().as_secs_f64(),
                exit: Exit {
                    code: status.filter(|s| *s < 128),
                    signal: status.filter(|s| *s > 128).map(|s| s - 128),
                },
                interrupted: hpcscope_trace::STOP.load(std::sync::atomic::Ordering::SeqCst),
                notes: rep.warnings.clone(),
                data: serde_json::json!({
                    "recipe": rep.recipe,
                    "hardware_unavailable": rep.hardware_unavailable,
                    "metrics": rep.record_numbers(),
                }),
                ..Outcome::default()
            });
        }
        Err(e) => e,
    };
    let environment = e
        .downcast_ref::<hpcscope_counters::Error>()
        .is_some_and(|c| hpcscope_core::Classify::kind(c) == hpcscope_core::ErrorKind::Environment);
    if !environment {
        return Err(e);
    }
    eprintln!("warning: counters: {e:#}; running the rank's command without counters");
    let ran = run_command(command)?;
    let mut o = Outcome::from_ran(&ran);
    o.notes.push(format!(
        "counters are not available here ({e:#}): what remains is the rank's elapsed, user and system time"
    ));
    o.data = serde_json::json!({"time_s": ran.wall_s});
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn ctx(vars: &[(&str, &str)], job: Option<&str>) -> Result<RankContext> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        RankContext::detect(&|k| m.get(k).cloned(), "host-a", job, "local-x")
    }

    #[test]
    fn open_mpi_ranks() {
        let c = ctx(
            &[
                ("OMPI_COMM_WORLD_RANK", "2"),
                ("OMPI_COMM_WORLD_SIZE", "4"),
                ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
                ("OMPI_MCA_ess_base_jobid", "954597377"),
                ("PMIX_NAMESPACE", "954597377"),
            ],
            None,
        )
        .unwrap();
        assert_eq!(
            (c.rank, c.size, c.local_rank, c.launcher.as_str()),
            (2, 4, Some(0), "open-mpi")
        );
        assert_eq!(c.job_id, "ompi-954597377");
        assert_eq!(c.node, "host-a");
        assert_eq!(c.stem(), "rank-000002.host-a");
        assert!(c.evidence.contains(&"OMPI_COMM_WORLD_RANK=2".to_string()));
        // mpirun inside a Slurm allocation: the allocation is part of the id.
        let c = ctx(
            &[
                ("OMPI_COMM_WORLD_RANK", "0"),
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("OMPI_MCA_ess_base_jobid", "77"),
                ("SLURM_JOB_ID", "1234"),
                ("SLURMD_NODENAME", "cn 07"),
            ],
            None,
        )
        .unwrap();
        assert_eq!(c.job_id, "slurm-1234-ompi-77");
        assert_eq!(c.node, "cn_07");
    }

    #[test]
    fn hydra_and_srun_ranks() {
        // Hydra gives no job id: an explicit one is required with more than one rank.
        let vars = [
            ("PMI_RANK", "3"),
            ("PMI_SIZE", "8"),
            ("MPI_LOCALRANKID", "1"),
        ];
        let e = ctx(&vars, None).unwrap_err().to_string();
        assert!(
            e.contains("--job-id") && e.contains("HPCSCOPE_JOB_ID"),
            "{e}"
        );
        let c = ctx(&vars, Some("run/42")).unwrap();
        assert_eq!((c.rank, c.size, c.local_rank), (3, 8, Some(1)));
        assert_eq!((c.launcher.as_str(), c.job_id.as_str()), ("pmi", "run_42"));
        // srun: the step makes the id; the step's task count is the size.
        let c = ctx(
            &[
                ("SLURM_PROCID", "5"),
                ("SLURM_NTASKS", "16"),
                ("SLURM_STEP_NUM_TASKS", "6"),
                ("SLURM_LOCALID", "1"),
                ("SLURM_JOB_ID", "99"),
                ("SLURM_STEP_ID", "0"),
                ("SLURMD_NODENAME", "cn2"),
            ],
            None,
        )
        .unwrap();
        assert_eq!((c.rank, c.size, c.local_rank), (5, 6, Some(1)));
        assert_eq!(
            (c.launcher.as_str(), c.job_id.as_str()),
            ("slurm", "slurm-99.0")
        );
        assert_eq!(c.stem(), "rank-000005.cn2");
        // A batch script is one process, not rank 0 of SLURM_NTASKS.
        let c = ctx(
            &[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "4"),
                ("SLURM_JOB_ID", "100"),
                ("SLURM_ARRAY_JOB_ID", "98"),
                ("SLURM_ARRAY_TASK_ID", "2"),
            ],
            None,
        )
        .unwrap();
        assert_eq!((c.rank, c.size, c.launcher.as_str()), (0, 1, "none"));
        assert_eq!(c.job_id, "slurm-100");
        assert_eq!(c.array, Some(("98".into(), 2)));
    }

    #[test]
    fn one_process_and_bad_environments() {
        let c = ctx(&[], None).unwrap();
        assert_eq!((c.rank, c.size, c.job_id.as_str()), (0, 1, "local-x"));
        let c = ctx(&[("HPCSCOPE_JOB_ID", "mine")], None).unwrap();
        assert_eq!(c.job_id, "mine");
        let e = ctx(
            &[("OMPI_COMM_WORLD_RANK", "x"), ("OMPI_COMM_WORLD_SIZE", "2")],
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("OMPI_COMM_WORLD_RANK=x"), "{e}");
        let e = ctx(
            &[
                ("OMPI_COMM_WORLD_RANK", "4"),
                ("OMPI_COMM_WORLD_SIZE", "4"),
                ("OMPI_MCA_ess_base_jobid", "1"),
            ],
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("rank 4 of 4"), "{e}");
        assert_eq!(sanitize("../etc/x y"), "_etc_x_y");
        assert_eq!(sanitize(""), "_");
    }

    #[test]
    fn durable_writes_never_replace_a_rank() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("rank-000000.n.json");
        assert!(write_durable(&p, "one", false).unwrap());
        assert!(!write_durable(&p, "two", false).unwrap());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "one");
        assert!(write_durable(&p, "three", true).unwrap());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "three");
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn exit_codes_are_passed_on() {
        let e = Exit {
            code: None,
            signal: Some(9),
        };
        assert_eq!(e.passed_on(), 137);
        assert!(e.describe().contains("SIGKILL"));
        assert_eq!(
            Exit {
                code: Some(3),
                signal: None
            }
            .passed_on(),
            3
        );
    }
}
