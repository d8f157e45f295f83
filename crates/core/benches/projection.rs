//! Throughput of the projection model: single projections and design-space sweeps, in
//! design points per second.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hpcscope_core::Precision;
use hpcscope_core::explore::{Resolved, Transform, apply, sweep};
use hpcscope_core::library::builtin;
use hpcscope_core::profile::{AppMetrics, bytes_from_local};
use hpcscope_core::project::{Options, Side, project};
use hpcscope_core::roofline::Scope;
use std::hint::black_box;

fn app(fpi: f64, total: f64) -> AppMetrics {
    AppMetrics {
        flops: 1.0e11,
        fp_instructions: 1.0e11 / fpi,
        levels: vec!["L1".into(), "L2".into(), "MM".into()],
        bytes: bytes_from_local(total, &[0.9, 0.6], 3),
        time_s: Some(96.0),
    }
}

fn bench(c: &mut Criterion) {
    let tx2 = builtin("thunderx2").unwrap();
    let n1 = builtin("neoverse-n1").unwrap();
    let s = [app(3.2, 8.0e11)];
    let t = [app(3.0, 1.0e12)];
    let mut g = c.benchmark_group("projection");
    g.throughput(Throughput::Elements(1));
    g.bench_function("single_core_6_points", |b| {
        b.iter(|| {
            project(
                Side {
                    machine: black_box(&tx2),
                    threads: &s,
                    origin: "s",
                },
                1.04,
                Side {
                    machine: black_box(&n1),
                    threads: &t,
                    origin: "t",
                },
                Precision::F64,
                Options::default(),
            )
            .unwrap()
        })
    });
    let g2 = builtin("graviton2").unwrap();
    let g3 = builtin("graviton3").unwrap();
    let mk = |fpi: f64| AppMetrics {
        flops: 1.0e10,
        fp_instructions: 1.0e10 / fpi,
        levels: vec!["L1".into(), "L2".into(), "L3".into(), "MM".into()],
        bytes: vec![1.0e10, 1.0e9, 1.0e8, 1.0e8],
        time_s: Some(1.0),
    };
    let ts: Vec<AppMetrics> = (0..64).map(|_| mk(2.0)).collect();
    g.bench_function("node_64_threads", |b| {
        b.iter(|| {
            project(
                Side {
                    machine: &g2,
                    threads: &ts,
                    origin: "s",
                },
                640.0,
                Side {
                    machine: &g3,
                    threads: &ts,
                    origin: "t",
                },
                Precision::F64,
                Options {
                    scope: Scope::Node,
                    ..Options::default()
                },
            )
            .unwrap()
        })
    });
    g.finish();

    // A sweep of 5 vector lengths x 8 targets = 40 design points.
    let variants: Vec<(String, Option<u32>, Vec<AppMetrics>)> = [128u32, 256, 512, 1024, 2048]
        .iter()
        .map(|&vl| {
            (
                format!("sve-{vl}"),
                Some(vl),
                vec![app(3.2 * f64::from(vl) / 128.0, 8.0e11)],
            )
        })
        .collect();
    let a64 = builtin("a64fx").unwrap();
    let lookup = |_: &str| Ok(a64.clone());
    let mut targets = Vec::new();
    for base in [&tx2, &n1] {
        for f in [1.0, 2.0, 4.0] {
            let m = apply(
                base,
                &Transform::ScaleLevel {
                    level: "L2".into(),
                    factor: f,
                },
                &lookup,
            )
            .unwrap();
            targets.push((m.id.clone(), m));
        }
        let m = apply(base, &Transform::ReplaceMemory("a64fx".into()), &lookup).unwrap();
        targets.push((m.id.clone(), m));
    }
    let r = Resolved {
        source_machine: tx2.clone(),
        source_threads: s.to_vec(),
        source_gflops: 1.04,
        variants,
        targets,
        source_widths: None,
        variant_widths: Vec::new(),
        source_spread: None,
        source_instructions: None,
        variant_instructions: Vec::new(),
    };
    let n = (r.variants.len() * r.targets.len()) as u64;
    let mut g = c.benchmark_group("explore");
    g.throughput(Throughput::Elements(n));
    g.bench_function("sweep_40_design_points", |b| {
        b.iter(|| {
            sweep(
                black_box(&r),
                Precision::F64,
                Options::default(),
                &Default::default(),
            )
            .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
