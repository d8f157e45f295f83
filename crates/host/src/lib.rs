//! hpcscope-host: what hpcscope knows about the machine it runs on, read in one place.
//!
//! * [`facts`]: CPU model, logical CPUs, kernel, host name, memory, frequency governor;
//! * [`fingerprint`]: the identity of a machine for the run history and for caches;
//! * [`tools`]: finding programs like a shell does, and the tools hpcscope drives (QEMU,
//!   its plugin), honouring the `HPCSCOPE_*` overrides;
//! * [`time`]: Unix time, RFC 3339 dates and the dates users type;
//! * [`perf`]: the `perf_event_open(2)` system call, event groups and the one reader of
//!   the kernel's sample ring buffer;
//! * [`hash`]: SHA-256 of bytes and files;
//! * [`dirs`]: where hpcscope keeps its cache;
//! * [`child`]: programs hpcscope starts die with it;
//! * [`topology`]: sockets, cores, caches, ISA extensions, and the CPUs this process may
//!   use (affinity, pinning, CPU lists).
//!
//! The bottom of the crate graph: it depends on no other hpcscope crate.
#![deny(missing_docs)]
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

pub mod child;
pub mod dirs;
pub mod elf;
pub mod facts;
pub mod fingerprint;
pub mod hash;
pub mod perf;
pub mod time;
pub mod tools;
pub mod topology;

pub use fingerprint::Fingerprint;
