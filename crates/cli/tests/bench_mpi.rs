//! `hpcscope bench mpi` end to end.
//!
//! One test runs the real benchmark: 2 Open MPI ranks on this node in quick mode (a few
//! seconds). It needs mpicc and mpirun (`scripts/setup.sh` installs openmpi-bin and
//! libopenmpi-dev): without them it fails under CI=true and is skipped elsewhere. The other
//! tests put stand-in tools on PATH (an `mpicc` that writes a shell script, a launcher that
//! runs it), so the parsing, the fit, the outputs, the machine-file update and every
//! failure path are checked on any machine, with exactly known times.

mod common;
use common::which;

use hpcscope_test_support::{stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = hpcscope_test_support::bin!();
    c.env_remove("HPCSCOPE_MPICC");
    c
}

fn write_exe(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A machine file with a comment of its own, as a user keeps one.
fn machine_file(dir: &Path) -> (PathBuf, String) {
    let o = bin()
        .args(["machine", "show", "thunderx2", "--format", "toml"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let text = format!("# our node: keep this comment\n{}", stdout(&o));
    let p = dir.join("node.toml");
    std::fs::write(&p, &text).unwrap();
    (p, text)
}

/// A directory with stand-ins: `mpicc` writes `program` as the "compiled" benchmark, and
/// `fakerun` runs what it is given (the launcher). Returns the PATH to use.
fn fake_tools(dir: &Path, program: &str) -> String {
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let prog = dir.join("program.sh");
    write_exe(&prog, program);
    write_exe(
        &tools.join("mpicc"),
        &format!(
            "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then out=\"$2\"; fi; shift; done\ncp '{}' \"$out\"\nchmod +x \"$out\"\n",
            prog.display()
        ),
    );
    write_exe(
        &tools.join("fakerun"),
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'fakerun 1.0'; exit 0; }\nexec \"$@\"\n",
    );
    format!("{}:/usr/bin:/bin", tools.display())
}

/// The output of a benchmark whose PingPong takes exactly 0.3 µs + n / 5000 B/µs.
fn synthetic_output(sizes: &[u64]) -> String {
    let mut s = String::from(
        "#!/bin/sh\ncat <<'EOF'\nhpcscope-mpi begin 1\nhpcscope-mpi library Fake MPI 1.0\nhpcscope-mpi standard 3.1\nhpcscope-mpi ranks 2\nhpcscope-mpi host 0 n1\nhpcscope-mpi host 1 n1\n",
    );
    for &n in sizes {
        let t = 0.3 + n as f64 / 5000.0;
        s.push_str(&format!("hpcscope-mpi row pingpong {n} 10 {t} {t} {t}\n"));
        let t2 = 0.5 + n as f64 / 4000.0;
        s.push_str(&format!(
            "hpcscope-mpi row sendrecv {n} 10 {t2} {t2} {t2}\n"
        ));
    }
    s.push_str("hpcscope-mpi end\nEOF\n");
    s
}

fn sizes() -> Vec<u64> {
    std::iter::once(0)
        .chain((0..=22).map(|k| 1u64 << k))
        .collect()
}

fn fake_run(dir: &Path, path: &str, args: &[&str]) -> Output {
    bin()
        .env("PATH", path)
        .env("HPCSCOPE_CACHE_DIR", dir.join("cache"))
        .args(["bench", "mpi", "--launcher", "fakerun"])
        .args(args)
        .output()
        .unwrap()
}

/// The real thing: 2 ranks of Open MPI on this node, quick mode, written to a machine file.
#[test]
fn real_two_rank_run_updates_a_machine_file() {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    for tool in ["mpicc", "mpirun"] {
        if which(tool).is_none() {
            assert!(
                !ci,
                "{tool} is not installed: scripts/setup.sh installs openmpi-bin and libopenmpi-dev"
            );
            println!("skipping: {tool} is not installed (scripts/setup.sh installs it)");
            return;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let (m, before) = machine_file(dir.path());
    let json = dir.path().join("mpi.json");
    let svg = dir.path().join("mpi.svg");
    let o = bin()
        .env("HPCSCOPE_CACHE_DIR", dir.path().join("cache"))
        .args(["bench", "mpi", "--quick", "--repeat", "5", "--update"])
        .arg(&m)
        .arg("-o")
        .arg(&json)
        .arg("--svg")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // The command that ran is said on stderr, with the flags added for root.
    let err = stderr(&o);
    assert!(err.contains("running: mpirun -np 2"), "{err}");
    if hpcscope_test_support::is_root() {
        assert!(err.contains("--allow-run-as-root"), "{err}");
    }
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["ranks"], 2);
    assert_eq!(r["placement"], "intra-node");
    assert!(r["mpi_library"].as_str().unwrap().contains("MPI"), "{r}");
    let benches = r["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), 4);
    let pp = &benches[0];
    assert_eq!(pp["benchmark"], "pingpong");
    let rows = pp["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 24);
    let t = |i: usize| rows[i]["t_avg_us"].as_f64().unwrap();
    for (i, row) in rows.iter().enumerate() {
        let (lo, hi) = (
            row["t_min_us"].as_f64().unwrap(),
            row["t_max_us"].as_f64().unwrap(),
        );
        assert!(lo > 0.0 && lo <= t(i) && t(i) <= hi, "{row}");
        // IMB's PingPong bandwidth: bytes / t_max.
        let b = row["bytes"].as_f64().unwrap();
        let mbs = row["mbytes_per_s"].as_f64().unwrap();
        assert!((mbs - b / hi).abs() <= 1e-9 * mbs.max(1.0), "{row}");
    }
    // Sizes 1 B (row 1), 64 KiB (row 17), 4 MiB (row 23): more bytes take longer.
    assert!(t(23) > t(17) && t(17) > t(1), "{}", pp["rows"]);
    // One node: latency positive and below 1 ms; bandwidth above 10 MB/s.
    let fit = &pp["fit"];
    let t0 = fit["t0_us"].as_f64().unwrap();
    let bw = fit["bandwidth_mbs"].as_f64().unwrap();
    assert!(t0 > 0.0 && t0 < 1000.0, "t0 = {t0}");
    assert!(bw > 10.0, "B = {bw} MB/s");
    assert!(rows[23]["mbytes_per_s"].as_f64().unwrap() > 10.0);
    // Sendrecv counts both directions.
    let sr = &benches[1]["rows"][23];
    let k2 = 2.0 * 4_194_304.0 / sr["t_max_us"].as_f64().unwrap();
    assert!((sr["mbytes_per_s"].as_f64().unwrap() - k2).abs() < 1e-6 * k2);
    // The machine file: the link added, everything else kept.
    let after = std::fs::read_to_string(&m).unwrap();
    assert!(
        after.starts_with(&before),
        "the update rewrote the existing text"
    );
    let o = bin()
        .args(["machine", "show"])
        .arg(&m)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mj: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let link = &mj["network"][0];
    assert_eq!(link["name"], "mpi-intra-node");
    // Four significant digits.
    assert!((link["latency_us"].as_f64().unwrap() - t0).abs() <= 1e-3 * t0);
    assert!((link["bandwidth_gbs"].as_f64().unwrap() - bw / 1000.0).abs() <= 1e-3 * bw / 1000.0);
    assert!(
        link["launcher"]
            .as_str()
            .unwrap()
            .starts_with("mpirun -np 2")
    );
    assert!(
        link["provenance"]
            .as_str()
            .unwrap()
            .contains("hpcscope bench mpi")
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("PingPong Hockney model") && svg.trim_end().ends_with("</svg>"));
}

/// Known times in, known latency and bandwidth out, in every format and in the machine file.
#[test]
fn synthetic_times_give_the_known_link_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake_tools(dir.path(), &synthetic_output(&sizes()));
    let (m, before) = machine_file(dir.path());
    let toml_out = dir.path().join("link.toml");
    let o = fake_run(
        dir.path(),
        &path,
        &[
            "--update",
            m.to_str().unwrap(),
            "-o",
            toml_out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("running: fakerun "), "{}", stderr(&o));
    // -o x.toml is the [[network]] link alone; appended to the machine file it validates.
    let frag = std::fs::read_to_string(&toml_out).unwrap();
    assert!(
        frag.contains("[[network]]") && frag.contains("latency_us = 0.3"),
        "{frag}"
    );
    let appended = dir.path().join("appended.toml");
    std::fs::write(&appended, format!("{before}\n{frag}")).unwrap();
    let o = bin()
        .args(["machine", "validate"])
        .arg(&appended)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // --update: the same link, the rest of the file untouched.
    let after = std::fs::read_to_string(&m).unwrap();
    assert!(after.starts_with(&before));
    let o = bin()
        .args(["machine", "show"])
        .arg(&m)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let mj: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let link = &mj["network"][0];
    assert!(
        (link["latency_us"].as_f64().unwrap() - 0.3).abs() < 1e-9,
        "{link}"
    );
    assert!(
        (link["bandwidth_gbs"].as_f64().unwrap() - 5.0).abs() < 1e-9,
        "{link}"
    );
    assert!(
        (link["n_half_bytes"].as_f64().unwrap() - 1500.0).abs() < 1e-6,
        "{link}"
    );
    assert_eq!(link["mpi_library"], "Fake MPI 1.0");
    assert_eq!(link["fit"]["sizes_bytes"].as_array().unwrap().len(), 24);
    // machine show's table lists the link.
    let o = bin().args(["machine", "show"]).arg(&m).output().unwrap();
    assert!(stdout(&o).contains("mpi-intra-node"), "{}", stdout(&o));
    // A second update replaces the link instead of adding one.
    let o = fake_run(
        dir.path(),
        &path,
        &["--update", m.to_str().unwrap(), "--format", "csv"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&m)
            .unwrap()
            .matches("[[network]]")
            .count(),
        1
    );
    // CSV: one line per row, Sendrecv's bandwidth counts both directions.
    let csv = stdout(&o);
    assert!(csv.starts_with(
        "benchmark,bytes,repetitions,t_min_us,t_max_us,t_avg_us,mbytes_per_s,model_us\n"
    ));
    assert_eq!(csv.lines().count(), 1 + 48);
    let line = csv
        .lines()
        .find(|l| l.starts_with("sendrecv,4096,"))
        .unwrap();
    let mbs: f64 = line.split(',').nth(6).unwrap().parse().unwrap();
    assert!(
        (mbs - 2.0 * 4096.0 / (0.5 + 4096.0 / 4000.0)).abs() < 1e-6,
        "{line}"
    );
    // The table states the conventions; JSON carries the fits; Markdown has the tables.
    let o = fake_run(dir.path(), &path, &[]);
    let text = stdout(&o);
    assert!(
        text.contains("MB = 10^6 B") && text.contains("# Benchmarking PingPong"),
        "{text}"
    );
    assert!(text.contains("t0 = 0.3000 µs, B = 5000.0 MB/s"), "{text}");
    let o = fake_run(
        dir.path(),
        &path,
        &["--format", "json", "--fit-weights", "absolute"],
    );
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["benchmarks"][1]["fit"]["weights"], "absolute");
    // Sendrecv: k = 2, so B = 2 x 4000 = 8000 MB/s.
    assert!((r["benchmarks"][1]["fit"]["bandwidth_mbs"].as_f64().unwrap() - 8000.0).abs() < 1e-6);
    let o = fake_run(dir.path(), &path, &["--format", "md"]);
    assert!(
        stdout(&o).contains("### PingPong\n\n| #bytes |"),
        "{}",
        stdout(&o)
    );
}

/// PATH without mpicc: exit 3, the Debian packages named, no output file.
#[test]
fn missing_mpicc_is_an_environment_limit() {
    let dir = tempfile::tempdir().unwrap();
    fake_tools(dir.path(), "#!/bin/sh\nexit 0\n");
    std::fs::remove_file(dir.path().join("tools/mpicc")).unwrap();
    let out = dir.path().join("r.json");
    // /usr/bin may hold a real mpicc: keep only the stand-in launcher and a shell on PATH.
    let bare = dir.path().join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    std::os::unix::fs::symlink("/bin/sh", bare.join("sh")).unwrap();
    let path = format!("{}:{}", dir.path().join("tools").display(), bare.display());
    let o = fake_run(dir.path(), &path, &["-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("'mpicc'") && e.contains("libopenmpi-dev"), "{e}");
    assert!(e.contains("--mpicc") && e.contains("fix:"), "{e}");
    assert!(!out.exists());
    // No launcher either: its package is named.
    let o = bin()
        .env("PATH", &bare)
        .args(["bench", "mpi"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("openmpi-bin"), "{}", stderr(&o));
}

/// A run that dies after two rows: exit 3, the two rows shown, nothing written.
#[test]
fn a_crashed_run_keeps_its_rows_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let program = "#!/bin/sh\necho 'hpcscope-mpi begin 1'\necho 'hpcscope-mpi ranks 2'\necho 'hpcscope-mpi row pingpong 0 1000 0.3 0.3 0.3'\necho 'hpcscope-mpi row pingpong 1 1000 0.4 0.4 0.4'\necho 'rank 1 died: signal 11' >&2\nexit 139\n";
    let path = fake_tools(dir.path(), program);
    let (m, before) = machine_file(dir.path());
    let out = dir.path().join("r.json");
    let o = fake_run(
        dir.path(),
        &path,
        &["--update", m.to_str().unwrap(), "-o", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("the MPI run failed"), "{e}");
    assert!(e.contains("rank 1 died: signal 11"), "{e}");
    assert!(e.contains("rows measured before it stopped (2)"), "{e}");
    assert!(e.contains("pingpong 1 B x1000"), "{e}");
    assert!(!out.exists());
    assert_eq!(std::fs::read_to_string(&m).unwrap(), before);
    // Exit 0 but no end line: the same.
    let program = "#!/bin/sh\necho 'hpcscope-mpi begin 1'\necho 'hpcscope-mpi row pingpong 0 1000 0.3 0.3 0.3'\n";
    let path = fake_tools(dir.path(), program);
    let _ = std::fs::remove_dir_all(dir.path().join("cache"));
    let o = fake_run(dir.path(), &path, &["-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("before its end line"), "{}", stderr(&o));
    assert!(!out.exists());
}

/// A hung run is stopped at --timeout with its whole process group.
#[test]
fn a_hung_run_is_stopped_at_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake_tools(
        dir.path(),
        "#!/bin/sh\necho 'hpcscope-mpi begin 1'\nsleep 60\n",
    );
    let start = std::time::Instant::now();
    let o = fake_run(dir.path(), &path, &["--timeout", "1"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("did not finish within 1 s"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("--timeout"), "{}", stderr(&o));
    // Not a speed assertion: the sleep of 60 s must not have been waited for.
    assert!(start.elapsed().as_secs() < 50);
}

/// Bad input fails before anything runs: exit 2 with the flag and a fix.
#[test]
fn bad_input_fails_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake_tools(dir.path(), "#!/bin/sh\necho ran > ran.txt\n");
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "format_version = 1\nid = \"x\"\n").unwrap();
    for args in [
        vec!["--update", broken.to_str().unwrap()],
        vec!["--update", "/nonexistent/m.toml"],
        vec!["--sizes", "1k,zz"],
        vec!["--benchmarks", "sendrecv", "--format", "toml"],
        vec!["--pairs", "inter"],
    ] {
        let o = fake_run(dir.path(), &path, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("fix:"), "{args:?}: {}", stderr(&o));
    }
    let o = fake_run(dir.path(), &path, &["--update", broken.to_str().unwrap()]);
    assert!(stderr(&o).contains("--update"), "{}", stderr(&o));
}
