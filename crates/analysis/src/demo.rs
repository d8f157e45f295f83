//! `demo`: the bundled workloads built here, analysed, projected onto published machines,
//! swept over the SVE vector length, and validated (SSE2 <-> AVX2 builds), in one report;
//! and a node section: the OpenMP workloads with several threads, per thread, projected
//! onto node machines, and validated from one thread to several.

use std::path::PathBuf;

use anyhow::Result;
use hpcscope_core::explore::{DesignPoint, Resolved, Transform, apply, sweep};
use hpcscope_core::project::Options;
use hpcscope_core::{Machine, library};
use hpcscope_mix::MixOptions;
use hpcscope_report::fmt::num;
use hpcscope_report::{Section, escape, html_page, html_table};

use crate::analyze::{AnalyzeOptions, AnalyzeResult, analyze};
use crate::node_validate::{
    NodePair, NodeSummary, node_validation_section, summarize_node, validate_node,
};
use crate::render::{machine_section, sections};
use crate::validate::{
    Build, Group, PairResult, PairSpec, ProtocolOptions, Timer, ValidationSummary, summarize,
    validation_section,
};
use crate::workloads::{Builds, Change, Workload, build};

/// What the demo runs.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Where the workloads are built (`DIR/src`, `DIR/x86-64`, ...).
    pub build_dir: PathBuf,
    /// The source machine.
    pub source: Machine,
    /// The workloads.
    pub workloads: Vec<&'static Workload>,
    /// Skip the aarch64 SVE vector-length study.
    pub no_sve: bool,
    /// Native runs per binary (median).
    pub native_runs: u32,
    /// The OpenMP workloads of the node section.
    pub node_workloads: Vec<&'static Workload>,
    /// Threads of the node section (and of its validation, from one thread).
    pub threads: u32,
}

/// What the demo found.
#[derive(Debug)]
pub struct Demo {
    /// One analysis per workload.
    pub analyses: Vec<AnalyzeResult>,
    /// The validation pairs.
    pub validation: Vec<PairResult>,
    /// Their summary.
    pub summary: ValidationSummary,
    /// One analysis per OpenMP workload, with its node scope.
    pub node_analyses: Vec<AnalyzeResult>,
    /// The node validation pairs.
    pub node_validation: Vec<NodePair>,
    /// How each SVE vector-length study was counted.
    pub sve_studies: Vec<SveCounting>,
    /// Their summary.
    pub node_summary: NodeSummary,
    /// What this machine could not do.
    pub notes: Vec<String>,
    /// The report page.
    pub page: String,
}

impl Demo {
    /// The result as JSON (`result.json`).
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "analyses": self.analyses,
            "validation": {"results": self.validation, "summary": self.summary},
            "node_analyses": self.node_analyses,
            "node_validation": {"results": self.node_validation, "summary": self.node_summary},
            "sve_studies": self.sve_studies,
            "notes": self.notes,
        })
    }

    /// What the demo prints: each workload's verdict, the validation summary, the notes.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for r in &self.analyses {
            text.push_str(&format!("{}: {}\n", r.application, r.verdict));
        }
        for c in &self.sve_studies {
            text.push_str(&format!("{}: SVE study {}\n", c.workload, c.sentence()));
        }
        let s = &self.summary.all;
        text.push_str(&format!(
            "validation: {} pairs, {:.0} % inside the projected interval (with the runs' spread), median width x{}, point estimate off by {:.1} % at the median ({:.1} % at most; Kwack baseline {:.1} %)\n",
            s.weighted.pairs,
            s.weighted.inside_fraction * 100.0,
            num(s.weighted.median_width, 3),
            s.weighted.median_point_error * 100.0,
            s.weighted.max_point_error * 100.0,
            s.kwack.median_point_error * 100.0,
        ));
        for r in &self.node_analyses {
            if let Some(n) = &r.node {
                text.push_str(&format!(
                    "{} ({} threads): {}\n",
                    r.application, n.threads, n.imbalance_verdict
                ));
            }
        }
        let ns = &self.node_summary;
        if ns.pairs > 0 {
            text.push_str(&format!(
                "node validation: {} pairs, {:.0} % inside the projected interval (with the runs' spread; {:.0} % for the median alone), median width {:.1} %, median midpoint error {:.1} %{}\n",
                ns.pairs,
                ns.inside_fraction * 100.0,
                ns.inside_fraction_strict * 100.0,
                ns.median_width * 100.0,
                ns.median_midpoint_error * 100.0,
                ns.median_point_error
                    .map(|e| format!(", median point error {:.1} %", e * 100.0))
                    .unwrap_or_default()
            ));
        }
        for n in &self.notes {
            text.push_str(&format!("note: {n}\n"));
        }
        text
    }
}

/// Runs the demo; `progress` hears what is being done.
#[allow(clippy::too_many_lines)]
pub fn demo(o: &DemoOptions, progress: &dyn Fn(&str)) -> Result<Demo> {
    let (source, ws) = (&o.source, &o.workloads);
    let mut notes = Vec::new();
    progress("building the workloads");
    let builds = build(
        &o.build_dir,
        &ws.iter().map(|w| w.name).collect::<Vec<_>>(),
        &mut notes,
    )?;
    let targets: Vec<Machine> = ["thunderx2", "neoverse-n1", "a64fx", "a64fx-node"]
        .iter()
        .map(|t| library::builtin(t))
        .collect::<Result<_, _>>()?;
    let mut sections_all: Vec<Section> = Vec::new();
    let mut sve_studies = Vec::new();
    let mut results = Vec::new();
    let mut overview = Vec::new();
    for (w, b) in ws.iter().zip(&builds) {
        let Some(sse2) = &b.sse2 else { continue };
        progress(&format!("analyze {} ({})", w.name, w.what));
        let r = analyze(&AnalyzeOptions {
            run: hpcscope_mix::RunSpec {
                program: sse2.clone(),
                args: w.args.iter().map(|s| s.to_string()).collect(),
                functions: vec![format!("kernel_{}", w.name)],
                ..Default::default()
            },
            source: source.clone(),
            targets: targets.clone(),
            target_binary: None,
            native_runs: o.native_runs,
            application: Some(w.name.to_string()),
            with_trace: true,
            calibration: None,
            sweep_machines: Vec::new(),
        })?;
        overview.push(vec![
            w.name.to_string(),
            w.what.to_string(),
            r.source_gflops.map(|g| num(g, 3)).unwrap_or("-".into()),
            match r.roofline.binding_bound {
                hpcscope_core::roofline::Bound::Memory => {
                    format!("{} bandwidth", r.roofline.binding_level)
                }
                hpcscope_core::roofline::Bound::Compute => "compute (instruction mix)".to_string(),
            },
            r.targets
                .iter()
                .find(|t| t.machine == "a64fx")
                .map(|t| {
                    format!(
                        "{} - {}",
                        num(t.projection.interval.lo, 3),
                        num(t.projection.interval.hi, 3)
                    )
                })
                .unwrap_or("-".into()),
        ]);
        let mut secs = sections(&r, &format!("{}: ", w.name), false);
        if !o.no_sve {
            progress(&format!("SVE vector-length study of {}", w.name));
            match sve_study(source, &r, w, b) {
                Ok(Some((dps, g, counting))) => {
                    secs.push(Section {
                        title: format!("{}: SVE vector length on A64FX-like cores", w.name),
                        summary: sve_verdict(&dps),
                        body_html: format!(
                            "<p>{}</p>{}",
                            escape(&format!("Counting: {}.", counting.sentence())),
                            html_table(
                                &["variant", "target", "lo GFLOP/s", "hi GFLOP/s"],
                                &dps.iter()
                                    .map(|d| {
                                        vec![
                                            d.variant.clone(),
                                            d.target.clone(),
                                            num(d.interval.lo, 3),
                                            num(d.interval.hi, 3),
                                        ]
                                    })
                                    .collect::<Vec<_>>(),
                            )
                        ),
                        svgs: vec![hpcscope_core::view::explore_svg(
                            &dps,
                            &format!("{}: SVE vector length x memory on A64FX-like cores", w.name),
                            g,
                        )],
                    });
                    sve_studies.push(counting);
                }
                Ok(None) => {}
                Err(e) => notes.push(format!("{}: no SVE study: {e:#}", w.name)),
            }
        }
        sections_all.extend(secs);
        results.push(r);
    }
    progress("validation: SSE2 <-> AVX2 (<-> AVX-512) builds on this machine");
    let groups: Vec<Group> = ws
        .iter()
        .zip(&builds)
        .filter_map(|(w, b)| {
            let (s, a) = (b.sse2.clone()?, b.avx2.clone()?);
            let mut builds = vec![
                Build {
                    label: "gcc -O3 SSE2".into(),
                    path: s,
                },
                Build {
                    label: "gcc -O3 AVX2".into(),
                    path: a,
                },
            ];
            let mut pairs = vec![(0, 1), (1, 0)];
            // AVX-512 builds where they run: the large changes of the protocol.
            if let Some(p) = b.avx512.clone() {
                builds.push(Build {
                    label: "gcc -O3 AVX-512".into(),
                    path: p,
                });
                pairs.extend([(1, 2), (2, 1), (0, 2), (2, 0)]);
            }
            Some(Group {
                name: w.name.to_string(),
                args: w.args.iter().map(|s| s.to_string()).collect(),
                function: Some(format!("kernel_{}", w.name)),
                scope: false,
                timer: Timer::KernelLine,
                builds,
                pairs: pairs
                    .into_iter()
                    .map(|(source, target)| PairSpec {
                        source,
                        target,
                        change: Change::VectorWidth,
                        calibration: true,
                        // SSE2, AVX2, then AVX-512.
                        widens: Some(target > source),
                    })
                    .collect(),
            })
        })
        .collect();
    let protocol = crate::validate::run(
        source,
        &groups,
        &ProtocolOptions {
            runs: o.native_runs.max(3),
            calibration: Some(hpcscope_core::point::Calibration::bundled()),
        },
        progress,
    )?;
    // The protocol builds the workloads again: a note both builds give is said once.
    for n in protocol.notes {
        if !notes.contains(&n) {
            notes.push(n);
        }
    }
    let validation = protocol.pairs;
    // The node section: the OpenMP workloads with several threads.
    let mut node_analyses = Vec::new();
    let mut node_sections = Vec::new();
    let mut node_validation = Vec::new();
    if !o.node_workloads.is_empty() {
        progress("building the OpenMP workloads");
        let nb = build(
            &o.build_dir,
            &o.node_workloads.iter().map(|w| w.name).collect::<Vec<_>>(),
            &mut notes,
        )?;
        let node_targets: Vec<Machine> = [
            "a64fx-node",
            "graviton2",
            "graviton3",
            "epi-like",
            "cascadelake-8260",
            "knl-flat-mcdram",
        ]
        .iter()
        .map(|t| library::builtin(t))
        .collect::<Result<_, _>>()?;
        for (w, b) in o.node_workloads.iter().zip(&nb) {
            let Some(sse2) = &b.sse2 else { continue };
            progress(&format!(
                "analyze {} with {} threads ({})",
                w.name, o.threads, w.what
            ));
            let r = analyze(&AnalyzeOptions {
                run: hpcscope_mix::RunSpec {
                    program: sse2.clone(),
                    args: w.args.iter().map(|s| s.to_string()).collect(),
                    functions: vec![w.region()],
                    threads: Some(o.threads),
                    ..Default::default()
                },
                source: source.clone(),
                targets: node_targets.clone(),
                target_binary: None,
                native_runs: o.native_runs,
                application: Some(w.name.to_string()),
                with_trace: false,
                calibration: None,
                sweep_machines: Vec::new(),
            })?;
            if let Some(n) = &r.node {
                node_sections.push(crate::node::node_section(
                    n,
                    source,
                    &format!("{}: ", w.name),
                ));
            }
            node_analyses.push(r);
        }
        notes.extend(crate::node_validate::node_values_check(source));
        progress(&format!(
            "validation at node scope: 1 -> {} threads, SSE2 <-> AVX2",
            o.threads
        ));
        // As many timed runs as the core validation, for the sources' run-to-run spread.
        node_validation = validate_node(
            source,
            &o.node_workloads,
            &nb,
            o.threads,
            o.native_runs.max(3),
            Some(&hpcscope_core::point::Calibration::bundled()),
            progress,
        )?;
    }
    let mut page_sections = vec![Section {
        title: "Overview".into(),
        summary: format!(
            "Each bundled workload was built here, timed natively, characterized (natively under DynamoRIO for x86-64 builds where it is built, else under QEMU: FLOPs, FP instructions, bytes per memory level for each machine's caches), placed on this machine's rooflines and projected onto published machines. Source machine: {}.",
            source.name
        ),
        body_html: html_table(
            &[
                "workload",
                "what",
                "GFLOP/s here",
                "binding ceiling here",
                "projected on A64FX (GFLOP/s; the x86 build stands for an Arm one)",
            ],
            &overview,
        ),
        svgs: vec![hpcscope_core::view::speedup_svg(
            &results
                .iter()
                .flat_map(|r| {
                    r.targets.iter().map(|t| {
                        let s = t.projection.speedup();
                        hpcscope_core::view::SpeedupRow {
                            workload: r.application.clone(),
                            target: t.name.clone(),
                            lo: s.lo,
                            hi: s.hi,
                            point: t.projection.point.as_ref().map(|p| p.speedup),
                            model: t.projection.widening.map(|w| {
                                let g = t.projection.source_gflops;
                                [w.model_interval.lo / g, w.model_interval.hi / g]
                            }),
                        }
                    })
                })
                .collect::<Vec<_>>(),
            &format!(
                "Projected speed-up over {} on published machines (their ISA: the x86 build stands for theirs)",
                source.name
            ),
        )],
    }];
    page_sections.push(machine_section(source, ""));
    page_sections.push(validation_section(&validation, source));
    if !node_validation.is_empty() {
        page_sections.push(node_validation_section(&node_validation, source));
    }
    page_sections.extend(sections_all);
    page_sections.extend(node_sections);
    if !notes.is_empty() {
        page_sections.push(Section {
            title: "Notes".into(),
            summary: "What this machine could not do.".into(),
            body_html: format!(
                "<ul>{}</ul>",
                notes
                    .iter()
                    .map(|n| format!("<li>{}</li>", escape(n)))
                    .collect::<String>()
            ),
            svgs: vec![],
        });
    }
    let page = html_page("hpcscope demo: reference workloads", &page_sections);
    let summary = summarize(&validation);
    let node_summary = summarize_node(&node_validation);
    Ok(Demo {
        analyses: results,
        validation,
        summary,
        node_analyses,
        node_validation,
        node_summary,
        sve_studies,
        notes,
        page,
    })
}

/// How an SVE vector-length study was counted: which emulator and plugin API, how SVE
/// predication was counted, and whose memory accesses the caches simulated.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, serde::Serialize)]
pub struct SveCounting {
    /// The workload.
    pub workload: String,
    /// The emulator and plugin API ("counted under QEMU 10.0.2 (...) with the plugin for
    /// API v4: ..."), as the profiles' notes say it.
    pub counted: String,
    /// How predicated SVE instructions were counted (`active_lanes`, `full_lanes`), when
    /// the plugin said.
    pub predication: Option<String>,
    /// The build whose memory accesses the caches simulated: the SVE build's own (plugin
    /// API v4), or the NEON build's (API v1: QEMU 7.2 does not report SVE accesses).
    pub cache_stream: String,
}

impl SveCounting {
    /// From a mix report of the SVE build: the note naming the emulator, the plugin's
    /// predication mode, and whether a NEON build's stream stood in.
    fn of(workload: &str, r: &hpcscope_mix::MixReport, neon_stream: bool) -> SveCounting {
        SveCounting {
            workload: workload.to_string(),
            counted: r
                .notes
                .iter()
                .find(|n| n.starts_with("counted under"))
                .cloned()
                .unwrap_or_else(|| "counted under an emulator that did not say which".into()),
            predication: r.variants.iter().find_map(|v| v.counts.predication.clone()),
            cache_stream: if neon_stream {
                "the NEON build's memory accesses (QEMU 7.2 does not report SVE loads and stores to plugins)".into()
            } else {
                "the SVE build's own memory accesses".into()
            },
        }
    }

    /// One sentence: counted how, predication, caches simulated on what.
    pub fn sentence(&self) -> String {
        format!(
            "{}; SVE predication counted as {}; caches simulated on {}",
            self.counted,
            match self.predication.as_deref() {
                Some("active_lanes") => "active lanes (exact)",
                Some("full_lanes") =>
                    "full vectors (every lane, an over-count where predicates are partial)",
                Some(other) => other,
                None => "unknown (the plugin did not say)",
            },
            self.cache_stream
        )
    }
}

/// The SVE vector-length study of one workload: the SVE build analysed at each length for
/// A64FX's caches, projected from the x86 source onto A64FX-like cores of that length.
/// Under plugin API v4 (QEMU 10) the SVE build's own accesses are simulated; under API v1
/// (QEMU 7.2, which does not report SVE accesses) the NEON build's stand in.
fn sve_study(
    source: &Machine,
    src: &AnalyzeResult,
    w: &Workload,
    b: &Builds,
) -> Result<Option<(Vec<DesignPoint>, f64, SveCounting)>> {
    let (Some(sve), Some(neon), Some(g)) = (&b.sve, &b.neon, src.source_gflops) else {
        return Ok(None);
    };
    let a64 = library::builtin("a64fx")?;
    let exact = hpcscope_mix::tools::emulator(hpcscope_mix::Arch::Aarch64)?.api >= 4;
    let r = hpcscope_mix::analyze(&MixOptions {
        run: hpcscope_mix::RunSpec {
            program: sve.clone(),
            args: w.args.iter().map(|s| s.to_string()).collect(),
            functions: vec![format!("kernel_{}", w.name)],
            ..Default::default()
        },
        sve_bits: vec![128, 256, 512, 1024, 2048],
        machines: vec![a64.clone()],
        cache_binary: (!exact).then(|| neon.clone()),
        application: Some(w.name.to_string()),
        ..Default::default()
    })?;
    let counting = SveCounting::of(w.name, &r, !exact);
    let origin = "source profile";
    let variants = r
        .variants
        .iter()
        .map(|v| -> Result<_> {
            Ok((
                format!("SVE {}", v.sve_bits.unwrap_or(0)),
                v.sve_bits,
                v.profiles[0].regions[0].thread_metrics("SVE profile")?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let tx2 = library::builtin("thunderx2")?;
    let lookup = |id: &str| library::builtin(id);
    let targets = vec![
        ("A64FX core".to_string(), a64.clone()),
        (
            "A64FX core, DDR4 of ThunderX2".to_string(),
            apply(&a64, &Transform::ReplaceMemory(tx2.id.clone()), &lookup)?,
        ),
    ];
    let variant_widths = variants
        .iter()
        .map(|(_, bits, _)| {
            bits.map(|b| {
                hpcscope_core::roofline::AccessWidths::single(b, "the SVE vector length emulated")
            })
        })
        .collect();
    let res = Resolved {
        source_machine: source.clone(),
        source_threads: src.source_profile.regions[0].thread_metrics(origin)?,
        source_gflops: g,
        variants,
        targets,
        source_widths: Some(crate::validate::access_widths(&src.mix, 0)),
        variant_widths,
        source_spread: hpcscope_core::project::Spread::from_times(&src.mix.native_times_s),
        source_instructions: src.source_profile.regions[0].instructions(),
        variant_instructions: r
            .variants
            .iter()
            .map(|v| v.profiles[0].regions[0].instructions())
            .collect(),
    };
    let model = hpcscope_core::point::Calibration::bundled();
    Ok(Some((
        sweep(
            &res,
            src.source_profile.precision,
            Options::default(),
            &hpcscope_core::project::Inputs {
                calibration: Some(&model),
                carried_time: true,
                ..Default::default()
            },
        )?,
        g,
        counting,
    )))
}

fn sve_verdict(dps: &[DesignPoint]) -> String {
    let best = dps
        .iter()
        .max_by(|a, b| a.interval.hi.total_cmp(&b.interval.hi));
    let worst = dps
        .iter()
        .min_by(|a, b| a.interval.hi.total_cmp(&b.interval.hi));
    match (best, worst) {
        (Some(b), Some(w)) => format!(
            "The upper bound goes from {} GFLOP/s ({}, {}) to {} GFLOP/s ({}, {}): the longer vectors help only as far as the binary's instruction mix and the memory bandwidth let them.",
            num(w.interval.hi, 3),
            w.variant,
            w.target,
            num(b.interval.hi, 3),
            b.variant,
            b.target
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::SveCounting;

    fn counting(predication: Option<&str>, neon: bool) -> SveCounting {
        SveCounting {
            workload: "spmv".into(),
            counted: "counted under QEMU 10.0.2 (built by scripts/build-qemu.sh) with the plugin for API v4: SVE FLOPs by active lanes, SVE loads and stores in the cache simulation".into(),
            predication: predication.map(str::to_string),
            cache_stream: if neon {
                "the NEON build's memory accesses".into()
            } else {
                "the SVE build's own memory accesses".into()
            },
        }
    }

    #[test]
    fn the_sve_study_says_how_it_was_counted() {
        let s = counting(Some("active_lanes"), false).sentence();
        assert!(s.starts_with("counted under QEMU 10.0.2"), "{s}");
        assert!(s.contains("plugin for API v4"), "{s}");
        assert!(
            s.contains("predication counted as active lanes (exact)"),
            "{s}"
        );
        assert!(
            s.ends_with("caches simulated on the SVE build's own memory accesses"),
            "{s}"
        );
        let s = counting(Some("full_lanes"), true).sentence();
        assert!(s.contains("full vectors (every lane, an over-count"), "{s}");
        assert!(s.contains("the NEON build's memory accesses"), "{s}");
        let s = counting(None, true).sentence();
        assert!(s.contains("predication counted as unknown"), "{s}");
    }
}
