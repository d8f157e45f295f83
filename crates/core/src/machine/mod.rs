//! Machine descriptions: what a machine (or one core of it) can sustain.
//!
//! A machine file is TOML (format documented in `docs/machine-format.md`). It holds the
//! topology, the sustained peak per precision (per core and per node), an ordered list of
//! memory levels of any length with their bandwidths (per core and per node), optional cache
//! geometry for the simulator, optional `[[network]]` links (MPI latency and bandwidth,
//! kept apart from the memory levels so that no link ever becomes a memory roofline), and
//! the provenance of every number.
//!
//! Bandwidths are in GB/s (1e9 B/s), peaks in GFLOP/s (1e9 FLOP/s), latencies in µs.

use serde::{Deserialize, Serialize};

use crate::error::{InputError, Result, check_positive, short_number};
use crate::range;

mod diff;
pub use diff::*;

/// The machine format version this library reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Floating-point precision of a peak or of an application.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// IEEE binary64 (double).
    F64,
    /// IEEE binary32 (single).
    F32,
}

impl Precision {
    /// Element size in bits (the `datasize` of eq. 6.2).
    pub fn bits(self) -> u32 {
        match self {
            Precision::F64 => 64,
            Precision::F32 => 32,
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
        })
    }
}

/// Sustained compute peak for one precision.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Peak {
    /// Precision this peak is for.
    pub precision: Precision,
    /// Sustained peak of one core running alone, GFLOP/s (single-core HPL, FMA kernel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_gflops: Option<f64>,
    /// Sustained peak of the whole node with all cores busy, GFLOP/s (node HPL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_gflops: Option<f64>,
    /// Where these numbers come from (a table of a document, a vendor page, a measurement).
    pub provenance: String,
    /// The same peak with every FP instruction of one width (scalar, 128-bit...): a
    /// binary's compute ceiling can use the ones of its own width (eq. 6.2 at the binary's
    /// width) instead of `core_gflops`, which is the best kernel's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub widths: Vec<WidthPeak>,
    /// Compute ceilings below the peak (cache-aware roofline): one kernel of one operation
    /// at one width each (scalar, add-only, mul-only...), see [`Machine::carm_ceilings`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ceilings: Vec<ComputeCeiling>,
    /// The sustained peak of a DGEMM (the seeds' HPL stand-in): what a dense, blocked
    /// matrix product reaches, kept beside the peak kernel's value; selectable as the peak
    /// of a projection ([`Machine::with_peak`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dgemm: Option<SustainedPeak>,
    /// Latencies of single FP operations (add, mul, FMA, divide, square root) at one width
    /// each: the time a loop-carried dependency chain spends per operation on it
    /// ([`Machine::latency_ns`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latencies: Vec<OpLatency>,
}

/// The latency of one FP operation at one width: the time from its inputs to its result, as
/// a chain of dependent operations measures it (each waits for the one before).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpLatency {
    /// Operation.
    pub op: CeilingOp,
    /// Width, bits (the element size for scalar code).
    pub vector_bits: u32,
    /// Time per operation of a dependent chain, nanoseconds.
    pub ns: f64,
    /// Where the value comes from (a kernel and its clock, or a published table and the
    /// clock it was converted at).
    pub provenance: String,
}

/// A sustained peak measured by a whole kernel (a DGEMM, HPL) rather than an FP loop.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SustainedPeak {
    /// One core running alone, GFLOP/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_gflops: Option<f64>,
    /// The node with every core busy, GFLOP/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_gflops: Option<f64>,
    /// Kernel (or library), matrix size, repetitions, spread, date; or a document's table.
    pub provenance: String,
}

/// Which peak a projection uses.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum PeakChoice {
    /// The `[[peaks]]` values of the machine files (the FP kernel `bench` measured, or the
    /// HPL of a document).
    #[default]
    Listed,
    /// The sustained DGEMM of `[peaks.dgemm]` (the seeds use HPL), eq. 6.2 weighing it at
    /// the machine's width.
    Dgemm,
}

impl std::fmt::Display for PeakChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PeakChoice::Listed => "listed",
            PeakChoice::Dgemm => "dgemm",
        })
    }
}

/// The floating-point operation of a compute-ceiling kernel.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CeilingOp {
    /// Additions only (1 FLOP per lane).
    Add,
    /// Multiplications only (1 FLOP per lane).
    Mul,
    /// Fused multiply-adds (2 FLOPs per lane).
    Fma,
    /// Divisions (1 FLOP per lane): the divider's throughput, not a roof of the
    /// cache-aware roofline.
    Div,
    /// Square roots (1 FLOP per lane): the divider's throughput, not a roof of the
    /// cache-aware roofline.
    Sqrt,
}

impl CeilingOp {
    /// Whether a ceiling of this operation is an arithmetic roof of the cache-aware
    /// roofline (add, mul, FMA). Divide and square-root ceilings give the divider's
    /// throughput, for a model of a code's divisions: never a roof, never the peak.
    pub fn is_roof(self) -> bool {
        matches!(self, CeilingOp::Add | CeilingOp::Mul | CeilingOp::Fma)
    }
}

impl std::fmt::Display for CeilingOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CeilingOp::Add => "add",
            CeilingOp::Mul => "mul",
            CeilingOp::Fma => "fma",
            CeilingOp::Div => "div",
            CeilingOp::Sqrt => "sqrt",
        })
    }
}

/// One compute ceiling: the sustained rate of a kernel of one operation at one width.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputeCeiling {
    /// Operation of every FP instruction of the kernel.
    pub op: CeilingOp,
    /// Width of every FP instruction, bits (the element size for scalar code).
    pub vector_bits: u32,
    /// Rate of one core running alone, GFLOP/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_gflops: Option<f64>,
    /// Rate of the node with every core busy, GFLOP/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_gflops: Option<f64>,
    /// The source's own name of the kernel (`mult simd`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Where the numbers come from.
    pub provenance: String,
}

/// The compute ceilings of the cache-aware roofline below the peak.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CarmKind {
    /// No SIMD: the best scalar kernel (FMA when the core has it).
    Scalar,
    /// No FMA: the best add-only or mul-only kernel at any width.
    NoFma,
    /// Additions only, best width.
    AddOnly,
    /// Multiplications only, best width.
    MulOnly,
}

impl CarmKind {
    /// Every kind, highest ceiling usually last.
    pub const ALL: [CarmKind; 4] = [
        CarmKind::Scalar,
        CarmKind::NoFma,
        CarmKind::AddOnly,
        CarmKind::MulOnly,
    ];

    /// Short name (`no-FMA`).
    pub fn name(self) -> &'static str {
        match self {
            CarmKind::Scalar => "scalar",
            CarmKind::NoFma => "no-FMA",
            CarmKind::AddOnly => "add-only",
            CarmKind::MulOnly => "mul-only",
        }
    }
}

/// A compute ceiling of the cache-aware roofline, read from a machine.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CarmCeiling {
    /// Which ceiling.
    pub kind: CarmKind,
    /// GFLOP/s in the scope asked for.
    pub gflops: f64,
    /// Operation of the kernel it comes from.
    pub op: CeilingOp,
    /// Width of that kernel, bits.
    pub vector_bits: u32,
    /// The kernel in words (`fma 64-bit`, or the source's label).
    pub kernel: String,
    /// How the value was read (given, a node share...).
    pub derivation: Derivation,
}

/// The sustained peak of one precision when every FP instruction has one width.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WidthPeak {
    /// Width, bits: the element size for scalar code (64 for f64), 128, 256, 512...
    pub vector_bits: u32,
    /// Sustained peak of one core at this width, GFLOP/s (FMA when the machine has it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_gflops: Option<f64>,
    /// Sustained peak of the node at this width, GFLOP/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_gflops: Option<f64>,
    /// Where the numbers come from.
    pub provenance: String,
}

/// What a memory level is.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LevelKind {
    /// A cache level.
    Cache,
    /// A memory: DRAM, HBM, another socket's memory, CXL...
    Memory,
}

/// Geometry of a cache level, used by the cache simulator.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheGeometry {
    /// Capacity of one instance of the cache, bytes.
    pub size_bytes: u64,
    /// Line size, bytes.
    pub line_bytes: u32,
    /// Ways per set.
    pub associativity: u32,
    /// How many cores share one instance (1 = private).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_by_cores: Option<u32>,
    /// Whether the level holds every line of the levels above it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inclusive: Option<bool>,
    /// Where the geometry comes from, when it differs from the level's provenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<String>,
}

/// One level of the memory hierarchy, ordered from the core outwards.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Level {
    /// Name, matched between machines and profiles: `L1`, `L2`, `L3`, `MM` (main memory),
    /// or any other (`MM-remote`, `HBM`, `CXL`).
    pub name: String,
    /// Cache or memory.
    pub kind: LevelKind,
    /// Sustained bandwidth of one core running alone from this level, GB/s (STREAM triad).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_gbs: Option<f64>,
    /// Sustained bandwidth of the whole node from this level with all cores busy, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_gbs: Option<f64>,
    /// Memory technology for memory levels (`DDR4`, `HBM2`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub technology: Option<String>,
    /// Cache geometry for the simulator (caches only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheGeometry>,
    /// Where the bandwidths come from.
    pub provenance: String,
    /// The same level's bandwidth when the loads and stores have a given width (scalar,
    /// 128-bit, 256-bit vectors...): a binary's roofline can use the ones of its own width
    /// instead of `core_gbs`, which is the best kernel's (usually the widest).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub widths: Vec<WidthBandwidth>,
}

/// The bandwidth of one memory level when every load and store has one width.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WidthBandwidth {
    /// Width of each load and store, bits: the element size for scalar code (64 for f64),
    /// 128 (SSE, NEON), 256 (AVX2), 512 (AVX-512), or an SVE vector length.
    pub vector_bits: u32,
    /// Sustained bandwidth of one core running alone at this width, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_gbs: Option<f64>,
    /// Sustained bandwidth of the whole node at this width, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_gbs: Option<f64>,
    /// Where the numbers come from (kernel, working set, repetitions, spread, date).
    pub provenance: String,
}

/// Where the two communicating ranks of a network measurement ran.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Both ranks on one node: shared memory, or the loopback of the interconnect.
    IntraNode,
    /// The ranks on two different nodes: the interconnect.
    InterNode,
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Placement::IntraNode => "intra-node",
            Placement::InterNode => "inter-node",
        })
    }
}

/// How a network link's latency and bandwidth were obtained from measured times.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkFit {
    /// The model: `hockney` (t = t0 + n / B).
    pub model: String,
    /// What the least squares minimise: `relative` (weights 1/t^2) or `absolute` (OLS).
    pub weights: String,
    /// Message sizes the fit used, bytes.
    pub sizes_bytes: Vec<u64>,
    /// Coefficient of determination of the fitted times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r2: Option<f64>,
    /// Largest |model - measured| / measured over the fitted sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rel_error: Option<f64>,
}

/// A communication link between two ranks (MPI ping-pong), Hockney's model
/// t(n) = latency + n / bandwidth for an n-byte message.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkLink {
    /// Name, unique in the machine: `mpi-intra-node`, `mpi-inter-node`, ...
    pub name: String,
    /// Whether the two ranks shared a node.
    pub placement: Placement,
    /// Zero-byte message time t0, µs.
    pub latency_us: f64,
    /// Asymptotic bandwidth B of one direction, GB/s (1e9 B/s).
    pub bandwidth_gbs: f64,
    /// Half-performance message size n_1/2 = t0 x B, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_half_bytes: Option<f64>,
    /// The benchmark the times come from (`pingpong`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<String>,
    /// Ranks of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<u32>,
    /// The command that started the ranks (`mpirun -np 2`, `srun -n 2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<String>,
    /// The MPI library (`MPI_Get_library_version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi_library: Option<String>,
    /// How latency and bandwidth were fitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<NetworkFit>,
    /// Where the numbers come from (tool and version, host, date; or a document's table).
    pub provenance: String,
}

/// Longest latency accepted, µs: above, the value is probably in ns.
const MAX_LATENCY_US: f64 = 1.0e6;

/// A machine, real (measured or published) or hypothetical (derived by transforms).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// Format version; must be [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Short identifier used on the command line (`thunderx2`).
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// One or two sentences on what the machine is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Instruction-set architecture: `aarch64`, `x86_64`, ...
    pub isa: String,
    /// Vector extension used for the peak: `neon`, `sve`, `avx512`, `avx2`, `sse2`...
    pub simd: String,
    /// Vector register width in bits used by the peak (128 for NEON, 512 for AVX-512...).
    pub vector_bits: u32,
    /// Whether the peak uses fused multiply-add.
    pub fma: bool,
    /// Sockets in the node.
    pub sockets: u32,
    /// Cores per socket.
    pub cores_per_socket: u32,
    /// Hardware threads per core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_per_core: Option<u32>,
    /// Core frequency in GHz at which the peaks were obtained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_ghz: Option<f64>,
    /// Core frequency in GHz under scalar code (a chain of dependent integer adds, one
    /// cycle each), when it differs from `frequency_ghz` (the clock under the widest FP
    /// load): the time of an integer operation on a loop's dependency chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scalar_frequency_ghz: Option<f64>,
    /// Compiler the published numbers were obtained with, when relevant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler: Option<String>,
    /// Where the topology fields (ISA, vector width, cores, frequency) come from.
    pub provenance: String,
    /// Sustained peaks, one entry per precision.
    pub peaks: Vec<Peak>,
    /// Memory levels ordered from the core outwards; the last one is main memory.
    pub levels: Vec<Level>,
    /// Communication links between ranks (MPI), apart from the memory levels: they have no
    /// roofline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<NetworkLink>,
    /// Free-form remarks (what is unvalidated, what was assumed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Largest bandwidth accepted, GB/s: above, the value is probably in B/s.
const MAX_GBS: f64 = 1.0e6;
/// Largest peak accepted, GFLOP/s: above, the value is probably in FLOP/s.
const MAX_GFLOPS: f64 = 1.0e7;
/// How far a compute ceiling may lie above its peak (measurement noise) before it is refused.
const CEILING_ABOVE_PEAK: f64 = 0.05;
/// Largest cache line, bytes.
const MAX_LINE_BYTES: u32 = 1 << 16;
/// Largest cache, bytes (16 GiB): more than ten times the largest cache built (about
/// 1 GiB of stacked L3 per socket), and what the cache simulator still holds in memory.
const MAX_CACHE_BYTES: u64 = 1 << 34;
/// Most ways of a cache.
const MAX_WAYS: u32 = 1 << 20;

impl Machine {
    /// Parses a machine from TOML text and validates it; `origin` names the source in errors.
    pub fn from_toml_str(src: &str, origin: &str) -> Result<Machine> {
        let m: Machine = crate::error::toml_from_str(
            src,
            origin,
            "see docs/machine-format.md for the fields; `hpcscope machine show thunderx2 --format toml` prints a complete example",
        )?;
        m.validate(origin)?;
        Ok(m)
    }

    /// Serializes the machine as TOML.
    pub fn to_toml_string(&self) -> String {
        toml::to_string_pretty(self).expect("a machine always serializes to TOML")
    }

    /// Total number of cores of the node.
    pub fn cores(&self) -> u32 {
        // Validated machines have at most 64 x 4096 cores; never wrap on others.
        self.sockets.saturating_mul(self.cores_per_socket).max(1)
    }

    /// The peak entry for `precision`, if any.
    pub fn peak(&self, precision: Precision) -> Option<&Peak> {
        self.peaks.iter().find(|p| p.precision == precision)
    }

    /// The level called `name`, if any.
    pub fn level(&self, name: &str) -> Option<&Level> {
        self.levels.iter().find(|l| l.name == name)
    }

    /// The network link called `name`, if any.
    pub fn network_link(&self, name: &str) -> Option<&NetworkLink> {
        self.network.iter().find(|l| l.name == name)
    }

    /// Adds `link`, replacing the link of the same name if there is one.
    pub fn set_network_link(&mut self, link: NetworkLink) {
        match self.network.iter_mut().find(|l| l.name == link.name) {
            Some(old) => *old = link,
            None => self.network.push(link),
        }
    }

    /// Names of the levels, in order.
    pub fn level_names(&self) -> Vec<String> {
        self.levels.iter().map(|l| l.name.clone()).collect()
    }

    /// This machine with the peaks a projection should use: [`PeakChoice::Listed`] keeps
    /// it as it is; [`PeakChoice::Dgemm`] puts each precision's `[peaks.dgemm]` values in
    /// place of its peak (a precision without one keeps its peak, and says so in `notes`).
    /// The per-width peaks go (they are the FP kernel's: eq. 6.2 then weighs the DGEMM value
    /// at the machine's width, as the seeds weigh HPL), and so do ceilings above the DGEMM.
    /// Fails when no precision has a DGEMM value.
    pub fn with_peak(&self, choice: PeakChoice) -> Result<Machine> {
        if choice == PeakChoice::Listed {
            return Ok(self.clone());
        }
        if self.peaks.iter().all(|p| p.dgemm.is_none()) {
            return Err(crate::error::Error::mismatch(
                format!(
                    "machine '{}' has no DGEMM peak ([peaks.dgemm]) to project with",
                    self.id
                ),
                "measure one with `hpcscope bench --kernels dgemm` (and write the machine file), add [peaks.dgemm] with its provenance, or use --peak listed",
            ));
        }
        let mut m = self.clone();
        for p in &mut m.peaks {
            let Some(d) = p.dgemm.clone() else {
                m.notes.push(format!(
                    "peak {}: no DGEMM value, the listed peak is used",
                    p.precision
                ));
                continue;
            };
            p.core_gflops = d.core_gflops;
            p.node_gflops = d.node_gflops;
            p.provenance = format!("DGEMM: {}", d.provenance);
            p.widths.clear();
            let (core, node) = (p.core_gflops, p.node_gflops);
            p.ceilings.retain(|c| {
                let fits = |v: Option<f64>, peak: Option<f64>| match (v, peak) {
                    (Some(v), Some(peak)) => v <= peak * (1.0 + CEILING_ABOVE_PEAK),
                    _ => true,
                };
                fits(c.core_gflops, core) && fits(c.node_gflops, node)
            });
        }
        Ok(m)
    }

    /// Checks every field; returns all problems at once.
    #[allow(clippy::too_many_lines)]
    pub fn validate(&self, origin: &str) -> Result<()> {
        let mut errs = Vec::new();
        if self.format_version != FORMAT_VERSION {
            errs.push(InputError::new(
                origin,
                "format_version",
                format!(
                    "is {}, this hpcscope reads version {FORMAT_VERSION}",
                    self.format_version
                ),
                format!(
                    "set format_version = {FORMAT_VERSION} after checking docs/machine-format.md"
                ),
            ));
        }
        for (field, v) in [
            ("id", &self.id),
            ("name", &self.name),
            ("isa", &self.isa),
            ("simd", &self.simd),
            ("provenance", &self.provenance),
        ] {
            if v.trim().is_empty() {
                errs.push(InputError::new(
                    origin,
                    field,
                    "is empty",
                    format!("give the machine's {field}"),
                ));
            }
        }
        if self.id.contains(char::is_whitespace) || self.id.contains('/') {
            errs.push(InputError::new(
                origin,
                "id",
                format!("'{}' contains spaces or '/'", self.id),
                "use a short identifier such as `thunderx2` or `my-node`",
            ));
        }
        if self.vector_bits == 0 || !self.vector_bits.is_multiple_of(32) {
            errs.push(InputError::new(
                origin,
                "vector_bits",
                format!("must be a positive multiple of 32, found {}", self.vector_bits),
                "give the vector register width in bits: 64 (scalar f64), 128 (SSE, NEON), 256 (AVX2), 512 (AVX-512, SVE-512)",
            ));
        } else {
            errs.extend(range::check(
                &range::VECTOR_BITS,
                origin,
                "vector_bits",
                f64::from(self.vector_bits),
            ));
        }
        for (field, v, q) in [
            ("sockets", self.sockets, &range::SOCKETS),
            (
                "cores_per_socket",
                self.cores_per_socket,
                &range::CORES_PER_SOCKET,
            ),
        ] {
            if v == 0 {
                errs.push(InputError::new(
                    origin,
                    field,
                    "must be at least 1",
                    "give a positive integer",
                ));
            } else {
                errs.extend(range::check(q, origin, field, f64::from(v)));
            }
        }
        for (field, f) in [
            ("frequency_ghz", self.frequency_ghz),
            ("scalar_frequency_ghz", self.scalar_frequency_ghz),
        ] {
            if let Some(f) = f {
                errs.extend(range::check(&range::FREQUENCY_GHZ, origin, field, f));
            }
        }
        for (field, n, max, what) in [
            (
                "peaks",
                self.peaks.len(),
                range::MAX_PEAKS,
                "peaks (one per precision)",
            ),
            (
                "levels",
                self.levels.len(),
                range::MAX_LEVELS,
                "memory levels",
            ),
            (
                "network",
                self.network.len(),
                range::MAX_LINKS,
                "network links",
            ),
        ] {
            if n > max {
                errs.push(InputError::new(
                    origin,
                    field,
                    format!("has {n} entries; a machine has at most {max} {what}"),
                    format!("describe at most {max} {what}: the caches and memories a core sees, not every instance"),
                ));
            }
        }
        if !errs.is_empty()
            && (self.levels.len() > range::MAX_LEVELS
                || self.peaks.len() > range::MAX_PEAKS
                || self.network.len() > range::MAX_LINKS)
        {
            // Do not list thousands of per-entry problems after the count that explains them.
            return Err(crate::Error::Inputs(errs));
        }
        if self.peaks.is_empty() {
            errs.push(InputError::new(
                origin,
                "peaks",
                "no peak is given",
                "add a [[peaks]] table with precision = \"f64\" and core_gflops and/or node_gflops",
            ));
        }
        let mut seen = Vec::new();
        for (i, p) in self.peaks.iter().enumerate() {
            let f = format!("peaks[{i}]");
            if seen.contains(&p.precision) {
                errs.push(InputError::new(
                    origin,
                    format!("{f}.precision"),
                    format!("{} appears twice", p.precision),
                    "give one [[peaks]] entry per precision",
                ));
            }
            seen.push(p.precision);
            if p.core_gflops.is_none() && p.node_gflops.is_none() {
                errs.push(InputError::new(
                    origin,
                    &f,
                    "has neither core_gflops nor node_gflops",
                    "give at least one of them, in GFLOP/s",
                ));
            }
            for (name, v) in [
                ("core_gflops", p.core_gflops),
                ("node_gflops", p.node_gflops),
            ] {
                if let Some(v) = v {
                    if v.is_finite() && v > MAX_GFLOPS {
                        errs.push(InputError::new(
                            origin,
                            format!("{f}.{name}"),
                            format!(
                                "{} GFLOP/s is implausible: it looks like FLOP/s",
                                short_number(v)
                            ),
                            format!(
                                "the unit is GFLOP/s (1e9 FLOP/s): write {}",
                                short_number(v / 1e9)
                            ),
                        ));
                    } else if let Some(e) =
                        check_positive(origin, &format!("{f}.{name}"), v, "GFLOP/s")
                    {
                        errs.push(e);
                    } else {
                        errs.extend(range::check(
                            &range::PEAK_GFLOPS,
                            origin,
                            &format!("{f}.{name}"),
                            v,
                        ));
                    }
                }
            }
            if p.provenance.trim().is_empty() {
                errs.push(InputError::new(origin, format!("{f}.provenance"), "is empty", "say where the peak comes from (benchmark and date, table of a document, vendor page)"));
            }
            for (w, wp) in p.widths.iter().enumerate() {
                let g = format!("{f}.widths[{w}]");
                errs.extend(check_width_entry(
                    origin,
                    &g,
                    wp.vector_bits,
                    [
                        ("core_gflops", wp.core_gflops),
                        ("node_gflops", wp.node_gflops),
                    ],
                    "GFLOP/s",
                    MAX_GFLOPS,
                    &wp.provenance,
                ));
                if p.widths[..w]
                    .iter()
                    .any(|o| o.vector_bits == wp.vector_bits)
                {
                    errs.push(InputError::new(
                        origin,
                        format!("{g}.vector_bits"),
                        format!("width {} appears twice", wp.vector_bits),
                        "give one [[peaks.widths]] entry per width",
                    ));
                }
            }
            for (k, l) in p.latencies.iter().enumerate() {
                let g = format!("{f}.latencies[{k}]");
                errs.extend(l.check(origin, &g));
                if p.latencies[..k]
                    .iter()
                    .any(|o| o.op == l.op && o.vector_bits == l.vector_bits)
                {
                    errs.push(InputError::new(
                        origin,
                        format!("{g}.op"),
                        format!("{} at {} bits appears twice", l.op, l.vector_bits),
                        "give one [[peaks.latencies]] entry per operation and width",
                    ));
                }
            }
            for (k, c) in p.ceilings.iter().enumerate() {
                let g = format!("{f}.ceilings[{k}]");
                errs.extend(check_width_entry(
                    origin,
                    &g,
                    c.vector_bits,
                    [
                        ("core_gflops", c.core_gflops),
                        ("node_gflops", c.node_gflops),
                    ],
                    "GFLOP/s",
                    MAX_GFLOPS,
                    &c.provenance,
                ));
                if p.ceilings[..k]
                    .iter()
                    .any(|o| o.op == c.op && o.vector_bits == c.vector_bits)
                {
                    errs.push(InputError::new(
                        origin,
                        format!("{g}.op"),
                        format!("{} at {} bits appears twice", c.op, c.vector_bits),
                        "give one [[peaks.ceilings]] entry per operation and width",
                    ));
                }
                for (name, v, peak) in [
                    ("core_gflops", c.core_gflops, p.core_gflops),
                    ("node_gflops", c.node_gflops, p.node_gflops),
                ] {
                    if let (Some(v), Some(peak)) = (v, peak)
                        && v.is_finite()
                        && peak.is_finite()
                        && v > peak * (1.0 + CEILING_ABOVE_PEAK)
                    {
                        errs.push(InputError::new(
                            origin,
                            format!("{g}.{name}"),
                            format!(
                                "{} GFLOP/s is above the peak's {} GFLOP/s by more than {:.0} %",
                                short_number(v),
                                short_number(peak),
                                CEILING_ABOVE_PEAK * 100.0
                            ),
                            "the peak is the best kernel: raise the peak to this value, or check the ceiling's unit and scope (core or node)",
                        ));
                    }
                }
            }
        }
        for (i, p) in self.peaks.iter().enumerate() {
            let Some(d) = &p.dgemm else { continue };
            let g = format!("peaks[{i}].dgemm");
            if d.core_gflops.is_none() && d.node_gflops.is_none() {
                errs.push(InputError::new(
                    origin,
                    &g,
                    "has neither core_gflops nor node_gflops",
                    "give the DGEMM's GFLOP/s of one core, of the node, or both",
                ));
            }
            for (name, v, peak) in [
                ("core_gflops", d.core_gflops, p.core_gflops),
                ("node_gflops", d.node_gflops, p.node_gflops),
            ] {
                let Some(v) = v else { continue };
                let f = format!("{g}.{name}");
                if let Some(e) = check_positive(origin, &f, v, "GFLOP/s") {
                    errs.push(e);
                    continue;
                }
                if let Some(e) = range::check(&range::PEAK_GFLOPS, origin, &f, v) {
                    errs.push(e);
                    continue;
                }
                if let Some(peak) = peak
                    && peak.is_finite()
                    && v > peak * (1.0 + CEILING_ABOVE_PEAK)
                {
                    errs.push(InputError::new(
                        origin,
                        f,
                        format!(
                            "{} GFLOP/s is above the peak's {} GFLOP/s by more than {:.0} %",
                            short_number(v),
                            short_number(peak),
                            CEILING_ABOVE_PEAK * 100.0
                        ),
                        "a DGEMM cannot outrun the peak kernel: check the unit and the scope (core or node), or raise the peak",
                    ));
                }
            }
            if d.provenance.trim().is_empty() {
                errs.push(InputError::new(
                    origin,
                    format!("{g}.provenance"),
                    "is empty",
                    "say where the DGEMM value comes from (kernel or library, matrix size, date)",
                ));
            }
        }
        if self.levels.is_empty() {
            errs.push(InputError::new(
                origin,
                "levels",
                "no memory level is given",
                "add [[levels]] tables ordered from L1 to main memory",
            ));
        }
        for (i, l) in self.levels.iter().enumerate() {
            let f = format!("levels[{i}]");
            if l.name.trim().is_empty() {
                errs.push(InputError::new(
                    origin,
                    format!("{f}.name"),
                    "is empty",
                    "name the level: L1, L2, L3, MM...",
                ));
            }
            if self.levels[..i].iter().any(|o| o.name == l.name) {
                errs.push(InputError::new(
                    origin,
                    format!("{f}.name"),
                    format!("level '{}' appears twice", l.name),
                    "give each level a distinct name",
                ));
            }
            if l.core_gbs.is_none()
                && l.node_gbs.is_none()
                && (l.kind == LevelKind::Memory || l.cache.is_none())
            {
                errs.push(InputError::new(origin, &f, format!("level '{}' has neither core_gbs nor node_gbs", l.name), "give at least one bandwidth, in GB/s (a cache level may instead give only its [levels.cache] geometry: it is then simulated but has no roofline)"));
            }
            for (name, v) in [("core_gbs", l.core_gbs), ("node_gbs", l.node_gbs)] {
                if let Some(v) = v {
                    if v.is_finite() && v > MAX_GBS {
                        errs.push(InputError::new(
                            origin,
                            format!("{f}.{name}"),
                            format!("{} GB/s is implausible: it looks like B/s", short_number(v)),
                            format!(
                                "the unit is GB/s (1e9 B/s): write {}",
                                short_number(v / 1e9)
                            ),
                        ));
                    } else if let Some(e) =
                        check_positive(origin, &format!("{f}.{name}"), v, "GB/s")
                    {
                        errs.push(e);
                    } else {
                        errs.extend(range::check(
                            &range::BANDWIDTH_GBS,
                            origin,
                            &format!("{f}.{name}"),
                            v,
                        ));
                    }
                }
            }
            if l.provenance.trim().is_empty() {
                errs.push(InputError::new(
                    origin,
                    format!("{f}.provenance"),
                    "is empty",
                    "say where the bandwidth comes from",
                ));
            }
            for (w, wb) in l.widths.iter().enumerate() {
                errs.extend(wb.check(origin, &format!("{f}.widths[{w}]")));
                if l.widths[..w]
                    .iter()
                    .any(|o| o.vector_bits == wb.vector_bits)
                {
                    errs.push(InputError::new(
                        origin,
                        format!("{f}.widths[{w}].vector_bits"),
                        format!("width {} appears twice", wb.vector_bits),
                        "give one [[levels.widths]] entry per width",
                    ));
                }
            }
            if let Some(c) = &l.cache {
                if l.kind == LevelKind::Memory {
                    errs.push(InputError::new(
                        origin,
                        format!("{f}.cache"),
                        "a memory level has a cache geometry",
                        "remove [levels.cache] or set kind = \"cache\"",
                    ));
                }
                if c.line_bytes == 0 || !c.line_bytes.is_power_of_two() {
                    errs.push(InputError::new(
                        origin,
                        format!("{f}.cache.line_bytes"),
                        format!("must be a power of two, found {}", c.line_bytes),
                        "typical values are 64 (x86, Neoverse) or 256 (A64FX)",
                    ));
                }
                if c.line_bytes > MAX_LINE_BYTES {
                    errs.push(InputError::new(
                        origin,
                        format!("{f}.cache.line_bytes"),
                        format!(
                            "{} bytes is larger than the {MAX_LINE_BYTES}-byte limit",
                            c.line_bytes
                        ),
                        "typical values are 64 (x86, Neoverse) or 256 (A64FX)",
                    ));
                }
                if c.size_bytes > MAX_CACHE_BYTES {
                    errs.push(InputError::new(
                        origin,
                        format!("{f}.cache.size_bytes"),
                        format!(
                            "{} bytes is larger than the 16 GiB limit of a cache",
                            c.size_bytes
                        ),
                        "give the capacity of one cache instance in bytes (32 KiB = 32768)",
                    ));
                }
                if c.associativity > MAX_WAYS {
                    errs.push(InputError::new(
                        origin,
                        format!("{f}.cache.associativity"),
                        format!(
                            "{} ways is more than the {MAX_WAYS} a cache can have here",
                            c.associativity
                        ),
                        "give the number of ways per set (a fully associative cache: size / line)",
                    ));
                }
                if c.associativity == 0 {
                    errs.push(InputError::new(
                        origin,
                        format!("{f}.cache.associativity"),
                        "must be at least 1",
                        "give the number of ways per set",
                    ));
                }
                let set_bytes = u64::from(c.line_bytes) * u64::from(c.associativity.max(1));
                if c.size_bytes == 0 || (c.line_bytes > 0 && c.size_bytes % set_bytes != 0) {
                    errs.push(InputError::new(origin, format!("{f}.cache.size_bytes"), format!("{} is not a positive multiple of line_bytes x associativity = {set_bytes}", c.size_bytes), "give the capacity of one cache instance in bytes (32 KiB = 32768)"));
                }
            }
        }
        for (i, n) in self.network.iter().enumerate() {
            errs.extend(n.check(origin, &format!("network[{i}]")));
            if self.network[..i].iter().any(|o| o.name == n.name) {
                errs.push(InputError::new(
                    origin,
                    format!("network[{i}].name"),
                    format!("network link '{}' appears twice", n.name),
                    "give each [[network]] link a distinct name (mpi-intra-node, mpi-inter-node)",
                ));
            }
        }
        // Order: caches first, then memories.
        if let Some(first_mem) = self.levels.iter().position(|l| l.kind == LevelKind::Memory) {
            if let Some(j) = self.levels[first_mem..]
                .iter()
                .position(|l| l.kind == LevelKind::Cache)
            {
                let j = first_mem + j;
                errs.push(InputError::new(
                    origin,
                    format!("levels[{j}].kind"),
                    format!(
                        "cache level '{}' comes after memory level '{}'",
                        self.levels[j].name, self.levels[first_mem].name
                    ),
                    "order levels from the core outwards: caches first, then memories",
                ));
            }
        } else if !self.levels.is_empty() {
            let last = self.levels.len() - 1;
            errs.push(InputError::new(
                origin,
                format!("levels[{last}].kind"),
                "no level has kind = \"memory\"",
                "the last level must be main memory: set kind = \"memory\"",
            ));
        }
        if errs.is_empty() {
            Ok(())
        } else if errs.len() == 1 {
            Err(errs.remove(0).into())
        } else {
            Err(crate::Error::Inputs(errs))
        }
    }

    /// Sustained peak of one core for `precision`, GFLOP/s, with how it was obtained.
    ///
    /// Uses `core_gflops`; without it, `node_gflops / cores` (eq. 7.1's per-core share).
    pub fn core_peak_gflops(&self, precision: Precision) -> Option<(f64, Derivation)> {
        let p = self.peak(precision)?;
        match (p.core_gflops, p.node_gflops) {
            (Some(c), _) => Some((c, Derivation::Given)),
            (None, Some(n)) => Some((n / f64::from(self.cores()), Derivation::NodeShare)),
            (None, None) => None,
        }
    }

    /// The compute ceilings of the cache-aware roofline below the `precision` peak (scalar,
    /// no-FMA, add-only, mul-only), each the best kernel of the machine's
    /// `[[peaks.ceilings]]` (and, for scalar, of its per-width peaks) that fits, divide and
    /// square-root ceilings left out (they are no roof, see [`CeilingOp::is_roof`]): one core
    /// alone (`node_share` false) or its share of the node (true), falling back to the
    /// other as [`Machine::core_peak_gflops`] does. A kind no kernel fits is absent.
    pub fn carm_ceilings(&self, precision: Precision, node_share: bool) -> Vec<CarmCeiling> {
        let Some(p) = self.peak(precision) else {
            return Vec::new();
        };
        let cores = f64::from(self.cores());
        let value = |core: Option<f64>, node: Option<f64>| -> Option<(f64, Derivation)> {
            if node_share {
                match (node, core) {
                    (Some(n), _) => Some((n / cores, Derivation::NodeShare)),
                    (None, Some(c)) => Some((c, Derivation::CoreAsShare)),
                    _ => None,
                }
            } else {
                match (core, node) {
                    (Some(c), _) => Some((c, Derivation::Given)),
                    (None, Some(n)) => Some((n / cores, Derivation::NodeShare)),
                    _ => None,
                }
            }
        };
        // Candidates: (op, bits, kernel, value, derivation).
        let mut cand: Vec<(CeilingOp, u32, String, f64, Derivation)> = Vec::new();
        // Divide and square-root ceilings are the divider's throughput, no roof.
        for c in p.ceilings.iter().filter(|c| c.op.is_roof()) {
            if let Some((v, d)) = value(c.core_gflops, c.node_gflops) {
                let kernel = c
                    .label
                    .clone()
                    .unwrap_or_else(|| format!("{} {}-bit", c.op, c.vector_bits));
                cand.push((c.op, c.vector_bits, kernel, v, d));
            }
        }
        let peak_op = if self.fma {
            CeilingOp::Fma
        } else {
            CeilingOp::Mul
        };
        for w in &p.widths {
            if w.vector_bits == precision.bits()
                && let Some((v, d)) = value(w.core_gflops, w.node_gflops)
            {
                cand.push((
                    peak_op,
                    w.vector_bits,
                    format!("{} {}-bit (per-width peak)", peak_op, w.vector_bits),
                    v,
                    d,
                ));
            }
        }
        let mut out = Vec::new();
        for kind in CarmKind::ALL {
            let fits = |op: CeilingOp, bits: u32| match kind {
                CarmKind::Scalar => bits == precision.bits(),
                CarmKind::NoFma => op != CeilingOp::Fma,
                CarmKind::AddOnly => op == CeilingOp::Add,
                CarmKind::MulOnly => op == CeilingOp::Mul,
            };
            if let Some(best) = cand
                .iter()
                .filter(|c| fits(c.0, c.1))
                .max_by(|a, b| a.3.total_cmp(&b.3))
            {
                out.push(CarmCeiling {
                    kind,
                    gflops: best.3,
                    op: best.0,
                    vector_bits: best.1,
                    kernel: best.2.clone(),
                    derivation: best.4,
                });
            }
        }
        out
    }

    /// Per-core share of the node peak (eq. 7.1), GFLOP/s.
    pub fn node_share_peak_gflops(&self, precision: Precision) -> Option<(f64, Derivation)> {
        let p = self.peak(precision)?;
        match (p.node_gflops, p.core_gflops) {
            (Some(n), _) => Some((n / f64::from(self.cores()), Derivation::NodeShare)),
            (None, Some(c)) => Some((c, Derivation::CoreAsShare)),
            (None, None) => None,
        }
    }

    /// Bandwidth of one core alone from `level`, GB/s (falls back to the node share);
    /// `None` for a level given only by its cache geometry.
    pub fn core_bandwidth_gbs(&self, level: &Level) -> Option<(f64, Derivation)> {
        match (level.core_gbs, level.node_gbs) {
            (Some(c), _) => Some((c, Derivation::Given)),
            (None, Some(n)) => Some((n / f64::from(self.cores()), Derivation::NodeShare)),
            (None, None) => None,
        }
    }

    /// Bandwidth of `level` when its loads and stores are `bits` wide, from the level's
    /// `[[levels.widths]]`: the entry of that width; else the widest narrower one; else the
    /// narrowest. One core alone (`node_share` false) or its share of the node (true), each
    /// falling back to the other as [`Machine::core_bandwidth_gbs`] does. Returns the
    /// bandwidth, its derivation and the width of the entry used; `None` when the level has
    /// no per-width bandwidth.
    pub fn width_bandwidth_gbs(
        &self,
        level: &Level,
        bits: u32,
        node_share: bool,
    ) -> Option<(f64, Derivation, u32)> {
        let entries: Vec<(u32, Option<f64>, Option<f64>)> = level
            .widths
            .iter()
            .map(|w| (w.vector_bits, w.core_gbs, w.node_gbs))
            .collect();
        pick_width(&entries, bits, node_share, f64::from(self.cores()))
    }

    /// Peak of `precision` when every FP instruction is `bits` wide, from the peak's
    /// `[[peaks.widths]]`, chosen as [`Machine::width_bandwidth_gbs`] chooses. `None`
    /// without per-width peaks.
    pub fn width_peak_gflops(
        &self,
        precision: Precision,
        bits: u32,
        node_share: bool,
    ) -> Option<(f64, Derivation, u32)> {
        let p = self.peak(precision)?;
        let entries: Vec<(u32, Option<f64>, Option<f64>)> = p
            .widths
            .iter()
            .map(|w| (w.vector_bits, w.core_gflops, w.node_gflops))
            .collect();
        pick_width(&entries, bits, node_share, f64::from(self.cores()))
    }

    /// Rate of `op`'s ceiling of `precision` at exactly `bits` (`[[peaks.ceilings]]`), one
    /// core's or the per-core share of the node's, GFLOP/s. `None` when the machine gives
    /// no such ceiling: a divide's rate is not implied by another width's.
    pub fn exact_ceiling_gflops(
        &self,
        precision: Precision,
        op: CeilingOp,
        bits: u32,
        node_share: bool,
    ) -> Option<(f64, Derivation)> {
        let p = self.peak(precision)?;
        let entries: Vec<(u32, Option<f64>, Option<f64>)> = p
            .ceilings
            .iter()
            .filter(|c| c.op == op && c.vector_bits == bits)
            .map(|c| (c.vector_bits, c.core_gflops, c.node_gflops))
            .collect();
        pick_width(&entries, bits, node_share, f64::from(self.cores())).map(|(v, d, _)| (v, d))
    }

    /// Latency of `op` of `precision` at exactly `bits` (`[[peaks.latencies]]`), ns.
    pub fn latency_ns(&self, precision: Precision, op: CeilingOp, bits: u32) -> Option<f64> {
        self.peak(precision)?
            .latencies
            .iter()
            .find(|l| l.op == op && l.vector_bits == bits)
            .map(|l| l.ns)
    }

    /// One core cycle under scalar code, ns (`scalar_frequency_ghz`, else
    /// `frequency_ghz`): the time of an integer operation on a dependency chain.
    pub fn scalar_cycle_ns(&self) -> Option<f64> {
        self.scalar_frequency_ghz
            .or(self.frequency_ghz)
            .filter(|f| f.is_finite() && *f > 0.0)
            .map(|f| 1.0 / f)
    }

    /// Per-core share of the node bandwidth of `level` (eq. 7.1), GB/s; `None` for a
    /// level given only by its cache geometry.
    pub fn node_share_bandwidth_gbs(&self, level: &Level) -> Option<(f64, Derivation)> {
        match (level.node_gbs, level.core_gbs) {
            (Some(n), _) => Some((n / f64::from(self.cores()), Derivation::NodeShare)),
            (None, Some(c)) => Some((c, Derivation::CoreAsShare)),
            (None, None) => None,
        }
    }

    /// Levels that have a bandwidth (and so a roofline), in order.
    pub fn roofline_levels(&self) -> impl Iterator<Item = &Level> {
        self.levels
            .iter()
            .filter(|l| l.core_gbs.is_some() || l.node_gbs.is_some())
    }
}

/// Longest latency accepted for one FP operation, ns: a divide takes some 20 cycles, a
/// microsecond is a unit error.
const MAX_LATENCY_NS: f64 = 1000.0;

impl OpLatency {
    /// Problems of this entry, reported under field path `f`.
    fn check(&self, origin: &str, f: &str) -> Vec<InputError> {
        let mut errs = check_width_entry(
            origin,
            f,
            self.vector_bits,
            [("ns", Some(self.ns)), ("ns", None)],
            "ns",
            f64::INFINITY,
            &self.provenance,
        );
        if self.ns.is_finite() && self.ns > MAX_LATENCY_NS {
            errs.push(InputError::new(
                origin,
                format!("{f}.ns"),
                format!(
                    "{} ns per operation is implausible (over {MAX_LATENCY_NS} ns)",
                    short_number(self.ns)
                ),
                "the unit is nanoseconds: a latency in cycles divided by the clock in GHz",
            ));
        }
        errs
    }
}

impl WidthBandwidth {
    /// Problems of this entry, reported under field path `f`.
    fn check(&self, origin: &str, f: &str) -> Vec<InputError> {
        check_width_entry(
            origin,
            f,
            self.vector_bits,
            [("core_gbs", self.core_gbs), ("node_gbs", self.node_gbs)],
            "GB/s",
            MAX_GBS,
            &self.provenance,
        )
    }
}

/// Problems of a per-width entry (bandwidth or peak) at field path `f`.
fn check_width_entry(
    origin: &str,
    f: &str,
    vector_bits: u32,
    values: [(&str, Option<f64>); 2],
    unit: &str,
    max: f64,
    provenance: &str,
) -> Vec<InputError> {
    let mut errs = Vec::new();
    if vector_bits == 0 || !vector_bits.is_multiple_of(32) {
        errs.push(InputError::new(
            origin,
            format!("{f}.vector_bits"),
            format!("must be a positive multiple of 32, found {vector_bits}"),
            "give the width in bits: 64 (scalar f64), 32 (scalar f32), 128, 256, 512",
        ));
    }
    if values.iter().all(|(_, v)| v.is_none()) {
        errs.push(InputError::new(
            origin,
            f,
            format!("has neither {} nor {}", values[0].0, values[1].0),
            format!("give at least one value at this width, in {unit}"),
        ));
    }
    for (name, v) in values {
        if let Some(v) = v {
            errs.extend(check_positive(origin, &format!("{f}.{name}"), v, unit));
            if v.is_finite() && v > max {
                errs.push(InputError::new(
                    origin,
                    format!("{f}.{name}"),
                    format!("{v} {unit} is implausible: the unit looks off by 1e9"),
                    format!("the unit is {unit}: write {}", v / 1e9),
                ));
            }
        }
    }
    if provenance.trim().is_empty() {
        errs.push(InputError::new(
            origin,
            format!("{f}.provenance"),
            "is empty",
            "say where the value at this width comes from (kernel, working set, date)",
        ));
    }
    errs
}

impl NetworkLink {
    /// Problems of this link, reported under field path `f`.
    fn check(&self, origin: &str, f: &str) -> Vec<InputError> {
        let mut errs = Vec::new();
        if self.name.trim().is_empty() {
            errs.push(InputError::new(
                origin,
                format!("{f}.name"),
                "is empty",
                "name the link: mpi-intra-node, mpi-inter-node...",
            ));
        }
        errs.extend(check_positive(
            origin,
            &format!("{f}.latency_us"),
            self.latency_us,
            "µs",
        ));
        if self.latency_us.is_finite() && self.latency_us > MAX_LATENCY_US {
            errs.push(InputError::new(
                origin,
                format!("{f}.latency_us"),
                format!("{} µs is implausible: it looks like ns", self.latency_us),
                format!("the unit is µs: write {}", self.latency_us / 1e3),
            ));
        }
        errs.extend(check_positive(
            origin,
            &format!("{f}.bandwidth_gbs"),
            self.bandwidth_gbs,
            "GB/s",
        ));
        if self.bandwidth_gbs.is_finite() && self.bandwidth_gbs > MAX_GBS {
            errs.push(InputError::new(
                origin,
                format!("{f}.bandwidth_gbs"),
                format!(
                    "{} GB/s is implausible: it looks like B/s",
                    self.bandwidth_gbs
                ),
                format!(
                    "the unit is GB/s (1e9 B/s): write {}",
                    self.bandwidth_gbs / 1e9
                ),
            ));
        }
        if let Some(n) = self.n_half_bytes {
            errs.extend(check_positive(
                origin,
                &format!("{f}.n_half_bytes"),
                n,
                "bytes",
            ));
        }
        if let Some(fit) = &self.fit {
            if !["relative", "absolute"].contains(&fit.weights.as_str()) {
                errs.push(InputError::new(
                    origin,
                    format!("{f}.fit.weights"),
                    format!("unknown weights '{}'", fit.weights),
                    "use \"relative\" (weights 1/t^2) or \"absolute\" (ordinary least squares)",
                ));
            }
            if fit.sizes_bytes.len() < 2 {
                errs.push(InputError::new(
                    origin,
                    format!("{f}.fit.sizes_bytes"),
                    format!(
                        "{} size(s): a latency and a bandwidth need at least two",
                        fit.sizes_bytes.len()
                    ),
                    "list the message sizes the fit used, in bytes",
                ));
            }
        }
        if self.provenance.trim().is_empty() {
            errs.push(InputError::new(
                origin,
                format!("{f}.provenance"),
                "is empty",
                "say where the latency and bandwidth come from (tool, host, date)",
            ));
        }
        errs
    }
}

/// The per-width entry `(vector_bits, core, node)` for `bits`: that width; else the widest
/// narrower one; else the narrowest. One core alone (`node_share` false) or its share of the
/// node, each falling back to the other.
fn pick_width(
    entries: &[(u32, Option<f64>, Option<f64>)],
    bits: u32,
    node_share: bool,
    cores: f64,
) -> Option<(f64, Derivation, u32)> {
    let mut usable: Vec<(u32, f64, Derivation)> = entries
        .iter()
        .filter_map(|&(w, core, node)| {
            let v = match (node_share, core, node) {
                (false, Some(c), _) => (c, Derivation::Given),
                (false, None, Some(n)) => (n / cores, Derivation::NodeShare),
                (true, _, Some(n)) => (n / cores, Derivation::NodeShare),
                (true, Some(c), None) => (c, Derivation::CoreAsShare),
                _ => return None,
            };
            Some((w, v.0, v.1))
        })
        .collect();
    usable.sort_by_key(|e| e.0);
    let pick = usable
        .iter()
        .rev()
        .find(|e| e.0 <= bits)
        .or_else(|| usable.first())?;
    Some((pick.1, pick.2, pick.0))
}

/// How a per-core value was obtained from a machine file.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Derivation {
    /// Given directly by the file.
    Given,
    /// Node value divided by the number of cores (eq. 7.1).
    NodeShare,
    /// No node value: the single-core value stands in for the per-core share (optimistic).
    CoreAsShare,
}
