//! Two machine descriptions compared field by field (`machine diff`).

use super::*;

/// A value of [`diff`]: the number, or `-`.
fn opt(v: Option<f64>) -> String {
    v.map(|v| format!("{v}")).unwrap_or_else(|| "-".into())
}

/// The peaks of precision `prec` of [`diff`]: core and node, per width, per compute ceiling.
fn diff_peak(
    a: &Machine,
    b: &Machine,
    prec: Precision,
    push: &mut impl FnMut(String, String, String),
) {
    let (pa, pb) = (a.peak(prec), b.peak(prec));
    push(
        format!("peak.{prec}.core_gflops"),
        opt(pa.and_then(|p| p.core_gflops)),
        opt(pb.and_then(|p| p.core_gflops)),
    );
    push(
        format!("peak.{prec}.node_gflops"),
        opt(pa.and_then(|p| p.node_gflops)),
        opt(pb.and_then(|p| p.node_gflops)),
    );
    // Per-width peaks, matched by width.
    let empty_w: &[WidthPeak] = &[];
    let (wa, wb) = (
        pa.map_or(empty_w, |p| &p.widths[..]),
        pb.map_or(empty_w, |p| &p.widths[..]),
    );
    for bits in union_sorted(
        wa.iter().map(|w| w.vector_bits),
        wb.iter().map(|w| w.vector_bits),
    ) {
        let (x, y) = (
            wa.iter().find(|w| w.vector_bits == bits),
            wb.iter().find(|w| w.vector_bits == bits),
        );
        for (f, get) in [
            (
                "core_gflops",
                (|w: &WidthPeak| w.core_gflops) as fn(&WidthPeak) -> Option<f64>,
            ),
            ("node_gflops", |w: &WidthPeak| w.node_gflops),
        ] {
            push(
                format!("peak.{prec}.widths.{bits}.{f}"),
                opt(x.and_then(get)),
                opt(y.and_then(get)),
            );
        }
    }
    // Compute ceilings, matched by (operation, width).
    let empty_c: &[ComputeCeiling] = &[];
    let (ca, cb) = (
        pa.map_or(empty_c, |p| &p.ceilings[..]),
        pb.map_or(empty_c, |p| &p.ceilings[..]),
    );
    let mut keys: Vec<(CeilingOp, u32)> = Vec::new();
    for c in ca.iter().chain(cb) {
        if !keys.contains(&(c.op, c.vector_bits)) {
            keys.push((c.op, c.vector_bits));
        }
    }
    keys.sort_by_key(|(op, bits)| (op.to_string(), *bits));
    for (op, bits) in keys {
        let find = |cs: &[ComputeCeiling]| {
            cs.iter()
                .find(|c| c.op == op && c.vector_bits == bits)
                .cloned()
        };
        let (x, y) = (find(ca), find(cb));
        push(
            format!("peak.{prec}.ceilings.{op}.{bits}.core_gflops"),
            opt(x.as_ref().and_then(|c| c.core_gflops)),
            opt(y.as_ref().and_then(|c| c.core_gflops)),
        );
        push(
            format!("peak.{prec}.ceilings.{op}.{bits}.node_gflops"),
            opt(x.as_ref().and_then(|c| c.node_gflops)),
            opt(y.as_ref().and_then(|c| c.node_gflops)),
        );
    }
}

/// Differences between two machines, field by field, for `hpcscope machine diff`.
pub fn diff(a: &Machine, b: &Machine) -> Vec<FieldDiff> {
    let mut out = Vec::new();
    let mut push = |field: String, x: String, y: String| {
        if x != y {
            out.push(FieldDiff { field, a: x, b: y });
        }
    };
    push("name".into(), a.name.clone(), b.name.clone());
    push("isa".into(), a.isa.clone(), b.isa.clone());
    push("simd".into(), a.simd.clone(), b.simd.clone());
    push(
        "vector_bits".into(),
        a.vector_bits.to_string(),
        b.vector_bits.to_string(),
    );
    push("fma".into(), a.fma.to_string(), b.fma.to_string());
    push("cores".into(), a.cores().to_string(), b.cores().to_string());
    push(
        "frequency_ghz".into(),
        opt(a.frequency_ghz),
        opt(b.frequency_ghz),
    );
    for prec in [Precision::F64, Precision::F32] {
        diff_peak(a, b, prec, &mut push);
    }
    let mut names: Vec<String> = a.level_names();
    for n in b.level_names() {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    for n in names {
        let (la, lb) = (a.level(&n), b.level(&n));
        push(
            format!("level.{n}.core_gbs"),
            opt(la.and_then(|l| l.core_gbs)),
            opt(lb.and_then(|l| l.core_gbs)),
        );
        push(
            format!("level.{n}.node_gbs"),
            opt(la.and_then(|l| l.node_gbs)),
            opt(lb.and_then(|l| l.node_gbs)),
        );
        let size = |l: Option<&Level>| {
            l.and_then(|l| l.cache.as_ref())
                .map(|c| c.size_bytes.to_string())
                .unwrap_or_else(|| "-".into())
        };
        push(format!("level.{n}.cache.size_bytes"), size(la), size(lb));
        let geom = |l: Option<&Level>, f: fn(&CacheGeometry) -> u32| {
            l.and_then(|l| l.cache.as_ref())
                .map(|c| f(c).to_string())
                .unwrap_or_else(|| "-".into())
        };
        push(
            format!("level.{n}.cache.associativity"),
            geom(la, |c| c.associativity),
            geom(lb, |c| c.associativity),
        );
        push(
            format!("level.{n}.cache.line_bytes"),
            geom(la, |c| c.line_bytes),
            geom(lb, |c| c.line_bytes),
        );
        // Per-width bandwidths, matched by width.
        let empty: &[WidthBandwidth] = &[];
        let (wa, wb) = (
            la.map_or(empty, |l| &l.widths[..]),
            lb.map_or(empty, |l| &l.widths[..]),
        );
        for bits in union_sorted(
            wa.iter().map(|w| w.vector_bits),
            wb.iter().map(|w| w.vector_bits),
        ) {
            let (x, y) = (
                wa.iter().find(|w| w.vector_bits == bits),
                wb.iter().find(|w| w.vector_bits == bits),
            );
            push(
                format!("level.{n}.widths.{bits}.core_gbs"),
                opt(x.and_then(|w| w.core_gbs)),
                opt(y.and_then(|w| w.core_gbs)),
            );
            push(
                format!("level.{n}.widths.{bits}.node_gbs"),
                opt(x.and_then(|w| w.node_gbs)),
                opt(y.and_then(|w| w.node_gbs)),
            );
        }
    }
    let mut links: Vec<String> = a.network.iter().map(|l| l.name.clone()).collect();
    for l in &b.network {
        if !links.contains(&l.name) {
            links.push(l.name.clone());
        }
    }
    for n in links {
        let (la, lb) = (a.network_link(&n), b.network_link(&n));
        push(
            format!("network.{n}.latency_us"),
            opt(la.map(|l| l.latency_us)),
            opt(lb.map(|l| l.latency_us)),
        );
        push(
            format!("network.{n}.bandwidth_gbs"),
            opt(la.map(|l| l.bandwidth_gbs)),
            opt(lb.map(|l| l.bandwidth_gbs)),
        );
    }
    out
}

/// The distinct values of `a` and `b`, ascending.
fn union_sorted(a: impl Iterator<Item = u32>, b: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut v: Vec<u32> = a.chain(b).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// One field that differs between two machines.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldDiff {
    /// Field path.
    pub field: String,
    /// Value in the first machine (`-` when absent).
    pub a: String,
    /// Value in the second machine (`-` when absent).
    pub b: String,
}
