//! `hpcscope trace`: watch a command, a PID or a cgroup with eBPF probes (syscalls,
//! scheduler, page faults, block and file I/O, user functions, USDT probes, rates over time)
//! and print a summary per level.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use hpcscope_trace::mpitime::MpiTime;
use hpcscope_trace::{FunctionSpec, Probes, TraceOptions};

use crate::output::{Format, emit, emit_with};

/// Arguments of `trace`.
#[derive(Args, Debug)]
pub struct TraceArgs {
    /// What to trace (or a command after `--`), and for how long.
    #[command(flatten)]
    pub target: crate::args::TargetArgs,
    /// Probes, comma-separated: syscalls, sched, faults, block, files, or all.
    #[arg(long, value_delimiter = ',', default_value = "syscalls,sched,faults")]
    pub probes: Vec<String>,
    /// Time a user function (uprobe): SYMBOL in the program, or BINARY:SYMBOL (a path or a
    /// library name like libmpi); `PREFIX*` probes every match. Repeatable.
    #[arg(long = "function", value_name = "[BINARY:]SYMBOL")]
    pub functions: Vec<String>,
    /// Time the MPI calls of libmpi (MPI_Barrier, MPI_Allreduce, MPI_Send...).
    #[arg(long)]
    pub mpi: bool,
    /// Time the OpenMP runtime (GOMP_barrier, GOMP_parallel, __kmpc_barrier...) and the
    /// program's parallel regions, and give the OpenMP thread efficiency (eqs. 3.14-3.16).
    #[arg(long)]
    pub openmp: bool,
    /// Count the hits of a USDT probe per process and thread: PROVIDER:NAME in the program
    /// or a library it loads, or BINARY:PROVIDER:NAME (a path, a library name, a program on
    /// PATH). Probes guarded by a semaphore get it raised by the kernel. Repeatable (16).
    #[arg(long = "usdt", value_name = "[BINARY:]PROVIDER:NAME")]
    pub usdt: Vec<String>,
    /// List the USDT probes of a program or library (its `.note.stapsdt` notes) and exit.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["usdt", "command"])]
    pub list_usdt: Option<String>,
    /// Length of one interval of the rate series (system calls, page faults, bytes read and
    /// written, context switches over time), seconds; 0 for none.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    pub interval: f64,
    /// Also write an HTML report: the tables, the rate series charted, the flame graph.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Time a kernel function with kprobes; where the kernel has none, the syscall
    /// tracepoints stand in and the report says so.
    #[arg(long, value_name = "NAME")]
    pub kfunc: Option<String>,
    /// Also sample stacks at this frequency (Hz), as `hpcscope profile` does.
    #[arg(long, value_name = "HZ")]
    pub profile_hz: Option<u64>,
    /// Write a timeline (Chrome trace-event JSON; open in Perfetto or chrome://tracing).
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// Write the summary here instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Output format of the summary (`json` is the full report, histograms included).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    #[command(flatten)]
    pub record: crate::args::RecordFlags,
    /// In a parallel job: one result per rank in a run directory (MPI calls probed by
    /// default), instead of the summary on standard output.
    #[command(flatten)]
    pub rank: crate::args::RankFlags,
    /// The program and its arguments.
    #[arg(last = true, value_name = "PROGRAM [ARGS]")]
    pub command: Vec<String>,
}

fn options(a: &TraceArgs) -> Result<TraceOptions> {
    let mut p = Probes::default();
    p.enable(&a.probes)?;
    for f in &a.functions {
        p.functions.push(
            f.parse::<FunctionSpec>()
                .map_err(|e| anyhow::anyhow!("--function {e}"))?,
        );
    }
    p.mpi = a.mpi;
    p.openmp = a.openmp;
    for u in &a.usdt {
        p.usdt.push(
            u.parse::<hpcscope_trace::UsdtSpec>()
                .map_err(|e| anyhow::anyhow!("--usdt {e}"))?,
        );
    }
    p.rate_interval = match a.interval {
        0.0 => None,
        v if v.is_finite() && v > 0.0 => Some(std::time::Duration::from_secs_f64(v)),
        v => anyhow::bail!(
            "--interval {v}: give a positive number of seconds, or 0 for no rate series"
        ),
    };
    p.kfuncs = a.kfunc.iter().cloned().collect();
    if !p.kfuncs.is_empty() {
        // The stand-in when kprobes are missing.
        p.syscalls = true;
    }
    p.profile_hz = a.profile_hz;
    p.kernel_stacks = true;
    p.timeline = a.timeline.is_some();
    p.max_processes = a.target.max_processes;
    Ok(TraceOptions {
        target: a.target.target(&a.command)?,
        probes: p,
        duration: a.target.duration()?,
        quiet: false,
    })
}

/// Runs `trace`.
pub fn run(a: &TraceArgs) -> Result<ExitCode> {
    if let Some(f) = &a.list_usdt {
        return list_usdt(a, f);
    }
    if a.rank.run_dir.is_some() {
        return run_rank(a);
    }
    let opts = options(a)?;
    hpcscope_trace::install_signal_handlers();
    let out = hpcscope_trace::trace(&opts)?;
    // The side files and the result, written together (all or none, none over another).
    let mut files: Vec<(&Path, String)> = Vec::new();
    if let Some(path) = &a.timeline {
        let json = serde_json::to_string(&out.report.chrome_trace())?;
        files.push((path, json + "\n"));
    }
    let text = hpcscope_trace::view::render(a.format, &out)?;
    if let Some(path) = &a.html {
        let sections = hpcscope_trace::report::html_sections(&out.report, out.profile.as_ref());
        let page = hpcscope_report::html_page(
            &format!("hpcscope trace: {}", out.report.target),
            &sections,
        );
        files.push((path, page));
    }
    let files: Vec<(&Path, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    emit_with(&text, a.output.as_deref(), &files)?;
    if let Some(line) = a
        .record
        .store("trace", &out.report.target, &out.report.summary())?
    {
        eprintln!("{line}");
    }
    Ok(crate::args::command_status(&out.report))
}

/// `trace --list-usdt FILE`: the probes of a file (a path, a library name, a program on
/// PATH), one row per probe with its sites, semaphore and arguments.
fn list_usdt(a: &TraceArgs, file: &str) -> Result<ExitCode> {
    let path = hpcscope_trace::linux::usdt_file(file)?;
    let probes = hpcscope_trace::usdt::probes_in(&path)?;
    let text = hpcscope_trace::view::usdt_probes(a.format, &path, &probes)?;
    emit(&text, a.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

/// `trace --run-dir`: this rank traces its own command (with the MPI probes) and writes the
/// summary and its time in MPI to the run directory. Without BPF permission the command
/// still runs, timed, and the result says what is missing.
fn run_rank(a: &TraceArgs) -> Result<ExitCode> {
    a.target.check_rank_target("trace", &a.command)?;
    if a.timeline.is_some() || a.output.is_some() || a.record.record {
        anyhow::bail!(
            "--run-dir writes one result per rank into the run directory; leave out --timeline, -o and --record (merge the job with `hpcscope merge DIR`)"
        );
    }
    let mut opts = options(a)?;
    opts.probes.mpi = true;
    opts.probes.counters = true;
    opts.probes.timeline = true;
    opts.probes.timeline_keep = MpiTime::timeline_events();
    let Some(session) = a.rank.begin("trace", &a.command)? else {
        unreachable!("run_rank is called with --run-dir");
    };
    let outcome = hpcscope_job::rank::traced(hpcscope_trace::trace(&opts), &a.command)?;
    Ok(ExitCode::from(session.finish(outcome)?))
}
