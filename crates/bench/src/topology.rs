//! What the machine is (re-exported from `hpcscope_host::topology`: sockets, cores, SMT,
//! NUMA nodes, caches, ISA extensions, CPU lists) and its measured frequency: a chain of
//! dependent integer adds (1 cycle each).

pub use hpcscope_host::topology::*;

/// Integer adds executed by [`dependent_adds`] per iteration.
pub const ADDS_PER_ITER: u64 = 100;

/// Runs `iters * ADDS_PER_ITER` dependent register-register integer adds (1 cycle of
/// latency each on every current core) and returns the final value
/// (`iters * ADDS_PER_ITER`).
///
/// The addend is a register, not an immediate: recent cores (Intel Golden Cove and later)
/// fold chains of `add reg, imm` at rename, which would make the chain look 2-4x faster.
pub fn dependent_adds(iters: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if iters == 0 {
            return 0;
        }
        let mut x: u64 = 0;
        macro_rules! add10 {
            () => {
                "add {x}, {one}\nadd {x}, {one}\nadd {x}, {one}\nadd {x}, {one}\nadd {x}, {one}\nadd {x}, {one}\nadd {x}, {one}\nadd {x}, {one}\nadd {x}, {one}\nadd {x}, {one}"
            };
        }
        // SAFETY: register-only arithmetic.
        unsafe {
            std::arch::asm!(
                ".p2align 5",
                "2:",
                add10!(), add10!(), add10!(), add10!(), add10!(),
                add10!(), add10!(), add10!(), add10!(), add10!(),
                "dec {n}",
                "jnz 2b",
                x = inout(reg) x,
                one = in(reg) 1u64,
                n = inout(reg) iters => _,
                options(nomem, nostack),
            );
        }
        x
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut x: u64 = 0;
        for _ in 0..iters {
            for _ in 0..ADDS_PER_ITER {
                x = std::hint::black_box(x) + 1;
            }
        }
        x
    }
}

/// Measures the core frequency in GHz: the best of `samples` timings of a dependent-add
/// chain lasting about `sample_s` seconds each (1 add = 1 cycle). Many short samples make
/// the best one likely to have run undisturbed on a busy machine.
pub fn measure_frequency_ghz(sample_s: f64, samples: usize) -> f64 {
    let mut iters: u64 = 1000;
    let mut dt;
    loop {
        let t = std::time::Instant::now();
        std::hint::black_box(dependent_adds(iters));
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
        std::hint::black_box(dependent_adds(iters));
        best = best.max((iters * ADDS_PER_ITER) as f64 / t.elapsed().as_secs_f64() / 1e9);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependent_adds_count() {
        assert_eq!(dependent_adds(3), 3 * ADDS_PER_ITER);
        assert_eq!(dependent_adds(0), 0);
    }
}
