//! `explore`: a scenario's design space swept, each design point projected from the source,
//! with the bytes per level re-simulated for targets whose caches differ.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use hpcscope_core::explore::{ExploreResult, Resolved, Scenario, ridge_diagnostics, sweep_with};
use hpcscope_core::machine::PeakChoice;
use hpcscope_core::project::{Inputs, Options};
use hpcscope_core::view::explore::ExploreText;
use hpcscope_report::Format;

use crate::resim::Program;
use crate::scenario::ProfileCaches;

/// How to sweep.
#[derive(Debug, Clone)]
pub struct ExploreOptions {
    /// The peak of every machine.
    pub peak: PeakChoice,
    /// Bandwidths and peaks at each binary's vector width (else each level's own).
    pub binary_width: bool,
    /// The calibration file (default: the bundled one).
    pub calibration: Option<PathBuf>,
    /// Use the calibration (point estimates and calibrated margin).
    pub calibrate: bool,
    /// Leave out the pairs whose roofline the measured source exceeds.
    pub drop_contradicted: bool,
    /// Keep the carried-time points.
    pub carried_time: bool,
    /// The directory relative paths of the scenario start from.
    pub base: PathBuf,
    /// Where the re-simulated bytes per level are kept.
    pub resim_dir: PathBuf,
    /// The program of the variants whose scenario entry has none.
    pub program: Program,
}

/// Keeps only design point `i` of `r` (variants outer, targets inner) and its variant's
/// caches; `scenario` names the file in the error when there is no such point.
pub fn keep_point(
    r: &mut Resolved,
    caches: &mut Vec<Arc<ProfileCaches>>,
    i: usize,
    scenario: &std::path::Path,
) -> Result<()> {
    let n = r.variants.len() * r.targets.len();
    if i >= n {
        anyhow::bail!(
            "--point {i}: {} has {n} design points ({} variant(s) x {} target(s)), numbered 0 to {}",
            scenario.display(),
            r.variants.len(),
            r.targets.len(),
            n.saturating_sub(1)
        );
    }
    let nt = r.targets.len();
    r.variants = vec![r.variants.swap_remove(i / nt)];
    *caches = vec![caches.swap_remove(i / nt)];
    r.targets = vec![r.targets.swap_remove(i % nt)];
    Ok(())
}

/// The directory relative paths of `scenario` start from, and where re-simulated bytes are
/// kept by default: `resim-cache/` beside the `output` file, or beside the scenario.
pub fn default_dirs(
    scenario: &std::path::Path,
    output: Option<&std::path::Path>,
) -> (PathBuf, PathBuf) {
    let base = scenario
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .to_path_buf();
    let resim = output
        .and_then(|o| o.parent())
        .unwrap_or(&base)
        .join("resim-cache");
    (base, resim)
}

/// A swept design space and what its text says beyond the result.
pub struct Explored {
    /// The result.
    pub result: ExploreResult,
    /// The source machine's name.
    pub source_name: String,
    /// Provenance of the source's peak.
    pub peak_provenance: String,
    /// Where the re-simulated profiles are cached.
    pub resim_dir: PathBuf,
    /// Notes of the re-simulation.
    pub notes: Vec<String>,
    /// A program was given but not run: every target has its profiles' caches.
    pub program_not_run: bool,
}

impl Explored {
    /// The result in `format` (see [`hpcscope_core::view::explore::render`]).
    pub fn render(&self, format: Format) -> Result<String, serde_json::Error> {
        hpcscope_core::view::explore::render(
            format,
            &self.result,
            &ExploreText {
                source_name: &self.source_name,
                peak_provenance: &self.peak_provenance,
                resim_dir: &self.resim_dir,
                notes: &self.notes,
                program_not_run: self.program_not_run,
            },
        )
    }

    /// The numbers kept in the run history: the source's GFLOP/s and each design point's
    /// interval and point estimate.
    pub fn numbers(&self) -> serde_json::Value {
        let result = &self.result;
        let mut numbers = serde_json::Map::new();
        numbers.insert("source_gflops".into(), result.source_gflops.into());
        for p in &result.points {
            let key = format!("{} @ {}", p.variant, p.target);
            numbers.insert(format!("{key}.lo_gflops"), p.interval.lo.into());
            numbers.insert(format!("{key}.hi_gflops"), p.interval.hi.into());
            if let Some(e) = &p.projection.point {
                numbers.insert(format!("{key}.point_gflops"), e.gflops.into());
            }
        }
        serde_json::Value::Object(numbers)
    }
}

/// Sweeps the design space of scenario `s` resolved into `r` (with the caches its profiles
/// were simulated for, `caches`) as `o` says.
pub fn explore(
    s: &Scenario,
    mut r: Resolved,
    caches: &[Arc<ProfileCaches>],
    o: &ExploreOptions,
) -> Result<Explored> {
    let peak = o.peak;
    r.source_machine = r.source_machine.with_peak(peak)?;
    for (_, m) in &mut r.targets {
        *m = m.with_peak(peak)?;
    }
    let opts = Options {
        pair_rule: s.pair_rule,
        method: Default::default(),
        scope: s.scope,
    };
    if !o.binary_width {
        r.source_widths = None;
        r.variant_widths.clear();
    }
    let model = hpcscope_core::load::calibration(o.calibration.as_deref())?;
    let outcome = crate::resim::resimulate(s, &r, caches, &o.base, &o.program, &o.resim_dir)?;
    let points = sweep_with(
        &r,
        s.precision,
        opts,
        &Inputs {
            calibration: o.calibrate.then_some(&model),
            drop_contradicted: o.drop_contradicted,
            carried_time: o.carried_time,
            ..Inputs::default()
        },
        &outcome.resim,
    )?;
    let result = ExploreResult {
        scenario: s.name.clone(),
        description: s.description.clone(),
        source_machine: r.source_machine.id.clone(),
        source_gflops: r.source_gflops,
        ridge: ridge_diagnostics(&points),
        approximate: outcome.approximate.clone(),
        peak,
        points,
        resimulation: (!outcome.resim.metrics.is_empty()).then_some(
            hpcscope_core::explore::Resimulation {
                points: outcome.resim.metrics.len(),
                simulated: outcome.simulated,
                mix_runs: outcome.runs,
                cached: outcome.cached,
                from_mix_run: outcome.from_mix_run,
            },
        ),
    };
    let peak_provenance = r
        .source_machine
        .peak(s.precision)
        .map(|p| p.provenance.clone())
        .unwrap_or_default();
    Ok(Explored {
        result,
        source_name: r.source_machine.name.clone(),
        peak_provenance,
        resim_dir: o.resim_dir.clone(),
        notes: outcome.notes,
        program_not_run: !o.program.command.is_empty() && outcome.resim.changed.is_empty(),
    })
}
