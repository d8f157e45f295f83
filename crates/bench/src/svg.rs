//! The bandwidth-vs-working-set chart as a standalone SVG (log-log axes), written by hand.
//!
//! Shows the sweep's median with its min-max band, each level's chosen bandwidth (dashed
//! horizontal line), the cache capacities (grey verticals) and the detected plateau
//! transitions (orange verticals).

use std::fmt::Write;

use crate::report::Report;
use crate::units::format_bytes;

const W: f64 = 900.0;
const H: f64 = 530.0;
const ML: f64 = 80.0;
const MR: f64 = 210.0;
const MT: f64 = 40.0;
const MB: f64 = 80.0;

/// Renders the sweep of `r` as SVG text.
pub fn sweep_svg(r: &Report) -> String {
    let mut s = String::new();
    let pts: Vec<(f64, f64, f64, f64)> = r
        .sweep
        .iter()
        .map(|p| (p.size_bytes as f64, p.gbs.median, p.gbs.min, p.gbs.max))
        .collect();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let title = format!(
        "{}: {} ({})",
        esc(&r.run.host),
        esc(&r.sweep_kernel),
        esc(&r.run.date)
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{title}</text>"#,
        ML + (W - ML - MR) / 2.0
    );
    if pts.is_empty() {
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">no sweep points</text></svg>"#,
            W / 2.0,
            H / 2.0
        );
        return s;
    }
    let xmin = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min) / 1.2;
    let xmax = pts.iter().map(|p| p.0).fold(0.0, f64::max) * 1.2;
    let ymin = pts
        .iter()
        .map(|p| p.2)
        .fold(f64::INFINITY, f64::min)
        .max(1e-3)
        / 1.5;
    let ymax = pts.iter().map(|p| p.3).fold(0.0, f64::max) * 1.5;
    let (pw, ph) = (W - ML - MR, H - MT - MB);
    let fx = |x: f64| ML + (x.ln() - xmin.ln()) / (xmax.ln() - xmin.ln()) * pw;
    let fy = |y: f64| MT + ph - (y.ln() - ymin.ln()) / (ymax.ln() - ymin.ln()) * ph;
    // Axes and grid.
    let _ = writeln!(
        s,
        r##"<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
    );
    let mut x = 1024f64;
    while x <= xmax {
        if x >= xmin {
            let px = fx(x);
            let _ = writeln!(
                s,
                r##"<line x1="{px:.1}" y1="{MT}" x2="{px:.1}" y2="{}" stroke="#eee"/>"##,
                MT + ph
            );
            let _ = writeln!(
                s,
                r#"<text x="{px:.1}" y="{}" text-anchor="middle">{}</text>"#,
                MT + ph + 16.0,
                format_bytes(x as u64).replace(' ', "")
            );
        }
        x *= 4.0;
    }
    let mut decade = 10f64.powf(ymin.log10().floor());
    while decade <= ymax {
        for m in [1.0, 2.0, 5.0] {
            let y = decade * m;
            if y >= ymin && y <= ymax {
                let py = fy(y);
                let _ = writeln!(
                    s,
                    r##"<line x1="{ML}" y1="{py:.1}" x2="{}" y2="{py:.1}" stroke="#eee"/>"##,
                    ML + pw
                );
                let _ = writeln!(
                    s,
                    r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
                    ML - 6.0,
                    py + 4.0,
                    trim_num(y)
                );
            }
        }
        decade *= 10.0;
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">working set, all arrays (bytes, log scale)</text>"#,
        ML + pw / 2.0,
        H - 36.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(20,{}) rotate(-90)" text-anchor="middle">bandwidth, GB/s (1e9 B/s, kernel bytes; log scale)</text>"#,
        MT + ph / 2.0
    );
    // Cache capacities.
    for c in &r.topology.caches {
        let x = c.size_bytes as f64;
        if x > xmin && x < xmax {
            let px = fx(x);
            let _ = writeln!(
                s,
                r##"<line x1="{px:.1}" y1="{MT}" x2="{px:.1}" y2="{}" stroke="#999" stroke-width="1.5"/>"##,
                MT + ph
            );
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{}" fill="#666">L{} {}</text>"##,
                px + 3.0,
                MT + 14.0,
                c.level,
                format_bytes(c.size_bytes)
            );
        }
    }
    for t in &r.transitions {
        let px = fx(*t as f64);
        let _ = writeln!(
            s,
            r##"<line x1="{px:.1}" y1="{MT}" x2="{px:.1}" y2="{}" stroke="#e67e22" stroke-dasharray="2,3"/>"##,
            MT + ph
        );
    }
    // Min-max band and median line.
    let mut band = String::new();
    for p in &pts {
        let _ = write!(band, "{:.1},{:.1} ", fx(p.0), fy(p.3));
    }
    for p in pts.iter().rev() {
        let _ = write!(band, "{:.1},{:.1} ", fx(p.0), fy(p.2));
    }
    let _ = writeln!(
        s,
        r##"<polygon points="{}" fill="#1f77b4" fill-opacity="0.15" stroke="none"/>"##,
        band.trim_end()
    );
    let line: Vec<String> = pts
        .iter()
        .map(|p| format!("{:.1},{:.1}", fx(p.0), fy(p.1)))
        .collect();
    let _ = writeln!(
        s,
        r##"<polyline points="{}" fill="none" stroke="#1f77b4" stroke-width="2"/>"##,
        line.join(" ")
    );
    for p in &pts {
        let _ = writeln!(
            s,
            r##"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="#1f77b4"/>"##,
            fx(p.0),
            fy(p.1)
        );
    }
    // Levels; labels pushed apart when two bandwidths are close.
    let mut last_label_y = f64::NEG_INFINITY;
    for l in &r.levels {
        let (Some(g), Some(at)) = (l.gbs, l.at_size) else {
            continue;
        };
        if g < ymin || g > ymax {
            continue;
        }
        let py = fy(g);
        let _ = writeln!(
            s,
            r##"<line x1="{ML}" y1="{py:.1}" x2="{}" y2="{py:.1}" stroke="#c0392b" stroke-dasharray="6,4"/>"##,
            ML + pw
        );
        let _ = writeln!(
            s,
            r##"<circle cx="{:.1}" cy="{py:.1}" r="4" fill="none" stroke="#c0392b" stroke-width="2"/>"##,
            fx(at as f64).clamp(ML, ML + pw)
        );
        let ly = (py + 4.0).max(last_label_y + 14.0);
        last_label_y = ly;
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{ly:.1}" fill="#c0392b">{} {} GB/s</text>"##,
            ML + pw + 6.0,
            esc(&l.name),
            trim_num(g)
        );
    }
    // Legend: one row under the x-axis title.
    let ly = H - 14.0;
    let items: [(&str, &str, f64); 4] = [
        (
            r##"stroke="#1f77b4" stroke-width="2""##,
            "median (band: min-max)",
            ML,
        ),
        (
            r##"stroke="#c0392b" stroke-dasharray="6,4""##,
            "level bandwidth",
            ML + 200.0,
        ),
        (
            r##"stroke="#999" stroke-width="1.5""##,
            "cache capacity",
            ML + 350.0,
        ),
        (
            r##"stroke="#e67e22" stroke-dasharray="2,3""##,
            "detected transition",
            ML + 490.0,
        ),
    ];
    for (style, text, x) in items {
        let _ = writeln!(
            s,
            r#"<line x1="{x}" y1="{ly}" x2="{}" y2="{ly}" {style}/><text x="{}" y="{}">{text}</text>"#,
            x + 20.0,
            x + 24.0,
            ly + 4.0
        );
    }
    s.push_str("</svg>\n");
    s
}

fn trim_num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
