//! likwid-perfctr CSV output (`-O`, or `-o out.csv`), with the marker API (`-m`: tables per
//! region, `TABLE,Region NAME,Group 1 Raw,...`) or without (`TABLE,Group 1 Raw,...`). Raw
//! tables give per hardware thread the events, `RDTSC Runtime [s]` (time) and `call count`;
//! statistics and metric tables are skipped (the metrics are recomputed from the events).

use super::CsvRow;
use crate::error::{Error, Result};
use crate::raw::{Collector, Count, RawData};

/// Parses likwid-perfctr CSV.
#[allow(clippy::too_many_lines)]
pub fn parse(text: &str, origin: &str, label: &str) -> Result<RawData> {
    let mut raw = RawData::new(label, "likwid-csv", Collector::Likwid);
    // Records of any width: likwid mixes STRUCT and TABLE blocks of different widths.
    let rows = super::csv_records(text, b',', origin)?;
    let is = |r: &CsvRow, tag: &str| r.get(0) == tag && r.len() > 1;
    let mut i = 0;
    let mut tables = 0;
    while i < rows.len() {
        let row = &rows[i];
        let f: Vec<&str> = row.fields.iter().collect();
        match f[0] {
            "STRUCT" => {
                let n: usize = f
                    .get(2)
                    .and_then(|s| s.trim().parse().ok())
                    .ok_or_else(|| {
                        Error::import(
                            origin,
                            row.line,
                            if f.len() > 1 { row.col(1) } else { 1 },
                            "STRUCT line without a line count",
                        )
                    })?;
                // n comes from the file: never trust it for arithmetic.
                if n > rows.len() - i - 1 {
                    return Err(Error::import(
                        origin,
                        row.line,
                        1,
                        format!(
                            "STRUCT announces {n} lines but the file has {} after it: truncated?",
                            rows.len() - i - 1
                        ),
                    ));
                }
                for r in rows.iter().skip(i + 1).take(n) {
                    if r.get(0) == "CPU name:" && r.len() > 1 {
                        let rest: Vec<&str> = r.fields.iter().skip(1).collect();
                        raw.cpu = Some(rest.join(",").trim_end_matches(',').to_string());
                    }
                }
                i += 1 + n;
            }
            "TABLE" => {
                let region = f
                    .iter()
                    .find_map(|x| x.strip_prefix("Region "))
                    .unwrap_or("all")
                    .to_string();
                let is_raw = f.iter().any(|x| x.contains("Raw") && !x.contains("Stat"));
                // The row count is the last non-empty field (likwid pads lines with commas).
                let n: usize = f
                    .iter()
                    .rev()
                    .find(|s| !s.trim().is_empty())
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(0);
                if !is_raw {
                    // Skip the header and the announced rows, never past the end.
                    i = i.saturating_add(1).saturating_add(n.max(1)).min(rows.len());
                    continue;
                }
                tables += 1;
                let Some(head) = rows
                    .get(i + 1)
                    .filter(|h| h.get(0) == "Event" && h.len() >= 3)
                else {
                    // The line after the TABLE line (or the line after the end).
                    let line = rows.get(i + 1).map_or(row.line + 1, |h| h.line);
                    return Err(Error::import(
                        origin,
                        line,
                        1,
                        "expected 'Event,Counter,HWThread 0,...' after a Raw TABLE line",
                    ));
                };
                let header: Vec<&str> = head.fields.iter().collect();
                // likwid pads lines with empty fields: the thread columns are the non-empty ones.
                let cols = header
                    .iter()
                    .rposition(|h| !h.trim().is_empty())
                    .unwrap_or(0)
                    + 1;
                let threads: Vec<u64> = header[2..cols.max(2)]
                    .iter()
                    .enumerate()
                    .map(|(k, h)| {
                        h.rsplit(' ')
                            .next()
                            .and_then(|x| x.parse().ok())
                            .unwrap_or(k as u64)
                    })
                    .collect();
                let mut seen = std::collections::HashMap::new();
                for (k, t) in threads.iter().enumerate() {
                    if let Some(first) = seen.insert(*t, k) {
                        return Err(Error::import(
                            origin,
                            head.line,
                            head.col(k + 2),
                            format!(
                                "hardware thread {t} appears twice in the header (columns {} and {}): its counts would be summed",
                                first + 3,
                                k + 3
                            ),
                        ));
                    }
                }
                let mut j = i + 2;
                while j < rows.len()
                    && !is(&rows[j], "TABLE")
                    && !is(&rows[j], "STRUCT")
                    && !rows[j].text(',').trim().is_empty()
                {
                    let r = &rows[j];
                    let name = r.get(0);
                    if r.len() < threads.len() + 2 {
                        return Err(Error::import(
                            origin,
                            r.line,
                            r.col(r.len()) - 1,
                            format!(
                                "the row of '{}' has {} fields, the header {}: the file is cut short (truncated?)",
                                name,
                                r.len(),
                                threads.len() + 2
                            ),
                        ));
                    }
                    for (k, tid) in threads.iter().enumerate() {
                        let cell = r.get(k + 2).trim();
                        if cell.is_empty() || cell == "-" || cell.eq_ignore_ascii_case("nan") {
                            continue;
                        }
                        let v: f64 = cell.parse().map_err(|_| {
                            Error::import(
                                origin,
                                r.line,
                                r.col(k + 2),
                                format!("'{cell}' is not a number"),
                            )
                        })?;
                        if !v.is_finite() || v < 0.0 {
                            return Err(Error::import(
                                origin,
                                r.line,
                                r.col(k + 2),
                                format!(
                                    "'{cell}' is not a count: counts and times are finite and not negative"
                                ),
                            ));
                        }
                        let t = raw.thread_mut(&region, *tid);
                        if name.starts_with("RDTSC Runtime") || name.starts_with("Runtime (RDTSC)")
                        {
                            t.time_s = Some(v);
                        } else if name == "call count" {
                            t.calls = Some(v as u64);
                        } else {
                            // The same event on several boxes (CAS_COUNT_RD on every memory
                            // channel): instances, summed.
                            let e = t.counters.entry(name.to_string()).or_insert(Count::of(0.0));
                            e.value = e.value.map(|a| a + v);
                        }
                    }
                    j += 1;
                }
                let got = j - i - 2;
                if got < n {
                    // The last line of the table.
                    let line = rows[j - 1].line;
                    return Err(Error::import(
                        origin,
                        line,
                        1,
                        format!(
                            "the table announces {n} rows but has {got}: the file is cut short (truncated?)"
                        ),
                    ));
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    if tables == 0 {
        return Err(Error::import(
            origin,
            1,
            1,
            "no 'TABLE,...,Raw,...' block: not likwid-perfctr CSV output",
        ));
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In the shape of `likwid-perfctr -C 0-1 -g FLOPS_DP -m -O ./a.out` (likwid 5.x).
    const MARKER: &str = "STRUCT,Info,3
CPU name:,Intel(R) Xeon(R) Platinum 8260 CPU @ 2.40GHz
CPU type:,Intel Cascadelake SP processor
CPU clock:,2.39 GHz
TABLE,Region triad,Group 1 Raw,FLOPS_DP,10
Event,Counter,HWThread 0,HWThread 1
RDTSC Runtime [s],TSC,0.500000,0.510000
call count,-,10,10
INSTR_RETIRED_ANY,FIXC0,1000000,1100000
CPU_CLK_UNHALTED_CORE,FIXC1,2000000,2100000
CPU_CLK_UNHALTED_REF,FIXC2,2000000,2100000
FP_ARITH_INST_RETIRED_128B_PACKED_DOUBLE,PMC0,0,0
FP_ARITH_INST_RETIRED_SCALAR_DOUBLE,PMC1,10,12
FP_ARITH_INST_RETIRED_512B_PACKED_DOUBLE,PMC3,50000,50000
CAS_COUNT_RD,MBOX0C0,100,-
CAS_COUNT_RD,MBOX1C0,50,-
TABLE,Region triad,Group 1 Raw StatTable,FLOPS_DP,2
Event,Counter,Sum,Min,Max,Avg
INSTR_RETIRED_ANY STAT,FIXC0,2100000,1000000,1100000,1050000
TABLE,Region triad,Group 1 Metric,FLOPS_DP,2
Metric,HWThread 0,HWThread 1
Runtime (RDTSC) [s],0.5,0.51
";

    #[test]
    fn marker_tables() {
        let r = parse(MARKER, "l.csv", "l").unwrap();
        assert_eq!(
            r.cpu.as_deref(),
            Some("Intel(R) Xeon(R) Platinum 8260 CPU @ 2.40GHz")
        );
        assert_eq!(r.regions.len(), 1);
        let a = r.regions[0].aggregate();
        assert_eq!(
            a.counters["FP_ARITH_INST_RETIRED_512B_PACKED_DOUBLE"].value,
            Some(100000.0)
        );
        assert_eq!(a.time_s, Some(0.51));
        assert_eq!(a.calls, Some(20));
        assert!(!a.counters.contains_key("INSTR_RETIRED_ANY STAT"));
        assert_eq!(a.counters["CAS_COUNT_RD"].value, Some(150.0));
    }

    #[test]
    fn counts_read_from_the_file_never_wrap_or_loop() {
        // A 28-byte file made the parser loop forever (the skip wrapped around).
        for text in [
            "STRUCT,,18446744073709551615",
            "TABLE,Group 1 Metric,X,18446744073709551615",
            "TABLE,Group 1 Metric,X,18446744073709551615\nTABLE,Group 1 Raw,X,1\n",
        ] {
            let (tx, rx) = std::sync::mpsc::channel();
            let t = text.to_string();
            std::thread::spawn(move || {
                let _ = tx.send(parse(&t, "f.csv", "l").is_err());
            });
            let failed = rx
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("the parser returns");
            assert!(failed, "{text}");
        }
    }

    #[test]
    fn truncated_tables_duplicate_threads_and_negative_counts_are_refused() {
        // Cut in the middle of the last row.
        let cut = &MARKER[..MARKER.find("CAS_COUNT_RD,MBOX1C0").unwrap() + 22];
        let e = parse(cut, "l.csv", "l").unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
        // Cut after a whole row: fewer rows than announced.
        let cut = &MARKER[..MARKER.find("CAS_COUNT_RD,MBOX1C0").unwrap()];
        let e = parse(cut, "l.csv", "l").unwrap_err().to_string();
        assert!(e.contains("announces 10 rows but has 9"), "{e}");
        let dup = MARKER.replace("HWThread 0,HWThread 1", "HWThread 1,HWThread 1");
        let e = parse(&dup, "l.csv", "l").unwrap_err().to_string();
        assert!(e.contains("thread 1 appears twice"), "{e}");
        let neg = MARKER.replace("FIXC0,1000000,1100000", "FIXC0,-1000000,1100000");
        let e = parse(&neg, "l.csv", "l").unwrap_err().to_string();
        assert!(
            e.starts_with("l.csv:9:") && e.contains("not a count"),
            "{e}"
        );
    }

    #[test]
    fn errors_have_positions() {
        let bad = MARKER.replace(
            "INSTR_RETIRED_ANY,FIXC0,1000000,1100000",
            "INSTR_RETIRED_ANY,FIXC0,1000000,x11",
        );
        let e = parse(&bad, "l.csv", "l").unwrap_err().to_string();
        assert!(e.starts_with("l.csv:9:33:"), "{e}");
        let e = parse("hello\n", "n.csv", "l").unwrap_err().to_string();
        assert!(e.starts_with("n.csv:1:1:"), "{e}");
    }
}
