//! Node scope of `analyze`: a program run with several threads, characterized per thread
//! (`mix` simulates each machine's caches as a node), placed on the per-core shares of this
//! machine's node ceilings (eq. 7.1), its load imbalance, and projected thread by thread
//! onto node machines (eqs. 7.2-7.5): the built-in node machines and the same machines
//! reduced to as many cores as threads (the `cores` transform).

use anyhow::Result;
use hpcscope_core::explore::{Transform, apply};
use hpcscope_core::machine::LevelKind;
use hpcscope_core::node::{NodeRoofline, node_roofline};
use hpcscope_core::point::Calibration;
use hpcscope_core::project::{Inputs, Options, Projection, Side, Spread, project_with};
use hpcscope_core::roofline::{
    AccessWidths, Ceilings, RooflineAnalysis, Scope, analyze as roofline,
};
use hpcscope_core::{AppMetrics, Machine, Profile, library};
use hpcscope_report::fmt::num;
use hpcscope_report::{Section, escape, html_table};
use serde::Serialize;

use crate::verdict::{lower_bound_by, target_verdict};

/// One node projection.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NodeTarget {
    /// Target machine id (a derived machine's says its transform: `graviton3+cores=2`).
    pub machine: String,
    /// Target machine name.
    pub name: String,
    /// The built-in machine a derived target comes from.
    pub derived_from: Option<String>,
    /// Where the target's bytes per level come from.
    pub caches_from: String,
    /// The projection (node scope: per thread, summed).
    pub projection: Projection,
    /// One sentence.
    pub verdict: String,
    /// The target machine itself, for the charts.
    #[serde(skip)]
    pub target: Machine,
}

/// The node scope of an analysis.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NodeAnalysis {
    /// Threads of the run.
    pub threads: usize,
    /// How the threads were placed on the simulated nodes' cores.
    pub placement: String,
    /// The threads on the per-core shares of the source's node ceilings.
    pub roofline: NodeRoofline,
    /// Node projections.
    pub targets: Vec<NodeTarget>,
    /// One sentence on the imbalance.
    pub imbalance_verdict: String,
    /// Remarks.
    pub notes: Vec<String>,
}

/// Whether a machine describes a node (more than one core): the node projection shares
/// its node ceilings between its cores.
pub fn is_node_machine(m: &Machine) -> bool {
    m.cores() > 1
}

/// The node targets for `threads` threads: every node machine among `targets`, and each of
/// them reduced to `threads` cores by the `cores` transform where its socket count divides
/// the threads (and it has more cores). Single-core descriptions are left out with a note.
pub fn node_targets(
    targets: &[Machine],
    threads: u32,
    notes: &mut Vec<String>,
) -> Vec<(Machine, Option<String>)> {
    let mut out = Vec::new();
    let mut single = Vec::new();
    let lookup = |id: &str| library::builtin(id);
    for m in targets {
        if !is_node_machine(m) {
            single.push(m.id.clone());
            continue;
        }
        out.push((m.clone(), None));
        if threads < m.cores() {
            if threads.is_multiple_of(m.sockets) {
                match apply(m, &Transform::Cores(threads / m.sockets), &lookup) {
                    Ok(mut d) => {
                        // The transform counts cores per socket; say the node's.
                        d.id = format!("{}+{threads}-cores", m.id);
                        d.name = format!("{} [{threads} cores]", m.name);
                        cap_shared_bandwidths(&mut d, threads, notes);
                        out.push((d, Some(m.id.clone())));
                    }
                    Err(e) => notes.push(format!("{}: no {threads}-core variant: {e}", m.id)),
                }
            } else {
                notes.push(format!(
                    "{}: no {threads}-core variant ({} sockets do not divide {threads} threads)",
                    m.id, m.sockets
                ));
            }
        }
    }
    if !single.is_empty() {
        notes.push(format!(
            "not projected at node scope: {} describe(s) one core (the node projection shares a node's ceilings between its cores)",
            single.join(", ")
        ));
    }
    out
}

/// The shared levels (shared caches, memory) of a node reduced to `threads` cores keep the
/// node's bandwidth under the `cores` transform, but `threads` cores, the others idle, draw
/// at most `threads` times what one core draws alone: where the level gives that one-core
/// value (`core_gbs`), its node bandwidth is capped there. Where it does not, the level
/// keeps the whole node's bandwidth and a note says the projection onto these cores is an
/// upper bound for it.
fn cap_shared_bandwidths(d: &mut Machine, threads: u32, notes: &mut Vec<String>) {
    let mut uncapped = Vec::new();
    for l in &mut d.levels {
        let private = l.kind == LevelKind::Cache
            && l.cache
                .as_ref()
                .and_then(|g| g.shared_by_cores)
                .unwrap_or(1)
                <= 1;
        if private {
            continue;
        }
        match (l.core_gbs, l.node_gbs) {
            (Some(c), Some(n)) if c * f64::from(threads) < n => {
                l.node_gbs = Some(c * f64::from(threads));
            }
            (None, Some(_)) => uncapped.push(l.name.clone()),
            _ => {}
        }
    }
    if !uncapped.is_empty() {
        notes.push(format!(
            "{}: {} keep(s) the whole node's bandwidth (the machine file gives no one-core value to bound what {threads} cores draw), so projections bound there are upper bounds",
            d.id,
            uncapped.join(", ")
        ));
    }
}

/// The whole program's rooflines on `threads` cores' shares of the node (eq. 7.1 times the
/// threads): the aggregate of a run with several threads against what as many cores of
/// the loaded node sustain.
pub fn aggregate_roofline(
    m: &Machine,
    p: &Profile,
    agg: &AppMetrics,
    widths: Option<&AccessWidths>,
    threads: usize,
    origin: &str,
) -> Result<RooflineAnalysis> {
    let mut c = match widths {
        Some(w) => Ceilings::at_widths(m, p.precision, Scope::Node, w)?,
        None => Ceilings::of(m, p.precision, Scope::Node)?,
    };
    let n = threads as f64;
    c.peak_gflops *= n;
    for b in &mut c.bandwidth_gbs {
        *b *= n;
    }
    // Each core runs its own FP units, divider and dependency chains.
    for r in [
        &mut c.fp_instruction_rate,
        &mut c.divider_rate,
        &mut c.latency_rate,
    ]
    .into_iter()
    .flatten()
    {
        *r *= n;
    }
    let mut r = roofline(&c, agg, origin)?;
    r.notes.push(format!(
        "ceilings of {threads} cores of the loaded node: the per-core shares (eq. 7.1) times {threads}"
    ));
    Ok(r)
}

/// One sentence on how evenly the threads share the work.
pub fn imbalance_verdict(r: &NodeRoofline) -> String {
    let im = &r.imbalance;
    let idle = if im.idle_threads > 0 {
        format!(" ({} thread(s) did no work in the region)", im.idle_threads)
    } else {
        String::new()
    };
    let time = im
        .time_balance
        .map(|b| format!(", their times {:.0} %", b * 100.0))
        .unwrap_or_default();
    let what = if im.flops_balance < 0.9 || im.time_balance.is_some_and(|b| b < 0.9) {
        format!(
            "the work is unevenly spread: thread {} has the most, and the others wait for it at the end of the region",
            im.heaviest_thread
        )
    } else {
        "the work is evenly spread".to_string()
    };
    format!(
        "{} working threads{idle}: load balance (mean / max) of their FLOPs {:.0} %, bytes {:.0} %{time}: {what}.",
        im.working_threads,
        im.flops_balance * 100.0,
        im.bytes_balance * 100.0
    )
}

/// The node scope of a characterized run: rooflines per thread on `source`'s node shares,
/// and projections onto `targets` (from [`node_targets`]). `profile_for` gives the target
/// profile simulated for a machine id, with where its bytes come from. The intervals are
/// widened like the core scope's: carried-time points, `calibration`'s margin and the
/// source's run-to-run band `source_spread`, and, for a sampled characterization, the
/// bytes per level's errors (`bytes_errors` of the machine whose caches were simulated: the
/// relative half-widths of their 95 % intervals, empty when not sampled), each side's
/// bytes moved to the ends of their intervals ([`crate::analyze::moved`]).
#[allow(clippy::too_many_arguments)]
pub fn analyze_node(
    source: &Machine,
    source_profile: &Profile,
    source_gflops: Option<f64>,
    targets: &[(Machine, Option<String>)],
    profile_for: &dyn Fn(&str) -> Option<(Profile, String)>,
    placement: &str,
    source_spread: Option<Spread>,
    calibration: Option<&Calibration>,
    bytes_errors: &dyn Fn(Option<&str>) -> Vec<f64>,
) -> Result<NodeAnalysis> {
    let origin = "the source profile";
    let region = &source_profile.regions[0];
    let threads = region.thread_metrics(origin)?;
    let ids: Vec<u32> = region.threads.iter().map(|t| t.thread).collect();
    let rl = node_roofline(source, source_profile.precision, &threads, &ids, origin)?;
    let mut notes = Vec::new();
    let mut out = Vec::new();
    let mut widest = None;
    if let Some(g) = source_gflops.filter(|g| *g > 0.0) {
        for (t, base) in targets {
            let id = base.as_deref().unwrap_or(&t.id);
            let found = profile_for(id);
            let borrowed = found.is_none();
            let (prof, how) = match found {
                Some((p, h)) => (p, h),
                None => (
                    source_profile.clone(),
                    format!("the source's caches ({id} has no cache geometry)"),
                ),
            };
            let to = format!("the target profile for {}", t.id);
            let tm = prof.regions[0].thread_metrics(&to)?;
            let run = |src: &[AppMetrics], tgt: &[AppMetrics]| {
                project_with(
                    Side {
                        machine: source,
                        threads: src,
                        origin,
                    },
                    g,
                    Side {
                        machine: t,
                        threads: tgt,
                        origin: &to,
                    },
                    source_profile.precision,
                    Options {
                        scope: Scope::Node,
                        ..Options::default()
                    },
                    &Inputs {
                        source_spread,
                        calibration,
                        carried_time: true,
                        instructions: source_profile.regions[0]
                            .instructions()
                            .zip(prof.regions[0].instructions()),
                        ..Inputs::default()
                    },
                )
            };
            let mut p = match run(&threads, &tm) {
                Ok(p) => p,
                Err(e) => {
                    notes.push(format!("{}: not projected at node scope: {e}", t.id));
                    continue;
                }
            };
            let (se, te) = (
                bytes_errors(source_profile.machine.as_deref()),
                bytes_errors(prof.machine.as_deref()),
            );
            if se.iter().chain(&te).any(|e| *e > 0.0) {
                let corners: Vec<Projection> =
                    crate::analyze::corners(&threads, &se, &tm, &te, |a, b| run(a, b).ok());
                widest = Some(widest.unwrap_or(1.0f64).max(p.take_in(&corners)));
            }
            out.push(NodeTarget {
                machine: t.id.clone(),
                name: t.name.clone(),
                derived_from: base.clone(),
                caches_from: how,
                verdict: target_verdict(t, &p) + &crate::verdict::borrowed_caches(t, borrowed),
                projection: p,
                target: t.clone(),
            });
        }
        if let Some(w) = widest {
            notes.push(crate::analyze::sampling_widening_note(w));
        }
    } else {
        notes.push("the run has no measured time: nothing is projected at node scope".into());
    }
    Ok(NodeAnalysis {
        threads: threads.len(),
        placement: placement.to_string(),
        imbalance_verdict: imbalance_verdict(&rl),
        roofline: rl,
        targets: out,
        notes,
    })
}

/// The node section of a report: the threads on the node's shares, the imbalance, and
/// the node projections.
pub fn node_section(n: &NodeAnalysis, source: &Machine, title_prefix: &str) -> Section {
    let r = &n.roofline;
    let rows: Vec<Vec<String>> = r
        .threads
        .iter()
        .map(|t| {
            let a = &t.analysis;
            vec![
                t.thread.to_string(),
                num(t.flops, 4),
                num(t.bytes, 4),
                t.time_s.map(|x| num(x, 4)).unwrap_or("-".into()),
                t.achieved_gflops.map(|x| num(x, 4)).unwrap_or("-".into()),
                a.levels
                    .iter()
                    .map(|l| format!("{} {}", l.level, num(l.oi, 3)))
                    .collect::<Vec<_>>()
                    .join(", "),
                format!(
                    "{} ({}) {}",
                    a.binding_level,
                    a.binding_bound,
                    num(a.binding_gflops, 4)
                ),
                num(t.weighted_gflops, 4),
            ]
        })
        .collect();
    let mut body = html_table(
        &[
            "thread",
            "FLOPs",
            "bytes",
            "time (s)",
            "GFLOP/s",
            "OI per level (FLOP/B)",
            "binding ceiling GFLOP/s",
            "eq. 7.2 roof GFLOP/s",
        ],
        &rows,
    );
    body.push_str(&format!(
        "<p>Node: {} GFLOP/s attainable by these threads on the per-core shares of {} ({} cores), {} by eq. 7.2's weighted roofs{}.</p>",
        num(r.attainable_gflops, 4),
        escape(&source.name),
        r.cores,
        num(r.weighted_gflops, 4),
        r.achieved_gflops
            .map(|a| format!(
                "; achieved {} GFLOP/s{}",
                num(a, 4),
                r.efficiency
                    .map(|e| format!(" ({:.0} % of attainable)", e * 100.0))
                    .unwrap_or_default()
            ))
            .unwrap_or_default()
    ));
    if !n.targets.is_empty() {
        let trows: Vec<Vec<String>> = n
            .targets
            .iter()
            .map(|t| {
                let s = t.projection.speedup();
                vec![
                    t.name.clone(),
                    num(t.projection.interval.lo, 4),
                    num(t.projection.interval.hi, 4),
                    format!("x{} - x{}", num(s.lo, 3), num(s.hi, 3)),
                    lower_bound_by(&t.projection),
                    t.caches_from.clone(),
                ]
            })
            .collect();
        body.push_str(&format!(
            "<p>Projected onto node machines, thread by thread (eq. 7.4) and summed (eq. 7.5), each thread on the per-core share of the target's loaded node, with {} threads:</p>",
            n.threads
        ));
        body.push_str(&html_table(
            &[
                "target",
                "lo GFLOP/s",
                "hi GFLOP/s",
                "speed-up",
                "lower bound set by",
                "target bytes from",
            ],
            &trows,
        ));
    }
    if !n.notes.is_empty() || !r.notes.is_empty() {
        body.push_str("<ul>");
        for x in r.notes.iter().chain(&n.notes) {
            body.push_str(&format!("<li>{}</li>", escape(x)));
        }
        body.push_str("</ul>");
    }
    let mean = r.threads.iter().map(|x| x.flops).sum::<f64>() / r.threads.len().max(1) as f64;
    let bars: Vec<hpcscope_core::view::SpeedupRow> = r
        .threads
        .iter()
        .filter(|_| mean > 0.0)
        .map(|t| hpcscope_core::view::SpeedupRow {
            workload: format!("thread {}", t.thread),
            target: "FLOPs / mean".into(),
            lo: t.flops / mean,
            hi: t.flops / mean,
            point: None,
            model: None,
        })
        .collect();
    Section {
        title: format!("{title_prefix}Node: {} threads", n.threads),
        summary: n.imbalance_verdict.clone(),
        body_html: body,
        svgs: vec![hpcscope_core::view::speedup_svg(
            &bars,
            "Each thread's FLOPs over the mean (1 = balanced)",
        )],
    }
}

/// What `analyze` prints of the node scope.
pub fn node_text(n: &NodeAnalysis) -> String {
    let r = &n.roofline;
    let mut s = format!(
        "node: {} threads ({} placement in the simulation); {}\n",
        n.threads, n.placement, n.imbalance_verdict
    );
    for t in &r.threads {
        s.push_str(&format!(
            "  thread {}: {} FLOPs, {} bytes, {}binding {} ({}) {} GFLOP/s\n",
            t.thread,
            num(t.flops, 4),
            num(t.bytes, 4),
            t.achieved_gflops
                .map(|g| format!("{} GFLOP/s, ", num(g, 4)))
                .unwrap_or_default(),
            t.analysis.binding_level,
            t.analysis.binding_bound,
            num(t.analysis.binding_gflops, 4)
        ));
    }
    for t in &n.targets {
        s.push_str(&format!("  {}\n", t.verdict));
    }
    for x in &n.notes {
        s.push_str(&format!("  note: {x}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_core::profile::{LevelBytes, Memory, Region, ThreadMetrics};

    fn thread(n: u32, flops: f64, time_s: f64) -> ThreadMetrics {
        let lv = |level: &str, bytes| LevelBytes {
            level: level.into(),
            bytes,
        };
        ThreadMetrics {
            thread: n,
            time_s: Some(time_s),
            flops,
            fp_instructions: flops / 2.0,
            memory: Memory {
                bytes_per_level: Some(vec![
                    lv("L1", 10.0 * flops),
                    lv("L2", 0.5 * flops),
                    lv("L3", 0.2 * flops),
                    lv("MM", 0.3 * flops),
                ]),
                bytes_total: None,
                hit_ratios: None,
            },
            loads: None,
            stores: None,
            instructions: None,
        }
    }

    fn profile(threads: Vec<ThreadMetrics>) -> Profile {
        Profile {
            format_version: 1,
            application: "t".into(),
            binary: None,
            isa: "x86_64".into(),
            vector_bits: 128,
            precision: hpcscope_core::Precision::F64,
            machine: None,
            collector: None,
            partial: false,
            regions: vec![Region {
                name: "r".into(),
                threads,
                access_widths: None,
            }],
            notes: vec![],
        }
    }

    #[test]
    fn node_targets_skip_single_cores_and_add_variants_of_as_many_cores() {
        let ids = ["a64fx", "a64fx-node", "graviton3", "cascadelake-8260"];
        let ms: Vec<Machine> = ids.iter().map(|i| library::builtin(i).unwrap()).collect();
        let mut notes = Vec::new();
        let t = node_targets(&ms, 2, &mut notes);
        let got: Vec<(String, u32)> = t.iter().map(|(m, _)| (m.id.clone(), m.cores())).collect();
        assert_eq!(
            got,
            [
                ("a64fx-node".to_string(), 48),
                ("graviton3".into(), 64),
                ("graviton3+2-cores".into(), 2),
                ("cascadelake-8260".into(), 48),
                ("cascadelake-8260+2-cores".into(), 2),
            ]
        );
        // One core per socket: the socket's L3 is that core's.
        let clx = &t[4].0;
        assert_eq!(
            clx.level("L3")
                .unwrap()
                .cache
                .as_ref()
                .unwrap()
                .shared_by_cores,
            Some(1)
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("a64fx-node: no 2-core variant")),
            "{notes:?}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("a64fx describe(s) one core")),
            "{notes:?}"
        );
        // Graviton 3's memory gives no one-core bandwidth: kept, with a note (its L3 gives
        // no bandwidth at all).
        let g3 = &t[2].0;
        assert_eq!(g3.level("MM").unwrap().node_gbs, Some(313.0));
        assert!(
            notes
                .iter()
                .any(|n| n.contains("graviton3+2-cores: MM keep(s)")),
            "{notes:?}"
        );
        // With one core's memory bandwidth given (30 GB/s), two cores draw at most 60 of
        // the node's 313 (and no note); a private level is not capped.
        let mut g = library::builtin("graviton3").unwrap();
        let mm = g.levels.iter_mut().find(|l| l.name == "MM").unwrap();
        mm.core_gbs = Some(30.0);
        let l1_node = g.level("L1").unwrap().node_gbs;
        let mut notes = Vec::new();
        let t = node_targets(&[g], 2, &mut notes);
        let d = &t[1].0;
        assert_eq!(d.level("MM").unwrap().node_gbs, Some(60.0));
        assert_eq!(
            d.level("L1").unwrap().node_gbs,
            l1_node.map(|x| x * 2.0 / 64.0)
        );
        assert!(!notes.iter().any(|n| n.contains("keep(s)")), "{notes:?}");
    }

    #[test]
    fn an_imbalanced_run_is_projected_thread_by_thread() {
        let m = library::builtin("graviton3").unwrap();
        // Thread 1 has three times thread 0's work and time.
        let p = profile(vec![thread(0, 1e9, 0.1), thread(1, 3e9, 0.3)]);
        let targets = node_targets(&[library::builtin("graviton2").unwrap()], 2, &mut vec![]);
        // The node analysis of `p` with this source rate and these errors of the bytes.
        let node = |gflops: Option<f64>, errors: Vec<f64>| {
            let e = move |_: Option<&str>| errors.clone();
            analyze_node(
                &m,
                &p,
                gflops,
                &targets,
                &|_| None,
                "compact",
                None,
                None,
                &e,
            )
            .unwrap()
        };
        let n = node(Some(4e9 / 0.3 / 1e9), Vec::new());
        assert_eq!(n.threads, 2);
        assert!((n.roofline.imbalance.flops_balance - 2.0 / 3.0).abs() < 1e-12);
        assert!(
            n.imbalance_verdict.contains("unevenly"),
            "{}",
            n.imbalance_verdict
        );
        assert!(
            n.imbalance_verdict.contains("thread 1"),
            "{}",
            n.imbalance_verdict
        );
        assert_eq!(n.targets.len(), 2);
        for t in &n.targets {
            assert_eq!(t.projection.threads.len(), 2);
            // Each thread's share of the source rate follows its FLOPs.
            let s: Vec<f64> = t
                .projection
                .threads
                .iter()
                .map(|x| x.source_gflops)
                .collect();
            assert!((s[1] / s[0] - 3.0).abs() < 1e-9, "{s:?}");
            let sum: f64 = t.projection.threads.iter().map(|x| x.interval.lo).sum();
            assert!((sum - t.projection.interval.lo).abs() < 1e-9);
        }
        // Sampled bytes, known to 30 % at every level: every interval takes in the
        // projections with the bytes at the ends of theirs, and a note says by how much.
        let sampled = node(Some(4e9 / 0.3 / 1e9), vec![0.3; 4]);
        for (a, b) in n.targets.iter().zip(&sampled.targets) {
            let (x, y) = (a.projection.interval, b.projection.interval);
            assert!(y.lo <= x.lo && y.hi >= x.hi, "{x:?} {y:?}");
        }
        assert!(
            sampled
                .targets
                .iter()
                .zip(&n.targets)
                .any(|(a, b)| a.projection.interval != b.projection.interval),
            "the bytes' errors widen some interval"
        );
        assert!(
            sampled
                .notes
                .iter()
                .any(|x| x.contains("include the sampling error")),
            "{:?}",
            sampled.notes
        );
        // The text report shows the node's notes.
        assert!(
            node_text(&sampled)
                .contains("note: the projected intervals include the sampling error")
        );
        // Without a time, nothing is projected, and a note says so.
        let n = node(None, Vec::new());
        assert!(n.targets.is_empty() && !n.notes.is_empty());
    }
}
