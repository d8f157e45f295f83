//! Property tests of the change-point detectors and the seeded statistics.

use hpcscope_history::changepoint::{EDivisiveOptions, PeltOptions, e_divisive, pelt};
use hpcscope_history::robust::{RobustOptions, Status, detect};
use hpcscope_history::stats::{bootstrap_ratio_of_medians, mann_whitney_u};
use hpcscope_history::synth::{SynthSpec, generate};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A constant series has no change point, whatever its level and length.
    #[test]
    fn constant_series_has_no_change_point(level in -1e6f64..1e6, n in 0usize..400) {
        let x = vec![level; n];
        prop_assert!(e_divisive(&x, &EDivisiveOptions::default()).is_empty());
        prop_assert!(pelt(&x, &PeltOptions::default()).is_empty());
    }

    /// A step of 10 noise standard deviations is found within ±2 points, by both detectors,
    /// and it is the only change larger than 5%.
    #[test]
    fn large_step_is_found_at_the_right_index(
        seed in 0u64..1000, n in 80usize..400, frac in 0.2f64..0.8, up in any::<bool>()
    ) {
        let h = generate(&SynthSpec { n, step: 0.0, noise: 0.01, changes: 0, outlier_rate: 0.0, seed, ..SynthSpec::default() });
        let at = (n as f64 * frac) as usize;
        let f = if up { 1.10 } else { 0.90 };
        let x: Vec<f64> = h.values.iter().enumerate().map(|(i, v)| if i >= at { v * f } else { *v }).collect();
        let mut ed = e_divisive(&x, &EDivisiveOptions::default());
        ed.retain(|c| c.rel_change.abs() > 0.05);
        prop_assert_eq!(ed.len(), 1, "{:?}", ed);
        prop_assert!(ed[0].index.abs_diff(at) <= 2, "found {} expected {}", ed[0].index, at);
        let pe = pelt(&x, &PeltOptions::default());
        prop_assert!(pe.iter().any(|c| c.index.abs_diff(at) <= 2), "{:?}", pe);
    }

    /// The robust detector: a constant series is reported as such; a step of 10 noise
    /// standard deviations on a drift is found within ±2 points and explained as a step of
    /// about 10 %, whatever NaN are sprinkled in.
    #[test]
    fn robust_finds_a_step_on_a_drift(
        seed in 0u64..1000, n in 80usize..400, frac in 0.2f64..0.8, up in any::<bool>(),
        gaps in prop::collection::vec(0usize..400, 0..6)
    ) {
        let c = detect(&vec![3.5; n], &RobustOptions::default());
        prop_assert_eq!(c.status, Status::Constant);
        let h = generate(&SynthSpec { n, step: 0.0, noise: 0.01, changes: 0, outlier_rate: 0.0, seed, ..SynthSpec::default() });
        let at = (n as f64 * frac) as usize;
        let f = if up { 1.10 } else { 0.90 };
        let mut x: Vec<f64> = h.values.iter().enumerate()
            .map(|(i, v)| v * (1.0 + 0.03 * i as f64 / n as f64) * if i >= at { f } else { 1.0 })
            .collect();
        let mut missing = 0;
        for g in gaps {
            if g < n && g != at && x[g].is_finite() {
                x[g] = f64::NAN;
                missing += 1;
            }
        }
        let d = detect(&x, &RobustOptions::default());
        prop_assert_eq!(d.missing, missing);
        // (On the shortest series the drift, 3 noise sd, can also pass for a small step:
        // only steps of more than 5 % count here, as for E-divisive above.)
        let big: Vec<_> = d.changes.iter().filter(|c| c.rel_change.abs() > 0.05).collect();
        prop_assert_eq!(big.len(), 1, "{:?}", d.changes);
        prop_assert!(big[0].index.abs_diff(at) <= 2, "found {} expected {}", big[0].index, at);
        prop_assert!((big[0].rel_change.abs() - 0.10).abs() < 0.03, "{:?}", big[0]);
    }

    /// Same input, same answer: detection and the seeded bootstrap are deterministic.
    #[test]
    fn deterministic_under_a_seed(seed in 0u64..1000) {
        let h = generate(&SynthSpec { seed, ..SynthSpec::default() });
        prop_assert_eq!(e_divisive(&h.values, &EDivisiveOptions::default()), e_divisive(&h.values, &EDivisiveOptions::default()));
        prop_assert_eq!(pelt(&h.values, &PeltOptions::default()), pelt(&h.values, &PeltOptions::default()));
        prop_assert_eq!(detect(&h.values, &RobustOptions::default()), detect(&h.values, &RobustOptions::default()));
        let (a, b) = h.values.split_at(150);
        let c1 = bootstrap_ratio_of_medians(b, a, 500, 0.95, seed);
        let c2 = bootstrap_ratio_of_medians(b, a, 500, 0.95, seed);
        prop_assert_eq!(c1, c2);
    }

    /// Mann-Whitney: U of one side plus U of the other is n1·n2, and p-values are in [0, 1].
    #[test]
    fn mann_whitney_identities(a in prop::collection::vec(0i32..20, 1..30), b in prop::collection::vec(0i32..20, 1..30)) {
        let a: Vec<f64> = a.into_iter().map(f64::from).collect();
        let b: Vec<f64> = b.into_iter().map(f64::from).collect();
        let x = mann_whitney_u(&a, &b).unwrap();
        let y = mann_whitney_u(&b, &a).unwrap();
        prop_assert!((x.u + y.u - (a.len() * b.len()) as f64).abs() < 1e-9);
        for p in [x.p_greater, x.p_less, x.p_two_sided] {
            prop_assert!((0.0..=1.0).contains(&p));
        }
        prop_assert!((x.p_greater - y.p_less).abs() < 1e-12);
    }
}
