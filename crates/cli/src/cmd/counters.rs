//! `hpcscope counters`: portable hardware-counter metrics (seed 001): collect, import,
//! compare, validate, and list metrics and CPU recipes. The work is in `hpcscope-counters`;
//! this file parses arguments and prints.
//!
//! Exit codes: 0 success, 2 bad input, 3 an environment limit (no PMU where one is
//! required, perf_event_paranoid too high).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use hpcscope_counters::catalogue::{Catalogue, Variant};
use hpcscope_counters::compute::{Precision, Report};
use hpcscope_counters::import::{self, Format as InFormat};
use hpcscope_counters::output;
use hpcscope_counters::{MeasureOptions, Measurement, RecipeChoice, Regions};
use hpcscope_counters::{profile, suite, validate};

use crate::output::{Format, emit};

/// Arguments of `counters`.
#[derive(Args, Debug)]
pub struct CountersArgs {
    /// What to do.
    #[command(subcommand)]
    pub cmd: CountersCmd,
}

/// `counters` subcommands.
#[derive(Subcommand, Debug)]
pub enum CountersCmd {
    /// Run a command and compute the metrics from its counters (whole run, or per region
    /// with --markers).
    Run(RunArgs),
    /// Compute the metrics from counter files users already have (perf stat -x, CSV,
    /// PAPI high-level or Caliper JSON, likwid-perfctr CSV); several files are merged.
    Import(ImportArgs),
    /// Compare runs side by side: two runs or machines (columns A, B and B/A), or a ladder
    /// of code versions (one column each, ratios to the first or the previous on request).
    Compare(CompareArgs),
    /// Check the counters against micro-benchmarks with known work (seed 001, section 3.2):
    /// FP crunch per operation and width, libm calls, STREAM at a sweep of sizes, a cache
    /// conflict kernel and a matmul ladder; counted by perf, by the emulator (`--counted-by
    /// mix`) or read from a file.
    Validate(ValidateArgs),
    /// Run micro-benchmark kernels of the validation suite (what `validate --counted-by mix`
    /// runs under the emulator).
    #[command(hide = true)]
    Kernel(KernelArgs),
    /// List the portable metrics.
    Metrics(ListArgs),
    /// List the CPU recipes, or show one; says which recipe this CPU gets and whether its
    /// PMU is available.
    Recipes(RecipesArgs),
}

/// Which recipe and formulas.
#[derive(Args, Debug, Clone, Default)]
pub struct RecipeOpts {
    /// Recipe id or alias (default: the one for this CPU; see `counters recipes`).
    #[arg(long)]
    pub recipe: Option<String>,
    /// A recipe file of your own (TOML, the format of data/metrics/recipes/).
    #[arg(long, value_name = "FILE")]
    pub recipe_file: Option<PathBuf>,
    /// Formula variant where the seed contradicts itself.
    #[arg(long, value_enum, default_value_t)]
    pub variant: Variant,
    /// Precision of the floating-point work.
    #[arg(long, value_enum, default_value_t)]
    pub precision: Precision,
}

/// Where and how to print.
#[derive(Args, Debug, Clone)]
pub struct OutOpts {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Write to this file instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Only this region.
    #[arg(long)]
    pub region: Option<String>,
    /// Also show each thread.
    #[arg(long)]
    pub per_thread: bool,
    /// Also write a Profile (JSON) for `hpcscope roofline` and `project`.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// With --profile: vector width of the binary, bits.
    #[arg(long, default_value_t = 512)]
    pub vector_bits: u32,
    /// With --profile: id of the machine the counters were measured on.
    #[arg(long)]
    pub machine: Option<String>,
}

/// Arguments of `counters run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Recipe.
    #[command(flatten)]
    pub recipe: RecipeOpts,
    /// Output.
    #[command(flatten)]
    pub out: OutOpts,
    /// Count per region through the marker library (the program calls
    /// hpcscope_region_start/stop); without it the whole command is one region.
    #[arg(long)]
    pub markers: bool,
    /// With --markers: events to count (perf names, rHEX, TYPE:CONFIG), comma-separated;
    /// default the software events task-clock,page-faults,context-switches,cpu-migrations.
    #[arg(long, value_delimiter = ',')]
    pub events: Vec<String>,
    /// Measure these functions of the executable as regions, without recompiling (uprobes
    /// on entry and return; main thread; software events). Repeatable.
    #[arg(long = "function", value_name = "NAME", conflicts_with = "markers")]
    pub functions: Vec<String>,
    /// Open all event groups in one run (the kernel multiplexes; counts are scaled and
    /// flagged) instead of one run per group.
    #[arg(long)]
    pub multiplex: bool,
    /// Hardware events per group.
    #[arg(long, default_value_t = 4)]
    pub group_size: usize,
    /// Exit 3 when hardware counters are not available (default: report them NA, exit 0).
    #[arg(long)]
    pub require_pmu: bool,
    /// Save the raw counters (JSON) to reuse with `import --from raw` or `compare`.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    #[command(flatten)]
    pub record: crate::args::RecordFlags,
    /// In a parallel job: one result per rank in a run directory.
    #[command(flatten)]
    pub rank: crate::args::RankFlags,
    /// The command and its arguments (after --).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// Arguments of `counters import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Counter files; several are merged (e.g. one Caliper file per counter).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Input format (default: guessed from the content).
    #[arg(long, value_enum, visible_alias = "input-format")]
    pub from: Option<InFormat>,
    /// Column label (default: the first file's name).
    #[arg(long)]
    pub label: Option<String>,
    /// Recipe.
    #[command(flatten)]
    pub recipe: RecipeOpts,
    /// Output.
    #[command(flatten)]
    pub out: OutOpts,
}

/// Arguments of `counters compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The runs, in order (any importable counter file, or `run --save` output): two runs,
    /// or a ladder of code versions (one column each, as the seed's version tables).
    #[arg(required = true, num_args = 2.., value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// Column headers, comma-separated, one per run (default: the file names).
    #[arg(long, value_delimiter = ',')]
    pub labels: Vec<String>,
    /// Ratio columns: auto (B / A for two runs), first, previous or none.
    #[arg(long, value_enum, default_value_t)]
    pub ratio: output::Ratios,
    /// Input format of every file (default: guessed).
    #[arg(long, value_enum)]
    pub from: Option<InFormat>,
    /// Recipe of the first run (default: --recipe, or this CPU's).
    #[arg(long)]
    pub recipe_a: Option<String>,
    /// Recipe of the second and later runs, for two machines (default: --recipe, or this
    /// CPU's).
    #[arg(long)]
    pub recipe_b: Option<String>,
    /// Recipe.
    #[command(flatten)]
    pub recipe: RecipeOpts,
    /// Output.
    #[command(flatten)]
    pub out: OutOpts,
}

/// Arguments of `counters validate`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Recipe.
    #[command(flatten)]
    pub recipe: RecipeOpts,
    /// Triad elements (default: 4 Mi, 96 MiB of arrays: from memory).
    #[arg(long, default_value_t = 4 << 20)]
    pub n: u64,
    /// Repetitions.
    #[arg(long, default_value_t = 10)]
    pub reps: u64,
    /// Check the recipe's formulas with the counters a vectorised triad produces on its CPU
    /// (no PMU needed) instead of running the suite.
    #[arg(long)]
    pub synthetic: bool,
    /// Run only the triad (`--n`, `--reps`) instead of the suite.
    #[arg(long, conflicts_with_all = ["counted_by", "counted"])]
    pub triad: bool,
    /// Who counts the suite's kernels: perf (this CPU's counters, through the recipe) or mix
    /// (the emulator's exact FLOPs, FP instructions and bytes of the same kernels).
    #[arg(long, value_enum, default_value_t = CountedBy::Perf)]
    pub counted_by: CountedBy,
    /// Compare the counted values of this file instead of running the kernels (JSON:
    /// `{"source": ..., "kernels": {"fp.add.256:1000": {"flops": ...}}}`).
    #[arg(long, value_name = "FILE", conflicts_with = "counted_by")]
    pub counted: Option<PathBuf>,
    /// Kernel groups to run: fp, libm, stream, conflict, matmul (default: all).
    #[arg(long, value_delimiter = ',')]
    pub kernels: Vec<String>,
    /// Small sizes: natively the emulator's sizes (well under a second); under the
    /// emulator the smallest that still resolve 0.5 % (one STREAM size, a 32 x 32 matmul).
    #[arg(long)]
    pub quick: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Who counts the validation kernels.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountedBy {
    /// This CPU's counters (perf_event_open) through the recipe.
    Perf,
    /// hpcscope mix: QEMU with hpcscope's plugin, counting the kernels' own instructions.
    Mix,
}

/// Arguments of `counters kernel`.
#[derive(Args, Debug)]
pub struct KernelArgs {
    /// Kernels (`fp.fma.256:1000`, `libm.cos:1000`, `stream.triad:N:REPS`,
    /// `conflict:OFFSET:REPS`, `matmul.blocked16:64`).
    #[arg(required = true)]
    pub kernels: Vec<String>,
}

/// Arguments of `counters metrics`.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Arguments of `counters recipes`.
#[derive(Args, Debug)]
pub struct RecipesArgs {
    /// Show this recipe: events, formulas, what it cannot measure.
    pub id: Option<String>,
    /// A recipe file to check and show.
    #[arg(long, value_name = "FILE")]
    pub recipe_file: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `counters`.
pub fn run(args: &CountersArgs) -> Result<ExitCode> {
    match &args.cmd {
        CountersCmd::Run(a) => cmd_run(a),
        CountersCmd::Import(a) => cmd_import(a),
        CountersCmd::Compare(a) => cmd_compare(a),
        CountersCmd::Validate(a) => cmd_validate(a),
        CountersCmd::Kernel(a) => cmd_kernel(a),
        CountersCmd::Metrics(a) => cmd_metrics(a),
        CountersCmd::Recipes(a) => cmd_recipes(a),
    }
}

impl RecipeOpts {
    /// The library's recipe choice.
    fn choice(&self) -> RecipeChoice {
        RecipeChoice {
            recipe: self.recipe.clone(),
            recipe_file: self.recipe_file.clone(),
            variant: self.variant,
            precision: self.precision,
        }
    }
}

fn report(cat: &Catalogue, reports: &[Report], o: &OutOpts, app: &str) -> Result<()> {
    report_with(cat, reports, o, app, output::Ratios::Auto)
}

fn report_with(
    cat: &Catalogue,
    reports: &[Report],
    o: &OutOpts,
    app: &str,
    ratios: output::Ratios,
) -> Result<()> {
    output::check_region(reports, o.region.as_deref())?;
    let text = output::render_with(
        reports,
        &cat.metrics,
        o.region.as_deref(),
        o.per_thread,
        o.format,
        ratios,
    );
    emit(&text, o.output.as_deref())?;
    if let Some(p) = &o.profile {
        let info = profile::ProfileInfo {
            application: app.to_string(),
            isa: std::env::consts::ARCH.to_string(),
            vector_bits: o.vector_bits,
            machine: o.machine.clone(),
        };
        let prof = profile::to_profile(&reports[0], &info)?;
        emit(&prof.to_json_string(), Some(p))?;
        eprintln!("profile written to {}", p.display());
    }
    Ok(())
}

/// Counts the command's events with the chosen recipe (see
/// [`hpcscope_counters::measure_with`]); `multiplex` forces one run of the command.
fn measure(a: &RunArgs, multiplex: bool) -> Result<Measurement> {
    let regions = Regions::of(&a.functions, a.markers, &a.events);
    let m = hpcscope_counters::measure_with(
        &a.command,
        &MeasureOptions {
            recipe: a.recipe.choice(),
            regions,
            multiplex: a.multiplex || multiplex,
            group_size: a.group_size,
            per_thread: a.out.per_thread,
        },
    )?;
    for n in &m.notes {
        eprintln!("{n}");
    }
    Ok(m)
}

/// `counters run --run-dir`: this rank counts its own command, in one run (event groups
/// multiplexed: an MPI rank cannot start its program twice), and writes the metrics to the
/// run directory.
fn run_rank(a: &RunArgs) -> Result<ExitCode> {
    if a.markers && a.events.is_empty() {
        bail!(
            "counters run --run-dir --markers: give the events with --events, so that each rank runs its program once (one run per event group is impossible in an MPI job)"
        );
    }
    if a.out.output.is_some() || a.out.profile.is_some() || a.save.is_some() || a.record.record {
        bail!(
            "--run-dir writes one result per rank into the run directory; leave out -o, --profile, --save and --record (merge the job with `hpcscope merge DIR`)"
        );
    }
    let Some(session) = a.rank.begin("counters", &a.command)? else {
        unreachable!("run_rank is called with --run-dir");
    };
    let started = std::time::Instant::now();
    let outcome = hpcscope_job::rank::counted(measure(a, true), &a.command, started)?;
    Ok(ExitCode::from(session.finish(outcome)?))
}

fn cmd_run(a: &RunArgs) -> Result<ExitCode> {
    if a.rank.run_dir.is_some() {
        return run_rank(a);
    }
    let Measurement {
        catalogue: cat,
        raw,
        report: rep,
        label: app,
        ..
    } = measure(a, false)?;
    if let Some(p) = &a.save {
        emit(&serde_json::to_string_pretty(&raw)?, Some(p))?;
    }
    report(&cat, std::slice::from_ref(&rep), &a.out, &app)?;
    let command = a.command.join(" ");
    if let Some(line) = a
        .record
        .store("counters", &command, &rep.record_numbers())?
    {
        eprintln!("{line}");
    }
    if a.require_pmu
        && let Some(why) = &rep.hardware_unavailable
    {
        return Err(hpcscope_core::Failure::environment(why.clone()).into());
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_import(a: &ImportArgs) -> Result<ExitCode> {
    let cat = a.recipe.choice().catalogue()?;
    let label = a
        .label
        .clone()
        .unwrap_or_else(|| import::label_of(&a.files[0]));
    let raw = import::import_files(&a.files, a.from, &label)?;
    let origin = a
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let rep = a
        .recipe
        .choice()
        .compute_recorded(&cat, None, &raw, &origin, a.out.per_thread)?;
    report(&cat, std::slice::from_ref(&rep), &a.out, &label)?;
    Ok(ExitCode::SUCCESS)
}

fn cmd_compare(a: &CompareArgs) -> Result<ExitCode> {
    let (cat, reps) = a.recipe.choice().compare_recorded(
        &a.runs,
        &a.labels,
        a.from,
        [a.recipe_a.as_deref(), a.recipe_b.as_deref()],
    )?;
    report_with(&cat, &reps, &a.out, "compare", a.ratio)?;
    Ok(ExitCode::SUCCESS)
}

fn cmd_kernel(a: &KernelArgs) -> Result<ExitCode> {
    let ks = a
        .kernels
        .iter()
        .map(|k| suite::Kernel::parse(k))
        .collect::<Result<Vec<_>, _>>()?;
    for k in &ks {
        if !k.runs_here() {
            return Err(hpcscope_core::Failure::environment(format!(
                "{k}: this CPU lacks the instructions the kernel uses"
            ))
            .into());
        }
    }
    for k in &ks {
        let mut b = suite::Buffers::new(k);
        println!("{k}: checksum {}", b.run(k));
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_validate(a: &ValidateArgs) -> Result<ExitCode> {
    if !a.synthetic && !a.triad {
        let rep = if let Some(f) = &a.counted {
            let text = hpcscope_core::load::read(
                f,
                "the counted file",
                "give the JSON of counts this command describes (--help)",
            )?;
            validate::validate_file(&text, &f.display().to_string())?
        } else if a.counted_by == CountedBy::Mix {
            validate::check_groups(&a.kernels)?;
            let exe =
                std::env::current_exe().context("cannot find the hpcscope binary to emulate")?;
            hpcscope_analysis::kernel_suite::suite_under_mix(&exe, a.quick, &a.kernels)?
        } else {
            // The arguments first: a typo in --kernels is refused before any recipe is needed.
            validate::check_groups(&a.kernels)?;
            validate::suite_on_perf(&a.recipe.choice(), a.quick, &a.kernels)?
        };
        match a.format {
            Format::Json => println!("{}", serde_json::to_string_pretty(&rep)?),
            f => print!("{}", rep.text(f == Format::Csv)),
        }
        rep.verdict()?;
        return Ok(ExitCode::SUCCESS);
    }
    let v = validate::check_triad(&a.recipe.choice(), a.n, a.reps, a.synthetic)?;
    if let Some(n) = &v.note {
        eprintln!("note: {n}");
    }
    print!("{}", v.render(a.n, a.reps, a.format));
    v.verdict()?;
    Ok(ExitCode::SUCCESS)
}

fn cmd_metrics(a: &ListArgs) -> Result<ExitCode> {
    let cat = Catalogue::builtin();
    match a.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&cat.metrics)?),
        _ => print!("{}", output::metrics_text(&cat.metrics)),
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_recipes(a: &RecipesArgs) -> Result<ExitCode> {
    let mut cat = Catalogue::builtin();
    if let Some(f) = &a.recipe_file {
        cat.add_recipe_file(f)?;
    }
    // A recipe file comes first in the catalogue: without an id, it is the one shown.
    let first = (a.recipe_file.as_ref()).map(|_| cat.recipes[0].1.recipe.id.clone());
    let id = a.id.as_deref().or(first.as_deref());
    print!("{}", output::recipes_listing(&cat, id, a.format)?);
    Ok(ExitCode::SUCCESS)
}
