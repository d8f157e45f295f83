//! Application profiles: what a binary asks of a machine.
//!
//! A profile is JSON (format documented in `docs/profile-format.md`): the application, the
//! binary's identity, its ISA and vector width, its precision, the machine it ran on (or whose
//! caches were simulated), and per region and per thread the time, FLOPs, FP instructions and
//! bytes per memory level. Bytes may be given per level, or as a total with hit ratios per
//! level (local or global); both forms convert into each other.

use serde::{Deserialize, Serialize};

use crate::error::{InputError, Result, check_non_negative, check_positive};
use crate::machine::Precision;
use crate::range;

/// The profile format version this library reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Identity of the analysed binary.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BinaryIdentity {
    /// Path as given by the user.
    pub path: String,
    /// SHA-256 of the file, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Compiler and version, when known (from the ELF `.comment` section or the user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler: Option<String>,
    /// Compilation flags, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<String>,
}

/// Bytes served by one memory level.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LevelBytes {
    /// Level name (matches the machine's level names).
    pub level: String,
    /// Bytes of the program's loads and stores served by this level.
    pub bytes: f64,
}

/// Whether hit ratios are local (hits / accesses reaching the level) or global (fraction of
/// all accesses served by the level).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RatioKind {
    /// h_i = hits_i / accesses reaching level i. The last level serves all that reaches it.
    Local,
    /// g_i = bytes served by level i / total bytes; the g_i sum to 1.
    Global,
}

/// A hit ratio of one level.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LevelRatio {
    /// Level name.
    pub level: String,
    /// The ratio, in [0, 1].
    pub ratio: f64,
}

/// Hit ratios per level.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HitRatios {
    /// Local or global.
    pub kind: RatioKind,
    /// One entry per level, ordered from the core outwards. With local ratios the last
    /// level (main memory) may be omitted: it serves everything that reaches it.
    pub levels: Vec<LevelRatio>,
    /// With local ratios, the name of the level that serves what misses every listed level
    /// when it is not listed itself (default `MM`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_level: Option<String>,
}

impl HitRatios {
    /// Level names covered, in order (local ratios add the implied memory level).
    pub fn level_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.levels.iter().map(|x| x.level.clone()).collect();
        if self.kind == RatioKind::Local {
            let mem = self
                .memory_level
                .clone()
                .unwrap_or_else(|| "MM".to_string());
            if v.last() != Some(&mem) {
                v.push(mem);
            }
        }
        v
    }
}

/// Where the data of the loads and stores came from.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// Bytes served per level, ordered from the core outwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_level: Option<Vec<LevelBytes>>,
    /// Total bytes loaded and stored (with `hit_ratios`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_total: Option<f64>,
    /// Hit ratios (with `bytes_total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_ratios: Option<HitRatios>,
}

/// Metrics of one thread in one region.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadMetrics {
    /// Thread index (0-based).
    #[serde(default)]
    pub thread: u32,
    /// Wall time of the region in this thread, seconds (needed for the source of a projection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_s: Option<f64>,
    /// Floating-point operations (an FMA counts 2 per lane).
    pub flops: f64,
    /// Floating-point arithmetic instructions.
    pub fp_instructions: f64,
    /// Bytes per memory level.
    pub memory: Memory,
    /// Load instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loads: Option<f64>,
    /// Store instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stores: Option<f64>,
    /// All instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<f64>,
}

/// One region of interest (whole program, a function, between two markers).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// Region name (`main`, a function name, a marker name).
    pub name: String,
    /// Per-thread metrics.
    pub threads: Vec<ThreadMetrics>,
    /// How the region's bytes and FP instructions split by access width (`hpcscope mix`
    /// counts loads and stores by width), so that `project --bandwidths binary-width` takes
    /// each level's bandwidth at the binary's own widths. Absent: the profile's
    /// `vector_bits` stands for every access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_widths: Option<crate::roofline::AccessWidths>,
}

/// The largest share of the busiest thread's FLOPs and bytes a thread that waits for the
/// others does ([`Region::waiting_threads`]).
pub const WAITING_SHARE: f64 = 0.01;

/// An application profile.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Must be [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Application name.
    pub application: String,
    /// The binary analysed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<BinaryIdentity>,
    /// ISA of the binary (`x86_64`, `aarch64`).
    pub isa: String,
    /// Vector width the binary was analysed at, bits (SVE: the emulated vector length).
    pub vector_bits: u32,
    /// Precision of the FP work (`datasize` of eq. 6.2).
    pub precision: Precision,
    /// Id of the machine the binary ran on, or whose caches were simulated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// What produced the numbers: `qemu-plugin`, `perf`, `manual`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collector: Option<String>,
    /// True when the run ended early (crash, timeout): counts are what was seen.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// Regions of interest.
    pub regions: Vec<Region>,
    /// Free-form remarks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A thread's (or a region's) metrics resolved against an ordered level list: the input of
/// the roofline and projection functions.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppMetrics {
    /// FLOPs.
    pub flops: f64,
    /// FP instructions.
    pub fp_instructions: f64,
    /// Level names, ordered from the core outwards.
    pub levels: Vec<String>,
    /// Bytes served per level (same order as `levels`).
    pub bytes: Vec<f64>,
    /// Wall time, seconds, when known.
    pub time_s: Option<f64>,
}

impl AppMetrics {
    /// Total bytes loaded and stored.
    pub fn bytes_total(&self) -> f64 {
        self.bytes.iter().sum()
    }

    /// FLOPs per FP instruction (FPI). `None` without FP instructions.
    pub fn flops_per_instruction(&self) -> Option<f64> {
        (self.fp_instructions > 0.0).then(|| self.flops / self.fp_instructions)
    }

    /// Achieved GFLOP/s, when the time is known.
    pub fn gflops(&self) -> Option<f64> {
        self.time_s
            .filter(|t| *t > 0.0)
            .map(|t| self.flops / t / 1e9)
    }

    /// Bytes served by level `name`, if the level exists.
    pub fn bytes_of(&self, name: &str) -> Option<f64> {
        self.levels
            .iter()
            .position(|l| l == name)
            .map(|i| self.bytes[i])
    }

    /// Bytes served by level `name` and every level beyond it (eq. 6.3's denominator).
    pub fn bytes_from(&self, name: &str) -> Option<f64> {
        self.levels
            .iter()
            .position(|l| l == name)
            .map(|i| self.bytes[i..].iter().sum())
    }

    /// Global hit ratios (fraction of bytes served by each level).
    pub fn global_ratios(&self) -> Vec<f64> {
        global_from_bytes(&self.bytes)
    }
}

/// Bytes per level from a total and local hit ratios (`h[i]` for every level but possibly
/// the last): `B_1 = B h_1`, `B_2 = B (1-h_1) h_2`, ..., the last level gets the rest.
#[allow(clippy::needless_range_loop)] // `local` may be one shorter than the levels
pub fn bytes_from_local(total: f64, local: &[f64], n_levels: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(n_levels);
    let mut reaching = total;
    for i in 0..n_levels {
        let h = if i + 1 == n_levels {
            1.0
        } else {
            local.get(i).copied().unwrap_or(1.0)
        };
        out.push(reaching * h);
        reaching *= 1.0 - h;
    }
    out
}

/// Bytes per level from a total and global fractions.
pub fn bytes_from_global(total: f64, global: &[f64]) -> Vec<f64> {
    global.iter().map(|g| total * g).collect()
}

/// Global fractions from bytes per level (all zero when no byte moved).
pub fn global_from_bytes(bytes: &[f64]) -> Vec<f64> {
    let t: f64 = bytes.iter().sum();
    bytes
        .iter()
        .map(|b| if t > 0.0 { b / t } else { 0.0 })
        .collect()
}

/// Local hit ratios from bytes per level: `h_i = B_i / sum_{j>=i} B_j` (the last is 1 when
/// anything reaches it, 0 otherwise).
pub fn local_from_bytes(bytes: &[f64]) -> Vec<f64> {
    (0..bytes.len())
        .map(|i| {
            let reaching: f64 = bytes[i..].iter().sum();
            if reaching > 0.0 {
                bytes[i] / reaching
            } else {
                0.0
            }
        })
        .collect()
}

/// Local ratios from global fractions.
pub fn local_from_global(global: &[f64]) -> Vec<f64> {
    local_from_bytes(global)
}

/// Global fractions from local ratios over `n_levels` levels.
pub fn global_from_local(local: &[f64], n_levels: usize) -> Vec<f64> {
    bytes_from_local(1.0, local, n_levels)
}

impl Profile {
    /// Parses and validates a profile from JSON text; `origin` names the source in errors.
    pub fn from_json_str(src: &str, origin: &str) -> Result<Profile> {
        let p: Profile = crate::error::json_from_str(
            src,
            origin,
            "see docs/profile-format.md for the fields; `hpcscope mix` writes profiles",
        )?;
        p.validate(origin)?;
        Ok(p)
    }

    /// Serializes as pretty JSON.
    pub fn to_json_string(&self) -> String {
        serde_json::to_string_pretty(self).expect("a profile always serializes to JSON")
    }

    /// The region called `name`, or the only region when `name` is `None`.
    pub fn region(&self, name: Option<&str>, origin: &str) -> Result<&Region> {
        let names = || {
            let all: Vec<&str> = self.regions.iter().map(|r| r.name.as_str()).collect();
            crate::error::name_list(&all, 20)
        };
        match name {
            Some(n) => self.regions.iter().find(|r| r.name == n).ok_or_else(|| {
                InputError::new(
                    origin,
                    "regions",
                    format!("no region named '{}'", crate::error::shorten(n, 80)),
                    format!("choose one of: {}", names()),
                )
                .into()
            }),
            None if self.regions.len() == 1 => Ok(&self.regions[0]),
            None => Err(InputError::new(
                origin,
                "regions",
                format!("has {} regions", self.regions.len()),
                format!(
                    "name one (roofline --region; project --source-region, --target-region): {}",
                    names()
                ),
            )
            .into()),
        }
    }

    /// Checks every field; returns all problems at once.
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
                    "set format_version to {FORMAT_VERSION} after checking docs/profile-format.md"
                ),
            ));
        }
        if self.vector_bits == 0 || !self.vector_bits.is_multiple_of(32) {
            errs.push(InputError::new(
                origin,
                "vector_bits",
                format!(
                    "must be a positive multiple of 32, found {}",
                    self.vector_bits
                ),
                "give the vector width the binary was analysed at, in bits",
            ));
        }
        if self.regions.is_empty() {
            errs.push(InputError::new(
                origin,
                "regions",
                "is empty",
                "give at least one region with one thread",
            ));
        }
        let mut names = std::collections::HashMap::new();
        for (r, region) in self.regions.iter().enumerate() {
            if let Some(first) = names.insert(region.name.as_str(), r) {
                errs.push(InputError::new(
                    origin,
                    format!("regions[{r}].name"),
                    format!(
                        "region '{}' appears twice (also regions[{first}])",
                        crate::error::shorten(&region.name, 80)
                    ),
                    "give each region a distinct name, or merge the two into one",
                ));
            }
            if region.threads.len() > crate::range::MAX_THREADS {
                errs.push(InputError::new(
                    origin,
                    format!("regions[{r}].threads"),
                    format!(
                        "has {} threads, more than the {} hpcscope reads",
                        region.threads.len(),
                        crate::range::MAX_THREADS
                    ),
                    "give one entry per thread of the run",
                ));
                continue;
            }
            if let Some(w) = &region.access_widths {
                for problem in w.problems() {
                    errs.push(InputError::new(
                        origin,
                        format!("regions[{r}].access_widths"),
                        problem,
                        "remove access_widths to take every access at vector_bits, or write the split `hpcscope mix` writes",
                    ));
                }
            }
            let mut ids = std::collections::HashMap::new();
            for (t, th) in region.threads.iter().enumerate() {
                if let Some(first) = ids.insert(th.thread, t) {
                    errs.push(InputError::new(
                        origin,
                        format!("regions[{r}].threads[{t}].thread"),
                        format!(
                            "thread id {} appears twice in region '{}' (also threads[{first}])",
                            th.thread,
                            crate::error::shorten(&region.name, 80)
                        ),
                        "give each thread of a region a distinct id; sum the metrics of one thread into one entry",
                    ));
                }
            }
            if region.threads.is_empty() {
                errs.push(InputError::new(
                    origin,
                    format!("regions[{r}].threads"),
                    "is empty",
                    "give at least one thread's metrics",
                ));
            }
            for (t, th) in region.threads.iter().enumerate() {
                errs.extend(thread_problems(
                    origin,
                    &format!("regions[{r}].threads[{t}]"),
                    th,
                ));
            }
        }
        match errs.len() {
            0 => Ok(()),
            1 => Err(errs.remove(0).into()),
            _ => Err(crate::Error::Inputs(errs)),
        }
    }
}

/// The problems of one thread's metrics (`f`: where it is in the file).
fn thread_problems(origin: &str, f: &str, th: &ThreadMetrics) -> Vec<InputError> {
    let mut errs = Vec::new();
    errs.extend(
        check_non_negative(origin, &format!("{f}.flops"), th.flops, "FLOPs")
            .or_else(|| range::check(&range::COUNT, origin, &format!("{f}.flops"), th.flops)),
    );
    errs.extend(
        check_non_negative(
            origin,
            &format!("{f}.fp_instructions"),
            th.fp_instructions,
            "instructions",
        )
        .or_else(|| {
            range::check(
                &range::COUNT,
                origin,
                &format!("{f}.fp_instructions"),
                th.fp_instructions,
            )
        }),
    );
    if th.fp_instructions == 0.0 && th.flops > 0.0 {
        errs.push(InputError::new(
            origin,
            format!("{f}.fp_instructions"),
            "is 0 while flops > 0",
            "count the FP arithmetic instructions that produced the FLOPs",
        ));
    }
    if let Some(ts) = th.time_s {
        if let Some(e) = check_positive(origin, &format!("{f}.time_s"), ts, "seconds") {
            errs.push(e);
        } else if ts > range::TIME_S.max {
            errs.push(InputError::new(
                origin,
                format!("{f}.time_s"),
                format!(
                    "{} s is more than 100 days (8.64e6 s)",
                    crate::error::short_number(ts)
                ),
                "the unit is seconds: convert from ns/us/ms",
            ));
        } else {
            errs.extend(range::check(
                &range::TIME_S,
                origin,
                &format!("{f}.time_s"),
                ts,
            ));
        }
    }
    for (name, v) in [
        ("loads", th.loads),
        ("stores", th.stores),
        ("instructions", th.instructions),
    ] {
        if let Some(v) = v {
            errs.extend(
                check_non_negative(origin, &format!("{f}.{name}"), v, "")
                    .or_else(|| range::check(&range::COUNT, origin, &format!("{f}.{name}"), v)),
            );
        }
    }
    errs.extend(th.memory.check(origin, &format!("{f}.memory")));
    errs
}

impl Memory {
    fn check(&self, origin: &str, f: &str) -> Vec<InputError> {
        let mut errs = Vec::new();
        match (&self.bytes_per_level, self.bytes_total, &self.hit_ratios) {
            (Some(levels), None, None) => {
                if levels.is_empty() {
                    errs.push(InputError::new(origin, format!("{f}.bytes_per_level"), "is empty", "give the bytes served by each level, L1 to main memory"));
                }
                for (i, lb) in levels.iter().enumerate() {
                    let field = format!("{f}.bytes_per_level[{i}].bytes");
                    errs.extend(check_non_negative(origin, &field, lb.bytes, "bytes").or_else(|| range::check(&range::COUNT, origin, &field, lb.bytes)));
                    if levels[..i].iter().any(|o| o.level == lb.level) {
                        errs.push(InputError::new(origin, format!("{f}.bytes_per_level[{i}].level"), format!("level '{}' appears twice", lb.level), "give each level once"));
                    }
                }
            }
            (None, Some(total), Some(hr)) => {
                let field = format!("{f}.bytes_total");
                errs.extend(check_non_negative(origin, &field, total, "bytes").or_else(|| range::check(&range::COUNT, origin, &field, total)));
                for (i, lr) in hr.levels.iter().enumerate() {
                    if !(0.0..=1.0).contains(&lr.ratio) {
                        errs.push(InputError::new(origin, format!("{f}.hit_ratios.levels[{i}].ratio"), format!("{} is not in [0, 1]", crate::error::short_number(lr.ratio)), "give a ratio between 0 and 1 (not a percentage)"));
                    }
                }
                if hr.kind == RatioKind::Global && !hr.levels.is_empty() {
                    let s: f64 = hr.levels.iter().map(|l| l.ratio).sum();
                    if (s - 1.0).abs() > 1e-6 {
                        errs.push(InputError::new(origin, format!("{f}.hit_ratios"), format!("global ratios sum to {s}, not 1"), "global ratios are the fraction of all bytes served by each level, main memory included; or use kind = \"local\""));
                    }
                }
            }
            _ => errs.push(InputError::new(origin, f, "must have either bytes_per_level, or bytes_total with hit_ratios", "give {\"bytes_per_level\": [{\"level\": \"L1\", \"bytes\": ...}, ...]} or {\"bytes_total\": ..., \"hit_ratios\": {\"kind\": \"local\", \"levels\": [...]}}")),
        }
        errs
    }

    /// Level names this memory description covers, in order.
    pub fn level_names(&self) -> Vec<String> {
        if let Some(l) = &self.bytes_per_level {
            l.iter().map(|x| x.level.clone()).collect()
        } else if let Some(h) = &self.hit_ratios {
            h.level_names()
        } else {
            Vec::new()
        }
    }

    /// Bytes per level over `levels` (ordered from the core outwards; the last is main
    /// memory). Every level of the profile must be in `levels`; a level of `levels` that the
    /// profile does not give serves 0 bytes with bytes per level, and is an error with local
    /// ratios unless it is the last.
    pub fn resolve(&self, levels: &[String], origin: &str, field: &str) -> Result<Vec<f64>> {
        for n in self.level_names() {
            if !levels.contains(&n) {
                return Err(InputError::new(
                    origin,
                    field,
                    format!("level '{n}' is not a level of the machine ({})", levels.join(", ")),
                    "use the machine's level names (hpcscope machine show MACHINE), or a machine with that level",
                )
                .into());
            }
        }
        if let Some(bpl) = &self.bytes_per_level {
            return Ok(levels
                .iter()
                .map(|n| bpl.iter().find(|b| &b.level == n).map_or(0.0, |b| b.bytes))
                .collect());
        }
        let (Some(total), Some(hr)) = (self.bytes_total, &self.hit_ratios) else {
            return Err(InputError::new(
                origin,
                field,
                "has no byte counts",
                "give bytes_per_level or bytes_total with hit_ratios",
            )
            .into());
        };
        let get = |n: &String| hr.levels.iter().find(|l| &l.level == n).map(|l| l.ratio);
        match hr.kind {
            RatioKind::Global => {
                let g: Vec<f64> = levels.iter().map(|n| get(n).unwrap_or(0.0)).collect();
                Ok(bytes_from_global(total, &g))
            }
            RatioKind::Local => {
                let mut local = Vec::new();
                for (i, n) in levels.iter().enumerate() {
                    match get(n) {
                        Some(r) => local.push(r),
                        None if i + 1 == levels.len() => local.push(1.0),
                        None => {
                            return Err(InputError::new(
                                origin,
                                format!("{field}.hit_ratios"),
                                format!("no local hit ratio for level '{n}'"),
                                format!(
                                    "give a ratio for every level but the last: {}",
                                    levels[..levels.len() - 1].join(", ")
                                ),
                            )
                            .into());
                        }
                    }
                }
                Ok(bytes_from_local(total, &local, levels.len()))
            }
        }
    }
}

impl ThreadMetrics {
    /// Resolves this thread's metrics over the profile's own level list.
    pub fn resolve(&self, origin: &str, field: &str) -> Result<AppMetrics> {
        let levels = self.memory.level_names();
        let bytes = self.memory.resolve(&levels, origin, field)?;
        Ok(AppMetrics {
            flops: self.flops,
            fp_instructions: self.fp_instructions,
            levels,
            bytes,
            time_s: self.time_s,
        })
    }
}

impl Region {
    /// All instructions of every thread, when each thread counts them.
    pub fn instructions(&self) -> Option<f64> {
        self.threads.iter().map(|t| t.instructions).sum()
    }

    /// Per-thread metrics, resolved.
    pub fn thread_metrics(&self, origin: &str) -> Result<Vec<AppMetrics>> {
        self.threads
            .iter()
            .enumerate()
            .map(|(t, th)| {
                th.resolve(
                    origin,
                    &format!("regions[{}].threads[{t}].memory", self.name),
                )
            })
            .collect()
    }

    /// The threads that wait for the others: each does at most [`WAITING_SHARE`] of the
    /// busiest thread's FLOPs and of its bytes (a main thread that starts workers and joins
    /// them), while another thread works. Their indices in `threads`; empty with one thread
    /// or when every thread works.
    pub fn waiting_threads(&self, origin: &str) -> Result<Vec<usize>> {
        let per = self.thread_metrics(origin)?;
        if per.len() < 2 {
            return Ok(Vec::new());
        }
        let max_flops = per.iter().map(|m| m.flops).fold(0.0, f64::max);
        let max_bytes = per.iter().map(AppMetrics::bytes_total).fold(0.0, f64::max);
        let waits = |m: &AppMetrics| {
            m.flops <= WAITING_SHARE * max_flops && m.bytes_total() <= WAITING_SHARE * max_bytes
        };
        let waiting: Vec<usize> = (0..per.len()).filter(|&i| waits(&per[i])).collect();
        Ok(if waiting.len() == per.len() {
            Vec::new()
        } else {
            waiting
        })
    }

    /// Per-thread metrics of the threads that work: [`Self::thread_metrics`] without
    /// [`Self::waiting_threads`] (whose indices come second). A node's rooflines and
    /// projections take these, one per core; the region's time stays every thread's.
    pub fn working_thread_metrics(&self, origin: &str) -> Result<(Vec<AppMetrics>, Vec<usize>)> {
        let waiting = self.waiting_threads(origin)?;
        let per = self.thread_metrics(origin)?;
        let working = per
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !waiting.contains(i))
            .map(|(_, m)| m)
            .collect();
        Ok((working, waiting))
    }

    /// What the threads `waiting` ([`Self::waiting_threads`]) did, for a note: "thread 0 did
    /// at most 5 % of the busiest thread's FLOPs and bytes (1000 FLOPs and 8000 bytes in
    /// all: a thread that waits for the others, as a main thread that joins its workers
    /// does)". The caller says what follows from it.
    pub fn waiting_threads_said(&self, origin: &str, waiting: &[usize]) -> Result<String> {
        let per = self.thread_metrics(origin)?;
        let (flops, bytes) = waiting
            .iter()
            .filter_map(|&i| per.get(i))
            .fold((0.0, 0.0), |a, m| (a.0 + m.flops, a.1 + m.bytes_total()));
        let ids: Vec<String> = waiting
            .iter()
            .filter_map(|&i| self.threads.get(i))
            .map(|t| t.thread.to_string())
            .collect();
        let many = ids.len() > 1;
        Ok(format!(
            "thread{} {} did at most {:.0} % of the busiest thread's FLOPs and bytes ({flops:.0} FLOPs and {bytes:.0} bytes in all: {} that wait{} for the others, as a main thread that joins its workers does)",
            if many { "s" } else { "" },
            ids.join(", "),
            WAITING_SHARE * 100.0,
            if many { "threads" } else { "a thread" },
            if many { "" } else { "s" },
        ))
    }

    /// Metrics of the whole region: sums over threads, time = the slowest thread's
    /// ([`crate::project::aggregate`]), once every thread is checked to have the same levels.
    pub fn aggregate(&self, origin: &str) -> Result<AppMetrics> {
        let per = self.thread_metrics(origin)?;
        let levels = per[0].levels.clone();
        for (t, m) in per.iter().enumerate() {
            if m.levels != levels {
                return Err(InputError::new(
                    origin,
                    format!("regions[{}].threads[{t}].memory", self.name),
                    format!(
                        "levels ({}) differ from thread 0's ({})",
                        m.levels.join(", "),
                        levels.join(", ")
                    ),
                    "give every thread the same levels",
                )
                .into());
            }
        }
        Ok(crate::project::aggregate(&per))
    }
}
