//! The cross-host check in print: its text and its section of an HTML report, and what
//! `hosts record` says of the record it wrote.

use super::*;

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

fn spct(x: f64) -> String {
    format!("{:+.1} %", x * 100.0)
}

fn method_line(w: &MethodSummary) -> String {
    format!(
        "{} inside, median width x{}, point error {} (max {})",
        pct(w.inside_fraction),
        num(w.median_width, 3),
        pct(w.median_point_error),
        pct(w.max_point_error)
    )
}

/// What `hosts record` prints: each workload's median GFLOP/s, spread and timer, and the
/// two files written (`machine`, `measurements`).
pub fn record_text(
    file: &MeasurementsFile,
    machine: &std::path::Path,
    measurements: &std::path::Path,
) -> String {
    let mut text = String::new();
    for (k, m) in &file.measurements {
        text.push_str(&format!(
            "{k:<28} {:>8.3} GFLOP/s  spread {:>5.1} %  ({})\n",
            m.gflops_median,
            m.spread * 100.0,
            m.timed_by
        ));
    }
    text.push_str(&format!(
        "wrote {} and {}\n",
        machine.display(),
        measurements.display()
    ));
    text
}

/// What `hosts validate` prints: the hosts, one line per pair, the summaries, the targets.
pub fn text(v: &HostsValidation) -> String {
    let mut t = String::new();
    for h in &v.hosts {
        t.push_str(&format!(
            "host {}: {}, machine '{}', {} keys\n",
            h.name, h.cpu, h.machine, h.keys
        ));
    }
    t.push_str(match v.statistic {
        Statistic::Best => "each host's rate: its fastest run (as its machine file's), the band the gap to the second fastest\n",
        Statistic::Median => "each host's rate: the median of its runs, with the median's band\n",
    });
    let kw = v.pairs.iter().map(|p| p.key.len()).max().unwrap_or(0);
    let dw = v
        .pairs
        .iter()
        .map(|p| p.source.len() + p.target.len() + 4)
        .max()
        .unwrap_or(0);
    for p in &v.pairs {
        let r = &p.pair;
        let dir = format!("{} -> {}", p.source, p.target);
        t.push_str(&format!(
            "{:<kw$}  {:<dw$}  source {} measured {} (x{}{}) projected [{}, {}] x{} point {} ({}) Kwack {} ({}) no change {} -> {}\n",
            p.key,
            dir,
            num(r.source_gflops, 4),
            num(r.measured_gflops, 4),
            num(p.measured_ratio, 3),
            match (p.changed, p.same_cpu) {
                (true, true) => ", changed, same CPU",
                (true, false) => ", changed",
                (false, true) => ", same CPU",
                (false, false) => "",
            },
            num(r.interval.lo, 4),
            num(r.interval.hi, 4),
            num(r.interval.hi / r.interval.lo, 3),
            r.point.as_ref().map_or("-".into(), |x| num(x.gflops, 4)),
            r.validation.point_error.map_or("-".into(), spct),
            r.kwack_gflops.map_or("-".into(), |k| num(k, 4)),
            r.validation.kwack_error.map_or("-".into(), spct),
            spct(p.no_change_error),
            if r.validation.inside_within_noise {
                "inside".to_string()
            } else {
                format!("outside by {}", spct(r.validation.error_within_noise))
            }
        ));
    }
    for s in &v.summary.subsets {
        let (w, k) = (&s.summary.weighted, &s.summary.kwack);
        t.push_str(&format!(
            "{}: {} pairs\n  projection: {}\n  Kwack:      {} inside, median error {} (max {})\n  no change:  median error {} (max {})\n",
            s.label,
            w.pairs,
            method_line(w),
            pct(k.inside_fraction),
            pct(k.median_point_error),
            pct(k.max_point_error),
            pct(s.no_change.median_error),
            pct(s.no_change.max_error),
        ));
    }
    for g in &v.summary.targets {
        let value = if g.goal.contains("width") {
            format!("x{}", num(g.value, 3))
        } else {
            pct(g.value)
        };
        t.push_str(&format!(
            "target {}: {} -> {} ({})\n",
            g.subset,
            g.goal,
            if g.met { "met" } else { "not met" },
            value
        ));
    }
    for n in &v.notes {
        t.push_str(&format!("note: {n}\n"));
    }
    t
}

/// The cross-host validation as a report section: one table of pairs and the summaries.
pub fn section(v: &HostsValidation) -> hpcscope_report::Section {
    let rows: Vec<Vec<String>> = v
        .pairs
        .iter()
        .map(|p| {
            let r = &p.pair;
            vec![
                p.key.clone(),
                format!(
                    "{} -> {}{}",
                    p.source,
                    p.target,
                    if p.same_cpu { " (same CPU)" } else { "" }
                ),
                num(r.source_gflops, 4),
                format!("[{}, {}]", num(r.interval.lo, 4), num(r.interval.hi, 4)),
                r.point.as_ref().map_or("-".into(), |x| num(x.gflops, 4)),
                r.kwack_gflops.map_or("-".into(), |k| num(k, 4)),
                num(r.measured_gflops, 4),
                if r.validation.inside_within_noise {
                    "inside".into()
                } else {
                    spct(r.validation.error_within_noise)
                },
            ]
        })
        .collect();
    let srows: Vec<Vec<String>> = v
        .summary
        .subsets
        .iter()
        .map(|s| {
            let (w, k) = (&s.summary.weighted, &s.summary.kwack);
            vec![
                s.label.clone(),
                w.pairs.to_string(),
                pct(w.inside_fraction),
                format!("x{}", num(w.median_width, 3)),
                pct(w.median_point_error),
                pct(k.median_point_error),
                pct(s.no_change.median_error),
            ]
        })
        .collect();
    let all = v.summary.subsets.first().filter(|s| !s.same_cpu);
    hpcscope_report::Section {
        title: "Validation across hosts: the same binary measured on two machines".into(),
        summary: all.map_or("No pair.".into(), |s| {
            format!(
                "{} pairs: the measurement met the projected interval for {:.0} % of them; median width x{}; point estimate off by {:.1} % at the median, the Kwack baseline by {:.1} %, no change by {:.1} %. Each host's rate: {}.",
                s.summary.weighted.pairs,
                s.summary.weighted.inside_fraction * 100.0,
                num(s.summary.weighted.median_width, 3),
                s.summary.weighted.median_point_error * 100.0,
                s.summary.kwack.median_point_error * 100.0,
                s.no_change.median_error * 100.0,
                match v.statistic {
                    Statistic::Best => "its fastest run, as its machine file's",
                    Statistic::Median => "the median of its runs",
                }
            )
        }),
        body_html: hpcscope_report::html_table(
            &[
                "pairs",
                "count",
                "inside",
                "median width",
                "median point error",
                "Kwack median error",
                "no-change median error",
            ],
            &srows,
        ) + &hpcscope_report::html_table(
            &[
                "key",
                "hosts",
                "source GFLOP/s",
                "projected GFLOP/s",
                "point GFLOP/s",
                "Kwack GFLOP/s",
                "measured GFLOP/s",
                "result",
            ],
            &rows,
        ),
        svgs: Vec::new(),
    }
}
