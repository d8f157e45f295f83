//! `mix` on programs with threads: one profile entry per thread, whose FLOPs and bytes are
//! the analytic split of a static schedule, and caches simulated as a node (a working set
//! that fits a shared level with one thread and not with two).
//!
//! Needs qemu-user and the compilers with OpenMP (and the plugin, built here with cargo);
//! without them each test prints one `skipping:` line.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use hpcscope_test_support::{build_plugin, have};

use hpcscope_core::Machine;
use hpcscope_mix::{MixOptions, MixReport, Placement, analyze};

fn ready(tools: &[&str]) -> bool {
    for tool in tools {
        if !have(tool) {
            println!(
                "skipping: {tool} is not installed (apt-get install qemu-user gcc gcc-aarch64-linux-gnu)"
            );
            return false;
        }
    }
    // SAFETY: set once, before any analysis in this process reads it.
    unsafe { std::env::set_var(hpcscope_mix::tools::PLUGIN_ENV, build_plugin()) };
    true
}

/// Compiles `workloads/src/<src>` with OpenMP; `None` (with a `skipping:` line) when the
/// compiler has no OpenMP runtime.
fn compile_omp(cc: &str, dir: &Path, src: &str, out: &str, flags: &[&str]) -> Option<PathBuf> {
    let exe = dir.join(out);
    let o = Command::new(cc)
        .args(["-O3", "-std=gnu11", "-fopenmp"])
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../workloads/src")
                .join(src),
        )
        .arg("-lm")
        .output()
        .expect("run the compiler");
    if !o.status.success() {
        let e = String::from_utf8_lossy(&o.stderr);
        if e.contains("gomp") || e.contains("omp.h") {
            println!("skipping: {cc} has no OpenMP runtime (libgomp): {e}");
            return None;
        }
        panic!("{cc} failed: {e}");
    }
    Some(exe)
}

fn omp_env(t: u32) -> Vec<(String, String)> {
    vec![
        ("OMP_NUM_THREADS".into(), t.to_string()),
        ("OMP_WAIT_POLICY".into(), "passive".into()),
    ]
}

const N: u64 = 1 << 17;
const REPS: u64 = 2;

/// Each of the T threads of the static schedule does N/T elements: 2 FLOPs and 24 bytes
/// each, per repetition; the profile's entry of each thread says so within 0.1 % (the bytes
/// also hold each call's few bytes of stack).
fn check_split(r: &MixReport, threads: u32, what: &str) {
    for v in &r.variants {
        let p = &v.profiles[0];
        let ths = &p.regions[0].threads;
        assert_eq!(ths.len(), threads as usize, "{what}: {:?}", v.sve_bits);
        let per = (N / u64::from(threads)) as f64 * REPS as f64;
        for t in ths {
            let bytes: f64 = t
                .memory
                .bytes_per_level
                .iter()
                .flatten()
                .map(|b| b.bytes)
                .sum();
            println!(
                "{what} {:?} thread {}: {} FLOPs, {bytes} bytes",
                v.sve_bits, t.thread, t.flops
            );
            assert!(
                (t.flops - 2.0 * per).abs() <= 1e-3 * 2.0 * per,
                "{what} {:?} thread {}: {} FLOPs, want {}",
                v.sve_bits,
                t.thread,
                t.flops,
                2.0 * per
            );
            assert!(
                (bytes - 24.0 * per).abs() <= 1e-3 * 24.0 * per,
                "{what} {:?} thread {}: {bytes} bytes, want {}",
                v.sve_bits,
                t.thread,
                24.0 * per
            );
        }
    }
}

#[test]
fn openmp_triad_profile_has_the_static_split_x86_64() {
    if !ready(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, flags) in [
        ("sse2", &["-march=x86-64"][..]),
        ("avx2", &["-march=x86-64-v3"][..]),
    ] {
        let Some(bin) = compile_omp("gcc", dir.path(), "triad_omp.c", name, flags) else {
            return;
        };
        for t in [2u32, 4] {
            let r = analyze(&MixOptions {
                run: hpcscope_mix::RunSpec {
                    program: bin.clone(),
                    args: vec![N.to_string(), REPS.to_string()],
                    functions: vec!["kernel_triad_omp._omp_fn.0".into()],
                    env: omp_env(t),
                    ..Default::default()
                },
                machines: vec![hpcscope_core::library::builtin("graviton3").expect("built-in")],
                ..Default::default()
            })
            .expect("mix");
            check_split(&r, t, name);
            // Compact: thread t on core t of the node.
            let tc = &r.variants[0].thread_caches[0];
            assert_eq!(
                tc.iter().map(|x| (x.thread, x.core)).collect::<Vec<_>>(),
                (0..t).map(|x| (x, x)).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn openmp_triad_profile_has_the_static_split_sve() {
    if !ready(&["qemu-aarch64", "aarch64-linux-gnu-gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let cc = "aarch64-linux-gnu-gcc";
    let Some(sve) = compile_omp(
        cc,
        dir.path(),
        "triad_omp.c",
        "sve",
        &["-march=armv8.2-a+sve", "-static"],
    ) else {
        return;
    };
    let Some(neon) = compile_omp(
        cc,
        dir.path(),
        "triad_omp.c",
        "neon",
        &["-march=armv8-a", "-static"],
    ) else {
        return;
    };
    let r = analyze(&MixOptions {
        run: hpcscope_mix::RunSpec {
            program: sve,
            args: vec![N.to_string(), REPS.to_string()],
            functions: vec!["kernel_triad_omp._omp_fn.0".into()],
            // QEMU 7.2 does not report SVE accesses: the NEON build's stand for them.
            env: omp_env(2),
            ..Default::default()
        },
        sve_bits: vec![128, 256, 512, 1024, 2048],
        machines: vec![hpcscope_core::library::builtin("a64fx-node").expect("built-in")],
        cache_binary: Some(neon),
        ..Default::default()
    })
    .expect("mix");
    assert_eq!(r.variants.len(), 5);
    check_split(&r, 2, "sve");
}

/// A node of 2 cores (or 4, in pairs), private 32 KiB L1 and 256 KiB L2, and a 4 MiB L3
/// shared by each pair of cores.
fn small_node(cores: u32) -> Machine {
    let toml = format!(
        r#"
format_version = 1
id = "pair-l3"
name = "cores in pairs sharing a 4 MiB L3"
isa = "x86_64"
simd = "avx2"
vector_bits = 256
fma = true
sockets = 1
cores_per_socket = {cores}
provenance = "test"
[[peaks]]
precision = "f64"
core_gflops = 10.0
provenance = "test"
[[levels]]
name = "L1"
kind = "cache"
core_gbs = 100.0
provenance = "test"
[levels.cache]
size_bytes = 32768
line_bytes = 64
associativity = 8
shared_by_cores = 1
[[levels]]
name = "L2"
kind = "cache"
core_gbs = 50.0
provenance = "test"
[levels.cache]
size_bytes = 262144
line_bytes = 64
associativity = 8
shared_by_cores = 1
[[levels]]
name = "L3"
kind = "cache"
core_gbs = 30.0
provenance = "test"
[levels.cache]
size_bytes = 4194304
line_bytes = 64
associativity = 16
shared_by_cores = 2
[[levels]]
name = "MM"
kind = "memory"
core_gbs = 10.0
provenance = "test"
"#
    );
    Machine::from_toml_str(&toml, "test machine").expect("valid machine")
}

/// The L3 hit ratio of each thread: bytes L3 served over those that reached it.
fn l3_ratios(r: &MixReport) -> Vec<f64> {
    r.variants[0].profiles[0].regions[0]
        .threads
        .iter()
        .map(|t| {
            let b = t.memory.bytes_per_level.as_ref().expect("bytes per level");
            let get = |n: &str| b.iter().find(|x| x.level == n).map_or(0.0, |x| x.bytes);
            get("L3") / (get("L3") + get("MM"))
        })
        .collect()
}

/// Weak scaling of the OpenMP triad: 3 MiB per thread over 4 repetitions. One thread fits
/// the 4 MiB L3: after the first sweep its lines come from L3 (3 of 4 sweeps: 0.75). Two
/// threads on cores sharing it sweep 6 MiB between two uses of a line: it misses (each
/// repetition ends at a barrier, and the reader paces the threads to equal rates). In
/// practice about 1e-5; a host that stalls one of QEMU's threads for more than a second
/// lets the other run a repetition alone, and some of its lines hit (about 0.07 for such a
/// run before the pacing knew when threads start): the bound is 0.1. Scattered on cores
/// that do not share an L3, each thread fits again.
#[test]
fn a_working_set_that_fits_the_shared_l3_alone_misses_with_two_threads() {
    if !ready(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(bin) = compile_omp(
        "gcc",
        dir.path(),
        "triad_omp.c",
        "triad",
        &["-march=x86-64"],
    ) else {
        return;
    };
    let per_thread = (3 << 20) / 24u64;
    let run = |threads: u32, cores: u32, placement: Placement| {
        analyze(&MixOptions {
            run: hpcscope_mix::RunSpec {
                program: bin.clone(),
                args: vec![(per_thread * u64::from(threads)).to_string(), "4".into()],
                functions: vec!["kernel_triad_omp._omp_fn.0".into()],
                env: omp_env(threads),
                placement,
                ..Default::default()
            },
            machines: vec![small_node(cores)],
            ..Default::default()
        })
        .expect("mix")
    };
    let one = l3_ratios(&run(1, 2, Placement::Compact));
    let two = l3_ratios(&run(2, 2, Placement::Compact));
    let apart = l3_ratios(&run(2, 4, Placement::Scatter));
    println!("L3 hit ratio: one thread {one:?}, two sharing {two:?}, two apart {apart:?}");
    assert_eq!(one.len(), 1);
    assert!((one[0] - 0.75).abs() < 0.02, "{one:?}");
    assert_eq!(two.len(), 2);
    assert!(two.iter().all(|r| *r < 0.1), "{two:?}");
    assert!(apart.iter().all(|r| (r - 0.75).abs() < 0.02), "{apart:?}");
}
