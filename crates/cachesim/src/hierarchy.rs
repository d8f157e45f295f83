//! One cache hierarchy fed access by access: the policies between levels and the fast path.
//!
//! Policies: write-back, write-allocate (a store miss fills the line like a load, then
//! dirties it in L1). On a demand miss the line is looked up level by level; the first
//! level holding it (or memory) serves the access's bytes.
//!
//! - Non-inclusive and inclusive: the line is filled into every level between the one that
//!   served it and L1, outermost first. A dirty victim is written back to the next level,
//!   which marks its copy dirty (without a recency update) or, when it has none, allocates
//!   it (write-allocate); the last level writes back to memory. Inclusive also invalidates
//!   a victim in every level above (back-invalidation); a dirty copy found there makes the
//!   victim dirty, and the one write-back is counted at the evicting level.
//! - Exclusive: a hit in a level below L1 moves the line (with its dirty bit) to L1; a miss
//!   everywhere fills L1 only. Each level's victim moves to the next level; the last level's
//!   dirty victims are written back to memory.
//!
//! In parts (non-inclusive only): a hierarchy can record what leaves its last level
//! ([`LineEvent`]s: demand lookups of the lines it missed, with the access's bytes, and
//! dirty victims written back, in the order the next level receives them), and a hierarchy
//! of the levels below (a *tail*, whose first level is built like a level below L1) can be
//! fed those events instead of program accesses. The two count exactly what the whole
//! hierarchy counts, level for level: a non-inclusive level's state depends only on what
//! arrives from above. In a tail the L1 fast paths below do not apply (no program access
//! reaches it); a replayed event prefetches the sets of the event [`LOOKAHEAD`] further.
//!
//! Fast paths (they change no result, only the time to get it):
//! - The hierarchy remembers the last line L1 served and where it sits. An access to that
//!   line again is an L1 hit that needs no replacement update (the line is already most
//!   recently used, and tree-PLRU bits are idempotent), so it only adds to two counters and
//!   remembers a store, which dirties the line before the next slower-path access.
//! - A memo of four entries per L1 line, from 16 to 2048 (32 KiB: room for the lines of a
//!   64 KiB L1 with few collisions), indexed by a hash of the line, remembers where recently
//!   used lines sit
//!   in L1. It is exact: an entry is dropped when L1 evicts or invalidates its line, so a
//!   memo hit is an L1 hit with no set search and no tag check (interleaved streams such as
//!   `a[i] = b[i] + s * c[i]` hit here). A memo miss proves nothing: the set is searched.
//! - Each entry of a non-exclusive hierarchy's levels above the last remembers where its line
//!   sat in the next level when it was filled. A dirty victim written back there tries that
//!   position first (checked against the tag), which saves the set search of the write-back
//!   in a streaming miss.
//! - An access that leaves the fast path after an L1 miss that did not continue a
//!   sequential stream (its line is not the successor of one of the last [`STREAMS`] L1
//!   misses) starts a lookahead over the next [`LOOKAHEAD`] records: the sets below L1 of
//!   each record the memo does not place are prefetched into the host's caches, and for
//!   the records half as far, whose sets were asked for earlier, the next level's tag of
//!   the line each level with hints would evict (where a dirty victim is written back). On
//!   a miss-bound stream the large levels' tag stores do not fit in the host's caches, and
//!   their host-memory latency then overlaps the simulation of the accesses in between;
//!   sequential streams, whose sets the host's own prefetchers bring, skip it, and so do
//!   hierarchies whose levels below L1 hold few lines ([`LOOKAHEAD_LINES`]).

use crate::config::{HierarchyConfig, Inclusion};
use crate::error::ConfigError;
use crate::level::{INVALID, Level, NO_HINT, at_mut, mark_dirty_tag, plru_touch};
use crate::stats::{HierarchyStats, LevelStats};
use crate::{Access, IntoAccess};

/// No line: larger than any `address >> log2(line_bytes)` with lines of at least 4 bytes.
const NO_LINE: u64 = u64::MAX;

/// Most entries of the L1 slot memo (a power of two).
const MEMO_MAX: usize = 2048;

/// Fewest entries of the L1 slot memo (a power of two).
const MEMO_MIN: usize = 16;

/// Entries of the L1 slot memo of a hierarchy whose L1 holds `lines` lines: four per line
/// (few collisions), from [`MEMO_MIN`] to [`MEMO_MAX`]. Sized to the L1, so that the small
/// L1 of one class of sets (set sampling simulates tens of such hierarchies side by side)
/// keeps a memo that stays in the host's caches (2048 entries each, 40 of them missed the
/// host's L2 on most lookups).
fn memo_len(lines: u64) -> usize {
    // (At most MEMO_MAX: no overflow below.)
    let want = lines.min(MEMO_MAX as u64) as usize * 4;
    want.next_power_of_two().clamp(MEMO_MIN, MEMO_MAX)
}

/// The L1 position (index in its tag store) of a recently used line. Exact: the hierarchy
/// drops an entry whenever L1 loses its line, so `line` is always at `index`.
#[derive(Clone, Copy, Debug)]
struct Memo {
    line: u64,
    index: usize,
}

const NO_MEMO: Memo = Memo {
    line: NO_LINE,
    index: 0,
};

/// How many records ahead of an access that leaves the fast path the sets below L1 are
/// prefetched (host-memory latency over the time to simulate a miss, about 20 ns).
const LOOKAHEAD: usize = 16;

/// Lines the levels below L1 must hold together for the lookahead to run: below this, their
/// tags stay in the host's caches and the lookahead only costs. Measured (A/B, the same
/// counts): `mix --sample 8` on two machines (one small hierarchy per class of sets) x0.90
/// the wall time on cg and x0.80 on edge without it, and a full simulation of a64fx (32 Ki
/// lines of L2) x0.89 on edge; the full hierarchies of cascadelake-8260 and graviton2
/// (530 and 590 Ki lines below L1) keep it.
const LOOKAHEAD_LINES: u64 = 1 << 16;

/// L1 misses remembered to tell a sequential stream (see
/// [`Hierarchy::continues_stream`]).
const STREAMS: usize = 8;

/// Accesses a fast run takes at most, so that the L1 clock can be checked once per run.
const RUN_MAX: usize = 1 << 30;

/// The accesses and bytes that the items of `batch` stand for.
#[inline]
pub(crate) fn batch_totals<A: IntoAccess>(batch: &[A]) -> (u64, u64) {
    batch
        .iter()
        .fold((0u64, 0u64), |(n, b), x| (n + x.count(), b + x.bytes()))
}

/// `index` as a hint ([`NO_HINT`] when it does not fit).
#[inline(always)]
fn hint(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(NO_HINT)
}

/// The memo entry of `line` in a memo of `1 << (64 - shift)` entries.
#[inline(always)]
fn memo_index(line: u64, shift: u32) -> usize {
    // Fibonacci hashing: arrays a multiple of 4 KiB apart still land on different entries.
    (line.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift) as usize
}

/// The shift of [`memo_index`] for a memo of `len` entries (a power of two).
fn memo_shift(len: usize) -> u32 {
    64 - len.trailing_zeros()
}

/// A simulated cache hierarchy (levels plus implied main memory).
///
/// ```
/// use hpcscope_cachesim::{Access, CacheConfig, Hierarchy, HierarchyConfig};
///
/// let cfg = HierarchyConfig::new(
///     "toy",
///     vec![CacheConfig::new("L1", 32 << 10, 64, 8), CacheConfig::new("L2", 1 << 20, 64, 16)],
/// );
/// let mut h = Hierarchy::new(cfg)?;
/// for i in 0..1024u64 {
///     h.access(Access::read(0x10_0000 + 8 * i, 8));
/// }
/// let s = h.stats();
/// assert_eq!(s.levels[0].hits, 896); // 7 of 8 accesses per 64-byte line
/// assert_eq!(s.memory.bytes_served, 128 * 8);
/// # Ok::<(), hpcscope_cachesim::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Hierarchy {
    cfg: HierarchyConfig,
    line_shift: u32,
    line_mask: u64,
    levels: Vec<Level>,
    // Fast paths: last line served by L1, its index in L1, whether it was stored to since
    // the dirty bit was last written, and the L1 hits and bytes counted by the last-line
    // filter and the memo.
    mru_line: u64,
    mru_index: usize,
    memo: Box<[Memo]>,
    /// [`memo_index`]'s shift for the memo's length.
    memo_shift: u32,
    mru_write: bool,
    mru_hits: u64,
    mru_bytes: u64,
    /// The last access that left the fast path missed L1 and did not continue a stream
    /// (the lookahead prefetches then).
    missing: bool,
    /// Whether the lookahead runs at all: not where the levels below L1 hold few lines
    /// ([`LOOKAHEAD_LINES`]), whose tags stay in the host's caches.
    lookahead: bool,
    /// Records of the current batch before these indices had their lower levels' sets
    /// (`ahead`) and their victims' next-level tags (`ahead_victims`) prefetched.
    ahead: usize,
    ahead_victims: usize,
    /// The last lines that missed L1, in a ring (next entry: `miss_next % STREAMS`).
    miss_lines: [u64; STREAMS],
    miss_next: usize,
    mem_reads: u64,
    mem_bytes: u64,
    mem_writebacks: u64,
    split_accesses: u64,
    extra_pieces: u64,
    /// With the inclusive policy, when a node simulator asks for it: every victim of every
    /// level (level, line, dirty), so that copies in other cores' caches, kept outside
    /// this hierarchy, can be back-invalidated too.
    evict_log: Option<Vec<(usize, u64, bool)>>,
    /// The levels below a part simulated elsewhere (see [`Hierarchy::replay`]): level 0 is
    /// built like a level below L1 and never sees program accesses.
    tail: bool,
    /// When asked for ([`Hierarchy::capture_outflow`]): what went to memory, in order.
    outflow: Option<Vec<LineEvent>>,
}

/// [`LineEvent::bytes`] of a write-back (more than any piece of an access: sizes are u32).
const WRITE_BACK: u64 = u64::MAX;

/// What leaves the last level of a (non-inclusive) hierarchy for the level below it, in
/// the order the levels below receive it: a demand lookup of a line the last level missed
/// (with the bytes of the access it serves) or a dirty victim written back. A hierarchy
/// made of the levels below, fed these events ([`Hierarchy::replay`]), counts exactly
/// what those levels count under the whole hierarchy: with the non-inclusive policy a
/// level's state depends only on what arrives from above it (fills from below are clean
/// and go outermost first, and nothing is invalidated from below).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineEvent {
    line: u64,
    bytes: u64,
}

impl LineEvent {
    /// A demand lookup of `line` serving `bytes` program bytes.
    pub fn demand(line: u64, bytes: u64) -> Self {
        // A piece of an access has at most u32::MAX bytes: never taken for a write-back.
        Self {
            line,
            bytes: bytes.min(WRITE_BACK - 1),
        }
    }

    /// A dirty copy of `line` written back.
    pub fn write_back(line: u64) -> Self {
        Self {
            line,
            bytes: WRITE_BACK,
        }
    }

    /// The line number (address / line size).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The program bytes a demand lookup serves (`None`: a write-back).
    pub fn bytes(&self) -> Option<u64> {
        (self.bytes != WRITE_BACK).then_some(self.bytes)
    }
}

/// Builds level `i` of `cfg` (validated) as [`Hierarchy::new`] does: L1 keeps LRU stamps,
/// levels below L1 may keep narrow tags, and levels above the last keep hints to the next.
/// In a `tail` (levels below a part simulated elsewhere) level 0 is built like those below.
pub(crate) fn build_level(cfg: &HierarchyConfig, i: usize, tail: bool) -> Level {
    let n = cfg.levels.len();
    let l1 = i == 0 && !tail;
    let mut level = Level::build(&cfg.levels[i], l1, !l1);
    // Hints index the next level's tag store with a u32.
    if cfg.inclusion != Inclusion::Exclusive
        && i + 1 < n
        && cfg.levels[i + 1].size_bytes / cfg.levels[i + 1].line_bytes < u64::from(NO_HINT)
    {
        level.enable_hints();
    }
    level.pack_orders();
    level
}

/// What a hierarchy keeps about its L1 beyond the level itself (the memo and the last-line
/// filter), so that a node simulator can swap one core's L1 for another's.
#[derive(Clone, Debug)]
pub(crate) struct L1State {
    /// As long as the hierarchy's.
    memo: Box<[Memo]>,
    mru_line: u64,
    mru_index: usize,
    /// Line pieces beyond the first of accesses that crossed lines, counted while this L1
    /// was the hierarchy's: they go with the L1 whose access count includes them.
    extra_pieces: u64,
}

impl L1State {
    /// The state of an empty L1 of `h`'s kind.
    pub(crate) fn cold(h: &Hierarchy) -> Self {
        Self {
            memo: vec![NO_MEMO; h.memo.len()].into_boxed_slice(),
            mru_line: NO_LINE,
            mru_index: 0,
            extra_pieces: 0,
        }
    }

    /// L1 (whose state this is) no longer holds `line`.
    pub(crate) fn dropped(&mut self, line: u64) {
        let m = &mut self.memo[memo_index(line, memo_shift(self.memo.len()))];
        if m.line == line {
            m.line = NO_LINE;
        }
        if self.mru_line == line {
            self.mru_line = NO_LINE;
        }
    }
}

impl Hierarchy {
    /// Validates `cfg` and builds an empty (cold) hierarchy.
    pub fn new(cfg: HierarchyConfig) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let line_bytes = cfg.levels[0].line_bytes;
        let n = cfg.levels.len();
        let levels = (0..n).map(|i| build_level(&cfg, i, false)).collect();
        let memo = memo_len(cfg.levels[0].size_bytes / line_bytes);
        let below: u64 = (cfg.levels[1..].iter())
            .map(|l| l.size_bytes / l.line_bytes.max(1))
            .sum();
        let lookahead = below > LOOKAHEAD_LINES;
        Ok(Self {
            line_shift: line_bytes.trailing_zeros(),
            line_mask: line_bytes - 1,
            levels,
            cfg,
            mru_line: NO_LINE,
            mru_index: 0,
            memo: vec![NO_MEMO; memo].into_boxed_slice(),
            memo_shift: memo_shift(memo),
            mru_write: false,
            mru_hits: 0,
            mru_bytes: 0,
            missing: false,
            lookahead,
            ahead: 0,
            ahead_victims: 0,
            miss_lines: [NO_LINE; STREAMS],
            miss_next: 0,
            mem_reads: 0,
            mem_bytes: 0,
            mem_writebacks: 0,
            split_accesses: 0,
            extra_pieces: 0,
            evict_log: None,
            tail: false,
            outflow: None,
        })
    }

    /// A hierarchy of levels that sit below a part simulated elsewhere: it is fed what
    /// leaves that part ([`Hierarchy::replay`]), never program accesses. Non-inclusive only.
    pub(crate) fn new_tail(cfg: HierarchyConfig) -> Result<Self, ConfigError> {
        let mut h = Self::new(cfg)?;
        h.tail = true;
        h.levels[0] = build_level(&h.cfg, 0, true);
        Ok(h)
    }

    /// Whether this hierarchy is fed by [`Hierarchy::replay`] only.
    pub(crate) fn is_tail(&self) -> bool {
        self.tail
    }

    /// Records from now on what leaves the last level (demand lookups and write-backs that
    /// reach memory), for [`Hierarchy::take_outflow`]. Memory still counts them.
    pub(crate) fn capture_outflow(&mut self) {
        self.outflow.get_or_insert_with(Vec::new);
    }

    /// Appends what left the last level since the last call to `into`, in order.
    pub(crate) fn take_outflow(&mut self, into: &mut Vec<LineEvent>) {
        if let Some(o) = &mut self.outflow {
            into.append(o);
        }
    }

    /// Feeds `events`, what left the levels above these (see [`LineEvent`]), in order:
    /// a demand lookup goes down the levels until one holds the line (or memory serves it)
    /// and fills the levels above that one, outermost first; a write-back marks this
    /// hierarchy's first level's copy dirty or allocates it. Non-inclusive hierarchies only.
    pub(crate) fn replay(&mut self, events: &[LineEvent]) {
        debug_assert_eq!(self.cfg.inclusion, Inclusion::NonInclusive);
        for (i, e) in events.iter().enumerate() {
            // The sets of an event a few ahead come into the host's caches meanwhile.
            if let Some(next) = events.get(i + LOOKAHEAD) {
                for lvl in &self.levels {
                    lvl.prefetch(next.line);
                }
            }
            if e.bytes == WRITE_BACK {
                self.write_back_search(0, e.line);
            } else {
                self.demand(e.line, e.bytes);
            }
        }
    }

    /// A demand lookup of `line` arriving at the first level (see [`Hierarchy::replay`]):
    /// [`Hierarchy::locate_non_inclusive`] below L1.
    fn demand(&mut self, line: u64, bytes: u64) {
        self.serve_non_inclusive(0, line, bytes);
    }

    /// A non-inclusive demand for `line` looked up from level `from` down: the first level
    /// holding it (or memory) serves its `bytes`, each level before that one counts a miss
    /// and gets the line, outermost first. Returns where the line sits in level `from` (the
    /// hint for a fill of the level above: L1's own path fills L1 with it).
    #[inline(always)]
    fn serve_non_inclusive(&mut self, from: usize, line: u64, bytes: u64) -> u32 {
        let n = self.levels.len();
        let mut served = n;
        // Where the line sits in level `served`.
        let mut at = NO_HINT;
        for k in from..n {
            let lvl = &mut self.levels[k];
            let (set, base) = lvl.set_base(line);
            if let Some(w) = lvl.find_way(set, base, line) {
                lvl.touch_way(set, base + w, w);
                lvl.hits += 1;
                lvl.bytes += bytes;
                served = k;
                at = hint(base + w);
                break;
            }
            lvl.misses += 1;
        }
        if served == n {
            self.read_memory(line, bytes);
        }
        for k in (from..served).rev() {
            at = hint(self.fill_non_inclusive(k, line, false, at));
        }
        at
    }

    /// A demand lookup of `line` for `bytes` bytes missed every level: memory serves it.
    #[inline(always)]
    fn read_memory(&mut self, line: u64, bytes: u64) {
        self.mem_reads += 1;
        self.mem_bytes += bytes;
        if let Some(o) = &mut self.outflow {
            o.push(LineEvent::demand(line, bytes));
        }
    }

    /// A dirty `line` leaves the last level for memory.
    #[inline(always)]
    fn write_to_memory(&mut self, line: u64) {
        self.mem_writebacks += 1;
        if let Some(o) = &mut self.outflow {
            o.push(LineEvent::write_back(line));
        }
    }

    /// The configuration this hierarchy was built from.
    pub fn config(&self) -> &HierarchyConfig {
        &self.cfg
    }

    /// Simulates one program access. An access that straddles line boundaries is split
    /// into one line access per line touched, each carrying the bytes inside its line.
    /// A zero-size access touches the line of `addr` and carries no bytes; an access that
    /// would run past the top of the address space stops at byte `u64::MAX`.
    #[inline(always)]
    pub fn access(&mut self, a: Access) {
        let off = a.addr & self.line_mask;
        if off + u64::from(a.size) <= self.line_mask + 1 {
            self.access_line(a.addr >> self.line_shift, u64::from(a.size), a.is_write);
        } else {
            self.access_split(a);
        }
    }

    /// Simulates the accesses of `batch` in order. Faster than calling
    /// [`Hierarchy::access`] in a loop: runs of fast-path hits (the last line, or a line
    /// whose L1 slot the memo remembers) go through a tight loop whose counters and
    /// last-line state stay in registers.
    pub fn access_batch<A: IntoAccess>(&mut self, batch: &[A]) {
        let (n, bytes) = batch_totals(batch);
        self.access_batch_with_totals(batch, n, bytes);
    }

    /// [`Hierarchy::access_batch`] given the batch's accesses and bytes
    /// ([`batch_totals`]), which several hierarchies fed the same batch can share.
    pub(crate) fn access_batch_with_totals<A: IntoAccess>(
        &mut self,
        batch: &[A],
        n: u64,
        bytes: u64,
    ) {
        // Every access counts as a fast-path L1 hit up front; one that leaves the fast
        // path is taken back out before the slower path counts it. The fast loop then
        // keeps no counters.
        self.mru_hits += n;
        self.mru_bytes += bytes;
        (self.ahead, self.ahead_victims) = (0, 0);
        let stamps = self.levels[0].uses_stamps();
        // 64-byte lines, the usual size, get a loop with the line geometry as constants.
        let line64 = self.line_shift == 6;
        let mut i = 0;
        while i < batch.len() {
            i = match (stamps, line64) {
                (true, true) => self.fast_run::<A, true, 6>(batch, i),
                (true, false) => self.fast_run::<A, true, 0>(batch, i),
                (false, true) => self.fast_run::<A, false, 6>(batch, i),
                (false, false) => self.fast_run::<A, false, 0>(batch, i),
            };
            if let Some(&item) = batch.get(i) {
                self.mru_hits -= item.count();
                self.mru_bytes -= item.bytes();
                let a = item.into_access();
                self.access(a);
                let more = item.count() - 1;
                if more > 0 {
                    self.repeat(a, more);
                }
                i += 1;
            }
        }
    }

    /// Takes the accesses of `batch` from `start` on until a split access (returns its
    /// index) or the end of the run. L1 hits the last-line filter or the memo places are
    /// taken in a tight loop that counts nothing (see [`Hierarchy::access_batch`]); another
    /// line goes to [`Hierarchy::locate`] and the loop goes on. `STAMPS`: L1 keeps LRU
    /// stamps (else tree pseudo-LRU bits). `SHIFT`: log2 of the line size when known at
    /// compile time, else 0.
    #[inline(always)]
    fn fast_run<A: IntoAccess, const STAMPS: bool, const SHIFT: u32>(
        &mut self,
        batch: &[A],
        start: usize,
    ) -> usize {
        let (shift, mask) = if SHIFT == 0 {
            (self.line_shift, self.line_mask)
        } else {
            (SHIFT, (1 << SHIFT) - 1)
        };
        let (mut mru, mut index, mut write) = (self.mru_line, self.mru_index, self.mru_write);
        let end = batch.len().min(start.saturating_add(RUN_MAX));
        // At most one L1 use per access: renumber now if the clock could wrap in this run.
        if STAMPS && u64::from(u32::MAX - self.levels[0].clock) <= (end - start) as u64 {
            self.levels[0].renumber_stamps();
        }
        let mut i = start;
        loop {
            let mut missed = false;
            {
                let memo = &*self.memo;
                let memo_shift = self.memo_shift;
                let l1 = &mut self.levels[0];
                // The stamp of the access at `i` is `base + i`.
                let base = l1.clock.wrapping_sub(i as u32);
                let depth = l1.plru_depth();
                let (stamps, plru, tags) = l1.fast_parts();
                while i < end {
                    let a = batch[i].into_access();
                    if (a.addr & mask) + u64::from(a.size) > mask + 1 {
                        break;
                    }
                    let line = a.addr >> shift;
                    if line != mru {
                        // Leaving the last line: store its pending dirty bit. (The memo and
                        // the last-line filter only hold L1 indices: in bounds.)
                        if write {
                            mark_dirty_tag(tags, index);
                            write = false;
                        }
                        let m = memo[memo_index(line, memo_shift)];
                        if m.line != line {
                            missed = true;
                            break;
                        }
                        if STAMPS {
                            *at_mut(stamps, m.index) = base.wrapping_add(i as u32);
                        } else {
                            plru_touch(
                                &mut plru[m.index >> depth],
                                m.index & ((1 << depth) - 1),
                                depth,
                            );
                        }
                        (mru, index) = (line, m.index);
                    }
                    write |= a.is_write;
                    i += 1;
                }
                if STAMPS {
                    l1.clock = base.wrapping_add(i as u32);
                }
            }
            if !missed {
                break;
            }
            // A line the memo does not place: its first access is an L1 hit found by a set
            // search or a miss (taken back out of the hits counted up front); the others
            // the record stands for hit the line now most recently used.
            let a = batch[i].into_access();
            let line = a.addr >> shift;
            // Lookahead: a stream that leaves the memo here often does so again soon (a
            // miss-bound stream: indirect accesses over a large array). The sets the
            // accesses up to LOOKAHEAD records on will search below L1 are fetched into the
            // host's caches now, so that their host-memory latency overlaps the simulation
            // of the accesses in between. Only after an L1 miss: a memo miss that hits L1
            // (a set search) says nothing of the levels below.
            if self.missing && self.lookahead {
                self.prefetch_ahead(batch, i, shift);
            }
            let (at, hit) = self.locate(line, u64::from(a.size));
            self.missing = !hit && !self.continues_stream(line);
            if !hit {
                self.mru_hits -= 1;
                self.mru_bytes -= u64::from(a.size);
            }
            (mru, index, write) = (line, at, a.is_write);
            i += 1;
        }
        (self.mru_line, self.mru_index, self.mru_write) = (mru, index, write);
        i
    }

    /// The lookahead of an access at `i` of `batch` that left the fast path after an L1
    /// miss that did not continue a stream. The records up to [`LOOKAHEAD`] further (each
    /// once per batch) whose line the memo does not place in L1 have the lower levels' sets
    /// of their line prefetched; those up to [`LOOKAHEAD`]` / 2` further, whose sets were
    /// asked for earlier and may have arrived, have the next level's tag of the line each
    /// level with hints would evict for them prefetched too (a dirty victim is written back
    /// there: see [`Hierarchy::prefetch_victims`]).
    #[inline(never)]
    fn prefetch_ahead<A: IntoAccess>(&mut self, batch: &[A], i: usize, shift: u32) {
        let last = batch.len() - 1;
        let end = last.min(i + LOOKAHEAD);
        let mut r = self.ahead.max(i + 1);
        while r <= end {
            let line = batch[r].into_access().addr >> shift;
            if self.memo[memo_index(line, self.memo_shift)].line != line {
                self.prefetch_below_l1(line);
            }
            r += 1;
        }
        self.ahead = self.ahead.max(r);
        let end = last.min(i + LOOKAHEAD / 2);
        let mut r = self.ahead_victims.max(i + 1);
        while r <= end {
            let line = batch[r].into_access().addr >> shift;
            if self.memo[memo_index(line, self.memo_shift)].line != line {
                self.prefetch_victims(line);
            }
            r += 1;
        }
        self.ahead_victims = self.ahead_victims.max(r);
    }

    /// Whether `line`, which just missed L1, follows one of the last [`STREAMS`] lines that
    /// missed it (a sequential stream, whose lower levels' sets come one after another: the
    /// host's own prefetchers serve them, and the lookahead would only cost); remembers it.
    #[inline(always)]
    fn continues_stream(&mut self, line: u64) -> bool {
        let seq = self.miss_lines.contains(&line.wrapping_sub(1));
        self.miss_lines[self.miss_next % STREAMS] = line;
        self.miss_next = self.miss_next.wrapping_add(1);
        seq
    }

    /// Prefetches, for each level below L1 that keeps hints, the next level's tag where the
    /// line that level would evict for `line` sits (see [`Level::victim_hint`]).
    #[inline(always)]
    fn prefetch_victims(&self, line: u64) {
        let n = self.levels.len();
        for k in 1..n.saturating_sub(1) {
            if let Some(h) = self.levels[k].victim_hint(line) {
                self.levels[k + 1].prefetch_index(h as usize);
            }
        }
    }

    /// Prefetches the sets of `line` in the levels below L1 (see [`Level::prefetch`]).
    #[inline(always)]
    fn prefetch_below_l1(&self, line: u64) {
        for lvl in &self.levels[1..] {
            lvl.prefetch(line);
        }
    }

    /// `n` more accesses like `a`, just simulated, inside its line: hits on the line it
    /// left most recently used. A split access (which a producer should not repeat) is
    /// simulated again instead.
    #[cold]
    fn repeat(&mut self, a: Access, n: u64) {
        if (a.addr & self.line_mask) + u64::from(a.size) > self.line_mask + 1 {
            for _ in 0..n {
                self.access_split(a);
            }
        } else {
            self.mru_hits += n;
            self.mru_bytes += n * u64::from(a.size);
            self.mru_write |= a.is_write;
        }
    }

    #[inline(always)]
    fn access_line(&mut self, line: u64, bytes: u64, write: bool) {
        if line == self.mru_line {
            self.mru_hits += 1;
            self.mru_bytes += bytes;
            self.mru_write |= write;
        } else {
            self.memo_path(line, bytes, write);
        }
    }

    #[inline(always)]
    fn memo_path(&mut self, line: u64, bytes: u64, write: bool) {
        self.flush_mru();
        let m = self.memo[memo_index(line, self.memo_shift)];
        if m.line == line {
            let l1 = &mut self.levels[0];
            l1.touch_index(m.index);
            l1.hits += 1;
            l1.bytes += bytes;
            // The memo entry is already right; only the last-line filter moves.
            self.mru_line = line;
            self.mru_index = m.index;
            self.mru_write = write;
        } else {
            self.slow_path(line, bytes, write);
        }
    }

    #[inline(never)]
    fn access_split(&mut self, a: Access) {
        // Inclusive last byte: an access that would run past the top of the address space
        // stops at its last byte (u64::MAX is counted; nothing wraps to address 0).
        let last_byte = a.addr.saturating_add(u64::from(a.size.max(1)) - 1);
        let first = a.addr >> self.line_shift;
        let last = last_byte >> self.line_shift;
        self.split_accesses += 1;
        self.extra_pieces += last - first;
        for line in first..=last {
            let lo = (line << self.line_shift).max(a.addr);
            let hi = ((line << self.line_shift) | self.line_mask).min(last_byte);
            self.access_line(line, hi - lo + 1, a.is_write);
        }
    }

    /// Writes the pending store of the fast path into L1's dirty bit.
    #[inline(always)]
    fn flush_mru(&mut self) {
        let write = std::mem::take(&mut self.mru_write);
        self.levels[0].or_dirty(self.mru_index, u8::from(write));
    }

    #[inline(never)]
    fn slow_path(&mut self, line: u64, bytes: u64, write: bool) {
        let (index, hit) = self.locate(line, bytes);
        if hit {
            let l1 = &mut self.levels[0];
            l1.hits += 1;
            l1.bytes += bytes;
        }
        self.mru_line = line;
        self.mru_index = index;
        self.mru_write = write;
    }

    /// Finds `line` in L1 by a set search, or brings it in: returns its L1 index and whether
    /// it was an L1 hit, and remembers it in the memo. Counts the L1 miss and what the lower
    /// levels do, not an L1 hit (the caller's).
    #[inline(never)]
    fn locate(&mut self, line: u64, bytes: u64) -> (usize, bool) {
        if self.cfg.inclusion == Inclusion::NonInclusive {
            self.locate_non_inclusive(line, bytes)
        } else {
            self.locate_other(line, bytes)
        }
    }

    /// [`Hierarchy::locate`] for a non-inclusive hierarchy, the common case, written for
    /// speed: each level's set is computed once, and a victim's write-back that its hint
    /// places costs no branch on whether it is dirty.
    #[inline(always)]
    fn locate_non_inclusive(&mut self, line: u64, bytes: u64) -> (usize, bool) {
        let memo = memo_index(line, self.memo_shift);
        let l1 = &mut self.levels[0];
        let (set, base) = l1.set_base(line);
        if let Some(w) = l1.find_way(set, base, line) {
            l1.touch_way(set, base + w, w);
            self.memo[memo] = Memo {
                line,
                index: base + w,
            };
            return (base + w, true);
        }
        l1.misses += 1;
        let at = self.serve_non_inclusive(1, line, bytes);
        let index = self.fill_non_inclusive(0, line, false, at);
        self.memo[memo] = Memo { line, index };
        (index, false)
    }

    /// Installs `line` into level `j` of a non-inclusive hierarchy, with dirty bit `dirty`
    /// and hint `below`, and writes a dirty victim back. Returns the line's index.
    #[inline(always)]
    fn fill_non_inclusive(&mut self, j: usize, line: u64, dirty: bool, below: u32) -> usize {
        let n = self.levels.len();
        let lvl = &mut self.levels[j];
        let (set, base) = lvl.set_base(line);
        let (index, victim, vdirty) = lvl.insert_at(set, base, line, dirty);
        lvl.fills += 1;
        // The victim's hint leaves with it; the new line's takes its place.
        let vhint = match lvl.hints.get_mut(index) {
            Some(h) => std::mem::replace(h, below),
            None => NO_HINT,
        };
        if victim != INVALID {
            lvl.evictions += 1;
            // (A tail's first level has no memo in use: its entries would only cost a
            // host-cache miss each.)
            if j == 0 && !self.tail {
                self.l1_dropped(victim);
            }
            // A clean victim just leaves. A dirty one goes to the next level, first where
            // its hint says (the next level's tag is checked: it is read only for a dirty
            // victim, which the host may have to fetch from far).
            if vdirty != 0 {
                self.levels[j].writebacks += 1;
                if j + 1 == n {
                    self.write_to_memory(victim);
                } else if self.levels[j + 1].holds(vhint as usize, victim) {
                    self.levels[j + 1].set_dirty(vhint as usize);
                } else {
                    self.write_back_search(j + 1, victim);
                }
            }
        }
        index
    }

    /// A dirty line leaves level `k - 1` of a non-inclusive hierarchy for level `k`, where
    /// its hint did not find it.
    #[inline(never)]
    fn write_back_search(&mut self, k: usize, line: u64) {
        if !self.levels[k].mark_dirty(line) {
            self.fill_non_inclusive(k, line, true, NO_HINT);
        }
    }

    /// [`Hierarchy::locate`] for the inclusive and exclusive policies.
    fn locate_other(&mut self, line: u64, bytes: u64) -> (usize, bool) {
        let n = self.levels.len();
        let exclusive = self.cfg.inclusion == Inclusion::Exclusive;
        if let Some(slot) = self.levels[0].lookup(line) {
            self.memo[memo_index(line, self.memo_shift)] = Memo {
                line,
                index: slot.index,
            };
            return (slot.index, true);
        }
        self.levels[0].misses += 1;
        let mut served = n;
        let mut dirty = false;
        // Where the line sits in level `served`.
        let mut at = NO_HINT;
        for i in 1..n {
            let lvl = &mut self.levels[i];
            let hit = if exclusive {
                lvl.invalidate(line).map(|d| dirty = d).is_some()
            } else {
                lvl.lookup(line).map(|s| at = hint(s.index)).is_some()
            };
            if hit {
                lvl.hits += 1;
                lvl.bytes += bytes;
                served = i;
                break;
            }
            lvl.misses += 1;
        }
        if served == n {
            self.mem_reads += 1;
            self.mem_bytes += bytes;
        }
        let index = if exclusive {
            self.fill_exclusive(line, dirty)
        } else {
            for j in (1..served).rev() {
                at = hint(self.fill(j, line, false, at));
            }
            self.fill(0, line, false, at)
        };
        self.memo[memo_index(line, self.memo_shift)] = Memo { line, index };
        (index, false)
    }

    /// L1 no longer holds `line`: forgets its memo entry.
    #[inline(always)]
    fn l1_dropped(&mut self, line: u64) {
        let m = &mut self.memo[memo_index(line, self.memo_shift)];
        if m.line == line {
            m.line = NO_LINE;
        }
    }

    /// Installs `line` into level `j` (non-exclusive policies) and handles the victim;
    /// `below` is where the line sits in level `j + 1` (or [`NO_HINT`]). Returns the line's
    /// index in level `j`.
    #[inline(always)]
    fn fill(&mut self, j: usize, line: u64, dirty: bool, below: u32) -> usize {
        let inclusive = self.cfg.inclusion == Inclusion::Inclusive;
        let lvl = &mut self.levels[j];
        let (slot, victim) = lvl.insert(line, dirty);
        lvl.fills += 1;
        // The victim's hint leaves with it; the new line's takes its place.
        let vhint = match lvl.hints.get_mut(slot.index) {
            Some(h) => std::mem::replace(h, below),
            None => NO_HINT,
        };
        if let Some(v) = victim {
            lvl.evictions += 1;
            if j == 0 {
                self.l1_dropped(v >> 1);
            }
            // Clean victims of a non-inclusive hierarchy, the common case, just leave.
            if v & 1 == 1 || inclusive {
                self.evict(j, v, vhint);
            }
        }
        slot.index
    }

    /// Back-invalidates (inclusive) and writes back (dirty) a victim `v` of level `j`, whose
    /// hint to level `j + 1` is `below`.
    #[inline(never)]
    fn evict(&mut self, j: usize, v: u64, below: u32) {
        let vline = v >> 1;
        let mut vdirty = v & 1 == 1;
        if self.cfg.inclusion == Inclusion::Inclusive {
            for k in 0..j {
                if let Some(d) = self.levels[k].invalidate(vline) {
                    vdirty |= d;
                    if k == 0 {
                        self.l1_dropped(vline);
                    }
                }
            }
        }
        if let Some(log) = &mut self.evict_log {
            log.push((j, vline, vdirty));
        }
        if vdirty {
            self.levels[j].writebacks += 1;
            self.write_back(j + 1, vline, below);
        }
    }

    /// A dirty line arrives at level `k` (or memory when `k` is past the last level); `at`
    /// is where it may sit there.
    fn write_back(&mut self, k: usize, line: u64, at: u32) {
        if k == self.levels.len() {
            self.write_to_memory(line);
            return;
        }
        let lvl = &mut self.levels[k];
        if lvl.holds(at as usize, line) {
            lvl.set_dirty(at as usize);
        } else if !lvl.mark_dirty(line) {
            self.fill(k, line, true, NO_HINT);
        }
    }

    /// Installs `line` into L1 and pushes the victims down (exclusive policy).
    fn fill_exclusive(&mut self, line: u64, dirty: bool) -> usize {
        let n = self.levels.len();
        let (slot, mut victim) = self.levels[0].insert(line, dirty);
        self.levels[0].fills += 1;
        if let Some(v) = victim {
            self.l1_dropped(v >> 1);
        }
        let mut j = 0;
        while let Some(v) = victim {
            let vdirty = v & 1 == 1;
            self.levels[j].evictions += 1;
            if vdirty {
                self.levels[j].writebacks += 1;
            }
            j += 1;
            if j == n {
                if vdirty {
                    self.mem_writebacks += 1;
                }
                break;
            }
            let (_, next) = self.levels[j].insert(v >> 1, vdirty);
            self.levels[j].fills += 1;
            victim = next;
        }
        slot.index
    }

    /// Swaps level `k` with `other` (the same level of another core or group of cores, in
    /// a node simulator); level 0 goes with `l1`, its memo and last-line filter.
    pub(crate) fn swap_level(&mut self, k: usize, other: &mut Level, l1: Option<&mut L1State>) {
        if k == 0 {
            // The pending store of the fast path belongs to the L1 leaving.
            self.flush_mru();
            if let Some(st) = l1 {
                std::mem::swap(&mut self.memo, &mut st.memo);
                std::mem::swap(&mut self.mru_line, &mut st.mru_line);
                std::mem::swap(&mut self.mru_index, &mut st.mru_index);
                std::mem::swap(&mut self.extra_pieces, &mut st.extra_pieces);
            } else {
                self.memo.fill(NO_MEMO);
                self.mru_line = NO_LINE;
            }
        }
        std::mem::swap(&mut self.levels[k], other);
    }

    /// Logs every victim of the inclusive policy (see [`Hierarchy::take_evictions`]).
    pub(crate) fn log_evictions(&mut self) {
        if self.cfg.inclusion == Inclusion::Inclusive {
            self.evict_log = Some(Vec::new());
        }
    }

    /// The victims logged since the last call: (level, line, whether it left dirty).
    pub(crate) fn take_evictions(&mut self) -> Vec<(usize, u64, bool)> {
        self.evict_log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// A dirty copy of `line`, found outside this hierarchy above level `j`, left with
    /// the clean victim `line` of level `j`: one write-back from level `j`, as when the
    /// copy is found in this hierarchy.
    pub(crate) fn write_back_from(&mut self, j: usize, line: u64) {
        self.levels[j].writebacks += 1;
        self.write_back(j + 1, line, NO_HINT);
    }

    /// The line number of `addr`.
    pub(crate) fn line_of(&self, addr: u64) -> u64 {
        addr >> self.line_shift
    }

    /// Counters since construction or the last [`Hierarchy::flush_stats`] / reset.
    pub fn stats(&self) -> HierarchyStats {
        let levels: Vec<LevelStats> = self
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let (hits, bytes) = if i == 0 {
                    (l.hits + self.mru_hits, l.bytes + self.mru_bytes)
                } else {
                    (l.hits, l.bytes)
                };
                LevelStats {
                    name: l.name.clone(),
                    accesses: hits + l.misses,
                    hits,
                    misses: l.misses,
                    bytes_served: bytes,
                    fills: l.fills,
                    writebacks: l.writebacks,
                    evictions: l.evictions,
                }
            })
            .collect();
        let memory = LevelStats {
            name: "MM".to_string(),
            accesses: self.mem_reads,
            hits: self.mem_reads,
            misses: 0,
            bytes_served: self.mem_bytes,
            fills: 0,
            writebacks: self.mem_writebacks,
            evictions: 0,
        };
        let bytes = levels.iter().map(|l| l.bytes_served).sum::<u64>() + memory.bytes_served;
        let line_accesses = levels.first().map_or(0, |l| l.accesses);
        HierarchyStats {
            name: self.cfg.name.clone(),
            line_bytes: self.line_mask + 1,
            // Never more pieces than line accesses of the same L1 (they move together), but a
            // stream nobody vouches for must not make this wrap.
            accesses: line_accesses.saturating_sub(self.extra_pieces),
            split_accesses: self.split_accesses,
            bytes,
            levels,
            memory,
        }
    }

    /// Returns the counters and zeroes them; the cache contents stay (warm), so the next
    /// region of a program starts where this one left off.
    pub fn flush_stats(&mut self) -> HierarchyStats {
        let s = self.stats();
        self.reset_stats();
        s
    }

    /// Zeroes the counters, keeping the cache contents.
    pub fn reset_stats(&mut self) {
        for l in &mut self.levels {
            l.clear_counters();
        }
        self.mru_hits = 0;
        self.mru_bytes = 0;
        self.mem_reads = 0;
        self.mem_bytes = 0;
        self.mem_writebacks = 0;
        self.split_accesses = 0;
        self.extra_pieces = 0;
    }

    /// Empties every level (cold caches, dirty data dropped) and zeroes the counters.
    pub fn reset(&mut self) {
        for l in &mut self.levels {
            l.clear();
        }
        self.mru_line = NO_LINE;
        self.mru_write = false;
        self.memo.fill(NO_MEMO);
        self.reset_stats();
    }

    /// Whether level `level` (0 = L1) holds the line containing `addr`; `false` past the
    /// last level. Does not change any state.
    pub fn contains(&self, level: usize, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        if level == 0 && line == self.mru_line {
            return true;
        }
        self.levels.get(level).is_some_and(|l| l.contains(line))
    }

    /// Whether level `level` holds the line containing `addr` dirty. Does not change state.
    pub fn is_dirty(&self, level: usize, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        if level == 0 && line == self.mru_line && self.mru_write {
            return true;
        }
        self.levels.get(level).is_some_and(|l| l.is_dirty(line))
    }

    /// Valid lines held by level `level` (0 = L1); 0 past the last level.
    pub fn valid_lines(&self, level: usize) -> usize {
        self.levels.get(level).map_or(0, Level::valid_lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CacheConfig, Replacement};
    use crate::{IntoAccess, PackedAccess};
    use proptest::prelude::*;

    impl Hierarchy {
        /// Panics unless every memo entry names the line its L1 entry holds, and the
        /// last-line filter points at its line.
        fn check_memo(&self) {
            let l1 = &self.levels[0];
            for (k, m) in self.memo.iter().enumerate() {
                if m.line != NO_LINE {
                    assert_eq!(
                        memo_index(m.line, self.memo_shift),
                        k,
                        "entry {k} is out of place"
                    );
                    assert_eq!(l1.tag_at(m.index), m.line, "memo entry {k} is stale");
                }
            }
            if self.mru_line != NO_LINE {
                assert_eq!(l1.tag_at(self.mru_index), self.mru_line, "stale last line");
            }
        }
    }

    fn config() -> impl Strategy<Value = HierarchyConfig> {
        let level = (
            prop::sample::select(vec![1u64, 2, 3, 4, 8]),
            prop::sample::select(vec![1u32, 2, 4, 8, 3, 11, 16]),
            any::<bool>(),
        );
        (
            prop::collection::vec(level, 1..=3),
            prop::sample::select(vec![
                Inclusion::NonInclusive,
                Inclusion::Inclusive,
                Inclusion::Exclusive,
            ]),
        )
            .prop_map(|(levels, inclusion)| {
                let levels = levels
                    .into_iter()
                    .enumerate()
                    .map(|(i, (sets, ways, plru))| {
                        let r = if plru && ways.is_power_of_two() {
                            Replacement::TreePlru
                        } else {
                            Replacement::Lru
                        };
                        CacheConfig::new(
                            format!("L{}", i + 1),
                            sets * 64 * u64::from(ways),
                            64,
                            ways,
                        )
                        .with_replacement(r)
                    })
                    .collect();
                HierarchyConfig::new("t", levels).with_inclusion(inclusion)
            })
    }

    /// Lines from a few arrays a multiple of 4 KiB apart (they share sets and memo
    /// neighbourhoods), records of 1 to 8 accesses, some straddling a line.
    fn stream() -> impl Strategy<Value = Vec<PackedAccess>> {
        prop::collection::vec(
            (0u64..4, 0u64..3000, 0u32..4, 1u64..=8, any::<bool>()),
            0..600,
        )
        .prop_map(|v| {
            v.into_iter()
                .map(|(array, off, size_log, n, w)| {
                    let addr = 0x10_0000 + array * 0x4_1000 + off;
                    let p = PackedAccess::new(addr, 1 << size_log, w).expect("small address");
                    let line_end = (addr | 63) + 1;
                    // Repeats stay inside the line (the producer's guarantee).
                    if addr + n * (1 << size_log) <= line_end {
                        p.with_count(n).expect("1 to 8")
                    } else {
                        p
                    }
                })
                .collect()
        })
    }

    #[test]
    fn the_memo_is_sized_to_the_l1() {
        // Four entries per L1 line, from 16 to 2048.
        assert_eq!(memo_len(512), 2048);
        assert_eq!(memo_len(1024), 2048);
        assert_eq!(memo_len(8), 32);
        assert_eq!(memo_len(1), 16);
        assert_eq!(memo_len(u64::MAX), 2048);
        // One set of 8 ways (one class of 64 in set sampling): a 32-entry memo, still exact.
        let mut h = Hierarchy::new(HierarchyConfig::new(
            "one class",
            vec![
                CacheConfig::new("L1", 512, 64, 8),
                CacheConfig::new("L2", 4096, 64, 8),
            ],
        ))
        .expect("valid");
        assert_eq!(h.memo.len(), 32);
        for i in 0..5000u64 {
            let addr = ((i * 2_654_435_761) % (1 << 16)) & !7;
            h.access(Access {
                addr,
                size: 8,
                is_write: i % 3 == 0,
            });
            h.check_memo();
        }
        assert_eq!(h.stats().levels[0].accesses, 5000);
    }

    #[test]
    fn levels_above_the_last_keep_hints_and_large_ones_narrow_tags() {
        let cfg = HierarchyConfig::new(
            "cascadelake-like",
            vec![
                CacheConfig::new("L1", 32 << 10, 64, 8),
                CacheConfig::new("L2", 1 << 20, 64, 16),
                CacheConfig::new("L3", 37_486_592, 64, 11),
            ],
        );
        let h = Hierarchy::new(cfg).expect("valid");
        assert_eq!(h.levels[0].hints.len(), 512);
        assert_eq!(h.levels[1].hints.len(), 16 * 1024);
        assert!(h.levels[2].hints.is_empty());
        assert!(!h.levels[0].is_narrow());
        assert!(h.levels[1].is_narrow() && h.levels[2].is_narrow());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn memo_never_disagrees_with_the_tag_store(
            cfg in config(),
            s in stream(),
            cuts in prop::collection::vec(0usize..600, 0..4),
        ) {
            let mut h = Hierarchy::new(cfg).expect("valid geometry");
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(s.len())).collect();
            cuts.push(0);
            cuts.push(s.len());
            cuts.sort_unstable();
            for w in cuts.windows(2) {
                h.access_batch(&s[w[0]..w[1]]);
                h.check_memo();
            }
            for x in s.iter().take(50) {
                h.access(x.into_access());
                h.check_memo();
            }
        }
    }
}
