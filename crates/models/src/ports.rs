//! Port models as data and the bulk scheduler of the difference model.
//!
//! Seed 003 (Owenson 2020), section 5.2.2: every instruction class has a set of compatible
//! execution ports; an ideal scheduler places, in bulk, the cycles of each class
//! (`count x CPI`), classes with the fewest compatible ports first, minimising the maximum
//! port load. While a unit is busy its whole port is blocked, so classes sharing a port add
//! up. The model's cycle count is the busiest port's load (eqs. 5.8/5.9):
//! `C_model = max_p (A_p . c)`.
//!
//! The default placement is water-filling, the min-max optimal placement of one class given
//! the earlier ones; `Scheduler::GreedyExt` reproduces the author's public code (raise the
//! ports of the set in list order towards the set's maximum, then spread the rest equally).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{ModelError, Result};

/// Instruction counts per loop iteration, by class name.
pub type ClassCounts = BTreeMap<String, f64>;
/// Cycles per instruction (port occupancy), by class name.
pub type Cpis = BTreeMap<String, f64>;

/// Classes that the models skip: unknown instructions are counted under this name and reported.
pub const OTHER: &str = "OTHER";

/// How a class's cycles occupy its ports.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PortMode {
    /// Spread over the compatible ports (one port per instruction).
    #[default]
    Spread,
    /// Occupy every listed port at once (fused ports, e.g. 512-bit FP on Skylake P0+P1).
    All,
}

/// One class of a port model.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortClass {
    /// Class name (DIV, FP, LOAD, ...).
    pub name: String,
    /// Compatible ports.
    pub ports: Vec<String>,
    /// Spread over the ports, or occupy all of them.
    #[serde(default)]
    pub mode: PortMode,
    /// What the class holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A port model: ports and, in the scheduler's fill order, the classes and their ports.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortModel {
    /// File format version (1).
    pub format_version: u32,
    /// Short identifier (`skylake`).
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// Instruction set (`x86-64`, `aarch64`).
    pub isa: String,
    /// Where the model comes from.
    pub provenance: String,
    /// Port names.
    pub ports: Vec<String>,
    /// Classes in fill order.
    #[serde(rename = "class")]
    pub classes: Vec<PortClass>,
}

/// How the bulk scheduler places one class's cycles on its ports.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Scheduler {
    /// Min-max optimal water-filling.
    #[default]
    Waterfill,
    /// The thesis author's public code.
    GreedyExt,
}

const BUILTIN: &[(&str, &str)] = &[
    ("skylake", include_str!("../../../data/ports/skylake.toml")),
    (
        "skylake-avx512",
        include_str!("../../../data/ports/skylake-avx512.toml"),
    ),
    ("haswell", include_str!("../../../data/ports/haswell.toml")),
    (
        "sandybridge",
        include_str!("../../../data/ports/sandybridge.toml"),
    ),
    ("knl", include_str!("../../../data/ports/knl.toml")),
    (
        "sapphirerapids",
        include_str!("../../../data/ports/sapphirerapids.toml"),
    ),
    ("zen5", include_str!("../../../data/ports/zen5.toml")),
    ("a64fx", include_str!("../../../data/ports/a64fx.toml")),
];

/// The per-port result of placing a count vector.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Allocation {
    /// Cycles on each port, in the model's port order.
    pub port_cycles: Vec<(String, f64)>,
    /// The model's cycles: the busiest port's load (eq. 5.8/5.9).
    pub cycles: f64,
    /// The busiest port.
    pub binding_port: String,
    /// Cycles each class placed on each port (class, port, cycles), zero entries omitted.
    pub placements: Vec<(String, String, f64)>,
}

impl PortModel {
    /// Identifiers of the built-in port models (shipped under `data/ports/`).
    pub fn builtin_ids() -> Vec<&'static str> {
        BUILTIN.iter().map(|(id, _)| *id).collect()
    }

    /// A built-in port model by identifier.
    pub fn builtin(id: &str) -> Result<PortModel> {
        let text = BUILTIN
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, t)| *t)
            .ok_or_else(|| ModelError::Unknown {
                what: "port model",
                name: id.to_string(),
                known: Self::builtin_ids().join(", "),
            })?;
        Self::from_toml(text, &format!("built-in port model '{id}'"))
    }

    /// Parses and validates a port model from TOML text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<PortModel> {
        let m: PortModel = toml::from_str(text).map_err(|e| ModelError::Parse {
            origin: origin.to_string(),
            message: format!("{e}; see data/ports/skylake.toml for the expected shape"),
        })?;
        m.validate(origin)?;
        Ok(m)
    }

    fn validate(&self, origin: &str) -> Result<()> {
        let bad = |message: String| ModelError::Parse {
            origin: origin.to_string(),
            message,
        };
        if self.format_version != 1 {
            return Err(bad(format!(
                "format_version {} is not supported; this version reads format_version = 1",
                self.format_version
            )));
        }
        if self.ports.is_empty() || self.classes.is_empty() {
            return Err(bad(
                "a port model needs at least one port and one [[class]]".into(),
            ));
        }
        for (i, c) in self.classes.iter().enumerate() {
            if c.ports.is_empty() {
                return Err(bad(format!("class '{}' lists no ports", c.name)));
            }
            if self.classes[..i].iter().any(|d| d.name == c.name) {
                return Err(bad(format!("class '{}' is defined twice", c.name)));
            }
            for p in &c.ports {
                if !self.ports.contains(p) {
                    return Err(bad(format!(
                        "class '{}' uses port '{p}', which is not in ports = [{}]",
                        c.name,
                        self.ports.join(", ")
                    )));
                }
            }
        }
        Ok(())
    }

    /// Class names in fill order.
    pub fn class_names(&self) -> Vec<&str> {
        self.classes.iter().map(|c| c.name.as_str()).collect()
    }

    /// Index of a class, or an error naming the known classes.
    pub fn class_index(&self, name: &str) -> Result<usize> {
        self.classes
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| ModelError::Unknown {
                what: "instruction class",
                name: name.to_string(),
                known: self.class_names().join(", "),
            })
    }

    /// Count vector in class order; `OTHER` is skipped, any other unknown class is an error.
    pub fn count_vector(&self, counts: &ClassCounts) -> Result<Vec<f64>> {
        let mut v = vec![0.0; self.classes.len()];
        for (k, &n) in counts {
            if k == OTHER {
                continue;
            }
            if !n.is_finite() {
                return Err(ModelError::Invalid(format!("count of class '{k}' is {n}")));
            }
            v[self.class_index(k)?] = n;
        }
        Ok(v)
    }

    /// CPI vector in class order; a class without a CPI is an error (the CPI is unknown).
    pub fn cpi_vector(&self, cpi: &Cpis) -> Result<Vec<f64>> {
        for k in cpi.keys() {
            self.class_index(k)?;
        }
        self.classes
            .iter()
            .map(|c| {
                cpi.get(&c.name).copied().ok_or_else(|| {
                    ModelError::Invalid(format!(
                        "no CPI for class '{}' of port model '{}'; give every class a CPI (fit them with `model fit`)",
                        c.name, self.id
                    ))
                })
            })
            .collect()
    }

    /// Port indices of each class, in class order.
    pub(crate) fn port_sets(&self) -> Vec<Vec<usize>> {
        self.classes
            .iter()
            .map(|c| {
                c.ports
                    .iter()
                    .map(|p| self.ports.iter().position(|q| q == p).unwrap_or(0))
                    .collect()
            })
            .collect()
    }

    /// Per-port loads of a count vector and CPI vector (both in class order).
    pub fn port_loads(&self, counts: &[f64], cpi: &[f64], sched: Scheduler) -> Vec<f64> {
        self.port_loads_with(&self.port_sets(), counts, cpi, sched)
    }

    /// [`PortModel::port_loads`] with precomputed port sets (the fitting loop's fast path).
    pub(crate) fn port_loads_with(
        &self,
        sets: &[Vec<usize>],
        counts: &[f64],
        cpi: &[f64],
        sched: Scheduler,
    ) -> Vec<f64> {
        let mut load = vec![0.0; self.ports.len()];
        for (k, c) in self.classes.iter().enumerate() {
            let x = counts[k] * cpi[k];
            place(&mut load, &sets[k], x, c.mode, sched);
        }
        load
    }

    /// Eq. 5.8/5.9: the model's cycles per iteration, `max_p A_p . c`.
    pub fn cycles_of(&self, counts: &[f64], cpi: &[f64], sched: Scheduler) -> f64 {
        self.port_loads(counts, cpi, sched)
            .into_iter()
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// [`PortModel::cycles_of`] with precomputed port sets.
    pub(crate) fn cycles_with(
        &self,
        sets: &[Vec<usize>],
        counts: &[f64],
        cpi: &[f64],
        sched: Scheduler,
    ) -> f64 {
        self.port_loads_with(sets, counts, cpi, sched)
            .into_iter()
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// The full allocation (per-port and per-class cycles) of named counts and CPIs.
    pub fn allocate(
        &self,
        counts: &ClassCounts,
        cpi: &Cpis,
        sched: Scheduler,
    ) -> Result<Allocation> {
        let n = self.count_vector(counts)?;
        let c = self.cpi_vector(cpi)?;
        let sets = self.port_sets();
        let mut load = vec![0.0; self.ports.len()];
        let mut placements = Vec::new();
        for (k, class) in self.classes.iter().enumerate() {
            let before = load.clone();
            place(&mut load, &sets[k], n[k] * c[k], class.mode, sched);
            for &p in &sets[k] {
                let d = load[p] - before[p];
                if d.abs() > 1e-12 {
                    placements.push((class.name.clone(), self.ports[p].clone(), d));
                }
            }
        }
        let (bi, cycles) =
            load.iter()
                .copied()
                .enumerate()
                .fold(
                    (0, f64::NEG_INFINITY),
                    |a, (i, v)| if v > a.1 { (i, v) } else { a },
                );
        Ok(Allocation {
            port_cycles: self
                .ports
                .iter()
                .cloned()
                .zip(load.iter().copied())
                .collect(),
            cycles,
            binding_port: self.ports[bi].clone(),
            placements,
        })
    }
}

/// Places `x` cycles over the ports `set` of `load`.
fn place(load: &mut [f64], set: &[usize], x: f64, mode: PortMode, sched: Scheduler) {
    if x == 0.0 || set.is_empty() {
        return;
    }
    match mode {
        PortMode::All => {
            for &p in set {
                load[p] += x;
            }
        }
        PortMode::Spread if x < 0.0 => drain(load, set, -x),
        PortMode::Spread => match sched {
            Scheduler::Waterfill => waterfill(load, set, x),
            Scheduler::GreedyExt => greedy_ext(load, set, x),
        },
    }
}

/// Raises the lowest ports of `set` to a common level that uses exactly `x` cycles.
fn waterfill(load: &mut [f64], set: &[usize], x: f64) {
    let mut v: Vec<f64> = set.iter().map(|&p| load[p]).collect();
    v.sort_by(f64::total_cmp);
    let mut sum = 0.0;
    let mut level = v[0] + x;
    for k in 0..v.len() {
        sum += v[k];
        let cand = (x + sum) / (k + 1) as f64;
        if k + 1 == v.len() || cand <= v[k + 1] {
            level = cand;
            break;
        }
    }
    for &p in set {
        if load[p] < level {
            load[p] = level;
        }
    }
}

/// Lowers the highest ports of `set` to a common level that removes exactly `x` cycles
/// (a negative class entry of a difference vector, model v2).
fn drain(load: &mut [f64], set: &[usize], x: f64) {
    let mut v: Vec<f64> = set.iter().map(|&p| load[p]).collect();
    v.sort_by(|a, b| b.total_cmp(a));
    let mut sum = 0.0;
    let mut level = v[0] - x;
    for k in 0..v.len() {
        sum += v[k];
        let cand = (sum - x) / (k + 1) as f64;
        if k + 1 == v.len() || cand >= v[k + 1] {
            level = cand;
            break;
        }
    }
    for &p in set {
        if load[p] > level {
            load[p] = level;
        }
    }
}

/// The author's public scheduler: raise each port in list order towards the set's maximum
/// while budget lasts, then spread the rest equally.
fn greedy_ext(load: &mut [f64], set: &[usize], x: f64) {
    let top = set
        .iter()
        .map(|&p| load[p])
        .fold(f64::NEG_INFINITY, f64::max);
    let mut rest = x;
    for &p in set {
        let gap = (top - load[p]).max(0.0).min(rest);
        load[p] += gap;
        rest -= gap;
        if rest <= 0.0 {
            return;
        }
    }
    let each = rest / set.len() as f64;
    for &p in set {
        load[p] += each;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_loads() {
        for id in PortModel::builtin_ids() {
            let m = PortModel::builtin(id).unwrap();
            assert_eq!(m.id, id);
            assert!(!m.provenance.is_empty());
        }
    }

    #[test]
    fn waterfill_levels() {
        let mut l = vec![104.0, 0.0];
        waterfill(&mut l, &[0, 1], 168.0);
        assert_eq!(l, vec![136.0, 136.0]);
        let mut l = vec![10.0, 0.0, 4.0];
        waterfill(&mut l, &[0, 1, 2], 2.0);
        assert_eq!(l, vec![10.0, 2.0, 4.0]);
        let mut l = vec![10.0, 8.0];
        drain(&mut l, &[0, 1], 4.0);
        assert_eq!(l, vec![7.0, 7.0]);
    }

    #[test]
    fn bad_model_says_where() {
        let t = "format_version = 1\nid='x'\nname='x'\nisa='x'\nprovenance='p'\nports=['A']\n[[class]]\nname='FP'\nports=['B']\n";
        let e = PortModel::from_toml(t, "m.toml").unwrap_err().to_string();
        assert!(e.contains("port 'B'"), "{e}");
    }
}
