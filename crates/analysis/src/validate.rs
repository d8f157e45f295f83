//! The seeds' validation protocol on changes measurable on one machine: characterize each
//! build of a program, project every build of a pair onto the other on this machine, run
//! the other, and compare its measured performance with the projection (interval, point
//! estimate, and the Kwack baseline beside them).
//!
//! * The bundled protocol ([`bundled_groups`]): the reference workloads built six ways
//!   (gcc -O3 scalar, SSE2 and AVX2; clang -O3 SSE2 and AVX2; gcc -O2 AVX2), and a seventh
//!   where AVX-512 builds run (gcc -O3 AVX-512, counted by the native engine), 12 pairs per
//!   workload (16 with AVX-512): vector width, compiler, optimization level, each in both
//!   directions.
//! * A user's builds ([`user_group`]): `validate --build A --build B -- ARGS`, every ordered
//!   pair.
//!
//! Each build is timed by native runs interleaved with the other builds of its program (a
//! change of load on the machine then touches all of them), by CPU time: the bundled
//! workloads' own kernel-loop CPU time, or the whole program's user + system time, or a
//! function's time sampled by `mix`. The spread of the runs widens the projected interval
//! (source) and the measured value (target): see [`hpcscope_core::project::Spread`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use hpcscope_core::point::{Calibration, ChangeKind, PointEstimate, Sample, fit};
use hpcscope_core::project::{
    Inputs, Interval, Options, Projection, Side, Spread, Validation, project_with,
};
use hpcscope_core::roofline::AccessWidths;
use hpcscope_core::view::ValidationRow;
use hpcscope_core::{Machine, Profile};
use hpcscope_mix::{MixOptions, MixReport};
use hpcscope_report::fmt::num;
use hpcscope_report::{Section, html_table};
use serde::{Deserialize, Serialize};

use crate::workloads::{Change, PROTOCOL_BUILDS, PROTOCOL_PAIRS, Workload};

/// How the native runs of a build are timed.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Timer {
    /// The bundled workloads' own result line: the CPU time of their kernel loop (`cpu_s=`).
    KernelLine,
    /// The whole program's user + system CPU time.
    Process,
    /// The function's CPU time sampled by `mix` (median of its native runs; the spread is
    /// the one of those runs' wall times).
    Region,
}

impl std::fmt::Display for Timer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Timer::KernelLine => "CPU time of the kernel loop, from the program's own line",
            Timer::Process => "user + system CPU time of the whole program",
            Timer::Region => "CPU time in the function, sampled by mix",
        })
    }
}

/// One build to characterize and time.
#[derive(Debug, Clone)]
pub struct Build {
    /// Label (`gcc -O3 AVX2`, or the user's).
    pub label: String,
    /// The executable.
    pub path: PathBuf,
}

/// Builds of one program and the pairs to project between them.
#[derive(Debug, Clone)]
pub struct Group {
    /// The program (workload name).
    pub name: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Count (and time) only this function.
    pub function: Option<String>,
    /// Whether `function` is a scope: counted and timed with its callees (`mix --scope`).
    pub scope: bool,
    /// How its runs are timed.
    pub timer: Timer,
    /// The builds.
    pub builds: Vec<Build>,
    /// The pairs.
    pub pairs: Vec<PairSpec>,
}

/// One ordered pair: project `source` onto `target`.
#[derive(Debug, Clone, Copy)]
pub struct PairSpec {
    /// Index of the source build.
    pub source: usize,
    /// Index of the target build.
    pub target: usize,
    /// What the pair changes.
    pub change: Change,
    /// Whether the point estimate is fitted on this pair.
    pub calibration: bool,
    /// For a vector-width pair: whether the target build has the wider vectors.
    pub widens: Option<bool>,
}

/// A characterized and timed build.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Characterized {
    /// Program.
    pub group: String,
    /// Build label.
    pub label: String,
    /// Executable.
    pub path: String,
    /// Its profile on this machine's caches.
    pub profile: Profile,
    /// Its FP instructions and bytes by vector width.
    pub widths: AccessWidths,
    /// GFLOP/s of each timed run.
    pub runs_gflops: Vec<f64>,
    /// Median GFLOP/s.
    pub gflops: f64,
    /// Run-to-run spread.
    pub spread: Option<Spread>,
    /// How it was timed.
    pub timer: Timer,
}

/// One validated pair.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct PairResult {
    /// Program.
    pub group: String,
    /// Source build.
    pub source: String,
    /// Target build.
    pub target: String,
    /// What changes.
    pub change: Change,
    /// Whether the point estimate was fitted on this pair's kind.
    pub calibration: bool,
    /// For a vector-width pair: whether the target build has the wider vectors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widens: Option<bool>,
    /// Measured GFLOP/s of the source (median).
    pub source_gflops: f64,
    /// Measured GFLOP/s of the target (median).
    pub measured_gflops: f64,
    /// The target build's FLOPs over the source build's, as counted (1 for one binary):
    /// each build's GFLOP/s is its own FLOPs over its time, so where the builds' FLOPs
    /// differ, what changed is the time ([`PairResult::speedup`]).
    #[serde(default = "one")]
    pub flops_ratio: f64,
    /// The projected interval with the source's noise, GFLOP/s.
    pub interval: Interval,
    /// The model's interval, without noise.
    pub model_interval: Interval,
    /// The point estimate.
    pub point: Option<PointEstimate>,
    /// The Kwack baseline's value.
    pub kwack_gflops: Option<f64>,
    /// How the measurement compares.
    pub validation: Validation,
    /// Whether the Kwack value, widened by the source's noise, meets the measured range.
    pub kwack_inside_within_noise: Option<bool>,
    /// The full projection.
    pub projection: Projection,
}

fn one() -> f64 {
    1.0
}

impl PairResult {
    /// The measured speed-up, the source's time over the target's: the GFLOP/s ratio over
    /// the FLOPs ratio (equal to the GFLOP/s ratio when both builds do the same FLOPs).
    pub fn speedup(&self) -> f64 {
        let fr = if self.flops_ratio > 0.0 && self.flops_ratio.is_finite() {
            self.flops_ratio
        } else {
            1.0
        };
        self.measured_gflops / self.source_gflops / fr
    }

    /// The error of assuming the time does not change: that rate is the source's time
    /// spent on the target's FLOPs.
    pub fn no_change_error(&self) -> f64 {
        (1.0 / self.speedup() - 1.0).abs()
    }

    /// `gcc -O3 SSE2 -> gcc -O3 AVX2`.
    pub fn pair(&self) -> String {
        format!("{} -> {}", self.source, self.target)
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct ProtocolOptions {
    /// Timed native runs per build.
    pub runs: u32,
    /// The point-estimate rule.
    pub calibration: Option<Calibration>,
}

/// Everything the protocol measured.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct Protocol {
    /// Every build.
    pub builds: Vec<Characterized>,
    /// Every pair.
    pub pairs: Vec<PairResult>,
    /// Remarks.
    pub notes: Vec<String>,
}

/// The groups of the bundled protocol for workloads `ws`, from their builds
/// (`(recipe index, path)` per workload, as [`crate::workloads::build_protocol`] makes them).
pub fn bundled_groups(ws: &[&Workload], builds: &[Vec<(usize, PathBuf)>]) -> Vec<Group> {
    ws.iter()
        .zip(builds)
        .map(|(w, b)| {
            let idx = |recipe: usize| b.iter().position(|(r, _)| *r == recipe);
            let mut pairs = Vec::new();
            for &(x, y, change) in PROTOCOL_PAIRS {
                let (Some(i), Some(j)) = (idx(x), idx(y)) else {
                    continue;
                };
                // Whether y has the wider vectors (vector-width pairs only).
                let y_wider = match (recipe_bits(x), recipe_bits(y)) {
                    (Some(a), Some(b)) if change == Change::VectorWidth => Some(b > a),
                    _ => None,
                };
                for (s, t, widens) in [(i, j, y_wider), (j, i, y_wider.map(|w| !w))] {
                    pairs.push(PairSpec {
                        source: s,
                        target: t,
                        change,
                        calibration: change == Change::VectorWidth,
                        widens,
                    });
                }
            }
            Group {
                name: w.name.to_string(),
                args: w.args.iter().map(|s| s.to_string()).collect(),
                function: Some(format!("kernel_{}", w.name)),
                scope: false,
                timer: Timer::KernelLine,
                builds: b
                    .iter()
                    .map(|(r, p)| Build {
                        label: PROTOCOL_BUILDS[*r].label.to_string(),
                        path: p.clone(),
                    })
                    .collect(),
                pairs,
            }
        })
        .collect()
}

/// The widest vectors of a gcc -O3 recipe of the vector-width pairs, in bits.
fn recipe_bits(recipe: usize) -> Option<u32> {
    match recipe {
        0 => Some(64),
        1 => Some(128),
        2 => Some(256),
        crate::workloads::AVX512_RECIPE => Some(512),
        _ => None,
    }
}

/// The protocol over a user's builds: every ordered pair.
pub fn user_group(
    builds: Vec<Build>,
    args: Vec<String>,
    function: Option<String>,
    scope: bool,
) -> Group {
    let n = builds.len();
    let pairs = (0..n)
        .flat_map(|s| (0..n).filter(move |t| *t != s).map(move |t| (s, t)))
        .map(|(source, target)| PairSpec {
            source,
            target,
            change: Change::Builds,
            calibration: false,
            widens: None,
        })
        .collect();
    let name = builds
        .first()
        .and_then(|b| b.path.file_name())
        .map_or("program".into(), |f| f.to_string_lossy().into_owned());
    Group {
        name,
        args,
        timer: if function.is_some() {
            Timer::Region
        } else {
            Timer::Process
        },
        function,
        scope,
        builds,
        pairs,
    }
}

/// `label=PATH` or `PATH` (labelled by its path) of `--build`.
pub fn parse_build(arg: &str) -> Result<Build> {
    let (label, path) = match arg.split_once('=') {
        Some((l, p)) if !l.is_empty() && !p.is_empty() => (l.to_string(), PathBuf::from(p)),
        _ => (arg.to_string(), PathBuf::from(arg)),
    };
    if !path.is_file() {
        bail!(
            "--build {arg}: {} is not a file\n  fix: give the path of an executable, optionally labelled: --build avx2=./app-avx2",
            path.display()
        );
    }
    Ok(Build {
        label,
        path: as_path(path),
    })
}

/// A build's path as a path to run: a bare name (`app`, a file in this directory, as
/// [`parse_build`] checked) becomes `./app`, which a process start does not look up on PATH.
fn as_path(p: PathBuf) -> PathBuf {
    if p.is_relative() && p.components().count() == 1 && p.parent() == Some(Path::new("")) {
        Path::new(".").join(p)
    } else {
        p
    }
}

/// How the bytes and FP instructions of variant `variant` of a characterization split by
/// width: the loads and stores mix counted by access width, when the plugin counted them.
/// Otherwise (output of an older plugin, or no byte with a width known from the encoding)
/// from the FP instructions by width, a loop's accesses taken at its arithmetic's width;
/// and without FP instructions, the profile's widest vector width.
pub fn access_widths(mix: &MixReport, variant: usize) -> AccessWidths {
    let v = &mix.variants[variant];
    if let Some(w) = hpcscope_mix::widths::access_widths(&v.counts.totals) {
        return w;
    }
    let t = &v.counts.totals;
    let counts = hpcscope_mix::widths::fp_instruction_widths(t);
    let all: f64 = counts.iter().map(|x| x.1).sum();
    AccessWidths::from_instructions(&counts, "FP instructions by width, counted by mix")
        .map(|w| {
            w.with_divider(&hpcscope_mix::widths::divider_widths(t), all)
                .with_chains(&hpcscope_mix::widths::chain_counts(t), all)
        })
        .unwrap_or_else(|| {
            let bits = v.profiles.first().map_or(64, |p| p.vector_bits);
            AccessWidths::single(
                bits,
                "the profile's vector width (no FP instruction counted)",
            )
        })
}

/// Characterizes and times every build of `g` on `m`.
pub fn characterize(
    m: &Machine,
    g: &Group,
    runs: u32,
    progress: &dyn Fn(&str),
) -> Result<Vec<Characterized>> {
    // Each build runs once natively first: a program that fails is reported with its own
    // output before anything is emulated (the run also warms the caches and the page cache).
    let mut first = Vec::new();
    for b in &g.builds {
        progress(&format!("{}: a native run of {}", g.name, b.label));
        let o = run_checked(&b.path, &g.args)
            .with_context(|| format!("{} ({}) before characterizing it", g.name, b.label))?;
        first.push(String::from_utf8_lossy(&o.stdout).into_owned());
    }
    // The timed runs of a bundled kernel last at least TIMED_RUN_S: its repetitions are
    // multiplied (the same sizes), and its rate is the characterized FLOPs scaled by the
    // kernel's own count of both runs.
    let timed = if g.timer == Timer::KernelLine {
        lengthened(&g.args, &first)
    } else {
        None
    };
    let timed_args = timed.as_ref().unwrap_or(&g.args);
    let mut mixes = Vec::new();
    for b in &g.builds {
        progress(&format!("{}: characterize {}", g.name, b.label));
        let r = hpcscope_mix::analyze(&MixOptions {
            run: hpcscope_mix::RunSpec {
                program: b.path.clone(),
                args: g.args.clone(),
                functions: g.function.iter().filter(|_| !g.scope).cloned().collect(),
                scope: g.function.iter().filter(|_| g.scope).cloned().collect(),
                ..Default::default()
            },
            machines: vec![m.clone()],
            native_runs: if g.timer == Timer::Region { runs } else { 0 },
            application: Some(g.name.clone()),
            ..Default::default()
        })
        .with_context(|| format!("characterizing {} ({})", b.label, b.path.display()))?;
        mixes.push(r);
    }
    let flops: Vec<f64> = mixes
        .iter()
        .map(|r| {
            r.variants[0].profiles[0].regions[0]
                .threads
                .iter()
                .map(|t| t.flops)
                .sum()
        })
        .collect();
    // Native runs, interleaved over the builds.
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); g.builds.len()];
    if g.timer != Timer::Region {
        progress(&format!(
            "{}: {runs} timed runs of each of {} builds{}",
            g.name,
            g.builds.len(),
            timed.as_ref().map_or(String::new(), |t| format!(
                " (arguments {}: at least {TIMED_RUN_S} s each)",
                t.join(" ")
            ))
        ));
        for _ in 0..runs {
            for (i, b) in g.builds.iter().enumerate() {
                let (t, line) = timed_run(&b.path, timed_args, g.timer)?;
                // Per characterized run: the kernel's own FLOPs of this run over the
                // first's.
                let scale = match &timed {
                    Some(_) => {
                        let now = kernel_value(&line, "flops");
                        let then = kernel_value(&first[i], "flops");
                        match (now, then) {
                            (Some(x), Some(y)) if x > 0.0 && y > 0.0 => x / y,
                            _ => bail!(
                                "{} ({}): no flops= in its kernel line, so its longer timed runs cannot be scaled ({})",
                                g.name,
                                b.label,
                                line.trim()
                            ),
                        }
                    }
                    None => 1.0,
                };
                times[i].push(t / scale);
            }
        }
    }
    let mut out = Vec::new();
    for (i, (b, r)) in g.builds.iter().zip(mixes).enumerate() {
        let mut profile = r.variants[0].profiles[0].clone();
        let (runs_gflops, gflops, spread) = if g.timer == Timer::Region {
            let t = profile.regions[0].threads[0].time_s;
            let Some(t) = t else {
                bail!(
                    "{} ({}): the function {} has no measured time (see the profile's notes: {})\n  fix: validate the whole program (leave out --function or --scope), or lengthen its run",
                    b.label,
                    b.path.display(),
                    g.function.as_deref().unwrap_or("?"),
                    profile.notes.join("; ")
                );
            };
            (
                Vec::new(),
                flops[i] / t / 1e9,
                Spread::from_times(&r.native_times_s),
            )
        } else {
            let rates: Vec<f64> = times[i].iter().map(|t| flops[i] / t / 1e9).collect();
            let med = hpcscope_core::stats::median(&rates).unwrap_or(0.0);
            // The profile carries the time its rate comes from.
            for th in &mut profile.regions[0].threads {
                th.time_s = (med > 0.0).then(|| flops[i] / med / 1e9);
            }
            let sp = Spread::from_rates(&rates);
            (rates, med, sp)
        };
        if !(gflops.is_finite() && gflops > 0.0) {
            bail!(
                "{} ({}): no FLOP counted{}, so its GFLOP/s is unknown\n  fix: validate builds that do floating-point work",
                b.label,
                b.path.display(),
                g.function
                    .as_deref()
                    .map(|f| format!(" in {f}"))
                    .unwrap_or_default()
            );
        }
        out.push(Characterized {
            group: g.name.clone(),
            label: b.label.clone(),
            path: b.path.display().to_string(),
            widths: access_widths(&r, 0),
            profile,
            runs_gflops,
            gflops,
            spread,
            timer: g.timer,
        });
    }
    Ok(out)
}

/// How long a timed run of a bundled kernel lasts at least, seconds: long enough that the
/// scheduler's and the clock's noise stay small beside it, where the characterized run may
/// be a few milliseconds.
pub const TIMED_RUN_S: f64 = 0.2;

/// The timed runs' arguments of a bundled kernel (`SIZE REPS`), when its first runs
/// (`first`: each build's output) are shorter than [`TIMED_RUN_S`].
fn lengthened(args: &[String], first: &[String]) -> Option<Vec<String>> {
    let shortest = first
        .iter()
        .filter_map(|o| kernel_value(o, "cpu_s"))
        .filter(|t| t.is_finite() && *t > 0.0)
        .fold(f64::INFINITY, f64::min);
    let reps: u64 = args.get(1)?.parse().ok()?;
    if !shortest.is_finite() || shortest >= TIMED_RUN_S || args.len() != 2 {
        return None;
    }
    let k = (TIMED_RUN_S / shortest).ceil().min(1000.0) as u64;
    (k > 1).then(|| vec![args[0].clone(), (reps * k).to_string()])
}

/// The value of `key=` in a kernel's result line.
fn kernel_value(out: &str, key: &str) -> Option<f64> {
    out.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse::<f64>().ok())
}

/// One native run of `program`: its time by `timer`, seconds, and its standard output.
fn timed_run(program: &Path, args: &[String], timer: Timer) -> Result<(f64, String)> {
    let (u0, s0) = children_cpu_s();
    let o = run_checked(program, args)?;
    let (u1, s1) = children_cpu_s();
    let t = match timer {
        Timer::KernelLine => {
            let out = String::from_utf8_lossy(&o.stdout);
            out.split_whitespace()
                .find_map(|kv| kv.strip_prefix("cpu_s="))
                .and_then(|v| v.parse::<f64>().ok())
                .with_context(|| {
                    format!(
                        "{}: no cpu_s= in its output ({})",
                        program.display(),
                        out.trim()
                    )
                })?
        }
        _ => (u1 - u0) + (s1 - s0),
    };
    if !(t.is_finite() && t > 0.0) {
        bail!(
            "{}: a run took {t} s of CPU time, too short to time\n  fix: give arguments that make it run for at least a few milliseconds",
            program.display()
        );
    }
    Ok((t, String::from_utf8_lossy(&o.stdout).into_owned()))
}

/// Runs `program` natively with `args` (no input, output captured); a failure is an error
/// that quotes the end of what it printed.
fn run_checked(program: &Path, args: &[String]) -> Result<std::process::Output> {
    let o = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .output()
        .with_context(|| format!("cannot run {}", program.display()))?;
    if !o.status.success() {
        bail!(
            "{} {} failed natively ({}): {}\n  fix: give the arguments it needs after `--`, and check that it runs on its own",
            program.display(),
            args.join(" "),
            o.status,
            output_tail(&o.stdout, &o.stderr)
        );
    }
    Ok(o)
}

/// The last lines of a failed program's standard output and error, said as such; "it
/// printed nothing" when both are empty.
fn output_tail(stdout: &[u8], stderr: &[u8]) -> String {
    const LINES: usize = 20;
    let tail = |b: &[u8]| {
        let s = String::from_utf8_lossy(b);
        let lines: Vec<&str> = s.trim_end().lines().collect();
        let skip = lines.len().saturating_sub(LINES);
        let mut t = lines[skip..].join("\n");
        if skip > 0 {
            t = format!("({skip} earlier lines left out)\n{t}");
        }
        hpcscope_report::text::escape_control(&t).into_owned()
    };
    let (out, err) = (tail(stdout), tail(stderr));
    match (out.trim().is_empty(), err.trim().is_empty()) {
        (true, true) => "it printed nothing".into(),
        (false, true) => format!("its standard output ends:\n{out}"),
        (true, false) => format!("its standard error ends:\n{err}"),
        (false, false) => {
            format!("its standard output ends:\n{out}\nits standard error ends:\n{err}")
        }
    }
}

fn children_cpu_s() -> (f64, f64) {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// Projects and checks the pairs of `g` from its characterized builds.
pub fn validate_pairs(
    m: &Machine,
    g: &Group,
    c: &[Characterized],
    model: Option<&Calibration>,
) -> Result<Vec<PairResult>> {
    let mut out = Vec::new();
    let flops =
        |c: &Characterized| -> f64 { c.profile.regions[0].threads.iter().map(|t| t.flops).sum() };
    for ps in &g.pairs {
        let (s, t) = (&c[ps.source], &c[ps.target]);
        let flops_ratio = match (flops(s), flops(t)) {
            (fs, ft) if fs > 0.0 && ft > 0.0 => ft / fs,
            _ => 1.0,
        };
        let so = format!("{} ({})", g.name, s.label);
        let to = format!("{} ({})", g.name, t.label);
        let mut p = project_with(
            Side {
                machine: m,
                threads: &s.profile.regions[0].thread_metrics(&so)?,
                origin: &so,
            },
            s.gflops,
            Side {
                machine: m,
                threads: &t.profile.regions[0].thread_metrics(&to)?,
                origin: &to,
            },
            s.profile.precision,
            Options::default(),
            &Inputs {
                source_widths: Some(s.widths.clone()),
                target_widths: Some(t.widths.clone()),
                source_spread: s.spread,
                calibration: model,
                carried_time: true,
                instructions: s.profile.regions[0]
                    .instructions()
                    .zip(t.profile.regions[0].instructions()),
                drop_contradicted: false,
                target_precision: Some(t.profile.precision),
            },
        )?;
        if let Some(c) = model {
            p.restate_change(c, ps.change.kind());
        }
        let v = p.validate(t.gflops, t.spread);
        let kwack_inside_within_noise = p.kwack_gflops.map(|k| {
            let (sl, sh) = s.spread.map_or((1.0, 1.0), |x| (x.low, x.high));
            let (tl, th) = t.spread.map_or((1.0, 1.0), |x| (x.low, x.high));
            k * sl <= t.gflops * th * (1.0 + 1e-9) && t.gflops * tl <= k * sh * (1.0 + 1e-9)
        });
        out.push(PairResult {
            group: g.name.clone(),
            source: s.label.clone(),
            target: t.label.clone(),
            change: ps.change,
            calibration: ps.calibration,
            widens: ps.widens,
            source_gflops: s.gflops,
            measured_gflops: t.gflops,
            flops_ratio,
            interval: p.interval,
            model_interval: p.widening.map_or(p.interval, |w| w.model_interval),
            point: p.point.clone(),
            kwack_gflops: p.kwack_gflops,
            validation: v,
            kwack_inside_within_noise,
            projection: p,
        });
    }
    Ok(out)
}

/// What a pair of a recorded validation.json names: its builds by label and its change.
#[derive(Deserialize)]
struct RecordedPair {
    group: String,
    source: String,
    target: String,
    change: Change,
    calibration: bool,
    widens: Option<bool>,
}

/// What [`replay`] reads of a recorded validation.json.
#[derive(Deserialize)]
struct Recorded {
    builds: Vec<Characterized>,
    machine: String,
    pairs: Vec<RecordedPair>,
}

/// A validation to project again: each program's group (its builds and pairs) with its
/// builds as they were characterized and timed, and the id of the machine it ran on.
#[derive(Debug)]
pub struct Replay {
    /// The source machine's id in the recorded file.
    pub machine: String,
    /// Per program: its pairs and its recorded builds.
    pub groups: Vec<(Group, Vec<Characterized>)>,
}

/// Reads a validation.json (`text`, from `origin`) to project its pairs again with the
/// current model: the builds' profiles, access widths, timed runs and spreads as recorded,
/// nothing built, emulated or timed.
pub fn replay(text: &str, origin: &str) -> Result<Replay> {
    let r: Recorded = serde_json::from_str(text).map_err(|e| {
        hpcscope_core::InputError::new(
            origin,
            "",
            format!("not a validation.json that `hpcscope validate` wrote: {e}"),
            "give the validation.json of an earlier `hpcscope validate -o DIR` run (DIR/validation.json)",
        )
    })?;
    // One group per program, in the order of its first build.
    let mut groups: Vec<(Group, Vec<Characterized>)> = Vec::new();
    for b in r.builds {
        let gi = match groups.iter().position(|(g, _)| g.name == b.group) {
            Some(i) => i,
            None => {
                let g = Group {
                    name: b.group.clone(),
                    args: Vec::new(),
                    function: None,
                    scope: false,
                    timer: b.timer,
                    builds: Vec::new(),
                    pairs: Vec::new(),
                };
                groups.push((g, Vec::new()));
                groups.len() - 1
            }
        };
        let (g, c) = &mut groups[gi];
        g.builds.push(Build {
            label: b.label.clone(),
            path: PathBuf::from(&b.path),
        });
        c.push(b);
    }
    for (k, p) in r.pairs.iter().enumerate() {
        let missing = |label: &str| {
            hpcscope_core::InputError::new(
                origin,
                format!("pairs[{k}]"),
                format!(
                    "the pair {} -> {} of {} names a build the file does not have ({label})",
                    p.source, p.target, p.group
                ),
                "give the validation.json as `hpcscope validate` wrote it",
            )
        };
        let Some((g, c)) = groups.iter_mut().find(|(g, _)| g.name == p.group) else {
            bail!(missing(&p.source));
        };
        let index = |label: &str| {
            c.iter()
                .position(|b| b.label == label)
                .ok_or_else(|| missing(label))
        };
        let (source, target) = (index(&p.source)?, index(&p.target)?);
        g.pairs.push(PairSpec {
            source,
            target,
            change: p.change,
            calibration: p.calibration,
            widens: p.widens,
        });
    }
    // Programs without pairs (none in a file `validate` wrote) are left out.
    groups.retain(|(g, _)| !g.pairs.is_empty());
    Ok(Replay {
        machine: r.machine,
        groups,
    })
}

/// Runs the protocol over `groups`.
pub fn run(
    m: &Machine,
    groups: &[Group],
    o: &ProtocolOptions,
    progress: &dyn Fn(&str),
) -> Result<Protocol> {
    let mut builds = Vec::new();
    let mut pairs = Vec::new();
    let mut notes = Vec::new();
    for g in groups {
        let c = characterize(m, g, o.runs, progress)?;
        pairs.extend(validate_pairs(m, g, &c, o.calibration.as_ref())?);
        for b in &c {
            if let Some(sp) = b.spread
                && sp.relative() > 0.10
            {
                notes.push(format!(
                    "{} ({}): its {} runs spread {:.0} % (fastest - slowest over the median): the machine was probably busy",
                    b.group,
                    b.label,
                    sp.runs,
                    sp.relative() * 100.0
                ));
            }
        }
        builds.extend(c);
    }
    Ok(Protocol {
        builds,
        pairs,
        notes,
    })
}

/// The figures of one method over a set of pairs.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MethodSummary {
    /// Pairs evaluated.
    pub pairs: usize,
    /// Fraction whose measurement (with the target's spread) meets the projection (with the
    /// source's spread).
    pub inside_fraction: f64,
    /// Fraction whose median measurement is inside the model's interval, without any noise.
    pub inside_fraction_without_noise: f64,
    /// Median width hi / lo of the projection as reported (noise included).
    pub median_width: f64,
    /// Median width hi / lo of the model's interval alone.
    pub median_model_width: f64,
    /// Median |geometric midpoint of the model's interval / measured - 1|.
    pub median_midpoint_error: f64,
    /// Median |point estimate / measured - 1|.
    pub median_point_error: f64,
    /// Largest distance between the projection and the measured range, relative to the
    /// measurement (0 when they meet).
    pub max_error: f64,
    /// Largest |point estimate / measured - 1|.
    pub max_point_error: f64,
}

/// The weighted method (interval and point estimate) beside the Kwack baseline.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Summary {
    /// The mix-weighted projection: its interval and its point estimate.
    pub weighted: MethodSummary,
    /// The Kwack et al. baseline: one value (width 1 before noise).
    pub kwack: MethodSummary,
}

/// The summary over all pairs and over the fitted and held-out subsets.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct ValidationSummary {
    /// Every pair.
    pub all: Summary,
    /// The pairs of the kind the point estimate was fitted on (bundled protocol).
    pub calibration: Option<Summary>,
    /// The other pairs: builds the point estimate was not fitted on.
    pub held_out: Option<Summary>,
    /// Per kind of change, in the protocol's order (only the kinds with pairs).
    #[serde(default)]
    pub by_change: Vec<ChangeSummary>,
    /// The pairs whose measured change is larger than twice the runs' spread (of the
    /// slower-spreading build: (fastest - slowest) / median).
    pub changed: Option<ChangedSummary>,
    /// The vector-width pairs where the wider build measured slower than the narrower one.
    pub wider_slower: Option<Summary>,
}

/// The pairs of one kind of change.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct ChangeSummary {
    /// The kind.
    pub change: Change,
    /// Its pairs' figures.
    pub summary: Summary,
}

/// The changed pairs, with the model's skill against the two baselines.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct ChangedSummary {
    /// Their figures.
    pub summary: Summary,
    /// Median |source / measured - 1|: the error of assuming nothing changes.
    pub no_change_error: f64,
    /// 1 - point error / Kwack error (medians): above 0.5 the point estimate is off by at
    /// most half the Kwack baseline's error; None without a Kwack error.
    pub skill_vs_kwack: Option<f64>,
    /// 1 - point error / no-change error (medians).
    pub skill_vs_no_change: Option<f64>,
}

/// Whether a pair's measured change (its speed-up: on time, whatever FLOPs each build
/// counts) is larger than twice its builds' run-to-run spread ((fastest - slowest) / median
/// of the noisier build; no spread known: any change).
pub fn is_changed(r: &PairResult) -> bool {
    let width = |sp: Option<Spread>| sp.map_or(0.0, |s| s.max - s.min);
    let spread =
        width(r.projection.widening.and_then(|w| w.source)).max(width(r.validation.spread));
    (r.speedup() - 1.0).abs() > 2.0 * spread
}

/// Whether a vector-width pair's wider build measured slower (took longer) than its
/// narrower one.
pub fn wider_is_slower(r: &PairResult) -> bool {
    match r.widens {
        Some(true) => r.speedup() < 1.0,
        Some(false) => r.speedup() > 1.0,
        None => false,
    }
}

fn median(v: Vec<f64>) -> f64 {
    hpcscope_core::stats::median(&v).unwrap_or(0.0)
}

fn max(v: impl Iterator<Item = f64>) -> f64 {
    v.filter(|x| x.is_finite()).fold(0.0, f64::max)
}

/// The figures of `v`.
pub fn summary_of(v: &[&PairResult]) -> Summary {
    let n = v.len();
    let frac = |k: usize| if n == 0 { 0.0 } else { k as f64 / n as f64 };
    let rel = |a: f64, m: f64| (a / m - 1.0).abs();
    let weighted = MethodSummary {
        pairs: n,
        inside_fraction: frac(
            v.iter()
                .filter(|r| r.validation.inside_within_noise)
                .count(),
        ),
        inside_fraction_without_noise: frac(
            v.iter()
                .filter(|r| r.model_interval.contains(r.measured_gflops))
                .count(),
        ),
        median_width: median(v.iter().map(|r| r.interval.hi / r.interval.lo).collect()),
        median_model_width: median(
            v.iter()
                .map(|r| r.model_interval.hi / r.model_interval.lo)
                .collect(),
        ),
        median_midpoint_error: median(
            v.iter()
                .map(|r| {
                    rel(
                        (r.model_interval.lo * r.model_interval.hi).sqrt(),
                        r.measured_gflops,
                    )
                })
                .collect(),
        ),
        median_point_error: median(
            v.iter()
                .filter_map(|r| r.point.as_ref().map(|p| rel(p.gflops, r.measured_gflops)))
                .collect(),
        ),
        max_error: max(v.iter().map(|r| r.validation.error_within_noise.abs())),
        max_point_error: max(v
            .iter()
            .filter_map(|r| r.point.as_ref().map(|p| rel(p.gflops, r.measured_gflops)))),
    };
    let kw: Vec<(&PairResult, f64)> = v
        .iter()
        .filter_map(|r| r.kwack_gflops.map(|k| (*r, k)))
        .collect();
    let kn = kw.len();
    let kfrac = |k: usize| if kn == 0 { 0.0 } else { k as f64 / kn as f64 };
    let band = |r: &PairResult| {
        r.projection
            .widening
            .and_then(|w| w.source)
            .map_or(1.0, |s| s.high / s.low)
    };
    let kwack = MethodSummary {
        pairs: kn,
        inside_fraction: kfrac(
            kw.iter()
                .filter(|(r, _)| r.kwack_inside_within_noise == Some(true))
                .count(),
        ),
        inside_fraction_without_noise: kfrac(
            kw.iter()
                .filter(|(r, k)| rel(*k, r.measured_gflops) <= 1e-9)
                .count(),
        ),
        median_width: median(kw.iter().map(|(r, _)| band(r)).collect()),
        median_model_width: 1.0,
        median_midpoint_error: median(kw.iter().map(|(r, k)| rel(*k, r.measured_gflops)).collect()),
        median_point_error: median(kw.iter().map(|(r, k)| rel(*k, r.measured_gflops)).collect()),
        max_error: max(kw.iter().map(|(r, k)| rel(*k, r.measured_gflops))),
        max_point_error: max(kw.iter().map(|(r, k)| rel(*k, r.measured_gflops))),
    };
    Summary { weighted, kwack }
}

/// Summarizes the pairs: all, and the fitted and held-out subsets when both exist.
pub fn summarize(v: &[PairResult]) -> ValidationSummary {
    let all: Vec<&PairResult> = v.iter().collect();
    let cal: Vec<&PairResult> = v.iter().filter(|r| r.calibration).collect();
    let held: Vec<&PairResult> = v.iter().filter(|r| !r.calibration).collect();
    let both = !cal.is_empty() && !held.is_empty();
    let mut kinds: Vec<Change> = Vec::new();
    for r in v {
        if !kinds.contains(&r.change) {
            kinds.push(r.change);
        }
    }
    let by_change = kinds
        .into_iter()
        .map(|change| ChangeSummary {
            change,
            summary: summary_of(&v.iter().filter(|r| r.change == change).collect::<Vec<_>>()),
        })
        .collect();
    let changed: Vec<&PairResult> = v.iter().filter(|r| is_changed(r)).collect();
    let slower: Vec<&PairResult> = v.iter().filter(|r| wider_is_slower(r)).collect();
    ValidationSummary {
        all: summary_of(&all),
        calibration: both.then(|| summary_of(&cal)),
        held_out: both.then(|| summary_of(&held)),
        by_change,
        changed: (!changed.is_empty()).then(|| {
            let summary = summary_of(&changed);
            let no_change_error = median(changed.iter().map(|r| r.no_change_error()).collect());
            let p = summary.weighted.median_point_error;
            let skill =
                |base: f64| (summary.weighted.pairs > 0 && base > 0.0).then(|| 1.0 - p / base);
            ChangedSummary {
                skill_vs_kwack: if summary.kwack.pairs > 0 {
                    skill(summary.kwack.median_point_error)
                } else {
                    None
                },
                skill_vs_no_change: skill(no_change_error),
                no_change_error,
                summary,
            }
        }),
        wider_slower: (!slower.is_empty()).then(|| summary_of(&slower)),
    }
}

/// The coverage the calibrated margin is fitted for.
pub const COVERAGE: f64 = 0.9;

/// Fits the calibration (point rule and interval margin) on the calibration pairs of `v`
/// (the vector-width pairs of the bundled protocol), then states the rule's error for each
/// other kind of change from the held-out pairs of that kind only. `None` without a
/// calibration pair.
pub fn calibrate(v: &[PairResult], provenance: &str) -> Option<Calibration> {
    fn sample(r: &PairResult) -> Sample<'_> {
        Sample {
            projection: &r.projection,
            source_spread: r.projection.widening.and_then(|w| w.source),
            measured_gflops: r.measured_gflops,
            measured_spread: r.validation.spread,
        }
    }
    let cal: Vec<&PairResult> = v.iter().filter(|r| r.calibration).collect();
    let samples: Vec<Sample<'_>> = cal.iter().map(|r| sample(r)).collect();
    let labels: Vec<String> = cal
        .iter()
        .map(|r| format!("{}: {}", r.group, r.pair()))
        .collect();
    let fitted = cal.first().map(|r| r.change.kind())?;
    // One fit states one kind's error: pairs of several kinds would blur it.
    if cal.iter().any(|r| r.change.kind() != fitted) {
        return None;
    }
    let mut c = fit(&samples, COVERAGE, &labels, provenance, fitted)?;
    for kind in ChangeKind::ALL.into_iter().filter(|k| *k != fitted) {
        let held: Vec<Sample<'_>> = v
            .iter()
            .filter(|r| !r.calibration && r.change.kind() == kind)
            .map(sample)
            .collect();
        c.measure_error(kind, &held);
    }
    Some(c)
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

/// One line per method of a summary.
fn summary_lines(title: &str, s: &Summary) -> String {
    let w = &s.weighted;
    let k = &s.kwack;
    format!(
        "{title}: {} pairs\n  weighted: {} inside (model alone {}), median width x{} (model x{}), midpoint error {}, point error {} (max {}), max distance {}\n  Kwack:    {} inside, median point error {} (max {})\n",
        w.pairs,
        pct(w.inside_fraction),
        pct(w.inside_fraction_without_noise),
        num(w.median_width, 3),
        num(w.median_model_width, 3),
        pct(w.median_midpoint_error),
        pct(w.median_point_error),
        pct(w.max_point_error),
        pct(w.max_error),
        pct(k.inside_fraction),
        pct(k.median_point_error),
        pct(k.max_point_error),
    )
}

/// ` (band -4.1/+5.3 %)`: the band of a median over its runs, or nothing without one.
pub(crate) fn band_text(sp: Option<Spread>) -> String {
    sp.map(|s| {
        format!(
            " (band {:+.1}/{:+.1} %)",
            (s.low - 1.0) * 100.0,
            (s.high - 1.0) * 100.0
        )
    })
    .unwrap_or_default()
}

/// What `validate` prints: one line per pair, then the summaries.
pub fn validation_text(v: &[PairResult], s: &ValidationSummary) -> String {
    let mut text = String::new();
    let gw = v.iter().map(|r| r.group.len()).max().unwrap_or(0);
    let pw = v.iter().map(|r| r.pair().len()).max().unwrap_or(0);
    for r in v {
        let spread = band_text;
        text.push_str(&format!(
            "{:<gw$}  {:<pw$}  projected [{}, {}]{} point {} Kwack {}, measured {}{} -> {}\n",
            r.group,
            r.pair(),
            num(r.interval.lo, 4),
            num(r.interval.hi, 4),
            spread(r.projection.widening.and_then(|w| w.source)),
            r.point.as_ref().map_or("-".into(), |p| num(p.gflops, 4)),
            r.kwack_gflops.map_or("-".into(), |k| num(k, 4)),
            num(r.measured_gflops, 4),
            spread(r.validation.spread),
            if r.validation.inside_within_noise {
                "inside".to_string()
            } else {
                format!(
                    "outside by {:+.1} %",
                    r.validation.error_within_noise * 100.0
                )
            }
        ));
    }
    // A node-only run (`--workloads` of OpenMP codes alone) has no core pairs to sum up.
    if !v.is_empty() {
        text.push_str(&summary_lines("all pairs", &s.all));
    }
    if let Some(c) = &s.calibration {
        text.push_str(&summary_lines(
            "pairs of the kind the point estimate was fitted on (vector width)",
            c,
        ));
    }
    if let Some(h) = &s.held_out {
        text.push_str(&summary_lines(
            "held-out pairs (compiler, optimization level, precision: builds the fit never saw)",
            h,
        ));
    }
    if s.by_change.len() > 1 {
        for c in &s.by_change {
            text.push_str(&summary_lines(&format!("{}", c.change), &c.summary));
        }
    }
    if let Some(c) = &s.changed {
        text.push_str(&summary_lines(
            "changed pairs (measured change above twice the runs' spread)",
            &c.summary,
        ));
        let skill = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.2}"));
        text.push_str(&format!(
            "  no change: median error {}; skill (1 - point error / baseline error): {} against Kwack (0.5 or more: at most half its error), {} against no change\n",
            pct(c.no_change_error),
            skill(c.skill_vs_kwack),
            skill(c.skill_vs_no_change),
        ));
    }
    if let Some(w) = &s.wider_slower {
        text.push_str(&summary_lines(
            "vector-width pairs where the wider build measured slower",
            w,
        ));
    }
    text
}

/// The validation as a report section: the table of pairs and the chart of intervals,
/// point estimates and measurements.
pub fn validation_section(v: &[PairResult], machine: &Machine) -> Section {
    let s = summarize(v);
    let rows: Vec<Vec<String>> = v
        .iter()
        .map(|r| {
            vec![
                r.group.clone(),
                r.pair(),
                num(r.source_gflops, 4),
                format!("[{}, {}]", num(r.interval.lo, 4), num(r.interval.hi, 4)),
                r.point.as_ref().map_or("-".into(), |p| num(p.gflops, 4)),
                r.kwack_gflops.map_or("-".into(), |k| num(k, 4)),
                num(r.measured_gflops, 4),
                if r.validation.inside_within_noise {
                    "inside".into()
                } else {
                    format!("{:+.1} %", r.validation.error_within_noise * 100.0)
                },
            ]
        })
        .collect();
    let mut groups: Vec<&str> = Vec::new();
    for r in v {
        if !groups.contains(&r.group.as_str()) {
            groups.push(&r.group);
        }
    }
    let svgs = groups
        .iter()
        .map(|g| {
            let rows: Vec<ValidationRow> = v
                .iter()
                .filter(|r| r.group == *g)
                .map(|r| ValidationRow {
                    label: r.pair(),
                    lo: r.interval.lo,
                    hi: r.interval.hi,
                    measured: r.measured_gflops,
                    point: r.point.as_ref().map(|p| p.gflops),
                })
                .collect();
            hpcscope_core::view::validation_svg(
                &rows,
                &format!("{g}: projected interval, point estimate and measured performance"),
            )
        })
        .collect();
    let w = &s.all.weighted;
    Section {
        title: "Validation: projection between builds, measured here".into(),
        summary: format!(
            "On {}, {} pairs: the measurement met the projected interval (both with their run-to-run spread) for {:.0} % of them; median width x{}; the point estimate was off by {:.1} % at the median ({:.1} % at most), the Kwack baseline by {:.1} % ({:.1} % at most).",
            machine.name,
            w.pairs,
            w.inside_fraction * 100.0,
            num(w.median_width, 3),
            w.median_point_error * 100.0,
            w.max_point_error * 100.0,
            s.all.kwack.median_point_error * 100.0,
            s.all.kwack.max_point_error * 100.0,
        ),
        body_html: html_table(
            &[
                "program",
                "pair",
                "source GFLOP/s",
                "projected GFLOP/s",
                "point GFLOP/s",
                "Kwack GFLOP/s",
                "measured GFLOP/s",
                "result",
            ],
            &rows,
        ),
        svgs,
    }
}

/// `validate`'s validation.json: what was measured, every pair and its verdict, the
/// summaries. Fields in the order the file has always had (alphabetical).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct ValidationFile {
    /// Every build, characterized and timed.
    pub builds: Vec<Characterized>,
    /// The calibration the intervals were made with.
    pub calibration: Calibration,
    /// The calibration `--calibrate` fitted on this run, if asked for.
    pub fitted_calibration: Option<Calibration>,
    /// Load average (1, 5, 15 min) after the runs, when the system gives it.
    pub load_average_after: Option<[f64; 3]>,
    /// Load average before the runs.
    pub load_average_before: Option<[f64; 3]>,
    /// Id of the source machine.
    pub machine: String,
    /// The node-scope pairs (bundled protocol only).
    pub node: NodeSection,
    /// Remarks: builds left out, fallbacks.
    pub notes: Vec<String>,
    /// Every pair projected and checked.
    pub pairs: Vec<PairResult>,
    /// Seconds the protocol took.
    pub seconds: f64,
    /// The summary over all pairs.
    pub summary: ValidationSummary,
}

/// The node section of [`ValidationFile`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct NodeSection {
    /// Each node pair.
    pub results: Vec<crate::node_validate::NodePair>,
    /// Their summary.
    pub summary: crate::node_validate::NodeSummary,
    /// Threads of the pairs (0 when the node section did not run).
    pub threads: u32,
    /// Warnings about the machine's node values.
    pub warnings: Vec<String>,
}

#[cfg(test)]
mod tests {
    /// A program that fails is reported with the end of its own output, before any build is
    /// emulated; one that prints nothing says so.
    #[test]
    fn a_failing_program_is_reported_with_its_output_before_emulation() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = |name: &str, body: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p
        };
        let ok = script("ok", "exit 0");
        let bad = script("bad", "echo 'usage: bad N'; echo 'N missing' >&2; exit 3");
        let quiet = script("quiet", "exit 1");
        let m = hpcscope_core::library::builtin("thunderx2").unwrap();
        let group = |b: &std::path::Path| Group {
            name: "w".into(),
            args: vec![],
            function: None,
            scope: false,
            timer: Timer::Process,
            builds: vec![
                Build {
                    label: "a".into(),
                    path: ok.clone(),
                },
                Build {
                    label: "b".into(),
                    path: b.to_path_buf(),
                },
            ],
            pairs: vec![],
        };
        let steps = std::cell::RefCell::new(Vec::new());
        let progress = |s: &str| steps.borrow_mut().push(s.to_string());
        let e = format!(
            "{:#}",
            characterize(&m, &group(&bad), 3, &progress).unwrap_err()
        );
        assert!(
            e.contains("w (b) before characterizing it")
                && e.contains("exit status: 3")
                && e.contains("usage: bad N")
                && e.contains("N missing"),
            "{e}"
        );
        assert!(
            !steps.borrow().iter().any(|s| s.contains("characterize")),
            "{:?}",
            steps.borrow()
        );
        let e = format!(
            "{:#}",
            characterize(&m, &group(&quiet), 3, &progress).unwrap_err()
        );
        assert!(e.contains("it printed nothing"), "{e}");
    }

    use super::*;
    use crate::workloads::{FLOAT_RECIPE, WORKLOADS};
    use hpcscope_core::AppMetrics;

    #[test]
    fn a_run_without_core_pairs_prints_no_empty_summary() {
        let text = validation_text(&[], &summarize(&[]));
        assert!(!text.contains("all pairs"), "{text}");
        assert!(!text.contains("x0"), "{text}");
    }

    #[test]
    fn the_bundled_protocol_has_eighteen_pairs_per_workload_with_a_float_build() {
        let ws: Vec<&Workload> = WORKLOADS.iter().take(2).collect();
        let all: Vec<(usize, PathBuf)> = (0..PROTOCOL_BUILDS.len())
            .map(|i| (i, PathBuf::from(format!("b{i}"))))
            .collect();
        let groups = bundled_groups(&ws, &[all.clone(), all.clone()]);
        assert_eq!(groups.len(), 2);
        for g in &groups {
            assert_eq!(g.pairs.len(), 18);
            assert_eq!(g.pairs.iter().filter(|p| p.calibration).count(), 10);
            // The float build against the AVX2 one, both ways.
            let precision: Vec<(usize, usize)> = g
                .pairs
                .iter()
                .filter(|p| p.change == Change::Precision)
                .map(|p| (p.source, p.target))
                .collect();
            assert_eq!(precision, [(2, FLOAT_RECIPE), (FLOAT_RECIPE, 2)]);
            assert!(
                g.pairs
                    .iter()
                    .all(|p| p.calibration == (p.change == Change::VectorWidth))
            );
            assert_eq!(g.timer, Timer::KernelLine);
            assert_eq!(g.function.as_deref(), Some(&*format!("kernel_{}", g.name)));
        }
        // Without AVX-512 (no AVX-512 here, or no native engine) and float builds: 12.
        let no512: Vec<(usize, PathBuf)> = all[..6].to_vec();
        assert_eq!(bundled_groups(&ws[..1], &[no512])[0].pairs.len(), 12);
        // Without clang: its builds and their pairs are left out.
        let gcc: Vec<(usize, PathBuf)> = [0, 1, 2, 5]
            .iter()
            .map(|&i| (i, PathBuf::from(format!("b{i}"))))
            .collect();
        let g = &bundled_groups(&ws[..1], &[gcc])[0];
        assert_eq!(g.pairs.len(), 8);
        assert!(g.pairs.iter().all(|p| p.change != Change::Compiler));
    }

    #[test]
    fn your_builds_give_every_ordered_pair() {
        let b = |l: &str| Build {
            label: l.into(),
            path: PathBuf::from(format!("/bin/{l}")),
        };
        let g = user_group(vec![b("a"), b("b"), b("c")], vec!["1".into()], None, false);
        assert_eq!(g.pairs.len(), 6);
        assert!(
            g.pairs
                .iter()
                .all(|p| p.source != p.target && !p.calibration)
        );
        assert_eq!(g.timer, Timer::Process);
        let g = user_group(vec![b("a"), b("b")], vec![], Some("kernel".into()), false);
        assert_eq!(g.timer, Timer::Region);
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("app");
        std::fs::write(&f, "").unwrap();
        let p = parse_build(&format!("avx2={}", f.display())).unwrap();
        assert_eq!((p.label.as_str(), p.path.as_path()), ("avx2", f.as_path()));
        let p = parse_build(&f.display().to_string()).unwrap();
        assert_eq!(p.label, f.display().to_string());
        // A bare name is a file of this directory, run as such (not looked up on PATH).
        assert_eq!(as_path(PathBuf::from("app")), PathBuf::from("./app"));
        assert_eq!(as_path(PathBuf::from("b/app")), PathBuf::from("b/app"));
        assert_eq!(as_path(PathBuf::from("./app")), PathBuf::from("./app"));
        assert_eq!(
            as_path(PathBuf::from("/bin/true")),
            PathBuf::from("/bin/true")
        );
        let e = parse_build("x=/nonexistent/app").unwrap_err().to_string();
        assert!(
            e.contains("/nonexistent/app is not a file") && e.contains("fix:"),
            "{e}"
        );
    }

    /// A pair projected on ThunderX2 with the source measured at `source` GFLOP/s and the
    /// target at `measured`.
    fn pair(source: f64, measured: f64, calibration: bool) -> PairResult {
        let m = hpcscope_core::library::builtin("thunderx2").unwrap();
        let app = |fpi: f64| AppMetrics {
            flops: 1e10,
            fp_instructions: 1e10 / fpi,
            levels: vec!["L1".into(), "L2".into(), "L3".into(), "MM".into()],
            bytes: vec![1e10, 1e9, 0.0, 1e9],
            time_s: Some(1e10 / (source * 1e9)),
        };
        let (s, t) = ([app(2.0)], [app(4.0)]);
        let cal = Calibration::bundled();
        let p = project_with(
            Side {
                machine: &m,
                threads: &s,
                origin: "s",
            },
            source,
            Side {
                machine: &m,
                threads: &t,
                origin: "t",
            },
            hpcscope_core::Precision::F64,
            Options::default(),
            &Inputs {
                calibration: Some(&cal),
                carried_time: true,
                ..Inputs::default()
            },
        )
        .unwrap();
        let validation = p.validate(measured, None);
        PairResult {
            group: "w".into(),
            source: "a".into(),
            target: "b".into(),
            change: Change::VectorWidth,
            calibration,
            widens: Some(true),
            source_gflops: source,
            measured_gflops: measured,
            flops_ratio: 1.0,
            interval: p.interval,
            model_interval: p.widening.map_or(p.interval, |w| w.model_interval),
            point: p.point.clone(),
            kwack_gflops: p.kwack_gflops,
            kwack_inside_within_noise: p.kwack_gflops.map(|k| (k - measured).abs() < 1e-9),
            validation,
            projection: p,
        }
    }

    #[test]
    fn the_summary_puts_the_point_estimate_beside_the_kwack_baseline() {
        let inside = pair(1.0, 1.5, true);
        let (lo, hi) = (inside.interval.lo, inside.interval.hi);
        assert!(inside.validation.inside_within_noise, "[{lo}, {hi}]");
        let outside = pair(1.0, hi * 1.2, false);
        let v = vec![inside.clone(), outside.clone()];
        let s = summarize(&v);
        let w = &s.all.weighted;
        assert_eq!(w.pairs, 2);
        assert_eq!(w.inside_fraction, 0.5);
        assert!((w.max_error - 0.2 / 1.2).abs() < 1e-9, "{w:?}");
        let perr =
            |r: &PairResult| (r.point.as_ref().unwrap().gflops / r.measured_gflops - 1.0).abs();
        assert!((w.median_point_error - (perr(&inside) + perr(&outside)) / 2.0).abs() < 1e-12);
        let k = &s.all.kwack;
        let kerr = |r: &PairResult| (r.kwack_gflops.unwrap() / r.measured_gflops - 1.0).abs();
        assert!((k.median_point_error - (kerr(&inside) + kerr(&outside)) / 2.0).abs() < 1e-12);
        assert_eq!(k.median_model_width, 1.0);
        // Both kinds present: the fitted and held-out subsets are summarized apart.
        assert_eq!(s.calibration.unwrap().weighted.pairs, 1);
        assert_eq!(s.held_out.unwrap().weighted.inside_fraction, 0.0);
        // The fit sees the calibration pairs only.
        let c = calibrate(&v, "test").unwrap();
        assert_eq!(c.fitted_on, vec!["w: a -> b".to_string()]);
        assert_eq!(c.point.error.pairs, 1);
    }

    #[test]
    fn changed_pairs_kinds_and_wider_slower_pairs_are_summarized_apart() {
        // No spread known: any change is a change.
        let faster = pair(1.0, 1.5, true);
        let same = pair(1.0, 1.0, true);
        let mut slower = pair(2.0, 1.0, true);
        let mut float = pair(1.0, 1.8, false);
        float.change = Change::Precision;
        float.widens = None;
        assert!(is_changed(&faster) && is_changed(&slower) && !is_changed(&same));
        // The wider target measured slower; a narrower one measured faster is the same case.
        assert!(wider_is_slower(&slower) && !wider_is_slower(&faster));
        let mut narrower_faster = faster.clone();
        narrower_faster.widens = Some(false);
        assert!(wider_is_slower(&narrower_faster));
        assert!(!wider_is_slower(&float));
        let v = vec![faster.clone(), same, slower.clone(), float.clone()];
        let s = summarize(&v);
        let kinds: Vec<(Change, usize)> = s
            .by_change
            .iter()
            .map(|c| (c.change, c.summary.weighted.pairs))
            .collect();
        assert_eq!(kinds, [(Change::VectorWidth, 3), (Change::Precision, 1)]);
        let c = s.changed.as_ref().unwrap();
        assert_eq!(c.summary.weighted.pairs, 3);
        // No change is off by |source / measured - 1|: 1/3, 1 and 4/9; median 4/9.
        assert!((c.no_change_error - 4.0 / 9.0).abs() < 1e-12, "{c:?}");
        let skill = 1.0 - c.summary.weighted.median_point_error / c.no_change_error;
        assert!((c.skill_vs_no_change.unwrap() - skill).abs() < 1e-12);
        let ks = 1.0 - c.summary.weighted.median_point_error / c.summary.kwack.median_point_error;
        assert!((c.skill_vs_kwack.unwrap() - ks).abs() < 1e-12);
        assert_eq!(s.wider_slower.as_ref().unwrap().weighted.pairs, 1);
        let text = validation_text(&v, &s);
        for line in [
            "vector width: 3 pairs",
            "precision: 1 pairs",
            "changed pairs (measured change above twice the runs' spread): 3 pairs",
            "skill (1 - point error / baseline error)",
            "vector-width pairs where the wider build measured slower: 1 pairs",
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
        // A spread twice as wide as the change: not changed.
        slower.validation.spread = Some(Spread {
            runs: 5,
            min: 0.6,
            max: 1.4,
            low: 0.9,
            high: 1.1,
        });
        assert!(!is_changed(&slower));
    }

    #[test]
    fn builds_whose_flops_differ_are_compared_on_time() {
        // The target counts 1.25 times the source's FLOPs (an FMA contraction done twice, a
        // vectorized loop's extra lanes) at 1.25 times its GFLOP/s: the same time.
        let mut same_time = pair(2.0, 2.5, true);
        same_time.flops_ratio = 1.25;
        assert!((same_time.speedup() - 1.0).abs() < 1e-12);
        assert!(!is_changed(&same_time));
        assert!(same_time.no_change_error() < 1e-12);
        // Wider and 10 % higher GFLOP/s, but 25 % more FLOPs: it takes longer.
        let mut slower = pair(2.0, 2.2, true);
        slower.flops_ratio = 1.25;
        assert!(wider_is_slower(&slower) && is_changed(&slower));
        // Assuming no change in time: the target's FLOPs at the source's time, 2.5 GFLOP/s,
        // off by 2.5 / 2.2 - 1.
        assert!((slower.no_change_error() - (2.5 / 2.2 - 1.0)).abs() < 1e-12);
        let s = summarize(&[same_time, slower]);
        let c = s.changed.as_ref().unwrap();
        assert_eq!(c.summary.weighted.pairs, 1);
        assert_eq!(s.wider_slower.as_ref().unwrap().weighted.pairs, 1);
    }

    #[test]
    fn short_kernels_are_timed_over_more_repetitions() {
        let line = |cpu: f64| {
            format!(
                "kernel=triad n=1000 reps=10 flops=2e4 bytes=1 time_s={cpu} gflops=1 check=0 cpu_s={cpu}"
            )
        };
        let args = ["1000000".to_string(), "10".to_string()];
        // The shortest build (9 ms) sets the factor: ceil(0.2 / 0.009) = 23.
        let l = lengthened(&args, &[line(0.012), line(0.009)]).unwrap();
        assert_eq!(l, ["1000000", "230"]);
        // Long enough already, or not SIZE REPS: unchanged.
        assert_eq!(lengthened(&args, &[line(0.25)]), None);
        assert_eq!(lengthened(&args[..1], &[line(0.01)]), None);
        assert_eq!(lengthened(&["a".into(), "b".into()], &[line(0.01)]), None);
        assert_eq!(lengthened(&args, &["no kernel line".into()]), None);
        assert_eq!(kernel_value(&line(0.5), "flops"), Some(2e4));
        assert_eq!(kernel_value(&line(0.5), "cpu_s"), Some(0.5));
        assert_eq!(kernel_value("xflops=3", "flops"), None);
    }

    /// A replay projects a recorded validation's pairs again on its builds as recorded:
    /// the same intervals and points as the run that wrote it; a pair naming a build the
    /// file does not have is an input error at that pair.
    #[test]
    fn a_replay_projects_the_recorded_pairs_again() {
        let m = hpcscope_core::library::builtin("thunderx2").unwrap();
        let profile = Profile::from_json_str(
            include_str!("../../../examples/scenarios/tx2-source.json"),
            "tx2-source.json",
        )
        .unwrap();
        let widths = AccessWidths {
            parts: vec![hpcscope_core::roofline::WidthShare {
                vector_bits: 128,
                fraction: 1.0,
                instructions: 1.0,
                ..Default::default()
            }],
            from: "test".into(),
            chain_other: 0.0,
        };
        let build = |label: &str, runs: Vec<f64>| Characterized {
            group: "w".into(),
            label: label.into(),
            path: format!("/nowhere/{label}"),
            profile: profile.clone(),
            widths: widths.clone(),
            gflops: runs[runs.len() / 2],
            spread: hpcscope_core::project::Spread::from_rates(&runs),
            runs_gflops: runs,
            timer: Timer::KernelLine,
        };
        let c = vec![
            build("a", vec![1.9, 2.0, 2.1]),
            build("b", vec![2.3, 2.5, 2.6]),
        ];
        let g = Group {
            name: "w".into(),
            args: vec![],
            function: None,
            scope: false,
            timer: Timer::KernelLine,
            builds: vec![],
            pairs: vec![
                PairSpec {
                    source: 0,
                    target: 1,
                    change: Change::Compiler,
                    calibration: false,
                    widens: None,
                },
                PairSpec {
                    source: 1,
                    target: 0,
                    change: Change::VectorWidth,
                    calibration: true,
                    widens: Some(false),
                },
            ],
        };
        let cal = Calibration::bundled();
        let first = validate_pairs(&m, &g, &c, Some(&cal)).unwrap();
        let file = serde_json::json!({"builds": c, "machine": m.id, "pairs": first, "notes": []});
        let r = replay(&file.to_string(), "validation.json").unwrap();
        assert_eq!(r.machine, m.id);
        assert_eq!(r.groups.len(), 1);
        let (rg, rc) = &r.groups[0];
        assert_eq!(rg.pairs.len(), 2);
        assert_eq!((rg.pairs[1].source, rg.pairs[1].target), (1, 0));
        assert_eq!(rg.pairs[1].change, Change::VectorWidth);
        let again = validate_pairs(&m, rg, rc, Some(&cal)).unwrap();
        // Bit for bit: serde_json reads a float back exactly (`float_roundtrip`).
        for (a, b) in first.iter().zip(&again) {
            assert_eq!(
                (a.interval.lo, a.interval.hi),
                (b.interval.lo, b.interval.hi)
            );
            let (pa, pb) = (a.point.as_ref().unwrap(), b.point.as_ref().unwrap());
            assert_eq!(pa.gflops, pb.gflops, "{pa:?} {pb:?}");
            assert_eq!(a.validation.check.inside, b.validation.check.inside);
            assert_eq!(
                a.validation.inside_within_noise,
                b.validation.inside_within_noise
            );
            assert_eq!(a.measured_gflops, b.measured_gflops);
        }
        // A pair whose build is missing.
        let mut bad = file.clone();
        bad["pairs"][1]["target"] = "c".into();
        let e = replay(&bad.to_string(), "validation.json").unwrap_err();
        let ie = e
            .downcast_ref::<hpcscope_core::InputError>()
            .expect("an input error");
        assert_eq!(ie.field, "pairs[1]");
        assert!(ie.message.contains("(c)"), "{}", ie.message);
        // Not a validation.json.
        let e = replay("{\"pairs\": 3}", "x.json").unwrap_err();
        assert!(e.to_string().contains("not a validation.json"), "{e}");
    }
}
