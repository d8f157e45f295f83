//! Property tests of the projection model (002 notes section 6; 000 notes section 6.4).

use hpcscope_core::library::builtin;
use hpcscope_core::profile::{
    AppMetrics, bytes_from_global, bytes_from_local, global_from_bytes, global_from_local,
    local_from_bytes, local_from_global,
};
use hpcscope_core::project::{Method, Options, PairRule, Side, project};
use hpcscope_core::roofline::{Scope, weighted_bandwidth};
use hpcscope_core::{Machine, Precision};
use proptest::prelude::*;

fn app(flops: f64, fpi: f64, bytes: Vec<f64>) -> AppMetrics {
    AppMetrics {
        flops,
        fp_instructions: flops / fpi,
        levels: vec!["L1".into(), "L2".into(), "MM".into()],
        bytes,
        time_s: None,
    }
}

fn arb_app() -> impl Strategy<Value = AppMetrics> {
    (
        1e6f64..1e12,
        1.0f64..4.0,
        1e6f64..1e13,
        0.0f64..1.0,
        0.0f64..1.0,
    )
        .prop_map(|(f, fpi, b, h1, h2)| app(f, fpi, bytes_from_local(b, &[h1, h2], 3)))
}

fn arb_machine() -> impl Strategy<Value = Machine> {
    (1.0f64..100.0, 1.0f64..200.0, 1.0f64..200.0, 1.0f64..200.0).prop_map(|(p, a, b, c)| {
        let mut m = builtin("thunderx2").unwrap();
        m.peaks[0].core_gflops = Some(p);
        m.levels[0].core_gbs = Some(a);
        m.levels[1].core_gbs = Some(b);
        m.levels[2].core_gbs = Some(c);
        m
    })
}

fn proj(
    sm: &Machine,
    s: &AppMetrics,
    perf: f64,
    tm: &Machine,
    t: &AppMetrics,
    rule: PairRule,
    scope: Scope,
) -> hpcscope_core::project::Projection {
    let ss = [s.clone()];
    let tt = [t.clone()];
    project(
        Side {
            machine: sm,
            threads: &ss,
            origin: "s",
        },
        perf,
        Side {
            machine: tm,
            threads: &tt,
            origin: "t",
        },
        Precision::F64,
        Options {
            pair_rule: rule,
            method: Method::Weighted,
            scope,
        },
    )
    .unwrap()
}

use hpcscope_test_support::rel_err as rel;

proptest! {
    #[test]
    fn identity_gives_measured_value_everywhere(m in arb_machine(), a in arb_app(), perf in 0.01f64..50.0) {
        for rule in [PairRule::UpperTriangular, PairRule::Diagonal, PairRule::All] {
            for scope in [Scope::Core, Scope::Node] {
                let p = proj(&m, &a, perf, &m, &a, rule, scope);
                let pts: Vec<f64> = if p.points.is_empty() { p.threads[0].points.iter().map(|x| x.gflops).collect() } else { p.points.iter().map(|x| x.gflops).collect() };
                for g in pts { prop_assert!(rel(g, perf) < 1e-9, "{g} vs {perf}"); }
            }
        }
    }

    #[test]
    fn all_compute_bound_collapses_to_peak_ratio(sm in arb_machine(), tm in arb_machine(), fpi_s in 1.0f64..4.0, fpi_t in 1.0f64..4.0, perf in 0.01f64..50.0) {
        // Huge OIs: every point compute-bound on both sides.
        let s = app(1e15, fpi_s, vec![1.0, 1.0, 1.0]);
        let t = app(1e15, fpi_t, vec![1.0, 1.0, 1.0]);
        let p = proj(&sm, &s, perf, &tm, &t, PairRule::UpperTriangular, Scope::Core);
        let expected = perf * p.target_ceiling_gflops / p.source_ceiling_gflops;
        prop_assert!(rel(p.interval.lo, expected) < 1e-9);
        prop_assert!(rel(p.interval.hi, expected) < 1e-9);
    }

    #[test]
    fn more_target_bandwidth_never_lowers_a_point(sm in arb_machine(), tm in arb_machine(), s in arb_app(), t in arb_app(), level in 0usize..3, factor in 1.0f64..10.0, perf in 0.01f64..50.0) {
        let mut faster = tm.clone();
        faster.levels[level].core_gbs = faster.levels[level].core_gbs.map(|x| x * factor);
        for scope in [Scope::Core, Scope::Node] {
            let a = proj(&sm, &s, perf, &tm, &t, PairRule::All, scope);
            let b = proj(&sm, &s, perf, &faster, &t, PairRule::All, scope);
            let pa: Vec<f64> = if a.points.is_empty() { a.threads[0].points.iter().map(|x| x.gflops).collect() } else { a.points.iter().map(|x| x.gflops).collect() };
            let pb: Vec<f64> = if b.points.is_empty() { b.threads[0].points.iter().map(|x| x.gflops).collect() } else { b.points.iter().map(|x| x.gflops).collect() };
            for (x, y) in pa.iter().zip(&pb) { prop_assert!(*y >= *x * (1.0 - 1e-12), "{y} < {x}"); }
        }
    }

    #[test]
    fn projection_is_linear_in_source_performance(sm in arb_machine(), tm in arb_machine(), s in arb_app(), t in arb_app(), perf in 0.01f64..50.0, k in 0.1f64..10.0) {
        let a = proj(&sm, &s, perf, &tm, &t, PairRule::UpperTriangular, Scope::Core);
        let b = proj(&sm, &s, perf * k, &tm, &t, PairRule::UpperTriangular, Scope::Core);
        prop_assert!(rel(b.interval.lo, a.interval.lo * k) < 1e-9);
        prop_assert!(rel(b.interval.hi, a.interval.hi * k) < 1e-9);
        prop_assert!(a.interval.lo <= a.interval.hi);
    }

    #[test]
    fn memory_swap_changes_only_memory_roofline_pairs(m in arb_machine(), a in arb_app(), perf in 0.01f64..50.0, bw in 1.0f64..1000.0) {
        let mut hbm = m.clone();
        hbm.levels[2].core_gbs = Some(bw);
        let p = proj(&m, &a, perf, &hbm, &a, PairRule::UpperTriangular, Scope::Core);
        for pt in &p.points {
            if pt.roof_level != "MM" { prop_assert!(rel(pt.gflops, perf) < 1e-9); }
        }
    }

    #[test]
    fn hit_ratio_conversions_round_trip(total in 1.0f64..1e15, h1 in 0.0f64..1.0, h2 in 0.0f64..1.0, h3 in 0.0f64..1.0) {
        let local = [h1, h2, h3];
        let bytes = bytes_from_local(total, &local, 4);
        prop_assert!(rel(bytes.iter().sum::<f64>(), total) < 1e-12);
        let g = global_from_bytes(&bytes);
        prop_assert!((g.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let back = bytes_from_global(total, &g);
        for (x, y) in back.iter().zip(&bytes) { prop_assert!((x - y).abs() <= 1e-9 * total); }
        let l2 = local_from_bytes(&bytes);
        // Local ratios are recovered wherever something reaches the level.
        let mut reaching = total;
        for i in 0..3 {
            if reaching > 1e-6 * total { prop_assert!((l2[i] - local[i]).abs() < 1e-9, "{i}: {} vs {}", l2[i], local[i]); }
            reaching *= 1.0 - local[i];
        }
        let g2 = global_from_local(&local, 4);
        for (x, y) in g2.iter().zip(&g) { prop_assert!((x - y).abs() < 1e-12); }
        let l3 = local_from_global(&g2);
        for (x, y) in l3.iter().zip(&l2) { prop_assert!((x - y).abs() < 1e-9); }
    }

    #[test]
    fn weighted_bandwidth_lies_between_min_and_max(a in prop::collection::vec(0.0f64..1.0, 4), bw in prop::collection::vec(1.0f64..1000.0, 4)) {
        let w = weighted_bandwidth(&a, &bw);
        for k in 0..4 {
            let lo = bw[k..].iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = bw[k..].iter().cloned().fold(0.0, f64::max);
            prop_assert!(w[k] >= lo * (1.0 - 1e-12) && w[k] <= hi * (1.0 + 1e-12));
        }
    }

    #[test]
    fn vector_length_rule_keeps_instruction_throughput(m in arb_machine(), vl in prop::sample::select(vec![128u32, 256, 512, 1024, 2048])) {
        use hpcscope_core::explore::{Transform, apply};
        let t = apply(&m, &Transform::VectorBits(vl), &|_| unreachable!()).unwrap();
        let before = m.peaks[0].core_gflops.unwrap() / (2.0 * f64::from(m.vector_bits) / 64.0);
        let after = t.peaks[0].core_gflops.unwrap() / (2.0 * f64::from(vl) / 64.0);
        prop_assert!(rel(after, before) < 1e-12);
    }
}
