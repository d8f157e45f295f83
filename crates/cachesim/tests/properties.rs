//! Invariants over random geometries and streams, and agreement with a naive reference model.

use hpcscope_cachesim::{
    Access, BackgroundOptions, BackgroundSim, CacheConfig, Hierarchy, HierarchyConfig,
    HierarchyStats, Inclusion, MultiSim, PackedAccess, Replacement,
};
use proptest::prelude::*;

fn level_strategy(line: u64) -> impl Strategy<Value = (u64, u32, bool)> {
    // (sets, ways, tree-PLRU?)
    (
        prop::sample::select(vec![1u64, 2, 3, 4, 8, 5]),
        prop::sample::select(vec![1u32, 2, 4, 8, 3]),
        any::<bool>(),
    )
        .prop_map(move |(s, w, p)| (s * line * u64::from(w), w, p))
}

fn hierarchy_strategy() -> impl Strategy<Value = HierarchyConfig> {
    (
        prop::sample::select(vec![16u64, 64]),
        1usize..=3,
        prop::sample::select(vec![
            Inclusion::NonInclusive,
            Inclusion::Inclusive,
            Inclusion::Exclusive,
        ]),
    )
        .prop_flat_map(|(line, n, inclusion)| {
            prop::collection::vec(level_strategy(line), n).prop_map(move |levels| {
                let levels = levels
                    .into_iter()
                    .enumerate()
                    .map(|(i, (size, ways, plru))| {
                        let r = if plru && ways.is_power_of_two() {
                            Replacement::TreePlru
                        } else {
                            Replacement::Lru
                        };
                        CacheConfig::new(format!("L{}", i + 1), size, line, ways)
                            .with_replacement(r)
                    })
                    .collect();
                HierarchyConfig::new("random", levels).with_inclusion(inclusion)
            })
        })
}

fn stream_strategy() -> impl Strategy<Value = Vec<Access>> {
    prop::collection::vec(
        (
            0u64..6000,
            prop::sample::select(vec![1u32, 2, 4, 8, 8, 8, 16, 32, 64, 100]),
            any::<bool>(),
        )
            .prop_map(|(addr, size, w)| Access {
                addr,
                size,
                is_write: w,
            }),
        0..400,
    )
}

fn run(cfg: &HierarchyConfig, stream: &[Access]) -> HierarchyStats {
    let mut h = Hierarchy::new(cfg.clone()).expect("generated geometry is valid");
    h.access_batch(stream);
    h.stats()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn conservation(cfg in hierarchy_strategy(), stream in stream_strategy()) {
        let s = run(&cfg, &stream);
        let total_bytes: u64 = stream.iter().map(|a| u64::from(a.size)).sum();
        prop_assert_eq!(s.accesses, stream.len() as u64);
        prop_assert_eq!(s.bytes, total_bytes);
        prop_assert_eq!(s.all_levels().map(|l| l.bytes_served).sum::<u64>(), total_bytes);
        let hits: u64 = s.all_levels().map(|l| l.hits).sum();
        prop_assert_eq!(hits, s.line_accesses());
        for l in &s.levels {
            prop_assert_eq!(l.accesses, l.hits + l.misses);
        }
        for w in s.levels.windows(2) {
            prop_assert_eq!(w[1].accesses, w[0].misses);
        }
        prop_assert_eq!(s.memory.accesses, s.levels.last().map_or(0, |l| l.misses));
        prop_assert_eq!(s.memory.writebacks, s.levels.last().map_or(0, |l| l.writebacks));
        let writes = stream.iter().filter(|a| a.is_write).count();
        if writes == 0 {
            prop_assert_eq!(s.memory.writebacks, 0);
        }
    }

    #[test]
    fn larger_fully_associative_lru_never_hits_less(
        stream in stream_strategy(),
        small in 1u32..16,
        extra in 0u32..16,
    ) {
        // LRU stack property (Mattson et al. 1970): a fully associative LRU cache of C lines
        // holds the C most recently used lines, a subset of what a larger one holds.
        let fa = |ways: u32| HierarchyConfig::new(
            "fa", vec![CacheConfig::new("L1", 64 * u64::from(ways), 64, ways)]);
        let a = run(&fa(small), &stream);
        let b = run(&fa(small + extra), &stream);
        prop_assert!(b.levels[0].hits >= a.levels[0].hits);
        // The same holds per set: same set count, more ways.
        let sa = |ways: u32| HierarchyConfig::new(
            "sa", vec![CacheConfig::new("L1", 64 * 3 * u64::from(ways), 64, ways)]);
        let a = run(&sa(small), &stream);
        let b = run(&sa(small + extra), &stream);
        prop_assert!(b.levels[0].hits >= a.levels[0].hits);
    }

    #[test]
    fn deterministic_and_independent_of_batching(
        cfg in hierarchy_strategy(),
        stream in stream_strategy(),
        cut in 0usize..400,
    ) {
        let a = run(&cfg, &stream);
        prop_assert_eq!(&a, &run(&cfg, &stream));
        let mut multi = MultiSim::new([cfg.clone(), cfg.clone()]).expect("valid");
        let cut = cut.min(stream.len());
        multi.access_batch(&stream[..cut]);
        for &x in &stream[cut..] {
            multi.access(x);
        }
        let m = multi.stats();
        prop_assert_eq!(&m[0], &a);
        prop_assert_eq!(&m[1], &a);
    }

    #[test]
    fn matches_naive_reference_model(cfg in hierarchy_strategy(), stream in stream_strategy()) {
        // The reference models the non-exclusive policies with LRU.
        let mut cfg = cfg;
        if cfg.inclusion == Inclusion::Exclusive {
            cfg.inclusion = Inclusion::NonInclusive;
        }
        for l in &mut cfg.levels {
            l.replacement = Replacement::Lru;
        }
        let fast = run(&cfg, &stream);
        let mut naive = reference::Naive::new(&cfg);
        for &a in &stream {
            naive.access(a);
        }
        let s = &fast;
        for (i, l) in s.levels.iter().enumerate() {
            let r = &naive.levels[i];
            prop_assert_eq!((l.hits, l.misses, l.bytes_served, l.fills, l.writebacks, l.evictions),
                (r.hits, r.misses, r.bytes, r.fills, r.writebacks, r.evictions), "level {}", i);
        }
        prop_assert_eq!((s.memory.hits, s.memory.bytes_served, s.memory.writebacks),
            (naive.mem_reads, naive.mem_bytes, naive.mem_writebacks));
    }
}

/// Repeats each access of `stream` `r` times inside its line (next addresses of its size
/// while they fit, else the same address), as a unit-stride or split-SSE stream does.
fn with_runs(stream: &[Access], repeats: &[u8], line: u64) -> Vec<Access> {
    let mut out = Vec::new();
    for (a, &r) in stream.iter().zip(repeats.iter().cycle()) {
        let size = u64::from(a.size);
        for k in 0..u64::from(r) {
            let next = a.addr + k * size;
            let fits = next / line == a.addr / line && (next % line) + size <= line;
            out.push(Access {
                addr: if fits { next } else { a.addr },
                ..*a
            });
        }
    }
    out
}

/// Packs `stream` the way the plugin does with `coalesce=line`: an access of the previous
/// record's size and direction, in its `line`-byte block, neither crossing the block's end,
/// becomes a repeat of that record (up to 8 accesses per record).
fn coalesce(stream: &[Access], line: u64) -> Vec<PackedAccess> {
    let crosses = |a: &Access| a.addr % line + u64::from(a.size) > line;
    let mut out: Vec<(Access, u64)> = Vec::new();
    for a in stream {
        if let Some((last, n)) = out.last_mut()
            && *n < 8
            && last.addr / line == a.addr / line
            && (last.size, last.is_write) == (a.size, a.is_write)
            && !crosses(last)
            && !crosses(a)
        {
            *n += 1;
            continue;
        }
        out.push((*a, 1));
    }
    out.into_iter()
        .map(|(a, n)| {
            PackedAccess::new(a.addr, a.size, a.is_write)
                .and_then(|p| p.with_count(n))
                .expect("packable")
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn coalesced_records_simulate_like_their_accesses(
        cfg in hierarchy_strategy(),
        stream in stream_strategy(),
        repeats in prop::collection::vec(1u8..=10, 1..20),
    ) {
        let stream: Vec<Access> = stream
            .into_iter()
            .filter(|a| a.size.is_power_of_two())
            .collect();
        let line = cfg.levels[0].line_bytes;
        let expanded = with_runs(&stream, &repeats, line);
        let packed = coalesce(&expanded, line);
        prop_assert!(packed.len() <= expanded.len());
        let mut h = Hierarchy::new(cfg.clone()).expect("valid");
        h.access_batch(&packed);
        prop_assert_eq!(h.stats(), run(&cfg, &expanded));
    }
}

/// Hierarchies whose lower levels have a thousand sets or more (they keep narrow tags),
/// power-of-two or not, LRU.
fn large_hierarchy_strategy() -> impl Strategy<Value = HierarchyConfig> {
    (
        (
            prop::sample::select(vec![1u64, 2, 4]),
            prop::sample::select(vec![1u32, 2, 4]),
        ),
        (
            prop::sample::select(vec![1024u64, 3 * 1024]),
            prop::sample::select(vec![1u32, 2, 3]),
        ),
        prop::option::of((
            prop::sample::select(vec![1024u64, 2048, 13 * 1024]),
            prop::sample::select(vec![2u32, 4, 11]),
        )),
        prop::sample::select(vec![Inclusion::NonInclusive, Inclusion::Inclusive]),
    )
        .prop_map(|(l1, l2, l3, inclusion)| {
            let level = |name: &str, (sets, ways): (u64, u32)| {
                CacheConfig::new(name, sets * 64 * u64::from(ways), 64, ways)
            };
            let mut levels = vec![level("L1", l1), level("L2", l2)];
            levels.extend(l3.map(|l3| level("L3", l3)));
            HierarchyConfig::new("large", levels).with_inclusion(inclusion)
        })
}

/// Accesses to six arrays whose lines share sets in every level of
/// [`large_hierarchy_strategy`] (they are a multiple of every set count apart), and a few
/// far above 2^47, whose lines do not fit a narrow tag.
fn colliding_stream_strategy() -> impl Strategy<Value = Vec<Access>> {
    const SPAN: u64 = 39_936 * 64; // lines: a multiple of 1024, 3 * 1024 and 13 * 1024
    prop::collection::vec(
        (
            0u64..7,
            0u64..8192,
            prop::sample::select(vec![1u32, 8, 8, 16, 64]),
            any::<bool>(),
        )
            .prop_map(|(array, off, size, w)| Access {
                addr: if array == 6 {
                    (1 << 54) + off * 4096
                } else {
                    0x40_0000_0000 + array * SPAN + off
                },
                size,
                is_write: w,
            }),
        0..600,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn large_levels_match_naive_reference_model(
        cfg in large_hierarchy_strategy(),
        stream in colliding_stream_strategy(),
    ) {
        let fast = run(&cfg, &stream);
        let mut naive = reference::Naive::new(&cfg);
        for &a in &stream {
            naive.access(a);
        }
        for (i, l) in fast.levels.iter().enumerate() {
            let r = &naive.levels[i];
            prop_assert_eq!((l.hits, l.misses, l.bytes_served, l.fills, l.writebacks, l.evictions),
                (r.hits, r.misses, r.bytes, r.fills, r.writebacks, r.evictions), "level {}", i);
        }
        prop_assert_eq!((fast.memory.hits, fast.memory.bytes_served, fast.memory.writebacks),
            (naive.mem_reads, naive.mem_bytes, naive.mem_writebacks));
        // Packed records (the stream as `hpcscope mix` gets it) give the same counts.
        let packed: Vec<PackedAccess> = stream
            .iter()
            .map(|a| PackedAccess::new(a.addr, a.size, a.is_write).expect("packable"))
            .collect();
        let mut h = Hierarchy::new(cfg.clone()).expect("valid");
        h.access_batch(&packed);
        prop_assert_eq!(h.stats(), fast);
    }
}

#[test]
fn background_matches_multisim_and_segments_add_up() {
    let cfgs = vec![
        HierarchyConfig::new(
            "a",
            vec![
                CacheConfig::new("L1", 1024, 64, 2),
                CacheConfig::new("L2", 8192, 64, 4),
            ],
        ),
        HierarchyConfig::new("b", vec![CacheConfig::new("L1", 2048, 32, 4)])
            .with_inclusion(Inclusion::Inclusive),
    ];
    let mut x = 99u64;
    let stream: Vec<Access> = (0..20_000)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            Access {
                addr: (x >> 30) % 20_000,
                size: 8,
                is_write: x & 4 == 4,
            }
        })
        .collect();
    let mut multi = MultiSim::new(cfgs.clone()).expect("valid");
    multi.access_batch(&stream);
    let expected = multi.stats();

    let opts = BackgroundOptions {
        batch_len: 777,
        queue_depth: 2,
    };
    let mut bg = BackgroundSim::spawn(MultiSim::new(cfgs).expect("valid"), opts);
    for &a in &stream[..5000] {
        bg.push(a);
    }
    bg.checkpoint("first").expect("worker alive");
    bg.extend_from_slice(&stream[5000..12_000]);
    bg.checkpoint("second").expect("worker alive");
    let mut buf = bg.take_buffer();
    buf.extend_from_slice(&stream[12_000..]);
    bg.submit(buf).expect("worker alive");
    let report = bg.finish_report().expect("worker ok");
    assert_eq!(report.totals, expected);
    assert_eq!(report.segments.len(), 2);
    assert_eq!(report.segments[0].label, "first");
    assert_eq!(report.segments[0].stats[0].accesses, 5000);
    assert_eq!(report.segments[1].stats[1].accesses, 7000);
    let hits: u64 = report
        .segments
        .iter()
        .map(|s| s.stats[0].levels[0].hits)
        .sum();
    assert!(hits <= expected[0].levels[0].hits);
}

/// A deliberately simple model of the same policies (LRU by timestamps, sets as lists),
/// used to check the fast simulator's layout tricks and MRU fast path.
mod reference {
    use hpcscope_cachesim::{Access, HierarchyConfig, Inclusion};

    #[derive(Default)]
    pub struct Counters {
        pub hits: u64,
        pub misses: u64,
        pub bytes: u64,
        pub fills: u64,
        pub writebacks: u64,
        pub evictions: u64,
    }

    struct Level {
        sets: Vec<Vec<(u64, bool, u64)>>, // (line, dirty, last use)
        ways: usize,
    }

    pub struct Naive {
        line_bytes: u64,
        inclusive: bool,
        cache: Vec<Level>,
        pub levels: Vec<Counters>,
        pub mem_reads: u64,
        pub mem_bytes: u64,
        pub mem_writebacks: u64,
        clock: u64,
    }

    impl Naive {
        pub fn new(cfg: &HierarchyConfig) -> Self {
            Self {
                line_bytes: cfg.levels[0].line_bytes,
                inclusive: cfg.inclusion == Inclusion::Inclusive,
                cache: cfg
                    .levels
                    .iter()
                    .map(|l| Level {
                        sets: vec![Vec::new(); l.sets() as usize],
                        ways: l.associativity as usize,
                    })
                    .collect(),
                levels: cfg.levels.iter().map(|_| Counters::default()).collect(),
                mem_reads: 0,
                mem_bytes: 0,
                mem_writebacks: 0,
                clock: 0,
            }
        }

        pub fn access(&mut self, a: Access) {
            let end = a.addr + u64::from(a.size);
            let last = if a.size == 0 { a.addr } else { end - 1 } / self.line_bytes;
            for line in a.addr / self.line_bytes..=last {
                let lo = (line * self.line_bytes).max(a.addr);
                let hi = ((line + 1) * self.line_bytes).min(end);
                self.access_line(line, hi.saturating_sub(lo), a.is_write);
            }
        }

        fn set(&mut self, k: usize, line: u64) -> &mut Vec<(u64, bool, u64)> {
            let lvl = &mut self.cache[k];
            let n = lvl.sets.len() as u64;
            &mut lvl.sets[(line % n) as usize]
        }

        fn access_line(&mut self, line: u64, bytes: u64, write: bool) {
            self.clock += 1;
            let now = self.clock;
            let n = self.cache.len();
            let mut served = n;
            for k in 0..n {
                if let Some(e) = self.set(k, line).iter_mut().find(|e| e.0 == line) {
                    e.2 = now;
                    self.levels[k].hits += 1;
                    self.levels[k].bytes += bytes;
                    served = k;
                    break;
                }
                self.levels[k].misses += 1;
            }
            if served == n {
                self.mem_reads += 1;
                self.mem_bytes += bytes;
            }
            for k in (0..served).rev() {
                self.fill(k, line, false);
            }
            if write && let Some(e) = self.set(0, line).iter_mut().find(|e| e.0 == line) {
                e.1 = true;
            }
        }

        fn fill(&mut self, k: usize, line: u64, dirty: bool) {
            self.clock += 1;
            let now = self.clock;
            let ways = self.cache[k].ways;
            self.levels[k].fills += 1;
            let set = self.set(k, line);
            let victim = if set.len() == ways {
                let (i, _) = set
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, e)| e.2)
                    .expect("full set");
                Some(set.remove(i))
            } else {
                None
            };
            set.push((line, dirty, now));
            if let Some((vline, mut vdirty, _)) = victim {
                self.levels[k].evictions += 1;
                if self.inclusive {
                    for j in 0..k {
                        let s = self.set(j, vline);
                        if let Some(i) = s.iter().position(|e| e.0 == vline) {
                            vdirty |= s.remove(i).1;
                        }
                    }
                }
                if vdirty {
                    self.levels[k].writebacks += 1;
                    if k + 1 == self.cache.len() {
                        self.mem_writebacks += 1;
                    } else if let Some(e) = self.set(k + 1, vline).iter_mut().find(|e| e.0 == vline)
                    {
                        e.1 = true;
                    } else {
                        self.fill(k + 1, vline, true);
                    }
                }
            }
        }
    }
}
