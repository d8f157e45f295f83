//! An array of tags or replacement state whose first element starts a host cache line.
//!
//! A `Vec<u32>` of a few megabytes comes from the system allocator 16 bytes past a page
//! boundary, so a 64-byte set of 16 narrow tags straddles two host cache lines and a search
//! of it waits for both. [`Lines`] keeps its elements in 64-byte-aligned storage: a set whose
//! size divides 64 bytes then lies in one host line.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

/// One host cache line of storage.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct HostLine([u8; 64]);

/// Element types a [`Lines`] may hold: plain integers, for which every bit pattern is a
/// value and whose alignment divides 64.
///
/// # Safety
/// Implemented only for types with no padding, no invalid bit patterns and an alignment of
/// at most 64 bytes.
pub(crate) unsafe trait Word: Copy {}

// SAFETY: plain integers.
unsafe impl Word for u32 {}
// SAFETY: plain integers.
unsafe impl Word for u64 {}

/// `len` elements of `T` in 64-byte-aligned storage; derefs to `[T]`.
#[derive(Clone)]
pub(crate) struct Lines<T: Word> {
    buf: Vec<HostLine>,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Word> Lines<T> {
    /// `len` copies of `value`.
    pub(crate) fn new(len: usize, value: T) -> Self {
        let bytes = len
            .checked_mul(size_of::<T>())
            .expect("a level's arrays fit the address space (checked by validate)");
        let mut lines = Self {
            buf: vec![HostLine([0; 64]); bytes.div_ceil(64)],
            len,
            _t: PhantomData,
        };
        lines.fill(value);
        lines
    }
}

impl<T: Word> Default for Lines<T> {
    fn default() -> Self {
        Self {
            buf: Vec::new(),
            len: 0,
            _t: PhantomData,
        }
    }
}

impl<T: Word> Deref for Lines<T> {
    type Target = [T];

    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `buf` holds at least `len * size_of::<T>()` initialized bytes, aligned to
        // 64 (a multiple of `T`'s alignment), and any bit pattern is a `T` (`Word`).
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr().cast::<T>(), self.len) }
    }
}

impl<T: Word> DerefMut for Lines<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and the borrow of `self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.buf.as_mut_ptr().cast::<T>(), self.len) }
    }
}

impl<T: Word + fmt::Debug> fmt::Debug for Lines<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_a_host_line_and_holds_its_values() {
        for len in [0usize, 1, 15, 16, 17, 100_000] {
            let mut l = Lines::<u32>::new(len, 7);
            assert_eq!(l.len(), len);
            assert!(l.iter().all(|&x| x == 7));
            assert_eq!(l.as_ptr() as usize % 64, 0);
            if len > 0 {
                l[len - 1] = 9;
                let c = l.clone();
                assert_eq!(c[len - 1], 9);
            }
        }
        let w = Lines::<u64>::new(9, u64::MAX);
        assert_eq!(w.as_ptr() as usize % 64, 0);
        assert_eq!(&w[..], &[u64::MAX; 9]);
        assert!(Lines::<u64>::default().is_empty());
    }
}
