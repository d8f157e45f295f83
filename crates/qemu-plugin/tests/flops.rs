//! FLOPs of builds of one source do not depend on the vector width: the SSE2 and AVX2 builds
//! (and AArch64 NEON) of the bundled CG solver, a dot product and a CSR SpMV count the
//! source's analytic FLOPs (0.1 %), with and without `-ffast-math` (which vectorizes the
//! reductions: one per row of the sparse matrix, where every lane of the reduction tail
//! used to count and the builds differed by up to 20 %), with GCC and clang. The rule is in
//! `docs/flop-counting.md`.
//!
//! Each build is counted on QEMU 7.2 (plugin API v1) and on QEMU 10 (API v4) where each is
//! present, with the same FLOPs.
//!
//! Needs qemu-user and the compilers; without them each test prints one `skipping:` line.

mod common;
use hpcscope_test_support::have;

use std::path::Path;

use common::{compile, field, get, qemus, range, run, tools};

/// The FLOPs of `kernel` built by `cc flags`, counted on each emulator in `qemus` (the
/// emulator, then its options) and equal on all of them.
fn check(
    qemus: &[Vec<&str>],
    cc: &str,
    flags: &[&str],
    kernel: &str,
    args: &[&str],
    dir: &Path,
) -> u64 {
    let bin = compile(cc, flags, &format!("{kernel}.c"), dir);
    let mut counts = Vec::new();
    for qemu in qemus {
        let r = run(
            qemu,
            &format!("region={}", range(&bin, &format!("kernel_{kernel}"))),
            &bin,
            args,
            &[],
            false,
            dir,
        );
        let want = field(&r.stdout, "flops");
        let got = get(&r.json["totals"], "flops");
        let rel = (got as f64 - want).abs() / want;
        println!(
            "{kernel} {cc} {flags:?} on {}: counted {got}, analytic {want} ({rel:.1e}), lane FLOPs left out {}",
            qemu[0],
            get(&r.json["totals"], "flops_excluded")
        );
        assert!(
            rel <= 1e-3,
            "{kernel} {cc} {flags:?} on {}: {got} FLOPs, the source has {want}",
            qemu[0]
        );
        counts.push(got);
    }
    assert!(
        counts.windows(2).all(|w| w[0] == w[1]),
        "{kernel} {cc} {flags:?}: the emulators count {counts:?}"
    );
    counts.first().copied().unwrap_or(0)
}

#[test]
fn sse2_and_avx2_builds_count_the_source_flops() {
    if !tools(&["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let names = qemus("x86_64");
    let qemu: Vec<Vec<&str>> = names
        .iter()
        .map(|q| vec![q.as_str(), "-cpu", "max"])
        .collect();
    if qemu.is_empty() {
        return;
    }
    // The repetitions are 1 for clang, which may compute a call with read-only arguments
    // once for all repetitions (the workloads' NOINLINE cannot stop it).
    let mut compilers = vec![("gcc", "4")];
    if have("clang") {
        compilers.push(("clang", "1"));
    } else {
        println!("skipping the clang builds: clang not found");
    }
    for (kernel, n) in [("cg", "2500"), ("dot", "5000"), ("spmv", "2500")] {
        for &(cc, reps) in &compilers {
            for fast in [false, true] {
                let mut counts = Vec::new();
                for march in ["-march=x86-64", "-march=x86-64-v3"] {
                    let mut flags = vec!["-O3", march];
                    if fast {
                        flags.push("-ffast-math");
                    }
                    // clang -ffast-math rewrites x * (a / b) in CG's update of p as
                    // x * a * (1 / b): a multiply the source does not have.
                    if kernel == "cg" && cc == "clang" && fast {
                        continue;
                    }
                    counts.push(check(&qemu, cc, &flags, kernel, &[n, reps], dir.path()));
                }
                if counts.len() == 2 {
                    assert_eq!(
                        counts[0], counts[1],
                        "{kernel} {cc}: SSE2 and AVX2 builds differ"
                    );
                }
            }
        }
    }
}

#[test]
fn neon_builds_count_the_source_flops() {
    if !tools(&["aarch64-linux-gnu-gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let names = qemus("aarch64");
    let qemu: Vec<Vec<&str>> = names.iter().map(|q| vec![q.as_str()]).collect();
    if qemu.is_empty() {
        return;
    }
    for (kernel, n) in [("cg", "2500"), ("dot", "5000")] {
        for fast in [false, true] {
            let mut flags = vec!["-O3", "-march=armv8-a", "-static"];
            if fast {
                flags.push("-ffast-math");
            }
            check(
                &qemu,
                "aarch64-linux-gnu-gcc",
                &flags,
                kernel,
                &[n, "4"],
                dir.path(),
            );
        }
    }
}
