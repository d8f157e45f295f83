//! `mix`'s tables: the summary (one row per vector length and machine) and the threads of
//! the first machine's profile, for `hpcscope_report`'s renderers.

use hpcscope_report::Table;
use hpcscope_report::fmt::num;

use hpcscope_core::Profile;
use hpcscope_core::profile::AppMetrics;

use crate::MixReport;

/// The summary table.
pub fn summary(r: &MixReport) -> hpcscope_core::Result<Table> {
    let mut t = Table::new(&[
        "vector",
        "machine",
        "FLOPs",
        "FP instr",
        "FLOPs/FP instr",
        "bytes",
        "bytes per level",
        "OI L1",
    ]);
    for v in &r.variants {
        for p in &v.profiles {
            // All threads: mix writes bytes per level for each.
            let th = all_threads(p)?;
            let total: f64 = th.bytes.iter().sum();
            let bpl = th
                .levels
                .iter()
                .zip(&th.bytes)
                .map(|(level, bytes)| {
                    format!(
                        "{level} {:.1}%",
                        if total > 0.0 {
                            100.0 * bytes / total
                        } else {
                            0.0
                        }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            t.row(vec![
                v.sve_bits
                    .map(|b| format!("SVE {b}"))
                    .unwrap_or_else(|| format!("{} bits", p.vector_bits)),
                p.machine.clone().unwrap_or_default(),
                num(th.flops, 4),
                num(th.fp_instructions, 4),
                if th.fp_instructions > 0.0 {
                    num(th.flops / th.fp_instructions, 4)
                } else {
                    "-".into()
                },
                num(total, 4),
                bpl,
                if total > 0.0 {
                    num(th.flops / total, 4)
                } else {
                    "-".into()
                },
            ]);
        }
    }
    Ok(t)
}

/// The threads of a profile's first region as one ([`Region::aggregate`]: counts and
/// bytes per level summed, the slowest thread's time).
///
/// [`Region::aggregate`]: hpcscope_core::profile::Region::aggregate
pub fn all_threads(p: &Profile) -> hpcscope_core::Result<AppMetrics> {
    p.regions[0].aggregate("the profile of mix")
}

/// One row per thread of the first machine's profile: counts and bytes per level.
pub fn thread_table(r: &MixReport) -> Option<Table> {
    let v = r.variants.first()?;
    let p = v.profiles.first()?;
    let ths = &p.regions[0].threads;
    if ths.len() < 2 {
        return None;
    }
    let levels: Vec<String> = ths[0]
        .memory
        .bytes_per_level
        .iter()
        .flatten()
        .map(|l| format!("bytes {}", l.level))
        .collect();
    let mut head = vec![
        "thread".to_string(),
        "core".into(),
        "FLOPs".into(),
        "FP instr".into(),
        "time (s)".into(),
    ];
    head.extend(levels);
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut t = Table::new(&head);
    for th in ths {
        let core = v
            .thread_caches
            .first()
            .and_then(|c| c.iter().find(|x| x.thread == th.thread))
            .map_or("-".to_string(), |x| x.core.to_string());
        let mut row = vec![
            th.thread.to_string(),
            core,
            num(th.flops, 4),
            num(th.fp_instructions, 4),
            th.time_s.map_or("-".into(), |x| num(x, 4)),
        ];
        row.extend(
            th.memory
                .bytes_per_level
                .iter()
                .flatten()
                .map(|l| num(l.bytes, 4)),
        );
        t.row(row);
    }
    Some(t)
}
