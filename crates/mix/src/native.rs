//! Native runs timed with CPU-clock sampling, so the time of a region (a set of functions)
//! is measured rather than assumed: the share of `cpu-clock` samples whose instruction
//! pointer falls in the region, times the run's wall time.
//!
//! Uses a software event (it works in VMs without a PMU): `perf_event_open` on the child
//! with `inherit` (threads included; the kernel sends inherited events' samples to the
//! parent event's ring buffer), sample type IP, read from the mmap ring buffer while the
//! child runs. The events exist before the child does (it inherits them at fork) and start
//! at its exec (`enable_on_exec`): no sample is lost however short the program or loaded
//! the machine. The program's load address comes from the kernel's record of its
//! executable mapping (`PERF_RECORD_MMAP`), not from `/proc`, which a program that already
//! exited no longer has.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use hpcscope_host::perf::{self, RingBuffer};

/// Samples of one thread of a sampled run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadSamples {
    /// The thread's id (the kernel's TID; the main thread's is the process id).
    pub tid: u32,
    /// Its samples.
    pub samples: u64,
    /// Its samples in the region.
    pub in_region: u64,
}

/// Result of one sampled native run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// Wall time of the run, seconds.
    pub wall_s: f64,
    /// Samples taken.
    pub samples: u64,
    /// Samples in the region.
    pub in_region: u64,
    /// Samples the kernel reported lost.
    pub lost: u64,
    /// Whether the program exited with status 0.
    pub success: bool,
    /// The exit status code, or the signal that killed the program (then `code` is None).
    pub code: Option<i32>,
    /// The signal that ended the program, if one did.
    pub signal: Option<i32>,
    /// Whether sampling could be set up (false: only the wall time is known).
    pub sampled: bool,
    /// Sampling frequency, Hz.
    pub freq_hz: u64,
    /// Samples per thread that took any, by thread id (ascending: the kernel hands out ids
    /// in increasing order, so this is the order the threads started in).
    pub threads: Vec<ThreadSamples>,
    /// Whether the run reached its time limit and was killed (then `signal` is SIGKILL).
    pub timed_out: bool,
    /// With scopes ([`Scope`]): whether their entries and returns could be probed (uprobes)
    /// and none of their records was lost, so that the samples in the region are those
    /// taken while a thread was inside a scope.
    pub scopes_timed: bool,
    /// Whether the scopes' probes were removed during the run because they were hit more
    /// than [`MAX_SCOPE_HITS`] times (each hit traps into the kernel): then they are not
    /// timed.
    pub scopes_too_busy: bool,
}

/// Probe hits (entries and returns) after which a run's scope probes are removed: a call
/// (two hits) costs about 20 us (1,000,000 calls of a one-multiply function took 20.2 s
/// under the probes against 0.0048 s without), so a scope entered more often would take the
/// native runs minutes.
pub const MAX_SCOPE_HITS: usize = 100_000;

/// A function whose time is measured with its callees (`mix --scope`): the samples of a
/// thread between its entry and its return (uprobes on both; nesting and recursion counted
/// once) are in the region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// Offset of the function's entry in the program's file.
    pub file_offset: u64,
}

impl Sampled {
    /// CPU time spent in the region, seconds (samples in the region x the sampling period),
    /// when enough samples fell anywhere. CPU time rather than a share of the wall time:
    /// it does not grow when a loaded machine deschedules the program.
    pub fn region_s(&self, min_samples: u64) -> Option<f64> {
        (self.sampled && self.samples >= min_samples)
            .then(|| self.in_region as f64 / self.freq_hz as f64)
    }

    /// CPU time of each thread in the region, seconds (threads by id), under the same
    /// condition as [`Sampled::region_s`].
    pub fn thread_region_s(&self, min_samples: u64) -> Option<Vec<f64>> {
        (self.sampled && self.samples >= min_samples).then(|| {
            self.threads
                .iter()
                .map(|t| t.in_region as f64 / self.freq_hz as f64)
                .collect()
        })
    }
}

const DATA_PAGES: usize = 64; // 256 KiB ring: ~10,000 IP samples between two reads.

/// One per-CPU sampling event and its ring buffer.
struct Ring {
    /// The event; closed after the ring is unmapped (fields drop in order).
    ring: RingBuffer,
    _fd: OwnedFd,
}

impl Ring {
    /// `timed`: the samples carry their time too (after the TID), to place them against the
    /// scopes' entries and returns.
    fn open(pid: i32, cpu: i32, period_ns: u64, timed: bool) -> Option<Ring> {
        let attr = perf::PerfEventAttr {
            size: std::mem::size_of::<perf::PerfEventAttr>() as u32,
            type_: perf::TYPE_SOFTWARE,
            config: perf::SW_CPU_CLOCK,
            sample_period: period_ns,
            sample_type: perf::SAMPLE_IP
                | perf::SAMPLE_TID
                | if timed { perf::SAMPLE_TIME } else { 0 },
            flags: perf::FLAG_INHERIT
                | perf::FLAG_DISABLED
                | perf::FLAG_ENABLE_ON_EXEC
                | perf::FLAG_MMAP
                | perf::FLAG_EXCLUDE_KERNEL
                | perf::FLAG_EXCLUDE_HV,
            wakeup_events: 1 << 20,
            ..perf::PerfEventAttr::default()
        };
        let debug = |what: &str, e: &std::io::Error| {
            if std::env::var_os("HPCSCOPE_DEBUG").is_some() {
                eprintln!("{what}: {e}");
            }
        };
        let fd = perf::perf_event_open(&attr, pid, cpu, -1, perf::PERF_FLAG_FD_CLOEXEC)
            .map_err(|e| debug("perf_event_open", &e))
            .ok()?;
        // SAFETY: the kernel just returned this descriptor; it is owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let ring = RingBuffer::map(fd.as_raw_fd(), DATA_PAGES)
            .map_err(|e| debug("mmap", &e))
            .ok()?;
        Some(Ring { ring, _fd: fd })
    }

    /// Reads every complete record: sample (IP, TID)s into `ips` (and with their time into
    /// `timed`, when the event gives it), lost samples into `lost`, and executable mappings
    /// `(addr, pgoff, path)` of process `pid` into `maps`.
    fn drain(
        &mut self,
        pid: u32,
        ips: &mut HashMap<(u64, u32), u64>,
        mut timed: Option<&mut Vec<(u64, u32, u64)>>,
        lost: &mut u64,
        maps: &mut Vec<(u64, u64, String)>,
    ) {
        self.ring.drain(|r| match r.kind {
            // IP (u64), then pid and tid (u32 each), then the time (u64) when asked for.
            perf::RECORD_SAMPLE => {
                *ips.entry((r.u64_at(8), r.u32_at(20))).or_insert(0) += 1;
                if let Some(t) = timed.as_deref_mut() {
                    t.push((r.u64_at(24), r.u32_at(20), r.u64_at(8)));
                }
            }
            perf::RECORD_LOST => *lost += r.u64_at(16),
            // pid, tid (u32 each), addr, len, pgoff (u64 each), file name (NUL-padded).
            perf::RECORD_MMAP if r.u32_at(8) == pid => {
                let name: Vec<u8> = r.bytes[40.min(r.bytes.len())..]
                    .iter()
                    .copied()
                    .take_while(|&b| b != 0)
                    .collect();
                maps.push((
                    r.u64_at(16),
                    r.u64_at(32),
                    String::from_utf8_lossy(&name).into_owned(),
                ));
            }
            _ => {}
        });
    }
}

/// The entry or the return probe of one scope on one CPU, and its ring buffer.
struct Probe {
    ring: RingBuffer,
    _fd: OwnedFd,
    /// +1 at the entry, -1 at the return.
    step: i32,
}

impl Probe {
    /// The probe of the function at `offset` in file `path` (its entry, or its return when
    /// `ret`), on CPU `cpu`, for every process (the hits are told apart by their pid: a
    /// probe inherited by a child from this process was never hit).
    fn open(
        uprobe: u32,
        path: &std::ffi::CStr,
        offset: u64,
        ret: bool,
        cpu: i32,
    ) -> std::io::Result<Probe> {
        let attr = perf::PerfEventAttr {
            size: std::mem::size_of::<perf::PerfEventAttr>() as u32,
            type_: uprobe,
            config: u64::from(ret),
            config1: path.as_ptr() as u64,
            config2: offset,
            sample_period: 1,
            sample_type: perf::SAMPLE_TID | perf::SAMPLE_TIME,
            wakeup_events: 1 << 20,
            ..perf::PerfEventAttr::default()
        };
        let fd = perf::perf_event_open(&attr, -1, cpu, -1, perf::PERF_FLAG_FD_CLOEXEC)?;
        // SAFETY: the kernel just returned this descriptor; it is owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let ring = RingBuffer::map(fd.as_raw_fd(), PROBE_PAGES)?;
        Ok(Probe {
            ring,
            _fd: fd,
            step: if ret { -1 } else { 1 },
        })
    }

    /// Reads the hits of process `pid`'s tasks: (time, tid, step) into `hits`, lost ones
    /// into `lost`.
    fn drain(&mut self, pid: u32, hits: &mut Vec<(u64, u32, i32)>, lost: &mut u64) {
        let step = self.step;
        self.ring.drain(|r| match r.kind {
            // pid and tid (u32 each), then the time (u64).
            perf::RECORD_SAMPLE if r.u32_at(8) == pid => {
                hits.push((r.u64_at(16), r.u32_at(12), step));
            }
            perf::RECORD_LOST => *lost += r.u64_at(16),
            _ => {}
        });
    }
}

/// Data pages of a probe's ring: 64 KiB, about 2,000 hits between two reads (every 2 ms).
const PROBE_PAGES: usize = 16;

/// The intervals each thread spent inside a scope, from the probes' hits (time, tid, +1 at
/// an entry, -1 at a return): from the entry that takes a thread's depth from 0 to the
/// return that brings it back (nested and recursive calls inside). A thread still inside
/// at the end stays inside until `end`.
fn scope_intervals(mut hits: Vec<(u64, u32, i32)>, end: u64) -> HashMap<u32, Vec<(u64, u64)>> {
    hits.sort_unstable();
    let mut depth: HashMap<u32, (i32, u64)> = HashMap::new();
    let mut out: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    for (t, tid, step) in hits {
        let d = depth.entry(tid).or_insert((0, 0));
        if step > 0 {
            if d.0 == 0 {
                d.1 = t;
            }
            d.0 += 1;
        } else if d.0 > 0 {
            d.0 -= 1;
            if d.0 == 0 {
                out.entry(tid).or_default().push((d.1, t));
            }
        }
    }
    for (tid, (d, since)) in depth {
        if d > 0 {
            out.entry(tid).or_default().push((since, end));
        }
    }
    out
}

/// Load bias of `program` from the kernel's records of its executable mappings: the
/// mapping's address minus its file offset minus the lowest segment address (segments are
/// congruent: `p_vaddr - p_offset` is the lowest segment's address for all of them).
fn bias_from_mmaps(maps: &[(u64, u64, String)], program: &Path, lowest_vaddr: u64) -> Option<u64> {
    let want = std::fs::canonicalize(program).ok()?;
    maps.iter()
        .find(|(_, _, name)| Path::new(name) == want)
        .map(|(addr, pgoff, _)| addr.wrapping_sub(*pgoff).wrapping_sub(lowest_vaddr))
}

/// Load bias of `program` in process `pid`: start of its first mapping minus its lowest
/// segment address (0 for a non-PIE executable).
fn load_bias(pid: i32, program: &Path, lowest_vaddr: u64, pie: bool) -> Option<u64> {
    if !pie {
        return Some(0);
    }
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let want = std::fs::canonicalize(program).ok()?;
    for line in maps.lines() {
        let mut it = line.split_whitespace();
        let range = it.next()?;
        let (_perms, offset) = (it.next()?, it.next()?);
        let path = line.split_whitespace().nth(5);
        if path.map(Path::new) == Some(want.as_path()) && u64::from_str_radix(offset, 16).ok()? == 0
        {
            let start = u64::from_str_radix(range.split('-').next()?, 16).ok()?;
            return Some(start.wrapping_sub(lowest_vaddr));
        }
    }
    None
}

/// Runs `program` natively once, sampling its CPU clock at `freq_hz`, and counts the samples
/// that fall in `regions` (link-time ranges).
pub fn run(
    program: &Path,
    args: &[String],
    regions: &[(u64, u64)],
    lowest_vaddr: u64,
    pie: bool,
    freq_hz: u64,
) -> std::io::Result<Sampled> {
    run_with(
        program,
        args,
        &[],
        (regions, &[]),
        lowest_vaddr,
        pie,
        freq_hz,
        None,
        None,
    )
}

/// [`run`] with variables `env` added to the program's environment (`OMP_NUM_THREADS`...),
/// `scopes` whose time (callees included) is in the region too, and a time limit: a run
/// still going after `timeout` is killed (SIGKILL) and reported with [`Sampled::timed_out`].
#[allow(clippy::too_many_arguments)]
pub fn run_env(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    (regions, scopes): (&[(u64, u64)], &[Scope]),
    lowest_vaddr: u64,
    pie: bool,
    freq_hz: u64,
    timeout: Option<Duration>,
) -> std::io::Result<Sampled> {
    run_with(
        program,
        args,
        env,
        (regions, scopes),
        lowest_vaddr,
        pie,
        freq_hz,
        None,
        timeout,
    )
}

/// Runs `program` natively once, sampling its CPU clock at `freq_hz`, and returns the
/// samples per instruction address, as link-time addresses of the program (samples in
/// shared libraries land outside the program's address range; the caller filters them).
/// Empty when sampling could not be set up (`Sampled::sampled` says so).
pub fn ip_histogram(
    program: &Path,
    args: &[String],
    lowest_vaddr: u64,
    pie: bool,
    freq_hz: u64,
) -> std::io::Result<(Sampled, std::collections::BTreeMap<u64, u64>)> {
    let mut hist = std::collections::BTreeMap::new();
    let s = run_with(
        program,
        args,
        &[],
        (&[], &[]),
        lowest_vaddr,
        pie,
        freq_hz,
        Some(&mut hist),
        None,
    )?;
    Ok((s, hist))
}

#[allow(clippy::too_many_arguments)]
fn run_with(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    (regions, scopes): (&[(u64, u64)], &[Scope]),
    lowest_vaddr: u64,
    pie: bool,
    freq_hz: u64,
    hist: Option<&mut std::collections::BTreeMap<u64, u64>>,
    timeout: Option<Duration>,
) -> std::io::Result<Sampled> {
    // The events are opened on this thread, disabled, before the child exists: the child
    // inherits them at fork and the kernel enables its copies at its exec
    // (`enable_on_exec`). This thread never execs, so its own copies never count. One event
    // per CPU: the kernel refuses to map the buffer of an inherited per-task event, but
    // accepts per-CPU ones (as `perf record` does).
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    let ncpu = hpcscope_host::topology::possible_cpus()
        .unwrap_or_else(|| hpcscope_host::facts::logical_cpus() as usize);
    let timed = !scopes.is_empty();
    let mut rings: Vec<Ring> = (0..ncpu as i32)
        .filter_map(|c| Ring::open(me, c, 1_000_000_000 / freq_hz.max(1), timed))
        .collect();
    // The scopes' entry and return probes, per CPU as the sampling events (None: they could
    // not be set up, and the scopes are not timed).
    let path = std::fs::canonicalize(program)
        .ok()
        .and_then(|p| std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).ok());
    let mut probes: Option<Vec<Probe>> = match (timed, perf::uprobe_type(), &path) {
        (true, Some(u), Some(path)) => scopes
            .iter()
            .flat_map(|sc| [(sc, false), (sc, true)])
            .flat_map(|(sc, ret)| (0..ncpu as i32).map(move |c| (sc.file_offset, ret, c)))
            .map(|(off, ret, c)| Probe::open(u, path, off, ret, c))
            .collect::<std::io::Result<Vec<Probe>>>()
            .map_err(|e| {
                if std::env::var_os("HPCSCOPE_DEBUG").is_some() {
                    eprintln!("uprobe: {e}");
                }
            })
            .ok(),
        _ => None,
    };
    let mut timed_samples: Vec<(u64, u32, u64)> = Vec::new();
    let mut hits: Vec<(u64, u32, i32)> = Vec::new();
    let mut probe_lost = 0u64;
    let mut too_busy = false;
    let start = Instant::now();
    // The program dies with hpcscope (a Ctrl-C, `kill`, a scheduler's time limit).
    let mut child = hpcscope_host::child::die_with_parent(&mut Command::new(program))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let pid = child.id() as i32;
    let mut ips: HashMap<(u64, u32), u64> = HashMap::new();
    let mut lost = 0u64;
    let mut maps = Vec::new();
    let mut proc_bias = None;
    let mut timed_out = false;
    let status = loop {
        for r in &mut rings {
            let t = timed.then_some(&mut timed_samples);
            r.drain(pid as u32, &mut ips, t, &mut lost, &mut maps);
        }
        for p in probes.iter_mut().flatten() {
            p.drain(pid as u32, &mut hits, &mut probe_lost);
        }
        if hits.len() > MAX_SCOPE_HITS && probes.is_some() {
            // Closing the events removes the probes: the program runs at full speed again.
            probes = None;
            too_busy = true;
        }
        // The kernel's mapping records are the source of the load address; /proc is the
        // fallback while the program runs.
        if pie && proc_bias.is_none() && maps.is_empty() {
            proc_bias = load_bias(pid, program, lowest_vaddr, pie);
        }
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if !timed_out && timeout.is_some_and(|t| start.elapsed() > t) {
            // Nothing to save from a native run: it ends at once.
            timed_out = true;
            child.kill()?;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let wall_s = start.elapsed().as_secs_f64();
    for r in &mut rings {
        let t = timed.then_some(&mut timed_samples);
        r.drain(pid as u32, &mut ips, t, &mut lost, &mut maps);
    }
    for p in probes.iter_mut().flatten() {
        p.drain(pid as u32, &mut hits, &mut probe_lost);
    }
    if timed && std::env::var_os("HPCSCOPE_DEBUG").is_some() {
        eprintln!(
            "scopes: probes {}, {} hits ({probe_lost} lost), {} timed samples ({lost} lost)",
            probes.as_ref().map_or(0, Vec::len),
            hits.len(),
            timed_samples.len()
        );
    }
    // The samples taken while their thread was inside a scope, per (IP, TID).
    let scopes_timed = probes.take().is_some() && probe_lost == 0 && lost == 0;
    let mut in_scope: HashMap<(u64, u32), u64> = HashMap::new();
    if scopes_timed {
        let intervals = scope_intervals(std::mem::take(&mut hits), u64::MAX);
        for (t, tid, ip) in &timed_samples {
            if intervals
                .get(tid)
                .is_some_and(|v| v.iter().any(|(a, b)| t >= a && t < b))
            {
                *in_scope.entry((*ip, *tid)).or_insert(0) += 1;
            }
        }
    }
    let bias = if pie {
        bias_from_mmaps(&maps, program, lowest_vaddr).or(proc_bias)
    } else {
        Some(0)
    };
    let (mut samples, mut in_region) = (0u64, 0u64);
    let ranges: Vec<(u64, u64)> = match bias {
        Some(b) => regions
            .iter()
            .map(|(a, e)| (a.wrapping_add(b), e.wrapping_add(b)))
            .collect(),
        None => Vec::new(),
    };
    let mut hist = hist;
    let mut threads: std::collections::BTreeMap<u32, ThreadSamples> = Default::default();
    for (&(ip, tid), &n) in &ips {
        samples += n;
        let th = threads.entry(tid).or_insert(ThreadSamples {
            tid,
            samples: 0,
            in_region: 0,
        });
        th.samples += n;
        let k = if ranges.iter().any(|(a, e)| ip >= *a && ip < *e) {
            n
        } else {
            in_scope.get(&(ip, tid)).copied().unwrap_or(0)
        };
        in_region += k;
        th.in_region += k;
        if let (Some(h), Some(b)) = (hist.as_deref_mut(), bias) {
            *h.entry(ip.wrapping_sub(b)).or_insert(0) += n;
        }
    }
    Ok(Sampled {
        wall_s,
        samples,
        in_region,
        lost,
        success: status.success(),
        code: status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
        sampled: !rings.is_empty() && bias.is_some(),
        freq_hz: freq_hz.max(1),
        threads: threads.into_values().collect(),
        timed_out,
        scopes_timed,
        scopes_too_busy: too_busy,
    })
}

/// Where the samples of a native run fell, by function of the program.
#[derive(Debug, Clone)]
pub struct Hot {
    /// Samples in all.
    pub total: u64,
    /// (function, samples), most first.
    pub functions: Vec<(String, u64)>,
    /// Link-time address -> samples, in the binary.
    pub ips: std::collections::BTreeMap<u64, u64>,
    /// Whether the program exited with status 0 (its samples are used either way).
    pub success: bool,
}

/// Runs `binary` natively once under CPU-clock sampling at `hz` and attributes the samples
/// to its own functions (for `model kernel --hottest`).
pub fn hottest(binary: &Path, args: &[String], hz: u64) -> Result<Hot, crate::MixError> {
    use crate::MixError;
    let info = crate::ElfInfo::read(binary)?;
    if crate::Arch::host() != Some(info.arch) {
        return Err(MixError::Usage {
            message: format!(
                "--hottest runs the binary natively, and this {} binary does not run on this host",
                info.arch.name()
            ),
            fix: "give --function or --range".into(),
        });
    }
    // The file that was read, not a namesake on PATH.
    let run = std::path::absolute(binary).unwrap_or_else(|_| binary.to_path_buf());
    let (s, hist) = ip_histogram(&run, args, info.lowest_vaddr, info.pie, hz).map_err(|e| {
        MixError::Program {
            path: binary.display().to_string(),
            message: format!("cannot run it: {e}"),
            fix: "check that it is executable on this machine".into(),
        }
    })?;
    if !s.sampled {
        return Err(MixError::Missing {
            message: "CPU-clock sampling could not be set up (perf_event_open refused)".into(),
            fix: "run as root or lower /proc/sys/kernel/perf_event_paranoid, or give --function"
                .into(),
        });
    }
    let mut per_fn: std::collections::BTreeMap<String, u64> = Default::default();
    let mut ips = std::collections::BTreeMap::new();
    for (&ip, &n) in &hist {
        if let Some(f) = info.function_at(ip) {
            *per_fn.entry(f.name.clone()).or_insert(0) += n;
            ips.insert(ip, n);
        }
    }
    let total: u64 = hist.values().sum();
    let mut functions: Vec<(String, u64)> = per_fn.into_iter().collect();
    functions.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if functions.is_empty() {
        return Err(MixError::Program {
            path: binary.display().to_string(),
            message: format!(
                "none of the {total} samples fell in its own functions (its time is in shared libraries or the kernel, or the run was too short)"
            ),
            fix: "give --function, or a longer run".into(),
        });
    }
    Ok(Hot {
        total,
        functions,
        ips,
        success: s.success,
    })
}
