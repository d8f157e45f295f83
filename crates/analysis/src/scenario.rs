//! Scenario files resolved into machines and profiles: an `explore` scenario (source,
//! variants, targets), or the targets alone for `analyze --scenario`. Both resolve their
//! targets (a machine, then its transforms) the same way.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use hpcscope_core::explore::{Resolved, Scenario, TargetSpec, apply};
use hpcscope_core::project::Spread;
use hpcscope_core::roofline::AccessWidths;
use hpcscope_core::{InputError, Machine, load};

/// Each target's machine, with its transforms applied; machine files are found relative to
/// `base` (the scenario's directory).
pub fn resolve_targets(
    specs: &[TargetSpec],
    base: &Path,
) -> hpcscope_core::Result<Vec<(String, Machine)>> {
    let lookup = |id: &str| load::machine_rel(id, base);
    let mut targets = Vec::new();
    // Many targets name the same machine: read each file once.
    let mut loaded: std::collections::HashMap<&str, Machine> = std::collections::HashMap::new();
    for t in specs {
        let mut m = match loaded.get(t.machine.as_str()) {
            Some(m) => m.clone(),
            None => {
                let m = load::machine_rel(&t.machine, base)?;
                loaded.insert(&t.machine, m.clone());
                m
            }
        };
        for tr in &t.transforms {
            m = apply(&m, tr, &lookup)?;
        }
        targets.push((t.name.clone(), m));
    }
    Ok(targets)
}

/// Limits of one sweep (see [`hpcscope_core::explore::Cost`]).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Design points at most.
    pub max_points: u64,
    /// Memory of the results at most, bytes.
    pub max_bytes: u64,
}

impl Limits {
    /// `max_points` and `max_mb` MiB of results, or none for a sweep never held whole at
    /// once (`whole` false: one point per task of a job array).
    pub fn of(max_points: u64, max_mb: u64, whole: bool) -> Limits {
        if !whole {
            return Limits {
                max_points: u64::MAX,
                max_bytes: u64::MAX,
            };
        }
        Limits {
            max_points,
            max_bytes: max_mb.saturating_mul(1 << 20),
        }
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_points: hpcscope_core::explore::DEFAULT_MAX_POINTS,
            max_bytes: hpcscope_core::explore::DEFAULT_MAX_BYTES,
        }
    }
}

/// What a variant's profile says of the caches its bytes per level were simulated for.
#[derive(Debug, Clone, Default)]
pub struct ProfileCaches {
    /// The machine the profile names (`machine`: the one whose caches were simulated, or
    /// that it ran on), if any.
    pub machine: Option<String>,
    /// The profile file's directory (a machine file it names is looked for there too).
    pub dir: std::path::PathBuf,
    /// The profiles of the same `hpcscope mix` run for its other machines, at the same
    /// vector length: `mix -m A -m B -o DIR` writes one profile per machine and
    /// `DIR/mix-report.json` with all of them; a variant whose profile is one of those has
    /// the others here (empty otherwise).
    pub same_run: Vec<hpcscope_core::Profile>,
}

/// The profiles of a `mix-report.json`, one list per vector length (empty: no report, or
/// one that does not parse).
type RunProfiles = Vec<Vec<hpcscope_core::Profile>>;

fn read_report(dir: &Path) -> RunProfiles {
    let Ok(text) = load::read_text_bytes(&dir.join("mix-report.json")) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    v["variants"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .map(|var| {
            var["profiles"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .filter_map(|x| serde_json::from_value(x.clone()).ok())
                .collect()
        })
        .collect()
}

/// What `p`, read from `path`, says of its caches; `reports` keeps each directory's
/// `mix-report.json`, read once. The report's other profiles count only when it holds `p`
/// itself (equal in every field): else the report is another run's.
fn profile_caches(
    p: &hpcscope_core::Profile,
    path: &Path,
    reports: &mut std::collections::HashMap<std::path::PathBuf, RunProfiles>,
) -> ProfileCaches {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let runs = reports
        .entry(dir.clone())
        .or_insert_with(|| read_report(&dir));
    let same_run = runs
        .iter()
        .find_map(|profiles| {
            let i = profiles.iter().position(|q| q == p)?;
            let mut others = profiles.clone();
            others.remove(i);
            Some(others)
        })
        .unwrap_or_default();
    ProfileCaches {
        machine: p.machine.clone(),
        dir,
        same_run,
    }
}

/// Loads an `explore` scenario and every file it names, within the default [`Limits`].
pub fn resolve(path: &Path) -> Result<(Scenario, Resolved)> {
    resolve_within(path, Limits::default()).map(|(s, r, _)| (s, r))
}

/// Loads an `explore` scenario and every file it names, refusing a sweep past `limits`: the
/// number of design points is checked before any profile is read, the whole cost after.
/// Also gives what each variant's profile says of its caches (in the order of the
/// variants), for [`crate::resim::resimulate`].
pub fn resolve_within(
    path: &Path,
    limits: Limits,
) -> Result<(Scenario, Resolved, Vec<Arc<ProfileCaches>>)> {
    let text = load::read(
        path,
        "scenario",
        "give a scenario TOML file (see examples/scenarios/)",
    )?;
    let origin = path.display().to_string();
    let s = Scenario::from_toml_str(&text, &origin)?;
    let points = (s.variants.len() as u64).saturating_mul(s.targets.len() as u64);
    if points > limits.max_points {
        return Err(hpcscope_core::Failure::input(format!(
            "{origin}: the sweep has {points} design points ({} variants x {} targets), past the limit of {}\n  fix: split the scenario (fewer variants or targets), run it as a job array (--slurm, one task per point), or raise the limit with --max-points N",
            s.variants.len(),
            s.targets.len(),
            limits.max_points
        ))
        .into());
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let sm = load::machine_rel(&s.source.machine, base)?;
    let sp_path = load::rel(base, &s.source.profile);
    let sp = load::profile(&sp_path)?;
    let so = sp_path.display().to_string();
    let sr = sp.region(s.source.region.as_deref(), &so)?;
    let source_threads = sr.thread_metrics(&so)?;
    let source_gflops = match s.source.gflops {
        Some(g) => {
            if let Some(e) = hpcscope_core::range::check(
                &hpcscope_core::range::MEASURED_GFLOPS,
                &origin,
                "source.gflops",
                g,
            ) {
                return Err(e.into());
            }
            g
        }
        None => sr.aggregate(&so)?.gflops().ok_or_else(|| {
            InputError::new(
                &origin,
                "source.gflops",
                "is missing and the source profile has no time",
                "add gflops = <measured GFLOP/s> to [source], or use a profile of a native run",
            )
        })?,
    };
    if sp.precision != s.precision {
        return Err(InputError::new(
            &origin,
            "precision",
            format!(
                "is {} but the source profile is {}",
                s.precision, sp.precision
            ),
            "set precision to the profiles' precision",
        )
        .into());
    }
    let mut variants = Vec::new();
    // Many variants name the same profile: read each file once.
    let mut loaded: std::collections::HashMap<std::path::PathBuf, hpcscope_core::Profile> =
        std::collections::HashMap::new();
    let mut caches: std::collections::HashMap<std::path::PathBuf, Arc<ProfileCaches>> =
        std::collections::HashMap::new();
    let mut reports = std::collections::HashMap::new();
    let mut variant_caches = Vec::new();
    let mut variant_widths = Vec::new();
    let mut variant_instructions = Vec::new();
    for (i, v) in s.variants.iter().enumerate() {
        let vp = load::rel(base, &v.profile);
        let p = match loaded.get(&vp) {
            Some(p) => p,
            None => {
                let p = load::profile(&vp)?;
                loaded.entry(vp.clone()).or_insert(p)
            }
        };
        let vo = vp.display().to_string();
        variant_caches.push(
            caches
                .entry(vp.clone())
                .or_insert_with(|| Arc::new(profile_caches(p, &vp, &mut reports)))
                .clone(),
        );
        if p.precision != s.precision {
            return Err(InputError::new(
                &origin,
                format!("variants[{i}].profile"),
                format!(
                    "{vo} is {} but the scenario is {}",
                    p.precision, s.precision
                ),
                "use profiles of one precision",
            )
            .into());
        }
        let region = p.region(
            v.region
                .as_deref()
                .or(s.source.region.as_deref())
                .filter(|r| p.regions.iter().any(|x| &x.name == r)),
            &vo,
        )?;
        variant_instructions.push(region.instructions());
        let threads = region.thread_metrics(&vo)?;
        variants.push((v.name.clone(), v.vector_bits, threads));
        variant_widths.push(Some(AccessWidths::single(
            v.vector_bits.unwrap_or(p.vector_bits),
            "the profile's vector width",
        )));
    }
    let source_spread = if s.source.times_s.is_empty() {
        None
    } else {
        let sp = Spread::from_times(&s.source.times_s);
        if sp.is_none() {
            return Err(InputError::new(
                &origin,
                "source.times_s",
                "needs at least two positive times",
                "give the times of the source's timed runs, in seconds: times_s = [1.02, 0.98, 1.01]",
            )
            .into());
        }
        sp
    };
    let targets = resolve_targets(&s.targets, base)?;
    let r = Resolved {
        source_machine: sm,
        source_threads,
        source_gflops,
        variants,
        targets,
        source_widths: Some(AccessWidths::single(
            sp.vector_bits,
            "the profile's vector width",
        )),
        variant_widths,
        source_spread,
        source_instructions: sr.instructions(),
        variant_instructions,
    };
    hpcscope_core::explore::Cost::of(&r)
        .check(limits.max_points, limits.max_bytes)
        .map_err(|f| hpcscope_core::Failure::input(format!("{origin}: {}", f.message)))?;
    Ok((s, r, variant_caches))
}

/// The scenario `analyze --scenario` reads: the targets of an `explore` scenario; the
/// source and the variant are the analyzed program.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SweepScenario {
    name: String,
    #[serde(default)]
    description: String,
    targets: Vec<TargetSpec>,
}

/// The targets of a scenario for `analyze --scenario`, resolved before the analysis (a bad
/// file fails fast).
#[derive(Debug)]
pub struct SweepTargets {
    /// Scenario title.
    pub name: String,
    /// Scenario description.
    pub description: String,
    /// The file.
    pub origin: String,
    /// (name, machine) of each target.
    pub targets: Vec<(String, Machine)>,
}

/// Reads a scenario's targets for `analyze --scenario`.
pub fn read_sweep_targets(path: &Path) -> Result<SweepTargets> {
    let text = load::read(
        path,
        "scenario",
        "give a scenario TOML file (see docs/scenario-format.md)",
    )?;
    let origin = path.display().to_string();
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text).to_string();
    let s: SweepScenario = toml::from_str(&text).map_err(|e| {
        let mut ie = hpcscope_core::error::from_toml(
            &origin,
            &text,
            &e,
            "see docs/scenario-format.md and examples/scenarios/",
        );
        if ie.message.contains("source") || ie.message.contains("variants") {
            ie.fix = "analyze takes the source and the variant from the analyzed program: remove [source] and [[variants]], or run `hpcscope explore` on this file".into();
        }
        hpcscope_core::Error::Input(ie)
    })?;
    if s.targets.is_empty() {
        return Err(hpcscope_core::Error::Input(InputError::new(
            &origin,
            "targets",
            "is empty",
            "add at least one [[targets]] (a machine, with transforms or not)",
        ))
        .into());
    }
    let mut seen = std::collections::HashMap::new();
    for (i, t) in s.targets.iter().enumerate() {
        if let Some(first) = seen.insert(t.name.as_str(), i) {
            return Err(hpcscope_core::Error::Input(InputError::new(
                &origin,
                format!("targets[{i}].name"),
                format!(
                    "'{}' appears twice (also targets[{first}]): the results could not be told apart",
                    hpcscope_core::error::shorten(&t.name, 80)
                ),
                "give each target a distinct name",
            ))
            .into());
        }
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let targets = resolve_targets(&s.targets, base)?;
    Ok(SweepTargets {
        name: s.name,
        description: s.description,
        origin,
        targets,
    })
}
