//! What the probes left in their maps, read once the window closes: counts, histograms,
//! stacks, messages, what was lost, and the sampled profile.

use super::*;

/// The entries of a hash map, grouped by `key(k)` (the per-thread entries of one process,
/// say): each group's values, in no particular order.
pub(super) fn grouped<K: aya::Pod + Eq + std::hash::Hash, V: aya::Pod>(
    bpf: &Ebpf,
    name: &str,
    key: impl Fn(K) -> K,
) -> Result<Vec<(K, Vec<V>)>, TraceError> {
    let m: BpfHashMap<&MapData, K, V> = BpfHashMap::try_from(bpf.map(name).expect("map in object"))
        .map_err(|e| bpf_err(name, &e))?;
    let mut out: HashMap<K, Vec<V>> = HashMap::new();
    for r in m.iter() {
        let (k, v) = r.map_err(|e| bpf_err(name, &e))?;
        out.entry(key(k)).or_default().push(v);
    }
    Ok(out.into_iter().collect())
}

pub(super) fn percpu_hash<K: aya::Pod, V: aya::Pod>(
    bpf: &Ebpf,
    name: &str,
) -> Result<Vec<(K, Vec<V>)>, TraceError> {
    let m: PerCpuHashMap<&MapData, K, V> =
        PerCpuHashMap::try_from(bpf.map(name).expect("map in object"))
            .map_err(|e| bpf_err(name, &e))?;
    let mut out = Vec::new();
    for r in m.iter() {
        let (k, v) = r.map_err(|e| bpf_err(name, &e))?;
        out.push((k, v.iter().copied().collect()));
    }
    Ok(out)
}

pub(super) fn percpu_hist(bpf: &Ebpf, name: &str) -> Result<Log2Hist, TraceError> {
    let m: PerCpuArray<&MapData, u64> =
        PerCpuArray::try_from(bpf.map(name).expect("map in object"))
            .map_err(|e| bpf_err(name, &e))?;
    let mut slots = vec![0u64; HIST_SLOTS];
    for (i, s) in slots.iter_mut().enumerate() {
        if let Ok(v) = m.get(&(i as u32), 0) {
            *s = v.iter().sum();
        }
    }
    Ok(Log2Hist::from_slots(&slots))
}

#[allow(clippy::too_many_lines)]
pub(super) fn collect(
    bpf: &Ebpf,
    opts: &TraceOptions,
    resolved: &[target::ResolvedFn],
    (comms, parents): (&HashMap<u32, String>, &HashMap<u32, u32>),
    notes: &mut Vec<String>,
    (start_ns, end_ns): (u64, u64),
) -> Result<TraceReport, TraceError> {
    let mut procs: BTreeMap<u32, ProcessLevel> = BTreeMap::new();
    let probes = &opts.probes;
    // The on-CPU slices still open when the window closed, ended there (as in the summary).
    let mut open_slices: Vec<TimelineEvent> = Vec::new();
    // Run time of the threads that existed at the start, as the kernel counted it then.
    let base: HashMap<u32, u64> = match bpf
        .map("runtime_base")
        .map(BpfHashMap::<&MapData, u32, u64>::try_from)
    {
        Some(Ok(m)) => m.iter().filter_map(Result::ok).collect(),
        _ => HashMap::new(),
    };

    if probes.sched || probes.faults || probes.timeline {
        let m: BpfHashMap<&MapData, u32, ThreadStats> =
            BpfHashMap::try_from(bpf.map("threads").expect("threads map"))
                .map_err(|e| bpf_err("threads", &e))?;
        for r in m.iter() {
            let (tid, t) = r.map_err(|e| bpf_err("threads", &e))?;
            let p = procs.entry(t.tgid).or_insert_with(|| ProcessLevel {
                pid: t.tgid,
                ..Default::default()
            });
            // Close the intervals still open at the end of the trace: a thread on a CPU now
            // ran since its last switch in (or, never switched, since the start).
            let never_switched = t.last_on_ts == 0
                && t.last_off_ts == 0
                && t.vol_switches + t.invol_switches == 0
                && t.minor_faults + t.major_faults > 0;
            let running_since = if t.last_on_ts != 0 {
                Some(t.last_on_ts)
            } else if never_switched && t.exited == 0 {
                Some(start_ns)
            } else {
                None
            };
            let window = end_ns.saturating_sub(start_ns);
            let open_on = match (running_since, base.get(&tid)) {
                // Running the whole window as far as the probes saw: the kernel's own run
                // time since the start says how much of it the thread really ran.
                (Some(s), Some(b)) if s == start_ns => thread_runtime(tid)
                    .map(|r| r.saturating_sub(*b).min(window))
                    .unwrap_or(window),
                (Some(s), _) => end_ns.saturating_sub(s),
                (None, _) => 0,
            };
            if probes.timeline
                && open_on > 0
                && let Some(s) = running_since
                && timeline_keeps(probes, "on-cpu", "on-cpu")
            {
                open_slices.push(TimelineEvent {
                    name: "on-cpu".into(),
                    pid: t.tgid,
                    tid,
                    start_ns: s.saturating_sub(start_ns),
                    dur_ns: open_on,
                    cpu: t.last_cpu,
                });
            }
            let open_off = if t.last_off_ts != 0 && t.exited == 0 {
                end_ns.saturating_sub(t.last_off_ts)
            } else {
                0
            };
            let th = ThreadLevel {
                tid,
                comm: cstr(&t.comm),
                on_cpu_ns: t.on_cpu_ns + open_on,
                off_cpu_ns: t.off_cpu_ns + open_off,
                runq_ns: t.runq_ns,
                runq_max_ns: t.runq_max_ns,
                voluntary_switches: t.vol_switches,
                involuntary_switches: t.invol_switches,
                migrations: t.migrations,
                wakeups: t.wakeups,
                minor_faults: t.minor_faults,
                major_faults: t.major_faults,
                exited: t.exited != 0,
            };
            p.on_cpu_ns += th.on_cpu_ns;
            p.off_cpu_ns += th.off_cpu_ns;
            p.minor_faults += th.minor_faults;
            p.major_faults += th.major_faults;
            p.context_switches += th.voluntary_switches + th.involuntary_switches;
            p.threads.push(th);
        }
    }
    if probes.sched && matches!(opts.target, Target::Pid(_) | Target::Cgroup(_)) {
        quiet_threads(
            bpf,
            opts,
            &mut procs,
            notes,
            &base,
            end_ns.saturating_sub(start_ns),
        );
    }
    if probes.syscalls {
        // Kept per thread: summed per process here.
        for (k, v) in grouped::<ScKey, ScStats>(bpf, "sc_stats", |k| ScKey { tid: 0, ..k })? {
            let slots = sum_slots(v.iter().map(|s| &s.hist[..]), HIST_SLOTS);
            let p = procs.entry(k.tgid).or_insert_with(|| ProcessLevel {
                pid: k.tgid,
                ..Default::default()
            });
            p.syscalls.push(SyscallStat {
                name: syscalls::name(k.nr),
                nr: k.nr,
                count: v.iter().map(|s| s.count).sum(),
                errors: v.iter().map(|s| s.errors).sum(),
                untimed: v.iter().map(|s| s.untimed).sum(),
                total_ns: v.iter().map(|s| s.total_ns).sum(),
                max_ns: v.iter().map(|s| s.max_ns).max().unwrap_or(0),
                min_ns: v
                    .iter()
                    .filter(|s| s.count > s.untimed)
                    .map(|s| s.min_ns)
                    .min()
                    .unwrap_or(0),
                latency_ns: Log2Hist::from_slots(&slots),
            });
        }
        let untimed: u64 = procs
            .values()
            .flat_map(|p| &p.syscalls)
            .map(|s| s.untimed)
            .sum();
        if untimed > 0 {
            notes.push(format!(
                "{untimed} system call(s) were in flight when the trace attached (a process blocked in one): counted, as strace counts them, but not timed (`untimed` in the JSON; the latencies are the other calls')"
            ));
        }
    }
    if probes.files {
        let paths: HashMap<(u32, i32, u32), String> = {
            let m: BpfHashMap<&MapData, FdKey, FdPath> =
                BpfHashMap::try_from(bpf.map("fd_paths").expect("fd_paths"))
                    .map_err(|e| bpf_err("fd_paths", &e))?;
            m.iter()
                .filter_map(Result::ok)
                .map(|(k, v)| ((k.tgid, k.fd, k.generation), cstr(&v.path)))
                .collect()
        };
        let gens: HashMap<(u32, i32), u32> = {
            let m: BpfHashMap<&MapData, FdKey, u32> =
                BpfHashMap::try_from(bpf.map("fd_gens").expect("fd_gens"))
                    .map_err(|e| bpf_err("fd_gens", &e))?;
            m.iter()
                .filter_map(Result::ok)
                .map(|(k, g)| ((k.tgid, k.fd), g))
                .collect()
        };
        for (k, v) in grouped::<FdKey, FdStats>(bpf, "fd_stats", |k| k)? {
            let p = procs.entry(k.tgid).or_insert_with(|| ProcessLevel {
                pid: k.tgid,
                ..Default::default()
            });
            // Generation 0 was opened before the trace (or before the process was forked):
            // its path was read at the start, or is its parent's, else is in procfs if the
            // process still runs.
            let path = paths
                .get(&(k.tgid, k.fd, k.generation))
                .cloned()
                .or_else(|| {
                    (k.generation == 0)
                        .then(|| inherited_path(k.tgid, k.fd, parents, &gens, &paths))
                        .flatten()
                })
                .or_else(|| {
                    (k.generation == 0)
                        .then(|| std::fs::read_link(format!("/proc/{}/fd/{}", k.tgid, k.fd)).ok())
                        .flatten()
                        .map(|p| p.display().to_string())
                });
            p.files.push(FileStat {
                fd: k.fd,
                path,
                read_bytes: v.iter().map(|s| s.read_bytes).sum(),
                write_bytes: v.iter().map(|s| s.write_bytes).sum(),
                reads: v.iter().map(|s| s.reads).sum(),
                writes: v.iter().map(|s| s.writes).sum(),
            });
        }
    }
    if probes.files {
        for (k, v) in
            grouped::<IoSizeKey, IoSizeStats>(bpf, "io_sizes", |k| IoSizeKey { tid: 0, ..k })?
        {
            let p = procs.entry(k.tgid).or_insert_with(|| ProcessLevel {
                pid: k.tgid,
                ..Default::default()
            });
            p.io_sizes.push(IoSizes {
                op: if k.dir == 1 { "read" } else { "write" }.into(),
                calls: v.iter().map(|s| s.calls).sum(),
                bytes: v.iter().map(|s| s.bytes).sum(),
                size_bytes: Log2Hist::from_slots(&sum_slots(
                    v.iter().map(|s| &s.hist[..]),
                    HIST_SLOTS,
                )),
            });
            p.io_sizes.sort_by(|a, b| a.op.cmp(&b.op));
        }
    }
    if !resolved.is_empty() || !probes.kfuncs.is_empty() {
        for (k, v) in grouped::<FnKey, FnStats>(bpf, "fn_stats", |k| FnKey { tid: 0, ..k })? {
            let (symbol, binary) = match resolved.get(k.slot as usize) {
                Some(f) => (f.symbol.clone(), f.path.display().to_string()),
                None => (
                    probes.kfuncs.first().cloned().unwrap_or_default(),
                    "[kernel]".into(),
                ),
            };
            let slots = sum_slots(v.iter().map(|s| &s.hist[..]), HIST_SLOTS);
            let count: u64 = v.iter().map(|s| s.count).sum();
            let p = procs.entry(k.tgid).or_insert_with(|| ProcessLevel {
                pid: k.tgid,
                ..Default::default()
            });
            p.functions.push(FunctionStat {
                symbol,
                binary,
                count,
                total_ns: v.iter().map(|s| s.total_ns).sum(),
                min_ns: v
                    .iter()
                    .filter(|s| s.count > 0)
                    .map(|s| s.min_ns)
                    .min()
                    .unwrap_or(0),
                max_ns: v.iter().map(|s| s.max_ns).max().unwrap_or(0),
                latency_ns: Log2Hist::from_slots(&slots),
                messages: Vec::new(),
            });
        }
    }
    let mut system = SystemLevel {
        cpus: aya::util::nr_cpus().unwrap_or(1),
        kernel: hpcscope_host::facts::kernel_release().unwrap_or_else(|| "unknown".into()),
        ..Default::default()
    };
    if probes.sched {
        system.runq_latency_ns = percpu_hist(bpf, "runq_hist")?;
        system.off_cpu_ns = percpu_hist(bpf, "offcpu_hist")?;
    }
    if probes.block {
        for (dev, v) in percpu_hash::<u32, BlkStats>(bpf, "blk_stats")? {
            let requests: u64 = v.iter().map(|s| s.count).sum();
            let total: u64 = v.iter().map(|s| s.total_ns).sum();
            system.block.push(BlockDevice {
                device: format!("{}:{}", dev >> 20, dev & 0xfffff),
                requests,
                bytes: v.iter().map(|s| s.bytes).sum(),
                other_requests: v.iter().map(|s| s.other_count).sum(),
                other_bytes: v.iter().map(|s| s.other_bytes).sum(),
                mean_latency_ns: total as f64 / requests.max(1) as f64,
                max_latency_ns: v.iter().map(|s| s.max_ns).max().unwrap_or(0),
                latency_ns: Log2Hist::from_slots(&sum_slots(
                    v.iter().map(|s| &s.lat_hist[..]),
                    HIST_SLOTS,
                )),
                size_bytes: Log2Hist::from_slots(&sum_slots(
                    v.iter().map(|s| &s.size_hist[..]),
                    HIST_SLOTS,
                )),
            });
        }
    }
    let mut processes: Vec<ProcessLevel> = procs.into_values().collect();
    for p in &mut processes {
        p.comm = comms
            .get(&p.pid)
            .cloned()
            .or_else(|| {
                p.threads
                    .iter()
                    .find(|t| t.tid == p.pid)
                    .map(|t| t.comm.clone())
            })
            .or_else(|| proc_comm(p.pid))
            .unwrap_or_default();
        p.syscalls
            .sort_by(|a, b| b.count.cmp(&a.count).then(a.nr.cmp(&b.nr)));
        p.files.sort_by_key(|f| f.fd);
        p.threads.sort_by_key(|t| t.tid);
        p.functions.sort_by(|a, b| a.symbol.cmp(&b.symbol));
    }
    Ok(TraceReport {
        target: opts.target.describe(),
        probes: probes.names(),
        system,
        processes,
        timeline: open_slices,
        ..Default::default()
    })
}

/// The path of descriptor `fd` that process `tgid` inherited at its fork: its parent's, if
/// the parent did not open or duplicate another file onto that number during the trace
/// (then the inheritance is ambiguous and nothing is returned), up through the ancestors
/// forked during the trace.
pub(super) fn inherited_path(
    tgid: u32,
    fd: i32,
    parents: &HashMap<u32, u32>,
    gens: &HashMap<(u32, i32), u32>,
    paths: &HashMap<(u32, i32, u32), String>,
) -> Option<String> {
    let mut p = tgid;
    for _ in 0..64 {
        p = *parents.get(&p)?;
        if gens.get(&(p, fd)).copied().unwrap_or(0) != 0 {
            return None;
        }
        if let Some(path) = paths.get(&(p, fd, 0)) {
            return Some(path.clone());
        }
    }
    None
}

/// What the probes could not record: the `drops` counters (failed inserts into each table,
/// a full ring buffer) and the probe runs the kernel skipped (`recursion_misses` of each
/// program: one of its BPF programs was already running on that CPU).
pub(super) fn lost_counts(bpf: &Ebpf, cap: Capacity) -> Vec<crate::report::LostCount> {
    let mut out = Vec::new();
    let raise = |table: &str, map: &str, unit: &str| {
        format!(
            "the {table} table holds {} {unit}; give more room with a larger max_processes (now {})",
            cap.entries(map),
            cap.processes
        )
    };
    if let Some(Ok(m)) = bpf.map("drops").map(PerCpuArray::<&MapData, u64>::try_from) {
        let count = |i: u32| -> u64 { m.get(&i, 0).map(|v| v.iter().sum()).unwrap_or(0) };
        let kinds: [(u32, &str, String); LOST_SLOTS as usize] = [
            (
                LOST_RINGBUF,
                "lifecycle or timeline events",
                "the 4 MiB event ring buffer filled faster than it was read; keep fewer timeline events".into(),
            ),
            (
                LOST_DEEP,
                "probed calls not timed",
                format!("they were nested deeper than {USTACK_DEPTH} probed calls"),
            ),
            (
                LOST_TARGETS,
                "forked processes not followed",
                raise("process", "targets", "processes"),
            ),
            (
                LOST_SC_STARTS,
                "system calls not timed or counted",
                raise("in-flight system call", "sc_starts", "threads"),
            ),
            (
                LOST_SC_STATS,
                "system calls not counted",
                raise("system call", "sc_stats", "(process, system call) pairs"),
            ),
            (
                LOST_THREADS,
                "scheduler or page-fault events not counted",
                raise("thread", "threads", "threads"),
            ),
            (
                LOST_FILES,
                "file reads, writes or paths not recorded",
                raise("file", "fd_stats", "(process, descriptor) pairs"),
            ),
            (
                LOST_BLOCK,
                "block requests not counted",
                "the block tables hold 16,384 requests in flight and 256 devices".into(),
            ),
            (
                LOST_SAMPLES,
                "cpu-clock samples not counted",
                raise("sample", "samples", "distinct (thread, stack) pairs"),
            ),
            (
                LOST_STACKS,
                "cpu-clock samples without their stack",
                format!(
                    "the stack table ({} stacks) could not hold their stack and the 4 MiB event ring buffer, which takes such samples whole, was full too; sample at a lower --hz",
                    cap.entries("stacks")
                ),
            ),
            (
                LOST_FUNCS,
                "probed calls not timed",
                raise("function", "fn_stats", "(process, function) pairs"),
            ),
            (
                LOST_MSGS,
                "MPI calls whose message was not counted",
                raise("message", "msg_stats", "(process, function, datatype) triples"),
            ),
            (
                LOST_USDT,
                "USDT probe hits not counted",
                raise("USDT", "usdt_stats", "(thread, probe) pairs"),
            ),
            (
                LOST_IOSIZE,
                "read or write sizes not counted",
                raise("I/O size", "io_sizes", "(thread, direction) pairs"),
            ),
        ];
        for (i, what, why) in kinds {
            let n = count(i);
            if n > 0 {
                out.push(crate::report::LostCount {
                    what: what.into(),
                    count: n,
                    why,
                });
            }
        }
    }
    let mut skipped: BTreeMap<String, u64> = BTreeMap::new();
    for (name, p) in bpf.programs() {
        let Ok(fd) = p.fd() else { continue };
        use std::os::fd::{AsFd, AsRawFd};
        let n = recursion_misses(fd.as_fd().as_raw_fd());
        if n > 0 {
            *skipped.entry(name.to_string()).or_default() += n;
        }
    }
    if !skipped.is_empty() {
        out.push(crate::report::LostCount {
            what: "probe runs skipped by the kernel".into(),
            count: skipped.values().sum(),
            why: format!(
                "a probe fired while another BPF program ran on the same CPU ({})",
                skipped
                    .iter()
                    .map(|(p, n)| format!("{p}: {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    out
}

/// The `recursion_misses` line of a BPF program's /proc/self/fdinfo (0 when absent).
pub(super) fn recursion_misses(fd: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("recursion_misses:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The messages of the MPI calls (the `msg_stats` map), per process and function, with
/// datatype handles turned into names and sizes.
pub(super) fn add_messages(
    bpf: &Ebpf,
    opts: &TraceOptions,
    resolved: &[target::ResolvedFn],
    exes: &HashMap<u32, std::path::PathBuf>,
    report: &mut TraceReport,
    notes: &mut Vec<String>,
) -> Result<(), TraceError> {
    let program = target::main_binary(opts).ok();
    let mut types = crate::mpi::Datatypes::default();
    // (tgid, slot) -> datatype name -> message.
    let mut per: BTreeMap<(u32, u32), BTreeMap<String, MessageStat>> = BTreeMap::new();
    for (k, v) in grouped::<MsgKey, MsgStats>(bpf, "msg_stats", |k| k)? {
        let Some(f) = resolved.get(k.slot as usize) else {
            continue;
        };
        let Some(probe) = f.message else { continue };
        let site = crate::mpi::HandleSite {
            library: &f.path,
            function_offset: f.offset,
            entry_ip: v.iter().map(|s| s.entry_ip).max().unwrap_or(0),
            program: exes.get(&k.tgid).or(program.as_ref()).map(|p| p.as_path()),
            start_code: v.iter().map(|s| s.exe_code).max().unwrap_or(0),
        };
        let dt = types.resolve(probe.flavor, k.dtype, &site);
        let m = per
            .entry((k.tgid, k.slot))
            .or_default()
            .entry(dt.name.clone())
            .or_insert_with(|| MessageStat {
                datatype: dt.name,
                type_size: dt.size,
                bytes: dt.size.map(|_| 0),
                ..Default::default()
            });
        let (calls, elements): (u64, u64) = v
            .iter()
            .fold((0, 0), |a, s| (a.0 + s.calls, a.1 + s.elements));
        m.calls += calls;
        m.elements += elements;
        if let (Some(b), Some(size)) = (m.bytes.as_mut(), m.type_size) {
            *b += elements * size;
        }
    }
    let mut unknown = BTreeMap::<&str, u64>::new();
    for ((tgid, slot), msgs) in per {
        let f = &resolved[slot as usize];
        let p = match report.processes.iter().position(|p| p.pid == tgid) {
            Some(i) => &mut report.processes[i],
            None => {
                report.processes.push(ProcessLevel {
                    pid: tgid,
                    comm: proc_comm(tgid).unwrap_or_default(),
                    ..Default::default()
                });
                report.processes.last_mut().expect("just added")
            }
        };
        // A call that never returned has no time, but its message was seen.
        let i = match p.functions.iter().position(|x| x.symbol == f.symbol) {
            Some(i) => i,
            None => {
                p.functions.push(FunctionStat {
                    symbol: f.symbol.clone(),
                    binary: f.path.display().to_string(),
                    ..Default::default()
                });
                p.functions.sort_by(|a, b| a.symbol.cmp(&b.symbol));
                p.functions
                    .iter()
                    .position(|x| x.symbol == f.symbol)
                    .expect("just added")
            }
        };
        let mut msgs: Vec<MessageStat> = msgs.into_values().collect();
        msgs.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.datatype.cmp(&b.datatype)));
        for m in msgs.iter().filter(|m| m.bytes.is_none()) {
            *unknown.entry(&f.symbol).or_default() += m.calls;
        }
        p.functions[i].messages = msgs;
    }
    report.processes.sort_by_key(|p| p.pid);
    if !unknown.is_empty() {
        notes.push(format!(
            "{} {}: a derived datatype (or one hpcscope does not know); their calls and elements are counted, their bytes are not",
            crate::mpi::UNKNOWN_SIZE_NOTE,
            unknown
                .iter()
                .map(|(f, n)| format!("{n} call(s) of {f}"))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    Ok(())
}

/// Samples the stack map could not hold (their stack's hash bucket held another stack, or
/// the map was full), sent whole through the ring buffer by the probe ([`StackEvent`]):
/// counted per (thread, command name, user stack, kernel stack).
#[derive(Default)]
pub(super) struct WholeStacks {
    counts: HashMap<WholeKey, u64>,
}

/// Thread group, thread, command name, user and kernel stack (`None`: not read).
type WholeKey = (u32, u32, [u8; COMM_LEN], Option<Vec<u64>>, Option<Vec<u64>>);

impl WholeStacks {
    /// Counts `record` when it is a whole sample; false for any other record.
    pub(super) fn take(&mut self, record: &[u8]) -> bool {
        if record_kind(record) != Some(EV_STACK) {
            return false;
        }
        if let Some(e) = parse_stack_event(record) {
            let key = (
                e.tgid,
                e.tid,
                e.comm,
                e.user().map(<[u64]>::to_vec),
                e.kernel().map(<[u64]>::to_vec),
            );
            *self.counts.entry(key).or_insert(0) += 1;
        }
        true
    }
}

/// One sample's frames, outermost first: the user stack's (innermost first in `user`, as
/// the kernel copies it), then the kernel stack's when asked for.
pub(super) fn sample_frames(
    sym: &mut Symbolizer,
    tgid: u32,
    user: &[u64],
    kernel: Option<&[u64]>,
) -> Vec<String> {
    let mut frames: Vec<String> = Vec::new();
    // Innermost first; return addresses point after the call, so look up ip - 1. Each
    // address may stand for several frames (inlined functions); those come outermost
    // first, and the whole list is reversed below.
    for (i, &ip) in user.iter().enumerate() {
        let ip = if i == 0 { ip } else { ip.saturating_sub(1) };
        frames.extend(sym.user_frames(tgid, ip).into_iter().rev());
    }
    frames.reverse();
    if let Some(k) = kernel {
        frames.extend(k.iter().rev().map(|&ip| format!("{}_[k]", sym.kernel(ip))));
    }
    if frames.is_empty() {
        frames.push("[unknown]".into());
    }
    frames
}

pub(super) fn collect_profile(
    bpf: &mut Ebpf,
    sym: &mut Symbolizer,
    hz: u64,
    duration_s: f64,
    kernel_stacks: bool,
    whole: WholeStacks,
) -> Result<Profile, TraceError> {
    let counts: Vec<(SampleKey, u64)> = {
        let m: BpfHashMap<&MapData, SampleKey, u64> =
            BpfHashMap::try_from(bpf.map("samples").expect("samples"))
                .map_err(|e| bpf_err("samples", &e))?;
        m.iter().filter_map(Result::ok).collect()
    };
    let stacks: StackTraceMap<&MapData> =
        StackTraceMap::try_from(bpf.map("stacks").expect("stacks"))
            .map_err(|e| bpf_err("stacks", &e))?;
    let tgids = counts
        .iter()
        .map(|(k, _)| k.tgid)
        .chain(whole.counts.keys().map(|k| k.0));
    for tgid in tgids {
        if !sym.maps.contains_key(&tgid) {
            sym.snapshot(tgid);
        }
    }
    let mut samples = Vec::new();
    let mut missing = 0;
    let addresses = |id: i32| -> Option<Vec<u64>> {
        let st = stacks.get(&u32::try_from(id).ok()?, 0).ok()?;
        Some(st.frames().iter().map(|f| f.ip).collect())
    };
    for (k, count) in counts {
        let user = addresses(k.ustack);
        if k.ustack < 0 {
            missing += count;
        }
        let kernel = kernel_stacks.then(|| addresses(k.kstack)).flatten();
        samples.push(StackSample {
            pid: k.tgid,
            tid: k.tid,
            comm: cstr(&k.comm),
            frames: sample_frames(
                sym,
                k.tgid,
                user.as_deref().unwrap_or(&[]),
                kernel.as_deref(),
            ),
            count,
        });
    }
    for ((tgid, tid, comm, user, kernel), count) in whole.counts {
        if user.is_none() {
            missing += count;
        }
        let kernel = kernel.filter(|_| kernel_stacks);
        samples.push(StackSample {
            pid: tgid,
            tid,
            comm: cstr(&comm),
            frames: sample_frames(sym, tgid, user.as_deref().unwrap_or(&[]), kernel.as_deref()),
            count,
        });
    }
    samples.sort_by(|a, b| b.count.cmp(&a.count).then(a.frames.cmp(&b.frames)));
    Ok(Profile {
        hz,
        duration_s,
        samples,
        missing_user_stacks: missing,
    })
}
