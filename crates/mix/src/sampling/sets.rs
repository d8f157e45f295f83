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
//! The plugin drops them first: [`plugin_gate`] gives it the union of every machine's
//! chosen classes (from [`chosen_classes`], the order the sampler uses), and it streams only
//! the accesses to those, with per-thread counts of the accesses and bytes it left out
//! ([`SetSampler::skipped`]). The reader's own test stays: with two machines it keeps, for
//! each, only its classes, and a stream that was not gated gives the same result.
//!
//! Per level, the hit ratio is the ratio estimator over the chosen classes (cluster
//! sampling: the class is the unit), its interval a Wilson score interval on the effective
//! number of accesses (design effect from the between-class residuals, Student's t for the
//! few classes, the finite-population correction `1 - n/g`; see
//! [`super::estimate::ratio_estimate`]). L1, whose accesses are all the program's and are
//! counted (the plugin counts those it leaves out), has its misses expanded from the
//! measured classes over those known accesses instead
//! ([`super::estimate::miss_expansion_estimate`]): a level whose hits sit in a few hot
//! classes while its misses are spread no longer swings with whether the hot classes were
//! drawn. Counters are extrapolated per thread by the bytes of all its accesses over the
//! bytes of the simulated ones, then L1's to its estimate and everything its misses drive
//! by the same factor (`L1Factors`), so that the counters and the reported hit ratios
//! agree. An access that straddles two lines is simulated as its pieces (each in its
//! line's class), so the estimated `split_accesses` is 0 and pieces count as accesses;
//! the pieces after the first are counted per class, to expand them too.

use std::collections::BTreeMap;

use hpcscope_cachesim::{
    Access, CacheConfig, HierarchyStats, IntoAccess, NodeConfig, NodeLevel, NodeSim, PackedAccess,
    Placement, ThreadStats,
};
use hpcscope_plugin_format::{Demux, Event, ReadError};

use super::estimate::{ExpansionFit, bytes_half_width, ratio_estimate};
use super::{LevelEstimate, MachineSampling, SampleSpec, SamplingReport, scale_level};
use crate::error::MixError;

/// Greatest common divisor.
fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The classes of sets simulated when one in `period` of `g` is: the first `g / period` of a
/// fixed pseudo-random order (Fibonacci hashing of the class number), so that strided access
/// patterns, which favour classes a power of two apart, do not line up with the choice. The
/// plugin's gate ([`plugin_gate`]) and the sampler both take their classes from here.
pub fn chosen_classes(g: u64, period: u64) -> Vec<u64> {
    let mut order: Vec<u64> = (0..g).collect();
    order.sort_by_key(|&c| (c.wrapping_mul(0x9e37_79b9_7f4a_7c15), c));
    order.truncate((g / period.max(1)) as usize);
    order
}

/// Set counts, line size: a node's classes (`g`, the greatest common divisor of its levels'
/// set counts) and log2 of its line size (its first level's: callers that need one line
/// size at every level check [`one_line_size`]).
pub(crate) fn classes_of(n: &NodeConfig) -> (u64, u32) {
    let g = n
        .levels
        .iter()
        .map(|l| l.cache.sets().max(1))
        .fold(0, gcd)
        .max(1);
    let line = n.levels.first().map_or(64, |l| l.cache.line_bytes);
    (g, line.trailing_zeros())
}

/// Whether every level of `n` has the same line size (what the class decomposition needs:
/// with one line size, line `x` sits in set `x mod S_j` of every level `j`).
pub(crate) fn one_line_size(n: &NodeConfig) -> bool {
    n.levels
        .windows(2)
        .all(|w| w[0].cache.line_bytes == w[1].cache.line_bytes)
}

/// The copy of `n` that simulates one residue class of lines mod `parts` (`parts` divides
/// every level's set count): `S_j / parts` sets per level, same ways, line size and
/// sharing; it is fed line `x div parts` for line `x`.
pub(crate) fn class_config(n: &NodeConfig, parts: u64) -> NodeConfig {
    NodeConfig {
        name: n.name.clone(),
        levels: n
            .levels
            .iter()
            .map(|l| NodeLevel {
                cache: CacheConfig {
                    size_bytes: l.cache.size_bytes / parts,
                    ..l.cache.clone()
                },
                shared_by_cores: l.shared_by_cores,
            })
            .collect(),
        cores: n.cores,
        inclusion: n.inclusion,
    }
}

/// The plugin's `sample=LINE:MOD:HEX` argument for sampling one class in `spec.period` of
/// every node of `nodes`: lines of the smallest line size, and the classes `line mod MOD`
/// any node simulates. `None` when the classes cannot be given that way (a node whose
/// class count is not a power of two, or more than 2^16 classes): the plugin then streams
/// every access and the reader drops the unsampled ones.
pub fn plugin_gate(spec: &SampleSpec, nodes: &[NodeConfig]) -> Option<String> {
    let shapes: Vec<(u64, u32)> = nodes.iter().map(classes_of).collect();
    let s0 = shapes.iter().map(|&(_, s)| s).min()?;
    if shapes.iter().any(|&(g, _)| !g.is_power_of_two()) {
        return None;
    }
    // With lines of 2^s0 bytes, a node's class is (line >> d) mod g, d its shift minus s0:
    // fixed by line mod (g << d). The largest of these powers of two is a multiple of all.
    let modulus = shapes
        .iter()
        .map(|&(g, s)| g.checked_shl(s - s0).unwrap_or(u64::MAX))
        .max()?;
    if modulus > 1 << 16 {
        return None;
    }
    let mut bits = vec![false; modulus as usize];
    for &(g, s) in &shapes {
        let mut chosen = vec![false; g as usize];
        for c in chosen_classes(g, spec.period) {
            chosen[c as usize] = true;
        }
        for (c, b) in bits.iter_mut().enumerate() {
            *b |= chosen[((c as u64 >> (s - s0)) & (g - 1)) as usize];
        }
    }
    let hex: String = bits
        .chunks(4)
        .map(|d| {
            let v = d
                .iter()
                .enumerate()
                .fold(0u32, |v, (j, &b)| v | u32::from(b) << j);
            char::from_digit(v, 16).expect("a hex digit")
        })
        .collect();
    Some(format!("{}:{modulus}:{hex}", 1u64 << s0))
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
    /// Accesses simulated (a coalesced record counts its repeats; a line-crossing access
    /// one per piece).
    simulated: u64,
    /// Per chosen class, the pieces of line-crossing accesses in it that are not their
    /// access's first.
    extra: Vec<u64>,
}

/// Per thread: bytes of all its accesses and of those simulated on each machine.
#[derive(Default, Clone)]
struct Bytes {
    all: u64,
    kept: Vec<u64>,
}

impl Bytes {
    fn new(machines: usize) -> Self {
        Self {
            all: 0,
            kept: vec![0; machines],
        }
    }
}

/// Simulates the chosen classes of sets of every machine.
pub(crate) struct SetSampler {
    spec: SampleSpec,
    machines: Vec<Classes>,
    threads: BTreeMap<u32, Bytes>,
    /// Accesses in the stream and left out of it by the plugin, all threads.
    accesses: u64,
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
            let (g, line_shift) = classes_of(n);
            let chosen = g / spec.period;
            if chosen < 2 {
                return Err(MixError::SetClasses {
                    period: spec.period,
                    machine: n.name.clone(),
                    classes: g,
                    most: (g / 2).max(1),
                });
            }
            let mut slot = vec![u32::MAX; g as usize];
            for (k, c) in chosen_classes(g, spec.period).into_iter().enumerate() {
                slot[c as usize] = k as u32;
            }
            let small = class_config(n, g);
            let sims = (0..chosen)
                .map(|_| NodeSim::new(small.clone(), placement.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            machines.push(Classes {
                name: n.name.clone(),
                line_shift,
                g,
                slot,
                bufs: vec![Vec::new(); chosen as usize],
                sims,
                simulated: 0,
                extra: vec![0; chosen as usize],
            });
        }
        Ok(Self {
            spec,
            machines,
            threads: BTreeMap::new(),
            accesses: 0,
        })
    }

    /// The plugin left out `accesses` accesses of thread `t`, of `bytes` bytes in all
    /// (none of them in a simulated class).
    pub(crate) fn skipped(&mut self, t: u32, accesses: u64, bytes: u64) {
        let n_machines = self.machines.len();
        let th = self
            .threads
            .entry(t)
            .or_insert_with(|| Bytes::new(n_machines));
        // Counts from the stream: a damaged one must not overflow them.
        th.all = th.all.saturating_add(bytes);
        self.accesses = self.accesses.saturating_add(accesses);
    }

    /// Thread `t`'s next records.
    pub(crate) fn feed(&mut self, t: u32, recs: &[PackedAccess]) {
        let n_machines = self.machines.len();
        let th = self
            .threads
            .entry(t)
            .or_insert_with(|| Bytes::new(n_machines));
        th.all += recs.iter().map(|r| r.bytes()).sum::<u64>();
        self.accesses += recs.iter().map(|r| r.count()).sum::<u64>();
        for (k, m) in self.machines.iter_mut().enumerate() {
            let shift = m.line_shift;
            let mask = (1u64 << shift) - 1;
            let g = m.g;
            // A line's class and its line in the class's simulator: a power of two of
            // classes (the usual case) by a mask and a shift, not a division.
            let pow2 = g.is_power_of_two();
            let (g_mask, g_shift) = (g - 1, g.trailing_zeros());
            let split = |line: u64| -> (u64, u64) {
                if pow2 {
                    (line & g_mask, line >> g_shift)
                } else {
                    (line % g, line / g)
                }
            };
            let mut kept_bytes = 0u64;
            let mut kept = 0u64;
            for &r in recs {
                let a = r.into_access();
                let line = a.addr >> shift;
                let off = a.addr & mask;
                if off + u64::from(a.size) <= mask + 1 {
                    let (class, small_line) = split(line);
                    let s = m.slot[class as usize];
                    if s == u32::MAX {
                        continue;
                    }
                    let small = Access {
                        addr: small_line << shift | off,
                        ..a
                    };
                    let b = &mut m.bufs[s as usize];
                    let n = r.count();
                    if n == 1 {
                        b.push(small);
                    } else {
                        b.extend(std::iter::repeat_n(small, n as usize));
                    }
                    kept_bytes += r.bytes();
                    kept += n;
                } else {
                    // Pieces, each in its line's class (a producer coalesces no split access).
                    let last = a.addr.saturating_add(u64::from(a.size.max(1)) - 1);
                    for l in line..=last >> shift {
                        let (class, small_line) = split(l);
                        let s = m.slot[class as usize];
                        if s == u32::MAX {
                            continue;
                        }
                        let lo = (l << shift).max(a.addr);
                        let hi = ((l << shift) | mask).min(last);
                        m.bufs[s as usize].push(Access {
                            addr: small_line << shift | (lo & mask),
                            size: (hi - lo + 1) as u32,
                            is_write: a.is_write,
                        });
                        if l != line {
                            m.extra[s as usize] += 1;
                        }
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

    /// The estimated counters of every node (all threads; per thread) and the report (its
    /// `records` are the accesses, the plugin's left-out ones included).
    pub(crate) fn finish(self) -> (Vec<(HierarchyStats, Vec<ThreadStats>)>, SamplingReport) {
        let records = self.accesses;
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
            // L1: its misses expanded over its accesses, which are known (every access is
            // counted, sampled or not).
            let l1_units: Vec<(u64, u64, u64)> = per_class
                .iter()
                .zip(&m.extra)
                .map(|(c, &x)| {
                    c.levels
                        .first()
                        .map_or((0, 0, x), |l| (l.accesses, l.hits, x))
                })
                .collect();
            let l1_fit = ExpansionFit::new(&l1_units, m.g, records);
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
                threads.push(ts);
            }
            if let Some(fit) = l1_fit {
                let mut scaled = total.clone();
                for ts in &threads {
                    crate::sampling::add_stats(&mut scaled, &ts.stats);
                }
                let k = L1Factors::new(&fit, &scaled);
                for ts in &mut threads {
                    k.apply(&mut ts.stats);
                }
            }
            for ts in &threads {
                crate::sampling::add_stats(&mut total, &ts.stats);
            }
            total.name.clone_from(&m.name);
            let n_levels = total.levels.len();
            let levels = (0..n_levels)
                .map(|j| {
                    let units: Vec<(u64, u64)> = per_class
                        .iter()
                        .map(|c| c.levels.get(j).map_or((0, 0), |l| (l.accesses, l.hits)))
                        .collect();
                    let (hit_ratio, ci95) = match l1_fit {
                        Some(fit) if j == 0 => (Some(fit.ratio), Some(fit.half)),
                        _ => ratio_estimate(&units, m.g),
                    };
                    let served: Vec<(u64, u64)> = per_class
                        .iter()
                        .map(|c| (c.bytes, c.levels.get(j).map_or(0, |l| l.bytes_served)))
                        .collect();
                    LevelEstimate {
                        level: total.levels[j].name.clone(),
                        hit_ratio,
                        ci95,
                        units: units.iter().filter(|(a, _)| *a > 0).count() as u64,
                        bytes_ci95: bytes_half_width(&served, m.g),
                    }
                })
                .collect();
            let memory: Vec<(u64, u64)> = per_class
                .iter()
                .map(|c| (c.bytes, c.memory.bytes_served))
                .collect();
            machines.push(MachineSampling {
                machine: m.name.clone(),
                units: m.sims.len() as u64,
                population: m.g,
                simulated: m.simulated,
                levels,
                memory_bytes_ci95: bytes_half_width(&memory, m.g),
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

/// The factors that take the counters extrapolated by bytes to L1's estimate:
/// L1's accesses and hits to the fitted totals, and what L1's misses drive (its fills,
/// write-backs and evictions, and every counter of the levels below and of memory) by the
/// fitted misses over the extrapolated ones, so that L2's accesses stay L1's misses and
/// the lower levels' hit ratios stay their ratio estimates. L1's served bytes are what the
/// levels below do not serve of all the bytes.
struct L1Factors {
    accesses: f64,
    hits: f64,
    misses: f64,
}

impl L1Factors {
    fn new(fit: &ExpansionFit, scaled: &HierarchyStats) -> Self {
        let ratio = |want: f64, got: u64| if got > 0 { want / got as f64 } else { 1.0 };
        let l1 = scaled.levels.first().cloned().unwrap_or_default();
        Self {
            accesses: ratio(fit.accesses, l1.accesses),
            hits: ratio(fit.hits, l1.hits),
            misses: ratio(fit.accesses - fit.hits, l1.misses),
        }
    }

    fn apply(&self, s: &mut HierarchyStats) {
        let Some((l1, below)) = s.levels.split_first_mut() else {
            return;
        };
        let scale = |x: u64, f: f64| (x as f64 * f).round() as u64;
        l1.accesses = scale(l1.accesses, self.accesses);
        l1.hits = scale(l1.hits, self.hits).min(l1.accesses);
        l1.misses = l1.accesses - l1.hits;
        l1.fills = scale(l1.fills, self.misses);
        l1.writebacks = scale(l1.writebacks, self.misses);
        l1.evictions = scale(l1.evictions, self.misses);
        for l in below.iter_mut() {
            *l = scale_level(l, self.misses);
        }
        s.memory = scale_level(&s.memory, self.misses);
        let lower: u64 = below.iter().map(|l| l.bytes_served).sum::<u64>() + s.memory.bytes_served;
        l1.bytes_served = s.bytes.saturating_sub(lower);
    }
}

/// One node's counters per class.
#[derive(Debug, Clone, Default)]
pub struct ClassUnits {
    /// Per class, the bytes of its accesses (of their pieces in the class).
    pub bytes: Vec<u64>,
    /// Per class, the pieces of line-crossing accesses in it that are not their first.
    pub extra: Vec<u64>,
    /// The stream's accesses, each counted whole.
    pub records: u64,
    /// Per level, per class: `(accesses, hits)`.
    pub levels: Vec<Vec<(u64, u64)>>,
}

/// Every class's counters, for studies of the interval's coverage (`bench/mix/coverage.sh`):
/// simulates every class of sets of every node apart on a recorded stream that set sampling
/// did not thin (the plugin's `memout=` without `sample=`), and returns, per node, per class
/// (class `c` at index `c`), its bytes and, per level, `(accesses, hits)`. A draw of `g / K` of these classes is what `--sample K`
/// measures when it chooses them; the sum over all classes is the full simulation's count.
/// Records are simulated in stream order, each thread's on its core (exact for a program
/// of one thread; with more, the interleaving is the stream's, not a live run's).
pub fn class_units(
    mut stream: impl std::io::Read,
    nodes: &[NodeConfig],
    placement: &Placement,
) -> Result<Vec<ClassUnits>, MixError> {
    let mut bytes = Vec::new();
    stream
        .read_to_end(&mut bytes)
        .map_err(|e| MixError::Run(format!("reading the memory stream: {e}")))?;
    let recs = hpcscope_plugin_format::read::records(&bytes).map_err(|e| match e {
        ReadError::Header => MixError::Run(
            "not a memory stream of the plugin (no HPCSMT03 header): record one with mem=on,memout=FILE".into(),
        ),
        e => MixError::Run(e.to_string()),
    })?;
    drop(bytes);
    let all = SampleSpec {
        method: crate::sampling::SampleMethod::Sets,
        period: 1,
        unit: 0,
        warmup: 0,
    };
    let mut s = SetSampler::new(all, nodes, placement)?;
    let mut demux = Demux::default();
    let mut events = Vec::new();
    for chunk in recs.chunks(1 << 17) {
        demux.split(chunk, &mut events);
        for e in &events {
            if let Event::Run(t, a, b) = *e {
                s.feed(t, &chunk[a..b]);
            }
        }
    }
    if demux.skips > 0 {
        return Err(MixError::Run(
            "the memory stream was thinned by set sampling (sample=): record it without".into(),
        ));
    }
    Ok(s.machines
        .iter()
        .map(|m| {
            // In class order (the simulators are in the order of `chosen_classes`).
            let stats: Vec<HierarchyStats> =
                m.slot.iter().map(|&k| m.sims[k as usize].stats()).collect();
            let levels = stats.first().map_or(0, |x| x.levels.len());
            ClassUnits {
                bytes: stats.iter().map(|c| c.bytes).collect(),
                extra: m.slot.iter().map(|&k| m.extra[k as usize]).collect(),
                records: s.accesses,
                levels: (0..levels)
                    .map(|j| {
                        stats
                            .iter()
                            .map(|c| (c.levels[j].accesses, c.levels[j].hits))
                            .collect()
                    })
                    .collect(),
            }
        })
        .collect())
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
        let (est, rep) = s.finish();
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
    fn l1_counters_follow_the_estimate_and_stay_consistent() {
        // Nine accesses in ten go to 12 hot lines (a few classes of the 64), the others
        // spread over 8 MiB: L1's hits sit in a few classes, its misses everywhere.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let recs: Vec<PackedAccess> = (0..400_000u64)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let addr = if x.is_multiple_of(10) {
                    0x100_0000 + (x >> 8) % (8 << 20)
                } else {
                    0x4_0000 + 64 * 37 * ((x >> 8) % 12) + 8 * ((x >> 20) % 8)
                };
                PackedAccess::new(addr & !7, 8, i % 4 == 0).expect("small")
            })
            .collect();
        let mut full = NodeSim::new(node(), Placement::Compact).expect("valid");
        full.access_batch(0, &recs);
        let full = full.stats();
        let mut s = SetSampler::new(
            SampleSpec::sets(8).expect("valid"),
            &[node()],
            &Placement::Compact,
        )
        .expect("valid");
        for piece in recs.chunks(10_000) {
            s.feed(0, piece);
        }
        let (est, rep) = s.finish();
        let got = &est[0].0;
        let l1 = &got.levels[0];
        let reported = rep.machines[0].levels[0].hit_ratio.expect("L1 accesses");
        let truth = full.levels[0].hits as f64 / full.levels[0].accesses as f64;
        println!(
            "L1 full {truth}, reported {reported} ± {:?}, counters {}",
            rep.machines[0].levels[0].ci95,
            l1.hits as f64 / l1.accesses as f64
        );
        // The counters say what the report says, L2 is reached by L1's misses, and the
        // bytes add up to the program's.
        assert!((l1.hits as f64 / l1.accesses as f64 - reported).abs() < 1e-5);
        assert_eq!(l1.misses, l1.accesses - l1.hits);
        assert!(
            l1.misses.abs_diff(got.levels[1].accesses) <= 2,
            "{} {}",
            l1.misses,
            got.levels[1].accesses
        );
        let served: u64 =
            got.levels.iter().map(|l| l.bytes_served).sum::<u64>() + got.memory.bytes_served;
        assert_eq!(served, got.bytes);
        assert_eq!(got.bytes, 8 * recs.len() as u64);
        // And L1's estimate holds the full run's ratio within a tenth of a point.
        assert!(
            (reported - truth).abs() < 1e-3,
            "{reported} against {truth}"
        );
    }

    /// The plugin's gate keeps an access exactly when some machine simulates a line it
    /// touches: nothing a sampler needs is left out, nothing is kept for nobody.
    #[test]
    fn the_plugin_gate_keeps_what_some_machine_samples() {
        let big = |name: &str, line: u64| NodeConfig {
            name: name.into(),
            // 256-byte lines: 64, 2048 and 8192 sets: 64 classes of 256-byte lines.
            levels: [(64u64 << 10, 4u32), (8 << 20, 16), (32 << 20, 16)]
                .iter()
                .map(|&(size, ways)| NodeLevel {
                    cache: CacheConfig::new("L", size, line, ways),
                    shared_by_cores: 1,
                })
                .collect(),
            cores: 1,
            inclusion: Default::default(),
        };
        let nodes = [node(), big("wide", 256)];
        let spec = SampleSpec::sets(8).expect("valid");
        let arg = plugin_gate(&spec, &nodes).expect("powers of two");
        let mut it = arg.split(':');
        let (line, modulus, hex) = (
            it.next().unwrap().parse::<u64>().unwrap(),
            it.next().unwrap().parse::<u64>().unwrap(),
            it.next().unwrap(),
        );
        // 64-byte lines; the wide node's 64 classes of 256-byte lines are 64-byte lines
        // mod 256.
        assert_eq!((line, modulus, hex.len()), (64, 256, 64));
        let bit = |c: u64| {
            let d = hex.as_bytes()[(c / 4) as usize] as char;
            d.to_digit(16).unwrap() >> (c % 4) & 1 == 1
        };
        let gate =
            |addr: u64, size: u64| (addr / 64..=(addr + size - 1) / 64).any(|l| bit(l % 256));
        let s = SetSampler::new(spec, &nodes, &Placement::Compact).expect("valid");
        let sampled = |addr: u64, size: u64| {
            s.machines.iter().any(|m| {
                let first = addr >> m.line_shift;
                let last = (addr + size - 1) >> m.line_shift;
                (first..=last).any(|l| m.slot[(l % m.g) as usize] != u32::MAX)
            })
        };
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut kept = 0;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let addr = x >> 20;
            let size = 1 << (x % 7);
            assert_eq!(gate(addr, size), sampled(addr, size), "{addr:#x} {size}");
            kept += u32::from(gate(addr, size));
        }
        // 1 in 8 classes of each machine: between 1/8 and 1/4 of the lines, a little more
        // of the accesses (those of up to 64 bytes may touch two lines).
        assert!((12_000..32_000).contains(&kept), "{kept}");
        // A class count that is not a power of two: no gate (the reader filters).
        let odd = NodeConfig {
            levels: vec![NodeLevel {
                cache: CacheConfig::new("L1", 48 * 64 * 4, 64, 4),
                shared_by_cores: 1,
            }],
            ..node()
        };
        assert_eq!(plugin_gate(&spec, &[node(), odd]), None);
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
