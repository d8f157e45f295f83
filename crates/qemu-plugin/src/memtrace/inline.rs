//! Records written by QEMU's translated code (`meminline=on`, QEMU built by
//! `scripts/build-qemu.sh`): no call per access.
//!
//! QEMU as `build-qemu.sh` builds it carries one function more than upstream's plugin API,
//! `qemu_plugin_register_vcpu_mem_record_per_vcpu` (`scripts/qemu-patches/`): every access
//! of an instruction registered with it appends its record (the stream's format, no
//! repeats) to its vCPU's buffer in translated code, as an inline add does to a counter.
//! The buffer's state is a scoreboard entry of three `u64`: the bytes used, the buffer's
//! address and the limit the bytes used stop at. The plugin empties the buffer at the start
//! of a block when it holds [`super::LIMIT`] records or more (a conditional callback, one
//! compare per block), and the memory callbacks that remain (instructions counted from
//! QEMU's reports, SVE contiguous accesses, the accesses of helpers) append to the same
//! buffer, so the records keep their order. Coalescing and `sample=` are applied to each
//! buffer when it is written out, which gives the records the callbacks would have given.
//!
//! A buffer holds [`RESERVE`] records beyond the limit: the most the instructions of one
//! block can add after the check (a block has at most 512 instructions). Should a block
//! still add more, the bytes used stop at the end of the buffer (the last slot is
//! overwritten): the plugin counts such a buffer as a loss and reports it.

use std::ffi::{c_char, c_uint, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use qemu_plugin::sys::{
    qemu_plugin_cb_flags, qemu_plugin_cond, qemu_plugin_insn, qemu_plugin_mem_rw,
    qemu_plugin_register_vcpu_tb_exec_cond_cb, qemu_plugin_scoreboard, qemu_plugin_scoreboard_find,
    qemu_plugin_scoreboard_new, qemu_plugin_tb, qemu_plugin_u64,
};

use super::{BATCH, LIMIT};

/// The registration function the patched QEMU exports.
type RecordFn = unsafe extern "C" fn(*mut qemu_plugin_insn, qemu_plugin_mem_rw, qemu_plugin_u64);

/// Name of that function.
pub const RECORD_FN: &str = "qemu_plugin_register_vcpu_mem_record_per_vcpu";

/// Records a buffer holds beyond the limit: what one block may add after its check (512
/// instructions of up to 128 accesses each, which no instruction QEMU translates inline
/// exceeds; longer ones, `rep` strings and gathers among them, run in helpers whose
/// accesses come through the callbacks, which check the limit each time).
pub const RESERVE: usize = 1 << 16;

struct Inline {
    register: RecordFn,
    score: *mut qemu_plugin_scoreboard,
}

// SAFETY: the scoreboard lives as long as the plugin; QEMU's functions are thread-safe.
unsafe impl Send for Inline {}
unsafe impl Sync for Inline {}

static INLINE: OnceLock<Inline> = OnceLock::new();
/// One more than the highest vCPU index given a buffer (QEMU asserts on an entry of a
/// vCPU it does not know).
static VCPUS: AtomicU32 = AtomicU32::new(0);
/// Buffers that reached their end (records lost).
static LOSSES: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

/// Whether this QEMU has the inline record (the patched build).
pub fn available() -> bool {
    lookup().is_some()
}

fn lookup() -> Option<RecordFn> {
    let name = std::ffi::CString::new(RECORD_FN).ok()?;
    // SAFETY: dlsym with RTLD_DEFAULT (a null handle on Linux) looks the symbol up in the
    // process (QEMU exports its plugin API); the function has the declared signature.
    let p = unsafe { dlsym(std::ptr::null_mut(), name.as_ptr()) };
    (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, RecordFn>(p) })
}

/// Turns the inline records on (at installation); an error when QEMU lacks them.
pub fn enable() -> Result<(), String> {
    let register = lookup().ok_or_else(|| {
        format!(
            "meminline=on: this QEMU has no {RECORD_FN} (build QEMU with scripts/build-qemu.sh, or drop meminline=on)"
        )
    })?;
    // SAFETY: plain API call; the scoreboard is never freed.
    let score = unsafe { qemu_plugin_scoreboard_new(4 * std::mem::size_of::<u64>()) };
    let _ = INLINE.set(Inline { register, score });
    Ok(())
}

/// Whether the inline records are on.
#[inline(always)]
pub fn on() -> bool {
    INLINE.get().is_some()
}

fn entry(i: &Inline) -> qemu_plugin_u64 {
    qemu_plugin_u64 {
        score: i.score,
        offset: 0,
    }
}

/// vCPU `vcpu`'s state: bytes used, buffer address, limit.
#[inline(always)]
fn state(vcpu: c_uint) -> Option<&'static mut [u64; 4]> {
    let i = INLINE.get()?;
    if vcpu >= VCPUS.load(Ordering::Acquire) {
        return None;
    }
    // SAFETY: the entry of a live scoreboard for a vCPU QEMU knows; only its own thread
    // (or the exit, when the guest has stopped) touches it.
    unsafe {
        let p = qemu_plugin_scoreboard_find(i.score, vcpu) as *mut [u64; 4];
        p.as_mut()
    }
}

/// A vCPU starts (before it runs a block): its buffer.
pub fn vcpu_init(vcpu: c_uint) {
    VCPUS.fetch_max(vcpu + 1, Ordering::AcqRel);
    let Some(s) = state(vcpu) else { return };
    if s[1] == 0 {
        let records = BATCH + RESERVE + 1;
        let buf = Box::into_raw(vec![0u64; records].into_boxed_slice()) as *mut u64;
        s[1] = buf as u64;
        s[2] = ((records - 1) * 8) as u64;
    }
}

/// Registers the inline record for every access of `insn`.
///
/// # Safety
/// `insn` is an instruction handle of the translation callback.
pub unsafe fn register(insn: *mut qemu_plugin_insn) {
    if let Some(i) = INLINE.get() {
        // SAFETY: the caller's handle; the function of the patched QEMU.
        unsafe { (i.register)(insn, qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_RW, entry(i)) };
    }
}

/// Registers the check that empties a full buffer at the start of `tb`.
///
/// # Safety
/// `tb` is the translation callback's block.
pub unsafe fn register_check(tb: *mut qemu_plugin_tb) {
    if let Some(i) = INLINE.get() {
        let limit = LIMIT.load(Ordering::Relaxed).min(BATCH) as u64 * 8;
        // SAFETY: plain API call on the caller's block.
        unsafe {
            qemu_plugin_register_vcpu_tb_exec_cond_cb(
                tb,
                Some(on_full),
                qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                qemu_plugin_cond::QEMU_PLUGIN_COND_GE,
                entry(i),
                limit,
                std::ptr::null_mut(),
            )
        };
    }
}

extern "C" fn on_full(vcpu: c_uint, _: *mut c_void) {
    flush(vcpu);
}

/// Appends record `rec` (a callback's) to vCPU `vcpu`'s buffer; empties a full one.
/// Returns false when the inline records are off or the vCPU has no buffer.
#[inline(always)]
pub fn push(vcpu: c_uint, rec: u64) -> bool {
    let Some(s) = state(vcpu) else { return false };
    if s[1] == 0 {
        return false;
    }
    append(s, rec);
    if s[0] >= LIMIT.load(Ordering::Relaxed).min(BATCH) as u64 * 8 {
        flush(vcpu);
    }
    true
}

/// Appends the records of an SVE run being merged at the end of vCPU `vcpu`'s buffer,
/// without emptying it (a run written out in two batches would be two accesses): the
/// next block's check does, and [`RESERVE`] holds a run (at most 13 records). Returns the
/// records appended.
pub fn push_run(vcpu: c_uint, recs: impl Iterator<Item = u64>) -> usize {
    let Some(s) = state(vcpu).filter(|s| s[1] != 0) else {
        return 0;
    };
    recs.map(|rec| append(s, rec)).count()
}

#[inline(always)]
fn append(s: &mut [u64; 4], rec: u64) {
    // SAFETY: `used` is at most the limit, and the buffer holds limit + 8 bytes.
    unsafe { *((s[1] + s[0]) as *mut u64) = rec };
    s[0] = (s[0] + 8).min(s[2]);
}

/// The records in vCPU `vcpu`'s buffer, and where the next goes (for merging SVE runs in
/// place: see [`super::merge`]).
#[inline(always)]
pub fn tail(vcpu: c_uint) -> Option<(*mut u64, usize)> {
    let s = state(vcpu)?;
    (s[1] != 0).then_some((s[1] as *mut u64, (s[0] / 8) as usize))
}

/// Sets the number of records in vCPU `vcpu`'s buffer (at most what it held).
#[inline(always)]
pub fn truncate(vcpu: c_uint, records: usize) {
    if let Some(s) = state(vcpu) {
        s[0] = s[0].min(records as u64 * 8);
    }
}

/// Writes out vCPU `vcpu`'s buffer (coalesced and gated like the callbacks' records).
pub fn flush(vcpu: c_uint) {
    let Some(s) = state(vcpu) else { return };
    if s[1] == 0 || s[0] == 0 {
        return;
    }
    let n = (s[0] / 8) as usize;
    if s[0] >= s[2] {
        LOSSES.fetch_add(1, Ordering::Relaxed);
    }
    // SAFETY: the first `n` records of the buffer are initialized.
    let v = unsafe { std::slice::from_raw_parts_mut(s[1] as *mut u64, n) };
    s[0] = 0;
    super::write_inline_batch(vcpu, v);
}

/// Buffers that reached their end before a check emptied them.
pub fn losses() -> u64 {
    LOSSES.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::super::{ADDR_MASK, push_reference, record};

    #[test]
    fn coalescing_a_buffer_gives_the_callbacks_records() {
        // A mix of shapes, blocks and crossings: what pushing one by one gives.
        let mut accesses = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let addr = 0x1000 + (x % 512);
            let shift = (x >> 20) as u32 % 5;
            let store = (x >> 30) & 1 == 1;
            accesses.push(record(addr & ADDR_MASK, shift, store));
        }
        for mask in [63u64, 127, 4095] {
            let want = push_reference(&accesses, mask);
            let mut got = accesses.clone();
            let n = hpcscope_plugin_format::coalesce_in_place(&mut got, mask);
            assert_eq!(&got[..n], &want[..], "mask {mask}");
        }
    }
}
