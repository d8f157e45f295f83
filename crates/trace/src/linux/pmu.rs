//! Uprobes opened through the kernel's `uprobe` perf PMU directly, for what aya's uprobe
//! attach does not offer: the reference counter (`ref_ctr_offset`, Linux 4.20) with which
//! the kernel raises a USDT probe's semaphore in every process that maps the file, for as
//! long as the probe is attached, and lowers it again when the probe goes.

use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;

use hpcscope_host::perf::{PERF_FLAG_FD_CLOEXEC, PerfEventAttr, perf_event_open};

use crate::error::TraceError;

const PMU_DIR: &str = "/sys/bus/event_source/devices/uprobe";
/// `PERF_EVENT_IOC_SET_BPF` (`_IOW('$', 8, __u32)`).
const IOC_SET_BPF: libc::c_ulong = 0x4004_2408;
/// `PERF_EVENT_IOC_ENABLE`.
const IOC_ENABLE: libc::c_ulong = 0x2400;

/// The uprobe PMU's type number.
fn pmu_type() -> Result<u32, TraceError> {
    std::fs::read_to_string(format!("{PMU_DIR}/type"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| TraceError::Unsupported {
            what: "the uprobe perf PMU".into(),
            why: format!("{PMU_DIR}/type is missing (a kernel before 4.17 or without CONFIG_UPROBE_EVENTS); USDT probes need it"),
        })
}

/// The bit where the reference-counter offset starts in `config` (`config:32-63`), when this
/// kernel's uprobe PMU has one.
pub fn ref_ctr_shift() -> Option<u32> {
    let f = std::fs::read_to_string(format!("{PMU_DIR}/format/ref_ctr_offset")).ok()?;
    f.trim()
        .strip_prefix("config:")?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// Attaches the loaded uprobe program `prog` at `offset` in `path` for every process, with
/// the kernel raising the 16-bit semaphore at file offset `ref_ctr` while it is attached.
/// Closing the returned descriptor detaches it (and lowers the semaphore).
pub fn attach(
    prog: BorrowedFd<'_>,
    path: &Path,
    offset: u64,
    ref_ctr: Option<u64>,
    what: &str,
) -> Result<OwnedFd, TraceError> {
    let ty = pmu_type()?;
    let mut config = 0u64;
    if let Some(off) = ref_ctr {
        let Some(shift) = ref_ctr_shift() else {
            return Err(TraceError::Unsupported {
                what: format!("{what} (guarded by a semaphore)"),
                why: "the kernel's uprobe PMU has no ref_ctr_offset (Linux 4.20 and later have it), so the probe's semaphore cannot be raised and the program would never reach the probe; trace it on a newer kernel".into(),
            });
        };
        config = off << shift;
    }
    let cpath = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| TraceError::Invalid(format!("{}: a path with a NUL byte", path.display())))?;
    let attr = PerfEventAttr {
        type_: ty,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        config1: cpath.as_ptr() as u64,
        config2: offset,
        ..PerfEventAttr::default()
    };
    // Every process (pid -1) needs a CPU: the probe fires on any CPU all the same.
    let fd = perf_event_open(&attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC).map_err(|e| {
        let detail = format!(
            "{what}: opening a uprobe at offset {offset:#x} of {}{}: {e}",
            path.display(),
            ref_ctr
                .map(|r| format!(" with its semaphore at offset {r:#x}"))
                .unwrap_or_default()
        );
        match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => TraceError::NotPermitted { detail },
            Some(libc::EINVAL) if ref_ctr.is_some() => TraceError::Unsupported {
                what: format!("{what} (guarded by a semaphore)"),
                why: format!("the kernel refused to raise the semaphore ({detail}); another tracer may hold a uprobe at the same site with a different semaphore offset"),
            },
            _ => TraceError::Bpf {
                what: what.to_string(),
                detail,
            },
        }
    })?;
    // SAFETY: perf_event_open returned a new descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    for (req, arg, name) in [
        (
            IOC_SET_BPF,
            prog.as_raw_fd() as libc::c_ulong,
            "attaching the program",
        ),
        (IOC_ENABLE, 0, "enabling the probe"),
    ] {
        // SAFETY: ioctls on our own perf event descriptor with integer arguments.
        if unsafe { libc::ioctl(fd.as_raw_fd(), req, arg) } != 0 {
            return Err(TraceError::Bpf {
                what: what.to_string(),
                detail: format!(
                    "{name} at offset {offset:#x} of {}: {}",
                    path.display(),
                    std::io::Error::last_os_error()
                ),
            });
        }
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_kernel_describes_the_reference_counter_field() {
        // On kernels with the uprobe PMU (4.17+) and reference counters (4.20+) the format
        // file says `config:32-63`; elsewhere there is nothing to check.
        match super::ref_ctr_shift() {
            Some(s) => assert_eq!(s, 32),
            None => println!("skipping: no uprobe ref_ctr_offset on this kernel"),
        }
    }
}
