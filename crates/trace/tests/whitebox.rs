//! USDT probes, rates over time, read/write sizes and the OpenMP thread efficiency on this
//! machine (needs root and BPF; skips with one line otherwise), each against programs
//! whose counts are known: built here from `tests/data` (`<sys/sdt.h>` from Debian's
//! systemtap-sdt-dev for the USDT program), and libstdc++'s own USDT probes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use hpcscope_trace::{Probes, Target, TraceOptions, TraceReport, UsdtSpec, trace};

/// The probes are system-wide; one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn skip_reason() -> Option<String> {
    if !hpcscope_trace::doctor::has_bpf_caps() {
        return Some("not root (no CAP_BPF/CAP_SYS_ADMIN)".into());
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("kernel without BTF".into());
    }
    None
}

/// Builds `sources` (in tests/data) with `compiler` and `flags` into the target's temporary
/// directory as `name`; `None` when that fails.
fn build(compiler: &str, sources: &[&str], flags: &[&str], name: &str) -> Option<PathBuf> {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    Command::new(compiler)
        .args(flags)
        .args(sources.iter().map(|s| data.join(s)))
        .arg("-o")
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        .then_some(out)
}

macro_rules! guard {
    () => {{
        if let Some(why) = skip_reason() {
            println!("skipping: {why}");
            return;
        }
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }};
}

fn run(cmd: Vec<String>, probes: Probes) -> TraceReport {
    trace(&TraceOptions {
        target: Target::Command(cmd),
        probes,
        duration: Some(Duration::from_secs(60)),
        quiet: false,
    })
    .expect("trace")
    .report
}

fn hits(r: &TraceReport, pid_comm: &str, probe: &str) -> (u64, Vec<u64>) {
    let p = r
        .processes
        .iter()
        .find(|p| p.comm == pid_comm)
        .unwrap_or_else(|| panic!("no process {pid_comm}: {r:#?}"));
    match p.usdt.iter().find(|u| u.probe == probe) {
        Some(u) => (u.hits, u.threads.iter().map(|t| t.hits).collect()),
        None => (0, Vec::new()),
    }
}

#[test]
fn usdt_hits_are_exact_per_thread_and_a_semaphore_is_raised() {
    let _g = guard!();
    let Some(bin) = build(
        "cc",
        &["sdt.c", "sdt_tick.c"],
        &["-O1", "-pthread"],
        "hpcscope-sdt",
    ) else {
        println!("skipping: cannot build a program with <sys/sdt.h> (install systemtap-sdt-dev)");
        return;
    };
    // Untraced, nobody raises the semaphore: the guarded probe's code does not run.
    let plain = Command::new(&bin).args(["50", "1"]).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&plain.stdout).trim(),
        "guarded_enabled 0"
    );

    let (n, threads) = (1000u64, 3usize);
    let r = run(
        vec![
            bin.display().to_string(),
            n.to_string(),
            threads.to_string(),
        ],
        Probes {
            usdt: vec![
                "hpctest:tick".parse().unwrap(),
                "hpctest:guarded".parse().unwrap(),
            ],
            timeline: true,
            ..Probes::default()
        },
    );
    assert_eq!(r.exit_code, Some(0), "{r:#?}");
    let (total, per_thread) = hits(&r, "hpcscope-sdt", "hpctest:tick");
    assert_eq!(total, n * threads as u64, "{r:#?}");
    assert_eq!(per_thread, vec![n; threads], "{r:#?}");
    // The kernel raised the semaphore: the program saw it and the probe fired n times.
    let (guarded, gt) = hits(&r, "hpcscope-sdt", "hpctest:guarded");
    assert_eq!(guarded, n);
    assert_eq!(gt.len(), 1);
    let u = &r
        .processes
        .iter()
        .find(|p| p.comm == "hpcscope-sdt")
        .unwrap()
        .usdt;
    assert!(
        u.iter()
            .any(|x| x.probe == "hpctest:guarded" && x.semaphore)
    );
    // Every hit is an instant on the timeline.
    let on_tl = r
        .timeline
        .iter()
        .filter(|e| e.name == "hpctest:tick")
        .count();
    assert_eq!(on_tl as u64, n * threads as u64);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("argument values are not read"))
    );
    // Lowered again once the trace is over: a later run sees it down (the kernel drops it
    // with the last probe; detaching happens in the background, so give it a moment).
    std::thread::sleep(Duration::from_millis(500));
    let after = Command::new(&bin).args(["5", "1"]).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&after.stdout).trim(),
        "guarded_enabled 0"
    );
}

#[test]
fn usdt_in_a_system_library_libstdcxx_throw_and_catch() {
    let _g = guard!();
    let Some(bin) = build("c++", &["throw.cc"], &["-O1"], "hpcscope-throw") else {
        println!("skipping: no C++ compiler");
        return;
    };
    let lib = hpcscope_trace::linux::linked_library(&bin, "libstdc++");
    let Some(lib) = lib.filter(|l| {
        hpcscope_trace::usdt::probes_in(l)
            .is_ok_and(|p| p.iter().any(|x| x.id() == "libstdcxx:throw"))
    }) else {
        println!("skipping: this libstdc++ has no USDT notes");
        return;
    };
    let n = 250u64;
    let r = run(
        vec![bin.display().to_string(), n.to_string()],
        Probes {
            // Found in the library the program loads, with and without naming it.
            usdt: vec![
                "libstdcxx:throw".parse().unwrap(),
                "libstdc++:libstdcxx:catch".parse().unwrap(),
            ],
            ..Probes::default()
        },
    );
    assert_eq!(hits(&r, "hpcscope-throw", "libstdcxx:throw").0, n, "{r:#?}");
    assert_eq!(hits(&r, "hpcscope-throw", "libstdcxx:catch").0, n, "{r:#?}");
    let p = r
        .processes
        .iter()
        .find(|p| p.comm == "hpcscope-throw")
        .unwrap();
    assert_eq!(
        std::fs::canonicalize(&p.usdt[0].binary).unwrap(),
        std::fs::canonicalize(&lib).unwrap()
    );
}

#[test]
fn a_usdt_probe_that_does_not_exist_is_bad_input_listing_what_is_there() {
    let _g = guard!();
    let Some(bin) = build(
        "cc",
        &["sdt.c", "sdt_tick.c"],
        &["-O1", "-pthread"],
        "hpcscope-sdt2",
    ) else {
        println!("skipping: cannot build a program with <sys/sdt.h> (install systemtap-sdt-dev)");
        return;
    };
    let e = trace(&TraceOptions {
        target: Target::Command(vec![bin.display().to_string()]),
        probes: Probes {
            usdt: vec!["hpctest:nope".parse::<UsdtSpec>().unwrap()],
            ..Probes::default()
        },
        duration: None,
        quiet: false,
    })
    .unwrap_err();
    use hpcscope_core::Classify;
    assert_eq!(e.kind(), hpcscope_core::ErrorKind::Input);
    let m = e.to_string();
    assert!(
        m.contains("hpctest:nope not found") && m.contains("hpctest:tick"),
        "{m}"
    );
}

#[test]
fn rates_follow_a_known_schedule_and_sizes_are_exact() {
    let _g = guard!();
    let Some(bin) = build("cc", &["phases.c"], &["-O1"], "hpcscope-phases") else {
        println!("skipping: no C compiler");
        return;
    };
    let (k_max, n, pages, period_ms) = (4u64, 500u64, 300u64, 300u64);
    let r = run(
        vec![
            bin.display().to_string(),
            k_max.to_string(),
            n.to_string(),
            pages.to_string(),
            period_ms.to_string(),
        ],
        Probes {
            syscalls: true,
            sched: true,
            faults: true,
            files: true,
            rate_interval: Some(Duration::from_millis(period_ms)),
            ..Probes::default()
        },
    );
    assert_eq!(r.exit_code, Some(0));
    let s = r.rates.as_ref().expect("rates");
    assert!((s.interval_s - period_ms as f64 / 1e3).abs() < 1e-12);
    let col = |name: &str| s.column(name).unwrap_or_else(|| panic!("{name}: {s:#?}"));
    // The program's own clock starts once it is loaded, which a busy machine can delay by
    // more than half an interval (another test's probes being detached, say): its first
    // burst is in the first or the second interval, the others follow one per interval.
    let j0 = col("write_bytes")
        .counts
        .iter()
        .position(|&b| b == n * 64)
        .unwrap_or_else(|| panic!("no interval with the first burst: {s:#?}"));
    assert!(j0 <= 1, "{s:#?}");
    assert!(s.start_s.len() as u64 >= k_max + j0 as u64, "{s:#?}");
    for k in 0..k_max as usize {
        let (m, j) = ((k as u64 + 1) * n, j0 + k);
        // Every write is the program's (it prints nothing): exact in every interval.
        assert_eq!(col("write_bytes").counts[j], m * 64, "interval {j}: {s:#?}");
        if k == 0 {
            // The loader's own calls and faults share the interval of the first burst (the
            // first or, on a busy machine that loaded the program late, the second).
            continue;
        }
        assert_eq!(col("read_bytes").counts[j], m * 128, "interval {j}: {s:#?}");
        let sc = col("syscalls").counts[j];
        // Its reads and writes, the mmap and the sleep (clock_nanosleep's return may fall
        // in the next interval).
        assert!(
            (2 * m..=2 * m + 4).contains(&sc),
            "interval {j}: {sc} syscalls, {s:#?}"
        );
        let f = col("page_faults").counts[j];
        let want = (k as u64 + 1) * pages;
        assert!(
            (want..=want + 8).contains(&f),
            "interval {j}: {f} faults, {s:#?}"
        );
        assert!(col("context_switches").counts[j] >= 1);
    }
    // The series sum to the totals of the tables.
    let total_sc: u64 = r
        .processes
        .iter()
        .flat_map(|p| &p.syscalls)
        .map(|c| c.count)
        .sum();
    assert_eq!(col("syscalls").counts.iter().sum::<u64>(), total_sc);
    // Sizes: every write 64 bytes, every read of /dev/zero 128.
    let p = r
        .processes
        .iter()
        .find(|p| p.comm == "hpcscope-phase")
        .unwrap_or_else(|| {
            r.processes
                .iter()
                .find(|p| p.comm.starts_with("hpcscope-pha"))
                .expect("the program's process")
        });
    let total = n * k_max * (k_max + 1) / 2;
    let w = p.io_sizes.iter().find(|x| x.op == "write").expect("writes");
    assert_eq!((w.calls, w.bytes), (total, total * 64));
    assert_eq!(w.size_bytes.buckets.len(), 1);
    assert_eq!(
        (w.size_bytes.buckets[0].lo, w.size_bytes.buckets[0].hi),
        (64, 127)
    );
    let rd = p.io_sizes.iter().find(|x| x.op == "read").expect("reads");
    let b128 = rd.size_bytes.buckets.iter().find(|b| b.lo == 128).unwrap();
    // The loader's reads of the libraries' headers are not 128 bytes long.
    assert_eq!(b128.count, total, "{:#?}", rd.size_bytes);
    assert!(r.lost.is_empty(), "{:#?}", r.lost);
}

#[test]
fn openmp_thread_efficiency_matches_the_programs_own_clock() {
    let _g = guard!();
    let Some(bin) = build(
        "cc",
        &["omp_eff.c"],
        &["-O1", "-fopenmp"],
        "hpcscope-ompeff",
    ) else {
        println!("skipping: cannot build an OpenMP program (cc -fopenmp, libgomp)");
        return;
    };
    let own = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hpcscope-ompeff.txt");
    let r = run(
        vec![
            bin.display().to_string(),
            "150".into(),
            own.display().to_string(),
        ],
        Probes {
            openmp: true,
            ..Probes::default()
        },
    );
    // What the program measured itself with omp_get_wtime, in the traced run.
    let text = std::fs::read_to_string(&own).unwrap();
    let v = |k: &str| -> f64 {
        let w: Vec<&str> = text.split_whitespace().collect();
        let i = w.iter().position(|x| *x == k).unwrap();
        w[i + 1].parse().unwrap()
    };
    assert_eq!(r.openmp.len(), 1, "{r:#?}");
    let o = &r.openmp[0];
    assert_eq!(o.forks, 1);
    assert_eq!(o.threads.len(), 2, "{o:#?}");
    let main = o.threads.iter().find(|t| t.master).unwrap();
    let worker = o.threads.iter().find(|t| !t.master).unwrap();
    assert_eq!((main.regions, worker.regions), (1, 1));
    // Each thread's time in the region, and the fork's (the region's wall time), within
    // 2 ms of the program's own clock (the probes' cost is tens of microseconds).
    for (got, want) in [
        (main.region_s, v("region0_s")),
        (worker.region_s, v("region1_s")),
        (main.fork_s, v("wall_s")),
    ] {
        assert!((got - want).abs() < 2e-3, "{got} vs {want}: {o:#?}\n{text}");
    }
    // The runtime is the process's life: the program's own run plus its loading.
    assert!(
        o.runtime_s >= v("total_s") && o.runtime_s < v("total_s") + 0.1,
        "{o:#?}"
    );
    // Eq. 3.7 over the threads, from the program's own figures and the trace's runtime.
    let rt = o.runtime_s;
    let comp_main = rt - v("wall_s") + v("region0_s");
    let want = (comp_main + v("region1_s")) / (2.0 * rt);
    let e = o.efficiency.as_ref().unwrap();
    assert!(
        (e.parallel_efficiency - want).abs() < 0.01,
        "{e:#?} vs {want}"
    );
    // About 4/6 by construction (the team's start-up and the loader lower it a little).
    assert!((0.5..0.7).contains(&e.parallel_efficiency), "{e:#?}");
    assert!((e.mpi_efficiency - 1.0).abs() < 1e-12);
    assert!((e.openmp_efficiency - e.parallel_efficiency).abs() < 1e-12); // eq. 3.16
}
