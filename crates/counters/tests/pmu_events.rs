//! The importer of Linux perf's pmu-events metric JSON. `tests/data/pmu-events/spr-metrics.json`
//! is an excerpt in the shape of `tools/perf/pmu-events/arch/x86/sapphirerapids/
//! spr-metrics.json` (fields MetricName, MetricExpr, MetricGroup, ScaleUnit,
//! BriefDescription, PublicDescription, MetricThreshold; `#SMT_on`, `#SYSTEM_TSC_FREQ`,
//! `duration_time`, `if ... else`, `min`/`max`/`d_ratio`, `\-` and `\,`/`\=` escapes, `@`
//! PMU syntax, metric references), with a few expressions simplified. When the kernel's real
//! files are on the machine (Debian's linux-source package, extracted), every MetricExpr in
//! them is parsed; otherwise that test prints why it skipped.
//!
//! `tests/data/pmu-events/amdzen5/` is an excerpt of the kernel's `arch/x86/amdzen5/*.json`
//! event files (its README names the commits): every event the Zen 5 recipe names must be
//! there with the same code, unit mask and PMU, so a recipe edit cannot slip in an encoding
//! the kernel does not have.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hpcscope_counters::catalogue::{Catalogue, EventDef, Recipe};
use hpcscope_counters::import::pmu_events::{PmuMetrics, default_constants, scale_unit};
use hpcscope_counters::raw::{Count, ThreadData};

const SPR: &str = include_str!("data/pmu-events/spr-metrics.json");

fn data(pairs: &[(&str, f64)], time: f64) -> ThreadData {
    let mut t = ThreadData {
        time_s: Some(time),
        ..ThreadData::default()
    };
    for (k, v) in pairs {
        t.counters.insert(k.to_string(), Count::of(*v));
    }
    t
}

#[test]
fn parses_and_evaluates_the_spr_excerpt() {
    let m = PmuMetrics::parse(SPR, "spr-metrics.json").unwrap();
    assert_eq!(m.metrics.len(), 12);
    let cpi = m.get("cpi").unwrap();
    assert_eq!((cpi.scale, cpi.unit.as_str()), (1.0, "per_instr"));
    assert_eq!(
        m.get("tma_info_system_gflops").unwrap().groups,
        vec!["Cor", "Flops", "HPC"]
    );
    let consts = default_constants();
    // perf stat spells the events in lower case with dots; the expressions use upper case.
    let t = data(
        &[
            ("cpu_clk_unhalted.thread", 3e9),
            ("inst_retired.any", 6e9),
            ("fp_arith_inst_retired.512b_packed_double", 1e9),
            ("fp_arith_inst_retired.scalar_double", 0.0),
            ("fp_arith_inst_retired.scalar_single", 0.0),
            ("fp_arith_inst_retired.128b_packed_double", 0.0),
            ("fp_arith_inst_retired.128b_packed_single", 0.0),
            ("fp_arith_inst_retired.256b_packed_double", 0.0),
            ("fp_arith_inst_retired.256b_packed_single", 0.0),
            ("fp_arith_inst_retired.512b_packed_single", 0.0),
            ("cpu_clk_unhalted.distributed", 2e9),
            ("UNC_M_CAS_COUNT.RD", 1e8),
            ("MEMORY_ACTIVITY.STALLS_L2_MISS", 5e8),
            ("cpu/MEMORY_ACTIVITY.STALLS_L2_MISS,cmask=0x1/", 7e8),
            ("BR_INST_RETIRED.ALL_BRANCHES", 1e9),
        ],
        2.0,
    );
    assert_eq!(m.evaluate("CPI", &t, &consts).unwrap(), 0.5);
    assert_eq!(
        m.evaluate("tma_info_system_gflops", &t, &consts).unwrap(),
        4.0
    );
    assert_eq!(m.evaluate("tma_info_core_flopc", &t, &consts).unwrap(), 4.0);
    assert_eq!(
        m.evaluate("memory_bandwidth_read", &t, &consts).unwrap(),
        3200.0
    );
    // `A if #SMT_on else B` with a metric reference in the divisor, scaled by 100%.
    let near = |a: f64, b: f64| assert!((a - b).abs() < 1e-12 * b.abs(), "{a} vs {b}");
    near(
        m.evaluate("tma_l2_bound_placeholder", &t, &consts).unwrap(),
        100.0 * 5e8 / 3e9,
    );
    let mut smt = consts.clone();
    smt.insert("smt_on".into(), 1.0);
    near(
        m.evaluate("tma_l2_bound_placeholder", &t, &smt).unwrap(),
        100.0 * 7e8 / 3e9,
    );
    assert_eq!(
        m.evaluate("tma_info_inst_mix_ipbranch", &t, &consts)
            .unwrap(),
        6.0
    );
    // Missing events are NA with the event's name, never 0.
    let e = m
        .evaluate("tma_frontend_bound", &t, &consts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("topdown-fe-bound"), "{e}");
    assert!(
        m.events_of("tma_frontend_bound")
            .contains(&"INT_MISC.UOP_DROPPING".to_string())
    );
    assert!(
        m.events_of("tma_frontend_bound")
            .contains(&"slots".to_string()),
        "metric reference expanded"
    );
}

#[test]
fn scale_units() {
    assert_eq!(scale_unit("100%"), (100.0, "%".into()));
    assert_eq!(
        scale_unit("6.103515625e-5MiB"),
        (6.103515625e-5, "MiB".into())
    );
    assert_eq!(scale_unit("1MPKI"), (1.0, "MPKI".into()));
    assert_eq!(scale_unit("1e9"), (1e9, String::new()));
}

#[test]
fn errors_point_at_the_metric_and_column() {
    let bad = SPR.replace(
        "cpu_clk_unhalted.thread / inst_retired.any",
        "cpu_clk_unhalted.thread / (inst_retired.any",
    );
    let e = PmuMetrics::parse(&bad, "spr-metrics.json")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("spr-metrics.json:6:"), "{e}");
    assert!(e.contains("MetricExpr of 'CPI'"), "{e}");
    let e = PmuMetrics::parse("[{\"MetricName\": \"x\",}]", "j.json")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("j.json:1:"), "{e}");
    // A metric referring to itself through another is a cycle, reported as such.
    let cyc = r#"[{"MetricName": "a", "MetricExpr": "b + 1"}, {"MetricName": "b", "MetricExpr": "a * 2"}]"#;
    let m = PmuMetrics::parse(cyc, "c.json").unwrap();
    let e = m
        .evaluate("a", &data(&[], 1.0), &BTreeMap::new())
        .unwrap_err()
        .to_string();
    assert!(e.contains("cycle: a -> b -> a"), "{e}");
}

fn real_tree() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("HPCSCOPE_PMU_EVENTS_DIR") {
        return Some(PathBuf::from(d));
    }
    let src = Path::new("/usr/src");
    std::fs::read_dir(src)
        .ok()?
        .flatten()
        .map(|e| e.path().join("tools/perf/pmu-events/arch"))
        .find(|p| p.is_dir())
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                json_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
}

#[test]
fn every_metric_expression_of_the_kernel_tree_parses() {
    let Some(dir) = real_tree() else {
        println!(
            "skipping test - no pmu-events tree: install Debian's linux-source package and extract tools/perf/pmu-events/arch under /usr/src/linux-source-*/, or set HPCSCOPE_PMU_EVENTS_DIR"
        );
        return;
    };
    let mut files = Vec::new();
    json_files(&dir, &mut files);
    let mut metrics = 0;
    let mut failed = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        if !text.contains("MetricExpr") {
            continue;
        }
        match PmuMetrics::parse(&text, &f.display().to_string()) {
            Ok(m) => metrics += m.metrics.len(),
            Err(e) => failed.push(e.to_string()),
        }
    }
    println!(
        "{} files, {metrics} metric expressions parsed from {}",
        files.len(),
        dir.display()
    );
    assert!(
        failed.is_empty(),
        "{} files failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    assert!(metrics > 500);
}

/// One event of a pmu-events JSON file: the fields an encoding is made of.
#[derive(Debug, PartialEq)]
struct JsonEvent {
    file: String,
    code: u64,
    umask: Option<u64>,
    rdwrmask: Option<u64>,
    unit: Option<String>,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// Event name -> encoding, over every `*.json` event file under `dir`.
fn json_events(dir: &Path) -> BTreeMap<String, JsonEvent> {
    let mut files = Vec::new();
    json_files(dir, &mut files);
    let mut out = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for e in v.as_array().into_iter().flatten() {
            let Some(name) = e.get("EventName").and_then(|n| n.as_str()) else {
                continue; // a metric
            };
            let field = |k: &str| e.get(k).and_then(|v| v.as_str());
            let ev = JsonEvent {
                file: f.file_name().unwrap().to_string_lossy().into_owned(),
                code: field("EventCode")
                    .and_then(hex)
                    .unwrap_or_else(|| panic!("{name}: no EventCode")),
                umask: field("UMask").and_then(hex),
                rdwrmask: field("RdWrMask").and_then(hex),
                unit: field("Unit").map(String::from),
            };
            assert!(
                out.insert(name.to_string(), ev).is_none(),
                "{name} twice under {}",
                dir.display()
            );
        }
    }
    out
}

/// The pmu-events `Unit` of the PMU a recipe event is opened on (`None`: the core PMU).
fn json_unit(pmu: Option<&str>) -> std::result::Result<Option<&'static str>, String> {
    match pmu {
        None => Ok(None),
        Some("amd_l3") => Ok(Some("L3PMC")),
        Some("amd_df") => Ok(Some("DFPMC")),
        Some(p) if p.starts_with("amd_umc") => Ok(Some("UMCPMC")),
        Some(p) => Err(format!("no pmu-events Unit known for PMU {p}")),
    }
}

/// One recipe event against `events`: its perf name is there, its `raw` fields are
/// EventCode / UMask / RdWrMask, its PMU is the Unit. Returns the perf name.
fn check_event(
    logical: &str,
    d: &EventDef,
    events: &BTreeMap<String, JsonEvent>,
) -> std::result::Result<String, String> {
    let name = d.perf.as_deref().ok_or("no perf name")?;
    let j = events
        .get(name)
        .ok_or_else(|| format!("'{name}' is not a pmu-events event"))?;
    let unit = json_unit(d.pmu.as_deref())?;
    if unit != j.unit.as_deref() {
        return Err(format!("{name}: PMU {:?} but Unit {:?}", d.pmu, j.unit));
    }
    let Some(raw) = &d.raw else {
        return match d.generic {
            Some(_) => Ok(name.to_string()),
            None => Err(format!("{logical}: neither raw nor generic")),
        };
    };
    let mut fields = BTreeMap::new();
    for kv in raw.split(',') {
        let (k, v) = kv.split_once('=').ok_or_else(|| format!("raw '{raw}'"))?;
        fields.insert(k, hex(v).ok_or_else(|| format!("raw '{raw}'"))?);
    }
    let got = (
        fields.remove("event"),
        fields.remove("umask"),
        fields.remove("rdwrmask"),
    );
    if !fields.is_empty() {
        return Err(format!("raw '{raw}' has fields this check does not know"));
    }
    let want = (Some(j.code), j.umask, j.rdwrmask);
    if got != want {
        return Err(format!(
            "raw '{raw}' but {name} in {} is (event, umask, rdwrmask) {want:x?}",
            j.file
        ));
    }
    Ok(name.to_string())
}

/// Every event of a recipe: the perf names used, or what is wrong with which events.
fn check_recipe(
    recipe: &Recipe,
    events: &BTreeMap<String, JsonEvent>,
) -> std::result::Result<Vec<String>, Vec<String>> {
    let (mut used, mut wrong) = (Vec::new(), Vec::new());
    for (logical, d) in &recipe.events {
        match check_event(logical, d, events) {
            Ok(n) => used.push(n),
            Err(e) => wrong.push(format!("{} {logical}: {e}", recipe.recipe.id)),
        }
    }
    if wrong.is_empty() {
        Ok(used)
    } else {
        Err(wrong)
    }
}

#[test]
fn zen5_recipe_events_are_the_kernels_amdzen5_events() {
    let cat = Catalogue::builtin();
    let zen5 = cat.find("amd-zen5").unwrap();
    let events =
        json_events(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pmu-events/amdzen5"));
    let used = check_recipe(zen5, &events).unwrap_or_else(|e| panic!("{}", e.join("\n")));
    // The excerpt holds the recipe's events and nothing else.
    let extra: Vec<&String> = events.keys().filter(|k| !used.contains(k)).collect();
    assert!(
        extra.is_empty(),
        "excerpt events the recipe does not use: {extra:?}"
    );
    assert_eq!(used.len(), events.len());

    // The check bites: a wrong mask, a misspelt name or a wrong PMU is refused.
    for (logical, field, bad) in [
        ("L2_MISS", "raw", "event=0x64,umask=0x08"),
        ("CAS_RD", "raw", "event=0x0a,rdwrmask=0x2"),
        ("FLOPS", "raw", "event=0x03,umask=0xff"),
        ("DC_FILLS", "perf", "ls_any_fills_from_sys.any"),
        ("L3_MISS", "pmu", "amd_df"),
    ] {
        let mut r = zen5.clone();
        let e = r.events.get_mut(logical).unwrap();
        match field {
            "raw" => e.raw = Some(bad.into()),
            "perf" => e.perf = Some(bad.into()),
            _ => e.pmu = Some(bad.into()),
        }
        let err = check_recipe(&r, &events).expect_err(bad);
        assert!(
            err.len() == 1 && err[0].starts_with(&format!("amd-zen5 {logical}: ")),
            "{err:?}"
        );
    }
}

#[test]
fn zen5_recipe_against_the_kernel_tree() {
    let Some(dir) = real_tree().map(|d| d.join("x86/amdzen5")) else {
        println!(
            "skipping test - no pmu-events tree (see every_metric_expression_of_the_kernel_tree_parses)"
        );
        return;
    };
    if !dir.is_dir() {
        println!(
            "skipping test - {} missing: that kernel tree predates the amdzen5 event files",
            dir.display()
        );
        return;
    }
    let cat = Catalogue::builtin();
    if let Err(e) = check_recipe(cat.find("amd-zen5").unwrap(), &json_events(&dir)) {
        panic!("amd-zen5 against {}:\n{}", dir.display(), e.join("\n"));
    }
}
