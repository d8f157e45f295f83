//! Several hierarchies fed from one access stream (e.g. the source machine and every target).

use crate::config::HierarchyConfig;
use crate::error::ConfigError;
use crate::hierarchy::{Hierarchy, batch_totals};
use crate::stats::HierarchyStats;
use crate::{Access, IntoAccess};

/// Several independent hierarchies that see the same accesses in the same order.
///
/// Batches are simulated hierarchy by hierarchy (each hierarchy runs through the whole
/// batch before the next), which keeps one hierarchy's state hot in the host's caches.
///
/// ```
/// use hpcscope_cachesim::{Access, CacheConfig, HierarchyConfig, MultiSim};
///
/// let small = HierarchyConfig::new("small", vec![CacheConfig::new("L1", 4096, 64, 4)]);
/// let big = HierarchyConfig::new("big", vec![CacheConfig::new("L1", 65536, 64, 8)]);
/// let mut sim = MultiSim::new([small, big])?;
/// let stream: Vec<Access> = (0..2).flat_map(|_| (0..1024u64).map(|i| Access::read(i * 8, 8))).collect();
/// sim.access_batch(&stream);
/// let stats = sim.stats();
/// assert!(stats[1].levels[0].hits > stats[0].levels[0].hits); // 8 KiB fits only in `big`
/// # Ok::<(), hpcscope_cachesim::ConfigError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct MultiSim {
    hierarchies: Vec<Hierarchy>,
}

impl MultiSim {
    /// Validates and builds every hierarchy; the first invalid one is the error.
    pub fn new(configs: impl IntoIterator<Item = HierarchyConfig>) -> Result<Self, ConfigError> {
        let hierarchies = configs
            .into_iter()
            .map(Hierarchy::new)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { hierarchies })
    }

    /// Wraps already built hierarchies.
    pub fn from_hierarchies(hierarchies: Vec<Hierarchy>) -> Self {
        Self { hierarchies }
    }

    /// Adds a hierarchy (cold) to the set.
    pub fn push(&mut self, cfg: HierarchyConfig) -> Result<(), ConfigError> {
        self.hierarchies.push(Hierarchy::new(cfg)?);
        Ok(())
    }

    /// Takes the hierarchies out, in the order given (e.g. to simulate them on several
    /// threads; [`MultiSim::from_hierarchies`] puts a group back together).
    pub fn into_hierarchies(self) -> Vec<Hierarchy> {
        self.hierarchies
    }

    /// The hierarchies, in the order given.
    pub fn hierarchies(&self) -> &[Hierarchy] {
        &self.hierarchies
    }

    /// Number of hierarchies.
    pub fn len(&self) -> usize {
        self.hierarchies.len()
    }

    /// Whether there is no hierarchy.
    pub fn is_empty(&self) -> bool {
        self.hierarchies.is_empty()
    }

    /// Simulates one access in every hierarchy (prefer [`MultiSim::access_batch`]).
    #[inline]
    pub fn access(&mut self, a: Access) {
        for h in &mut self.hierarchies {
            h.access(a);
        }
    }

    /// Simulates a batch ([`Access`] or [`crate::PackedAccess`] items) in every hierarchy.
    pub fn access_batch<A: IntoAccess>(&mut self, batch: &[A]) {
        // The batch's totals, counted once for every hierarchy.
        let (n, bytes) = batch_totals(batch);
        for h in &mut self.hierarchies {
            h.access_batch_with_totals(batch, n, bytes);
        }
    }

    /// Counters of every hierarchy, in order.
    pub fn stats(&self) -> Vec<HierarchyStats> {
        self.hierarchies.iter().map(Hierarchy::stats).collect()
    }

    /// Returns every hierarchy's counters and zeroes them (contents stay warm).
    pub fn flush_stats(&mut self) -> Vec<HierarchyStats> {
        self.hierarchies
            .iter_mut()
            .map(Hierarchy::flush_stats)
            .collect()
    }

    /// Zeroes every hierarchy's counters (contents stay warm).
    pub fn reset_stats(&mut self) {
        self.hierarchies.iter_mut().for_each(Hierarchy::reset_stats);
    }

    /// Empties every hierarchy and zeroes the counters.
    pub fn reset(&mut self) {
        self.hierarchies.iter_mut().for_each(Hierarchy::reset);
    }
}
