//! The cache-size axis end to end (seed 000, section 7.4): `machine derive` writes a machine
//! `machine show` and `mix -m` read back, and `explore` re-simulates the caches of the
//! targets whose transforms change the cache geometry (one `mix` run, cached for the next
//! exploration). The re-simulation tests run the real plugin under QEMU on a small triad
//! built here; they are skipped, with a line saying why, where qemu-user, gcc or the plugin
//! is missing.

mod common;
use common::{TRIAD, cc, qemu_plugin_ready as ready};

use hpcscope_test_support::bin;
use std::path::{Path, PathBuf};
use std::process::Output;

fn run(args: &[&str]) -> Output {
    bin!().args(args).output().expect("run hpcscope")
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn show_json(machine: &str) -> serde_json::Value {
    serde_json::from_str(&ok(&run(&["machine", "show", machine, "--format", "json"]))).unwrap()
}

fn level<'a>(m: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    m["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no level {name} in {m}"))
}

#[test]
fn machine_derive_writes_a_machine_that_show_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("big-l2.toml");
    let o = run(&[
        "machine",
        "derive",
        "cascadelake-8260",
        "--set",
        "L2.size_bytes=2M",
        "--transform",
        "{ scale_level = { level = \"MM\", factor = 2.0 } }",
        "--id",
        "clx-big-l2",
        "-o",
        out.to_str().unwrap(),
    ]);
    ok(&o);
    let base = show_json("cascadelake-8260");
    let d = show_json(out.to_str().unwrap());
    assert_eq!(d["id"], "clx-big-l2");
    assert_eq!(level(&d, "L2")["cache"]["size_bytes"], 2u64 << 20);
    // Only what the transforms name changes.
    assert_eq!(
        level(&d, "L2")["cache"]["associativity"],
        level(&base, "L2")["cache"]["associativity"]
    );
    assert_eq!(level(&d, "L3")["cache"], level(&base, "L3")["cache"]);
    let mm = |m: &serde_json::Value| level(m, "MM")["node_gbs"].as_f64().unwrap();
    assert!((mm(&d) - 2.0 * mm(&base)).abs() < 1e-9 * mm(&base));
    assert!(
        d["provenance"]
            .as_str()
            .unwrap()
            .contains("derived from machine 'cascadelake-8260'"),
        "{}",
        d["provenance"]
    );
    // The file round-trips: its TOML, written again, is the same machine.
    let again = dir.path().join("again.toml");
    std::fs::write(
        &again,
        ok(&run(&[
            "machine",
            "show",
            out.to_str().unwrap(),
            "--format",
            "toml",
        ])),
    )
    .unwrap();
    assert_eq!(show_json(again.to_str().unwrap()), d);
    assert!(ok(&run(&["machine", "validate", again.to_str().unwrap()])).starts_with("ok:"));
    // A geometry the machine format refuses is refused with the level named.
    let o = run(&[
        "machine",
        "derive",
        "cascadelake-8260",
        "--set",
        "L9.size_bytes=2M",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no level 'L9'"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Bytes of one level in a profile's only region, thread 0.
fn profile_bytes(p: &serde_json::Value, name: &str) -> f64 {
    p["regions"][0]["threads"][0]["memory"]["bytes_per_level"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["level"] == name)
        .map(|l| l["bytes"].as_f64().unwrap())
        .unwrap_or(0.0)
}

/// The OI at level `oi_level` a design point's projection gives the variant.
fn oi_at(point: &serde_json::Value, oi_level: &str) -> f64 {
    point["projection"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["oi_level"] == oi_level)
        .unwrap_or_else(|| panic!("no point at {oi_level}"))["oi_target"]
        .as_f64()
        .unwrap()
}

#[test]
fn explore_resimulates_a_cache_size_sweep_and_caches_it() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = cc(d, "triad", TRIAD, &[]);
    // 3 arrays x 32768 x 8 B = 768 KiB: fits a 1 MiB or 2 MiB L2, not a 256 KiB one.
    let (n, reps) = ("32768", "8");
    // `machine derive` then `mix -m FILE`: the profile of the derived geometry, for
    // comparison with what explore re-simulates for the same geometry.
    ok(&run(&[
        "machine",
        "derive",
        "cascadelake-8260",
        "--set",
        "L2.size_bytes=2M",
        "--id",
        "clx-l2-2m",
        "-o",
        d.join("l2-2m.toml").to_str().unwrap(),
    ]));
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
        .args(["mix", "-m", "cascadelake-8260", "-m"])
        .arg(d.join("l2-2m.toml"))
        .args(["--native-runs", "0", "--function", "kernel", "-o"])
        .arg(d.join("mix"))
        .arg("--")
        .arg(&prog)
        .args([n, reps])
        .output()
        .unwrap();
    ok(&o);
    let read = |p: PathBuf| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
    };
    let base_profile = d.join("mix/triad-cascadelake-8260.json");
    let derived = read(d.join("mix/triad-clx-l2-2m.json"));
    std::fs::write(
        d.join("scenario.toml"),
        format!(
            r#"name = "L2 size sweep"
[source]
machine = "cascadelake-8260"
profile = "{base}"
gflops = 1.0

[[variants]]
name = "triad"
profile = "{base}"
command = ["./triad", "{n}", "{reps}"]
functions = ["kernel"]

[[targets]]
name = "base"
machine = "cascadelake-8260"

[[targets]]
name = "L2 256K"
machine = "cascadelake-8260"
transforms = [{{ cache_size = {{ level = "L2", size_bytes = 262144 }} }}]

[[targets]]
name = "L2 2M"
machine = "cascadelake-8260"
transforms = [{{ cache_size = {{ level = "L2", size_bytes = 2097152 }} }}]

[[targets]]
name = "L2 2M, 4 ways"
machine = "cascadelake-8260"
transforms = [{{ cache_size = {{ level = "L2", size_bytes = 2097152 }} }}, {{ cache_ways = {{ level = "L2", associativity = 4 }} }}]
"#,
            base = base_profile.display()
        ),
    )
    .unwrap();
    let explore = || {
        let o = bin!()
            .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
            .arg("explore")
            .arg(d.join("scenario.toml"))
            .args(["--format", "json"])
            .output()
            .unwrap();
        let text = ok(&o);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        (v, String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (first, _) = explore();
    let cache = d.join("resim-cache");
    let files: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    // Three changed geometries, one file each.
    assert_eq!(files.len(), 3, "{files:?}");
    let pts = first["points"].as_array().unwrap();
    let by = |t: &str| pts.iter().find(|p| p["target"] == t).unwrap();
    assert_eq!(by("base")["bytes"], "profile");
    for t in ["L2 256K", "L2 2M", "L2 2M, 4 ways"] {
        assert_eq!(by(t)["bytes"], "resimulated", "{t}");
    }
    assert!(
        first.get("approximate").is_none(),
        "{}",
        first["approximate"]
    );
    // Physics: a bigger L2 holds the 768 KiB working set, so L3 and beyond serve fewer
    // bytes, and the OI at L3 (FLOPs over those bytes) rises. The 256 KiB L2 misses on
    // every line: L3 serves about an eighth of the bytes (one line in 8 accesses).
    let (small, big, base) = (
        oi_at(by("L2 256K"), "L3"),
        oi_at(by("L2 2M"), "L3"),
        oi_at(by("base"), "L3"),
    );
    assert!(
        big > 5.0 * small,
        "OI at L3: 2 MiB L2 {big}, 256 KiB L2 {small}"
    );
    assert!(
        base > 5.0 * small,
        "OI at L3: 1 MiB L2 {base}, 256 KiB L2 {small}"
    );
    // The same geometry simulated by `mix -m` on the derived machine file gives the same
    // bytes per level as explore's re-simulation (the simulation is deterministic).
    let cached: Vec<serde_json::Value> = files.iter().map(|p| read(p.clone())).collect();
    let l2m = cached
        .iter()
        .find(|p| p["machine"] == "cascadelake-8260+L2.size=2097152")
        .expect("the 2 MiB L2 geometry is cached");
    for l in ["L1", "L2", "L3", "MM"] {
        assert_eq!(profile_bytes(l2m, l), profile_bytes(&derived, l), "{l}");
    }
    let l256 = cached
        .iter()
        .find(|p| p["machine"] == "cascadelake-8260+L2.size=262144")
        .unwrap();
    assert!(
        profile_bytes(l256, "L3") + profile_bytes(l256, "MM")
            > 5.0 * (profile_bytes(l2m, "L3") + profile_bytes(l2m, "MM"))
    );
    // The second exploration runs nothing: every geometry comes from the cache, and the
    // result is the same.
    let stamp: Vec<_> = files
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().modified().unwrap())
        .collect();
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", "/nonexistent/plugin.so")
        .arg("explore")
        .arg(d.join("scenario.toml"))
        .output()
        .unwrap();
    let text = ok(&o);
    assert!(
        text.contains("0 geometries simulated in 0 mix run(s), 3 from the cache"),
        "{text}"
    );
    assert!(text.contains("re-simulated"), "{text}");
    let again: Vec<_> = files
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().modified().unwrap())
        .collect();
    assert_eq!(stamp, again);
    let (second, _) = {
        let o = bin!()
            .env("HPCSCOPE_QEMU_PLUGIN", "/nonexistent/plugin.so")
            .arg("explore")
            .arg(d.join("scenario.toml"))
            .args(["--format", "json"])
            .output()
            .unwrap();
        (
            serde_json::from_str::<serde_json::Value>(&ok(&o)).unwrap(),
            (),
        )
    };
    assert_eq!(first["points"], second["points"]);
    // The JSON carries the same totals as the text line: one mix run for the three
    // geometries, then all three from the cache.
    let totals = |v: &serde_json::Value| {
        let r = &v["resimulation"];
        ["points", "simulated", "mix_runs", "cached"].map(|k| r[k].as_u64().unwrap())
    };
    assert_eq!(totals(&first), [3, 3, 1, 0], "{}", first["resimulation"]);
    assert_eq!(totals(&second), [3, 0, 0, 3], "{}", second["resimulation"]);
    // A damaged cache file is said, simulated again and replaced.
    std::fs::write(&files[0], "{ not a profile").unwrap();
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
        .arg("explore")
        .arg(d.join("scenario.toml"))
        .output()
        .unwrap();
    let text = ok(&o);
    assert!(
        text.contains("1 geometry simulated in 1 mix run(s), 2 from the cache"),
        "{text}"
    );
    assert!(
        text.contains("could not be read, so it was simulated again"),
        "{text}"
    );
    assert!(read(files[0].clone())["regions"].is_array());
}

#[test]
fn explore_without_a_program_says_the_geometry_change_is_approximate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let profile = serde_json::json!({"format_version": 1, "application": "t", "isa": "x86_64",
        "vector_bits": 64, "precision": "f64", "regions": [{"name": "main", "threads": [{
            "thread": 0, "flops": 1.0e9, "fp_instructions": 1.0e9, "time_s": 1.0,
            "memory": {"bytes_total": 1.2e10, "hit_ratios": {"kind": "local", "levels": [
                {"level": "L1", "ratio": 0.875}, {"level": "L2", "ratio": 0.5},
                {"level": "L3", "ratio": 0.5}]}}}]}]});
    std::fs::write(d.join("p.json"), profile.to_string()).unwrap();
    std::fs::write(
        d.join("s.toml"),
        r#"name = "no program"
[source]
machine = "cascadelake-8260"
profile = "p.json"
[[variants]]
name = "v"
profile = "p.json"
[[targets]]
name = "big L2"
machine = "cascadelake-8260"
transforms = [{ cache_size = { level = "L2", size_bytes = 2097152 } }]
"#,
    )
    .unwrap();
    let o = run(&["explore", d.join("s.toml").to_str().unwrap()]);
    let text = ok(&o);
    assert!(text.contains("not re-simulated: approximate"), "{text}");
    assert!(
        text.contains("give the program") || text.contains("Give the program"),
        "{text}"
    );
    assert!(!d.join("resim-cache").exists());
    let o = run(&[
        "explore",
        d.join("s.toml").to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(v["points"][0]["bytes"], "approximate");
}

/// `analyze` of `prog n reps` (its function `kernel`) on cascadelake-8260 with the sweep
/// `scenario`, `runs` native runs and `extra` arguments, into `out`.
fn analyze_sweep(
    plugin: &Path,
    prog: &Path,
    args: [&str; 2],
    scenario: &Path,
    runs: &str,
    extra: &[&std::ffi::OsStr],
    out: &Path,
) -> Output {
    bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", plugin)
        .args([
            "analyze",
            "-m",
            "cascadelake-8260",
            "-t",
            "cascadelake-8260",
        ])
        .args(["--no-trace", "--native-runs", runs, "--function", "kernel"])
        .args(extra)
        .arg("--scenario")
        .arg(scenario)
        .arg("-o")
        .arg(out)
        .arg("--")
        .arg(prog)
        .args(args)
        .output()
        .unwrap()
}

/// The `explore` scenario `name` of one variant, `triad`, whose profile (and the source's)
/// is `profile`, with `targets` (TOML).
fn explore_scenario(name: &str, profile: &str, targets: &str) -> String {
    format!(
        "name = \"{name}\"\n[source]\nmachine = \"cascadelake-8260\"\nprofile = \"{profile}\"\ngflops = 1.0\n\n[[variants]]\nname = \"triad\"\nprofile = \"{profile}\"\n{targets}"
    )
}

/// `explore scenario --format json` re-simulating with `prog args` (its function
/// `kernel`): the JSON it prints.
fn explore_with_program(
    plugin: &Path,
    scenario: &Path,
    prog: &Path,
    args: [&str; 2],
) -> serde_json::Value {
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", plugin)
        .arg("explore")
        .arg(scenario)
        .args(["--format", "json", "--function", "kernel", "--"])
        .arg(prog)
        .args(args)
        .output()
        .unwrap();
    serde_json::from_str(&ok(&o)).unwrap()
}

/// `analyze --scenario` simulates each target's own cache geometry in the characterization's
/// emulation: two targets differing only in their L2 size get different bytes per level,
/// the same as `explore` re-simulates for those geometries, and a target without a cache
/// geometry is said approximate.
#[test]
fn analyze_sweep_simulates_each_targets_cache_geometry() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = cc(d, "triad", TRIAD, &[]);
    // 3 arrays x 32768 x 8 B = 768 KiB: fits a 2 MiB L2, not a 256 KiB one.
    let (n, reps) = ("32768", "8");
    let targets = r#"
[[targets]]
name = "L2 256K"
machine = "cascadelake-8260"
transforms = [{ cache_size = { level = "L2", size_bytes = 262144 } }]

[[targets]]
name = "L2 2M"
machine = "cascadelake-8260"
transforms = [{ cache_size = { level = "L2", size_bytes = 2097152 } }]
"#;
    std::fs::write(
        d.join("sweep.toml"),
        format!(
            "name = \"L2 size\"\n{targets}\n[[targets]]\nname = \"KNL\"\nmachine = \"knl-flat-dram\"\n"
        ),
    )
    .unwrap();
    // analyze of the triad with the sweep, and `extra` arguments, into `out`.
    let analyze = |out: &Path, extra: &[&std::ffi::OsStr]| {
        analyze_sweep(
            &plugin,
            &prog,
            [n, reps],
            &d.join("sweep.toml"),
            "2",
            extra,
            out,
        )
    };
    let out = d.join("a");
    let o = analyze(&out, &[]);
    let text = ok(&o);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    let sw = &r["sweep"];
    let pts = sw["points"].as_array().unwrap();
    let by = |t: &str| pts.iter().find(|p| p["target"] == t).unwrap();
    for t in ["L2 256K", "L2 2M"] {
        assert_eq!(by(t)["bytes"], "resimulated", "{t}");
    }
    assert_eq!(by("KNL")["bytes"], "approximate");
    let r2 = &sw["resimulation"];
    assert_eq!(
        ["points", "simulated", "mix_runs", "cached"].map(|k| r2[k].as_u64().unwrap()),
        [2, 2, 0, 0],
        "{r2}"
    );
    let approx = sw["approximate"].as_array().unwrap();
    assert_eq!(approx.len(), 1, "{approx:?}");
    assert!(
        approx[0].as_str().unwrap().contains("'KNL'")
            && approx[0].as_str().unwrap().contains("cannot be simulated"),
        "{approx:?}"
    );
    assert!(text.contains("re-simulated: 2 design point(s)"), "{text}");
    assert!(
        text.contains("(2 geometries simulated in the same emulation"),
        "{text}"
    );
    assert!(text.contains("approximate: target 'KNL'"), "{text}");
    // Physics: the 256 KiB L2 misses on every line, so L3 serves about 8 times the bytes
    // (the OI at L3 is lower) than behind a 2 MiB L2 that holds the working set.
    let (small, big) = (oi_at(by("L2 256K"), "L3"), oi_at(by("L2 2M"), "L3"));
    assert!(
        big > 5.0 * small,
        "OI at L3: 2 MiB L2 {big}, 256 KiB L2 {small}"
    );
    // With a target binary (here the same build), the geometries are simulated in its runs:
    // the same bytes per level.
    let out_tb = d.join("tb");
    let o = analyze(&out_tb, &["--target-binary".as_ref(), prog.as_os_str()]);
    ok(&o);
    let tb: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_tb.join("result.json")).unwrap())
            .unwrap();
    let tb_pts = tb["sweep"]["points"].as_array().unwrap();
    for t in ["L2 256K", "L2 2M"] {
        let p = tb_pts.iter().find(|p| p["target"] == t).unwrap();
        assert_eq!(p["bytes"], "resimulated", "{t}");
        for l in ["L1", "L2", "L3", "MM"] {
            assert_eq!(oi_at(p, l), oi_at(by(t), l), "{t}, OI at {l}");
        }
    }
    // The same geometries re-simulated by `explore` from the analyzed profile give the same
    // OI at every level (the simulation is deterministic).
    std::fs::write(d.join("p.json"), r["source_profile"].to_string()).unwrap();
    std::fs::write(
        d.join("explore.toml"),
        explore_scenario("L2 size", "p.json", targets),
    )
    .unwrap();
    let e = explore_with_program(&plugin, &d.join("explore.toml"), &prog, [n, reps]);
    let epts = e["points"].as_array().unwrap();
    for t in ["L2 256K", "L2 2M"] {
        let ep = epts.iter().find(|p| p["target"] == t).unwrap();
        assert_eq!(ep["bytes"], "resimulated", "{t}");
        for l in ["L1", "L2", "L3", "MM"] {
            let (a, x) = (oi_at(by(t), l), oi_at(ep, l));
            assert!(
                (a - x).abs() <= 1e-9 * x.abs(),
                "{t}, OI at {l}: analyze {a}, explore {x}"
            );
        }
    }
}

/// A target that is simply another machine (examples/scenarios/analyze-memory.toml's N1 and
/// ThunderX2, untransformed) has other caches than the machine the profile was simulated
/// for: `explore` re-simulates it, as `analyze --scenario` does, and gives it the same OI at
/// every level; a profile from a `mix` run that simulated that machine too gives it those
/// bytes without running anything.
#[test]
fn explore_resimulates_other_machines_as_analyze_does() {
    let Some(plugin) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = cc(d, "triad", TRIAD, &[]);
    // 768 KiB: held by cascadelake-8260's and N1's 1 MiB L2, not by ThunderX2's 256 KiB.
    let (n, reps) = ("32768", "8");
    let targets = r#"
[[targets]]
name = "CLX"
machine = "cascadelake-8260"

[[targets]]
name = "N1"
machine = "neoverse-n1"

[[targets]]
name = "N1 + HBM2"
machine = "neoverse-n1"
transforms = [{ replace_memory = "a64fx" }]

[[targets]]
name = "TX2"
machine = "thunderx2"
"#;
    std::fs::write(
        d.join("sweep.toml"),
        format!("name = \"machines\"\n{targets}"),
    )
    .unwrap();
    let o = analyze_sweep(
        &plugin,
        &prog,
        [n, reps],
        &d.join("sweep.toml"),
        "1",
        &[],
        &d.join("a"),
    );
    ok(&o);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("a/result.json")).unwrap()).unwrap();
    let apts = r["sweep"]["points"].as_array().unwrap().clone();
    let point = |pts: &[serde_json::Value], t: &str| -> serde_json::Value {
        pts.iter()
            .find(|p| p["target"] == t)
            .unwrap_or_else(|| panic!("no point for {t}"))
            .clone()
    };
    for t in ["N1", "N1 + HBM2", "TX2"] {
        assert_eq!(point(&apts, t)["bytes"], "resimulated", "analyze, {t}");
    }
    assert_eq!(point(&apts, "CLX")["bytes"], "profile");
    // The same OI at every level (the target's levels: N1 and ThunderX2 have no L3), to the
    // last digit (the simulation is deterministic).
    let same_oi = |pts: &[serde_json::Value], t: &str, what: &str| {
        let levels = |p: &serde_json::Value| -> Vec<String> {
            let mut v: Vec<String> = p["projection"]["points"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x["oi_level"].as_str().unwrap().to_string())
                .collect();
            v.dedup();
            v
        };
        let (a, x) = (point(&apts, t), point(pts, t));
        assert_eq!(levels(&a), levels(&x), "{what}, {t}");
        assert!(levels(&a).len() >= 3, "{what}, {t}: {:?}", levels(&a));
        for l in levels(&a) {
            let (a, x) = (oi_at(&a, &l), oi_at(&x, &l));
            assert!(
                (a - x).abs() <= 1e-9 * x.abs(),
                "{what}, {t}, OI at {l}: analyze {a}, explore {x}"
            );
        }
    };
    // explore from the analyzed profile (simulated for cascadelake-8260), with the program.
    std::fs::write(d.join("p.json"), r["source_profile"].to_string()).unwrap();
    let scenario = |profile: &str| explore_scenario("machines", profile, targets);
    std::fs::write(d.join("explore.toml"), scenario("p.json")).unwrap();
    let e = explore_with_program(&plugin, &d.join("explore.toml"), &prog, [n, reps]);
    let epts = e["points"].as_array().unwrap();
    assert_eq!(point(epts, "CLX")["bytes"], "profile");
    for t in ["N1", "N1 + HBM2", "TX2"] {
        assert_eq!(point(epts, t)["bytes"], "resimulated", "explore, {t}");
        same_oi(epts, t, "explore -- PROGRAM");
    }
    // Two geometries (N1 with either memory has N1's caches) in one mix run.
    let rs = &e["resimulation"];
    assert_eq!(
        ["points", "simulated", "mix_runs", "cached"].map(|k| rs[k].as_u64().unwrap()),
        [3, 2, 1, 0],
        "{rs}"
    );
    assert!(e.get("approximate").is_none(), "{}", e["approximate"]);
    // ThunderX2's 256 KiB L2 does not hold the working set, N1's 1 MiB does: the memory
    // serves far more bytes (a lower OI at MM) behind ThunderX2's.
    let (n1, tx2) = (
        oi_at(&point(epts, "N1"), "MM"),
        oi_at(&point(epts, "TX2"), "MM"),
    );
    assert!(n1 > 5.0 * tx2, "OI at MM: N1 {n1}, TX2 {tx2}");
    // A profile of `mix -m cascadelake-8260 -m thunderx2`: TX2 takes the run's thunderx2
    // profile, nothing runs; N1, never simulated, is approximate and says how to fix it.
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", &plugin)
        .args(["mix", "-m", "cascadelake-8260", "-m", "thunderx2"])
        .args(["--native-runs", "0", "--function", "kernel", "-o"])
        .arg(d.join("mix"))
        .arg("--")
        .arg(&prog)
        .args([n, reps])
        .output()
        .unwrap();
    ok(&o);
    std::fs::write(
        d.join("from-mix.toml"),
        scenario("mix/triad-cascadelake-8260.json"),
    )
    .unwrap();
    let cache = d.join("no-cache");
    let o = bin!()
        .env("HPCSCOPE_QEMU_PLUGIN", "/nonexistent/plugin.so")
        .arg("explore")
        .arg(d.join("from-mix.toml"))
        .args(["--format", "json", "--resim-dir"])
        .arg(&cache)
        .output()
        .unwrap();
    let m: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    let mpts = m["points"].as_array().unwrap();
    assert_eq!(point(mpts, "TX2")["bytes"], "resimulated");
    same_oi(mpts, "TX2", "explore from mix -m A -m B");
    for t in ["N1", "N1 + HBM2"] {
        assert_eq!(point(mpts, t)["bytes"], "approximate", "{t}");
    }
    let rs = &m["resimulation"];
    assert_eq!(
        ["points", "simulated", "mix_runs", "cached", "from_mix_run"]
            .map(|k| rs[k].as_u64().unwrap()),
        [1, 0, 0, 0, 1],
        "{rs}"
    );
    let approx = m["approximate"].as_array().unwrap();
    assert_eq!(approx.len(), 2, "{approx:?}");
    assert!(
        approx[0].as_str().unwrap().starts_with(
            "target 'N1' (neoverse-n1): its caches differ from those of cascadelake-8260"
        ) && approx[0].as_str().unwrap().contains("-- PROGRAM ARGS"),
        "{approx:?}"
    );
    assert!(!cache.exists());
}
