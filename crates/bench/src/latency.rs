//! Load-to-use latency by pointer chasing over a random cyclic permutation.
//!
//! The working set is cut into cache-line-sized slots; slot `k` holds the address of the
//! slot that follows it in a single random cycle (Sattolo's algorithm), so every load
//! depends on the previous one and hardware prefetchers cannot guess the next line.

/// Bytes per slot of the chase (one cache line).
pub const SLOT_BYTES: usize = 64;

/// A small deterministic generator (SplitMix64) for the permutation.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// Seeds the generator.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform integer in `0..n` (`n > 0`), by multiply-shift.
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// Sattolo's algorithm: `next[i]` is the successor of `i` in one cycle through all `n`
/// elements (a uniformly random cyclic permutation).
pub fn sattolo(n: usize, seed: u64) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..n).rev() {
        let j = rng.below(i); // j < i: this is what makes a single cycle
        p.swap(i, j);
    }
    // `p` is now a cyclic permutation written as a sequence; convert to successors.
    let mut next = vec![0; n];
    for k in 0..n {
        next[p[k]] = p[(k + 1) % n];
    }
    next
}

/// A pointer-chasing buffer over `bytes` bytes (2 MiB-aligned and advised for huge pages
/// when large, so the measurement sees the memory rather than page walks where the OS
/// allows it).
pub struct Chase {
    ptr: *mut usize,
    layout: std::alloc::Layout,
    slots: usize,
}

impl Chase {
    /// Builds a chase over `bytes` (at least 2 slots).
    pub fn new(bytes: usize, seed: u64) -> Chase {
        let words = SLOT_BYTES / std::mem::size_of::<usize>();
        let slots = (bytes / SLOT_BYTES).max(2);
        let size = slots * SLOT_BYTES;
        let align = if size >= 8 << 20 { 2 << 20 } else { 4096 };
        let layout = std::alloc::Layout::from_size_align(size, align).expect("valid layout");
        // SAFETY: non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) } as *mut usize;
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        crate::kernels::advise_huge_pages(ptr as *mut u8, size);
        let next = sattolo(slots, seed);
        let base = ptr as usize;
        for (k, n) in next.iter().enumerate() {
            // SAFETY: k < slots; slot k starts at word k * words.
            unsafe { ptr.add(k * words).write(base + n * SLOT_BYTES) };
        }
        Chase { ptr, layout, slots }
    }

    /// Slots in the cycle.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Follows `loads` pointers from the first slot; returns the final address (so the
    /// chain cannot be optimized away).
    pub fn run(&self, loads: u64) -> usize {
        let mut p = self.ptr as usize;
        for _ in 0..loads {
            // SAFETY: every slot holds the address of a slot inside the buffer.
            p = unsafe { *(p as *const usize) };
        }
        std::hint::black_box(p)
    }

    /// Address of slot 0, to compare with [`Chase::run`]'s result.
    pub fn start(&self) -> usize {
        self.ptr as usize
    }
}

impl Drop for Chase {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`.
        unsafe { std::alloc::dealloc(self.ptr as *mut u8, self.layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sattolo_is_one_cycle() {
        for n in [2, 3, 10, 1000] {
            let next = sattolo(n, 42);
            let mut seen = vec![false; n];
            let mut i = 0;
            for _ in 0..n {
                assert!(!seen[i]);
                seen[i] = true;
                i = next[i];
            }
            assert_eq!(i, 0, "back to the start after n steps");
            assert!(seen.iter().all(|s| *s));
        }
    }

    #[test]
    fn chase_returns_home_after_a_full_cycle() {
        let c = Chase::new(64 * 100, 7);
        assert_eq!(c.slots(), 100);
        assert_eq!(c.run(100), c.start());
        assert_ne!(c.run(50), c.start());
    }
}
