//! hpcscope-mix: characterize a binary by emulation.
//!
//! Runs a program under QEMU user mode with the hpcscope TCG plugin (instruction classes,
//! FLOPs, FP instructions by width and precision, loads, stores, bytes; any SVE vector
//! length), streams its memory accesses into the cache simulator for every machine asked
//! (the source's caches and each target's), and builds one [`Profile`] per machine and
//! vector length: the application side of a roofline projection (Gavoille 2024, sections
//! 6.1.4 and 7.1; DynamoRIO/ArmIE and drcachesim there, QEMU and our simulator here).
#![deny(missing_docs)]
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

pub mod elf;
pub mod engine;
pub mod error;
pub mod native;
mod nodes;
mod partition;
mod profile;
pub mod run;
pub mod sampling;
pub mod simulate;
pub mod spec;
pub mod view;
pub mod widths;

use std::path::PathBuf;
use std::time::Duration;

use hpcscope_cachesim::{HierarchyStats, NodeConfig, ThreadStats};
use hpcscope_core::{Machine, Profile};
use serde::Serialize;

pub use elf::{Arch, ElfInfo};
pub use engine::qemu::{QemuEngine, tools};
pub use engine::{Ending, Engine, PluginOutput, RegionCounts, ThreadCounts, Totals};
pub use error::MixError;
/// How threads are placed on the simulated nodes' cores.
pub use hpcscope_cachesim::Placement;
/// The native runs' module under its former name.
pub use native as sample;
pub use nodes::{Distinct, hierarchy, node};
/// Set sampling under its former name (the schemas' descriptions name it so).
pub use sampling::sets as setsample;
pub use sampling::{SampleMethod, SampleSpec, SamplingReport};
pub use simulate::{Replay, SampledReplay, replay_sampled, replay_stream};
pub use spec::{RunSpec, SpecError};

/// What to analyse and how.
#[derive(Debug, Clone, Default)]
pub struct MixOptions {
    /// The program, how it runs and what is counted.
    pub run: RunSpec,
    /// SVE vector lengths to analyse at (aarch64); empty: the emulator's default.
    pub sve_bits: Vec<u32>,
    /// Machines whose caches are simulated: one profile each.
    pub machines: Vec<Machine>,
    /// Take the memory stream from this build of the same source instead (SVE accesses are
    /// not reported by QEMU 7.2).
    pub cache_binary: Option<PathBuf>,
    /// Native runs to time (0: none). Only when the host runs the program natively.
    pub native_runs: u32,
    /// Application name (default: the program's file name).
    pub application: Option<String>,
    /// Per-function breakdown.
    pub per_function: bool,
}

/// Counts of one function (per-function breakdown).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize)]
pub struct FunctionCounts {
    /// Function name (`?` outside any symbol).
    pub function: String,
    /// Instructions.
    pub instructions: u64,
    /// FP instructions.
    pub fp_instructions: u64,
    /// FLOPs.
    pub flops: u64,
    /// Bytes loaded and stored.
    pub bytes: u64,
}

/// The analysis at one vector length.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct VariantReport {
    /// SVE vector length, bits (None: not SVE).
    pub sve_bits: Option<u32>,
    /// The plugin's counts.
    pub counts: PluginOutput,
    /// How the program ended under emulation.
    pub ending: Ending,
    /// Whether the counts are partial (crash, failure, time limit).
    pub partial: bool,
    /// Wall time of the emulation, seconds.
    pub emulation_s: f64,
    /// Memory records simulated.
    pub records: u64,
    /// Cache statistics per machine (all threads).
    pub caches: Vec<HierarchyStats>,
    /// Cache statistics per machine and thread (same order as `caches`), with the core
    /// each thread was placed on.
    pub thread_caches: Vec<Vec<ThreadStats>>,
    /// How the threads were placed on the simulated nodes' cores.
    pub placement: String,
    /// One profile per machine (same order as the options' machines).
    pub profiles: Vec<Profile>,
    /// Per-function breakdown, largest FLOPs first.
    pub functions: Vec<FunctionCounts>,
    /// With `--sample`: what the sampled simulation measured and the error of its
    /// estimates (`caches`, `thread_caches` and the profiles' bytes are extrapolated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingReport>,
}

impl VariantReport {
    /// Counts of each guest thread (start order; thread 0 is the main thread). A program
    /// with one thread has one entry, equal to the totals.
    pub fn threads(&self) -> &[ThreadCounts] {
        &self.counts.threads
    }

    /// Counts of each function counted with `--function`, in the order given (total and
    /// per thread); empty when the whole program was counted.
    pub fn regions(&self) -> &[RegionCounts] {
        &self.counts.regions
    }
}

/// The whole result of `mix`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct MixReport {
    /// Application name.
    pub application: String,
    /// Program path.
    pub program: String,
    /// Architecture.
    pub arch: Arch,
    /// SHA-256 of the program.
    pub sha256: String,
    /// Compiler, from the ELF `.comment` section.
    pub compiler: Option<String>,
    /// Native wall times, seconds (one per run).
    pub native_times_s: Vec<f64>,
    /// One report per vector length.
    pub variants: Vec<VariantReport>,
    /// Remarks.
    pub notes: Vec<String>,
}

/// ` (SIGSEGV)` for the common crash signals, empty otherwise.
fn signal_name(sig: i32) -> &'static str {
    match sig {
        4 => " (SIGILL)",
        6 => " (SIGABRT)",
        7 => " (SIGBUS)",
        8 => " (SIGFPE)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        15 => " (SIGTERM)",
        _ => "",
    }
}

/// What to do about an x86 program QEMU stopped on an illegal instruction.
const SIGILL_FIX: &str = "QEMU emulates x86 up to AVX2: a program built for AVX-512 (-march=native on an AVX-512 machine, -march=x86-64-v4) stops on its first AVX-512 instruction; count it natively with --engine native (scripts/build-dynamorio.sh builds DynamoRIO), or build it for x86-64-v3";

/// Runs the whole analysis.
#[allow(clippy::too_many_lines)]
pub fn analyze(opts: &MixOptions) -> Result<MixReport, MixError> {
    opts.run.validate()?;
    let run_spec = &opts.run;
    let env = run_spec.environment();
    let info = ElfInfo::read(&run_spec.program)?;
    if !opts.sve_bits.is_empty() && info.arch != Arch::Aarch64 {
        return Err(MixError::Usage {
            message: format!("--sve-bits given for a {} program", info.arch.name()),
            fix: "SVE vector lengths apply to aarch64 programs only; drop --sve-bits".into(),
        });
    }
    for &b in &opts.sve_bits {
        if !(128..=2048).contains(&b) || b % 128 != 0 {
            return Err(MixError::Usage {
                message: format!("SVE vector length {b} bits is not valid"),
                fix: "use multiples of 128 from 128 to 2048".into(),
            });
        }
    }
    let engine: Box<dyn Engine> = engine::choose(
        engine::Choice::resolve(run_spec.engine)?,
        info.arch,
        engine::Needs {
            sve: !opts.sve_bits.is_empty(),
        },
    )?;
    let nodes: Vec<NodeConfig> = opts.machines.iter().map(node).collect::<Result<_, _>>()?;
    // Machines with the same caches are simulated once (bit for bit what separate
    // simulations give: `Distinct`).
    let distinct = Distinct::new(&nodes, &run_spec.placement);
    // A set sampling the machines' caches cannot take is refused before anything runs.
    if let Some(spec) = run_spec.sample.filter(|s| s.method == SampleMethod::Sets) {
        sampling::sets::SetSampler::new(spec, &nodes, &run_spec.placement)?;
    }
    let resolve = |names: &[String],
                   info: &ElfInfo,
                   path: &std::path::Path|
     -> Result<Vec<(u64, u64)>, MixError> {
        names
            .iter()
            .map(|n| info.function(n, path).map(|s| (s.addr, s.addr + s.size)))
            .collect()
    };
    let regions = resolve(&run_spec.functions, &info, &run_spec.program)?;
    let scopes = resolve(&run_spec.scope, &info, &run_spec.program)?;
    // Each scope's entry in the file, for the probes that time it natively.
    let probes: Vec<native::Scope> = scopes
        .iter()
        .filter_map(|(a, _)| info.file_offset(*a))
        .map(|file_offset| native::Scope { file_offset })
        .collect();
    let cache_info = match &opts.cache_binary {
        Some(p) => Some(ElfInfo::read(p)?),
        None => None,
    };
    let application = opts.application.clone().unwrap_or_else(|| {
        run_spec
            .program
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "program".into())
    });
    let mut notes = vec![engine.counted_by()];

    // Native timing first (it also tells early whether the program runs at all), with
    // CPU-clock sampling so that a region's own time is measured.
    let mut native_times_s = Vec::new();
    let mut region_times_s = Vec::new();
    // Per sampled run, the in-region samples of each thread (by thread id).
    let mut thread_samples: Vec<Vec<u64>> = Vec::new();
    // Samples over every sampled run: (runs, samples, in the region).
    let mut pooled = (0u64, 0u64, 0u64);
    let native_ok = Arch::host() == Some(info.arch) && opts.sve_bits.is_empty();
    // Native runs whose scopes could not be timed (no uprobes, or probe records lost), and
    // whether one run removed them for being hit too often.
    let mut scopes_untimed = 0u32;
    let mut scopes_too_busy = false;
    if opts.native_runs > 0 {
        if native_ok {
            let started = std::time::Instant::now();
            let mut runs = 0u32;
            // A region too short for MIN_SAMPLES in one run is timed over more runs (a few
            // seconds at most), its samples pooled.
            while runs < opts.native_runs
                || ((!regions.is_empty() || !scopes.is_empty())
                    && pooled.0 > 0
                    && pooled.1 < MIN_SAMPLES
                    && runs < opts.native_runs + MAX_EXTRA_RUNS
                    && started.elapsed() < EXTRA_RUNS_BUDGET)
            {
                runs += 1;
                let s = native::run_env(
                    &run_spec.program,
                    &run_spec.args,
                    &env,
                    (&regions, &probes),
                    info.lowest_vaddr,
                    info.pie,
                    SAMPLE_HZ,
                    run_spec.timeout,
                )
                .map_err(|e| MixError::Program {
                    path: run_spec.program.display().to_string(),
                    message: format!("cannot run it natively: {e}"),
                    fix: "check that it is executable (chmod +x) and its libraries are installed"
                        .into(),
                })?;
                if s.timed_out {
                    // The next runs would take as long: none is timed.
                    notes.push(format!(
                        "a native run reached the time limit ({} s) and was stopped: no native time is used",
                        run_spec.timeout.map_or(0.0, |t| t.as_secs_f64())
                    ));
                    native_times_s.clear();
                    region_times_s.clear();
                    thread_samples.clear();
                    pooled = (0, 0, 0);
                    break;
                }
                if !s.success {
                    let how = match (s.code, s.signal) {
                        (_, Some(sig)) => format!("was killed by signal {sig}{}", signal_name(sig)),
                        (Some(c), _) => format!("exited with status {c}"),
                        _ => "failed".to_string(),
                    };
                    notes.push(format!(
                        "the program {how} when run natively: its time is not used"
                    ));
                    native_times_s.clear();
                    region_times_s.clear();
                    thread_samples.clear();
                    pooled = (0, 0, 0);
                    break;
                }
                if std::env::var_os("HPCSCOPE_DEBUG").is_some() {
                    eprintln!("native run: {s:?}");
                }
                native_times_s.push(s.wall_s);
                if !scopes.is_empty() && !s.scopes_timed {
                    // Without the probes, no sample is known to be in a scope: not timed.
                    scopes_untimed += 1;
                    if s.scopes_too_busy {
                        // The probes slowed this run (its wall time is not the program's),
                        // and the next runs would be as slow until they go: none is timed.
                        native_times_s.pop();
                        scopes_too_busy = true;
                        break;
                    }
                    continue;
                }
                if let Some(t) = s.region_s(MIN_SAMPLES) {
                    region_times_s.push(t);
                }
                if s.sampled {
                    pooled.0 += 1;
                    pooled.1 += s.samples;
                    pooled.2 += s.in_region;
                    thread_samples.push(s.threads.iter().map(|t| t.in_region).collect());
                }
            }
        } else {
            notes.push(format!(
                "no native time: this host cannot run this {} program{} natively; the profiles have no time and cannot be a projection's source without --source-gflops",
                info.arch.name(),
                if opts.sve_bits.is_empty() { "" } else { " at a chosen SVE length" }
            ));
        }
    }

    let lengths: Vec<Option<u32>> = if opts.sve_bits.is_empty() {
        vec![None]
    } else {
        opts.sve_bits.iter().map(|b| Some(*b)).collect()
    };
    // The cache stream of a separate binary does not depend on the vector length: simulate it once.
    type Caches = (
        Vec<HierarchyStats>,
        Vec<Vec<ThreadStats>>,
        u64,
        Option<SamplingReport>,
    );
    let mut shared_caches: Option<Caches> = None;
    if let (Some(cb), Some(ci)) = (&opts.cache_binary, &cache_info) {
        let o = run::run_rerun(
            &QemuEngine::for_arch(ci.arch)?,
            &mut notes,
            &run::Request {
                program: cb.clone(),
                args: run_spec.args.clone(),
                arch: ci.arch,
                static_binary: !ci.dynamic,
                sve_bits: None,
                regions: resolve(&run_spec.functions, ci, cb)?,
                scopes: resolve(&run_spec.scope, ci, cb)?,
                nodes: distinct.nodes.clone(),
                placement: run_spec.placement.clone(),
                env: env.clone(),
                tbs: false,
                timeout: run_spec.timeout,
                sample: run_spec.sample,
                stream_gate: true,
            },
        )?;
        notes.push(format!(
            "cache behaviour simulated on {} ({} accesses)",
            cb.display(),
            o.records
        ));
        shared_caches = Some((
            distinct.caches(o.caches),
            distinct.thread_caches(o.thread_caches),
            o.records,
            distinct.sampling(o.sampling),
        ));
    }
    let mut variants = Vec::new();
    for sve in lengths {
        let o = run::run_rerun(
            engine.as_ref(),
            &mut notes,
            &run::Request {
                program: run_spec.program.clone(),
                args: run_spec.args.clone(),
                arch: info.arch,
                static_binary: !info.dynamic,
                sve_bits: sve,
                regions: regions.clone(),
                scopes: scopes.clone(),
                nodes: if shared_caches.is_some() {
                    Vec::new()
                } else {
                    distinct.nodes.clone()
                },
                placement: run_spec.placement.clone(),
                env: env.clone(),
                tbs: opts.per_function,
                timeout: run_spec.timeout,
                sample: run_spec.sample,
                stream_gate: true,
            },
        )?;
        let Some(counts) = o.counts.clone() else {
            let how = match &o.ending {
                Ending::Signal(s) => format!("was killed by signal {s}{}", signal_name(*s)),
                Ending::Failed(c) => format!("exited with status {c}"),
                Ending::TimedOut => "reached the time limit".to_string(),
                Ending::Success => "ended".to_string(),
            };
            return Err(MixError::Program {
                path: run_spec.program.display().to_string(),
                message: format!(
                    "{how} {} before anything was counted; it said:\n{}",
                    engine.under(),
                    o.stderr_tail
                ),
                fix: match (&o.ending, info.arch, !engine.emulated()) {
                    (Ending::Signal(4), Arch::X86_64, false) => SIGILL_FIX.into(),
                    (_, _, false) => {
                        "check that the program runs with these arguments (and under qemu-user)"
                            .into()
                    }
                    _ => "check that the program runs with these arguments".into(),
                },
            });
        };
        let partial = o.ending != Ending::Success;
        let (caches, thread_caches, records, sampling) = match &shared_caches {
            Some((c, t, r, s)) => (c.clone(), t.clone(), *r, s.clone()),
            None => (
                distinct.caches(o.caches.clone()),
                distinct.thread_caches(o.thread_caches.clone()),
                o.records,
                distinct.sampling(o.sampling.clone()),
            ),
        };
        let mut vnotes = Vec::new();
        if let Some(sr) = &sampling {
            vnotes.push(format!(
                "bytes per level extrapolated from a sampled cache simulation ({}, 1 in {}; FLOPs and instructions exact)",
                match sr.spec.method {
                    SampleMethod::Sets => "cache sets",
                    SampleMethod::Time => "time windows",
                },
                sr.spec.period
            ));
        }
        match &o.ending {
            Ending::Success => {}
            Ending::Failed(c) => vnotes.push(format!(
                "the program exited with status {c} {}: counts are partial",
                engine.under()
            )),
            Ending::Signal(s) => vnotes.push(format!(
                "the program was killed by signal {s}{} {}: counts are partial{}",
                signal_name(*s),
                engine.under(),
                if *s == 4 && info.arch == Arch::X86_64 && engine.emulated() {
                    format!(" ({SIGILL_FIX})")
                } else {
                    String::new()
                }
            )),
            Ending::TimedOut => vnotes.push(format!(
                "the {} reached the time limit: counts are partial",
                if engine.emulated() {
                    "emulation"
                } else {
                    "run under DynamoRIO"
                }
            )),
        }
        // The plugin sends memory records in batches (1 MiB per guest thread) and a program
        // stopped by a signal loses the batch it was filling: a run stopped early after
        // little work leaves nothing to simulate. Not an SVE limit: say what happened.
        let moved = counts.totals.bytes_loaded + counts.totals.bytes_stored;
        if partial && records == 0 && moved > 0 && !opts.machines.is_empty() {
            let how = match &o.ending {
                Ending::TimedOut => format!(
                    "reached the time limit ({} s)",
                    run_spec.timeout.map_or(0.0, |t| t.as_secs_f64())
                ),
                Ending::Signal(s) => format!("was killed by signal {s}{}", signal_name(*s)),
                Ending::Failed(c) => format!("exited with status {c}"),
                Ending::Success => "ended".to_string(),
            };
            return Err(MixError::Program {
                path: run_spec.program.display().to_string(),
                message: format!(
                    "{how} {} after moving {moved} bytes, before any of its memory accesses reached the cache simulator (the engine sends them in batches, and a program stopped by a signal loses the batch it was filling): nothing to simulate",
                    engine.under()
                ),
                fix: match &o.ending {
                    Ending::TimedOut => "give a longer --timeout, or arguments with which the program ends by itself".into(),
                    _ => "check that the program runs with these arguments (and under qemu-user)".into(),
                },
            });
        }
        let n_threads = profile::thread_list(&counts).len();
        let time_s = if regions.is_empty() && scopes.is_empty() {
            median(&native_times_s)
        } else if !scopes.is_empty() && scopes_too_busy {
            vnotes.push(format!("the scope was entered and left more than {} times in a native run: its probes (uprobes, each hit a trap into the kernel) were removed, and it has no time; time a function called this often with --function, or give the region's time with --source-gflops when projecting", native::MAX_SCOPE_HITS));
            None
        } else if !scopes.is_empty() && (scopes_untimed > 0 || probes.len() < scopes.len()) {
            if !native_times_s.is_empty() {
                vnotes.push(format!("the scope (callees included) could not be timed: its entry and return probes (uprobes) could not be set up or lost records in {scopes_untimed} of {} native runs (perf_event_paranoid, a kernel without uprobe events; HPCSCOPE_DEBUG=1 says why): no time recorded; give the region's time with --source-gflops when projecting", native_times_s.len()));
            }
            None
        } else if !region_times_s.is_empty() && region_times_s.len() as u64 == pooled.0 {
            vnotes.push(format!("region time: CPU time in the region{} measured by CPU-clock sampling at {SAMPLE_HZ} Hz (median of the {} of {} native runs that could be sampled)", scope_words(&scopes), region_times_s.len(), native_times_s.len()));
            median(&region_times_s)
        } else if pooled.1 >= MIN_SAMPLES {
            vnotes.push(format!("region time: CPU time in the region{} measured by CPU-clock sampling at {SAMPLE_HZ} Hz, pooled over {} native runs (each too short for {MIN_SAMPLES} samples): {} of {} samples in the region", scope_words(&scopes), pooled.0, pooled.2, pooled.1));
            Some(pooled.2 as f64 / SAMPLE_HZ as f64 / pooled.0 as f64)
        } else {
            if !native_times_s.is_empty() && pooled.0 == 0 {
                vnotes.push("CPU-clock sampling could not be set up for the native runs (perf_event_open refused; HPCSCOPE_DEBUG=1 says why): no region time recorded".to_string());
            } else if !native_times_s.is_empty() {
                vnotes.push(format!("the native runs are too short to time the region by sampling (fewer than {MIN_SAMPLES} samples over {} runs): no time recorded", pooled.0));
            }
            None
        };
        // The region of a program with threads: each thread's CPU time in it.
        let thread_times = if n_threads > 1 && (!regions.is_empty() || !scopes.is_empty()) {
            per_thread_times(&thread_samples, pooled, n_threads, &mut vnotes)
        } else {
            None
        };
        let mut profiles = Vec::new();
        for (i, (m, st)) in opts.machines.iter().zip(&caches).enumerate() {
            let empty = Vec::new();
            let per_thread = thread_caches.get(i).unwrap_or(&empty);
            let mut p = profile::profile(
                &application,
                opts,
                &info,
                &counts,
                m,
                st,
                per_thread,
                records,
                sve,
                time_s,
                thread_times.as_deref(),
                partial,
                &vnotes,
                engine.collector(),
            )?;
            if n_threads > 1
                && let Ok(n) = &node(m)
            {
                p.notes
                    .push(profile::node_note(n, per_thread, &run_spec.placement));
            }
            profiles.push(p);
        }
        let functions = if opts.per_function {
            profile::per_function(&counts, &info)
        } else {
            Vec::new()
        };
        variants.push(VariantReport {
            sve_bits: sve,
            counts,
            ending: o.ending,
            partial,
            emulation_s: o.wall_s,
            records,
            caches,
            thread_caches,
            placement: run_spec.placement.label(),
            profiles,
            functions,
            sampling,
        });
    }
    Ok(MixReport {
        application,
        program: run_spec.program.display().to_string(),
        arch: info.arch,
        sha256: info.sha256.clone(),
        compiler: info.compiler.clone(),
        native_times_s,
        variants,
        notes,
    })
}

/// Sampling frequency of native runs, Hz.
const SAMPLE_HZ: u64 = 10_000;
/// Fewest samples for a region time.
const MIN_SAMPLES: u64 = 50;
/// Native runs added, at most, to gather MIN_SAMPLES samples of a short program.
const MAX_EXTRA_RUNS: u32 = 32;
/// Time those extra runs may take.
const EXTRA_RUNS_BUDGET: Duration = Duration::from_secs(3);

fn median(v: &[f64]) -> Option<f64> {
    hpcscope_core::stats::median(v)
}

/// Each thread's CPU time in the region, seconds: per native run, the samples of each
/// thread (threads in the order of their ids, which is their start order) in the region;
/// the median over runs, or pooled over runs too short for `MIN_SAMPLES` samples each.
/// When the runs did not sample as many threads as the emulation counted, every thread
/// gets the longest per-thread time (the region's wall time), and a note says so.
fn per_thread_times(
    runs: &[Vec<u64>],
    pooled: (u64, u64, u64),
    n_threads: usize,
    notes: &mut Vec<String>,
) -> Option<Vec<f64>> {
    if runs.is_empty() {
        return None;
    }
    let hz = SAMPLE_HZ as f64;
    let matching = runs.iter().all(|r| r.len() == n_threads);
    let per_run_ok = pooled.1 >= MIN_SAMPLES * pooled.0;
    let time_of = |k: usize| -> f64 {
        let v: Vec<f64> = runs
            .iter()
            .map(|r| r.get(k).copied().unwrap_or(0) as f64 / hz)
            .collect();
        if per_run_ok {
            median(&v).unwrap_or(0.0)
        } else {
            v.iter().sum::<f64>() / runs.len() as f64
        }
    };
    if pooled.1 < MIN_SAMPLES {
        return None;
    }
    if matching {
        notes.push(format!(
            "per-thread region time: each thread's CPU time in the region, by CPU-clock sampling of its thread id at {SAMPLE_HZ} Hz ({} over {} native runs)",
            if per_run_ok { "median" } else { "pooled" },
            runs.len()
        ));
        return Some((0..n_threads).map(time_of).collect());
    }
    let widest = runs.iter().map(Vec::len).max().unwrap_or(0);
    let longest = (0..widest).map(time_of).fold(0.0, f64::max);
    notes.push(format!(
        "the native runs sampled {} threads where the emulation counted {n_threads}: each thread is given the longest per-thread CPU time in the region ({longest:.6} s), which stands for the region's wall time",
        runs.iter().map(|r| r.len().to_string()).collect::<Vec<_>>().join("/")
    ));
    (longest > 0.0).then(|| vec![longest; n_threads])
}

/// How a region's time is told apart when it has scopes: the samples taken while a thread
/// was inside one (between the entry and the return probes), callees included.
fn scope_words(scopes: &[(u64, u64)]) -> &'static str {
    if scopes.is_empty() {
        ""
    } else {
        " (the scope with its callees: the samples taken while a thread was between the scope's entry and its return, both probed by uprobes)"
    }
}
