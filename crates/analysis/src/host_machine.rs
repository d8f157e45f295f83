//! This machine's description for `analyze`, `demo` and `validate`: measured once by the
//! quick benchmark and cached under a fingerprint of the CPU, core count, kernel and
//! hpcscope version, so a changed machine is measured again.

use anyhow::{Context, Result};
use std::path::Path;

use hpcscope_bench::report::Report as BenchReport;
use hpcscope_bench::{BenchConfig, BenchError, MachineNames};
use hpcscope_core::{Machine, Precision, load};

/// What the cached description holds; raised when the benchmark measures more (2: the
/// bandwidths and peaks of every vector width; 3: the f32 peaks too; 4: the divider's
/// `div` and `sqrt` ceilings at every width; 5: the FP operations' latencies and the
/// scalar clock; 6: the last cache's capacity from the sweep's step into main memory where
/// a step beyond sysfs's capacity hid it), so that an older cached file is measured again.
const GENERATION: u32 = 6;

/// The key of this machine in the cache: its fingerprint, the hpcscope version and the
/// generation of the description.
pub fn cache_key() -> String {
    let f = hpcscope_host::Fingerprint::current();
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
        // Both: the validation protocol's precision pairs project double builds onto
        // float ones.
        precisions: vec![Precision::F64, Precision::F32],
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
    let report = measure(&cfg).context("measuring this machine")?;
    let m = report.machine;
    if let Some(why) = cache_refusal(&report.warnings, &m) {
        // A measurement of a busy machine would be the source of every later analysis:
        // it is used for this run only.
        eprintln!(
            "note: not caching this machine's description: {why}; this run uses it; measure again on a quiet machine (or give -m FILE from `hpcscope bench -o FILE`)"
        );
        return Ok(m);
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    hpcscope_core::fs::write_atomic(&path, m.to_toml_string().as_bytes())
        .with_context(|| format!("cannot write '{}'", path.display()))?;
    Ok(m)
}

/// Why a measured description must not be cached: repetitions that disagreed (a busy
/// machine), or figures no machine can have (a node slower than one of its cores).
pub fn cache_refusal(warnings: &[String], m: &Machine) -> Option<String> {
    if !warnings.is_empty() {
        return Some(format!(
            "{} measurement(s) varied by more than 10 % between repetitions (the machine was busy)",
            warnings.len()
        ));
    }
    for p in &m.peaks {
        if let (Some(c), Some(n)) = (p.core_gflops, p.node_gflops)
            && n < c
        {
            return Some(format!(
                "the {} node peak ({n:.1} GFLOP/s) is below the one-core peak ({c:.1})",
                p.precision
            ));
        }
    }
    for l in &m.levels {
        if let (Some(c), Some(n)) = (l.core_gbs, l.node_gbs)
            && n < c * 0.9
        {
            return Some(format!(
                "the {} node bandwidth ({n:.1} GB/s) is below the one-core bandwidth ({c:.1})",
                l.name
            ));
        }
    }
    None
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
    fn a_busy_or_impossible_measurement_is_not_cached() {
        let mut m = hpcscope_core::library::builtin("thunderx2").unwrap();
        assert_eq!(cache_refusal(&[], &m), None);
        let noisy = cache_refusal(&["triad-512 at 1 MiB: spread 35 %".into()], &m).unwrap();
        assert!(noisy.contains("busy"), "{noisy}");
        m.peaks[0].core_gflops = Some(59.0);
        m.peaks[0].node_gflops = Some(17.8);
        let bad = cache_refusal(&[], &m).unwrap();
        assert!(bad.contains("below the one-core peak"), "{bad}");
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
