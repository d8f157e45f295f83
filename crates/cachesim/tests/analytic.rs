//! Hit ratios and traffic that can be derived by hand, checked exactly.

use hpcscope_cachesim::{
    Access, CacheConfig, Hierarchy, HierarchyConfig, HierarchyStats, Inclusion, Replacement,
};

const KIB: u64 = 1024;

/// L1 32 KiB 8-way (64 sets), L2 256 KiB 8-way (512 sets), 64-byte lines.
fn two_level(inclusion: Inclusion) -> Hierarchy {
    let cfg = HierarchyConfig::new(
        "two",
        vec![
            CacheConfig::new("L1", 32 * KIB, 64, 8),
            CacheConfig::new("L2", 256 * KIB, 64, 8),
        ],
    )
    .with_inclusion(inclusion);
    Hierarchy::new(cfg).expect("valid geometry")
}

fn sweep(h: &mut Hierarchy, base: u64, bytes: u64, write: bool) {
    for off in (0..bytes).step_by(8) {
        let a = if write {
            Access::write(base + off, 8)
        } else {
            Access::read(base + off, 8)
        };
        h.access(a);
    }
}

fn assert_conserved(s: &HierarchyStats) {
    let hits: u64 = s.levels.iter().map(|l| l.hits).sum::<u64>() + s.memory.hits;
    assert_eq!(hits, s.line_accesses());
    let bytes: u64 = s.all_levels().map(|l| l.bytes_served).sum();
    assert_eq!(bytes, s.bytes);
}

#[test]
fn sequential_stream_larger_than_every_cache() {
    // 8-byte loads over 64-byte lines: the first touch of a line misses everywhere, the
    // other 7 hit L1. L2 never sees a line twice, so its local hit ratio is 0.
    for inclusion in [
        Inclusion::NonInclusive,
        Inclusion::Inclusive,
        Inclusion::Exclusive,
    ] {
        let mut h = two_level(inclusion);
        let n_bytes = 4 * 1024 * KIB;
        sweep(&mut h, 0x4000_0000, n_bytes, false);
        let s = h.stats();
        let n = n_bytes / 8;
        assert_eq!(s.accesses, n);
        assert_eq!(s.levels[0].local_hit_ratio(), 0.875, "{inclusion:?}");
        assert_eq!(s.levels[1].accesses, n / 8);
        assert_eq!(s.levels[1].local_hit_ratio(), 0.0);
        assert_eq!(s.memory.hits, n / 8);
        assert_eq!(s.levels[0].bytes_served, n_bytes * 7 / 8);
        assert_eq!(s.memory.bytes_served, n_bytes / 8);
        assert_eq!(s.levels[0].bytes_fraction(s.bytes), 0.875);
        assert_eq!(s.memory.writebacks, 0);
        assert_conserved(&s);
    }
}

#[test]
fn working_set_smaller_than_l1_hits_after_warm_up() {
    let mut h = two_level(Inclusion::NonInclusive);
    sweep(&mut h, 0x10_0000, 16 * KIB, false);
    let cold = h.flush_stats();
    assert_eq!(cold.levels[0].misses, 16 * KIB / 64);
    for _ in 0..10 {
        sweep(&mut h, 0x10_0000, 16 * KIB, false);
    }
    let warm = h.stats();
    assert_eq!(warm.levels[0].local_hit_ratio(), 1.0);
    assert_eq!(warm.levels[0].bytes_served, 10 * 16 * KIB);
    assert_eq!(warm.memory.accesses, 0);
}

#[test]
fn working_set_between_l1_and_l2_thrashes_l1_under_lru() {
    // 64 KiB read cyclically through a 32 KiB LRU L1: every line is evicted before it is
    // reused (cyclic LRU thrash), so L1 only keeps the 7-of-8 same-line hits, and L2
    // (256 KiB) serves every line after the first pass.
    let mut h = two_level(Inclusion::NonInclusive);
    sweep(&mut h, 0x20_0000, 64 * KIB, false);
    h.reset_stats();
    for _ in 0..5 {
        sweep(&mut h, 0x20_0000, 64 * KIB, false);
    }
    let s = h.stats();
    assert_eq!(s.levels[0].local_hit_ratio(), 0.875);
    assert_eq!(s.levels[1].local_hit_ratio(), 1.0);
    assert_eq!(s.levels[1].bytes_served, 5 * 64 * KIB / 8);
    assert_eq!(s.memory.accesses, 0);
    assert_conserved(&s);
}

#[test]
fn conflict_stride_misses_only_beyond_associativity() {
    // Addresses 4 KiB apart map to one set of the 64-set L1 (4 KiB = 64 sets × 64 B).
    // 8 of them fit the 8 ways; a 9th makes cyclic LRU miss every time.
    for (lines, expect_l1_hits) in [(8u64, true), (9, false)] {
        let mut h = two_level(Inclusion::NonInclusive);
        let stream: Vec<Access> = (0..lines)
            .map(|i| Access::read(0x80_0000 + i * 4096, 8))
            .collect();
        h.access_batch(&stream);
        h.reset_stats();
        for _ in 0..100 {
            h.access_batch(&stream);
        }
        let s = h.stats();
        if expect_l1_hits {
            assert_eq!(s.levels[0].misses, 0);
        } else {
            assert_eq!(s.levels[0].hits, 0);
            assert_eq!(s.levels[1].hits, 900); // 9 lines over 512 L2 sets: no conflict there
        }
    }
}

#[test]
fn store_stream_writes_every_line_back() {
    // A store stream over 4 MiB: every line is dirtied in L1; L1 writes back every line
    // but the 512 it still holds, L2 every line but its 4096, and memory receives those.
    let mut h = two_level(Inclusion::NonInclusive);
    let n_bytes = 4 * 1024 * KIB;
    sweep(&mut h, 0x4000_0000, n_bytes, true);
    let s = h.stats();
    let lines = n_bytes / 64;
    assert_eq!(s.levels[0].fills, lines);
    assert_eq!(s.levels[0].writebacks, lines - 512);
    assert_eq!(s.levels[1].writebacks, lines - 4096);
    assert_eq!(s.memory.writebacks, lines - 4096);
    assert_eq!(s.memory_traffic_bytes(), (2 * lines - 4096) * 64);
    // A load stream writes nothing back.
    let mut h = two_level(Inclusion::NonInclusive);
    sweep(&mut h, 0x4000_0000, n_bytes, false);
    assert_eq!(h.stats().levels[0].writebacks, 0);
}

/// L1: one set of 4 ways; L2: 4 sets of 2 ways. Lines 0, 4, 8 share L2 set 0.
fn tiny(inclusion: Inclusion) -> Hierarchy {
    let cfg = HierarchyConfig::new(
        "tiny",
        vec![
            CacheConfig::new("L1", 256, 64, 4),
            CacheConfig::new("L2", 512, 64, 2),
        ],
    )
    .with_inclusion(inclusion);
    Hierarchy::new(cfg).expect("valid geometry")
}

#[test]
fn inclusive_eviction_back_invalidates_l1() {
    let (a, b, c) = (0u64, 4 * 64, 8 * 64);
    for inclusion in [Inclusion::Inclusive, Inclusion::NonInclusive] {
        let mut h = tiny(inclusion);
        h.access(Access::write(a, 8));
        h.access(Access::read(b, 8));
        h.access(Access::read(c, 8)); // L2 set 0 evicts A
        assert!(!h.contains(1, a));
        let inclusive = inclusion == Inclusion::Inclusive;
        assert_eq!(h.contains(0, a), !inclusive, "{inclusion:?}");
        let s = h.stats();
        if inclusive {
            // A's dirty L1 copy goes to memory with the L2 eviction.
            assert_eq!((s.levels[1].writebacks, s.memory.writebacks), (1, 1));
        } else {
            assert_eq!((s.levels[1].writebacks, s.memory.writebacks), (0, 0));
        }
        h.reset_stats();
        h.access(Access::read(a, 8));
        let s = h.stats();
        assert_eq!(s.levels[0].hits, u64::from(!inclusive), "{inclusion:?}");
    }
}

#[test]
fn inclusive_hierarchy_keeps_l1_inside_l2() {
    let mut h = tiny(Inclusion::Inclusive);
    let mut x = 12345u64;
    for _ in 0..2000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let addr = (x >> 33) % (32 * 64);
        h.access(Access {
            addr,
            size: 8,
            is_write: x & 1 == 1,
        });
        for line in 0..32u64 {
            if h.contains(0, line * 64) {
                assert!(h.contains(1, line * 64), "line {line} in L1 but not L2");
            }
        }
    }
}

#[test]
fn exclusive_levels_never_share_a_line() {
    let mut h = tiny(Inclusion::Exclusive);
    let mut x = 777u64;
    for _ in 0..2000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let addr = (x >> 33) % (32 * 64);
        h.access(Access {
            addr,
            size: 8,
            is_write: x & 2 == 2,
        });
        for line in 0..32u64 {
            assert!(
                !(h.contains(0, line * 64) && h.contains(1, line * 64)),
                "line {line} in both"
            );
        }
    }
    // Capacity of an exclusive hierarchy is the sum of the levels: 12 lines fit.
    let mut h = tiny(Inclusion::Exclusive);
    let lines = [0u64, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
    for _ in 0..3 {
        for l in lines {
            h.access(Access::read(l * 64, 8));
        }
    }
    assert_eq!(h.valid_lines(0) + h.valid_lines(1), 12);
}

#[test]
fn exclusive_victims_carry_dirty_data_down() {
    let mut h = tiny(Inclusion::Exclusive);
    h.access(Access::write(0, 8));
    for l in 1..5u64 {
        h.access(Access::read(l * 64, 8)); // 4 more lines: L1 (4 ways) evicts line 0
    }
    assert!(!h.contains(0, 0));
    assert!(h.is_dirty(1, 0));
    h.access(Access::read(0, 8)); // L2 hit moves it back up, still dirty
    assert!(h.is_dirty(0, 0) && !h.contains(1, 0));
    let s = h.stats();
    assert_eq!(s.levels[1].hits, 1);
    assert_eq!(s.levels[0].writebacks, 1);
}

#[test]
fn tree_plru_victim_differs_from_lru() {
    // One 4-way set: after A B C D A, tree-PLRU evicts C, LRU evicts B.
    for (repl, victim) in [(Replacement::TreePlru, 2u64), (Replacement::Lru, 1)] {
        let cfg = HierarchyConfig::new(
            "one-set",
            vec![CacheConfig::new("L1", 256, 64, 4).with_replacement(repl)],
        );
        let mut h = Hierarchy::new(cfg).expect("valid");
        for l in [0u64, 1, 2, 3, 0, 4] {
            h.access(Access::read(l * 64, 8));
        }
        for l in 0..5u64 {
            assert_eq!(h.contains(0, l * 64), l != victim, "{repl:?} line {l}");
        }
    }
}

#[test]
fn straddling_access_is_split_and_bytes_attributed_per_line() {
    let mut h = two_level(Inclusion::NonInclusive);
    h.access(Access::read(0x1000, 8)); // line 0x40 now in L1
    h.access(Access::read(0x103c, 8)); // 4 bytes in line 0x40 (L1), 4 in line 0x41 (memory)
    h.access(Access::write(0x1000, 256)); // 4 lines: 0x40, 0x41 hit L1, 0x42, 0x43 memory
    let s = h.stats();
    assert_eq!(s.accesses, 3);
    assert_eq!(s.split_accesses, 2);
    assert_eq!(s.line_accesses(), 1 + 2 + 4);
    assert_eq!(s.levels[0].hits, 1 + 2);
    assert_eq!(s.levels[0].bytes_served, 4 + 128);
    assert_eq!(s.memory.bytes_served, 8 + 4 + 128);
    assert_eq!(s.bytes, 8 + 8 + 256);
    assert_conserved(&s);
}

#[test]
fn an_access_at_the_top_of_the_address_space_stops_at_its_last_byte() {
    let mut h = two_level(Inclusion::NonInclusive);
    // Bytes u64::MAX - 1 and u64::MAX exist; the two after them would wrap to address 0.
    h.access(Access::read(u64::MAX - 1, 4));
    h.access(Access::write(u64::MAX - 64, 65)); // the last two lines, every byte of them
    let s = h.stats();
    assert_eq!(s.bytes, 2 + 65);
    assert_eq!(s.memory.bytes_served, 2 + 1);
    assert_conserved(&s);
}

#[test]
fn a_level_too_large_to_hold_in_memory_is_refused() {
    // 1 TiB of 64-byte lines: 2^34 tags (128 GiB) would abort the process at allocation.
    let cfg = HierarchyConfig::new("huge", vec![CacheConfig::new("L1", 1 << 40, 64, 8)]);
    let e = cfg.validate().unwrap_err().to_string();
    assert!(
        e.contains("'L1'") && e.contains("more than this host can simulate"),
        "{e}"
    );
    // The largest level accepted: 16 GiB of 64-byte lines.
    let ok = HierarchyConfig::new("big", vec![CacheConfig::new("L3", 1 << 34, 64, 16)]);
    assert!(ok.validate().is_ok());
}

#[test]
fn a_level_too_large_to_index_is_refused() {
    let cfg = HierarchyConfig::new("huge", vec![CacheConfig::new("L1", 1 << 50, 64, 1)]);
    let e = cfg.validate().unwrap_err().to_string();
    assert!(
        e.contains("'L1'") && e.contains("more than this host can simulate"),
        "{e}"
    );
}

#[test]
fn non_power_of_two_set_counts_simulate() {
    // Sapphire Rapids: 48 KiB 12-way L1 (64 sets), 2 MiB 16-way L2, 105 MiB 15-way L3
    // (114688 sets). A 1 MiB working set fits L2: the second pass hits L2 only.
    let cfg = HierarchyConfig::new(
        "spr",
        vec![
            CacheConfig::new("L1d", 48 * KIB, 64, 12),
            CacheConfig::new("L2", 2048 * KIB, 64, 16),
            CacheConfig::new("L3", 105 * 1024 * KIB, 64, 15),
        ],
    );
    let mut h = Hierarchy::new(cfg).expect("valid geometry");
    sweep(&mut h, 0x7000_0000, 1024 * KIB, false);
    h.reset_stats();
    sweep(&mut h, 0x7000_0000, 1024 * KIB, false);
    let s = h.stats();
    assert_eq!(s.levels[1].local_hit_ratio(), 1.0);
    assert_eq!(s.levels[2].accesses, 0);
    // 3 MiB: misses L2, hits the non-power-of-two L3.
    let mut h = Hierarchy::new(h.config().clone()).expect("valid");
    sweep(&mut h, 0x7000_0000, 3 * 1024 * KIB, false);
    h.reset_stats();
    sweep(&mut h, 0x7000_0000, 3 * 1024 * KIB, false);
    let s = h.stats();
    assert_eq!(s.levels[2].local_hit_ratio(), 1.0);
    assert_eq!(s.memory.accesses, 0);
}

#[test]
fn stats_serialize_to_json() {
    let mut h = two_level(Inclusion::NonInclusive);
    sweep(&mut h, 0, 4096, false);
    let s = h.stats();
    let json = serde_json::to_string(&s).expect("serialize");
    assert!(json.contains("\"bytes_served\""));
    assert!(json.contains("\"MM\""));
    let back: HierarchyStats = serde_json::from_str(&json).expect("deserialize");
    assert_eq!(back, s);
}

#[test]
fn reset_makes_caches_cold_again() {
    let mut h = two_level(Inclusion::NonInclusive);
    sweep(&mut h, 0, 4096, false);
    let first = h.stats();
    h.reset();
    assert_eq!(h.stats().line_accesses(), 0);
    sweep(&mut h, 0, 4096, false);
    assert_eq!(h.stats(), first);
}
