//! A generic line chart: linear or log axes, several series, labelled vertical markers (cache
//! sizes on a bandwidth sweep, releases on a history chart).

use serde::{Deserialize, Serialize};

use crate::axis::{Kind, log_domain};
use crate::chart::{
    Frame, LegendEntry, MUTED, PALETTE, Rect, Segment, Swatch, axis, begin, finish, muted_label,
    place_label_avoiding,
};
use crate::svg::{Anchor, Shape, Stroke};

/// One series of a line chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Name shown in the legend.
    pub name: String,
    /// Points (x, y), drawn in the given order. Non-finite points, and non-positive ones on
    /// a log axis, are skipped.
    pub points: Vec<(f64, f64)>,
    /// Dashed line (e.g. a model or a projection, against solid measurements).
    pub dashed: bool,
}

/// Options of [`line_chart_svg`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChartOptions {
    /// Title.
    pub title: String,
    /// x axis label, with its unit.
    pub x_label: String,
    /// y axis label, with its unit.
    pub y_label: String,
    /// Log-scale x axis.
    pub log_x: bool,
    /// Log-scale y axis.
    pub log_y: bool,
    /// Labelled vertical lines at these x values (cache sizes...); those outside the data
    /// range are left out.
    pub vertical_markers: Vec<(f64, String)>,
    /// One or two sentences saying how to read the chart.
    pub caption: String,
}

const SHAPES: [Shape; 4] = [
    Shape::Circle,
    Shape::Square,
    Shape::Diamond,
    Shape::Triangle,
];
/// Series with at most this many points get markers.
const MAX_MARKERS: usize = 40;

/// A line chart of `series` (colour and marker shape per series, legend, caption).
///
/// Linear y axes start at 0 when every value is positive. Series with up to 40 points get
/// markers, so that they stay distinguishable without colour.
pub fn line_chart_svg(series: &[Series], opts: &ChartOptions) -> String {
    let f = Frame::standard();
    let ok = |x: f64, log: bool| x.is_finite() && (!log || x > 0.0);
    let clean: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .copied()
                .filter(|(x, y)| ok(*x, opts.log_x) && ok(*y, opts.log_y))
                .collect()
        })
        .collect();
    let all: Vec<(f64, f64)> = clean.iter().flatten().copied().collect();
    let xv: Vec<f64> = all.iter().map(|p| p.0).collect();
    let yv: Vec<f64> = all.iter().map(|p| p.1).collect();
    let range = |v: &[f64]| {
        (
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )
    };
    let (xs, xticks) = if opts.log_x {
        let (a, b) = log_domain(xv.iter().copied());
        axis(Kind::Log, a, b, f.left, f.right)
    } else {
        let (a, b) = if xv.is_empty() {
            (0.0, 1.0)
        } else {
            range(&xv)
        };
        axis(Kind::Linear, a, b, f.left, f.right)
    };
    let (ys, yticks) = if opts.log_y {
        let (a, b) = log_domain(yv.iter().copied());
        axis(Kind::Log, a, b, f.bottom, f.top)
    } else {
        let (a, b) = if yv.is_empty() {
            (0.0, 1.0)
        } else {
            range(&yv)
        };
        let a = if a > 0.0 { 0.0 } else { a };
        axis(Kind::Linear, a, b, f.bottom, f.top)
    };

    let mut svg = begin(
        &f,
        (&opts.title, &opts.caption),
        (&xs, &xticks),
        (&ys, &yticks),
        (&opts.x_label, &opts.y_label),
    );
    let mut taken: Vec<Rect> = Vec::new();
    let markers: Vec<&(f64, String)> = opts
        .vertical_markers
        .iter()
        .filter(|(x, _)| ok(*x, opts.log_x) && xs.contains(*x))
        .collect();
    svg.open_group("vertical-markers");
    for (x, _) in &markers {
        let px = xs.px(*x);
        svg.line(
            px,
            f.top,
            px,
            f.bottom,
            Stroke::dashed(MUTED, 1.2, "5 4"),
            Some("vmarker"),
        );
    }
    svg.close_group();
    let mut segments: Vec<Segment> = Vec::new();
    svg.open_group("series-lines");
    for (i, (s, pts)) in series.iter().zip(&clean).enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let px: Vec<(f64, f64)> = pts.iter().map(|(x, y)| (xs.px(*x), ys.px(*y))).collect();
        let stroke = if s.dashed {
            Stroke::dashed(color, 2.0, "7 4")
        } else {
            Stroke::solid(color, 2.0)
        };
        svg.polyline(&px, stroke, Some("series"));
        segments.extend(px.windows(2).map(|w| (w[0], w[1])));
        if px.len() <= MAX_MARKERS {
            for (x, y) in &px {
                svg.marker(SHAPES[i % SHAPES.len()], *x, *y, 3.2, color, true, None);
                taken.push(Rect::around(*x, *y, 4.0));
            }
        }
    }
    svg.close_group();
    svg.open_group("marker-labels");
    for (x, label) in &markers {
        let px = xs.px(*x);
        let cands = [
            (4.0, 14.0, Anchor::Start),
            (-4.0, 14.0, Anchor::End),
            (4.0, 28.0, Anchor::Start),
            (-4.0, 28.0, Anchor::End),
            (4.0, 42.0, Anchor::Start),
        ];
        let pos = place_label_avoiding(&f, &mut taken, &segments, (px, f.top), label, 11.0, &cands);
        muted_label(&mut svg, pos, label, "vmarker-label");
    }
    svg.close_group();
    let legend: Vec<LegendEntry> = series
        .iter()
        .enumerate()
        .zip(&clean)
        .map(|((i, s), pts)| {
            let color = PALETTE[i % PALETTE.len()];
            let dash = s.dashed.then_some("7 4");
            if pts.len() <= MAX_MARKERS {
                LegendEntry {
                    swatch: Swatch::LineMarker {
                        color: color.into(),
                        dash: dash.map(Into::into),
                        shape: SHAPES[i % SHAPES.len()],
                    },
                    label: s.name.clone(),
                }
            } else {
                LegendEntry::line(color, 2.0, dash, &s.name)
            }
        })
        .collect();
    finish(svg, &f, &legend, &opts.caption)
}
