//! What hpcscope's QEMU plugin writes and hpcscope reads, defined once for both: the
//! memory-access record stream (`mem=on`), the notices of its shared ring (`memring=`), and
//! the JSON report ([`report`]). The plugin (a cdylib QEMU loads) links this crate, so it
//! depends on serde alone.
//!
//! Stream: the 8 magic bytes [`MAGIC`] (`HPCSMT03`), then records, each a little-endian
//! `u64` ([`Record`]): bits 0..=55 virtual address, bits 56..=59 log2 of the access size in
//! bytes, bits 60..=62 repeats, bit 63 set for a store. Every batch starts with a thread
//! marker ([`thread_marker`]): top byte [`MARKER_TOP`] (a load of 2^15 bytes repeated 7
//! times, which no access can be: repeats stay inside one line) and the guest thread's
//! number (start order, 0 the main thread) in the low 32 bits; the records up to the next
//! marker are that thread's. A thread also writes its marker alone when it starts, and a
//! marker with top byte [`END_TOP`] when it exits. A batch of a stream thinned by set
//! sampling carries two skip records after its marker ([`skip_record`]). Records of one
//! thread keep their order; batches of different threads interleave whole.
//!
//! Ring: the notices start with [`RING_MAGIC`] (`HPCSMR03`) instead; each batch is copied
//! into a slot of [`RING_SLOT_RECORDS`] records of a shared mapping, and the notices carry
//! one [`notice`] per slot used (and thread markers written alone, as they are). The
//! records, concatenated in notice order, are the plain stream's byte for byte.
//!
//! [`read`] reads both framings and cuts the records into runs of one thread.
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

pub mod gate;
pub mod read;
pub mod report;

pub use read::{Demux, Event, ReadError, read_words};

/// First bytes of the stream.
pub const MAGIC: &[u8; 8] = b"HPCSMT03";
/// First bytes of the notices of a ring (`memring=`), instead of [`MAGIC`].
pub const RING_MAGIC: &[u8; 8] = b"HPCSMR03";

/// Address bits kept in a record.
pub const ADDR_MASK: u64 = (1 << 56) - 1;
/// One repeat in a record.
pub const REPEAT_ONE: u64 = 1 << 60;
/// The repeats field of a record.
pub const REPEATS: u64 = 7 << 60;

/// Top byte of a thread marker.
pub const MARKER_TOP: u64 = 0x7f;
/// Top byte of the marker of a thread that exited (a load of 2^14 bytes repeated 7 times:
/// no access either).
pub const END_TOP: u64 = 0x7e;
/// Top byte of a skip record (a load of 2^13 bytes repeated 7 times: no access; the
/// plugin's merged accesses stay below 2^13 bytes): bits 0..=54 a count of the accesses
/// left out by `sample=` (bit 55 clear) or of their bytes (bit 55 set), for the thread of
/// the batch, since its previous batch.
pub const SKIP_TOP: u64 = 0x7d;
/// Bit of a skip record that says it counts bytes.
pub const SKIP_BYTES: u64 = 1 << 55;
/// Top byte of a notice of the ring: bits 32..=55 the slot, bits 0..=31 its records (a
/// load of 2^12 bytes repeated 7 times, no access; notices never stand in the plain stream
/// anyway).
pub const NOTICE_TOP: u64 = 0x7c;

/// Records in the plugin's largest batch (its buffer of a vCPU, while the guest has one
/// thread).
pub const BATCH: usize = 1 << 16;
/// Records (8 bytes each) a slot of the ring holds: a full batch and its head. Slot `i`
/// starts at byte `i * RING_SLOT_RECORDS * 8` of the ring.
pub const RING_SLOT_RECORDS: usize = BATCH + 8;

/// Packs one access into a record.
#[inline(always)]
pub fn record(vaddr: u64, size_shift: u32, store: bool) -> u64 {
    (vaddr & ADDR_MASK) | (u64::from(size_shift & 0xf) << 56) | (u64::from(store) << 63)
}

/// The record that starts a batch of guest thread `thread`'s records.
#[inline]
pub fn thread_marker(thread: u32) -> u64 {
    MARKER_TOP << 56 | u64::from(thread)
}

/// The marker of guest thread `thread` when it exits.
#[inline]
pub fn end_marker(thread: u32) -> u64 {
    END_TOP << 56 | u64::from(thread)
}

/// The thread a record names, when it is a thread marker.
#[inline]
pub fn marker_thread(rec: u64) -> Option<u32> {
    (rec >> 56 == MARKER_TOP).then_some(rec as u32)
}

/// The skip record of `n` accesses left out (`bytes`: of `n` bytes), `n` capped at what
/// the field holds.
#[inline]
pub fn skip_record(n: u64, bytes: bool) -> u64 {
    let flag = if bytes { SKIP_BYTES } else { 0 };
    SKIP_TOP << 56 | flag | n.min(SKIP_BYTES - 1)
}

/// The notice of `records` records in slot `slot` of the ring.
#[inline]
pub fn notice(slot: u32, records: usize) -> u64 {
    NOTICE_TOP << 56 | u64::from(slot) << 32 | records as u64
}

/// The slot and the number of records a word of the notices names, when it is a notice.
#[inline]
pub fn notice_parts(word: u64) -> Option<(u32, usize)> {
    (word >> 56 == NOTICE_TOP).then_some((
        ((word >> 32) & 0xff_ffff) as u32,
        (word & 0xffff_ffff) as usize,
    ))
}

/// Whether access `rec` can be counted as a repeat of record `last` with coalescing blocks
/// of `mask + 1` bytes (the plugin's `coalesce=`): same size, direction and block, fewer
/// than 7 repeats so far, and neither crossing the block's end.
#[inline(always)]
pub fn coalesces(last: u64, rec: u64, mask: u64) -> bool {
    let crosses = |r: u64| (r & mask) + (1 << ((r >> 56) & 0xf)) > mask + 1;
    (last ^ rec) & !REPEATS & !mask == 0
        && last & REPEATS != REPEATS
        && !crosses(rec)
        && !crosses(last)
}

/// Coalesces the records of `v` (accesses without repeats, as an engine's inline code
/// writes them) in place, by the rule [`coalesces`] applied one record at a time, with
/// coalescing blocks of `mask + 1` bytes (0: none); returns how many remain.
pub fn coalesce_in_place(v: &mut [u64], mask: u64) -> usize {
    let Some(&first) = v.first() else {
        return 0;
    };
    if mask == 0 {
        return v.len();
    }
    let mut k = 0;
    let mut last = first;
    for i in 1..v.len() {
        let rec = v[i];
        if coalesces(last, rec, mask) {
            last += REPEAT_ONE;
        } else {
            // `k` is below `i`: that slot was read already.
            v[k] = last;
            k += 1;
            last = rec;
        }
    }
    v[k] = last;
    k + 1
}

/// One record of the stream, as a value: an access (standing for `1 + repeats` accesses of
/// its size and direction inside one line, the first at its address), or a marker, skip
/// record or notice (see the top bytes above). The cache simulator takes batches of these
/// as they come (`hpcscope_cachesim::PackedAccess`) without unpacking them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Record(pub u64);

impl Record {
    /// Packs one access; `None` when the address needs more than 56 bits or the size is
    /// not a power of two up to 2^15.
    pub fn new(addr: u64, size: u32, is_write: bool) -> Option<Self> {
        if addr >> 56 != 0 || !size.is_power_of_two() || size > 1 << 15 {
            return None;
        }
        Some(Self(record(addr, size.trailing_zeros(), is_write)))
    }

    /// The same record standing for `n` accesses (1 to 8); the caller vouches that they
    /// fall in one line. `None` for any other `n`.
    pub fn with_count(self, n: u64) -> Option<Self> {
        (1..=8)
            .contains(&n)
            .then(|| Self(self.0 & !REPEATS | (n - 1) << 60))
    }

    /// The address.
    #[inline(always)]
    pub fn addr(self) -> u64 {
        self.0 & ADDR_MASK
    }

    /// Log2 of the size of each access, bytes.
    #[inline(always)]
    pub fn size_shift(self) -> u32 {
        ((self.0 >> 56) & 0xf) as u32
    }

    /// Whether it stores.
    #[inline(always)]
    pub fn is_write(self) -> bool {
        self.0 >> 63 == 1
    }

    /// Accesses the record stands for (its repeats plus one).
    #[inline(always)]
    pub fn count(self) -> u64 {
        ((self.0 >> 60) & 7) + 1
    }

    /// The top byte (which tells markers, skip records and notices from accesses).
    #[inline(always)]
    pub fn top(self) -> u64 {
        self.0 >> 56
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_marker_is_no_access() {
        for t in [0u32, 1, 7, 1023, u32::MAX] {
            let m = thread_marker(t);
            assert_eq!(marker_thread(m), Some(t));
            // A load of 2^15 bytes repeated 7 times: no record coalesces into that (a
            // 32 KiB access crosses every block), and no access record has that top byte.
            assert!(!coalesces(m, m, 63));
            assert_eq!(m >> 56, 0x7f);
            assert_eq!(marker_thread(end_marker(t)), None);
        }
        for shift in 0..16 {
            for store in [false, true] {
                let r = record(ADDR_MASK, shift, store);
                assert_eq!(marker_thread(r), None, "shift {shift} store {store}");
                // With the most repeats coalescing can give (coalesced records are at
                // most 2^6 bytes on 64-byte blocks, far from 2^15).
                if shift < 15 {
                    assert_eq!(marker_thread(r | REPEATS), None);
                }
            }
        }
    }

    #[test]
    fn record_layout() {
        let r = record(0x7fff_1234_5678, 3, true);
        assert_eq!(r & ADDR_MASK, 0x7fff_1234_5678);
        assert_eq!((r >> 56) & 0xf, 3);
        assert_eq!(r >> 63, 1);
        let p = Record::new(0x7fff_1234_5678, 8, true).unwrap();
        assert_eq!(p.0, r);
        assert_eq!(
            (p.addr(), p.size_shift(), p.is_write()),
            (0x7fff_1234_5678, 3, true)
        );
        assert_eq!(p.with_count(4).unwrap().count(), 4);
        assert_eq!(p.with_count(9), None);
        assert_eq!(Record::new(0x10, 12, false), None);
        assert_eq!(Record::new(1 << 56, 8, false), None);
        assert_eq!(Record::new(0, 1 << 16, false), None);
    }

    #[test]
    fn skip_records_and_notices_are_no_accesses() {
        assert_eq!(skip_record(5, false), SKIP_TOP << 56 | 5);
        assert_eq!(skip_record(5, true), SKIP_TOP << 56 | SKIP_BYTES | 5);
        // A count beyond the field stays in it.
        assert_eq!(
            skip_record(u64::MAX, false),
            SKIP_TOP << 56 | (SKIP_BYTES - 1)
        );
        assert_eq!(skip_record(0, false) >> 56, 0x7d);
        let n = notice(0xff_ffff, 0xffff_ffff);
        assert_eq!(notice_parts(n), Some((0xff_ffff, 0xffff_ffff)));
        assert_eq!(notice_parts(notice(3, 7)), Some((3, 7)));
        assert_eq!(notice_parts(thread_marker(3)), None);
        // The four kinds of non-access records have four top bytes.
        let tops = [MARKER_TOP, END_TOP, SKIP_TOP, NOTICE_TOP];
        for (i, a) in tops.iter().enumerate() {
            assert!(tops[i + 1..].iter().all(|b| a != b));
        }
    }

    #[test]
    fn coalescing_rule() {
        let m = 63; // 64-byte blocks
        let a = record(0x1000, 3, false);
        // The second half of a 16-byte load, and the rest of the line.
        assert!(coalesces(a, record(0x1008, 3, false), m));
        assert!(coalesces(a, record(0x1038, 3, false), m));
        // Another line, size or direction.
        assert!(!coalesces(a, record(0x1040, 3, false), m));
        assert!(!coalesces(a, record(0x1008, 2, false), m));
        assert!(!coalesces(a, record(0x1008, 3, true), m));
        // An access crossing the block's end, either one.
        assert!(!coalesces(a, record(0x103c, 3, false), m));
        assert!(!coalesces(
            record(0x103c, 3, false),
            record(0x1030, 3, false),
            m
        ));
        // At most 8 accesses per record.
        let mut r = a;
        for _ in 0..7 {
            assert!(coalesces(r, record(0x1010, 3, false), m));
            r += REPEAT_ONE;
        }
        assert_eq!((r >> 60) & 7, 7);
        assert!(!coalesces(r, record(0x1010, 3, false), m));
        // The repeats never reach the direction bit.
        assert_eq!(r >> 63, 0);
        assert_eq!(Record(r).count(), 8);
    }
}
