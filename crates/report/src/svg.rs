//! A small SVG writer: elements with presentation attributes only (no `<style>`, no ids, no
//! scripts), so that several charts can be inlined in one HTML page without clashing, and
//! stable number formatting, so that the output is byte-for-byte reproducible.

use std::fmt::Write;

/// Escapes `s` for XML text and attribute values (`&`, `<`, `>`, `"`, `'`). Control
/// characters that XML 1.0 forbids are dropped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(ch),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// Formats a pixel coordinate with at most one decimal, without trailing zeros and without
/// a negative zero: `12.3`, `40`, `-0.5`.
pub fn num(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == 0.0 {
        "0".to_string()
    } else {
        format!("{r}")
    }
}

/// Approximate advance width of `s` in a sans-serif font of `size` px (no font metrics are
/// available; the factor is on the wide side so that layouts leave room).
pub fn text_width(s: &str, size: f64) -> f64 {
    s.chars()
        .map(|c| match c {
            'i' | 'l' | 'j' | '.' | ',' | ':' | ';' | '|' | '!' | '\'' | ' ' | '(' | ')' | '['
            | ']' | 'I' | 'f' | 't' | 'r' => 0.36,
            'm' | 'w' | 'M' | 'W' | '@' | '%' => 0.9,
            c if c.is_ascii_uppercase() => 0.7,
            c if c.is_ascii_digit() => 0.6,
            _ => 0.58,
        })
        .sum::<f64>()
        * size
}

/// Greedy word wrap of `s` into lines of at most `max_width` px at `size` px.
pub fn wrap(s: &str, size: f64, max_width: f64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        let candidate = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if text_width(&candidate, size) > max_width && !cur.is_empty() {
            lines.push(std::mem::take(&mut cur));
            cur = word.to_string();
        } else {
            cur = candidate;
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// Horizontal alignment of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// Left-aligned on the anchor point.
    Start,
    /// Centred on the anchor point.
    Middle,
    /// Right-aligned on the anchor point.
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// How a text is drawn.
#[derive(Debug, Clone)]
pub struct TextStyle<'a> {
    /// Font size, px.
    pub size: f64,
    /// Alignment.
    pub anchor: Anchor,
    /// Fill colour.
    pub fill: &'a str,
    /// Bold.
    pub bold: bool,
    /// Italic.
    pub italic: bool,
    /// Rotation in degrees around the anchor point (counter-clockwise is negative).
    pub rotate: f64,
    /// A white outline under the glyphs, so the text stays readable over lines.
    pub halo: bool,
    /// Monospace font.
    pub monospace: bool,
    /// Class attribute.
    pub class: Option<&'a str>,
}

impl Default for TextStyle<'_> {
    fn default() -> Self {
        TextStyle {
            size: 11.0,
            anchor: Anchor::Start,
            fill: "#222222",
            bold: false,
            italic: false,
            rotate: 0.0,
            halo: false,
            monospace: false,
            class: None,
        }
    }
}

/// A stroke: colour, width, optional dash pattern.
#[derive(Debug, Clone, Copy)]
pub struct Stroke<'a> {
    /// Colour.
    pub color: &'a str,
    /// Width, px.
    pub width: f64,
    /// Dash pattern (`stroke-dasharray`).
    pub dash: Option<&'a str>,
}

impl<'a> Stroke<'a> {
    /// A solid stroke.
    pub fn solid(color: &'a str, width: f64) -> Self {
        Stroke {
            color,
            width,
            dash: None,
        }
    }

    /// A dashed stroke.
    pub fn dashed(color: &'a str, width: f64, dash: &'a str) -> Self {
        Stroke {
            color,
            width,
            dash: Some(dash),
        }
    }

    fn attrs(&self) -> String {
        let mut s = format!(
            r#" stroke="{}" stroke-width="{}""#,
            self.color,
            num(self.width)
        );
        if let Some(d) = self.dash {
            let _ = write!(s, r#" stroke-dasharray="{d}""#);
        }
        s
    }
}

/// Marker shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A circle.
    Circle,
    /// A square.
    Square,
    /// A diamond.
    Diamond,
    /// A triangle pointing up.
    Triangle,
    /// A cross.
    Cross,
}

/// An SVG document being written.
pub struct Svg {
    width: f64,
    title: String,
    desc: String,
    body: String,
}

fn class_attr(class: Option<&str>) -> String {
    class
        .map(|c| format!(r#" class="{}""#, escape(c)))
        .unwrap_or_default()
}

impl Svg {
    /// A document `width` px wide; `title` and `desc` become the accessible name and
    /// description.
    pub fn new(width: f64, title: &str, desc: &str) -> Svg {
        Svg {
            width,
            title: title.to_string(),
            desc: desc.to_string(),
            body: String::new(),
        }
    }

    /// Closes the document at `height` px.
    pub fn finish(self, height: f64) -> String {
        let (w, h) = (num(self.width), num(height));
        let mut out = String::with_capacity(self.body.len() + 512);
        let _ = writeln!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" font-family="DejaVu Sans, Verdana, Arial, sans-serif">"#
        );
        let _ = writeln!(out, "<title>{}</title>", escape(&self.title));
        let _ = writeln!(out, "<desc>{}</desc>", escape(&self.desc));
        let _ = writeln!(
            out,
            r##"<rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>"##
        );
        out.push_str(&self.body);
        out.push_str("</svg>\n");
        out
    }

    /// Opens a group `<g>` of class `class`.
    pub fn open_group(&mut self, class: &str) {
        let _ = writeln!(self.body, r#"<g class="{}">"#, escape(class));
    }

    /// Closes the group last opened.
    pub fn close_group(&mut self) {
        self.body.push_str("</g>\n");
    }

    /// A line from (`x1`, `y1`) to (`x2`, `y2`).
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, s: Stroke<'_>, class: Option<&str>) {
        let _ = writeln!(
            self.body,
            r#"<line{} x1="{}" y1="{}" x2="{}" y2="{}"{}/>"#,
            class_attr(class),
            num(x1),
            num(y1),
            num(x2),
            num(y2),
            s.attrs()
        );
    }

    fn points(pts: &[(f64, f64)]) -> String {
        pts.iter()
            .map(|(x, y)| format!("{},{}", num(*x), num(*y)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// An open polyline through `pts`.
    pub fn polyline(&mut self, pts: &[(f64, f64)], s: Stroke<'_>, class: Option<&str>) {
        let _ = writeln!(
            self.body,
            r#"<polyline{} points="{}" fill="none"{} stroke-linejoin="round"/>"#,
            class_attr(class),
            Self::points(pts),
            s.attrs()
        );
    }

    /// A filled polygon through `pts`.
    pub fn polygon(&mut self, pts: &[(f64, f64)], fill: &str, opacity: f64, class: Option<&str>) {
        let _ = writeln!(
            self.body,
            r#"<polygon{} points="{}" fill="{fill}" fill-opacity="{}"/>"#,
            class_attr(class),
            Self::points(pts),
            opacity
        );
    }

    /// A rectangle.
    #[allow(clippy::too_many_arguments)]
    pub fn rect(
        &mut self,
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        fill: &str,
        opacity: f64,
        stroke: Option<Stroke<'_>>,
        class: Option<&str>,
    ) {
        let _ = writeln!(
            self.body,
            r#"<rect{} x="{}" y="{}" width="{}" height="{}" fill="{fill}"{}{}/>"#,
            class_attr(class),
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0)),
            if opacity < 1.0 {
                format!(r#" fill-opacity="{opacity}""#)
            } else {
                String::new()
            },
            stroke.map(|s| s.attrs()).unwrap_or_default()
        );
    }

    /// A marker of `shape` centred on (x, y), `r` px in radius; hollow markers are drawn
    /// with a white fill and a coloured outline.
    #[allow(clippy::too_many_arguments)]
    pub fn marker(
        &mut self,
        shape: Shape,
        x: f64,
        y: f64,
        r: f64,
        color: &str,
        filled: bool,
        class: Option<&str>,
    ) {
        let (fill, stroke, sw) = if filled {
            (color, "#1a1a1a", 1.0)
        } else {
            ("#ffffff", color, 2.0)
        };
        let c = class_attr(class);
        match shape {
            Shape::Circle => {
                let _ = writeln!(
                    self.body,
                    r#"<circle{c} cx="{}" cy="{}" r="{}" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/>"#,
                    num(x),
                    num(y),
                    num(r)
                );
            }
            Shape::Square => {
                let s = r * 0.9;
                let _ = writeln!(
                    self.body,
                    r#"<rect{c} x="{}" y="{}" width="{}" height="{}" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/>"#,
                    num(x - s),
                    num(y - s),
                    num(2.0 * s),
                    num(2.0 * s)
                );
            }
            Shape::Diamond | Shape::Triangle => {
                let pts: Vec<(f64, f64)> = if shape == Shape::Diamond {
                    let s = r * 1.25;
                    vec![(x, y - s), (x + s, y), (x, y + s), (x - s, y)]
                } else {
                    let s = r * 1.2;
                    vec![(x, y - s), (x + s, y + s * 0.8), (x - s, y + s * 0.8)]
                };
                let _ = writeln!(
                    self.body,
                    r#"<polygon{c} points="{}" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/>"#,
                    Self::points(&pts)
                );
            }
            Shape::Cross => {
                let s = r;
                let _ = writeln!(
                    self.body,
                    r#"<path{c} d="M{} {}L{} {}M{} {}L{} {}" fill="none" stroke="{color}" stroke-width="2.5" stroke-linecap="round"/>"#,
                    num(x - s),
                    num(y - s),
                    num(x + s),
                    num(y + s),
                    num(x - s),
                    num(y + s),
                    num(x + s),
                    num(y - s)
                );
            }
        }
    }

    /// A text (escaped) at (x, y), the baseline at y.
    pub fn text(&mut self, x: f64, y: f64, s: &str, t: &TextStyle<'_>) {
        let mut attrs = String::new();
        if t.rotate != 0.0 {
            let _ = write!(
                attrs,
                r#" transform="translate({},{}) rotate({})""#,
                num(x),
                num(y),
                num(t.rotate)
            );
        } else {
            let _ = write!(attrs, r#" x="{}" y="{}""#, num(x), num(y));
        }
        let _ = write!(attrs, r#" font-size="{}""#, num(t.size));
        if t.anchor != Anchor::Start {
            let _ = write!(attrs, r#" text-anchor="{}""#, t.anchor.as_str());
        }
        if t.bold {
            attrs.push_str(r#" font-weight="bold""#);
        }
        if t.italic {
            attrs.push_str(r#" font-style="italic""#);
        }
        if t.monospace {
            attrs.push_str(r#" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace""#);
        }
        if t.halo {
            // A white copy underneath rather than `paint-order`, which some renderers ignore
            // (they would then paint the white stroke over the glyphs).
            let _ = writeln!(
                self.body,
                r##"<text{attrs} fill="#ffffff" stroke="#ffffff" stroke-width="3" stroke-linejoin="round" aria-hidden="true">{}</text>"##,
                escape(s)
            );
        }
        let _ = write!(attrs, r#" fill="{}""#, t.fill);
        let _ = writeln!(
            self.body,
            "<text{}{attrs}>{}</text>",
            class_attr(t.class),
            escape(s)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_drops_control_characters() {
        assert_eq!(
            escape(r#"a<b & "c" 'd'>"#),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
        );
        assert_eq!(escape("x\u{1}y\u{1b}z"), "xyz");
        assert_eq!(escape("tab\tok"), "tab\tok");
        assert_eq!(escape("GB/s µ → ok"), "GB/s µ → ok");
    }

    #[test]
    fn numbers_are_stable() {
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(40.0), "40");
        assert_eq!(num(-0.04), "0");
        assert_eq!(num(-0.5), "-0.5");
        assert_eq!(num(0.05), "0.1");
        assert_eq!(num(1234.56), "1234.6");
    }

    #[test]
    fn wraps_on_words() {
        let lines = wrap("one two three four five six seven", 10.0, 60.0);
        assert!(lines.len() > 1);
        assert_eq!(lines.join(" "), "one two three four five six seven");
        for l in &lines {
            assert!(text_width(l, 10.0) <= 60.0 || !l.contains(' '));
        }
        assert!(wrap("", 10.0, 60.0).is_empty());
    }
}
