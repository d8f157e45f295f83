//! Exactness of the plugin's counts on the reference kernels of `workloads/`.
//!
//! Each case builds a kernel with gcc (x86-64) or aarch64-linux-gnu-gcc (SVE), runs it
//! under qemu-user with the plugin restricted to the `kernel_<name>` function (its ELF
//! symbol range), at two sizes N1 and N2 = 2 N1, and compares the difference of the counts
//! with the analytic difference of the loop body: per element, triad and daxpy 2 FLOPs and
//! 24 bytes (16 read, 8 written), dot 2 FLOPs and 16 bytes read. Differencing removes the
//! per-call set-up inside the function. FP instructions, loads and stores follow from the
//! lanes L of the vector width used: 2 loads and 1 store per L elements (dot: 2 loads),
//! and 1 (FMA) or 2 FP instructions per L elements. Tolerance 0.1 %.
//!
//! Sizes are multiples of 32 so that no SVE vector length up to 2048 bits has a partial
//! last iteration (the plugin counts all lanes of predicated instructions).
//!
//! Needs qemu-user and the compilers; without them each test prints one `skipping:` line.

mod common;
use hpcscope_test_support::have;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{aarch64_gcc, is_marker, plugin_for, qemus, symbol_range};
use serde_json::Value;

const N1: u64 = 4096;
const N2: u64 = 8192;
const REPS: u64 = 3;

fn workload_src(kernel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../workloads/src")
        .join(format!("{kernel}.c"))
}

fn compile(cc: &str, flags: &[&str], kernel: &str, dir: &Path) -> PathBuf {
    let out = dir.join(format!(
        "{kernel}-{}",
        flags.join("").replace(['-', '=', '+'], "")
    ));
    let st = Command::new(cc)
        .args(["-O3", "-std=c11", "-D_POSIX_C_SOURCE=200809L"])
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(workload_src(kernel))
        .status()
        .expect("run the C compiler");
    assert!(st.success(), "{cc} {flags:?} {kernel} failed");
    out
}

struct Run {
    totals: Value,
    /// Analytic counts printed by the workload.
    flops: f64,
    bytes: f64,
}

fn run(qemu: &[&str], plugin_args: &str, bin: &Path, n: u64, out: &Path) -> Run {
    let mut cmd = Command::new(qemu[0]);
    cmd.args(&qemu[1..])
        .arg("-plugin")
        .arg(format!(
            "{},out={},{plugin_args}",
            plugin_for(qemu[0]).display(),
            out.display()
        ))
        .arg(bin)
        .arg(n.to_string())
        .arg(REPS.to_string());
    let o = cmd.output().expect("run qemu");
    assert!(
        o.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let field = |k: &str| -> f64 {
        stdout
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {k}= in workload output: {stdout}"))
    };
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out).expect("plugin output")).expect("JSON");
    Run {
        totals: json["totals"].clone(),
        flops: field("flops"),
        bytes: field("bytes"),
    }
}

fn diff(a: &Run, b: &Run, k: &str) -> f64 {
    b.totals[k].as_f64().expect("number") - a.totals[k].as_f64().expect("number")
}

/// Asserts `got` within 1e-3 of `want` relative to `want` (absolute when `want` is 0), and
/// prints the measured and analytic values.
fn assert_within_1e3(what: &str, got: f64, want: f64, ctx: &str) {
    let rel = if want == 0.0 {
        got.abs()
    } else {
        ((got - want) / want).abs()
    };
    println!("{ctx}: {what} measured {got} analytic {want} (rel. err. {rel:.2e})");
    assert!(rel <= 1e-3, "{ctx}: {what} = {got}, expected {want}");
}

/// Run one kernel at N1 and N2 and check every counter's difference. `lane_bits` is the
/// vector width of the loop. With `ordered_sum` (dot on x86, where GCC keeps the sum in
/// order without -ffast-math) the loop multiplies a vector and adds its lanes one by one
/// with scalar adds: 1 + L FP instructions per vector, half the FLOPs scalar.
fn check(
    qemu: &[&str],
    vl: Option<u32>,
    bin: &Path,
    kernel: &str,
    lane_bits: u32,
    ordered_sum: bool,
    dir: &Path,
) {
    let (start, end) = symbol_range(bin, &format!("kernel_{kernel}"));
    let mut args = format!("region={start:#x}-{end:#x}");
    if let Some(vl) = vl {
        args.push_str(&format!(",vl={vl}"));
    }
    let ctx = format!(
        "{kernel} {}",
        bin.file_name().and_then(|f| f.to_str()).unwrap_or("?")
    ) + &vl.map(|v| format!(" vl={v}")).unwrap_or_default();
    let a = run(qemu, &args, bin, N1, &dir.join("a.json"));
    let b = run(qemu, &args, bin, N2, &dir.join("b.json"));
    let elems = ((N2 - N1) * REPS) as f64;
    let lanes = f64::from(lane_bits / 64);
    let (loads, stores, bytes_st) = match kernel {
        "dot" => (2.0, 0.0, 0.0),
        _ => (2.0, 1.0, 8.0),
    };

    assert_within_1e3("flops", diff(&a, &b, "flops"), b.flops - a.flops, &ctx);
    assert_within_1e3(
        "bytes",
        diff(&a, &b, "bytes_loaded") + diff(&a, &b, "bytes_stored"),
        b.bytes - a.bytes,
        &ctx,
    );
    assert_within_1e3(
        "bytes_stored",
        diff(&a, &b, "bytes_stored"),
        bytes_st * elems,
        &ctx,
    );
    assert_within_1e3("loads", diff(&a, &b, "loads"), loads * elems / lanes, &ctx);
    assert_within_1e3(
        "stores",
        diff(&a, &b, "stores"),
        stores * elems / lanes,
        &ctx,
    );
    // One FMA, or a multiply and an add, per vector of `lanes` elements.
    let fp_per_vec = if ordered_sum {
        1.0 + lanes
    } else if diff(&a, &b, "fma_instructions") > 0.0 {
        1.0
    } else {
        2.0
    };
    assert_within_1e3(
        "fp_instructions",
        diff(&a, &b, "fp_instructions"),
        fp_per_vec * elems / lanes,
        &ctx,
    );
    let bucket = format!("f64_{lane_bits}");
    let flops_in = |r: &Run| {
        r.totals["fp_by_width"][&bucket]["flops"]
            .as_f64()
            .unwrap_or(0.0)
    };
    let share = if ordered_sum { 0.5 } else { 1.0 };
    assert_within_1e3(
        &format!("flops in {bucket}"),
        flops_in(&b) - flops_in(&a),
        share * (b.flops - a.flops),
        &ctx,
    );
}

/// On QEMU 7.2 (plugin API v1) and, when built, QEMU 10 (API v4): the same counts.
#[test]
fn x86_64_sse2_and_avx2_fma() {
    if !have("gcc") {
        println!("skipping: gcc not found (apt-get install gcc)");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    for q in qemus("x86_64") {
        // QEMU 7.2 and 10.0 emulate SSE*, AVX, AVX2 and FMA3 with -cpu max, not AVX-512.
        let qemu = [q.as_str(), "-cpu", "max"];
        for (flags, bits) in [("-march=x86-64", 128), ("-march=x86-64-v3", 256)] {
            for kernel in ["triad", "daxpy", "dot"] {
                let bin = compile("gcc", &[flags], kernel, dir.path());
                check(&qemu, None, &bin, kernel, bits, kernel == "dot", dir.path());
            }
        }
    }
}

#[test]
fn aarch64_sve_all_vector_lengths() {
    if !aarch64_gcc() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let emulators = qemus("aarch64");
    for kernel in ["triad", "daxpy", "dot"] {
        let bin = compile(
            "aarch64-linux-gnu-gcc",
            &["-march=armv8.2-a+sve", "-static"],
            kernel,
            dir.path(),
        );
        for q in &emulators {
            for vl in [128u32, 256, 512, 1024, 2048] {
                let cpu = format!("max,sve-default-vector-length={}", vl / 8);
                let qemu = [q.as_str(), "-cpu", &cpu];
                check(&qemu, Some(vl), &bin, kernel, vl, false, dir.path());
            }
        }
    }
}

#[test]
fn aarch64_neon_triad() {
    for tool in ["qemu-aarch64", "aarch64-linux-gnu-gcc"] {
        if !have(tool) {
            println!(
                "skipping: {tool} not found (apt-get install qemu-user gcc-aarch64-linux-gnu)"
            );
            return;
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = compile(
        "aarch64-linux-gnu-gcc",
        &["-march=armv8-a", "-static"],
        "triad",
        dir.path(),
    );
    for q in qemus("aarch64") {
        check(&[q.as_str()], None, &bin, "triad", 128, false, dir.path());
    }
}

/// `scope=` counts a function with its callees: `scope=kernel_triad` (no callees) equals
/// `region=kernel_triad`, and `scope=main` sees every FLOP of the program (start-up code
/// before `main` does none) but fewer instructions than the whole run.
#[test]
fn scope_includes_callees() {
    for tool in ["qemu-x86_64", "gcc"] {
        if !have(tool) {
            println!("skipping: {tool} not found (apt-get install qemu-user gcc)");
            return;
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = compile("gcc", &["-march=x86-64"], "triad", dir.path());
    let range = |name: &str| {
        let (s, e) = symbol_range(&bin, name);
        format!("{s:#x}-{e:#x}")
    };
    let qemu = ["qemu-x86_64"];
    let out = dir.path().join("s.json");
    let totals = |args: &str| run(&qemu, args, &bin, N1, &out).totals;
    let whole = totals("tbs=off");
    let region = totals(&format!("region={}", range("kernel_triad")));
    let scope_kernel = totals(&format!("scope={}", range("kernel_triad")));
    let scope_main = totals(&format!("scope={}", range("main")));
    assert_eq!(region, scope_kernel);
    assert_eq!(scope_main["flops"], whole["flops"]);
    assert!(
        scope_main["instructions"].as_u64() < whole["instructions"].as_u64()
            && scope_main["instructions"].as_u64() > region["instructions"].as_u64()
    );
}

/// With `mem=on` the access stream of the kernel adds up to the counted bytes (x86-64:
/// QEMU reports a 16-byte SSE access as two 8-byte accesses, so records are not
/// instructions, but bytes match).
#[test]
fn mem_stream_matches_byte_counts() {
    for tool in ["qemu-x86_64", "gcc"] {
        if !have(tool) {
            println!("skipping: {tool} not found (apt-get install qemu-user gcc)");
            return;
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = compile("gcc", &["-march=x86-64"], "triad", dir.path());
    let (s, e) = symbol_range(&bin, "kernel_triad");
    let stream = dir.path().join("stream.bin");
    let args = format!(
        "region={s:#x}-{e:#x},mem=on,memout={},coalesce=64",
        stream.display()
    );
    let r = run(
        &["qemu-x86_64"],
        &args,
        &bin,
        N1,
        &dir.path().join("m.json"),
    );
    let b = std::fs::read(&stream).expect("stream file");
    assert_eq!(&b[..8], hpcscope_plugin_format::MAGIC);
    let (mut loaded, mut stored, mut records, mut accesses) = (0u64, 0u64, 0u64, 0u64);
    for rec in b[8..].chunks_exact(8) {
        let r = u64::from_le_bytes(rec.try_into().expect("8 bytes"));
        // A thread marker (or the marker of a thread that exits): no access.
        if is_marker(r) {
            continue;
        }
        // A record stands for 1 + repeats accesses of its size, inside one 64-byte block.
        let n = 1 + ((r >> 60) & 7);
        let size = n << ((r >> 56) & 0xf);
        assert!(
            (r & 63) + (1 << ((r >> 56) & 0xf)) <= 64,
            "a repeated record crosses its line"
        );
        records += 1;
        accesses += n;
        if r >> 63 == 1 {
            stored += size;
        } else {
            loaded += size;
        }
    }
    assert_eq!(Some(loaded), r.totals["bytes_loaded"].as_u64());
    assert_eq!(Some(stored), r.totals["bytes_stored"].as_u64());
    assert!(stored >= 8 * N1 * REPS);
    // The SSE2 triad's 16-byte accesses arrive as two 8-byte ones: at least half coalesce.
    assert!(
        2 * records <= accesses + accesses / 20,
        "{records} records for {accesses} accesses"
    );
}
