//! The simulation spread over worker threads by set class gives, counter for counter, what
//! the reading thread alone gives: on a recorded stream of three threads, and in `mix`'s
//! report of a real program under QEMU (`HPCSCOPE_SIM_WORKERS` forces the workers; 1 is
//! the sequential simulation).
//!
//! The QEMU test needs qemu-x86_64 and gcc (and the plugin, built here with cargo); without
//! them it prints one `skipping:` line.

mod common;
use hpcscope_test_support::build_plugin;

use std::sync::Mutex;

use hpcscope_cachesim::{PackedAccess, Placement};
use hpcscope_mix::{MixOptions, analyze};
use hpcscope_plugin_format::{MAGIC, thread_marker};

/// The variables are the process's: one test sets them at a time.
static ENV: Mutex<()> = Mutex::new(());

fn with_workers<T>(workers: &str, split: &str, f: impl FnOnce() -> T) -> T {
    // SAFETY: the tests of this binary hold ENV while they set or read the variables, and
    // nothing else in this process reads them.
    unsafe {
        std::env::set_var("HPCSCOPE_SIM_WORKERS", workers);
        std::env::set_var("HPCSCOPE_SIM_SPLIT", split);
    }
    let r = f();
    // SAFETY: as above.
    unsafe {
        std::env::remove_var("HPCSCOPE_SIM_WORKERS");
        std::env::remove_var("HPCSCOPE_SIM_SPLIT");
    }
    r
}

/// Machines of 64-, 64- and 256-byte lines with 64, 256 and 64 classes of sets.
fn nodes() -> Vec<hpcscope_cachesim::NodeConfig> {
    ["cascadelake-8260", "graviton2", "a64fx"]
        .iter()
        .map(|id| hpcscope_mix::node(&hpcscope_core::library::builtin(id).unwrap()).unwrap())
        .collect()
}

/// A stream as the plugin writes it: three threads taking turns in batches, over a shared
/// 48 MiB array (beyond every last level) and private ones, with stores, repeated accesses
/// and accesses across lines.
fn stream() -> Vec<u8> {
    let mut s = MAGIC.to_vec();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for batch in 0..120u64 {
        let t = batch % 3;
        s.extend_from_slice(&thread_marker(t as u32).to_le_bytes());
        for i in 0..2000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let addr = match x % 4 {
                0 => 0x1000_0000 + (x >> 8) % (48 << 20),
                1 => 0x4000_0000 * (t + 1) + ((batch / 3) * 2000 + i) * 8 % (1 << 20),
                _ => 0x20_0000 + (x >> 16) % (64 << 10),
            };
            let size = 1u32 << ((x >> 40) % 6);
            let mut p = PackedAccess::new(addr, size, (x >> 50).is_multiple_of(4)).unwrap();
            if (addr & 63) + u64::from(size) * 2 <= 64 && (x >> 53).is_multiple_of(5) {
                p = p.with_count(2).unwrap();
            }
            s.extend_from_slice(&p.0.to_le_bytes());
        }
    }
    s
}

#[test]
fn a_replayed_stream_gives_the_same_counters_on_any_number_of_workers() {
    let _g = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let s = stream();
    let run = |workers: &str, split: &str, placement: &Placement| {
        with_workers(workers, split, || {
            let r = hpcscope_mix::replay_stream(&s[..], nodes(), placement).unwrap();
            (
                serde_json::to_string(&r.caches).unwrap(),
                serde_json::to_string(&r.thread_caches).unwrap(),
                r.records,
            )
        })
    };
    for placement in [Placement::Compact, Placement::Scatter] {
        let one = run("1", "sets", &placement);
        assert!(one.1.contains("\"thread\":2"), "three threads");
        for (workers, split) in [
            ("2", "sets"),
            ("3", "sets"),
            ("5", "sets"),
            ("3", "machines"),
        ] {
            assert_eq!(
                run(workers, split, &placement),
                one,
                "{workers} workers by {split}, {placement:?}"
            );
        }
    }
}

/// The set-sampled simulation spread over workers (each a group of the machines) gives,
/// counter for counter, what the reading thread alone gives: each machine's classes see the
/// same accesses in the same order. With skip records (a gated stream) too: they only add
/// to every group's totals.
#[test]
fn a_sampled_replay_gives_the_same_counters_on_any_number_of_workers() {
    let _g = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let mut gated = stream();
    // Thread 1 reports 5,000 accesses (40,000 bytes) left out by the producer's gate.
    gated.extend_from_slice(&thread_marker(1).to_le_bytes());
    gated.extend_from_slice(&hpcscope_plugin_format::skip_record(5000, false).to_le_bytes());
    gated.extend_from_slice(&hpcscope_plugin_format::skip_record(40_000, true).to_le_bytes());
    let spec = hpcscope_mix::SampleSpec::sets(8).unwrap();
    let mut records = Vec::new();
    for s in [stream(), gated] {
        let run = |workers: &str| {
            with_workers(workers, "sets", || {
                let (caches, threads, report) =
                    hpcscope_mix::replay_sampled(&s[..], nodes(), &Placement::Compact, spec)
                        .unwrap();
                (
                    serde_json::to_string(&caches).unwrap(),
                    serde_json::to_string(&threads).unwrap(),
                    serde_json::to_string(&report).unwrap(),
                )
            })
        };
        let one = run("1");
        assert!(
            one.2.contains("cascadelake-8260") && one.2.contains("a64fx"),
            "{}",
            one.2
        );
        for workers in ["2", "3", "4"] {
            assert_eq!(run(workers), one, "{workers} workers");
        }
        let report: serde_json::Value = serde_json::from_str(&one.2).unwrap();
        records.push(report["records"].as_u64().unwrap());
    }
    // The skip records' accesses are in the run's accesses.
    assert_eq!(records[1], records[0] + 5000, "{records:?}");
}

#[test]
fn a_bad_worker_count_is_refused_with_the_fix() {
    let _g = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let s = stream();
    for (workers, split, what) in [
        ("0", "sets", "HPCSCOPE_SIM_WORKERS='0'"),
        ("two", "sets", "HPCSCOPE_SIM_WORKERS='two'"),
        ("2", "lines", "HPCSCOPE_SIM_SPLIT='lines'"),
    ] {
        let e = with_workers(workers, split, || {
            hpcscope_mix::replay_stream(&s[..], nodes(), &Placement::Compact)
        })
        .expect_err(what)
        .to_string();
        assert!(e.contains(what) && e.contains("fix:"), "{e}");
    }
}

/// `mix` on a real program: the cache part of its JSON report (every machine's counters,
/// per thread, and the records read) is the same with the simulation on the reading
/// thread, cut by set class over 3 workers, and one machine per worker. (The rest of the
/// report holds times, and instruction counts that differ by a few tens between two
/// emulations.)
#[test]
fn mix_reports_the_same_caches_with_partitioning_on_and_off() {
    if !common::qemu_and_gcc() {
        return;
    }
    let _g = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = common::gcc(
        dir.path(),
        "gate",
        include_str!("data/gate.c"),
        &["-O2", "-march=x86-64"],
    ) else {
        println!("skipping: gcc cannot build the test program");
        return;
    };
    // SAFETY: set before any analysis in this process reads it, under ENV.
    unsafe { std::env::set_var(hpcscope_mix::tools::PLUGIN_ENV, build_plugin()) };
    let run = |workers: &str, split: &str| {
        let r = with_workers(workers, split, || {
            analyze(&MixOptions {
                run: hpcscope_mix::RunSpec {
                    program: bin.clone(),
                    args: vec!["100000".into()],
                    ..Default::default()
                },
                machines: ["cascadelake-8260", "graviton2", "a64fx"]
                    .iter()
                    .map(|id| hpcscope_core::library::builtin(id).unwrap())
                    .collect(),
                native_runs: 0,
                ..Default::default()
            })
            .expect("mix")
        });
        let v = &r.variants[0];
        // The program's loads across lines reach every machine (a64fx: 256-byte lines).
        assert!(
            v.caches.iter().all(|c| c.split_accesses > 0),
            "{:?}",
            v.caches
        );
        let json = serde_json::json!({
            "records": v.records,
            "caches": v.caches,
            "thread_caches": v.thread_caches,
        });
        serde_json::to_string_pretty(&json).unwrap()
    };
    // QEMU hands its environment to the guest: values of one length keep the guest's stack,
    // and so its stream, the same (a longer one moved an access across a line).
    let off = run("1", "    sets");
    assert_eq!(run("3", "    sets"), off, "cut by set class over 3 workers");
    assert_eq!(run("2", "machines"), off, "one machine per worker");
}
