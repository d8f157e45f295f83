//! hpcscope's QEMU TCG plugin: characterizes a binary by emulation.
//!
//! Loaded by `qemu-x86_64` or `qemu-aarch64` (plugin API v1, QEMU 6.0 and later):
//!
//! ```text
//! qemu-aarch64 -cpu max,sve-default-vector-length=64 \
//!     -plugin libhpcscope_qemu_plugin.so,out=counts.json,region=0x400b10-0x400b40 ./app
//! ```
//!
//! At translation time each instruction is decoded once and classified from the tables in
//! `data/` ([`isa`]); the static counts of the translation block (TB) are kept with a
//! counter of its own, which one inline `ADD_U64` per TB execution increments while the
//! guest has one thread, and an execution callback per vCPU (guest thread) once it has more
//! ([`vcpu`]). At exit the totals are the sum over TBs of executions x static counts, per
//! thread and per region ([`tally`]), written as JSON (see the README for the arguments and
//! the format). Bytes come from each instruction's memory operand, or from QEMU's access
//! reports where the encoding cannot tell ([`isa::MemKind`]). With `mem=on` every access is
//! also streamed to a file descriptor for a cache simulator ([`memtrace`]), carrying the same
//! bytes as the counts. `region=` restricts counting to address ranges (functions without
//! callees); `scope=` to the time a function runs, callees included ([`scope`]).
//!
//! Build: `cargo build -p hpcscope-qemu-plugin --release` gives
//! `target/release/libhpcscope_qemu_plugin.so`.
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]

pub mod api;
pub mod args;
pub mod elf;
pub mod fork;
pub mod isa;
pub mod memtrace;
pub mod report;
pub mod scope;
pub mod tally;
pub mod vcpu;

#[cfg(not(test))]
mod glue;
