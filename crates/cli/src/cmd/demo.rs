//! `hpcscope demo`: the bundled reference workloads built here, analysed, projected and
//! validated (see `hpcscope_analysis::demo`); this file writes the report and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use hpcscope_analysis::demo::{DemoOptions, demo};
use hpcscope_analysis::host_machine;
use hpcscope_analysis::workloads::{node_threads, selected_all};

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

fn progress(msg: &str) {
    eprintln!("[hpcscope demo] {msg}");
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
