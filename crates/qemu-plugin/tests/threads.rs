//! Counts do not depend on the number of guest threads, and each thread gets its own.
//!
//! The same triad runs with 1, 2 and 4 threads, OpenMP (`workloads/src/triad_omp.c`, static
//! schedule, the outlined `kernel_triad_omp._omp_fn.0` as the region) and POSIX threads
//! (`workloads/src/triad_pthreads.c`, `kernel_triad_chunk`), each 20 times: FLOPs and FP
//! instructions by width are identical in every run and equal the analytic count; the
//! bytes of the loop (the difference of two sizes, which removes each call's stack traffic)
//! are identical too. Per thread, the static schedule gives each of T threads n/T elements:
//! its FLOPs must be 2 n/T per repetition (0.1 %, exact in practice), for x86-64 and for SVE
//! at 128 to 2048 bits. Before per-thread counting, two threads lost 2.5 to 4 % of the
//! FLOPs of this triad, a different amount every run.
//!
//! Each test runs on QEMU 7.2 (plugin API v1) and QEMU 10 (API v4) where present, the
//! latter with fewer runs ([`RUNS_QEMU10`]), since QEMU 7.2's runs are the ones that
//! established the variability.
//!
//! Needs qemu-user and the compilers (with OpenMP); without them each test prints one
//! `skipping:` line.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{field, get, is_qemu10, qemus, range, run, tools, try_compile};
use serde_json::Value;

const RUNS: usize = 20;
/// Runs per thread count on QEMU 10.
const RUNS_QEMU10: usize = 4;

/// Runs per thread count on `qemu`.
fn runs(qemu: &str) -> usize {
    if is_qemu10(qemu) { RUNS_QEMU10 } else { RUNS }
}
const N: u64 = 8192;
const REPS: u64 = 2;

/// What must not change with the number of threads.
fn invariant(t: &Value) -> String {
    format!(
        "flops={} fp_instructions={} fp_by_width={}",
        t["flops"], t["fp_instructions"], t["fp_by_width"]
    )
}

struct Case<'a> {
    qemu: &'a [&'a str],
    bin: &'a Path,
    region: &'a str,
    /// Program arguments for `n` elements and `threads` threads.
    args: &'a dyn Fn(u64, u64) -> Vec<String>,
    env: &'a dyn Fn(u64) -> Vec<(&'static str, String)>,
    /// Threads that run the region, by thread number, for `threads` threads.
    workers: &'a dyn Fn(u64) -> Vec<u32>,
}

fn run_case(c: &Case, n: u64, threads: u64, dir: &Path) -> (Value, String) {
    run_case_stream(c, n, threads, false, dir).0
}

fn run_case_stream(
    c: &Case,
    n: u64,
    threads: u64,
    stream: bool,
    dir: &Path,
) -> ((Value, String), Option<(u64, u64)>) {
    let args = (c.args)(n, threads);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = (c.env)(threads);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = run(
        c.qemu,
        &format!("region={}", c.region),
        c.bin,
        &args,
        &env,
        stream,
        dir,
    );
    ((r.json, r.stdout), r.stream)
}

fn check(c: &Case, runs: usize, thread_counts: &[u64], dir: &Path) {
    let mut seen = BTreeSet::new();
    let mut loop_bytes = BTreeSet::new();
    for &t in thread_counts {
        for k in 0..runs {
            let (json, stdout) = run_case(c, N, t, dir);
            let totals = &json["totals"];
            assert_eq!(
                get(totals, "flops") as f64,
                field(&stdout, "flops"),
                "{t} threads, run {k}: {totals}"
            );
            seen.insert(invariant(totals));
            if k == 0 {
                // Per thread: n/T elements each for the threads that run the region.
                let workers = (c.workers)(t);
                let per: Vec<(u32, u64)> = json["threads"]
                    .as_array()
                    .expect("threads")
                    .iter()
                    .map(|th| (get(th, "thread") as u32, get(&th["totals"], "flops")))
                    .collect();
                println!("{} with {t} threads: FLOPs per thread {per:?}", c.region);
                let want = 2.0 * (N / t * REPS) as f64;
                for w in &workers {
                    let got = per.iter().find(|(n, _)| n == w).map_or(0, |p| p.1) as f64;
                    assert!(
                        (got - want).abs() <= 1e-3 * want,
                        "{t} threads: thread {w} counted {got} FLOPs, n/T gives {want} ({per:?})"
                    );
                }
                let others: u64 = per
                    .iter()
                    .filter(|(n, _)| !workers.contains(n))
                    .map(|p| p.1)
                    .sum();
                assert_eq!(others, 0, "threads outside the team counted FLOPs: {per:?}");
                // The loop's bytes: difference with twice the elements.
                let (big, _) = run_case(c, 2 * N, t, dir);
                let d = |k: &str| get(&big["totals"], k) - get(totals, k);
                let b = (d("bytes_loaded"), d("bytes_stored"));
                assert_eq!(b, (16 * N * REPS, 8 * N * REPS), "{t} threads: loop bytes");
                loop_bytes.insert(b);
                // The memory stream carries the counted bytes with threads too (QEMU runs
                // atomics in helpers then, whose accesses must not reach the region's
                // callbacks).
                let ((j, _), s) = run_case_stream(c, N, t, true, dir);
                let (ld, st) = s.expect("stream");
                let tt = &j["totals"];
                assert_eq!(
                    ld + st + get(tt, "bytes_unreported"),
                    get(tt, "bytes_loaded") + get(tt, "bytes_stored"),
                    "{t} threads: stream against counts {tt}"
                );
            }
        }
    }
    assert_eq!(
        seen.len(),
        1,
        "counts differ between runs or thread counts: {seen:?}"
    );
    assert_eq!(loop_bytes.len(), 1);
}

/// The OpenMP build, or a `skipping:` line when the compiler has no OpenMP runtime.
fn openmp(built: Result<std::path::PathBuf, String>) -> Option<std::path::PathBuf> {
    match built {
        Ok(b) => Some(b),
        Err(e) if e.contains("gomp") || e.contains("omp.h") => {
            println!("skipping: no OpenMP runtime for this compiler (libgomp): {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn omp_env(t: u64) -> Vec<(&'static str, String)> {
    vec![
        ("OMP_NUM_THREADS", t.to_string()),
        // Waiting threads sleep instead of spinning under emulation.
        ("OMP_WAIT_POLICY", "passive".to_string()),
    ]
}

#[test]
fn openmp_triad_x86_64() {
    if !tools(&["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(bin) = openmp(try_compile(
        "gcc",
        &["-O3", "-fopenmp"],
        "triad_omp.c",
        dir.path(),
    )) else {
        return;
    };
    let region = range(&bin, "kernel_triad_omp._omp_fn.0");
    for q in qemus("x86_64") {
        let case = Case {
            qemu: &[&q, "-cpu", "max"],
            bin: &bin,
            region: &region,
            args: &|n, _| vec![n.to_string(), REPS.to_string()],
            env: &omp_env,
            // The main thread is thread 0 of the team; libgomp starts T - 1 more.
            workers: &|t| (0..t as u32).collect(),
        };
        check(&case, runs(&q), &[1, 2, 4], dir.path());
    }
}

#[test]
fn pthreads_triad_x86_64() {
    if !tools(&["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = try_compile("gcc", &["-O3", "-pthread"], "triad_pthreads.c", dir.path())
        .unwrap_or_else(|e| panic!("{e}"));
    let region = range(&bin, "kernel_triad_chunk");
    for q in qemus("x86_64") {
        let case = Case {
            qemu: &[&q, "-cpu", "max"],
            bin: &bin,
            region: &region,
            args: &|n, t| vec![n.to_string(), REPS.to_string(), t.to_string()],
            env: &|_| Vec::new(),
            // Threads 1..=T do the work; the main thread waits.
            workers: &|t| (1..=t as u32).collect(),
        };
        check(&case, runs(&q), &[1, 2, 4], dir.path());
    }
}

/// SVE at 128 to 2048 bits: N is a multiple of every vector length times the threads, so no
/// thread has a partial last vector.
#[test]
fn openmp_triad_sve_per_thread() {
    if !tools(&["aarch64-linux-gnu-gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(bin) = openmp(try_compile(
        "aarch64-linux-gnu-gcc",
        &["-O3", "-march=armv8.2-a+sve", "-fopenmp", "-static"],
        "triad_omp.c",
        dir.path(),
    )) else {
        return;
    };
    let region = range(&bin, "kernel_triad_omp._omp_fn.0");
    for q in qemus("aarch64") {
        for vl in [128u32, 512, 2048] {
            let cpu = format!("max,sve-default-vector-length={}", vl / 8);
            let case = Case {
                qemu: &[&q, "-cpu", &cpu],
                bin: &bin,
                region: &region,
                args: &|n, _| vec![n.to_string(), REPS.to_string()],
                env: &omp_env,
                workers: &|t| (0..t as u32).collect(),
            };
            check(&case, 1, &[1, 2, 4], dir.path());
        }
    }
}
