//! The launcher command line (mpirun, srun, mpiexec), building the benchmark program with
//! mpicc, and running it under a time limit.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hpcscope_core::machine::Placement;

use crate::error::BenchError;

/// The embedded MPI program.
pub const SOURCE: &str = include_str!("../../mpi/mpibench.c");

/// Which MPI starter a launcher is, for the flags only it understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// Open MPI's mpirun/mpiexec (prte/orte).
    OpenMpi,
    /// MPICH's or Intel MPI's Hydra mpiexec/mpirun.
    Hydra,
    /// Slurm's srun.
    Srun,
    /// Anything else (a wrapper script, another starter).
    Other,
}

/// What the launcher's `--version` says: the flavour.
pub fn flavour_from_version(argv0: &str, version_text: &str) -> Flavour {
    let base = Path::new(argv0)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if base == "srun" {
        return Flavour::Srun;
    }
    let v = version_text.to_ascii_lowercase();
    if v.contains("open mpi") || v.contains("open-mpi") || v.contains("openrte") {
        Flavour::OpenMpi
    } else if v.contains("hydra") || v.contains("mpich") || v.contains("intel(r) mpi") {
        Flavour::Hydra
    } else {
        Flavour::Other
    }
}

/// Asks the launcher for its version to know its flavour (`srun` by name).
pub fn probe_flavour(argv0: &str) -> Flavour {
    if Path::new(argv0).file_name().is_some_and(|n| n == "srun") {
        return Flavour::Srun;
    }
    let out = Command::new(argv0)
        .arg("--version")
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) => {
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            flavour_from_version(argv0, &text)
        }
        Err(_) => Flavour::Other,
    }
}

/// Splits a launcher string into words: spaces separate, single or double quotes group,
/// a backslash escapes the next character.
pub fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), '\\') | (None, '\\') => {
                cur.push(chars.next().ok_or("ends with a lone backslash")?);
                in_word = true;
            }
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("has an unclosed quote".into());
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// The launcher command to run, and why each flag hpcscope added is there.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchPlan {
    /// The words before the program path.
    pub argv: Vec<String>,
    /// The launcher's flavour.
    pub flavour: Flavour,
    /// One line per flag added by hpcscope.
    pub added: Vec<String>,
}

/// Facts about this process that decide the default launcher's flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Host {
    /// Running as root (Open MPI refuses without `--allow-run-as-root`).
    pub is_root: bool,
    /// CPUs this process may use.
    pub cpus: usize,
}

/// Builds the launcher command: the user's `launcher` as given, or `mpirun -np <ranks>`
/// with Open MPI's `--allow-run-as-root` (as root) and `--oversubscribe` (fewer CPUs than
/// ranks); then the placement flags for `pairs`.
pub fn plan(
    launcher: Option<&str>,
    ranks: u32,
    flavour: Flavour,
    host: Host,
    pairs: Option<Placement>,
) -> Result<LaunchPlan, BenchError> {
    let mut added = Vec::new();
    let mut argv = match launcher {
        Some(s) => {
            let w = split_words(s).map_err(|e| {
                BenchError::bad_input(
                    "--launcher",
                    format!("'{s}' {e}"),
                    "quote the whole launcher once: --launcher \"srun -n 2\"",
                )
            })?;
            if w.is_empty() {
                return Err(BenchError::bad_input(
                    "--launcher",
                    "is empty",
                    "give the command that starts the ranks, e.g. \"mpirun -np 2\" or \"srun -n 2\"",
                ));
            }
            w
        }
        None => {
            let mut v = vec!["mpirun".to_string(), "-np".into(), ranks.to_string()];
            if flavour == Flavour::OpenMpi {
                if host.is_root {
                    v.push("--allow-run-as-root".into());
                    added.push(
                        "--allow-run-as-root: running as root, which Open MPI refuses otherwise"
                            .into(),
                    );
                }
                if host.cpus < ranks as usize {
                    v.push("--oversubscribe".into());
                    added.push(format!(
                        "--oversubscribe: {} CPU(s) for {ranks} ranks",
                        host.cpus
                    ));
                }
            }
            v
        }
    };
    if let Some(p) = pairs {
        let flags: Vec<&str> = match (flavour, p) {
            (Flavour::OpenMpi, Placement::InterNode) => vec!["--map-by", "node"],
            (Flavour::OpenMpi, Placement::IntraNode) => vec!["--map-by", "core"],
            (Flavour::Hydra, Placement::InterNode) => vec!["-ppn", "1"],
            (Flavour::Hydra, Placement::IntraNode) => vec!["-ppn", "2"],
            (Flavour::Srun, Placement::InterNode) => vec!["--ntasks-per-node=1"],
            (Flavour::Srun, Placement::IntraNode) => vec!["--nodes=1"],
            (Flavour::Other, _) => {
                return Err(BenchError::bad_input(
                    "--pairs",
                    format!(
                        "hpcscope does not know how to ask '{}' for a placement",
                        argv[0]
                    ),
                    "leave --pairs out and put the placement flags in --launcher yourself",
                ));
            }
        };
        added.push(format!(
            "{}: --pairs {}",
            flags.join(" "),
            match p {
                Placement::InterNode => "inter",
                Placement::IntraNode => "intra",
            }
        ));
        argv.extend(flags.into_iter().map(String::from));
    }
    Ok(LaunchPlan {
        argv,
        flavour,
        added,
    })
}

/// The path of `prog`: itself when it contains a `/`, else the first match on PATH.
pub fn which(prog: &str) -> Option<PathBuf> {
    hpcscope_host::tools::resolve_program(prog)
}

/// The environment error for a missing MPI C compiler.
pub fn missing_mpicc(mpicc: &str) -> BenchError {
    BenchError::Environment {
        what: format!(
            "'{mpicc}' (the MPI C compiler wrapper) is not on PATH: hpcscope builds its MPI benchmark with it"
        ),
        fix: "install an MPI development package (Debian: apt-get install libopenmpi-dev openmpi-bin, or libmpich-dev mpich), load your site's MPI module, or give the wrapper with --mpicc PATH (or HPCSCOPE_MPICC)".into(),
    }
}

/// The environment error for a missing launcher.
pub fn missing_launcher(argv0: &str) -> BenchError {
    let fix = match Path::new(argv0).file_name().and_then(|s| s.to_str()) {
        Some("srun") => "install Slurm's client (Debian: apt-get install slurm-client) or run inside an allocation where srun is on PATH".to_string(),
        Some("mpirun" | "mpiexec") => "install an MPI runtime (Debian: apt-get install openmpi-bin, or mpich), or give another starter with --launcher \"srun -n 2\"".to_string(),
        _ => format!("install '{argv0}' or give the command that starts MPI ranks with --launcher"),
    };
    BenchError::Environment {
        what: format!("the launcher '{argv0}' is not on PATH"),
        fix,
    }
}

/// 64-bit FNV-1a, for the cache key of the built program.
fn fnv1a(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Builds the embedded program with `mpicc` into `cache_dir` (once per source and
/// compiler: the key hashes the source, the wrapper's path, size and modification time)
/// and returns the executable.
pub fn build(mpicc: &str, cache_dir: &Path) -> Result<PathBuf, BenchError> {
    // Run the wrapper by the name found (Open MPI's mpicc is a link to opal_wrapper, which
    // reads its own name); key the cache on what the link points to.
    let cc = which(mpicc).ok_or_else(|| missing_mpicc(mpicc))?;
    let real = std::fs::canonicalize(&cc).unwrap_or_else(|_| cc.clone());
    let meta = std::fs::metadata(&real).ok();
    let stamp = format!(
        "{}|{}|{}|{:?}",
        cc.display(),
        real.display(),
        meta.as_ref().map_or(0, |m| m.len()),
        meta.and_then(|m| m.modified().ok())
    );
    let key = fnv1a(
        stamp.as_bytes(),
        fnv1a(SOURCE.as_bytes(), 0xcbf2_9ce4_8422_2325),
    );
    let dir = cache_dir.join(format!("mpibench-{key:016x}"));
    let exe = dir.join("mpibench");
    if exe.is_file() {
        return Ok(exe);
    }
    std::fs::create_dir_all(&dir).map_err(|e| BenchError::Environment {
        what: format!("cannot create the cache directory '{}': {e}", dir.display()),
        fix: "set HPCSCOPE_CACHE_DIR to a writable directory".into(),
    })?;
    let src = dir.join("mpibench.c");
    std::fs::write(&src, SOURCE).map_err(|e| BenchError::Environment {
        what: format!("cannot write '{}': {e}", src.display()),
        fix: "set HPCSCOPE_CACHE_DIR to a writable directory".into(),
    })?;
    // Build under a unique name, then rename: two runs at once never see half a binary.
    let tmp = dir.join(format!("mpibench.tmp{}", std::process::id()));
    let out = Command::new(&cc)
        .arg("-O2")
        .arg("-o")
        .arg(&tmp)
        .arg(&src)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| BenchError::Environment {
            what: format!("cannot run '{}': {e}", cc.display()),
            fix: "check that the MPI compiler wrapper is executable".into(),
        })?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(BenchError::Environment {
            what: format!(
                "'{} -O2 -o mpibench {}' failed ({}):\n{}",
                cc.display(),
                src.display(),
                out.status,
                tail(&String::from_utf8_lossy(&out.stderr), 15)
            ),
            fix: "the MPI development files may be missing or broken (Debian: apt-get install libopenmpi-dev); `mpicc --showme` (Open MPI) or `mpicc -show` (MPICH) prints the compiler line".into(),
        });
    }
    std::fs::rename(&tmp, &exe).map_err(|e| BenchError::Environment {
        what: format!("cannot move the built program to '{}': {e}", exe.display()),
        fix: "set HPCSCOPE_CACHE_DIR to a writable directory".into(),
    })?;
    Ok(exe)
}

/// The last `n` lines of `s`.
pub fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// What a run of the launcher produced.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Exit status; `None` when killed at the time limit.
    pub status: Option<std::process::ExitStatus>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Runs `argv` in its own process group; after `timeout` the whole group is killed.
pub fn run_with_timeout(argv: &[String], timeout: Duration) -> Result<Finished, BenchError> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    // The launcher (and the group it leads) dies with hpcscope.
    hpcscope_host::child::die_with_parent(&mut cmd);
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| BenchError::Environment {
        what: format!("cannot start '{}': {e}", argv[0]),
        fix: "check the --launcher command".into(),
    })?;
    let mut so = child.stdout.take().expect("piped stdout");
    let mut se = child.stderr.take().expect("piped stderr");
    let ho = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = so.read_to_end(&mut b);
        b
    });
    let he = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = se.read_to_end(&mut b);
        b
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() >= timeout => {
                kill_group(child.id());
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                return Err(BenchError::Environment {
                    what: format!("waiting for '{}' failed: {e}", argv[0]),
                    fix: "run the launcher by hand to see what happens".into(),
                });
            }
        }
    };
    // Ranks left behind by a launcher that died keep the pipes open: end the group too.
    if status.is_some_and(|s| !s.success()) {
        kill_group(child.id());
    }
    let stdout = String::from_utf8_lossy(&ho.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&he.join().unwrap_or_default()).into_owned();
    Ok(Finished {
        stdout,
        stderr,
        status,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Ends the process group `pid` (the launcher and what it started): TERM, then KILL.
fn kill_group(pid: u32) {
    #[cfg(unix)]
    {
        let pg = -(pid as i32);
        // SAFETY: kill(2) on our own child's process group.
        unsafe {
            libc::kill(pg, libc::SIGTERM);
        }
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: as above.
        unsafe {
            libc::kill(pg, libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_core::Classify;

    const ROOT2: Host = Host {
        is_root: true,
        cpus: 2,
    };

    #[test]
    fn default_launcher_adds_open_mpi_flags_only_when_needed() {
        let p = plan(None, 2, Flavour::OpenMpi, ROOT2, None).unwrap();
        assert_eq!(p.argv, ["mpirun", "-np", "2", "--allow-run-as-root"]);
        assert_eq!(p.added.len(), 1);
        let user = Host {
            is_root: false,
            cpus: 1,
        };
        let p = plan(None, 2, Flavour::OpenMpi, user, None).unwrap();
        assert_eq!(p.argv, ["mpirun", "-np", "2", "--oversubscribe"]);
        // MPICH's Hydra knows neither flag and needs neither.
        let p = plan(None, 2, Flavour::Hydra, ROOT2, None).unwrap();
        assert_eq!(p.argv, ["mpirun", "-np", "2"]);
        // A launcher given by the user is kept as given.
        let p = plan(Some("srun -n 2 --mpi=pmix"), 2, Flavour::Srun, ROOT2, None).unwrap();
        assert_eq!(p.argv, ["srun", "-n", "2", "--mpi=pmix"]);
        assert!(p.added.is_empty());
    }

    #[test]
    fn pairs_become_each_launchers_placement_flags() {
        let inter = Some(Placement::InterNode);
        let intra = Some(Placement::IntraNode);
        let p = plan(None, 2, Flavour::OpenMpi, ROOT2, inter).unwrap();
        assert!(p.argv.ends_with(&["--map-by".into(), "node".into()]));
        let p = plan(Some("srun -n 2"), 2, Flavour::Srun, ROOT2, inter).unwrap();
        assert_eq!(p.argv, ["srun", "-n", "2", "--ntasks-per-node=1"]);
        let p = plan(Some("srun -n 2"), 2, Flavour::Srun, ROOT2, intra).unwrap();
        assert_eq!(p.argv, ["srun", "-n", "2", "--nodes=1"]);
        let p = plan(Some("mpiexec -n 2"), 2, Flavour::Hydra, ROOT2, inter).unwrap();
        assert_eq!(p.argv, ["mpiexec", "-n", "2", "-ppn", "1"]);
        let e = plan(Some("./wrap.sh"), 2, Flavour::Other, ROOT2, inter).unwrap_err();
        assert_eq!(e.kind().exit_code(), 2);
        assert!(e.to_string().contains("--pairs"), "{e}");
    }

    #[test]
    fn launcher_words_respect_quotes() {
        assert_eq!(
            split_words(r#"mpirun -np 2 -x "A=b c" --mca btl 'self,vader'"#).unwrap(),
            [
                "mpirun",
                "-np",
                "2",
                "-x",
                "A=b c",
                "--mca",
                "btl",
                "self,vader"
            ]
        );
        assert_eq!(split_words(r"a\ b  c").unwrap(), ["a b", "c"]);
        assert!(split_words("srun \"-n 2").is_err());
        let e = plan(Some("   "), 2, Flavour::Other, ROOT2, None).unwrap_err();
        assert!(e.to_string().contains("--launcher"), "{e}");
    }

    #[test]
    fn flavour_from_the_version_text() {
        let f = |a, t| flavour_from_version(a, t);
        assert_eq!(f("mpirun", "mpirun (Open MPI) 4.1.4\n"), Flavour::OpenMpi);
        assert_eq!(
            f("mpiexec", "HYDRA build details:\n    Version: 4.0.2"),
            Flavour::Hydra
        );
        assert_eq!(
            f("mpirun", "Intel(R) MPI Library for Linux* OS"),
            Flavour::Hydra
        );
        assert_eq!(f("/usr/bin/srun", ""), Flavour::Srun);
        assert_eq!(f("./wrap.sh", "usage"), Flavour::Other);
    }

    #[test]
    fn missing_tools_name_the_debian_packages() {
        let e = missing_mpicc("mpicc");
        assert_eq!(e.kind().exit_code(), 3);
        assert!(e.to_string().contains("libopenmpi-dev"), "{e}");
        assert!(
            missing_launcher("mpirun")
                .to_string()
                .contains("openmpi-bin")
        );
        assert!(
            missing_launcher("srun")
                .to_string()
                .contains("slurm-client")
        );
    }
}
