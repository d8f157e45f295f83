//! `hpcscope history`: list, filter and export stored runs; list metrics and machines; draw a
//! metric's history as SVG with its change points; print the change points.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use hpcscope_history::changepoint::{ChangesReport, DetectorChoice, detect};
use hpcscope_history::robust::Detection;
use hpcscope_history::store::{SeriesPoint, Store};
use hpcscope_history::view;

use crate::args::{DbArg, FilterArgs};

mod export;

/// List, export and plot the run history.
#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    #[command(subcommand)]
    cmd: HistoryCmd,
}

#[derive(clap::Subcommand, Debug)]
enum HistoryCmd {
    /// List runs (newest last), or export them as CSV or JSON with every metric.
    List(ListArgs),
    /// List the metrics stored, with their unit and number of runs.
    Metrics(FilterArgs),
    /// List the machine fingerprints stored.
    Machines(DbArg),
    /// Draw a metric's history as SVG, with its change points marked.
    Plot(PlotArgs),
    /// Print the change points of a metric's history, with what explains each (segment
    /// means, step against the noise, trend).
    Changes(ChangesArgs),
    /// Export the history for another tool: `--format otava` writes the CSV Apache Otava
    /// reads (and, with --otava-config, its configuration).
    Export(export::ExportArgs),
}

#[derive(clap::Args, Debug)]
struct ListArgs {
    #[command(flatten)]
    filter: FilterArgs,
    /// Output format: a table, or CSV/JSON with every metric of every run.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    format: ListFormat,
    /// Write to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ListFormat {
    Table,
    Csv,
    Json,
}

#[derive(clap::Args, Debug)]
struct SeriesArgs {
    /// The metric (see `hpcscope history metrics`).
    metric: String,
    #[command(flatten)]
    filter: FilterArgs,
    /// Mix runs of different machine fingerprints (by default only the newest run's machine).
    #[arg(long)]
    mix_machines: bool,
    /// The change-point detector.
    #[command(flatten)]
    detector: DetectorChoice,
}

#[derive(clap::Args, Debug)]
struct PlotArgs {
    #[command(flatten)]
    series: SeriesArgs,
    /// SVG file to write.
    #[arg(short, long, value_name = "FILE.svg")]
    output: PathBuf,
}

#[derive(clap::Args, Debug)]
struct ChangesArgs {
    #[command(flatten)]
    series: SeriesArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ChangesFormat::Md)]
    format: ChangesFormat,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ChangesFormat {
    Md,
    Json,
}

/// Runs `hpcscope history`.
pub fn run(args: &HistoryArgs) -> Result<ExitCode> {
    match &args.cmd {
        HistoryCmd::List(a) => list(a),
        HistoryCmd::Metrics(f) => {
            let names = open(&f.db)?.metric_names(&f.filter())?;
            print!("{}", view::metrics_text(&names));
            Ok(ExitCode::SUCCESS)
        }
        HistoryCmd::Machines(db) => {
            print!("{}", view::machines_text(&open(db)?.machines()?));
            Ok(ExitCode::SUCCESS)
        }
        HistoryCmd::Plot(a) => plot(a),
        HistoryCmd::Changes(a) => changes(a),
        HistoryCmd::Export(a) => export::run(a),
    }
}

fn open(db: &DbArg) -> Result<Store> {
    let path = db.path()?;
    Ok(Store::open_read_only(&path)?)
}

fn list(a: &ListArgs) -> Result<ExitCode> {
    match list_inner(a) {
        // `hpcscope history list | head` closes the pipe early: not an error.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            Ok(ExitCode::SUCCESS)
        }
        r => r,
    }
}

fn list_inner(a: &ListArgs) -> Result<ExitCode> {
    let store = open(&a.filter.db)?;
    let runs = store.runs(&a.filter.filter())?;
    // Built in memory, then printed or written atomically (no half-written file).
    let text = match a.format {
        ListFormat::Json => serde_json::to_string_pretty(&runs)? + "\n",
        ListFormat::Csv => view::runs_csv(&runs),
        ListFormat::Table => view::runs_table(&runs, store.path()),
    };
    crate::output::emit(&text, a.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

/// The series of a metric on one machine (the newest run's unless `--mix-machines`), with
/// a note when other machines were left out.
fn load_series(a: &SeriesArgs) -> Result<(Vec<SeriesPoint>, Option<String>)> {
    Ok(open(&a.filter.db)?.machine_series(&a.metric, &a.filter.filter(), a.mix_machines)?)
}

fn plot(a: &PlotArgs) -> Result<ExitCode> {
    let (pts, note) = load_series(&a.series)?;
    let xs: Vec<f64> = pts.iter().map(|p| p.value).collect();
    let m = a.series.detector.method();
    let det = detect(&xs, &m);
    let svg = view::plot_svg(&a.series.metric, &pts, &xs, &det, &m, note.as_deref());
    crate::output::write_atomic(&a.output, &svg)?;
    if let Some(n) = note {
        eprintln!("note: {n}");
    }
    for n in &det.notes {
        eprintln!("note: {n}");
    }
    eprintln!(
        "wrote {} ({} runs, {} change points)",
        a.output.display(),
        xs.len(),
        det.changes.len()
    );
    Ok(ExitCode::SUCCESS)
}

fn changes(a: &ChangesArgs) -> Result<ExitCode> {
    let (pts, note) = load_series(&a.series)?;
    let xs: Vec<f64> = pts.iter().map(|p| p.value).collect();
    let m = a.series.detector.method();
    let det: Detection = detect(&xs, &m);
    let mut notes: Vec<String> = note.into_iter().collect();
    notes.extend(det.notes.iter().cloned());
    match a.format {
        ChangesFormat::Json => {
            let v = ChangesReport::of(&a.series.metric, &pts, det, m, notes);
            // Keys sorted at every level, as this output has always been printed.
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::to_value(&v)?)?
            );
        }
        ChangesFormat::Md => print!(
            "{}",
            view::changes_md(&a.series.metric, &pts, xs.len(), &det, &m, &notes)
        ),
    }
    Ok(ExitCode::SUCCESS)
}
