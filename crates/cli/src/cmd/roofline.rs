//! `hpcscope roofline`: an application on a machine's cache-aware rooflines.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use hpcscope_core::roofline::{Ceilings, RooflineAnalysis, Scope, analyze};

use crate::output::{Table, emit_with, num, render};
use hpcscope_core::load;

/// Which ceilings to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum RoofScope {
    /// One core running alone (single-core peak and bandwidths).
    #[default]
    Core,
    /// The whole node (node peak and bandwidths). A profile with one entry per thread is
    /// placed thread by thread on the per-core shares (eq. 7.1), with the node's sum and
    /// the load imbalance; a profile of one entry (all threads summed) on the whole node.
    Node,
}

/// Arguments of `roofline`.
#[derive(Args, Debug)]
pub struct RooflineArgs {
    /// Machine: built-in id or TOML file.
    #[arg(long, short)]
    pub machine: String,
    /// Profile JSON file (as written by `hpcscope mix`).
    #[arg(long, short)]
    pub profile: PathBuf,
    /// Region of the profile (default: the only one).
    #[arg(long)]
    pub region: Option<String>,
    /// Ceilings of one core, or of the whole node.
    #[arg(long, value_enum, default_value_t)]
    pub scope: RoofScope,
    /// Format and destination of the result.
    #[command(flatten)]
    pub out: crate::args::OutputArgs,
    /// Also draw the roofline chart to this SVG file.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Keep the placement in the run history.
    #[command(flatten)]
    pub record: crate::args::RecordFlags,
}

/// Computes the analysis for the CLI and the other commands that reuse it.
pub fn compute(
    machine: &str,
    profile: &std::path::Path,
    region: Option<&str>,
    scope: RoofScope,
) -> Result<(RooflineAnalysis, String)> {
    let m = load::machine(machine)?;
    let p = load::profile(profile)?;
    let origin = profile.display().to_string();
    let r = p.region(region, &origin)?;
    let app = r.aggregate(&origin)?;
    let mut c = Ceilings::of(&m, p.precision, Scope::Node)?;
    match scope {
        RoofScope::Core => c = Ceilings::of(&m, p.precision, Scope::Core)?,
        RoofScope::Node => {
            // Whole-node ceilings: the per-core shares times the core count.
            let n = f64::from(m.cores());
            c.peak_gflops *= n;
            for b in &mut c.bandwidth_gbs {
                *b *= n;
            }
            for k in &mut c.compute_ceilings {
                k.gflops *= n;
            }
            c.notes.retain(|s| !s.contains("divided by the core count"));
        }
    }
    let mut a = analyze(&c, &app, &format!("profile {origin}"))?;
    let sc = match scope {
        RoofScope::Core => Scope::Core,
        RoofScope::Node => Scope::Node,
    };
    a.notes.extend(hpcscope_core::roofline::scope_note(
        r.threads.len(),
        m.cores(),
        sc,
    ));
    Ok((a, format!("{} on {}", p.application, m.name)))
}

/// Runs `roofline`.
pub fn run(a: &RooflineArgs) -> Result<ExitCode> {
    if a.scope == RoofScope::Node {
        let p = load::profile(&a.profile)?;
        let origin = a.profile.display().to_string();
        if p.region(a.region.as_deref(), &origin)?.threads.len() > 1 {
            return run_node(a, &p, &origin);
        }
    }
    let (an, title) = compute(&a.machine, &a.profile, a.region.as_deref(), a.scope)?;
    let mut t = Table::new(&[
        "level",
        "GB/s",
        "bytes",
        "OI (FLOP/B)",
        "ridge OI",
        "attainable GF/s",
        "bound",
    ]);
    for l in &an.levels {
        t.row(vec![
            l.level.clone(),
            num(l.bandwidth_gbs, 4),
            num(l.bytes, 4),
            num(l.oi, 4),
            num(l.ridge_oi, 4),
            num(l.attainable_gflops, 4),
            l.bound.to_string(),
        ]);
    }
    let mut pre = vec![
        title.clone(),
        format!(
            "peak {} GFLOP/s; FLOPs per FP instruction {} of at most {} -> weighted peak {} GFLOP/s",
            num(an.ceilings.peak_gflops, 4),
            an.flops_per_instruction
                .map(|x| num(x, 4))
                .unwrap_or_else(|| "-".into()),
            num(an.max_flops_per_instruction, 3),
            num(an.weighted_peak_gflops, 4)
        ),
    ];
    if !an.ceilings.compute_ceilings.is_empty() {
        pre.push(format!(
            "compute ceilings below the peak: {}",
            an.ceilings
                .compute_ceilings
                .iter()
                .map(|k| format!(
                    "{} {} GFLOP/s ({})",
                    k.kind.name(),
                    num(k.gflops, 4),
                    k.kernel
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if let Some(g) = an.achieved_gflops {
        pre.push(format!("achieved {} GFLOP/s", num(g, 4)));
    }
    let mut epi = vec![format!(
        "binding ceiling: {} ({}-bound) at {} GFLOP/s{}",
        an.binding_level,
        an.binding_bound,
        num(an.binding_gflops, 4),
        an.efficiency
            .map(|e| format!("; efficiency {:.1} %", e * 100.0))
            .unwrap_or_default()
    )];
    epi.extend(an.notes.iter().map(|n| format!("note: {n}")));
    let text = render(a.out.format, &an, &pre, &t, &epi)?;
    let svg = a
        .svg
        .as_ref()
        .map(|p| (p.as_path(), hpcscope_report::roofline_svg(&an, &title)));
    let files: Vec<(&std::path::Path, &str)> = svg.iter().map(|(p, s)| (*p, s.as_str())).collect();
    emit_with(&text, a.out.output.as_deref(), &files)?;
    let mut numbers = serde_json::json!({
        "achieved_gflops": an.achieved_gflops,
        "weighted_peak_gflops": an.weighted_peak_gflops,
        "binding_gflops": an.binding_gflops,
        "efficiency": an.efficiency,
    });
    for l in &an.levels {
        numbers[format!("oi_{}", l.level)] = serde_json::json!(l.oi.is_finite().then_some(l.oi));
    }
    if let Some(line) = a
        .record
        .store("roofline", &a.profile.display().to_string(), &numbers)?
    {
        eprintln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `roofline --scope node` of a profile with one entry per thread.
fn run_node(a: &RooflineArgs, p: &hpcscope_core::Profile, origin: &str) -> Result<ExitCode> {
    let m = load::machine(&a.machine)?;
    let r = p.region(a.region.as_deref(), origin)?;
    let threads = r.thread_metrics(origin)?;
    let ids: Vec<u32> = r.threads.iter().map(|t| t.thread).collect();
    let n = hpcscope_core::node::node_roofline(
        &m,
        p.precision,
        &threads,
        &ids,
        &format!("profile {origin}"),
    )?;
    let levels: Vec<String> = n.ceilings.levels.clone();
    let mut head = vec![
        "thread".to_string(),
        "FLOPs".into(),
        "bytes".into(),
        "time (s)".into(),
        "GF/s".into(),
    ];
    head.extend(levels.iter().map(|l| format!("OI {l}")));
    head.extend([
        "binding".into(),
        "attainable GF/s".into(),
        "eq. 7.2 roof GF/s".into(),
    ]);
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut t = Table::new(&head);
    for th in &n.threads {
        let mut row = vec![
            th.thread.to_string(),
            num(th.flops, 4),
            num(th.bytes, 4),
            th.time_s.map_or("-".into(), |x| num(x, 4)),
            th.achieved_gflops.map_or("-".into(), |x| num(x, 4)),
        ];
        row.extend(th.analysis.levels.iter().map(|l| num(l.oi, 4)));
        row.extend([
            format!(
                "{} ({})",
                th.analysis.binding_level, th.analysis.binding_bound
            ),
            num(th.analysis.binding_gflops, 4),
            num(th.weighted_gflops, 4),
        ]);
        t.row(row);
    }
    let c = &n.ceilings;
    let pre = vec![
        format!(
            "{} on {} ({} threads, node scope)",
            p.application,
            m.name,
            n.threads.len()
        ),
        format!(
            "per-core share of the node (eq. 7.1, {} cores): peak {} GFLOP/s; {}",
            n.cores,
            num(c.peak_gflops, 4),
            c.levels
                .iter()
                .zip(&c.bandwidth_gbs)
                .map(|(l, b)| format!("{l} {} GB/s", num(*b, 4)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ];
    let im = &n.imbalance;
    let mut epi = vec![
        format!(
            "node: attainable {} GFLOP/s (sum of the threads' binding ceilings), {} by eq. 7.2's weighted roofs{}",
            num(n.attainable_gflops, 4),
            num(n.weighted_gflops, 4),
            n.achieved_gflops
                .map(|g| format!(
                    "; achieved {} GFLOP/s{}",
                    num(g, 4),
                    n.efficiency
                        .map(|e| format!(" ({:.1} % of attainable)", e * 100.0))
                        .unwrap_or_default()
                ))
                .unwrap_or_default()
        ),
        format!(
            "load balance (mean / max over {} working threads{}): FLOPs {:.1} %, bytes {:.1} %{}; heaviest thread {}",
            im.working_threads,
            if im.idle_threads > 0 {
                format!(", {} idle", im.idle_threads)
            } else {
                String::new()
            },
            im.flops_balance * 100.0,
            im.bytes_balance * 100.0,
            im.time_balance
                .map(|b| format!(", time {:.1} %", b * 100.0))
                .unwrap_or_default(),
            im.heaviest_thread
        ),
    ];
    epi.extend(n.notes.iter().map(|x| format!("note: {x}")));
    let text = render(a.out.format, &n, &pre, &t, &epi)?;
    if a.svg.is_some() {
        eprintln!(
            "note: --svg is not drawn for a per-thread profile at node scope yet: no chart written"
        );
    }
    emit_with(&text, a.out.output.as_deref(), &[])?;
    let numbers = serde_json::json!({
        "threads": n.threads.len(),
        "achieved_gflops": n.achieved_gflops,
        "attainable_gflops": n.attainable_gflops,
        "efficiency": n.efficiency,
        "flops_balance": im.flops_balance,
        "time_balance": im.time_balance,
    });
    if let Some(line) = a
        .record
        .store("roofline", &a.profile.display().to_string(), &numbers)?
    {
        eprintln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
