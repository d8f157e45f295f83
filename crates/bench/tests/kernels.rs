//! Every kernel runs once on small arrays: numeric result and byte/FLOP counts.
//! No timing is checked.

use hpcscope_bench::flops::{self, FlopOp, FlopSpec, FlopState};
use hpcscope_bench::kernels::{ByteCount, ELEMENT_QUANTUM, Kernel, KernelSpec, Width, Workspace};
use hpcscope_bench::topology::Isa;
use hpcscope_core::Precision;

const N: usize = 4 * ELEMENT_QUANTUM;

fn b(i: usize) -> f64 {
    (i % 13) as f64 + 0.5
}
fn c(i: usize) -> f64 {
    (i % 5) as f64 - 2.0
}
fn d(i: usize) -> f64 {
    (i % 3) as f64 * 0.25
}

#[test]
fn every_bandwidth_kernel_computes_its_formula() {
    let isa = Isa::detect();
    let mut ws = Workspace::new((N * 8 * 4 + 65536) as u64).unwrap();
    let s = 1.5;
    let mut ran = 0;
    for kernel in Kernel::ALL {
        for width in Width::ALL {
            for nt in [false, true] {
                let spec = KernelSpec { kernel, width, nt };
                if spec.unsupported_reason(&isa).is_some() {
                    // A kernel for a missing ISA is refused, never executed.
                    assert!(ws.run(spec, N, 1, s, &isa).is_err(), "{}", spec.label());
                    continue;
                }
                ws.fill(0, N, |_| -7.0);
                ws.fill(1, N, b);
                if kernel.arrays() > 2 {
                    ws.fill(2, N, c);
                }
                if kernel.arrays() > 3 {
                    ws.fill(3, N, d);
                }
                if kernel == Kernel::Load {
                    ws.fill(0, N, b);
                }
                if kernel == Kernel::Daxpy {
                    ws.fill(0, N, c);
                }
                let sum = ws.run(spec, N, 2, s, &isa).unwrap();
                let a = ws.array(0, N);
                for (i, got) in a.iter().enumerate() {
                    let want = match kernel {
                        Kernel::Load => b(i),
                        Kernel::Store => s,
                        Kernel::Copy => b(i),
                        Kernel::Triad => b(i) + s * c(i),
                        Kernel::Triad4 => b(i) * c(i) + d(i),
                        // Two passes: y = c + 2 s x.
                        Kernel::Daxpy => (c(i) + b(i) * s) + b(i) * s,
                    };
                    assert_eq!(*got, want, "{} element {i}", spec.label());
                }
                if kernel == Kernel::Load {
                    let once: f64 = (0..N).map(b).sum();
                    assert_eq!(sum, 2.0 * once, "{} sums two passes", spec.label());
                }
                ran += 1;
            }
        }
    }
    if cfg!(target_arch = "x86_64") && isa.avx {
        assert!(ran >= 6 * 3 + 4 * 2, "ran {ran} kernels");
    } else {
        assert!(ran >= 6);
    }
}

#[test]
fn byte_and_flop_counts() {
    let k = |k: Kernel| {
        (
            k.bytes_per_element(ByteCount::Kernel, false),
            k.bytes_per_element(ByteCount::WithWriteAllocate, false),
            k.bytes_per_element(ByteCount::WithWriteAllocate, true),
            k.flops_per_element(),
        )
    };
    // STREAM convention: triad 24 B/element, 32 with write-allocate, 24 with NT stores.
    assert_eq!(k(Kernel::Triad), (24, 32, 24, 2));
    assert_eq!(k(Kernel::Triad4), (32, 40, 32, 2));
    assert_eq!(k(Kernel::Copy), (16, 24, 16, 0));
    assert_eq!(k(Kernel::Store), (8, 16, 8, 0));
    assert_eq!(k(Kernel::Load), (8, 8, 8, 1));
    // daxpy reads y before writing it: no write-allocate.
    assert_eq!(k(Kernel::Daxpy), (24, 24, 24, 2));
    for kernel in Kernel::ALL {
        assert_eq!(Kernel::from_name(kernel.name()), Some(kernel));
        assert!(kernel.arrays() as u32 >= kernel.arrays_read().max(kernel.arrays_written()));
    }
}

#[test]
fn peak_kernels_compute_and_count() {
    let isa = Isa::detect();
    let iters = 3;
    let mut ran = 0;
    for precision in [Precision::F64, Precision::F32] {
        for op in FlopOp::ALL {
            for width in Width::ALL {
                let spec = FlopSpec {
                    op,
                    precision,
                    width,
                };
                let state = match op {
                    FlopOp::Add => FlopState {
                        init: 1.0,
                        c1: 0.5,
                        c2: 0.0,
                    },
                    FlopOp::Mul => FlopState {
                        init: 1.0,
                        c1: 2.0,
                        c2: 0.0,
                    },
                    FlopOp::Fma => FlopState {
                        init: 1.0,
                        c1: 2.0,
                        c2: 3.0,
                    },
                    FlopOp::Div => FlopState {
                        init: 4.0,
                        c1: 2.0,
                        c2: 0.0,
                    },
                    FlopOp::Sqrt => FlopState {
                        init: 1.0,
                        c1: 6.25,
                        c2: 0.0,
                    },
                };
                let r = flops::run(spec, iters, state, &isa);
                if spec.unsupported_reason(&isa).is_some() {
                    assert!(r.is_err(), "{}", spec.label());
                    continue;
                }
                let out = r.unwrap();
                // Each accumulator sees 2 instructions per iteration.
                let steps = 2 * iters as i32;
                let want = match op {
                    FlopOp::Add => 1.0 + 0.5 * f64::from(steps),
                    FlopOp::Mul => 2f64.powi(steps),
                    FlopOp::Fma => 1.0 + 6.0 * f64::from(steps),
                    // acc = 2 / acc: 4, 0.5, 4, ... (an even number of steps).
                    FlopOp::Div => 4.0,
                    // acc = sqrt(6.25) in every step.
                    FlopOp::Sqrt => 2.5,
                };
                assert!(
                    out.iter().all(|v| *v == want),
                    "{}: {out:?} != {want}",
                    spec.label()
                );
                assert!(
                    state.check(op, precision, iters, &out).is_ok(),
                    "{}",
                    spec.label()
                );
                // 24 instructions per iteration x lanes x (2 for FMA).
                let lanes = u64::from(width.lanes(precision.bits()));
                assert_eq!(
                    spec.flops(iters),
                    iters * 24 * lanes * u64::from(op.flops_per_lane())
                );
                ran += 1;
            }
        }
    }
    assert!(ran >= 1);
    assert_eq!(Width::W512.lanes(32), 16);
    assert_eq!(Width::Scalar.lanes(64), 1);
}

#[test]
fn divider_kernels_stay_finite_and_exact_over_long_runs() {
    // The states `bench` times with, over more iterations than one timed call: every
    // result finite, and what the kernel must compute.
    let isa = Isa::detect();
    let mut ran = 0;
    for precision in [Precision::F64, Precision::F32] {
        for op in [FlopOp::Div, FlopOp::Sqrt] {
            assert!(!op.is_peak());
            assert_eq!(op.flops_per_lane(), 1);
            assert_eq!(FlopOp::from_name(op.name()), Some(op));
            let state = FlopState::steady(op);
            for width in Width::ALL {
                let spec = FlopSpec {
                    op,
                    precision,
                    width,
                };
                if spec.unsupported_reason(&isa).is_some() {
                    continue;
                }
                for iters in [1, 2, 4096, 100_000] {
                    let out = flops::run(spec, iters, state, &isa).unwrap();
                    state
                        .check(op, precision, iters, &out)
                        .unwrap_or_else(|e| panic!("{} x{iters}: {e}", spec.label()));
                    let c1 = match precision {
                        Precision::F64 => state.c1,
                        Precision::F32 => f64::from(state.c1 as f32),
                    };
                    for v in out {
                        assert!(v.is_finite() && v > 0.0, "{}: {v}", spec.label());
                        if op == FlopOp::Div {
                            assert_eq!(v, state.init, "{} x{iters}", spec.label());
                        } else {
                            assert!((v - c1.sqrt()).abs() < 1e-6, "{}: {v}", spec.label());
                        }
                    }
                }
                ran += 1;
            }
        }
    }
    assert!(ran >= 2);
    // A wrong result is caught: division the wrong way round (acc / c1) drifts away.
    let state = FlopState::steady(FlopOp::Div);
    let drifted = [state.init / state.c1.powi(8192); 12];
    assert!(
        state
            .check(FlopOp::Div, Precision::F64, 4096, &drifted)
            .is_err()
    );
    assert!(
        state
            .check(FlopOp::Div, Precision::F64, 1, &[f64::NAN; 12])
            .is_err()
    );
    let sq = FlopState::steady(FlopOp::Sqrt);
    assert!(
        sq.check(FlopOp::Sqrt, Precision::F32, 1, &[sq.c1; 12])
            .is_err()
    );
}

#[test]
fn frequency_probe_counts() {
    assert_eq!(
        hpcscope_bench::topology::dependent_adds(2),
        2 * hpcscope_bench::topology::ADDS_PER_ITER
    );
    let isa = Isa::detect();
    // No probe for widths without a frequency license.
    assert!(flops::vector_probe(Width::W128, 1, &isa).is_none());
    assert!(flops::vector_probe(Width::W512, 1, &Isa::none()).is_none());
}

#[test]
fn latency_chains_compute_their_values_exactly() {
    // One dependent chain per kernel: add, mul and FMA come back to their start exactly,
    // divide within 4 ulps (here exactly), square root settles near 1.21; never denormal.
    use hpcscope_bench::oplat::{self, ChainState};
    let isa = Isa::detect();
    let mut ran = 0;
    for precision in [Precision::F64, Precision::F32] {
        for op in FlopOp::ALL {
            let state = ChainState::steady(op);
            for width in Width::ALL {
                let spec = FlopSpec {
                    op,
                    precision,
                    width,
                };
                let r = oplat::run(spec, 1, state, &isa);
                if spec.unsupported_reason(&isa).is_some() {
                    assert!(r.is_err(), "{}", spec.label());
                    continue;
                }
                for iters in [1, 2, 1024, 50_000] {
                    let v = oplat::run(spec, iters, state, &isa).unwrap();
                    state
                        .check(op, precision, iters, v)
                        .unwrap_or_else(|e| panic!("{} x{iters}: {e}", spec.label()));
                    assert!(v.is_normal(), "{}: {v}", spec.label());
                    let init = match precision {
                        Precision::F64 => state.init,
                        Precision::F32 => f64::from(state.init as f32),
                    };
                    match op {
                        FlopOp::Sqrt => {
                            let want = match precision {
                                Precision::F64 => 1.21,
                                Precision::F32 => f64::from(1.21f32),
                            };
                            assert!((v - want).abs() < 1e-6, "{}: {v}", spec.label());
                        }
                        _ => assert_eq!(v, init, "{} x{iters}", spec.label()),
                    }
                }
                // Instructions of the operation itself: 32 per iteration, 16 roots.
                let per_iter = if op == FlopOp::Sqrt { 16 } else { 32 };
                assert_eq!(oplat::ops(spec, 10), 10 * per_iter);
                assert!(oplat::chain_form(spec).contains(&oplat::mnemonic(spec)));
                ran += 1;
            }
        }
    }
    assert!(ran >= 5);
    // A wrong value is caught.
    let add = ChainState::steady(FlopOp::Add);
    assert!(add.check(FlopOp::Add, Precision::F64, 1, 2.0).is_err());
    assert!(add.check(FlopOp::Add, Precision::F64, 1, 1e-310).is_err());
    let sq = ChainState::steady(FlopOp::Sqrt);
    assert!(
        sq.check(FlopOp::Sqrt, Precision::F64, 1, 1.0 - 1e-9)
            .is_err()
    );
    let dv = ChainState::steady(FlopOp::Div);
    assert!(
        dv.check(FlopOp::Div, Precision::F32, 1, 1.1 * 1.001)
            .is_err()
    );
    assert_eq!(
        oplat::mnemonic(FlopSpec {
            op: FlopOp::Fma,
            precision: Precision::F32,
            width: Width::W256
        }),
        "vfmadd231ps"
    );
}
