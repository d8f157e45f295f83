//! `hpcscope bench`: measures what this machine can sustain and writes a machine file.
//!
//! Argument parsing and output only; the measurements live in `hpcscope-bench`.

pub mod mpi;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use hpcscope_bench::run as bench_run;
use hpcscope_bench::{BenchConfig, BenchError, CpuRequest, MachineNames, Selection};

/// Subcommands of `bench`.
#[derive(Subcommand, Debug)]
pub enum BenchCmd {
    /// MPI ping-pong, sendrecv, exchange and allreduce (IMB style) under a launcher; the
    /// Hockney fit becomes the machine file's [[network]] link.
    Mpi(mpi::MpiArgs),
}

/// Arguments of `bench`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    /// `bench mpi`; without a subcommand, `bench` measures memory and compute.
    #[command(subcommand)]
    pub sub: Option<BenchCmd>,
    /// A few seconds instead of a few minutes: fewer sizes, widths and repetitions.
    #[arg(long)]
    pub quick: bool,
    /// Write the output to this file (atomically) instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format: the machine file, or the full report.
    #[arg(long, value_enum, default_value_t)]
    pub format: hpcscope_bench::report::Form,
    /// Also draw the bandwidth-vs-working-set sweep to this SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Kernels to run, comma-separated: load, store, copy, triad, triad4, daxpy, add, mul,
    /// fma, div, sqrt (divider throughput), dgemm, latency, scaling, all (default: all). The
    /// triad sweep and the FMA peak always run: the machine file needs them.
    #[arg(long, value_name = "LIST")]
    pub kernels: Option<String>,
    /// Working-set sizes (all arrays together) replacing the default sweep, e.g.
    /// `32k,1m,64m,1g` (k/m/g and KiB/MiB/GiB are powers of 1024, kB/MB/GB of 1000).
    #[arg(long, value_name = "LIST")]
    pub sizes: Option<String>,
    /// Use the first N CPUs (one pinned thread each) for the scaling runs.
    #[arg(long, value_name = "N", conflicts_with = "cpus")]
    pub threads: Option<usize>,
    /// Use these CPUs, e.g. `0-3,8`; single-core runs use the first.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Timed repetitions per measurement (default 3 with --quick, 7 otherwise).
    #[arg(long, value_name = "N")]
    pub repeat: Option<usize>,
    /// Which repetition the machine file keeps: the median, or the best (STREAM's
    /// convention; nearer to what the machine sustains when other programs share it).
    #[arg(long, value_enum, default_value_t)]
    pub statistic: hpcscope_bench::stats::Statistic,
    /// Time the single-core kernels by the thread's CPU time instead of the wall clock
    /// (the time other programs hold the core does not count; for a shared machine).
    #[arg(long)]
    pub cpu_clock: bool,
    /// Vector widths to measure, comma-separated: scalar, 128, 256, 512 (default: all the
    /// CPU has).
    #[arg(long, value_name = "LIST")]
    pub widths: Option<String>,
    /// Machine id written to the file (default: `bench-<host name>`).
    #[arg(long)]
    pub id: Option<String>,
    /// Human-readable machine name (default: CPU model and host name).
    #[arg(long)]
    pub name: Option<String>,
    /// Precisions of the peak kernels.
    #[arg(long, value_enum, default_value_t)]
    pub precision: hpcscope_bench::run::Precisions,
    /// Keep the measured peaks and bandwidths in the run history.
    #[command(flatten)]
    pub record: crate::args::RecordFlags,
}

/// Turns the arguments into a benchmark configuration.
pub fn config(args: &BenchArgs) -> Result<BenchConfig, BenchError> {
    let selection = match &args.kernels {
        Some(list) => Selection::parse(list)?,
        None => Selection::all(),
    };
    let sizes = args
        .sizes
        .as_deref()
        .map(bench_run::parse_sizes)
        .transpose()?;
    let cpus = CpuRequest::of(args.threads, args.cpus.as_deref())?;
    let widths = args
        .widths
        .as_deref()
        .map(bench_run::parse_widths)
        .transpose()?;
    Ok(BenchConfig {
        quick: args.quick,
        selection,
        sizes,
        cpus,
        repeat: args.repeat,
        statistic: args.statistic,
        cpu_clock: args.cpu_clock,
        widths,
        precisions: args.precision.list(),
        names: MachineNames {
            id: args.id.clone(),
            name: args.name.clone(),
        },
        ..BenchConfig::default()
    })
}

/// Runs `bench`.
pub fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    if let Some(BenchCmd::Mpi(m)) = &args.sub {
        return mpi::run(m);
    }
    run_inner(args)?;
    Ok(ExitCode::SUCCESS)
}

fn run_inner(args: &BenchArgs) -> Result<(), BenchError> {
    let cfg = config(args)?;
    // A measurement takes minutes: find out now whether its result can be written.
    let outs: Vec<&std::path::Path> = args
        .svg
        .iter()
        .chain(args.output.iter())
        .map(|p| p.as_path())
        .collect();
    hpcscope_bench::report::preflight(&outs)?;
    let report = hpcscope_bench::run(&cfg)?;
    let text = report.text(args.format)?;
    hpcscope_bench::report::write_outputs(
        args.svg
            .as_deref()
            .map(|p| (p, hpcscope_bench::report::sweep_svg(&report))),
        args.output.as_deref(),
        &text,
    )?;
    eprint!("{}", hpcscope_bench::report::summary(&report));
    let numbers = hpcscope_bench::report::record_numbers(&report);
    if let Some(line) = args
        .record
        .store("bench", &report.machine.id, &numbers)
        .map_err(|e| BenchError::Internal(format!("{e:#}")))?
    {
        eprintln!("{line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The arguments turn into a configuration; bad ones are input errors with a fix.
    use clap::Parser;
    use hpcscope_core::Classify;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: super::BenchArgs,
    }

    fn parse(args: &[&str]) -> super::BenchArgs {
        let mut v = vec!["bench"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v).unwrap().args
    }

    #[test]
    fn flags_become_a_configuration() {
        let a = parse(&[
            "--quick",
            "--kernels",
            "triad,fma",
            "--sizes",
            "32k,1MB,1g",
            "--cpus",
            "0",
            "--repeat",
            "5",
            "--widths",
            "scalar,512",
            "--precision",
            "f64",
            "--id",
            "x",
        ]);
        let c = super::config(&a).unwrap();
        assert!(c.quick);
        assert_eq!(c.sizes, Some(vec![32768, 1_000_000, 1 << 30]));
        assert_eq!(c.cpus, hpcscope_bench::CpuRequest::List(vec![0]));
        assert_eq!(c.repeat, Some(5));
        assert_eq!(c.precisions, vec![hpcscope_core::Precision::F64]);
        assert_eq!(c.names.id.as_deref(), Some("x"));
    }

    #[test]
    fn bad_flags_are_input_errors() {
        for args in [
            &["--kernels", "triad,nope"][..],
            &["--sizes", "12q"],
            &["--cpus", "3-1"],
            &["--widths", "1024"],
        ] {
            let e = super::config(&parse(args)).unwrap_err();
            assert_eq!(e.kind().exit_code(), 2, "{args:?}: {e}");
            assert!(e.to_string().contains("fix:"), "{e}");
        }
        // --threads and --cpus exclude each other.
        assert!(Cli::try_parse_from(["bench", "--threads", "2", "--cpus", "0"]).is_err());
    }
}
