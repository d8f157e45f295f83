//! Exact SVE counts on QEMU 10 (plugin API v4): predicated instructions count their active
//! lanes and SVE loads and stores their active elements, so kernels whose loops end in a
//! partial vector count the source's FLOPs and bytes at every vector length.
//!
//! Cases (absolute counts of `region=kernel_<name>` against the analytic counts the program
//! prints, 0.1 %): `spmv` on a 5-point grid (rows of 3 to 5 non-zeros: one partial vector per
//! row at every length), and `triad` and `dot` with n = 4099 (a multiple of no vector's
//! lanes), at 128 to 2048 bits; the memory stream carries the counted bytes exactly.
//!
//! Needs QEMU 10 built by `scripts/build-qemu.sh` and aarch64-linux-gnu-gcc; without them the
//! test prints one `skipping:` line.

mod common;

use common::{compile, field, get, have, qemu10, range, run};

#[test]
fn sve_partial_vectors_count_exactly_on_qemu10() {
    if !have("aarch64-linux-gnu-gcc") {
        println!(
            "skipping: aarch64-linux-gnu-gcc not found (apt-get install gcc-aarch64-linux-gnu)"
        );
        return;
    }
    let Some(qemu) = qemu10("aarch64") else {
        println!("skipping: QEMU 10 (plugin API v4) is not built (scripts/build-qemu.sh)");
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    for (kernel, n, reps) in [
        ("spmv", "2500", "2"),
        ("triad", "4099", "2"),
        ("dot", "4099", "2"),
    ] {
        let bin = compile(
            "aarch64-linux-gnu-gcc",
            &["-O3", "-march=armv8.2-a+sve", "-static"],
            &format!("{kernel}.c"),
            dir.path(),
        );
        let region = format!("region={}", range(&bin, &format!("kernel_{kernel}")));
        for vl in [128u32, 256, 512, 1024, 2048] {
            let cpu = format!("max,sve-default-vector-length={}", vl / 8);
            let r = run(
                &[qemu.as_str(), "-cpu", &cpu],
                &region,
                &bin,
                &[n, reps],
                &[],
                true,
                dir.path(),
            );
            let t = &r.json["totals"];
            assert_eq!(r.json["predication"], "active_lanes", "{kernel} at {vl}");
            assert_eq!(r.json["plugin_api"], 4);
            let ctx = format!("{kernel} n={n} at {vl} bits");
            let flops = get(t, "flops") as f64;
            let bytes = (get(t, "bytes_loaded") + get(t, "bytes_stored")) as f64;
            let (want_flops, want_bytes) = (field(&r.stdout, "flops"), field(&r.stdout, "bytes"));
            println!(
                "{ctx}: flops {flops} (analytic {want_flops}, inactive lanes {}), bytes {bytes} (analytic {want_bytes})",
                get(t, "flops_inactive")
            );
            assert!(
                (flops - want_flops).abs() <= 1e-3 * want_flops,
                "{ctx}: flops {flops}, analytic {want_flops}"
            );
            assert!(
                (bytes - want_bytes).abs() <= 1e-3 * want_bytes,
                "{ctx}: bytes {bytes}, analytic {want_bytes}"
            );
            assert_eq!(get(t, "bytes_unreported"), 0, "{ctx}");
            // Every counted byte reached the memory stream.
            let (ld, st) = r.stream.expect("stream");
            assert_eq!(
                (ld, st),
                (get(t, "bytes_loaded"), get(t, "bytes_stored")),
                "{ctx}"
            );
            assert!(
                r.json.get("predicate_read_failures").is_none(),
                "{ctx}: {}",
                r.json
            );
        }
    }
}
