//! Helpers shared by the plugin's integration tests: the plugin library, compilers, QEMU
//! runs, ELF symbols, the memory stream.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use hpcscope_test_support::{build_plugin, build_plugin_v4, have};
use serde_json::Value;

/// Whether stream record `r` is a thread marker (or the marker of a thread that exits).
pub fn is_marker(r: u64) -> bool {
    use hpcscope_plugin_format::{END_TOP, MARKER_TOP};
    matches!(r >> 56, MARKER_TOP | END_TOP)
}

/// Prints one `skipping:` line and returns false when a tool is missing.
pub fn tools(list: &[&str]) -> bool {
    for tool in list {
        if !have(tool) {
            println!(
                "skipping: {tool} not found (apt-get install qemu-user gcc gcc-aarch64-linux-gnu)"
            );
            return false;
        }
    }
    true
}

/// Whether the aarch64 cross compiler is there; prints a `skipping:` line when not.
pub fn aarch64_gcc() -> bool {
    let ok = have("aarch64-linux-gnu-gcc");
    if !ok {
        println!(
            "skipping: aarch64-linux-gnu-gcc not found (apt-get install gcc-aarch64-linux-gnu)"
        );
    }
    ok
}

/// `workloads/src/{kernel}.c` built for aarch64 with SVE (static), and the plugin's
/// `region=` argument for its function `kernel_{kernel}`.
pub fn sve_kernel(kernel: &str, dir: &Path) -> (PathBuf, String) {
    let bin = compile(
        "aarch64-linux-gnu-gcc",
        &["-O3", "-march=armv8.2-a+sve", "-static"],
        &format!("{kernel}.c"),
        dir,
    );
    let region = format!("region={}", range(&bin, &format!("kernel_{kernel}")));
    (bin, region)
}

/// QEMU 10 for `arch` as `scripts/build-qemu.sh` installs it (see
/// [`hpcscope_test_support::qemu10`]), as the program name a run takes.
pub fn qemu10(arch: &str) -> Option<String> {
    hpcscope_test_support::qemu10(arch).map(|p| p.display().to_string())
}

/// [`qemu10`], with a `skipping:` line when it is not built.
pub fn qemu10_or_skip(arch: &str) -> Option<String> {
    let q = qemu10(arch);
    if q.is_none() {
        println!("skipping: QEMU 10 (plugin API v4) is not built (scripts/build-qemu.sh)");
    }
    q
}

/// The emulators to run a test on: the system's `qemu-ARCH` (QEMU 7.2, plugin API v1)
/// and the cached QEMU 10 (API v4), those present; prints a `skipping:` line for QEMU 10
/// when it is not built.
pub fn qemus(arch: &str) -> Vec<String> {
    let mut v = Vec::new();
    let system = format!("qemu-{arch}");
    if have(&system) {
        v.push(system);
    } else {
        println!("skipping: {system} not found (apt-get install qemu-user)");
    }
    match qemu10(arch) {
        Some(q) => v.push(q),
        None => println!(
            "skipping: QEMU 10 (plugin API v4) for {arch} is not built (scripts/build-qemu.sh)"
        ),
    }
    v
}

/// Whether `qemu` is the cached QEMU 10, which loads the API v4 plugin.
pub fn is_qemu10(qemu: &str) -> bool {
    qemu.contains("qemu-10.")
}

/// The plugin build that `qemu` loads: API v4 for the cached QEMU 10, else API v1.
pub fn plugin_for(qemu: &str) -> PathBuf {
    if is_qemu10(qemu) {
        build_plugin_v4()
    } else {
        build_plugin()
    }
}

/// A source of `workloads/src` or of this crate's `tests/data`.
pub fn source(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let w = root.join("../../workloads/src").join(name);
    if w.exists() {
        w
    } else {
        root.join("tests/data").join(name)
    }
}

/// Compiles `src` with `cc` and `flags` into `dir`; panics when the compiler fails.
pub fn compile(cc: &str, flags: &[&str], src: &str, dir: &Path) -> PathBuf {
    try_compile(cc, flags, src, dir).unwrap_or_else(|e| panic!("{e}"))
}

/// Compiles `src` with `cc` and `flags` into `dir`, or says why it could not.
pub fn try_compile(cc: &str, flags: &[&str], src: &str, dir: &Path) -> Result<PathBuf, String> {
    let stem = Path::new(src)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("prog");
    let out = dir.join(format!(
        "{stem}-{cc}-{}",
        flags.join("").replace(['-', '=', '+', ','], "")
    ));
    let o = Command::new(cc)
        .args(["-std=gnu11", "-D_POSIX_C_SOURCE=200809L"])
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(source(src))
        .arg("-lm")
        .output()
        .map_err(|e| format!("cannot run {cc}: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "{cc} {flags:?} {src} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(out)
}

/// Address range of a function symbol, read from the ELF64 little-endian symbol table.
pub fn symbol_range(elf: &Path, name: &str) -> (u64, u64) {
    let b = std::fs::read(elf).expect("read ELF");
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes")) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
    assert_eq!(&b[..5], b"\x7fELF\x02", "ELF64 expected");
    let shoff = u64_at(0x28) as usize;
    let (shentsize, shnum) = (u16_at(0x3a), u16_at(0x3c));
    for i in 0..shnum {
        let sh = shoff + i * shentsize;
        if u32_at(sh + 4) != 2 {
            continue; // not SHT_SYMTAB
        }
        let (off, size, entsize) = (
            u64_at(sh + 0x18) as usize,
            u64_at(sh + 0x20) as usize,
            u64_at(sh + 0x38) as usize,
        );
        let strsh = shoff + u32_at(sh + 0x28) * shentsize;
        let stroff = u64_at(strsh + 0x18) as usize;
        for s in (off..off + size).step_by(entsize) {
            let n = stroff + u32_at(s);
            let end = n + b[n..].iter().position(|&c| c == 0).expect("NUL");
            if &b[n..end] == name.as_bytes() {
                let (value, sz) = (u64_at(s + 8), u64_at(s + 16));
                return (value, value + sz);
            }
        }
    }
    panic!("symbol {name} not found in {}", elf.display());
}

/// `START-END` of a function, for `region=`/`scope=`.
pub fn range(elf: &Path, name: &str) -> String {
    let (s, e) = symbol_range(elf, name);
    format!("{s:#x}-{e:#x}")
}

/// One run under QEMU: the plugin's summary and the program's standard output.
pub struct Run {
    pub json: Value,
    pub stdout: String,
    /// Bytes loaded and stored by the memory stream (with `stream`).
    pub stream: Option<(u64, u64)>,
}

/// Runs `bin args` under `qemu` (program and its options) with the plugin and `plugin_args`
/// (`out=` added); with `stream`, the access stream goes to a file and is summed.
pub fn run(
    qemu: &[&str],
    plugin_args: &str,
    bin: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    stream: bool,
    dir: &Path,
) -> Run {
    let out = dir.join(format!(
        "out-{}.json",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    let mem = out.with_extension("stream");
    let mut pa = format!("{},out={}", plugin_for(qemu[0]).display(), out.display());
    if !plugin_args.is_empty() {
        pa.push(',');
        pa.push_str(plugin_args);
    }
    if stream {
        pa.push_str(&format!(",mem=on,memout={},coalesce=64", mem.display()));
    }
    let mut cmd = Command::new(qemu[0]);
    cmd.args(&qemu[1..])
        .arg("-plugin")
        .arg(&pa)
        .arg(bin)
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("run qemu");
    assert!(
        o.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("plugin output")).expect("JSON");
    let stream = stream.then(|| {
        let b = std::fs::read(&mem).expect("stream file");
        assert_eq!(&b[..8], hpcscope_plugin_format::MAGIC);
        let (mut ld, mut st) = (0u64, 0u64);
        for rec in b[8..].chunks_exact(8) {
            let r = u64::from_le_bytes(rec.try_into().expect("8 bytes"));
            // A thread marker (or the marker of a thread that exits): no access.
            if is_marker(r) {
                continue;
            }
            let bytes = (1 + ((r >> 60) & 7)) << ((r >> 56) & 0xf);
            if r >> 63 == 1 {
                st += bytes;
            } else {
                ld += bytes;
            }
        }
        let _ = std::fs::remove_file(&mem);
        (ld, st)
    });
    let _ = std::fs::remove_file(&out);
    Run {
        json,
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stream,
    }
}

/// Runs `bin args` under `qemu` with the plugin, `plugin_args` and the memory stream on
/// (no coalescing): the plugin's summary and the stream's access records (thread markers
/// left out).
pub fn run_records(
    qemu: &[&str],
    plugin_args: &str,
    bin: &Path,
    args: &[&str],
    dir: &Path,
) -> (Value, Vec<u64>) {
    let out = dir.join("records.json");
    let mem = dir.join("records.stream");
    let pa = format!(
        "{},out={},{plugin_args},mem=on,memout={}",
        plugin_for(qemu[0]).display(),
        out.display(),
        mem.display()
    );
    let mut cmd = Command::new(qemu[0]);
    cmd.args(&qemu[1..])
        .arg("-plugin")
        .arg(&pa)
        .arg(bin)
        .args(args);
    let o = cmd.output().expect("run qemu");
    assert!(
        o.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("plugin output")).expect("JSON");
    let b = std::fs::read(&mem).expect("stream file");
    assert_eq!(&b[..8], hpcscope_plugin_format::MAGIC);
    let recs = b[8..]
        .chunks_exact(8)
        .map(|r| u64::from_le_bytes(r.try_into().expect("8 bytes")))
        .filter(|r| !is_marker(*r))
        .collect();
    let _ = std::fs::remove_file(&mem);
    let _ = std::fs::remove_file(&out);
    (json, recs)
}

/// A `key=value` number printed by a workload.
pub fn field(stdout: &str, k: &str) -> f64 {
    stdout
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {k}= in workload output: {stdout}"))
}

/// `totals[k]` as u64.
pub fn get(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"))
}
