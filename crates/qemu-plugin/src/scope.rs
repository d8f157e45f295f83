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

use std::ffi::{c_uint, c_void};
use std::sync::atomic::{AtomicU32, Ordering};

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
