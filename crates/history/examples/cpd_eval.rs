//! Change-point evaluation (driven by `bench/history/eval.py` and `bench/history/eval_real.py`).
//!
//! * `cpd_eval OUT_DIR [--per-cell N] [--n POINTS]` writes `OUT_DIR/histories.json` (the 640
//!   labelled synthetic histories with their true change points) and `OUT_DIR/hpcscope.json`
//!   (what the robust detector, E-divisive and PELT found in each, and how long they took),
//!   and prints precision/recall/F1 per (step, noise) cell.
//! * `cpd_eval --series IN.json OUT.json [--methods robust,edivisive,pelt]` runs the three
//!   detectors (or those named), default settings, on every series of IN.json
//!   (`[{"id": .., "values": [number or null, ...]}, ...]`, null = missing) and writes their
//!   change points and times to OUT.json.
//! * `cpd_eval --big N` times the detectors on one N-point history.

use std::time::Instant;

use hpcscope_history::changepoint::{EDivisiveOptions, Method, PeltOptions, detect};
use hpcscope_history::synth::{Confusion, SynthSpec, generate, score};
use serde_json::json;

const STEPS: [f64; 4] = [0.01, 0.02, 0.05, 0.10];
const NOISES: [f64; 4] = [0.005, 0.01, 0.02, 0.03];
const TOLERANCE: usize = 5;

fn methods() -> [(&'static str, Method); 3] {
    [
        ("robust", Method::default()),
        ("edivisive", Method::EDivisive(EDivisiveOptions::default())),
        ("pelt", Method::Pelt(PeltOptions::default())),
    ]
}

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
    if let Some(i) = args.iter().position(|a| a == "--series") {
        let (Some(inp), Some(out)) = (args.get(i + 1), args.get(i + 2)) else {
            eprintln!("usage: cpd_eval --series IN.json OUT.json");
            std::process::exit(2);
        };
        let only: Vec<String> = match args.iter().position(|a| a == "--methods") {
            Some(j) => match args.get(j + 1) {
                Some(v) => v.split(',').map(str::to_string).collect(),
                None => {
                    eprintln!("--methods: give a comma-separated list of robust, edivisive, pelt");
                    std::process::exit(2);
                }
            },
            None => Vec::new(),
        };
        if let Some(bad) = only.iter().find(|m| !methods().iter().any(|(n, _)| n == m)) {
            eprintln!("--methods: unknown method `{bad}`; give robust, edivisive or pelt");
            std::process::exit(2);
        }
        series(inp, out, &only);
        return;
    }
    let Some(out) = args.first().filter(|a| !a.starts_with("--")) else {
        eprintln!(
            "usage: cpd_eval OUT_DIR [--per-cell N] [--n POINTS] | cpd_eval --series IN.json OUT.json | cpd_eval --big N"
        );
        std::process::exit(2);
    };
    let per_cell = get("--per-cell", 40);
    let n = get("--n", 300);
    std::fs::create_dir_all(out).expect("create the output directory");
    let mut histories = Vec::new();
    let mut found = Vec::new();
    let mut secs = [0.0; 3];
    println!("hpcscope robust, E-divisive and PELT (defaults), tolerance ±{TOLERANCE}");
    println!(
        "{:>6} {:>6} | {:>17} | {:>17} | {:>17}",
        "step", "noise", "robust P R F1", "E-div P R F1", "PELT P R F1"
    );
    for &step in &STEPS {
        for &noise in &NOISES {
            let mut conf = [Confusion::default(); 3];
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
                let mut row = json!({"id": histories.len()});
                for (j, (name, m)) in methods().iter().enumerate() {
                    let t0 = Instant::now();
                    let f: Vec<usize> = detect(&h.values, m)
                        .changes
                        .iter()
                        .map(|c| c.index)
                        .collect();
                    secs[j] += t0.elapsed().as_secs_f64();
                    conf[j].add(score(&h.change_points, &f, TOLERANCE));
                    row[*name] = json!(f);
                }
                histories.push(
                    json!({"id": histories.len(), "step": step, "noise": noise, "drift": spec.drift,
                    "values": h.values, "change_points": h.change_points}),
                );
                found.push(row);
            }
            let c = |i: usize| {
                format!(
                    "{:.3} {:.3} {:.3}",
                    conf[i].precision(),
                    conf[i].recall(),
                    conf[i].f1()
                )
            };
            println!(
                "{:>5.1}% {:>5.1}% | {} | {} | {}",
                step * 100.0,
                noise * 100.0,
                c(0),
                c(1),
                c(2)
            );
        }
    }
    println!(
        "time: robust {:.3} s, E-divisive {:.3} s, PELT {:.3} s over {} histories of {n} points",
        secs[0],
        secs[1],
        secs[2],
        histories.len()
    );
    let w = |name: &str, v: serde_json::Value| {
        std::fs::write(format!("{out}/{name}"), serde_json::to_string(&v).unwrap()).expect("write");
    };
    w("histories.json", json!(histories));
    w(
        "hpcscope.json",
        json!({"tolerance": TOLERANCE, "seconds_robust": secs[0], "seconds_edivisive": secs[1],
               "seconds_pelt": secs[2], "found": found}),
    );
}

/// Runs the detectors named in `only` (all when empty) on every series of `inp`.
fn series(inp: &str, out: &str, only: &[String]) {
    let text = std::fs::read_to_string(inp).unwrap_or_else(|e| panic!("reading {inp}: {e}"));
    let all: Vec<serde_json::Value> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{inp}: not a JSON list: {e}"));
    let mut secs = [0.0; 3];
    let mut found = Vec::new();
    for s in &all {
        let values: Vec<f64> = s["values"]
            .as_array()
            .unwrap_or_else(|| panic!("{inp}: series {} has no `values` list", s["id"]))
            .iter()
            .map(|v| v.as_f64().unwrap_or(f64::NAN))
            .collect();
        let mut row = json!({"id": s["id"]});
        for (j, (name, m)) in methods().iter().enumerate() {
            if !only.is_empty() && !only.iter().any(|o| o == name) {
                continue;
            }
            let t0 = Instant::now();
            let d = detect(&values, m);
            secs[j] += t0.elapsed().as_secs_f64();
            row[*name] = json!(d.changes.iter().map(|c| c.index).collect::<Vec<_>>());
            if j == 0 {
                row["robust_notes"] = json!(d.notes);
                row["robust_status"] = json!(d.status);
            }
        }
        found.push(row);
    }
    let mut seconds = serde_json::Map::new();
    for (j, (name, _)) in methods().iter().enumerate() {
        if only.is_empty() || only.iter().any(|o| o == name) {
            seconds.insert(name.to_string(), json!(secs[j]));
        }
    }
    let v = json!({"seconds": seconds, "found": found});
    std::fs::write(out, serde_json::to_string(&v).unwrap()).expect("write the output");
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
    let mut line = format!("{n} points, {} true changes:", h.change_points.len());
    let mut dump = json!({"values": h.values, "change_points": h.change_points});
    for (name, m) in methods() {
        let t0 = Instant::now();
        let d = detect(&h.values, &m);
        let t = t0.elapsed().as_secs_f64();
        let idx: Vec<usize> = d.changes.iter().map(|c| c.index).collect();
        let f1 = score(&h.change_points, &idx, TOLERANCE).f1();
        line += &format!(" {name} {t:.3} s ({} found, F1 {f1:.3});", idx.len());
        dump[name] = json!(idx);
        dump[format!("seconds_{name}")] = json!(t);
    }
    println!("{}", line.trim_end_matches(';'));
    if let Some(dir) = std::env::args().skip_while(|a| a != "--dump").nth(1) {
        std::fs::write(
            format!("{dir}/big.json"),
            serde_json::to_string(&dump).unwrap(),
        )
        .expect("write");
    }
}
