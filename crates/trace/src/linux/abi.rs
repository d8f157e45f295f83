//! Rust mirrors of the structs shared with the BPF programs (`bpf/hpcscope.h`).
//!
//! Field order, types and padding match the C declarations exactly; `aya::Pod` lets aya copy
//! them out of maps byte for byte.

#![allow(missing_docs)]

pub const HIST_SLOTS: usize = 48;
pub const USTACK_DEPTH: usize = 8;
/// Number of uprobe/uretprobe program pairs in the object (`hs_fn_enter_N`/`hs_fn_exit_N`).
pub const UPROBE_SLOTS: usize = 32;
/// Number of USDT programs in the object (`hs_usdt_N`): one per PROVIDER:NAME probed.
pub const USDT_SLOTS: usize = 16;
/// Buckets in the ring of the rate series (`rates`).
pub const RATE_SLOTS: u32 = 1024;
pub const PATH_LEN: usize = 256;
pub const COMM_LEN: usize = 16;

pub const EV_EXEC: u32 = 1;
pub const EV_EXIT: u32 = 2;
pub const EV_FORK: u32 = 3;
pub const EV_ONCPU: u32 = 4;
pub const EV_FUNC: u32 = 5;
pub const EV_USDT: u32 = 6;
/// A cpu-clock sample sent whole ([`StackEvent`]): the stack map could not hold its stack.
pub const EV_STACK: u32 = 7;
/// Frames of each stack in a [`StackEvent`].
pub const STACK_FRAMES: usize = 127;

/// Indexes of the `drops` counters (`LOST_*` in `bpf/hpcscope.h`).
pub const LOST_RINGBUF: u32 = 0;
pub const LOST_DEEP: u32 = 1;
pub const LOST_TARGETS: u32 = 2;
pub const LOST_SC_STARTS: u32 = 3;
pub const LOST_SC_STATS: u32 = 4;
pub const LOST_THREADS: u32 = 5;
pub const LOST_FILES: u32 = 6;
pub const LOST_BLOCK: u32 = 7;
pub const LOST_SAMPLES: u32 = 8;
pub const LOST_STACKS: u32 = 9;
pub const LOST_FUNCS: u32 = 10;
pub const LOST_MSGS: u32 = 11;
pub const LOST_USDT: u32 = 12;
pub const LOST_IOSIZE: u32 = 13;
pub const LOST_SLOTS: u32 = 14;

macro_rules! pod {
    ($($t:ty),*) => {$(
        // SAFETY: plain `repr(C)` data with no padding the C side leaves undefined that we
        // read (every padding field is explicit), valid for any bit pattern.
        unsafe impl aya::Pod for $t {}
    )*};
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScKey {
    pub tgid: u32,
    pub tid: u32,
    pub nr: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ScStats {
    pub count: u64,
    pub errors: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    pub min_ns: u64,
    pub untimed: u64,
    pub hist: [u64; HIST_SLOTS],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ThreadStats {
    pub tgid: u32,
    pub last_cpu: u32,
    pub comm: [u8; COMM_LEN],
    pub on_cpu_ns: u64,
    pub off_cpu_ns: u64,
    pub runq_ns: u64,
    pub runq_max_ns: u64,
    pub vol_switches: u64,
    pub invol_switches: u64,
    pub migrations: u64,
    pub wakeups: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub last_on_ts: u64,
    pub last_off_ts: u64,
    pub wake_ts: u64,
    pub exited: u64,
    pub last_runtime: u64,
    pub on_runtime: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FdKey {
    pub tgid: u32,
    pub fd: i32,
    pub generation: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FdStats {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub reads: u64,
    pub writes: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FdPath {
    pub path: [u8; PATH_LEN],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BlkStats {
    pub count: u64,
    pub bytes: u64,
    pub other_count: u64,
    pub other_bytes: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    pub lat_hist: [u64; HIST_SLOTS],
    pub size_hist: [u64; HIST_SLOTS],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SampleKey {
    pub tgid: u32,
    pub tid: u32,
    pub kstack: i32,
    pub ustack: i32,
    pub comm: [u8; COMM_LEN],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FnKey {
    pub tgid: u32,
    pub tid: u32,
    pub slot: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FnStats {
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    pub min_ns: u64,
    pub hist: [u64; HIST_SLOTS],
}

/// Per uprobe slot: the arguments that give a message's element count and datatype (1 to 6;
/// 0: none), and the datatype handle's width in bits (32 or 64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsgArgs {
    pub count_arg: u8,
    pub dtype_arg: u8,
    pub dtype_bits: u8,
    pub pad: u8,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MsgKey {
    pub tgid: u32,
    pub slot: u32,
    pub dtype: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MsgStats {
    pub calls: u64,
    pub elements: u64,
    pub entry_ip: u64,
    pub exe_code: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct UsdtKey {
    pub tgid: u32,
    pub tid: u32,
    pub slot: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateBucket {
    pub epoch: u64,
    pub syscalls: u64,
    pub faults: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub switches: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IoSizeKey {
    pub tgid: u32,
    pub tid: u32,
    pub dir: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IoSizeStats {
    pub calls: u64,
    pub bytes: u64,
    pub hist: [u64; HIST_SLOTS],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub kind: u32,
    pub tgid: u32,
    pub tid: u32,
    pub cpu: u32,
    pub ts: u64,
    pub dur: u64,
    pub arg: u64,
    pub comm: [u8; COMM_LEN],
}

/// `struct stack_event`: a cpu-clock sample with its stacks copied (innermost first).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StackEvent {
    pub kind: u32,
    pub tgid: u32,
    pub tid: u32,
    pub ubytes: i32,
    pub kbytes: i32,
    pub pad: u32,
    pub comm: [u8; COMM_LEN],
    pub ustack: [u64; STACK_FRAMES],
    pub kstack: [u64; STACK_FRAMES],
}

impl StackEvent {
    /// The user stack's addresses, innermost first (`None`: it could not be read).
    pub fn user(&self) -> Option<&[u64]> {
        frames(&self.ustack, self.ubytes)
    }

    /// The kernel stack's addresses, innermost first (`None`: it could not be read).
    pub fn kernel(&self) -> Option<&[u64]> {
        frames(&self.kstack, self.kbytes)
    }
}

fn frames(stack: &[u64; STACK_FRAMES], bytes: i32) -> Option<&[u64]> {
    let n = usize::try_from(bytes).ok()? / 8;
    (n > 0).then(|| &stack[..n.min(STACK_FRAMES)])
}

/// The ring buffer record's kind (its first `u32`), `None` for a record too short to have one.
pub fn record_kind(b: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(..4)?.try_into().ok()?))
}

/// A [`StackEvent`] from a ring buffer record of kind [`EV_STACK`].
pub fn parse_stack_event(b: &[u8]) -> Option<StackEvent> {
    if b.len() < std::mem::size_of::<StackEvent>() || record_kind(b) != Some(EV_STACK) {
        return None;
    }
    // SAFETY: length checked; StackEvent is plain data valid for any bit pattern.
    Some(unsafe { std::ptr::read_unaligned(b.as_ptr() as *const StackEvent) })
}

pod!(
    ScKey,
    ScStats,
    ThreadStats,
    FdKey,
    FdStats,
    FdPath,
    BlkStats,
    SampleKey,
    FnKey,
    FnStats,
    MsgArgs,
    MsgKey,
    MsgStats,
    UsdtKey,
    RateBucket,
    IoSizeKey,
    IoSizeStats
);

/// A NUL-terminated C string in a fixed buffer, as text.
pub fn cstr(b: &[u8]) -> String {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..n]).into_owned()
}

/// Reads an [`Event`] from ring-buffer bytes (None when too short).
pub fn parse_event(b: &[u8]) -> Option<Event> {
    if b.len() < std::mem::size_of::<Event>() {
        return None;
    }
    // SAFETY: length checked; Event is plain data valid for any bit pattern; read_unaligned
    // because ring-buffer records are only 8-byte aligned by convention.
    Some(unsafe { std::ptr::read_unaligned(b.as_ptr() as *const Event) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    #[test]
    fn sizes_match_the_c_structs() {
        // Sizes computed from bpf/hpcscope.h by hand (all fields naturally aligned).
        assert_eq!(size_of::<ScStats>(), 8 * (6 + HIST_SLOTS));
        assert_eq!(size_of::<ThreadStats>(), 8 + 16 + 8 * 16);
        assert_eq!(size_of::<SampleKey>(), 32);
        assert_eq!(size_of::<FnStats>(), 8 * (4 + HIST_SLOTS));
        assert_eq!(size_of::<BlkStats>(), 8 * (6 + 2 * HIST_SLOTS));
        assert_eq!(size_of::<Event>(), 56);
        assert_eq!(size_of::<StackEvent>(), 24 + 16 + 2 * 8 * STACK_FRAMES);
        assert_eq!(size_of::<MsgArgs>(), 4);
        assert_eq!(size_of::<MsgKey>(), 16);
        assert_eq!(size_of::<MsgStats>(), 32);
        assert_eq!(size_of::<ScKey>(), 16);
        assert_eq!(size_of::<FnKey>(), 16);
        assert_eq!(size_of::<UsdtKey>(), 16);
        assert_eq!(size_of::<RateBucket>(), 48);
        assert_eq!(size_of::<IoSizeKey>(), 16);
        assert_eq!(size_of::<IoSizeStats>(), 8 * (2 + HIST_SLOTS));
    }

    #[test]
    fn cstr_stops_at_nul() {
        assert_eq!(cstr(b"abc\0def"), "abc");
        assert_eq!(cstr(b"abc"), "abc");
    }
}
