//! Caliper JSON output with the PAPI service (`CALI_SERVICES_ENABLE=...,papi`,
//! `CALI_REPORT_CONFIG="SELECT *,sum(papi.EV) GROUP BY prop:nested,thread_id FORMAT json"`),
//! as seed 001's scripts wrote: an array of records, or `{"records": [...]}`. Counter
//! attributes are `papi.EV` or `sum#papi.EV`; the region comes from `path`, `annotation`,
//! `function`, `region`, `loop` or `kernel`; the thread from `thread_id` or `omp.thread.id`;
//! the time from `sum#time.duration` or `time.duration` (s) or `*time.duration.ns` (ns).
//! Several files (one counter each, as the seed collected them) merge with
//! [`RawData::merge`](crate::raw::RawData::merge).

use serde_json::Value;

use super::json_err;
use crate::error::{Error, Result};
use crate::raw::{Collector, Count, RawData};

const REGION_KEYS: &[&str] = &["path", "annotation", "function", "region", "loop", "kernel"];
const THREAD_KEYS: &[&str] = &["thread_id", "omp.thread.id", "pthread.id"];

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Parses Caliper JSON records.
pub fn parse(text: &str, origin: &str, label: &str) -> Result<RawData> {
    let v: Value = serde_json::from_str(text).map_err(|e| json_err(origin, &e))?;
    let records = match &v {
        Value::Array(a) => a,
        Value::Object(o) => o.get("records").and_then(Value::as_array).ok_or_else(|| {
            Error::import(
                origin,
                1,
                1,
                "expected an array of records or {\"records\": [...]}",
            )
        })?,
        _ => return Err(Error::import(origin, 1, 1, "expected an array of records")),
    };
    let mut raw = RawData::new(label, "caliper-json", Collector::Papi);
    for (i, rec) in records.iter().enumerate() {
        let Some(o) = rec.as_object() else {
            return Err(Error::import(
                origin,
                1,
                1,
                format!("record {i} is not an object"),
            ));
        };
        let region = REGION_KEYS.iter().find_map(|k| o.get(*k)).map(|v| match v {
            Value::String(s) => s.clone(),
            Value::Array(a) => a
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("/"),
            other => other.to_string(),
        });
        let Some(region) = region else { continue };
        let thread = THREAD_KEYS
            .iter()
            .find_map(|k| o.get(*k))
            .and_then(num)
            .unwrap_or(0.0) as u64;
        let mut time = None;
        let mut counters = Vec::new();
        for (k, v) in o {
            let base = k.rsplit_once('#').map_or(k.as_str(), |(agg, b)| {
                if agg == "sum" || agg == "inclusive#sum" {
                    b
                } else {
                    ""
                }
            });
            if base.is_empty() {
                continue;
            }
            if let Some(ev) = base.strip_prefix("papi.") {
                if let Some(x) = num(v) {
                    counters.push((ev.to_string(), x));
                }
            } else if base == "time.duration" || base == "time.inclusive.duration" {
                time = num(v);
            } else if base == "time.duration.ns" || base == "time.inclusive.duration.ns" {
                time = num(v).map(|x| x * 1e-9);
            }
        }
        if counters.is_empty() && time.is_none() {
            continue;
        }
        let t = raw.thread_mut(&region, thread);
        if let Some(x) = time {
            t.time_s = Some(t.time_s.unwrap_or(0.0) + x);
        }
        for (ev, x) in counters {
            let e = t.counters.entry(ev).or_insert(Count::of(0.0));
            e.value = e.value.map(|a| a + x);
        }
    }
    if raw.regions.is_empty() {
        return Err(Error::import(
            origin,
            1,
            1,
            "no record with a region and papi.* or time attributes",
        ));
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_per_region_and_thread() {
        let text = r#"[
 {"path": "main/nbody", "thread_id": 0, "sum#papi.PAPI_LD_INS": 100, "sum#time.duration": 0.5},
 {"path": "main/nbody", "thread_id": 1, "sum#papi.PAPI_LD_INS": 120, "sum#time.duration": 0.6},
 {"function": "other", "papi.PAPI_SR_INS": "7"},
 {"path": "main", "avg#papi.PAPI_LD_INS": 3}
]"#;
        let r = parse(text, "cali_PAPI_LD_INS.json", "c").unwrap();
        let nb = r.regions.iter().find(|x| x.name == "main/nbody").unwrap();
        assert_eq!(nb.threads.len(), 2);
        assert_eq!(nb.aggregate().counters["PAPI_LD_INS"].value, Some(220.0));
        assert_eq!(nb.aggregate().time_s, Some(0.6));
        assert!(r.regions.iter().all(|x| x.name != "main"), "avg# ignored");
        let e = parse("[{\"path\": 1,}]", "bad.json", "c")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad.json:1:"), "{e}");
    }
}
