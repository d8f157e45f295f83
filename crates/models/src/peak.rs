//! Theoretical single-core performance of a kernel from its dependency graph, as habakkuk
//! reports it (Wang 2023, seed 004, section 3.1.3 and figures 3.4/3.5; research note
//! section 2.5.4):
//!
//! * whole DAG in serial: `FLOP/cycle = FLOPs / sum(cost)`;
//! * critical path: `FLOPs / (longest latency path)`, an upper bound with unlimited ILP;
//! * computed schedule: a greedy list schedule onto ports, critical-path nodes first, each
//!   step costing its most expensive op;
//! * perfect schedule: `FLOPs / max_port sum(cost of ops on the port)`;
//! * GFLOP/s = FLOP/cycle x GHz; GB/s = (cache-line references x 8 B) / cycles x GHz.
//!
//! Kernels are written in a tiny assignment language, one statement a line:
//! `x0 = a0 + a2 * (b - c)`; names never assigned are array references (one distinct
//! cache line each), assigned names are variables.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{ModelError, Result};

/// Cost of one operator.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OpCost {
    /// Issue cost in cycles (port occupancy).
    pub cost: f64,
    /// Latency in cycles (the critical path's weight).
    pub latency: f64,
    /// Execution port.
    pub port: usize,
    /// FLOPs per operation.
    pub flops: f64,
}

/// A CPU description for DAG analysis.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DagConfig {
    /// Costs of `+`, `-`, `*`, `/`.
    pub ops: BTreeMap<String, OpCost>,
    /// Number of execution ports.
    pub ports: usize,
    /// Bytes per cache-line reference (habakkuk's naive model counts 8).
    pub bytes_per_ref: f64,
    /// Example clock, GHz.
    pub clock_ghz: f64,
}

impl DagConfig {
    /// habakkuk's Ivy Bridge defaults: `+`/`-` cost 1 on port 1, `*` 1 on port 0, `/` cost 8
    /// (latency 15) on port 0; 6 ports; 3.85 GHz.
    pub fn habakkuk_ivybridge() -> DagConfig {
        let op = |cost, latency, port| OpCost {
            cost,
            latency,
            port,
            flops: 1.0,
        };
        DagConfig {
            ops: [
                ("+".to_string(), op(1.0, 1.0, 1)),
                ("-".to_string(), op(1.0, 1.0, 1)),
                ("*".to_string(), op(1.0, 1.0, 0)),
                ("/".to_string(), op(8.0, 15.0, 0)),
            ]
            .into_iter()
            .collect(),
            ports: 6,
            bytes_per_ref: 8.0,
            clock_ghz: 3.85,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Ref,
    Var,
    Op(char),
}

#[derive(Debug, Clone, PartialEq)]
struct Node {
    kind: Kind,
    deps: Vec<usize>,
}

/// A kernel's data-flow graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Dag {
    nodes: Vec<Node>,
}

/// One estimate: cycles, FLOP/cycle, bytes/cycle, GFLOP/s and GB/s at the clock.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// Cycles of the kernel.
    pub cycles: f64,
    /// FLOPs per cycle.
    pub flops_per_cycle: f64,
    /// Bytes per cycle.
    pub bytes_per_cycle: f64,
    /// GFLOP/s at the configured clock.
    pub gflops: f64,
    /// GB/s at the configured clock.
    pub gbs: f64,
}

/// The habakkuk-style report of a DAG.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DagReport {
    /// Count of each operator.
    pub op_counts: BTreeMap<String, usize>,
    /// Total FLOPs.
    pub flops: f64,
    /// Array references (each distinct name once).
    pub array_refs: usize,
    /// Distinct cache-line references.
    pub cache_lines: usize,
    /// `FLOPs / (cache lines x bytes_per_ref)`.
    pub naive_flops_per_byte: f64,
    /// Nodes on the critical path (references, operations and variables).
    pub critical_path_nodes: usize,
    /// FLOPs on the critical path.
    pub critical_path_flops: f64,
    /// No ILP: every node in turn.
    pub serial: Estimate,
    /// Greedy list schedule on the ports.
    pub schedule: Estimate,
    /// Perfect overlap of the ports.
    pub perfect: Estimate,
    /// Everything in parallel to the critical path.
    pub critical_path: Estimate,
    /// Clock used, GHz.
    pub clock_ghz: f64,
}

impl Dag {
    /// Parses the assignment language (see the module docs); `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Dag> {
        let mut nodes: Vec<Node> = Vec::new();
        let mut names: BTreeMap<String, usize> = BTreeMap::new();
        for (ln, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let err = |col: usize, m: &str| ModelError::Parse {
                origin: origin.to_string(),
                message: format!("line {}, column {}: {m}", ln + 1, col + 1),
            };
            let Some(eq) = line.find('=') else {
                return Err(err(0, "expected 'name = expression'"));
            };
            let lhs = line[..eq].trim();
            if lhs.is_empty()
                || !lhs
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '[' || c == ']')
            {
                return Err(err(0, "the left side must be a name"));
            }
            let toks =
                tokenize(&line[eq + 1..]).map_err(|c| err(eq + 1 + c, "unexpected character"))?;
            let mut pos = 0;
            let root =
                expr(&toks, &mut pos, &mut nodes, &mut names).map_err(|m| err(eq + 1, &m))?;
            if pos != toks.len() {
                return Err(err(eq + 1, "unexpected text after the expression"));
            }
            nodes.push(Node {
                kind: Kind::Var,
                deps: vec![root],
            });
            names.insert(lhs.to_string(), nodes.len() - 1);
        }
        if nodes.is_empty() {
            return Err(ModelError::Parse {
                origin: origin.into(),
                message: "no statements".into(),
            });
        }
        Ok(Dag { nodes })
    }

    /// Analyses the DAG with a CPU description.
    pub fn analyze(&self, cfg: &DagConfig) -> Result<DagReport> {
        let mut op_counts = BTreeMap::new();
        let mut flops = 0.0;
        let mut refs = 0;
        let cost = |n: &Node| -> Result<Option<OpCost>> {
            match n.kind {
                Kind::Op(c) => cfg
                    .ops
                    .get(&c.to_string())
                    .copied()
                    .map(Some)
                    .ok_or_else(|| {
                        ModelError::Invalid(format!(
                            "operator '{c}' has no cost in the configuration"
                        ))
                    }),
                _ => Ok(None),
            }
        };
        let mut port_load = vec![0.0; cfg.ports.max(1)];
        let mut serial = 0.0;
        for n in &self.nodes {
            match n.kind {
                Kind::Ref => refs += 1,
                Kind::Op(c) => {
                    *op_counts.entry(c.to_string()).or_insert(0) += 1;
                    let oc = cost(n)?.unwrap_or(OpCost {
                        cost: 0.0,
                        latency: 0.0,
                        port: 0,
                        flops: 0.0,
                    });
                    flops += oc.flops;
                    serial += oc.cost;
                    if oc.port >= port_load.len() {
                        return Err(ModelError::Invalid(format!(
                            "operator '{c}' uses port {} of {}",
                            oc.port, cfg.ports
                        )));
                    }
                    port_load[oc.port] += oc.cost;
                }
                Kind::Var => {}
            }
        }
        // Longest path (latency) ending at each node, with its node and FLOP counts.
        let n = self.nodes.len();
        let mut dist = vec![0.0f64; n];
        let mut cnt = vec![0usize; n];
        let mut fl = vec![0.0; n];
        for i in 0..n {
            let (lat, f) = match cost(&self.nodes[i])? {
                Some(oc) => (oc.latency, oc.flops),
                None => (0.0, 0.0),
            };
            let best = self.nodes[i]
                .deps
                .iter()
                .copied()
                .max_by(|&a, &b| dist[a].total_cmp(&dist[b]).then(cnt[a].cmp(&cnt[b])));
            let (d0, c0, f0) = best
                .map(|b| (dist[b], cnt[b], fl[b]))
                .unwrap_or((0.0, 0, 0.0));
            dist[i] = d0 + lat;
            cnt[i] = c0 + 1;
            fl[i] = f0 + f;
        }
        let end = (0..n)
            .max_by(|&a, &b| dist[a].total_cmp(&dist[b]).then(cnt[a].cmp(&cnt[b])))
            .unwrap_or(0);
        let cp = dist[end];
        // Priority of each node: the longest latency path from it to a sink.
        let mut to_sink = vec![0.0f64; n];
        for i in (0..n).rev() {
            let lat = cost(&self.nodes[i])?.map(|c| c.latency).unwrap_or(0.0);
            to_sink[i] = to_sink[i].max(lat);
            for &d in &self.nodes[i].deps {
                to_sink[d] = to_sink[d]
                    .max(to_sink[i] + cost(&self.nodes[d])?.map(|c| c.latency).unwrap_or(0.0));
            }
        }
        let sched = self.list_schedule(cfg, &to_sink)?;
        let perfect = port_load.iter().copied().fold(0.0, f64::max);
        let bytes = refs as f64 * cfg.bytes_per_ref;
        let est = |cycles: f64| Estimate {
            cycles,
            flops_per_cycle: if cycles > 0.0 {
                flops / cycles
            } else {
                f64::INFINITY
            },
            bytes_per_cycle: if cycles > 0.0 {
                bytes / cycles
            } else {
                f64::INFINITY
            },
            gflops: if cycles > 0.0 {
                flops / cycles * cfg.clock_ghz
            } else {
                f64::INFINITY
            },
            gbs: if cycles > 0.0 {
                bytes / cycles * cfg.clock_ghz
            } else {
                f64::INFINITY
            },
        };
        Ok(DagReport {
            op_counts,
            flops,
            array_refs: refs,
            cache_lines: refs,
            naive_flops_per_byte: if bytes > 0.0 {
                flops / bytes
            } else {
                f64::INFINITY
            },
            critical_path_nodes: cnt[end],
            critical_path_flops: fl[end],
            serial: est(serial),
            schedule: est(sched),
            perfect: est(perfect),
            critical_path: est(cp),
            clock_ghz: cfg.clock_ghz,
        })
    }

    /// Greedy list schedule: each step issues, on every port, the ready operation with the
    /// longest path to a sink; a step costs its most expensive operation.
    fn list_schedule(&self, cfg: &DagConfig, prio: &[f64]) -> Result<f64> {
        let n = self.nodes.len();
        let mut done = vec![false; n];
        // References and variables cost nothing and complete as soon as their inputs have.
        let settle = |done: &mut Vec<bool>| loop {
            let mut changed = false;
            for i in 0..n {
                if !done[i]
                    && !matches!(self.nodes[i].kind, Kind::Op(_))
                    && self.nodes[i].deps.iter().all(|&d| done[d])
                {
                    done[i] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        };
        settle(&mut done);
        let mut total = 0.0;
        while done.iter().any(|d| !d) {
            let mut step: Vec<Option<usize>> = vec![None; cfg.ports.max(1)];
            for i in 0..n {
                if done[i] || !self.nodes[i].deps.iter().all(|&d| done[d]) {
                    continue;
                }
                if let Kind::Op(c) = self.nodes[i].kind {
                    let oc = cfg.ops.get(&c.to_string()).copied().ok_or_else(|| {
                        ModelError::Invalid(format!(
                            "operator '{c}' has no cost in the configuration"
                        ))
                    })?;
                    let slot = &mut step[oc.port.min(cfg.ports.max(1) - 1)];
                    if slot.is_none_or(|j| prio[i] > prio[j]) {
                        *slot = Some(i);
                    }
                }
            }
            let issued: Vec<usize> = step.iter().flatten().copied().collect();
            if issued.is_empty() {
                break;
            }
            let mut c = 0.0f64;
            for &i in &issued {
                if let Kind::Op(o) = self.nodes[i].kind {
                    c = c.max(cfg.ops[&o.to_string()].cost);
                }
                done[i] = true;
            }
            total += c;
            settle(&mut done);
        }
        Ok(total)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Name(String),
    Op(char),
    Open,
    Close,
}

fn tokenize(s: &str) -> std::result::Result<Vec<Tok>, usize> {
    let mut out = Vec::new();
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if "+-*/".contains(c) {
            out.push(Tok::Op(c));
            i += 1;
        } else if c == '(' {
            out.push(Tok::Open);
            i += 1;
        } else if c == ')' {
            out.push(Tok::Close);
            i += 1;
        } else if c.is_alphanumeric() || c == '_' || c == '[' || c == '.' {
            let st = i;
            let mut depth = 0;
            while i < cs.len()
                && (cs[i].is_alphanumeric()
                    || "_.[]".contains(cs[i])
                    || (depth > 0 && cs[i] != ']'))
            {
                if cs[i] == '[' {
                    depth += 1;
                } else if cs[i] == ']' {
                    depth -= 1;
                }
                i += 1;
            }
            out.push(Tok::Name(cs[st..i].iter().collect()));
        } else {
            return Err(i);
        }
    }
    Ok(out)
}

type Names = BTreeMap<String, usize>;

fn expr(
    t: &[Tok],
    pos: &mut usize,
    nodes: &mut Vec<Node>,
    names: &mut Names,
) -> std::result::Result<usize, String> {
    let mut lhs = term(t, pos, nodes, names)?;
    while let Some(Tok::Op(c @ ('+' | '-'))) = t.get(*pos) {
        let c = *c;
        *pos += 1;
        let rhs = term(t, pos, nodes, names)?;
        nodes.push(Node {
            kind: Kind::Op(c),
            deps: vec![lhs, rhs],
        });
        lhs = nodes.len() - 1;
    }
    Ok(lhs)
}

fn term(
    t: &[Tok],
    pos: &mut usize,
    nodes: &mut Vec<Node>,
    names: &mut Names,
) -> std::result::Result<usize, String> {
    let mut lhs = atom(t, pos, nodes, names)?;
    while let Some(Tok::Op(c @ ('*' | '/'))) = t.get(*pos) {
        let c = *c;
        *pos += 1;
        let rhs = atom(t, pos, nodes, names)?;
        nodes.push(Node {
            kind: Kind::Op(c),
            deps: vec![lhs, rhs],
        });
        lhs = nodes.len() - 1;
    }
    Ok(lhs)
}

fn atom(
    t: &[Tok],
    pos: &mut usize,
    nodes: &mut Vec<Node>,
    names: &mut Names,
) -> std::result::Result<usize, String> {
    match t.get(*pos) {
        Some(Tok::Name(n)) => {
            *pos += 1;
            if n.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                // A literal constant: no node of its own, folded into a reference-less leaf.
                nodes.push(Node {
                    kind: Kind::Var,
                    deps: vec![],
                });
                return Ok(nodes.len() - 1);
            }
            if let Some(&i) = names.get(n) {
                return Ok(i);
            }
            nodes.push(Node {
                kind: Kind::Ref,
                deps: vec![],
            });
            names.insert(n.clone(), nodes.len() - 1);
            Ok(nodes.len() - 1)
        }
        Some(Tok::Open) => {
            *pos += 1;
            let e = expr(t, pos, nodes, names)?;
            if t.get(*pos) != Some(&Tok::Close) {
                return Err("missing ')'".into());
            }
            *pos += 1;
            Ok(e)
        }
        _ => Err("expected a name, a number or '('".into()),
    }
}

/// Peak of a classified loop from its busiest port and its loop-carried critical path.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LoopPeak {
    /// FLOPs per loop iteration (from the disassembly).
    pub flops_per_iter: f64,
    /// Busiest port's cycles per iteration (eq. 5.8 with the given CPIs).
    pub port_cycles: f64,
    /// Loop-carried critical path, cycles per iteration.
    pub critical_path_cycles: f64,
    /// FLOPs per cycle bounded by the busiest port.
    pub flops_per_cycle_ports: f64,
    /// FLOPs per cycle bounded by the critical path.
    pub flops_per_cycle_cp: f64,
    /// The lower (binding) of the two.
    pub flops_per_cycle: f64,
    /// GFLOP/s at the clock.
    pub gflops: f64,
}

/// Combines the port bound and the critical-path bound of a loop at a clock (GHz).
pub fn loop_peak(
    flops_per_iter: f64,
    port_cycles: f64,
    critical_path_cycles: f64,
    clock_ghz: f64,
) -> LoopPeak {
    let a = if port_cycles > 0.0 {
        flops_per_iter / port_cycles
    } else {
        f64::INFINITY
    };
    let b = if critical_path_cycles > 0.0 {
        flops_per_iter / critical_path_cycles
    } else {
        f64::INFINITY
    };
    let m = a.min(b);
    LoopPeak {
        flops_per_iter,
        port_cycles,
        critical_path_cycles,
        flops_per_cycle_ports: a,
        flops_per_cycle_cp: b,
        flops_per_cycle: m,
        gflops: m * clock_ghz,
    }
}
