//! Processes the guest forks. QEMU's user mode runs a child of `fork()` (without `exec`) in a
//! copy of its own process, the plugin included: the child would write the parent's pending
//! records again, add its own accesses to the parent's stream under the parent's thread
//! numbers and overwrite the parent's summary. A handler registered with `pthread_atfork`
//! keeps the child out: it writes no record, marker or summary, and the parent counts the
//! children (`forked_processes` in the summary), whose work is then not in the counts.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static CHILD: AtomicBool = AtomicBool::new(false);
static FORKS: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" {
    fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> c_int;
}

extern "C" fn in_parent() {
    FORKS.fetch_add(1, Ordering::Relaxed);
}

extern "C" fn in_child() {
    CHILD.store(true, Ordering::Relaxed);
    crate::memtrace::forked();
}

/// Registers the handlers (once, at installation).
pub fn watch() {
    // SAFETY: plain libc call with handlers that only touch atomics and the stream's lock
    // (taken without waiting).
    unsafe { pthread_atfork(None, Some(in_parent), Some(in_child)) };
}

/// Whether this process is a child the guest forked (it reports nothing).
pub fn is_child() -> bool {
    CHILD.load(Ordering::Relaxed)
}

/// Children the guest forked so far.
pub fn forks() -> u64 {
    FORKS.load(Ordering::Relaxed)
}
