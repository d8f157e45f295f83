//! `hpcscope bench mpi`: IMB-style MPI benchmarks under a launcher, the Hockney fit, and the
//! machine file's `[[network]]` link.
//!
//! Arguments, output formats, the chart and the machine-file update; the measurement lives
//! in `hpcscope_bench::mpi`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use hpcscope_bench::BenchError;
use hpcscope_bench::mpi::hockney::Weights;
use hpcscope_bench::mpi::machine_file::{read_machine, upsert_network};
use hpcscope_bench::mpi::render::{Form, chart_svg, link_line, link_written, rendered};
use hpcscope_bench::mpi::{self, MpiConfig};
use hpcscope_core::machine::Placement;

/// Where the two ranks should run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PairsArg {
    /// Both on one node (shared memory).
    Intra,
    /// On two nodes (the interconnect).
    Inter,
}

/// Arguments of `bench mpi`.
#[derive(Args, Debug)]
pub struct MpiArgs {
    /// The command that starts the ranks, quoted as one argument: "srun -n 2" under an
    /// allocation, "mpirun -np 2 --host a,b". Default: `mpirun -np 2`, plus
    /// `--allow-run-as-root` as root and `--oversubscribe` with fewer CPUs than ranks (Open
    /// MPI only).
    #[arg(long, value_name = "CMD")]
    pub launcher: Option<String>,
    /// Ranks of the default launcher (PingPong uses ranks 0 and 1; the others all).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub np: u32,
    /// Placement of the two ranks: `intra` (one node) or `inter` (two nodes). Adds
    /// `--map-by core|node` (Open MPI), `-ppn 2|1` (MPICH), `--nodes=1` or
    /// `--ntasks-per-node=1` (srun). The placement recorded is the one measured.
    #[arg(long, value_enum)]
    pub pairs: Option<PairsArg>,
    /// Message sizes, comma-separated: 0,1,1k,64k,4m (k/m = KiB/MiB). Default: 0 and the
    /// powers of two from 1 B to 4 MiB.
    #[arg(long, value_name = "LIST")]
    pub sizes: Option<String>,
    /// Benchmarks, comma-separated: pingpong, sendrecv, exchange, allreduce (default: all).
    #[arg(long, value_name = "LIST")]
    pub benchmarks: Option<String>,
    /// Fewer repetitions per size (at most 100, 4 MiB of volume): a few seconds.
    #[arg(long)]
    pub quick: bool,
    /// Timed runs per size; the one with the smallest t_avg is kept (IMB runs one).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub repeat: u32,
    /// Smallest message size in the Hockney fit.
    #[arg(long, value_name = "SIZE")]
    pub fit_min: Option<String>,
    /// Largest message size in the Hockney fit.
    #[arg(long, value_name = "SIZE")]
    pub fit_max: Option<String>,
    /// Least-squares weights of the Hockney fit.
    #[arg(long, value_enum, default_value = "relative")]
    pub fit_weights: Weights,
    /// Name of the network link (default: mpi-intra-node or mpi-inter-node, as measured).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The MPI C compiler wrapper (default: $HPCSCOPE_MPICC, else mpicc).
    #[arg(long, value_name = "CMD")]
    pub mpicc: Option<String>,
    /// Stop the launcher after this many seconds (default 300, 120 with --quick).
    #[arg(long, value_name = "S")]
    pub timeout: Option<u64>,
    /// Output format (default: from the -o extension, else table).
    #[arg(long, value_enum)]
    pub format: Option<Form>,
    /// Write the output to this file (atomically) instead of standard output. With `.toml`
    /// (or --format toml) it is the `[[network]]` link alone: a machine file also needs
    /// peaks and levels (`hpcscope bench -o FILE`), so add the link with --update.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Add the network link to this machine file (replacing a link of the same name),
    /// keeping everything else in it, comments included.
    #[arg(long, value_name = "MACHINE.toml")]
    pub update: Option<PathBuf>,
    /// Draw time and bandwidth against message size, with the fits, to this SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// Turns the arguments into a configuration.
pub fn config(a: &MpiArgs) -> Result<MpiConfig, BenchError> {
    let mut cfg = MpiConfig {
        launcher: a.launcher.clone(),
        ranks: a.np,
        pairs: a.pairs.map(|p| match p {
            PairsArg::Intra => Placement::IntraNode,
            PairsArg::Inter => Placement::InterNode,
        }),
        quick: a.quick,
        repeat: a.repeat,
        mpicc: a
            .mpicc
            .clone()
            .or_else(|| {
                std::env::var("HPCSCOPE_MPICC")
                    .ok()
                    .filter(|s| !s.is_empty())
            })
            .unwrap_or_else(|| "mpicc".into()),
        cache_dir: hpcscope_host::dirs::cache_dir(),
        timeout: Duration::from_secs(a.timeout.unwrap_or(if a.quick { 120 } else { 300 })),
        fit_range: (
            mpi::parse_one_size("--fit-min", a.fit_min.as_deref(), 0)?,
            mpi::parse_one_size("--fit-max", a.fit_max.as_deref(), u64::MAX)?,
        ),
        weights: a.fit_weights,
        link_name: a.name.clone(),
        ..MpiConfig::default()
    };
    if a.launcher.is_some() && a.np != 2 {
        return Err(BenchError::bad_input(
            "--np",
            "applies to the default launcher only",
            "put the rank count in --launcher (\"srun -n 4\")",
        ));
    }
    if a.timeout == Some(0) {
        return Err(BenchError::bad_input(
            "--timeout",
            "is 0",
            "give seconds, e.g. 120",
        ));
    }
    if let Some(s) = &a.sizes {
        let mut v = mpi::parse_sizes("--sizes", s)?;
        v.sort_unstable();
        v.dedup();
        cfg.sizes = v;
    }
    if let Some(list) = &a.benchmarks {
        cfg.benchmarks = mpi::parse_benchmarks(list)?;
    }
    hpcscope_bench::mpi::check(&cfg)?;
    Ok(cfg)
}

/// The output format: `--format`, else the `-o` extension, else a table.
pub fn format_of(a: &MpiArgs) -> Form {
    a.format
        .unwrap_or_else(|| Form::of_path(a.output.as_deref()))
}

/// Runs `bench mpi`.
pub fn run(a: &MpiArgs) -> anyhow::Result<ExitCode> {
    run_inner(a)?;
    Ok(ExitCode::SUCCESS)
}

fn run_inner(a: &MpiArgs) -> Result<(), BenchError> {
    let cfg = config(a)?;
    let format = format_of(a);
    if a.update.is_some() || format == Form::Toml {
        mpi::check_link_wanted(&cfg)?;
    }
    // Check the machine file before measuring: a bad file fails in a second, not after the run.
    let update = (a.update.as_ref())
        .map(|p| read_machine(p).map(|m| (p.clone(), m)))
        .transpose()?;
    let report = hpcscope_bench::mpi::run(&cfg, &mut |cmd| eprintln!("running: {cmd}"))?;
    for f in &report.launcher_flags_added {
        eprintln!("  added {f}");
    }
    let text = rendered(&report, format)?;
    if let Some((path, (src, _))) = &update {
        let l = report.link()?;
        let new = upsert_network(src, &l, &path.display().to_string())?;
        // In place, on purpose: the one output that may be an input.
        hpcscope_core::fs::write_atomic(path, new.as_bytes()).map_err(|e| BenchError::Write {
            path: path.display().to_string(),
            source: std::io::Error::other(format!("{e:#}")),
        })?;
        eprintln!("{}", link_written(path, &l));
    }
    let chart = a
        .svg
        .as_ref()
        .map(|svg| (svg.as_path(), chart_svg(&report)));
    let files: Vec<(&Path, &str)> = chart.iter().map(|(p, t)| (*p, t.as_str())).collect();
    crate::output::emit_with(&text, a.output.as_deref(), &files).map_err(|e| {
        if crate::output::is_same_file(&e) {
            // An output naming an input or another output: bad usage, not the environment.
            return BenchError::bad_input(
                "-o/--svg",
                format!("{e:#}"),
                "give each output its own file, none of them the --update machine file",
            );
        }
        BenchError::Write {
            path: a
                .output
                .as_deref()
                .map_or("standard output".into(), |p| p.display().to_string()),
            source: std::io::Error::other(format!("{e:#}")),
        }
    })?;
    // The text and Markdown reports carry the notes; elsewhere they go to stderr.
    let notes_shown = matches!(format, Form::Table | Form::Md) && a.output.is_none();
    if !notes_shown {
        for n in &report.notes {
            eprintln!("note: {n}");
        }
    }
    if let Some(l) = &report.network {
        eprintln!("{}", link_line(l, &report.mpi_library));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use hpcscope_bench::mpi::imb::Benchmark;
    use hpcscope_core::Classify;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: MpiArgs,
    }

    fn parse(args: &[&str]) -> MpiArgs {
        let mut v = vec!["mpi"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v).unwrap().args
    }

    #[test]
    fn flags_become_a_configuration() {
        let c = config(&parse(&[
            "--sizes",
            "4m,0,1k,1k",
            "--benchmarks",
            "sendrecv,PingPong",
            "--fit-min",
            "1k",
            "--pairs",
            "inter",
            "--quick",
            "--mpicc",
            "/opt/mpi/bin/mpicc",
        ]))
        .unwrap();
        assert_eq!(c.sizes, vec![0, 1024, 4 << 20]);
        assert_eq!(c.benchmarks, vec![Benchmark::PingPong, Benchmark::Sendrecv]);
        assert_eq!(c.fit_range, (1024, u64::MAX));
        assert_eq!(c.pairs, Some(Placement::InterNode));
        assert_eq!(c.timeout, Duration::from_secs(120));
        assert_eq!(c.mpicc, "/opt/mpi/bin/mpicc");
    }

    #[test]
    fn bad_flags_are_input_errors_with_a_fix() {
        for args in [
            &["--sizes", "1q"][..],
            &["--sizes", "2g"],
            &["--benchmarks", "bcast"],
            &["--fit-min", "1k,2k"],
            &["--fit-min", "1m", "--fit-max", "1k"],
            &["--launcher", "srun -n 4", "--np", "4"],
            &["--repeat", "0"],
            &["--timeout", "0"],
        ] {
            let e = config(&parse(args)).unwrap_err();
            assert_eq!(e.kind().exit_code(), 2, "{args:?}: {e}");
            assert!(e.to_string().contains("fix:"), "{e}");
        }
    }

    #[test]
    fn the_format_follows_the_output_extension() {
        assert_eq!(format_of(&parse(&["-o", "m.toml"])), Form::Toml);
        assert_eq!(format_of(&parse(&["-o", "r.json"])), Form::Json);
        assert_eq!(format_of(&parse(&["-o", "r.txt"])), Form::Table);
        assert_eq!(
            format_of(&parse(&["-o", "m.toml", "--format", "csv"])),
            Form::Csv
        );
        assert_eq!(format_of(&parse(&[])), Form::Table);
    }
}
