//! The real probes on this machine (needs root and BPF; skips with one line otherwise).
//!
//! A C program with known behaviour (`tests/data/testee.c`) is built with the system C
//! compiler, traced, and its counts compared with what it did and with what the kernel
//! itself counted for it.

use hpcscope_core::Classify;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use hpcscope_trace::{FunctionSpec, Probes, Target, TraceError, TraceOptions, TraceReport, trace};

mod common;

/// The probes are system-wide; run the tests one at a time so counts stay readable.
static SERIAL: Mutex<()> = Mutex::new(());

fn skip_reason() -> Option<String> {
    if !hpcscope_trace::doctor::has_bpf_caps() {
        return Some("not root (no CAP_BPF/CAP_SYS_ADMIN)".into());
    }
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("kernel without BTF".into());
    }
    None
}

fn testee() -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| common::build_testee("hpcscope-testee"))
        .clone()
}

macro_rules! setup {
    () => {{
        if let Some(why) = skip_reason() {
            println!("skipping: {why}");
            return;
        }
        let Some(bin) = testee() else {
            println!("skipping: no C compiler (cc) to build the test program");
            return;
        };
        (SERIAL.lock().unwrap_or_else(|e| e.into_inner()), bin)
    }};
}

fn field(line: &str, name: &str) -> u64 {
    let mut it = line.split_whitespace();
    while let Some(w) = it.next() {
        if w == name {
            return it.next().and_then(|v| v.parse().ok()).unwrap_or(u64::MAX);
        }
    }
    panic!("no {name} in {line:?}")
}

#[test]
fn counts_match_exactly() {
    let (_g, bin) = setup!();
    let (w, f, s, k) = (20_000u64, 1000u64, 5u64, 1000u64);
    let out_file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("testee-counts.out");
    // The program writes one line to stdout; capture it through a shell redirection.
    let cmd = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!(
            "exec {} counts {w} {f} {s} {k} > {}",
            bin.display(),
            out_file.display()
        ),
    ];
    let opts = TraceOptions {
        target: Target::Command(cmd),
        probes: Probes {
            syscalls: true,
            sched: true,
            faults: true,
            files: true,
            functions: vec![FunctionSpec {
                binary: Some(bin.display().to_string()),
                symbol: "hs_work".into(),
            }],
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    let r = trace(&opts).expect("trace").report;
    assert_eq!(r.exit_code, Some(0), "{:#?}", r.notes);
    let line = std::fs::read_to_string(&out_file).unwrap();
    let p = r
        .processes
        .iter()
        .find(|p| p.comm == "hpcscope-testee")
        .unwrap_or_else(|| panic!("{r:#?}"));
    let sc = |name: &str| {
        p.syscalls
            .iter()
            .find(|s| s.name == name)
            .cloned()
            .unwrap_or_default()
    };
    // Writes: W to /dev/null plus the one report line.
    assert_eq!(sc("write").count, w + 1);
    assert_eq!(sc("write").errors, 0);
    // Sleeps: glibc's nanosleep is the clock_nanosleep syscall; each lasts >= 10 ms and,
    // on an idle or busy 2-CPU machine, well under 10 ms + 200 ms.
    let sl = sc("clock_nanosleep");
    assert_eq!(sl.count, s);
    assert!(sl.total_ns >= s * 10_000_000, "{sl:?}");
    assert!(sl.max_ns < 210_000_000, "{sl:?}");
    // File I/O: the /dev/null descriptor got exactly W * 64 bytes.
    let devnull = p
        .files
        .iter()
        .find(|x| x.path.as_deref() == Some("/dev/null"))
        .expect("/dev/null fd");
    assert_eq!((devnull.writes, devnull.write_bytes), (w, w * 64));
    // Faults: the worker thread's minor/major faults equal the kernel's own count for it,
    // which is at least the F pages it touched.
    let tid = field(&line, "tid") as u32;
    let t = p
        .threads
        .iter()
        .find(|t| t.tid == tid)
        .unwrap_or_else(|| panic!("thread {tid} in {p:#?}"));
    assert_eq!(t.minor_faults, field(&line, "minflt"), "{line}");
    assert_eq!(t.major_faults, field(&line, "majflt"), "{line}");
    assert!(t.minor_faults >= f);
    // Scheduler: the main thread slept S times: at least S voluntary switches, and at
    // least S * 10 ms off CPU; every thread ran.
    let main = p
        .threads
        .iter()
        .find(|t| t.tid == p.pid)
        .expect("main thread");
    assert!(main.voluntary_switches >= s, "{main:?}");
    assert!(main.off_cpu_ns >= s * 10_000_000, "{main:?}");
    assert!(p.threads.iter().all(|t| t.on_cpu_ns > 0), "{p:#?}");
    // The worker's voluntary switches: what it counted, plus its sleep in sem_post/pause
    // (at most 3 more: futex wake, pause, exit).
    let nv = field(&line, "nvcsw");
    assert!(
        t.voluntary_switches >= nv && t.voluntary_switches <= nv + 3,
        "{t:?} {line}"
    );
    // Function calls: exactly K, each a short loop (more than 0, less than 10 ms).
    let func = p
        .functions
        .iter()
        .find(|x| x.symbol == "hs_work")
        .expect("hs_work");
    assert_eq!(func.count, k);
    assert!(func.min_ns > 0 && func.max_ns < 10_000_000, "{func:?}");
    // The shell that exec'ed the program is the same process: no other process traced.
    assert_eq!(r.processes.len(), 1, "{r:#?}");
}

#[test]
fn follows_forked_children() {
    let (_g, bin) = setup!();
    let cmd = vec![
        "sh".into(),
        "-c".into(),
        format!(
            "{b} counts 100 1 0 0 >/dev/null; {b} counts 200 1 0 0 >/dev/null",
            b = bin.display()
        ),
    ];
    let opts = TraceOptions {
        target: Target::Command(cmd),
        probes: Probes {
            syscalls: true,
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    let r = trace(&opts).expect("trace").report;
    let mut writes: Vec<u64> = r
        .processes
        .iter()
        .filter(|p| p.comm == "hpcscope-testee")
        .map(|p| {
            p.syscalls
                .iter()
                .find(|s| s.name == "write")
                .map(|s| s.count)
                .unwrap_or(0)
        })
        .collect();
    writes.sort();
    assert_eq!(writes, [101, 201], "{r:#?}");
}

#[test]
fn profile_puts_the_hot_function_on_top() {
    let (_g, bin) = setup!();
    let opts = TraceOptions {
        target: Target::Command(vec![bin.display().to_string(), "spin".into(), "1.0".into()]),
        probes: Probes {
            profile_hz: Some(499),
            kernel_stacks: true,
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    let out = trace(&opts).expect("trace");
    let prof = out.profile.expect("profile");
    let hot = prof.hot_functions(5);
    assert!(prof.total() > 20, "{} samples", prof.total());
    assert_eq!(hot[0].name, "hot_function", "{hot:#?}");
    assert!(hot[0].self_pct > 50.0, "{hot:#?}");
    let all = prof.hot_functions(100);
    assert!(
        all.iter().any(|h| h.name == "main" && h.total_pct > 90.0),
        "{all:#?}"
    );
    let folded = prof.folded();
    assert!(
        folded.lines().any(|l| l.contains(";main;hot_function ")),
        "{folded}"
    );
    assert!(prof.flamegraph_svg("t").unwrap().contains("hot_function"));
}

/// Thousands of distinct stacks at 10 kHz: the stack map's hash buckets collide (about a
/// third of the samples lost their stack when a taken bucket dropped them), and every
/// sample must still arrive with its stack, as perf keeps every sample.
#[test]
fn a_profile_keeps_every_stack_when_the_stack_table_collides() {
    let (_g, bin) = setup!();
    let opts = TraceOptions {
        target: Target::Command(vec![
            bin.display().to_string(),
            "stacks".into(),
            "1.5".into(),
        ]),
        probes: Probes {
            profile_hz: Some(10_000),
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    let out = trace(&opts).expect("trace");
    let lost: Vec<_> = out
        .report
        .lost
        .iter()
        .filter(|l| l.what.contains("stack"))
        .collect();
    assert!(lost.is_empty(), "{lost:#?}");
    let prof = out.profile.expect("profile");
    let total = prof.total();
    assert!(total > 5_000, "{total} samples");
    // Distinct call paths through the 12 random branches: far more than the collisions
    // of a 16,384-bucket table let through whole.
    let chains: std::collections::HashSet<&Vec<String>> = prof
        .samples
        .iter()
        .filter(|s| s.frames.iter().any(|f| f == "leaf"))
        .map(|s| &s.frames)
        .collect();
    assert!(chains.len() > 2_000, "{} distinct stacks", chains.len());
    assert!(
        prof.missing_user_stacks * 100 < total,
        "{} of {total} samples without a user stack",
        prof.missing_user_stacks
    );
    let hot = prof.hot_functions(3);
    assert_eq!(hot[0].name, "leaf", "{hot:#?}");
    assert!(hot[0].self_pct > 85.0, "{hot:#?}");
}

#[test]
fn missing_symbol_and_pid_are_bad_input() {
    let (_g, bin) = setup!();
    let opts = TraceOptions {
        target: Target::Command(vec![bin.display().to_string(), "spin".into(), "0.1".into()]),
        probes: Probes {
            functions: vec!["no_such_function_xyz".parse().unwrap()],
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    let e = trace(&opts).unwrap_err();
    assert!(matches!(e, TraceError::SymbolNotFound { .. }), "{e}");
    assert_ne!(e.kind(), hpcscope_core::ErrorKind::Environment);
    let opts = TraceOptions {
        target: Target::Pid(u32::MAX - 7),
        probes: Probes {
            syscalls: true,
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    assert!(matches!(
        trace(&opts).unwrap_err(),
        TraceError::NoSuchProcess(_)
    ));
}

#[test]
fn pid_that_exits_mid_trace_keeps_its_data() {
    let (_g, bin) = setup!();
    let mut child = Command::new(&bin).args(["spin", "3.0"]).spawn().unwrap();
    let opts = TraceOptions {
        target: Target::Pid(child.id()),
        probes: Probes {
            syscalls: true,
            sched: true,
            ..Probes::default()
        },
        duration: Some(std::time::Duration::from_secs(20)),
        quiet: false,
    };
    let r = trace(&opts).expect("trace").report;
    child.wait().unwrap();
    assert!(
        r.duration_s < 10.0,
        "stopped when the process exited: {}",
        r.duration_s
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("exited during the trace")),
        "{:?}",
        r.notes
    );
    let p = r
        .processes
        .iter()
        .find(|p| p.pid == child.id())
        .expect("process kept");
    assert!(p.on_cpu_ns > 10_000_000, "{p:?}");
}

/// A process blocked in a system call when the trace attaches: the call is counted when it
/// returns, as strace counts the call it finds a process in, but not timed, and the report
/// says so. (Before, it was lost: its start was never seen.)
#[test]
fn a_call_in_flight_when_the_trace_attaches_is_counted_untimed() {
    let (_g, _bin) = setup!();
    let mut child = Command::new("sleep").arg("3").spawn().unwrap();
    // Asleep in clock_nanosleep before the probes attach.
    std::thread::sleep(Duration::from_millis(300));
    let opts = TraceOptions {
        target: Target::Pid(child.id()),
        probes: Probes {
            syscalls: true,
            ..Probes::default()
        },
        duration: Some(Duration::from_secs(20)),
        quiet: false,
    };
    let r = trace(&opts).expect("trace").report;
    child.wait().unwrap();
    let p = r
        .processes
        .iter()
        .find(|p| p.pid == child.id())
        .expect("the process");
    let nap = p
        .syscalls
        .iter()
        .find(|s| s.name == "clock_nanosleep")
        .unwrap_or_else(|| panic!("no clock_nanosleep: {:?}", p.syscalls));
    assert_eq!((nap.count, nap.untimed), (1, 1), "{nap:?}");
    assert_eq!(nap.total_ns, 0, "{nap:?}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("in flight when the trace attached")),
        "{:?}",
        r.notes
    );
}

#[test]
fn launched_command_that_does_not_exist() {
    let (_g, _bin) = setup!();
    let opts = TraceOptions {
        target: Target::Command(vec!["/nonexistent/program-xyz".into()]),
        probes: Probes {
            syscalls: true,
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    assert!(matches!(
        trace(&opts).unwrap_err(),
        TraceError::Spawn { .. }
    ));
}

#[test]
fn ctrl_c_detaches_and_keeps_the_data() {
    let (_g, bin) = setup!();
    let opts = TraceOptions {
        target: Target::Command(vec![bin.display().to_string(), "spin".into(), "30".into()]),
        probes: Probes {
            syscalls: true,
            sched: true,
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    // What the SIGINT handler does, from another thread once the trace runs.
    let stopper = std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        hpcscope_trace::STOP.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let r = trace(&opts).expect("trace").report;
    stopper.join().unwrap();
    assert!(r.partial);
    assert!(r.duration_s < 15.0, "{}", r.duration_s);
    assert!(
        r.notes.iter().any(|n| n.contains("Ctrl-C")),
        "{:?}",
        r.notes
    );
    let p = r
        .processes
        .iter()
        .find(|p| p.comm == "hpcscope-testee")
        .expect("data kept");
    assert!(p.on_cpu_ns > 0 && !p.syscalls.is_empty(), "{p:?}");
}

#[test]
fn without_privileges_the_error_is_an_environment_limit() {
    if skip_reason().is_some() {
        println!("skipping: needs root to drop privileges from");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Credentials are per thread in the kernel: drop them in a throwaway thread only.
    let e = std::thread::spawn(|| {
        // SAFETY: the raw syscall changes only this thread's ids (and thus its capabilities).
        let r = unsafe { libc::syscall(libc::SYS_setresuid, 65534, 65534, 65534) };
        assert_eq!(r, 0);
        let opts = TraceOptions {
            target: Target::Command(vec!["true".into()]),
            probes: Probes {
                syscalls: true,
                ..Probes::default()
            },
            duration: None,
            quiet: false,
        };
        trace(&opts).unwrap_err()
    })
    .join()
    .unwrap();
    assert!(matches!(e, TraceError::NotPermitted { .. }), "{e}");
    assert_eq!(e.kind(), hpcscope_core::ErrorKind::Environment);
    assert!(e.to_string().contains("CAP_BPF"));
}

#[test]
fn doctor_reports_this_machine() {
    let d = hpcscope_trace::doctor::run();
    assert!(d.checks.len() >= 10);
    for name in [
        "privileges",
        "kernel BTF",
        "kprobes",
        "uprobes",
        "perf software events",
        "perf hardware events",
    ] {
        assert!(d.checks.iter().any(|c| c.name == name), "{name}");
    }
    // Anything missing says what it disables.
    assert!(
        d.checks
            .iter()
            .filter(|c| !c.ok)
            .all(|c| !c.disables.is_empty())
    );
    if skip_reason().is_none() {
        assert!(d.can_trace(), "{d:#?}");
    }
}

/// Moves `child` into a new cgroup, waits `settle`, traces the cgroup's scheduling for
/// `duration`, then kills the child if `kill` and reaps it, and removes the cgroup. Returns
/// the child's pid and the report, or `None` (after a skip line) where cgroups cannot be
/// used.
fn trace_child_in_cgroup(
    name: &str,
    mut child: std::process::Child,
    settle: Duration,
    duration: Duration,
    kill: bool,
) -> Option<(u32, TraceReport)> {
    let root = hpcscope_trace::linux::cgroup2_root();
    let cg = root.join(format!("hpcscope-test-{name}-{}", std::process::id()));
    let created = std::fs::create_dir(&cg).is_ok();
    let moved = created && std::fs::write(cg.join("cgroup.procs"), child.id().to_string()).is_ok();
    let r = moved.then(|| {
        std::thread::sleep(settle);
        trace(&TraceOptions {
            target: Target::Cgroup(cg.clone()),
            probes: Probes {
                sched: true,
                ..Probes::default()
            },
            duration: Some(duration),
            quiet: false,
        })
    });
    if kill || !moved {
        let _ = child.kill();
    }
    child.wait().unwrap();
    let _ = std::fs::remove_dir(&cg);
    if !created {
        println!("skipping: cannot create a cgroup under {}", root.display());
    } else if !moved {
        println!("skipping: cannot move a process into {}", cg.display());
    }
    Some((child.id(), r?.expect("trace").report))
}

#[test]
fn a_cgroup_is_traced_as_a_whole() {
    let (_g, bin) = setup!();
    let child = Command::new(&bin).args(["spin", "2.0"]).spawn().unwrap();
    let Some((pid, r)) = trace_child_in_cgroup(
        "spin",
        child,
        Duration::ZERO,
        Duration::from_millis(700),
        false,
    ) else {
        return;
    };
    assert!(r.partial, "stopped by the duration");
    let pids: Vec<u32> = r.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids, [pid], "only the cgroup's process: {r:#?}");
    assert!(r.processes[0].on_cpu_ns > 0);
}

#[test]
fn a_cgroup_process_asleep_the_whole_trace_is_reported_off_cpu() {
    let (_g, _bin) = setup!();
    // Asleep from before the trace to after it: no scheduler event of its own in between.
    let child = Command::new("sleep").arg("3").spawn().unwrap();
    let Some((pid, r)) = trace_child_in_cgroup(
        "sleep",
        child,
        Duration::from_millis(200),
        Duration::from_millis(500),
        true,
    ) else {
        return;
    };
    let p = r
        .processes
        .iter()
        .find(|p| p.pid == pid)
        .unwrap_or_else(|| panic!("the sleeping process is missing: {r:#?}"));
    assert_eq!(p.comm, "sleep");
    assert_eq!(p.on_cpu_ns, 0, "{p:?}");
    // Off CPU for the whole window (the window is the trace's own duration).
    let window = (r.duration_s * 1e9) as u64;
    assert!(p.off_cpu_ns + 50_000_000 >= window, "{p:?} vs {window} ns");
    assert!(
        r.notes.iter().any(|n| n.contains("no scheduler event")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_kernel_function_without_kprobes_falls_back_to_tracepoints() {
    let (_g, bin) = setup!();
    if std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists() {
        println!("skipping: this kernel has kprobes");
        return;
    }
    let opts = TraceOptions {
        target: Target::Command(vec![
            bin.display().to_string(),
            "counts".into(),
            "10".into(),
            "1".into(),
            "0".into(),
            "0".into(),
        ]),
        probes: Probes {
            syscalls: true,
            kfuncs: vec!["vfs_write".into()],
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    let r = trace(&opts).expect("trace").report;
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("kprobes are not available")),
        "{:?}",
        r.notes
    );
    let p = r
        .processes
        .iter()
        .find(|p| p.comm == "hpcscope-testee")
        .expect("traced");
    assert_eq!(
        p.syscalls
            .iter()
            .find(|s| s.name == "write")
            .map(|s| s.count),
        Some(11)
    );
}

#[test]
fn openmp_shortcut_counts_runtime_calls_exactly() {
    let (_g, _bin) = setup!();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let out = dir.join("hpcscope-omp");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/omp.c");
    let built = Command::new("cc")
        .arg("-O0")
        .arg("-fopenmp")
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status();
    if !built.map(|s| s.success()).unwrap_or(false) {
        println!("skipping: cannot build an OpenMP program (cc -fopenmp, libgomp)");
        return;
    }
    let n = 7u64;
    let opts = TraceOptions {
        target: Target::Command(vec![
            "sh".into(),
            "-c".into(),
            format!("OMP_NUM_THREADS=2 exec {} {n} >/dev/null", out.display()),
        ]),
        probes: Probes {
            openmp: true,
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    let r = trace(&opts).expect("trace").report;
    let p = r
        .processes
        .iter()
        .find(|p| p.comm == "hpcscope-omp")
        .unwrap_or_else(|| panic!("{r:#?}"));
    let count = |s: &str| {
        p.functions
            .iter()
            .find(|f| f.symbol == s)
            .map(|f| f.count)
            .unwrap_or(0)
    };
    // Each of the 2 threads: n explicit barriers + the implicit one ending `single`.
    assert_eq!(count("GOMP_barrier"), 2 * (n + 1), "{:#?}", p.functions);
    assert_eq!(count("GOMP_single_start"), 2);
    // GOMP_parallel returns after the region: one call, at least as long as the barriers.
    assert_eq!(count("GOMP_parallel"), 1);
}

#[test]
fn timeline_has_on_cpu_slices_and_function_calls() {
    let (_g, bin) = setup!();
    let opts = TraceOptions {
        target: Target::Command(vec![
            bin.display().to_string(),
            "counts".into(),
            "10".into(),
            "1".into(),
            "2".into(),
            "3".into(),
        ]),
        probes: Probes {
            sched: true,
            timeline: true,
            functions: vec!["hs_work".parse().unwrap()],
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    let r = trace(&opts).expect("trace").report;
    let calls = r.timeline.iter().filter(|e| e.name == "hs_work").count();
    assert_eq!(calls, 3, "{:#?}", r.timeline);
    assert!(
        r.timeline
            .iter()
            .any(|e| e.name == "on-cpu" && e.dur_ns > 0)
    );
    let v = r.chrome_trace();
    let ev = v["traceEvents"].as_array().unwrap();
    assert!(ev.iter().any(|e| e["ph"] == "X" && e["name"] == "hs_work"));
    assert!(
        ev.iter()
            .any(|e| e["ph"] == "M" && e["name"] == "thread_name")
    );
}

/// The syscall table's rows for `name` as (count, errors, p99_us, max_us).
fn table_latencies(r: &TraceReport) -> Vec<(String, f64, f64, f64)> {
    let tables = r.tables();
    let sc = tables
        .iter()
        .find(|t| t.title == "syscall")
        .expect("a syscall table");
    let col = |h: &str| sc.headers.iter().position(|x| x == h).unwrap();
    let (name, p99, max, mean) = (col("syscall"), col("p99_us"), col("max_us"), col("mean_us"));
    sc.rows
        .iter()
        .map(|row| {
            let f = |i: usize| row[i].parse::<f64>().unwrap_or_else(|_| panic!("{row:?}"));
            (row[name].clone(), f(p99), f(max), f(mean))
        })
        .collect()
}

#[test]
fn a_program_found_on_path_is_executed_once_and_p99_stays_within_max() {
    let (_g, _bin) = setup!();
    // `true` by name: the launcher finds it on PATH itself, so the only execve the probes
    // see is the one that runs it (strace -f -c reports one; the launcher's own search of
    // the PATH directories used to add one failed execve per directory before it).
    let opts = TraceOptions {
        target: Target::Command(vec!["true".into()]),
        probes: Probes {
            syscalls: true,
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    let r = trace(&opts).expect("trace").report;
    assert_eq!(r.processes.len(), 1, "{r:#?}");
    let execve = r.processes[0]
        .syscalls
        .iter()
        .find(|s| s.name == "execve")
        .expect("execve");
    assert_eq!((execve.count, execve.errors), (1, 0), "{execve:?}");
    assert_eq!(r.command_status(), Some(0));
    // Every row: p99 between the smallest and the largest call (a log2 bucket's upper
    // bound is no observed latency), mean no larger than max.
    for (name, p99, max, mean) in table_latencies(&r) {
        assert!(p99 <= max, "{name}: p99 {p99} us above max {max} us");
        assert!(
            mean <= max + 0.01,
            "{name}: mean {mean} us above max {max} us"
        );
    }
}

#[test]
fn the_command_exit_status_is_kept() {
    let (_g, _bin) = setup!();
    let run = |script: &str| {
        let opts = TraceOptions {
            target: Target::Command(vec!["sh".into(), "-c".into(), script.into()]),
            probes: Probes {
                syscalls: true,
                ..Probes::default()
            },
            duration: None,
            quiet: false,
        };
        trace(&opts).expect("trace").report
    };
    let r = run("exit 7");
    assert_eq!((r.exit_code, r.command_status()), (Some(7), Some(7)));
    // Killed by a signal: 128 + its number, as a shell reports it.
    let r = run("kill -KILL $$");
    assert_eq!((r.exit_signal, r.command_status()), (Some(9), Some(137)));
}

#[test]
fn a_missing_program_is_named_once_with_the_fix() {
    let (_g, _bin) = setup!();
    let opts = TraceOptions {
        target: Target::Command(vec!["hpcscope-no-such-command-xyz".into()]),
        probes: Probes {
            syscalls: true,
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    let e = trace(&opts).unwrap_err();
    assert!(matches!(e, TraceError::Spawn { .. }), "{e:?}");
    let m = e.to_string();
    assert!(
        m.starts_with("cannot run `hpcscope-no-such-command-xyz`: no such program in PATH"),
        "{m}"
    );
    assert!(m.contains("give its path"), "{m}");
    // No cause chained under it (a caller printing the chain would repeat the OS error).
    assert!(std::error::Error::source(&e).is_none(), "{e:?}");
    assert!(!m.contains("pid "), "{m}");
}

#[test]
fn files_follow_dup2_and_inherited_descriptors() {
    let (_g, _bin) = setup!();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("dd.out");
    let log = dir.path().join("log.txt");
    // dd opens its output on fd 3 and dup2()s it onto fd 1 (and /dev/zero onto 0); the
    // inner shell inherits the outer one's redirected stdout at its fork.
    let script = format!(
        "dd if=/dev/zero of={} bs=4096 count=16 status=none; exec >{}; sh -c 'echo hello; echo world'",
        data.display(),
        log.display()
    );
    let opts = TraceOptions {
        target: Target::Command(vec!["sh".into(), "-c".into(), script]),
        probes: Probes {
            files: true,
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    };
    let r = trace(&opts).expect("trace").report;
    let files: Vec<(u32, &hpcscope_trace::report::FileStat)> = r
        .processes
        .iter()
        .flat_map(|p| p.files.iter().map(move |f| (p.pid, f)))
        .collect();
    let by_path = |p: &std::path::Path| {
        files
            .iter()
            .filter(|(_, f)| f.path.as_deref() == Some(p.to_str().unwrap()))
            .map(|(_, f)| (f.fd, f.read_bytes, f.write_bytes))
            .collect::<Vec<_>>()
    };
    assert_eq!(by_path(&data), [(1, 0, 16 * 4096)], "{files:#?}");
    assert_eq!(
        by_path(std::path::Path::new("/dev/zero")),
        [(0, 16 * 4096, 0)],
        "{files:#?}"
    );
    assert_eq!(by_path(&log), [(1, 0, 12)], "{files:#?}");
    assert!(
        files.iter().all(|(_, f)| f.path.is_some()),
        "every descriptor has a path: {files:#?}"
    );
}

#[test]
fn forked_processes_get_their_own_cpu_time_and_all_their_syscalls() {
    let (_g, _bin) = setup!();
    // 2,000 short processes while two busy loops keep both CPUs loaded: more distinct
    // (process, system call) pairs than the old fixed table held, and new processes that
    // the kernel starts on one CPU and moves to another before any sched_switch shows
    // them (their first slice used to be counted from the start of the trace).
    let n = 2000;
    let script = format!(
        "(while :; do :; done) & a=$!; (while :; do :; done) & b=$!; \
         i=0; while [ $i -lt {n} ]; do /bin/true; i=$((i+1)); done; kill $a $b"
    );
    let opts = TraceOptions {
        target: Target::Command(vec!["sh".into(), "-c".into(), script]),
        probes: Probes {
            syscalls: true,
            sched: true,
            timeline: true,
            timeline_keep: vec!["on-cpu".into()],
            ..Probes::default()
        },
        duration: Some(Duration::from_secs(120)),
        quiet: false,
    };
    let r = trace(&opts).expect("trace").report;
    assert!(r.lost.is_empty(), "{:#?}", r.lost);
    assert!(!r.partial, "{:?}", r.notes);
    let trues: Vec<_> = r.processes.iter().filter(|p| p.comm == "true").collect();
    assert_eq!(trues.len(), n, "one row per process");
    // Every one: its exec and its system calls, none lost.
    for p in &trues {
        let execve = p.syscalls.iter().find(|s| s.name == "execve");
        assert_eq!(execve.map(|s| (s.count, s.errors)), Some((1, 0)), "{p:#?}");
        assert!(p.syscalls.len() >= 10, "{p:#?}");
    }
    // /bin/true runs for about a millisecond: none gets the trace's age as CPU time.
    let worst = trues.iter().max_by_key(|p| p.on_cpu_ns).unwrap();
    assert!(
        worst.on_cpu_ns < 50_000_000,
        "pid {} on a CPU for {} ms",
        worst.pid,
        worst.on_cpu_ns / 1_000_000
    );
    // The timeline and the summary agree for every thread: the sum of its on-CPU slices is
    // its on-CPU time, the slices still open when the trace ended included (the two busy
    // loops are killed last, and may leave the CPU after the trace's last look).
    let mut slices: std::collections::HashMap<u32, u64> = Default::default();
    for e in r.timeline.iter().filter(|e| e.name == "on-cpu") {
        *slices.entry(e.tid).or_default() += e.dur_ns;
    }
    for t in r.processes.iter().flat_map(|p| &p.threads) {
        assert_eq!(
            slices.get(&t.tid).copied().unwrap_or(0),
            t.on_cpu_ns,
            "{t:?}"
        );
    }
}

#[test]
fn a_thread_still_on_a_cpu_when_the_trace_ends_has_its_slice_in_the_timeline() {
    let (_g, _bin) = setup!();
    // The launched shell exits after 0.3 s and leaves a busy loop behind (followed, as a
    // child): the trace ends while the loop is on a CPU, so its last slice is still open.
    let opts = TraceOptions {
        target: Target::Command(vec![
            "sh".into(),
            "-c".into(),
            "timeout 5 sh -c 'while :; do :; done' & sleep 0.3".into(),
        ]),
        probes: Probes {
            sched: true,
            timeline: true,
            timeline_keep: vec!["on-cpu".into()],
            ..Probes::default()
        },
        duration: Some(Duration::from_secs(30)),
        quiet: true,
    };
    let r = trace(&opts).expect("trace").report;
    let running: Vec<_> = r
        .processes
        .iter()
        .flat_map(|p| &p.threads)
        .filter(|t| !t.exited)
        .collect();
    for t in &running {
        // SAFETY: kill on a pid of our own child's child; at worst it is gone already.
        unsafe { libc::kill(t.tid as i32, libc::SIGKILL) };
    }
    let looping = running
        .iter()
        .find(|t| t.on_cpu_ns > 100_000_000)
        .unwrap_or_else(|| panic!("the busy loop still running: {:#?}", r.processes));
    let in_slices: u64 = r
        .timeline
        .iter()
        .filter(|e| e.name == "on-cpu" && e.tid == looping.tid)
        .map(|e| e.dur_ns)
        .sum();
    assert_eq!(in_slices, looping.on_cpu_ns, "{looping:?}");
    // The open slice ends at the end of the trace.
    let end_ns = (r.duration_s * 1e9) as u64;
    let last = r
        .timeline
        .iter()
        .filter(|e| e.tid == looping.tid)
        .map(|e| e.start_ns + e.dur_ns)
        .max()
        .unwrap();
    assert!(
        last + 50_000_000 > end_ns,
        "last slice ends at {last} ns, the trace at {end_ns} ns"
    );
}

/// The kernel's run time of a thread so far (/proc/<tid>/schedstat), ns.
fn schedstat(tid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{tid}/schedstat"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn an_attached_process_gets_the_cpu_time_the_kernel_counted() {
    let (_g, bin) = setup!();
    let mut child = Command::new(&bin).args(["spin", "30"]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let pid = child.id();
    let before = schedstat(pid);
    let r = trace(&TraceOptions {
        target: Target::Pid(pid),
        probes: Probes {
            sched: true,
            ..Probes::default()
        },
        duration: Some(Duration::from_millis(1500)),
        quiet: false,
    })
    .expect("trace")
    .report;
    let after = schedstat(pid);
    let _ = child.kill();
    child.wait().unwrap();
    let p = r.processes.iter().find(|p| p.pid == pid).expect("traced");
    // The window lies inside [before, after]: at most that much, and, as the process spins
    // throughout, most of it (the rest is the set-up and tear-down around the window).
    let outer = after - before;
    assert!(p.on_cpu_ns <= outer, "{} > {outer}", p.on_cpu_ns);
    assert!(p.on_cpu_ns >= outer / 2, "{} ns of {outer} ns", p.on_cpu_ns);
}

/// `quiet` sends a launched command's standard output to /dev/null (so `analyze` keeps its
/// own output clean) and leaves it alone otherwise.
#[test]
fn quiet_sends_the_commands_stdout_to_dev_null() {
    let (_g, _bin) = setup!();
    let ours = std::fs::read_link("/proc/self/fd/1").unwrap();
    if ours == std::path::Path::new("/dev/null") {
        println!("skipping: this test's own stdout is /dev/null");
        return;
    }
    for quiet in [true, false] {
        let out_file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fd1-{quiet}.out"));
        let _ = std::fs::remove_file(&out_file);
        let cmd = vec![
            "sh".to_string(),
            "-c".to_string(),
            // $$ is the shell: its fd 1 is what the launch gave it.
            format!(
                "x=$(readlink /proc/$$/fd/1); echo \"$x\" > {}",
                out_file.display()
            ),
        ];
        let r = trace(&TraceOptions {
            target: Target::Command(cmd),
            probes: Probes {
                syscalls: true,
                ..Probes::default()
            },
            duration: None,
            quiet,
        })
        .expect("trace")
        .report;
        assert_eq!(r.exit_code, Some(0), "{:#?}", r.notes);
        let seen = std::fs::read_to_string(&out_file).unwrap();
        let want = if quiet {
            "/dev/null".into()
        } else {
            ours.display().to_string()
        };
        assert_eq!(seen.trim(), want, "quiet={quiet}");
    }
}
