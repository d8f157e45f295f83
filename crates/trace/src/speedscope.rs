//! speedscope export (https://www.speedscope.app/file-format-schema.json): a CPU profile as
//! sampled profiles, one per thread (or per command when threads are unknown), and a
//! timeline (the Chrome trace `hpcscope trace --timeline` writes) as evented profiles, one
//! lane per thread and kind of slice.

use std::collections::BTreeMap;

use hpcscope_core::Failure;
use serde_json::{Value, json};

use crate::perf_script::Weight;
use crate::profile::Profile;

/// The schema URL every speedscope file names.
pub const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

fn exporter() -> String {
    format!("hpcscope {}", env!("CARGO_PKG_VERSION"))
}

/// Frames shared by every profile of a file.
#[derive(Default)]
struct Frames {
    names: Vec<String>,
    index: BTreeMap<String, usize>,
}

impl Frames {
    fn get(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }

    fn json(&self) -> Value {
        Value::Array(self.names.iter().map(|n| json!({ "name": n })).collect())
    }
}

/// A CPU profile as a speedscope file: one sampled profile per thread (pid and tid known)
/// or per command name; weights in nanoseconds when the counts are a time, else plain
/// counts (`none`).
pub fn from_profile(profile: &Profile, weight: &Weight, name: &str) -> Value {
    let mut frames = Frames::default();
    let ns = weight.nanoseconds_per_unit();
    // (pid, tid, comm) -> (stacks, weights)
    type Groups = BTreeMap<(u32, u32, String), (Vec<Value>, Vec<f64>)>;
    let mut groups = Groups::new();
    for s in &profile.samples {
        let stack: Vec<usize> = s.frames.iter().map(|f| frames.get(f)).collect();
        let w = match ns {
            Some(ns) => (s.count as f64 * ns).round(),
            None => s.count as f64,
        };
        let g = groups.entry((s.pid, s.tid, s.comm.clone())).or_default();
        g.0.push(json!(stack));
        g.1.push(w);
    }
    let unit = if ns.is_some() { "nanoseconds" } else { "none" };
    let profiles: Vec<Value> = groups
        .into_iter()
        .map(|((pid, tid, comm), (samples, weights))| {
            let total: f64 = weights.iter().sum();
            let name = if pid == 0 {
                comm
            } else {
                format!("{comm} (pid {pid}, tid {tid})")
            };
            json!({
                "type": "sampled",
                "name": name,
                "unit": unit,
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            })
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "shared": { "frames": frames.json() },
        "profiles": profiles,
        "name": name,
        "activeProfileIndex": 0,
        "exporter": exporter(),
    })
}

/// One slice of a timeline, microseconds.
#[derive(Debug, Clone, PartialEq)]
struct Slice {
    name: String,
    start: f64,
    end: f64,
}

/// A Chrome trace (the JSON Object Format `hpcscope trace --timeline` writes, or a bare
/// array of events) as a speedscope file. Complete events (`"ph":"X"`) become open and close
/// events; a thread's slices that overlap without nesting go to separate lanes (speedscope
/// needs each lane properly nested), so no slice is dropped. Events without a duration
/// (instants, counters, begin/end pairs) are not slices: they are counted in the returned
/// notes.
pub fn from_chrome_trace(trace: &Value, name: &str) -> Result<(Value, Vec<String>), Failure> {
    let events = trace
        .get("traceEvents")
        .or(Some(trace))
        .and_then(Value::as_array)
        .ok_or_else(|| {
            Failure::input(format!(
                "{name}: not a Chrome trace: expected an object with `traceEvents` or an array \
                 of events (as `hpcscope trace --timeline FILE` writes)"
            ))
        })?;
    let mut thread_names: BTreeMap<(u64, u64), String> = BTreeMap::new();
    let mut slices: BTreeMap<(u64, u64), Vec<Slice>> = BTreeMap::new();
    let mut skipped: BTreeMap<String, u64> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        let ph = e.get("ph").and_then(Value::as_str).unwrap_or("");
        let pid = e.get("pid").and_then(Value::as_u64).unwrap_or(0);
        let tid = e.get("tid").and_then(Value::as_u64).unwrap_or(0);
        match ph {
            "M" => {
                if e.get("name").and_then(Value::as_str) == Some("thread_name")
                    && let Some(n) = e.pointer("/args/name").and_then(Value::as_str)
                {
                    thread_names.insert((pid, tid), n.to_string());
                }
            }
            "X" => {
                let num = |k: &str| {
                    e.get(k).and_then(Value::as_f64).ok_or_else(|| {
                        Failure::input(format!(
                            "{name}: event {i} (\"ph\":\"X\") has no numeric `{k}`"
                        ))
                    })
                };
                let (ts, dur) = (num("ts")?, num("dur")?);
                if !(ts.is_finite() && dur.is_finite() && dur >= 0.0) {
                    return Err(Failure::input(format!(
                        "{name}: event {i} has ts {ts} and dur {dur}: a slice needs a finite \
                         start and a non-negative duration"
                    )));
                }
                slices.entry((pid, tid)).or_default().push(Slice {
                    name: e
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_string(),
                    start: ts,
                    end: ts + dur,
                });
            }
            other => {
                let kind = match other {
                    "i" | "I" => "instant events".to_string(),
                    "" => "events without a phase".to_string(),
                    p => format!("\"ph\":\"{p}\" events"),
                };
                *skipped.entry(kind).or_default() += 1;
            }
        }
    }
    let t0 = slices
        .values()
        .flatten()
        .map(|s| s.start)
        .fold(f64::INFINITY, f64::min);
    let mut frames = Frames::default();
    let mut profiles = Vec::new();
    for ((pid, tid), mut v) in slices {
        // Longer first at equal starts, so an enclosing slice opens before what it holds.
        v.sort_by(|a, b| a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end)));
        let mut lanes: Vec<Vec<Slice>> = Vec::new();
        for s in v {
            let fits = |lane: &Vec<Slice>| {
                // Nested in every open slice it overlaps: the stack of open slices is the
                // slices of the lane that end after this one starts.
                lane.iter()
                    .filter(|o| o.end > s.start)
                    .all(|o| o.start <= s.start && s.end <= o.end)
            };
            match lanes.iter_mut().find(|l| fits(l)) {
                Some(l) => l.push(s),
                None => lanes.push(vec![s]),
            }
        }
        let tname = thread_names
            .get(&(pid, tid))
            .cloned()
            .unwrap_or_else(|| format!("pid {pid} tid {tid}"));
        let nlanes = lanes.len();
        for (li, lane) in lanes.into_iter().enumerate() {
            let mut ev: Vec<(f64, u8, f64, usize)> = Vec::new();
            for s in &lane {
                let f = frames.get(&s.name);
                // Sort key: time; at a tie, closes before opens; opens of longer slices
                // first, closes of shorter slices first.
                ev.push((s.start - t0, 1, -(s.end - s.start), f));
                ev.push((s.end - t0, 0, s.end - s.start, f));
            }
            ev.sort_by(|a, b| {
                a.0.total_cmp(&b.0)
                    .then(a.1.cmp(&b.1))
                    .then(a.2.total_cmp(&b.2))
            });
            let end = ev.iter().map(|e| e.0).fold(0.0, f64::max);
            let events: Vec<Value> = ev
                .iter()
                .map(|&(at, open, _, f)| {
                    json!({"type": if open == 1 { "O" } else { "C" }, "frame": f, "at": at})
                })
                .collect();
            let pname = if nlanes > 1 {
                format!("{tname} [lane {}]", li + 1)
            } else {
                tname.clone()
            };
            profiles.push(json!({
                "type": "evented",
                "name": pname,
                "unit": "microseconds",
                "startValue": 0,
                "endValue": end,
                "events": events,
            }));
        }
    }
    let notes = skipped
        .into_iter()
        .map(|(k, n)| format!("{n} {k} have no duration: not in speedscope's evented profiles"))
        .collect();
    Ok((
        json!({
            "$schema": SCHEMA,
            "shared": { "frames": frames.json() },
            "profiles": profiles,
            "name": name,
            "activeProfileIndex": 0,
            "exporter": exporter(),
        }),
        notes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::StackSample;

    #[test]
    fn a_profile_becomes_sampled_profiles_per_thread() {
        let p = Profile {
            hz: 100,
            duration_s: 1.0,
            samples: vec![
                StackSample {
                    pid: 1,
                    tid: 1,
                    comm: "a".into(),
                    frames: vec!["main".into(), "dot".into()],
                    count: 3,
                },
                StackSample {
                    pid: 1,
                    tid: 2,
                    comm: "a".into(),
                    frames: vec!["main".into()],
                    count: 1,
                },
            ],
            missing_user_stacks: 0,
        };
        let v = from_profile(&p, &Weight::Samples { hz: 100 }, "t");
        assert_eq!(v["profiles"].as_array().unwrap().len(), 2);
        assert_eq!(v["profiles"][0]["samples"][0], json!([0, 1]));
        assert_eq!(v["profiles"][0]["weights"][0], json!(30_000_000.0));
        assert_eq!(v["profiles"][0]["unit"], "nanoseconds");
        assert_eq!(v["shared"]["frames"][1]["name"], "dot");
    }

    #[test]
    fn overlapping_slices_go_to_separate_lanes_and_instants_are_counted() {
        let t = json!({"traceEvents": [
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "app (1)"}},
            {"name": "on-cpu", "ph": "X", "ts": 0.0, "dur": 10.0, "pid": 1, "tid": 1},
            {"name": "solve", "ph": "X", "ts": 2.0, "dur": 3.0, "pid": 1, "tid": 1},
            {"name": "io", "ph": "X", "ts": 8.0, "dur": 5.0, "pid": 1, "tid": 1},
            {"name": "exit", "ph": "i", "ts": 13.0, "pid": 1, "tid": 1}
        ]});
        let (v, notes) = from_chrome_trace(&t, "t").unwrap();
        let profiles = v["profiles"].as_array().unwrap();
        assert_eq!(profiles.len(), 2, "{v}");
        assert_eq!(profiles[0]["name"], "app (1) [lane 1]");
        let ev = profiles[0]["events"].as_array().unwrap();
        assert_eq!(ev.len(), 4);
        assert_eq!(ev[0]["type"], "O");
        assert_eq!(ev[3], json!({"type": "C", "frame": 0, "at": 10.0}));
        assert_eq!(
            notes,
            ["1 instant events have no duration: not in speedscope's evented profiles"]
        );
    }
}
