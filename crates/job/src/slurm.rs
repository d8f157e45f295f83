//! Sweeps as Slurm job arrays: `explore --slurm` and `record --slurm` write a script that
//! submits one array task per design point or repetition, and a job that merges their
//! results once the array is done (`--dependency=afterany`, or `afterok`).
//!
//! The script is its own submitter: `bash SCRIPT` (or `sbatch SCRIPT`) submits the array
//! and the merge job, which run the same script with `HPCSCOPE_SLURM_STEP` set to `task` or
//! `merge`. Each array writes into `RUN_DIR/array-<array job id>/`, so two sweeps never
//! share a directory.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use hpcscope_history::record::shell_join;

/// When the merge job may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Dependency {
    /// After every task ended, however it ended (the merge reports the failed ones).
    #[default]
    Afterany,
    /// Only when every task succeeded (a failed task cancels the merge).
    Afterok,
}

impl Dependency {
    /// `afterany` or `afterok`.
    pub fn name(self) -> &'static str {
        match self {
            Dependency::Afterany => "afterany",
            Dependency::Afterok => "afterok",
        }
    }
}

/// How the job array is submitted.
#[derive(Debug, Clone, Default)]
pub struct SlurmOptions {
    /// Where the script goes.
    pub script: PathBuf,
    /// sbatch options for the array tasks (`--partition=short`).
    pub sbatch: Vec<String>,
    /// When the merge job starts.
    pub dependency: Dependency,
    /// At most this many array tasks at a time (`--array=0-N%K`).
    pub max_parallel: Option<u32>,
}

/// What the script runs.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `explore` or `record`: the job name and the comments.
    pub what: String,
    /// One line on what the array does, for the script's head.
    pub summary: String,
    /// Array tasks.
    pub tasks: u32,
    /// The directory the command was written from (relative paths are relative to it).
    pub workdir: PathBuf,
    /// Where the results go (absolute).
    pub run_dir: PathBuf,
    /// The task's command, shell text: may use `$HPCSCOPE`, `$RUN` (this array's result
    /// directory) and `$SLURM_ARRAY_TASK_ID`.
    pub task: String,
    /// The merge's `hpcscope merge` arguments after `"$RUN"`, shell text.
    pub merge: String,
}

impl Plan {
    /// The plan of `explore --slurm`: one array task per design point of the `n` of
    /// `scenario` (`name`), each with `explore --point`, into `run_dir`.
    pub fn explore(n: usize, name: &str, scenario: &Path, run_dir: &Path) -> Result<Plan> {
        let scenario = absolute(scenario)?;
        Ok(Plan {
            what: "explore".into(),
            summary: format!("the {n} design points of {} ({name})", scenario.display()),
            tasks: n as u32,
            workdir: std::env::current_dir()?,
            run_dir: absolute(run_dir)?,
            task: format!(
                r#"exec "$HPCSCOPE" explore {} --point "$SLURM_ARRAY_TASK_ID" --run-dir "$RUN" --job-id points"#,
                quote(&scenario)
            ),
            merge: String::new(),
        })
    }

    /// The plan of `record --slurm`: `runs` array tasks, each running `command` once (under
    /// `launcher`, when given) with `record --run-dir`, its `tags` and `metrics_json`, and a
    /// merge of every repetition into `run_dir`.
    pub fn record(
        runs: usize,
        command: &[String],
        tags: &[(String, String)],
        metrics_json: Option<&Path>,
        launcher: Option<&str>,
        run_dir: &Path,
    ) -> Result<Plan> {
        let launcher = match launcher {
            Some(l) => {
                let w = hpcscope_bench::mpi::launch::split_words(l)
                    .map_err(|e| anyhow::anyhow!("--launcher '{l}' {e}"))?;
                format!("{} ", shell_join(&w))
            }
            None => String::new(),
        };
        let mut rec: Vec<String> = Vec::new();
        for (k, v) in tags {
            rec.push("--tag".into());
            rec.push(format!("{k}={v}"));
        }
        if let Some(m) = metrics_json {
            rec.push("--metrics-json".into());
            rec.push(m.display().to_string());
        }
        Ok(Plan {
            what: "record".into(),
            summary: format!("{runs} run(s) of `{}`", shell_join(command)),
            tasks: runs as u32,
            workdir: std::env::current_dir()?,
            run_dir: absolute(run_dir)?,
            task: format!(
                r#"exec {launcher}"$HPCSCOPE" record --run-dir "$RUN" {}-- {}"#,
                if rec.is_empty() {
                    String::new()
                } else {
                    format!("{} ", shell_join(&rec))
                },
                shell_join(command)
            ),
            merge: "--all".into(),
        })
    }
}

/// The absolute form of `p` (relative to the current directory).
pub fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("cannot make {} absolute", p.display()))
}

/// `p` as one shell word on one line, byte for byte: as it is when it needs no quoting,
/// single-quoted when it is UTF-8 without control characters, else in bash's `$'...'` form
/// with the control characters and the bytes that are not UTF-8 escaped (`\n`, `\xe9`), so
/// that no path can end a line of the script.
pub fn quote(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = p.as_os_str().as_bytes();
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.chars().any(char::is_control) => shell_join(&[s.to_string()]),
        _ => {
            let mut out = String::from("$'");
            for chunk in bytes.utf8_chunks() {
                for c in chunk.valid().chars() {
                    match c {
                        '\\' => out.push_str("\\\\"),
                        '\'' => out.push_str("\\'"),
                        '\n' => out.push_str("\\n"),
                        '\t' => out.push_str("\\t"),
                        c if c.is_control() => {
                            let mut buf = [0u8; 4];
                            for b in c.encode_utf8(&mut buf).bytes() {
                                out.push_str(&format!("\\x{b:02x}"));
                            }
                        }
                        c => out.push(c),
                    }
                }
                for b in chunk.invalid() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
            out.push('\'');
            out
        }
    }
}

/// `s` on one line: its control characters escaped (`\n`, `\u{1b}`), for a comment.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The value of `#SBATCH --output=` for the file `file` in `dir`: the directory as sbatch
/// reads a directive (double quotes group, a backslash escapes the next character, an
/// unquoted `#` starts a comment) and as Slurm expands a file name pattern (`%%` is a `%`).
/// Slurm cannot carry every path: a directive is one line, so a newline (or any control
/// character) is refused; Slurm reads a file name with a backslash as one to take literally
/// and drops the backslashes, so a backslash is refused; the script is text, so the path
/// must be UTF-8.
fn sbatch_output(dir: &Path, file: &str) -> Result<String> {
    let how = "choose a run directory (--run-dir) whose absolute path has none (a relative \
               one starts with the working directory's path)";
    let Some(s) = dir.to_str() else {
        bail!(
            "the run directory {} is not UTF-8, and the #SBATCH lines of the script are text; {how}",
            quote(dir)
        );
    };
    if s.chars().any(char::is_control) {
        bail!(
            "the run directory {} holds a newline or another control character: Slurm's \
             #SBATCH --output cannot carry it (a directive is one line) and it would end a \
             line of the script; {how}",
            quote(dir)
        );
    }
    if s.contains('\\') {
        bail!(
            "the run directory {} holds a backslash: Slurm takes an output file name with a \
             backslash literally and drops its backslashes, so the job logs would go \
             elsewhere; {how}",
            quote(dir)
        );
    }
    let pattern = format!("{}/{file}", s.replace('%', "%%"));
    let mut out = String::from("\"");
    for c in pattern.chars() {
        if matches!(c, '"' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Ok(out)
}

/// The script's text.
pub fn script(plan: &Plan, flags: &SlurmOptions, hpcscope: &Path) -> Result<String> {
    if plan.tasks == 0 {
        bail!("nothing to run: the {} has no task", plan.what);
    }
    for o in &flags.sbatch {
        if !o.starts_with('-') {
            bail!("--sbatch {o}: give an sbatch option, e.g. --sbatch=--partition=short");
        }
        if o.starts_with("--array") || o.starts_with("--dependency") || o == "-a" || o == "-d" {
            bail!(
                "--sbatch {o}: the script sets the array and the dependency itself; use --max-parallel and --dependency"
            );
        }
    }
    let array = match flags.max_parallel {
        Some(0) => bail!("--max-parallel 0: give at least 1"),
        Some(k) => format!("0-{}%{k}", plan.tasks - 1),
        None => format!("0-{}", plan.tasks - 1),
    };
    let opts = if flags.sbatch.is_empty() {
        String::new()
    } else {
        format!("{} ", shell_join(&flags.sbatch))
    };
    let run = quote(&plan.run_dir);
    let output = sbatch_output(&plan.run_dir, "slurm-%A_%a.out")?;
    // The run directory as a Slurm file name pattern (`%` doubled), for the merge's log.
    let log_dir = quote(Path::new(
        &plan.run_dir.to_string_lossy().replace('%', "%%"),
    ));
    Ok(format!(
        r#"#!/bin/bash
# Written by hpcscope {version}: {summary}
# A Slurm job array of {tasks} task(s), then one job that merges their results
# (--dependency={dep}). Submit with:   bash {name}   (or: sbatch {name})
# Results: {run}/array-<array job id>/, merged into merged.json and report.html there.
#SBATCH --job-name=hpcscope-{what}
#SBATCH --output={output}
set -euo pipefail
HPCSCOPE={hpcscope}
RUN_DIR={run}
LOG_DIR={log_dir}
cd {workdir}
case "${{HPCSCOPE_SLURM_STEP:-submit}}" in
submit)
    mkdir -p "$RUN_DIR"
    array=$(sbatch --parsable --array={array} {opts}--export=ALL,HPCSCOPE_SLURM_STEP=task "$0")
    array=${{array%%;*}}
    merge=$(sbatch --parsable --job-name=hpcscope-merge --dependency={dep}:"$array" \
        --output="$LOG_DIR/slurm-%j-merge.out" \
        --export=ALL,HPCSCOPE_SLURM_STEP=merge,HPCSCOPE_ARRAY_JOB="$array" "$0")
    echo "hpcscope: job array $array ({tasks} task(s)) and merge job ${{merge%%;*}}; results in $RUN_DIR/array-$array"
    ;;
task)
    RUN="$RUN_DIR/array-$SLURM_ARRAY_JOB_ID"
    mkdir -p "$RUN"
    {task}
    ;;
merge)
    RUN="$RUN_DIR/array-$HPCSCOPE_ARRAY_JOB"
    exec "$HPCSCOPE" merge "$RUN" {merge} --format json -o "$RUN/merged.json" --html "$RUN/report.html"
    ;;
*)
    echo "HPCSCOPE_SLURM_STEP=$HPCSCOPE_SLURM_STEP: expected submit, task or merge" >&2
    exit 2
    ;;
esac
"#,
        version = env!("CARGO_PKG_VERSION"),
        summary = one_line(&plan.summary),
        tasks = plan.tasks,
        dep = flags.dependency.name(),
        name = flags
            .script
            .file_name()
            .map_or("SCRIPT".into(), |n| quote(Path::new(n))),
        what = one_line(&plan.what),
        hpcscope = quote(hpcscope),
        workdir = quote(&plan.workdir),
        task = plan.task,
        merge = plan.merge,
    ))
}

/// The process's file mode creation mask (`Umask:` of `/proc/self/status`; 0 when it
/// cannot be read).
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|m| u32::from_str_radix(m.trim(), 8).ok())
        })
        .unwrap_or(0)
}

/// `mode` made executable by those who can read it, less the umask: a new file written
/// with 0666 less the umask becomes what a file created with 0777 gets (0755 under umask
/// 022, 0700 under 077); a file that was there keeps its mode plus the execute bits
/// `chmod +x` would add where it is readable.
fn executable(mode: u32, umask: u32) -> u32 {
    mode | (((mode & 0o444) >> 2) & !umask)
}

/// Writes the script (executable, as far as the umask allows) and says how to submit it.
pub fn write(plan: &Plan, flags: &SlurmOptions) -> Result<()> {
    let path = &flags.script;
    let me = std::env::current_exe().context("cannot find the hpcscope binary")?;
    let text = script(plan, flags, &me)?;
    hpcscope_core::fs::write_atomic(path, text.as_bytes())
        .with_context(|| format!("cannot write '{}'", path.display()))?;
    // A regular file gets its execute bits; standard output and devices are left alone.
    if let Ok(hpcscope_core::fs::Destination::File(target)) =
        hpcscope_core::fs::Destination::of(path)
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&target)
            .with_context(|| format!("cannot read the mode of '{}'", target.display()))?
            .permissions()
            .mode()
            & 0o7777;
        std::fs::set_permissions(
            &target,
            std::fs::Permissions::from_mode(executable(mode, umask())),
        )
        .with_context(|| format!("cannot make '{}' executable", target.display()))?;
    }
    eprintln!(
        "wrote {}: {} array task(s) and a merge job; submit it with `bash {}`",
        path.display(),
        plan.tasks,
        path.display()
    );
    Ok(())
}

/// How sbatch reads what the generator writes: the oracle of the generator's quoting,
/// shared by its unit tests and the `slurm_script` fuzz target (feature `oracle`).
#[cfg(any(test, feature = "oracle"))]
pub mod oracle {
    /// One argument of an `#SBATCH` line as sbatch reads it (Slurm's `_get_argument`, on
    /// bytes with C's `isspace`): quotes group, a backslash escapes the next character, an
    /// unquoted `#` or blank (space, tab, newline, vertical tab, form feed, carriage
    /// return) ends it. Panics on an unmatched quote (sbatch refuses the line).
    pub fn sbatch_argument(line: &str) -> String {
        let blank = |c: char| c.is_ascii_whitespace() || c == '\x0b';
        let mut out = String::new();
        let (mut quote, mut escape) = (None, false);
        for c in line.trim_start_matches(blank).chars() {
            if escape {
                escape = false;
            } else if c == '\\' {
                escape = true;
                continue;
            } else if let Some(q) = quote {
                if c == q {
                    quote = None;
                    continue;
                }
            } else if c == '"' || c == '\'' {
                quote = Some(c);
                continue;
            } else if c == '#' || blank(c) {
                break;
            }
            out.push(c);
        }
        assert!(quote.is_none(), "unmatched quote: {line}");
        out
    }

    /// A Slurm file name pattern with `%%` read as `%` (the other patterns, `%A`, `%a`...,
    /// kept).
    pub fn unpattern(p: &str) -> String {
        let mut out = String::new();
        let mut it = p.chars().peekable();
        while let Some(c) = it.next() {
            out.push(c);
            if c == '%' && it.peek() == Some(&'%') {
                it.next();
            }
        }
        out
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn reads_as_sbatch_does() {
            assert_eq!(sbatch_argument("  'a b'\\ c # x"), "a b c");
            assert_eq!(sbatch_argument("x\x0by"), "x");
            assert_eq!(sbatch_argument("\u{a0}x"), "\u{a0}x");
            assert_eq!(unpattern("%%j-%A%%%%"), "%j-%A%%");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::oracle::{sbatch_argument, unpattern};
    use super::*;

    fn plan() -> Plan {
        Plan {
            what: "explore".into(),
            summary: "3 design points of s.toml".into(),
            tasks: 3,
            workdir: "/home/u/my runs".into(),
            run_dir: "/scratch/u/sweep".into(),
            task:
                r#"exec "$HPCSCOPE" explore s.toml --point "$SLURM_ARRAY_TASK_ID" --run-dir "$RUN""#
                    .into(),
            merge: String::new(),
        }
    }

    #[test]
    fn the_script_submits_an_array_and_a_merge_after_it() {
        let flags = SlurmOptions {
            script: "sweep.sh".into(),
            sbatch: vec!["--partition=short".into(), "--time=10".into()],
            dependency: Dependency::Afterok,
            max_parallel: Some(2),
        };
        let s = script(&plan(), &flags, Path::new("/opt/hpcscope")).unwrap();
        assert!(s.starts_with("#!/bin/bash\n"));
        assert!(
            s.contains(
                "--array=0-2%2 --partition=short --time=10 --export=ALL,HPCSCOPE_SLURM_STEP=task"
            ),
            "{s}"
        );
        assert!(s.contains("--dependency=afterok:\"$array\""), "{s}");
        assert!(s.contains("cd '/home/u/my runs'"), "{s}");
        assert!(s.contains("HPCSCOPE=/opt/hpcscope"));
        assert!(s.contains("RUN=\"$RUN_DIR/array-$SLURM_ARRAY_JOB_ID\""));
        assert!(
            s.contains("merge \"$RUN\"  --format json -o \"$RUN/merged.json\""),
            "{s}"
        );
        // bash accepts it.
        if let Ok(o) = std::process::Command::new("bash")
            .arg("-n")
            .stdin(std::process::Stdio::piped())
            .arg("/dev/stdin")
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(s.as_bytes())?;
                c.wait_with_output()
            })
        {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
    }

    /// bash's value of `NAME=WORD` lines of the script.
    fn bash_values(s: &str, names: &[&str]) -> Vec<Vec<u8>> {
        use std::io::Write;
        let assignments: String = s
            .lines()
            .filter(|l| names.iter().any(|n| l.starts_with(&format!("{n}="))))
            .map(|l| format!("{l}\n"))
            .collect();
        let mut script = assignments;
        for n in names {
            script.push_str(&format!("printf '%s\\0' \"${n}\"\n"));
        }
        let mut c = std::process::Command::new("bash")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin
            .take()
            .unwrap()
            .write_all(script.as_bytes())
            .unwrap();
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success());
        o.stdout
            .split(|&b| b == 0)
            .take(names.len())
            .map(<[u8]>::to_vec)
            .collect()
    }

    /// A run directory or a working directory with a newline wrote the text after it as a
    /// line of the script (`bash F` ran it), a space broke `#SBATCH --output=`: every path
    /// is now one line and reads back as it was, or is refused with what and how.
    #[test]
    fn hostile_paths_stay_on_their_line_or_are_refused() {
        use std::os::unix::ffi::OsStrExt;
        let flags = SlurmOptions {
            script: "x\ntouch pwned;.sh".into(),
            ..SlurmOptions::default()
        };
        let header = |s: &str| -> Vec<String> {
            s.lines()
                .take_while(|l| *l != "set -euo pipefail")
                .map(str::to_string)
                .collect()
        };
        let fine = [
            "/scratch/my runs/a b",
            "/s/it's \"quoted\" #1 $(touch pwned) `x` ; & |",
            "/s/100%/%A_%a%%j",
            "/s/caf\u{e9}/\u{8ba1}\u{7b97}",
        ];
        for dir in fine {
            let mut p = plan();
            p.run_dir = dir.into();
            p.workdir = std::ffi::OsStr::from_bytes(b"/home/u/new\nline/caf\xe9 'x'").into();
            let s = script(&p, &flags, Path::new("/opt/hpc scope/bin\n/hpcscope")).unwrap();
            let h = header(&s);
            assert_eq!(h.len(), 7, "{s}");
            assert!(h.iter().all(|l| l.starts_with('#')), "{s}");
            let out = h[6].strip_prefix("#SBATCH --output=").unwrap();
            assert_eq!(
                unpattern(&sbatch_argument(out)),
                format!("{dir}/slurm-%A_%a.out"),
                "{s}"
            );
            let v = bash_values(&s, &["RUN_DIR", "HPCSCOPE", "LOG_DIR"]);
            assert_eq!(v[0], dir.as_bytes(), "{s}");
            assert_eq!(v[1], b"/opt/hpc scope/bin\n/hpcscope", "{s}");
            assert_eq!(unpattern(&String::from_utf8_lossy(&v[2])), dir, "{s}");
            let cd = s.lines().find(|l| l.starts_with("cd ")).unwrap();
            assert_eq!(cd, r"cd $'/home/u/new\nline/caf\xe9 \'x\''", "{s}");
        }
        for (dir, why) in [
            ("/s/x\ntouch pwned;", "control character"),
            ("/s/x\rdate", "control character"),
            ("/s/a\\b", "backslash"),
        ] {
            let mut p = plan();
            p.run_dir = dir.into();
            let e = script(&p, &flags, Path::new("/h")).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("--run-dir"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let mut p = plan();
        p.run_dir = std::ffi::OsStr::from_bytes(b"/s/caf\xe9").into();
        let e = script(&p, &flags, Path::new("/h")).unwrap_err().to_string();
        assert!(
            e.contains("not UTF-8") && e.contains(r"$'/s/caf\xe9'"),
            "{e}"
        );
    }

    #[test]
    fn the_execute_bits_follow_the_umask() {
        assert_eq!(executable(0o644, 0o022), 0o755);
        assert_eq!(executable(0o600, 0o077), 0o700);
        assert_eq!(executable(0o640, 0o027), 0o750);
        assert_eq!(executable(0o664, 0o002), 0o775);
        // An existing file readable by its owner only stays private.
        assert_eq!(executable(0o600, 0o022), 0o700);
        assert_eq!(executable(0o755, 0o077), 0o755);
    }

    #[test]
    fn options_that_would_break_the_array_are_refused() {
        for bad in ["--array=0-9", "--dependency=afterok:1", "partition=x"] {
            let flags = SlurmOptions {
                script: "s.sh".into(),
                sbatch: vec![bad.into()],
                ..SlurmOptions::default()
            };
            let e = script(&plan(), &flags, Path::new("/h")).unwrap_err();
            assert!(e.to_string().contains("--sbatch"), "{e}");
        }
        let flags = SlurmOptions {
            max_parallel: Some(0),
            ..SlurmOptions::default()
        };
        assert!(script(&plan(), &flags, Path::new("/h")).is_err());
    }
}
