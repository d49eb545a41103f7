//! The SVG pieces every picture shares (the timeline, the graph, the bench's plots): the
//! document's opening tag, arrow-head markers, the colour palette, and text placed at a point.
//! One place for them, so that the pictures look alike and escape their text alike.

use super::xml_escape;
use std::fmt::Write as _;

/// Colours of series, message types and the like, in order of use: Tableau's, but no red
/// (the timeline's true suspicions) and no gold (leaders).
pub(crate) const PALETTE: [&str; 10] = [
    "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#ff7f0e", "#393b79",
];

/// The `k`-th colour of the palette, round again past its end.
pub(crate) fn colour(k: usize) -> &'static str {
    PALETTE[k % PALETTE.len()]
}

/// The colour of message type `name`, the same in every picture of every run: a hue from a
/// hash of the name (FNV-1a), kept off red (true suspicions, violations) and gold (leaders),
/// at a saturation and lightness that read on white.
pub(crate) fn type_colour(name: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    // Hues 70..=330: green, cyan, blue, violet, magenta; reds and golds are the marks'.
    let hue = 70.0 + f64::from(h % 261);
    let light = if (h >> 9) & 1 == 0 { 0.36 } else { 0.46 };
    hsl_hex(hue, 0.75, light)
}

/// `#rrggbb` of a colour given as hue (degrees), saturation and lightness (0..1).
pub(crate) fn hsl_hex(hue: f64, sat: f64, light: f64) -> String {
    let c = (1.0 - (2.0 * light - 1.0).abs()) * sat;
    let hp = hue / 60.0;
    let x = c * (1.0 - (hp % 2.0 - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = light - c / 2.0;
    let v = |k: f64| ((k + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    format!("#{:02x}{:02x}{:02x}", v(r), v(g), v(b))
}

/// An open arrow head `id` (a chevron drawn in `stroke`, no fill), for `marker-end`: no event
/// mark is a chevron, so a message's end cannot be taken for an event.
pub(crate) fn open_head(out: &mut String, id: &str, stroke: &str, size: f64) {
    let _ = write!(
        out,
        r#"<marker id="{id}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="{size}" markerHeight="{size}" orient="auto" markerUnits="userSpaceOnUse"><path d="M1,1L9,5L1,9" fill="none" stroke="{stroke}" stroke-width="1.8" stroke-linejoin="miter"/></marker>"#
    );
}

/// Opens a standalone SVG document of `w` x `h` (its `id` when given), sans-serif at
/// `font_size`, on a white background.
pub fn open(out: &mut String, id: Option<&str>, w: f64, h: f64, font_size: f64) {
    let id = id.map(|i| format!(r#" id="{}""#, xml_escape(i))).unwrap_or_default();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg"{id} width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="{font_size}">"#
    );
    let _ = writeln!(out, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
}

/// A triangular arrow head `id` in `fill`, `size` user units wide, for `marker-end`.
pub(crate) fn arrow_head(out: &mut String, id: &str, fill: &str, size: f64) {
    let _ = write!(
        out,
        r#"<marker id="{id}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="{size}" markerHeight="{size}" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="{fill}"/></marker>"#
    );
}

/// Where text stands against its point.
#[derive(Debug, Clone, Copy)]
pub enum Anchor {
    /// The text starts at the point.
    Start,
    /// The text is centred on the point.
    Middle,
    /// The text ends at the point.
    End,
}

/// `text` (escaped) at (x, baseline y), with any further attributes in `attrs`.
pub fn text(out: &mut String, x: f64, y: f64, anchor: Anchor, attrs: &str, text: &str) {
    let anchor = match anchor {
        Anchor::Start => "start",
        Anchor::Middle => "middle",
        Anchor::End => "end",
    };
    let _ = writeln!(
        out,
        r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}" {attrs}>{}</text>"#,
        xml_escape(text)
    );
}

/// Where `n` points stand evenly on a circle of `radius` round `centre`, the first at the top,
/// going clockwise.
pub(crate) fn on_circle(n: usize, centre: (f64, f64), radius: f64) -> Vec<(f64, f64)> {
    let step = std::f64::consts::TAU / n.max(1) as f64;
    (0..n)
        .map(|i| {
            let a = step * i as f64 - std::f64::consts::FRAC_PI_2;
            (centre.0 + radius * a.cos(), centre.1 + radius * a.sin())
        })
        .collect()
}

/// How many `tag` elements of `doc` have `class` among their classes (the tests' reading of
/// a drawing).
#[cfg(test)]
pub(crate) fn count_class(doc: &roxmltree::Document<'_>, tag: &str, class: &str) -> usize {
    doc.descendants()
        .filter(|n| n.has_tag_name(tag) && n.attribute("class").is_some_and(|c| c.split(' ').any(|w| w == class)))
        .count()
}

/// `text` cut into lines of at most `width` characters, at spaces (a longer word stands alone).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
pub(crate) fn nice_step(raw: f64) -> f64 {
    let raw = raw.max(0.001);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&v| v >= raw)
        .unwrap_or(10.0 * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_well_formed_together() {
        let mut s = String::new();
        open(&mut s, Some("a&b"), 100.0, 50.0, 12.0);
        s.push_str("<defs>");
        arrow_head(&mut s, "head", colour(11), 6.0);
        s.push_str("</defs>");
        text(&mut s, 1.0, 2.0, Anchor::Middle, r#"font-size="9""#, "x < y");
        s.push_str("</svg>");
        let doc = roxmltree::Document::parse(&s).unwrap();
        assert_eq!(doc.root_element().attribute("id"), Some("a&b"));
        assert!(s.contains("x &lt; y") && s.contains(PALETTE[1]));
    }

    #[test]
    fn a_type_has_one_colour_everywhere_and_never_red_or_gold() {
        assert_eq!(type_colour("ELECTION"), type_colour("ELECTION"));
        assert_ne!(type_colour("ELECTION"), type_colour("COORDINATOR"));
        assert_eq!(hsl_hex(0.0, 1.0, 0.5), "#ff0000");
        assert_eq!(hsl_hex(240.0, 1.0, 0.5), "#0000ff");
        for name in [
            "ELECTION",
            "COORDINATOR",
            "GRANT",
            "BEGIN",
            "END",
            "HEARTBEAT",
            "YO",
            "X",
        ] {
            let c = type_colour(name);
            let r = u8::from_str_radix(&c[1..3], 16).unwrap();
            let g = u8::from_str_radix(&c[3..5], 16).unwrap();
            let b = u8::from_str_radix(&c[5..7], 16).unwrap();
            assert!(!(r > 150 && g < 90 && b < 90), "{name}: {c} is red");
        }
    }

    #[test]
    fn wrapping_cuts_at_spaces() {
        assert_eq!(wrap("aa bb cc dd", 5), vec!["aa bb", "cc dd"]);
        assert_eq!(wrap("a verylongword b", 4), vec!["a", "verylongword", "b"]);
        assert_eq!(wrap("", 4), vec![""]);
    }
}
