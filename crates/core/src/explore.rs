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
    /// Set a cache level's associativity (ways).
    CacheWays {
        /// Level name.
        level: String,
        /// New associativity.
        associativity: u32,
    },
    /// Set a cache level's line size, bytes (a power of two).
    CacheLine {
        /// Level name.
        level: String,
        /// New line size, bytes.
        line_bytes: u32,
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
            Transform::CacheWays {
                level,
                associativity,
            } => format!("{level}.ways={associativity}"),
            Transform::CacheLine { level, line_bytes } => format!("{level}.line={line_bytes}"),
        }
    }

    /// The cache level whose geometry (size, ways, line) this transform changes, if any: the
    /// bytes per level a profile gives were simulated with the old geometry.
    pub fn cache_geometry_level(&self) -> Option<&str> {
        match self {
            Transform::CacheSize { level, .. }
            | Transform::CacheWays { level, .. }
            | Transform::CacheLine { level, .. } => Some(level),
            _ => None,
        }
    }

    /// Parses one `KEY=VALUE` of `hpcscope machine derive --set`:
    ///
    /// | key | transform |
    /// |---|---|
    /// | `vector_bits=N` | [`Transform::VectorBits`] |
    /// | `cores=N` | [`Transform::Cores`] |
    /// | `memory=ID` | [`Transform::ReplaceMemory`] |
    /// | `LEVEL.scale=F` | [`Transform::ScaleLevel`] |
    /// | `LEVEL.core_gbs=X`, `LEVEL.node_gbs=X` | [`Transform::SetLevel`] |
    /// | `LEVEL.size_bytes=N` (`K`, `M`, `G` suffixes: KiB, MiB, GiB) | [`Transform::CacheSize`] |
    /// | `LEVEL.associativity=N` | [`Transform::CacheWays`] |
    /// | `LEVEL.line_bytes=N` | [`Transform::CacheLine`] |
    /// | `peak.PREC.core_gflops=X`, `peak.PREC.node_gflops=X` | [`Transform::SetPeak`] |
    pub fn parse_set(arg: &str) -> Result<Transform> {
        let origin = format!("--set '{}'", crate::error::shorten(arg, 80));
        let bad = |what: String| -> Error {
            InputError::new(
                &origin,
                "set",
                what,
                "give KEY=VALUE: vector_bits=512, cores=48, memory=a64fx, L2.scale=2, \
                 MM.core_gbs=65, L3.size_bytes=128M, L3.associativity=16, L3.line_bytes=128, \
                 peak.f64.core_gflops=20 (or --transform with a scenario's inline table)",
            )
            .into()
        };
        let Some((key, value)) = arg.split_once('=') else {
            return Err(bad("has no '='".into()));
        };
        let (key, value) = (key.trim(), value.trim());
        let float = |v: &str| -> Result<f64> {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| bad(format!("'{v}' is not a finite number")))
        };
        let uint = |v: &str| -> Result<u64> {
            let (digits, mult) = match v.chars().last() {
                Some('K' | 'k') => (&v[..v.len() - 1], 1u64 << 10),
                Some('M' | 'm') => (&v[..v.len() - 1], 1 << 20),
                Some('G' | 'g') => (&v[..v.len() - 1], 1 << 30),
                _ => (v, 1),
            };
            digits
                .parse::<u64>()
                .ok()
                .and_then(|x| x.checked_mul(mult))
                .ok_or_else(|| bad(format!("'{v}' is not a whole number")))
        };
        let u32v = |v: &str| -> Result<u32> {
            u32::try_from(uint(v)?).map_err(|_| bad(format!("'{v}' is too large")))
        };
        match key {
            "vector_bits" => return Ok(Transform::VectorBits(u32v(value)?)),
            "cores" => return Ok(Transform::Cores(u32v(value)?)),
            "memory" | "replace_memory" => return Ok(Transform::ReplaceMemory(value.to_string())),
            _ => {}
        }
        if let Some(rest) = key.strip_prefix("peak.") {
            let (prec, field) = rest.split_once('.').ok_or_else(|| {
                bad(format!(
                    "'{key}': give peak.f64.core_gflops or peak.f64.node_gflops"
                ))
            })?;
            let precision = match prec {
                "f64" => Precision::F64,
                "f32" => Precision::F32,
                _ => return Err(bad(format!("'{prec}' is not a precision (f64, f32)"))),
            };
            let v = Some(float(value)?);
            return match field {
                "core_gflops" => Ok(Transform::SetPeak {
                    precision,
                    core_gflops: v,
                    node_gflops: None,
                }),
                "node_gflops" => Ok(Transform::SetPeak {
                    precision,
                    core_gflops: None,
                    node_gflops: v,
                }),
                _ => Err(bad(format!(
                    "'{field}': a peak has core_gflops and node_gflops"
                ))),
            };
        }
        let Some((level, field)) = key.rsplit_once('.') else {
            return Err(bad(format!("'{key}' is not a key this option knows")));
        };
        let level = level.to_string();
        match field {
            "scale" => Ok(Transform::ScaleLevel {
                level,
                factor: float(value)?,
            }),
            "core_gbs" => Ok(Transform::SetLevel {
                level,
                core_gbs: Some(float(value)?),
                node_gbs: None,
            }),
            "node_gbs" => Ok(Transform::SetLevel {
                level,
                core_gbs: None,
                node_gbs: Some(float(value)?),
            }),
            "size_bytes" | "size" => Ok(Transform::CacheSize {
                level,
                size_bytes: uint(value)?,
            }),
            "associativity" | "ways" => Ok(Transform::CacheWays {
                level,
                associativity: u32v(value)?,
            }),
            "line_bytes" | "line" => Ok(Transform::CacheLine {
                level,
                line_bytes: u32v(value)?,
            }),
            _ => Err(bad(format!(
                "'{field}' is not a level field this option knows (scale, core_gbs, node_gbs, size_bytes, associativity, line_bytes)"
            ))),
        }
    }

    /// Parses a transform written as in a scenario's `transforms` list: an inline table such
    /// as `{ cache_size = { level = "L3", size_bytes = 134217728 } }`.
    pub fn parse_inline(arg: &str) -> Result<Transform> {
        #[derive(Deserialize)]
        struct One {
            t: Transform,
        }
        let src = format!("t = {arg}");
        let origin = format!("--transform '{}'", crate::error::shorten(arg, 80));
        toml::from_str::<One>(&src).map(|o| o.t).map_err(|e| {
            InputError::new(
                &origin,
                "transform",
                crate::error::shorten(e.message(), 200),
                "write one inline table as in a scenario's transforms list, e.g. \
                 '{ cache_size = { level = \"L3\", size_bytes = 134217728 } }' (docs/scenario-format.md)",
            )
            .into()
        })
    }
}

/// Applies `transforms` to `base` in order and records in the result's provenance what it
/// was derived from and how (`hpcscope machine derive`). `base_ref` is how the user named the
/// base (an id or a path).
pub fn derive(
    base: &Machine,
    base_ref: &str,
    transforms: &[Transform],
    lookup: &dyn Fn(&str) -> Result<Machine>,
) -> Result<Machine> {
    let mut m = base.clone();
    for t in transforms {
        m = apply(&m, t, lookup)?;
    }
    let labels: Vec<String> = transforms.iter().map(Transform::label).collect();
    m.provenance = format!(
        "derived from machine '{}' ({base_ref}) by {}: hypothetical; the base's provenance: {}",
        base.id,
        if labels.is_empty() {
            "no transform".to_string()
        } else {
            labels.join(", ")
        },
        base.provenance
    );
    m.description = format!(
        "{} [derived: {}]",
        base.description.trim(),
        labels.join(", ")
    )
    .trim_start()
    .to_string();
    Ok(m)
}

/// Applies `t` to `m`. `lookup` loads another machine by id or path (for `ReplaceMemory`).
#[allow(clippy::too_many_lines)]
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
                if let Some(d) = &mut p.dgemm {
                    d.core_gflops = d.core_gflops.map(|x| x * r);
                    d.node_gflops = d.node_gflops.map(|x| x * r);
                    d.provenance = format!(
                        "{} x {v}/{} (vector length extrapolated linearly)",
                        d.provenance, m.vector_bits
                    );
                }
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
                if let Some(d) = &mut p.dgemm {
                    d.node_gflops = d.node_gflops.map(|x| x * r);
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
                    p.dgemm = None;
                }
                None => out.peaks.push(crate::machine::Peak {
                    precision: *precision,
                    core_gflops: *core_gflops,
                    node_gflops: *node_gflops,
                    provenance: "set by a scenario transform (hypothetical)".into(),
                    widths: Vec::new(),
                    ceilings: Vec::new(),
                    dgemm: None,
                    latencies: Vec::new(),
                }),
            }
        }
        Transform::CacheSize { level, size_bytes } => {
            let i = level_idx(level)?;
            let Some(g) = out.levels[i].cache.as_mut() else {
                return Err(no_geometry(&origin, level));
            };
            g.size_bytes = *size_bytes;
        }
        Transform::CacheWays {
            level,
            associativity,
        } => {
            let i = level_idx(level)?;
            let Some(g) = out.levels[i].cache.as_mut() else {
                return Err(no_geometry(&origin, level));
            };
            g.associativity = *associativity;
        }
        Transform::CacheLine { level, line_bytes } => {
            let i = level_idx(level)?;
            let Some(g) = out.levels[i].cache.as_mut() else {
                return Err(no_geometry(&origin, level));
            };
            g.line_bytes = *line_bytes;
        }
    }
    if let Some(level) = t.cache_geometry_level() {
        let note = format!(
            "the {level} cache geometry is hypothetical ({}): bytes per level simulated with another geometry do not describe it; re-simulate with `hpcscope mix -m` and this machine",
            t.label()
        );
        if !out.notes.contains(&note) {
            out.notes.push(note);
        }
        if let Some(g) = out
            .levels
            .iter_mut()
            .find(|l| l.name == level)
            .and_then(|l| l.cache.as_mut())
        {
            let prov = g.provenance.as_deref().unwrap_or("set by a transform");
            if !prov.ends_with("(hypothetical)") {
                g.provenance = Some(format!("{prov} (hypothetical)"));
            }
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

fn no_geometry(origin: &str, level: &str) -> Error {
    InputError::new(
        origin,
        "cache",
        format!("level '{level}' has no cache geometry"),
        "add [levels.cache] to the machine file first",
    )
    .into()
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
    /// The program and its arguments that produced the profile (the program's path is
    /// relative to the scenario's directory): a target whose caches differ from those the
    /// profile was simulated for (a transformed cache geometry, or another machine) gets
    /// this variant's bytes per level re-simulated on its caches with `hpcscope mix`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// With `command`: count only inside these functions, as `mix --function` (the
    /// profile's regions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<String>,
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
        let s: Scenario = crate::error::toml_from_str(
            src,
            origin,
            "see docs/scenario-format.md and examples/scenarios/",
        )
        .map_err(|mut e| {
            // A scenario written for `analyze --scenario` has targets only: say so.
            if e.message.contains("missing field `source`")
                && src
                    .lines()
                    .any(|l| l.trim_start().starts_with("[[targets]]"))
            {
                e.fix =
                    "this scenario has targets only, as `hpcscope analyze --scenario` reads them \
                     (the analyzed program is the source and the variant); for `hpcscope explore` \
                     add [source] and [[variants]] (docs/scenario-format.md)"
                        .into();
            }
            e
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
    /// The OI_L1 - OI_ridge diagnostic of each design point (section 7.4.1, Fig. 7.5).
    #[serde(default)]
    pub ridge: Vec<RidgeDiagnostic>,
    /// What makes some results approximate (a target whose caches differ from those the
    /// variant's profile was simulated for, and were not simulated).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approximate: Vec<String>,
    /// Which peak the projections used (`listed` or `dgemm`).
    #[serde(default)]
    pub peak: crate::machine::PeakChoice,
    /// What giving design points their target's own bytes per level took, when any
    /// target's caches differ from those the variant's profile was simulated for (absent
    /// otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resimulation: Option<Resimulation>,
}

/// What giving design points the bytes per level of their target's own caches took
/// (`explore` with a program, `analyze --scenario`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resimulation {
    /// Design points whose bytes per level were simulated for their target's own caches.
    pub points: usize,
    /// Geometries simulated in this run.
    pub simulated: usize,
    /// `mix` runs made for them (one per program with a geometry not in the cache).
    pub mix_runs: usize,
    /// (program, geometry) pairs taken from the cache instead.
    pub cached: usize,
    /// Design points whose bytes came from a profile of the same `mix` run as the
    /// variant's (`mix -m A -m B` writes one per machine, and `mix-report.json` with all),
    /// simulated for the target's geometry: nothing re-run.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub from_mix_run: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Resimulation {
    /// The totals of two runs (two ranks of one exploration).
    pub fn add(&mut self, o: &Resimulation) {
        self.points += o.points;
        self.simulated += o.simulated;
        self.mix_runs += o.mix_runs;
        self.cached += o.cached;
        self.from_mix_run += o.from_mix_run;
    }
}

/// The OI_L1 - OI_ridge diagnostic of one design point (Gavoille 2024 thesis, section 7.4.1
/// and Fig. 7.5): how far the binary's OI at the first level with a roofline (L1 where L1
/// has a bandwidth) lies from the ridge of that level's roofline, the OI where its bandwidth
/// line meets the compute ceiling weighted by the binary's instruction mix (eq. 6.2). Below
/// zero the level's bandwidth binds, so a faster memory can raise the performance; at or
/// above zero the binary is compute-bound there and a faster memory leaves it unchanged.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RidgeDiagnostic {
    /// Variant label.
    pub variant: String,
    /// Target label.
    pub target: String,
    /// The level whose OI and roofline are compared (the first with a roofline).
    pub level: String,
    /// The variant's OI at `level`, FLOP/byte (`null`: no byte from that level on).
    pub oi: Option<f64>,
    /// The ridge of `level`'s roofline on the target machine, FLOP/byte.
    pub ridge_oi: f64,
    /// `oi - ridge_oi` (`null` with `oi`).
    pub delta: Option<f64>,
    /// Which roof binds the variant at `level` on the target.
    pub bound: Bound,
    /// The same for the source binary on the source machine: its OI at `level`.
    pub source_oi: Option<f64>,
    /// The ridge of `level`'s roofline on the source machine, FLOP/byte.
    pub source_ridge_oi: f64,
    /// `source_oi - source_ridge_oi`.
    pub source_delta: Option<f64>,
    /// Which roof binds the source binary at `level` on the source machine.
    pub source_bound: Bound,
}

impl RidgeDiagnostic {
    /// The diagnostic of one design point, from its projection: the point whose OI level
    /// and roofline level are the first level of the projection that has both.
    pub fn of(p: &DesignPoint) -> Option<RidgeDiagnostic> {
        let pr = &p.projection;
        // Node scope: thread 0's points, as the ceilings are thread 0's.
        let pts = pr.all_points();
        let first = pr.levels.iter().find_map(|l| {
            pts.iter()
                .find(|pt| &pt.oi_level == l && &pt.roof_level == l)
                .copied()
        })?;
        let ridge_of = |ceiling: f64, bw: f64| {
            (ceiling.is_finite() && bw.is_finite() && bw > 0.0)
                .then(|| crate::roofline::ridge(ceiling, bw))
        };
        let ridge_oi = ridge_of(pr.target_ceiling_gflops, first.bandwidth_target_gbs)?;
        let source_ridge_oi = ridge_of(pr.source_ceiling_gflops, first.bandwidth_source_gbs)?;
        let finite = |x: f64| x.is_finite().then_some(x);
        let (oi, source_oi) = (finite(first.oi_target), finite(first.oi_source));
        Some(RidgeDiagnostic {
            variant: p.variant.clone(),
            target: p.target.clone(),
            level: first.oi_level.clone(),
            oi,
            ridge_oi,
            delta: oi.map(|o| o - ridge_oi),
            bound: Bound::at(
                first.bandwidth_target_gbs,
                pr.target_ceiling_gflops,
                first.oi_target,
            ),
            source_oi,
            source_ridge_oi,
            source_delta: source_oi.map(|o| o - source_ridge_oi),
            source_bound: Bound::at(
                first.bandwidth_source_gbs,
                pr.source_ceiling_gflops,
                first.oi_source,
            ),
        })
    }
}

/// The [`RidgeDiagnostic`] of every design point that has one (a point without a level
/// both sides give a bandwidth for has none).
pub fn ridge_diagnostics(points: &[DesignPoint]) -> Vec<RidgeDiagnostic> {
    points.iter().filter_map(RidgeDiagnostic::of).collect()
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
    /// Where the variant's bytes per level on this target come from.
    #[serde(default)]
    pub bytes: BytesOrigin,
    /// The full projection.
    pub projection: Projection,
}

/// Where a design point's bytes per level come from.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BytesOrigin {
    /// The variant's profile: the target has the cache geometry the profile was simulated
    /// (or measured) with.
    #[default]
    Profile,
    /// Simulated for the target's own caches, which differ from those of the machine the
    /// variant's profile was simulated for (a transformed cache geometry, or another
    /// machine): re-simulated, or taken from the same `mix` run's profile of that geometry.
    Resimulated,
    /// The profile's, although the target's caches differ from those of the machine the
    /// profile was simulated for: the result is approximate (no program was given to
    /// re-simulate, or the target's caches cannot be simulated).
    Approximate,
}

impl BytesOrigin {
    /// A short word for tables and charts.
    pub fn label(self) -> &'static str {
        match self {
            BytesOrigin::Profile => "profile",
            BytesOrigin::Resimulated => "re-simulated",
            BytesOrigin::Approximate => "approximate",
        }
    }
}

/// Bytes per level simulated for targets whose caches are not those of the variants'
/// profiles (transformed geometries, other machines), for [`sweep_with`].
#[derive(Debug, Clone, Default)]
pub struct Resimulated {
    /// (variant index, target index) -> the variant's per-thread metrics with the bytes per
    /// level simulated on that target's caches (indices into [`Resolved`]'s lists).
    pub metrics: std::collections::BTreeMap<(usize, usize), Vec<AppMetrics>>,
    /// (variant index, target index) of the design points whose target's caches differ
    /// from those the variant's profile was simulated for ([`caches_differ`]): their bytes
    /// come from `metrics`, or the point is approximate.
    pub changed: Vec<(usize, usize)>,
}

/// Whether bytes per level simulated for the caches of `simulated` fail to describe the
/// caches of `target`: their [`cache_geometry_key`]s differ (a level's size, associativity,
/// line, sharing or inclusion, the level list, the core count). `explore` and `analyze
/// --scenario` both decide with this which design points need their own simulation.
pub fn caches_differ(simulated: &Machine, target: &Machine) -> bool {
    cache_geometry_key(simulated) != cache_geometry_key(target)
}

/// The cache geometry of a machine as one canonical line (level names, kinds, sizes,
/// associativities, line sizes, sharing, inclusion, cores): two machines with the same line simulate
/// the same bytes per level for the same program.
pub fn cache_geometry_key(m: &Machine) -> String {
    let mut out = format!("sockets={};cores={}", m.sockets, m.cores_per_socket);
    for l in &m.levels {
        out.push_str(&format!(";{}:{:?}", l.name, l.kind));
        if let Some(g) = &l.cache {
            out.push_str(&format!(
                ":size={}:ways={}:line={}:shared={:?}:inclusive={:?}",
                g.size_bytes, g.associativity, g.line_bytes, g.shared_by_cores, g.inclusive
            ));
        }
    }
    out
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
    /// What a sweep of 1,000 design points or more is told before it starts.
    pub fn notice(&self) -> Option<String> {
        (self.points >= 1000).then(|| {
            format!(
                "explore: {} design points ({} variants x {} targets), {} roofline projections, about {} MiB of results",
                self.points,
                self.variants,
                self.targets,
                self.projections,
                (self.bytes >> 20).max(1)
            )
        })
    }

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
    sweep_with(r, precision, opts, extra, &Resimulated::default())
}

/// [`sweep`], with the bytes per level of the (variant, target) pairs `resim` re-simulated
/// taken from it; every design point says where its bytes come from
/// ([`DesignPoint::bytes`]).
pub fn sweep_with(
    r: &Resolved,
    precision: Precision,
    opts: Options,
    extra: &Inputs<'_>,
    resim: &Resimulated,
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
            target_precision: None,
        };
        for (ti, (tname, tm)) in r.targets.iter().enumerate() {
            let (threads, origin) = match resim.metrics.get(&(vi, ti)) {
                Some(m) => (m.as_slice(), BytesOrigin::Resimulated),
                None if resim.changed.contains(&(vi, ti)) => {
                    (vthreads.as_slice(), BytesOrigin::Approximate)
                }
                None => (vthreads.as_slice(), BytesOrigin::Profile),
            };
            let tm = match vbits {
                Some(b) if *b != tm.vector_bits => apply(tm, &Transform::VectorBits(*b), &|_| {
                    unreachable!("no lookup for a vector-length change")
                })?,
                _ => tm.clone(),
            };
            let mut p = design_point(r, vname, tname, &tm, threads, precision, opts, &inputs)?;
            p.bytes = origin;
            out.push(p);
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
            bytes: BytesOrigin::Profile,
            projection: p,
        }
    }
}
