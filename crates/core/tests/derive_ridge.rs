//! Seed 000's cache-size axis and ridge diagnostic (Gavoille 2024 thesis, sections 7.1 and
//! 7.4-7.5): machines derived by transforms (`machine derive`), the OI_L1 - OI_ridge
//! diagnostic of a design point, the DGEMM peak as the projection's peak, and `machine
//! diff` over per-width values and compute ceilings.

use hpcscope_core::explore::{DesignPoint, RidgeDiagnostic, Transform, derive};
use hpcscope_core::library::builtin;
use hpcscope_core::machine::{CeilingOp, PeakChoice, SustainedPeak, diff};
use hpcscope_core::profile::AppMetrics;
use hpcscope_core::project::{Method, Options, PairRule, Side, project};
use hpcscope_core::roofline::{Bound, Scope};
use hpcscope_core::{Machine, Precision};

fn lookup(id: &str) -> hpcscope_core::Result<Machine> {
    builtin(id)
}

fn set(s: &str) -> Transform {
    Transform::parse_set(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn parse_set_covers_every_transform() {
    assert_eq!(set("vector_bits=512"), Transform::VectorBits(512));
    assert_eq!(set("cores=48"), Transform::Cores(48));
    assert_eq!(
        set("memory=a64fx"),
        Transform::ReplaceMemory("a64fx".into())
    );
    assert_eq!(
        set("L2.scale=2"),
        Transform::ScaleLevel {
            level: "L2".into(),
            factor: 2.0
        }
    );
    assert_eq!(
        set("MM.node_gbs=850"),
        Transform::SetLevel {
            level: "MM".into(),
            core_gbs: None,
            node_gbs: Some(850.0)
        }
    );
    assert_eq!(
        set("L3.size_bytes=128M"),
        Transform::CacheSize {
            level: "L3".into(),
            size_bytes: 128 << 20
        }
    );
    assert_eq!(
        set("L3.associativity=12"),
        Transform::CacheWays {
            level: "L3".into(),
            associativity: 12
        }
    );
    assert_eq!(
        set("L1.line_bytes=128"),
        Transform::CacheLine {
            level: "L1".into(),
            line_bytes: 128
        }
    );
    assert_eq!(
        set("peak.f64.core_gflops=20"),
        Transform::SetPeak {
            precision: Precision::F64,
            core_gflops: Some(20.0),
            node_gflops: None
        }
    );
    // The scenario syntax gives the same transform.
    assert_eq!(
        Transform::parse_inline(r#"{ cache_size = { level = "L3", size_bytes = 134217728 } }"#)
            .unwrap(),
        set("L3.size_bytes=134217728")
    );
}

#[test]
fn parse_set_refuses_bad_input_with_a_fix() {
    for bad in [
        "L3.size_bytes",
        "L3.size_bytes=big",
        "L2.scale=inf",
        "L2.colour=3",
        "peak.f16.core_gflops=1",
        "nonsense=1",
    ] {
        let e = Transform::parse_set(bad).unwrap_err().to_string();
        assert!(e.contains("--set") && e.contains("fix"), "{bad}: {e}");
    }
    let e = Transform::parse_inline("{ cache_size = 3 }")
        .unwrap_err()
        .to_string();
    assert!(e.contains("--transform"), "{e}");
}

/// Table 7.1: the EPI-like node is a Graviton 3 node with HBM2 (850 GB/s) and a 128 MiB L3.
/// Derived from `graviton3` by those two transforms it has the built-in `epi-like`'s
/// bandwidths, peak and cache geometry.
#[test]
fn table_7_1_epi_like_derived_from_graviton3() {
    let g3 = builtin("graviton3").unwrap();
    let epi = builtin("epi-like").unwrap();
    let m = derive(
        &g3,
        "graviton3",
        &[set("MM.node_gbs=850"), set("L3.size_bytes=128M")],
        &lookup,
    )
    .unwrap();
    let d: Vec<String> = diff(&m, &epi)
        .into_iter()
        .filter(|f| f.field != "name")
        .map(|f| format!("{} {} {}", f.field, f.a, f.b))
        .collect();
    assert!(d.is_empty(), "{d:?}");
    assert!(
        m.provenance.starts_with(
            "derived from machine 'graviton3' (graviton3) by MM=850GB/s, L3.size=134217728"
        ),
        "{}",
        m.provenance
    );
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("L3 cache geometry is hypothetical")),
        "{:?}",
        m.notes
    );
    // The written file is a valid machine and reads back the same.
    let text = m.to_toml_string();
    let back = Machine::from_toml_str(&text, "derived").unwrap();
    assert_eq!(back, m);
}

#[test]
fn derive_checks_the_result() {
    let g3 = builtin("graviton3").unwrap();
    // A line size that is not a power of two is refused by the machine's own checks.
    let e = derive(&g3, "graviton3", &[set("L1.line_bytes=96")], &lookup)
        .unwrap_err()
        .to_string();
    assert!(e.contains("line_bytes"), "{e}");
    let e = derive(&g3, "graviton3", &[set("L9.size_bytes=1M")], &lookup)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no level 'L9'") && e.contains("L1, L2, L3, MM"),
        "{e}"
    );
    let e = derive(&g3, "graviton3", &[set("MM.size_bytes=1M")], &lookup)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no cache geometry"), "{e}");
}

#[test]
fn machine_diff_compares_widths_and_ceilings() {
    let a = builtin("a64fx-node").unwrap();
    let mut b = a.clone();
    let p = &mut b.peaks[0];
    let c = p
        .ceilings
        .iter_mut()
        .find(|c| c.op == CeilingOp::Add && c.vector_bits == 64)
        .unwrap();
    c.node_gflops = Some(80.0);
    p.widths.push(hpcscope_core::machine::WidthPeak {
        vector_bits: 512,
        core_gflops: Some(40.0),
        node_gflops: None,
        provenance: "test".into(),
    });
    b.levels[0]
        .widths
        .push(hpcscope_core::machine::WidthBandwidth {
            vector_bits: 128,
            core_gbs: Some(100.0),
            node_gbs: None,
            provenance: "test".into(),
        });
    if let Some(g) = b.levels[0].cache.as_mut() {
        g.associativity += 4;
    }
    let d = diff(&a, &b);
    let get = |f: &str| {
        d.iter()
            .find(|x| x.field == f)
            .map(|x| (x.a.as_str(), x.b.as_str()))
    };
    assert_eq!(
        get("peak.f64.ceilings.add.64.node_gflops"),
        Some(("75.9", "80"))
    );
    assert_eq!(get("peak.f64.widths.512.core_gflops"), Some(("-", "40")));
    let l = &a.levels[0].name;
    assert_eq!(
        get(&format!("level.{l}.widths.128.core_gbs")),
        Some(("-", "100"))
    );
    if a.levels[0].cache.is_some() {
        assert!(
            get(&format!("level.{l}.cache.associativity")).is_some(),
            "{d:?}"
        );
    }
    // Unchanged entries are not listed.
    assert!(
        get("peak.f64.ceilings.mul.512.node_gflops").is_none(),
        "{d:?}"
    );
}

fn with_dgemm(id: &str, core: f64) -> Machine {
    let mut m = builtin(id).unwrap();
    m.peaks[0].dgemm = Some(SustainedPeak {
        core_gflops: Some(core),
        node_gflops: None,
        provenance: "test DGEMM".into(),
    });
    m.validate("test").unwrap();
    m
}

#[test]
fn dgemm_peak_is_selectable_and_checked() {
    let m = with_dgemm("thunderx2", 7.0);
    let d = m.with_peak(PeakChoice::Dgemm).unwrap();
    assert_eq!(d.peaks[0].core_gflops, Some(7.0));
    assert!(d.peaks[0].provenance.starts_with("DGEMM: test DGEMM"));
    assert!(d.peaks[0].widths.is_empty());
    assert_eq!(m.with_peak(PeakChoice::Listed).unwrap(), m);
    // No DGEMM value: an error that says how to get one.
    let e = builtin("thunderx2")
        .unwrap()
        .with_peak(PeakChoice::Dgemm)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bench --kernels dgemm"), "{e}");
    // A DGEMM above the peak kernel is refused.
    let mut bad = builtin("thunderx2").unwrap();
    let peak = bad.peaks[0].core_gflops.unwrap();
    bad.peaks[0].dgemm = Some(SustainedPeak {
        core_gflops: Some(peak * 2.0),
        node_gflops: None,
        provenance: "x".into(),
    });
    let e = bad.validate("m.toml").unwrap_err().to_string();
    assert!(e.contains("peaks[0].dgemm.core_gflops"), "{e}");
    // A vector-length transform scales it with the peak.
    let v = hpcscope_core::explore::apply(&m, &Transform::VectorBits(256), &lookup).unwrap();
    let r = 256.0 / f64::from(m.vector_bits);
    assert!((v.peaks[0].dgemm.as_ref().unwrap().core_gflops.unwrap() - 7.0 * r).abs() < 1e-9);
}

/// Section 7.5 with Table 7.2: a kernel of OI 4 FLOP/byte at main memory (Kernel_MB of
/// kernel_1), vectorized with FMA on full 512-bit vectors (16 FLOPs per FP instruction, so
/// eq. 6.2 keeps the HPL peak), sits between the ridges of KNL's DRAM (15.66) and MCDRAM
/// (2.80): memory-bound with its data in DRAM, compute-bound in MCDRAM.
#[test]
fn table_7_2_knl_ridge_diagnostic_of_kernel_mb() {
    let dram = builtin("knl-flat-dram").unwrap();
    let mcdram = builtin("knl-flat-mcdram").unwrap();
    let k = AppMetrics {
        flops: 4.0e9,
        fp_instructions: 4.0e9 / 16.0,
        levels: vec!["MM".into()],
        bytes: vec![1.0e9],
        time_s: None,
    };
    let threads = vec![k; 68];
    let p = project(
        Side {
            machine: &dram,
            threads: &threads,
            origin: "kernel_1 in DRAM",
        },
        68.0 * 0.5,
        Side {
            machine: &mcdram,
            threads: &threads,
            origin: "kernel_1 in MCDRAM",
        },
        Precision::F64,
        Options {
            pair_rule: PairRule::UpperTriangular,
            method: Method::Weighted,
            scope: Scope::Node,
        },
    )
    .unwrap();
    let dp = DesignPoint::from_projection("kernel_1 MB", "KNL MCDRAM", p);
    let r = RidgeDiagnostic::of(&dp).expect("a diagnostic");
    assert_eq!(r.level, "MM");
    assert!((r.source_ridge_oi - 15.66).abs() < 0.005, "{r:?}");
    assert!((r.ridge_oi - 2.80).abs() < 0.01, "{r:?}");
    assert!((r.oi.unwrap() - 4.0).abs() < 1e-12);
    assert!((r.source_delta.unwrap() - (4.0 - 1300.0 / 83.0)).abs() < 1e-9);
    assert!((r.delta.unwrap() - (4.0 - 1300.0 / 463.0)).abs() < 1e-9);
    assert_eq!(r.source_bound, Bound::Memory);
    assert_eq!(r.bound, Bound::Compute);
}

#[test]
fn geometry_key_changes_with_the_cache_geometry_only() {
    use hpcscope_core::explore::cache_geometry_key;
    let base = builtin("cascadelake-8260").unwrap();
    let k = |m: &Machine| cache_geometry_key(m);
    let bw = derive(&base, "b", &[set("MM.node_gbs=850")], &lookup).unwrap();
    assert_eq!(k(&bw), k(&base), "a bandwidth is not geometry");
    for s in [
        "L2.size_bytes=2M",
        "L2.associativity=4",
        "L3.line_bytes=128",
    ] {
        let m = derive(&base, "b", &[set(s)], &lookup).unwrap();
        assert_ne!(k(&m), k(&base), "{s}");
    }
}

#[test]
fn sweep_with_takes_the_resimulated_bytes_and_marks_each_point() {
    use hpcscope_core::explore::{BytesOrigin, Resimulated, Resolved, sweep_with};
    use hpcscope_core::project::Inputs;
    let base = builtin("cascadelake-8260").unwrap();
    let big = derive(&base, "b", &[set("L2.size_bytes=2M")], &lookup).unwrap();
    let small = derive(&base, "b", &[set("L2.size_bytes=256K")], &lookup).unwrap();
    let th = |l3: f64| AppMetrics {
        flops: 2.0e9,
        fp_instructions: 2.0e9,
        levels: vec!["L1".into(), "L2".into(), "L3".into(), "MM".into()],
        bytes: vec![21.0e9, 3.0e9 - l3, l3, 0.0],
        time_s: Some(2.0),
    };
    let r = Resolved {
        source_machine: base.clone(),
        source_threads: vec![th(1.0e8)],
        source_gflops: 1.0,
        variants: vec![("v".into(), None, vec![th(1.0e8)])],
        targets: vec![
            ("base".into(), base.clone()),
            ("L2 2M".into(), big),
            ("L2 256K".into(), small),
        ],
        source_widths: None,
        variant_widths: vec![None],
        source_spread: None,
        source_instructions: None,
        variant_instructions: vec![None],
    };
    let mut resim = Resimulated {
        changed: vec![(0, 1), (0, 2)],
        ..Resimulated::default()
    };
    // Only the 256 KiB target was re-simulated: every byte past L1 now comes from L3.
    resim.metrics.insert((0, 2), vec![th(3.0e9)]);
    let opts = Options {
        pair_rule: PairRule::UpperTriangular,
        method: Method::default(),
        scope: Scope::Core,
    };
    let pts = sweep_with(&r, Precision::F64, opts, &Inputs::default(), &resim).unwrap();
    let origins: Vec<BytesOrigin> = pts.iter().map(|p| p.bytes).collect();
    assert_eq!(
        origins,
        [
            BytesOrigin::Profile,
            BytesOrigin::Approximate,
            BytesOrigin::Resimulated
        ]
    );
    let oi_l3 = |p: &DesignPoint| {
        p.projection
            .points
            .iter()
            .find(|x| x.oi_level == "L3")
            .unwrap()
            .oi_target
    };
    // FLOPs over the bytes from L3 on: the profile's 1e8 where not re-simulated, 3e9
    // re-simulated.
    assert!((oi_l3(&pts[0]) - 20.0).abs() < 1e-9, "{}", oi_l3(&pts[0]));
    assert!((oi_l3(&pts[1]) - 20.0).abs() < 1e-9, "{}", oi_l3(&pts[1]));
    assert!(
        (oi_l3(&pts[2]) - 2.0 / 3.0).abs() < 1e-12,
        "{}",
        oi_l3(&pts[2])
    );
}

#[test]
fn a_cache_larger_than_the_simulator_holds_is_refused() {
    // A 1 TiB L1 passed `machine validate` and made `mix` abort at a 64 GiB allocation.
    let base = builtin("cascadelake-8260").unwrap();
    let mut m = base.clone();
    let l1 = m
        .levels
        .iter_mut()
        .find_map(|l| l.cache.as_mut())
        .expect("the machine has a cache");
    l1.size_bytes = 1 << 40;
    let e = m.validate("m.toml").unwrap_err().to_string();
    assert!(e.contains("16 GiB limit of a cache"), "{e}");
    let e = derive(&base, "b", &[set("L3.size_bytes=32G")], &lookup)
        .unwrap_err()
        .to_string();
    assert!(e.contains("16 GiB limit"), "{e}");
}

#[test]
fn toml_type_errors_name_the_field_path_and_the_line() {
    // They named the line only: "m.toml:11: invalid type: string \"many\", expected u32".
    let text = builtin("cascadelake-8260").unwrap().to_toml_string();
    let bad = text.replacen(
        &format!(
            "cores_per_socket = {}",
            builtin("cascadelake-8260").unwrap().cores_per_socket
        ),
        "cores_per_socket = \"many\"",
        1,
    );
    assert_ne!(bad, text, "the example has cores_per_socket");
    let e = Machine::from_toml_str(&bad, "m.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("field `cores_per_socket`: invalid type"), "{e}");
    assert!(e.starts_with("m.toml:"), "{e}");
}

#[test]
fn a_profile_of_several_regions_says_which_options_choose_one() {
    // It advised `--region`, which `project` does not have.
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/scenarios/tx2-source.json"),
    )
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut second = v["regions"][0].clone();
    second["name"] = "other".into();
    v["regions"].as_array_mut().unwrap().push(second);
    let p = hpcscope_core::Profile::from_json_str(&v.to_string(), "p.json").unwrap();
    let e = p.region(None, "p.json").unwrap_err().to_string();
    assert!(
        e.contains("project --source-region, --target-region") && e.contains("main, other"),
        "{e}"
    );
}
