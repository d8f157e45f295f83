//! Each format hpcscope reads or writes for another tool, checked by that tool: perf
//! (`perf record`/`perf report`), `go tool pprof`, speedscope's file-format schema (npm
//! package, validated by PyPI jsonschema), Hatchet's `GraphFrame.from_literal` and
//! Kerncraft's `MachineModel` on every machine file Kerncraft ships. `scripts/setup.sh`
//! installs them (the Python ones in `target/peer-venv`, speedscope in `target/peer-npm`,
//! Kerncraft's sources in `target/peer-src`); where one is missing the test prints a
//! `skipping:` line, except under CI, where setup.sh must have installed it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hpcscope_test_support::{bin, stdout};
use serde_json::Value;

unsafe extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

/// The target directory (where setup.sh puts the peer tools).
fn target() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_hpcscope"));
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// `Some(path)` when the peer tool at `path` is there; else prints why the test skips (and
/// fails under CI, where setup.sh installs every tool).
fn need(what: &str, path: Option<PathBuf>) -> Option<PathBuf> {
    match path.filter(|p| p.exists()) {
        Some(p) => Some(p),
        None if std::env::var_os("CI").is_some() => {
            panic!("{what} is missing under CI: scripts/setup.sh installs it")
        }
        None => {
            println!("skipping: {what} is not installed (bash scripts/setup.sh installs it)");
            None
        }
    }
}

fn python() -> Option<PathBuf> {
    need(
        "the peer Python environment (target/peer-venv)",
        Some(target().join("peer-venv/bin/python")),
    )
}

fn run(c: &mut Command) -> Output {
    let o = c.output().expect("the command runs");
    assert!(
        o.status.success(),
        "{c:?} failed ({}):\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Runs a Python snippet in the peer environment with `args` as sys.argv[1:].
fn py(python: &Path, code: &str, args: &[&Path]) -> String {
    stdout(&run(Command::new(python).arg("-c").arg(code).args(args)))
}

/// A folded profile with known shares: dot 60%, solve 10% (self), write 30%.
fn folded(dir: &Path) -> PathBuf {
    let f = dir.join("app.folded");
    std::fs::write(
        &f,
        "app;main;solve;dot 600\napp;main;solve 100\napp;main;io;write_[k] 300\n",
    )
    .unwrap();
    f
}

#[test]
fn perf_record_imported_has_the_top_functions_of_perf_report() {
    let Some(perf) = need("perf (linux-perf)", common::which("perf")) else {
        return;
    };
    let Some(cc) = need("a C compiler", common::which("cc")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("two_hot");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/two_hot.c");
    run(Command::new(cc)
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&bin)
        .arg(&src));
    let record = |data: &Path, split: &str| {
        Command::new(&perf)
            .args(["record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-o"])
            .arg(data)
            .arg("--")
            .arg(&bin)
            .args(["400000000", split])
            .output()
            .expect("perf runs")
    };
    let data = dir.path().join("perf.data");
    let o = record(&data, "3");
    if !o.status.success() {
        println!(
            "skipping: perf record is refused here: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
        return;
    }
    // perf report's own view: self overhead by symbol, weighted by period.
    let rep = stdout(&run(Command::new(&perf)
        .args([
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "symbol",
            "-g",
            "none",
            "-q",
            "-i",
        ])
        .arg(&data)));
    let perf_top: Vec<(String, f64)> = rep
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let pct: f64 = it.next()?.trim_end_matches('%').parse().ok()?;
            let _kind = it.next()?;
            Some((it.next()?.to_string(), pct))
        })
        .collect();
    assert!(perf_top.len() >= 2, "perf report: {rep}");
    // The same file imported directly, and through perf script text.
    let script = dir.path().join("perf.script");
    let text = run(Command::new(&perf).arg("script").arg("-i").arg(&data));
    std::fs::write(&script, &text.stdout).unwrap();
    for input in [&data, &script] {
        let o = run(bin!()
            .args(["profile", "import", "--format", "json", "--top", "5"])
            .arg(input));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let ours: Vec<(String, f64)> = v["hot_functions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| h["self_samples"].as_u64() > Some(0))
            .map(|h| {
                (
                    h["name"]
                        .as_str()
                        .unwrap()
                        .trim_end_matches("_[k]")
                        .to_string(),
                    h["self_pct"].as_f64().unwrap(),
                )
            })
            .collect();
        println!(
            "perf report: {perf_top:?}\nhpcscope ({}): {ours:?}",
            input.display()
        );
        for i in 0..2 {
            assert_eq!(ours[i].0, perf_top[i].0, "top function {i}");
            assert!(
                (ours[i].1 - perf_top[i].1).abs() < 0.1,
                "{}: {} % here, {} % in perf report",
                ours[i].0,
                ours[i].1,
                perf_top[i].1
            );
        }
        assert_eq!(ours[0].0, "hot_a");
    }
    // A second recording with the work shifted to hot_b: the differential graph and table.
    let data2 = dir.path().join("perf2.data");
    assert!(record(&data2, "1").status.success());
    let svg = dir.path().join("diff.svg");
    let o = run(bin!()
        .args(["profile", "diff", "--format", "json", "--svg"])
        .arg(&svg)
        .arg(&data)
        .arg(&data2));
    let rows: Value = serde_json::from_slice(&o.stdout).unwrap();
    let b = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "hot_b")
        .expect("hot_b moved");
    assert!(b["delta_self_pct"].as_f64().unwrap() > 10.0, "{rows}");
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("hot_b") && svg.contains("<svg"));
}

/// perf's self overhead by symbol (`perf report`), weighted by period: (name, percent).
fn perf_report_top(perf: &Path, data: &Path) -> Vec<(String, f64)> {
    let rep = stdout(&run(Command::new(perf)
        .args([
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "symbol",
            "-g",
            "none",
            "-q",
            "-i",
        ])
        .arg(data)));
    rep.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let pct: f64 = it.next()?.trim_end_matches('%').parse().ok()?;
            let _kind = it.next()?;
            Some((it.next()?.to_string(), pct))
        })
        .collect()
}

/// Functions named in UTF-8 (`计算密集型函数内核`, `café_crème`), run under a command name
/// perf cuts inside a character: `profile import` of the perf script text and of perf.data
/// names the top functions of `perf report` with its shares (inferno 0.12 panicked on the
/// first name, exit 101), and `diff` and `export` read the same files.
#[test]
fn perf_record_of_utf8_function_names_imports_diffs_and_exports() {
    let Some(perf) = need("perf (linux-perf)", common::which("perf")) else {
        return;
    };
    let Some(cc) = need("a C compiler", common::which("cc")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // 20 bytes: perf keeps 15, the last one inside `型`.
    let bin = dir.path().join("ab计算密集型");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/utf8_names.c");
    run(Command::new(cc)
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&bin)
        .arg(&src));
    let data = dir.path().join("perf.data");
    let o = Command::new(&perf)
        .args(["record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&bin)
        .arg("200000000")
        .output()
        .expect("perf runs");
    if !o.status.success() {
        println!(
            "skipping: perf record is refused here: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
        return;
    }
    let perf_top = perf_report_top(&perf, &data);
    assert!(perf_top.len() >= 2, "perf report: {perf_top:?}");
    let script = dir.path().join("perf.script");
    let text = run(Command::new(&perf).arg("script").arg("-i").arg(&data));
    assert!(
        std::str::from_utf8(&text.stdout).is_err(),
        "perf no longer cuts the command name inside a character: the test lost its case"
    );
    std::fs::write(&script, &text.stdout).unwrap();
    for input in [&script, &data] {
        let o = run(bin!()
            .args(["profile", "import", "--format", "json", "--top", "5"])
            .arg(input));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let ours: Vec<(String, f64)> = v["hot_functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["name"].as_str().unwrap().to_string(),
                    h["self_pct"].as_f64().unwrap(),
                )
            })
            .collect();
        println!(
            "perf report: {perf_top:?}\nhpcscope ({}): {ours:?}",
            input.display()
        );
        assert_eq!(ours[0].0, "计算密集型函数内核");
        assert_eq!(ours[1].0, "café_crème");
        for i in 0..2 {
            assert_eq!(ours[i].0, perf_top[i].0, "top function {i}");
            assert!(
                (ours[i].1 - perf_top[i].1).abs() < 0.1,
                "{}: {} % here, {} % in perf report",
                ours[i].0,
                ours[i].1,
                perf_top[i].1
            );
        }
    }
    let svg = dir.path().join("diff.svg");
    run(bin!()
        .args(["profile", "diff", "--format", "json", "--svg"])
        .arg(&svg)
        .arg(&script)
        .arg(&data));
    assert!(
        std::fs::read_to_string(&svg)
            .unwrap()
            .contains("café_crème")
    );
    for to in ["pprof", "speedscope", "hatchet"] {
        let out = dir.path().join(format!("p.{to}"));
        run(bin!()
            .args(["profile", "export", "--to", to, "-o"])
            .arg(&out)
            .arg(&script));
        assert!(std::fs::metadata(&out).unwrap().len() > 0, "{to}");
    }
}

#[test]
fn go_tool_pprof_reads_the_export_and_shows_the_same_top_functions() {
    let Some(go) = need("go (golang-go)", common::which("go")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let input = folded(dir.path());
    let out = dir.path().join("app.pb.gz");
    run(bin!()
        .args(["profile", "export", "--to", "pprof", "-o"])
        .arg(&out)
        .arg(&input));
    let version = stdout(&run(Command::new(&go).arg("version")));
    let o = run(Command::new(&go)
        .args(["tool", "pprof", "-top", "-nodecount=10"])
        .arg(&out)
        .env("HOME", dir.path()));
    let text = stdout(&o);
    println!("{}{text}", version);
    // flat flat% sum% cum cum% name
    let rows: Vec<(String, u64, f64)> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 6 && f[1].ends_with('%')).then(|| {
                (
                    f[5].to_string(),
                    f[0].parse().unwrap_or(u64::MAX),
                    f[1].trim_end_matches('%').parse().unwrap(),
                )
            })
        })
        .collect();
    assert_eq!(
        rows[..3],
        [
            ("dot".to_string(), 600, 60.0),
            ("write_[k]".to_string(), 300, 30.0),
            ("solve".to_string(), 100, 10.0)
        ],
        "{text}"
    );
}

#[test]
fn speedscope_files_match_the_schema_speedscope_ships() {
    let Some(schema) = need(
        "speedscope's npm package (target/peer-npm)",
        Some(
            target().join("peer-npm/node_modules/speedscope/dist/release/file-format-schema.json"),
        ),
    ) else {
        return;
    };
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let prof = dir.path().join("prof.speedscope.json");
    run(bin!()
        .args(["profile", "export", "--to", "speedscope", "-o"])
        .arg(&prof)
        .arg(folded(dir.path())));
    // A timeline as `trace --timeline` writes it, with slices that overlap without nesting.
    let trace = dir.path().join("timeline.json");
    std::fs::write(
        &trace,
        r#"{"traceEvents": [
 {"name": "process_name", "ph": "M", "pid": 10, "tid": 10, "args": {"name": "app (10)"}},
 {"name": "thread_name", "ph": "M", "pid": 10, "tid": 11, "args": {"name": "app (11)"}},
 {"name": "on-cpu", "cat": "hpcscope", "ph": "X", "ts": 1.5, "dur": 20.0, "pid": 10, "tid": 11, "args": {"cpu": 1}},
 {"name": "MPI_Send", "cat": "hpcscope", "ph": "X", "ts": 3.0, "dur": 4.0, "pid": 10, "tid": 11, "args": {"cpu": 1}},
 {"name": "MPI_Recv", "cat": "hpcscope", "ph": "X", "ts": 18.0, "dur": 9.0, "pid": 10, "tid": 11, "args": {"cpu": 1}},
 {"name": "exit", "cat": "hpcscope", "ph": "i", "s": "t", "ts": 30.0, "pid": 10, "tid": 11}
], "displayTimeUnit": "ms"}"#,
    )
    .unwrap();
    let ev = dir.path().join("timeline.speedscope.json");
    let o = run(bin!()
        .args(["profile", "export", "--to", "speedscope", "-o"])
        .arg(&ev)
        .arg(&trace));
    assert!(stdout(&o).contains("1 instant events"), "{}", stdout(&o));
    let code = r#"
import json, sys, jsonschema
from importlib.metadata import version
schema = json.load(open(sys.argv[1]))
for f in sys.argv[2:]:
    doc = json.load(open(f))
    jsonschema.validate(doc, schema)
    for p in doc["profiles"]:
        if p["type"] == "evented":
            stack = []
            for e in p["events"]:
                if e["type"] == "O":
                    stack.append(e["frame"])
                else:
                    assert stack.pop() == e["frame"], (f, p["name"], e)
            assert not stack
    print(f, "valid:", len(doc["profiles"]), "profiles")
print("jsonschema", version("jsonschema"))
"#;
    let out = py(&python, code, &[&schema, &prof, &ev]);
    println!("{out}");
    assert!(
        out.contains("prof.speedscope.json valid: 1 profiles"),
        "{out}"
    );
    assert!(
        out.contains("timeline.speedscope.json valid: 2 profiles"),
        "{out}"
    );
}

#[test]
fn hatchet_loads_the_literal_of_a_profile_and_of_a_mix_profile() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let lit = dir.path().join("prof.hatchet.json");
    run(bin!()
        .args(["profile", "export", "--to", "hatchet", "-o"])
        .arg(&lit)
        .arg(folded(dir.path())));
    let mixp = dir.path().join("mix.hatchet.json");
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios/tx2-source.json");
    run(bin!()
        .args(["profile", "export", "--to", "hatchet", "-o"])
        .arg(&mixp)
        .arg(&source));
    let code = r#"
import json, sys, warnings
warnings.simplefilter("ignore")
import hatchet as ht
from importlib.metadata import version
gf = ht.GraphFrame.from_literal(json.load(open(sys.argv[1])))
df = gf.dataframe
print("dot", float(df[df["name"] == "dot"]["samples"].iloc[0]))
print("main inc", float(df[df["name"] == "main"]["samples (inc)"].iloc[0]))
print("nodes", len(df))
gf2 = ht.GraphFrame.from_literal(json.load(open(sys.argv[2])))
src = json.load(open(sys.argv[3]))
for r in src["regions"]:
    flops = sum(t["flops"] for t in r["threads"])
    got = float(gf2.dataframe[gf2.dataframe["name"] == r["name"]]["flops (inc)"].iloc[0])
    assert abs(got - flops) <= 1e-9 * flops, (r["name"], got, flops)
    print("region", r["name"], "flops", got)
print(gf.tree(metric_column="samples"))
print("llnl-hatchet", version("llnl-hatchet"))
"#;
    let out = py(&python, code, &[&lit, &mixp, &source]);
    println!("{out}");
    assert!(out.contains("dot 600.0"), "{out}");
    assert!(out.contains("main inc 1000.0"), "{out}");
    assert!(out.contains("nodes 6"), "{out}");
    assert!(out.contains("region "), "{out}");
    // The counter metrics of a run, per region.
    let counters = dir.path().join("counters.json");
    let o = bin!()
        .args(["counters", "run", "--format", "json", "-o"])
        .arg(&counters)
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done",
        ])
        .output()
        .unwrap();
    if !o.status.success() {
        println!(
            "skipping the counters part: counters run failed here: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
        return;
    }
    let cl = dir.path().join("counters.hatchet.json");
    let o = run(bin!()
        .args(["profile", "export", "--to", "hatchet", "-o"])
        .arg(&cl)
        .arg(&counters));
    println!("{}", stdout(&o));
    let code = r#"
import json, sys, warnings
warnings.simplefilter("ignore")
import hatchet as ht
gf = ht.GraphFrame.from_literal(json.load(open(sys.argv[1])))
reports = json.load(open(sys.argv[2]))
df = gf.dataframe
checked = 0
for g in reports[0]["regions"]:
    for m in g["total"]:
        col = m["id"] + " (inc)"
        if m.get("value") is not None and col in df.columns:
            got = float(df[df["name"] == g["name"]][col].iloc[0])
            assert abs(got - m["value"]) <= 1e-9 * max(1.0, abs(m["value"])), (g["name"], col, got)
            checked += 1
print("counters metrics checked", checked, "inc metrics", len(gf.inc_metrics))
"#;
    let out = py(&python, code, &[&cl, &counters]);
    println!("{out}");
    assert!(out.contains("counters metrics checked"), "{out}");
    assert!(!out.contains("checked 0 "), "{out}");
}

/// What the machine files of Kerncraft leave as INFORMATION_REQUIRED or unnamed, given as
/// the vendors publish it.
fn overrides(file: &str) -> &'static [&'static str] {
    match file {
        // A64FX: two 512-bit FMA pipes, 8 doubles each, 2 FLOPs per FMA.
        "A64FX_qpace4.yml" => &["--dp-flops-per-cycle", "32"],
        // ThunderX2: two 128-bit NEON FMA pipes, 2 doubles each, 2 FLOPs per FMA.
        "ARMv8_ThunderX2-CN9980.yml" => &[
            "--dp-flops-per-cycle",
            "8",
            "--simd",
            "neon",
            "--vector-bits",
            "128",
        ],
        _ => &[],
    }
}

#[test]
fn every_kerncraft_machine_file_imports_and_kerncraft_loads_the_export() {
    let Some(python) = python() else {
        return;
    };
    let Some(files) = need(
        "Kerncraft's machine files (target/peer-src)",
        Some(target().join("peer-src/kerncraft-0.8.18/examples/machine-files")),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut ymls: Vec<PathBuf> = std::fs::read_dir(&files)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml"))
        .collect();
    ymls.sort();
    assert!(ymls.len() >= 17, "{} machine files", ymls.len());
    let code = r#"
import sys, json, warnings
warnings.simplefilter("ignore")
from importlib.metadata import version
from kerncraft.machinemodel import MachineModel
import cachesim
args = sys.argv[1:]
for i in range(0, len(args), 3):
    orig, ours, exported = args[i:i + 3]
    o = MachineModel(orig)
    m = json.load(open(ours))
    # The import agrees with what kerncraft reads from the original file.
    def gbs(mm, level, kernels):
        r = mm["benchmarks"]["measurements"][level][1]
        for k in kernels:
            if k in r["results"]:
                return float(r["results"][k][r["cores"].index(1)]) / 1e9
    for lvl in m["levels"]:
        name = "MEM" if lvl["name"] == "MM" else lvl["name"]
        if "core_gbs" in lvl:
            want = gbs(o, name, ["triad"])
            assert abs(lvl["core_gbs"] - want) <= 1e-9 * want, (name, lvl["core_gbs"], want)
        if "cache" in lvl:
            c = [x for x in o["memory hierarchy"] if x["level"] == name][0]["cache per group"]
            assert lvl["cache"]["size_bytes"] == int(c["sets"]) * int(c["ways"]) * int(c["cl_size"]), name
    assert abs(float(o["clock"]) / 1e9 - m["frequency_ghz"]) < 1e-9
    # Kerncraft loads the export, and its numbers are ours.
    e = MachineModel(exported)
    assert float(e["clock"]) / 1e9 == m["frequency_ghz"]
    dp = [p for p in m["peaks"] if p["precision"] == "f64"][0]
    assert abs(e["FLOPs per cycle"]["DP"]["total"] - dp["core_gflops"] / m["frequency_ghz"]) < 0.01
    caches = {}
    for lvl in e["memory hierarchy"]:
        if "cache per group" in lvl:
            caches[lvl["level"]] = dict(lvl["cache per group"])
    for lvl in m["levels"]:
        name = "MEM" if lvl["name"] == "MM" else lvl["name"]
        if "core_gbs" in lvl:
            got = gbs(e, name, ["stream_triad"])
            assert abs(got - lvl["core_gbs"]) < 0.006, (name, got, lvl["core_gbs"])
    sim, cs, mem = cachesim.CacheSimulator.from_dict(caches)
    sizes = {n: c.size() for n, c in cs.items()}
    for lvl in m["levels"]:
        if "cache" in lvl:
            assert sizes[lvl["name"]] == lvl["cache"]["size_bytes"], (lvl["name"], sizes)
    print("ok", orig.split("/")[-1], "kerncraft", version("kerncraft"))
"#;
    let mut triples: Vec<PathBuf> = Vec::new();
    for yml in &ymls {
        let name = yml.file_name().unwrap().to_string_lossy().to_string();
        let toml = dir.path().join(format!("{name}.toml"));
        let extra = overrides(&name);
        if !extra.is_empty() {
            // Without the values, the import names what is missing (exit 2).
            let o = bin!()
                .args(["machine", "import"])
                .arg(yml)
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(2), "{name}");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("missing"), "{name}: {err}");
        }
        run(bin!()
            .args(["machine", "import"])
            .arg(yml)
            .args(extra)
            .arg("-o")
            .arg(&toml));
        run(bin!().args(["machine", "validate"]).arg(&toml));
        let json = dir.path().join(format!("{name}.json"));
        let o = run(bin!()
            .args(["machine", "show", "--format", "json"])
            .arg(&toml));
        std::fs::write(&json, &o.stdout).unwrap();
        let exported = dir.path().join(format!("{name}.export.yml"));
        run(bin!()
            .args(["machine", "export", "--format", "kerncraft", "-o"])
            .arg(&exported)
            .arg(&toml));
        triples.extend([yml.clone(), json, exported]);
    }
    // One Python run for every file (Kerncraft's imports take seconds).
    let args: Vec<&Path> = triples.iter().map(PathBuf::as_path).collect();
    let out = py(&python, code, &args);
    print!("{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        ymls.len(),
        "{out}"
    );
    // A built-in machine exported, loaded by kerncraft.
    let a64 = dir.path().join("a64fx.yml");
    run(bin!()
        .args(["machine", "export", "a64fx", "--format", "kerncraft", "-o"])
        .arg(&a64));
    let out = py(
        &python,
        "import sys\nfrom kerncraft.machinemodel import MachineModel\nm = MachineModel(sys.argv[1])\nprint(m['model name'], len(m['memory hierarchy']), 'levels')",
        &[&a64],
    );
    assert!(out.contains("A64FX"), "{out}");
}

/// A history whose `time_s` steps up by 20% at the 17th run (seed 004 Table 3.2's noise
/// before and after).
fn history_with_a_step(db: &Path) {
    use hpcscope_history::record::{Fingerprint, GitInfo, Metric, RunRecord};
    const NOISE: [f64; 16] = [
        1.006, 1.003, 0.998, 1.011, 1.009, 0.994, 1.005, 1.009, 0.998, 1.015, 0.999, 1.009, 1.006,
        1.013, 1.009, 1.009,
    ];
    let mut s = hpcscope_history::store::Store::open(db).unwrap();
    // Recent runs: Otava analyzes a recent window by default.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    for i in 0..32 {
        let mut r = RunRecord::new("./app", "record");
        r.started_at = now - 7200.0 + 60.0 * i as f64;
        r.fingerprint = Fingerprint {
            cpu_model: "Test CPU".into(),
            cpu_count: 4,
            kernel: "6.1".into(),
            ..Fingerprint::default()
        };
        r.git = Some(GitInfo {
            commit: format!("{i:040x}"),
            dirty: false,
            branch: None,
        });
        let step = if i >= 16 { 1.2 } else { 1.0 };
        r.metrics = vec![Metric::new("time_s", 10.0 * step * NOISE[i % 16], "s")];
        s.record(&r).unwrap();
    }
}

#[test]
fn otava_reads_the_history_export_and_finds_the_step() {
    let Some(python) = python() else {
        return;
    };
    let otava = python.with_file_name("otava");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    history_with_a_step(&db);
    let csv = dir.path().join("h.csv");
    let cfg = dir.path().join("otava.yaml");
    run(bin!()
        .args(["history", "export", "--format", "otava", "--db"])
        .arg(&db)
        .arg("-o")
        .arg(&csv)
        .arg("--otava-config")
        .arg(&cfg));
    let o = run(Command::new(&otava)
        .args(["analyze", "--config-file"])
        .arg(&cfg)
        .args(["hpcscope", "--output", "json"])
        .env("HOME", dir.path()));
    let text = stdout(&o);
    println!("{text}");
    let start = text.find('{').expect("Otava printed JSON");
    let v: Value = serde_json::from_str(&text[start..]).unwrap();
    let cps = v["hpcscope"].as_array().expect("a result for the test");
    assert_eq!(cps.len(), 1, "{v}");
    // The change is at the 17th run: its commit is attribute `commit`.
    let cp = &cps[0];
    assert_eq!(cp["attributes"]["commit"], format!("{:040x}", 16), "{cp}");
    assert_eq!(cp["changes"][0]["metric"], "time_s");
    // Otava prints its numbers as strings.
    let pct = &cp["changes"][0]["forward_change_percent"];
    let change: f64 = pct
        .as_f64()
        .or_else(|| pct.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("{pct}"));
    assert!((change - 20.0).abs() < 2.0, "{change}");
}

#[test]
fn regress_check_github_annotates_the_regression_and_writes_the_step_summary() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    history_with_a_step(&db);
    let summary = dir.path().join("summary.md");
    let o = bin!()
        .args(["regress", "check", "--github", "--candidates", "4", "--db"])
        .arg(&db)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.starts_with("::error title="))
        .unwrap_or_else(|| panic!("no error annotation:\n{out}"));
    assert!(
        line.contains("time_s regression") && line.contains("::time_s"),
        "{line}"
    );
    // GitHub's workflow commands: no raw newline or unescaped ':' in a property.
    let title = &line["::error title=".len()..line.rfind("::").unwrap()];
    assert!(!title.contains(':') && !title.contains(','), "{title}");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains("## hpcscope regress check: REGRESSION"), "{md}");
}

/// Validates each `(schema, file)` pair with PyPI jsonschema (TOML files in their JSON form;
/// `NAME[]`: each element of the file's list against schema NAME) and checks every schema
/// against the draft it names; returns the validator's report.
fn validate(python: &Path, schemas: &Path, pairs: &[(&str, PathBuf)]) -> String {
    let code = r#"
import json, sys, tomllib
from importlib.metadata import version
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
sdir = sys.argv[1]
cache = {}
bad = []
n = 0
for arg in sys.argv[2:]:
    name, path = arg.split("=", 1)
    each = name.endswith("[]")
    name = name.removesuffix("[]")
    if name not in cache:
        s = json.load(open(f"{sdir}/{name}.json"))
        Draft202012Validator.check_schema(s)
        cache[name] = Draft202012Validator(s)
    with open(path, "rb") as f:
        doc = tomllib.load(f) if path.endswith(".toml") else json.load(f)
    # NAME[]: each element of a list is one document.
    docs = doc if each else [doc]
    for d in docs:
        err = best_match(cache[name].iter_errors(d))
        n += 1
        if err is not None:
            bad.append(f"{path} ({name}): {err.message} at {list(err.absolute_path)}")
print("jsonschema", version("jsonschema"), "checked", n, "documents against", len(cache), "schemas")
for b in bad:
    print("INVALID", b)
"#;
    let mut c = Command::new(python);
    c.arg("-c").arg(code).arg(schemas);
    for (name, path) in pairs {
        c.arg(format!("{name}={}", path.display()));
    }
    stdout(&run(&mut c))
}

#[test]
fn every_bundled_file_and_command_output_matches_its_schema() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let schemas = d.join("schemas");
    std::fs::create_dir_all(&schemas).unwrap();
    let names = stdout(&run(bin!().arg("schema")));
    let names: Vec<&str> = names
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        names,
        [
            "machine",
            "profile",
            "scenario",
            "sweep",
            "result",
            "validation",
            "host-record",
            "hosts-validate",
            "counters",
            "mix",
            "trace",
            "profile-run",
            "roofline",
            "roofline-node",
            "project",
            "explore",
            "regress",
            "history",
            "doctor",
            "history-changes",
            "profile-import",
            "profile-diff",
            "counters-validate",
            "counters-raw",
            "counters-metrics",
            "counters-recipes",
            "counters-recipe",
            "bench",
            "bench-mpi",
            "model-kernel",
            "model-fit",
            "model-predict",
            "model-strong",
            "model-dt",
            "model-similarity",
            "model-scaling",
            "model-pop",
            "model-compose",
            "model-decompose",
            "model-peak",
            "rank",
            "merge",
            "merge-all"
        ]
    );
    for n in &names {
        run(bin!()
            .args(["schema", n, "-o"])
            .arg(schemas.join(format!("{n}.json"))));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut pairs: Vec<(&str, PathBuf)> = Vec::new();
    // Bundled files.
    for e in std::fs::read_dir(root.join("data/machines")).unwrap() {
        pairs.push(("machine", e.unwrap().path()));
    }
    // Every host record: its measurements and its machine file.
    for e in std::fs::read_dir(root.join("data/hosts")).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            pairs.push(("host-record", p.join("measurements.json")));
            pairs.push(("machine", p.join("machine.toml")));
        }
    }
    for e in std::fs::read_dir(root.join("examples/scenarios")).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let kind = match p.extension().and_then(|x| x.to_str()) {
            Some("json") => "profile",
            _ if text.contains("[source]") => "scenario",
            _ => "sweep",
        };
        pairs.push((kind, p));
    }
    // Command outputs: every built-in machine, as `machine list` and `machine show` print it.
    let list = d.join("list.json");
    std::fs::write(
        &list,
        run(bin!().args(["machine", "list", "--format", "json"])).stdout,
    )
    .unwrap();
    pairs.push(("machine[]", list));
    let show = d.join("show.json");
    std::fs::write(
        &show,
        run(bin!().args(["machine", "show", "a64fx", "--format", "json"])).stdout,
    )
    .unwrap();
    pairs.push(("machine", show));
    // Each command's --format json output, run for real on small inputs.
    let scen = root.join("examples/scenarios");
    let s = |p: &Path| p.display().to_string();
    let json_of = |schema: &'static str, file: &str, args: &[String]| {
        let o = run(bin!().args(args).current_dir(d));
        let p = d.join(file);
        std::fs::write(&p, &o.stdout).unwrap();
        (schema, p)
    };
    let v = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    // `analyze` (QEMU and the plugin): result.json and the profiles it writes, and the
    // partial result.json of a program it cannot characterize.
    match (
        common::which("qemu-x86_64"),
        common::which("cc"),
        common::plugin(),
    ) {
        (Some(_), Some(cc), Some(plugin)) => {
            let bin = d.join("two_hot");
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/two_hot.c");
            run(Command::new(&cc).args(["-O1", "-o"]).arg(&bin).arg(&src));
            let analyze = |out: &Path, prog: &Path| {
                bin!()
                    .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
                    .args(["analyze", "-m", "cascadelake-8260", "-t", "a64fx", "-o"])
                    .arg(out)
                    .arg("--")
                    .arg(prog)
                    .arg("4000000")
                    .output()
                    .unwrap()
            };
            let out = d.join("a");
            let o = analyze(&out, &bin);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            for e in std::fs::read_dir(&out).unwrap() {
                let p = e.unwrap().path();
                match p.file_name().and_then(|f| f.to_str()) {
                    Some("result.json") => pairs.push(("result", p)),
                    Some(f) if f.ends_with(".json") => pairs.push(("profile", p)),
                    _ => {}
                }
            }
            let script = d.join("job.sh");
            std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
            std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
            let out = d.join("p");
            assert_eq!(analyze(&out, &script).status.code(), Some(2));
            pairs.push(("result", out.join("result.json")));
            // `mix --format json` of the same program.
            let o = bin!()
                .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
                .args(["mix", "-m", "cascadelake-8260", "--native-runs", "0"])
                .args(["--format", "json", "--"])
                .arg(&bin)
                .arg("4000000")
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            std::fs::write(d.join("mix.json"), &o.stdout).unwrap();
            pairs.push(("mix", d.join("mix.json")));
            // `validate` of two builds of it: validation.json.
            let o2 = d.join("two_hot_o2");
            run(Command::new(&cc).args(["-O2", "-o"]).arg(&o2).arg(&src));
            let vdir = d.join("v");
            run(bin!()
                .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
                .args([
                    "validate",
                    "-m",
                    "cascadelake-8260",
                    "--native-runs",
                    "2",
                    "-o",
                ])
                .arg(&vdir)
                .arg(format!("--build=o1={}", bin.display()))
                .arg(format!("--build=o2={}", o2.display()))
                .args(["--", "400000"]));
            pairs.push(("validation", vdir.join("validation.json")));
            // `model kernel` of its main function.
            pairs.push(json_of(
                "model-kernel",
                "model-kernel.json",
                &v(&[
                    "model",
                    "kernel",
                    &s(&bin),
                    "-f",
                    "main",
                    "--format",
                    "json",
                ]),
            ));
            pairs.push(json_of(
                "model-kernel",
                "model-kernel-pick.json",
                &v(&[
                    "model",
                    "kernel",
                    &s(&bin),
                    "-f",
                    "main",
                    "--min-loads",
                    "1",
                    "--format",
                    "json",
                ]),
            ));
        }
        _ if std::env::var_os("CI").is_some() => {
            panic!("qemu-x86_64, cc and the release QEMU plugin are there under CI")
        }
        _ => {
            println!("skipping the analyze outputs: qemu-x86_64, cc or the QEMU plugin is missing")
        }
    }
    let import = Path::new(env!("CARGO_MANIFEST_DIR")).join("../counters/tests/data/import");
    let src = s(&scen.join("tx2-source.json"));
    let tgt = s(&scen.join("sve-512.json"));
    let perf = s(&import.join("perf-stat-vm.csv"));
    pairs.push(json_of(
        "counters",
        "counters.json",
        &v(&["counters", "import", &perf, "--format", "json"]),
    ));
    pairs.push(json_of(
        "roofline",
        "roofline.json",
        &v(&[
            "roofline",
            "-m",
            "thunderx2",
            "-p",
            &src,
            "--format",
            "json",
        ]),
    ));
    pairs.push(json_of(
        "project",
        "project.json",
        &v(&[
            "project",
            "--source-machine",
            "thunderx2",
            "--source-profile",
            &src,
            "--target-machine",
            "a64fx",
            "--target-profile",
            &tgt,
            "--format",
            "json",
        ]),
    ));
    let explore = s(&scen.join("tx2-sve-hbm.toml"));
    pairs.push(json_of(
        "explore",
        "explore.json",
        &v(&["explore", &explore, "--format", "json"]),
    ));
    pairs.push(json_of(
        "doctor",
        "doctor.json",
        &v(&["doctor", "--format", "json"]),
    ));
    let db = d.join("h.sqlite");
    history_with_a_step(&db);
    pairs.push(json_of(
        "history",
        "history.json",
        &v(&["history", "list", "--format", "json", "--db", &s(&db)]),
    ));
    // regress exits 1 on the regression it finds; its JSON goes to --json.
    let rj = d.join("regress.json");
    let o = bin!()
        .args(["regress", "check", "--candidates", "4", "--db"])
        .arg(&db)
        .arg("--json")
        .arg(&rj)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    pairs.push(("regress", rj));
    pairs.push(json_of(
        "history-changes",
        "changes.json",
        &v(&[
            "history",
            "changes",
            "time_s",
            "--format",
            "json",
            "--db",
            &s(&db),
        ]),
    ));
    // `roofline --scope node` of a profile with one entry per thread.
    let node_profile = d.join("node-profile.json");
    let mut p: Value =
        serde_json::from_str(&std::fs::read_to_string(scen.join("tx2-source.json")).unwrap())
            .unwrap();
    let t0 = p["regions"][0]["threads"][0].clone();
    let mut t1 = t0.clone();
    t1["thread"] = 1.into();
    t1["flops"] = 6.0e10.into();
    p["regions"][0]["threads"] = Value::Array(vec![t0, t1]);
    std::fs::write(&node_profile, p.to_string()).unwrap();
    let node = json_of(
        "roofline-node",
        "roofline-node.json",
        &v(&[
            "roofline",
            "-m",
            "thunderx2",
            "-p",
            &s(&node_profile),
            "--scope",
            "node",
            "--format",
            "json",
        ]),
    );
    let n: Value = serde_json::from_str(&std::fs::read_to_string(&node.1).unwrap()).unwrap();
    assert_eq!(n["threads"].as_array().map(Vec::len), Some(2), "{n}");
    pairs.push(node);
    // counters: the synthetic triad check, the metric catalogue, the recipes.
    pairs.push(json_of(
        "counters-validate",
        "counters-validate.json",
        &v(&["counters", "validate", "--synthetic", "--format", "json"]),
    ));
    // The raw counts `counters run --save` writes (software events where there is no PMU).
    let raw = d.join("raw.json");
    run(bin!()
        .args(["counters", "run", "--save"])
        .arg(&raw)
        .args(["--", "true"]));
    pairs.push(("counters-raw", raw));
    pairs.push((
        "counters-raw[]",
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../counters/tests/data/seed001/raw_counters.json"),
    ));
    pairs.push(json_of(
        "counters-metrics",
        "counters-metrics.json",
        &v(&["counters", "metrics", "--format", "json"]),
    ));
    pairs.push(json_of(
        "counters-recipes",
        "counters-recipes.json",
        &v(&["counters", "recipes", "--format", "json"]),
    ));
    pairs.push(json_of(
        "counters-recipe",
        "counters-recipe.json",
        &v(&[
            "counters",
            "recipes",
            "intel-cascadelake",
            "--format",
            "json",
        ]),
    ));
    // profile import and diff of two folded profiles.
    let before = folded(d);
    let after = d.join("after.folded");
    std::fs::write(
        &after,
        "app;main;solve;dot 300\napp;main;solve 100\napp;main;io;write_[k] 600\n",
    )
    .unwrap();
    pairs.push(json_of(
        "profile-import",
        "profile-import.json",
        &v(&["profile", "import", &s(&before), "--format", "json"]),
    ));
    pairs.push(json_of(
        "profile-diff",
        "profile-diff.json",
        &v(&[
            "profile",
            "diff",
            &s(&before),
            &s(&after),
            "--format",
            "json",
        ]),
    ));
    // model: every subcommand on the worked examples of crates/models/tests/data.
    let md = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/tests/data");
    let m = |f: &str| s(&md.join(f));
    let vcsv = d.join("variants.csv");
    std::fs::write(
        &vcsv,
        std::fs::read_to_string(md.join("example_a.csv"))
            .unwrap()
            .replace("target,,", "target,120,")
            + "target2,100,6,4,8,10,60,0,10\n",
    )
    .unwrap();
    let actual = d.join("actual.csv");
    std::fs::write(&actual, "threads,seconds\n1,0.011\n28,0.0009\n").unwrap();
    let cpi = m("cpi_a.json");
    let model_runs: Vec<(&'static str, &str, Vec<String>)> = vec![
        (
            "model-fit",
            "fit",
            v(&[
                "fit",
                &m("variants_native.csv"),
                "--ports",
                "sapphirerapids",
                "--hops",
                "3",
            ]),
        ),
        (
            "model-predict",
            "predict",
            v(&[
                "predict",
                &m("example_a.csv"),
                "--cpi",
                &cpi,
                "--proxy",
                "mgcfd",
                "--rc",
                "0.6",
                "--clock-ghz",
                "2",
                "--iters",
                "1e6",
            ]),
        ),
        (
            "model-predict",
            "predict-validate",
            v(&[
                "predict",
                &s(&vcsv),
                "--cpi",
                &cpi,
                "--proxy",
                "mgcfd",
                "--validate",
            ]),
        ),
        (
            "model-strong",
            "strong",
            v(&["strong", &m("strong.csv"), "--cycles", "113"]),
        ),
        (
            "model-strong",
            "strong-actual",
            v(&[
                "strong",
                &m("strong.csv"),
                "--cycles",
                "113",
                "--actual",
                &s(&actual),
            ]),
        ),
        ("model-similarity", "similarity", {
            let sd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/similarity");
            let k = |f: &str| s(&sd.join(f));
            v(&[
                "similarity",
                &k("kernel_skx.csv"),
                &k("parent_skx.csv"),
                "--also",
                &format!("{},{}", k("kernel_knl.csv"), k("parent_knl.csv")),
            ])
        }),
        (
            "model-scaling",
            "scaling",
            v(&["scaling", &m("runs_amdahl.csv"), "--predict", "64"]),
        ),
        (
            "model-pop",
            "pop",
            v(&[
                "pop",
                &m("pop_4ranks_counters.csv"),
                "--reference",
                &m("pop_ref_2ranks_counters.csv"),
            ]),
        ),
        ("model-pop", "pop-hybrid", v(&["pop", &m("pop_hybrid.csv")])),
        (
            "model-compose",
            "compose",
            v(&[
                "compose",
                "--sigma",
                "10",
                "--flops",
                "5e10",
                "--gflops",
                "25",
                "--bytes",
                "1e9",
                "--bandwidth-gbs",
                "7.7637",
                "--messages",
                "100",
                "--message-bytes",
                "4194304",
                "--mpi-table",
                &m("wang_table_4_6_sendrecv.csv"),
                "--other-s",
                "5",
            ]),
        ),
        (
            "model-decompose",
            "decompose",
            v(&[
                "decompose",
                &m("decomposition.csv"),
                "--project",
                "NB=1,f=1.184126,BW=1",
            ]),
        ),
        (
            "model-peak",
            "peak",
            v(&["peak", "--dag", &m("cftb040.dag")]),
        ),
    ];
    // `model dt` measured now (one thread, a small mesh), and `model strong --dt` of it.
    let dt = json_of(
        "model-dt",
        "model-dt.json",
        &v(&[
            "model",
            "dt",
            "--threads",
            "1",
            "--dt-mib",
            "1",
            "--reps",
            "2",
            "--format",
            "json",
        ]),
    );
    pairs.push(json_of(
        "model-strong",
        "model-strong-dt.json",
        &v(&[
            "model",
            "strong",
            "--dt",
            &s(&dt.1),
            "--cycles",
            "113",
            "--iters",
            "1e6",
            "--format",
            "json",
        ]),
    ));
    pairs.push(dt);
    // `bench` of one kernel at one width, the quick sweep.
    let bench = d.join("bench.json");
    run(bin!()
        .args([
            "bench",
            "--quick",
            "--kernels",
            "triad",
            "--repeat",
            "2",
            "--threads",
            "1",
        ])
        .args([
            "--widths",
            "scalar",
            "--precision",
            "f64",
            "--format",
            "json",
            "-o",
        ])
        .arg(&bench));
    pairs.push(("bench", bench));
    // `bench mpi` where Open MPI's mpirun and mpicc are.
    match (common::which("mpirun"), common::which("mpicc")) {
        (Some(_), Some(_)) => {
            let mpi = d.join("bench-mpi.json");
            run(bin!()
                .args([
                    "bench", "mpi", "--quick", "--repeat", "2", "--sizes", "0,1K,64K",
                ])
                .args(["--format", "json", "-o"])
                .arg(&mpi));
            pairs.push(("bench-mpi", mpi));
        }
        _ if std::env::var_os("CI").is_some() => {
            panic!("mpirun and mpicc are there under CI (scripts/setup.sh installs openmpi)")
        }
        _ => println!("skipping bench mpi: mpirun or mpicc is missing"),
    }
    for (schema, name, args) in model_runs {
        let mut a = vec!["model".to_string()];
        a.extend(args);
        a.extend(v(&["--format", "json"]));
        pairs.push(json_of(schema, &format!("model-{name}.json"), &a));
    }
    // merge: two ranks of two jobs (the launcher's variables as Open MPI sets them), each
    // job merged, every job merged, and the rank files themselves.
    let runs = d.join("runs");
    for job in ["j1", "j2"] {
        for rank in 0..2 {
            run(bin!()
                .env("OMPI_COMM_WORLD_RANK", rank.to_string())
                .env("OMPI_COMM_WORLD_LOCAL_RANK", rank.to_string())
                .env("OMPI_COMM_WORLD_SIZE", "2")
                .args(["record", "--job-id", job, "--run-dir"])
                .arg(&runs)
                .args(["--", "true"]));
        }
    }
    for e in std::fs::read_dir(runs.join("j1")).unwrap() {
        pairs.push(("rank", e.unwrap().path()));
    }
    pairs.push(json_of(
        "merge",
        "merge.json",
        &v(&["merge", &s(&runs), "--job", "j1", "--format", "json"]),
    ));
    pairs.push(json_of(
        "merge-all",
        "merge-all.json",
        &v(&["merge", &s(&runs), "--all", "--format", "json"]),
    ));
    // trace and profile: root and eBPF.
    let doctor: Value =
        serde_json::from_slice(&run(bin!().args(["doctor", "--format", "json"])).stdout).unwrap();
    let ok = |name: &str| {
        doctor["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == name && c["ok"] == true)
    };
    // SAFETY: geteuid has no preconditions.
    let can_trace = unsafe { libc_geteuid() } == 0 && ok("bpf permission") && ok("kernel BTF");
    if can_trace {
        pairs.push(json_of(
            "trace",
            "trace.json",
            &v(&[
                "trace",
                "--format",
                "json",
                "--",
                "sh",
                "-c",
                "ls / >/dev/null",
            ]),
        ));
        pairs.push(json_of(
            "profile-run",
            "profile-run.json",
            &v(&[
                "profile",
                "--format",
                "json",
                "--",
                "sh",
                "-c",
                "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done",
            ]),
        ));
    } else if std::env::var_os("CI").is_some() {
        panic!("CI runs as root with eBPF: trace and profile must run");
    } else {
        println!("skipping: trace and profile outputs need root and eBPF");
    }
    let report = validate(&python, &schemas, &pairs);
    println!("{report}");
    assert!(report.starts_with("jsonschema "), "{report}");
    assert!(!report.contains("INVALID"), "{report}");
    // And a document that breaks the schema is caught.
    let broken = d.join("broken.json");
    std::fs::write(&broken, r#"{"format_version": 1, "id": "x"}"#).unwrap();
    let report = validate(&python, &schemas, &[("machine", broken)]);
    assert!(report.contains("INVALID"), "{report}");
}

/// `profile export --to hatchet` of a 46 KB folded file with one 8,000-frame stack wrote
/// 1.54 GB (its pretty-printed indentation grew with the depth): the tree is written
/// compact, its size linear in the stacks'.
#[test]
fn a_deep_stack_exports_to_hatchet_in_linear_size() {
    let dir = tempfile::tempdir().unwrap();
    let folded = dir.path().join("deep.folded");
    let frames: Vec<String> = (0..8000).map(|i| format!("f{i}")).collect();
    std::fs::write(&folded, format!("app;{} 5\n", frames.join(";"))).unwrap();
    let out = dir.path().join("deep.hatchet.json");
    run(bin!()
        .args(["profile", "export", "--to", "hatchet", "-o"])
        .arg(&out)
        .arg(&folded));
    let input = std::fs::metadata(&folded).unwrap().len();
    let output = std::fs::metadata(&out).unwrap().len();
    assert!(
        output < 200 * input,
        "{output} bytes written for {input} read"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.starts_with("[{\"children\":[{\"children\":"),
        "{}",
        &text[..80]
    );
    assert!(text.contains("\"name\":\"f7999\""));
}
