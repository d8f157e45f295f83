//! Golden tests of seed 004 (Wang 2023): POP metrics (research note section 6.7, eqs. 3.7 to
//! 3.16), the eq. 3.2 projection and alpha fit (section 6.8), the eq. 3.3 composition with a
//! Hockney fit (section 6.9).

use hpcscope_models::pop::{
    compose, fit_decomposition, fit_hockney, hybrid_efficiency, pop_metrics, project_ratio,
};

#[test]
fn pop_section_6_7_eqs_3_7_to_3_13() {
    let m = pop_metrics(&[8.0, 7.0, 6.0, 9.0], 10.0, Some(&[14.0, 14.0]), None).unwrap();
    assert_close_abs(m.parallel_efficiency, 0.75, 1e-12); // eq. 3.7
    assert_close_abs(m.load_balance, 7.5 / 9.0, 1e-12); // eq. 3.8 = 0.8333
    assert_close_abs(m.communication_efficiency, 0.90, 1e-12); // eq. 3.9
    // The identity: load balance x communication efficiency = parallel efficiency.
    assert_close_abs(
        m.load_balance * m.communication_efficiency,
        m.parallel_efficiency,
        1e-12,
    );
    assert_close_abs(m.strong_scaling.unwrap(), 28.0 / 30.0, 1e-12); // eq. 3.10 = 0.9333
    assert_close_abs(m.global_efficiency.unwrap(), 0.70, 1e-12); // eq. 3.13
    // Eq. 3.11 with a weak-scaling reference of average 7.0: 7.0/7.5.
    let w = pop_metrics(
        &[8.0, 7.0, 6.0, 9.0],
        10.0,
        Some(&[7.0, 7.0, 7.0, 7.0]),
        None,
    )
    .unwrap();
    assert_close_abs(w.weak_scaling.unwrap(), 7.0 / 7.5, 1e-12);
    // Eq. 3.12 with factors 0.98 x 0.95 x 1.00 = 0.931.
    let f = pop_metrics(&[8.0, 7.0, 6.0, 9.0], 10.0, None, Some((0.98, 0.95, 1.0))).unwrap();
    assert_close_abs(f.computation_scaling.unwrap(), 0.931, 1e-12);
}

#[test]
fn pop_hybrid_eqs_3_14_to_3_16() {
    let h = hybrid_efficiency(&[9.0, 7.0, 8.4, 4.4], &[9.0, 8.6], 10.0).unwrap();
    assert_close_abs(h.hybrid_parallel_efficiency, 0.72, 1e-12);
    assert_close_abs(h.mpi_efficiency, 0.88, 1e-12);
    assert_close_abs(h.openmp_efficiency, 0.72 / 0.88, 1e-12);
    assert_close_abs(
        h.mpi_efficiency * h.openmp_efficiency,
        h.hybrid_parallel_efficiency,
        1e-12,
    ); // eq. 3.14
}

#[test]
fn pop_rejects_comp_above_runtime() {
    assert!(pop_metrics(&[11.0], 10.0, None, None).is_err());
    assert!(pop_metrics(&[], 10.0, None, None).is_err());
}

#[test]
fn projection_eq_3_2_section_6_8() {
    // alpha from Table 4.5's profile shares: MPI 0.333, CPU 0.468, BW 0.199.
    let alpha = [0.333, 0.468, 0.199];
    let r = project_ratio(&alpha, &[1.0, 3312.0 / 2797.0, 1.0]);
    assert_close_abs(r, 1.086171, 5e-7);
}

#[test]
fn alpha_fit_eq_3_2_section_6_8() {
    let terms: Vec<String> = ["NB", "f", "BW"].iter().map(|s| s.to_string()).collect();
    let x = vec![
        vec![1.0, 1.0, 1.0],
        vec![2.0, 1.0, 1.0],
        vec![1.0, 1.184126, 1.0],
        vec![1.0, 1.0, 1.5],
    ];
    let y = [1.0, 1.333, 1.086171, 1.0995];
    let d = fit_decomposition(&terms, &x, &y).unwrap();
    assert_close_abs(d.alpha[0], 0.333, 1e-5);
    assert_close_abs(d.alpha[1], 0.468, 1e-5);
    assert_close_abs(d.alpha[2], 0.199, 1e-5);
    assert_close_abs(d.alpha_sum, 1.0, 1e-5);
    assert!(d.r2 > 0.999_999);
    // With +-0.5 % multiplicative noise the weights stay within 0.02.
    let noise = [0.004, -0.005, 0.003, -0.002];
    let yn: Vec<f64> = y.iter().zip(noise).map(|(v, e)| v * (1.0 + e)).collect();
    let dn = fit_decomposition(&terms, &x, &yn).unwrap();
    for (a, b) in dn.alpha.iter().zip([0.333, 0.468, 0.199]) {
        assert!((a - b).abs() < 0.02, "{:?}", dn.alpha);
    }
    assert!(fit_decomposition(&terms, &x[..2], &y[..2]).is_err());
}

#[test]
fn composition_eq_3_3_section_6_9() {
    // Hockney fit on Table 4.6's Sendrecv t_avg, rows >= 1024 B.
    let rows = [
        (1024.0, 6.10),
        (2048.0, 11.39),
        (4096.0, 22.08),
        (8192.0, 43.32),
        (16384.0, 86.17),
        (32768.0, 172.19),
        (65536.0, 331.48),
        (131072.0, 686.36),
        (262144.0, 1369.50),
        (524288.0, 2725.52),
        (1048576.0, 5433.15),
        (2097152.0, 10872.46),
        (4194304.0, 21770.60),
    ];
    let h = fit_hockney(&rows).unwrap();
    assert_close_abs(h.t0, 0.5896, 0.01);
    assert_close_abs(h.per_byte, 0.0051889, 2e-7);
    let t_mpi = 100.0 * (h.t0 + 4_194_304.0 * h.per_byte) * 1e-6;
    assert_close_abs(t_mpi, 2.1765, 5e-4);
    let c = compose(10.0, 5.0e10 / 25e9, 1.0e9 / 7.7637e9, t_mpi, 0.0, 5.0);
    assert_close_abs(c.kernel_s, 4.3053, 5e-4);
    assert_close_abs(c.total_s, 48.05, 0.01);
}

use hpcscope_models::pop::{CounterSums, computation_factors};
use hpcscope_test_support::assert_close_abs;

#[test]
fn eq_3_12_factors_multiply_to_eq_3_10_section_6_7_and_table_4_1_clocks() {
    // The section 6.7 runs: sum(comp) 30 s against a reference of 28 s (eq. 3.10 = 0.9333).
    // The reference computes on the EPYC 7H12 clock of Table 4.1 (3312 MHz) at the IPC of
    // section 6.11 (2.0e9 instructions in 1.6e9 cycles = 1.25); the run on the Xeon Gold
    // 5320 clock (2797 MHz) with 2 % more instructions.
    let reference = CounterSums {
        comp_s: 28.0,
        cycles: 28.0 * 3.312e9,
        instructions: 1.25 * 28.0 * 3.312e9,
    };
    let run = CounterSums {
        comp_s: 30.0,
        cycles: 30.0 * 2.797e9,
        instructions: 1.02 * reference.instructions,
    };
    let f = computation_factors(&run, &reference).unwrap();
    assert_close_abs(f.instruction, 1.0 / 1.02, 1e-12);
    assert_close_abs(f.frequency, 2797.0 / 3312.0, 1e-12); // 0.8445: Table 4.1's clocks
    assert_close_abs(f.frequency_ghz, 2.797, 1e-9);
    assert_close_abs(f.frequency_reference_ghz, 3.312, 1e-9);
    assert_close_abs(f.ipc_reference, 1.25, 1e-12); // section 6.11: IPC = 2.0e9 / 1.6e9
    // Eq. 3.12 = eq. 3.10 whatever the split.
    assert_close_abs(f.product(), 28.0 / 30.0, 1e-12);
    let m = pop_metrics(
        &[8.0, 7.0, 6.0, 9.0],
        10.0,
        Some(&[14.0, 14.0]),
        Some((f.instruction, f.ipc, f.frequency)),
    )
    .unwrap();
    assert_close_abs(
        m.computation_scaling.unwrap(),
        m.strong_scaling.unwrap(),
        1e-12,
    );
    assert_close_abs(m.global_efficiency.unwrap(), 0.70, 1e-12); // eq. 3.13, section 6.7
}

#[test]
fn eq_3_12_against_itself_and_section_6_11_cpu_time() {
    // Section 6.11: 1.6e9 cycles at 3.312 GHz are 0.48309 s of CPU time (eq. 3.4, divided).
    let comp = 1.6e9 / 3.312e9;
    assert_close_abs(comp, 0.48309, 5e-6);
    let c = CounterSums {
        comp_s: comp,
        instructions: 2.0e9,
        cycles: 1.6e9,
    };
    let f = computation_factors(&c, &c).unwrap();
    assert_close_abs(f.product(), 1.0, 1e-12);
    assert_close_abs(f.frequency_ghz, 3.312, 1e-9);
    let bad = CounterSums { cycles: 0.0, ..c };
    let e = computation_factors(&bad, &c).unwrap_err().to_string();
    assert!(e.contains("cycles"), "{e}");
}
