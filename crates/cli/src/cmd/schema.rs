//! `hpcscope schema [NAME]`: the JSON Schema of a file format or result (see
//! `hpcscope_analysis::schema` and, for parallel jobs, `hpcscope_job::schema`); without a
//! name, the list.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::output::emit;

/// Arguments of `schema`.
#[derive(Args, Debug)]
pub struct SchemaArgs {
    /// The schema: a file format (machine, profile, scenario, sweep, rank), analyze's result,
    /// or a command's --format json output (counters, mix, trace, profile-run, roofline,
    /// model-*, merge, ...). None: list them.
    pub name: Option<String>,
    /// Write it here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Every schema: name and what it describes.
fn names() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    hpcscope_analysis::schema::NAMES
        .iter()
        .chain(hpcscope_job::schema::NAMES)
}

/// Runs `schema`.
pub fn run(a: &SchemaArgs) -> Result<ExitCode> {
    let Some(name) = &a.name else {
        let mut s = String::new();
        for (n, about) in names() {
            s.push_str(&format!("{n:<18} {about}\n"));
        }
        emit(&s, a.output.as_deref())?;
        return Ok(ExitCode::SUCCESS);
    };
    match hpcscope_analysis::schema::schema(name).or_else(|| hpcscope_job::schema::schema(name)) {
        Some(s) => emit(&s, a.output.as_deref())?,
        None => {
            return Err(hpcscope_core::Failure::input(format!(
                "no schema called `{name}`: use one of {}",
                names().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ))
            .into());
        }
    }
    Ok(ExitCode::SUCCESS)
}
