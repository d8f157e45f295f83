//! `hpcscope doctor`: what this machine allows (BPF permission, BTF, kprobes, fentry,
//! uprobes, perf events, qemu, cross compilers) and what each missing piece disables.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::output::{Format, emit};

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
    let text = hpcscope_trace::view::doctor(a.format, &d)?;
    emit(&text, a.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}
