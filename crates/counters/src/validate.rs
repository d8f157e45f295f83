//! Validation against a kernel with known work, as seed 001 does (section 3.2): the STREAM
//! triad `a[i] = b[i] + s * c[i]` does 2 flops and moves 24 bytes (two 8-byte loads, one
//! 8-byte store) per element in double precision. Each counter-derived metric is compared
//! with the analytical value; the seed's pass threshold for flops is 0.5 %.
//!
//! Two sources of counters: a live run of the triad in this process (needs a PMU for the
//! hardware metrics; software events always count), and the counters a perfectly vectorised
//! triad would produce on a recipe's CPU (research note, test plan point 5), which checks the
//! recipe's formula chain end to end with a known 0 % error.

use serde::Serialize;

use crate::catalogue::{Compiled, Recipe};
use crate::compute::{self, RegionMetrics};
use crate::error::Result;
use crate::raw::{Collector, Count, RawData, Status};

/// The analytical work of a triad run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Expected {
    /// Elements.
    pub n: u64,
    /// Repetitions.
    pub reps: u64,
    /// 2 n reps.
    pub flops: f64,
    /// 24 n reps.
    pub ls_bytes: f64,
    /// flops / ls_bytes = 1/12.
    pub ai: f64,
    /// 16 n reps.
    pub ld_bytes: f64,
    /// 8 n reps.
    pub st_bytes: f64,
}

/// Expected values of a DP triad of `n` elements repeated `reps` times.
pub fn triad_expected(n: u64, reps: u64) -> Expected {
    let e = (n * reps) as f64;
    Expected {
        n,
        reps,
        flops: 2.0 * e,
        ls_bytes: 24.0 * e,
        ai: 2.0 / 24.0,
        ld_bytes: 16.0 * e,
        st_bytes: 8.0 * e,
    }
}

/// One metric against its analytical value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// Metric id.
    pub metric: String,
    /// Analytical value.
    pub expected: f64,
    /// Counter-derived value.
    pub measured: Option<f64>,
    /// (measured - expected) / expected, percent.
    pub error_pct: Option<f64>,
    /// Why there is no measurement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub na: Option<String>,
}

/// Compares a region's metrics with the expected work.
pub fn checks(r: &RegionMetrics, e: &Expected) -> Vec<Check> {
    [
        ("flops", e.flops),
        ("ls_bytes", e.ls_bytes),
        ("ai", e.ai),
        ("flops_per_ld_bytes", e.flops / e.ld_bytes),
        ("flops_per_st_bytes", e.flops / e.st_bytes),
    ]
    .into_iter()
    .map(|(id, x)| {
        let m = r.get(id);
        let v = m.and_then(|m| m.value);
        Check {
            metric: id.to_string(),
            expected: x,
            measured: v,
            error_pct: v.map(|v| (v - x) / x * 100.0),
            na: m.and_then(|m| m.na.clone()),
        }
    })
    .collect()
}

/// The triad kernel; returns a checksum so it is not optimised away.
pub fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64, reps: u64) -> f64 {
    for _ in 0..reps {
        for ((x, y), z) in a.iter_mut().zip(b).zip(c) {
            *x = y + s * z;
        }
        std::hint::black_box(&mut *a);
    }
    a.iter().step_by(97).sum()
}

/// The counters a triad vectorised at the CPU's widest SIMD width would produce, for the
/// seed's two recipes (an FMA instruction counts twice in Intel's FP_ARITH events), Sapphire
/// Rapids, Zen 4 and Zen 5 (loads and stores separate from the FMA, no other FP uops).
pub fn synthetic_triad(recipe: &Recipe, n: u64, reps: u64) -> Option<RawData> {
    let e = (n * reps) as f64;
    let mut raw = RawData::new("synthetic triad", "synthetic", Collector::Papi);
    let t = raw.thread_mut("triad", 0);
    t.time_s = Some(1.0);
    let c = &mut t.counters;
    match recipe.recipe.id.as_str() {
        "intel-cascadelake" | "intel-sapphirerapids" => {
            let vec = e / 8.0; // 512-bit vectors of 8 doubles
            for w in ["SCALAR", "128B_PACKED", "256B_PACKED", "512B_PACKED"] {
                for p in ["SINGLE", "DOUBLE"] {
                    c.insert(format!("FP_ARITH_INST_RETIRED:{w}_{p}"), Count::of(0.0));
                }
            }
            c.insert(
                "FP_ARITH_INST_RETIRED:512B_PACKED_DOUBLE".into(),
                Count::of(2.0 * vec),
            );
            c.insert("PAPI_LD_INS".into(), Count::of(2.0 * vec));
            c.insert("PAPI_SR_INS".into(), Count::of(vec));
        }
        "amd-zen4" | "amd-zen5" => {
            let vec = e / 8.0; // AVX-512: one FMA uop per 8 doubles, 2 flops a lane
            c.insert("fp_ret_sse_avx_ops.all".into(), Count::of(2.0 * e));
            for w in ["scalar", "pack_128", "pack_256"] {
                c.insert(
                    format!("fp_ops_retired_by_width.{w}_uops_retired"),
                    Count::of(0.0),
                );
            }
            c.insert(
                "fp_ops_retired_by_width.pack_512_uops_retired".into(),
                Count::of(vec),
            );
            c.insert("ls_dispatch.ld_dispatch".into(), Count::of(2.0 * vec));
            c.insert("ls_dispatch.store_dispatch".into(), Count::of(vec));
            c.insert("ls_dispatch.ld_st_dispatch".into(), Count::of(0.0));
        }
        "fujitsu-a64fx" => {
            let vec = e / 8.0; // SVE-512
            // One FMA per vector: 2 flops x 8 lanes, counted as 2 x 2 scalable (128-bit) ops x 4.
            c.insert("FP_DP_SCALE_OPS_SPEC".into(), Count::of(vec * 4.0));
            c.insert("FP_DP_FIXED_OPS_SPEC".into(), Count::of(0.0));
            c.insert("FP_SP_SCALE_OPS_SPEC".into(), Count::of(0.0));
            c.insert("FP_SP_FIXED_OPS_SPEC".into(), Count::of(0.0));
            c.insert("FP_SPEC".into(), Count::of(vec));
            c.insert("LD_SPEC".into(), Count::of(2.0 * vec));
            c.insert("ST_SPEC".into(), Count::of(vec));
            c.insert("ASE_SVE_LD_SPEC".into(), Count::of(2.0 * vec));
            c.insert("ASE_SVE_ST_SPEC".into(), Count::of(vec));
            c.insert("FP_LD_SPEC".into(), Count::of(0.0));
            c.insert("FP_ST_SPEC".into(), Count::of(0.0));
        }
        _ => return None,
    }
    Some(raw)
}

/// Runs the triad in this process, counting the software events and, if the PMU allows,
/// the recipe's hardware events (one kernel run per group, as the seed does).
pub fn measure_triad(recipe: &Recipe, events: &[String], n: u64, reps: u64) -> Result<RawData> {
    use hpcscope_host::perf::{self as sys, EventSpec, Group, OpenOptions};
    let nn = n as usize;
    let mut a = vec![0.0f64; nn];
    let b = vec![1.0f64; nn];
    let c = vec![2.0f64; nn];
    let pmu = crate::perf::probe();
    let mut raw = RawData::new("triad", "perf_event", Collector::Perf);
    let mut groups: Vec<Vec<EventSpec>> = vec![
        sys::DEFAULT_SOFTWARE
            .iter()
            .map(|s| EventSpec::parse(s).expect("known software event"))
            .collect(),
    ];
    if pmu.available {
        let mut hw = Vec::new();
        for e in events {
            if let Some(d) = recipe.events.get(e)
                && let Ok(r) =
                    crate::perf::resolve(e, d, std::path::Path::new(crate::perf::SYSFS_PMUS))
            {
                hw.extend(r.into_iter().filter(|x| x.cpu.is_none()).map(|x| x.spec));
            }
        }
        groups.extend(hw.chunks(4).map(|c| c.to_vec()));
    } else {
        raw.hardware_unavailable = Some(pmu.to_string());
        for e in events {
            raw.thread_mut("triad", 0)
                .counters
                .insert(e.clone(), Count::missing(Status::NotSupported));
        }
    }
    // Warm up (page faults outside the measurement).
    std::hint::black_box(triad(&mut a, &b, &c, 3.0, 1));
    let opts = OpenOptions {
        disabled: true,
        exclude_kernel: sys::must_exclude_kernel(),
        ..OpenOptions::default()
    };
    let mut first_time = None;
    for g in &groups {
        let grp = match Group::open(g, 0, -1, opts) {
            Ok(x) => x,
            Err(f) => {
                for (e, why) in f {
                    raw.warnings.push(format!("{e}: {why}"));
                    raw.thread_mut("triad", 0)
                        .counters
                        .insert(e, Count::missing(Status::NotSupported));
                }
                continue;
            }
        };
        let _ = grp.reset();
        let t0 = std::time::Instant::now();
        let _ = grp.enable();
        std::hint::black_box(triad(&mut a, &b, &c, 3.0, reps));
        let _ = grp.disable();
        let dt = t0.elapsed().as_secs_f64();
        first_time.get_or_insert(dt);
        let mut v = [0u64; sys::MAX_GROUP];
        let (en, run) = grp.read_into(&mut v).unwrap_or((0, 0));
        let t = raw.thread_mut("triad", 0);
        for (i, name) in grp.names.iter().enumerate() {
            t.counters
                .insert(name.clone(), Count::from_times(v[i], en, run));
        }
        for (e, _) in &grp.failed {
            t.counters
                .insert(e.clone(), Count::missing(Status::NotSupported));
        }
        for (e, why) in &grp.failed {
            raw.warnings.push(format!("{e}: {why}"));
        }
    }
    let t = raw.thread_mut("triad", 0);
    t.time_s = first_time;
    t.calls = Some(1);
    Ok(raw)
}

/// Runs the validation: returns the report of the triad's counters and the checks.
pub fn validate_raw(
    compiled: &Compiled,
    order: &[String],
    raw: &RawData,
    e: &Expected,
) -> (compute::Report, Vec<Check>) {
    let rep = compute::compute(compiled, order, raw, &compute::Options::default());
    let checks = rep
        .regions
        .first()
        .map(|r| checks(r, e))
        .unwrap_or_default();
    (rep, checks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{Catalogue, Variant};

    #[test]
    fn synthetic_triads_validate_exactly() {
        let cat = Catalogue::builtin();
        let order: Vec<String> = cat.metrics.metrics.iter().map(|m| m.id.clone()).collect();
        for id in [
            "intel-cascadelake",
            "intel-sapphirerapids",
            "fujitsu-a64fx",
            "amd-zen4",
            "amd-zen5",
        ] {
            let r = cat.find(id).unwrap();
            for v in [Variant::AsPublished, Variant::Corrected] {
                let c = cat.compile(r, v).unwrap();
                let raw = synthetic_triad(r, 1 << 20, 10).unwrap();
                let (_, checks) = validate_raw(&c, &order, &raw, &triad_expected(1 << 20, 10));
                for ch in checks {
                    let err = ch
                        .error_pct
                        .unwrap_or_else(|| panic!("{id} {}: {:?}", ch.metric, ch.na));
                    assert!(err.abs() < 1e-9, "{id} {v}: {} off by {err} %", ch.metric);
                }
            }
        }
        assert!(synthetic_triad(cat.find("zen3").unwrap(), 1, 1).is_none());
    }
}
