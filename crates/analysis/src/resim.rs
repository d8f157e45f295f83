//! Re-simulating the caches of `explore` targets whose caches differ from those a variant's
//! profile was simulated for (a transformed level's size, associativity or line size, or
//! simply another machine): the bytes per level a profile gives were simulated for its
//! machine's caches and do not describe another geometry. The test is
//! [`hpcscope_core::explore::caches_differ`], the one `analyze --scenario` makes.
//!
//! A profile written by `hpcscope mix -m A -m B -o DIR` has its run's profiles for the
//! other machines in `DIR/mix-report.json`: a target with one of those geometries takes
//! that profile's bytes, and nothing runs. For the other targets of every variant whose
//! program is known (the scenario's `command`, or one given on the command line), the
//! distinct geometries are simulated in ONE
//! `hpcscope mix` run of that program (all the machines at once, no native timing run).
//! Each geometry's profile is kept in a cache directory under a key made of the geometry
//! and the program (its SHA-256, arguments, counted functions and vector length), so a second
//! exploration of the same scenario runs nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use std::sync::Arc;

use hpcscope_core::explore::{Resimulated, Resolved, Scenario, cache_geometry_key, caches_differ};
use hpcscope_core::profile::AppMetrics;
use hpcscope_core::{Machine, Profile};

use crate::scenario::ProfileCaches;

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
    /// Design points whose bytes came from a profile of the variant profile's own `mix`
    /// run, simulated for the target's geometry (nothing run).
    pub from_mix_run: usize,
    /// Remarks (a re-simulated run whose FLOPs differ from its profile's...).
    pub notes: Vec<String>,
    /// One line per target with design points that kept their profile's bytes per level
    /// although the target's caches differ (approximate): why, and how to do better.
    pub approximate: Vec<String>,
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
    use hpcscope_core::load::{ReadError, read_text_bytes, text};
    let text = match read_text_bytes(path).map(text) {
        Ok(Ok(t)) => t,
        Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
        Ok(Err(m)) => return Err(format!("{}: {m}", path.display())),
    };
    Profile::from_json_str(&text, &path.display().to_string())
        .map(Some)
        .map_err(|e| hpcscope_core::error::shorten(&e.to_string(), 300))
}

/// Why a design point whose target's caches differ from its profile's kept the profile's
/// bytes per level.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Approx {
    /// The target's caches cannot be simulated (why).
    Unsimulable(String),
    /// No program to re-simulate with.
    NoProgram,
}

/// The machine whose caches a variant's profile was simulated for: the one it names
/// (`machine`), found as the source, a target, a built-in id or a machine file beside the
/// profile or the scenario; the source's when it names none (`Some(None)`) or one that
/// cannot be found (`Some(Some(id))`).
fn profile_machine(
    pc: &ProfileCaches,
    r: &Resolved,
    base: &Path,
) -> (Machine, Option<Option<String>>) {
    match pc.machine.as_deref() {
        None => (r.source_machine.clone(), Some(None)),
        Some(id) => match machine_named(id, r, &[&pc.dir, base]) {
            Some(m) => (m, None),
            None => (r.source_machine.clone(), Some(Some(id.to_string()))),
        },
    }
}

/// `the profile of variant 'a'`, `the profiles of variants 'a', 'b'`, `the profiles of N
/// variants`, and the verb's ending for it (`""` or `"s"`: `name{}`, and `"was"`/`"were"`).
fn profiles_of(names: &[&str]) -> (String, &'static str, &'static str) {
    let one = names.len() == 1;
    let who = if names.len() > 4 {
        format!("the profiles of {} variants", names.len())
    } else {
        let q: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
        if one {
            format!("the profile of variant {}", q.join(", "))
        } else {
            format!("the profiles of variants {}", q.join(", "))
        }
    };
    if one {
        (who, "s", "was")
    } else {
        (who, "", "were")
    }
}

/// The machine `id` names: the source, a target (by its id, transforms applied), a built-in
/// machine, or a machine file relative to one of `dirs`.
fn machine_named(id: &str, r: &Resolved, dirs: &[&Path]) -> Option<Machine> {
    if r.source_machine.id == id {
        return Some(r.source_machine.clone());
    }
    if let Some((_, m)) = r.targets.iter().find(|(_, m)| m.id == id) {
        return Some(m.clone());
    }
    dirs.iter()
        .find_map(|d| hpcscope_core::load::machine_rel(id, d).ok())
}

/// The machines of `pc`'s other `mix` profiles (`same_run`), each with its index there; a
/// profile whose machine cannot be found is left out.
fn same_run_machines(pc: &ProfileCaches, r: &Resolved, base: &Path) -> Vec<(Machine, usize)> {
    pc.same_run
        .iter()
        .enumerate()
        .filter_map(|(i, q)| {
            let id = q.machine.as_deref()?;
            Some((machine_named(id, r, &[&pc.dir, base])?, i))
        })
        .collect()
}

/// Re-simulates the bytes per level of every design point whose target's caches differ
/// from those its variant's profile was simulated for ([`caches_differ`], the test `analyze
/// --scenario` makes): a transformed cache geometry, or another machine. Each such point
/// takes, in this order: the profile of the same `mix` run simulated for that geometry
/// (`caches[vi].same_run`); a re-simulation with the variant's program, the scenario's
/// `command` (relative to `base`, the scenario's directory) or `default` for the variants
/// without one (profiles cached in `cache_dir`); else it keeps the profile's bytes and is
/// said approximate, with why and how to do better. `caches` is what each variant's
/// profile says of its caches, in the order of `r.variants`.
#[allow(clippy::too_many_lines)]
pub fn resimulate(
    s: &Scenario,
    r: &Resolved,
    caches: &[Arc<ProfileCaches>],
    base: &Path,
    default: &Program,
    cache_dir: &Path,
) -> Result<Outcome> {
    let mut out = Outcome::default();
    // (variant index, target index) -> why it is approximate.
    let mut approx: Vec<((usize, usize), Approx, String)> = Vec::new();
    // The design points to re-simulate, per variant.
    let mut to_run: Vec<(usize, Vec<usize>)> = Vec::new();
    // The profile machine of each distinct profile (many variants share one), and whether
    // it was assumed (the source's: the profile names no machine, or one not found).
    type Known = (
        *const ProfileCaches,
        Machine,
        Option<Option<String>>,
        Vec<(Machine, usize)>,
    );
    let mut known: Vec<Known> = Vec::new();
    // Variants whose profile names no machine; (machine not found, variants).
    let mut unnamed: Vec<&str> = Vec::new();
    let mut not_found: Vec<(String, Vec<&str>)> = Vec::new();
    for (vi, (vname, _, threads)) in r.variants.iter().enumerate() {
        let Some(pc) = caches.get(vi) else {
            continue;
        };
        let i = match known
            .iter()
            .position(|(p, _, _, _)| std::ptr::eq(*p, Arc::as_ptr(pc)))
        {
            Some(i) => i,
            None => {
                let (m, assumed) = profile_machine(pc, r, base);
                let same_run = same_run_machines(pc, r, base);
                known.push((Arc::as_ptr(pc), m, assumed, same_run));
                known.len() - 1
            }
        };
        let (_, pm, assumed, same_run) = &known[i];
        match assumed {
            Some(None) => unnamed.push(vname),
            Some(Some(id)) => match not_found.iter_mut().find(|(x, _)| x == id) {
                Some((_, v)) => v.push(vname),
                None => not_found.push((id.clone(), vec![vname])),
            },
            None => {}
        }
        let spec = s.variants.iter().find(|v| &v.name == vname);
        let has_program =
            spec.is_some_and(|v| !v.command.is_empty()) || !default.command.is_empty();
        let mut run = Vec::new();
        for (ti, (tname, tm)) in r.targets.iter().enumerate() {
            if !caches_differ(pm, tm) {
                continue;
            }
            out.resim.changed.push((vi, ti));
            let mine = same_run
                .iter()
                .find(|(m, _)| !caches_differ(m, tm))
                .map(|(_, i)| &pc.same_run[*i]);
            if let Some(p) = mine {
                let origin = format!(
                    "the profile of {} from the mix run of variant '{vname}'s profile",
                    p.machine.as_deref().unwrap_or_default()
                );
                let sim = variant_region(p, s, vname, &origin)?;
                let metrics = with_bytes(threads, &sim, vname, tname)?;
                flops_note(
                    &mut out.notes,
                    vname,
                    threads,
                    &sim,
                    "its profile's mix run",
                );
                out.resim.metrics.insert((vi, ti), metrics);
                out.from_mix_run += 1;
            } else if let Err(e) = hpcscope_mix::node(tm) {
                let why = e.to_string().lines().next().unwrap_or_default().to_string();
                approx.push(((vi, ti), Approx::Unsimulable(why), pm.id.clone()));
            } else if has_program {
                run.push(ti);
            } else {
                approx.push(((vi, ti), Approx::NoProgram, pm.id.clone()));
            }
        }
        if !run.is_empty() {
            to_run.push((vi, run));
        }
    }
    // The assumption matters where some target's caches are not the source's.
    let src = &r.source_machine;
    if r.targets.iter().any(|(_, m)| caches_differ(src, m)) {
        if !unnamed.is_empty() {
            let (who, s_, _) = profiles_of(&unnamed);
            out.notes.push(format!(
                "{who} name{s_} no machine (`machine`), so the bytes per level are taken as simulated for the source's caches ({})",
                src.id
            ));
        }
        for (id, vs) in &not_found {
            let (who, _, was) = profiles_of(vs);
            out.notes.push(format!(
                "{who} {was} simulated for machine '{id}', which is neither the source, a target, a built-in machine nor a machine file beside the profile or the scenario, so the bytes per level are taken as simulated for the source's caches ({})",
                src.id
            ));
        }
    }
    out.approximate = approximate_lines(s, r, &approx);
    // Each variant to re-simulate, with its program.
    let mut jobs: Vec<Job> = Vec::new();
    // (variant index, target index) -> (job index, geometry key).
    let mut wanted: Vec<((usize, usize), usize, String)> = Vec::new();
    for (vi, run) in to_run {
        let (vname, vbits, _) = &r.variants[vi];
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
        for ti in run {
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
            run: hpcscope_mix::RunSpec {
                program: j.program.clone(),
                args: j.args.clone(),
                functions: j.functions.clone(),
                ..Default::default()
            },
            sve_bits: j.sve_bits.clone(),
            machines: todo.iter().map(|(_, m)| m.clone()).collect(),
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
        let origin = format!(
            "the re-simulation of variant '{vname}' on target '{}'",
            r.targets[ti].0
        );
        let sim = variant_region(p, s, vname, &origin)?;
        let metrics = with_bytes(threads, &sim, vname, &r.targets[ti].0)?;
        flops_note(&mut out.notes, vname, threads, &sim, "the re-simulated run");
        out.resim.metrics.insert((vi, ti), metrics);
    }
    Ok(out)
}

/// The per-thread metrics of variant `vname`'s region in `p` (a simulation of its program
/// for another machine's caches).
fn variant_region(p: &Profile, s: &Scenario, vname: &str, origin: &str) -> Result<Vec<AppMetrics>> {
    let spec = s.variants.iter().find(|v| v.name == vname);
    let region_name = spec
        .and_then(|v| v.region.as_deref().or(s.source.region.as_deref()))
        .filter(|n| p.regions.iter().any(|x| &x.name == n));
    Ok(p.region(region_name, origin)?.thread_metrics(origin)?)
}

/// A remark when `sim` (`what`) counts other FLOPs than the variant's profile.
fn flops_note(
    notes: &mut Vec<String>,
    vname: &str,
    threads: &[AppMetrics],
    sim: &[AppMetrics],
    what: &str,
) {
    let (pf, sf) = (
        threads.iter().map(|t| t.flops).sum::<f64>(),
        sim.iter().map(|t| t.flops).sum::<f64>(),
    );
    if pf > 0.0 && ((sf - pf) / pf).abs() > 0.01 {
        let note = format!(
            "variant '{vname}': {what} counts {} FLOPs, its profile {}: it may not be the run the profile describes (the FLOPs are the profile's, the bytes per level {what}'s)",
            hpcscope_core::error::short_number(sf),
            hpcscope_core::error::short_number(pf)
        );
        if !notes.contains(&note) {
            notes.push(note);
        }
    }
}

/// One line per target with approximate design points: why, and how to do better.
fn approximate_lines(
    s: &Scenario,
    r: &Resolved,
    approx: &[((usize, usize), Approx, String)],
) -> Vec<String> {
    let mut out = Vec::new();
    for (ti, (tname, tm)) in r.targets.iter().enumerate() {
        let here: Vec<&((usize, usize), Approx, String)> =
            approx.iter().filter(|((_, t), _, _)| *t == ti).collect();
        let Some((_, why, _)) = here.first() else {
            continue;
        };
        let mut variants: Vec<&str> = Vec::new();
        let mut from: Vec<&str> = Vec::new();
        for ((vi, _), _, pm) in &here {
            let v = r.variants[*vi].0.as_str();
            if !variants.contains(&v) {
                variants.push(v);
            }
            if !from.contains(&pm.as_str()) {
                from.push(pm);
            }
        }
        let (variants, _, was) = profiles_of(&variants);
        let from = from.join(", ");
        // The transforms that changed a cache, if any.
        let spec = s.targets.iter().find(|t| &t.name == tname);
        let changed: Vec<String> = spec
            .map(|t| {
                t.transforms
                    .iter()
                    .filter(|tr| tr.cache_geometry_level().is_some())
                    .map(|tr| tr.label())
                    .collect()
            })
            .unwrap_or_default();
        let caches = if changed.is_empty() {
            "its caches".to_string()
        } else {
            format!("its caches ({})", changed.join(", "))
        };
        // A profile with both machines' caches: `mix -m` the target's machine (its file
        // from `machine derive` when a transform changed a cache).
        let other = match spec {
            Some(t) if changed.is_empty() => format!("-m {}", t.machine),
            Some(t) => format!(
                "-m FILE, FILE from `hpcscope machine derive {} --set ...`",
                t.machine
            ),
            None => format!("-m {}", tm.id),
        };
        out.push(match why {
            Approx::Unsimulable(e) => format!(
                "target '{tname}' ({}): its caches cannot be simulated ({e}), so it is projected with the bytes per level of {variants}, simulated for {from}'s caches: approximate",
                tm.id
            ),
            Approx::NoProgram => format!(
                "target '{tname}' ({}): {caches} differ from those of {from}, for which {variants} {was} simulated, and were not re-simulated: approximate. Give the program to re-simulate: `command = [\"PROGRAM\", \"ARG\"...]` in the variant, or `hpcscope explore SCENARIO -- PROGRAM ARGS`; or a profile from a `mix` run that simulated both (`hpcscope mix -m {from} {other} -o DIR`, its mix-report.json beside the profile)",
                tm.id
            ),
        });
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_core::explore::BytesOrigin;

    /// A profile of `flops` FLOPs and these bytes at L1, L2, L3 and MM, simulated for
    /// `machine`.
    fn profile(machine: &str, bytes: [f64; 4]) -> Profile {
        let levels: Vec<serde_json::Value> = ["L1", "L2", "L3", "MM"]
            .iter()
            .zip(bytes)
            .map(|(l, b)| serde_json::json!({"level": l, "bytes": b}))
            .collect();
        let v = serde_json::json!({"format_version": 1, "application": "t", "isa": "x86_64",
            "vector_bits": 64, "precision": "f64", "machine": machine,
            "regions": [{"name": "main", "threads": [{"thread": 0, "flops": 1.0e9,
                "fp_instructions": 1.0e9, "time_s": 1.0,
                "memory": {"bytes_per_level": levels}}]}]});
        Profile::from_json_str(&v.to_string(), "test").unwrap()
    }

    /// The targets of examples/scenarios/analyze-memory.toml, plus a transformed L2, a
    /// machine without cache geometry and the source's own machine, swept from a profile
    /// simulated for cascadelake-8260's caches.
    fn scenario() -> (Scenario, Resolved) {
        let s = Scenario::from_toml_str(
            r#"name = "t"
[source]
machine = "cascadelake-8260"
profile = "p.json"
[[variants]]
name = "v"
profile = "p.json"
[[targets]]
name = "CLX"
machine = "cascadelake-8260"
[[targets]]
name = "CLX + HBM2"
machine = "cascadelake-8260"
transforms = [{ replace_memory = "a64fx" }]
[[targets]]
name = "N1"
machine = "neoverse-n1"
[[targets]]
name = "N1 + HBM2"
machine = "neoverse-n1"
transforms = [{ replace_memory = "a64fx" }]
[[targets]]
name = "TX2"
machine = "thunderx2"
[[targets]]
name = "CLX, L2 2M"
machine = "cascadelake-8260"
transforms = [{ cache_size = { level = "L2", size_bytes = 2097152 } }]
[[targets]]
name = "KNL"
machine = "knl-flat-dram"
"#,
            "test.toml",
        )
        .unwrap();
        let targets = crate::scenario::resolve_targets(&s.targets, Path::new(".")).unwrap();
        let p = profile("cascadelake-8260", [8.0e9, 2.0e9, 1.0e9, 1.0e9]);
        let th = p.regions[0].thread_metrics("test").unwrap();
        let r = Resolved {
            source_machine: hpcscope_core::library::builtin("cascadelake-8260").unwrap(),
            source_threads: th.clone(),
            source_gflops: 1.0,
            variants: vec![("v".into(), None, th)],
            targets,
            source_widths: None,
            variant_widths: vec![None],
            source_spread: None,
            source_instructions: None,
            variant_instructions: vec![None],
        };
        (s, r)
    }

    fn caches(machine: Option<&str>, same_run: Vec<Profile>) -> Vec<Arc<ProfileCaches>> {
        vec![Arc::new(ProfileCaches {
            machine: machine.map(String::from),
            dir: PathBuf::from("."),
            same_run,
        })]
    }

    /// [`resimulate`] with profiles of `caches` and no program to run.
    fn without_program(
        s: &Scenario,
        r: &Resolved,
        caches: Vec<Arc<ProfileCaches>>,
        dir: &Path,
    ) -> Outcome {
        resimulate(s, r, &caches, Path::new("."), &Program::default(), dir).unwrap()
    }

    fn names<'a>(r: &'a Resolved, pairs: &[(usize, usize)]) -> Vec<&'a str> {
        pairs
            .iter()
            .map(|&(_, t)| r.targets[t].0.as_str())
            .collect()
    }

    #[test]
    fn other_machines_are_changed_like_transformed_caches_and_said_approximate_without_a_program() {
        let (s, r) = scenario();
        let dir = tempfile::tempdir().unwrap();
        let out = without_program(
            &s,
            &r,
            caches(Some("cascadelake-8260"), Vec::new()),
            dir.path(),
        );
        // Every target whose caches are not cascadelake-8260's, transformed or not; a new
        // memory alone keeps the caches.
        assert_eq!(
            names(&r, &out.resim.changed),
            ["N1", "N1 + HBM2", "TX2", "CLX, L2 2M", "KNL"]
        );
        assert!(out.resim.metrics.is_empty());
        assert_eq!(out.approximate.len(), 5, "{:#?}", out.approximate);
        let line = |t: &str| {
            out.approximate
                .iter()
                .find(|l| l.starts_with(&format!("target '{t}'")))
                .unwrap_or_else(|| panic!("no line for {t}: {:#?}", out.approximate))
        };
        let n1 = line("N1");
        assert!(
            n1.contains("differ from those of cascadelake-8260")
                && n1.contains("approximate")
                && n1.contains("-- PROGRAM ARGS")
                && n1.contains("mix -m cascadelake-8260 -m neoverse-n1"),
            "{n1}"
        );
        assert!(line("CLX, L2 2M").contains("its caches (L2.size=2097152)"));
        assert!(
            line("KNL").contains("cannot be simulated"),
            "{}",
            line("KNL")
        );
        // The sweep marks exactly those points approximate.
        let pts = hpcscope_core::explore::sweep_with(
            &r,
            hpcscope_core::machine::Precision::F64,
            hpcscope_core::project::Options::default(),
            &hpcscope_core::project::Inputs::default(),
            &out.resim,
        )
        .unwrap();
        let approx: Vec<&str> = pts
            .iter()
            .filter(|p| p.bytes == BytesOrigin::Approximate)
            .map(|p| p.target.as_str())
            .collect();
        assert_eq!(approx, ["N1", "N1 + HBM2", "TX2", "CLX, L2 2M", "KNL"]);
    }

    #[test]
    fn a_profile_of_another_machine_is_compared_with_that_machine() {
        let (s, r) = scenario();
        let dir = tempfile::tempdir().unwrap();
        // A profile simulated for thunderx2: the TX2 target keeps it, CLX does not.
        let out = without_program(&s, &r, caches(Some("thunderx2"), Vec::new()), dir.path());
        assert_eq!(
            names(&r, &out.resim.changed),
            ["CLX", "CLX + HBM2", "N1", "N1 + HBM2", "CLX, L2 2M", "KNL"]
        );
        // No machine named: the source's caches, said in a note.
        let out = without_program(&s, &r, caches(None, Vec::new()), dir.path());
        assert_eq!(out.resim.changed.len(), 5);
        assert!(
            out.notes.iter().any(|n| n.contains("names no machine")),
            "{:?}",
            out.notes
        );
    }

    #[test]
    fn the_same_mix_runs_profile_of_a_target_geometry_is_taken_without_running() {
        let (s, r) = scenario();
        let dir = tempfile::tempdir().unwrap();
        let n1 = profile("neoverse-n1", [9.0e9, 2.5e9, 0.4e9, 0.1e9]);
        let out = without_program(
            &s,
            &r,
            caches(Some("cascadelake-8260"), vec![n1]),
            dir.path(),
        );
        // N1, and N1 with another memory (the same caches), take the N1 profile's bytes.
        let idx = |t: &str| r.targets.iter().position(|(n, _)| n == t).unwrap();
        for t in ["N1", "N1 + HBM2"] {
            let m = &out.resim.metrics[&(0, idx(t))];
            assert_eq!(m[0].bytes, [9.0e9, 2.5e9, 0.4e9, 0.1e9], "{t}");
            assert_eq!(m[0].flops, 1.0e9);
        }
        assert_eq!(out.from_mix_run, 2);
        assert_eq!(out.runs, 0);
        assert!(
            !out.approximate.iter().any(|l| l.contains("'N1")),
            "{:#?}",
            out.approximate
        );
        assert!(
            out.approximate
                .iter()
                .any(|l| l.starts_with("target 'TX2'"))
        );
        // Nothing was written to the re-simulation cache.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
