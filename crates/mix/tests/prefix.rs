//! Machines whose first cache levels are the same (private, non-inclusive) simulate those
//! levels once (`SharedNodes`): on a recorded stream of two threads, replayed on the
//! bundled machines together, every machine's counters (all threads and per thread) are
//! those of its simulation alone, with the compact and the scatter placement, on the
//! reading thread and on two workers (whole machines per worker).

mod common;

use std::sync::Mutex;

use hpcscope_cachesim::{PackedAccess, Placement, SharedNodes};
use hpcscope_plugin_format::marker_thread;

/// The variables are the process's: one test sets them at a time.
static ENV: Mutex<()> = Mutex::new(());

/// `common::two_thread_stream` with, every 7th access, a 16-byte access that straddles two
/// lines (a load or a store), so that split accesses reach the shared levels too.
fn stream_with_splits(n: u64) -> Vec<u8> {
    let base = common::two_thread_stream(n);
    let mut s = base[..8].to_vec();
    for (i, r) in base[8..].chunks_exact(8).enumerate() {
        let v = u64::from_le_bytes(r.try_into().expect("8 bytes"));
        if marker_thread(v).is_some() || i % 7 != 3 {
            s.extend_from_slice(r);
            continue;
        }
        let addr = (v & ((1 << 56) - 1)) | 0x38;
        let a = PackedAccess::new(addr, 16, v >> 63 == 1).expect("small address");
        s.extend_from_slice(&a.0.to_le_bytes());
    }
    s
}

#[test]
fn machines_share_their_common_first_levels_and_count_what_each_counts_alone() {
    let _g = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let ids = [
        "cascadelake-8260",
        "a64fx-node",
        "a64fx",
        "epi-like",
        "graviton2",
        "graviton3",
        "neoverse-n1",
        "thunderx2",
    ];
    let nodes: Vec<_> = ids
        .iter()
        .map(|id| hpcscope_mix::node(&hpcscope_core::library::builtin(id).unwrap()).unwrap())
        .collect();
    let stream = stream_with_splits(60_000);
    for placement in [Placement::Compact, Placement::Scatter] {
        let d = hpcscope_mix::Distinct::new(&nodes, &placement);
        let shared = SharedNodes::new(&d.nodes, &placement).unwrap();
        let alone_levels: usize = d.nodes.iter().map(|n| n.levels.len()).sum();
        // Cascade Lake and ThunderX2 share L1, Graviton 2, EPI-like and Neoverse N1 L1 and
        // L2; with scatter, which places threads by the node's cores, only the two 64-core
        // nodes (Graviton 2 and EPI-like) share.
        let saved = match placement {
            Placement::Compact => 1 + 2 + 2,
            _ => 2,
        };
        assert_eq!(
            shared.level_simulations(),
            alone_levels - saved,
            "{placement:?}: {:?}",
            d.of
        );
        let alone: Vec<_> = nodes
            .iter()
            .map(|n| hpcscope_mix::replay_stream(&stream[..], vec![n.clone()], &placement).unwrap())
            .collect();
        for (workers, split) in [("1", "machines"), ("2", "machines")] {
            // SAFETY: ENV is held, and nothing else in this process reads the variables.
            unsafe {
                std::env::set_var("HPCSCOPE_SIM_WORKERS", workers);
                std::env::set_var("HPCSCOPE_SIM_SPLIT", split);
            }
            let together =
                hpcscope_mix::replay_stream(&stream[..], nodes.clone(), &placement).unwrap();
            // SAFETY: as above.
            unsafe {
                std::env::remove_var("HPCSCOPE_SIM_WORKERS");
                std::env::remove_var("HPCSCOPE_SIM_SPLIT");
            }
            for (i, n) in nodes.iter().enumerate() {
                let what = format!("{} {placement:?} workers {workers}", n.name);
                assert_eq!(together.records, alone[i].records, "{what}");
                assert!(together.caches[i].split_accesses > 0, "{what}");
                assert_eq!(together.caches[i], alone[i].caches[0], "{what}");
                assert_eq!(
                    together.thread_caches[i], alone[i].thread_caches[0],
                    "{what}"
                );
                assert_eq!(together.thread_caches[i].len(), 2, "{what}");
            }
        }
    }
}
