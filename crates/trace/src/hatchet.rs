//! Hatchet export: a CPU profile as the list of nested dictionaries
//! `hatchet.GraphFrame.from_literal` (LLNL's Hatchet) reads, one calling-context tree per
//! command, each node with its exclusive and inclusive weight (`time` in seconds when the
//! counts are a time, else `samples`).

use std::collections::BTreeMap;

use serde_json::json;

use crate::perf_script::Weight;
use crate::profile::Profile;

/// The literal (a JSON array of root nodes, compact) of `profile`: one root per command name,
/// whose children are the calling contexts of its stacks. With a time weight, `time` and
/// `time (inc)` are seconds of CPU time; `samples` are the counts as they are. Written
/// without recursion: a folded stack can be thousands of frames deep (one of 8,000
/// overflowed the stack of the recursive `serde_json::Value` writer this replaces, and its
/// pretty-printed indentation grew with the square of the depth).
pub fn to_json(profile: &Profile, weight: &Weight) -> String {
    struct N {
        name: String,
        kind: &'static str,
        exclusive: u64,
        inclusive: u64,
        children: BTreeMap<String, usize>,
    }
    let node = |name: &str, kind| N {
        name: name.to_string(),
        kind,
        exclusive: 0,
        inclusive: 0,
        children: BTreeMap::new(),
    };
    let mut arena: Vec<N> = Vec::new();
    let mut roots: BTreeMap<String, usize> = BTreeMap::new();
    for s in &profile.samples {
        let mut cur = match roots.get(&s.comm) {
            Some(&i) => i,
            None => {
                arena.push(node(&s.comm, "process"));
                roots.insert(s.comm.clone(), arena.len() - 1);
                arena.len() - 1
            }
        };
        arena[cur].inclusive += s.count;
        for f in &s.frames {
            cur = match arena[cur].children.get(f) {
                Some(&i) => i,
                None => {
                    arena.push(node(f, "function"));
                    let i = arena.len() - 1;
                    arena[cur].children.insert(f.clone(), i);
                    i
                }
            };
            arena[cur].inclusive += s.count;
        }
        arena[cur].exclusive += s.count;
    }
    let scale = weight.nanoseconds_per_unit();
    enum Item {
        Node(usize),
        Tail(usize),
        Text(&'static str),
    }
    let push_list = |stack: &mut Vec<Item>, ids: Vec<usize>| {
        for (k, &i) in ids.iter().enumerate().rev() {
            stack.push(Item::Node(i));
            if k > 0 {
                stack.push(Item::Text(","));
            }
        }
    };
    let mut out = String::from("[");
    let mut stack = vec![Item::Text("]")];
    push_list(&mut stack, roots.values().copied().collect());
    while let Some(item) = stack.pop() {
        match item {
            Item::Text(s) => out.push_str(s),
            Item::Node(i) => {
                out.push('{');
                if arena[i].children.is_empty() {
                    stack.push(Item::Tail(i));
                } else {
                    out.push_str("\"children\":[");
                    stack.push(Item::Tail(i));
                    stack.push(Item::Text("],"));
                    push_list(&mut stack, arena[i].children.values().copied().collect());
                }
            }
            Item::Tail(i) => {
                let n = &arena[i];
                let (e, inc) = (n.exclusive as f64, n.inclusive as f64);
                let metrics = match scale {
                    Some(ns) => json!({
                        "time": e * ns / 1e9,
                        "time (inc)": inc * ns / 1e9,
                        "samples": e,
                        "samples (inc)": inc,
                    }),
                    None => json!({ "samples": e, "samples (inc)": inc }),
                };
                out.push_str("\"frame\":");
                out.push_str(&json!({ "name": n.name, "type": n.kind }).to_string());
                out.push_str(",\"metrics\":");
                out.push_str(&metrics.to_string());
                out.push('}');
            }
        }
    }
    out
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
        let v: serde_json::Value =
            serde_json::from_str(&to_json(&p, &Weight::Samples { hz: 100 })).unwrap();
        let main = &v[0]["children"][0];
        assert_eq!(main["frame"]["name"], "main");
        assert_eq!(main["metrics"]["time"], 0.1);
        assert_eq!(main["metrics"]["time (inc)"], 1.0);
        assert_eq!(main["children"][0]["frame"]["name"], "dot");
        assert_eq!(main["children"][0]["metrics"]["samples"], 60.0);
        assert_eq!(v[0]["metrics"]["samples (inc)"], 100.0);
        // Several commands: one root each, in name order; a frame path shared by two
        // stacks is one node.
        let two = Profile {
            samples: vec![s(&["x"], 1), {
                let mut o = s(&["y", "z"], 2);
                o.comm = "other".into();
                o
            }],
            ..p
        };
        let w = Weight::Samples { hz: 0 };
        let v: serde_json::Value = serde_json::from_str(&to_json(&two, &w)).unwrap();
        assert_eq!(v[0]["frame"]["name"], "app");
        assert_eq!(v[1]["frame"]["name"], "other");
        assert_eq!(v[1]["children"][0]["children"][0]["frame"]["name"], "z");
        assert_eq!(v[1]["metrics"]["samples (inc)"], 2.0);
        let none = Profile {
            samples: vec![],
            ..two
        };
        assert_eq!(to_json(&none, &w), "[]");
    }
}
