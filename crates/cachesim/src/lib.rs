//! A fast multi-level data-cache simulator.
//!
//! It feeds one stream of program accesses (address, size, load or store) to several cache
//! hierarchies at once, e.g. the machine a profile was taken on and every machine it is
//! projected to, and reports per level the accesses, hits, misses and *bytes served*: the
//! program bytes whose data that level provided. Those bytes are what a cache-aware roofline
//! needs: `B_L1 + B_L2 + ... + B_MM` equals all bytes loaded and stored. Line traffic
//! (fills, write-backs) is reported beside them.
//!
//! Model: set-associative levels with LRU or tree pseudo-LRU replacement, write-back and
//! write-allocate, non-inclusive, inclusive or exclusive between levels, any number of
//! levels, main memory after the last. All levels of one hierarchy share a line size; the
//! hierarchies of a [`MultiSim`] may differ in everything. Accesses that straddle a line
//! boundary are split into one access per line, each carrying the bytes inside its line
//! (see [`stats`] for the counting rules).
//!
//! - [`Hierarchy`]: one hierarchy, fed access by access or in batches.
//! - [`MultiSim`]: several hierarchies fed from one stream.
//! - [`NodeSim`]: a node's caches fed with several threads' accesses: private levels per
//!   core, shared levels per group of cores, threads placed on cores.
//! - [`SharedNodes`]: several nodes fed one stream, the first levels they have in common
//!   (private, non-inclusive) simulated once, every counter as if each node ran alone.
//! - [`BackgroundSim`]: a [`MultiSim`] on a worker thread behind a bounded buffer queue.
//! - [`lackey`]: reads valgrind lackey traces (used to validate against cachegrind).
//!
//! ```
//! use hpcscope_cachesim::{Access, CacheConfig, Hierarchy, HierarchyConfig, Inclusion};
//!
//! let spr = HierarchyConfig::new(
//!     "Sapphire Rapids core",
//!     vec![
//!         CacheConfig::new("L1d", 48 << 10, 64, 12),
//!         CacheConfig::new("L2", 2 << 20, 64, 16),
//!         CacheConfig::new("L3", 105 << 20, 64, 15),
//!     ],
//! )
//! .with_inclusion(Inclusion::NonInclusive);
//! let mut h = Hierarchy::new(spr)?;
//! h.access(Access::read(0x1000, 8));
//! h.access(Access::write(0x1008, 8));
//! let s = h.stats();
//! assert_eq!((s.levels[0].hits, s.memory.hits), (1, 1));
//! assert_eq!(s.bytes, 16);
//! # Ok::<(), hpcscope_cachesim::ConfigError>(())
//! ```
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]
#![deny(missing_docs)]

mod background;
mod config;
mod error;
mod hierarchy;
pub mod lackey;
mod level;
mod lines;
mod multi;
mod node;
mod shared;
pub mod stats;

use serde::{Deserialize, Serialize};

pub use background::{BackgroundOptions, BackgroundReport, BackgroundSim, Segment};
pub use config::{CacheConfig, HierarchyConfig, Inclusion, Replacement};
pub use error::{BackgroundError, ConfigError, TraceError};
pub use hierarchy::{Hierarchy, LineEvent};
pub use multi::MultiSim;
pub use node::{
    NodeConfig, NodeLevel, NodeSim, Placement, ThreadStats, join_parts, join_thread_parts,
};
pub use shared::SharedNodes;
pub use stats::{HierarchyStats, LevelStats};

/// What a batch may hold: [`Access`] or [`PackedAccess`].
pub trait IntoAccess: Copy {
    /// The access this item stands for (the first, when it stands for several).
    fn into_access(self) -> Access;
    /// How many accesses of this shape, all inside the first one's line, the item stands
    /// for (1 to 8); the ones after the first hit the line the first just used.
    #[inline(always)]
    fn count(self) -> u64 {
        1
    }
    /// Bytes of all the accesses the item stands for: `count() * size`.
    #[inline(always)]
    fn bytes(self) -> u64 {
        self.count() * u64::from(self.into_access().size)
    }
}

impl IntoAccess for Access {
    #[inline(always)]
    fn into_access(self) -> Access {
        self
    }
}

/// One program data access: `size` bytes at `addr`, a load or a store. 16 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(C)]
pub struct Access {
    /// Virtual address of the first byte.
    pub addr: u64,
    /// Bytes accessed.
    pub size: u32,
    /// Whether the access is a store.
    pub is_write: bool,
}

// The background simulator's buffers and the emulator's copies rely on this size.
const _: () = assert!(std::mem::size_of::<Access>() == 16);

impl Access {
    /// A load of `size` bytes at `addr`.
    #[inline(always)]
    pub const fn read(addr: u64, size: u32) -> Self {
        Self {
            addr,
            size,
            is_write: false,
        }
    }

    /// A store of `size` bytes at `addr`.
    #[inline(always)]
    pub const fn write(addr: u64, size: u32) -> Self {
        Self {
            addr,
            size,
            is_write: true,
        }
    }
}

/// An access packed into 8 bytes, the record of hpcscope's QEMU plugin stream (its layout is
/// `hpcscope_plugin_format`'s): bits 0-55 the address, bits 56-59 log2 of the size (1 to
/// 2^15 bytes), bits 60-62 repeats, bit 63 set for a store. A record with `r` repeats stands
/// for `r + 1` accesses of that size and direction inside one line (the producer guarantees
/// it for the smallest line size simulated), the first at the address. A batch of these is
/// simulated without first unpacking it into [`Access`] values.
///
/// ```
/// use hpcscope_cachesim::{Access, IntoAccess, PackedAccess};
///
/// let p = PackedAccess::new(0x7fff_1234, 8, true).unwrap();
/// assert_eq!(p.into_access(), Access::write(0x7fff_1234, 8));
/// assert_eq!(p.with_count(4).unwrap().count(), 4);
/// assert_eq!(PackedAccess::new(0x10, 12, false), None); // not a power of two
/// ```
pub use hpcscope_plugin_format::Record as PackedAccess;

impl IntoAccess for PackedAccess {
    #[inline(always)]
    fn into_access(self) -> Access {
        Access {
            addr: self.addr(),
            size: 1u32 << self.size_shift(),
            is_write: self.is_write(),
        }
    }

    #[inline(always)]
    fn count(self) -> u64 {
        PackedAccess::count(self)
    }

    #[inline(always)]
    fn bytes(self) -> u64 {
        PackedAccess::count(self) << self.size_shift()
    }
}
