//! A thread's counters (one flat array the instrumented code adds to) and the report made
//! of them.

use std::collections::BTreeMap;

use hpcscope_plugin_format::report::{
    ChainCounts, FORMAT, MemWidthCounts, PluginOutput, RegionCounts, TbCounts, ThreadCounts,
    Totals, WidthCounts,
};
use hpcscope_x86_lanes::chain::{Chain, ChainOp};

use dynamorio_sys as dr;

use crate::classify::{Class, Info, Op, Precision};

/// Named counters, first in the array.
#[derive(Debug, Clone, Copy)]
pub enum Slot {
    Instructions,
    Loads,
    Stores,
    BytesLoaded,
    BytesStored,
    BytesDynamic,
    FpInstructions,
    Flops,
    FlopsExcluded,
    FmaInstructions,
    ClassFp,
    ClassLoad,
    ClassStore,
    ClassBranch,
    ClassOther,
    ClassInt,
    /// Other instructions on loops' dependency chains, per iteration.
    ChainOther,
    /// Iterations of loops with a dependency chain.
    ChainIterations,
    /// Iterations of loops whose chain is not counted: their exit block was built before
    /// the loop was seen, so it has no counter to give the loop's entries.
    ChainIterationsLeftOut,
    /// Operands written through set sampling's gate, and their bytes (gated or not: the
    /// gate's left-out counts are derived from them, see [`crate::take_left_out`]; not
    /// reported).
    GatedAccesses,
    GatedBytes,
}
const NAMED: usize = Slot::GatedBytes as usize + 1;

/// FP widths: scalar, 128, 256, 512 bits.
const FP_WIDTHS: [Option<u32>; 4] = [None, Some(128), Some(256), Some(512)];
const FP_SLOTS: usize = 2 * FP_WIDTHS.len();
const FP_INSNS: usize = NAMED;
const FP_FLOPS: usize = FP_INSNS + FP_SLOTS;
/// Of the FP instructions of each precision and width, the divides and the square roots.
const FP_DIV: usize = FP_FLOPS + FP_SLOTS;
const FP_SQRT: usize = FP_DIV + FP_SLOTS;

/// Access widths in bytes (all memory operands of one direction of an instruction
/// together), then `other`: the QEMU plugin's buckets.
const MEM_BYTES: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];
const MEM_SLOTS: usize = MEM_BYTES.len() + 1;
/// FP instructions on loops' dependency chains, per operation ([`ChainOp::ALL`]'s order),
/// precision and width.
const FP_CHAIN: usize = FP_SQRT + FP_SLOTS;
const MEM_LOADS: usize = FP_CHAIN + ChainOp::ALL.len() * FP_SLOTS;
const MEM_LOAD_BYTES: usize = MEM_LOADS + MEM_SLOTS;
const MEM_STORES: usize = MEM_LOAD_BYTES + MEM_SLOTS;
const MEM_STORE_BYTES: usize = MEM_STORES + MEM_SLOTS;

/// Length of a thread's counter array.
pub const N: usize = MEM_STORE_BYTES + MEM_SLOTS;

/// A thread's block execution counters: [`crate::MAX_BLOCKS`] words mapped by the kernel,
/// zero until touched, so a thread pays only for the blocks it runs. (From DynamoRIO's
/// heap, the 8 MiB were zeroed page by page at each thread's start: 4 of the 19 ms an
/// empty program took under the client.)
pub struct Executions(*mut u64);

impl Executions {
    const BYTES: usize = crate::MAX_BLOCKS * 8;

    fn new() -> Self {
        // SAFETY: a fresh private mapping, zeroed (DynamoRIO's guarantee), page aligned.
        let p = unsafe {
            dr::dr_raw_mem_alloc(
                Self::BYTES,
                dr::DR_MEMPROT_READ | dr::DR_MEMPROT_WRITE,
                std::ptr::null_mut(),
            )
        };
        if p.is_null() {
            eprintln!("hpcscope-dr-client: cannot map a thread's execution counters");
            // SAFETY: ends the process from DynamoRIO.
            unsafe { dr::dr_abort_with_code(3) };
        }
        Executions(p.cast())
    }
}

// SAFETY: the mapping is owned: the instrumented code of one thread writes it, and the
// thread that runs the process exit reads it (under GLOBAL's lock) after that.
unsafe impl Send for Executions {}

impl std::ops::Deref for Executions {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        // SAFETY: MAX_BLOCKS words, mapped for as long as self lives.
        unsafe { std::slice::from_raw_parts(self.0, crate::MAX_BLOCKS) }
    }
}

impl std::ops::DerefMut for Executions {
    fn deref_mut(&mut self) -> &mut [u64] {
        // SAFETY: as in deref, and self is borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.0, crate::MAX_BLOCKS) }
    }
}

impl Drop for Executions {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new, no longer used.
        unsafe { dr::dr_raw_mem_free(self.0.cast(), Self::BYTES) };
    }
}

/// One thread's counters: one array of [`N`] per region (one in all without regions).
/// The instrumented code adds to them (only that thread does); they are read at process
/// exit.
pub struct Counters(pub Box<[u64]>, pub Executions);

impl Counters {
    pub fn new(regions: usize) -> Self {
        Counters(
            vec![0; N * regions.max(1)].into_boxed_slice(),
            Executions::new(),
        )
    }

    /// Adds the loops' chains: per loop, its counted iterations ([`chain_iterations`]) times
    /// its chain, in its region. A loop whose exit block was never given its own counter
    /// (built before the loop was seen) is left out; its iterations are counted apart.
    pub fn add_loop_chains(
        &mut self,
        loops: &[(u32, usize, crate::LoopChain)],
        exits: Option<&std::collections::HashMap<u64, Option<u32>>>,
    ) {
        // One loop may close several blocks (its first iteration in the block that enters
        // it, the others in a block of their own): its iterations are theirs together.
        let mut by_exit: BTreeMap<u64, (u64, usize, &crate::LoopChain)> = BTreeMap::new();
        for (id, r, l) in loops {
            let iterations = self.1[*id as usize];
            match l.exit {
                Some(exit) => by_exit.entry(exit).or_insert((0, *r, l)).0 += iterations,
                // Closed by an unconditional jump: no entry count.
                None => {
                    if (r + 1) * N <= self.0.len() {
                        self.0[r * N + Slot::ChainIterationsLeftOut as usize] += iterations;
                    }
                }
            }
        }
        for (exit, (iterations, r, l)) in by_exit {
            let Some(Some(exit)) = exits.and_then(|e| e.get(&exit)) else {
                if (r + 1) * N <= self.0.len() {
                    self.0[r * N + Slot::ChainIterationsLeftOut as usize] += iterations;
                }
                continue;
            };
            let n = chain_iterations(iterations, self.1[*exit as usize], l.body);
            if n > 0 && (r + 1) * N <= self.0.len() {
                add_chain(&mut self.0[r * N..(r + 1) * N], &l.chain, n);
            }
        }
    }

    /// Adds the blocks' counts times their executions to the counters.
    pub fn multiply_out(&mut self, blocks: &[Vec<(u32, u64)>]) {
        for (id, counts) in blocks.iter().enumerate() {
            let execs = self.1[id];
            if execs == 0 {
                continue;
            }
            for &(slot, v) in counts {
                self.0[slot as usize] += execs * v;
            }
            self.1[id] = 0;
        }
    }

    /// Region `r`'s array.
    pub fn region(&self, r: usize) -> &[u64; N] {
        self.0[r * N..(r + 1) * N].try_into().expect("N counters")
    }
}

fn fp_slot(p: Precision, bits: Option<u32>) -> usize {
    let w = FP_WIDTHS
        .iter()
        .position(|w| *w == bits)
        .unwrap_or(FP_WIDTHS.len() - 1);
    p as usize * FP_WIDTHS.len() + w
}

/// Slot of the FLOPs of precision `p` at width `bits`.
pub fn fp_flops_slot(p: Precision, bits: Option<u32>) -> usize {
    FP_FLOPS + fp_slot(p, bits)
}

fn mem_slot(bytes: u32) -> usize {
    MEM_BYTES
        .iter()
        .position(|b| *b == bytes)
        .unwrap_or(MEM_SLOTS - 1)
}

/// Adds one execution of an instruction's counts known before it runs.
pub fn add_static(v: &mut [u64], info: &Info, counted_lanes: Option<u32>) {
    v[Slot::Instructions as usize] += 1;
    v[match info.class {
        Class::Fp => Slot::ClassFp,
        Class::Load => Slot::ClassLoad,
        Class::Store => Slot::ClassStore,
        Class::Branch => Slot::ClassBranch,
        Class::Int => Slot::ClassInt,
        Class::Other => Slot::ClassOther,
    } as usize] += 1;
    // A masked access's bytes are counted at run time from its mask.
    let masked_mem = info.mask.is_some() && info.mask_elem_bytes.is_some() && info.fp.is_none();
    if info.loads {
        v[Slot::Loads as usize] += 1;
        if !info.dynamic_mem && !masked_mem {
            v[Slot::BytesLoaded as usize] += u64::from(info.load_bytes);
            v[MEM_LOADS + mem_slot(info.load_bytes)] += 1;
            v[MEM_LOAD_BYTES + mem_slot(info.load_bytes)] += u64::from(info.load_bytes);
        }
    }
    if info.stores {
        v[Slot::Stores as usize] += 1;
        if !info.dynamic_mem && !masked_mem {
            v[Slot::BytesStored as usize] += u64::from(info.store_bytes);
            v[MEM_STORES + mem_slot(info.store_bytes)] += 1;
            v[MEM_STORE_BYTES + mem_slot(info.store_bytes)] += u64::from(info.store_bytes);
        }
    }
    if let Some(fp) = info.fp {
        v[Slot::FpInstructions as usize] += 1;
        let slot = fp_slot(fp.precision, fp.vector_bits);
        v[FP_INSNS + slot] += 1;
        if fp.flops_per_lane == 2 {
            v[Slot::FmaInstructions as usize] += 1;
        }
        // Instructions, masked or not (their FLOPs follow the mask).
        match fp.op {
            Op::Div => v[FP_DIV + slot] += 1,
            Op::Sqrt => v[FP_SQRT + slot] += 1,
            Op::Arith => {}
        }
        if info.mask.is_none() {
            // The lanes the FLOP rule for reductions counts (every lane by default).
            let lanes = counted_lanes.unwrap_or(fp.lanes()).min(fp.lanes());
            let f = u64::from(lanes * fp.flops_per_lane);
            v[Slot::Flops as usize] += f;
            v[Slot::FlopsExcluded as usize] += u64::from((fp.lanes() - lanes) * fp.flops_per_lane);
            v[fp_flops_slot(fp.precision, fp.vector_bits)] += f;
        }
    }
}

/// Adds `n` iterations of a loop's dependency chain ([`hpcscope_x86_lanes::chain`]).
pub fn add_chain(v: &mut [u64], chain: &Chain, n: u64) {
    v[Slot::ChainIterations as usize] += n;
    v[Slot::ChainOther as usize] += n * u64::from(chain.other);
    for (step, count) in &chain.fp {
        let p = if step.element_bits == 32 {
            Precision::F32
        } else {
            Precision::F64
        };
        let op = ChainOp::ALL
            .iter()
            .position(|o| *o == step.op)
            .expect("every op");
        v[FP_CHAIN + op * FP_SLOTS + fp_slot(p, step.vector_bits)] += n * u64::from(*count);
    }
}

/// Instructions the out-of-order window holds (a current core's reorder buffer: 256 on
/// Zen 3, 320 on Zen 4, 512 on Golden Cove): when a loop is entered again, the iterations
/// of its next entry that fit in it start while the last ones run, so a chain restarted at
/// each entry (a short row's sum) is hidden behind the previous entry's work.
pub const WINDOW: u64 = 256;

/// Iterations of a loop whose chain counts: those beyond the first `WINDOW / body`
/// iterations of each entry (entries: executions of the loop's exit block).
pub fn chain_iterations(iterations: u64, exits: u64, body: usize) -> u64 {
    let hidden = (WINDOW / (body.max(1) as u64)).max(1);
    iterations.saturating_sub(exits.saturating_mul(hidden))
}

/// The totals of a counter array, as the QEMU plugin's report has them.
pub fn totals(v: &[u64; N]) -> Totals {
    let mut fp_by_width = BTreeMap::new();
    for p in [Precision::F32, Precision::F64] {
        for w in FP_WIDTHS {
            let s = fp_slot(p, w);
            if v[FP_INSNS + s] == 0 {
                continue;
            }
            let width = w.map_or_else(|| "scalar".to_string(), |b| b.to_string());
            fp_by_width.insert(
                format!("{}_{width}", p.name()),
                WidthCounts {
                    instructions: v[FP_INSNS + s],
                    flops: v[FP_FLOPS + s],
                    div: v[FP_DIV + s],
                    sqrt: v[FP_SQRT + s],
                    chain: {
                        let c = |op: usize| v[FP_CHAIN + op * FP_SLOTS + s];
                        ChainCounts {
                            add: c(0),
                            mul: c(1),
                            fma: c(2),
                            div: c(3),
                            sqrt: c(4),
                        }
                    },
                },
            );
        }
    }
    let mut mem_by_width = BTreeMap::new();
    for s in 0..MEM_SLOTS {
        let m = MemWidthCounts {
            loads: v[MEM_LOADS + s],
            bytes_loaded: v[MEM_LOAD_BYTES + s],
            stores: v[MEM_STORES + s],
            bytes_stored: v[MEM_STORE_BYTES + s],
        };
        if m.loads + m.stores > 0 {
            let name = MEM_BYTES
                .get(s)
                .map_or_else(|| "other".to_string(), |b| (b * 8).to_string());
            mem_by_width.insert(name, m);
        }
    }
    let c = |s: Slot| v[s as usize];
    let mut classes = BTreeMap::new();
    for (k, s) in [
        ("fp", Slot::ClassFp),
        ("load", Slot::ClassLoad),
        ("store", Slot::ClassStore),
        ("branch", Slot::ClassBranch),
        ("int", Slot::ClassInt),
        ("other", Slot::ClassOther),
    ] {
        classes.insert(k.to_string(), c(s));
    }
    Totals {
        instructions: c(Slot::Instructions),
        loads: c(Slot::Loads),
        stores: c(Slot::Stores),
        bytes_loaded: c(Slot::BytesLoaded),
        bytes_stored: c(Slot::BytesStored),
        bytes_dynamic: c(Slot::BytesDynamic),
        bytes_unreported: 0,
        fp_instructions: c(Slot::FpInstructions),
        flops: c(Slot::Flops),
        flops_excluded: c(Slot::FlopsExcluded),
        fma_instructions: c(Slot::FmaInstructions),
        fp_by_width,
        mem_by_width,
        classes,
        chain_other: c(Slot::ChainOther),
        chain_iterations: c(Slot::ChainIterations),
        chain_iterations_left_out: c(Slot::ChainIterationsLeftOut),
    }
}

/// The per-block breakdown (`tbs=on`): each block's executions over every thread, read
/// before the counters are multiplied out, times its static counts (every region's);
/// blocks that never ran are left out.
pub fn tb_counts(
    threads: &[(u32, Box<Counters>)],
    blocks: &[Vec<(u32, u64)>],
    pcs: &[u64],
) -> Vec<TbCounts> {
    let mut out = Vec::new();
    for (id, (counts, pc)) in blocks.iter().zip(pcs).enumerate() {
        let executions: u64 = threads.iter().map(|(_, c)| c.1[id]).sum();
        if executions == 0 {
            continue;
        }
        let mut v = [0u64; N];
        for &(slot, n) in counts {
            v[slot as usize % N] += n;
        }
        let c = |s: Slot| executions * v[s as usize];
        out.push(TbCounts {
            pc: *pc,
            executions,
            instructions: c(Slot::Instructions),
            fp_instructions: c(Slot::FpInstructions),
            flops: c(Slot::Flops),
            loads: c(Slot::Loads),
            stores: c(Slot::Stores),
            bytes_loaded: c(Slot::BytesLoaded),
            bytes_stored: c(Slot::BytesStored),
        });
    }
    out
}

fn add(sum: &mut [u64; N], v: &[u64; N]) {
    for (a, b) in sum.iter_mut().zip(v.iter()) {
        *a += b;
    }
}

/// The report of a run: every thread's totals and their sum, and per region (run-time
/// ranges `regions`; none: the whole program in one array).
pub fn report(
    threads: &[(u32, Box<Counters>)],
    regions: &[(u64, u64)],
    load_bias: u64,
) -> PluginOutput {
    let mut threads: Vec<&(u32, Box<Counters>)> = threads.iter().collect();
    threads.sort_by_key(|t| t.0);
    let n_regions = regions.len().max(1);
    let mut sum = [0u64; N];
    let mut per_thread = Vec::new();
    let mut per_region: Vec<RegionCounts> = regions
        .iter()
        .map(|&(start, end)| RegionCounts {
            start,
            end,
            ..RegionCounts::default()
        })
        .collect();
    for (t, c) in threads.iter().copied() {
        // The thread has exited (or the process is exiting): nothing adds any more.
        let mut mine = [0u64; N];
        for r in 0..n_regions {
            add(&mut mine, c.region(r));
            if let Some(rc) = per_region.get_mut(r) {
                rc.threads.push(ThreadCounts {
                    thread: *t,
                    vcpu: *t,
                    totals: totals(c.region(r)),
                });
            }
        }
        add(&mut sum, &mine);
        per_thread.push(ThreadCounts {
            thread: *t,
            vcpu: *t,
            totals: totals(&mine),
        });
    }
    for (r, rc) in per_region.iter_mut().enumerate() {
        let mut s = [0u64; N];
        for x in &threads {
            add(&mut s, x.1.region(r));
        }
        rc.totals = totals(&s);
    }
    PluginOutput {
        format: FORMAT.to_string(),
        predication: Some("active_lanes".to_string()),
        load_bias,
        counting: Some("native_per_thread".to_string()),
        totals: totals(&sum),
        threads: per_thread,
        regions: per_region,
        ..PluginOutput::default()
    }
}
