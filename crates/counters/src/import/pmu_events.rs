//! Linux perf `pmu-events` metric files (`tools/perf/pmu-events/arch/<arch>/<vendor>/<cpu>/
//! *metrics.json`): arrays of objects with `MetricName`, `MetricExpr`, `MetricGroup`,
//! `ScaleUnit`, `BriefDescription` (and event objects, which are skipped). Every
//! `MetricExpr` is parsed by [`crate::expr`]; metrics may refer to each other; `#smt_on` and
//! friends are constants; `duration_time` is the wall time in seconds, as in perf.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use crate::compute::normalize;
use crate::error::{Error, Result};
use crate::expr::{Env, EvalError, Expr};
use crate::raw::ThreadData;

#[derive(Debug, Deserialize)]
struct JsonEntry {
    #[serde(rename = "MetricName")]
    metric_name: Option<String>,
    #[serde(rename = "MetricExpr")]
    metric_expr: Option<String>,
    #[serde(rename = "MetricGroup")]
    metric_group: Option<String>,
    #[serde(rename = "ScaleUnit")]
    scale_unit: Option<String>,
    #[serde(rename = "BriefDescription")]
    brief: Option<String>,
}

/// One imported metric.
#[derive(Debug, Clone)]
pub struct PmuMetric {
    /// `MetricName`.
    pub name: String,
    /// `MetricExpr`, parsed.
    pub expr: Expr,
    /// `MetricGroup`, split at `;`.
    pub groups: Vec<String>,
    /// `ScaleUnit` factor (`100%` -> 100).
    pub scale: f64,
    /// `ScaleUnit` unit (`%`).
    pub unit: String,
    /// `BriefDescription`.
    pub description: String,
}

/// The metrics of one or more files.
#[derive(Debug, Clone, Default)]
pub struct PmuMetrics {
    /// Metrics by name, in file order.
    pub metrics: Vec<PmuMetric>,
}

/// Splits a `ScaleUnit` (`100%`, `1MPKI`, `6.103515625e-5MiB`, `1per_instr`) into factor
/// and unit.
pub fn scale_unit(s: &str) -> (f64, String) {
    let s = s.trim();
    let mut end = 0;
    for (i, c) in s.char_indices() {
        let prev = s[..i].chars().last();
        let ok = c.is_ascii_digit()
            || c == '.'
            || ((c == 'e' || c == 'E')
                && prev.is_some_and(|p| p.is_ascii_digit())
                && s[i + 1..].starts_with(|n: char| n.is_ascii_digit() || n == '-' || n == '+'))
            || ((c == '-' || c == '+') && matches!(prev, Some('e') | Some('E')));
        if ok {
            end = i + c.len_utf8();
        } else {
            break;
        }
    }
    let f = s[..end].parse().unwrap_or(1.0);
    (f, s[end..].to_string())
}

fn line_col(text: &str, needle_start: usize) -> (usize, usize) {
    let before = &text[..needle_start.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

impl PmuMetrics {
    /// Parses one JSON file's text. A bad `MetricExpr` is an error naming the metric, the
    /// file line of the expression and the column inside it.
    pub fn parse(text: &str, origin: &str) -> Result<PmuMetrics> {
        let entries: Vec<JsonEntry> =
            serde_json::from_str(text).map_err(|e| super::json_err(origin, &e))?;
        let mut out = PmuMetrics::default();
        for e in entries {
            let (Some(name), Some(src)) = (e.metric_name, e.metric_expr) else {
                continue;
            };
            let expr = Expr::parse(&src).map_err(|pe| {
                let needle = format!("\"{name}\"");
                let line = text.find(&needle).map_or(1, |p| line_col(text, p).0);
                Error::import(
                    origin,
                    line,
                    pe.column,
                    format!("MetricExpr of '{name}': {pe}"),
                )
            })?;
            let (scale, unit) = e
                .scale_unit
                .as_deref()
                .map(scale_unit)
                .unwrap_or((1.0, String::new()));
            out.metrics.push(PmuMetric {
                name,
                expr,
                groups: e
                    .metric_group
                    .map(|g| {
                        g.split(';')
                            .map(|s| s.trim().to_string())
                            .filter(|s| !s.is_empty())
                            .collect()
                    })
                    .unwrap_or_default(),
                scale,
                unit,
                description: e.brief.unwrap_or_default(),
            });
        }
        Ok(out)
    }

    /// A metric by name (case-insensitive, as perf matches).
    pub fn get(&self, name: &str) -> Option<&PmuMetric> {
        self.metrics
            .iter()
            .find(|m| m.name.eq_ignore_ascii_case(name))
    }

    /// Events a metric needs (other metrics expanded), perf spelling with `@` as `/`.
    pub fn events_of(&self, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![name.to_string()];
        let mut seen = std::collections::BTreeSet::new();
        while let Some(n) = todo.pop() {
            if !seen.insert(n.to_ascii_lowercase()) {
                continue;
            }
            if let Some(m) = self.get(&n) {
                todo.extend(m.expr.identifiers());
            } else if n != "duration_time" && !out.contains(&n) {
                out.push(n.replace('@', "/"));
            }
        }
        out.sort();
        out
    }

    /// Evaluates a metric (scaled by its `ScaleUnit`) on a thread's or region's counters.
    pub fn evaluate(
        &self,
        name: &str,
        data: &ThreadData,
        consts: &BTreeMap<String, f64>,
    ) -> std::result::Result<f64, EvalError> {
        let m = self.get(name).ok_or(EvalError::Unknown {
            name: name.to_string(),
            column: 1,
        })?;
        let counters: HashMap<String, f64> = data
            .counters
            .iter()
            .filter_map(|(k, v)| v.value.map(|x| (normalize(&k.replace('@', "/")), x)))
            .collect();
        let missing: HashMap<String, String> = data
            .counters
            .iter()
            .filter(|(_, v)| v.value.is_none())
            .map(|(k, v)| (normalize(&k.replace('@', "/")), format!("{:?}", v.status)))
            .collect();
        let mut env = PmuEnv {
            set: self,
            counters,
            missing,
            time_s: data.time_s,
            consts,
            stack: Vec::new(),
        };
        Ok(env.metric(m)? * m.scale)
    }
}

struct PmuEnv<'a> {
    set: &'a PmuMetrics,
    counters: HashMap<String, f64>,
    missing: HashMap<String, String>,
    time_s: Option<f64>,
    consts: &'a BTreeMap<String, f64>,
    stack: Vec<String>,
}

impl PmuEnv<'_> {
    fn metric(&mut self, m: &PmuMetric) -> std::result::Result<f64, EvalError> {
        if let Some(i) = self
            .stack
            .iter()
            .position(|s| s.eq_ignore_ascii_case(&m.name))
        {
            let mut path = self.stack[i..].to_vec();
            path.push(m.name.clone());
            return Err(EvalError::Cycle { path });
        }
        if self.stack.len() >= crate::expr::MAX_REFERENCES {
            return Err(EvalError::TooDeep {
                path: self.stack.clone(),
            });
        }
        self.stack.push(m.name.clone());
        let r = m.expr.eval(self);
        self.stack.pop();
        r
    }
}

impl Env for PmuEnv<'_> {
    fn ident(&mut self, name: &str, column: usize) -> std::result::Result<f64, EvalError> {
        if name == "duration_time" {
            return self.time_s.ok_or(EvalError::Missing {
                name: name.into(),
                reason: "no wall time".into(),
            });
        }
        let set = self.set;
        if let Some(m) = set.get(name) {
            return self.metric(m);
        }
        let key = normalize(&name.replace('@', "/"));
        if let Some(v) = self.counters.get(&key) {
            return Ok(*v);
        }
        // `cpu/event/` may have been recorded as plain `event`.
        let bare = key
            .trim_start_matches(|c| c != '/')
            .trim_start_matches('/')
            .to_string();
        if !bare.is_empty()
            && let Some(v) = self.counters.get(&bare)
        {
            return Ok(*v);
        }
        if let Some(s) = self.missing.get(&key) {
            return Err(EvalError::Missing {
                name: name.into(),
                reason: s.clone(),
            });
        }
        Err(EvalError::Missing {
            name: name.into(),
            reason: format!("event not in the data (column {column})"),
        })
    }

    fn constant(&mut self, name: &str, column: usize) -> std::result::Result<f64, EvalError> {
        self.consts
            .get(&name.to_ascii_lowercase())
            .copied()
            .ok_or(EvalError::UnknownConstant {
                name: name.into(),
                column,
            })
    }

    fn has(&mut self, name: &str) -> bool {
        self.counters
            .contains_key(&normalize(&name.replace('@', "/")))
    }
}

/// perf's constants with neutral defaults (`#smt_on` 0, `#num_cpus` 1, ...).
pub fn default_constants() -> BTreeMap<String, f64> {
    [
        ("smt_on", 0.0),
        ("num_cpus", 1.0),
        ("num_cpus_online", 1.0),
        ("num_cores", 1.0),
        ("num_packages", 1.0),
        ("num_dies", 1.0),
        ("core_wide", 0.0),
        ("slots", 4.0),
        ("system_tsc_freq", 1e9),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}
