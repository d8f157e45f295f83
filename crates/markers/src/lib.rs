//! Region markers: count events per named region and per thread.
//!
//! Programs mark regions with `hpcscope_region_start("name")` / `hpcscope_region_stop("name")`
//! (C, header `include/hpcscope_markers.h`) or [`start`] / [`stop`] / [`region`] (Rust).
//! Regions nest and are per thread. Nothing is counted unless the environment activates the
//! markers, as `hpcscope counters run --markers` does:
//!
//! - `HPCSCOPE_MARKERS=1` activates them;
//! - `HPCSCOPE_MARKERS_EVENTS` lists the events (comma-separated; default the software events
//!   `task-clock,page-faults,context-switches,cpu-migrations`; `none` for wall time and call
//!   counts only; see [`sys::EventSpec::parse`]);
//! - `HPCSCOPE_MARKERS_OUT` is the JSON file written at exit (`%p` is replaced by the pid).
//!
//! Inactive, a start/stop pair costs two relaxed atomic loads. Active, each start and stop
//! reads the thread's event group with one `read()` (`PERF_FORMAT_GROUP`) and the monotonic
//! clock. Events that cannot be opened (hardware events in a VM without a PMU) are left out
//! and reported in the output with the reason; unbalanced markers are reported and the other
//! regions kept.
// Functions of at most 150 lines (clippy.toml); the longer ones carry an allow, counted
// by crates/cli/tests/architecture.rs, whose ceiling only goes down.
#![warn(clippy::too_many_lines)]
#![deny(missing_docs)]

pub mod format;
pub mod likwid;
pub mod sys;

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_int};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use format::{EventError, MarkerOutput, RegionOut, ThreadOut};
use sys::{EventSpec, Group, MAX_GROUP, OpenOptions};

/// Environment variable that activates the markers.
pub const ENV_ACTIVE: &str = "HPCSCOPE_MARKERS";
/// Environment variable with the event list.
pub const ENV_EVENTS: &str = "HPCSCOPE_MARKERS_EVENTS";
/// Environment variable with the output file.
pub const ENV_OUT: &str = "HPCSCOPE_MARKERS_OUT";

/// Marker configuration.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Events to count (at most [`MAX_GROUP`]).
    pub events: Vec<EventSpec>,
    /// File written by [`finish`] (and at exit), if any.
    pub out: Option<std::path::PathBuf>,
}

impl Config {
    /// The configuration the environment asks for; `None` when the markers are not active.
    pub fn from_env() -> Option<Result<Config, String>> {
        let on = std::env::var(ENV_ACTIVE).ok()?;
        if on.is_empty() || on == "0" {
            return None;
        }
        let list = std::env::var(ENV_EVENTS).unwrap_or_default();
        let names: Vec<String> = if list.trim().is_empty() {
            sys::DEFAULT_SOFTWARE
                .iter()
                .map(|s| s.to_string())
                .collect()
        } else if list.trim() == "none" {
            // Wall time and call counts only.
            Vec::new()
        } else {
            list.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        };
        let mut events = Vec::new();
        for n in &names {
            match EventSpec::parse(n) {
                Ok(e) => events.push(e),
                Err(e) => return Some(Err(e)),
            }
        }
        if events.len() > MAX_GROUP {
            return Some(Err(format!(
                "{} events given, at most {MAX_GROUP} fit one group",
                events.len()
            )));
        }
        // A path is bytes: one that is not UTF-8 is kept as it is, not dropped.
        let out = std::env::var_os(ENV_OUT).map(|p| with_pid(&p, std::process::id()));
        Some(Ok(Config { events, out }))
    }
}

/// `path` with each `%p` replaced by `pid`, byte for byte.
fn with_pid(path: &std::ffi::OsStr, pid: u32) -> std::path::PathBuf {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let b = path.as_bytes();
    let mut out = Vec::with_capacity(b.len() + 8);
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"%p") {
            out.extend_from_slice(pid.to_string().as_bytes());
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    std::ffi::OsString::from_vec(out).into()
}

const UNINIT: u8 = 0;
const ACTIVE: u8 = 1;
const INACTIVE: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static CONFIG: OnceLock<Config> = OnceLock::new();
static THREADS: Mutex<Vec<Arc<Mutex<ThreadState>>>> = Mutex::new(Vec::new());
static GLOBAL_WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[derive(Debug, Default)]
struct RegionAcc {
    name: String,
    calls: u64,
    /// Time in ticks of the region clock (see [`RegionClock`]).
    time_ticks: u64,
    counts: [f64; MAX_GROUP],
    enabled_ns: u64,
    running_ns: u64,
}

#[derive(Debug)]
struct Frame {
    region: usize,
    t0: u64,
    v0: [u64; MAX_GROUP],
    en0: u64,
    run0: u64,
}

#[derive(Debug, Default)]
struct ThreadState {
    index: u64,
    tid: i64,
    group: Option<Group>,
    open_failed: bool,
    names: Vec<String>,
    failed: Vec<(String, String)>,
    regions: Vec<RegionAcc>,
    /// (name pointer, length) -> region index: avoids string compares on the hot path.
    cache: Vec<(usize, usize, usize)>,
    stack: Vec<Frame>,
    warnings: Vec<String>,
}

struct Local {
    state: Arc<Mutex<ThreadState>>,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// The clock of region times. Where the kernel itself keeps time with the TSC (its
/// clocksource is `tsc`: constant rate, synchronised across CPUs), regions read the TSC
/// (a few ns) instead of `clock_gettime` (about 20 ns in a VM); the ticks are converted at
/// output with the ratio of the TSC to `CLOCK_MONOTONIC` measured over the whole run, from
/// the start of the markers to the output.
struct RegionClock {
    tsc: bool,
    ticks0: u64,
    ns0: u64,
}

static CLOCK: OnceLock<RegionClock> = OnceLock::new();

fn region_clock() -> &'static RegionClock {
    CLOCK.get_or_init(|| {
        let tsc = cfg!(target_arch = "x86_64")
            && std::fs::read_to_string(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            )
            .is_ok_and(|c| c.trim() == "tsc");
        let mut c = RegionClock {
            tsc,
            ticks0: 0,
            ns0: now_ns(),
        };
        c.ticks0 = ticks(&c);
        c
    })
}

#[inline(always)]
fn ticks(c: &RegionClock) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if c.tsc {
        // SAFETY: RDTSC is available on every x86-64 CPU.
        return unsafe { std::arch::x86_64::_rdtsc() };
    }
    let _ = c;
    now_ns()
}

/// Nanoseconds per tick of [`RegionClock`], measured now over the run so far.
fn ns_per_tick() -> f64 {
    let c = region_clock();
    if !c.tsc {
        return 1.0;
    }
    let (dt, dn) = (
        ticks(c).saturating_sub(c.ticks0),
        now_ns().saturating_sub(c.ns0),
    );
    if dt == 0 || dn == 0 {
        return 1.0;
    }
    dn as f64 / dt as f64
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn gettid() -> i64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) }
}

extern "C" fn at_exit() {
    let _ = finish();
}

/// Activates the markers with an explicit configuration (instead of the environment).
/// Returns false if they were already initialised.
pub fn init_with(config: Config) -> bool {
    if CONFIG.set(config).is_err() {
        return false;
    }
    region_clock();
    STATE.store(ACTIVE, Ordering::Release);
    true
}

/// Initialises from the environment if not done yet; returns whether the markers are active.
/// Called by the first marker; programs may call it early (e.g. before spawning threads).
pub fn init() -> bool {
    match STATE.load(Ordering::Acquire) {
        ACTIVE => return true,
        INACTIVE => return false,
        _ => {}
    }
    match Config::from_env() {
        None => {
            STATE.store(INACTIVE, Ordering::Release);
            false
        }
        Some(Err(e)) => {
            eprintln!("hpcscope markers: {e}; markers disabled");
            STATE.store(INACTIVE, Ordering::Release);
            false
        }
        Some(Ok(c)) => {
            let has_out = c.out.is_some();
            if init_with(c) && has_out {
                // SAFETY: at_exit is an extern "C" fn without arguments, as atexit requires.
                unsafe {
                    libc::atexit(at_exit);
                }
            }
            STATE.load(Ordering::Acquire) == ACTIVE
        }
    }
}

#[inline]
fn active() -> bool {
    match STATE.load(Ordering::Relaxed) {
        ACTIVE => true,
        INACTIVE => false,
        _ => init(),
    }
}

fn with_state<R>(f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    LOCAL
        .try_with(|l| {
            let mut l = l.borrow_mut();
            if l.is_none() {
                let cfg = CONFIG.get()?;
                let mut threads = THREADS.lock().ok()?;
                let mut st = ThreadState {
                    index: threads.len() as u64,
                    tid: gettid(),
                    ..ThreadState::default()
                };
                // Opened disabled, then enabled by ioctl: a software event opened enabled
                // on the running thread may not count until the thread is next scheduled
                // (seen with page-faults on Linux 6.x), while an explicit enable installs it
                // at once.
                let opts = OpenOptions {
                    exclude_kernel: sys::must_exclude_kernel(),
                    disabled: true,
                    ..OpenOptions::default()
                };
                let group = if cfg.events.is_empty() {
                    Err(Vec::new())
                } else {
                    Group::open(&cfg.events, 0, -1, opts)
                };
                match group {
                    Ok(g) => {
                        if let Err(e) = g.enable() {
                            st.warnings
                                .push(format!("cannot enable the event group: {e}"));
                        }
                        st.names = g.names.clone();
                        st.failed = g.failed.clone();
                        st.group = Some(g);
                    }
                    Err(failed) => {
                        st.failed = failed;
                        st.open_failed = true;
                    }
                }
                let arc = Arc::new(Mutex::new(st));
                threads.push(arc.clone());
                *l = Some(Local { state: arc });
            }
            let local = l.as_ref()?;
            let mut g = local.state.lock().ok()?;
            Some(f(&mut g))
        })
        .ok()
        .flatten()
}

impl ThreadState {
    fn region_index(&mut self, ptr: usize, name: &[u8]) -> usize {
        for &(p, len, i) in &self.cache {
            if p == ptr && len == name.len() && self.regions[i].name.as_bytes() == name {
                return i;
            }
        }
        let i = match self.regions.iter().position(|r| r.name.as_bytes() == name) {
            Some(i) => i,
            None => {
                self.regions.push(RegionAcc {
                    name: String::from_utf8_lossy(name).into_owned(),
                    ..RegionAcc::default()
                });
                self.regions.len() - 1
            }
        };
        if self.cache.len() < 256 {
            self.cache.push((ptr, name.len(), i));
        }
        i
    }

    fn read(&self, v: &mut [u64; MAX_GROUP]) -> (u64, u64) {
        match &self.group {
            Some(g) => g.read_into(v).unwrap_or((0, 0)),
            None => (0, 0),
        }
    }

    fn start(&mut self, ptr: usize, name: &[u8]) {
        let region = self.region_index(ptr, name);
        let mut v0 = [0u64; MAX_GROUP];
        let (en0, run0) = self.read(&mut v0);
        let t0 = ticks(region_clock());
        self.stack.push(Frame {
            region,
            t0,
            v0,
            en0,
            run0,
        });
    }

    fn stop(&mut self, ptr: usize, name: &[u8]) {
        let t1 = ticks(region_clock());
        let mut v1 = [0u64; MAX_GROUP];
        let (en1, run1) = self.read(&mut v1);
        let region = self.region_index(ptr, name);
        let Some(pos) = self.stack.iter().rposition(|f| f.region == region) else {
            self.warnings.push(format!(
                "thread {}: stop of region '{}' without a matching start (ignored)",
                self.index,
                String::from_utf8_lossy(name)
            ));
            return;
        };
        // Regions started inside this one and not stopped: reported and dropped.
        while self.stack.len() > pos + 1 {
            let f = self.stack.pop().expect("len > pos + 1");
            let inner = self.regions[f.region].name.clone();
            self.warnings.push(format!(
                "thread {}: region '{inner}' was not stopped before region '{}' stopped (its open call is dropped)",
                self.index,
                String::from_utf8_lossy(name)
            ));
        }
        let f = self.stack.pop().expect("pos exists");
        let n = self.names.len().min(MAX_GROUP);
        let den = en1.saturating_sub(f.en0);
        let drun = run1.saturating_sub(f.run0);
        let acc = &mut self.regions[region];
        acc.calls += 1;
        acc.time_ticks += t1.saturating_sub(f.t0);
        acc.enabled_ns += den;
        acc.running_ns += drun;
        for ((c, v1), v0) in acc.counts.iter_mut().zip(&v1).zip(&f.v0).take(n) {
            let d = v1.saturating_sub(*v0) as f64;
            // Scale when the group was multiplexed during this interval.
            *c += if drun > 0 && drun < den {
                d * den as f64 / drun as f64
            } else {
                d
            };
        }
    }

    /// Zeroes the accumulated counts of region `name` in this thread (LIKWID's
    /// `likwid_markerResetRegion`); false when the region is unknown.
    fn reset(&mut self, name: &[u8]) -> bool {
        match self.regions.iter_mut().find(|r| r.name.as_bytes() == name) {
            Some(r) => {
                let name = std::mem::take(&mut r.name);
                *r = RegionAcc {
                    name,
                    ..RegionAcc::default()
                };
                true
            }
            None => false,
        }
    }

    /// Region `name` of this thread: its events' counts, time (s) and calls.
    fn region_values(&self, name: &[u8], ns_per_tick: f64) -> Option<(Vec<f64>, f64, u64)> {
        let r = self.regions.iter().find(|r| r.name.as_bytes() == name)?;
        let n = self.names.len().min(MAX_GROUP);
        Some((
            r.counts[..n].to_vec(),
            r.time_ticks as f64 * ns_per_tick * 1e-9,
            r.calls,
        ))
    }

    fn output(&self, ns_per_tick: f64) -> ThreadOut {
        let mut warnings = self.warnings.clone();
        for f in &self.stack {
            warnings.push(format!(
                "thread {}: region '{}' was started but never stopped (its open call is dropped)",
                self.index, self.regions[f.region].name
            ));
        }
        ThreadOut {
            thread: self.index,
            tid: self.tid,
            regions: self
                .regions
                .iter()
                .filter(|r| r.calls > 0)
                .map(|r| RegionOut {
                    name: r.name.clone(),
                    calls: r.calls,
                    time_ns: (r.time_ticks as f64 * ns_per_tick).round() as u64,
                    counts: r.counts[..self.names.len().min(MAX_GROUP)].to_vec(),
                    enabled_ns: r.enabled_ns,
                    running_ns: r.running_ns,
                })
                .collect(),
            warnings,
        }
    }
}

fn name_bytes(name: *const c_char) -> Option<&'static [u8]> {
    if name.is_null() {
        return None;
    }
    // SAFETY: the caller passes a NUL-terminated string that outlives the call (C API
    // contract in the header); we only use it during this call.
    Some(unsafe { CStr::from_ptr(name) }.to_bytes())
}

/// Starts region `name` in this thread (nestable).
#[inline]
pub fn start(name: &str) {
    if active() {
        with_state(|s| s.start(name.as_ptr() as usize, name.as_bytes()));
    }
}

/// Stops region `name` in this thread.
#[inline]
pub fn stop(name: &str) {
    if active() {
        with_state(|s| s.stop(name.as_ptr() as usize, name.as_bytes()));
    }
}

/// A region that stops when dropped.
#[must_use = "the region stops when this guard is dropped"]
pub struct RegionGuard {
    name: &'static str,
}

impl Drop for RegionGuard {
    fn drop(&mut self) {
        stop(self.name);
    }
}

/// Starts region `name` and returns a guard that stops it.
pub fn region(name: &'static str) -> RegionGuard {
    start(name);
    RegionGuard { name }
}

/// Whether the markers are counting.
pub fn is_active() -> bool {
    active()
}

/// Collects every thread's results so far (threads that exited included).
pub fn snapshot() -> Option<MarkerOutput> {
    let cfg = CONFIG.get()?;
    let scale = ns_per_tick();
    let threads = THREADS.lock().ok()?;
    let mut out = MarkerOutput {
        format: format::FORMAT.to_string(),
        version: format::VERSION,
        pid: std::process::id(),
        events: Vec::new(),
        event_errors: Vec::new(),
        threads: Vec::new(),
        warnings: GLOBAL_WARNINGS
            .lock()
            .map(|w| w.clone())
            .unwrap_or_default(),
    };
    for t in threads.iter() {
        let Ok(t) = t.lock() else { continue };
        if out.events.is_empty() && !t.names.is_empty() {
            out.events = t.names.clone();
        }
        for (e, why) in &t.failed {
            if !out.event_errors.iter().any(|x| &x.event == e) {
                out.event_errors.push(EventError {
                    event: e.clone(),
                    error: why.clone(),
                });
            }
        }
        out.threads.push(t.output(scale));
    }
    if out.events.is_empty() && out.event_errors.is_empty() {
        out.events = cfg.events.iter().map(|e| e.name.clone()).collect();
    }
    Some(out)
}

/// Collects the results and writes them to the configured file (once; later calls write
/// again with what was added since). Returns them.
pub fn finish() -> Option<MarkerOutput> {
    let out = snapshot()?;
    if let Some(path) = CONFIG.get().and_then(|c| c.out.clone()) {
        let text = serde_json::to_string_pretty(&out).unwrap_or_default();
        let tmp = path.with_extension("tmp");
        if std::fs::write(&tmp, text)
            .and_then(|_| std::fs::rename(&tmp, &path))
            .is_err()
        {
            eprintln!("hpcscope markers: cannot write {}", path.display());
        }
    }
    Some(out)
}

/// C: initialises from the environment; returns 1 when the markers count, 0 otherwise.
#[unsafe(no_mangle)]
pub extern "C" fn hpcscope_markers_init() -> c_int {
    c_int::from(init())
}

/// C: starts region `name` (a NUL-terminated string) in the calling thread.
#[unsafe(no_mangle)]
pub extern "C" fn hpcscope_region_start(name: *const c_char) {
    // The inactive path is a load and a compare: the counting work lives out of line so
    // that this function needs no stack frame.
    if STATE.load(Ordering::Relaxed) != INACTIVE {
        region_start_slow(name);
    }
}

#[inline(never)]
fn region_start_slow(name: *const c_char) {
    if active()
        && let Some(b) = name_bytes(name)
    {
        with_state(|s| s.start(name as usize, b));
    }
}

/// C: stops region `name` in the calling thread.
#[unsafe(no_mangle)]
pub extern "C" fn hpcscope_region_stop(name: *const c_char) {
    if STATE.load(Ordering::Relaxed) != INACTIVE {
        region_stop_slow(name);
    }
}

#[inline(never)]
fn region_stop_slow(name: *const c_char) {
    if active()
        && let Some(b) = name_bytes(name)
    {
        with_state(|s| s.stop(name as usize, b));
    }
}

/// C: writes the results now (they are also written at exit).
#[unsafe(no_mangle)]
pub extern "C" fn hpcscope_markers_close() {
    let _ = finish();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    /// `std::env::var` dropped an output path that is not UTF-8: the markers wrote nothing.
    #[test]
    fn an_output_path_that_is_not_utf8_is_kept() {
        let p = with_pid(std::ffi::OsStr::from_bytes(b"/tmp/caf\xe9/m-%p.json"), 42);
        assert_eq!(p.as_os_str().as_bytes(), b"/tmp/caf\xe9/m-42.json");
        assert_eq!(
            with_pid(std::ffi::OsStr::new("%p%p%"), 7),
            std::path::PathBuf::from("77%")
        );
    }
}
