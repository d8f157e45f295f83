//! Bandwidth kernels with an explicit vector width.
//!
//! Every kernel is a loop of hand-written instructions (`asm!` on x86-64), so the compiler
//! can neither vectorize the scalar variant, nor widen, fuse, or replace a loop by `memcpy`.
//! Widths: scalar (one f64 per instruction), 128, 256 and 512 bits. The x86-64 kernels use
//! VEX/EVEX encodings: scalar, 128 and 256 bits need AVX, 512 bits needs AVX-512F. A kernel
//! whose ISA the CPU lacks is never called ([`Isa::supports`] is checked first), so it
//! cannot raise SIGILL. On other architectures only a portable scalar loop is available.
//!
//! Byte counting: a kernel's own traffic ([`ByteCount::Kernel`], the STREAM convention:
//! triad `a = b + s*c` moves 24 B per element) and the traffic including the write-allocate
//! read of every array that is written without being read first ([`ByteCount::WithWriteAllocate`]:
//! triad 32 B per element with normal stores, 24 B with non-temporal stores).

use serde::{Deserialize, Serialize};

use crate::error::BenchError;
use crate::topology::Isa;
pub use crate::topology::Width;

/// A bandwidth kernel.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Kernel {
    /// `sum += a[i]` (8 independent accumulators).
    Load,
    /// `a[i] = s`.
    Store,
    /// `a[i] = b[i]`.
    Copy,
    /// STREAM triad `a[i] = b[i] + s * c[i]`.
    Triad,
    /// Four-stream triad `a[i] = b[i] * c[i] + d[i]` (likwid-bench's `triad`).
    Triad4,
    /// `y[i] = y[i] + s * x[i]`.
    Daxpy,
}

impl Kernel {
    /// Every kernel, in report order.
    pub const ALL: [Kernel; 6] = [
        Kernel::Load,
        Kernel::Store,
        Kernel::Copy,
        Kernel::Triad,
        Kernel::Triad4,
        Kernel::Daxpy,
    ];

    /// Name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Load => "load",
            Kernel::Store => "store",
            Kernel::Copy => "copy",
            Kernel::Triad => "triad",
            Kernel::Triad4 => "triad4",
            Kernel::Daxpy => "daxpy",
        }
    }

    /// The formula the kernel computes.
    pub fn formula(self) -> &'static str {
        match self {
            Kernel::Load => "sum += a[i]",
            Kernel::Store => "a[i] = s",
            Kernel::Copy => "a[i] = b[i]",
            Kernel::Triad => "a[i] = b[i] + s*c[i]",
            Kernel::Triad4 => "a[i] = b[i]*c[i] + d[i]",
            Kernel::Daxpy => "y[i] = y[i] + s*x[i]",
        }
    }

    /// Parses a kernel name.
    pub fn from_name(name: &str) -> Option<Kernel> {
        Kernel::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Number of arrays the kernel touches.
    pub fn arrays(self) -> usize {
        match self {
            Kernel::Load | Kernel::Store => 1,
            Kernel::Copy | Kernel::Daxpy => 2,
            Kernel::Triad => 3,
            Kernel::Triad4 => 4,
        }
    }

    /// Arrays read per element (a read-modify-write array counts once here).
    pub fn arrays_read(self) -> u32 {
        match self {
            Kernel::Load | Kernel::Copy => 1,
            Kernel::Store => 0,
            Kernel::Triad | Kernel::Daxpy => 2,
            Kernel::Triad4 => 3,
        }
    }

    /// Arrays written per element.
    pub fn arrays_written(self) -> u32 {
        match self {
            Kernel::Load => 0,
            _ => 1,
        }
    }

    /// Arrays written without being read first: each costs a write-allocate read with
    /// normal stores.
    pub fn arrays_write_only(self) -> u32 {
        match self {
            Kernel::Load | Kernel::Daxpy => 0,
            _ => 1,
        }
    }

    /// Floating-point operations per element.
    pub fn flops_per_element(self) -> u32 {
        match self {
            Kernel::Load => 1,
            Kernel::Store | Kernel::Copy => 0,
            Kernel::Triad | Kernel::Triad4 | Kernel::Daxpy => 2,
        }
    }

    /// Whether a non-temporal (streaming-store) variant exists.
    pub fn has_nt(self) -> bool {
        matches!(
            self,
            Kernel::Store | Kernel::Copy | Kernel::Triad | Kernel::Triad4
        )
    }

    /// Bytes per element (f64) under `convention`; `nt` is true for non-temporal stores.
    ///
    /// Kernel convention: `8 * (read + written)`; with write-allocate, add `8 * write_only`
    /// unless the stores are non-temporal.
    pub fn bytes_per_element(self, convention: ByteCount, nt: bool) -> u32 {
        let own = 8 * (self.arrays_read() + self.arrays_written());
        match convention {
            ByteCount::Kernel => own,
            ByteCount::WithWriteAllocate if nt => own,
            ByteCount::WithWriteAllocate => own + 8 * self.arrays_write_only(),
        }
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How bytes are counted for a bandwidth.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ByteCount {
    /// The kernel's own loads and stores (STREAM convention; likwid-bench's too).
    Kernel,
    /// Own traffic plus the write-allocate read of write-only arrays (normal stores).
    WithWriteAllocate,
}

/// One runnable bandwidth kernel: what, how wide, which stores.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KernelSpec {
    /// The kernel.
    pub kernel: Kernel,
    /// Vector width.
    pub width: Width,
    /// Non-temporal (streaming) stores.
    pub nt: bool,
}

impl KernelSpec {
    /// Display name: `triad-512`, `copy-nt-256`.
    pub fn label(&self) -> String {
        if self.nt {
            format!("{}-nt-{}", self.kernel, self.width)
        } else {
            format!("{}-{}", self.kernel, self.width)
        }
    }

    /// Why this kernel cannot run on `isa`, or `None` when it can.
    pub fn unsupported_reason(&self, isa: &Isa) -> Option<String> {
        if self.nt && !self.kernel.has_nt() {
            return Some(format!("{} has no non-temporal variant", self.kernel));
        }
        if self.nt && self.width == Width::Scalar {
            return Some("no scalar non-temporal f64 store exists".into());
        }
        if !isa.supports(self.width) {
            return Some(format!(
                "the CPU (or this build for {}) lacks {}-bit vector kernels ({})",
                std::env::consts::ARCH,
                self.width,
                isa.requirement(self.width)
            ));
        }
        None
    }
}

/// Elements per array are rounded to a multiple of this, so every unrolled loop ends
/// exactly (512 bits x 8 registers = 64 f64).
pub const ELEMENT_QUANTUM: usize = 64;

/// Alignment of every array, bytes (a page: aligned for any vector width and NT stores).
const ALIGN: usize = 4096;

/// Memory for the kernels' arrays: one page-aligned allocation, reused for every kernel
/// and size. For `n` elements per array, array `k` starts at `k * stride(n)`, where the
/// stride is `n` rounded up to a page plus a 320-byte stagger (so the arrays neither
/// alias modulo 4 KiB nor map onto the same cache sets).
pub struct Workspace {
    ptr: *mut f64,
    layout: std::alloc::Layout,
    /// Capacity, f64 elements.
    cap: usize,
}

// SAFETY: the workspace owns its allocation exclusively; raw pointers are only used by
// the thread holding `&mut Workspace`.
unsafe impl Send for Workspace {}

impl Workspace {
    /// Allocates room for a total working set of `bytes` (all arrays of any kernel
    /// together) and writes every element from the calling thread (first touch places
    /// the pages on its NUMA node).
    pub fn new(bytes: u64) -> Result<Workspace, BenchError> {
        let elems =
            (bytes / 8) as usize + 4 * (Self::stride_elems(0) + ALIGN / 8) + ELEMENT_QUANTUM;
        let size = elems
            .checked_mul(8)
            .ok_or_else(|| BenchError::Environment {
                what: format!("cannot allocate {bytes} B"),
                fix: "choose smaller --sizes".into(),
            })?;
        let layout = std::alloc::Layout::from_size_align(size, ALIGN.max(huge_align(size)))
            .map_err(|e| BenchError::Environment {
                what: format!("bad allocation layout for {size} B: {e}"),
                fix: "choose smaller --sizes".into(),
            })?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) } as *mut f64;
        if ptr.is_null() {
            return Err(BenchError::Environment {
                what: format!(
                    "could not allocate {} for the kernel arrays",
                    crate::units::format_bytes(size as u64)
                ),
                fix: "free memory or choose smaller --sizes".into(),
            });
        }
        advise_huge_pages(ptr as *mut u8, size);
        for i in 0..elems {
            // SAFETY: in bounds of the allocation.
            unsafe { ptr.add(i).write((i % 7) as f64 + 1.0) };
        }
        Ok(Workspace {
            ptr,
            layout,
            cap: elems,
        })
    }

    /// Elements between the starts of two arrays of `n` elements.
    fn stride_elems(n: usize) -> usize {
        n.div_ceil(ALIGN / 8) * (ALIGN / 8) + 40
    }

    /// Largest `n` (a multiple of [`ELEMENT_QUANTUM`]) such that `arrays` arrays of `n`
    /// elements fit.
    pub fn max_len(&self, arrays: usize) -> usize {
        let per = self.cap / arrays.max(1);
        let mut n = (per / ELEMENT_QUANTUM) * ELEMENT_QUANTUM;
        while n > 0 && arrays * Self::stride_elems(n) > self.cap {
            n -= ELEMENT_QUANTUM;
        }
        n
    }

    fn array_ptr(&self, k: usize, n: usize) -> *mut f64 {
        assert!(
            (k + 1) * Self::stride_elems(n) <= self.cap,
            "array {k} of {n} elements beyond the workspace"
        );
        // SAFETY: in bounds of the allocation (checked above).
        unsafe { self.ptr.add(k * Self::stride_elems(n)) }
    }

    /// Array `k` of the layout for `n` elements per array.
    pub fn array(&self, k: usize, n: usize) -> &[f64] {
        // SAFETY: in bounds, initialized by `new`.
        unsafe { std::slice::from_raw_parts(self.array_ptr(k, n), n) }
    }

    /// Sets element `i` of array `k` (layout for `n` elements per array) to `f(i)`.
    pub fn fill(&mut self, k: usize, n: usize, f: impl Fn(usize) -> f64) {
        let p = self.array_ptr(k, n);
        for i in 0..n {
            // SAFETY: in bounds.
            unsafe { p.add(i).write(f(i)) };
        }
    }

    /// Runs `spec` `passes` times (a loop inside the kernel) over `n` elements per array
    /// with scalar `s`; returns the sum for [`Kernel::Load`] (accumulated over the passes),
    /// 0 otherwise.
    ///
    /// `n` is rounded down to a multiple of [`ELEMENT_QUANTUM`] (at least one quantum) and
    /// capped to what fits.
    pub fn run(
        &mut self,
        spec: KernelSpec,
        n: usize,
        passes: usize,
        s: f64,
        isa: &Isa,
    ) -> Result<f64, BenchError> {
        if let Some(reason) = spec.unsupported_reason(isa) {
            return Err(BenchError::Unsupported {
                what: spec.label(),
                reason,
            });
        }
        let arrays = spec.kernel.arrays();
        let n = Self::usable_len(n).min(self.max_len(arrays));
        if n == 0 {
            return Err(BenchError::Internal(format!(
                "{} does not fit in the workspace",
                spec.label()
            )));
        }
        let p: [*mut f64; 4] = std::array::from_fn(|k| {
            if k < arrays {
                self.array_ptr(k, n)
            } else {
                std::ptr::null_mut()
            }
        });
        // SAFETY: the ISA was checked above; every pointer is valid for `n` elements,
        // aligned to 4 KiB plus a multiple of 320 B (so to 64 B), and `n` is a multiple
        // of the unrolled loop's element count.
        Ok(unsafe { imp::run(spec, p, n, passes.max(1), s) })
    }

    /// Elements actually processed for a request of `n`.
    pub fn usable_len(n: usize) -> usize {
        (n / ELEMENT_QUANTUM).max(1) * ELEMENT_QUANTUM
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`.
        unsafe { std::alloc::dealloc(self.ptr as *mut u8, self.layout) };
    }
}

/// Alignment that lets large buffers start on a 2 MiB boundary (transparent huge pages).
fn huge_align(bytes: usize) -> usize {
    if bytes >= 8 << 20 { 2 << 20 } else { 1 }
}

/// Asks for transparent huge pages on a large buffer (advisory; ignored when the OS
/// says no).
#[cfg(target_os = "linux")]
pub(crate) fn advise_huge_pages(ptr: *mut u8, bytes: usize) {
    if bytes >= 8 << 20 {
        // SAFETY: advisory only, on memory we own; failure is harmless.
        unsafe { libc::madvise(ptr as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE) };
    }
}

/// No huge-page advice on this OS.
#[cfg(not(target_os = "linux"))]
pub(crate) fn advise_huge_pages(_ptr: *mut u8, _bytes: usize) {}

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::{Kernel, KernelSpec, Width};
    use std::arch::asm;

    // Each kernel walks a negative byte offset `i` up to zero against end pointers, so the
    // loop is one `add` + `jnz`. Unrolled 4x (load: 8 accumulators, 8x).

    macro_rules! k_load {
        ($name:ident, $feat:literal, $cls:tt, $vb:expr, $ld:literal, $add:literal, $stu:literal) => {
            #[target_feature(enable = $feat)]
            unsafe fn $name(a: *const f64, bytes: usize, out: *mut f64, reps: usize) {
                unsafe {
                    asm!(
                        "vxorpd {x0:x}, {x0:x}, {x0:x}", "vxorpd {x1:x}, {x1:x}, {x1:x}",
                        "vxorpd {x2:x}, {x2:x}, {x2:x}", "vxorpd {x3:x}, {x3:x}, {x3:x}",
                        "vxorpd {x4:x}, {x4:x}, {x4:x}", "vxorpd {x5:x}, {x5:x}, {x5:x}",
                        "vxorpd {x6:x}, {x6:x}, {x6:x}", "vxorpd {x7:x}, {x7:x}, {x7:x}",
                        "3:",
                        "mov {i}, {nb}",
                        "2:",
                        concat!($add, " {x0}, {x0}, [{a} + {i}]"),
                        concat!($add, " {x1}, {x1}, [{a} + {i} + {vb}]"),
                        concat!($add, " {x2}, {x2}, [{a} + {i} + 2*{vb}]"),
                        concat!($add, " {x3}, {x3}, [{a} + {i} + 3*{vb}]"),
                        concat!($add, " {x4}, {x4}, [{a} + {i} + 4*{vb}]"),
                        concat!($add, " {x5}, {x5}, [{a} + {i} + 5*{vb}]"),
                        concat!($add, " {x6}, {x6}, [{a} + {i} + 6*{vb}]"),
                        concat!($add, " {x7}, {x7}, [{a} + {i} + 7*{vb}]"),
                        "add {i}, 8*{vb}",
                        "jnz 2b",
                        "dec {r}",
                        "jnz 3b",
                        concat!($stu, " [{o}], {x0}"),
                        concat!($stu, " [{o} + {vb}], {x1}"),
                        concat!($stu, " [{o} + 2*{vb}], {x2}"),
                        concat!($stu, " [{o} + 3*{vb}], {x3}"),
                        concat!($stu, " [{o} + 4*{vb}], {x4}"),
                        concat!($stu, " [{o} + 5*{vb}], {x5}"),
                        concat!($stu, " [{o} + 6*{vb}], {x6}"),
                        concat!($stu, " [{o} + 7*{vb}], {x7}"),
                        "vzeroupper",
                        a = in(reg) (a as *const u8).add(bytes),
                        i = out(reg) _,
                        nb = in(reg) (bytes as isize).wrapping_neg(),
                        r = inout(reg) reps => _,
                        o = in(reg) out,
                        vb = const $vb,
                        x0 = out($cls) _, x1 = out($cls) _, x2 = out($cls) _, x3 = out($cls) _,
                        x4 = out($cls) _, x5 = out($cls) _, x6 = out($cls) _, x7 = out($cls) _,
                        options(nostack),
                    )
                }
            }
        };
    }

    macro_rules! k_store {
        ($name:ident, $feat:literal, $cls:tt, $vb:expr, $st:literal, $bc:literal, $fence:literal) => {
            #[target_feature(enable = $feat)]
            unsafe fn $name(a: *mut f64, s: *const f64, bytes: usize, reps: usize) {
                unsafe {
                    asm!(
                        concat!($bc, " {x0}, [{sp}]"),
                        "3:",
                        "mov {i}, {nb}",
                        "2:",
                        concat!($st, " [{a} + {i}], {x0}"),
                        concat!($st, " [{a} + {i} + {vb}], {x0}"),
                        concat!($st, " [{a} + {i} + 2*{vb}], {x0}"),
                        concat!($st, " [{a} + {i} + 3*{vb}], {x0}"),
                        "add {i}, 4*{vb}",
                        "jnz 2b",
                        "dec {r}",
                        "jnz 3b",
                        $fence,
                        "vzeroupper",
                        a = in(reg) (a as *mut u8).add(bytes),
                        i = out(reg) _,
                        nb = in(reg) (bytes as isize).wrapping_neg(),
                        r = inout(reg) reps => _,
                        sp = in(reg) s,
                        vb = const $vb,
                        x0 = out($cls) _,
                        options(nostack),
                    )
                }
            }
        };
    }

    macro_rules! k_copy {
        ($name:ident, $feat:literal, $cls:tt, $vb:expr, $ld:literal, $st:literal, $fence:literal) => {
            #[target_feature(enable = $feat)]
            unsafe fn $name(a: *mut f64, b: *const f64, bytes: usize, reps: usize) {
                unsafe {
                    asm!(
                        "3:",
                        "mov {i}, {nb}",
                        "2:",
                        concat!($ld, " {x0}, [{b} + {i}]"),
                        concat!($ld, " {x1}, [{b} + {i} + {vb}]"),
                        concat!($ld, " {x2}, [{b} + {i} + 2*{vb}]"),
                        concat!($ld, " {x3}, [{b} + {i} + 3*{vb}]"),
                        concat!($st, " [{a} + {i}], {x0}"),
                        concat!($st, " [{a} + {i} + {vb}], {x1}"),
                        concat!($st, " [{a} + {i} + 2*{vb}], {x2}"),
                        concat!($st, " [{a} + {i} + 3*{vb}], {x3}"),
                        "add {i}, 4*{vb}",
                        "jnz 2b",
                        "dec {r}",
                        "jnz 3b",
                        $fence,
                        "vzeroupper",
                        a = in(reg) (a as *mut u8).add(bytes),
                        b = in(reg) (b as *const u8).add(bytes),
                        i = out(reg) _,
                        nb = in(reg) (bytes as isize).wrapping_neg(),
                        r = inout(reg) reps => _,
                        vb = const $vb,
                        x0 = out($cls) _, x1 = out($cls) _, x2 = out($cls) _, x3 = out($cls) _,
                        options(nostack),
                    )
                }
            }
        };
    }

    // a = b + s*c (mul then add: no FMA, so the result is bit-identical to `b + s * c`).
    macro_rules! k_triad {
        ($name:ident, $feat:literal, $cls:tt, $vb:expr, $ld:literal, $st:literal, $mul:literal, $add:literal, $bc:literal, $fence:literal) => {
            #[target_feature(enable = $feat)]
            unsafe fn $name(a: *mut f64, b: *const f64, c: *const f64, s: *const f64, bytes: usize, reps: usize) {
                unsafe {
                    asm!(
                        concat!($bc, " {s}, [{sp}]"),
                        "3:",
                        "mov {i}, {nb}",
                        "2:",
                        concat!($ld, " {x0}, [{c} + {i}]"),
                        concat!($ld, " {x1}, [{c} + {i} + {vb}]"),
                        concat!($ld, " {x2}, [{c} + {i} + 2*{vb}]"),
                        concat!($ld, " {x3}, [{c} + {i} + 3*{vb}]"),
                        concat!($mul, " {x0}, {x0}, {s}"),
                        concat!($mul, " {x1}, {x1}, {s}"),
                        concat!($mul, " {x2}, {x2}, {s}"),
                        concat!($mul, " {x3}, {x3}, {s}"),
                        concat!($add, " {x0}, {x0}, [{b} + {i}]"),
                        concat!($add, " {x1}, {x1}, [{b} + {i} + {vb}]"),
                        concat!($add, " {x2}, {x2}, [{b} + {i} + 2*{vb}]"),
                        concat!($add, " {x3}, {x3}, [{b} + {i} + 3*{vb}]"),
                        concat!($st, " [{a} + {i}], {x0}"),
                        concat!($st, " [{a} + {i} + {vb}], {x1}"),
                        concat!($st, " [{a} + {i} + 2*{vb}], {x2}"),
                        concat!($st, " [{a} + {i} + 3*{vb}], {x3}"),
                        "add {i}, 4*{vb}",
                        "jnz 2b",
                        "dec {r}",
                        "jnz 3b",
                        $fence,
                        "vzeroupper",
                        a = in(reg) (a as *mut u8).add(bytes),
                        b = in(reg) (b as *const u8).add(bytes),
                        c = in(reg) (c as *const u8).add(bytes),
                        i = out(reg) _,
                        nb = in(reg) (bytes as isize).wrapping_neg(),
                        r = inout(reg) reps => _,
                        sp = in(reg) s,
                        vb = const $vb,
                        s = out($cls) _,
                        x0 = out($cls) _, x1 = out($cls) _, x2 = out($cls) _, x3 = out($cls) _,
                        options(nostack),
                    )
                }
            }
        };
    }

    // a = b*c + d (mul then add).
    macro_rules! k_triad4 {
        ($name:ident, $feat:literal, $cls:tt, $vb:expr, $ld:literal, $st:literal, $mul:literal, $add:literal, $fence:literal) => {
            #[target_feature(enable = $feat)]
            unsafe fn $name(a: *mut f64, b: *const f64, c: *const f64, d: *const f64, bytes: usize, reps: usize) {
                unsafe {
                    asm!(
                        "3:",
                        "mov {i}, {nb}",
                        "2:",
                        concat!($ld, " {x0}, [{b} + {i}]"),
                        concat!($ld, " {x1}, [{b} + {i} + {vb}]"),
                        concat!($ld, " {x2}, [{b} + {i} + 2*{vb}]"),
                        concat!($ld, " {x3}, [{b} + {i} + 3*{vb}]"),
                        concat!($mul, " {x0}, {x0}, [{c} + {i}]"),
                        concat!($mul, " {x1}, {x1}, [{c} + {i} + {vb}]"),
                        concat!($mul, " {x2}, {x2}, [{c} + {i} + 2*{vb}]"),
                        concat!($mul, " {x3}, {x3}, [{c} + {i} + 3*{vb}]"),
                        concat!($add, " {x0}, {x0}, [{d} + {i}]"),
                        concat!($add, " {x1}, {x1}, [{d} + {i} + {vb}]"),
                        concat!($add, " {x2}, {x2}, [{d} + {i} + 2*{vb}]"),
                        concat!($add, " {x3}, {x3}, [{d} + {i} + 3*{vb}]"),
                        concat!($st, " [{a} + {i}], {x0}"),
                        concat!($st, " [{a} + {i} + {vb}], {x1}"),
                        concat!($st, " [{a} + {i} + 2*{vb}], {x2}"),
                        concat!($st, " [{a} + {i} + 3*{vb}], {x3}"),
                        "add {i}, 4*{vb}",
                        "jnz 2b",
                        "dec {r}",
                        "jnz 3b",
                        $fence,
                        "vzeroupper",
                        a = in(reg) (a as *mut u8).add(bytes),
                        b = in(reg) (b as *const u8).add(bytes),
                        c = in(reg) (c as *const u8).add(bytes),
                        d = in(reg) (d as *const u8).add(bytes),
                        i = out(reg) _,
                        nb = in(reg) (bytes as isize).wrapping_neg(),
                        r = inout(reg) reps => _,
                        vb = const $vb,
                        x0 = out($cls) _, x1 = out($cls) _, x2 = out($cls) _, x3 = out($cls) _,
                        options(nostack),
                    )
                }
            }
        };
    }

    // y = y + s*x, computed as (x*s) + y.
    macro_rules! k_daxpy {
        ($name:ident, $feat:literal, $cls:tt, $vb:expr, $ld:literal, $st:literal, $mul:literal, $add:literal, $bc:literal) => {
            #[target_feature(enable = $feat)]
            unsafe fn $name(y: *mut f64, x: *const f64, s: *const f64, bytes: usize, reps: usize) {
                unsafe {
                    asm!(
                        concat!($bc, " {s}, [{sp}]"),
                        "3:",
                        "mov {i}, {nb}",
                        "2:",
                        concat!($ld, " {x0}, [{x} + {i}]"),
                        concat!($ld, " {x1}, [{x} + {i} + {vb}]"),
                        concat!($ld, " {x2}, [{x} + {i} + 2*{vb}]"),
                        concat!($ld, " {x3}, [{x} + {i} + 3*{vb}]"),
                        concat!($mul, " {x0}, {x0}, {s}"),
                        concat!($mul, " {x1}, {x1}, {s}"),
                        concat!($mul, " {x2}, {x2}, {s}"),
                        concat!($mul, " {x3}, {x3}, {s}"),
                        concat!($add, " {x0}, {x0}, [{y} + {i}]"),
                        concat!($add, " {x1}, {x1}, [{y} + {i} + {vb}]"),
                        concat!($add, " {x2}, {x2}, [{y} + {i} + 2*{vb}]"),
                        concat!($add, " {x3}, {x3}, [{y} + {i} + 3*{vb}]"),
                        concat!($st, " [{y} + {i}], {x0}"),
                        concat!($st, " [{y} + {i} + {vb}], {x1}"),
                        concat!($st, " [{y} + {i} + 2*{vb}], {x2}"),
                        concat!($st, " [{y} + {i} + 3*{vb}], {x3}"),
                        "add {i}, 4*{vb}",
                        "jnz 2b",
                        "dec {r}",
                        "jnz 3b",
                        "vzeroupper",
                        y = in(reg) (y as *mut u8).add(bytes),
                        x = in(reg) (x as *const u8).add(bytes),
                        i = out(reg) _,
                        nb = in(reg) (bytes as isize).wrapping_neg(),
                        r = inout(reg) reps => _,
                        sp = in(reg) s,
                        vb = const $vb,
                        s = out($cls) _,
                        x0 = out($cls) _, x1 = out($cls) _, x2 = out($cls) _, x3 = out($cls) _,
                        options(nostack),
                    )
                }
            }
        };
    }

    k_load!(load_s, "avx", xmm_reg, 8, "vmovsd", "vaddsd", "vmovsd");
    k_load!(load_128, "avx", xmm_reg, 16, "vmovapd", "vaddpd", "vmovupd");
    k_load!(load_256, "avx", ymm_reg, 32, "vmovapd", "vaddpd", "vmovupd");
    k_load!(
        load_512, "avx512f", zmm_reg, 64, "vmovapd", "vaddpd", "vmovupd"
    );

    k_store!(store_s, "avx", xmm_reg, 8, "vmovsd", "vmovsd", "");
    k_store!(store_128, "avx", xmm_reg, 16, "vmovapd", "vmovddup", "");
    k_store!(store_256, "avx", ymm_reg, 32, "vmovapd", "vbroadcastsd", "");
    k_store!(
        store_512,
        "avx512f",
        zmm_reg,
        64,
        "vmovapd",
        "vbroadcastsd",
        ""
    );
    k_store!(
        store_nt_128,
        "avx",
        xmm_reg,
        16,
        "vmovntpd",
        "vmovddup",
        "sfence"
    );
    k_store!(
        store_nt_256,
        "avx",
        ymm_reg,
        32,
        "vmovntpd",
        "vbroadcastsd",
        "sfence"
    );
    k_store!(
        store_nt_512,
        "avx512f",
        zmm_reg,
        64,
        "vmovntpd",
        "vbroadcastsd",
        "sfence"
    );

    k_copy!(copy_s, "avx", xmm_reg, 8, "vmovsd", "vmovsd", "");
    k_copy!(copy_128, "avx", xmm_reg, 16, "vmovapd", "vmovapd", "");
    k_copy!(copy_256, "avx", ymm_reg, 32, "vmovapd", "vmovapd", "");
    k_copy!(copy_512, "avx512f", zmm_reg, 64, "vmovapd", "vmovapd", "");
    k_copy!(
        copy_nt_128,
        "avx",
        xmm_reg,
        16,
        "vmovapd",
        "vmovntpd",
        "sfence"
    );
    k_copy!(
        copy_nt_256,
        "avx",
        ymm_reg,
        32,
        "vmovapd",
        "vmovntpd",
        "sfence"
    );
    k_copy!(
        copy_nt_512,
        "avx512f",
        zmm_reg,
        64,
        "vmovapd",
        "vmovntpd",
        "sfence"
    );

    k_triad!(
        triad_s, "avx", xmm_reg, 8, "vmovsd", "vmovsd", "vmulsd", "vaddsd", "vmovsd", ""
    );
    k_triad!(
        triad_128, "avx", xmm_reg, 16, "vmovapd", "vmovapd", "vmulpd", "vaddpd", "vmovddup", ""
    );
    k_triad!(
        triad_256,
        "avx",
        ymm_reg,
        32,
        "vmovapd",
        "vmovapd",
        "vmulpd",
        "vaddpd",
        "vbroadcastsd",
        ""
    );
    k_triad!(
        triad_512,
        "avx512f",
        zmm_reg,
        64,
        "vmovapd",
        "vmovapd",
        "vmulpd",
        "vaddpd",
        "vbroadcastsd",
        ""
    );
    k_triad!(
        triad_nt_128,
        "avx",
        xmm_reg,
        16,
        "vmovapd",
        "vmovntpd",
        "vmulpd",
        "vaddpd",
        "vmovddup",
        "sfence"
    );
    k_triad!(
        triad_nt_256,
        "avx",
        ymm_reg,
        32,
        "vmovapd",
        "vmovntpd",
        "vmulpd",
        "vaddpd",
        "vbroadcastsd",
        "sfence"
    );
    k_triad!(
        triad_nt_512,
        "avx512f",
        zmm_reg,
        64,
        "vmovapd",
        "vmovntpd",
        "vmulpd",
        "vaddpd",
        "vbroadcastsd",
        "sfence"
    );

    k_triad4!(
        triad4_s, "avx", xmm_reg, 8, "vmovsd", "vmovsd", "vmulsd", "vaddsd", ""
    );
    k_triad4!(
        triad4_128, "avx", xmm_reg, 16, "vmovapd", "vmovapd", "vmulpd", "vaddpd", ""
    );
    k_triad4!(
        triad4_256, "avx", ymm_reg, 32, "vmovapd", "vmovapd", "vmulpd", "vaddpd", ""
    );
    k_triad4!(
        triad4_512, "avx512f", zmm_reg, 64, "vmovapd", "vmovapd", "vmulpd", "vaddpd", ""
    );
    k_triad4!(
        triad4_nt_128,
        "avx",
        xmm_reg,
        16,
        "vmovapd",
        "vmovntpd",
        "vmulpd",
        "vaddpd",
        "sfence"
    );
    k_triad4!(
        triad4_nt_256,
        "avx",
        ymm_reg,
        32,
        "vmovapd",
        "vmovntpd",
        "vmulpd",
        "vaddpd",
        "sfence"
    );
    k_triad4!(
        triad4_nt_512,
        "avx512f",
        zmm_reg,
        64,
        "vmovapd",
        "vmovntpd",
        "vmulpd",
        "vaddpd",
        "sfence"
    );

    k_daxpy!(
        daxpy_s, "avx", xmm_reg, 8, "vmovsd", "vmovsd", "vmulsd", "vaddsd", "vmovsd"
    );
    k_daxpy!(
        daxpy_128, "avx", xmm_reg, 16, "vmovapd", "vmovapd", "vmulpd", "vaddpd", "vmovddup"
    );
    k_daxpy!(
        daxpy_256,
        "avx",
        ymm_reg,
        32,
        "vmovapd",
        "vmovapd",
        "vmulpd",
        "vaddpd",
        "vbroadcastsd"
    );
    k_daxpy!(
        daxpy_512,
        "avx512f",
        zmm_reg,
        64,
        "vmovapd",
        "vmovapd",
        "vmulpd",
        "vaddpd",
        "vbroadcastsd"
    );

    /// Runs one kernel.
    ///
    /// # Safety
    /// The CPU supports `spec`'s ISA; `p[..spec.kernel.arrays()]` are valid for `n`
    /// elements, 64-byte aligned; `n` is a positive multiple of 64.
    pub(super) unsafe fn run(
        spec: KernelSpec,
        p: [*mut f64; 4],
        n: usize,
        reps: usize,
        s: f64,
    ) -> f64 {
        let bytes = n * 8;
        let sp = &s as *const f64;
        let [a, b, c, d] = p;
        use Kernel as K;
        use Width as W;
        unsafe {
            match (spec.kernel, spec.width, spec.nt) {
                (K::Load, w, _) => {
                    let mut out = [0.0f64; 64];
                    match w {
                        W::Scalar => load_s(a, bytes, out.as_mut_ptr(), reps),
                        W::W128 => load_128(a, bytes, out.as_mut_ptr(), reps),
                        W::W256 => load_256(a, bytes, out.as_mut_ptr(), reps),
                        W::W512 => load_512(a, bytes, out.as_mut_ptr(), reps),
                    }
                    let lanes = w.lanes(64) as usize;
                    return out[..8 * lanes].iter().sum();
                }
                (K::Store, W::Scalar, false) => store_s(a, sp, bytes, reps),
                (K::Store, W::W128, false) => store_128(a, sp, bytes, reps),
                (K::Store, W::W256, false) => store_256(a, sp, bytes, reps),
                (K::Store, W::W512, false) => store_512(a, sp, bytes, reps),
                (K::Store, W::W128, true) => store_nt_128(a, sp, bytes, reps),
                (K::Store, W::W256, true) => store_nt_256(a, sp, bytes, reps),
                (K::Store, W::W512, true) => store_nt_512(a, sp, bytes, reps),
                (K::Copy, W::Scalar, false) => copy_s(a, b, bytes, reps),
                (K::Copy, W::W128, false) => copy_128(a, b, bytes, reps),
                (K::Copy, W::W256, false) => copy_256(a, b, bytes, reps),
                (K::Copy, W::W512, false) => copy_512(a, b, bytes, reps),
                (K::Copy, W::W128, true) => copy_nt_128(a, b, bytes, reps),
                (K::Copy, W::W256, true) => copy_nt_256(a, b, bytes, reps),
                (K::Copy, W::W512, true) => copy_nt_512(a, b, bytes, reps),
                (K::Triad, W::Scalar, false) => triad_s(a, b, c, sp, bytes, reps),
                (K::Triad, W::W128, false) => triad_128(a, b, c, sp, bytes, reps),
                (K::Triad, W::W256, false) => triad_256(a, b, c, sp, bytes, reps),
                (K::Triad, W::W512, false) => triad_512(a, b, c, sp, bytes, reps),
                (K::Triad, W::W128, true) => triad_nt_128(a, b, c, sp, bytes, reps),
                (K::Triad, W::W256, true) => triad_nt_256(a, b, c, sp, bytes, reps),
                (K::Triad, W::W512, true) => triad_nt_512(a, b, c, sp, bytes, reps),
                (K::Triad4, W::Scalar, false) => triad4_s(a, b, c, d, bytes, reps),
                (K::Triad4, W::W128, false) => triad4_128(a, b, c, d, bytes, reps),
                (K::Triad4, W::W256, false) => triad4_256(a, b, c, d, bytes, reps),
                (K::Triad4, W::W512, false) => triad4_512(a, b, c, d, bytes, reps),
                (K::Triad4, W::W128, true) => triad4_nt_128(a, b, c, d, bytes, reps),
                (K::Triad4, W::W256, true) => triad4_nt_256(a, b, c, d, bytes, reps),
                (K::Triad4, W::W512, true) => triad4_nt_512(a, b, c, d, bytes, reps),
                (K::Daxpy, W::Scalar, _) => daxpy_s(a, b, sp, bytes, reps),
                (K::Daxpy, W::W128, _) => daxpy_128(a, b, sp, bytes, reps),
                (K::Daxpy, W::W256, _) => daxpy_256(a, b, sp, bytes, reps),
                (K::Daxpy, W::W512, _) => daxpy_512(a, b, sp, bytes, reps),
                // Excluded by `unsupported_reason`.
                (_, W::Scalar, true) => {
                    unreachable!("scalar NT kernels are rejected before dispatch")
                }
            }
        }
        0.0
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    use super::{Kernel, KernelSpec};
    use std::hint::black_box;

    /// Portable scalar loops (the only width on non-x86-64 builds).
    ///
    /// # Safety
    /// As for the x86-64 version.
    pub(super) unsafe fn run(
        spec: KernelSpec,
        p: [*mut f64; 4],
        n: usize,
        reps: usize,
        s: f64,
    ) -> f64 {
        let s = black_box(s);
        let [a, b, c, d] = p;
        let mut acc = [0.0f64; 8];
        for _ in 0..reps {
            unsafe {
                match spec.kernel {
                    Kernel::Load => {
                        for i in (0..n).step_by(8) {
                            for (k, x) in acc.iter_mut().enumerate() {
                                *x += black_box(*a.add(i + k));
                            }
                        }
                    }
                    Kernel::Store => (0..n).for_each(|i| a.add(i).write_volatile(s)),
                    Kernel::Copy => (0..n).for_each(|i| a.add(i).write_volatile(*b.add(i))),
                    Kernel::Triad => {
                        (0..n).for_each(|i| a.add(i).write_volatile(*b.add(i) + s * *c.add(i)))
                    }
                    Kernel::Triad4 => (0..n)
                        .for_each(|i| a.add(i).write_volatile(*b.add(i) * *c.add(i) + *d.add(i))),
                    Kernel::Daxpy => {
                        (0..n).for_each(|i| a.add(i).write_volatile(*b.add(i) * s + *a.add(i)))
                    }
                }
            }
        }
        acc.iter().sum()
    }
}
