//! The records QEMU's translated code writes (`meminline=on`: QEMU 10 as
//! `scripts/build-qemu.sh` builds it, with hpcscope's patch) against the plugin's callback
//! per access (`meminline=off`): the same accesses in the same order.
//!
//! Two runs of one program under QEMU user mode do not get the same addresses (the host's
//! mappings, the plugin's own buffers among them, move the guest's), so records are
//! compared by direction, size and offset in their 4 KiB page; the counts must be equal.

mod common;

use std::path::Path;

use common::{aarch64_gcc, compile, qemu10_or_skip, range, run_records, sve_kernel};
use hpcscope_plugin_format::{SKIP_BYTES, SKIP_TOP};

/// The patched function's name, as the binary's dynamic symbol table holds it.
const RECORD_FN: &[u8] = b"qemu_plugin_register_vcpu_mem_record_per_vcpu";

/// QEMU 10 for `arch` when it has the inline records; prints a `skipping:` line otherwise.
fn patched_qemu10(arch: &str) -> Option<String> {
    let q = qemu10_or_skip(arch)?;
    let bin = std::fs::read(&q).expect("read the QEMU binary");
    if !bin.windows(RECORD_FN.len()).any(|w| w == RECORD_FN) {
        println!(
            "skipping: {q} has no inline records (built before scripts/qemu-patches: run scripts/build-qemu.sh)"
        );
        return None;
    }
    Some(q)
}

/// A record without the page: direction, size, repeats and offset in the 4 KiB page.
fn shape(r: u64) -> u64 {
    r & 0xff00_0000_0000_0fff
}

/// Runs `bin args` in both modes with `plugin_args`; checks the records match and the
/// summary says which mode wrote them; returns the records of the inline run and the
/// accesses and bytes `sample=` left out.
fn both(
    qemu: &[&str],
    plugin_args: &str,
    bin: &Path,
    args: &[&str],
    dir: &Path,
) -> (Vec<u64>, u64, u64) {
    let (j_on, on) = run_records(qemu, &format!("{plugin_args},meminline=on"), bin, args, dir);
    let (j_off, off) = run_records(
        qemu,
        &format!("{plugin_args},meminline=off"),
        bin,
        args,
        dir,
    );
    // Skip records (`sample=`) stand after each batch's marker: batches end at other
    // places in the two modes, so their sums are compared, not their places.
    let skips = |v: &[u64], bytes: bool| -> u64 {
        v.iter()
            .filter(|r| *r >> 56 == SKIP_TOP && (*r >> 55 & 1 == 1) == bytes)
            .map(|r| r & (SKIP_BYTES - 1))
            .sum()
    };
    let (left_on, left_off) = (skips(&on, false), skips(&off, false));
    let left_bytes = skips(&on, true);
    let on: Vec<u64> = on.into_iter().filter(|r| r >> 56 != SKIP_TOP).collect();
    let mut off: Vec<u64> = off.into_iter().filter(|r| r >> 56 != SKIP_TOP).collect();
    let accesses = |v: &[u64]| v.iter().map(|r| 1 + (r >> 60 & 7)).sum::<u64>();
    assert_eq!(
        accesses(&on) + left_on,
        accesses(&off) + left_off,
        "accesses streamed and left out"
    );
    // The callbacks stream a thread's first access whatever its class (its batch is not
    // open yet to count it); the inline mode leaves it out too when it is not sampled.
    assert!(
        left_on == left_off || left_on == left_off + 1,
        "left out: {left_on} inline, {left_off} with callbacks"
    );
    if left_on == left_off + 1 {
        off.remove(0);
    }
    assert_eq!(j_on["mem_stream"]["inline"], true);
    assert_eq!(j_off["mem_stream"]["inline"], false);
    assert!(j_on["mem_stream"].get("overflowed_buffers").is_none());
    assert_eq!(on.len(), off.len(), "records, inline against callbacks");
    let first = on
        .iter()
        .zip(&off)
        .position(|(a, b)| shape(*a) != shape(*b));
    assert_eq!(
        first,
        None,
        "first differing record: {:#x} against {:#x}",
        first.map_or(0, |i| on[i]),
        first.map_or(0, |i| off[i])
    );
    assert_eq!(j_on["totals"], j_off["totals"], "counts");
    (on, left_on, left_bytes)
}

#[test]
fn x86_records_match_the_callbacks() {
    let Some(qemu) = patched_qemu10("x86_64") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    // Contiguous SSE2 streams (triad), indirect loads (spmv) and AVX2 gathers, which QEMU
    // runs in helpers (their accesses reach the buffer from C).
    for (src, func, flags, args) in [
        ("triad.c", "kernel_triad", "-O3", &["20000", "3"][..]),
        ("spmv.c", "kernel_spmv", "-O2", &["3000", "3"][..]),
        (
            "gather.c",
            "kernel_gather",
            "-O3 -mavx2",
            &["20000", "3"][..],
        ),
    ] {
        let flags: Vec<&str> = flags.split(' ').collect();
        let bin = compile("gcc", &flags, src, dir.path());
        let region = format!("region={}", range(&bin, func));
        let (recs, ..) = both(&[qemu.as_str()], &region, &bin, args, dir.path());
        println!("{src} {flags:?}: {} records match", recs.len());
        assert!(recs.len() > 10_000, "{src}: {} records", recs.len());
    }
}

#[test]
fn sampled_records_match_the_callbacks() {
    let Some(qemu) = patched_qemu10("x86_64") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = compile("gcc", &["-O3"], "triad.c", dir.path());
    let region = format!("region={}", range(&bin, "kernel_triad"));
    // Classes 0, 4, 8 and 12 of 16 (of 64-byte lines): what the inline mode leaves out
    // when it writes a buffer, the callbacks left out one access at a time.
    let args = format!("{region},sample=64:16:1111");
    let (recs, left, left_bytes) = both(&[qemu.as_str()], &args, &bin, &["20000", "3"], dir.path());
    let kept = recs.len() as u64;
    println!("sampled: {kept} records kept, {left} accesses ({left_bytes} bytes) left out");
    // A quarter of the classes: about three quarters of the accesses are left out.
    assert!(left > 2 * kept, "{left} left out, {kept} kept");
}

#[test]
fn sve_records_match_the_callbacks() {
    if !aarch64_gcc() {
        return;
    }
    let Some(qemu) = patched_qemu10("aarch64") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let (bin, region) = sve_kernel("triad", dir.path());
    // SVE contiguous accesses, merged per vector: in place in the buffer with inline
    // records, at the close of the run with callbacks. A length that leaves a partial
    // vector at the end, and more records than a batch holds (runs across its end).
    for vl in [128u64, 512] {
        let cpu = format!("max,sve-default-vector-length={}", vl / 8);
        let (recs, ..) = both(
            &[qemu.as_str(), "-cpu", &cpu],
            &region,
            &bin,
            &["40003", "2"],
            dir.path(),
        );
        println!("SVE triad at {vl} bits: {} records match", recs.len());
    }
}
