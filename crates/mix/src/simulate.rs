//! A record stream fed to the cache simulations: each guest thread's accesses paced at equal
//! rates, simulated on every node (on worker threads when CPUs are spare, by set class or
//! whole machines), or in sampled windows or classes. What produced the stream (which
//! [`crate::engine::Engine`]) is not known here: only its records.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::{Duration, Instant};

use std::sync::Arc;

use hpcscope_cachesim::{
    HierarchyStats, NodeConfig, NodeSim, PackedAccess, Placement, SharedNodes, ThreadStats,
};
use hpcscope_plugin_format::{Demux, Event};

use crate::engine::RecordStream;
use crate::error::MixError;
use crate::nodes::Distinct;
use crate::partition::Simulated;
use crate::sampling::sets::SetSampler;
use crate::sampling::{SampleMethod, SampleSpec, Sampler, SamplingReport};

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
/// thread), or only the classes of sets it chooses (three machines or more over the
/// workers, each a group of the machines: [`read_sets_parallel`]; else on the reading
/// thread).
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
    read_source(RecordStream::Records(f), sims, reserved, sample)
}

/// [`read_stream`] from a pipe or a ring.
pub(crate) fn read_source(
    f: RecordStream<impl Read>,
    sims: Vec<NodeSim>,
    reserved: usize,
    sample: Option<SampleSpec>,
) -> Result<(Vec<Simulated>, u64, Option<SampledResult>), MixError> {
    let cpus = hpcscope_host::facts::logical_cpus() as usize;
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
        // Three machines or more over the workers (with two, the program under the
        // native engine keeps the other CPU as busy as the reader: measured x1.02 the wall
        // time on cg with two workers; `analyze`'s 7 machines x0.83).
        if workers >= 2 && nodes.len() >= 3 {
            let (records, result) = read_sets_parallel(f, &nodes, &placement, spec, workers)?;
            return Ok((crate::partition::whole(sims), records, Some(result)));
        }
        let sampler = std::cell::RefCell::new(SetSampler::new(spec, &nodes, &placement)?);
        let mut feed = |t: u32, r: &[PackedAccess]| sampler.borrow_mut().feed(t, r);
        let mut skipped = SkipPairs::default();
        f.for_each_batch(|b| {
            demux.split(b, &mut runs);
            for e in &runs {
                if let Some((t, n, bytes)) = skipped.event(e) {
                    sampler.borrow_mut().skipped(t, n, bytes);
                }
            }
            pacer.events(b, &runs, Instant::now(), &mut feed);
        })?;
        pacer.finish(&mut feed);
        let mut sampler = sampler.into_inner();
        for (t, n, bytes) in skipped.rest() {
            sampler.skipped(t, n, bytes);
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
            let shared = SharedNodes::new(&nodes, first.placement())?;
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
    let mut records = 0;
    let done = fan_out(
        f,
        groups,
        |g, t, r| g.feed(t, r),
        |b, runs| {
            records += demux.split(b, runs);
        },
        &mut pacer,
    )?;
    ungated(&demux)?;
    Ok((crate::partition::merge(done, n), records, None))
}

/// Reads every batch of `f` on this thread and hands what `pacer` lets go to one worker
/// thread per entry of `states`, which feeds it to its state with `feed`; `split` turns
/// each batch into its runs first (and sees their events). Every worker reads every buffer,
/// which is read once and shared; a bounded queue per worker keeps memory bounded when a
/// worker falls behind. Returns the states, in their order.
fn fan_out<S: Send>(
    f: RecordStream<impl Read>,
    states: Vec<S>,
    feed: impl Fn(&mut S, u32, &[PackedAccess]) + Sync,
    mut split: impl FnMut(&[PackedAccess], &mut Vec<Event>),
    pacer: &mut Pacer,
) -> Result<Vec<S>, MixError> {
    type Shared = (Arc<Vec<PackedAccess>>, Arc<Vec<Run>>);
    let feed = &feed;
    std::thread::scope(|scope| {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for s in states {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Shared>(4);
            senders.push(tx);
            handles.push(scope.spawn(move || {
                let mut s = s;
                for (b, runs) in rx {
                    for &(t, a, e) in runs.iter() {
                        feed(&mut s, t, &b[a..e]);
                    }
                }
                s
            }));
        }
        // What the pacer lets go, gathered into buffers that every worker simulates; the
        // buffers come back for reuse once every worker has dropped its reference.
        let mut pool: Vec<Arc<Vec<PackedAccess>>> = Vec::new();
        let out: std::cell::RefCell<(Vec<PackedAccess>, Vec<Run>)> = Default::default();
        let mut gather = |t: u32, r: &[PackedAccess]| {
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
        let mut runs: Vec<Event> = Vec::new();
        let read = f.for_each_batch(|b| {
            split(b, &mut runs);
            pacer.events(b, &runs, Instant::now(), &mut gather);
            send(&mut out.borrow_mut());
        });
        pacer.finish(&mut gather);
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
        Ok(done)
    })
}

/// The set-sampled simulation of `nodes` spread over `workers` threads: each simulates the
/// chosen classes of a contiguous group of the machines (a [`SetSampler`] of its own), and
/// every worker reads every buffer the pacer lets go, read once and shared as the full
/// simulation's workers do. The left-out accesses (the skip records) are counted on the
/// reading thread and given to every group at the end (they only add to its totals). The
/// results are each group's, in the machines' order: the same counters as one sampler of
/// every machine would give, since each machine's classes see the same accesses in the
/// same order. Returns the accesses and the result.
fn read_sets_parallel(
    f: RecordStream<impl Read>,
    nodes: &[NodeConfig],
    placement: &hpcscope_cachesim::Placement,
    spec: SampleSpec,
    workers: usize,
) -> Result<(u64, SampledResult), MixError> {
    let groups = workers.min(nodes.len());
    let per = nodes.len().div_ceil(groups);
    let samplers = nodes
        .chunks(per)
        .map(|g| SetSampler::new(spec, g, placement))
        .collect::<Result<Vec<_>, _>>()?;
    let mut demux = Demux::default();
    let mut pacer = Pacer::default();
    let mut skips: Vec<(u32, u64, u64)> = Vec::new();
    let mut skipped = SkipPairs::default();
    let done = fan_out(
        f,
        samplers,
        |s, t, r| s.feed(t, r),
        |b, runs| {
            demux.split(b, runs);
            skips.extend(runs.iter().filter_map(|e| skipped.event(e)));
        },
        &mut pacer,
    )?;
    skips.extend(skipped.rest());
    let mut nodes_out = Vec::new();
    let mut report: Option<SamplingReport> = None;
    for mut s in done {
        for &(t, n, bytes) in &skips {
            s.skipped(t, n, bytes);
        }
        let (ns, r) = s.finish();
        nodes_out.extend(ns);
        match &mut report {
            None => report = Some(r),
            Some(all) => all.machines.extend(r.machines),
        }
    }
    let report = report.expect("at least one group");
    Ok((report.records, (nodes_out, report)))
}

/// The producer's left-out accesses per thread, paired with their bytes: a
/// [`Event::Skipped`] count waits for its thread's [`Event::SkippedBytes`].
#[derive(Default)]
struct SkipPairs {
    pending: BTreeMap<u32, u64>,
}

impl SkipPairs {
    /// `(thread, accesses, bytes)` when `e` completes a thread's left-out accesses.
    fn event(&mut self, e: &Event) -> Option<(u32, u64, u64)> {
        match *e {
            Event::Skipped(t, n) => {
                let c = self.pending.entry(t).or_default();
                *c = c.saturating_add(n);
                None
            }
            Event::SkippedBytes(t, bytes) => Some((t, self.pending.remove(&t).unwrap_or(0), bytes)),
            _ => None,
        }
    }

    /// The counts still waiting at the end of the stream, without bytes.
    fn rest(self) -> impl Iterator<Item = (u32, u64, u64)> {
        self.pending.into_iter().map(|(t, n)| (t, n, 0))
    }
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
    f: RecordStream<impl Read>,
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

/// What [`replay_sampled`] found: per node, the estimated counters of its set-sampled
/// simulation (all threads, and per thread), and the sampling report.
pub type SampledReplay = (Vec<HierarchyStats>, Vec<Vec<ThreadStats>>, SamplingReport);

/// [`replay_stream`] with set sampling (`spec`, [`SampleMethod::Sets`]): the sampled
/// simulation `hpcscope mix --sample` runs while the program runs, on a recorded stream.
pub fn replay_sampled(
    stream: impl std::io::Read,
    nodes: Vec<NodeConfig>,
    placement: &Placement,
    spec: SampleSpec,
) -> Result<SampledReplay, MixError> {
    let sims = nodes
        .into_iter()
        .map(|n| hpcscope_cachesim::NodeSim::new(n, placement.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let (_, _, sampled) = read_stream(stream, sims, 0, Some(spec))?;
    let (per_node, report) = sampled
        .ok_or_else(|| MixError::Run("the stream's sampled simulation gave no result".into()))?;
    let (caches, threads) = per_node.into_iter().unzip();
    Ok((caches, threads, report))
}

/// What [`replay_stream`] found.
#[derive(Debug, Clone)]
pub struct Replay {
    /// Each node's counters, all threads.
    pub caches: Vec<HierarchyStats>,
    /// Each node's counters per thread.
    pub thread_caches: Vec<Vec<ThreadStats>>,
    /// Access records simulated (thread markers left out).
    pub records: u64,
}

/// Simulates a recorded memory-access stream of the plugin (`mem=on`: the `HPCSMT03` header,
/// then batches of 8-byte records, each after its thread's marker) on the caches of
/// `nodes`, each thread on its core per `placement`, as `hpcscope mix` does while QEMU runs.
pub fn replay_stream(
    stream: impl std::io::Read,
    nodes: Vec<NodeConfig>,
    placement: &Placement,
) -> Result<Replay, MixError> {
    let shared = Distinct::new(&nodes, placement);
    let sims = shared
        .nodes
        .iter()
        .map(|n| hpcscope_cachesim::NodeSim::new(n.clone(), placement.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    // No producer to leave a CPU to.
    let (sims, records, _) = read_stream(stream, sims, 0, None)?;
    Ok(Replay {
        caches: shared.caches(sims.iter().map(|s| s.stats()).collect()),
        thread_caches: shared.thread_caches(sims.iter().map(|s| s.thread_stats()).collect()),
        records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_plugin_format::{MAGIC, skip_record, thread_marker};

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
