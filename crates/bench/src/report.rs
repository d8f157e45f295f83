//! The full benchmark report (JSON) and the machine file built from it (TOML).
//!
//! Every bandwidth says which bytes it counts: `gbs` is the kernel's own traffic (STREAM
//! convention, the one used in machine files); `gbs_with_write_allocate` adds the
//! write-allocate reads of normal stores.

use std::path::Path;

use hpcscope_core::machine::{
    CacheGeometry, CeilingOp, ComputeCeiling, Level, LevelKind, OpLatency, Peak, SustainedPeak,
    WidthBandwidth, WidthPeak,
};
use hpcscope_core::{Machine, Precision};
use serde::{Deserialize, Serialize};

use crate::error::BenchError;
use crate::flops::FlopOp;
use crate::kernels::{Kernel, Width};
use crate::plateau::{LevelEstimate, Plateau};
use crate::stats::{Statistic, Summary};
use crate::topology::{Isa, Topology};
use crate::units::format_bytes;

/// Where and when the run happened, and how.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// `hpcscope-bench <version>`.
    pub tool: String,
    /// Host name.
    pub host: String,
    /// UTC start time.
    pub date: String,
    /// OS kernel (`Linux 6.1.0`).
    pub kernel: String,
    /// Quick mode.
    pub quick: bool,
    /// Timed samples per measurement.
    pub repetitions: usize,
    /// Target duration of one sample, seconds.
    pub sample_seconds: f64,
    /// CPUs used (the single-core runs use the first).
    pub cpus: Vec<u32>,
    /// Relative spread `(max - min) / median` above which a measurement is flagged.
    pub spread_warning: f64,
    /// Wall-clock seconds per stage (frequency, peaks, sweep, kernel table, latency,
    /// scaling).
    pub stage_seconds: Vec<(String, f64)>,
    /// Which repetition the machine file keeps.
    #[serde(default)]
    pub statistic: Statistic,
    /// Whether the single-core kernels were timed by the thread's CPU time (else the wall
    /// clock).
    #[serde(default)]
    pub cpu_clock: bool,
}

/// Core frequency measured while vector FMAs of one width run.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorFrequency {
    /// Vector width.
    pub width: Width,
    /// Frequency, GHz.
    pub ghz: f64,
}

/// Measured and nominal frequency.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frequency {
    /// Measured core frequency running scalar code, GHz (dependent-add chain, 1 cycle per
    /// add, best run).
    pub measured_ghz: f64,
    /// Measured frequency while 512-bit FMAs keep the FMA units half busy (wide vectors
    /// may lower the clock; at full FMA density some cores lower it further).
    pub vector_ghz: Vec<VectorFrequency>,
    /// Nominal frequency from the system, GHz, when known.
    pub nominal_ghz: Option<f64>,
    /// How `measured_ghz` was obtained.
    pub method: String,
}

/// One point of the working-set sweep.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// Total working set of all arrays, bytes.
    pub size_bytes: u64,
    /// Elements per array.
    pub elements: u64,
    /// Bandwidth counting the kernel's own bytes, GB/s.
    pub gbs: Summary,
    /// Median bandwidth including write-allocate traffic, GB/s.
    pub gbs_with_write_allocate: f64,
}

/// One bandwidth kernel measured at one size.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelResult {
    /// Kernel.
    pub kernel: Kernel,
    /// Formula.
    pub formula: String,
    /// Vector width.
    pub width: Width,
    /// Non-temporal stores.
    pub nt: bool,
    /// Total working set, bytes.
    pub size_bytes: u64,
    /// Bytes per element counted in `gbs` (kernel convention).
    pub bytes_per_element: u32,
    /// Bytes per element counted in `gbs_with_write_allocate`.
    pub bytes_per_element_with_write_allocate: u32,
    /// Bandwidth, kernel convention, GB/s.
    pub gbs: Summary,
    /// Median bandwidth including write-allocate traffic, GB/s.
    pub gbs_with_write_allocate: f64,
    /// Median GFLOP/s of the kernel's arithmetic.
    pub gflops: f64,
}

/// One peak kernel.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakResult {
    /// Operation.
    pub op: FlopOp,
    /// Precision.
    pub precision: Precision,
    /// Vector width.
    pub width: Width,
    /// Lanes per instruction.
    pub lanes: u32,
    /// GFLOP/s of one core.
    pub gflops: Summary,
    /// FLOPs per cycle at the measured frequency.
    pub flops_per_cycle: f64,
    /// Execution units implied by the best repetition (flops per cycle / (lanes x flops
    /// per lane)), rounded. Add, mul and FMA only: the divider is not pipelined, so one
    /// instruction per cycle per unit does not describe it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units: Option<u32>,
    /// `units x lanes x flops-per-lane x measured GHz`, GFLOP/s (add, mul and FMA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theoretical_gflops: Option<f64>,
    /// `gflops.median / theoretical_gflops` (add, mul and FMA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<f64>,
    /// Divide and square root: core cycles from one instruction to the next independent
    /// one at the median rate (`lanes / flops_per_cycle`), the published tables'
    /// "reciprocal throughput".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles_per_instruction: Option<f64>,
}

/// The latency of one FP operation at one precision and width: a chain of dependent
/// instructions ([`crate::oplat`]).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpLatencyResult {
    /// Operation.
    pub op: FlopOp,
    /// Precision.
    pub precision: Precision,
    /// Vector width.
    pub width: Width,
    /// Instruction timed (`vaddpd`).
    pub instruction: String,
    /// Nanoseconds per instruction of the chain (square root: per root, the mul chain's
    /// latency subtracted).
    pub ns: Summary,
    /// Median core cycles per instruction at the measured scalar-code clock.
    pub cycles: f64,
}

/// Latency at one working-set size.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyPoint {
    /// Working set, bytes.
    pub size_bytes: u64,
    /// Nanoseconds per dependent load.
    pub ns: Summary,
    /// Median cycles per load at the measured frequency.
    pub cycles: f64,
}

/// A measurement with several threads.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalingPoint {
    /// Threads (one per CPU).
    pub threads: usize,
    /// CPUs used.
    pub cpus: String,
    /// What ran: `fma-f64-512`, `triad-512 L2`.
    pub what: String,
    /// Level name for bandwidths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// Precision for peaks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<Precision>,
    /// Working set per thread, bytes (bandwidths).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_per_thread: Option<u64>,
    /// Aggregate rate of all threads (GB/s or GFLOP/s).
    pub value: Summary,
    /// Unit of `value`.
    pub unit: String,
    /// `value.median / threads`.
    pub per_thread: f64,
}

/// Everything a run measured.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Run information.
    pub run: RunInfo,
    /// Topology.
    pub topology: Topology,
    /// ISA extensions.
    pub isa: Isa,
    /// Frequency.
    pub frequency: Frequency,
    /// Kernel, width and byte convention of the sweep.
    pub sweep_kernel: String,
    /// The working-set sweep (one core).
    pub sweep: Vec<SweepPoint>,
    /// Plateaus detected in the sweep.
    pub plateaus: Vec<Plateau>,
    /// Sizes where the detected plateaus change, bytes.
    pub transitions: Vec<u64>,
    /// Bandwidth per level (one core).
    pub levels: Vec<LevelEstimate>,
    /// Bandwidth kernels per width at representative sizes.
    pub kernels: Vec<KernelResult>,
    /// Peak FLOP kernels.
    pub peaks: Vec<PeakResult>,
    /// Latencies of single FP operations (dependent chains), per precision and width.
    #[serde(default)]
    pub op_latencies: Vec<OpLatencyResult>,
    /// The blocked DGEMM (`--kernels dgemm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dgemm: Option<crate::dgemm::DgemmResult>,
    /// Latency per working-set size.
    pub latency: Vec<LatencyPoint>,
    /// Thread scaling.
    pub scaling: Vec<ScalingPoint>,
    /// Kernels that could not run, and why.
    pub skipped: Vec<String>,
    /// Noisy measurements and other warnings.
    pub warnings: Vec<String>,
    /// The machine description built from the measurements.
    pub machine: Machine,
}

/// What `bench` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Form {
    /// The machine file (hpcscope machine format).
    #[default]
    Toml,
    /// The full report: sweep points, peaks per kernel and width, latency, scaling, and
    /// the machine.
    Json,
}

impl Report {
    /// The report in `form`.
    pub fn text(&self, form: Form) -> Result<String, crate::BenchError> {
        Ok(match form {
            Form::Toml => self.machine.to_toml_string(),
            Form::Json => {
                let mut s = serde_json::to_string_pretty(self)
                    .map_err(|e| crate::BenchError::Internal(format!("JSON: {e}")))?;
                s.push('\n');
                s
            }
        })
    }
}

/// Inputs to [`build_machine`] that are not measurements.
#[derive(Debug, Clone, Default)]
pub struct MachineNames {
    /// Machine id (`--id`); default from the host name.
    pub id: Option<String>,
    /// Human-readable name (`--name`); default from the CPU model and host.
    pub name: Option<String>,
}

/// Turns `s` into an id: lowercase, `[a-z0-9-_.]`, other characters become `-`.
pub fn sanitize_id(s: &str) -> String {
    let v: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let v = v.trim_matches('-').to_string();
    if v.is_empty() {
        "this-machine".into()
    } else {
        v
    }
}

/// Builds the machine file from a report's measurements (the report's own `machine`
/// field is ignored).
#[allow(clippy::too_many_lines)]
pub fn build_machine(r: &Report, names: &MachineNames) -> Result<Machine, BenchError> {
    let ri = &r.run;
    let settings = format!(
        "{} repetitions of ~{} ms, {}",
        ri.repetitions,
        (ri.sample_seconds * 1000.0).round(),
        match ri.statistic {
            Statistic::Median => "median",
            Statistic::Best => "best repetition",
        },
    ) + if ri.cpu_clock {
        ", timed by the thread's CPU time"
    } else {
        ""
    };
    let stamp = format!(
        "{} on host {}, {}, {}",
        ri.tool, ri.host, ri.date, ri.kernel
    );
    let peak_width = r
        .peaks
        .iter()
        .filter(|p| p.op == FlopOp::Fma || (!r.isa.fma && p.op.is_peak()))
        .map(|p| p.width)
        .max()
        .unwrap_or(Width::Scalar);
    let mut peaks = Vec::new();
    let mut left_out: Vec<String> = Vec::new();
    for prec in [Precision::F64, Precision::F32] {
        // Best over widths and operations (FMA when the CPU has it).
        let stat = ri.statistic;
        let best = r
            .peaks
            .iter()
            .filter(|p| {
                p.precision == prec && (p.op == FlopOp::Fma || (!r.isa.fma && p.op.is_peak()))
            })
            .max_by(|a, b| a.gflops.pick(stat).total_cmp(&b.gflops.pick(stat)));
        let Some(best) = best else { continue };
        let node = r
            .scaling
            .iter()
            .filter(|s| {
                s.precision == Some(prec) && s.threads == ri.cpus.len() && ri.cpus.len() > 1
            })
            .map(|s| s.value.median)
            .next();
        let mut prov = format!(
            "{stamp}: kernel {}-{}-{} ({} independent accumulator chains, inline asm), 1 thread pinned to CPU {}, {settings} (spread {:.1}%)",
            best.op,
            prec,
            best.width,
            crate::flops::CHAINS,
            ri.cpus.first().copied().unwrap_or(0),
            100.0 * best.gflops.spread()
        );
        if node.is_some() {
            prov.push_str(&format!(
                "; node_gflops: same kernel on {} pinned threads (CPUs {})",
                ri.cpus.len(),
                crate::topology::format_cpu_list(&ri.cpus)
            ));
        }
        // The same kernel at every width: eq. 6.2 at a binary's own width.
        let mut widths: Vec<WidthPeak> = Vec::new();
        for p in r
            .peaks
            .iter()
            .filter(|p| p.precision == prec && p.op == best.op)
        {
            let bits = p.width.bits(prec.bits());
            if widths.iter().any(|w| w.vector_bits == bits) {
                continue;
            }
            widths.push(WidthPeak {
                vector_bits: bits,
                core_gflops: Some(round(p.gflops.pick(stat), 4)),
                node_gflops: None,
                provenance: format!(
                    "{stamp}: kernel {}-{}-{} ({} independent accumulator chains, inline asm), 1 thread pinned to CPU {}, {settings} (spread {:.1}%)",
                    p.op,
                    prec,
                    p.width,
                    crate::flops::CHAINS,
                    ri.cpus.first().copied().unwrap_or(0),
                    100.0 * p.gflops.spread()
                ),
            });
        }
        widths.sort_by_key(|w| w.vector_bits);
        // The other operations at every width they ran: the compute ceilings of the
        // cache-aware roofline below the peak (no-FMA, add-only, mul-only), and the
        // divider's throughput (div, sqrt: 1 FLOP per lane, never a roof of the CARM).
        let mut ceilings: Vec<ComputeCeiling> = Vec::new();
        for p in r
            .peaks
            .iter()
            .filter(|p| p.precision == prec && p.op != best.op)
        {
            let op = ceiling_op(p.op);
            let bits = p.width.bits(prec.bits());
            if ceilings.iter().any(|c| c.op == op && c.vector_bits == bits) {
                continue;
            }
            // A ceiling above the peak kernel means one of the two was disturbed (a busy
            // machine): left out, as a DGEMM above the peak is, and said in the notes.
            let (v, peak_v) = (p.gflops.pick(stat), best.gflops.pick(stat));
            if v > peak_v * 1.05 {
                left_out.push(format!(
                    "The {}-{prec}-{} kernel ({v:.2} GFLOP/s) is not kept as a ceiling: it is above the peak kernel's {peak_v:.2} GFLOP/s by more than 5 %, so one of the two was disturbed (see the warnings); measure again on a quiet machine.",
                    p.op, p.width
                ));
                continue;
            }
            ceilings.push(ComputeCeiling {
                op,
                vector_bits: bits,
                core_gflops: Some(round(p.gflops.pick(stat), 4)),
                node_gflops: None,
                label: None,
                provenance: format!(
                    "{stamp}: kernel {}-{}-{} ({}), 1 thread pinned to CPU {}, {settings} (spread {:.1}%)",
                    p.op,
                    prec,
                    p.width,
                    p.op.kernel_form(),
                    ri.cpus.first().copied().unwrap_or(0),
                    100.0 * p.gflops.spread()
                ),
            });
        }
        ceilings.sort_by_key(|c| (c.vector_bits, c.op.to_string()));
        let latencies = op_latencies(r, prec, &stamp);
        peaks.push(Peak {
            precision: prec,
            core_gflops: Some(round(best.gflops.pick(stat), 4)),
            node_gflops: node.map(|v| round(v, 4)),
            provenance: prov,
            widths,
            ceilings,
            latencies,
            dgemm: r
                .dgemm
                .as_ref()
                .filter(|_| prec == Precision::F64)
                .map(|d| {
                    // A node DGEMM above the node peak kernel was disturbed: left out.
                    let dnode = d
                        .node
                        .as_ref()
                        .filter(|nd| node.is_none_or(|v| nd.gflops.pick(stat) <= v * 1.05));
                    SustainedPeak {
                        core_gflops: Some(round(d.gflops.pick(stat), 4)),
                        node_gflops: dnode.map(|nd| round(nd.gflops.pick(stat), 4)),
                        provenance: format!(
                            "{stamp}: blocked DGEMM C += A B, n = {} (packed panels, 4x8 {} micro-kernel; checked against a naive product, relative error {:.1e}), 1 thread pinned to CPU {}{}, {settings} (spread {:.1}%)",
                            d.n,
                            d.variant,
                            d.max_rel_error,
                            ri.cpus.first().copied().unwrap_or(0),
                            dnode
                                .map(|nd| format!(
                                    "; node: one independent product per CPU at once on {} threads (CPUs {}, spread {:.1}%)",
                                    nd.threads,
                                    nd.cpus,
                                    100.0 * nd.gflops.spread()
                                ))
                                .unwrap_or_default(),
                            100.0 * d.gflops.spread()
                        ),
                    }
                })
                // A DGEMM above the peak kernel means one of them was disturbed: the peak's
                // value stands alone (the warnings say which was noisy).
                .filter(|d| {
                    d.core_gflops.unwrap_or(0.0) <= best.gflops.pick(stat) * 1.05
                }),
        });
    }
    if peaks.is_empty() {
        return Err(BenchError::Environment {
            what: "no peak FLOP kernel ran, so the machine has no peak".into(),
            fix: "include fma (or add and mul) in --kernels and a precision in --precision".into(),
        });
    }
    let mut levels = Vec::new();
    let caches = &r.topology.caches;
    for est in &r.levels {
        let geometry = if est.memory {
            None
        } else {
            est.name
                .strip_prefix('L')
                .and_then(|n| n.parse::<u32>().ok())
                .and_then(|lvl| caches.iter().find(|c| c.level == lvl))
                .map(|c| cache_geometry(est, c, ri.cpus.first().copied().unwrap_or(0)))
        };
        let node = r
            .scaling
            .iter()
            .filter(|s| {
                s.level.as_deref() == Some(est.name.as_str())
                    && s.threads == ri.cpus.len()
                    && ri.cpus.len() > 1
            })
            .map(|s| (s.value.median, s.size_per_thread))
            .next();
        let mut prov = match (est.gbs, est.at_size) {
            (Some(_), Some(size)) => format!(
                "{stamp}: {}, working set {} ({size} B, all arrays), 1 thread pinned to CPU {}, {settings}; {}; bytes counted: {}",
                r.sweep_kernel,
                crate::units::format_bytes(size),
                ri.cpus.first().copied().unwrap_or(0),
                est.rule,
                "kernel's own loads and stores (STREAM convention, triad 24 B/element; write-allocate not counted)"
            ),
            _ => format!("{stamp}: no bandwidth: {}", est.rule),
        };
        if let Some((_, Some(sz))) = node {
            prov.push_str(&format!(
                "; node_gbs: same kernel on {} pinned threads, {} per thread",
                ri.cpus.len(),
                crate::units::format_bytes(sz)
            ));
        }
        // The sweep's kernel at every width, at this level's working set.
        let mut widths: Vec<WidthBandwidth> = Vec::new();
        if let Some(size) = est.at_size.filter(|_| est.gbs.is_some()) {
            for k in r.kernels.iter().filter(|k| {
                k.kernel == Kernel::Triad
                    && !k.nt
                    && (k.size_bytes as f64 - size as f64).abs() <= 0.05 * size as f64
            }) {
                let bits = k.width.bits(64);
                if widths.iter().any(|w| w.vector_bits == bits) {
                    continue;
                }
                widths.push(WidthBandwidth {
                    vector_bits: bits,
                    core_gbs: Some(round(k.gbs.pick(ri.statistic), 4)),
                    node_gbs: None,
                    provenance: format!(
                        "{stamp}: triad with {} loads and stores (normal stores), working set {}, 1 thread pinned to CPU {}, {settings} (spread {:.1}%)",
                        if k.width == Width::Scalar {
                            "scalar 64-bit".to_string()
                        } else {
                            format!("{bits}-bit")
                        },
                        crate::units::format_bytes(k.size_bytes),
                        ri.cpus.first().copied().unwrap_or(0),
                        100.0 * k.gbs.spread()
                    ),
                });
            }
            widths.sort_by_key(|w| w.vector_bits);
        }
        levels.push(Level {
            widths,
            name: est.name.clone(),
            kind: if est.memory {
                LevelKind::Memory
            } else {
                LevelKind::Cache
            },
            core_gbs: est.gbs.map(|v| round(v, 4)),
            node_gbs: node.map(|(v, _)| round(v, 4)),
            technology: None,
            cache: geometry,
            provenance: prov,
        });
    }
    let peak_ghz = r
        .frequency
        .vector_ghz
        .iter()
        .find(|v| v.width == peak_width)
        .map(|v| v.ghz)
        .unwrap_or(r.frequency.measured_ghz);
    let host = &ri.host;
    let id = names
        .id
        .clone()
        .unwrap_or_else(|| sanitize_id(&format!("bench-{host}")));
    let model = if r.topology.model_name.is_empty() {
        "unknown CPU".to_string()
    } else {
        r.topology.model_name.clone()
    };
    let name = names
        .name
        .clone()
        .unwrap_or_else(|| format!("{model} ({host}, measured)"));
    let mut notes = Vec::new();
    if !r.warnings.is_empty() {
        notes.push(format!(
            "{} measurement(s) had a spread above {:.0}% between repetitions (see the JSON report's warnings); the machine was probably busy",
            r.warnings.len(),
            100.0 * ri.spread_warning
        ));
    }
    if !r.transitions.is_empty() {
        let t: Vec<String> = r
            .transitions
            .iter()
            .map(|t| crate::units::format_bytes(*t))
            .collect();
        notes.push(format!(
            "Plateau detection saw the bandwidth step down at about {} (total working set).",
            t.join(", ")
        ));
    }
    for est in &r.levels {
        if let Some(sc) = est.capacity_from_sweep {
            notes.push(format!(
                "{}'s capacity is the sweep's, about {}, not the {} sysfs reports: the bandwidth steps down into main memory there (a virtual machine may see a share of the host's cache). {} is measured at half that, and the machine file's cache simulation uses it.",
                est.name,
                crate::units::format_bytes(sc.bytes),
                crate::units::format_bytes(sc.sysfs_bytes),
                est.name
            ));
        }
    }
    notes.extend(left_out);
    for s in &r.skipped {
        notes.push(format!("skipped: {s}"));
    }
    let m = Machine {
        format_version: hpcscope_core::machine::FORMAT_VERSION,
        id,
        name,
        description: format!(
            "Measured by {} on {} cores ({}): sustained peaks and per-level bandwidths of one core and of the node.",
            ri.tool,
            r.topology.cores(),
            r.isa.extensions().join(", ")
        ),
        isa: r.isa.arch.clone(),
        simd: r.isa.simd_name(peak_width).into(),
        vector_bits: peak_width.bits(64),
        fma: r.isa.fma,
        sockets: r.topology.sockets,
        cores_per_socket: r.topology.cores_per_socket,
        threads_per_core: Some(r.topology.threads_per_core),
        frequency_ghz: Some(round(peak_ghz, 3)),
        scalar_frequency_ghz: (r.frequency.measured_ghz > 0.0)
            .then(|| round(r.frequency.measured_ghz, 3)),
        compiler: None,
        provenance: format!(
            "{stamp}: topology from {}; frequency_ghz is the frequency under {}-bit FMA load (scalar code: {:.3} GHz), {}",
            r.topology.source,
            peak_width.bits(64),
            r.frequency.measured_ghz,
            r.frequency.method
        ),
        peaks,
        levels,
        network: Vec::new(),
        notes,
    };
    m.validate("measured machine").map_err(|e| BenchError::BadInput {
        flag: "--sizes".into(),
        what: format!("the measurements do not make a valid machine: {e}"),
        fix: "let the sweep reach beyond the last-level cache (default sizes, or add a size >= 4x the last-level cache to --sizes)".into(),
    })?;
    Ok(m)
}

/// The numbers a bench run keeps in the history store: each precision's core and node peak
/// (`peak_f64_core_gflops`...) and each level's core and node bandwidth (`L1_core_gbs`...).
pub fn record_numbers(r: &Report) -> serde_json::Value {
    let m = &r.machine;
    let mut numbers = serde_json::Map::new();
    for p in &m.peaks {
        numbers.insert(
            format!("peak_{}_core_gflops", p.precision),
            serde_json::json!(p.core_gflops),
        );
        numbers.insert(
            format!("peak_{}_node_gflops", p.precision),
            serde_json::json!(p.node_gflops),
        );
    }
    for l in &m.levels {
        numbers.insert(
            format!("{}_core_gbs", l.name),
            serde_json::json!(l.core_gbs),
        );
        numbers.insert(
            format!("{}_node_gbs", l.name),
            serde_json::json!(l.node_gbs),
        );
    }
    serde_json::Value::Object(numbers)
}

/// A short human-readable summary of a report (peaks, levels, warnings).
pub fn summary(r: &Report) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let vf: Vec<String> = r
        .frequency
        .vector_ghz
        .iter()
        .map(|v| format!("{:.3} GHz under {}-bit FMA", v.ghz, v.width))
        .collect();
    let _ = writeln!(
        s,
        "{} on {}: {} x {} cores, {}, measured {:.3} GHz (scalar){}{}",
        r.run.tool,
        r.run.host,
        r.topology.sockets,
        r.topology.cores_per_socket,
        r.isa.extensions().join(" "),
        r.frequency.measured_ghz,
        if vf.is_empty() { "" } else { ", " },
        vf.join(", ")
    );
    for p in r
        .peaks
        .iter()
        .filter(|p| p.op == FlopOp::Fma || (!r.isa.fma && p.op.is_peak()))
    {
        let (Some(units), Some(theo), Some(eff)) = (p.units, p.theoretical_gflops, p.efficiency)
        else {
            continue;
        };
        let _ = writeln!(
            s,
            "  peak {}-{}-{}: {:.1} GFLOP/s median, best {:.1} ({:.1} flop/cycle, {:.1}% of {} unit(s) x {} lanes x {} x {:.3} GHz)",
            p.op,
            p.precision,
            p.width,
            p.gflops.median,
            p.gflops.max,
            p.flops_per_cycle,
            100.0 * eff,
            units,
            p.lanes,
            p.op.flops_per_lane(),
            theo / f64::from(units * p.lanes * p.op.flops_per_lane())
        );
    }
    if let Some(d) = &r.dgemm {
        let fma = r
            .peaks
            .iter()
            .filter(|p| {
                p.precision == Precision::F64
                    && (p.op == FlopOp::Fma || (!r.isa.fma && p.op.is_peak()))
            })
            .map(|p| p.gflops.median)
            .fold(0.0, f64::max);
        let of_fma = if fma > 0.0 {
            format!(
                ", {:.0}% of the FMA-kernel peak",
                100.0 * d.gflops.median / fma
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  peak dgemm-f64 (sustained, blocked DGEMM n={}, {} micro-kernel, 1 thread): {:.1} GFLOP/s median, best {:.1}{of_fma}",
            d.n, d.variant, d.gflops.median, d.gflops.max
        );
        if let Some(nd) = &d.node {
            let node_fma = r
                .scaling
                .iter()
                .filter(|sp| sp.precision == Some(Precision::F64) && sp.threads == nd.threads)
                .map(|sp| sp.value.median)
                .next();
            let _ = writeln!(
                s,
                "  peak dgemm-f64 node ({} threads, one product each): {:.1} GFLOP/s median, best {:.1}{}",
                nd.threads,
                nd.gflops.median,
                nd.gflops.max,
                node_fma
                    .map(|v| format!(
                        ", {:.0}% of the FMA kernel on {} threads ({v:.1})",
                        100.0 * nd.gflops.median / v,
                        nd.threads
                    ))
                    .unwrap_or_default()
            );
        }
        let kept = r
            .machine
            .peaks
            .iter()
            .any(|p| p.precision == Precision::F64 && p.dgemm.is_some());
        let _ = writeln!(
            s,
            "    {}",
            if kept {
                "the machine file keeps it as [peaks.dgemm]: `project --peak dgemm` and `explore --peak dgemm` use it instead of the FMA kernel's"
            } else {
                "not kept in the machine file: above the FMA-kernel peak, so one of them was disturbed (see the warnings)"
            }
        );
    }
    level_lines(r, &mut s);
    for p in r.latency.iter() {
        let _ = writeln!(
            s,
            "  latency {:>9}: {:.2} ns ({:.0} cycles)",
            crate::units::format_bytes(p.size_bytes),
            p.ns.median,
            p.cycles
        );
    }
    if !r.skipped.is_empty() {
        let _ = writeln!(
            s,
            "  {} kernel group(s) skipped (see notes)",
            r.skipped.len()
        );
    }
    if !r.warnings.is_empty() {
        let _ = writeln!(
            s,
            "  warning: {} noisy measurement(s) (spread > {:.0}%); see `--format json` warnings",
            r.warnings.len(),
            100.0 * r.run.spread_warning
        );
    }
    s
}

/// The `[[peaks.latencies]]` of `prec`: one entry per operation and width, sorted by (width,
/// operation), the statistic of the run (median, or the fastest repetition).
fn op_latencies(r: &Report, prec: Precision, stamp: &str) -> Vec<OpLatency> {
    let ri = &r.run;
    let ghz = r.frequency.measured_ghz;
    let mut out: Vec<OpLatency> = Vec::new();
    for l in r.op_latencies.iter().filter(|l| l.precision == prec) {
        let op = ceiling_op(l.op);
        let bits = l.width.bits(prec.bits());
        let ns = match ri.statistic {
            Statistic::Median => l.ns.median,
            Statistic::Best => l.ns.min,
        };
        if !(ns.is_finite() && ns > 0.0) || out.iter().any(|o| o.op == op && o.vector_bits == bits)
        {
            continue;
        }
        let spec = crate::flops::FlopSpec {
            op: l.op,
            precision: prec,
            width: l.width,
        };
        let clock = if ghz > 0.0 {
            format!(
                "; {:.2} core cycles = ns x the scalar-code clock {ghz:.3} GHz",
                ns * ghz
            )
        } else {
            String::new()
        };
        out.push(OpLatency {
            op,
            vector_bits: bits,
            ns: round(ns, 4),
            provenance: format!(
                "{stamp}: latency kernel {} ({}, inline asm), 1 thread pinned to CPU {}, {} repetitions of ~{} ms, {} (spread {:.1}%){clock}",
                spec.label(),
                crate::oplat::chain_form(spec),
                ri.cpus.first().copied().unwrap_or(0),
                l.ns.n,
                (crate::oplat::SAMPLE_S * 1000.0).round(),
                match ri.statistic {
                    Statistic::Median => "median",
                    Statistic::Best => "best repetition",
                },
                100.0 * l.ns.spread()
            ),
        });
    }
    out.sort_by_key(|l| (l.vector_bits, l.op.to_string()));
    out
}

/// The machine format's name of a bench operation.
fn ceiling_op(op: FlopOp) -> CeilingOp {
    match op {
        FlopOp::Add => CeilingOp::Add,
        FlopOp::Mul => CeilingOp::Mul,
        FlopOp::Fma => CeilingOp::Fma,
        FlopOp::Div => CeilingOp::Div,
        FlopOp::Sqrt => CeilingOp::Sqrt,
    }
}

fn round(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let mag = v.abs().log10().floor() as i32;
    let k = 10f64.powi(digits - 1 - mag);
    (v * k).round() / k
}

/// Writes `contents` to `path` atomically (see [`hpcscope_core::fs::write_atomic`]). A
/// failure leaves no partial file behind.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), BenchError> {
    hpcscope_core::fs::write_atomic(path, contents).map_err(|source| BenchError::Write {
        path: path.display().to_string(),
        source,
    })
}

/// Writes the chart (`svg`) and the result (`output`, or standard output) together: both are
/// staged first, so that neither is left when the other cannot be written.
pub fn write_outputs(
    svg: Option<(&Path, String)>,
    output: Option<&Path>,
    text: &str,
) -> Result<(), BenchError> {
    let mut set = hpcscope_core::fs::Outputs::new();
    let err = |p: &Path| {
        let path = p.display().to_string();
        move |source| BenchError::Write { path, source }
    };
    if let Some((p, s)) = svg {
        set.add(p, s.into_bytes()).map_err(err(p))?;
    }
    if let Some(p) = output {
        set.add(p, text.as_bytes().to_vec()).map_err(err(p))?;
    }
    set.commit().map_err(|source| BenchError::Write {
        path: output.map_or("the results".into(), |p| p.display().to_string()),
        source,
    })?;
    if output.is_none() {
        print!("{text}");
    }
    Ok(())
}

/// Checks before measuring that the result files can be written when the measurement is
/// done (a missing or read-only directory would otherwise lose it).
pub fn preflight(paths: &[&Path]) -> Result<(), BenchError> {
    for p in paths {
        hpcscope_core::fs::preflight(p).map_err(|source| BenchError::Write {
            path: p.display().to_string(),
            source,
        })?;
    }
    Ok(())
}

/// The bandwidth-vs-working-set chart (log-log): the sweep's median with its minimum and
/// maximum, each level's chosen bandwidth (dashed), and the cache capacities and detected
/// plateau transitions as vertical markers.
pub fn sweep_svg(r: &Report) -> String {
    use hpcscope_report::{ChartOptions, Series, line_chart_svg};
    let pts = |f: &dyn Fn(&crate::stats::Summary) -> f64| -> Vec<(f64, f64)> {
        r.sweep
            .iter()
            .map(|p| (p.size_bytes as f64, f(&p.gbs)))
            .collect()
    };
    let mut series = vec![
        Series {
            name: "median".into(),
            points: pts(&|s| s.median),
            dashed: false,
        },
        Series {
            name: "minimum".into(),
            points: pts(&|s| s.min),
            dashed: true,
        },
        Series {
            name: "maximum".into(),
            points: pts(&|s| s.max),
            dashed: true,
        },
    ];
    let (lo, hi) = r
        .sweep
        .iter()
        .map(|p| p.size_bytes as f64)
        .fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
    for l in &r.levels {
        if let Some(g) = l.gbs
            && lo.is_finite()
        {
            series.push(Series {
                name: format!("{} {} GB/s", l.name, hpcscope_report::fmt::label(g)),
                points: vec![(lo, g), (hi, g)],
                dashed: true,
            });
        }
    }
    let mut markers: Vec<(f64, String)> = r
        .topology
        .caches
        .iter()
        .map(|c| {
            (
                c.size_bytes as f64,
                format!("L{} {}", c.level, format_bytes(c.size_bytes)),
            )
        })
        .collect();
    markers.extend(
        r.transitions
            .iter()
            .map(|t| (*t as f64, "transition".to_string())),
    );
    line_chart_svg(
        &series,
        &ChartOptions {
            title: format!("{}: {} ({})", r.run.host, r.sweep_kernel, r.run.date),
            x_label: "working set, all arrays [bytes]".into(),
            y_label: "bandwidth [GB/s] (1e9 B/s, kernel bytes)".into(),
            log_x: true,
            log_y: true,
            vertical_markers: markers,
            caption: "The median of the repetitions at each working-set size, with their minimum and maximum (dashed); each memory level's chosen bandwidth is a dashed horizontal line; vertical markers are the cache capacities and the plateau transitions detected.".into(),
        },
    )
}

/// The summary's line per level of the machine file: its bandwidths, and the capacity the
/// sweep saw where it is not sysfs's.
fn level_lines(r: &Report, s: &mut String) {
    use std::fmt::Write;
    for l in &r.machine.levels {
        let v = |x: Option<f64>| {
            x.map(|v| format!("{v:.1} GB/s"))
                .unwrap_or_else(|| "-".into())
        };
        let swept = r.levels.iter().find(|e| e.name == l.name);
        let _ = writeln!(
            s,
            "  {:<3} core {:>12}  node {:>12}{}",
            l.name,
            v(l.core_gbs),
            v(l.node_gbs),
            swept
                .and_then(|e| e.capacity_from_sweep)
                .map_or(String::new(), |c| format!(
                    "  (capacity about {} from the sweep's step into memory, not sysfs's {})",
                    format_bytes(c.bytes),
                    format_bytes(c.sysfs_bytes)
                ))
        );
    }
}

/// A cache level's geometry for the machine file: sysfs's, with the capacity the sweep saw
/// where `est` has one ([`LevelEstimate::capacity_from_sweep`]), in whole sets.
fn cache_geometry(
    est: &LevelEstimate,
    c: &hpcscope_host::topology::CacheInfo,
    cpu: u32,
) -> CacheGeometry {
    let sysfs = format!(
        "sysfs cpu{cpu}/cache (level {}, {}){}",
        c.level,
        c.kind,
        if c.inclusive.is_some() {
            "; inclusiveness from cpuid"
        } else {
            ""
        }
    );
    let (size_bytes, provenance) = match est.capacity_from_sweep {
        Some(sc) => {
            let set = u64::from(c.line_bytes.max(1)) * u64::from(c.associativity.max(1));
            let size = (sc.bytes / set).max(1) * set;
            (
                size,
                format!(
                    "capacity {size} B from the bandwidth sweep (its step into main memory at about {}, where sysfs reports {}: a virtual machine may see a share of the host's cache); line, associativity and sharing: {sysfs}",
                    format_bytes(sc.bytes),
                    format_bytes(sc.sysfs_bytes)
                ),
            )
        }
        None => (c.size_bytes, sysfs),
    };
    CacheGeometry {
        size_bytes,
        line_bytes: c.line_bytes,
        associativity: c.associativity,
        shared_by_cores: Some(c.shared_by_cores),
        inclusive: c.inclusive,
        provenance: Some(provenance),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_rounding() {
        assert_eq!(sanitize_id("bench-My Host/1"), "bench-my-host-1");
        assert_eq!(sanitize_id("///"), "this-machine");
        assert_eq!(round(87.654321, 4), 87.65);
        assert_eq!(round(0.0123456, 3), 0.0123);
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.toml");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        // A directory that does not exist is an error, and nothing is created.
        assert!(write_atomic(&d.path().join("no/such/m.toml"), b"x").is_err());
    }
}
