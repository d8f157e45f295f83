//! Pieces shared by every chart: the page layout, axes with grid and tick labels, title,
//! legend, caption, colours and label placement without overlaps.

use crate::axis::{Kind, Scale, Tick, fmt_tick, linear_ticks, log_ticks};
use crate::svg::{Anchor, Shape, Stroke, Svg, TextStyle, text_width, wrap};

/// Okabe-Ito colours (colour-blind safe), in the order series use them; yellow is left out
/// (too pale on white).
pub const PALETTE: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000",
];

/// Source-side shades (greens, darkest first), for the projection chart.
pub const GREENS: [&str; 4] = ["#00664a", "#009E73", "#3fb98f", "#7ccfae"];
/// Target-side shades (reds/oranges, darkest first).
pub const REDS: [&str; 4] = ["#a33a00", "#D55E00", "#ec8a3c", "#E69F00"];

/// Text and axis colour.
pub const INK: &str = "#222222";
/// Secondary text (captions, notes).
pub const MUTED: &str = "#555555";
/// Major grid lines.
pub const GRID: &str = "#e3e3e3";
/// Minor grid lines.
pub const GRID_MINOR: &str = "#f1f1f1";

/// Width of every chart, px.
pub const WIDTH: f64 = 800.0;
/// Plot area, px.
pub const LEFT: f64 = 74.0;
/// Top of the plot area, px.
pub const TOP: f64 = 62.0;
/// Width of the plot area, px.
pub const PLOT_W: f64 = 460.0;
/// Height of the plot area, px.
pub const PLOT_H: f64 = 340.0;
/// The legend column starts here.
pub const LEGEND_X: f64 = LEFT + PLOT_W + 26.0;
/// Caption font size, px.
pub const CAPTION_SIZE: f64 = 11.5;

/// The plot area.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    /// Left edge, px.
    pub left: f64,
    /// Top edge, px.
    pub top: f64,
    /// Right edge, px.
    pub right: f64,
    /// Bottom edge, px.
    pub bottom: f64,
}

impl Frame {
    /// The plot area of every chart ([`LEFT`], [`TOP`], [`PLOT_W`], [`PLOT_H`]).
    pub fn standard() -> Frame {
        Frame {
            left: LEFT,
            top: TOP,
            right: LEFT + PLOT_W,
            bottom: TOP + PLOT_H,
        }
    }

    /// Whether `r` lies inside the plot area (half a pixel of slack).
    pub fn contains(&self, r: &Rect) -> bool {
        r.x0 >= self.left - 0.5
            && r.x1 <= self.right + 0.5
            && r.y0 >= self.top - 0.5
            && r.y1 <= self.bottom + 0.5
    }
}

/// An axis-aligned rectangle in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    /// Left, px.
    pub x0: f64,
    /// Top, px.
    pub y0: f64,
    /// Right, px.
    pub x1: f64,
    /// Bottom, px.
    pub y1: f64,
}

impl Rect {
    /// Whether the two rectangles overlap.
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    /// The square of half-side `r` around (`x`, `y`).
    pub fn around(x: f64, y: f64, r: f64) -> Rect {
        Rect {
            x0: x - r,
            y0: y - r,
            x1: x + r,
            y1: y + r,
        }
    }

    /// The box of a text of `size` px with its baseline at `y`, anchored at `x`.
    pub fn of_text(x: f64, y: f64, s: &str, size: f64, anchor: Anchor) -> Rect {
        let w = text_width(s, size);
        let x0 = match anchor {
            Anchor::Start => x,
            Anchor::Middle => x - w / 2.0,
            Anchor::End => x - w,
        };
        Rect {
            x0: x0 - 1.0,
            y0: y - size * 0.8,
            x1: x0 + w + 1.0,
            y1: y + size * 0.25,
        }
    }
}

/// Builds a scale and its ticks for data in `[lo, hi]` (already snapped for log axes).
pub fn axis(kind: Kind, lo: f64, hi: f64, p0: f64, p1: f64) -> (Scale, Vec<Tick>) {
    match kind {
        Kind::Log => (
            Scale {
                kind,
                lo,
                hi,
                p0,
                p1,
            },
            log_ticks(lo, hi),
        ),
        Kind::Linear => {
            let (lo, hi, ticks) = linear_ticks(lo, hi, 6);
            (
                Scale {
                    kind,
                    lo,
                    hi,
                    p0,
                    p1,
                },
                ticks,
            )
        }
    }
}

/// Fits `text` in `avail` px: the largest size from `size` down to `min_size` (half-pixel
/// steps) at which it fits, else `min_size` and the text cut at a word with an ellipsis.
/// `bold` text is taken as 8 % wider.
pub fn fit_text(text: &str, size: f64, min_size: f64, avail: f64, bold: bool) -> (String, f64) {
    let w = |t: &str, s: f64| text_width(t, s) * if bold { 1.08 } else { 1.0 };
    let mut s = size;
    while s > min_size && w(text, s) > avail {
        s -= 0.5;
    }
    if w(text, s) <= avail {
        return (text.to_string(), s);
    }
    let mut out = String::new();
    for word in text.split_whitespace() {
        let candidate = if out.is_empty() {
            word.to_string()
        } else {
            format!("{out} {word}")
        };
        if w(&format!("{candidate} …"), s) > avail {
            break;
        }
        out = candidate;
    }
    (format!("{out} …"), s)
}

/// Title (bold) and an optional grey subtitle above the plot, made smaller (and at worst cut,
/// the whole title staying in the SVG's `<title>`) to fit the chart's width.
pub fn draw_title(svg: &mut Svg, title: &str, subtitle: &str) {
    let x = LEFT - 60.0;
    let avail = WIDTH - x - 10.0;
    let (title, size) = fit_text(title, 16.0, 12.0, avail, true);
    svg.text(
        x,
        24.0,
        &title,
        &TextStyle {
            size,
            bold: true,
            class: Some("title"),
            ..TextStyle::default()
        },
    );
    if !subtitle.is_empty() {
        let (subtitle, _) = fit_text(subtitle, 11.5, 11.5, avail, false);
        svg.text(
            x,
            43.0,
            &subtitle,
            &TextStyle {
                size: 11.5,
                fill: MUTED,
                class: Some("subtitle"),
                ..TextStyle::default()
            },
        );
    }
}

/// Grid, frame, ticks, tick labels and axis titles.
pub fn draw_axes(
    svg: &mut Svg,
    f: &Frame,
    (xs, xticks): (&Scale, &[Tick]),
    (ys, yticks): (&Scale, &[Tick]),
    x_label: &str,
    y_label: &str,
) {
    svg.open_group("axes");
    // Minor grid first, so that major lines are drawn over it.
    for major in [false, true] {
        let color = if major { GRID } else { GRID_MINOR };
        for t in xticks.iter().filter(|t| t.major == major) {
            let x = xs.px(t.value);
            svg.line(x, f.top, x, f.bottom, Stroke::solid(color, 1.0), None);
        }
        for t in yticks.iter().filter(|t| t.major == major) {
            let y = ys.px(t.value);
            svg.line(f.left, y, f.right, y, Stroke::solid(color, 1.0), None);
        }
    }
    svg.rect(
        f.left,
        f.top,
        f.right - f.left,
        f.bottom - f.top,
        "none",
        1.0,
        Some(Stroke::solid("#999999", 1.0)),
        None,
    );
    let label_style = TextStyle {
        size: 11.0,
        fill: MUTED,
        ..TextStyle::default()
    };
    for t in xticks {
        let x = xs.px(t.value);
        let len = if t.major { 5.0 } else { 3.0 };
        svg.line(
            x,
            f.bottom,
            x,
            f.bottom + len,
            Stroke::solid("#999999", 1.0),
            None,
        );
        if let Some(l) = &t.label {
            svg.text(
                x,
                f.bottom + 18.0,
                l,
                &TextStyle {
                    anchor: Anchor::Middle,
                    class: Some("tick"),
                    ..label_style.clone()
                },
            );
        }
    }
    for t in yticks {
        let y = ys.px(t.value);
        let len = if t.major { 5.0 } else { 3.0 };
        svg.line(
            f.left - len,
            y,
            f.left,
            y,
            Stroke::solid("#999999", 1.0),
            None,
        );
        if let Some(l) = &t.label {
            svg.text(
                f.left - 8.0,
                y + 4.0,
                l,
                &TextStyle {
                    anchor: Anchor::End,
                    class: Some("tick"),
                    ..label_style.clone()
                },
            );
        }
    }
    let axis_title = TextStyle {
        size: 12.0,
        anchor: Anchor::Middle,
        fill: INK,
        class: Some("axis-label"),
        ..TextStyle::default()
    };
    svg.text(
        (f.left + f.right) / 2.0,
        f.bottom + 40.0,
        x_label,
        &axis_title,
    );
    svg.text(
        f.left - 50.0,
        (f.top + f.bottom) / 2.0,
        y_label,
        &TextStyle {
            rotate: -90.0,
            ..axis_title
        },
    );
    svg.close_group();
}

/// A chart's document with its title and axes drawn: what every chart starts with.
pub fn begin(
    f: &Frame,
    (title, caption): (&str, &str),
    x: (&Scale, &[Tick]),
    y: (&Scale, &[Tick]),
    (x_label, y_label): (&str, &str),
) -> Svg {
    let mut svg = Svg::new(WIDTH, title, caption);
    draw_title(&mut svg, title, "");
    draw_axes(&mut svg, f, x, y, x_label, y_label);
    svg
}

/// The legend beside the plot and the caption under it (below the legend when that is
/// longer); closes the document.
pub fn finish(mut svg: Svg, f: &Frame, legend: &[LegendEntry], caption: &str) -> String {
    let legend_bottom = draw_legend(&mut svg, LEGEND_X, TOP, WIDTH - LEGEND_X - 10.0, legend);
    let lines = caption_lines(caption);
    let cap_y = (f.bottom + 66.0).max(legend_bottom + 18.0);
    let bottom = draw_caption(&mut svg, cap_y, &lines);
    svg.finish(bottom + 6.0)
}

/// A grey label with a white halo at a placed position (a marker line's label).
pub fn muted_label(svg: &mut Svg, (x, y, anchor): (f64, f64, Anchor), text: &str, class: &str) {
    svg.text(
        x,
        y,
        text,
        &TextStyle {
            anchor,
            fill: MUTED,
            halo: true,
            class: Some(class),
            ..TextStyle::default()
        },
    );
}

/// What a legend entry shows before its text.
#[derive(Debug, Clone)]
pub enum Swatch {
    /// A line (a roof, a series without markers).
    Line {
        /// Stroke colour.
        color: String,
        /// Stroke width, px.
        width: f64,
        /// Dash pattern.
        dash: Option<String>,
    },
    /// A marker.
    Marker {
        /// Its shape.
        shape: Shape,
        /// Its colour.
        color: String,
        /// Filled or outlined.
        filled: bool,
    },
    /// A translucent band (an interval).
    Band {
        /// Its colour.
        color: String,
    },
    /// A solid box (a bar's colour).
    Box {
        /// Its colour.
        color: String,
    },
    /// A line with a marker on it (a series of a line chart).
    LineMarker {
        /// Its colour.
        color: String,
        /// Dash pattern of the line.
        dash: Option<String>,
        /// Shape of the marker.
        shape: Shape,
    },
    /// A vertical range bar with caps.
    Range {
        /// Its colour.
        color: String,
    },
    /// No swatch: a heading.
    Heading,
}

/// One legend row.
#[derive(Debug, Clone)]
pub struct LegendEntry {
    /// What is drawn before the label.
    pub swatch: Swatch,
    /// The label.
    pub label: String,
}

impl LegendEntry {
    /// A line entry.
    pub fn line(color: &str, width: f64, dash: Option<&str>, label: impl Into<String>) -> Self {
        LegendEntry {
            swatch: Swatch::Line {
                color: color.into(),
                width,
                dash: dash.map(Into::into),
            },
            label: label.into(),
        }
    }

    /// A marker entry.
    pub fn marker(shape: Shape, color: &str, filled: bool, label: impl Into<String>) -> Self {
        LegendEntry {
            swatch: Swatch::Marker {
                shape,
                color: color.into(),
                filled,
            },
            label: label.into(),
        }
    }

    /// A heading: a label without swatch.
    pub fn heading(label: impl Into<String>) -> Self {
        LegendEntry {
            swatch: Swatch::Heading,
            label: label.into(),
        }
    }
}

const LEGEND_SIZE: f64 = 11.0;
const LEGEND_ROW: f64 = 15.0;

/// Draws the legend at (x, y) (top-left), text wrapped to `width`; returns its bottom.
pub fn draw_legend(svg: &mut Svg, x: f64, y: f64, width: f64, entries: &[LegendEntry]) -> f64 {
    svg.open_group("legend");
    let mut cy = y;
    for e in entries {
        let (text_x, max_w) = match e.swatch {
            Swatch::Heading => (x, width),
            _ => (x + 30.0, width - 30.0),
        };
        let lines = wrap(&e.label, LEGEND_SIZE, max_w);
        if matches!(e.swatch, Swatch::Heading) && cy > y {
            cy += 5.0;
        }
        let mid = cy + LEGEND_ROW / 2.0;
        match &e.swatch {
            Swatch::Line { color, width, dash } => svg.line(
                x,
                mid,
                x + 24.0,
                mid,
                Stroke {
                    color,
                    width: *width,
                    dash: dash.as_deref(),
                },
                None,
            ),
            Swatch::Marker {
                shape,
                color,
                filled,
            } => svg.marker(*shape, x + 12.0, mid, 4.5, color, *filled, None),
            Swatch::LineMarker { color, dash, shape } => {
                svg.line(
                    x,
                    mid,
                    x + 24.0,
                    mid,
                    Stroke {
                        color,
                        width: 2.0,
                        dash: dash.as_deref(),
                    },
                    None,
                );
                svg.marker(*shape, x + 12.0, mid, 3.2, color, true, None);
            }
            Swatch::Band { color } => {
                svg.rect(x, mid - 5.0, 24.0, 10.0, color, 0.25, None, None);
            }
            Swatch::Box { color } => {
                svg.rect(x + 4.0, mid - 6.0, 16.0, 12.0, color, 1.0, None, None);
            }
            Swatch::Range { color } => {
                let s = Stroke::solid(color, 2.0);
                svg.line(x + 12.0, mid - 6.0, x + 12.0, mid + 6.0, s, None);
                svg.line(x + 8.0, mid - 6.0, x + 16.0, mid - 6.0, s, None);
                svg.line(x + 8.0, mid + 6.0, x + 16.0, mid + 6.0, s, None);
            }
            Swatch::Heading => {}
        }
        for (i, l) in lines.iter().enumerate() {
            svg.text(
                text_x,
                cy + 11.0 + i as f64 * 13.0,
                l,
                &TextStyle {
                    size: LEGEND_SIZE,
                    bold: matches!(e.swatch, Swatch::Heading),
                    class: Some("legend-label"),
                    ..TextStyle::default()
                },
            );
        }
        cy += LEGEND_ROW.max(lines.len() as f64 * 13.0 + 2.0) + 2.0;
    }
    svg.close_group();
    cy
}

/// Wrapped caption lines for the chart width.
pub fn caption_lines(caption: &str) -> Vec<String> {
    caption
        .split('\n')
        .flat_map(|p| wrap(p, CAPTION_SIZE, WIDTH - 2.0 * 16.0))
        .collect()
}

/// Draws the caption lines from baseline `y`; returns the bottom.
pub fn draw_caption(svg: &mut Svg, y: f64, lines: &[String]) -> f64 {
    svg.open_group("caption");
    for (i, l) in lines.iter().enumerate() {
        svg.text(
            16.0,
            y + i as f64 * 15.0,
            l,
            &TextStyle {
                size: CAPTION_SIZE,
                fill: "#333333",
                ..TextStyle::default()
            },
        );
    }
    svg.close_group();
    y + lines.len() as f64 * 15.0
}

/// Places horizontal labels next to anchors, avoiding `taken` boxes (and adding the placed
/// label boxes to it). Each request gives candidate offsets (dx, dy, anchor) tried in order;
/// the first that fits inside `f` and overlaps nothing wins; if none does, the one with the
/// fewest overlaps.
pub fn place_label(
    f: &Frame,
    taken: &mut Vec<Rect>,
    anchor_at: (f64, f64),
    text: &str,
    size: f64,
    candidates: &[(f64, f64, Anchor)],
) -> (f64, f64, Anchor) {
    place_label_avoiding(f, taken, &[], anchor_at, text, size, candidates)
}

/// A line segment in pixels.
pub type Segment = ((f64, f64), (f64, f64));

/// [`place_label`] that also avoids crossing `segments` (each crossing counts as an overlap).
pub fn place_label_avoiding(
    f: &Frame,
    taken: &mut Vec<Rect>,
    segments: &[Segment],
    (x, y): (f64, f64),
    text: &str,
    size: f64,
    candidates: &[(f64, f64, Anchor)],
) -> (f64, f64, Anchor) {
    let mut best: Option<((f64, f64, Anchor), usize)> = None;
    for &(dx, dy, anchor) in candidates {
        let r = Rect::of_text(x + dx, y + dy, text, size, anchor);
        let hits = taken.iter().filter(|t| t.overlaps(&r)).count()
            + segments
                .iter()
                .filter(|(a, b)| clip_segment(*a, *b, &r).is_some())
                .count()
            + usize::from(!f.contains(&r)) * 100;
        if hits == 0 {
            best = Some(((x + dx, y + dy, anchor), 0));
            break;
        }
        if best.as_ref().is_none_or(|(_, h)| hits < *h) {
            best = Some(((x + dx, y + dy, anchor), hits));
        }
    }
    let (pos, _) = best.unwrap_or(((x, y, Anchor::Start), 0));
    taken.push(Rect::of_text(pos.0, pos.1, text, size, pos.2));
    pos
}

/// Offsets around a marker of radius `r`: above, below, right, left, then further away.
pub fn around_marker(r: f64) -> Vec<(f64, f64, Anchor)> {
    let mut v = vec![
        (0.0, -r - 4.0, Anchor::Middle),
        (0.0, r + 12.0, Anchor::Middle),
        (r + 4.0, 4.0, Anchor::Start),
        (-r - 4.0, 4.0, Anchor::End),
        (r + 3.0, -r - 3.0, Anchor::Start),
        (-r - 3.0, -r - 3.0, Anchor::End),
        (r + 3.0, r + 11.0, Anchor::Start),
        (-r - 3.0, r + 11.0, Anchor::End),
    ];
    for k in 1..4 {
        let d = 12.0 * f64::from(k);
        v.push((0.0, -r - 4.0 - d, Anchor::Middle));
        v.push((0.0, r + 12.0 + d, Anchor::Middle));
    }
    v
}

/// Pushes apart sorted positions so that consecutive ones are at least `gap` apart, staying
/// within `[lo, hi]` when possible. Returns the new positions in the input order.
pub fn spread(positions: &[f64], gap: f64, lo: f64, hi: f64) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..positions.len()).collect();
    idx.sort_by(|a, b| positions[*a].total_cmp(&positions[*b]));
    let mut p: Vec<f64> = idx.iter().map(|&i| positions[i].clamp(lo, hi)).collect();
    for i in 1..p.len() {
        if p[i] < p[i - 1] + gap {
            p[i] = p[i - 1] + gap;
        }
    }
    if let Some(&last) = p.last()
        && last > hi
    {
        let n = p.len();
        p[n - 1] = hi;
        for i in (0..n - 1).rev() {
            if p[i] > p[i + 1] - gap {
                p[i] = p[i + 1] - gap;
            }
        }
    }
    let mut out = vec![0.0; positions.len()];
    for (k, &i) in idx.iter().enumerate() {
        out[i] = p[k];
    }
    out
}

/// Clips the segment (x0,y0)-(x1,y1) to a rectangle (Liang-Barsky); `None` when it misses.
pub fn clip_segment(
    (x0, y0): (f64, f64),
    (x1, y1): (f64, f64),
    r: &Rect,
) -> Option<((f64, f64), (f64, f64))> {
    let (dx, dy) = (x1 - x0, y1 - y0);
    let mut t0: f64 = 0.0;
    let mut t1: f64 = 1.0;
    for (p, q) in [
        (-dx, x0 - r.x0),
        (dx, r.x1 - x0),
        (-dy, y0 - r.y0),
        (dy, r.y1 - y0),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    (t0 < t1).then_some(((x0 + t0 * dx, y0 + t0 * dy), (x0 + t1 * dx, y0 + t1 * dy)))
}

/// Formats a tick value for a secondary axis.
pub fn speedup_label(v: f64) -> String {
    format!("×{}", fmt_tick(v))
}

/// `"a, b and c"`.
pub fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [a] => a.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_shrink_then_cut_to_fit() {
        assert_eq!(
            fit_text("short", 16.0, 12.0, 500.0, true),
            ("short".into(), 16.0)
        );
        let long = "Projected speed-up over Intel Xeon Platinum 8260 (2 x 24 cores, Cascade Lake) on published machines";
        let (t, s) = fit_text(long, 16.0, 12.0, 750.0, true);
        assert!((12.0..16.0).contains(&s) && t == long, "{t} {s}");
        assert!(text_width(&t, s) * 1.08 <= 750.0);
        let (t, s) = fit_text(long, 16.0, 12.0, 300.0, true);
        assert_eq!(s, 12.0);
        assert!(
            t.ends_with(" …") && long.starts_with(t.trim_end_matches(" …")),
            "{t}"
        );
        assert!(text_width(&t, s) * 1.08 <= 300.0);
    }

    #[test]
    fn spread_keeps_order_and_gap() {
        let p = spread(&[10.0, 12.0, 11.0, 50.0], 10.0, 0.0, 100.0);
        let mut s = p.clone();
        s.sort_by(f64::total_cmp);
        for w in s.windows(2) {
            assert!(w[1] - w[0] >= 10.0 - 1e-9);
        }
        assert_eq!(p[3], 50.0);
        // Pushed back inside the upper bound.
        let p = spread(&[95.0, 96.0, 97.0], 10.0, 0.0, 100.0);
        assert!(p.iter().all(|v| *v <= 100.0));
    }

    #[test]
    fn clipping() {
        let r = Rect {
            x0: 0.0,
            y0: 0.0,
            x1: 10.0,
            y1: 10.0,
        };
        let ((a, b), (c, d)) = clip_segment((-5.0, 5.0), (15.0, 5.0), &r).unwrap();
        assert_eq!((a, b, c, d), (0.0, 5.0, 10.0, 5.0));
        assert!(clip_segment((-5.0, -5.0), (-1.0, 20.0), &r).is_none());
    }

    #[test]
    fn labels_avoid_each_other() {
        let f = Frame::standard();
        let mut taken = Vec::new();
        let c = around_marker(5.0);
        let a = place_label(&f, &mut taken, (200.0, 200.0), "OI L1", 11.0, &c);
        let b = place_label(&f, &mut taken, (205.0, 200.0), "OI L2", 11.0, &c);
        assert_ne!((a.0, a.1), (b.0, b.1));
        assert!(!taken[0].overlaps(&taken[1]));
    }

    #[test]
    fn joins() {
        assert_eq!(
            join_and(&["a".into(), "b".into(), "c".into()]),
            "a, b and c"
        );
        assert_eq!(join_and(&["a".into()]), "a");
    }
}
