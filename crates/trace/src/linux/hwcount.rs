//! Instructions and cycles of a launched command (and everything it forks), counted by the
//! hardware PMU when the machine has one: what eq. 3.12's instruction, IPC and frequency
//! scaling need. The counters are opened on the command before its `exec` (enabled by the
//! exec itself, inherited by its threads and children) and read once it has ended.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use hpcscope_host::perf::{
    FLAG_DISABLED, FLAG_ENABLE_ON_EXEC, FLAG_EXCLUDE_HV, FLAG_INHERIT, FORMAT_TOTAL_TIME_ENABLED,
    FORMAT_TOTAL_TIME_RUNNING, PERF_FLAG_FD_CLOEXEC, PerfEventAttr, TYPE_HARDWARE, perf_event_open,
};

use crate::report::HwCounts;

/// `PERF_COUNT_HW_CPU_CYCLES`, `PERF_COUNT_HW_INSTRUCTIONS`.
const EVENTS: [(u64, &str); 2] = [(0, "cycles"), (1, "instructions")];

/// The open counters of one command.
pub struct HwCounters {
    fds: Vec<OwnedFd>,
}

impl HwCounters {
    /// Opens cycles and instructions on process `pid` (stopped before its exec); the reason
    /// when the machine cannot count them.
    pub fn open(pid: u32) -> Result<HwCounters, String> {
        let mut fds = Vec::new();
        for (config, name) in EVENTS {
            let attr = PerfEventAttr {
                type_: TYPE_HARDWARE,
                size: std::mem::size_of::<PerfEventAttr>() as u32,
                config,
                read_format: FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING,
                flags: FLAG_DISABLED | FLAG_INHERIT | FLAG_ENABLE_ON_EXEC | FLAG_EXCLUDE_HV,
                ..PerfEventAttr::default()
            };
            let fd = perf_event_open(&attr, pid as libc::pid_t, -1, -1, PERF_FLAG_FD_CLOEXEC)
                .map_err(|e| {
                    format!(
                        "the hardware event `{name}` cannot be counted here ({e}): no hardware PMU (a virtual machine without one), or perf_event_paranoid forbids it; `hpcscope doctor` says which"
                    )
                })?;
            // SAFETY: a new descriptor nothing else owns.
            fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        Ok(HwCounters { fds })
    }

    /// The counts, scaled when the PMU was shared (multiplexed) during the run.
    pub fn read(&self) -> Result<HwCounts, String> {
        let mut v = [0f64; 2];
        let mut scaled = false;
        for (i, fd) in self.fds.iter().enumerate() {
            let mut buf = [0u64; 3];
            // SAFETY: reading 24 bytes (value, time enabled, time running) into `buf`.
            let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), 24) };
            if n != 24 {
                return Err(format!(
                    "reading the {} counter: {}",
                    EVENTS[i].1,
                    std::io::Error::last_os_error()
                ));
            }
            let [value, enabled, running] = buf;
            v[i] = if running > 0 && running < enabled {
                scaled = true;
                value as f64 * enabled as f64 / running as f64
            } else {
                value as f64
            };
        }
        Ok(HwCounts {
            cycles: v[0],
            instructions: v[1],
            scaled,
        })
    }
}
