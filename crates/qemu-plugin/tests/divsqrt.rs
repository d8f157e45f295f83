//! Divides and square roots per precision and width (`div` and `sqrt` of each `fp_by_width`
//! bucket), against the analytic counts of the bundled kernels: `workloads/src/nbody.c`
//! does exactly one square root and one divide per ordered pair of bodies (n * n per
//! step), none outside its inner loop; the triad divides nothing.
//!
//! The builds keep the inner loop scalar (its sums are not reordered without
//! `-ffast-math`): SSE2 (`sqrtsd`, `divsd`), AVX2 (`vsqrtsd`, `vdivsd`), single precision
//! (`sqrtss`, `divss`) and AArch64 (`fsqrt`, `fdiv`). Each is counted on QEMU 7.2 (plugin API
//! v1) and on QEMU 10 (API v4) where each is present.
//!
//! Needs qemu-user and the compilers; without them each test prints one `skipping:` line.

mod common;

use std::path::Path;

use common::{compile, get, qemus, range, run, tools};
use serde_json::Value;

const N: u64 = 300;
const REPS: u64 = 3;

/// (divides, square roots) of each `fp_by_width` bucket that has any, in name order.
fn div_sqrt(totals: &Value) -> Vec<(String, u64, u64)> {
    let by_width = totals["fp_by_width"]
        .as_object()
        .unwrap_or_else(|| panic!("no fp_by_width in {totals}"));
    by_width
        .iter()
        .map(|(k, w)| {
            let n = |f: &str| w.get(f).map_or(0, |v| v.as_u64().expect("a count"));
            (k.clone(), n("div"), n("sqrt"))
        })
        .filter(|(_, d, s)| d + s > 0)
        .collect()
}

/// Counts `kernel_{kernel}` of `bin` (arguments N REPS) on each emulator and checks that
/// its divides and square roots are `want` (bucket, div, sqrt), and that they add up to
/// `divsqrt_instructions`.
fn check(qemus: &[Vec<&str>], bin: &Path, kernel: &str, want: &[(&str, u64, u64)], dir: &Path) {
    let region = format!("region={}", range(bin, &format!("kernel_{kernel}")));
    let want: Vec<(String, u64, u64)> = want
        .iter()
        .map(|&(k, d, s)| (k.to_string(), d, s))
        .collect();
    for qemu in qemus {
        let r = run(
            qemu,
            &region,
            bin,
            &[&N.to_string(), &REPS.to_string()],
            &[],
            false,
            dir,
        );
        let t = &r.json["totals"];
        let got = div_sqrt(t);
        println!(
            "{kernel} {} on {}: (bucket, div, sqrt) {got:?}, expected {want:?}",
            bin.file_name().and_then(|f| f.to_str()).unwrap_or("?"),
            qemu[0]
        );
        assert_eq!(got, want, "{kernel} {} on {}: {t}", bin.display(), qemu[0]);
        let sum: u64 = got.iter().map(|(_, d, s)| d + s).sum();
        assert_eq!(get(t, "divsqrt_instructions"), sum, "{t}");
        // The same per thread and in the region's own totals.
        assert_eq!(div_sqrt(&r.json["threads"][0]["totals"]), want);
        assert_eq!(div_sqrt(&r.json["regions"][0]["totals"]), want);
    }
}

#[test]
fn nbody_divides_and_takes_square_roots_once_per_pair_and_triad_never() {
    if !tools(&["gcc"]) {
        return;
    }
    let names = qemus("x86_64");
    let qemu: Vec<Vec<&str>> = names
        .iter()
        .map(|q| vec![q.as_str(), "-cpu", "max"])
        .collect();
    if qemu.is_empty() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let pairs = N * N * REPS;
    for (flags, bucket) in [
        (&["-O2", "-march=x86-64"][..], "f64_scalar"),
        (&["-O3", "-march=x86-64-v3"][..], "f64_scalar"),
        (&["-O2", "-march=x86-64", "-DREAL=float"][..], "f32_scalar"),
    ] {
        let bin = compile("gcc", flags, "nbody.c", dir.path());
        check(&qemu, &bin, "nbody", &[(bucket, pairs, pairs)], dir.path());
    }
    // Vectorized (f64_128, f64_256), and no divide in it.
    for march in ["-march=x86-64", "-march=x86-64-v3"] {
        let bin = compile("gcc", &["-O3", march], "triad.c", dir.path());
        check(&qemu, &bin, "triad", &[], dir.path());
    }
}

#[test]
fn aarch64_nbody_divides_and_takes_square_roots_once_per_pair() {
    if !tools(&["aarch64-linux-gnu-gcc"]) {
        return;
    }
    let names = qemus("aarch64");
    let qemu: Vec<Vec<&str>> = names.iter().map(|q| vec![q.as_str()]).collect();
    if qemu.is_empty() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let pairs = N * N * REPS;
    let bin = compile(
        "aarch64-linux-gnu-gcc",
        &["-O2", "-march=armv8-a", "-static"],
        "nbody.c",
        dir.path(),
    );
    check(
        &qemu,
        &bin,
        "nbody",
        &[("f64_scalar", pairs, pairs)],
        dir.path(),
    );
}
