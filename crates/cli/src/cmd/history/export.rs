//! `history export --format otava`: the run history as the CSV source Apache Otava reads,
//! with the Otava configuration that names its columns.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use hpcscope_history::export::{otava_config, otava_csv};

use crate::args::FilterArgs;
use crate::output::emit_with;

/// Formats of `history export`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// Apache Otava's CSV source: time, run, commit, machine, then one column per metric.
    Otava,
}

/// Arguments of `history export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// The format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Otava)]
    pub format: ExportFormat,
    /// Metric to export (repeatable; default every metric of the runs).
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
    /// Write the CSV here (default: standard output).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write an Otava configuration (YAML) with one csv test reading the CSV.
    #[arg(long, value_name = "FILE", requires = "output")]
    pub otava_config: Option<PathBuf>,
    /// The test's name in that configuration.
    #[arg(long, default_value = "hpcscope", value_name = "NAME")]
    pub test: String,
}

/// Runs `history export`.
pub fn run(a: &ExportArgs) -> Result<ExitCode> {
    let store = super::open(&a.filter.db)?;
    let runs = store.runs(&a.filter.filter())?;
    if runs.is_empty() {
        anyhow::bail!(
            "no run matches: nothing to export (see `hpcscope history list` for what is stored)"
        );
    }
    let e = otava_csv(&runs, &a.metrics);
    let cfg = match (&a.otava_config, &a.output) {
        (Some(cfg), Some(out)) => {
            let file = std::path::absolute(out).unwrap_or_else(|_| out.clone());
            Some((
                cfg.as_path(),
                otava_config(&a.test, &file.display().to_string(), &e),
            ))
        }
        _ => None,
    };
    let files: Vec<(&std::path::Path, &str)> = cfg.iter().map(|(p, t)| (*p, t.as_str())).collect();
    emit_with(&e.csv, a.output.as_deref(), &files)?;
    if a.output.is_some() {
        eprintln!(
            "wrote {} runs x {} metrics{}{}",
            e.rows,
            e.metrics.len(),
            if e.empty_cells > 0 {
                format!("; {} cells empty (runs without that metric)", e.empty_cells)
            } else {
                String::new()
            },
            match &a.otava_config {
                Some(c) => format!(
                    "; Otava: otava analyze --config-file {} {}",
                    c.display(),
                    a.test
                ),
                None => String::new(),
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
