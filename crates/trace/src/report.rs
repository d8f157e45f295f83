//! What a trace produced, by level (system, process, thread, function), and its views:
//! summary tables, JSON (the `Serialize` shape), and a Chrome trace-event timeline that
//! Perfetto and `chrome://tracing` open.

use serde::Serialize;

use crate::hist::Log2Hist;

/// The result of `hpcscope trace`. The JSON shape is this struct; it only grows.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize)]
pub struct TraceReport {
    /// What was traced, e.g. `command ./app 1 2`, `pid 1234`, `cgroup /sys/fs/cgroup/job`.
    pub target: String,
    /// Probes that ran.
    pub probes: Vec<String>,
    /// Wall time of the traced window, seconds.
    pub duration_s: f64,
    /// True when the data is incomplete: the trace stopped early (Ctrl-C, the PID exited, a
    /// time limit; the data covers the window up to then), or some events could not be
    /// recorded (each counted in `lost`).
    pub partial: bool,
    /// Exit code of a launched command (None when it was killed by a signal or not ours).
    pub exit_code: Option<i32>,
    /// The signal that ended a launched command, when one did (SIGKILL is 9).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
    /// Things to know: probes replaced by a fallback, lost events, unavailable features.
    pub notes: Vec<String>,
    /// What the probes could not record, by kind (empty when nothing was lost).
    pub lost: Vec<LostCount>,
    /// System level.
    pub system: SystemLevel,
    /// Process level (one per traced process, including forked children).
    pub processes: Vec<ProcessLevel>,
    /// Timeline events (only with `--timeline`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<TimelineEvent>,
    /// Counts per interval of the traced processes together (with a rate interval).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rates: Option<RateSeries>,
    /// The OpenMP threads and thread efficiency of each process that forked a team (with
    /// `--openmp`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub openmp: Vec<crate::openmp::OpenMpProcess>,
    /// Instructions and cycles of the launched command (with `counters`, where the machine
    /// has a hardware PMU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<HwCounts>,
}

/// Hardware counts of a launched command and what it forked, user and kernel mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HwCounts {
    /// Instructions retired.
    pub instructions: f64,
    /// Cycles.
    pub cycles: f64,
    /// Whether the counts were scaled up because the PMU was shared during the run.
    pub scaled: bool,
}

/// Series over time: the counts of each interval, for every traced process together. The
/// first interval starts when a launched command executes its program (for a running
/// target, once every probe is attached); the last one ends with the trace (it may be
/// shorter). A count is taken when the event happens (a system call at its return).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RateSeries {
    /// Length of an interval, s.
    pub interval_s: f64,
    /// Start of each interval, s since the first one's.
    pub start_s: Vec<f64>,
    /// Length of each interval, s (the interval, or less for the last one).
    pub span_s: Vec<f64>,
    /// One column per measured series (those whose probe ran).
    pub series: Vec<RateColumn>,
}

/// One series of a [`RateSeries`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RateColumn {
    /// `syscalls`, `page_faults`, `read_bytes`, `write_bytes` or `context_switches`.
    pub name: String,
    /// What is counted: `calls`, `faults`, `bytes`, `switches`.
    pub unit: String,
    /// The count of each interval.
    pub counts: Vec<u64>,
}

impl RateSeries {
    /// One row per interval: its start and length, then each series per second.
    pub fn table(&self) -> LevelTable {
        let mut headers = vec!["start_s".to_string(), "span_s".to_string()];
        headers.extend(self.series.iter().map(|c| format!("{}_per_s", c.name)));
        let per: Vec<Vec<f64>> = self.series.iter().map(|c| self.per_second(c)).collect();
        let rows = (0..self.start_s.len())
            .map(|i| {
                let mut r = vec![
                    format!("{:.3}", self.start_s[i]),
                    format!("{:.3}", self.span_s[i]),
                ];
                r.extend(per.iter().map(|v| format!("{:.1}", v[i])));
                r
            })
            .collect();
        LevelTable {
            title: "rate".into(),
            headers,
            rows,
        }
    }

    /// Per series: the total, the mean rate over the trace, the highest interval rate and
    /// the interval it was in (for a long trace, where the table is long).
    pub fn summary(&self) -> LevelTable {
        let total: f64 = self.span_s.iter().sum();
        let rows = self
            .series
            .iter()
            .map(|c| {
                let per = self.per_second(c);
                let (at, peak) =
                    per.iter()
                        .enumerate()
                        .fold(
                            (0, f64::NEG_INFINITY),
                            |a, (i, v)| if *v > a.1 { (i, *v) } else { a },
                        );
                let sum: u64 = c.counts.iter().sum();
                vec![
                    c.name.clone(),
                    sum.to_string(),
                    if total > 0.0 {
                        format!("{:.1}", sum as f64 / total)
                    } else {
                        UNMEASURED.into()
                    },
                    if per.is_empty() {
                        UNMEASURED.into()
                    } else {
                        format!("{peak:.1}")
                    },
                    self.start_s
                        .get(at)
                        .map(|s| format!("{s:.3}"))
                        .unwrap_or_else(|| UNMEASURED.into()),
                ]
            })
            .collect();
        LevelTable {
            title: "rate summary".into(),
            headers: ["series", "total", "mean_per_s", "peak_per_s", "peak_at_s"]
                .map(String::from)
                .to_vec(),
            rows,
        }
    }

    /// Per-second rate of `column` in each interval.
    pub fn per_second(&self, column: &RateColumn) -> Vec<f64> {
        column
            .counts
            .iter()
            .zip(&self.span_s)
            .map(|(c, s)| if *s > 0.0 { *c as f64 / s } else { 0.0 })
            .collect()
    }

    /// The column named `name`.
    pub fn column(&self, name: &str) -> Option<&RateColumn> {
        self.series.iter().find(|c| c.name == name)
    }
}

/// Hits of one USDT probe in one process.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct UsdtStat {
    /// `provider:name`.
    pub probe: String,
    /// The file holding it.
    pub binary: String,
    /// Its sites in that file (each got a uprobe).
    pub sites: usize,
    /// Whether it is guarded by a semaphore (raised by the kernel while traced).
    pub semaphore: bool,
    /// Argument specification of its first site (the values are not read).
    pub arguments: String,
    /// Hits in the process.
    pub hits: u64,
    /// Hits per thread.
    pub threads: Vec<UsdtThreadHits>,
}

/// Hits of a USDT probe in one thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct UsdtThreadHits {
    /// Thread id.
    pub tid: u32,
    /// Hits.
    pub hits: u64,
}

/// Sizes of the successful reads or writes (the read/write family of system calls) of one
/// process: what they returned.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IoSizes {
    /// `read` or `write`.
    pub op: String,
    /// Calls that returned 0 or more.
    pub calls: u64,
    /// Bytes they transferred.
    pub bytes: u64,
    /// Histogram of the returned sizes, bytes (a read at the end of a file returns 0).
    pub size_bytes: Log2Hist,
}

/// Events of one kind the probes could not record (a full in-kernel table, a full ring
/// buffer, probe runs the kernel skipped).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LostCount {
    /// What was lost, e.g. `system calls not counted`.
    pub what: String,
    /// How many.
    pub count: u64,
    /// Why, and what to do about it.
    pub why: String,
}

impl TraceReport {
    /// The launched command's exit status as a shell gives it: its exit code, or 128 plus
    /// the number of the signal that ended it; `None` when no command was launched (a PID,
    /// a cgroup or the whole machine) or its end was not seen.
    pub fn command_status(&self) -> Option<u8> {
        match (self.exit_code, self.exit_signal) {
            (Some(c), _) => Some((c & 0xff) as u8),
            (None, Some(s)) => Some((128 + s).clamp(0, 255) as u8),
            _ => None,
        }
    }

    fn measured(&self, probe: &str) -> bool {
        self.probes.iter().any(|p| p == probe)
    }
}

/// Whole-target figures.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize)]
pub struct SystemLevel {
    /// Online CPUs.
    pub cpus: usize,
    /// Kernel release.
    pub kernel: String,
    /// Run-queue latency of traced threads (ns): wakeup or preemption to running.
    pub runq_latency_ns: Log2Hist,
    /// Off-CPU interval lengths of traced threads (ns), run-queue waits included.
    pub off_cpu_ns: Log2Hist,
    /// Block I/O per device, for the whole machine (requests are mostly issued by kernel
    /// threads on the processes' behalf, so they cannot be attributed reliably).
    pub block: Vec<BlockDevice>,
}

/// Block I/O on one device.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize)]
pub struct BlockDevice {
    /// `major:minor`.
    pub device: String,
    /// Read and write requests completed (what /sys/block/*/stat counts as reads and
    /// writes completed).
    pub requests: u64,
    /// Bytes those requests transferred.
    pub bytes: u64,
    /// Other requests completed: flushes, discards, secure erases, write-zeroes (not in the
    /// histograms).
    pub other_requests: u64,
    /// The ranges those requests covered, bytes (no data moved).
    pub other_bytes: u64,
    /// Mean latency issue to completion, ns.
    pub mean_latency_ns: f64,
    /// Largest latency, ns.
    pub max_latency_ns: u64,
    /// Latency histogram, ns.
    pub latency_ns: Log2Hist,
    /// Request size histogram, bytes.
    pub size_bytes: Log2Hist,
}

/// One process (a tgid).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProcessLevel {
    /// Process id.
    pub pid: u32,
    /// Command name (comm).
    pub comm: String,
    /// Sum over threads of on-CPU time, ns.
    pub on_cpu_ns: u64,
    /// Sum over threads of off-CPU time, ns.
    pub off_cpu_ns: u64,
    /// Sum over threads of minor faults.
    pub minor_faults: u64,
    /// Sum over threads of major faults.
    pub major_faults: u64,
    /// Sum over threads of context switches (voluntary + involuntary).
    pub context_switches: u64,
    /// System calls, most frequent first.
    pub syscalls: Vec<SyscallStat>,
    /// File I/O per file descriptor.
    pub files: Vec<FileStat>,
    /// User functions probed with uprobes.
    pub functions: Vec<FunctionStat>,
    /// Threads.
    pub threads: Vec<ThreadLevel>,
    /// USDT probes hit (with `usdt`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub usdt: Vec<UsdtStat>,
    /// Read and write sizes (with `files`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub io_sizes: Vec<IoSizes>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One system call of one process.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize)]
pub struct SyscallStat {
    /// Name (x86-64 numbering).
    pub name: String,
    /// Number.
    pub nr: u32,
    /// Calls that returned.
    pub count: u64,
    /// Calls that returned an error (negative value).
    pub errors: u64,
    /// Of `count`, calls already in flight when the trace attached (a running process
    /// blocked in it): counted, not timed (the latencies are the other calls').
    #[serde(skip_serializing_if = "is_zero")]
    pub untimed: u64,
    /// Total latency, ns.
    pub total_ns: u64,
    /// Largest latency, ns.
    pub max_ns: u64,
    /// Smallest latency, ns.
    pub min_ns: u64,
    /// Latency histogram, ns.
    pub latency_ns: Log2Hist,
}

/// Bytes read and written through one file descriptor.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize)]
pub struct FileStat {
    /// File descriptor.
    pub fd: i32,
    /// Path (from the traced `open*` call, else the descriptor's link in procfs), if known.
    pub path: Option<String>,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Successful read calls.
    pub reads: u64,
    /// Successful write calls.
    pub writes: u64,
}

/// Latency of one user function.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize)]
pub struct FunctionStat {
    /// Symbol.
    pub symbol: String,
    /// Binary or library it was found in.
    pub binary: String,
    /// Calls that returned.
    pub count: u64,
    /// Total time inside, ns (nested probed calls counted in both).
    pub total_ns: u64,
    /// Shortest call, ns.
    pub min_ns: u64,
    /// Longest call, ns.
    pub max_ns: u64,
    /// Latency histogram, ns.
    pub latency_ns: Log2Hist,
    /// Messages, per datatype, for the MPI functions whose arguments give them (see
    /// [`crate::mpi::MESSAGE_ARGS`]); counted at the calls' entry.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<MessageStat>,
}

impl FunctionStat {
    /// Its messages summed over datatypes (None when its arguments were not read).
    pub fn message_totals(&self) -> Option<MessageTotals> {
        if self.messages.is_empty() {
            return None;
        }
        let mut t = MessageTotals::default();
        for m in &self.messages {
            t.calls += m.calls;
            t.elements += m.elements;
            match m.bytes {
                Some(b) => t.bytes += b,
                None => {
                    t.unknown_size_calls += m.calls;
                    t.unknown_size_elements += m.elements;
                }
            }
        }
        Some(t)
    }
}

/// The messages of one function with one datatype.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MessageStat {
    /// The MPI name of a predefined datatype, else its handle in hexadecimal (a derived
    /// datatype, whose size the probes cannot know).
    pub datatype: String,
    /// Bytes of one element, when known.
    pub type_size: Option<u64>,
    /// Calls with this datatype (counted at entry).
    pub calls: u64,
    /// Elements: the sum of the calls' count arguments.
    pub elements: u64,
    /// Bytes: elements x type size, when the size is known.
    pub bytes: Option<u64>,
}

/// Messages summed over datatypes (and over functions or ranks).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct MessageTotals {
    /// Calls whose message was read.
    pub calls: u64,
    /// Elements (sum of the count arguments).
    pub elements: u64,
    /// Bytes of the calls whose datatype size is known.
    pub bytes: u64,
    /// Calls with a datatype of unknown size (derived): their bytes are not in `bytes`.
    pub unknown_size_calls: u64,
    /// Elements of those calls.
    pub unknown_size_elements: u64,
}

impl MessageTotals {
    /// Adds `o`.
    pub fn add(&mut self, o: &MessageTotals) {
        self.calls += o.calls;
        self.elements += o.elements;
        self.bytes += o.bytes;
        self.unknown_size_calls += o.unknown_size_calls;
        self.unknown_size_elements += o.unknown_size_elements;
    }

    /// Mean bytes per call over the calls of known size.
    pub fn mean_bytes(&self) -> Option<f64> {
        let n = self.calls - self.unknown_size_calls;
        (n > 0).then(|| self.bytes as f64 / n as f64)
    }
}

/// One thread.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize)]
pub struct ThreadLevel {
    /// Thread id.
    pub tid: u32,
    /// Thread name (comm).
    pub comm: String,
    /// Time running, ns.
    pub on_cpu_ns: u64,
    /// Time not running (sleeping, blocked or waiting in a run queue), ns.
    pub off_cpu_ns: u64,
    /// Time runnable but waiting for a CPU, ns.
    pub runq_ns: u64,
    /// Longest run-queue wait, ns.
    pub runq_max_ns: u64,
    /// Voluntary context switches (blocked).
    pub voluntary_switches: u64,
    /// Involuntary context switches (preempted).
    pub involuntary_switches: u64,
    /// CPU migrations.
    pub migrations: u64,
    /// Wakeups.
    pub wakeups: u64,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
    /// Whether the thread exited during the trace.
    pub exited: bool,
}

/// A timeline slice (Chrome trace-event "complete" event).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct TimelineEvent {
    /// Slice name: `on-cpu`, a function symbol, `exec`, `exit`, `fork`.
    pub name: String,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start, ns since the start of the trace.
    pub start_ns: u64,
    /// Duration, ns (0 for an instant).
    pub dur_ns: u64,
    /// CPU.
    pub cpu: u32,
}

/// A titled table: what the CLI prints for one level.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Serialize)]
pub struct LevelTable {
    /// Title, e.g. `process`, `thread`.
    pub title: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn us(ns: f64) -> String {
    format!("{:.2}", ns / 1e3)
}

/// What a table shows for a figure no probe measured.
const UNMEASURED: &str = "-";

impl TraceReport {
    /// One table per level that has data: system, process, syscall, file, thread, function.
    #[allow(clippy::too_many_lines)]
    pub fn tables(&self) -> Vec<LevelTable> {
        let mut out = Vec::new();
        let t = |title: &str, headers: &[&str]| LevelTable {
            title: title.to_string(),
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        };
        let mut sys = t("system", &["metric", "value"]);
        sys.rows
            .push(vec!["cpus".into(), self.system.cpus.to_string()]);
        sys.rows
            .push(vec!["kernel".into(), self.system.kernel.clone()]);
        sys.rows
            .push(vec!["duration_s".into(), format!("{:.3}", self.duration_s)]);
        sys.rows
            .push(vec!["processes".into(), self.processes.len().to_string()]);
        let threads: usize = self.processes.iter().map(|p| p.threads.len()).sum();
        sys.rows.push(vec!["threads".into(), threads.to_string()]);
        for (name, h) in [
            ("runq_latency_p50_us", &self.system.runq_latency_ns),
            ("off_cpu_p50_us", &self.system.off_cpu_ns),
        ] {
            if let Some(q) = h.quantile(0.5) {
                sys.rows.push(vec![name.into(), us(q)]);
            }
        }
        for b in &self.system.block {
            sys.rows.push(vec![
                format!(
                    "block {} (whole machine, all processes) requests/bytes/mean_us",
                    b.device
                ),
                format!("{}/{}/{}", b.requests, b.bytes, us(b.mean_latency_ns)),
            ]);
            if b.other_requests > 0 {
                sys.rows.push(vec![
                    format!(
                        "block {} (whole machine) flush/discard/write-zeroes requests/range bytes",
                        b.device
                    ),
                    format!("{}/{}", b.other_requests, b.other_bytes),
                ]);
            }
        }
        out.push(sys);

        let mut p = t(
            "process",
            &[
                "pid",
                "comm",
                "on_cpu_ms",
                "off_cpu_ms",
                "switches",
                "minflt",
                "majflt",
                "syscalls",
            ],
        );
        // A figure no probe measured is "-", not 0.
        let sched = self.measured("sched") || self.measured("timeline");
        let faults = self.measured("faults");
        let syscalls = self.measured("syscalls");
        let or_dash = |on: bool, v: String| if on { v } else { UNMEASURED.to_string() };
        for pr in &self.processes {
            p.rows.push(vec![
                pr.pid.to_string(),
                pr.comm.clone(),
                or_dash(sched, ms(pr.on_cpu_ns)),
                or_dash(sched, ms(pr.off_cpu_ns)),
                or_dash(sched, pr.context_switches.to_string()),
                or_dash(faults, pr.minor_faults.to_string()),
                or_dash(faults, pr.major_faults.to_string()),
                or_dash(
                    syscalls,
                    pr.syscalls.iter().map(|s| s.count).sum::<u64>().to_string(),
                ),
            ]);
        }
        out.push(p);

        let mut sc = t(
            "syscall",
            &[
                "pid", "syscall", "count", "errors", "total_ms", "mean_us", "p99_us", "max_us",
            ],
        );
        for pr in &self.processes {
            for s in &pr.syscalls {
                // Calls in flight when the trace attached have no time: none timed, no
                // latency to show.
                let timed = s.count - s.untimed;
                let time = |v: String| if timed > 0 { v } else { "-".into() };
                sc.rows.push(vec![
                    pr.pid.to_string(),
                    s.name.clone(),
                    s.count.to_string(),
                    s.errors.to_string(),
                    time(ms(s.total_ns)),
                    time(us(s.total_ns as f64 / timed.max(1) as f64)),
                    s.latency_ns
                        .quantile_within(0.99, s.min_ns, s.max_ns)
                        .map(us)
                        .unwrap_or_default(),
                    time(us(s.max_ns as f64)),
                ]);
            }
        }
        if !sc.rows.is_empty() {
            out.push(sc);
        }

        let mut f = t(
            "file",
            &[
                "pid",
                "fd",
                "path",
                "read_bytes",
                "write_bytes",
                "reads",
                "writes",
            ],
        );
        for pr in &self.processes {
            for x in &pr.files {
                f.rows.push(vec![
                    pr.pid.to_string(),
                    x.fd.to_string(),
                    x.path.clone().unwrap_or_default(),
                    x.read_bytes.to_string(),
                    x.write_bytes.to_string(),
                    x.reads.to_string(),
                    x.writes.to_string(),
                ]);
            }
        }
        if !f.rows.is_empty() {
            out.push(f);
        }

        let mut th = t(
            "thread",
            &[
                "pid",
                "tid",
                "comm",
                "on_cpu_ms",
                "off_cpu_ms",
                "runq_ms",
                "vol_cs",
                "invol_cs",
                "migr",
                "minflt",
                "majflt",
            ],
        );
        for pr in &self.processes {
            for x in &pr.threads {
                th.rows.push(vec![
                    pr.pid.to_string(),
                    x.tid.to_string(),
                    x.comm.clone(),
                    or_dash(sched, ms(x.on_cpu_ns)),
                    or_dash(sched, ms(x.off_cpu_ns)),
                    or_dash(sched, ms(x.runq_ns)),
                    or_dash(sched, x.voluntary_switches.to_string()),
                    or_dash(sched, x.involuntary_switches.to_string()),
                    or_dash(sched, x.migrations.to_string()),
                    or_dash(faults, x.minor_faults.to_string()),
                    or_dash(faults, x.major_faults.to_string()),
                ]);
            }
        }
        if !th.rows.is_empty() {
            out.push(th);
        }

        let mut fun = t(
            "function",
            &[
                "pid", "function", "binary", "calls", "total_ms", "mean_us", "min_us", "max_us",
                "p99_us",
            ],
        );
        for pr in &self.processes {
            for x in &pr.functions {
                fun.rows.push(vec![
                    pr.pid.to_string(),
                    x.symbol.clone(),
                    x.binary.clone(),
                    x.count.to_string(),
                    ms(x.total_ns),
                    us(x.total_ns as f64 / x.count.max(1) as f64),
                    us(x.min_ns as f64),
                    us(x.max_ns as f64),
                    x.latency_ns
                        .quantile_within(0.99, x.min_ns, x.max_ns)
                        .map(us)
                        .unwrap_or_default(),
                ]);
            }
        }
        if !fun.rows.is_empty() {
            out.push(fun);
        }

        let mut msg = t(
            "message",
            &[
                "pid",
                "function",
                "datatype",
                "type_bytes",
                "calls",
                "elements",
                "bytes",
                "mean_bytes",
            ],
        );
        let opt = |v: Option<u64>| v.map_or_else(|| "?".to_string(), |x| x.to_string());
        for pr in &self.processes {
            for x in &pr.functions {
                for m in &x.messages {
                    msg.rows.push(vec![
                        pr.pid.to_string(),
                        x.symbol.clone(),
                        m.datatype.clone(),
                        opt(m.type_size),
                        m.calls.to_string(),
                        m.elements.to_string(),
                        opt(m.bytes),
                        m.bytes.filter(|_| m.calls > 0).map_or_else(
                            || "?".into(),
                            |b| format!("{:.1}", b as f64 / m.calls as f64),
                        ),
                    ]);
                }
            }
        }
        if !msg.rows.is_empty() {
            out.push(msg);
        }

        let mut usdt = t(
            "usdt",
            &[
                "pid",
                "probe",
                "binary",
                "sites",
                "semaphore",
                "hits",
                "threads",
            ],
        );
        let mut usdt_th = t("usdt thread", &["pid", "tid", "probe", "hits"]);
        for pr in &self.processes {
            for u in &pr.usdt {
                usdt.rows.push(vec![
                    pr.pid.to_string(),
                    u.probe.clone(),
                    u.binary.clone(),
                    u.sites.to_string(),
                    if u.semaphore { "raised" } else { "-" }.into(),
                    u.hits.to_string(),
                    u.threads.len().to_string(),
                ]);
                for th in &u.threads {
                    usdt_th.rows.push(vec![
                        pr.pid.to_string(),
                        th.tid.to_string(),
                        u.probe.clone(),
                        th.hits.to_string(),
                    ]);
                }
            }
        }
        if !usdt.rows.is_empty() {
            out.push(usdt);
            out.push(usdt_th);
        }

        let mut io = t("io", &["pid", "comm", "op", "calls", "bytes", "mean_bytes"]);
        let mut io_hist = t(
            "io size",
            &["pid", "op", "from_bytes", "to_bytes", "calls", "pct"],
        );
        for pr in &self.processes {
            for x in &pr.io_sizes {
                io.rows.push(vec![
                    pr.pid.to_string(),
                    pr.comm.clone(),
                    x.op.clone(),
                    x.calls.to_string(),
                    x.bytes.to_string(),
                    if x.calls > 0 {
                        format!("{:.1}", x.bytes as f64 / x.calls as f64)
                    } else {
                        UNMEASURED.into()
                    },
                ]);
                let n = x.size_bytes.total().max(1) as f64;
                for b in &x.size_bytes.buckets {
                    io_hist.rows.push(vec![
                        pr.pid.to_string(),
                        x.op.clone(),
                        b.lo.to_string(),
                        b.hi.to_string(),
                        b.count.to_string(),
                        format!("{:.1}", 100.0 * b.count as f64 / n),
                    ]);
                }
            }
        }
        if !io.rows.is_empty() {
            out.push(io);
            out.push(io_hist);
        }

        if !self.openmp.is_empty() {
            let mut eff = t(
                "openmp efficiency",
                &[
                    "pid",
                    "comm",
                    "threads",
                    "forks",
                    "runtime_s",
                    "parallel_eff (3.7)",
                    "load_balance (3.8)",
                    "busiest/runtime (3.9)",
                    "mpi_eff (3.15)",
                    "openmp_eff (3.16)",
                ],
            );
            let mut th = t(
                "openmp thread",
                &[
                    "pid",
                    "tid",
                    "role",
                    "regions",
                    "region_ms",
                    "sync_ms",
                    "fork_ms",
                    "comp_ms",
                ],
            );
            let f =
                |v: Option<f64>| v.map_or_else(|| UNMEASURED.to_string(), |x| format!("{x:.4}"));
            for o in &self.openmp {
                let e = o.efficiency.as_ref();
                eff.rows.push(vec![
                    o.pid.to_string(),
                    o.comm.clone(),
                    o.threads.len().to_string(),
                    o.forks.to_string(),
                    format!("{:.4}", o.runtime_s),
                    f(e.map(|e| e.parallel_efficiency)),
                    f(e.map(|e| e.load_balance)),
                    f(e.map(|e| e.communication_efficiency)),
                    f(e.map(|e| e.mpi_efficiency)),
                    f(e.map(|e| e.openmp_efficiency)),
                ]);
                for x in &o.threads {
                    th.rows.push(vec![
                        o.pid.to_string(),
                        x.tid.to_string(),
                        if x.master { "main" } else { "worker" }.into(),
                        x.regions.to_string(),
                        format!("{:.3}", x.region_s * 1e3),
                        format!("{:.3}", x.sync_s * 1e3),
                        format!("{:.3}", x.fork_s * 1e3),
                        format!("{:.3}", x.comp_s * 1e3),
                    ]);
                }
            }
            out.push(eff);
            out.push(th);
        }
        if let Some(r) = &self.rates {
            out.push(r.table());
        }
        out
    }

    /// Chrome trace-event JSON (the "JSON Object Format"): process and thread names as
    /// metadata events, then one complete (`"ph":"X"`) or instant (`"ph":"i"`) event per
    /// timeline slice; timestamps in microseconds.
    pub fn chrome_trace(&self) -> serde_json::Value {
        use serde_json::json;
        let mut ev = Vec::new();
        for p in &self.processes {
            ev.push(
                json!({"name": "process_name", "ph": "M", "pid": p.pid, "tid": p.pid,
                "args": {"name": format!("{} ({})", p.comm, p.pid)}}),
            );
            for t in &p.threads {
                ev.push(
                    json!({"name": "thread_name", "ph": "M", "pid": p.pid, "tid": t.tid,
                    "args": {"name": format!("{} ({})", t.comm, t.tid)}}),
                );
            }
        }
        for e in &self.timeline {
            let ts = e.start_ns as f64 / 1e3;
            if e.dur_ns > 0 {
                ev.push(
                    json!({"name": e.name, "cat": "hpcscope", "ph": "X", "ts": ts,
                    "dur": e.dur_ns as f64 / 1e3, "pid": e.pid, "tid": e.tid,
                    "args": {"cpu": e.cpu}}),
                );
            } else {
                ev.push(
                    json!({"name": e.name, "cat": "hpcscope", "ph": "i", "s": "t",
                    "ts": ts, "pid": e.pid, "tid": e.tid}),
                );
            }
        }
        json!({"traceEvents": ev, "displayTimeUnit": "ms"})
    }
}

/// Line charts of a rate series: events per second (system calls, page faults, context
/// switches) and bytes per second (read, written), one point per interval at its middle.
pub fn rate_charts(r: &RateSeries) -> Vec<String> {
    use hpcscope_report::{ChartOptions, Series, line_chart_svg};
    let mid: Vec<f64> = r
        .start_s
        .iter()
        .zip(&r.span_s)
        .map(|(a, s)| a + s / 2.0)
        .collect();
    let series = |unit_is_bytes: bool| -> Vec<Series> {
        r.series
            .iter()
            .filter(|c| (c.unit == "bytes") == unit_is_bytes)
            .map(|c| Series {
                name: if unit_is_bytes {
                    format!("{} (MB/s)", c.name.replace('_', " "))
                } else {
                    c.name.replace('_', " ")
                },
                points: mid
                    .iter()
                    .zip(r.per_second(c))
                    .map(|(x, y)| (*x, if unit_is_bytes { y / 1e6 } else { y }))
                    .collect(),
                dashed: false,
            })
            .collect()
    };
    let mut out = Vec::new();
    for (bytes, title, y) in [
        (false, "events per second", "events / s"),
        (true, "bytes per second", "MB / s"),
    ] {
        let s = series(bytes);
        if s.is_empty() {
            continue;
        }
        out.push(line_chart_svg(
            &s,
            &ChartOptions {
                title: format!("{title}, every {} s", hpcscope_report::fmt::plain(r.interval_s)),
                x_label: "time since the start of the trace (s)".into(),
                y_label: y.into(),
                caption: "Each point is one interval's count divided by its length, at the interval's middle; the traced processes together."
                    .into(),
                ..Default::default()
            },
        ));
    }
    out
}

/// Sections for the HTML report (`hpcscope_report::html_page`): one table per level, and,
/// with a profile, the hot functions and a static flame graph.
pub fn html_sections(
    report: &TraceReport,
    profile: Option<&crate::Profile>,
) -> Vec<hpcscope_report::Section> {
    let mut out = Vec::new();
    for t in report.tables() {
        let headers: Vec<&str> = t.headers.iter().map(String::as_str).collect();
        out.push(hpcscope_report::Section {
            title: format!("trace: {} level", t.title),
            summary: format!(
                "{} over {:.3} s{}.",
                report.target,
                report.duration_s,
                if report.partial {
                    " (stopped early: partial data)"
                } else {
                    ""
                }
            ),
            body_html: hpcscope_report::html_table(&headers, &t.rows),
            svgs: match (&report.rates, t.title.as_str()) {
                (Some(r), "rate") => rate_charts(r),
                _ => Vec::new(),
            },
        });
    }
    if let Some(p) = profile {
        let rows: Vec<Vec<String>> = p
            .hot_functions(25)
            .into_iter()
            .map(|h| {
                vec![
                    h.name,
                    h.self_samples.to_string(),
                    format!("{:.1}", h.self_pct),
                    h.total_samples.to_string(),
                    format!("{:.1}", h.total_pct),
                ]
            })
            .collect();
        let top = p.hot_functions(1).into_iter().next();
        out.push(hpcscope_report::Section {
            title: "profile: hot functions".into(),
            summary: match top {
                Some(h) => format!(
                    "{} samples at {} Hz; the hottest function is {} ({:.1}% of samples on top of the stack).",
                    p.total(),
                    p.hz,
                    h.name,
                    h.self_pct
                ),
                None => "No samples.".into(),
            },
            body_html: hpcscope_report::html_table(&["function", "self", "self %", "total", "total %"], &rows),
            svgs: p.flamegraph_svg_static("CPU flame graph").into_iter().collect(),
        });
    }
    for s in out.iter_mut().take(1) {
        if !report.notes.is_empty() {
            s.body_html.push_str("<ul>");
            for n in &report.notes {
                s.body_html
                    .push_str(&format!("<li>{}</li>", hpcscope_report::escape(n)));
            }
            s.body_html.push_str("</ul>");
        }
    }
    out
}

impl TraceReport {
    /// The numbers `--record` keeps: totals over the traced processes, per syscall and per
    /// user function (the histograms stay in the JSON report).
    pub fn summary(&self) -> serde_json::Value {
        use std::collections::BTreeMap;
        let r = self;
        let mut syscalls: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
        type FnSums = (u64, u64, Option<MessageTotals>);
        let mut functions: BTreeMap<&str, FnSums> = BTreeMap::new();
        let (mut on, mut off, mut minor, mut major, mut cs) = (0u64, 0u64, 0u64, 0u64, 0u64);
        for p in &r.processes {
            on += p.on_cpu_ns;
            off += p.off_cpu_ns;
            minor += p.minor_faults;
            major += p.major_faults;
            cs += p.context_switches;
            for s in &p.syscalls {
                let e = syscalls.entry(&s.name).or_default();
                e.0 += s.count;
                e.1 += s.errors;
                e.2 += s.total_ns;
            }
            for f in &p.functions {
                let e = functions.entry(&f.symbol).or_default();
                e.0 += f.count;
                e.1 += f.total_ns;
                if let Some(t) = f.message_totals() {
                    e.2.get_or_insert_default().add(&t);
                }
            }
        }
        let syscalls: serde_json::Map<String, serde_json::Value> = syscalls
            .into_iter()
            .map(|(k, (n, e, t))| {
                (
                    k.to_string(),
                    serde_json::json!({"count": n, "errors": e, "time_s": t as f64 * 1e-9}),
                )
            })
            .collect();
        let functions: serde_json::Map<String, serde_json::Value> = functions
            .into_iter()
            .map(|(k, (n, t, m))| {
                let mut v = serde_json::json!({"count": n, "time_s": t as f64 * 1e-9});
                if let Some(m) = m {
                    // Bytes of known size; the elements include those of unknown size.
                    v["elements"] = m.elements.into();
                    v["bytes"] = m.bytes.into();
                }
                (k.to_string(), v)
            })
            .collect();
        let mut v = serde_json::json!({
            "time_s": r.duration_s,
            "on_cpu_s": on as f64 * 1e-9,
            "off_cpu_s": off as f64 * 1e-9,
            "minor_faults": minor,
            "major_faults": major,
            "context_switches": cs,
            "syscalls": syscalls,
            "functions": functions,
        });
        // What `merge` needs for eqs. 3.12 and 3.14-3.16: the OpenMP threads, the counters.
        if !r.openmp.is_empty() {
            v["openmp"] = serde_json::to_value(&r.openmp).unwrap_or_default();
        }
        if let Some(c) = &r.counters {
            v["counters"] = serde_json::to_value(c).unwrap_or_default();
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TraceReport {
        TraceReport {
            target: "pid 1".into(),
            processes: vec![ProcessLevel {
                pid: 10,
                comm: "app".into(),
                syscalls: vec![SyscallStat {
                    name: "write".into(),
                    nr: 1,
                    count: 4,
                    total_ns: 4000,
                    ..Default::default()
                }],
                threads: vec![ThreadLevel {
                    tid: 11,
                    comm: "app".into(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            timeline: vec![
                TimelineEvent {
                    name: "on-cpu".into(),
                    pid: 10,
                    tid: 11,
                    start_ns: 1500,
                    dur_ns: 2000,
                    cpu: 1,
                },
                TimelineEvent {
                    name: "exit".into(),
                    pid: 10,
                    tid: 11,
                    start_ns: 9000,
                    dur_ns: 0,
                    cpu: 0,
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn tables_cover_each_level_with_data() {
        let titles: Vec<String> = sample().tables().into_iter().map(|t| t.title).collect();
        assert_eq!(titles, ["system", "process", "syscall", "thread"]);
        let sc = &sample().tables()[2];
        assert_eq!(sc.rows[0][1], "write");
        assert_eq!(sc.rows[0][5], "1.00"); // 4000 ns / 4 calls = 1 us
    }

    #[test]
    fn what_no_probe_measured_is_a_dash_and_block_rows_say_machine_wide() {
        // `--probes files,block`: no scheduler, fault or syscall figures were measured.
        let mut r = sample();
        r.probes = vec!["files".into(), "block".into()];
        r.system.block.push(BlockDevice {
            device: "254:0".into(),
            requests: 3,
            bytes: 12288,
            ..Default::default()
        });
        let tables = r.tables();
        let p = tables.iter().find(|t| t.title == "process").unwrap();
        assert_eq!(p.rows[0][2..], ["-", "-", "-", "-", "-", "-"]);
        let th = tables.iter().find(|t| t.title == "thread").unwrap();
        assert!(th.rows[0][3..].iter().all(|c| c == "-"), "{:?}", th.rows[0]);
        let sys = tables.iter().find(|t| t.title == "system").unwrap();
        let block = sys.rows.iter().find(|r| r[0].starts_with("block")).unwrap();
        assert!(block[0].contains("whole machine"), "{block:?}");
        // Measured zeros stay zeros.
        r.probes = vec!["sched".into(), "faults".into(), "syscalls".into()];
        let p = r
            .tables()
            .into_iter()
            .find(|t| t.title == "process")
            .unwrap();
        assert_eq!(p.rows[0][2..], ["0.000", "0.000", "0", "0", "0", "4"]);
    }

    #[test]
    fn the_command_status_is_the_shells() {
        let mut r = TraceReport::default();
        assert_eq!(r.command_status(), None);
        r.exit_code = Some(7);
        assert_eq!(r.command_status(), Some(7));
        r.exit_code = None;
        r.exit_signal = Some(9);
        assert_eq!(r.command_status(), Some(137));
    }

    #[test]
    fn html_sections_hold_tables_and_a_static_flame_graph() {
        let p = crate::Profile {
            hz: 99,
            duration_s: 1.0,
            samples: vec![crate::StackSample {
                pid: 1,
                tid: 1,
                comm: "a".into(),
                frames: vec!["main".into(), "dot".into()],
                count: 3,
            }],
            missing_user_stacks: 0,
        };
        let s = html_sections(&sample(), Some(&p));
        assert_eq!(s.len(), 5);
        assert!(s[0].body_html.contains("<table>"));
        let last = s.last().unwrap();
        assert!(last.summary.contains("dot"));
        assert!(last.svgs[0].starts_with("<svg") && !last.svgs[0].contains("<script"));
    }

    #[test]
    fn chrome_trace_has_metadata_complete_and_instant_events() {
        let v = sample().chrome_trace();
        let ev = v["traceEvents"].as_array().unwrap();
        assert_eq!(ev.len(), 4);
        assert_eq!(ev[2]["ph"], "X");
        assert_eq!(ev[2]["ts"], 1.5);
        assert_eq!(ev[2]["dur"], 2.0);
        assert_eq!(ev[3]["ph"], "i");
    }
}
