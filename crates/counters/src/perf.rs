//! Live collection through `perf_event_open(2)` (Linux): PMU probing, recipe events resolved
//! to `perf_event_attr` encodings through sysfs, and whole-command runs (`inherit` across
//! threads and child processes, enabled at exec), one run per event group by default as the
//! seed does, or all groups at once with multiplexing scaled and flagged.
//!
//! The system-call layer is `hpcscope_host::perf`, shared with the region markers and the
//! native sampling of `mix`.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::Instant;

use hpcscope_host::perf as sys;
pub use hpcscope_host::perf::{EventSpec, Group, OpenOptions};

use crate::catalogue::{EventDef, Recipe};
pub use crate::error::PmuStatus;
use crate::error::{EnvLimit, Error, Result};
use crate::raw::{Collector, Count, RawData, Status};

/// sysfs root of the PMUs.
pub const SYSFS_PMUS: &str = "/sys/bus/event_source/devices";

/// Probes the hardware PMU by opening `cycles` on this thread.
pub fn probe() -> PmuStatus {
    let virtualized = crate::cpu::CpuId::detect().hypervisor;
    let spec = EventSpec::parse("cycles").expect("generic event");
    let opts = OpenOptions {
        exclude_kernel: sys::must_exclude_kernel(),
        disabled: true,
        ..OpenOptions::default()
    };
    match Group::open(std::slice::from_ref(&spec), 0, -1, opts) {
        Ok(_) => PmuStatus {
            available: true,
            virtualized,
            detail: "perf_event_open(cycles) succeeded".into(),
        },
        Err(f) => {
            let core_pmu = ["cpu", "cpu_core", "armv8_pmuv3_0", "armv8_pmuv3"]
                .iter()
                .any(|p| Path::new(SYSFS_PMUS).join(p).exists())
                || std::fs::read_dir(SYSFS_PMUS)
                    .map(|d| {
                        d.flatten()
                            .any(|e| e.file_name().to_string_lossy().starts_with("armv8_"))
                    })
                    .unwrap_or(false);
            let why = f.first().map(|(_, w)| w.clone()).unwrap_or_default();
            PmuStatus {
                available: false,
                virtualized,
                detail: format!(
                    "perf_event_open(cycles) failed: {why}; {}",
                    if core_pmu {
                        "a core PMU is listed in sysfs"
                    } else {
                        "no core PMU in /sys/bus/event_source/devices (only software, tracepoint and similar PMUs)"
                    }
                ),
            }
        }
    }
}

/// Says in `raw` whether this machine's PMU is available, for counters taken here (a file
/// made elsewhere says nothing about this machine).
pub fn note_pmu(raw: &mut RawData) {
    let pmu = probe();
    if !pmu.available {
        raw.hardware_unavailable = Some(pmu.to_string());
    }
}

/// Checks `perf_event_paranoid` against what counting needs: 2 for own processes (user
/// space), 0 for uncore and system-wide events.
pub fn check_paranoid(needed: i32, what: &str) -> Result<()> {
    if sys::is_root() {
        return Ok(());
    }
    match sys::paranoid() {
        Some(p) if p > needed => Err(Error::Env(EnvLimit::Paranoid {
            current: p,
            needed,
            what: what.to_string(),
        })),
        _ => Ok(()),
    }
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Encodes `event=0xc7,umask=0x01` for a PMU using its sysfs `format/` files
/// (`config:0-7`, `config:8-15`, `config1:0-63`, ...). Returns (config, config1, config2).
pub fn encode(pmu_dir: &Path, fields: &str) -> std::result::Result<(u64, u64, u64), String> {
    let mut cfg = [0u64; 3];
    for kv in fields.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, "1"));
        let v = v.trim();
        let val = if let Some(h) = v.strip_prefix("0x") {
            u64::from_str_radix(h, 16)
        } else {
            v.parse()
        }
        .map_err(|_| format!("'{kv}': bad number"))?;
        let fmt = read_trim(&pmu_dir.join("format").join(k))
            .ok_or_else(|| format!("PMU {} has no format field '{k}'", pmu_dir.display()))?;
        let (reg, bits) = fmt
            .split_once(':')
            .ok_or_else(|| format!("bad format '{fmt}'"))?;
        let idx = match reg {
            "config" => 0,
            "config1" => 1,
            "config2" => 2,
            _ => return Err(format!("unsupported format register '{reg}'")),
        };
        // Bit ranges may be split: "0-7,32-35".
        let mut rest = val;
        for range in bits.split(',') {
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (a.parse::<u32>(), b.parse::<u32>()),
                None => (range.parse::<u32>(), range.parse::<u32>()),
            };
            let (lo, hi) = (
                lo.map_err(|_| format!("bad format '{fmt}'"))?,
                hi.map_err(|_| format!("bad format '{fmt}'"))?,
            );
            let width = hi - lo + 1;
            let mask = if width >= 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            cfg[idx] |= (rest & mask) << lo;
            rest = if width >= 64 { 0 } else { rest >> width };
        }
    }
    Ok((cfg[0], cfg[1], cfg[2]))
}

/// Default core PMU names to try, per architecture.
fn core_pmus(root: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for n in ["cpu", "cpu_core"] {
        let p = root.join(n);
        if p.exists() {
            v.push(p);
        }
    }
    if let Ok(d) = std::fs::read_dir(root) {
        let mut arm: Vec<PathBuf> = d
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("armv8_"))
            .map(|e| e.path())
            .collect();
        arm.sort();
        v.extend(arm);
    }
    v
}

/// One resolved event instance: what to open, and for uncore events the CPU to open it on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Logical event of the recipe.
    pub event: String,
    /// What to open.
    pub spec: EventSpec,
    /// CPU for uncore (system-wide) events; `None` for per-task events.
    pub cpu: Option<i32>,
}

/// Resolves a recipe event to perf_event_attr encodings through the PMUs under `root`
/// (normally [`SYSFS_PMUS`]): the generic hardware event if the recipe gives one, else the
/// raw encoding on the core PMU, or on every instance of an uncore PMU (`uncore_imc_*`).
pub fn resolve(
    name: &str,
    ev: &EventDef,
    root: &Path,
) -> std::result::Result<Vec<Resolved>, String> {
    if let Some(g) = &ev.generic {
        let mut spec = EventSpec::parse(g)?;
        spec.name = name.to_string();
        return Ok(vec![Resolved {
            event: name.into(),
            spec,
            cpu: None,
        }]);
    }
    let Some(raw) = &ev.raw else {
        return Err(format!(
            "no encoding: give `raw = \"event=0x..,umask=0x..\"` or `generic` for '{name}' in the recipe"
        ));
    };
    let pmus: Vec<PathBuf> = match &ev.pmu {
        Some(p) if p.contains('*') => {
            let prefix = p.trim_end_matches('*');
            let mut v: Vec<PathBuf> = std::fs::read_dir(root)
                .map_err(|e| format!("{}: {e}", root.display()))?
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                .map(|e| e.path())
                .collect();
            v.sort();
            v
        }
        Some(p) => vec![root.join(p)],
        None => core_pmus(root).into_iter().take(1).collect(),
    };
    let pmus: Vec<PathBuf> = pmus
        .into_iter()
        .filter(|p| p.join("type").exists())
        .collect();
    if pmus.is_empty() {
        return Err(format!(
            "PMU '{}' not found in {}",
            ev.pmu.as_deref().unwrap_or("cpu"),
            root.display()
        ));
    }
    let mut out = Vec::new();
    for p in pmus {
        let t: u32 = read_trim(&p.join("type"))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("{}: no type", p.display()))?;
        let (config, config1, config2) = encode(&p, raw)?;
        let uncore = ev.pmu.is_some();
        let pmu_name = p
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let spec = |name: String| EventSpec {
            name,
            type_: t,
            config,
            config1,
            config2,
        };
        if !uncore {
            out.push(Resolved {
                event: name.into(),
                spec: spec(name.to_string()),
                cpu: None,
            });
            continue;
        }
        // An uncore PMU's cpumask names one CPU per instance of the unit it counts (a
        // socket's memory controller, a CCX's L3): the event is opened on each, and the
        // instances are summed like those of several PMUs.
        let cpus = read_trim(&p.join("cpumask"))
            .map(|m| cpu_list(&m))
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| vec![0]);
        let many = cpus.len() > 1;
        for c in cpus {
            out.push(Resolved {
                event: name.into(),
                spec: spec(if many {
                    format!("{name}@{pmu_name}.cpu{c}")
                } else {
                    format!("{name}@{pmu_name}")
                }),
                cpu: Some(c),
            });
        }
    }
    Ok(out)
}

/// CPUs of a sysfs CPU list (`0,24`, `0-3,8`); entries that do not parse are skipped.
fn cpu_list(s: &str) -> Vec<i32> {
    hpcscope_host::topology::parse_cpu_list_lenient(s)
        .into_iter()
        .filter_map(|c| i32::try_from(c).ok())
        .collect()
}

/// How to collect.
#[derive(Debug, Clone)]
pub struct CollectOptions {
    /// Hardware events per group (one run each unless `multiplex`).
    pub group_size: usize,
    /// Open all groups in one run and scale by enabled/running time.
    pub multiplex: bool,
    /// Software events counted in every run (perf names).
    pub software: Vec<String>,
    /// Extra environment for the command.
    pub env: Vec<(String, String)>,
    /// sysfs PMU root.
    pub sysfs: PathBuf,
    /// The command's standard output goes to /dev/null (inside `analyze`, whose own output
    /// it must not mix with); `counters run` keeps it.
    pub quiet: bool,
}

impl Default for CollectOptions {
    fn default() -> Self {
        CollectOptions {
            group_size: 4,
            multiplex: false,
            software: sys::DEFAULT_SOFTWARE
                .iter()
                .map(|s| s.to_string())
                .collect(),
            env: Vec::new(),
            sysfs: PathBuf::from(SYSFS_PMUS),
            quiet: false,
        }
    }
}

/// What one run of the command produced.
#[derive(Debug, Clone)]
pub struct RunCounts {
    /// Wall time, seconds.
    pub time_s: f64,
    /// Exit status of the command (its code, or 128 + signal).
    pub status: i32,
    /// Counter name -> reading.
    pub counts: Vec<(String, Count)>,
}

/// Runs `argv` once with these per-task groups (inherited by its threads and children,
/// enabled at exec) and these uncore events (system-wide on one CPU each).
pub fn run_once(
    argv: &[String],
    env: &[(String, String)],
    quiet: bool,
    groups: &[Vec<EventSpec>],
    uncore: &[(EventSpec, i32)],
) -> Result<RunCounts> {
    if argv.is_empty() {
        return Err(Error::Input(
            "no command given: hpcscope counters run -- COMMAND [ARGS]".into(),
        ));
    }
    let c_argv: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::Input("a command argument contains a NUL byte".into()))?;
    // The environment as bytes: a variable that is not UTF-8 (`PWD` in a directory named in
    // Latin-1) is passed on as it is.
    use std::os::unix::ffi::OsStrExt;
    let mut envs: Vec<(Vec<u8>, Vec<u8>)> = std::env::vars_os()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
    for (k, v) in env {
        envs.retain(|(a, _)| a != k.as_bytes());
        envs.push((k.as_bytes().to_vec(), v.as_bytes().to_vec()));
    }
    let c_env: Vec<CString> = envs
        .into_iter()
        .filter_map(|(mut k, v)| {
            k.push(b'=');
            k.extend(v);
            CString::new(k).ok()
        })
        .collect();
    let mut argv_p: Vec<*const libc::c_char> = c_argv.iter().map(|c| c.as_ptr()).collect();
    argv_p.push(std::ptr::null());
    let mut env_p: Vec<*const libc::c_char> = c_env.iter().map(|c| c.as_ptr()).collect();
    env_p.push(std::ptr::null());
    let mut go = [0 as libc::c_int; 2];
    // SAFETY: go is a 2-int array as pipe2 requires.
    if unsafe { libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(sys_err("pipe2"));
    }
    let null = if quiet {
        hpcscope_host::child::null_for_child()
    } else {
        None
    };
    let null_fd = null.as_ref().map(std::os::fd::AsRawFd::as_raw_fd);
    // SAFETY: getpid before the fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: after fork the child only calls async-signal-safe functions (prctl, getppid,
    // read, dup2, execvpe, _exit) on data prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(sys_err("fork"));
    }
    if pid == 0 {
        unsafe {
            // The measured program dies with hpcscope.
            hpcscope_host::child::in_child_after_fork(parent);
            libc::close(go[1]);
            let mut b = 0u8;
            libc::read(go[0], (&mut b as *mut u8).cast(), 1);
            if let Some(fd) = null_fd {
                hpcscope_host::child::stdout_to_in_child(fd);
            }
            libc::execvpe(argv_p[0], argv_p.as_ptr(), env_p.as_ptr());
            libc::_exit(127);
        }
    }
    // SAFETY: closing our copy of the read end.
    unsafe {
        libc::close(go[0]);
    }
    let opts = OpenOptions {
        inherit: true,
        enable_on_exec: true,
        exclude_kernel: sys::must_exclude_kernel(),
        disabled: false,
    };
    let mut opened: Vec<Group> = Vec::new();
    let mut failed: Vec<(String, String)> = Vec::new();
    for g in groups {
        match Group::open(g, pid, -1, opts) {
            Ok(grp) => {
                failed.extend(grp.failed.iter().cloned());
                opened.push(grp);
            }
            Err(f) => failed.extend(f),
        }
    }
    let mut unc: Vec<(String, Group)> = Vec::new();
    for (spec, cpu) in uncore {
        let o = OpenOptions {
            disabled: true,
            ..OpenOptions::default()
        };
        match Group::open(std::slice::from_ref(spec), -1, *cpu, o) {
            Ok(g) => unc.push((spec.name.clone(), g)),
            Err(f) => failed.extend(f),
        }
    }
    let t0 = Instant::now();
    for (_, g) in &unc {
        let _ = g.enable();
    }
    // SAFETY: go[1] is our write end; one byte releases the child into exec.
    unsafe {
        libc::write(go[1], [1u8].as_ptr().cast(), 1);
        libc::close(go[1]);
    }
    let mut st: libc::c_int = 0;
    // SAFETY: waiting for our own child.
    unsafe {
        libc::waitpid(pid, &mut st, 0);
    }
    let time_s = t0.elapsed().as_secs_f64();
    for (_, g) in &unc {
        let _ = g.disable();
    }
    let status = if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else {
        128 + libc::WTERMSIG(st)
    };
    if status == 127 {
        return Err(Error::Input(format!(
            "cannot run '{}': not found or not executable",
            argv[0]
        )));
    }
    let mut counts = Vec::new();
    for g in &opened {
        let mut v = [0u64; sys::MAX_GROUP];
        let (en, run) = g.read_into(&mut v).map_err(|e| sys_err_io("read", &e))?;
        for (i, n) in g.names.iter().enumerate() {
            counts.push((n.clone(), Count::from_times(v[i], en, run)));
        }
    }
    for (n, g) in &unc {
        let mut v = [0u64; 1];
        let (en, run) = g.read_into(&mut v).map_err(|e| sys_err_io("read", &e))?;
        counts.push((n.clone(), Count::from_times(v[0], en, run)));
    }
    for (n, _) in failed {
        counts.push((n, Count::missing(Status::NotSupported)));
    }
    Ok(RunCounts {
        time_s,
        status,
        counts,
    })
}

fn sys_err(call: &str) -> Error {
    sys_err_io(call, &std::io::Error::last_os_error())
}

fn sys_err_io(call: &str, e: &std::io::Error) -> Error {
    Error::Env(EnvLimit::Syscall {
        call: call.to_string(),
        message: e.to_string(),
    })
}

/// Collects a recipe's events for a whole command: software events in every run, hardware
/// events in groups of `group_size` (one run per group, or one multiplexed run). Returns one
/// region `all` with the command's counts; hardware events that cannot be opened are
/// `<not supported>` with the PMU status as the reason.
pub fn collect(
    recipe: &Recipe,
    events: &[String],
    argv: &[String],
    opts: &CollectOptions,
) -> Result<RawData> {
    check_paranoid(2, "counting your own command")?;
    let pmu = probe();
    let mut raw = RawData::new("run", "perf_event", Collector::Perf);
    let sw: Vec<EventSpec> = opts
        .software
        .iter()
        .map(|s| EventSpec::parse(s).map_err(Error::Input))
        .collect::<Result<_>>()?;
    let mut hw: Vec<Resolved> = Vec::new();
    let mut unresolved: Vec<(String, String)> = Vec::new();
    if pmu.available {
        for e in events {
            let Some(def) = recipe.events.get(e) else {
                continue;
            };
            match resolve(e, def, &opts.sysfs) {
                Ok(r) => hw.extend(r),
                Err(why) => unresolved.push((e.clone(), why)),
            }
        }
    } else {
        raw.hardware_unavailable = Some(pmu.to_string());
    }
    let core: Vec<EventSpec> = hw
        .iter()
        .filter(|r| r.cpu.is_none())
        .map(|r| r.spec.clone())
        .collect();
    let uncore: Vec<(EventSpec, i32)> = hw
        .iter()
        .filter_map(|r| r.cpu.map(|c| (r.spec.clone(), c)))
        .collect();
    if !uncore.is_empty() {
        check_paranoid(0, "uncore events (memory controller counters)")?;
    }
    let size = opts.group_size.max(1);
    let hw_groups: Vec<Vec<EventSpec>> = core.chunks(size).map(|c| c.to_vec()).collect();
    // Per run: the per-task groups and the uncore events.
    type Run = (Vec<Vec<EventSpec>>, Vec<(EventSpec, i32)>);
    let mut runs: Vec<Run> = Vec::new();
    if opts.multiplex || hw_groups.is_empty() {
        let mut g = vec![sw.clone()];
        g.extend(hw_groups);
        runs.push((g, uncore));
    } else {
        for (i, h) in hw_groups.into_iter().enumerate() {
            let u = if i == 0 { uncore.clone() } else { Vec::new() };
            runs.push((vec![sw.clone(), h], u));
        }
    }
    let nruns = runs.len();
    let mut times = Vec::new();
    for (i, (groups, unc)) in runs.iter().enumerate() {
        let r = run_once(argv, &opts.env, opts.quiet, groups, unc)?;
        raw.exit_status = Some(r.status);
        if r.status != 0 {
            raw.warnings.push(format!(
                "run {} of {nruns}: the command exited with status {}",
                i + 1,
                r.status
            ));
        }
        times.push(r.time_s);
        let t = raw.thread_mut("all", 0);
        for (n, c) in r.counts {
            // Software events: keep the first run's (every run counts them).
            if i > 0 && sw.iter().any(|s| s.name == n) {
                continue;
            }
            // Uncore instances of one logical event are summed by the recipe's glob.
            t.counters.insert(n, c);
        }
    }
    let t = raw.thread_mut("all", 0);
    t.time_s = times.first().copied();
    t.calls = Some(1);
    if nruns > 1 {
        let (lo, hi) = times
            .iter()
            .fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
        raw.warnings.push(format!(
            "{nruns} runs, one per event group (no multiplexing); wall time {lo:.3}-{hi:.3} s across runs, metrics combine counts of different runs"
        ));
    }
    for (e, why) in unresolved {
        let spelling = recipe
            .events
            .get(&e)
            .and_then(|d| d.raw.clone().or(d.perf.clone()))
            .unwrap_or_default();
        raw.warnings.push(
            Error::MissingEvent {
                recipe: recipe.recipe.id.clone(),
                event: e.clone(),
                spelling,
                reason: why,
                hint: "check `perf list` on this machine; fix the event in a recipe file (--recipe-file), or pick the recipe of this CPU (--recipe)".into(),
            }
            .to_string(),
        );
        raw.thread_mut("all", 0)
            .counters
            .insert(e, Count::missing(Status::NotSupported));
    }
    Ok(raw)
}

/// Runs a program that uses the region markers, once per hardware event group (or once
/// with `user_events` if given), and merges the per-region results. Software events are
/// counted in every run; the first run's are kept.
pub fn collect_markers(
    recipe: &Recipe,
    events: &[String],
    argv: &[String],
    opts: &CollectOptions,
    user_events: &[String],
    dir: &Path,
) -> Result<RawData> {
    check_paranoid(2, "counting your own command")?;
    if argv.is_empty() {
        return Err(Error::Input(
            "no command given: hpcscope counters run --markers -- COMMAND [ARGS]".into(),
        ));
    }
    let pmu = probe();
    let mut runs: Vec<Vec<String>> = Vec::new();
    let mut skipped: Vec<(String, String)> = Vec::new();
    if !user_events.is_empty() {
        runs.push(user_events.to_vec());
    } else {
        let mut hw: Vec<String> = Vec::new();
        if pmu.available {
            for e in events {
                let Some(def) = recipe.events.get(e) else {
                    continue;
                };
                match resolve(e, def, &opts.sysfs) {
                    // Uncore events are system-wide: not countable per thread and region.
                    Ok(r) if r.iter().any(|x| x.cpu.is_some()) => {
                        skipped.push((e.clone(), "uncore (system-wide) event: not counted per region; use `counters run` without --markers".into()))
                    }
                    Ok(r) => hw.extend(r.into_iter().map(|x| {
                        format!("{}={}:{:#x}:{:#x}:{:#x}", x.spec.name, x.spec.type_, x.spec.config, x.spec.config1, x.spec.config2)
                    })),
                    Err(why) => skipped.push((e.clone(), why)),
                }
            }
        }
        let size = opts
            .group_size
            .max(1)
            .min(sys::MAX_GROUP - opts.software.len());
        if hw.is_empty() {
            runs.push(opts.software.clone());
        }
        for chunk in hw.chunks(size) {
            let mut v = opts.software.clone();
            v.extend(chunk.iter().cloned());
            runs.push(v);
        }
    }
    let label = Path::new(&argv[0])
        .file_name()
        .map_or("run".into(), |s| s.to_string_lossy().into_owned());
    let mut merged: Option<RawData> = None;
    let n = runs.len();
    for (i, ev) in runs.iter().enumerate() {
        let out = dir.join(format!("markers-{i}.json"));
        let status =
            hpcscope_host::child::die_with_parent(&mut std::process::Command::new(&argv[0]))
                .args(&argv[1..])
                .envs(opts.env.iter().cloned())
                .env(hpcscope_markers::ENV_ACTIVE, "1")
                .env(hpcscope_markers::ENV_OUT, &out)
                .env(hpcscope_markers::ENV_EVENTS, ev.join(","))
                .status()
                .map_err(|e| Error::Input(format!("cannot run '{}': {e}", argv[0])))?;
        if !out.exists() {
            return Err(Error::Input(format!(
                "'{}' wrote no marker results (exit status {status}): is it linked with libhpcscope_markers and does it call hpcscope_region_start/stop?",
                argv[0]
            )));
        }
        let text = std::fs::read_to_string(&out).map_err(|e| Error::Io {
            path: out.clone(),
            source: e,
        })?;
        let mut r = crate::import::markers::parse(&text, &out.display().to_string(), &label)?;
        if !status.success() {
            r.warnings.push(format!(
                "run {} of {n}: the command exited with {status}",
                i + 1
            ));
        }
        match &mut merged {
            None => merged = Some(r),
            Some(m) => {
                for reg in &mut r.regions {
                    for t in &mut reg.threads {
                        t.counters
                            .retain(|k, _| !opts.software.iter().any(|s| s == k));
                    }
                }
                r.warnings.retain(|w| !m.warnings.contains(w));
                m.merge(&r);
            }
        }
    }
    let mut raw = merged.expect("at least one run");
    note_pmu(&mut raw);
    if n > 1 {
        raw.warnings.push(format!("{n} runs, one per event group (no multiplexing): metrics combine counts of different runs"));
    }
    for (e, why) in skipped {
        raw.warnings.push(format!("event {e}: {why}"));
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_sysfs() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let cpu = d.path().join("cpu");
        std::fs::create_dir_all(cpu.join("format")).unwrap();
        std::fs::write(cpu.join("type"), "4\n").unwrap();
        std::fs::write(cpu.join("format/event"), "config:0-7\n").unwrap();
        std::fs::write(cpu.join("format/umask"), "config:8-15\n").unwrap();
        std::fs::write(cpu.join("format/cmask"), "config:24-31\n").unwrap();
        for i in 0..2 {
            let u = d.path().join(format!("uncore_imc_{i}"));
            std::fs::create_dir_all(u.join("format")).unwrap();
            std::fs::write(u.join("type"), format!("{}\n", 20 + i)).unwrap();
            std::fs::write(u.join("format/event"), "config:0-7\n").unwrap();
            std::fs::write(u.join("format/umask"), "config:8-15\n").unwrap();
            std::fs::write(u.join("cpumask"), "0,24\n").unwrap();
        }
        d
    }

    #[test]
    fn encodes_through_sysfs_formats() {
        let d = fake_sysfs();
        let (c, _, _) = encode(&d.path().join("cpu"), "event=0xc7,umask=0x01,cmask=2").unwrap();
        assert_eq!(c, 0x0200_01c7);
        assert!(
            encode(&d.path().join("cpu"), "bogus=1")
                .unwrap_err()
                .contains("no format field 'bogus'")
        );
    }

    #[test]
    fn resolves_recipe_events() {
        let d = fake_sysfs();
        let cat = crate::Catalogue::builtin();
        let r = cat.find("clx").unwrap();
        let fp = resolve("FP_512_D", &r.events["FP_512_D"], d.path()).unwrap();
        assert_eq!(
            (fp[0].spec.type_, fp[0].spec.config, fp[0].cpu),
            (4, 0x40c7, None)
        );
        let inst = resolve("INST", &r.events["INST"], d.path()).unwrap();
        assert_eq!(inst[0].spec.type_, sys::TYPE_HARDWARE);
        // Two memory-controller PMUs, each counting on two sockets (cpumask "0,24"): four
        // instances, one per PMU and socket.
        let cas = resolve("CAS_RD", &r.events["CAS_RD"], d.path()).unwrap();
        assert_eq!(cas.len(), 4);
        assert_eq!(cas[3].spec.name, "CAS_RD@uncore_imc_1.cpu24");
        assert_eq!(
            (cas[3].spec.type_, cas[3].spec.config, cas[3].cpu),
            (21, 0x0304, Some(24))
        );
        assert_eq!(
            cas.iter().map(|c| c.cpu.unwrap()).collect::<Vec<_>>(),
            [0, 24, 0, 24]
        );
        assert_eq!(cpu_list("0-2,8\n"), [0, 1, 2, 8]);
        assert_eq!(cpu_list(""), Vec::<i32>::new());
        let a = cat.find("a64fx").unwrap();
        let e = resolve("FP_SPEC", &a.events["FP_SPEC"], &d.path().join("nothing")).unwrap_err();
        assert!(e.contains("not found"), "{e}");
    }

    #[test]
    fn probe_says_what_is_missing() {
        let s = probe();
        let text = s.to_string();
        if s.available {
            println!("PMU available here: {text}");
        } else {
            assert!(
                text.contains("not available") && text.contains("Needed"),
                "{text}"
            );
            println!("{text}");
        }
    }
}
