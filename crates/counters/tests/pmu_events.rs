//! The importer of Linux perf's pmu-events metric JSON. `tests/data/pmu-events/spr-metrics.json`
//! is an excerpt in the shape of `tools/perf/pmu-events/arch/x86/sapphirerapids/
//! spr-metrics.json` (fields MetricName, MetricExpr, MetricGroup, ScaleUnit,
//! BriefDescription, PublicDescription, MetricThreshold; `#SMT_on`, `#SYSTEM_TSC_FREQ`,
//! `duration_time`, `if ... else`, `min`/`max`/`d_ratio`, `\-` and `\,`/`\=` escapes, `@`
//! PMU syntax, metric references), with a few expressions simplified. When the kernel's real
//! files are on the machine (Debian's linux-source package, extracted), every MetricExpr in
//! them is parsed; otherwise that test prints why it skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
