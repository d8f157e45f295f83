//! Per-vCPU counting state.
//!
//! In user mode QEMU runs each guest thread on a vCPU of its own (index 0 for the main
//! thread; an index is reused only after its thread has exited), so a vCPU's state is
//! written by one host thread at a time, with plain loads and stores: no locks and no
//! atomic read-modify-write on the hot path. Readers (the exit callback, the snapshot
//! thread) only read; a snapshot taken while the guest runs is approximate by nature.
//!
//! vCPUs beyond [`MAX_VCPUS`] share one more slot, updated with atomic adds (exact, slower).
//!
//! A guest thread that exits gives its vCPU index back to QEMU, which hands it to the next
//! thread it creates. So that each guest thread keeps counts of its own, the exit hook
//! [`retire`]s the slot: its counts move to a compact record of the finished thread and the
//! next thread on that index starts from a fresh slot. Threads are numbered in the order
//! they start (0: the main thread).

use std::collections::BTreeMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// vCPUs with a slot of their own.
pub const MAX_VCPUS: usize = 1024;
const CHUNK_BITS: u32 = 12;
/// Translation-block counters per chunk.
pub const CHUNK: usize = 1 << CHUNK_BITS;
/// Chunks per vCPU: at most `CHUNK * MAX_CHUNKS` (16 Mi) translation blocks are counted per
/// vCPU; executions of later ones are counted in [`lost`].
pub const MAX_CHUNKS: usize = 4096;
/// Counters per region filled at run time (from QEMU's access reports, and the FLOPs of
/// predicated SVE instructions): a whole counter vector, indexed by [`crate::isa::Counter`].
pub const N_DYN: usize = crate::isa::N_COUNTERS;

type Chunk = [AtomicU64; CHUNK];

/// The counting state of one vCPU (or of the shared overflow slot).
pub struct Vcpu {
    /// Executions per translation block id, in chunks allocated on first use.
    execs: Box<[AtomicPtr<Chunk>]>,
    /// Counts made at run time (access reports, predicates), per region.
    dynamic: Box<[[AtomicU64; N_DYN]]>,
    /// Number of the guest thread on this slot, in start order (0: the main thread); the
    /// shared overflow slot holds several.
    pub thread: u32,
    /// Bytes of the current execution of a clipped instruction still to pass to the stream:
    /// loads, stores.
    pub clip: [AtomicU32; 2],
    shared: bool,
}

static SLOTS: [AtomicPtr<Vcpu>; MAX_VCPUS + 1] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_VCPUS + 1];
static N_REGIONS: AtomicUsize = AtomicUsize::new(1);
static LOST: AtomicU64 = AtomicU64::new(0);
static NEXT_THREAD: AtomicU32 = AtomicU32::new(0);
/// Readers of other vCPUs' slots hold it shared; retiring a slot (freeing it) exclusive.
static REGISTRY: RwLock<Vec<Finished>> = RwLock::new(Vec::new());

/// The counts of a guest thread that has exited.
#[derive(Debug, Clone, Default)]
pub struct Finished {
    /// Thread number (start order).
    pub thread: u32,
    /// The vCPU index it ran on.
    pub vcpu: u32,
    /// Executions per translation block id (those executed at least once).
    pub execs: BTreeMap<u32, u64>,
    /// Dynamic counters per region.
    pub dynamic: Vec<[u64; N_DYN]>,
}

/// Set the number of counting regions (before the guest runs).
pub fn set_regions(n: usize) {
    N_REGIONS.store(n.max(1), Ordering::Relaxed);
}

/// Executions that could not be counted because a vCPU translated more than
/// `CHUNK * MAX_CHUNKS` blocks.
pub fn lost() -> u64 {
    LOST.load(Ordering::Relaxed)
}

/// The slot of `vcpu` and whether it is the shared overflow slot.
#[inline(always)]
fn slot_index(vcpu: u32) -> usize {
    (vcpu as usize).min(MAX_VCPUS)
}

/// The state of `vcpu`, created on first use.
#[inline(always)]
pub fn get(vcpu: u32) -> &'static Vcpu {
    let i = slot_index(vcpu);
    let p = SLOTS[i].load(Ordering::Acquire);
    if p.is_null() {
        create(i)
    } else {
        // SAFETY: slots are allocated once and never freed.
        unsafe { &*p }
    }
}

#[cold]
#[inline(never)]
fn create(i: usize) -> &'static Vcpu {
    let regions = N_REGIONS.load(Ordering::Relaxed);
    let fresh = Box::into_raw(Box::new(Vcpu {
        execs: (0..MAX_CHUNKS)
            .map(|_| AtomicPtr::new(std::ptr::null_mut()))
            .collect(),
        dynamic: (0..regions)
            .map(|_| [const { AtomicU64::new(0) }; N_DYN])
            .collect(),
        thread: NEXT_THREAD.fetch_add(1, Ordering::Relaxed),
        clip: [AtomicU32::new(0), AtomicU32::new(0)],
        shared: i == MAX_VCPUS,
    }));
    match SLOTS[i].compare_exchange(
        std::ptr::null_mut(),
        fresh,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        // SAFETY: just published, never freed.
        Ok(_) => unsafe { &*fresh },
        Err(existing) => {
            // Only the overflow slot can race; the loser's copy was never shared.
            // SAFETY: `fresh` came from Box::into_raw above and nobody else saw it.
            drop(unsafe { Box::from_raw(fresh) });
            // SAFETY: published by the winner, never freed.
            unsafe { &*existing }
        }
    }
}

/// Calls `f` with every slot in use ((vCPU index, state); the overflow slot has index
/// `MAX_VCPUS`) and the finished threads, while no slot can be retired.
pub fn with_all<R>(f: impl FnOnce(&[(u32, &Vcpu)], &[Finished]) -> R) -> R {
    let finished = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    let live: Vec<(u32, &Vcpu)> = SLOTS
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let p = p.load(Ordering::Acquire);
            // SAFETY: a slot is only freed by `retire`, which waits for this lock.
            (!p.is_null()).then(|| (i as u32, unsafe { &*p }))
        })
        .collect();
    f(&live, &finished)
}

/// The guest thread on `vcpu` has exited (called by that thread, which runs no more guest
/// code, before QEMU can give the index to another thread): its counts move to a finished
/// record and the slot is freed.
pub fn retire(vcpu: u32) {
    let i = slot_index(vcpu);
    if i == MAX_VCPUS {
        return; // the shared slot stays
    }
    let mut finished = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    let p = SLOTS[i].swap(std::ptr::null_mut(), Ordering::AcqRel);
    if p.is_null() {
        return;
    }
    // SAFETY: unpublished above; readers of other slots hold REGISTRY, which we hold
    // exclusively; the owner thread is leaving.
    let v = unsafe { Box::from_raw(p) };
    let mut execs = BTreeMap::new();
    for (c, chunk) in v.execs.iter().enumerate() {
        let cp = chunk.load(Ordering::Acquire);
        if cp.is_null() {
            continue;
        }
        // SAFETY: allocated by `new_chunk` from a Box, now owned here alone.
        let ch = unsafe { Box::from_raw(cp) };
        for (k, cell) in ch.iter().enumerate() {
            let n = cell.load(Ordering::Relaxed);
            if n != 0 {
                execs.insert((c * CHUNK + k) as u32, n);
            }
        }
    }
    finished.push(Finished {
        thread: v.thread,
        vcpu,
        execs,
        dynamic: (0..v.dynamic.len()).map(|r| v.dynamic(r)).collect(),
    });
}

#[inline(always)]
fn add(cell: &AtomicU64, n: u64, shared: bool) {
    if shared {
        cell.fetch_add(n, Ordering::Relaxed);
    } else {
        // One writer: a plain load and store.
        cell.store(
            cell.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }
}

impl Vcpu {
    /// Counts one execution of translation block `id`.
    #[inline(always)]
    pub fn count_tb(&self, id: u32) {
        let c = (id >> CHUNK_BITS) as usize;
        let Some(chunk) = self.execs.get(c) else {
            LOST.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let mut p = chunk.load(Ordering::Acquire);
        if p.is_null() {
            p = self.new_chunk(c);
        }
        // SAFETY: chunks are never freed once published.
        let cell = unsafe { &(*p)[id as usize & (CHUNK - 1)] };
        add(cell, 1, self.shared);
    }

    #[cold]
    #[inline(never)]
    fn new_chunk(&self, c: usize) -> *mut Chunk {
        let fresh: Box<Chunk> = Box::new([const { AtomicU64::new(0) }; CHUNK]);
        let fresh = Box::into_raw(fresh);
        match self.execs[c].compare_exchange(
            std::ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => fresh,
            Err(existing) => {
                // SAFETY: never shared.
                drop(unsafe { Box::from_raw(fresh) });
                existing
            }
        }
    }

    /// Executions of translation block `id` by this vCPU so far.
    pub fn executions(&self, id: u32) -> u64 {
        let c = (id >> CHUNK_BITS) as usize;
        let p = self
            .execs
            .get(c)
            .map_or(std::ptr::null_mut(), |a| a.load(Ordering::Acquire));
        if p.is_null() {
            return 0;
        }
        // SAFETY: as in `count_tb`.
        unsafe { (*p)[id as usize & (CHUNK - 1)].load(Ordering::Relaxed) }
    }

    /// Adds `n` to counter `k` (a [`crate::isa::Counter`] index) of `region`.
    #[inline(always)]
    pub fn add_dynamic(&self, region: usize, k: usize, n: u64) {
        if let Some(r) = self.dynamic.get(region) {
            add(&r[k], n, self.shared);
        }
    }

    /// The dynamic counters of `region`.
    pub fn dynamic(&self, region: usize) -> [u64; N_DYN] {
        self.dynamic.get(region).map_or([0; N_DYN], |r| {
            std::array::from_fn(|k| r[k].load(Ordering::Relaxed))
        })
    }

    /// Whether this is the slot shared by the vCPUs beyond `MAX_VCPUS`.
    pub fn is_shared(&self) -> bool {
        self.shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_vcpu_and_block() {
        set_regions(2);
        let a = get(3);
        let b = get(4);
        for _ in 0..5 {
            a.count_tb(7);
        }
        b.count_tb(7);
        b.count_tb(CHUNK as u32 + 1);
        a.add_dynamic(1, 9, 64);
        assert_eq!(a.executions(7), 5);
        assert_eq!(b.executions(7), 1);
        assert_eq!(b.executions(CHUNK as u32 + 1), 1);
        assert_eq!(a.executions(8), 0);
        assert_eq!(a.dynamic(1)[9], 64);
        assert_eq!(a.dynamic(1).iter().sum::<u64>(), 64);
        assert!(with_all(|live, _| live.iter().any(|(i, _)| *i == 3)));
    }

    #[test]
    fn a_retired_index_starts_afresh() {
        set_regions(1);
        let first = get(9);
        first.count_tb(3);
        first.count_tb(3);
        first.add_dynamic(0, 1, 8);
        let n = first.thread;
        retire(9);
        let second = get(9);
        assert_ne!(second.thread, n);
        assert_eq!(second.executions(3), 0);
        second.count_tb(3);
        with_all(|live, done| {
            let f = done
                .iter()
                .find(|f| f.thread == n)
                .expect("finished record");
            assert_eq!((f.vcpu, f.execs.get(&3).copied()), (9, Some(2)));
            assert_eq!((f.dynamic[0][1], f.dynamic[0].iter().sum::<u64>()), (8, 8));
            assert!(live.iter().any(|(i, v)| *i == 9 && v.executions(3) == 1));
        });
    }

    #[test]
    fn overflow_vcpus_share_a_slot_exactly() {
        let s = get(MAX_VCPUS as u32 + 5);
        assert!(s.is_shared());
        assert!(std::ptr::eq(s, get(MAX_VCPUS as u32 + 9)));
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..10_000 {
                        get(MAX_VCPUS as u32 + 1).count_tb(2);
                    }
                });
            }
        });
        assert_eq!(s.executions(2), 40_000);
    }
}
