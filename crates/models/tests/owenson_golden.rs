//! Golden tests of seed 003 (Owenson 2020): the worked examples of the research note,
//! section 5 (examples A, B, C), on the Skylake port model of section 5.2.2.

use hpcscope_models::difference::{
    compare, constant_rc, equal_ipc, predict, predict_v1, predict_v2,
};
use hpcscope_models::ports::{ClassCounts, Cpis, PortModel, Scheduler};
use hpcscope_models::strong::{
    ScalingInput, aggregate_error_pct, bsp_loop_time_s, efficiency, halo_time_s, runtime_s,
    speedup, strong_scaling,
};
use hpcscope_test_support::assert_close_abs;

fn named(v: &[(&str, f64)]) -> ClassCounts {
    v.iter().map(|(k, x)| (k.to_string(), *x)).collect()
}

/// Note section 5, example A: assumed fitted CPIs.
fn cpi_a() -> Cpis {
    named(&[
        ("DIV", 8.0),
        ("FAST_DIV", 1.0),
        ("FP_SHUF", 1.0),
        ("LOAD", 1.5),
        ("STORE", 2.0),
        ("FP", 1.5),
        ("SIMD_INT", 1.0),
        ("INT", 1.0),
    ])
}

fn mgcfd_a() -> ClassCounts {
    named(&[
        ("DIV", 13.0),
        ("FP_SHUF", 6.0),
        ("LOAD", 20.0),
        ("STORE", 10.0),
        ("FP", 112.0),
        ("SIMD_INT", 0.0),
        ("INT", 12.0),
    ])
}

fn target_a() -> ClassCounts {
    named(&[
        ("DIV", 6.0),
        ("FP_SHUF", 4.0),
        ("LOAD", 8.0),
        ("STORE", 10.0),
        ("FP", 60.0),
        ("SIMD_INT", 0.0),
        ("INT", 10.0),
    ])
}

#[test]
fn example_a_final_model_eqs_5_8_to_5_11() {
    let sky = PortModel::builtin("skylake").unwrap();
    let p = predict(
        &sky,
        &mgcfd_a(),
        &target_a(),
        &cpi_a(),
        180.0,
        Scheduler::Waterfill,
    )
    .unwrap();
    // C_model,mgcfd = 136 (P0 = P1 = 136 after DIV 104 and FP 168), C_model,target = 69.
    assert_close_abs(p.c_model_proxy, 136.0, 1e-12);
    assert_close_abs(p.c_model_target, 69.0, 1e-12);
    assert_close_abs(p.delta_c, 67.0, 1e-12);
    assert_close_abs(p.c_target, 113.0, 1e-12);
    assert!(p.proxy_allocation.binding_port == "P0" || p.proxy_allocation.binding_port == "P1");
    // The per-port loads of the walk-through: P2 = P3 = 15, P4 = 20, P5 = P6 = 9.
    let port = |n: &str| {
        p.proxy_allocation
            .port_cycles
            .iter()
            .find(|x| x.0 == n)
            .unwrap()
            .1
    };
    assert_close_abs(port("P2"), 15.0, 1e-12);
    assert_close_abs(port("P4"), 20.0, 1e-12);
    assert_close_abs(port("P5"), 9.0, 1e-12);
    assert_close_abs(port("P6"), 9.0, 1e-12);
    let tp = |n: &str| {
        p.target_allocation
            .port_cycles
            .iter()
            .find(|x| x.0 == n)
            .unwrap()
            .1
    };
    assert_close_abs(tp("P5"), 7.0, 1e-12);
    assert_close_abs(tp("P6"), 7.0, 1e-12);
}

#[test]
fn example_a_baselines_and_v1_v2() {
    let sky = PortModel::builtin("skylake").unwrap();
    // Equal IPC: I = 173 and 98 -> 98 x 180 / 173 = 101.97.
    assert_close_abs(
        equal_ipc(&mgcfd_a(), &target_a(), 180.0).unwrap(),
        98.0 * 180.0 / 173.0,
        1e-9,
    );
    assert_close_abs(
        equal_ipc(&mgcfd_a(), &target_a(), 180.0).unwrap(),
        101.97,
        0.005,
    );
    // Constant R_c = 0.60 -> 108.0.
    assert_close_abs(constant_rc(180.0, 0.60).unwrap(), 108.0, 1e-9);
    // v1 (eq. 5.4): max{LT 56, HT 78, INT 2, LOAD 18, STORE 0} = 78 -> 102.
    assert_close_abs(
        predict_v1(&sky, &mgcfd_a(), &target_a(), &cpi_a(), 180.0).unwrap(),
        102.0,
        1e-12,
    );
    // v2 (eq. 5.7) on dI: DIV 56 on P0, FP 78 -> P0 = P1 = 67 -> dC = 67 -> 113.
    assert_close_abs(
        predict_v2(
            &sky,
            &mgcfd_a(),
            &target_a(),
            &cpi_a(),
            180.0,
            Scheduler::Waterfill,
        )
        .unwrap(),
        113.0,
        1e-12,
    );
    let c = compare(
        &sky,
        &mgcfd_a(),
        &target_a(),
        &cpi_a(),
        180.0,
        Some(0.6),
        Scheduler::Waterfill,
    )
    .unwrap();
    assert_close_abs(c.final_model.c_target, 113.0, 1e-12);
    assert_close_abs(c.constant_rc.unwrap(), 108.0, 1e-9);
}

#[test]
fn example_b_counter_example_needs_the_final_form() {
    // Note section 5, example B (thesis section 5.2.3's counter-example 1, made numeric):
    // a DIV-bound kernel loses one FP instruction; port 1 is under-used, so nothing changes.
    let sky = PortModel::builtin("skylake").unwrap();
    let proxy = named(&[("DIV", 20.0), ("FP", 40.0)]);
    let target = named(&[("DIV", 20.0), ("FP", 39.0)]);
    let p = predict(&sky, &proxy, &target, &cpi_a(), 200.0, Scheduler::Waterfill).unwrap();
    assert_close_abs(p.c_model_proxy, 160.0, 1e-12);
    assert_close_abs(p.c_model_target, 160.0, 1e-12);
    assert_close_abs(p.delta_c, 0.0, 1e-12); // eq. 5.10: correct
    // Eq. 5.7 on dI = {FP: 1}: 1.5 split over P0/P1 -> dC = 0.75 (wrong).
    assert_close_abs(
        200.0 - predict_v2(&sky, &proxy, &target, &cpi_a(), 200.0, Scheduler::Waterfill).unwrap(),
        0.75,
        1e-12,
    );
    // Eq. 5.4: dC = 1.5 (wrong).
    assert_close_abs(
        200.0 - predict_v1(&sky, &proxy, &target, &cpi_a(), 200.0).unwrap(),
        1.5,
        1e-12,
    );
}

#[test]
fn greedy_ext_scheduler_matches_waterfill_on_example_a() {
    let sky = PortModel::builtin("skylake").unwrap();
    let p = predict(
        &sky,
        &mgcfd_a(),
        &target_a(),
        &cpi_a(),
        180.0,
        Scheduler::GreedyExt,
    )
    .unwrap();
    assert_close_abs(p.c_target, 113.0, 1e-12);
}

#[test]
fn example_c_runtime_clock_memory_cap() {
    // Note section 5, example C: 305,000 iterations per thread, C_g = 113.
    let iters = 305_000.0;
    assert_close_abs(113.0 * iters, 34_465_000.0, 1e-6);
    assert_close_abs(runtime_s(113.0, &[iters], 2.99e9).unwrap(), 0.011527, 5e-7);
    assert_close_abs(runtime_s(113.0, &[iters], 3.19e9).unwrap(), 0.010804, 5e-7);
    assert_close_abs(runtime_s(113.0, &[iters], 2.08e9).unwrap(), 0.016570, 5e-7);
    // Eq. 5.2 takes the slowest thread.
    assert_close_abs(
        runtime_s(113.0, &[1.0, iters, 2.0], 2.99e9).unwrap(),
        0.011527,
        5e-7,
    );
    let s = strong_scaling(
        113.0,
        &[
            ScalingInput {
                threads: 28,
                clock_hz: 2.08e9,
                iters,
                memory_s: 0.0200,
                stall_cycles: 0.0,
            },
            ScalingInput {
                threads: 1,
                clock_hz: 3.19e9,
                iters,
                memory_s: 0.004,
                stall_cycles: 0.0,
            },
        ],
    )
    .unwrap();
    assert_eq!(s.points[0].threads, 1);
    assert!(!s.points[0].memory_bound);
    assert_close_abs(s.points[0].predicted_s, 0.010804, 5e-7);
    assert!(s.points[1].memory_bound);
    assert_close_abs(s.points[1].predicted_s, 0.0200, 1e-12);
    assert_eq!(s.memory_bound_from, Some(28));
    // Frequency drop, Broadwell: (3.19 - 2.08) / 3.19 = 34.8 %.
    assert_close_abs((3.19 - 2.08) / 3.19 * 100.0, 34.8, 0.05);
}

#[test]
fn example_c_bsp_eqs_3_1_and_3_2() {
    let c = halo_time_s(2e-6, 1e-10, 500.0, 40.0);
    assert_close_abs(c, 4.0e-6, 1e-18);
    assert_close_abs(bsp_loop_time_s(10_000.0, 500.0, 1e-6, c), 0.0105, 1e-15);
}

#[test]
fn example_c_error_metric_eq_5_13_and_efficiency() {
    let actual = vec![vec![10.0, 12.0], vec![3.0, 4.0]];
    let pred = vec![vec![11.0, 11.0], vec![3.3, 3.6]];
    assert_close_abs(
        aggregate_error_pct(&actual, &pred).unwrap(),
        2.7 / 29.0 * 100.0,
        1e-9,
    );
    assert_close_abs(aggregate_error_pct(&actual, &pred).unwrap(), 9.31, 0.005);
    assert_close_abs(speedup(100.0, 20.0), 5.0, 1e-12);
    assert_close_abs(efficiency(100.0, 20.0, 8.0), 0.625, 1e-12);
}

#[test]
fn error_statistics_are_absolute() {
    // Table 5.2 reports mean, SD and max of absolute errors; the signed mean is kept apart.
    let s = hpcscope_models::strong::error_stats(&[(110.0, 100.0), (90.0, 100.0), (130.0, 100.0)])
        .unwrap();
    assert_close_abs(s.mean_pct, 50.0 / 3.0, 1e-9);
    assert_close_abs(s.max_pct, 30.0, 1e-9);
    assert_close_abs(s.mean_signed_pct, 10.0, 1e-9);
    assert_close_abs(
        s.sd_pct,
        ((10.0f64 - 50.0 / 3.0).powi(2) * 2.0 + (30.0f64 - 50.0 / 3.0).powi(2)).sqrt()
            / 2f64.sqrt(),
        1e-9,
    );
}

#[test]
fn vectorisation_ratios_section_3_8() {
    // Note section 3.8 consistency checks: 4 x 269 / 626 = 1.72, the reported ~1.7x.
    assert_close_abs(4.0 * 269.0 / 626.0, 1.72, 0.005);
    assert_close_abs(152.0 / 112.0, 1.36, 0.005);
    assert_close_abs(595.0 / 269.0, 2.21, 0.005);
}

#[test]
fn eq_5_12_stalled_cycles_correct_the_compute_prediction_near_saturation() {
    use hpcscope_models::strong::stall_cycles;
    // A low flop/byte proxy at 1, 2, 4 and 8 threads: 10 cycles per iteration alone, rising
    // as memory saturates. S_g,t = C_g,t - C_g.
    let s = stall_cycles(&[(4, 12.0), (1, 10.0), (2, 10.5), (8, 16.0)]).unwrap();
    assert_eq!(s, vec![(1, 0.0), (2, 0.5), (4, 2.0), (8, 6.0)]);
    // Added to the target's C_g = 100 at 4 threads: (100 + 2) x 1e6 iterations at 2 GHz.
    let p = strong_scaling(
        100.0,
        &[ScalingInput {
            threads: 4,
            clock_hz: 2e9,
            iters: 1e6,
            memory_s: 0.01,
            stall_cycles: s[2].1,
        }],
    )
    .unwrap();
    assert_close_abs(p.points[0].compute_s, 0.051, 1e-15);
    assert_eq!(p.points[0].stall_cycles, 2.0);
    // C_g must be the single-thread value.
    let e = stall_cycles(&[(2, 10.5), (4, 12.0)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("single-thread"), "{e}");
    assert!(stall_cycles(&[(1, 10.0), (2, f64::NAN)]).is_err());
}
