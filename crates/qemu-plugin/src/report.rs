//! The JSON summary written at exit (format documented in the README).

use serde_json::{Map, Value, json};

use crate::isa::{Counter, N_COUNTERS, fp_breakdown, mem_breakdown};
use crate::tally::Tally;

/// Format tag of the summary; bumped only on incompatible changes (new keys are not).
pub use hpcscope_plugin_format::report::FORMAT;

/// Counts of one translation block start address, summed over its translations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TbCounts {
    pub pc: u64,
    pub executions: u64,
    pub counts: [u64; N_COUNTERS],
}

fn c(v: &[u64; N_COUNTERS], k: Counter) -> u64 {
    v[k as usize]
}

/// The `totals` object (also used per thread and per region, and shortened per TB).
pub fn totals_json(v: &[u64; N_COUNTERS]) -> Value {
    let mut by_width = Map::new();
    for w in fp_breakdown(v) {
        let mut e = json!({ "instructions": w.instructions, "flops": w.flops });
        // Written when not 0, as the reader's type writes them.
        if let Value::Object(o) = &mut e {
            if w.div > 0 {
                o.insert("div".into(), json!(w.div));
            }
            if w.sqrt > 0 {
                o.insert("sqrt".into(), json!(w.sqrt));
            }
        }
        by_width.insert(w.name, e);
    }
    let mut mem_by_width = Map::new();
    for m in mem_breakdown(v) {
        mem_by_width.insert(
            m.width,
            json!({
                "loads": m.loads,
                "bytes_loaded": m.bytes_loaded,
                "stores": m.stores,
                "bytes_stored": m.bytes_stored,
            }),
        );
    }
    json!({
        "instructions": c(v, Counter::Instructions),
        "classes": {
            "fp": c(v, Counter::ClassFp),
            "load": c(v, Counter::ClassLoad),
            "store": c(v, Counter::ClassStore),
            "int": c(v, Counter::ClassInt),
            "branch": c(v, Counter::ClassBranch),
            "other": c(v, Counter::ClassOther),
        },
        "loads": c(v, Counter::Loads),
        "stores": c(v, Counter::Stores),
        "bytes_loaded": c(v, Counter::BytesLoaded),
        "bytes_stored": c(v, Counter::BytesStored),
        "bytes_dynamic": c(v, Counter::BytesDynamic),
        "bytes_unreported": c(v, Counter::BytesUnreported),
        "fp_instructions": c(v, Counter::FpInstructions),
        "flops": c(v, Counter::Flops),
        "flops_excluded": c(v, Counter::FlopsExcluded),
        "flops_inactive": c(v, Counter::FlopsInactive),
        "fma_instructions": c(v, Counter::FmaInstructions),
        "divsqrt_instructions": c(v, Counter::DivSqrtInstructions),
        "sve_instructions": c(v, Counter::SveInstructions),
        "fp_by_width": Value::Object(by_width),
        "mem_by_width": Value::Object(mem_by_width),
    })
}

fn tb_json(t: &TbCounts) -> Value {
    let v = &t.counts;
    json!({
        "pc": t.pc,
        "executions": t.executions,
        "instructions": c(v, Counter::Instructions),
        "fp_instructions": c(v, Counter::FpInstructions),
        "flops": c(v, Counter::Flops),
        "loads": c(v, Counter::Loads),
        "stores": c(v, Counter::Stores),
        "bytes_loaded": c(v, Counter::BytesLoaded),
        "bytes_stored": c(v, Counter::BytesStored),
    })
}

/// What the summary says about the run besides the counts.
pub struct RunInfo<'a> {
    pub target: &'a str,
    /// SVE vector length in bits and its source (`argument`, `qemu-command-line`,
    /// `default`), aarch64 only.
    pub vl: Option<(u32, &'a str)>,
    /// Run-time regions (link-time addresses plus `load_bias`).
    pub regions: &'a [(u64, u64)],
    pub load_bias: u64,
    /// Run-time `scope` functions.
    pub scopes: &'a [(u64, u64)],
    pub mem_records: Option<(u64, u64)>,
    /// How executions were counted: `inline` (one thread all along) or `per_vcpu`.
    pub counting: &'a str,
    /// Executions that could not be counted (more translation blocks than the counters
    /// hold); 0 normally.
    pub lost_executions: u64,
    /// How predicated lanes were counted: `full_lanes` (plugin API v1: every lane) or
    /// `active_lanes` (API v4: the governing predicate of SVE FP instructions, read at run
    /// time).
    pub predication: &'a str,
    /// The plugin API level of this build, and the one QEMU runs (its current version).
    pub plugin_api: u32,
    pub qemu_api: u32,
    /// Executions of predicated instructions whose predicate could not be read (their
    /// lanes all counted).
    pub predicate_failures: u64,
}

fn thread_json(t: &crate::tally::ThreadTally, totals: [u64; N_COUNTERS]) -> Value {
    json!({
        "thread": t.thread,
        "vcpu": t.vcpu,
        "totals": totals_json(&totals),
    })
}

/// The whole summary.
pub fn summary(run: &RunInfo, tally: &Tally, with_tbs: bool) -> Value {
    let mut m = Map::new();
    m.insert("format".into(), json!(FORMAT));
    m.insert("target".into(), json!(run.target));
    m.insert("sve_vl_bits".into(), json!(run.vl.map(|v| v.0)));
    m.insert("sve_vl_source".into(), json!(run.vl.map(|v| v.1)));
    m.insert("predication".into(), json!(run.predication));
    m.insert("plugin_api".into(), json!(run.plugin_api));
    m.insert("qemu_plugin_api".into(), json!(run.qemu_api));
    m.insert("counting".into(), json!(run.counting));
    m.insert("load_bias".into(), json!(run.load_bias));
    m.insert(
        "regions".into(),
        Value::Array(
            run.regions
                .iter()
                .enumerate()
                .map(|(r, &(a, b))| {
                    json!({
                        "start": a,
                        "end": b,
                        "totals": totals_json(&tally.region(r)),
                        "threads": tally
                            .threads
                            .iter()
                            .map(|t| thread_json(t, t.regions.get(r).copied().unwrap_or([0; N_COUNTERS])))
                            .collect::<Vec<_>>(),
                    })
                })
                .collect(),
        ),
    );
    m.insert(
        "scopes".into(),
        Value::Array(
            run.scopes
                .iter()
                .map(|&(a, b)| json!({ "start": a, "end": b }))
                .collect(),
        ),
    );
    m.insert("totals".into(), totals_json(&tally.total()));
    m.insert(
        "threads".into(),
        Value::Array(
            tally
                .threads
                .iter()
                .map(|t| thread_json(t, t.total()))
                .collect(),
        ),
    );
    if run.lost_executions > 0 {
        m.insert("lost_executions".into(), json!(run.lost_executions));
    }
    let forks = crate::fork::forks();
    if forks > 0 {
        // Children the guest forked, left out of the counts and the stream.
        m.insert("forked_processes".into(), json!(forks));
    }
    if run.predicate_failures > 0 {
        m.insert(
            "predicate_read_failures".into(),
            json!(run.predicate_failures),
        );
    }
    if let Some((written, dropped)) = run.mem_records {
        m.insert(
            "mem_stream".into(),
            json!({ "records": written, "dropped": dropped }),
        );
        let skipped = crate::memtrace::skipped();
        if skipped > 0
            && let Some(Value::Object(o)) = m.get_mut("mem_stream")
        {
            // Accesses `sample=` left out of the stream (counted in its skip records).
            o.insert("sampled_out".into(), json!(skipped));
        }
        if let Some(Value::Object(o)) = m.get_mut("mem_stream") {
            // Whether QEMU's translated code wrote the records, and how many of its
            // buffers overflowed before the plugin emptied them (records lost).
            o.insert("inline".into(), json!(crate::memtrace::inline::on()));
            let losses = crate::memtrace::inline::losses();
            if losses > 0 {
                o.insert("overflowed_buffers".into(), json!(losses));
            }
        }
    }
    if with_tbs {
        m.insert(
            "tbs".into(),
            Value::Array(tally.tbs.iter().map(tb_json).collect()),
        );
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tally::ThreadTally;

    #[test]
    fn summary_has_documented_keys() {
        let mut a = [0u64; N_COUNTERS];
        a[Counter::Flops as usize] = 40;
        crate::isa::InsnInfo {
            loads: true,
            load_bytes: 16,
            ..crate::isa::InsnInfo::plain(crate::isa::Class::Load)
        }
        .add_to(&mut a);
        // A scalar divide and two square roots (sqrtsd, sqrtsd).
        for op in [
            crate::isa::FpOp::Div,
            crate::isa::FpOp::Sqrt,
            crate::isa::FpOp::Sqrt,
        ] {
            crate::isa::InsnInfo {
                fp: Some(crate::isa::FpInfo::new(
                    crate::isa::Precision::F64,
                    None,
                    1,
                    op,
                )),
                ..crate::isa::InsnInfo::plain(crate::isa::Class::Fp)
            }
            .add_to(&mut a);
        }
        let mut b = [0u64; N_COUNTERS];
        b[Counter::Flops as usize] = 2;
        let tally = Tally {
            threads: vec![
                ThreadTally {
                    thread: 0,
                    vcpu: 0,
                    regions: vec![a],
                },
                ThreadTally {
                    thread: 1,
                    vcpu: 1,
                    regions: vec![b],
                },
            ],
            tbs: vec![],
        };
        let run = RunInfo {
            target: "x86_64",
            vl: None,
            regions: &[(1, 2)],
            load_bias: 0,
            scopes: &[],
            mem_records: None,
            counting: "per_vcpu",
            lost_executions: 0,
            predication: "full_lanes",
            plugin_api: 1,
            qemu_api: 1,
            predicate_failures: 0,
        };
        let s = summary(&run, &tally, true);
        assert_eq!(s["format"], FORMAT);
        assert_eq!(s["totals"]["flops"], 42 + 3);
        let f64s = &s["totals"]["fp_by_width"]["f64_scalar"];
        assert_eq!((&f64s["div"], &f64s["sqrt"]), (&json!(1), &json!(2)));
        assert_eq!(s["totals"]["divsqrt_instructions"], 3);
        assert_eq!(
            s["regions"][0]["threads"][0]["totals"]["fp_by_width"],
            s["totals"]["fp_by_width"]
        );
        assert_eq!(s["totals"]["mem_by_width"]["128"]["bytes_loaded"], 16);
        assert_eq!(s["totals"]["mem_by_width"]["128"]["loads"], 1);
        assert!(s["totals"]["mem_by_width"].get("64").is_none());
        assert_eq!(s["threads"][1]["totals"]["flops"], 2);
        assert_eq!(s["threads"][0]["vcpu"], 0);
        assert_eq!(s["regions"][0]["end"], 2);
        assert_eq!(s["regions"][0]["totals"]["flops"], 45);
        assert_eq!(s["regions"][0]["threads"][1]["totals"]["flops"], 2);
        assert!(s["tbs"].as_array().is_some_and(|a| a.is_empty()));
        assert!(s.get("lost_executions").is_none());
        assert_eq!(s["predication"], "full_lanes");
        assert_eq!(s["plugin_api"], 1);
        // The reader's typed report takes the summary, with the same values.
        let typed: hpcscope_plugin_format::report::PluginOutput =
            serde_json::from_value(s.clone()).expect("the reader takes the summary");
        assert_eq!(typed.format, FORMAT);
        assert_eq!(typed.predication.as_deref(), Some("full_lanes"));
        assert_eq!(
            (typed.plugin_api, typed.qemu_plugin_api),
            (Some(1), Some(1))
        );
        assert_eq!(typed.counting.as_deref(), Some("per_vcpu"));
        assert_eq!(typed.totals.flops, 45);
        let f64s = &typed.totals.fp_by_width["f64_scalar"];
        assert_eq!((f64s.instructions, f64s.div, f64s.sqrt), (3, 1, 2));
        assert_eq!(typed.totals.loads, 1);
        assert_eq!(typed.totals.bytes_loaded, 16);
        assert_eq!(typed.totals.mem_by_width["128"].bytes_loaded, 16);
        assert_eq!(typed.threads.len(), 2);
        assert_eq!((typed.threads[1].thread, typed.threads[1].vcpu), (1, 1));
        assert_eq!(typed.threads[1].totals.flops, 2);
        assert_eq!((typed.regions[0].start, typed.regions[0].end), (1, 2));
        assert_eq!(typed.regions[0].totals.flops, 45);
        assert_eq!(typed.regions[0].totals.fp_by_width["f64_scalar"].div, 1);
        assert_eq!(typed.threads[0].totals.fp_by_width["f64_scalar"].sqrt, 2);
        assert_eq!(typed.regions[0].threads[1].totals.flops, 2);
        assert!(typed.tbs.is_empty() && typed.mem_stream.is_none());
        assert_eq!(typed.lost_executions, 0);
    }

    #[test]
    fn the_reader_takes_blocks_and_the_stream() {
        let mut v = [0u64; N_COUNTERS];
        v[Counter::Instructions as usize] = 3;
        v[Counter::Flops as usize] = 8;
        let tally = Tally {
            threads: vec![ThreadTally {
                thread: 0,
                vcpu: 0,
                regions: vec![v],
            }],
            tbs: vec![TbCounts {
                pc: 0x40_1000,
                executions: 2,
                counts: v,
            }],
        };
        let run = RunInfo {
            target: "aarch64",
            vl: Some((512, "argument")),
            regions: &[],
            load_bias: 0x1000,
            scopes: &[],
            mem_records: Some((5, 1)),
            counting: "inline",
            lost_executions: 4,
            predication: "active_lanes",
            plugin_api: 4,
            qemu_api: 5,
            predicate_failures: 0,
        };
        let s = summary(&run, &tally, true);
        let typed: hpcscope_plugin_format::report::PluginOutput =
            serde_json::from_value(s).expect("the reader takes the summary");
        assert_eq!(typed.sve_vl_bits, Some(512));
        assert_eq!(typed.load_bias, 0x1000);
        assert_eq!(typed.lost_executions, 4);
        let tb = &typed.tbs[0];
        assert_eq!(
            (tb.pc, tb.executions, tb.instructions, tb.flops),
            (0x40_1000, 2, 3, 8)
        );
        let m = typed.mem_stream.expect("stream statistics");
        assert_eq!((m.records, m.dropped, m.overflowed_buffers), (5, 1, 0));
    }
}
