//! The metric catalogue (`data/metrics/metrics.toml`) and the per-CPU counter recipes
//! (`data/metrics/recipes/*.toml`), shipped inside the binary and overridable by a file.
//!
//! Loading parses every formula and checks that every name a formula uses is known (a
//! quantity, metric, recipe formula, event, constant or input), that every quantity is either
//! given or listed under `cannot_measure`, and that no formulas refer to each other in a
//! cycle. Errors name the file, the formula and the column.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

pub use crate::cpu::CpuMatch;
use crate::error::{Error, Result};
use crate::expr::Expr;

/// Names that are inputs of every computation rather than counters.
pub const INPUTS: &[&str] = &["time", "duration_time"];

/// Software events every machine counts (perf names with `-` written `_`); formulas may
/// use them without a recipe event.
pub const SOFTWARE_EVENTS: &[&str] = &[
    "task_clock",
    "cpu_clock",
    "page_faults",
    "context_switches",
    "cpu_migrations",
    "minor_faults",
    "major_faults",
];

/// Constants every computation defines (on top of a recipe's): `#sp` (1 for single
/// precision), `#dp`, `#element_bytes` (4 or 8), and the perf ones with neutral values.
pub const RUN_CONSTANTS: &[&str] = &[
    "sp",
    "dp",
    "element_bytes",
    "smt_on",
    "num_cpus",
    "num_cpus_online",
    "num_cores",
    "num_packages",
    "num_dies",
    "core_wide",
    "slots",
    "system_tsc_freq",
];

/// Which of the seed's conflicting formulas to use where a recipe has two.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// Reproduces the seed's published tables.
    #[default]
    AsPublished,
    /// Physically consistent (element and vector sizes as the hardware moves them).
    Corrected,
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Variant::AsPublished => "as_published",
            Variant::Corrected => "corrected",
        })
    }
}

/// A category of metrics (a row group of the seed's tables).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Category {
    /// Identifier.
    pub id: String,
    /// Label printed as a row group header.
    pub label: String,
}

/// One portable metric.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricDef {
    /// Identifier (`flops_per_s`).
    pub id: String,
    /// Row label as in the seed's tables (`flops/s (Gflops/s)`).
    pub label: String,
    /// Category id.
    pub category: String,
    /// Unit of the stored (unscaled) value.
    #[serde(default)]
    pub unit: String,
    /// Display multiplier (1e-9 for GB and Gflop/s).
    #[serde(default = "one")]
    pub scale: f64,
    /// Generic formula over quantities and other metrics.
    pub formula: String,
    /// One sentence.
    pub description: String,
}

fn one() -> f64 {
    1.0
}

/// The metric set file.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricSet {
    /// File format version (1).
    pub format_version: u32,
    /// Where the definitions come from.
    pub source: String,
    /// Row groups, in display order.
    #[serde(rename = "category")]
    pub categories: Vec<Category>,
    /// Quantity id -> description: what each recipe must provide.
    pub quantities: BTreeMap<String, String>,
    /// Metrics, in display order.
    #[serde(rename = "metric")]
    pub metrics: Vec<MetricDef>,
}

/// One event a recipe reads, with its spelling for each collector.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventDef {
    /// PAPI (preset or libpfm native) name, as Caliper and PAPI write it.
    #[serde(default)]
    pub papi: Option<String>,
    /// Linux perf name (pmu-events JSON `EventName`, lower case). May contain `*` for
    /// instances (`uncore_imc*/cas_count_read/`).
    #[serde(default)]
    pub perf: Option<String>,
    /// likwid-perfctr event name.
    #[serde(default)]
    pub likwid: Option<String>,
    /// perf generic hardware event (`cycles`, `instructions`, `cache-references`, ...).
    #[serde(default)]
    pub generic: Option<String>,
    /// Encoding on the PMU for perf_event_open: `event=0xc7,umask=0x01`.
    #[serde(default)]
    pub raw: Option<String>,
    /// PMU name in `/sys/bus/event_source/devices` (default `cpu`; may end in `*`).
    #[serde(default)]
    pub pmu: Option<String>,
    /// How instances are combined (`sum`).
    #[serde(default)]
    pub reduce: Option<String>,
    /// Formula over other events, used when the event itself is not in the data.
    #[serde(default)]
    pub derived: Option<String>,
    /// Other spellings accepted on import.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// What it counts.
    #[serde(default)]
    pub description: Option<String>,
}

impl EventDef {
    /// Every spelling, the logical name first.
    pub fn spellings<'a>(&'a self, name: &'a str) -> Vec<&'a str> {
        let mut v = vec![name];
        for s in [&self.perf, &self.papi, &self.likwid, &self.generic]
            .into_iter()
            .flatten()
        {
            v.push(s);
        }
        v.extend(self.aliases.iter().map(|s| s.as_str()));
        v
    }
}

/// A formula, or two variants of it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FormulaDef {
    /// One formula.
    One(String),
    /// The seed's two readings.
    Variants {
        /// Reproduces the published tables.
        as_published: String,
        /// Physically consistent.
        corrected: String,
        /// Why they differ.
        #[serde(default)]
        note: Option<String>,
    },
}

impl FormulaDef {
    /// The text for a variant.
    pub fn text(&self, v: Variant) -> &str {
        match (self, v) {
            (FormulaDef::One(s), _) => s,
            (FormulaDef::Variants { as_published, .. }, Variant::AsPublished) => as_published,
            (FormulaDef::Variants { corrected, .. }, Variant::Corrected) => corrected,
        }
    }
}

/// Recipe header.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecipeInfo {
    /// Identifier (`intel-cascadelake`).
    pub id: String,
    /// Human name.
    pub name: String,
    /// Other ids accepted by `--recipe`.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// `intel`, `amd`, `arm`, `fujitsu`, `generic`.
    pub vendor: String,
    /// Whether the recipe comes from seed 001 (else: derived here from public event lists).
    #[serde(default)]
    pub from_seed: bool,
    /// Where the formulas come from.
    pub source: String,
    /// Where the event names and encodings come from.
    pub events_source: String,
    /// CPUs this recipe is for.
    #[serde(default)]
    pub cpus: Vec<CpuMatch>,
    /// Quantity or metric id -> why it cannot be measured on these CPUs.
    #[serde(default)]
    pub cannot_measure: BTreeMap<String, String>,
    /// Caveats shown with the results.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// A per-CPU recipe: events, constants and formulas for the quantities.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// File format version (1).
    pub format_version: u32,
    /// Header.
    pub recipe: RecipeInfo,
    /// Constants (`line_size`, ...).
    #[serde(default)]
    pub constants: BTreeMap<String, f64>,
    /// Logical event name -> spellings.
    #[serde(default)]
    pub events: BTreeMap<String, EventDef>,
    /// Quantity, helper or metric id -> formula.
    #[serde(default)]
    pub formulas: BTreeMap<String, FormulaDef>,
}

/// A recipe with its formulas parsed for one variant.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The recipe.
    pub recipe: Recipe,
    /// The variant.
    pub variant: Variant,
    /// Recipe formulas, parsed.
    pub formulas: BTreeMap<String, Expr>,
    /// Derived events, parsed.
    pub derived: BTreeMap<String, Expr>,
    /// Generic metric formulas, parsed.
    pub metrics: BTreeMap<String, Expr>,
}

/// The metric set and all recipes.
#[derive(Debug, Clone)]
pub struct Catalogue {
    /// The metric set.
    pub metrics: MetricSet,
    /// Recipes, with the file each came from.
    pub recipes: Vec<(String, Recipe)>,
}

const BUILTIN_METRICS: &str = include_str!("../../../data/metrics/metrics.toml");
const BUILTIN_RECIPES: &[(&str, &str)] = &[
    (
        "intel-cascadelake.toml",
        include_str!("../../../data/metrics/recipes/intel-cascadelake.toml"),
    ),
    (
        "fujitsu-a64fx.toml",
        include_str!("../../../data/metrics/recipes/fujitsu-a64fx.toml"),
    ),
    (
        "intel-sapphirerapids.toml",
        include_str!("../../../data/metrics/recipes/intel-sapphirerapids.toml"),
    ),
    (
        "amd-zen3.toml",
        include_str!("../../../data/metrics/recipes/amd-zen3.toml"),
    ),
    (
        "amd-zen4.toml",
        include_str!("../../../data/metrics/recipes/amd-zen4.toml"),
    ),
    (
        "amd-zen5.toml",
        include_str!("../../../data/metrics/recipes/amd-zen5.toml"),
    ),
    (
        "arm-neoverse-n1.toml",
        include_str!("../../../data/metrics/recipes/arm-neoverse-n1.toml"),
    ),
    (
        "arm-neoverse-v1.toml",
        include_str!("../../../data/metrics/recipes/arm-neoverse-v1.toml"),
    ),
    (
        "arm-neoverse-v2.toml",
        include_str!("../../../data/metrics/recipes/arm-neoverse-v2.toml"),
    ),
    (
        "generic-pmu.toml",
        include_str!("../../../data/metrics/recipes/generic-pmu.toml"),
    ),
    (
        "software.toml",
        include_str!("../../../data/metrics/recipes/software.toml"),
    ),
];

/// A recipe and why it was taken, when it was not the user's choice or this CPU's own.
#[derive(Debug, Clone)]
pub struct Chosen<'a> {
    /// The recipe.
    pub recipe: &'a Recipe,
    /// Why this recipe, when it is a stand-in (the closest microarchitecture, the
    /// architectural events, or the one the data's event names fit): said with the results.
    pub why: Option<&'static str>,
    /// The same, with the CPU or the file named.
    pub note: Option<String>,
}

impl<'a> Chosen<'a> {
    fn exact(recipe: &'a Recipe) -> Chosen<'a> {
        Chosen {
            recipe,
            why: None,
            note: None,
        }
    }
}

/// The recipe of the closest known microarchitecture for a CPU without one of its own, from
/// its vendor, family and feature flags, with the reason; `None` when nothing is close
/// (the architectural events are all that is common then).
fn closest_id(cpu: &crate::cpu::CpuId) -> Option<(&'static str, &'static str)> {
    match cpu.vendor.as_str() {
        "GenuineIntel" if cpu.has("avx512f") && cpu.has("amx_tile") => Some((
            "intel-sapphirerapids",
            "AVX-512 and AMX: the Sapphire Rapids family (Sapphire, Emerald, Granite Rapids)",
        )),
        "GenuineIntel" if cpu.has("avx512f") => Some((
            "intel-cascadelake",
            "AVX-512 without AMX: the Skylake-SP family (Skylake-SP, Cascade Lake, Ice Lake SP share the FP_ARITH_INST_RETIRED encodings)",
        )),
        "AuthenticAMD" if cpu.family == Some(0x1a) => {
            Some(("amd-zen5", "family 1Ah: the Zen 5 family"))
        }
        "AuthenticAMD" if cpu.family == Some(0x19) && cpu.has("avx512f") => {
            Some(("amd-zen4", "family 19h with AVX-512: the Zen 4 family"))
        }
        "AuthenticAMD" if cpu.family == Some(0x19) => {
            Some(("amd-zen3", "family 19h without AVX-512: the Zen 3 family"))
        }
        "arm" if cpu.implementer == Some(0x46) => Some((
            "fujitsu-a64fx",
            "Fujitsu implementer 0x46: the A64FX recipe",
        )),
        "arm" if cpu.has("sve2") => Some((
            "arm-neoverse-v2",
            "SVE2: the Neoverse V2 recipe (its events are Arm PMUv3 common events)",
        )),
        "arm" if cpu.has("sve") => Some((
            "arm-neoverse-v1",
            "SVE: the Neoverse V1 recipe (its events are Arm PMUv3 common events)",
        )),
        "arm" => Some((
            "arm-neoverse-n1",
            "Arm without SVE: the Neoverse N1 recipe (its events are Arm PMUv3 common events)",
        )),
        _ => None,
    }
}

fn toml_err(origin: &str, src: &str, e: &toml::de::Error) -> Error {
    if let Some(span) = e.span() {
        let before = &src[..span.start.min(src.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Error::import(origin, line, column, e.message().to_string())
    } else {
        Error::import(origin, 1, 1, e.message().to_string())
    }
}

impl MetricSet {
    /// Parses and checks a metric set file.
    pub fn parse(src: &str, origin: &str) -> Result<MetricSet> {
        let m: MetricSet = toml::from_str(src).map_err(|e| toml_err(origin, src, &e))?;
        if m.format_version != 1 {
            return Err(Error::recipe(
                origin,
                format!(
                    "format_version is {}, this hpcscope reads 1",
                    m.format_version
                ),
                "set format_version = 1",
            ));
        }
        for d in &m.metrics {
            Expr::parse(&d.formula).map_err(|e| Error::Formula {
                origin: origin.into(),
                name: d.id.clone(),
                source: e,
            })?;
            if !m.categories.iter().any(|c| c.id == d.category) {
                return Err(Error::recipe(
                    origin,
                    format!("metric '{}' has unknown category '{}'", d.id, d.category),
                    "use one of the [[category]] ids",
                ));
            }
        }
        Ok(m)
    }

    /// A metric by id.
    pub fn get(&self, id: &str) -> Option<&MetricDef> {
        self.metrics.iter().find(|m| m.id == id)
    }
}

impl Recipe {
    /// Parses a recipe file (not yet checked against a metric set).
    pub fn parse(src: &str, origin: &str) -> Result<Recipe> {
        let r: Recipe = toml::from_str(src).map_err(|e| toml_err(origin, src, &e))?;
        if r.format_version != 1 {
            return Err(Error::recipe(
                origin,
                format!(
                    "format_version is {}, this hpcscope reads 1",
                    r.format_version
                ),
                "set format_version = 1",
            ));
        }
        Ok(r)
    }

    /// Whether `id` names this recipe (its id or an alias, case-insensitive).
    pub fn answers_to(&self, id: &str) -> bool {
        let id = id.to_ascii_lowercase();
        self.recipe.id == id
            || self
                .recipe
                .aliases
                .iter()
                .any(|a| a.to_ascii_lowercase() == id)
    }

    /// Whether the recipe has two variants for any formula.
    pub fn has_variants(&self) -> bool {
        self.formulas
            .values()
            .any(|f| matches!(f, FormulaDef::Variants { .. }))
    }

    /// Events the formulas of `variant` need, derived events expanded to what they read.
    pub fn needed_events(&self, metrics: &MetricSet, variant: Variant) -> Vec<String> {
        let mut names: BTreeSet<String> = BTreeSet::new();
        let mut todo: Vec<String> = Vec::new();
        for f in self.formulas.values() {
            if let Ok(e) = Expr::parse(f.text(variant)) {
                todo.extend(e.identifiers());
            }
        }
        for m in &metrics.metrics {
            if let Ok(e) = Expr::parse(&m.formula) {
                todo.extend(e.identifiers());
            }
        }
        let mut seen = BTreeSet::new();
        while let Some(n) = todo.pop() {
            if !seen.insert(n.clone()) {
                continue;
            }
            if let Some(ev) = self.events.get(&n) {
                if let Some(d) = &ev.derived {
                    if let Ok(e) = Expr::parse(d) {
                        todo.extend(e.identifiers());
                    }
                } else {
                    names.insert(n);
                }
            }
        }
        // Only events of the chosen variant's formulas, through the quantities used.
        names.into_iter().collect()
    }
}

impl Catalogue {
    /// The catalogue shipped with hpcscope.
    pub fn builtin() -> Catalogue {
        let metrics = MetricSet::parse(BUILTIN_METRICS, "data/metrics/metrics.toml")
            .expect("the shipped metric set is valid (tested)");
        let mut recipes = Vec::new();
        for (file, src) in BUILTIN_RECIPES {
            let origin = format!("data/metrics/recipes/{file}");
            let r = Recipe::parse(src, &origin).expect("shipped recipes are valid (tested)");
            recipes.push((origin, r));
        }
        Catalogue { metrics, recipes }
    }

    /// Checks every recipe against the metric set, for both variants.
    pub fn check(&self) -> Result<()> {
        for (origin, r) in &self.recipes {
            for v in [Variant::AsPublished, Variant::Corrected] {
                self.compile_recipe(r, origin, v)?;
            }
        }
        Ok(())
    }

    /// Adds a user recipe file (checked), which takes precedence over shipped ones.
    pub fn add_recipe_file(&mut self, path: &std::path::Path) -> Result<&Recipe> {
        let src = crate::import::read_text(path)?;
        let origin = path.display().to_string();
        let r = Recipe::parse(&src, &origin)?;
        for v in [Variant::AsPublished, Variant::Corrected] {
            self.compile_recipe(&r, &origin, v)?;
        }
        self.recipes.insert(0, (origin, r));
        Ok(&self.recipes[0].1)
    }

    /// Recipe ids.
    pub fn ids(&self) -> Vec<String> {
        self.recipes
            .iter()
            .map(|(_, r)| r.recipe.id.clone())
            .collect()
    }

    /// A recipe by id or alias.
    pub fn find(&self, id: &str) -> Result<&Recipe> {
        self.recipes
            .iter()
            .map(|(_, r)| r)
            .find(|r| r.answers_to(id))
            .ok_or_else(|| Error::UnknownRecipe {
                id: id.to_string(),
                known: self.ids(),
            })
    }

    /// The recipe for a detected CPU.
    pub fn for_cpu(&self, cpu: &crate::cpu::CpuId) -> Result<&Recipe> {
        self.recipes
            .iter()
            .map(|(_, r)| r)
            .find(|r| r.recipe.cpus.iter().any(|m| cpu.matches(m)))
            .ok_or_else(|| Error::UnknownCpu {
                cpu: cpu.to_string(),
                known: self
                    .recipes
                    .iter()
                    .filter(|(_, r)| !r.recipe.cpus.is_empty())
                    .map(|(_, r)| format!("{} ({})", r.recipe.id, r.recipe.name))
                    .collect(),
            })
    }

    /// The recipe for a CPU, never failing: its own recipe; else the recipe of the closest
    /// known microarchitecture its vendor, family and feature flags identify (a VM that
    /// reports an odd model number is the common case); else the architectural instructions
    /// and cycles (`generic-pmu`) for a known vendor, or software events for an unknown one.
    /// [`Chosen::note`] says which and why when it is not the CPU's own.
    pub fn for_cpu_or_closest(&self, cpu: &crate::cpu::CpuId) -> Chosen<'_> {
        if let Ok(r) = self.for_cpu(cpu) {
            return Chosen::exact(r);
        }
        let (id, why) = match closest_id(cpu) {
            Some(c) => c,
            None if matches!(cpu.vendor.as_str(), "GenuineIntel" | "AuthenticAMD" | "arm") => (
                "generic-pmu",
                "no known microarchitecture is close: only the architectural instructions and cycles",
            ),
            None => ("software", "unknown vendor: software events only"),
        };
        self.stand_in(id, why, |r| {
            format!(
                "this CPU ({cpu}) has no counter recipe of its own; took '{r}' ({why}); pass --recipe ID to choose another"
            )
        })
    }

    /// The recipe that counter data recorded elsewhere was counted with, from its event
    /// names alone (never from the CPU reading it): the recipe with the most events whose
    /// model-specific spellings (perf, PAPI or likwid names, aliases) appear in the data, the
    /// first in catalogue order on a tie; `generic-pmu` when only `instructions` or `cycles`
    /// appear; else `software`. [`Chosen::note`] says which and why.
    pub fn for_data(&self, raw: &crate::raw::RawData, origin: &str) -> Chosen<'_> {
        let names: std::collections::BTreeSet<String> = raw
            .regions
            .iter()
            .flat_map(|r| r.threads.iter())
            .flat_map(|t| t.counters.keys())
            .map(|k| crate::compute::normalize(k))
            .collect();
        let present = |spelling: &str| {
            let n = crate::compute::normalize(spelling);
            if n.contains('*') {
                names.iter().any(|k| crate::compute::glob(&n, k))
            } else {
                names.contains(&n) || names.iter().any(|k| k.split('@').next() == Some(&n))
            }
        };
        let mut best: Option<(usize, &Recipe)> = None;
        let mut tied: Vec<&str> = Vec::new();
        for (_, r) in &self.recipes {
            if r.recipe.cpus.is_empty() {
                continue;
            }
            let score = r
                .events
                .values()
                .filter(|e| {
                    [&e.perf, &e.papi, &e.likwid]
                        .into_iter()
                        .flatten()
                        .chain(e.aliases.iter())
                        .filter(|s| Some(*s) != e.generic.as_ref())
                        .any(|s| present(s))
                })
                .count();
            match best {
                Some((b, _)) if score < b || score == 0 => {}
                Some((b, _)) if score == b => tied.push(&r.recipe.id),
                _ if score > 0 => {
                    best = Some((score, r));
                    tied = vec![&r.recipe.id];
                }
                _ => {}
            }
        }
        if let Some((n, r)) = best {
            let also = if tied.len() > 1 {
                format!(
                    "; they fit {} equally: took the first, pass --recipe ID to choose",
                    tied.join(", ")
                )
            } else {
                String::new()
            };
            return Chosen {
                recipe: r,
                why: Some("the data's event names"),
                note: Some(format!(
                    "{origin}: counted with recipe '{}' ({n} of its events are in the file){also}",
                    r.recipe.id
                )),
            };
        }
        let (id, why) = if present("instructions") || present("cycles") {
            (
                "generic-pmu",
                "the data names no model-specific event: only instructions and cycles are computed; the other hardware metrics need --recipe ID",
            )
        } else {
            (
                "software",
                "the data names no hardware event: software metrics only; hardware metrics need --recipe ID",
            )
        };
        self.stand_in(id, why, |r| format!("{origin}: recipe '{r}' ({why})"))
    }

    /// A shipped recipe taken as a stand-in, with its reason and the note `note` makes of its
    /// id.
    fn stand_in(
        &self,
        id: &str,
        why: &'static str,
        note: impl FnOnce(&str) -> String,
    ) -> Chosen<'_> {
        let recipe = self
            .find(id)
            .expect("the shipped catalogue holds every fallback recipe (tested)");
        Chosen {
            recipe,
            why: Some(why),
            note: Some(note(&recipe.recipe.id)),
        }
    }

    /// Parses and checks a recipe's formulas for a variant.
    pub fn compile(&self, recipe: &Recipe, variant: Variant) -> Result<Compiled> {
        let origin = self
            .recipes
            .iter()
            .find(|(_, r)| r.recipe.id == recipe.recipe.id)
            .map_or_else(|| recipe.recipe.id.clone(), |(o, _)| o.clone());
        self.compile_recipe(recipe, &origin, variant)
    }

    fn compile_recipe(&self, r: &Recipe, origin: &str, variant: Variant) -> Result<Compiled> {
        let parse = |name: &str, text: &str| {
            Expr::parse(text).map_err(|e| Error::Formula {
                origin: origin.to_string(),
                name: name.to_string(),
                source: e,
            })
        };
        let mut formulas = BTreeMap::new();
        for (k, f) in &r.formulas {
            formulas.insert(k.clone(), parse(k, f.text(variant))?);
        }
        let mut derived = BTreeMap::new();
        for (k, e) in &r.events {
            if let Some(d) = &e.derived {
                derived.insert(k.clone(), parse(k, d)?);
            }
        }
        let mut metrics = BTreeMap::new();
        for m in &self.metrics.metrics {
            metrics.insert(m.id.clone(), parse(&m.id, &m.formula)?);
        }
        // Every quantity is given or declared unmeasurable.
        for q in self.metrics.quantities.keys() {
            if !r.formulas.contains_key(q) && !r.recipe.cannot_measure.contains_key(q) {
                return Err(Error::recipe(
                    origin,
                    format!("quantity '{q}' has no formula and is not listed under cannot_measure"),
                    format!(
                        "add `{q} = \"...\"` under [formulas], or `{q} = \"why\"` under [recipe.cannot_measure]"
                    ),
                ));
            }
        }
        for k in r.recipe.cannot_measure.keys() {
            if !self.metrics.quantities.contains_key(k) && self.metrics.get(k).is_none() {
                return Err(Error::recipe(
                    origin,
                    format!("cannot_measure names '{k}', which is neither a quantity nor a metric"),
                    "use a quantity id from metrics.toml [quantities] or a metric id",
                ));
            }
        }
        // Every name resolves.
        let known = |n: &str| {
            formulas.contains_key(n)
                || r.recipe.cannot_measure.contains_key(n)
                || metrics.contains_key(n)
                || r.events.contains_key(n)
                || INPUTS.contains(&n)
                || SOFTWARE_EVENTS.contains(&n)
        };
        let mut consts: BTreeSet<String> = r.constants.keys().cloned().collect();
        consts.extend(RUN_CONSTANTS.iter().map(|s| s.to_string()));
        let check = |name: &str, e: &Expr| -> Result<()> {
            for (id, col) in e.identifier_columns() {
                if !known(&id) {
                    return Err(Error::recipe(
                        origin,
                        format!(
                            "formula '{name}' uses unknown name '{id}' at column {col}: `{}`",
                            e.source()
                        ),
                        "define it as an event under [events], a formula under [formulas], or fix the spelling",
                    ));
                }
            }
            for c in e.constants() {
                if !consts.contains(&c) && !consts.contains(&c.to_ascii_lowercase()) {
                    return Err(Error::recipe(
                        origin,
                        format!(
                            "formula '{name}' uses unknown constant '#{c}': `{}`",
                            e.source()
                        ),
                        "define it under [constants]",
                    ));
                }
            }
            Ok(())
        };
        for (k, e) in formulas.iter().chain(derived.iter()) {
            check(k, e)?;
        }
        for (k, e) in &metrics {
            if !formulas.contains_key(k) && !r.recipe.cannot_measure.contains_key(k) {
                check(k, e)?;
            }
        }
        let c = Compiled {
            recipe: r.clone(),
            variant,
            formulas,
            derived,
            metrics,
        };
        if let Some(path) = c.find_cycle() {
            return Err(Error::recipe(
                origin,
                format!(
                    "formulas refer to each other in a cycle: {}",
                    path.join(" -> ")
                ),
                "break the cycle: one of these must be computed from events",
            ));
        }
        Ok(c)
    }
}

impl Compiled {
    /// The expression that defines `name` (recipe formula, then generic metric formula, then
    /// derived event), unless the recipe cannot measure it.
    pub fn definition(&self, name: &str) -> Option<&Expr> {
        if self.recipe.recipe.cannot_measure.contains_key(name) {
            return None;
        }
        self.formulas
            .get(name)
            .or_else(|| self.metrics.get(name))
            .or_else(|| self.derived.get(name))
    }

    /// A cycle among formulas, if any (as a path whose first name is repeated at the end).
    pub fn find_cycle(&self) -> Option<Vec<String>> {
        fn visit(
            c: &Compiled,
            n: &str,
            stack: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(i) = stack.iter().position(|s| s == n) {
                let mut p = stack[i..].to_vec();
                p.push(n.to_string());
                return Some(p);
            }
            if done.contains(n) {
                return None;
            }
            let e = c.definition(n)?;
            stack.push(n.to_string());
            for id in e.identifiers() {
                // A formula naming itself reads the event or input of that name.
                if id == n {
                    continue;
                }
                if let Some(p) = visit(c, &id, stack, done) {
                    return Some(p);
                }
            }
            stack.pop();
            done.insert(n.to_string());
            None
        }
        let mut done = BTreeSet::new();
        let names: Vec<String> = self
            .formulas
            .keys()
            .chain(self.metrics.keys())
            .chain(self.derived.keys())
            .cloned()
            .collect();
        for n in names {
            let mut stack = Vec::new();
            if let Some(p) = visit(self, &n, &mut stack, &mut done) {
                return Some(p);
            }
        }
        None
    }
}
