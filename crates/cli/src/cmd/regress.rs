//! `hpcscope regress check`: the CI gate. Compares the newest runs to the baseline before
//! them (same machine fingerprint unless `--mix-machines`), prints Markdown, writes JSON and
//! JUnit XML, and exits 1 on a regression, 0 otherwise.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use hpcscope_history::changepoint::Method;
use hpcscope_history::check::{CheckOptions, check, directions};
use hpcscope_history::gate::GateOptions;
use hpcscope_history::store::Store;

use crate::args::FilterArgs;

/// Non-regression testing over the run history.
#[derive(clap::Args, Debug)]
pub struct RegressArgs {
    #[command(subcommand)]
    cmd: RegressCmd,
}

#[derive(clap::Subcommand, Debug)]
enum RegressCmd {
    /// Compare the newest runs to the baseline; exit 1 on a regression.
    Check(CheckArgs),
}

#[derive(clap::Args, Debug)]
struct CheckArgs {
    #[command(flatten)]
    filter: FilterArgs,
    /// Metric to gate on (repeatable; default `time_s`, or every metric when runs have no
    /// `time_s`).
    #[arg(long = "metric", value_name = "NAME")]
    metrics: Vec<String>,
    /// The newest N runs are the candidate.
    #[arg(long, default_value_t = 1, value_name = "N")]
    candidates: usize,
    /// At most N runs before the candidates form the baseline.
    #[arg(long, default_value_t = 30, value_name = "N")]
    baseline: usize,
    /// Practical floor: a regression must slow the median by more than PCT percent.
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    min_change: f64,
    /// Significance level of the one-sided Mann-Whitney test.
    #[arg(long, default_value_t = 0.01, value_name = "P")]
    alpha: f64,
    /// Modified z-score threshold.
    #[arg(long = "z", default_value_t = 3.5, value_name = "Z")]
    z_threshold: f64,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Compare runs across machine fingerprints (by default a machine change is reported and
    /// runs on other machines are left out).
    #[arg(long)]
    mix_machines: bool,
    /// Treat METRIC as higher-is-better (repeatable); default guessed from name and unit.
    #[arg(long, value_name = "METRIC")]
    higher_is_better: Vec<String>,
    /// Treat METRIC as lower-is-better (repeatable).
    #[arg(long, value_name = "METRIC")]
    lower_is_better: Vec<String>,
    /// Skip change-point detection over the history.
    #[arg(long)]
    no_change_points: bool,
    /// False-discovery rate of the change points across the metrics checked
    /// (Benjamini-Hochberg); 1 turns the control off.
    #[arg(long, default_value_t = 0.05, value_name = "Q")]
    fdr: f64,
    /// Write the full report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write a JUnit XML report to FILE (one test case per metric).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write the Markdown report to FILE as well as to standard output.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// GitHub Actions: print workflow commands (an annotation per regressed, improved or
    /// undecided metric and per worsening change point) and append the Markdown report to
    /// the step summary ($GITHUB_STEP_SUMMARY).
    #[arg(long)]
    github: bool,
}

/// Runs `hpcscope regress`.
pub fn run(args: &RegressArgs) -> Result<ExitCode> {
    match &args.cmd {
        RegressCmd::Check(a) => run_check(a),
    }
}

fn run_check(a: &CheckArgs) -> Result<ExitCode> {
    if !(a.fdr > 0.0 && a.fdr <= 1.0) {
        anyhow::bail!(
            "--fdr {}: the false-discovery rate must be in (0, 1] (0.05 by default; 1 turns the control off)",
            a.fdr
        );
    }
    let path = a.filter.db.path()?;
    let store = Store::open_read_only(&path)?;
    let opts = CheckOptions {
        metrics: a.metrics.clone(),
        candidates: a.candidates,
        baseline: a.baseline,
        filter: a.filter.filter(),
        mix_machines: a.mix_machines,
        gate: GateOptions {
            alpha: a.alpha,
            min_effect: a.min_change / 100.0,
            z_threshold: a.z_threshold,
            seed: a.seed,
            ..GateOptions::default()
        },
        directions: directions(&a.higher_is_better, &a.lower_is_better),
        change_points: (!a.no_change_points).then(Method::default),
        fdr: a.fdr,
    };
    let report = check(&store, &opts)?;
    let md = report.to_markdown();
    print!("{md}");
    let md_for_summary = md.clone();
    let write = |p: &PathBuf, s: String, flag: &str| {
        crate::output::write_atomic(p, &s).with_context(|| format!("writing {flag}"))
    };
    if let Some(p) = &a.markdown {
        write(p, md, "--markdown")?;
    }
    if let Some(p) = &a.json {
        write(p, serde_json::to_string_pretty(&report)? + "\n", "--json")?;
    }
    if let Some(p) = &a.junit {
        write(p, report.to_junit_xml(), "--junit")?;
    }
    if a.github {
        print!("{}", hpcscope_history::github::annotations(&report));
        if !hpcscope_history::github::append_step_summary(&md_for_summary)? {
            eprintln!(
                "--github: GITHUB_STEP_SUMMARY is not set (not in a GitHub Actions step): no step summary written"
            );
        }
    }
    Ok(if report.regression {
        crate::exit::finding()
    } else {
        ExitCode::SUCCESS
    })
}
