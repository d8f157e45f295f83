//! Wrong findings from the history, turned into tests (the moderate-size versions; the large
//! ones are in the stress set of `bench/history/eval_real.py --set stress`):
//!
//! * a step followed by a long stationary tail: the robust detector must find the step and
//!   nothing in the tail, and every step it reports must be what the data around it say;
//! * the same tail under E-divisive: the step, where it is, and nothing else;
//! * i.i.d. noise of 10,000 runs: E-divisive must not report pairs of "significant" changes.

use hpcscope_history::changepoint::{EDivisiveOptions, Method, detect};
use hpcscope_history::robust::{LevelModel, RobustOptions};

/// xorshift64* (the generator of the project's other seeded tests), with uniform and
/// Box-Muller normal draws.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform on [0, 1).
    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

fn robust() -> Method {
    Method::Robust(RobustOptions::default())
}

fn indices(x: &[f64], m: &Method) -> Vec<usize> {
    detect(x, m).changes.iter().map(|c| c.index).collect()
}

/// Uniform noise on [1.00, 1.01], a step to [1.05, 1.06] at `at`, then a stationary tail.
fn tail_series(n: usize, at: usize, seed: u64) -> Vec<f64> {
    let mut r = Rng::new(seed);
    (0..n)
        .map(|i| 1.0 + 0.01 * r.uniform() + if i >= at { 0.05 } else { 0.0 })
        .collect()
}

#[test]
fn a_step_then_a_long_stationary_tail_is_one_change() {
    // The moderate-size version of 1,000,000 runs with the step at run 600,001, where 8
    // "changes" in pairs 7 runs apart were reported in the tail (the unit test
    // `robust::tests::short_segments_far_into_a_long_history_keep_their_digits` holds the
    // cause; the stress set of the evaluation the full size).
    for seed in [7, 8] {
        let x = tail_series(60_000, 36_000, seed);
        let d = detect(&x, &robust());
        let idx: Vec<usize> = d.changes.iter().map(|c| c.index).collect();
        assert_eq!(idx, vec![36_000], "seed {seed}: {:#?}", d.changes);
        let c = d.changes[0];
        assert!((c.step - 0.05).abs() < 0.002, "{c:?}");
        assert!((c.after.mean - c.before.mean - 0.05).abs() < 0.002, "{c:?}");
    }
}

#[test]
fn edivisive_finds_one_change_in_a_step_then_a_long_stationary_tail() {
    // E-divisive cut such tails into pairs of "changes" 15 to 20 runs apart (seeds 3 and 7:
    // a 16-run stretch 5 standard errors off is found somewhere in any 70,000 runs), and on
    // seed 7 at 100,000 runs reported the step as two changes, 104 runs before it and 254
    // after (the step's p-value, 1e-320, had a NaN normal equivalent and the merge removed
    // the step first).
    let m = Method::EDivisive(EDivisiveOptions::default());
    for (n, at, seed) in [
        (60_000, 36_000, 7),
        (100_000, 40_000, 3),
        (100_000, 40_000, 7),
    ] {
        let x = tail_series(n, at, seed);
        assert_eq!(indices(&x, &m), vec![at], "{n} runs, seed {seed}");
    }
}

#[test]
fn every_reported_step_is_what_the_segments_around_it_say() {
    // Five steps of 3 to 10 noise sd in a long noisy history: each reported step must match
    // the segment means around it (no trend here), in the metric's unit and in noise sd.
    let mut r = Rng::new(11);
    let cps = [15_000usize, 30_000, 50_000, 68_000, 85_000];
    let steps = [0.02, -0.03, 0.01, 0.025, -0.015];
    let mut level = 1.0;
    let x: Vec<f64> = (0..100_000)
        .map(|i| {
            if let Some(k) = cps.iter().position(|&c| c == i) {
                level += steps[k];
            }
            level + 0.003 * r.normal()
        })
        .collect();
    let d = detect(&x, &robust());
    let idx: Vec<usize> = d.changes.iter().map(|c| c.index).collect();
    assert!(
        idx.len() == cps.len() && idx.iter().zip(&cps).all(|(i, c)| i.abs_diff(*c) <= 2),
        "{:#?}",
        d.changes
    );
    for c in &d.changes {
        let means = c.after.mean - c.before.mean;
        assert!((c.step - means).abs() < 0.1 * means.abs(), "{c:?}");
        if let LevelModel::Constant = c.model {
            // The same up to the runs beyond 3 noise sd, which the detector pulls in.
            assert!((c.step - means).abs() < 0.01 * c.noise_sd, "{c:?}");
        }
        assert!(
            (c.step_over_noise - c.step / c.noise_sd).abs() < 1e-6,
            "{c:?}"
        );
    }
}

#[test]
fn edivisive_finds_nothing_in_iid_noise() {
    // 10,000 runs of uniform and of Gaussian noise: E-divisive reported pairs of changes about
    // 10 runs apart, each with p < 1e-3 at its own position (the best of 10,000).
    for seed in 1..=4 {
        let mut r = Rng::new(seed);
        let uni: Vec<f64> = (0..10_000).map(|_| 1.0 + 0.01 * r.uniform()).collect();
        let gau: Vec<f64> = (0..10_000).map(|_| 100.0 + r.normal()).collect();
        let m = Method::EDivisive(EDivisiveOptions::default());
        for x in [uni, gau] {
            let d = detect(&x, &m);
            assert!(
                d.changes.is_empty(),
                "seed {seed}: {:?}",
                d.changes
                    .iter()
                    .map(|c| (c.index, c.pvalue))
                    .collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn edivisive_still_finds_real_steps() {
    let mut r = Rng::new(3);
    let x: Vec<f64> = (0..2_000)
        .map(|i| {
            100.0
                + r.normal()
                + match i {
                    0..500 => 0.0,
                    500..1200 => 3.0,
                    _ => 1.0,
                }
        })
        .collect();
    let idx = indices(&x, &Method::EDivisive(EDivisiveOptions::default()));
    assert_eq!(idx.len(), 2, "{idx:?}");
    assert!(
        idx[0].abs_diff(500) <= 2 && idx[1].abs_diff(1200) <= 2,
        "{idx:?}"
    );
}

/// 300 runs around 100 with steps x1.20 at run 80, x0.85 at 170 and x1.30 at 240, in
/// AR(1) noise `e_t = 0.9 e_(t-1) + N(0, 2 sqrt(1 - 0.81))` (sd 2) or in white noise of
/// sd 2, seeded.
fn three_steps(seed: u64, phi: f64) -> Vec<f64> {
    let mut r = Rng::new(seed);
    let innov = 2.0 * (1.0 - phi * phi).sqrt();
    let mut e = 2.0 * r.normal();
    (0..300)
        .map(|t| {
            if t > 0 {
                e = phi * e + innov * r.normal();
            }
            let level = match t {
                0..80 => 100.0,
                80..170 => 120.0,
                170..240 => 102.0,
                _ => 132.6,
            };
            level + e
        })
        .collect()
}

/// Issue 38, item 7: in AR(1) noise with phi 0.9 the robust detector reported none of three
/// large steps on about 8 of 20 seeds (each step test took its autocorrelation and degrees
/// of freedom from the two segments around a candidate only: next to a spurious neighbour a
/// true step had 1 degree of freedom). The same steps in white noise were always found.
/// Strongly autocorrelated noise is now whitened before the steps are tested (all three
/// steps in 12 of the 20 AR(1) series before, 20 of 20 after).
#[test]
fn three_large_steps_in_strongly_autocorrelated_noise_are_found() {
    for (phi, label) in [(0.9, "AR(1) 0.9"), (0.0, "white")] {
        let mut all_three = 0;
        let mut reported = 0;
        let mut misses = Vec::new();
        for seed in 1..=20 {
            let x = three_steps(seed, phi);
            let idx = indices(&x, &robust());
            let found = [80, 170, 240]
                .iter()
                .filter(|&&c| idx.iter().any(|&i| i.abs_diff(c) <= 5))
                .count();
            if found == 3 {
                all_three += 1;
            } else {
                misses.push((seed, idx.clone()));
            }
            reported += idx.len();
        }
        assert!(
            all_three >= 19,
            "{label}: all three steps in {all_three} of 20 series; missed: {misses:?}"
        );
        assert!(
            reported as f64 / 20.0 <= 4.0,
            "{label}: {reported} changes reported in 20 series of 3"
        );
    }
}
