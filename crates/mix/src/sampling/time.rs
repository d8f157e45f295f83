//! Time sampling (`mix --sample K --sample-method time`): the caches are simulated in
//! periodic windows and the counts extrapolated, with the extrapolation's error estimated
//! from the differences between windows (systematic sampling as in SMARTS, Wunderlich et
//! al., ISCA 2003).
//!
//! Each guest thread's access records are cut, in stream order, into periods of
//! `period x unit` records. A period starts with a measured unit (`unit` records simulated
//! and counted), then skips records (not simulated at all) and ends with `warmup` records
//! simulated without being counted, which bring the caches back to a state close to the
//! one a full simulation would have at the next measured unit. The first unit of a thread
//! starts from the same cold caches as a full run.
//!
//! Per level, the hit ratio is the ratio estimator over the measured units,
//! `sum(hits) / sum(accesses)`; its interval a Wilson score interval on the effective
//! number of accesses, the design effect from the between-unit residuals
//! `hits_i - R * accesses_i` ([`super::estimate::ratio_estimate`]), with the finite-population correction
//! `1 - n/N` (`n` units measured of `N` in the stream). The counters of each
//! thread (hits, misses, bytes served, fills, write-backs per level and memory) are the
//! measured ones times the thread's records over its measured records. Instruction and
//! FLOP counts come from the plugin's block counters and are exact whatever the sampling.

use std::collections::BTreeMap;

use hpcscope_cachesim::{HierarchyStats, NodeSim, PackedAccess, ThreadStats};

use super::estimate::ratio_estimate;
use super::{LevelEstimate, MachineSampling, SampleSpec, SamplingReport, add_stats, scale_stats};

/// One measured unit: per machine, per level then memory, (accesses, hits).
#[derive(Debug, Clone)]
struct Unit {
    levels: Vec<Vec<(u64, u64)>>,
}

#[derive(Debug, Default)]
struct ThreadWindow {
    /// Records of this thread so far.
    pos: u64,
    /// Records of this thread measured.
    measured: u64,
    /// Counters of each machine at the start of the open unit.
    open: Option<Vec<Option<HierarchyStats>>>,
    /// Records of the open unit so far.
    open_records: u64,
    /// Measured counters per machine (summed over the thread's units).
    sums: Vec<Option<HierarchyStats>>,
}

/// Decides, record by record of each thread, what to simulate and what to count.
#[derive(Debug)]
pub(crate) struct Sampler {
    spec: SampleSpec,
    threads: BTreeMap<u32, ThreadWindow>,
    units: Vec<Unit>,
    warmed: u64,
    pub(super) skipped: u64,
}

/// The thread's counters on `sim`, or None before its first access.
fn thread_counters(sim: &NodeSim, t: u32) -> Option<HierarchyStats> {
    sim.thread_stats()
        .into_iter()
        .find(|x| x.thread == t)
        .map(|x| x.stats)
}

/// `after - before`, `before` absent meaning zero.
fn delta(after: &HierarchyStats, before: &Option<HierarchyStats>) -> HierarchyStats {
    match before {
        Some(b) => after.since(b),
        None => after.clone(),
    }
}

impl Sampler {
    pub(crate) fn new(spec: SampleSpec) -> Self {
        Self {
            spec,
            threads: BTreeMap::new(),
            units: Vec::new(),
            warmed: 0,
            skipped: 0,
        }
    }

    /// Thread `t`'s next records: simulates on every node of `sims` what the windows ask.
    pub(crate) fn feed(&mut self, sims: &mut [NodeSim], t: u32, recs: &[PackedAccess]) {
        let (unit, span, warm_from) = (
            self.spec.unit,
            self.spec.span(),
            self.spec.span() - self.spec.warmup,
        );
        let mut i = 0usize;
        while i < recs.len() {
            let w = self.threads.entry(t).or_default();
            let phase = w.pos % span;
            let left = (recs.len() - i) as u64;
            let take = if phase < unit {
                // Measured.
                let n = left.min(unit - phase);
                if w.open.is_none() {
                    w.open = Some(sims.iter().map(|s| thread_counters(s, t)).collect());
                    w.open_records = 0;
                }
                for s in sims.iter_mut() {
                    s.access_batch(t, &recs[i..i + n as usize]);
                }
                w.measured += n;
                w.open_records += n;
                if phase + n == unit {
                    self.close(sims, t);
                }
                n
            } else if phase < warm_from {
                let n = left.min(warm_from - phase);
                self.skipped += n;
                n
            } else {
                let n = left.min(span - phase);
                for s in sims.iter_mut() {
                    s.access_batch(t, &recs[i..i + n as usize]);
                }
                self.warmed += n;
                n
            };
            self.threads.get_mut(&t).expect("entered above").pos += take;
            i += take as usize;
        }
    }

    /// Closes thread `t`'s open unit: its counters go into the thread's sums and a unit.
    fn close(&mut self, sims: &[NodeSim], t: u32) {
        let w = self
            .threads
            .get_mut(&t)
            .expect("a thread with an open unit");
        let Some(before) = w.open.take() else {
            return;
        };
        if w.open_records == 0 {
            return;
        }
        if w.sums.is_empty() {
            w.sums = vec![None; sims.len()];
        }
        let mut unit = Unit {
            levels: Vec::with_capacity(sims.len()),
        };
        for (k, (s, b)) in sims.iter().zip(&before).enumerate() {
            let after = thread_counters(s, t).unwrap_or_default();
            let d = delta(&after, b);
            unit.levels.push(
                d.levels
                    .iter()
                    .chain(std::iter::once(&d.memory))
                    .map(|l| (l.accesses, l.hits))
                    .collect(),
            );
            match &mut w.sums[k] {
                Some(sum) => add_stats(sum, &d),
                slot => *slot = Some(d),
            }
        }
        self.units.push(unit);
    }

    /// The stream ended: closes the open units and extrapolates. Returns, per node, the
    /// estimated counters (all threads, and per thread with its core), and the report.
    pub(crate) fn finish(
        mut self,
        sims: &[NodeSim],
        records: u64,
    ) -> (Vec<(HierarchyStats, Vec<ThreadStats>)>, SamplingReport) {
        let open: Vec<u32> = self
            .threads
            .iter()
            .filter(|(_, w)| w.open.is_some())
            .map(|(t, _)| *t)
            .collect();
        for t in open {
            self.close(sims, t);
        }
        let spec = self.spec;
        let population: u64 = self
            .threads
            .values()
            .map(|w| w.pos.div_ceil(spec.unit))
            .sum();
        let measured: u64 = self.threads.values().map(|w| w.measured).sum();
        let mut nodes = Vec::with_capacity(sims.len());
        let mut machines = Vec::with_capacity(sims.len());
        for (k, sim) in sims.iter().enumerate() {
            let cores: BTreeMap<u32, u32> = sim
                .thread_stats()
                .iter()
                .map(|x| (x.thread, x.core))
                .collect();
            let mut total = sim.stats().since(&sim.stats());
            let mut threads = Vec::new();
            for (t, w) in &self.threads {
                let Some(Some(sum)) = w.sums.get(k) else {
                    continue;
                };
                let f = w.pos as f64 / w.measured.max(1) as f64;
                let est = scale_stats(sum, f);
                add_stats(&mut total, &est);
                threads.push(ThreadStats {
                    thread: *t,
                    core: cores.get(t).copied().unwrap_or(*t),
                    stats: est,
                });
            }
            total.name = sim.config().name.clone();
            let names: Vec<String> = total
                .levels
                .iter()
                .map(|l| l.name.clone())
                .chain(std::iter::once("MM".to_string()))
                .collect();
            let levels = names
                .iter()
                .enumerate()
                .take(names.len() - 1)
                .map(|(j, name)| {
                    let per_unit: Vec<(u64, u64)> = self
                        .units
                        .iter()
                        .filter_map(|u| u.levels.get(k).and_then(|l| l.get(j)).copied())
                        .collect();
                    let (hit_ratio, ci95) = ratio_estimate(&per_unit, population);
                    LevelEstimate {
                        level: name.clone(),
                        hit_ratio,
                        ci95,
                        units: per_unit.iter().filter(|(a, _)| *a > 0).count() as u64,
                        bytes_ci95: None,
                    }
                })
                .collect();
            machines.push(MachineSampling {
                machine: sim.config().name.clone(),
                units: self.units.len() as u64,
                population,
                simulated: measured + self.warmed,
                levels,
                memory_bytes_ci95: None,
            });
            nodes.push((total, threads));
        }
        let report = SamplingReport {
            spec,
            records,
            warmed: self.warmed,
            machines,
        };
        (nodes, report)
    }
}
