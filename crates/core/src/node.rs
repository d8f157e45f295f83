//! Node scope from per-thread profiles (Gavoille 2024 thesis, chapter 7): each thread on the
//! per-core share of the loaded node's ceilings (eq. 7.1), its cumulative OIs (eq. 7.3) and
//! its hit-ratio-weighted memory roof (eq. 7.2), the node as the sum of its threads, and the
//! load imbalance between threads.
//!
//! The per-core share assumes every core of the node busy (node STREAM and HPL divided by
//! the core count): for `T` threads on a node of more cores, each thread is placed on the
//! share of a fully loaded node, and the node total is that of `T` cores.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::machine::{Machine, Precision};
use crate::profile::AppMetrics;
use crate::roofline::{
    Ceilings, RooflineAnalysis, Scope, analyze, attainable, match_levels, weighted_bandwidth,
};

/// One thread on the per-core share of the node's rooflines.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ThreadRoofline {
    /// Thread number.
    pub thread: u32,
    /// FLOPs.
    pub flops: f64,
    /// Bytes loaded and stored.
    pub bytes: f64,
    /// Time of the region in this thread, seconds, when known.
    pub time_s: Option<f64>,
    /// The thread's own rate, FLOPs over its time, when known.
    pub achieved_gflops: Option<f64>,
    /// Its rooflines on the per-core share (eq. 7.1): OIs, attainable per level, binding.
    pub analysis: RooflineAnalysis,
    /// Eq. 7.2's roof of the first level with a bandwidth: its hit-ratio-weighted bandwidth
    /// times its OI, or the weighted peak, whichever is lower (the lowest point of the
    /// thread's node projection: the FLOPs over the time to move each level's bytes at that
    /// level's per-core share).
    pub weighted_gflops: f64,
}

/// How evenly the work is spread over the threads that do some: the mean over the maximum
/// (1 = balanced; POP's load-balance efficiency), for FLOPs, bytes and time.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Imbalance {
    /// Threads that executed FP work or moved bytes.
    pub working_threads: usize,
    /// Threads that did neither in the region (e.g. a main thread that waits).
    pub idle_threads: usize,
    /// Mean / max of the FLOPs.
    pub flops_balance: f64,
    /// Mean / max of the bytes.
    pub bytes_balance: f64,
    /// Mean / max of the per-thread times, when every working thread has one.
    pub time_balance: Option<f64>,
    /// The thread with the most FLOPs (or bytes without FLOPs).
    pub heaviest_thread: u32,
}

/// A node's rooflines for a profile with one entry per thread.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NodeRoofline {
    /// The per-core share of the node's ceilings.
    pub ceilings: Ceilings,
    /// Cores of the node.
    pub cores: u32,
    /// One entry per thread.
    pub threads: Vec<ThreadRoofline>,
    /// Sum of the threads' binding ceilings, GFLOP/s: what these threads can attain.
    pub attainable_gflops: f64,
    /// Sum of the threads' eq. 7.2 roofs, GFLOP/s.
    pub weighted_gflops: f64,
    /// All FLOPs over the region's time (the slowest thread's), when known.
    pub achieved_gflops: Option<f64>,
    /// Achieved over attainable.
    pub efficiency: Option<f64>,
    /// Load imbalance.
    pub imbalance: Imbalance,
    /// Remarks.
    pub notes: Vec<String>,
}

/// Places each thread of a profile on the per-core share of `m`'s node ceilings.
/// `ids` are the threads' numbers (same order as `threads`).
pub fn node_roofline(
    m: &Machine,
    precision: Precision,
    threads: &[AppMetrics],
    ids: &[u32],
    origin: &str,
) -> Result<NodeRoofline> {
    if threads.is_empty() {
        return Err(Error::mismatch(
            format!("{origin} has no thread"),
            "give at least one thread's metrics",
        ));
    }
    let c = Ceilings::of(m, precision, Scope::Node)?;
    let mut notes = c.notes.clone();
    let cores = m.cores();
    if threads.len() as u32 > cores {
        notes.push(format!(
            "{} threads on a node of {cores} cores: the per-core shares assume one thread per core",
            threads.len()
        ));
    }
    let mut rows = Vec::new();
    for (i, t) in threads.iter().enumerate() {
        let o = format!(
            "{origin} thread {}",
            ids.get(i).copied().unwrap_or(i as u32)
        );
        let a = analyze(&c, t, &o)?;
        let idx = match_levels(&c, t, &o)?;
        // Eq. 7.2 with the thread's own fractions, as the node projection uses it: the
        // hit-ratio-weighted bandwidth of the first level with a bandwidth (levels without
        // one are left out of the weighting) times that level's cumulative OI.
        let fractions: Vec<f64> = idx.iter().map(|&k| t.bytes[k]).collect();
        let bw = weighted_bandwidth(&fractions, &c.bandwidth_gbs)[0];
        let weighted = attainable(bw, a.weighted_peak_gflops, a.levels[0].oi);
        rows.push(ThreadRoofline {
            thread: ids.get(i).copied().unwrap_or(i as u32),
            flops: t.flops,
            bytes: t.bytes_total(),
            time_s: t.time_s,
            achieved_gflops: t.gflops(),
            weighted_gflops: weighted,
            analysis: a,
        });
    }
    let working: Vec<&ThreadRoofline> = rows
        .iter()
        .filter(|r| r.flops > 0.0 || r.bytes > 0.0)
        .collect();
    let balance = |v: Vec<f64>| -> f64 {
        let max = v.iter().copied().fold(0.0, f64::max);
        if max > 0.0 {
            v.iter().sum::<f64>() / v.len() as f64 / max
        } else {
            1.0
        }
    };
    let times: Vec<f64> = working.iter().filter_map(|r| r.time_s).collect();
    let heaviest = working
        .iter()
        .max_by(|a, b| {
            a.flops
                .total_cmp(&b.flops)
                .then(a.bytes.total_cmp(&b.bytes))
        })
        .map_or(0, |r| r.thread);
    let imbalance = Imbalance {
        working_threads: working.len(),
        idle_threads: rows.len() - working.len(),
        flops_balance: balance(working.iter().map(|r| r.flops).collect()),
        bytes_balance: balance(working.iter().map(|r| r.bytes).collect()),
        time_balance: (!working.is_empty() && times.len() == working.len()).then(|| balance(times)),
        heaviest_thread: heaviest,
    };
    // Only working threads attain anything: an idle thread's ceilings are not the node's.
    let fp_working: Vec<&&ThreadRoofline> = working.iter().filter(|r| r.flops > 0.0).collect();
    let attainable: f64 = fp_working.iter().map(|r| r.analysis.binding_gflops).sum();
    let weighted: f64 = fp_working.iter().map(|r| r.weighted_gflops).sum();
    let flops: f64 = threads.iter().map(|t| t.flops).sum();
    let time = threads
        .iter()
        .filter_map(|t| t.time_s)
        .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.max(t))));
    let achieved = time.filter(|t| *t > 0.0).map(|t| flops / t / 1e9);
    Ok(NodeRoofline {
        efficiency: achieved
            .filter(|_| attainable > 0.0)
            .map(|a| a / attainable)
            .filter(|e| e.is_finite()),
        ceilings: c,
        cores,
        threads: rows,
        attainable_gflops: attainable,
        weighted_gflops: weighted,
        achieved_gflops: achieved,
        imbalance,
        notes,
    })
}

/// The machine with each core running alone standing for its node: node peaks and
/// bandwidths set to the single-core values times the cores, so that the per-core share
/// (eq. 7.1) is what one core gets alone. The source of a projection from one thread to
/// several: one thread runs with the whole machine to itself.
pub fn cores_alone(m: &Machine) -> Machine {
    let mut out = m.clone();
    let n = f64::from(m.cores());
    for p in &mut out.peaks {
        if let Some(c) = p.core_gflops {
            p.node_gflops = Some(c * n);
        }
    }
    for l in &mut out.levels {
        if let Some(c) = l.core_gbs {
            l.node_gbs = Some(c * n);
        }
    }
    out.notes.push(format!(
        "node values set to {n} x the single-core values: each core as if it ran alone"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library::builtin;

    fn thread(flops: f64, l1: f64, l2: f64, mm: f64, time: f64) -> AppMetrics {
        AppMetrics {
            flops,
            fp_instructions: flops / 2.0,
            levels: vec!["L1".into(), "L2".into(), "MM".into()],
            bytes: vec![l1, l2, mm],
            time_s: Some(time),
        }
    }

    #[test]
    fn node_rooflines_sum_the_threads_and_measure_imbalance() {
        let m = builtin("a64fx-node").unwrap();
        let c = Ceilings::of(&m, Precision::F64, Scope::Node).unwrap();
        // Two threads, the second with twice the work and the time.
        let t = [
            thread(1e9, 8e8, 1e8, 1e8, 0.5),
            thread(2e9, 1.6e9, 2e8, 2e8, 1.0),
            AppMetrics {
                flops: 0.0,
                fp_instructions: 0.0,
                levels: vec!["L1".into(), "L2".into(), "MM".into()],
                bytes: vec![0.0; 3],
                time_s: None,
            },
        ];
        let r = node_roofline(&m, Precision::F64, &t, &[0, 1, 2], "p").unwrap();
        assert_eq!(r.threads.len(), 3);
        assert_eq!(r.imbalance.working_threads, 2);
        assert_eq!(r.imbalance.idle_threads, 1);
        assert!((r.imbalance.flops_balance - 0.75).abs() < 1e-12);
        assert!((r.imbalance.time_balance.unwrap() - 0.75).abs() < 1e-12);
        assert_eq!(r.imbalance.heaviest_thread, 1);
        // Same OIs: the same binding ceiling per thread, summed over the working threads.
        let b = r.threads[0].analysis.binding_gflops;
        assert!((r.attainable_gflops - 2.0 * b).abs() < 1e-9 * b);
        // 3e9 FLOPs in 1 s (the slowest thread).
        assert!((r.achieved_gflops.unwrap() - 3.0).abs() < 1e-12);
        // Eq. 7.2: 1e9 FLOPs over the serialised transfer time at the per-core shares.
        let secs = 8e8 / c.bandwidth_gbs[0] + 1e8 / c.bandwidth_gbs[1] + 1e8 / c.bandwidth_gbs[2];
        let want = (1e9 / secs).min(r.threads[0].analysis.weighted_peak_gflops);
        assert!((r.threads[0].weighted_gflops - want).abs() < 1e-9 * want);
        // The eq. 7.2 roof is never above the L1 roofline of raw bandwidths.
        assert!(
            r.threads[0].weighted_gflops
                <= r.threads[0].analysis.levels[0].attainable_gflops * (1.0 + 1e-12)
        );
    }

    #[test]
    fn one_source_thread_projects_onto_several() {
        use crate::project::{Options, Side, project};
        // A node with single-core values too (a measured machine has both).
        let mut m = builtin("cascadelake-8260").unwrap();
        m.peaks[0].core_gflops = Some(80.0);
        for (l, c) in m.levels.iter_mut().zip([400.0, 150.0, 40.0, 15.0]) {
            l.core_gbs = Some(c);
        }
        let alone = cores_alone(&m);
        let app = thread(1e9, 8e8, 1e8, 1e8, 0.5);
        let levels = vec!["L1".into(), "L2".into(), "L3".into(), "MM".into()];
        let app = AppMetrics {
            levels,
            bytes: vec![8e8, 1e8, 0.0, 1e8],
            ..app
        };
        let one = [app.clone()];
        let two = [app.clone(), app.clone()];
        let opts = Options {
            scope: Scope::Node,
            ..Options::default()
        };
        let side = |machine, threads| Side {
            machine,
            threads,
            origin: "p",
        };
        // The same machine on both sides, each target thread as the source: twice its rate.
        let p = project(
            side(&alone, &one[..]),
            2.0,
            side(&alone, &two[..]),
            Precision::F64,
            opts,
        )
        .unwrap();
        assert_eq!(p.threads.len(), 2);
        assert!((p.interval.lo - 4.0).abs() < 1e-9 && (p.interval.hi - 4.0).abs() < 1e-9);
        // Onto the loaded node's shares: each thread scales by the ratio of its rooflines.
        let p = project(
            side(&alone, &one[..]),
            2.0,
            side(&m, &two[..]),
            Precision::F64,
            opts,
        )
        .unwrap();
        let s = project(
            side(&alone, &one[..]),
            2.0,
            side(&m, &one[..]),
            Precision::F64,
            opts,
        )
        .unwrap();
        assert!((p.interval.lo - 2.0 * s.interval.lo).abs() < 1e-9);
        assert!((p.interval.hi - 2.0 * s.interval.hi).abs() < 1e-9);
        assert!(
            p.interval.hi < 4.0,
            "the loaded node's shares are lower: {:?}",
            p.interval
        );
        // An imbalanced target (a quarter and three quarters of the work): the light thread
        // waits for the heavy one, so the node gets 4/3 of one thread's rate, not twice.
        let part = |f: f64| AppMetrics {
            flops: app.flops * f,
            fp_instructions: app.fp_instructions * f,
            bytes: app.bytes.iter().map(|b| b * f).collect(),
            ..app.clone()
        };
        let uneven = [part(0.25), part(0.75)];
        let p = project(
            side(&alone, &one[..]),
            2.0,
            side(&alone, &uneven[..]),
            Precision::F64,
            opts,
        )
        .unwrap();
        assert!(
            (p.interval.lo - 2.0 * 4.0 / 3.0).abs() < 1e-9,
            "{:?}",
            p.interval
        );
        assert!((p.threads[0].interval.lo - 2.0 / 3.0).abs() < 1e-9);
        assert!((p.threads[1].interval.lo - 2.0).abs() < 1e-9);
        // With the carried-time points (which recompute each thread's interval from its
        // points), the light thread still waits for the heavy one: the upper end stays at
        // 4/3 of one thread's rate (not twice), the carried time only lowers the lower end.
        let p = crate::project::project_with(
            side(&alone, &one[..]),
            2.0,
            side(&alone, &uneven[..]),
            Precision::F64,
            opts,
            &crate::project::Inputs {
                carried_time: true,
                drop_contradicted: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(
            (p.interval.hi - 2.0 * 4.0 / 3.0).abs() < 1e-9 && p.interval.lo <= p.interval.hi,
            "{:?}",
            p.interval
        );
        assert!((p.threads[0].interval.hi - 2.0 / 3.0).abs() < 1e-9);
        assert!((p.threads[1].interval.hi - 2.0).abs() < 1e-9);
        // Two source threads onto three target threads: refused.
        let three = [app.clone(), app.clone(), app];
        assert!(
            project(
                side(&m, &two[..]),
                2.0,
                side(&m, &three[..]),
                Precision::F64,
                opts
            )
            .is_err()
        );
    }

    #[test]
    fn a_machine_and_its_cores_alone_are_one_machine() {
        use crate::point::ChangeKind;
        use crate::project::machine_change;
        let m = builtin("cascadelake-8260").unwrap();
        let a = cores_alone(&m);
        assert_ne!(a, m);
        assert_eq!(machine_change(&a, &m), ChangeKind::Builds);
        assert_eq!(machine_change(&m, &a), ChangeKind::Builds);
        // Another clock is another machine, alone or not.
        let mut faster = m.clone();
        faster.frequency_ghz = Some(faster.frequency_ghz.unwrap_or(2.0) * 2.0);
        assert_eq!(machine_change(&a, &faster), ChangeKind::SameIsaMachine);
        assert_eq!(
            machine_change(&a, &builtin("graviton2").unwrap()),
            ChangeKind::CrossIsaMachine
        );
    }

    #[test]
    fn cores_alone_share_is_the_single_core_value() {
        let mut m = builtin("cascadelake-8260").unwrap();
        m.peaks[0].core_gflops = Some(80.0);
        m.levels[3].core_gbs = Some(15.0);
        let a = cores_alone(&m);
        let c1 = Ceilings::of(&m, Precision::F64, Scope::Core).unwrap();
        let cn = Ceilings::of(&a, Precision::F64, Scope::Node).unwrap();
        assert!((c1.peak_gflops - cn.peak_gflops).abs() < 1e-9);
        for (x, y) in c1.bandwidth_gbs.iter().zip(&cn.bandwidth_gbs) {
            assert!((x - y).abs() < 1e-9 * x);
        }
    }
}
