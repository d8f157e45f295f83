//! `machine import FILE.yml` and `machine export ID --format kerncraft`: Kerncraft/OSACA
//! machine files to hpcscope machine TOML and back, with what does not map listed.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use hpcscope_core::kerncraft::{self, ImportOverrides};
use hpcscope_core::view::machine as view;

use crate::output::{emit, write_atomic};

/// Arguments of `machine import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// A Kerncraft (or OSACA) machine file (YAML).
    pub file: PathBuf,
    /// Write the machine TOML here (default: standard output).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Machine id (default: the file name, lower case).
    #[arg(long)]
    pub id: Option<String>,
    /// Vector extension, when no benchmark kernel or compiler flag of the file names it
    /// (`neon`, `sve`, `avx2`...); give --vector-bits with it.
    #[arg(long, requires = "vector_bits")]
    pub simd: Option<String>,
    /// Vector width in bits, with --simd.
    #[arg(long, requires = "simd")]
    pub vector_bits: Option<u32>,
    /// Double-precision FLOPs per cycle of one core, when the file has
    /// INFORMATION_REQUIRED there.
    #[arg(long, value_name = "N")]
    pub dp_flops_per_cycle: Option<f64>,
}

/// Formats `machine export` writes.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// A Kerncraft machine file (YAML).
    Kerncraft,
}

/// Arguments of `machine export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Built-in id or machine TOML file.
    pub machine: String,
    /// The format to write.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Write here (default: standard output).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `machine import`.
pub fn import(a: &ImportArgs) -> Result<ExitCode> {
    if let Some(n) = a.dp_flops_per_cycle
        && !(n.is_finite() && n > 0.0)
    {
        anyhow::bail!("--dp-flops-per-cycle {n}: give a positive number, e.g. 32");
    }
    let origin = a.file.display().to_string();
    let src = hpcscope_core::load::read(
        &a.file,
        "the Kerncraft machine file",
        "give a Kerncraft or OSACA machine file (YAML)",
    )?;
    let stem = a
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "machine".into());
    let c = kerncraft::import(
        &src,
        &origin,
        &stem,
        &ImportOverrides {
            id: a.id.clone(),
            simd: a.simd.clone(),
            vector_bits: a.vector_bits,
            dp_flops_per_cycle: a.dp_flops_per_cycle,
        },
    )?;
    finish(&view::imported_toml(&c), a.output.as_ref(), &c.unmapped)
}

/// Runs `machine export`.
pub fn export(a: &ExportArgs) -> Result<ExitCode> {
    let m = hpcscope_core::load::machine(&a.machine)?;
    let c = match a.format {
        ExportFormat::Kerncraft => kerncraft::export(&m)?,
    };
    finish(&view::exported(&c), a.output.as_ref(), &c.unmapped)
}

fn finish(text: &str, output: Option<&PathBuf>, unmapped: &[String]) -> Result<ExitCode> {
    match output {
        Some(p) => {
            write_atomic(p, text)?;
            let mut msg = format!("wrote {}\n", p.display());
            for u in unmapped {
                msg.push_str(&format!("not mapped: {u}\n"));
            }
            eprint!("{msg}");
        }
        None => emit(text, None)?,
    }
    Ok(ExitCode::SUCCESS)
}
