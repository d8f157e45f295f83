//! Exports of the run history for other tools: the CSV that Apache Otava (the change-point
//! detector once called Hunter) reads as a `csv` test, with the configuration that names its
//! columns.
//!
//! One row per run, oldest first: `time` (RFC 3339, UTC), `run` (the run id), `commit` (the
//! git commit, when recorded), `machine` (the fingerprint id), then one column per metric. A
//! run without a metric leaves that cell empty; the export counts those cells.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use hpcscope_report::table::csv_line;
use serde::Serialize;

use crate::store::StoredRun;

/// A history as Otava's CSV source.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OtavaExport {
    /// The CSV text.
    pub csv: String,
    /// The metric columns, in order.
    pub metrics: Vec<String>,
    /// Rows (runs).
    pub rows: usize,
    /// Metric cells left empty (a run without that metric).
    pub empty_cells: usize,
}

/// The CSV of `runs` for the metrics `metrics` (every metric of the runs when empty).
pub fn otava_csv(runs: &[StoredRun], metrics: &[String]) -> OtavaExport {
    let names: Vec<String> = if metrics.is_empty() {
        runs.iter()
            .flat_map(|r| r.record.metrics.iter().map(|m| m.name.clone()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    } else {
        metrics.to_vec()
    };
    let mut head = vec![
        "time".to_string(),
        "run".into(),
        "commit".into(),
        "machine".into(),
    ];
    head.extend(names.iter().cloned());
    let mut csv = csv_line(&head);
    let mut empty = 0;
    let mut sorted: Vec<&StoredRun> = runs.iter().collect();
    sorted.sort_by(|a, b| {
        a.record
            .started_at
            .total_cmp(&b.record.started_at)
            .then(a.id.cmp(&b.id))
    });
    for r in &sorted {
        let mut row = vec![
            hpcscope_host::time::format_rfc3339(r.record.started_at),
            r.id.to_string(),
            r.record
                .git
                .as_ref()
                .map(|g| g.commit.clone())
                .unwrap_or_default(),
            r.machine_id.clone(),
        ];
        for n in &names {
            match r.record.metrics.iter().find(|m| &m.name == n) {
                Some(m) if m.value.is_finite() => row.push(format!("{}", m.value)),
                _ => {
                    empty += 1;
                    row.push(String::new());
                }
            }
        }
        csv.push_str(&csv_line(&row));
    }
    OtavaExport {
        csv,
        metrics: names,
        rows: sorted.len(),
        empty_cells: empty,
    }
}

/// An Otava configuration with one `csv` test called `test` reading `file` (the path as
/// Otava will see it) with the columns of `export`.
pub fn otava_config(test: &str, file: &str, export: &OtavaExport) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let mut y =
        String::from("# Apache Otava configuration written by `hpcscope history export`.\n");
    let _ = writeln!(
        y,
        "tests:\n  {}:\n    type: csv\n    file: {}",
        q(test),
        q(file)
    );
    let _ = writeln!(
        y,
        "    time_column: time\n    attributes: [run, commit, machine]"
    );
    let _ = writeln!(y, "    metrics:");
    for m in &export.metrics {
        let _ = writeln!(y, "      - {}", q(m));
    }
    let _ = writeln!(
        y,
        "    csv_options:\n      delimiter: \",\"\n      quote_char: '\"'"
    );
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Metric, RunRecord};

    fn run(id: i64, t: f64, metrics: &[(&str, f64)]) -> StoredRun {
        let mut r = RunRecord::new("./app", "record");
        r.started_at = t;
        for (n, v) in metrics {
            r.metrics.push(Metric {
                name: n.to_string(),
                value: *v,
                unit: "s".into(),
            });
        }
        StoredRun {
            id,
            started: String::new(),
            machine_id: "m1".into(),
            record: r,
        }
    }

    #[test]
    fn rows_are_oldest_first_and_missing_cells_counted() {
        let runs = [
            run(2, 200.0, &[("time_s", 2.0)]),
            run(1, 100.0, &[("time_s", 1.0), ("gflops", 3.5)]),
        ];
        let e = otava_csv(&runs, &[]);
        assert_eq!(e.metrics, ["gflops", "time_s"]);
        assert_eq!(e.empty_cells, 1);
        let lines: Vec<&str> = e.csv.lines().collect();
        assert_eq!(lines[0], "time,run,commit,machine,gflops,time_s");
        assert_eq!(lines[1], "1970-01-01T00:01:40.000Z,1,,m1,3.5,1");
        assert_eq!(lines[2], "1970-01-01T00:03:20.000Z,2,,m1,,2");
        let c = otava_config("app", "h.csv", &e);
        assert!(c.contains("type: csv") && c.contains("- \"time_s\""), "{c}");
    }
}
