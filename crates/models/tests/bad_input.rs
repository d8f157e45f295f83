//! Bad input: a function with no loop, unknown instructions, too few variants, inconsistent
//! CSV columns. Each error says what, where and how to fix it.

use std::path::Path;
use std::process::Command;

use hpcscope_models::ModelError;
use hpcscope_models::classes::ClassTable;
use hpcscope_models::fit::{FitOptions, fit_cpis, measured, rows_from_csv};
use hpcscope_models::kernel::{Selector, extract};
use hpcscope_models::pop::pop_run_from_csv;
use hpcscope_models::ports::PortModel;

const C_SOURCE: &str = r#"
__attribute__((noinline)) double no_loop(double a, double b) { return a * b + 1.0; }
__attribute__((noinline)) void scale(long n, double *restrict a, const double *restrict b, double s) {
  for (long i = 0; i < n; i++) a[i] = s * b[i] + a[i] / 3.0;
}
int main(int argc, char **argv) {
  static double a[1000], b[1000];
  scale(1000, a, b, argc);
  return (int)no_loop(a[3], (double)argc);
}
"#;

/// Compiles the C source with the system C compiler; `None` (test skipped) when there is none.
fn build(dir: &Path) -> Option<std::path::PathBuf> {
    let src = dir.join("k.c");
    std::fs::write(&src, C_SOURCE).ok()?;
    let out = dir.join("k");
    let ok = Command::new("cc")
        .args(["-O3", "-march=x86-64-v3", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .ok()?
        .success();
    ok.then_some(out)
}

#[test]
#[cfg(target_arch = "x86_64")]
fn function_without_loop_and_function_with_loop() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else {
        eprintln!("skipping test - no C compiler (cc) on PATH");
        return;
    };
    let t = ClassTable::builtin("x86-64").unwrap();
    let e = extract(&bin, &Selector::Function("no_loop".into()), &t).unwrap_err();
    assert!(matches!(e, ModelError::NoLoop { .. }), "{e}");
    assert!(e.to_string().contains("no loop"), "{e}");
    let r = extract(&bin, &Selector::Function("scale".into()), &t).unwrap();
    let l = r.main_loop().unwrap();
    assert_eq!(l.counts["DIV"], 1.0, "{l:#?}");
    assert!(l.counts["FP"] >= 1.0 && l.counts["LOAD"] >= 1.0 && l.counts["STORE"] >= 1.0);
    assert_eq!(l.vector_bits, 256);
    let e = extract(&bin, &Selector::Function("missing".into()), &t)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no function symbol 'missing'") && e.contains("--range"),
        "{e}"
    );
    let e = extract(
        Path::new("/nonexistent/bin"),
        &Selector::Function("f".into()),
        &t,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("cannot read"), "{e}");
}

#[test]
fn unknown_csv_columns_are_located() {
    let sky = PortModel::builtin("skylake").unwrap();
    let e = rows_from_csv("name,cycles_per_iter,DIV,FMA\na,10,1,2\n", "v.csv", &sky)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("v.csv:1:4:") && e.contains("'FMA'") && e.contains("DIV, FAST_DIV"),
        "{e}"
    );
    let e = rows_from_csv("name,cycles_per_iter,DIV,FP\na,10,1\n", "v.csv", &sky)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("v.csv:2:"), "{e}");
    let e = rows_from_csv("name,cycles_per_iter,DIV,FP\na,-3,1,1\n", "v.csv", &sky)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("v.csv:2:2:") && e.contains("positive"), "{e}");
    let e = rows_from_csv("cycles_per_iter,DIV\n3,1\n", "v.csv", &sky)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no 'name' column"), "{e}");
}

#[test]
fn too_few_variants_from_csv() {
    let sky = PortModel::builtin("skylake").unwrap();
    let rows = rows_from_csv(
        "name,cycles_per_iter,DIV,FP,LOAD\na,10,1,2,3\nb,12,2,2,3\nt,,1,1,1\n",
        "v.csv",
        &sky,
    )
    .unwrap();
    assert_eq!(measured(&rows).len(), 2);
    let e = fit_cpis(&sky, &measured(&rows), &FitOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("2 given, at least 3 needed"), "{e}");
}

#[test]
fn pop_csv_with_inconsistent_runtime() {
    let e = pop_run_from_csv("comp_s,runtime_s\n1,2\n1,3\n", "p.csv")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("p.csv:3:2:"), "{e}");
    let e = pop_run_from_csv("comp,runtime_s\n1,2\n", "p.csv")
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing column 'comp_s'"), "{e}");
}

#[test]
fn unknown_port_model_lists_the_known_ones() {
    let e = PortModel::builtin("zen9").unwrap_err().to_string();
    assert!(e.contains("skylake") && e.contains("zen9"), "{e}");
}

#[test]
fn duplicated_variant_rows_are_refused_not_counted() {
    let model = PortModel::builtin("skylake").unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/variants_native.csv"),
    )
    .unwrap();
    let mut data = text.lines().filter(|l| !l.starts_with('#'));
    let _header = data.next().unwrap();
    let first = data.next().unwrap();
    // The same row twice: before, it counted as one more variant (R2 NaN, exit 0).
    let dup = format!("{}{first}\n", text);
    let e = rows_from_csv(&dup, "v.csv", &model)
        .unwrap_err()
        .to_string();
    assert!(e.contains("appears twice"), "{e}");
    // The same mix under another name adds no information either.
    let rows = rows_from_csv(&text, "v.csv", &model).unwrap();
    let mut v = measured(&rows);
    let n = v.len();
    for i in 1..n {
        v[i].counts = v[0].counts.clone();
        v[i].name = format!("copy{i}");
    }
    let e = fit_cpis(&model, &v, &FitOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("distinct instruction mixes"), "{e}");
}
