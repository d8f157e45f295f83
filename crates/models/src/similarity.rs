//! Kernel representativeness (seed 003, section 4.1): is a mini-app kernel a faithful
//! stand-in for its parent code?
//!
//! * IPC-ratio invariance: `IPC(kernel) / IPC(parent)` measured in several environments
//!   (machines, instruction sets, compilers). A proxy that can be used without a model
//!   keeps this ratio constant; the thesis found it was not (Fig. 4.2), which motivates the
//!   difference model.
//! * Counter-vector similarity, after Tramm et al.: both codes' counters are normalized
//!   (per instruction when both count instructions, else per second, else as shares of the
//!   vector), each counter is scaled by the larger of its two values so that no counter
//!   dominates by its magnitude, and the two vectors are compared by cosine similarity.
//!   Each counter's relative difference is reported and flagged above a threshold (the
//!   thesis calls a proxy-target difference under 0.1 similar).
//!
//! Tramm's original criterion correlates each counter with the parallel-efficiency loss
//! across thread counts; this module compares one configuration's counter vectors, which
//! is what a single pair of runs allows.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::{ModelError, Result};

/// Named event totals of one run (counters, or the quantities of a profile).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventVector {
    /// Where it came from (file, region).
    pub name: String,
    /// Event name -> total.
    pub events: BTreeMap<String, f64>,
    /// Wall time, seconds, when known.
    pub time_s: Option<f64>,
}

/// Spellings of the retired-instruction count (perf, PAPI, Intel, Arm, profiles).
pub const INSTRUCTION_NAMES: &[&str] = &[
    "instructions",
    "papi_tot_ins",
    "inst_retired.any",
    "inst_retired.any_p",
    "inst_retired",
    "ex_ret_instr",
];
/// Spellings of the core-cycle count.
pub const CYCLE_NAMES: &[&str] = &[
    "cycles",
    "cpu-cycles",
    "papi_tot_cyc",
    "cpu_clk_unhalted.thread",
    "cpu_clk_unhalted.thread_p",
    "cpu_cycles",
    "ls_not_halted_cyc",
];

impl EventVector {
    fn find(&self, names: &[&str]) -> Option<(&str, f64)> {
        names.iter().find_map(|n| {
            self.events
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(k, v)| (k.as_str(), *v))
        })
    }

    /// Retired instructions, when counted.
    pub fn instructions(&self) -> Option<f64> {
        self.find(INSTRUCTION_NAMES)
            .map(|x| x.1)
            .filter(|v| *v > 0.0)
    }

    /// Core cycles, when counted.
    pub fn cycles(&self) -> Option<f64> {
        self.find(CYCLE_NAMES).map(|x| x.1).filter(|v| *v > 0.0)
    }

    /// Instructions per cycle, or an error naming what is missing.
    pub fn ipc(&self) -> Result<f64> {
        match (self.instructions(), self.cycles()) {
            (Some(i), Some(c)) => Ok(i / c),
            (i, c) => Err(ModelError::Invalid(format!(
                "{}: IPC needs instructions and cycles, but {} missing (events: {}); count them (e.g. `hpcscope counters run --save FILE`, or perf's instructions,cycles)",
                self.name,
                match (i, c) {
                    (None, None) => "both are",
                    (None, _) => "instructions are",
                    _ => "cycles are",
                },
                short_list(self.events.keys())
            ))),
        }
    }
}

fn short_list<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&String> = names.collect();
    let mut s = v
        .iter()
        .take(12)
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if v.len() > 12 {
        s.push_str(&format!(" and {} more", v.len() - 12));
    }
    if s.is_empty() { "none".into() } else { s }
}

/// The IPC of a kernel and its parent in one environment.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IpcPair {
    /// Environment label.
    pub environment: String,
    /// The kernel's (mini-app's) IPC.
    pub kernel_ipc: f64,
    /// The parent's IPC.
    pub parent_ipc: f64,
    /// `parent / kernel`, as Fig. 4.2 plots it (compact-HYDRA IPC / MG-CFD IPC).
    pub ratio: f64,
    /// Deviation of this ratio from the mean ratio, percent.
    pub deviation_pct: f64,
}

/// IPC-ratio invariance over environments.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IpcInvariance {
    /// One entry per environment.
    pub pairs: Vec<IpcPair>,
    /// Mean ratio.
    pub mean_ratio: f64,
    /// Largest |deviation| from the mean, percent.
    pub max_deviation_pct: f64,
    /// Tolerance, percent.
    pub tolerance_pct: f64,
    /// `Some(true)` when every ratio is within the tolerance of the mean; `None` with one
    /// environment (invariance needs two at least).
    pub invariant: Option<bool>,
}

/// IPC-ratio invariance of `(environment, kernel, parent)` triples.
pub fn ipc_invariance(
    pairs: &[(String, &EventVector, &EventVector)],
    tolerance_pct: f64,
) -> Result<IpcInvariance> {
    if pairs.is_empty() {
        return Err(ModelError::Invalid("no kernel/parent pair given".into()));
    }
    if !(tolerance_pct.is_finite() && tolerance_pct > 0.0) {
        return Err(ModelError::Invalid(format!(
            "the tolerance must be a positive percentage, got {tolerance_pct}"
        )));
    }
    let mut out = Vec::new();
    for (env, k, p) in pairs {
        let (ki, pi) = (k.ipc()?, p.ipc()?);
        out.push(IpcPair {
            environment: env.clone(),
            kernel_ipc: ki,
            parent_ipc: pi,
            ratio: pi / ki,
            deviation_pct: 0.0,
        });
    }
    let mean = out.iter().map(|p| p.ratio).sum::<f64>() / out.len() as f64;
    for p in &mut out {
        p.deviation_pct = (p.ratio - mean) / mean * 100.0;
    }
    let max_dev = out
        .iter()
        .map(|p| p.deviation_pct.abs())
        .fold(0.0, f64::max);
    Ok(IpcInvariance {
        invariant: (out.len() > 1).then_some(max_dev <= tolerance_pct),
        pairs: out,
        mean_ratio: mean,
        max_deviation_pct: max_dev,
        tolerance_pct,
    })
}

/// How both vectors were normalized.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Events per retired instruction.
    PerInstruction,
    /// Events per second.
    PerSecond,
    /// Each event's share of its vector's sum.
    Share,
}

impl Basis {
    /// Label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Basis::PerInstruction => "per instruction",
            Basis::PerSecond => "per second",
            Basis::Share => "share of the vector",
        }
    }
}

/// One event compared.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventComparison {
    /// Event name.
    pub event: String,
    /// Normalized value of A.
    pub a: f64,
    /// Normalized value of B.
    pub b: f64,
    /// `|a - b| / max(|a|, |b|)` (0 when both are 0).
    pub relative_difference: f64,
    /// True when the relative difference exceeds the threshold.
    pub dissimilar: bool,
}

/// Counter-vector similarity of two runs.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VectorSimilarity {
    /// Normalization used.
    pub basis: Basis,
    /// Cosine similarity of the scaled vectors (1: same direction).
    pub cosine: f64,
    /// Events compared (present in both).
    pub events: Vec<EventComparison>,
    /// Events of A only (not compared).
    pub only_a: Vec<String>,
    /// Events of B only (not compared).
    pub only_b: Vec<String>,
    /// Events zero in both (not compared).
    pub zero_in_both: Vec<String>,
    /// Threshold of the relative difference.
    pub threshold: f64,
    /// Number of events above the threshold.
    pub dissimilar: usize,
}

/// Compares the event vectors of `a` and `b` (see the module documentation).
pub fn vector_similarity(
    a: &EventVector,
    b: &EventVector,
    threshold: f64,
) -> Result<VectorSimilarity> {
    if !(threshold.is_finite() && threshold > 0.0) {
        return Err(ModelError::Invalid(format!(
            "the threshold must be positive, got {threshold}"
        )));
    }
    let basis = match (a.instructions(), b.instructions(), a.time_s, b.time_s) {
        (Some(_), Some(_), _, _) => Basis::PerInstruction,
        (_, _, Some(x), Some(y)) if x > 0.0 && y > 0.0 => Basis::PerSecond,
        _ => Basis::Share,
    };
    let norm = |v: &EventVector| -> f64 {
        match basis {
            Basis::PerInstruction => v.instructions().expect("checked"),
            Basis::PerSecond => v.time_s.expect("checked"),
            Basis::Share => v.events.values().map(|x| x.abs()).sum::<f64>(),
        }
    };
    let (na, nb) = (norm(a), norm(b));
    if na <= 0.0 || nb <= 0.0 {
        return Err(ModelError::Invalid(format!(
            "'{}' or '{}' has no non-zero event to compare",
            a.name, b.name
        )));
    }
    let inst_a = a.find(INSTRUCTION_NAMES).map(|x| x.0.to_ascii_lowercase());
    let mut events = Vec::new();
    let mut zero = Vec::new();
    let mut only_b = Vec::new();
    let (mut dot, mut sa, mut sb) = (0.0, 0.0, 0.0);
    for (k, &va) in &a.events {
        if !va.is_finite() {
            continue;
        }
        // The normalizer itself is 1 in both: it says nothing.
        if basis == Basis::PerInstruction && inst_a.as_deref() == Some(&k.to_ascii_lowercase()) {
            continue;
        }
        let Some(&vb) = b.events.get(k) else { continue };
        if !vb.is_finite() {
            continue;
        }
        let (x, y) = (va / na, vb / nb);
        let m = x.abs().max(y.abs());
        if m == 0.0 {
            zero.push(k.clone());
            continue;
        }
        let (ux, uy) = (x / m, y / m);
        dot += ux * uy;
        sa += ux * ux;
        sb += uy * uy;
        let rel = (x - y).abs() / m;
        events.push(EventComparison {
            event: k.clone(),
            a: x,
            b: y,
            relative_difference: rel,
            dissimilar: rel > threshold,
        });
    }
    let only_a: Vec<String> = a
        .events
        .keys()
        .filter(|k| !b.events.contains_key(*k))
        .cloned()
        .collect();
    for k in b.events.keys() {
        if !a.events.contains_key(k) {
            only_b.push(k.clone());
        }
    }
    if events.is_empty() {
        return Err(ModelError::Invalid(format!(
            "'{}' and '{}' share no non-zero event (A only: {}; B only: {}); count the same events in both runs",
            a.name,
            b.name,
            short_list(only_a.iter()),
            short_list(only_b.iter())
        )));
    }
    let dissimilar = events.iter().filter(|e| e.dissimilar).count();
    Ok(VectorSimilarity {
        basis,
        cosine: dot / (sa.sqrt() * sb.sqrt()),
        events,
        only_a,
        only_b,
        zero_in_both: zero,
        threshold,
        dissimilar,
    })
}

/// The quantities of a profile (a `mix` or `counters` profile) as an event vector: FLOPs,
/// FP instructions, loads, stores, instructions and bytes per memory level, summed over the
/// threads of `region` (or of every region).
pub fn from_profile(
    p: &hpcscope_core::profile::Profile,
    name: &str,
    region: Option<&str>,
) -> Result<EventVector> {
    let regions: Vec<_> = p
        .regions
        .iter()
        .filter(|r| region.is_none_or(|n| r.name == n))
        .collect();
    if regions.is_empty() {
        return Err(ModelError::Invalid(format!(
            "{name}: no region '{}' (regions: {})",
            region.unwrap_or(""),
            p.regions
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut ev: BTreeMap<String, f64> = BTreeMap::new();
    let mut time: Option<f64> = None;
    for r in regions {
        for t in &r.threads {
            let mut add = |k: &str, v: f64| *ev.entry(k.to_string()).or_insert(0.0) += v;
            add("flops", t.flops);
            add("fp_instructions", t.fp_instructions);
            if let Some(v) = t.loads {
                add("loads", v);
            }
            if let Some(v) = t.stores {
                add("stores", v);
            }
            if let Some(v) = t.instructions {
                add("instructions", v);
            }
            if let Some(b) = t.memory.bytes_total {
                add("bytes_total", b);
            }
            if let Some(b) = &t.memory.bytes_per_level {
                for l in b {
                    add(&format!("bytes_{}", l.level), l.bytes);
                }
            }
            if let Some(s) = t.time_s {
                time = Some(time.map_or(s, |x: f64| x.max(s)));
            }
        }
    }
    Ok(EventVector {
        name: name.into(),
        events: ev,
        time_s: time,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, kv: &[(&str, f64)]) -> EventVector {
        EventVector {
            name: name.into(),
            events: kv.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            time_s: None,
        }
    }

    #[test]
    fn identical_mixes_at_different_sizes_are_similar() {
        let a = ev(
            "a",
            &[
                ("instructions", 1e9),
                ("cycles", 5e8),
                ("loads", 3e8),
                ("fp", 2e8),
            ],
        );
        let b = ev(
            "b",
            &[
                ("instructions", 2e9),
                ("cycles", 1e9),
                ("loads", 6e8),
                ("fp", 4e8),
            ],
        );
        let s = vector_similarity(&a, &b, 0.1).unwrap();
        assert_eq!(s.basis, Basis::PerInstruction);
        assert!((s.cosine - 1.0).abs() < 1e-12);
        assert_eq!(s.dissimilar, 0);
        assert_eq!(s.events.len(), 3); // instructions, the normalizer, is left out
    }

    #[test]
    fn a_different_mix_is_flagged() {
        let a = ev("a", &[("instructions", 1e9), ("loads", 3e8), ("fp", 2e8)]);
        let b = ev("b", &[("instructions", 1e9), ("loads", 3e8), ("fp", 1e8)]);
        let s = vector_similarity(&a, &b, 0.1).unwrap();
        let fp = s.events.iter().find(|e| e.event == "fp").unwrap();
        assert!((fp.relative_difference - 0.5).abs() < 1e-12);
        assert_eq!(s.dissimilar, 1);
        // Scaled vectors (1, 1) and (1, 0.5): cosine 1.5 / (sqrt 2 sqrt 1.25).
        assert!((s.cosine - 1.5 / (2f64.sqrt() * 1.25f64.sqrt())).abs() < 1e-12);
    }

    #[test]
    fn ipc_ratio_invariance_section_4_1() {
        // Fig. 4.2's argument in numbers the thesis gives: going from KNL to Skylake under
        // AVX2, MG-CFD's IPC grows x3.69 and compact-HYDRA's x2.75, so the ratio moves by
        // 2.75 / 3.69 = 0.745: not invariant.
        let k1 = ev("mg-knl", &[("instructions", 1.0e9), ("cycles", 1.0e9)]);
        let p1 = ev("hy-knl", &[("instructions", 1.0e9), ("cycles", 1.0e9)]);
        let k2 = ev("mg-skx", &[("instructions", 3.69e9), ("cycles", 1.0e9)]);
        let p2 = ev("hy-skx", &[("instructions", 2.75e9), ("cycles", 1.0e9)]);
        let r =
            ipc_invariance(&[("knl".into(), &k1, &p1), ("skx".into(), &k2, &p2)], 10.0).unwrap();
        assert!((r.pairs[1].ratio / r.pairs[0].ratio - 2.75 / 3.69).abs() < 1e-12);
        assert_eq!(r.invariant, Some(false));
        let one = ipc_invariance(&[("knl".into(), &k1, &p1)], 10.0).unwrap();
        assert_eq!(one.invariant, None);
        let e =
            ipc_invariance(&[("x".into(), &ev("k", &[("cycles", 1.0)]), &p1)], 10.0).unwrap_err();
        assert!(e.to_string().contains("instructions are missing"), "{e}");
    }

    #[test]
    fn no_shared_event_is_an_error() {
        let a = ev("a", &[("x", 1.0)]);
        let b = ev("b", &[("y", 1.0)]);
        let e = vector_similarity(&a, &b, 0.1).unwrap_err();
        assert!(e.to_string().contains("share no non-zero event"), "{e}");
    }
}
