//! Bytes of every memory access form, exact: one source of truth for the counts and the
//! memory stream.
//!
//! `tests/data/x86_forms.c` and `tests/data/aarch64_forms.c` run one instruction form per
//! function (scalar and vector loads and stores, memory-operand arithmetic including scalar
//! FMA, conversions that QEMU reads beyond their operand, read-modify-write, `rep movs` and
//! `rep stos` at every element size, gathers with full and half masks, a masked store;
//! AArch64 single, pair, AdvSIMD multi-register and single-lane structures, replicate,
//! atomics, compare-and-swap, exclusives and SVE). Each function is a region of its own; the
//! difference between two iteration counts must be the form's operand bytes exactly, and at
//! each count the memory stream must carry exactly the counted bytes (less the SVE
//! accesses QEMU 7.2 does not report, counted as `bytes_unreported`; QEMU 10 reports them).
//! glibc `memcpy` and two `memset`s (with their callees, `scope=`) move exactly N bytes
//! loaded and 3 N stored, on AArch64 with CPU models whose `DC ZVA` zeroes 64, 256 and 512
//! bytes.
//!
//! Every test runs on QEMU 7.2 (plugin API v1) and on QEMU 10 (API v4) where each is
//! present (a `skipping:` line for a missing one), with the same expected bytes: the forms
//! QEMU 7.2 reads beyond their operand are checked on both.
//!
//! Needs qemu-user and the compilers; without them each test prints one `skipping:` line.

mod common;

use std::path::Path;

use common::{compile, get, qemus, range, run, tools};

const N1: u64 = 64;
const N2: u64 = 192;

/// (function, bytes loaded, bytes stored, of them not reported by QEMU) per iteration.
type Form = (&'static str, u64, u64, u64);

const X86: &[Form] = &[
    ("movsd_load", 8, 0, 0),
    ("movupd_load", 16, 0, 0),
    ("vmovupd_load_ymm", 32, 0, 0),
    ("movsd_store", 0, 8, 0),
    ("movupd_store", 0, 16, 0),
    ("vmovupd_store_ymm", 0, 32, 0),
    ("addsd_mem", 8, 0, 0),
    ("mulps_mem", 16, 0, 0),
    ("vaddpd_mem_ymm", 32, 0, 0),
    // QEMU 7.2 reads 16 bytes for these two, twice the operand for the conversions.
    ("vfmadd231sd_mem", 8, 0, 0),
    ("vfmadd231ss_mem", 4, 0, 0),
    ("vfmadd231pd_mem_ymm", 32, 0, 0),
    ("cvtdq2pd_mem", 8, 0, 0),
    ("vcvtdq2pd_mem_ymm", 16, 0, 0),
    ("vbroadcastsd", 8, 0, 0),
    ("add_rmw", 8, 8, 0),
    // One 64-byte string operation per iteration, at each element size.
    ("rep_movsb", 64, 64, 0),
    ("rep_movsw", 64, 64, 0),
    ("rep_movsd", 64, 64, 0),
    ("rep_movsq", 64, 64, 0),
    ("rep_stosb", 0, 64, 0),
    ("rep_stosw", 0, 64, 0),
    ("rep_stosd", 0, 64, 0),
    ("rep_stosq", 0, 64, 0),
    // The mask (32 bytes) and index (16 or 32) loads, then the gathered elements.
    ("vgatherdpd", 32 + 16 + 32, 0, 0),
    ("vgatherdpd_half_mask", 32 + 16 + 16, 0, 0),
    ("vpgatherdd_ymm", 32 + 32 + 32, 0, 0),
    // The mask load, then the two selected elements.
    ("vmaskmovpd_store_half", 32, 16, 0),
];

/// At an SVE vector length of 256 bits (32 bytes).
const AARCH64: &[Form] = &[
    ("ldrb", 1, 0, 0),
    ("ldr_x", 8, 0, 0),
    ("ldr_q", 16, 0, 0),
    ("ldur_d", 8, 0, 0),
    ("strh", 0, 2, 0),
    ("str_q", 0, 16, 0),
    ("ldp_x", 16, 0, 0),
    ("ldp_q", 32, 0, 0),
    ("stp_d", 0, 16, 0),
    ("ldpsw", 8, 0, 0),
    ("ld1_8b", 8, 0, 0),
    ("ld1_4x16b", 64, 0, 0),
    ("st1_2x16b", 0, 32, 0),
    ("ld2_4s", 32, 0, 0),
    ("ld4_2d", 64, 0, 0),
    ("st3_8h", 0, 48, 0),
    ("ld1r_2d", 8, 0, 0),
    ("ld1_lane_s", 4, 0, 0),
    ("st1_lane_d", 0, 8, 0),
    ("ldadd_x", 8, 8, 0),
    ("swp_w", 4, 4, 0),
    ("cas_x", 8, 8, 0),
    ("casp_x", 16, 16, 0),
    // QEMU reports the successful store-exclusive as a compare-and-swap (load + store).
    ("ldxr_stxr", 8, 8, 0),
    ("sve_ld1d", 32, 0, 32),
    ("sve_st1d", 0, 32, 32),
    ("sve_ld1rd", 8, 0, 0),
    ("sve_ldr_z", 32, 0, 0),
    ("sve_str_z", 0, 32, 0),
];

/// The forms as `qemu` reports them: QEMU 10 (plugin API v4) reports SVE loads and stores.
fn as_reported(qemu: &str, forms: &[Form]) -> Vec<Form> {
    let v4 = common::is_qemu10(qemu);
    forms
        .iter()
        .map(|&(f, ld, st, unrep)| (f, ld, st, if v4 { 0 } else { unrep }))
        .collect()
}

fn check_forms(qemu: &[&str], bin: &Path, forms: &[Form], dir: &Path) {
    let forms = &as_reported(qemu[0], forms)[..];
    let regions: Vec<String> = forms
        .iter()
        .map(|f| range(bin, &format!("k_{}", f.0)))
        .collect();
    let args = format!("region={}", regions.join("+"));
    let at = |n: u64| {
        let r = run(qemu, &args, bin, &[&n.to_string()], &[], true, dir);
        // The stream carries exactly the counted bytes that QEMU reports.
        let t = &r.json["totals"];
        let (ld, st) = r.stream.expect("stream");
        assert_eq!(
            ld + st + get(t, "bytes_unreported"),
            get(t, "bytes_loaded") + get(t, "bytes_stored"),
            "{}: stream {ld} + {st} bytes against counts {t}",
            bin.display()
        );
        r.json
    };
    let (a, b) = (at(N1), at(N2));
    let iters = N2 - N1;
    let mut bad = Vec::new();
    for (i, &(name, ld, st, unrep)) in forms.iter().enumerate() {
        let d = |k: &str| {
            get(&b["regions"][i]["totals"], k) as i64 - get(&a["regions"][i]["totals"], k) as i64
        };
        let got = (d("bytes_loaded"), d("bytes_stored"), d("bytes_unreported"));
        let want = (
            (ld * iters) as i64,
            (st * iters) as i64,
            (unrep * iters) as i64,
        );
        println!(
            "{} {name}: (loaded, stored, unreported) {got:?}, operands {want:?}",
            qemu[0]
        );
        if got != want {
            bad.push(format!("{name}: {got:?} != {want:?}"));
        }
        // By access width: the buckets and the bytes counted from access reports make the
        // counted bytes; a form whose bytes all come from the encoding is in the bucket of
        // its operands' size.
        // Sizes other than 1 to 256 bytes in powers of two are under `other`.
        let key = |bytes: u64| {
            if bytes.is_power_of_two() && bytes <= 256 {
                (bytes * 8).to_string()
            } else {
                "other".to_string()
            }
        };
        let w = |j: &serde_json::Value, key: &str, k: &str| {
            j["regions"][i]["totals"]["mem_by_width"][key][k]
                .as_u64()
                .unwrap_or(0) as i64
        };
        let dw = |key: &str, k: &str| w(&b, key, k) - w(&a, key, k);
        let split: i64 = (0..9)
            .map(|p| key(1 << p))
            .chain(std::iter::once("other".to_string()))
            .map(|k| dw(&k, "bytes_loaded") + dw(&k, "bytes_stored"))
            .sum();
        let dynamic = d("bytes_dynamic");
        if split + dynamic != got.0 + got.1 {
            bad.push(format!(
                "{name}: {split} bytes by width + {dynamic} from reports != {} counted",
                got.0 + got.1
            ));
        }
        if dynamic == 0 {
            let at = (
                if ld > 0 {
                    dw(&key(ld), "bytes_loaded")
                } else {
                    0
                },
                if st > 0 {
                    dw(&key(st), "bytes_stored")
                } else {
                    0
                },
            );
            if at != (want.0, want.1) {
                bad.push(format!(
                    "{name}: bytes at {}/{} {at:?} != {:?}",
                    key(ld),
                    key(st),
                    (want.0, want.1)
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{}: forms with wrong bytes:\n{}",
        qemu[0],
        bad.join("\n")
    );
}

#[test]
fn x86_64_access_forms() {
    if !tools(&["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = compile(
        "gcc",
        &["-O1", "-mavx2", "-mfma"],
        "x86_forms.c",
        dir.path(),
    );
    for q in qemus("x86_64") {
        check_forms(&[&q, "-cpu", "max"], &bin, X86, dir.path());
    }
}

#[test]
fn aarch64_access_forms() {
    if !tools(&["aarch64-linux-gnu-gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = compile(
        "aarch64-linux-gnu-gcc",
        &["-O1", "-march=armv8.2-a+sve", "-static"],
        "aarch64_forms.c",
        dir.path(),
    );
    for q in qemus("aarch64") {
        check_forms(
            &[&q, "-cpu", "max,sve-default-vector-length=32"],
            &bin,
            AARCH64,
            dir.path(),
        );
    }
}

/// glibc's memcpy and two memsets (to 7, to 0) of 1 MiB and 2 MiB (the same code path), with
/// their callees.
fn check_memcpy(qemu: &[&str], bin: &Path, dir: &Path) {
    let args = format!("scope={}", range(bin, "copy_and_fill"));
    let (n1, n2) = (1u64 << 20, 2u64 << 20);
    let at = |n: u64| {
        let r = run(qemu, &args, bin, &[&n.to_string()], &[], true, dir);
        let t = r.json["totals"].clone();
        let (ld, st) = r.stream.expect("stream");
        assert_eq!(
            ld + st + get(&t, "bytes_unreported"),
            get(&t, "bytes_loaded") + get(&t, "bytes_stored"),
            "stream {ld} + {st} bytes against counts {t}"
        );
        t
    };
    let (a, b) = (at(n1), at(n2));
    let d = |k: &str| get(&b, k) - get(&a, k);
    println!(
        "{} {qemu:?}: memcpy + 2 memset of +{} bytes: loaded +{}, stored +{}",
        bin.display(),
        n2 - n1,
        d("bytes_loaded"),
        d("bytes_stored")
    );
    assert_eq!(d("bytes_loaded"), n2 - n1);
    assert_eq!(d("bytes_stored"), 3 * (n2 - n1));
}

#[test]
fn glibc_memcpy_and_memset() {
    if tools(&["gcc"]) {
        let dir = tempfile::tempdir().expect("temp dir");
        let bin = compile("gcc", &["-O2"], "memcpy_memset.c", dir.path());
        for q in qemus("x86_64") {
            check_memcpy(&[&q, "-cpu", "max"], &bin, dir.path());
        }
    }
    if tools(&["aarch64-linux-gnu-gcc"]) {
        let dir = tempfile::tempdir().expect("temp dir");
        let bin = compile(
            "aarch64-linux-gnu-gcc",
            &["-O2", "-static"],
            "memcpy_memset.c",
            dir.path(),
        );
        // DC ZVA zeroes 512 bytes on max, 256 on a64fx, 64 on cortex-a57.
        for q in qemus("aarch64") {
            for cpu in ["max", "a64fx", "cortex-a57"] {
                check_memcpy(&[&q, "-cpu", cpu], &bin, dir.path());
            }
        }
    }
}
