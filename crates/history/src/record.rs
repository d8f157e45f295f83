//! What a run is: the record stored for every run, and the helpers that capture its context
//! (machine fingerprint, git state, binary hash, environment, timing of a child process).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// One metric of a run: `time_s`, `instructions`, `l2_bytes`, `triad_bandwidth_gbs`...
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Metric name, unique within a run; units go in the name too when it helps (`_s`, `_gbs`).
    pub name: String,
    /// Finite value.
    pub value: f64,
    /// Unit (`s`, `B`, `GB/s`, `count`...); empty when dimensionless.
    pub unit: String,
}

impl Metric {
    /// A metric from its parts.
    pub fn new(name: impl Into<String>, value: f64, unit: impl Into<String>) -> Metric {
        Metric {
            name: name.into(),
            value,
            unit: unit.into(),
        }
    }
}

/// Git state of the working directory of a run.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitInfo {
    /// Full commit hash of `HEAD`.
    pub commit: String,
    /// Whether tracked files had uncommitted changes.
    pub dirty: bool,
    /// Current branch, when not detached.
    pub branch: Option<String>,
}

impl GitInfo {
    /// Git state of `dir`, or `None` when `dir` is not in a git work tree or git is missing.
    pub fn detect(dir: &Path) -> Option<GitInfo> {
        let git = |args: &[&str]| -> Option<String> {
            let out = Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let commit = git(&["rev-parse", "HEAD"])?;
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
            .map(|s| !s.is_empty())
            .unwrap_or(false);
        let branch = git(&["symbolic-ref", "--short", "-q", "HEAD"]).filter(|b| !b.is_empty());
        Some(GitInfo {
            commit,
            dirty,
            branch,
        })
    }
}

pub use hpcscope_host::Fingerprint;

/// Everything stored about one run.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The command line, as typed (arguments joined with shell quoting).
    pub command: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// What produced the record: `record` for `hpcscope record`, else the subcommand name.
    pub source: String,
    /// User tags (`--tag k=v`).
    pub tags: BTreeMap<String, String>,
    /// SHA-256 of the executable that ran, when it could be found.
    pub binary_sha256: Option<String>,
    /// Git state of the working directory.
    pub git: Option<GitInfo>,
    /// Machine fingerprint.
    pub fingerprint: Fingerprint,
    /// Environment variables that affect performance (see [`capture_env`]).
    pub env: BTreeMap<String, String>,
    /// Start time, seconds since the Unix epoch (UTC).
    pub started_at: f64,
    /// Wall-clock duration, seconds.
    pub duration_s: Option<f64>,
    /// Exit status of the command (`None`: killed by a signal, or not a command).
    pub exit_status: Option<i32>,
    /// Every metric the run produced.
    pub metrics: Vec<Metric>,
}

impl RunRecord {
    /// A record for `command` started now on this machine, with no metric yet.
    pub fn new(command: impl Into<String>, source: impl Into<String>) -> RunRecord {
        RunRecord {
            command: command.into(),
            cwd: std::env::current_dir()
                .ok()
                .map(|p| p.display().to_string()),
            source: source.into(),
            tags: BTreeMap::new(),
            binary_sha256: None,
            git: None,
            fingerprint: Fingerprint::default(),
            env: BTreeMap::new(),
            started_at: now_unix(),
            duration_s: None,
            exit_status: Some(0),
            metrics: Vec::new(),
        }
    }

    /// The value of metric `name`, if the run has it.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.value)
    }

    /// Adds every finite number of a JSON result (another hpcscope command's `--format json`
    /// output) as a metric named by its path, `a.b.0.c` (prefixed by `prefix.` when given).
    /// Booleans, strings and nulls are skipped. Returns the number of metrics added.
    pub fn add_json_metrics(&mut self, prefix: &str, value: &serde_json::Value) -> usize {
        fn walk(path: String, v: &serde_json::Value, out: &mut Vec<Metric>) {
            match v {
                serde_json::Value::Number(n) => {
                    if let Some(x) = n.as_f64().filter(|x| x.is_finite()) {
                        out.push(Metric::new(path, x, ""));
                    }
                }
                serde_json::Value::Object(m) => {
                    for (k, v) in m {
                        let p = if path.is_empty() {
                            k.clone()
                        } else {
                            format!("{path}.{k}")
                        };
                        walk(p, v, out);
                    }
                }
                serde_json::Value::Array(a) => {
                    for (i, v) in a.iter().enumerate() {
                        let p = if path.is_empty() {
                            i.to_string()
                        } else {
                            format!("{path}.{i}")
                        };
                        walk(p, v, out);
                    }
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        walk(prefix.to_string(), value, &mut out);
        out.retain(|m| !m.name.is_empty() && self.metric(&m.name).is_none());
        let n = out.len();
        self.metrics.extend(out);
        n
    }
}

pub use hpcscope_host::time::{format_rfc3339, now_unix};

/// Prefixes of environment variables recorded with every run: they change how HPC codes run
/// (threads, placement, MPI, math libraries, compilers, allocator).
pub const ENV_PREFIXES: &[&str] = &[
    "OMP_",
    "GOMP_",
    "KMP_",
    "MKL_",
    "OPENBLAS_",
    "BLIS_",
    "I_MPI_",
    "OMPI_",
    "MPICH_",
    "UCX_",
    "SLURM_",
    "PBS_",
    "CUDA_",
    "HIP_",
    "MALLOC_",
    "GLIBC_TUNABLES",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "CC",
    "CXX",
    "FC",
    "CFLAGS",
    "CXXFLAGS",
    "FFLAGS",
    "RUSTFLAGS",
    "HPCSCOPE_",
];

/// The environment variables that match [`ENV_PREFIXES`] (an exact name for entries without a
/// trailing underscore).
///
/// The environment is bytes, and any variable may not be UTF-8 (`PWD` after `cd` into a
/// directory named in Latin-1): such a variable never fails the run. A name or value that
/// is not UTF-8 is kept lossily but marked: each byte sequence that is not UTF-8 becomes
/// U+FFFD, the replacement character (the store is text), so the record shows that bytes
/// were there and where.
pub fn capture_env() -> BTreeMap<String, String> {
    env_matching(std::env::vars_os())
}

/// [`capture_env`] of the variables `vars`.
fn env_matching(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> BTreeMap<String, String> {
    vars.filter_map(|(k, v)| {
        let k = k.to_string_lossy();
        let kept = ENV_PREFIXES.iter().any(|p| {
            if p.ends_with('_') {
                k.starts_with(p)
            } else {
                k == *p
            }
        });
        kept.then(|| (k.into_owned(), v.to_string_lossy().into_owned()))
    })
    .collect()
}

pub use hpcscope_host::tools::resolve_program;

/// Quotes arguments for display so that the command line can be pasted into a shell.
pub fn shell_join(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What every recorded run of one command shares: the command line, the working directory,
/// the tags, the executable's SHA-256, the git state, the machine and the environment.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// Each run's record before its measurement (`source` `record`).
    base: RunRecord,
}

impl RunContext {
    /// The context of `argv` run from `cwd` on this machine (`fingerprint`), with `tags`.
    pub fn capture(
        argv: &[String],
        cwd: &Path,
        tags: BTreeMap<String, String>,
        fingerprint: Fingerprint,
    ) -> RunContext {
        let mut base = RunRecord::new(shell_join(argv), "record");
        base.cwd = Some(cwd.display().to_string());
        base.tags = tags;
        base.binary_sha256 = argv
            .first()
            .and_then(|p| resolve_program(p))
            .and_then(|b| crate::sha256::sha256_file(&b).ok());
        base.git = GitInfo::detect(cwd);
        base.fingerprint = fingerprint;
        base.env = capture_env();
        RunContext { base }
    }

    /// The command line, joined with shell quoting.
    pub fn command(&self) -> &str {
        &self.base.command
    }

    /// The record of one run: its times (`time_s`, `user_s`, `sys_s`), its exit status, and
    /// the numbers of `metrics` (a JSON object the command wrote), when given.
    pub fn record(&self, m: &Measured, metrics: Option<&serde_json::Value>) -> RunRecord {
        let mut r = self.base.clone();
        r.started_at = m.started_at;
        r.duration_s = Some(m.wall_s);
        r.exit_status = m.exit_status;
        r.metrics = vec![
            Metric::new("time_s", m.wall_s, "s"),
            Metric::new("user_s", m.user_s, "s"),
            Metric::new("sys_s", m.sys_s, "s"),
        ];
        if let Some(v) = metrics {
            r.add_json_metrics("", v);
        }
        r
    }
}

/// What one execution of a command measured.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Wall-clock time, seconds.
    pub wall_s: f64,
    /// User CPU time of the child, seconds.
    pub user_s: f64,
    /// System CPU time of the child, seconds.
    pub sys_s: f64,
    /// Exit status (`None` when killed by a signal).
    pub exit_status: Option<i32>,
    /// The signal that killed the command, when one did.
    pub signal: Option<i32>,
    /// Start time, Unix seconds.
    pub started_at: f64,
}

impl Measured {
    /// The status a shell gives for this run: the exit status, or 128 + the signal that
    /// killed it.
    pub fn shell_status(&self) -> i32 {
        match (self.exit_status, self.signal) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            (None, None) => 128,
        }
    }

    /// How the run ended, when it failed: `exit status 3`, `killed by signal 9 (SIGKILL)`.
    pub fn failure(&self) -> Option<String> {
        match (self.exit_status, self.signal) {
            (Some(0), _) => None,
            (Some(c), _) => Some(format!("exit status {c}")),
            (None, Some(s)) => Some(format!("killed by signal {s}{}", signal_name(s))),
            (None, None) => Some("killed by a signal".into()),
        }
    }
}

/// ` (SIGKILL)` for the common signals, else nothing.
fn signal_name(s: i32) -> &'static str {
    match s {
        1 => " (SIGHUP)",
        2 => " (SIGINT)",
        3 => " (SIGQUIT)",
        4 => " (SIGILL)",
        6 => " (SIGABRT)",
        7 => " (SIGBUS)",
        8 => " (SIGFPE)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        13 => " (SIGPIPE)",
        15 => " (SIGTERM)",
        _ => "",
    }
}

fn children_cpu_s() -> (f64, f64) {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// Runs `argv` once (stdin, stdout and stderr inherited) and measures it: wall time, and
/// user and system time from `getrusage(RUSAGE_CHILDREN)` before and after.
pub fn measure_command(argv: &[String]) -> std::io::Result<Measured> {
    let Some((prog, args)) = argv.split_first() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "empty command",
        ));
    };
    let (u0, s0) = children_cpu_s();
    let started_at = now_unix();
    let t0 = Instant::now();
    // The measured command dies with hpcscope (a killed `record` leaves nothing running).
    let status = hpcscope_host::child::die_with_parent(&mut Command::new(prog))
        .args(args)
        .status()?;
    let wall_s = t0.elapsed().as_secs_f64();
    let (u1, s1) = children_cpu_s();
    Ok(Measured {
        wall_s,
        user_s: (u1 - u0).max(0.0),
        sys_s: (s1 - s0).max(0.0),
        exit_status: status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
        started_at,
    })
}

/// The numbers a command wrote to `p` (`record --metrics-json`), read with the input limit;
/// the error says what is wrong with the file and how to fix it.
pub fn read_metrics_json(p: &Path) -> std::result::Result<serde_json::Value, String> {
    if !p.exists() {
        return Err(format!(
            "the command did not write {} (--metrics-json): write a JSON object of numbers there",
            p.display()
        ));
    }
    let text = hpcscope_core::load::read(
        p,
        "the metrics file (--metrics-json)",
        "write a JSON object of numbers there",
    )
    .map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| {
        if e.to_string().starts_with("recursion limit exceeded") {
            format!(
                "{}: JSON nested deeper than 128 levels at line {} column {} (--metrics-json): \
                 write a JSON object of numbers, nested less",
                p.display(),
                e.line(),
                e.column()
            )
        } else {
            format!(
                "{}: not valid JSON (--metrics-json): {e}: write a JSON object of numbers there",
                p.display()
            )
        }
    })
}

/// What is said when a command cannot be started.
pub fn cannot_run(prog: &str) -> String {
    format!("cannot run `{prog}`: check that it exists and is executable (is it on PATH?)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_context_gives_every_run_its_context_and_its_own_times() {
        let dir = tempfile::tempdir().unwrap();
        let argv = vec!["sh".to_string(), "-c".into(), "exit 3".into()];
        let tags: BTreeMap<String, String> = [("k".to_string(), "v".to_string())].into();
        let ctx = RunContext::capture(&argv, dir.path(), tags.clone(), Fingerprint::default());
        assert_eq!(ctx.command(), "sh -c 'exit 3'");
        let m = measure_command(&argv).unwrap();
        let v = serde_json::json!({"flops": 2.0});
        let r = ctx.record(&m, Some(&v));
        assert_eq!(r.source, "record");
        assert_eq!(r.tags, tags);
        assert_eq!(r.cwd.as_deref(), Some(dir.path().to_str().unwrap()));
        // sh was found on PATH and hashed.
        assert_eq!(r.binary_sha256.as_ref().map(String::len), Some(64));
        assert_eq!(r.exit_status, Some(3));
        assert_eq!((r.started_at, r.duration_s), (m.started_at, Some(m.wall_s)));
        assert_eq!(r.metric("time_s"), Some(m.wall_s));
        assert_eq!(r.metric("flops"), Some(2.0));
        // Without a metrics file: the times only.
        assert_eq!(ctx.record(&m, None).metrics.len(), 3);
    }

    /// `std::env::vars` panicked on the first variable that is not UTF-8 (`PWD` after `cd`
    /// into `caf\xe9`), whatever its name.
    #[test]
    fn variables_that_are_not_utf8_are_kept_marked() {
        use std::ffi::OsString;
        use std::os::unix::ffi::OsStringExt;
        let os = |b: &[u8]| OsString::from_vec(b.to_vec());
        let env = env_matching(
            [
                (os(b"PWD"), os(b"/tmp/caf\xe9")),
                (os(b"OMP_NUM_THREADS"), os(b"4")),
                (os(b"LD_LIBRARY_PATH"), os(b"/opt/caf\xe9/lib")),
                (os(b"OMP_\xff"), os(b"x")),
                (os(b"CC"), os(b"gcc")),
                (os(b"CCX"), os(b"no")),
            ]
            .into_iter(),
        );
        let want: BTreeMap<String, String> = [
            ("CC", "gcc"),
            ("LD_LIBRARY_PATH", "/opt/caf\u{FFFD}/lib"),
            ("OMP_NUM_THREADS", "4"),
            ("OMP_\u{FFFD}", "x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(env, want);
    }

    #[test]
    fn rfc3339() {
        assert_eq!(format_rfc3339(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339(951_782_400.5), "2000-02-29T00:00:00.500Z");
        assert_eq!(format_rfc3339(1_767_225_599.0), "2025-12-31T23:59:59.000Z");
    }

    #[test]
    fn json_metrics_are_flattened() {
        let mut r = RunRecord::new("x", "test");
        let v: serde_json::Value =
            serde_json::from_str(r#"{"a": 1, "b": {"c": [2.5, "s", true]}, "d": null}"#).unwrap();
        assert_eq!(r.add_json_metrics("", &v), 2);
        assert_eq!(r.metric("a"), Some(1.0));
        assert_eq!(r.metric("b.c.0"), Some(2.5));
    }

    #[test]
    fn shell_quoting() {
        let a = vec![
            "echo".to_string(),
            "a b".into(),
            "it's".into(),
            "x=1".into(),
        ];
        assert_eq!(shell_join(&a), r#"echo 'a b' 'it'\''s' x=1"#);
    }

    #[test]
    fn measures_a_command() {
        let m = measure_command(&["true".to_string()]).unwrap();
        assert_eq!(m.exit_status, Some(0));
        assert!(m.wall_s >= 0.0);
        let f = measure_command(&["false".to_string()]).unwrap();
        assert_eq!(f.exit_status, Some(1));
        assert!(measure_command(&[]).is_err());
    }
}
