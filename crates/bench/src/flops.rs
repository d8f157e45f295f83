//! Peak floating-point kernels: add, mul and FMA, f32 and f64, per vector width; and the
//! divide and square-root throughput kernels (ceilings, never the peak).
//!
//! Each kernel keeps 12 independent accumulator chains in registers: with an FMA latency
//! of 4 cycles and 2 FMA ports, 8 chains in flight fill the pipelines, 12 leave margin.
//! The loop body (24 instructions, two rounds over the 12 accumulators) is inline
//! assembly, so the compiler cannot fold, reorder or narrow it.
//!
//! Forms: add `acc = acc + c1`, mul `acc = acc * c1`, FMA `acc = acc + c1 * c2`, divide
//! `acc = c1 / acc`, square root `acc = sqrt(c1)`.
//! FLOPs per loop iteration: `24 * lanes` (add, mul, divide, square root) or `48 * lanes`
//! (FMA).
//!
//! Divide: a division's latency (13-24 cycles on current x86 cores) is at most about 5
//! times its reciprocal throughput (4-16 cycles), so 12 independent chains keep the divider
//! busy: the kernel measures its throughput, not its latency. With `acc = c1 / acc` each
//! chain alternates between `init` and `c1 / init` (both near 1, never denormal, infinite
//! or NaN), so the divisor is never a trivial value (1.0, a power of two) that a divider
//! could finish early. Square root: every instruction takes the square root of the same
//! constant `c1` (not 1.0) into its own register, so no instruction waits for another and
//! the operand never becomes a trivial one (a chain `acc = sqrt(acc)` would reach 1.0).

use serde::{Deserialize, Serialize};

use crate::error::BenchError;
use crate::kernels::Width;
use crate::topology::Isa;
use hpcscope_core::Precision;

/// Independent accumulator chains per kernel.
pub const CHAINS: u32 = 12;
/// Instructions per loop iteration.
pub const INSTR_PER_ITER: u32 = 2 * CHAINS;

/// A floating-point operation kind.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum FlopOp {
    /// Addition: 1 FLOP per lane.
    Add,
    /// Multiplication: 1 FLOP per lane.
    Mul,
    /// Fused multiply-add: 2 FLOPs per lane.
    Fma,
    /// Division: 1 FLOP per lane (a ceiling of the divider, never the machine's peak).
    Div,
    /// Square root: 1 FLOP per lane (a ceiling of the divider, never the machine's peak).
    Sqrt,
}

impl FlopOp {
    /// Every operation.
    pub const ALL: [FlopOp; 5] = [
        FlopOp::Add,
        FlopOp::Mul,
        FlopOp::Fma,
        FlopOp::Div,
        FlopOp::Sqrt,
    ];

    /// Name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FlopOp::Add => "add",
            FlopOp::Mul => "mul",
            FlopOp::Fma => "fma",
            FlopOp::Div => "div",
            FlopOp::Sqrt => "sqrt",
        }
    }

    /// Whether the operation's kernel can set the machine's peak (add, mul, FMA); divide
    /// and square root run on the divider, far below it, and only give ceilings.
    pub fn is_peak(self) -> bool {
        matches!(self, FlopOp::Add | FlopOp::Mul | FlopOp::Fma)
    }

    /// Parses a name.
    pub fn from_name(s: &str) -> Option<FlopOp> {
        FlopOp::ALL.into_iter().find(|o| o.name() == s)
    }

    /// How the kernel keeps its 12 registers busy, in words (machine-file provenance):
    /// `12 independent accumulator chains, inline asm` for add, mul and FMA.
    pub fn kernel_form(self) -> String {
        match self {
            FlopOp::Add | FlopOp::Mul | FlopOp::Fma => {
                format!("{CHAINS} independent accumulator chains, inline asm")
            }
            FlopOp::Div => {
                let s = FlopState::steady(self);
                format!(
                    "{CHAINS} independent chains acc = c1 / acc, c1 = {}, acc alternating {} and c1 / {}, results checked, inline asm",
                    s.c1, s.init, s.init
                )
            }
            FlopOp::Sqrt => format!(
                "{CHAINS} independent square roots of the constant {} per round, results checked, inline asm",
                FlopState::steady(self).c1
            ),
        }
    }

    /// FLOPs per lane per instruction.
    pub fn flops_per_lane(self) -> u32 {
        match self {
            FlopOp::Fma => 2,
            _ => 1,
        }
    }
}

impl std::fmt::Display for FlopOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One peak kernel: operation, precision, width.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FlopSpec {
    /// Operation.
    pub op: FlopOp,
    /// Precision.
    pub precision: Precision,
    /// Vector width.
    pub width: Width,
}

impl FlopSpec {
    /// Display name, `fma-f64-512`.
    pub fn label(&self) -> String {
        format!("{}-{}-{}", self.op, self.precision, self.width)
    }

    /// Lanes per instruction.
    pub fn lanes(&self) -> u32 {
        self.width.lanes(self.precision.bits())
    }

    /// FLOPs executed by `iters` loop iterations: `iters * 24 * lanes * flops_per_lane`.
    pub fn flops(&self, iters: u64) -> u64 {
        iters
            * u64::from(INSTR_PER_ITER)
            * u64::from(self.lanes())
            * u64::from(self.op.flops_per_lane())
    }

    /// Why this kernel cannot run on `isa`, or `None`.
    pub fn unsupported_reason(&self, isa: &Isa) -> Option<String> {
        if !isa.supports(self.width) {
            return Some(format!(
                "the CPU (or this build) lacks {}-bit vector kernels ({})",
                self.width,
                isa.requirement(self.width)
            ));
        }
        if self.op == FlopOp::Fma && !isa.fma {
            return Some("the CPU has no FMA instructions".into());
        }
        None
    }
}

/// Accumulator state for a peak kernel: 12 accumulators seeded with `init`, constants
/// `c1` and `c2`; after a run, `out[k]` holds lane 0 of accumulator `k`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlopState {
    /// Initial value of every lane of every accumulator.
    pub init: f64,
    /// First constant.
    pub c1: f64,
    /// Second constant (FMA only).
    pub c2: f64,
}

impl FlopState {
    /// Values that keep every accumulator finite and normal (never denormal, which would
    /// slow some CPUs down) for any iteration count.
    pub fn steady(op: FlopOp) -> FlopState {
        match op {
            // acc grows by 1 per instruction (and stops growing, still finite, at 2^53 or
            // 2^24); mul by 1 keeps it at 1.
            FlopOp::Add => FlopState {
                init: 0.0,
                c1: 1.0,
                c2: 0.0,
            },
            FlopOp::Mul => FlopState {
                init: 1.0,
                c1: 1.0,
                c2: 0.0,
            },
            FlopOp::Fma => FlopState {
                init: 0.0,
                c1: 1.0,
                c2: 1.0,
            },
            // acc = c1 / acc alternates between 1.5 and c1 / 1.5 (about 0.667); in f64 and
            // in f32, c1 / (c1 / 1.5) rounds back to exactly 1.5, so the values never drift.
            FlopOp::Div => FlopState {
                init: 1.5,
                c1: 1.000_000_1,
                c2: 0.0,
            },
            // acc = sqrt(c1): about 1.0488 in every lane.
            FlopOp::Sqrt => FlopState {
                init: 1.5,
                c1: 1.1,
                c2: 0.0,
            },
        }
    }

    /// Checks the accumulators `out` that [`run`] returned after `iters` iterations of
    /// `op` from this state, computed in `precision`: every value finite and, for divide
    /// and square root, the value the kernel must compute (divide: an even number of
    /// divisions per chain brings it back to `init`, within 4 units in the last place for
    /// rounding; square root: `sqrt(c1)` exactly). Says what is wrong otherwise.
    pub fn check(
        &self,
        op: FlopOp,
        precision: Precision,
        iters: u64,
        out: &[f64],
    ) -> Result<(), String> {
        let round = |v: f64| match precision {
            Precision::F64 => v,
            Precision::F32 => f64::from(v as f32),
        };
        if let Some(v) = out.iter().find(|v| !v.is_finite()) {
            return Err(format!("an accumulator is {v}, not finite"));
        }
        if iters == 0 {
            return Ok(());
        }
        let (init, c1) = (round(self.init), round(self.c1));
        let ulp = match precision {
            Precision::F64 => f64::EPSILON,
            Precision::F32 => f64::from(f32::EPSILON),
        };
        match op {
            FlopOp::Div => {
                if let Some(v) = out.iter().find(|v| ((**v - init) / init).abs() > 4.0 * ulp) {
                    return Err(format!(
                        "an accumulator holds {v} after an even number of divisions acc = {c1} / acc, not {init}"
                    ));
                }
            }
            FlopOp::Sqrt => {
                let want = match precision {
                    Precision::F64 => c1.sqrt(),
                    Precision::F32 => f64::from((c1 as f32).sqrt()),
                };
                if let Some(v) = out.iter().find(|v| **v != want) {
                    return Err(format!("an accumulator holds {v}, not sqrt({c1}) = {want}"));
                }
            }
            FlopOp::Add | FlopOp::Mul | FlopOp::Fma => {}
        }
        Ok(())
    }
}

/// Runs `spec` for `iters` loop iterations; returns lane 0 of each of the 12 accumulators.
pub fn run(
    spec: FlopSpec,
    iters: u64,
    state: FlopState,
    isa: &Isa,
) -> Result<[f64; CHAINS as usize], BenchError> {
    if let Some(reason) = spec.unsupported_reason(isa) {
        return Err(BenchError::Unsupported {
            what: spec.label(),
            reason,
        });
    }
    if iters == 0 {
        return Ok([state.init; CHAINS as usize]);
    }
    // Buffer: init vector (64 B), c1 (64 B), c2 (64 B), then 12 output vectors.
    #[repr(C, align(64))]
    struct Buf([u8; 64 * 15]);
    let mut buf = Buf([0; 64 * 15]);
    let put = |buf: &mut Buf, slot: usize, v: f64| match spec.precision {
        Precision::F64 => {
            for l in 0..8 {
                buf.0[slot * 64 + l * 8..slot * 64 + l * 8 + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        Precision::F32 => {
            for l in 0..16 {
                buf.0[slot * 64 + l * 4..slot * 64 + l * 4 + 4]
                    .copy_from_slice(&(v as f32).to_le_bytes());
            }
        }
    };
    put(&mut buf, 0, state.init);
    put(&mut buf, 1, state.c1);
    put(&mut buf, 2, state.c2);
    // SAFETY: the ISA was checked above; the buffer holds 15 vectors of 64 B.
    unsafe { imp::run(spec, iters, buf.0.as_mut_ptr()) };
    let mut out = [0.0; CHAINS as usize];
    for (k, o) in out.iter_mut().enumerate() {
        let off = (3 + k) * 64;
        *o = match spec.precision {
            Precision::F64 => f64::from_le_bytes(buf.0[off..off + 8].try_into().expect("8 bytes")),
            Precision::F32 => f64::from(f32::from_le_bytes(
                buf.0[off..off + 4].try_into().expect("4 bytes"),
            )),
        };
    }
    Ok(out)
}

/// Cycles per iteration of the vector-load frequency probe (6 dependent FMAs of 4 cycles
/// on each of 4 chains).
pub const PROBE_CYCLES_PER_ITER: u64 = 24;

/// Runs the wide-vector frequency probe (512 bits only: the width with a frequency
/// license on current x86 cores and a 4-cycle FMA latency on every core that has it) for
/// `iters` iterations, or returns `None` when the width has no probe or the CPU lacks it.
pub fn vector_probe(width: Width, iters: u64, isa: &Isa) -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        if iters == 0 {
            return Some(0);
        }
        match width {
            // SAFETY: features checked.
            Width::W512 if isa.avx512f => Some(unsafe { imp::freq_512(iters) }),
            _ => None,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (width, iters, isa);
        None
    }
}

/// Core frequency in GHz while `width`-bit FMAs keep the FMA units busy: the best of
/// `samples` runs of about `sample_s` seconds each of [`vector_probe`].
pub fn vector_frequency_ghz(width: Width, isa: &Isa, sample_s: f64, samples: usize) -> Option<f64> {
    vector_probe(width, 1, isa)?;
    let mut iters: u64 = 1000;
    let mut dt;
    loop {
        let t = std::time::Instant::now();
        std::hint::black_box(vector_probe(width, iters, isa));
        dt = t.elapsed().as_secs_f64();
        if dt > sample_s / 4.0 || iters > 1 << 40 {
            break;
        }
        iters *= 4;
    }
    let iters = ((iters as f64) * sample_s / dt.max(1e-9)).max(1000.0) as u64;
    let mut best: f64 = 0.0;
    for _ in 0..samples.max(1) {
        let t = std::time::Instant::now();
        std::hint::black_box(vector_probe(width, iters, isa));
        best = best.max((iters * PROBE_CYCLES_PER_ITER) as f64 / t.elapsed().as_secs_f64() / 1e9);
    }
    Some(best)
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::{FlopOp, FlopSpec};
    use crate::kernels::Width;
    use hpcscope_core::Precision;
    use std::arch::asm;

    macro_rules! k_peak {
        ($name:ident, $feat:literal, $cls:tt, $ins:literal, $src1:literal, $src2:literal) => {
            #[target_feature(enable = $feat)]
            unsafe fn $name(iters: u64, p: *mut u8) {
                unsafe {
                    asm!(
                        "vmovups {a0}, [{p}]", "vmovups {a1}, [{p}]", "vmovups {a2}, [{p}]",
                        "vmovups {a3}, [{p}]", "vmovups {a4}, [{p}]", "vmovups {a5}, [{p}]",
                        "vmovups {a6}, [{p}]", "vmovups {a7}, [{p}]", "vmovups {a8}, [{p}]",
                        "vmovups {a9}, [{p}]", "vmovups {a10}, [{p}]", "vmovups {a11}, [{p}]",
                        "vmovups {c1}, [{p} + 64]",
                        "vmovups {c2}, [{p} + 128]",
                        ".p2align 5",
                        "2:",
                        concat!($ins, " {a0}, ", $src1, "{a0}", $src2),
                        concat!($ins, " {a1}, ", $src1, "{a1}", $src2),
                        concat!($ins, " {a2}, ", $src1, "{a2}", $src2),
                        concat!($ins, " {a3}, ", $src1, "{a3}", $src2),
                        concat!($ins, " {a4}, ", $src1, "{a4}", $src2),
                        concat!($ins, " {a5}, ", $src1, "{a5}", $src2),
                        concat!($ins, " {a6}, ", $src1, "{a6}", $src2),
                        concat!($ins, " {a7}, ", $src1, "{a7}", $src2),
                        concat!($ins, " {a8}, ", $src1, "{a8}", $src2),
                        concat!($ins, " {a9}, ", $src1, "{a9}", $src2),
                        concat!($ins, " {a10}, ", $src1, "{a10}", $src2),
                        concat!($ins, " {a11}, ", $src1, "{a11}", $src2),
                        concat!($ins, " {a0}, ", $src1, "{a0}", $src2),
                        concat!($ins, " {a1}, ", $src1, "{a1}", $src2),
                        concat!($ins, " {a2}, ", $src1, "{a2}", $src2),
                        concat!($ins, " {a3}, ", $src1, "{a3}", $src2),
                        concat!($ins, " {a4}, ", $src1, "{a4}", $src2),
                        concat!($ins, " {a5}, ", $src1, "{a5}", $src2),
                        concat!($ins, " {a6}, ", $src1, "{a6}", $src2),
                        concat!($ins, " {a7}, ", $src1, "{a7}", $src2),
                        concat!($ins, " {a8}, ", $src1, "{a8}", $src2),
                        concat!($ins, " {a9}, ", $src1, "{a9}", $src2),
                        concat!($ins, " {a10}, ", $src1, "{a10}", $src2),
                        concat!($ins, " {a11}, ", $src1, "{a11}", $src2),
                        "dec {n}",
                        "jnz 2b",
                        "vmovups [{p} + 192], {a0}", "vmovups [{p} + 256], {a1}",
                        "vmovups [{p} + 320], {a2}", "vmovups [{p} + 384], {a3}",
                        "vmovups [{p} + 448], {a4}", "vmovups [{p} + 512], {a5}",
                        "vmovups [{p} + 576], {a6}", "vmovups [{p} + 640], {a7}",
                        "vmovups [{p} + 704], {a8}", "vmovups [{p} + 768], {a9}",
                        "vmovups [{p} + 832], {a10}", "vmovups [{p} + 896], {a11}",
                        "vzeroupper",
                        p = in(reg) p,
                        n = inout(reg) iters => _,
                        a0 = out($cls) _, a1 = out($cls) _, a2 = out($cls) _, a3 = out($cls) _,
                        a4 = out($cls) _, a5 = out($cls) _, a6 = out($cls) _, a7 = out($cls) _,
                        a8 = out($cls) _, a9 = out($cls) _, a10 = out($cls) _, a11 = out($cls) _,
                        c1 = out($cls) _, c2 = out($cls) _,
                        options(nostack),
                    )
                }
            }
        };
    }

    // Binary form `ins acc, acc, c1`; FMA form `vfmadd231 acc, c1, c2` (acc += c1*c2).
    // The template reads: ins {acc}, <src1>{acc}<src2>; for FMA src1 is "{c1}, {c2} #" so
    // the trailing accumulator lands in a comment.
    k_peak!(add_f64_s, "avx", xmm_reg, "vaddsd", "", ", {c1}");
    k_peak!(add_f64_128, "avx", xmm_reg, "vaddpd", "", ", {c1}");
    k_peak!(add_f64_256, "avx", ymm_reg, "vaddpd", "", ", {c1}");
    k_peak!(add_f64_512, "avx512f", zmm_reg, "vaddpd", "", ", {c1}");
    k_peak!(mul_f64_s, "avx", xmm_reg, "vmulsd", "", ", {c1}");
    k_peak!(mul_f64_128, "avx", xmm_reg, "vmulpd", "", ", {c1}");
    k_peak!(mul_f64_256, "avx", ymm_reg, "vmulpd", "", ", {c1}");
    k_peak!(mul_f64_512, "avx512f", zmm_reg, "vmulpd", "", ", {c1}");
    k_peak!(
        fma_f64_s,
        "avx,fma",
        xmm_reg,
        "vfmadd231sd",
        "{c1}, {c2} # ",
        ""
    );
    k_peak!(
        fma_f64_128,
        "avx,fma",
        xmm_reg,
        "vfmadd231pd",
        "{c1}, {c2} # ",
        ""
    );
    k_peak!(
        fma_f64_256,
        "avx,fma",
        ymm_reg,
        "vfmadd231pd",
        "{c1}, {c2} # ",
        ""
    );
    k_peak!(
        fma_f64_512,
        "avx512f",
        zmm_reg,
        "vfmadd231pd",
        "{c1}, {c2} # ",
        ""
    );
    // Divide `acc = c1 / acc`: `vdiv acc, c1, acc`. Square root `acc = sqrt(c1)`: the
    // accumulator is only written (packed `vsqrt acc, c1`; scalar `vsqrt acc, c1, c1`, whose
    // upper lanes also come from c1), so no instruction depends on another.
    k_peak!(div_f64_s, "avx", xmm_reg, "vdivsd", "{c1}, ", "");
    k_peak!(div_f64_128, "avx", xmm_reg, "vdivpd", "{c1}, ", "");
    k_peak!(div_f64_256, "avx", ymm_reg, "vdivpd", "{c1}, ", "");
    k_peak!(div_f64_512, "avx512f", zmm_reg, "vdivpd", "{c1}, ", "");
    k_peak!(sqrt_f64_s, "avx", xmm_reg, "vsqrtsd", "{c1}, {c1} # ", "");
    k_peak!(sqrt_f64_128, "avx", xmm_reg, "vsqrtpd", "{c1} # ", "");
    k_peak!(sqrt_f64_256, "avx", ymm_reg, "vsqrtpd", "{c1} # ", "");
    k_peak!(sqrt_f64_512, "avx512f", zmm_reg, "vsqrtpd", "{c1} # ", "");
    k_peak!(div_f32_s, "avx", xmm_reg, "vdivss", "{c1}, ", "");
    k_peak!(div_f32_128, "avx", xmm_reg, "vdivps", "{c1}, ", "");
    k_peak!(div_f32_256, "avx", ymm_reg, "vdivps", "{c1}, ", "");
    k_peak!(div_f32_512, "avx512f", zmm_reg, "vdivps", "{c1}, ", "");
    k_peak!(sqrt_f32_s, "avx", xmm_reg, "vsqrtss", "{c1}, {c1} # ", "");
    k_peak!(sqrt_f32_128, "avx", xmm_reg, "vsqrtps", "{c1} # ", "");
    k_peak!(sqrt_f32_256, "avx", ymm_reg, "vsqrtps", "{c1} # ", "");
    k_peak!(sqrt_f32_512, "avx512f", zmm_reg, "vsqrtps", "{c1} # ", "");
    k_peak!(add_f32_s, "avx", xmm_reg, "vaddss", "", ", {c1}");
    k_peak!(add_f32_128, "avx", xmm_reg, "vaddps", "", ", {c1}");
    k_peak!(add_f32_256, "avx", ymm_reg, "vaddps", "", ", {c1}");
    k_peak!(add_f32_512, "avx512f", zmm_reg, "vaddps", "", ", {c1}");
    k_peak!(mul_f32_s, "avx", xmm_reg, "vmulss", "", ", {c1}");
    k_peak!(mul_f32_128, "avx", xmm_reg, "vmulps", "", ", {c1}");
    k_peak!(mul_f32_256, "avx", ymm_reg, "vmulps", "", ", {c1}");
    k_peak!(mul_f32_512, "avx512f", zmm_reg, "vmulps", "", ", {c1}");
    k_peak!(
        fma_f32_s,
        "avx,fma",
        xmm_reg,
        "vfmadd231ss",
        "{c1}, {c2} # ",
        ""
    );
    k_peak!(
        fma_f32_128,
        "avx,fma",
        xmm_reg,
        "vfmadd231ps",
        "{c1}, {c2} # ",
        ""
    );
    k_peak!(
        fma_f32_256,
        "avx,fma",
        ymm_reg,
        "vfmadd231ps",
        "{c1}, {c2} # ",
        ""
    );
    k_peak!(
        fma_f32_512,
        "avx512f",
        zmm_reg,
        "vfmadd231ps",
        "{c1}, {c2} # ",
        ""
    );

    // Frequency under vector load: 4 independent chains of dependent FMAs, 6 FMAs each
    // per iteration. FMA latency is 4 cycles on the cores with AVX-512 FMA (Skylake-SP to
    // Sapphire Rapids, Zen 4; not Knights Landing), so an iteration takes 24 cycles while
    // the FMA units stay half busy: enough wide FMAs for the core to apply its
    // wide-vector frequency, too few for two chains to compete for a port.
    macro_rules! k_freq {
        ($name:ident, $feat:literal, $cls:tt) => {
            #[target_feature(enable = $feat)]
            pub(super) unsafe fn $name(iters: u64) -> u64 {
                unsafe {
                    asm!(
                        "vxorpd {a0:x}, {a0:x}, {a0:x}", "vmovapd {a1}, {a0}", "vmovapd {a2}, {a0}",
                        "vmovapd {a3}, {a0}", "vmovapd {c1}, {a0}", "vmovapd {c2}, {a0}",
                        ".p2align 5",
                        "2:",
                        "vfmadd231pd {a0}, {c1}, {c2}", "vfmadd231pd {a1}, {c1}, {c2}", "vfmadd231pd {a2}, {c1}, {c2}", "vfmadd231pd {a3}, {c1}, {c2}",
                        "vfmadd231pd {a0}, {c1}, {c2}", "vfmadd231pd {a1}, {c1}, {c2}", "vfmadd231pd {a2}, {c1}, {c2}", "vfmadd231pd {a3}, {c1}, {c2}",
                        "vfmadd231pd {a0}, {c1}, {c2}", "vfmadd231pd {a1}, {c1}, {c2}", "vfmadd231pd {a2}, {c1}, {c2}", "vfmadd231pd {a3}, {c1}, {c2}",
                        "vfmadd231pd {a0}, {c1}, {c2}", "vfmadd231pd {a1}, {c1}, {c2}", "vfmadd231pd {a2}, {c1}, {c2}", "vfmadd231pd {a3}, {c1}, {c2}",
                        "vfmadd231pd {a0}, {c1}, {c2}", "vfmadd231pd {a1}, {c1}, {c2}", "vfmadd231pd {a2}, {c1}, {c2}", "vfmadd231pd {a3}, {c1}, {c2}",
                        "vfmadd231pd {a0}, {c1}, {c2}", "vfmadd231pd {a1}, {c1}, {c2}", "vfmadd231pd {a2}, {c1}, {c2}", "vfmadd231pd {a3}, {c1}, {c2}",
                        "dec {n}",
                        "jnz 2b",
                        "vzeroupper",
                        n = inout(reg) iters => _,
                        a0 = out($cls) _, a1 = out($cls) _, a2 = out($cls) _, a3 = out($cls) _,
                        c1 = out($cls) _, c2 = out($cls) _,
                        options(nostack, nomem),
                    )
                }
                1
            }
        };
    }
    k_freq!(freq_512, "avx512f", zmm_reg);

    /// # Safety
    /// The CPU supports the kernel; `p` points to 15 writable 64-byte vectors; `iters > 0`.
    pub(super) unsafe fn run(spec: FlopSpec, iters: u64, p: *mut u8) {
        use FlopOp as O;
        use Precision as P;
        use Width as W;
        unsafe {
            match (spec.op, spec.precision, spec.width) {
                (O::Add, P::F64, W::Scalar) => add_f64_s(iters, p),
                (O::Add, P::F64, W::W128) => add_f64_128(iters, p),
                (O::Add, P::F64, W::W256) => add_f64_256(iters, p),
                (O::Add, P::F64, W::W512) => add_f64_512(iters, p),
                (O::Mul, P::F64, W::Scalar) => mul_f64_s(iters, p),
                (O::Mul, P::F64, W::W128) => mul_f64_128(iters, p),
                (O::Mul, P::F64, W::W256) => mul_f64_256(iters, p),
                (O::Mul, P::F64, W::W512) => mul_f64_512(iters, p),
                (O::Fma, P::F64, W::Scalar) => fma_f64_s(iters, p),
                (O::Fma, P::F64, W::W128) => fma_f64_128(iters, p),
                (O::Fma, P::F64, W::W256) => fma_f64_256(iters, p),
                (O::Fma, P::F64, W::W512) => fma_f64_512(iters, p),
                (O::Add, P::F32, W::Scalar) => add_f32_s(iters, p),
                (O::Add, P::F32, W::W128) => add_f32_128(iters, p),
                (O::Add, P::F32, W::W256) => add_f32_256(iters, p),
                (O::Add, P::F32, W::W512) => add_f32_512(iters, p),
                (O::Mul, P::F32, W::Scalar) => mul_f32_s(iters, p),
                (O::Mul, P::F32, W::W128) => mul_f32_128(iters, p),
                (O::Mul, P::F32, W::W256) => mul_f32_256(iters, p),
                (O::Mul, P::F32, W::W512) => mul_f32_512(iters, p),
                (O::Fma, P::F32, W::Scalar) => fma_f32_s(iters, p),
                (O::Fma, P::F32, W::W128) => fma_f32_128(iters, p),
                (O::Fma, P::F32, W::W256) => fma_f32_256(iters, p),
                (O::Fma, P::F32, W::W512) => fma_f32_512(iters, p),
                (O::Div, P::F64, W::Scalar) => div_f64_s(iters, p),
                (O::Div, P::F64, W::W128) => div_f64_128(iters, p),
                (O::Div, P::F64, W::W256) => div_f64_256(iters, p),
                (O::Div, P::F64, W::W512) => div_f64_512(iters, p),
                (O::Sqrt, P::F64, W::Scalar) => sqrt_f64_s(iters, p),
                (O::Sqrt, P::F64, W::W128) => sqrt_f64_128(iters, p),
                (O::Sqrt, P::F64, W::W256) => sqrt_f64_256(iters, p),
                (O::Sqrt, P::F64, W::W512) => sqrt_f64_512(iters, p),
                (O::Div, P::F32, W::Scalar) => div_f32_s(iters, p),
                (O::Div, P::F32, W::W128) => div_f32_128(iters, p),
                (O::Div, P::F32, W::W256) => div_f32_256(iters, p),
                (O::Div, P::F32, W::W512) => div_f32_512(iters, p),
                (O::Sqrt, P::F32, W::Scalar) => sqrt_f32_s(iters, p),
                (O::Sqrt, P::F32, W::W128) => sqrt_f32_128(iters, p),
                (O::Sqrt, P::F32, W::W256) => sqrt_f32_256(iters, p),
                (O::Sqrt, P::F32, W::W512) => sqrt_f32_512(iters, p),
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    use super::{CHAINS, FlopOp, FlopSpec};
    use hpcscope_core::Precision;
    use std::hint::black_box;

    /// Portable scalar f64/f32 chains (the only width on non-x86-64 builds).
    ///
    /// # Safety
    /// `p` points to 15 writable 64-byte vectors.
    pub(super) unsafe fn run(spec: FlopSpec, iters: u64, p: *mut u8) {
        unsafe {
            let rd = |slot: usize| match spec.precision {
                Precision::F64 => (p.add(slot * 64) as *const f64).read(),
                Precision::F32 => f64::from((p.add(slot * 64) as *const f32).read()),
            };
            let (init, c1, c2) = (rd(0), black_box(rd(1)), black_box(rd(2)));
            let mut acc = [init; CHAINS as usize];
            for _ in 0..iters {
                for _ in 0..2 {
                    for a in acc.iter_mut() {
                        *a = match spec.op {
                            FlopOp::Add => *a + c1,
                            FlopOp::Mul => *a * c1,
                            FlopOp::Fma => c1.mul_add(c2, *a),
                            FlopOp::Div => c1 / *a,
                            FlopOp::Sqrt => c1.sqrt(),
                        };
                    }
                }
                acc = black_box(acc);
            }
            for (k, a) in acc.iter().enumerate() {
                match spec.precision {
                    Precision::F64 => (p.add((3 + k) * 64) as *mut f64).write(*a),
                    Precision::F32 => (p.add((3 + k) * 64) as *mut f32).write(*a as f32),
                }
            }
        }
    }
}
