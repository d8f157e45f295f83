//! Counter metrics as a foundation [`Profile`]: per region and per thread the time, FLOPs,
//! FP instructions, loads, stores, instructions and bytes per memory level, so counter data
//! goes onto the roofline and into projection.
//!
//! The seed's byte metrics are the traffic *reaching* each level (LS Bytes at L1, L2 Bytes
//! = L1 misses x line, ...); a profile wants the bytes *served* by each level. Served by
//! level i = traffic reaching i - traffic reaching i+1, clamped at 0 (prefetching can make
//! a lower level see more traffic than the one above: noted in the profile).

use hpcscope_core::profile::{LevelBytes, Memory, Profile, Region, ThreadMetrics as CoreThread};

use crate::compute::{MetricValue, Precision, Report};
use crate::error::{Error, Result};

fn get(ms: &[MetricValue], id: &str) -> Option<f64> {
    ms.iter().find(|m| m.id == id).and_then(|m| m.value)
}

/// What the profile needs besides the counters.
#[derive(Debug, Clone)]
pub struct ProfileInfo {
    /// Application name.
    pub application: String,
    /// ISA (`x86_64`, `aarch64`).
    pub isa: String,
    /// Vector width of the binary, bits.
    pub vector_bits: u32,
    /// Machine id, when known.
    pub machine: Option<String>,
}

fn thread(
    ms: &[MetricValue],
    index: u32,
    notes: &mut Vec<String>,
    region: &str,
) -> Option<CoreThread> {
    let flops = get(ms, "flops")?;
    let fpins = get(ms, "flops_per_fpins")
        .filter(|r| *r > 0.0)
        .map_or(0.0, |r| flops / r);
    let ls = get(ms, "ls_bytes")?;
    let reach: Vec<(&str, Option<f64>)> = vec![
        ("L1", Some(ls)),
        ("L2", get(ms, "l2_bytes")),
        ("L3", get(ms, "l3_bytes")),
        ("MM", get(ms, "mem_bytes")),
    ];
    let present: Vec<(&str, f64)> = reach
        .iter()
        .filter_map(|(n, v)| v.map(|x| (*n, x)))
        .collect();
    let mut levels = Vec::new();
    for (i, (name, t)) in present.iter().enumerate() {
        let next = present.get(i + 1).map_or(0.0, |x| x.1);
        let served = t - next;
        if served < 0.0 {
            notes.push(format!(
                "region {region}, thread {index}: more traffic reaches the level after {name} than {name} itself ({next:.4e} > {t:.4e} B, prefetching): {name} serves 0 bytes"
            ));
        }
        levels.push(LevelBytes {
            level: name.to_string(),
            bytes: served.max(0.0),
        });
    }
    Some(CoreThread {
        thread: index,
        time_s: get(ms, "time").filter(|t| *t > 0.0),
        flops,
        fp_instructions: fpins,
        memory: Memory {
            bytes_per_level: Some(levels),
            bytes_total: None,
            hit_ratios: None,
        },
        loads: get(ms, "flops_per_ld_ins")
            .filter(|r| *r > 0.0)
            .map(|r| flops / r),
        stores: get(ms, "flops_per_st_ins")
            .filter(|r| *r > 0.0)
            .map(|r| flops / r),
        instructions: None,
    })
}

/// Builds a profile from a report: per region, the per-thread metrics (or the region total
/// as thread 0). Regions without FLOPs and LS Bytes are left out with a note; none at all is
/// an error.
pub fn to_profile(report: &Report, info: &ProfileInfo) -> Result<Profile> {
    let mut notes = vec![format!(
        "from hardware counters: recipe {} ({}), source {}",
        report.recipe, report.variant, report.source
    )];
    let mut regions = Vec::new();
    for r in &report.regions {
        let mut threads = Vec::new();
        if r.threads.is_empty() {
            if let Some(t) = thread(&r.total, 0, &mut notes, &r.name) {
                threads.push(t);
            }
        } else {
            for (i, t) in r.threads.iter().enumerate() {
                if let Some(x) = thread(&t.metrics, i as u32, &mut notes, &r.name) {
                    threads.push(x);
                }
            }
        }
        if threads.is_empty() {
            notes.push(format!(
                "region {} left out: no flops or LS Bytes (NA)",
                r.name
            ));
        } else {
            regions.push(Region {
                name: r.name.clone(),
                threads,
                access_widths: None,
            });
        }
    }
    if regions.is_empty() {
        return Err(Error::Input(format!(
            "no region has flops and LS Bytes, so no profile can be written{}",
            report
                .hardware_unavailable
                .as_ref()
                .map(|h| format!(": {h}"))
                .unwrap_or_default()
        )));
    }
    Ok(Profile {
        format_version: hpcscope_core::profile::FORMAT_VERSION,
        application: info.application.clone(),
        binary: None,
        isa: info.isa.clone(),
        vector_bits: info.vector_bits,
        precision: match report.precision {
            Precision::Dp => hpcscope_core::Precision::F64,
            Precision::Sp => hpcscope_core::Precision::F32,
        },
        machine: info.machine.clone(),
        collector: Some(format!("counters:{}", report.source)),
        partial: false,
        regions,
        notes,
    })
}
