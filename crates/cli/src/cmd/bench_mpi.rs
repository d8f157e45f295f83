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
use hpcscope_bench::mpi::imb::Benchmark;
use hpcscope_bench::mpi::{MpiConfig, MpiReport};
use hpcscope_core::Machine;
use hpcscope_core::machine::{NetworkLink, Placement};
use hpcscope_report::{ChartOptions, Series, line_chart_svg};

use crate::output::{Table, num, write_atomic};

/// Output format of `bench mpi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MpiFormat {
    /// IMB-like tables, one per benchmark, and the fits.
    Table,
    /// The full report.
    Json,
    /// Every row of every benchmark.
    Csv,
    /// Markdown tables.
    Md,
    /// The `[[network]]` link, ready for a machine file.
    Toml,
}

/// Where the two ranks should run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PairsArg {
    /// Both on one node (shared memory).
    Intra,
    /// On two nodes (the interconnect).
    Inter,
}

/// Least-squares weights of the Hockney fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WeightsArg {
    /// Minimise relative errors (weights 1/t^2): small and large messages count alike.
    Relative,
    /// Ordinary least squares on µs: the large messages dominate.
    Absolute,
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
    pub fit_weights: WeightsArg,
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
    pub format: Option<MpiFormat>,
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

/// Parses a size list where `0` is allowed.
fn sizes(flag: &str, s: &str) -> Result<Vec<u64>, BenchError> {
    let mut v = Vec::new();
    for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let n = if p.trim_end_matches(['B', 'b']) == "0" {
            0
        } else {
            hpcscope_bench::units::parse_size(p).map_err(|e| {
                BenchError::bad_input(
                    flag,
                    e,
                    "give sizes such as 0,1,1k,64k,4m (k/m = KiB/MiB; kB/MB = 1000-based)",
                )
            })?
        };
        v.push(n);
    }
    if v.is_empty() {
        return Err(BenchError::bad_input(
            flag,
            "is empty",
            "give sizes such as 0,1,1k,64k,4m",
        ));
    }
    Ok(v)
}

fn one_size(flag: &str, s: &Option<String>, default: u64) -> Result<u64, BenchError> {
    match s {
        None => Ok(default),
        Some(s) => match sizes(flag, s)?.as_slice() {
            [n] => Ok(*n),
            _ => Err(BenchError::bad_input(
                flag,
                "takes one size",
                "give one size such as 1k",
            )),
        },
    }
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
            one_size("--fit-min", &a.fit_min, 0)?,
            one_size("--fit-max", &a.fit_max, u64::MAX)?,
        ),
        weights: match a.fit_weights {
            WeightsArg::Relative => Weights::Relative,
            WeightsArg::Absolute => Weights::Absolute,
        },
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
        let mut v = sizes("--sizes", s)?;
        v.sort_unstable();
        v.dedup();
        cfg.sizes = v;
    }
    if let Some(list) = &a.benchmarks {
        let mut v = Vec::new();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let b = Benchmark::from_name(name).ok_or_else(|| {
                BenchError::bad_input(
                    "--benchmarks",
                    format!("unknown benchmark '{name}'"),
                    "give some of: pingpong, sendrecv, exchange, allreduce",
                )
            })?;
            if !v.contains(&b) {
                v.push(b);
            }
        }
        v.sort();
        cfg.benchmarks = v;
    }
    hpcscope_bench::mpi::check(&cfg)?;
    Ok(cfg)
}

/// The output format: `--format`, else the `-o` extension, else a table.
pub fn format_of(a: &MpiArgs) -> MpiFormat {
    if let Some(f) = a.format {
        return f;
    }
    match a
        .output
        .as_deref()
        .and_then(Path::extension)
        .and_then(|e| e.to_str())
    {
        Some("toml") => MpiFormat::Toml,
        Some("json") => MpiFormat::Json,
        Some("csv") => MpiFormat::Csv,
        Some("md") => MpiFormat::Md,
        _ => MpiFormat::Table,
    }
}

/// Runs `bench mpi`.
pub fn run(a: &MpiArgs) -> anyhow::Result<ExitCode> {
    run_inner(a)?;
    Ok(ExitCode::SUCCESS)
}

fn env_err(what: String, fix: &str) -> BenchError {
    BenchError::Environment {
        what,
        fix: fix.into(),
    }
}

fn run_inner(a: &MpiArgs) -> Result<(), BenchError> {
    let cfg = config(a)?;
    let format = format_of(a);
    let wants_link = a.update.is_some() || format == MpiFormat::Toml;
    if wants_link && !cfg.benchmarks.contains(&Benchmark::PingPong) {
        return Err(BenchError::bad_input(
            "--benchmarks",
            "the network link is the PingPong fit, and pingpong is not in the list",
            "add pingpong to --benchmarks",
        ));
    }
    // Check the machine file before measuring: a bad file fails in a second, not after the run.
    let update = match &a.update {
        Some(p) => Some((p.clone(), read_machine(p)?)),
        None => None,
    };
    let report = hpcscope_bench::mpi::run(&cfg, &mut |cmd| eprintln!("running: {cmd}"))?;
    for f in &report.launcher_flags_added {
        eprintln!("  added {f}");
    }
    let link = report.network.clone();
    let need_link = || {
        link.clone().ok_or_else(|| {
            let why = report
                .benchmarks
                .iter()
                .find(|b| b.benchmark == Benchmark::PingPong)
                .and_then(|b| b.fit_error.clone())
                .unwrap_or_else(|| "the fitted latency is not positive".into());
            env_err(
                format!("no network link: the PingPong times give no Hockney fit: {why}"),
                "measure more sizes (the default 0 B .. 4 MiB), raise --repeat on a busy machine, or set --fit-min/--fit-max",
            )
        })
    };
    let text = match format {
        MpiFormat::Json => {
            let mut s = serde_json::to_string_pretty(&report)
                .map_err(|e| BenchError::Internal(format!("JSON: {e}")))?;
            s.push('\n');
            s
        }
        MpiFormat::Toml => link_toml(&need_link()?)?,
        MpiFormat::Csv => csv_table(&report).csv(),
        MpiFormat::Table => text_report(&report, false),
        MpiFormat::Md => text_report(&report, true),
    };
    if let Some(svg) = &a.svg {
        write_atomic(svg, &chart_svg(&report)).map_err(|e| BenchError::Write {
            path: svg.display().to_string(),
            source: std::io::Error::other(format!("{e:#}")),
        })?;
    }
    if let Some((path, (src, _))) = &update {
        let l = need_link()?;
        let new = upsert_network(src, &l, &path.display().to_string())?;
        write_atomic(path, &new).map_err(|e| BenchError::Write {
            path: path.display().to_string(),
            source: std::io::Error::other(format!("{e:#}")),
        })?;
        eprintln!(
            "{}: network link '{}' written ({} µs, {} GB/s)",
            path.display(),
            l.name,
            num(l.latency_us, 3),
            num(l.bandwidth_gbs, 3)
        );
    }
    crate::output::emit(&text, a.output.as_deref()).map_err(|e| BenchError::Write {
        path: a
            .output
            .as_deref()
            .map_or("standard output".into(), |p| p.display().to_string()),
        source: std::io::Error::other(format!("{e:#}")),
    })?;
    // The text and Markdown reports carry the notes; elsewhere they go to stderr.
    let notes_shown = matches!(format, MpiFormat::Table | MpiFormat::Md) && a.output.is_none();
    if !notes_shown {
        for n in &report.notes {
            eprintln!("note: {n}");
        }
    }
    if let Some(l) = &link {
        eprintln!(
            "{} ({}): latency {} µs, bandwidth {} GB/s, n_1/2 {} B [{}]",
            l.name,
            l.placement,
            num(l.latency_us, 3),
            num(l.bandwidth_gbs, 3),
            num(l.n_half_bytes.unwrap_or(f64::NAN), 3),
            report.mpi_library
        );
    }
    Ok(())
}

fn read_machine(p: &Path) -> Result<(String, Machine), BenchError> {
    let src = std::fs::read_to_string(p).map_err(|e| {
        BenchError::bad_input(
            "--update",
            format!("cannot read '{}': {e}", p.display()),
            "give an existing machine file; write one first with `hpcscope bench --quick -o FILE` or copy one (`hpcscope machine show ID --format toml`)",
        )
    })?;
    let m = Machine::from_toml_str(&src, &p.display().to_string()).map_err(|e| {
        BenchError::bad_input(
            "--update",
            e.to_string(),
            "fix the machine file first (`hpcscope machine validate FILE`)",
        )
    })?;
    Ok((src, m))
}

/// The link as a `[[network]]` table (the fit inline, so the table stays one block).
fn link_table(link: &NetworkLink) -> Result<toml_edit::Table, BenchError> {
    #[derive(serde::Serialize)]
    struct Wrap<'a> {
        network: [&'a NetworkLink; 1],
    }
    let frag = toml::to_string(&Wrap { network: [link] })
        .map_err(|e| BenchError::Internal(format!("TOML: {e}")))?;
    let doc: toml_edit::DocumentMut = frag
        .parse()
        .map_err(|e| BenchError::Internal(format!("TOML: {e}")))?;
    let mut t = doc["network"]
        .as_array_of_tables()
        .and_then(|a| a.get(0))
        .cloned()
        .ok_or_else(|| BenchError::Internal("serialized link has no [[network]]".into()))?;
    if let Some(fit) = t.get("fit").and_then(|f| f.as_table()).cloned() {
        let mut inline = fit.into_inline_table();
        inline.fmt();
        t.insert(
            "fit",
            toml_edit::Item::Value(toml_edit::Value::InlineTable(inline)),
        );
    }
    t.set_position(None);
    t.decor_mut().clear();
    Ok(t)
}

/// The `--format toml` output: the link alone, with a header saying what to do with it.
fn link_toml(link: &NetworkLink) -> Result<String, BenchError> {
    let mut doc = toml_edit::DocumentMut::new();
    let mut aot = toml_edit::ArrayOfTables::new();
    aot.push(link_table(link)?);
    doc.insert("network", toml_edit::Item::ArrayOfTables(aot));
    Ok(format!(
        "# A [[network]] link for a machine file (docs/machine-format.md), from `hpcscope bench mpi`.\n# Add it with `hpcscope bench mpi --update MACHINE.toml`, or append this text to the file.\n{doc}"
    ))
}

/// `src` (a machine file) with `link` added, or replacing the link of the same name;
/// everything else, comments and layout included, is kept. The result is validated.
pub fn upsert_network(src: &str, link: &NetworkLink, origin: &str) -> Result<String, BenchError> {
    let mut doc: toml_edit::DocumentMut = src.parse().map_err(|e| {
        BenchError::bad_input(
            "--update",
            format!("{origin}: {e}"),
            "fix the TOML syntax first",
        )
    })?;
    let mut table = link_table(link)?;
    // After every table already there.
    table.set_position(Some(isize::MAX / 2));
    match doc.get_mut("network") {
        None => {
            let mut aot = toml_edit::ArrayOfTables::new();
            aot.push(table);
            doc.insert("network", toml_edit::Item::ArrayOfTables(aot));
        }
        Some(item) => {
            let aot = item.as_array_of_tables_mut().ok_or_else(|| {
                BenchError::bad_input(
                    "--update",
                    format!("{origin}: `network` is not an array of [[network]] tables"),
                    "write each link as a [[network]] table",
                )
            })?;
            let same = aot
                .iter()
                .position(|t| t.get("name").and_then(|n| n.as_str()) == Some(link.name.as_str()));
            match same {
                Some(i) => {
                    let old = aot.get_mut(i).expect("index from position");
                    table.set_position(old.position());
                    *table.decor_mut() = old.decor().clone();
                    *old = table;
                }
                None => aot.push(table),
            }
        }
    }
    let out = doc.to_string();
    Machine::from_toml_str(&out, origin).map_err(|e| {
        BenchError::Internal(format!("the updated machine file does not validate: {e}"))
    })?;
    Ok(out)
}

fn t(v: f64) -> String {
    format!("{v:.2}")
}

/// One table per benchmark, IMB's columns plus the model's time.
fn bench_table(b: &hpcscope_bench::mpi::BenchmarkResult) -> Table {
    let bw = b.bytes_factor.is_some();
    let mut h = vec![
        "#bytes",
        "#repetitions",
        "t_min[usec]",
        "t_max[usec]",
        "t_avg[usec]",
    ];
    if bw {
        h.push("Mbytes/sec");
    }
    if b.fit.is_some() {
        h.push("model[usec]");
    }
    let mut tab = Table::new(&h);
    for r in &b.rows {
        let mut row = vec![
            r.bytes.to_string(),
            r.repetitions.to_string(),
            t(r.t_min_us),
            t(r.t_max_us),
            t(r.t_avg_us),
        ];
        if bw {
            row.push(t(r.mbytes_per_s.unwrap_or(0.0)));
        }
        if let Some(m) = r.model_us {
            row.push(t(m));
        }
        tab.row(row);
    }
    tab
}

fn fit_line(b: &hpcscope_bench::mpi::BenchmarkResult) -> Option<String> {
    if let Some(f) = &b.fit {
        let largest = b
            .rows
            .last()
            .and_then(|r| {
                r.mbytes_per_s
                    .map(|m| format!("; measured at {} B: {} MB/s", r.bytes, num(m, 5)))
            })
            .unwrap_or_default();
        Some(format!(
            "{} Hockney fit: t0 = {} µs, B = {} MB/s ({} GB/s), n_1/2 = {} B; {} sizes {} B .. {} B, {} weights; R² = {}, RMS relative error {}%, worst {}% at {} B{largest}",
            b.imb_name,
            num(f.t0_us, 4),
            num(f.bandwidth_mbs, 5),
            num(f.bandwidth_mbs / 1000.0, 4),
            num(f.n_half_bytes, 4),
            f.sizes_bytes.len(),
            f.sizes_bytes.first().copied().unwrap_or(0),
            f.sizes_bytes.last().copied().unwrap_or(0),
            f.weights.name(),
            num(f.r2, 4),
            num(f.rms_rel_error * 100.0, 3),
            num(f.max_rel_error * 100.0, 3),
            f.worst_bytes
        ))
    } else {
        b.fit_error
            .as_ref()
            .map(|e| format!("{}: no Hockney fit: {e}", b.imb_name))
    }
}

fn text_report(r: &MpiReport, md: bool) -> String {
    let mut s = String::new();
    let br = if md { "  \n" } else { "\n" };
    let head = [
        format!(
            "hpcscope bench mpi: {} ranks, ranks 0 and 1 {} ({}), {}",
            r.ranks,
            r.placement,
            r.hosts
                .iter()
                .take(2)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            r.mpi_library
        ),
        format!("launcher: {}", r.launcher),
    ];
    for l in head.iter().chain(&r.conventions) {
        s.push_str(l);
        s.push_str(br);
    }
    for b in &r.benchmarks {
        s.push('\n');
        if md {
            s.push_str(&format!("### {}\n\n", b.imb_name));
            s.push_str(&bench_table(b).md());
        } else {
            s.push_str(&format!("# Benchmarking {}\n", b.imb_name));
            s.push_str(&bench_table(b).text());
        }
        if let Some(l) = fit_line(b) {
            s.push('\n');
            s.push_str(&l);
            s.push('\n');
        }
    }
    if let Some(l) = &r.network {
        s.push('\n');
        s.push_str(&format!(
            "network link '{}': latency {} µs, bandwidth {} GB/s, n_1/2 = {} B (PingPong fit)\n",
            l.name,
            num(l.latency_us, 4),
            num(l.bandwidth_gbs, 4),
            num(l.n_half_bytes.unwrap_or(f64::NAN), 4)
        ));
    }
    for n in &r.notes {
        s.push_str(&format!("note: {n}{br}"));
    }
    s
}

fn csv_table(r: &MpiReport) -> Table {
    let mut tab = Table::new(&[
        "benchmark",
        "bytes",
        "repetitions",
        "t_min_us",
        "t_max_us",
        "t_avg_us",
        "mbytes_per_s",
        "model_us",
    ]);
    let opt = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    for b in &r.benchmarks {
        for row in &b.rows {
            tab.row(vec![
                b.benchmark.name().to_string(),
                row.bytes.to_string(),
                row.repetitions.to_string(),
                format!("{}", row.t_min_us),
                format!("{}", row.t_max_us),
                format!("{}", row.t_avg_us),
                opt(row.mbytes_per_s),
                opt(row.model_us),
            ]);
        }
    }
    tab
}

/// Two charts in one SVG: time and bandwidth against message size (log-log), each
/// benchmark's measurements solid and its Hockney model dashed.
pub fn chart_svg(r: &MpiReport) -> String {
    let mut time = Vec::new();
    let mut bw = Vec::new();
    for b in &r.benchmarks {
        // 0 B has no place on a log axis; it is in the tables.
        let pts = |f: &dyn Fn(&hpcscope_bench::mpi::Row) -> Option<f64>| -> Vec<(f64, f64)> {
            b.rows
                .iter()
                .filter(|x| x.bytes > 0)
                .filter_map(|x| f(x).map(|y| (x.bytes as f64, y)))
                .collect()
        };
        time.push(Series {
            name: format!("{} t_avg", b.imb_name),
            points: pts(&|x| Some(x.t_avg_us)),
            dashed: false,
        });
        if b.bytes_factor.is_some() {
            bw.push(Series {
                name: format!("{} Mbytes/sec", b.imb_name),
                points: pts(&|x| x.mbytes_per_s),
                dashed: false,
            });
        }
        if let Some(f) = &b.fit {
            time.push(Series {
                name: format!("{} Hockney model", b.imb_name),
                points: pts(&|x| x.model_us),
                dashed: true,
            });
            bw.push(Series {
                name: format!("{} Hockney model", b.imb_name),
                points: pts(&|x| x.model_us.map(|m| f.bytes_factor * x.bytes as f64 / m)),
                dashed: true,
            });
        }
    }
    let who = format!(
        "{} ranks, {}, {}",
        r.ranks,
        r.placement,
        r.mpi_library.split(',').next().unwrap_or("")
    );
    let top = line_chart_svg(
        &time,
        &ChartOptions {
            title: format!("MPI time per message ({who})"),
            x_label: "message size [bytes]".into(),
            y_label: "time [µs]".into(),
            log_x: true,
            log_y: true,
            vertical_markers: Vec::new(),
            caption: "t_avg per operation as IMB-MPI1 reports it (PingPong: half the round trip); dashed: Hockney model t0 + k n / B".into(),
        },
    );
    let bottom = line_chart_svg(
        &bw,
        &ChartOptions {
            title: "MPI bandwidth".into(),
            x_label: "message size [bytes]".into(),
            y_label: "Mbytes/sec (MB = 10^6 B)".into(),
            log_x: true,
            log_y: true,
            vertical_markers: Vec::new(),
            caption: "IMB convention: k x bytes / t_max, k = 1 PingPong, 2 Sendrecv, 4 Exchange; dashed: the model's k n / t(n), which tends to B".into(),
        },
    );
    stack_svgs(&[top, bottom])
}

/// Puts standalone SVG documents one below the other in one document.
fn stack_svgs(parts: &[String]) -> String {
    let attr = |s: &str, name: &str| -> f64 {
        let key = format!(" {name}=\"");
        s.find(&key)
            .and_then(|i| {
                let rest = &s[i + key.len()..];
                rest[..rest.find('"')?].parse().ok()
            })
            .unwrap_or(0.0)
    };
    let width = parts.iter().map(|p| attr(p, "width")).fold(0.0, f64::max);
    let mut y = 0.0;
    let mut body = String::new();
    for p in parts {
        let h = attr(p, "height");
        body.push_str(&p.replacen("<svg ", &format!("<svg y=\"{y}\" "), 1));
        y += h;
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{y}\" viewBox=\"0 0 {width} {y}\">\n{body}</svg>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
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
        assert_eq!(format_of(&parse(&["-o", "m.toml"])), MpiFormat::Toml);
        assert_eq!(format_of(&parse(&["-o", "r.json"])), MpiFormat::Json);
        assert_eq!(format_of(&parse(&["-o", "r.txt"])), MpiFormat::Table);
        assert_eq!(
            format_of(&parse(&["-o", "m.toml", "--format", "csv"])),
            MpiFormat::Csv
        );
        assert_eq!(format_of(&parse(&[])), MpiFormat::Table);
    }

    fn link(name: &str, lat: f64) -> NetworkLink {
        NetworkLink {
            name: name.into(),
            placement: Placement::IntraNode,
            latency_us: lat,
            bandwidth_gbs: 5.0,
            n_half_bytes: Some(1500.0),
            benchmark: Some("pingpong".into()),
            ranks: Some(2),
            launcher: Some("mpirun -np 2".into()),
            mpi_library: Some("Open MPI v4.1.4".into()),
            fit: Some(hpcscope_core::machine::NetworkFit {
                model: "hockney".into(),
                weights: "relative".into(),
                sizes_bytes: vec![0, 1, 2],
                r2: Some(0.99),
                max_rel_error: Some(0.1),
            }),
            provenance: "test".into(),
        }
    }

    /// --update keeps every byte of the file it does not own (comments included), adds the
    /// link, and replaces it in place on the next run.
    #[test]
    fn update_keeps_the_rest_of_the_file() {
        let src = format!(
            "# my node, measured by hand\n{}\n# trailing remark\n",
            hpcscope_core::library::builtin("thunderx2")
                .unwrap()
                .to_toml_string()
        );
        let once = upsert_network(&src, &link("mpi-intra-node", 0.3), "m.toml").unwrap();
        assert!(once.contains("# my node, measured by hand"));
        assert!(once.contains("# trailing remark"));
        let m = Machine::from_toml_str(&once, "m.toml").unwrap();
        let before = Machine::from_toml_str(&src, "m.toml").unwrap();
        assert_eq!(m.levels, before.levels);
        assert_eq!(m.peaks, before.peaks);
        assert_eq!(m.network, vec![link("mpi-intra-node", 0.3)]);
        // Everything before the new table is unchanged.
        let cut = once.find("[[network]]").unwrap();
        assert!(src.starts_with(once[..cut].trim_end()), "{once}");
        // Again: replaced, not duplicated; a second name is added.
        let twice = upsert_network(&once, &link("mpi-intra-node", 0.25), "m.toml").unwrap();
        let thrice = upsert_network(&twice, &link("mpi-inter-node", 1.5), "m.toml").unwrap();
        let m = Machine::from_toml_str(&thrice, "m.toml").unwrap();
        assert_eq!(m.network.len(), 2);
        assert_eq!(m.network_link("mpi-intra-node").unwrap().latency_us, 0.25);
        assert_eq!(thrice.matches("[[network]]").count(), 2);
        // The toml output is the link alone and appends to a machine file as is.
        let frag = link_toml(&link("mpi-intra-node", 0.3)).unwrap();
        let appended = format!("{src}\n{frag}");
        let m = Machine::from_toml_str(&appended, "m.toml").unwrap();
        assert_eq!(m.network.len(), 1);
    }

    #[test]
    fn update_refuses_a_broken_file() {
        let e = upsert_network("format_version = [", &link("x", 1.0), "m.toml").unwrap_err();
        assert_eq!(e.kind().exit_code(), 2);
        let e = upsert_network("network = 3\n", &link("x", 1.0), "m.toml").unwrap_err();
        assert!(e.to_string().contains("[[network]]"), "{e}");
    }
}
