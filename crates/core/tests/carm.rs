//! The full cache-aware roofline's compute ceilings (seed 001, section 4.1.2): the FP Crunch
//! tables of Gravelle's dissertation as kept in the built-in machines, how the scalar, no-FMA,
//! add-only and mul-only ceilings are read from a machine, and what the format refuses.

use hpcscope_core::library::builtin;
use hpcscope_core::machine::{CarmKind, CeilingOp};
use hpcscope_core::roofline::{Ceilings, Scope};
use hpcscope_core::{Machine, Precision};

fn ceiling(m: &Machine, kind: CarmKind, node: bool) -> Option<f64> {
    m.carm_ceilings(Precision::F64, node)
        .into_iter()
        .find(|c| c.kind == kind)
        .map(|c| c.gflops)
}

fn node_value(m: &Machine, kind: CarmKind) -> Option<f64> {
    // Node scope gives the per-core share: times the cores is the node value of the table.
    ceiling(m, kind, true).map(|v| v * f64::from(m.cores()))
}

#[test]
fn seed001_table3_a64fx_fp_crunch_ceilings() {
    let m = builtin("a64fx-node").unwrap();
    // Table 3: mult scalar 150 (FMA), add scalar 75.9, mult simd 1040, add simd 1040.
    let scalar = node_value(&m, CarmKind::Scalar).unwrap();
    assert!((scalar - 150.0).abs() < 1e-9, "{scalar}");
    for kind in [CarmKind::NoFma, CarmKind::AddOnly, CarmKind::MulOnly] {
        let v = node_value(&m, kind).unwrap();
        assert!((v - 1040.0).abs() < 1e-9, "{kind:?}: {v}");
    }
    // The peak is twice the SIMD multiply rate, as the dissertation takes it.
    let peak = m.peak(Precision::F64).unwrap().node_gflops.unwrap();
    assert!((peak - 2.0 * 1040.0).abs() < 1e-9);
    // The scalar ceiling is the FMA kernel, named as the dissertation names it.
    let c = m.carm_ceilings(Precision::F64, true);
    let s = c.iter().find(|c| c.kind == CarmKind::Scalar).unwrap();
    assert_eq!(s.op, CeilingOp::Fma);
    assert_eq!(s.kernel, "mult scalar");
    assert_eq!(s.vector_bits, 64);
}

#[test]
fn seed001_table4_cascadelake_fp_crunch_ceilings() {
    let m = builtin("cascadelake-8260").unwrap();
    // Table 4, the better of 48 and 96 threads: mult scalar 1863, add scalar 991,
    // add simd 1718; mult simd 3008 is the peak.
    assert!((node_value(&m, CarmKind::Scalar).unwrap() - 1863.0).abs() < 1e-9);
    assert!((node_value(&m, CarmKind::NoFma).unwrap() - 1718.0).abs() < 1e-9);
    assert!((node_value(&m, CarmKind::AddOnly).unwrap() - 1718.0).abs() < 1e-9);
    // Both multiply kernels use FMA: no multiply-only kernel, so no mul-only ceiling.
    assert_eq!(node_value(&m, CarmKind::MulOnly), None);
    // Single-core scope without core values: the node value over the 48 cores.
    let core = ceiling(&m, CarmKind::AddOnly, false).unwrap();
    assert!((core - 1718.0 / 48.0).abs() < 1e-9);
}

#[test]
fn ceilings_follow_the_roofline_scope() {
    let m = builtin("a64fx-node").unwrap();
    let c = Ceilings::of(&m, Precision::F64, Scope::Node).unwrap();
    assert_eq!(c.compute_ceilings.len(), 4);
    let add = c
        .compute_ceilings
        .iter()
        .find(|k| k.kind == CarmKind::AddOnly)
        .unwrap();
    assert!((add.gflops - 1040.0 / 48.0).abs() < 1e-9);
    // The seeds' other machines give no ceilings: nothing is invented.
    let tx2 = builtin("thunderx2").unwrap();
    let c = Ceilings::of(&tx2, Precision::F64, Scope::Core).unwrap();
    assert!(c.compute_ceilings.is_empty());
}

const BASE: &str = r#"
format_version = 1
id = "t"
name = "t"
isa = "x86_64"
simd = "avx2"
vector_bits = 256
fma = true
sockets = 1
cores_per_socket = 4
provenance = "test"

[[peaks]]
precision = "f64"
core_gflops = 64.0
provenance = "test"

[[peaks.widths]]
vector_bits = 64
core_gflops = 16.0
provenance = "fma-f64-scalar"

CEILINGS

[[levels]]
name = "MM"
kind = "memory"
core_gbs = 10.0
provenance = "test"
"#;

fn machine(ceilings: &str) -> Result<Machine, String> {
    Machine::from_toml_str(&BASE.replace("CEILINGS", ceilings), "m.toml").map_err(|e| e.to_string())
}

#[test]
fn scalar_ceiling_comes_from_the_per_width_peak_when_no_ceiling_is_scalar() {
    let m = machine(
        r#"
[[peaks.ceilings]]
op = "add"
vector_bits = 256
core_gflops = 32.0
provenance = "add-f64-256"

[[peaks.ceilings]]
op = "mul"
vector_bits = 256
core_gflops = 31.0
provenance = "mul-f64-256"
"#,
    )
    .unwrap();
    let c = m.carm_ceilings(Precision::F64, false);
    let get = |k| c.iter().find(|c| c.kind == k).unwrap();
    assert_eq!(get(CarmKind::Scalar).gflops, 16.0);
    assert_eq!(get(CarmKind::Scalar).op, CeilingOp::Fma);
    assert_eq!(get(CarmKind::NoFma).gflops, 32.0);
    assert_eq!(get(CarmKind::AddOnly).gflops, 32.0);
    assert_eq!(get(CarmKind::MulOnly).gflops, 31.0);
    // Written back, read back the same.
    let again = Machine::from_toml_str(&m.to_toml_string(), "again").unwrap();
    assert_eq!(again, m);
}

#[test]
fn a_ceiling_above_the_peak_or_twice_given_is_refused() {
    let e = machine(
        r#"
[[peaks.ceilings]]
op = "add"
vector_bits = 256
core_gflops = 80.0
provenance = "add"
"#,
    )
    .unwrap_err();
    assert!(e.contains("peaks[0].ceilings[0].core_gflops"), "{e}");
    assert!(e.contains("above the peak"), "{e}");
    let e = machine(
        r#"
[[peaks.ceilings]]
op = "add"
vector_bits = 256
core_gflops = 30.0
provenance = "a"

[[peaks.ceilings]]
op = "add"
vector_bits = 256
core_gflops = 31.0
provenance = "b"
"#,
    )
    .unwrap_err();
    assert!(e.contains("appears twice"), "{e}");
    let e = machine(
        r#"
[[peaks.ceilings]]
op = "rcp"
vector_bits = 256
core_gflops = 3.0
provenance = "a"
"#,
    )
    .unwrap_err();
    assert!(e.contains("op"), "{e}");
    let e = machine(
        r#"
[[peaks.ceilings]]
op = "add"
vector_bits = 256
provenance = ""
"#,
    )
    .unwrap_err();
    assert!(e.contains("neither core_gflops nor node_gflops"), "{e}");
}

#[test]
fn divide_and_square_root_ceilings_parse_validate_and_are_no_roof() {
    // Faster than the add, mul and per-width ceilings on purpose: were they read as roofs,
    // they would win the scalar, no-FMA and (through the op) every kind.
    let m = machine(
        r#"
[[peaks.ceilings]]
op = "add"
vector_bits = 256
core_gflops = 32.0
provenance = "add-f64-256"

[[peaks.ceilings]]
op = "mul"
vector_bits = 256
core_gflops = 31.0
provenance = "mul-f64-256"

[[peaks.ceilings]]
op = "div"
vector_bits = 256
core_gflops = 40.0
provenance = "div-f64-256"

[[peaks.ceilings]]
op = "sqrt"
vector_bits = 64
core_gflops = 20.0
node_gflops = 80.0
provenance = "sqrt-f64-scalar"

[[peaks.ceilings]]
op = "div"
vector_bits = 64
core_gflops = 0.9
provenance = "div-f64-scalar"
"#,
    )
    .unwrap();
    let p = m.peak(Precision::F64).unwrap();
    let ops: Vec<String> = p.ceilings.iter().map(|c| c.op.to_string()).collect();
    assert_eq!(ops, ["add", "mul", "div", "sqrt", "div"]);
    assert!(!CeilingOp::Div.is_roof() && !CeilingOp::Sqrt.is_roof());
    assert!(CeilingOp::Add.is_roof() && CeilingOp::Mul.is_roof() && CeilingOp::Fma.is_roof());
    for node in [false, true] {
        let c = m.carm_ceilings(Precision::F64, node);
        assert_eq!(c.len(), 4, "{c:?}");
        assert!(c.iter().all(|k| k.op.is_roof()), "{c:?}");
    }
    let c = m.carm_ceilings(Precision::F64, false);
    let get = |k| c.iter().find(|c| c.kind == k).unwrap();
    assert_eq!(get(CarmKind::Scalar).gflops, 16.0);
    assert_eq!(get(CarmKind::NoFma).gflops, 32.0);
    assert_eq!(get(CarmKind::AddOnly).gflops, 32.0);
    assert_eq!(get(CarmKind::MulOnly).gflops, 31.0);
    // The roofline's ceilings read through carm_ceilings: none of them a divider.
    let r = Ceilings::of(&m, Precision::F64, Scope::Core).unwrap();
    assert!(r.compute_ceilings.iter().all(|k| k.op.is_roof()));
    // Written back, read back the same; the TOML names the operations as read.
    let text = m.to_toml_string();
    assert!(
        text.contains("op = \"div\"") && text.contains("op = \"sqrt\""),
        "{text}"
    );
    let again = Machine::from_toml_str(&text, "again").unwrap();
    assert_eq!(again, m);
    // A divide ceiling is still one per width, and still checked against the peak.
    let e = machine(
        r#"
[[peaks.ceilings]]
op = "div"
vector_bits = 256
core_gflops = 3.0
provenance = "a"

[[peaks.ceilings]]
op = "div"
vector_bits = 256
core_gflops = 3.1
provenance = "b"
"#,
    )
    .unwrap_err();
    assert!(e.contains("div at 256 bits appears twice"), "{e}");
    let e = machine(
        r#"
[[peaks.ceilings]]
op = "sqrt"
vector_bits = 256
core_gflops = 90.0
provenance = "a"
"#,
    )
    .unwrap_err();
    assert!(e.contains("above the peak"), "{e}");
}

#[test]
fn an_unknown_ceiling_operation_is_refused_clearly() {
    let e = machine(
        r#"
[[peaks.ceilings]]
op = "rsqrt"
vector_bits = 256
core_gflops = 3.0
provenance = "a"
"#,
    )
    .unwrap_err();
    assert!(e.contains("m.toml"), "{e}");
    assert!(e.contains("rsqrt"), "{e}");
    for op in ["add", "mul", "fma", "div", "sqrt"] {
        assert!(e.contains(op), "the error should list `{op}`: {e}");
    }
}
