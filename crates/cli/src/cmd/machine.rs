//! `hpcscope machine list|show|validate|diff|derive`.

use std::{path::PathBuf, process::ExitCode};

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use hpcscope_core::view::machine as view;
use hpcscope_core::{library, load, machine::diff};

use crate::output::{Format, emit};

mod kerncraft;

/// Machine subcommands.
#[derive(Subcommand, Debug)]
pub enum MachineCmd {
    /// List the built-in machines.
    List(ListArgs),
    /// Print a machine (built-in id or file).
    Show(ShowArgs),
    /// Check machine files: every error with its file, field and fix (exit 2 if any).
    Validate(ValidateArgs),
    /// Compare two machines field by field.
    Diff(DiffArgs),
    /// Write a hypothetical machine derived from another by transforms (a bigger L3, HBM
    /// instead of DDR, a longer vector...), with provenance saying what it was derived from:
    /// for `mix -m`, `roofline`, `project` and scenario targets.
    Derive(DeriveArgs),
    /// Turn a Kerncraft/OSACA machine file (YAML) into a machine TOML, with provenance;
    /// what does not map is listed.
    Import(kerncraft::ImportArgs),
    /// Write a machine in another tool's format (`--format kerncraft`); what does not map is
    /// listed.
    Export(kerncraft::ExportArgs),
}

/// Arguments of `machine list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    out: crate::args::OutputArgs,
}

/// How to print one machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ShowFormat {
    /// Summary table.
    #[default]
    Table,
    /// The machine file itself (TOML).
    Toml,
    /// JSON.
    Json,
    /// Markdown table.
    Md,
    /// CSV of the levels.
    Csv,
}

/// Arguments of `machine show`.
#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Built-in id (see `machine list`) or path to a machine TOML file.
    machine: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: ShowFormat,
    /// Write the result to this file instead of standard output.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

/// Arguments of `machine validate`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Machine files (or built-in ids) to check.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Arguments of `machine diff`.
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// First machine (id or file).
    a: String,
    /// Second machine (id or file).
    b: String,
    #[command(flatten)]
    out: crate::args::OutputArgs,
}

/// Arguments of `machine derive`.
#[derive(Args, Debug)]
pub struct DeriveArgs {
    /// The base machine (built-in id or file).
    base: String,
    /// A change, KEY=VALUE: vector_bits=N, cores=N, memory=ID, LEVEL.scale=F,
    /// LEVEL.core_gbs=X, LEVEL.node_gbs=X, LEVEL.size_bytes=N (K/M/G suffixes),
    /// LEVEL.associativity=N, LEVEL.line_bytes=N, peak.f64.core_gflops=X,
    /// peak.f64.node_gflops=X. Repeatable; applied in order, after the --transform ones.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// A transform as a scenario writes it, an inline TOML table:
    /// '{ cache_size = { level = "L3", size_bytes = 134217728 } }'. Repeatable.
    #[arg(long = "transform", value_name = "TOML")]
    transform: Vec<String>,
    /// Id of the new machine (default: the base's id with the transforms' labels).
    #[arg(long)]
    id: Option<String>,
    /// Name of the new machine (default: the base's name with the transforms' labels).
    #[arg(long)]
    name: Option<String>,
    /// Write the machine TOML here (default: stdout).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

/// Runs a machine subcommand.
pub fn run(c: MachineCmd) -> Result<ExitCode> {
    match c {
        MachineCmd::List(a) => list(&a),
        MachineCmd::Show(a) => show(&a),
        MachineCmd::Validate(a) => validate(&a),
        MachineCmd::Diff(a) => diff_cmd(&a),
        MachineCmd::Derive(a) => derive_cmd(&a),
        MachineCmd::Import(a) => kerncraft::import(&a),
        MachineCmd::Export(a) => kerncraft::export(&a),
    }
}

fn list(a: &ListArgs) -> Result<ExitCode> {
    let text = view::list(a.out.format, &library::all()?)?;
    emit(&text, a.out.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

fn show(a: &ShowArgs) -> Result<ExitCode> {
    let m = load::machine(&a.machine)?;
    let text = match a.format {
        ShowFormat::Toml => m.to_toml_string(),
        ShowFormat::Json => view::show(Format::Json, &m)?,
        ShowFormat::Md => view::show(Format::Md, &m)?,
        ShowFormat::Csv => view::show(Format::Csv, &m)?,
        ShowFormat::Table => view::show(Format::Table, &m)?,
    };
    emit(&text, a.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

fn validate(a: &ValidateArgs) -> Result<ExitCode> {
    let mut bad = 0;
    for f in &a.files {
        match load::machine(&f.to_string_lossy()) {
            Ok(m) => println!("ok: {} ({}, {} levels)", f.display(), m.id, m.levels.len()),
            Err(e) => {
                bad += 1;
                eprintln!("error: {e:#}");
            }
        }
    }
    if bad > 0 {
        eprintln!("{bad} of {} machine file(s) invalid", a.files.len());
        Ok(crate::exit::bad_input())
    } else {
        Ok(ExitCode::SUCCESS)
    }
}

fn diff_cmd(a: &DiffArgs) -> Result<ExitCode> {
    let (ma, mb) = (load::machine(&a.a)?, load::machine(&a.b)?);
    let d = diff(&ma, &mb);
    let text = view::diff(a.out.format, &ma, &mb, &d)?;
    emit(&text, a.out.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

fn derive_cmd(a: &DeriveArgs) -> Result<ExitCode> {
    use hpcscope_core::explore::{Transform, derive};
    if a.set.is_empty() && a.transform.is_empty() {
        anyhow::bail!(
            "machine derive: give at least one change, e.g. --set L3.size_bytes=128M or --transform '{{ replace_memory = \"a64fx\" }}' (see hpcscope machine derive --help)"
        );
    }
    let base = load::machine(&a.base)?;
    let mut transforms = Vec::new();
    for t in &a.transform {
        transforms.push(Transform::parse_inline(t)?);
    }
    for s in &a.set {
        transforms.push(Transform::parse_set(s)?);
    }
    let lookup = |id: &str| load::machine(id);
    let mut m = derive(&base, &a.base, &transforms, &lookup)?;
    if let Some(id) = &a.id {
        m.id = id.clone();
    }
    if let Some(name) = &a.name {
        m.name = name.clone();
    }
    let origin = format!("the derived machine '{}'", m.id);
    m.validate(&origin)?;
    let text = view::derived_toml(&a.base, &transforms, &m);
    emit(&text, a.output.as_deref())?;
    if let Some(p) = &a.output {
        eprintln!("wrote {} ({})", p.display(), m.id);
    }
    Ok(ExitCode::SUCCESS)
}
