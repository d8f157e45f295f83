//! Raw `perf_event_open(2)`: the attribute struct, event specifications and event groups,
//! from `hpcscope-host` (one home for the system call in every crate).

pub use hpcscope_host::perf::*;
