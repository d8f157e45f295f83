//! What differs between the plugin API levels the plugin is built for (one per build:
//! the `api-v1` feature for QEMU 6.0 to 8.1, `api-v4` for QEMU 9.2 and 10.0).
//!
//! - The instruction bytes: API v1 returns a pointer to them, v4 copies them into a buffer.
//! - Inline counters: API v1 adds to any address; v4 adds to a per-vCPU entry of a
//!   scoreboard that QEMU allocates (and moves when it grows, which it does only when a
//!   vCPU beyond the 16th appears). In the inline phase only vCPU 0 runs, so a block's
//!   counter is vCPU 0's entry; at the reset that ends the inline phase the entries are
//!   copied ([`InlineCounters::freeze`]) and read from the copy from then on.
//! - Registers (v4 only): the SVE predicate registers are read in the execution callback
//!   of a predicated SVE FP instruction ([`predicate`]).

use std::ffi::c_void;
use std::sync::atomic::AtomicU64;

#[cfg(all(feature = "api-v1", feature = "api-v4"))]
compile_error!(
    "features api-v1 and api-v4 are exclusive: build the v4 plugin with --no-default-features --features api-v4"
);
#[cfg(not(any(feature = "api-v1", feature = "api-v4")))]
compile_error!("build with feature api-v1 (the default) or api-v4");

use qemu_plugin::sys::{qemu_plugin_insn, qemu_plugin_op, qemu_plugin_tb};

/// The plugin API level this build speaks.
pub const PLUGIN_API: u32 = qemu_plugin::sys::QEMU_PLUGIN_VERSION;

/// Whether QEMU reports the accesses of SVE loads and stores (done in helpers) to plugin
/// memory callbacks: QEMU 7.2 (API v1) does not; QEMU 9.2 and 10.0 (API v4) do, one access
/// per active element.
pub const SVE_ACCESSES_REPORTED: bool = cfg!(feature = "api-v4");

/// Whether the plugin can read the governing predicate of SVE instructions.
pub const READS_PREDICATES: bool = cfg!(feature = "api-v4");

/// The bytes of one instruction.
///
/// # Safety
/// `insn` is an instruction handle of the current translation callback.
pub unsafe fn insn_bytes(insn: *mut qemu_plugin_insn) -> Vec<u8> {
    // SAFETY: as the caller promises.
    unsafe {
        let n = qemu_plugin::sys::qemu_plugin_insn_size(insn);
        #[cfg(feature = "api-v1")]
        {
            std::slice::from_raw_parts(
                qemu_plugin::sys::qemu_plugin_insn_data(insn) as *const u8,
                n,
            )
            .to_vec()
        }
        #[cfg(not(feature = "api-v1"))]
        {
            let mut buf = vec![0u8; n];
            let got =
                qemu_plugin::sys::qemu_plugin_insn_data(insn, buf.as_mut_ptr() as *mut c_void, n);
            buf.truncate(got);
            buf
        }
    }
}

/// The guest program's path and the start of its code (for the load bias), as QEMU tells.
///
/// API v4 looks the two functions up at run time: QEMU 10.0.2's user-mode build leaves
/// them out (its `linux-user/meson.build` tests a configuration symbol that is never set),
/// and a plugin that names them directly does not load there. `None` when QEMU lacks them.
pub fn binary_and_start_code() -> Option<(Option<String>, u64)> {
    // SAFETY: plain queries; QEMU returns a string we own (never freed: called once).
    unsafe {
        #[cfg(feature = "api-v1")]
        {
            let p = qemu_plugin::sys::qemu_plugin_path_to_binary();
            let path =
                (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned());
            Some((path, qemu_plugin::sys::qemu_plugin_start_code()))
        }
        #[cfg(not(feature = "api-v1"))]
        {
            unsafe extern "C" {
                fn dlsym(handle: *mut c_void, symbol: *const std::ffi::c_char) -> *mut c_void;
            }
            let path_fn = dlsym(std::ptr::null_mut(), c"qemu_plugin_path_to_binary".as_ptr());
            let start_fn = dlsym(std::ptr::null_mut(), c"qemu_plugin_start_code".as_ptr());
            if path_fn.is_null() || start_fn.is_null() {
                return None;
            }
            let path_fn: extern "C" fn() -> *const std::ffi::c_char = std::mem::transmute(path_fn);
            let start_fn: extern "C" fn() -> u64 = std::mem::transmute(start_fn);
            let p = path_fn();
            let path =
                (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned());
            Some((path, start_fn()))
        }
    }
}

/// Counts the executions of `insn` into `counter` (for `audit=`): an inline add under API
/// v1 (exact for one guest thread), an execution callback under v4 (exact with threads).
///
/// # Safety
/// `insn` is an instruction handle of the current translation callback.
pub unsafe fn count_insn(insn: *mut qemu_plugin_insn, counter: &'static AtomicU64) {
    // SAFETY: as the caller promises; the counter lives for the whole run.
    unsafe {
        #[cfg(feature = "api-v1")]
        qemu_plugin::sys::qemu_plugin_register_vcpu_insn_exec_inline(
            insn,
            qemu_plugin_op::QEMU_PLUGIN_INLINE_ADD_U64,
            counter.as_ptr() as *mut c_void,
            1,
        );
        #[cfg(not(feature = "api-v1"))]
        {
            let _ = qemu_plugin_op::QEMU_PLUGIN_INLINE_ADD_U64;
            qemu_plugin::sys::qemu_plugin_register_vcpu_insn_exec_cb(
                insn,
                Some(on_count_insn),
                qemu_plugin::sys::qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                counter as *const AtomicU64 as *mut c_void,
            );
        }
    }
}

#[cfg(not(feature = "api-v1"))]
extern "C" fn on_count_insn(_vcpu: std::ffi::c_uint, ud: *mut c_void) {
    // SAFETY: `ud` is the 'static counter registered in `count_insn`.
    let c = unsafe { &*(ud as *const AtomicU64) };
    c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Counters per chunk.
const CHUNK: usize = 4096;

/// The inline execution counters of the inline phase (one per translation block), in
/// chunks that never move (API v1: plain memory; v4: scoreboards of one chunk per vCPU).
#[derive(Default)]
pub struct InlineCounters {
    #[cfg(feature = "api-v1")]
    chunks: Vec<Box<[u64]>>,
    #[cfg(not(feature = "api-v1"))]
    chunks: Vec<*mut qemu_plugin::sys::qemu_plugin_scoreboard>,
    /// v4: vCPU 0's entries copied at the end of the inline phase, per chunk.
    #[cfg(not(feature = "api-v1"))]
    frozen: Vec<Box<[u64]>>,
    used: usize,
}

impl InlineCounters {
    /// A new counter that one inline add per execution of `tb` increments; returns its
    /// handle (never 0).
    ///
    /// # Safety
    /// `tb` is the block of the current translation callback.
    pub unsafe fn add(&mut self, tb: *mut qemu_plugin_tb) -> usize {
        if self.chunks.is_empty() || self.used == CHUNK {
            #[cfg(feature = "api-v1")]
            self.chunks.push(vec![0u64; CHUNK].into_boxed_slice());
            #[cfg(not(feature = "api-v1"))]
            // SAFETY: plain API call; the scoreboard is never freed.
            self.chunks.push(unsafe {
                qemu_plugin::sys::qemu_plugin_scoreboard_new(CHUNK * std::mem::size_of::<u64>())
            });
            self.used = 0;
        }
        let chunk = self.chunks.len() - 1;
        let k = self.used;
        self.used += 1;
        // SAFETY: `tb` as the caller promises; the counter's memory lives for the run.
        unsafe {
            #[cfg(feature = "api-v1")]
            qemu_plugin::sys::qemu_plugin_register_vcpu_tb_exec_inline(
                tb,
                qemu_plugin_op::QEMU_PLUGIN_INLINE_ADD_U64,
                &mut self.chunks[chunk][k] as *mut u64 as *mut c_void,
                1,
            );
            #[cfg(not(feature = "api-v1"))]
            qemu_plugin::sys::qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(
                tb,
                qemu_plugin_op::QEMU_PLUGIN_INLINE_ADD_U64,
                qemu_plugin::sys::qemu_plugin_u64 {
                    score: self.chunks[chunk],
                    offset: k * std::mem::size_of::<u64>(),
                },
                1,
            );
        }
        chunk * CHUNK + k + 1
    }

    /// The address of counter `handle` (0: none), to read with a volatile load while the
    /// guest may still increment it. Valid until the next [`freeze`](Self::freeze).
    pub fn address(&self, handle: usize) -> usize {
        if handle == 0 {
            return 0;
        }
        let (chunk, k) = ((handle - 1) / CHUNK, (handle - 1) % CHUNK);
        #[cfg(feature = "api-v1")]
        {
            self.chunks
                .get(chunk)
                .map_or(0, |c| &c[k] as *const u64 as usize)
        }
        #[cfg(not(feature = "api-v1"))]
        {
            if let Some(f) = self.frozen.get(chunk) {
                return &f[k] as *const u64 as usize;
            }
            match self.chunks.get(chunk) {
                // SAFETY: vCPU 0 exists; its entry moves only when the scoreboards grow
                // (a 17th vCPU), after the inline phase has ended and been frozen.
                Some(&score) => unsafe {
                    qemu_plugin::sys::qemu_plugin_scoreboard_find(score, 0) as usize
                        + k * std::mem::size_of::<u64>()
                },
                None => 0,
            }
        }
    }

    /// The inline phase has ended (the code cache was flushed while the vCPUs are stopped):
    /// under API v4, copy vCPU 0's entries so that later reads do not depend on where QEMU
    /// keeps its scoreboards.
    pub fn freeze(&mut self) {
        #[cfg(not(feature = "api-v1"))]
        while self.frozen.len() < self.chunks.len() {
            let score = self.chunks[self.frozen.len()];
            // SAFETY: vCPU 0's entry of a live scoreboard, CHUNK u64 long.
            let copy = unsafe {
                let p = qemu_plugin::sys::qemu_plugin_scoreboard_find(score, 0) as *const u64;
                std::slice::from_raw_parts(p, CHUNK).to_vec()
            };
            self.frozen.push(copy.into_boxed_slice());
        }
    }
}

/// Reading the SVE predicate registers (API v4).
#[cfg(not(feature = "api-v1"))]
pub mod predicate {
    use std::ffi::CStr;
    use std::sync::atomic::{AtomicPtr, Ordering};

    use qemu_plugin::sys::{
        GArray, GByteArray, qemu_plugin_get_registers, qemu_plugin_read_register,
        qemu_plugin_reg_descriptor, qemu_plugin_register,
    };

    unsafe extern "C" {
        fn g_byte_array_new() -> *mut GByteArray;
        fn g_array_free(array: *mut GArray, free_segment: bool) -> *mut u8;
    }

    /// Handles of P0..P15 (the same for every vCPU: QEMU numbers registers per CPU class).
    static HANDLES: [AtomicPtr<qemu_plugin_register>; 16] =
        [const { AtomicPtr::new(std::ptr::null_mut()) }; 16];

    /// Looks up the predicate registers; called in a vCPU initialization callback. Returns
    /// how many were found (16 on an SVE CPU, 0 without SVE).
    pub fn init() -> usize {
        // SAFETY: called in vCPU context, as the API requires; the array is ours to free,
        // the names are QEMU's.
        unsafe {
            let a = qemu_plugin_get_registers();
            if a.is_null() {
                return 0;
            }
            let descs = std::slice::from_raw_parts(
                (*a).data as *const qemu_plugin_reg_descriptor,
                (*a).len as usize,
            );
            let mut found = 0;
            for d in descs {
                if d.name.is_null() {
                    continue;
                }
                let name = CStr::from_ptr(d.name).to_string_lossy();
                if let Some(n) = name.strip_prefix('p').and_then(|n| n.parse::<usize>().ok())
                    && n < 16
                {
                    HANDLES[n].store(d.handle, Ordering::Relaxed);
                    found += 1;
                }
            }
            g_array_free(a, true);
            found
        }
    }

    thread_local! {
        /// The buffer register values are read into (one per vCPU thread).
        static BUF: std::cell::Cell<*mut GByteArray> = const { std::cell::Cell::new(std::ptr::null_mut()) };
    }

    /// Bytes of a predicate register: 2048 bits of vector at most, one bit per byte.
    pub const MAX_BYTES: usize = 32;

    /// Reads predicate register `p` of the running vCPU into `out` (the rest zeroed); false
    /// when it cannot be read. Only in an execution callback registered with
    /// `QEMU_PLUGIN_CB_R_REGS`.
    pub fn read(p: u8, out: &mut [u8; MAX_BYTES]) -> bool {
        let Some(h) = HANDLES.get(p as usize).map(|h| h.load(Ordering::Relaxed)) else {
            return false;
        };
        if h.is_null() {
            return false;
        }
        BUF.with(|b| {
            let mut buf = b.get();
            if buf.is_null() {
                // SAFETY: glib, as linked into QEMU; kept for the thread's life.
                buf = unsafe { g_byte_array_new() };
                b.set(buf);
            }
            // SAFETY: a GByteArray we own; QEMU appends the register's bytes to it.
            unsafe {
                (*buf).len = 0;
                if qemu_plugin_read_register(h, buf) < 0 {
                    return false;
                }
                let bytes = std::slice::from_raw_parts((*buf).data, (*buf).len as usize);
                let n = bytes.len().min(MAX_BYTES);
                out[..n].copy_from_slice(&bytes[..n]);
                out[n..].fill(0);
                true
            }
        })
    }

    /// Active elements of `esize` bytes among the first `vl_bits` of the vector under
    /// predicate `p`, and also under `and` when given (the lanes both govern); None when a
    /// register cannot be read.
    pub fn active(p: u8, and: Option<u8>, esize: u32, vl_bits: u32) -> Option<u32> {
        let mut a = [0u8; MAX_BYTES];
        if !read(p, &mut a) {
            return None;
        }
        if let Some(q) = and {
            let mut b = [0u8; MAX_BYTES];
            if !read(q, &mut b) {
                return None;
            }
            for (x, y) in a.iter_mut().zip(b) {
                *x &= y;
            }
        }
        Some(super::count_active(&a, esize, vl_bits))
    }
}

/// Active elements of `esize` bytes (1, 2, 4, 8) in a predicate register's bytes
/// (little-endian: bit `i` stands for byte `i` of the vector; an element is active when
/// the bit of its first byte is set), over the first `vl_bits` of the vector.
pub fn count_active(pred: &[u8], esize: u32, vl_bits: u32) -> u32 {
    let lane_mask: u8 = match esize {
        1 => 0xff,
        2 => 0x55,
        4 => 0x11,
        _ => 0x01,
    };
    // One predicate bit per vector byte.
    let bits = (vl_bits / 8) as usize;
    let mut n = 0u32;
    for (i, &b) in pred.iter().enumerate().take(bits.div_ceil(8)) {
        let left = bits - i * 8;
        let valid: u8 = if left >= 8 { 0xff } else { (1u8 << left) - 1 };
        n += (b & lane_mask & valid).count_ones();
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_lanes_of_a_predicate() {
        // 512-bit vector, f64 (8 bytes per element): 8 lanes, bits 0, 8, ..., 56.
        let all = [0x01u8; 8];
        assert_eq!(count_active(&all, 8, 512), 8);
        // WHILELO for 5 f64 elements at 512 bits: bits 0, 8, 16, 24, 32.
        let five = [1u8, 1, 1, 1, 1, 0, 0, 0];
        assert_eq!(count_active(&five, 8, 512), 5);
        // f32 at 128 bits: 4 lanes, bits 0, 4, 8, 12 (2 bytes of predicate).
        assert_eq!(count_active(&[0x11, 0x11], 4, 128), 4);
        assert_eq!(count_active(&[0x11, 0x01], 4, 128), 3);
        // Bits beyond the vector length do not count (the register is read at the largest
        // length QEMU supports).
        assert_eq!(count_active(&[0x01; 32], 8, 128), 2);
        // f16: every other bit.
        assert_eq!(count_active(&[0xff, 0xff], 2, 128), 8);
        // Bits of non-first bytes of an element are ignored.
        assert_eq!(count_active(&[0xfe, 0x00], 8, 128), 0);
    }
}
