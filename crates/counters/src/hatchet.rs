//! Hatchet export of counter metrics: the nested dictionaries
//! `hatchet.GraphFrame.from_literal` (LLNL's Hatchet) reads. One root per region (per report
//! and region when there are several reports), its metrics the region's totals as
//! `<metric> (inc)`; with several threads, one child per thread with its own values and the
//! region's exclusive values 0. A metric is kept when every node has a value for it; the
//! others are named in the returned notes (Hatchet needs the same metrics on every node).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::compute::{MetricValue, Report};

/// The literal of `reports` and the metrics left out.
pub fn from_reports(reports: &[Report]) -> (Value, Vec<String>) {
    // Every list of values a node would carry.
    let mut lists: Vec<&[MetricValue]> = Vec::new();
    for r in reports {
        for g in &r.regions {
            lists.push(&g.total);
            for t in &g.threads {
                lists.push(&t.metrics);
            }
        }
    }
    let mut ids: Vec<String> = Vec::new();
    let mut dropped: BTreeSet<String> = BTreeSet::new();
    for l in &lists {
        for m in l.iter() {
            if !ids.contains(&m.id) {
                ids.push(m.id.clone());
            }
        }
    }
    ids.retain(|id| {
        let everywhere = lists.iter().all(|l| {
            l.iter()
                .any(|m| &m.id == id && m.value.is_some_and(f64::is_finite))
        });
        if !everywhere {
            dropped.insert(id.clone());
        }
        everywhere
    });
    let value = |l: &[MetricValue], id: &str| {
        l.iter()
            .find(|m| m.id == id)
            .and_then(|m| m.value)
            .unwrap_or(0.0)
    };
    let metrics = |exc: Option<&[MetricValue]>, inc: &[MetricValue]| {
        let mut m = Map::new();
        for id in &ids {
            m.insert(id.clone(), json!(exc.map_or(0.0, |e| value(e, id))));
        }
        for id in &ids {
            m.insert(format!("{id} (inc)"), json!(value(inc, id)));
        }
        Value::Object(m)
    };
    let mut roots = Vec::new();
    for r in reports {
        for g in &r.regions {
            let name = if reports.len() > 1 {
                format!("{}: {}", r.label, g.name)
            } else {
                g.name.clone()
            };
            if g.threads.is_empty() {
                roots.push(json!({
                    "frame": {"name": name, "type": "region"},
                    "metrics": metrics(Some(&g.total), &g.total),
                }));
                continue;
            }
            let children: Vec<Value> = g
                .threads
                .iter()
                .map(|t| {
                    json!({
                        "frame": {"name": format!("{name} thread {}", t.thread), "type": "thread"},
                        "metrics": metrics(Some(&t.metrics), &t.metrics),
                    })
                })
                .collect();
            roots.push(json!({
                "frame": {"name": name, "type": "region"},
                "metrics": metrics(None, &g.total),
                "children": children,
            }));
        }
    }
    let notes = dropped
        .into_iter()
        .map(|id| format!("metric `{id}` left out: not every region and thread has a value"))
        .collect();
    (Value::Array(roots), notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mv(id: &str, value: Option<f64>) -> MetricValue {
        MetricValue {
            id: id.into(),
            value,
            na: None,
            multiplexed: false,
            warning: None,
        }
    }

    fn report(label: &str) -> Report {
        serde_json::from_value(json!({
            "label": label, "recipe": "r", "variant": "as_published", "precision": "dp",
            "source": "test", "regions": [],
        }))
        .unwrap()
    }

    #[test]
    fn regions_threads_and_left_out_metrics() {
        let mut r = report("a");
        r.regions.push(crate::compute::RegionMetrics {
            name: "solve".into(),
            calls: Some(2),
            total: vec![mv("time", Some(2.0)), mv("flops", Some(10.0))],
            threads: vec![
                thread(0, vec![mv("time", Some(2.0)), mv("flops", Some(6.0))]),
                thread(1, vec![mv("time", Some(1.5)), mv("flops", None)]),
            ],
        });
        r.regions.push(crate::compute::RegionMetrics {
            name: "io".into(),
            calls: None,
            total: vec![mv("time", Some(0.5)), mv("flops", Some(0.0))],
            threads: vec![],
        });
        let (v, notes) = from_reports(&[r]);
        let roots = v.as_array().unwrap();
        assert_eq!(roots.len(), 2);
        // flops is NA on thread 1: left out everywhere, and said so.
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("`flops`"), "{notes:?}");
        let solve = &roots[0];
        assert_eq!(solve["frame"]["name"], "solve");
        assert_eq!(solve["metrics"]["time (inc)"], 2.0);
        assert_eq!(solve["metrics"]["time"], 0.0);
        assert!(solve["metrics"].get("flops").is_none());
        let kids = solve["children"].as_array().unwrap();
        assert_eq!(kids[1]["frame"]["name"], "solve thread 1");
        assert_eq!(kids[1]["metrics"]["time"], 1.5);
        assert_eq!(kids[1]["metrics"]["time (inc)"], 1.5);
        // A region without threads: exclusive is its total.
        assert_eq!(roots[1]["metrics"]["time"], 0.5);
        assert!(roots[1].get("children").is_none());
    }

    #[test]
    fn several_reports_name_their_regions() {
        let mut a = report("base");
        let mut b = report("opt");
        for r in [&mut a, &mut b] {
            r.regions.push(crate::compute::RegionMetrics {
                name: "k".into(),
                calls: None,
                total: vec![mv("time", Some(1.0))],
                threads: vec![],
            });
        }
        let (v, notes) = from_reports(&[a, b]);
        assert!(notes.is_empty());
        let names: Vec<&str> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["frame"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["base: k", "opt: k"]);
    }

    fn thread(thread: u64, metrics: Vec<MetricValue>) -> crate::compute::ThreadMetrics {
        crate::compute::ThreadMetrics { thread, metrics }
    }
}
