//! Sweeps as Slurm job arrays, end to end on a single-node Slurm (Debian's slurm-wlm) that
//! the test starts itself: a configuration in a temporary directory (no munge: auth/none,
//! proctrack/linuxproc, task/none, cons_tres, this host with 2 CPUs, state in the temporary
//! directory, ports chosen free), slurmctld and slurmd in the foreground, the scripts of
//! `record --slurm` and `explore --slurm` submitted with `bash SCRIPT`, and the merged
//! results checked once the merge job has run. The daemons are stopped at the end.
//!
//! When Slurm cannot start here (not root, not installed, a daemon refusing this machine's
//! cgroups) the test prints `skipping: ` and the exact reason, with the daemons' logs.

mod common;
use common::{is_root, which};

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const HPCSCOPE: &str = env!("CARGO_BIN_EXE_hpcscope");

/// A running single-node cluster; stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    daemons: Vec<Child>,
}

fn sbin(name: &str) -> Option<PathBuf> {
    which(name).or_else(|| {
        ["/usr/sbin", "/usr/bin", "/usr/local/sbin"]
            .iter()
            .map(|d| Path::new(d).join(name))
            .find(|p| p.is_file())
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn tail(p: &Path, n: usize) -> String {
    let t = std::fs::read_to_string(p).unwrap_or_default();
    let l: Vec<&str> = t.lines().collect();
    l[l.len().saturating_sub(n)..].join("\n")
}

impl Cluster {
    fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(sbin(prog).unwrap_or_else(|| prog.into()));
        c.env("SLURM_CONF", &self.conf);
        c
    }

    fn logs(&self) -> String {
        let d = self.dir.path();
        format!(
            "--- slurmctld log\n{}\n--- slurmd log\n{}",
            tail(&d.join("slurmctld.log"), 15),
            tail(&d.join("slurmd.log"), 15)
        )
    }

    /// The node's state as `sinfo` says it (`idle`, `down*`...).
    fn node_state(&self) -> String {
        self.cmd("sinfo")
            .args(["-h", "-o", "%T"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    }

    /// Starts slurmctld and slurmd; `Err` says exactly why the cluster cannot run here.
    fn start() -> Result<Cluster, String> {
        if !is_root() {
            return Err("not root: slurmd must run as root to start jobs".into());
        }
        for tool in [
            "slurmctld",
            "slurmd",
            "sbatch",
            "squeue",
            "sinfo",
            "scancel",
        ] {
            if sbin(tool).is_none() {
                return Err(format!(
                    "{tool} is not installed (scripts/setup.sh installs slurm-wlm)"
                ));
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for sub in ["state", "spool"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap_or_default()
            .trim()
            .split('.')
            .next()
            .unwrap_or("localhost")
            .to_string();
        // Slurm's cgroup plugin is loaded even with proctrack/linuxproc: pick the version
        // this machine mounts (cgroup v2 alone at /sys/fs/cgroup, else v1).
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let v2_only = mounts.lines().any(|l| {
            l.split_whitespace().nth(1) == Some("/sys/fs/cgroup") && l.contains("cgroup2")
        });
        let conf = d.join("slurm.conf");
        std::fs::write(
            d.join("cgroup.conf"),
            format!(
                "CgroupPlugin={}\n",
                if v2_only { "cgroup/v2" } else { "cgroup/v1" }
            ),
        )
        .unwrap();
        std::fs::write(
            &conf,
            format!(
                "ClusterName=hpcscopetest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmctldPort={ctld}
SlurmdPort={slurmd}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
NodeName={host} NodeAddr=127.0.0.1 CPUs=2 RealMemory=500 State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
",
                ctld = free_port(),
                slurmd = free_port(),
                d = d.display()
            ),
        )
        .unwrap();
        let mut c = Cluster {
            dir,
            conf,
            daemons: Vec::new(),
        };
        for daemon in ["slurmctld", "slurmd"] {
            let child = c
                .cmd(daemon)
                .arg("-D")
                .arg("-f")
                .arg(&c.conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start {daemon}: {e}"))?;
            c.daemons.push(child);
            std::thread::sleep(Duration::from_millis(500));
        }
        let t = Instant::now();
        loop {
            for (i, ch) in c.daemons.iter_mut().enumerate() {
                if let Ok(Some(st)) = ch.try_wait() {
                    return Err(format!(
                        "{} exited at start ({st}):\n{}",
                        ["slurmctld", "slurmd"][i],
                        c.logs()
                    ));
                }
            }
            if c.node_state() == "idle" {
                return Ok(c);
            }
            if t.elapsed() > Duration::from_secs(30) {
                return Err(format!(
                    "the node is not idle after 30 s (sinfo says '{}'):\n{}",
                    c.node_state(),
                    c.logs()
                ));
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Runs a generated script (`bash SCRIPT`), then waits for the merged result of the
    /// array it submitted.
    fn submit_and_wait(&self, script: &Path) -> (String, PathBuf) {
        let o = self.cmd("bash").arg(script).output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{}\n{}", show(&o), self.logs());
        // "hpcscope: job array N (...) and merge job M; results in DIR"
        let run = out
            .rsplit_once("results in ")
            .map(|x| PathBuf::from(x.1.trim()))
            .unwrap_or_else(|| panic!("{out}"));
        let merged = run.join("merged.json");
        let t = Instant::now();
        while !merged.exists() {
            if t.elapsed() > Duration::from_secs(240) {
                let q = self.cmd("squeue").output().unwrap();
                panic!(
                    "no {} after 4 minutes\n{}\n{}",
                    merged.display(),
                    show(&q),
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        (out, run)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.cmd("scancel").args(["--user", "root"]).output();
        for ch in self.daemons.iter_mut().rev() {
            // SAFETY: signalling our own child.
            unsafe {
                libc_kill(ch.id() as i32, 15);
            }
        }
        let t = Instant::now();
        for ch in &mut self.daemons {
            while t.elapsed() < Duration::from_secs(10) {
                if let Ok(Some(_)) = ch.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = ch.kill();
            let _ = ch.wait();
        }
    }
}

unsafe extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

fn show(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn hpcscope(args: &[&str]) -> Output {
    Command::new(HPCSCOPE).args(args).output().unwrap()
}

#[test]
fn job_arrays_run_and_merge_on_a_single_node_slurm() {
    let cluster = match Cluster::start() {
        Ok(c) => c,
        Err(why) => {
            println!("skipping: Slurm cannot run here: {why}");
            return;
        }
    };
    let work = cluster.dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let runs = work.join("runs");
    let s = |p: &Path| p.to_str().unwrap().to_string();

    // Repetitions of an MPI job: each array task runs 2 ranks under srun (Slurm's own
    // rank variables), then the merge job puts the repetitions side by side.
    match common::mpi_program() {
        Err(why) => println!("skipping the MPI repetitions: {why}"),
        Ok(prog) => {
            let script = work.join("record.sh");
            let o = hpcscope(&[
                "record",
                "-n",
                "2",
                "--slurm",
                &s(&script),
                "--run-dir",
                &s(&runs),
                "--sbatch=--ntasks=2",
                "--launcher",
                "srun --mpi=pmix",
                "--",
                &s(&prog),
                "2",
                "5",
            ]);
            assert!(o.status.success(), "{}", show(&o));
            let (_, run) = cluster.submit_and_wait(&script);
            let m: serde_json::Value =
                serde_json::from_slice(&std::fs::read(run.join("merged.json")).unwrap()).unwrap();
            let jobs = m["jobs"].as_array().unwrap();
            assert_eq!(jobs.len(), 2, "{m:#}\n{}", cluster.logs());
            for j in jobs {
                assert_eq!(j["complete"], true, "{j:#}");
                assert_eq!(j["launcher"], "slurm", "{j:#}");
                assert_eq!(j["size"], 2);
                // Each repetition is its own job step: slurm-<job>.<step>.
                assert!(j["job_id"].as_str().unwrap().starts_with("slurm-"), "{j}");
                // 2 iterations of 5 and 10 ms: the slowest rank takes at least 20 ms.
                assert!(j["runtime_s"].as_f64().unwrap() >= 0.02, "{j}");
            }
            assert_ne!(jobs[0]["job_id"], jobs[1]["job_id"]);
            assert_eq!(m["runtime"]["jobs"], 2, "{m:#}");
            assert!(run.join("report.html").is_file());
        }
    }

    // A sweep: one array task per design point; the merged sweep is the direct one.
    let scenario =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios/tx2-sve-hbm.toml");
    let script = work.join("explore.sh");
    let o = hpcscope(&[
        "explore",
        &s(&scenario),
        "--slurm",
        &s(&script),
        "--run-dir",
        &s(&runs),
        "--max-parallel",
        "2",
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.contains("--array=0-19%2"), "{text}");
    let (_, run) = cluster.submit_and_wait(&script);
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("merged.json")).unwrap()).unwrap();
    assert_eq!(m["complete"], true, "{m:#}\n{}", cluster.logs());
    assert_eq!(m["size"], 20);
    let direct = hpcscope(&["explore", &s(&scenario), "--format", "json"]);
    assert!(direct.status.success());
    let d: serde_json::Value = serde_json::from_slice(&direct.stdout).unwrap();
    assert_eq!(
        m["sweep"]["points"], d["points"],
        "the merged sweep differs"
    );

    // A run directory with a space, quotes, `#` and `%`, which `#SBATCH --output=` took
    // raw (sbatch read `--output=.../my` and the rest as other words): the tasks' and the
    // merge's logs are in it, under their own names.
    let hostile = work.join("my runs/it's \"q\" #1 100%");
    let script = work.join("hostile.sh");
    let o = hpcscope(&[
        "record",
        "-n",
        "2",
        "--slurm",
        &s(&script),
        "--run-dir",
        &s(&hostile),
        "--",
        "true",
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let (_, run) = cluster.submit_and_wait(&script);
    assert_eq!(run.parent(), Some(hostile.as_path()), "{}", run.display());
    let logs: Vec<String> = std::fs::read_dir(&hostile)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("slurm-"))
        .collect();
    for end in ["_0.out", "_1.out", "-merge.out"] {
        assert!(
            logs.iter().any(|n| n.ends_with(end)),
            "no slurm-*{end} in {}: {logs:?}\n{}",
            hostile.display(),
            cluster.logs()
        );
    }
}

/// A newline in `--run-dir` (or in the working directory's path, which a relative one
/// starts with) was written raw into the script's `# Results:` comment and `#SBATCH
/// --output=` line, and `bash SCRIPT` ran the text after it; the script was made 0755
/// whatever the umask. Such a run directory is refused (exit 2, nothing written); a
/// working directory with a newline is quoted on its line; the mode follows the umask.
/// No Slurm is needed: a stand-in `sbatch` records its arguments.
#[test]
fn hostile_paths_cannot_inject_into_the_script_and_its_mode_follows_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bin = d.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let log = d.join("sbatch.log");
    std::fs::write(
        bin.join("sbatch"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" >> '{}'\necho 4242\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("sbatch"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let evil = d.join("w\ntouch pwned;");
    std::fs::create_dir(&evil).unwrap();
    let record = |cwd: &Path, script: &Path, run_dir: &Path, umask: &str| -> Output {
        Command::new("sh")
            .arg("-c")
            .arg(format!("umask {umask}; exec \"$@\""))
            .arg("sh")
            .arg(HPCSCOPE)
            .args(["record", "-n", "2", "--slurm"])
            .arg(script)
            .arg("--run-dir")
            .arg(run_dir)
            .args(["--", "true"])
            .current_dir(cwd)
            .output()
            .unwrap()
    };
    // The text after a newline of the run directory never becomes a command: the run
    // directory is refused, whether the newline is its own or the working directory's.
    for (cwd, run_dir) in [
        (d, PathBuf::from("runs\ntouch pwned;")),
        (evil.as_path(), PathBuf::from("runs")),
    ] {
        let script = d.join("sweep.sh");
        let o = record(cwd, &script, &run_dir, "022");
        let err = String::from_utf8_lossy(&o.stderr);
        if script.exists() {
            // Before the fix: show what the script did.
            let _ = Command::new("bash")
                .arg(&script)
                .current_dir(d)
                .env("PATH", &path)
                .output();
        }
        assert!(!d.join("pwned").exists(), "the script ran injected text");
        assert_eq!(o.status.code(), Some(2), "{}", show(&o));
        assert!(
            err.contains("control character") && err.contains("--run-dir"),
            "{err}"
        );
        assert!(!script.exists(), "a refused script was written");
    }
    // From that working directory, an absolute run directory with a space, quotes, `#`
    // and `%`: the script runs its submit step and passes each path through whole.
    let runs = d.join("my runs/it's \"q\" #1 100%");
    let script = d.join("ok.sh");
    let o = record(&evil, &script, &runs, "077");
    assert!(o.status.success(), "{}", show(&o));
    let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "umask 077: the script is {mode:o}");
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(
        text.contains(r#"#SBATCH --output="#)
            && text.contains(r#"it's \"q\" \#1 100%%/slurm-%A_%a.out""#),
        "{text}"
    );
    let o = Command::new("bash")
        .arg(&script)
        .current_dir(d)
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    assert!(!d.join("pwned").exists() && !evil.join("pwned").exists());
    assert!(runs.is_dir(), "the run directory was not made:\n{text}");
    let args = std::fs::read_to_string(&log).unwrap();
    assert!(
        args.lines().any(|l| l
            == format!(
                "--output={}/slurm-%j-merge.out",
                runs.display().to_string().replace('%', "%%")
            )),
        "{args}"
    );
    // Rewritten under umask 022, an existing private script stays private; a new one is
    // 0755.
    let o = record(&evil, &script, &runs, "022");
    assert!(o.status.success(), "{}", show(&o));
    let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "an existing 0700 script became {mode:o}");
    let fresh = d.join("fresh.sh");
    assert!(record(&evil, &fresh, &runs, "022").status.success());
    let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755, "umask 022: the script is {mode:o}");
}
