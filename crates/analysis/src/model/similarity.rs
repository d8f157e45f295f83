//! `model similarity`: is a mini-app kernel representative of its parent? Counter-vector
//! similarity and IPC-ratio invariance (section 4.1) from counters files or profiles.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use hpcscope_models::output::SimilarityOutput;
use hpcscope_models::similarity::{EventVector, ipc_invariance, vector_similarity};
use hpcscope_models::view::{self, Report};

use super::read;

/// `model similarity`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct SimilarityOptions {
    /// The kernel's (mini-app's) counters or profile.
    pub kernel: PathBuf,
    /// The parent code's counters or profile.
    pub parent: PathBuf,
    /// More environments: KERNEL,PARENT file pairs (another machine, ISA, compiler),
    /// for the IPC-ratio invariance.
    #[cfg_attr(feature = "clap", arg(long, value_name = "KERNEL,PARENT"))]
    pub also: Vec<String>,
    /// Region to compare (default: every region summed).
    #[cfg_attr(feature = "clap", arg(long))]
    pub region: Option<String>,
    /// Relative difference above which a counter is dissimilar.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.1))]
    pub threshold: f64,
    /// Largest deviation of the IPC ratio from its mean still called invariant, percent.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 10.0))]
    pub tolerance: f64,
}

/// Runs `model similarity`.
pub fn similarity(o: &SimilarityOptions) -> Result<Report<SimilarityOutput>> {
    let region = o.region.as_deref();
    let a = event_vector(&o.kernel, region)?;
    let b = event_vector(&o.parent, region)?;
    let sim = vector_similarity(&a, &b, o.threshold)?;
    let mut envs = vec![(a.clone(), b.clone())];
    for pair in &o.also {
        let (k, p) = pair.split_once(',').with_context(|| {
            format!("--also '{pair}' is not KERNEL,PARENT (two files separated by a comma)")
        })?;
        envs.push((
            event_vector(Path::new(k.trim()), region)?,
            event_vector(Path::new(p.trim()), region)?,
        ));
    }
    let have_ipc = envs.iter().all(|(k, p)| k.ipc().is_ok() && p.ipc().is_ok());
    let ipc = if have_ipc {
        let triples: Vec<_> = envs
            .iter()
            .map(|(k, p)| (format!("{} / {}", k.name, p.name), k, p))
            .collect();
        Some(ipc_invariance(&triples, o.tolerance)?)
    } else {
        if !o.also.is_empty() {
            // Asked for invariance: say exactly what is missing.
            for (k, p) in &envs {
                k.ipc()?;
                p.ipc()?;
            }
        }
        None
    };
    let out = SimilarityOutput {
        ipc,
        kernel: a,
        parent: b,
        similarity: sim,
    };
    let text = view::similarity(&out);
    Ok(Report::sorted(out, text))
}

/// Counters (any format `counters import` reads) or a profile, as an event vector.
fn event_vector(path: &Path, region: Option<&str>) -> Result<EventVector> {
    let text = read(path)?;
    let name = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    // A profile (mix, counters --profile) carries a format version; counters files do not.
    let is_profile = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .is_some_and(|v| v.get("format_version").is_some() && v.get("regions").is_some());
    if is_profile {
        let p = hpcscope_core::profile::Profile::from_json_str(&text, &path.display().to_string())?;
        return Ok(hpcscope_models::similarity::from_profile(
            &p, &name, region,
        )?);
    }
    let raw = hpcscope_counters::import::import_file(path, None, &name)?;
    let mut events: BTreeMap<String, f64> = BTreeMap::new();
    let mut time: Option<f64> = None;
    let mut uncounted = BTreeSet::new();
    let mut found = false;
    for r in raw
        .regions
        .iter()
        .filter(|r| region.is_none_or(|n| r.name == n))
    {
        found = true;
        for t in &r.threads {
            if let Some(s) = t.time_s {
                time = Some(time.map_or(s, |x: f64| x.max(s)));
            }
            for (k, c) in &t.counters {
                match c.value {
                    Some(v) => *events.entry(k.clone()).or_insert(0.0) += v,
                    None => {
                        uncounted.insert(k.clone());
                    }
                }
            }
        }
    }
    if !found {
        bail!(
            "{}: no region '{}' (regions: {})",
            path.display(),
            region.unwrap_or(""),
            raw.regions
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !uncounted.is_empty() {
        // A counter missing in one thread would bias its total: leave it out, and say so.
        for k in &uncounted {
            events.remove(k);
        }
        eprintln!(
            "warning: {}: {} counter(s) not counted in some thread, left out: {}",
            path.display(),
            uncounted.len(),
            uncounted.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(EventVector {
        name,
        events,
        time_s: time,
    })
}
