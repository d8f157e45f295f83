//! Raw counter data, whatever produced it (live collection, region markers, `perf stat`,
//! PAPI, Caliper, likwid): per region, per thread, counter name -> value. Every importer and
//! collector produces a [`RawData`]; the metric computation reads only this.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Whether a counter was counted.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Counted the whole time it was enabled.
    #[default]
    Counted,
    /// Counted part of the time (multiplexed) and scaled by enabled/running.
    Scaled,
    /// Opened but never scheduled (`<not counted>`).
    NotCounted,
    /// The PMU does not have it (`<not supported>`).
    NotSupported,
}

/// One counter reading.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Count {
    /// The value (scaled when multiplexed); `None` unless counted.
    pub value: Option<f64>,
    /// Counting status.
    #[serde(default)]
    pub status: Status,
    /// Fraction of the enabled time the counter ran (1 without multiplexing), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_fraction: Option<f64>,
}

impl Count {
    /// A plain counted value.
    pub fn of(v: f64) -> Count {
        Count {
            value: Some(v),
            status: Status::Counted,
            running_fraction: None,
        }
    }

    /// A value from enabled and running times: scaled by enabled/running when they differ.
    pub fn from_times(raw: u64, enabled: u64, running: u64) -> Count {
        if running == 0 {
            Count {
                value: None,
                status: Status::NotCounted,
                running_fraction: Some(0.0),
            }
        } else if running >= enabled {
            Count {
                value: Some(raw as f64),
                status: Status::Counted,
                running_fraction: Some(1.0),
            }
        } else {
            Count {
                value: Some(raw as f64 * enabled as f64 / running as f64),
                status: Status::Scaled,
                running_fraction: Some(running as f64 / enabled as f64),
            }
        }
    }

    /// A counter without a value.
    pub fn missing(status: Status) -> Count {
        Count {
            value: None,
            status,
            running_fraction: None,
        }
    }
}

/// The counters of one thread in one region.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ThreadData {
    /// Thread index or id.
    pub thread: u64,
    /// Wall time spent in the region by this thread, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_s: Option<f64>,
    /// How many times the region was entered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    /// Counter name (as the collector spells it) -> reading.
    pub counters: BTreeMap<String, Count>,
}

/// One region.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RegionData {
    /// Region name.
    pub name: String,
    /// Per thread.
    pub threads: Vec<ThreadData>,
}

impl RegionData {
    /// Sums the threads: counters added (NA if any thread lacks a value), time the longest.
    pub fn aggregate(&self) -> ThreadData {
        let mut out = ThreadData::default();
        for t in &self.threads {
            out.time_s = match (out.time_s, t.time_s) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            if let Some(c) = t.calls {
                out.calls = Some(out.calls.unwrap_or(0).saturating_add(c));
            }
            for (k, v) in &t.counters {
                let e = out.counters.entry(k.clone()).or_insert(Count::of(0.0));
                e.value = match (e.value, v.value) {
                    (Some(a), Some(b)) => Some(a + b),
                    _ => None,
                };
                if v.value.is_none() {
                    e.status = v.status;
                } else if v.status == Status::Scaled && e.status == Status::Counted {
                    e.status = Status::Scaled;
                }
                e.running_fraction = match (e.running_fraction, v.running_fraction) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
        }
        out
    }
}

/// Which tool's names the counters use.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Collector {
    /// perf_event_open here, or `perf stat`.
    Perf,
    /// PAPI or Caliper's PAPI service.
    Papi,
    /// likwid-perfctr.
    Likwid,
}

/// Counter data of a run.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawData {
    /// Name of this configuration (a column of the report).
    pub label: String,
    /// What produced it: `perf-csv`, `papi-json`, `caliper-json`, `likwid-csv`, `perf_event`,
    /// `markers`.
    pub source: String,
    /// Naming convention of the counters.
    pub collector: Collector,
    /// CPU description, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// Why hardware counters are absent, when they are (e.g. no PMU in a VM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_unavailable: Option<String>,
    /// Regions.
    pub regions: Vec<RegionData>,
    /// Problems found but not fatal (unbalanced markers, skipped lines).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Exit status of the counted command's last run (its code, or 128 + the signal), when
    /// a command was run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
}

impl RawData {
    /// An empty data set.
    pub fn new(label: &str, source: &str, collector: Collector) -> RawData {
        RawData {
            label: label.to_string(),
            source: source.to_string(),
            collector,
            cpu: None,
            hardware_unavailable: None,
            regions: Vec::new(),
            warnings: Vec::new(),
            exit_status: None,
        }
    }

    /// The region called `name`, created if needed.
    pub fn region_mut(&mut self, name: &str) -> &mut RegionData {
        if let Some(i) = self.regions.iter().position(|r| r.name == name) {
            &mut self.regions[i]
        } else {
            self.regions.push(RegionData {
                name: name.to_string(),
                threads: Vec::new(),
            });
            self.regions.last_mut().expect("just pushed")
        }
    }

    /// The thread `thread` of region `name`, created if needed.
    pub fn thread_mut(&mut self, name: &str, thread: u64) -> &mut ThreadData {
        let r = self.region_mut(name);
        if let Some(i) = r.threads.iter().position(|t| t.thread == thread) {
            &mut r.threads[i]
        } else {
            r.threads.push(ThreadData {
                thread,
                ..ThreadData::default()
            });
            r.threads.last_mut().expect("just pushed")
        }
    }

    /// Adds another run's counters (e.g. one file per counter, as seed 001 collected them):
    /// counters of the same region and thread are added side by side; a counter present in
    /// both keeps this run's value and a warning is raised. Times: the longest.
    pub fn merge(&mut self, other: &RawData) {
        for r in &other.regions {
            for t in &r.threads {
                let mine = self.thread_mut(&r.name, t.thread);
                mine.time_s = match (mine.time_s, t.time_s) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                if mine.calls.is_none() {
                    mine.calls = t.calls;
                }
                let mut dup = Vec::new();
                for (k, v) in &t.counters {
                    if mine.counters.contains_key(k) {
                        dup.push(k.clone());
                    } else {
                        mine.counters.insert(k.clone(), *v);
                    }
                }
                for k in dup {
                    self.warnings.push(format!(
                        "{}: counter {k} of region {} thread {} given twice; the first is kept",
                        other.label, r.name, t.thread
                    ));
                }
            }
        }
        if self.hardware_unavailable.is_none() {
            self.hardware_unavailable = other.hardware_unavailable.clone();
        }
        self.warnings.extend(other.warnings.iter().cloned());
    }

    /// Counter names that were multiplexed (scaled) anywhere.
    pub fn scaled_counters(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .regions
            .iter()
            .flat_map(|r| r.threads.iter())
            .flat_map(|t| t.counters.iter())
            .filter(|(_, c)| c.status == Status::Scaled)
            .map(|(k, _)| k.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_one_counter_per_file() {
        let mut a = RawData::new("a", "caliper-json", Collector::Papi);
        let t = a.thread_mut("k", 0);
        t.time_s = Some(1.0);
        t.counters.insert("PAPI_LD_INS".into(), Count::of(10.0));
        let mut b = RawData::new("b", "caliper-json", Collector::Papi);
        let t = b.thread_mut("k", 0);
        t.time_s = Some(1.2);
        t.counters.insert("PAPI_SR_INS".into(), Count::of(5.0));
        t.counters.insert("PAPI_LD_INS".into(), Count::of(11.0));
        a.merge(&b);
        let t = &a.regions[0].threads[0];
        assert_eq!(t.counters["PAPI_SR_INS"].value, Some(5.0));
        assert_eq!(t.counters["PAPI_LD_INS"].value, Some(10.0));
        assert_eq!(t.time_s, Some(1.2));
        assert!(a.warnings[0].contains("PAPI_LD_INS"));
    }

    #[test]
    fn aggregate_keeps_missing_values_missing() {
        let mut r = RawData::new("a", "x", Collector::Perf);
        r.thread_mut("k", 0)
            .counters
            .insert("c".into(), Count::of(1.0));
        r.thread_mut("k", 1)
            .counters
            .insert("c".into(), Count::missing(Status::NotCounted));
        let a = r.regions[0].aggregate();
        assert_eq!(a.counters["c"].value, None);
        assert_eq!(a.counters["c"].status, Status::NotCounted);
    }
}
