//! Loads and stores by access width: each instruction's memory operand decides its bucket,
//! so an AVX2 STREAM triad moves its bytes at 256 bits, an SSE2 one at 128 and a scalar
//! loop at 64; the profile carries the split for `project`.
//!
//! Needs qemu-user, gcc and the plugin (built here with cargo); without them each test
//! prints one `skipping:` line.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use hpcscope_test_support::{build_plugin, have};

use hpcscope_mix::{MixOptions, analyze};

fn ready() -> bool {
    for tool in ["qemu-x86_64", "gcc"] {
        if !have(tool) {
            println!("skipping: {tool} is not installed (apt-get install qemu-user gcc)");
            return false;
        }
    }
    // SAFETY: set once, before any analysis in this process reads it.
    unsafe { std::env::set_var(hpcscope_mix::tools::PLUGIN_ENV, build_plugin()) };
    true
}

fn compile(dir: &Path, flags: &[&str]) -> PathBuf {
    let out = dir.join(format!("triad{}", flags.join("").replace(['-', '='], "")));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads/src/triad.c");
    let o = Command::new("gcc")
        .args(["-std=gnu11"])
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(src)
        .arg("-lm")
        .output()
        .expect("run gcc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// Counts the triad kernel of a build and checks where its bytes went: `bits` holds at
/// least 99 % of them, the buckets add up to the counted bytes, and the profile's split
/// says the same.
fn check(flags: &[&str], bits: u32) {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = compile(dir.path(), flags);
    let n: u64 = 20_000;
    let r = analyze(&MixOptions {
        run: hpcscope_mix::RunSpec {
            program: bin,
            args: vec![n.to_string(), "2".into()],
            functions: vec!["kernel_triad".into()],
            ..Default::default()
        },
        machines: vec![hpcscope_core::library::builtin("cascadelake-8260").expect("machine")],
        native_runs: 1,
        ..Default::default()
    })
    .expect("mix");
    let v = &r.variants[0];
    let t = &v.counts.totals;
    let counted = t.bytes_loaded + t.bytes_stored;
    println!("{flags:?}: {counted} bytes, by width {:?}", t.mem_by_width);
    let split: u64 = t
        .mem_by_width
        .values()
        .map(|m| m.bytes_loaded + m.bytes_stored)
        .sum();
    assert_eq!(split + t.bytes_dynamic, counted);
    let at = t
        .mem_by_width
        .get(&bits.to_string())
        .unwrap_or_else(|| panic!("no {bits}-bit bucket: {:?}", t.mem_by_width));
    let moved = at.bytes_loaded + at.bytes_stored;
    assert!(
        moved as f64 >= 0.99 * counted as f64,
        "{moved} of {counted} bytes at {bits} bits"
    );
    // Two loads and one store of `bits` each per `bits / 64` elements.
    let per = u64::from(bits / 64);
    let iters = n / per * 2;
    assert!(
        at.loads >= 2 * iters && at.loads <= 2 * iters + 16,
        "{} loads",
        at.loads
    );
    assert!(
        at.stores >= iters && at.stores <= iters + 16,
        "{} stores",
        at.stores
    );
    let w = v.profiles[0].regions[0]
        .access_widths
        .as_ref()
        .expect("the profile carries the split");
    let top = w
        .parts
        .iter()
        .max_by(|a, b| a.fraction.total_cmp(&b.fraction))
        .expect("a part");
    assert_eq!(top.vector_bits, bits, "{w:?}");
    assert!(top.fraction >= 0.99, "{w:?}");
    assert!(w.problems().is_empty(), "{:?}", w.problems());
}

#[test]
fn avx2_triad_moves_its_bytes_at_256_bits() {
    check(&["-O3", "-march=x86-64-v3"], 256);
}

#[test]
fn sse2_triad_moves_its_bytes_at_128_bits() {
    check(&["-O3", "-march=x86-64"], 128);
}

#[test]
fn scalar_triad_moves_its_bytes_at_64_bits() {
    check(&["-O2", "-march=x86-64-v3", "-fno-tree-vectorize"], 64);
}
