//! The text view of a projection (`project`): what was projected, the points, the interval,
//! its width and the validation.

use hpcscope_report::fmt::num;
use hpcscope_report::{Format, Table};

use crate::project::{Method, PairRule, Point, ProjectResult, Projection};
use crate::roofline::Scope;

/// `r` in `format`: JSON, CSV, Markdown or the aligned table with its preamble and epilogue.
pub fn render(format: Format, r: &ProjectResult) -> Result<String, serde_json::Error> {
    hpcscope_report::render(
        format,
        r,
        &preamble(r),
        &points_table(&r.projection),
        &epilogue(r),
    )
}

/// The lines before the table: machines, scope, pair rule, peak and ceilings.
pub fn preamble(r: &ProjectResult) -> Vec<String> {
    let p = &r.projection;
    let mut v = vec![
        format!(
            "{} -> {} ({} scope, {} pairs, {} peak)",
            p.source_machine,
            p.target_machine,
            match p.options.scope {
                Scope::Core => "single-core",
                Scope::Node => "node",
            },
            match p.options.pair_rule {
                PairRule::UpperTriangular => "upper-triangular",
                PairRule::Diagonal => "diagonal",
                PairRule::All => "all",
            },
            match p.options.method {
                Method::Weighted => "mix-weighted",
                Method::Kwack => "raw (Kwack)",
            }
        ),
        format!(
            "source: {} GFLOP/s measured; compute ceiling {} GFLOP/s (peak {}, FLOPs/FP instr {})",
            num(p.source_gflops, 4),
            num(p.source_ceiling_gflops, 4),
            num(p.source_peak_gflops, 4),
            p.source_flops_per_instruction
                .map(|x| num(x, 4))
                .unwrap_or_else(|| "-".into())
        ),
        format!(
            "target: compute ceiling {} GFLOP/s (peak {}, FLOPs/FP instr {})",
            num(p.target_ceiling_gflops, 4),
            num(p.target_peak_gflops, 4),
            p.target_flops_per_instruction
                .map(|x| num(x, 4))
                .unwrap_or_else(|| "-".into())
        ),
    ];
    if !p.threads.is_empty() {
        let scaling =
            p.threads.len() > 1 && p.threads.iter().all(|t| t.source_gflops == p.source_gflops);
        v.push(format!(
            "{} threads; per-thread intervals summed (eq. 7.5){}",
            p.threads.len(),
            if scaling {
                "; one source thread: each target thread keeps its efficiency per level"
            } else {
                ""
            }
        ));
    }
    v
}

/// One row per (OI, roofline) point, per thread at node scope. Every value that can set a
/// bound of the interval is in it: the carried-time, carried-rate and carried-cycles
/// projections of a point get columns of their own when the projection has them.
pub fn points_table(p: &Projection) -> Table {
    let all = || {
        p.points
            .iter()
            .chain(p.threads.iter().flat_map(|t| t.points.iter()))
    };
    let time = all().any(|pt| pt.carried_time_gflops.is_some());
    let rate = all().any(|pt| pt.carried_rate_gflops.is_some());
    let cycles = all().any(|pt| pt.carried_cycles_gflops.is_some());
    let mut headers = vec![
        "thread",
        "OI level",
        "roofline",
        "OI src",
        "OI tgt",
        "roof src GF/s",
        "roof tgt GF/s",
        "bound src",
        "bound tgt",
        "efficiency",
        "projected GF/s",
    ];
    if time {
        headers.push("carried time GF/s");
    }
    if rate {
        headers.push("carried rate GF/s");
    }
    if cycles {
        headers.push("carried cycles GF/s");
    }
    let mut t = Table::new(&headers);
    let mut add = |th: String, pt: &Point| {
        let mut row = vec![
            th,
            pt.oi_level.clone(),
            pt.roof_level.clone(),
            num(pt.oi_source, 4),
            num(pt.oi_target, 4),
            num(pt.roof_source_gflops, 4),
            num(pt.roof_target_gflops, 4),
            pt.bound_source.to_string(),
            pt.bound_target.to_string(),
            num(pt.efficiency, 4),
            num(pt.gflops, 6),
        ];
        if time {
            row.push(pt.carried_time_gflops.map_or("-".into(), |v| num(v, 6)));
        }
        if rate {
            row.push(pt.carried_rate_gflops.map_or("-".into(), |v| num(v, 6)));
        }
        if cycles {
            row.push(pt.carried_cycles_gflops.map_or("-".into(), |v| num(v, 6)));
        }
        t.row(row);
    };
    for pt in &p.points {
        add("-".into(), pt);
    }
    for th in &p.threads {
        for pt in &th.points {
            add(th.thread.to_string(), pt);
        }
    }
    t
}

/// The lines after the table: interval, width, point estimate, validation and notes.
pub fn epilogue(r: &ProjectResult) -> Vec<String> {
    let p = &r.projection;
    let mut v = vec![format!(
        "projected interval: [{}, {}] GFLOP/s (x{} to x{} the source)",
        num(p.interval.lo, 6),
        num(p.interval.hi, 6),
        num(p.interval.lo / p.source_gflops, 3),
        num(p.interval.hi / p.source_gflops, 3)
    )];
    match &p.widening {
        Some(w) => {
            v.push(format!(
                "width x{}: the model's interval [{}, {}] (x{}, {:.0} % of the width), widened by the calibrated margin of {:.1} % on each side ({:.0} %)",
                num(w.total_width, 4),
                num(w.model_interval.lo, 6),
                num(w.model_interval.hi, 6),
                num(w.model_width, 4),
                w.model_share * 100.0,
                w.margin * 100.0,
                w.margin_share * 100.0,
            ));
            v.push(match w.source {
                Some(s) => format!(
                    "and by the uncertainty of the source's median over {} runs ({:+.1} % / {:+.1} %): {:.0} % of the width is noise",
                    s.runs,
                    (s.low - 1.0) * 100.0,
                    (s.high - 1.0) * 100.0,
                    w.noise_share * 100.0
                ),
                None => "the source's run-to-run spread is unknown (give --source-times to include it)".into(),
            });
        }
        None => v.push(
            "the whole width is the model's: no calibration margin, and the source's run-to-run spread is unknown (give --source-times to include it)"
                .into(),
        ),
    }
    if let Some(e) = &p.point {
        v.push(format!(
            "point estimate: {} GFLOP/s (x{}), {}; rule: {}",
            num(e.gflops, 6),
            num(e.speedup, 3),
            e.error_words(),
            e.rule
        ));
    }
    if let Some(k) = p.kwack_gflops {
        v.push(format!(
            "Kwack baseline (raw peak, main memory only): {} GFLOP/s",
            num(k, 6)
        ));
    }
    for (side, w) in [
        ("source", &p.bandwidths.source),
        ("target", &p.bandwidths.target),
    ] {
        if let Some(w) = w {
            v.push(format!(
                "{side} ceilings at the binary's widths ({}; {})",
                w.describe(),
                w.from
            ));
        }
    }
    if let Some(t) = p.target_time_s {
        v.push(format!(
            "projected time of the target region: [{}, {}] s",
            num(t.lo, 4),
            num(t.hi, 4)
        ));
    }
    if let Some(val) = &r.validation {
        let c = &val.check;
        let spread = val
            .spread
            .map(|s| {
                format!(
                    " (the uncertainty of the median of its {} runs {:+.1} % / {:+.1} %)",
                    s.runs,
                    (s.low - 1.0) * 100.0,
                    (s.high - 1.0) * 100.0
                )
            })
            .unwrap_or_default();
        v.push(if val.inside_within_noise {
            format!(
                "measured {} GFLOP/s{spread}: inside the interval{}",
                num(c.measured_gflops, 4),
                if c.inside {
                    ""
                } else {
                    " within the measurement's own spread"
                }
            )
        } else {
            format!(
                "measured {} GFLOP/s{spread}: OUTSIDE the interval; off by {:+.1} % beyond the spreads ({})",
                num(c.measured_gflops, 4),
                val.error_within_noise * 100.0,
                if val.error_within_noise > 0.0 {
                    "over-prediction"
                } else {
                    "under-prediction"
                }
            )
        });
        if let Some(e) = val.point_error {
            v.push(format!("point estimate off by {:+.1} %", e * 100.0));
        }
        if let Some(e) = val.kwack_error {
            v.push(format!("Kwack baseline off by {:+.1} %", e * 100.0));
        }
    }
    v.extend(p.notes.iter().map(|n| format!("note: {n}")));
    v
}
