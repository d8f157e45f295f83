//! The split of a run's loads and stores by access width, for the rooflines that take each
//! level's bandwidth at the binary's own widths.

use hpcscope_core::roofline::{AccessWidths, ChainCounts};

use crate::engine::Totals;

/// Width in bits of an `fp_by_width` key (`f64_256`; scalar code at its element size).
fn key_bits(k: &str) -> u32 {
    let (p, wd) = k.split_once('_').unwrap_or((k, "scalar"));
    let elem = match p {
        "f16" => 16,
        "f32" => 32,
        _ => 64,
    };
    if wd == "scalar" {
        elem
    } else {
        wd.parse::<u32>().unwrap_or(elem)
    }
}

/// FP instructions per width in bits (scalar code at its element size), from
/// `fp_by_width`.
pub fn fp_instruction_widths(t: &Totals) -> Vec<(u32, f64)> {
    t.fp_by_width
        .iter()
        .map(|(k, w)| (key_bits(k), w.instructions as f64))
        .collect()
}

/// FP divides and square roots per width in bits (as [`fp_instruction_widths`]): (width,
/// divides, square roots), the widths with either.
pub fn divider_widths(t: &Totals) -> Vec<(u32, f64, f64)> {
    t.fp_by_width
        .iter()
        .filter(|(_, w)| w.div + w.sqrt > 0)
        .map(|(k, w)| (key_bits(k), w.div as f64, w.sqrt as f64))
        .collect()
}

/// The loops' dependency chains per width in bits (as [`fp_instruction_widths`]), from
/// `fp_by_width`'s `chain` and `chain_other` (the native engine counts them).
pub fn chain_counts(t: &Totals) -> ChainCounts {
    ChainCounts {
        fp: t
            .fp_by_width
            .iter()
            .filter(|(_, w)| !w.chain.is_empty())
            .map(|(k, w)| {
                let c = &w.chain;
                (
                    key_bits(k),
                    [c.add, c.mul, c.fma, c.div, c.sqrt].map(|v| v as f64),
                )
            })
            .collect(),
        other: t.chain_other as f64,
    }
}

/// The bytes' split by access width from `mem_by_width` (and the FP instructions' from
/// `fp_by_width`). `None` when the plugin did not count loads and stores by width (output
/// of a plugin before `mem_by_width`) or no byte had a width known from the encoding.
///
/// Bytes counted from QEMU's access reports (`rep` string instructions, gathers, masked
/// stores, `xsave`) and accesses of sizes outside the buckets (`other`) have no width:
/// the split covers the other bytes, and its `from` says how much was left out.
pub fn access_widths(t: &Totals) -> Option<AccessWidths> {
    let mut bytes = Vec::new();
    let mut other = 0u64;
    for (k, m) in &t.mem_by_width {
        let b = m.bytes_loaded + m.bytes_stored;
        match k.parse::<u32>() {
            Ok(bits) => bytes.push((bits, b as f64)),
            Err(_) => other += b,
        }
    }
    let split: f64 = bytes.iter().map(|x| x.1).sum();
    if split <= 0.0 {
        return None;
    }
    let total = (t.bytes_loaded + t.bytes_stored) as f64;
    let left = t.bytes_dynamic as f64 + other as f64;
    let mut from = "loads and stores by access width, counted by mix".to_string();
    if left > 0.0 && total > 0.0 {
        from.push_str(&format!(
            " ({:.1} % of the bytes, of string instructions, gathers or odd sizes, have no width and take the others' split)",
            100.0 * left / total
        ));
    }
    let fp = fp_instruction_widths(t);
    let all: f64 = fp.iter().map(|x| x.1).sum();
    AccessWidths::from_bytes(&bytes, &fp, from).map(|w| {
        w.with_divider(&divider_widths(t), all)
            .with_chains(&chain_counts(t), all)
    })
}

/// `256-bit 99.4 % (300 loads, 100 stores), 64-bit 0.6 % (10 loads); 1000 bytes counted
/// from access reports have no width`, widest first; `None` without `mem_by_width`.
pub fn describe(t: &Totals) -> Option<String> {
    let total = (t.bytes_loaded + t.bytes_stored) as f64;
    if t.mem_by_width.is_empty() || total <= 0.0 {
        return None;
    }
    let mut rows: Vec<(u32, &str, &crate::engine::MemWidthCounts)> = t
        .mem_by_width
        .iter()
        .map(|(k, m)| (k.parse::<u32>().unwrap_or(0), k.as_str(), m))
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut parts = Vec::new();
    for (bits, key, m) in rows {
        let name = if bits > 0 {
            format!("{bits}-bit")
        } else {
            format!("{key} sizes")
        };
        let mut what = Vec::new();
        if m.loads > 0 {
            what.push(format!("{} loads", m.loads));
        }
        if m.stores > 0 {
            what.push(format!("{} stores", m.stores));
        }
        parts.push(format!(
            "{name} {:.1} % ({})",
            100.0 * (m.bytes_loaded + m.bytes_stored) as f64 / total,
            what.join(", ")
        ));
    }
    let mut s = parts.join(", ");
    if t.bytes_dynamic > 0 {
        s.push_str(&format!(
            "; {} bytes ({:.1} %) counted from access reports (string instructions, gathers) have no width",
            t.bytes_dynamic,
            100.0 * t.bytes_dynamic as f64 / total
        ));
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{MemWidthCounts, WidthCounts};

    fn totals() -> Totals {
        let mut t = Totals {
            bytes_loaded: 3 * 32 * 100 + 8 * 10,
            bytes_stored: 32 * 100 + 1000,
            bytes_dynamic: 1000,
            ..Totals::default()
        };
        t.mem_by_width.insert(
            "256".into(),
            MemWidthCounts {
                loads: 300,
                bytes_loaded: 9600,
                stores: 100,
                bytes_stored: 3200,
            },
        );
        t.mem_by_width.insert(
            "64".into(),
            MemWidthCounts {
                loads: 10,
                bytes_loaded: 80,
                ..MemWidthCounts::default()
            },
        );
        t.fp_by_width.insert(
            "f64_256".into(),
            WidthCounts {
                instructions: 100,
                flops: 800,
                ..WidthCounts::default()
            },
        );
        t
    }

    #[test]
    fn bytes_split_by_their_own_width() {
        let w = access_widths(&totals()).expect("a split");
        assert_eq!(w.parts.len(), 2);
        assert_eq!(w.parts[0].vector_bits, 64);
        assert!((w.parts[0].fraction - 80.0 / 12880.0).abs() < 1e-12);
        assert_eq!(w.parts[0].instructions, 0.0);
        assert_eq!(w.parts[1].vector_bits, 256);
        assert!((w.parts[1].fraction - 12800.0 / 12880.0).abs() < 1e-12);
        assert_eq!(w.parts[1].instructions, 1.0);
        assert!(w.from.contains("7.2 % of the bytes"), "{}", w.from);
        assert!(w.problems().is_empty());
        let d = describe(&totals()).expect("a description");
        assert!(
            d.starts_with("256-bit 92.2 % (300 loads, 100 stores), 64-bit 0.6 % (10 loads); 1000 bytes (7.2 %)"),
            "{d}"
        );
    }

    #[test]
    fn old_plugin_output_has_no_split() {
        let mut t = totals();
        t.mem_by_width.clear();
        assert!(access_widths(&t).is_none());
    }
}
