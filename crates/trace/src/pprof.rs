//! pprof export: a CPU profile as the gzipped protocol buffer `go tool pprof`, Parca,
//! Pyroscope and Grafana read (`profile.proto` of github.com/google/pprof). One function and
//! one location per distinct frame name, one sample per distinct stack with the command
//! name, process and thread ids as labels.

use std::collections::HashMap;
use std::io::Write as _;

use prost::Message;

use crate::perf_script::Weight;
use crate::profile::Profile;

/// `perftools.profiles.Profile`.
#[derive(Clone, PartialEq, Message)]
pub struct PprofProfile {
    /// What each sample value is.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// Mapped binaries (none: the frames are already symbolized).
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// Locations, referenced by samples.
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// Functions, referenced by locations.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string; index 0 is the empty string.
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Start of the profile, ns since the Unix epoch.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// Length of the profile, ns.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// What the sampling period is.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// The sampling period.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-form comments (string indices).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
}

/// `ValueType`: a type and a unit, as string indices.
#[derive(Clone, PartialEq, Message)]
pub struct ValueType {
    /// Type, e.g. `samples`, `cpu`.
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// Unit, e.g. `count`, `nanoseconds`.
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// `Sample`: a stack (leaf first) and its values.
#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    /// Location ids, leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per sample type.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Labels.
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// `Label`: a string or numeric label of a sample.
#[derive(Clone, PartialEq, Message)]
pub struct Label {
    /// Key (string index).
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// String value (string index), or 0.
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// Numeric value.
    #[prost(int64, tag = "3")]
    pub num: i64,
}

/// `Mapping` (unused: kept for the message's completeness).
#[derive(Clone, PartialEq, Message)]
pub struct Mapping {
    /// Id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
}

/// `Location`: one frame.
#[derive(Clone, PartialEq, Message)]
pub struct Location {
    /// Id (non-zero).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The functions at this location (one: no inline information is kept).
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

/// `Line`: a function at a location.
#[derive(Clone, PartialEq, Message)]
pub struct Line {
    /// Function id.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// Source line, 0 when unknown.
    #[prost(int64, tag = "2")]
    pub line: i64,
}

/// `Function`.
#[derive(Clone, PartialEq, Message)]
pub struct Function {
    /// Id (non-zero).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Name (string index).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// Name as in the symbol table (string index).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Source file (string index), 0 when unknown.
    #[prost(int64, tag = "4")]
    pub filename: i64,
}

#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.get("");
        s
    }

    fn get(&mut self, v: &str) -> i64 {
        if let Some(&i) = self.index.get(v) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(v.to_string());
        self.index.insert(v.to_string(), i);
        i
    }
}

/// The pprof message of `profile` (counts weighed by `weight`); `start_unix_ns` is when the
/// profile started, 0 when unknown.
pub fn to_message(profile: &Profile, weight: &Weight, start_unix_ns: i64) -> PprofProfile {
    let mut s = Strings::new();
    let mut m = PprofProfile::default();
    // The values of a sample: its count, and its CPU time when the count is a time.
    let ns = weight.nanoseconds_per_unit();
    match weight {
        Weight::Samples { .. } => {
            m.sample_type.push(ValueType {
                r#type: s.get("samples"),
                unit: s.get("count"),
            });
            if ns.is_some() {
                m.sample_type.push(ValueType {
                    r#type: s.get("cpu"),
                    unit: s.get("nanoseconds"),
                });
            }
        }
        Weight::Period { event, unit } => {
            let ty = if ns.is_some() { "cpu" } else { event.as_str() };
            let unit = if unit == "nanoseconds" {
                "nanoseconds"
            } else {
                "count"
            };
            m.sample_type.push(ValueType {
                r#type: s.get(ty),
                unit: s.get(unit),
            });
        }
    }
    if let (Weight::Samples { hz }, Some(ns)) = (weight, ns) {
        m.period_type = Some(ValueType {
            r#type: s.get("cpu"),
            unit: s.get("nanoseconds"),
        });
        m.period = ns.round() as i64;
        debug_assert!(*hz > 0);
    }
    m.time_nanos = start_unix_ns;
    m.duration_nanos = (profile.duration_s * 1e9).round() as i64;
    let mut ids: HashMap<String, u64> = HashMap::new();
    let (k_comm, k_pid, k_tid) = (s.get("comm"), s.get("pid"), s.get("tid"));
    for st in &profile.samples {
        let mut loc = Vec::with_capacity(st.frames.len());
        for f in st.frames.iter().rev() {
            let next = ids.len() as u64 + 1;
            let id = *ids.entry(f.clone()).or_insert_with(|| {
                let name = s.get(f);
                m.function.push(Function {
                    id: next,
                    name,
                    system_name: name,
                    filename: 0,
                });
                m.location.push(Location {
                    id: next,
                    line: vec![Line {
                        function_id: next,
                        line: 0,
                    }],
                });
                next
            });
            loc.push(id);
        }
        let count = st.count.min(i64::MAX as u64) as i64;
        let mut value = vec![count];
        if let (Weight::Samples { .. }, Some(ns)) = (weight, ns) {
            value.push((count as f64 * ns).round() as i64);
        }
        let mut label = vec![Label {
            key: k_comm,
            str: s.get(&st.comm),
            num: 0,
        }];
        if st.pid != 0 {
            label.push(Label {
                key: k_pid,
                str: 0,
                num: st.pid.into(),
            });
            label.push(Label {
                key: k_tid,
                str: 0,
                num: st.tid.into(),
            });
        }
        m.sample.push(Sample {
            location_id: loc,
            value,
            label,
        });
    }
    let c = s.get("written by hpcscope");
    m.comment.push(c);
    m.string_table = s.table;
    m
}

/// The gzipped protocol buffer of [`to_message`], as `go tool pprof` reads it.
pub fn to_pprof_gz(profile: &Profile, weight: &Weight, start_unix_ns: i64) -> Vec<u8> {
    let bytes = to_message(profile, weight, start_unix_ns).encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&bytes).expect("writing to memory");
    gz.finish().expect("writing to memory")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::StackSample;

    #[test]
    fn stacks_become_leaf_first_locations_with_counts_and_times() {
        let p = Profile {
            hz: 100,
            duration_s: 1.0,
            samples: vec![
                StackSample {
                    pid: 7,
                    tid: 8,
                    comm: "app".into(),
                    frames: vec!["main".into(), "dot".into()],
                    count: 3,
                },
                StackSample {
                    pid: 7,
                    tid: 8,
                    comm: "app".into(),
                    frames: vec!["main".into()],
                    count: 1,
                },
            ],
            missing_user_stacks: 0,
        };
        let gz = to_pprof_gz(&p, &Weight::Samples { hz: 100 }, 0);
        let mut raw = Vec::new();
        use std::io::Read as _;
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut raw)
            .unwrap();
        let m = PprofProfile::decode(&raw[..]).unwrap();
        assert_eq!(m.string_table[0], "");
        assert_eq!(m.sample.len(), 2);
        assert_eq!(m.sample[0].value, vec![3, 30_000_000]);
        let name = |loc: u64| {
            let f = m.location[loc as usize - 1].line[0].function_id;
            &m.string_table[m.function[f as usize - 1].name as usize]
        };
        assert_eq!(name(m.sample[0].location_id[0]), "dot");
        assert_eq!(name(m.sample[0].location_id[1]), "main");
        assert_eq!(m.function.len(), 2);
        assert_eq!(m.period, 10_000_000);
        assert_eq!(m.duration_nanos, 1_000_000_000);
    }
}
