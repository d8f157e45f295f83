//! `hpcscope profile`: sample CPU stacks (perf cpu-clock) of a command, PID or cgroup, and
//! write folded stacks, a flame graph and the hot-function table.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use hpcscope_trace::{Probes, TraceOptions};

use crate::output::{Format, emit, write_atomic};

mod formats;

/// Arguments of `profile`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ProfileArgs {
    /// Import, compare or export profiles instead of sampling one.
    #[command(subcommand)]
    pub sub: Option<formats::ProfileCmd>,
    /// Sampling frequency, Hz (99 avoids lockstep with 100 Hz timers).
    #[arg(long, default_value_t = 99)]
    pub hz: u64,
    /// What to profile (or a command after `--`), and for how long.
    #[command(flatten)]
    pub target: crate::args::TargetArgs,
    /// User stacks only (no kernel frames).
    #[arg(long)]
    pub no_kernel: bool,
    /// Prefix of the files written: PREFIX.folded (folded stacks) and PREFIX.svg (flame
    /// graph). Default `profile` for a command; with --pid, --cgroup or --system nothing is
    /// written unless asked.
    #[arg(long, value_name = "PREFIX")]
    pub out_prefix: Option<String>,
    /// Rows of the hot-function table.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Write the table here instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Output format of the table (`json` adds every stack).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// In a parallel job: one profile per rank in a run directory; `hpcscope merge` draws
    /// the job's flame graph.
    #[command(flatten)]
    pub rank: crate::args::RankFlags,
    /// The program and its arguments.
    #[arg(last = true, value_name = "PROGRAM [ARGS]")]
    pub command: Vec<String>,
}

/// `profile --run-dir`: this rank samples its own command; the result keeps the stacks so
/// that the merge can draw one flame graph for the job.
fn run_rank(a: &ProfileArgs) -> Result<ExitCode> {
    a.target.check_rank_target("profile", &a.command)?;
    if a.output.is_some() {
        anyhow::bail!("--run-dir writes one result per rank into the run directory; leave out -o");
    }
    let opts = TraceOptions {
        target: hpcscope_trace::Target::Command(a.command.clone()),
        probes: Probes::profiling(a.hz, !a.no_kernel, a.target.max_processes),
        duration: a.target.duration()?,
        quiet: false,
    };
    let Some(session) = a.rank.begin("profile", &a.command)? else {
        unreachable!("run_rank is called with --run-dir");
    };
    let outcome = hpcscope_job::rank::profiled(hpcscope_trace::trace(&opts), &a.command, a.top)?;
    Ok(ExitCode::from(session.finish(outcome)?))
}

/// Runs `profile`.
pub fn run(a: &ProfileArgs) -> Result<ExitCode> {
    if let Some(sub) = &a.sub {
        return formats::run(sub);
    }
    if a.hz == 0 || a.hz > 10_000 {
        anyhow::bail!("--hz {}: give 1 to 10000", a.hz);
    }
    if a.rank.run_dir.is_some() {
        return run_rank(a);
    }
    let opts = TraceOptions {
        target: a.target.target(&a.command)?,
        probes: Probes::profiling(a.hz, !a.no_kernel, a.target.max_processes),
        duration: a.target.duration()?,
        quiet: false,
    };
    hpcscope_trace::install_signal_handlers();
    let out = hpcscope_trace::trace(&opts)?;
    let prof = out.profile.clone().unwrap_or_default();
    let title = format!(
        "{} ({} samples at {} Hz)",
        out.report.target,
        prof.total(),
        prof.hz
    );
    let prefix = a
        .out_prefix
        .clone()
        .or_else(|| (!a.command.is_empty()).then(|| "profile".to_string()));
    let wrote = match &prefix {
        Some(prefix) => {
            let folded = format!("{prefix}.folded");
            let svg = format!("{prefix}.svg");
            write_atomic(folded.as_ref(), &prof.folded())
                .with_context(|| format!("writing {folded}"))?;
            let graph = prof
                .flamegraph_svg(&title)
                .map_err(|e| anyhow::anyhow!("drawing the flame graph: {e}"))?;
            write_atomic(svg.as_ref(), &graph).with_context(|| format!("writing {svg}"))?;
            format!("wrote {folded} and {svg}")
        }
        None => {
            "no files written (give --out-prefix PREFIX for the folded stacks and the flame graph)"
                .to_string()
        }
    };
    let text = hpcscope_trace::view::profile(a.format, &out, &prof, &wrote, a.top)?;
    emit(&text, a.output.as_deref())?;
    Ok(crate::args::command_status(&out.report))
}
