//! `hpcscope bench mpi`: point-to-point and collective MPI benchmarks in the style of the
//! Intel MPI Benchmarks, a Hockney fit, and the machine file's `[[network]]` link.
//!
//! hpcscope links no MPI library: the benchmark is a C program ([`launch::SOURCE`]) built
//! with the MPI compiler wrapper at run time into the cache directory and started under the
//! launcher (`mpirun -np 2`, `srun -n 2`). It prints one line per message size; this module
//! parses them ([`parse_output`]), applies IMB's conventions ([`imb`]), fits Hockney's model
//! ([`hockney`]) and builds the network link.
//!
//! - [`imb`]: repetitions and Mbytes/sec as IMB computes them;
//! - [`hockney`]: t = t0 + k n / B by weighted least squares;
//! - [`launch`]: the launcher's command line, mpicc, the run under a time limit.

pub mod hockney;
pub mod imb;
pub mod launch;
pub mod machine_file;
pub mod render;

use std::path::PathBuf;
use std::time::Duration;

use hpcscope_core::machine::{NetworkFit, NetworkLink, Placement};
use serde::{Deserialize, Serialize};

use crate::error::BenchError;
use hockney::{HockneyFit, Weights};
use imb::Benchmark;

/// What to run and how.
#[derive(Debug, Clone, PartialEq)]
pub struct MpiConfig {
    /// The launcher as the user typed it; `None` for `mpirun -np <ranks>`.
    pub launcher: Option<String>,
    /// Ranks of the default launcher.
    pub ranks: u32,
    /// Ask the launcher to put the two ranks on one node or on two.
    pub pairs: Option<Placement>,
    /// Message sizes, bytes.
    pub sizes: Vec<u64>,
    /// Benchmarks, in order.
    pub benchmarks: Vec<Benchmark>,
    /// Fewer repetitions: a few seconds in all.
    pub quick: bool,
    /// Timed runs per size; the one with the smallest t_avg is kept.
    pub repeat: u32,
    /// The MPI C compiler wrapper.
    pub mpicc: String,
    /// Where the built program is kept.
    pub cache_dir: PathBuf,
    /// Time limit of the launcher's run.
    pub timeout: Duration,
    /// Smallest and largest size in the Hockney fit (inclusive).
    pub fit_range: (u64, u64),
    /// Least-squares weights of the fit.
    pub weights: Weights,
    /// Name of the network link (default `mpi-<placement>`).
    pub link_name: Option<String>,
}

/// 0 and the powers of two from 1 B to 4 MiB, as IMB-MPI1.
pub fn default_sizes() -> Vec<u64> {
    std::iter::once(0)
        .chain((0..=22).map(|k| 1u64 << k))
        .collect()
}

impl Default for MpiConfig {
    fn default() -> Self {
        MpiConfig {
            launcher: None,
            ranks: 2,
            pairs: None,
            sizes: default_sizes(),
            benchmarks: Benchmark::ALL.to_vec(),
            quick: false,
            repeat: 3,
            mpicc: "mpicc".into(),
            cache_dir: std::env::temp_dir().join("hpcscope-cache"),
            timeout: Duration::from_secs(300),
            fit_range: (0, u64::MAX),
            weights: Weights::Relative,
            link_name: None,
        }
    }
}

impl MpiConfig {
    /// (volume, max repetitions, min repetitions) per size: IMB's 40 MiB and 1000, or a
    /// tenth of the volume and at most 100 with `quick`.
    pub fn repetition_rule(&self) -> (u64, u64, u64) {
        if self.quick {
            (imb::OVERALL_VOLUME / 10, 100, 2)
        } else {
            (imb::OVERALL_VOLUME, imb::MAX_REPS, 1)
        }
    }

    /// The program's arguments.
    pub fn program_args(&self) -> Vec<String> {
        let (vol, max, min) = self.repetition_rule();
        let list = |v: Vec<String>| v.join(",");
        vec![
            "-s".into(),
            list(self.sizes.iter().map(u64::to_string).collect()),
            "-b".into(),
            list(
                self.benchmarks
                    .iter()
                    .map(|b| b.name().to_string())
                    .collect(),
            ),
            "-v".into(),
            vol.to_string(),
            "-m".into(),
            max.to_string(),
            "-n".into(),
            min.to_string(),
            "-r".into(),
            self.repeat.to_string(),
        ]
    }
}

/// One line of results, as IMB prints it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Message size, bytes.
    pub bytes: u64,
    /// Timed operations.
    pub repetitions: u64,
    /// Fastest rank, µs per operation.
    pub t_min_us: f64,
    /// Slowest rank, µs per operation.
    pub t_max_us: f64,
    /// Mean over the ranks, µs per operation.
    pub t_avg_us: f64,
    /// IMB's Mbytes/sec (MB = 10^6 B) from t_max; absent for collectives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mbytes_per_s: Option<f64>,
    /// The Hockney model's time for this size, µs, when the benchmark was fitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_us: Option<f64>,
}

/// The rows of one benchmark and its fit.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkResult {
    /// The benchmark.
    pub benchmark: Benchmark,
    /// IMB's name for it.
    pub imb_name: String,
    /// k of Mbytes/sec = k bytes / t_max.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_factor: Option<f64>,
    /// One row per size.
    pub rows: Vec<Row>,
    /// Hockney's model fitted to t_avg (point-to-point benchmarks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<HockneyFit>,
    /// Why there is no fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_error: Option<String>,
}

/// Everything `hpcscope bench mpi` measured.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MpiReport {
    /// `hpcscope-bench <version>`.
    pub tool: String,
    /// Host that started the run.
    pub host: String,
    /// UTC start time.
    pub date: String,
    /// The whole command that ran.
    pub command: Vec<String>,
    /// The launcher part of it.
    pub launcher: String,
    /// Flags hpcscope added to the launcher, and why.
    pub launcher_flags_added: Vec<String>,
    /// `MPI_Get_library_version`, first line.
    pub mpi_library: String,
    /// MPI standard version (`MPI_Get_version`).
    pub mpi_standard: String,
    /// Ranks.
    pub ranks: u32,
    /// Processor name of each rank (`MPI_Get_processor_name`).
    pub hosts: Vec<String>,
    /// Where ranks 0 and 1 ran, from their processor names.
    pub placement: Placement,
    /// Quick mode.
    pub quick: bool,
    /// Timed runs per size (best t_avg kept).
    pub repeat: u32,
    /// The conventions of every number, in words.
    pub conventions: Vec<String>,
    /// One entry per benchmark.
    pub benchmarks: Vec<BenchmarkResult>,
    /// The machine file's network link, from the PingPong fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkLink>,
    /// Remarks (placement asked but not obtained, a poor fit).
    pub notes: Vec<String>,
    /// Wall-clock seconds of the launcher's run.
    pub run_seconds: f64,
}

/// The program's output, parsed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    /// MPI library.
    pub library: String,
    /// MPI standard version.
    pub standard: String,
    /// Ranks.
    pub ranks: u32,
    /// Processor name per rank.
    pub hosts: Vec<String>,
    /// (benchmark, bytes, reps, t_min, t_max, t_avg).
    pub rows: Vec<(Benchmark, u64, u64, f64, f64, f64)>,
    /// Whether the `end` line came.
    pub complete: bool,
}

const TAG: &str = "hpcscope-mpi ";

/// Parses the benchmark program's output. Lines without the `hpcscope-mpi ` prefix
/// (launcher banners, warnings) are ignored; a malformed tagged line is an error naming
/// its line number.
pub fn parse_output(text: &str) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    let mut begun = false;
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix(TAG) else {
            continue;
        };
        let bad = |what: &str| format!("line {}: {what}: '{line}'", i + 1);
        let (key, val) = rest.split_once(' ').unwrap_or((rest, ""));
        match key {
            "begin" => {
                if val.trim() != "1" {
                    return Err(bad("unknown output version"));
                }
                begun = true;
            }
            _ if !begun => return Err(bad("output before the 'begin' line")),
            "library" => p.library = val.trim().to_string(),
            "standard" => p.standard = val.trim().to_string(),
            "ranks" => p.ranks = val.trim().parse().map_err(|_| bad("bad rank count"))?,
            "host" => {
                let (r, h) = val.split_once(' ').ok_or_else(|| bad("bad host line"))?;
                let r: usize = r.parse().map_err(|_| bad("bad rank"))?;
                if r != p.hosts.len() {
                    return Err(bad("host lines out of order"));
                }
                p.hosts.push(h.trim().to_string());
            }
            "row" => {
                let f: Vec<&str> = val.split_whitespace().collect();
                if f.len() != 6 {
                    return Err(bad("a row has 6 fields"));
                }
                let b = Benchmark::from_name(f[0]).ok_or_else(|| bad("unknown benchmark"))?;
                let n: u64 = f[1].parse().map_err(|_| bad("bad size"))?;
                let reps: u64 = f[2].parse().map_err(|_| bad("bad repetitions"))?;
                let t: Vec<f64> = f[3..]
                    .iter()
                    .map(|s| s.parse::<f64>())
                    .collect::<Result<_, _>>()
                    .map_err(|_| bad("bad time"))?;
                if t.iter().any(|x| !x.is_finite() || *x < 0.0) {
                    return Err(bad("negative or non-finite time"));
                }
                p.rows.push((b, n, reps, t[0], t[1], t[2]));
            }
            "end" => p.complete = true,
            _ => return Err(bad("unknown line")),
        }
    }
    if !begun {
        return Err(
            "no 'hpcscope-mpi begin' line: the program did not start, or its output was lost"
                .into(),
        );
    }
    Ok(p)
}

/// Where ranks 0 and 1 ran.
pub fn placement_of(hosts: &[String]) -> Placement {
    match hosts {
        [a, b, ..] if a != b => Placement::InterNode,
        _ => Placement::IntraNode,
    }
}

/// The conventions, in words, for the output's header.
pub fn conventions(cfg: &MpiConfig) -> Vec<String> {
    let (vol, max, min) = cfg.repetition_rule();
    vec![
        "t_min/t_max/t_avg: µs per operation over the ranks taking part (PingPong: half the round trip, ranks 0 and 1), as IMB-MPI1".into(),
        "Mbytes/sec = k x bytes / t_max with MB = 10^6 B (IMB 2018 and later; IMB 4.x and older divided by 2^20); k = 1 PingPong, 2 Sendrecv (both directions), 4 Exchange; none for Allreduce".into(),
        format!(
            "repetitions = min({max}, {} MiB / bytes){}; {} timed run(s) per size, the one with the smallest t_avg kept{}",
            vol / (1 << 20),
            if min > 1 { format!(", at least {min}") } else { String::new() },
            cfg.repeat,
            if cfg.repeat == 1 && !cfg.quick { " (exactly IMB)" } else { " (IMB: one run)" }
        ),
        format!(
            "Hockney fit t = t0 + k n / B of t_avg over {}, {} least squares{}; n_1/2 = t0 B / k",
            range_text(cfg.fit_range),
            cfg.weights.name(),
            match cfg.weights {
                Weights::Relative => " (weights 1/t^2: each size counts by its relative error)",
                Weights::Absolute => " (ordinary: the large sizes dominate)",
            }
        ),
    ]
}

fn range_text((lo, hi): (u64, u64)) -> String {
    use crate::units::format_bytes;
    match (lo, hi) {
        (0, u64::MAX) => "every measured size".into(),
        (l, u64::MAX) => format!("sizes >= {}", format_bytes(l)),
        (l, h) => format!("sizes {} .. {}", format_bytes(l), format_bytes(h)),
    }
}

/// Turns parsed output into the report: IMB bandwidths, fits, the network link.
pub fn analyse(
    parsed: &Parsed,
    cfg: &MpiConfig,
    plan: &launch::LaunchPlan,
    command: Vec<String>,
    run_seconds: f64,
) -> MpiReport {
    let placement = placement_of(&parsed.hosts);
    let mut notes = Vec::new();
    if let Some(asked) = cfg.pairs
        && asked != placement
    {
        notes.push(format!(
            "--pairs asked for {asked} but ranks 0 and 1 ran on {} ({}): the link is recorded as {placement}",
            parsed.hosts.first().map_or("?", String::as_str),
            parsed.hosts.get(1).map_or("?", String::as_str),
        ));
    }
    let mut benchmarks = Vec::new();
    for &b in &cfg.benchmarks {
        let mut rows: Vec<Row> = parsed
            .rows
            .iter()
            .filter(|r| r.0 == b)
            .map(|&(_, n, reps, tmin, tmax, tavg)| Row {
                bytes: n,
                repetitions: reps,
                t_min_us: tmin,
                t_max_us: tmax,
                t_avg_us: tavg,
                mbytes_per_s: imb::mbytes_per_s(b, n, tmax),
                model_us: None,
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let (mut fit, mut fit_error) = (None, None);
        if let Some(k) = b.bytes_factor() {
            let pts: Vec<(u64, f64)> = rows
                .iter()
                .filter(|r| r.bytes >= cfg.fit_range.0 && r.bytes <= cfg.fit_range.1)
                .map(|r| (r.bytes, r.t_avg_us))
                .collect();
            match hockney::fit(&pts, cfg.weights, k) {
                Ok(f) => {
                    for r in &mut rows {
                        r.model_us = Some(f.time_us(r.bytes as f64));
                    }
                    if f.t0_us <= 0.0 {
                        notes.push(format!(
                            "{}: the fitted latency is {:.3} µs (not positive): include small sizes in the fit (--fit-min 0)",
                            b.imb_name(),
                            f.t0_us
                        ));
                    }
                    if f.max_rel_error > 0.5 {
                        notes.push(format!(
                            "{}: the model misses the measured time by {:.0}% at {} B: one latency and one bandwidth do not describe every size (protocol switch, cache, noise)",
                            b.imb_name(),
                            f.max_rel_error * 100.0,
                            f.worst_bytes
                        ));
                    }
                    fit = Some(f);
                }
                Err(e) => fit_error = Some(e.to_string()),
            }
        }
        benchmarks.push(BenchmarkResult {
            benchmark: b,
            imb_name: b.imb_name().into(),
            bytes_factor: b.bytes_factor(),
            rows,
            fit,
            fit_error,
        });
    }
    let launcher = plan.argv.join(" ");
    let tool = format!("hpcscope-bench {}", env!("CARGO_PKG_VERSION"));
    let host = crate::run::host_name();
    let date = hpcscope_host::time::utc_now();
    let network = benchmarks
        .iter()
        .find(|r| r.benchmark == Benchmark::PingPong)
        .and_then(|r| r.fit.as_ref())
        .filter(|f| f.t0_us > 0.0)
        .map(|f| NetworkLink {
            name: cfg
                .link_name
                .clone()
                .unwrap_or_else(|| format!("mpi-{placement}")),
            placement,
            latency_us: round_sig(f.t0_us, 4),
            bandwidth_gbs: round_sig(f.bandwidth_mbs / 1000.0, 4),
            n_half_bytes: Some(round_sig(f.n_half_bytes, 4)),
            benchmark: Some("pingpong".into()),
            ranks: Some(parsed.ranks),
            launcher: Some(launcher.clone()),
            mpi_library: Some(parsed.library.clone()).filter(|s| !s.is_empty()),
            fit: Some(NetworkFit {
                model: "hockney".into(),
                weights: f.weights.name().into(),
                sizes_bytes: f.sizes_bytes.clone(),
                r2: Some(round_sig(f.r2, 6)),
                max_rel_error: Some(round_sig(f.max_rel_error, 3)),
            }),
            provenance: format!(
                "hpcscope bench mpi ({tool}), IMB-style PingPong of {} ranks on {}, {date}; Hockney fit of t_avg ({} least squares)",
                parsed.ranks,
                parsed.hosts.first().cloned().unwrap_or(host.clone()),
                f.weights.name()
            ),
        });
    MpiReport {
        tool,
        host,
        date,
        command,
        launcher,
        launcher_flags_added: plan.added.clone(),
        mpi_library: parsed.library.clone(),
        mpi_standard: parsed.standard.clone(),
        ranks: parsed.ranks,
        hosts: parsed.hosts.clone(),
        placement,
        quick: cfg.quick,
        repeat: cfg.repeat,
        conventions: conventions(cfg),
        benchmarks,
        network,
        notes,
        run_seconds,
    }
}

/// `x` rounded to `sig` significant digits: the machine file keeps what the measurement
/// supports, not 17 digits of noise.
pub fn round_sig(x: f64, sig: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(sig - 1 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

/// Facts about this process for the default launcher.
pub fn this_host() -> launch::Host {
    launch::Host {
        is_root: hpcscope_host::facts::is_root(),
        cpus: hpcscope_host::topology::usable_cpus(),
    }
}

/// Builds the program, runs it under the launcher and analyses the output. `announce`
/// receives the command line before it runs (the CLI prints it on stderr).
pub fn run(cfg: &MpiConfig, announce: &mut dyn FnMut(&str)) -> Result<MpiReport, BenchError> {
    check(cfg)?;
    let argv0 = match &cfg.launcher {
        Some(s) => launch::split_words(s)
            .ok()
            .and_then(|w| w.into_iter().next())
            .unwrap_or_default(),
        None => "mpirun".into(),
    };
    if argv0.is_empty() || launch::which(&argv0).is_none() {
        // An empty launcher is bad input: plan() says so.
        if argv0.is_empty() {
            launch::plan(
                cfg.launcher.as_deref(),
                cfg.ranks,
                launch::Flavour::Other,
                this_host(),
                None,
            )?;
        }
        return Err(launch::missing_launcher(&argv0));
    }
    let exe = launch::build(&cfg.mpicc, &cfg.cache_dir)?;
    let flavour = launch::probe_flavour(&argv0);
    let host = this_host();
    let plan = launch::plan(cfg.launcher.as_deref(), cfg.ranks, flavour, host, cfg.pairs)?;
    let mut command = plan.argv.clone();
    command.push(exe.to_string_lossy().into_owned());
    command.extend(cfg.program_args());
    announce(&command.join(" "));
    let fin = launch::run_with_timeout(&command, cfg.timeout)?;
    let parsed = parse_output(&fin.stdout);
    let hint = |p: &launch::LaunchPlan| {
        let mut h = String::from("run the command above by hand to see the MPI error");
        if p.flavour == launch::Flavour::OpenMpi && host.is_root && cfg.launcher.is_some() {
            h.push_str("; as root, Open MPI's mpirun needs --allow-run-as-root");
        }
        h.push_str("; under Slurm use --launcher \"srun -n 2\"");
        h
    };
    let partial = |p: &Result<Parsed, String>| match p {
        Ok(p) if !p.rows.is_empty() => format!(
            "\nrows measured before it stopped ({}):\n{}",
            p.rows.len(),
            p.rows
                .iter()
                .map(|r| format!(
                    "  {} {} B x{}: t_min {} t_max {} t_avg {} µs",
                    r.0.name(),
                    r.1,
                    r.2,
                    r.3,
                    r.4,
                    r.5
                ))
                .collect::<Vec<_>>()
                .join("\n")
        ),
        _ => String::new(),
    };
    match fin.status {
        None => {
            return Err(BenchError::Environment {
                what: format!(
                    "'{}' did not finish within {} s and was stopped{}",
                    command.join(" "),
                    cfg.timeout.as_secs(),
                    partial(&parsed)
                ),
                fix: "the launcher may be waiting for resources (an allocation, free slots) or a rank hung; run it by hand, or give more time with --timeout".into(),
            });
        }
        Some(s) if !s.success() => {
            return Err(BenchError::Environment {
                what: format!(
                    "the MPI run failed ({s}): {}\n{}{}",
                    command.join(" "),
                    launch::tail(&fin.stderr, 12),
                    partial(&parsed)
                ),
                fix: hint(&plan),
            });
        }
        Some(_) => {}
    }
    let parsed = parsed.map_err(|e| BenchError::Environment {
        what: format!(
            "the MPI benchmark's output is unusable: {e}\n{}",
            launch::tail(&fin.stdout, 8)
        ),
        fix: hint(&plan),
    })?;
    if !parsed.complete {
        return Err(BenchError::Environment {
            what: format!(
                "the MPI benchmark stopped before its end line although the launcher exited with success{}",
                partial(&Ok(parsed.clone()))
            ),
            fix: hint(&plan),
        });
    }
    Ok(analyse(&parsed, cfg, &plan, command, fin.seconds))
}

/// Parses a list of message sizes given by option `flag` (`0,1,1k,64k,4m`; `0` allowed).
pub fn parse_sizes(flag: &str, s: &str) -> Result<Vec<u64>, BenchError> {
    let mut v = Vec::new();
    for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let n = if p.trim_end_matches(['B', 'b']) == "0" {
            0
        } else {
            crate::units::parse_size(p).map_err(|e| {
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

/// One message size given by option `flag`, `default` when it is not given.
pub fn parse_one_size(flag: &str, s: Option<&str>, default: u64) -> Result<u64, BenchError> {
    match s {
        None => Ok(default),
        Some(s) => match parse_sizes(flag, s)?.as_slice() {
            [n] => Ok(*n),
            _ => Err(BenchError::bad_input(
                flag,
                "takes one size",
                "give one size such as 1k",
            )),
        },
    }
}

/// Parses `--benchmarks` (`pingpong,allreduce`): each once, in the benchmarks' order.
pub fn parse_benchmarks(list: &str) -> Result<Vec<Benchmark>, BenchError> {
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
    Ok(v)
}

/// Checks that a run asked for the network link (`--update`, a TOML output) measures the
/// PingPong, which the link is fitted on.
pub fn check_link_wanted(cfg: &MpiConfig) -> Result<(), BenchError> {
    if cfg.benchmarks.contains(&Benchmark::PingPong) {
        return Ok(());
    }
    Err(BenchError::bad_input(
        "--benchmarks",
        "the network link is the PingPong fit, and pingpong is not in the list",
        "add pingpong to --benchmarks",
    ))
}

impl MpiReport {
    /// The machine file's network link, or why the PingPong times gave none.
    pub fn link(&self) -> Result<NetworkLink, BenchError> {
        self.network.clone().ok_or_else(|| {
            let why = self
                .benchmarks
                .iter()
                .find(|b| b.benchmark == Benchmark::PingPong)
                .and_then(|b| b.fit_error.clone())
                .unwrap_or_else(|| "the fitted latency is not positive".into());
            BenchError::Environment {
                what: format!("no network link: the PingPong times give no Hockney fit: {why}"),
                fix: "measure more sizes (the default 0 B .. 4 MiB), raise --repeat on a busy machine, or set --fit-min/--fit-max".into(),
            }
        })
    }
}

/// Checks the configuration before anything runs.
pub fn check(cfg: &MpiConfig) -> Result<(), BenchError> {
    if cfg.sizes.is_empty() {
        return Err(BenchError::bad_input(
            "--sizes",
            "no size",
            "give message sizes such as 0,1,1k,64k,4m",
        ));
    }
    if let Some(&big) = cfg.sizes.iter().find(|&&s| s > 1 << 30) {
        return Err(BenchError::bad_input(
            "--sizes",
            format!("{big} B is above the 1 GiB limit"),
            "give message sizes up to 1g",
        ));
    }
    if cfg.sizes.len() > 64 {
        return Err(BenchError::bad_input(
            "--sizes",
            format!("{} sizes, at most 64", cfg.sizes.len()),
            "give fewer sizes",
        ));
    }
    if cfg.benchmarks.is_empty() {
        return Err(BenchError::bad_input(
            "--benchmarks",
            "no benchmark",
            "give some of: pingpong, sendrecv, exchange, allreduce",
        ));
    }
    if cfg.ranks < 2 {
        return Err(BenchError::bad_input(
            "--np",
            format!("{} rank(s): the benchmarks need two", cfg.ranks),
            "give --np 2 or more",
        ));
    }
    if cfg.repeat == 0 {
        return Err(BenchError::bad_input("--repeat", "is 0", "give 1 or more"));
    }
    if cfg.fit_range.0 > cfg.fit_range.1 {
        return Err(BenchError::bad_input(
            "--fit-min",
            "is above --fit-max",
            "give --fit-min below --fit-max",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_core::Classify;

    const OUT: &str = "\
Warning: a banner line the launcher printed
hpcscope-mpi begin 1
hpcscope-mpi library Open MPI v4.1.4, package: Debian OpenMPI
hpcscope-mpi standard 3.1
hpcscope-mpi ranks 2
hpcscope-mpi host 0 node1
hpcscope-mpi host 1 node1
hpcscope-mpi row pingpong 0 1000 0.30 0.31 0.305
hpcscope-mpi row pingpong 1024 1000 0.60 0.61 0.6048
hpcscope-mpi row pingpong 1048576 40 210.0 210.0 210.0
hpcscope-mpi row sendrecv 1024 1000 1.0 1.024 1.012
hpcscope-mpi row allreduce 1024 1000 2.0 2.2 2.1
hpcscope-mpi end
";

    fn plan() -> launch::LaunchPlan {
        launch::LaunchPlan {
            argv: vec!["mpirun".into(), "-np".into(), "2".into()],
            flavour: launch::Flavour::OpenMpi,
            added: vec![],
        }
    }

    #[test]
    fn output_is_parsed_and_noise_ignored() {
        let p = parse_output(OUT).unwrap();
        assert!(p.complete);
        assert_eq!(p.ranks, 2);
        assert_eq!(p.hosts, ["node1", "node1"]);
        assert!(p.library.starts_with("Open MPI v4.1.4"));
        assert_eq!(p.rows.len(), 5);
        assert_eq!(
            p.rows[2],
            (Benchmark::PingPong, 1_048_576, 40, 210.0, 210.0, 210.0)
        );
    }

    #[test]
    fn malformed_output_names_the_line() {
        let e = parse_output("hpcscope-mpi begin 1\nhpcscope-mpi row pingpong 8 x 1 1 1\n")
            .unwrap_err();
        assert!(e.starts_with("line 2: bad repetitions"), "{e}");
        assert!(
            parse_output("nothing here\n")
                .unwrap_err()
                .contains("begin")
        );
        let e = parse_output("hpcscope-mpi row pingpong 8 1 1 1 1\n").unwrap_err();
        assert!(e.contains("before the 'begin'"), "{e}");
        // A crash after two rows: parsed, but not complete.
        let cut: String = OUT.lines().take(9).map(|l| format!("{l}\n")).collect();
        let p = parse_output(&cut).unwrap();
        assert!(!p.complete);
        assert_eq!(p.rows.len(), 2);
    }

    /// The report applies IMB's bandwidths and fits the PingPong rows: 0.3 µs + n / 5000
    /// B/µs gives back t0 = 0.3 µs and 5 GB/s.
    #[test]
    fn analysis_fits_and_builds_the_network_link() {
        let mut text = String::from(
            "hpcscope-mpi begin 1\nhpcscope-mpi library L\nhpcscope-mpi ranks 2\nhpcscope-mpi host 0 a\nhpcscope-mpi host 1 b\n",
        );
        for n in default_sizes() {
            let t = 0.3 + n as f64 / 5000.0;
            text.push_str(&format!("hpcscope-mpi row pingpong {n} 10 {t} {t} {t}\n"));
        }
        text.push_str("hpcscope-mpi end\n");
        let p = parse_output(&text).unwrap();
        let cfg = MpiConfig {
            pairs: Some(Placement::IntraNode),
            benchmarks: vec![Benchmark::PingPong],
            ..MpiConfig::default()
        };
        let r = analyse(&p, &cfg, &plan(), vec!["x".into()], 1.0);
        assert_eq!(r.placement, Placement::InterNode);
        assert!(
            r.notes[0].contains("--pairs asked for intra-node"),
            "{:?}",
            r.notes
        );
        let link = r.network.unwrap();
        assert_eq!(link.name, "mpi-inter-node");
        assert!((link.latency_us - 0.3).abs() < 1e-9);
        assert!((link.bandwidth_gbs - 5.0).abs() < 1e-9);
        assert!((link.n_half_bytes.unwrap() - 1500.0).abs() < 1e-6);
        assert_eq!(link.fit.unwrap().sizes_bytes.len(), 24);
        let row = &r.benchmarks[0].rows[23];
        assert_eq!(row.bytes, 1 << 22);
        // 4 MiB / (0.3 + 838.8608) µs = 4998.2 MB/s.
        let expect = 4_194_304.0 / (0.3 + 4_194_304.0 / 5000.0);
        assert!((row.mbytes_per_s.unwrap() - expect).abs() < 1e-9);
    }

    #[test]
    fn sendrecv_and_allreduce_rows_follow_their_conventions() {
        let p = parse_output(OUT).unwrap();
        let r = analyse(&p, &MpiConfig::default(), &plan(), vec![], 1.0);
        assert_eq!(r.placement, Placement::IntraNode);
        let sr = r
            .benchmarks
            .iter()
            .find(|b| b.benchmark == Benchmark::Sendrecv)
            .unwrap();
        // 2 x 1024 B / 1.024 µs = 2000 MB/s.
        assert!((sr.rows[0].mbytes_per_s.unwrap() - 2000.0).abs() < 1e-9);
        // One size: no fit, and the reason is kept.
        assert!(sr.fit.is_none() && sr.fit_error.as_ref().unwrap().contains("two distinct"));
        let ar = r
            .benchmarks
            .iter()
            .find(|b| b.benchmark == Benchmark::Allreduce)
            .unwrap();
        assert_eq!(ar.rows[0].mbytes_per_s, None);
        assert!(ar.fit.is_none() && ar.fit_error.is_none());
        // Exchange was asked for but not measured: no entry.
        assert!(
            r.benchmarks
                .iter()
                .all(|b| b.benchmark != Benchmark::Exchange)
        );
    }

    #[test]
    fn link_values_keep_four_significant_digits() {
        assert_eq!(round_sig(0.2999999999999998, 4), 0.3);
        assert_eq!(round_sig(16_562.37, 4), 16_560.0);
        assert_eq!(round_sig(5.551e-16, 3), 5.55e-16);
        assert_eq!(round_sig(0.0, 4), 0.0);
    }

    #[test]
    fn bad_configurations_are_input_errors() {
        for cfg in [
            MpiConfig {
                sizes: vec![],
                ..MpiConfig::default()
            },
            MpiConfig {
                sizes: vec![2 << 30],
                ..MpiConfig::default()
            },
            MpiConfig {
                benchmarks: vec![],
                ..MpiConfig::default()
            },
            MpiConfig {
                ranks: 1,
                ..MpiConfig::default()
            },
            MpiConfig {
                repeat: 0,
                ..MpiConfig::default()
            },
            MpiConfig {
                fit_range: (10, 1),
                ..MpiConfig::default()
            },
        ] {
            let e = check(&cfg).unwrap_err();
            assert_eq!(e.kind().exit_code(), 2, "{e}");
        }
        let args = MpiConfig {
            quick: true,
            ..MpiConfig::default()
        }
        .program_args();
        assert_eq!(args[5], (4 * 1024 * 1024).to_string());
    }
}
