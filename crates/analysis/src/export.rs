//! `hpcscope profile export`: a profile, a Chrome trace or counters' JSON written for
//! another tool (pprof, speedscope, Hatchet).

use std::path::Path;

use anyhow::Result;
use hpcscope_trace::perf_script;

/// What `profile export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ExportFormat {
    /// Gzipped pprof protocol buffer.
    Pprof,
    /// speedscope JSON.
    Speedscope,
    /// Hatchet literal JSON.
    Hatchet,
}

/// The JSON of `counters run --format json` (a list of reports, or one).
fn is_counters(v: &serde_json::Value) -> bool {
    let one = |r: &serde_json::Value| r.get("recipe").is_some() && r.get("regions").is_some();
    match v {
        serde_json::Value::Array(a) => !a.is_empty() && a.iter().all(one),
        v => one(v),
    }
}

/// `file` in the format `to`: its bytes, and the notes on what could not be carried over.
/// A Chrome trace (to speedscope), counters' JSON and an hpcscope profile (to Hatchet) are
/// taken as they are; anything else is read as `profile import` reads it.
pub fn export(file: &Path, to: ExportFormat) -> Result<(Vec<u8>, Vec<String>)> {
    let json: Option<serde_json::Value> = hpcscope_core::load::read_bytes(file)
        .ok()
        .filter(|b| {
            b.trim_ascii_start().starts_with(b"{") || b.trim_ascii_start().starts_with(b"[")
        })
        .and_then(|b| serde_json::from_slice(&b).ok());
    let name = file.display().to_string();
    let mut notes: Vec<String> = Vec::new();
    let bytes: Vec<u8> = match (to, &json) {
        (ExportFormat::Speedscope, Some(v)) if v.get("traceEvents").is_some() || v.is_array() => {
            let (out, n) = hpcscope_trace::speedscope::from_chrome_trace(v, &name)?;
            notes = n;
            (serde_json::to_string(&out)? + "\n").into_bytes()
        }
        (ExportFormat::Hatchet, Some(v)) if is_counters(v) => {
            let reports: Vec<hpcscope_counters::compute::Report> = match v {
                serde_json::Value::Array(_) => serde_json::from_value(v.clone())?,
                _ => vec![serde_json::from_value(v.clone())?],
            };
            let (out, n) = hpcscope_counters::hatchet::from_reports(&reports);
            notes = n;
            (serde_json::to_string_pretty(&out)? + "\n").into_bytes()
        }
        (ExportFormat::Hatchet, Some(v))
            if v.get("regions").is_some() && v.get("format_version").is_some() =>
        {
            let text = hpcscope_core::load::read(
                file,
                "the profile",
                "give a profile written by hpcscope mix or counters --profile",
            )?;
            let p = hpcscope_core::Profile::from_json_str(&text, &name)?;
            let (out, n) = hpcscope_core::hatchet::from_profile(&p, &name)?;
            notes = n;
            (serde_json::to_string_pretty(&out)? + "\n").into_bytes()
        }
        _ => {
            let imp = perf_script::import(file)?;
            notes.extend(imp.notes.iter().cloned());
            match to {
                ExportFormat::Pprof => {
                    hpcscope_trace::pprof::to_pprof_gz(&imp.profile, &imp.weight, 0)
                }
                ExportFormat::Speedscope => {
                    let v = hpcscope_trace::speedscope::from_profile(
                        &imp.profile,
                        &imp.weight,
                        &imp.origin,
                    );
                    (serde_json::to_string(&v)? + "\n").into_bytes()
                }
                ExportFormat::Hatchet => {
                    // Compact and without recursion: a deep stack's pretty-printed tree grew
                    // with the square of its depth (8,000 frames: 1.5 GB).
                    (hpcscope_trace::hatchet::to_json(&imp.profile, &imp.weight) + "\n")
                        .into_bytes()
                }
            }
        }
    };
    Ok((bytes, notes))
}
