//! `analyze`: from a binary to rooflines and projections in one call.
//!
//! The source machine (given, or this machine measured once and cached), the application
//! timed natively and characterized by `mix` for the source's caches and every target's,
//! rooflines on the source, projections to each target, the sweep of a scenario's targets,
//! and an eBPF trace and the counters of one native run. [`analyze`] computes the result;
//! [`crate::render`] turns it into text and an HTML report.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use hpcscope_core::explore::{DesignPoint, Resimulated, Resimulation, caches_differ};
use hpcscope_core::point::Calibration;
use hpcscope_core::project::{Inputs, Options, Projection, Side, Spread, project_with};
use hpcscope_core::roofline::AccessWidths;
use hpcscope_core::roofline::{Ceilings, RooflineAnalysis, Scope, analyze as roofline};
use hpcscope_core::{AppMetrics, Machine, Profile};
use hpcscope_mix::{MixOptions, MixReport};
use serde::Serialize;

use crate::scenario::SweepTargets;
use crate::validate::access_widths;
use crate::verdict::{borrowed_caches, no_fp_verdict, source_verdict, target_verdict};

/// The binary built for the targets (e.g. an SVE build), characterized for each target's
/// caches in place of the analyzed one.
#[derive(Debug, Clone)]
pub struct TargetBinary {
    /// The binary.
    pub path: PathBuf,
    /// With an aarch64 SVE binary: the vector length to emulate, bits (default: each
    /// target's vector width).
    pub sve_bits: Option<u32>,
    /// For an SVE binary: a NEON or scalar build whose memory accesses stand for its own
    /// (QEMU 7.2 does not report SVE accesses).
    pub cache_binary: Option<PathBuf>,
}

/// What to analyse and how.
#[derive(Debug, Clone)]
pub struct AnalyzeOptions {
    /// The source machine (the one the program runs on).
    pub source: Machine,
    /// Target machines.
    pub targets: Vec<Machine>,
    /// The program, how it runs (threads, placement, time limit) and what is counted:
    /// only inside `functions` (their time measured by sampling); `sample` simulates the
    /// caches sampled (`mix --sample`) and extrapolates the bytes per level (None: every
    /// access, the default). With several threads the analysis is at node scope.
    pub run: hpcscope_mix::RunSpec,
    /// The binary for the targets, when not the same.
    pub target_binary: Option<TargetBinary>,
    /// Native runs to time (median).
    pub native_runs: u32,
    /// Application name (default: the program's file name).
    pub application: Option<String>,
    /// Also trace, profile and count one native run.
    pub with_trace: bool,
    /// The rule that places the point estimate (default: the bundled model).
    pub calibration: Option<Calibration>,
    /// The targets of a scenario to sweep ([`sweep`]): each distinct cache geometry among
    /// them is simulated in the same emulation as the source and the targets, so that the
    /// sweep projects every target with bytes per level simulated for its own caches.
    pub sweep_machines: Vec<Machine>,
}

/// One target's projection.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Serialize)]
pub struct TargetResult {
    /// Target machine id.
    pub machine: String,
    /// Target machine name.
    pub name: String,
    /// Where the target binary's bytes per level come from.
    pub caches_from: String,
    /// Whether the target has the ISA of the binary projected onto it (the analyzed one, or
    /// the target binary given).
    pub same_isa: bool,
    /// What was assumed when it has not: a binary of another ISA standing for a native
    /// build, and how to do better.
    pub assumption: Option<String>,
    /// The projection.
    pub projection: Projection,
    /// One sentence.
    pub verdict: String,
    /// The target machine itself (a file, or transformed by a scenario: its id may name no
    /// built-in machine), for the charts.
    #[serde(skip)]
    pub target: Machine,
}

/// The result of `analyze`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Serialize)]
pub struct AnalyzeResult {
    /// Application name.
    pub application: String,
    /// Source machine.
    pub source_machine: Machine,
    /// The source profile.
    pub source_profile: Profile,
    /// Roofline analysis on the source.
    pub roofline: RooflineAnalysis,
    /// Measured GFLOP/s on the source, when timed.
    pub source_gflops: Option<f64>,
    /// Projections.
    pub targets: Vec<TargetResult>,
    /// The characterization of the binary.
    pub mix: MixReport,
    /// The characterization of the target binary, when one was given.
    pub target_mix: Option<MixReport>,
    /// An eBPF trace and CPU profile of one native run, where this machine allows it.
    pub trace: Option<hpcscope_trace::TraceOutcome>,
    /// The portable counter metrics of one native run (software events only where the PMU
    /// is not available).
    pub counters: Option<hpcscope_counters::compute::Report>,
    /// The design-space sweep of a scenario, when one was given.
    pub sweep: Option<Sweep>,
    /// The node scope, when the program ran with several threads: per-thread rooflines,
    /// imbalance, node projections (then also the projections of `targets`).
    pub node: Option<crate::node::NodeAnalysis>,
    /// One sentence on the source.
    pub verdict: String,
    /// Remarks.
    pub notes: Vec<String>,
    /// Where the analysis spent its time (wall seconds per phase); not part of the result.
    #[serde(skip)]
    pub timings: Timings,
    /// The cache geometries simulated for the binary projected onto the targets (the
    /// analyzed one, or the target binary), each with its profile, for [`sweep`]; not part
    /// of the result (the profiles are in `mix` or `target_mix`).
    #[serde(skip)]
    pub geometries: Geometries,
}

/// The cache geometries simulated by [`analyze`] for the binary projected onto the targets:
/// (machine simulated, profile) each, one per distinct geometry, and the machine whose
/// caches the sweep's variant profile was simulated for.
#[derive(Debug, Clone, Default)]
pub struct Geometries {
    /// (machine simulated, its profile), no two with the same caches.
    pub simulated: Vec<(Machine, Profile)>,
    /// The machine of the sweep's variant profile (the source, or the first target with a
    /// target binary); `None` before [`analyze`] sets it.
    pub variant: Option<Machine>,
}

impl Geometries {
    fn add(&mut self, m: &Machine, p: &Profile) {
        if self.get(m).is_none() {
            self.simulated.push((m.clone(), p.clone()));
        }
    }

    /// The profile simulated for caches equal to `m`'s ([`caches_differ`]).
    fn get(&self, m: &Machine) -> Option<&(Machine, Profile)> {
        self.simulated.iter().find(|(x, _)| !caches_differ(x, m))
    }
}

/// Wall seconds of each phase of [`analyze`], in the order they ran.
#[derive(Debug, Clone, Default)]
pub struct Timings {
    /// The characterization of the binary (`mix`): native timing runs, then one emulation
    /// with the cache simulations of the source and every simulable target.
    pub characterization_s: f64,
    /// Of which the emulation with the cache simulations.
    pub emulation_s: f64,
    /// Cache hierarchies simulated in that emulation, and machines they stand for.
    pub simulations: (usize, usize),
    /// Cache levels those simulations comprise, first levels in common counted once, and
    /// all their levels (`hpcscope_mix::Distinct::level_simulations`).
    pub levels: Option<(usize, usize)>,
    /// The characterizations of the target binary (`--target-binary`).
    pub target_binary_s: f64,
    /// Rooflines and projections.
    pub projection_s: f64,
    /// The eBPF trace and CPU profile of one native run.
    pub trace_s: f64,
    /// The counters of one native run.
    pub counters_s: f64,
}

impl Timings {
    /// One line for the text report: `analysis 8.4 s: characterization 7.9 s (...), ...`.
    pub fn line(&self, total_s: f64) -> String {
        let levels = match self.levels {
            Some((shared, all)) if shared < all => {
                format!(", {shared} level simulations for their {all} levels")
            }
            _ => String::new(),
        };
        let mut parts = vec![format!(
            "characterization {:.1} s (native runs and set-up {:.1} s, emulation with {} cache simulations for {} machines{levels} {:.1} s)",
            self.characterization_s,
            (self.characterization_s - self.emulation_s).max(0.0),
            self.simulations.0,
            self.simulations.1,
            self.emulation_s
        )];
        if self.target_binary_s > 0.0 {
            parts.push(format!("target binary {:.1} s", self.target_binary_s));
        }
        parts.push(format!("projections {:.2} s", self.projection_s));
        if self.trace_s > 0.0 || self.counters_s > 0.0 {
            parts.push(format!(
                "trace and profile {:.1} s, counters {:.1} s",
                self.trace_s, self.counters_s
            ));
        }
        let phases = self.characterization_s
            + self.target_binary_s
            + self.projection_s
            + self.trace_s
            + self.counters_s;
        parts.push(format!(
            "machines, report and charts {:.2} s",
            (total_s - phases).max(0.0)
        ));
        format!("analysis took {total_s:.1} s: {}", parts.join(", "))
    }
}

/// The design-space sweep of `analyze --scenario`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Serialize)]
pub struct Sweep {
    /// Scenario title.
    pub name: String,
    /// Scenario description.
    pub description: String,
    /// One point per target.
    pub points: Vec<DesignPoint>,
    /// The design points whose bytes per level were simulated for their target's own cache
    /// geometry (a geometry other than the one of the variant's profile), all in the
    /// emulation that simulated the source's and the targets' caches (the target binary's,
    /// when one was given): `simulated` distinct geometries, `mix_runs` 0 (no run beyond
    /// those), `cached` 0. Absent when no target needed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resimulation: Option<Resimulation>,
    /// Targets projected with bytes per level of another cache geometry (no cache geometry
    /// to simulate): their points' `bytes` is `approximate`, and each has a line here.
    /// Absent when there is none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approximate: Vec<String>,
}

/// What a program without floating point can and cannot be told.
pub const NO_FP_NOTE: &str = "the program executes no floating-point instruction: FLOP rooflines and FLOP-based projections do not apply, so no target is projected; its instructions and bytes per memory level are counted above. Projecting its time would need an instruction-throughput ceiling per machine (an instruction roofline), which the machine files do not give";

/// Marks an analysis that failed because the program could not be characterized (not an
/// ELF, crashed before anything was counted, QEMU missing): [`partial`] then still measures
/// what it can.
#[derive(Debug)]
pub struct Uncharacterized;

impl std::fmt::Display for Uncharacterized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the program could not be characterized")
    }
}

/// Runs the analysis. An error carrying [`Uncharacterized`] in its chain means the program
/// could not be characterized (see [`partial`]).
#[allow(clippy::too_many_lines)]
pub fn analyze(o: &AnalyzeOptions) -> Result<AnalyzeResult> {
    // Checked before anything runs: a specification that cannot run is the user's to fix,
    // not a program that could not be characterized.
    o.run.validate()?;
    let (source, targets, program, args) = (&o.source, &o.targets, &o.run.program, &o.run.args);
    let mut notes = Vec::new();
    let simulable = |m: &Machine| hpcscope_mix::hierarchy(m).is_ok();
    let mut machines = vec![source.clone()];
    if o.target_binary.is_none() {
        machines.extend(targets.iter().filter(|m| simulable(m)).cloned());
        // The sweep's geometries not simulated already: in the same emulation.
        push_geometries(&mut machines, &o.sweep_machines);
    }
    let opts = MixOptions {
        run: o.run.clone(),
        machines,
        native_runs: o.native_runs,
        application: o.application.clone(),
        per_function: true,
        ..Default::default()
    };
    let mut timings = Timings::default();
    let started = Instant::now();
    let mix = match hpcscope_mix::analyze(&opts) {
        Ok(m) => m,
        // A request mix refuses (a sampling the machines' caches cannot take) is the
        // user's to fix, not a program that could not be characterized.
        Err(
            e @ (hpcscope_mix::MixError::Usage { .. } | hpcscope_mix::MixError::SetClasses { .. }),
        ) => return Err(e.into()),
        Err(e) => return Err(anyhow::Error::new(e).context(Uncharacterized)),
    };
    timings.characterization_s = started.elapsed().as_secs_f64();
    timings.emulation_s = mix.variants.iter().map(|v| v.emulation_s).sum();
    let distinct = hpcscope_mix::Distinct::new(
        &opts
            .machines
            .iter()
            .filter_map(|m| hpcscope_mix::node(m).ok())
            .collect::<Vec<_>>(),
        &opts.run.placement,
    );
    timings.simulations = (distinct.nodes.len(), opts.machines.len());
    timings.levels = distinct.level_simulations(&opts.run.placement);
    let v = &mix.variants[0];
    let source_profile = v.profiles[0].clone();
    let mut geometries = Geometries {
        variant: Some(source.clone()),
        ..Geometries::default()
    };
    if o.target_binary.is_none() {
        for (m, p) in opts.machines.iter().zip(&v.profiles) {
            geometries.add(m, p);
        }
    }
    let source_widths = crate::validate::access_widths(&mix, 0);
    let source_spread = Spread::from_times(&mix.native_times_s);
    let calibration = o.calibration.clone().unwrap_or_else(Calibration::bundled);
    // The characterization's own remarks (a crash, a partial count, how the region was
    // timed) come first: they qualify everything below.
    for n in mix.notes.iter().chain(&source_profile.notes) {
        if !notes.contains(n) {
            notes.push(n.clone());
        }
    }
    if let Some(sr) = &v.sampling {
        notes.extend(sampling_notes(sr));
    }
    // The sampling reports of every characterization (the source's run, and the target
    // binary's): each machine's bytes per level with their errors.
    let mut sampled: Vec<hpcscope_mix::SamplingReport> = v.sampling.iter().cloned().collect();
    let origin = format!("the profile of {}", program.display());
    // The threads that only wait for the others (a main thread joining its workers) take
    // no core: the rooflines and projections are the working threads'.
    let (work, waiting) = without_waiting_threads(&source_profile, &origin)?;
    notes.extend(waiting);
    let src_metrics = work.regions[0].thread_metrics(&origin)?;
    // The run's work and time are every thread's: a waiting thread's time is the region's.
    let agg = source_profile.regions[0].aggregate(&origin)?;
    let n_threads = src_metrics.len();
    // The source's ceilings at the binary's own widths, with its divides and its loops'
    // dependency chains: the ceilings its projections start from.
    let roof = if n_threads > 1 {
        crate::node::aggregate_roofline(
            source,
            &work,
            &agg,
            Some(&source_widths),
            n_threads,
            &origin,
        )?
    } else {
        let ceilings = Ceilings::at_widths(
            source,
            source_profile.precision,
            Scope::Core,
            &source_widths,
        )?;
        roofline(&ceilings, &agg, &origin)?
    };
    let source_gflops = agg.gflops();
    // A program that does no floating point gets an answer in its own terms.
    let no_fp = agg.flops <= 0.0;
    if no_fp {
        notes.push(NO_FP_NOTE.into());
    } else if source_gflops.is_none() {
        notes.push("the application has no measured time on the source: rooflines show its intensities, but nothing can be projected".into());
    }
    // The binary for the targets: characterized for each target's caches.
    let mut target_mix = None;
    let started = Instant::now();
    let mut target_profiles: Vec<(String, Profile, String, AccessWidths)> = Vec::new();
    if let Some(tb) = &o.target_binary {
        let mut sim: Vec<Machine> = targets.iter().filter(|m| simulable(m)).cloned().collect();
        let n_sim = sim.len();
        // The sweep's geometries not simulated already: in the same runs.
        push_geometries(&mut sim, &o.sweep_machines);
        let arch = hpcscope_mix::ElfInfo::read(&tb.path)?.arch;
        // (vector length, machines), each machine with whether it is a target (else one
        // of the sweep's geometries).
        type Group = (Option<u32>, Vec<(bool, Machine)>);
        let mut per_len: Vec<Group> = Vec::new();
        for (i, m) in sim.iter().enumerate() {
            let entry = (i < n_sim, m.clone());
            let len = match (arch, m.simd.as_str()) {
                (hpcscope_mix::Arch::Aarch64, "sve") => Some(tb.sve_bits.unwrap_or(m.vector_bits)),
                (hpcscope_mix::Arch::Aarch64, _) if tb.sve_bits.is_some() => tb.sve_bits,
                _ => None,
            };
            match per_len.iter_mut().find(|(l, _)| *l == len) {
                Some((_, v)) => v.push(entry),
                None => per_len.push((len, vec![entry])),
            }
        }
        let mut reports = Vec::new();
        for (len, ms) in per_len {
            let r = hpcscope_mix::analyze(&MixOptions {
                run: hpcscope_mix::RunSpec {
                    program: tb.path.clone(),
                    ..o.run.clone()
                },
                sve_bits: len.into_iter().collect(),
                machines: ms.iter().map(|(_, m)| m.clone()).collect(),
                cache_binary: tb.cache_binary.clone(),
                native_runs: 0,
                application: o.application.clone(),
                ..Default::default()
            })?;
            let widths = access_widths(&r, 0);
            for ((_, m), p) in ms.iter().zip(&r.variants[0].profiles) {
                if reports.is_empty() && geometries.simulated.is_empty() {
                    // The sweep's variant is the first profile of the first run.
                    geometries.variant = Some(m.clone());
                }
                geometries.add(m, p);
            }
            let of_targets = ms.iter().zip(&r.variants[0].profiles);
            for (_, p) in of_targets.filter(|((target, _), _)| *target) {
                let how = match len {
                    Some(b) => format!(
                        "{} at SVE {b} bits, simulated on its caches",
                        tb.path.display()
                    ),
                    None => format!("{}, simulated on its caches", tb.path.display()),
                };
                target_profiles.push((
                    p.machine.clone().unwrap_or_default(),
                    p.clone(),
                    how,
                    widths.clone(),
                ));
            }
            sampled.extend(r.variants[0].sampling.clone());
            reports.push(r);
        }
        target_mix = reports.into_iter().next();
    } else {
        let n_sim = targets.iter().filter(|m| simulable(m)).count();
        for p in v.profiles.iter().skip(1).take(n_sim) {
            target_profiles.push((
                p.machine.clone().unwrap_or_default(),
                p.clone(),
                "the same binary, simulated on its caches".into(),
                source_widths.clone(),
            ));
        }
    }
    for (id, p, _, _) in &mut target_profiles {
        *p = without_waiting_threads(p, &format!("the target profile for {id}"))?.0;
    }
    timings.target_binary_s = if o.target_binary.is_some() {
        started.elapsed().as_secs_f64()
    } else {
        0.0
    };
    let started = Instant::now();
    let mut results = Vec::new();
    let mut node = None;
    if n_threads > 1 && !no_fp {
        // Several threads: every projection is at node scope, thread by thread.
        let nt = crate::node::node_targets(targets, n_threads as u32, &mut notes);
        let lookup = |id: &str| {
            target_profiles
                .iter()
                .find(|(m, _, _, _)| m == id)
                .map(|(_, p, h, _)| (p.clone(), h.clone()))
        };
        let na = crate::node::analyze_node(
            source,
            &work,
            source_gflops,
            &nt,
            &lookup,
            &o.run.placement.label(),
            source_spread,
            Some(&calibration),
            &|m| bytes_errors(&sampled, m),
        )?;
        for t in &na.targets {
            let same_isa = isa_matches(&source_profile.isa, &t.target.isa);
            let assumption = (!same_isa).then(|| {
                cross_isa_assumption(&source_profile.isa, &t.target, o.target_binary.is_some())
            });
            results.push(TargetResult {
                machine: t.machine.clone(),
                name: t.name.clone(),
                caches_from: t.caches_from.clone(),
                same_isa,
                assumption,
                projection: t.projection.clone(),
                verdict: t.verdict.clone(),
                target: t.target.clone(),
            });
        }
        notes.push(format!(
            "{n_threads} threads: the rooflines are those of {n_threads} cores of this machine's loaded node, and every projection is at node scope (per thread, eqs. 7.1-7.5)"
        ));
        node = Some(na);
    } else if let Some(g) = source_gflops.filter(|_| !no_fp) {
        if let Some(sp) = source_spread
            && sp.relative() > 0.10
        {
            notes.push(format!(
                "the {} native runs spread {:.0} % (fastest - slowest over the median): the machine was probably busy; the projected intervals carry that spread",
                sp.runs,
                sp.relative() * 100.0
            ));
        }
        if source_spread.is_some() && !o.run.functions.is_empty() {
            notes.push("the spread that widens the intervals is the one of the whole program's native runs (mix gives the function's median time only)".into());
        }
        let mut widest_sampling = None;
        for t in targets {
            let found = target_profiles.iter().find(|(id, _, _, _)| id == &t.id);
            let (prof, how, twidths) = match found {
                Some((_, p, h, w)) => (p.clone(), h.clone(), w.clone()),
                None => (
                    work.clone(),
                    format!("the source's caches ({} has no cache geometry)", t.id),
                    source_widths.clone(),
                ),
            };
            let binary_isa = prof.isa.clone();
            let same_isa = isa_matches(&binary_isa, &t.isa);
            let assumption = (!same_isa)
                .then(|| cross_isa_assumption(&binary_isa, t, o.target_binary.is_some()));
            let to = format!("the target profile for {}", t.id);
            let tm: Vec<AppMetrics> = prof.regions[0].thread_metrics(&to)?;
            let run = |src: &[AppMetrics], tgt: &[AppMetrics]| {
                project_with(
                    Side {
                        machine: source,
                        threads: src,
                        origin: &origin,
                    },
                    g,
                    Side {
                        machine: t,
                        threads: tgt,
                        origin: &to,
                    },
                    source_profile.precision,
                    Options::default(),
                    &Inputs {
                        source_widths: Some(source_widths.clone()),
                        target_widths: Some(twidths.clone()),
                        source_spread,
                        calibration: Some(&calibration),
                        carried_time: true,
                        instructions: work.regions[0]
                            .instructions()
                            .zip(prof.regions[0].instructions()),
                        drop_contradicted: false,
                        target_precision: None,
                    },
                )
            };
            let mut p = match run(&src_metrics, &tm) {
                Ok(p) => p,
                Err(e) => {
                    notes.push(format!("{}: not projected: {e}", t.id));
                    continue;
                }
            };
            // A sampled characterization's bytes per level are estimates: the interval
            // takes in the projections with each side's bytes at the ends of their 95 %
            // intervals (each level's point depends on its own bytes, monotonically, so the
            // four corners bound it).
            let (se, te) = (
                bytes_errors(&sampled, source_profile.machine.as_deref()),
                bytes_errors(&sampled, prof.machine.as_deref()),
            );
            if se.iter().chain(&te).any(|e| *e > 0.0) {
                let c = corners(&src_metrics, &se, &tm, &te, |a, b| run(a, b).ok());
                widest_sampling = Some(widest_sampling.unwrap_or(1.0f64).max(p.take_in(&c)));
            }
            let verdict = target_verdict(t, &p) + &borrowed_caches(t, found.is_none());
            results.push(TargetResult {
                machine: t.id.clone(),
                name: t.name.clone(),
                caches_from: how,
                same_isa,
                assumption,
                projection: p,
                verdict,
                target: t.clone(),
            });
        }
        if let Some(w) = widest_sampling {
            notes.push(sampling_widening_note(w));
        }
    }
    timings.projection_s = started.elapsed().as_secs_f64();
    let (trace, counters) = if o.with_trace {
        let started = Instant::now();
        let trace = trace_run(program, args, &mut notes);
        timings.trace_s = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let counters = counters_run(program, args, &mut notes);
        timings.counters_s = started.elapsed().as_secs_f64();
        (trace, counters)
    } else {
        (None, None)
    };
    let verdict = if no_fp {
        no_fp_verdict(
            source,
            &agg,
            source_profile.regions[0]
                .threads
                .iter()
                .map(|t| t.instructions)
                .sum::<Option<f64>>(),
        )
    } else {
        source_verdict(source, &roof)
    };
    Ok(AnalyzeResult {
        application: mix.application.clone(),
        source_machine: source.clone(),
        source_profile,
        roofline: roof,
        source_gflops,
        targets: results,
        mix,
        target_mix,
        trace,
        counters,
        sweep: None,
        node,
        verdict,
        notes,
        timings,
        geometries,
    })
}

/// Appends to `machines` each machine of `more` whose node the simulator takes (a cache
/// geometry for every cache level, consistent sharing) and whose cache geometry none of
/// `machines` has; the others are left to [`sweep`], which says they are approximate.
fn push_geometries(machines: &mut Vec<Machine>, more: &[Machine]) {
    for m in more.iter().filter(|m| hpcscope_mix::node(m).is_ok()) {
        if machines.iter().all(|x| caches_differ(x, m)) {
            machines.push(m.clone());
        }
    }
}

/// The relative errors (half-widths of the 95 % intervals) of the bytes per level of the
/// machine whose caches were simulated, cache levels then memory (the order of a profile's
/// levels), from the sampling reports; empty when none has that machine.
fn bytes_errors(reports: &[hpcscope_mix::SamplingReport], machine: Option<&str>) -> Vec<f64> {
    reports
        .iter()
        .flat_map(|r| &r.machines)
        .find(|m| Some(m.machine.as_str()) == machine)
        .map(|m| {
            m.levels
                .iter()
                .map(|l| l.bytes_ci95.unwrap_or(0.0))
                .chain(std::iter::once(m.memory_bytes_ci95.unwrap_or(0.0)))
                .collect()
        })
        .unwrap_or_default()
}

/// The note on how much the bytes' sampling error widened the projections: `widest` is the
/// largest factor.
pub(crate) fn sampling_widening_note(widest: f64) -> String {
    format!(
        "the projected intervals include the sampling error of the bytes per level: each side's bytes moved to the ends of their 95 % intervals widened them by at most {:.2} % (these intervals measure the variation between the sampled sets, not what the sample cannot see)",
        (widest - 1.0).max(0.0) * 100.0
    )
}

/// The projections (by `run`) with the source's and the target's bytes per level each moved
/// to the lower and the upper end of their intervals (relative errors `se`, `te`): the four
/// corners, those that project.
pub(crate) fn corners(
    src: &[AppMetrics],
    se: &[f64],
    tgt: &[AppMetrics],
    te: &[f64],
    run: impl Fn(&[AppMetrics], &[AppMetrics]) -> Option<Projection>,
) -> Vec<Projection> {
    [(-1.0, -1.0), (-1.0, 1.0), (1.0, -1.0), (1.0, 1.0)]
        .iter()
        .filter_map(|&(a, b)| run(&moved(src, se, a), &moved(tgt, te, b)))
        .collect()
}

/// `metrics` with each level's bytes moved by `sign` times its relative error (not below 0).
pub(crate) fn moved(metrics: &[AppMetrics], errors: &[f64], sign: f64) -> Vec<AppMetrics> {
    metrics
        .iter()
        .map(|m| {
            let mut m = m.clone();
            for (b, e) in m.bytes.iter_mut().zip(errors) {
                *b = (*b * (1.0 + sign * e)).max(0.0);
            }
            m
        })
        .collect()
}

/// What a sampled characterization measured, for the notes: the sampling, each machine's
/// hit ratios with their 95 % intervals, and what the intervals do not cover.
fn sampling_notes(sr: &hpcscope_mix::SamplingReport) -> Vec<String> {
    let lines = sr.lines();
    let mut out = vec![format!(
        "{} (analyze --sample): the bytes per level of every profile, and so the intensities, rooflines and projections, are estimates extrapolated from the sampled sets; FLOPs, instructions and times are exact. The projected intervals include the sampling error of the bytes (see below); each machine's hit ratios and their 95 % intervals follow",
        lines[0]
    )];
    out.extend(lines[1..].iter().map(|l| l.trim().to_string()));
    out
}

/// Whether a binary of ISA `binary` runs natively on a machine of ISA `machine`
/// (`x86_64`/`x86-64`/`amd64`, `aarch64`/`arm64` name the same ISA).
pub fn isa_matches(binary: &str, machine: &str) -> bool {
    let norm = |s: &str| match s.to_ascii_lowercase().as_str() {
        "x86-64" | "amd64" | "x86_64" => "x86_64".to_string(),
        "arm64" | "aarch64" => "aarch64".to_string(),
        o => o.to_string(),
    };
    norm(binary) == norm(machine)
}

/// The compilers that build for `isa` on a Debian x86-64 machine, and the flags of the
/// machine's vector extension.
pub fn cross_compilers(isa: &str, simd: &str, vector_bits: u32) -> String {
    match isa {
        "aarch64" | "arm64" => {
            let march = match simd {
                "sve" | "sve2" => format!(
                    "-march=armv8.2-a+sve (any SVE length; --sve-bits {vector_bits} emulates this machine's)"
                ),
                _ => "-march=armv8-a (NEON)".to_string(),
            };
            format!(
                "aarch64-linux-gnu-gcc {march} (Debian package gcc-aarch64-linux-gnu), or clang --target=aarch64-linux-gnu with the same -march; link with -static, or let QEMU find the aarch64 libraries (QEMU_LD_PREFIX=/usr/aarch64-linux-gnu)"
            )
        }
        "x86_64" | "x86-64" => format!(
            "gcc or clang with -march matching its {simd} ({vector_bits}-bit) vectors (x86-64-v3 for AVX2, x86-64-v4 for AVX-512); from another architecture, x86_64-linux-gnu-gcc (Debian package gcc-x86-64-linux-gnu)"
        ),
        "riscv64" => "riscv64-linux-gnu-gcc (Debian package gcc-riscv64-linux-gnu) or clang --target=riscv64-linux-gnu".to_string(),
        other => format!("a compiler that targets {other}"),
    }
}

/// What a projection onto `t` assumes when the binary projected has ISA `binary_isa`.
fn cross_isa_assumption(binary_isa: &str, t: &Machine, target_binary_given: bool) -> String {
    let what = if target_binary_given {
        format!(
            "the target binary is {binary_isa} while {} is {}",
            t.name, t.isa
        )
    } else {
        format!("no {} build was given", t.isa)
    };
    format!(
        "{what}: the {binary_isa} binary's instruction mix (FLOPs per FP instruction, access widths) and its bytes per level stand for the {} build, as if its compiler made the same choices for {} {}-bit vectors. To do better, build the program for {} with {} and pass it with --target-binary: it is characterized under QEMU for the target's caches.",
        t.isa,
        t.simd,
        t.vector_bits,
        t.isa,
        cross_compilers(&t.isa, &t.simd, t.vector_bits)
    )
}

/// Sweeps a scenario's targets with the analyzed program as source and variant. A target
/// whose cache geometry is not the one of the variant's profile is projected with the bytes
/// per level [`analyze`] simulated for its own caches (when its options had the sweep's
/// machines); one without a cache geometry keeps the variant's and is said approximate.
pub fn sweep(sc: SweepTargets, r: &AnalyzeResult) -> Result<Sweep> {
    let Some(g) = r.source_gflops else {
        anyhow::bail!(
            "{}: the sweep needs the application's measured GFLOP/s on the source, and its native run was not timed (see the notes)",
            sc.origin
        );
    };
    let origin_p = "the analyzed profile";
    let source_widths = access_widths(&r.mix, 0);
    let (variant, variant_widths) = match &r.target_mix {
        Some(tm) => (
            tm.variants[0].profiles[0].regions[0].thread_metrics(origin_p)?,
            access_widths(tm, 0),
        ),
        None => (
            r.source_profile.regions[0].thread_metrics(origin_p)?,
            source_widths.clone(),
        ),
    };
    // Each target: its own geometry's bytes per level where that is not the variant's.
    let mut resim = Resimulated::default();
    let mut approximate = Vec::new();
    let mut used: Vec<&str> = Vec::new();
    let variant_m = r.geometries.variant.as_ref().unwrap_or(&r.source_machine);
    for (ti, (name, m)) in sc.targets.iter().enumerate() {
        if !caches_differ(variant_m, m) {
            continue;
        }
        resim.changed.push((0, ti));
        match r.geometries.get(m) {
            Some((sm, p)) => {
                let origin = format!("the profile simulated for target '{name}' ({})", sm.id);
                let sim = p.regions[0].thread_metrics(&origin)?;
                resim
                    .metrics
                    .insert((0, ti), crate::resim::with_bytes(&variant, &sim, &r.application, name)?);
                if !used.contains(&sm.id.as_str()) {
                    used.push(&sm.id);
                }
            }
            None => approximate.push(match hpcscope_mix::node(m) {
                Err(e) => format!(
                    "target '{name}' ({}): its caches cannot be simulated ({}), so it is projected with the bytes per level of {}: approximate",
                    m.id,
                    e.to_string().lines().next().unwrap_or_default(),
                    variant_machine(r)
                ),
                Ok(_) => format!(
                    "target '{name}' ({}): its cache geometry was not simulated, so it is projected with the bytes per level of {}: approximate",
                    m.id,
                    variant_machine(r)
                ),
            }),
        }
    }
    let resimulation = (!resim.metrics.is_empty()).then_some(Resimulation {
        points: resim.metrics.len(),
        simulated: used.len(),
        mix_runs: 0,
        cached: 0,
        from_mix_run: 0,
    });
    let res = hpcscope_core::explore::Resolved {
        source_machine: r.source_machine.clone(),
        source_threads: r.source_profile.regions[0].thread_metrics(origin_p)?,
        source_gflops: g,
        variants: vec![(r.application.clone(), None, variant)],
        targets: sc.targets,
        source_widths: Some(source_widths),
        variant_widths: vec![Some(variant_widths)],
        source_spread: Spread::from_times(&r.mix.native_times_s),
        source_instructions: r.source_profile.regions[0].instructions(),
        variant_instructions: vec![match &r.target_mix {
            Some(tm) => tm.variants[0].profiles[0].regions[0].instructions(),
            None => r.source_profile.regions[0].instructions(),
        }],
    };
    let model = Calibration::bundled();
    let points = hpcscope_core::explore::sweep_with(
        &res,
        r.source_profile.precision,
        Options::default(),
        &Inputs {
            calibration: Some(&model),
            carried_time: true,
            ..Inputs::default()
        },
        &resim,
    )?;
    Ok(Sweep {
        name: sc.name,
        description: sc.description,
        points,
        resimulation,
        approximate,
    })
}

/// The sweep's variant profile: which binary, simulated for which machine's caches.
fn variant_machine(r: &AnalyzeResult) -> String {
    match &r.target_mix {
        Some(tm) => format!(
            "the target binary on {}'s caches",
            tm.variants[0].profiles[0]
                .machine
                .as_deref()
                .unwrap_or("the first target")
        ),
        None => format!("the analyzed binary on {}'s caches", r.source_machine.id),
    }
}

/// One native run under the eBPF probes (syscalls, scheduler, page faults) with CPU stack
/// sampling; on a machine that does not allow it, a note says why and the analysis goes on.
fn trace_run(
    program: &Path,
    args: &[String],
    notes: &mut Vec<String>,
) -> Option<hpcscope_trace::TraceOutcome> {
    let mut command = vec![program.display().to_string()];
    command.extend(args.iter().cloned());
    let opts = hpcscope_trace::TraceOptions {
        target: hpcscope_trace::Target::Command(command),
        probes: hpcscope_trace::Probes {
            syscalls: true,
            sched: true,
            faults: true,
            profile_hz: Some(999),
            ..Default::default()
        },
        duration: None,
        quiet: true,
    };
    match hpcscope_trace::trace(&opts) {
        Ok(t) => Some(t),
        Err(e) => {
            notes.push(format!(
                "no eBPF trace or profile: {e} (hpcscope doctor tells what this machine allows)"
            ));
            None
        }
    }
}

/// One native run under the counters (this CPU's recipe; software events where the PMU is
/// not available); on failure a note says why and the analysis goes on.
fn counters_run(
    program: &Path,
    args: &[String],
    notes: &mut Vec<String>,
) -> Option<hpcscope_counters::compute::Report> {
    let mut command = vec![program.display().to_string()];
    command.extend(args.iter().cloned());
    match hpcscope_counters::measure(&command) {
        Ok(r) => Some(r),
        Err(e) => {
            notes.push(format!("no counters: {e:#}"));
            None
        }
    }
}

/// What `analyze` still measured of a program it could not characterize.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Serialize)]
pub struct PartialAnalysis {
    /// The command.
    pub command: Vec<String>,
    /// Why the characterization (and with it rooflines and projections) is missing.
    pub not_characterized: String,
    /// The source machine.
    pub source_machine: Machine,
    /// Native runs: wall, user and system seconds and how each ended.
    pub native_runs: Vec<NativeRun>,
    /// Median wall time of the runs that exited with status 0.
    pub median_wall_s: Option<f64>,
    /// Counters of one native run.
    pub counters: Option<hpcscope_counters::compute::Report>,
    /// Trace and profile of one native run.
    pub trace: Option<hpcscope_trace::TraceOutcome>,
    /// What else could not be done.
    pub notes: Vec<String>,
}

/// One native run of [`PartialAnalysis`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Serialize)]
pub struct NativeRun {
    /// Wall time, s.
    pub wall_s: f64,
    /// User CPU time, s.
    pub user_s: f64,
    /// System CPU time, s.
    pub sys_s: f64,
    /// Exit status; none when a signal ended the run.
    pub exit_status: Option<i32>,
}

impl PartialAnalysis {
    /// Runs that exited with status 0.
    pub fn successful_runs(&self) -> usize {
        self.native_runs
            .iter()
            .filter(|r| r.exit_status == Some(0))
            .count()
    }
}

/// Measures what can still be measured of `command`, which could not be characterized for
/// the reason `why`: `native_runs` timed runs, and (with `with_trace`) a trace, a profile
/// and the counters of one more.
pub fn partial(
    command: &[String],
    source: &Machine,
    why: &anyhow::Error,
    native_runs: u32,
    with_trace: bool,
) -> PartialAnalysis {
    let mut notes = Vec::new();
    let mut runs = Vec::new();
    for _ in 0..native_runs.max(1) {
        match hpcscope_history::record::measure_command(command) {
            Ok(m) => runs.push(NativeRun {
                wall_s: m.wall_s,
                user_s: m.user_s,
                sys_s: m.sys_s,
                exit_status: m.exit_status,
            }),
            Err(e) => {
                notes.push(format!("cannot run {} natively: {e}", command[0]));
                break;
            }
        }
    }
    let ok: Vec<f64> = runs
        .iter()
        .filter(|r| r.exit_status == Some(0))
        .map(|r| r.wall_s)
        .collect();
    let median_wall_s = hpcscope_core::stats::median(&ok);
    if runs.iter().any(|r| r.exit_status != Some(0)) {
        notes.push("a native run did not exit with status 0: its time is not in the median".into());
    }
    let program = PathBuf::from(&command[0]);
    let (trace, counters) = if !runs.is_empty() && with_trace {
        (
            trace_run(&program, &command[1..], &mut notes),
            counters_run(&program, &command[1..], &mut notes),
        )
    } else {
        (None, None)
    };
    PartialAnalysis {
        command: command.to_vec(),
        not_characterized: format!("{why:#}"),
        source_machine: source.clone(),
        native_runs: runs,
        median_wall_s,
        counters,
        trace,
        notes,
    }
}

/// The numbers of an analysis worth keeping in the history: time, rate, work, bytes per
/// level and each target's projected interval.
pub fn summary_metrics(r: &AnalyzeResult) -> serde_json::Value {
    let ths = &r.source_profile.regions[0].threads;
    let sum = |f: &dyn Fn(&hpcscope_core::profile::ThreadMetrics) -> Option<f64>| {
        ths.iter().map(f).sum::<Option<f64>>()
    };
    let time = ths
        .iter()
        .filter_map(|t| t.time_s)
        .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.max(t))));
    let mut m = serde_json::Map::new();
    m.insert("time_s".into(), serde_json::json!(time));
    m.insert("gflops".into(), serde_json::json!(r.source_gflops));
    m.insert("flops".into(), serde_json::json!(sum(&|t| Some(t.flops))));
    m.insert(
        "fp_instructions".into(),
        serde_json::json!(sum(&|t| Some(t.fp_instructions))),
    );
    m.insert(
        "instructions".into(),
        serde_json::json!(sum(&|t| t.instructions)),
    );
    if ths.len() > 1 {
        m.insert("threads".into(), serde_json::json!(ths.len()));
    }
    for l in &r.roofline.levels {
        m.insert(format!("bytes_{}", l.level), serde_json::json!(l.bytes));
    }
    for t in &r.targets {
        m.insert(
            format!("projected_{}_lo_gflops", t.machine),
            serde_json::json!(t.projection.interval.lo),
        );
        m.insert(
            format!("projected_{}_hi_gflops", t.machine),
            serde_json::json!(t.projection.interval.hi),
        );
    }
    serde_json::Value::Object(m)
}

/// `p` without the threads of its first region that wait for the others
/// ([`hpcscope_core::profile::Region::waiting_threads`]), and a note naming them and what
/// they did (None when every thread works).
fn without_waiting_threads(p: &Profile, origin: &str) -> Result<(Profile, Option<String>)> {
    let region = &p.regions[0];
    let waiting = region.waiting_threads(origin)?;
    if waiting.is_empty() {
        return Ok((p.clone(), None));
    }
    let said = region.waiting_threads_said(origin, &waiting)?;
    let mut out = p.clone();
    out.regions[0].threads = (region.threads.iter().enumerate())
        .filter(|(i, _)| !waiting.contains(i))
        .map(|(_, t)| t.clone())
        .collect();
    let working = out.regions[0].threads.len();
    let note = format!(
        "{said}: left out of the rooflines and projections, which take the {working} working thread{}, one per core (the run's time is still the longest thread's)",
        if working > 1 { "s" } else { "" },
    );
    Ok((out, Some(note)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_bytes_move_to_the_ends_of_their_intervals() {
        let level = |name: &str, e: Option<f64>| hpcscope_mix::sampling::LevelEstimate {
            level: name.into(),
            hit_ratio: Some(0.5),
            ci95: Some(0.01),
            units: 8,
            bytes_ci95: e,
        };
        let report = |machine: &str, l2: f64| hpcscope_mix::SamplingReport {
            spec: hpcscope_mix::SampleSpec::sets(8).expect("valid"),
            records: 1000,
            warmed: 0,
            machines: vec![hpcscope_mix::sampling::MachineSampling {
                machine: machine.into(),
                units: 8,
                population: 64,
                simulated: 125,
                levels: vec![
                    level("L1", Some(0.001)),
                    level("L2", Some(l2)),
                    level("L3", None),
                ],
                memory_bytes_ci95: Some(1.5),
            }],
        };
        let reports = [report("a", 0.1), report("b", 0.2)];
        assert_eq!(
            bytes_errors(&reports, Some("b")),
            vec![0.001, 0.2, 0.0, 1.5]
        );
        assert!(bytes_errors(&reports, Some("c")).is_empty());
        assert!(bytes_errors(&reports, None).is_empty());
        let m = AppMetrics {
            flops: 1e9,
            fp_instructions: 1e9,
            levels: vec!["L1".into(), "L2".into(), "L3".into(), "MM".into()],
            bytes: vec![1000.0, 100.0, 10.0, 1.0],
            time_s: Some(1.0),
        };
        let e = bytes_errors(&reports, Some("a"));
        let lo = moved(std::slice::from_ref(&m), &e, -1.0);
        let hi = moved(std::slice::from_ref(&m), &e, 1.0);
        let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9);
        // Memory's lower end is 0, not below.
        assert!(
            close(&lo[0].bytes, &[999.0, 90.0, 10.0, 0.0]),
            "{:?}",
            lo[0].bytes
        );
        assert!(
            close(&hi[0].bytes, &[1001.0, 110.0, 10.0, 2.5]),
            "{:?}",
            hi[0].bytes
        );
        assert_eq!(moved(std::slice::from_ref(&m), &[], 1.0)[0].bytes, m.bytes);
    }

    #[test]
    fn the_phase_line_says_how_many_levels_were_simulated_when_some_are_shared() {
        let mut t = Timings {
            characterization_s: 2.0,
            emulation_s: 1.5,
            simulations: (6, 9),
            levels: Some((10, 15)),
            ..Timings::default()
        };
        let line = t.line(2.5);
        assert!(
            line.contains(
                "emulation with 6 cache simulations for 9 machines, 10 level simulations for their 15 levels 1.5 s"
            ),
            "{line}"
        );
        // Nothing shared, or not known: no level count.
        for levels in [Some((15, 15)), None] {
            t.levels = levels;
            let line = t.line(2.5);
            assert!(
                line.contains("emulation with 6 cache simulations for 9 machines 1.5 s"),
                "{line}"
            );
        }
    }

    #[test]
    fn analyze_default_machines_share_first_levels() {
        // cascadelake-8260 as the source and every bundled machine as a target, as
        // `analyze -m cascadelake-8260` simulates them.
        let mut machines = vec![hpcscope_core::library::builtin("cascadelake-8260").unwrap()];
        machines.extend(hpcscope_core::library::all().unwrap());
        let nodes: Vec<_> = machines
            .iter()
            .filter_map(|m| hpcscope_mix::node(m).ok())
            .collect();
        let placement = hpcscope_mix::Placement::default();
        let d = hpcscope_mix::Distinct::new(&nodes, &placement);
        assert_eq!(d.nodes.len(), 6);
        // Cascade Lake's L1 with ThunderX2's; Graviton's L1 and L2 with EPI-like's and
        // Neoverse N1's: 3 L1s, 4 L2s, 3 L3s.
        assert_eq!(d.level_simulations(&placement), Some((10, 15)));
    }
}
