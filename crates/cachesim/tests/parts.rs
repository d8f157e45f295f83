//! A node simulated in parts (its first levels, then the rest fed what leaves them) counts
//! exactly what the whole node counts: every level's hits, misses, bytes, fills,
//! write-backs and evictions, memory's, per thread; and [`SharedNodes`] gives each node
//! exactly its own simulation's counters.

use hpcscope_cachesim::{
    CacheConfig, ConfigError, Inclusion, NodeConfig, NodeLevel, NodeSim, PackedAccess, Placement,
    Replacement, SharedNodes, join_parts, join_thread_parts,
};
use proptest::prelude::*;

/// A level of `sets` sets of `ways` ways of 64-byte lines (small: every level misses).
fn level(name: &str, sets: u64, ways: u32, plru: bool, shared: u32) -> NodeLevel {
    let r = if plru && ways.is_power_of_two() {
        Replacement::TreePlru
    } else {
        Replacement::Lru
    };
    NodeLevel {
        cache: CacheConfig::new(name, sets * 64 * u64::from(ways), 64, ways).with_replacement(r),
        shared_by_cores: shared,
    }
}

/// 2 to 4 levels, the first two private, the others private or shared by 2 or 4 cores.
fn node() -> impl Strategy<Value = NodeConfig> {
    let lv = (
        prop::sample::select(vec![1u64, 2, 4, 8, 16]),
        prop::sample::select(vec![1u32, 2, 3, 4, 8, 11, 16]),
        any::<bool>(),
    );
    (
        prop::collection::vec(lv, 2..=4),
        prop::sample::select(vec![1u32, 2, 4]),
        2u32..8,
    )
        .prop_map(|(levels, share, cores)| {
            let n = levels.len();
            let levels = levels
                .into_iter()
                .enumerate()
                .map(|(i, (sets, ways, plru))| {
                    // Levels grow outwards, so that lower levels also hit.
                    let sets = sets << i;
                    let shared = if i >= 2 && i + 1 == n { share } else { 1 };
                    level(&format!("L{}", i + 1), sets, ways, plru, shared)
                })
                .collect();
            NodeConfig {
                name: "n".into(),
                levels,
                cores,
                inclusion: Inclusion::NonInclusive,
            }
        })
}

/// Batches of up to 3 threads: loads and stores of 1 to 16 bytes over a few arrays 4 KiB
/// apart, some straddling a line, some records standing for several accesses.
fn batches() -> impl Strategy<Value = Vec<(u32, Vec<PackedAccess>)>> {
    let rec = (0u64..4, 0u64..6000, 0u32..5, 1u64..=4, any::<bool>());
    prop::collection::vec((0u32..3, prop::collection::vec(rec, 1..80)), 1..12).prop_map(|v| {
        v.into_iter()
            .map(|(t, recs)| {
                let recs = recs
                    .into_iter()
                    .map(|(array, off, size_log, n, w)| {
                        let addr = 0x10_0000 + array * 0x1_1000 + off;
                        let p = PackedAccess::new(addr, 1 << size_log, w).expect("small");
                        if addr + n * (1 << size_log) <= (addr | 63) + 1 {
                            p.with_count(n).expect("1 to 4")
                        } else {
                            p
                        }
                    })
                    .collect();
                (t, recs)
            })
            .collect()
    })
}

fn placement() -> impl Strategy<Value = Placement> {
    prop::sample::select(vec![Placement::Compact, Placement::Scatter])
}

/// Feeds `batches` to the parts of `cfg` cut at `cuts` (each after a private level) and
/// to the whole node; panics unless every counter agrees.
fn check_parts(
    cfg: &NodeConfig,
    cuts: &[usize],
    placement: &Placement,
    batches: &[(u32, Vec<PackedAccess>)],
) {
    let n = cfg.levels.len();
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(n);
    let mut parts: Vec<NodeSim> = bounds
        .windows(2)
        .map(|w| {
            let mut p = NodeSim::part(cfg, w[0]..w[1], placement.clone()).expect("a valid cut");
            if w[1] < n {
                p.capture_outflow().expect("private non-inclusive levels");
            }
            p
        })
        .collect();
    let mut whole = NodeSim::new(cfg.clone(), placement.clone()).expect("valid");
    let mut events = Vec::new();
    for (t, b) in batches {
        whole.access_batch(*t, b);
        parts[0].access_batch(*t, b);
        for i in 1..parts.len() {
            events.clear();
            parts[i - 1].take_outflow(&mut events);
            parts[i].replay(*t, &events);
        }
    }
    let stats: Vec<_> = parts.iter().map(NodeSim::stats).collect();
    assert_eq!(
        join_parts(cfg, &stats).as_ref(),
        Some(&whole.stats()),
        "cuts {cuts:?}"
    );
    let threads: Vec<_> = parts.iter().map(NodeSim::thread_stats).collect();
    assert_eq!(
        join_thread_parts(cfg, &threads),
        Some(whole.thread_stats()),
        "cuts {cuts:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Cut after L1, after L2, and after both: every counter of every thread is the whole
    /// node's.
    #[test]
    fn a_node_in_parts_counts_what_the_whole_node_counts(
        cfg in node(),
        placement in placement(),
        b in batches(),
    ) {
        check_parts(&cfg, &[1], &placement, &b);
        if cfg.levels.len() > 2 {
            check_parts(&cfg, &[2], &placement, &b);
            check_parts(&cfg, &[1, 2], &placement, &b);
        }
    }

    /// Nodes that share their first one or two levels (different names, different levels
    /// below, one with only the shared levels) count in [`SharedNodes`] exactly what each
    /// counts alone, and the shared levels are simulated once.
    #[test]
    fn shared_nodes_count_what_each_node_counts_alone(
        base in node(),
        other in node(),
        placement in placement(),
        b in batches(),
    ) {
        let mut a = base.clone();
        a.name = "a".into();
        // Shares L1 with a (renamed), then its own levels.
        let mut c = other.clone();
        c.name = "c".into();
        c.levels[0] = base.levels[0].clone();
        c.levels[0].cache.name = "L1d".into();
        c.cores = base.cores;
        // a's first two levels only.
        let mut d = base.clone();
        d.name = "d".into();
        d.levels.truncate(2);
        // a's first two levels and other's third onwards.
        let mut e = base.clone();
        e.name = "e".into();
        e.levels.truncate(2);
        e.levels.extend(other.levels.iter().skip(2).cloned());
        e.cores = base.cores;
        let nodes = vec![a, c, d, e, other];
        let mut shared = SharedNodes::new(&nodes, &placement).expect("valid");
        // (With scatter, a node whose outermost sharing differs shares nothing.)
        prop_assert!(shared.shares() || placement == Placement::Scatter);
        let mut alone: Vec<NodeSim> = nodes
            .iter()
            .map(|n| NodeSim::new(n.clone(), placement.clone()).expect("valid"))
            .collect();
        for (t, r) in &b {
            shared.access_batch(*t, r);
            for s in &mut alone {
                s.access_batch(*t, r);
            }
        }
        for (i, s) in alone.iter().enumerate() {
            prop_assert_eq!(shared.stats(i), s.stats(), "{}", nodes[i].name);
            prop_assert_eq!(shared.thread_stats(i), s.thread_stats(), "{}", nodes[i].name);
        }
    }
}

/// The four default-target shapes of `analyze`: two nodes sharing L1, three sharing L1
/// and L2 (one of them nothing more), each simulated once per shared level.
#[test]
fn shared_levels_are_simulated_once() {
    let l = |n: &str, kib: u64, ways: u32, shared: u32| NodeLevel {
        cache: CacheConfig::new(n, kib << 10, 64, ways),
        shared_by_cores: shared,
    };
    let node = |name: &str, levels: Vec<NodeLevel>| NodeConfig {
        name: name.into(),
        levels,
        cores: 64,
        inclusion: Inclusion::NonInclusive,
    };
    let nodes = vec![
        node(
            "clx",
            vec![
                l("L1", 32, 8, 1),
                l("L2", 1024, 16, 1),
                l("L3", 36608, 11, 24),
            ],
        ),
        node(
            "tx2",
            vec![
                l("L1", 32, 8, 1),
                l("L2", 256, 8, 1),
                l("L3", 32768, 16, 32),
            ],
        ),
        node(
            "g2",
            vec![
                l("L1", 64, 4, 1),
                l("L2", 1024, 8, 1),
                l("L3", 32768, 16, 64),
            ],
        ),
        node("n1", vec![l("L1", 64, 4, 1), l("L2", 1024, 8, 1)]),
        node(
            "epi",
            vec![
                l("L1", 64, 4, 1),
                l("L2", 1024, 8, 1),
                l("L3", 65536, 16, 64),
            ],
        ),
    ];
    let s = SharedNodes::new(&nodes, &Placement::Compact).unwrap();
    // L1 of clx and tx2, their own L2 and L3; L1 and L2 of g2, n1 and epi, g2's and
    // epi's L3: 9 level simulations instead of 14.
    assert_eq!(s.level_simulations(), 1 + 2 + 2 + 2 + 1 + 1);
    // Inclusive nodes share nothing.
    let incl: Vec<NodeConfig> = nodes
        .iter()
        .map(|n| NodeConfig {
            inclusion: Inclusion::Inclusive,
            ..n.clone()
        })
        .collect();
    let s = SharedNodes::new(&incl, &Placement::Compact).unwrap();
    assert!(!s.shares());
    // With scatter, nodes whose cores differ share nothing.
    let mut scattered = nodes.clone();
    scattered[1].cores = 32;
    let s = SharedNodes::new(&scattered[..2], &Placement::Scatter).unwrap();
    assert!(!s.shares());
    let s = SharedNodes::new(&scattered[..2], &Placement::Compact).unwrap();
    assert!(s.shares());
}

/// Cuts that could not be exact are refused.
#[test]
fn inexact_cuts_are_refused() {
    let cfg = NodeConfig {
        name: "n".into(),
        levels: vec![
            level("L1", 4, 4, false, 1),
            level("L2", 8, 4, false, 2),
            level("L3", 16, 4, false, 4),
        ],
        cores: 4,
        inclusion: Inclusion::NonInclusive,
    };
    assert!(NodeSim::part(&cfg, 0..1, Placement::Compact).is_ok());
    assert!(NodeSim::part(&cfg, 1..3, Placement::Compact).is_ok());
    // Below a shared level.
    assert!(matches!(
        NodeSim::part(&cfg, 0..2, Placement::Compact),
        Err(ConfigError::Split { .. })
    ));
    assert!(matches!(
        NodeSim::part(&cfg, 2..3, Placement::Compact),
        Err(ConfigError::Split { .. })
    ));
    let incl = NodeConfig {
        inclusion: Inclusion::Inclusive,
        ..cfg.clone()
    };
    assert!(matches!(
        NodeSim::part(&incl, 0..1, Placement::Compact),
        Err(ConfigError::Split { .. })
    ));
    assert!(NodeSim::part(&incl, 0..3, Placement::Compact).is_ok());
}
