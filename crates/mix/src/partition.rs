//! Exact parallel simulation by set class: one machine's cache hierarchy simulated on
//! several CPUs, with every counter what one [`NodeSim`] gives.
//!
//! The decomposition is set sampling's ([`crate::sampling::sets`]): with one line size in a
//! hierarchy, line `x` sits in set `x mod S_j` of level `j`, so for any `P` dividing every
//! level's set count, the lines of one residue class `x mod P` only ever meet lines of their
//! own class, at every level, in `S_j / P` sets of their own; write-backs, fills, inclusive
//! back-invalidations (per line, in the caches of every core sharing the level) and the
//! switches between the threads' cores stay inside the class. A class is simulated apart in
//! a copy of the node with `S_j / P` sets per level ([`crate::sampling::sets::class_config`]),
//! fed line `x div P`: it goes through the same sets in the same order as in the full
//! simulation, so its hits, misses, fills, write-backs and evictions are those of its lines
//! in the full simulation, per thread. Adding up the classes gives every level counter.
//!
//! The reader shares each batch of the stream with `W` worker threads (the spare CPUs). A
//! machine is cut into `P` parts (a divisor of its class count `g`, at least `W` when it has
//! that many, chosen so that the parts spread evenly over the workers), the parts of all
//! machines go to the workers by longest-first scheduling, and each worker, for every
//! record of a batch, keeps the ones in its parts: one pass per record and machine (about
//! 2 ns, with no branch a random stream mispredicts), and `1/W` of the simulation. With
//! more workers than twice the machines, a machine is cut for its share of them, so that a
//! worker simulates parts of fewer machines. With no more workers than machines, each
//! worker simulates whole machines instead (as before the cut by class), unless
//! [`SPLIT_ENV`] says `sets`: the passes cost more CPU than one machine per worker gains
//! in balance when the machines cost about the same (measured in docs/mix-performance.md).
//!
//! Batch ends are where a node settles the inclusive back-invalidations of a shared level
//! in the other cores' caches; when a dirty copy is found there, its write-back lands in
//! the next level then. So for an inclusive node with a shared level above another (an L2
//! shared by a few cores above an L3), each part's simulator gets, per run of a guest
//! thread the reader hands out, one batch with that run's records of the part, as the
//! sequential simulator gets one batch with the whole run. Other nodes (a shared level
//! only last, or not inclusive) take a batch per chunk of 4096 records, which keeps the
//! parts' copies in the host's L1 and L2.
//!
//! An access that straddles two lines is simulated as its pieces (each in its line's class,
//! in order), as [`hpcscope_cachesim::Hierarchy`] does, so the level counters match; the
//! machine-level `accesses` and `split_accesses` are then put back as the full simulation
//! counts them (one access, one split access), by the worker that holds the access's first
//! line.
//!
//! A machine whose class count is 1 (set counts with no common divisor, e.g. 64 and 3 x 5)
//! cannot be cut this way, nor could one whose levels had different line sizes (the
//! simulator refuses those today; the check stays): it stays whole, simulated by one worker
//! as before (the other machines' parts fill the other workers). Machines of different line
//! sizes are cut each by its own.

use std::collections::BTreeMap;

use hpcscope_cachesim::{
    Access, HierarchyStats, IntoAccess, NodeSim, PackedAccess, Placement, SharedNodes, ThreadStats,
};

use crate::error::MixError;
use crate::sampling::sets::{class_config, classes_of, one_line_size};

/// Forces the number of simulation threads (`1`: simulate on the reading thread); by
/// default, the host's CPUs less those the producer keeps busy.
pub const WORKERS_ENV: &str = "HPCSCOPE_SIM_WORKERS";
/// How the workers share the simulation: `sets` (by set class), `machines` (one whole
/// machine per worker, at most one worker per machine) or `auto` (the default: by machine
/// when there are no more workers than machines, which costs less CPU, else by set class).
pub const SPLIT_ENV: &str = "HPCSCOPE_SIM_SPLIT";

/// A machine's simulation as the stream reader hands it back: the simulator itself, or the
/// counters merged from its parts.
#[derive(Debug)]
pub(crate) enum Simulated {
    /// Simulated whole.
    Node(Box<NodeSim>),
    /// Simulated in parts; the counters as one [`NodeSim`] counts them.
    Merged {
        /// All threads.
        stats: HierarchyStats,
        /// Per thread, by thread number.
        threads: Vec<ThreadStats>,
    },
}

impl Simulated {
    /// Counters of the whole node ([`NodeSim::stats`]).
    pub(crate) fn stats(&self) -> HierarchyStats {
        match self {
            Simulated::Node(s) => s.as_ref().stats(),
            Simulated::Merged { stats, .. } => stats.clone(),
        }
    }

    /// Counters per thread ([`NodeSim::thread_stats`]).
    pub(crate) fn thread_stats(&self) -> Vec<ThreadStats> {
        match self {
            Simulated::Node(s) => s.as_ref().thread_stats(),
            Simulated::Merged { threads, .. } => threads.clone(),
        }
    }
}

/// Simulators used whole.
pub(crate) fn whole(sims: Vec<NodeSim>) -> Vec<Simulated> {
    sims.into_iter()
        .map(|s| Simulated::Node(Box::new(s)))
        .collect()
}

/// How the simulation is spread over threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spread {
    /// Worker threads (1: the reading thread simulates everything).
    pub(crate) workers: usize,
    /// Machines are cut by set class (else one whole machine per worker).
    by_sets: bool,
}

/// The CPUs the simulation may use for `machines` distinct machines on a host of `cpus`,
/// `reserved` of them the producer's: the others, but two on a 2-CPU host simulating three
/// machines or more. QEMU keeps its CPU only while the simulation keeps up; with many
/// machines (analyze simulates 6 for its default targets) the simulation is far behind and
/// QEMU waits for free ring slots most of the run, so one worker per machine group uses the
/// CPU QEMU leaves idle. With two machines the reader is about as busy as QEMU and a second
/// worker gains nothing. A/B in one hyperfine run per workload (2 CPUs, load average 1.4
/// to 6; docs/mix-performance.md): `analyze`, wall x0.81 (CG), x0.87 (edge), x0.87
/// (triad_stencil), x1.02 (Monte-Carlo, QEMU-bound); `mix` of two machines on two workers,
/// x0.94 to x1.04. With first levels in common simulated once: `analyze` x0.75 (edge) to
/// x1.02 (Monte-Carlo).
pub(crate) fn simulation_cpus(cpus: usize, reserved: usize, machines: usize) -> usize {
    let spare = cpus.saturating_sub(reserved);
    if reserved > 0 && spare < 2 && cpus >= 2 && machines >= 3 {
        2
    } else {
        spare
    }
}

/// The spread for `sims` with `spare` CPUs (or what [`WORKERS_ENV`] and [`SPLIT_ENV`]
/// force).
pub(crate) fn spread(sims: &[NodeSim], spare: usize) -> Result<Spread, MixError> {
    let forced = match std::env::var(WORKERS_ENV) {
        Ok(v) => Some(v.trim().parse::<usize>().ok().filter(|&n| n >= 1).ok_or_else(|| {
            MixError::Usage {
                message: format!("{WORKERS_ENV}='{v}' is not a number of simulation threads"),
                fix: format!(
                    "set {WORKERS_ENV} to a whole number from 1 (simulate on the reading thread) up, or unset it to use the spare CPUs"
                ),
            }
        })?),
        Err(_) => None,
    };
    let cpus = forced.unwrap_or(spare);
    let by_sets = match std::env::var(SPLIT_ENV).as_deref().map(str::trim) {
        Err(_) | Ok("auto") => cpus > sims.len(),
        Ok("sets") => true,
        Ok("machines") => false,
        Ok(v) => {
            return Err(MixError::Usage {
                message: format!("{SPLIT_ENV}='{v}' is not a way to share the simulation"),
                fix: format!(
                    "set {SPLIT_ENV} to sets (by set class), machines (one worker per machine) or auto, or unset it"
                ),
            });
        }
    };
    Ok(spread_for(sims, cpus, by_sets))
}

fn spread_for(sims: &[NodeSim], cpus: usize, by_sets: bool) -> Spread {
    // At most as many workers as there are parts to give them.
    let parts: usize = sims
        .iter()
        .map(|s| match cut(s.config()) {
            Some((g, _)) if by_sets => usize::try_from(g).unwrap_or(usize::MAX),
            _ => 1,
        })
        .fold(0, usize::saturating_add);
    Spread {
        workers: cpus.min(parts).max(1),
        by_sets,
    }
}

/// A machine's class count and log2 line size, when it can be cut by set class: one line
/// size at every level and at least two classes.
fn cut(n: &hpcscope_cachesim::NodeConfig) -> Option<(u64, u32)> {
    let (g, shift) = classes_of(n);
    (one_line_size(n) && g >= 2).then_some((g, shift))
}

/// Parts to cut a machine of `g` classes into for `w` workers: the smallest divisor of `g`
/// of at least `w` whose parts spread over the workers within 1/8 of evenly, else the most
/// even (or `g` itself when it has fewer classes than workers).
fn parts_for(g: u64, w: usize) -> u64 {
    let w = w as u64;
    if w <= 1 {
        return 1;
    }
    let mut best = (f64::INFINITY, g);
    for d in (w..=g).filter(|d| g.is_multiple_of(*d)) {
        // The busiest worker's parts over the mean.
        let imbalance = d.div_ceil(w) as f64 * w as f64 / d as f64;
        if imbalance <= 1.125 {
            return d;
        }
        if imbalance < best.0 {
            best = (imbalance, d);
        }
    }
    best.1
}

/// Records a worker takes at a time (32 KiB of them).
const CHUNK: usize = 4096;

/// A worker's parts of one machine.
#[derive(Debug)]
struct Parts {
    machine: usize,
    /// log2 of the line size.
    shift: u32,
    /// Parts the machine is cut into (`P`), and log2 of it when a power of two.
    p: u64,
    p_shift: Option<u32>,
    /// Per part, the index of its simulator here, or `sims.len()` (the slot thrown away)
    /// when another worker has it.
    slot: Vec<u32>,
    sims: Vec<NodeSim>,
    /// Per slot (one more than `sims`), the records of the current run at the part's own
    /// addresses: the first `lens[slot]` (the rest is room left from earlier runs).
    bufs: Vec<Vec<Item>>,
    lens: Vec<usize>,
    /// Per thread, the accesses that straddled lines and their pieces beyond the first,
    /// counted here when the first piece is in one of these parts.
    splits: BTreeMap<u32, (u64, u64)>,
    /// Whether the parts may be simulated a chunk at a time ([`batch_ends_free`]), else a
    /// run at a time.
    chunked: bool,
}

/// Whether a node's counters are the same however its accesses are cut into batches: what
/// a node does at the end of a batch (the inclusive back-invalidations in the other cores'
/// caches) changes only counters when no shared level has another level below it (a
/// write-back from the last level goes to memory, where it is counted and nothing else),
/// but moves a line into the next level otherwise, later than the accesses of the batch.
fn batch_ends_free(n: &hpcscope_cachesim::NodeConfig) -> bool {
    n.inclusion != hpcscope_cachesim::Inclusion::Inclusive
        || n.levels
            .iter()
            .rev()
            .skip(1)
            .all(|l| l.shared_by_cores <= 1)
}

impl Parts {
    /// The part of line `l`, and `l`'s line number inside the part.
    #[inline(always)]
    fn locate(&self, l: u64) -> (usize, u64) {
        match self.p_shift {
            Some(k) => ((l & (self.p - 1)) as usize, l >> k),
            None => ((l % self.p) as usize, l / self.p),
        }
    }

    /// Makes room in every slot for `more` records after what it holds.
    fn room(&mut self, more: usize) {
        for (b, &n) in self.bufs.iter_mut().zip(&self.lens) {
            if b.len() < n + more + 1 {
                b.resize(n + more + 1, Item::default());
            }
        }
    }

    /// Takes the records of this worker's parts from `recs`, part of thread `t`'s current
    /// run, for [`Parts::flush`].
    fn filter(&mut self, t: u32, recs: &[PackedAccess]) {
        let shift = self.shift;
        let mask = (1u64 << shift) - 1;
        self.room(recs.len());
        let mut i = 0;
        if let (1, Some(k)) = (self.sims.len(), self.p_shift) {
            i = self.filter_one(t, recs, k);
        }
        while i < recs.len() {
            let r = recs[i];
            i += 1;
            let addr = r.addr();
            let line = addr >> shift;
            let off = addr & mask;
            if off + (1u64 << ((r.0 >> 56) & 0xf)) > mask + 1 {
                self.pieces(t, r);
                self.room(recs.len() - i);
                continue;
            }
            // Every record is written, those of other workers' parts to a slot that is
            // thrown away (`sims.len()`): no branch that a random stream mispredicts.
            let (part, inner) = self.locate(line);
            let s = self.slot[part] as usize;
            let n = self.lens[s];
            self.bufs[s][n] = Item::of(r, inner << shift | off);
            self.lens[s] = n + 1;
        }
    }

    /// [`Parts::filter`] when this worker has one part of a power-of-two count (the usual
    /// case: as many parts as workers), in a loop whose state stays in registers: every
    /// record is written at the next free place, which moves on only for a record of this
    /// part. Returns how many records it took (all of them).
    fn filter_one(&mut self, t: u32, recs: &[PackedAccess], k: u32) -> usize {
        let shift = self.shift;
        let mask = (1u64 << shift) - 1;
        let pm = self.p - 1;
        let own = self.slot.iter().position(|&s| s == 0).unwrap_or(0) as u64;
        let mut n = self.lens[0];
        let mut i = 0;
        loop {
            let buf = &mut self.bufs[0][..];
            while let Some(&r) = recs.get(i) {
                let addr = r.addr();
                let line = addr >> shift;
                let off = addr & mask;
                if off + (1u64 << ((r.0 >> 56) & 0xf)) > mask + 1 {
                    break;
                }
                buf[n] = Item::of(r, (line >> k) << shift | off);
                n += usize::from(line & pm == own);
                i += 1;
            }
            let Some(&r) = recs.get(i) else { break };
            i += 1;
            self.lens[0] = n;
            self.pieces(t, r);
            self.room(recs.len() - i);
            n = self.lens[0];
        }
        self.lens[0] = n;
        i
    }

    /// A record that straddles lines: its pieces, one per line, each in its line's part
    /// (what the hierarchy does with such an access; a record standing for several is
    /// several), and its count as one access and one split access.
    #[cold]
    fn pieces(&mut self, t: u32, r: PackedAccess) {
        let shift = self.shift;
        let mask = (1u64 << shift) - 1;
        let mine = self.sims.len();
        let a = r.into_access();
        let line = a.addr >> shift;
        let last = a.addr.saturating_add(u64::from(a.size.max(1)) - 1);
        let n = r.count();
        if (self.slot[self.locate(line).0] as usize) < mine {
            let e = self.splits.entry(t).or_default();
            e.0 += n;
            e.1 += n * ((last >> shift) - line);
        }
        for _ in 0..n {
            for l in line..=last >> shift {
                let (part, inner) = self.locate(l);
                let s = self.slot[part] as usize;
                if s >= mine {
                    continue;
                }
                let lo = (l << shift).max(a.addr);
                let hi = ((l << shift) | mask).min(last);
                let piece = Item {
                    addr: inner << shift | (lo & mask),
                    size: (hi - lo + 1) as u32,
                    meta: 1 | u32::from(a.is_write) << 31,
                };
                let (b, k) = (&mut self.bufs[s], &mut self.lens[s]);
                if *k < b.len() {
                    b[*k] = piece;
                } else {
                    b.push(piece);
                }
                *k += 1;
            }
        }
    }

    /// Simulates the records of thread `t` taken so far: one batch per part.
    fn flush(&mut self, t: u32) {
        for (s, sim) in self.sims.iter_mut().enumerate() {
            let k = std::mem::take(&mut self.lens[s]);
            if k > 0 {
                sim.access_batch(t, &self.bufs[s][..k]);
            }
        }
        let trash = self.sims.len();
        self.lens[trash] = 0;
    }
}

/// One record or line piece at a part's own address, as the simulator takes it: a line
/// piece of an access across lines may have any size up to the line's, which a
/// [`PackedAccess`] cannot hold.
#[derive(Clone, Copy, Debug, Default)]
struct Item {
    addr: u64,
    size: u32,
    /// How many accesses it stands for in bits 0-30, a store in bit 31.
    meta: u32,
}

impl Item {
    /// Record `r` (size, repeats, store) at address `addr`.
    #[inline(always)]
    fn of(r: PackedAccess, addr: u64) -> Self {
        Item {
            addr,
            size: 1 << r.size_shift(),
            meta: r.count() as u32 | u32::from(r.is_write()) << 31,
        }
    }
}

impl IntoAccess for Item {
    #[inline(always)]
    fn into_access(self) -> Access {
        Access {
            addr: self.addr,
            size: self.size,
            is_write: self.meta >> 31 != 0,
        }
    }

    #[inline(always)]
    fn count(self) -> u64 {
        u64::from(self.meta & 0x7fff_ffff)
    }
}

/// What one worker simulates of one machine.
#[derive(Debug)]
enum Job {
    /// The whole machine, fed the stream as it comes.
    Whole { machine: usize, sim: Box<NodeSim> },
    /// Whole machines that have first levels in common, simulated once for them all.
    Shared {
        machines: Vec<usize>,
        sim: Box<SharedNodes>,
    },
    /// Some of the machine's parts.
    Parts(Parts),
}

/// What one worker thread simulates: its parts of each machine.
#[derive(Debug, Default)]
pub(crate) struct Worker {
    jobs: Vec<Job>,
}

impl Worker {
    /// Thread `t`'s next records (every record of the stream, in order: the worker keeps
    /// those of its parts).
    pub(crate) fn feed(&mut self, t: u32, recs: &[PackedAccess]) {
        // Each machine's parts take their records in chunks that stay in the host's L1 and
        // L2 while every machine reads them; the simulators get the run whole.
        for chunk in recs.chunks(CHUNK) {
            for j in &mut self.jobs {
                if let Job::Parts(p) = j {
                    p.filter(t, chunk);
                    if p.chunked {
                        p.flush(t);
                    }
                }
            }
        }
        for j in &mut self.jobs {
            match j {
                Job::Whole { sim, .. } => sim.access_batch(t, recs),
                Job::Shared { sim, .. } => sim.access_batch(t, recs),
                Job::Parts(p) => p.flush(t),
            }
        }
    }
}

/// Cuts the machines of `sims` and gives the parts to `spread.workers` workers.
pub(crate) fn plan(sims: Vec<NodeSim>, spread: Spread) -> Result<Vec<Worker>, MixError> {
    let w = spread.workers.max(1);
    let cuttable = sims
        .iter()
        .filter(|s| spread.by_sets && cut(s.config()).is_some())
        .count();
    // With workers enough, each machine is cut for its share of them (a worker then
    // simulates parts of fewer machines); else for all of them.
    let share = if cuttable >= 1 && w >= 2 * cuttable {
        w / cuttable
    } else {
        w
    };
    // Per machine: parts, log2 line size, and the simulator to use whole.
    let mut shapes: Vec<(
        u64,
        u32,
        Option<NodeSim>,
        hpcscope_cachesim::NodeConfig,
        Placement,
    )> = Vec::new();
    for sim in sims {
        let cfg = sim.config().clone();
        let placement = sim.placement().clone();
        match cut(&cfg).filter(|_| spread.by_sets) {
            Some((g, shift)) if parts_for(g, share) > 1 => {
                // The full-size simulator is not used: its parts are built below.
                drop(sim);
                shapes.push((parts_for(g, share), shift, None, cfg, placement));
            }
            _ => shapes.push((1, 0, Some(sim), cfg, placement)),
        }
    }
    // Whole machines with first levels in common go to one worker, which simulates those
    // levels once for them all (`SharedNodes`).
    let mut workers: Vec<Worker> = (0..w).map(|_| Worker::default()).collect();
    let mut load = vec![0f64; w];
    for (machines, sim) in shared_groups(&shapes)? {
        // Cost: its level simulations, in machines of its members' mean depth.
        let levels: usize = machines.iter().map(|&m| shapes[m].3.levels.len()).sum();
        let cost = sim.level_simulations() as f64 * machines.len() as f64 / levels as f64;
        let k = (0..w)
            .min_by(|&a, &b| load[a].total_cmp(&load[b]))
            .expect("one worker at least");
        load[k] += cost;
        for &m in &machines {
            shapes[m].2 = None;
            shapes[m].0 = 0;
        }
        workers[k].jobs.push(Job::Shared { machines, sim });
    }
    // Longest first: a whole machine, then the parts of the machines cut in fewest; each to
    // the least busy worker (the first of them). Each machine is assumed to cost the same.
    let mut jobs: Vec<(usize, u64)> = shapes
        .iter()
        .enumerate()
        .flat_map(|(m, s)| (0..s.0).map(move |p| (m, p)))
        .collect();
    jobs.sort_by_key(|&(m, _)| shapes[m].0);
    let mut owner: Vec<Vec<usize>> = shapes.iter().map(|s| vec![0; s.0 as usize]).collect();
    for &(m, p) in &jobs {
        let k = (0..w)
            .min_by(|&a, &b| load[a].total_cmp(&load[b]))
            .expect("one worker at least");
        load[k] += 1.0 / shapes[m].0 as f64;
        owner[m][p as usize] = k;
    }
    for (m, (p, shift, sim, cfg, placement)) in shapes.into_iter().enumerate() {
        if p == 0 {
            continue; // in a shared job
        }
        if let Some(sim) = sim {
            workers[owner[m][0]].jobs.push(Job::Whole {
                machine: m,
                sim: Box::new(sim),
            });
            continue;
        }
        let small = class_config(&cfg, p);
        for (k, wk) in workers.iter_mut().enumerate() {
            let mine: Vec<usize> = (0..p as usize).filter(|&q| owner[m][q] == k).collect();
            if mine.is_empty() {
                continue;
            }
            let mut slot = vec![mine.len() as u32; p as usize];
            for (i, &q) in mine.iter().enumerate() {
                slot[q] = i as u32;
            }
            let sims = mine
                .iter()
                .map(|_| NodeSim::new(small.clone(), placement.clone()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|source| MixError::SimulatedMachine {
                    machine: cfg.name.clone(),
                    source,
                })?;
            wk.jobs.push(Job::Parts(Parts {
                machine: m,
                shift,
                p,
                p_shift: p.is_power_of_two().then(|| p.trailing_zeros()),
                slot,
                bufs: vec![Vec::new(); sims.len() + 1],
                lens: vec![0; sims.len() + 1],
                sims,
                splits: BTreeMap::new(),
                chunked: batch_ends_free(&cfg),
            }));
        }
    }
    Ok(workers)
}

/// The machines of `shapes` to simulate whole (one part) that have first levels in common
/// with others, in groups that share them, each with its [`SharedNodes`].
#[allow(clippy::type_complexity)]
fn shared_groups(
    shapes: &[(
        u64,
        u32,
        Option<NodeSim>,
        hpcscope_cachesim::NodeConfig,
        Placement,
    )],
) -> Result<Vec<(Vec<usize>, Box<SharedNodes>)>, MixError> {
    let whole: Vec<usize> = (0..shapes.len())
        .filter(|&m| shapes[m].2.is_some())
        .collect();
    let Some(&first) = whole.first() else {
        return Ok(Vec::new());
    };
    let placement = &shapes[first].4;
    let cfgs: Vec<_> = whole.iter().map(|&m| shapes[m].3.clone()).collect();
    let all = SharedNodes::new(&cfgs, placement)?;
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, &m) in whole.iter().enumerate() {
        let root = all.root_of(i);
        match groups.iter_mut().find(|g| g.0 == root) {
            Some(g) => g.1.push(m),
            None => groups.push((root, vec![m])),
        }
    }
    groups
        .into_iter()
        .filter(|g| g.1.len() > 1)
        .map(|(_, machines)| {
            let cfgs: Vec<_> = machines.iter().map(|&m| shapes[m].3.clone()).collect();
            let sim = SharedNodes::new(&cfgs, placement)?;
            Ok((machines, Box::new(sim)))
        })
        .collect()
}

/// The machines' simulations from what the workers did, in the order [`plan`] was given
/// them: the counters of a cut machine added up over its parts, with its accesses and
/// split accesses counted as one simulator counts them.
pub(crate) fn merge(workers: Vec<Worker>, machines: usize) -> Vec<Simulated> {
    let mut whole: Vec<Option<Box<NodeSim>>> = (0..machines).map(|_| None).collect();
    let mut zero: Vec<Option<HierarchyStats>> = vec![None; machines];
    let mut threads: Vec<BTreeMap<u32, ThreadStats>> = vec![BTreeMap::new(); machines];
    let mut splits: Vec<BTreeMap<u32, (u64, u64)>> = vec![BTreeMap::new(); machines];
    let mut shared: Vec<Option<Simulated>> = (0..machines).map(|_| None).collect();
    for job in workers.into_iter().flat_map(|w| w.jobs) {
        match job {
            Job::Whole { machine, sim } => whole[machine] = Some(sim),
            Job::Shared { machines, sim } => {
                for (i, &m) in machines.iter().enumerate() {
                    shared[m] = Some(Simulated::Merged {
                        stats: sim.stats(i),
                        threads: sim.thread_stats(i),
                    });
                }
            }
            Job::Parts(p) => {
                let m = p.machine;
                for sim in &p.sims {
                    if zero[m].is_none() {
                        // Named levels, no counts: what a node that saw nothing reports.
                        let s = sim.stats();
                        zero[m] = Some(s.since(&s));
                    }
                    for ts in sim.thread_stats() {
                        match threads[m].get_mut(&ts.thread) {
                            Some(x) => crate::sampling::add_stats(&mut x.stats, &ts.stats),
                            None => {
                                threads[m].insert(ts.thread, ts);
                            }
                        }
                    }
                }
                for (t, (s, e)) in p.splits {
                    let x = splits[m].entry(t).or_default();
                    x.0 += s;
                    x.1 += e;
                }
            }
        }
    }
    let mut out = Vec::with_capacity(machines);
    for m in 0..machines {
        if let Some(sim) = whole[m].take() {
            out.push(Simulated::Node(sim));
            continue;
        }
        if let Some(s) = shared[m].take() {
            out.push(s);
            continue;
        }
        let mut stats = zero[m].take().unwrap_or_default();
        let mut ts: Vec<ThreadStats> = std::mem::take(&mut threads[m]).into_values().collect();
        for t in &mut ts {
            if let Some(&(s, e)) = splits[m].get(&t.thread) {
                // The pieces beyond the first were counted as accesses of their own.
                t.stats.accesses = t.stats.accesses.saturating_sub(e);
                t.stats.split_accesses += s;
            }
            crate::sampling::add_stats(&mut stats, &t.stats);
        }
        out.push(Simulated::Merged { stats, threads: ts });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_cachesim::{CacheConfig, Inclusion, NodeConfig, NodeLevel, Replacement};

    #[test]
    fn two_cpus_give_three_machines_or_more_two_workers() {
        // 2 CPUs, QEMU's one reserved: one or two machines stay on the reading thread,
        // three or more get two workers.
        assert_eq!(simulation_cpus(2, 1, 1), 1);
        assert_eq!(simulation_cpus(2, 1, 2), 1);
        assert_eq!(simulation_cpus(2, 1, 3), 2);
        assert_eq!(simulation_cpus(2, 1, 6), 2);
        // One CPU: no second worker to gain anything.
        assert_eq!(simulation_cpus(1, 1, 6), 0);
        // More CPUs: every CPU beyond QEMU's, as before.
        assert_eq!(simulation_cpus(4, 1, 6), 3);
        assert_eq!(simulation_cpus(8, 1, 1), 7);
        // No producer (a replay): every CPU.
        assert_eq!(simulation_cpus(2, 0, 1), 2);
    }

    fn lvl(name: &str, size: u64, line: u64, ways: u32, shared: u32) -> NodeLevel {
        NodeLevel {
            cache: CacheConfig::new(name, size, line, ways),
            shared_by_cores: shared,
        }
    }

    /// Small machines of every kind the decomposition meets: private L1 and L2 with a
    /// shared L3 (inclusive, non-inclusive, exclusive), a set count that is not a power of
    /// two, 128-byte lines beside 64-byte ones, tree pseudo-LRU, more than 16 ways (LRU
    /// stamps), an inclusive L2 shared above an L3; and one it cannot cut (set counts with no
    /// common divisor: one class).
    fn machines() -> Vec<NodeConfig> {
        let three = |name: &str, inclusion| NodeConfig {
            name: name.into(),
            // 16, 64 and 3 x 64 sets: 16 classes.
            levels: vec![
                lvl("L1", 4 << 10, 64, 4, 1),
                lvl("L2", 32 << 10, 64, 8, 1),
                lvl("L3", 3 * 64 * 64 * 16, 64, 16, 4),
            ],
            cores: 4,
            inclusion,
        };
        let mut plru = three("plru", Inclusion::NonInclusive);
        plru.levels[0].cache = plru.levels[0]
            .cache
            .clone()
            .with_replacement(Replacement::TreePlru);
        vec![
            three("inclusive", Inclusion::Inclusive),
            three("non-inclusive", Inclusion::NonInclusive),
            three("exclusive", Inclusion::Exclusive),
            plru,
            NodeConfig {
                name: "wide".into(),
                // 128-byte lines; 8 sets of 32 ways (stamps), 96 sets shared by 2: 8 classes.
                levels: vec![
                    lvl("L1", 8 * 32 * 128, 128, 32, 1),
                    lvl("L2", 96 * 8 * 128, 128, 8, 2),
                ],
                cores: 2,
                inclusion: Inclusion::Inclusive,
            },
            NodeConfig {
                name: "shared-middle".into(),
                // An inclusive L2 shared by 2 cores above an L3 shared by 4: a line the L2
                // evicts while a dirty copy sits in the other core's L1 is written back
                // into the L3 after the batch (the simulator's back-invalidation), so the
                // batches must be the sequential simulator's.
                levels: vec![
                    lvl("L1", 2 << 10, 64, 2, 1),
                    lvl("L2", 8 << 10, 64, 4, 2),
                    lvl("L3", 64 << 10, 64, 8, 4),
                ],
                cores: 4,
                inclusion: Inclusion::Inclusive,
            },
            NodeConfig {
                name: "one-class".into(),
                // 16 and 3 x 5 sets: gcd 1.
                levels: vec![
                    lvl("L1", 16 * 4 * 64, 64, 4, 1),
                    lvl("L2", 15 * 8 * 64, 64, 8, 4),
                ],
                cores: 4,
                inclusion: Inclusion::Inclusive,
            },
        ]
    }

    /// A stream of `threads` threads in runs: a shared array, a private one each, random
    /// lines over a few times the last level, stores, coalesced records and accesses that
    /// straddle lines (up to 4 of them).
    fn stream(seed: u64, threads: u32, n: usize) -> Vec<(u32, Vec<PackedAccess>)> {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut runs = Vec::new();
        let mut i = 0;
        while i < n {
            let t = (next() % u64::from(threads)) as u32;
            // Mostly short runs, some longer than a worker's chunk.
            let len = if next() % 8 == 0 {
                CHUNK + (next() % 3000) as usize
            } else {
                1 + (next() % 300) as usize
            };
            let mut run = Vec::with_capacity(len);
            for _ in 0..len {
                let r = next();
                let addr = match r % 5 {
                    0 => 0x10_0000 + (r >> 8) % (96 << 10),
                    1 => 0x80_0000 * (1 + u64::from(t)) + (i as u64 * 8) % (40 << 10),
                    2 => 0x4000_0000 + (r >> 8) % (1 << 20),
                    _ => 0x20_0000 + (r >> 16) % (8 << 10),
                };
                let size = 1u32 << ((r >> 40) % 9); // 1 to 256 bytes
                let p = PackedAccess::new(addr, size, (r >> 50) % 3 == 0).expect("small");
                // A repeated access inside one line (what the producer coalesces).
                let p = if (r >> 52) % 7 == 0 && (addr & 63) + u64::from(size) * 4 <= 64 {
                    PackedAccess::new(addr, size, r >> 62 == 1)
                        .and_then(|p| p.with_count(1 + (r >> 55) % 4))
                        .unwrap_or(p)
                } else {
                    p
                };
                run.push(p);
            }
            i += len;
            runs.push((t, run));
        }
        runs
    }

    fn simulate(
        cfgs: &[NodeConfig],
        placement: &Placement,
        runs: &[(u32, Vec<PackedAccess>)],
        workers: usize,
        by_sets: bool,
    ) -> Vec<Simulated> {
        let sims: Vec<NodeSim> = cfgs
            .iter()
            .map(|c| NodeSim::new(c.clone(), placement.clone()).expect("valid"))
            .collect();
        let s = spread_for(&sims, workers, by_sets);
        let mut ws = plan(sims, s).expect("valid");
        for (t, r) in runs {
            for w in &mut ws {
                w.feed(*t, r);
            }
        }
        merge(ws, cfgs.len())
    }

    fn check(cfgs: &[NodeConfig], placement: &Placement, seed: u64, threads: u32) {
        let runs = stream(seed, threads, 60_000);
        let mut reference: Vec<NodeSim> = cfgs
            .iter()
            .map(|c| NodeSim::new(c.clone(), placement.clone()).expect("valid"))
            .collect();
        for (t, r) in &runs {
            for s in &mut reference {
                s.access_batch(*t, r);
            }
        }
        for w in [2, 3, 5, 16] {
            let got = simulate(cfgs, placement, &runs, w, true);
            for (a, b) in got.iter().zip(&reference) {
                let what = format!(
                    "{} with {w} workers, {threads} threads, {placement:?}, seed {seed}",
                    b.config().name
                );
                assert_eq!(a.stats(), b.stats(), "{what}");
                assert_eq!(a.thread_stats(), b.thread_stats(), "{what}");
            }
        }
    }

    #[test]
    fn every_counter_is_the_one_simulator_s() {
        let cfgs = machines();
        let placements = [
            Placement::Compact,
            Placement::Scatter,
            Placement::List(vec![3, 0, 2]),
        ];
        for (k, seed) in [0x2545_f491_4f6c_dd1du64, 0x9e37_79b9_7f4a_7c15, 7]
            .into_iter()
            .enumerate()
        {
            for threads in 1..=3 {
                check(
                    &cfgs,
                    &placements[(k + threads as usize) % 3],
                    seed,
                    threads,
                );
            }
        }
    }

    #[test]
    fn machines_that_cannot_be_cut_stay_whole() {
        let cfgs = machines();
        let sims: Vec<NodeSim> = cfgs
            .iter()
            .map(|c| NodeSim::new(c.clone(), Placement::Compact).expect("valid"))
            .collect();
        let ws = plan(
            sims,
            Spread {
                workers: 4,
                by_sets: true,
            },
        )
        .expect("valid");
        let mut whole = Vec::new();
        let mut parts: BTreeMap<usize, u64> = BTreeMap::new();
        for w in &ws {
            for j in &w.jobs {
                match j {
                    Job::Whole { machine, .. } => whole.push(*machine),
                    Job::Shared { machines, .. } => whole.extend(machines),
                    Job::Parts(p) => *parts.entry(p.machine).or_default() += p.sims.len() as u64,
                }
            }
        }
        whole.sort_unstable();
        // One class: whole. The others: cut in at least 4 parts in all.
        assert_eq!(whole, [6]);
        for m in 0..6 {
            assert!(parts[&m] >= 4, "machine {m}: {parts:?}");
        }
        // One worker per machine when asked to.
        let sims: Vec<NodeSim> = cfgs
            .iter()
            .map(|c| NodeSim::new(c.clone(), Placement::Compact).expect("valid"))
            .collect();
        let s = spread_for(&sims, 3, false);
        assert_eq!(s.workers, 3);
        let ws = plan(sims, s).expect("valid");
        let per: Vec<usize> = ws.iter().map(|w| w.jobs.len()).collect();
        assert_eq!(per, [3, 2, 2]);
        assert!(
            ws.iter()
                .flat_map(|w| &w.jobs)
                .all(|j| matches!(j, Job::Whole { .. }))
        );
    }

    #[test]
    fn parts_spread_evenly() {
        assert_eq!(parts_for(64, 1), 1);
        assert_eq!(parts_for(64, 2), 2);
        assert_eq!(parts_for(64, 3), 8); // 3, 3, 2 parts of 8
        assert_eq!(parts_for(256, 63), 256);
        assert_eq!(parts_for(4, 8), 4); // fewer classes than workers
        assert_eq!(parts_for(48, 5), 24);
        // More workers than parts: no idle ones.
        let one = NodeSim::new(machines().remove(4), Placement::Compact).expect("valid");
        assert_eq!(spread_for(&[one], 16, true).workers, 8);
    }
}
