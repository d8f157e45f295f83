//! Machines as the cache simulator sees them: a machine's node (its cache levels, how many
//! cores share each, its cores) and the distinct simulations a list of nodes needs.

use hpcscope_cachesim::{
    CacheConfig, HierarchyConfig, HierarchyStats, Inclusion, NodeConfig, NodeLevel, Placement,
    ThreadStats,
};
use hpcscope_core::Machine;
use hpcscope_core::machine::LevelKind;

use crate::error::MixError;
use crate::sampling::SamplingReport;

/// The distinct cache simulations a list of nodes needs: nodes with the same levels
/// (geometry, sharing) and inclusion policy, whose threads land on the same cores, see the
/// same stream and count the same, so each such group is simulated once and its counters
/// copied to the others under their own names (the source machine among the targets,
/// Graviton 2 and 3, A64FX and its node in `analyze`). A node's number of cores only places
/// threads with the scatter placement (`Placement::core_of`): with compact or a list of
/// cores, nodes that differ only in their cores share a simulation.
///
/// The distinct nodes then share what they still have in common: first levels of the same
/// geometry and replacement, private to a core, under the non-inclusive policy (Cascade
/// Lake's and ThunderX2's L1; Graviton 2's, EPI-like's and Neoverse N1's L1 and L2) are
/// simulated once, and what leaves them replayed into each node's own levels below
/// (`hpcscope_cachesim::SharedNodes`, with the same counters as separate simulations).
#[derive(Debug, Clone)]
pub struct Distinct {
    /// The nodes to simulate (the first of each group, under its own name).
    pub nodes: Vec<NodeConfig>,
    /// For each node asked, in order: its name and the index of its simulation in `nodes`.
    pub of: Vec<(String, usize)>,
}

impl Distinct {
    /// Groups `nodes` (see [`Distinct`]).
    pub fn new(nodes: &[NodeConfig], placement: &Placement) -> Self {
        let key = |n: &NodeConfig| NodeConfig {
            name: String::new(),
            cores: if matches!(placement, Placement::Scatter) {
                n.cores
            } else {
                0
            },
            ..n.clone()
        };
        let mut distinct: Vec<NodeConfig> = Vec::new();
        let mut keys: Vec<NodeConfig> = Vec::new();
        let mut of = Vec::new();
        for n in nodes {
            let k = key(n);
            let i = match keys.iter().position(|x| *x == k) {
                Some(i) => i,
                None => {
                    keys.push(k);
                    distinct.push(n.clone());
                    keys.len() - 1
                }
            };
            of.push((n.name.clone(), i));
        }
        Self {
            nodes: distinct,
            of,
        }
    }

    /// Cache levels simulated for the distinct nodes on the reading thread, first levels in
    /// common counted once, and the levels of those nodes: `(10, 15)` for analyze's default
    /// machines. `None` when the nodes cannot be simulated together.
    pub fn level_simulations(&self, placement: &Placement) -> Option<(usize, usize)> {
        let all = self.nodes.iter().map(|n| n.levels.len()).sum();
        hpcscope_cachesim::SharedNodes::new(&self.nodes, placement)
            .ok()
            .map(|s| (s.level_simulations(), all))
    }

    /// The counters of every node asked, from those of the distinct simulations.
    pub fn caches(&self, distinct: Vec<HierarchyStats>) -> Vec<HierarchyStats> {
        if distinct.len() != self.nodes.len() {
            return distinct;
        }
        self.of
            .iter()
            .map(|(name, i)| {
                let mut s = distinct[*i].clone();
                s.name.clone_from(name);
                s
            })
            .collect()
    }

    /// The per-thread counters of every node asked.
    pub fn thread_caches(&self, distinct: Vec<Vec<ThreadStats>>) -> Vec<Vec<ThreadStats>> {
        if distinct.len() != self.nodes.len() {
            return distinct;
        }
        self.of
            .iter()
            .map(|(name, i)| {
                let mut v = distinct[*i].clone();
                for t in &mut v {
                    t.stats.name.clone_from(name);
                }
                v
            })
            .collect()
    }

    /// The sampling report of every node asked.
    pub fn sampling(&self, distinct: Option<SamplingReport>) -> Option<SamplingReport> {
        let mut r = distinct?;
        if r.machines.len() != self.nodes.len() {
            return Some(r);
        }
        let machines = std::mem::take(&mut r.machines);
        r.machines = self
            .of
            .iter()
            .map(|(name, i)| {
                let mut m = machines[*i].clone();
                m.machine.clone_from(name);
                m
            })
            .collect();
        Some(r)
    }
}

/// The caches of a machine's node, for the simulator: its cache levels (see [`hierarchy`])
/// with how many cores share each (`shared_by_cores`, private when not given), and its
/// cores.
pub fn node(m: &Machine) -> Result<NodeConfig, MixError> {
    let h = hierarchy(m)?;
    let levels = h
        .levels
        .into_iter()
        .map(|cache| {
            let shared_by_cores = m
                .level(&cache.name)
                .and_then(|l| l.cache.as_ref())
                .and_then(|g| g.shared_by_cores)
                .unwrap_or(1)
                .max(1);
            NodeLevel {
                cache,
                shared_by_cores,
            }
        })
        .collect();
    let cfg = NodeConfig {
        name: h.name,
        levels,
        cores: m.cores(),
        inclusion: h.inclusion,
    };
    cfg.validate().map_err(|e| MixError::Machine {
        machine: m.id.clone(),
        message: e.to_string(),
        fix: "fix shared_by_cores in the machine file: each level's must be a multiple of the level above's".into(),
    })?;
    Ok(cfg)
}

/// The cache hierarchy of a machine, for the simulator: every cache level must have a
/// geometry, with one line size.
pub fn hierarchy(m: &Machine) -> Result<HierarchyConfig, MixError> {
    let mut levels = Vec::new();
    for l in m.levels.iter().filter(|l| l.kind == LevelKind::Cache) {
        let Some(g) = &l.cache else {
            return Err(MixError::Machine {
                machine: m.id.clone(),
                message: format!("cache level {} has no geometry", l.name),
                fix: "add [levels.cache] with size_bytes, line_bytes and associativity to the machine file".into(),
            });
        };
        levels.push(CacheConfig::new(
            l.name.clone(),
            g.size_bytes,
            u64::from(g.line_bytes),
            g.associativity,
        ));
    }
    if levels.is_empty() {
        return Err(MixError::Machine {
            machine: m.id.clone(),
            message: "has no cache level to simulate".into(),
            fix: "describe its caches, or use another machine for the simulation".into(),
        });
    }
    let inclusive = m
        .levels
        .iter()
        .filter_map(|l| l.cache.as_ref())
        .any(|g| g.inclusive == Some(true));
    let cfg = HierarchyConfig::new(m.id.clone(), levels).with_inclusion(if inclusive {
        Inclusion::Inclusive
    } else {
        Inclusion::NonInclusive
    });
    cfg.validate().map_err(|e| MixError::Machine {
        machine: m.id.clone(),
        message: e.to_string(),
        fix: "fix the cache geometry in the machine file".into(),
    })?;
    Ok(cfg)
}
