//! The CSV inputs of `hpcscope model`, read into the models' types: the strong-scaling table
//! (eqs. 5.1, 5.2 and 5.12), measured runtimes (eq. 5.13), the BSP partition (eqs. 3.1 and
//! 3.2), point-to-point times for Hockney's model, and `NAME=VALUE` lists.
//!
//! Each reader takes the file's text and its origin (the file name, for errors) and gives
//! errors that name the file, line and column and say what the file needs.

use std::collections::{BTreeMap, BTreeSet};

use crate::csv::Csv;
use crate::error::{ModelError, Result};
use crate::pop::{Hockney, fit_hockney};
use crate::strong::{PartitionRow, ScalingInput, stall_cycles};

/// The scaling inputs of a CSV `threads,clock_ghz,iters,memory_s[,proxy_cycles|,stall_cycles]`.
///
/// Eq. 5.12: an optional `proxy_cycles` column (a low flop/byte proxy's cycles per iteration
/// at each thread count) gives `S_g,t = C_g,t - C_g`; a `stall_cycles` column gives `S_g,t`
/// directly.
pub fn scaling_table(text: &str, origin: &str) -> Result<Vec<ScalingInput>> {
    let c = Csv::parse(text, origin)?;
    let cols = ["threads", "clock_ghz", "iters", "memory_s"]
        .iter()
        .map(|n| c.require(n, "the table needs threads,clock_ghz,iters,memory_s"))
        .collect::<Result<Vec<_>>>()?;
    let proxy_col = c.column("proxy_cycles");
    let stall_col = c.column("stall_cycles");
    if proxy_col.is_some() && stall_col.is_some() {
        return Err(ModelError::Invalid(format!(
            "{origin}: give proxy_cycles or stall_cycles, not both"
        )));
    }
    let mut inputs = Vec::new();
    for r in 0..c.rows.len() {
        let th = c.number(r, cols[0])?;
        if th < 1.0 || th.fract() != 0.0 {
            return Err(c.error_at(
                r,
                cols[0],
                format!("threads must be a positive integer, got {th}"),
            ));
        }
        inputs.push(ScalingInput {
            threads: th as u32,
            clock_hz: c.number(r, cols[1])? * 1e9,
            iters: c.number(r, cols[2])?,
            memory_s: c.number(r, cols[3])?,
            stall_cycles: match stall_col {
                Some(k) => c.number(r, k)?,
                None => 0.0,
            },
        });
    }
    if let Some(k) = proxy_col {
        let proxy = (0..c.rows.len())
            .map(|r| Ok((inputs[r].threads, c.number(r, k)?)))
            .collect::<Result<Vec<_>>>()?;
        let s = stall_cycles(&proxy)
            .map_err(|e| ModelError::Invalid(format!("{origin}: proxy_cycles (eq. 5.12): {e}")))?;
        for i in &mut inputs {
            i.stall_cycles = s.iter().find(|x| x.0 == i.threads).map_or(0.0, |x| x.1);
        }
    }
    Ok(inputs)
}

/// Measured runtimes from a CSV `threads,seconds`: (threads, seconds) per row.
pub fn actual_table(text: &str, origin: &str) -> Result<Vec<(u32, f64)>> {
    let c = Csv::parse(text, origin)?;
    let th = c.require("threads", "the thread count of each measured run")?;
    let sec = c.require("seconds", "the measured runtime of each run, seconds")?;
    let mut out = Vec::new();
    for r in 0..c.rows.len() {
        let t = c.number(r, th)?;
        let v = c.number(r, sec)?;
        if t < 1.0 || t.fract() != 0.0 {
            return Err(c.error_at(
                r,
                th,
                format!("threads must be a positive integer, got {t}"),
            ));
        }
        if !(v.is_finite() && v > 0.0) {
            return Err(c.error_at(r, sec, format!("seconds must be positive, got {v}")));
        }
        out.push((t as u32, v));
    }
    Ok(out)
}

/// The partition of the BSP model from a CSV `[ranks,]level,rank,n_indep,n_dep[,actual_s]`:
/// the rows of each run, by rank count (ascending). Without a `ranks` column the file is one
/// run whose rank count is the number of distinct ranks.
pub fn partition(text: &str, origin: &str) -> Result<Vec<(u32, Vec<PartitionRow>)>> {
    let c = Csv::parse(text, origin)?;
    let need = "the partition needs [ranks,]level,rank,n_indep,n_dep[,actual_s]";
    let cols = ["level", "rank", "n_indep", "n_dep"]
        .iter()
        .map(|n| c.require(n, need))
        .collect::<Result<Vec<_>>>()?;
    let ranks_col = c.column("ranks");
    let actual_col = c.column("actual_s");
    let mut rows: BTreeMap<u32, Vec<PartitionRow>> = BTreeMap::new();
    for r in 0..c.rows.len() {
        let int = |k: usize, what: &str| -> Result<u32> {
            let v = c.number(r, k)?;
            if v < 0.0 || v.fract() != 0.0 || v > u32::MAX as f64 {
                return Err(c.error_at(
                    r,
                    k,
                    format!("{what} must be a non-negative integer, got {v}"),
                ));
            }
            Ok(v as u32)
        };
        let level = int(cols[0], "level")?;
        let rank = int(cols[1], "rank")?;
        let ranks = match ranks_col {
            Some(k) => int(k, "ranks")?,
            None => 0,
        };
        let actual_s = match actual_col {
            Some(k) if !c.text(r, k).trim().is_empty() => Some(c.number(r, k)?),
            _ => None,
        };
        rows.entry(ranks).or_default().push(PartitionRow {
            ranks,
            level,
            rank,
            n_independent: c.number(r, cols[2])?,
            n_dependent: c.number(r, cols[3])?,
            actual_s,
        });
    }
    Ok(rows
        .into_iter()
        .map(|(ranks, mut rs)| {
            // Without a ranks column, the rank count is the number of distinct ranks.
            let n = if ranks == 0 {
                let d: BTreeSet<u32> = rs.iter().map(|r| r.rank).collect();
                d.len() as u32
            } else {
                ranks
            };
            for r in &mut rs {
                r.ranks = n;
            }
            (n, rs)
        })
        .collect())
}

/// Hockney's model fitted to the `bytes` and `t_avg_us` columns of a CSV (rows of
/// `benchmark` when given, messages of `min_bytes` and more), and the rows used.
pub fn hockney_table(
    text: &str,
    origin: &str,
    benchmark: Option<&str>,
    min_bytes: f64,
) -> Result<(Hockney, usize)> {
    let c = Csv::parse(text, origin)?;
    let b = c.require("bytes", "the message size of each row, bytes")?;
    let t = c.require("t_avg_us", "the mean time of each row, microseconds")?;
    let bench = c.column("benchmark");
    if benchmark.is_some() && bench.is_none() {
        return Err(ModelError::Invalid(format!(
            "{origin}: no `benchmark` column to pick --benchmark's rows from"
        )));
    }
    let mut kinds = BTreeSet::new();
    let mut points = Vec::new();
    for r in 0..c.rows.len() {
        if let Some(k) = bench {
            let name = c.text(r, k).to_string();
            kinds.insert(name.clone());
            if benchmark.is_some_and(|w| !w.eq_ignore_ascii_case(&name)) {
                continue;
            }
        }
        let n = c.number(r, b)?;
        if n >= min_bytes {
            points.push((n, c.number(r, t)?));
        }
    }
    if benchmark.is_none() && kinds.len() > 1 {
        return Err(ModelError::Invalid(format!(
            "{origin} holds several benchmarks ({}); pick one with --benchmark",
            kinds.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    if points.len() < 2 {
        return Err(ModelError::Invalid(format!(
            "{origin}: {} row(s) of {} bytes or more; the fit needs two message sizes at least (lower --min-bytes?)",
            points.len(),
            min_bytes
        )));
    }
    let n = points.len();
    Ok((fit_hockney(&points)?, n))
}

/// `NAME=VALUE,...` as a map (empty parts are skipped; names and values are trimmed).
pub fn pairs(s: &str) -> Result<BTreeMap<String, f64>> {
    let mut m = BTreeMap::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| ModelError::Invalid(format!("'{part}' is not NAME=VALUE")))?;
        let v: f64 = v
            .trim()
            .parse()
            .map_err(|e| ModelError::Invalid(format!("'{v}' in '{part}' is not a number: {e}")))?;
        m.insert(k.trim().to_string(), v);
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_table_reads_stall_cycles_from_a_proxy_column() {
        let t =
            "threads,clock_ghz,iters,memory_s,proxy_cycles\n1,2.0,100,0.5,10\n2,2.0,100,0.6,12\n";
        let i = scaling_table(t, "s.csv").unwrap();
        assert_eq!(i.len(), 2);
        assert_eq!(i[0].clock_hz, 2e9);
        assert_eq!(i[0].stall_cycles, 0.0);
        assert_eq!(i[1].stall_cycles, 2.0);
    }

    #[test]
    fn scaling_table_refuses_both_stall_columns_and_fractional_threads() {
        let both = "threads,clock_ghz,iters,memory_s,proxy_cycles,stall_cycles\n1,2,1,1,1,1\n";
        assert_eq!(
            scaling_table(both, "s.csv").unwrap_err().to_string(),
            "s.csv: give proxy_cycles or stall_cycles, not both"
        );
        let frac = "threads,clock_ghz,iters,memory_s\n1.5,2,1,1\n";
        assert_eq!(
            scaling_table(frac, "s.csv").unwrap_err().to_string(),
            "s.csv:2:1: threads must be a positive integer, got 1.5"
        );
        let missing = scaling_table("threads\n1\n", "s.csv")
            .unwrap_err()
            .to_string();
        assert!(missing.contains("missing column 'clock_ghz'"), "{missing}");
    }

    #[test]
    fn actual_table_needs_positive_seconds_and_whole_threads() {
        assert_eq!(
            actual_table("threads,seconds\n1,2.5\n4,1\n", "a.csv").unwrap(),
            vec![(1, 2.5), (4, 1.0)]
        );
        assert_eq!(
            actual_table("threads,seconds\n1,0\n", "a.csv")
                .unwrap_err()
                .to_string(),
            "a.csv:2:2: seconds must be positive, got 0"
        );
        assert_eq!(
            actual_table("threads,seconds\n0,1\n", "a.csv")
                .unwrap_err()
                .to_string(),
            "a.csv:2:1: threads must be a positive integer, got 0"
        );
    }

    #[test]
    fn partition_groups_by_ranks_or_counts_distinct_ranks() {
        let one = "level,rank,n_indep,n_dep,actual_s\n0,0,10,2,1.5\n0,1,10,2,\n1,0,5,1,0.5\n";
        let p = partition(one, "p.csv").unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].0, 2);
        assert!(p[0].1.iter().all(|r| r.ranks == 2));
        assert_eq!(p[0].1[0].actual_s, Some(1.5));
        assert_eq!(p[0].1[1].actual_s, None);
        let many = "ranks,level,rank,n_indep,n_dep\n4,0,0,1,1\n2,0,0,1,1\n2,0,1,1,1\n";
        let p = partition(many, "p.csv").unwrap();
        assert_eq!(p.iter().map(|x| x.0).collect::<Vec<_>>(), vec![2, 4]);
        assert_eq!(p[0].1.len(), 2);
        assert_eq!(
            partition("level,rank,n_indep,n_dep\n-1,0,1,1\n", "p.csv")
                .unwrap_err()
                .to_string(),
            "p.csv:2:1: level must be a non-negative integer, got -1"
        );
    }

    #[test]
    fn hockney_table_fits_the_chosen_benchmark() {
        let t = "benchmark,bytes,t_avg_us\nsendrecv,1024,2\nsendrecv,2048,3\nsendrecv,4096,5\npingpong,1024,1\npingpong,2048,2\n";
        let (h, n) = hockney_table(t, "m.csv", Some("SendRecv"), 1024.0).unwrap();
        assert_eq!(n, 3);
        assert!((h.per_byte - 1.0 / 1024.0).abs() < 1e-9, "{h:?}");
        assert!((h.t0 - 1.0).abs() < 1e-9, "{h:?}");
        assert_eq!(
            hockney_table(t, "m.csv", None, 1024.0)
                .unwrap_err()
                .to_string(),
            "m.csv holds several benchmarks (pingpong, sendrecv); pick one with --benchmark"
        );
        assert_eq!(
            hockney_table(t, "m.csv", Some("sendrecv"), 4096.0)
                .unwrap_err()
                .to_string(),
            "m.csv: 1 row(s) of 4096 bytes or more; the fit needs two message sizes at least (lower --min-bytes?)"
        );
        assert_eq!(
            hockney_table("bytes,t_avg_us\n1,1\n", "m.csv", Some("x"), 0.0)
                .unwrap_err()
                .to_string(),
            "m.csv: no `benchmark` column to pick --benchmark's rows from"
        );
    }

    #[test]
    fn pairs_are_trimmed_and_say_what_is_wrong() {
        let m = pairs(" DIV = 8 ,FP=1.5,").unwrap();
        assert_eq!(m["DIV"], 8.0);
        assert_eq!(m["FP"], 1.5);
        assert_eq!(
            pairs("DIV").unwrap_err().to_string(),
            "'DIV' is not NAME=VALUE"
        );
        assert_eq!(
            pairs("DIV=x").unwrap_err().to_string(),
            "'x' in 'DIV=x' is not a number: invalid float literal"
        );
    }
}
