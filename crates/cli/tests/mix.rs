//! `hpcscope mix` end to end: the real plugin under the real QEMU on small C programs built
//! here. Skipped, with a line saying why, where qemu-user, gcc or the plugin is missing
//! (`scripts/setup.sh` installs them; `scripts/test.sh` builds the plugin).

mod common;
use common::{TRIAD, cc, qemu_plugin_ready as ready};

use hpcscope_test_support::bin;
use std::path::Path;
use std::process::Output;

/// Counts of a region the two engines give alike (besides its FLOPs).
const ALIKE_UNDER_BOTH_ENGINES: [&str; 6] = [
    "fp_instructions",
    "loads",
    "stores",
    "bytes_loaded",
    "bytes_stored",
    "classes",
];

fn mix(plugin: &Path, args: &[&str]) -> Output {
    bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", plugin)
        .arg("mix")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn triad_counts_are_exact_and_bytes_split_by_level() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let prog = cc(dir.path(), "triad", TRIAD, &[]);
    let out = dir.path().join("p.json");
    // 4096 elements x 3 arrays x 8 B = 96 KiB: misses L1 (32 KiB), fits L2 (1 MiB).
    let o = mix(
        &plugin,
        &[
            "-m",
            "cascadelake-8260",
            "--function",
            "kernel",
            "-o",
            out.to_str().unwrap(),
            "--",
            prog.to_str().unwrap(),
            "4096",
            "6000",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let th = &p["regions"][0]["threads"][0];
    // 2 FLOPs and 24 bytes per element, exactly (scalar SSE2: one mulsd + one addsd).
    assert_eq!(th["flops"].as_f64().unwrap(), 2.0 * 4096.0 * 6000.0);
    assert_eq!(
        th["fp_instructions"].as_f64().unwrap(),
        2.0 * 4096.0 * 6000.0
    );
    let levels = th["memory"]["bytes_per_level"].as_array().unwrap();
    let total: f64 = levels.iter().map(|l| l["bytes"].as_f64().unwrap()).sum();
    // Per call, `ret` and the stack add a few bytes: within 0.1 %.
    assert!(
        (total - 24.0 * 4096.0 * 6000.0).abs() / total < 1e-3,
        "{total}"
    );
    let frac = |name: &str| {
        levels.iter().find(|l| l["level"] == name).unwrap()["bytes"]
            .as_f64()
            .unwrap()
            / total
    };
    // Sequential 8-byte accesses over 64-byte lines: 7 of 8 hit L1; the misses hit L2 after
    // the first repetition (the 96 KiB working set stays in the 1 MiB L2).
    assert!((frac("L1") - 0.875).abs() < 0.002, "L1 {}", frac("L1"));
    assert!(frac("L2") > 0.12, "L2 {}", frac("L2"));
    assert_eq!(p["isa"], "x86_64");
    assert_eq!(p["precision"], "f64");
    // The kernel's own time, measured by CPU-clock sampling of native runs.
    assert!(
        th["time_s"].as_f64().is_some_and(|t| t > 0.0),
        "region time recorded: {}",
        p["notes"]
    );
}

#[test]
fn crash_and_failure_keep_partial_counts() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let crash = cc(
        dir.path(),
        "crash",
        "#include <stdio.h>\nint main(void){ volatile double x = 1.0; for (int i = 0; i < 30000000; i++) x = x * 1.0000001; printf(\"%f\\n\", x); volatile int *p = 0; return *p; }\n",
        &[],
    );
    let out = dir.path().join("c.json");
    let o = mix(
        &plugin,
        &[
            "-m",
            "thunderx2",
            "--native-runs",
            "0",
            "-o",
            out.to_str().unwrap(),
            "--",
            crash.to_str().unwrap(),
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("killed by signal 11"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(p["partial"], true);
    // Counted up to the last snapshot before the crash (taken every 250 ms).
    assert!(p["regions"][0]["threads"][0]["flops"].as_f64().unwrap() > 0.0);

    let fail = cc(
        dir.path(),
        "fail",
        "int main(void){ volatile double x = 2.0; x = x * x; return 3; }\n",
        &[],
    );
    let o = mix(
        &plugin,
        &[
            "-m",
            "thunderx2",
            "--native-runs",
            "0",
            "--",
            fail.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("exited with status 3"));
}

#[test]
fn timeout_keeps_partial_counts() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spin = cc(
        dir.path(),
        "spin",
        "int main(void){ volatile double x = 1.0; for (;;) x = x * 1.0000001; }\n",
        &[],
    );
    let o = mix(
        &plugin,
        &[
            "-m",
            "thunderx2",
            "--native-runs",
            "0",
            "--timeout",
            "1",
            "--",
            spin.to_str().unwrap(),
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("time limit"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn bad_programs_and_regions() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("script.sh");
    std::fs::write(&text, "#!/bin/sh\necho hi\n").unwrap();
    let o = mix(&plugin, &["-m", "thunderx2", "--", text.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not an ELF executable"));
    let prog = cc(dir.path(), "triad", TRIAD, &[]);
    let o = mix(
        &plugin,
        &[
            "-m",
            "thunderx2",
            "--function",
            "kernal",
            "--",
            prog.to_str().unwrap(),
            "10",
            "1",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("no function named 'kernal'") && e.contains("kernel"),
        "{e}"
    );
    // A machine without cache geometry cannot be simulated.
    let o = mix(
        &plugin,
        &[
            "-m",
            "knl-flat-dram",
            "--",
            prog.to_str().unwrap(),
            "10",
            "1",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no cache level"));
    // SVE lengths on an x86 program.
    let o = mix(
        &plugin,
        &[
            "-m",
            "thunderx2",
            "--sve-bits",
            "256",
            "--",
            prog.to_str().unwrap(),
            "10",
            "1",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn outputs_that_cannot_take_the_profiles_are_refused_before_the_run_or_keep_the_counts() {
    let dir = tempfile::tempdir().unwrap();
    // Two machines' profiles into one file: refused before the program runs (the program
    // here would leave a file behind).
    let marker = dir.path().join("ran");
    let script = format!("touch {}", marker.display());
    let o = bin!()
        .args(["mix", "-m", "thunderx2", "-m", "a64fx", "-o"])
        .arg(dir.path().join("p.json"))
        .args(["--", "/bin/sh", "-c", &script])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("one file takes one profile") && e.contains("give a directory"),
        "{e}"
    );
    assert!(!marker.exists(), "the program ran before -o was refused");
    // analyze: a report directory that cannot be made is said before anything runs.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let o = bin!()
        .args(["analyze", "-m", "cascadelake-8260", "-o"])
        .arg(file.join("report"))
        .args(["--", "/bin/sh", "-c", &script])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot create"));
    assert!(
        !marker.exists(),
        "analyze ran the program before its -o was refused"
    );
    // A write that fails after the run: the counts are still printed, and the error said.
    let Some(plugin) = ready() else { return };
    let prog = cc(dir.path(), "triad", TRIAD, &[]);
    let o = mix(
        &plugin,
        &[
            "-m",
            "cascadelake-8260",
            "--native-runs",
            "0",
            "-o",
            dir.path().join("missing/p.json").to_str().unwrap(),
            "--",
            prog.to_str().unwrap(),
            "1000",
            "2",
        ],
    );
    // (2 or 3: bad input or the environment, as the write's error says.)
    assert!(matches!(o.status.code(), Some(2 | 3)), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("cascadelake-8260"));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("NOT written") && e.contains("does not exist"),
        "{e}"
    );
}

#[test]
fn missing_qemu_is_an_environment_limit() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let prog = cc(dir.path(), "triad", TRIAD, &[]);
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
        .env("HPCSCOPE_QEMU", "/nonexistent/qemu")
        .args([
            "mix",
            "--engine",
            "qemu",
            "-m",
            "thunderx2",
            "--",
            prog.to_str().unwrap(),
            "10",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("HPCSCOPE_QEMU"));
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", "/nonexistent/plugin.so")
        .args([
            "mix",
            "--engine",
            "qemu",
            "-m",
            "thunderx2",
            "--",
            prog.to_str().unwrap(),
            "10",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
}

fn analyze(plugin: &Path, out: &Path, path_env: Option<&Path>, cmd: &[&str]) -> Output {
    let mut c = bin!();
    c.env("HPCSCOPE_QEMU_PLUGIN", plugin)
        .env_remove("HPCSCOPE_QEMU");
    if let Some(p) = path_env {
        // A PATH without QEMU: the engine that needs it.
        c.env("PATH", p).env("HPCSCOPE_ENGINE", "qemu");
    }
    c.args([
        "analyze",
        "-m",
        "cascadelake-8260",
        "-t",
        "a64fx",
        "--no-trace",
    ])
    .arg("-o")
    .arg(out)
    .arg("--")
    .args(cmd)
    .output()
    .unwrap()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn analyze_reports_what_it_could_measure_of_bad_programs() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Not an ELF: exit 2 naming the problem, yet the native timing is reported.
    let script = d.join("job.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = d.join("a1");
    let o = analyze(&plugin, &out, None, &[script.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("not an ELF"), "{err}");
    let r = json(&out.join("result.json"));
    assert_eq!(r["native_runs"].as_array().unwrap().len(), 3, "{r}");
    assert!(r["median_wall_s"].as_f64().unwrap() > 0.0, "{r}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("What could not be done") && html.contains("not an ELF"));

    // QEMU missing (PATH without it): exit 3 naming the Debian package; native time kept.
    let ok = cc(d, "ok", "int main(void) { return 0; }\n", &[]);
    let empty = d.join("empty-path");
    std::fs::create_dir(&empty).unwrap();
    let out = d.join("a2");
    let o = analyze(&plugin, &out, Some(&empty), &[ok.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("qemu-user"), "{err}");
    let r = json(&out.join("result.json"));
    assert!(
        r["native_runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["exit_status"] == 0),
        "{r}"
    );

    // A crash after some work: the report is written, the counts are the partial ones
    // (QEMU 7.2 skips the plugin's exit callback on a fatal signal: the counts are those of
    // its last snapshot, taken every 250 ms; DynamoRIO's client writes them at the signal),
    // and the notes say how the program ended, natively and under the engine.
    let crash = cc(
        d,
        "crash",
        "int main(void) { volatile double x = 0; for (long i = 0; i < 20000000; i++) x += i * 0.5;\n\
         *(volatile int *)0 = 1; return 0; }\n",
        &["-O1"],
    );
    let out = d.join("a3");
    let o = analyze(&plugin, &out, None, &[crash.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("SIGSEGV) when run natively"), "{text}");
    // Counted natively under DynamoRIO here (auto), or under QEMU where it is not built.
    assert!(
        text.contains("SIGSEGV) under emulation")
            || text.contains("SIGSEGV) natively under DynamoRIO"),
        "{text}"
    );
    let r = json(&out.join("result.json"));
    let flops = r["source_profile"]["regions"][0]["threads"][0]["flops"]
        .as_f64()
        .unwrap();
    // At most the 2 x 20 M FLOPs the loop does before the crash, and some of them.
    assert!(flops > 0.0 && flops <= 4.0e7, "{flops}");
    assert!(text.contains("counts are partial"), "{text}");
}

/// Every number of a JSON value, with its path; `null` where a number was expected shows
/// up as a missing number, so the walk also returns the paths of nulls.
fn numbers_and_nulls(v: &serde_json::Value, path: &str, out: &mut Vec<(String, Option<f64>)>) {
    match v {
        serde_json::Value::Number(n) => out.push((path.to_string(), n.as_f64())),
        serde_json::Value::Null => out.push((path.to_string(), None)),
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                numbers_and_nulls(x, &format!("{path}[{i}]"), out);
            }
        }
        serde_json::Value::Object(o) => {
            for (k, x) in o {
                numbers_and_nulls(x, &format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn analyze_finds_programs_on_path_and_answers_one_without_floating_point() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bin_dir = d.join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    cc(
        &bin_dir,
        "intsum",
        "#include <stdio.h>\n#include <stdlib.h>\nint main(int c, char **v) { long n = c > 1 ? atol(v[1]) : 1000000; unsigned long s = 0; for (long i = 0; i < n; i++) s += (unsigned long)i * 2654435761u; printf(\"%lu\\n\", s); return 0; }\n",
        &[],
    );
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = d.join("a");
    // A bare name, as a shell user types it: found on PATH for both the native runs and
    // the characterization.
    let o = analyze(
        &plugin,
        &out,
        Some(Path::new(&path)),
        &["intsum", "3000000"],
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("does no floating-point work"), "{text}");
    assert!(
        text.matches("not projected").count() == 0,
        "one plain statement, not a note per target: {text}"
    );
    let r = json(&out.join("result.json"));
    assert!(r["targets"].as_array().unwrap().is_empty(), "{r}");
    let mut nums = Vec::new();
    numbers_and_nulls(&r, "", &mut nums);
    for (p, v) in &nums {
        assert!(v.is_none_or(|x| x.is_finite()), "{p} = {v:?}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for bad in [">NaN<", " NaN ", "NaN %", ">inf<", " inf "] {
        assert!(
            !html.contains(bad) && !text.contains(bad),
            "{bad} in the report"
        );
    }
}

/// A main thread that starts two workers and joins them does almost nothing itself: the
/// node is the two workers' (two cores, their load balance), and a note says the main
/// thread was left out and what it did.
#[test]
fn a_main_thread_that_joins_its_workers_takes_no_core() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = cc(
        d,
        "workers",
        r#"#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static long n;
static double out[2];
static void *work(void *arg) {
  long id = (long)arg; double *a = malloc(n * sizeof *a), s = 0;
  for (long i = 0; i < n; i++) a[i] = (double)(i + id);
  for (int r = 0; r < 20; r++) for (long i = 0; i < n; i++) s += a[i] * 1.5;
  out[id] = s; free(a); return NULL; }
int main(int argc, char **argv) {
  n = argc > 1 ? atol(argv[1]) : 100000; pthread_t t[2];
  for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, (void *)i);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  printf("%f\n", out[0] + out[1]); return 0; }
"#,
        &["-pthread"],
    );
    let out = d.join("a");
    let o = analyze(&plugin, &out, None, &[prog.to_str().unwrap(), "100000"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("2 working threads"), "{text}");
    assert!(text.contains("the work is evenly spread"), "{text}");
    let r = json(&out.join("result.json"));
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("thread 0 did at most 1 % of the busiest thread's")
            && notes.contains("the 2 working threads"),
        "{notes}"
    );
    // The profile itself keeps every thread.
    assert_eq!(
        r["source_profile"]["regions"][0]["threads"]
            .as_array()
            .unwrap()
            .len(),
        3,
        "{}",
        r["source_profile"]
    );
}

#[test]
fn analyze_sweeps_a_scenario_of_targets() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let triad = cc(d, "triad", TRIAD, &[]);
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios/analyze-memory.toml");
    let out = d.join("a");
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
        .args([
            "analyze",
            "-m",
            "cascadelake-8260",
            "-t",
            "a64fx",
            "--no-trace",
        ])
        .arg("--scenario")
        .arg(&scenario)
        .arg("-o")
        .arg(&out)
        .args(["--", triad.to_str().unwrap(), "200000", "20"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&out.join("result.json"));
    let points = r["sweep"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 5, "{r}");
    // Swapping in HBM2 cannot lower the upper bound of a memory-bound triad.
    let hi = |name: &str| {
        points.iter().find(|p| p["target"] == name).unwrap()["interval"]["hi"]
            .as_f64()
            .unwrap()
    };
    assert!(hi("N1 + HBM2") >= hi("N1"), "{r}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Design-space sweep"));
    // Every sweep point has a point estimate inside its interval.
    for p in points {
        let e = p["projection"]["point"]["gflops"].as_f64().unwrap();
        assert!(
            e >= p["interval"]["lo"].as_f64().unwrap()
                && e <= p["interval"]["hi"].as_f64().unwrap(),
            "{p}"
        );
    }
    // An x86 binary projected onto an Arm core without an Arm build: said plainly, apart.
    let t = &r["targets"][0];
    assert_eq!(t["same_isa"], false, "{t}");
    let a = t["assumption"].as_str().unwrap();
    assert!(
        a.contains("no aarch64 build was given")
            && a.contains("--target-binary")
            && a.contains("aarch64-linux-gnu-gcc"),
        "{a}"
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("machines of another ISA, ASSUMING the x86_64 binary stands for their build"),
        "{text}"
    );
    assert!(html.contains("Machines of another ISA"));
    // Its point estimate states no error: no cross-ISA pair was ever measured.
    let e = &t["projection"]["point"];
    assert_eq!(e["change"], "cross-isa-machine", "{t}");
    assert!(e["error"].is_null(), "{e}");
    assert!(
        text.contains("not validated for this kind of change (cross-ISA machine)")
            && !text.contains("typically within"),
        "{text}"
    );
}

/// `validate --build A --build B -- ARGS`: the protocol on a user's own builds, every
/// ordered pair, with the weighted method's figures and the Kwack baseline's side by side.
#[test]
fn validate_runs_the_protocol_on_your_own_builds() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let scalar = cc(d, "scalar", TRIAD, &[]);
    let vector = cc(d, "vector", TRIAD, &["-O3", "-ftree-vectorize"]);
    let out = d.join("v");
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
        .args(["validate", "-m", "cascadelake-8260", "--native-runs", "3"])
        .arg("--build")
        .arg(format!("scalar={}", scalar.display()))
        .arg("--build")
        .arg(format!("vector={}", vector.display()))
        .arg("-o")
        .arg(&out)
        .args(["--", "200000", "20"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("scalar -> vector") && text.contains("vector -> scalar"),
        "{text}"
    );
    let v = json(&out.join("validation.json"));
    let pairs = v["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2, "{v}");
    for k in ["weighted", "kwack"] {
        let s = &v["summary"]["all"][k];
        assert_eq!(s["pairs"], 2, "{s}");
        for f in [
            "inside_fraction",
            "median_width",
            "median_midpoint_error",
            "median_point_error",
            "max_error",
        ] {
            assert!(s[f].as_f64().is_some(), "{k}.{f}: {s}");
        }
    }
    for p in pairs {
        assert!(p["point"]["gflops"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["kwack_gflops"].as_f64().unwrap() > 0.0, "{p}");
        assert_eq!(p["change"], "builds");
    }
    let builds = v["builds"].as_array().unwrap();
    assert!(
        builds
            .iter()
            .all(|b| b["runs_gflops"].as_array().unwrap().len() == 3)
    );
    assert!(v["load_average_before"].as_array().is_some());
    assert!(out.join("validation.svg").is_file());
    // One build is not enough; a missing file is named.
    let o = bin!()
        .args(["validate", "--build"])
        .arg(&scalar)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = bin!()
        .args(["validate", "--build", "a=/nonexistent/app", "--build"])
        .arg(&scalar)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent/app is not a file"), "{err}");
}

const SPIN: &str = include_str!("../../mix/tests/data/spin.c");

#[test]
fn a_region_too_short_for_one_run_is_timed_over_several() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let prog = cc(dir.path(), "spin", SPIN, &[]);
    let out = dir.path().join("p.json");
    // A few milliseconds in `spin`: fewer than the 50 samples one run needs at 10 kHz.
    let o = mix(
        &plugin,
        &[
            "-m",
            "cascadelake-8260",
            "--function",
            "spin",
            "--native-runs",
            "1",
            "-o",
            out.to_str().unwrap(),
            "--",
            prog.to_str().unwrap(),
            "300000",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let notes = p["notes"].to_string();
    let t = p["regions"][0]["threads"][0]["time_s"].as_f64();
    if notes.contains("sampling could not be set up") {
        println!("skipping: CPU-clock sampling is not available here: {notes}");
        return;
    }
    assert!(t.is_some_and(|t| t > 0.0), "a region time: {notes}");
    assert!(notes.contains("pooled over"), "{notes}");
}

/// Processes whose environment holds `HPCSCOPE_TEST_TAG=tag` (zombies count as gone).
fn tagged_processes(tag: &str) -> Vec<i32> {
    let needle = format!("HPCSCOPE_TEST_TAG={tag}\0");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if !env.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            continue;
        }
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .and_then(|r| r.split_whitespace().next())
                    == Some("Z")
            })
            .unwrap_or(true);
        if !zombie {
            out.push(pid);
        }
    }
    out
}

/// Waits up to `limit` for `pred`, checking every 20 ms.
fn wait_for(limit: std::time::Duration, mut pred: impl FnMut() -> bool) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < limit {
        if pred() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    pred()
}

/// Kills what a failed check left running, so that it does not outlive the test.
fn kill_all(pids: &[i32]) {
    for &p in pids {
        // SAFETY: killing a process this test started (tagged by it).
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
}

const SLEEPER: &str = "#include <unistd.h>\nint main(void) { for (;;) pause(); }\n";

/// Writes 16 MiB (enough memory records for the plugin to send some to the cache simulator
/// before the time limit), then sleeps forever.
const BUSY_THEN_SLEEPER: &str = "#include <stdlib.h>\n#include <unistd.h>\n\
    int main(void) { long n = 1L << 21; volatile double *a = calloc(n, 8);\n\
    for (long i = 0; i < n; i += 8) a[i] = 1.0; for (;;) pause(); }\n";

#[test]
fn timeout_bounds_the_native_runs_too_and_nothing_is_left_running() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let busy = cc(dir.path(), "busy-sleeper", BUSY_THEN_SLEEPER, &[]);
    let idle = cc(dir.path(), "sleeper", SLEEPER, &[]);
    let timeout = 2u64;
    // `--native-runs 3`: the first native run that reaches the limit stops native timing;
    // then the emulation reaches it too (SIGTERM, then SIGKILL 5 s later).
    for (prog, native_runs) in [(&busy, "3"), (&idle, "0")] {
        let tag = format!("timeout-{native_runs}-{}", std::process::id());
        let bound = std::time::Duration::from_secs(2 * timeout + 5 + 15);
        let mut child = bin!()
            .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
            .env("HPCSCOPE_TEST_TAG", &tag)
            .args(["mix", "--engine", "qemu", "-m", "thunderx2"])
            .args(["--native-runs", native_runs])
            .args(["--timeout", &timeout.to_string(), "--"])
            .arg(prog)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let ended = wait_for(bound, || child.try_wait().unwrap().is_some());
        if !ended {
            let _ = child.kill();
            let _ = child.wait();
            kill_all(&tagged_processes(&tag));
            panic!("mix --timeout {timeout} still ran after {bound:?}");
        }
        let o = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        if native_runs == "3" {
            // Partial counts, and why there is no native time.
            assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
            assert!(
                stdout.contains("a native run reached the time limit (2 s)"),
                "{stdout}"
            );
            assert!(
                stdout.contains("the emulation reached the time limit"),
                "{stdout}"
            );
        } else {
            // Stopped before any memory record reached the simulator: said as it is.
            assert_eq!(o.status.code(), Some(2), "{stdout}\n{stderr}");
            assert!(
                stderr.contains("reached the time limit (2 s) under emulation")
                    && stderr.contains("give a longer --timeout")
                    && !stderr.contains("--cache-binary"),
                "{stderr}"
            );
        }
        let left = tagged_processes(&tag);
        kill_all(&left);
        assert!(left.is_empty(), "left running: {left:?}");
    }
}

#[test]
fn the_program_dies_with_hpcscope_natively_and_under_emulation() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let prog = cc(dir.path(), "sleeper", SLEEPER, &[]);
    for (phase, native_runs) in [("native", "1"), ("emulated", "0")] {
        let tag = format!("pdeath-{phase}-{}", std::process::id());
        let mut child = bin!()
            .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
            .env("HPCSCOPE_TEST_TAG", &tag)
            // A killed hpcscope leaves its scratch directory: keep it in the test's.
            .env("TMPDIR", dir.path())
            .args(["mix", "-m", "thunderx2", "--native-runs", native_runs])
            .arg("--")
            .arg(&prog)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let me = child.id() as i32;
        // hpcscope and the program it started (natively, or QEMU running it).
        let started = wait_for(std::time::Duration::from_secs(30), || {
            tagged_processes(&tag).iter().any(|&p| p != me)
        });
        // SAFETY: signalling our own child, as a scheduler or `kill` would.
        unsafe { libc::kill(me, libc::SIGTERM) };
        let _ = child.wait();
        assert!(started, "{phase}: the program never started");
        let gone = wait_for(std::time::Duration::from_secs(5), || {
            tagged_processes(&tag).is_empty()
        });
        let left = tagged_processes(&tag);
        kill_all(&left);
        assert!(
            gone,
            "{phase}: still running 5 s after hpcscope got SIGTERM: {left:?}"
        );
    }
}

#[test]
fn sampled_simulation_keeps_flops_exact_and_estimates_the_hit_ratios() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let prog = cc(dir.path(), "triad", TRIAD, &[]);
    let (n, reps) = (4096.0, 200.0);
    let o = mix(
        &plugin,
        &[
            "-m",
            "cascadelake-8260",
            "--sample",
            "8",
            "--native-runs",
            "0",
            "--format",
            "json",
            "--",
            prog.to_str().unwrap(),
            "4096",
            "200",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let r: serde_json::Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    let v = &r["variants"][0];
    assert_eq!(
        v["counts"]["totals"]["flops"].as_f64().unwrap(),
        2.0 * n * reps
    );
    let m = &v["sampling"]["machines"][0];
    // cascadelake-8260: 64 classes of sets, 8 simulated.
    assert_eq!(
        (m["units"].as_u64(), m["population"].as_u64()),
        (Some(8), Some(64))
    );
    // The plugin streamed only the sampled classes; the estimate still covers every access:
    // about 1 in 8 simulated.
    let (sim, all) = (
        m["simulated"].as_f64().unwrap(),
        v["sampling"]["records"].as_f64().unwrap(),
    );
    assert!(all >= 3.0 * n * reps, "{all} accesses");
    assert!((sim / all - 0.125).abs() < 0.03, "{sim} of {all}");
    // Sequential 8-byte accesses over 64-byte lines: 7 of 8 hit L1.
    let l1 = &m["levels"][0];
    assert_eq!(l1["level"], "L1");
    assert!(
        (l1["hit_ratio"].as_f64().unwrap() - 0.875).abs() < 0.01,
        "{l1}"
    );
    // Each level's bytes and memory's have the relative error of their estimate.
    let e = l1["bytes_ci95"].as_f64().expect("L1 served bytes");
    assert!((0.0..0.05).contains(&e), "{l1}");
    assert!(
        m["memory_bytes_ci95"].as_f64().is_some_and(|x| x >= 0.0),
        "{m}"
    );
    // analyze --sample: the projections take the bytes' errors in, and say so.
    let out = dir.path().join("analysis");
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
        .args(["analyze", "-m", "cascadelake-8260", "-t", "graviton2"])
        .args(["--sample", "8", "--native-runs", "1", "--no-trace", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&prog)
        .args(["4096", "200"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("the projected intervals include the sampling error of the bytes per level"),
        "{notes}"
    );
    let i = &r["targets"][0]["projection"]["interval"];
    let (lo, hi) = (i["lo"].as_f64().unwrap(), i["hi"].as_f64().unwrap());
    assert!(lo > 0.0 && lo <= hi, "{i}");
    // Too few classes for the period: said before anything runs, with what to give.
    let o = mix(
        &plugin,
        &[
            "-m",
            "cascadelake-8260",
            "--sample",
            "64",
            "--native-runs",
            "0",
            "--",
            prog.to_str().unwrap(),
            "4096",
            "200",
        ],
    );
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--sample 32 or less"), "{e}");
    // analyze refuses it the same way, as a usage error (exit 2), with only the fixes
    // analyze has (it samples cache sets only).
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
        .args(["analyze", "-m", "cascadelake-8260", "-t", "graviton2"])
        .args(["--sample", "64", "--native-runs", "1", "--no-trace", "--"])
        .arg(&prog)
        .args(["4096", "200"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("--sample 32 or less"), "{e}");
    assert!(!e.contains("--sample-method"), "{e}");
}

/// `--engine`: an AVX-512 build is counted natively by default and exactly; QEMU stops on
/// its first AVX-512 instruction and says to use the native engine; a bad engine name is a
/// usage error, from the flag or from HPCSCOPE_ENGINE.
#[test]
fn an_avx512_build_is_counted_natively_and_qemu_says_why_it_cannot() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bad = mix(
        &plugin,
        &["--engine", "bogus", "-m", "thunderx2", "--", "/bin/true"],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("expected auto, native or qemu"));
    let prog = cc(dir.path(), "triad", TRIAD, &[]);
    let bad = bin!()
        .env("HPCSCOPE_ENGINE", "bogus")
        .args(["mix", "-m", "thunderx2", "--native-runs", "0", "--"])
        .arg(&prog)
        .args(["16", "1"])
        .output()
        .unwrap();
    assert_eq!(
        bad.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    assert!(String::from_utf8_lossy(&bad.stderr).contains("HPCSCOPE_ENGINE=bogus"));
    // A statically linked program: DynamoRIO's early injection loads it as it loads any
    // other (LD_PRELOAD, before, never reached one): counted natively by default, its
    // kernel's counts those under QEMU. (Not the whole program's: the C library's start-up
    // takes other paths on the host's CPU than on QEMU's.)
    let st = cc(dir.path(), "triad_static", TRIAD, &["-static"]);
    let run = |engine: &str| {
        let a = [
            "--engine",
            engine,
            "--native-runs",
            "0",
            "--function",
            "kernel",
            "-m",
            "thunderx2",
            "--format",
            "json",
            "--",
        ];
        let mut a: Vec<&str> = a.to_vec();
        a.extend([st.to_str().unwrap(), "64", "2"]);
        let o = mix(&plugin, &a);
        assert!(
            o.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let (auto, qemu) = (run("auto"), run("qemu"));
    assert!(
        auto["notes"].to_string().contains("DynamoRIO"),
        "{}",
        auto["notes"]
    );
    let totals = |r: &serde_json::Value| r["variants"][0]["counts"]["totals"].clone();
    for k in std::iter::once("flops").chain(ALIKE_UNDER_BOTH_ENGINES) {
        assert_eq!(
            totals(&auto)[k],
            totals(&qemu)[k],
            "{k}: {} {}",
            totals(&auto),
            totals(&qemu)
        );
    }
    if !std::arch::is_x86_feature_detected!("avx512f") || !dynamorio_built() {
        eprintln!("skipped the AVX-512 part: no AVX-512 here or DynamoRIO is not built");
        return;
    }
    // Vectorized on 512-bit registers (the common build disables vectorization).
    let c = dir.path().join("t.c");
    std::fs::write(&c, TRIAD).unwrap();
    let prog = dir.path().join("t512");
    let st = std::process::Command::new("gcc")
        .args(["-O3", "-march=x86-64-v4", "-mprefer-vector-width=512", "-o"])
        .arg(&prog)
        .arg(&c)
        .status()
        .unwrap();
    assert!(st.success());
    let args = |engine: &str| {
        let mut v = vec![
            "--native-runs",
            "0",
            "--function",
            "kernel",
            "-m",
            "cascadelake-8260",
        ];
        if !engine.is_empty() {
            v.extend(["--engine", engine]);
        }
        v.extend([
            "--format",
            "json",
            "--",
            prog.to_str().unwrap(),
            "4096",
            "10",
        ]);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let a = args("");
    let o = mix(&plugin, &a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = &r["variants"][0]["counts"]["totals"];
    assert_eq!(t["flops"], 2 * 4096 * 10, "{t}");
    assert!(
        t["fp_by_width"]["f64_512"]["flops"].as_u64().unwrap() > 0,
        "{t}"
    );
    assert!(
        r["notes"].to_string().contains("DynamoRIO"),
        "{}",
        r["notes"]
    );
    let a = args("qemu");
    let o = mix(&plugin, &a.iter().map(String::as_str).collect::<Vec<_>>());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_ne!(o.status.code(), Some(0), "{said}");
    assert!(
        said.contains("SIGILL") && said.contains("--engine native"),
        "{said}"
    );
}

/// Whether DynamoRIO and the client are built (the native engine's files are there).
fn dynamorio_built() -> bool {
    hpcscope_host::tools::dynamorio_files(&hpcscope_host::tools::dynamorio_dir())
        .iter()
        .all(|f| f.is_file())
}

/// Divides and square roots (`div`, `sqrt` of `fp_by_width`): `workloads/src/nbody.c` does
/// one of each per ordered pair of bodies, n * n per step; counted natively (DynamoRIO) and
/// under QEMU, in the scalar bucket of its precision, alike and each the analytic count.
#[test]
fn nbody_divides_and_square_roots_alike_natively_and_under_qemu() {
    let Some(plugin) = ready() else { return };
    if !dynamorio_built() {
        eprintln!("skipped: DynamoRIO is not built");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads/src/nbody.c");
    let (n, reps) = (300u64, 3u64);
    let pairs = n * n * reps;
    // Without -ffast-math the inner loop's sums stay in order: scalar sqrtsd and divsd
    // (sqrtss and divss in single precision).
    for (real, bucket) in [("double", "f64_scalar"), ("float", "f32_scalar")] {
        let prog = dir.path().join(format!("nbody_{real}"));
        let st = std::process::Command::new("gcc")
            .args(["-O2", "-march=x86-64", "-std=gnu11"])
            .arg(format!("-DREAL={real}"))
            .arg("-o")
            .arg(&prog)
            .arg(&src)
            .arg("-lm")
            .status()
            .unwrap();
        assert!(st.success(), "gcc failed on {}", src.display());
        let run = |engine: &str| -> serde_json::Value {
            let (ns, rs) = (n.to_string(), reps.to_string());
            let o = mix(
                &plugin,
                &[
                    "--engine",
                    engine,
                    "--native-runs",
                    "0",
                    "--function",
                    "kernel_nbody",
                    "-m",
                    "cascadelake-8260",
                    "--format",
                    "json",
                    "--",
                    prog.to_str().unwrap(),
                    &ns,
                    &rs,
                ],
            );
            assert!(
                o.status.success(),
                "{engine}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            r["variants"][0]["counts"]["totals"]["fp_by_width"].clone()
        };
        let (native, qemu) = (run("native"), run("qemu"));
        let counts = |w: &serde_json::Value| -> Vec<(String, u64, u64)> {
            w.as_object()
                .unwrap_or_else(|| panic!("no fp_by_width: {w}"))
                .iter()
                .map(|(k, c)| {
                    let get = |f: &str| c.get(f).map_or(0, |v| v.as_u64().unwrap());
                    (k.clone(), get("div"), get("sqrt"))
                })
                .filter(|(_, d, s)| d + s > 0)
                .collect()
        };
        println!(
            "nbody {real} n={n} reps={reps}: native {:?}, qemu {:?}",
            counts(&native),
            counts(&qemu)
        );
        let want = vec![(bucket.to_string(), pairs, pairs)];
        assert_eq!(counts(&native), want, "native: {native}");
        assert_eq!(counts(&qemu), want, "qemu: {qemu}");
        assert_eq!(
            native[bucket]["instructions"], qemu[bucket]["instructions"],
            "native {native} qemu {qemu}"
        );
    }
}

/// `--scope`: counted while a function runs, its callees and its recursion included, and
/// nothing outside: the same counts natively (DynamoRIO) and under QEMU, each the
/// analytical FLOPs.
#[test]
fn a_scope_counts_its_callees_alike_natively_and_under_qemu() {
    let Some(plugin) = ready() else { return };
    if !dynamorio_built() {
        eprintln!("skipped: DynamoRIO is not built");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Per call of outer: inner's n multiplies and n adds, outer's n adds, and one add of
    // the callee's sum unless at the bottom: 3 calls per repetition, 9 n + 2 FLOPs. Outside
    // the scope: main's 2 n and one add per repetition.
    let prog = cc(
        dir.path(),
        "scoped",
        "#include <stdlib.h>\n\
         volatile double sink;\n\
         __attribute__((noipa)) double inner(double *a, long n) {\n\
           double s = 0; for (long i = 0; i < n; i++) s += a[i] * 1.5; return s; }\n\
         __attribute__((noipa)) double outer(double *a, long n, int depth) {\n\
           double s = inner(a, n);\n\
           for (long i = 0; i < n; i++) a[i] += 1.0;\n\
           if (depth > 0) s += outer(a, n, depth - 1);\n\
           return s; }\n\
         int main(int c, char **v) { long n = atol(v[1]); int reps = atoi(v[2]);\n\
           double *a = calloc(n, 8), t = 0;\n\
           for (long i = 0; i < n; i++) t += a[i] * 3.0;\n\
           for (int r = 0; r < reps; r++) t += outer(a, n, 2);\n\
           sink = t; return 0; }\n",
        &[],
    );
    let (n, reps) = (1000u64, 7u64);
    let run = |engine: &str| -> serde_json::Value {
        let (ns, rs) = (n.to_string(), reps.to_string());
        let a = [
            "--engine",
            engine,
            "--native-runs",
            "0",
            "--scope",
            "outer",
            "-m",
            "cascadelake-8260",
            "--format",
            "json",
            "--",
            prog.to_str().unwrap(),
            &ns,
            &rs,
        ];
        let o = mix(&plugin, &a);
        assert!(
            o.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let native = run("native");
    let qemu = run("qemu");
    let totals = |r: &serde_json::Value| r["variants"][0]["counts"]["totals"].clone();
    let (tn, tq) = (totals(&native), totals(&qemu));
    assert_eq!(tn["flops"], reps * (9 * n + 2), "native {tn}");
    assert_eq!(tq["flops"], reps * (9 * n + 2), "qemu {tq}");
    for k in ALIKE_UNDER_BOTH_ENGINES {
        assert_eq!(tn[k], tq[k], "{k}: native {tn} qemu {tq}");
    }
    assert!(
        native["notes"].to_string().contains("DynamoRIO"),
        "{}",
        native["notes"]
    );
    // The stream carries the scope's accesses alone: as many as counted (outside it,
    // main touched the whole array first), and both engines' simulations miss alike.
    let cache = |r: &serde_json::Value| r["variants"][0]["caches"][0].clone();
    for (r, t) in [(&native, &tn), (&qemu, &tq)] {
        let c = cache(r);
        assert_eq!(
            c["accesses"].as_u64(),
            Some(t["loads"].as_u64().unwrap() + t["stores"].as_u64().unwrap()),
            "{c}"
        );
        assert_eq!(
            c["bytes"].as_u64(),
            Some(t["bytes_loaded"].as_u64().unwrap() + t["bytes_stored"].as_u64().unwrap()),
            "{c}"
        );
    }
    // Main's pass over the array ran outside the scope, so the simulation never saw it: the
    // scope's first pass misses each of the array's n * 8 / 64 lines. (The engines place
    // the stack and the heap at different addresses: a line more or less.)
    let misses = |r: &serde_json::Value| cache(r)["levels"][0]["misses"].as_u64().unwrap();
    let (mn, mq) = (misses(&native), misses(&qemu));
    assert!(
        mn >= n * 8 / 64 && mq >= n * 8 / 64,
        "native {mn} qemu {mq}"
    );
    assert!(mn.abs_diff(mq) <= 2, "native {mn} qemu {mq}");
    // Two OpenMP threads, each with its own depth: thread t calls the scope 3 + t times.
    let omp = cc(
        dir.path(),
        "scoped_omp",
        "#include <stdlib.h>\n#include <omp.h>\n\
         volatile double sink;\n\
         __attribute__((noipa)) double work(double *a, long n) {\n\
           double s = 0; for (long i = 0; i < n; i++) s += a[i] * 1.5; return s; }\n\
         __attribute__((noipa)) double other(double *a, long n) {\n\
           double s = 0; for (long i = 0; i < n; i++) s += a[i] + 2.5; return s; }\n\
         int main(int c, char **v) { long n = atol(v[1]); double t = 0;\n\
         #pragma omp parallel reduction(+:t)\n\
           { double *a = calloc(n, 8); int id = omp_get_thread_num();\n\
             for (int r = 0; r < 3 + id; r++) { t += work(a, n); t += other(a, n); } }\n\
           sink = t; return 0; }\n",
        &["-fopenmp"],
    );
    for engine in ["native", "qemu"] {
        let o = mix(
            &plugin,
            &[
                "--engine",
                engine,
                "--native-runs",
                "0",
                "--threads",
                "2",
                "--scope",
                "work",
                "-m",
                "cascadelake-8260",
                "--format",
                "json",
                "--",
                omp.to_str().unwrap(),
                "1000",
            ],
        );
        assert!(
            o.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let c = &r["variants"][0]["counts"];
        let per_thread: Vec<u64> = c["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["totals"]["flops"].as_u64().unwrap())
            .collect();
        assert_eq!(per_thread, [3 * 2000, 4 * 2000], "{engine}: {c}");
        let t = &c["totals"];
        assert_eq!(
            cache(&r)["accesses"].as_u64(),
            Some(t["loads"].as_u64().unwrap() + t["stores"].as_u64().unwrap()),
            "{engine}: {}",
            cache(&r)
        );
    }
}

/// Dependency chains (`fp_by_width`'s `chain`, docs/flop-counting.md): `workloads/src/trmv_omp.c`
/// sums each row in order, `s += row[j] * x[j]` without reassociation, so gcc 12's AVX2
/// loop (four elements per iteration, 12 instructions) adds its four products one after the
/// other into `s`: four scalar adds on the loop's chain per iteration, `floor((i + 1) / 4)`
/// iterations in row `i` (rows 3 and up enter the loop; the last elements are added after
/// it). Of each entry, the first 256 / 12 = 21 iterations are left to the out-of-order
/// window (they run while the previous row's chain ends): the count is
/// `4 * (sum of iterations - 21 x entries)`. Counted natively; the QEMU plugin counts no
/// chain.
#[test]
fn an_in_order_row_sum_is_a_chain_of_adds_natively() {
    let Some(plugin) = ready() else { return };
    if !dynamorio_built() {
        eprintln!("skipped: DynamoRIO is not built");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads/src/trmv_omp.c");
    let prog = dir.path().join("trmv_omp");
    let st = std::process::Command::new("gcc")
        .args(["-O3", "-march=x86-64-v3", "-fopenmp", "-std=gnu11", "-o"])
        .arg(&prog)
        .arg(&src)
        .arg("-lm")
        .status()
        .unwrap();
    assert!(st.success(), "gcc failed on {}", src.display());
    let (n, reps) = (1000u64, 1u64);
    let run = |engine: &str| -> serde_json::Value {
        let o = bin!()
            .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
            .env("OMP_NUM_THREADS", "1")
            .args([
                "mix",
                "--engine",
                engine,
                "--native-runs",
                "0",
                "--function",
                "kernel_trmv_omp._omp_fn.0",
                "-m",
                "cascadelake-8260",
                "--format",
                "json",
                "--",
            ])
            .arg(&prog)
            .args([n.to_string(), reps.to_string()])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        r["variants"][0]["counts"]["totals"].clone()
    };
    let native = run("native");
    let iterations: u64 = (1..=n).map(|m| m / 4).sum();
    let want: u64 = reps * 4 * (iterations - (n - 3) * (256 / 12));
    let adds = &native["fp_by_width"]["f64_scalar"]["chain"]["add"];
    println!("trmv n={n} reps={reps}: native chain adds {adds}, analytic {want}");
    assert_eq!(adds.as_u64(), Some(want), "{native}");
    for k in ["mul", "fma", "div", "sqrt"] {
        assert!(
            native["fp_by_width"]["f64_scalar"]["chain"]
                .get(k)
                .is_none(),
            "{native}"
        );
    }
    let qemu = run("qemu");
    assert!(qemu.get("chain_iterations").is_none(), "{qemu}");
}

/// A loop whose exit block runs before the loop does (`sum(0)` jumps straight to it, then
/// `sum(1000)` runs the loop 1000 times per call): the engine built that block without a
/// counter of its own, so it could not tell the loop's entries. It is flushed and built
/// again once the loop is seen: `REPS x (1000 - 256 / 4)` chain adds, exactly (4
/// instructions per iteration, 64 left to the out-of-order window per entry). A loop
/// closed by an unconditional jump has no such exit: its iterations are reported apart.
#[test]
fn a_loop_whose_exit_ran_first_still_counts_its_entries() {
    if ready().is_none() || !dynamorio_built() {
        eprintln!("skipped: DynamoRIO is not built");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let asm = dir.path().join("sum.s");
    std::fs::write(
        &asm,
        "\t.text\n\t.globl sum\n\t.type sum, @function\nsum:\n\tpxor %xmm0, %xmm0\n\ttestq %rdi, %rdi\n\tjle .Lout\n.Lloop:\n\taddsd (%rsi), %xmm0\n\taddq $8, %rsi\n\tdecq %rdi\n\tjne .Lloop\n.Lout:\n\tret\n\t.size sum, .-sum\n\n\t.globl spin\n\t.type spin, @function\nspin:\n\tpxor %xmm0, %xmm0\n.Lspin:\n\taddsd (%rsi), %xmm0\n\tdecq %rdi\n\tje .Ldone\n\tjmp .Lspin\n.Ldone:\n\tret\n\t.size spin, .-spin\n\t.section .note.GNU-stack,\"\",@progbits\n",
    )
    .unwrap();
    let c = dir.path().join("main.c");
    std::fs::write(
        &c,
        "#include <stdio.h>\n#include <stdlib.h>\ndouble sum(long, const double *);\ndouble spin(long, const double *);\nint main(int argc, char **argv) {\n  long n = 1000, reps = atol(argv[1]);\n  double *a = malloc(n * sizeof *a);\n  for (long i = 0; i < n; i++) a[i] = i % 7;\n  double s = sum(0, a);\n  for (long r = 0; r < reps; r++) s += sum(n, a);\n  s += spin(50000, a);\n  printf(\"%g\\n\", s);\n  return 0;\n}\n",
    )
    .unwrap();
    let prog = dir.path().join("exit_first");
    let st = std::process::Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&prog)
        .arg(&c)
        .arg(&asm)
        .status()
        .unwrap();
    assert!(st.success(), "gcc failed");
    let reps = 500u64;
    let o = bin!()
        .args([
            "mix",
            "--engine",
            "native",
            "--native-runs",
            "0",
            "-m",
            "cascadelake-8260",
            "--format",
            "json",
            "--",
        ])
        .arg(&prog)
        .arg(reps.to_string())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = &r["variants"][0]["counts"]["totals"];
    let adds = t["fp_by_width"]["f64_scalar"]["chain"]["add"].as_u64();
    println!(
        "chain adds {adds:?} (analytic {}), iterations left out {}",
        reps * (1000 - 64),
        t["chain_iterations_left_out"]
    );
    assert_eq!(adds, Some(reps * (1000 - 64)), "{t}");
    // `spin`'s 50000 iterations (closed by `jmp`) are left out, and said so.
    let left = t["chain_iterations_left_out"].as_u64().unwrap_or(0);
    assert!((50_000..51_000).contains(&left), "{t}");
    let text = r.to_string();
    assert!(
        text.contains("are not counted (against"),
        "the profile's note: {text}"
    );
}
