//! The roofline chart of one analysis and the projection chart (source and target rooflines
//! overlaid, projected points and interval), after the thesis' figures 6.6 and 6.9-6.16.

use crate::node::NodeRoofline;
use crate::placement::Placed;
use crate::project::Projection;
use crate::roofline::{Ceilings, ComputeLimit, RooflineAnalysis, Scope};
use hpcscope_report::fmt::num;
use hpcscope_report::{Format, Table};

use hpcscope_report::axis::{Kind, fmt_value, log_domain};
use hpcscope_report::chart::{
    Frame, GREENS, INK, LEGEND_X, LegendEntry, MUTED, PALETTE, REDS, Rect, Swatch, TOP, WIDTH,
    around_marker, axis, caption_lines, draw_axes, draw_caption, draw_legend, draw_title, join_and,
    place_label_avoiding,
};
use hpcscope_report::roofs::{
    Obstacles, Roof, RoofSet, distinct, draw_roofs, label_roofs, roof_label,
};
use hpcscope_report::svg::{Anchor, Shape, Stroke, Svg, TextStyle};

const X_LABEL: &str = "Operational intensity (FLOP/byte, log scale)";
const Y_LABEL: &str = "Performance (GFLOP/s, log scale)";
const MARKER_R: f64 = 5.0;
/// The source machine's roofs are dashed, so that they differ from the target's without
/// colour.
const SOURCE_DASH: &str = "8 3";

fn scope_name(s: Scope) -> &'static str {
    match s {
        Scope::Core => "single-core ceilings",
        Scope::Node => "per-core share of the node ceilings",
    }
}

fn positive(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

/// Log-log domains for the given x and y values: at least a few decades left of the
/// ridges and below the peaks, so that the slopes are visible.
fn domains(xs: &[f64], ys: &[f64]) -> ((f64, f64), (f64, f64)) {
    let fx: Vec<f64> = xs.iter().copied().filter(|v| positive(*v)).collect();
    let fy: Vec<f64> = ys.iter().copied().filter(|v| positive(*v)).collect();
    let xmin = fx.iter().copied().fold(f64::INFINITY, f64::min);
    let xmax = fx.iter().copied().fold(0.0, f64::max);
    let ymin = fy.iter().copied().fold(f64::INFINITY, f64::min);
    let ymax = fy.iter().copied().fold(0.0, f64::max);
    let x = log_domain([xmin / 2.5, xmax * 2.5]);
    let y = log_domain([ymin / 2.5, (ymax / 30.0).min(ymin), ymax * 1.45]);
    (x, y)
}

/// A log-log roofline chart of one analysis.
///
/// x is the operational intensity (FLOP/byte), y GFLOP/s. Each memory level with a bandwidth
/// gives a line `bw x OI` up to the machine's peak (labelled `L1 36.2 GB/s`); the raw peak is
/// a solid horizontal line and the peak weighted by the binary's instruction mix (eq. 6.2) a
/// dotted one. The application has one marker per level at `(OI_k, achieved GFLOP/s)`, or at
/// the attainable value (hollow) when no time was measured. Levels with an infinite OI (no
/// byte served from them or beyond) have no marker; the caption says so.
#[allow(clippy::too_many_lines)]
pub fn roofline_svg(a: &RooflineAnalysis, title: &str) -> String {
    let c = &a.ceilings;
    let f = Frame::standard();
    let achieved = a.achieved_gflops.filter(|v| positive(*v));
    let show_weighted = distinct(a.weighted_peak_gflops, c.peak_gflops);

    // Points: (level index, OI, GFLOP/s).
    let mut points = Vec::new();
    let mut skipped = Vec::new();
    for (i, l) in a.levels.iter().enumerate() {
        let y = achieved.unwrap_or(l.attainable_gflops);
        if positive(l.oi) && positive(y) {
            points.push((i, l.oi, y));
        } else {
            skipped.push(l.level.clone());
        }
    }
    let mut xv: Vec<f64> = points.iter().map(|p| p.1).collect();
    let mut yv: Vec<f64> = points.iter().map(|p| p.2).collect();
    for l in &a.levels {
        xv.push(c.peak_gflops / l.bandwidth_gbs);
        xv.push(a.weighted_peak_gflops / l.bandwidth_gbs);
    }
    yv.push(c.peak_gflops);
    yv.push(a.weighted_peak_gflops);
    if let Some(v) = achieved {
        yv.push(v);
    }
    let ceilings: Vec<&crate::machine::CarmCeiling> = c
        .compute_ceilings
        .iter()
        .filter(|k| positive(k.gflops) && distinct(k.gflops, c.peak_gflops))
        .collect();
    yv.extend(ceilings.iter().map(|k| k.gflops));
    let ((xlo, xhi), (ylo, yhi)) = domains(&xv, &yv);
    let (xs, xticks) = axis(Kind::Log, xlo, xhi, f.left, f.right);
    let (ys, yticks) = axis(Kind::Log, ylo, yhi, f.bottom, f.top);

    // Caption.
    let mut caption = String::from(
        "How to read: each line is the best performance a level's bandwidth allows at a given operational intensity; the application's points sit below the lowest line that binds it.",
    );
    caption.push_str(" The solid black line is the machine's peak");
    if show_weighted {
        caption.push_str(
            "; the dotted line is that peak scaled by the binary's instruction mix (FLOPs per FP instruction over the maximum, eq. 6.2)",
        );
    }
    if !ceilings.is_empty() {
        caption.push_str(&format!(
            "; dashed grey lines are the compute ceilings without a feature ({}): code that lacks it stays below",
            join_and(&ceilings.iter().map(|k| k.kind.name().to_string()).collect::<Vec<_>>())
        ));
    }
    caption.push('.');
    let binding = format!(
        " Binding ceiling: the {} roofline, {} GFLOP/s attainable ({}-bound)",
        a.binding_level,
        fmt_value(a.binding_gflops),
        a.binding_bound
    );
    caption.push_str(&binding);
    match (achieved, a.efficiency) {
        (Some(v), Some(e)) => caption.push_str(&format!(
            "; measured {} GFLOP/s, {:.0}% of it.",
            fmt_value(v),
            e * 100.0
        )),
        _ => caption.push_str(
            ". No time was measured: hollow markers sit at each level's attainable value.",
        ),
    }
    if !skipped.is_empty() {
        caption.push_str(&format!(
            " No marker for {}: no byte comes from {} or beyond, so its operational intensity is infinite.",
            join_and(&skipped),
            if skipped.len() == 1 { "that level" } else { "those levels" }
        ));
    }

    let subtitle = format!(
        "{} · {} · {}{}",
        c.machine,
        c.precision,
        scope_name(c.scope),
        a.flops_per_instruction
            .map(|fpi| format!(
                " · {} FLOPs per FP instruction (max {})",
                fmt_value(fpi),
                fmt_value(a.max_flops_per_instruction)
            ))
            .unwrap_or_default()
    );
    let mut svg = Svg::new(WIDTH, title, &caption);
    draw_title(&mut svg, title, &subtitle);
    draw_axes(
        &mut svg,
        &f,
        (&xs, &xticks),
        (&ys, &yticks),
        X_LABEL,
        Y_LABEL,
    );

    let set = RoofSet {
        roofs: a
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| Roof {
                bw: l.bandwidth_gbs,
                color: PALETTE[i % PALETTE.len()],
                label: roof_label("", &l.level, l.bandwidth_gbs),
                class: "roof".into(),
                dash: None,
            })
            .collect(),
        peak: c.peak_gflops,
        weighted: show_weighted.then_some(a.weighted_peak_gflops),
        peak_color: "#000000",
        prefix: String::new(),
    };
    let mut obstacles = Obstacles::default();
    let roof_labels = draw_roofs(&mut svg, &f, &xs, &ys, &[set], &mut obstacles);
    draw_compute_ceilings(&mut svg, &f, &xs, &ys, &ceilings, a, &mut obstacles);

    // Efficiency gap at the binding level: a dashed drop from the roof to the point.
    let mut taken: Vec<Rect> = obstacles.rects.clone();
    let binding_oi = a
        .levels
        .iter()
        .find(|l| l.level == a.binding_level)
        .map(|l| l.oi)
        .filter(|v| positive(*v));
    let mut gap_label = None;
    if let (Some(v), Some(oi), Some(e)) = (achieved, binding_oi, a.efficiency)
        && ys.contains(a.binding_gflops)
        && xs.contains(oi)
    {
        let x = xs.px(oi);
        let (y0, y1) = (ys.px(v), ys.px(a.binding_gflops));
        svg.line(
            x,
            y0,
            x,
            y1,
            Stroke::dashed(MUTED, 1.2, "4 3"),
            Some("efficiency-gap"),
        );
        svg.line(x - 5.0, y1, x + 5.0, y1, Stroke::solid(MUTED, 1.5), None);
        obstacles.segments.push(((x, y0), (x, y1)));
        gap_label = Some((
            x,
            (y0 + y1) / 2.0 + 4.0,
            format!("{:.0}% of the {} roof", e * 100.0, a.binding_level),
        ));
    }

    // Markers.
    svg.open_group("application");
    for &(i, oi, y) in &points {
        let (px, py) = (xs.px(oi), ys.px(y));
        svg.marker(
            Shape::Circle,
            px,
            py,
            MARKER_R,
            PALETTE[i % PALETTE.len()],
            achieved.is_some(),
            Some("point-app"),
        );
        let r = Rect::around(px, py, MARKER_R + 1.0);
        taken.push(r);
        obstacles.rects.push(r);
    }
    svg.close_group();
    svg.open_group("point-labels");
    for &(i, oi, y) in &points {
        let text = format!("OI {}", a.levels[i].level);
        let (x, y, anchor) = place_label_avoiding(
            &f,
            &mut taken,
            &obstacles.segments,
            (xs.px(oi), ys.px(y)),
            &text,
            11.0,
            &around_marker(MARKER_R),
        );
        obstacles.rects.push(*taken.last().expect("just placed"));
        svg.text(
            x,
            y,
            &text,
            &TextStyle {
                anchor,
                fill: INK,
                halo: true,
                class: Some("point-label"),
                ..TextStyle::default()
            },
        );
    }
    if let Some((x, y, text)) = gap_label {
        let cands = [
            (6.0, 0.0, Anchor::Start),
            (-6.0, 0.0, Anchor::End),
            (6.0, -14.0, Anchor::Start),
            (6.0, 14.0, Anchor::Start),
        ];
        let (x, y, anchor) = place_label_avoiding(
            &f,
            &mut taken,
            &obstacles.segments,
            (x, y),
            &text,
            10.5,
            &cands,
        );
        obstacles.rects.push(*taken.last().expect("just placed"));
        svg.text(
            x,
            y,
            &text,
            &TextStyle {
                size: 10.5,
                anchor,
                fill: MUTED,
                italic: true,
                halo: true,
                class: Some("efficiency-label"),
                ..TextStyle::default()
            },
        );
    }
    svg.close_group();
    label_roofs(&mut svg, &f, &xs, &ys, roof_labels, &mut obstacles);

    // Legend.
    let mut legend = vec![LegendEntry::heading("Rooflines (bandwidth × OI)")];
    for (i, l) in a.levels.iter().enumerate() {
        legend.push(LegendEntry::line(
            PALETTE[i % PALETTE.len()],
            2.0,
            None,
            roof_label("", &l.level, l.bandwidth_gbs),
        ));
    }
    legend.push(LegendEntry::line(
        "#000000",
        1.8,
        None,
        format!("Peak {} GFLOP/s", fmt_value(c.peak_gflops)),
    ));
    if show_weighted {
        legend.push(LegendEntry::line(
            "#000000",
            2.0,
            Some("2 3"),
            format!(
                "{} {} GFLOP/s",
                weighted_label(a),
                fmt_value(a.weighted_peak_gflops)
            ),
        ));
    }
    for k in &ceilings {
        legend.push(LegendEntry::line(
            CEILING_COLOR,
            1.4,
            Some(CEILING_DASH),
            format!(
                "{} {} GFLOP/s ({})",
                k.kind.name(),
                fmt_value(k.gflops),
                k.kernel
            ),
        ));
    }
    legend.push(LegendEntry::heading("Application"));
    legend.push(LegendEntry::marker(
        Shape::Circle,
        PALETTE[0],
        achieved.is_some(),
        if achieved.is_some() {
            "Measured GFLOP/s at each level's OI (colour = level)"
        } else {
            "Attainable GFLOP/s at each level's OI (no time measured)"
        },
    ));
    let legend_bottom = draw_legend(&mut svg, LEGEND_X, TOP, WIDTH - LEGEND_X - 10.0, &legend);

    let lines = caption_lines(&caption);
    let cap_y = (f.bottom + 66.0).max(legend_bottom + 18.0);
    let bottom = draw_caption(&mut svg, cap_y, &lines);
    svg.finish(bottom + 6.0)
}

/// Colour and dash of the compute ceilings below the peak.
const CEILING_COLOR: &str = "#6b6b6b";
const CEILING_DASH: &str = "6 3";

/// The compute ceilings below the peak (cache-aware roofline), those of one value merged:
/// `(GFLOP/s, names joined by " = ")`.
fn merged_ceilings(ceilings: &[&crate::machine::CarmCeiling]) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = Vec::new();
    for k in ceilings {
        match out.iter_mut().find(|(g, _)| !distinct(*g, k.gflops)) {
            Some((_, names)) => {
                names.push_str(" = ");
                names.push_str(k.kind.name());
            }
            None => out.push((k.gflops, k.kind.name().to_string())),
        }
    }
    out
}

/// The compute ceilings below the peak (cache-aware roofline): each a horizontal dashed line
/// from the fastest level's roof to the right edge, labelled just right of that roof (the
/// peaks' labels sit at the right edge).
fn draw_compute_ceilings(
    svg: &mut Svg,
    f: &Frame,
    xs: &hpcscope_report::axis::Scale,
    ys: &hpcscope_report::axis::Scale,
    ceilings: &[&crate::machine::CarmCeiling],
    a: &RooflineAnalysis,
    obstacles: &mut Obstacles,
) {
    if ceilings.is_empty() {
        return;
    }
    let fastest = a
        .levels
        .iter()
        .map(|l| l.bandwidth_gbs)
        .filter(|b| positive(*b))
        .fold(0.0, f64::max);
    svg.open_group("compute-ceilings");
    for (gflops, names) in merged_ceilings(ceilings) {
        if !ys.contains(gflops) {
            continue;
        }
        let y = ys.px(gflops);
        let ridge = if fastest > 0.0 { gflops / fastest } else { 0.0 };
        let x0 = if xs.contains(ridge) {
            xs.px(ridge)
        } else {
            f.left
        };
        svg.line(
            x0,
            y,
            f.right,
            y,
            Stroke::dashed(CEILING_COLOR, 1.4, CEILING_DASH),
            Some("compute-ceiling"),
        );
        obstacles.segments.push(((x0, y), (f.right, y)));
        let text = format!("{names} {}", fmt_value(gflops));
        let tx = x0 + 8.0;
        svg.text(
            tx,
            y + 13.0,
            &text,
            &TextStyle {
                size: 10.5,
                anchor: Anchor::Start,
                fill: CEILING_COLOR,
                halo: true,
                class: Some("compute-ceiling-label"),
                ..TextStyle::default()
            },
        );
        obstacles
            .rects
            .push(Rect::of_text(tx, y + 13.0, &text, 10.5, Anchor::Start));
    }
    svg.close_group();
}

/// Source and target rooflines overlaid, with the projection.
///
/// The source machine is drawn in greens, the target in reds (raw peaks solid, weighted peaks
/// dotted). Filled green circles: the source binary's measured GFLOP/s at each level's OI.
/// Red crosses: the projected points, at `(target OI_k, projected GFLOP/s)`, one per (OI
/// level, roofline level) pair, coloured by roofline level. The projected interval `[lo, hi]`
/// is a shaded band and a bar at the right edge. The legend lists the points. In node scope
/// (`p.points` empty), every thread's points are drawn with its per-thread GFLOP/s, the band
/// is the node interval divided by the thread count, and the caption gives the node interval
/// (sum over threads, eq. 7.5).
///
/// `source` and `target` are the machines' ceilings in the projection's precision and scope
/// (`Ceilings::of(machine, p.precision, p.options.scope)`); the weighted peaks come from `p`.
#[allow(clippy::too_many_lines)]
pub fn projection_svg(p: &Projection, source: &Ceilings, target: &Ceilings, title: &str) -> String {
    let mut f = Frame::standard();
    // Room for the interval bar and its labels between the plot and the legend.
    f.right -= 40.0;
    let node = p.points.is_empty() && !p.threads.is_empty();
    let nthreads = p.threads.len().max(1) as f64;
    // (OI level, OI source, source GFLOP/s) and (OI level, roof level, OI target, GFLOP/s).
    let mut src_pts: Vec<(String, f64, f64)> = Vec::new();
    let mut tgt_pts: Vec<(String, String, f64, f64)> = Vec::new();
    if node {
        for t in &p.threads {
            for pt in &t.points {
                src_pts.push((pt.oi_level.clone(), pt.oi_source, t.source_gflops));
                tgt_pts.push((
                    pt.oi_level.clone(),
                    pt.roof_level.clone(),
                    pt.oi_target,
                    pt.gflops,
                ));
            }
        }
    } else {
        for pt in &p.points {
            if !src_pts.iter().any(|s| s.0 == pt.oi_level) {
                src_pts.push((pt.oi_level.clone(), pt.oi_source, p.source_gflops));
            }
            tgt_pts.push((
                pt.oi_level.clone(),
                pt.roof_level.clone(),
                pt.oi_target,
                pt.gflops,
            ));
        }
    }
    let (band_lo, band_hi) = if node {
        (p.interval.lo / nthreads, p.interval.hi / nthreads)
    } else {
        (p.interval.lo, p.interval.hi)
    };
    let skipped_src: Vec<String> = dedup(
        src_pts
            .iter()
            .filter(|s| !(positive(s.1) && positive(s.2)))
            .map(|s| s.0.clone()),
    );
    let skipped_tgt: Vec<String> = dedup(
        tgt_pts
            .iter()
            .filter(|s| !(positive(s.2) && positive(s.3)))
            .map(|s| s.0.clone()),
    );
    src_pts.retain(|s| positive(s.1) && positive(s.2));
    tgt_pts.retain(|s| positive(s.2) && positive(s.3));

    let src_w = distinct(p.source_ceiling_gflops, source.peak_gflops);
    let tgt_w = distinct(p.target_ceiling_gflops, target.peak_gflops);
    let mut xv: Vec<f64> = src_pts.iter().map(|s| s.1).collect();
    xv.extend(tgt_pts.iter().map(|s| s.2));
    let mut yv: Vec<f64> = src_pts.iter().map(|s| s.2).collect();
    yv.extend(tgt_pts.iter().map(|s| s.3));
    yv.extend([band_lo, band_hi]);
    for (c, w) in [
        (source, p.source_ceiling_gflops),
        (target, p.target_ceiling_gflops),
    ] {
        yv.extend([c.peak_gflops, w]);
        for bw in &c.bandwidth_gbs {
            xv.push(c.peak_gflops / bw);
            xv.push(w / bw);
        }
    }
    let ((xlo, xhi), (ylo, yhi)) = domains(&xv, &yv);
    let (xs, xticks) = axis(Kind::Log, xlo, xhi, f.left, f.right);
    let (ys, yticks) = axis(Kind::Log, ylo, yhi, f.bottom, f.top);

    let sname = &p.source_machine;
    let tname = &p.target_machine;
    let mut caption = format!(
        "How to read: green dashed lines are the source machine ({sname}), red solid lines the target ({tname}); each line is the best performance a level's bandwidth allows at a given operational intensity, solid horizontal lines are the peaks and dotted ones the peaks weighted by each binary's instruction mix. "
    );
    if node {
        caption.push_str(&format!(
            "Green circles: each thread's share of the measured source performance at its operational intensities; red crosses: each thread's projected points. The projection keeps each thread's efficiency against its level's roofline and applies it on the target (eqs. 7.1-7.4). Node interval, the sum over the {} threads (eq. 7.5): [{}, {}] GFLOP/s; the band shows it divided by the thread count.",
            p.threads.len(),
            fmt_value(p.interval.lo),
            fmt_value(p.interval.hi)
        ));
    } else {
        caption.push_str(&format!(
            "Green circles: the measured source performance ({} GFLOP/s) at each level's operational intensity; red crosses: the projected points, one per pair of OI level and roofline level. The projection keeps the source's efficiency against each roofline and applies it on the target (eq. 6.4); the shaded band is the projected interval [{}, {}] GFLOP/s.",
            fmt_value(p.source_gflops),
            fmt_value(p.interval.lo),
            fmt_value(p.interval.hi)
        ));
    }
    if let Some(t) = p.target_time_s {
        let (a, b) = (fmt_value(t.lo), fmt_value(t.hi));
        if a == b {
            caption.push_str(&format!(" Projected time of the target region: {a} s."));
        } else {
            caption.push_str(&format!(
                " Projected time of the target region: {a} to {b} s."
            ));
        }
    }
    for (side, sk) in [("source", &skipped_src), ("target", &skipped_tgt)] {
        if !sk.is_empty() {
            caption.push_str(&format!(
                " No {side} point for OI {}: no byte comes from there or beyond (infinite operational intensity).",
                join_and(sk)
            ));
        }
    }

    let subtitle = format!(
        "{sname} → {tname} · {} · {} · {} points",
        p.precision,
        scope_name(p.options.scope),
        if node {
            p.threads.iter().map(|t| t.points.len()).sum::<usize>()
        } else {
            p.points.len()
        }
    );
    let mut svg = Svg::new(WIDTH, title, &caption);
    draw_title(&mut svg, title, &subtitle);
    draw_axes(
        &mut svg,
        &f,
        (&xs, &xticks),
        (&ys, &yticks),
        X_LABEL,
        Y_LABEL,
    );

    // Interval band under everything else.
    let band_ok = positive(band_lo) && positive(band_hi);
    if band_ok {
        let (y0, y1) = (ys.px(band_hi), ys.px(band_lo));
        svg.rect(
            f.left,
            y0,
            f.right - f.left,
            (y1 - y0).max(1.0),
            REDS[1],
            0.12,
            None,
            Some("interval-band"),
        );
    }

    let shade = |fam: &[&'static str; 4], c: &Ceilings, level: &str| -> &'static str {
        let i = c.levels.iter().position(|l| l == level).unwrap_or(0);
        fam[i % fam.len()]
    };
    let set_of =
        |c: &Ceilings, fam: &[&'static str; 4], w: f64, show_w: bool, side: &str| RoofSet {
            roofs: c
                .levels
                .iter()
                .zip(&c.bandwidth_gbs)
                .map(|(l, bw)| Roof {
                    bw: *bw,
                    color: shade(fam, c, l),
                    label: roof_label("", l, *bw),
                    class: format!("roof-{side}"),
                    dash: (side == "source").then_some(SOURCE_DASH),
                })
                .collect(),
            peak: c.peak_gflops,
            weighted: show_w.then_some(w),
            peak_color: fam[0],
            prefix: format!("{side} "),
        };
    let sets = [
        set_of(source, &GREENS, p.source_ceiling_gflops, src_w, "source"),
        set_of(target, &REDS, p.target_ceiling_gflops, tgt_w, "target"),
    ];
    let mut obstacles = Obstacles::default();
    let roof_labels = draw_roofs(&mut svg, &f, &xs, &ys, &sets, &mut obstacles);

    // Interval bar in a gutter right of the plot, with its bounds beside it.
    let mut taken: Vec<Rect> = obstacles.rects.clone();
    if band_ok {
        let x = f.right + 12.0;
        let (y0, y1) = (ys.px(band_hi), ys.px(band_lo));
        let s = Stroke::solid(REDS[0], 2.5);
        svg.open_group("interval");
        svg.line(x, y0, x, y1, s, Some("interval-bar"));
        svg.line(x - 5.0, y0, x + 5.0, y0, s, None);
        svg.line(x - 5.0, y1, x + 5.0, y1, s, None);
        let style = TextStyle {
            fill: REDS[0],
            bold: true,
            class: Some("interval-label"),
            ..TextStyle::default()
        };
        let (hi_t, lo_t) = (fmt_value(band_hi), fmt_value(band_lo));
        if let Some(pe) = p
            .point
            .as_ref()
            .map(|e| if node { e.gflops / nthreads } else { e.gflops })
            .filter(|v| v.is_finite() && *v > 0.0)
        {
            svg.marker(
                Shape::Circle,
                x,
                ys.px(pe),
                4.0,
                REDS[0],
                false,
                Some("point-estimate"),
            );
        }
        if hi_t == lo_t {
            svg.text(x + 9.0, (y0 + y1) / 2.0 + 4.0, &hi_t, &style);
        } else {
            // Keep the two labels apart when the bar is short.
            let ys_l =
                hpcscope_report::chart::spread(&[y0 + 4.0, y1 + 4.0], 13.0, f.top, f.bottom + 20.0);
            svg.text(x + 9.0, ys_l[0], &format!("hi {hi_t}"), &style);
            svg.text(x + 9.0, ys_l[1], &format!("lo {lo_t}"), &style);
        }
        svg.close_group();
    }

    // Markers: source circles, projected crosses.
    let r = if node { 3.5 } else { MARKER_R };
    svg.open_group("source-points");
    for (_, oi, y) in &src_pts {
        let (px, py) = (xs.px(*oi), ys.px(*y));
        svg.marker(
            Shape::Circle,
            px,
            py,
            r,
            GREENS[1],
            true,
            Some("point-source"),
        );
        let b = Rect::around(px, py, r + 1.0);
        taken.push(b);
        obstacles.rects.push(b);
    }
    svg.close_group();
    svg.open_group("projected-points");
    for (_, roof, oi, y) in &tgt_pts {
        let (px, py) = (xs.px(*oi), ys.px(*y));
        svg.marker(
            Shape::Cross,
            px,
            py,
            r,
            shade(&REDS, target, roof),
            true,
            Some("point-projected"),
        );
        let b = Rect::around(px, py, r + 1.0);
        taken.push(b);
        obstacles.rects.push(b);
    }
    svg.close_group();

    // Labels: bar bounds, then one "OI k" per group of points at the same OI.
    svg.open_group("point-labels");
    let mut groups: Vec<(String, f64, f64, &'static str)> = Vec::new();
    for (lvl, oi, y) in &src_pts {
        if !groups.iter().any(|g| g.0 == *lvl && g.3 == GREENS[0]) {
            groups.push((lvl.clone(), *oi, *y, GREENS[0]));
        }
    }
    for (lvl, _, oi, y) in &tgt_pts {
        match groups.iter_mut().find(|g| g.0 == *lvl && g.3 == REDS[0]) {
            // Label the topmost cross of the group.
            Some(g) => g.2 = g.2.max(*y),
            None => groups.push((lvl.clone(), *oi, *y, REDS[0])),
        }
    }
    for (lvl, oi, y, color) in &groups {
        let text = format!("OI {lvl}");
        let (x, y, anchor) = place_label_avoiding(
            &f,
            &mut taken,
            &obstacles.segments,
            (xs.px(*oi), ys.px(*y)),
            &text,
            11.0,
            &around_marker(r),
        );
        obstacles.rects.push(*taken.last().expect("just placed"));
        svg.text(
            x,
            y,
            &text,
            &TextStyle {
                anchor,
                fill: color,
                halo: true,
                class: Some("point-label"),
                ..TextStyle::default()
            },
        );
    }
    svg.close_group();
    label_roofs(&mut svg, &f, &xs, &ys, roof_labels, &mut obstacles);

    // Legend, with the points as a small table.
    let mut legend = vec![LegendEntry::heading(format!("Source: {sname}"))];
    legend.push(LegendEntry::line(
        GREENS[1],
        1.8,
        Some(SOURCE_DASH),
        "Bandwidth rooflines (darkest = closest to the core)",
    ));
    legend.push(LegendEntry::line(
        GREENS[0],
        1.8,
        None,
        format!("Peak {} GFLOP/s", fmt_value(source.peak_gflops)),
    ));
    if src_w {
        legend.push(LegendEntry::line(
            GREENS[0],
            2.0,
            Some("2 3"),
            format!(
                "Weighted peak {} GFLOP/s",
                fmt_value(p.source_ceiling_gflops)
            ),
        ));
    }
    legend.push(LegendEntry::marker(
        Shape::Circle,
        GREENS[1],
        true,
        if node {
            format!(
                "Measured, per thread (node {} GFLOP/s)",
                fmt_value(p.source_gflops)
            )
        } else {
            format!("Measured {} GFLOP/s", fmt_value(p.source_gflops))
        },
    ));
    legend.push(LegendEntry::heading(format!("Target: {tname}")));
    legend.push(LegendEntry::line(REDS[1], 2.0, None, "Bandwidth rooflines"));
    legend.push(LegendEntry::line(
        REDS[0],
        1.8,
        None,
        format!("Peak {} GFLOP/s", fmt_value(target.peak_gflops)),
    ));
    if tgt_w {
        legend.push(LegendEntry::line(
            REDS[0],
            2.0,
            Some("2 3"),
            format!(
                "Weighted peak {} GFLOP/s",
                fmt_value(p.target_ceiling_gflops)
            ),
        ));
    }
    legend.push(LegendEntry::marker(
        Shape::Cross,
        REDS[1],
        true,
        "Projected point (colour = roofline level)",
    ));
    legend.push(LegendEntry {
        swatch: Swatch::Band {
            color: REDS[1].into(),
        },
        label: if node {
            "Node interval / threads (bar: per-thread GFLOP/s)".into()
        } else {
            "Projected interval (bar: [lo, hi])".into()
        },
    });
    if p.point.is_some() {
        legend.push(LegendEntry::marker(
            Shape::Circle,
            REDS[0],
            false,
            "Point estimate (hollow circle on the bar)",
        ));
    }
    let lx = f.right + 80.0;
    let mut y = draw_legend(&mut svg, lx, TOP, WIDTH - lx - 10.0, &legend) + 8.0;
    // Table of points.
    let mut rows: Vec<(String, String)> = Vec::new();
    if node {
        for t in p.threads.iter().take(8) {
            rows.push((
                format!("thread {}", t.thread),
                format!("{}-{}", fmt_value(t.interval.lo), fmt_value(t.interval.hi)),
            ));
        }
        if p.threads.len() > 8 {
            rows.push((
                format!("… {} more threads", p.threads.len() - 8),
                String::new(),
            ));
        }
        rows.push((
            "node (sum)".into(),
            format!("{}-{}", fmt_value(p.interval.lo), fmt_value(p.interval.hi)),
        ));
    } else {
        for pt in p.points.iter().take(12) {
            rows.push((
                format!("OI {} · {} roof", pt.oi_level, pt.roof_level),
                fmt_value(pt.gflops),
            ));
        }
        if p.points.len() > 12 {
            rows.push((format!("… {} more", p.points.len() - 12), String::new()));
        }
        rows.push((
            "interval".into(),
            format!("{}-{}", fmt_value(p.interval.lo), fmt_value(p.interval.hi)),
        ));
    }
    if let Some(e) = &p.point {
        rows.push((
            "point estimate".into(),
            format!("{}{}", fmt_value(e.gflops), e.error_suffix()),
        ));
    }
    svg.open_group("points-table");
    svg.text(
        lx,
        y + 11.0,
        "Projected GFLOP/s",
        &TextStyle {
            bold: true,
            ..TextStyle::default()
        },
    );
    y += 16.0;
    let right = WIDTH - 12.0;
    let n = rows.len();
    for (i, (k, v)) in rows.iter().enumerate() {
        let last = i + 1 == n;
        if last {
            svg.line(
                lx,
                y + 2.0,
                right,
                y + 2.0,
                Stroke::solid("#bbbbbb", 1.0),
                None,
            );
        }
        let style = TextStyle {
            size: 10.5,
            bold: last,
            ..TextStyle::default()
        };
        svg.text(lx, y + 13.0, k, &style);
        svg.text(
            right,
            y + 13.0,
            v,
            &TextStyle {
                anchor: Anchor::End,
                monospace: true,
                ..style.clone()
            },
        );
        y += 14.0;
    }
    svg.close_group();

    let lines = caption_lines(&caption);
    let cap_y = (f.bottom + 66.0).max(y + 18.0);
    let bottom = draw_caption(&mut svg, cap_y, &lines);
    svg.finish(bottom + 6.0)
}

/// A placement on the rooflines in `format` (the `roofline` command's output).
pub fn render(format: Format, placed: &Placed) -> Result<String, serde_json::Error> {
    match placed {
        Placed::Whole { analysis, title } => render_whole(format, analysis, title),
        Placed::PerThread {
            node,
            application,
            machine,
        } => render_threads(format, node, application, machine),
    }
}

/// One analysis: its levels, ceilings and binding ceiling.
fn render_whole(
    format: Format,
    an: &RooflineAnalysis,
    title: &str,
) -> Result<String, serde_json::Error> {
    let mut t = Table::new(&[
        "level",
        "GB/s",
        "bytes",
        "OI (FLOP/B)",
        "ridge OI",
        "attainable GF/s",
        "bound",
    ]);
    for l in &an.levels {
        t.row(vec![
            l.level.clone(),
            num(l.bandwidth_gbs, 4),
            num(l.bytes, 4),
            num(l.oi, 4),
            num(l.ridge_oi, 4),
            num(l.attainable_gflops, 4),
            l.bound.to_string(),
        ]);
    }
    let mut pre = vec![
        title.to_string(),
        format!(
            "peak {} GFLOP/s; FLOPs per FP instruction {} of at most {} -> weighted peak {} GFLOP/s{}",
            num(an.ceilings.peak_gflops, 4),
            an.flops_per_instruction
                .map(|x| num(x, 4))
                .unwrap_or_else(|| "-".into()),
            num(an.max_flops_per_instruction, 3),
            num(an.weighted_peak_gflops, 4),
            match an.compute_limit_below_peak() {
                Some(ComputeLimit::Chains) => " (set by the loops' dependency chains)",
                Some(ComputeLimit::Divider) => " (set by the divider)",
                _ => "",
            }
        ),
    ];
    if !an.ceilings.compute_ceilings.is_empty() {
        pre.push(format!(
            "compute ceilings below the peak: {}",
            an.ceilings
                .compute_ceilings
                .iter()
                .map(|k| format!(
                    "{} {} GFLOP/s ({})",
                    k.kind.name(),
                    num(k.gflops, 4),
                    k.kernel
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if let Some(g) = an.achieved_gflops {
        pre.push(format!("achieved {} GFLOP/s", num(g, 4)));
    }
    let mut epi = vec![format!(
        "binding ceiling: {} ({}-bound) at {} GFLOP/s{}",
        an.binding_level,
        an.binding_bound,
        num(an.binding_gflops, 4),
        an.efficiency
            .map(|e| format!("; efficiency {:.1} %", e * 100.0))
            .unwrap_or_default()
    )];
    epi.extend(an.notes.iter().map(|n| format!("note: {n}")));
    hpcscope_report::render(format, an, &pre, &t, &epi)
}

/// Node scope, per thread: each thread's OIs and binding ceiling, the node's sum and balance.
fn render_threads(
    format: Format,
    n: &NodeRoofline,
    application: &str,
    machine: &str,
) -> Result<String, serde_json::Error> {
    let levels: Vec<String> = n.ceilings.levels.clone();
    let mut head = vec![
        "thread".to_string(),
        "FLOPs".into(),
        "bytes".into(),
        "time (s)".into(),
        "GF/s".into(),
    ];
    head.extend(levels.iter().map(|l| format!("OI {l}")));
    head.extend([
        "binding".into(),
        "attainable GF/s".into(),
        "eq. 7.2 roof GF/s".into(),
    ]);
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut t = Table::new(&head);
    for th in &n.threads {
        let mut row = vec![
            th.thread.to_string(),
            num(th.flops, 4),
            num(th.bytes, 4),
            th.time_s.map_or("-".into(), |x| num(x, 4)),
            th.achieved_gflops.map_or("-".into(), |x| num(x, 4)),
        ];
        row.extend(th.analysis.levels.iter().map(|l| num(l.oi, 4)));
        row.extend([
            format!(
                "{} ({})",
                th.analysis.binding_level, th.analysis.binding_bound
            ),
            num(th.analysis.binding_gflops, 4),
            num(th.weighted_gflops, 4),
        ]);
        t.row(row);
    }
    let c = &n.ceilings;
    let pre = vec![
        format!(
            "{} on {} ({} threads, node scope)",
            application,
            machine,
            n.threads.len()
        ),
        format!(
            "per-core share of the node (eq. 7.1, {} cores): peak {} GFLOP/s; {}",
            n.cores,
            num(c.peak_gflops, 4),
            c.levels
                .iter()
                .zip(&c.bandwidth_gbs)
                .map(|(l, b)| format!("{l} {} GB/s", num(*b, 4)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ];
    let im = &n.imbalance;
    let mut epi = vec![
        format!(
            "node: attainable {} GFLOP/s (sum of the threads' binding ceilings), {} by eq. 7.2's weighted roofs{}",
            num(n.attainable_gflops, 4),
            num(n.weighted_gflops, 4),
            n.achieved_gflops
                .map(|g| format!(
                    "; achieved {} GFLOP/s{}",
                    num(g, 4),
                    n.efficiency
                        .map(|e| format!(" ({:.1} % of attainable)", e * 100.0))
                        .unwrap_or_default()
                ))
                .unwrap_or_default()
        ),
        format!(
            "load balance (mean / max over {} working threads{}): FLOPs {:.1} %, bytes {:.1} %{}; heaviest thread {}",
            im.working_threads,
            if im.idle_threads > 0 {
                format!(", {} idle", im.idle_threads)
            } else {
                String::new()
            },
            im.flops_balance * 100.0,
            im.bytes_balance * 100.0,
            im.time_balance
                .map(|b| format!(", time {:.1} %", b * 100.0))
                .unwrap_or_default(),
            im.heaviest_thread
        ),
    ];
    epi.extend(n.notes.iter().map(|x| format!("note: {x}")));
    hpcscope_report::render(format, n, &pre, &t, &epi)
}

fn dedup(it: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in it {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// The chart's name for the weighted peak.
fn weighted_label(a: &RooflineAnalysis) -> &'static str {
    match a.compute_limit_below_peak() {
        Some(ComputeLimit::Chains) => "Dependency chains' ceiling",
        Some(ComputeLimit::Divider) => "Divider's ceiling",
        _ => "Peak weighted by the instruction mix",
    }
}
