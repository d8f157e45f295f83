//! PAPI high-level API output (`PAPI_hl_region_begin/end`, files
//! `papi_hl_output/rank_*.json`): per thread, per region, the events of `PAPI_EVENTS` plus
//! `cycles` and `real_time_nsec`. Both the PAPI 7 shape (`"threads": {"<tid>": {"regions":
//! {"<id>": {"name": ..., ...}}}}`) and the PAPI 6 shape (`"threads": [{"id": ..., "regions":
//! [{"<name>": {...}}]}]`) are read. Values may be numbers or strings, or objects with a
//! `total` when PAPI aggregated several calls.

use serde_json::Value;

use super::json_err;
use crate::error::{Error, Result};
use crate::raw::{Collector, Count, RawData};

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        Value::Object(o) => o.get("total").and_then(num),
        _ => None,
    }
}

const META: &[&str] = &[
    "name",
    "parent_region_id",
    "region_count",
    "real_time_nsec",
    "id",
];

fn region(raw: &mut RawData, name: &str, thread: u64, fields: &serde_json::Map<String, Value>) {
    let t = raw.thread_mut(name, thread);
    if let Some(ns) = fields.get("real_time_nsec").and_then(num) {
        t.time_s = Some(t.time_s.unwrap_or(0.0) + ns * 1e-9);
    }
    if let Some(c) = fields.get("region_count").and_then(num) {
        t.calls = Some(t.calls.unwrap_or(0).saturating_add(c as u64));
    }
    for (k, v) in fields {
        if META.contains(&k.as_str()) {
            continue;
        }
        if let Some(x) = num(v) {
            let e = t.counters.entry(k.clone()).or_insert(Count::of(0.0));
            e.value = e.value.map(|a| a + x);
        }
    }
}

/// Parses PAPI high-level JSON.
pub fn parse(text: &str, origin: &str, label: &str) -> Result<RawData> {
    let v: Value = serde_json::from_str(text).map_err(|e| json_err(origin, &e))?;
    let mut raw = RawData::new(label, "papi-json", Collector::Papi);
    let bad = |m: &str| Error::import(origin, 1, 1, m.to_string());
    let threads = v
        .get("threads")
        .ok_or_else(|| bad("no 'threads' object: not PAPI high-level output"))?;
    match threads {
        Value::Object(ts) => {
            for (idx, (tid, t)) in ts.iter().enumerate() {
                let thread = tid.parse::<u64>().unwrap_or(idx as u64);
                let regions = t
                    .get("regions")
                    .and_then(Value::as_object)
                    .ok_or_else(|| bad(&format!("thread {tid}: no 'regions' object")))?;
                for (rid, r) in regions {
                    let f = r.as_object().ok_or_else(|| {
                        bad(&format!("thread {tid}, region {rid}: not an object"))
                    })?;
                    let name = f.get("name").and_then(Value::as_str).unwrap_or(rid);
                    region(&mut raw, name, thread, f);
                }
            }
        }
        Value::Array(ts) => {
            let mut ids = std::collections::HashMap::new();
            for (idx, t) in ts.iter().enumerate() {
                let thread = t.get("id").and_then(num).map_or(idx as u64, |x| x as u64);
                if let Some(first) = ids.insert(thread, idx) {
                    return Err(bad(&format!(
                        "threads[{idx}]: thread id {thread} appears twice (also threads[{first}]): its counts would be summed"
                    )));
                }
                let regions = t
                    .get("regions")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad(&format!("thread {idx}: no 'regions' array")))?;
                for r in regions {
                    let o = r
                        .as_object()
                        .ok_or_else(|| bad("a region is not an object"))?;
                    for (name, f) in o {
                        let f = f
                            .as_object()
                            .ok_or_else(|| bad(&format!("region {name}: not an object")))?;
                        region(&mut raw, name, thread, f);
                    }
                }
            }
        }
        _ => return Err(bad("'threads' is neither an object nor an array")),
    }
    if raw.regions.is_empty() {
        return Err(bad("no region in the file"));
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn papi7_and_papi6_shapes() {
        let t7 = r#"{"cpu in mhz":"2400","threads":{"4242":{"regions":{"0":{"name":"triad","parent_region_id":"-1","region_count":"2","cycles":"2400000","real_time_nsec":"1000000","PAPI_TOT_INS":"3000000","PAPI_LD_INS":1000}}}}}"#;
        let r = parse(t7, "rank_0.json", "p").unwrap();
        let t = &r.regions[0].threads[0];
        assert_eq!(
            (r.regions[0].name.as_str(), t.thread, t.calls),
            ("triad", 4242, Some(2))
        );
        assert_eq!(t.counters["PAPI_TOT_INS"].value, Some(3e6));
        assert_eq!(t.time_s, Some(1e-3));
        let t6 = r#"{"threads":[{"id":"7","regions":[{"solve":{"region_count":"1","real_time_nsec":"5","PAPI_FP_OPS":"10"}}]}]}"#;
        let r = parse(t6, "r.json", "p").unwrap();
        assert_eq!(
            r.regions[0].threads[0].counters["PAPI_FP_OPS"].value,
            Some(10.0)
        );
        let dup = r#"{"threads":[{"id":"7","regions":[]},{"id":"7","regions":[]}]}"#;
        let e = parse(dup, "r.json", "p").unwrap_err().to_string();
        assert!(e.contains("thread id 7 appears twice"), "{e}");
        let e = parse("{\"threads\": {\n  \"1\": [}", "bad.json", "p")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad.json:2:"), "{e}");
    }
}
