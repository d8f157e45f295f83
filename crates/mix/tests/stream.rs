//! The plugin's record stream as mix replays it, from bytes nobody vouches for.

mod common;

use hpcscope_cachesim::{PackedAccess, Placement};
use hpcscope_plugin_format::{MAGIC, thread_marker};

/// A thread marker naming thread 4,294,967,280 (a damaged or forged stream; the plugin
/// numbers threads densely from 0) costs one entry, not a table of that many threads: the
/// fuzzer found it asking for 369 GB.
#[test]
fn a_forged_thread_id_in_the_stream_costs_one_entry() {
    let m = hpcscope_core::library::builtin("thunderx2").unwrap();
    let node = hpcscope_mix::node(&m).unwrap();
    let mut s = MAGIC.to_vec();
    let marker = thread_marker(0xffff_fff0);
    s.extend_from_slice(&marker.to_le_bytes());
    for i in 0..16u64 {
        let a = PackedAccess::new(0x1000 + 64 * i, 8, i % 2 == 1).unwrap();
        s.extend_from_slice(&a.0.to_le_bytes());
    }
    let r = hpcscope_mix::replay_stream(&s[..], vec![node], &Placement::Compact).unwrap();
    assert_eq!(r.records, 16);
    let threads = &r.thread_caches[0];
    assert_eq!(threads.len(), 1, "{threads:?}");
    assert_eq!(threads[0].thread, 0xffff_fff0);
}

/// Accesses that cross a line, then a switch to a thread on another core (whose L1 has not
/// seen them): each thread's access count is its own. The count of line pieces used to stay
/// with the hierarchy while the L1 moved, and the second thread's count went below zero
/// (a panic in a debug build, a wrapped count in a release one; found by the fuzzer).
#[test]
fn line_crossing_accesses_stay_with_their_thread_across_a_core_switch() {
    let m = hpcscope_core::library::builtin("thunderx2").unwrap();
    let node = hpcscope_mix::node(&m).unwrap();
    let mut s = MAGIC.to_vec();
    let mark = |s: &mut Vec<u8>, t: u32| s.extend_from_slice(&thread_marker(t).to_le_bytes());
    let acc = |s: &mut Vec<u8>, a: u64| {
        s.extend_from_slice(&PackedAccess::new(a, 8, false).unwrap().0.to_le_bytes())
    };
    mark(&mut s, 0);
    for i in 0..4u64 {
        acc(&mut s, 0x10_0000 + 0x40 * i + 0x3c); // 4 bytes in each of two lines
    }
    mark(&mut s, 1);
    acc(&mut s, 0x20_0000);
    let r = hpcscope_mix::replay_stream(&s[..], vec![node], &Placement::Compact).unwrap();
    let t = &r.thread_caches[0];
    assert_eq!(t.len(), 2, "{t:?}");
    assert_ne!(t[0].core, t[1].core, "{t:?}");
    assert_eq!(t[0].stats.accesses, 4, "{t:?}");
    assert_eq!(t[1].stats.accesses, 1, "{t:?}");
}

/// Machines with the same caches are simulated once and their counters shared: every
/// bundled machine's counters (all threads and per thread) are those of its own simulation
/// alone, with the compact and the scatter placement, and the groups are the expected ones.
#[test]
fn machines_with_the_same_caches_share_one_simulation_and_count_the_same() {
    let machines: Vec<_> = [
        "cascadelake-8260",
        "a64fx-node",
        "a64fx",
        "cascadelake-8260",
        "epi-like",
        "graviton2",
        "graviton3",
        "neoverse-n1",
        "thunderx2",
    ]
    .iter()
    .map(|id| hpcscope_core::library::builtin(id).unwrap())
    .collect();
    let nodes: Vec<_> = machines
        .iter()
        .map(|m| hpcscope_mix::node(m).unwrap())
        .collect();
    let stream = common::two_thread_stream(60_000);
    for (placement, distinct) in [(Placement::Compact, 6), (Placement::Scatter, 7)] {
        let d = hpcscope_mix::Distinct::new(&nodes, &placement);
        assert_eq!(d.nodes.len(), distinct, "{placement:?}: {:?}", d.of);
        let together = hpcscope_mix::replay_stream(&stream[..], nodes.clone(), &placement).unwrap();
        assert_eq!(together.caches.len(), nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            let alone =
                hpcscope_mix::replay_stream(&stream[..], vec![n.clone()], &placement).unwrap();
            assert_eq!(together.records, alone.records);
            assert_eq!(
                together.caches[i], alone.caches[0],
                "{} {placement:?}",
                n.name
            );
            assert_eq!(
                together.thread_caches[i], alone.thread_caches[0],
                "{} {placement:?}",
                n.name
            );
            assert_eq!(together.caches[i].name, n.name);
        }
    }
}
