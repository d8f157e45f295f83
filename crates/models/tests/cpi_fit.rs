//! CPI fitting (seed 003, section 5.3): recover known CPIs from synthetic variants generated
//! with them on the Skylake port model.

use hpcscope_models::ModelError;
use hpcscope_models::fit::{FitOptions, Variant, fit_cpis};
use hpcscope_models::optim::Rng;
use hpcscope_models::ports::{ClassCounts, Cpis, PortModel, Scheduler};

const CLASSES: [&str; 7] = ["DIV", "FP_SHUF", "LOAD", "STORE", "FP", "SIMD_INT", "INT"];

fn truth() -> Cpis {
    [
        ("DIV", 6.5),
        ("FP_SHUF", 1.3),
        ("LOAD", 1.7),
        ("STORE", 2.2),
        ("FP", 1.6),
        ("SIMD_INT", 1.2),
        ("INT", 1.1),
        ("FAST_DIV", 1.0),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), *v))
    .collect()
}

/// Variants in which each class in turn dominates its ports, over a random background, like
/// the thesis's combinatorial arithmetic variants plus a "reduced" kernel widening the range.
fn variants(noise: f64, seed: u64) -> Vec<Variant> {
    let sky = PortModel::builtin("skylake").unwrap();
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for (d, dom) in CLASSES.iter().enumerate() {
        for rep in 0..3 {
            let mut counts = ClassCounts::new();
            for c in CLASSES {
                counts.insert(c.to_string(), rng.range(0.0, 6.0).round());
            }
            let heavy = match *dom {
                "DIV" => 20.0,
                "INT" => 120.0,
                "SIMD_INT" => 90.0,
                "FP" => 80.0,
                _ => 50.0,
            };
            counts.insert(dom.to_string(), (heavy * rng.range(0.8, 1.3)).round());
            let c = sky
                .allocate(&counts, &truth(), Scheduler::Waterfill)
                .unwrap()
                .cycles;
            let y = c * (1.0 + noise * rng.normal());
            out.push(Variant {
                name: format!("v{d}{rep}"),
                counts,
                cycles_per_iter: y,
            });
        }
    }
    out
}

#[test]
fn noise_free_variants_give_the_cpis_exactly() {
    let sky = PortModel::builtin("skylake").unwrap();
    let fit = fit_cpis(&sky, &variants(0.0, 3), &FitOptions::default()).unwrap();
    for c in CLASSES {
        let (got, want) = (fit.cpi[c], truth()[c]);
        assert!(
            (got - want).abs() < 1e-6,
            "{c}: fitted {got}, true {want}; fit {fit:#?}"
        );
    }
    assert!(
        fit.non_contributing.is_empty(),
        "{:?}",
        fit.non_contributing
    );
    assert_eq!(fit.absent, vec!["FAST_DIV".to_string()]);
    assert!(fit.rmse < 1e-6 && fit.max_abs_pct < 1e-6);
}

#[test]
fn two_percent_noise_stays_within_five_percent() {
    let sky = PortModel::builtin("skylake").unwrap();
    let fit = fit_cpis(&sky, &variants(0.02, 11), &FitOptions::default()).unwrap();
    for c in CLASSES {
        let (got, want) = (fit.cpi[c], truth()[c]);
        assert!(
            (got - want).abs() / want < 0.05,
            "{c}: fitted {got}, true {want}"
        );
    }
    assert!(fit.r2 > 0.99);
}

#[test]
fn the_fit_is_deterministic_under_a_seed() {
    let sky = PortModel::builtin("skylake").unwrap();
    let v = variants(0.02, 5);
    let o = FitOptions {
        hops: 10,
        ..FitOptions::default()
    };
    let a = fit_cpis(&sky, &v, &o).unwrap();
    let b = fit_cpis(&sky, &v, &o).unwrap();
    assert_eq!(a.cpi, b.cpi);
}

#[test]
fn too_few_variants_say_how_many_are_needed() {
    let sky = PortModel::builtin("skylake").unwrap();
    let v: Vec<Variant> = variants(0.0, 3).into_iter().take(4).collect();
    let e = fit_cpis(&sky, &v, &FitOptions::default()).unwrap_err();
    match &e {
        ModelError::TooFew { got, needed, .. } => assert_eq!((*got, *needed), (4, 7)),
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("at least 7"), "{e}");
}

#[test]
fn a_class_that_never_binds_is_reported() {
    // INT never reaches the busiest port here: its CPI is not identifiable.
    let sky = PortModel::builtin("skylake").unwrap();
    let mut v = Vec::new();
    for (i, (div, fp)) in [
        (10.0, 20.0),
        (12.0, 30.0),
        (5.0, 80.0),
        (7.0, 90.0),
        (20.0, 10.0),
    ]
    .iter()
    .enumerate()
    {
        let counts: ClassCounts = [("DIV", *div), ("FP", *fp), ("INT", 1.0)]
            .iter()
            .map(|(k, x)| (k.to_string(), *x))
            .collect();
        let y = sky
            .allocate(&counts, &truth(), Scheduler::Waterfill)
            .unwrap()
            .cycles;
        v.push(Variant {
            name: format!("k{i}"),
            counts,
            cycles_per_iter: y,
        });
    }
    let fit = fit_cpis(
        &sky,
        &v,
        &FitOptions {
            hops: 10,
            ..FitOptions::default()
        },
    )
    .unwrap();
    assert_eq!(fit.non_contributing, vec!["INT".to_string()]);
    assert!(
        (fit.cpi["DIV"] - 6.5).abs() < 1e-6 && (fit.cpi["FP"] - 1.6).abs() < 1e-6,
        "{:?}",
        fit.cpi
    );
}
