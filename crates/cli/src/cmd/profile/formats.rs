//! `profile import`, `profile diff`, `profile export`: profiles other tools wrote (perf),
//! differential flame graphs, and the formats other tools read (pprof, speedscope, Hatchet).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use hpcscope_trace::perf_script::{self, Imported};
use hpcscope_trace::view;

use crate::output::{Format, emit, write_atomic};

/// The subcommands of `profile`.
#[derive(Subcommand, Debug)]
pub enum ProfileCmd {
    /// Read a profile another tool wrote (`perf script` output, a perf.data file through
    /// `perf script`, folded stacks, hpcscope profile JSON): folded stacks, flame graph and
    /// hot functions, as for a profile hpcscope sampled.
    Import(ImportArgs),
    /// Compare two profiles: a differential flame graph (red: grew, blue: shrank) and the
    /// functions whose share moved most.
    Diff(DiffArgs),
    /// Write a profile for another tool: pprof (`go tool pprof`, Parca, Pyroscope),
    /// speedscope (also from a `trace --timeline` file), Hatchet (`GraphFrame.from_literal`;
    /// also from a `mix` profile, per region).
    Export(ExportArgs),
}

/// Arguments of `profile import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The file: perf script text, perf.data, folded stacks or hpcscope profile JSON.
    pub file: PathBuf,
    /// Write PREFIX.folded and PREFIX.svg.
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
}

/// Arguments of `profile diff`.
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The profile before (any format `profile import` reads).
    pub before: PathBuf,
    /// The profile after.
    pub after: PathBuf,
    /// Write the differential flame graph here.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Compare raw counts instead of scaling the first profile to the second's total.
    #[arg(long)]
    pub no_normalize: bool,
    /// Rows of the table.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Write the table here instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Output format of the table.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Arguments of `profile export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The input: any profile `profile import` reads; for speedscope also a Chrome trace
    /// (`trace --timeline`); for Hatchet also a `mix` profile or the JSON of `counters run`
    /// (per region).
    pub file: PathBuf,
    /// The format to write.
    #[arg(long, value_enum)]
    pub to: hpcscope_analysis::export::ExportFormat,
    /// The file to write.
    #[arg(long, short, value_name = "FILE")]
    pub output: PathBuf,
}

/// Runs a `profile` subcommand.
pub fn run(cmd: &ProfileCmd) -> Result<ExitCode> {
    match cmd {
        ProfileCmd::Import(a) => import(a),
        ProfileCmd::Diff(a) => diff(a),
        ProfileCmd::Export(a) => export(a),
    }
}

fn read(path: &Path) -> Result<Imported> {
    Ok(perf_script::import(path)?)
}

fn import(a: &ImportArgs) -> Result<ExitCode> {
    let imp = read(&a.file)?;
    let mut pre = vec![view::summary(&imp)];
    if let Some(prefix) = &a.out_prefix {
        let folded = format!("{prefix}.folded");
        let svg = format!("{prefix}.svg");
        write_atomic(folded.as_ref(), &imp.profile.folded())?;
        let graph = imp
            .profile
            .flamegraph_svg(&format!("{} ({})", imp.origin, imp.weight.unit()))
            .map_err(|e| anyhow::anyhow!("drawing the flame graph: {e}"))?;
        write_atomic(svg.as_ref(), &graph)?;
        pre.push(format!("wrote {folded} and {svg}"));
    }
    let text = view::imported(a.format, &imp, &pre, a.top)?;
    emit(&text, a.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

fn diff(a: &DiffArgs) -> Result<ExitCode> {
    let before = read(&a.before)?;
    let after = read(&a.after)?;
    if before.weight.unit() != after.weight.unit() {
        anyhow::bail!(
            "{} counts {} and {} counts {}: compare profiles of the same kind (both perf, or \
             both sampled by hpcscope)",
            before.origin,
            before.weight.unit(),
            after.origin,
            after.weight.unit()
        );
    }
    let rows = perf_script::diff_functions(&before.profile, &after.profile, a.top);
    let mut pre = vec![view::summary(&before), view::summary(&after)];
    if let Some(svg) = &a.svg {
        let graph = perf_script::diff_flamegraph_svg(
            &before.profile,
            &after.profile,
            &format!("{} -> {}", before.origin, after.origin),
            !a.no_normalize,
        )?;
        write_atomic(svg, &graph)?;
        pre.push(format!(
            "wrote {} (frames of the second profile; red: share grew, blue: shrank)",
            svg.display()
        ));
    }
    let text = view::diff(a.format, &before, &after, &rows, &pre)?;
    emit(&text, a.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

fn export(a: &ExportArgs) -> Result<ExitCode> {
    let (bytes, notes) = hpcscope_analysis::export::export(&a.file, a.to)?;
    hpcscope_core::fs::write_atomic(&a.output, &bytes)
        .with_context(|| format!("cannot write '{}'", a.output.display()))?;
    let mut text = format!("wrote {} ({} bytes)\n", a.output.display(), bytes.len());
    for n in notes {
        text.push_str(&format!("note: {n}\n"));
    }
    emit(&text, None)?;
    Ok(ExitCode::SUCCESS)
}
