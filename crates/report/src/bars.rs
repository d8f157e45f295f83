//! A stacked bar chart over categories (one bar per MPI rank, one segment per kind of time),
//! with labelled horizontal reference lines (a mean, a maximum): the imbalance chart of a
//! parallel job.

use serde::{Deserialize, Serialize};

use crate::axis::{Kind, Scale, Tick};
use crate::chart::{
    Frame, LegendEntry, PALETTE, Rect, Swatch, axis, begin, finish, muted_label, place_label,
};
use crate::svg::{Anchor, Stroke};

/// One stacked component: a value per category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BarSeries {
    /// Name shown in the legend.
    pub name: String,
    /// One value per category (non-finite or negative values count as 0).
    pub values: Vec<f64>,
}

/// Options of [`bar_chart_svg`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BarOptions {
    /// Title.
    pub title: String,
    /// x axis label (what the categories are).
    pub x_label: String,
    /// y axis label, with its unit.
    pub y_label: String,
    /// Labelled dashed horizontal lines at these values (a mean, a maximum).
    pub lines: Vec<(f64, String)>,
    /// One or two sentences saying how to read the chart.
    pub caption: String,
}

/// Categories labelled at most this many times; the others are ticks only.
const MAX_LABELS: usize = 24;

/// Stacked bars, one per category, the series stacked bottom-up in the given order (colours
/// from the palette, legend, caption). The y axis starts at 0.
pub fn bar_chart_svg(categories: &[String], series: &[BarSeries], opts: &BarOptions) -> String {
    let f = Frame::standard();
    let n = categories.len().max(1);
    let val = |s: &BarSeries, i: usize| {
        s.values
            .get(i)
            .copied()
            .filter(|v| v.is_finite() && *v > 0.0)
            .unwrap_or(0.0)
    };
    let totals: Vec<f64> = (0..n)
        .map(|i| series.iter().map(|s| val(s, i)).sum())
        .collect();
    let top = totals
        .iter()
        .copied()
        .chain(opts.lines.iter().map(|l| l.0).filter(|v| v.is_finite()))
        .fold(0.0, f64::max);
    let (ys, yticks) = axis(
        Kind::Linear,
        0.0,
        if top > 0.0 { top * 1.05 } else { 1.0 },
        f.bottom,
        f.top,
    );
    let xs = Scale {
        kind: Kind::Linear,
        lo: 0.0,
        hi: n as f64,
        p0: f.left,
        p1: f.right,
    };
    let every = n.div_ceil(MAX_LABELS);
    let xticks: Vec<Tick> = categories
        .iter()
        .enumerate()
        .map(|(i, c)| Tick {
            value: i as f64 + 0.5,
            label: (i % every == 0).then(|| c.clone()),
            major: false,
        })
        .collect();

    let mut svg = begin(
        &f,
        (&opts.title, &opts.caption),
        (&xs, &xticks),
        (&ys, &yticks),
        (&opts.x_label, &opts.y_label),
    );
    let slot = (f.right - f.left) / n as f64;
    let width = (slot * 0.8).max(1.0);
    svg.open_group("bars");
    for i in 0..categories.len() {
        let x = f.left + slot * i as f64 + (slot - width) / 2.0;
        let mut base = 0.0;
        for (k, s) in series.iter().enumerate() {
            let v = val(s, i);
            if v <= 0.0 {
                continue;
            }
            let (y0, y1) = (ys.px(base), ys.px(base + v));
            svg.rect(
                x,
                y1,
                width,
                y0 - y1,
                PALETTE[k % PALETTE.len()],
                1.0,
                (width >= 4.0).then(|| Stroke::solid("#ffffff", 0.5)),
                Some("bar"),
            );
            base += v;
        }
    }
    svg.close_group();
    let mut taken: Vec<Rect> = Vec::new();
    svg.open_group("reference-lines");
    for (v, label) in opts.lines.iter().filter(|l| l.0.is_finite()) {
        let y = ys.px(*v);
        svg.line(
            f.left,
            y,
            f.right,
            y,
            Stroke::dashed("#222222", 1.4, "6 4"),
            Some("reference"),
        );
        let cands = [
            (-4.0, -4.0, Anchor::End),
            (-4.0, 13.0, Anchor::End),
            (4.0, -4.0, Anchor::Start),
            (4.0, 13.0, Anchor::Start),
        ];
        let pos = place_label(&f, &mut taken, (f.right, y), label, 11.0, &cands);
        muted_label(&mut svg, pos, label, "reference-label");
    }
    svg.close_group();
    let mut legend: Vec<LegendEntry> = series
        .iter()
        .enumerate()
        .map(|(k, s)| LegendEntry {
            swatch: Swatch::Box {
                color: PALETTE[k % PALETTE.len()].into(),
            },
            label: s.name.clone(),
        })
        .collect();
    if !opts.lines.is_empty() {
        legend.push(LegendEntry::line("#222222", 1.4, Some("6 4"), "reference"));
    }
    finish(svg, &f, &legend, &opts.caption)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(n: usize) -> String {
        let cats: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        bar_chart_svg(
            &cats,
            &[
                BarSeries {
                    name: "computation".into(),
                    values: (0..n).map(|i| (i + 1) as f64).collect(),
                },
                BarSeries {
                    name: "MPI".into(),
                    values: (0..n).map(|i| (n - i) as f64).collect(),
                },
            ],
            &BarOptions {
                title: "Time per rank".into(),
                x_label: "rank".into(),
                y_label: "time [s]".into(),
                lines: vec![(2.5, "mean computation".into())],
                caption: "Stacked time per rank.".into(),
            },
        )
    }

    #[test]
    fn one_bar_segment_per_rank_and_series() {
        let svg = chart(4);
        roxmltree::Document::parse(&svg).unwrap();
        assert_eq!(svg.matches("class=\"bar\"").count(), 8);
        assert!(svg.contains("mean computation"));
        assert!(svg.contains("<title>Time per rank</title>"));
        // Every stack reaches the same total (n + 1): the bars' tops are level.
        let tops: Vec<f64> = svg
            .lines()
            .filter(|l| l.contains("class=\"bar\""))
            .map(|l| {
                let a = l.find(" y=\"").unwrap() + 4;
                l[a..a + l[a..].find('"').unwrap()].parse().unwrap()
            })
            .collect();
        let highest = tops.iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(
            tops.iter().filter(|t| (**t - highest).abs() < 0.2).count(),
            4
        );
    }

    #[test]
    fn many_categories_are_thinned_and_stay_valid() {
        let svg = chart(1000);
        roxmltree::Document::parse(&svg).unwrap();
        let labels = svg.matches("class=\"tick\"").count();
        assert!(labels < 60, "{labels} tick labels");
        // The same input gives the same bytes.
        assert_eq!(svg, chart(1000));
    }
}
