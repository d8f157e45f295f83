//! The text views of machines: the list of built-in machines (`machine list`), one machine
//! (`machine show`) and the differences between two (`machine diff`).

use hpcscope_report::fmt::num;
use hpcscope_report::{Format, Table};

use crate::Precision;
use crate::explore::Transform;
use crate::kerncraft::Converted;
use crate::machine::{FieldDiff, Machine};

fn opt(v: Option<f64>, sig: usize) -> String {
    v.map(|x| num(x, sig)).unwrap_or_else(|| "-".into())
}

/// The machines in `format`: one row each, and how to show one.
pub fn list(format: Format, machines: &[Machine]) -> Result<String, serde_json::Error> {
    let mut t = Table::new(&[
        "id",
        "name",
        "isa",
        "simd",
        "bits",
        "cores",
        "f64 core GF/s",
        "f64 node GF/s",
        "levels",
    ]);
    for m in machines {
        let p = m.peak(Precision::F64);
        t.row(vec![
            m.id.clone(),
            m.name.clone(),
            m.isa.clone(),
            m.simd.clone(),
            m.vector_bits.to_string(),
            m.cores().to_string(),
            opt(p.and_then(|p| p.core_gflops), 4),
            opt(p.and_then(|p| p.node_gflops), 4),
            m.level_names().join(" "),
        ]);
    }
    hpcscope_report::render(
        format,
        &machines,
        &[],
        &t,
        &["Show one with: hpcscope machine show ID".into()],
    )
}

/// The levels of `m`: kind, bandwidths, cache geometry and provenance.
pub fn level_table(m: &Machine) -> Table {
    let mut t = Table::new(&[
        "level",
        "kind",
        "core GB/s",
        "node GB/s",
        "cache",
        "provenance",
    ]);
    for l in &m.levels {
        let cache = l
            .cache
            .as_ref()
            .map(|c| {
                format!(
                    "{} B, {}-way, {} B lines",
                    c.size_bytes, c.associativity, c.line_bytes
                )
            })
            .unwrap_or_else(|| "-".into());
        t.row(vec![
            l.name.clone(),
            format!("{:?}", l.kind).to_lowercase(),
            opt(l.core_gbs, 5),
            opt(l.node_gbs, 5),
            cache,
            l.provenance.clone(),
        ]);
    }
    t
}

/// `m` in `format`: its ISA, cores, peaks and ceilings, the level table, its network links
/// and notes.
pub fn show(format: Format, m: &Machine) -> Result<String, serde_json::Error> {
    let mut pre = vec![
        format!("{} ({})", m.name, m.id),
        format!(
            "{} {} {}-bit{}, {} socket(s) x {} cores{}",
            m.isa,
            m.simd,
            m.vector_bits,
            if m.fma { ", FMA" } else { "" },
            m.sockets,
            m.cores_per_socket,
            m.frequency_ghz
                .map(|f| format!(", {f} GHz"))
                .unwrap_or_default()
        ),
    ];
    for p in &m.peaks {
        pre.push(format!(
            "peak {}: core {} GFLOP/s, node {} GFLOP/s ({})",
            p.precision,
            opt(p.core_gflops, 5),
            opt(p.node_gflops, 5),
            p.provenance
        ));
        for c in &p.ceilings {
            pre.push(format!(
                "  ceiling {} {}-bit{}: core {} GFLOP/s, node {} GFLOP/s ({})",
                c.op,
                c.vector_bits,
                c.label
                    .as_ref()
                    .map(|l| format!(" '{l}'"))
                    .unwrap_or_default(),
                opt(c.core_gflops, 5),
                opt(c.node_gflops, 5),
                c.provenance
            ));
        }
    }
    pre.push(format!("provenance: {}", m.provenance));
    hpcscope_report::render(
        format,
        m,
        &pre,
        &level_table(m),
        &m.network
            .iter()
            .map(|l| {
                format!(
                    "network {} ({}): latency {} µs, bandwidth {} GB/s{} ({})",
                    l.name,
                    l.placement,
                    num(l.latency_us, 4),
                    num(l.bandwidth_gbs, 4),
                    l.n_half_bytes
                        .map(|n| format!(", n_1/2 {} B", num(n, 4)))
                        .unwrap_or_default(),
                    l.provenance
                )
            })
            .chain(m.notes.iter().map(|n| format!("note: {n}")))
            .collect::<Vec<_>>(),
    )
}

/// The differences `d` between machines `ma` and `mb` in `format`, with the ratio of each
/// numeric field.
pub fn diff(
    format: Format,
    ma: &Machine,
    mb: &Machine,
    d: &[FieldDiff],
) -> Result<String, serde_json::Error> {
    let mut t = Table::new(&["field", &ma.id, &mb.id, "ratio"]);
    for f in d {
        let ratio = match (f.a.parse::<f64>(), f.b.parse::<f64>()) {
            (Ok(x), Ok(y)) if x != 0.0 => format!("x{}", num(y / x, 3)),
            _ => String::new(),
        };
        t.row(vec![f.field.clone(), f.a.clone(), f.b.clone(), ratio]);
    }
    let pre = if d.is_empty() {
        vec!["the machines are identical in every compared field".to_string()]
    } else {
        vec![]
    };
    hpcscope_report::render(format, &d, &pre, &t, &[])
}

/// A machine derived from `base` by `transforms` as TOML, headed by what it was derived from
/// (`machine derive`).
pub fn derived_toml(base: &str, transforms: &[Transform], m: &Machine) -> String {
    format!(
        "# Derived by `hpcscope machine derive` from '{}': {}\n{}",
        base,
        transforms
            .iter()
            .map(Transform::label)
            .collect::<Vec<_>>()
            .join(", "),
        m.to_toml_string()
    )
}

/// A machine imported from a Kerncraft file as TOML, headed by what did not map
/// (`machine import`).
pub fn imported_toml(c: &Converted<Machine>) -> String {
    let mut toml = String::from("# Imported by `hpcscope machine import`. Not mapped:\n");
    for u in &c.unmapped {
        toml.push_str(&format!("# - {u}\n"));
    }
    toml.push_str(&c.value.to_toml_string());
    toml
}

/// A machine exported in another tool's format, headed by what did not map
/// (`machine export`).
pub fn exported(c: &Converted<String>) -> String {
    let mut text = String::new();
    for u in &c.unmapped {
        text.push_str(&format!("# not mapped: {u}\n"));
    }
    text.push_str(&c.value);
    text
}
