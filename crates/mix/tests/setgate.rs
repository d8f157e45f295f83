//! Set sampling with the plugin's gate (`sample=`): the plugin leaves the accesses to
//! unsampled classes out of the stream, and the sampled simulation gives exactly what it
//! gives when every access is streamed and the reader drops them.

mod common;
use hpcscope_test_support::build_plugin;

use std::path::Path;
use std::process::Command;

use hpcscope_mix::QemuEngine;
use hpcscope_mix::engine::{Ending, PluginOutput};
use hpcscope_mix::run::{self, Outcome, Request};
use hpcscope_mix::{Arch, Placement, SampleSpec};

const KERNEL: &str = include_str!("data/gate.c");

/// A stream, and 8-byte loads across two 64-byte lines (a 64-byte aligned buffer).
const CROSSING: &str = r#"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    double *a = malloc(n * sizeof *a);
    unsigned char *bytes;
    if (!a || posix_memalign((void **)&bytes, 64, n * 64 + 64))
        return 1;
    memset(bytes, 1, n * 64 + 64);
    for (long i = 0; i < n; i++)
        a[i] = (double)i;
    uint64_t t = 0;
    for (int rep = 0; rep < 3; rep++) {
        for (long i = 0; i < n; i++)
            a[i] = a[i] * 0.5 + 1.0;
        for (long i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, bytes + i * 64 + 60, sizeof v);
            t += v;
        }
    }
    printf("%g %llu\n", a[n / 2], (unsigned long long)t);
    return 0;
}
"#;

/// AVX-512 on zmm registers: unaligned 64-byte loads (each across two lines), masked
/// loads and stores of a tail, a gather and a scatter; the masked moves and the gather's and
/// scatter's elements are written by the client's clean calls, not by inline code.
const AVX512: &str = r#"
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100003;
    double *a, *b;
    if (posix_memalign((void **)&a, 64, (n + 16) * sizeof *a)
        || posix_memalign((void **)&b, 64, (n + 16) * sizeof *b))
        return 1;
    for (long i = 0; i < n + 16; i++)
        a[i] = (double)i, b[i] = 1.0;
    __m512d s = _mm512_setzero_pd();
    for (int rep = 0; rep < 3; rep++) {
        long i = 0;
        /* b + 1: every load spans two lines. */
        for (; i + 8 <= n; i += 8)
            _mm512_storeu_pd(a + i, _mm512_fmadd_pd(_mm512_loadu_pd(b + 1 + i),
                                                    _mm512_set1_pd(0.5), _mm512_loadu_pd(a + i)));
        __mmask8 m = (__mmask8)((1u << (n - i)) - 1);
        _mm512_mask_storeu_pd(a + i, m, _mm512_maskz_loadu_pd(m, b + i));
        /* Gathers and scatters 8 elements 1031 doubles apart, over the array. */
        for (long j = 0; j + 8 * 1031 < n; j += 97) {
            __m256i v = _mm256_add_epi32(_mm256_set1_epi32((int)j),
                                         _mm256_mullo_epi32(_mm256_set1_epi32(1031),
                                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
            __m512d g = _mm512_i32gather_pd(v, a, 8);
            s = _mm512_add_pd(s, g);
            _mm512_mask_i32scatter_pd(b, (__mmask8)0x5b, v, g, 8);
        }
    }
    printf("%g\n", _mm512_reduce_add_pd(s));
    return 0;
}
"#;

/// A gated (`sample=` given to the engine) and a whole run (`gated`, then whole) of `bin`
/// under `engine`, sampled one class in 8 on `nodes`, both finished.
fn gated_and_whole(
    engine: &dyn hpcscope_mix::Engine,
    bin: &Path,
    args: &[&str],
    nodes: &[hpcscope_cachesim::NodeConfig],
    env: &[(&str, &str)],
) -> (Outcome, Outcome) {
    let run = |gate: bool| {
        let o = run::run(
            engine,
            &Request {
                program: bin.to_path_buf(),
                args: args.iter().map(|a| a.to_string()).collect(),
                arch: Arch::X86_64,
                static_binary: false,
                sve_bits: None,
                regions: Vec::new(),
                scopes: Vec::new(),
                nodes: nodes.to_vec(),
                placement: Placement::Compact,
                env: env
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                tbs: false,
                timeout: None,
                sample: Some(SampleSpec::sets(8).unwrap()),
                stream_gate: gate,
            },
        )
        .unwrap();
        assert_eq!(o.ending, Ending::Success, "{}", o.stderr_tail);
        o
    };
    (run(true), run(false))
}

/// The counts of a gated and a whole run that must agree whatever the engine: the gate
/// thinned the stream by half at least, and the accesses (those left out included), FLOPs
/// and bytes loaded are the same. Returns the two runs' counts.
fn same_accesses<'a>(gated: &'a Outcome, all: &'a Outcome) -> (&'a PluginOutput, &'a PluginOutput) {
    let (cg, ca) = (gated.counts.as_ref().unwrap(), all.counts.as_ref().unwrap());
    let (wg, wa) = (
        cg.mem_stream.as_ref().unwrap().records,
        ca.mem_stream.as_ref().unwrap().records,
    );
    assert!(wg * 2 < wa, "records written: gated {wg}, all {wa}");
    // Accesses, those left out by the gate included.
    assert_eq!(gated.records, all.records);
    assert_eq!(cg.totals.flops, ca.totals.flops);
    assert_eq!(cg.totals.bytes_loaded, ca.totals.bytes_loaded);
    (cg, ca)
}

#[test]
fn gating_in_the_plugin_gives_the_reader_gated_result_exactly() {
    if !common::qemu_and_gcc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = common::gcc(dir.path(), "gate", KERNEL, &["-O2", "-march=x86-64"]) else {
        eprintln!("skipping: gcc cannot build the test program");
        return;
    };
    // 64, 256 and 64 classes; 64-, 64- and 256-byte lines: the plugin's classes are
    // 64-byte lines mod 256.
    let nodes: Vec<_> = ["cascadelake-8260", "graviton2", "a64fx"]
        .iter()
        .map(|id| hpcscope_mix::node(&hpcscope_core::library::builtin(id).unwrap()).unwrap())
        .collect();
    let qemu = QemuEngine::new("qemu-x86_64".into(), build_plugin());
    let (gated, all) = gated_and_whole(&qemu, &bin, &["100000"], &nodes, &[]);
    // About a quarter of the accesses are in a class one of the machines samples.
    let (cg, ca) = same_accesses(&gated, &all);
    // Instruction counts differ by a few tens between any two emulations of a program.
    let (ig, ia) = (cg.totals.instructions, ca.totals.instructions);
    assert!(ig.abs_diff(ia) * 100_000 < ia, "instructions {ig} and {ia}");
    for (k, (g, a)) in gated.caches.iter().zip(&all.caches).enumerate() {
        assert!(a.levels.iter().all(|l| l.hits + l.misses > 0), "{a:?}");
        for (lg, la) in g.levels.iter().zip(&a.levels) {
            assert_eq!(
                (lg.hits, lg.misses, lg.bytes_served, lg.writebacks),
                (la.hits, la.misses, la.bytes_served, la.writebacks),
                "node {k} {}",
                lg.name
            );
        }
        assert_eq!(g.memory.bytes_served, a.memory.bytes_served, "node {k}");
    }
    let (sg, sa) = (gated.sampling.unwrap(), all.sampling.unwrap());
    assert_eq!(sg, sa);
}

/// `workloads/src/triad_omp.c` built with OpenMP into `dir` (None after a `skipping:` line
/// when gcc cannot build it).
fn triad_omp(dir: &Path) -> Option<std::path::PathBuf> {
    let bin = dir.join("triad_omp");
    let o = Command::new("gcc")
        .args(["-O3", "-std=gnu11", "-fopenmp", "-march=x86-64", "-o"])
        .arg(&bin)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads/src/triad_omp.c"))
        .arg("-lm")
        .output();
    match o {
        Ok(o) if o.status.success() => Some(bin),
        o => {
            let why = o.map_or_else(
                |e| e.to_string(),
                |o| String::from_utf8_lossy(&o.stderr).into_owned(),
            );
            eprintln!("skipping: gcc cannot build an OpenMP program: {why}");
            None
        }
    }
}

/// The hit ratio of level `level` of the first machine, percent.
fn hit_ratio(o: &Outcome, level: usize) -> f64 {
    let l = &o.caches[0].levels[level];
    l.hits as f64 / (l.hits + l.misses).max(1) as f64 * 100.0
}

/// Two guest threads: the gated stream carries a thread's batches with the counts of the
/// accesses left out, which the reader's pacer counts with the run, so that the threads
/// advance at the same rates as in the whole stream. The interleaving cannot be the
/// whole stream's exactly: a gated batch spans about `1/f` times the accesses of a whole
/// one (`f` the fraction kept), so the threads' turns fall at other places. The hit
/// ratios stay close (within a quarter of a point here; the test prints them).
#[test]
fn two_threads_gated_and_ungated_stay_close() {
    if !common::qemu_and_gcc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = triad_omp(dir.path()) else {
        return;
    };
    let nodes = vec![
        hpcscope_mix::node(&hpcscope_core::library::builtin("cascadelake-8260").unwrap()).unwrap(),
    ];
    let qemu = QemuEngine::new("qemu-x86_64".into(), build_plugin());
    let env = [("OMP_NUM_THREADS", "2"), ("OMP_WAIT_POLICY", "passive")];
    let (gated, all) = gated_and_whole(&qemu, &bin, &["1000000", "4"], &nodes, &env);
    for o in [&gated, &all] {
        assert_eq!(o.thread_caches[0].len(), 2);
    }
    for level in 0..3 {
        let (g, a) = (hit_ratio(&gated, level), hit_ratio(&all, level));
        println!("level {level}: gated {g:.3} %, ungated {a:.3} %");
        // Measured with this build: 0.001 points apart on each level.
        assert!(
            (g - a).abs() < 0.25,
            "level {level}: gated {g:.3} %, ungated {a:.3} %"
        );
    }
}

/// Two real threads under the native engine: each thread's left-out accesses are derived
/// from its own execution counters, the second thread's last ones when the process exits
/// (its exit event then runs on the main thread). The gated run accounts for every access
/// of the whole one (OpenMP's waiting differs from run to run by up to some 300 accesses in
/// 10 million: within 1 in 2,000, where a thread's last left-out accesses, lost, would typically be many thousands) and its
/// hit ratios stay close.
#[cfg(target_arch = "x86_64")]
#[test]
fn two_real_threads_gated_natively_account_for_every_access() {
    let Ok(engine) = hpcscope_mix::engine::native::NativeEngine::from_cache() else {
        println!("skipping: the native engine is not built (scripts/build-dynamorio.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = triad_omp(dir.path()) else {
        return;
    };
    let nodes = vec![
        hpcscope_mix::node(&hpcscope_core::library::builtin("cascadelake-8260").unwrap()).unwrap(),
    ];
    let env = [("OMP_NUM_THREADS", "2"), ("OMP_WAIT_POLICY", "passive")];
    let (gated, all) = gated_and_whole(&engine, &bin, &["1000000", "4"], &nodes, &env);
    for o in [&gated, &all] {
        assert_eq!(o.thread_caches[0].len(), 2);
    }
    let (g, a) = (gated.records, all.records);
    println!("accesses: gated {g}, whole {a}");
    assert!(g.abs_diff(a) * 2_000 <= a, "accesses: gated {g}, whole {a}");
    for level in 0..3 {
        let (rg, ra) = (hit_ratio(&gated, level), hit_ratio(&all, level));
        println!("level {level}: gated {rg:.3} %, whole {ra:.3} %");
        assert!(
            (rg - ra).abs() < 0.25,
            "level {level}: gated {rg:.3} %, whole {ra:.3} %"
        );
    }
}

/// The native engine's client gates in the instrumented code, before a record is written
/// (crates/dr-client/src/stream.rs): an access left out is not written, and what was left
/// out is derived with each batch from the blocks' execution counters. A gated and a whole
/// run make the same accesses, counted exactly; the simulated ones differ only where the program's stack sits (the client's
/// `sample=` argument lengthens the environment, which moves the stack a few bytes: with
/// address-space randomization off, two whole runs give the same results exactly), by a
/// handful of accesses. Its own kernel, [`CROSSING`], adds 8-byte loads at offset 60 of
/// 64-byte lines, each across two lines: a gate that looked at the first line's class alone
/// would leave out about one in nine of them (the second line's class sampled, not the
/// first's), some 33,000 of the 300,000 here.
#[cfg(target_arch = "x86_64")]
#[test]
fn gating_in_the_dynamorio_client_gives_the_reader_gated_result() {
    native_gate_agrees(
        "crossing",
        CROSSING,
        &["-O2", "-march=x86-64"],
        &["cascadelake-8260", "graviton2", "a64fx"],
        "100000",
    );
}

/// The same with AVX-512 code ([`AVX512`]): zmm loads across lines, masked tail moves, a
/// gather and a scatter (masked), whose records the client writes from clean calls and
/// gates as it writes them. Needs a CPU with AVX-512.
#[cfg(target_arch = "x86_64")]
#[test]
fn gating_in_the_dynamorio_client_holds_for_avx512_masked_moves_gathers_and_scatters() {
    if !std::arch::is_x86_feature_detected!("avx512f") {
        println!("skipping: this CPU has no AVX-512");
        return;
    }
    native_gate_agrees(
        "avx512",
        AVX512,
        &["-O2", "-march=x86-64-v4"],
        &["cascadelake-8260", "graviton2"],
        "100003",
    );
}

/// `src` built by gcc with `flags`, run gated and whole by the native engine (address-space
/// randomization off) and sampled on `machines`: the same accesses, instructions, FLOPs and
/// bytes, and the simulated accesses and hits of every level within 64 (or 1e-4).
#[cfg(target_arch = "x86_64")]
fn native_gate_agrees(name: &str, src: &str, flags: &[&str], machines: &[&str], arg: &str) {
    let Ok(engine) = hpcscope_mix::engine::native::NativeEngine::from_cache() else {
        println!("skipping: the native engine is not built (scripts/build-dynamorio.sh)");
        return;
    };
    if !hpcscope_test_support::have("gcc") {
        println!("skipping: needs gcc");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = common::gcc(dir.path(), name, src, flags) else {
        eprintln!("skipping: gcc cannot build the test program");
        return;
    };
    // SAFETY: a flag of this process's personality, inherited by the programs it starts;
    // nothing else reads it here.
    unsafe { libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong) };
    let nodes: Vec<_> = machines
        .iter()
        .map(|id| hpcscope_mix::node(&hpcscope_core::library::builtin(id).unwrap()).unwrap())
        .collect();
    let (gated, all) = gated_and_whole(&engine, &bin, &[arg], &nodes, &[]);
    let (cg, ca) = same_accesses(&gated, &all);
    assert_eq!(cg.totals.instructions, ca.totals.instructions);
    assert_eq!(cg.totals.bytes_stored, ca.totals.bytes_stored);
    for (k, (g, a)) in gated.caches.iter().zip(&all.caches).enumerate() {
        assert!(a.levels.iter().all(|l| l.hits + l.misses > 0), "{a:?}");
        for (lg, la) in g.levels.iter().zip(&a.levels) {
            let (n, m) = (lg.hits + lg.misses, la.hits + la.misses);
            // Measured: at most 16 apart (two accesses, at 1 in 8 simulated).
            let tolerance = 64.max(m / 10_000);
            println!("node {k} {}: gated {n} accesses, whole {m}", lg.name);
            assert!(
                n.abs_diff(m) <= tolerance && lg.hits.abs_diff(la.hits) <= tolerance,
                "node {k} {}: gated {:?}, whole {:?}",
                lg.name,
                (lg.hits, lg.misses),
                (la.hits, la.misses)
            );
        }
    }
}
