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

#![deny(missing_docs)]

mod background;
mod config;
mod error;
mod hierarchy;
pub mod lackey;
mod level;
mod multi;
pub mod stats;

use serde::{Deserialize, Serialize};

pub use background::{BackgroundOptions, BackgroundReport, BackgroundSim, Segment};
pub use config::{CacheConfig, HierarchyConfig, Inclusion, Replacement};
pub use error::{BackgroundError, ConfigError, TraceError};
pub use hierarchy::Hierarchy;
pub use multi::MultiSim;
pub use stats::{HierarchyStats, LevelStats};

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
