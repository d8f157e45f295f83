//! The strong-scaling pipeline, the error statistics and kernel selection of seed 003
//! (Owenson 2020) against the thesis's own numbers and the research note's worked examples
//! (section 5, example C), which follow the thesis's equations.

use hpcscope_models::difference::{compare, validate};
use hpcscope_models::kernel::{spills, with_spills};
use hpcscope_models::ports::{PortModel, Scheduler};
use hpcscope_models::strong::{
    Halo, Measured, PartitionRow, bsp_run, inputs_from_measured, strong_scaling,
};
use hpcscope_test_support::assert_close_abs;

fn row(level: u32, rank: u32, ni: f64, nd: f64, actual: Option<f64>) -> PartitionRow {
    PartitionRow {
        ranks: 2,
        level,
        rank,
        n_independent: ni,
        n_dependent: nd,
        actual_s: actual,
    }
}

#[test]
fn eq_3_1_and_3_2_bsp_over_a_partition_example_c() {
    // N_i = 10,000, N_d = 500, W_g = 1 us (1000 cycles at 1 GHz), alpha = 2 us,
    // beta = 1e-10 s/B, B = 40 B: C = 4 us, W = max(10 ms, 4 us) + 0.5 ms = 10.5 ms.
    let m = Measured {
        threads: 1,
        clock_hz: 1e9,
        memory_s_per_iter: 1e-9,
    };
    let halo = Halo {
        alpha_s: 2e-6,
        beta_s_per_byte: 1e-10,
        bytes_per_element: 40.0,
    };
    let r = bsp_run(1000.0, &m, &halo, &[row(0, 0, 10_000.0, 500.0, None)]).unwrap();
    assert_close_abs(r.cells[0].halo_s, 4.0e-6, 1e-18);
    assert_close_abs(r.total_s, 0.0105, 1e-15);
    assert!(!r.memory_bound);
    assert_eq!(r.error_pct, None);
    // The memory benchmark caps the grind time: 2 us per element when it is slower.
    let slow = Measured {
        memory_s_per_iter: 2e-6,
        ..m
    };
    let r = bsp_run(1000.0, &slow, &halo, &[row(0, 0, 10_000.0, 500.0, None)]).unwrap();
    assert!(r.memory_bound);
    assert_close_abs(r.total_s, 0.021, 1e-15);
}

#[test]
fn eq_5_13_over_levels_and_ranks_example_c() {
    // Actual V = [[10, 12], [3, 4]], predicted [[11, 11], [3.3, 3.6]]: 2.7 / 29 = 9.31 %.
    // 1 us per element and no halo cost make the prediction (N_i + N_d) x 1 us.
    let m = Measured {
        threads: 2,
        clock_hz: 1e9,
        memory_s_per_iter: 0.0,
    };
    let halo = Halo {
        alpha_s: 0.0,
        beta_s_per_byte: 0.0,
        bytes_per_element: 0.0,
    };
    let rows = [
        row(0, 0, 11e6, 0.0, Some(10.0)),
        row(0, 1, 10e6, 1e6, Some(12.0)),
        row(1, 0, 3.3e6, 0.0, Some(3.0)),
        row(1, 1, 3.6e6, 0.0, Some(4.0)),
    ];
    let r = bsp_run(1000.0, &m, &halo, &rows).unwrap();
    assert_close_abs(r.error_pct.unwrap(), 2.7 / 29.0 * 100.0, 1e-9);
    assert_close_abs(r.error_pct.unwrap(), 9.31, 0.005);
    // BSP: each level costs its slowest rank.
    assert_close_abs(r.total_s, 11.0 + 3.6, 1e-9);
}

#[test]
fn eq_5_2_measured_clock_broadwell_3_19_to_2_08_ghz() {
    // Section 5.5.1: MG-CFD runs at 3.19 GHz on one Broadwell core and 2.08 GHz on all 28;
    // the same cycles take 3.19 / 2.08 = 1.534x as long (a 34.8 % clock drop).
    let measured = [
        Measured {
            threads: 1,
            clock_hz: 3.19e9,
            memory_s_per_iter: 1e-9,
        },
        Measured {
            threads: 28,
            clock_hz: 2.08e9,
            memory_s_per_iter: 1e-9,
        },
    ];
    let inputs = inputs_from_measured(&measured, |_| 305_000.0).unwrap();
    let s = strong_scaling(113.0, &inputs).unwrap();
    assert_close_abs(s.points[0].compute_s, 0.010804, 5e-7);
    assert_close_abs(s.points[1].compute_s, 0.016570, 5e-7);
    assert_close_abs(
        s.points[1].compute_s / s.points[0].compute_s,
        3.19 / 2.08,
        1e-12,
    );
    assert_close_abs((1.0 - 2.08 / 3.19) * 100.0, 34.8, 0.05);
    // The memory time is the DT time per iteration times the iterations.
    assert_close_abs(s.points[0].memory_s, 305_000.0 * 1e-9, 1e-15);
    assert!(inputs_from_measured(&measured, |_| 0.0).is_err());
}

#[test]
fn table_5_2_statistics_of_every_model_side_by_side() {
    // Example A's proxy and target (C_target = 113 by eq. 5.11, 102 by v1, 108 by R_c =
    // 0.6, 101.97 by equal IPC), "measured" at 120 and at 100 cycles.
    let sky = PortModel::builtin("skylake").unwrap();
    let m = |kv: &[(&str, f64)]| kv.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let cpi = m(&[
        ("DIV", 8.0),
        ("FAST_DIV", 1.0),
        ("FP_SHUF", 1.0),
        ("LOAD", 1.5),
        ("STORE", 2.0),
        ("FP", 1.5),
        ("SIMD_INT", 1.0),
        ("INT", 1.0),
    ]);
    let proxy = m(&[
        ("DIV", 13.0),
        ("FP_SHUF", 6.0),
        ("LOAD", 20.0),
        ("STORE", 10.0),
        ("FP", 112.0),
        ("INT", 12.0),
    ]);
    let target = m(&[
        ("DIV", 6.0),
        ("FP_SHUF", 4.0),
        ("LOAD", 8.0),
        ("STORE", 10.0),
        ("FP", 60.0),
        ("INT", 10.0),
    ]);
    let c = compare(
        &sky,
        &proxy,
        &target,
        &cpi,
        180.0,
        Some(0.6),
        Scheduler::Waterfill,
    )
    .unwrap();
    let v = validate(&[("a".into(), c.clone(), 120.0), ("b".into(), c, 100.0)]).unwrap();
    let names: Vec<&str> = v.models.iter().map(|x| x.model.as_str()).collect();
    assert_eq!(
        names,
        ["difference", "v1", "v2", "equal_ipc", "constant_rc"]
    );
    let d = &v.models[0];
    assert_close_abs(d.errors_pct[0], (113.0 - 120.0) / 120.0 * 100.0, 1e-9);
    assert_close_abs(d.errors_pct[1], 13.0, 1e-9);
    let mean = (7.0 / 1.2 + 13.0) / 2.0;
    assert_close_abs(d.stats.mean_pct, mean, 1e-9);
    assert_close_abs(d.stats.max_pct, 13.0, 1e-9);
    assert_close_abs(
        d.stats.sd_pct,
        (((7.0 / 1.2 - mean).powi(2) + (13.0 - mean).powi(2)) / 1.0).sqrt(),
        1e-9,
    );
    let rc = &v.models[4];
    assert_close_abs(rc.errors_pct[0], -10.0, 1e-9);
    assert_close_abs(rc.errors_pct[1], 8.0, 1e-9);
    assert!(validate(&[]).is_err());
}

#[test]
fn section_5_3_spills_beyond_the_minimum_mgcfd_flux_loads() {
    // The MG-CFD flux loop needs 2 nodes x 5 variables + a 3-D edge vector + 2 node ids =
    // 15 loads; a loop with 20 has 5 spill loads, the LOAD count the model takes.
    let counts = [("LOAD", 20.0), ("STORE", 10.0), ("FP", 112.0)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    let s = spills(&counts, 15.0, 10.0).unwrap();
    assert_eq!((s.spill_loads, s.spill_stores), (5.0, 0.0));
    let c = with_spills(&counts, &s);
    assert_eq!((c["LOAD"], c["STORE"], c["FP"]), (5.0, 0.0, 112.0));
    let e = spills(&counts, 22.0, 0.0).unwrap_err();
    assert!(e.to_string().contains("fewer than the minimum 22"), "{e}");
}
