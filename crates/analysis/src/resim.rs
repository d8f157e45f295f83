//! Re-simulating the caches of `explore` targets whose transforms change the cache geometry
//! (a level's size, associativity or line size): the bytes per level a profile gives were
//! simulated for the base machine's caches and do not describe another geometry.
//!
//! For every variant whose program is known (the scenario's `command`, or one given on the
//! command line), the distinct geometries of the changed targets are simulated in ONE
//! `hpcscope mix` run of that program (all the machines at once, no native timing run).
//! Each geometry's profile is kept in a cache directory under a key made of the geometry
//! and the program (its SHA-256, arguments, counted functions and vector length), so a second
//! exploration of the same scenario runs nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use hpcscope_core::explore::{Resimulated, Resolved, Scenario, cache_geometry_key};
use hpcscope_core::profile::AppMetrics;
use hpcscope_core::{Machine, Profile};

/// A program given on the command line for the variants whose scenario entry names none.
#[derive(Debug, Clone, Default)]
pub struct Program {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Count only inside these functions (`mix --function`).
    pub functions: Vec<String>,
}

/// What [`resimulate`] did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The re-simulated metrics, for [`hpcscope_core::explore::sweep_with`].
    pub resim: Resimulated,
    /// `mix` runs made (one per program with a geometry not in the cache).
    pub runs: usize,
    /// Geometries simulated by those runs.
    pub simulated: usize,
    /// (program, geometry) pairs taken from the cache.
    pub cached: usize,
    /// Remarks (a re-simulated run whose FLOPs differ from its profile's...).
    pub notes: Vec<String>,
}

/// One program to run: its identity and the machines (geometries) still to simulate.
struct Job {
    program: PathBuf,
    args: Vec<String>,
    functions: Vec<String>,
    sve_bits: Vec<u32>,
    /// Cache key of the program (hex).
    key: String,
    /// Geometry key -> machine, in first-seen order.
    machines: Vec<(String, Machine)>,
}

fn cache_file(dir: &Path, program_key: &str, geometry: &str) -> PathBuf {
    let k = hpcscope_host::hash::sha256_hex(format!("{program_key}\n{geometry}").as_bytes());
    dir.join(format!("{}.json", &k[..24]))
}

/// The cached profile at `path`: `Ok(None)` when there is none, `Err` (a remark) when a
/// file is there but is not a valid profile (it is simulated again and overwritten).
fn read_cached(path: &Path) -> std::result::Result<Option<Profile>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    Profile::from_json_str(&text, &path.display().to_string())
        .map(Some)
        .map_err(|e| hpcscope_core::error::shorten(&e.to_string(), 300))
}

/// Indices (into `r.targets`) of the targets whose transforms change the cache geometry.
pub fn changed_targets(s: &Scenario, r: &Resolved) -> Vec<usize> {
    r.targets
        .iter()
        .enumerate()
        .filter(|(_, (name, _))| {
            s.targets.iter().any(|t| {
                &t.name == name
                    && t.transforms
                        .iter()
                        .any(|tr| tr.cache_geometry_level().is_some())
            })
        })
        .map(|(i, _)| i)
        .collect()
}

/// Re-simulates the bytes per level of every (variant, changed target) pair whose variant
/// has a program: the scenario's `command` (relative to `base`, the scenario's directory),
/// or `default` for the variants without one. Profiles are cached in `cache_dir`.
pub fn resimulate(
    s: &Scenario,
    r: &Resolved,
    base: &Path,
    default: &Program,
    cache_dir: &Path,
) -> Result<Outcome> {
    let changed = changed_targets(s, r);
    let mut out = Outcome {
        resim: Resimulated {
            changed: changed.clone(),
            ..Resimulated::default()
        },
        ..Outcome::default()
    };
    if changed.is_empty() {
        return Ok(out);
    }
    // Each variant of r, with its spec (same order, as `resolve` builds them; `--point`
    // keeps one: find it by name).
    let mut jobs: Vec<Job> = Vec::new();
    // (variant index, target index) -> (job index, geometry key).
    let mut wanted: Vec<((usize, usize), usize, String)> = Vec::new();
    for (vi, (vname, vbits, _)) in r.variants.iter().enumerate() {
        let Some(spec) = s.variants.iter().find(|v| &v.name == vname) else {
            continue;
        };
        let (command, functions) = if spec.command.is_empty() {
            (&default.command, &default.functions)
        } else {
            (&spec.command, &spec.functions)
        };
        let Some((prog, args)) = command.split_first() else {
            continue;
        };
        let program = if spec.command.is_empty() {
            PathBuf::from(prog)
        } else {
            hpcscope_core::load::rel(base, prog)
        };
        let sha = hpcscope_host::hash::sha256_file(&program).map_err(|e| {
            hpcscope_core::Failure::new(
                hpcscope_core::kind::io_kind(&e),
                format!(
                    "variant '{vname}': cannot read the program {} to re-simulate its caches: {e}\n  fix: {}",
                    program.display(),
                    if spec.command.is_empty() {
                        "give an existing program after -- (a path from the current directory)"
                    } else {
                        "give an existing program in the variant's command (a path relative to the scenario's directory)"
                    }
                ),
            )
        })?;
        let arch = hpcscope_mix::ElfInfo::read(&program)?.arch;
        let sve_bits: Vec<u32> = match (arch, vbits) {
            (hpcscope_mix::Arch::Aarch64, Some(b)) => vec![*b],
            _ => Vec::new(),
        };
        let key = hpcscope_host::hash::sha256_hex(
            format!(
                "program={sha}\nargs={args:?}\nfunctions={functions:?}\nsve={sve_bits:?}\nplacement=compact"
            )
            .as_bytes(),
        );
        let ji = match jobs.iter().position(|j| j.key == key) {
            Some(i) => i,
            None => {
                jobs.push(Job {
                    program: program.clone(),
                    args: args.to_vec(),
                    functions: functions.clone(),
                    sve_bits,
                    key,
                    machines: Vec::new(),
                });
                jobs.len() - 1
            }
        };
        for &ti in &changed {
            let m = &r.targets[ti].1;
            let g = cache_geometry_key(m);
            let j = &mut jobs[ji];
            if !j.machines.iter().any(|(k, _)| k == &g) {
                j.machines.push((g.clone(), m.clone()));
            }
            wanted.push(((vi, ti), ji, g));
        }
    }
    // Each job: the geometries in the cache, then one run for the others.
    let mut profiles: BTreeMap<(usize, String), Profile> = BTreeMap::new();
    for (ji, j) in jobs.iter().enumerate() {
        let mut todo: Vec<(String, Machine)> = Vec::new();
        for (g, m) in &j.machines {
            match read_cached(&cache_file(cache_dir, &j.key, g)) {
                Ok(Some(p)) => {
                    out.cached += 1;
                    profiles.insert((ji, g.clone()), p);
                }
                Ok(None) => todo.push((g.clone(), m.clone())),
                Err(why) => {
                    out.notes.push(format!(
                        "a cached re-simulation could not be read, so it was simulated again: {why}"
                    ));
                    todo.push((g.clone(), m.clone()));
                }
            }
        }
        if todo.is_empty() {
            continue;
        }
        let opts = hpcscope_mix::MixOptions {
            program: j.program.clone(),
            args: j.args.clone(),
            sve_bits: j.sve_bits.clone(),
            machines: todo.iter().map(|(_, m)| m.clone()).collect(),
            functions: j.functions.clone(),
            native_runs: 0,
            ..hpcscope_mix::MixOptions::default()
        };
        let report = hpcscope_mix::analyze(&opts).with_context(|| {
            format!(
                "re-simulating the caches of {} geometries with {}",
                todo.len(),
                j.program.display()
            )
        })?;
        out.runs += 1;
        let v = report
            .variants
            .first()
            .ok_or_else(|| anyhow::anyhow!("mix of {} gave no result", j.program.display()))?;
        if v.partial {
            anyhow::bail!(
                "re-simulating the caches with {}: the emulated run did not finish ({:?}), so its bytes per level are partial\n  fix: check that the program runs to the end with these arguments ({:?})",
                j.program.display(),
                v.ending,
                j.args
            );
        }
        std::fs::create_dir_all(cache_dir).with_context(|| {
            format!(
                "cannot create the re-simulation cache {} (fix: give a writable --resim-dir)",
                cache_dir.display()
            )
        })?;
        for ((g, _), p) in todo.iter().zip(&v.profiles) {
            let path = cache_file(cache_dir, &j.key, g);
            hpcscope_core::fs::write_atomic(&path, p.to_json_string().as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            out.simulated += 1;
            profiles.insert((ji, g.clone()), p.clone());
        }
    }
    // The variants' metrics with the re-simulated bytes per level.
    for ((vi, ti), ji, g) in wanted {
        let p = &profiles[&(ji, g)];
        let (vname, _, threads) = &r.variants[vi];
        let spec = s.variants.iter().find(|v| &v.name == vname);
        let origin = format!(
            "the re-simulation of variant '{vname}' on target '{}'",
            r.targets[ti].0
        );
        let region_name = spec
            .and_then(|v| v.region.as_deref())
            .filter(|n| p.regions.iter().any(|x| &x.name == n));
        let region = p.region(region_name, &origin)?;
        let sim = region.thread_metrics(&origin)?;
        let metrics = with_bytes(threads, &sim, vname, &r.targets[ti].0)?;
        let (pf, sf) = (
            threads.iter().map(|t| t.flops).sum::<f64>(),
            sim.iter().map(|t| t.flops).sum::<f64>(),
        );
        if pf > 0.0 && ((sf - pf) / pf).abs() > 0.01 {
            let note = format!(
                "variant '{vname}': the re-simulated run counts {} FLOPs, its profile {}: the command may not be the run the profile describes (the FLOPs are the profile's, the bytes per level the re-simulated run's)",
                hpcscope_core::error::short_number(sf),
                hpcscope_core::error::short_number(pf)
            );
            if !out.notes.contains(&note) {
                out.notes.push(note);
            }
        }
        out.resim.metrics.insert((vi, ti), metrics);
    }
    Ok(out)
}

/// The profile's threads with the bytes per level of the re-simulated ones (FLOPs, FP
/// instructions and times stay the profile's).
pub(crate) fn with_bytes(
    profile: &[AppMetrics],
    sim: &[AppMetrics],
    variant: &str,
    target: &str,
) -> Result<Vec<AppMetrics>> {
    if profile.len() != sim.len() {
        anyhow::bail!(
            "variant '{variant}' on target '{target}': the re-simulated run has {} thread(s), the profile {}\n  fix: give the command (and OMP_NUM_THREADS) the profile was made with",
            sim.len(),
            profile.len()
        );
    }
    Ok(profile
        .iter()
        .zip(sim)
        .map(|(p, s)| AppMetrics {
            levels: s.levels.clone(),
            bytes: s.bytes.clone(),
            ..p.clone()
        })
        .collect())
}
