//! `hpcscope profile`: sample CPU stacks (perf cpu-clock) of a command, PID or cgroup, and
//! write folded stacks, a flame graph and the hot-function table.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use hpcscope_trace::{Probes, Profile, TraceOptions};

use crate::cmd::trace::{classify, duration, target};
use crate::output::{Format, Table, emit, render, write_atomic};

/// Arguments of `profile`.
#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// Sampling frequency, Hz (99 avoids lockstep with 100 Hz timers).
    #[arg(long, default_value_t = 99)]
    pub hz: u64,
    /// Profile this running process (and what it forks).
    #[arg(long, conflicts_with_all = ["cgroup", "system"])]
    pub pid: Option<u32>,
    /// Profile every process of this cgroup v2.
    #[arg(long, value_name = "DIR", conflicts_with = "system")]
    pub cgroup: Option<PathBuf>,
    /// Profile the whole machine.
    #[arg(long)]
    pub system: bool,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// User stacks only (no kernel frames).
    #[arg(long)]
    pub no_kernel: bool,
    /// Prefix of the files written: PREFIX.folded (folded stacks) and PREFIX.svg (flame graph).
    #[arg(long, default_value = "profile", value_name = "PREFIX")]
    pub out_prefix: String,
    /// Rows of the hot-function table.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Write the table here instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Output format of the table (`json` adds every stack).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// The program and its arguments.
    #[arg(last = true, value_name = "PROGRAM [ARGS]")]
    pub command: Vec<String>,
}

/// The hot-function table: self and total samples and percentages.
pub fn hot_table(p: &Profile, n: usize) -> Table {
    let mut t = Table::new(&["function", "self", "self_%", "total", "total_%"]);
    for h in p.hot_functions(n) {
        t.row(vec![
            h.name,
            h.self_samples.to_string(),
            format!("{:.1}", h.self_pct),
            h.total_samples.to_string(),
            format!("{:.1}", h.total_pct),
        ]);
    }
    t
}

/// Runs `profile`.
pub fn run(a: &ProfileArgs) -> Result<ExitCode> {
    if a.hz == 0 || a.hz > 10_000 {
        anyhow::bail!("--hz {}: give 1 to 10000", a.hz);
    }
    let opts = TraceOptions {
        target: target(a.pid, &a.cgroup, a.system, &a.command)?,
        probes: Probes {
            profile_hz: Some(a.hz),
            kernel_stacks: !a.no_kernel,
            ..Probes::default()
        },
        duration: duration(a.duration)?,
    };
    hpcscope_trace::install_signal_handlers();
    let out = hpcscope_trace::trace(&opts).map_err(classify)?;
    let prof = out.profile.clone().unwrap_or_default();
    let folded = format!("{}.folded", a.out_prefix);
    let svg = format!("{}.svg", a.out_prefix);
    write_atomic(folded.as_ref(), &prof.folded()).with_context(|| format!("writing {folded}"))?;
    let title = format!(
        "{} ({} samples at {} Hz)",
        out.report.target,
        prof.total(),
        prof.hz
    );
    let graph = prof
        .flamegraph_svg(&title)
        .map_err(|e| anyhow::anyhow!("drawing the flame graph: {e}"))?;
    write_atomic(svg.as_ref(), &graph).with_context(|| format!("writing {svg}"))?;
    let mut pre = vec![format!(
        "{}: {} samples at {} Hz over {:.2} s{}; wrote {folded} and {svg}",
        out.report.target,
        prof.total(),
        prof.hz,
        out.report.duration_s,
        if out.report.partial { " (partial)" } else { "" }
    )];
    if prof.missing_user_stacks > 0 {
        pre.push(format!(
            "{} samples had no user stack (code without frame pointers: rebuild with \
             -fno-omit-frame-pointer)",
            prof.missing_user_stacks
        ));
    }
    let table = hot_table(&prof, a.top);
    let text = match a.format {
        Format::Json => {
            serde_json::to_string_pretty(&serde_json::json!({
                "report": out.report,
                "profile": prof,
                "hot_functions": prof.hot_functions(a.top),
            }))? + "\n"
        }
        f => render(f, &prof, &pre, &table, &out.report.notes)?,
    };
    emit(&text, a.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}
