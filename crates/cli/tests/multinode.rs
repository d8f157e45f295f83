//! Parallel jobs end to end: real Open MPI jobs of 4 ranks on this node (oversubscribed; as
//! root with `--allow-run-as-root`, as `hpcscope bench mpi` does), each rank under
//! `hpcscope trace --run-dir`, then `hpcscope merge`.
//!
//! The main program (`tests/data/imbalance.c`, built with mpicc) has a known imbalance: rank r
//! spends ITERS x (r + 1) x UNIT ms outside MPI (sleeping, so that the figure does not depend
//! on how many ranks share a CPU) and makes exactly 2 x ITERS + 1 MPI calls. The tests check
//! the merged per-rank figures and POP efficiencies against that, then break jobs on
//! purpose: a rank killed by SIGKILL, a rank whose hpcscope is killed before it writes, a
//! rank that never ran under hpcscope, two jobs in one directory, one job id used twice, a
//! truncated file, and no BPF permission.
//!
//! Tests that need mpicc/mpirun print `skipping: <reason>` without them (and fail under
//! CI=true, which installs them); those that trace need root and BPF.

mod common;
use common::is_root;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;

/// One MPI job at a time: 4 ranks already oversubscribe the 2 CPUs of a CI machine.
static SERIAL: Mutex<()> = Mutex::new(());

const HPCSCOPE: &str = env!("CARGO_BIN_EXE_hpcscope");

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The test program `tests/data/NAME.c`, or `None` (with a `skipping:` line) without MPI.
fn program(name: &str) -> Option<PathBuf> {
    match common::mpi_test_program(name) {
        Ok(p) => Some(p),
        Err(why) => {
            assert!(!ci(), "{why}");
            println!("skipping: {why}");
            None
        }
    }
}

/// Whether eBPF tracing can run here (root and a kernel with BTF); prints why not.
fn bpf_or_skip() -> bool {
    let why = if !is_root() {
        Some("not root: tracing needs CAP_BPF and CAP_PERFMON")
    } else if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        Some("the kernel has no BTF")
    } else {
        None
    };
    if let Some(w) = why {
        assert!(!ci(), "{w}, and CI runs as root on a kernel with BTF");
        println!("skipping: {w}");
        return false;
    }
    true
}

/// `mpirun -np N [flags] ARGS`, stopped after 3 minutes whatever happens.
fn mpirun(np: u32, args: &[&str]) -> Output {
    let mut c = Command::new("timeout");
    c.args([
        "-k",
        "5",
        "180",
        "mpirun",
        "-np",
        &np.to_string(),
        "--oversubscribe",
    ]);
    if is_root() {
        c.arg("--allow-run-as-root");
    }
    // Open MPI sends SIGKILL 1 s after SIGTERM when it aborts a job; on a loaded 2-core
    // machine the ranks' hpcscope may need longer to write what they measured (a rank was
    // seen `lost` so). Users' launchers give more (Slurm's KillWait: 30 s).
    c.env("OMPI_MCA_odls_base_sigkill_timeout", "10");
    c.args(args)
        .stdin(Stdio::null())
        .output()
        .expect("cannot run mpirun")
}

fn hpcscope(args: &[&str]) -> Output {
    Command::new(HPCSCOPE)
        .args(args)
        .env_remove("HPCSCOPE_JOB_ID")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `hpcscope merge ARGS --format json`: (exit code, the JSON).
fn merge_json(args: &[&str]) -> (i32, serde_json::Value) {
    let mut a = vec!["merge"];
    a.extend_from_slice(args);
    a.extend(["--format", "json"]);
    let o = hpcscope(&a);
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    (o.status.code().unwrap_or(-1), v)
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// What a test of a job needs: the program, the lock (one job at a time), a temporary
/// directory and the run directory in it.
struct Setup {
    prog: PathBuf,
    _serial: std::sync::MutexGuard<'static, ()>,
    dir: tempfile::TempDir,
    runs: PathBuf,
}

/// The setup, or `None` (with a `skipping:` line) without MPI, or without BPF when
/// `trace` is true.
fn setup(trace: bool) -> Option<Setup> {
    setup_with("imbalance", trace)
}

/// [`setup`] with the test program `tests/data/NAME.c`.
fn setup_with(name: &str, trace: bool) -> Option<Setup> {
    let prog = program(name)?;
    if trace && !bpf_or_skip() {
        return None;
    }
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    Some(Setup {
        prog,
        _serial: serial,
        dir,
        runs,
    })
}

/// `mpirun -np N hpcscope COMMAND --run-dir RUNS -- PROG ARGS`.
fn ranked(np: u32, command: &[&str], runs: &Path, prog: &Path, args: &[&str]) -> Output {
    let mut a = vec![HPCSCOPE];
    a.extend_from_slice(command);
    a.extend(["--run-dir", s(runs), "--", s(prog)]);
    a.extend_from_slice(args);
    mpirun(np, &a)
}

/// `mpirun -np N hpcscope trace --run-dir RUNS -- PROG ARGS`.
fn traced(np: u32, runs: &Path, prog: &Path, args: &[&str]) -> Output {
    ranked(np, &["trace"], runs, prog, args)
}

/// Each rank's own account of a run of `imbalance.c`, by rank: (seconds in its work sleeps,
/// seconds from MPI_Init's return to MPI_Finalize's call).
fn own_account(o: &Output, size: usize) -> Vec<(f64, f64)> {
    let mut own = vec![None; size];
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if let ["imbalance:", "rank", r, "work", work, "region", region] = w[..] {
            own[r.parse::<usize>().unwrap()] =
                Some((work.parse().unwrap(), region.parse().unwrap()));
        }
    }
    own.into_iter()
        .enumerate()
        .map(|(r, v)| v.unwrap_or_else(|| panic!("rank {r} printed no account: {}", text(o))))
        .collect()
}

/// A rank of a merged job: (status, comp_s, mpi_s, mpi_calls).
type Rank = (String, Option<f64>, Option<f64>, Option<u64>);

/// The job's ranks.
fn ranks(m: &serde_json::Value) -> Vec<Rank> {
    m["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap().to_string(),
                r["comp_s"].as_f64(),
                r["mpi_s"].as_f64(),
                r["mpi_calls"].as_u64(),
            )
        })
        .collect()
}

/// The row of MPI function `name` in a merged job.
fn mpi_function(m: &serde_json::Value, name: &str) -> serde_json::Value {
    m["mpi_functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == name)
        .unwrap_or_else(|| panic!("{name} missing: {m:#}"))
        .clone()
}

/// 4 ranks, 10 iterations of 10 ms units: rank r computes 0.1 x (r + 1) s. The merge finds
/// those times, 21 MPI calls per rank, and load balance (0.1+0.2+0.3+0.4)/4/0.4 = 0.625, as
/// far as the machine's load lets the sleeps keep to time: the times and efficiencies are
/// held to the program's own clock, so that a loaded machine does not fail the test.
#[test]
fn four_ranks_give_the_built_in_imbalance() {
    let Some(t) = setup(true) else {
        return;
    };
    let Setup {
        prog, dir, runs, ..
    } = &t;
    let o = traced(4, runs, prog, &["10", "10"]);
    assert!(o.status.success(), "{}", text(&o));
    let svg = dir.path().join("imbalance.svg");
    let html = dir.path().join("job.html");
    let (code, m) = merge_json(&[s(runs), "--svg", s(&svg), "--html", s(&html)]);
    assert_eq!(code, 0, "{m:#}");
    assert_eq!(m["size"], 4);
    assert_eq!(m["ranks_with_data"], 4);
    assert_eq!(m["complete"], true);
    assert_eq!(m["launcher"], "open-mpi");
    assert!(m["problems"].as_array().unwrap().is_empty(), "{m:#}");
    let rows = ranks(&m);
    // The program's own clock: what the sleeps took on this machine under its load (they
    // never end early, and overshoot by what the scheduler adds), and each rank's time from
    // MPI_Init to MPI_Finalize. The merged times must be those, whatever the load.
    let own = own_account(&o, 4);
    let near = |got: f64, want: f64| (got - want).abs() <= 0.01 + 0.02 * want;
    for (r, (status, comp, mpi, calls)) in rows.iter().enumerate() {
        assert_eq!(status, "ok");
        let built = 0.1 * (r + 1) as f64;
        let (work, region) = own[r];
        assert!(
            work >= built,
            "rank {r}: its sleeps took {work} s, built {built} s"
        );
        let (comp, mpi) = (comp.unwrap(), mpi.unwrap());
        println!(
            "rank {r}: computation {comp:.4} s (its own clock {work:.4} s, built {built:.1} s), MPI {mpi:.4} s (own {:.4} s)",
            region - work
        );
        assert!(
            comp >= work && near(comp, work),
            "rank {r}: computation {comp} s, its sleeps {work} s"
        );
        assert!(
            mpi >= 0.0 && near(mpi, region - work),
            "rank {r}: MPI {mpi} s, its own clock outside the sleeps {} s",
            region - work
        );
        // 10 x (MPI_Allreduce + MPI_Sendrecv) + MPI_Barrier, exactly.
        assert_eq!(*calls, Some(21), "rank {r}");
    }
    // Rank 0 waits for rank 3 in every iteration: about 0.3 s in MPI, rank 3 almost none.
    assert!(
        rows[0].2.unwrap() > rows[3].2.unwrap() + 0.5 * (own[3].0 - own[0].0),
        "MPI time of rank 0 {:?}, rank 3 {:?}",
        rows[0].2,
        rows[3].2
    );
    let by_name = |n: &str| mpi_function(&m, n);
    for (n, per_rank) in [
        ("MPI_Allreduce", 10),
        ("MPI_Sendrecv", 10),
        ("MPI_Barrier", 1),
        ("MPI_Init", 1),
        ("MPI_Finalize", 1),
    ] {
        let x = by_name(n);
        assert_eq!(
            (
                x["ranks"].as_u64(),
                x["calls_min"].as_u64(),
                x["calls_max"].as_u64()
            ),
            (Some(4), Some(per_rank), Some(per_rank)),
            "{n}: {x}"
        );
    }
    let pop = &m["pop"];
    let (pe, lb, ce) = (
        f(&pop["parallel_efficiency"]),
        f(&pop["load_balance"]),
        f(&pop["communication_efficiency"]),
    );
    // The same efficiencies from the program's own clock (eqs. 3.8, 3.9).
    let works: Vec<f64> = own.iter().map(|o| o.0).collect();
    let longest = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let own_lb = works.iter().sum::<f64>() / 4.0 / longest(&works);
    let own_runtime = longest(&own.iter().map(|o| o.1).collect::<Vec<_>>());
    let own_ce = longest(&works) / own_runtime;
    println!(
        "measured: parallel efficiency {pe:.4}, load balance {lb:.4} (its own clock {own_lb:.4}, built 0.625), communication efficiency {ce:.4} (own {own_ce:.4})"
    );
    assert!(
        (lb - own_lb).abs() < 0.02,
        "load balance {lb}, own {own_lb}"
    );
    assert!(
        (ce - own_ce).abs() < 0.03 && ce <= 1.0 + 1e-9,
        "communication efficiency {ce}, own {own_ce}"
    );
    assert!((pe - lb * ce).abs() < 1e-9, "eq. 3.7 = 3.8 x 3.9");
    let runtime = f(&m["runtime_s"]);
    assert!(
        runtime >= 0.4 && near(runtime, own_runtime),
        "runtime {runtime} s, the longest rank's own {own_runtime} s"
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("Time per rank") && svg.contains("mean computation"));
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("load balance") && html.contains("<svg") && !html.contains("<script"));

    // The other formats, and -o.
    let out = dir.path().join("job.md");
    let o = hpcscope(&["merge", s(runs), "--format", "md", "-o", s(&out)]);
    assert!(o.status.success(), "{}", text(&o));
    let md = std::fs::read_to_string(&out).unwrap();
    assert!(md.contains("| rank | node | status |"), "{md}");
    let o = hpcscope(&["merge", s(runs), "--format", "csv"]);
    let csv = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(csv.lines().count(), 5, "{csv}");
    let o = hpcscope(&["merge", s(runs)]);
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(t.contains("load balance") && t.contains("per node:"), "{t}");

    // A reference run with 2 ranks (comp 0.1 + 0.2 s): computation scaling
    // sum(comp_ref) / sum(comp) = 0.3 / 1.0 (eq. 3.10), global efficiency 0.3 x PE.
    let refdir = dir.path().join("ref");
    let o = traced(2, &refdir, prog, &["10", "10"]);
    assert!(o.status.success(), "{}", text(&o));
    let own_ref = own_account(&o, 2);
    let own_cs = own_ref.iter().map(|o| o.0).sum::<f64>() / works.iter().sum::<f64>();
    let (code, m) = merge_json(&[s(runs), "--reference", s(&refdir)]);
    assert_eq!(code, 0);
    let cs = f(&m["pop"]["computation_scaling"]);
    let ge = f(&m["pop"]["global_efficiency"]);
    println!(
        "measured: computation scaling {cs:.4} (its own clock {own_cs:.4}, built 0.3), global efficiency {ge:.4}"
    );
    assert!(
        (cs - own_cs).abs() < 0.03,
        "computation scaling {cs}, own {own_cs}"
    );
    assert!((ge - cs * f(&m["pop"]["parallel_efficiency"])).abs() < 1e-9);
    assert_eq!(m["reference"]["ranks"], 2);
}

/// Messages of known sizes (`tests/data/messages.c`, 4 ranks): rank r sends 10 messages
/// of (r + 1) x 1000 doubles (MPI_Send) and receives 10 of (p + 1) x 1000 from rank
/// p = r - 1 (MPI_Recv), makes one MPI_Allreduce of 7 ints, one MPI_Bcast of 5 four-byte
/// reals (a datatype object of libmpi's, where the others are the program's copies) and one
/// MPI_Bcast of 2 elements of a derived datatype, whose size the probes cannot know. The
/// bytes per rank, per function and in all are exact; the derived datatype's call is
/// counted with its size unknown.
#[test]
fn message_sizes_per_rank_are_exact() {
    let Some(t) = setup_with("messages", true) else {
        return;
    };
    let Setup { prog, runs, .. } = &t;
    let o = traced(4, runs, prog, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let (code, m) = merge_json(&[s(runs)]);
    assert_eq!(code, 0, "{m:#}");
    let n = 4u64;
    // Per rank and function: (elements, bytes, calls of unknown size).
    let want = |r: u64| -> Vec<(&str, u64, u64, u64)> {
        let p = (r + n - 1) % n;
        vec![
            ("MPI_Send", 10 * (r + 1) * 1000, 10 * (r + 1) * 1000 * 8, 0),
            ("MPI_Recv", 10 * (p + 1) * 1000, 10 * (p + 1) * 1000 * 8, 0),
            ("MPI_Allreduce", 7, 7 * 4, 0),
            ("MPI_Bcast", 5 + 2, 5 * 4, 1),
        ]
    };
    let results: Vec<serde_json::Value> = std::fs::read_dir(runs)
        .unwrap()
        .flatten()
        .flat_map(|job| std::fs::read_dir(job.path()).unwrap().flatten())
        .filter(|f| f.file_name().to_string_lossy().starts_with("rank-"))
        .map(|f| serde_json::from_slice(&std::fs::read(f.path()).unwrap()).unwrap())
        .collect();
    assert_eq!(results.len(), 4);
    let mut job_bytes = 0;
    for r in 0..n {
        let res = results
            .iter()
            .find(|x| x["context"]["rank"] == r)
            .unwrap_or_else(|| panic!("no result of rank {r}"));
        let fns = res["mpi"]["functions"].as_array().unwrap();
        for (name, elements, bytes, unknown) in want(r) {
            let f = fns.iter().find(|f| f["name"] == name).unwrap();
            let msg = &f["messages"];
            assert_eq!(
                (
                    msg["elements"].as_u64(),
                    msg["bytes"].as_u64(),
                    msg["unknown_size_calls"].as_u64()
                ),
                (Some(elements), Some(bytes), Some(unknown)),
                "rank {r}, {name}: {f}"
            );
            assert_eq!(msg["calls"], f["calls"], "rank {r}, {name}: {f}");
        }
        // Calls without a message carry none.
        for name in ["MPI_Barrier", "MPI_Init", "MPI_Finalize"] {
            let f = fns.iter().find(|f| f["name"] == name).unwrap();
            assert!(f.get("messages").is_none(), "rank {r}: {f}");
        }
        let bytes: u64 = want(r).iter().map(|w| w.2).sum();
        println!("rank {r}: {bytes} bytes in MPI calls of known size");
        let row = &m["ranks"][r as usize];
        assert_eq!(row["mpi_messages"]["bytes"], bytes, "rank {r}: {row}");
        assert_eq!(row["mpi_messages"]["calls"], 10 + 10 + 1 + 2, "{row}");
        assert_eq!(row["mpi_messages"]["unknown_size_calls"], 1, "{row}");
        assert_eq!(row["mpi_messages"]["unknown_size_elements"], 2, "{row}");
        job_bytes += bytes;
    }
    // The job: 4 x (Send + Recv of 10 x 10000 x 8 bytes in all) + 4 x (28 + 20).
    assert_eq!(job_bytes, 2 * 800_000 + 4 * 48);
    assert_eq!(m["mpi_messages"]["bytes"], job_bytes, "{m:#}");
    assert_eq!(m["mpi_messages"]["unknown_size_calls"], 4);
    let row = |name: &str| mpi_function(&m, name);
    for (name, bytes, min, max) in [
        ("MPI_Send", 800_000, 80_000, 320_000),
        ("MPI_Recv", 800_000, 80_000, 320_000),
        ("MPI_Allreduce", 112, 28, 28),
        ("MPI_Bcast", 80, 20, 20),
    ] {
        let f = row(name);
        assert_eq!(
            (
                f["messages"]["bytes"].as_u64(),
                f["bytes_min"].as_u64(),
                f["bytes_max"].as_u64()
            ),
            (Some(bytes), Some(min), Some(max)),
            "{name}: {f}"
        );
    }
    assert_eq!(row("MPI_Send")["messages"]["elements"], 100_000);
    assert!(row("MPI_Barrier").get("messages").is_none());
    let notes = m["notes"].to_string();
    assert!(
        notes.contains("4 MPI call(s) (MPI_Bcast) used datatypes whose size"),
        "{notes}"
    );
    // The text table has the bytes column, marked where a size is unknown.
    let o = hpcscope(&["merge", s(runs)]);
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(t.contains("mpi_bytes") && t.contains("400048 + ?"), "{t}");
}

/// Rank 2 kills itself with SIGKILL in its 4th iteration; Open MPI then aborts the job and
/// the other ranks' hpcscope get SIGTERM. Every rank's data up to then is in the merge.
#[test]
fn a_killed_rank_is_reported_and_the_others_are_kept() {
    let Some(t) = setup(true) else {
        return;
    };
    let Setup { prog, runs, .. } = &t;
    let o = traced(4, runs, prog, &["10", "10", "die", "2", "3"]);
    assert!(!o.status.success(), "the job should fail: {}", text(&o));
    let (code, m) = merge_json(&[s(runs)]);
    assert_eq!(code, 1, "an incomplete job exits 1: {m:#}");
    assert_eq!(m["complete"], false);
    let rows = ranks(&m);
    assert_eq!(rows.len(), 4);
    let r2 = &m["ranks"][2];
    assert_eq!(r2["status"], "failed", "{r2}");
    assert!(
        r2["exit"].as_str().unwrap().contains("SIGKILL"),
        "{}",
        r2["exit"]
    );
    // Three full iterations (6 calls) before it died.
    assert_eq!(rows[2].3, Some(6), "{r2}");
    // The surviving ranks were stopped, and kept what they measured: at least the three
    // iterations everyone finished.
    for r in [0, 1, 3] {
        let (status, comp, _, calls) = &rows[r];
        assert!(
            status == "interrupted" || status == "failed",
            "rank {r}: {status}"
        );
        assert!(calls.unwrap() >= 6, "rank {r}: {calls:?}");
        assert!(comp.unwrap() >= 0.03 * (r + 1) as f64 * 0.98, "rank {r}");
    }
    let problems = m["problems"].to_string();
    assert!(
        problems.contains("rank 2") && problems.contains("SIGKILL"),
        "{problems}"
    );
    // No efficiencies for a job that did not finish: the calls the others were stuck in
    // never returned, so their waits are not in their time in MPI.
    assert!(m["pop"].is_null(), "{m:#}");
    assert!(
        m["notes"].to_string().contains("did not finish"),
        "{}",
        m["notes"]
    );
}

/// Rank 3 runs the program without hpcscope (it never writes); rank 1's program kills its
/// hpcscope with SIGKILL (it started, then wrote nothing) and goes on, so the job ends
/// normally (Open MPI waits for the orphan's output). Ranks 0 and 2 are kept, and the
/// efficiencies are theirs.
#[test]
fn a_rank_that_never_writes_and_one_that_dies_silently_are_reported() {
    let Some(t) = setup(true) else {
        return;
    };
    let Setup { prog, runs, .. } = &t;
    let script = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 3 ]; then exec '{p}' 10 10 killhost 1 2; else exec '{h}' trace --run-dir '{d}' -- '{p}' 10 10 killhost 1 2; fi",
        p = prog.display(),
        h = HPCSCOPE,
        d = runs.display()
    );
    let o = mpirun(4, &["sh", "-c", &script]);
    assert!(!o.status.success(), "{}", text(&o));
    let (code, m) = merge_json(&[s(runs)]);
    assert_eq!(code, 1, "{m:#}");
    let st: Vec<String> = ranks(&m).into_iter().map(|r| r.0).collect();
    assert_eq!(st[1], "lost", "{m:#}");
    assert_eq!(st[3], "missing", "{m:#}");
    let problems = m["problems"].to_string();
    assert!(problems.contains("rank 1 started on"), "{problems}");
    assert!(
        problems.contains("rank 3 of 4: no file at all"),
        "{problems}"
    );
    assert_eq!(m["ranks_with_data"], 2);
    if st[0] == "ok" && st[2] == "ok" {
        for r in [0, 2] {
            assert_eq!(m["ranks"][r]["mpi_calls"], 21, "{m:#}");
        }
        assert_eq!(m["pop_ranks"], serde_json::json!([0, 2]));
        assert!(
            m["notes"].to_string().contains("2 of 4 ranks"),
            "{}",
            m["notes"]
        );
    } else {
        // Had Open MPI aborted the job, the two would have been stopped, and kept.
        for r in [0, 2] {
            assert!(
                st[r] == "interrupted" || st[r] == "failed",
                "rank {r}: {st:?}"
            );
            assert!(m["ranks"][r]["wall_s"].is_number(), "{m:#}");
        }
    }
}

/// Two jobs write into one run directory at the same time: each keeps its own ranks. One
/// job id given to two jobs is a conflict, and a truncated file loses that rank only.
#[test]
fn two_jobs_in_one_directory_are_never_mixed() {
    let Some(t) = setup(true) else {
        return;
    };
    let Setup { prog, runs, .. } = &t;
    // Job A: 4 x 5 ms units; job B: 4 x 20 ms. At the same time.
    let spawn = |unit: &'static str| {
        let runs = runs.clone();
        let prog = prog.clone();
        std::thread::spawn(move || traced(4, &runs, &prog, &["4", unit]))
    };
    let (a, b) = (spawn("5"), spawn("20"));
    for o in [a.join().unwrap(), b.join().unwrap()] {
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = hpcscope(&["merge", s(runs)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        err.contains("holds 2 jobs") && err.contains("--job"),
        "{err}"
    );
    let (code, all) = merge_json(&[s(runs), "--all"]);
    assert_eq!(code, 0, "{all:#}");
    let jobs = all["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    let mut units = Vec::new();
    for j in jobs {
        let id = j["job_id"].as_str().unwrap();
        let (code, m) = merge_json(&[s(runs), "--job", id]);
        assert_eq!(code, 0);
        assert_eq!(m["ranks_with_data"], 4);
        // Every rank of one job has that job's unit: comp_r / (4 (r + 1)) is the unit.
        let u: Vec<f64> = ranks(&m)
            .iter()
            .enumerate()
            .map(|(r, x)| x.1.unwrap() / (4.0 * (r + 1) as f64))
            .collect();
        let lo = u.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = u.iter().copied().fold(0.0, f64::max);
        assert!(hi < 1.5 * lo, "job {id} mixes units: {u:?}");
        units.push(lo);
    }
    units.sort_by(f64::total_cmp);
    // The built units are 0.005 and 0.020 s: a loaded machine stretches both (the lower
    // bounds hold), their ratio stays near 4.
    assert!(
        units[0] >= 0.0049 && units[1] >= 0.0196 && (2.5..6.0).contains(&(units[1] / units[0])),
        "units {units:?}, built 0.005 and 0.020"
    );

    // A truncated file (a copy cut short): that rank is lost, the others are kept.
    let job = jobs[0]["directory"].as_str().unwrap();
    let f2 = std::fs::read_dir(job)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("rank-000002.")
        })
        .unwrap();
    let full = std::fs::read(&f2).unwrap();
    std::fs::write(&f2, &full[..full.len() / 2]).unwrap();
    let (code, m) = merge_json(&[job]);
    assert_eq!(code, 1);
    assert_eq!(m["ranks"][2]["status"], "unreadable");
    assert!(m["problems"].to_string().contains("ends early"), "{m:#}");
    assert_eq!(m["ranks_with_data"], 3);
    assert_eq!(m["pop_ranks"], serde_json::json!([0, 1, 3]));
}

/// `record` under mpirun (no BPF needed): per-rank times, no efficiencies and a note that
/// says how to get them. One --job-id given to two jobs: a conflict, nothing used.
#[test]
fn record_ranks_and_a_job_id_used_twice() {
    let Some(t) = setup(false) else {
        return;
    };
    let Setup {
        prog, dir, runs, ..
    } = &t;
    let o = ranked(4, &["record"], runs, prog, &["2", "5"]);
    assert!(o.status.success(), "{}", text(&o));
    let (code, m) = merge_json(&[s(runs)]);
    assert_eq!(code, 0, "{m:#}");
    assert_eq!(m["command"], "record");
    for r in m["ranks"].as_array().unwrap() {
        assert_eq!(r["status"], "ok");
        assert!(f(&r["wall_s"]) > 0.0 && r["user_s"].is_number(), "{r}");
    }
    assert!(m["pop"].is_null());
    assert!(
        m["notes"].to_string().contains("hpcscope trace --run-dir"),
        "{}",
        m["notes"]
    );
    // -n is refused under a launcher: an MPI rank starts its program once.
    let o = hpcscope(&["record", "--run-dir", s(runs), "-n", "3", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));

    let twice = dir.path().join("twice");
    for _ in 0..2 {
        let o = ranked(
            2,
            &["record", "--job-id", "same"],
            &twice,
            prog,
            &["1", "1"],
        );
        assert!(o.status.success(), "{}", text(&o));
    }
    let (code, m) = merge_json(&[s(&twice)]);
    assert_eq!(code, 1, "{m:#}");
    for r in m["ranks"].as_array().unwrap() {
        assert_eq!(r["status"], "conflict", "{r}");
    }
    assert!(
        m["problems"]
            .to_string()
            .contains("two runs used the job id 'same'")
    );
    assert_eq!(m["ranks_with_data"], 0);
}

/// Without BPF permission a rank still runs its command; the result and the merge say what
/// is missing and why, and keep the times.
#[test]
fn without_bpf_permission_a_rank_keeps_its_times() {
    if !is_root() {
        println!("skipping: needs root to drop privileges from");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&runs, std::fs::Permissions::from_mode(0o777)).unwrap();
    use std::os::unix::process::CommandExt;
    let o = Command::new(HPCSCOPE)
        .args(["trace", "--run-dir", s(&runs), "--", "sleep", "0.2"])
        .env_remove("HPCSCOPE_JOB_ID")
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("without eBPF"),
        "{}",
        text(&o)
    );
    let (code, m) = merge_json(&[s(&runs)]);
    assert_eq!(code, 0, "{m:#}");
    let r = &m["ranks"][0];
    assert_eq!(r["status"], "ok");
    assert!(f(&r["wall_s"]) >= 0.2, "{r}");
    let notes = m["notes"].to_string();
    assert!(notes.contains("eBPF is not available"), "{notes}");
    assert!(notes.contains("no POP efficiencies"), "{notes}");
}

/// Strong scaling from merged jobs: the same 0.4 s of work split between 1, 2 and 4 ranks
/// (runtimes 0.4, 0.2, 0.1 s); `model scaling` reads a merged JSON and two run directories
/// and finds Amdahl's law with almost no serial part.
#[test]
fn model_scaling_reads_merged_jobs() {
    let Some(t) = setup(true) else {
        return;
    };
    let Setup {
        prog, dir, runs, ..
    } = &t;
    let mut inputs = Vec::new();
    for np in [1u32, 2, 4] {
        let d = runs.join(format!("np{np}"));
        let o = traced(np, &d, prog, &["4", "100", "split"]);
        assert!(o.status.success(), "{}", text(&o));
        inputs.push(d);
    }
    // One of them as the JSON of `merge`, the others as run directories.
    let one = dir.path().join("np1.json");
    let o = hpcscope(&["merge", s(&inputs[0]), "--format", "json", "-o", s(&one)]);
    assert!(o.status.success(), "{}", text(&o));
    let o = hpcscope(&[
        "model",
        "scaling",
        s(&one),
        s(&inputs[1]),
        s(&inputs[2]),
        "--law",
        "amdahl",
        "--predict",
        "8",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p8 = f(&v["predictions"][0]["time_s"]);
    // The jobs' own runtimes: a loaded machine stretches them all, and the fit with them.
    let t4 = f(&merge_json(&[s(&inputs[2])]).1["runtime_s"]);
    println!(
        "measured: Amdahl fit of merged jobs at 1, 2, 4 ranks predicts {p8:.4} s at 8 ranks, the 4-rank job ran {t4:.4} s (built: 0.05 s at 8 ranks)"
    );
    // Amdahl's T(8) = s + w/8 lies between T(4)/2 and T(4); the fit passes near T(4).
    assert!(p8 > 0.4 * t4 && p8 < 1.1 * t4, "{v:#}");
    // A CSV and merged jobs are not mixed.
    let csv = dir.path().join("runs.csv");
    std::fs::write(&csv, "p,time_s\n1,1\n2,0.5\n").unwrap();
    let o = hpcscope(&["model", "scaling", s(&csv), s(&one)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// A sweep split into tasks (`explore --point`, what each job-array task runs) merges back
/// into the sweep that `explore` computes at once, missing points reported; the Slurm
/// script is checked before it is written.
#[test]
fn explore_points_merge_into_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let scenario =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios/tx2-sve-hbm.toml");
    let direct = hpcscope(&["explore", s(&scenario), "--format", "json"]);
    assert!(direct.status.success(), "{}", text(&direct));
    let d: serde_json::Value = serde_json::from_slice(&direct.stdout).unwrap();
    let n = d["points"].as_array().unwrap().len();
    assert_eq!(n, 20);
    for i in (0..n).rev().filter(|i| *i != 7) {
        let o = hpcscope(&[
            "explore",
            s(&scenario),
            "--point",
            &i.to_string(),
            "--run-dir",
            s(&runs),
            "--job-id",
            "sweep",
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let (code, m) = merge_json(&[s(&runs)]);
    assert_eq!(code, 1, "point 7 is missing: {m:#}");
    assert!(
        m["problems"].to_string().contains("task 7 of 20"),
        "{}",
        m["problems"]
    );
    let mut want = d["points"].as_array().unwrap().clone();
    want.remove(7);
    assert_eq!(m["sweep"]["points"], serde_json::Value::Array(want));
    let o = hpcscope(&[
        "explore",
        s(&scenario),
        "--point",
        "7",
        "--run-dir",
        s(&runs),
        "--job-id",
        "sweep",
    ]);
    assert!(o.status.success());
    let svg = dir.path().join("sweep.svg");
    let (code, m) = merge_json(&[s(&runs), "--svg", s(&svg)]);
    assert_eq!(code, 0, "{m:#}");
    assert_eq!(m["sweep"]["points"], d["points"]);
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));

    // Bad input: exit 2 with the fix in the message, before anything is written.
    let script = dir.path().join("sweep.sh");
    for (args, says) in [
        (vec!["--point", "20"], "numbered 0 to 19"),
        (vec!["--run-dir", s(&runs)], "give --point"),
        (vec!["--slurm", s(&script)], "--run-dir"),
        (
            vec![
                "--slurm",
                s(&script),
                "--run-dir",
                s(&runs),
                "--sbatch=--array=1-3",
            ],
            "--max-parallel",
        ),
    ] {
        let mut a = vec!["explore", s(&scenario)];
        a.extend(args.iter().copied());
        let o = hpcscope(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{a:?}: {}",
            text(&o)
        );
    }
    assert!(!script.exists());
    let o = hpcscope(&[
        "explore",
        s(&scenario),
        "--slurm",
        s(&script),
        "--run-dir",
        s(&runs),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let t = std::fs::read_to_string(&script).unwrap();
    assert!(
        t.contains("--array=0-19 ") && t.contains("--dependency=afterany:"),
        "{t}"
    );
    assert!(t.contains("--point \"$SLURM_ARRAY_TASK_ID\""), "{t}");
}

/// `counters run` and `profile` under mpirun: one result per rank, merged; the job's
/// profile is one flame graph with each rank's stacks under it.
#[test]
fn counters_and_profile_ranks_merge() {
    let Some(t) = setup(true) else {
        return;
    };
    let Setup {
        prog, dir, runs, ..
    } = &t;
    let counted = runs.join("counters");
    let o = ranked(2, &["counters", "run"], &counted, prog, &["3", "20"]);
    assert!(o.status.success(), "{}", text(&o));
    let (code, m) = merge_json(&[s(&counted)]);
    assert_eq!(code, 0, "{m:#}");
    assert_eq!(m["command"], "counters");
    // Every rank counted its own run: the task clock of each is there.
    let cpu = m["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "metrics.all.cpu_time")
        .unwrap_or_else(|| panic!("{m:#}"));
    assert_eq!(cpu["ranks"], 2, "{cpu}");

    let profiled = runs.join("profile");
    let o = ranked(
        2,
        &["profile", "--hz", "499"],
        &profiled,
        prog,
        &["3", "50"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let flame = dir.path().join("job.svg");
    let (code, m) = merge_json(&[s(&profiled), "--flamegraph", s(&flame)]);
    assert_eq!(code, 0, "{m:#}");
    assert!(!m["hot_functions"].as_array().unwrap().is_empty(), "{m:#}");
    // Rank 0 waits for rank 1 in every iteration, spinning in MPI: it has samples, under
    // its rank's frame.
    let svg = std::fs::read_to_string(&flame).unwrap();
    assert!(
        svg.contains("rank-0"),
        "no rank frame in {}: {m:#}",
        flame.display()
    );
    for r in m["ranks"].as_array().unwrap() {
        assert_eq!(r["status"], "ok", "{r}");
    }
}

/// 2 ranks x 2 OpenMP threads (`tests/data/hybrid.c`, built with -fopenmp) traced with
/// `--openmp`: the merge splits the parallel efficiency into MPI and OpenMP efficiency
/// (eqs. 3.14-3.16) as the program is built: 7/8, 9/16 and 9/14.
#[test]
fn hybrid_ranks_split_mpi_and_openmp_efficiency() {
    let Some(t) = setup(true) else {
        return;
    };
    let prog = t.dir.path().join("hybrid");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/hybrid.c");
    let built = Command::new("mpicc")
        .args(["-O2", "-fopenmp", "-o"])
        .arg(&prog)
        .arg(&src)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        assert!(!ci(), "mpicc -fopenmp failed");
        println!("skipping: mpicc -fopenmp cannot build an MPI + OpenMP program");
        return;
    }
    let o = ranked(2, &["trace", "--openmp"], &t.runs, &prog, &["150"]);
    assert!(o.status.success(), "{}", text(&o));
    let (code, m) = merge_json(&[s(&t.runs)]);
    assert_eq!(code, 0, "{m:#}");
    let h = &m["hybrid"];
    assert_eq!(h["threads"], 4, "{m:#}");
    let e = &h["efficiency"];
    let close = |v: &serde_json::Value, want: f64| {
        assert!((f(v) - want).abs() < 0.03, "{v} against {want}: {m:#}")
    };
    close(&e["mpi_efficiency"], 7.0 / 8.0);
    close(&e["hybrid_parallel_efficiency"], 9.0 / 16.0);
    close(&e["openmp_efficiency"], 9.0 / 14.0);
    // Eq. 3.14 holds exactly.
    assert!(
        (f(&e["mpi_efficiency"]) * f(&e["openmp_efficiency"])
            - f(&e["hybrid_parallel_efficiency"]))
        .abs()
            < 1e-12
    );
    assert_eq!(m["ranks"][0]["threads"], 2);
}
