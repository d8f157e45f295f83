//! An analysis as text and as the sections of an HTML report (one report for `analyze`,
//! one section group per workload in `demo`).

use std::path::Path;

use hpcscope_core::Machine;
use hpcscope_core::explore::DesignPoint;
use hpcscope_report::fmt::num;
use hpcscope_report::{Section, escape, html_page, html_table};

use crate::analyze::{AnalyzeResult, PartialAnalysis, Sweep, TargetResult};
use crate::verdict::lower_bound_by;

/// The section describing the source machine.
pub fn machine_section(m: &Machine, title_prefix: &str) -> Section {
    let mut rows = vec![
        vec!["machine".into(), format!("{} ({})", m.name, m.id)],
        vec![
            "ISA, vector".into(),
            format!(
                "{} {} {}-bit{}",
                m.isa,
                m.simd,
                m.vector_bits,
                if m.fma { ", FMA" } else { "" }
            ),
        ],
        vec![
            "cores".into(),
            format!("{} x {}", m.sockets, m.cores_per_socket),
        ],
    ];
    // Per core (what the single-core roofline uses: given, or the node's share) and per
    // node where the machine file gives it.
    let both = |core: Option<f64>, node: Option<f64>, unit: &str| -> String {
        let cores = f64::from(m.cores());
        match (core, node) {
            (Some(c), Some(n)) => format!(
                "{} {unit} per core; {} {unit} per node",
                num(c, 4),
                num(n, 4)
            ),
            (Some(c), None) => format!("{} {unit} per core", num(c, 4)),
            (None, Some(n)) => format!(
                "{} {unit} per node; {} {unit} per core as the node's share",
                num(n, 4),
                num(n / cores, 4)
            ),
            (None, None) => "not given".into(),
        }
    };
    for p in &m.peaks {
        rows.push(vec![
            format!("peak {}", p.precision),
            both(p.core_gflops, p.node_gflops, "GFLOP/s"),
        ]);
    }
    for l in &m.levels {
        rows.push(vec![
            format!("{} bandwidth", l.name),
            both(l.core_gbs, l.node_gbs, "GB/s"),
        ]);
    }
    Section {
        title: format!("{title_prefix}Source machine"),
        summary: format!("{}. Provenance: {}", m.name, m.provenance),
        body_html: html_table(&["quantity", "value"], &rows),
        svgs: vec![],
    }
}

/// The projection chart of the target with the highest upper bound: source and target
/// rooflines with the projected points. Drawn from the target machine the projection used,
/// which may be a file or a machine transformed by a scenario.
pub fn best_projection_svg(source: &Machine, targets: &[TargetResult]) -> Option<String> {
    let b = targets.iter().max_by(|a, b| {
        a.projection
            .interval
            .hi
            .total_cmp(&b.projection.interval.hi)
    })?;
    let (sc, tc) = b.projection.ceilings(source, &b.target).ok()?;
    Some(hpcscope_core::view::projection_svg(
        &b.projection,
        &sc,
        &tc,
        &format!("{} -> {}", source.name, b.name),
    ))
}

/// The point estimate of a projection as a table cell: `3.1 (±4 %)`.
pub fn point_cell(p: &hpcscope_core::project::Projection) -> String {
    estimate_cell(p.point.as_ref())
}

/// A point estimate as a table cell: `3.1 (±4 %)`, or `-` without one.
pub fn estimate_cell(e: Option<&hpcscope_core::point::PointEstimate>) -> String {
    e.map_or("-".into(), |e| match e.error {
        Some(er) => format!("{} (±{:.0} %)", num(e.gflops, 4), er.median * 100.0),
        None => format!("{} (not validated)", num(e.gflops, 4)),
    })
}

/// How a projection's width splits (model, calibrated margin, noise), as a table cell.
pub fn noise_cell(p: &hpcscope_core::project::Projection) -> String {
    widening_cell(p.widening)
}

/// How a width splits (model, calibrated margin, noise), as a table cell: `12 / 40 / 48 %`,
/// with the sampling error's share after a `+` when the bytes were sampled.
pub fn widening_cell(w: Option<hpcscope_core::project::Widening>) -> String {
    w.map_or("model only".into(), |w| {
        format!(
            "{:.0} / {:.0} / {}{}",
            w.model_share * 100.0,
            w.margin_share * 100.0,
            if w.source.is_some() {
                format!("{:.0} %", w.noise_share * 100.0)
            } else {
                "not measured".into()
            },
            if w.sampling_share > 0.0 {
                format!(" + sampling {:.1} %", w.sampling_share * 100.0)
            } else {
                String::new()
            }
        )
    })
}

fn projection_rows(ts: &[&TargetResult]) -> Vec<Vec<String>> {
    ts.iter()
        .map(|t| {
            let s = t.projection.speedup();
            vec![
                t.name.clone(),
                num(t.projection.interval.lo, 4),
                num(t.projection.interval.hi, 4),
                point_cell(&t.projection),
                format!("x{} - x{}", num(s.lo, 3), num(s.hi, 3)),
                noise_cell(&t.projection),
                lower_bound_by(&t.projection),
                t.caches_from.clone(),
            ]
        })
        .collect()
}

const PROJECTION_HEADERS: [&str; 8] = [
    "target",
    "lo GFLOP/s",
    "hi GFLOP/s",
    "point GFLOP/s (typical error)",
    "speed-up",
    "width: model / margin / noise",
    "lower bound set by",
    "target bytes from",
];

/// The section of the projections to other machines: those onto machines of the binary's
/// ISA, then, apart, those that assume the binary stands for a build of another ISA.
pub fn projection_section(r: &AnalyzeResult, title_prefix: &str) -> Section {
    let same: Vec<&TargetResult> = r.targets.iter().filter(|t| t.same_isa).collect();
    let other: Vec<&TargetResult> = r.targets.iter().filter(|t| !t.same_isa).collect();
    let dps: Vec<DesignPoint> = r
        .targets
        .iter()
        .map(|t| DesignPoint::from_projection(&r.application, &t.name, t.projection.clone()))
        .collect();
    let best = r.targets.iter().max_by(|a, b| {
        a.projection
            .interval
            .hi
            .total_cmp(&b.projection.interval.hi)
    });
    let mut summary = String::new();
    if let Some(b) = best {
        summary.push_str(&format!("Highest upper bound: {} ", b.verdict));
    }
    let mut svgs = vec![hpcscope_core::view::explore_svg(
        &dps,
        &format!("{}: projected performance per target", r.application),
        r.source_gflops.unwrap_or(0.0),
    )];
    svgs.extend(best_projection_svg(&r.source_machine, &r.targets));
    let mut body = String::new();
    if !same.is_empty() {
        body.push_str(&format!(
            "<h3>Machines of the binary's ISA ({})</h3>",
            escape(&r.source_profile.isa)
        ));
        body.push_str(&html_table(&PROJECTION_HEADERS, &projection_rows(&same)));
        body.push_str("<ul>");
        for t in &same {
            body.push_str(&format!("<li>{}</li>", escape(&t.verdict)));
        }
        body.push_str("</ul>");
    }
    if !other.is_empty() {
        body.push_str(&format!(
            "<h3>Machines of another ISA: the {} binary stands for their build (an assumption)</h3>",
            escape(&r.source_profile.isa)
        ));
        if let Some(a) = other.iter().find_map(|t| t.assumption.as_ref()) {
            body.push_str(&format!("<p>{}</p>", escape(a)));
        }
        body.push_str(&html_table(&PROJECTION_HEADERS, &projection_rows(&other)));
        body.push_str("<ul>");
        for t in &other {
            body.push_str(&format!("<li>{}</li>", escape(&t.verdict)));
        }
        body.push_str("</ul>");
    }
    if r.targets.iter().any(|t| t.projection.point.is_some()) {
        body.push_str("<p>The point estimate's typical error is its median error on the build changes it was calibrated on (same machine, this project's workloads); across machines, and for another ISA, it is untested.</p>");
    }
    Section {
        title: format!("{title_prefix}Projection to other machines"),
        summary,
        body_html: body,
        svgs,
    }
}

fn notes_section(notes: &[String], title_prefix: &str, summary: &str) -> Option<Section> {
    if notes.is_empty() {
        return None;
    }
    let mut body = String::from("<ul>");
    for n in notes {
        body.push_str(&format!("<li>{}</li>", escape(n)));
    }
    body.push_str("</ul>");
    Some(Section {
        title: format!("{title_prefix}Notes"),
        summary: summary.into(),
        body_html: body,
        svgs: vec![],
    })
}

/// The HTML sections of one analysis.
pub fn sections(r: &AnalyzeResult, title_prefix: &str, with_machine: bool) -> Vec<Section> {
    let mut out = Vec::new();
    let m = &r.source_machine;
    if with_machine {
        out.push(machine_section(m, title_prefix));
    }
    let ths = &r.source_profile.regions[0].threads;
    let time_s = ths
        .iter()
        .filter_map(|t| t.time_s)
        .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.max(t))));
    let mut rows = vec![
        vec!["program".into(), r.mix.program.clone()],
        vec!["region".into(), r.source_profile.regions[0].name.clone()],
        vec![
            "FLOPs".into(),
            num(ths.iter().map(|t| t.flops).sum::<f64>(), 4),
        ],
        vec![
            "FP instructions".into(),
            num(ths.iter().map(|t| t.fp_instructions).sum::<f64>(), 4),
        ],
        vec![
            "FLOPs per FP instruction".into(),
            r.roofline
                .flops_per_instruction
                .map(|x| num(x, 3))
                .unwrap_or("-".into()),
        ],
        vec![
            if ths.len() > 1 {
                format!("time (s), slowest of {} threads", ths.len())
            } else {
                "time (s)".into()
            },
            time_s.map(|t| num(t, 4)).unwrap_or("not measured".into()),
        ],
        vec![
            "native runs".into(),
            match hpcscope_core::project::Spread::from_times(&r.mix.native_times_s) {
                Some(sp) => format!(
                    "{}, spread {:.1} % (fastest - slowest over the median)",
                    sp.runs,
                    sp.relative() * 100.0
                ),
                None => format!("{}", r.mix.native_times_s.len()),
            },
        ],
        vec![
            "FP instructions by width".into(),
            crate::validate::access_widths(&r.mix, 0).describe(),
        ],
        vec![
            "GFLOP/s".into(),
            r.source_gflops.map(|g| num(g, 4)).unwrap_or("-".into()),
        ],
    ];
    for l in &r.roofline.levels {
        rows.push(vec![
            format!("bytes from {}", l.level),
            format!("{} (OI {} FLOP/B)", num(l.bytes, 4), num(l.oi, 3)),
        ]);
    }
    let hot: Vec<Vec<String>> = r.mix.variants[0]
        .functions
        .iter()
        .take(6)
        .map(|f| {
            vec![
                f.function.clone(),
                num(f.flops as f64, 4),
                num(f.instructions as f64, 4),
                num(f.bytes as f64, 4),
            ]
        })
        .collect();
    let mut body = html_table(&["metric", "value"], &rows);
    if !hot.is_empty() {
        body.push_str("<p>Where the work is, per function (emulated counts):</p>");
        body.push_str(&html_table(
            &["function", "FLOPs", "instructions", "bytes"],
            &hot,
        ));
    }
    out.push(Section {
        title: format!("{title_prefix}Application"),
        summary: r.verdict.clone(),
        body_html: body,
        svgs: vec![hpcscope_core::view::roofline_svg(
            &r.roofline,
            &format!("{} on {}", r.application, m.name),
        )],
    });
    if let Some(n) = &r.node {
        out.push(crate::node::node_section(n, m, title_prefix));
    }
    if !r.targets.is_empty() {
        out.push(projection_section(r, title_prefix));
    }
    if let Some(sw) = &r.sweep {
        out.push(sweep_section(sw, r, title_prefix));
    }
    if let Some(c) = &r.counters {
        out.push(hpcscope_counters::output::html_section(c, title_prefix));
    }
    if let Some(t) = &r.trace {
        for mut sec in hpcscope_trace::report::html_sections(&t.report, t.profile.as_ref()) {
            sec.title = format!("{title_prefix}{}", sec.title);
            out.push(sec);
        }
    }
    out.extend(notes_section(
        &r.notes,
        title_prefix,
        "What was assumed or could not be measured.",
    ));
    out
}

/// The sweep of `--scenario` as a report section.
pub fn sweep_section(sw: &Sweep, r: &AnalyzeResult, title_prefix: &str) -> Section {
    let rows: Vec<Vec<String>> = sw
        .points
        .iter()
        .map(|p| {
            vec![
                p.target.clone(),
                num(p.interval.lo, 4),
                num(p.interval.hi, 4),
                point_cell(&p.projection),
                format!("x{} - x{}", num(p.speedup.lo, 3), num(p.speedup.hi, 3)),
                format!("{} of {}", p.memory_bound_points, p.points),
                p.lower_bound_by.clone(),
                p.bytes.label().to_string(),
            ]
        })
        .collect();
    let best = sw
        .points
        .iter()
        .max_by(|a, b| a.interval.hi.total_cmp(&b.interval.hi));
    let summary = match best {
        Some(b) => format!(
            "{}: the highest projected upper bound is on {} ({} to {} GFLOP/s).",
            sw.name,
            b.target,
            num(b.interval.lo, 3),
            num(b.interval.hi, 3)
        ),
        None => sw.name.clone(),
    };
    let mut body = format!("<p>{}</p>", escape(&sw.description));
    if let Some(line) = sweep_resim_line(sw) {
        body.push_str(&format!("<p>{}</p>", escape(&line)));
    }
    for a in &sw.approximate {
        body.push_str(&format!("<p>approximate: {}</p>", escape(a)));
    }
    body.push_str(&html_table(
        &[
            "target",
            "lo GFLOP/s",
            "hi GFLOP/s",
            "point GFLOP/s (typical error)",
            "speed-up",
            "memory-bound points",
            "lower bound set by",
            "bytes/level",
        ],
        &rows,
    ));
    Section {
        title: format!("{title_prefix}Design-space sweep"),
        summary,
        body_html: body,
        svgs: vec![hpcscope_core::view::explore_svg(
            &sw.points,
            &format!("{}: {}", r.application, sw.name),
            r.source_gflops.unwrap_or(0.0),
        )],
    }
}

/// What the sweep re-simulated, in one sentence (none when no target needed it).
fn sweep_resim_line(sw: &Sweep) -> Option<String> {
    let r = sw.resimulation.as_ref()?;
    Some(format!(
        "re-simulated: {} design point(s) projected with bytes per level simulated for their target's own cache geometry ({} geometr{} simulated in the same emulation as the source's and the targets' caches, no extra run)",
        r.points,
        r.simulated,
        if r.simulated == 1 { "y" } else { "ies" }
    ))
}

/// The whole `analyze` report page.
pub fn page(r: &AnalyzeResult) -> String {
    html_page(
        &format!("hpcscope analysis: {}", r.application),
        &sections(r, "", true),
    )
}

/// What `analyze` prints: the verdicts (projections onto machines of another ISA apart,
/// with what they assume), the sweep, the notes.
pub fn text(r: &AnalyzeResult) -> String {
    let mut text = format!("{}\n", r.verdict);
    if let Some(n) = &r.node {
        // The node text lists the node projections.
        text.push_str(&crate::node::node_text(n));
    }
    let same: Vec<&TargetResult> = r
        .targets
        .iter()
        .filter(|t| t.same_isa && r.node.is_none())
        .collect();
    let other: Vec<&TargetResult> = r
        .targets
        .iter()
        .filter(|t| !t.same_isa && r.node.is_none())
        .collect();
    if !same.is_empty() && !other.is_empty() {
        text.push_str(&format!(
            "machines of the binary's ISA ({}):\n",
            r.source_profile.isa
        ));
    }
    for t in &same {
        text.push_str(&format!("  {}\n", t.verdict));
    }
    if !other.is_empty() {
        text.push_str(&format!(
            "machines of another ISA, ASSUMING the {} binary stands for their build:\n",
            r.source_profile.isa
        ));
        if let Some(a) = other.iter().find_map(|t| t.assumption.as_ref()) {
            text.push_str(&format!("  ({a})\n"));
        }
        for t in &other {
            text.push_str(&format!("  {}\n", t.verdict));
        }
    }
    if let Some(sw) = &r.sweep {
        text.push_str(&format!("sweep: {}\n", sw.name));
        if let Some(line) = sweep_resim_line(sw) {
            text.push_str(&format!("  {line}\n"));
        }
        for p in &sw.points {
            text.push_str(&format!(
                "  {}: {} to {} GFLOP/s, point {} (lower bound set by {}; bytes per level: {})\n",
                p.target,
                num(p.interval.lo, 4),
                num(p.interval.hi, 4),
                point_cell(&p.projection),
                p.lower_bound_by,
                p.bytes.label()
            ));
        }
        for a in &sw.approximate {
            text.push_str(&format!("  approximate: {a}\n"));
        }
    }
    for n in &r.notes {
        text.push_str(&format!("note: {n}\n"));
    }
    text
}

/// The report page of a partial analysis.
pub fn partial_page(p: &PartialAnalysis) -> String {
    let mut sections = vec![machine_section(&p.source_machine, "")];
    let rows: Vec<Vec<String>> = p
        .native_runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                (i + 1).to_string(),
                num(r.wall_s, 4),
                num(r.user_s, 4),
                num(r.sys_s, 4),
                r.exit_status
                    .map_or("killed by a signal".into(), |c| c.to_string()),
            ]
        })
        .collect();
    sections.push(Section {
        title: "What could not be done".into(),
        summary: "The program was not characterized: no FLOPs, bytes per level, rooflines or projections. What could be measured natively follows.".into(),
        body_html: format!(
            "<pre>{}</pre>{}",
            escape(&p.not_characterized),
            html_table(&["run", "wall (s)", "user (s)", "sys (s)", "exit status"], &rows)
        ),
        svgs: vec![],
    });
    if let Some(c) = &p.counters {
        sections.push(hpcscope_counters::output::html_section(c, ""));
    }
    if let Some(t) = &p.trace {
        sections.extend(hpcscope_trace::report::html_sections(
            &t.report,
            t.profile.as_ref(),
        ));
    }
    sections.extend(notes_section(
        &p.notes,
        "",
        "What else could not be measured.",
    ));
    let name = Path::new(&p.command[0])
        .file_name()
        .map_or("program".into(), |s| s.to_string_lossy().into_owned());
    html_page(&format!("hpcscope analysis: {name} (partial)"), &sections)
}

/// What a partial analysis prints.
pub fn partial_text(p: &PartialAnalysis) -> String {
    let mut text = String::new();
    match p.median_wall_s {
        Some(t) => text.push_str(&format!(
            "measured natively: median wall time {} s over {} run(s)\n",
            num(t, 4),
            p.successful_runs()
        )),
        None => text.push_str("no successful native run\n"),
    }
    for n in &p.notes {
        text.push_str(&format!("note: {n}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcscope_core::explore::{Transform, apply};
    use hpcscope_core::project::{Options, Side, project};
    use hpcscope_core::{AppMetrics, Precision, library};

    /// A target given as a file or changed by a scenario has an id that names no built-in
    /// machine; the projection chart is still drawn (it used to vanish: the machine was
    /// looked up again by id).
    #[test]
    fn the_projection_chart_of_a_transformed_target_is_drawn() {
        let source = library::builtin("thunderx2").unwrap();
        let base = library::builtin("a64fx").unwrap();
        let lookup = |id: &str| library::builtin(id);
        let mut target = apply(&base, &Transform::VectorBits(256), &lookup).unwrap();
        target.id = "my-a64fx-256.toml".into();
        assert!(library::builtin(&target.id).is_err());
        let app = AppMetrics {
            flops: 1e10,
            fp_instructions: 5e9,
            levels: vec!["L1".into(), "L2".into(), "MM".into()],
            bytes: vec![4e10, 1e10, 5e9],
            time_s: Some(2.0),
        };
        let p = project(
            Side {
                machine: &source,
                threads: std::slice::from_ref(&app),
                origin: "src",
            },
            5.0,
            Side {
                machine: &target,
                threads: std::slice::from_ref(&app),
                origin: "tgt",
            },
            Precision::F64,
            Options::default(),
        )
        .unwrap();
        let t = TargetResult {
            machine: target.id.clone(),
            name: target.name.clone(),
            caches_from: "the same binary".into(),
            same_isa: true,
            assumption: None,
            verdict: String::new(),
            projection: p,
            target,
        };
        let svg = best_projection_svg(&source, std::slice::from_ref(&t))
            .expect("the chart is drawn from the target machine itself");
        assert!(
            svg.starts_with("<svg") && svg.contains(&source.name),
            "{svg}"
        );
    }
}
