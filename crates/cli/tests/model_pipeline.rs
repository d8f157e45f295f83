//! Seed 003's pipeline through the binary: the data-throughput kernel and the clock
//! measured, strong scaling from them, the BSP model over a partition with eq. 5.13, the
//! error statistics of Tables 5.2/5.3, kernel similarity, loop choice by instructions per
//! iteration and spills.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::models_data;
use hpcscope_test_support::{bin, stderr};

fn sim(name: &str) -> String {
    format!(
        "{}/tests/data/similarity/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn run(args: &[&str]) -> Output {
    bin!().args(args).output().unwrap()
}

/// `hpcscope model ARGS --format json -o FILE`, parsed, or the error text.
fn model_json(args: &[&str]) -> Result<serde_json::Value, String> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    // The output flags go before the arguments: a program after `--` ends them.
    let o = bin!()
        .args(["model", "--format", "json", "-o"])
        .arg(&out)
        .args(args)
        .output()
        .unwrap();
    if !o.status.success() {
        return Err(stderr(&o));
    }
    Ok(serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap())
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A DT measurement with chosen values (1 GHz at 1 thread, 0.5 GHz at 2).
fn dt_file(dir: &Path, s_per_iter: f64) -> String {
    let p = dir.join("dt.json");
    let point = |t: usize, ghz: f64| {
        serde_json::json!({"threads": t, "cpus": (0..t).collect::<Vec<_>>(),
            "seconds_per_iter": {"median": s_per_iter, "min": s_per_iter, "max": s_per_iter, "q1": s_per_iter, "q3": s_per_iter, "n": 1},
            "gbs": 1.0, "gbs_own": 5.0, "clock_ghz": ghz, "clock_source": "dependent-add loop"})
    };
    let v = serde_json::json!({"format": "hpcscope-dt", "version": 1, "host": "h", "cpu_model": "c",
        "date": "2025-01-01T00:00:00Z", "nodes_per_thread": 8, "edges_per_thread": 12, "bytes_per_thread": 736,
        "per_edge": {"flops": 15.0, "loads": 22.0, "stores": 10.0, "bytes": 248.0, "memory_bytes": 48.0},
        "points": [point(1, 1.0), point(2, 0.5)]});
    std::fs::write(&p, v.to_string()).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn dt_measured_then_strong_scaling_with_error_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let dt = dir.path().join("dt.json");
    let dts = dt.to_str().unwrap();
    let v = model_json(&["dt", "--threads", "1", "--dt-mib", "1", "--reps", "2"]).unwrap();
    assert_eq!(v["format"], "hpcscope-dt");
    let p = &v["points"][0];
    assert!(
        f(&p["seconds_per_iter"]["median"]) > 0.0 && f(&p["clock_ghz"]) > 0.0,
        "{p}"
    );
    std::fs::write(&dt, v.to_string()).unwrap();
    // Strong scaling from the saved measurement and measured runtimes.
    let act = dir.path().join("actual.csv");
    std::fs::write(&act, "threads,seconds\n1,0.05\n").unwrap();
    let s = model_json(&[
        "strong",
        "--dt",
        dts,
        "--cycles",
        "113",
        "--iters",
        "305000",
        "--actual",
        act.to_str().unwrap(),
    ])
    .unwrap();
    let pt = &s["prediction"]["points"][0];
    let clock = f(&p["clock_ghz"]) * 1e9;
    let compute = 113.0 * 305000.0 / clock;
    let memory = 305000.0 * f(&p["seconds_per_iter"]["median"]);
    assert!(
        (f(&pt["compute_s"]) - compute).abs() < 1e-12 * compute.max(1.0),
        "{pt}"
    );
    assert!((f(&pt["memory_s"]) - memory).abs() < 1e-9 * memory, "{pt}");
    let pred = compute.max(memory);
    let err = (pred - 0.05) / 0.05 * 100.0;
    assert!((f(&s["actual"][0]["error_pct"]) - err).abs() < 1e-6, "{s}");
    assert!((f(&s["error_stats"]["mean_pct"]) - err.abs()).abs() < 1e-6);
    // --measure runs the kernel in place; a program after `--` gives the runtimes.
    let s = model_json(&[
        "strong",
        "--measure",
        "--threads",
        "1",
        "--dt-mib",
        "1",
        "--cycles",
        "100",
        "--total-iters",
        "1000",
        "--",
        "sh",
        "-c",
        "exit 0",
    ])
    .unwrap();
    assert_eq!(s["actual"].as_array().unwrap().len(), 1, "{s}");
    assert!(f(&s["actual"][0]["actual_s"]) > 0.0);
    // A failing program is no measurement.
    let e = model_json(&[
        "strong", "--dt", dts, "--cycles", "100", "--iters", "10", "--", "sh", "-c", "exit 3",
    ])
    .unwrap_err();
    assert!(e.contains("failed at 1 threads"), "{e}");
    // Neither iterations nor a partition: say what is missing.
    let e = model_json(&["strong", "--dt", dts, "--cycles", "100"]).unwrap_err();
    assert!(e.contains("--iters"), "{e}");
}

#[test]
fn strong_partition_eqs_3_1_3_2_and_eq_5_13_example_c() {
    let dir = tempfile::tempdir().unwrap();
    // 1000 cycles at 1 GHz: 1 us per element; the DT time per element is smaller.
    let dt = dt_file(dir.path(), 1e-9);
    let part = dir.path().join("part.csv");
    // One rank, N_i 10,000, N_d 500; alpha 2 us, 10 GB/s, 40 B: 10.5 ms (example C). Two
    // ranks with example C's eq. 5.13 table at half the clock (0.5 GHz: 2 us per element).
    std::fs::write(
        &part,
        "ranks,level,rank,n_indep,n_dep,actual_s\n\
         1,0,0,10000,500,\n\
         2,0,0,5.5e6,0,10\n2,0,1,5.5e6,0,12\n2,1,0,1.65e6,0,3\n2,1,1,1.8e6,0,4\n",
    )
    .unwrap();
    let v = model_json(&[
        "strong",
        "--dt",
        &dt,
        "--cycles",
        "1000",
        "--partition",
        part.to_str().unwrap(),
        "--alpha-us",
        "2",
        "--bandwidth-gbs",
        "10",
        "--bytes-per-element",
        "40",
    ])
    .unwrap();
    let b = &v["bsp"];
    assert!((f(&b[0]["total_s"]) - 0.0105).abs() < 1e-12, "{b}");
    assert!(b[0]["error_pct"].is_null());
    // Halo costs alpha alone here (N_d = 0): 2 us, far below N_i W_g.
    let e = f(&b[1]["error_pct"]);
    assert!((e - 2.7 / 29.0 * 100.0).abs() < 1e-6, "{e}");
    assert!((f(&v["error_stats"]["mean_pct"]) - e).abs() < 1e-9);
    // A rank count that was not measured.
    std::fs::write(&part, "ranks,level,rank,n_indep,n_dep\n4,0,0,10,0\n").unwrap();
    let e = model_json(&[
        "strong",
        "--dt",
        &dt,
        "--cycles",
        "1",
        "--partition",
        part.to_str().unwrap(),
    ])
    .unwrap_err();
    assert!(e.contains("measure at 4 too"), "{e}");
}

#[test]
fn predict_validate_prints_table_5_2_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("v.csv");
    let base = std::fs::read_to_string(models_data("example_a.csv")).unwrap();
    std::fs::write(
        &csv,
        base.replace("target,,", "target,120,")
            + "target2,100,6,4,8,10,60,0,10\nunmeasured,,6,4,8,10,60,0,10\n",
    )
    .unwrap();
    let c = csv.to_str().unwrap();
    let v = model_json(&[
        "predict",
        c,
        "--cpi",
        &models_data("cpi_a.json"),
        "--proxy",
        "mgcfd",
        "--rc",
        "0.6",
        "--validate",
    ])
    .unwrap();
    let m = &v["validation"]["models"];
    assert_eq!(m[0]["model"], "difference");
    assert!(
        (f(&m[0]["errors_pct"][0]) - (113.0 - 120.0) / 1.2).abs() < 1e-9,
        "{m}"
    );
    assert!((f(&m[0]["stats"]["max_pct"]) - 13.0).abs() < 1e-9);
    assert_eq!(m.as_array().unwrap().len(), 5);
    // Text: the statistics rows beside the per-variant rows.
    let o = run(&[
        "model",
        "predict",
        c,
        "--cpi",
        &models_data("cpi_a.json"),
        "--proxy",
        "mgcfd",
        "--validate",
    ]);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    for w in [
        "difference (eq. 5.11)",
        "equal IPC",
        "mean",
        "SD",
        "max",
        "give --rc",
    ] {
        assert!(t.contains(w), "{w}: {t}");
    }
    let o = run(&[
        "model",
        "predict",
        c,
        "--cpi",
        &models_data("cpi_a.json"),
        "--proxy",
        "mgcfd",
        "--validate",
        "--format",
        "csv",
    ]);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.starts_with("category,variant,measured,"), "{t}");
    // Validation without a measured target is bad input.
    let e = model_json(&[
        "predict",
        &models_data("example_a.csv"),
        "--cpi",
        &models_data("cpi_a.json"),
        "--proxy",
        "mgcfd",
        "--validate",
    ])
    .unwrap_err();
    assert!(e.contains("no row"), "{e}");
}

#[test]
fn similarity_of_counter_files_section_4_1() {
    let v = model_json(&[
        "similarity",
        &sim("kernel_skx.csv"),
        &sim("parent_skx.csv"),
        "--also",
        &format!("{},{}", sim("kernel_knl.csv"), sim("parent_knl.csv")),
    ])
    .unwrap();
    let s = &v["similarity"];
    assert_eq!(s["basis"], "per_instruction");
    // Scaled per-instruction vectors (misses 1/.5, loads 1/1, branches 1/1, cycles .75/1).
    let a = [1.0, 1.0, 1.0, 0.75];
    let b = [0.5, 1.0, 1.0, 1.0];
    let dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    let n = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!(
        (f(&s["cosine"]) - dot / (n(&a) * n(&b))).abs() < 1e-12,
        "{s}"
    );
    assert_eq!(s["dissimilar"], 2);
    // IPC ratios 1.5/2 and 1/1: 14.3 % from their mean, not invariant at 10 %.
    let i = &v["ipc"];
    assert_eq!(i["invariant"], false);
    assert!((f(&i["pairs"][0]["ratio"]) - 0.75).abs() < 1e-12);
    let v = model_json(&[
        "similarity",
        &sim("kernel_skx.csv"),
        &sim("parent_skx.csv"),
        "--also",
        &format!("{},{}", sim("kernel_knl.csv"), sim("parent_knl.csv")),
        "--tolerance",
        "20",
    ])
    .unwrap();
    assert_eq!(v["ipc"]["invariant"], true);
    // Profiles (no cycles): the vectors compare, the IPC is not available.
    let root = format!("{}/../..", env!("CARGO_MANIFEST_DIR"));
    let v = model_json(&[
        "similarity",
        &format!("{root}/examples/scenarios/sve-128.json"),
        &format!("{root}/examples/scenarios/sve-512.json"),
    ])
    .unwrap();
    assert!(v["ipc"].is_null());
    assert!(f(&v["similarity"]["cosine"]) > 0.0);
    // Invariance asked for without cycles: say what is missing.
    let e = model_json(&[
        "similarity",
        &format!("{root}/examples/scenarios/sve-128.json"),
        &format!("{root}/examples/scenarios/sve-512.json"),
        "--also",
        &format!("{},{}", sim("kernel_knl.csv"), sim("parent_knl.csv")),
    ])
    .unwrap_err();
    assert!(
        e.contains("cycles are missing") || e.contains("both are missing"),
        "{e}"
    );
}

#[test]
fn kernel_choice_by_instructions_per_iteration_and_spills() {
    let Some(_) = common::which("gcc") else {
        println!("skipping: gcc not found");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("two.c");
    // Two innermost loops of different lengths in one function.
    std::fs::write(
        &src,
        "void two(long n, double *a, const double *b, const double *c) {\n\
           for (long i = 0; i < n; i++) a[i] = b[i] + c[i];\n\
           for (long i = 0; i < n; i++) a[i] = a[i] * b[i] + c[i] * a[i] - b[i] / c[i];\n\
         }\nint main(void) { return 0; }\n",
    )
    .unwrap();
    let bin = dir.path().join("two");
    let st = Command::new("gcc")
        .args(["-O1", "-fno-tree-vectorize", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    let b = bin.to_str().unwrap();
    let all = model_json(&["kernel", b, "-f", "two"]).unwrap();
    let mut loops: Vec<(u64, u64)> = all["loops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["innermost"] == true)
        .map(|l| {
            (
                l["start"].as_u64().unwrap(),
                l["instructions"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(loops.len(), 2, "{all}");
    loops.sort_by_key(|l| l.1);
    // Ask for the shorter loop's count (plus a little noise): that loop is chosen.
    let want = loops[0].1 as f64 + 0.3;
    let v = model_json(&[
        "kernel",
        b,
        "-f",
        "two",
        "--ins-per-iter",
        &want.to_string(),
        "--min-loads",
        "2",
    ])
    .unwrap();
    assert_eq!(v["main_loop"].as_u64(), Some(loops[0].0), "{v}");
    assert_eq!(
        v["by_instructions"]["instructions"].as_u64(),
        Some(loops[0].1)
    );
    let l = v["kernel"]["loops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["start"].as_u64() == Some(loops[0].0))
        .unwrap()
        .clone();
    let loads = f(&l["counts"]["LOAD"]);
    assert!(
        (f(&v["spills"]["spill_loads"]) - (loads - 2.0)).abs() < 1e-12,
        "{v}"
    );
    // A minimum above the loop's loads is bad input.
    let e = model_json(&[
        "kernel",
        b,
        "-f",
        "two",
        "--ins-per-iter",
        &want.to_string(),
        "--min-loads",
        "99",
    ])
    .unwrap_err();
    assert!(e.contains("fewer than the minimum 99"), "{e}");
}
