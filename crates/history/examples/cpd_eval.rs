//! Change-point evaluation on labelled synthetic histories (driven by `bench/history/eval.py`).
//!
//! `cpd_eval OUT_DIR [--per-cell N] [--n POINTS]` writes `OUT_DIR/histories.json` (every
//! history with its true change points) and `OUT_DIR/hpcscope.json` (what E-divisive and
//! PELT found in each, and how long they took), and prints precision/recall/F1 per
//! (step, noise) cell. `cpd_eval --big N` times both detectors on one N-point history.

use std::time::Instant;

use hpcscope_history::changepoint::{EDivisiveOptions, PeltOptions, e_divisive, pelt};
use hpcscope_history::synth::{Confusion, SynthSpec, generate, score};
use serde_json::json;

const STEPS: [f64; 4] = [0.01, 0.02, 0.05, 0.10];
const NOISES: [f64; 4] = [0.005, 0.01, 0.02, 0.03];
const TOLERANCE: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |flag: &str, default: usize| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    if args.iter().any(|a| a == "--big") {
        big(get("--big", 100_000));
        return;
    }
    let Some(out) = args.first().filter(|a| !a.starts_with("--")) else {
        eprintln!("usage: cpd_eval OUT_DIR [--per-cell N] [--n POINTS] | cpd_eval --big N");
        std::process::exit(2);
    };
    let per_cell = get("--per-cell", 40);
    let n = get("--n", 300);
    std::fs::create_dir_all(out).expect("create the output directory");
    let mut histories = Vec::new();
    let mut found = Vec::new();
    let (mut t_ed, mut t_pelt) = (0.0, 0.0);
    println!(
        "hpcscope E-divisive (window 50, p < 0.001, effect size >= 1) and PELT (BIC), tolerance ±{TOLERANCE}"
    );
    println!(
        "{:>6} {:>6} | {:>5} {:>5} {:>5} | {:>5} {:>5} {:>5}",
        "step", "noise", "P", "R", "F1", "P", "R", "F1"
    );
    for &step in &STEPS {
        for &noise in &NOISES {
            let (mut ce, mut cp) = (Confusion::default(), Confusion::default());
            for k in 0..per_cell {
                let spec = SynthSpec {
                    n,
                    step,
                    noise,
                    changes: 3,
                    min_gap: 30,
                    outlier_rate: 0.01,
                    drift: k % 2 == 1,
                    seed: (step * 1e4) as u64 * 1_000_000 + (noise * 1e4) as u64 * 1000 + k as u64,
                };
                let h = generate(&spec);
                let t0 = Instant::now();
                let ed: Vec<usize> = e_divisive(&h.values, &EDivisiveOptions::default())
                    .iter()
                    .map(|c| c.index)
                    .collect();
                t_ed += t0.elapsed().as_secs_f64();
                let t1 = Instant::now();
                let pe: Vec<usize> = pelt(&h.values, &PeltOptions::default())
                    .iter()
                    .map(|c| c.index)
                    .collect();
                t_pelt += t1.elapsed().as_secs_f64();
                ce.add(score(&h.change_points, &ed, TOLERANCE));
                cp.add(score(&h.change_points, &pe, TOLERANCE));
                let id = histories.len();
                histories.push(
                    json!({"id": id, "step": step, "noise": noise, "drift": spec.drift,
                    "values": h.values, "change_points": h.change_points}),
                );
                found.push(json!({"id": id, "edivisive": ed, "pelt": pe}));
            }
            println!(
                "{:>5.1}% {:>5.1}% | {:>5.3} {:>5.3} {:>5.3} | {:>5.3} {:>5.3} {:>5.3}",
                step * 100.0,
                noise * 100.0,
                ce.precision(),
                ce.recall(),
                ce.f1(),
                cp.precision(),
                cp.recall(),
                cp.f1()
            );
        }
    }
    println!(
        "time: E-divisive {:.3} s, PELT {:.3} s over {} histories of {n} points",
        t_ed,
        t_pelt,
        histories.len()
    );
    let w = |name: &str, v: serde_json::Value| {
        std::fs::write(format!("{out}/{name}"), serde_json::to_string(&v).unwrap()).expect("write");
    };
    w("histories.json", json!(histories));
    w(
        "hpcscope.json",
        json!({"tolerance": TOLERANCE, "seconds_edivisive": t_ed, "seconds_pelt": t_pelt, "found": found}),
    );
}

fn big(n: usize) {
    let h = generate(&SynthSpec {
        n,
        step: 0.05,
        noise: 0.01,
        changes: n / 500,
        min_gap: 100,
        outlier_rate: 0.01,
        drift: false,
        seed: 7,
    });
    let t0 = Instant::now();
    let ed = e_divisive(&h.values, &EDivisiveOptions::default());
    let t_ed = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let pe = pelt(&h.values, &PeltOptions::default());
    let t_pe = t1.elapsed().as_secs_f64();
    let f = |v: &[usize]| score(&h.change_points, v, TOLERANCE).f1();
    let ei: Vec<usize> = ed.iter().map(|c| c.index).collect();
    let pi: Vec<usize> = pe.iter().map(|c| c.index).collect();
    println!(
        "{n} points, {} true changes: E-divisive {:.3} s ({} found, F1 {:.3}); PELT {:.3} s ({} found, F1 {:.3})",
        h.change_points.len(),
        t_ed,
        ei.len(),
        f(&ei),
        t_pe,
        pi.len(),
        f(&pi)
    );
    if let Some(dir) = std::env::args().skip_while(|a| a != "--dump").nth(1) {
        std::fs::write(format!("{dir}/big.json"), serde_json::to_string(&json!({
            "values": h.values, "change_points": h.change_points, "edivisive": ei, "seconds": t_ed})).unwrap()).expect("write");
    }
}
