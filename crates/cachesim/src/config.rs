//! Cache and hierarchy geometry, and its validation.
//!
//! A [`HierarchyConfig`] lists the levels nearest the core first (L1, L2, ...); main memory
//! is implied after the last level. [`HierarchyConfig::validate`] checks every field and
//! returns a [`ConfigError`] naming the field and the fix; [`crate::Hierarchy::new`] calls it.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// Replacement policy of one cache level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Replacement {
    /// True least-recently-used: the victim is the line of the set touched longest ago.
    #[default]
    Lru,
    /// Tree pseudo-LRU: a binary tree of `associativity - 1` bits per set points at the
    /// victim; each access flips the bits on its path to point away from it. Needs a
    /// power-of-two associativity of at most 64.
    TreePlru,
}

/// How the contents of the levels of a hierarchy relate to each other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Inclusion {
    /// A miss fills every level between the one that served it and L1; an eviction from a
    /// level does not touch the levels above it (non-inclusive, non-exclusive).
    #[default]
    NonInclusive,
    /// Like [`Inclusion::NonInclusive`], and a line evicted from a level is also invalidated
    /// in every level above it (back-invalidation), so each level holds a superset of the
    /// levels above it.
    Inclusive,
    /// A line lives in at most one level: a miss fills only L1 (moving the line out of the
    /// level that held it), and a line evicted from a level moves to the next one (victim
    /// caches), clean or dirty.
    Exclusive,
}

/// Geometry and policy of one cache level.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CacheConfig {
    /// Level name, e.g. `"L1d"`, shown in statistics.
    pub name: String,
    /// Capacity in bytes; a multiple of `line_bytes * associativity`.
    pub size_bytes: u64,
    /// Line (block) size in bytes; a power of two, at least 4.
    pub line_bytes: u64,
    /// Ways per set; `size_bytes / line_bytes` makes the level fully associative.
    pub associativity: u32,
    /// Replacement policy.
    #[serde(default)]
    pub replacement: Replacement,
}

impl CacheConfig {
    /// A level with LRU replacement.
    pub fn new(
        name: impl Into<String>,
        size_bytes: u64,
        line_bytes: u64,
        associativity: u32,
    ) -> Self {
        Self {
            name: name.into(),
            size_bytes,
            line_bytes,
            associativity,
            replacement: Replacement::Lru,
        }
    }

    /// The same level with another replacement policy.
    pub fn with_replacement(mut self, replacement: Replacement) -> Self {
        self.replacement = replacement;
        self
    }

    /// Number of sets: `size_bytes / (line_bytes * associativity)` (need not be a power of two).
    pub fn sets(&self) -> u64 {
        let way_bytes = self
            .line_bytes
            .saturating_mul(u64::from(self.associativity));
        self.size_bytes.checked_div(way_bytes).unwrap_or(0)
    }

    /// Checks this level's geometry; `hierarchy` names the hierarchy in the error.
    pub fn validate(&self, hierarchy: &str) -> Result<(), ConfigError> {
        let at = || (hierarchy.to_string(), self.name.clone());
        for (field, value) in [
            ("size_bytes", self.size_bytes),
            ("line_bytes", self.line_bytes),
            ("associativity", u64::from(self.associativity)),
        ] {
            if value == 0 {
                let (hierarchy, level) = at();
                return Err(ConfigError::Zero {
                    hierarchy,
                    level,
                    field,
                });
            }
        }
        if !self.line_bytes.is_power_of_two() || self.line_bytes < 4 {
            let (hierarchy, level) = at();
            return Err(ConfigError::LineBytes {
                hierarchy,
                level,
                line_bytes: self.line_bytes,
            });
        }
        let way_bytes = self.line_bytes.checked_mul(u64::from(self.associativity));
        match way_bytes {
            Some(w) if self.size_bytes.is_multiple_of(w) => {}
            _ => {
                let (hierarchy, level) = at();
                let w = way_bytes.unwrap_or(u64::MAX);
                return Err(ConfigError::SizeNotMultiple {
                    hierarchy,
                    level,
                    size_bytes: self.size_bytes,
                    line_bytes: self.line_bytes,
                    associativity: self.associativity,
                    way_bytes: w,
                    lower: self.size_bytes / w * w,
                    upper: (self.size_bytes / w).saturating_add(1).saturating_mul(w),
                });
            }
        }
        // The simulator keeps a tag per line in one array (and up to two more words per
        // line): its length must be a `usize` (with room for padding), whatever the host's
        // pointer width, and the arrays must fit in memory: 2^28 lines (a 16 GiB cache of
        // 64-byte lines) take about 4 GiB; a larger level would make the allocation abort
        // the process instead of being refused here.
        let lines = self.size_bytes / self.line_bytes;
        let max = (usize::MAX as u64 / 16).min(1 << 28);
        if lines > max {
            let (hierarchy, level) = at();
            return Err(ConfigError::TooLarge {
                hierarchy,
                level,
                size_bytes: self.size_bytes,
                lines,
                max,
            });
        }
        if self.replacement == Replacement::TreePlru
            && (!self.associativity.is_power_of_two() || self.associativity > 64)
        {
            let (hierarchy, level) = at();
            return Err(ConfigError::PlruAssociativity {
                hierarchy,
                level,
                associativity: self.associativity,
            });
        }
        Ok(())
    }
}

/// A cache hierarchy: levels from the core outwards, and how they relate.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HierarchyConfig {
    /// Hierarchy name, e.g. the machine it models.
    pub name: String,
    /// Levels, nearest the core first. Main memory is implied after the last.
    pub levels: Vec<CacheConfig>,
    /// Inclusion policy between the levels.
    #[serde(default)]
    pub inclusion: Inclusion,
}

impl HierarchyConfig {
    /// A non-inclusive hierarchy.
    pub fn new(name: impl Into<String>, levels: Vec<CacheConfig>) -> Self {
        Self {
            name: name.into(),
            levels,
            inclusion: Inclusion::NonInclusive,
        }
    }

    /// The same hierarchy with another inclusion policy.
    pub fn with_inclusion(mut self, inclusion: Inclusion) -> Self {
        self.inclusion = inclusion;
        self
    }

    /// Line size shared by every level (the first level's), or `None` without levels.
    pub fn line_bytes(&self) -> Option<u64> {
        self.levels.first().map(|l| l.line_bytes)
    }

    /// Checks every level and that all levels share one line size.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let Some(first) = self.levels.first() else {
            return Err(ConfigError::NoLevels {
                hierarchy: self.name.clone(),
            });
        };
        for level in &self.levels {
            level.validate(&self.name)?;
            if level.line_bytes != first.line_bytes {
                return Err(ConfigError::MixedLineSizes {
                    hierarchy: self.name.clone(),
                    level: level.name.clone(),
                    line_bytes: level.line_bytes,
                    first_level: first.name.clone(),
                    first_line_bytes: first.line_bytes,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spr() -> HierarchyConfig {
        HierarchyConfig::new(
            "spr",
            vec![
                CacheConfig::new("L1d", 48 << 10, 64, 12),
                CacheConfig::new("L2", 2 << 20, 64, 16),
                CacheConfig::new("L3", 105 << 20, 64, 15),
            ],
        )
    }

    #[test]
    fn sapphire_rapids_geometry_is_valid() {
        let h = spr();
        h.validate().expect("valid");
        assert_eq!(h.levels[0].sets(), 64);
        assert_eq!(h.levels[1].sets(), 2048);
        assert_eq!(h.levels[2].sets(), 114_688);
    }

    #[test]
    fn errors_name_the_field() {
        let mut h = spr();
        h.levels[1].line_bytes = 0;
        let e = h.validate().unwrap_err();
        assert!(
            matches!(
                e,
                ConfigError::Zero {
                    field: "line_bytes",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("line_bytes"));

        let mut h = spr();
        h.levels[0].line_bytes = 48;
        let e = h.validate().unwrap_err();
        assert!(matches!(e, ConfigError::LineBytes { .. }), "{e}");
        assert!(e.to_string().contains("power of two"));

        let mut h = spr();
        h.levels[0].size_bytes = 50_000;
        let e = h.validate().unwrap_err();
        assert!(e.to_string().contains("use 49920 or 50688"), "{e}");

        let mut h = spr();
        h.levels[0].replacement = Replacement::TreePlru;
        let e = h.validate().unwrap_err();
        assert!(
            matches!(
                e,
                ConfigError::PlruAssociativity {
                    associativity: 12,
                    ..
                }
            ),
            "{e}"
        );

        let mut h = spr();
        h.levels[2].line_bytes = 128;
        h.levels[2].size_bytes = 128 * 15 * 1024;
        let e = h.validate().unwrap_err();
        assert!(matches!(e, ConfigError::MixedLineSizes { .. }), "{e}");

        let h = HierarchyConfig::new("none", vec![]);
        assert!(matches!(h.validate(), Err(ConfigError::NoLevels { .. })));
    }

    #[test]
    fn config_round_trips_through_json() {
        let h = spr().with_inclusion(Inclusion::Inclusive);
        let s = serde_json::to_string(&h).expect("serialize");
        assert!(s.contains("\"inclusive\""));
        let back: HierarchyConfig = serde_json::from_str(&s).expect("deserialize");
        assert_eq!(back, h);
    }
}
