//! `hpcscope hosts record` and `hosts validate` end to end: a record of this host (one
//! workload, three rounds, a given machine file), a second host made from it (another
//! machine file, twice the rate), the projection between them under the real QEMU and
//! plugin; and the refusals. The QEMU part is skipped, with a line saying why, where
//! qemu-user, gcc or the plugin is missing.

mod common;

use std::path::Path;
use std::process::Output;

use hpcscope_test_support::{bin, stderr};
use serde_json::Value;

fn hpcscope(plugin: Option<&Path>, args: &[&str]) -> Output {
    let mut c = bin!();
    if let Some(p) = plugin {
        c.env("HPCSCOPE_QEMU_PLUGIN", p);
    }
    c.args(args).output().unwrap()
}

fn host_machine(name: &str) -> String {
    format!(
        "{}/../../data/hosts/{name}/machine.toml",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A host record in `dir` with one key whose sha256 is `sha`.
fn fake_record(dir: &Path, machine: &str, sha: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(host_machine(machine), dir.join("machine.toml")).unwrap();
    let runs: Vec<Value> = [0.25, 0.26, 0.24]
        .iter()
        .map(|t| serde_json::json!({"flops": 6e8, "time_s": t, "cpu_s": t}))
        .collect();
    let m = serde_json::json!({
        "host": {"cpu_model": "test"},
        "measurements": {"x86-64/triad@1": {
            "build": "x86-64", "workload": "triad", "args": ["1000", "3"], "threads": 1,
            "sha256": sha, "runs": runs, "timed_by": "cpu_s", "flops": 6e8,
            "median_s": 0.25, "spread": 0.08, "gflops_median": 2.4
        }}
    });
    std::fs::write(dir.join("measurements.json"), m.to_string()).unwrap();
}

#[test]
fn refusals_say_what_and_how_to_fix() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a");
    fake_record(&a, "amd-epyc-25-17", &"0".repeat(64));
    // One host: nothing to project onto.
    let o = hpcscope(None, &["hosts", "validate", a.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("two or more host directories"),
        "{}",
        stderr(&o)
    );
    // Not a record.
    let o = hpcscope(
        None,
        &[
            "hosts",
            "validate",
            a.to_str().unwrap(),
            d.path().to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("machine.toml"), "{}", stderr(&o));
    // A field out of range names the file, the entry and the field.
    let bad = d.path().join("bad");
    fake_record(&bad, "intel-xeon-6-167", &"0".repeat(64));
    let p = bad.join("measurements.json");
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, text.replace("\"median_s\":0.25", "\"median_s\":-1")).unwrap();
    let o = hpcscope(
        None,
        &[
            "hosts",
            "validate",
            a.to_str().unwrap(),
            bad.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("measurements.json") && e.contains("x86-64/triad@1.median_s"),
        "{e}"
    );
    // A record is not written over.
    let o = hpcscope(None, &["hosts", "record", a.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
}

#[test]
fn a_binary_this_compiler_builds_otherwise_is_refused() {
    if common::which("gcc").is_none() {
        println!("skipping: gcc is not installed");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    // Both hosts measured a binary whose sha256 no compiler gives.
    fake_record(&a, "amd-epyc-25-17", &"0".repeat(64));
    fake_record(&b, "intel-xeon-6-167", &"0".repeat(64));
    let build = d.path().join("build");
    let o = hpcscope(
        None,
        &[
            "hosts",
            "validate",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--build-dir",
            build.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("x86-64/triad@1: the compiler differs") && e.contains("fix:"),
        "{e}"
    );
}

/// Rewrites the record in `dir` for small arguments (so that QEMU runs them in a second)
/// and, with `speedup`, as a host `speedup` times as fast.
fn edit_record(dir: &Path, speedup: f64) {
    let p = dir.join("measurements.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    for m in v["measurements"].as_object_mut().unwrap().values_mut() {
        m["args"] = serde_json::json!(["20000", "3"]);
        for r in m["runs"].as_array_mut().unwrap() {
            for k in ["time_s", "cpu_s"] {
                if let Some(t) = r[k].as_f64() {
                    r[k] = (t / speedup).into();
                }
            }
        }
        m["median_s"] = (m["median_s"].as_f64().unwrap() / speedup).into();
        m["gflops_median"] = (m["gflops_median"].as_f64().unwrap() * speedup).into();
    }
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
}

#[test]
fn a_recorded_host_is_projected_onto_another() {
    let Some(plugin) = common::qemu_plugin_ready() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("here"), d.path().join("there"));
    let build = d.path().join("build");
    let o = hpcscope(
        None,
        &[
            "hosts",
            "record",
            a.to_str().unwrap(),
            "--runs",
            "3",
            "--workloads",
            "triad",
            "--machine",
            &host_machine("amd-epyc-25-17"),
            "--build-dir",
            build.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let rec: Value =
        serde_json::from_str(&std::fs::read_to_string(a.join("measurements.json")).unwrap())
            .unwrap();
    let ms = rec["measurements"].as_object().unwrap();
    let keys: Vec<&String> = ms.keys().collect();
    assert_eq!(keys, ["x86-64-v3/triad@1", "x86-64/triad@1"]);
    for m in ms.values() {
        assert_eq!(m["runs"].as_array().unwrap().len(), 3);
        assert_eq!(m["timed_by"], "cpu_s");
        assert_eq!(m["args"], serde_json::json!(["1000000", "300"]));
        let g = m["gflops_median"].as_f64().unwrap();
        assert!(g > 0.05 && g < 1000.0, "{g}");
    }
    assert!(
        rec["host"]["cpu_model"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    assert!(a.join("machine.toml").is_file());
    // The other host: the same binaries, another machine file, twice as fast.
    std::fs::create_dir_all(&b).unwrap();
    std::fs::copy(host_machine("intel-xeon-6-167"), b.join("machine.toml")).unwrap();
    std::fs::copy(a.join("measurements.json"), b.join("measurements.json")).unwrap();
    edit_record(&a, 1.0);
    edit_record(&b, 2.0);
    // Another kind of CPU: two records of one kind are repeats, not two machines.
    let host_of = |dir: &Path, host: Value| {
        let p = dir.join("measurements.json");
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let old = std::mem::replace(&mut v["host"], host);
        std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
        old
    };
    let here_host = host_of(
        &b,
        serde_json::json!({"cpu_model": "Intel(R) Xeon(R) Processor", "family": "6", "model": "167"}),
    );
    let cache = d.path().join("cache");
    // `hosts validate` of the two records, with `extra` arguments.
    let validate = |extra: [&str; 2]| {
        let mut args = vec![
            "hosts",
            "validate",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--build-dir",
            build.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
        ];
        args.extend(extra);
        hpcscope(Some(&plugin), &args)
    };
    let run = || validate(["--format", "json"]);
    let o = run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("[1/2] x86-64-v3/triad@1: characterizing for here, there"));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let pairs = v["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 4);
    let here_there = pairs
        .iter()
        .find(|p| p["key"] == "x86-64/triad@1" && p["source"] == "here")
        .unwrap();
    assert_eq!(here_there["target"], "there");
    assert!((here_there["measured_ratio"].as_f64().unwrap() - 2.0).abs() < 1e-9);
    assert!((here_there["no_change_error"].as_f64().unwrap() + 0.5).abs() < 1e-9);
    let r = &here_there["pair"];
    let (lo, hi) = (
        r["interval"]["lo"].as_f64().unwrap(),
        r["interval"]["hi"].as_f64().unwrap(),
    );
    assert!(lo > 0.0 && hi >= lo, "[{lo}, {hi}]");
    assert_eq!(r["change"], "machine");
    assert!(r["point"]["gflops"].as_f64().is_some());
    let labels: Vec<&str> = v["summary"]["subsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["label"].as_str().unwrap())
        .collect();
    assert!(labels.contains(&"here -> there, 1 thread"), "{labels:?}");
    assert!(!String::from_utf8_lossy(&o.stdout).contains("NaN"));
    // Again: the characterizations come from the cache, the figures are the same.
    let again = run();
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("(taken from the cache)"),
        "{}",
        stderr(&again)
    );
    let w: Value = serde_json::from_slice(&again.stdout).unwrap();
    // Bit for bit: JSON keeps every float exactly (`float_roundtrip`).
    for (x, y) in w["pairs"].as_array().unwrap().iter().zip(pairs) {
        assert_eq!(x["pair"]["interval"], y["pair"]["interval"]);
    }
    // The text names each pair and the targets.
    let text_run = || validate(["--workloads", "triad"]);
    let t = text_run();
    let text = String::from_utf8_lossy(&t.stdout);
    assert!(
        text.contains("x86-64/triad@1") && text.contains("here -> there"),
        "{text}"
    );
    assert!(text.contains("target all pairs: inside >= 80 %"), "{text}");
    // Both records of this host's CPU: repeats, summed up apart, no target.
    host_of(&b, here_host);
    let t = text_run();
    assert!(t.status.success(), "{}", stderr(&t));
    let text = String::from_utf8_lossy(&t.stdout);
    assert!(
        text.contains("here -> there") && text.contains(", same CPU"),
        "{text}"
    );
    assert!(
        text.contains("same CPU (repeat records), 1 thread: 4 pairs"),
        "{text}"
    );
    assert!(
        !text.contains("target ") && text.contains("were recorded on the same kind of CPU"),
        "{text}"
    );
}
