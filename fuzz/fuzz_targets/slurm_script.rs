//! The Slurm job-array script of `record --slurm` and `explore --slurm`, written around
//! hostile paths: the run directory, the working directory, the hpcscope binary and the
//! script's name are arbitrary bytes (the input split at NUL bytes), the summary arbitrary
//! text.
//!
//! The script is refused exactly when Slurm cannot carry the run directory (not UTF-8, a
//! control character, a backslash). Otherwise no path adds or splits a line: the head is
//! the same seven comment and `#SBATCH` lines before `set -euo pipefail`, the script has as
//! many lines as with plain paths; `#SBATCH --output=`, read as sbatch reads a directive and
//! as Slurm expands a file name, is the run directory's log file; and `RUN_DIR=`,
//! `HPCSCOPE=` and `cd`, read as bash reads a word, give back the paths byte for byte.
#![no_main]
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use hpcscope_job::slurm::oracle::{sbatch_argument, unpattern};
use hpcscope_job::slurm::{Plan, SlurmOptions, script};
use libfuzzer_sys::fuzz_target;

fn plan(run_dir: &[u8], workdir: &[u8], summary: &str) -> Plan {
    Plan {
        what: "record".into(),
        summary: summary.into(),
        tasks: 3,
        workdir: PathBuf::from(OsStr::from_bytes(workdir)),
        run_dir: PathBuf::from(OsStr::from_bytes(run_dir)),
        task: r#"exec "$HPCSCOPE" record --run-dir "$RUN" -- true"#.into(),
        merge: "--all".into(),
    }
}

fn options(name: &[u8]) -> SlurmOptions {
    SlurmOptions {
        script: PathBuf::from(OsStr::from_bytes(name)),
        ..SlurmOptions::default()
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(5, |&b| b == 0);
    let run_dir = parts.next().unwrap_or_default();
    let workdir = parts.next().unwrap_or_default();
    let hpcscope = parts.next().unwrap_or_default();
    let name = parts.next().unwrap_or_default();
    let summary = String::from_utf8_lossy(parts.next().unwrap_or_default());
    let exe = Path::new(OsStr::from_bytes(hpcscope));
    let r = script(&plan(run_dir, workdir, &summary), &options(name), exe);
    let carried = std::str::from_utf8(run_dir)
        .is_ok_and(|s| !s.chars().any(char::is_control) && !s.contains('\\'));
    let s = match r {
        Err(e) => {
            assert!(!carried, "refused a run directory Slurm can carry: {e}");
            assert!(e.to_string().contains("--run-dir"), "{e}");
            return;
        }
        Ok(s) => {
            assert!(carried, "accepted a run directory Slurm cannot carry:\n{s}");
            s
        }
    };
    let plain = script(
        &plan(b"/runs", b"/work", "plain"),
        &options(b"s.sh"),
        Path::new("/bin/h"),
    )
    .unwrap();
    assert_eq!(s.lines().count(), plain.lines().count(), "{s}");
    let lines: Vec<&str> = s.lines().collect();
    assert!(lines[..7].iter().all(|l| l.starts_with('#')), "{s}");
    assert_eq!(lines[7], "set -euo pipefail", "{s}");
    let output = lines[6]
        .strip_prefix("#SBATCH --output=")
        .unwrap_or_else(|| panic!("{s}"));
    let mut want = run_dir.to_vec();
    want.extend_from_slice(b"/slurm-%A_%a.out");
    assert_eq!(
        unpattern(&sbatch_argument(output)).as_bytes(),
        want.as_slice(),
        "{s}"
    );
    let value = |prefix: &str| -> Vec<u8> {
        let l = lines
            .iter()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix} line:\n{s}"));
        bash_word(l).unwrap_or_else(|| panic!("{prefix}{l} is not one word:\n{s}"))
    };
    assert_eq!(value("RUN_DIR="), run_dir, "{s}");
    assert_eq!(value("HPCSCOPE="), hpcscope, "{s}");
    assert_eq!(value("cd "), workdir, "{s}");
});

/// The bytes of a whole line read as one bash word: plain characters, `'...'`, `\c` and
/// `$'...'` (with `\\`, `\'`, `\n`, `\t`, `\xHH`). `None` when the line is not exactly one
/// word.
fn bash_word(line: &str) -> Option<Vec<u8>> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'$' if b.get(i + 1) == Some(&b'\'') => {
                i += 2;
                loop {
                    match *b.get(i)? {
                        b'\'' => break,
                        b'\\' => {
                            let e = *b.get(i + 1)?;
                            i += 2;
                            match e {
                                b'n' => out.push(b'\n'),
                                b't' => out.push(b'\t'),
                                b'\\' | b'\'' => out.push(e),
                                b'x' => {
                                    let h = std::str::from_utf8(b.get(i..i + 2)?).ok()?;
                                    out.push(u8::from_str_radix(h, 16).ok()?);
                                    i += 2;
                                }
                                _ => return None,
                            }
                            continue;
                        }
                        c => out.push(c),
                    }
                    i += 1;
                }
                i += 1;
            }
            b'\'' => {
                let end = i + 1 + b[i + 1..].iter().position(|&c| c == b'\'')?;
                out.extend_from_slice(&b[i + 1..end]);
                i = end + 1;
            }
            b'\\' => {
                out.push(*b.get(i + 1)?);
                i += 2;
            }
            c if c.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&c) => {
                out.push(c);
                i += 1;
            }
            _ => return None,
        }
    }
    Some(out)
}
