//! Latency of single floating-point operations: add, mul, FMA, divide and square root, f32
//! and f64, per vector width.
//!
//! Each kernel runs ONE chain of dependent instructions (each instruction's result is the
//! next one's input), 32 instructions per loop iteration, in inline assembly, so the time
//! per instruction is the operation's latency, not its throughput. The values stay finite
//! and normal (never denormal, which would slow some CPUs down) and the operands are not the
//! trivial values (1.0, 0.0, a power-of-two divisor) that some dividers finish early:
//!
//! - add: `acc = acc + 0.5`, `acc = acc + (-0.5)` alternately (1.5, 2.0, 1.5, ...);
//! - mul: `acc = acc * 2.0`, `acc = acc * 0.5` alternately (1.5, 3.0, 1.5, ...);
//! - FMA: `acc = acc + 0.5 * 1.0`, `acc = acc + 0.5 * (-1.0)` alternately (`vfmadd231`, the
//!   chain through the addend);
//! - divide: `acc = c / acc` with `c = 1.0000001`, alternating between 1.1 and `c / 1.1`
//!   (both with full mantissas; `c / (c / 1.1)` rounds back to exactly 1.1 in f64 and f32);
//! - square root: a chain of `acc = sqrt(acc)` alone would reach 1.0, an operand some cores
//!   (Golden Cove) take the root of faster. The chain is `acc = sqrt(acc)`, `acc = acc * 1.1`
//!   alternately (it settles near 1.21 and 1.1, full mantissas), 16 roots and 16
//!   multiplications per iteration; the square root's latency is the time per pair minus the
//!   mul chain's latency at the same precision and width, measured in the same run.

use crate::error::BenchError;
use crate::flops::{FlopOp, FlopSpec};
use crate::topology::Isa;
use hpcscope_core::Precision;

/// Dependent instructions per loop iteration.
pub const INSTR_PER_ITER: u32 = 32;

/// Target duration of one timed sample of a latency kernel, seconds.
pub const SAMPLE_S: f64 = 0.002;

/// Loop iterations per timed call (32 768 dependent instructions: 30-600 µs).
pub const ITERS_PER_CALL: u64 = 1024;

/// Chain state: the initial value and up to three constants (see the module's forms).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainState {
    /// Initial value of every lane of the chain's register.
    pub init: f64,
    /// First constant.
    pub c1: f64,
    /// Second constant.
    pub c2: f64,
    /// Third constant (FMA only).
    pub c3: f64,
}

impl ChainState {
    /// The values bench times with (see the module documentation).
    pub fn steady(op: FlopOp) -> ChainState {
        match op {
            FlopOp::Add => ChainState {
                init: 1.5,
                c1: 0.5,
                c2: -0.5,
                c3: 0.0,
            },
            FlopOp::Mul => ChainState {
                init: 1.5,
                c1: 2.0,
                c2: 0.5,
                c3: 0.0,
            },
            FlopOp::Fma => ChainState {
                init: 1.5,
                c1: 0.5,
                c2: 1.0,
                c3: -1.0,
            },
            FlopOp::Div => ChainState {
                init: 1.1,
                c1: 1.000_000_1,
                c2: 0.0,
                c3: 0.0,
            },
            FlopOp::Sqrt => ChainState {
                init: 1.21,
                c1: 1.1,
                c2: 0.0,
                c3: 0.0,
            },
        }
    }

    /// Checks the chain's value `out` after `iters` iterations of `op` from this state in
    /// `precision`: add, mul and FMA come back to `init` exactly (an even number of
    /// instructions, all exact); divide to `init` within 4 units in the last place; square
    /// root stays within 1.0-1.5 (near 1.21); and every value is finite and normal.
    pub fn check(
        &self,
        op: FlopOp,
        precision: Precision,
        iters: u64,
        out: f64,
    ) -> Result<(), String> {
        let round = |v: f64| match precision {
            Precision::F64 => v,
            Precision::F32 => f64::from(v as f32),
        };
        if !out.is_finite() || !out.is_normal() {
            return Err(format!("the chain holds {out}, not a finite normal number"));
        }
        if iters == 0 {
            return Ok(());
        }
        let init = round(self.init);
        let ulp = match precision {
            Precision::F64 => f64::EPSILON,
            Precision::F32 => f64::from(f32::EPSILON),
        };
        match op {
            FlopOp::Add | FlopOp::Mul | FlopOp::Fma if out != init => Err(format!(
                "the chain holds {out} after an even number of exact steps, not {init}"
            )),
            FlopOp::Div if ((out - init) / init).abs() > 4.0 * ulp => Err(format!(
                "the chain holds {out} after an even number of divisions acc = c / acc, not {init}"
            )),
            FlopOp::Sqrt if !(1.0..=1.5).contains(&out) => Err(format!(
                "the chain acc = sqrt(acc) * {} holds {out}, outside 1.0-1.5",
                self.c1
            )),
            _ => Ok(()),
        }
    }
}

/// Instruction of `op` at `spec`'s precision and width, for provenance (`vaddpd`).
pub fn mnemonic(spec: FlopSpec) -> String {
    let base = match spec.op {
        FlopOp::Add => "vadd",
        FlopOp::Mul => "vmul",
        FlopOp::Fma => "vfmadd231",
        FlopOp::Div => "vdiv",
        FlopOp::Sqrt => "vsqrt",
    };
    let scalar = spec.width == crate::kernels::Width::Scalar;
    let suffix = match (scalar, spec.precision) {
        (true, Precision::F64) => "sd",
        (true, Precision::F32) => "ss",
        (false, Precision::F64) => "pd",
        (false, Precision::F32) => "ps",
    };
    format!("{base}{suffix}")
}

/// The chain's form in words (machine-file provenance).
pub fn chain_form(spec: FlopSpec) -> String {
    let m = mnemonic(spec);
    let s = ChainState::steady(spec.op);
    match spec.op {
        FlopOp::Add => format!(
            "one chain of {INSTR_PER_ITER} dependent {m} per loop iteration, acc + {} and acc + ({}) alternately",
            s.c1, s.c2
        ),
        FlopOp::Mul => format!(
            "one chain of {INSTR_PER_ITER} dependent {m} per loop iteration, acc x {} and acc x {} alternately",
            s.c1, s.c2
        ),
        FlopOp::Fma => format!(
            "one chain of {INSTR_PER_ITER} dependent {m} per loop iteration through the addend, acc + {} x {} and acc + {} x ({}) alternately",
            s.c1, s.c2, s.c1, s.c3
        ),
        FlopOp::Div => format!(
            "one chain of {INSTR_PER_ITER} dependent {m} per loop iteration, acc = {} / acc alternating {} and {} / {}",
            s.c1, s.init, s.c1, s.init
        ),
        FlopOp::Sqrt => format!(
            "one chain of {} dependent {m} per loop iteration, each followed by a multiplication by {} (operand near {}, never 1.0); the mul chain's latency subtracted",
            INSTR_PER_ITER / 2,
            s.c1,
            s.init
        ),
    }
}

/// Instructions of `spec.op` itself executed by `iters` loop iterations (square root: half
/// the chain; the other half are multiplications).
pub fn ops(spec: FlopSpec, iters: u64) -> u64 {
    match spec.op {
        FlopOp::Sqrt => iters * u64::from(INSTR_PER_ITER / 2),
        _ => iters * u64::from(INSTR_PER_ITER),
    }
}

/// Runs the latency chain of `spec` for `iters` loop iterations; returns lane 0 of the
/// chain's register.
pub fn run(spec: FlopSpec, iters: u64, state: ChainState, isa: &Isa) -> Result<f64, BenchError> {
    if let Some(reason) = spec.unsupported_reason(isa) {
        return Err(BenchError::Unsupported {
            what: format!("latency {}", spec.label()),
            reason,
        });
    }
    if iters == 0 {
        return Ok(state.init);
    }
    // Buffer: init (64 B), c1, c2, c3, then the chain's final value.
    #[repr(C, align(64))]
    struct Buf([u8; 64 * 5]);
    let mut buf = Buf([0; 64 * 5]);
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
    put(&mut buf, 3, state.c3);
    // SAFETY: the ISA was checked above; the buffer holds 5 vectors of 64 B.
    unsafe { imp::run(spec, iters, buf.0.as_mut_ptr()) };
    let off = 4 * 64;
    Ok(match spec.precision {
        Precision::F64 => f64::from_le_bytes(buf.0[off..off + 8].try_into().expect("8 bytes")),
        Precision::F32 => f64::from(f32::from_le_bytes(
            buf.0[off..off + 4].try_into().expect("4 bytes"),
        )),
    })
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::{FlopOp, FlopSpec};
    use crate::kernels::Width;
    use hpcscope_core::Precision;
    use std::arch::asm;

    // One chain in register `a`: 16 pairs (even, odd) of dependent instructions per
    // iteration; c1, c2, c3 hold the constants.
    macro_rules! k_chain {
        ($name:ident, $feat:literal, $cls:tt, $e:literal, $o:literal) => {
            #[target_feature(enable = $feat)]
            unsafe fn $name(iters: u64, p: *mut u8) {
                unsafe {
                    asm!(
                        "vmovups {a}, [{p}]",
                        "vmovups {c1}, [{p} + 64]",
                        "vmovups {c2}, [{p} + 128]",
                        "vmovups {c3}, [{p} + 192]",
                        ".p2align 5",
                        "2:",
                        $e, $o, $e, $o, $e, $o, $e, $o,
                        $e, $o, $e, $o, $e, $o, $e, $o,
                        $e, $o, $e, $o, $e, $o, $e, $o,
                        $e, $o, $e, $o, $e, $o, $e, $o,
                        "dec {n}",
                        "jnz 2b",
                        "vmovups [{p} + 256], {a}",
                        "vzeroupper",
                        p = in(reg) p,
                        n = inout(reg) iters => _,
                        a = out($cls) _,
                        c1 = out($cls) _,
                        c2 = out($cls) _,
                        c3 = out($cls) _,
                        options(nostack),
                    )
                }
            }
        };
    }

    k_chain!(
        add_f64_s,
        "avx",
        xmm_reg,
        "vaddsd {a}, {a}, {c1}",
        "vaddsd {a}, {a}, {c2}"
    );
    k_chain!(
        add_f64_128,
        "avx",
        xmm_reg,
        "vaddpd {a}, {a}, {c1}",
        "vaddpd {a}, {a}, {c2}"
    );
    k_chain!(
        add_f64_256,
        "avx",
        ymm_reg,
        "vaddpd {a}, {a}, {c1}",
        "vaddpd {a}, {a}, {c2}"
    );
    k_chain!(
        add_f64_512,
        "avx512f",
        zmm_reg,
        "vaddpd {a}, {a}, {c1}",
        "vaddpd {a}, {a}, {c2}"
    );
    k_chain!(
        add_f32_s,
        "avx",
        xmm_reg,
        "vaddss {a}, {a}, {c1}",
        "vaddss {a}, {a}, {c2}"
    );
    k_chain!(
        add_f32_128,
        "avx",
        xmm_reg,
        "vaddps {a}, {a}, {c1}",
        "vaddps {a}, {a}, {c2}"
    );
    k_chain!(
        add_f32_256,
        "avx",
        ymm_reg,
        "vaddps {a}, {a}, {c1}",
        "vaddps {a}, {a}, {c2}"
    );
    k_chain!(
        add_f32_512,
        "avx512f",
        zmm_reg,
        "vaddps {a}, {a}, {c1}",
        "vaddps {a}, {a}, {c2}"
    );
    k_chain!(
        mul_f64_s,
        "avx",
        xmm_reg,
        "vmulsd {a}, {a}, {c1}",
        "vmulsd {a}, {a}, {c2}"
    );
    k_chain!(
        mul_f64_128,
        "avx",
        xmm_reg,
        "vmulpd {a}, {a}, {c1}",
        "vmulpd {a}, {a}, {c2}"
    );
    k_chain!(
        mul_f64_256,
        "avx",
        ymm_reg,
        "vmulpd {a}, {a}, {c1}",
        "vmulpd {a}, {a}, {c2}"
    );
    k_chain!(
        mul_f64_512,
        "avx512f",
        zmm_reg,
        "vmulpd {a}, {a}, {c1}",
        "vmulpd {a}, {a}, {c2}"
    );
    k_chain!(
        mul_f32_s,
        "avx",
        xmm_reg,
        "vmulss {a}, {a}, {c1}",
        "vmulss {a}, {a}, {c2}"
    );
    k_chain!(
        mul_f32_128,
        "avx",
        xmm_reg,
        "vmulps {a}, {a}, {c1}",
        "vmulps {a}, {a}, {c2}"
    );
    k_chain!(
        mul_f32_256,
        "avx",
        ymm_reg,
        "vmulps {a}, {a}, {c1}",
        "vmulps {a}, {a}, {c2}"
    );
    k_chain!(
        mul_f32_512,
        "avx512f",
        zmm_reg,
        "vmulps {a}, {a}, {c1}",
        "vmulps {a}, {a}, {c2}"
    );
    // acc += c1 * c2, acc += c1 * c3: the chain runs through the addend.
    k_chain!(
        fma_f64_s,
        "avx,fma",
        xmm_reg,
        "vfmadd231sd {a}, {c1}, {c2}",
        "vfmadd231sd {a}, {c1}, {c3}"
    );
    k_chain!(
        fma_f64_128,
        "avx,fma",
        xmm_reg,
        "vfmadd231pd {a}, {c1}, {c2}",
        "vfmadd231pd {a}, {c1}, {c3}"
    );
    k_chain!(
        fma_f64_256,
        "avx,fma",
        ymm_reg,
        "vfmadd231pd {a}, {c1}, {c2}",
        "vfmadd231pd {a}, {c1}, {c3}"
    );
    k_chain!(
        fma_f64_512,
        "avx512f",
        zmm_reg,
        "vfmadd231pd {a}, {c1}, {c2}",
        "vfmadd231pd {a}, {c1}, {c3}"
    );
    k_chain!(
        fma_f32_s,
        "avx,fma",
        xmm_reg,
        "vfmadd231ss {a}, {c1}, {c2}",
        "vfmadd231ss {a}, {c1}, {c3}"
    );
    k_chain!(
        fma_f32_128,
        "avx,fma",
        xmm_reg,
        "vfmadd231ps {a}, {c1}, {c2}",
        "vfmadd231ps {a}, {c1}, {c3}"
    );
    k_chain!(
        fma_f32_256,
        "avx,fma",
        ymm_reg,
        "vfmadd231ps {a}, {c1}, {c2}",
        "vfmadd231ps {a}, {c1}, {c3}"
    );
    k_chain!(
        fma_f32_512,
        "avx512f",
        zmm_reg,
        "vfmadd231ps {a}, {c1}, {c2}",
        "vfmadd231ps {a}, {c1}, {c3}"
    );
    // acc = c1 / acc.
    k_chain!(
        div_f64_s,
        "avx",
        xmm_reg,
        "vdivsd {a}, {c1}, {a}",
        "vdivsd {a}, {c1}, {a}"
    );
    k_chain!(
        div_f64_128,
        "avx",
        xmm_reg,
        "vdivpd {a}, {c1}, {a}",
        "vdivpd {a}, {c1}, {a}"
    );
    k_chain!(
        div_f64_256,
        "avx",
        ymm_reg,
        "vdivpd {a}, {c1}, {a}",
        "vdivpd {a}, {c1}, {a}"
    );
    k_chain!(
        div_f64_512,
        "avx512f",
        zmm_reg,
        "vdivpd {a}, {c1}, {a}",
        "vdivpd {a}, {c1}, {a}"
    );
    k_chain!(
        div_f32_s,
        "avx",
        xmm_reg,
        "vdivss {a}, {c1}, {a}",
        "vdivss {a}, {c1}, {a}"
    );
    k_chain!(
        div_f32_128,
        "avx",
        xmm_reg,
        "vdivps {a}, {c1}, {a}",
        "vdivps {a}, {c1}, {a}"
    );
    k_chain!(
        div_f32_256,
        "avx",
        ymm_reg,
        "vdivps {a}, {c1}, {a}",
        "vdivps {a}, {c1}, {a}"
    );
    k_chain!(
        div_f32_512,
        "avx512f",
        zmm_reg,
        "vdivps {a}, {c1}, {a}",
        "vdivps {a}, {c1}, {a}"
    );
    // acc = sqrt(acc), acc = acc * c1.
    k_chain!(
        sqrt_f64_s,
        "avx",
        xmm_reg,
        "vsqrtsd {a}, {a}, {a}",
        "vmulsd {a}, {a}, {c1}"
    );
    k_chain!(
        sqrt_f64_128,
        "avx",
        xmm_reg,
        "vsqrtpd {a}, {a}",
        "vmulpd {a}, {a}, {c1}"
    );
    k_chain!(
        sqrt_f64_256,
        "avx",
        ymm_reg,
        "vsqrtpd {a}, {a}",
        "vmulpd {a}, {a}, {c1}"
    );
    k_chain!(
        sqrt_f64_512,
        "avx512f",
        zmm_reg,
        "vsqrtpd {a}, {a}",
        "vmulpd {a}, {a}, {c1}"
    );
    k_chain!(
        sqrt_f32_s,
        "avx",
        xmm_reg,
        "vsqrtss {a}, {a}, {a}",
        "vmulss {a}, {a}, {c1}"
    );
    k_chain!(
        sqrt_f32_128,
        "avx",
        xmm_reg,
        "vsqrtps {a}, {a}",
        "vmulps {a}, {a}, {c1}"
    );
    k_chain!(
        sqrt_f32_256,
        "avx",
        ymm_reg,
        "vsqrtps {a}, {a}",
        "vmulps {a}, {a}, {c1}"
    );
    k_chain!(
        sqrt_f32_512,
        "avx512f",
        zmm_reg,
        "vsqrtps {a}, {a}",
        "vmulps {a}, {a}, {c1}"
    );

    /// # Safety
    /// The CPU supports the kernel; `p` points to 5 writable 64-byte vectors; `iters > 0`.
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
                (O::Add, P::F32, W::Scalar) => add_f32_s(iters, p),
                (O::Add, P::F32, W::W128) => add_f32_128(iters, p),
                (O::Add, P::F32, W::W256) => add_f32_256(iters, p),
                (O::Add, P::F32, W::W512) => add_f32_512(iters, p),
                (O::Mul, P::F64, W::Scalar) => mul_f64_s(iters, p),
                (O::Mul, P::F64, W::W128) => mul_f64_128(iters, p),
                (O::Mul, P::F64, W::W256) => mul_f64_256(iters, p),
                (O::Mul, P::F64, W::W512) => mul_f64_512(iters, p),
                (O::Mul, P::F32, W::Scalar) => mul_f32_s(iters, p),
                (O::Mul, P::F32, W::W128) => mul_f32_128(iters, p),
                (O::Mul, P::F32, W::W256) => mul_f32_256(iters, p),
                (O::Mul, P::F32, W::W512) => mul_f32_512(iters, p),
                (O::Fma, P::F64, W::Scalar) => fma_f64_s(iters, p),
                (O::Fma, P::F64, W::W128) => fma_f64_128(iters, p),
                (O::Fma, P::F64, W::W256) => fma_f64_256(iters, p),
                (O::Fma, P::F64, W::W512) => fma_f64_512(iters, p),
                (O::Fma, P::F32, W::Scalar) => fma_f32_s(iters, p),
                (O::Fma, P::F32, W::W128) => fma_f32_128(iters, p),
                (O::Fma, P::F32, W::W256) => fma_f32_256(iters, p),
                (O::Fma, P::F32, W::W512) => fma_f32_512(iters, p),
                (O::Div, P::F64, W::Scalar) => div_f64_s(iters, p),
                (O::Div, P::F64, W::W128) => div_f64_128(iters, p),
                (O::Div, P::F64, W::W256) => div_f64_256(iters, p),
                (O::Div, P::F64, W::W512) => div_f64_512(iters, p),
                (O::Div, P::F32, W::Scalar) => div_f32_s(iters, p),
                (O::Div, P::F32, W::W128) => div_f32_128(iters, p),
                (O::Div, P::F32, W::W256) => div_f32_256(iters, p),
                (O::Div, P::F32, W::W512) => div_f32_512(iters, p),
                (O::Sqrt, P::F64, W::Scalar) => sqrt_f64_s(iters, p),
                (O::Sqrt, P::F64, W::W128) => sqrt_f64_128(iters, p),
                (O::Sqrt, P::F64, W::W256) => sqrt_f64_256(iters, p),
                (O::Sqrt, P::F64, W::W512) => sqrt_f64_512(iters, p),
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
    use super::{FlopOp, FlopSpec, INSTR_PER_ITER};
    use hpcscope_core::Precision;
    use std::hint::black_box;

    /// Portable scalar chain (the only width on non-x86-64 builds).
    ///
    /// # Safety
    /// `p` points to 5 writable 64-byte vectors.
    pub(super) unsafe fn run(spec: FlopSpec, iters: u64, p: *mut u8) {
        unsafe {
            let rd = |slot: usize| match spec.precision {
                Precision::F64 => (p.add(slot * 64) as *const f64).read(),
                Precision::F32 => f64::from((p.add(slot * 64) as *const f32).read()),
            };
            let (c1, c2, c3) = (black_box(rd(1)), black_box(rd(2)), black_box(rd(3)));
            let r = |v: f64| match spec.precision {
                Precision::F64 => v,
                Precision::F32 => f64::from(v as f32),
            };
            let mut a = rd(0);
            for _ in 0..iters {
                for _ in 0..INSTR_PER_ITER / 2 {
                    a = match spec.op {
                        FlopOp::Add => r(r(a + c1) + c2),
                        FlopOp::Mul => r(r(a * c1) * c2),
                        FlopOp::Fma => r(c1.mul_add(c3, r(c1.mul_add(c2, a)))),
                        FlopOp::Div => r(c1 / r(c1 / a)),
                        FlopOp::Sqrt => r(r(a.sqrt()) * c1),
                    };
                }
                a = black_box(a);
            }
            match spec.precision {
                Precision::F64 => (p.add(4 * 64) as *mut f64).write(a),
                Precision::F32 => (p.add(4 * 64) as *mut f32).write(a as f32),
            }
        }
    }
}
