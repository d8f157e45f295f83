//! Hatchet export of an application profile: the nested dictionaries
//! `hatchet.GraphFrame.from_literal` (LLNL's Hatchet) reads. Each region is a root; with
//! several threads, each thread is a child of its region. Every node carries the same
//! metrics: `time` (seconds, when every thread has one), `flops`, `fp_instructions`,
//! `loads`/`stores`/`instructions` (when every thread has them) and `bytes <level>` per
//! memory level; a region's exclusive values are 0 when it has thread children and its
//! inclusive values (`<metric> (inc)`) are their sums.

use serde_json::{Map, Value, json};

use crate::profile::{Profile, ThreadMetrics};

/// A metric a thread may give, and how to read it.
type Optional = (&'static str, fn(&ThreadMetrics) -> Option<f64>);

/// The literal of `p` (a JSON array of root nodes) and the metrics left out (a metric some
/// thread does not give).
pub fn from_profile(p: &Profile, origin: &str) -> crate::Result<(Value, Vec<String>)> {
    let mut notes = Vec::new();
    let all = |f: &dyn Fn(&ThreadMetrics) -> Option<f64>| {
        p.regions
            .iter()
            .flat_map(|r| &r.threads)
            .all(|t| f(t).is_some())
    };
    let optional: Vec<Optional> = vec![
        ("time", |t| t.time_s),
        ("loads", |t| t.loads),
        ("stores", |t| t.stores),
        ("instructions", |t| t.instructions),
    ];
    let kept: Vec<_> = optional
        .into_iter()
        .filter(|(name, f)| {
            let ok = all(f);
            if !ok {
                notes.push(format!(
                    "`{name}` is left out: not every region's threads give it"
                ));
            }
            ok
        })
        .collect();
    let mut levels: Vec<String> = Vec::new();
    for r in &p.regions {
        for m in r.thread_metrics(origin)? {
            for l in m.levels {
                if !levels.contains(&l) {
                    levels.push(l);
                }
            }
        }
    }
    let mut roots = Vec::new();
    for r in &p.regions {
        let per = r.thread_metrics(origin)?;
        let values: Vec<Vec<(String, f64)>> = r
            .threads
            .iter()
            .zip(&per)
            .map(|(t, m)| {
                let mut v = vec![
                    ("flops".to_string(), t.flops),
                    ("fp_instructions".to_string(), t.fp_instructions),
                ];
                for (name, f) in &kept {
                    v.push((name.to_string(), f(t).unwrap_or(0.0)));
                }
                for l in &levels {
                    v.push((format!("bytes {l}"), m.bytes_of(l).unwrap_or(0.0)));
                }
                v
            })
            .collect();
        let metrics = |exc: &[(String, f64)], inc: &[(String, f64)]| {
            let mut m = Map::new();
            for (k, v) in exc {
                m.insert(k.clone(), json!(v));
            }
            for (k, v) in inc {
                m.insert(format!("{k} (inc)"), json!(v));
            }
            Value::Object(m)
        };
        if values.len() == 1 {
            roots.push(json!({
                "frame": {"name": r.name, "type": "region"},
                "metrics": metrics(&values[0], &values[0]),
            }));
            continue;
        }
        let zero: Vec<(String, f64)> = values[0].iter().map(|(k, _)| (k.clone(), 0.0)).collect();
        let sum: Vec<(String, f64)> = values[0]
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.clone(), values.iter().map(|v| v[i].1).sum()))
            .collect();
        let children: Vec<Value> = r
            .threads
            .iter()
            .zip(&values)
            .map(|(t, v)| {
                json!({
                    "frame": {"name": format!("{} thread {}", r.name, t.thread), "type": "thread"},
                    "metrics": metrics(v, v),
                })
            })
            .collect();
        roots.push(json!({
            "frame": {"name": r.name, "type": "region"},
            "metrics": metrics(&zero, &sum),
            "children": children,
        }));
    }
    Ok((Value::Array(roots), notes))
}
