//! One emulation: QEMU with the hpcscope plugin, the memory-access stream read on another
//! thread and fed to the cache simulator as it arrives (never held in memory whole).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::sync::Arc;

use hpcscope_cachesim::{
    HierarchyStats, NodeConfig, NodeSim, PackedAccess, Placement, SharedNodes, ThreadStats,
};
use hpcscope_plugin_format::{
    Demux, Event, MAGIC, RING_MAGIC, RING_SLOT_RECORDS, ReadError, notice_parts,
};
use serde::Serialize;

use crate::elf::Arch;
use crate::error::MixError;
use crate::partition::Simulated;
use crate::sampling::{SampleMethod, SampleSpec, Sampler, SamplingReport};
use crate::setsample::SetSampler;

/// What the plugin writes at exit (`out=`), the fields mix reads: the plugin's report.
pub use hpcscope_plugin_format::report::{
    MemWidthCounts, PluginOutput, RegionCounts, StreamStats, TbCounts, ThreadCounts, Totals,
    WidthCounts,
};

/// One emulation to run.
#[derive(Debug, Clone)]
pub struct Request {
    /// QEMU binary.
    pub qemu: PathBuf,
    /// Plugin library.
    pub plugin: PathBuf,
    /// Program and arguments.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
    /// Architecture.
    pub arch: Arch,
    /// SVE vector length, bits (aarch64).
    pub sve_bits: Option<u32>,
    /// In-function regions (link-time ranges).
    pub regions: Vec<(u64, u64)>,
    /// Start/stop scopes, callees included (link-time ranges).
    pub scopes: Vec<(u64, u64)>,
    /// Nodes whose caches to simulate (empty: no memory stream).
    pub nodes: Vec<NodeConfig>,
    /// How the guest's threads are placed on each node's cores.
    pub placement: Placement,
    /// Variables set in the program's environment (QEMU passes its own to the guest).
    pub env: Vec<(String, String)>,
    /// Per-TB breakdown.
    pub tbs: bool,
    /// Time limit.
    pub timeout: Option<Duration>,
    /// Simulate the caches in sampled windows (None: every access).
    pub sample: Option<SampleSpec>,
    /// With set sampling, the plugin leaves the accesses to unsampled classes out of the
    /// stream (normally; `false` streams every access and the reader drops them, which
    /// gives the same result more slowly).
    pub plugin_gate: bool,
}

/// How the program ended.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// Exit status 0.
    Success,
    /// Non-zero exit status.
    Failed(i32),
    /// Killed by a signal (crash).
    Signal(i32),
    /// Stopped by mix at the time limit.
    TimedOut,
}

/// What one emulation produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Plugin counts (None when the plugin wrote nothing: QEMU could not start).
    pub counts: Option<PluginOutput>,
    /// Cache statistics of each node, all threads (same order as the request).
    pub caches: Vec<HierarchyStats>,
    /// Cache statistics of each node, per thread (same order).
    pub thread_caches: Vec<Vec<ThreadStats>>,
    /// Memory records read from the stream.
    pub records: u64,
    /// How the program ended.
    pub ending: Ending,
    /// Wall time of the emulation, seconds.
    pub wall_s: f64,
    /// Last lines the program and QEMU printed on standard error.
    pub stderr_tail: String,
    /// With a sampled simulation: what it measured and how sure it is (`caches` and
    /// `thread_caches` then hold the extrapolated counters).
    pub sampling: Option<SamplingReport>,
}

fn ranges(v: &[(u64, u64)]) -> String {
    v.iter()
        .map(|(a, b)| format!("0x{a:x}-0x{b:x}"))
        .collect::<Vec<_>>()
        .join("+")
}

/// How the memory stream travels from the plugin to the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// The records through a pipe (the plugin's `memfd=`).
    Pipe,
    /// The records in a shared ring, a notice per batch through the pipe (`memring=`);
    /// the default. Where the ring cannot be made (no `memfd_create`), the pipe.
    Ring,
}

impl Transport {
    /// `HPCSCOPE_MIX_STREAM=pipe` picks the pipe (to compare the two); otherwise the ring.
    pub fn from_env() -> Transport {
        match std::env::var("HPCSCOPE_MIX_STREAM").as_deref() {
            Ok("pipe") => Transport::Pipe,
            _ => Transport::Ring,
        }
    }
}

/// Environment variable that turns the records written by QEMU's translated code `on` or
/// `off` (default: wherever the emulator has them).
pub const MEMINLINE_ENV: &str = "HPCSCOPE_MEMINLINE";

/// Runs one emulation (the stream through the [`Transport`] `HPCSCOPE_MIX_STREAM` asks
/// for, the ring by default).
pub fn run(req: &Request) -> Result<Outcome, MixError> {
    run_via(req, Transport::from_env())
}

/// Runs one emulation, the memory stream through `transport`.
pub fn run_via(req: &Request, transport: Transport) -> Result<Outcome, MixError> {
    let dir = tempdir()?;
    let out_json = dir.join("counts.json");
    let mut plugin_args = format!("{},out={}", req.plugin.display(), out_json.display());
    if let Some(vl) = req.sve_bits {
        plugin_args.push_str(&format!(",vl={vl}"));
    }
    if !req.regions.is_empty() {
        plugin_args.push_str(&format!(",region={}", ranges(&req.regions)));
    }
    if !req.scopes.is_empty() {
        plugin_args.push_str(&format!(",scope={}", ranges(&req.scopes)));
    }
    if req.tbs {
        plugin_args.push_str(",tbs=on");
    }
    let mut pipe_fds = [-1i32; 2];
    let mut ring: Option<RingSetup> = None;
    let simulate = !req.nodes.is_empty();
    if simulate {
        // A plain pipe: the write end is inherited by QEMU (no close-on-exec), the read end
        // is ours alone.
        // SAFETY: pipe() fills the two descriptors; fcntl on our own descriptor.
        unsafe {
            if libc::pipe(pipe_fds.as_mut_ptr()) != 0 {
                return Err(MixError::Run(format!(
                    "cannot create a pipe: {}",
                    std::io::Error::last_os_error()
                )));
            }
            libc::fcntl(pipe_fds[0], libc::F_SETFD, libc::FD_CLOEXEC);
        }
        // Repeated accesses inside the smallest simulated line share a record.
        let line = req
            .nodes
            .iter()
            .filter_map(|h| h.levels.first().map(|l| l.cache.line_bytes))
            .min()
            .unwrap_or(64);
        plugin_args.push_str(&format!(",mem=on,memfd={},coalesce={line}", pipe_fds[1]));
        // `HPCSCOPE_MEMINLINE=off` keeps the plugin's callback per access where QEMU could
        // write the records itself (to compare the two; `on` insists on QEMU's records).
        if let Ok(v) = std::env::var(MEMINLINE_ENV)
            && (v == "on" || v == "off")
        {
            plugin_args.push_str(&format!(",meminline={v}"));
        }
        if transport == Transport::Ring {
            ring = RingSetup::new();
            if let Some(r) = &ring {
                plugin_args.push_str(&format!(",memring={}:{}", r.fd, r.token_read));
            }
        }
        if let Some(spec) = req.sample.filter(|s| s.method == SampleMethod::Sets)
            && req.plugin_gate
            && let Some(gate) = crate::setsample::plugin_gate(&spec, &req.nodes)
        {
            plugin_args.push_str(&format!(",sample={gate}"));
        }
    }
    let cpu = match (req.arch, req.sve_bits) {
        (Arch::Aarch64, Some(vl)) => format!("max,sve-default-vector-length={}", vl / 8),
        _ => "max".to_string(),
    };
    let stderr_path = dir.join("stderr");
    let stderr_file = File::create(&stderr_path)
        .map_err(|e| MixError::Run(format!("cannot create a temporary file: {e}")))?;
    let start = Instant::now();
    let mut cmd = Command::new(&req.qemu);
    // QEMU (and the program in it) dies with hpcscope: a Ctrl-C, `kill`, a scheduler's time
    // limit. This thread waits for it below, so it outlives the child.
    hpcscope_host::child::die_with_parent(&mut cmd);
    quiet_fixed_layout(&mut cmd);
    let guest_arena = req
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == ARENA_VAR)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var(ARENA_VAR).ok());
    let mut child = cmd
        .envs(req.env.iter().map(|(k, v)| (k, v)))
        .env(ARENA_VAR, "1")
        .args(guest_arena_args(guest_arena.as_deref()))
        .arg("-cpu")
        .arg(&cpu)
        .arg("-plugin")
        .arg(&plugin_args)
        .arg(&req.program)
        .args(&req.args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr_file)
        .spawn()
        .map_err(|e| MixError::Missing {
            message: format!("cannot start {}: {e}", req.qemu.display()),
            fix: "install qemu-user (apt-get install qemu-user)".into(),
        })?;
    let reader = if simulate {
        // SAFETY: closing our copy of the write end so EOF arrives when QEMU exits.
        unsafe { libc::close(pipe_fds[1]) };
        // SAFETY: the read end is a valid descriptor we own from here on.
        let file = unsafe { File::from_raw_fd(pipe_fds[0]) };
        // QEMU has its copies of the ring's descriptors: ours go (the mapping stays).
        let source = match ring.take() {
            Some(r) => Source::Ring(file, r.into_reader()),
            None => Source::Pipe(file),
        };
        let sims = req
            .nodes
            .iter()
            .map(|n| NodeSim::new(n.clone(), req.placement.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| MixError::Run(e.to_string()))?;
        // QEMU's vCPU thread keeps one CPU busy: leave it one.
        let sample = req.sample;
        Some(std::thread::spawn(move || {
            read_source(source, sims, 1, sample)
        }))
    } else {
        None
    };
    let ending = wait(&mut child, req.timeout)?;
    let wall_s = start.elapsed().as_secs_f64();
    let (nodes, records, sampled) = match reader {
        Some(h) => h
            .join()
            .map_err(|_| MixError::Run("the stream reader panicked".into()))??,
        None => (Vec::new(), 0, None),
    };
    let (caches, thread_caches, sampling) = match sampled {
        Some((est, report)) => {
            let (c, t) = est.into_iter().unzip();
            (c, t, Some(report))
        }
        None => (
            nodes.iter().map(Simulated::stats).collect(),
            nodes.iter().map(Simulated::thread_stats).collect(),
            None,
        ),
    };
    // The final counts, or else the plugin's last snapshot (written every 250 ms): QEMU 7.2
    // skips the plugins' exit callbacks when the guest dies of a signal.
    let partial_json = dir.join("counts.json.partial");
    let counts = match std::fs::read_to_string(&out_json)
        .or_else(|_| std::fs::read_to_string(&partial_json))
    {
        Ok(t) => Some(
            serde_json::from_str::<PluginOutput>(&t)
                .map_err(|e| MixError::Run(format!("the plugin's output is unreadable: {e}")))?,
        ),
        Err(_) => None,
    };
    let stderr_tail = tail(
        &std::fs::read_to_string(&stderr_path).unwrap_or_default(),
        12,
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Outcome {
        counts,
        caches,
        thread_caches,
        records,
        ending,
        wall_s,
        stderr_tail,
        sampling,
    })
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn tempdir() -> Result<PathBuf, MixError> {
    let base = std::env::temp_dir();
    sweep_stale(&base);
    for i in 0..1000u32 {
        let d = base.join(format!("hpcscope-mix-{}-{i}", std::process::id()));
        if std::fs::create_dir(&d).is_ok() {
            return Ok(d);
        }
    }
    Err(MixError::Run(format!(
        "cannot create a temporary directory in {}",
        base.display()
    )))
}

/// Removes the scratch directories of mix runs whose hpcscope is gone (killed with -9, or
/// the machine lost power): `hpcscope-mix-PID-N` in `base`, owned by this user, where no
/// process PID exists. A directory of a live process (or of a PID reused since) is kept.
/// Returns how many were removed.
fn sweep_stale(base: &Path) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(base) else {
        return 0;
    };
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("hpcscope-mix-"))
            .and_then(|r| r.split_once('-'))
            .filter(|(_, i)| i.parse::<u32>().is_ok())
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(md) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if !md.is_dir() || md.uid() != uid || pid <= 0 {
            continue;
        }
        // SAFETY: signal 0 only checks that the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone && std::fs::remove_dir_all(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

fn wait(child: &mut std::process::Child, timeout: Option<Duration>) -> Result<Ending, MixError> {
    let start = Instant::now();
    let mut sent_term = None::<Instant>;
    loop {
        match child.try_wait() {
            Ok(Some(st)) => {
                use std::os::unix::process::ExitStatusExt;
                if sent_term.is_some() {
                    return Ok(Ending::TimedOut);
                }
                return Ok(match (st.code(), st.signal()) {
                    (Some(0), _) => Ending::Success,
                    (Some(c), _) => Ending::Failed(c),
                    (None, Some(s)) => Ending::Signal(s),
                    (None, None) => Ending::Failed(-1),
                });
            }
            Ok(None) => {}
            Err(e) => return Err(MixError::Run(format!("waiting for QEMU: {e}"))),
        }
        if let Some(t) = timeout {
            match sent_term {
                None if start.elapsed() > t => {
                    // SIGTERM lets QEMU run the plugin's exit callback, which writes the
                    // counts so far.
                    // SAFETY: signalling our own child.
                    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                    sent_term = Some(Instant::now());
                }
                Some(s) if s.elapsed() > Duration::from_secs(5) => {
                    let _ = child.kill();
                }
                _ => {}
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A run of one thread's records in a buffer: (thread, start, end).
type Run = (u32, usize, usize);

/// Records of one thread that may wait for a thread behind it (2 MiB).
const PACE_BOUND: usize = 1 << 18;
/// A thread that sent nothing for this long is idle: nobody waits for it.
const PACE_IDLE: Duration = Duration::from_secs(1);

/// One thread of a [`Pacer`].
#[derive(Debug)]
struct Paced {
    /// Accesses of this thread fed to the simulator (those the plugin's gate left out
    /// included), from where it joined the others.
    clock: u64,
    /// Runs waiting for a thread behind this one, each with the accesses it stands for.
    queue: std::collections::VecDeque<(Vec<PackedAccess>, u64)>,
    /// Records waiting.
    queued: usize,
    /// Accesses the gate left out of the run that comes next (its batch's skip record).
    skipped: u64,
    last: Instant,
}

/// Accesses the records stand for (a coalesced record is `1 + repeats`).
fn accesses(recs: &[PackedAccess]) -> u64 {
    recs.iter().map(|r| r.count()).sum()
}

/// Feeds the threads' runs to the simulator at equal rates: threads as if they ran
/// simultaneously, each at the same number of accesses per unit of time.
///
/// A thread's clock counts its accesses: a coalesced record counts its repeats, and a run
/// of a stream gated by set sampling (`sample=`) counts the accesses the plugin left out
/// of its batch too (the batch's skip record), so that a gated stream is paced as the
/// whole one would be, up to where the batches end (see [`Pacer::skipped`]).
///
/// The stream interleaves the threads in the order their batches were written, which
/// follows how the host scheduled QEMU's threads: a thread may run ahead of another by
/// many batches (a thread woken late at the start of a parallel region, a host CPU taken
/// by another process). Each thread's clock counts the accesses fed so far; a thread's
/// runs wait while another thread that sent records in the last [`PACE_IDLE`] is behind
/// it and has none waiting, up to [`PACE_BOUND`] records, after which they go anyway. A
/// thread that is new or was idle (nothing for [`PACE_IDLE`]) resumes at the most advanced
/// clock of the others, so that it does not race ahead of them to make up for a time it did
/// not run.
#[derive(Debug, Default)]
pub(crate) struct Pacer {
    threads: std::collections::BTreeMap<u32, Paced>,
}

impl Pacer {
    /// The most advanced clock of the threads other than `except`: where the others are.
    fn present(&self, except: u32) -> u64 {
        self.threads
            .iter()
            .filter(|(t, _)| **t != except)
            .map(|(_, p)| p.clock)
            .max()
            .unwrap_or(0)
    }

    /// Whether thread `c` must wait: an active thread behind it has nothing waiting.
    fn blocked(&self, c: u32, now: Instant) -> bool {
        let clock = self.threads[&c].clock;
        self.threads.iter().any(|(t, p)| {
            *t != c
                && p.queue.is_empty()
                && p.clock < clock
                && now.duration_since(p.last) < PACE_IDLE
        })
    }

    /// Thread `t`, heard from at `now` (a new thread, or one idle until now, resumes where
    /// the others are).
    fn heard(&mut self, t: u32, now: Instant) -> &mut Paced {
        let present = self.present(t);
        let p = self.threads.entry(t).or_insert(Paced {
            clock: present,
            queue: Default::default(),
            queued: 0,
            skipped: 0,
            last: now,
        });
        if p.queue.is_empty() && now.duration_since(p.last) >= PACE_IDLE {
            p.clock = p.clock.max(present);
        }
        p.last = now;
        p
    }

    /// The plugin's gate left `n` accesses of thread `t` out of the batch whose run comes
    /// next: that run stands for them too. (They were interleaved with the run's records,
    /// which the pacer cannot know: the run moves the clock by all of them at once, so a
    /// gated stream is paced as the whole one only at the ends of its batches, which fall
    /// at other places than the whole stream's.)
    pub(crate) fn skipped(&mut self, t: u32, n: u64, now: Instant) {
        let p = self.heard(t, now);
        p.skipped = p.skipped.saturating_add(n);
    }

    /// Thread `t`'s next run `recs`, arrived at `now`; `feed` simulates what may go.
    pub(crate) fn push(
        &mut self,
        t: u32,
        recs: &[PackedAccess],
        now: Instant,
        feed: &mut impl FnMut(u32, &[PackedAccess]),
    ) {
        let p = self.heard(t, now);
        let span = accesses(recs).saturating_add(std::mem::take(&mut p.skipped));
        if span == 0 {
            // A thread that starts: the others may have to wait for it from now on.
            return;
        }
        if p.queue.is_empty() && !self.blocked(t, now) {
            if !recs.is_empty() {
                feed(t, recs);
            }
            let p = self.threads.get_mut(&t).expect("just inserted");
            p.clock = p.clock.saturating_add(span);
        } else {
            let p = self.threads.get_mut(&t).expect("just inserted");
            p.queue.push_back((recs.to_vec(), span));
            p.queued += recs.len();
        }
        self.drain(now, false, feed);
    }

    /// Thread `t` exited: nobody waits for it any more.
    pub(crate) fn ended(
        &mut self,
        t: u32,
        now: Instant,
        feed: &mut impl FnMut(u32, &[PackedAccess]),
    ) {
        if let Some(p) = self.threads.get_mut(&t) {
            p.last = now.checked_sub(PACE_IDLE * 2).unwrap_or(p.last);
        }
        self.drain(now, false, feed);
    }

    /// What a buffer of the stream holds, in order.
    pub(crate) fn events(
        &mut self,
        b: &[PackedAccess],
        events: &[Event],
        now: Instant,
        feed: &mut impl FnMut(u32, &[PackedAccess]),
    ) {
        for e in events {
            match *e {
                Event::Run(t, a, z) => self.push(t, &b[a..z], now, feed),
                Event::Ended(t) => self.ended(t, now, feed),
                Event::Skipped(t, n) => self.skipped(t, n, now),
                Event::SkippedBytes(..) => {}
            }
        }
    }

    /// Feeds waiting runs, the thread furthest behind first, while they may go (all of
    /// them with `all`).
    fn drain(&mut self, now: Instant, all: bool, feed: &mut impl FnMut(u32, &[PackedAccess])) {
        loop {
            let Some(c) = self
                .threads
                .iter()
                .filter(|(_, p)| !p.queue.is_empty())
                .min_by_key(|(_, p)| p.clock)
                .map(|(t, _)| *t)
            else {
                return;
            };
            if !all && self.threads[&c].queued < PACE_BOUND && self.blocked(c, now) {
                return;
            }
            let p = self.threads.get_mut(&c).expect("a waiting thread");
            let (run, span) = p.queue.pop_front().expect("a run waits");
            p.queued -= run.len();
            p.clock = p.clock.saturating_add(span);
            if !run.is_empty() {
                feed(c, &run);
            }
        }
    }

    /// The stream ended: everything waiting goes.
    pub(crate) fn finish(&mut self, feed: &mut impl FnMut(u32, &[PackedAccess])) {
        self.drain(Instant::now(), true, feed);
    }
}

/// Per node, the estimated counters (all threads; per thread), and the sampling report.
pub(crate) type SampledResult = (Vec<(HierarchyStats, Vec<ThreadStats>)>, SamplingReport);

/// Reads the plugin's stream and simulates each thread's accesses on every node of `sims`,
/// paced by a [`Pacer`]; with `sample`, only in the windows it asks for (on the reading
/// thread: sampling leaves little to share out).
///
/// With host CPUs to spare beyond the `reserved` ones (the producer's: QEMU keeps one
/// busy), the simulation is spread over worker threads, one per spare CPU: with more
/// workers than nodes, each node is cut by set class into parts that add up exactly to its
/// whole simulation ([`crate::partition`]), else each worker simulates whole nodes
/// (`HPCSCOPE_SIM_SPLIT` chooses); every worker reads every buffer, which is read once and
/// shared. A bounded queue per worker keeps memory bounded when a worker
/// falls behind. On a 2-CPU host, three machines or more get two workers too: QEMU waits
/// for the simulation then, and leaves its CPU idle
/// ([`crate::partition::simulation_cpus`]). Otherwise the reading thread simulates every
/// node itself. `HPCSCOPE_SIM_WORKERS=N` forces N workers (1: none).
/// Nodes simulated whole (on the reading thread, or a worker's whole machines) that have
/// first levels in common simulate those once (`hpcscope_cachesim::SharedNodes`); sampled
/// simulations and machines cut by set class do not share.
pub(crate) fn read_stream(
    f: impl Read,
    sims: Vec<NodeSim>,
    reserved: usize,
    sample: Option<SampleSpec>,
) -> Result<(Vec<Simulated>, u64, Option<SampledResult>), MixError> {
    read_source(Source::Pipe(f), sims, reserved, sample)
}

/// [`read_stream`] from a pipe or a ring.
pub(crate) fn read_source(
    f: Source<impl Read>,
    sims: Vec<NodeSim>,
    reserved: usize,
    sample: Option<SampleSpec>,
) -> Result<(Vec<Simulated>, u64, Option<SampledResult>), MixError> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let spread = crate::partition::spread(
        &sims,
        crate::partition::simulation_cpus(cpus, reserved, sims.len()),
    )?;
    let workers = spread.workers;
    let mut demux = Demux::default();
    let mut pacer = Pacer::default();
    let mut runs: Vec<Event> = Vec::new();
    if let Some(spec) = sample.filter(|s| s.method == SampleMethod::Sets) {
        let nodes: Vec<NodeConfig> = sims.iter().map(|s| s.config().clone()).collect();
        let placement = sims
            .first()
            .map(|s| s.placement().clone())
            .unwrap_or_default();
        let sampler = std::cell::RefCell::new(SetSampler::new(spec, &nodes, &placement)?);
        let mut feed = |t: u32, r: &[PackedAccess]| sampler.borrow_mut().feed(t, r);
        // Per thread, accesses the plugin left out, waiting for their bytes.
        let mut skipped: BTreeMap<u32, u64> = BTreeMap::new();
        f.for_each_batch(|b| {
            demux.split(b, &mut runs);
            for e in &runs {
                match *e {
                    Event::Skipped(t, n) => {
                        let c = skipped.entry(t).or_default();
                        *c = c.saturating_add(n);
                    }
                    Event::SkippedBytes(t, bytes) => {
                        let n = skipped.remove(&t).unwrap_or(0);
                        sampler.borrow_mut().skipped(t, n, bytes);
                    }
                    _ => {}
                }
            }
            pacer.events(b, &runs, Instant::now(), &mut feed);
        })?;
        pacer.finish(&mut feed);
        let mut sampler = sampler.into_inner();
        for (t, n) in skipped {
            sampler.skipped(t, n, 0);
        }
        let result = sampler.finish();
        // Accesses, those the plugin left out included.
        let records = result.1.records;
        return Ok((crate::partition::whole(sims), records, Some(result)));
    }
    if let Some(spec) = sample {
        let mut sims = sims;
        let mut sampler = Sampler::new(spec);
        let mut feed = |t: u32, r: &[PackedAccess]| sampler.feed(&mut sims, t, r);
        let records = drive(f, &mut demux, &mut pacer, &mut runs, &mut feed)?;
        let result = sampler.finish(&sims, records);
        return Ok((crate::partition::whole(sims), records, Some(result)));
    }
    if workers <= 1 {
        // Machines with first levels in common simulate them once (every counter as each
        // machine's own simulation: `SharedNodes`).
        if let Some(first) = sims.first() {
            let nodes: Vec<NodeConfig> = sims.iter().map(|s| s.config().clone()).collect();
            let shared = SharedNodes::new(&nodes, first.placement())
                .map_err(|e| MixError::Run(e.to_string()))?;
            if shared.shares() {
                drop(sims);
                let mut shared = shared;
                let mut feed = |t: u32, r: &[PackedAccess]| shared.access_batch(t, r);
                let records = drive(f, &mut demux, &mut pacer, &mut runs, &mut feed)?;
                let out = (0..nodes.len())
                    .map(|i| Simulated::Merged {
                        stats: shared.stats(i),
                        threads: shared.thread_stats(i),
                    })
                    .collect();
                return Ok((out, records, None));
            }
        }
        let mut sims = sims;
        let mut feed = |t: u32, r: &[PackedAccess]| {
            for sim in sims.iter_mut() {
                sim.access_batch(t, r);
            }
        };
        let records = drive(f, &mut demux, &mut pacer, &mut runs, &mut feed)?;
        return Ok((crate::partition::whole(sims), records, None));
    }
    // Each worker simulates its parts of the machines (crate::partition): by set class,
    // or whole machines; the counters come back per machine, in the original order.
    let n = sims.len();
    let groups = crate::partition::plan(sims, spread)?;
    type Shared = (Arc<Vec<PackedAccess>>, Arc<Vec<Run>>);
    std::thread::scope(|scope| {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for g in groups {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Shared>(4);
            senders.push(tx);
            handles.push(scope.spawn(move || {
                let mut g = g;
                for (b, runs) in rx {
                    for &(t, a, e) in runs.iter() {
                        g.feed(t, &b[a..e]);
                    }
                }
                g
            }));
        }
        // What the pacer lets go, gathered into buffers that every worker simulates; the
        // buffers come back for reuse once every worker has dropped its reference.
        let mut pool: Vec<Arc<Vec<PackedAccess>>> = Vec::new();
        let out: std::cell::RefCell<(Vec<PackedAccess>, Vec<Run>)> = Default::default();
        let mut feed = |t: u32, r: &[PackedAccess]| {
            let mut o = out.borrow_mut();
            let start = o.0.len();
            o.1.push((t, start, start + r.len()));
            o.0.extend_from_slice(r);
        };
        let mut send = |out: &mut (Vec<PackedAccess>, Vec<Run>)| {
            if out.0.is_empty() {
                return;
            }
            let mut buf = pool
                .iter()
                .position(|a| Arc::strong_count(a) == 1)
                .map(|i| pool.swap_remove(i))
                .unwrap_or_default();
            let v = Arc::get_mut(&mut buf).expect("no other reference");
            v.clear();
            v.extend_from_slice(&out.0);
            let shared_runs = Arc::new(std::mem::take(&mut out.1));
            out.0.clear();
            for tx in &senders {
                // A worker that stopped has panicked: its join below reports it.
                let _ = tx.send((Arc::clone(&buf), Arc::clone(&shared_runs)));
            }
            pool.push(buf);
        };
        let mut records = 0;
        let read = f.for_each_batch(|b| {
            records += demux.split(b, &mut runs);
            pacer.events(b, &runs, Instant::now(), &mut feed);
            send(&mut out.borrow_mut());
        });
        pacer.finish(&mut feed);
        send(&mut out.borrow_mut());
        drop(senders);
        let mut done = Vec::with_capacity(handles.len());
        for h in handles {
            done.push(
                h.join()
                    .map_err(|_| MixError::Run("a cache-simulation thread panicked".into()))?,
            );
        }
        read?;
        ungated(&demux)?;
        Ok((crate::partition::merge(done, n), records, None))
    })
}

/// Only set sampling gates the stream: a gated stream read any other way would miss the
/// accesses left out.
fn ungated(demux: &Demux) -> Result<(), MixError> {
    if demux.skips > 0 {
        Err(MixError::Run(
            "the memory stream was thinned by set sampling (the plugin's sample= argument): it can only be read by a set-sampled simulation with the same classes".into(),
        ))
    } else {
        Ok(())
    }
}

/// Reads every batch of `f` on this thread, splits it into the guest threads' runs and
/// lets the pacer hand them to `feed`; returns the records read.
fn drive(
    f: Source<impl Read>,
    demux: &mut Demux,
    pacer: &mut Pacer,
    runs: &mut Vec<Event>,
    feed: &mut impl FnMut(u32, &[PackedAccess]),
) -> Result<u64, MixError> {
    let mut records = 0;
    f.for_each_batch(|b| {
        records += demux.split(b, runs);
        pacer.events(b, runs, Instant::now(), feed);
    })?;
    pacer.finish(feed);
    ungated(demux)?;
    Ok(records)
}

/// Slots of the ring (8 MiB): a batch being simulated, the next ones written meanwhile.
const RING_SLOTS: u32 = 16;

/// A shared mapping, unmapped when dropped.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; which slot each process may touch is settled by the
// tokens (see [`RingReader`]).
unsafe impl Send for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: a mapping of ours, not used after this.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// The ring before QEMU starts: the memfd and the plugin's end of the token socket, which
/// QEMU inherits, and ours.
struct RingSetup {
    fd: i32,
    token_read: i32,
    token_write: i32,
    map: Option<Mapping>,
}

impl RingSetup {
    /// A ring of [`RING_SLOTS`] slots, every slot's token already sent; `None` where the
    /// system cannot make one (the pipe is used instead).
    fn new() -> Option<RingSetup> {
        let len = RING_SLOTS as usize * RING_SLOT_RECORDS * 8;
        // SAFETY: plain system calls on descriptors created here; each is closed by
        // `Drop` on every path.
        unsafe {
            // Inherited by QEMU: no close-on-exec.
            let fd = libc::memfd_create(c"hpcscope-mix-ring".as_ptr(), 0);
            if fd < 0 {
                return None;
            }
            let mut setup = RingSetup {
                fd,
                token_read: -1,
                token_write: -1,
                map: None,
            };
            if libc::ftruncate(fd, len as libc::off_t) != 0 {
                return None;
            }
            let ptr = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            );
            if ptr == libc::MAP_FAILED {
                return None;
            }
            setup.map = Some(Mapping {
                ptr: ptr.cast(),
                len,
            });
            // A socket rather than a pipe: a token sent after QEMU died fails with EPIPE
            // (MSG_NOSIGNAL) instead of raising SIGPIPE, which hpcscope does not ignore.
            let mut sv = [-1; 2];
            if libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) != 0 {
                return None;
            }
            (setup.token_read, setup.token_write) = (sv[0], sv[1]);
            libc::fcntl(setup.token_write, libc::F_SETFD, libc::FD_CLOEXEC);
            for slot in 0..RING_SLOTS {
                if !send_token(setup.token_write, slot) {
                    return None;
                }
            }
            Some(setup)
        }
    }

    /// QEMU started with its copies: the reader keeps the mapping and the token socket.
    fn into_reader(mut self) -> RingReader {
        let tokens = std::mem::replace(&mut self.token_write, -1);
        RingReader {
            tokens,
            map: self.map.take().expect("a mapped ring"),
        }
    }
}

impl Drop for RingSetup {
    fn drop(&mut self) {
        for fd in [self.fd, self.token_read, self.token_write] {
            if fd >= 0 {
                // SAFETY: descriptors this setup created and still owns.
                unsafe { libc::close(fd) };
            }
        }
    }
}

/// Returns a slot to the plugin; false when it is gone.
fn send_token(fd: i32, slot: u32) -> bool {
    let b = slot.to_le_bytes();
    // SAFETY: sending 4 bytes from a local buffer on our socket.
    let n = unsafe { libc::send(fd, b.as_ptr().cast(), b.len(), libc::MSG_NOSIGNAL) };
    // A stream socket with room for every token (at most RING_SLOTS are out) sends the 4
    // bytes whole.
    n == b.len() as isize
}

/// The reader's side of the ring: the mapped slots, and the socket on which it returns a
/// slot once it has read it. The plugin writes a slot only between taking its token and
/// sending its notice, the reader reads it only between the notice and giving the token
/// back.
pub(crate) struct RingReader {
    tokens: i32,
    map: Mapping,
}

impl Drop for RingReader {
    fn drop(&mut self) {
        // SAFETY: our descriptor; the plugin waiting for a token reads end of file.
        unsafe { libc::close(self.tokens) };
    }
}

impl RingReader {
    /// The `n` records of slot `slot`.
    fn slot(&self, slot: u32, n: usize) -> Result<&[PackedAccess], MixError> {
        if slot >= RING_SLOTS || n > RING_SLOT_RECORDS {
            return Err(MixError::Run(format!(
                "the memory stream's notice names {n} records in slot {slot}, beyond the ring's {RING_SLOTS} slots of {RING_SLOT_RECORDS}: the plugin and hpcscope come from different versions"
            )));
        }
        // SAFETY: inside the mapping (checked above); 8-byte aligned (page-aligned base,
        // slots a multiple of 8 bytes); the plugin does not write the slot until its token
        // comes back; `PackedAccess` is a `u64`, any bits valid.
        Ok(unsafe {
            std::slice::from_raw_parts(
                self.map
                    .ptr
                    .cast::<PackedAccess>()
                    .add(slot as usize * RING_SLOT_RECORDS),
                n,
            )
        })
    }
}

/// Where the stream comes from.
pub(crate) enum Source<R> {
    /// The records themselves (a pipe, a file, bytes).
    Pipe(R),
    /// The notices of a ring, and the ring.
    Ring(R, RingReader),
}

impl<R: Read> Source<R> {
    /// Hands the stream's records to `each` in batches, in order (thread markers
    /// included); returns the number of records read.
    fn for_each_batch(self, each: impl FnMut(&[PackedAccess])) -> Result<u64, MixError> {
        match self {
            Source::Pipe(f) => for_each_batch(f, each),
            Source::Ring(f, ring) => for_each_ring_batch(f, &ring, each),
        }
    }
}

/// Reads the notices of a ring: the words between notices (thread markers written alone)
/// go to `each` as they are, a notice's slot goes whole and its token back to the plugin.
fn for_each_ring_batch(
    f: impl Read,
    ring: &RingReader,
    mut each: impl FnMut(&[PackedAccess]),
) -> Result<u64, MixError> {
    let mut records = 0u64;
    let mut err = None;
    let mut gone = false;
    let mut notices = |words: &[PackedAccess]| {
        if err.is_some() {
            return;
        }
        let mut start = 0;
        for (i, w) in words.iter().enumerate() {
            let Some((slot, n)) = notice_parts(w.0) else {
                continue;
            };
            if i > start {
                records += (i - start) as u64;
                each(&words[start..i]);
            }
            start = i + 1;
            match ring.slot(slot, n) {
                Ok(recs) => {
                    records += n as u64;
                    if cfg!(target_endian = "big") {
                        let v: Vec<PackedAccess> = recs
                            .iter()
                            .map(|r| PackedAccess(u64::from_le(r.0)))
                            .collect();
                        each(&v);
                    } else if n > 0 {
                        each(recs);
                    }
                }
                Err(e) => {
                    err = Some(e);
                    return;
                }
            }
            // QEMU gone: the notices left are read all the same.
            if !gone && !send_token(ring.tokens, slot) {
                gone = true;
            }
        }
        if words.len() > start {
            records += (words.len() - start) as u64;
            each(&words[start..]);
        }
    };
    read_words(f, RING_MAGIC, &mut notices)?;
    match err {
        Some(e) => Err(e),
        None => Ok(records),
    }
}

/// Reads the plugin's stream (header, then 8-byte records) and hands the records to `f` in
/// batches, in order (thread markers included); returns the number of records read.
fn for_each_batch(f: impl Read, mut each: impl FnMut(&[PackedAccess])) -> Result<u64, MixError> {
    read_words(f, MAGIC, &mut each)
}

/// [`hpcscope_plugin_format::read_words`], its errors in mix's words.
fn read_words(
    f: impl Read,
    magic: &[u8; 8],
    each: &mut impl FnMut(&[PackedAccess]),
) -> Result<u64, MixError> {
    hpcscope_plugin_format::read_words(f, magic, each).map_err(|e| match e {
        ReadError::Header => MixError::Run(
            "the memory stream does not start with the hpcscope header: the plugin and hpcscope come from different versions".into(),
        ),
        e => MixError::Run(e.to_string()),
    })
}

/// The glibc variable that bounds the number of malloc arenas.
const ARENA_VAR: &str = "MALLOC_ARENA_MAX";

/// QEMU's arguments that give the guest its own value of `MALLOC_ARENA_MAX` (`value`, or
/// none) while QEMU itself runs with 1. In user mode the guest's memory and QEMU's share
/// one address space, and QEMU places the guest's large mappings in the gaps between its
/// own: a malloc arena that a thread of QEMU or of the plugin creates reserves 128 MiB at a
/// moment that races the guest's first allocations, so the guest's arrays fell in one of
/// two places from run to run (measured on the bundled CG under QEMU 10: its last four
/// arrays 128 MiB apart in one run in six, cascadelake-8260's L3 hit ratio 57.085 % or
/// 57.408 % with them). With one arena QEMU's threads allocate from the main heap and the
/// layout is the same every time.
fn guest_arena_args(value: Option<&str>) -> [String; 2] {
    match value {
        Some(v) => ["-E".into(), format!("{ARENA_VAR}={v}")],
        None => ["-U".into(), ARENA_VAR.into()],
    }
}

/// What QEMU's process gets before exec: no core file, and the same layout from run to run.
///
/// A guest that dies of a signal makes QEMU write a `qemu_*.core` file into the working
/// directory when core dumps are allowed: not wanted from an analysis. The layout is made
/// the same from run to run (what `setarch -R` does): QEMU 10 maps the guest's memory where
/// the host's address randomization puts it, and where a program's arrays fall moves its
/// conflicts in a cache whose set count is no power of two (the CG workload's L3 hit ratio
/// on cascadelake-8260 was 53.3 % in one run and 57.2 % in the next); QEMU 7.2 places the
/// guest at a fixed base anyway.
fn quiet_fixed_layout(cmd: &mut Command) {
    // SAFETY: setrlimit and personality are async-signal-safe system calls; nothing else
    // runs between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, || {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            let persona = libc::personality(0xffff_ffff);
            if persona != -1 {
                libc::personality(
                    persona as libc::c_ulong | libc::ADDR_NO_RANDOMIZE as libc::c_ulong,
                );
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_plugin_format::{notice, skip_record, thread_marker};

    #[test]
    fn the_guest_keeps_its_own_arena_setting() {
        assert_eq!(guest_arena_args(None), ["-U", "MALLOC_ARENA_MAX"]);
        assert_eq!(guest_arena_args(Some("4")), ["-E", "MALLOC_ARENA_MAX=4"]);
    }

    #[test]
    fn qemu_runs_without_core_files_and_address_randomization() {
        // A child started as QEMU is: its personality has ADDR_NO_RANDOMIZE (0x0040000),
        // its core file limit is 0.
        let mut cmd = Command::new("sh");
        quiet_fixed_layout(&mut cmd);
        let out = cmd
            .args(["-c", "cat /proc/self/personality; ulimit -c"])
            .output()
            .expect("sh runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let persona =
            u64::from_str_radix(lines.next().expect("a personality").trim(), 16).expect("hex");
        assert_eq!(persona & 0x0040000, 0x0040000, "{text}");
        assert_eq!(lines.next(), Some("0"), "{text}");
    }

    #[test]
    fn the_pacer_lets_threads_advance_at_equal_rates() {
        let a = |x: u64| PackedAccess::new(x, 8, false).expect("small");
        let run = |base: u64, n: u64| (0..n).map(|i| a(base + i * 8)).collect::<Vec<_>>();
        let mut p = Pacer::default();
        let fed: std::cell::RefCell<Vec<(u32, usize)>> = Default::default();
        let mut feed = |t: u32, r: &[PackedAccess]| fed.borrow_mut().push((t, r.len()));
        let take = || std::mem::take(&mut *fed.borrow_mut());
        let t0 = Instant::now();
        // Thread 1 joins after thread 0's first run (at its clock, 10); thread 0 then sends
        // three runs at once: the first goes (both at 20), the others wait for thread 1,
        // which has just been running, and go in turn with its runs once they come.
        p.push(0, &run(0, 10), t0, &mut feed);
        p.push(1, &run(1000, 10), t0, &mut feed);
        for _ in 0..3 {
            p.push(0, &run(0, 10), t0, &mut feed);
        }
        for _ in 0..3 {
            p.push(1, &run(1000, 10), t0, &mut feed);
        }
        assert_eq!(
            take(),
            [
                (0, 10),
                (1, 10),
                (0, 10),
                (0, 10),
                (1, 10),
                (0, 10),
                (1, 10),
                (1, 10)
            ]
        );
        // Thread 1 falls silent: after PACE_IDLE nobody waits for it.
        let later = t0 + PACE_IDLE * 2;
        p.push(0, &run(0, 10), later, &mut feed);
        p.push(0, &run(0, 10), later, &mut feed);
        assert_eq!(take(), [(0, 10), (0, 10)]);
        // It resumes at thread 0's clock, not 20 records behind: no catching up alone.
        let resume = later + PACE_IDLE * 2;
        p.push(1, &run(1000, 10), resume, &mut feed);
        p.push(0, &run(0, 10), resume, &mut feed);
        assert_eq!(take(), [(1, 10), (0, 10)]);
        // A thread far ahead goes on once it holds PACE_BOUND records.
        let big = run(0, PACE_BOUND as u64);
        p.push(0, &big, resume, &mut feed);
        assert_eq!(take(), [(0, PACE_BOUND)]);
        p.finish(&mut feed);
    }

    #[test]
    fn a_gated_run_moves_its_thread_by_the_accesses_left_out() {
        let a = |x: u64| PackedAccess::new(x, 8, false).expect("small");
        let run = |base: u64, n: u64| (0..n).map(|i| a(base + i * 8)).collect::<Vec<_>>();
        let t0 = Instant::now();
        // Thread 0's batches hold 10 of 40 accesses each (the gate left 30 out), thread
        // 1's 40 records each: both threads advance 40 accesses per batch, so they
        // alternate, as the whole streams (40 records each) do.
        let order = |gated: bool| {
            let mut p = Pacer::default();
            let fed: std::cell::RefCell<Vec<u32>> = Default::default();
            let mut feed = |t: u32, _: &[PackedAccess]| fed.borrow_mut().push(t);
            // Both threads start (their markers alone).
            p.push(0, &[], t0, &mut feed);
            p.push(1, &[], t0, &mut feed);
            for _ in 0..3 {
                if gated {
                    p.skipped(0, 30, t0);
                    p.push(0, &run(0, 10), t0, &mut feed);
                } else {
                    p.push(0, &run(0, 40), t0, &mut feed);
                }
            }
            for _ in 0..3 {
                p.push(1, &run(1 << 20, 40), t0, &mut feed);
            }
            p.finish(&mut feed);
            fed.into_inner()
        };
        assert_eq!(order(false), [0, 1, 0, 1, 0, 1]);
        assert_eq!(order(true), order(false));
        // A coalesced record counts its repeats: 10 records of 4 accesses pace like 40.
        let mut p = Pacer::default();
        let fed: std::cell::RefCell<Vec<u32>> = Default::default();
        let mut feed = |t: u32, _: &[PackedAccess]| fed.borrow_mut().push(t);
        let four: Vec<_> = run(0, 10)
            .into_iter()
            .map(|r| r.with_count(4).expect("4 accesses"))
            .collect();
        p.push(0, &[], t0, &mut feed);
        p.push(1, &[], t0, &mut feed);
        for _ in 0..3 {
            p.push(0, &four, t0, &mut feed);
        }
        for _ in 0..3 {
            p.push(1, &run(1 << 20, 40), t0, &mut feed);
        }
        p.finish(&mut feed);
        assert_eq!(fed.into_inner(), [0, 1, 0, 1, 0, 1]);
    }

    #[test]
    fn ring_notices_give_the_plain_stream_in_order() {
        let Some(setup) = RingSetup::new() else {
            eprintln!("skipping: no memfd_create here");
            return;
        };
        let ring = setup.into_reader();
        let m = |t: u32| thread_marker(t);
        let a = |x: u64| PackedAccess::new(x, 8, false).expect("small").0;
        let put = |slot: usize, recs: &[u64]| {
            // SAFETY: slot inside the mapping; nobody else uses it in this test.
            let dst = unsafe { ring.map.ptr.cast::<u64>().add(slot * RING_SLOT_RECORDS) };
            for (i, r) in recs.iter().enumerate() {
                // SAFETY: as above.
                unsafe { *dst.add(i) = r.to_le() };
            }
        };
        put(3, &[m(1), a(0x10), a(0x18)]);
        put(0, &[m(0), a(0x20)]);
        // Thread 0 starts (its marker alone), slot 3, thread 2 starts, slot 0.
        let words = [m(0), notice(3, 3), m(2), notice(0, 2)];
        let mut s = RING_MAGIC.to_vec();
        for w in words {
            s.extend_from_slice(&w.to_le_bytes());
        }
        let mut seen = Vec::new();
        // One byte at a time: notices cut anywhere by short reads.
        let n = for_each_ring_batch(OneByte(&s), &ring, |b| seen.extend(b.iter().map(|r| r.0)))
            .unwrap();
        let plain = [m(0), m(1), a(0x10), a(0x18), m(2), m(0), a(0x20)];
        assert_eq!(seen, plain);
        assert_eq!(n, plain.len() as u64);
        // A notice beyond the ring is an error, not a read outside it.
        let mut bad = RING_MAGIC.to_vec();
        bad.extend_from_slice(&notice(RING_SLOTS, 1).to_le_bytes());
        let e = for_each_ring_batch(&bad[..], &ring, |_| {}).unwrap_err();
        assert!(e.to_string().contains("beyond the ring"), "{e}");
    }

    /// A reader that returns one byte per read.
    struct OneByte<'a>(&'a [u8]);
    impl Read for OneByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((b, rest)), Some(d)) => {
                    *d = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    #[test]
    fn a_thinned_stream_is_refused_by_a_full_simulation() {
        let m = hpcscope_core::library::builtin("thunderx2").unwrap();
        let node = crate::node(&m).unwrap();
        let mut s = MAGIC.to_vec();
        for r in [
            thread_marker(0),
            skip_record(3, false),
            skip_record(24, true),
        ] {
            s.extend_from_slice(&r.to_le_bytes());
        }
        s.extend_from_slice(&PackedAccess::new(0x1000, 8, false).unwrap().0.to_le_bytes());
        let Err(e) = crate::replay_stream(&s[..], vec![node], &Placement::Compact) else {
            panic!("a thinned stream was simulated as a whole one");
        };
        let e = e.to_string();
        assert!(e.contains("thinned by set sampling"), "{e}");
    }
}

#[cfg(test)]
mod sweep_tests {
    use super::sweep_stale;

    /// A killed run's scratch directory goes; a live process's and foreign names stay.
    #[test]
    fn stale_scratch_directories_are_swept() {
        let base = tempfile::tempdir().unwrap();
        // A PID that does not exist: above the kernel's maximum.
        let max: i64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(4_194_304);
        let dead = base.path().join(format!("hpcscope-mix-{}-0", max + 1));
        let live = base
            .path()
            .join(format!("hpcscope-mix-{}-3", std::process::id()));
        let other = base.path().join("hpcscope-mix-notapid-0");
        let file = base.path().join(format!("hpcscope-mix-{}-1", max + 1));
        for d in [&dead, &live, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("records"), b"x").unwrap();
        }
        std::fs::write(&file, b"a file, not ours to remove").unwrap();
        assert_eq!(sweep_stale(base.path()), 1);
        assert!(!dead.exists());
        assert!(live.exists() && other.exists() && file.exists());
    }
}
