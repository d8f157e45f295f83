//! Invariants of the port model, the difference model and the POP metrics.

use hpcscope_models::difference::predict;
use hpcscope_models::pop::pop_metrics;
use hpcscope_models::ports::{ClassCounts, Cpis, PortModel, Scheduler};
use proptest::prelude::*;

const CLASSES: [&str; 8] = [
    "DIV", "FAST_DIV", "FP_SHUF", "LOAD", "STORE", "FP", "SIMD_INT", "INT",
];

fn counts() -> impl Strategy<Value = ClassCounts> {
    prop::collection::vec(0.0f64..100.0, 8).prop_map(|v| {
        CLASSES
            .iter()
            .zip(v)
            .map(|(k, x)| (k.to_string(), x.round()))
            .collect()
    })
}

fn cpis() -> impl Strategy<Value = Cpis> {
    prop::collection::vec(1.0f64..10.0, 8).prop_map(|v| {
        CLASSES
            .iter()
            .zip(v)
            .map(|(k, x)| (k.to_string(), x))
            .collect()
    })
}

proptest! {
    #[test]
    fn a_code_predicts_itself(c in counts(), cpi in cpis(), measured in 1.0f64..1000.0) {
        // Same proxy and target: dC = 0, the prediction is the measurement (eq. 5.10/5.11).
        for id in ["skylake", "skylake-avx512", "sapphirerapids"] {
            let m = PortModel::builtin(id).unwrap();
            let p = predict(&m, &c, &c, &cpi, measured, Scheduler::Waterfill).unwrap();
            prop_assert!((p.c_target - measured).abs() < 1e-9);
        }
    }

    #[test]
    fn placement_conserves_cycles_and_bounds_the_busiest_port(c in counts(), cpi in cpis()) {
        let m = PortModel::builtin("skylake").unwrap();
        for s in [Scheduler::Waterfill, Scheduler::GreedyExt] {
            let a = m.allocate(&c, &cpi, s).unwrap();
            let placed: f64 = a.port_cycles.iter().map(|p| p.1).sum();
            let wanted: f64 = CLASSES.iter().map(|k| c[*k] * cpi[*k]).sum();
            prop_assert!((placed - wanted).abs() < 1e-6 * wanted.max(1.0));
            // The busiest port carries at least the average and at least DIV's dedicated load.
            prop_assert!(a.cycles >= wanted / m.ports.len() as f64 - 1e-9);
            prop_assert!(a.cycles >= c["DIV"] * cpi["DIV"] - 1e-9);
        }
    }

    #[test]
    fn more_instructions_never_take_fewer_cycles(c in counts(), cpi in cpis(), k in 0usize..8, extra in 1.0f64..50.0) {
        let m = PortModel::builtin("skylake").unwrap();
        let base = m.allocate(&c, &cpi, Scheduler::Waterfill).unwrap().cycles;
        let mut more = c.clone();
        *more.get_mut(CLASSES[k]).unwrap() += extra;
        let grown = m.allocate(&more, &cpi, Scheduler::Waterfill).unwrap().cycles;
        prop_assert!(grown >= base - 1e-9);
    }

    #[test]
    fn load_balance_times_communication_is_parallel_efficiency(comp in prop::collection::vec(0.1f64..10.0, 1..64), slack in 0.0f64..5.0) {
        let runtime = comp.iter().copied().fold(0.0, f64::max) + slack;
        let m = pop_metrics(&comp, runtime, None, None).unwrap();
        prop_assert!((m.load_balance * m.communication_efficiency - m.parallel_efficiency).abs() < 1e-12);
        prop_assert!(m.parallel_efficiency <= 1.0 + 1e-12);
    }
}
