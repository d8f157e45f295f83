//! This machine's description for `analyze`, `demo` and `validate`: measured once by the
//! quick benchmark and cached under a fingerprint of the CPU, core count, kernel and
//! hpcscope version, so a changed machine is measured again.

use anyhow::{Context, Result};
use std::path::Path;

use hpcscope_bench::report::Report as BenchReport;
use hpcscope_bench::{BenchConfig, BenchError, MachineNames};
use hpcscope_core::{Machine, Precision, load};

/// What the cached description holds; raised when the benchmark measures more (2: the
/// bandwidths and peaks of every vector width), so that an older cached file is measured
/// again.
const GENERATION: u32 = 2;

/// The key of this machine in the cache: its fingerprint, the hpcscope version and the
/// generation of the description.
pub fn cache_key() -> String {
    let f = hpcscope_host::Fingerprint::current(None).unwrap_or_default();
    format!("{}-{}-g{GENERATION}", f.id(), env!("CARGO_PKG_VERSION"))
}

/// This machine, from the cache or measured now with the quick benchmark. A benchmark that
/// cannot run keeps its error's kind (an environment limit stays one).
pub fn machine_cached() -> Result<Machine> {
    machine_cached_in(&hpcscope_host::dirs::cache_dir(), |cfg| {
        hpcscope_bench::run(cfg)
    })
}

/// [`machine_cached`] with the cache in `dir` and `measure` standing for the benchmark.
pub fn machine_cached_in(
    dir: &Path,
    measure: impl FnOnce(&BenchConfig) -> Result<BenchReport, BenchError>,
) -> Result<Machine> {
    let path = dir.join(format!("machine-{}.toml", cache_key()));
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
        // Other programs only slow a kernel down: the best repetition is the nearest to
        // what this machine sustains when it is shared.
        statistic: hpcscope_bench::stats::Statistic::Best,
        cpu_clock: true,
        ..Default::default()
    };
    let m = measure(&cfg).context("measuring this machine")?.machine;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    hpcscope_core::fs::write_atomic(&path, m.to_toml_string().as_bytes())
        .with_context(|| format!("cannot write '{}'", path.display()))?;
    Ok(m)
}

/// The source machine: given (a built-in id or a file), or this machine from the cache.
pub fn source_machine(arg: Option<&str>) -> Result<Machine> {
    match arg {
        Some(m) => Ok(load::machine(m)?),
        None => machine_cached(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_core::{Classify, ErrorKind};

    /// A benchmark that cannot run on this machine is an environment limit, through the
    /// analysis too (it used to become a plain message, and `analyze` exited 2 instead of 3).
    #[test]
    fn a_benchmark_environment_limit_keeps_its_kind() {
        let d = tempfile::tempdir().unwrap();
        let e = machine_cached_in(d.path(), |_| {
            Err(BenchError::Environment {
                what: "cannot pin a thread to CPU 0".into(),
                fix: "run outside a restricted cpuset".into(),
            })
        })
        .unwrap_err();
        let kind = e
            .chain()
            .find_map(|c| c.downcast_ref::<BenchError>())
            .map(|b| b.kind());
        assert_eq!(kind, Some(ErrorKind::Environment), "{e:#}");
        assert!(format!("{e:#}").contains("cannot pin"), "{e:#}");
        // Nothing was cached.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_cached_machine_is_read_back_without_measuring() {
        let d = tempfile::tempdir().unwrap();
        let m = hpcscope_core::library::builtin("thunderx2").unwrap();
        std::fs::write(
            d.path().join(format!("machine-{}.toml", cache_key())),
            m.to_toml_string(),
        )
        .unwrap();
        let got = machine_cached_in(d.path(), |_| panic!("must not measure")).unwrap();
        assert_eq!(got, m);
    }
}
