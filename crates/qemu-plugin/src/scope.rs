//! `scope=` mode: count while a given function runs, callees included.
//!
//! Plugin API v1 cannot read registers, so the plugin cannot see return addresses; it keeps
//! a call depth per vCPU instead. Entering the function's first instruction (the start of
//! a translation block, as every call target is) increments it; executing a return
//! instruction inside the function decrements it. Blocks are counted while the depth is
//! positive, by a (non-inline) execution callback per block, so this mode costs one call
//! per executed block. Recursion nests correctly; a function left by a tail call (a jump
//! to another function) or re-entered by a jump to its first instruction confuses the
//! depth — pass such functions as `region=` instead. Blocks are counted per vCPU, like
//! everything else when a program has threads ([`crate::vcpu`]).
//!
//! Code outside the scope: a block outside the scope functions may run in scope (a callee)
//! or not, so it needs the callbacks while a scope function runs, and they cost as much
//! outside as inside (one call per block and per access, dropped at once: measured 1.8x bare
//! QEMU on a program that never entered its scope). So while the guest has one thread, the
//! translations follow the depth: outside every scope, only the scope functions' own blocks
//! are instrumented (and the rest of the program runs like under bare QEMU); a block that
//! finds the depth and the translations disagreeing (an entry, or a block after the last
//! return) asks QEMU for a reset ([`switch`]): the code cache is flushed before the next
//! block runs, and the next translations follow the depth again. A reset costs a
//! retranslation of the code that runs, so after [`MAX_SWITCHES`] of them (a scope entered
//! often) every block stays instrumented, as with several threads.

use std::ffi::{c_uint, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// vCPUs with a depth of their own; higher indices share the last one.
const MAX_VCPUS: usize = crate::vcpu::MAX_VCPUS;

static DEPTH: [AtomicU32; MAX_VCPUS] = [const { AtomicU32::new(0) }; MAX_VCPUS];

fn depth(vcpu: c_uint) -> &'static AtomicU32 {
    &DEPTH[(vcpu as usize).min(MAX_VCPUS - 1)]
}

/// Per-translation-block data of the scoped execution callback.
pub struct ScopeTb {
    /// This block's counter id ([`crate::vcpu::Vcpu::count_tb`]).
    pub id: u32,
    /// The block starts at the entry of a scope function.
    pub entry: bool,
}

/// Resets after which every block stays instrumented.
pub const MAX_SWITCHES: u32 = 64;
/// Blocks translated from now on are instrumented wherever they are (else only those of
/// the scope functions).
static INSTRUMENT_ALL: AtomicBool = AtomicBool::new(true);
/// Instrument everything for good (several guest threads, many switches, no reset API).
static LOCKED: AtomicBool = AtomicBool::new(true);
/// A reset was asked for and has not happened yet.
static PENDING: AtomicBool = AtomicBool::new(false);
/// Resets asked for so far.
static SWITCHES: AtomicU32 = AtomicU32::new(0);

/// Lets translations follow the depth (one guest thread, before it runs).
pub fn enable_switching() {
    LOCKED.store(false, Ordering::Relaxed);
    INSTRUMENT_ALL.store(false, Ordering::Relaxed);
}

/// Instrument every block for good: from now on if a reset is pending, else after one
/// asked for here (when the translations leave blocks out).
pub fn lock() {
    if LOCKED.swap(true, Ordering::AcqRel) || INSTRUMENT_ALL.load(Ordering::Relaxed) {
        return;
    }
    if !PENDING.swap(true, Ordering::AcqRel) {
        SWITCHES.fetch_add(1, Ordering::Relaxed);
        request_reset();
    }
}

/// Whether blocks outside the scope functions get their callbacks when translated now.
#[inline]
pub fn instrument_all() -> bool {
    INSTRUMENT_ALL.load(Ordering::Relaxed)
}

/// Resets made to switch the translations (reported in the summary).
pub fn switches() -> u32 {
    SWITCHES.load(Ordering::Relaxed)
}

/// Called with every vCPU stopped, after the code cache was flushed: the translations from
/// now on follow the depth of vCPU 0 (the only one while switching is on).
pub fn after_reset() {
    let inside = depth(0).load(Ordering::Relaxed) > 0;
    INSTRUMENT_ALL.store(LOCKED.load(Ordering::Relaxed) || inside, Ordering::Relaxed);
    PENDING.store(false, Ordering::Release);
}

/// Asks for a reset when the translations and vCPU `vcpu`'s depth `v` disagree.
#[inline(always)]
fn follow(v: u32) {
    if LOCKED.load(Ordering::Relaxed) || (v > 0) == INSTRUMENT_ALL.load(Ordering::Relaxed) {
        return;
    }
    switch();
}

#[cold]
#[inline(never)]
fn switch() {
    if PENDING.swap(true, Ordering::AcqRel) {
        return;
    }
    if SWITCHES.fetch_add(1, Ordering::Relaxed) + 1 >= MAX_SWITCHES {
        LOCKED.store(true, Ordering::Relaxed);
    }
    request_reset();
}

/// Asks QEMU for a reset (the unit tests, which have no QEMU, never switch).
fn request_reset() {
    #[cfg(not(test))]
    crate::glue::request_reset();
}

/// Whether vCPU `vcpu` is inside a scope function.
#[inline(always)]
pub fn active(vcpu: c_uint) -> bool {
    depth(vcpu).load(Ordering::Relaxed) > 0
}

/// Block execution callback; `ud` points to a leaked [`ScopeTb`].
pub extern "C" fn on_tb(vcpu: c_uint, ud: *mut c_void) {
    // SAFETY: `ud` is the `ScopeTb` registered with this block, never freed.
    let tb = unsafe { &*(ud as *const ScopeTb) };
    let d = depth(vcpu);
    let mut v = d.load(Ordering::Relaxed);
    if tb.entry {
        v += 1;
        d.store(v, Ordering::Relaxed);
    }
    if v > 0 {
        crate::vcpu::get(vcpu).count_tb(tb.id);
    }
    follow(v);
}

/// Execution callback of a return instruction inside a scope function.
pub extern "C" fn on_return(vcpu: c_uint, _: *mut c_void) {
    let d = depth(vcpu);
    let v = d.load(Ordering::Relaxed);
    d.store(v.saturating_sub(1), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_between_entry_and_return() {
        let mut entry = ScopeTb { id: 1, entry: true };
        let mut body = ScopeTb {
            id: 2,
            entry: false,
        };
        let vcpu = 77;
        let body_ud = &mut body as *mut ScopeTb as *mut c_void;
        on_tb(vcpu, body_ud); // outside: not counted
        on_tb(vcpu, &mut entry as *mut ScopeTb as *mut c_void);
        on_tb(vcpu, body_ud);
        on_tb(vcpu, body_ud);
        on_return(vcpu, std::ptr::null_mut());
        on_tb(vcpu, body_ud); // after return: not counted
        let v = crate::vcpu::get(vcpu);
        assert_eq!((v.executions(1), v.executions(2)), (1, 2));
        assert!(!active(vcpu));
    }
}
