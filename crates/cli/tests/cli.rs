//! CLI tests: run the real `hpcscope` binary on the built-in machines, the example scenario
//! and broken inputs; check outputs, exit codes and that no partial file is left behind.

use hpcscope_test_support::{bin, repo_root, stderr, stdout};
mod common;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    bin!().args(args).output().expect("run hpcscope")
}

/// Writes the worked example's source and target profiles (002 notes 5B) into `dir`.
fn worked_example(dir: &Path) -> (PathBuf, PathBuf) {
    let src = dir.join("tx2.json");
    let tgt = dir.join("n1.json");
    let prof = |flops: f64, fp: f64, total: f64, time: Option<f64>| {
        let mut th = serde_json::json!({
            "thread": 0, "flops": flops, "fp_instructions": fp,
            "memory": {"bytes_total": total, "hit_ratios": {"kind": "local", "levels": [
                {"level": "L1", "ratio": 0.9}, {"level": "L2", "ratio": 0.6}]}}
        });
        if let Some(t) = time {
            th["time_s"] = serde_json::json!(t);
        }
        serde_json::json!({"format_version": 1, "application": "worked-example", "isa": "aarch64",
            "vector_bits": 128, "precision": "f64", "regions": [{"name": "main", "threads": [th]}]})
    };
    std::fs::write(
        &src,
        prof(1.0e11, 3.125e10, 8.0e11, Some(1.0e11 / 1.04e9)).to_string(),
    )
    .unwrap();
    std::fs::write(&tgt, prof(1.0e11, 1.0e11 / 3.0, 1.0e12, None).to_string()).unwrap();
    (src, tgt)
}

#[test]
fn machine_list_shows_every_builtin() {
    let o = run(&["machine", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for id in [
        "thunderx2",
        "neoverse-n1",
        "a64fx",
        "graviton2",
        "graviton3",
        "epi-like",
        "knl-flat-dram",
        "knl-flat-mcdram",
        "cascadelake-8260",
        "a64fx-node",
    ] {
        assert!(stdout(&o).contains(id), "{id} missing");
    }
    let o = run(&["machine", "list", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 10);
}

#[test]
fn machine_show_toml_validates_back() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["machine", "show", "a64fx", "--format", "toml"]);
    assert!(o.status.success());
    let f = dir.path().join("a.toml");
    std::fs::write(&f, &o.stdout).unwrap();
    let o = run(&["machine", "validate", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("ok:"));
}

#[test]
fn machine_diff_reports_ratios() {
    let o = run(&["machine", "diff", "thunderx2", "neoverse-n1"]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(s.contains("level.L1.core_gbs"), "{s}");
    assert!(s.contains("x1.68"), "{s}"); // 60.86 / 36.17
}

#[test]
fn machine_validate_reports_file_field_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let good = stdout(&run(&["machine", "show", "thunderx2", "--format", "toml"]));
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "misspelled",
            good.replacen("core_gbs = 36.17", "core_gb = 36.17", 1),
            "unknown field `core_gb`",
        ),
        (
            "missing",
            good.replacen("vector_bits = 128\n", "", 1),
            "missing field `vector_bits`",
        ),
        (
            "negative",
            good.replacen("core_gbs = 36.17", "core_gbs = -36.17", 1),
            "levels[0].core_gbs",
        ),
        (
            "zero",
            good.replacen("core_gflops = 17.53", "core_gflops = 0.0", 1),
            "peaks[0].core_gflops",
        ),
        (
            "nan",
            good.replacen("core_gbs = 36.17", "core_gbs = nan", 1),
            "is NaN",
        ),
        (
            "units",
            good.replacen("core_gbs = 36.17", "core_gbs = 36.17e9", 1),
            "looks like B/s",
        ),
    ];
    for (name, text, expect) in cases {
        let f = dir.path().join(format!("{name}.toml"));
        std::fs::write(&f, text).unwrap();
        let o = run(&["machine", "validate", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        let e = stderr(&o);
        assert!(
            e.contains(&format!("{name}.toml")),
            "{name}: no file name in {e}"
        );
        assert!(e.contains(expect), "{name}: expected '{expect}' in {e}");
    }
    // Unknown built-in id.
    let o = run(&["machine", "show", "thunderx3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("thunderx2"),
        "the fix lists the built-ins"
    );
}

#[test]
fn project_worked_example_text_json_csv_md() {
    let dir = tempfile::tempdir().unwrap();
    let (src, tgt) = worked_example(dir.path());
    let args = |fmt: &str| -> Vec<String> {
        [
            "project",
            "--source-machine",
            "thunderx2",
            "--source-profile",
            src.to_str().unwrap(),
            "--target-machine",
            "neoverse-n1",
            "--target-profile",
            tgt.to_str().unwrap(),
            "--format",
            fmt,
            // The seeds' form: no carried-time points, no calibration, level bandwidths.
            "--no-carried-time",
            "--no-calibration",
            "--bandwidths",
            "level",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let o = bin!().args(args("table")).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("[0.691643, 1.39993]"), "{s}");
    let o = bin!().args(args("json")).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!((v["interval"]["lo"].as_f64().unwrap() - 0.691643).abs() < 1e-6);
    assert_eq!(v["points"].as_array().unwrap().len(), 6);
    let o = bin!().args(args("csv")).output().unwrap();
    assert_eq!(stdout(&o).lines().count(), 7);
    let o = bin!().args(args("md")).output().unwrap();
    assert!(stdout(&o).contains("| thread | OI level |"));
    // By default: the carried-time points join the interval, the calibrated margin widens
    // it, and a point estimate and the Kwack baseline are printed beside it.
    let o = run(&[
        "project",
        "--source-machine",
        "thunderx2",
        "--source-profile",
        src.to_str().unwrap(),
        "--target-machine",
        "neoverse-n1",
        "--target-profile",
        tgt.to_str().unwrap(),
        "--source-times",
        "1.0,1.02,0.99,1.01,1.0",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let lo = v["interval"]["lo"].as_f64().unwrap();
    let hi = v["interval"]["hi"].as_f64().unwrap();
    let model = &v["widening"]["model_interval"];
    assert!(lo <= model["lo"].as_f64().unwrap() && hi >= model["hi"].as_f64().unwrap());
    assert!(model["lo"].as_f64().unwrap() <= 0.691643 + 1e-6, "{v}");
    let point = v["point"]["gflops"].as_f64().unwrap();
    assert!(point >= lo && point <= hi, "{v}");
    assert!(v["kwack_gflops"].as_f64().is_some());
    let shares = ["model_share", "margin_share", "noise_share"]
        .iter()
        .map(|k| v["widening"][k].as_f64().unwrap())
        .sum::<f64>();
    assert!((shares - 1.0).abs() < 1e-9, "{v}");
    let o = run(&[
        "project",
        "--source-machine",
        "thunderx2",
        "--source-profile",
        src.to_str().unwrap(),
        "--target-machine",
        "neoverse-n1",
        "--target-profile",
        tgt.to_str().unwrap(),
    ]);
    let s = stdout(&o);
    assert!(
        s.contains("point estimate:") && s.contains("Kwack baseline"),
        "{s}"
    );
    assert!(s.contains("give --source-times"), "{s}");
}

#[test]
fn project_validation_mode_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let (src, tgt) = worked_example(dir.path());
    let base = [
        "project",
        "--source-machine",
        "thunderx2",
        "--source-profile",
        src.to_str().unwrap(),
        "--target-machine",
        "neoverse-n1",
        "--target-profile",
        tgt.to_str().unwrap(),
        "--no-carried-time",
        "--no-calibration",
        "--bandwidths",
        "level",
    ];
    let o = bin!()
        .args(base)
        .args(["--measured", "1.0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("inside the interval"));
    // N1's real MiniFE 1.87 is outside this synthetic interval: a finding, exit 1.
    let o = bin!()
        .args(base)
        .args(["--measured", "1.87"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("OUTSIDE"), "{}", stdout(&o));
    assert!(stdout(&o).contains("-25.1 %"), "{}", stdout(&o)); // (1.39993 - 1.87) / 1.87
    let o = bin!()
        .args(base)
        .args(["--measured", "-3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    // Several runs: their median is compared, and their band meets the interval although
    // the median is just above it (runs 1.37 to 1.47, median 1.42).
    let o = bin!()
        .args(base)
        .args(["--measured", "1.37,1.38,1.42,1.46,1.47"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("inside the interval within the measurement's own spread"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn project_bad_inputs_leave_no_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = worked_example(dir.path());
    let out = dir.path().join("out.json");
    // A profile with levels the machine does not have.
    let bad = dir.path().join("bad.json");
    let text = std::fs::read_to_string(&src)
        .unwrap()
        .replace("\"L2\"", "\"L9\"");
    std::fs::write(&bad, text).unwrap();
    let o = run(&[
        "project",
        "--source-machine",
        "thunderx2",
        "--source-profile",
        bad.to_str().unwrap(),
        "--target-machine",
        "neoverse-n1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.json"), "{}", stderr(&o));
    assert!(!out.exists());
    // Not JSON at all.
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "this is not json").unwrap();
    let o = run(&[
        "project",
        "--source-machine",
        "thunderx2",
        "--source-profile",
        junk.to_str().unwrap(),
        "--target-machine",
        "neoverse-n1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("junk.json:1"), "{}", stderr(&o));
    assert!(!out.exists());
    // Time off by 1e9 (ns given as s) and a negative FLOP count.
    let t = std::fs::read_to_string(&src).unwrap();
    let v: serde_json::Value = serde_json::from_str(&t).unwrap();
    let mut ns = v.clone();
    ns["regions"][0]["threads"][0]["time_s"] = serde_json::json!(96.15e9);
    let mut neg = v.clone();
    neg["regions"][0]["threads"][0]["flops"] = serde_json::json!(-1.0);
    for (name, val, expect) in [("ns", ns, "time_s"), ("neg", neg, "flops")] {
        let f = dir.path().join(format!("{name}.json"));
        std::fs::write(&f, val.to_string()).unwrap();
        let o = run(&[
            "project",
            "--source-machine",
            "thunderx2",
            "--source-profile",
            f.to_str().unwrap(),
            "--target-machine",
            "neoverse-n1",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        assert!(stderr(&o).contains(expect), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains("fix:"), "{name}: {}", stderr(&o));
        assert!(!out.exists());
    }
    // A missing file.
    let o = run(&[
        "project",
        "--source-machine",
        "thunderx2",
        "--source-profile",
        "/nonexistent/p.json",
        "--target-machine",
        "neoverse-n1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no such file"));
}

#[test]
fn roofline_table_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = worked_example(dir.path());
    let svg = dir.path().join("r.svg");
    let o = run(&[
        "roofline",
        "--machine",
        "thunderx2",
        "--profile",
        src.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("binding ceiling: L1 (memory-bound) at 4.521 GFLOP/s"),
        "{s}"
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"));
}

/// Seed 001 Table 3 (FP Crunch on A64FX): the node roofline lists and draws the compute
/// ceilings below the peak, those of one value (1040 GFLOP/s) on one line.
#[test]
fn roofline_carm_ceilings_seed001_table3() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.json");
    std::fs::write(
        &p,
        serde_json::json!({"format_version": 1, "application": "k", "isa": "aarch64",
            "vector_bits": 512, "precision": "f64", "regions": [{"name": "main", "threads": [{
            "thread": 0, "flops": 1.0e11, "fp_instructions": 1.0e10, "time_s": 10.0,
            "memory": {"bytes_total": 2.0e11, "hit_ratios": {"kind": "local", "levels": [
                {"level": "L1", "ratio": 0.9}, {"level": "L2", "ratio": 0.6}]}}}]}]})
        .to_string(),
    )
    .unwrap();
    let svg = dir.path().join("r.svg");
    let o = run(&[
        "roofline",
        "-m",
        "a64fx-node",
        "-p",
        p.to_str().unwrap(),
        "--scope",
        "node",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("compute ceilings below the peak: scalar 150.0 GFLOP/s (mult scalar); no-FMA 1040 GFLOP/s"),
        "{s}"
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(svg.matches("class=\"compute-ceiling\"").count(), 2, "{svg}");
    assert!(svg.contains("no-FMA = add-only = mul-only 1040"), "{svg}");
    assert!(svg.contains("scalar 150"), "{svg}");
}

#[test]
fn explore_example_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let scen = repo_root().join("examples/scenarios/tx2-sve-hbm.toml");
    let svg = dir.path().join("e.svg");
    let o = run(&[
        "explore",
        scen.to_str().unwrap(),
        "--format",
        "json",
        "--svg",
        svg.to_str().unwrap(),
        "--no-carried-time",
        "--no-calibration",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 5 * 4);
    // Self point: SVE 128 variant == the source binary on TX2: the interval is the source.
    let p0 = &pts[0];
    assert_eq!(p0["variant"], "SVE 128");
    assert_eq!(p0["target"], "TX2");
    assert!((p0["interval"]["lo"].as_f64().unwrap() - 1.04).abs() < 1e-9);
    assert!((p0["interval"]["hi"].as_f64().unwrap() - 1.04).abs() < 1e-9);
    // HBM2 (only main memory changes) never lowers either bound, on TX2 and on N1.
    let mut raised = 0;
    for v in 0..5 {
        for t in [0, 2] {
            let ddr = &pts[v * 4 + t];
            let hbm = &pts[v * 4 + t + 1];
            let (dl, dh) = (
                ddr["interval"]["lo"].as_f64().unwrap(),
                ddr["interval"]["hi"].as_f64().unwrap(),
            );
            let (hl, hh) = (
                hbm["interval"]["lo"].as_f64().unwrap(),
                hbm["interval"]["hi"].as_f64().unwrap(),
            );
            assert!(hl >= dl * (1.0 - 1e-12) && hh >= dh * (1.0 - 1e-12));
            raised += usize::from(hl > dl * (1.0 + 1e-9) || hh > dh * (1.0 + 1e-9));
        }
    }
    assert!(raised > 0);
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
}

#[test]
fn explore_bad_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.toml");
    std::fs::write(&f, "name = \"x\"\n[source]\nmachine = \"thunderx2\"\nprofile = \"p.json\"\n[[variants]]\nname = \"a\"\nprofile = \"p.json\"\n[[targets]]\nname = \"t\"\nmachine = \"thunderx2\"\ntransforms = [{ replace_memori = \"a64fx\" }]\n").unwrap();
    let o = run(&["explore", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("s.toml"), "{}", stderr(&o));
    assert!(stderr(&o).contains("replace_memori"), "{}", stderr(&o));
    // A scenario made for `analyze --scenario` (targets only): the fix says so.
    let analyze_only = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/scenarios/analyze-memory.toml"
    );
    let o = run(&["explore", analyze_only]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("analyze --scenario"), "{}", stderr(&o));
}

#[test]
fn record_history_and_result_recording() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let db_s = db.to_str().unwrap();
    let o = run(&[
        "record", "-n", "3", "--db", db_s, "--tag", "k=v", "--", "true",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (src, _) = worked_example(dir.path());
    let o = run(&[
        "project",
        "--source-machine",
        "thunderx2",
        "--source-profile",
        src.to_str().unwrap(),
        "--target-machine",
        "a64fx",
        "--record",
        "--db",
        db_s,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("recorded as run 4"), "{}", stderr(&o));
    let o = run(&["history", "list", "--db", db_s, "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = v
        .as_array()
        .or_else(|| v["runs"].as_array())
        .expect("a list of runs");
    assert_eq!(runs.len(), 4, "{v}");
    // --db without --record is a usage error.
    let o = run(&[
        "project",
        "--source-machine",
        "thunderx2",
        "--source-profile",
        src.to_str().unwrap(),
        "--target-machine",
        "a64fx",
        "--db",
        db_s,
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// Records one run whose `--metrics-json` file holds `{"work": value}`.
fn record_work(db: &str, dir: &Path, value: f64) {
    let json = dir.join("m.json");
    let script = format!("echo '{{\"work\": {value}}}' > {}", json.display());
    let o = run(&[
        "record",
        "--db",
        db,
        "--metrics-json",
        json.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn regress_check_exit_codes_reports_and_bad_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let db_s = db.to_str().unwrap();
    // A baseline of 12 runs around 100 with 1 % noise.
    for i in 0..12 {
        record_work(
            db_s,
            dir.path(),
            100.0 + [0.0, 0.7, -0.5, 0.9, -0.8, 0.3][i % 6],
        );
    }
    let check = |extra: &[&str]| {
        let json = dir.path().join("r.json");
        let junit = dir.path().join("r.xml");
        let mut args = vec![
            "regress",
            "check",
            "--db",
            db_s,
            "--metric",
            "work",
            "--json",
            json.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = run(&args);
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let x = std::fs::read_to_string(&junit).unwrap();
        (o, j, x)
    };
    // A candidate inside the noise: exit 0, a passing JUnit case.
    record_work(db_s, dir.path(), 100.4);
    let (o, _, x) = check(&["--lower-is-better", "work"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(x.contains("testcase") && !x.contains("<failure"), "{x}");
    // Three candidates 20 % worse: exit 1, named in Markdown, JSON and JUnit.
    for _ in 0..3 {
        record_work(db_s, dir.path(), 120.0);
    }
    let (o, j, x) = check(&["--candidates", "3", "--lower-is-better", "work"]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("work"), "{}", stdout(&o));
    assert!(j.to_string().contains("work"), "{j}");
    assert!(x.contains("<failure"), "{x}");
    // 20 % better is not a regression of a lower-is-better metric.
    let (o, _, _) = check(&["--candidates", "3", "--higher-is-better", "work"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    // A corrupt store is bad input (exit 2) that names the file, and is left as it was.
    let bad = dir.path().join("bad.sqlite");
    std::fs::write(&bad, b"this is not a database").unwrap();
    let o = run(&["regress", "check", "--db", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("bad.sqlite"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&bad).unwrap(), b"this is not a database");
}

#[test]
fn history_changes_explain_each_step_and_say_what_they_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let db_s = db.to_str().unwrap();
    let jitter = [0.0, 0.6, -0.4, 0.9, -0.7, 0.2, -0.1, 0.5];
    // Too short for a change: said so, not silence.
    for j in &jitter[..4] {
        record_work(db_s, dir.path(), 100.0 + j);
    }
    let o = run(&["history", "changes", "work", "--db", db_s]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("not analysed"), "{}", stdout(&o));
    // 12 runs at 100, then 12 at 110 (1 % noise): one change, explained.
    for i in 4..24 {
        let level = if i < 12 { 100.0 } else { 110.0 };
        record_work(db_s, dir.path(), level + jitter[i % 8]);
    }
    let o = run(&[
        "history", "changes", "work", "--db", db_s, "--format", "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["method"], "robust", "{j}");
    assert_eq!(j["status"], "analysed", "{j}");
    let cps = j["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{j}");
    assert_eq!(cps[0]["index"], 12, "{j}");
    assert!((cps[0]["step"].as_f64().unwrap() - 10.0).abs() < 1.0, "{j}");
    assert!(cps[0]["step_over_noise"].as_f64().unwrap() > 5.0, "{j}");
    assert_eq!(cps[0]["trend"], false, "{j}");
    let o = run(&["history", "changes", "work", "--db", db_s]);
    let md = stdout(&o);
    assert!(
        md.contains("| step / noise |") && md.contains("no trend"),
        "{md}"
    );
    // The other detectors stay available.
    let o = run(&[
        "history",
        "changes",
        "work",
        "--db",
        db_s,
        "--method",
        "edivisive",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("\"method\": \"edivisive\""),
        "{}",
        stdout(&o)
    );
    // Bad options are usage errors that say how to fix them.
    let o = run(&["history", "changes", "work", "--db", db_s, "--period", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("auto, off or a number"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "regress", "check", "--db", db_s, "--metric", "work", "--fdr", "0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("(0, 1]"), "{}", stderr(&o));
    // regress check explains the flagged runs and the history's change.
    record_work(db_s, dir.path(), 125.0);
    let o = run(&[
        "regress",
        "check",
        "--db",
        db_s,
        "--metric",
        "work",
        "--lower-is-better",
        "work",
        "--baseline",
        "10",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let md = stdout(&o);
    assert!(
        md.contains("noise sd") && md.contains("no trend in the baseline"),
        "{md}"
    );
    assert!(md.contains("### Change points in the history"), "{md}");
}

/// True as root; in CI (CI=true, root) a missing privilege is a failure, elsewhere a skip.
fn root_or_skip(what: &str) -> bool {
    let root = hpcscope_test_support::is_root();
    if !root {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} needs root, and CI runs as root"
        );
        println!("skipping {what}: not root");
    }
    root
}

#[test]
fn counters_and_trace_record_into_the_history() {
    if !root_or_skip("counters/trace --record") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let db_s = db.to_str().unwrap();
    let o = run(&[
        "counters", "run", "--record", "--db", db_s, "--", "sleep", "0.05",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("recorded as run 1"), "{}", stderr(&o));
    let o = run(&[
        "trace", "--record", "--db", db_s, "--format", "json", "--", "sleep", "0.05",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("recorded as run 2"), "{}", stderr(&o));
    let o = run(&["history", "metrics", "--db", db_s]);
    let text = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    // The trace keeps its syscall counts (sleep makes a clock_nanosleep), counters its
    // software-event metrics per region.
    assert!(text.contains("syscalls.clock_nanosleep.count"), "{text}");
    assert!(text.contains("on_cpu_s"), "{text}");
    let o = run(&["history", "list", "--db", db_s, "--source", "counters"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).matches("sleep 0.05").count(),
        1,
        "{}",
        stdout(&o)
    );
}

#[test]
fn analyze_rejects_a_scenario_with_a_source_before_running_anything() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("s.toml");
    std::fs::write(
        &sc,
        "name = \"x\"\n[source]\nmachine = \"thunderx2\"\nprofile = \"p.json\"\n[[targets]]\nname = \"N1\"\nmachine = \"neoverse-n1\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = run(&[
        "analyze",
        "-m",
        "thunderx2",
        "--scenario",
        sc.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--",
        "/bin/true",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("s.toml"), "{}", stderr(&o));
    assert!(stderr(&o).contains("hpcscope explore"), "{}", stderr(&o));
    assert!(!out.exists(), "nothing is written for a bad scenario");
}

#[test]
fn model_kernel_hottest_finds_the_hot_loop_by_sampling() {
    if !root_or_skip("model kernel --hottest (CPU-clock sampling)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("hot.c");
    std::fs::write(
        &src,
        r#"#include <stdlib.h>
#include <stdio.h>
__attribute__((noinline)) double cold(long n, const double *a) {
  double s = 0; for (long i = 0; i < n; i++) s += a[i]; return s; }
__attribute__((noinline)) void hot(long n, double *a, const double *b) {
  for (long r = 0; r < 4; r++) { a[0] += 1.0;
    for (long i = 0; i < n; i++) a[i] = a[i] * 1.000001 + b[i]; } }
int main(int argc, char **argv) {
  long n = atol(argv[1]); double *a = calloc(n, 8), *b = calloc(n, 8); double s = 0;
  for (int k = 0; k < 40; k++) { hot(n, a, b); s += cold(n / 8, a); }
  printf("%f\n", s); return 0; }
"#,
    )
    .unwrap();
    let bin_path = dir.path().join("hot");
    let st = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&bin_path)
        .arg(&src)
        .status()
        .expect("gcc");
    assert!(st.success());
    let b = bin_path.to_str().unwrap();
    let o = run(&[
        "model",
        "kernel",
        b,
        "--hottest",
        "--format",
        "json",
        "--",
        "1000000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // `hot` does 4 x 2 FLOPs per element for every element `cold` reads once in 8.
    assert_eq!(v["functions"][0][0], "hot", "{v}");
    assert_eq!(v["kernel"]["function"], "hot", "{v}");
    let hot_samples = v["functions"][0][1].as_u64().unwrap();
    assert!(hot_samples * 2 > v["samples"].as_u64().unwrap(), "{v}");
    let start = v["hottest_loop"].as_u64().expect("a hottest loop");
    let lp = v["kernel"]["loops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["start"] == start)
        .expect("the hottest loop is one of the kernel's loops")
        .clone();
    assert_eq!(lp["innermost"], true, "{lp}");
    assert_eq!(lp["flops_per_iter"].as_f64(), Some(2.0), "{lp}");
    // A program whose time is not in its own code: a clear error, exit 2.
    let o = run(&["model", "kernel", "/bin/sleep", "--hottest", "--", "0.05"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--function"), "{}", stderr(&o));
}

#[test]
fn a_closed_output_pipe_ends_the_command_quietly() {
    use std::io::Read;
    // `hpcscope ... | head -1`: the reader leaves after one line.
    let mut child = bin!()
        .args(["counters", "recipes"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let st = child.wait().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert!(!st.success() || err.is_empty(), "{st:?} {err}");
}

/// `trace` and `profile` pass the traced command's exit status on once their own work
/// succeeded (strace and perf do); a command killed by a signal gives 128 + the signal.
/// `profile --pid` writes no files unless asked.
#[test]
fn trace_and_profile_exit_with_the_command_status() {
    if !root_or_skip("trace exit status (eBPF)") {
        return;
    }
    let o = run(&["trace", "--", "sh", "-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    let o = run(&["trace", "--", "sh", "-c", "kill -TERM $$"]);
    assert_eq!(o.status.code(), Some(128 + 15), "{}", stderr(&o));
    let dir = tempfile::tempdir().unwrap();
    let o = bin!()
        .current_dir(dir.path())
        .args(["profile", "--", "sh", "-c", "exit 3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        dir.path().join("profile.svg").exists(),
        "a command's flame graph"
    );
    // Attached to a process: nothing written unasked.
    let dir = tempfile::tempdir().unwrap();
    let o = bin!()
        .current_dir(dir.path())
        .args(["profile", "--pid", "1", "--duration", "0.2"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert!(String::from_utf8_lossy(&o.stdout).contains("--out-prefix"));
}

/// `record` ends as the recorded command did (it exited 2 for any failure): its exit status,
/// or 128 + the signal that killed it, named in the message; the runs are kept.
#[test]
fn record_exits_with_the_command_status() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    let o = run(&["record", "--db", db, "--", "sh", "-c", "exit 3"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let o = run(&["record", "--db", db, "--", "sh", "-c", "kill -9 $$"]);
    assert_eq!(o.status.code(), Some(128 + 9), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("killed by signal 9 (SIGKILL)"),
        "{}",
        stderr(&o)
    );
    let o = run(&["history", "list", "--db", db, "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(2), "{v}");
    // The failed runs are marked in the list (they were listed as any other).
    let o = run(&["history", "list", "--db", db]);
    let text = String::from_utf8_lossy(&o.stdout);
    let exit_of = |id: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .and_then(|l| l.split_whitespace().nth(5).map(str::to_string))
    };
    assert_eq!(exit_of("1").as_deref(), Some("3"), "{text}");
    assert_eq!(exit_of("2").as_deref(), Some("killed"), "{text}");
}

/// `validate --build A --build B --threads N` gives the node pairs of the user's builds:
/// each build from one thread to N, and each ordered pair at N threads (before, --threads
/// was ignored, then refused).
#[test]
fn validate_builds_with_threads_gives_their_node_pairs() {
    let Some(plugin) = common::qemu_plugin_ready() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let src = include_str!("../../../workloads/src/triad_omp.c").replace(
        "#include \"common.h\"",
        include_str!("../../../workloads/src/common.h"),
    );
    let a = common::cc(dir.path(), "t1", &src, &["-fopenmp"]);
    let b = common::cc(
        dir.path(),
        "t2",
        &src,
        &["-fopenmp", "-O3", "-march=x86-64-v3"],
    );
    let out = dir.path().join("v");
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
        .args(["validate", "-m", "cascadelake-8260", "--native-runs", "2"])
        .arg("--build")
        .arg(format!("a={}", a.display()))
        .arg("--build")
        .arg(format!("b={}", b.display()))
        .args(["--threads", "2", "-o"])
        .arg(&out)
        .args(["--", "200000", "5"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("validation.json")).unwrap())
            .unwrap();
    assert_eq!(v["node"]["threads"], 2);
    let pairs: Vec<String> = v["node"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pair"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        pairs,
        [
            "1 -> 2 threads (a)",
            "1 -> 2 threads (b)",
            "a -> b (2 threads)",
            "b -> a (2 threads)"
        ],
        "{err}"
    );
    for p in v["node"]["results"].as_array().unwrap() {
        assert!(p["interval"]["lo"].as_f64().unwrap() > 0.0, "{p}");
    }
    // The core pairs are still there, and the text has the node section.
    assert_eq!(v["pairs"].as_array().unwrap().len(), 2);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("node summary: 4 pairs"), "{text}");
}

/// `validate --build A --build B --scope F` counts and times F with its callees: `outer`
/// does little but call `inner`, so as a scope it has the program's FLOPs and a time, where
/// `--function outer` would count only its own adds.
#[test]
fn validate_builds_with_a_scope_counts_and_times_its_callees() {
    let Some(plugin) = common::qemu_plugin_ready() else {
        return;
    };
    if !common::is_root() {
        println!("skipping: timing a scope probes it with uprobes, which need root here");
        return;
    }
    let src = "#include <stdlib.h>\nvolatile double sink;\n\
        __attribute__((noipa)) double inner(double *a, long n) {\n\
          double s = 0; for (long i = 0; i < n; i++) s += a[i] * 1.5; return s; }\n\
        __attribute__((noipa)) double outer(double *a, long n, int r) {\n\
          double s = 0; for (int k = 0; k < r; k++) s += inner(a, n); return s; }\n\
        int main(int c, char **v) { long n = atol(v[1]); double *a = calloc(n, 8);\n\
          sink = outer(a, n, atoi(v[2])); return 0; }\n";
    let dir = tempfile::tempdir().unwrap();
    let a = common::cc(dir.path(), "s1", src, &[]);
    let b = common::cc(dir.path(), "s2", src, &["-O3", "-march=x86-64-v3"]);
    let out = dir.path().join("v");
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
        .args(["validate", "-m", "cascadelake-8260", "--native-runs", "3"])
        .arg("--build")
        .arg(format!("a={}", a.display()))
        .arg("--build")
        .arg(format!("b={}", b.display()))
        .args(["--scope", "outer", "-o"])
        .arg(&out)
        .args(["--", "200000", "200"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("validation.json")).unwrap())
            .unwrap();
    for b in v["builds"].as_array().unwrap() {
        let t = &b["profile"]["regions"][0]["threads"][0];
        // 2 FLOPs per element and call in the callee, and outer's own add per call.
        assert_eq!(
            t["flops"].as_f64(),
            Some(2.0 * 200_000.0 * 200.0 + 200.0),
            "{b}"
        );
        assert!(t["time_s"].as_f64().unwrap() > 0.0, "{b}");
        assert_eq!(b["timer"], "region", "{b}");
    }
    assert_eq!(v["pairs"].as_array().unwrap().len(), 2);
}

/// `machine list`, `show` and `diff` take `-o` as every result command does (the README
/// said so; they did not).
#[test]
fn machine_list_show_and_diff_write_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    for (args, name) in [
        (vec!["machine", "list", "--format", "json"], "list.json"),
        (vec!["machine", "show", "thunderx2"], "show.txt"),
        (vec!["machine", "diff", "thunderx2", "a64fx"], "diff.txt"),
    ] {
        let f = dir.path().join(name);
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        a.push("-o".into());
        a.push(f.display().to_string());
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = run(&refs);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}: printed instead of written");
        assert!(std::fs::metadata(&f).unwrap().len() > 0, "{args:?}");
    }
}

/// `analyze --scenario S` without `-m` benchmarked this machine (15 s) before refusing a
/// scenario that names a missing machine: the inputs are read first.
#[test]
fn a_scenario_naming_a_missing_machine_is_refused_before_any_benchmark() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.toml");
    std::fs::write(
        &s,
        "name = \"t\"\n[[targets]]\nname = \"x\"\nmachine = \"no-such-machine\"\n",
    )
    .unwrap();
    let o = bin!()
        .env("HPCSCOPE_CACHE_DIR", dir.path().join("empty-cache"))
        .args(["analyze", "--scenario"])
        .arg(&s)
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("machine 'no-such-machine'"), "{err}");
    assert!(!err.contains("measuring this machine"), "{err}");
}

/// `doctor` says whether the native engine (DynamoRIO and hpcscope's client) is built, and
/// what to run when it is not.
#[test]
fn doctor_reports_the_native_engine() {
    let dir = tempfile::tempdir().unwrap();
    let o = bin!()
        .env("HPCSCOPE_CACHE_DIR", dir.path())
        .args(["doctor", "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("native engine"))
        })
        .unwrap_or_else(|| panic!("no native engine row: {v}"));
    assert_eq!(c["ok"], false, "{c}");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("scripts/build-dynamorio.sh"),
        "{c}"
    );
}

/// Every value that sets a bound of the interval is in the points table: the carried-time
/// point that set the lower bound of the bundled example (1.087 GFLOP/s) was only in the
/// JSON, while the table's points spanned 2.523 to 5.539.
#[test]
fn the_points_that_set_the_interval_are_in_the_table() {
    let root = repo_root();
    let s = |p: &str| root.join(p).display().to_string();
    let o = run(&[
        "project",
        "--source-machine",
        "thunderx2",
        "--source-profile",
        &s("examples/scenarios/tx2-source.json"),
        "--target-machine",
        "a64fx",
        "--target-profile",
        &s("examples/scenarios/sve-512.json"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let line = text
        .lines()
        .find(|l| l.starts_with("projected interval: ["))
        .unwrap_or_else(|| panic!("{text}"));
    let bounds = &line["projected interval: [".len()..line.find(']').unwrap()];
    let (low, high) = bounds.split_once(", ").unwrap();
    let table: String = text
        .lines()
        .take_while(|l| !l.starts_with("projected interval"))
        .collect::<Vec<_>>()
        .join("\n");
    for b in [low, high] {
        assert!(table.contains(b), "{b} is not in the table:\n{table}");
    }
    assert!(table.contains("carried time GF/s"), "{table}");
}

/// The numbers of `trace` are checked before anything is traced: each bad one is a usage
/// error (exit 2) naming the option.
#[test]
fn trace_numbers_are_checked_before_tracing() {
    for (flag, value) in [
        ("--duration", "0"),
        ("--duration", "nan"),
        ("--interval", "-1"),
        ("--profile-hz", "0"),
        ("--max-processes", "0"),
    ] {
        let o = run(&["trace", &format!("{flag}={value}"), "--", "/bin/true"]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(flag) || err.contains("Hz"),
            "{flag} {value}: {err}"
        );
    }
}

/// `validate --replay` projects a recorded validation's pairs again without building or
/// timing anything: the pairs and builds come back in validation.json, the text says it was
/// replayed; a run from another machine is refused as bad input (exit 2), naming the field.
#[test]
fn validate_replay_projects_recorded_builds_again() {
    let dir = tempfile::tempdir().unwrap();
    let profile: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("examples/scenarios/tx2-source.json")).unwrap(),
    )
    .unwrap();
    let build = |label: &str, runs: [f64; 3]| {
        serde_json::json!({
            "group": "w", "label": label, "path": format!("/nowhere/{label}"),
            "profile": profile, "gflops": runs[1], "runs_gflops": runs, "spread": null,
            "timer": "kernel-line",
            "widths": {"from": "test", "parts": [{"vector_bits": 128, "fraction": 1.0, "instructions": 1.0}]}
        })
    };
    let pair = |s: &str, t: &str| {
        serde_json::json!({"group": "w", "source": s, "target": t, "change": "compiler",
            "calibration": false, "widens": null})
    };
    let file = dir.path().join("validation.json");
    let recorded = serde_json::json!({
        "machine": "thunderx2",
        "builds": [build("a", [1.9, 2.0, 2.1]), build("b", [2.4, 2.5, 2.6])],
        "pairs": [pair("a", "b"), pair("b", "a")]
    });
    std::fs::write(&file, recorded.to_string()).unwrap();
    let out = dir.path().join("out");
    let args = |m: &str| {
        vec![
            "validate".to_string(),
            "--replay".into(),
            file.display().to_string(),
            "-m".into(),
            m.into(),
            "-o".into(),
            out.display().to_string(),
        ]
    };
    let o = bin!().args(args("thunderx2")).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("replayed from"), "{}", stdout(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("validation.json")).unwrap())
            .unwrap();
    assert_eq!(v["pairs"].as_array().unwrap().len(), 2);
    assert_eq!(v["pairs"][1]["source"], "b");
    assert_eq!(v["pairs"][1]["measured_gflops"], 2.0);
    assert_eq!(v["builds"].as_array().unwrap().len(), 2);
    let o = bin!().args(args("neoverse-n1")).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("field `machine`"), "{}", stderr(&o));
}
