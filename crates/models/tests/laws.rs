//! Scaling laws recover their generating law and parameters on synthetic data.

use hpcscope_models::laws::{Law, Mode, Run, fit_law, runs_from_csv, select};
use hpcscope_models::optim::Rng;

const PS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 48.0, 64.0];

fn runs(f: impl Fn(f64) -> f64, noise: f64, seed: u64) -> Vec<Run> {
    let mut rng = Rng::new(seed);
    PS.iter()
        .map(|&p| Run {
            p,
            time_s: f(p) * (1.0 + noise * rng.normal()),
        })
        .collect()
}

#[test]
fn amdahl_is_recovered_and_chosen() {
    let r = runs(|p| 100.0 * (0.05 + 0.95 / p), 0.0, 1);
    let fit = fit_law(Law::Amdahl, &r, Mode::Strong).unwrap();
    assert!((fit.params["f"] - 0.95).abs() < 1e-6, "{:?}", fit.params);
    assert!((fit.params["t1_s"] - 100.0).abs() < 1e-4);
    let s = select(&r, &Law::ALL, Mode::Strong).unwrap();
    assert_eq!(s.chosen, Law::Amdahl, "{:#?}", s.fits);
    let p = s.best().predict(128.0);
    assert!((p.time_s - 100.0 * (0.05 + 0.95 / 128.0)).abs() < 1e-3);
    assert!(p.low_s <= p.time_s && p.time_s <= p.high_s);
}

#[test]
fn usl_with_retrograde_scaling_is_chosen() {
    let usl = |p: f64| 50.0 * (1.0 + 0.02 * (p - 1.0) + 0.0005 * p * (p - 1.0)) / p;
    let r = runs(usl, 0.01, 2);
    let s = select(&r, &Law::ALL, Mode::Strong).unwrap();
    assert_eq!(s.chosen, Law::Usl, "{:#?}", s.fits);
    let f = s.best();
    assert!(
        (f.params["sigma"] - 0.02).abs() < 0.01 && (f.params["kappa"] - 0.0005).abs() < 0.0002,
        "{:?}",
        f.params
    );
    let exact = fit_law(Law::Usl, &runs(usl, 0.0, 2), Mode::Strong).unwrap();
    assert!(
        (exact.params["sigma"] - 0.02).abs() < 1e-5
            && (exact.params["kappa"] - 0.0005).abs() < 1e-6,
        "{:?}",
        exact.params
    );
}

#[test]
fn gustafson_is_recovered_and_chosen() {
    // Strong-scaling times whose speedup follows Gustafson's law with f = 0.9.
    let r = runs(|p| 80.0 / (0.1 + 0.9 * p), 0.0, 3);
    let s = select(&r, &[Law::Amdahl, Law::Gustafson, Law::Usl], Mode::Strong).unwrap();
    assert_eq!(s.chosen, Law::Gustafson, "{:#?}", s.fits);
    assert!((s.best().params["f"] - 0.9).abs() < 1e-6);
}

#[test]
fn pmnf_finds_the_exponents() {
    // Weak-scaling time growing as p^0.5 log2 p over a constant: Extra-P's normal form.
    let r = runs(|p| 2.0 + 0.3 * p.sqrt() * p.log2(), 0.0, 4);
    let f = fit_law(Law::Pmnf, &r, Mode::Weak).unwrap();
    assert_eq!((f.params["i"], f.params["j"]), (0.5, 1.0), "{:?}", f.params);
    assert!((f.params["c0"] - 2.0).abs() < 1e-6 && (f.params["c1"] - 0.3).abs() < 1e-6);
}

#[test]
fn too_few_runs_and_bad_csv() {
    let r = runs(|p| 10.0 / p, 0.0, 1)[..2].to_vec();
    let e = fit_law(Law::Usl, &r, Mode::Strong).unwrap_err().to_string();
    assert!(e.contains("at least 4"), "{e}");
    let e = runs_from_csv("p,time_s\n1,10\n2\n", "runs.csv")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("runs.csv:3:"), "{e}");
    let e = runs_from_csv("nodes,secs\n1,10\n", "runs.csv")
        .unwrap_err()
        .to_string();
    assert!(e.contains("process-count column"), "{e}");
    assert_eq!(
        runs_from_csv("threads,time_s\n1,10\n2,5.5\n", "x")
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn many_runs_are_cross_validated_in_folds_and_still_recover_the_law() {
    // 400 runs: leave-one-out refits grew cubically (64 runs 1 s, 256 runs > 40 s); beyond
    // 24 runs the cross-validation uses 24 folds.
    let mut rng = Rng::new(7);
    let r: Vec<Run> = (0..400)
        .map(|i| {
            let p = f64::from(1 + i % 64);
            Run {
                p,
                time_s: 100.0 * (0.05 + 0.95 / p) * (1.0 + 0.01 * rng.normal()),
            }
        })
        .collect();
    let s = select(&r, &Law::ALL, Mode::Strong).unwrap();
    for f in &s.fits {
        assert!(f.cv_rms_rel_error.is_finite(), "{:?}", f);
    }
    let a = fit_law(Law::Amdahl, &r, Mode::Strong).unwrap();
    assert!((a.params["f"] - 0.95).abs() < 0.01, "{:?}", a.params);
    assert!(a.cv_rms_rel_error < 0.05, "{}", a.cv_rms_rel_error);
}
