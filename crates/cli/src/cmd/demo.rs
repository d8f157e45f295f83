//! `hpcscope demo` and `hpcscope validate`: the bundled reference workloads, built here,
//! analysed, projected and validated (see `hpcscope_analysis::demo`, `::validate` and
//! `::node_validate`); this file writes the report and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use hpcscope_analysis::demo::{DemoOptions, demo};
use hpcscope_analysis::host_machine;
use hpcscope_analysis::node_validate::{
    node_validation_section, node_validation_text, node_values_check, summarize_node, validate_node,
};
use hpcscope_analysis::validate::{summarize, validate_all, validation_section, validation_text};
use hpcscope_analysis::workloads::{build, selected_all};

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
    /// Threads of the node section (the OpenMP workloads); default: this machine's cores.
    #[arg(long)]
    pub threads: Option<u32>,
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
    /// Threads of the node pairs (from one thread to this many, and SSE2 <-> AVX2 at this
    /// many); default: this machine's cores.
    #[arg(long)]
    pub threads: Option<u32>,
}

/// The threads of the node section: given, or this machine's CPUs (at least 2).
fn node_threads(t: Option<u32>) -> Result<u32> {
    match t {
        Some(0 | 1) => anyhow::bail!(hpcscope_core::InputError::new(
            "--threads",
            "",
            "must be at least 2",
            "the node section compares one thread with several: give 2 or more"
        )),
        Some(t) => Ok(t),
        None => Ok(std::thread::available_parallelism()
            .map_or(2, |n| n.get() as u32)
            .max(2)),
    }
}

fn progress(msg: &str) {
    eprintln!("[hpcscope demo] {msg}");
}

/// Runs `validate`.
pub fn run_validate(a: &ValidateArgs) -> Result<ExitCode> {
    let (ws, nws) = selected_all(&a.workloads)?;
    let threads = node_threads(a.threads)?;
    let m = host_machine::source_machine(a.machine.as_deref())?;
    let mut notes = Vec::new();
    let builds = build(
        &a.output.join("build"),
        &ws.iter().map(|w| w.name).collect::<Vec<_>>(),
        &mut notes,
    )?;
    let v = validate_all(&m, &ws, &builds, a.native_runs, &progress)?;
    let s = summarize(&v);
    let nbuilds = build(
        &a.output.join("build"),
        &nws.iter().map(|w| w.name).collect::<Vec<_>>(),
        &mut notes,
    )?;
    let nv = validate_node(&m, &nws, &nbuilds, threads, a.native_runs, &progress)?;
    let ns = summarize_node(&nv);
    let warnings = if nv.is_empty() {
        Vec::new()
    } else {
        node_values_check(&m)
    };
    std::fs::create_dir_all(&a.output)?;
    write_atomic(
        &a.output.join("validation.json"),
        &(serde_json::to_string_pretty(&serde_json::json!({
            "machine": m.id,
            "results": v,
            "summary": s,
            "node": {"threads": threads, "results": nv, "summary": ns, "warnings": warnings},
        }))? + "\n"),
    )?;
    if !v.is_empty() {
        let sec = validation_section(&v, &m);
        write_atomic(&a.output.join("validation.svg"), &sec.svgs[0])?;
    }
    if !nv.is_empty() {
        let sec = node_validation_section(&nv, &m);
        write_atomic(&a.output.join("validation-node.svg"), &sec.svgs[0])?;
    }
    let mut text = String::new();
    if !v.is_empty() {
        text.push_str(&validation_text(&v, &s));
    }
    if !nv.is_empty() {
        text.push_str(&node_validation_text(&nv, &ns));
    }
    for w in &warnings {
        text.push_str(&format!("warning: {w}\n"));
    }
    emit(&text, None)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `demo`.
pub fn run(a: &DemoArgs) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    let (workloads, node_workloads) = selected_all(&a.workloads)?;
    let o = DemoOptions {
        build_dir: a.output.join("build"),
        source: host_machine::source_machine(a.machine.as_deref())?,
        workloads,
        no_sve: a.no_sve,
        native_runs: a.native_runs,
        node_workloads,
        threads: node_threads(a.threads)?,
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
