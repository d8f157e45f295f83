//! The reference suite of `hpcscope trace` and `profile`: workloads nobody here wrote,
//! measured by hpcscope and by the reference tools side by side, each metric with its
//! verdict.
//!
//! Wherever it can, a reference tool runs *inside* the hpcscope trace, as the traced
//! command, so both see the same run: `strace -f -c` for syscall counts, `perf stat` for
//! task-clock, page faults and context switches, `perf record` for profile shares, bpftrace
//! for syscall counts by command name. hpcscope's figures are then those of the tool's
//! descendants (the workload), the tool's own process left out. /proc gives the kernel's
//! counts for a process traced by PID, the kernel's disk statistics the block requests, dd
//! its own byte counts.
//!
//! Verdicts: syscall counts exact; on-CPU time within 5 % of perf's task-clock; profile
//! self shares within 3 points of perf record's at the same frequency; no process of 2,000
//! forks with anything lost. Shared by `examples/reference` (the whole suite, run by hand
//! from `bench/trace/reference.sh`) and `tests/reference.rs` (the quick deterministic part).

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use hpcscope_trace::{Probes, Target, TraceOptions, TraceOutcome, trace};

/// The outcome of one comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Within the bound.
    Pass(String),
    /// Outside it.
    Fail(String),
    /// Shown side by side, no bound (a tool that cannot see it, a figure that never
    /// returns).
    Info(String),
}

impl Verdict {
    pub fn label(&self) -> String {
        match self {
            Verdict::Pass(s) => format!("ok ({s})"),
            Verdict::Fail(s) => format!("FAIL ({s})"),
            Verdict::Info(s) => format!("info ({s})"),
        }
    }
    pub fn failed(&self) -> bool {
        matches!(self, Verdict::Fail(_))
    }
}

/// One line of the table.
#[derive(Debug, Clone)]
pub struct Check {
    pub workload: String,
    pub metric: String,
    pub hpcscope: String,
    pub reference: String,
    pub tool: String,
    pub verdict: Verdict,
}

/// A workload: a shell script run in its own directory.
#[derive(Debug, Clone)]
pub struct Workload {
    pub name: &'static str,
    pub script: String,
    pub dir: PathBuf,
    /// Programs it needs besides sh.
    pub needs: Vec<&'static str>,
    /// CPU-heavy enough for a profile comparison.
    pub profile: bool,
    /// A command name whose syscalls bpftrace counts.
    pub comm: Option<&'static str>,
}

pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool} >/dev/null 2>&1")])
        .status()
        .is_ok_and(|s| s.success())
}

fn sh(dir: &Path, script: &str) -> std::io::Result<std::process::Output> {
    Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .output()
}

/// Creates the inputs under `root` and returns the workloads; `quick` keeps the cheap,
/// deterministic ones at a smaller size.
pub fn workloads(root: &Path, quick: bool) -> Vec<Workload> {
    let d = |n: &str| {
        let p = root.join(n);
        std::fs::create_dir_all(&p).unwrap();
        p
    };
    let forks = if quick { 200 } else { 2000 };
    let mut w = vec![
        Workload {
            name: "tar",
            // The tree of this machine's shared documentation: many small files.
            script:
                "tar cf archive.tar -C /usr/share/doc . && tar tf archive.tar | wc -l > count.txt"
                    .into(),
            dir: d("tar"),
            needs: vec!["tar", "wc"],
            profile: false,
            comm: Some("tar"),
        },
        Workload {
            name: "forks",
            script: format!("i=0; while [ $i -lt {forks} ]; do /bin/true; i=$((i+1)); done"),
            dir: d("forks"),
            needs: vec![],
            profile: false,
            comm: Some("true"),
        },
        Workload {
            name: "dd",
            script: if quick {
                "dd if=/dev/zero of=data bs=1M count=8 status=none".into()
            } else {
                "dd if=/dev/zero of=data bs=1M count=64 oflag=direct status=none".into()
            },
            dir: d("dd"),
            needs: vec!["dd"],
            profile: false,
            comm: Some("dd"),
        },
    ];
    if quick {
        return w;
    }
    let data = d("data");
    // 24 MiB of text (a repeated man page corpus) for xz and sort.
    let _ = sh(
        &data,
        "[ -s corpus.txt ] || { i=0; while [ $(wc -c < corpus.txt 2>/dev/null || echo 0) -lt 25165824 ]; do \
         cat /usr/share/common-licenses/* >> corpus.txt; i=$((i+1)); done; }",
    );
    let corpus = data.join("corpus.txt");
    w.extend([
        Workload {
            name: "git",
            script: "rm -rf repo && git init -q repo && cp -r /usr/share/common-licenses repo/ && cd repo \
                     && git add -A && git -c user.name=t -c user.email=t@t commit -qm import \
                     && git log --oneline | wc -l > ../count.txt && git gc -q"
                .into(),
            dir: d("git"),
            needs: vec!["git"],
            profile: false,
            comm: None,
        },
        Workload {
            name: "make -j2",
            script: "rm -rf b && mkdir b && cd b && for i in 1 2 3 4 5 6 7 8; do \
                     printf 'int f%s(int x){int s=0;for(int i=0;i<x;i++)s+=i*%s;return s;}\\n' $i $i > f$i.c; done \
                     && printf 'int main(void){return 0;}\\n' > main.c \
                     && printf 'OBJ=f1.o f2.o f3.o f4.o f5.o f6.o f7.o f8.o main.o\\nprog: $(OBJ)\\n\\tcc -o prog $(OBJ)\\n%%.o: %%.c\\n\\tcc -O2 -c $<\\n' > Makefile \
                     && make -s -j2"
                .into(),
            dir: d("make"),
            needs: vec!["make", "cc"],
            profile: false,
            comm: None,
        },
        Workload {
            name: "xz -T2",
            script: format!("xz -T2 -6 -c {} > out.xz", corpus.display()),
            dir: d("xz"),
            needs: vec!["xz"],
            profile: true,
            comm: Some("xz"),
        },
        Workload {
            name: "sort (pthreads)",
            // Four copies of the corpus (96 MiB) through a 64 MiB buffer: two threads
            // sorting, temporary files merged.
            script: format!(
                "c={}; cat $c $c $c $c | sort --parallel=2 -S 64M -o sorted.txt",
                corpus.display()
            ),
            dir: d("sort"),
            needs: vec!["sort"],
            profile: true,
            comm: Some("sort"),
        },
        Workload {
            name: "python",
            script: "python3 -c 'import hashlib\nh=hashlib.sha256()\nfor i in range(2000000): h.update(str(i*i).encode())\nprint(sum(i*i for i in range(10000000)), h.hexdigest()[:8])' > out.txt"
                .into(),
            dir: d("python"),
            needs: vec!["python3"],
            profile: true,
            comm: None,
        },
    ]);
    w
}

/// Traces `cmd` (a reference tool wrapping the workload) with `probes`, from `dir`.
fn traced(dir: &Path, cmd: Vec<String>, probes: Probes) -> Result<TraceOutcome, String> {
    // The launched command inherits the working directory.
    let old = std::env::current_dir().map_err(|e| e.to_string())?;
    std::env::set_current_dir(dir).map_err(|e| e.to_string())?;
    let r = trace(&TraceOptions {
        target: Target::Command(cmd),
        probes,
        duration: Some(Duration::from_secs(600)),
        quiet: false,
    });
    std::env::set_current_dir(old).map_err(|e| e.to_string())?;
    r.map_err(|e| e.to_string())
}

/// The processes of the workload: everything traced but the reference tool itself (the
/// launched command, named `tool`).
fn workload_pids(out: &TraceOutcome, tool: &str) -> BTreeSet<u32> {
    out.report
        .processes
        .iter()
        .filter(|p| p.comm != tool)
        .map(|p| p.pid)
        .collect()
}

fn sh_cmd(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

/// Parses `strace -c` output: syscall -> (calls, errors).
pub fn parse_strace(text: &str) -> BTreeMap<String, (u64, u64)> {
    let mut out = BTreeMap::new();
    for l in text.lines() {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() < 5 || t[0].starts_with('%') || t[0].starts_with('-') {
            continue;
        }
        let name = t[t.len() - 1];
        if name == "total" {
            continue;
        }
        let Ok(calls) = t[3].parse::<u64>() else {
            continue;
        };
        let errors = if t.len() >= 6 {
            t[4].parse().unwrap_or(0)
        } else {
            0
        };
        out.insert(name.to_string(), (calls, errors));
    }
    out
}

/// The syscall counts of `w` as hpcscope (around `strace -f -c`, the workload's processes
/// only) and strace saw them; `None` when the trace failed (with why).
fn strace_counts(w: &Workload) -> Result<(Counts, Counts), String> {
    let file = w.dir.join("strace.txt");
    let mut cmd: Vec<String> = vec![
        "strace".into(),
        "-f".into(),
        "-c".into(),
        "-o".into(),
        file.display().to_string(),
        "--".into(),
    ];
    cmd.extend(sh_cmd(&w.script));
    let out = traced(
        &w.dir,
        cmd,
        Probes {
            syscalls: true,
            ..Probes::default()
        },
    )?;
    let theirs = parse_strace(&std::fs::read_to_string(&file).unwrap_or_default());
    let pids = workload_pids(&out, "strace");
    let mut ours = Counts::new();
    for p in out
        .report
        .processes
        .iter()
        .filter(|p| pids.contains(&p.pid))
    {
        for s in &p.syscalls {
            let e = ours.entry(s.name.clone()).or_default();
            e.0 += s.count;
            e.1 += s.errors;
        }
    }
    Ok((ours, theirs))
}

/// Syscall -> (calls, errors).
pub type Counts = BTreeMap<String, (u64, u64)>;

/// strace's own system calls in the child it forks, before that child executes the
/// workload: hpcscope follows the child from its fork, strace counts from its exec. Measured
/// on an empty workload (`sh -c true`): what hpcscope saw beyond strace there.
pub fn strace_child_calls(root: &Path) -> Result<(Counts, Check), String> {
    let w = Workload {
        name: "calibration",
        script: "true".into(),
        dir: root.join("calibration"),
        needs: vec![],
        profile: false,
        comm: None,
    };
    std::fs::create_dir_all(&w.dir).map_err(|e| e.to_string())?;
    let (ours, theirs) = strace_counts(&w)?;
    let mut extra = Counts::new();
    for (k, o) in &ours {
        let t = theirs.get(k).copied().unwrap_or_default();
        if o.0 > t.0 || o.1 > t.1 {
            extra.insert(
                k.clone(),
                (o.0.saturating_sub(t.0), o.1.saturating_sub(t.1)),
            );
        }
    }
    let list = extra
        .iter()
        .map(|(k, v)| format!("{k} {}", v.0))
        .collect::<Vec<_>>()
        .join(", ");
    let c = Check {
        workload: "sh -c true".into(),
        metric: "strace's child before its exec (subtracted below)".into(),
        hpcscope: list,
        reference: "-".into(),
        tool: "strace -f -c".into(),
        verdict: Verdict::Info("strace counts from the exec".into()),
    };
    Ok((extra, c))
}

/// Syscall counts of `w`: hpcscope around `strace -f -c`, the workload's processes only,
/// less strace's own calls in its child before the exec (`offset`).
pub fn syscalls_vs_strace(w: &Workload, offset: &Counts) -> Vec<Check> {
    let check = |metric: &str, ours: String, theirs: String, v: Verdict| Check {
        workload: w.name.into(),
        metric: metric.into(),
        hpcscope: ours,
        reference: theirs,
        tool: "strace -f -c".into(),
        verdict: v,
    };
    let (mut ours, theirs) = match strace_counts(w) {
        Ok(x) => x,
        Err(e) => {
            return vec![check(
                "syscalls",
                e,
                "-".into(),
                Verdict::Fail("trace".into()),
            )];
        }
    };
    for (k, off) in offset {
        if let Some(e) = ours.get_mut(k) {
            e.0 = e.0.saturating_sub(off.0);
            e.1 = e.1.saturating_sub(off.1);
        }
    }
    ours.retain(|_, v| *v != (0, 0));
    let names: BTreeSet<&String> = ours.keys().chain(theirs.keys()).collect();
    let (mut exact, mut differ) = (0, Vec::new());
    let mut rows = Vec::new();
    for n in names {
        let o = ours.get(n).copied().unwrap_or_default();
        let t = theirs.get(n).copied().unwrap_or_default();
        if o == t {
            exact += 1;
            continue;
        }
        let v = match n.as_str() {
            // They never return: the probes count calls at their return.
            "exit" | "exit_group" if o.0 == 0 => {
                Verdict::Info("never returns: counted at return by hpcscope".into())
            }
            // A futex wait of a thread that strace stops (ptrace) returns an error and is
            // called again; the kernel ran both calls, strace shows one. Only when every
            // extra call is an error return (bpftrace, without ptrace, is exact below).
            "futex" if o.0 > t.0 && o.0 - t.0 == o.1.saturating_sub(t.1) => Verdict::Info(
                "waits interrupted by strace's own stops, each extra call an error return".into(),
            ),
            _ => {
                differ.push(n.clone());
                Verdict::Fail("exact expected".into())
            }
        };
        rows.push(check(
            &format!("syscall {n} calls/errors"),
            format!("{}/{}", o.0, o.1),
            format!("{}/{}", t.0, t.1),
            v,
        ));
    }
    let total = |m: &BTreeMap<String, (u64, u64)>| m.values().map(|v| v.0).sum::<u64>();
    let exits = |m: &BTreeMap<String, (u64, u64)>| {
        m.iter()
            .filter(|(k, _)| *k == "exit" || *k == "exit_group")
            .map(|(_, v)| v.0)
            .sum::<u64>()
    };
    let mut first = vec![check(
        "syscalls, total calls (exits aside)",
        total(&ours).saturating_sub(exits(&ours)).to_string(),
        total(&theirs).saturating_sub(exits(&theirs)).to_string(),
        if differ.is_empty() && !theirs.is_empty() {
            Verdict::Pass(format!("{exact} kinds exact"))
        } else if theirs.is_empty() {
            Verdict::Fail("no strace output".into())
        } else {
            Verdict::Fail(format!("{} kinds differ", differ.len()))
        },
    )];
    first.extend(rows);
    first
}

/// Parses `perf stat -x,` output: event -> value.
pub fn parse_perf_stat(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Some((f.get(2)?.to_string(), f.first()?.parse().ok()?))
        })
        .collect()
}

fn within(ours: f64, theirs: f64, rel: f64) -> Verdict {
    let d = if theirs == 0.0 {
        if ours == 0.0 { 0.0 } else { f64::INFINITY }
    } else {
        (ours - theirs).abs() / theirs
    };
    let s = format!(
        "{:+.1} %, bound {:.0} %",
        100.0 * (ours - theirs) / theirs.max(1e-9),
        rel * 100.0
    );
    if d <= rel {
        Verdict::Pass(s)
    } else {
        Verdict::Fail(s)
    }
}

/// perf's child before its exec, as hpcscope saw it: on-CPU ms, page faults, switches.
pub type PerfOffset = (f64, f64, f64);

/// A wrapper that runs a command and writes the run time of its children (and their
/// descendants) as the kernel counted it: getrusage(RUSAGE_CHILDREN), user + system, in
/// microseconds (the kernel scales both so that their sum is the tasks' exact run time).
const RUSAGE_C: &str = r#"
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	pid_t p = fork();
	if (p == 0) {
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	int st = 0;
	waitpid(p, &st, 0);
	struct rusage r;
	getrusage(RUSAGE_CHILDREN, &r);
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 2;
	fprintf(f, "%lld\n", (long long)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000LL +
				     r.ru_utime.tv_usec + r.ru_stime.tv_usec);
	fclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
"#;

/// Builds the rusage wrapper (`hs-rusage`) under `root` with cc.
pub fn build_rusage(root: &Path) -> Option<PathBuf> {
    let src = root.join("hs-rusage.c");
    let bin = root.join("hs-rusage");
    std::fs::write(&src, RUSAGE_C).ok()?;
    Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .ok()?
        .success()
        .then_some(bin)
}

/// What hpcscope saw, in one run, of perf stat's workload, and what perf and the kernel's
/// rusage counted.
#[derive(Debug, Clone, Default)]
pub struct SchedRun {
    /// hpcscope, everything but perf itself: on-CPU ms, faults, switches.
    pub ours: (f64, f64, f64),
    /// hpcscope, the wrapper's descendants only: on-CPU ms.
    pub ours_children_ms: f64,
    /// perf stat: task-clock ms, page-faults, context-switches.
    pub perf: (f64, f64, f64),
    /// getrusage(RUSAGE_CHILDREN) of the wrapper, ms.
    pub rusage_ms: Option<f64>,
    /// Threads of the workload that exited during the trace.
    pub exits: u64,
}

fn sched_run(dir: &Path, script: &str, rusage: &Path) -> Result<SchedRun, String> {
    let file = dir.join("perf-stat.txt");
    let ru = dir.join("rusage.txt");
    let _ = std::fs::remove_file(&ru);
    let mut cmd: Vec<String> = [
        "perf",
        "stat",
        "-x,",
        "-o",
        &file.display().to_string(),
        "-e",
        "task-clock,page-faults,context-switches",
        "--",
        &rusage.display().to_string(),
        &ru.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    cmd.extend(sh_cmd(script));
    let out = traced(
        dir,
        cmd,
        Probes {
            sched: true,
            faults: true,
            ..Probes::default()
        },
    )?;
    let perf = parse_perf_stat(&std::fs::read_to_string(&file).unwrap_or_default());
    let get = |k: &str| perf.get(k).copied().ok_or(format!("no {k} from perf stat"));
    let sum = |f: &dyn Fn(&hpcscope_trace::report::ProcessLevel) -> u64, skip: &[&str]| {
        out.report
            .processes
            .iter()
            .filter(|p| !skip.contains(&p.comm.as_str()))
            .map(f)
            .sum::<u64>() as f64
    };
    Ok(SchedRun {
        ours: (
            sum(&|p| p.on_cpu_ns, &["perf"]) / 1e6,
            sum(&|p| p.minor_faults + p.major_faults, &["perf"]),
            sum(&|p| p.context_switches, &["perf"]),
        ),
        ours_children_ms: sum(&|p| p.on_cpu_ns, &["perf", "hs-rusage"]) / 1e6,
        perf: (
            get("task-clock")?,
            get("page-faults")?,
            get("context-switches")?,
        ),
        exits: out
            .report
            .processes
            .iter()
            .filter(|p| p.comm != "perf")
            .flat_map(|p| &p.threads)
            .filter(|t| t.exited)
            .count() as u64,
        rusage_ms: std::fs::read_to_string(&ru)
            .ok()
            .and_then(|t| t.trim().parse::<f64>().ok())
            .map(|us| us / 1e3),
    })
}

/// perf's child before its exec: hpcscope follows it from its fork, perf counts from the
/// exec. Measured on an empty workload: what hpcscope saw beyond perf there.
pub fn perf_child_calibration(
    root: &Path,
    rusage: &Path,
) -> Result<((f64, f64, f64), Check), String> {
    let dir = root.join("calibration");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let r = sched_run(&dir, "true", rusage)?;
    let off = (
        (r.ours.0 - r.perf.0).max(0.0),
        (r.ours.1 - r.perf.1).max(0.0),
        (r.ours.2 - r.perf.2).max(0.0),
    );
    Ok((
        off,
        Check {
            workload: "sh -c true".into(),
            metric: "perf's child before its exec: on-CPU ms/faults/switches (subtracted below)"
                .into(),
            hpcscope: format!("{:.2}/{:.0}/{:.0}", off.0, off.1, off.2),
            reference: "-".into(),
            tool: "perf stat".into(),
            verdict: Verdict::Info("perf counts from the exec".into()),
        },
    ))
}

/// On-CPU time, page faults and context switches: hpcscope around `perf stat` around the
/// rusage wrapper, less perf's child before its exec (`off`).
pub fn sched_vs_perf_stat(w: &Workload, rusage: &Path, off: (f64, f64, f64)) -> Vec<Check> {
    let check = |metric: &str, ours: String, theirs: String, tool: &str, v: Verdict| Check {
        workload: w.name.into(),
        metric: metric.into(),
        hpcscope: ours,
        reference: theirs,
        tool: tool.into(),
        verdict: v,
    };
    let r = match sched_run(&w.dir, &w.script, rusage) {
        Ok(r) => r,
        Err(e) => {
            return vec![check(
                "on-CPU",
                e,
                "-".into(),
                "perf stat",
                Verdict::Fail("trace".into()),
            )];
        }
    };
    let on = r.ours.0 - off.0;
    let faults = r.ours.1 - off.1;
    let cs = r.ours.2 - off.2;
    let agrees = |a: f64, b: f64| !within(a, b, 0.05).failed();
    // perf's task-clock stops counting a task in its exit (perf_event_exit_task), before
    // its last switch; the kernel's run time (and hpcscope) count to that switch, a few
    // tens of microseconds for /bin/true, several hundred for cc1 or ld (bpftrace,
    // sched_process_exit to the last sched_switch). Where hpcscope is more than 5 % above
    // perf and agrees with the kernel within 5 %, the difference is shown as that.
    let perf_verdict = match (within(on, r.perf.0, 0.05), r.rusage_ms) {
        (Verdict::Fail(why), Some(k))
            if on > r.perf.0 && agrees(r.ours_children_ms, k) && r.exits > 0 =>
        {
            Verdict::Info(format!(
                "{why}: {:.0} us more for each of {} exiting threads: perf stops counting in the exit, the kernel's run time agrees with hpcscope",
                (on - r.perf.0) * 1e3 / r.exits as f64,
                r.exits
            ))
        }
        (v, _) => v,
    };
    let mut v = vec![
        check(
            "on-CPU ms (task-clock)",
            format!("{on:.1}"),
            format!("{:.1}", r.perf.0),
            "perf stat",
            perf_verdict,
        ),
        check(
            "page faults",
            format!("{faults:.0}"),
            format!("{:.0}", r.perf.1),
            "perf stat",
            within(faults, r.perf.1, 0.05),
        ),
        check(
            "context switches",
            format!("{cs:.0}"),
            format!("{:.0}", r.perf.2),
            "perf stat",
            Verdict::Info(format!(
                "{:+.1} %; perf stops counting a task in its exit, before the last switch",
                100.0 * (cs - r.perf.2) / r.perf.2.max(1.0)
            )),
        ),
    ];
    if let Some(k) = r.rusage_ms {
        // The kernel's run time of a task that sleeps and wakes often can run ahead of the
        // time it was switched in (it counts from the scheduler's clock update, which a
        // wake-up can make before the switch); where hpcscope and perf agree and the kernel
        // counts more, that is shown as such.
        let verdict = match within(r.ours_children_ms, k, 0.05) {
            Verdict::Fail(why) if k > r.ours_children_ms && agrees(on, r.perf.0) => {
                Verdict::Info(format!(
                    "{why}: the kernel counts {:.1} ms more than both hpcscope and perf's task-clock",
                    k - r.ours_children_ms
                ))
            }
            v => v,
        };
        v.push(check(
            "on-CPU ms (kernel run time of the children)",
            format!("{:.1}", r.ours_children_ms),
            format!("{k:.1}"),
            "getrusage(RUSAGE_CHILDREN)",
            verdict,
        ));
    }
    v
}

/// Parses `perf report --stdio -q --sort sym` lines: name -> self %.
pub fn parse_perf_report(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for l in text.lines() {
        let t = l.trim();
        let Some((pct, rest)) = t.split_once('%') else {
            continue;
        };
        let Ok(pct) = pct.trim().parse::<f64>() else {
            continue;
        };
        let rest = rest.trim();
        let name = rest
            .strip_prefix("[.]")
            .or_else(|| rest.strip_prefix("[k]"))
            .unwrap_or(rest)
            .trim();
        *out.entry(name.to_string()).or_default() += pct;
    }
    out
}

/// Self shares of the hottest functions: hpcscope's sampling around `perf record` at the
/// same frequency.
pub fn profile_vs_perf_record(w: &Workload, hz: u64) -> Vec<Check> {
    let file = w.dir.join("perf.data");
    let mut cmd: Vec<String> = [
        "perf",
        "record",
        "-q",
        "-e",
        "cpu-clock",
        "-F",
        &hz.to_string(),
        "-g",
        "-o",
        &file.display().to_string(),
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    cmd.extend(sh_cmd(&w.script));
    let check = |metric: &str, ours: String, theirs: String, v: Verdict| Check {
        workload: w.name.into(),
        metric: metric.into(),
        hpcscope: ours,
        reference: theirs,
        tool: format!("perf record -F {hz}"),
        verdict: v,
    };
    let out = match traced(
        &w.dir,
        cmd,
        Probes {
            profile_hz: Some(hz),
            kernel_stacks: true,
            ..Probes::default()
        },
    ) {
        Ok(o) => o,
        Err(e) => {
            return vec![check(
                "profile",
                e,
                "-".into(),
                Verdict::Fail("trace".into()),
            )];
        }
    };
    let perf_out = |args: &[&str]| {
        Command::new("perf")
            .args(args)
            .arg("-i")
            .arg(&file)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let theirs = parse_perf_report(&perf_out(&[
        "report",
        "--no-children",
        "--sort",
        "sym",
        "--stdio",
        "-q",
        "-g",
        "none",
        "--percent-limit",
        "0",
    ]));
    // One line per sample with the comm field alone (ip would add the call chain).
    let perf_samples = perf_out(&["script", "-F", "comm"]).lines().count();
    // The workload's samples: perf's own threads (and its child before the exec) are
    // named perf or perf-exec.
    let prof = out.profile.clone().unwrap_or_default();
    let mine: Vec<&hpcscope_trace::StackSample> = prof
        .samples
        .iter()
        .filter(|s| s.comm != "perf" && s.comm != "perf-exec")
        .collect();
    // perf attributes a sample to the ELF symbol holding its address; hpcscope names the
    // innermost function inlined there (from DWARF). Compared alike: each hpcscope sample
    // goes to its innermost frame that perf also names (the symbol holding the address).
    let total: u64 = mine.iter().map(|s| s.count).sum();
    let mut ours: BTreeMap<String, f64> = BTreeMap::new();
    for s in &mine {
        let leaf = s
            .frames
            .iter()
            .rev()
            .map(|f| f.trim_end_matches("_[k]"))
            .find(|f| theirs.contains_key(*f))
            .or_else(|| s.frames.last().map(|f| f.trim_end_matches("_[k]")))
            .unwrap_or("[unknown]");
        *ours.entry(leaf.to_string()).or_default() += 100.0 * s.count as f64 / total.max(1) as f64;
    }
    let mut top: Vec<(&String, f64)> = theirs.iter().map(|(k, v)| (k, *v)).collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut v = vec![check(
        "samples of the workload",
        total.to_string(),
        perf_samples.to_string(),
        Verdict::Info("two samplers, same frequency".into()),
    )];
    // An address no symbol covers: perf shows it as 0x..., hpcscope as [file+0x...], both
    // the offset in the file.
    let unnamed: BTreeMap<u64, f64> = ours
        .iter()
        .filter_map(|(k, v)| {
            let hex = k
                .strip_prefix('[')?
                .strip_suffix(']')?
                .rsplit_once("+0x")?
                .1;
            Some((u64::from_str_radix(hex, 16).ok()?, *v))
        })
        .collect();
    for (name, t) in top.into_iter().take(5) {
        let addr = name
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok());
        let o = match addr {
            Some(a) => unnamed.get(&a).copied().unwrap_or(0.0),
            None => ours.get(name).copied().unwrap_or(0.0),
        };
        let d = o - t;
        let verdict = if name.starts_with('[') {
            Verdict::Info("unnamed by perf".into())
        } else if d.abs() <= 3.0 {
            Verdict::Pass(format!("{d:+.1} points"))
        } else {
            Verdict::Fail(format!("{d:+.1} points, bound 3"))
        };
        v.push(check(
            &format!("self % {name}"),
            format!("{o:.1}"),
            format!("{t:.1}"),
            verdict,
        ));
    }
    v
}

/// System calls of the workload as hpcscope and bpftrace (the traced command) counted them
/// in one run: bpftrace counts sys_enter per pid (exit and exit_group left out: they never
/// return, and hpcscope counts a call at its return), summed here over the workload's pids.
fn bpftrace_run(dir: &Path, script: &str) -> Result<(u64, u64), String> {
    let file = dir.join("workload.sh");
    std::fs::write(&file, script).map_err(|e| e.to_string())?;
    let captured = dir.join("bpftrace.out");
    let program = "tracepoint:raw_syscalls:sys_enter /args->id != 60 && args->id != 231/ { @[pid] = count(); }";
    // bpftrace prints its maps on stdout at exit: into a file.
    let cmd = sh_cmd(&format!(
        "exec bpftrace -q -e '{program}' -c '/bin/sh {}' > {}",
        file.display(),
        captured.display()
    ));
    let out = traced(
        dir,
        cmd,
        Probes {
            syscalls: true,
            ..Probes::default()
        },
    )?;
    let text = std::fs::read_to_string(&captured).unwrap_or_default();
    let theirs: BTreeMap<u32, u64> = text
        .lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix("@[")?;
            let (pid, n) = l.split_once("]:")?;
            Some((pid.trim().parse().ok()?, n.trim().parse().ok()?))
        })
        .collect();
    if theirs.is_empty() {
        return Err(format!("no counts from bpftrace: {}", text.trim()));
    }
    let pids = workload_pids(&out, "bpftrace");
    let ours: u64 = out
        .report
        .processes
        .iter()
        .filter(|p| pids.contains(&p.pid))
        .flat_map(|p| &p.syscalls)
        .filter(|s| s.name != "exit" && s.name != "exit_group")
        .map(|s| s.count)
        .sum();
    let theirs: u64 = pids.iter().filter_map(|p| theirs.get(p)).sum();
    Ok((ours, theirs))
}

/// bpftrace's child before it runs the workload (it waits for bpftrace to attach):
/// hpcscope sees that wait's system call, bpftrace does not. Measured on `sh -c true`.
pub fn bpftrace_child_calibration(root: &Path) -> Result<(i64, Check), String> {
    let dir = root.join("calibration");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (o, t) = bpftrace_run(&dir, "true")?;
    let off = o as i64 - t as i64;
    Ok((
        off,
        Check {
            workload: "sh -c true".into(),
            metric: "bpftrace's child before the workload: syscalls (subtracted below)".into(),
            hpcscope: off.to_string(),
            reference: "-".into(),
            tool: "bpftrace".into(),
            verdict: Verdict::Info("bpftrace attaches while its child waits".into()),
        },
    ))
}

/// System calls of the workload: hpcscope around bpftrace, less bpftrace's child (`off`).
pub fn syscalls_vs_bpftrace(w: &Workload, off: i64) -> Vec<Check> {
    let check = |ours: String, theirs: String, v: Verdict| Check {
        workload: w.name.into(),
        metric: "syscalls entered (exits aside)".into(),
        hpcscope: ours,
        reference: theirs,
        tool: "bpftrace sys_enter per pid".into(),
        verdict: v,
    };
    match bpftrace_run(&w.dir, &w.script) {
        Ok((o, t)) => {
            let o = o as i64 - off;
            vec![check(
                o.to_string(),
                t.to_string(),
                if o == t as i64 {
                    Verdict::Pass("exact".into())
                } else {
                    Verdict::Fail(format!("{:+}", o - t as i64))
                },
            )]
        }
        Err(e) => vec![check(e, "-".into(), Verdict::Fail("trace".into()))],
    }
}

/// 2,000 (or `n`) forks: every process traced whole, nothing lost.
pub fn forks_lose_nothing(w: &Workload, n: usize) -> Vec<Check> {
    let check = |metric: &str, ours: String, theirs: String, v: Verdict| Check {
        workload: w.name.into(),
        metric: metric.into(),
        hpcscope: ours,
        reference: theirs,
        tool: "the script".into(),
        verdict: v,
    };
    let out = match traced(
        &w.dir,
        sh_cmd(&w.script),
        Probes {
            syscalls: true,
            sched: true,
            faults: true,
            ..Probes::default()
        },
    ) {
        Ok(o) => o,
        Err(e) => return vec![check("forks", e, "-".into(), Verdict::Fail("trace".into()))],
    };
    let trues: Vec<_> = out
        .report
        .processes
        .iter()
        .filter(|p| p.comm == "true")
        .collect();
    let incomplete = trues
        .iter()
        .filter(|p| {
            p.syscalls
                .iter()
                .find(|s| s.name == "execve")
                .is_none_or(|s| s.count != 1)
                || p.threads.is_empty()
                || p.minor_faults == 0
        })
        .count();
    let lost: u64 = out.report.lost.iter().map(|l| l.count).sum();
    vec![
        check(
            "processes traced",
            trues.len().to_string(),
            n.to_string(),
            if trues.len() == n {
                Verdict::Pass("exact".into())
            } else {
                Verdict::Fail("exact expected".into())
            },
        ),
        check(
            "processes with lost or missing counts",
            format!("{incomplete} (lost events: {lost})"),
            "0".into(),
            if incomplete == 0 && lost == 0 && !out.report.partial {
                Verdict::Pass("none".into())
            } else {
                Verdict::Fail(format!("{:?}", out.report.lost))
            },
        ),
        check(
            "largest on-CPU ms of one /bin/true",
            format!(
                "{:.2}",
                trues.iter().map(|p| p.on_cpu_ns).max().unwrap_or(0) as f64 / 1e6
            ),
            "< 50".into(),
            if trues.iter().all(|p| p.on_cpu_ns < 50_000_000) {
                Verdict::Pass("none credited the trace's age".into())
            } else {
                Verdict::Fail("a short process got more".into())
            },
        ),
    ]
}

/// File bytes and block requests of dd, against dd's own count and the kernel's disk
/// statistics.
pub fn dd_files_and_block(w: &Workload, mib: u64) -> Vec<Check> {
    let check = |metric: &str, ours: String, theirs: String, tool: &str, v: Verdict| Check {
        workload: w.name.into(),
        metric: metric.into(),
        hpcscope: ours,
        reference: theirs,
        tool: tool.into(),
        verdict: v,
    };
    let dev = disk_of(&w.dir);
    let before = dev.as_ref().and_then(disk_stat);
    let out = match traced(
        &w.dir,
        sh_cmd(&w.script),
        Probes {
            files: true,
            block: true,
            ..Probes::default()
        },
    ) {
        Ok(o) => o,
        Err(e) => {
            return vec![check(
                "files",
                e,
                "-".into(),
                "dd",
                Verdict::Fail("trace".into()),
            )];
        }
    };
    let after = dev.as_ref().and_then(disk_stat);
    let bytes = mib << 20;
    // The path as dd opened it (relative to its directory).
    let written: u64 = out
        .report
        .processes
        .iter()
        .flat_map(|p| &p.files)
        .filter(|f| f.path.as_deref() == Some("data"))
        .map(|f| f.write_bytes)
        .sum();
    let read: u64 = out
        .report
        .processes
        .iter()
        .flat_map(|p| &p.files)
        .filter(|f| f.path.as_deref() == Some("/dev/zero"))
        .map(|f| f.read_bytes)
        .sum();
    let exact = |o: u64| {
        if o == bytes {
            Verdict::Pass("exact".into())
        } else {
            Verdict::Fail("exact expected".into())
        }
    };
    let mut v = vec![
        check(
            "bytes written to its output file",
            written.to_string(),
            bytes.to_string(),
            "dd (bs x count)",
            exact(written),
        ),
        check(
            "bytes read from /dev/zero",
            read.to_string(),
            bytes.to_string(),
            "dd (bs x count)",
            exact(read),
        ),
    ];
    if let (Some(dev), Some(b), Some(a)) = (dev, before, after) {
        let blk = out.report.system.block.iter().find(|x| x.device == dev.1);
        let (req, by) = blk.map(|x| (x.requests, x.bytes)).unwrap_or((0, 0));
        let (dreq, dby) = (a.0 - b.0, a.1 - b.1);
        // Both count the whole machine; the kernel's window (read before and after the
        // trace) holds hpcscope's, so: dd's transfers <= hpcscope's <= the kernel's.
        let between = |lo: u64, o: u64, hi: u64| {
            if lo <= o && o as f64 <= hi as f64 * 1.02 {
                Verdict::Pass(format!("{lo} <= hpcscope <= the kernel's (+2 %)"))
            } else {
                Verdict::Fail(format!("expected {lo} <= hpcscope <= {hi}"))
            }
        };
        v.push(check(
            &format!("block {} read+write requests (whole machine)", dev.1),
            req.to_string(),
            dreq.to_string(),
            "/sys/block/*/stat",
            between(u64::from(w.script.contains("direct")), req, dreq),
        ));
        v.push(check(
            &format!("block {} read+write bytes (whole machine)", dev.1),
            by.to_string(),
            dby.to_string(),
            "/sys/block/*/stat",
            if w.script.contains("direct") {
                between(bytes, by, dby)
            } else {
                // Through the page cache: written back whenever the kernel likes.
                between(0, by, dby)
            },
        ));
    }
    v
}

/// The block device holding `dir`: (sysfs name, major:minor).
fn disk_of(dir: &Path) -> Option<(String, String)> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let mm = format!("{major}:{minor}");
    let name = std::fs::read_link(format!("/sys/dev/block/{mm}"))
        .ok()?
        .file_name()?
        .to_string_lossy()
        .into_owned();
    Some((name, mm))
}

/// Completed requests and bytes (reads + writes) of a disk from /sys/block/<name>/stat.
fn disk_stat(dev: &(String, String)) -> Option<(u64, u64)> {
    let t = std::fs::read_to_string(format!("/sys/class/block/{}/stat", dev.0)).ok()?;
    let f: Vec<u64> = t
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // reads completed, merged, sectors read, ms; writes completed, merged, sectors written
    Some((f.first()? + f.get(4)?, (f.get(2)? + f.get(6)?) * 512))
}

/// A process traced by PID against /proc: on-CPU time and context switches.
pub fn attached_vs_proc(dir: &Path) -> Vec<Check> {
    let check = |metric: &str, ours: String, theirs: String, v: Verdict| Check {
        workload: "python (attached by PID)".into(),
        metric: metric.into(),
        hpcscope: ours,
        reference: theirs,
        tool: "/proc/<pid>".into(),
        verdict: v,
    };
    let Ok(mut child) = Command::new("python3")
        .args([
            "-c",
            "import time\nwhile True:\n    sum(range(100000)); time.sleep(0.001)",
        ])
        .current_dir(dir)
        .spawn()
    else {
        return vec![];
    };
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id();
    let stat = |pid: u32| -> (u64, u64) {
        let run = std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let f = |k: &str| {
            st.lines()
                .find_map(|l| l.strip_prefix(k))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        (
            run,
            f("voluntary_ctxt_switches:") + f("nonvoluntary_ctxt_switches:"),
        )
    };
    let before = stat(pid);
    let r = trace(&TraceOptions {
        target: Target::Pid(pid),
        probes: Probes {
            sched: true,
            ..Probes::default()
        },
        duration: Some(Duration::from_secs(3)),
        quiet: false,
    });
    let after = stat(pid);
    let _ = child.kill();
    let _ = child.wait();
    let Ok(r) = r else {
        return vec![check(
            "on-CPU",
            "-".into(),
            "-".into(),
            Verdict::Fail("trace".into()),
        )];
    };
    let Some(p) = r.report.processes.iter().find(|p| p.pid == pid) else {
        return vec![check(
            "on-CPU",
            "-".into(),
            "-".into(),
            Verdict::Fail("not traced".into()),
        )];
    };
    let (run, cs) = (after.0 - before.0, after.1 - before.1);
    // The kernel's counts span the trace's window and the set-up around it: hpcscope's
    // are at most those, and most of them.
    let inside = |o: u64, t: u64, frac: f64| {
        if o <= t && o as f64 >= frac * t as f64 {
            Verdict::Pass(format!(
                "{:.0} % of the outer window",
                100.0 * o as f64 / t.max(1) as f64
            ))
        } else {
            Verdict::Fail(format!(
                "{:.0} % of the outer window",
                100.0 * o as f64 / t.max(1) as f64
            ))
        }
    };
    vec![
        check(
            "on-CPU ms (schedstat, before/after)",
            format!("{:.1}", p.on_cpu_ns as f64 / 1e6),
            format!("{:.1}", run as f64 / 1e6),
            inside(p.on_cpu_ns, run, 0.8),
        ),
        check(
            "context switches (status, before/after)",
            p.context_switches.to_string(),
            cs.to_string(),
            inside(p.context_switches, cs, 0.8),
        ),
    ]
}

/// Runs the suite: every workload whose tools are installed, each with every reference
/// available. `quick`: the cheap deterministic part (syscall counts against strace, the
/// fork loop, dd's bytes).
pub fn run(root: &Path, quick: bool, only: &[String]) -> (Vec<Check>, Vec<String>) {
    let mut checks = Vec::new();
    let mut skipped = Vec::new();
    let perf = have("perf");
    let strace = have("strace");
    let bpftrace = have("bpftrace") && Path::new("/sys/kernel/tracing/events").exists();
    let mut offset: Option<Counts> = None;
    // perf: the rusage wrapper and the calibration of perf's child, once.
    let mut perf_setup: Option<Option<(PathBuf, PerfOffset)>> = None;
    let mut bpf_off: Option<Option<i64>> = None;
    for w in workloads(root, quick) {
        if !only.is_empty() && !only.iter().any(|o| o == w.name) {
            continue;
        }
        if let Some(t) = w.needs.iter().find(|t| !have(t)) {
            skipped.push(format!("{}: {t} not installed", w.name));
            continue;
        }
        if w.name == "forks" {
            let n = if quick { 200 } else { 2000 };
            checks.extend(forks_lose_nothing(&w, n));
        }
        if strace {
            if offset.is_none() {
                match strace_child_calls(root) {
                    Ok((o, c)) => {
                        checks.push(c);
                        offset = Some(o);
                    }
                    Err(e) => skipped.push(format!("strace calibration: {e}")),
                }
            }
            checks.extend(syscalls_vs_strace(
                &w,
                offset.as_ref().unwrap_or(&Counts::new()),
            ));
        } else {
            skipped.push(format!("{}: strace not installed (syscall counts)", w.name));
        }
        if w.name == "dd" {
            checks.extend(dd_files_and_block(&w, if quick { 8 } else { 64 }));
        }
        if quick {
            continue;
        }
        if perf {
            let setup = perf_setup.get_or_insert_with(|| {
                let bin = build_rusage(root)?;
                match perf_child_calibration(root, &bin) {
                    Ok((off, c)) => {
                        checks.push(c);
                        Some((bin, off))
                    }
                    Err(e) => {
                        skipped.push(format!("perf calibration: {e}"));
                        None
                    }
                }
            });
            match setup {
                Some((bin, off)) => checks.extend(sched_vs_perf_stat(&w, bin, *off)),
                None => skipped.push(format!(
                    "{}: perf stat (no cc for the rusage wrapper, or perf failed)",
                    w.name
                )),
            }
            if w.profile {
                checks.extend(profile_vs_perf_record(&w, 999));
            }
        } else {
            skipped.push(format!("{}: perf not installed", w.name));
        }
        if w.comm.is_some() {
            if bpftrace {
                let off = bpf_off.get_or_insert_with(|| match bpftrace_child_calibration(root) {
                    Ok((o, c)) => {
                        checks.push(c);
                        Some(o)
                    }
                    Err(e) => {
                        skipped.push(format!("bpftrace calibration: {e}"));
                        None
                    }
                });
                if let Some(o) = off {
                    checks.extend(syscalls_vs_bpftrace(&w, *o));
                }
            } else {
                skipped.push(format!("{}: bpftrace or tracefs missing", w.name));
            }
        }
    }
    if !quick && (only.is_empty() || only.iter().any(|o| o == "attached")) && have("python3") {
        checks.extend(attached_vs_proc(root));
    }
    (checks, skipped)
}

/// The table, one line per check.
pub fn render(checks: &[Check]) -> String {
    let head = [
        "workload",
        "metric",
        "hpcscope",
        "reference",
        "tool",
        "verdict",
    ];
    let rows: Vec<[String; 6]> = checks
        .iter()
        .map(|c| {
            [
                c.workload.clone(),
                c.metric.clone(),
                c.hpcscope.clone(),
                c.reference.clone(),
                c.tool.clone(),
                c.verdict.label(),
            ]
        })
        .collect();
    let mut w = head.map(str::len);
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{:<width$}  ", c, width = w[i]));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(&head.map(String::from));
    for r in &rows {
        out.push_str(&line(r));
    }
    out
}
