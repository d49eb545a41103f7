//! The SVG pieces every picture shares (the timeline, the graph, the bench's plots): the
//! document's opening tag, arrow-head markers, the colour palette, and text placed at a point.
//! One place for them, so that the pictures look alike and escape their text alike.

use super::xml_escape;
use std::fmt::Write as _;

/// Colours of series, message types and the like, in order of use: Tableau's, but no red
/// (the timeline's true suspicions) and no gold (leaders).
pub const PALETTE: [&str; 10] = [
    "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#ff7f0e", "#393b79",
];

/// The `k`-th colour of the palette, round again past its end.
pub fn colour(k: usize) -> &'static str {
    PALETTE[k % PALETTE.len()]
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
pub fn arrow_head(out: &mut String, id: &str, fill: &str, size: f64) {
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
pub fn on_circle(n: usize, centre: (f64, f64), radius: f64) -> Vec<(f64, f64)> {
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
pub fn count_class(doc: &roxmltree::Document<'_>, tag: &str, class: &str) -> usize {
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
    fn wrapping_cuts_at_spaces() {
        assert_eq!(wrap("aa bb cc dd", 5), vec!["aa bb", "cc dd"]);
        assert_eq!(wrap("a verylongword b", 4), vec!["a", "verylongword", "b"]);
        assert_eq!(wrap("", 4), vec![""]);
    }
}
