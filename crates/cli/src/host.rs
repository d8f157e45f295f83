//! This machine's description for `analyze` and `demo`: measured once by the quick
//! benchmark and cached under a fingerprint of the CPU, core count and kernel, so a changed
//! machine is measured again.

use std::path::PathBuf;

use anyhow::{Context, Result};
use hpcscope_bench::{BenchConfig, MachineNames};
use hpcscope_core::{Machine, Precision};

/// Cache directory: `$HPCSCOPE_CACHE_DIR`, else `$XDG_CACHE_HOME/hpcscope`, else
/// `~/.cache/hpcscope`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("HPCSCOPE_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("hpcscope");
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".cache/hpcscope"),
        None => std::env::temp_dir().join("hpcscope-cache"),
    }
}

/// A short fingerprint of this machine: CPU model, logical CPUs, kernel release.
pub fn fingerprint() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name") || l.starts_with("CPU part"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("unknown")
        .trim()
        .to_string();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let text = format!(
        "{model}|{cpus}|{}|{}",
        kernel.trim(),
        env!("CARGO_PKG_VERSION")
    );
    // FNV-1a: stable across runs and versions of Rust, unlike the std hasher.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// This machine, from the cache or measured now with the quick benchmark.
pub fn machine_cached() -> Result<Machine> {
    let path = cache_dir().join(format!("machine-{}.toml", fingerprint()));
    if let Ok(text) = std::fs::read_to_string(&path) {
        match Machine::from_toml_str(&text, &path.display().to_string()) {
            Ok(m) => return Ok(m),
            Err(e) => eprintln!("note: ignoring the cached machine ({e}); measuring again"),
        }
    }
    eprintln!(
        "measuring this machine once (hpcscope bench --quick); cached in {}",
        path.display()
    );
    let cfg = BenchConfig {
        quick: true,
        precisions: vec![Precision::F64],
        names: MachineNames {
            id: Some("this-machine".into()),
            name: None,
        },
        progress: true,
        ..Default::default()
    };
    let report = hpcscope_bench::run(&cfg).context("measuring this machine")?;
    let m = report.machine;
    std::fs::create_dir_all(path.parent().expect("a file in a directory"))
        .with_context(|| format!("cannot create {}", cache_dir().display()))?;
    crate::output::write_atomic(&path, &m.to_toml_string())?;
    Ok(m)
}
