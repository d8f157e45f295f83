//! Design-space exploration (Gavoille 2024 thesis, sections 6.3 and 7.3-7.4).
//!
//! A scenario names a source (machine, profile, measured performance), target binaries
//! (variants: compiler, vector length) and target machines derived by transforms (vector
//! length: peak x new/old; main memory swapped for another machine's; any level's bandwidth
//! scaled or replaced; core count changed), and sweeps their product. Each design point is a
//! projection interval.

use serde::{Deserialize, Serialize};

use crate::error::{Error, InputError, Result};
use crate::machine::{LevelKind, Machine, Precision};
use crate::profile::AppMetrics;
use crate::project::{Inputs, Interval, Options, PairRule, Projection, Side, Spread, project_with};
use crate::roofline::{AccessWidths, Bound, Scope};

/// A change applied to a machine to make a hypothetical one.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Transform {
    /// Change the vector length: peaks x new/old (thesis A8); bandwidths unchanged.
    VectorBits(u32),
    /// Replace the bandwidths of the main-memory level with those of another machine's
    /// main memory (the thesis' DDR4 -> HBM2 study); caches unchanged.
    ReplaceMemory(String),
    /// Multiply a level's bandwidths (core and node) by a factor.
    ScaleLevel {
        /// Level name.
        level: String,
        /// Factor (> 0).
        factor: f64,
    },
    /// Set a level's bandwidths, GB/s.
    SetLevel {
        /// Level name.
        level: String,
        /// New single-core bandwidth, GB/s.
        #[serde(default)]
        core_gbs: Option<f64>,
        /// New node bandwidth, GB/s.
        #[serde(default)]
        node_gbs: Option<f64>,
    },
    /// Change the number of cores per socket: node peaks and node bandwidths of private
    /// caches scale with the core count; shared caches and memories keep their node
    /// bandwidth (so each core's share changes).
    Cores(u32),
    /// Set a peak, GFLOP/s.
    SetPeak {
        /// Precision.
        precision: Precision,
        /// New single-core peak.
        #[serde(default)]
        core_gflops: Option<f64>,
        /// New node peak.
        #[serde(default)]
        node_gflops: Option<f64>,
    },
    /// Set a cache level's capacity (for the cache simulator: the target profile must be
    /// produced with the transformed machine).
    CacheSize {
        /// Level name.
        level: String,
        /// New capacity, bytes.
        size_bytes: u64,
    },
}

impl Transform {
    /// A short label (`vl=512`, `mem=a64fx`...).
    pub fn label(&self) -> String {
        match self {
            Transform::VectorBits(v) => format!("vl={v}"),
            Transform::ReplaceMemory(m) => format!("mem={m}"),
            Transform::ScaleLevel { level, factor } => format!("{level}x{factor}"),
            Transform::SetLevel {
                level,
                core_gbs,
                node_gbs,
            } => format!(
                "{level}={}",
                core_gbs
                    .or(*node_gbs)
                    .map(|v| format!("{v}GB/s"))
                    .unwrap_or_default()
            ),
            Transform::Cores(c) => format!("cores={c}"),
            Transform::SetPeak {
                precision,
                core_gflops,
                node_gflops,
            } => format!(
                "peak.{precision}={}",
                core_gflops
                    .or(*node_gflops)
                    .map(|v| format!("{v}"))
                    .unwrap_or_default()
            ),
            Transform::CacheSize { level, size_bytes } => format!("{level}.size={size_bytes}"),
        }
    }
}

/// Applies `t` to `m`. `lookup` loads another machine by id or path (for `ReplaceMemory`).
pub fn apply(
    m: &Machine,
    t: &Transform,
    lookup: &dyn Fn(&str) -> Result<Machine>,
) -> Result<Machine> {
    let mut out = m.clone();
    let origin = format!("transform {} of machine '{}'", t.label(), m.id);
    let level_idx = |name: &str| -> Result<usize> {
        m.levels.iter().position(|l| l.name == name).ok_or_else(|| {
            InputError::new(
                &origin,
                "level",
                format!("machine '{}' has no level '{name}'", m.id),
                format!("use one of: {}", m.level_names().join(", ")),
            )
            .into()
        })
    };
    let in_range = |q: &crate::range::Quantity, field: &str, v: f64| -> Result<()> {
        match crate::range::check(q, &origin, field, v) {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    };
    match t {
        Transform::VectorBits(v) => {
            if *v == 0 || v % 32 != 0 {
                return Err(InputError::new(
                    &origin,
                    "vector_bits",
                    format!("{v} is not a positive multiple of 32"),
                    "give a vector length in bits: 128, 256, 512, 1024, 2048",
                )
                .into());
            }
            let r = f64::from(*v) / f64::from(m.vector_bits);
            for p in &mut out.peaks {
                p.core_gflops = p.core_gflops.map(|x| x * r);
                p.node_gflops = p.node_gflops.map(|x| x * r);
                p.provenance = format!(
                    "{} x {v}/{} (vector length extrapolated linearly)",
                    p.provenance, m.vector_bits
                );
                // Measured per-width peaks describe the real core, not the extrapolated one;
                // so do its vector ceilings (scalar ones still hold).
                p.widths.clear();
                let scalar = p.precision.bits();
                p.ceilings.retain(|c| c.vector_bits == scalar);
            }
            out.vector_bits = *v;
        }
        Transform::ReplaceMemory(other) => {
            let o = lookup(other)?;
            let mem = o
                .levels
                .iter()
                .rev()
                .find(|l| l.kind == LevelKind::Memory)
                .cloned();
            let Some(mem) = mem else {
                return Err(Error::mismatch(
                    format!("machine '{other}' has no memory level"),
                    "choose a machine with a main-memory level",
                ));
            };
            let i = out
                .levels
                .iter()
                .rposition(|l| l.kind == LevelKind::Memory)
                .expect("a validated machine has a memory level");
            let l = &mut out.levels[i];
            // The core bandwidth follows the other machine's core bandwidth, the node bandwidth
            // its node bandwidth; a missing one stays missing.
            l.core_gbs = mem.core_gbs;
            l.node_gbs = mem.node_gbs;
            l.widths = mem.widths.clone();
            if l.core_gbs.is_none() && l.node_gbs.is_none() {
                return Err(Error::mismatch(
                    format!("machine '{other}' gives no bandwidth for its memory"),
                    "choose a machine with a memory bandwidth",
                ));
            }
            l.technology = mem.technology.clone();
            l.provenance = format!("main memory of '{}': {}", o.id, mem.provenance);
        }
        Transform::ScaleLevel { level, factor } => {
            in_range(&crate::range::FACTOR, "factor", *factor)?;
            let i = level_idx(level)?;
            let l = &mut out.levels[i];
            l.core_gbs = l.core_gbs.map(|x| x * factor);
            l.node_gbs = l.node_gbs.map(|x| x * factor);
            l.provenance = format!("{} x {factor} (hypothetical)", l.provenance);
            for w in &mut l.widths {
                w.core_gbs = w.core_gbs.map(|x| x * factor);
                w.node_gbs = w.node_gbs.map(|x| x * factor);
                w.provenance = format!("{} x {factor} (hypothetical)", w.provenance);
            }
        }
        Transform::SetLevel {
            level,
            core_gbs,
            node_gbs,
        } => {
            let i = level_idx(level)?;
            if core_gbs.is_none() && node_gbs.is_none() {
                return Err(InputError::new(
                    &origin,
                    "set_level",
                    "gives neither core_gbs nor node_gbs",
                    "give at least one bandwidth, GB/s",
                )
                .into());
            }
            for (f, v) in [("core_gbs", core_gbs), ("node_gbs", node_gbs)] {
                if let Some(v) = v {
                    in_range(&crate::range::BANDWIDTH_GBS, f, *v)?;
                }
            }
            let l = &mut out.levels[i];
            if core_gbs.is_some() {
                l.core_gbs = *core_gbs;
            }
            if node_gbs.is_some() {
                l.node_gbs = *node_gbs;
            }
            l.provenance = "set by a scenario transform (hypothetical)".into();
            // The measured per-width bandwidths no longer describe the level.
            l.widths.clear();
        }
        Transform::Cores(c) => {
            if *c == 0 {
                return Err(InputError::new(
                    &origin,
                    "cores",
                    "must be at least 1",
                    "give the new number of cores per socket",
                )
                .into());
            }
            let r = f64::from(*c) / f64::from(m.cores_per_socket);
            out.cores_per_socket = *c;
            for p in &mut out.peaks {
                p.node_gflops = p.node_gflops.map(|x| x * r);
                for w in &mut p.widths {
                    w.node_gflops = w.node_gflops.map(|x| x * r);
                }
                for c in &mut p.ceilings {
                    c.node_gflops = c.node_gflops.map(|x| x * r);
                }
            }
            let new_cores = out.cores();
            for l in &mut out.levels {
                let private = l.kind == LevelKind::Cache
                    && l.cache
                        .as_ref()
                        .and_then(|g| g.shared_by_cores)
                        .unwrap_or(1)
                        <= 1;
                if private {
                    l.node_gbs = l.node_gbs.map(|x| x * r);
                    for w in &mut l.widths {
                        w.node_gbs = w.node_gbs.map(|x| x * r);
                    }
                }
                if let Some(g) = &mut l.cache {
                    // A cache of the whole node stays the node's; one of each socket, the
                    // socket's.
                    if g.shared_by_cores == Some(m.cores()) {
                        g.shared_by_cores = Some(new_cores);
                    } else if m.sockets > 1 && g.shared_by_cores == Some(m.cores_per_socket) {
                        g.shared_by_cores = Some(*c);
                    }
                }
            }
        }
        Transform::SetPeak {
            precision,
            core_gflops,
            node_gflops,
        } => {
            for (f, v) in [("core_gflops", core_gflops), ("node_gflops", node_gflops)] {
                if let Some(v) = v {
                    in_range(&crate::range::PEAK_GFLOPS, f, *v)?;
                }
            }
            match out.peaks.iter_mut().find(|p| p.precision == *precision) {
                Some(p) => {
                    if core_gflops.is_some() {
                        p.core_gflops = *core_gflops;
                    }
                    if node_gflops.is_some() {
                        p.node_gflops = *node_gflops;
                    }
                    p.provenance = "set by a scenario transform (hypothetical)".into();
                    p.widths.clear();
                    p.ceilings.clear();
                }
                None => out.peaks.push(crate::machine::Peak {
                    precision: *precision,
                    core_gflops: *core_gflops,
                    node_gflops: *node_gflops,
                    provenance: "set by a scenario transform (hypothetical)".into(),
                    widths: Vec::new(),
                    ceilings: Vec::new(),
                }),
            }
        }
        Transform::CacheSize { level, size_bytes } => {
            let i = level_idx(level)?;
            let Some(g) = out.levels[i].cache.as_mut() else {
                return Err(InputError::new(
                    &origin,
                    "cache_size",
                    format!("level '{level}' has no cache geometry"),
                    "add [levels.cache] to the machine file first",
                )
                .into());
            };
            g.size_bytes = *size_bytes;
        }
    }
    let labels: Vec<String> = std::iter::once(t.label()).collect();
    // An id has no space or '/' (a transform's label may: `L2=50GB/s`, `mem=dir/m.toml`).
    out.id = format!("{}+{}", out.id, labels.join("+"))
        .replace('/', "_")
        .replace(char::is_whitespace, "_");
    out.name = format!("{} [{}]", out.name, t.label());
    out.validate(&origin)?;
    Ok(out)
}

/// A scenario file (TOML).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Title of the study.
    pub name: String,
    /// What question it answers.
    #[serde(default)]
    pub description: String,
    /// Precision (default f64).
    #[serde(default = "default_precision")]
    pub precision: Precision,
    /// Single core (default) or node.
    #[serde(default)]
    pub scope: Scope,
    /// Pair rule (default upper-triangular).
    #[serde(default)]
    pub pair_rule: PairRule,
    /// The measured source.
    pub source: SourceSpec,
    /// Target binaries.
    pub variants: Vec<VariantSpec>,
    /// Target machines.
    pub targets: Vec<TargetSpec>,
}

fn default_precision() -> Precision {
    Precision::F64
}

/// The source of a scenario.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSpec {
    /// Built-in machine id or path.
    pub machine: String,
    /// Profile path.
    pub profile: String,
    /// Region of the profile (default: the only one).
    #[serde(default)]
    pub region: Option<String>,
    /// Measured GFLOP/s, overriding FLOPs / time of the profile.
    #[serde(default)]
    pub gflops: Option<f64>,
    /// Times of the source's timed runs, seconds (any unit-consistent times of the same
    /// work): their spread widens every interval.
    #[serde(default)]
    pub times_s: Vec<f64>,
}

/// A target binary.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantSpec {
    /// Label (`gcc sve-512`).
    pub name: String,
    /// Profile path.
    pub profile: String,
    /// Region (default: the only one).
    #[serde(default)]
    pub region: Option<String>,
    /// Vector length of this binary: applies [`Transform::VectorBits`] to every target.
    #[serde(default)]
    pub vector_bits: Option<u32>,
}

/// A target machine.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// Label (`N1 + HBM2`).
    pub name: String,
    /// Built-in machine id or path.
    pub machine: String,
    /// Transforms applied in order.
    #[serde(default)]
    pub transforms: Vec<Transform>,
}

impl Scenario {
    /// Parses a scenario from TOML.
    pub fn from_toml_str(src: &str, origin: &str) -> Result<Scenario> {
        let src = src.strip_prefix('\u{feff}').unwrap_or(src);
        let s: Scenario = toml::from_str(src).map_err(|e| {
            // A scenario written for `analyze --scenario` has targets only: say so.
            let targets_only = e.message().contains("missing field `source`")
                && src
                    .lines()
                    .any(|l| l.trim_start().starts_with("[[targets]]"));
            crate::error::from_toml(
                origin,
                src,
                &e,
                if targets_only {
                    "this scenario has targets only, as `hpcscope analyze --scenario` reads them \
                     (the analyzed program is the source and the variant); for `hpcscope explore` \
                     add [source] and [[variants]] (docs/scenario-format.md)"
                } else {
                    "see docs/scenario-format.md and examples/scenarios/"
                },
            )
        })?;
        if s.variants.is_empty() {
            return Err(InputError::new(
                origin,
                "variants",
                "is empty",
                "add at least one [[variants]] (a target binary's profile)",
            )
            .into());
        }
        if s.targets.is_empty() {
            return Err(InputError::new(
                origin,
                "targets",
                "is empty",
                "add at least one [[targets]] (a machine, with transforms or not)",
            )
            .into());
        }
        let mut errs = Vec::new();
        for (list, names) in [
            (
                "variants",
                s.variants
                    .iter()
                    .map(|v| v.name.as_str())
                    .collect::<Vec<_>>(),
            ),
            (
                "targets",
                s.targets
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>(),
            ),
        ] {
            let mut seen = std::collections::HashMap::new();
            for (i, n) in names.iter().enumerate() {
                if let Some(first) = seen.insert(*n, i) {
                    errs.push(InputError::new(
                        origin,
                        format!("{list}[{i}].name"),
                        format!(
                            "'{}' appears twice (also {list}[{first}]): the design points could not be told apart",
                            crate::error::shorten(n, 80)
                        ),
                        format!("give each of the {list} a distinct name"),
                    ));
                }
            }
        }
        match errs.len() {
            0 => Ok(s),
            1 => Err(errs.remove(0).into()),
            _ => Err(Error::Inputs(errs)),
        }
    }
}

/// A scenario with its files loaded.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Source machine.
    pub source_machine: Machine,
    /// Source per-thread metrics.
    pub source_threads: Vec<AppMetrics>,
    /// Source GFLOP/s.
    pub source_gflops: f64,
    /// Variants: (label, vector bits, per-thread metrics).
    pub variants: Vec<(String, Option<u32>, Vec<AppMetrics>)>,
    /// Targets: (label, machine with the scenario's transforms applied).
    pub targets: Vec<(String, Machine)>,
    /// The source binary's FP instructions and bytes by width: its ceilings are taken at
    /// these widths where the machine gives per-width values (`None`: the seeds' form).
    pub source_widths: Option<AccessWidths>,
    /// Each variant's widths, in the order of `variants` (missing entries: the seeds' form).
    pub variant_widths: Vec<Option<AccessWidths>>,
    /// The source's run-to-run spread, which widens every interval.
    pub source_spread: Option<Spread>,
    /// All instructions of the source binary (for the carried-rate points).
    pub source_instructions: Option<f64>,
    /// All instructions of each variant, in the order of `variants`.
    pub variant_instructions: Vec<Option<f64>>,
}

/// The result of an exploration: the scenario and one design point per (variant, target).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExploreResult {
    /// Scenario title.
    pub scenario: String,
    /// Scenario description.
    pub description: String,
    /// Source machine id.
    pub source_machine: String,
    /// Source GFLOP/s.
    pub source_gflops: f64,
    /// One design point per (variant, target).
    pub points: Vec<DesignPoint>,
}

/// One design point of a sweep.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignPoint {
    /// Variant label.
    pub variant: String,
    /// Target label.
    pub target: String,
    /// Id of the (derived) target machine.
    pub machine: String,
    /// Projected interval, GFLOP/s.
    pub interval: Interval,
    /// Interval relative to the source performance (speed-up).
    pub speedup: Interval,
    /// How many points are memory-bound on the target, out of how many.
    pub memory_bound_points: usize,
    /// Total points.
    pub points: usize,
    /// The (OI level, roofline level) of the lowest point: what binds the lower bound.
    pub lower_bound_by: String,
    /// Projected time of the variant's region, seconds.
    pub time_s: Option<Interval>,
    /// The full projection.
    pub projection: Projection,
}

/// The default limit on the design points of one sweep ([`Cost::check`]).
pub const DEFAULT_MAX_POINTS: u64 = 100_000;

/// The default limit on the memory one sweep may take, bytes (4 GiB).
pub const DEFAULT_MAX_BYTES: u64 = 4 << 30;

/// What a sweep will cost, known before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Cost {
    /// Variants.
    pub variants: u64,
    /// Targets.
    pub targets: u64,
    /// Design points (variants x targets).
    pub points: u64,
    /// Roofline points projected in all (every design point projects each thread's
    /// operational intensities on each roofline of the target).
    pub projections: u64,
    /// Memory the result takes, bytes (an estimate from the sizes of its parts).
    pub bytes: u64,
}

impl Cost {
    /// The cost of sweeping `r`.
    pub fn of(r: &Resolved) -> Cost {
        let variants = r.variants.len() as u64;
        let targets = r.targets.len() as u64;
        let points = variants.saturating_mul(targets);
        let src_levels = r.source_machine.levels.len().max(1) as u64;
        let src_threads = r.source_threads.len().max(1) as u64;
        // Per design point: every thread of the variant, each of its OI levels on each roof
        // of the target (at most the machines' level counts), plus the source side.
        let mut per_point_sum: u64 = 0;
        for (_, _, threads) in &r.variants {
            for (_, tm) in &r.targets {
                let l = tm.levels.len().max(1) as u64;
                let t = threads.len().max(1) as u64;
                per_point_sum = per_point_sum
                    .saturating_add(t.saturating_mul(l).saturating_mul(l))
                    .saturating_add(
                        src_threads
                            .saturating_mul(src_levels)
                            .saturating_mul(src_levels),
                    );
            }
        }
        // About 200 bytes per projected point, 1 KiB per design point.
        let bytes = per_point_sum
            .saturating_mul(200)
            .saturating_add(points.saturating_mul(1024));
        Cost {
            variants,
            targets,
            points,
            projections: per_point_sum,
            bytes,
        }
    }

    /// Refuses a sweep past `max_points` design points or `max_bytes` of memory, saying what
    /// it would cost and how to go past the limit.
    pub fn check(
        &self,
        max_points: u64,
        max_bytes: u64,
    ) -> std::result::Result<(), crate::Failure> {
        if self.points > max_points || self.bytes > max_bytes {
            return Err(crate::Failure::input(format!(
                "the sweep has {} design points ({} variants x {} targets), {} roofline projections, about {} MiB of results: past the limit of {max_points} points and {} MiB\n  fix: split the scenario (fewer variants or targets), run it as a job array (--slurm, one task per point), or raise the limit with --max-points N / --max-memory-mb M if the machine has the memory",
                self.points,
                self.variants,
                self.targets,
                self.projections,
                self.bytes >> 20,
                max_bytes >> 20
            )));
        }
        Ok(())
    }
}

/// Sweeps variants x targets. `extra` gives the calibration, the carried-time points and
/// whether pairs above their roofline are left out (its widths and spread are ignored: the
/// sweep takes them from `r`).
pub fn sweep(
    r: &Resolved,
    precision: Precision,
    opts: Options,
    extra: &Inputs<'_>,
) -> Result<Vec<DesignPoint>> {
    let mut out: Vec<DesignPoint> = Vec::new();
    out.try_reserve(r.variants.len().saturating_mul(r.targets.len()))
        .map_err(|_| {
            Error::mismatch(
                format!(
                    "{} x {} design points do not fit in memory",
                    r.variants.len(),
                    r.targets.len()
                ),
                "split the scenario into smaller sweeps",
            )
        })?;
    for (vi, (vname, vbits, vthreads)) in r.variants.iter().enumerate() {
        let inputs = Inputs {
            source_widths: r.source_widths.clone(),
            target_widths: r.variant_widths.get(vi).cloned().flatten(),
            source_spread: r.source_spread,
            calibration: extra.calibration,
            carried_time: extra.carried_time,
            instructions: r
                .source_instructions
                .zip(r.variant_instructions.get(vi).copied().flatten()),
            drop_contradicted: extra.drop_contradicted,
        };
        for (tname, tm) in &r.targets {
            let tm = match vbits {
                Some(b) if *b != tm.vector_bits => apply(tm, &Transform::VectorBits(*b), &|_| {
                    unreachable!("no lookup for a vector-length change")
                })?,
                _ => tm.clone(),
            };
            out.push(design_point(
                r, vname, tname, &tm, vthreads, precision, opts, &inputs,
            )?);
        }
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn design_point(
    r: &Resolved,
    vname: &str,
    tname: &str,
    tm: &Machine,
    vthreads: &[AppMetrics],
    precision: Precision,
    opts: Options,
    inputs: &Inputs<'_>,
) -> Result<DesignPoint> {
    let origin = format!("variant '{vname}'");
    let p = project_with(
        Side {
            machine: &r.source_machine,
            threads: &r.source_threads,
            origin: "the source profile",
        },
        r.source_gflops,
        Side {
            machine: tm,
            threads: vthreads,
            origin: &origin,
        },
        precision,
        opts,
        inputs,
    )?;
    Ok(DesignPoint::from_projection(vname, tname, p))
}

impl DesignPoint {
    /// Summarizes a projection as a design point labelled `variant` x `target`.
    pub fn from_projection(variant: &str, target: &str, p: Projection) -> DesignPoint {
        let pts = p.all_points();
        let lowest = p
            .lowest_point()
            .map(|pt| {
                format!(
                    "OI {} on {} roofline ({})",
                    pt.oi_level, pt.roof_level, pt.bound_target
                )
            })
            .unwrap_or_default();
        let memory_bound_points = pts
            .iter()
            .filter(|pt| pt.bound_target == Bound::Memory)
            .count();
        let points = pts.len();
        DesignPoint {
            variant: variant.to_string(),
            target: target.to_string(),
            machine: p.target_machine.clone(),
            interval: p.interval,
            speedup: p.speedup(),
            memory_bound_points,
            points,
            lower_bound_by: lowest,
            time_s: p.target_time_s,
            projection: p,
        }
    }
}
