//! The CLI glue of `hpcscope model` (the CLI crate's `cmd/model.rs`), built here with the CLI's
//! output module and driven through clap, until the binary wires the subcommand.

#[allow(dead_code)]
#[path = "../../cli/src/output.rs"]
mod output;

#[path = "../../cli/src/cmd/model.rs"]
mod model;

use clap::Parser;

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    args: model::ModelArgs,
}

fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs `model ARGS... --format json -o FILE` and returns the parsed JSON.
fn run_json(args: &[&str]) -> anyhow::Result<serde_json::Value> {
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("out.json");
    let mut argv = vec!["model".to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    argv.extend([
        "--format".into(),
        "json".into(),
        "-o".into(),
        out.display().to_string(),
    ]);
    let cli = Cli::try_parse_from(&argv)?;
    model::run(&cli.args)?;
    Ok(serde_json::from_str(&std::fs::read_to_string(&out)?)?)
}

#[test]
fn cli_definition_is_consistent() {
    use clap::CommandFactory;
    Cli::command().debug_assert();
}

#[test]
fn predict_reproduces_example_a() {
    let v = run_json(&[
        "predict",
        &data("example_a.csv"),
        "--cpi",
        &data("cpi_a.json"),
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
        &data("pop_4ranks.csv"),
        "--reference",
        &data("pop_ref_2ranks.csv"),
    ])
    .unwrap();
    assert!((p["pop"]["parallel_efficiency"].as_f64().unwrap() - 0.75).abs() < 1e-12);
    assert!((p["pop"]["global_efficiency"].as_f64().unwrap() - 0.70).abs() < 1e-12);
    let h = run_json(&["pop", &data("pop_hybrid.csv")]).unwrap();
    assert!((h["hybrid"]["mpi_efficiency"].as_f64().unwrap() - 0.88).abs() < 1e-12);
    let d = run_json(&[
        "decompose",
        &data("decomposition.csv"),
        "--project",
        "NB=1,f=1.184126,BW=1",
    ])
    .unwrap();
    assert!((d["projected_ratio"].as_f64().unwrap() - 1.086171).abs() < 1e-5);
    let s = run_json(&[
        "scaling",
        &data("runs_amdahl.csv"),
        "--law",
        "amdahl,usl",
        "--predict",
        "64",
    ])
    .unwrap();
    assert_eq!(s["selection"]["chosen"], "amdahl");
    let k = run_json(&["peak", "--dag", &data("cftb040.dag")]).unwrap();
    assert_eq!(k["critical_path"]["flops_per_cycle"], 8.0);
    let t = run_json(&["strong", &data("strong.csv"), "--cycles", "113"]).unwrap();
    assert_eq!(t["memory_bound_from"], 28);
}

#[test]
fn fit_on_native_measurements_and_bad_input() {
    let f = run_json(&[
        "fit",
        &data("variants_native.csv"),
        "--ports",
        "sapphirerapids",
        "--hops",
        "3",
    ])
    .unwrap();
    assert_eq!(f["residuals"].as_array().unwrap().len(), 42);
    let e = run_json(&["fit", &data("example_a.csv")]).unwrap_err();
    assert!(format!("{e:#}").contains("at least"), "{e:#}");
    let e = run_json(&[
        "predict",
        &data("example_a.csv"),
        "--cpi",
        "DIV=8",
        "--proxy",
        "nope",
    ])
    .unwrap_err();
    assert!(format!("{e:#}").contains("no row named 'nope'"), "{e:#}");
    let e = run_json(&["scaling", &data("pop_4ranks.csv")]).unwrap_err();
    assert!(format!("{e:#}").contains("process-count column"), "{e:#}");
}
