//! The region markers' JSON output (`hpcscope-markers` crate) as raw data: per region, per
//! thread, the counts of the events that opened; events that did not open are
//! `<not supported>` with the reason (a VM without PMU says so once, for all of them).

use hpcscope_markers::format::MarkerOutput;

use crate::error::{Error, Result};
use crate::raw::{Collector, Count, RawData, Status};

/// Parses a markers file.
pub fn parse(text: &str, origin: &str, label: &str) -> Result<RawData> {
    let o: MarkerOutput = super::typed_json(text, origin)?;
    from_output(&o, origin, label)
}

/// Converts the markers' output.
pub fn from_output(o: &MarkerOutput, origin: &str, label: &str) -> Result<RawData> {
    if o.format != hpcscope_markers::format::FORMAT {
        return Err(Error::import(
            origin,
            1,
            1,
            format!("'format' is '{}', expected 'hpcscope-markers'", o.format),
        ));
    }
    let mut raw = RawData::new(label, "markers", Collector::Perf);
    let hw_missing: Vec<&hpcscope_markers::format::EventError> = o.event_errors.iter().collect();
    if !hw_missing.is_empty() {
        for e in &hw_missing {
            raw.warnings
                .push(format!("event {} not counted: {}", e.event, e.error));
        }
    }
    let mut ids = std::collections::HashMap::new();
    for (i, t) in o.threads.iter().enumerate() {
        if let Some(first) = ids.insert(t.thread, i) {
            return Err(Error::import(
                origin,
                1,
                1,
                format!(
                    "threads[{i}]: thread {} appears twice (also threads[{first}]): its counts would be mixed",
                    t.thread
                ),
            ));
        }
        for w in &t.warnings {
            raw.warnings.push(w.clone());
        }
        let mut names = std::collections::HashMap::new();
        for (k, r) in t.regions.iter().enumerate() {
            if let Some(j) = names.insert(r.name.as_str(), k) {
                return Err(Error::import(
                    origin,
                    1,
                    1,
                    format!(
                        "thread {}: region '{}' appears twice (regions[{j}] and regions[{k}])",
                        t.thread,
                        hpcscope_core::error::shorten(&r.name, 80)
                    ),
                ));
            }
            if r.counts.len() != o.events.len() {
                return Err(Error::import(
                    origin,
                    1,
                    1,
                    format!(
                        "region '{}' of thread {} has {} counts for {} events",
                        r.name,
                        t.thread,
                        r.counts.len(),
                        o.events.len()
                    ),
                ));
            }
            let td = raw.thread_mut(&r.name, t.thread);
            td.time_s = Some(r.time_ns as f64 * 1e-9);
            td.calls = Some(r.calls);
            let frac = if r.enabled_ns > 0 {
                r.running_ns as f64 / r.enabled_ns as f64
            } else {
                1.0
            };
            for (e, v) in o.events.iter().zip(&r.counts) {
                let status = if frac < 0.999 {
                    Status::Scaled
                } else {
                    Status::Counted
                };
                td.counters.insert(
                    e.clone(),
                    Count {
                        value: Some(*v),
                        status,
                        running_fraction: Some(frac),
                    },
                );
            }
            for e in &hw_missing {
                td.counters
                    .insert(e.event.clone(), Count::missing(Status::NotSupported));
            }
        }
    }
    raw.warnings.extend(o.warnings.iter().cloned());
    // Pure: a file made on another machine says nothing about this machine's PMU; the
    // collector that ran the markers here (`perf::collect_markers`) adds that.
    Ok(raw)
}
