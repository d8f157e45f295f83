//! A node: the threads of a program on cores with private caches, sharing the caches that
//! the machine's cores share.
//!
//! Each level of a [`NodeConfig`] says how many cores share one instance of it
//! (`shared_by_cores`: 1 for a private L1 or L2, 12 for an A64FX CMG's L2, 64 for a
//! Graviton's L3); core `c` uses instance `c / shared_by_cores` of each level. Threads are
//! placed on cores by a [`Placement`]. The accesses of each thread go through the levels
//! of its core, in the order given: the simulator holds one [`Hierarchy`] whose levels are
//! those of the core whose thread is running, and when another thread's accesses arrive it
//! swaps in that core's instances (and their L1 memo) of every level that differs. So one
//! thread's accesses follow exactly the single-hierarchy model, misses of its private
//! levels go to the instance of the shared level its core shares with the others, and a
//! single thread gives exactly what [`Hierarchy`] gives for the same levels.
//!
//! With the inclusive policy, a line a shared level evicts is also invalidated in the
//! caches above it of every core sharing it (a dirty copy makes one write-back, as in one
//! hierarchy). There is no coherence between private caches: a line written by two
//! threads stays in both cores' caches (false sharing and invalidation traffic are not
//! modelled).
//!
//! Counters are kept per thread: each thread's [`HierarchyStats`] counts the accesses of
//! that thread, the levels that served them (its core's private levels, the shared
//! instances), and the write-backs and fills its accesses caused.
//!
//! A non-inclusive node can be simulated in parts cut below private levels
//! ([`NodeSim::part`]): the first part is fed the accesses and passes on what leaves its
//! last level, batch by batch, to the part below ([`NodeSim::replay`], same thread), and
//! [`join_parts`] / [`join_thread_parts`] put the counters together, equal to the whole
//! node's. [`crate::SharedNodes`] uses it to simulate first levels that several nodes have
//! in common once.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::IntoAccess;
use crate::config::{CacheConfig, HierarchyConfig, Inclusion};
use crate::error::ConfigError;
use crate::hierarchy::{Hierarchy, L1State, LineEvent, build_level};
use crate::level::Level;
use crate::stats::{HierarchyStats, LevelStats};

/// One level of a node: its geometry and how many cores share one instance.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodeLevel {
    /// Geometry and replacement of one instance.
    pub cache: CacheConfig,
    /// Cores sharing one instance (1: private to a core).
    pub shared_by_cores: u32,
}

/// The caches of a node: levels from the core outwards, the cores, and the inclusion
/// policy between levels.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodeConfig {
    /// Name (the machine it models).
    pub name: String,
    /// Levels, nearest the core first; `shared_by_cores` never decreases outwards, and each
    /// divides the next (groups of cores nest).
    pub levels: Vec<NodeLevel>,
    /// Cores of the node. Threads placed beyond them run on more cores of the same kind
    /// (private levels of their own, shared levels grouped as the others).
    pub cores: u32,
    /// Inclusion policy between the levels.
    #[serde(default)]
    pub inclusion: Inclusion,
}

impl NodeConfig {
    /// The levels as one core sees them.
    pub fn hierarchy(&self) -> HierarchyConfig {
        HierarchyConfig::new(
            self.name.clone(),
            self.levels.iter().map(|l| l.cache.clone()).collect(),
        )
        .with_inclusion(self.inclusion)
    }

    /// Checks the geometry of every level and that the sharing nests.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.hierarchy().validate()?;
        let mut prev = 1u32;
        for l in &self.levels {
            let s = l.shared_by_cores;
            if s == 0 || s < prev || s % prev != 0 {
                return Err(ConfigError::Sharing {
                    hierarchy: self.name.clone(),
                    level: l.cache.name.clone(),
                    shared_by_cores: s,
                    previous: prev,
                });
            }
            prev = s;
        }
        Ok(())
    }

    /// Cores sharing one instance of the outermost shared level (1 when every level is
    /// private).
    pub fn widest_sharing(&self) -> u32 {
        self.levels
            .iter()
            .map(|l| l.shared_by_cores)
            .max()
            .unwrap_or(1)
    }
}

/// How threads are placed on cores (thread numbers in start order, 0 the main thread).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Thread `t` on core `t` (`OMP_PROC_BIND=close` from core 0, `OMP_PLACES=cores`):
    /// threads fill the first group of cores sharing a cache before the next.
    #[default]
    Compact,
    /// Threads spread round-robin over the groups of cores that share the outermost
    /// shared level (`OMP_PROC_BIND=spread`): thread `t` goes to group `t mod G`.
    Scatter,
    /// Thread `t` on core `list[t]`; threads beyond the list on the cores after the
    /// largest listed one, in order.
    List(Vec<u32>),
}

impl Placement {
    /// Parses `compact`, `scatter` or a comma-separated list of core numbers.
    pub fn parse(s: &str) -> Result<Placement, String> {
        match s.trim() {
            "compact" | "close" => Ok(Placement::Compact),
            "scatter" | "spread" => Ok(Placement::Scatter),
            list => {
                let cores = list
                    .split(',')
                    .map(|c| c.trim().parse::<u32>())
                    .collect::<Result<Vec<u32>, _>>()
                    .map_err(|_| {
                        format!(
                            "'{s}' is not a placement: give compact, scatter or a list of core numbers (0,12,24,36)"
                        )
                    })?;
                if cores.is_empty() {
                    return Err("the placement list is empty".into());
                }
                for (i, c) in cores.iter().enumerate() {
                    if cores[..i].contains(c) {
                        return Err(format!(
                            "core {c} appears twice in the placement: give each thread a core of its own"
                        ));
                    }
                }
                Ok(Placement::List(cores))
            }
        }
    }

    /// The core of thread `thread` on a node of `cores` cores whose outermost shared level
    /// is shared by `widest` cores.
    pub fn core_of(&self, thread: u32, cores: u32, widest: u32) -> u32 {
        match self {
            Placement::Compact => thread,
            Placement::Scatter => {
                let widest = widest.max(1);
                let groups = cores.div_ceil(widest).max(1);
                if thread >= groups * widest {
                    return thread;
                }
                (thread % groups) * widest + thread / groups
            }
            Placement::List(list) => match list.get(thread as usize) {
                Some(&c) => c,
                None => {
                    let max = list.iter().copied().max().unwrap_or(0);
                    max + 1 + (thread - list.len() as u32)
                }
            },
        }
    }

    /// A short label (`compact`, `scatter`, `0,12,24`).
    pub fn label(&self) -> String {
        match self {
            Placement::Compact => "compact".into(),
            Placement::Scatter => "scatter".into(),
            Placement::List(l) => l
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

/// The counters of one thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ThreadStats {
    /// Thread number (start order).
    pub thread: u32,
    /// The core it was placed on.
    pub core: u32,
    /// Its accesses and what served them.
    pub stats: HierarchyStats,
}

/// A node's caches fed with the accesses of several threads.
///
/// ```
/// use hpcscope_cachesim::{Access, CacheConfig, Inclusion, NodeConfig, NodeLevel, NodeSim, Placement};
///
/// // Two cores, a private 4 KiB L1 each and a shared 16 KiB L2.
/// let cfg = NodeConfig {
///     name: "toy".into(),
///     levels: vec![
///         NodeLevel { cache: CacheConfig::new("L1", 4096, 64, 4), shared_by_cores: 1 },
///         NodeLevel { cache: CacheConfig::new("L2", 16384, 64, 4), shared_by_cores: 2 },
///     ],
///     cores: 2,
///     inclusion: Inclusion::NonInclusive,
/// };
/// let mut node = NodeSim::new(cfg, Placement::Compact)?;
/// let lines: Vec<Access> = (0..64u64).map(|i| Access::read(i * 64, 8)).collect();
/// node.access_batch(0, &lines); // thread 0 brings 4 KiB into its L1 and the L2
/// node.access_batch(1, &lines); // thread 1 finds them in the shared L2
/// let t = node.thread_stats();
/// assert_eq!(t[0].stats.memory.hits, 64);
/// assert_eq!(t[1].stats.levels[1].hits, 64);
/// # Ok::<(), hpcscope_cachesim::ConfigError>(())
/// ```
#[derive(Debug)]
pub struct NodeSim {
    cfg: NodeConfig,
    placement: Placement,
    /// Cores sharing the outermost shared level of the whole node (a part's own levels may
    /// not include it), for [`Placement::core_of`].
    widest: u32,
    sharing: Vec<u32>,
    /// The levels of the running thread's core.
    active: Hierarchy,
    /// Per level, the instance `active` holds (`u32::MAX` before the first access).
    active_instance: Vec<u32>,
    /// Per level, the instances not in `active`, by instance number.
    stash: Vec<HashMap<u32, Level>>,
    /// The L1 memo and filter of each level-0 instance not in `active`.
    l1_stash: HashMap<u32, L1State>,
    /// Thread whose accesses `active` counted since `snapshot`.
    current: Option<u32>,
    snapshot: HierarchyStats,
    /// Per thread (by number), its core and accumulated counters.
    // By thread id: ids come from the record stream, sparse in a damaged one (a map, so that
    // a forged id of 4 billion costs one entry, not a vector of that length).
    threads: std::collections::BTreeMap<u32, ThreadStats>,
}

impl NodeSim {
    /// Validates `cfg` and builds a cold node.
    pub fn new(cfg: NodeConfig, placement: Placement) -> Result<Self, ConfigError> {
        let n = cfg.levels.len();
        Self::part(&cfg, 0..n, placement)
    }

    /// Levels `levels` of node `cfg` alone, to be simulated apart from the others: the
    /// first part (from L1) is fed program accesses ([`NodeSim::access_batch`]), a part
    /// below it is fed what leaves the part above ([`NodeSim::take_outflow`],
    /// [`NodeSim::replay`]). Threads land on the cores the whole node puts them on, and
    /// each part counts exactly what its levels count in the whole node (for each thread;
    /// [`join_parts`] puts the counters back together).
    ///
    /// Exact, and so accepted, only where a level's state depends on nothing but what
    /// arrives from above: the non-inclusive policy, and every level above the cut private
    /// to a core (`shared_by_cores = 1`). Whole nodes (`0..n`) are always accepted.
    pub fn part(
        cfg: &NodeConfig,
        levels: std::ops::Range<usize>,
        placement: Placement,
    ) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let n = cfg.levels.len();
        let err = |reason| ConfigError::Split {
            hierarchy: cfg.name.clone(),
            from: levels.start,
            to: levels.end,
            reason,
        };
        if levels.start >= levels.end || levels.end > n {
            return Err(err("the part has no level of the node"));
        }
        let whole = levels.start == 0 && levels.end == n;
        if !whole {
            if cfg.inclusion != Inclusion::NonInclusive {
                return Err(err("only non-inclusive levels can be simulated in parts"));
            }
            let cut = if levels.end < n {
                levels.end
            } else {
                levels.start
            };
            if cfg.levels[..cut].iter().any(|l| l.shared_by_cores != 1) {
                return Err(err(
                    "a level above the cut is shared by several cores (only private levels can be simulated apart)",
                ));
            }
        }
        let widest = cfg.widest_sharing();
        let start = levels.start;
        let cfg = NodeConfig {
            levels: cfg.levels[levels].to_vec(),
            ..cfg.clone()
        };
        let mut active = if start > 0 {
            Hierarchy::new_tail(cfg.hierarchy())?
        } else {
            Hierarchy::new(cfg.hierarchy())?
        };
        if cfg.levels.iter().any(|l| l.shared_by_cores > 1) {
            active.log_evictions();
        }
        let n = cfg.levels.len();
        Ok(Self {
            widest,
            sharing: cfg.levels.iter().map(|l| l.shared_by_cores).collect(),
            snapshot: active.stats(),
            active,
            active_instance: vec![u32::MAX; n],
            stash: (0..n).map(|_| HashMap::new()).collect(),
            l1_stash: HashMap::new(),
            current: None,
            threads: std::collections::BTreeMap::new(),
            placement,
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &NodeConfig {
        &self.cfg
    }

    /// The placement.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The core thread `thread` runs on.
    pub fn core_of(&self, thread: u32) -> u32 {
        self.placement.core_of(thread, self.cfg.cores, self.widest)
    }

    /// Records from now on what leaves this node's (or part's) last level, for a part
    /// below it ([`NodeSim::take_outflow`]). Only non-inclusive nodes whose levels are all
    /// private to a core (see [`NodeSim::part`]).
    pub fn capture_outflow(&mut self) -> Result<(), ConfigError> {
        if self.cfg.inclusion != Inclusion::NonInclusive || self.widest_here() != 1 {
            return Err(ConfigError::Split {
                hierarchy: self.cfg.name.clone(),
                from: 0,
                to: self.sharing.len(),
                reason: "only non-inclusive levels private to a core can pass on what leaves them",
            });
        }
        self.active.capture_outflow();
        Ok(())
    }

    /// Whether this is a first part (or a whole node), fed program accesses.
    pub fn is_head(&self) -> bool {
        !self.active.is_tail()
    }

    fn widest_here(&self) -> u32 {
        self.sharing.iter().copied().max().unwrap_or(1)
    }

    /// Appends to `into` what left the last level since the last call, in order (the
    /// events of the thread of the last batch: take them after each batch).
    pub fn take_outflow(&mut self, into: &mut Vec<LineEvent>) {
        self.active.take_outflow(into);
    }

    /// Feeds a part below others ([`NodeSim::part`]) what left the part above while it
    /// simulated a batch of thread `thread`'s accesses. The thread counts as having run
    /// here even when nothing reached these levels.
    pub fn replay(&mut self, thread: u32, events: &[LineEvent]) {
        debug_assert!(self.active.is_tail(), "replay into a part fed by accesses");
        self.switch_to(thread);
        self.active.replay(events);
    }

    /// Simulates a batch of thread `thread`'s accesses, in order.
    pub fn access_batch<A: IntoAccess>(&mut self, thread: u32, batch: &[A]) {
        if batch.is_empty() {
            return;
        }
        self.switch_to(thread);
        self.active.access_batch(batch);
        self.back_invalidate();
    }

    /// Makes `thread` the running one: the counters so far go to the previous thread, and
    /// the instances of its core's levels move into the simulated hierarchy.
    fn switch_to(&mut self, thread: u32) {
        if self.current == Some(thread) {
            return;
        }
        self.settle();
        let core = self.core_of(thread);
        for k in 0..self.sharing.len() {
            let want = core / self.sharing[k];
            let have = self.active_instance[k];
            if want == have {
                continue;
            }
            if have == u32::MAX {
                // The hierarchy's own (cold) level becomes this instance.
                self.active_instance[k] = want;
                continue;
            }
            let mut level = self.stash[k]
                .remove(&want)
                .unwrap_or_else(|| build_level(self.active.config(), k, self.active.is_tail()));
            if k == 0 {
                let mut st = self
                    .l1_stash
                    .remove(&want)
                    .unwrap_or_else(|| L1State::cold(&self.active));
                self.active.swap_level(0, &mut level, Some(&mut st));
                self.l1_stash.insert(have, st);
            } else {
                self.active.swap_level(k, &mut level, None);
            }
            self.stash[k].insert(have, level);
            self.active_instance[k] = want;
        }
        // The counters of a level leave with it: count from what came in.
        self.snapshot = self.active.stats();
        if !self.threads.contains_key(&thread) {
            let mut stats = self.snapshot.since(&self.snapshot);
            stats.name = self.cfg.name.clone();
            self.threads.insert(
                thread,
                ThreadStats {
                    thread,
                    core,
                    stats,
                },
            );
        }
        self.current = Some(thread);
    }

    /// Adds the counters since the last snapshot to the running thread.
    fn settle(&mut self) {
        let Some(t) = self.current else { return };
        let delta = self.active.stats().since(&self.snapshot);
        if let Some(ts) = self.threads.get_mut(&t) {
            add(&mut ts.stats, &delta);
        }
    }

    /// Invalidates the lines that the inclusive policy evicted from a shared level in the
    /// caches of the other cores that share it.
    fn back_invalidate(&mut self) {
        let log = self.active.take_evictions();
        for (j, line, dirty) in log {
            let s_j = self.sharing[j];
            if s_j <= 1 {
                continue; // a private level: its cores' caches are all in `active`
            }
            let group = self.active_instance[j];
            let mut found_dirty = false;
            for k in 0..j {
                let s_k = self.sharing[k];
                for (&iid, level) in self.stash[k].iter_mut() {
                    // The cores of instance `iid` of level k share one instance of level j.
                    if iid * s_k / s_j != group {
                        continue;
                    }
                    if let Some(d) = level.invalidate(line) {
                        found_dirty |= d;
                        if k == 0
                            && let Some(st) = self.l1_stash.get_mut(&iid)
                        {
                            st.dropped(line);
                        }
                    }
                }
            }
            if found_dirty && !dirty {
                self.active.write_back_from(j, line);
            }
        }
    }

    /// Counters of every thread that made an access, by thread number.
    pub fn thread_stats(&self) -> Vec<ThreadStats> {
        let mut out: Vec<ThreadStats> = self.threads.values().cloned().collect();
        if let Some(t) = self.current {
            let delta = self.active.stats().since(&self.snapshot);
            if let Some(ts) = out.iter_mut().find(|x| x.thread == t) {
                add(&mut ts.stats, &delta);
            }
        }
        out
    }

    /// Counters of the whole node: the sum over threads.
    pub fn stats(&self) -> HierarchyStats {
        let mut total = self.snapshot.since(&self.snapshot);
        total.name = self.cfg.name.clone();
        for t in self.thread_stats() {
            add(&mut total, &t.stats);
        }
        total
    }

    /// Instances of each level in use (cores or groups of cores that ran a thread).
    pub fn instances(&self) -> Vec<usize> {
        (0..self.sharing.len())
            .map(|k| self.stash[k].len() + usize::from(self.active_instance[k] != u32::MAX))
            .collect()
    }

    /// Whether the instance of level `level` used by core `core` holds the line of `addr`.
    pub fn contains(&self, core: u32, level: usize, addr: u64) -> bool {
        let Some(&s) = self.sharing.get(level) else {
            return false;
        };
        let iid = core / s;
        if self.active_instance[level] == iid {
            return self.active.contains(level, addr);
        }
        let line = self.active.line_of(addr);
        self.stash[level]
            .get(&iid)
            .is_some_and(|l| l.contains(line))
    }
}

/// The counters of node `cfg` from those of its parts ([`NodeSim::part`]), nearest the
/// core first: each part's levels in turn (under `cfg`'s level names), memory from the last
/// part, program accesses and splits from the first. `None` when the parts' levels do not
/// add up to `cfg`'s.
pub fn join_parts(cfg: &NodeConfig, parts: &[HierarchyStats]) -> Option<HierarchyStats> {
    let first = parts.first()?;
    let levels: Vec<LevelStats> = parts
        .iter()
        .flat_map(|p| p.levels.iter().cloned())
        .collect();
    if levels.len() != cfg.levels.len() {
        return None;
    }
    let levels: Vec<LevelStats> = levels
        .into_iter()
        .zip(&cfg.levels)
        .map(|(mut l, c)| {
            l.name.clone_from(&c.cache.name);
            l
        })
        .collect();
    let memory = parts.last()?.memory.clone();
    let bytes = levels.iter().map(|l| l.bytes_served).sum::<u64>() + memory.bytes_served;
    Some(HierarchyStats {
        name: cfg.name.clone(),
        line_bytes: first.line_bytes,
        accesses: first.accesses,
        split_accesses: first.split_accesses,
        bytes,
        levels,
        memory,
    })
}

/// [`join_parts`] per thread: the threads of the first part (every thread that made an
/// access), each with its counters in every part (zero in a part it did not reach).
pub fn join_thread_parts(cfg: &NodeConfig, parts: &[Vec<ThreadStats>]) -> Option<Vec<ThreadStats>> {
    let first = parts.first()?;
    first
        .iter()
        .map(|t| {
            let stats: Vec<HierarchyStats> = parts
                .iter()
                .map(|p| match p.iter().find(|x| x.thread == t.thread) {
                    Some(x) => x.stats.clone(),
                    None => HierarchyStats {
                        levels: p
                            .first()
                            .map(|x| {
                                x.stats
                                    .levels
                                    .iter()
                                    .map(|l| LevelStats::named(&l.name))
                                    .collect()
                            })
                            .unwrap_or_default(),
                        memory: LevelStats::named("MM"),
                        ..HierarchyStats::default()
                    },
                })
                .collect();
            Some(ThreadStats {
                thread: t.thread,
                core: t.core,
                stats: join_parts(cfg, &stats)?,
            })
        })
        .collect()
}

/// Adds the counters of `b` to `a` (same levels).
fn add(a: &mut HierarchyStats, b: &HierarchyStats) {
    a.accesses += b.accesses;
    a.split_accesses += b.split_accesses;
    a.bytes += b.bytes;
    if a.levels.is_empty() {
        a.levels = b
            .levels
            .iter()
            .map(|l| LevelStats::named(&l.name))
            .collect();
    }
    for (x, y) in a
        .levels
        .iter_mut()
        .chain(std::iter::once(&mut a.memory))
        .zip(b.levels.iter().chain(std::iter::once(&b.memory)))
    {
        x.accesses += y.accesses;
        x.hits += y.hits;
        x.misses += y.misses;
        x.bytes_served += y.bytes_served;
        x.fills += y.fills;
        x.writebacks += y.writebacks;
        x.evictions += y.evictions;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements() {
        // 48 cores in groups of 12 (A64FX CMGs).
        let c = |p: &Placement, t| p.core_of(t, 48, 12);
        assert_eq!(
            (0..4)
                .map(|t| c(&Placement::Compact, t))
                .collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert_eq!(
            (0..6)
                .map(|t| c(&Placement::Scatter, t))
                .collect::<Vec<_>>(),
            [0, 12, 24, 36, 1, 13]
        );
        assert_eq!(c(&Placement::Scatter, 47), 47);
        assert_eq!(c(&Placement::Scatter, 50), 50);
        let l = Placement::parse("5, 7").unwrap();
        assert_eq!((0..4).map(|t| c(&l, t)).collect::<Vec<_>>(), [5, 7, 8, 9]);
        assert!(Placement::parse("1,1").is_err());
        assert!(Placement::parse("here").is_err());
        assert_eq!(Placement::parse("spread").unwrap(), Placement::Scatter);
        // A node whose levels are all private: scatter is compact.
        assert_eq!(Placement::Scatter.core_of(3, 8, 1), 3);
    }

    #[test]
    fn sharing_must_nest() {
        let lv = |s| NodeLevel {
            cache: CacheConfig::new("L", 4096, 64, 4),
            shared_by_cores: s,
        };
        let mut cfg = NodeConfig {
            name: "n".into(),
            levels: vec![lv(1), lv(4)],
            cores: 8,
            inclusion: Inclusion::NonInclusive,
        };
        cfg.validate().unwrap();
        cfg.levels = vec![lv(4), lv(2)];
        assert!(matches!(cfg.validate(), Err(ConfigError::Sharing { .. })));
        cfg.levels = vec![lv(2), lv(3)];
        assert!(matches!(cfg.validate(), Err(ConfigError::Sharing { .. })));
        cfg.levels = vec![lv(0)];
        assert!(matches!(cfg.validate(), Err(ConfigError::Sharing { .. })));
    }
}
