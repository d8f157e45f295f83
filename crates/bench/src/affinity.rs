//! Pinning threads to CPUs, with the benchmarks' errors (the system calls are in
//! `hpcscope_host::topology`).

use crate::error::BenchError;

pub use hpcscope_host::topology::allowed_cpus;

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: u32) -> Result<(), BenchError> {
    if !hpcscope_host::topology::cpu_in_set_range(cpu) {
        return Err(BenchError::bad_input(
            "--cpus",
            format!("CPU {cpu} is beyond CPU_SETSIZE"),
            "give CPU numbers listed in /sys/devices/system/cpu/online",
        ));
    }
    hpcscope_host::topology::pin_current_thread(cpu).map_err(|e| BenchError::Environment {
        what: format!("cannot pin a thread to CPU {cpu}: {e}"),
        fix: "run on CPUs this process may use (see `taskset -p $$` or the container's cpuset), or choose them with --cpus".into(),
    })
}
