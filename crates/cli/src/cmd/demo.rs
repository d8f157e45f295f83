//! `hpcscope demo` and `hpcscope validate`: the bundled reference workloads, built here,
//! analysed, projected and validated (see `hpcscope_analysis::demo` and `::validate`); this
//! file writes the report and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use hpcscope_analysis::demo::{DemoOptions, demo};
use hpcscope_analysis::host_machine;
use hpcscope_analysis::validate::{summarize, validate_all, validation_section, validation_text};
use hpcscope_analysis::workloads::{build, selected};

use crate::output::{emit, write_atomic};

/// Arguments of `demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Output directory: report.html, result.json, the built workloads.
    #[arg(long, short, default_value = "out/demo")]
    pub output: PathBuf,
    /// Source machine (built-in id or file); default: this machine, measured once and cached.
    #[arg(long, short)]
    pub machine: Option<String>,
    /// Only these workloads (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Skip the aarch64 SVE vector-length study.
    #[arg(long)]
    pub no_sve: bool,
    /// Native runs per binary (median).
    #[arg(long, default_value_t = 3)]
    pub native_runs: u32,
}

/// Arguments of `validate`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Output directory: the built workloads, validation.json and validation.svg.
    #[arg(long, short, default_value = "out/validate")]
    pub output: PathBuf,
    /// Source machine (built-in id or file); default: this machine, measured once and cached.
    #[arg(long, short)]
    pub machine: Option<String>,
    /// Only these workloads (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Native runs per binary (median).
    #[arg(long, default_value_t = 5)]
    pub native_runs: u32,
}

fn progress(msg: &str) {
    eprintln!("[hpcscope demo] {msg}");
}

/// Runs `validate`.
pub fn run_validate(a: &ValidateArgs) -> Result<ExitCode> {
    let ws = selected(&a.workloads)?;
    let m = host_machine::source_machine(a.machine.as_deref())?;
    let mut notes = Vec::new();
    let builds = build(
        &a.output.join("build"),
        &ws.iter().map(|w| w.name).collect::<Vec<_>>(),
        &mut notes,
    )?;
    let v = validate_all(&m, &ws, &builds, a.native_runs, &progress)?;
    let s = summarize(&v);
    std::fs::create_dir_all(&a.output)?;
    write_atomic(
        &a.output.join("validation.json"),
        &(serde_json::to_string_pretty(
            &serde_json::json!({"machine": m.id, "results": v, "summary": s}),
        )? + "\n"),
    )?;
    let sec = validation_section(&v, &m);
    write_atomic(&a.output.join("validation.svg"), &sec.svgs[0])?;
    emit(&validation_text(&v, &s), None)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `demo`.
pub fn run(a: &DemoArgs) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    let o = DemoOptions {
        build_dir: a.output.join("build"),
        source: host_machine::source_machine(a.machine.as_deref())?,
        workloads: selected(&a.workloads)?,
        no_sve: a.no_sve,
        native_runs: a.native_runs,
    };
    let d = demo(&o, &progress)?;
    std::fs::create_dir_all(&a.output)?;
    write_atomic(&a.output.join("report.html"), &d.page)?;
    write_atomic(
        &a.output.join("result.json"),
        &(serde_json::to_string_pretty(&d.json())? + "\n"),
    )?;
    let mut text = d.text();
    text.push_str(&format!(
        "report: {} ({:.0} s)\n",
        a.output.join("report.html").display(),
        started.elapsed().as_secs_f64()
    ));
    emit(&text, None)?;
    Ok(ExitCode::SUCCESS)
}
