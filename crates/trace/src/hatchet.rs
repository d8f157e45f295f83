//! Hatchet export: a CPU profile as the list of nested dictionaries
//! `hatchet.GraphFrame.from_literal` (LLNL's Hatchet) reads, one calling-context tree per
//! command, each node with its exclusive and inclusive weight (`time` in seconds when the
//! counts are a time, else `samples`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::perf_script::Weight;
use crate::profile::Profile;

#[derive(Default)]
struct Node {
    exclusive: u64,
    inclusive: u64,
    children: BTreeMap<String, Node>,
}

impl Node {
    fn to_literal(&self, name: &str, kind: &str, scale: Option<f64>) -> Value {
        let (e, i) = (self.exclusive as f64, self.inclusive as f64);
        let metrics = match scale {
            Some(ns) => json!({
                "time": e * ns / 1e9,
                "time (inc)": i * ns / 1e9,
                "samples": e,
                "samples (inc)": i,
            }),
            None => json!({ "samples": e, "samples (inc)": i }),
        };
        let mut v = json!({
            "frame": { "name": name, "type": kind },
            "metrics": metrics,
        });
        if !self.children.is_empty() {
            v["children"] = Value::Array(
                self.children
                    .iter()
                    .map(|(n, c)| c.to_literal(n, "function", scale))
                    .collect(),
            );
        }
        v
    }
}

/// The literal (a JSON array of root nodes) of `profile`: one root per command name, whose
/// children are the calling contexts of its stacks. With a time weight, `time` and
/// `time (inc)` are seconds of CPU time; `samples` are the counts as they are.
pub fn from_profile(profile: &Profile, weight: &Weight) -> Value {
    let mut roots: BTreeMap<String, Node> = BTreeMap::new();
    for s in &profile.samples {
        let mut node = roots.entry(s.comm.clone()).or_default();
        node.inclusive += s.count;
        for f in &s.frames {
            node = node.children.entry(f.clone()).or_default();
            node.inclusive += s.count;
        }
        node.exclusive += s.count;
    }
    let scale = weight.nanoseconds_per_unit();
    Value::Array(
        roots
            .iter()
            .map(|(n, r)| r.to_literal(n, "process", scale))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::StackSample;

    #[test]
    fn inclusive_is_the_sum_below() {
        let s = |frames: &[&str], count| StackSample {
            pid: 1,
            tid: 1,
            comm: "app".into(),
            frames: frames.iter().map(|f| f.to_string()).collect(),
            count,
        };
        let p = Profile {
            hz: 100,
            duration_s: 1.0,
            samples: vec![
                s(&["main", "dot"], 60),
                s(&["main"], 10),
                s(&["main", "io"], 30),
            ],
            missing_user_stacks: 0,
        };
        let v = from_profile(&p, &Weight::Samples { hz: 100 });
        let main = &v[0]["children"][0];
        assert_eq!(main["frame"]["name"], "main");
        assert_eq!(main["metrics"]["time"], 0.1);
        assert_eq!(main["metrics"]["time (inc)"], 1.0);
        assert_eq!(main["children"][0]["frame"]["name"], "dot");
        assert_eq!(main["children"][0]["metrics"]["samples"], 60.0);
        assert_eq!(v[0]["metrics"]["samples (inc)"], 100.0);
    }
}
