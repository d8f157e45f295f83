//! Metric computation: raw counters of a region (per thread, and summed) through a compiled
//! recipe into the portable metrics. A metric without a value is NA with the reason (not
//! supported, not counted, not in the data, no PMU, division by zero, cannot be measured on
//! this CPU): nothing silently reads zero.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::catalogue::{Compiled, INPUTS, SOFTWARE_EVENTS, Variant};
use crate::expr::{Env, EvalError};
use crate::raw::{Collector, Count, RawData, Status, ThreadData};

/// Precision of the floating-point work (selects `#sp`, `#element_bytes`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Double precision (8-byte elements).
    #[default]
    Dp,
    /// Single precision (4-byte elements).
    Sp,
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Precision::Dp => "dp",
            Precision::Sp => "sp",
        })
    }
}

/// One metric's value, or why it has none.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricValue {
    /// Metric id.
    pub id: String,
    /// Unscaled value (bytes, flop/s); `None` is NA.
    pub value: Option<f64>,
    /// Why the value is NA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub na: Option<String>,
    /// True when a counter it uses was multiplexed (scaled by enabled/running time).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multiplexed: bool,
    /// A warning about the value (negative, above the CPU's maximum, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Metrics of one thread in one region.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadMetrics {
    /// Thread index or id.
    pub thread: u64,
    /// Metrics in catalogue order.
    pub metrics: Vec<MetricValue>,
}

/// Metrics of one region: summed over threads, and per thread.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionMetrics {
    /// Region name.
    pub name: String,
    /// Times the region was entered (all threads), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    /// Counters summed over threads; time is the longest thread's.
    pub total: Vec<MetricValue>,
    /// Per thread (empty with one thread).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadMetrics>,
}

/// The metrics of one run (a configuration column).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Configuration label.
    pub label: String,
    /// Recipe id.
    pub recipe: String,
    /// Formula variant.
    pub variant: Variant,
    /// Precision.
    pub precision: Precision,
    /// What produced the counters.
    pub source: String,
    /// CPU, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// Why hardware metrics are NA, once for the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_unavailable: Option<String>,
    /// Per region.
    pub regions: Vec<RegionMetrics>,
    /// Counters that were multiplexed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub multiplexed_counters: Vec<String>,
    /// Non-fatal problems (unbalanced markers, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The recipe's caveats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Report {
    /// The region called `name`.
    pub fn region(&self, name: &str) -> Option<&RegionMetrics> {
        self.regions.iter().find(|r| r.name == name)
    }

    /// The numbers a run keeps in the history store: every metric with a value, per region
    /// (`{region: {metric: value}}`); NA metrics are left out rather than stored as zero.
    pub fn record_numbers(&self) -> serde_json::Value {
        let mut regions = serde_json::Map::new();
        for r in &self.regions {
            let metrics: serde_json::Map<String, serde_json::Value> = r
                .total
                .iter()
                .filter_map(|m| m.value.map(|v| (m.id.clone(), serde_json::json!(v))))
                .collect();
            regions.insert(r.name.clone(), serde_json::Value::Object(metrics));
        }
        serde_json::Value::Object(regions)
    }
}

impl RegionMetrics {
    /// A metric of the region total.
    pub fn get(&self, id: &str) -> Option<&MetricValue> {
        self.total.iter().find(|m| m.id == id)
    }

    /// The value of a metric of the region total.
    pub fn value(&self, id: &str) -> Option<f64> {
        self.get(id).and_then(|m| m.value)
    }
}

/// Normalises a counter name for matching across tools: lower case, `:` `.` `-` as `_`,
/// surrounding `/` and spaces dropped (`FP_ARITH_INST_RETIRED:SCALAR_DOUBLE`,
/// `fp_arith_inst_retired.scalar_double` and `FP_ARITH_INST_RETIRED_SCALAR_DOUBLE` match).
pub fn normalize(name: &str) -> String {
    name.trim()
        .trim_end_matches('/')
        .to_ascii_lowercase()
        .chars()
        .map(|c| if matches!(c, ':' | '.' | '-') { '_' } else { c })
        .collect()
}

pub(crate) fn glob(pat: &str, s: &str) -> bool {
    // `*` matches any run of characters.
    let parts: Vec<&str> = pat.split('*').collect();
    if parts.len() == 1 {
        return pat == s;
    }
    let mut rest = s;
    for (i, p) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(p) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(p);
        } else if let Some(k) = rest.find(p) {
            rest = &rest[k + p.len()..];
        } else {
            return false;
        }
    }
    true
}

struct Evaluator<'a> {
    c: &'a Compiled,
    counters: Vec<(String, &'a Count)>,
    time_s: Option<f64>,
    consts: &'a BTreeMap<String, f64>,
    hw_unavailable: Option<&'a str>,
    collector: Collector,
    memo: HashMap<String, (Result<f64, EvalError>, bool)>,
    stack: Vec<String>,
    scaled: bool,
}

impl Evaluator<'_> {
    fn counter(&mut self, name: &str) -> Option<Result<f64, EvalError>> {
        let mut spellings: Vec<String> = vec![name.to_string()];
        if let Some(ev) = self.c.recipe.events.get(name) {
            let mut s: Vec<&str> = ev.spellings(name);
            // Prefer the collector's own spelling.
            let own = match self.collector {
                Collector::Perf => ev.perf.as_deref(),
                Collector::Papi => ev.papi.as_deref(),
                Collector::Likwid => ev.likwid.as_deref(),
            };
            if let Some(o) = own {
                s.insert(0, o);
            }
            spellings = s.into_iter().map(String::from).collect();
            // Instances collected here are named EVENT@PMU.
            spellings.push(format!("{name}@*"));
        }
        for sp in &spellings {
            let n = normalize(sp);
            let hits: Vec<&Count> = if n.contains('*') {
                self.counters
                    .iter()
                    .filter(|(k, _)| glob(&n, k))
                    .map(|(_, c)| *c)
                    .collect()
            } else {
                self.counters
                    .iter()
                    .filter(|(k, _)| *k == n)
                    .map(|(_, c)| *c)
                    .collect()
            };
            if hits.is_empty() {
                continue;
            }
            let mut sum = 0.0;
            for c in hits {
                match c.value {
                    Some(v) => {
                        sum += v;
                        if c.status == Status::Scaled {
                            self.scaled = true;
                        }
                    }
                    None => {
                        let why = match c.status {
                            Status::NotSupported => "<not supported> by this CPU's PMU".to_string(),
                            Status::NotCounted => "<not counted>: opened but never scheduled (too many events for the PMU's counters, or a failed group)".to_string(),
                            _ => "no value".to_string(),
                        };
                        let why = match self.hw_unavailable {
                            Some(h) if c.status == Status::NotSupported => format!("{why} ({h})"),
                            _ => why,
                        };
                        return Some(Err(EvalError::Missing {
                            name: sp.clone(),
                            reason: why,
                        }));
                    }
                }
            }
            return Some(Ok(sum));
        }
        None
    }

    fn base(&mut self, name: &str, column: usize) -> Result<f64, EvalError> {
        if name == "time" || name == "duration_time" {
            return self.time_s.ok_or(EvalError::Missing {
                name: name.into(),
                reason: "no wall time for this region".into(),
            });
        }
        if let Some(r) = self.counter(name) {
            return r;
        }
        if self.c.recipe.events.contains_key(name) {
            if let Some(d) = self.c.derived.get(name) {
                return self.formula(name, d);
            }
            let why = match self.hw_unavailable {
                Some(h) => h.to_string(),
                None => format!(
                    "not in the data (looked for: {})",
                    self.c.recipe.events[name].spellings(name).join(", ")
                ),
            };
            return Err(EvalError::Missing {
                name: name.into(),
                reason: why,
            });
        }
        if SOFTWARE_EVENTS.contains(&name) {
            return Err(EvalError::Missing {
                name: name.into(),
                reason: "software event not in the data".into(),
            });
        }
        if INPUTS.contains(&name) {
            return Err(EvalError::Missing {
                name: name.into(),
                reason: "input not given".into(),
            });
        }
        Err(EvalError::Unknown {
            name: name.into(),
            column,
        })
    }

    fn formula(&mut self, name: &str, e: &crate::expr::Expr) -> Result<f64, EvalError> {
        if let Some((r, s)) = self.memo.get(name) {
            self.scaled |= *s;
            return r.clone();
        }
        if let Some(i) = self.stack.iter().position(|s| s == name) {
            let mut path = self.stack[i..].to_vec();
            path.push(name.to_string());
            return Err(EvalError::Cycle { path });
        }
        if self.stack.len() >= crate::expr::MAX_REFERENCES {
            return Err(EvalError::TooDeep {
                path: self.stack.clone(),
            });
        }
        let outer = std::mem::replace(&mut self.scaled, false);
        self.stack.push(name.to_string());
        let r = e.eval(self);
        self.stack.pop();
        let s = self.scaled;
        self.scaled = outer || s;
        self.memo.insert(name.to_string(), (r.clone(), s));
        r
    }

    fn metric(&mut self, id: &str) -> MetricValue {
        self.scaled = false;
        let r = self.ident(id, 1);
        let mut mv = MetricValue {
            id: id.to_string(),
            value: None,
            na: None,
            multiplexed: self.scaled,
            warning: None,
        };
        match r {
            Ok(v) if v.is_finite() => mv.value = Some(v),
            Ok(v) => mv.na = Some(format!("not a finite number ({v})")),
            Err(e) => mv.na = Some(e.to_string()),
        }
        mv
    }
}

impl Env for Evaluator<'_> {
    fn ident(&mut self, name: &str, column: usize) -> Result<f64, EvalError> {
        // A formula naming itself reads the event or input of that name.
        if self.stack.last().map(String::as_str) == Some(name) {
            return self.base(name, column);
        }
        if let Some(why) = self.c.recipe.recipe.cannot_measure.get(name) {
            return Err(EvalError::Missing {
                name: name.into(),
                reason: format!("cannot be measured on {}: {why}", self.c.recipe.recipe.name),
            });
        }
        let c = self.c;
        if let Some(e) = c.formulas.get(name).or_else(|| c.metrics.get(name)) {
            return self.formula(name, e);
        }
        self.base(name, column)
    }

    fn constant(&mut self, name: &str, column: usize) -> Result<f64, EvalError> {
        self.consts
            .get(name)
            .or_else(|| self.consts.get(&name.to_ascii_lowercase()))
            .copied()
            .ok_or(EvalError::UnknownConstant {
                name: name.into(),
                column,
            })
    }

    fn has(&mut self, name: &str) -> bool {
        matches!(self.counter(name), Some(Ok(_)))
    }
}

/// Constants of a computation: the recipe's, plus `#sp`, `#dp`, `#element_bytes`, and
/// neutral values for perf's (`#smt_on` = 0, `#num_cpus` = 1, ...), `extra` winning.
pub fn constants(
    c: &Compiled,
    precision: Precision,
    extra: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    let mut m: BTreeMap<String, f64> = BTreeMap::new();
    let sp = precision == Precision::Sp;
    for (k, v) in [
        ("sp", if sp { 1.0 } else { 0.0 }),
        ("dp", if sp { 0.0 } else { 1.0 }),
        ("element_bytes", if sp { 4.0 } else { 8.0 }),
        ("smt_on", 0.0),
        ("num_cpus", 1.0),
        ("num_cpus_online", 1.0),
        ("num_cores", 1.0),
        ("num_packages", 1.0),
        ("num_dies", 1.0),
        ("core_wide", 0.0),
        ("slots", 4.0),
        ("system_tsc_freq", 1e9),
    ] {
        m.insert(k.to_string(), v);
    }
    for (k, v) in &c.recipe.constants {
        m.insert(k.clone(), *v);
    }
    for (k, v) in extra {
        m.insert(k.clone(), *v);
    }
    m
}

/// Computes every metric of the catalogue for one thread's (or a region total's) counters.
pub fn metrics_of(
    c: &Compiled,
    order: &[String],
    data: &ThreadData,
    consts: &BTreeMap<String, f64>,
    collector: Collector,
    hw_unavailable: Option<&str>,
) -> Vec<MetricValue> {
    let counters: Vec<(String, &Count)> = data
        .counters
        .iter()
        .map(|(k, v)| (normalize(k), v))
        .collect();
    let mut ev = Evaluator {
        c,
        counters,
        time_s: data.time_s,
        consts,
        hw_unavailable,
        collector,
        memo: HashMap::new(),
        stack: Vec::new(),
        scaled: false,
    };
    let mut out: Vec<MetricValue> = order.iter().map(|id| ev.metric(id)).collect();
    // Checks that catch recipe or counter trouble.
    let max_key = if consts.get("sp") == Some(&1.0) {
        "max_flops_per_fpins_sp"
    } else {
        "max_flops_per_fpins_dp"
    };
    for m in &mut out {
        if let Some(v) = m.value {
            if v < 0.0 {
                m.warning = Some(
                    "negative: counters disagree (multiplexing, or event sets the formula assumes nested are disjoint)".into(),
                );
            }
            if m.id == "flops_per_fpins"
                && let Some(max) = consts.get(max_key)
                && v > max * 1.0001
            {
                m.warning = Some(format!("above this CPU's maximum of {max}"));
            }
        }
    }
    out
}

/// Options of a computation.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Precision of the FP work.
    pub precision: Precision,
    /// Extra or overriding constants.
    pub constants: BTreeMap<String, f64>,
    /// Also compute per-thread metrics.
    pub per_thread: bool,
}

/// Computes the metrics of every region of a run.
pub fn compute(c: &Compiled, metric_order: &[String], raw: &RawData, opts: &Options) -> Report {
    let consts = constants(c, opts.precision, &opts.constants);
    let hw = raw.hardware_unavailable.as_deref();
    let mut regions = Vec::new();
    for r in &raw.regions {
        let total = r.aggregate();
        let tm = metrics_of(c, metric_order, &total, &consts, raw.collector, hw);
        let threads = if opts.per_thread && r.threads.len() > 1 {
            r.threads
                .iter()
                .map(|t| ThreadMetrics {
                    thread: t.thread,
                    metrics: metrics_of(c, metric_order, t, &consts, raw.collector, hw),
                })
                .collect()
        } else {
            Vec::new()
        };
        regions.push(RegionMetrics {
            name: r.name.clone(),
            calls: total.calls,
            total: tm,
            threads,
        });
    }
    let mut notes = c.recipe.recipe.notes.clone();
    if raw.hardware_unavailable.is_some() && !c.recipe.events.is_empty() {
        // The caveats are about hardware events, and none was counted: say that once
        // instead of a screen of notes on measurements that did not happen.
        let id = &c.recipe.recipe.id;
        notes = vec![format!(
            "recipe '{id}': none of its hardware events could be counted here (see above); its notes on them: hpcscope counters recipes {id}"
        )];
    } else if !c.recipe.recipe.from_seed {
        notes.insert(
            0,
            format!(
                "recipe '{}' is not from seed 001: formulas carried over from the seed's method, events from {}",
                c.recipe.recipe.id, c.recipe.recipe.events_source
            ),
        );
    }
    Report {
        label: raw.label.clone(),
        recipe: c.recipe.recipe.id.clone(),
        variant: c.variant,
        precision: opts.precision,
        source: raw.source.clone(),
        cpu: raw.cpu.clone(),
        hardware_unavailable: raw.hardware_unavailable.clone(),
        regions,
        multiplexed_counters: raw.scaled_counters(),
        warnings: raw.warnings.clone(),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_normalise_across_tools() {
        assert_eq!(
            normalize("FP_ARITH_INST_RETIRED:SCALAR_DOUBLE"),
            normalize("fp_arith_inst_retired.scalar_double")
        );
        assert_eq!(normalize("task-clock"), "task_clock");
        assert!(glob(
            &normalize("uncore_imc*/cas_count_read/"),
            &normalize("uncore_imc_3/cas_count_read/")
        ));
        assert!(!glob("a*b", "ac"));
        assert!(glob("a*b*c", "aXbYc"));
    }

    #[test]
    fn without_a_pmu_the_recipe_notes_become_one_line() {
        let cat = crate::catalogue::Catalogue::builtin();
        let order: Vec<String> = cat.metrics.metrics.iter().map(|m| m.id.clone()).collect();
        let notes = |id: &str, hw_down: bool| {
            let c = cat
                .compile(cat.find(id).unwrap(), Variant::AsPublished)
                .unwrap();
            let mut raw = RawData::new("run", "perf_event", Collector::Perf);
            raw.thread_mut("all", 0).time_s = Some(1.0);
            if hw_down {
                raw.hardware_unavailable = Some("no PMU".into());
            }
            compute(&c, &order, &raw, &Options::default()).notes
        };
        let zen5 = cat.find("amd-zen5").unwrap();
        let up = notes("amd-zen5", false);
        assert_eq!(up.len(), zen5.recipe.notes.len() + 1);
        assert!(up[0].contains("is not from seed 001"), "{up:?}");
        let down = notes("amd-zen5", true);
        assert_eq!(
            down,
            vec![
                "recipe 'amd-zen5': none of its hardware events could be counted here (see above); its notes on them: hpcscope counters recipes amd-zen5"
            ]
        );
        // The software recipe's notes are about software events: they stay.
        let sw = notes("software", true);
        assert!(
            sw.iter().any(|n| n.starts_with("only software events")),
            "{sw:?}"
        );
    }
}
