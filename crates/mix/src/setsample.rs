//! Set sampling (`mix --sample K`, the default method): only the accesses to one cache set
//! in `K` of every level are simulated, every one of them, and the counters extrapolated
//! (Kessler, Hill and Wood, "A comparison of trace-sampling techniques for multi-megabyte
//! caches", IEEE Trans. Computers 43(6), 1994: set sampling, unlike time sampling, needs no
//! warm-up and stays accurate on large caches).
//!
//! With one line size in a hierarchy, line `x` sits in set `x mod S_j` of level `j`. Let
//! `g` be the greatest common divisor of the levels' set counts: the class `x mod g` of a
//! line fixes `set mod g` at every level, so the lines of one class meet, at every level,
//! only the lines of their own class, in `S_j / g` sets of their own. The sets a class
//! uses evolve exactly as in the full simulation (write-backs and fills stay in the
//! class), so a class is simulated apart, in a copy of the hierarchy with `S_j / g` sets
//! per level fed line `x div g`: `1/g` of the memory, which the host's caches hold. Of the
//! `g` classes, `g / K` (at least two) are chosen by a fixed pseudo-random order and
//! simulated; the accesses to other classes are dropped after one test.
//!
//! Per level, the hit ratio is the ratio estimator over the chosen classes (cluster
//! sampling: the class is the unit), its interval from the between-class residuals with
//! Student's t and the finite-population correction `1 - n/g`. Counters are extrapolated
//! per thread by the bytes of all its accesses over the bytes of the simulated ones. An
//! access that straddles two lines is simulated as its pieces (each in its line's class),
//! so the estimated `split_accesses` is 0 and pieces count as accesses.

use std::collections::BTreeMap;

use hpcscope_cachesim::{
    Access, CacheConfig, HierarchyStats, IntoAccess, NodeConfig, NodeLevel, NodeSim, PackedAccess,
    Placement, ThreadStats,
};

use crate::error::MixError;
use crate::sampling::{LevelEstimate, MachineSampling, SampleSpec, SamplingReport, ratio_estimate};

/// Greatest common divisor.
fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// One machine's sampled classes.
struct Classes {
    name: String,
    line_shift: u32,
    /// Classes in all (`g`).
    g: u64,
    /// Per class, the index of its simulator in `sims`, or `u32::MAX` when not chosen.
    slot: Vec<u32>,
    sims: Vec<NodeSim>,
    /// Per chosen class, the accesses of the current batch.
    bufs: Vec<Vec<Access>>,
    simulated: u64,
}

/// Per thread: bytes of all its accesses and of those simulated on each machine.
#[derive(Default, Clone)]
struct Bytes {
    all: u64,
    kept: Vec<u64>,
}

/// Simulates the chosen classes of sets of every machine.
pub(crate) struct SetSampler {
    spec: SampleSpec,
    machines: Vec<Classes>,
    threads: BTreeMap<u32, Bytes>,
}

impl SetSampler {
    /// Builds, for every node, the simulators of its chosen classes.
    pub(crate) fn new(
        spec: SampleSpec,
        nodes: &[NodeConfig],
        placement: &Placement,
    ) -> Result<Self, MixError> {
        let mut machines = Vec::new();
        for n in nodes {
            let sets: Vec<u64> = n.levels.iter().map(|l| l.cache.sets().max(1)).collect();
            let g = sets.iter().copied().fold(0, gcd).max(1);
            let chosen = g / spec.period;
            if chosen < 2 {
                return Err(MixError::Usage {
                    message: format!(
                        "--sample {}: machine '{}' has {g} classes of cache sets (the greatest common divisor of its levels' set counts), fewer than 2 x {}",
                        spec.period, n.name, spec.period
                    ),
                    fix: format!(
                        "give --sample {} or less, or --sample-method time",
                        (g / 2).max(1)
                    ),
                });
            }
            // A fixed pseudo-random order of the classes (Fibonacci hashing of the class
            // number), the first `chosen` taken: strided access patterns, which favour
            // classes a power of two apart, do not line up with the choice.
            let mut order: Vec<u64> = (0..g).collect();
            order.sort_by_key(|&c| (c.wrapping_mul(0x9e37_79b9_7f4a_7c15), c));
            let mut slot = vec![u32::MAX; g as usize];
            for (k, &c) in order.iter().take(chosen as usize).enumerate() {
                slot[c as usize] = k as u32;
            }
            let small = NodeConfig {
                name: n.name.clone(),
                levels: n
                    .levels
                    .iter()
                    .map(|l| NodeLevel {
                        cache: CacheConfig {
                            size_bytes: l.cache.size_bytes / g,
                            ..l.cache.clone()
                        },
                        shared_by_cores: l.shared_by_cores,
                    })
                    .collect(),
                cores: n.cores,
                inclusion: n.inclusion,
            };
            let sims = (0..chosen)
                .map(|_| NodeSim::new(small.clone(), placement.clone()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| MixError::Run(e.to_string()))?;
            let line = n.levels.first().map_or(64, |l| l.cache.line_bytes);
            machines.push(Classes {
                name: n.name.clone(),
                line_shift: line.trailing_zeros(),
                g,
                slot,
                bufs: vec![Vec::new(); chosen as usize],
                sims,
                simulated: 0,
            });
        }
        Ok(Self {
            spec,
            machines,
            threads: BTreeMap::new(),
        })
    }

    /// Thread `t`'s next records.
    pub(crate) fn feed(&mut self, t: u32, recs: &[PackedAccess]) {
        let n_machines = self.machines.len();
        let th = self.threads.entry(t).or_insert_with(|| Bytes {
            all: 0,
            kept: vec![0; n_machines],
        });
        th.all += recs.iter().map(|r| r.bytes()).sum::<u64>();
        for (k, m) in self.machines.iter_mut().enumerate() {
            let shift = m.line_shift;
            let mask = (1u64 << shift) - 1;
            let pow2 = m.g.is_power_of_two();
            let mut kept_bytes = 0u64;
            let mut kept = 0u64;
            for &r in recs {
                let a = r.into_access();
                let line = a.addr >> shift;
                let off = a.addr & mask;
                if off + u64::from(a.size) <= mask + 1 {
                    let class = if pow2 { line & (m.g - 1) } else { line % m.g };
                    let s = m.slot[class as usize];
                    if s == u32::MAX {
                        continue;
                    }
                    let small = Access {
                        addr: (line / m.g) << shift | off,
                        ..a
                    };
                    let b = &mut m.bufs[s as usize];
                    for _ in 0..r.count() {
                        b.push(small);
                    }
                    kept_bytes += r.bytes();
                    kept += 1;
                } else {
                    // Pieces, each in its line's class (a producer coalesces no split access).
                    let last = a.addr.saturating_add(u64::from(a.size.max(1)) - 1);
                    for l in line..=last >> shift {
                        let class = if pow2 { l & (m.g - 1) } else { l % m.g };
                        let s = m.slot[class as usize];
                        if s == u32::MAX {
                            continue;
                        }
                        let lo = (l << shift).max(a.addr);
                        let hi = ((l << shift) | mask).min(last);
                        m.bufs[s as usize].push(Access {
                            addr: (l / m.g) << shift | (lo & mask),
                            size: (hi - lo + 1) as u32,
                            is_write: a.is_write,
                        });
                        kept_bytes += hi - lo + 1;
                        kept += 1;
                    }
                }
            }
            m.simulated += kept;
            th.kept[k] += kept_bytes;
            for (sim, b) in m.sims.iter_mut().zip(m.bufs.iter_mut()) {
                if !b.is_empty() {
                    sim.access_batch(t, b);
                    b.clear();
                }
            }
        }
    }

    /// The estimated counters of every node (all threads; per thread) and the report.
    pub(crate) fn finish(
        self,
        records: u64,
    ) -> (Vec<(HierarchyStats, Vec<ThreadStats>)>, SamplingReport) {
        let mut nodes = Vec::new();
        let mut machines = Vec::new();
        for (k, m) in self.machines.iter().enumerate() {
            // Per thread, the sum over the classes; per class, the all-thread counters.
            let mut per_thread: BTreeMap<u32, ThreadStats> = BTreeMap::new();
            let mut per_class = Vec::new();
            for sim in &m.sims {
                for ts in sim.thread_stats() {
                    match per_thread.get_mut(&ts.thread) {
                        Some(x) => crate::sampling::add_stats(&mut x.stats, &ts.stats),
                        None => {
                            per_thread.insert(ts.thread, ts);
                        }
                    }
                }
                per_class.push(sim.stats());
            }
            let mut total = m
                .sims
                .first()
                .map(|s| s.stats().since(&s.stats()))
                .unwrap_or_default();
            let mut threads = Vec::new();
            for (t, mut ts) in per_thread {
                let b = &self.threads[&t];
                let f = if b.kept[k] > 0 {
                    b.all as f64 / b.kept[k] as f64
                } else {
                    0.0
                };
                ts.stats = crate::sampling::scale_stats(&ts.stats, f);
                ts.stats.name.clone_from(&m.name);
                crate::sampling::add_stats(&mut total, &ts.stats);
                threads.push(ts);
            }
            total.name.clone_from(&m.name);
            let n_levels = total.levels.len();
            let levels = (0..n_levels)
                .map(|j| {
                    let units: Vec<(u64, u64)> = per_class
                        .iter()
                        .map(|c| c.levels.get(j).map_or((0, 0), |l| (l.accesses, l.hits)))
                        .collect();
                    let (hit_ratio, ci95) = ratio_estimate(&units, m.g);
                    LevelEstimate {
                        level: total.levels[j].name.clone(),
                        hit_ratio,
                        ci95,
                        units: units.iter().filter(|(a, _)| *a > 0).count() as u64,
                    }
                })
                .collect();
            machines.push(MachineSampling {
                machine: m.name.clone(),
                units: m.sims.len() as u64,
                population: m.g,
                simulated: m.simulated,
                levels,
            });
            nodes.push((total, threads));
        }
        (
            nodes,
            SamplingReport {
                spec: self.spec,
                records,
                warmed: 0,
                machines,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_cachesim::CacheConfig;

    fn node() -> NodeConfig {
        let lvl = |name: &str, size: u64, ways: u32| NodeLevel {
            cache: CacheConfig::new(name, size, 64, ways),
            shared_by_cores: 1,
        };
        NodeConfig {
            name: "toy".into(),
            // 64, 512 and 3 x 1024 sets (a non-power-of-two last level): 64 classes.
            levels: vec![
                lvl("L1", 16 << 10, 4),
                lvl("L2", 256 << 10, 8),
                lvl("L3", 3 << 20, 16),
            ],
            cores: 1,
            inclusion: Default::default(),
        }
    }

    #[test]
    fn one_class_in_one_gives_the_full_simulation_exactly() {
        // --sample 1 is refused by the options, but a sampler with every class chosen is
        // the full simulation cut into classes: its counters must add up to it exactly.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let recs: Vec<PackedAccess> = (0..200_000u64)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let addr = match x % 4 {
                    0 => 0x100_0000 + (x >> 8) % (8 << 20),
                    _ => 0x10_0000 + (i * 24) % (1 << 20),
                };
                let size = if x.is_multiple_of(5) { 16 } else { 8 };
                PackedAccess::new(addr & !3, size, i % 3 == 0).expect("small")
            })
            .collect();
        let mut full = NodeSim::new(node(), Placement::Compact).expect("valid");
        full.access_batch(0, &recs);
        let full = full.stats();
        let spec = SampleSpec {
            period: 1,
            ..SampleSpec::sets(2).expect("valid")
        };
        let mut s = SetSampler::new(spec, &[node()], &Placement::Compact).expect("valid");
        for piece in recs.chunks(10_000) {
            s.feed(0, piece);
        }
        let (est, rep) = s.finish(recs.len() as u64);
        assert_eq!(rep.machines[0].units, 64);
        let got = &est[0].0;
        for (a, b) in got.levels.iter().zip(&full.levels) {
            assert_eq!(
                (a.hits, a.misses, a.bytes_served),
                (b.hits, b.misses, b.bytes_served),
                "{}",
                a.name
            );
            assert_eq!(a.writebacks, b.writebacks, "{}", a.name);
        }
        assert_eq!(got.memory.bytes_served, full.memory.bytes_served);
        for l in &rep.machines[0].levels {
            assert_eq!(l.ci95, Some(0.0), "every class measured: no sampling error");
        }
    }

    #[test]
    fn too_few_classes_is_an_error_that_says_what_to_give() {
        let e = SetSampler::new(
            SampleSpec::sets(64).expect("valid"),
            &[node()],
            &Placement::Compact,
        )
        .err()
        .expect("64 classes, 1 chosen")
        .to_string();
        assert!(e.contains("--sample 32 or less"), "{e}");
    }
}
