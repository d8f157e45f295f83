//! Hostile inputs: every reader of a user's file is bounded by one input limit
//! (`HPCSCOPE_MAX_INPUT_MB`, 1 GiB by default). A regular file over it is refused from its
//! size, a device that never ends once past it (or at its first byte where text is wanted),
//! a value of the variable that is not a limit is refused rather than ignored, and a metrics
//! file that cannot be taken never loses the measured run.

use hpcscope_test_support::bin;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `args` with `HPCSCOPE_MAX_INPUT_MB=limit_mb`; `None` when it is still running after
/// `secs` seconds (it is killed then).
fn run_within(args: &[&str], limit_mb: &str, dir: &Path, secs: u64) -> Option<Output> {
    let mut c = bin!()
        .args(args)
        .env("HPCSCOPE_MAX_INPUT_MB", limit_mb)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(secs) {
        if c.try_wait().unwrap().is_some() {
            return Some(c.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = c.kill();
    let _ = c.wait();
    None
}

/// The commands that read a file of the user's, with `F` where the file goes.
const READERS: &[&[&str]] = &[
    &["machine", "import", "F"],
    &["counters", "recipes", "--recipe-file", "F"],
    &["counters", "validate", "--counted", "F"],
    &["model", "kernel", "-f", "main", "F"],
    &["record", "--db", "h.db", "--machine", "F", "--", "true"],
    &["profile", "import", "F"],
    &["profile", "export", "F", "--to", "pprof", "-o", "out.pb.gz"],
    &["profile", "diff", "F", "F"],
];

fn with_file<'a>(args: &[&'a str], f: &'a str) -> Vec<&'a str> {
    args.iter().map(|a| if *a == "F" { f } else { a }).collect()
}

#[test]
fn every_reader_refuses_a_file_over_the_limit_from_its_size() {
    let d = tempfile::tempdir().unwrap();
    // 2 MiB against a limit of 1 MiB: they used to read it whole (2 GiB files: 2.1 GB
    // resident) and then fail on its contents, or take it.
    let big = d.path().join("big.yml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(2 << 20)
        .unwrap();
    let mut bad = Vec::new();
    for args in READERS {
        let a = with_file(args, "big.yml");
        match run_within(&a, "1", d.path(), 60) {
            Some(o) => {
                let err = String::from_utf8_lossy(&o.stderr);
                if o.status.code() != Some(2)
                    || !err.contains("2 MiB, larger than the input limit of 1 MiB")
                    || !err.contains("HPCSCOPE_MAX_INPUT_MB=2")
                {
                    bad.push(format!("{a:?}: exit {:?}: {err}", o.status.code()));
                }
            }
            None => bad.push(format!("{a:?}: still running after 60 s")),
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn a_device_that_never_ends_is_refused_not_read_forever() {
    let d = tempfile::tempdir().unwrap();
    let mut bad = Vec::new();
    for args in READERS {
        let a = with_file(args, "/dev/zero");
        match run_within(&a, "1", d.path(), 60) {
            Some(o) => {
                let err = String::from_utf8_lossy(&o.stderr);
                // Text is refused at its first byte, a binary once past the limit.
                if o.status.code() != Some(2)
                    || !(err.contains("byte 0x00 at line 1 (byte offset 0)")
                        || err.contains("larger than the input limit of 1 MiB"))
                {
                    bad.push(format!("{a:?}: exit {:?}: {err}", o.status.code()));
                }
            }
            None => bad.push(format!("{a:?}: still running after 60 s")),
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn a_limit_that_is_not_a_positive_whole_number_of_mib_is_refused_not_ignored() {
    let d = tempfile::tempdir().unwrap();
    let prof = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/scenarios/tx2-source.json")
        .display()
        .to_string();
    let args = ["roofline", "-m", "thunderx2", "-p", prof.as_str()];
    for v in ["0", "-1", "abc", "1e3", " 5", "5 ", "+5", ""] {
        let o = run_within(&args, v, d.path(), 60).expect("roofline ended");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{v:?}: {err}");
        assert!(
            err.contains(&format!("HPCSCOPE_MAX_INPUT_MB='{v}'"))
                && err.contains("give a whole number of MiB, 1 or more, digits only")
                && err.contains("unset it for the default"),
            "{v:?}: {err}"
        );
        assert!(o.stdout.is_empty(), "{v:?}: a result was printed");
    }
    // A good value works.
    let o = run_within(&args, "4096", d.path(), 60).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn metrics_json_that_cannot_be_taken_keeps_the_measured_run() {
    let d = tempfile::tempdir().unwrap();
    // Valid JSON, nested deeper than serde_json reads (128 levels).
    std::fs::write(
        d.path().join("deep.src"),
        format!("{}{}", "[".repeat(200), "]".repeat(200)),
    )
    .unwrap();
    let o = run_within(
        &[
            "record",
            "-n",
            "2",
            "--db",
            "h.db",
            "--metrics-json",
            "m.json",
            "--",
            "sh",
            "-c",
            "cat deep.src > m.json",
        ],
        "1024",
        d.path(),
        60,
    )
    .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("nested deeper than 128 levels")
            && err.contains("recorded without the numbers of --metrics-json"),
        "{err}"
    );
    let o = bin!()
        .args(["history", "list", "--format", "json", "--db", "h.db"])
        .current_dir(d.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 2, "both measured runs are kept: {v}");
    assert!(
        runs.iter()
            .all(|r| r["record"]["metrics"].to_string().contains("time_s")),
        "{v}"
    );
}
