//! `hpcscope model` through the binary: the worked examples of the notes and bad input.

mod common;
use common::models_data;
use hpcscope_test_support::bin;

/// Runs `hpcscope model ARGS... --format json -o FILE` and returns the parsed JSON, or the
/// error message the command printed.
fn run_json(args: &[&str]) -> Result<serde_json::Value, String> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let o = bin!()
        .arg("model")
        .args(args)
        .args(["--format", "json", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).into_owned());
    }
    Ok(serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap())
}

#[test]
fn predict_reproduces_example_a() {
    let v = run_json(&[
        "predict",
        &models_data("example_a.csv"),
        "--cpi",
        &models_data("cpi_a.json"),
        "--proxy",
        "mgcfd",
        "--rc",
        "0.6",
    ])
    .unwrap();
    let c = &v[0]["comparison"];
    assert_eq!(c["final_model"]["c_target"], 113.0);
    assert_eq!(c["final_model"]["c_model_proxy"], 136.0);
    assert_eq!(c["v1"], 102.0);
    assert_eq!(c["constant_rc"], 108.0);
}

#[test]
fn pop_decompose_scaling_peak_strong() {
    let p = run_json(&[
        "pop",
        &models_data("pop_4ranks.csv"),
        "--reference",
        &models_data("pop_ref_2ranks.csv"),
    ])
    .unwrap();
    assert!((p["pop"]["parallel_efficiency"].as_f64().unwrap() - 0.75).abs() < 1e-12);
    assert!((p["pop"]["global_efficiency"].as_f64().unwrap() - 0.70).abs() < 1e-12);
    let h = run_json(&["pop", &models_data("pop_hybrid.csv")]).unwrap();
    assert!((h["hybrid"]["mpi_efficiency"].as_f64().unwrap() - 0.88).abs() < 1e-12);
    let d = run_json(&[
        "decompose",
        &models_data("decomposition.csv"),
        "--project",
        "NB=1,f=1.184126,BW=1",
    ])
    .unwrap();
    assert!((d["projected_ratio"].as_f64().unwrap() - 1.086171).abs() < 1e-5);
    let s = run_json(&[
        "scaling",
        &models_data("runs_amdahl.csv"),
        "--law",
        "amdahl,usl",
        "--predict",
        "64",
    ])
    .unwrap();
    assert_eq!(s["selection"]["chosen"], "amdahl");
    let k = run_json(&["peak", "--dag", &models_data("cftb040.dag")]).unwrap();
    assert_eq!(k["critical_path"]["flops_per_cycle"], 8.0);
    let t = run_json(&["strong", &models_data("strong.csv"), "--cycles", "113"]).unwrap();
    assert_eq!(t["memory_bound_from"], 28);
}

#[test]
fn fit_on_native_measurements_and_bad_input() {
    let f = run_json(&[
        "fit",
        &models_data("variants_native.csv"),
        "--ports",
        "sapphirerapids",
        "--hops",
        "3",
    ])
    .unwrap();
    assert_eq!(f["residuals"].as_array().unwrap().len(), 42);
    let e = run_json(&["fit", &models_data("example_a.csv")]).unwrap_err();
    assert!(e.contains("at least"), "{e}");
    let e = run_json(&[
        "predict",
        &models_data("example_a.csv"),
        "--cpi",
        "DIV=8",
        "--proxy",
        "nope",
    ])
    .unwrap_err();
    assert!(e.contains("no row named 'nope'"), "{e}");
    let e = run_json(&["scaling", &models_data("pop_4ranks.csv")]).unwrap_err();
    assert!(e.contains("process-count column"), "{e}");
}

#[test]
fn strong_takes_the_stalled_cycle_correction_of_eq_5_12() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("s.csv");
    std::fs::write(
        &csv,
        "threads,clock_ghz,iters,memory_s,proxy_cycles\n1,2,1e6,0.001,10\n4,2,2.5e5,0.002,12\n",
    )
    .unwrap();
    let v = run_json(&["strong", csv.to_str().unwrap(), "--cycles", "100"]).unwrap();
    let p = &v["points"];
    assert_eq!(p[0]["stall_cycles"], 0.0, "{v}");
    assert_eq!(p[1]["stall_cycles"], 2.0, "{v}");
    // (100 + 2) cycles x 250,000 iterations at 2 GHz.
    let t = p[1]["compute_s"].as_f64().unwrap();
    assert!((t - 0.01275).abs() < 1e-12, "{t}");
    std::fs::write(
        &csv,
        "threads,clock_ghz,iters,memory_s,proxy_cycles\n2,2,1e6,0.001,10\n",
    )
    .unwrap();
    let e = run_json(&["strong", csv.to_str().unwrap(), "--cycles", "100"]).unwrap_err();
    assert!(e.contains("single-thread"), "{e}");
}

#[test]
fn compose_eq_3_3_with_the_hockney_fit_of_table_4_6() {
    // Research note section 6.9: 10 SCF steps of 5e10 FLOP at 25 GFLOP/s, 1e9 B at the
    // Triad rate of Fig. 4.13 (7763.7 MB/s), 100 Sendrecv messages of 4 MiB timed by
    // Hockney's model fitted to the thesis's Table 4.6 (rows of 1024 B and more), 5 s else.
    let v = run_json(&[
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
        &models_data("wang_table_4_6_sendrecv.csv"),
        "--other-s",
        "5",
    ])
    .unwrap();
    let c = &v["composition"];
    let f = |x: &serde_json::Value| x.as_f64().unwrap();
    let h = &v["hockney_us"];
    assert!((f(&h["t0"]) - 0.5896).abs() < 0.01, "{h}");
    assert!((f(&h["per_byte"]) - 0.0051889).abs() < 2e-7, "{h}");
    assert!((f(&c["compute_s"]) - 2.0).abs() < 1e-12);
    assert!((f(&c["memory_s"]) - 0.1288).abs() < 5e-5);
    assert!((f(&c["mpi_s"]) - 2.1765).abs() < 5e-4);
    assert!((f(&c["kernel_s"]) - 4.3053).abs() < 5e-4);
    assert!((f(&c["total_s"]) - 48.05).abs() < 0.01);
    // Terms given in seconds compose the same way; nothing given is zero.
    let g = run_json(&[
        "compose",
        "--sigma",
        "2",
        "--compute-s",
        "1.5",
        "--other-s",
        "1",
    ])
    .unwrap();
    assert_eq!(g["composition"]["total_s"], 4.0);
    // Bad input: a negative term, a table without the columns.
    let e = run_json(&["compose", "--compute-s=-1"]).unwrap_err();
    assert!(e.contains("--compute-s -1"), "{e}");
    let e = run_json(&[
        "compose",
        "--messages",
        "1",
        "--message-bytes",
        "8",
        "--mpi-table",
        &models_data("pop_4ranks.csv"),
    ])
    .unwrap_err();
    assert!(e.contains("bytes"), "{e}");
}

#[test]
fn pop_eq_3_12_factors_from_instructions_and_cycles() {
    let v = run_json(&[
        "pop",
        &models_data("pop_4ranks_counters.csv"),
        "--reference",
        &models_data("pop_ref_2ranks_counters.csv"),
    ])
    .unwrap();
    let f = |x: &serde_json::Value| x.as_f64().unwrap();
    let k = &v["factors"];
    assert!((f(&k["instruction"]) - 1.0 / 1.02).abs() < 1e-12, "{k}");
    // Table 4.1's clocks: 2797 MHz against 3312 MHz.
    assert!((f(&k["frequency"]) - 2797.0 / 3312.0).abs() < 1e-12, "{k}");
    // Eq. 3.12 = eq. 3.10 (28 / 30), and eq. 3.13 = 0.70 as in section 6.7.
    let p = &v["pop"];
    assert!((f(&p["computation_scaling"]) - 28.0 / 30.0).abs() < 1e-12);
    assert!((f(&p["global_efficiency"]) - 0.70).abs() < 1e-12);
    // Without the reference's counters the factors are left out, and the note says why.
    let o = bin!()
        .args(["model", "pop"])
        .arg(models_data("pop_4ranks_counters.csv"))
        .arg("--reference")
        .arg(models_data("pop_ref_2ranks.csv"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(text.contains("gives no instructions and cycles"), "{text}");
}

/// Numbers on the command line are checked as the same numbers in a file are: a negative
/// process count printed a negative time, a clock of NaN printed "NaN GHz".
#[test]
fn command_line_numbers_out_of_range_are_refused() {
    let runs = models_data("runs_amdahl.csv");
    let dag = models_data("cftb040.dag");
    for (args, what) in [
        (
            vec![
                "model".into(),
                "scaling".into(),
                runs.clone(),
                "--predict=-5".into(),
            ],
            "-5 is not a process count",
        ),
        (
            vec![
                "model".into(),
                "peak".into(),
                "--dag".into(),
                dag.clone(),
                "--clock-ghz".into(),
                "nan".into(),
            ],
            "is NaN; give a number in GHz",
        ),
    ] {
        let o = bin!().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(what), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: nothing is printed");
    }
}

/// `--cpi missing.json` said "'MISSING.JSON' is not NAME=VALUE": a file name that is not a
/// file is said to be missing, with both forms the option takes.
#[test]
fn a_missing_cpi_file_is_named_as_missing() {
    let o = bin!()
        .args(["model", "predict", "--cpi", "missing.json", "--proxy", "x"])
        .arg(models_data("variants_native.csv"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--cpi missing.json: no such file") && err.contains("CLASS=CPI"),
        "{err}"
    );
}
