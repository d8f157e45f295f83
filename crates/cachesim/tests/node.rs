//! The node simulator: threads on cores with private caches, sharing the shared ones.
//! Hit ratios derived by hand for small hierarchies, and the property that one thread on a
//! node is exactly one hierarchy of the same levels.

use hpcscope_cachesim::{
    Access, CacheConfig, Hierarchy, HierarchyStats, Inclusion, NodeConfig, NodeLevel, NodeSim,
    PackedAccess, Placement, Replacement,
};
use proptest::prelude::*;

/// A fully associative LRU level of `lines` 64-byte lines.
fn fa(name: &str, lines: u64, shared_by_cores: u32) -> NodeLevel {
    NodeLevel {
        cache: CacheConfig::new(name, lines * 64, 64, lines as u32),
        shared_by_cores,
    }
}

/// `cores` cores, each with a private 8-line L1, every `share` cores sharing a 32-line L2.
fn small_node(cores: u32, share: u32, inclusion: Inclusion) -> NodeConfig {
    NodeConfig {
        name: "small".into(),
        levels: vec![fa("L1", 8, 1), fa("L2", 32, share)],
        cores,
        inclusion,
    }
}

/// One 8-byte load at the start of each of `lines` lines from line `first`.
fn sweep(first: u64, lines: u64) -> Vec<Access> {
    (first..first + lines)
        .map(|l| Access::read(l * 64, 8))
        .collect()
}

fn assert_conserved(s: &HierarchyStats) {
    let hits: u64 = s.levels.iter().map(|l| l.hits).sum::<u64>() + s.memory.hits;
    assert_eq!(hits, s.line_accesses(), "{s:?}");
    let bytes: u64 = s.all_levels().map(|l| l.bytes_served).sum();
    assert_eq!(bytes, s.bytes, "{s:?}");
}

/// Each thread sweeps 24 lines of its own 4 times. 24 lines overflow the 8-line L1 (a
/// cyclic sweep over LRU: no hit) and fit the 32-line L2 alone: after the first sweep,
/// every access hits L2 (local hit ratio 72/96 = 0.75). Two threads sharing the L2 cycle
/// through 48 lines: no access finds its line in L2 any more (ratio 0), whether the
/// threads alternate access by access or sweep by sweep; on cores that do not share the
/// L2 (scatter), each gets 0.75 again.
#[test]
fn a_working_set_that_fits_the_shared_level_alone_misses_with_two_threads() {
    let own = |t: u32| sweep(1000 * u64::from(t), 24);
    // One thread.
    let mut node = NodeSim::new(
        small_node(2, 2, Inclusion::NonInclusive),
        Placement::Compact,
    )
    .expect("valid");
    for _ in 0..4 {
        node.access_batch(0, &own(0));
    }
    let t = node.thread_stats();
    assert_eq!(t.len(), 1);
    let s = &t[0].stats;
    assert_conserved(s);
    assert_eq!(s.levels[0].hits, 0);
    assert_eq!((s.levels[1].accesses, s.levels[1].hits), (96, 72));
    assert_eq!(s.levels[1].local_hit_ratio(), 0.75);
    assert_eq!(s.memory.hits, 24);
    assert_eq!(s.memory.bytes_served, 24 * 8);

    for (placement, cores, fine) in [
        (Placement::Compact, 2, true),
        (Placement::Compact, 2, false),
        (Placement::Scatter, 4, true),
    ] {
        let mut node = NodeSim::new(
            small_node(cores, 2, Inclusion::NonInclusive),
            placement.clone(),
        )
        .expect("valid");
        for _ in 0..4 {
            if fine {
                // Access by access, alternating.
                let (a, b) = (own(0), own(1));
                for (x, y) in a.iter().zip(&b) {
                    node.access_batch(0, std::slice::from_ref(x));
                    node.access_batch(1, std::slice::from_ref(y));
                }
            } else {
                node.access_batch(0, &own(0));
                node.access_batch(1, &own(1));
            }
        }
        let t = node.thread_stats();
        assert_eq!(t.len(), 2);
        let expect = if placement == Placement::Scatter {
            assert_eq!((t[0].core, t[1].core), (0, 2));
            72
        } else {
            assert_eq!((t[0].core, t[1].core), (0, 1));
            0
        };
        for ts in &t {
            let s = &ts.stats;
            assert_conserved(s);
            assert_eq!(s.accesses, 96);
            assert_eq!(s.levels[0].hits, 0);
            assert_eq!(s.levels[1].hits, expect, "{placement:?} fine {fine}");
            assert_eq!(s.memory.hits, 96 - expect);
            assert_eq!(s.memory.bytes_served, (96 - expect) * 8);
        }
        // The node's counters are the sum of the threads'.
        let total = node.stats();
        assert_eq!(total.accesses, 192);
        assert_eq!(total.levels[1].hits, 2 * expect);
        assert_conserved(&total);
        assert_eq!(
            node.instances(),
            if placement == Placement::Scatter {
                vec![2, 2]
            } else {
                vec![2, 1]
            }
        );
    }
}

/// Lines one thread brought into the shared level serve the other thread; its private
/// L1 does not.
#[test]
fn data_one_thread_read_serves_the_other_from_the_shared_level() {
    let mut node = NodeSim::new(
        small_node(2, 2, Inclusion::NonInclusive),
        Placement::Compact,
    )
    .expect("valid");
    node.access_batch(0, &sweep(0, 4));
    node.access_batch(1, &sweep(0, 4));
    node.access_batch(0, &sweep(0, 4));
    let t = node.thread_stats();
    // Thread 0: 4 from memory, then 4 L1 hits; thread 1: 4 hits in the shared L2.
    assert_eq!((t[0].stats.memory.hits, t[0].stats.levels[0].hits), (4, 4));
    assert_eq!((t[1].stats.levels[1].hits, t[1].stats.memory.hits), (4, 0));
    assert!(node.contains(0, 0, 0) && node.contains(1, 0, 0));
}

/// Inclusive: a line the shared L2 evicts leaves the other core's L1 too (a dirty copy
/// there is written back once); non-inclusive keeps it.
#[test]
fn inclusive_shared_level_back_invalidates_other_cores() {
    let cfg = |inclusion| NodeConfig {
        name: "incl".into(),
        levels: vec![fa("L1", 4, 1), fa("L2", 8, 2)],
        cores: 2,
        inclusion,
    };
    for (inclusion, write) in [
        (Inclusion::Inclusive, false),
        (Inclusion::Inclusive, true),
        (Inclusion::NonInclusive, true),
    ] {
        let mut node = NodeSim::new(cfg(inclusion), Placement::Compact).expect("valid");
        let mine: Vec<Access> = (0..4u64)
            .map(|l| {
                if write {
                    Access::write(l * 64, 8)
                } else {
                    Access::read(l * 64, 8)
                }
            })
            .collect();
        node.access_batch(0, &mine);
        // Thread 1's 8 lines fill the L2's 4 free ways, then evict thread 0's 4 lines.
        node.access_batch(1, &sweep(100, 8));
        let inclusive = inclusion == Inclusion::Inclusive;
        for l in 0..4u64 {
            assert_eq!(node.contains(0, 0, l * 64), !inclusive, "{inclusion:?}");
            assert!(!node.contains(1, 1, l * 64));
        }
        let t = node.thread_stats();
        // The dirty copies in core 0's L1 are written back when inclusion drops them.
        let wb = if inclusive && write { 4 } else { 0 };
        assert_eq!(
            t[1].stats.memory.writebacks, wb,
            "{inclusion:?} write {write}"
        );
        node.access_batch(0, &sweep(0, 4));
        let t = node.thread_stats();
        assert_eq!(
            t[0].stats.levels[0].hits,
            if inclusive { 0 } else { 4 },
            "{inclusion:?}"
        );
    }
}

fn level() -> impl Strategy<Value = (u64, u32, bool)> {
    (
        prop::sample::select(vec![1u64, 2, 4, 8]),
        prop::sample::select(vec![1u32, 2, 4, 3, 8]),
        any::<bool>(),
    )
}

fn node_config() -> impl Strategy<Value = NodeConfig> {
    (
        prop::collection::vec((level(), prop::sample::select(vec![1u32, 2, 4])), 1..=3),
        prop::sample::select(vec![
            Inclusion::NonInclusive,
            Inclusion::Inclusive,
            Inclusion::Exclusive,
        ]),
        1u32..6,
    )
        .prop_map(|(levels, inclusion, cores)| {
            // Sharing that nests: each level's sharing is a multiple of the one above.
            let mut share = 1u32;
            let levels = levels
                .into_iter()
                .enumerate()
                .map(|(i, ((sets, ways, plru), mult))| {
                    if i > 0 {
                        share *= mult;
                    }
                    let r = if plru && ways.is_power_of_two() {
                        Replacement::TreePlru
                    } else {
                        Replacement::Lru
                    };
                    NodeLevel {
                        cache: CacheConfig::new(
                            format!("L{}", i + 1),
                            sets * 64 * u64::from(ways),
                            64,
                            ways,
                        )
                        .with_replacement(r),
                        shared_by_cores: share,
                    }
                })
                .collect();
            NodeConfig {
                name: "p".into(),
                levels,
                cores,
                inclusion,
            }
        })
}

/// Accesses over a few arrays that share sets, some straddling a line, some repeated.
fn stream() -> impl Strategy<Value = Vec<PackedAccess>> {
    prop::collection::vec(
        (0u64..4, 0u64..3000, 0u32..4, 1u64..=4, any::<bool>()),
        0..400,
    )
    .prop_map(|v| {
        v.into_iter()
            .map(|(array, off, size_log, n, w)| {
                let addr = 0x10_0000 + array * 0x4_1000 + off;
                let p = PackedAccess::new(addr, 1 << size_log, w).expect("small address");
                if addr + n * (1 << size_log) <= (addr | 63) + 1 {
                    p.with_count(n).expect("1 to 8")
                } else {
                    p
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// One thread on a node, on any core, is exactly one hierarchy of the same levels,
    /// whatever the policy, however the stream is cut into batches.
    #[test]
    fn one_thread_is_one_hierarchy(
        cfg in node_config(),
        s in stream(),
        thread in 0u32..8,
        cut in 0usize..400,
    ) {
        let mut h = Hierarchy::new(cfg.hierarchy()).expect("valid");
        h.access_batch(&s);
        let mut node = NodeSim::new(cfg.clone(), Placement::Scatter).expect("valid");
        let cut = cut.min(s.len());
        node.access_batch(thread, &s[..cut]);
        node.access_batch(thread, &s[cut..]);
        let t = node.thread_stats();
        let mut want = h.stats();
        want.name = cfg.name.clone();
        if s.is_empty() {
            prop_assert!(t.is_empty());
        } else {
            prop_assert_eq!(&t[0].stats, &want);
            prop_assert_eq!(node.stats(), want);
        }
    }

    /// Several threads: each thread's counters are conserved (bytes and line accesses),
    /// count exactly its own accesses, and add up to the node's.
    #[test]
    fn threads_count_their_own_accesses(
        cfg in node_config(),
        streams in prop::collection::vec(stream(), 1..4),
        order in prop::collection::vec(0usize..4, 0..12),
        placement in prop::sample::select(vec![Placement::Compact, Placement::Scatter]),
    ) {
        let mut node = NodeSim::new(cfg, placement).expect("valid");
        // Batches of 50 accesses, threads taking turns in the order drawn, then the rest.
        let mut pos = vec![0usize; streams.len()];
        let mut feed = |node: &mut NodeSim, t: usize, all: bool| {
            let s = &streams[t];
            let end = if all { s.len() } else { (pos[t] + 50).min(s.len()) };
            node.access_batch(t as u32, &s[pos[t]..end]);
            pos[t] = end;
        };
        for &t in &order {
            if t < streams.len() {
                feed(&mut node, t, false);
            }
        }
        for t in 0..streams.len() {
            feed(&mut node, t, true);
        }
        let ts = node.thread_stats();
        let mut total_bytes = 0;
        for x in &ts {
            let s = &x.stats;
            assert_conserved(s);
            let own = &streams[x.thread as usize];
            let want_bytes: u64 = own.iter().map(|a| hpcscope_cachesim::IntoAccess::bytes(*a)).sum();
            prop_assert_eq!(s.bytes, want_bytes);
            total_bytes += s.bytes;
        }
        let n = node.stats();
        prop_assert_eq!(n.bytes, total_bytes);
        assert_conserved(&n);
    }
}
