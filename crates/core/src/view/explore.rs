//! The design-space sweep chart (thesis figures 6.17-6.25, 7.4-7.5) and the validation chart
//! (figure 7.1): projected intervals as range bars over categories.

use crate::explore::DesignPoint;
use serde::{Deserialize, Serialize};

use hpcscope_report::axis::{Kind, Scale, Tick, fmt_value, linear_ticks, log_domain, log_ticks};
use hpcscope_report::chart::{
    Frame, INK, LEFT, LegendEntry, MUTED, PALETTE, PLOT_H, PLOT_W, Rect, Swatch, TOP, WIDTH, axis,
    caption_lines, draw_axes, draw_caption, draw_legend, draw_title, place_label, speedup_label,
};
use hpcscope_report::svg::{Anchor, Shape, Stroke, Svg, TextStyle, text_width, wrap};

/// Interval spans more than this ratio: log axis.
const LOG_RATIO: f64 = 30.0;

/// `1 target`, `4 targets`.
fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Last unsigned integer in a label (`gcc sve-512` -> 512).
fn last_number(s: &str) -> Option<u64> {
    let mut best = None;
    let mut cur = String::new();
    for ch in s.chars().chain(std::iter::once(' ')) {
        if ch.is_ascii_digit() {
            cur.push(ch);
        } else if !cur.is_empty() {
            best = cur.parse().ok();
            cur.clear();
        }
    }
    best
}

/// Whether the categories are an ordered numeric sweep (each label ends in a number, the
/// numbers strictly increasing).
fn ordered(labels: &[String]) -> bool {
    let nums: Option<Vec<u64>> = labels.iter().map(|l| last_number(l)).collect();
    match nums {
        Some(n) => n.len() >= 2 && n.windows(2).all(|w| w[0] < w[1]),
        None => false,
    }
}

/// A y scale for positive values: linear from 0, or log when they span more than 30x.
fn value_axis(values: &[f64], f: &Frame) -> (Scale, Vec<Tick>) {
    let v: Vec<f64> = values
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0, f64::max);
    if v.is_empty() {
        return axis(Kind::Linear, 0.0, 1.0, f.bottom, f.top);
    }
    if hi / lo > LOG_RATIO {
        let (a, b) = log_domain([lo, hi]);
        axis(Kind::Log, a, b, f.bottom, f.top)
    } else {
        axis(Kind::Linear, 0.0, hi * 1.08, f.bottom, f.top)
    }
}

/// Category labels under the plot, wrapped to the group width, or, when some label does
/// not fit its group in three lines, slanted (40 degrees, ending under their group); returns
/// the lowest point used.
/// `l` as it is when it is at most `width` wide at `size`, else its longest prefix that
/// fits with an ellipsis after it.
fn fit_width(l: &str, size: f64, width: f64) -> String {
    if text_width(l, size) <= width {
        return l.to_string();
    }
    let mut cut: Vec<char> = l.chars().collect();
    while !cut.is_empty() {
        cut.pop();
        let s = format!("{}…", cut.iter().collect::<String>().trim_end());
        if text_width(&s, size) <= width {
            return s;
        }
    }
    "…".to_string()
}

fn category_labels(svg: &mut Svg, f: &Frame, labels: &[String]) -> f64 {
    let n = labels.len().max(1) as f64;
    let gw = (f.right - f.left) / n;
    let mut bottom = f.bottom + 18.0;
    let w = (gw - 6.0).max(30.0);
    let fits = labels.iter().all(|l| {
        let lines = wrap(l, 11.0, w);
        lines.len() <= 3 && lines.iter().all(|x| text_width(x, 11.0) <= w)
    });
    if !fits {
        let angle = 40f64.to_radians();
        for (i, l) in labels.iter().enumerate() {
            let x = f.left + gw * (i as f64 + 0.5) + 4.0;
            let y = f.bottom + 14.0;
            // A label that would run past the chart's left edge is shortened to fit (the
            // table beside the chart names every row in full).
            let l = fit_width(l, 11.0, (x - 2.0) / angle.cos());
            bottom = bottom.max(y + text_width(&l, 11.0) * angle.sin() + 4.0);
            svg.text(
                x,
                y,
                &l,
                &TextStyle {
                    anchor: Anchor::End,
                    fill: INK,
                    rotate: -40.0,
                    class: Some("tick"),
                    ..TextStyle::default()
                },
            );
        }
        return bottom;
    }
    for (i, l) in labels.iter().enumerate() {
        let x = f.left + gw * (i as f64 + 0.5);
        let lines = wrap(l, 11.0, (gw - 6.0).max(30.0));
        for (k, line) in lines.iter().take(3).enumerate() {
            let y = f.bottom + 18.0 + 13.0 * k as f64;
            bottom = bottom.max(y);
            svg.text(
                x,
                y,
                line,
                &TextStyle {
                    anchor: Anchor::Middle,
                    fill: INK,
                    class: Some("tick"),
                    ..TextStyle::default()
                },
            );
        }
    }
    bottom
}

/// The x axis title under the category labels.
fn x_axis_title(svg: &mut Svg, f: &Frame, label_bottom: f64, title: &str) {
    svg.text(
        (f.left + f.right) / 2.0,
        label_bottom + 22.0,
        title,
        &TextStyle {
            size: 12.0,
            anchor: Anchor::Middle,
            fill: INK,
            class: Some("axis-label"),
            ..TextStyle::default()
        },
    );
}

/// The legend at `lx` from the top, then the caption under both the legend and `min_y`.
fn legend_and_caption(
    mut svg: Svg,
    lx: f64,
    legend: &[LegendEntry],
    caption: &str,
    min_y: f64,
) -> String {
    let legend_bottom = draw_legend(&mut svg, lx, TOP, WIDTH - lx - 10.0, legend);
    let lines = caption_lines(caption);
    let bottom = draw_caption(&mut svg, min_y.max(legend_bottom + 18.0), &lines);
    svg.finish(bottom + 6.0)
}

/// Bars of several series side by side in each category.
struct Dodge {
    left: f64,
    group: f64,
    step: f64,
    series: f64,
    /// Half-width of a bar's caps.
    half: f64,
}

impl Dodge {
    fn new(f: &Frame, categories: usize, series: usize) -> Dodge {
        let group = (f.right - f.left) / categories.max(1) as f64;
        let series = series.max(1) as f64;
        let step = (group * 0.7 / series).min(26.0);
        Dodge {
            left: f.left,
            group,
            step,
            series,
            half: (step * 0.3).clamp(3.0, 7.0),
        }
    }

    /// x of series `s` in category `c`.
    fn x(&self, c: usize, s: usize) -> f64 {
        self.left
            + self.group * (c as f64 + 0.5)
            + (s as f64 - (self.series - 1.0) / 2.0) * self.step
    }
}

/// Axes for a categorical x: frame, horizontal grid and y ticks only.
fn draw_value_axes(svg: &mut Svg, f: &Frame, ys: &Scale, yticks: &[Tick], y_label: &str) {
    let dummy = Scale {
        kind: Kind::Linear,
        lo: 0.0,
        hi: 1.0,
        p0: f.left,
        p1: f.right,
    };
    draw_axes(svg, f, (&dummy, &[]), (ys, yticks), "", y_label);
}

/// A range bar [lo, hi] with caps at x, or a diamond when lo == hi.
fn range_bar(svg: &mut Svg, x: f64, ys: &Scale, lo: f64, hi: f64, color: &str, half: f64) -> Rect {
    let (y0, y1) = (ys.px(hi), ys.px(lo));
    svg.open_group("range");
    if (y1 - y0).abs() < 2.0 {
        svg.marker(Shape::Diamond, x, (y0 + y1) / 2.0, 5.0, color, true, None);
    } else {
        let s = Stroke::solid(color, 3.0);
        svg.line(x, y0, x, y1, s, None);
        let c = Stroke::solid(color, 2.0);
        svg.line(x - half, y0, x + half, y0, c, None);
        svg.line(x - half, y1, x + half, y1, c, None);
    }
    svg.close_group();
    Rect {
        x0: x - half - 1.0,
        y0: y0.min(y1) - 6.0,
        x1: x + half + 1.0,
        y1: y0.max(y1) + 6.0,
    }
}

/// The point estimate on a range bar: a hollow circle.
fn point_mark(svg: &mut Svg, x: f64, ys: &Scale, v: Option<f64>, color: &str) -> Option<Rect> {
    let v = v.filter(|v| v.is_finite() && ys.contains(*v))?;
    let y = ys.px(v);
    svg.marker(
        Shape::Circle,
        x,
        y,
        4.0,
        color,
        false,
        Some("point-estimate"),
    );
    Some(Rect::around(x, y, 5.0))
}

/// Projected intervals across a design-space sweep.
///
/// One group per variant (target binary) on the x axis, in the order of first appearance,
/// and one series (colour) per target machine: each design point is a range bar
/// `[lo, hi]` (a diamond when the interval is a single value). When the variants are an
/// ordered numeric sweep (`sve-128` ... `sve-2048`), each target's bars are joined by a
/// translucent band. A dashed line marks the source's measured GFLOP/s and the right axis
/// gives the speed-up over it. The y axis is linear from 0, or log when the values span more
/// than 30x.
#[allow(clippy::too_many_lines)]
pub fn explore_svg(points: &[DesignPoint], title: &str, source_gflops: f64) -> String {
    let mut f = Frame::standard();
    f.right -= 34.0; // room for the speed-up axis
    let mut variants: Vec<String> = Vec::new();
    let mut targets: Vec<String> = Vec::new();
    for p in points {
        if !variants.contains(&p.variant) {
            variants.push(p.variant.clone());
        }
        if !targets.contains(&p.target) {
            targets.push(p.target.clone());
        }
    }
    let src = (source_gflops.is_finite() && source_gflops > 0.0).then_some(source_gflops);
    let mut values: Vec<f64> = points
        .iter()
        .flat_map(|p| [p.interval.lo, p.interval.hi])
        .collect();
    values.extend(src);
    let (ys, yticks) = value_axis(&values, &f);
    let is_ordered = ordered(&variants);

    // Caption: how to read, then the answer.
    let mut caption = String::from(
        "How to read: each bar is the projected performance interval [lo, hi] of one target binary (x axis) on one target machine (colour)",
    );
    if let Some(s) = src {
        caption.push_str(&format!(
            "; the dashed line is the source's measured performance ({} GFLOP/s): a bar above it is a speed-up, and the right axis reads the speed-up directly",
            fmt_value(s)
        ));
    }
    caption.push('.');
    if src.is_some() {
        caption.push_str(
            " A bar entirely above the line is a speed-up whichever roofline binds; one that straddles it is undecided.",
        );
    }
    if is_ordered {
        caption.push_str(" The bands join a machine's intervals across the sweep.");
    }
    if points.iter().any(|p| p.interval.lo == p.interval.hi) {
        caption.push_str(
            " A diamond is an interval reduced to one value: every (OI, roofline) pair gives the same projection (compute-bound).",
        );
    }
    if let (Some(s), false) = (src, points.is_empty()) {
        for t in &targets {
            let of_t: Vec<&DesignPoint> = points.iter().filter(|p| &p.target == t).collect();
            // The first variant reaching the best lower bound (the cheapest, on a sweep).
            let best = of_t.iter().fold(None::<&&DesignPoint>, |acc, p| match acc {
                Some(b) if b.interval.lo >= p.interval.lo => Some(b),
                _ => Some(p),
            });
            if let Some(best) = best {
                caption.push_str(&format!(
                    " {t}: best lower bound with {}, ×{} to ×{} the source's performance.",
                    best.variant,
                    fmt_value(best.interval.lo / s),
                    fmt_value(best.interval.hi / s)
                ));
            }
        }
    }
    if points.is_empty() {
        caption.push_str(" No design point to show.");
    }

    let ridges: Vec<(usize, usize, crate::explore::RidgeDiagnostic)> = points
        .iter()
        .filter_map(|p| {
            let vi = variants.iter().position(|v| *v == p.variant)?;
            let ti = targets.iter().position(|t| *t == p.target)?;
            Some((vi, ti, crate::explore::RidgeDiagnostic::of(p)?))
        })
        .collect();
    let level0 = ridges
        .first()
        .map(|r| r.2.level.clone())
        .unwrap_or_default();
    let same_level = ridges.iter().all(|(_, _, r)| r.level == level0);
    if !ridges.is_empty() {
        let memory: usize = ridges
            .iter()
            .filter(|(_, _, r)| r.delta.is_some_and(|d| d < 0.0))
            .count();
        caption.push_str(&format!(
            " Lower panel (thesis section 7.4.1): the variant's OI (circle) against the ridge OI of the target's roofline at that level (bar); a circle below its bar is bound by that level's bandwidth. {} of {} design points have their OI below the ridge at {}, where a faster memory can help.",
            memory,
            ridges.len(),
            if same_level { level0.as_str() } else { "the first level" }
        ));
    }
    let resim = points
        .iter()
        .filter(|p| p.bytes == crate::explore::BytesOrigin::Resimulated)
        .count();
    let approx = points
        .iter()
        .filter(|p| p.bytes == crate::explore::BytesOrigin::Approximate)
        .count();
    if resim > 0 {
        caption.push_str(&format!(
            " {resim} design point(s) use bytes per level re-simulated on their target's caches."
        ));
    }
    if approx > 0 {
        caption.push_str(&format!(
            " {approx} design point(s) are approximate: their target's cache geometry changed and their bytes per level were not re-simulated."
        ));
    }
    let mut svg = Svg::new(WIDTH, title, &caption);
    draw_title(
        &mut svg,
        title,
        &format!(
            "{} × {} · projected GFLOP/s",
            counted(variants.len(), "variant"),
            counted(targets.len(), "target")
        ),
    );
    draw_value_axes(
        &mut svg,
        &f,
        &ys,
        &yticks,
        if ys.kind == Kind::Log {
            "Projected performance (GFLOP/s, log scale)"
        } else {
            "Projected performance (GFLOP/s)"
        },
    );
    let label_bottom = category_labels(&mut svg, &f, &variants);
    x_axis_title(&mut svg, &f, label_bottom, "Target binary (variant)");

    // Speed-up axis on the right.
    if let Some(s) = src {
        let sp = Scale {
            kind: ys.kind,
            lo: ys.lo / s,
            hi: ys.hi / s,
            p0: ys.p0,
            p1: ys.p1,
        };
        let ticks = match sp.kind {
            Kind::Log => log_ticks(sp.lo, sp.hi),
            Kind::Linear => linear_ticks(sp.lo, sp.hi, 6).2,
        };
        for t in ticks
            .iter()
            .filter(|t| t.label.is_some() && t.value > 0.0 && sp.contains(t.value))
        {
            let y = sp.px(t.value);
            svg.line(
                f.right,
                y,
                f.right + 4.0,
                y,
                Stroke::solid("#999999", 1.0),
                None,
            );
            svg.text(
                f.right + 6.0,
                y + 4.0,
                &speedup_label(t.value),
                &TextStyle {
                    fill: MUTED,
                    class: Some("tick"),
                    ..TextStyle::default()
                },
            );
        }
        svg.text(
            f.right + 44.0,
            (f.top + f.bottom) / 2.0,
            "Speed-up over the source",
            &TextStyle {
                size: 12.0,
                anchor: Anchor::Middle,
                rotate: 90.0,
                fill: INK,
                class: Some("axis-label"),
                ..TextStyle::default()
            },
        );
    }

    let dodge = Dodge::new(&f, variants.len(), targets.len());
    let half = dodge.half;
    let xpos = |v: usize, t: usize| dodge.x(v, t);
    let color = |t: usize| PALETTE[t % PALETTE.len()];

    // Bands first (under the bars).
    if is_ordered {
        svg.open_group("bands");
        for (ti, t) in targets.iter().enumerate() {
            let mut upper = Vec::new();
            let mut lower = Vec::new();
            for (vi, v) in variants.iter().enumerate() {
                if let Some(p) = points.iter().find(|p| {
                    &p.target == t
                        && &p.variant == v
                        && p.interval.lo.is_finite()
                        && p.interval.hi.is_finite()
                }) {
                    let x = xpos(vi, ti);
                    upper.push((x, ys.px(p.interval.hi)));
                    lower.push((x, ys.px(p.interval.lo)));
                }
            }
            if upper.len() >= 2 {
                let mut poly = upper.clone();
                poly.extend(lower.iter().rev());
                svg.polygon(&poly, color(ti), 0.14, Some("band"));
                svg.polyline(&upper, Stroke::solid(color(ti), 1.0), None);
                svg.polyline(&lower, Stroke::solid(color(ti), 1.0), None);
            }
        }
        svg.close_group();
    }
    let mut taken: Vec<Rect> = Vec::new();
    if let Some(s) = src {
        let y = ys.px(s);
        svg.line(
            f.left,
            y,
            f.right,
            y,
            Stroke::dashed(INK, 1.5, "6 4"),
            Some("source-line"),
        );
    }
    svg.open_group("ranges");
    for p in points {
        let (Some(vi), Some(ti)) = (
            variants.iter().position(|v| *v == p.variant),
            targets.iter().position(|t| *t == p.target),
        ) else {
            continue;
        };
        if !(p.interval.lo.is_finite() && p.interval.hi.is_finite()) {
            continue;
        }
        let r = range_bar(
            &mut svg,
            xpos(vi, ti),
            &ys,
            p.interval.lo,
            p.interval.hi,
            color(ti),
            half,
        );
        taken.push(r);
        taken.extend(point_mark(
            &mut svg,
            xpos(vi, ti),
            &ys,
            p.projection.point.as_ref().map(|e| e.gflops),
            INK,
        ));
    }
    svg.close_group();
    if let Some(s) = src {
        let y = ys.px(s);
        let text = format!("source, measured {} GFLOP/s", fmt_value(s));
        let cands = [
            (6.0, -5.0, Anchor::Start),
            (6.0, 13.0, Anchor::Start),
            (f.right - f.left - 6.0, -5.0, Anchor::End),
            (f.right - f.left - 6.0, 13.0, Anchor::End),
        ];
        let (x, y, anchor) = place_label(&f, &mut taken, (f.left, y), &text, 11.0, &cands);
        svg.text(
            x,
            y,
            &text,
            &TextStyle {
                anchor,
                fill: INK,
                halo: true,
                class: Some("source-label"),
                ..TextStyle::default()
            },
        );
    }
    // The OI - ridge diagnostic (thesis section 7.4.1, Fig. 7.5) under the intervals, at
    // the same x: the variant's OI at the first level with a roofline (a filled circle) and
    // the ridge of that roofline on the target (a bar), joined by a line.
    let mut below = label_bottom + 50.0;
    if !ridges.is_empty() {
        let g = Frame {
            left: f.left,
            right: f.right,
            top: label_bottom + 48.0,
            bottom: label_bottom + 48.0 + 170.0,
        };
        let (lo, hi) = log_domain(
            ridges
                .iter()
                .flat_map(|(_, _, r)| [r.oi, Some(r.ridge_oi)])
                .flatten()
                // A margin, so that no mark sits on the frame.
                .flat_map(|v| [v / 1.25, v * 1.25]),
        );
        let (rs, rticks) = axis(Kind::Log, lo, hi, g.bottom, g.top);
        let level = &level0;
        draw_value_axes(
            &mut svg,
            &g,
            &rs,
            &rticks,
            &if same_level {
                format!("OI at {level} (FLOP/byte, log)")
            } else {
                "OI at the first level (FLOP/byte, log)".to_string()
            },
        );
        svg.open_group("ridge-marks");
        for (vi, ti, r) in &ridges {
            let x = xpos(*vi, *ti);
            let ry = rs.px(r.ridge_oi);
            svg.line(
                x - half - 2.0,
                ry,
                x + half + 2.0,
                ry,
                Stroke::solid(color(*ti), 3.0),
                Some("ridge"),
            );
            if let Some(oi) = r.oi.filter(|o| rs.contains(*o)) {
                let oy = rs.px(oi);
                svg.line(x, oy, x, ry, Stroke::dashed(MUTED, 1.0, "3 2"), None);
                svg.marker(Shape::Circle, x, oy, 4.0, color(*ti), true, Some("oi"));
            }
        }
        svg.close_group();
        below = g.bottom + 24.0;
    }
    if points.is_empty() {
        svg.text(
            (f.left + f.right) / 2.0,
            (f.top + f.bottom) / 2.0,
            "no design point",
            &TextStyle {
                anchor: Anchor::Middle,
                fill: MUTED,
                size: 13.0,
                ..TextStyle::default()
            },
        );
    }

    let mut legend = vec![LegendEntry::heading("Target machine")];
    for (ti, t) in targets.iter().enumerate() {
        legend.push(LegendEntry {
            swatch: Swatch::Range {
                color: color(ti).into(),
            },
            label: t.clone(),
        });
    }
    if is_ordered && !targets.is_empty() {
        legend.push(LegendEntry {
            swatch: Swatch::Band {
                color: PALETTE[0].into(),
            },
            label: "Interval across the sweep".into(),
        });
    }
    if points.iter().any(|p| p.projection.point.is_some()) {
        legend.push(LegendEntry::marker(
            Shape::Circle,
            INK,
            false,
            "Point estimate",
        ));
    }
    if src.is_some() {
        legend.push(LegendEntry::line(INK, 1.5, Some("6 4"), "Source, measured"));
    }
    if !ridges.is_empty() {
        legend.push(LegendEntry::heading("Lower panel: OI vs ridge"));
        legend.push(LegendEntry::marker(
            Shape::Circle,
            PALETTE[0],
            true,
            "Variant's OI",
        ));
        legend.push(LegendEntry::line(
            PALETTE[0],
            3.0,
            None,
            "Ridge OI of the target",
        ));
    }
    legend_and_caption(svg, f.right + 62.0, &legend, &caption, below)
}

/// One workload of a validation chart: the projected interval and the measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidationRow {
    /// Workload (and machine) name.
    pub label: String,
    /// Projected lower bound, GFLOP/s.
    pub lo: f64,
    /// Projected upper bound, GFLOP/s.
    pub hi: f64,
    /// Measured GFLOP/s on the target.
    pub measured: f64,
    /// The point estimate, GFLOP/s.
    #[serde(default)]
    pub point: Option<f64>,
}

/// Projected intervals against measurements, one group per workload (thesis figure 7.1).
///
/// Each workload has a range bar `[lo, hi]` and a diamond at the measured value, green when
/// it falls inside the interval, vermilion with the signed error of the nearest bound when
/// it does not (positive: the projection over-predicts).
pub fn validation_svg(rows: &[ValidationRow], title: &str) -> String {
    let f = Frame::standard();
    let mut values: Vec<f64> = rows
        .iter()
        .flat_map(|r| [r.lo, r.hi, r.measured])
        .chain(rows.iter().filter_map(|r| r.point))
        .collect();
    values.retain(|v| v.is_finite());
    let (ys, yticks) = value_axis(&values, &f);
    let inside =
        |r: &ValidationRow| r.measured >= r.lo * (1.0 - 1e-9) && r.measured <= r.hi * (1.0 + 1e-9);
    let n_in = rows.iter().filter(|r| inside(r)).count();
    let caption = format!(
        "How to read: each bar is the projected interval [lo, hi] of one workload and the diamond its measured performance on the target; a green diamond falls inside its interval, a vermilion one outside, labelled with the error of the nearest bound relative to the measurement (positive: over-predicted). {n_in} of {} measurements fall inside their interval.",
        rows.len()
    );
    let mut svg = Svg::new(WIDTH, title, &caption);
    draw_title(&mut svg, title, "projected interval vs measured GFLOP/s");
    draw_value_axes(
        &mut svg,
        &f,
        &ys,
        &yticks,
        if ys.kind == Kind::Log {
            "Performance (GFLOP/s, log scale)"
        } else {
            "Performance (GFLOP/s)"
        },
    );
    let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
    let label_bottom = category_labels(&mut svg, &f, &labels);
    x_axis_title(&mut svg, &f, label_bottom, "Workload");
    let gw = (f.right - f.left) / rows.len().max(1) as f64;
    let mut taken = Vec::new();
    let mut marks = Vec::new();
    svg.open_group("ranges");
    for (i, r) in rows.iter().enumerate() {
        let x = f.left + gw * (i as f64 + 0.5);
        if r.lo.is_finite() && r.hi.is_finite() {
            taken.push(range_bar(
                &mut svg,
                x - 6.0,
                &ys,
                r.lo,
                r.hi,
                PALETTE[0],
                7.0,
            ));
            taken.extend(point_mark(&mut svg, x - 6.0, &ys, r.point, INK));
        }
        if r.measured.is_finite() && ys.contains(r.measured) {
            let ok = inside(r);
            let c = if ok { PALETTE[2] } else { PALETTE[4] };
            let y = ys.px(r.measured);
            svg.marker(Shape::Diamond, x + 8.0, y, 5.5, c, true, Some("measured"));
            taken.push(Rect::around(x + 8.0, y, 7.0));
            if !ok {
                let err = if r.measured < r.lo {
                    (r.lo - r.measured) / r.measured
                } else {
                    (r.hi - r.measured) / r.measured
                };
                marks.push((x + 8.0, y, format!("{:+.0}%", err * 100.0), c));
            }
        }
    }
    svg.close_group();
    for (x, y, text, c) in marks {
        let cands = [
            (10.0, 4.0, Anchor::Start),
            (0.0, -10.0, Anchor::Middle),
            (0.0, 18.0, Anchor::Middle),
        ];
        let (x, y, anchor) = place_label(&f, &mut taken, (x, y), &text, 11.0, &cands);
        svg.text(
            x,
            y,
            &text,
            &TextStyle {
                anchor,
                fill: c,
                bold: true,
                halo: true,
                class: Some("error-label"),
                ..TextStyle::default()
            },
        );
    }
    let mut legend = vec![LegendEntry {
        swatch: Swatch::Range {
            color: PALETTE[0].into(),
        },
        label: "Projected interval".into(),
    }];
    if rows.iter().any(|r| r.point.is_some()) {
        legend.push(LegendEntry::marker(
            Shape::Circle,
            INK,
            false,
            "Point estimate",
        ));
    }
    legend.extend([
        LegendEntry::marker(Shape::Diamond, PALETTE[2], true, "Measured, inside"),
        LegendEntry::marker(
            Shape::Diamond,
            PALETTE[4],
            true,
            "Measured, outside (error of the nearest bound)",
        ),
    ]);
    legend_and_caption(
        svg,
        LEFT + PLOT_W + 26.0,
        &legend,
        &caption,
        (label_bottom + 50.0).max(TOP + PLOT_H + 66.0),
    )
}

/// One workload's projected speed-up on one target machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeedupRow {
    /// Workload name.
    pub workload: String,
    /// Target machine name.
    pub target: String,
    /// Lower bound of the projected speed-up over the source (×).
    pub lo: f64,
    /// Upper bound (×).
    pub hi: f64,
    /// The point estimate (×).
    #[serde(default)]
    pub point: Option<f64>,
    /// The model's own interval (×), before the source's run-to-run band and the calibrated
    /// margin widened it: where it lies on one side of ×1 and the bar does not, the noise
    /// is what leaves the workload undecided.
    #[serde(default)]
    pub model: Option<[f64; 2]>,
}

/// Projected speed-ups of several workloads on several targets, relative to each workload's
/// measured performance on the source: one range bar per (workload, target) on a log axis,
/// so that ×0.5 and ×2 are as far from ×1. The caption counts, per target, the workloads
/// projected faster (the whole interval above ×1), slower (below) and undecided.
pub fn speedup_svg(rows: &[SpeedupRow], title: &str) -> String {
    let f = Frame::standard();
    let mut workloads: Vec<String> = Vec::new();
    let mut targets: Vec<String> = Vec::new();
    for r in rows {
        if !workloads.contains(&r.workload) {
            workloads.push(r.workload.clone());
        }
        if !targets.contains(&r.target) {
            targets.push(r.target.clone());
        }
    }
    let finite = |r: &&SpeedupRow| r.lo.is_finite() && r.hi.is_finite() && r.lo > 0.0;
    let lo = rows.iter().filter(finite).map(|r| r.lo).fold(1.0, f64::min);
    let hi = rows.iter().filter(finite).map(|r| r.hi).fold(1.0, f64::max);
    let (a, b) = log_domain([lo, hi]);
    let (ys, mut yticks) = axis(Kind::Log, a, b, f.bottom, f.top);
    for t in &mut yticks {
        if t.label.is_some() {
            t.label = Some(speedup_label(t.value));
        }
    }
    let mut caption = String::from(
        "How to read: each bar is the projected speed-up interval [lo, hi] of one workload (x axis) on one target machine (colour), relative to the workload's measured performance on this machine; the dashed line is ×1. A bar entirely above the line is a speed-up whichever roofline binds, one entirely below a slow-down, one across it undecided.",
    );
    for t in &targets {
        let of_t: Vec<&SpeedupRow> = rows
            .iter()
            .filter(|r| &r.target == t)
            .filter(finite)
            .collect();
        let faster = of_t.iter().filter(|r| r.lo > 1.0).count();
        let slower = of_t.iter().filter(|r| r.hi < 1.0).count();
        caption.push_str(&format!(
            " {t}: {faster} of {} faster, {slower} slower, {} undecided",
            of_t.len(),
            of_t.len() - faster - slower
        ));
        // Why the undecided are: the noise band (and margin) around a model interval on
        // one side of ×1, or the model itself (its points on both sides).
        let undecided: Vec<&&SpeedupRow> =
            of_t.iter().filter(|r| r.lo <= 1.0 && r.hi >= 1.0).collect();
        let by_noise = undecided
            .iter()
            .filter(|r| r.model.is_some_and(|[lo, hi]| lo > 1.0 || hi < 1.0))
            .count();
        if by_noise > 0 {
            caption.push_str(&format!(
                " ({by_noise} of them on one side of ×1 by the model's own interval, undecided only once the source's run-to-run band and the calibrated margin widen it)"
            ));
        }
        caption.push('.');
    }
    if rows.is_empty() {
        caption.push_str(" No projection to show.");
    }
    let mut svg = Svg::new(WIDTH, title, &caption);
    draw_title(
        &mut svg,
        title,
        &format!(
            "{} × {} · speed-up over this machine, log scale",
            counted(workloads.len(), "workload"),
            counted(targets.len(), "target")
        ),
    );
    draw_value_axes(&mut svg, &f, &ys, &yticks, "Projected speed-up (log scale)");
    let label_bottom = category_labels(&mut svg, &f, &workloads);
    x_axis_title(&mut svg, &f, label_bottom, "Workload");
    let y1 = ys.px(1.0);
    svg.line(
        f.left,
        y1,
        f.right,
        y1,
        Stroke::dashed(INK, 1.5, "6 4"),
        Some("source-line"),
    );
    let dodge = Dodge::new(&f, workloads.len(), targets.len());
    let color = |t: usize| PALETTE[t % PALETTE.len()];
    svg.open_group("ranges");
    for r in rows.iter().filter(finite) {
        let (Some(wi), Some(ti)) = (
            workloads.iter().position(|w| *w == r.workload),
            targets.iter().position(|t| *t == r.target),
        ) else {
            continue;
        };
        range_bar(
            &mut svg,
            dodge.x(wi, ti),
            &ys,
            r.lo,
            r.hi,
            color(ti),
            dodge.half,
        );
        point_mark(&mut svg, dodge.x(wi, ti), &ys, r.point, INK);
    }
    svg.close_group();
    let mut legend: Vec<LegendEntry> = targets
        .iter()
        .enumerate()
        .map(|(ti, t)| LegendEntry {
            swatch: Swatch::Range {
                color: color(ti).into(),
            },
            label: t.clone(),
        })
        .collect();
    if rows.iter().any(|r| r.point.is_some()) {
        legend.push(LegendEntry::marker(
            Shape::Circle,
            INK,
            false,
            "Point estimate",
        ));
    }
    legend.push(LegendEntry::line(
        INK,
        1.5,
        Some("6 4"),
        "×1: as fast as here",
    ));
    legend_and_caption(
        svg,
        f.right + 26.0,
        &legend,
        &caption,
        (label_bottom + 50.0).max(TOP + PLOT_H + 66.0),
    )
}

/// The table of design points: interval, speed-up, how many points are memory-bound, and
/// what sets the lower bound.
pub fn points_table(points: &[DesignPoint]) -> hpcscope_report::Table {
    use hpcscope_report::fmt::num;
    let mut t = hpcscope_report::Table::new(&[
        "variant",
        "target",
        "lo GF/s",
        "hi GF/s",
        "point GF/s",
        "speed-up",
        "memory-bound points",
        "lower bound set by",
        "bytes/level",
    ]);
    for p in points {
        t.row(vec![
            p.variant.clone(),
            p.target.clone(),
            num(p.interval.lo, 4),
            num(p.interval.hi, 4),
            p.projection.point.as_ref().map_or("-".into(), |e| {
                format!("{}{}", num(e.gflops, 4), e.error_suffix())
            }),
            format!("x{}-x{}", num(p.speedup.lo, 3), num(p.speedup.hi, 3)),
            format!("{}/{}", p.memory_bound_points, p.points),
            p.lower_bound_by.clone(),
            p.bytes.label().to_string(),
        ]);
    }
    t
}

/// The OI_L1 - OI_ridge diagnostic of each design point (Gavoille 2024 thesis, section
/// 7.4.1, Fig. 7.5): the variant's OI at the first level with a roofline against that
/// roofline's ridge on the target, and the source binary's on the source machine.
pub fn ridge_table(rows: &[crate::explore::RidgeDiagnostic]) -> hpcscope_report::Table {
    use hpcscope_report::fmt::num;
    let o = |v: Option<f64>| v.map_or("-".into(), |x| num(x, 3));
    let mut t = hpcscope_report::Table::new(&[
        "variant",
        "target",
        "level",
        "OI FLOP/B",
        "ridge OI",
        "OI - ridge",
        "bound",
        "source OI - ridge",
        "source bound",
    ]);
    for r in rows {
        t.row(vec![
            r.variant.clone(),
            r.target.clone(),
            r.level.clone(),
            o(r.oi),
            num(r.ridge_oi, 3),
            o(r.delta),
            format!("{:?}", r.bound).to_lowercase(),
            o(r.source_delta),
            format!("{:?}", r.source_bound).to_lowercase(),
        ]);
    }
    t
}

/// What the text of `explore` says beyond its result.
pub struct ExploreText<'a> {
    /// The source machine's name.
    pub source_name: &'a str,
    /// Provenance of the source's peak (said when the peak is not the listed one).
    pub peak_provenance: &'a str,
    /// Where the re-simulated profiles are cached.
    pub resim_dir: &'a std::path::Path,
    /// Notes of the re-simulation.
    pub notes: &'a [String],
    /// A program was given but not run: every target has its profiles' caches.
    pub program_not_run: bool,
}

/// The result of `explore` in `format`: the design points, with the source, the
/// re-simulation, the ridge diagnostics and the approximations around them.
pub fn render(
    format: hpcscope_report::Format,
    result: &crate::explore::ExploreResult,
    x: &ExploreText<'_>,
) -> Result<String, serde_json::Error> {
    use hpcscope_report::fmt::num;
    let t = points_table(&result.points);
    let mut pre = vec![
        result.scenario.clone(),
        format!(
            "source: {} at {} GFLOP/s",
            x.source_name,
            num(result.source_gflops, 4)
        ),
    ];
    let peak = result.peak;
    if peak != crate::machine::PeakChoice::Listed {
        pre.push(format!("peak: {peak} ({})", x.peak_provenance));
    }
    if let Some(rs) = &result.resimulation {
        let same_run = if rs.from_mix_run > 0 {
            format!(", {} from the profiles' own mix runs", rs.from_mix_run)
        } else {
            String::new()
        };
        pre.push(format!(
            "re-simulated: {} design point(s) on caches other than their profile's ({} geometr{} simulated in {} mix run(s), {} from the cache in {}{same_run})",
            rs.points,
            rs.simulated,
            if rs.simulated == 1 { "y" } else { "ies" },
            rs.mix_runs,
            rs.cached,
            x.resim_dir.display()
        ));
    }
    let mut post = Vec::new();
    for n in x.notes {
        post.push(format!("note: {n}"));
    }
    if x.program_not_run {
        post.push(
            "note: every target has the caches its variants' profiles were simulated for, so the program after -- was not run (the profiles' bytes per level hold)".to_string(),
        );
    }
    if !result.ridge.is_empty() {
        post.push(
            "OI - ridge at the first level with a roofline (thesis section 7.4.1, Fig. 7.5): below 0 that level's bandwidth binds, so a faster memory can help; at or above 0 the binary is compute-bound there and it cannot:".to_string(),
        );
        post.extend(ridge_table(&result.ridge).text().lines().map(String::from));
    }
    for w in &result.approximate {
        post.push(format!("approximate: {w}"));
    }
    hpcscope_report::render(format, result, &pre, &t, &post)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caption_says_which_undecided_bars_the_noise_leaves_undecided() {
        let row = |w: &str, lo: f64, hi: f64, model: Option<[f64; 2]>| SpeedupRow {
            workload: w.into(),
            target: "A64FX".into(),
            lo,
            hi,
            point: None,
            model,
        };
        let rows = [
            // Faster.
            row("a", 1.2, 2.0, Some([1.3, 1.8])),
            // Undecided by the band alone: the model's interval is below ×1.
            row("b", 0.6, 1.05, Some([0.7, 0.95])),
            // Undecided by the model itself.
            row("c", 0.5, 1.5, Some([0.6, 1.3])),
            // Undecided, no model interval known.
            row("d", 0.8, 1.1, None),
        ];
        let svg = speedup_svg(&rows, "t");
        assert!(
            svg.contains("A64FX: 1 of 4 faster, 0 slower, 3 undecided (1 of them on one side of ×1 by the model"),
            "{svg}"
        );
        // Nothing undecided by the band: no clause.
        let svg = speedup_svg(&rows[2..3], "t");
        assert!(
            svg.contains("A64FX: 0 of 1 faster, 0 slower, 1 undecided."),
            "{svg}"
        );
    }

    #[test]
    fn slanted_labels_stay_inside_the_chart() {
        // Sixteen long labels, as the node validation has: the rotated labels hang to the
        // left of their group, and the first ones would run past the chart's left edge.
        let rows: Vec<ValidationRow> = (0..16)
            .map(|i| ValidationRow {
                label: format!("stencil_omp 1 -> 2 threads (SSE2) pair number {i}"),
                lo: 1.0,
                hi: 2.0,
                measured: 1.5,
                point: Some(1.4),
            })
            .collect();
        let svg = validation_svg(&rows, "node");
        assert!(
            svg.contains("pair number 15"),
            "a label that fits stays whole"
        );
        assert!(
            !svg.contains("pair number 0<"),
            "the first label is shortened"
        );
        assert!(svg.contains('…'));
        let f = Frame::standard();
        let gw = (f.right - f.left) / 16.0;
        let x = f.left + gw * 0.5 + 4.0;
        let first = fit_width(&rows[0].label, 11.0, (x - 2.0) / 40f64.to_radians().cos());
        assert!(x - text_width(&first, 11.0) * 40f64.to_radians().cos() >= 2.0 - 1e-9);
        assert_eq!(fit_width("short", 11.0, 1000.0), "short");
    }

    #[test]
    fn recognises_ordered_sweeps() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(ordered(&l(&["sve-128", "sve-256", "sve-512"])));
        assert!(ordered(&l(&["gcc 128", "gcc 2048"])));
        assert!(!ordered(&l(&["gcc", "fcc"])));
        assert!(!ordered(&l(&["sve-512", "sve-128"])));
        assert!(!ordered(&l(&["sve-128"])));
        assert_eq!(last_number("a64fx sve-512 v2"), Some(2));
    }
}
