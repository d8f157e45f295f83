//! Several nodes fed one stream, their common first levels simulated once.
//!
//! Nodes whose first levels are the same (geometry and replacement; the names may differ),
//! private to a core, under the non-inclusive policy, with threads placed on the same
//! cores, see the same events in those levels: a level's state depends only on what
//! arrives from above it. [`SharedNodes`] arranges the nodes' levels in a trie of such
//! prefixes: each part of the trie ([`NodeSim::part`]) is simulated once, and what leaves
//! its last level ([`LineEvent`]s: demand lookups of the lines it missed, with their bytes,
//! and dirty victims, in the order the whole node's next level receives them) is replayed
//! into each part below it. A node's counters are its parts' put together
//! ([`join_parts`]): every counter, per thread too, is what a [`NodeSim`] of the node alone
//! counts. A node that shares nothing is simulated whole, as a [`NodeSim`].
//!
//! Not shared (each such node keeps its own simulation of those levels): inclusive and
//! exclusive nodes (a level below evicts from those above), levels shared by several cores
//! and every level below one (the instance a thread sees depends on the other cores'
//! threads), and, with the scatter placement, nodes whose cores or outermost sharing differ
//! (threads would land on other cores).

use crate::IntoAccess;
use crate::config::{CacheConfig, Inclusion};
use crate::error::ConfigError;
use crate::hierarchy::LineEvent;
use crate::node::{NodeConfig, NodeSim, Placement, ThreadStats, join_parts, join_thread_parts};
use crate::stats::HierarchyStats;

/// One part of the trie: some levels of the nodes that share them.
#[derive(Debug)]
struct Part {
    sim: NodeSim,
    /// Parts fed what leaves this one (later in [`SharedNodes::parts`]).
    children: Vec<usize>,
    /// Levels simulated here.
    levels: usize,
}

/// Nodes fed one stream of program accesses, the first levels they have in common
/// simulated once (see the module documentation).
///
/// ```
/// use hpcscope_cachesim::{Access, CacheConfig, Inclusion, NodeConfig, NodeLevel, NodeSim, Placement, SharedNodes};
///
/// let node = |name: &str, l2: u64| NodeConfig {
///     name: name.into(),
///     levels: vec![
///         NodeLevel { cache: CacheConfig::new("L1", 4096, 64, 4), shared_by_cores: 1 },
///         NodeLevel { cache: CacheConfig::new("L2", l2, 64, 8), shared_by_cores: 1 },
///     ],
///     cores: 4,
///     inclusion: Inclusion::NonInclusive,
/// };
/// let nodes = [node("a", 16384), node("b", 65536)];
/// let mut shared = SharedNodes::new(&nodes, &Placement::Compact)?;
/// assert_eq!(shared.level_simulations(), 3); // one L1 for both
/// let mut alone = NodeSim::new(nodes[1].clone(), Placement::Compact)?;
/// let lines: Vec<Access> = (0..4096u64).map(|i| Access::write(i * 24 % 40000, 8)).collect();
/// shared.access_batch(0, &lines);
/// alone.access_batch(0, &lines);
/// assert_eq!(shared.stats(1), alone.stats());
/// # Ok::<(), hpcscope_cachesim::ConfigError>(())
/// ```
#[derive(Debug)]
pub struct SharedNodes {
    nodes: Vec<NodeConfig>,
    /// Parents before their children.
    parts: Vec<Part>,
    /// Per node, its parts from L1 outwards.
    paths: Vec<Vec<usize>>,
    buf: Vec<LineEvent>,
}

/// What makes two nodes' first levels interchangeable: geometry and replacement (not the
/// names) of each level, all private, non-inclusive, threads on the same cores.
fn shareable_levels(n: &NodeConfig) -> usize {
    if n.inclusion != Inclusion::NonInclusive {
        return 0;
    }
    n.levels
        .iter()
        .take_while(|l| l.shared_by_cores == 1)
        .count()
}

fn same_geometry(a: &CacheConfig, b: &CacheConfig) -> bool {
    a.size_bytes == b.size_bytes
        && a.line_bytes == b.line_bytes
        && a.associativity == b.associativity
        && a.replacement == b.replacement
}

impl SharedNodes {
    /// Arranges `nodes` (each validated) into the trie of their common first levels.
    pub fn new(nodes: &[NodeConfig], placement: &Placement) -> Result<Self, ConfigError> {
        for n in nodes {
            n.validate()?;
        }
        // The cores threads land on: only the scatter placement looks at the node.
        let same_cores = |a: &NodeConfig, b: &NodeConfig| {
            !matches!(placement, Placement::Scatter)
                || (a.cores == b.cores && a.widest_sharing() == b.widest_sharing())
        };
        let shareable: Vec<usize> = nodes.iter().map(shareable_levels).collect();
        // The nodes that share levels 0..=d with node m (m alone past its shareable ones).
        let group = |m: usize, d: usize| -> Vec<usize> {
            if d >= shareable[m] {
                return vec![m];
            }
            (0..nodes.len())
                .filter(|&o| {
                    d < shareable[o]
                        && same_cores(&nodes[m], &nodes[o])
                        && (0..=d).all(|j| {
                            same_geometry(&nodes[m].levels[j].cache, &nodes[o].levels[j].cache)
                        })
                })
                .collect()
        };
        let mut parts: Vec<Part> = Vec::new();
        // (first level, nodes sharing it) of each part, by index.
        let mut keys: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut paths = Vec::new();
        for (m, node) in nodes.iter().enumerate() {
            let n = node.levels.len();
            let mut path: Vec<usize> = Vec::new();
            let mut a = 0;
            while a < n {
                let g = group(m, a);
                let mut b = a + 1;
                while b < n && group(m, b) == g {
                    b += 1;
                }
                let key = (a, g);
                let id = match keys.iter().position(|k| *k == key) {
                    Some(id) => id,
                    None => {
                        let mut sim = NodeSim::part(node, a..b, placement.clone())?;
                        if b < n {
                            sim.capture_outflow()?;
                        }
                        parts.push(Part {
                            sim,
                            children: Vec::new(),
                            levels: b - a,
                        });
                        keys.push(key);
                        if let Some(&parent) = path.last() {
                            let child = parts.len() - 1;
                            parts[parent].children.push(child);
                        }
                        parts.len() - 1
                    }
                };
                if b < n {
                    // A part may end one node (made without capture) and go on in another.
                    parts[id].sim.capture_outflow()?;
                }
                path.push(id);
                a = b;
            }
            paths.push(path);
        }
        Ok(Self {
            nodes: nodes.to_vec(),
            parts,
            paths,
            buf: Vec::new(),
        })
    }

    /// Whether some levels are simulated once for several nodes.
    pub fn shares(&self) -> bool {
        self.level_simulations() < self.nodes.iter().map(|n| n.levels.len()).sum()
    }

    /// Levels simulated (per core or group of cores), over all nodes.
    pub fn level_simulations(&self) -> usize {
        self.parts.iter().map(|p| p.levels).sum()
    }

    /// The part that simulates node `i`'s L1: nodes with the same one share some levels.
    pub fn root_of(&self, i: usize) -> usize {
        self.paths[i][0]
    }

    /// The nodes, in the order given.
    pub fn nodes(&self) -> &[NodeConfig] {
        &self.nodes
    }

    /// Simulates a batch of thread `thread`'s accesses, in order, on every node.
    pub fn access_batch<A: IntoAccess>(&mut self, thread: u32, batch: &[A]) {
        if batch.is_empty() {
            return;
        }
        let mut buf = std::mem::take(&mut self.buf);
        for i in 0..self.parts.len() {
            let (done, rest) = self.parts.split_at_mut(i + 1);
            let part = &mut done[i];
            if part.sim.is_head() {
                part.sim.access_batch(thread, batch);
            }
            if part.children.is_empty() {
                continue;
            }
            buf.clear();
            part.sim.take_outflow(&mut buf);
            for &c in &part.children {
                rest[c - i - 1].sim.replay(thread, &buf);
            }
        }
        self.buf = buf;
    }

    /// Counters of node `i` (all threads), as [`NodeSim::stats`] of the node alone.
    pub fn stats(&self, i: usize) -> HierarchyStats {
        let parts: Vec<HierarchyStats> = self.paths[i]
            .iter()
            .map(|&p| self.parts[p].sim.stats())
            .collect();
        join_parts(&self.nodes[i], &parts).expect("a node's parts hold its levels")
    }

    /// Counters of node `i` per thread, as [`NodeSim::thread_stats`] of the node alone.
    pub fn thread_stats(&self, i: usize) -> Vec<ThreadStats> {
        let parts: Vec<Vec<ThreadStats>> = self.paths[i]
            .iter()
            .map(|&p| self.parts[p].sim.thread_stats())
            .collect();
        join_thread_parts(&self.nodes[i], &parts).expect("every part sees every thread")
    }
}
