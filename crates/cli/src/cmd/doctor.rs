//! `hpcscope doctor`: what this machine allows (BPF permission, BTF, kprobes, fentry,
//! uprobes, perf events, qemu, cross compilers) and what each missing piece disables.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::output::{Format, Table, emit, render};

/// Arguments of `doctor`.
#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Write the report here instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `doctor`; always exits 0 (it reports, it does not judge).
pub fn run(a: &DoctorArgs) -> Result<ExitCode> {
    let d = hpcscope_trace::doctor::run();
    let mut t = Table::new(&["check", "ok", "found", "missing disables"]);
    for c in &d.checks {
        t.row(vec![
            c.name.clone(),
            if c.ok { "yes" } else { "no" }.into(),
            c.detail.clone(),
            c.disables.clone(),
        ]);
    }
    let pre = vec![format!("kernel {}, {} CPUs", d.kernel, d.cpus)];
    let post = if d.can_trace() {
        vec!["eBPF tracing and profiling: available".to_string()]
    } else {
        vec!["eBPF tracing and profiling: NOT available (see the rows marked no)".to_string()]
    };
    let text = render(a.format, &d, &pre, &t, &post)?;
    emit(&text, a.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}
