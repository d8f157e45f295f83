//! Sampled cache simulation (`mix --sample K`): the caches simulated on a sample of the
//! accesses and the counters extrapolated, each level's hit ratio with its 95 % interval.
//!
//! * [`sets`]: set sampling, the default: every access to one set class in `K` of every
//!   level (Kessler, Hill and Wood 1994);
//! * `time`: time sampling (`--sample-method time`): one window of accesses in `K`,
//!   after a warm-up (SMARTS);
//! * [`estimate`]: the estimators both use, and their intervals.
//!
//! Here: what to sample ([`SampleSpec`]), the report of a sampled simulation
//! ([`SamplingReport`]) and the counters' arithmetic both extrapolations share.
//! (Native runs timed by CPU-clock sampling are another thing: [`crate::native`].)

use hpcscope_cachesim::{HierarchyStats, LevelStats};
use serde::Serialize;

use crate::error::MixError;

pub mod estimate;
pub mod sets;
pub(crate) mod time;

pub(crate) use time::Sampler;

/// Units measured below which the error estimate is called unreliable.
pub const MIN_UNITS: u64 = 30;

/// Interval (95 %, half-width, percentage points) above which the report says the
/// estimate is loose.
pub const LOOSE_PP: f64 = 1.0;

/// What is sampled.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SampleMethod {
    /// Cache sets: every access to one set in `period` of each level, the others dropped
    /// ([`crate::setsample`]).
    #[default]
    Sets,
    /// Time: one window of `unit` records in every `period` units, after `warmup` records
    /// simulated without counting.
    Time,
}

/// How to sample: with [`SampleMethod::Time`], one measured unit of `unit` records in every
/// `period` units, after `warmup` records simulated without counting; with
/// [`SampleMethod::Sets`], one cache set in `period`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SampleSpec {
    /// What is sampled.
    pub method: SampleMethod,
    /// One unit (or set) in this many is measured.
    pub period: u64,
    /// Records (coalesced accesses) per unit.
    pub unit: u64,
    /// Records simulated, not counted, before each measured unit but the first.
    pub warmup: u64,
}

impl SampleSpec {
    /// Default records per unit.
    pub const UNIT: u64 = 100_000;

    /// One cache set in `period` (see [`SampleMethod::Sets`]).
    pub fn sets(period: u64) -> Result<Self, MixError> {
        if period < 2 {
            return Err(MixError::Usage {
                message: format!("--sample {period}: one cache set in {period}"),
                fix: "give 2 or more (--sample 8 simulates one cache set in 8)".into(),
            });
        }
        Ok(Self {
            method: SampleMethod::Sets,
            period,
            unit: 0,
            warmup: 0,
        })
    }

    /// Time windows: checks that a period holds the measured unit and the warm-up.
    pub fn new(period: u64, unit: u64, warmup: u64) -> Result<Self, MixError> {
        if period < 2 {
            return Err(MixError::Usage {
                message: format!("--sample {period}: one measured unit in {period} units"),
                fix: "give 2 or more (--sample 10 simulates one unit of accesses in 10)".into(),
            });
        }
        if unit == 0 {
            return Err(MixError::Usage {
                message: "--sample-unit 0: a unit of no records".into(),
                fix: "give the records per unit, 1 or more (default 100000)".into(),
            });
        }
        let span = period.checked_mul(unit).ok_or_else(|| MixError::Usage {
            message: format!(
                "--sample {period} with --sample-unit {unit}: a period of more than 2^64 records"
            ),
            fix: "give smaller numbers".into(),
        })?;
        if unit.saturating_add(warmup) > span {
            return Err(MixError::Usage {
                message: format!(
                    "--sample {period} --sample-unit {unit} --sample-warmup {warmup}: the unit and its warm-up ({} records) do not fit in a period of {span} records",
                    unit.saturating_add(warmup)
                ),
                fix: format!(
                    "give a larger --sample (at least {}) or a shorter --sample-warmup",
                    unit.saturating_add(warmup).div_ceil(unit)
                ),
            });
        }
        Ok(Self {
            method: SampleMethod::Time,
            period,
            unit,
            warmup,
        })
    }

    /// Records per period.
    fn span(&self) -> u64 {
        self.period * self.unit
    }
}

/// The estimate of one level's hit ratio.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LevelEstimate {
    /// Level name (`L1`...).
    pub level: String,
    /// Hits over accesses of this level in the measured units (None: no access reached
    /// it); with set sampling, L1's is one minus its misses, expanded from the measured
    /// classes, over all the program's accesses (see `miss_expansion_estimate`).
    pub hit_ratio: Option<f64>,
    /// Half-width of the 95 % confidence interval of `hit_ratio` (None: fewer than two
    /// units with accesses at this level).
    pub ci95: Option<f64>,
    /// Relative half-width of the 95 % interval of the bytes this level served (0.012:
    /// ± 1.2 %), with set sampling: the ratio estimator's, by the bytes of the units (see
    /// `bytes_half_width`). None with time windows, or when no sampled byte came from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_ci95: Option<f64>,
    /// Measured units in which an access reached this level.
    pub units: u64,
}

/// The sampling of one machine's caches.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MachineSampling {
    /// Machine (node) name.
    pub machine: String,
    /// Units measured: time windows (the last one of a thread may be short), or classes
    /// of sets.
    pub units: u64,
    /// Units in all: of the stream (`records / unit` per thread, rounded up), or classes of
    /// sets of the caches.
    pub population: u64,
    /// Time windows: records simulated (measured and warm-up). Sets: accesses simulated
    /// (a coalesced record counts each of its repeats).
    pub simulated: u64,
    /// Per level, nearest the core first.
    pub levels: Vec<LevelEstimate>,
    /// Relative half-width of the 95 % interval of the bytes memory served (as
    /// `LevelEstimate::bytes_ci95`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes_ci95: Option<f64>,
}

/// What a sampled simulation did and how sure its estimates are.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SamplingReport {
    /// How it sampled.
    pub spec: SampleSpec,
    /// Time windows: records of the stream (all threads). Sets: accesses of the run (all
    /// threads), those the plugin left out of the stream included.
    pub records: u64,
    /// Time windows: records simulated for warm-up, not counted (0 with sets).
    pub warmed: u64,
    /// Per machine, in the request's order.
    pub machines: Vec<MachineSampling>,
}

impl SamplingReport {
    /// Lines for the text report: what was sampled, each level's estimate, and a warning
    /// when the error estimate is unreliable or loose.
    pub fn lines(&self) -> Vec<String> {
        let s = &self.spec;
        let mut out = vec![match s.method {
            SampleMethod::Time => format!(
                "sampled cache simulation: 1 window of {} accesses in {}, warm-up {} accesses",
                s.unit, s.period, s.warmup
            ),
            SampleMethod::Sets => format!(
                "sampled cache simulation: 1 cache set in {} of every level, all accesses to them",
                s.period
            ),
        }];
        let mut loose = false;
        let mut few = false;
        for m in &self.machines {
            let cells: Vec<String> = m
                .levels
                .iter()
                .map(|l| match (l.hit_ratio, l.ci95) {
                    (Some(r), Some(ci)) => {
                        loose |= ci * 100.0 > LOOSE_PP;
                        format!("{} {:.2} % ± {:.2}", l.level, r * 100.0, ci * 100.0)
                    }
                    (Some(r), None) => {
                        loose = true;
                        format!("{} {:.2} % (± unknown)", l.level, r * 100.0)
                    }
                    (None, _) => format!("{} no accesses", l.level),
                })
                .collect();
            few |= m.units < MIN_UNITS;
            out.push(format!(
                "  {}: {} of {} {} measured, {} of {} accesses simulated ({:.1} %); hit ratio (95 % interval, percentage points) {}",
                m.machine,
                m.units,
                m.population,
                match s.method {
                    SampleMethod::Time => "windows",
                    SampleMethod::Sets => "classes of sets",
                },
                m.simulated,
                self.records,
                pct(m.simulated, self.records),
                cells.join(", ")
            ));
        }
        if few {
            out.push(format!(
                "  warning: fewer than {MIN_UNITS} units measured: the intervals are rough; give a smaller --sample"
            ));
        }
        if loose {
            out.push(format!(
                "  warning: an interval is wider than {LOOSE_PP} percentage point; give a smaller --sample for a tighter estimate"
            ));
        }
        out
    }
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

fn add_level(a: &mut LevelStats, b: &LevelStats) {
    a.accesses += b.accesses;
    a.hits += b.hits;
    a.misses += b.misses;
    a.bytes_served += b.bytes_served;
    a.fills += b.fills;
    a.writebacks += b.writebacks;
    a.evictions += b.evictions;
}

pub(crate) fn add_stats(a: &mut HierarchyStats, b: &HierarchyStats) {
    a.accesses += b.accesses;
    a.split_accesses += b.split_accesses;
    a.bytes += b.bytes;
    if a.levels.len() < b.levels.len() {
        a.levels = b
            .levels
            .iter()
            .map(|l| LevelStats::named(&l.name))
            .collect();
    }
    for (x, y) in a.levels.iter_mut().zip(&b.levels) {
        add_level(x, y);
    }
    a.memory.name.clone_from(&b.memory.name);
    add_level(&mut a.memory, &b.memory);
}

/// `x * f`, rounded.
fn scale(x: u64, f: f64) -> u64 {
    (x as f64 * f).round() as u64
}

pub(crate) fn scale_level(l: &LevelStats, f: f64) -> LevelStats {
    LevelStats {
        name: l.name.clone(),
        accesses: scale(l.accesses, f),
        hits: scale(l.hits, f),
        misses: scale(l.accesses, f).saturating_sub(scale(l.hits, f)),
        bytes_served: scale(l.bytes_served, f),
        fills: scale(l.fills, f),
        writebacks: scale(l.writebacks, f),
        evictions: scale(l.evictions, f),
    }
}

pub(crate) fn scale_stats(s: &HierarchyStats, f: f64) -> HierarchyStats {
    HierarchyStats {
        name: s.name.clone(),
        line_bytes: s.line_bytes,
        accesses: scale(s.accesses, f),
        split_accesses: scale(s.split_accesses, f),
        bytes: scale(s.bytes, f),
        levels: s.levels.iter().map(|l| scale_level(l, f)).collect(),
        memory: scale_level(&s.memory, f),
    }
}

#[cfg(test)]
mod tests {
    use super::estimate::*;
    use super::time::*;
    use super::*;
    use hpcscope_cachesim::{NodeSim, PackedAccess};

    #[test]
    fn spec_must_fit_the_unit_and_warmup() {
        assert!(SampleSpec::new(10, 100, 200).is_ok());
        assert!(SampleSpec::new(1, 100, 0).is_err());
        assert!(SampleSpec::new(3, 0, 0).is_err());
        let e = SampleSpec::new(3, 100, 250).unwrap_err().to_string();
        assert!(e.contains("at least 4"), "{e}");
    }

    fn node() -> NodeSim {
        use hpcscope_cachesim::{CacheConfig, NodeConfig, NodeLevel, Placement};
        let lvl = |name: &str, size: u64, ways: u32| NodeLevel {
            cache: CacheConfig::new(name, size, 64, ways),
            shared_by_cores: 1,
        };
        let cfg = NodeConfig {
            name: "toy".into(),
            levels: vec![lvl("L1", 4 << 10, 4), lvl("L2", 64 << 10, 8)],
            cores: 1,
            inclusion: Default::default(),
        };
        NodeSim::new(cfg, Placement::Compact).expect("valid")
    }

    /// A xorshift64 generator for the tests' populations and draws.
    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// Puts a random choice of `k` of `order`'s elements first (a partial Fisher-Yates
    /// shuffle): one draw of `k` classes.
    fn draw(order: &mut [usize], k: usize, next: &mut impl FnMut() -> u64) {
        let n = order.len();
        for i in 0..k {
            let j = i + (next() % (n - i) as u64) as usize;
            order.swap(i, j);
        }
    }

    /// A stream of `n` accesses: a loop over 32 KiB (misses L1, hits L2) with a random
    /// access in 1 MiB now and then (misses both).
    fn stream(n: u64) -> Vec<PackedAccess> {
        let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
        (0..n)
            .map(|i| {
                let x = next();
                let addr = if x.is_multiple_of(8) {
                    0x100_0000 + (x >> 8) % (1 << 20)
                } else {
                    0x10_0000 + (i * 64) % (32 << 10)
                };
                PackedAccess::new(addr & !7, 8, i % 3 == 0).expect("small")
            })
            .collect()
    }

    #[test]
    fn sampled_hit_ratios_agree_with_the_full_simulation() {
        let recs = stream(400_000);
        let mut full = node();
        full.access_batch(0, &recs);
        let full = full.stats();
        let mut sims = vec![node()];
        let mut s = Sampler::new(SampleSpec::new(10, 2_000, 2_000).expect("fits"));
        // Fed in uneven pieces: windows cut across them.
        for piece in recs.chunks(7_777) {
            s.feed(&mut sims, 0, piece);
        }
        let s_skipped = s.skipped;
        let (est, rep) = s.finish(&sims, recs.len() as u64);
        let m = &rep.machines[0];
        assert_eq!(m.units, 20);
        assert_eq!(m.population, 200);
        assert_eq!(rep.warmed, 40_000); // each period ends with one
        assert_eq!(m.simulated, 80_000);
        assert_eq!(s_skipped, 400_000 - 80_000);
        let (total, threads) = &est[0];
        assert_eq!(threads.len(), 1);
        // Every access is extrapolated exactly (one record is one access here).
        assert_eq!(total.accesses, full.accesses);
        for (j, lvl) in rep.machines[0].levels.iter().enumerate() {
            let want = full.levels[j].local_hit_ratio();
            let got = lvl.hit_ratio.expect("accesses at every level");
            let ci = lvl.ci95.expect("20 units");
            assert!(ci > 0.0 && ci < 0.05, "{} ± {ci}", lvl.level);
            assert!(
                (got - want).abs() < 0.02,
                "{}: sampled {got} full {want}",
                lvl.level
            );
            let x = &total.levels[j];
            assert_eq!(x.misses, x.accesses - x.hits);
        }
    }

    #[test]
    fn ratio_estimate_matches_hand_computation() {
        // R = 30/40; residuals 8-0.75*10 = 0.5, 22-0.75*30 = -0.5; s2 = 0.5; mean a = 20;
        // between-unit variance 0.5 / (2 * 400) = 6.25e-4, below the binomial
        // 0.75 * 0.25 / 40 = 4.6875e-3: deff = 1. Effective sample 40 (1.96 / 12.706)^2
        // = 0.95182 (t with 1 degree of freedom); its Wilson interval is [0.11328, 0.98600],
        // 0.63672 below R; times sqrt(1 - 2/4).
        let (r, ci) = ratio_estimate(&[(10, 8), (30, 22)], 4);
        assert_eq!(r, Some(0.75));
        let want = (0.75 - 0.113_279_899_806_641_4) * 0.5f64.sqrt();
        assert!((ci.expect("two units") - want).abs() < 1e-9, "{ci:?}");
        // Every unit measured: no sampling error.
        assert_eq!(ratio_estimate(&[(10, 8), (30, 22)], 2).1, Some(0.0));
        assert_eq!(ratio_estimate(&[(10, 8)], 4), (Some(0.8), None));
        assert_eq!(ratio_estimate(&[(0, 0)], 4), (None, None));
        // Many accesses in many units: the Student-t interval on the residuals.
        let units: Vec<(u64, u64)> = (0..40u64)
            .map(|i| (10_000 + 37 * i, 5_000 + 400 * (i % 7)))
            .collect();
        let (r, ci) = ratio_estimate(&units, 1_000_000);
        let r = r.expect("accesses");
        let n = 40.0;
        let mean_a = units.iter().map(|u| u.0 as f64).sum::<f64>() / n;
        let s2 = units
            .iter()
            .map(|&(a, h)| (h as f64 - r * a as f64).powi(2))
            .sum::<f64>()
            / (n - 1.0);
        let t = 2.0 * (s2 / (n * mean_a * mean_a)).sqrt(); // t with 39 degrees of freedom
        let ci = ci.expect("40 units");
        assert!((ci / t - 1.0).abs() < 0.02, "{ci} against {t}");
    }

    #[test]
    fn the_interval_covers_a_rare_level_reached_in_few_units() {
        // A level that 4 sampled classes reach, 10 accesses each, none of which hits: the
        // residuals are all 0, so the t interval is 0 ± 0 and misses any hit ratio but 0.
        let units = [
            (10, 0),
            (10, 0),
            (10, 0),
            (10, 0),
            (0, 0),
            (0, 0),
            (0, 0),
            (0, 0),
        ];
        assert_eq!(t_interval(&units, 64), (Some(0.0), Some(0.0)));
        let (r, ci) = ratio_estimate(&units, 64);
        assert_eq!(r, Some(0.0));
        // Effective sample 40 (1.96 / 3.182)^2 = 15.18; Wilson's upper bound at 0 is
        // z^2 / (n + z^2) = 0.2019; times sqrt(1 - 8/64).
        let ci = ci.expect("4 units");
        let n_eff = 40.0 * (1.96f64 / 3.182).powi(2);
        let want = 1.96f64.powi(2) / (n_eff + 1.96f64.powi(2)) * (1.0 - 8.0 / 64.0f64).sqrt();
        assert!((ci - want).abs() < 1e-12, "{ci} against {want}");
        assert!(ci > 0.05, "covers a hit ratio of 5 %");

        // Over draws: 256 classes, of which 64 see the level, each 5 to 30 accesses that hit
        // with probability 0.03 (a level most accesses never reach): a draw of 32 classes
        // holds 8 non-empty ones on average and about 140 accesses.
        let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
        let pop: Vec<(u64, u64)> = (0..256u64)
            .map(|c| {
                if c % 32 >= 8 {
                    return (0, 0);
                }
                let a = 5 + next() % 26;
                let h = (0..a).filter(|_| next() % 1000 < 30).count() as u64;
                (a, h)
            })
            .collect();
        let (sa, sh) = pop.iter().fold((0, 0), |(a, h), u| (a + u.0, h + u.1));
        let truth = sh as f64 / sa as f64;
        let (mut old, mut new, mut draws) = (0u32, 0u32, 0u32);
        let mut order: Vec<usize> = (0..256).collect();
        for _ in 0..2000 {
            draw(&mut order, 32, &mut next);
            let units: Vec<(u64, u64)> = order[..32].iter().map(|&c| pop[c]).collect();
            let ((Some(r), Some(ci_old)), (Some(r2), Some(ci_new))) =
                (t_interval(&units, 256), ratio_estimate(&units, 256))
            else {
                continue;
            };
            assert_eq!(r, r2, "the point estimate is kept");
            draws += 1;
            old += u32::from((r - truth).abs() <= ci_old);
            new += u32::from((r - truth).abs() <= ci_new);
        }
        assert!(draws > 1900, "{draws} draws with an interval");
        let (old, new) = (
            f64::from(old) / f64::from(draws),
            f64::from(new) / f64::from(draws),
        );
        println!("coverage over {draws} draws: t interval {old}, this one {new}");
        assert!(old < 0.93, "the t interval covered {old}");
        assert!(
            new >= 0.95,
            "the interval covered {new} (the t interval {old})"
        );
    }

    #[test]
    fn bytes_half_width_matches_hand_computation() {
        // Units (bytes, served): R = 60/400 = 0.15; residuals 10 - 15 = -5, 20 - 15 = 5,
        // 30 - 30 = 0, 0 - 0 = 0 (a unit with no byte served at this level still counts);
        // s2 = 50 / 3; mean served 15; t with 3 degrees of freedom 3.182; 4 of 16 units.
        let units = [(100, 10), (100, 20), (200, 30), (0, 0)];
        let want = 3.182 * ((1.0 - 4.0 / 16.0) * (50.0 / 3.0) / 4.0f64).sqrt() / 15.0;
        let got = bytes_half_width(&units, 16).expect("bytes served");
        assert!((got - want).abs() < 1e-12, "{got} against {want}");
        // Served in proportion to the bytes: no sampling error.
        assert_eq!(bytes_half_width(&[(100, 10), (300, 30)], 16), Some(0.0));
        // Nothing served, or one unit: unknown.
        assert_eq!(bytes_half_width(&[(100, 0), (300, 0)], 16), None);
        assert_eq!(bytes_half_width(&[(100, 10)], 16), None);
        // Every unit measured: none.
        assert_eq!(bytes_half_width(&[(100, 10), (300, 50)], 2), Some(0.0));
    }

    #[test]
    fn expanded_misses_hold_l1_where_one_hot_class_holds_extra_hits() {
        // CG's L1 on cascadelake-8260, in small: 64 classes of about 1.59 million accesses
        // and 178,000 misses each, one of which (a loop's scalars) has 800,000 accesses
        // more, all hits; some straddling accesses give extra pieces. Draws of 8 classes
        // miss the hot one 7 times in 8.
        let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
        let pop: Vec<(u64, u64, u64)> = (0..64u64)
            .map(|c| {
                let a = 1_593_000 + next() % 2_000 + if c == 26 { 800_000 } else { 0 };
                let m = 178_000 + next() % 300;
                (a, a - m, 1_000 + next() % 50)
            })
            .collect();
        let extra: u64 = pop.iter().map(|u| u.2).sum();
        let accesses: u64 = pop.iter().map(|u| u.0).sum();
        let hits: u64 = pop.iter().map(|u| u.1).sum();
        let records = accesses - extra;
        let truth = hits as f64 / accesses as f64;
        let (mut ratio_covers, mut exp_covers, mut draws) = (0u32, 0u32, 0u32);
        let mut order: Vec<usize> = (0..64).collect();
        for _ in 0..2000 {
            draw(&mut order, 8, &mut next);
            let units: Vec<(u64, u64, u64)> = order[..8].iter().map(|&c| pop[c]).collect();
            let plain: Vec<(u64, u64)> = units.iter().map(|u| (u.0, u.1)).collect();
            let (Some(r), Some(rc)) = ratio_estimate(&plain, 64) else {
                panic!("8 classes with accesses give an interval");
            };
            let (Some(q), Some(qc)) = miss_expansion_estimate(&units, 64, records) else {
                panic!("8 classes give an interval");
            };
            draws += 1;
            ratio_covers += u32::from((r - truth).abs() <= rc);
            exp_covers += u32::from((q - truth).abs() <= qc);
        }
        let share = |k: u32| f64::from(k) / f64::from(draws);
        println!(
            "L1 {truth}: the ratio's interval covers {}, the expanded misses' {}",
            share(ratio_covers),
            share(exp_covers)
        );
        assert!(share(ratio_covers) < 0.3, "ratio {}", share(ratio_covers));
        assert!(share(exp_covers) > 0.9, "expanded {}", share(exp_covers));
        // Every class measured: the program's own ratio, with no sampling error.
        let (q, qc) = miss_expansion_estimate(&pop, 64, records);
        assert!((q.expect("accesses") - truth).abs() < 1e-12);
        assert_eq!(qc, Some(0.0));
        // One class, or no access at all: no estimate (mix falls back to the ratio).
        assert_eq!(
            miss_expansion_estimate(&pop[..1], 64, records),
            (None, None)
        );
        assert_eq!(
            miss_expansion_estimate(&[(0, 0, 0), (0, 0, 0)], 64, 0),
            (None, None)
        );
    }

    #[test]
    fn the_regression_on_bytes_corrects_a_draw_of_few_hot_classes() {
        // 64 classes whose accesses (8 bytes each) grow by 15 % from one to the next,
        // from 5,000 to 33 million, while every class misses about 3,000 times (misses
        // spread evenly, accesses not: a few hot lines, as Monte-Carlo's L1, where the
        // eighth of the classes with most hits holds 99 % of them). Draws of 8 classes.
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
        let pop: Vec<(u64, u64, u64)> = (0..64u64)
            .map(|c| {
                let a = (5_000.0 * 1.15f64.powi(c as i32)) as u64 + next() % 100;
                let misses = 2_500 + next() % 1_000;
                (8 * a, a, a - misses)
            })
            .collect();
        let (sa, sh, sb) = pop
            .iter()
            .fold((0, 0, 0), |(a, h, b), u| (a + u.1, h + u.2, b + u.0));
        let truth = sh as f64 / sa as f64;
        let (mut ratio_close, mut reg_close, mut reg_covers, mut draws) = (0u32, 0u32, 0u32, 0u32);
        let mut order: Vec<usize> = (0..64).collect();
        for _ in 0..2000 {
            draw(&mut order, 8, &mut next);
            let units: Vec<(u64, u64, u64)> = order[..8].iter().map(|&c| pop[c]).collect();
            let plain: Vec<(u64, u64)> = units.iter().map(|u| (u.1, u.2)).collect();
            let (Some(r), _) = ratio_estimate(&plain, 64) else {
                continue;
            };
            let (Some(q), Some(ci)) = regression_estimate(&units, 64, sb) else {
                panic!("8 units with accesses give an interval");
            };
            draws += 1;
            ratio_close += u32::from((r - truth).abs() <= 0.0002);
            reg_close += u32::from((q - truth).abs() <= 0.0002);
            reg_covers += u32::from((q - truth).abs() <= ci);
        }
        let share = |k: u32| f64::from(k) / f64::from(draws);
        println!(
            "within 0.02 points of {truth}: ratio {}, regression {}; regression covers {}",
            share(ratio_close),
            share(reg_close),
            share(reg_covers)
        );
        assert!(share(ratio_close) < 0.6, "ratio {}", share(ratio_close));
        assert!(share(reg_close) > 0.95, "regression {}", share(reg_close));
        assert!(share(reg_covers) >= 0.9, "covers {}", share(reg_covers));
        // Hits and accesses proportional to the bytes: the ratio estimate.
        let prop: Vec<(u64, u64, u64)> = (1..=8u64).map(|i| (800 * i, 100 * i, 90 * i)).collect();
        let (q, _) = regression_estimate(&prop, 64, 800 * 64 * 5);
        assert!((q.expect("accesses") - 0.9).abs() < 1e-12);
        // Too few units for a slope: the ratio estimate.
        let few = [(80, 10, 9), (160, 20, 10), (240, 30, 30)];
        let plain: Vec<(u64, u64)> = few.iter().map(|u| (u.1, u.2)).collect();
        assert_eq!(
            regression_estimate(&few, 64, 10_000),
            ratio_estimate(&plain, 64)
        );
    }
}
