//! This machine's description for `analyze` and `demo`: measured once by the quick
//! benchmark and cached under a fingerprint of the CPU, core count and kernel, so a changed
//! machine is measured again.

use anyhow::{Context, Result};
use hpcscope_bench::{BenchConfig, MachineNames};
use hpcscope_core::{Machine, Precision};

/// A short key of this machine for the cache: its fingerprint (CPU model, logical CPUs,
/// kernel, governor) and the hpcscope version.
pub fn fingerprint() -> String {
    let f = hpcscope_host::Fingerprint::current(None).unwrap_or_default();
    format!("{}-{}", f.id(), env!("CARGO_PKG_VERSION"))
}

/// This machine, from the cache or measured now with the quick benchmark.
pub fn machine_cached() -> Result<Machine> {
    let path = hpcscope_host::dirs::cache_dir().join(format!("machine-{}.toml", fingerprint()));
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
    std::fs::create_dir_all(path.parent().expect("a file in a directory")).with_context(|| {
        format!(
            "cannot create {}",
            hpcscope_host::dirs::cache_dir().display()
        )
    })?;
    crate::output::write_atomic(&path, &m.to_toml_string())?;
    Ok(m)
}
