//! Per-level and per-hierarchy counters, with the ratios a roofline model reads from them.
//!
//! Counting unit: a program access is split at line boundaries into *line accesses*; the
//! level counters (`accesses`, `hits`, `misses`) count line accesses, `bytes_served` counts
//! the program's bytes. A piece of an access is served by the first level that holds its
//! line, and that level gets the piece's bytes. So, for every hierarchy,
//! `sum(levels[i].bytes_served) + memory.bytes_served == bytes` (all bytes loaded or
//! stored), and `sum(levels[i].hits) + memory.hits == levels[0].accesses`.

use serde::{Deserialize, Serialize};

/// Counters of one cache level (or of main memory, named `"MM"`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LevelStats {
    /// Level name (`"MM"` for main memory).
    pub name: String,
    /// Line accesses that reached this level (the misses of the level above; for L1 every
    /// line access of the program).
    pub accesses: u64,
    /// Line accesses this level served.
    pub hits: u64,
    /// Line accesses this level passed on (`accesses - hits`; always 0 for memory).
    pub misses: u64,
    /// Program bytes whose data this level served (instruction granularity).
    pub bytes_served: u64,
    /// Lines installed into this level: demand fills from below, plus write-backs
    /// (non-inclusive) or victims (exclusive) allocated from above. Always 0 for memory.
    pub fills: u64,
    /// Dirty lines this level evicted to the next level. For memory: dirty lines it received.
    pub writebacks: u64,
    /// Valid lines this level evicted (clean or dirty; back-invalidations not included).
    pub evictions: u64,
}

impl LevelStats {
    /// An empty counter set with this name.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// `hits / accesses` of this level alone; 0 when no access reached it.
    pub fn local_hit_ratio(&self) -> f64 {
        ratio(self.hits, self.accesses)
    }

    /// `misses / accesses` of this level alone; 0 when no access reached it.
    pub fn local_miss_ratio(&self) -> f64 {
        ratio(self.misses, self.accesses)
    }

    /// `hits / total_line_accesses`: the share of all line accesses this level served.
    pub fn global_fraction(&self, total_line_accesses: u64) -> f64 {
        ratio(self.hits, total_line_accesses)
    }

    /// `bytes_served / total_bytes`: the share of all program bytes this level served.
    pub fn bytes_fraction(&self, total_bytes: u64) -> f64 {
        ratio(self.bytes_served, total_bytes)
    }

    /// Counters of `self` minus those of an earlier snapshot `before` of the same level.
    pub fn since(&self, before: &LevelStats) -> LevelStats {
        LevelStats {
            name: self.name.clone(),
            accesses: self.accesses.saturating_sub(before.accesses),
            hits: self.hits.saturating_sub(before.hits),
            misses: self.misses.saturating_sub(before.misses),
            bytes_served: self.bytes_served.saturating_sub(before.bytes_served),
            fills: self.fills.saturating_sub(before.fills),
            writebacks: self.writebacks.saturating_sub(before.writebacks),
            evictions: self.evictions.saturating_sub(before.evictions),
        }
    }
}

/// Counters of one hierarchy.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HierarchyStats {
    /// Hierarchy name.
    pub name: String,
    /// Line size of the hierarchy in bytes.
    pub line_bytes: u64,
    /// Program accesses simulated (before splitting at line boundaries).
    pub accesses: u64,
    /// Program accesses that straddled a line boundary and were split.
    pub split_accesses: u64,
    /// Program bytes loaded or stored (sum of access sizes).
    pub bytes: u64,
    /// Per cache level, nearest the core first.
    pub levels: Vec<LevelStats>,
    /// Main memory (`name == "MM"`): `accesses == hits` = line reads from memory.
    pub memory: LevelStats,
}

impl HierarchyStats {
    /// Line accesses of the program (L1 accesses; `accesses` plus the extra pieces of splits).
    pub fn line_accesses(&self) -> u64 {
        self.levels.first().map_or(0, |l| l.accesses)
    }

    /// The level with this name, or `"MM"` for memory.
    pub fn level(&self, name: &str) -> Option<&LevelStats> {
        self.levels
            .iter()
            .chain(std::iter::once(&self.memory))
            .find(|l| l.name == name)
    }

    /// Every level then memory.
    pub fn all_levels(&self) -> impl Iterator<Item = &LevelStats> {
        self.levels.iter().chain(std::iter::once(&self.memory))
    }

    /// Bytes served per level then memory; they sum to [`HierarchyStats::bytes`].
    pub fn bytes_per_level(&self) -> Vec<(String, u64)> {
        self.all_levels()
            .map(|l| (l.name.clone(), l.bytes_served))
            .collect()
    }

    /// Line traffic between the last level and memory, in bytes:
    /// `(memory.accesses + memory.writebacks) * line_bytes`.
    pub fn memory_traffic_bytes(&self) -> u64 {
        (self.memory.accesses + self.memory.writebacks) * self.line_bytes
    }

    /// Counters of `self` minus those of an earlier snapshot `before` of the same hierarchy.
    pub fn since(&self, before: &HierarchyStats) -> HierarchyStats {
        HierarchyStats {
            name: self.name.clone(),
            line_bytes: self.line_bytes,
            accesses: self.accesses.saturating_sub(before.accesses),
            split_accesses: self.split_accesses.saturating_sub(before.split_accesses),
            bytes: self.bytes.saturating_sub(before.bytes),
            levels: self
                .levels
                .iter()
                .zip(&before.levels)
                .map(|(a, b)| a.since(b))
                .collect(),
            memory: self.memory.since(&before.memory),
        }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}
