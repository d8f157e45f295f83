//! Pinning threads to CPUs (`sched_setaffinity`).

use crate::error::BenchError;

/// CPUs this process may run on (`sched_getaffinity`), or `None` when unknown.
#[cfg(target_os = "linux")]
pub fn allowed_cpus() -> Option<Vec<u32>> {
    // SAFETY: cpu_set_t is plain data; the call fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        Some(
            (0..libc::CPU_SETSIZE as u32)
                .filter(|&c| libc::CPU_ISSET(c as usize, &set))
                .collect(),
        )
    }
}

/// CPUs this process may run on, or `None` when unknown.
#[cfg(not(target_os = "linux"))]
pub fn allowed_cpus() -> Option<Vec<u32>> {
    None
}

/// Pins the calling thread to `cpu`.
#[cfg(target_os = "linux")]
pub fn pin_current_thread(cpu: u32) -> Result<(), BenchError> {
    if cpu as usize >= libc::CPU_SETSIZE as usize {
        return Err(BenchError::bad_input(
            "--cpus",
            format!("CPU {cpu} is beyond CPU_SETSIZE"),
            "give CPU numbers listed in /sys/devices/system/cpu/online",
        ));
    }
    // SAFETY: cpu_set_t is plain data; `cpu` is below CPU_SETSIZE.
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        return Err(BenchError::Environment {
            what: format!("cannot pin a thread to CPU {cpu}: {e}"),
            fix: "run on CPUs this process may use (see `taskset -p $$` or the container's cpuset), or choose them with --cpus".into(),
        });
    }
    Ok(())
}

/// Pinning is not implemented on this OS: a no-op.
#[cfg(not(target_os = "linux"))]
pub fn pin_current_thread(_cpu: u32) -> Result<(), BenchError> {
    Ok(())
}
