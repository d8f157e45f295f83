//! From executions to counts: each translation block's static counts times its executions,
//! per vCPU (guest thread) and per region, plus the bytes counted from QEMU's access
//! reports.

use std::collections::BTreeMap;

use crate::isa::N_COUNTERS;
use crate::report::TbCounts;

/// Static counts of one translation block: (region, counter, increment per execution).
#[derive(Debug, Clone, Default)]
pub struct TbStatic {
    /// Counter id of the block (index into the per-vCPU execution counters).
    pub id: u32,
    /// Guest address of the block.
    pub vaddr: u64,
    /// Increments per execution.
    pub counts: Vec<(u16, u8, u32)>,
}

/// Counts of one guest thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadTally {
    /// Thread number, in start order (0: the main thread).
    pub thread: u32,
    /// vCPU index it ran on (QEMU reuses the index of a thread that exited).
    pub vcpu: u32,
    /// Counter vector per region.
    pub regions: Vec<[u64; N_COUNTERS]>,
}

impl ThreadTally {
    /// All regions summed.
    pub fn total(&self) -> [u64; N_COUNTERS] {
        sum(self.regions.iter())
    }
}

/// Counts of a run.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// One entry per guest thread, in start order.
    pub threads: Vec<ThreadTally>,
    /// Per translation-block start address (summed over vCPUs and translations), when asked.
    pub tbs: Vec<TbCounts>,
}

fn sum<'a>(it: impl Iterator<Item = &'a [u64; N_COUNTERS]>) -> [u64; N_COUNTERS] {
    let mut t = [0u64; N_COUNTERS];
    for v in it {
        for (a, b) in t.iter_mut().zip(v) {
            *a += b;
        }
    }
    t
}

impl Tally {
    /// Totals over every vCPU and region.
    pub fn total(&self) -> [u64; N_COUNTERS] {
        sum(self.threads.iter().flat_map(|t| t.regions.iter()))
    }

    /// Totals of one region over every vCPU.
    pub fn region(&self, r: usize) -> [u64; N_COUNTERS] {
        sum(self.threads.iter().filter_map(|t| t.regions.get(r)))
    }
}

/// Where executions come from.
pub trait Executions {
    /// Guest threads: (thread number, vCPU index).
    fn threads(&self) -> Vec<(u32, u32)>;
    /// Executions of block `tb` by thread `thread`. Counts kept by inline adds (before a
    /// second thread existed) belong to thread 0.
    fn executions(&self, thread: u32, tb: &TbStatic) -> u64;
    /// Counts made at run time by `thread` in `region` (bytes from access reports, FLOPs
    /// from predicates), a counter vector.
    fn dynamic(&self, thread: u32, region: usize) -> [u64; N_COUNTERS];
}

/// Multiplies out the executions.
pub fn tally(tbs: &[TbStatic], regions: usize, src: &impl Executions, with_tbs: bool) -> Tally {
    let regions = regions.max(1);
    let mut per_pc: BTreeMap<u64, TbCounts> = BTreeMap::new();
    let mut threads = Vec::new();
    let mut threads_in = src.threads();
    if !threads_in.iter().any(|v| v.0 == 0) {
        threads_in.push((0, 0));
    }
    threads_in.sort();
    for (thread, vcpu) in threads_in {
        let mut cells = vec![[0u64; N_COUNTERS]; regions];
        for tb in tbs {
            let execs = src.executions(thread, tb);
            if execs == 0 {
                continue;
            }
            let entry = with_tbs.then(|| {
                per_pc.entry(tb.vaddr).or_insert_with(|| TbCounts {
                    pc: tb.vaddr,
                    executions: 0,
                    counts: [0; N_COUNTERS],
                })
            });
            let mut tb_counts = [0u64; N_COUNTERS];
            for &(r, k, x) in &tb.counts {
                let add = execs * u64::from(x);
                if let Some(cell) = cells.get_mut(r as usize) {
                    cell[k as usize] += add;
                }
                tb_counts[k as usize] += add;
            }
            if let Some(e) = entry {
                e.executions += execs;
                for (a, b) in e.counts.iter_mut().zip(tb_counts) {
                    *a += b;
                }
            }
        }
        for (r, cell) in cells.iter_mut().enumerate() {
            for (a, b) in cell.iter_mut().zip(src.dynamic(thread, r)) {
                *a += b;
            }
        }
        threads.push(ThreadTally {
            thread,
            vcpu,
            regions: cells,
        });
    }
    Tally {
        threads,
        tbs: per_pc.into_values().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::Counter;

    struct Fake;
    impl Executions for Fake {
        fn threads(&self) -> Vec<(u32, u32)> {
            vec![(1, 1), (0, 0)]
        }
        fn executions(&self, vcpu: u32, tb: &TbStatic) -> u64 {
            match (vcpu, tb.id) {
                (0, 0) => 10,
                (1, 0) => 5,
                (1, 1) => 2,
                _ => 0,
            }
        }
        fn dynamic(&self, vcpu: u32, region: usize) -> [u64; N_COUNTERS] {
            let mut v = [0; N_COUNTERS];
            if vcpu == 1 && region == 1 {
                v[Counter::BytesStored as usize] = 100;
                v[Counter::BytesDynamic as usize] = 100;
            }
            v
        }
    }

    #[test]
    fn multiplies_per_vcpu_and_region() {
        let f = Counter::Flops as u8;
        let tbs = vec![
            TbStatic {
                id: 0,
                vaddr: 0x100,
                counts: vec![(0, f, 4)],
            },
            TbStatic {
                id: 1,
                vaddr: 0x200,
                counts: vec![(1, f, 3), (0, f, 1)],
            },
        ];
        let t = tally(&tbs, 2, &Fake, true);
        assert_eq!(t.threads.len(), 2);
        assert_eq!((t.threads[0].thread, t.threads[0].vcpu), (0, 0));
        assert_eq!(t.threads[0].total()[Counter::Flops as usize], 40);
        assert_eq!(t.threads[1].regions[0][Counter::Flops as usize], 20 + 2);
        assert_eq!(t.threads[1].regions[1][Counter::Flops as usize], 6);
        assert_eq!(t.threads[1].regions[1][Counter::BytesStored as usize], 100);
        assert_eq!(t.total()[Counter::Flops as usize], 40 + 22 + 6);
        assert_eq!(t.region(1)[Counter::BytesDynamic as usize], 100);
        assert_eq!(t.tbs.len(), 2);
        assert_eq!(t.tbs[0].executions, 15);
        assert_eq!(t.tbs[1].counts[Counter::Flops as usize], 8);
    }
}
