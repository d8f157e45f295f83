//! Speed of change-point detection on long histories (target: 100,000 points in under a
//! second) and of the gate's bootstrap.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hpcscope_history::changepoint::{EDivisiveOptions, PeltOptions, e_divisive, pelt};
use hpcscope_history::gate::{Direction, GateOptions, gate};
use hpcscope_history::robust::{RobustOptions, detect};
use hpcscope_history::synth::{SynthSpec, generate};

fn history(n: usize) -> Vec<f64> {
    generate(&SynthSpec {
        n,
        step: 0.05,
        noise: 0.01,
        changes: n / 500,
        min_gap: 100,
        outlier_rate: 0.01,
        drift: false,
        seed: 7,
    })
    .values
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("changepoint");
    g.sample_size(10);
    for n in [1_000usize, 10_000, 100_000] {
        let x = history(n);
        g.bench_function(format!("robust_{n}"), |b| {
            b.iter(|| detect(black_box(&x), &RobustOptions::default()))
        });
        g.bench_function(format!("edivisive_{n}"), |b| {
            b.iter(|| e_divisive(black_box(&x), &EDivisiveOptions::default()))
        });
        g.bench_function(format!("pelt_{n}"), |b| {
            b.iter(|| pelt(black_box(&x), &PeltOptions::default()))
        });
    }
    g.finish();
    let x = history(60);
    let (base, cand) = x.split_at(30);
    c.bench_function("gate_30_vs_30_bootstrap_5000", |b| {
        b.iter(|| {
            gate(
                "time_s",
                "s",
                black_box(base),
                black_box(cand),
                Direction::LowerIsBetter,
                &GateOptions::default(),
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
