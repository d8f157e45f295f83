//! What `mix` reports from the plugin: the cache simulation sees exactly the counted bytes,
//! and counts come per guest thread.
//!
//! Before, an AVX2 build with scalar FMAs on memory operands was simulated with 16-byte
//! accesses for 8-byte operands (+40 % simulated bytes) and every AVX2 run said "simulated
//! bytes differ from counted bytes"; `rep stosb` counted no bytes; two threads lost counts.
//!
//! Needs qemu-user, gcc and the plugin (built here with cargo); without them each test
//! prints one `skipping:` line.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use hpcscope_test_support::{build_plugin, have};

use hpcscope_mix::{MixOptions, analyze};

fn ready() -> bool {
    for tool in ["qemu-x86_64", "gcc"] {
        if !have(tool) {
            println!("skipping: {tool} is not installed (apt-get install qemu-user gcc)");
            return false;
        }
    }
    // SAFETY: set once, before any analysis in this process reads it.
    unsafe { std::env::set_var(hpcscope_mix::tools::PLUGIN_ENV, build_plugin()) };
    true
}

fn workload(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../workloads/src")
        .join(name)
}

fn compile(dir: &Path, src: &str, flags: &[&str]) -> PathBuf {
    let out = dir.join(src.trim_end_matches(".c"));
    let o = Command::new("gcc")
        .args(["-std=gnu11"])
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(workload(src))
        .arg("-lm")
        .output()
        .expect("run gcc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn machines() -> Vec<hpcscope_core::Machine> {
    vec![hpcscope_core::library::builtin("cascadelake-8260").expect("built-in machine")]
}

/// Bytes the simulation served, all levels.
fn simulated(r: &hpcscope_mix::MixReport) -> u64 {
    let st = &r.variants[0].caches[0];
    st.levels.iter().map(|l| l.bytes_served).sum::<u64>() + st.memory.bytes_served
}

#[test]
fn avx2_scalar_fma_is_simulated_with_its_operand_bytes() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    // Scalar FMAs with 8-byte memory operands, which QEMU 7.2 reads as 16 bytes.
    let bin = compile(
        dir.path(),
        "daxpy.c",
        &["-O2", "-march=x86-64-v3", "-fno-tree-vectorize"],
    );
    let r = analyze(&MixOptions {
        run: hpcscope_mix::RunSpec {
            program: bin,
            args: vec!["20000".into(), "2".into()],
            functions: vec!["kernel_daxpy".into()],
            ..Default::default()
        },
        machines: machines(),
        ..Default::default()
    })
    .expect("mix");
    let v = &r.variants[0];
    let t = &v.counts.totals;
    let counted = t.bytes_loaded + t.bytes_stored;
    println!(
        "counted {counted} bytes, simulated {}, notes {:?}",
        simulated(&r),
        v.profiles[0].notes
    );
    assert!(t.fma_instructions > 0, "no FMA in the kernel");
    // 24 bytes per element as written, y[i] = a * x[i] + y[i] (and a few bytes of stack per
    // call).
    let want = 24.0 * 20_000.0 * 2.0;
    assert!(
        (counted as f64 - want).abs() <= 1e-3 * want,
        "{counted} bytes"
    );
    assert_eq!(simulated(&r), counted);
    assert!(
        !v.profiles[0].notes.iter().any(|n| n.contains("differ")),
        "{:?}",
        v.profiles[0].notes
    );
}

#[test]
fn threads_are_reported_one_by_one() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = compile(dir.path(), "triad_pthreads.c", &["-O3", "-pthread"]);
    let n: u64 = 20_000;
    let r = analyze(&MixOptions {
        run: hpcscope_mix::RunSpec {
            program: bin,
            args: vec![n.to_string(), "2".into(), "4".into()],
            functions: vec!["kernel_triad_chunk".into()],
            ..Default::default()
        },
        machines: machines(),
        ..Default::default()
    })
    .expect("mix");
    let v = &r.variants[0];
    let per: Vec<(u32, u64)> = v
        .threads()
        .iter()
        .map(|t| (t.thread, t.totals.flops))
        .collect();
    println!("FLOPs per thread {per:?}");
    // The main thread waits; four workers do n/4 elements each, twice.
    assert_eq!(per.len(), 5);
    assert_eq!(per[0], (0, 0));
    for (i, &(thread, flops)) in per.iter().enumerate().skip(1) {
        assert_eq!((thread, flops), (i as u32, 2 * (n / 4) * 2));
    }
    assert_eq!(v.counts.totals.flops, 2 * n * 2);
    // One region (the function), with the same split.
    assert_eq!(v.regions().len(), 1);
    assert_eq!(v.regions()[0].totals.flops, v.counts.totals.flops);
    assert_eq!(v.regions()[0].threads.len(), 5);
    // The profile has one entry per thread: the counts and each thread's own bytes.
    let th = &v.profiles[0].regions[0].threads;
    assert_eq!(th.len(), 5);
    for (i, t) in th.iter().enumerate() {
        assert_eq!(t.thread, i as u32);
        let want_flops = if i == 0 { 0 } else { 2 * (n / 4) * 2 };
        assert_eq!(t.flops, want_flops as f64);
        let bytes: f64 = t
            .memory
            .bytes_per_level
            .iter()
            .flatten()
            .map(|b| b.bytes)
            .sum();
        let counted = &v.threads()[i].totals;
        assert_eq!(bytes, (counted.bytes_loaded + counted.bytes_stored) as f64);
        // 24 bytes per element as written (and a few bytes of stack per call).
        if i > 0 {
            let want = 24.0 * (n / 4) as f64 * 2.0;
            assert!((bytes - want).abs() <= 1e-3 * want, "thread {i}: {bytes}");
        }
    }
    assert_eq!(
        simulated(&r),
        v.counts.totals.bytes_loaded + v.counts.totals.bytes_stored
    );
    // The simulation saw each thread's accesses on a core of its own.
    let tc = &v.thread_caches[0];
    assert_eq!(
        tc.iter().map(|t| (t.thread, t.core)).collect::<Vec<_>>(),
        (1..5).map(|t| (t, t)).collect::<Vec<_>>()
    );
    for t in tc {
        let c = &v.threads()[t.thread as usize].totals;
        assert_eq!(t.stats.bytes, c.bytes_loaded + c.bytes_stored);
    }
}
