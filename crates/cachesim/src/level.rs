//! One cache level: tag store, replacement state and counters, with no policy between levels.
//!
//! Layout, chosen for speed: one flat array of `sets * ways` entries, set after set,
//! each the `line` it holds (`line` = address >> log2(line_bytes)) with its dirty bit in
//! bit 63 ([`DIRTY`]), or [`INVALID`]. A dirty bit costs no memory of its own, and a
//! write-back or an eviction touches only the tag's cache line of the host. Entries never
//! move. Sets of levels up to [`FP_MAX_ENTRIES`] entries also keep 32-bit fingerprints of
//! their lines, searched four at a time.
//!
//! A level below L1 with at least [`NARROW_MIN_SETS`] sets keeps narrow tags instead while
//! every line fits: per entry the 32-bit quotient `line / sets` (exact: the set gives the
//! rest), the dirty bit in bit 31. Half the bytes of a 64-bit tag store, where the host's
//! cache is scarce (a large last level), and four compared per SSE2 instruction with no
//! fingerprint. The first line whose quotient needs more bits turns the level to 64-bit
//! tags for good (programs under QEMU user mode sit near 2^38: a quotient of 2^28 for a
//! thousand sets). Replacement state:
//! - LRU with at most 16 ways: a `u64` per set lists the ways from most to least recently
//!   used, one 4-bit nibble each; a use moves a way to the front, an eviction takes the
//!   last nibble, an invalidation moves the way to the back (so invalid ways are taken
//!   first). A few shifts and masks, no loop.
//! - LRU with more ways: a parallel `Vec<u32>` of last-use stamps from a per-level clock
//!   (0 = invalid, so a set's minimum stamp is its first invalid way, else its LRU way);
//!   when the clock would wrap, every set's stamps are renumbered by rank.
//! - Tree pseudo-LRU: a `u64` per set holds the tree bits.
//!
//! Every array starts a host cache line ([`Lines`]), so that a set of 64 bytes (16 narrow
//! tags, 8 wide ones) is one host line. A narrow LRU level of at most 12 ways without hints
//! (a last level, e.g. 11 ways) keeps each set in 64 bytes, its tags then its recency word
//! (`Level::pack_orders`): a search and the update it leads to touch one host line.
//!
//! The set index is `line & (sets - 1)` when the set count is a power of two,
//! and `line mod sets` otherwise (e.g. a 15-way 105 MiB L3), computed with a precomputed
//! reciprocal (one 64×64→128-bit multiply and at most two corrections) instead of a division.

use crate::config::{CacheConfig, Replacement};
use crate::lines::Lines;

/// An empty way. Never equal to a line, which is below 2^62 (lines are at least 4 bytes),
/// with or without [`DIRTY`].
pub(crate) const INVALID: u64 = u64::MAX;

/// The dirty bit of a tag.
const DIRTY: u64 = 1 << 63;

/// An empty way of a narrow tag store.
const INVALID32: u32 = u32::MAX;

/// The dirty bit of a narrow tag.
const DIRTY32: u32 = 1 << 31;

/// The largest quotient a narrow tag holds (with [`DIRTY32`] it stays below [`INVALID32`]).
const Q_MAX: u64 = (1 << 31) - 2;

/// Levels below L1 with at least this many sets start with narrow tags.
const NARROW_MIN_SETS: u64 = 1024;

/// Levels of more entries keep no fingerprints (64 Ki entries: a 4 MiB cache of 64-byte lines).
const FP_MAX_ENTRIES: u64 = 1 << 16;

/// No next-level hint.
pub(crate) const NO_HINT: u32 = u32::MAX;

/// Where a line sits: its index in the tag store and its set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) index: usize,
    pub(crate) set: usize,
    pub(crate) way: u32,
}

/// A cache level's state and raw counters.
#[derive(Clone, Debug)]
pub(crate) struct Level {
    pub(crate) name: String,
    tags: Lines<u64>,
    /// The narrow tag store (see the module documentation) while `narrow`, with four
    /// trailing [`INVALID32`] entries so that a search may load four tags past the last
    /// set; `tags` is then empty.
    tags32: Lines<u32>,
    narrow: bool,
    /// Entries per set in the index space of `tags32`, `tags`, `stamps` and `hints`: the
    /// ways, or 16 when the narrow store keeps each set's recency word after its tags
    /// (`packed`).
    stride: usize,
    /// The narrow store holds, per set, up to 12 tags (the unused ones [`INVALID32`]) and
    /// then the set's LRU recency word in entries 12 and 13: one host cache line per set
    /// (see [`Level::pack_orders`]); `per_set` is then empty.
    packed: bool,
    /// For quotients: `line >> set_shift` with a power-of-two set count, else
    /// `((line - set) >> set_shift) * set_inv` (exact division: `set_inv` is the inverse of
    /// the set count's odd part modulo 2^64, `set_shift` its trailing zeros).
    set_shift: u32,
    set_inv: u64,
    /// Per set, `fp_stride` (the ways rounded up to a multiple of 4) 32-bit fingerprints of
    /// the lines (see [`fingerprint`]), searched four at a time before the tags; empty with
    /// more than 64 ways or [`FP_MAX_ENTRIES`] entries.
    fps: Lines<u32>,
    fp_stride: usize,
    /// Bits of the ways in a fingerprint match mask.
    way_mask: u64,
    pub(crate) stamps: Lines<u32>,
    pub(crate) clock: u32,
    /// Per entry, where its line was last seen in the next level (an index into that
    /// level's tag store, or [`NO_HINT`]); empty unless the hierarchy asked for hints. A
    /// hint is checked against the next level's tag before use, so a stale one only costs
    /// the set search it failed to save.
    pub(crate) hints: Lines<u32>,
    per_set: Lines<u64>,
    policy: Policy,
    ways: usize,
    sets: u64,
    set_mask: u64,
    set_recip: u64,
    pow2_sets: bool,
    plru_depth: u32,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) bytes: u64,
    pub(crate) fills: u64,
    pub(crate) writebacks: u64,
    pub(crate) evictions: u64,
}

impl Level {
    /// Builds an empty level; `cfg` must have been validated.
    #[cfg(test)]
    pub(crate) fn new(cfg: &CacheConfig) -> Self {
        Self::build(cfg, false, false)
    }

    /// Builds an empty level; `cfg` must have been validated. With `stamps`, LRU is kept
    /// as last-use stamps whatever the associativity: a hit then costs one store (the way's
    /// stamp) instead of a read-modify-write of the set's recency word, which streams that
    /// share a set (arrays a multiple of the set span apart) chain from access to access;
    /// a miss pays a scan of the set's stamps. A hierarchy's L1, where nearly every access
    /// hits, uses stamps; the other levels the compact recency word.
    /// `narrow_ok`: the level may keep narrow tags (not an L1, whose fast path writes dirty
    /// bits into 64-bit tags).
    pub(crate) fn build(cfg: &CacheConfig, stamps: bool, narrow_ok: bool) -> Self {
        let sets = cfg.sets().max(1);
        let ways = cfg.associativity.max(1) as usize;
        let policy = match cfg.replacement {
            Replacement::TreePlru => Policy::TreePlru,
            Replacement::Lru if ways <= 16 && !stamps => Policy::Nibbles,
            Replacement::Lru => Policy::Stamps,
        };
        let narrow = narrow_ok && sets >= NARROW_MIN_SETS && ways <= 64;
        // Fingerprints pay where searches mostly miss and the level is small (L1, L2); a
        // large last level mostly hits and would grow by half for them.
        let fp_stride = if !narrow && ways <= 64 && sets * ways as u64 <= FP_MAX_ENTRIES {
            ways.next_multiple_of(4)
        } else {
            0
        };
        let (per_set, stamps) = match policy {
            Policy::TreePlru => (Lines::new(sets as usize, 0), Lines::default()),
            Policy::Nibbles => (
                Lines::new(sets as usize, nib_identity(ways)),
                Lines::default(),
            ),
            Policy::Stamps => (Lines::default(), Lines::new(sets as usize * ways, 0)),
        };
        Self {
            name: cfg.name.clone(),
            tags: if narrow {
                Lines::default()
            } else {
                Lines::new(sets as usize * ways, INVALID)
            },
            tags32: if narrow {
                Lines::new(sets as usize * ways + 4, INVALID32)
            } else {
                Lines::default()
            },
            narrow,
            stride: ways,
            packed: false,
            set_shift: sets.trailing_zeros(),
            set_inv: odd_inverse(sets >> sets.trailing_zeros()),
            fps: Lines::new(sets as usize * fp_stride, fingerprint(INVALID)),
            fp_stride,
            way_mask: if ways >= 64 {
                u64::MAX
            } else {
                (1 << ways) - 1
            },
            stamps,
            clock: 1,
            hints: Lines::default(),
            per_set,
            policy,
            ways,
            sets,
            set_mask: sets.wrapping_sub(1),
            set_recip: u64::MAX / sets,
            pow2_sets: sets.is_power_of_two(),
            plru_depth: ways.trailing_zeros(),
            hits: 0,
            misses: 0,
            bytes: 0,
            fills: 0,
            writebacks: 0,
            evictions: 0,
        }
    }

    /// Keeps each set's LRU recency word in the set's host cache line, after its narrow
    /// tags, when the level has narrow tags, at most 12 ways, LRU and no hints: a search
    /// and the replacement update it leads to then touch one host line instead of two or
    /// three (11 narrow tags are 44 bytes, which straddle two lines in most sets). A level
    /// that does not qualify is left as it is.
    pub(crate) fn pack_orders(&mut self) {
        if !self.narrow
            || self.policy != Policy::Nibbles
            || self.ways > 12
            || !self.hints.is_empty()
        {
            return;
        }
        let sets = self.sets as usize;
        let mut tags32 = Lines::new(sets * 16 + 4, INVALID32);
        for set in 0..sets {
            let (old, new) = (set * self.ways, set * 16);
            tags32[new..new + self.ways].copy_from_slice(&self.tags32[old..old + self.ways]);
            let order = self.per_set[set];
            tags32[new + 12] = order as u32;
            tags32[new + 13] = (order >> 32) as u32;
        }
        self.tags32 = tags32;
        self.per_set = Lines::default();
        self.stride = 16;
        self.packed = true;
    }

    /// The LRU recency word of set `set` (Nibbles policy).
    #[inline(always)]
    fn order(&self, set: usize) -> u64 {
        if self.packed {
            let at = set * 16 + 12;
            u64::from(*at_ref(&self.tags32, at)) | u64::from(*at_ref(&self.tags32, at + 1)) << 32
        } else {
            *at_ref(&self.per_set, set)
        }
    }

    /// Sets the LRU recency word of set `set` (Nibbles policy).
    #[inline(always)]
    fn set_order(&mut self, set: usize, order: u64) {
        if self.packed {
            let at = set * 16 + 12;
            *at_mut(&mut self.tags32, at) = order as u32;
            *at_mut(&mut self.tags32, at + 1) = (order >> 32) as u32;
        } else {
            *at_mut(&mut self.per_set, set) = order;
        }
    }

    /// Keeps a next-level hint per entry (see [`Level::hints`]).
    pub(crate) fn enable_hints(&mut self) {
        self.hints = Lines::new(self.sets as usize * self.stride, NO_HINT);
    }

    /// What the L1 fast path writes: the stamps (LRU) or per-set tree bits (tree-PLRU), and
    /// the tags (for their dirty bits, see [`mark_dirty_tag`]), as slices that cannot alias
    /// the level itself.
    #[inline(always)]
    pub(crate) fn fast_parts(&mut self) -> (&mut [u32], &mut [u64], &mut [u64]) {
        debug_assert!(!self.narrow, "an L1 keeps 64-bit tags");
        (&mut self.stamps, &mut self.per_set, &mut self.tags)
    }

    /// `log2(ways)` for tree-PLRU levels.
    pub(crate) fn plru_depth(&self) -> u32 {
        self.plru_depth
    }

    /// Whether the level keeps narrow tags.
    #[cfg(test)]
    pub(crate) fn is_narrow(&self) -> bool {
        self.narrow
    }

    /// Whether LRU is kept as last-use stamps (else tree pseudo-LRU or recency words).
    pub(crate) fn uses_stamps(&self) -> bool {
        self.policy == Policy::Stamps
    }

    /// The line at `index`, or [`INVALID`].
    #[inline(always)]
    pub(crate) fn tag_at(&self, index: usize) -> u64 {
        if self.narrow {
            return match self.tags32.get(index) {
                Some(&t)
                    if t != INVALID32
                        && index < self.sets as usize * self.stride
                        && index % self.stride < self.ways =>
                {
                    self.line_of(u64::from(t & !DIRTY32), index / self.stride)
                }
                _ => INVALID,
            };
        }
        match self.tags.get(index) {
            Some(&t) if t != INVALID => t & !DIRTY,
            _ => INVALID,
        }
    }

    /// Whether entry `index` holds `line` (any index: a stale hint is only `false`).
    #[inline(always)]
    pub(crate) fn holds(&self, index: usize, line: u64) -> bool {
        if self.narrow {
            let (set, base) = self.set_base(line);
            let q = self.quotient(line, set);
            index.wrapping_sub(base) < self.ways
                && q <= Q_MAX
                && *at_ref(&self.tags32, index) | DIRTY32 == q as u32 | DIRTY32
        } else {
            self.tag_at(index) == line
        }
    }

    /// `line / sets` for `line` of set `set`.
    #[inline(always)]
    fn quotient(&self, line: u64, set: usize) -> u64 {
        if self.pow2_sets {
            line >> self.set_shift
        } else {
            ((line - set as u64) >> self.set_shift).wrapping_mul(self.set_inv)
        }
    }

    /// The line of quotient `q` in set `set`.
    #[inline(always)]
    fn line_of(&self, q: u64, set: usize) -> u64 {
        q * self.sets + set as u64
    }

    /// Turns a narrow tag store into 64-bit tags (a line's quotient needs more bits).
    #[cold]
    fn widen(&mut self) {
        let sets = self.sets as usize;
        let mut tags = Lines::new(sets * self.ways, INVALID);
        for set in 0..sets {
            for w in 0..self.ways {
                let t = self.tags32[set * self.stride + w];
                if t != INVALID32 {
                    let line = self.line_of(u64::from(t & !DIRTY32), set);
                    tags[set * self.ways + w] = line | u64::from(t >> 31) << 63;
                }
            }
        }
        if self.packed {
            let mut per_set = Lines::new(sets, 0);
            for (set, order) in per_set.iter_mut().enumerate() {
                *order = self.order(set);
            }
            self.per_set = per_set;
            self.packed = false;
        }
        self.tags = tags;
        self.tags32 = Lines::default();
        self.narrow = false;
        self.stride = self.ways;
    }

    #[inline(always)]
    fn set_of(&self, line: u64) -> usize {
        if self.pow2_sets {
            (line & self.set_mask) as usize
        } else {
            fast_mod(line, self.sets, self.set_recip) as usize
        }
    }

    /// `line`'s set and the index of its first way.
    #[inline(always)]
    pub(crate) fn set_base(&self, line: u64) -> (usize, usize) {
        let set = self.set_of(line);
        (set, set * self.stride)
    }

    /// The way of `line` in set `set`, whose first way is at `base`: the ways whose
    /// fingerprint matches, four per compare, each checked against its tag.
    #[inline(always)]
    pub(crate) fn find_way(&self, set: usize, base: usize, line: u64) -> Option<usize> {
        if self.narrow {
            let q = self.quotient(line, set);
            if q > Q_MAX {
                return None; // never stored: the level would have widened
            }
            let tags = slice_at(&self.tags32, base, self.ways.next_multiple_of(4));
            let key = q as u32 | DIRTY32;
            let m = match self.ways {
                1..=4 => tag_match::<1>(tags, key),
                5..=8 => tag_match::<2>(tags, key),
                9..=12 => tag_match::<3>(tags, key),
                13..=16 => tag_match::<4>(tags, key),
                _ => tag_match_any(tags, key),
            } & self.way_mask;
            return (m != 0).then(|| m.trailing_zeros() as usize);
        }
        if self.fp_stride == 0 {
            return self.find(base, line);
        }
        let at = set * self.fp_stride;
        let fps = slice_at(&self.fps, at, self.fp_stride);
        let mut m = match self.fp_stride {
            4 => fp_match::<1>(fps, fingerprint(line)),
            8 => fp_match::<2>(fps, fingerprint(line)),
            12 => fp_match::<3>(fps, fingerprint(line)),
            16 => fp_match::<4>(fps, fingerprint(line)),
            _ => fp_match_any(fps, fingerprint(line)),
        } & self.way_mask;
        while m != 0 {
            let w = m.trailing_zeros() as usize;
            if *at_ref(&self.tags, base + w) | DIRTY == line | DIRTY {
                return Some(w);
            }
            m &= m - 1;
        }
        None
    }

    /// Asks the host to bring the set of `line` into its caches: the tags (or the
    /// fingerprints, which a search reads first), the set's replacement state and, in a
    /// level with hints, the hints. Changes nothing the simulation sees; a later search of
    /// that set then need not wait for the host's memory (see [`Hierarchy`]'s lookahead).
    ///
    /// [`Hierarchy`]: crate::Hierarchy
    #[inline(always)]
    pub(crate) fn prefetch(&self, line: u64) {
        let (set, base) = self.set_base(line);
        if self.narrow {
            // A packed set's recency word follows its tags, in the same host line.
            prefetch_slice(&self.tags32, base, self.ways * 4);
            if self.packed {
                return;
            }
        } else if self.fp_stride != 0 {
            prefetch_slice(&self.fps, set * self.fp_stride, self.fp_stride * 4);
        } else {
            prefetch_slice(&self.tags, base, self.ways * 8);
        }
        match self.policy {
            Policy::Stamps => prefetch_slice(&self.stamps, base, self.ways * 4),
            Policy::Nibbles | Policy::TreePlru => prefetch_slice(&self.per_set, set, 8),
        }
        if !self.hints.is_empty() {
            prefetch_slice(&self.hints, base, self.ways * 4);
        }
    }

    /// Where, in the next level, the line sits that this level would evict now to make room
    /// for `line` (its hint), when the level keeps LRU recency words and hints; reads the
    /// set's recency word and one hint (which [`Level::prefetch`] asked for). Only a guess
    /// for prefetching: `line` may hit, and the set may change before it comes.
    #[inline(always)]
    pub(crate) fn victim_hint(&self, line: u64) -> Option<u32> {
        if self.policy != Policy::Nibbles || self.hints.is_empty() {
            return None;
        }
        let (set, base) = self.set_base(line);
        let w = ((self.order(set) >> (4 * (self.ways - 1))) & 15) as usize;
        let h = *at_ref(&self.hints, base + w);
        (h != NO_HINT).then_some(h)
    }

    /// Asks the host to bring the tag at `index` into its caches (nothing when `index` is
    /// out of range, e.g. a stale hint).
    #[inline(always)]
    pub(crate) fn prefetch_index(&self, index: usize) {
        if self.narrow {
            prefetch_slice(&self.tags32, index, 4);
        } else {
            prefetch_slice(&self.tags, index, 8);
        }
    }

    /// Records a use of way `way` of set `set` (entry `index`) in the replacement state.
    #[inline(always)]
    pub(crate) fn touch_way(&mut self, set: usize, index: usize, way: usize) {
        match self.policy {
            Policy::Nibbles => {
                let order = self.order(set);
                // Interleaved streams mostly touch lines that already lead their set.
                if (order & 15) as usize != way {
                    self.set_order(set, nib_to_front(order, nib_position(order, way), way));
                }
            }
            Policy::Stamps => self.touch_lru(index),
            Policy::TreePlru => plru_touch(at_mut(&mut self.per_set, set), way, self.plru_depth),
        }
    }

    /// Installs `line` (absent) in set `set` (first way at `base`) as most recently used,
    /// with dirty bit `dirty`. Returns its index, and the line that left (or [`INVALID`])
    /// with its dirty bit.
    #[inline(always)]
    pub(crate) fn insert_at(
        &mut self,
        set: usize,
        base: usize,
        line: u64,
        dirty: bool,
    ) -> (usize, u64, u8) {
        let mut base = base;
        let q = if self.narrow {
            let q = self.quotient(line, set);
            if q > Q_MAX {
                self.widen();
                base = set * self.stride;
            }
            q
        } else {
            0
        };
        let w = match self.policy {
            Policy::Nibbles => {
                // The last way in recency order: an invalid way if any, else the LRU way.
                let order = self.order(set);
                let w = ((order >> (4 * (self.ways - 1))) & 15) as usize;
                self.set_order(set, nib_to_front(order, self.ways - 1, w));
                w
            }
            Policy::Stamps => {
                // The smallest stamp: the first invalid way (stamp 0), else the LRU way.
                let w = lru_way(slice_at(&self.stamps, base, self.ways));
                self.touch_lru(base + w);
                w
            }
            Policy::TreePlru => {
                let invalid = if self.narrow {
                    let ways = &self.tags32[base..base + self.ways];
                    ways.iter().position(|&e| e == INVALID32)
                } else {
                    let ways = &self.tags[base..base + self.ways];
                    ways.iter().position(|&e| e == INVALID)
                };
                let w = match invalid {
                    Some(w) => w,
                    None => plru_victim(self.per_set[set], self.plru_depth),
                };
                plru_touch(&mut self.per_set[set], w, self.plru_depth);
                w
            }
        };
        let index = base + w;
        if self.narrow {
            let old = std::mem::replace(
                at_mut(&mut self.tags32, index),
                q as u32 | u32::from(dirty) << 31,
            );
            return if old == INVALID32 {
                (index, INVALID, 0)
            } else {
                let victim = self.line_of(u64::from(old & !DIRTY32), set);
                (index, victim, (old >> 31) as u8)
            };
        }
        if self.fp_stride != 0 {
            *at_mut(&mut self.fps, set * self.fp_stride + w) = fingerprint(line);
        }
        let old = std::mem::replace(at_mut(&mut self.tags, index), line | u64::from(dirty) << 63);
        if old == INVALID {
            (index, INVALID, 0)
        } else {
            (index, old & !DIRTY, (old >> 63) as u8)
        }
    }

    #[inline(always)]
    fn find(&self, base: usize, line: u64) -> Option<usize> {
        let set = slice_at(&self.tags, base, self.ways);
        // Compared with the dirty bit set on both sides. Four ways per branch: a miss scans
        // the whole set, so fewer, better predicted branches matter more than stopping early.
        let key = line | DIRTY;
        let mut chunks = set.chunks_exact(4);
        let mut at = 0;
        for c in &mut chunks {
            let hit = (c[0] | DIRTY == key)
                | (c[1] | DIRTY == key)
                | (c[2] | DIRTY == key)
                | (c[3] | DIRTY == key);
            if hit {
                return c.iter().position(|&e| e | DIRTY == key).map(|p| at + p);
            }
            at += 4;
        }
        chunks
            .remainder()
            .iter()
            .position(|&e| e | DIRTY == key)
            .map(|p| at + p)
    }

    #[inline(always)]
    pub(crate) fn set_dirty(&mut self, index: usize) {
        if self.narrow {
            self.tags32[index] |= DIRTY32;
            return;
        }
        self.tags[index] |= DIRTY;
    }

    /// ORs `dirty` (0 or 1) into the dirty bit of `index`.
    #[inline(always)]
    pub(crate) fn or_dirty(&mut self, index: usize, dirty: u8) {
        if self.narrow {
            *at_mut(&mut self.tags32, index) |= u32::from(dirty) << 31;
        } else {
            *at_mut(&mut self.tags, index) |= u64::from(dirty) << 63;
        }
    }

    /// Stamps way `slot` as just used.
    #[inline(always)]
    fn touch_lru(&mut self, slot: usize) {
        if self.clock == u32::MAX {
            self.renumber_stamps();
        }
        *at_mut(&mut self.stamps, slot) = self.clock;
        self.clock += 1;
    }

    /// Replaces each set's stamps by their rank (1 = least recent), keeping 0 for invalid
    /// ways, and restarts the clock above them. Runs once per ~4 billion uses of a level.
    #[cold]
    pub(crate) fn renumber_stamps(&mut self) {
        let mut order: Vec<usize> = Vec::with_capacity(self.ways);
        for set in self.stamps.chunks_mut(self.ways) {
            order.clear();
            order.extend((0..set.len()).filter(|&w| set[w] != 0));
            order.sort_by_key(|&w| set[w]);
            for (rank, &w) in order.iter().enumerate() {
                set[w] = rank as u32 + 1;
            }
        }
        self.clock = self.ways as u32 + 1;
    }

    /// Looks `line` up; on a hit updates the replacement state and returns where it is.
    #[inline(always)]
    pub(crate) fn lookup(&mut self, line: u64) -> Option<Slot> {
        let (set, base) = self.set_base(line);
        let p = self.find_way(set, base, line)?;
        let slot = Slot {
            index: base + p,
            set,
            way: p as u32,
        };
        self.touch(slot);
        Some(slot)
    }

    /// Records a use of the entry at `index` in the replacement state.
    #[inline(always)]
    pub(crate) fn touch_index(&mut self, index: usize) {
        match self.policy {
            Policy::Stamps => self.touch_lru(index),
            Policy::TreePlru => plru_touch(
                &mut self.per_set[index >> self.plru_depth],
                index & (self.ways - 1),
                self.plru_depth,
            ),
            Policy::Nibbles => self.touch(Slot {
                index,
                set: index / self.stride,
                way: (index % self.stride) as u32,
            }),
        }
    }

    /// Records a use of the line at `slot` in the replacement state.
    #[inline(always)]
    pub(crate) fn touch(&mut self, slot: Slot) {
        let way = slot.way as usize;
        match self.policy {
            Policy::Nibbles => {
                let order = self.order(slot.set);
                // Interleaved streams mostly touch lines that already lead their set.
                if (order & 15) as usize != way {
                    self.set_order(slot.set, nib_to_front(order, nib_position(order, way), way));
                }
            }
            Policy::Stamps => self.touch_lru(slot.index),
            Policy::TreePlru => plru_touch(&mut self.per_set[slot.set], way, self.plru_depth),
        }
    }

    /// Marks `line` dirty if present, without touching the replacement state (a write-back
    /// arriving from the level above). Returns whether it was present.
    #[inline]
    pub(crate) fn mark_dirty(&mut self, line: u64) -> bool {
        let (set, base) = self.set_base(line);
        match self.find_way(set, base, line) {
            Some(p) => {
                self.set_dirty(base + p);
                true
            }
            None => false,
        }
    }

    /// Installs `line` (absent) as most recently used; returns its slot and, if a valid
    /// line had to leave, the victim encoded as `victim_line << 1 | dirty`.
    #[inline(always)]
    pub(crate) fn insert(&mut self, line: u64, dirty: bool) -> (Slot, Option<u64>) {
        let (set, base) = self.set_base(line);
        let (index, victim, was_dirty) = self.insert_at(set, base, line, dirty);
        let slot = Slot {
            index,
            set,
            // (A level that widened has moved the set: `base` is stale.)
            way: (index - set * self.stride) as u32,
        };
        (
            slot,
            (victim != INVALID).then_some(victim << 1 | u64::from(was_dirty)),
        )
    }

    /// Removes `line` if present; returns its dirty bit.
    #[inline]
    pub(crate) fn invalidate(&mut self, line: u64) -> Option<bool> {
        let (set, base) = self.set_base(line);
        let p = self.find_way(set, base, line)?;
        let was_dirty = if self.narrow {
            std::mem::replace(&mut self.tags32[base + p], INVALID32) & DIRTY32 != 0
        } else {
            std::mem::replace(&mut self.tags[base + p], INVALID) & DIRTY != 0
        };
        if self.fp_stride != 0 {
            self.fps[set * self.fp_stride + p] = fingerprint(INVALID);
        }
        match self.policy {
            Policy::Nibbles => {
                let order = self.order(set);
                self.set_order(
                    set,
                    nib_to_back(order, nib_position(order, p), p, self.ways),
                );
            }
            Policy::Stamps => self.stamps[base + p] = 0,
            Policy::TreePlru => {}
        }
        Some(was_dirty)
    }

    /// Whether `line` is present (no state change).
    pub(crate) fn contains(&self, line: u64) -> bool {
        let (set, base) = self.set_base(line);
        self.find_way(set, base, line).is_some()
    }

    /// Whether `line` is present and dirty (no state change).
    pub(crate) fn is_dirty(&self, line: u64) -> bool {
        let (set, base) = self.set_base(line);
        self.find_way(set, base, line).is_some_and(|p| {
            if self.narrow {
                self.tags32[base + p] & DIRTY32 != 0
            } else {
                self.tags[base + p] & DIRTY != 0
            }
        })
    }

    /// Valid lines held.
    pub(crate) fn valid_lines(&self) -> usize {
        if self.narrow {
            let n = self.sets as usize * self.stride;
            return self.tags32[..n]
                .chunks_exact(self.stride)
                .map(|set| set[..self.ways].iter().filter(|&&e| e != INVALID32).count())
                .sum();
        }
        self.tags.iter().filter(|&&e| e != INVALID).count()
    }

    /// Empties the level (contents and replacement state); counters stay.
    pub(crate) fn clear(&mut self) {
        self.tags.fill(INVALID);
        self.tags32.fill(INVALID32);
        self.fps.fill(fingerprint(INVALID));
        self.stamps.fill(0);
        self.hints.fill(NO_HINT);
        self.clock = 1;
        let init = match self.policy {
            Policy::Nibbles => nib_identity(self.ways),
            _ => 0,
        };
        self.per_set.fill(init);
        if self.packed {
            for set in 0..self.sets as usize {
                self.set_order(set, init);
            }
        }
    }

    /// Zeroes the counters.
    pub(crate) fn clear_counters(&mut self) {
        self.hits = 0;
        self.misses = 0;
        self.bytes = 0;
        self.fills = 0;
        self.writebacks = 0;
        self.evictions = 0;
    }
}

/// How a level keeps its replacement state (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    Nibbles,
    Stamps,
    TreePlru,
}

const NIB_ONES: u64 = 0x1111_1111_1111_1111;
const NIB_HIGHS: u64 = 0x8888_8888_8888_8888;

/// Mask of the first `k` nibbles, `k < 16`.
#[inline(always)]
fn nib_low(k: usize) -> u64 {
    (1u64 << (4 * k)) - 1
}

/// Recency order listing ways `0, 1, ..., ways - 1`.
fn nib_identity(ways: usize) -> u64 {
    (0..ways).fold(0, |o, w| o | (w as u64) << (4 * w))
}

/// Position of way `w` in `order`. The way occurs once among the used nibbles, and the
/// lowest zero nibble of `order ^ w * 0x11..1` found by the borrow trick is always exact.
#[inline(always)]
fn nib_position(order: u64, w: usize) -> usize {
    let x = order ^ (NIB_ONES * w as u64);
    let zero = x.wrapping_sub(NIB_ONES) & !x & NIB_HIGHS;
    (zero.trailing_zeros() / 4) as usize
}

/// Moves way `w`, found at position `p`, to the front (most recently used).
#[inline(always)]
fn nib_to_front(order: u64, p: usize, w: usize) -> u64 {
    let below = order & nib_low(p);
    // Two shifts so that p = 15 needs no 64-bit shift.
    let above = (order >> (4 * p) >> 4) << 4 << (4 * p);
    above | below << 4 | w as u64
}

/// Moves way `w`, found at position `p`, to the back (position `ways - 1`).
#[inline(always)]
fn nib_to_back(order: u64, p: usize, w: usize, ways: usize) -> u64 {
    let below = order & nib_low(p);
    let above = ((order >> (4 * p) >> 4) << (4 * p)) & nib_low(ways - 1);
    below | above | (w as u64) << (4 * (ways - 1))
}

/// `n mod d` for `d` not a power of two, with `recip = u64::MAX / d`: the estimated
/// quotient `mulhi(n, recip)` is at most 2 below `n / d` and never above it.
#[inline(always)]
fn fast_mod(n: u64, d: u64, recip: u64) -> u64 {
    let q = ((u128::from(n) * u128::from(recip)) >> 64) as u64;
    let mut r = n - q * d;
    while r >= d {
        r -= d;
    }
    r
}

// Unchecked indexing for the hot paths. Every index there is `set * ways + way` (or
// `set * fp_stride + way`) with `set` from `set_of` (below `sets`) and `way` from a search
// mask limited to the ways, a recency order of the ways or a victim choice among them, so
// it is in bounds; debug builds (the tests) check it.

/// `v[i]`; `i` must be in bounds.
#[inline(always)]
fn at_ref<T>(v: &[T], i: usize) -> &T {
    debug_assert!(i < v.len());
    // SAFETY: in bounds (see above).
    unsafe { v.get_unchecked(i) }
}

/// `&mut v[i]`; `i` must be in bounds.
#[inline(always)]
pub(crate) fn at_mut<T>(v: &mut [T], i: usize) -> &mut T {
    debug_assert!(i < v.len());
    // SAFETY: in bounds (see above).
    unsafe { v.get_unchecked_mut(i) }
}

/// `&v[start..start + len]`; the range must be in bounds.
#[inline(always)]
fn slice_at<T>(v: &[T], start: usize, len: usize) -> &[T] {
    debug_assert!(start + len <= v.len());
    // SAFETY: in bounds (see above).
    unsafe { v.get_unchecked(start..start + len) }
}

/// Prefetches the host cache lines of `bytes` bytes of `v` from element `start` on (at
/// most two host lines: a set of up to 16 eight-byte tags); nothing when out of bounds.
#[inline(always)]
fn prefetch_slice<T>(v: &[T], start: usize, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        if start < v.len() {
            let p = v[start..].as_ptr().cast::<i8>();
            // SAFETY: SSE is part of the x86-64 baseline; a prefetch never faults, and the
            // address is inside `v` (the second one at most 64 bytes past a valid one,
            // within the set's bytes).
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(p);
                if bytes > 64 && (p as usize & 63) + bytes > 64 {
                    _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
                }
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (v, start, bytes);
    }
}

/// Sets the dirty bit of the tag at `index` of `tags` (which holds a line).
#[inline(always)]
pub(crate) fn mark_dirty_tag(tags: &mut [u64], index: usize) {
    *at_mut(tags, index) |= DIRTY;
}

/// A line's fingerprint: its low 32 bits. Lines of one set that share it (they are a
/// multiple of 2^32 lines apart) only cost a tag compare each.
#[inline(always)]
fn fingerprint(line: u64) -> u32 {
    line as u32
}

/// Bit `w` set for each fingerprint `fps[w]` equal to `key`, over `4 * G` fingerprints.
#[inline(always)]
fn fp_match<const G: usize>(fps: &[u32], key: u32) -> u64 {
    let fps = &fps[..4 * G];
    let mut m = 0;
    for g in 0..G {
        m |= u64::from(match4(&fps[4 * g..4 * g + 4], key)) << (4 * g);
    }
    m
}

/// [`fp_match`] for any multiple of 4 up to 64 fingerprints.
fn fp_match_any(fps: &[u32], key: u32) -> u64 {
    let mut m = 0;
    for (g, chunk) in fps.chunks_exact(4).enumerate() {
        m |= u64::from(match4(chunk, key)) << (4 * g);
    }
    m
}

/// Bit `w` set for each narrow tag `tags[w]` that is `key` (which has [`DIRTY32`] set)
/// whatever its dirty bit, over `4 * G` tags.
#[inline(always)]
fn tag_match<const G: usize>(tags: &[u32], key: u32) -> u64 {
    let tags = &tags[..4 * G];
    let mut m = 0;
    for g in 0..G {
        m |= u64::from(match4_or(&tags[4 * g..4 * g + 4], key, DIRTY32)) << (4 * g);
    }
    m
}

/// [`tag_match`] for any multiple of 4 up to 64 tags.
fn tag_match_any(tags: &[u32], key: u32) -> u64 {
    let mut m = 0;
    for (g, chunk) in tags.chunks_exact(4).enumerate() {
        m |= u64::from(match4_or(chunk, key, DIRTY32)) << (4 * g);
    }
    m
}

/// Bits 0-3: which of the four values of `chunk`, ORed with `or`, equal `key`.
#[inline(always)]
fn match4_or(chunk: &[u32], key: u32, or: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_castsi128_ps, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_ps, _mm_or_si128,
            _mm_set1_epi32,
        };
        assert!(chunk.len() >= 4);
        // SAFETY: SSE2 is part of the x86-64 baseline; the unaligned load reads the four
        // `u32`s of `chunk` (checked just above).
        unsafe {
            let v = _mm_or_si128(
                _mm_loadu_si128(chunk.as_ptr().cast()),
                _mm_set1_epi32(or as i32),
            );
            let eq = _mm_cmpeq_epi32(v, _mm_set1_epi32(key as i32));
            _mm_movemask_ps(_mm_castsi128_ps(eq)) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        chunk[..4]
            .iter()
            .enumerate()
            .fold(0, |m, (i, &t)| m | u32::from(t | or == key) << i)
    }
}

/// The inverse of odd `d` modulo 2^64 (Newton's iteration: each step doubles the correct
/// low bits, from 3 with `d` itself).
fn odd_inverse(d: u64) -> u64 {
    debug_assert!(d & 1 == 1);
    let mut x = d;
    for _ in 0..5 {
        x = x.wrapping_mul(2u64.wrapping_sub(d.wrapping_mul(x)));
    }
    x
}

/// Bits 0-3: which of the four fingerprints of `chunk` equal `key`.
#[inline(always)]
fn match4(chunk: &[u32], key: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_castsi128_ps, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_ps, _mm_set1_epi32,
        };
        assert!(chunk.len() >= 4);
        // SAFETY: SSE2 is part of the x86-64 baseline; the unaligned load reads the four
        // `u32`s of `chunk` (checked just above).
        unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast());
            let eq = _mm_cmpeq_epi32(v, _mm_set1_epi32(key as i32));
            _mm_movemask_ps(_mm_castsi128_ps(eq)) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        chunk[..4]
            .iter()
            .enumerate()
            .fold(0, |m, (i, &f)| m | u32::from(f == key) << i)
    }
}

/// The way with the smallest stamp (the first one among equal stamps, which only invalid
/// ways share). Up to 16 ways, a tree of pairwise minima of `stamp << 4 | way`: a few
/// dependent steps instead of a chain through every way, and no branch on where the
/// minimum sits (which a miss cannot predict).
#[inline(always)]
fn lru_way(stamps: &[u32]) -> usize {
    match stamps.len() {
        1 => 0,
        2 => lru_tree::<2>(stamps),
        3 | 4 => lru_tree::<4>(stamps),
        5..=8 => lru_tree::<8>(stamps),
        9..=16 => lru_tree::<16>(stamps),
        _ => {
            let mut w = 0;
            let mut min = stamps[0];
            for (i, &t) in stamps.iter().enumerate().skip(1) {
                if t < min {
                    min = t;
                    w = i;
                }
            }
            w
        }
    }
}

/// [`lru_way`] for at most `N` (a power of two up to 16) ways, the keys in registers.
#[inline(always)]
fn lru_tree<const N: usize>(stamps: &[u32]) -> usize {
    let key = |i: usize| match stamps.get(i) {
        Some(&t) => u64::from(t) << 4 | i as u64,
        None => u64::MAX,
    };
    let mut k: [u64; N] = match <&[u32; N]>::try_from(stamps) {
        // The usual case, a power-of-two associativity: no padding to test.
        Ok(s) => std::array::from_fn(|i| u64::from(s[i]) << 4 | i as u64),
        Err(_) => std::array::from_fn(key),
    };
    let mut n = N;
    while n > 1 {
        n /= 2;
        for i in 0..n {
            k[i] = k[i].min(k[i + n]);
        }
    }
    (k[0] & 15) as usize
}

/// Points the tree bits on the path to way `w` away from it. Node `k` (1-based heap order)
/// holds 0 when its victim side is the left subtree and 1 when it is the right one.
#[inline(always)]
pub(crate) fn plru_touch(bits: &mut u64, w: usize, depth: u32) {
    let mut node = 1usize;
    for l in (0..depth).rev() {
        let b = (w >> l) & 1;
        if b == 0 {
            *bits |= 1 << node;
        } else {
            *bits &= !(1 << node);
        }
        node = 2 * node + b;
    }
}

/// Follows the tree bits from the root to the pseudo-LRU way.
#[inline(always)]
fn plru_victim(bits: u64, depth: u32) -> usize {
    let mut node = 1usize;
    let mut w = 0usize;
    for _ in 0..depth {
        let b = ((bits >> node) & 1) as usize;
        w = (w << 1) | b;
        node = 2 * node + b;
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_set(ways: u32, r: Replacement) -> Level {
        Level::new(&CacheConfig::new("t", 64 * u64::from(ways), 64, ways).with_replacement(r))
    }

    #[test]
    fn lru_evicts_least_recent() {
        let mut l = one_set(4, Replacement::Lru);
        for x in [1, 2, 3, 4] {
            assert!(l.lookup(x).is_none());
            assert_eq!(l.insert(x, false).1, None);
        }
        assert!(l.lookup(1).is_some());
        assert_eq!(l.insert(5, false).1, Some(2 << 1));
        assert_eq!(l.insert(6, true).1, Some(3 << 1));
        assert_eq!(l.insert(7, false).1, Some(4 << 1));
        assert_eq!(l.insert(8, false).1, Some(1 << 1));
        assert_eq!(l.insert(9, false).1, Some(5 << 1));
        assert_eq!(l.insert(10, false).1, Some(6 << 1 | 1));
    }

    #[test]
    fn tree_plru_known_sequence() {
        // A B C D fill ways 0..3; touching A again leaves the tree pointing at C
        // (root → right half, node 3 → way 2) where true LRU would evict B.
        let mut l = one_set(4, Replacement::TreePlru);
        for x in [10, 11, 12, 13] {
            l.insert(x, false);
        }
        assert!(l.lookup(10).is_some());
        assert_eq!(l.insert(14, false).1, Some(12 << 1));
        // E went to way 2: root now points left, node 2 points at way 1 (B).
        assert_eq!(l.insert(15, false).1, Some(11 << 1));
        // F went to way 1: root right, node 3 points at way 3 (D).
        assert_eq!(l.insert(16, false).1, Some(13 << 1));
    }

    #[test]
    fn invalidate_frees_a_way_before_eviction() {
        for r in [Replacement::Lru, Replacement::TreePlru] {
            let mut l = one_set(4, r);
            for x in [1, 2, 3, 4] {
                l.insert(x, x == 3);
            }
            assert_eq!(l.invalidate(3), Some(true));
            assert_eq!(l.invalidate(3), None);
            assert_eq!(l.insert(5, false).1, None, "{r:?}");
            assert_eq!(l.valid_lines(), 4);
        }
    }

    #[test]
    fn nibble_order_moves_ways() {
        let o = nib_identity(4); // 0 1 2 3
        assert_eq!(o, 0x3210);
        assert_eq!(nib_position(o, 2), 2);
        assert_eq!(nib_to_front(o, 2, 2), 0x3102); // 2 0 1 3
        assert_eq!(nib_to_back(o, 1, 1, 4), 0x1320); // 0 2 3 1
        let full = nib_identity(16);
        assert_eq!(nib_position(full, 15), 15);
        assert_eq!(nib_position(full, 0), 0);
        assert_eq!(nib_to_front(full, 15, 15), 0xedcb_a987_6543_210f);
        assert_eq!(nib_to_back(full, 0, 0, 16), 0x0fed_cba9_8765_4321);
    }

    #[test]
    fn packed_recency_words_choose_the_same_victims() {
        // 11 ways over 3 * 1024 sets: a packed narrow level against the same level unpacked,
        // with hits, fills, invalidations and dirty bits, and a line that widens both.
        let cfg = CacheConfig::new("L3", 3 * 1024 * 64 * 11, 64, 11);
        let mut a = Level::build(&cfg, false, true);
        let mut b = a.clone();
        b.pack_orders();
        assert!(b.packed && !a.packed);
        let mut x = 77u64;
        for k in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // 16 lines per set on average: hits and evictions.
            let line = (x >> 8) % (16 * 11 * 3 * 1024);
            if k == 150_000 {
                let big = line + (Q_MAX + 1) * 3 * 1024;
                assert_eq!(a.insert(big, true).1, b.insert(big, true).1);
            }
            match (a.lookup(line), b.lookup(line)) {
                (Some(_), Some(_)) => {}
                (None, None) => {
                    if x.is_multiple_of(11) {
                        assert_eq!(a.invalidate(line), b.invalidate(line));
                    } else {
                        assert_eq!(
                            a.insert(line, x.is_multiple_of(3)).1,
                            b.insert(line, x.is_multiple_of(3)).1
                        );
                    }
                }
                other => panic!("packed and unpacked disagree on {line}: {other:?}"),
            }
            if x.is_multiple_of(7) {
                let v = (x >> 20) % (16 * 11 * 3 * 1024);
                assert_eq!(a.invalidate(v), b.invalidate(v));
            }
        }
        assert!(!a.narrow && !b.narrow && !b.packed);
        assert_eq!(a.valid_lines(), b.valid_lines());
    }

    #[test]
    fn lru_policies_agree() {
        // 16 ways use the nibble order, 17 the stamps; the first 16 ways must behave alike.
        let mut a = one_set(16, Replacement::Lru);
        let mut b = Level::new(&CacheConfig::new("t", 64 * 17, 64, 17));
        assert_eq!((a.policy, b.policy), (Policy::Nibbles, Policy::Stamps));
        b.insert(1000, false); // occupies b's 17th way for good
        for _ in 0..16 {
            let _ = b.lookup(1000);
        }
        let mut x = 5u64;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let line = x % 24;
            let _ = b.lookup(1000);
            match (a.lookup(line), b.lookup(line)) {
                (Some(_), Some(_)) => {}
                (None, None) => {
                    if x.is_multiple_of(7) {
                        assert_eq!(a.invalidate(line), b.invalidate(line));
                    } else {
                        assert_eq!(a.insert(line, false).1, b.insert(line, false).1);
                    }
                }
                other => panic!("policies disagree on {line}: {other:?}"),
            }
            if x.is_multiple_of(5) {
                let victim = x % 24;
                assert_eq!(a.invalidate(victim), b.invalidate(victim));
            }
        }
    }

    #[test]
    fn fast_mod_matches_remainder() {
        let mut x = 0x1234_5678_9abc_def0u64;
        for d in [3u64, 5, 7, 15, 96, 114_688, 1_000_003, (1 << 32) - 1] {
            let recip = u64::MAX / d;
            for n in [
                0,
                1,
                d - 1,
                d,
                d + 1,
                u64::MAX,
                u64::MAX - 1,
                1 << 62,
                (1 << 62) - 1,
            ] {
                assert_eq!(fast_mod(n, d, recip), n % d, "{n} mod {d}");
            }
            for _ in 0..10_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                assert_eq!(fast_mod(x, d, recip), x % d, "{x} mod {d}");
                assert_eq!(fast_mod(x >> 6, d, recip), (x >> 6) % d);
            }
        }
    }

    #[test]
    fn stamp_renumbering_keeps_lru_order() {
        let mut l = Level::new(&CacheConfig::new("t", 64 * 20, 64, 20));
        assert_eq!(l.policy, Policy::Stamps);
        for x in 1..=20 {
            assert_eq!(l.insert(x, false).1, None);
        }
        assert!(l.lookup(1).is_some());
        l.clock = u32::MAX - 1;
        assert!(l.lookup(2).is_some()); // stamp u32::MAX - 1
        assert!(l.lookup(3).is_some()); // renumbers first
        assert!(l.clock < 30);
        for x in (4..=20).chain([1, 2, 3]) {
            assert_eq!(l.insert(100 + x, false).1, Some(x << 1));
        }
    }

    #[test]
    fn narrow_tags_hold_lines_and_widen_when_one_does_not_fit() {
        // Power-of-two and non-power-of-two set counts (2^12 * 13 sets, like a 35.75 MiB
        // 11-way L3), LRU and tree-PLRU.
        // Each with the recency word in the set's line too (`pack_orders`, LRU only).
        for (sets, ways, r, pack) in [
            (1024u64, 4u32, Replacement::Lru, false),
            (1024u64, 4u32, Replacement::Lru, true),
            (53_248, 11, Replacement::Lru, false),
            (53_248, 11, Replacement::Lru, true),
            (3 * 1024, 2, Replacement::TreePlru, true),
        ] {
            let cfg =
                CacheConfig::new("L3", sets * 64 * u64::from(ways), 64, ways).with_replacement(r);
            let mut l = Level::build(&cfg, false, true);
            if pack {
                l.pack_orders();
            }
            assert!(l.narrow);
            assert_eq!(l.packed, pack && r == Replacement::Lru);
            let mut x = 0x9e37_79b9u64;
            let mut held = Vec::new();
            for k in 0..3000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let line = x % (1 << 36);
                if l.contains(line) {
                    continue;
                }
                let (set, base) = l.set_base(line);
                let (index, victim, _) = l.insert_at(set, base, line, k % 3 == 0);
                held.retain(|&(v, _)| v != victim);
                held.push((line, k % 3 == 0));
                assert_eq!(l.tag_at(index), line);
                assert!(l.holds(index, line));
                assert!(!l.holds(index, line + sets), "another line of the set");
            }
            let valid = l.valid_lines();
            assert_eq!(valid, held.len());
            // A line whose quotient needs more than 31 bits: the level turns wide and keeps
            // every line and dirty bit.
            let big = (Q_MAX + 1) * sets + 5;
            let (set, base) = l.set_base(big);
            let (index, victim, _) = l.insert_at(set, base, big, true);
            assert!(!l.narrow);
            held.retain(|&(v, _)| v != victim);
            assert_eq!(l.tag_at(index), big);
            assert!(l.is_dirty(big));
            for &(line, dirty) in &held {
                assert!(l.contains(line), "{line} lost when widening");
                assert_eq!(l.is_dirty(line), dirty);
            }
            assert_eq!(l.valid_lines(), held.len() + 1);
        }
    }

    #[test]
    fn odd_inverse_inverts() {
        for d in [1u64, 3, 13, 53_248 >> 12, (1 << 40) + 1, u64::MAX] {
            assert_eq!(d.wrapping_mul(odd_inverse(d)), 1, "{d}");
        }
    }

    #[test]
    fn non_power_of_two_sets_use_modulo() {
        let mut l = Level::new(&CacheConfig::new("L3", 3 * 64 * 2, 64, 2));
        assert_eq!(l.sets, 3);
        for x in 0..6 {
            l.insert(x, false);
        }
        for x in 0..6 {
            assert!(l.contains(x));
        }
        assert_eq!(l.insert(6, false).1, Some(0));
    }
}
