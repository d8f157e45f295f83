//! A blocked DGEMM, the sustained peak of dense linear algebra (the seeds measure it with
//! HPL): `C += A B` on square `f64` matrices, row-major, packed into panels and computed by
//! a 4 x 8 register-blocked micro-kernel. On x86-64 with AVX2 and FMA the micro-kernel is
//! compiled for them (chosen at run time); elsewhere it is the compiler's vectorization of
//! the same loops. It is a reference kernel, not a tuned BLAS: `bench/dgemm.sh` compares it
//! with OpenBLAS where OpenBLAS is installed.

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// Rows of the micro-kernel's block of C.
const MR: usize = 4;
/// Columns of the micro-kernel's block of C.
const NR: usize = 8;
/// Depth of a packed panel (one panel of B stays in L1/L2).
const KC: usize = 256;
/// Rows of a packed block of A (stays in L2).
const MC: usize = 64;

/// The result of the DGEMM benchmark.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DgemmResult {
    /// Matrix order n (n x n matrices).
    pub n: usize,
    /// GFLOP/s (2 n^3 FLOPs per product).
    pub gflops: Summary,
    /// Micro-kernel: `avx2+fma` or `portable`.
    pub variant: String,
    /// Largest relative error of C against a naive product on a sample of entries.
    pub max_rel_error: f64,
    /// The node value: one independent product per benchmarked CPU at once (HPCC's
    /// StarDGEMM form), when more than one CPU is benchmarked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeDgemm>,
}

/// The DGEMM on every benchmarked CPU at once.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeDgemm {
    /// Threads, one pinned to each CPU.
    pub threads: usize,
    /// The CPUs (a list like `0-3,8`).
    pub cpus: String,
    /// Aggregate GFLOP/s of all threads (every thread's products over the slowest
    /// thread's time).
    pub gflops: Summary,
}

/// Matrices of one product, filled with values whose products are exact enough to check.
pub struct Problem {
    n: usize,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    pa: Vec<f64>,
    pb: Vec<f64>,
}

impl Problem {
    /// An n x n problem.
    pub fn new(n: usize) -> Problem {
        let n = n.max(1);
        let fill = |seed: usize| -> Vec<f64> {
            (0..n * n)
                .map(|i| (((i * 7 + seed * 13) % 17) as f64 - 8.0) / 8.0)
                .collect()
        };
        Problem {
            n,
            a: fill(1),
            b: fill(2),
            c: vec![0.0; n * n],
            pa: vec![0.0; MC.div_ceil(MR) * MR * KC],
            pb: vec![0.0; n.div_ceil(NR) * NR * KC],
        }
    }

    /// FLOPs of one product.
    pub fn flops(&self) -> f64 {
        2.0 * (self.n as f64).powi(3)
    }

    /// One product `C += A B`.
    pub fn run(&mut self) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            unsafe { gemm_avx2(self) };
            return;
        }
        gemm_portable(self);
    }

    /// Which micro-kernel [`Problem::run`] uses on this CPU.
    pub fn variant() -> &'static str {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return "avx2+fma";
        }
        "portable"
    }

    /// Largest relative error of C (after `runs` products from zero) against the naive
    /// product, over a sample of entries.
    pub fn check(&self, runs: usize) -> f64 {
        let n = self.n;
        let mut worst: f64 = 0.0;
        let step = (n / 7).max(1);
        for i in (0..n).step_by(step) {
            for j in (0..n).step_by(step) {
                let mut want = 0.0;
                for k in 0..n {
                    want += self.a[i * n + k] * self.b[k * n + j];
                }
                want *= runs as f64;
                let got = self.c[i * n + j];
                let err = (got - want).abs() / want.abs().max(1.0);
                worst = worst.max(err);
            }
        }
        worst
    }

    /// Sets C to zero.
    pub fn clear(&mut self) {
        self.c.iter_mut().for_each(|x| *x = 0.0);
    }
}

#[inline(always)]
fn gemm_body(p: &mut Problem, micro: impl Fn(usize, &[f64], &[f64], &mut [[f64; NR]; MR])) {
    let n = p.n;
    for k0 in (0..n).step_by(KC) {
        let kc = KC.min(n - k0);
        // Pack B[k0..k0+kc, :] into panels of NR columns, zero-padded.
        for (jp, j0) in (0..n).step_by(NR).enumerate() {
            let panel = &mut p.pb[jp * NR * KC..(jp + 1) * NR * KC];
            for k in 0..kc {
                for jj in 0..NR {
                    let j = j0 + jj;
                    panel[k * NR + jj] = if j < n { p.b[(k0 + k) * n + j] } else { 0.0 };
                }
            }
        }
        for i0 in (0..n).step_by(MC) {
            let mc = MC.min(n - i0);
            // Pack A[i0..i0+mc, k0..k0+kc] into panels of MR rows, zero-padded.
            for (ip, ii0) in (0..mc).step_by(MR).enumerate() {
                let panel = &mut p.pa[ip * MR * KC..(ip + 1) * MR * KC];
                for k in 0..kc {
                    for ii in 0..MR {
                        let i = i0 + ii0 + ii;
                        panel[k * MR + ii] = if ii0 + ii < mc {
                            p.a[i * n + k0 + k]
                        } else {
                            0.0
                        };
                    }
                }
            }
            for (jp, j0) in (0..n).step_by(NR).enumerate() {
                let pb = &p.pb[jp * NR * KC..jp * NR * KC + kc * NR];
                for (ip, ii0) in (0..mc).step_by(MR).enumerate() {
                    let pa = &p.pa[ip * MR * KC..ip * MR * KC + kc * MR];
                    let mut acc = [[0.0f64; NR]; MR];
                    micro(kc, pa, pb, &mut acc);
                    for (ii, row) in acc.iter().enumerate() {
                        let i = i0 + ii0 + ii;
                        if ii0 + ii >= mc {
                            break;
                        }
                        for (jj, v) in row.iter().enumerate() {
                            let j = j0 + jj;
                            if j < n {
                                p.c[i * n + j] += v;
                            }
                        }
                    }
                }
            }
        }
    }
}

#[inline(always)]
fn micro_kernel(kc: usize, pa: &[f64], pb: &[f64], out: &mut [[f64; NR]; MR]) {
    // Accumulate in a local block the compiler keeps in registers.
    let mut acc = *out;
    for k in 0..kc {
        let a: &[f64; MR] = pa[k * MR..k * MR + MR].try_into().expect("MR values");
        let b: &[f64; NR] = pb[k * NR..k * NR + NR].try_into().expect("NR values");
        for ii in 0..MR {
            for jj in 0..NR {
                acc[ii][jj] = a[ii].mul_add(b[jj], acc[ii][jj]);
            }
        }
    }
    *out = acc;
}

#[inline(always)]
fn micro_kernel_no_fma(kc: usize, pa: &[f64], pb: &[f64], out: &mut [[f64; NR]; MR]) {
    let mut acc = *out;
    for k in 0..kc {
        let a: &[f64; MR] = pa[k * MR..k * MR + MR].try_into().expect("MR values");
        let b: &[f64; NR] = pb[k * NR..k * NR + NR].try_into().expect("NR values");
        for ii in 0..MR {
            for jj in 0..NR {
                acc[ii][jj] += a[ii] * b[jj];
            }
        }
    }
    *out = acc;
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn gemm_avx2(p: &mut Problem) {
    gemm_body(p, |kc, pa, pb, out| {
        // SAFETY: this closure runs inside a function compiled for AVX2 and FMA, which is
        // only called when the CPU has them.
        unsafe { micro_avx2(kc, pa, pb, out) }
    });
}

/// The micro-kernel with 256-bit FMAs: each row of the 4 x 8 block is two vectors.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn micro_avx2(kc: usize, pa: &[f64], pb: &[f64], out: &mut [[f64; NR]; MR]) {
    use std::arch::x86_64::*;
    assert!(pa.len() >= kc * MR && pb.len() >= kc * NR);
    // SAFETY: every load reads within pa[..kc * MR] and pb[..kc * NR] (asserted above), and
    // the stores write the 4 x 8 block `out`; unaligned loads and stores throughout.
    unsafe {
        let mut c = [[_mm256_setzero_pd(); 2]; MR];
        for (i, row) in c.iter_mut().enumerate() {
            row[0] = _mm256_loadu_pd(out[i].as_ptr());
            row[1] = _mm256_loadu_pd(out[i].as_ptr().add(4));
        }
        let (a, b) = (pa.as_ptr(), pb.as_ptr());
        for k in 0..kc {
            let b0 = _mm256_loadu_pd(b.add(k * NR));
            let b1 = _mm256_loadu_pd(b.add(k * NR + 4));
            for (i, row) in c.iter_mut().enumerate() {
                let ai = _mm256_broadcast_sd(&*a.add(k * MR + i));
                row[0] = _mm256_fmadd_pd(ai, b0, row[0]);
                row[1] = _mm256_fmadd_pd(ai, b1, row[1]);
            }
        }
        for (i, row) in c.iter().enumerate() {
            _mm256_storeu_pd(out[i].as_mut_ptr(), row[0]);
            _mm256_storeu_pd(out[i].as_mut_ptr().add(4), row[1]);
        }
    }
}

fn gemm_portable(p: &mut Problem) {
    // Without a known FMA unit, `mul_add` may be a library call: multiply and add instead.
    if cfg!(target_arch = "aarch64") {
        gemm_body(p, micro_kernel);
    } else {
        gemm_body(p, micro_kernel_no_fma);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_product_matches_the_naive_one() {
        // Orders that are not multiples of the blocks exercise the padding.
        for n in [1, 5, 67, 300] {
            let mut p = Problem::new(n);
            p.run();
            p.run();
            let e = p.check(2);
            assert!(e < 1e-12, "n = {n}: relative error {e}");
        }
    }

    #[test]
    fn a_wrong_product_is_caught() {
        let mut p = Problem::new(40);
        p.run();
        p.c[0] += 1.0;
        assert!(p.check(1) > 1e-6);
    }
}
