//! Coverage of the set-sampling interval (`mix --sample K`): how often the 95 % interval of
//! a level's hit ratio holds the full simulation's value, over many draws of the sampled
//! classes. A study, not a check: ignored by `cargo test`, run by `bench/mix/coverage.sh`,
//! which records the streams and passes `--ignored`.
//!
//! Every class of sets is simulated once ([`hpcscope_mix::sampling::sets::class_units`]); a draw
//! is `g / K` classes taken at random (the sampler's own choice is one such draw), the
//! truth the ratio over all classes. Each draw's interval is computed as `mix` reports it
//! ([`hpcscope_mix::sampling::estimate::ratio_estimate`] below L1,
//! [`hpcscope_mix::sampling::estimate::miss_expansion_estimate`] for L1) and, for comparison, as the
//! earlier Student-t interval on the between-class residuals and the regression on the
//! bytes `mix` used for L1 before (kept here).

use hpcscope_mix::sampling::estimate::{
    miss_expansion_estimate, ratio_estimate, regression_estimate, t_interval,
};
use hpcscope_mix::sampling::sets::{chosen_classes, class_units};
use hpcscope_mix::{Placement, node};

/// Tally of one interval over the draws.
#[derive(Default)]
struct Tally {
    covered: u64,
    with_interval: u64,
    half_widths: Vec<f64>,
    /// Draws whose estimate is within 1 percentage point of the truth.
    close: u64,
}

impl Tally {
    fn add(&mut self, est: (Option<f64>, Option<f64>), truth: f64) {
        if let (Some(r), Some(ci)) = est {
            self.with_interval += 1;
            self.half_widths.push(ci);
            if (r - truth).abs() <= ci + 1e-12 {
                self.covered += 1;
            }
            if (r - truth).abs() <= 0.01 {
                self.close += 1;
            }
        }
    }
    fn cell(&mut self) -> String {
        if self.with_interval == 0 {
            return "–".into();
        }
        self.half_widths.sort_by(f64::total_cmp);
        format!(
            "{:.1} % (median ± {:.2}; {:.0} % within 1 pp)",
            100.0 * self.covered as f64 / self.with_interval as f64,
            100.0 * self.half_widths[self.half_widths.len() / 2],
            100.0 * self.close as f64 / self.with_interval as f64
        )
    }
}

#[test]
#[ignore = "a study: bench/mix/coverage.sh records the streams and runs it"]
fn coverage_of_the_set_sampling_interval() {
    let streams = std::env::var("HPCSCOPE_COVERAGE_STREAMS")
        .expect("HPCSCOPE_COVERAGE_STREAMS: run bench/mix/coverage.sh, which records the streams");
    let machines = std::env::var("HPCSCOPE_COVERAGE_MACHINES")
        .unwrap_or_else(|_| "cascadelake-8260,graviton2".into());
    let k: u64 = std::env::var("HPCSCOPE_COVERAGE_K").map_or(8, |v| v.parse().expect("K"));
    let draws: u64 =
        std::env::var("HPCSCOPE_COVERAGE_DRAWS").map_or(1000, |v| v.parse().expect("draws"));
    let nodes: Vec<_> = machines
        .split(',')
        .map(|m| {
            node(&hpcscope_core::library::builtin(m).expect("a built-in machine")).expect("a node")
        })
        .collect();
    println!(
        "| workload | machine | level | full run | mean accesses sampled | mean non-empty classes | draws without interval | t interval: coverage | design-effect Wilson: coverage | regression on bytes: coverage | L1's misses expanded: coverage | `chosen_classes` draw: t / Wilson / regression / expanded | hits, misses in the top 1/K classes |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for item in streams.split(',') {
        let (label, path) = item.split_once('=').expect("LABEL=PATH");
        let f = std::fs::File::open(path).expect("the stream");
        let all =
            class_units(std::io::BufReader::new(f), &nodes, &Placement::Compact).expect("a stream");
        for (n, units) in nodes.iter().zip(&all) {
            let levels = &units.levels;
            let total_bytes: u64 = units.bytes.iter().sum();
            let g = units.bytes.len() as u64;
            let take = (g / k) as usize;
            for (j, classes) in levels.iter().enumerate() {
                let (sa, sh) = classes
                    .iter()
                    .fold((0u64, 0u64), |(a, h), &(x, y)| (a + x, h + y));
                if sa == 0 {
                    continue;
                }
                let truth = sh as f64 / sa as f64;
                // How concentrated the level's hits and misses are: the share in the
                // 1/K of the classes that hold most of them.
                let top = |v: &mut Vec<u64>, all: u64| {
                    v.sort_unstable_by(|a, b| b.cmp(a));
                    let s: u64 = v.iter().take(take).sum();
                    if all == 0 {
                        "–".to_string()
                    } else {
                        format!("{:.0} %", 100.0 * s as f64 / all as f64)
                    }
                };
                let mut hits: Vec<u64> = classes.iter().map(|u| u.1).collect();
                let mut misses: Vec<u64> = classes.iter().map(|u| u.0 - u.1).collect();
                let concentration =
                    format!("{}, {}", top(&mut hits, sh), top(&mut misses, sa - sh));
                let (mut old, mut new, mut reg, mut exp) = (
                    Tally::default(),
                    Tally::default(),
                    Tally::default(),
                    Tally::default(),
                );
                // L1's misses expanded over its known accesses (what `mix` reports for L1).
                let expanded = |picked: &[usize]| {
                    let u: Vec<(u64, u64, u64)> = picked
                        .iter()
                        .map(|&c| (classes[c].0, classes[c].1, units.extra[c]))
                        .collect();
                    if j == 0 {
                        miss_expansion_estimate(&u, g, units.records)
                    } else {
                        (None, None)
                    }
                };
                let with_bytes = |picked: &[usize]| -> Vec<(u64, u64, u64)> {
                    picked
                        .iter()
                        .map(|&c| (units.bytes[c], classes[c].0, classes[c].1))
                        .collect()
                };
                let (mut accesses, mut nonempty, mut none) = (0u64, 0u64, 0u64);
                // xorshift64*, seeded per draw: the same draws for both intervals.
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (j as u64 + 1);
                let mut order: Vec<usize> = (0..g as usize).collect();
                for _ in 0..draws {
                    for i in 0..take {
                        x ^= x >> 12;
                        x ^= x << 25;
                        x ^= x >> 27;
                        let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
                        let pick = i + (r % (g as usize - i) as u64) as usize;
                        order.swap(i, pick);
                    }
                    let units: Vec<(u64, u64)> =
                        order[..take].iter().map(|&c| classes[c]).collect();
                    accesses += units.iter().map(|u| u.0).sum::<u64>();
                    nonempty += units.iter().filter(|u| u.0 > 0).count() as u64;
                    let o = t_interval(&units, g);
                    if o.1.is_none() {
                        none += 1;
                    }
                    old.add(o, truth);
                    new.add(ratio_estimate(&units, g), truth);
                    reg.add(
                        regression_estimate(&with_bytes(&order[..take]), g, total_bytes),
                        truth,
                    );
                    exp.add(expanded(&order[..take]), truth);
                }
                let chosen: Vec<usize> = chosen_classes(g, k).iter().map(|&c| c as usize).collect();
                let fixed: Vec<(u64, u64)> = chosen.iter().map(|&c| classes[c]).collect();
                let verdict = |e: (Option<f64>, Option<f64>)| match e {
                    (Some(r), Some(ci)) => format!(
                        "{:.2} ± {:.2} {}",
                        100.0 * r,
                        100.0 * ci,
                        if (r - truth).abs() <= ci + 1e-12 {
                            "covers"
                        } else {
                            "misses"
                        }
                    ),
                    (Some(r), None) => format!("{:.2} ± unknown", 100.0 * r),
                    _ => "–".into(),
                };
                println!(
                    "| {label} | {} | {} | {:.2} % | {:.0} of {sa} | {:.1} of {take} | {none} | {} | {} | {} | {} | {} / {} / {} / {} | {concentration} |",
                    n.name,
                    n.levels
                        .get(j)
                        .map_or("?".to_string(), |l| l.cache.name.clone()),
                    100.0 * truth,
                    accesses as f64 / draws as f64,
                    nonempty as f64 / draws as f64,
                    old.cell(),
                    new.cell(),
                    reg.cell(),
                    exp.cell(),
                    verdict(t_interval(&fixed, g)),
                    verdict(ratio_estimate(&fixed, g)),
                    verdict(regression_estimate(&with_bytes(&chosen), g, total_bytes)),
                    verdict(expanded(&chosen)),
                );
            }
        }
    }
}
