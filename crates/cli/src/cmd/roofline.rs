//! `hpcscope roofline`: an application on a machine's cache-aware rooflines.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use hpcscope_core::placement::{Placed, place};
use hpcscope_core::roofline::Scope;

use crate::output::emit_with;

/// Which ceilings to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum RoofScope {
    /// One core running alone (single-core peak and bandwidths).
    #[default]
    Core,
    /// The whole node (node peak and bandwidths). A profile with one entry per thread is
    /// placed thread by thread on the per-core shares (eq. 7.1), with the node's sum and
    /// the load imbalance; a profile of one entry (all threads summed) on the whole node.
    Node,
}

/// Arguments of `roofline`.
#[derive(Args, Debug)]
pub struct RooflineArgs {
    /// Machine: built-in id or TOML file.
    #[arg(long, short)]
    pub machine: String,
    /// Profile JSON file (as written by `hpcscope mix`).
    #[arg(long, short)]
    pub profile: PathBuf,
    /// Region of the profile (default: the only one).
    #[arg(long)]
    pub region: Option<String>,
    /// Ceilings of one core, or of the whole node.
    #[arg(long, value_enum, default_value_t)]
    pub scope: RoofScope,
    /// Format and destination of the result.
    #[command(flatten)]
    pub out: crate::args::OutputArgs,
    /// Also draw the roofline chart to this SVG file.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Keep the placement in the run history.
    #[command(flatten)]
    pub record: crate::args::RecordFlags,
}

/// Runs `roofline`.
pub fn run(a: &RooflineArgs) -> Result<ExitCode> {
    let scope = match a.scope {
        RoofScope::Core => Scope::Core,
        RoofScope::Node => Scope::Node,
    };
    let placed = place(&a.machine, &a.profile, a.region.as_deref(), scope)?;
    let text = hpcscope_core::view::roofline::render(a.out.format, &placed)?;
    let svg = match &placed {
        Placed::Whole { analysis, title } => a
            .svg
            .as_deref()
            .map(|p| (p, hpcscope_core::view::roofline_svg(analysis, title))),
        Placed::PerThread { .. } => {
            if a.svg.is_some() {
                eprintln!(
                    "note: --svg is not drawn for a per-thread profile at node scope yet: no chart written"
                );
            }
            None
        }
    };
    let files: Vec<(&std::path::Path, &str)> = svg.iter().map(|(p, s)| (*p, s.as_str())).collect();
    emit_with(&text, a.out.output.as_deref(), &files)?;
    if let Some(line) = a.record.store(
        "roofline",
        &a.profile.display().to_string(),
        &placed.numbers(),
    )? {
        eprintln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
