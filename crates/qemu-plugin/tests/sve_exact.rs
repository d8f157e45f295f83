//! Exact SVE counts on QEMU 10 (plugin API v4): predicated instructions count their active
//! lanes and SVE loads and stores their active elements, so kernels whose loops end in a
//! partial vector count the source's FLOPs and bytes at every vector length.
//!
//! Cases (absolute counts of `region=kernel_<name>` against the analytic counts the program
//! prints, 0.1 %): `spmv` on a 5-point grid (rows of 3 to 5 non-zeros: one partial vector per
//! row at every length), and `triad` and `dot` with n = 4099 (a multiple of no vector's
//! lanes), at 128 to 2048 bits; the memory stream carries the counted bytes exactly.
//!
//! The stream merges the per-element reports of a contiguous SVE access into one access of
//! their size: triad's accesses are one per vector (and power-of-two pieces of the partial
//! last one), so their number scales with the vector length.
//!
//! Needs QEMU 10 built by `scripts/build-qemu.sh` and aarch64-linux-gnu-gcc; without them
//! each test prints one `skipping:` line.

mod common;

use common::{aarch64_gcc, field, get, qemu10_or_skip, run, run_records, sve_kernel};

#[test]
fn sve_partial_vectors_count_exactly_on_qemu10() {
    if !aarch64_gcc() {
        return;
    }
    let Some(qemu) = qemu10_or_skip("aarch64") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    for (kernel, n, reps) in [
        ("spmv", "2500", "2"),
        ("triad", "4099", "2"),
        ("dot", "4099", "2"),
    ] {
        let (bin, region) = sve_kernel(kernel, dir.path());
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

#[test]
fn sve_contiguous_accesses_are_one_per_vector_on_qemu10() {
    if !aarch64_gcc() {
        return;
    }
    let Some(qemu) = qemu10_or_skip("aarch64") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let (bin, region) = sve_kernel("triad", dir.path());
    let (n, reps) = (4099u64, 2u64);
    for vl in [128u64, 512, 2048] {
        let cpu = format!("max,sve-default-vector-length={}", vl / 8);
        let (json, recs) = run_records(
            &[qemu.as_str(), "-cpu", &cpu],
            &region,
            &bin,
            &[&n.to_string(), &reps.to_string()],
            dir.path(),
        );
        let t = &json["totals"];
        let size = |r: &u64| 1u64 << ((r >> 56) & 0xf);
        let (ld, st) = recs.iter().fold((0, 0), |(l, s), r| {
            if r >> 63 == 1 {
                (l, s + size(r))
            } else {
                (l + size(r), s)
            }
        });
        assert_eq!(
            (ld, st),
            (get(t, "bytes_loaded"), get(t, "bytes_stored")),
            "{vl} bits"
        );
        // a[i] = b[i] + s * c[i]: per repetition and array, n / lanes whole vectors of
        // vl / 8 bytes and the last n % lanes elements as power-of-two pieces.
        let lanes = vl / 64;
        let tail = (n % lanes * 8).count_ones() as u64;
        let want = reps * 3 * (n / lanes + tail);
        let whole = recs.iter().filter(|r| size(r) == vl / 8).count() as u64;
        println!(
            "triad n={n} at {vl} bits: {} accesses ({whole} of {} bytes), {ld} bytes loaded, {st} stored",
            recs.len(),
            vl / 8
        );
        assert_eq!(recs.len() as u64, want, "{vl} bits: accesses");
        assert_eq!(whole, reps * 3 * (n / lanes), "{vl} bits: whole vectors");
    }
}
