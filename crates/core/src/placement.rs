//! `roofline`: the region of a profile placed on a machine's cache-aware rooflines, at core
//! or node scope (a profile with one entry per thread is placed thread by thread).

use std::path::Path;

use crate::error::Result;
use crate::node::NodeRoofline;
use crate::roofline::{Ceilings, RooflineAnalysis, Scope, analyze};
use crate::{Profile, load};

/// A region placed on the rooflines.
#[derive(Debug)]
pub enum Placed {
    /// The region as one application (core scope, or node scope of a profile summed over
    /// its threads).
    Whole {
        /// The analysis.
        analysis: RooflineAnalysis,
        /// `application on machine`, the chart's title.
        title: String,
    },
    /// Node scope of a profile with one entry per thread: each thread on the per-core
    /// shares (eq. 7.1), with the node's sum and the load imbalance.
    PerThread {
        /// The node roofline.
        node: NodeRoofline,
        /// The profile's application.
        application: String,
        /// The machine's name.
        machine: String,
    },
}

/// Places the region `region` of the profile at `profile` on the rooflines of `machine`
/// (built-in id or file), at `scope`.
pub fn place(machine: &str, profile: &Path, region: Option<&str>, scope: Scope) -> Result<Placed> {
    if scope == Scope::Node {
        let p = load::profile(profile)?;
        let origin = profile.display().to_string();
        if p.region(region, &origin)?.threads.len() > 1 {
            return place_threads(machine, &p, region, &origin);
        }
    }
    let (analysis, title) = whole(machine, profile, region, scope)?;
    Ok(Placed::Whole { analysis, title })
}

/// The region as one application, with the chart's title.
fn whole(
    machine: &str,
    profile: &Path,
    region: Option<&str>,
    scope: Scope,
) -> Result<(RooflineAnalysis, String)> {
    let m = load::machine(machine)?;
    let p = load::profile(profile)?;
    let origin = profile.display().to_string();
    let r = p.region(region, &origin)?;
    let app = r.aggregate(&origin)?;
    let mut c = Ceilings::of(&m, p.precision, Scope::Node)?;
    match scope {
        Scope::Core => c = Ceilings::of(&m, p.precision, Scope::Core)?,
        Scope::Node => {
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
    a.notes.extend(crate::roofline::scope_note(
        r.threads.len(),
        m.cores(),
        scope,
    ));
    Ok((a, format!("{} on {}", p.application, m.name)))
}

/// Node scope of a profile with one entry per thread.
fn place_threads(machine: &str, p: &Profile, region: Option<&str>, origin: &str) -> Result<Placed> {
    let m = load::machine(machine)?;
    let r = p.region(region, origin)?;
    let threads = r.thread_metrics(origin)?;
    let ids: Vec<u32> = r.threads.iter().map(|t| t.thread).collect();
    let node = crate::node::node_roofline(
        &m,
        p.precision,
        &threads,
        &ids,
        &format!("profile {origin}"),
    )?;
    Ok(Placed::PerThread {
        node,
        application: p.application.clone(),
        machine: m.name.clone(),
    })
}

impl Placed {
    /// The numbers kept in the run history.
    pub fn numbers(&self) -> serde_json::Value {
        match self {
            Placed::Whole { analysis: an, .. } => {
                let mut numbers = serde_json::json!({
                    "achieved_gflops": an.achieved_gflops,
                    "weighted_peak_gflops": an.weighted_peak_gflops,
                    "binding_gflops": an.binding_gflops,
                    "efficiency": an.efficiency,
                });
                for l in &an.levels {
                    numbers[format!("oi_{}", l.level)] =
                        serde_json::json!(l.oi.is_finite().then_some(l.oi));
                }
                numbers
            }
            Placed::PerThread { node: n, .. } => serde_json::json!({
                "threads": n.threads.len(),
                "achieved_gflops": n.achieved_gflops,
                "attainable_gflops": n.attainable_gflops,
                "efficiency": n.efficiency,
                "flops_balance": n.imbalance.flops_balance,
                "time_balance": n.imbalance.time_balance,
            }),
        }
    }
}
