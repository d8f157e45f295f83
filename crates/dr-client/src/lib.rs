//! hpcscope's DynamoRIO client: counts a program's instructions, FP instructions and FLOPs
//! by precision and vector width, and loads and stores by access width, per thread, while
//! the program runs natively; writes at exit the counts report the QEMU plugin writes
//! ([`hpcscope_plugin_format::report::PluginOutput`]), so `hpcscope mix` reads it unchanged.
//!
//! Client arguments (`-client_lib 'libhpcscope_dr_client.so;0;ARGS'`, comma-separated):
//! `out=PATH` (the report; required), `region=START-END[+...]` (count only the
//! instructions in these link-time ranges of the main binary, as the QEMU plugin's
//! `region=`), `memfd=N` (the memory stream to this inherited descriptor, see [`stream`]),
//! `coalesce=BYTES` and `sample=LINE:MOD:HEX` (as the QEMU plugin's), `tbs=on` (the
//! per-block breakdown: each block's executions and counts, for `--per-function`),
//! `scope=START-END[+...]` (count only while one of these functions runs, callees
//! included, as the QEMU plugin's `scope=`: see [`scope_enter`]), `owner=PID` (the process
//! id of whoever started the program: see below).
//!
//! One process is characterized, the one started. DynamoRIO follows the program into the
//! processes it creates: a child of `fork()` runs on in a copy of the client, and a program
//! a child `exec`s is injected again (the environment carries the injection) with the same
//! arguments. Both would write their own report over the parent's and their records into
//! its stream. A program whose parent is not `owner=` (an exec'd descendant) is left
//! uncounted; a forked child stops streaming and reports nothing; the parent counts the
//! processes it creates (`forked_processes`, as the QEMU plugin does).
//!
//! How it counts: each basic block's counts are known when DynamoRIO builds it
//! ([`classify`]). Blocks with the same counts share one execution counter per thread; the
//! code DynamoRIO runs adds 1 to it (`add [counters + 8 id], 1`, the thread's counters'
//! address read from a raw TLS slot: no call out of the code cache), and the counts are
//! multiplied out at exit. A masked AVX-512 FP instruction adds its FLOPs from its mask
//! register at run time (`kmov`, `and`, `popcnt`, inline), and so does a masked load or
//! store its bytes.

mod classify;
mod counters;
mod stream;

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

use dynamorio_sys as dr;

use classify::{Info, classify};
use counters::{Counters, N, Slot};

/// DynamoRIO checks this symbol's value against its own version before loading a client.
#[unsafe(no_mangle)]
#[used]
pub static _USES_DR_VERSION_: c_int = dr::_USES_DR_VERSION_ as c_int;

/// The client's code (its C library copy's `memcpy`, `strlen`..., whose AVX-512 variants
/// the private loader picks on an AVX-512 host) uses AVX-512 registers: DynamoRIO then
/// keeps the program's ZMM and opmask registers across its own code from the start,
/// rather than from the first AVX-512 instruction it sees the program run (it did not see
/// glibc's `vpbroadcastb ... %ymm16` as one, and printf printed its format unformatted).
///
/// DynamoRIO takes the flag as it is, when it loads the client, before any code of ours
/// runs: on a CPU without AVX-512 (an AMD Zen 3) it then saved ZMM registers and every
/// program died of SIGILL before its first instruction. So the flag is fixed at build time:
/// scripts/build-dynamorio.sh builds the client twice, the second time with the feature
/// `no-avx512-state` (flag 0), and the engine loads the build that fits the CPU.
#[unsafe(no_mangle)]
#[used]
pub static _DR_CLIENT_AVX512_CODE_IN_USE_: u8 = if cfg!(feature = "no-avx512-state") {
    0
} else {
    1
};

struct Global {
    out: String,
    /// Run-time ranges counted (none: the whole program).
    regions: Vec<(u64, u64)>,
    /// Every thread's counters, in start order (kept to the end: the report is written at
    /// process exit).
    threads: Vec<(u32, Box<Counters>)>,
    load_bias: u64,
}

static GLOBAL: Mutex<Option<Global>> = Mutex::new(None);
/// The counted ranges, read by the instrumentation (set once, before the program runs).
static REGIONS: std::sync::OnceLock<Vec<(u64, u64)>> = std::sync::OnceLock::new();

/// `scope=`: the run-time ranges of the functions counted while they run, callees included
/// (empty: no scopes).
static SCOPES: std::sync::OnceLock<Vec<(u64, u64)>> = std::sync::OnceLock::new();
/// drmgr's field of a thread's [`ScopeState`] (with scopes only).
static SCOPE_FIELD: AtomicI32 = AtomicI32::new(-1);

fn scoped() -> bool {
    SCOPES.get().is_some_and(|s| !s.is_empty())
}

/// A thread's place in the scopes: how deep it is in scope functions, and its counters'
/// two homes. Outside every scope the thread's counter addresses (the raw TLS slots) point
/// at `sink`, whose counts are never reported; inside, at the thread's own counters. The
/// inline code thus counts without a test, and only entering and leaving cost a call.
struct ScopeState {
    depth: u32,
    real: [*mut u64; 2],
    sink: [*mut u64; 2],
}

/// The running thread's [`ScopeState`] (with scopes only).
///
/// # Safety
/// `dc` is the running thread's context and scopes are on (thread_init made the state).
unsafe fn scope_state<'a>(dc: *mut c_void) -> &'a mut ScopeState {
    // SAFETY: the field holds the leaked box thread_init stored for this thread.
    unsafe { &mut *dr::drmgr_get_tls_field(dc, SCOPE_FIELD.load(Ordering::Relaxed)).cast() }
}

/// Whether the thread of `dc` counts now: always without scopes, else inside one. Records
/// written outside every scope are dropped when a buffer is handed over.
pub(crate) fn counting(dc: *mut c_void) -> bool {
    // SAFETY: scopes on: thread_init made the state of every thread.
    !scoped() || unsafe { scope_state(dc) }.depth > 0
}

/// The clean call at the first instruction of a scope function (before its block's
/// counts): one level deeper; from outside every scope, the records written outside are
/// dropped and the counters become the thread's own.
///
/// Like the QEMU plugin's, the depth counts entries and the returns executed inside the
/// scope functions: recursion nests, and a function left by a tail call (a jump to
/// another function) or entered by a jump to its first instruction confuses it.
unsafe extern "C" fn scope_enter() {
    // SAFETY: a clean call: DynamoRIO's context of the running thread, whose state exists.
    unsafe {
        let dc = dr::dr_get_current_drcontext();
        let st = scope_state(dc);
        if st.depth == 0 {
            stream::discard(dc);
            *tls_slot() = st.real[0];
            *tls_slot().add(1) = st.real[1];
        }
        st.depth += 1;
    }
}

/// The clean call before a return inside a scope function (after its records): one level
/// up; back outside every scope, the records written inside go out and the counters become
/// the sink. A return with the depth at 0 (a scope left before it was seen entered) does
/// nothing.
unsafe extern "C" fn scope_leave() {
    // SAFETY: as scope_enter.
    unsafe {
        let dc = dr::dr_get_current_drcontext();
        let st = scope_state(dc);
        if st.depth == 1 {
            stream::flush(dc);
            *tls_slot() = st.sink[0];
            *tls_slot().add(1) = st.sink[1];
        }
        st.depth = st.depth.saturating_sub(1);
    }
}

/// Which counter array an instruction at `pc` adds to: None when regions are given and
/// `pc` is in none.
fn region_of(pc: u64) -> Option<usize> {
    let regions = REGIONS.get().map_or(&[][..], |r| &r[..]);
    if regions.is_empty() {
        return Some(0);
    }
    regions.iter().position(|&(a, b)| pc >= a && pc < b)
}

/// `START-END[+START-END...]`, hex with `0x` or decimal.
fn parse_ranges(s: &str) -> Option<Vec<(u64, u64)>> {
    let num = |x: &str| match x.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => x.parse().ok(),
    };
    s.split('+')
        .map(|r| {
            let (a, b) = r.split_once('-')?;
            Some((num(a)?, num(b)?))
        })
        .collect()
}
static NEXT_THREAD: AtomicU32 = AtomicU32::new(0);

/// Distinct static count vectors of the blocks built: a block adds 1 to its vector's
/// execution counter, and the counts are multiplied out at exit. Blocks with the same
/// counts share a counter (a block rebuilt, or two alike); with `tbs=on`, only blocks
/// that also start at the same address (the per-block breakdown).
struct Blocks {
    ids: HashMap<(Vec<(u32, u64)>, u64), u32>,
    counts: Vec<Vec<(u32, u64)>>,
    /// Each counter's block address (run time; 0 without `tbs=on`).
    pcs: Vec<u64>,
}

/// `tbs=on`: a counter per block address, and the per-block breakdown in the report.
static TBS: AtomicBool = AtomicBool::new(false);

static BLOCKS: Mutex<Option<Blocks>> = Mutex::new(None);

/// Execution counters per thread (8 MiB of address space, touched as used).
pub const MAX_BLOCKS: usize = 1 << 20;

/// The execution counter of the block at `pc` counting `counts` (None: the table is full);
/// `own`: a counter of the block's own (a loop's closing block or its exit, whose
/// executions the loops' chains read), whatever `tbs`.
fn block_id(counts: Vec<(u32, u64)>, pc: u64, own: bool) -> Option<u32> {
    let pc = if own || TBS.load(Ordering::Relaxed) {
        pc
    } else {
        0
    };
    let mut g = BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
    let b = g.get_or_insert_with(|| Blocks {
        ids: HashMap::new(),
        counts: Vec::new(),
        pcs: Vec::new(),
    });
    let key = (counts, pc);
    if let Some(id) = b.ids.get(&key) {
        return Some(*id);
    }
    if b.counts.len() >= MAX_BLOCKS {
        return None;
    }
    let id = b.counts.len() as u32;
    b.counts.push(key.0.clone());
    b.pcs.push(pc);
    b.ids.insert(key, id);
    Some(id)
}
static mut TLS_SEG: dr::reg_id_t = 0;
static mut TLS_OFFS: u32 = 0;

fn tls_slot() -> *mut *mut u64 {
    // SAFETY: the slot was allocated in dr_client_main; the segment base is this thread's.
    unsafe { dr::dr_get_dr_segment_base(TLS_SEG).add(TLS_OFFS as usize) as *mut *mut u64 }
}

/// drmgr's thread-local field holding each thread's number plus one.
static THREAD_FIELD: AtomicI32 = AtomicI32::new(-1);

/// drmgr's thread-local field holding each thread's [`Gate`] state (set sampling's gate).
static SKIP_FIELD: AtomicI32 = AtomicI32::new(-1);

/// A thread's accounts of set sampling's gate. The instrumented code adds nothing here:
/// what it left out is derived when a batch is handed over, from the blocks' execution
/// counters (each block's gated operands and their bytes, [`GATED`]) less the records
/// the instrumented code wrote ([`take_left_out`]).
#[repr(C)]
struct Gate {
    /// Accesses and bytes the clean calls' gate left out since the last batch.
    skipped: [u64; 2],
    /// Records (accesses, bytes) the clean calls wrote since the last batch.
    dynamic_kept: [u64; 2],
    /// Records (accesses, bytes) the instrumented code wrote, all batches.
    kept: [u64; 2],
    /// Left-out accesses and bytes reported, all batches.
    reported: [u64; 2],
    /// The thread's own counters and execution counters (not the scope's sink).
    counters: *mut u64,
    executions: *mut u64,
}

/// The running thread's [`Gate`] (thread_init made it; it lives as long as the process: a
/// thread's last records are handed over after its exit event may have run).
///
/// # Safety
/// `dc` is a thread's context, its Gate used by that thread only (or by the one running
/// the process exit, after it).
unsafe fn gate_state<'a>(dc: *mut c_void) -> Option<&'a mut Gate> {
    // SAFETY: the field holds the leaked box thread_init stored for this thread.
    unsafe {
        dr::drmgr_get_tls_field(dc, SKIP_FIELD.load(Ordering::Relaxed))
            .cast::<Gate>()
            .as_mut()
    }
}

/// The blocks whose instrumented code writes records through set sampling's gate: each
/// one's execution counter and, per execution, its gated operands and their bytes.
struct Gated {
    blocks: HashMap<u32, (u64, u64)>,
    /// The most any one block has (a block running when a batch is handed over has been
    /// counted whole but written in part).
    most: (u64, u64),
}

static GATED: Mutex<Option<Gated>> = Mutex::new(None);

/// Notes that the block counted by execution counter `id` (None: counted by adds to the
/// counters) writes `ops` gated operands of `bytes` bytes per execution.
fn note_gated(id: Option<u32>, ops: u64, bytes: u64) {
    let mut g = GATED.lock().unwrap_or_else(|e| e.into_inner());
    let g = g.get_or_insert_with(|| Gated {
        blocks: HashMap::new(),
        most: (0, 0),
    });
    g.most = (g.most.0.max(ops), g.most.1.max(bytes));
    if let Some(id) = id {
        g.blocks.insert(id, (ops, bytes));
    }
}

/// Adds `accesses` and `bytes` to the left-out counts of the thread of `dc` (the clean
/// calls' records the gate leaves out).
pub(crate) fn add_skipped(dc: *mut c_void, accesses: u64, bytes: u64) {
    // SAFETY: `dc` is the running thread's.
    if let Some(g) = unsafe { gate_state(dc) } {
        g.skipped[0] += accesses;
        g.skipped[1] += bytes;
    }
}

/// Counts a record a clean call of the thread of `dc` wrote (`bytes` bytes).
pub(crate) fn add_dynamic_kept(dc: *mut c_void, bytes: u64) {
    // SAFETY: `dc` is the running thread's.
    if let Some(g) = unsafe { gate_state(dc) } {
        g.dynamic_kept[0] += 1;
        g.dynamic_kept[1] += bytes;
    }
}

/// Forgets what the thread of `dc` wrote and left out since its last batch (records
/// dropped before they were handed over: written outside every scope).
pub(crate) fn forget_batch(dc: *mut c_void) {
    // SAFETY: `dc` is the running thread's.
    if let Some(g) = unsafe { gate_state(dc) } {
        g.skipped = [0, 0];
        g.dynamic_kept = [0, 0];
    }
}

/// The accesses and bytes the gate left out in the thread of `dc` since its last batch,
/// which holds `records` records of `bytes` bytes (before any gate or coalescing): the
/// clean calls' count, and the instrumented code's, derived: the gated operands the
/// thread's blocks ran, less the records written. A block that runs as the batch is handed
/// over has been counted whole and written in part, so all but the last batch leave out
/// the most any block has; the last (`last`, at the thread's exit) gives the rest, and the
/// thread's sums are exact.
pub(crate) fn take_left_out(dc: *mut c_void, records: u64, bytes: u64, last: bool) -> [u64; 2] {
    // SAFETY: `dc` is a thread's context, its Gate used as gate_state says.
    let Some(g) = (unsafe { gate_state(dc) }) else {
        return [0, 0];
    };
    g.kept[0] += records.saturating_sub(g.dynamic_kept[0]);
    g.kept[1] += bytes.saturating_sub(g.dynamic_kept[1]);
    g.dynamic_kept = [0, 0];
    let mut ran = [0u64; 2];
    let most = {
        let gated = GATED.lock().unwrap_or_else(|e| e.into_inner());
        let Some(gated) = gated.as_ref() else {
            return std::mem::take(&mut g.skipped);
        };
        // SAFETY: the thread's own execution counters, MAX_BLOCKS words.
        let execs = unsafe { std::slice::from_raw_parts(g.executions, MAX_BLOCKS) };
        for (&id, &(ops, b)) in &gated.blocks {
            let n = execs[id as usize];
            ran[0] += n * ops;
            ran[1] += n * b;
        }
        gated.most
    };
    // Blocks past the table count by adds to the counters, in each region's array.
    let regions = REGIONS.get().map_or(0, Vec::len).max(1);
    for r in 0..regions {
        // SAFETY: the thread's own counters, `regions` arrays of N.
        unsafe {
            ran[0] += *g
                .counters
                .add(r * N + counters::Slot::GatedAccesses as usize);
            ran[1] += *g.counters.add(r * N + counters::Slot::GatedBytes as usize);
        }
    }
    let slack = if last { (0, 0) } else { most };
    let out = [
        ran[0]
            .saturating_sub(g.kept[0])
            .saturating_sub(slack.0)
            .saturating_sub(g.reported[0]),
        ran[1]
            .saturating_sub(g.kept[1])
            .saturating_sub(slack.1)
            .saturating_sub(g.reported[1]),
    ];
    g.reported[0] += out[0];
    g.reported[1] += out[1];
    let skipped = std::mem::take(&mut g.skipped);
    [out[0] + skipped[0], out[1] + skipped[1]]
}

/// The number (start order, 0 the main thread) of the thread of `drcontext`: not always
/// the running one (at process exit, the exiting thread runs the others' exit events).
pub(crate) fn thread_number(drcontext: *mut c_void) -> u32 {
    // SAFETY: drmgr's field, set by thread_init for every thread.
    let v = unsafe { dr::drmgr_get_tls_field(drcontext, THREAD_FIELD.load(Ordering::Relaxed)) };
    (v as usize).saturating_sub(1) as u32
}

/// Adds the bytes of a dynamic access (a string instruction, gather or scatter) to the
/// running thread's counters of region `r`.
pub fn add_dynamic_bytes(r: usize, loaded: u64, stored: u64) {
    use counters::Slot;
    // SAFETY: this thread's own counters (thread_init), region `r` inside them.
    unsafe {
        let v = (*tls_slot()).add(r * N);
        *v.add(Slot::BytesLoaded as usize) += loaded;
        *v.add(Slot::BytesStored as usize) += stored;
        *v.add(Slot::BytesDynamic as usize) += loaded + stored;
    }
}

unsafe extern "C" fn count_unstreamed() {
    stream::UNSTREAMED.fetch_add(1, Ordering::Relaxed);
}

unsafe extern "C" fn thread_init(drcontext: *mut c_void) {
    let thread = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
    let regions = REGIONS.get().map_or(0, Vec::len);
    let mut c = Box::new(Counters::new(regions));
    let p: *mut u64 = c.0.as_mut_ptr();
    let e: *mut u64 = c.1.as_mut_ptr();
    // The gate's accounts live as long as the process (a thread's last records are handed
    // over after its exit event may have run).
    let gate: *mut Gate = Box::leak(Box::new(Gate {
        skipped: [0; 2],
        dynamic_kept: [0; 2],
        kept: [0; 2],
        reported: [0; 2],
        counters: p,
        executions: e,
    }));
    // SAFETY: this thread's own slots.
    unsafe {
        *tls_slot() = p;
        *tls_slot().add(1) = e;
        dr::drmgr_set_tls_field(drcontext, SKIP_FIELD.load(Ordering::Relaxed), gate.cast());
        dr::drmgr_set_tls_field(
            drcontext,
            THREAD_FIELD.load(Ordering::Relaxed),
            (thread as usize + 1) as *mut c_void,
        );
    }
    if scoped() {
        // Outside every scope at the start: the counters are the sink's. The state and the
        // sink live as long as the process (a thread's last records are handed over after
        // its exit event may have run).
        let mut sink = Box::new(Counters::new(regions));
        let st = Box::new(ScopeState {
            depth: 0,
            real: [p, e],
            sink: [sink.0.as_mut_ptr(), sink.1.as_mut_ptr()],
        });
        // SAFETY: this thread's own slots and field.
        unsafe {
            *tls_slot() = st.sink[0];
            *tls_slot().add(1) = st.sink[1];
            dr::drmgr_set_tls_field(
                drcontext,
                SCOPE_FIELD.load(Ordering::Relaxed),
                Box::into_raw(st).cast(),
            );
        }
        Box::leak(sink);
    }
    stream::thread_started(thread);
    if let Some(g) = GLOBAL.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        g.threads.push((thread, c));
    }
}

unsafe extern "C" fn thread_exit(drcontext: *mut c_void) {
    // The counters stay registered until the process exits; drx has written the thread's
    // last records (its exit event comes first).
    stream::thread_ended(drcontext, thread_number(drcontext));
}

/// This process is a child of `fork()` (without `exec` yet): it reports nothing.
static FORKED_CHILD: AtomicBool = AtomicBool::new(false);
/// Processes this one created (`fork`, `vfork`, `clone` and `clone3` without
/// `CLONE_THREAD`: `system()` and `posix_spawn` among them).
static FORKS: AtomicU64 = AtomicU64::new(0);

const SYS_CLONE: c_int = 56;
const SYS_FORK: c_int = 57;
const SYS_VFORK: c_int = 58;
const SYS_CLONE3: c_int = 435;
const CLONE_THREAD: u64 = 0x10000;

/// In the child of a `fork()`: its counts and records are the parent's copies plus its own;
/// it stops streaming (the pipe is the parent's) and writes no report.
unsafe extern "C" fn fork_child(_dc: *mut c_void) {
    FORKED_CHILD.store(true, Ordering::Relaxed);
    stream::silence();
}

unsafe extern "C" fn creates_process_filter(_dc: *mut c_void, sysnum: c_int) -> i8 {
    i8::from(matches!(
        sysnum,
        SYS_CLONE | SYS_FORK | SYS_VFORK | SYS_CLONE3
    ))
}

/// Counts a system call that creates a process (not a thread), before it runs.
unsafe extern "C" fn count_process_creation(dc: *mut c_void, sysnum: c_int) -> i8 {
    // SAFETY: DynamoRIO's pre-syscall event: the parameters are readable here.
    let flags = unsafe {
        match sysnum {
            SYS_FORK | SYS_VFORK => Some(0),
            SYS_CLONE => Some(dr::dr_syscall_get_param(dc, 0) as u64),
            SYS_CLONE3 => {
                // struct clone_args: its first field is the flags.
                let mut flags = 0u64;
                let at = dr::dr_syscall_get_param(dc, 0) as *const c_void;
                let ok =
                    dr::dr_safe_read(at, 8, (&raw mut flags).cast(), std::ptr::null_mut()) != 0;
                ok.then_some(flags)
            }
            _ => None,
        }
    };
    if flags.is_some_and(|f| f & CLONE_THREAD == 0) {
        FORKS.fetch_add(1, Ordering::Relaxed);
    }
    1
}

unsafe extern "C" fn process_exit() {
    if FORKED_CHILD.load(Ordering::Relaxed) {
        return;
    }
    let g = GLOBAL.lock().unwrap_or_else(|e| e.into_inner()).take();
    let blocks = BLOCKS.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(mut g) = g {
        let mut tbs = Vec::new();
        if let Some(b) = blocks {
            if TBS.load(Ordering::Relaxed) {
                tbs = counters::tb_counts(&g.threads, &b.counts, &b.pcs);
            }
            let loops = LOOPS.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let exits = EXITS.lock().unwrap_or_else(|e| e.into_inner()).clone();
            for (_, c) in g.threads.iter_mut() {
                c.add_loop_chains(&loops, exits.as_ref());
                c.multiply_out(&b.counts);
            }
        }
        let mut report = counters::report(&g.threads, &g.regions, g.load_bias);
        report.tbs = tbs;
        report.forked_processes = FORKS.load(Ordering::Relaxed);
        if stream::on() {
            report.mem_stream = Some(hpcscope_plugin_format::report::StreamStats {
                records: stream::WRITTEN.load(Ordering::Relaxed),
                dropped: stream::DROPPED.load(Ordering::Relaxed),
                inline: true,
                overflowed_buffers: 0,
                unstreamed: stream::UNSTREAMED.load(Ordering::Relaxed),
            });
        }
        match serde_json::to_string_pretty(&report) {
            Ok(text) => {
                if let Err(e) = std::fs::write(&g.out, text) {
                    eprintln!("hpcscope-dr-client: cannot write {}: {e}", g.out);
                }
            }
            Err(e) => eprintln!("hpcscope-dr-client: cannot serialize the report: {e}"),
        }
    }
    // SAFETY: the extensions were initialized in dr_client_main.
    unsafe {
        dr::dr_raw_tls_cfree(TLS_OFFS, 2);
        dr::drutil_exit();
        dr::drx_exit();
        dr::drreg_exit();
        dr::drmgr_exit();
    }
}

/// `add qword [base + slot*8], imm32`, before `where`.
unsafe fn add_imm(
    dc: *mut c_void,
    bb: *mut dr::instrlist_t,
    at: *mut dr::instr_t,
    base: dr::reg_id_t,
    slot: usize,
    value: u64,
) {
    // Increments are per block execution: far below 2^31.
    let v = value.min(i32::MAX as u64) as i64;
    // SAFETY: DynamoRIO's IR construction on the block being instrumented.
    unsafe {
        let mem = dr::opnd_create_base_disp(
            base,
            dr::DR_REG_NULL as _,
            0,
            (slot * 8) as c_int,
            dr::OPSZ_8 as _,
        );
        let imm = dr::opnd_create_immed_int(v, dr::OPSZ_4 as _);
        let i = dr::instr_create_1dst_2src(dc, dr::OP_add as _, mem, imm, mem);
        dr::instrlist_meta_preinsert(bb, at, i);
    }
}

unsafe fn emit(
    dc: *mut c_void,
    bb: *mut dr::instrlist_t,
    at: *mut dr::instr_t,
    opcode: u32,
    dst: dr::opnd_t,
    src: dr::opnd_t,
    two_src: bool,
) {
    // SAFETY: as above.
    unsafe {
        let i = if two_src {
            dr::instr_create_1dst_2src(dc, opcode as _, dst, src, dst)
        } else {
            dr::instr_create_1dst_1src(dc, opcode as _, dst, src)
        };
        dr::instrlist_meta_preinsert(bb, at, i);
    }
}

/// The dynamic part of a masked instruction: active lanes = popcount(mask & lanes), then
/// `add [base + slot*8], lanes * mult` for each (slot, mult), mults powers of two.
#[allow(clippy::too_many_arguments)]
unsafe fn add_active_lanes(
    dc: *mut c_void,
    bb: *mut dr::instrlist_t,
    at: *mut dr::instr_t,
    base: dr::reg_id_t,
    scratch: dr::reg_id_t,
    mask: dr::reg_id_t,
    lanes: u32,
    mut adds: Vec<(usize, u64)>,
) {
    adds.sort_by_key(|a| a.1);
    // SAFETY: as above.
    unsafe {
        let r32 = classify::ffi::reg_64_to_32(scratch);
        let (kmov, dst) = match lanes {
            0..=16 => (dr::OP_kmovw, dr::opnd_create_reg(r32)),
            17..=32 => (dr::OP_kmovd, dr::opnd_create_reg(r32)),
            _ => (dr::OP_kmovq, dr::opnd_create_reg(scratch)),
        };
        emit(dc, bb, at, kmov, dst, dr::opnd_create_reg(mask), false);
        if lanes < 32 {
            let m = dr::opnd_create_immed_int(((1u64 << lanes) - 1) as i64, dr::OPSZ_4 as _);
            emit(dc, bb, at, dr::OP_and, dr::opnd_create_reg(r32), m, true);
        }
        let r = dr::opnd_create_reg(scratch);
        emit(dc, bb, at, dr::OP_popcnt, r, r, false);
        let mut shift = 0u32;
        for (slot, mult) in adds {
            let want = mult.trailing_zeros();
            if want > shift {
                let imm = dr::opnd_create_immed_int((want - shift) as i64, dr::OPSZ_1 as _);
                emit(dc, bb, at, dr::OP_shl, r, imm, true);
                shift = want;
            }
            let mem = dr::opnd_create_base_disp(
                base,
                dr::DR_REG_NULL as _,
                0,
                (slot * 8) as c_int,
                dr::OPSZ_8 as _,
            );
            emit(dc, bb, at, dr::OP_add, mem, r, true);
        }
    }
}

unsafe extern "C" fn bb_insert(
    dc: *mut c_void,
    _tag: *mut c_void,
    bb: *mut dr::instrlist_t,
    instr: *mut dr::instr_t,
    _for_trace: i8,
    translating: i8,
    _user_data: *mut c_void,
) -> dr::dr_emit_flags_t {
    // SAFETY: the arguments are drmgr's, passed on.
    unsafe { instrument(dc, bb, instr, translating != 0) }
}

/// The insertion phase's work on one instruction (see [`bb_insert`]).
unsafe fn instrument(
    dc: *mut c_void,
    bb: *mut dr::instrlist_t,
    instr: *mut dr::instr_t,
    translating: bool,
) -> dr::dr_emit_flags_t {
    // SAFETY: drmgr's insertion phase: `bb` and `instr` are the block being built.
    unsafe {
        if dr::instr_is_app(instr) == 0 {
            return dr::dr_emit_flags_t::DR_EMIT_DEFAULT;
        }
        let first = dr::drmgr_is_first_instr(dc, instr) != 0;
        let info = classify(instr);
        let pc = dr::instr_get_app_pc(instr) as u64;
        let scopes = SCOPES.get().map_or(&[][..], |s| &s[..]);
        // Entering a scope function: before anything of its first block is counted.
        if scopes.iter().any(|&(a, _)| pc == a) {
            dr::dr_insert_clean_call(dc, bb, instr, scope_enter as *mut c_void, 0, 0);
        }
        // Its returns: after the return's own counts and records (below).
        let leaves =
            dr::instr_is_return(instr) != 0 && scopes.iter().any(|&(a, b)| pc >= a && pc < b);
        let masked_region = region_of(pc).filter(|_| {
            info.mask.is_some() && (info.fp.is_some() || info.mask_elem_bytes.is_some())
        });
        let masked = masked_region.is_some();
        let accesses = info.loads || info.stores;
        if !first && !masked && !accesses {
            if leaves {
                dr::dr_insert_clean_call(dc, bb, instr, scope_leave as *mut c_void, 0, 0);
            }
            return dr::dr_emit_flags_t::DR_EMIT_DEFAULT;
        }
        let mut base: dr::reg_id_t = 0;
        let mut reserved = false;
        let mut reserve = |base: &mut dr::reg_id_t| {
            if !reserved {
                if dr::drreg_reserve_aflags(dc, bb, instr) != dr::drreg_status_t_DRREG_SUCCESS
                    || dr::drreg_reserve_register(dc, bb, instr, std::ptr::null_mut(), base)
                        != dr::drreg_status_t_DRREG_SUCCESS
                {
                    dr::dr_abort_with_code(1);
                }
                reserved = true;
            }
        };
        if first {
            let n_regions = REGIONS.get().map_or(0, Vec::len).max(1);
            let mut statics = vec![0u64; N * n_regions];
            let mut block = Vec::new();
            let mut i = dr::instrlist_first_app(bb);
            while !i.is_null() {
                block.push((dr::instr_get_app_pc(i) as u64, classify(i)));
                i = dr::instr_get_next_app(i);
            }
            let counted = block_lanes(&block, translating);
            for ((at, info), counted) in block.iter().zip(counted) {
                if let Some(r) = region_of(*at) {
                    counters::add_static(&mut statics[r * N..(r + 1) * N], info, counted);
                }
            }
            // The operands its code writes through set sampling's gate, per execution.
            let mut gated = (0u64, 0u64);
            if stream::on() {
                let mut i = dr::instrlist_first_app(bb);
                for (at, info) in &block {
                    if let Some(r) = region_of(*at)
                        && matches!(
                            stream::plan(i, info, &classify::opcode_name(i)),
                            stream::Plan::Inline
                        )
                        && let Some((ops, bytes)) = stream::gated_operands(i)
                    {
                        statics[r * N + counters::Slot::GatedAccesses as usize] += ops;
                        statics[r * N + counters::Slot::GatedBytes as usize] += bytes;
                        gated = (gated.0 + ops, gated.1 + bytes);
                    }
                    i = dr::instr_get_next_app(i);
                }
            }
            // A loop's closing block and a loop's exit get counters of their own: the loop's
            // chain counts per iteration its entries leave to the out-of-order window.
            let looped = block_chain(&block, translating);
            let own = looped.is_some() || is_loop_exit(pc, &block, translating);
            let sparse: Vec<(u32, u64)> = statics
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != 0)
                .map(|(s, v)| (s as u32, *v))
                .collect();
            if !sparse.is_empty() {
                reserve(&mut base);
                let id = block_id(sparse.clone(), pc, own);
                if gated.0 > 0 {
                    note_gated(id, gated.0, gated.1);
                }
                match id {
                    // One add per execution: the block's counts are multiplied out at exit.
                    Some(id) => {
                        if !translating {
                            note_loop(id, pc, looped.as_ref(), &block);
                        }
                        dr::dr_insert_read_raw_tls(dc, bb, instr, TLS_SEG, TLS_OFFS + 8, base);
                        add_imm(dc, bb, instr, base, id as usize, 1);
                    }
                    // More distinct blocks than the table holds: add each count.
                    None => {
                        dr::dr_insert_read_raw_tls(dc, bb, instr, TLS_SEG, TLS_OFFS, base);
                        for (slot, v) in sparse {
                            add_imm(dc, bb, instr, base, slot as usize, v);
                        }
                    }
                }
            }
        }
        if masked_region.is_some() {
            reserve(&mut base);
            dr::dr_insert_read_raw_tls(dc, bb, instr, TLS_SEG, TLS_OFFS, base);
        }
        if let Some(r) = masked_region {
            let adds: Vec<(usize, u64)> = dynamic_adds(&info)
                .into_iter()
                .map(|(slot, m)| (r * N + slot, m))
                .collect();
            if !adds.is_empty() {
                let mut scratch: dr::reg_id_t = 0;
                if dr::drreg_reserve_register(dc, bb, instr, std::ptr::null_mut(), &mut scratch)
                    != dr::drreg_status_t_DRREG_SUCCESS
                {
                    dr::dr_abort_with_code(1);
                }
                add_active_lanes(
                    dc,
                    bb,
                    instr,
                    base,
                    scratch,
                    info.mask.unwrap_or(0),
                    lanes_of(&info),
                    adds,
                );
                dr::drreg_unreserve_register(dc, bb, instr, scratch);
            }
        }
        if reserved {
            dr::drreg_unreserve_register(dc, bb, instr, base);
            dr::drreg_unreserve_aflags(dc, bb, instr);
        }
        if let Some(r) = region_of(pc) {
            let name = classify::opcode_name(instr);
            match stream::plan(instr, &info, &name) {
                stream::Plan::Nothing => {}
                stream::Plan::Inline => {
                    if stream::on() {
                        stream::insert_inline(dc, bb, instr);
                    }
                }
                // String instructions, gathers and scatters: their bytes are counted
                // there, stream or not.
                stream::Plan::Dynamic(kind) => {
                    if stream::on() || !matches!(kind, stream::Kind::Masked { .. }) {
                        stream::insert_dynamic(dc, bb, instr, kind, Some(r));
                    }
                }
                stream::Plan::Unstreamed => {
                    if stream::on() {
                        dr::dr_insert_clean_call(
                            dc,
                            bb,
                            instr,
                            count_unstreamed as *mut c_void,
                            0,
                            0,
                        );
                    }
                }
            }
        }
        if leaves {
            dr::dr_insert_clean_call(dc, bb, instr, scope_leave as *mut c_void, 0, 0);
        }
    }
    dr::dr_emit_flags_t::DR_EMIT_DEFAULT
}

/// The blocks where the FLOP rule leaves lanes out, by (first pc, last pc, instructions):
/// the lanes it counts per instruction.
type LaneTable = HashMap<(u64, u64, usize), Vec<Option<u32>>>;
static LANES: Mutex<Option<LaneTable>> = Mutex::new(None);

/// The lanes the FLOP rule for reductions (docs/flop-counting.md) counts of each
/// instruction of a block (None: every lane), as the QEMU plugin applies it to its blocks;
/// a masked instruction's FLOPs follow its mask instead. Worked out when DynamoRIO builds
/// the block, and kept where it leaves lanes out. When DynamoRIO builds the block again to
/// translate a fault (the guard page of drx's record buffer), it does so on its signal
/// stack, which the analysis' frames (some 15 KiB) would overflow: the kept result is used
/// there (a block not kept had every lane counted).
unsafe fn block_lanes(block: &[(u64, Info)], translating: bool) -> Vec<Option<u32>> {
    let key = (
        block.first().map_or(0, |b| b.0),
        block.last().map_or(0, |b| b.0),
        block.len(),
    );
    if translating {
        let kept = LANES.lock().unwrap_or_else(|e| e.into_inner());
        return kept
            .as_ref()
            .and_then(|t| t.get(&key).cloned())
            .unwrap_or_else(|| vec![None; block.len()]);
    }
    if !block.iter().any(|(_, info)| info.fp.is_some()) {
        return vec![None; block.len()];
    }
    // SAFETY: each pc is an application instruction DynamoRIO just decoded.
    let decoded: Vec<_> = block
        .iter()
        .map(|(at, _)| unsafe { app_instruction(*at) })
        .collect();
    let fps: Vec<Option<hpcscope_x86_lanes::Fp>> = block
        .iter()
        .map(|(_, info)| info.fp.filter(|_| info.mask.is_none()).map(lanes_fp))
        .collect();
    let counted = hpcscope_x86_lanes::counted_lanes(&decoded, &fps);
    if counted.iter().any(Option::is_some) {
        let mut kept = LANES.lock().unwrap_or_else(|e| e.into_inner());
        kept.get_or_insert_with(HashMap::new)
            .insert(key, counted.clone());
    }
    counted
}

/// A loop the engine found a dependency chain in.
#[derive(Debug, Clone)]
pub struct LoopChain {
    /// The chain, per iteration.
    pub chain: hpcscope_x86_lanes::chain::Chain,
    /// Instructions of the loop's body.
    pub body: usize,
    /// The address after the closing branch, where the loop exits when the branch is
    /// conditional; `None` for a loop closed by an unconditional jump (it leaves by
    /// branches inside: its entries cannot be told, and its chain is not counted).
    pub exit: Option<u64>,
}

/// Blocks closing a loop, by (first pc, last pc, instructions): the loop's dependency chain.
type ChainTable = HashMap<(u64, u64, usize), Option<LoopChain>>;
static CHAINS: Mutex<Option<ChainTable>> = Mutex::new(None);

/// The loops whose chains are counted: (closing block's counter, region, loop).
pub static LOOPS: Mutex<Vec<(u32, usize, LoopChain)>> = Mutex::new(Vec::new());
/// The loops' exits: address -> the exit block's own counter (None until it is built).
pub static EXITS: Mutex<Option<HashMap<u64, Option<u32>>>> = Mutex::new(None);
/// Whether each block is a loop's exit, by first pc, then (last pc, instructions), as
/// decided when built (a block built again to translate a fault gets the same counter;
/// one built again after a flush, the decision as it stands then).
type ExitTable = HashMap<u64, HashMap<(u64, usize), bool>>;
static EXIT_BLOCKS: Mutex<Option<ExitTable>> = Mutex::new(None);

/// Whether the block starting at `pc` is the exit of a loop seen before it.
fn is_loop_exit(pc: u64, block: &[(u64, Info)], translating: bool) -> bool {
    let key = (block.last().map_or(0, |b| b.0), block.len());
    let mut kept = EXIT_BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
    let kept = kept.get_or_insert_with(HashMap::new).entry(pc).or_default();
    if let Some(k) = kept.get(&key) {
        return *k;
    }
    if translating {
        return false;
    }
    let exit = EXITS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|m| m.contains_key(&pc));
    kept.insert(key, exit);
    exit
}

/// Records the counter `id` of a block: a loop's closing block (`looped`), or a loop's exit.
/// A loop whose exit block was built before it (without a counter of its own) has that
/// block flushed, so that it is built again with one.
fn note_loop(id: u32, pc: u64, looped: Option<&LoopChain>, block: &[(u64, Info)]) {
    let mut new_exit = None;
    {
        let mut exits = EXITS.lock().unwrap_or_else(|e| e.into_inner());
        let exits = exits.get_or_insert_with(HashMap::new);
        if let Some(e) = exits.get_mut(&pc) {
            *e = Some(id);
        }
        if let Some(l) = looped {
            let region = block.last().and_then(|b| region_of(b.0));
            if let Some(r) = region {
                let mut loops = LOOPS.lock().unwrap_or_else(|e| e.into_inner());
                if !loops.iter().any(|(i, _, _)| *i == id) {
                    loops.push((id, r, l.clone()));
                }
                if let Some(exit) = l.exit
                    && !exits.contains_key(&exit)
                {
                    exits.insert(exit, None);
                    new_exit = Some(exit);
                }
            }
        }
    }
    // (EXIT_BLOCKS is taken before EXITS elsewhere: not while holding it.)
    if let Some(exit) = new_exit {
        let mut kept = EXIT_BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
        let mut built = false;
        if let Some(blocks) = kept.as_mut().and_then(|t| t.get_mut(&exit)) {
            for is_exit in blocks.values_mut().filter(|e| !**e) {
                *is_exit = true;
                built = true;
            }
        }
        drop(kept);
        if built {
            // SAFETY: a request DynamoRIO carries out at its next safe point (allowed
            // from the basic-block event); the block is rebuilt when next reached.
            unsafe { dr::dr_delay_flush_region(exit as *mut u8, 1, 0, None) };
        }
    }
}

/// Longest backward branch whose loop body is analysed, bytes.
const MAX_LOOP_BYTES: u64 = 4096;

/// The loop-carried dependency chain of the loop a block closes (its last instruction a
/// backward branch within [`MAX_LOOP_BYTES`]): the loop's body, from the branch's target
/// to the branch, decoded as straight-line code ([`hpcscope_x86_lanes::chain`]). Worked
/// out once per block and kept; a block DynamoRIO builds again to translate a fault gets
/// the kept result (none if it was never worked out).
unsafe fn block_chain(block: &[(u64, Info)], translating: bool) -> Option<LoopChain> {
    use hpcscope_x86_lanes::chain;
    let key = (
        block.first().map_or(0, |b| b.0),
        block.last().map_or(0, |b| b.0),
        block.len(),
    );
    {
        let kept = CHAINS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = kept.as_ref().and_then(|t| t.get(&key)) {
            return c.clone();
        }
        if translating {
            return None;
        }
    }
    let last = block.last()?.0;
    // SAFETY: `last` is an application instruction DynamoRIO just decoded.
    let branch = unsafe { app_instruction(last) };
    let found = chain::backward_target(&branch, MAX_LOOP_BYTES).and_then(|head| {
        let len = (last - head) as usize + 15;
        let mut bytes = vec![0u8; len];
        let mut read = 0usize;
        // SAFETY: dr_safe_read copies what is mapped of the loop's code, without faulting.
        unsafe {
            dr::dr_safe_read(
                head as *const c_void,
                len,
                bytes.as_mut_ptr().cast(),
                &mut read,
            );
        }
        bytes.truncate(read);
        let body = chain::decode_body(&bytes, head, last)?;
        chain::loop_chain(&body).map(|c| LoopChain {
            chain: c,
            body: body.len(),
            exit: (!branch.is_jmp_short_or_near()).then(|| last + branch.len() as u64),
        })
    });
    CHAINS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(key, found.clone());
    found
}

/// The application's instruction at `pc`, decoded for the FLOP rule (an invalid
/// instruction, which the rule does not model, when its bytes cannot be read).
unsafe fn app_instruction(pc: u64) -> hpcscope_x86_lanes::iced_x86::Instruction {
    let mut bytes = [0u8; 15];
    let mut read = 0usize;
    // SAFETY: dr_safe_read reads what is mapped of the 15 bytes at `pc` (the instruction
    // DynamoRIO just decoded there), without faulting, into `bytes`.
    unsafe {
        dr::dr_safe_read(
            pc as *const c_void,
            bytes.len(),
            bytes.as_mut_ptr().cast(),
            &mut read,
        );
    }
    hpcscope_x86_lanes::decode(&bytes[..read.min(bytes.len())], pc)
}

/// What the FLOP rule needs of an FP instruction.
fn lanes_fp(fp: classify::Fp) -> hpcscope_x86_lanes::Fp {
    hpcscope_x86_lanes::Fp {
        element_bits: fp.precision.bytes() * 8,
        vector_bits: fp.vector_bits,
        fma: fp.flops_per_lane == 2,
    }
}

/// Lanes a masked instruction's mask governs.
fn lanes_of(info: &Info) -> u32 {
    if let Some(fp) = info.fp {
        return fp.lanes();
    }
    let bytes = info.load_bytes.max(info.store_bytes);
    match info.mask_elem_bytes {
        Some(e) if e > 0 => (bytes / e).max(1),
        _ => 1,
    }
}

/// What a masked instruction adds per active lane: (counter slot, amount per lane).
fn dynamic_adds(info: &Info) -> Vec<(usize, u64)> {
    let mut v = Vec::new();
    if let Some(fp) = info.fp {
        let f = u64::from(fp.flops_per_lane);
        v.push((Slot::Flops as usize, f));
        v.push((counters::fp_flops_slot(fp.precision, fp.vector_bits), f));
    }
    if let Some(e) = info.mask_elem_bytes
        && info.fp.is_none()
    {
        let e = u64::from(e);
        if info.loads {
            v.push((Slot::BytesLoaded as usize, e));
        }
        if info.stores {
            v.push((Slot::BytesStored as usize, e));
        }
        v.push((Slot::BytesDynamic as usize, e));
    }
    v
}

/// The stream's settings from `memfd=N`, `coalesce=BYTES`, `sample=LINE:MOD:HEX` (None
/// without `memfd=`).
fn stream_config(keys: &[&str]) -> Result<Option<stream::Config>, String> {
    let get = |k: &str| keys.iter().rev().find_map(|a| a.strip_prefix(k));
    let Some(fd) = get("memfd=") else {
        if get("coalesce=").is_some() || get("sample=").is_some() {
            return Err("coalesce= and sample= need memfd=N (the memory stream)".into());
        }
        return Ok(None);
    };
    let fd: i32 = fd
        .parse()
        .ok()
        .filter(|f| *f >= 0)
        .ok_or_else(|| format!("memfd={fd}: expected a file descriptor number"))?;
    let mask = match get("coalesce=") {
        None => 0,
        Some(b) => b
            .parse::<u64>()
            .ok()
            .filter(|b| b.is_power_of_two() && (8..=4096).contains(b))
            .map(|b| b - 1)
            .ok_or_else(|| format!("coalesce={b}: expected a power of two from 8 to 4096"))?,
    };
    let gate = get("sample=")
        .map(hpcscope_plugin_format::gate::SampleGate::parse)
        .transpose()?;
    Ok(Some(stream::Config { fd, mask, gate }))
}

fn client_args(argc: c_int, argv: *const *const c_char) -> Vec<String> {
    (1..argc.max(0) as usize)
        .map(|i| {
            // SAFETY: DynamoRIO passes argc valid C strings.
            unsafe { CStr::from_ptr(*argv.add(i)) }
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// DynamoRIO's entry point of a client.
///
/// # Safety
/// Called by DynamoRIO once, before the program runs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_client_main(
    _id: dr::client_id_t,
    argc: c_int,
    argv: *const *const c_char,
) {
    let args = client_args(argc, argv);
    let keys: Vec<&str> = args.iter().flat_map(|a| a.split(',')).collect();
    let mut link_regions = Vec::new();
    let mut link_scopes = Vec::new();
    for k in &keys {
        for (key, into) in [("region=", &mut link_regions), ("scope=", &mut link_scopes)] {
            if let Some(r) = k.strip_prefix(key) {
                match parse_ranges(r) {
                    Some(v) => into.extend(v),
                    None => {
                        eprintln!("hpcscope-dr-client: bad {key}{r} (START-END[+START-END...])");
                        // SAFETY: ends the process from DynamoRIO.
                        unsafe { dr::dr_abort_with_code(2) };
                    }
                }
            }
        }
    }
    let Some(out) = keys
        .iter()
        .find_map(|a| a.strip_prefix("out="))
        .map(str::to_string)
    else {
        eprintln!("hpcscope-dr-client: no out=PATH among the client's arguments {args:?}");
        // SAFETY: ends the process from DynamoRIO.
        unsafe { dr::dr_abort_with_code(2) };
        return;
    };
    // A descendant of the process started (its parent is not the one that started it):
    // not characterized, and it must not write the report or the stream. DynamoRIO runs it
    // without instrumentation.
    let owner = keys
        .iter()
        .find_map(|a| a.strip_prefix("owner="))
        .and_then(|p| p.parse::<u64>().ok());
    // SAFETY: a plain query of DynamoRIO.
    if owner.is_some_and(|p| p != unsafe { dr::dr_get_parent_id() } as u64) {
        return;
    }
    TBS.store(keys.contains(&"tbs=on"), Ordering::Relaxed);
    let stream = match stream_config(&keys) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hpcscope-dr-client: {e}");
            // SAFETY: ends the process from DynamoRIO.
            unsafe { dr::dr_abort_with_code(2) };
            return;
        }
    };
    // SAFETY: DynamoRIO's initialization calls, in the order its documentation gives.
    unsafe {
        dr::dr_set_client_name(
            c"hpcscope counts (FLOPs, loads and stores)".as_ptr(),
            c"".as_ptr(),
        );
        if dr::drmgr_init() == 0 {
            dr::dr_abort_with_code(3);
        }
        let mut ops: dr::drreg_options_t = std::mem::zeroed();
        ops.struct_size = std::mem::size_of::<dr::drreg_options_t>();
        ops.num_spill_slots = 3;
        ops.conservative = 0;
        if dr::drreg_init(&mut ops) != dr::drreg_status_t_DRREG_SUCCESS {
            dr::dr_abort_with_code(3);
        }
        let mut seg: dr::reg_id_t = 0;
        let mut offs: u32 = 0;
        THREAD_FIELD.store(dr::drmgr_register_tls_field(), Ordering::Relaxed);
        SKIP_FIELD.store(dr::drmgr_register_tls_field(), Ordering::Relaxed);
        if dr::dr_raw_tls_calloc(&mut seg, &mut offs, 2, 0) == 0 {
            dr::dr_abort_with_code(3);
        }
        TLS_SEG = seg;
        TLS_OFFS = offs;
        let main = dr::dr_get_main_module();
        let load_bias = if main.is_null() {
            0
        } else {
            let m = &*main;
            let start = m.__bindgen_anon_1.start as u64;
            let bias = start.wrapping_sub(m.preferred_base as u64);
            dr::dr_free_module_data(main);
            bias
        };
        // Regions are link-time addresses of the main binary: moved by its load bias.
        let regions: Vec<(u64, u64)> = link_regions
            .iter()
            .map(|&(a, b)| (a.wrapping_add(load_bias), b.wrapping_add(load_bias)))
            .collect();
        let _ = REGIONS.set(regions.clone());
        let _ = SCOPES.set(
            link_scopes
                .iter()
                .map(|&(a, b)| (a.wrapping_add(load_bias), b.wrapping_add(load_bias)))
                .collect(),
        );
        if scoped() {
            SCOPE_FIELD.store(dr::drmgr_register_tls_field(), Ordering::Relaxed);
        }
        *GLOBAL.lock().unwrap_or_else(|e| e.into_inner()) = Some(Global {
            out,
            regions,
            threads: Vec::new(),
            load_bias,
        });
        if let Some(cfg) = stream {
            if dr::drx_init() == 0 || dr::drutil_init() == 0 {
                dr::dr_abort_with_code(3);
            }
            if let Err(e) = stream::open(cfg) {
                eprintln!("hpcscope-dr-client: {e}");
                dr::dr_abort_with_code(3);
            }
        }
        dr::dr_register_exit_event(Some(process_exit));
        dr::dr_register_fork_init_event(Some(fork_child));
        dr::dr_register_filter_syscall_event(Some(creates_process_filter));
        dr::drmgr_register_pre_syscall_event(Some(count_process_creation));
        dr::drmgr_register_thread_init_event(Some(thread_init));
        dr::drmgr_register_thread_exit_event(Some(thread_exit));
        dr::drmgr_register_bb_instrumentation_event(None, Some(bb_insert), std::ptr::null_mut());
    }
}
