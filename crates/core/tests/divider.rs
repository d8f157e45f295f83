//! The divider's ceiling: a binary's divides and square roots at the machine's `div` and
//! `sqrt` ceilings, beside its other FP instructions at the per-width peaks.

use hpcscope_core::project::{Inputs, Options, Side, project_with};
use hpcscope_core::roofline::{AccessWidths, Ceilings, Scope};
use hpcscope_core::{AppMetrics, Machine, Precision};

/// A core with scalar and 256-bit FMA peaks, and (with `divider`) scalar divide and
/// square-root ceilings of `div` and `sqrt` GFLOP/s.
fn machine(id: &str, divider: Option<(f64, f64)>) -> Machine {
    let mut src = format!(
        r#"
format_version = 1
id = "{id}"
name = "test core"
isa = "x86_64"
simd = "avx2"
vector_bits = 256
fma = true
sockets = 1
cores_per_socket = 2
provenance = "test"

[[peaks]]
precision = "f64"
core_gflops = 64.0
provenance = "test"
[[peaks.widths]]
vector_bits = 64
core_gflops = 16.0
provenance = "test"
[[peaks.widths]]
vector_bits = 256
core_gflops = 64.0
provenance = "test"
"#
    );
    if let Some((div, sqrt)) = divider {
        src.push_str(&format!(
            r#"
[[peaks.ceilings]]
op = "div"
vector_bits = 64
core_gflops = {div}
provenance = "test"
[[peaks.ceilings]]
op = "sqrt"
vector_bits = 64
core_gflops = {sqrt}
provenance = "test"
"#
        ));
    }
    src.push_str(
        r#"
[[levels]]
name = "L1"
kind = "cache"
core_gbs = 200.0
provenance = "test"

[[levels]]
name = "MM"
kind = "memory"
core_gbs = 20.0
provenance = "test"
"#,
    );
    Machine::from_toml_str(&src, "test machine").unwrap()
}

/// nbody's inner loop, scalar: 20 FP instructions (20 FLOPs) per pair, one of them a
/// square root and one a divide; 1e8 pairs, every byte from L1.
fn nbody() -> (AppMetrics, AccessWidths) {
    let app = AppMetrics {
        flops: 2e9,
        fp_instructions: 2e9,
        levels: vec!["L1".into(), "MM".into()],
        bytes: vec![3.2e9, 0.0],
        time_s: None,
    };
    let w = AccessWidths::from_bytes(&[(64, 3.2e9)], &[(64, 2e9)], "test")
        .unwrap()
        .with_divider(&[(64, 1e8, 1e8)], 2e9);
    (app, w)
}

#[test]
fn the_divider_binds_where_divides_cost_more_than_the_other_fp_instructions() {
    let (app, w) = nbody();
    assert_eq!((w.parts[0].div, w.parts[0].sqrt), (0.05, 0.05));
    assert!(w.problems().is_empty(), "{:?}", w.problems());
    // Divides at 0.8 G/s, square roots at 0.5 G/s (4.5 and 7.2 cycles at 3.6 GHz).
    let m = machine("a", Some((0.8, 0.5)));
    let c = Ceilings::at_widths(&m, Precision::F64, Scope::Core, &w).unwrap();
    // The FMA units: 16 GFLOP/s / 2 FLOPs = 8 G instructions/s at 64 bits.
    assert!((c.fp_instruction_rate.unwrap() - 8.0).abs() < 1e-12);
    // The divider: 0.05 / 0.8 + 0.05 / 0.5 = 0.1625 ns per FP instruction.
    let divider = 1.0 / 0.1625;
    assert!((c.divider_rate.unwrap() - divider).abs() < 1e-9);
    let (peak, clamped) = c.weighted_peak(&app);
    assert!(!clamped);
    assert!((peak - divider).abs() < 1e-9, "{peak}");
    assert!(
        c.notes.iter().any(|n| n.contains("the divider binds")),
        "{:?}",
        c.notes
    );
    // A fast divider does not bind: the FMA units' rate stays the ceiling.
    let fast = machine("b", Some((8.0, 8.0)));
    let c = Ceilings::at_widths(&fast, Precision::F64, Scope::Core, &w).unwrap();
    assert!((c.weighted_peak(&app).0 - 8.0).abs() < 1e-9);
    assert!(!c.notes.iter().any(|n| n.contains("the divider binds")));
}

#[test]
fn a_machine_without_a_divider_ceiling_counts_divides_as_other_instructions() {
    let (app, w) = nbody();
    let m = machine("none", None);
    let c = Ceilings::at_widths(&m, Precision::F64, Scope::Core, &w).unwrap();
    assert!(c.divider_unknown && c.divider_rate.is_none());
    assert!((c.weighted_peak(&app).0 - 8.0).abs() < 1e-9);
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("no f64 ceiling for div 64-bit, sqrt 64-bit")),
        "{:?}",
        c.notes
    );
    // A binary without divides needs no divider ceiling.
    let plain = AccessWidths::from_bytes(&[(64, 3.2e9)], &[(64, 2e9)], "test").unwrap();
    let c = Ceilings::at_widths(&m, Precision::F64, Scope::Core, &plain).unwrap();
    assert!(!c.divider_unknown && c.divider_rate.is_none());
}

/// Project nbody from `source` (measured at `gflops`) onto `target`.
fn project_nbody(
    source: &Machine,
    target: &Machine,
    gflops: f64,
) -> hpcscope_core::project::Projection {
    let (app, w) = nbody();
    let threads = [app];
    let side = |m| Side {
        machine: m,
        threads: &threads,
        origin: "nbody",
    };
    project_with(
        side(source),
        gflops,
        side(target),
        Precision::F64,
        Options::default(),
        &Inputs {
            source_widths: Some(w.clone()),
            target_widths: Some(w),
            ..Inputs::default()
        },
    )
    .unwrap()
}

#[test]
fn a_divider_bound_loop_projects_with_the_dividers_ratio() {
    // Same FMA units and memory; the target's divider twice as fast.
    let slow = machine("slow", Some((0.8, 0.5)));
    let fast = machine("fast", Some((1.6, 1.0)));
    let p = project_nbody(&slow, &fast, 5.0);
    // Every level's point is bound by the compute ceiling (every byte from L1 at 200
    // GB/s: 125 GFLOP/s): the target's ceiling is the FMA units' 8, below its divider's
    // 12.3; the source's the divider's 6.15.
    let src = 1.0 / 0.1625;
    assert!((p.source_ceiling_gflops - src).abs() < 1e-9, "{p:?}");
    assert!((p.target_ceiling_gflops - 8.0).abs() < 1e-9, "{p:?}");
    for pt in p.all_points() {
        assert!(
            (pt.gflops - 5.0 * 8.0 / src).abs() < 1e-9,
            "{} {}",
            pt.gflops,
            5.0 * 8.0 / src
        );
    }
    // Without divider ceilings the two machines are the same: no change projected.
    let p = project_nbody(&machine("x", None), &machine("y", None), 5.0);
    for pt in p.all_points() {
        assert!((pt.gflops - 5.0).abs() < 1e-9);
    }
}

#[test]
fn one_side_without_a_divider_ceiling_leaves_the_divider_out_of_both() {
    let slow = machine("slow", Some((0.8, 0.5)));
    let none = machine("none", None);
    for (s, t) in [(&slow, &none), (&none, &slow)] {
        let p = project_nbody(s, t, 5.0);
        assert!((p.source_ceiling_gflops - 8.0).abs() < 1e-9, "{p:?}");
        assert!((p.target_ceiling_gflops - 8.0).abs() < 1e-9, "{p:?}");
        assert!(
            p.notes
                .iter()
                .any(|n| n.contains("slow: the divider is left out")),
            "{:?}",
            p.notes
        );
    }
}

#[test]
fn divides_beyond_the_widths_instructions_are_a_problem() {
    let w = AccessWidths::from_bytes(&[(64, 1.0)], &[(64, 10.0)], "test")
        .unwrap()
        .with_divider(&[(64, 8.0, 4.0)], 10.0);
    let p = w.problems();
    assert!(
        p.iter()
            .any(|s| s.contains("divides and square roots (1.200) exceed")),
        "{p:?}"
    );
    // The shares survive a round trip through JSON; zero shares are not written.
    let ok = AccessWidths::from_bytes(&[(64, 1.0)], &[(64, 10.0)], "test")
        .unwrap()
        .with_divider(&[(64, 1.0, 0.0)], 10.0);
    let j = serde_json::to_string(&ok).unwrap();
    assert!(j.contains("\"div\":0.1") && !j.contains("sqrt"), "{j}");
    let back: AccessWidths = serde_json::from_str(&j).unwrap();
    assert_eq!(back, ok);
}
