//! `perf stat -x,` output.
//!
//! A line is `[PREFIX,]VALUE,UNIT,EVENT,RUN_TIME,PERCENT[,METRIC_VALUE,METRIC_UNIT]`, where
//! `VALUE` may be `<not supported>` or `<not counted>` and the prefix is what `-I`
//! (timestamp), `--per-thread` (`comm-pid`), `-A` (`CPU3`) or `--per-socket/--per-core`
//! (`S0,24` / `S0-D0-C1,2`) add. Interval lines are summed. `task-clock` and `cpu-clock`
//! in msec become ns; `duration_time` gives the wall time; without it the time is
//! estimated from task-clock and perf's "CPUs utilized" with a warning. A percentage below
//! 100 means perf multiplexed and scaled the count: it is flagged.
//!
//! perf prints an event given as a PMU spec as it was typed, commas and all, without
//! quoting it (`cpu/event=0x3c,umask=0x0/`, `software/config=0,period=100000/u`): the
//! fields from the one that opens the spec (`pmu/term`) to the one that closes it
//! (`term/modifiers`) are read as one event name again.

use crate::error::{Error, Result};
use crate::raw::{Collector, Count, RawData, Status};

fn is_num(s: &str) -> bool {
    !s.is_empty() && s.trim().parse::<f64>().is_ok()
}

fn is_value(s: &str) -> bool {
    is_num(s) || s.starts_with("<not ")
}

/// `pmu/term` with the spec still open: a PMU name, a slash and a first term.
fn opens_spec(s: &str) -> bool {
    let Some((pmu, rest)) = s.split_once('/') else {
        return false;
    };
    !pmu.is_empty()
        && pmu
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        && !pmu.starts_with(|c: char| c.is_ascii_digit())
        && !rest.is_empty()
        && !rest.contains('/')
}

/// `term/modifiers`: the last term of a spec, its closing slash and perf's modifier letters.
fn closes_spec(s: &str) -> bool {
    let Some((term, mods)) = s.split_once('/') else {
        return false;
    };
    !term.is_empty()
        && !term.contains(char::is_whitespace)
        && mods.chars().all(|c| c.is_ascii_alphabetic())
}

/// A term between the first and the last one (`umask=0x0`, `edge`).
fn inner_term(s: &str) -> bool {
    !s.is_empty() && !s.contains('/') && !s.contains(char::is_whitespace) && !is_num(s)
}

/// `row` with the pieces of a PMU event spec that `sep` split (see the module) joined into
/// one field again. A spec is rejoined only when it closes and has a `term=value`: a unit
/// like `K/sec` stays as it is.
fn rejoin_event_specs(row: super::CsvRow, sep: char) -> super::CsvRow {
    let f: Vec<&str> = row.fields.iter().collect();
    if !f.iter().any(|x| opens_spec(x)) {
        return row;
    }
    let mut out = csv::StringRecord::new();
    let mut i = 0;
    while i < f.len() {
        if opens_spec(f[i]) {
            let mut k = i + 1;
            while k < f.len() && !closes_spec(f[k]) && inner_term(f[k]) {
                k += 1;
            }
            if k < f.len() && closes_spec(f[k]) {
                let joined = f[i..=k].join(&sep.to_string());
                if joined.contains('=') {
                    out.push_field(&joined);
                    i = k + 1;
                    continue;
                }
            }
        }
        out.push_field(f[i]);
        i += 1;
    }
    super::CsvRow {
        line: row.line,
        fields: out,
    }
}

/// Parses `perf stat -x,` text (a `-x` separator other than `,` is detected when the text
/// has no comma but `;` or tabs).
#[allow(clippy::too_many_lines)]
pub fn parse(text: &str, origin: &str, label: &str) -> Result<RawData> {
    let sep = if text.contains(',') {
        ','
    } else if text.contains(';') {
        ';'
    } else {
        '\t'
    };
    let mut raw = RawData::new(label, "perf-csv", Collector::Perf);
    let mut utilized: Option<f64> = None;
    let mut duration_ns: Option<f64> = None;
    let mut intervals = std::collections::BTreeSet::new();
    let mut lines_used = 0usize;
    let mut keys: Vec<String> = Vec::new();
    // (thread, event) -> the line it was first seen on, without an interval prefix.
    let mut seen: std::collections::HashMap<(u64, String), usize> =
        std::collections::HashMap::new();
    let n_lines = text.lines().count();
    let ends_cut = !text.is_empty() && !text.ends_with('\n');
    for row in super::csv_records(text, sep as u8, origin)? {
        let row = rejoin_event_specs(row, sep);
        let lineno = row.line;
        if row.text(sep).trim().is_empty() || row.get(0).trim_start().starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = row.fields.iter().collect();
        // Column (1-based) of field i.
        let col = |i: usize| row.col(i);
        // Find the value column: VALUE, UNIT, EVENT, then a numeric run time (or nothing).
        let mut at = None;
        let mut bad_runtime: Option<usize> = None;
        for i in 0..fields.len().min(4) {
            if fields.len() < i + 3 || !is_value(fields[i].trim()) {
                continue;
            }
            let ev = fields[i + 2].trim();
            if ev.is_empty() || is_num(ev) {
                continue;
            }
            let runtime_ok = fields
                .get(i + 3)
                .is_none_or(|r| is_num(r.trim()) || r.trim().is_empty());
            if runtime_ok {
                at = Some(i);
                break;
            }
            bad_runtime.get_or_insert(i + 3);
        }
        if at.is_none()
            && let Some(k) = bad_runtime
        {
            return Err(Error::import(
                origin,
                lineno,
                col(k),
                format!("run time '{}' is not a number", fields[k].trim()),
            ));
        }
        let Some(i) = at else {
            let bad = fields
                .iter()
                .position(|f| !f.trim().is_empty() && !is_value(f.trim()))
                .unwrap_or(0);
            return Err(Error::import(
                origin,
                lineno,
                col(bad),
                format!(
                    "not a perf stat -x{sep} line (expected [prefix{sep}]value{sep}unit{sep}event{sep}run-time{sep}percent): '{}'",
                    row.text(sep).chars().take(80).collect::<String>()
                ),
            ));
        };
        // perf ends every line with a newline and gives the run time and percentage: a last
        // line without them was cut short.
        if ends_cut && lineno == n_lines && fields.len() < i + 5 {
            return Err(Error::import(
                origin,
                lineno,
                row.end_col(),
                "the last line ends early (no run time and percentage, no newline): the file is cut short (truncated?)",
            ));
        }
        lines_used += 1;
        let prefix = &fields[..i];
        let value = fields[i].trim();
        let unit = fields[i + 1].trim();
        let event = fields[i + 2].trim().to_string();
        let pct: Option<f64> = fields.get(i + 4).and_then(|p| p.trim().parse().ok());
        // Prefix: interval timestamp first (has a '.'), then the aggregation key.
        let mut rest = prefix;
        if let Some(first) = rest.first()
            && first.trim().contains('.')
            && is_num(first.trim())
        {
            intervals.insert(first.trim().to_string());
            rest = &rest[1..];
        }
        let thread: u64 = match rest.first().map(|s| s.trim()) {
            None => 0,
            Some(k) => {
                if let Some((_, pid)) = k.rsplit_once('-')
                    && let Ok(p) = pid.parse::<u64>()
                {
                    p
                } else if let Some(c) = k.strip_prefix("CPU").and_then(|c| c.parse::<u64>().ok()) {
                    c
                } else {
                    // S0, S0-D0-C1, ...: numbered in order of appearance.
                    match keys.iter().position(|x| x == k) {
                        Some(p) => p as u64,
                        None => {
                            keys.push(k.to_string());
                            keys.len() as u64 - 1
                        }
                    }
                }
            }
        };
        let count = if value.starts_with("<not supported>") {
            Count::missing(Status::NotSupported)
        } else if value.starts_with("<not counted>") {
            Count::missing(Status::NotCounted)
        } else if value.starts_with('<') {
            return Err(Error::import(
                origin,
                lineno,
                col(i),
                format!("unknown value '{value}'"),
            ));
        } else {
            let v: f64 = value.parse().map_err(|_| {
                Error::import(origin, lineno, col(i), format!("bad number '{value}'"))
            })?;
            if !v.is_finite() || v < 0.0 {
                return Err(Error::import(
                    origin,
                    lineno,
                    col(i),
                    format!("'{value}' is not a count: counts are finite and not negative"),
                ));
            }
            let bytes = match unit {
                "B" => Some(1.0),
                "KiB" => Some(1024.0),
                "MiB" => Some(1048576.0),
                "GiB" => Some(1073741824.0),
                "kB" | "KB" => Some(1e3),
                "MB" => Some(1e6),
                "GB" => Some(1e9),
                _ => None,
            };
            let v = match (unit, bytes) {
                ("msec", _) => v * 1e6,
                ("usec", _) => v * 1e3,
                ("sec" | "s", _) => v * 1e9,
                // perf scales memory-controller CAS counts to MiB (64 bytes per count).
                (_, Some(b)) if event.contains("cas_count") => v * b / 64.0,
                (_, Some(b)) => {
                    let w = format!("{event}: reported in {unit} by perf, read as bytes");
                    if !raw.warnings.contains(&w) {
                        raw.warnings.push(w);
                    }
                    v * b
                }
                _ => v,
            };
            match pct {
                Some(p) if p < 99.995 && p > 0.0 => Count {
                    value: Some(v),
                    status: Status::Scaled,
                    running_fraction: Some(p / 100.0),
                },
                _ => Count::of(v),
            }
        };
        if event == "task-clock"
            && let Some(u) = fields.get(i + 5).and_then(|m| m.trim().parse::<f64>().ok())
            && fields
                .get(i + 6)
                .is_some_and(|m| m.contains("CPUs utilized"))
        {
            utilized = Some(u);
        }
        if event == "duration_time"
            && let Some(v) = count.value
        {
            duration_ns = Some(duration_ns.unwrap_or(0.0) + v);
        }
        let interval = rest.len() < prefix.len();
        if !interval && let Some(first) = seen.insert((thread, event.clone()), lineno) {
            return Err(Error::import(
                origin,
                lineno,
                col(i + 2),
                format!(
                    "event '{event}' of the same thread appears again (first on line {first}): two runs in one file? its counts would be summed"
                ),
            ));
        }
        let t = raw.thread_mut("all", thread);
        match t.counters.get_mut(&event) {
            // Interval lines: sum the deltas; a missing interval makes the sum missing.
            Some(prev) => {
                prev.value = match (prev.value, count.value) {
                    (Some(a), Some(b)) => Some(a + b),
                    (Some(a), None)
                        if count.status == Status::NotCounted && !intervals.is_empty() =>
                    {
                        Some(a)
                    }
                    _ => None,
                };
                if count.status == Status::Scaled {
                    prev.status = Status::Scaled;
                }
            }
            None => {
                t.counters.insert(event, count);
            }
        }
    }
    if lines_used == 0 {
        return Err(Error::import(
            origin,
            1,
            1,
            "no perf stat -x, counter line found",
        ));
    }
    let time = match duration_ns {
        Some(ns) => Some(ns * 1e-9),
        None => {
            let r = raw.region_mut("all");
            let tc: f64 = r
                .threads
                .iter()
                .filter_map(|t| t.counters.get("task-clock").and_then(|c| c.value))
                .sum();
            match utilized {
                Some(u) if u > 0.0 && tc > 0.0 => {
                    raw.warnings.push(
                        "wall time estimated from task-clock / 'CPUs utilized' (2-3 significant digits): add `-e duration_time` to perf stat for an exact time".into(),
                    );
                    Some(tc * 1e-9 / u)
                }
                _ => {
                    raw.warnings
                        .push("no wall time: add `-e duration_time` to perf stat".into());
                    None
                }
            }
        }
    };
    for t in &mut raw.region_mut("all").threads {
        t.time_s = time;
    }
    if !intervals.is_empty() {
        raw.warnings
            .push(format!("{} intervals summed", intervals.len()));
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recorded on a VM without PMU: `perf stat -x, -e task-clock,page-faults,
    /// context-switches,cpu-migrations,cycles,instructions,duration_time -- sleep 0.1`
    /// (perf 6.1).
    const VM: &str = "1.32,msec,task-clock,1319315,100.00,0.013,CPUs utilized
73,,page-faults,1319315,100.00,55.332,K/sec
1,,context-switches,1319315,100.00,757.969,/sec
0,,cpu-migrations,1319315,100.00,0.000,/sec
<not supported>,,cycles,0,100.00,,
<not supported>,,instructions,0,100.00,,
102175299,ns,duration_time,102175299,100.00,77.446,G/sec
";

    #[test]
    fn vm_output_with_not_supported() {
        let r = parse(VM, "vm.csv", "vm").unwrap();
        let t = &r.regions[0].threads[0];
        assert_eq!(t.counters["task-clock"].value, Some(1.32e6));
        assert_eq!(t.counters["page-faults"].value, Some(73.0));
        assert_eq!(t.counters["cycles"].status, Status::NotSupported);
        assert!((t.time_s.unwrap() - 0.102175299).abs() < 1e-12);
    }

    #[test]
    fn intervals_not_counted_and_multiplexed() {
        let text = "     0.050165678,0.97,msec,task-clock,967219,100.00,0.019,CPUs utilized
     0.050165678,1000,,instructions,500,50.00,,
     0.100433301,<not counted>,msec,task-clock,0,100.00,,
     0.100433301,3000,,instructions,500,50.00,,
";
        let r = parse(text, "i.csv", "i").unwrap();
        let t = &r.regions[0].threads[0];
        assert_eq!(t.counters["instructions"].value, Some(4000.0));
        assert_eq!(t.counters["instructions"].status, Status::Scaled);
        assert_eq!(t.counters["task-clock"].value, Some(0.97e6));
        assert!(r.warnings.iter().any(|w| w.contains("estimated")));
    }

    #[test]
    fn cas_counts_in_mib_become_lines() {
        let text = "12.5,MiB,uncore_imc/cas_count_read/,100,100.00,,\n";
        let r = parse(text, "m.csv", "m").unwrap();
        let v = r.regions[0].threads[0].counters["uncore_imc/cas_count_read/"].value;
        assert_eq!(v, Some(12.5 * 1048576.0 / 64.0));
    }

    #[test]
    fn per_thread_and_per_cpu() {
        let text = "app-101,5.0,msec,task-clock,5000000,100.00,1.0,CPUs utilized\napp-102,4.0,msec,task-clock,4000000,100.00,1.0,CPUs utilized\n";
        let r = parse(text, "t.csv", "t").unwrap();
        let ids: Vec<u64> = r.regions[0].threads.iter().map(|t| t.thread).collect();
        assert_eq!(ids, vec![101, 102]);
        let text = "CPU0,10,,page-faults,100,100.00,,\nCPU1,20,,page-faults,100,100.00,,\n";
        let r = parse(text, "c.csv", "c").unwrap();
        assert_eq!(
            r.regions[0].aggregate().counters["page-faults"].value,
            Some(30.0)
        );
    }

    #[test]
    fn truncated_files_duplicate_events_and_negative_counts_are_refused() {
        let cut = &VM[..VM.find("ns,duration_time").unwrap() + 8];
        let e = parse(cut, "vm.csv", "vm").unwrap_err().to_string();
        assert!(e.contains("truncated") && e.starts_with("vm.csv:7:"), "{e}");
        // A complete last line without its newline is fine.
        assert!(parse(VM.trim_end(), "vm.csv", "vm").is_ok());
        let twice = format!("{VM}{}", VM.lines().nth(1).unwrap());
        let e = parse(&twice, "vm.csv", "vm").unwrap_err().to_string();
        assert!(e.contains("first on line 2"), "{e}");
        let neg = VM.replace("73,,page-faults", "-73,,page-faults");
        let e = parse(&neg, "vm.csv", "vm").unwrap_err().to_string();
        assert!(
            e.starts_with("vm.csv:2:1:") && e.contains("not a count"),
            "{e}"
        );
    }

    #[test]
    fn malformed_lines_have_line_and_column() {
        let text =
            "1.32,msec,task-clock,1319315,100.00,,\nPerformance counter stats for 'sleep':\n";
        let e = parse(text, "bad.csv", "b").unwrap_err().to_string();
        assert!(e.starts_with("bad.csv:2:1:"), "{e}");
        let text = "1.32,msec,task-clock,1319315,100.00,,\n12,,cycles,abc,100.00,,\n";
        let e = parse(text, "bad.csv", "b").unwrap_err().to_string();
        assert!(
            e.starts_with("bad.csv:2:12:") && e.contains("run time 'abc'"),
            "{e}"
        );
        let e = parse("<bogus>,,cycles,0,100.00,,\n", "b.csv", "b")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("b.csv:1:1:"), "{e}");
        assert!(parse("# only a comment\n", "c.csv", "c").is_err());
    }

    /// Recorded here (perf 6.1, no hardware PMU: the software PMU's raw specs):
    /// `perf stat -x, -e 'cpu-clock,task-clock,software/config=0,period=100000/,
    /// software/config=1,config1=0/u,software/config=1,name=tclk/,duration_time' --
    /// sleep 0.05`.
    const RAW_PMU: &str = include_str!("../../tests/data/import/perf-stat-raw-pmu.csv");

    /// The same with `-A -a` (a `CPUn` prefix) and without `name=`.
    const RAW_PMU_PER_CPU: &str =
        include_str!("../../tests/data/import/perf-stat-raw-pmu-per-cpu.csv");

    #[test]
    fn raw_pmu_specs_with_commas_are_one_event() {
        let r = parse(RAW_PMU, "raw.csv", "raw").unwrap();
        let c = &r.regions[0].threads[0].counters;
        let names: Vec<&str> = c.keys().map(String::as_str).collect();
        assert_eq!(
            names.len(),
            6,
            "cpu-clock, task-clock, two raw specs, tclk, duration_time: {names:?}"
        );
        assert_eq!(c["software/config=0,period=100000/"].value, Some(887844.0));
        assert_eq!(c["software/config=1,config1=0/u"].value, Some(895176.0));
        // `name=` makes perf print the name instead of the spec.
        assert_eq!(c["tclk"].value, Some(895176.0));
        assert_eq!(c["cpu-clock"].value, Some(0.89e6));
        assert!((r.regions[0].threads[0].time_s.unwrap() - 0.09995113).abs() < 1e-12);
        let r = parse(RAW_PMU_PER_CPU, "cpu.csv", "cpu").unwrap();
        let t = &r.regions[0].threads;
        assert_eq!(t.len(), 2);
        for (cpu, v) in [(0, 100010834.0), (1, 75990034.0)] {
            let th = t.iter().find(|x| x.thread == cpu).unwrap();
            assert_eq!(
                th.counters["software/config=0,period=100000/"].value,
                Some(v)
            );
            assert_eq!(th.counters.len(), 3, "{:?}", th.counters.keys());
        }
    }

    /// Hand-written in perf's layout (this machine has no `cpu` PMU to record it from): a
    /// raw hardware event with two and three terms, one with a modifier, with an
    /// interval prefix and a per-thread prefix.
    #[test]
    fn raw_hardware_event_specs_written_by_hand() {
        let text = "1000,,cpu/event=0x3c,umask=0x0/,500,100.00,,
2000,,cpu/event=0x3c,umask=0x0,name=foo/,500,50.00,,
3000,,cpu/event=0xc0,umask=0x0,edge/u,500,100.00,,
0.89,msec,task-clock,895176,100.00,0.009,CPUs utilized
";
        let r = parse(text, "hand.csv", "hand").unwrap();
        let c = &r.regions[0].threads[0].counters;
        assert_eq!(c["cpu/event=0x3c,umask=0x0/"].value, Some(1000.0));
        assert_eq!(c["cpu/event=0x3c,umask=0x0,name=foo/"].value, Some(2000.0));
        assert_eq!(
            c["cpu/event=0x3c,umask=0x0,name=foo/"].status,
            Status::Scaled
        );
        assert_eq!(c["cpu/event=0xc0,umask=0x0,edge/u"].value, Some(3000.0));
        let text = "     0.031923784,app-4242,1000,,cpu/event=0x3c,umask=0x0/,500,100.00,,
     0.062170834,app-4242,1500,,cpu/event=0x3c,umask=0x0/,500,100.00,,
";
        let r = parse(text, "i.csv", "i").unwrap();
        let th = &r.regions[0].threads[0];
        assert_eq!(th.thread, 4242);
        assert_eq!(th.counters["cpu/event=0x3c,umask=0x0/"].value, Some(2500.0));
        // A spec that never closes is not joined: the line is refused with its column.
        let e = parse(
            "1000,,cpu/event=0x3c,umask=0x0,500,100.00,,\n",
            "o.csv",
            "o",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("o.csv:1:"), "{e}");
    }

    /// perf itself, now: a raw software-PMU spec with commas, per CPU, read back as one
    /// event per CPU with the count perf printed.
    #[test]
    fn perf_stat_raw_spec_live() {
        let out = std::process::Command::new("perf")
            .args(["stat", "-x,", "-A", "-a", "-e"])
            .arg("software/config=0,period=100000/,task-clock")
            .args(["--", "sleep", "0.01"])
            .output();
        let text = match out {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stderr).into_owned(),
            Ok(o) => {
                println!(
                    "skipping: perf stat -a failed here: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                return;
            }
            Err(e) => {
                println!("skipping: perf is not installed ({e})");
                return;
            }
        };
        let r = parse(&text, "live.csv", "live").unwrap();
        let spec = "software/config=0,period=100000/";
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(spec)).collect();
        assert!(!lines.is_empty(), "perf printed no line of {spec}:\n{text}");
        for line in lines {
            let cpu: u64 = line
                .strip_prefix("CPU")
                .and_then(|l| l.split(',').next())
                .and_then(|c| c.parse().ok())
                .unwrap_or_else(|| panic!("no CPU prefix: {line}"));
            let want: f64 = line.split(',').nth(1).unwrap().parse().unwrap();
            let th = r.regions[0]
                .threads
                .iter()
                .find(|t| t.thread == cpu)
                .unwrap();
            assert_eq!(th.counters[spec].value, Some(want), "{line}");
        }
    }
}
