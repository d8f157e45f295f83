//! `perf_event_open(2)`, in one place for every crate: the attribute struct, event
//! specifications, event groups read with one `read()` (`PERF_FORMAT_GROUP` with enabled and
//! running times), and [`RingBuffer`], the one reader of the kernel's sample ring buffer.
//!
//! Raw system calls rather than a wrapper crate: a group read must not allocate, since the
//! region markers read the group at every start and stop.

use std::io;
use std::os::fd::RawFd;

/// `PERF_TYPE_HARDWARE`.
pub const TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_SOFTWARE`.
pub const TYPE_SOFTWARE: u32 = 1;
/// `PERF_TYPE_RAW`.
pub const TYPE_RAW: u32 = 4;

/// `PERF_COUNT_SW_CPU_CLOCK`.
pub const SW_CPU_CLOCK: u64 = 0;

/// `PERF_FORMAT_TOTAL_TIME_ENABLED`.
pub const FORMAT_TOTAL_TIME_ENABLED: u64 = 1;
/// `PERF_FORMAT_TOTAL_TIME_RUNNING`.
pub const FORMAT_TOTAL_TIME_RUNNING: u64 = 2;
/// `PERF_FORMAT_ID`.
pub const FORMAT_ID: u64 = 4;
/// `PERF_FORMAT_GROUP`.
pub const FORMAT_GROUP: u64 = 8;

/// `PERF_SAMPLE_IP`.
pub const SAMPLE_IP: u64 = 1 << 0;
/// `PERF_SAMPLE_TID`.
pub const SAMPLE_TID: u64 = 1 << 1;
/// `PERF_SAMPLE_TIME`.
pub const SAMPLE_TIME: u64 = 1 << 2;
/// `PERF_SAMPLE_READ`.
pub const SAMPLE_READ: u64 = 1 << 4;
/// `PERF_SAMPLE_IDENTIFIER`.
pub const SAMPLE_IDENTIFIER: u64 = 1 << 16;

/// `PERF_RECORD_MMAP`.
pub const RECORD_MMAP: u32 = 1;
/// `PERF_RECORD_LOST`.
pub const RECORD_LOST: u32 = 2;
/// `PERF_RECORD_SAMPLE`.
pub const RECORD_SAMPLE: u32 = 9;

/// Bit of `disabled` in [`PerfEventAttr::flags`].
pub const FLAG_DISABLED: u64 = 1 << 0;
/// Bit of `inherit`.
pub const FLAG_INHERIT: u64 = 1 << 1;
/// Bit of `exclude_kernel`.
pub const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
/// Bit of `exclude_hv`.
pub const FLAG_EXCLUDE_HV: u64 = 1 << 6;
/// Bit of `mmap` (PERF_RECORD_MMAP records of executable mappings).
pub const FLAG_MMAP: u64 = 1 << 8;
/// Bit of `enable_on_exec`.
pub const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;

/// `PERF_FLAG_FD_CLOEXEC`.
pub const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_RESET: libc::c_ulong = 0x2403;
const IOC_FLAG_GROUP: libc::c_ulong = 1;

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER5` (112 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PerfEventAttr {
    /// Event type.
    pub type_: u32,
    /// Size of this struct.
    pub size: u32,
    /// Type-specific configuration.
    pub config: u64,
    /// Sample period or frequency.
    pub sample_period: u64,
    /// Sample type.
    pub sample_type: u64,
    /// Read format.
    pub read_format: u64,
    /// The bit field (disabled, inherit, exclude_*, enable_on_exec, ...).
    pub flags: u64,
    /// Wakeup events.
    pub wakeup_events: u32,
    /// Breakpoint type.
    pub bp_type: u32,
    /// Extension of config.
    pub config1: u64,
    /// Extension of config1.
    pub config2: u64,
    /// Branch sample type.
    pub branch_sample_type: u64,
    /// User registers to sample.
    pub sample_regs_user: u64,
    /// User stack size to sample.
    pub sample_stack_user: u32,
    /// Clock id.
    pub clockid: i32,
    /// Interrupt registers to sample.
    pub sample_regs_intr: u64,
    /// AUX watermark.
    pub aux_watermark: u32,
    /// Max stack depth.
    pub sample_max_stack: u16,
    /// Reserved.
    pub reserved: u16,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 112);

/// One event to open: a name for reports and its `perf_event_attr` coordinates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSpec {
    /// Name as reported.
    pub name: String,
    /// `type`.
    pub type_: u32,
    /// `config`.
    pub config: u64,
    /// `config1`.
    pub config1: u64,
    /// `config2`.
    pub config2: u64,
}

const SOFTWARE: &[(&str, u64)] = &[
    ("cpu-clock", 0),
    ("task-clock", 1),
    ("page-faults", 2),
    ("faults", 2),
    ("context-switches", 3),
    ("cs", 3),
    ("cpu-migrations", 4),
    ("migrations", 4),
    ("minor-faults", 5),
    ("major-faults", 6),
];

const HARDWARE: &[(&str, u64)] = &[
    ("cycles", 0),
    ("cpu-cycles", 0),
    ("instructions", 1),
    ("cache-references", 2),
    ("cache-misses", 3),
    ("branches", 4),
    ("branch-instructions", 4),
    ("branch-misses", 5),
    ("bus-cycles", 6),
    ("stalled-cycles-frontend", 7),
    ("stalled-cycles-backend", 8),
    ("ref-cycles", 9),
];

/// The software events every Linux machine counts, in the markers' default order.
pub const DEFAULT_SOFTWARE: &[&str] = &[
    "task-clock",
    "page-faults",
    "context-switches",
    "cpu-migrations",
];

fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

impl EventSpec {
    /// Parses `task-clock`, `cycles` (perf generic names), `rC7D0` (raw, hex),
    /// `TYPE:CONFIG[:CONFIG1[:CONFIG2]]` (numbers), each optionally as `NAME=...`.
    pub fn parse(s: &str) -> Result<EventSpec, String> {
        let s = s.trim();
        let (name, body) = match s.split_once('=') {
            Some((n, b)) if !n.contains(':') => (n.trim().to_string(), b.trim()),
            _ => (s.to_string(), s),
        };
        let lower = body.to_ascii_lowercase();
        let mk = |type_, config| EventSpec {
            name: name.clone(),
            type_,
            config,
            config1: 0,
            config2: 0,
        };
        if let Some(&(_, c)) = SOFTWARE.iter().find(|(n, _)| *n == lower) {
            return Ok(mk(TYPE_SOFTWARE, c));
        }
        if let Some(&(_, c)) = HARDWARE.iter().find(|(n, _)| *n == lower) {
            return Ok(mk(TYPE_HARDWARE, c));
        }
        if let Some(hex) = lower.strip_prefix('r')
            && !hex.is_empty()
            && hex.chars().all(|c| c.is_ascii_hexdigit())
        {
            let c = u64::from_str_radix(hex, 16).map_err(|e| format!("{s}: {e}"))?;
            return Ok(mk(TYPE_RAW, c));
        }
        let parts: Vec<&str> = body.split(':').collect();
        if parts.len() >= 2 && parts.len() <= 4 {
            let nums: Option<Vec<u64>> = parts.iter().map(|p| parse_u64(p)).collect();
            if let Some(n) = nums {
                let t = u32::try_from(n[0]).map_err(|_| format!("{s}: type too large"))?;
                return Ok(EventSpec {
                    name,
                    type_: t,
                    config: n[1],
                    config1: n.get(2).copied().unwrap_or(0),
                    config2: n.get(3).copied().unwrap_or(0),
                });
            }
        }
        Err(format!(
            "unknown event '{s}': use a perf software or generic hardware name (task-clock, page-faults, context-switches, cpu-migrations, cycles, instructions, ...), rHEX for a raw event, or TYPE:CONFIG"
        ))
    }

    /// Whether this is a software event.
    pub fn is_software(&self) -> bool {
        self.type_ == TYPE_SOFTWARE
    }
}

/// How to open a group.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    /// Count children created after opening (threads and processes).
    pub inherit: bool,
    /// Start disabled and enable at the target's next exec.
    pub enable_on_exec: bool,
    /// Start disabled (enable with [`Group::enable`]).
    pub disabled: bool,
    /// Count user space only.
    pub exclude_kernel: bool,
}

/// A failed `perf_event_open`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenError {
    /// The event.
    pub event: String,
    /// `errno`.
    pub errno: i32,
}

impl OpenError {
    /// What the errno means for a counter.
    pub fn reason(&self) -> String {
        let what = match self.errno {
            libc::ENOENT => {
                "the kernel does not know this event on this CPU (no PMU, or an event the PMU lacks)"
            }
            libc::EOPNOTSUPP => {
                "not supported: the PMU lacks this event or feature (VMs usually expose no PMU)"
            }
            libc::EACCES | libc::EPERM => {
                "permission denied (perf_event_paranoid, or no CAP_PERFMON)"
            }
            libc::EINVAL => "invalid event encoding for this PMU",
            libc::ENODEV => "no such PMU on this machine",
            libc::EMFILE => "too many open files (raise ulimit -n)",
            libc::EBUSY => {
                "the counter is in use by another tool (e.g. an NMI watchdog or another profiler)"
            }
            _ => "perf_event_open failed",
        };
        format!("{what} [{}]", io::Error::from_raw_os_error(self.errno))
    }
}

/// The `perf_event_open` system call with an attribute struct built here; the returned
/// descriptor is the caller's to close.
pub fn perf_event_open(
    attr: &PerfEventAttr,
    pid: libc::pid_t,
    cpu: i32,
    group_fd: RawFd,
    flags: libc::c_ulong,
) -> io::Result<RawFd> {
    // SAFETY: attr is a valid, initialised perf_event_attr of the size it declares (its
    // `size` field); the kernel only reads it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid,
            cpu,
            group_fd,
            flags,
        )
    };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd as RawFd)
    }
}

/// Opens one event.
pub fn open_event(
    spec: &EventSpec,
    pid: libc::pid_t,
    cpu: i32,
    group_fd: RawFd,
    leader: bool,
    opts: OpenOptions,
) -> Result<RawFd, OpenError> {
    let mut attr = PerfEventAttr {
        type_: spec.type_,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: spec.config,
        config1: spec.config1,
        config2: spec.config2,
        read_format: FORMAT_GROUP | FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING,
        ..PerfEventAttr::default()
    };
    if leader && (opts.disabled || opts.enable_on_exec) {
        attr.flags |= FLAG_DISABLED;
    }
    if opts.inherit {
        attr.flags |= FLAG_INHERIT;
    }
    if leader && opts.enable_on_exec {
        attr.flags |= FLAG_ENABLE_ON_EXEC;
    }
    if opts.exclude_kernel {
        attr.flags |= FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV;
    }
    perf_event_open(&attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC).map_err(|e| OpenError {
        event: spec.name.clone(),
        errno: e.raw_os_error().unwrap_or(0),
    })
}

/// An open group: a leader and its members, read together.
#[derive(Debug)]
pub struct Group {
    fds: Vec<RawFd>,
    /// Names of the events that opened, in read order.
    pub names: Vec<String>,
    /// Events that failed to open, with the reason.
    pub failed: Vec<(String, String)>,
    buf: Vec<u64>,
}

impl Group {
    /// Opens the events as one group on `pid` (0 = this thread, or a process id) and `cpu`
    /// (-1 = any). Events that fail to open are left out and listed in [`Group::failed`];
    /// the group fails only if none opens.
    pub fn open(
        specs: &[EventSpec],
        pid: libc::pid_t,
        cpu: i32,
        opts: OpenOptions,
    ) -> Result<Group, Vec<(String, String)>> {
        let mut fds = Vec::new();
        let mut names = Vec::new();
        let mut failed = Vec::new();
        for s in specs {
            let leader = fds.is_empty();
            let group_fd = if leader { -1 } else { fds[0] };
            match open_event(s, pid, cpu, group_fd, leader, opts) {
                Ok(fd) => {
                    fds.push(fd);
                    names.push(s.name.clone());
                }
                Err(e) => failed.push((s.name.clone(), e.reason())),
            }
        }
        if fds.is_empty() {
            return Err(failed);
        }
        let n = fds.len();
        Ok(Group {
            fds,
            names,
            failed,
            buf: vec![0; 3 + n],
        })
    }

    /// Number of events in the group.
    pub fn len(&self) -> usize {
        self.fds.len()
    }

    /// Whether the group is empty (never true for an opened group).
    pub fn is_empty(&self) -> bool {
        self.fds.is_empty()
    }

    /// Reads the whole group with one `read()`: `[nr, enabled, running, v0, v1, ...]`.
    pub fn read_raw(&mut self) -> io::Result<&[u64]> {
        let bytes = self.buf.len() * 8;
        // SAFETY: buf is a live Vec<u64> of `bytes` bytes; read() writes at most that.
        let r = unsafe { libc::read(self.fds[0], self.buf.as_mut_ptr().cast(), bytes) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(&self.buf)
    }

    /// Reads the group into `out` (values in [`Group::names`] order); returns
    /// (enabled ns, running ns). Allocation-free.
    pub fn read_into(&self, out: &mut [u64]) -> io::Result<(u64, u64)> {
        let n = self.fds.len();
        let mut buf = [0u64; 3 + MAX_GROUP];
        let want = (3 + n.min(MAX_GROUP)) * 8;
        // SAFETY: buf is a stack array of at least `want` bytes; read() writes at most that.
        let r = unsafe { libc::read(self.fds[0], buf.as_mut_ptr().cast(), want) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        for (i, o) in out.iter_mut().enumerate().take(n.min(MAX_GROUP)) {
            *o = buf[3 + i];
        }
        Ok((buf[1], buf[2]))
    }

    fn ioctl(&self, req: libc::c_ulong) -> io::Result<()> {
        // SAFETY: fds[0] is an open perf event fd; these requests take an integer argument.
        let r = unsafe { libc::ioctl(self.fds[0], req as _, IOC_FLAG_GROUP) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Enables the group.
    pub fn enable(&self) -> io::Result<()> {
        self.ioctl(IOC_ENABLE)
    }

    /// Disables the group.
    pub fn disable(&self) -> io::Result<()> {
        self.ioctl(IOC_DISABLE)
    }

    /// Resets the counts to 0.
    pub fn reset(&self) -> io::Result<()> {
        self.ioctl(IOC_RESET)
    }
}

/// Largest group the allocation-free read supports.
pub const MAX_GROUP: usize = 16;

impl Drop for Group {
    fn drop(&mut self) {
        for fd in self.fds.drain(..) {
            // SAFETY: each fd was returned by perf_event_open and is closed once.
            unsafe {
                libc::close(fd);
            }
        }
    }
}

/// The kernel's uprobe PMU type (`/sys/bus/event_source/devices/uprobe/type`): a
/// `perf_event_open` of this type with `config1` a pointer to a file's path and `config2` an
/// offset in that file probes the instruction there (`config` 1: its function's return).
/// None without uprobe events in the kernel.
pub fn uprobe_type() -> Option<u32> {
    std::fs::read_to_string("/sys/bus/event_source/devices/uprobe/type")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `/proc/sys/kernel/perf_event_paranoid`, when readable.
pub fn paranoid() -> Option<i32> {
    paranoid_text().and_then(|s| s.parse().ok())
}

/// `/proc/sys/kernel/perf_event_paranoid` as the kernel wrote it (trimmed), when readable.
pub fn paranoid_text() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .map(|s| s.trim().to_string())
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    crate::facts::is_root()
}

/// Whether counting must exclude the kernel to be allowed (paranoid >= 2, not root).
pub fn must_exclude_kernel() -> bool {
    !is_root() && paranoid().is_some_and(|p| p >= 2)
}

/// The kernel's ring buffer of a sampling event, mapped (one metadata page and `2^n` data
/// pages), and read record by record. It does not own the event's descriptor.
pub struct RingBuffer {
    base: *mut u8,
    len: usize,
    page: usize,
    record: Vec<u8>,
}

// SAFETY: the mapping is owned by this value and only read through `&mut self`.
unsafe impl Send for RingBuffer {}

/// One record of a [`RingBuffer`]: its header type and its bytes (header included),
/// contiguous even where the record wraps around the end of the ring.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// `PERF_RECORD_*`.
    pub kind: u32,
    /// `misc` of the header.
    pub misc: u16,
    /// The whole record, header first.
    pub bytes: &'a [u8],
}

impl Record<'_> {
    /// The little-endian `u64` at byte `off` of the record (0 past its end).
    pub fn u64_at(&self, off: usize) -> u64 {
        self.bytes
            .get(off..off + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }

    /// The little-endian `u32` at byte `off` of the record (0 past its end).
    pub fn u32_at(&self, off: usize) -> u32 {
        self.bytes
            .get(off..off + 4)
            .map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
    }
}

impl RingBuffer {
    /// Maps the ring buffer of the event `fd` with `data_pages` data pages (a power of two).
    pub fn map(fd: RawFd, data_pages: usize) -> io::Result<RingBuffer> {
        if !data_pages.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the ring buffer needs a power of two of data pages",
            ));
        }
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = page * (1 + data_pages);
        // SAFETY: mapping a perf event's ring buffer as perf_event_open(2) documents.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(RingBuffer {
            base: p.cast(),
            len,
            page,
            record: Vec::new(),
        })
    }

    /// Calls `f` with every complete record in the ring, oldest first, and frees their
    /// space for the kernel.
    pub fn drain(&mut self, mut f: impl FnMut(Record<'_>)) {
        use std::sync::atomic::{AtomicU64, Ordering};
        // The metadata page: data_head at byte 1024, data_tail at 1032 (both u64). Head is
        // read with acquire semantics and tail written with release semantics, as
        // perf_event_open(2) says.
        // SAFETY: base points at the mapped metadata page, which outlives self.
        let (head, tail_ptr) = unsafe {
            let head_ptr = self.base.add(1024).cast::<AtomicU64>();
            (
                (*head_ptr).load(Ordering::Acquire),
                self.base.add(1032).cast::<AtomicU64>(),
            )
        };
        // SAFETY: as above.
        let mut tail = unsafe { (*tail_ptr).load(Ordering::Relaxed) };
        let size = (self.len - self.page) as u64;
        // SAFETY: the data area follows the metadata page within the mapping.
        let data = unsafe { self.base.add(self.page) };
        let byte = |off: u64| -> u8 {
            // SAFETY: offsets are reduced modulo the data area's size.
            unsafe { *data.add((off % size) as usize) }
        };
        while tail + 8 <= head {
            let hdr = u64::from_le_bytes(std::array::from_fn(|i| byte(tail + i as u64)));
            let rsize = hdr >> 48;
            if rsize < 8 || tail + rsize > head {
                break;
            }
            self.record.clear();
            self.record.extend((tail..tail + rsize).map(byte));
            f(Record {
                kind: hdr as u32,
                misc: (hdr >> 32) as u16,
                bytes: &self.record,
            });
            tail += rsize;
        }
        // SAFETY: as above.
        unsafe { (*tail_ptr).store(tail, Ordering::Release) };
    }
}

impl Drop for RingBuffer {
    fn drop(&mut self) {
        // SAFETY: unmapping what `map` mapped.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(EventSpec::parse("task-clock").unwrap().type_, TYPE_SOFTWARE);
        assert_eq!(EventSpec::parse("cycles").unwrap().type_, TYPE_HARDWARE);
        let r = EventSpec::parse("fp=rc701").unwrap();
        assert_eq!(
            (r.name.as_str(), r.type_, r.config),
            ("fp", TYPE_RAW, 0xc701)
        );
        let t = EventSpec::parse("x=4:0x1c7:3").unwrap();
        assert_eq!((t.type_, t.config, t.config1), (4, 0x1c7, 3));
        assert!(
            EventSpec::parse("bogus-event")
                .unwrap_err()
                .contains("unknown event")
        );
    }

    #[test]
    fn software_group_counts_for_real() {
        let specs: Vec<EventSpec> = DEFAULT_SOFTWARE
            .iter()
            .map(|s| EventSpec::parse(s).unwrap())
            .collect();
        let opts = OpenOptions {
            exclude_kernel: must_exclude_kernel(),
            ..OpenOptions::default()
        };
        let g = match Group::open(&specs, 0, -1, opts) {
            Ok(g) => g,
            Err(e) => {
                println!("skipping test - perf_event_open of software events failed: {e:?}");
                return;
            }
        };
        let mut a = [0u64; 4];
        let mut b = [0u64; 4];
        g.read_into(&mut a).unwrap();
        let v: Vec<u8> = vec![1; 4 << 20];
        std::hint::black_box(&v);
        let (en, run) = g.read_into(&mut b).unwrap();
        assert!(en > 0 && run > 0);
        assert!(b[0] > a[0], "task-clock advanced");
    }

    #[test]
    fn ring_buffer_reads_cpu_clock_samples_of_this_thread() {
        let attr = PerfEventAttr {
            type_: TYPE_SOFTWARE,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: SW_CPU_CLOCK,
            sample_period: 100_000,
            sample_type: SAMPLE_IP | SAMPLE_TID,
            flags: FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV,
            wakeup_events: 1 << 20,
            ..PerfEventAttr::default()
        };
        let fd = match perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC) {
            Ok(fd) => fd,
            Err(e) => {
                println!("skipping test - perf_event_open of cpu-clock failed: {e}");
                return;
            }
        };
        assert!(RingBuffer::map(fd, 3).is_err(), "not a power of two");
        let mut ring = RingBuffer::map(fd, 8).unwrap();
        let t0 = std::time::Instant::now();
        let mut x = 0u64;
        while t0.elapsed() < std::time::Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let mut samples = 0;
        let tid = unsafe { libc::gettid() } as u32;
        ring.drain(|r| {
            if r.kind == RECORD_SAMPLE {
                samples += 1;
                assert_ne!(r.u64_at(8), 0, "an instruction pointer");
                assert_eq!(r.u32_at(20), tid, "this thread's samples");
            }
        });
        // SAFETY: closing the descriptor opened above.
        unsafe { libc::close(fd) };
        assert!(samples > 10, "{samples} samples in 30 ms at 10 kHz");
    }
}
