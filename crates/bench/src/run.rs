//! Orchestration: what to measure, in which order, on which CPUs.
//!
//! Order: frequency, peak FLOP kernels, the working-set sweep (STREAM triad at the widest
//! width), plateau detection and level assignment, the kernel table (every kernel and
//! width at one size per level), latency, then thread scaling. Single-core work runs on
//! one thread pinned to the first selected CPU.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Barrier, Mutex};

use hpcscope_core::Precision;

use crate::error::BenchError;
use crate::flops::{self, FlopOp, FlopSpec, FlopState};
use crate::kernels::{ByteCount, Kernel, KernelSpec, Width, Workspace};
use crate::latency::Chase;
use crate::measure::{Timing, calls_per_second, scale};
use crate::plateau::{self, CacheCapacity, LevelEstimate, PlateauParams};
use crate::report::{
    self, Frequency, KernelResult, LatencyPoint, MachineNames, OpLatencyResult, PeakResult, Report,
    RunInfo, ScalingPoint, SweepPoint,
};
use crate::stats::{Statistic, Summary};
use crate::topology::{self, Isa, Topology};
use crate::units::format_bytes;

/// Which CPUs to use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CpuRequest {
    /// Every online CPU the process may use.
    #[default]
    All,
    /// The first `n` of them.
    Threads(usize),
    /// These CPUs.
    List(Vec<u32>),
}

impl CpuRequest {
    /// `threads` (the first n CPUs), else the CPU list `cpus` (`0-3,8`), else every CPU.
    pub fn of(threads: Option<usize>, cpus: Option<&str>) -> Result<CpuRequest, BenchError> {
        Ok(match (threads, cpus) {
            (Some(n), _) => CpuRequest::Threads(n),
            (None, Some(list)) => {
                CpuRequest::List(topology::parse_cpu_list(list).map_err(|e| {
                    BenchError::bad_input("--cpus", e, "give CPU numbers and ranges such as 0-3,8")
                })?)
            }
            (None, None) => CpuRequest::All,
        })
    }
}

/// The precisions of the peak kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Precisions {
    /// Double and single precision.
    #[default]
    All,
    /// Double precision only.
    F64,
    /// Single precision only.
    F32,
}

impl Precisions {
    /// The precisions measured.
    pub fn list(self) -> Vec<Precision> {
        match self {
            Precisions::All => vec![Precision::F64, Precision::F32],
            Precisions::F64 => vec![Precision::F64],
            Precisions::F32 => vec![Precision::F32],
        }
    }
}

/// Parses `--sizes` (`32k,1m,64m,1g`).
pub fn parse_sizes(s: &str) -> Result<Vec<u64>, BenchError> {
    crate::units::parse_size_list(s).map_err(|e| {
        BenchError::bad_input(
            "--sizes",
            e,
            "give sizes such as 32k,1m,64m,1g (k/m/g = KiB/MiB/GiB; kB/MB/GB = 1000-based)",
        )
    })
}

/// Parses `--widths` (`scalar,128,256,512`).
pub fn parse_widths(list: &str) -> Result<Vec<Width>, BenchError> {
    let mut v = Vec::new();
    for w in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        v.push(Width::from_name(w).ok_or_else(|| {
            BenchError::bad_input(
                "--widths",
                format!("unknown width '{w}'"),
                "give some of: scalar, 128, 256, 512",
            )
        })?);
    }
    Ok(v)
}

/// What to measure (`--kernels`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Bandwidth kernels of the kernel table (normal and non-temporal variants).
    pub bandwidth: Vec<Kernel>,
    /// Peak FLOP operations.
    pub ops: Vec<FlopOp>,
    /// Latency by pointer chasing.
    pub latency: bool,
    /// Thread scaling.
    pub scaling: bool,
    /// The blocked DGEMM (sustained peak of dense linear algebra).
    pub dgemm: bool,
}

/// Names accepted by `--kernels`.
pub const KERNEL_NAMES: &str = "load, store, copy, triad, triad4, daxpy (bandwidth), add, mul, fma (peak FLOP/s), div, sqrt (divider throughput), dgemm (blocked matrix product), latency, scaling, all";

impl Selection {
    /// Everything.
    pub fn all() -> Selection {
        Selection {
            bandwidth: Kernel::ALL.to_vec(),
            ops: FlopOp::ALL.to_vec(),
            latency: true,
            scaling: true,
            dgemm: true,
        }
    }

    /// Parses a comma-separated `--kernels` list.
    pub fn parse(list: &str) -> Result<Selection, BenchError> {
        let mut s = Selection {
            bandwidth: Vec::new(),
            ops: Vec::new(),
            latency: false,
            scaling: false,
            dgemm: false,
        };
        let mut any = false;
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            any = true;
            let lower = name.to_ascii_lowercase();
            if lower == "all" {
                return Ok(Selection::all());
            } else if let Some(k) = Kernel::from_name(&lower) {
                if !s.bandwidth.contains(&k) {
                    s.bandwidth.push(k);
                }
            } else if let Some(o) = FlopOp::from_name(&lower) {
                if !s.ops.contains(&o) {
                    s.ops.push(o);
                }
            } else if lower == "latency" {
                s.latency = true;
            } else if lower == "scaling" {
                s.scaling = true;
            } else if lower == "dgemm" {
                s.dgemm = true;
            } else {
                return Err(BenchError::UnknownKernel {
                    name: name.to_string(),
                    known: KERNEL_NAMES.into(),
                });
            }
        }
        if !any {
            return Err(BenchError::bad_input(
                "--kernels",
                "the list is empty",
                format!("give some of: {KERNEL_NAMES}"),
            ));
        }
        Ok(s)
    }
}

/// A benchmark run's settings.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// A few seconds instead of a few minutes: fewer sizes, widths and repetitions.
    pub quick: bool,
    /// What to measure.
    pub selection: Selection,
    /// Working-set sizes (total bytes of all arrays) replacing the default sweep.
    pub sizes: Option<Vec<u64>>,
    /// CPUs to use.
    pub cpus: CpuRequest,
    /// Timed repetitions per measurement (default 3 quick, 7 full).
    pub repeat: Option<usize>,
    /// Widths to measure (default all the CPU has).
    pub widths: Option<Vec<Width>>,
    /// Precisions of the peak kernels.
    pub precisions: Vec<Precision>,
    /// Machine id and name.
    pub names: MachineNames,
    /// Show a progress bar on stderr (only drawn on a terminal).
    pub progress: bool,
    /// Root of the sysfs tree (normally `/sys`).
    pub sysfs_root: PathBuf,
    /// ISA to assume instead of detecting it (tests: simulate a CPU without AVX-512).
    /// Only narrower than the real CPU is safe.
    pub isa: Option<Isa>,
    /// Relative spread above which a measurement is flagged.
    pub spread_warning: f64,
    /// Which repetition the machine file keeps: the median, or the best.
    pub statistic: Statistic,
    /// Time the single-core kernels by the thread's CPU time instead of the wall clock.
    pub cpu_clock: bool,
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            quick: false,
            selection: Selection::all(),
            sizes: None,
            cpus: CpuRequest::All,
            repeat: None,
            widths: None,
            precisions: vec![Precision::F64, Precision::F32],
            names: MachineNames::default(),
            progress: true,
            sysfs_root: PathBuf::from("/sys"),
            isa: None,
            spread_warning: 0.10,
            statistic: Statistic::Median,
            cpu_clock: false,
        }
    }
}

/// Resolves a CPU request against the online CPUs (and those the process may use).
pub fn resolve_cpus(
    req: &CpuRequest,
    online: &[u32],
    allowed: Option<&[u32]>,
) -> Result<Vec<u32>, BenchError> {
    let usable: Vec<u32> = online
        .iter()
        .copied()
        .filter(|c| allowed.is_none_or(|a| a.contains(c)))
        .collect();
    let list = topology::format_cpu_list(&usable);
    match req {
        CpuRequest::All => {
            if usable.is_empty() {
                Err(BenchError::Environment {
                    what: "no usable CPU found".into(),
                    fix: "check /sys/devices/system/cpu/online and the process's CPU affinity"
                        .into(),
                })
            } else {
                Ok(usable)
            }
        }
        CpuRequest::Threads(n) => {
            if *n == 0 {
                Err(BenchError::bad_input(
                    "--threads",
                    "0 threads requested",
                    format!("give 1 to {}", usable.len()),
                ))
            } else if *n > usable.len() {
                Err(BenchError::bad_input(
                    "--threads",
                    format!(
                        "{n} threads requested but only {} CPUs are usable ({list})",
                        usable.len()
                    ),
                    format!("give at most {} (one pinned thread per CPU)", usable.len()),
                ))
            } else {
                Ok(usable[..*n].to_vec())
            }
        }
        CpuRequest::List(cpus) => {
            let missing: Vec<u32> = cpus
                .iter()
                .copied()
                .filter(|c| !usable.contains(c))
                .collect();
            if missing.is_empty() {
                let mut v = cpus.clone();
                v.sort_unstable();
                v.dedup();
                Ok(v)
            } else {
                Err(BenchError::bad_input(
                    "--cpus",
                    format!(
                        "CPU(s) {} do not exist or may not be used; usable CPUs: {list}",
                        topology::format_cpu_list(&missing)
                    ),
                    format!("choose CPUs among {list}"),
                ))
            }
        }
    }
}

/// Checks working-set sizes against the available memory and the minimum a kernel needs.
pub fn check_sizes(sizes: &[u64], mem_available: Option<u64>) -> Result<(), BenchError> {
    for &s in sizes {
        if s < 2048 {
            return Err(BenchError::bad_input(
                "--sizes",
                format!("{s} B is too small"),
                "give sizes of at least 2 KiB (each array holds at least 64 f64)",
            ));
        }
        if let Some(avail) = mem_available
            && s > avail / 10 * 8
        {
            return Err(BenchError::bad_input(
                "--sizes",
                format!(
                    "{} is beyond the memory available for it ({} available, at most 80% is used)",
                    format_bytes(s),
                    format_bytes(avail)
                ),
                format!("give sizes up to {}", format_bytes(avail / 10 * 8)),
            ));
        }
    }
    Ok(())
}

/// Default sweep: `ppo` geometric points per octave from 16 KiB to the first point at or
/// beyond `4 x llc` (at least 256 MiB).
pub fn default_sweep_sizes(llc_bytes: u64, ppo: usize) -> Vec<u64> {
    let end = (4 * llc_bytes).max(256 << 20).div_ceil(512) * 512;
    let mut v = Vec::new();
    let mut i = 0;
    loop {
        let s = ((16384.0 * 2f64.powf(i as f64 / ppo.max(1) as f64) / 512.0).round() as u64) * 512;
        if s >= end {
            v.push(end);
            break;
        }
        v.push(s);
        i += 1;
    }
    v
}

/// Kernel-table entries to run and notes on those skipped.
pub fn plan_kernels(
    kernels: &[Kernel],
    widths: &[Width],
    isa: &Isa,
) -> (Vec<KernelSpec>, Vec<String>) {
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    for &k in kernels {
        for &w in widths {
            for nt in [false, true] {
                let spec = KernelSpec {
                    kernel: k,
                    width: w,
                    nt,
                };
                if nt && (!k.has_nt() || w == Width::Scalar) {
                    continue;
                }
                match spec.unsupported_reason(isa) {
                    None => run.push(spec),
                    Some(r) => skipped.push(format!("{}: {r}", spec.label())),
                }
            }
        }
    }
    (run, skipped)
}

/// Peak kernels to run and notes on those skipped.
pub fn plan_flops(
    ops: &[FlopOp],
    precisions: &[Precision],
    widths: &[Width],
    isa: &Isa,
) -> (Vec<FlopSpec>, Vec<String>) {
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    for &precision in precisions {
        for &op in ops {
            for &width in widths {
                let spec = FlopSpec {
                    op,
                    precision,
                    width,
                };
                match spec.unsupported_reason(isa) {
                    None => run.push(spec),
                    Some(r) => skipped.push(format!("{}: {r}", spec.label())),
                }
            }
        }
    }
    (run, skipped)
}

/// Progress on stderr; drawn only on a terminal.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new(enabled: bool) -> Progress {
        if !enabled || !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = indicatif::ProgressBar::new(1);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress { bar: Some(bar) }
    }
    fn add(&self, n: u64) {
        if let Some(b) = &self.bar {
            b.inc_length(n);
        }
    }
    fn step(&self, msg: String) {
        if let Some(b) = &self.bar {
            b.set_message(msg);
            b.inc(1);
        }
    }
    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Largest latency working set in quick mode.
const QUICK_LATENCY_MAX: u64 = 256 << 20;

/// Collected while measuring.
#[derive(Default)]
struct Notes {
    skipped: Vec<String>,
    warnings: Vec<String>,
    stages: Vec<(String, f64)>,
    clock: Option<std::time::Instant>,
}

impl Notes {
    /// Ends the current stage, naming it.
    fn stage(&mut self, name: &str) {
        let now = std::time::Instant::now();
        let start = self.clock.replace(now).unwrap_or(now);
        self.stages
            .push((name.to_string(), (now - start).as_secs_f64()));
    }
    fn check(&mut self, what: &str, s: &Summary, limit: f64) {
        if s.n > 1 && s.spread() > limit {
            self.warnings.push(format!(
                "{what}: spread {:.0}% (min {:.4}, median {:.4}, max {:.4}, {} runs); re-run on a quiet machine",
                100.0 * s.spread(),
                s.min,
                s.median,
                s.max,
                s.n
            ));
        }
    }
}

/// `--id` and `--repeat` checked; the repetitions.
fn check_config(cfg: &BenchConfig) -> Result<usize, BenchError> {
    if let Some(id) = &cfg.names.id
        && (id.trim().is_empty() || id.contains(char::is_whitespace) || id.contains('/'))
    {
        return Err(BenchError::bad_input(
            "--id",
            format!("'{id}' is empty or contains spaces or '/'"),
            "use a short identifier such as `my-node`",
        ));
    }
    let reps = cfg.repeat.unwrap_or(if cfg.quick { 3 } else { 7 });
    if reps == 0 || reps > 1000 {
        return Err(BenchError::bad_input(
            "--repeat",
            format!("{reps} repetitions"),
            "give 1 to 1000 (default 3 with --quick, 7 otherwise)",
        ));
    }
    Ok(reps)
}

/// The widths asked for (sorted), those this CPU and build run, and the widest of those.
fn widths_to_run(
    cfg: &BenchConfig,
    isa: &Isa,
) -> Result<(Vec<Width>, Vec<Width>, Width), BenchError> {
    let mut widths: Vec<Width> = cfg.widths.clone().unwrap_or_else(|| Width::ALL.to_vec());
    widths.sort();
    widths.dedup();
    let runnable: Vec<Width> = widths
        .iter()
        .copied()
        .filter(|w| isa.supports(*w))
        .collect();
    let Some(&widest) = runnable.last() else {
        return Err(BenchError::Environment {
            what: format!(
                "no kernel of the requested widths ({}) can run on this CPU/build",
                widths
                    .iter()
                    .map(|w| w.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            fix: format!(
                "request widths among: {}",
                isa.widths()
                    .iter()
                    .map(|w| w.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    };
    Ok((widths, runnable, widest))
}

/// The node DGEMM: one independent product per CPU at once (HPCC's StarDGEMM), into `d`.
fn node_dgemm(
    d: &mut crate::dgemm::DgemmResult,
    cpus: &[u32],
    timing: Timing,
    spread_warning: f64,
    progress: &Progress,
    notes: &mut Notes,
) -> Result<(), BenchError> {
    progress.add(1);
    progress.step(format!("dgemm x{}", cpus.len()));
    let n = d.n;
    let flops = 2.0 * (n as f64).powi(3);
    let calls = ((timing.target_s * d.gflops.median * 1e9 / flops).round() as u64).max(1);
    let s = parallel_rate(
        cpus,
        timing.reps,
        calls,
        || Ok(crate::dgemm::Problem::new(n)),
        |p| p.run(),
    )?;
    let g = scale(&s, flops, 1e9);
    notes.check(&format!("dgemm x{}", cpus.len()), &g, spread_warning);
    d.node = Some(crate::dgemm::NodeDgemm {
        threads: cpus.len(),
        cpus: topology::format_cpu_list(cpus),
        gflops: g,
    });
    notes.stage("dgemm node");
    Ok(())
}

/// Runs the benchmark described by `cfg`.
pub fn run(cfg: &BenchConfig) -> Result<Report, BenchError> {
    let date = hpcscope_host::time::utc_now();
    let topo = if cfg.sysfs_root == std::path::Path::new("/sys") {
        Topology::detect()
    } else {
        Topology::from_sysfs(&cfg.sysfs_root, "")
    };
    let real_isa = Isa::detect();
    let isa = cfg.isa.clone().unwrap_or(real_isa);
    let allowed = crate::affinity::allowed_cpus();
    let cpus = resolve_cpus(&cfg.cpus, &topo.cpus, allowed.as_deref())?;
    let mem = hpcscope_host::facts::mem_available_bytes();
    let llc = topo.llc().map(|c| c.size_bytes).unwrap_or(32 << 20);
    let sweep_sizes = match &cfg.sizes {
        Some(s) => {
            let mut s = s.clone();
            s.sort_unstable();
            s.dedup();
            s
        }
        None => default_sweep_sizes(llc, if cfg.quick { 1 } else { 4 }),
    };
    check_sizes(&sweep_sizes, mem)?;
    let reps = check_config(cfg)?;
    let timing = Timing {
        target_s: if cfg.quick { 0.004 } else { 0.015 },
        reps,
        cpu_clock: cfg.cpu_clock,
    };
    let (widths, runnable, widest) = widths_to_run(cfg, &isa)?;
    let progress = Progress::new(cfg.progress);
    let mut notes = Notes::default();
    for w in &widths {
        if !isa.supports(*w) {
            notes
                .skipped
                .push(format!("every {}-bit kernel: {}", w, isa.requirement(*w)));
        }
    }
    let first_cpu = cpus[0];

    // ---- single core, pinned ----
    let single = std::thread::scope(|sc| {
        sc.spawn(|| -> Result<_, BenchError> {
            crate::affinity::pin_current_thread(first_cpu)?;
            let mut n = Notes {
                clock: Some(std::time::Instant::now()),
                ..Notes::default()
            };
            single_core(
                cfg,
                &topo,
                &isa,
                &runnable,
                widest,
                &sweep_sizes,
                timing,
                &progress,
                &mut n,
            )
        })
        .join()
        .map_err(|_| BenchError::Internal("the measuring thread panicked".into()))?
    })?;
    let SingleCore {
        frequency,
        sweep,
        plateaus,
        transitions,
        levels,
        kernels,
        peaks,
        op_latencies,
        dgemm,
        latency,
        notes: sn,
    } = single;
    notes.skipped.extend(sn.skipped);
    notes.warnings.extend(sn.warnings);
    notes.stages.extend(sn.stages);
    notes.clock = Some(std::time::Instant::now());
    let mut dgemm = dgemm;
    if let Some(d) = dgemm.as_mut().filter(|_| cpus.len() > 1) {
        node_dgemm(d, &cpus, timing, cfg.spread_warning, &progress, &mut notes)?;
    }

    // ---- scaling ----
    let mut scaling = Vec::new();
    if cfg.selection.scaling && cpus.len() > 1 {
        scaling = scaling_runs(
            cfg, &topo, &isa, widest, &cpus, &levels, &peaks, timing, &progress, &mut notes,
        )?;
        notes.stage("scaling");
    }
    progress.finish();

    let run = RunInfo {
        tool: format!("hpcscope-bench {}", env!("CARGO_PKG_VERSION")),
        host: host_name(),
        date,
        kernel: hpcscope_host::facts::kernel_version(),
        quick: cfg.quick,
        repetitions: reps,
        sample_seconds: timing.target_s,
        cpus: cpus.clone(),
        spread_warning: cfg.spread_warning,
        stage_seconds: notes.stages,
        statistic: cfg.statistic,
        cpu_clock: cfg.cpu_clock,
    };
    let mut report = Report {
        run,
        topology: topo,
        isa,
        frequency,
        sweep_kernel: format!(
            "STREAM triad a[i] = b[i] + s*c[i], {}-bit vectors, normal stores",
            widest.bits(64)
        ),
        sweep,
        plateaus,
        transitions,
        levels,
        kernels,
        peaks,
        op_latencies,
        dgemm,
        latency,
        scaling,
        skipped: notes.skipped,
        warnings: notes.warnings,
        machine: placeholder_machine(),
    };
    report.machine = report::build_machine(&report, &cfg.names)?;
    Ok(report)
}

fn placeholder_machine() -> hpcscope_core::Machine {
    hpcscope_core::Machine {
        format_version: hpcscope_core::machine::FORMAT_VERSION,
        id: String::new(),
        name: String::new(),
        description: String::new(),
        isa: String::new(),
        simd: String::new(),
        vector_bits: 64,
        fma: false,
        sockets: 1,
        cores_per_socket: 1,
        threads_per_core: None,
        frequency_ghz: None,
        scalar_frequency_ghz: None,
        compiler: None,
        provenance: String::new(),
        peaks: Vec::new(),
        levels: Vec::new(),
        network: Vec::new(),
        notes: Vec::new(),
    }
}

struct SingleCore {
    frequency: Frequency,
    sweep: Vec<SweepPoint>,
    plateaus: Vec<plateau::Plateau>,
    transitions: Vec<u64>,
    levels: Vec<LevelEstimate>,
    kernels: Vec<KernelResult>,
    peaks: Vec<PeakResult>,
    op_latencies: Vec<OpLatencyResult>,
    dgemm: Option<crate::dgemm::DgemmResult>,
    latency: Vec<LatencyPoint>,
    notes: Notes,
}

/// Cache capacities usable by one core: every data/unified cache, whole instance.
fn capacities(topo: &Topology) -> Vec<CacheCapacity> {
    topo.caches
        .iter()
        .map(|c| CacheCapacity {
            level: c.level,
            bytes: c.size_bytes,
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
#[allow(clippy::too_many_lines)]
fn single_core(
    cfg: &BenchConfig,
    topo: &Topology,
    isa: &Isa,
    widths: &[Width],
    widest: Width,
    sweep_sizes: &[u64],
    timing: Timing,
    progress: &Progress,
    notes: &mut Notes,
) -> Result<SingleCore, BenchError> {
    let sel = &cfg.selection;
    let limit = cfg.spread_warning;
    // Frequency.
    progress.add(1);
    progress.step("frequency".into());
    let samples = if cfg.quick { 15 } else { 40 };
    let measured_ghz = topology::measure_frequency_ghz(0.003, samples);
    let vector_ghz: Vec<(Width, f64)> = widths
        .iter()
        .filter_map(|&w| flops::vector_frequency_ghz(w, isa, 0.003, samples).map(|f| (w, f)))
        .collect();
    notes.stage("frequency");
    let frequency = Frequency {
        measured_ghz,
        vector_ghz: vector_ghz
            .iter()
            .map(|&(width, ghz)| crate::report::VectorFrequency { width, ghz })
            .collect(),
        nominal_ghz: topo.nominal_ghz,
        method: format!(
            "measured with chains of dependent register adds (1 cycle each), best of {samples} runs of ~3 ms; \
             under 512-bit load: 4 chains of dependent 512-bit FMAs (4 cycles each), FMA units half busy"
        ),
    };
    let freq_at = |w: Width| {
        vector_ghz
            .iter()
            .find(|(v, _)| *v == w)
            .map(|(_, f)| *f)
            .unwrap_or(measured_ghz)
    };

    // Peaks. FMA first: it sets the machine's peak. Quick mode keeps every width for FMA
    // but only the widest for add and mul.
    let mut ops = sel.ops.clone();
    if !ops.contains(&FlopOp::Fma) && isa.fma {
        ops.push(FlopOp::Fma);
    } else if !isa.fma {
        for o in [FlopOp::Add, FlopOp::Mul] {
            if !ops.contains(&o) {
                ops.push(o);
            }
        }
    }
    ops.sort_by_key(|o| std::cmp::Reverse(*o == FlopOp::Fma));
    let all_widths: Vec<Width> = cfg.widths.clone().unwrap_or_else(|| Width::ALL.to_vec());
    let (mut fspecs, fskipped) = plan_flops(&ops, &cfg.precisions, &all_widths, isa);
    notes.skipped.extend(
        fskipped
            .into_iter()
            .filter(|s| !s.contains("-bit vector kernels")),
    );
    if cfg.quick {
        // The divider's ceilings at every width (a projection needs the widths of the
        // binary's divides and square roots; they take a few ms each).
        fspecs.retain(|s| {
            matches!(s.op, FlopOp::Fma | FlopOp::Div | FlopOp::Sqrt) || s.width == widest
        });
    }
    progress.add(fspecs.len() as u64);
    let mut peaks = Vec::new();
    for spec in fspecs {
        progress.step(format!("peak {}", spec.label()));
        let iters = 4096u64;
        let state = FlopState::steady(spec.op);
        let mut err = None;
        let (s, _) = calls_per_second(timing, || {
            if let Err(e) = flops::run(spec, iters, state, isa) {
                err = Some(e);
            }
        });
        if let Some(e) = err {
            notes.skipped.push(e.to_string());
            continue;
        }
        // The kernel must compute what it says (finite values; the divide and square-root
        // kernels' exact results), else its rate is not reported.
        let out = flops::run(spec, iters, state, isa)?;
        if let Err(why) = state.check(spec.op, spec.precision, iters, &out) {
            return Err(BenchError::Internal(format!(
                "the peak kernel {} computed a wrong result ({why}): its rate is not reported",
                spec.label()
            )));
        }
        let g = scale(&s, spec.flops(iters) as f64, 1e9);
        notes.check(&format!("peak {}", spec.label()), &g, limit);
        let per_unit = f64::from(spec.lanes() * spec.op.flops_per_lane());
        let ghz = freq_at(spec.width);
        let fpc = g.median / ghz;
        // Units from the best repetition: a busy machine lowers the median, not the count
        // of FMA units. The divider has no such count: its figure is cycles per instruction.
        let (units, theo, cpi) = if spec.op.is_peak() {
            let units = ((g.max / ghz / per_unit).round() as u32).max(1);
            (Some(units), Some(f64::from(units) * per_unit * ghz), None)
        } else {
            (
                None,
                None,
                (fpc > 0.0).then(|| f64::from(spec.lanes()) / fpc),
            )
        };
        peaks.push(PeakResult {
            op: spec.op,
            precision: spec.precision,
            width: spec.width,
            lanes: spec.lanes(),
            gflops: g,
            flops_per_cycle: fpc,
            units,
            theoretical_gflops: theo,
            efficiency: theo.map(|t| g.median / t),
            cycles_per_instruction: cpi,
        });
    }

    notes.stage("peaks");
    let op_latencies = op_latencies(cfg, isa, widths, timing, measured_ghz, progress, notes)?;
    let dgemm = if cfg.selection.dgemm && cfg.precisions.contains(&Precision::F64) {
        progress.step("dgemm".to_string());
        // n = 512 (2.7e8 FLOPs a product; 6 MiB of matrices); --quick: 256.
        let n = if cfg.quick { 256 } else { 512 };
        let mut p = crate::dgemm::Problem::new(n);
        let (s, _) = calls_per_second(timing, || p.run());
        let g = scale(&s, p.flops(), 1e9);
        notes.check("dgemm", &g, limit);
        p.clear();
        p.run();
        let err = p.check(1);
        if err > 1e-9 {
            return Err(BenchError::Internal(format!(
                "the DGEMM kernel's product is wrong (relative error {err:.1e}): its rate is not reported"
            )));
        }
        notes.stage("dgemm");
        Some(crate::dgemm::DgemmResult {
            n,
            gflops: g,
            variant: crate::dgemm::Problem::variant().into(),
            max_rel_error: err,
            node: None,
        })
    } else {
        None
    };
    // Sweep: STREAM triad, widest width, normal stores.
    let triad = KernelSpec {
        kernel: Kernel::Triad,
        width: widest,
        nt: false,
    };
    let max_size = sweep_sizes.iter().copied().max().unwrap_or(1 << 20);
    progress.add(sweep_sizes.len() as u64);
    let mut sweep = Vec::new();
    let table_max = cfg
        .sizes
        .as_ref()
        .map(|s| s.iter().copied().max().unwrap_or(0))
        .unwrap_or(0);
    let mut ws = Workspace::new(max_size.max(table_max))?;
    {
        for &size in sweep_sizes {
            progress.step(format!("sweep {} {}", triad.label(), format_bytes(size)));
            let r = bandwidth(&mut ws, triad, size, timing, isa)?;
            notes.check(
                &format!("{} at {}", triad.label(), format_bytes(r.size_bytes)),
                &r.gbs,
                limit,
            );
            sweep.push(SweepPoint {
                size_bytes: r.size_bytes,
                elements: r.size_bytes / 24,
                gbs: r.gbs,
                gbs_with_write_allocate: r.gbs_with_write_allocate,
            });
        }
    }
    let pts: Vec<(u64, f64)> = sweep
        .iter()
        .map(|p| (p.size_bytes, p.gbs.pick(cfg.statistic)))
        .collect();
    let plateaus = plateau::detect_plateaus(&pts, &PlateauParams::default());
    let transitions = plateau::transition_sizes(&plateaus);
    let levels = plateau::assign_levels(&pts, &capacities(topo), &plateaus);

    notes.stage("sweep");
    // Kernel table at one size per measured level (or at the given sizes).
    let table_sizes: Vec<u64> = match &cfg.sizes {
        Some(_) => sweep_sizes.to_vec(),
        None => {
            let mut v: Vec<u64> = levels.iter().filter_map(|l| l.at_size).collect();
            v.sort_unstable();
            v.dedup();
            v
        }
    };
    let table_widths: Vec<Width> = if cfg.quick {
        vec![widest]
    } else {
        widths.to_vec()
    };
    let all_level_sizes = table_sizes.clone();
    let mut table_sizes = table_sizes;
    if cfg.quick && cfg.sizes.is_none() {
        // Quick mode: caches only; a pass over main memory costs 0.1 s per kernel.
        let mm = levels.iter().find(|l| l.memory).and_then(|l| l.at_size);
        table_sizes.retain(|s| Some(*s) != mm);
    }
    let (kspecs, kskipped) = plan_kernels(&sel.bandwidth, &table_widths, isa);
    notes.skipped.extend(
        kskipped
            .into_iter()
            .filter(|s| !s.contains("-bit vector kernels")),
    );
    // The sweep's kernel (normal stores) at every width and every level, main memory
    // included even in quick mode: the machine file keeps each level's bandwidth per width,
    // so that a binary's roofline can use the bandwidth of its own access width.
    let per_width: Vec<KernelSpec> = widths
        .iter()
        .map(|&width| KernelSpec {
            kernel: Kernel::Triad,
            width,
            nt: false,
        })
        .filter(|s| s.unsupported_reason(isa).is_none())
        .collect();
    let mut plan: Vec<(KernelSpec, u64)> = Vec::new();
    for k in &sel.bandwidth {
        for &size in &table_sizes {
            for spec in kspecs.iter().filter(|s| s.kernel == *k) {
                plan.push((*spec, size));
            }
        }
    }
    for &size in &all_level_sizes {
        for spec in &per_width {
            if !plan.contains(&(*spec, size)) {
                plan.push((*spec, size));
            }
        }
    }
    let mut kernels = Vec::new();
    progress.add(plan.len() as u64);
    for &(spec, size) in &plan {
        progress.step(format!("{} {}", spec.label(), format_bytes(size)));
        let r = bandwidth(&mut ws, spec, size, timing, isa)?;
        notes.check(
            &format!("{} at {}", spec.label(), format_bytes(r.size_bytes)),
            &r.gbs,
            limit,
        );
        kernels.push(r);
    }

    drop(ws);
    notes.stage("kernel table");
    // Latency.
    let mut latency = Vec::new();
    if sel.latency {
        let mut sizes: Vec<u64> = if cfg.quick || cfg.sizes.is_some() {
            table_sizes.clone()
        } else {
            let llc = topo.llc().map(|c| c.size_bytes).unwrap_or(32 << 20);
            default_sweep_sizes(llc, 1)
        };
        sizes.sort_unstable();
        sizes.dedup();
        if cfg.quick && cfg.sizes.is_none() && sizes.iter().any(|s| *s > QUICK_LATENCY_MAX) {
            sizes.retain(|s| *s <= QUICK_LATENCY_MAX);
            sizes.push(QUICK_LATENCY_MAX);
            notes.skipped.push(format!("quick mode: latency measured up to {} only (building a larger random cycle takes seconds)", format_bytes(QUICK_LATENCY_MAX)));
        }
        progress.add(sizes.len() as u64);
        for size in sizes {
            progress.step(format!("latency {}", format_bytes(size)));
            let chase = Chase::new(size as usize, 0x5eed ^ size);
            let loads: u64 = 1 << 16;
            let ltiming = Timing {
                target_s: if cfg.quick { 0.01 } else { 0.03 },
                reps: timing.reps.min(5),
                cpu_clock: timing.cpu_clock,
            };
            let (s, _) = calls_per_second(ltiming, || {
                std::hint::black_box(chase.run(loads));
            });
            // calls/s -> ns per load.
            let ns = Summary {
                median: 1e9 / (s.median * loads as f64),
                min: 1e9 / (s.max * loads as f64),
                max: 1e9 / (s.min * loads as f64),
                q1: 1e9 / (s.q3 * loads as f64),
                q3: 1e9 / (s.q1 * loads as f64),
                n: s.n,
            };
            latency.push(LatencyPoint {
                size_bytes: (chase.slots() * crate::latency::SLOT_BYTES) as u64,
                cycles: ns.median * measured_ghz,
                ns,
            });
        }
    }
    if sel.latency {
        notes.stage("latency");
    }
    Ok(SingleCore {
        frequency,
        sweep,
        plateaus,
        transitions,
        levels,
        kernels,
        peaks,
        op_latencies,
        dgemm,
        latency,
        notes: std::mem::take(notes),
    })
}

/// The latency chains ([`crate::oplat`]) of the selected operations, every precision and
/// every width this CPU runs (`--quick` too: a projection needs the binary's own widths; it
/// only takes fewer repetitions), each timed for ~2 ms per repetition. Square root needs the
/// mul chain (its kernel alternates roots and multiplications), which runs with it.
fn op_latencies(
    cfg: &BenchConfig,
    isa: &Isa,
    widths: &[Width],
    timing: Timing,
    measured_ghz: f64,
    progress: &Progress,
    notes: &mut Notes,
) -> Result<Vec<OpLatencyResult>, BenchError> {
    let mut ops: Vec<FlopOp> = FlopOp::ALL
        .into_iter()
        .filter(|o| cfg.selection.ops.contains(o))
        .collect();
    if ops.contains(&FlopOp::Sqrt) && !ops.contains(&FlopOp::Mul) {
        ops.insert(0, FlopOp::Mul);
    }
    let mut specs = Vec::new();
    for &precision in &cfg.precisions {
        for &width in widths {
            for &op in &ops {
                let spec = FlopSpec {
                    op,
                    precision,
                    width,
                };
                if spec.unsupported_reason(isa).is_none() {
                    specs.push(spec);
                }
            }
        }
    }
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    let ltiming = Timing {
        target_s: crate::oplat::SAMPLE_S,
        ..timing
    };
    progress.add(specs.len() as u64);
    let mut out: Vec<OpLatencyResult> = Vec::new();
    for spec in specs {
        progress.step(format!("latency {}", spec.label()));
        let state = crate::oplat::ChainState::steady(spec.op);
        let iters = crate::oplat::ITERS_PER_CALL;
        let value = crate::oplat::run(spec, iters, state, isa)?;
        if let Err(why) = state.check(spec.op, spec.precision, iters, value) {
            return Err(BenchError::Internal(format!(
                "the latency kernel {} computed a wrong result ({why}): its latency is not reported",
                spec.label()
            )));
        }
        let (s, _) = calls_per_second(ltiming, || {
            std::hint::black_box(crate::oplat::run(spec, iters, state, isa).ok());
        });
        // calls/s -> ns per instruction of the operation.
        let per_call = crate::oplat::ops(spec, iters) as f64;
        let mut ns = Summary {
            median: 1e9 / (s.median * per_call),
            min: 1e9 / (s.max * per_call),
            max: 1e9 / (s.min * per_call),
            q1: 1e9 / (s.q3 * per_call),
            q3: 1e9 / (s.q1 * per_call),
            n: s.n,
        };
        if spec.op == FlopOp::Sqrt {
            // Each root is followed by a multiplication on the chain: take the mul chain's
            // latency (same precision and width, this run) off, statistic by statistic.
            let Some(mul) = out.iter().find(|l| {
                l.op == FlopOp::Mul && l.precision == spec.precision && l.width == spec.width
            }) else {
                continue;
            };
            let m = mul.ns;
            ns = Summary {
                median: ns.median - m.median,
                min: ns.min - m.min,
                max: ns.max - m.max,
                q1: ns.q1 - m.q1,
                q3: ns.q3 - m.q3,
                n: ns.n,
            };
        }
        notes.check(
            &format!("latency {}", spec.label()),
            &ns,
            cfg.spread_warning,
        );
        out.push(OpLatencyResult {
            op: spec.op,
            precision: spec.precision,
            width: spec.width,
            instruction: crate::oplat::mnemonic(spec),
            cycles: ns.median * measured_ghz,
            ns,
        });
    }
    notes.stage("op latency");
    Ok(out)
}

/// Passes over the arrays per kernel call: enough that a call moves about 4 MiB, so the
/// call overhead is negligible even for L1-sized working sets.
fn passes_for(size_bytes: u64) -> usize {
    ((4u64 << 20) / size_bytes.max(1)).max(1) as usize
}

/// Measures one bandwidth kernel at total working set `size` on the current thread.
fn bandwidth(
    ws: &mut Workspace,
    spec: KernelSpec,
    size: u64,
    timing: Timing,
    isa: &Isa,
) -> Result<KernelResult, BenchError> {
    let arrays = spec.kernel.arrays() as u64;
    let n = Workspace::usable_len((size / (8 * arrays)) as usize).min(ws.max_len(arrays as usize));
    let passes = passes_for(n as u64 * 8 * arrays);
    let mut err = None;
    let (s, _) = calls_per_second(timing, || {
        if let Err(e) = ws.run(spec, n, passes, 1.5, isa) {
            err = Some(e);
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    let own = spec.kernel.bytes_per_element(ByteCount::Kernel, spec.nt);
    let wa = spec
        .kernel
        .bytes_per_element(ByteCount::WithWriteAllocate, spec.nt);
    let s = scale(&s, passes as f64, 1.0); // calls/s -> passes/s
    let gbs = scale(&s, (n as u64 * u64::from(own)) as f64, 1e9);
    Ok(KernelResult {
        kernel: spec.kernel,
        formula: spec.kernel.formula().into(),
        width: spec.width,
        nt: spec.nt,
        size_bytes: n as u64 * 8 * arrays,
        bytes_per_element: own,
        bytes_per_element_with_write_allocate: wa,
        gbs_with_write_allocate: gbs.median * f64::from(wa) / f64::from(own),
        gflops: s.median * (n as u64 * u64::from(spec.kernel.flops_per_element())) as f64 / 1e9,
        gbs,
    })
}

/// Runs `body` `calls` times on each of `cpus` (one pinned thread each, started
/// together), `reps` times; returns the aggregate calls per second (all threads' calls
/// divided by the slowest thread's time).
fn parallel_rate<S>(
    cpus: &[u32],
    reps: usize,
    calls: u64,
    setup: impl Fn() -> Result<S, BenchError> + Sync,
    body: impl Fn(&mut S) + Sync,
) -> Result<Summary, BenchError> {
    let t = cpus.len();
    let barrier = Barrier::new(t);
    let times = Mutex::new(vec![vec![0f64; t]; reps]);
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for (idx, &cpu) in cpus.iter().enumerate() {
            let (barrier, times, errors, setup, body) = (&barrier, &times, &errors, &setup, &body);
            sc.spawn(move || {
                let state = crate::affinity::pin_current_thread(cpu).and_then(|_| setup());
                let mut state = match state {
                    Ok(s) => Some(s),
                    Err(e) => {
                        errors.lock().expect("lock").push(e);
                        None
                    }
                };
                if let Some(s) = state.as_mut() {
                    body(s); // warm-up
                }
                for r in 0..reps {
                    barrier.wait();
                    let t0 = std::time::Instant::now();
                    if let Some(s) = state.as_mut() {
                        for _ in 0..calls {
                            body(s);
                        }
                    }
                    let dt = t0.elapsed().as_secs_f64();
                    times.lock().expect("lock")[r][idx] = dt;
                }
            });
        }
    });
    if let Some(e) = errors.into_inner().expect("lock").into_iter().next() {
        return Err(e);
    }
    let rates: Vec<f64> = times
        .into_inner()
        .expect("lock")
        .iter()
        .map(|ts| (t as u64 * calls) as f64 / ts.iter().copied().fold(0.0, f64::max).max(1e-12))
        .collect();
    Summary::of(&rates).ok_or_else(|| BenchError::Internal("no scaling sample".into()))
}

#[allow(clippy::too_many_arguments)]
fn scaling_runs(
    cfg: &BenchConfig,
    topo: &Topology,
    isa: &Isa,
    widest: Width,
    cpus: &[u32],
    levels: &[LevelEstimate],
    peaks: &[PeakResult],
    timing: Timing,
    progress: &Progress,
    notes: &mut Notes,
) -> Result<Vec<ScalingPoint>, BenchError> {
    let n = cpus.len();
    // Quick mode: all CPUs only (one thread is the single-core phase).
    let mut counts: Vec<usize> = if cfg.quick {
        vec![n]
    } else {
        (0..)
            .map(|k| 1usize << k)
            .take_while(|&c| c < n)
            .chain([n])
            .collect()
    };
    counts.dedup();
    let mut out = Vec::new();
    let fma_or_best = |prec: Precision| {
        peaks
            .iter()
            .filter(|p| {
                p.precision == prec
                    && p.width == widest
                    && (p.op == FlopOp::Fma || (!isa.fma && p.op.is_peak()))
            })
            .max_by(|a, b| a.gflops.median.total_cmp(&b.gflops.median))
    };
    let bw_levels: Vec<&LevelEstimate> = levels
        .iter()
        .filter(|l| l.gbs.is_some() && l.at_size.is_some())
        .collect();
    progress.add((counts.len() * (cfg.precisions.len() + bw_levels.len())) as u64);
    for &t in &counts {
        let set = &cpus[..t];
        let cpu_list = topology::format_cpu_list(set);
        for &prec in &cfg.precisions {
            let Some(p) = fma_or_best(prec) else { continue };
            let spec = FlopSpec {
                op: p.op,
                precision: prec,
                width: p.width,
            };
            progress.step(format!("scaling {} x{t}", spec.label()));
            let iters = 4096u64;
            let flops = spec.flops(iters) as f64;
            let calls = ((timing.target_s * p.gflops.median * 1e9 / flops).round() as u64).max(1);
            let state = FlopState::steady(spec.op);
            let s = parallel_rate(
                set,
                timing.reps,
                calls,
                || Ok(()),
                |_| {
                    let _ = flops::run(spec, iters, state, isa);
                },
            )?;
            let g = scale(&s, flops, 1e9);
            notes.check(
                &format!("scaling {} x{t}", spec.label()),
                &g,
                cfg.spread_warning,
            );
            out.push(ScalingPoint {
                threads: t,
                cpus: cpu_list.clone(),
                what: spec.label(),
                level: None,
                precision: Some(prec),
                size_per_thread: None,
                value: g,
                unit: "GFLOP/s".into(),
                per_thread: g.median / t as f64,
            });
        }
        for l in &bw_levels {
            let (Some(single), Some(size)) = (l.gbs, l.at_size) else {
                continue;
            };
            let shared = l.memory
                || l.name
                    .strip_prefix('L')
                    .and_then(|k| k.parse::<u32>().ok())
                    .and_then(|k| topo.caches.iter().find(|c| c.level == k))
                    .is_some_and(|c| c.shared_by_cores > 1);
            let per_thread = if shared { size / t as u64 } else { size };
            let spec = KernelSpec {
                kernel: Kernel::Triad,
                width: widest,
                nt: false,
            };
            progress.step(format!("scaling {} {} x{t}", spec.label(), l.name));
            let nel = Workspace::usable_len((per_thread / 24) as usize);
            let passes = passes_for((nel * 24) as u64);
            let bytes = (nel * 24 * passes) as f64;
            let calls = ((timing.target_s * single * 1e9 / bytes).round() as u64).max(1);
            let s = parallel_rate(
                set,
                timing.reps,
                calls,
                || Workspace::new((nel * 24) as u64),
                |ws| {
                    let _ = ws.run(spec, nel, passes, 1.5, isa);
                },
            )?;
            let g = scale(&s, bytes, 1e9);
            notes.check(
                &format!("scaling {} {} x{t}", spec.label(), l.name),
                &g,
                cfg.spread_warning,
            );
            out.push(ScalingPoint {
                threads: t,
                cpus: cpu_list.clone(),
                what: format!("{} {}", spec.label(), l.name),
                level: Some(l.name.clone()),
                precision: None,
                size_per_thread: Some((nel * 24) as u64),
                value: g,
                unit: "GB/s".into(),
                per_thread: g.median / t as f64,
            });
        }
    }
    Ok(out)
}

/// The host name for provenance, `unknown-host` when it cannot be read.
pub fn host_name() -> String {
    hpcscope_host::facts::hostname().unwrap_or_else(|| "unknown-host".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_core::Classify;

    #[test]
    fn kernel_lists_parse() {
        let s = Selection::parse("triad, fma,latency").unwrap();
        assert_eq!(s.bandwidth, vec![Kernel::Triad]);
        assert_eq!(s.ops, vec![FlopOp::Fma]);
        assert!(s.latency && !s.scaling);
        assert_eq!(Selection::parse("all").unwrap(), Selection::all());
        let e = Selection::parse("triad,bogus").unwrap_err();
        assert_eq!(e.kind().exit_code(), 2);
        assert!(
            e.to_string().contains("bogus") && e.to_string().contains("triad4"),
            "{e}"
        );
        assert!(Selection::parse(" , ").is_err());
    }

    #[test]
    fn cpu_requests_resolve() {
        let online = [0, 1, 2, 3];
        assert_eq!(
            resolve_cpus(&CpuRequest::All, &online, None).unwrap(),
            vec![0, 1, 2, 3]
        );
        assert_eq!(
            resolve_cpus(&CpuRequest::All, &online, Some(&[1, 3])).unwrap(),
            vec![1, 3]
        );
        assert_eq!(
            resolve_cpus(&CpuRequest::Threads(2), &online, None).unwrap(),
            vec![0, 1]
        );
        let e = resolve_cpus(&CpuRequest::Threads(5), &online, None).unwrap_err();
        assert_eq!(e.kind().exit_code(), 2);
        assert!(e.to_string().contains("0-3"), "{e}");
        let e = resolve_cpus(&CpuRequest::List(vec![1, 7, 9]), &online, None).unwrap_err();
        assert_eq!(e.kind().exit_code(), 2);
        let msg = e.to_string();
        assert!(
            msg.contains("7,9") && msg.contains("usable CPUs: 0-3"),
            "{msg}"
        );
        assert!(resolve_cpus(&CpuRequest::Threads(0), &online, None).is_err());
    }

    #[test]
    fn sizes_are_checked() {
        assert!(check_sizes(&[32 << 10, 1 << 30], Some(24 << 30)).is_ok());
        let e = check_sizes(&[1 << 40], Some(24 << 30)).unwrap_err();
        assert!(e.to_string().starts_with("--sizes"), "{e}");
        assert_eq!(e.kind().exit_code(), 2);
        assert!(e.to_string().contains("beyond the memory"), "{e}");
        assert!(check_sizes(&[100], None).is_err());
    }

    #[test]
    fn default_sweep_reaches_four_times_the_llc() {
        let v = default_sweep_sizes(260 << 20, 2);
        assert_eq!(v[0], 16384);
        assert_eq!(*v.last().unwrap(), 4 * (260 << 20));
        assert!(v.windows(2).all(|w| w[1] > w[0]));
        assert!(v.len() < 40);
    }

    #[test]
    fn missing_isa_kernels_are_skipped_with_a_note() {
        let mut isa = Isa::detect();
        isa.avx512f = false;
        let (run, skipped) = plan_kernels(&[Kernel::Triad], &Width::ALL, &isa);
        assert!(run.iter().all(|s| s.width != Width::W512));
        if cfg!(target_arch = "x86_64") {
            assert!(
                skipped
                    .iter()
                    .any(|s| s.starts_with("triad-512") && s.contains("AVX-512F")),
                "{skipped:?}"
            );
            assert!(
                skipped.iter().any(|s| s.starts_with("triad-nt-512")),
                "{skipped:?}"
            );
        }
        let (run, skipped) =
            plan_flops(&[FlopOp::Fma], &[Precision::F64], &Width::ALL, &Isa::none());
        assert!(run.is_empty());
        assert_eq!(skipped.len(), 4);
    }
}
