//! Drawing cache-aware rooflines on log-log axes: one bandwidth line per level up to the raw
//! peak, the raw peak (solid) and the weighted peak (dotted), labels along the lines placed
//! where they cross the fewest other lines and labels.

use crate::axis::{Scale, fmt_value};
use crate::chart::{Frame, Rect, clip_segment, spread};
use crate::svg::{Anchor, Stroke, Svg, TextStyle, text_width};

/// One bandwidth roof.
pub struct Roof {
    /// Bandwidth, GB/s.
    pub bw: f64,
    /// Colour.
    pub color: &'static str,
    /// Label drawn along the roof.
    pub label: String,
    /// Class of its SVG group.
    pub class: String,
    /// Dash pattern (the source machine's roofs in the projection chart).
    pub dash: Option<&'static str>,
}

/// A machine's roofs.
pub struct RoofSet {
    /// The bandwidth roofs.
    pub roofs: Vec<Roof>,
    /// The compute peak, GFLOP/s.
    pub peak: f64,
    /// The weighted peak, when it differs from the peak.
    pub weighted: Option<f64>,
    /// Colour of the peak line.
    pub peak_color: &'static str,
    /// Prefix of the peak labels (`""`, `"tx2 "`).
    pub prefix: String,
}

/// Lines drawn, kept as obstacles for label placement.
#[derive(Default)]
pub struct Obstacles {
    /// Line segments drawn, px.
    pub segments: Vec<((f64, f64), (f64, f64))>,
    /// Boxes drawn (labels, markers), px.
    pub rects: Vec<Rect>,
}

/// A roof line placed on the chart: its visible pixel segment.
struct Placed {
    p0: (f64, f64),
    p1: (f64, f64),
    label: String,
    color: &'static str,
}

const ROOF_LABEL_SIZE: f64 = 10.5;

/// Draws the roof lines and peaks of every set; returns the roof segments for labelling
/// later (call [`label_roofs`] after every other element is placed).
pub fn draw_roofs(
    svg: &mut Svg,
    f: &Frame,
    xs: &Scale,
    ys: &Scale,
    sets: &[RoofSet],
    obstacles: &mut Obstacles,
) -> RoofLabels {
    let mut placed = Vec::new();
    let mut peak_labels: Vec<(f64, String, &'static str, bool)> = Vec::new();
    svg.open_group("rooflines");
    for set in sets {
        for r in &set.roofs {
            if !(r.bw.is_finite() && r.bw > 0.0) {
                continue;
            }
            // y = bw * x, visible for x in the domain, y in the domain and below the peak.
            let x0 = xs.lo.max(ys.lo / r.bw);
            let x1 = xs.hi.min(set.peak.min(ys.hi) / r.bw);
            if x1 <= x0 {
                continue;
            }
            let p0 = (xs.px(x0), ys.px(r.bw * x0));
            let p1 = (xs.px(x1), ys.px(r.bw * x1));
            let stroke = match r.dash {
                Some(d) => Stroke::dashed(r.color, 1.8, d),
                None => Stroke::solid(r.color, 2.0),
            };
            svg.polyline(&[p0, p1], stroke, Some(&r.class));
            obstacles.segments.push((p0, p1));
            placed.push(Placed {
                p0,
                p1,
                label: r.label.clone(),
                color: r.color,
            });
        }
        let max_bw = set
            .roofs
            .iter()
            .map(|r| r.bw)
            .filter(|b| b.is_finite() && *b > 0.0)
            .fold(0.0, f64::max);
        let mut peaks = vec![(set.peak, false)];
        if let Some(w) = set.weighted {
            peaks.push((w, true));
        }
        for (value, weighted) in peaks {
            if !ys.contains(value) || max_bw <= 0.0 {
                continue;
            }
            let x0 = (value / max_bw).max(xs.lo);
            if x0 >= xs.hi {
                continue;
            }
            let y = ys.px(value);
            let p0 = (xs.px(x0), y);
            let p1 = (f.right, y);
            let (stroke, class) = if weighted {
                (Stroke::dashed(set.peak_color, 2.0, "2 3"), "peak-weighted")
            } else {
                (Stroke::solid(set.peak_color, 1.8), "peak")
            };
            svg.polyline(&[p0, p1], stroke, Some(class));
            obstacles.segments.push((p0, p1));
            let text = if weighted {
                format!("{}weighted peak {} GFLOP/s", set.prefix, fmt_value(value))
            } else {
                format!("{}peak {} GFLOP/s", set.prefix, fmt_value(value))
            };
            peak_labels.push((y, text, set.peak_color, weighted));
        }
    }
    svg.close_group();
    // Peak labels at the right end: raw above its line, weighted below, pushed apart.
    let desired: Vec<f64> = peak_labels
        .iter()
        .map(|(y, _, _, w)| if *w { y + 13.0 } else { y - 5.0 })
        .collect();
    let ys_spread = spread(&desired, 13.0, f.top + 12.0, f.bottom - 4.0);
    let mut labels = Vec::new();
    for ((_, text, color, _), y) in peak_labels.into_iter().zip(ys_spread) {
        let x = f.right - 6.0;
        obstacles
            .rects
            .push(Rect::of_text(x, y, &text, 10.5, Anchor::End));
        labels.push((x, y, text, color));
    }
    RoofLabels {
        placed,
        peak_labels: labels,
    }
}

/// Roof and peak labels still to be drawn.
pub struct RoofLabels {
    placed: Vec<Placed>,
    peak_labels: Vec<(f64, f64, String, &'static str)>,
}

/// Draws the peak labels and the roof labels (along the lines), avoiding `obstacles`.
pub fn label_roofs(
    svg: &mut Svg,
    f: &Frame,
    xs: &Scale,
    ys: &Scale,
    labels: RoofLabels,
    obstacles: &mut Obstacles,
) {
    svg.open_group("roof-labels");
    for (x, y, text, color) in &labels.peak_labels {
        svg.text(
            *x,
            *y,
            text,
            &TextStyle {
                size: 10.5,
                anchor: Anchor::End,
                fill: color,
                halo: true,
                class: Some("peak-label"),
                ..TextStyle::default()
            },
        );
    }
    // Every roof has slope 1 in decades: in pixels they are parallel, along `d`; `n` is the
    // normal pointing up-left. Labels are boxes in the (u, v) = (along, across) frame.
    let a = (xs.p1 - xs.p0) / (xs.hi.log10() - xs.lo.log10());
    let b = (ys.p0 - ys.p1) / (ys.hi.log10() - ys.lo.log10());
    let len = (a * a + b * b).sqrt();
    let d = (a / len, -b / len);
    let n = (-b / len, -a / len);
    let to_uv = |p: (f64, f64)| (p.0 * d.0 + p.1 * d.1, p.0 * n.0 + p.1 * n.1);
    let to_xy = |u: f64, v: f64| (u * d.0 + v * n.0, u * d.1 + v * n.1);
    let angle = (-b).atan2(a).to_degrees();
    let mut segments_uv: Vec<((f64, f64), (f64, f64))> = obstacles
        .segments
        .iter()
        .map(|(p, q)| (to_uv(*p), to_uv(*q)))
        .collect();
    for r in &obstacles.rects {
        let c = [(r.x0, r.y0), (r.x1, r.y0), (r.x1, r.y1), (r.x0, r.y1)];
        for i in 0..4 {
            segments_uv.push((to_uv(c[i]), to_uv(c[(i + 1) % 4])));
        }
    }
    // Candidate boxes of each label with their cost (lines and labels crossed, distance
    // from the preferred spot, below the line rather than above).
    let h = ROOF_LABEL_SIZE;
    let mut candidates: Vec<Vec<(f64, Rect)>> = Vec::new();
    for p in &labels.placed {
        let (u0, v) = to_uv(p.p0);
        let (u1, _) = to_uv(p.p1);
        let w = text_width(&p.label, ROOF_LABEL_SIZE) + 2.0;
        let pref = u0 + 0.3 * (u1 - u0 - w);
        let mut c = Vec::new();
        let mut s = u0 + 4.0;
        while s + w <= u1 - 4.0 {
            for (vlo, penalty) in [(v + 2.0, 0.0), (v - 2.0 - h, 40.0)] {
                let r = Rect {
                    x0: s,
                    y0: vlo,
                    x1: s + w,
                    y1: vlo + h,
                };
                let inside = [(r.x0, r.y0), (r.x1, r.y0), (r.x1, r.y1), (r.x0, r.y1)]
                    .iter()
                    .map(|(u, v)| to_xy(*u, *v))
                    .all(|(x, y)| x >= f.left && x <= f.right && y >= f.top && y <= f.bottom);
                if !inside {
                    continue;
                }
                let crossings = segments_uv
                    .iter()
                    .filter(|(a, b)| clip_segment(*a, *b, &r).is_some())
                    .count();
                c.push((
                    crossings as f64 * 1000.0 + penalty + (s - pref).abs() * 0.05,
                    r,
                ));
            }
            s += 5.0;
        }
        candidates.push(c);
    }
    // Greedy placement in a given order; the best order wins (every order for up to six
    // labels). A label that cannot be placed costs more than any crossing.
    let place = |order: &[usize]| -> (f64, Vec<Option<Rect>>) {
        let mut chosen: Vec<Option<Rect>> = vec![None; candidates.len()];
        let mut total = 0.0;
        for &i in order {
            let best = candidates[i]
                .iter()
                .filter(|(_, r)| chosen.iter().flatten().all(|o| !o.overlaps(r)))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            match best {
                Some((c, r)) => {
                    total += c;
                    chosen[i] = Some(*r);
                }
                None => total += 5000.0,
            }
        }
        (total, chosen)
    };
    let natural: Vec<usize> = (0..candidates.len()).collect();
    let mut best = place(&natural);
    if candidates.len() <= 6 {
        for order in permutations(candidates.len()) {
            let r = place(&order);
            if r.0 < best.0 - 1e-9 {
                best = r;
            }
        }
    }
    for (p, r) in labels.placed.iter().zip(best.1) {
        let Some(r) = r else { continue };
        // Baseline a little above the bottom of the box (descenders).
        let (x, y) = to_xy(r.x0 + 1.0, r.y0 + 2.5);
        svg.text(
            x,
            y,
            &p.label,
            &TextStyle {
                size: ROOF_LABEL_SIZE,
                fill: p.color,
                rotate: angle,
                halo: true,
                bold: true,
                class: Some("roof-label"),
                ..TextStyle::default()
            },
        );
    }
    svg.close_group();
}

/// A short label for a bandwidth roof: `L1 36.2 GB/s`.
pub fn roof_label(prefix: &str, level: &str, bw: f64) -> String {
    format!("{prefix}{level} {} GB/s", fmt_value(bw))
}

/// Whether the weighted peak differs enough from the peak to be drawn separately.
pub fn distinct(weighted: f64, peak: f64) -> bool {
    weighted.is_finite() && weighted > 0.0 && (weighted - peak).abs() > 1e-6 * peak.abs()
}

/// Every permutation of `0..n`, in lexicographic order.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut cur: Vec<usize> = (0..n).collect();
    loop {
        out.push(cur.clone());
        // Next lexicographic permutation.
        let Some(i) = (1..n).rev().find(|&i| cur[i - 1] < cur[i]) else {
            return out;
        };
        let j = (i..n).rev().find(|&j| cur[j] > cur[i - 1]).expect("exists");
        cur.swap(i - 1, j);
        cur[i..].reverse();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn permutations() {
        let p = super::permutations(3);
        assert_eq!(p.len(), 6);
        assert_eq!(p[0], [0, 1, 2]);
        assert_eq!(p[5], [2, 1, 0]);
        assert_eq!(super::permutations(0), [Vec::<usize>::new()]);
    }
}
