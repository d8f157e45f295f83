//! Cache-aware rooflines (Gavoille 2024 thesis, section 6.1; Ilic et al.'s CARM).
//!
//! * eq. 6.1: `roofline_j(OI) = min(BW_j x OI, Peak)`, one roofline per memory level j;
//! * eq. 6.2: the peak weighted by the instruction mix,
//!   `Peak_w = Peak / (2 x vector_bits / datasize) x FLOPs / FP_instructions`;
//! * eq. 6.3: cumulative operational intensity per level,
//!   `OI_k = FLOPs / sum_{i >= k} B_i` (bytes served by level k and every level beyond);
//! * eq. 7.2: hit-ratio weighted harmonic bandwidth per level,
//!   `BW_k = sum_{i>=k} a_i / sum_{i>=k} (a_i / BW_i)`.
//!
//! Units: GB/s, GFLOP/s, FLOP/byte.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::machine::{CeilingOp, Derivation, Machine, Precision};
use crate::profile::AppMetrics;

/// Eq. 6.1: attainable GFLOP/s at operational intensity `oi` under one bandwidth and a peak.
/// An infinite OI (no byte from this level) is compute-bound.
pub fn attainable(bandwidth_gbs: f64, peak_gflops: f64, oi: f64) -> f64 {
    if oi.is_infinite() {
        peak_gflops
    } else {
        (bandwidth_gbs * oi).min(peak_gflops)
    }
}

/// What bounds a point of a roofline.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// The bandwidth line is below the peak at this OI.
    Memory,
    /// The peak is below (or equal to) the bandwidth line.
    Compute,
}

impl Bound {
    /// Which roof binds at `oi`.
    pub fn at(bandwidth_gbs: f64, peak_gflops: f64, oi: f64) -> Bound {
        if oi.is_finite() && bandwidth_gbs * oi < peak_gflops {
            Bound::Memory
        } else {
            Bound::Compute
        }
    }
}

/// What sets the compute ceiling of a binary at its own widths ([`Ceilings::compute_limit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComputeLimit {
    /// The FP units' throughput at the binary's widths.
    FpUnits,
    /// The divider, at the binary's share of divides and square roots.
    Divider,
    /// The loops' loop-carried dependency chains, at the machine's latencies.
    Chains,
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
        })
    }
}

/// Largest FLOPs per FP instruction at `vector_bits` and `datasize_bits`: an FMA on a full
/// vector, `2 x lanes`.
pub fn max_flops_per_instruction(vector_bits: u32, datasize_bits: u32) -> f64 {
    2.0 * f64::from(vector_bits) / f64::from(datasize_bits)
}

/// Eq. 6.2: the peak weighted by the instruction mix.
///
/// Returns the weighted peak and whether the FLOPs per instruction exceeded `2 x lanes`
/// (then clamped: the binary is wider than the machine's declared vector width).
pub fn weighted_peak(
    peak_gflops: f64,
    vector_bits: u32,
    datasize_bits: u32,
    flops_per_instruction: f64,
) -> (f64, bool) {
    let max = max_flops_per_instruction(vector_bits, datasize_bits);
    let clamped = flops_per_instruction > max * (1.0 + 1e-12);
    (peak_gflops / max * flops_per_instruction.min(max), clamped)
}

/// Eq. 6.3: cumulative OI of each level, `FLOPs / sum_{i>=k} B_i` (infinite when no byte
/// comes from level k or beyond).
pub fn cumulative_oi(flops: f64, bytes: &[f64]) -> Vec<f64> {
    (0..bytes.len())
        .map(|k| {
            let b: f64 = bytes[k..].iter().sum();
            if b > 0.0 { flops / b } else { f64::INFINITY }
        })
        .collect()
}

/// Ridge point: the OI where a bandwidth line meets the peak, FLOP/byte.
pub fn ridge(peak_gflops: f64, bandwidth_gbs: f64) -> f64 {
    peak_gflops / bandwidth_gbs
}

/// Eq. 7.2 generalised to every level k: the harmonic mean of the bandwidths of level k and
/// beyond, weighted by the fraction of bytes each serves. When no byte comes from level k or
/// beyond, the level's own bandwidth is returned.
pub fn weighted_bandwidth(fractions: &[f64], bandwidth_gbs: &[f64]) -> Vec<f64> {
    (0..fractions.len())
        .map(|k| {
            let num: f64 = fractions[k..].iter().sum();
            let den: f64 = fractions[k..]
                .iter()
                .zip(&bandwidth_gbs[k..])
                .map(|(a, bw)| a / bw)
                .sum();
            if num > 0.0 && den > 0.0 {
                num / den
            } else {
                bandwidth_gbs[k]
            }
        })
        .collect()
}

/// Whose bandwidths and peak a roofline uses.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// One core running alone: `core_gflops`, `core_gbs` (chapter 6).
    #[default]
    Core,
    /// One core's share of the loaded node: `node / cores` (eq. 7.1, chapter 7).
    Node,
}

/// A machine's rooflines restricted to the levels that have a bandwidth, for one precision
/// and scope.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ceilings {
    /// Machine id.
    pub machine: String,
    /// Precision.
    pub precision: Precision,
    /// Scope.
    pub scope: Scope,
    /// Unweighted sustained peak, GFLOP/s.
    pub peak_gflops: f64,
    /// Vector width, bits.
    pub vector_bits: u32,
    /// Level names with a bandwidth, ordered from the core outwards.
    pub levels: Vec<String>,
    /// Bandwidth per level, GB/s.
    pub bandwidth_gbs: Vec<f64>,
    /// How values were derived from the file (one per level, then the peak).
    pub notes: Vec<String>,
    /// The access widths the bandwidths are taken at, when they are the machine's
    /// per-width bandwidths ([`Ceilings::at_widths`]) rather than each level's best kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_widths: Option<AccessWidths>,
    /// FP instructions per second at the binary's widths, G/s (the per-width peaks over
    /// their FLOPs per instruction, `peak_w / (2 x lanes_w)`), when the machine gives
    /// per-width peaks: eq. 6.2 then reads `min(rate x FLOPs / FP instruction, peak)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fp_instruction_rate: Option<f64>,
    /// FP instructions per second the divider allows at the binary's mix of divides and
    /// square roots, G/s: the time per FP instruction of its divides and square roots at
    /// the machine's `div` and `sqrt` ceilings of their widths. The compute ceiling takes
    /// the lower of this and [`Ceilings::fp_instruction_rate`] (the divider works beside
    /// the other FP units). `None` when the binary neither divides nor takes square roots,
    /// or the machine gives no such ceiling at one of their widths
    /// ([`Ceilings::divider_unknown`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub divider_rate: Option<f64>,
    /// The binary divides or takes square roots at a width where the machine gives no
    /// `div` or `sqrt` ceiling: they count as other FP instructions. A projection then
    /// leaves the divider out on both sides ([`Ceilings::without_divider`]).
    #[serde(skip)]
    pub divider_unknown: bool,
    /// FP instructions per second the loops' loop-carried dependency chains allow, G/s:
    /// the time per FP instruction of the chains' operations at the machine's latencies
    /// (`[[peaks.latencies]]`, one core cycle per other operation). The compute ceiling
    /// takes the lowest of this, the divider's and the FP units' rates. `None` when the
    /// profile records no chain, or the machine gives no latency for one of its operations
    /// ([`Ceilings::latency_unknown`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_rate: Option<f64>,
    /// The profile records chains with an operation or width the machine gives no latency
    /// for (or the machine has no clock): a projection leaves the chains out on both sides
    /// ([`Ceilings::without_latency`]).
    #[serde(skip)]
    pub latency_unknown: bool,
    /// Most of the chains' time is integer steps (loops' counters, one cycle each): they
    /// bound the loops at one iteration per cycle, not an FP recurrence.
    #[serde(skip)]
    pub latency_mostly_integer: bool,
    /// The compute ceilings below the peak (scalar, no-FMA, add-only, mul-only) the machine
    /// gives, in this scope ([`Machine::carm_ceilings`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub compute_ceilings: Vec<crate::machine::CarmCeiling>,
}

/// How a binary's FP instructions and bytes split by vector width.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AccessWidths {
    /// One entry per width, narrowest first; each column of fractions sums to 1.
    pub parts: Vec<WidthShare>,
    /// Where the split comes from, in words.
    pub from: String,
    /// Other instructions (integer and the rest, one core cycle each) on the loops'
    /// dependency chains, per FP instruction of the binary (with `parts[].chain`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chain_other: f64,
}

/// One vector width and its shares.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WidthShare {
    /// Width, bits (the element size for scalar code).
    pub vector_bits: u32,
    /// Fraction of the bytes moved at this width, in [0, 1].
    pub fraction: f64,
    /// Fraction of the FP instructions of this width, in [0, 1].
    pub instructions: f64,
    /// Fraction of all FP instructions that are divides of this width (part of
    /// `instructions`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub div: f64,
    /// Fraction of all FP instructions that are square roots of this width (part of
    /// `instructions`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sqrt: f64,
    /// FP instructions of this width on the loops' loop-carried dependency chains, per FP
    /// instruction of the binary, by operation (once per iteration; docs/projection.md,
    /// "The dependency chain").
    #[serde(default, skip_serializing_if = "ChainShares::is_empty")]
    pub chain: ChainShares,
}

/// FP instructions on dependency chains per FP instruction of the binary, by operation.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChainShares {
    /// Adds and subtracts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub add: f64,
    /// Multiplies.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mul: f64,
    /// Fused multiply-adds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fma: f64,
    /// Divides.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub div: f64,
    /// Square roots.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sqrt: f64,
}

impl ChainShares {
    /// Whether every share is 0.
    pub fn is_empty(&self) -> bool {
        self.add == 0.0 && self.mul == 0.0 && self.fma == 0.0 && self.div == 0.0 && self.sqrt == 0.0
    }

    /// (operation, share) for each operation.
    pub fn ops(&self) -> [(CeilingOp, f64); 5] {
        [
            (CeilingOp::Add, self.add),
            (CeilingOp::Mul, self.mul),
            (CeilingOp::Fma, self.fma),
            (CeilingOp::Div, self.div),
            (CeilingOp::Sqrt, self.sqrt),
        ]
    }
}

/// The loops' dependency chains in a profile's counts, absolute: per width in bits,
/// (add, mul, fma, div, sqrt) instructions on the chains; the other instructions on them
/// (one cycle each).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChainCounts {
    /// (width in bits, [add, mul, fma, div, sqrt]).
    pub fp: Vec<(u32, [f64; 5])>,
    /// Other instructions on the chains.
    pub other: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl AccessWidths {
    /// Every instruction and byte at one width.
    pub fn single(vector_bits: u32, from: impl Into<String>) -> AccessWidths {
        AccessWidths {
            parts: vec![WidthShare {
                vector_bits,
                fraction: 1.0,
                instructions: 1.0,
                ..WidthShare::default()
            }],
            from: from.into(),
            chain_other: 0.0,
        }
    }

    /// The split implied by instruction counts per width: an instruction of width `w`
    /// moves `w` bits, so width `w` gets `n_w x w / sum(n x w)` of the bytes (the loads and
    /// stores of a loop have the width of its arithmetic). `None` when no count is positive.
    pub fn from_instructions(
        counts: &[(u32, f64)],
        from: impl Into<String>,
    ) -> Option<AccessWidths> {
        let mut merged: Vec<(u32, f64)> = Vec::new();
        for &(w, n) in counts {
            if w == 0 || !(n.is_finite() && n > 0.0) {
                continue;
            }
            match merged.iter_mut().find(|(x, _)| *x == w) {
                Some((_, m)) => *m += n,
                None => merged.push((w, n)),
            }
        }
        let bits: f64 = merged.iter().map(|(w, n)| f64::from(*w) * n).sum();
        let count: f64 = merged.iter().map(|(_, n)| n).sum();
        if bits <= 0.0 || count <= 0.0 {
            return None;
        }
        merged.sort_by_key(|(w, _)| *w);
        Some(AccessWidths {
            parts: merged
                .into_iter()
                .map(|(w, n)| WidthShare {
                    vector_bits: w,
                    fraction: f64::from(w) * n / bits,
                    instructions: n / count,
                    ..WidthShare::default()
                })
                .collect(),
            from: from.into(),
            chain_other: 0.0,
        })
    }

    /// The split of counted loads and stores: `bytes` are the bytes moved per access width
    /// (bits), `fp_instructions` the FP instructions per width (the element size for
    /// scalar code). Width `w` gets `bytes_w / sum(bytes)` of the bytes and `n_w / sum(n)`
    /// of the FP instructions (0 for every width when there is none). `None` when no
    /// byte count is positive.
    pub fn from_bytes(
        bytes: &[(u32, f64)],
        fp_instructions: &[(u32, f64)],
        from: impl Into<String>,
    ) -> Option<AccessWidths> {
        fn merge(v: &[(u32, f64)]) -> Vec<(u32, f64)> {
            let mut out: Vec<(u32, f64)> = Vec::new();
            for &(w, n) in v {
                if w == 0 || !(n.is_finite() && n > 0.0) {
                    continue;
                }
                match out.iter_mut().find(|(x, _)| *x == w) {
                    Some((_, m)) => *m += n,
                    None => out.push((w, n)),
                }
            }
            out
        }
        let b = merge(bytes);
        let n = merge(fp_instructions);
        let tb: f64 = b.iter().map(|x| x.1).sum();
        let tn: f64 = n.iter().map(|x| x.1).sum();
        if tb <= 0.0 {
            return None;
        }
        let mut widths: Vec<u32> = b.iter().chain(&n).map(|x| x.0).collect();
        widths.sort_unstable();
        widths.dedup();
        let share = |v: &[(u32, f64)], t: f64, w: u32| {
            v.iter()
                .find(|x| x.0 == w)
                .map_or(0.0, |x| if t > 0.0 { x.1 / t } else { 0.0 })
        };
        Some(AccessWidths {
            parts: widths
                .into_iter()
                .map(|w| WidthShare {
                    vector_bits: w,
                    fraction: share(&b, tb, w),
                    instructions: share(&n, tn, w),
                    ..WidthShare::default()
                })
                .collect(),
            from: from.into(),
            chain_other: 0.0,
        })
    }

    /// The part of width `w`, added (no bytes, no instruction share) where there is none.
    fn part_mut(&mut self, w: u32) -> &mut WidthShare {
        let i = match self.parts.iter().position(|p| p.vector_bits == w) {
            Some(i) => i,
            None => {
                self.parts.push(WidthShare {
                    vector_bits: w,
                    ..WidthShare::default()
                });
                self.parts.sort_by_key(|p| p.vector_bits);
                self.parts
                    .iter()
                    .position(|p| p.vector_bits == w)
                    .expect("just added")
            }
        };
        &mut self.parts[i]
    }

    /// Records the divides and square roots: `counts` are (width in bits, divides, square
    /// roots), `fp_instructions` all FP instructions (the base of every share). A width
    /// without a part gets one (no bytes, no other instruction share).
    pub fn with_divider(mut self, counts: &[(u32, f64, f64)], fp_instructions: f64) -> Self {
        if !(fp_instructions.is_finite() && fp_instructions > 0.0) {
            return self;
        }
        for &(w, d, q) in counts {
            if w == 0 || !(d.is_finite() && q.is_finite()) || d + q <= 0.0 {
                continue;
            }
            let part = self.part_mut(w);
            part.div += d.max(0.0) / fp_instructions;
            part.sqrt += q.max(0.0) / fp_instructions;
        }
        self
    }

    /// Records the loops' dependency chains ([`ChainCounts`]) as shares of `fp_instructions`
    /// (all FP instructions). A width without a part gets one (no bytes, no other share).
    pub fn with_chains(mut self, counts: &ChainCounts, fp_instructions: f64) -> Self {
        if !(fp_instructions.is_finite() && fp_instructions > 0.0) {
            return self;
        }
        let mut any = false;
        for &(w, ops) in &counts.fp {
            if w == 0 || ops.iter().any(|v| !v.is_finite()) || ops.iter().sum::<f64>() <= 0.0 {
                continue;
            }
            any = true;
            let c = &mut self.part_mut(w).chain;
            for (slot, v) in [&mut c.add, &mut c.mul, &mut c.fma, &mut c.div, &mut c.sqrt]
                .into_iter()
                .zip(ops)
            {
                *slot += v.max(0.0) / fp_instructions;
            }
        }
        if any && counts.other.is_finite() && counts.other > 0.0 {
            self.chain_other += counts.other / fp_instructions;
        }
        self
    }

    /// Whether the split records dependency chains.
    pub fn has_chains(&self) -> bool {
        self.parts.iter().any(|p| !p.chain.is_empty())
    }

    /// Problems with the shares (for files that carry a split), in words: each share finite
    /// and in [0, 1], each width positive, the byte fractions summing to 1.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.parts.is_empty() {
            out.push("has no part".to_string());
        }
        for (i, p) in self.parts.iter().enumerate() {
            if p.vector_bits == 0 {
                out.push(format!("parts[{i}].vector_bits is 0"));
            }
            for (name, v) in [
                ("fraction", p.fraction),
                ("instructions", p.instructions),
                ("div", p.div),
                ("sqrt", p.sqrt),
                ("chain.add", p.chain.add),
                ("chain.mul", p.chain.mul),
                ("chain.fma", p.chain.fma),
                ("chain.div", p.chain.div),
                ("chain.sqrt", p.chain.sqrt),
            ] {
                if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                    out.push(format!("parts[{i}].{name} is {v}, not a share in [0, 1]"));
                }
            }
            if p.div + p.sqrt > p.instructions + 1e-9 {
                out.push(format!(
                    "parts[{i}]: divides and square roots ({:.3}) exceed the width's FP instructions ({:.3})",
                    p.div + p.sqrt,
                    p.instructions
                ));
            }
        }
        if !(self.chain_other.is_finite() && self.chain_other >= 0.0) {
            out.push(format!(
                "chain_other is {}, not a count per FP instruction",
                self.chain_other
            ));
        }
        let sum: f64 = self.parts.iter().map(|p| p.fraction).sum();
        if !self.parts.is_empty() && (sum - 1.0).abs() > 1e-6 {
            out.push(format!("the byte fractions sum to {sum}, not 1"));
        }
        out
    }

    /// `128-bit 93 %, 64-bit 7 %`.
    /// Widths holding under 0.5 % of the bytes are summed as `under 0.5 % at other widths`.
    pub fn describe(&self) -> String {
        let mut parts = self.parts.clone();
        parts.sort_by(|a, b| b.fraction.total_cmp(&a.fraction));
        let (big, small): (Vec<&WidthShare>, Vec<&WidthShare>) =
            parts.iter().partition(|p| p.fraction >= 0.005);
        let mut out: Vec<String> = big
            .iter()
            .map(|p| format!("{}-bit {:.0} %", p.vector_bits, p.fraction * 100.0))
            .collect();
        if small.iter().any(|p| p.fraction > 0.0) {
            out.push("under 0.5 % at other widths".to_string());
        }
        out.join(", ")
    }
}

impl Ceilings {
    /// Reads the ceilings of `m` for `precision` and `scope`.
    pub fn of(m: &Machine, precision: Precision, scope: Scope) -> Result<Ceilings> {
        let mut notes = Vec::new();
        let peak = match scope {
            Scope::Core => m.core_peak_gflops(precision),
            Scope::Node => m.node_share_peak_gflops(precision),
        };
        let Some((peak_gflops, how)) = peak else {
            return Err(Error::mismatch(
                format!("machine '{}' has no {precision} peak", m.id),
                format!(
                    "add a [[peaks]] entry with precision = \"{precision}\" to the machine file, or analyse the application in the machine's precision"
                ),
            ));
        };
        note_derivation(&mut notes, &m.id, "peak", how);
        let mut levels = Vec::new();
        let mut bandwidth_gbs = Vec::new();
        for l in &m.levels {
            let bw = match scope {
                Scope::Core => m.core_bandwidth_gbs(l),
                Scope::Node => m.node_share_bandwidth_gbs(l),
            };
            if let Some((bw, how)) = bw {
                note_derivation(&mut notes, &m.id, &l.name, how);
                levels.push(l.name.clone());
                bandwidth_gbs.push(bw);
            }
        }
        Ok(Ceilings {
            machine: m.id.clone(),
            precision,
            scope,
            peak_gflops,
            vector_bits: m.vector_bits,
            levels,
            bandwidth_gbs,
            notes,
            access_widths: None,
            fp_instruction_rate: None,
            divider_rate: None,
            divider_unknown: false,
            latency_rate: None,
            latency_unknown: false,
            latency_mostly_integer: false,
            compute_ceilings: m.carm_ceilings(precision, scope == Scope::Node),
        })
    }

    /// The ceilings of `m` with each level's bandwidth taken at the binary's own access
    /// widths: for a split over several widths, the harmonic mean of the per-width
    /// bandwidths weighted by the bytes of each width (time per byte adds up, as in eq.
    /// 7.2). A level without per-width bandwidths keeps its own value, with a note.
    pub fn at_widths(
        m: &Machine,
        precision: Precision,
        scope: Scope,
        widths: &AccessWidths,
    ) -> Result<Ceilings> {
        let mut c = Ceilings::of(m, precision, scope)?;
        let mut without = Vec::new();
        for (i, name) in c.levels.clone().iter().enumerate() {
            let level = m
                .level(name)
                .expect("the ceilings' levels come from the machine");
            let mut per_byte = 0.0;
            let mut used = Vec::new();
            let mut complete = true;
            for part in widths.parts.iter().filter(|p| p.fraction > 0.0) {
                match m.width_bandwidth_gbs(level, part.vector_bits, scope == Scope::Node) {
                    Some((bw, _, w)) => {
                        per_byte += part.fraction / bw;
                        if w != part.vector_bits {
                            used.push(format!("{}-bit for {}-bit", w, part.vector_bits));
                        }
                    }
                    None => complete = false,
                }
            }
            if !complete || per_byte <= 0.0 {
                without.push(name.clone());
                continue;
            }
            let bw = 1.0 / per_byte;
            if !used.is_empty() {
                c.notes.push(format!(
                    "{}: {name} has no bandwidth at every width of the binary; used {}",
                    m.id,
                    used.join(", ")
                ));
            }
            c.bandwidth_gbs[i] = bw;
        }
        if !without.is_empty() {
            c.notes.push(format!(
                "{}: no per-width bandwidth for {}: the level's own (best kernel's) bandwidth is used",
                m.id,
                without.join(", ")
            ));
        }
        // The compute ceiling: time per FP instruction adds up over the widths.
        let mut per_instruction = 0.0;
        let mut complete = true;
        for part in widths.parts.iter().filter(|p| p.instructions > 0.0) {
            match m.width_peak_gflops(precision, part.vector_bits, scope == Scope::Node) {
                Some((peak, _, w)) => {
                    let rate = peak / max_flops_per_instruction(w, precision.bits());
                    per_instruction += part.instructions / rate;
                }
                None => complete = false,
            }
        }
        if complete && per_instruction > 0.0 {
            c.fp_instruction_rate = Some(1.0 / per_instruction);
            c.set_divider(m, precision, scope, widths, 1.0 / per_instruction);
            c.set_latency(m, precision, widths);
        } else if m.peak(precision).is_some_and(|p| p.widths.is_empty()) {
            c.notes.push(format!(
                "{}: no per-width peak: eq. 6.2 weighs the machine's peak at its {}-bit vectors",
                m.id, m.vector_bits
            ));
        }
        if without.len() < c.levels.len() || c.fp_instruction_rate.is_some() {
            c.access_widths = Some(widths.clone());
        }
        Ok(c)
    }

    /// The divider's rate ([`Ceilings::divider_rate`]) for the divides and square roots of
    /// `widths`, beside `arith_rate`, the rate of the FP instructions at their widths.
    fn set_divider(
        &mut self,
        m: &Machine,
        precision: Precision,
        scope: Scope,
        widths: &AccessWidths,
        arith_rate: f64,
    ) {
        let mut per_instruction = 0.0;
        let mut missing = Vec::new();
        for part in &widths.parts {
            for (op, share) in [(CeilingOp::Div, part.div), (CeilingOp::Sqrt, part.sqrt)] {
                if share <= 0.0 {
                    continue;
                }
                match m.exact_ceiling_gflops(precision, op, part.vector_bits, scope == Scope::Node)
                {
                    Some((gflops, _)) if gflops > 0.0 => {
                        // One FLOP per lane: instructions per second = GFLOP/s / lanes.
                        let lanes = (part.vector_bits / precision.bits()).max(1);
                        per_instruction += share * f64::from(lanes) / gflops;
                    }
                    _ => missing.push(format!("{op} {}-bit", part.vector_bits)),
                }
            }
        }
        if !missing.is_empty() {
            self.divider_unknown = true;
            self.notes.push(format!(
                "{}: no {precision} ceiling for {}: the binary's divides and square roots count as other FP instructions",
                m.id,
                missing.join(", ")
            ));
            return;
        }
        if per_instruction <= 0.0 {
            return;
        }
        let rate = 1.0 / per_instruction;
        self.divider_rate = Some(rate);
        if rate < arith_rate {
            let (d, q) = widths
                .parts
                .iter()
                .fold((0.0, 0.0), |(d, q), p| (d + p.div, q + p.sqrt));
            self.notes.push(format!(
                "{}: the divider binds the compute ceiling: divides and square roots ({:.1} % and {:.1} % of the FP instructions) allow {:.3} G FP instructions/s, the other FP units {:.3}",
                m.id,
                100.0 * d,
                100.0 * q,
                rate,
                arith_rate
            ));
        }
    }

    /// The chains' rate ([`Ceilings::latency_rate`]) for the dependency chains of `widths`.
    fn set_latency(&mut self, m: &Machine, precision: Precision, widths: &AccessWidths) {
        if !widths.has_chains() {
            return;
        }
        let mut per_instruction = 0.0;
        let mut missing = Vec::new();
        for part in &widths.parts {
            for (op, share) in part.chain.ops() {
                if share <= 0.0 {
                    continue;
                }
                match m.latency_ns(precision, op, part.vector_bits) {
                    Some(ns) if ns > 0.0 => per_instruction += share * ns,
                    _ => missing.push(format!("{op} {}-bit", part.vector_bits)),
                }
            }
        }
        let fp_ns = per_instruction;
        if widths.chain_other > 0.0 {
            match m.scalar_cycle_ns() {
                Some(ns) => per_instruction += widths.chain_other * ns,
                None => missing.push("a clock (frequency_ghz)".to_string()),
            }
        }
        if !missing.is_empty() {
            self.latency_unknown = true;
            self.notes.push(format!(
                "{}: no {precision} latency for {}: the loops' dependency chains are left out",
                m.id,
                missing.join(", ")
            ));
            return;
        }
        if per_instruction <= 0.0 {
            return;
        }
        let rate = 1.0 / per_instruction;
        self.latency_rate = Some(rate);
        self.latency_mostly_integer = per_instruction - fp_ns > fp_ns;
        let others = match (self.fp_instruction_rate, self.divider_rate) {
            (Some(a), Some(d)) => Some(a.min(d)),
            (a, _) => a,
        };
        if let Some(o) = others.filter(|o| rate < *o) {
            // A chain of integer steps only (a loop's counter): the loop runs at most one
            // iteration per cycle, not an FP recurrence.
            let what = if !self.latency_mostly_integer {
                "the loops' dependency chains"
            } else {
                "the loops' dependency chains, mostly integer steps (loop counters, one cycle each: at most one iteration per cycle),"
            };
            self.notes.push(format!(
                "{}: {what} bind the compute ceiling: they allow {rate:.3} G FP instructions/s, the FP units and the divider {o:.3}",
                m.id,
            ));
        }
    }

    /// The same ceilings without the loops' dependency chains (for a projection whose other
    /// side has no latency for them).
    pub fn without_latency(&mut self) {
        self.latency_rate = None;
        self.notes
            .retain(|n| !(n.contains("chains") && n.contains("bind the compute ceiling")));
    }

    /// The same ceilings with the binary's divides and square roots counted as other FP
    /// instructions (for a projection whose other side has no divider ceiling).
    pub fn without_divider(&mut self) {
        self.divider_rate = None;
        self.notes.retain(|n| !n.contains("the divider binds"));
    }

    /// FP instructions per second at the binary's widths: the FP units' rate, or the
    /// divider's or the dependency chains' where lower.
    pub fn instruction_rate(&self) -> Option<f64> {
        let a = self.fp_instruction_rate?;
        Some(
            [self.divider_rate, self.latency_rate]
                .into_iter()
                .flatten()
                .fold(a, f64::min),
        )
    }

    /// Which of the FP units, the divider and the loops' dependency chains sets
    /// [`Ceilings::instruction_rate`]; `None` without a rate at the binary's widths.
    pub fn compute_limit(&self) -> Option<ComputeLimit> {
        let units = self.fp_instruction_rate?;
        let divider = self.divider_rate.unwrap_or(f64::INFINITY);
        let chains = self.latency_rate.unwrap_or(f64::INFINITY);
        Some(if chains < units.min(divider) {
            ComputeLimit::Chains
        } else if divider < units {
            ComputeLimit::Divider
        } else {
            ComputeLimit::FpUnits
        })
    }

    /// Bandwidth of level `name`, if it has one.
    pub fn bandwidth(&self, name: &str) -> Option<f64> {
        self.levels
            .iter()
            .position(|l| l == name)
            .map(|i| self.bandwidth_gbs[i])
    }

    /// Eq. 6.2 for this machine and an application's mix: (weighted peak, clamped).
    pub fn weighted_peak(&self, app: &AppMetrics) -> (f64, bool) {
        if let (Some(rate), Some(fpi)) = (self.instruction_rate(), app.flops_per_instruction()) {
            let w = rate * fpi;
            return (
                w.min(self.peak_gflops),
                w > self.peak_gflops * (1.0 + 1e-12),
            );
        }
        match app.flops_per_instruction() {
            Some(fpi) => weighted_peak(
                self.peak_gflops,
                self.vector_bits,
                self.precision.bits(),
                fpi,
            ),
            // No FP instruction: no compute ceiling is binding; keep the raw peak.
            None => (self.peak_gflops, false),
        }
    }
}

fn note_derivation(notes: &mut Vec<String>, id: &str, what: &str, how: Derivation) {
    match how {
        Derivation::Given => {}
        Derivation::NodeShare => notes.push(format!(
            "{id}: {what} is the node value divided by the core count (eq. 7.1)"
        )),
        Derivation::CoreAsShare => notes.push(format!(
            "{id}: {what} has no node value; the single-core value stands in for the per-core share (optimistic)"
        )),
    }
}

/// Checks that the machine levels appear in the application's level list, in the same
/// order; returns their indices in the application's list.
pub fn match_levels(c: &Ceilings, app: &AppMetrics, app_origin: &str) -> Result<Vec<usize>> {
    let mut idx = Vec::new();
    let missing: Vec<&String> = c
        .levels
        .iter()
        .filter(|l| !app.levels.contains(l))
        .collect();
    if !missing.is_empty() {
        return Err(Error::mismatch(
            format!(
                "{app_origin} has no bytes for level(s) {} of machine '{}' (profile levels: {}; machine levels: {})",
                missing
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                c.machine,
                app.levels.join(", "),
                c.levels.join(", ")
            ),
            format!(
                "produce the profile for this machine's caches (hpcscope mix --machine {}), or rename the profile's levels to the machine's",
                c.machine
            ),
        ));
    }
    for l in &c.levels {
        idx.push(
            app.levels
                .iter()
                .position(|x| x == l)
                .expect("checked above"),
        );
    }
    if idx.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Error::mismatch(
            format!(
                "{app_origin} orders its levels ({}) differently from machine '{}' ({})",
                app.levels.join(", "),
                c.machine,
                c.levels.join(", ")
            ),
            "order the profile's levels from the core outwards, as in the machine file",
        ));
    }
    Ok(idx)
}

/// One row of a roofline analysis: one memory level.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelRow {
    /// Level name.
    pub level: String,
    /// Bandwidth, GB/s.
    pub bandwidth_gbs: f64,
    /// Bytes served by this level.
    pub bytes: f64,
    /// Cumulative OI of this level (eq. 6.3), FLOP/byte (`null` in JSON when infinite).
    #[serde(serialize_with = "ser_f64_inf")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<f64>"))]
    pub oi: f64,
    /// Ridge OI of this level against the weighted peak.
    pub ridge_oi: f64,
    /// Attainable GFLOP/s on this level's roofline at this level's OI, weighted peak.
    pub attainable_gflops: f64,
    /// What bounds that point.
    pub bound: Bound,
}

/// A roofline analysis of one application on one machine.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RooflineAnalysis {
    /// The machine's ceilings.
    pub ceilings: Ceilings,
    /// FLOPs per FP instruction of the application.
    pub flops_per_instruction: Option<f64>,
    /// Largest possible FLOPs per FP instruction (2 x lanes).
    pub max_flops_per_instruction: f64,
    /// Eq. 6.2 weighted peak, GFLOP/s.
    pub weighted_peak_gflops: f64,
    /// Achieved GFLOP/s, when the profile has a time.
    pub achieved_gflops: Option<f64>,
    /// One row per level with a bandwidth.
    pub levels: Vec<LevelRow>,
    /// The level whose roofline is lowest at its OI: the binding ceiling.
    pub binding_level: String,
    /// Attainable GFLOP/s of the binding ceiling.
    pub binding_gflops: f64,
    /// What bounds the binding ceiling.
    pub binding_bound: Bound,
    /// Achieved / binding attainable, when the time is known.
    pub efficiency: Option<f64>,
    /// Remarks (derived values, clamping, levels without a roofline).
    pub notes: Vec<String>,
}

impl RooflineAnalysis {
    /// What sets the weighted peak when it is below the peak: the FP units at the binary's
    /// widths, the divider, or the loops' dependency chains.
    pub fn compute_limit_below_peak(&self) -> Option<ComputeLimit> {
        (self.weighted_peak_gflops < self.ceilings.peak_gflops * (1.0 - 1e-9))
            .then(|| self.ceilings.compute_limit())
            .flatten()
    }
}

/// Serializes infinite floats as `null` (JSON has no infinity).
pub(crate) fn ser_f64_inf<S: serde::Serializer>(
    v: &f64,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(*v)
    } else {
        s.serialize_none()
    }
}

/// Reads back what [`ser_f64_inf`] wrote: `null` is infinity.
pub(crate) fn de_f64_inf<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<f64, D::Error> {
    let v: Option<f64> = serde::Deserialize::deserialize(d)?;
    Ok(v.unwrap_or(f64::INFINITY))
}

/// A note when a region's thread count does not fit the ceilings' scope: several threads
/// summed against one core's ceilings (an efficiency above 100 % that means nothing), or
/// more threads than the machine has cores.
pub fn scope_note(threads: usize, cores: u32, scope: Scope) -> Option<String> {
    match scope {
        Scope::Core if threads > 1 => Some(format!(
            "the region has {threads} threads, summed and compared with the ceilings of one core: \
             use the node scope (--scope node) for a multithreaded region"
        )),
        Scope::Node if threads > cores as usize => Some(format!(
            "the region has {threads} threads, more than the {cores} cores of the machine: \
             the node ceilings assume one thread per core"
        )),
        _ => None,
    }
}

/// Places an application on a machine's cache-aware rooflines.
pub fn analyze(c: &Ceilings, app: &AppMetrics, app_origin: &str) -> Result<RooflineAnalysis> {
    let idx = match_levels(c, app, app_origin)?;
    let mut notes = c.notes.clone();
    let (wpeak, clamped) = c.weighted_peak(app);
    let max_fpi = max_flops_per_instruction(c.vector_bits, c.precision.bits());
    if clamped {
        notes.push(format!(
            "FLOPs per FP instruction ({:.3}) exceed 2 x lanes = {max_fpi} of a {}-bit machine: the binary uses wider vectors than the machine declares; clamped",
            app.flops_per_instruction().unwrap_or(0.0),
            c.vector_bits
        ));
    }
    if app.fp_instructions == 0.0 {
        notes.push("no FP instruction: the weighted peak is the raw peak".into());
    }
    for l in &app.levels {
        if !c.levels.contains(l) {
            notes.push(format!(
                "level {l} has no bandwidth on machine '{}': its bytes count in the OIs of the levels above it",
                c.machine
            ));
        }
    }
    let ois = cumulative_oi(app.flops, &app.bytes);
    let levels: Vec<LevelRow> = c
        .levels
        .iter()
        .zip(&c.bandwidth_gbs)
        .zip(&idx)
        .map(|((name, &bw), &i)| LevelRow {
            level: name.clone(),
            bandwidth_gbs: bw,
            bytes: app.bytes[i],
            oi: ois[i],
            ridge_oi: ridge(wpeak, bw),
            attainable_gflops: attainable(bw, wpeak, ois[i]),
            bound: Bound::at(bw, wpeak, ois[i]),
        })
        .collect();
    let binding = levels
        .iter()
        .min_by(|a, b| a.attainable_gflops.total_cmp(&b.attainable_gflops))
        .expect("a validated machine has a memory level with a bandwidth");
    let achieved = app.gflops();
    if app.flops == 0.0 {
        notes.push(
            "no FLOPs: the operational intensities are 0 and there is no roofline efficiency"
                .into(),
        );
    }
    Ok(RooflineAnalysis {
        flops_per_instruction: app.flops_per_instruction(),
        max_flops_per_instruction: max_fpi,
        weighted_peak_gflops: wpeak,
        achieved_gflops: achieved,
        binding_level: binding.level.clone(),
        binding_gflops: binding.attainable_gflops,
        binding_bound: binding.bound,
        // No FLOPs: no ceiling is reached or missed; no efficiency (never 0/0).
        efficiency: achieved
            .map(|a| a / binding.attainable_gflops)
            .filter(|e| e.is_finite()),
        levels,
        ceilings: c.clone(),
        notes,
    })
}
