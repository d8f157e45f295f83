//! The dependency chains' ceiling: a loop's loop-carried chain at the machine's latencies
//! (`[[peaks.latencies]]`), beside its FP instructions at the per-width peaks.

use hpcscope_core::project::{Inputs, Options, Side, project_with};
use hpcscope_core::roofline::{AccessWidths, Ceilings, ChainCounts, ComputeLimit, Scope};
use hpcscope_core::{AppMetrics, Machine, Precision};

/// A core with scalar and 256-bit FMA peaks, clocked at `ghz`, and (with `add_cycles`)
/// a scalar add latency of that many cycles at that clock.
/// Whether one of `notes` contains `text`.
fn has_note(notes: &[String], text: &str) -> bool {
    notes.iter().any(|n| n.contains(text))
}

fn machine(id: &str, ghz: f64, add_cycles: Option<f64>) -> Machine {
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
frequency_ghz = {ghz}
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
    if let Some(c) = add_cycles {
        src.push_str(&format!(
            r#"
[[peaks.latencies]]
op = "add"
vector_bits = 64
ns = {}
provenance = "test"
"#,
            c / ghz
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

/// An in-order reduction, `s += a[j] * x[j]` without reassociation: per element a mul and
/// an add (2 FP instructions, 2 FLOPs), the add on the loop's chain; per 4 elements one
/// integer step on the counter's chain (not the longest: not counted). 1e9 elements, 3.2 GB from L1.
fn reduction() -> (AppMetrics, AccessWidths) {
    let app = AppMetrics {
        flops: 2e9,
        fp_instructions: 2e9,
        levels: vec!["L1".into(), "MM".into()],
        bytes: vec![3.2e9, 0.0],
        time_s: None,
    };
    let w = AccessWidths::from_bytes(&[(64, 3.2e9)], &[(64, 2e9)], "test")
        .unwrap()
        .with_chains(
            &ChainCounts {
                fp: vec![(64, [1e9, 0.0, 0.0, 0.0, 0.0])],
                other: 0.0,
            },
            2e9,
        );
    (app, w)
}

#[test]
fn an_add_chain_binds_at_one_add_latency_per_element() {
    let (app, w) = reduction();
    assert_eq!(w.parts[0].chain.add, 0.5);
    assert!(w.problems().is_empty(), "{:?}", w.problems());
    // 3 cycles at 3 GHz: 1 ns per add, 0.5 ns per FP instruction, 2 G instructions/s.
    let m = machine("a", 3.0, Some(3.0));
    let c = Ceilings::at_widths(&m, Precision::F64, Scope::Core, &w).unwrap();
    assert!((c.latency_rate.unwrap() - 2.0).abs() < 1e-9, "{c:?}");
    assert!((c.weighted_peak(&app).0 - 2.0).abs() < 1e-9);
    assert_eq!(c.compute_limit(), Some(ComputeLimit::Chains));
    // Without the machine's latency the FP units set it.
    let c = Ceilings::at_widths(&machine("b", 3.0, None), Precision::F64, Scope::Core, &w).unwrap();
    assert_eq!(c.compute_limit(), Some(ComputeLimit::FpUnits));
    let c = Ceilings::at_widths(
        &machine("a", 3.0, Some(3.0)),
        Precision::F64,
        Scope::Core,
        &w,
    )
    .unwrap();
    assert!(
        has_note(&c.notes, "dependency chains bind the compute ceiling"),
        "{:?}",
        c.notes
    );
    // The shares survive a round trip through JSON.
    let j = serde_json::to_string(&w).unwrap();
    assert!(j.contains("\"chain\":{\"add\":0.5}"), "{j}");
    let back: AccessWidths = serde_json::from_str(&j).unwrap();
    assert_eq!(back, w);
}

fn project(source: &Machine, target: &Machine, gflops: f64) -> hpcscope_core::project::Projection {
    let (app, w) = reduction();
    let threads = [app];
    let side = |m| Side {
        machine: m,
        threads: &threads,
        origin: "reduction",
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
fn a_chain_bound_loop_projects_with_the_latencies_ratio() {
    // Same FP units, memory and clock: a 3-cycle add against a 2-cycle one.
    let slow = machine("slow", 3.0, Some(3.0));
    let fast = machine("fast", 3.0, Some(2.0));
    let p = project(&slow, &fast, 2.0);
    assert!((p.source_ceiling_gflops - 2.0).abs() < 1e-9, "{p:?}");
    assert!((p.target_ceiling_gflops - 3.0).abs() < 1e-9, "{p:?}");
    for pt in p.all_points() {
        assert!((pt.gflops - 3.0).abs() < 1e-9, "{}", pt.gflops);
    }
}

#[test]
fn one_side_without_a_latency_leaves_the_chains_out_of_both() {
    let slow = machine("slow", 3.0, Some(3.0));
    let none = machine("none", 3.0, None);
    for (s, t) in [(&slow, &none), (&none, &slow)] {
        let p = project(s, t, 2.0);
        // The FMA units' 8 G instructions/s at 64 bits, on both sides.
        assert!((p.source_ceiling_gflops - 8.0).abs() < 1e-9, "{p:?}");
        assert!((p.target_ceiling_gflops - 8.0).abs() < 1e-9, "{p:?}");
        assert!(
            has_note(&p.notes, "slow: the loops' dependency chains are left out"),
            "{:?}",
            p.notes
        );
    }
}

#[test]
fn a_profile_without_chains_on_one_side_leaves_them_out_of_both() {
    let slow = machine("slow", 3.0, Some(3.0));
    let fast = machine("fast", 3.0, Some(2.0));
    let (app, w) = reduction();
    let plain = AccessWidths::from_bytes(&[(64, 3.2e9)], &[(64, 2e9)], "test").unwrap();
    let threads = [app];
    let p = project_with(
        Side {
            machine: &slow,
            threads: &threads,
            origin: "native",
        },
        2.0,
        Side {
            machine: &fast,
            threads: &threads,
            origin: "emulated",
        },
        Precision::F64,
        Options::default(),
        &Inputs {
            source_widths: Some(w),
            target_widths: Some(plain),
            ..Inputs::default()
        },
    )
    .unwrap();
    assert!((p.source_ceiling_gflops - 8.0).abs() < 1e-9, "{p:?}");
    assert!(
        has_note(&p.notes, "the other side's profile records none"),
        "{:?}",
        p.notes
    );
}

#[test]
fn integer_steps_cost_a_cycle_of_the_scalar_clock() {
    let app = AppMetrics {
        flops: 1e9,
        fp_instructions: 1e9,
        levels: vec!["L1".into(), "MM".into()],
        bytes: vec![8e9, 0.0],
        time_s: None,
    };
    // One add and two integer steps per element: 3 + 2 cycles at 2.5 GHz (scalar clock;
    // 2 GHz under FMA load).
    let w = AccessWidths::from_bytes(&[(64, 8e9)], &[(64, 1e9)], "test")
        .unwrap()
        .with_chains(
            &ChainCounts {
                fp: vec![(64, [1e9, 0.0, 0.0, 0.0, 0.0])],
                other: 2e9,
            },
            1e9,
        );
    let mut m = machine("m", 2.0, Some(6.0));
    m.scalar_frequency_ghz = Some(2.5);
    let c = Ceilings::at_widths(&m, Precision::F64, Scope::Core, &w).unwrap();
    // add: 6 / 2.0 = 3 ns; integer: 2 x 0.4 ns.
    assert!((c.latency_rate.unwrap() - 1.0 / 3.8).abs() < 1e-9, "{c:?}");
    assert!((c.weighted_peak(&app).0 - 1.0 / 3.8).abs() < 1e-9);
}

#[test]
fn a_chain_of_mostly_integer_steps_is_named_as_the_loops_counters() {
    // Two FP instructions per element, one FP add on a chain every 100 elements, and each
    // element's loop counter (one cycle): the counters take most of the chains' time, 1.5 ns
    // per cycle at 0.667 GHz, below the FP units' 4 G instructions/s.
    let w = AccessWidths::from_bytes(&[(64, 3.2e9)], &[(64, 2e9)], "test")
        .unwrap()
        .with_chains(
            &ChainCounts {
                fp: vec![(64, [1e7, 0.0, 0.0, 0.0, 0.0])],
                other: 1e9,
            },
            2e9,
        );
    let m = machine("slow", 0.667, Some(3.0));
    let mut c = Ceilings::at_widths(&m, Precision::F64, Scope::Core, &w).unwrap();
    assert_eq!(c.compute_limit(), Some(ComputeLimit::Chains));
    assert!(c.latency_mostly_integer);
    let note = c
        .notes
        .iter()
        .find(|n| n.contains("bind the compute ceiling"))
        .cloned()
        .unwrap_or_default();
    assert!(
        note.contains("mostly integer steps (loop counters"),
        "{:?}",
        c.notes
    );
    c.without_latency();
    assert!(
        !has_note(&c.notes, "bind the compute ceiling"),
        "{:?}",
        c.notes
    );
    // The in-order sum: its adds take the chains' time.
    let (_, w) = reduction();
    let c = Ceilings::at_widths(
        &machine("a", 3.0, Some(3.0)),
        Precision::F64,
        Scope::Core,
        &w,
    )
    .unwrap();
    assert!(!c.latency_mostly_integer);
}
