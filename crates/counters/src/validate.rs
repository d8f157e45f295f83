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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
/// Rapids, Zen 3 (AVX2; its byte metrics are NA, as on the CPU), Zen 4 and Zen 5 (loads and
/// stores separate from the FMA, no other FP uops).
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
        "amd-zen3" => {
            // AVX2, no AVX-512: one FMA per 4 doubles, one of the two loads folded into it.
            // Zen 3 has no load/store width counters: the byte metrics are NA, as on the CPU.
            let vec = e / 4.0;
            c.insert("fp_ret_sse_avx_ops.all".into(), Count::of(2.0 * e));
            c.insert("ex_ret_mmx_fp_instr.sse_instr".into(), Count::of(3.0 * vec));
            c.insert("ls_dispatch.ld_dispatch".into(), Count::of(2.0 * vec));
            c.insert("ls_dispatch.store_dispatch".into(), Count::of(vec));
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
    let nn = n as usize;
    let mut a = vec![0.0f64; nn];
    let b = vec![1.0f64; nn];
    let c = vec![2.0f64; nn];
    // Warm up (page faults outside the measurement).
    std::hint::black_box(triad(&mut a, &b, &c, 3.0, 1));
    measure_with(recipe, events, "triad", &mut || {
        std::hint::black_box(triad(&mut a, &b, &c, 3.0, reps));
    })
}

/// Runs `kernel` once per counter group (software events first, then the recipe's
/// hardware events when the PMU allows), as region `name`.
pub fn measure_with(
    recipe: &Recipe,
    events: &[String],
    name: &str,
    kernel: &mut dyn FnMut(),
) -> Result<RawData> {
    use hpcscope_host::perf::{self as sys, EventSpec, Group, OpenOptions};
    let pmu = crate::perf::probe();
    let mut raw = RawData::new(name, "perf_event", Collector::Perf);
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
            raw.thread_mut(name, 0)
                .counters
                .insert(e.clone(), Count::missing(Status::NotSupported));
        }
    }
    kernel();
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
                    raw.thread_mut(name, 0)
                        .counters
                        .insert(e, Count::missing(Status::NotSupported));
                }
                continue;
            }
        };
        let _ = grp.reset();
        let t0 = std::time::Instant::now();
        let _ = grp.enable();
        kernel();
        let _ = grp.disable();
        let dt = t0.elapsed().as_secs_f64();
        first_time.get_or_insert(dt);
        let mut v = [0u64; sys::MAX_GROUP];
        let (en, run) = grp.read_into(&mut v).unwrap_or((0, 0));
        let t = raw.thread_mut(name, 0);
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
    let t = raw.thread_mut(name, 0);
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

// ---------------------------------------------------------------------------------------
// The micro-benchmark suite (crate::suite): every kernel's counted values against its
// analytical ones.

/// The seed's pass threshold for exact counts (FLOPs; we hold FP instructions and bytes
/// loaded and stored to it as well): |error| < 0.5 %.
pub const TOLERANCE_PCT: f64 = 0.5;

/// The verdict of one comparison.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Within the tolerance.
    Pass,
    /// Outside it.
    Fail,
    /// Nothing counted (the reason is in the note).
    NotAvailable,
    /// Per call of a library function: shown, not judged (libm's algorithm is not the
    /// mathematical count; seed 001 Figures 9/10).
    PerCall,
}

impl Verdict {
    /// Name printed in the text report.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::NotAvailable => "NA",
            Verdict::PerCall => "per call",
        }
    }
}

/// One metric of one kernel.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteCheck {
    /// Kernel (`fp.fma.256`, `stream.triad.48KiB`...).
    pub kernel: String,
    /// Metric id.
    pub metric: String,
    /// Analytical value.
    pub expected: f64,
    /// Counted value.
    pub counted: Option<f64>,
    /// (counted - expected) / expected, percent (None where expected is 0 or nothing was
    /// counted).
    pub error_pct: Option<f64>,
    /// The tolerance applied, percent.
    pub tolerance_pct: f64,
    /// Verdict.
    pub verdict: Verdict,
    /// Why NA, or what a per-call value means.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Compares one kernel's counted values with its analytical ones. `na` is the reason when
/// a metric was not counted at all.
pub fn compare(
    kernel: &crate::suite::Kernel,
    counted: &crate::suite::Values,
    na: Option<&str>,
) -> Vec<SuiteCheck> {
    let name = kernel.to_string();
    let expected = kernel.expected();
    let mut out = Vec::new();
    if let crate::suite::Kernel::Libm { n, .. } = kernel {
        let calls = *n as f64;
        let per = |k: &str| counted.get(k).map(|v| v / calls);
        let note = match (per("flops"), per("fp_ins")) {
            (Some(f), Some(i)) => format!(
                "{f:.1} FLOPs and {i:.1} FP instructions per call (the sum adds 1): libm's \
                 algorithm, not one operation; seed 001 found cos and log do not match either"
            ),
            (Some(f), None) => format!("{f:.1} FLOPs per call (the sum adds 1)"),
            _ => na.unwrap_or("not counted").to_string(),
        };
        let c = counted.get("flops").copied();
        out.push(SuiteCheck {
            kernel: name,
            metric: "flops".into(),
            expected: calls,
            counted: c,
            error_pct: c.map(|c| (c - calls) / calls * 100.0),
            tolerance_pct: TOLERANCE_PCT,
            verdict: if c.is_some() {
                Verdict::PerCall
            } else {
                Verdict::NotAvailable
            },
            note: Some(note),
        });
        return out;
    }
    for (metric, &x) in &expected {
        let c = counted.get(metric).copied().filter(|v| v.is_finite());
        let (error_pct, verdict) = match c {
            None => (None, Verdict::NotAvailable),
            Some(c) if x == 0.0 => (
                None,
                if c == 0.0 {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                },
            ),
            Some(c) => {
                let e = (c - x) / x * 100.0;
                (
                    Some(e),
                    if e.abs() < TOLERANCE_PCT {
                        Verdict::Pass
                    } else {
                        Verdict::Fail
                    },
                )
            }
        };
        out.push(SuiteCheck {
            kernel: name.clone(),
            metric: metric.clone(),
            expected: x,
            counted: c,
            error_pct,
            tolerance_pct: TOLERANCE_PCT,
            verdict,
            note: if verdict == Verdict::NotAvailable {
                Some(
                    na.map(str::to_string)
                        .unwrap_or_else(|| format!("the counters give no {metric} here")),
                )
            } else {
                None
            },
        });
    }
    out
}

/// Checks `counters validate --kernels`: each a group of [`crate::suite::GROUPS`].
pub fn check_groups(groups: &[String]) -> crate::Result<()> {
    use crate::suite::GROUPS;
    match groups.iter().find(|g| !GROUPS.contains(&g.as_str())) {
        Some(g) => Err(crate::Error::Input(format!(
            "--kernels {g}: unknown group; give some of {}",
            GROUPS.join(", ")
        ))),
        None => Ok(()),
    }
}

/// The suite's result.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteReport {
    /// Who counted: `perf`, `mix` or a file's `source`.
    pub counted_by: String,
    /// Remarks (what could not be counted and why).
    pub notes: Vec<String>,
    /// Every check, kernel by kernel.
    pub checks: Vec<SuiteCheck>,
    /// Checks that passed.
    pub passed: usize,
    /// Checks that failed.
    pub failed: usize,
    /// Checks with nothing counted.
    pub not_available: usize,
    /// Per-call values shown (libm).
    pub per_call: usize,
}

impl SuiteReport {
    /// Builds the report from the checks.
    pub fn new(counted_by: &str, notes: Vec<String>, checks: Vec<SuiteCheck>) -> SuiteReport {
        let n = |v: Verdict| checks.iter().filter(|c| c.verdict == v).count();
        SuiteReport {
            counted_by: counted_by.to_string(),
            notes,
            passed: n(Verdict::Pass),
            failed: n(Verdict::Fail),
            not_available: n(Verdict::NotAvailable),
            per_call: n(Verdict::PerCall),
            checks,
        }
    }

    /// The suite's verdict: a finding when a check failed, an environment limit when
    /// nothing was counted (only a report of NAs is "nothing": per-call rows, libm's, count).
    pub fn verdict(&self) -> Result<(), hpcscope_core::Failure> {
        if self.failed > 0 {
            return Err(hpcscope_core::Failure::finding(format!(
                "{} of {} checks outside {} %",
                self.failed,
                self.checks.len(),
                TOLERANCE_PCT
            )));
        }
        if self.passed + self.per_call == 0 {
            return Err(hpcscope_core::Failure::environment(format!(
                "nothing was counted: {}",
                self.notes.join("; ")
            )));
        }
        Ok(())
    }

    /// The text (or CSV) table.
    pub fn text(&self, csv: bool) -> String {
        use std::fmt::Write;
        let mut t = String::new();
        let head = [
            "kernel",
            "metric",
            "analytical",
            "counted",
            "error %",
            "verdict",
        ];
        if csv {
            let _ = writeln!(t, "{},note", head.join(","));
        } else {
            let _ = writeln!(
                t,
                "counted by {}; pass: |error| < {TOLERANCE_PCT} % (seed 001, section 3.2)",
                self.counted_by
            );
            let _ = writeln!(
                t,
                "{:<24} {:<16} {:>14} {:>14} {:>9}  {}",
                head[0], head[1], head[2], head[3], head[4], head[5]
            );
        }
        for c in &self.checks {
            let counted = c.counted.map_or("NA".into(), crate::output::fmt_value);
            let err = c.error_pct.map_or("-".into(), |e| format!("{e:+.3}"));
            if csv {
                let _ = writeln!(
                    t,
                    "{},{},{},{},{},{},\"{}\"",
                    c.kernel,
                    c.metric,
                    c.expected,
                    c.counted.map_or(String::new(), |v| v.to_string()),
                    c.error_pct.map_or(String::new(), |v| format!("{v:.4}")),
                    c.verdict.label(),
                    c.note.as_deref().unwrap_or("").replace('"', "'")
                );
            } else {
                let _ = writeln!(
                    t,
                    "{:<24} {:<16} {:>14} {:>14} {:>9}  {}{}",
                    c.kernel,
                    c.metric,
                    crate::output::fmt_value(c.expected),
                    counted,
                    err,
                    c.verdict.label(),
                    c.note
                        .as_deref()
                        .filter(|_| c.verdict == Verdict::PerCall)
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                );
            }
        }
        if !csv {
            let _ = writeln!(
                t,
                "{} passed, {} failed, {} not counted, {} per call (not judged)",
                self.passed, self.failed, self.not_available, self.per_call
            );
            for n in &self.notes {
                let _ = writeln!(t, "note: {n}");
            }
        }
        t
    }
}

/// What an emulator counted in one kernel's function (hpcscope mix's totals of a region).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EmulatorCounts {
    /// FLOPs.
    pub flops: u64,
    /// FP arithmetic instructions.
    pub fp_instructions: u64,
    /// FP instructions per precision and width (`f64_256`...).
    pub fp_by_width: std::collections::BTreeMap<String, u64>,
    /// Bytes loaded.
    pub bytes_loaded: u64,
    /// Bytes stored.
    pub bytes_stored: u64,
}

/// The values an emulator's counts give for `kernel`: FLOPs, FP instructions (of the
/// kernel's width for the crunch kernels), bytes loaded and stored, and the ratios.
pub fn counted_from_emulator(
    kernel: &crate::suite::Kernel,
    c: &EmulatorCounts,
) -> crate::suite::Values {
    let mut v = crate::suite::Values::new();
    v.insert("flops".into(), c.flops as f64);
    let ins = match kernel {
        crate::suite::Kernel::Crunch { width, .. } => {
            c.fp_by_width.get(&width.mix_key()).copied().unwrap_or(0)
        }
        _ => c.fp_instructions,
    };
    v.insert("fp_ins".into(), ins as f64);
    if c.fp_instructions > 0 {
        v.insert(
            "flops_per_fpins".into(),
            c.flops as f64 / c.fp_instructions as f64,
        );
    }
    v.insert("ld_bytes".into(), c.bytes_loaded as f64);
    v.insert("st_bytes".into(), c.bytes_stored as f64);
    let ls = c.bytes_loaded + c.bytes_stored;
    v.insert("ls_bytes".into(), ls as f64);
    if ls > 0 {
        v.insert("ai".into(), c.flops as f64 / ls as f64);
    }
    v
}

/// The values a recipe's metrics give for a kernel (perf or an imported counter file).
pub fn counted_from_metrics(r: &RegionMetrics) -> crate::suite::Values {
    let mut v = crate::suite::Values::new();
    for id in ["flops", "ls_bytes", "ai", "flops_per_fpins"] {
        if let Some(x) = r.value(id) {
            v.insert(id.into(), x);
        }
    }
    if let (Some(f), Some(i)) = (r.value("flops"), r.value("flops_per_fpins"))
        && i > 0.0
    {
        v.insert("fp_ins".into(), f / i);
    }
    for (id, ratio) in [
        ("ld_bytes", "flops_per_ld_bytes"),
        ("st_bytes", "flops_per_st_bytes"),
    ] {
        if let (Some(f), Some(x)) = (r.value("flops"), r.value(ratio))
            && x > 0.0
            && f > 0.0
        {
            v.insert(id.into(), f / x);
        }
    }
    v
}

/// A file of counted values (`counters validate --counted FILE`): kernel argument (as
/// `counters kernel` reads it) -> metric -> value.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountedFile {
    /// Who counted (a tool and version) and how.
    pub source: String,
    /// Remarks kept with the values (provenance).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Kernel argument -> metric -> value.
    pub kernels: std::collections::BTreeMap<String, crate::suite::Values>,
}

/// Validates the counted values of a file.
pub fn validate_file(text: &str, path: &str) -> Result<SuiteReport> {
    let f: CountedFile = serde_json::from_str(text).map_err(|e| {
        crate::error::Error::Input(format!(
            "{path}: line {} column {}: {e}; the file is {{\"source\": ..., \"kernels\": {{\"fp.add.256:1000\": {{\"flops\": ...}}}}}}",
            e.line(),
            e.column()
        ))
    })?;
    let mut checks = Vec::new();
    for (arg, values) in &f.kernels {
        let k = crate::suite::Kernel::parse(arg)
            .map_err(|e| crate::error::Error::Input(format!("{path}: {e}")))?;
        checks.extend(compare(&k, values, Some("not in the file")));
    }
    Ok(SuiteReport::new(&f.source, f.notes, checks))
}

/// Runs the suite in this process under perf_event_open, one kernel at a time, with the
/// recipe's events (and the software events). Without a PMU the hardware values are NA
/// and the report says why.
pub fn measure_suite(
    compiled: &Compiled,
    order: &[String],
    recipe: &Recipe,
    events: &[String],
    kernels: &[crate::suite::Kernel],
) -> Result<SuiteReport> {
    let mut checks = Vec::new();
    let mut notes = Vec::new();
    for k in kernels {
        if !k.runs_here() {
            notes.push(format!("{k}: this CPU lacks the instructions; skipped"));
            continue;
        }
        let mut buf = crate::suite::Buffers::new(k);
        let raw = measure_with(recipe, events, &k.to_string(), &mut || {
            buf.run(k);
        })?;
        let rep = compute::compute(compiled, order, &raw, &compute::Options::default());
        let counted = rep
            .regions
            .first()
            .map(counted_from_metrics)
            .unwrap_or_default();
        let na = raw.hardware_unavailable.clone();
        if let Some(h) = &na
            && !notes.iter().any(|n| n == h)
        {
            notes.push(h.clone());
        }
        checks.extend(compare(k, &counted, na.as_deref()));
    }
    Ok(SuiteReport::new("perf", notes, checks))
}

/// `counters validate` on the suite, counted here by perf: the plan (`quick`: the emulated
/// plan's sizes; else the host's, sized to its caches), limited to the kernel `groups`
/// (every group when empty), with the recipe `choice` picks for this CPU (its note leads
/// the report's notes).
pub fn suite_on_perf(
    choice: &crate::RecipeChoice,
    quick: bool,
    groups: &[String],
) -> Result<SuiteReport> {
    use crate::suite;
    let widths = suite::host_widths();
    let plan = if quick {
        suite::Plan::emulated(widths)
    } else {
        suite::Plan::native(widths, &suite::host_data_caches())
    };
    let kernels = suite::select(&plan, groups);
    let cat = choice.catalogue()?;
    let chosen = choice.pick(&cat, None)?;
    let recipe = chosen.recipe;
    let compiled = cat.compile(recipe, choice.variant)?;
    let events = recipe.needed_events(&cat.metrics, choice.variant);
    let order = crate::measure::metric_order(&cat);
    let mut rep = measure_suite(&compiled, &order, recipe, &events, &kernels)?;
    rep.notes.splice(0..0, chosen.note);
    if suite::selects(groups, "fp") {
        let omitted = suite::crunch_omissions(&plan.widths, false);
        rep.notes = [omitted, std::mem::take(&mut rep.notes)].concat();
    }
    Ok(rep)
}

/// The triad checked against its analytical counts: what it was expected to count, each
/// metric's check, the metrics computed, and the recipe choice's note.
#[derive(Debug, Clone)]
pub struct TriadValidation {
    /// The analytical counts.
    pub expected: Expected,
    /// One check per metric.
    pub checks: Vec<Check>,
    /// The metrics computed from the counters.
    pub report: compute::Report,
    /// Why the recipe was chosen, when it is a stand-in.
    pub note: Option<String>,
}

/// `counters validate --triad --format json` (and `--synthetic`).
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TriadJson<'a> {
    /// One check per metric.
    pub checks: &'a [Check],
    /// What the triad must count.
    pub expected: &'a Expected,
    /// The metrics computed from the counts.
    pub report: &'a compute::Report,
}

impl TriadValidation {
    /// The check of `n` elements and `reps` repetitions in `format` (JSON: the expected
    /// counts, the checks and the report).
    pub fn render(&self, n: u64, reps: u64, format: hpcscope_report::Format) -> String {
        let (e, checks, rep) = (&self.expected, &self.checks, &self.report);
        match format {
            hpcscope_report::Format::Json => format!(
                "{}\n",
                // Keys sorted at every level, as this output has always been printed.
                serde_json::to_value(TriadJson {
                    checks,
                    expected: e,
                    report: rep,
                })
                .and_then(|v| serde_json::to_string_pretty(&v))
                .unwrap_or_default()
            ),
            f => crate::output::validation_text(
                n,
                reps,
                e,
                checks,
                rep,
                f == hpcscope_report::Format::Csv,
            ),
        }
    }

    /// An environment limit when the counters needed were not there.
    pub fn verdict(&self) -> Result<(), hpcscope_core::Failure> {
        match &self.report.hardware_unavailable {
            Some(h) => Err(hpcscope_core::Failure::environment(format!(
                "validation needs hardware counters: {h}"
            ))),
            None => Ok(()),
        }
    }
}

/// `counters validate --triad` (measured here by perf) or `--synthetic` (the counters the
/// recipe's CPU would give): `n` elements, `reps` repetitions.
pub fn check_triad(
    choice: &crate::RecipeChoice,
    n: u64,
    reps: u64,
    synthetic: bool,
) -> Result<TriadValidation> {
    let cat = choice.catalogue()?;
    let chosen = choice.pick(&cat, None)?;
    let recipe = chosen.recipe;
    let compiled = cat.compile(recipe, choice.variant)?;
    let expected = triad_expected(n, reps);
    let raw = if synthetic {
        synthetic_triad(recipe, n, reps).ok_or_else(|| {
            crate::Error::Input(format!(
                "no synthetic triad counters for recipe '{}': use intel-cascadelake, intel-sapphirerapids, fujitsu-a64fx, amd-zen3, amd-zen4 or amd-zen5",
                recipe.recipe.id
            ))
        })?
    } else {
        let events = recipe.needed_events(&cat.metrics, choice.variant);
        measure_triad(recipe, &events, n, reps)?
    };
    let (report, checks) = validate_raw(
        &compiled,
        &crate::measure::metric_order(&cat),
        &raw,
        &expected,
    );
    Ok(TriadValidation {
        expected,
        checks,
        report,
        note: chosen.note,
    })
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
        // Zen 3 counts FLOPs but no load/store widths: the FLOPs check is exact, the byte
        // checks NA with the recipe's reason (`counters validate --synthetic` on a Zen 3 host
        // stopped with "no synthetic triad counters").
        let r = cat.find("zen3").unwrap();
        let c = cat.compile(r, Variant::Corrected).unwrap();
        let raw = synthetic_triad(r, 1 << 20, 10).unwrap();
        let (_, checks) = validate_raw(&c, &order, &raw, &triad_expected(1 << 20, 10));
        for ch in checks {
            if ch.metric == "flops" {
                assert!(ch.error_pct.unwrap().abs() < 1e-9, "{ch:?}");
            } else {
                assert!(
                    ch.measured.is_none() && ch.na.as_deref().is_some_and(|n| !n.is_empty()),
                    "{ch:?}"
                );
            }
        }
        assert!(synthetic_triad(cat.find("generic-pmu").unwrap(), 1, 1).is_none());
    }

    #[test]
    fn format_fixture_verdicts() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/validate/format-fixture.json"
        );
        let rep = validate_file(&std::fs::read_to_string(path).unwrap(), path).unwrap();
        let v = |k: &str, m: &str| {
            rep.checks
                .iter()
                .find(|c| c.kernel.starts_with(k) && c.metric == m)
                .unwrap_or_else(|| panic!("{k} {m}"))
                .verdict
        };
        assert_eq!(v("fp.fma.256", "flops"), Verdict::Pass);
        assert_eq!(v("fp.fma.256", "fp_ins"), Verdict::Pass);
        assert_eq!(v("stream.triad", "ai"), Verdict::Pass);
        assert_eq!(v("stream.copy", "ld_bytes"), Verdict::Pass); // +0.3 %
        assert_eq!(v("stream.copy", "flops"), Verdict::Fail); // 1 where 0
        assert_eq!(v("matmul.naive", "flops"), Verdict::Fail); // +1 %
        assert_eq!(v("libm.cos", "flops"), Verdict::PerCall);
        assert_eq!(v("conflict", "st_bytes"), Verdict::NotAvailable);
        assert_eq!((rep.failed, rep.per_call, rep.not_available), (2, 1, 1));
        let cos = rep.checks.iter().find(|c| c.kernel == "libm.cos").unwrap();
        assert!(cos.note.as_ref().unwrap().contains("26.4 FLOPs"), "{cos:?}");
        let text = rep.text(false);
        assert!(text.contains("2 failed") && text.contains("FAIL"), "{text}");
    }

    #[test]
    fn a_bad_counted_file_says_where() {
        let e = validate_file(
            "{\"source\": \"x\", \"kernels\": {\"fp.add.3:1\": {}}}",
            "f.json",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("f.json") && e.contains("unknown width"), "{e}");
        let e = validate_file("{\"kernels\": 1}", "g.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("g.json: line 1"), "{e}");
    }

    #[test]
    fn emulator_counts_map_to_metrics() {
        let k = crate::suite::Kernel::parse("fp.add.256:10").unwrap();
        let c = EmulatorCounts {
            flops: 320,
            fp_instructions: 81,
            fp_by_width: [("f64_256".to_string(), 80), ("f64_scalar".to_string(), 1)].into(),
            bytes_loaded: 0,
            bytes_stored: 16,
        };
        let v = counted_from_emulator(&k, &c);
        assert_eq!(v["fp_ins"], 80.0); // only the kernel's width
        let checks = compare(&k, &v, None);
        let fpi = checks
            .iter()
            .find(|c| c.metric == "flops_per_fpins")
            .unwrap();
        assert_eq!(fpi.verdict, Verdict::Fail); // 320 / 81: a stray scalar instruction shows
    }
}
