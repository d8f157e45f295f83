//! Faults: `kill -9` at random points of `record`, `merge`, `analyze` and `mix`, concurrent
//! readers and writers of one store, a full disk, read-only files and directories. After each
//! fault the store, the result files and the run directories are checked: nothing wedged (the
//! next command works), nothing half-written (a result file is absent or complete), nothing
//! that was committed lost (every run a killed `record` reported is in the store), no program
//! left running. Each test prints its counts (`faults: ...: kills K, states checked S,
//! losses L`) and fails on any loss.
//!
//! The kill points come from a seeded generator (`HPCSCOPE_FAULT_SEED`, default 21): a
//! failure is reproducible. Tests that need root (tmpfs mounts) or QEMU say `skipping:` where
//! those are missing.

mod common;
use common::{is_root, qemu_plugin_ready};

use hpcscope_test_support::{bin, repo_root};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A small deterministic generator (xorshift64*): the kill points.
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = std::env::var("HPCSCOPE_FAULT_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(21u64);
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, n).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Counts of one fault test.
#[derive(Default)]
struct Tally {
    kills: usize,
    states: usize,
    losses: Vec<String>,
}

impl Tally {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        self.states += 1;
        if !ok {
            self.losses.push(what());
        }
    }
    fn report(&self, name: &str) {
        println!(
            "faults: {name}: kills {}, states checked {}, losses {}",
            self.kills,
            self.states,
            self.losses.len()
        );
        assert!(self.losses.is_empty(), "{name}: {:#?}", self.losses);
    }
}

/// A tag in the environment of a command and of every program it starts, to find what is
/// left running after it was killed.
fn tagged(cmd: &mut Command, tag: &str) {
    cmd.env("HPCSCOPE_FAULT_TAG", tag);
}

/// Processes (other than `except`) whose environment holds `tag`.
fn tagged_processes(tag: &str) -> Vec<i32> {
    let needle = format!("HPCSCOPE_FAULT_TAG={tag}\0");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ"))
            && env.windows(needle.len()).any(|w| w == needle.as_bytes())
        {
            // A zombie waiting for its reaper is gone already.
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| {
                    s.rsplit(')')
                        .next()
                        .and_then(|r| r.split_whitespace().next())
                        == Some("Z")
                })
                .unwrap_or(true);
            if !zombie {
                out.push(pid);
            }
        }
    }
    out
}

/// Waits up to 2 s for the processes of `tag` to end; returns those still running (and kills
/// them, so that one finding does not slow the next checks).
fn survivors(tag: &str) -> Vec<i32> {
    let t0 = Instant::now();
    loop {
        let left = tagged_processes(tag);
        if left.is_empty() || t0.elapsed() > Duration::from_secs(2) {
            for &p in &left {
                // SAFETY: killing a leftover test process.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill9(c: &mut Child) {
    // SAFETY: killing our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
}

/// Files a killed writer may leave beside results (removed by the next write).
fn is_temporary(name: &str) -> bool {
    name.ends_with(".tmp") || name.contains(".creating")
}

/// A result file is absent, or complete: JSON that parses, HTML or SVG that ends.
fn complete(p: &Path) -> Result<(), String> {
    let Ok(bytes) = std::fs::read(p) else {
        return Ok(());
    };
    let name = p.display().to_string();
    let text = String::from_utf8(bytes).map_err(|_| format!("{name}: not UTF-8"))?;
    if name.ends_with(".json") {
        serde_json::from_str::<serde_json::Value>(&text)
            .map(|_| ())
            .map_err(|e| format!("{name}: half-written JSON ({e})"))
    } else if name.ends_with(".html") {
        text.trim_end()
            .ends_with("</html>")
            .then_some(())
            .ok_or_else(|| format!("{name}: half-written HTML"))
    } else if name.ends_with(".svg") {
        text.trim_end()
            .ends_with("</svg>")
            .then_some(())
            .ok_or_else(|| format!("{name}: half-written SVG"))
    } else {
        Ok(())
    }
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn history_count(db: &Path) -> Result<usize, String> {
    let o = bin!()
        .args(["history", "list", "--format", "json", "--db"])
        .arg(db)
        .output()
        .unwrap();
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).into_owned());
    }
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).map_err(|e| e.to_string())?;
    Ok(v.as_array().map_or(0, |a| a.len()))
}

fn history_ids(db: &Path) -> Vec<i64> {
    let o = bin!()
        .args(["history", "list", "--format", "json", "--db"])
        .arg(db)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    v.as_array()
        .map(|a| a.iter().filter_map(|r| r["id"].as_i64()).collect())
        .unwrap_or_default()
}

/// The run ids a `record` reported as committed (`run i/N -> #ID`).
fn reported_ids(stderr: &str) -> Vec<i64> {
    stderr
        .lines()
        .filter_map(|l| l.split(" -> #").nth(1))
        .filter_map(|r| r.split(':').next()?.parse().ok())
        .collect()
}

#[test]
fn kill9_during_record_never_wedges_the_store_or_loses_a_committed_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new();
    let mut t = Tally::default();
    // Half the kills hit the creation of a new store, half an existing store mid-record.
    let shared = dir.path().join("shared.db");
    let mut committed: Vec<i64> = Vec::new();
    for i in 0..24 {
        let fresh = i % 2 == 0;
        let db = if fresh {
            dir.path().join(format!("new{i}.db"))
        } else {
            shared.clone()
        };
        let tag = format!("record-{}-{i}", std::process::id());
        let mut cmd = bin!();
        cmd.args(["record", "-n", "40", "--db"])
            .arg(&db)
            .args(["--", "sleep", "0.002"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        tagged(&mut cmd, &tag);
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(if fresh {
            60_000
        } else {
            250_000
        })));
        kill9(&mut child);
        t.kills += 1;
        let out = child.wait_with_output().unwrap();
        let reported = reported_ids(&String::from_utf8_lossy(&out.stderr));
        let left = survivors(&tag);
        t.check(left.is_empty(), || {
            format!("kill {i}: programs left running: {left:?}")
        });
        // Not wedged: a reader answers, and a store that exists reads.
        match history_count(&db) {
            Ok(_) => t.check(true, String::new),
            // Killed before the store was created: there is none, and none was half made.
            Err(e) => t.check(
                e.contains("no history store here") && reported.is_empty() && !db.exists(),
                || format!("kill {i}: the store does not read: {e}"),
            ),
        }
        // Nothing committed lost.
        if !fresh {
            committed.extend(&reported);
        }
        let ids = history_ids(&db);
        for id in if fresh { &reported } else { &committed } {
            t.check(ids.contains(id), || {
                format!("kill {i}: run #{id} was reported committed but is not in the store")
            });
        }
        // And a writer still writes.
        let o = bin!()
            .args(["record", "-n", "1", "--db"])
            .arg(&db)
            .args(["--", "true"])
            .output()
            .unwrap();
        t.check(o.status.success(), || {
            format!(
                "kill {i}: the next record fails: {}",
                String::from_utf8_lossy(&o.stderr)
            )
        });
        if !fresh {
            committed.extend(reported_ids(&String::from_utf8_lossy(&o.stderr)));
        }
    }
    // The creations' leftovers are gone once stores were created again in the directory.
    let litter: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| is_temporary(n))
        .collect();
    t.check(litter.is_empty(), || format!("leftovers: {litter:?}"));
    t.report("record");
}

#[test]
fn concurrent_writers_and_readers_lose_nothing_and_never_see_damage() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let o = bin!()
        .args(["record", "-n", "3", "--db"])
        .arg(&db)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let writers: Vec<Child> = (0..2)
        .map(|_| {
            bin!()
                .args(["record", "-n", "80", "--db"])
                .arg(&db)
                .args(["--", "sleep", "0.03"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut t = Tally::default();
    let mut writers = writers;
    // Three readers loop while the writers write.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|k| {
            let done = done.clone();
            let db = db.clone();
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut reads = 0;
                while !done.load(std::sync::atomic::Ordering::SeqCst) || reads < 4 {
                    let args: &[&str] = if (reads + k) % 2 == 0 {
                        &["history", "list", "--format", "json"]
                    } else {
                        &["regress", "check", "--baseline", "10"]
                    };
                    let o = bin!().args(args).arg("--db").arg(&db).output().unwrap();
                    reads += 1;
                    let err = String::from_utf8_lossy(&o.stderr).into_owned();
                    // regress check may find a regression (exit 1): an answer, not a failure.
                    if err.contains("damaged")
                        || err.contains("readonly")
                        || o.status.code() == Some(2)
                    {
                        seen.push(format!("{}: {err}", args.join(" ")));
                    }
                }
                (reads, seen)
            })
        })
        .collect();
    for w in &mut writers {
        t.check(w.wait().unwrap().success(), || "a writer failed".into());
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut reads = 0;
    for r in readers {
        let (n, bad) = r.join().unwrap();
        reads += n;
        for _ in 0..n - bad.len() {
            t.check(true, String::new);
        }
        for b in bad {
            t.check(false, || b);
        }
    }
    let n = history_count(&db).unwrap();
    t.check(n == 163, || format!("{n} runs in the store, 163 recorded"));
    println!("faults: concurrency: {reads} reads beside 2 writers");
    t.report("concurrent readers and writers");
}

/// A run directory of `ranks` rank results, made from one real rank file.
fn run_dir(dir: &Path, ranks: u32) -> PathBuf {
    let rd = dir.join("run");
    let o = bin!()
        .args(["record", "--run-dir"])
        .arg(&rd)
        .args(["--job-id", "j", "--", "true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let job = rd.join("j");
    let f = files(&job).remove(0);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    for r in 1..ranks {
        let mut w = v.clone();
        w["context"]["rank"] = r.into();
        w["context"]["size"] = ranks.into();
        w["wall_s"] = (0.01 + f64::from(r % 7) * 1e-3).into();
        std::fs::write(
            job.join(format!("rank-{r:06}.node{}.json", r % 4)),
            serde_json::to_string(&w).unwrap(),
        )
        .unwrap();
    }
    let mut w = v;
    w["context"]["size"] = ranks.into();
    std::fs::write(&f, serde_json::to_string(&w).unwrap()).unwrap();
    rd
}

#[test]
fn kill9_during_merge_leaves_the_rank_files_and_no_half_result() {
    let dir = tempfile::tempdir().unwrap();
    let rd = run_dir(dir.path(), 400);
    let before: Vec<(PathBuf, Vec<u8>)> = files(&rd)
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let mut rng = Rng::new();
    let mut t = Tally::default();
    let merge = |c: &mut Command| {
        c.arg("merge")
            .arg(rd.join("j"))
            .args(["--format", "json", "-o"])
            .arg(out.join("merged.json"))
            .arg("--svg")
            .arg(out.join("ranks.svg"))
            .arg("--html")
            .arg(out.join("report.html"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
    };
    for i in 0..16 {
        let tag = format!("merge-{}-{i}", std::process::id());
        let mut cmd = bin!();
        merge(&mut cmd);
        tagged(&mut cmd, &tag);
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(400_000)));
        kill9(&mut child);
        t.kills += 1;
        let _ = child.wait();
        t.check(survivors(&tag).is_empty(), || {
            format!("kill {i}: left running")
        });
        for f in files(&out) {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if !is_temporary(&name) {
                let r = complete(&f);
                t.check(r.is_ok(), || format!("kill {i}: {}", r.unwrap_err()));
            }
        }
        for (p, b) in &before {
            t.check(std::fs::read(p).ok().as_ref() == Some(b), || {
                format!("kill {i}: rank file {} changed", p.display())
            });
        }
    }
    // The next merge completes and cleans up what the killed ones left.
    let mut cmd = bin!();
    merge(&mut cmd);
    let st = cmd.status().unwrap();
    t.check(st.code() == Some(0), || format!("the next merge: {st}"));
    let names: Vec<String> = files(&out)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    t.check(names == ["merged.json", "ranks.svg", "report.html"], || {
        format!("after the next merge: {names:?}")
    });
    for f in files(&out) {
        let r = complete(&f);
        t.check(r.is_ok(), || r.unwrap_err());
    }
    t.report("merge");
}

/// Programs for `analyze` and `mix`; `None` after a `skipping:` line where QEMU, gcc or the
/// plugin is missing.
fn qemu_ready(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let p = qemu_plugin_ready()?;
    let src = dir.join("k.c");
    std::fs::write(
        &src,
        "#include <stdlib.h>\n#include <stdio.h>\n\
         __attribute__((noinline)) void k(long n, double *a, const double *b) {\n\
           for (long i = 0; i < n; i++) a[i] = 2.0 * b[i] + a[i];\n}\n\
         int main(int c, char **v) { long n = atol(v[1]); double *a = calloc(n, 8), *b = calloc(n, 8);\n\
           for (int r = 0; r < 20; r++) k(n, a, b); printf(\"%f\\n\", a[1]); return 0; }\n",
    )
    .unwrap();
    let prog = dir.join("k");
    let st = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&prog)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    Some((p, prog))
}

/// Kills `args` (run with the plugin) at random points of its first `span`, checks the files
/// under `out` after each kill and after a run to completion; returns the programs left
/// running per kill (QEMU and the native runs of `mix`).
fn kill_emulated(
    name: &str,
    plugin: &Path,
    args: &[String],
    out: &Path,
    kills: usize,
    t: &mut Tally,
) -> usize {
    let mut rng = Rng::new();
    // One complete run tells how long the command takes.
    let t0 = Instant::now();
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", plugin)
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let span = t0.elapsed().as_micros() as u64;
    let mut orphans = 0;
    for i in 0..kills {
        let tag = format!("{name}-{}-{i}", std::process::id());
        let mut cmd = bin!();
        cmd.env("HPCSCOPE_QEMU_PLUGIN", plugin)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        tagged(&mut cmd, &tag);
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(span)));
        kill9(&mut child);
        t.kills += 1;
        let _ = child.wait();
        orphans += survivors(&tag).len();
        for f in files(out) {
            let n = f.file_name().unwrap().to_string_lossy().into_owned();
            if !is_temporary(&n) {
                let r = complete(&f);
                t.check(r.is_ok(), || format!("{name} kill {i}: {}", r.unwrap_err()));
            }
        }
    }
    let o: Output = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", plugin)
        .args(args)
        .output()
        .unwrap();
    t.check(o.status.success(), || {
        format!(
            "{name}: the next run fails: {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    for f in files(out) {
        let n = f.file_name().unwrap().to_string_lossy().into_owned();
        t.check(!is_temporary(&n), || format!("{name}: {n} left behind"));
        let r = complete(&f);
        t.check(r.is_ok(), || r.unwrap_err());
    }
    orphans
}

#[test]
fn kill9_during_analyze_and_mix_leaves_complete_files_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let Some((plugin, prog)) = qemu_ready(dir.path()) else {
        return;
    };
    let mut t = Tally::default();
    let out = dir.path().join("analysis");
    let args: Vec<String> = [
        "analyze",
        "-m",
        "cascadelake-8260",
        "-t",
        "thunderx2",
        "--no-trace",
        "--native-runs",
        "1",
        "-o",
        out.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        "20000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let a = kill_emulated("analyze", &plugin, &args, &out, 5, &mut t);
    let mixdir = dir.path().join("mix");
    std::fs::create_dir(&mixdir).unwrap();
    let args: Vec<String> = [
        "mix",
        "-m",
        "cascadelake-8260",
        "--native-runs",
        "1",
        "-o",
        mixdir.join("p.json").to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        "20000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let m = kill_emulated("mix", &plugin, &args, &mixdir, 5, &mut t);
    // QEMU and the native timing runs die with hpcscope (PR_SET_PDEATHSIG).
    println!("faults: analyze and mix: programs left running after kill -9: {a} and {m}");
    assert_eq!((a, m), (0, 0), "programs left running after kill -9");
    t.report("analyze and mix");
}

/// A tmpfs of `size` mounted on a new directory of `dir` (root only); `None` after a
/// `skipping:` line where it cannot be mounted. Unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        if !is_root() {
            println!("skipping: mounting a tmpfs needs root");
            return None;
        }
        let m = dir.join(format!("tmpfs-{size}"));
        std::fs::create_dir_all(&m).unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&m)
            .output();
        match o {
            Ok(o) if o.status.success() => Some(Tmpfs(m)),
            Ok(o) => {
                println!(
                    "skipping: cannot mount a tmpfs here: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                println!("skipping: cannot run mount: {e}");
                None
            }
        }
    }
    fn remount_read_only(&self) -> bool {
        Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn roofline_args(out: &Path) -> Vec<String> {
    let p = repo_root().join("examples/scenarios/tx2-source.json");
    vec![
        "roofline".into(),
        "-m".into(),
        "thunderx2".into(),
        "-p".into(),
        p.display().to_string(),
        "--svg".into(),
        out.with_extension("svg").display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ]
}

#[test]
fn a_full_disk_is_an_environment_limit_and_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount(dir.path(), "256k") else {
        return;
    };
    let mut t = Tally::default();
    // A store with runs, then the disk filled up to the last byte.
    let db = fs.0.join("h.db");
    let o = bin!()
        .args(["record", "-n", "2", "--db"])
        .arg(&db)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let filler = fs.0.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0u8; 4096];
    while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
    drop(f);
    let o = bin!()
        .args(["record", "-n", "50", "--db"])
        .arg(&db)
        .args(["--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    t.check(o.status.code() == Some(3), || {
        format!("record on a full disk: exit {:?}: {err}", o.status.code())
    });
    // While the disk is full, a reader may not get the shared memory of the WAL either: an
    // environment limit, not damage. Once there is room again, the store reads with its runs.
    let o = bin!()
        .args(["history", "list", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    t.check(
        o.status.success() || (o.status.code() == Some(3) && !err.contains("damaged")),
        || format!("reading on a full disk: exit {:?}: {err}", o.status.code()),
    );
    std::fs::remove_file(&filler).unwrap();
    let n = history_count(&db);
    t.check(n.as_ref().is_ok_and(|&n| n >= 2), || {
        format!("the store after a full disk: {n:?}")
    });
    // Full again for the result files.
    let mut f = std::fs::File::create(&filler).unwrap();
    while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
    drop(f);
    // A result file: exit 3, neither the file nor its chart nor a temporary file is left.
    let out = fs.0.join("roof.txt");
    let o = bin!().args(roofline_args(&out)).output().unwrap();
    t.check(o.status.code() == Some(3), || {
        format!(
            "roofline -o on a full disk: exit {:?}: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    let names: Vec<String> = std::fs::read_dir(&fs.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("h.db") && n != "filler")
        .collect();
    t.check(names.is_empty(), || {
        format!("left on the full disk: {names:?}")
    });
    t.report("full disk");
}

#[test]
fn read_only_stores_and_directories_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = Tally::default();
    // A missing output directory: exit 3, and the chart is not written either.
    let out = dir.path().join("no/such/dir/roof.txt");
    let o = bin!().args(roofline_args(&out)).output().unwrap();
    t.check(o.status.code() == Some(3), || {
        format!("a missing output directory: exit {:?}", o.status.code())
    });
    t.check(!out.with_extension("svg").exists(), || {
        "the SVG was written although -o failed".into()
    });
    let Some(fs) = Tmpfs::mount(dir.path(), "4m") else {
        t.report("read-only (without root)");
        return;
    };
    let db = fs.0.join("h.db");
    let o = bin!()
        .args(["record", "-n", "2", "--db"])
        .arg(&db)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    if !fs.remount_read_only() {
        println!("skipping: cannot remount the tmpfs read-only");
        return;
    }
    // Recording into a read-only store fails at once, before the command runs (it used to
    // run the whole command, then lose its measurement).
    let marker = dir.path().join("the-command-ran");
    let o = bin!()
        .args(["record", "--db"])
        .arg(&db)
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    t.check(o.status.code() == Some(3), || {
        format!(
            "record into a read-only store: exit {:?}: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    t.check(!marker.exists(), || {
        "the command ran although the store cannot be written".into()
    });
    // Readers still read it.
    let n = history_count(&db);
    t.check(n.as_ref().is_ok_and(|&n| n == 2), || {
        format!("reading a read-only store: {n:?}")
    });
    // A result into a read-only directory: exit 3.
    let o = bin!()
        .args(roofline_args(&fs.0.join("r.txt")))
        .output()
        .unwrap();
    t.check(o.status.code() == Some(3), || {
        format!("-o into a read-only directory: exit {:?}", o.status.code())
    });
    // An immutable directory (chattr +i), where the file system supports it.
    let imm = dir.path().join("immutable");
    std::fs::create_dir(&imm).unwrap();
    let db2 = imm.join("h.db");
    let o = bin!()
        .args(["record", "--db"])
        .arg(&db2)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(o.status.success());
    if Command::new("chattr")
        .arg("+i")
        .arg(&imm)
        .status()
        .is_ok_and(|s| s.success())
    {
        let o = bin!()
            .args(["record", "--db"])
            .arg(&db2)
            .args(["--", "touch"])
            .arg(&marker)
            .output()
            .unwrap();
        let _ = Command::new("chattr").arg("-i").arg(&imm).status();
        t.check(o.status.code() == Some(3) && !marker.exists(), || {
            format!(
                "record into an immutable directory: exit {:?}: {}",
                o.status.code(),
                String::from_utf8_lossy(&o.stderr)
            )
        });
    } else {
        println!("skipping: chattr +i is not supported here (immutable directory)");
    }
    t.report("read-only");
}

/// Runs `args` and checks that it is refused as bad usage (exit 2) with `why` said, and that
/// each of `intact` still holds its bytes (`(file, bytes before)`).
fn refused_intact(
    t: &mut Tally,
    what: &str,
    args: &[&std::ffi::OsStr],
    intact: &[(&Path, Vec<u8>)],
) {
    let o = bin!().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    t.check(
        o.status.code() == Some(2) && err.contains("is the same file as"),
        || format!("{what}: exit {:?}: {err}", o.status.code()),
    );
    for (p, before) in intact {
        t.check(std::fs::read(p).ok().as_ref() == Some(before), || {
            format!("{what}: {} was changed", p.display())
        });
    }
}

#[test]
fn an_output_naming_an_input_or_another_output_is_refused_and_the_input_is_intact() {
    use std::ffi::OsStr;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut t = Tally::default();
    let os = |p: &Path| p.as_os_str().to_owned();
    // The history store: `history list --db H -o H` replaced the store with its CSV, exit 0.
    let db = d.join("h.db");
    let o = bin!()
        .args(["record", "-n", "2", "--db"])
        .arg(&db)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let hard = d.join("hard.db");
    std::fs::hard_link(&db, &hard).unwrap();
    let soft = d.join("soft.db");
    std::os::unix::fs::symlink("h.db", &soft).unwrap();
    let store = std::fs::read(&db).unwrap();
    for out in [&db, &hard, &soft, &d.join(".").join("h.db")] {
        let args = [
            OsStr::new("history"),
            OsStr::new("list"),
            OsStr::new("--db"),
        ];
        let mut a: Vec<std::ffi::OsString> = args.iter().map(|s| s.to_os_string()).collect();
        a.extend([os(&db), "-o".into(), os(out)]);
        let a: Vec<&OsStr> = a.iter().map(|s| s.as_os_str()).collect();
        refused_intact(
            &mut t,
            &format!("history list -o {}", out.display()),
            &a,
            &[(&db, store.clone())],
        );
    }
    let n = history_count(&db);
    t.check(n.as_ref().is_ok_and(|&n| n == 2), || {
        format!("the store after the refusals: {n:?}")
    });
    // roofline: -o naming its profile or its machine file; --svg X -o X.
    let prof = d.join("p.json");
    std::fs::copy(
        repo_root().join("examples/scenarios/tx2-source.json"),
        &prof,
    )
    .unwrap();
    let mach = d.join("m.toml");
    let o = bin!()
        .args(["machine", "show", "thunderx2", "--format", "toml"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(&mach, &o.stdout).unwrap();
    let pb = std::fs::read(&prof).unwrap();
    let mb = std::fs::read(&mach).unwrap();
    let inputs = [(prof.as_path(), pb.clone()), (mach.as_path(), mb.clone())];
    for out in [&prof, &mach] {
        let a = [
            OsStr::new("roofline"),
            OsStr::new("-m"),
            mach.as_os_str(),
            OsStr::new("-p"),
            prof.as_os_str(),
            OsStr::new("-o"),
            out.as_os_str(),
        ];
        refused_intact(
            &mut t,
            &format!("roofline -o {}", out.display()),
            &a,
            &inputs,
        );
    }
    let chart = d.join("x.svg");
    let a = [
        OsStr::new("roofline"),
        OsStr::new("-m"),
        mach.as_os_str(),
        OsStr::new("-p"),
        prof.as_os_str(),
        OsStr::new("--svg"),
        chart.as_os_str(),
        OsStr::new("-o"),
        chart.as_os_str(),
    ];
    refused_intact(&mut t, "roofline --svg X -o X", &a, &inputs);
    t.check(!chart.exists(), || "--svg X -o X wrote X".into());
    // explore: -o naming its scenario, or a profile the scenario names.
    let sc = d.join("sc");
    std::fs::create_dir(&sc).unwrap();
    for e in std::fs::read_dir(repo_root().join("examples/scenarios")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), sc.join(e.file_name())).unwrap();
    }
    let scenario = sc.join("tx2-sve-hbm.toml");
    let named = sc.join("sve-128.json");
    let intact = [
        (scenario.as_path(), std::fs::read(&scenario).unwrap()),
        (named.as_path(), std::fs::read(&named).unwrap()),
    ];
    for out in [&scenario, &named] {
        let a = [
            OsStr::new("explore"),
            scenario.as_os_str(),
            OsStr::new("-o"),
            out.as_os_str(),
        ];
        refused_intact(
            &mut t,
            &format!("explore -o {}", out.display()),
            &a,
            &intact,
        );
    }
    // Another file is written as before.
    let ok = d.join("explore.txt");
    let o = bin!()
        .arg("explore")
        .arg(&scenario)
        .arg("-o")
        .arg(&ok)
        .output()
        .unwrap();
    t.check(o.status.success() && ok.exists(), || {
        format!(
            "explore -o another file: {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    t.report("outputs over inputs");
}

/// A working directory whose name is not UTF-8 (Latin-1 `caf\xe9`, which `cd` leaves in
/// `PWD`) and a recorded variable that is not UTF-8: `record`, `counters run` and any
/// `--record` panicked reading the environment (exit 101). Each now runs to its own end,
/// and what the store keeps of such bytes is marked with U+FFFD.
#[test]
fn a_working_directory_named_in_latin1_is_no_fault() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let latin1 = dir.path().join(OsStr::from_bytes(b"caf\xe9"));
    std::fs::create_dir(&latin1).unwrap();
    let db = dir.path().join("h.db");
    let mut t = Tally::default();
    let run = |args: &[String]| -> Output {
        bin!()
            .current_dir(&latin1)
            .env("PWD", &latin1)
            .env("OMP_PLACES", OsStr::from_bytes(b"cores(caf\xe9)"))
            .args(args)
            .output()
            .unwrap()
    };
    let db_arg = db.display().to_string();
    // Relative output files: into the directory itself.
    let mut roofline = roofline_args(Path::new("roof.txt"));
    roofline.extend(["--record".into(), "--db".into(), db_arg.clone()]);
    for (args, ok_codes) in [
        (
            vec![
                "record".into(),
                "--db".into(),
                db_arg.clone(),
                "--".into(),
                "true".into(),
            ],
            &[0][..],
        ),
        (roofline, &[0]),
        // Without hardware counters here, `counters run` may end with an environment
        // limit (exit 3); it must not panic.
        (
            ["counters", "run", "--", "true"].map(String::from).to_vec(),
            &[0, 3],
        ),
    ] {
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        t.check(
            o.status.code().is_some_and(|c| ok_codes.contains(&c)) && !err.contains("panicked"),
            || format!("{args:?}: exit {:?}\n{err}", o.status.code()),
        );
    }
    // Both recorded runs keep the variable, its bytes marked, and the directory.
    let o = bin!()
        .args(["history", "list", "--format", "json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    let runs = v.as_array().cloned().unwrap_or_default();
    t.check(runs.len() == 2, || {
        format!("{} runs stored, not 2", runs.len())
    });
    for r in &runs {
        let rec = &r["record"];
        t.check(rec["env"]["OMP_PLACES"] == "cores(caf\u{FFFD})", || {
            format!("OMP_PLACES stored as {}", rec["env"]["OMP_PLACES"])
        });
        t.check(
            rec["cwd"]
                .as_str()
                .is_some_and(|c| c.ends_with("/caf\u{FFFD}")),
            || format!("cwd stored as {}", rec["cwd"]),
        );
    }
    t.report("a working directory named in Latin-1");
}

/// Whether process `pid` still runs (a zombie counts as gone).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next())
                != Some("Z")
        })
        .unwrap_or(false)
}

#[test]
fn kill9_of_trace_and_profile_takes_the_traced_command_along() {
    if !is_root() {
        println!("skipped: trace and profile need root (eBPF)");
        return;
    }
    for cmd in ["trace", "profile"] {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        // The traced shell writes its pid, then becomes a long sleep.
        let script = format!("echo $$ > {}; exec sleep 60", pidfile.display());
        let mut c = bin!()
            .args([cmd, "-o"])
            .arg(dir.path().join("out.json"))
            .args(["--", "sh", "-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        let pid = loop {
            if let Some(p) = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                break Some(p);
            }
            if t0.elapsed() > Duration::from_secs(60) || c.try_wait().unwrap().is_some() {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let Some(pid) = pid else {
            let _ = c.kill();
            let o = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            // eBPF refused by this kernel or VM: nothing was traced, nothing to take along.
            assert!(
                !o.status.success(),
                "{cmd}: the traced command never started: {err}"
            );
            println!("skipped {cmd}: it could not trace here: {err}");
            continue;
        };
        assert!(running(pid), "{cmd}: the traced command is not running");
        c.kill().unwrap(); // SIGKILL
        c.wait().unwrap();
        let t0 = Instant::now();
        while running(pid) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let left = running(pid);
        if left {
            // SAFETY: killing the sleep this test started, so it does not outlive the test.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        assert!(
            !left,
            "{cmd}: the traced command kept running after kill -9 of hpcscope"
        );
    }
}

#[test]
fn trace_stops_its_command_with_the_signal_it_promises() {
    if !is_root() {
        println!("skipped: trace needs root (eBPF)");
        return;
    }
    // `--duration` ends the command with SIGTERM, as its help says: the shell's TERM trap
    // runs and its status is passed on (SIGINT would have killed it: 130).
    let o = bin!()
        .args(["trace", "--duration", "1", "--"])
        .args(["sh", "-c", "trap 'kill $!; exit 7' TERM; sleep 20 & wait"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("not permitted") || err.contains("BTF") {
        println!("skipped: eBPF refused here: {err}");
        return;
    }
    assert_eq!(o.status.code(), Some(7), "{err}");
    // SIGTERM to hpcscope reaches the command as SIGTERM: exit 143 (as mix and record), and
    // the note names the signal (not Ctrl-C).
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!("echo $$ > {}; exec sleep 30", pidfile.display());
    let c = bin!()
        .args(["trace", "--", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !pidfile.exists() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling the hpcscope process this test started.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let o = c.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(143), "{err}");
    assert!(out.contains("note: stopped by SIGTERM"), "{out}");
}
