//! `mix` of an SVE build under QEMU 10 (plugin API v4), with no `--cache-binary`: the SVE
//! build's own accesses reach the cache simulation, one access per contiguous vector (the
//! plugin merges QEMU's per-element reports), so the simulated bytes are the counted bytes,
//! the lines moved do not depend on the vector length, and the accesses fall as it grows.
//!
//! Needs aarch64-linux-gnu-gcc and QEMU 10 from `scripts/build-qemu.sh` (the API v4 plugin
//! is built here with cargo); without them the test prints one `skipping:` line.

mod common;

use std::path::Path;
use std::process::Command;

use hpcscope_test_support::{build_plugin_v4, have};

use hpcscope_mix::{MixOptions, analyze};

#[test]
fn sve_triad_is_simulated_from_its_own_accesses_on_qemu10() {
    if !have("aarch64-linux-gnu-gcc") {
        println!(
            "skipping: aarch64-linux-gnu-gcc is not installed (apt-get install gcc-aarch64-linux-gnu)"
        );
        return;
    }
    let Some(q) = hpcscope_test_support::qemu10("aarch64") else {
        println!("skipping: QEMU 10 (plugin API v4) is not built (scripts/build-qemu.sh)");
        return;
    };
    // SAFETY: set once, before any analysis in this process reads them.
    unsafe {
        std::env::set_var(hpcscope_mix::tools::QEMU_ENV, &q);
        std::env::set_var(hpcscope_mix::tools::PLUGIN_ENV, build_plugin_v4());
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = dir.path().join("triad");
    let o = Command::new("aarch64-linux-gnu-gcc")
        .args(["-std=gnu11", "-O3", "-march=armv8.2-a+sve", "-static", "-o"])
        .arg(&bin)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads/src/triad.c"))
        .arg("-lm")
        .output()
        .expect("run aarch64-linux-gnu-gcc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (n, reps) = (32_768u64, 2u64);
    let r = analyze(&MixOptions {
        run: hpcscope_mix::RunSpec {
            program: bin,
            args: vec![n.to_string(), reps.to_string()],
            functions: vec!["kernel_triad".into()],
            ..Default::default()
        },
        sve_bits: vec![128, 512, 2048],
        machines: vec![hpcscope_core::library::builtin("a64fx").expect("built-in machine")],
        ..Default::default()
    })
    .expect("mix");
    let mut seen = Vec::new();
    for v in &r.variants {
        let t = &v.counts.totals;
        let counted = t.bytes_loaded + t.bytes_stored;
        let c = &v.caches[0];
        let simulated =
            c.levels.iter().map(|l| l.bytes_served).sum::<u64>() + c.memory.bytes_served;
        let l1 = &c.levels[0];
        println!(
            "SVE {:?}: counted {counted} bytes, simulated {simulated}, L1 line accesses {}, misses {}, notes {:?}",
            v.sve_bits, l1.accesses, l1.misses, v.profiles[0].notes
        );
        assert!(
            r.notes.iter().any(|n| n.contains("API v4")),
            "not counted with the API v4 plugin: {:?}",
            r.notes
        );
        assert!(
            v.profiles[0]
                .notes
                .iter()
                .any(|n| n.contains("active_lanes")),
            "{:?}",
            v.profiles[0].notes
        );
        // 24 bytes per element as written, all of them simulated.
        assert_eq!(counted, 24 * n * reps, "SVE {:?}", v.sve_bits);
        assert_eq!(simulated, counted, "SVE {:?}", v.sve_bits);
        seen.push((v.sve_bits, l1.accesses, l1.misses));
    }
    let [(_, a128, m128), (_, a512, m512), (_, a2048, m2048)] = seen[..] else {
        panic!("three variants expected: {seen:?}");
    };
    // One access per vector: 16 bytes at 128 bits, 64 at 512 (inside a 256-byte line, the
    // arrays being 64-byte aligned), 256 at 2048 (one or two lines).
    assert_eq!(a128, 3 * n / 2 * reps);
    assert_eq!(a512, 3 * n / 8 * reps);
    assert!(
        (3 * n / 32 * reps..=3 * n / 16 * reps).contains(&a2048),
        "{a2048} line accesses at 2048 bits"
    );
    // The same lines move at every length.
    assert_eq!((m128, m512), (m2048, m2048));
}
