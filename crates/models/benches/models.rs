//! Speed of the model kernels: one port-model evaluation (eq. 5.8), a CPI fit over 21
//! variants, and a scaling-law selection.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hpcscope_models::fit::{FitOptions, Variant, fit_cpis};
use hpcscope_models::laws::{Law, Mode, Run, select};
use hpcscope_models::optim::Rng;
use hpcscope_models::ports::{ClassCounts, Cpis, PortModel, Scheduler};

const CLASSES: [&str; 7] = ["DIV", "FP_SHUF", "LOAD", "STORE", "FP", "SIMD_INT", "INT"];

fn cpi() -> Cpis {
    CLASSES
        .iter()
        .zip([6.5, 1.3, 1.7, 2.2, 1.6, 1.2, 1.1])
        .map(|(k, v)| (k.to_string(), v))
        .chain([("FAST_DIV".to_string(), 1.0)])
        .collect()
}

fn variants() -> Vec<Variant> {
    let sky = PortModel::builtin("skylake").unwrap();
    let mut rng = Rng::new(1);
    (0..21)
        .map(|i| {
            let counts: ClassCounts = CLASSES
                .iter()
                .map(|k| (k.to_string(), rng.range(0.0, 60.0).round()))
                .collect();
            let y = sky
                .allocate(&counts, &cpi(), Scheduler::Waterfill)
                .unwrap()
                .cycles;
            Variant {
                name: format!("v{i}"),
                counts,
                cycles_per_iter: y,
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let sky = PortModel::builtin("skylake").unwrap();
    let v = variants();
    let counts = v[0].counts.clone();
    let cpi = cpi();
    c.bench_function("port_model_allocate", |b| {
        b.iter(|| {
            sky.allocate(black_box(&counts), &cpi, Scheduler::Waterfill)
                .unwrap()
        })
    });
    let opts = FitOptions {
        hops: 10,
        ..FitOptions::default()
    };
    c.bench_function("fit_cpis_21_variants_10_hops", |b| {
        b.iter(|| fit_cpis(&sky, black_box(&v), &opts).unwrap())
    });
    let runs: Vec<Run> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
        .iter()
        .map(|&p| Run {
            p,
            time_s: 100.0 * (0.05 + 0.95 / p),
        })
        .collect();
    c.bench_function("scaling_law_selection", |b| {
        b.iter(|| select(black_box(&runs), &Law::ALL, Mode::Strong).unwrap())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
