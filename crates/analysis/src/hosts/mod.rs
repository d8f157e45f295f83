//! Host records and projections checked across machines.
//!
//! A **host record** is a directory that describes one machine and what the bundled
//! workloads measured on it (format: `docs/hosts.md`):
//!
//! * `machine.toml`: the machine file of `hpcscope bench` on that host;
//! * `measurements.json`: per build key (`x86-64/cg@1`, `x86-64-v3/triad_omp@2`: build,
//!   workload, threads) the binary's SHA-256, its arguments, every timed run as the kernel's
//!   own result line gave it, the median and the spread; and a `host` object (CPU, kernel,
//!   compiler, when);
//! * optionally `bin/<build>/<workload>`: the binaries themselves.
//!
//! [`validate`] takes two or more records and, for every ordered pair of hosts (A -> B) and
//! every key both measured with the same binary (SHA-256) and the same arguments,
//! characterizes the binary once under `mix` with its caches simulated as A's and as B's
//! (one run for every host that has it), projects A's measurement onto B exactly as
//! `validate` projects one build onto another ([`project_with`], A's machine and median and
//! spread on the source side, B's machine and the profile on B's caches on the target side)
//! and checks the projection against B's measurement. Keys measured with two threads are
//! projected at node scope, the source being A's whole node (as `validate`'s SSE2 <-> AVX2
//! node pairs are, [`crate::node_validate::node_projection`], but with the ceilings at the
//! binary's own widths, as at core scope).
//!
//! [`record`] writes such a record of this host.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use hpcscope_core::point::Calibration;
use hpcscope_core::project::{Inputs, Options, Side, Spread, project_with};
use hpcscope_core::{Machine, Profile};
use hpcscope_mix::MixOptions;
use hpcscope_report::fmt::num;
use serde::{Deserialize, Serialize};

use crate::validate::{MethodSummary, PairResult, Summary, summary_of};
use crate::workloads::{Change, NODE_WORKLOADS, WORKLOADS};

mod format;
mod record;
mod view;
pub use format::*;
pub use record::*;
pub use view::*;

/// The builds a record holds: `-march` of `gcc -O3` (the directory name under `bin/`).
pub const BUILDS: &[&str] = &["x86-64", "x86-64-v3"];

/// The arguments every record runs each workload with (a run takes 0.2 to 0.5 s on the
/// recorded hosts): the demo's problem sizes with more repetitions.
pub const RECORD_ARGS: &[(&str, &[&str])] = &[
    ("triad", &["1000000", "300"]),
    ("stencil", &["1000", "500"]),
    ("gemm", &["300", "100"]),
    ("cg", &["100000", "400"]),
    ("edge", &["100000", "500"]),
    ("montecarlo", &["150000", "20"]),
    ("nbody", &["1000", "100"]),
    ("triad_omp", &["2000000", "150"]),
    ("stencil_omp", &["1000", "500"]),
    ("cg_omp", &["100000", "400"]),
    ("trmv_omp", &["2000", "300"]),
];

/// Which of a host's runs gives its measured rate.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Statistic {
    /// The fastest run.
    // The statistic of the machine files (`bench --statistic best`), the ruler of every
    // cross-machine projection, and the one least moved by other programs on a shared host.
    #[default]
    Best,
    /// The median of the runs.
    Median,
}

impl Statistic {
    /// `best` or `median`.
    pub fn name(self) -> &'static str {
        match self {
            Statistic::Best => "best",
            Statistic::Median => "median",
        }
    }
}

/// One binary to characterize: a key with the same binary and arguments on two or more
/// hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// `<build>/<workload>@<threads>`.
    pub key: String,
    /// The build (`x86-64`).
    pub build: String,
    /// The workload.
    pub workload: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Threads.
    pub threads: u32,
    /// SHA-256 of the binary.
    pub sha256: String,
    /// Indices of the records that measured it (two or more).
    pub hosts: Vec<usize>,
}

impl Planned {
    /// Every ordered pair of its hosts, as indices into the records.
    pub fn ordered_pairs(&self) -> Vec<(usize, usize)> {
        let h = &self.hosts;
        h.iter()
            .flat_map(|&a| h.iter().filter(move |&&b| b != a).map(move |&b| (a, b)))
            .collect()
    }
}

/// Checks that every workload asked for (`--workloads`) is one of `known`.
fn check_workloads(asked: &[String], known: &[&str]) -> Result<()> {
    match asked.iter().find(|w| !known.contains(&w.as_str())) {
        Some(w) => bail!(hpcscope_core::InputError::new(
            "--workloads",
            "",
            format!("no workload named '{w}'"),
            format!("choose among {}", known.join(", "))
        )),
        None => Ok(()),
    }
}

/// The keys to characterize (every key measured by two or more hosts with the same binary
/// and arguments; only `workloads` when not empty), and notes on what is left out and why.
pub fn plan(records: &[HostRecord], workloads: &[String]) -> Result<(Vec<Planned>, Vec<String>)> {
    let known: Vec<&str> = WORKLOADS
        .iter()
        .chain(NODE_WORKLOADS)
        .map(|w| w.name)
        .collect();
    check_workloads(workloads, &known)?;
    let mut keys: Vec<&String> = records
        .iter()
        .flat_map(|r| r.file.measurements.keys())
        .collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let mut alone = Vec::new();
    for k in keys {
        let have: Vec<(usize, &Measurement)> = records
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.file.measurements.get(k).map(|m| (i, m)))
            .collect();
        let m0 = have[0].1;
        if !workloads.is_empty() && !workloads.contains(&m0.workload) {
            continue;
        }
        if have.len() < 2 {
            alone.push(format!("{k} ({})", records[have[0].0].name));
            continue;
        }
        // Hosts grouped by the binary and arguments they measured.
        let mut groups: Vec<(&Measurement, Vec<usize>)> = Vec::new();
        for (i, m) in &have {
            match groups
                .iter_mut()
                .find(|(g, _)| g.sha256 == m.sha256 && g.args == m.args)
            {
                Some((_, v)) => v.push(*i),
                None => groups.push((m, vec![*i])),
            }
        }
        if groups.len() > 1 {
            let what: Vec<String> = groups
                .iter()
                .map(|(m, v)| {
                    format!(
                        "{} (sha256 {}, args {})",
                        v.iter()
                            .map(|i| records[*i].name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        &m.sha256[..12],
                        m.args.join(" ")
                    )
                })
                .collect();
            notes.push(format!(
                "{k}: the hosts measured different binaries or arguments, only hosts with the same are paired: {}",
                what.join("; ")
            ));
        }
        for (m, v) in groups {
            if v.len() < 2 {
                continue;
            }
            out.push(Planned {
                key: k.clone(),
                build: m.build.clone(),
                workload: m.workload.clone(),
                args: m.args.clone(),
                threads: m.threads,
                sha256: m.sha256.clone(),
                hosts: v,
            });
        }
    }
    if !alone.is_empty() {
        notes.push(format!(
            "measured on one host only, not paired: {}",
            alone.join(", ")
        ));
    }
    Ok((out, notes))
}

/// The binary of `p`: `bin/<build>/<workload>` of a record that has it, else built from the
/// bundled sources into `build_dir`; either way its SHA-256 must be the record's.
pub fn binary_for(p: &Planned, records: &[HostRecord], build_dir: &Path) -> Result<PathBuf> {
    for &i in &p.hosts {
        let b = records[i].dir.join("bin").join(&p.build).join(&p.workload);
        if b.is_file() {
            let sha = hpcscope_host::hash::sha256_file(&b)
                .with_context(|| format!("cannot read {}", b.display()))?;
            if sha != p.sha256 {
                bail!(hpcscope_core::InputError::new(
                    b.display().to_string(),
                    "",
                    format!(
                        "its sha256 is {sha}, not the {} measurements.json gives for {}",
                        p.sha256, p.key
                    ),
                    "put the binary that was measured there, or remove it to build one from the bundled sources"
                ));
            }
            return Ok(b);
        }
    }
    if !BUILDS.contains(&p.build.as_str()) {
        bail!(hpcscope_core::InputError::new(
            format!("{}/bin/{}", records[p.hosts[0]].dir.display(), p.build),
            "",
            format!(
                "no binary for {}, and build '{}' is not one hpcscope builds ({})",
                p.key,
                p.build,
                BUILDS.join(", ")
            ),
            "put the measured binaries in DIR/bin/<build>/<workload>"
        ));
    }
    let exe = crate::workloads::build_one(build_dir, &p.workload, &p.build)?;
    let sha = hpcscope_host::hash::sha256_file(&exe)
        .with_context(|| format!("cannot read {}", exe.display()))?;
    if sha != p.sha256 {
        let compilers: Vec<String> = p
            .hosts
            .iter()
            .map(|&i| {
                format!(
                    "{}: {}",
                    records[i].name,
                    records[i]
                        .file
                        .host
                        .compiler
                        .as_deref()
                        .unwrap_or("unknown")
                )
            })
            .collect();
        bail!(hpcscope_core::Failure::environment(format!(
            "{}: the compiler differs: gcc here built {} with sha256 {sha}, the records measured {} ({}); the projection must characterize the binary that was measured\n  fix: run on a host with the records' compiler, or put the measured binary in {}/bin/{}/{}",
            p.key,
            exe.display(),
            p.sha256,
            compilers.join("; "),
            records[p.hosts[0]].dir.display(),
            p.build,
            p.workload
        )));
    }
    Ok(exe)
}

/// The function a workload's work is counted in.
fn region_of(workload: &str) -> String {
    if workload.ends_with("_omp") {
        format!("kernel_{workload}._omp_fn.0")
    } else {
        format!("kernel_{workload}")
    }
}

/// A binary characterized once for every host of its key.
#[derive(Debug, Clone)]
pub struct Characterization {
    /// The key.
    pub key: String,
    /// One profile per host of the key (the order of [`Planned::hosts`]).
    pub profiles: Vec<Profile>,
    /// Its FP instructions and bytes by width.
    pub widths: hpcscope_core::roofline::AccessWidths,
    /// Seconds the characterization took.
    pub seconds: f64,
}

/// Characterizes `bin` (the binary of `p`) under `mix`, its caches simulated as each of
/// `p`'s hosts' in one run.
pub fn characterize(
    p: &Planned,
    bin: &Path,
    records: &[HostRecord],
    sample: Option<hpcscope_mix::SampleSpec>,
) -> Result<Characterization> {
    let started = std::time::Instant::now();
    let r = hpcscope_mix::analyze(&MixOptions {
        run: hpcscope_mix::RunSpec {
            program: bin.to_path_buf(),
            args: p.args.clone(),
            functions: vec![region_of(&p.workload)],
            env: if p.workload.ends_with("_omp") {
                vec![
                    ("OMP_NUM_THREADS".into(), p.threads.to_string()),
                    ("OMP_PROC_BIND".into(), "true".into()),
                ]
            } else {
                Vec::new()
            },
            sample,
            ..Default::default()
        },
        machines: p
            .hosts
            .iter()
            .map(|&i| records[i].machine.clone())
            .collect(),
        application: Some(p.workload.clone()),
        ..Default::default()
    })
    .with_context(|| format!("characterizing {} ({})", p.key, bin.display()))?;
    let v = &r.variants[0];
    if v.partial {
        bail!(
            "{}: the characterization did not finish ({:?}): its counts are partial\n  fix: run again; see hpcscope mix {} {} for details",
            p.key,
            v.ending,
            bin.display(),
            p.args.join(" ")
        );
    }
    Ok(Characterization {
        key: p.key.clone(),
        profiles: v.profiles.clone(),
        widths: crate::validate::access_widths(&r, 0),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// One cross-host pair: A's measurement projected onto B and checked against B's.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct HostPair {
    /// `<build>/<workload>@<threads>`.
    pub key: String,
    /// The build.
    pub build: String,
    /// The workload.
    pub workload: String,
    /// Threads of both runs.
    pub threads: u32,
    /// `core` (one thread) or `node` (several: projected at node scope).
    pub scope: String,
    /// Source host (record name).
    pub source: String,
    /// Target host.
    pub target: String,
    /// Measured change, target median / source median.
    pub measured_ratio: f64,
    /// The larger of the two hosts' spreads, (slowest - fastest) / median of their runs.
    pub spread: f64,
    /// Whether the measured change is larger than twice that spread.
    pub changed: bool,
    /// Whether both records are of the same kind of CPU (`model name`, family, model): a
    /// repeat, not another machine. Such pairs are summed up apart (`same CPU`) and left out
    /// of the cross-machine figures and targets.
    pub same_cpu: bool,
    /// Error of "no change" (the source's rate as the target's): source / target - 1.
    pub no_change_error: f64,
    /// The projection and its check, as `validate` reports a pair (`group` is the key,
    /// `source` and `target` the hosts).
    pub pair: PairResult,
}

/// Projects A's measurement of `p` onto B (`a`, `b`: positions in `p.hosts`).
pub fn project_pair(
    p: &Planned,
    c: &Characterization,
    records: &[HostRecord],
    (a, b): (usize, usize),
    calibration: Option<&Calibration>,
    stat: Statistic,
) -> Result<HostPair> {
    let (ra, rb) = (&records[p.hosts[a]], &records[p.hosts[b]]);
    let (ma, mb) = (&ra.file.measurements[&p.key], &rb.file.measurements[&p.key]);
    let so = format!("{} on {}", p.key, ra.name);
    let to = format!("{} on {}", p.key, rb.name);
    let (sa, sb) = (ma.band_of(stat), mb.band_of(stat));
    let (ga, gb) = (ma.gflops(stat), mb.gflops(stat));
    // Each profile carries the time its rate comes from (the measured rate).
    let timed = |prof: &Profile, gflops: f64| -> Profile {
        let mut prof = prof.clone();
        let total: f64 = prof.regions[0].threads.iter().map(|t| t.flops).sum();
        for th in &mut prof.regions[0].threads {
            th.time_s = (gflops > 0.0 && total > 0.0).then(|| total / gflops / 1e9);
        }
        prof
    };
    let (pa, pb) = (timed(&c.profiles[a], ga), timed(&c.profiles[b], gb));
    let flops: f64 = pa.regions[0].threads.iter().map(|t| t.flops).sum();
    if !(flops.is_finite() && flops > 0.0) {
        bail!(
            "{}: mix counted no FLOP in {}, so its rate cannot be projected\n  fix: check that the binary is the bundled workload (hpcscope mix --function {} BIN ARGS)",
            p.key,
            region_of(&p.workload),
            region_of(&p.workload)
        );
    }
    let (ta, tb) = (
        pa.regions[0].thread_metrics(&so)?,
        pb.regions[0].thread_metrics(&to)?,
    );
    // Two threads: node scope, the source being A's whole node running the same threads
    // (validate's SSE2 <-> AVX2 node pairs), with the ceilings at the binary's own widths as
    // at core scope: across machines the peaks at the widest width differ where the
    // binary's do not (512-bit FMA on one host, 256-bit units on the other).
    let scope = if p.threads > 1 {
        hpcscope_core::roofline::Scope::Node
    } else {
        hpcscope_core::roofline::Scope::Core
    };
    let proj = project_with(
        Side {
            machine: &ra.machine,
            threads: &ta,
            origin: &so,
        },
        ga,
        Side {
            machine: &rb.machine,
            threads: &tb,
            origin: &to,
        },
        pa.precision,
        Options {
            scope,
            ..Options::default()
        },
        &Inputs {
            source_widths: Some(c.widths.clone()),
            target_widths: Some(c.widths.clone()),
            source_spread: sa,
            calibration,
            carried_time: true,
            instructions: pa.regions[0]
                .instructions()
                .zip(pb.regions[0].instructions()),
            drop_contradicted: false,
            target_precision: None,
        },
    )?;
    let mut pair = pair_of(p, (&ra.name, ma, ga), (&rb.name, mb, gb), proj, (sa, sb));
    pair.same_cpu = ra.file.host.same_cpu(&rb.file.host);
    Ok(pair)
}

/// The pair of projection `proj` of `source`'s measurement onto `target`'s.
fn pair_of(
    p: &Planned,
    (sname, ms, gs): (&str, &Measurement, f64),
    (tname, mt, gt): (&str, &Measurement, f64),
    proj: hpcscope_core::project::Projection,
    (ss, ts): (Option<Spread>, Option<Spread>),
) -> HostPair {
    let v = proj.validate(gt, ts);
    let kwack_inside_within_noise = proj.kwack_gflops.map(|k| {
        let (sl, sh) = ss.map_or((1.0, 1.0), |x| (x.low, x.high));
        let (tl, th) = ts.map_or((1.0, 1.0), |x| (x.low, x.high));
        k * sl <= gt * th * (1.0 + 1e-9) && gt * tl <= k * sh * (1.0 + 1e-9)
    });
    let ratio = gt / gs;
    let spread = ms.spread.max(mt.spread);
    HostPair {
        key: p.key.clone(),
        build: p.build.clone(),
        workload: p.workload.clone(),
        threads: p.threads,
        scope: if p.threads > 1 { "node" } else { "core" }.into(),
        source: sname.to_string(),
        target: tname.to_string(),
        measured_ratio: ratio,
        spread,
        changed: (ratio - 1.0).abs() > 2.0 * spread,
        same_cpu: false,
        no_change_error: gs / gt - 1.0,
        pair: PairResult {
            group: p.key.clone(),
            source: sname.to_string(),
            target: tname.to_string(),
            change: Change::Machine,
            calibration: false,
            widens: None,
            source_gflops: gs,
            measured_gflops: gt,
            // One binary on both hosts.
            flops_ratio: 1.0,
            interval: proj.interval,
            model_interval: proj.widening.map_or(proj.interval, |w| w.model_interval),
            point: proj.point.clone(),
            kwack_gflops: proj.kwack_gflops,
            validation: v,
            kwack_inside_within_noise,
            projection: proj,
        },
    }
}

/// "No change" as a method: the source's rate as the target's.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Serialize)]
pub struct NoChange {
    /// Pairs.
    pub pairs: usize,
    /// Median |source / target - 1|.
    pub median_error: f64,
    /// Largest |source / target - 1|.
    pub max_error: f64,
}

/// The figures of one set of pairs.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct Subset {
    /// What the set is (`all, 1 thread`, `amd -> intel, 2 threads`, `changed, 1 thread`).
    pub label: String,
    /// Source host, when the set is one direction.
    pub source: Option<String>,
    /// Target host, when the set is one direction.
    pub target: Option<String>,
    /// Threads of its pairs (None: all).
    pub threads: Option<u32>,
    /// Only the pairs whose measured change is larger than twice the runs' spread.
    pub changed_only: bool,
    /// Only pairs of two records of the same kind of CPU (repeats: how much two records of
    /// one kind differ, left out of every other set and of the targets).
    pub same_cpu: bool,
    /// The weighted projection and the Kwack baseline, as `validate` sums them up.
    pub summary: Summary,
    /// The "no change" baseline.
    pub no_change: NoChange,
    /// Pairs with a point estimate.
    pub point_pairs: usize,
}

/// One acceptance target and whether it is met.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// The set of pairs.
    pub subset: String,
    /// The target (`inside >= 80 %`).
    pub goal: String,
    /// The measured figure.
    pub value: f64,
    /// Whether it is met (false when there is no pair to judge).
    pub met: bool,
}

/// The summaries of a cross-host validation.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct HostsSummary {
    /// All pairs, per thread count, per direction and thread count, and the changed pairs.
    pub subsets: Vec<Subset>,
    /// The targets: at least 80 % inside, median width at most 1.4, median point error at
    /// most 10 %, and on the changed pairs a median point error at most half the Kwack
    /// baseline's.
    pub targets: Vec<Target>,
}

fn median(v: Vec<f64>) -> f64 {
    hpcscope_core::stats::median(&v).unwrap_or(0.0)
}

fn subset(
    label: String,
    v: &[&HostPair],
    source: Option<&str>,
    target: Option<&str>,
    threads: Option<u32>,
    changed_only: bool,
    same_cpu: bool,
) -> Subset {
    let pairs: Vec<&PairResult> = v.iter().map(|h| &h.pair).collect();
    let nc: Vec<f64> = v.iter().map(|h| h.no_change_error.abs()).collect();
    Subset {
        label,
        source: source.map(str::to_string),
        target: target.map(str::to_string),
        threads,
        changed_only,
        same_cpu,
        summary: summary_of(&pairs),
        no_change: NoChange {
            pairs: nc.len(),
            max_error: nc.iter().copied().fold(0.0, f64::max),
            median_error: median(nc),
        },
        point_pairs: v.iter().filter(|h| h.pair.point.is_some()).count(),
    }
}

/// Sums up `pairs`: all, per thread count, per direction and thread count, changed pairs
/// per thread count; and the targets on all pairs and per thread count. Pairs of two
/// records of the same kind of CPU are summed up apart, per thread count (`same CPU`), and
/// left out of every other set and of the targets.
pub fn summarize(pairs: &[HostPair]) -> HostsSummary {
    let mut subsets = Vec::new();
    let repeats: Vec<&HostPair> = pairs.iter().filter(|p| p.same_cpu).collect();
    let pairs: Vec<&HostPair> = pairs.iter().filter(|p| !p.same_cpu).collect();
    let mut threads: Vec<u32> = pairs.iter().chain(&repeats).map(|p| p.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    let mut dirs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|p| (p.source.as_str(), p.target.as_str()))
        .collect();
    dirs.sort_unstable();
    dirs.dedup();
    let th = |t: u32| {
        if t == 1 {
            "1 thread".into()
        } else {
            format!("{t} threads")
        }
    };
    let repeat_sets = |subsets: &mut Vec<Subset>| {
        for &t in &threads {
            let v: Vec<&HostPair> = repeats.iter().copied().filter(|p| p.threads == t).collect();
            if !v.is_empty() {
                subsets.push(subset(
                    format!("same CPU (repeat records), {}", th(t)),
                    &v,
                    None,
                    None,
                    Some(t),
                    false,
                    true,
                ));
            }
        }
    };
    if pairs.is_empty() {
        repeat_sets(&mut subsets);
        return HostsSummary {
            subsets,
            targets: Vec::new(),
        };
    }
    subsets.push(subset(
        "all pairs".into(),
        &pairs,
        None,
        None,
        None,
        false,
        false,
    ));
    for &t in &threads {
        let v: Vec<&HostPair> = pairs.iter().copied().filter(|p| p.threads == t).collect();
        if !v.is_empty() {
            subsets.push(subset(
                format!("all, {}", th(t)),
                &v,
                None,
                None,
                Some(t),
                false,
                false,
            ));
        }
    }
    for &(s, d) in &dirs {
        for &t in &threads {
            let v: Vec<&HostPair> = pairs
                .iter()
                .copied()
                .filter(|p| p.threads == t && p.source == s && p.target == d)
                .collect();
            if !v.is_empty() {
                subsets.push(subset(
                    format!("{s} -> {d}, {}", th(t)),
                    &v,
                    Some(s),
                    Some(d),
                    Some(t),
                    false,
                    false,
                ));
            }
        }
    }
    for &t in &threads {
        let v: Vec<&HostPair> = pairs
            .iter()
            .copied()
            .filter(|p| p.threads == t && p.changed)
            .collect();
        if !v.is_empty() {
            subsets.push(subset(
                format!("changed, {}", th(t)),
                &v,
                None,
                None,
                Some(t),
                true,
                false,
            ));
        }
    }
    repeat_sets(&mut subsets);
    let mut targets = Vec::new();
    for s in subsets
        .iter()
        .filter(|s| s.source.is_none() && !s.changed_only && !s.same_cpu)
    {
        let w = &s.summary.weighted;
        targets.push(Target {
            subset: s.label.clone(),
            goal: "inside >= 80 %".into(),
            value: w.inside_fraction,
            met: w.pairs > 0 && w.inside_fraction >= 0.8,
        });
        targets.push(Target {
            subset: s.label.clone(),
            goal: "median width <= 1.4".into(),
            value: w.median_width,
            met: w.pairs > 0 && w.median_width <= 1.4,
        });
        let has_point = s.point_pairs > 0;
        targets.push(Target {
            subset: s.label.clone(),
            goal: "median point error <= 10 %".into(),
            value: w.median_point_error,
            met: w.pairs > 0 && has_point && w.median_point_error <= 0.10,
        });
    }
    for s in subsets.iter().filter(|s| s.changed_only) {
        let (w, k) = (&s.summary.weighted, &s.summary.kwack);
        targets.push(Target {
            subset: s.label.clone(),
            goal: "median point error <= half the Kwack baseline's".into(),
            value: w.median_point_error,
            met: s.point_pairs > 0
                && k.pairs > 0
                && w.median_point_error <= 0.5 * k.median_point_error,
        });
        targets.push(Target {
            subset: s.label.clone(),
            goal: "median point error <= half the no-change baseline's".into(),
            value: w.median_point_error,
            met: s.point_pairs > 0 && w.median_point_error <= 0.5 * s.no_change.median_error,
        });
    }
    HostsSummary { subsets, targets }
}

/// What `hosts validate` found.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct HostsValidation {
    /// The hosts: record name, machine id and name, CPU.
    pub hosts: Vec<HostSummaryLine>,
    /// Every pair.
    pub pairs: Vec<HostPair>,
    /// The summaries and targets.
    pub summary: HostsSummary,
    /// Remarks: keys left out and why, how node pairs are projected.
    pub notes: Vec<String>,
    /// Seconds the characterizations took.
    pub seconds: f64,
    /// Which run of each host gave its rate (`best`, `median`).
    pub statistic: Statistic,
}

/// A host of [`HostsValidation`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct HostSummaryLine {
    /// Record name.
    pub name: String,
    /// The machine file's name.
    pub machine: String,
    /// CPU model, family and model of the record.
    pub cpu: String,
    /// Keys measured.
    pub keys: usize,
}

/// Options of [`validate`].
#[derive(Debug, Clone, Default)]
pub struct ValidateOptions {
    /// Only these workloads (all when empty).
    pub workloads: Vec<String>,
    /// Only keys with these thread counts (all when empty).
    pub threads: Vec<u32>,
    /// Where binaries are built when a record has none.
    pub build_dir: PathBuf,
    /// The point-estimate rule and margin.
    pub calibration: Option<Calibration>,
    /// Simulate the caches sampled (`mix --sample`): faster, the bytes per level estimated.
    pub sample: Option<hpcscope_mix::SampleSpec>,
    /// Keep each characterization here and take it back when the binary, its arguments,
    /// threads, the hosts' machine files and the sampling are the same.
    pub cache_dir: Option<PathBuf>,
    /// Which run of each host gives its rate.
    pub statistic: Statistic,
}

/// A characterization as the cache keeps it.
#[derive(Serialize, Deserialize)]
struct Cached {
    profiles: Vec<Profile>,
    widths: hpcscope_core::roofline::AccessWidths,
    seconds: f64,
}

/// The cache file of `p`'s characterization for its hosts' machines.
fn cache_file(
    dir: &Path,
    p: &Planned,
    records: &[HostRecord],
    sample: Option<hpcscope_mix::SampleSpec>,
) -> PathBuf {
    let mut s = format!(
        "hosts {} counts-3\n{}\n{}\n{}\n{}\n{sample:?}\n",
        env!("CARGO_PKG_VERSION"),
        p.sha256,
        p.args.join(" "),
        p.threads,
        region_of(&p.workload)
    );
    for &i in &p.hosts {
        s.push_str(&records[i].machine.to_toml_string());
    }
    let h = hpcscope_host::hash::sha256_hex(s.as_bytes());
    dir.join(format!(
        "hosts-{}-{}.json",
        p.key.replace(['/', '@'], "-"),
        &h[..16]
    ))
}

/// [`characterize`], or its result kept in `cache_dir` by an earlier run.
fn characterize_cached(
    p: &Planned,
    bin: &Path,
    records: &[HostRecord],
    o: &ValidateOptions,
) -> Result<(Characterization, bool)> {
    let file = o
        .cache_dir
        .as_deref()
        .map(|d| cache_file(d, p, records, o.sample));
    if let Some(f) = &file
        && let Ok(text) = std::fs::read_to_string(f)
        && let Ok(c) = serde_json::from_str::<Cached>(&text)
        && c.profiles.len() == p.hosts.len()
    {
        return Ok((
            Characterization {
                key: p.key.clone(),
                profiles: c.profiles,
                widths: c.widths,
                seconds: c.seconds,
            },
            true,
        ));
    }
    let c = characterize(p, bin, records, o.sample)?;
    if let Some(f) = &file {
        let keep = Cached {
            profiles: c.profiles.clone(),
            widths: c.widths.clone(),
            seconds: c.seconds,
        };
        // A cache that cannot be written only costs the next run this characterization.
        let written = f.parent().map(std::fs::create_dir_all).transpose().is_ok()
            && serde_json::to_vec(&keep)
                .ok()
                .is_some_and(|b| hpcscope_core::fs::write_atomic(f, &b).is_ok());
        if !written {
            eprintln!(
                "note: could not keep the characterization in {}",
                f.display()
            );
        }
    }
    Ok((c, false))
}

/// Checks projections between every ordered pair of `records`.
pub fn validate(
    records: &[HostRecord],
    o: &ValidateOptions,
    progress: &dyn Fn(&str),
) -> Result<HostsValidation> {
    if records.len() < 2 {
        bail!(hpcscope_core::InputError::new(
            "hosts validate",
            "",
            format!("{} host record given", records.len()),
            "give two or more host directories (hpcscope hosts validate data/hosts/*)"
        ));
    }
    for (i, r) in records.iter().enumerate() {
        if let Some(o) = records[..i].iter().find(|o| o.name == r.name) {
            bail!(hpcscope_core::InputError::new(
                r.dir.display().to_string(),
                "",
                format!("has the same name as {}", o.dir.display()),
                "give each host record once, in directories of different names"
            ));
        }
    }
    let started = std::time::Instant::now();
    let (mut planned, mut notes) = plan(records, &o.workloads)?;
    if !o.threads.is_empty() {
        planned.retain(|p| o.threads.contains(&p.threads));
    }
    if planned.is_empty() {
        bail!(hpcscope_core::Failure::input(format!(
            "no key was measured by two of the hosts with the same binary and arguments{}",
            if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            }
        )));
    }
    let mut pairs = Vec::new();
    for (n, p) in planned.iter().enumerate() {
        let bin = binary_for(p, records, &o.build_dir)?;
        progress(&format!(
            "[{}/{}] {}: characterizing for {}",
            n + 1,
            planned.len(),
            p.key,
            p.hosts
                .iter()
                .map(|&i| records[i].name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let (c, cached) = characterize_cached(p, &bin, records, o)?;
        progress(&format!(
            "[{}/{}] {}: {:.1} s{}",
            n + 1,
            planned.len(),
            p.key,
            c.seconds,
            if cached {
                " (taken from the cache)"
            } else {
                ""
            }
        ));
        for (a, b) in p.ordered_pairs() {
            let pa = p.hosts.iter().position(|&h| h == a).unwrap_or(0);
            let pb = p.hosts.iter().position(|&h| h == b).unwrap_or(0);
            pairs.push(project_pair(
                p,
                &c,
                records,
                (pa, pb),
                o.calibration.as_ref(),
                o.statistic,
            )?);
        }
    }
    if pairs.iter().any(|p| p.threads > 1) {
        notes.push(
            "keys with several threads are projected at node scope: the source is the source host's whole node running the same threads (as validate's SSE2 <-> AVX2 node pairs), timed by the wall time of the kernel loop; the ceilings at the binary's own widths, as at core scope".into(),
        );
    }
    let mut same: Vec<String> = pairs
        .iter()
        .filter(|p| p.same_cpu && p.source < p.target)
        .map(|p| format!("{} and {}", p.source, p.target))
        .collect();
    same.sort();
    same.dedup();
    for s in same {
        notes.push(format!(
            "{s} were recorded on the same kind of CPU (model name, family and model): their pairs are repeats, not two machines; they are summed up apart (same CPU) and left out of the cross-machine figures and targets, and their no-change error is how much two records of one kind differ"
        ));
    }
    if let Some(sp) = o.sample {
        notes.push(format!(
            "the caches were simulated sampled (one set in {} of every level): each host's bytes per level are estimates",
            sp.period
        ));
    }
    let summary = summarize(&pairs);
    Ok(HostsValidation {
        hosts: records
            .iter()
            .map(|r| HostSummaryLine {
                name: r.name.clone(),
                machine: r.machine.name.clone(),
                cpu: format!(
                    "{} (family {}, model {})",
                    r.file.host.cpu_model,
                    r.file.host.family.as_deref().unwrap_or("?"),
                    r.file.host.model.as_deref().unwrap_or("?")
                ),
                keys: r.file.measurements.len(),
            })
            .collect(),
        pairs,
        summary,
        notes,
        seconds: started.elapsed().as_secs_f64(),
        statistic: o.statistic,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measurement of `key` timed by CPU time (one thread) or wall time, from `times`.
    fn meas(key: &str, sha: char, args: &[&str], times: &[f64]) -> Measurement {
        let (bw, threads) = key.split_once('@').unwrap();
        let (build, workload) = bw.split_once('/').unwrap();
        let threads: u32 = threads.parse().unwrap();
        let mut m = Measurement {
            build: build.into(),
            workload: workload.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            threads,
            sha256: sha.to_string().repeat(64),
            runs: times
                .iter()
                .map(|&t| Run {
                    flops: 6e8,
                    bytes: Some(7.2e9),
                    time_s: t,
                    cpu_s: (threads == 1).then_some(t),
                })
                .collect(),
            timed_by: String::new(),
            flops: 0.0,
            median_s: 0.0,
            spread: 0.0,
            gflops_median: 0.0,
        };
        finish(&mut m);
        m
    }

    fn record(name: &str, machine: &str, ms: Vec<Measurement>) -> HostRecord {
        HostRecord {
            name: name.into(),
            dir: PathBuf::from(format!("hosts/{name}")),
            machine: hpcscope_core::library::builtin(machine).unwrap(),
            file: MeasurementsFile {
                host: HostInfo {
                    cpu_model: name.into(),
                    ..HostInfo::default()
                },
                measurements: ms
                    .into_iter()
                    .map(|m| (key_of(&m.build, &m.workload, m.threads), m))
                    .collect(),
            },
        }
    }

    #[test]
    fn median_and_spread_are_measure_py_s() {
        // x86-64/triad@1 of the Intel Xeon record: median 0.25738 s, spread 3.0709 %.
        let cpu = [
            0.260886, 0.258207, 0.257664, 0.258596, 0.254817, 0.259097, 0.253684, 0.252982,
            0.25738, 0.257051, 0.254358,
        ];
        let m = meas("x86-64/triad@1", 'a', &["1000000", "300"], &cpu);
        assert_eq!(m.timed_by, "cpu_s");
        assert_eq!(m.median_s, 0.25738);
        assert!(
            (m.spread - 0.03070945683425294).abs() < 1e-15,
            "{}",
            m.spread
        );
        assert!((m.gflops_median - 2.3311834641386273).abs() < 1e-12);
        // OpenMP runs are timed by the wall time, even with one thread on their line.
        let mut o = meas("x86-64/triad_omp@2", 'b', &["1"], &[0.2, 0.1, 0.3, 0.1]);
        assert_eq!(o.timed_by, "time_s");
        assert!((o.median_s - 0.15).abs() < 1e-12, "{}", o.median_s);
        assert!((o.spread - 0.2 / 0.15).abs() < 1e-12);
        o.runs[0].cpu_s = Some(1.0);
        finish(&mut o);
        assert_eq!(o.timed_by, "time_s");
        let band = m.band().unwrap();
        assert!(
            band.low < 1.0 && band.high > 1.0 && band.runs == 11,
            "{band:?}"
        );
    }

    #[test]
    fn the_fastest_run_and_its_band() {
        let m = meas(
            "x86-64/triad@1",
            'a',
            &["1"],
            &[0.30, 0.25, 0.40, 0.26, 0.50],
        );
        let flops = m.runs[0].flops;
        // The median statistic is the median's, the best one the fastest run's.
        assert_eq!(m.gflops(Statistic::Median), m.gflops_median);
        let best = m.gflops(Statistic::Best);
        assert!((best - flops / 0.25 / 1e9).abs() < 1e-12, "{best}");
        assert_eq!(m.band_of(Statistic::Median), m.band());
        // The band: the gap to the second fastest run (0.26 s), both ways.
        let b = m.band_of(Statistic::Best).unwrap();
        let gap = 0.25 / 0.26;
        assert!(
            (b.low - gap).abs() < 1e-12 && (b.high - 1.0 / gap).abs() < 1e-12,
            "{b:?}"
        );
        assert!((b.min - 0.25 / 0.50).abs() < 1e-12 && b.max == 1.0 && b.runs == 5);
        // One run: no band, and the rate is still the run's.
        let one = meas("x86-64/triad@1", 'a', &["1"], &[0.25]);
        assert!(one.band_of(Statistic::Best).is_none());
        assert!((one.gflops(Statistic::Best) - flops / 0.25 / 1e9).abs() < 1e-12);
    }

    #[test]
    fn the_result_line_is_the_last_one() {
        let out = "triad n=1000000\nflops=6e8 bytes=7.2e9 time_s=0.26 cpu_s=0.25 check=1\n\n";
        let r = parse_result_line(out).unwrap();
        assert_eq!(
            (r.flops, r.bytes, r.time_s, r.cpu_s),
            (6e8, Some(7.2e9), 0.26, Some(0.25))
        );
        assert!(parse_result_line("flops=6e8 bytes=1\n").is_none());
        assert!(parse_result_line("flops=0 time_s=1\n").is_none());
        assert!(parse_result_line("").is_none());
    }

    #[test]
    fn keys_pair_on_the_same_binary_and_arguments_only() {
        let t = [0.2, 0.21, 0.19];
        let a = record(
            "a",
            "thunderx2",
            vec![
                meas("x86-64/triad@1", '1', &["10"], &t),
                meas("x86-64/cg@1", '2', &["10"], &t),
                meas("x86-64/edge@1", '3', &["10"], &t),
                meas("x86-64/gemm@1", '4', &["10"], &t),
            ],
        );
        let b = record(
            "b",
            "a64fx",
            vec![
                meas("x86-64/triad@1", '1', &["10"], &t),
                // Another compiler's binary, other arguments.
                meas("x86-64/cg@1", '9', &["10"], &t),
                meas("x86-64/edge@1", '3', &["20"], &t),
                meas("x86-64-v3/triad@1", '5', &["10"], &t),
            ],
        );
        let c = record(
            "c",
            "thunderx2",
            vec![meas("x86-64/triad@1", '1', &["10"], &t)],
        );
        let (p, notes) = plan(&[a.clone(), b.clone(), c], &[]).unwrap();
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(
            (p[0].key.as_str(), &p[0].hosts),
            ("x86-64/triad@1", &vec![0, 1, 2])
        );
        // Three hosts: every ordered pair.
        assert_eq!(
            p[0].ordered_pairs(),
            vec![(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
        );
        let all = notes.join("\n");
        assert!(
            all.contains("x86-64/cg@1: the hosts measured different binaries"),
            "{all}"
        );
        assert!(
            all.contains("x86-64/edge@1") && all.contains("args 20"),
            "{all}"
        );
        assert!(
            all.contains("one host only, not paired: x86-64-v3/triad@1 (b), x86-64/gemm@1 (a)"),
            "{all}"
        );
        // --workloads limits; an unknown name is refused with the known ones.
        let (p, _) = plan(&[a.clone(), b.clone()], &["cg".into()]).unwrap();
        assert!(p.is_empty());
        let e = plan(&[a, b], &["nope".into()]).unwrap_err().to_string();
        assert!(
            e.contains("no workload named 'nope'") && e.contains("triad_omp"),
            "{e}"
        );
    }

    #[test]
    fn a_record_is_checked_field_by_field() {
        let m = meas("x86-64/triad@1", 'a', &["1"], &[0.2, 0.3, 0.25]);
        let good = MeasurementsFile {
            host: HostInfo::default(),
            measurements: [("x86-64/triad@1".to_string(), m.clone())].into(),
        };
        let text = serde_json::to_string(&good).unwrap();
        let back = parse_measurements(&text, Path::new("m.json")).unwrap();
        assert_eq!(back, good);
        let mut wrong = good.clone();
        wrong.measurements.get_mut("x86-64/triad@1").unwrap().sha256 = "xyz".into();
        let e = parse_measurements(&serde_json::to_string(&wrong).unwrap(), Path::new("m.json"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("m.json") && e.contains("sha256") && e.contains("64 hex"),
            "{e}"
        );
        let mut moved = good.clone();
        let v = moved.measurements.remove("x86-64/triad@1").unwrap();
        moved.measurements.insert("x86-64/triad@2".into(), v);
        let e = parse_measurements(&serde_json::to_string(&moved).unwrap(), Path::new("m.json"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("does not match its entry (x86-64/triad@1)"),
            "{e}"
        );
    }

    /// Two hosts, one key: the example profile stands for the binary on both hosts' caches.
    fn projected(ta: &[f64], tb: &[f64]) -> (Vec<HostPair>, HostsSummary) {
        let a = record(
            "tx2",
            "thunderx2",
            vec![meas("x86-64/triad@1", '1', &["10"], ta)],
        );
        let b = record(
            "a64fx",
            "a64fx",
            vec![meas("x86-64/triad@1", '1', &["10"], tb)],
        );
        let recs = [a, b];
        let (p, _) = plan(&recs, &[]).unwrap();
        let prof = hpcscope_core::load::profile(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/scenarios/tx2-source.json"
        )))
        .unwrap();
        let c = Characterization {
            key: p[0].key.clone(),
            profiles: vec![prof.clone(), prof],
            widths: hpcscope_core::roofline::AccessWidths::single(128, "test"),
            seconds: 0.0,
        };
        let cal = Calibration::bundled();
        let pairs: Vec<HostPair> = p[0]
            .ordered_pairs()
            .into_iter()
            .map(|(x, y)| {
                project_pair(&p[0], &c, &recs, (x, y), Some(&cal), Statistic::Median).unwrap()
            })
            .collect();
        let s = summarize(&pairs);
        (pairs, s)
    }

    #[test]
    fn a_pair_is_projected_from_one_host_onto_the_other_and_checked() {
        let ta = [0.30, 0.31, 0.29, 0.30, 0.305];
        let (pairs, _) = projected(&ta, &ta);
        assert_eq!(pairs.len(), 2);
        let (ab, ba) = (&pairs[0], &pairs[1]);
        assert_eq!((ab.source.as_str(), ab.target.as_str()), ("tx2", "a64fx"));
        assert_eq!((ba.source.as_str(), ba.target.as_str()), ("a64fx", "tx2"));
        assert_eq!(ab.scope, "core");
        // The same rate on both: no change, not "changed".
        assert_eq!(ab.measured_ratio, 1.0);
        assert!(!ab.changed && ab.no_change_error == 0.0);
        let r = &ab.pair;
        assert!(r.point.is_some() && r.kwack_gflops.is_some());
        // A measurement half as fast again as the interval's top: outside, below it.
        let hi = r.interval.hi / r.source_gflops;
        let tb: Vec<f64> = ta.iter().map(|t| t / (hi * 1.5)).collect();
        let (pairs, _) = projected(&ta, &tb);
        let v = &pairs[0].pair.validation;
        assert!(
            !v.inside_within_noise && v.error_within_noise < 0.0,
            "{v:?}"
        );
        assert!(pairs[0].changed);
        // The measurement as the projection expects it: inside, and "changed".
        let mid = (r.interval.lo * r.interval.hi).sqrt() / r.source_gflops;
        let tb: Vec<f64> = ta.iter().map(|t| t / mid).collect();
        let (pairs, s) = projected(&ta, &tb);
        let ab = &pairs[0];
        assert!(
            ab.pair.validation.inside_within_noise,
            "{:?}",
            ab.pair.validation
        );
        assert!(ab.changed && (ab.measured_ratio - mid).abs() < 1e-9);
        assert!((ab.no_change_error - (1.0 / mid - 1.0)).abs() < 1e-9);
        // Summaries: all, per thread count, per direction, and the changed pairs.
        let labels: Vec<&str> = s.subsets.iter().map(|x| x.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "all pairs",
                "all, 1 thread",
                "a64fx -> tx2, 1 thread",
                "tx2 -> a64fx, 1 thread",
                "changed, 1 thread"
            ]
        );
        let d = &s.subsets[3];
        assert_eq!(d.summary.weighted.inside_fraction, 1.0);
        assert_eq!(d.no_change.pairs, 1);
        assert!((d.no_change.median_error - (1.0 / mid - 1.0).abs()).abs() < 1e-9);
        assert_eq!(s.subsets[0].summary.weighted.pairs, 2);
        let inside = s
            .targets
            .iter()
            .find(|t| t.subset == "all pairs" && t.goal.starts_with("inside"))
            .unwrap();
        assert_eq!(inside.value, s.subsets[0].summary.weighted.inside_fraction);
        assert_eq!(inside.met, inside.value >= 0.8);
        assert!(s.targets.iter().any(|t| t.subset == "changed, 1 thread"));
        let t = text(&HostsValidation {
            hosts: Vec::new(),
            pairs: pairs.clone(),
            summary: s,
            notes: vec![],
            seconds: 0.0,
            statistic: Statistic::Median,
        });
        assert!(t.contains("tx2 -> a64fx") && t.contains("inside"), "{t}");
        assert!(!t.contains("NaN") && !t.contains("inf"), "{t}");
    }

    #[test]
    fn two_records_of_one_kind_of_cpu_are_repeats_summed_up_apart() {
        let zen3 = HostInfo {
            cpu_model: "AMD EPYC".into(),
            family: Some("25".into()),
            model: Some("1".into()),
            flags_avx512: Some(false),
            ..HostInfo::default()
        };
        let zen4 = HostInfo {
            model: Some("17".into()),
            flags_avx512: Some(true),
            ..zen3.clone()
        };
        assert!(zen3.same_cpu(&zen3.clone()) && !zen3.same_cpu(&zen4));
        // Without family and model nothing says they are one kind.
        let bare = HostInfo {
            cpu_model: "AMD EPYC".into(),
            ..HostInfo::default()
        };
        assert!(!bare.same_cpu(&bare.clone()));

        let ta = [0.30, 0.31, 0.29, 0.30, 0.305];
        let tb: Vec<f64> = ta.iter().map(|t| t * 1.1).collect();
        let (mut pairs, before) = projected(&ta, &tb);
        // Marked as one kind of CPU: no cross-machine set and no target, only the repeats'.
        for p in &mut pairs {
            p.same_cpu = true;
        }
        let s = summarize(&pairs);
        let labels: Vec<&str> = s.subsets.iter().map(|x| x.label.as_str()).collect();
        assert_eq!(labels, ["same CPU (repeat records), 1 thread"]);
        assert!(s.subsets[0].same_cpu && s.targets.is_empty());
        assert_eq!(s.subsets[0].summary.weighted.pairs, 2);
        // The no-change error of the repeats: how much the two records differ.
        let nc = &s.subsets[0].no_change;
        assert!((nc.max_error - 0.1).abs() < 1e-9, "{nc:?}");
        // One pair a repeat, the other not: the repeat leaves every other set.
        pairs[1].same_cpu = false;
        let s = summarize(&pairs);
        assert_eq!(s.subsets[0].label, "all pairs");
        assert_eq!(s.subsets[0].summary.weighted.pairs, 1);
        assert!(s.targets.iter().all(|t| !t.subset.starts_with("same CPU")));
        assert_eq!(
            s.subsets
                .last()
                .map(|x| (x.label.as_str(), x.summary.weighted.pairs)),
            Some(("same CPU (repeat records), 1 thread", 1))
        );
        assert!(before.subsets.iter().all(|x| !x.same_cpu));
        let t = text(&HostsValidation {
            hosts: Vec::new(),
            pairs,
            summary: s,
            notes: vec![],
            seconds: 0.0,
            statistic: Statistic::Median,
        });
        assert!(t.contains(", same CPU"), "{t}");
    }

    #[test]
    fn no_pair_no_summary() {
        let s = summarize(&[]);
        assert!(s.subsets.is_empty() && s.targets.is_empty());
    }
}
