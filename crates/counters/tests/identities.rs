//! Identities of seed 001's metrics (research note section 2.4) as property tests: they hold
//! for any counter values, on both of the seed's recipes, so a formula change that breaks
//! one is caught.

use hpcscope_counters::catalogue::{Catalogue, Variant};
use hpcscope_counters::compute::{self, Options, Precision, RegionMetrics};
use hpcscope_counters::raw::{Collector, Count, RawData};
use proptest::prelude::*;

fn run(
    recipe: &str,
    variant: Variant,
    precision: Precision,
    counters: &[(String, f64)],
    time: f64,
) -> RegionMetrics {
    let cat = Catalogue::builtin();
    let order: Vec<String> = cat.metrics.metrics.iter().map(|m| m.id.clone()).collect();
    let c = cat.compile(cat.find(recipe).unwrap(), variant).unwrap();
    let mut raw = RawData::new("p", "prop", Collector::Papi);
    let t = raw.thread_mut("r", 0);
    t.time_s = Some(time);
    for (k, v) in counters {
        t.counters.insert(k.clone(), Count::of(*v));
    }
    let opts = Options {
        precision,
        ..Options::default()
    };
    compute::compute(&c, &order, &raw, &opts).regions.remove(0)
}

/// Equal to 1e-9 relative to the larger of the two.
fn close(a: f64, b: f64) -> bool {
    hpcscope_test_support::close_rel_sym(a, b, 1e-9)
}

fn v(r: &RegionMetrics, id: &str) -> f64 {
    r.value(id)
        .unwrap_or_else(|| panic!("{id}: {:?}", r.get(id)))
}

#[allow(clippy::too_many_arguments)] // one argument per counter of the recipe
fn clx_counters(
    scalar: f64,
    p512: f64,
    ld: f64,
    st: f64,
    l1: f64,
    l2: f64,
    l3: f64,
    cas: f64,
    sp: bool,
) -> Vec<(String, f64)> {
    let (on, off) = if sp {
        ("SINGLE", "DOUBLE")
    } else {
        ("DOUBLE", "SINGLE")
    };
    let mut c: Vec<(String, f64)> = Vec::new();
    for w in ["SCALAR", "128B_PACKED", "256B_PACKED", "512B_PACKED"] {
        c.push((format!("FP_ARITH_INST_RETIRED:{w}_{off}"), 0.0));
    }
    c.push((format!("FP_ARITH_INST_RETIRED:SCALAR_{on}"), scalar));
    c.push((format!("FP_ARITH_INST_RETIRED:128B_PACKED_{on}"), 0.0));
    c.push((format!("FP_ARITH_INST_RETIRED:256B_PACKED_{on}"), 0.0));
    c.push((format!("FP_ARITH_INST_RETIRED:512B_PACKED_{on}"), p512));
    for (k, x) in [
        ("PAPI_LD_INS", ld),
        ("PAPI_SR_INS", st),
        ("PAPI_L1_DCM", l1),
        ("PAPI_L2_TCM", l2),
        ("PAPI_L2_DCM", l2 * 0.9),
        ("PAPI_L3_TCM", l3),
        ("skx_unc_imc0::UNC_M_CAS_COUNT:RD:cpu=0", cas),
        ("skx_unc_imc3::UNC_M_CAS_COUNT:WR:cpu=24", cas / 2.0),
        ("PAPI_TOT_CYC", 1e9),
        ("INST_RETIRED:PREC_DIST", 2e9),
    ] {
        c.push((k.into(), x));
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn cascade_lake_identities(
        scalar in 1.0f64..1e12, p512 in 0.0f64..1e12, ld in 1.0f64..1e12, st in 1.0f64..1e12,
        l1 in 1.0f64..1e11, l2 in 1.0f64..1e11, l3 in 0.0f64..1e10, cas in 0.0f64..1e10,
        time in 1e-3f64..1e3, sp in any::<bool>(),
    ) {
        let prec = if sp { Precision::Sp } else { Precision::Dp };
        let r = run("intel-cascadelake", Variant::AsPublished, prec, &clx_counters(scalar, p512, ld, st, l1, l2, l3, cas, sp), time);
        let flops = v(&r, "flops");
        prop_assert!(close(v(&r, "flops_per_s") * time, flops));
        prop_assert!(close(v(&r, "ai"), flops / v(&r, "ls_bytes")));
        prop_assert!(close(v(&r, "ai"), 1.0 / (1.0 / v(&r, "flops_per_ld_bytes") + 1.0 / v(&r, "flops_per_st_bytes"))));
        prop_assert!(close(v(&r, "ld_per_st"), v(&r, "flops_per_st_ins") / v(&r, "flops_per_ld_ins")));
        prop_assert!(close(v(&r, "l2_per_ls") * v(&r, "ls_bytes"), v(&r, "l2_bytes")));
        prop_assert!(close(v(&r, "mem_per_ls") * v(&r, "ls_bytes"), v(&r, "mem_bytes")));
        // 2.4 point 2: L2 MR = L3 Bytes / L2 Bytes.
        prop_assert!(close(v(&r, "l2_mr"), v(&r, "l3_bytes") / v(&r, "l2_bytes")));
        // 2.4 point 4: LS Bytes = LS_INS x element size x flops/fpins (scalar + 512-bit).
        let e = if sp { 4.0 } else { 8.0 };
        prop_assert!(close(v(&r, "ls_bytes"), (ld + st) * e * v(&r, "flops_per_fpins")));
        // 2.4 point 3: L1 MR x 64 / (L2/LS) = LS Bytes / LS_INS.
        prop_assert!(close(v(&r, "l1_mr") * 64.0 / v(&r, "l2_per_ls"), v(&r, "ls_bytes") / (ld + st)));
        // flops/fpins never exceeds the width limit.
        let max = if sp { 16.0 } else { 8.0 };
        prop_assert!(v(&r, "flops_per_fpins") <= max + 1e-9);
    }

    #[test]
    fn a64fx_identities_and_variants(
        ld in 1e6f64..1e12, st in 1e6f64..1e12, sve_frac_ld in 0.0f64..1.0, sve_frac_st in 0.0f64..1.0,
        fixed in 0.0f64..1e12, scale in 1.0f64..1e12, fpspec in 1.0f64..1e12,
        l1 in 1.0f64..1e10, time in 1e-3f64..1e3,
    ) {
        let c: Vec<(String, f64)> = [
            ("LD_SPEC", ld), ("ST_SPEC", st),
            ("ASE_SVE_LD_SPEC", ld * sve_frac_ld), ("ASE_SVE_ST_SPEC", st * sve_frac_st),
            ("FP_LD_SPEC", 0.0), ("FP_ST_SPEC", 0.0),
            ("FP_DP_FIXED_OPS_SPEC", fixed), ("FP_DP_SCALE_OPS_SPEC", scale),
            ("FP_SP_FIXED_OPS_SPEC", 0.0), ("FP_SP_SCALE_OPS_SPEC", 0.0),
            ("FP_SPEC", fpspec), ("PAPI_L1_DCM", l1), ("L1D_CACHE", l1 * 10.0),
            ("L2D_CACHE", l1), ("PAPI_L2_DCM", l1 / 3.0), ("L2D_CACHE_REFILL", l1 / 4.0),
            ("L2D_CACHE_WB", l1 / 8.0), ("CPU_CYCLES", 1e9), ("INST_SPEC", 8e8),
        ].into_iter().map(|(k, x)| (k.to_string(), x)).collect();
        let a = run("fujitsu-a64fx", Variant::AsPublished, Precision::Dp, &c, time);
        let b = run("fujitsu-a64fx", Variant::Corrected, Precision::Dp, &c, time);
        let flops = v(&a, "flops");
        prop_assert!(close(flops, fixed + 4.0 * scale));
        prop_assert!(close(v(&a, "ai"), 1.0 / (1.0 / v(&a, "flops_per_ld_bytes") + 1.0 / v(&a, "flops_per_st_bytes"))));
        prop_assert!(close(v(&a, "ld_per_st"), v(&a, "flops_per_st_ins") / v(&a, "flops_per_ld_ins")));
        prop_assert!(close(v(&a, "l2_bytes"), 256.0 * l1));
        prop_assert!(close(v(&a, "mem_bytes"), 256.0 * (l1 / 4.0 + l1 / 8.0)));
        // Without scalar-FP loads/stores and with SVE-512 the two readings agree (note 6.3).
        for id in ["ls_bytes", "ld_bytes", "st_bytes", "ai"] {
            if let (Some(x), Some(y)) = (a.value(id), b.value(id)) {
                prop_assert!(close(x, y), "{id}: {x} vs {y}");
            }
        }
        prop_assert!(a.value("l3_bytes").is_none() && a.value("l3_mr").is_none());
    }
}

#[test]
fn a64fx_variants_differ_on_scalar_fp_loads() {
    // Scalar DP FP loads: 4 bytes as published (Alg. 9), 8 bytes corrected.
    let c: Vec<(String, f64)> = [
        ("LD_SPEC", 100.0),
        ("ST_SPEC", 10.0),
        ("ASE_SVE_LD_SPEC", 60.0),
        ("ASE_SVE_ST_SPEC", 10.0),
        ("FP_LD_SPEC", 50.0),
        ("FP_ST_SPEC", 0.0),
    ]
    .into_iter()
    .map(|(k, x)| (k.to_string(), x))
    .collect();
    let a = run(
        "fujitsu-a64fx",
        Variant::AsPublished,
        Precision::Dp,
        &c,
        1.0,
    );
    let b = run("fujitsu-a64fx", Variant::Corrected, Precision::Dp, &c, 1.0);
    // Loads as published: 4*50 + 4*(100-60) + 64*(60-50) = 1000; stores 64*10 = 640.
    assert_eq!(a.value("ls_bytes"), Some(1640.0));
    // Loads corrected: 8*50 + 4*40 + 64*10 = 1200.
    assert_eq!(b.value("ls_bytes"), Some(1840.0));
    // SP doubles the scalar term as published (8 bytes), the corrected SP uses 4.
    let s = run(
        "fujitsu-a64fx",
        Variant::AsPublished,
        Precision::Sp,
        &c,
        1.0,
    );
    assert_eq!(s.value("ls_bytes"), Some(1840.0));
    let s = run("fujitsu-a64fx", Variant::Corrected, Precision::Sp, &c, 1.0);
    assert_eq!(s.value("ls_bytes"), Some(1640.0));
}
