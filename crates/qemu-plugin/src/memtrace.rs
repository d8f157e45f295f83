//! Memory callbacks: the optional access stream (`mem=on`, one 8-byte record per guest
//! access) and the instructions whose bytes only QEMU's access reports tell.
//!
//! QEMU reports every access of an instrumented instruction to its memory callback. Most
//! instructions are registered with [`on_mem`], which only appends to the stream. The
//! others carry a [`MemDesc`]: string instructions with `rep`, masked accesses and `xsave`
//! ([`MemKind::Dynamic`]) are counted here from the reports (whether or not the stream is
//! on); forms QEMU reads beyond their operand ([`MemKind::Clipped`]) pass only the operand's
//! bytes of each execution, which an execution callback ([`on_insn_clip`]) opens.
//!
//! The per-access callback only packs the record and appends it to its vCPU's buffer;
//! full buffers (64 Ki records, 512 KiB, while the guest has one thread; 4 Ki records,
//! 32 KiB, once it has several, so that the threads' batches interleave finely) are written
//! with one `write` to the sink (a file, a FIFO or an inherited file descriptor), where the
//! reader (the `mix` driver's cache simulator, on another core) decodes them.
//!
//! With `memring=` ([`Ring`]) the batches are copied into the slots of a memory region the
//! reader maps too, and the sink (a pipe) carries only an 8-byte notice per batch (and the
//! thread markers written alone): no pipe pages to allocate, charge and copy twice. The
//! reader returns a slot's number on a second pipe once it has read the slot; the plugin
//! waits for a number there when every slot is taken. The records, concatenated in notice
//! order, are the plain stream's byte for byte.
//!
//! With QEMU 10 as `scripts/build-qemu.sh` builds it, the records of the instructions QEMU
//! reports exactly are written by QEMU's translated code instead of [`on_mem`]
//! (`meminline=`, [`inline`]); the other callbacks append to the same buffer.
//!
//! Stream format (defined in `hpcscope_plugin_format`, which the reader uses too): the 8
//! magic bytes `HPCSMT03`, then records, each a little-endian `u64`: bits 0..=55 virtual
//! address, bits 56..=59 log2 of the access size in bytes, bits 60..=62 repeats, bit 63 set
//! for a store. Every batch starts with a thread marker ([`thread_marker`]): top byte `0x7f`
//! (a load of 2^15 bytes repeated 7 times, which no access can be: repeats stay inside one
//! line) and the guest thread's number (start order, 0 the main thread) in the low 32 bits;
//! the records up to the next marker are that thread's. A thread also writes its marker
//! alone when it starts, and a marker with top byte `0x7e` when it exits. Records of one
//! thread keep their order; batches of different threads interleave whole, in the order
//! their buffers filled. At exit, pending records of every vCPU are written.
//!
//! With `coalesce=B`, an access of the same size and direction as the vCPU's previous
//! record, inside the same aligned `B`-byte block, and with neither crossing the block's end,
//! adds one to that record's repeats instead of taking a record of its own (at most 7
//! repeats: 8 accesses). A cache simulator whose lines are `B` bytes or larger sees the
//! same hits: the repeats are accesses to the line just used. x86 16-byte SSE accesses,
//! which QEMU splits into two 8-byte ones, and sequential scalar streams halve or better.
//!
//! With `sample=` (set sampling, see [`crate::args::SampleGate`]), an access none of whose
//! lines is in a sampled class is left out before it reaches the batch: one shift, mask and
//! bitmap test. Its vCPU counts the accesses and bytes left out, and the next batch of its
//! thread carries them after the marker in two skip records
//! ([`hpcscope_plugin_format::skip_record`]), so that the reader can extrapolate from the
//! sampled accesses to all of them. An access that crosses a line boundary is kept whole
//! when any line it touches is sampled (the reader splits it). Coalescing applies to the
//! accesses kept.
//!
//! SVE contiguous loads and stores ([`sve_contiguous`]) reach the plugin one report per
//! active element (QEMU 9.2 and later). Their records are merged ([`MemDesc::merge`]): the
//! reports of one execution that follow each other at adjacent addresses become one access
//! of their combined size, so that a 512-bit `ld1d` under an all-true predicate is one
//! 64-byte access, as on hardware, and the number of accesses scales with the vector
//! length. An execution callback ([`on_merge_exec`]) closes the run at each execution, and
//! any other access of the vCPU closes it first, so records keep their order. A run whose
//! size is not a power of two (a partial predicate) is written as power-of-two pieces, the
//! largest first; a piece that straddles a cache line is split by the simulator, like any
//! access. Gathers and scatters stay one access per element.

use std::cell::UnsafeCell;
use std::ffi::{c_uint, c_void};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use qemu_plugin::sys::{
    qemu_plugin_mem_is_store, qemu_plugin_mem_size_shift, qemu_plugin_meminfo_t,
};

use hpcscope_plugin_format::{
    ADDR_MASK, BATCH, MAGIC, REPEAT_ONE, RING_MAGIC, RING_SLOT_RECORDS, coalesces, end_marker,
    notice, record, skip_record, thread_marker,
};

use crate::args::SampleGate;
use crate::isa::{Counter, MemKind};
use crate::vcpu;

#[cfg(not(feature = "api-v1"))]
pub mod inline;

/// Without QEMU's inline records (API v1): the callbacks' buffers only.
#[cfg(feature = "api-v1")]
pub mod inline {
    use std::ffi::c_uint;
    #[inline(always)]
    pub fn on() -> bool {
        false
    }
    pub fn push(_: c_uint, _: u64) -> bool {
        false
    }
    pub fn push_run(_: c_uint, _: impl Iterator<Item = u64>) -> usize {
        0
    }
    pub fn tail(_: c_uint) -> Option<(*mut u64, usize)> {
        None
    }
    pub fn truncate(_: c_uint, _: usize) {}
    pub fn flush(_: c_uint) {}
    pub fn losses() -> u64 {
        0
    }
}

/// Records per batch once the guest has several threads: the threads' batches interleave
/// in the stream at this granularity.
const THREADED_BATCH: usize = 1 << 12;
/// Records a vCPU's buffer takes before it is written (`BATCH`, then `THREADED_BATCH`).
static LIMIT: AtomicUsize = AtomicUsize::new(BATCH);
/// A guest thread started on `vcpu` (called on its own thread): its marker, with no
/// records, tells the reader that one more thread runs.
pub fn thread_started(vcpu: u32) {
    if streaming() {
        write_marker(thread_marker(vcpu::get(vcpu).thread));
    }
}

/// The guest thread on `vcpu` exits (called on its own thread, after [`flush_vcpu`]): the
/// reader need not wait for its accesses any more.
pub fn thread_ended(vcpu: u32) {
    if streaming() {
        write_marker(end_marker(vcpu::get(vcpu).thread));
    }
}

fn write_marker(m: u64) {
    if BROKEN.load(Ordering::Relaxed) || crate::fork::is_child() {
        return;
    }
    // A ring's notices carry markers written alone as they are.
    let ok = match SINK.lock() {
        Ok(mut sink) => sink
            .as_mut()
            .is_some_and(|f| f.out().write_all(&m.to_le_bytes()).is_ok()),
        Err(_) => false,
    };
    if !ok {
        BROKEN.store(true, Ordering::Relaxed);
    }
}

/// The guest has a second thread: batches get shorter from now on (each vCPU's current
/// batch keeps its size).
pub fn set_threaded() {
    LIMIT.store(THREADED_BATCH, Ordering::Relaxed);
}

static SINK: Mutex<Option<Sink>> = Mutex::new(None);

/// Where batches go.
enum Sink {
    /// The records themselves, written to a file, FIFO or pipe.
    Plain(File),
    /// Into a shared ring, with a notice per batch on the pipe.
    Ring(Ring),
}

impl Sink {
    /// What carries the stream's bytes (the plain stream, or a ring's notices).
    fn out(&mut self) -> &mut File {
        match self {
            Sink::Plain(f) => f,
            Sink::Ring(r) => &mut r.notices,
        }
    }
}

/// The shared ring of `memring=RING:TOKENS` (see the README): `slots` slots of
/// [`RING_SLOT_RECORDS`] records mapped from the reader's file; the numbers of free slots
/// come from `tokens`.
struct Ring {
    notices: File,
    tokens: File,
    base: *mut u64,
    slots: u32,
}

// SAFETY: the mapping is only written by the holder of the sink's lock, into a slot the
// reader has handed over and does not read until its notice.
unsafe impl Send for Ring {}

unsafe extern "C" {
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: std::ffi::c_int,
        flags: std::ffi::c_int,
        fd: std::ffi::c_int,
        off: i64,
    ) -> *mut c_void;
}
/// Linux `PROT_READ | PROT_WRITE` and `MAP_SHARED`.
const PROT_RW: std::ffi::c_int = 3;
const MAP_SHARED: std::ffi::c_int = 1;

impl Ring {
    /// Maps the whole of `ring` (a whole number of slots, at least one).
    fn map(notices: File, ring: File, tokens: File) -> std::io::Result<Ring> {
        let bytes = ring.metadata()?.len() as usize;
        let slot_bytes = RING_SLOT_RECORDS * 8;
        let slots = bytes / slot_bytes;
        if slots == 0 || slots > 1 << 24 {
            return Err(std::io::Error::other(format!(
                "memring: the ring holds {bytes} bytes; it needs 1 to 2^24 slots of {slot_bytes} bytes"
            )));
        }
        // SAFETY: a shared mapping of a file we were handed; never unmapped (it lives as
        // long as the process).
        let base = unsafe {
            mmap(
                std::ptr::null_mut(),
                bytes,
                PROT_RW,
                MAP_SHARED,
                ring.as_raw_fd(),
                0,
            )
        };
        if base as isize == -1 {
            return Err(std::io::Error::last_os_error());
        }
        // The mapping stays valid once the descriptor is closed.
        drop(ring);
        Ok(Ring {
            notices,
            tokens,
            base: base as *mut u64,
            slots: slots as u32,
        })
    }

    /// Puts the batch `head` + `recs` into free slots (waiting for them) and writes one
    /// notice per slot used.
    fn put(&mut self, head: &[u8], recs: &[u8]) -> std::io::Result<()> {
        let cap = RING_SLOT_RECORDS * 8;
        let (mut head, mut recs) = (head, recs);
        while !head.is_empty() || !recs.is_empty() {
            let mut t = [0u8; 4];
            self.tokens.read_exact(&mut t)?;
            let slot = u32::from_le_bytes(t);
            if slot >= self.slots {
                return Err(std::io::Error::other(format!(
                    "memring: the reader returned slot {slot} of {}",
                    self.slots
                )));
            }
            // SAFETY: slot `slot` of the mapping is ours until its notice; `cap` bytes.
            let dst = unsafe {
                std::slice::from_raw_parts_mut(
                    self.base.add(slot as usize * RING_SLOT_RECORDS) as *mut u8,
                    cap,
                )
            };
            let h = head.len().min(cap);
            dst[..h].copy_from_slice(&head[..h]);
            let r = recs.len().min(cap - h);
            dst[h..h + r].copy_from_slice(&recs[..r]);
            (head, recs) = (&head[h..], &recs[r..]);
            self.notices
                .write_all(&notice(slot, (h + r) / 8).to_le_bytes())?;
        }
        Ok(())
    }
}
/// The stream is on (`mem=on`).
static STREAMING: AtomicBool = AtomicBool::new(false);
static BROKEN: AtomicBool = AtomicBool::new(false);
static WRITTEN: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// `coalesce=` block size minus one; 0: no coalescing.
static BLOCK_MASK: AtomicU64 = AtomicU64::new(0);

/// vCPUs with a buffer of their own (as many as have counters of their own); higher
/// indices share one behind a lock.
const MAX_VCPUS: usize = vcpu::MAX_VCPUS;

/// One vCPU's batch. In user mode a vCPU is one guest thread, so only that thread touches
/// its slot (no lock, no thread-local lookup on the hot path).
struct Slot {
    buf: *mut u64,
    len: usize,
    /// Records the batch takes before it is written ([`LIMIT`] when the batch started; at
    /// most `BATCH`, the buffer's size); 0 until the buffer is allocated and after the
    /// thread exits, so that the next record goes through [`push_slow`], which (re)reads
    /// the thread number.
    cap: usize,
    /// Number of the guest thread the batch belongs to.
    thread: u32,
    /// The SVE contiguous access being merged: its first address and direction (a record
    /// of size 1), its bytes so far (0: none), and the instruction's [`MemDesc`].
    pend: u64,
    pend_len: u64,
    pend_desc: usize,
    /// With inline records: the run's first record and the record after its last, in the
    /// vCPU's buffer.
    pend_at: usize,
    pend_end: usize,
    /// Accesses and bytes left out by `sample=` since the last batch was written.
    skipped: u64,
    skipped_bytes: u64,
}

struct Slots([UnsafeCell<Slot>; MAX_VCPUS]);

// SAFETY: slot `i` is only used by the thread running vCPU `i` (and at exit, when the
// guest no longer runs).
unsafe impl Sync for Slots {}

static SLOTS: Slots = Slots(
    [const {
        UnsafeCell::new(Slot {
            buf: std::ptr::null_mut(),
            len: 0,
            cap: 0,
            thread: 0,
            pend: 0,
            pend_len: 0,
            pend_desc: 0,
            pend_at: 0,
            pend_end: 0,
            skipped: 0,
            skipped_bytes: 0,
        })
    }; MAX_VCPUS],
);
/// The batch of the vCPUs beyond `MAX_VCPUS`, which share one counting slot (and thread
/// number) too.
static SHARED: Mutex<Vec<u64>> = Mutex::new(Vec::new());

unsafe extern "C" {
    fn fcntl(fd: std::ffi::c_int, cmd: std::ffi::c_int, ...) -> std::ffi::c_int;
}
/// Linux `F_SETPIPE_SZ`.
const F_SETPIPE_SZ: std::ffi::c_int = 1031;

/// `sample=`: the classes of lines whose accesses the stream carries.
static GATE: OnceLock<SampleGate> = OnceLock::new();

/// Set the sink and write the stream header. A pipe gets a 1 MiB buffer so that one batch
/// fits and the writer rarely waits for the reader. With `ring` (the shared ring and the
/// pipe of its free slots), `file` carries the notices. With `sample`, only the accesses to
/// its classes of lines are streamed.
pub fn open(
    mut file: File,
    ring: Option<(File, File)>,
    coalesce: Option<u64>,
    sample: Option<&SampleGate>,
) -> std::io::Result<()> {
    BLOCK_MASK.store(coalesce.map_or(0, |b| b - 1), Ordering::Relaxed);
    if let Some(g) = sample {
        let _ = GATE.set(g.clone());
    }
    let sink = match ring {
        Some((ring, tokens)) => {
            file.write_all(RING_MAGIC)?;
            Sink::Ring(Ring::map(file, ring, tokens)?)
        }
        None => {
            // SAFETY: fcntl on a descriptor we own; failure (not a pipe) is harmless.
            unsafe { fcntl(file.as_raw_fd(), F_SETPIPE_SZ, 1 << 20) };
            file.write_all(MAGIC)?;
            Sink::Plain(file)
        }
    };
    if let Ok(mut s) = SINK.lock() {
        *s = Some(sink);
    }
    STREAMING.store(true, Ordering::Relaxed);
    Ok(())
}

/// Whether the stream is on.
pub fn streaming() -> bool {
    STREAMING.load(Ordering::Relaxed)
}

/// Decoded meminfo values: 0 = not yet seen, else the record's top byte (bits 0..=3
/// log2 size, bit 7 store) with bit 4 set as a "known" mark. QEMU's meminfo is an opaque
/// 32-bit value with few distinct values (size, sign, endianness, direction, MMU index);
/// asking QEMU once per distinct value keeps the two API calls off the hot path without
/// relying on its bit layout.
static DECODED: [AtomicU8; 1 << DECODE_BITS] = [const { AtomicU8::new(0) }; 1 << DECODE_BITS];
const DECODE_BITS: u32 = 18;
const KNOWN: u8 = 0x10;

/// Record bits 56..=63 (size and direction) of a meminfo; `query` asks QEMU (log2 size,
/// store) for a value not seen before.
#[inline(always)]
fn decode(info: qemu_plugin_meminfo_t, query: impl FnOnce(u32) -> (u32, bool)) -> u64 {
    match DECODED
        .get(info as usize)
        .map(|c| c.load(Ordering::Relaxed))
    {
        Some(d) if d != 0 => u64::from(d & !KNOWN) << 56,
        _ => decode_slow(info, query),
    }
}

#[cold]
#[inline(never)]
fn decode_slow(info: qemu_plugin_meminfo_t, query: impl FnOnce(u32) -> (u32, bool)) -> u64 {
    let (shift, store) = query(info);
    let top = record(0, shift, store) >> 56;
    if let Some(cell) = DECODED.get(info as usize) {
        cell.store(top as u8 | KNOWN, Ordering::Relaxed);
    }
    top << 56
}

fn query_qemu(info: qemu_plugin_meminfo_t) -> (u32, bool) {
    // SAFETY: plain accessors of the meminfo QEMU passes to the memory callback.
    unsafe {
        (
            qemu_plugin_mem_size_shift(info),
            qemu_plugin_mem_is_store(info),
        )
    }
}

/// The per-access callback registered with `qemu_plugin_register_vcpu_mem_cb` for the
/// instructions QEMU reports exactly: pack and append; a full batch is written out.
pub extern "C" fn on_mem(vcpu: c_uint, info: qemu_plugin_meminfo_t, vaddr: u64, _: *mut c_void) {
    emit(vcpu, (vaddr & ADDR_MASK) | decode(info, query_qemu));
}

/// Appends one record to vCPU `vcpu`'s batch, after the SVE access being merged.
#[inline(always)]
fn emit(vcpu: c_uint, rec: u64) {
    if let Some(slot) = SLOTS.0.get(vcpu as usize) {
        // SAFETY: only this vCPU's thread uses this slot (see `Slots`).
        if unsafe { (*slot.get()).pend_len } != 0 {
            close_merge(vcpu);
        }
        if inline::on() && inline::push(vcpu, rec) {
            return;
        }
        if gated_out(slot, rec) {
            return;
        }
    }
    push(vcpu, rec);
}

/// With `sample=`: whether access `rec` is left out (then counted in its slot). Not while
/// the slot has no current batch (its thread is read again by [`push_slow`] first).
#[inline(always)]
fn gated_out(slot: &UnsafeCell<Slot>, rec: u64) -> bool {
    let Some(g) = GATE.get() else {
        return false;
    };
    if g.keeps(rec) {
        return false;
    }
    // SAFETY: only this vCPU's thread uses this slot (see `Slots`).
    let s = unsafe { &mut *slot.get() };
    if s.cap == 0 {
        return false;
    }
    s.skipped += 1;
    s.skipped_bytes += 1 << ((rec >> 56) & 0xf);
    true
}

/// Bytes one merged record may take (the largest SVE access, LD4 at 2048 bits, is 1 KiB).
pub const MERGE_MAX: u64 = 1 << 12;
// A record's size field holds at most 2^15; a skip record reads as an access of 2^13.
const _: () = assert!(MERGE_MAX < 1 << 13);

/// One active element's access `rec` of an SVE contiguous load or store (instruction
/// `desc`): extends the vCPU's run when it follows it (same instruction and direction, the
/// next address), else closes the run and starts another.
#[inline(always)]
fn merge(vcpu: c_uint, desc: usize, rec: u64) {
    let Some(slot) = SLOTS.0.get(vcpu as usize) else {
        // vCPUs beyond MAX_VCPUS: one record per element.
        push(vcpu, rec);
        return;
    };
    let size = 1u64 << ((rec >> 56) & 0xf);
    let start = (rec & ADDR_MASK) | (rec & (1 << 63));
    if inline::on()
        && let Some((_, used)) = inline::tail(vcpu)
    {
        merge_in_place(vcpu, slot, desc, start, size, used);
        return;
    }
    {
        // SAFETY: only this vCPU's thread uses this slot (see `Slots`).
        let s = unsafe { &mut *slot.get() };
        if s.pend_len != 0
            && s.pend_desc == desc
            && (s.pend ^ start) >> 63 == 0
            && (s.pend & ADDR_MASK) + s.pend_len == rec & ADDR_MASK
            && s.pend_len + size <= MERGE_MAX
        {
            s.pend_len += size;
            return;
        }
    }
    close_merge(vcpu);
    // SAFETY: as above; `close_merge` has returned.
    let s = unsafe { &mut *slot.get() };
    (s.pend, s.pend_len, s.pend_desc) = (start, size, desc);
}

/// [`merge`] with inline records: the run's records are the last of the vCPU's buffer
/// (`used` records) while nothing follows them, and are rewritten as the run grows; a run
/// that something followed is closed (its records stay as they are).
fn merge_in_place(
    vcpu: c_uint,
    slot: &UnsafeCell<Slot>,
    desc: usize,
    start: u64,
    size: u64,
    used: usize,
) {
    // SAFETY: only this vCPU's thread uses this slot (see `Slots`).
    let s = unsafe { &mut *slot.get() };
    let grows = s.pend_len != 0
        && s.pend_desc == desc
        && s.pend_end == used
        && (s.pend ^ start) >> 63 == 0
        && (s.pend & ADDR_MASK) + s.pend_len == start & ADDR_MASK
        && s.pend_len + size <= MERGE_MAX;
    let at = if grows {
        s.pend_len += size;
        inline::truncate(vcpu, s.pend_at);
        s.pend_at
    } else {
        (s.pend, s.pend_len, s.pend_desc) = (start, size, desc);
        used
    };
    let (run, len) = (s.pend, s.pend_len);
    let pieces = inline::push_run(vcpu, merged_records(run, len));
    match inline::tail(vcpu) {
        Some((_, now)) if now == at + pieces => (s.pend_at, s.pend_end) = (at, now),
        // The buffer's end was reached (records lost, counted when it is written).
        _ => s.pend_len = 0,
    }
}

/// Writes the SVE access being merged on `vcpu` (if any) as records (with inline records,
/// they are in the buffer already: the run is closed).
#[inline(never)]
fn close_merge(vcpu: c_uint) {
    let Some(slot) = SLOTS.0.get(vcpu as usize) else {
        return;
    };
    if inline::on() {
        // SAFETY: only this vCPU's thread uses this slot (see `Slots`).
        unsafe { (*slot.get()).pend_len = 0 };
        return;
    }
    let (start, len) = {
        // SAFETY: only this vCPU's thread uses this slot (see `Slots`).
        let s = unsafe { &mut *slot.get() };
        let run = (s.pend, s.pend_len);
        s.pend_len = 0;
        run
    };
    for rec in merged_records(start, len) {
        if !gated_out(slot, rec) {
            push(vcpu, rec);
        }
    }
}

/// The records of a merged run of `len` bytes from record `start` (its address and
/// direction): power-of-two pieces, the largest first.
pub fn merged_records(start: u64, len: u64) -> impl Iterator<Item = u64> {
    let store = start >> 63 == 1;
    let mut addr = start & ADDR_MASK;
    let mut left = len;
    std::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let shift = 63 - left.leading_zeros();
        let rec = record(addr, shift, store);
        addr += 1 << shift;
        left -= 1 << shift;
        Some(rec)
    })
}

/// Execution callback of an SVE contiguous load or store whose records are merged: the
/// accesses of this execution start a run of their own.
pub extern "C" fn on_merge_exec(vcpu: c_uint, _: *mut c_void) {
    if let Some(slot) = SLOTS.0.get(vcpu as usize) {
        // SAFETY: only this vCPU's thread uses this slot (see `Slots`).
        if unsafe { (*slot.get()).pend_len } != 0 {
            close_merge(vcpu);
        }
    }
}

/// Whether instruction `insn` (aarch64) is an SVE contiguous load or store, whose active
/// elements are adjacent in memory: the contiguous-load class (`LD1*`, `LDFF1*`, `LDNF1*`,
/// `LDNT1*`, `LD2*`..`LD4*`, `LD1RQ*`, `LD1RO*`) and the contiguous stores (`ST1*`,
/// `STNT1*`, `ST2*`..`ST4*`). Not gathers, scatters, `LD1R*` (one element) or `LDR`/`STR`
/// (reported as plain accesses).
pub fn sve_contiguous(insn: &[u8]) -> bool {
    let Ok(b) = <[u8; 4]>::try_from(insn) else {
        return false;
    };
    let w = u32::from_le_bytes(b);
    if (w >> 25) & 0xf != 0b0010 {
        return false;
    }
    match w >> 29 {
        // SVE Memory - Contiguous Load.
        0b101 => true,
        // SVE Memory - Store: op2 (bits 15:13) 010 ST1 (scalar plus scalar; with bits
        // 24:22 = 110 STR, a plain access), 011 STNT1/ST2-4 (scalar plus scalar), 111 ST1,
        // STNT1, ST2-4 (scalar plus immediate); 001, 100, 101, 110 are scatters, 000 STR.
        0b111 => {
            let op2 = (w >> 13) & 7;
            op2 == 0b011 || op2 == 0b111 || (op2 == 0b010 && (w >> 22) & 7 != 0b110)
        }
        // 100: 32-bit gathers, LD1R*, LDR, prefetches; 110: 64-bit gathers.
        _ => false,
    }
}

/// Appends one record to vCPU `vcpu`'s batch (coalescing it with the last one when it can).
#[inline(always)]
fn push(vcpu: c_uint, rec: u64) {
    if let Some(slot) = SLOTS.0.get(vcpu as usize) {
        // SAFETY: only this vCPU's thread uses this slot (see `Slots`).
        let s = unsafe { &mut *slot.get() };
        if s.len < s.cap {
            let mask = BLOCK_MASK.load(Ordering::Relaxed);
            if s.len > 0 {
                // SAFETY: the first `len` elements are initialized records.
                let last = unsafe { &mut *s.buf.add(s.len - 1) };
                if mask != 0 && coalesces(*last, rec, mask) {
                    *last += REPEAT_ONE;
                    return;
                }
            }
            // SAFETY: `buf` has `cap` elements.
            unsafe { *s.buf.add(s.len) = rec };
            s.len += 1;
            return;
        }
    }
    push_slow(vcpu, rec);
}

/// A vCPU without a buffer yet, with a full buffer, starting after its thread exited, or
/// beyond `MAX_VCPUS`.
#[cold]
#[inline(never)]
fn push_slow(vcpu: c_uint, rec: u64) {
    let Some(slot) = SLOTS.0.get(vcpu as usize) else {
        let thread = vcpu::get(vcpu).thread;
        if let Ok(mut v) = SHARED.lock() {
            v.push(rec);
            if v.len() >= BATCH {
                write_batch(thread, &v, (0, 0));
                v.clear();
            }
        }
        return;
    };
    // SAFETY: only this vCPU's thread uses this slot (see `Slots`).
    let s = unsafe { &mut *slot.get() };
    if s.buf.is_null() {
        s.buf = Box::into_raw(vec![0u64; BATCH].into_boxed_slice()) as *mut u64;
    } else if s.len > 0 || s.skipped > 0 {
        let skipped = take_skipped(s);
        // SAFETY: the first `len` elements are initialized records.
        write_batch(
            s.thread,
            unsafe { std::slice::from_raw_parts(s.buf, s.len) },
            skipped,
        );
    }
    s.len = 0;
    // The guest thread running on this vCPU now (an index is reused after a thread exits).
    s.thread = vcpu::get(vcpu).thread;
    s.cap = LIMIT.load(Ordering::Relaxed).min(BATCH);
    // SAFETY: `len` is 0 and `buf` has BATCH elements.
    unsafe { *s.buf.add(s.len) = rec };
    s.len += 1;
}

/// [`on_mem`] for `scope=` mode: only while a scope function runs.
pub extern "C" fn on_mem_scoped(
    vcpu: c_uint,
    info: qemu_plugin_meminfo_t,
    vaddr: u64,
    ud: *mut c_void,
) {
    if crate::scope::active(vcpu) {
        on_mem(vcpu, info, vaddr, ud);
    }
}

/// Memory callback of a return inside a `scope=` function that loads its address (x86's
/// `ret`): its access is streamed while the scope is active, then the scope is left
/// ([`crate::scope::on_return`]).
pub extern "C" fn on_mem_return(
    vcpu: c_uint,
    info: qemu_plugin_meminfo_t,
    vaddr: u64,
    ud: *mut c_void,
) {
    on_mem_scoped(vcpu, info, vaddr, ud);
    crate::scope::on_return(vcpu, std::ptr::null_mut());
}

/// What the memory callback of an instruction needs to know about it (one per instruction
/// and translation, never freed).
#[derive(Debug)]
pub struct MemDesc {
    pub kind: MemKind,
    /// Region the instruction is counted in.
    pub region: u32,
    /// Count only while a `scope=` function runs.
    pub scoped: bool,
    /// Operand bytes per execution (clipping).
    pub load_bytes: u32,
    pub store_bytes: u32,
    /// Per-instruction check of the stream against the counts (`audit=`).
    pub audit: Option<&'static Audit>,
    /// An SVE contiguous load or store whose per-element reports are merged into accesses
    /// of their combined size (see the module documentation); [`on_merge_exec`] is
    /// registered as its execution callback.
    pub merge: bool,
}

/// What the stream carried for one instruction, against its counts (`audit=`): executions,
/// bytes per execution from the encoding, bytes passed to the stream.
#[derive(Debug)]
pub struct Audit {
    pub pc: u64,
    pub disas: String,
    pub kind: MemKind,
    pub load_bytes: u64,
    pub store_bytes: u64,
    /// Incremented by an inline add per execution (exact for one guest thread).
    pub executions: AtomicU64,
    pub emitted_loaded: AtomicU64,
    pub emitted_stored: AtomicU64,
    /// Bytes QEMU reported, before clipping.
    pub reported: AtomicU64,
}

static AUDITS: Mutex<Vec<&'static Audit>> = Mutex::new(Vec::new());

/// Registers an audit record (kept for the exit report).
pub fn audit_register(a: Audit) -> &'static Audit {
    let a: &'static Audit = Box::leak(Box::new(a));
    if let Ok(mut v) = AUDITS.lock() {
        v.push(a);
    }
    a
}

/// Every audit record so far.
pub fn audits() -> Vec<&'static Audit> {
    AUDITS.lock().map(|v| v.clone()).unwrap_or_default()
}

/// Memory callback of instructions with a [`MemDesc`] (`ud`).
pub extern "C" fn on_mem_desc(
    vcpu: c_uint,
    info: qemu_plugin_meminfo_t,
    vaddr: u64,
    ud: *mut c_void,
) {
    // SAFETY: `ud` is the leaked MemDesc registered with this instruction.
    let d = unsafe { &*(ud as *const MemDesc) };
    if d.scoped && !crate::scope::active(vcpu) {
        return;
    }
    let top = decode(info, query_qemu);
    let shift = ((top >> 56) & 0xf) as u32;
    let store = top >> 63 == 1;
    let mut size = 1u64 << shift;
    if let Some(a) = d.audit {
        a.reported.fetch_add(size, Ordering::Relaxed);
    }
    let mut rec = (vaddr & ADDR_MASK) | top;
    match d.kind {
        MemKind::Dynamic => {
            let v = vcpu::get(vcpu);
            let k = if store {
                Counter::BytesStored
            } else {
                Counter::BytesLoaded
            };
            v.add_dynamic(d.region as usize, k as usize, size);
            v.add_dynamic(d.region as usize, Counter::BytesDynamic as usize, size);
        }
        MemKind::StoreExclusive => {
            if !store {
                return;
            }
            let v = vcpu::get(vcpu);
            v.add_dynamic(d.region as usize, Counter::BytesStored as usize, size);
            v.add_dynamic(d.region as usize, Counter::BytesDynamic as usize, size);
        }
        MemKind::Clipped => {
            let left = &vcpu::get(vcpu).clip[usize::from(store)];
            let l = u64::from(left.load(Ordering::Relaxed));
            if l == 0 {
                return;
            }
            if size > l {
                // Keep the operand's part: the largest power of two that fits.
                let keep = 1u64 << (63 - l.leading_zeros());
                rec = record(vaddr, keep.trailing_zeros(), store);
                size = keep;
            }
            left.store((l - size) as u32, Ordering::Relaxed);
        }
        MemKind::Exact | MemKind::Unreported => {}
    }
    if let Some(a) = d.audit {
        let c = if store {
            &a.emitted_stored
        } else {
            &a.emitted_loaded
        };
        c.fetch_add(size, Ordering::Relaxed);
    }
    if streaming() {
        if d.merge {
            merge(vcpu, ud as usize, rec);
        } else {
            emit(vcpu, rec);
        }
    }
}

/// Execution callback of a clipped instruction: its operand's bytes may pass.
pub extern "C" fn on_insn_clip(vcpu: c_uint, ud: *mut c_void) {
    // SAFETY: `ud` is the leaked MemDesc registered with this instruction.
    let d = unsafe { &*(ud as *const MemDesc) };
    let v = vcpu::get(vcpu);
    v.clip[0].store(d.load_bytes, Ordering::Relaxed);
    v.clip[1].store(d.store_bytes, Ordering::Relaxed);
}

/// Memory callback of helper-calling instructions outside the counted regions: QEMU 7.2
/// reports a helper's accesses to the callbacks last installed by an instrumented
/// instruction; this one installs a callback that drops them.
pub extern "C" fn on_mem_drop(_: c_uint, _: qemu_plugin_meminfo_t, _: u64, _: *mut c_void) {}

/// Write the pending records of vCPU `vcpu` (its own thread, or anyone once the guest
/// stopped). The thread leaves the vCPU: the next one to run on it starts a new batch under
/// its own number.
pub fn flush_vcpu(vcpu: u32) {
    if inline::on() {
        on_merge_exec(vcpu, std::ptr::null_mut());
        inline::flush(vcpu);
    }
    if let Some(slot) = SLOTS.0.get(vcpu as usize) {
        // SAFETY: called by the vCPU's own thread, or at exit.
        if unsafe { (*slot.get()).pend_len } != 0 {
            close_merge(vcpu);
        }
        // SAFETY: as above.
        let s = unsafe { &mut *slot.get() };
        if !s.buf.is_null() && (s.len > 0 || s.skipped > 0) {
            let skipped = take_skipped(s);
            // SAFETY: as in `on_mem`.
            write_batch(
                s.thread,
                unsafe { std::slice::from_raw_parts(s.buf, s.len) },
                skipped,
            );
            s.len = 0;
        }
        s.cap = 0;
    }
}

/// The slot's counts of accesses and bytes left out, reset.
fn take_skipped(s: &mut Slot) -> (u64, u64) {
    let t = (s.skipped, s.skipped_bytes);
    (s.skipped, s.skipped_bytes) = (0, 0);
    t
}

/// The records that open a batch of thread `thread`: its marker, then, when `sample=` left
/// accesses out since its previous batch, the two skip records.
fn batch_head(thread: u32, (skipped, skipped_bytes): (u64, u64)) -> ([u8; 24], usize) {
    let mut head = [0u8; 24];
    head[..8].copy_from_slice(&thread_marker(thread).to_le_bytes());
    if skipped == 0 {
        return (head, 8);
    }
    head[8..16].copy_from_slice(&skip_record(skipped, false).to_le_bytes());
    head[16..].copy_from_slice(&skip_record(skipped_bytes, true).to_le_bytes());
    SKIPPED.fetch_add(skipped, Ordering::Relaxed);
    (head, 24)
}

/// Accesses `sample=` left out, all threads.
static SKIPPED: AtomicU64 = AtomicU64::new(0);

/// Accesses left out by `sample=` so far (written in skip records).
pub fn skipped() -> u64 {
    SKIPPED.load(Ordering::Relaxed)
}

/// Writes thread `thread`'s marker, the counts of accesses `sample=` left out and its
/// records `v` in one piece (the sink's lock keeps other threads' batches out of it).
fn write_batch(thread: u32, v: &[u64], skipped: (u64, u64)) {
    if v.is_empty() && skipped.0 == 0 {
        return;
    }
    let n = v.len() as u64;
    if crate::fork::is_child() {
        // A forked child's records are not the program's stream (see `fork`).
        return;
    }
    if BROKEN.load(Ordering::Relaxed) {
        DROPPED.fetch_add(n, Ordering::Relaxed);
        return;
    }
    let (head, head_len) = batch_head(thread, skipped);
    let marker = &head[..head_len];
    #[cfg(target_endian = "little")]
    // SAFETY: reinterpreting initialized u64s as bytes; records are little-endian already.
    let bytes = unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 8) };
    #[cfg(target_endian = "big")]
    let owned: Vec<u8> = v.iter().flat_map(|r| r.to_le_bytes()).collect();
    #[cfg(target_endian = "big")]
    let bytes = &owned[..];
    let ok = match SINK.lock() {
        Ok(mut sink) => match sink.as_mut() {
            Some(Sink::Plain(f)) => f.write_all(marker).is_ok() && f.write_all(bytes).is_ok(),
            Some(Sink::Ring(r)) => r.put(marker, bytes).is_ok(),
            None => false,
        },
        Err(_) => false,
    };
    if ok {
        WRITTEN.fetch_add(n, Ordering::Relaxed);
    } else {
        BROKEN.store(true, Ordering::Relaxed);
        DROPPED.fetch_add(n, Ordering::Relaxed);
    }
}

#[cfg(not(feature = "api-v1"))]
/// Writes out a buffer of inline records of vCPU `vcpu`: `sample=` leaves out the accesses
/// of unsampled classes (counted in the batch's skip records), then coalescing.
fn write_inline_batch(vcpu: c_uint, v: &mut [u64]) {
    let mut n = v.len();
    let mut skipped = (0, 0);
    if let Some(g) = GATE.get() {
        let (kept, accesses, bytes) = hpcscope_plugin_format::gate::gate_in_place(v, g);
        (n, skipped) = (kept, (accesses, bytes));
    }
    let n =
        hpcscope_plugin_format::coalesce_in_place(&mut v[..n], BLOCK_MASK.load(Ordering::Relaxed));
    write_batch(vcpu::get(vcpu).thread, &v[..n], skipped);
}

/// What [`push`] makes of `accesses` with coalescing blocks of `mask + 1` bytes (one
/// unbounded batch).
#[cfg(all(test, not(feature = "api-v1")))]
pub(crate) fn push_reference(accesses: &[u64], mask: u64) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    for &rec in accesses {
        match out.last_mut() {
            Some(last) if coalesces(*last, rec, mask) => *last += REPEAT_ONE,
            _ => out.push(rec),
        }
    }
    out
}

/// In a child the guest forked: the stream's descriptors are closed (the reader sees the
/// end of the stream when the parent ends), when no other thread held the sink's lock at the
/// fork (otherwise they stay open, unused).
pub fn forked() {
    if let Ok(mut sink) = SINK.try_lock() {
        *sink = None;
    }
}

/// Flush the sink; returns (records written, records dropped after a write error).
pub fn finish() -> (u64, u64) {
    // The guest has stopped: every vCPU's pending records can be written.
    for vcpu in 0..MAX_VCPUS as u32 {
        flush_vcpu(vcpu);
    }
    if let Ok(mut v) = SHARED.lock()
        && !v.is_empty()
    {
        // The guest has stopped: the shared counting slot exists since records were pushed.
        write_batch(vcpu::get(MAX_VCPUS as u32).thread, &v, (0, 0));
        v.clear();
    }
    if let Ok(mut sink) = SINK.lock()
        && let Some(f) = sink.as_mut()
    {
        let _ = f.out().flush();
    }
    (
        WRITTEN.load(Ordering::Relaxed),
        DROPPED.load(Ordering::Relaxed),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_cache_round_trips() {
        // The first look-up asks, the second comes from the cache.
        assert_eq!(decode(7, |_| (3, true)), record(0, 3, true));
        assert_eq!(decode(7, |_| unreachable!()), record(0, 3, true));
        assert_eq!(decode(9, |_| (2, false)), record(0, 2, false));
    }

    #[test]
    fn sve_contiguous_forms() {
        // Encodings from the GNU assembler (-march=armv8.2-a+sve).
        let contiguous = [
            (0xa5e2_4020u32, "ld1d {z0.d}, p0/z, [x1, x2, lsl #3]"),
            (0xa5e1_a020, "ld1d {z0.d}, p0/z, [x1, #1, mul vl]"),
            (0xa542_4020, "ld1w {z0.s}, p0/z, [x1, x2, lsl #2]"),
            (0xa5e2_6020, "ldff1d {z0.d}, p0/z, [x1, x2, lsl #3]"),
            (0xa5f0_a020, "ldnf1d {z0.d}, p0/z, [x1]"),
            (0xa5a2_c020, "ld2d {z0.d, z1.d}, p0/z, [x1, x2, lsl #3]"),
            (0xa582_c020, "ldnt1d {z0.d}, p0/z, [x1, x2, lsl #3]"),
            (0xa580_2020, "ld1rqd {z0.d}, p0/z, [x1]"),
            (0xe5e2_4020, "st1d {z0.d}, p0, [x1, x2, lsl #3]"),
            (0xe5e1_e020, "st1d {z0.d}, p0, [x1, #1, mul vl]"),
            (0xe402_4020, "st1b {z0.b}, p0, [x1, x2]"),
            (0xe5a2_6020, "st2d {z0.d, z1.d}, p0, [x1, x2, lsl #3]"),
            (0xe582_6020, "stnt1d {z0.d}, p0, [x1, x2, lsl #3]"),
            (0xe5f1_e020, "st4d {z0.d-z3.d}, p0, [x1, #4, mul vl]"),
        ];
        let other = [
            (0xc5e2_c020u32, "ld1d {z0.d}, p0/z, [x1, z2.d, lsl #3]"),
            (0x8522_4020, "ld1w {z0.s}, p0/z, [x1, z2.s, uxtw #2]"),
            (0xc5a1_c040, "ld1d {z0.d}, p0/z, [z2.d, #8]"),
            (0xc5e2_e020, "ldff1d {z0.d}, p0/z, [x1, z2.d, lsl #3]"),
            (0x85c0_e020, "ld1rd {z0.d}, p0/z, [x1]"),
            (0x8580_4020, "ldr z0, [x1]"),
            (0xe580_4020, "str z0, [x1]"),
            (0xe580_0020, "str p0, [x1]"),
            (0xe5a2_a020, "st1d {z0.d}, p0, [x1, z2.d, lsl #3]"),
            (0xe562_8020, "st1w {z0.s}, p0, [x1, z2.s, uxtw #2]"),
            (0xe5c1_a040, "st1d {z0.d}, p0, [z2.d, #8]"),
            (0xe582_a020, "st1d {z0.d}, p0, [x1, z2.d]"),
            (0xf940_0020, "ldr x0, [x1]"),
            (0x3dc0_0020, "ldr q0, [x1]"),
        ];
        for (w, asm) in contiguous {
            assert!(sve_contiguous(&w.to_le_bytes()), "{asm}");
        }
        for (w, asm) in other {
            assert!(!sve_contiguous(&w.to_le_bytes()), "{asm}");
        }
        assert!(!sve_contiguous(&[0x20, 0x40]));
    }

    #[test]
    fn merged_runs_are_power_of_two_pieces() {
        let pieces = |addr: u64, len: u64, store: bool| -> Vec<(u64, u64, bool)> {
            merged_records(record(addr, 0, store), len)
                .map(|r| (r & ADDR_MASK, 1 << ((r >> 56) & 0xf), r >> 63 == 1))
                .collect()
        };
        // A full 512-bit ld1d: one 64-byte access.
        assert_eq!(pieces(0x1000, 64, false), vec![(0x1000, 64, false)]);
        // 5 active doubles: 32 + 8 bytes, in address order.
        assert_eq!(
            pieces(0x2008, 40, true),
            vec![(0x2008, 32, true), (0x2028, 8, true)]
        );
        // 7 active bytes: 4 + 2 + 1.
        assert_eq!(
            pieces(0x3001, 7, false),
            vec![(0x3001, 4, false), (0x3005, 2, false), (0x3007, 1, false)]
        );
        assert_eq!(pieces(0x3001, 0, false), vec![]);
        // The largest merged run is a record.
        assert_eq!(
            pieces(0x4000, MERGE_MAX, false),
            vec![(0x4000, MERGE_MAX, false)]
        );
    }
}
