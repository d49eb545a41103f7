//! Small SVG line plots with logarithmic axes, for the bench's figures under `bench/`: one
//! polyline with markers per series, decades as grid lines, a legend. No dependency: the
//! figures are a few points each.

use crate::render::xml_escape;

use std::fmt::Write as _;

/// One named line of (x, y) points; points with a non-positive or non-finite value are left out
/// (a log axis cannot show them).
#[derive(Debug, Clone)]
pub struct Series {
    /// Its name in the legend.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
}

const W: f64 = 640.0;
const H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 55.0;
const COLOURS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"];

/// Decades covering `lo..=hi` (both positive): the powers of ten just outside them.
fn decades(lo: f64, hi: f64) -> (f64, f64) {
    let a = lo.log10().floor();
    let mut b = hi.log10().ceil();
    if b <= a {
        b = a + 1.0;
    }
    (a, b)
}

fn label(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// An SVG document: `series` on log-log axes titled `title`, axis labels `x_label`, `y_label`.
pub fn log_log(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let ok = |&(x, y): &(f64, f64)| x.is_finite() && y.is_finite() && x > 0.0 && y > 0.0;
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(ok)
        .collect();
    let (xs, ys): (Vec<f64>, Vec<f64>) = if all.is_empty() {
        (vec![1.0, 10.0], vec![1.0, 10.0])
    } else {
        all.iter().copied().unzip()
    };
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (x0, x1) = decades(min(&xs), max(&xs));
    let (y0, y1) = decades(min(&ys), max(&ys));
    let px = |x: f64| LEFT + (x.log10() - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let py = |y: f64| H - BOTTOM - (y.log10() - y0) / (y1 - y0) * (H - TOP - BOTTOM);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        W / 2.0,
        xml_escape(title)
    );
    for d in x0 as i32..=x1 as i32 {
        let v = 10f64.powi(d);
        let x = px(v);
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{}" stroke="#ddd"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            H - BOTTOM,
            H - BOTTOM + 16.0,
            label(v)
        );
    }
    for d in y0 as i32..=y1 as i32 {
        let v = 10f64.powi(d);
        let y = py(v);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            label(v)
        );
    }
    let _ = writeln!(
        out,
        r#"<rect x="{LEFT}" y="{TOP}" width="{}" height="{}" fill="none" stroke="black"/>"#,
        W - LEFT - RIGHT,
        H - TOP - BOTTOM
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 12.0,
        xml_escape(x_label)
    );
    let _ = writeln!(
        out,
        r#"<text x="16" y="{}" text-anchor="middle" transform="rotate(-90 16 {})">{}</text>"#,
        (TOP + H - BOTTOM) / 2.0,
        (TOP + H - BOTTOM) / 2.0,
        xml_escape(y_label)
    );
    for (k, s) in series.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let pts: Vec<String> = s
            .points
            .iter()
            .filter(|p| ok(p))
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            pts.join(" ")
        );
        for p in &pts {
            let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(out, r#"<circle cx="{x}" cy="{y}" r="3.5" fill="{colour}"/>"#);
        }
        let ly = TOP + 16.0 + 18.0 * k as f64;
        let _ = writeln!(
            out,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="2"/><text x="{}" y="{}">{}</text>"#,
            LEFT + 12.0,
            LEFT + 36.0,
            LEFT + 42.0,
            ly + 4.0,
            xml_escape(&s.name)
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plot_spans_whole_decades_and_skips_what_a_log_axis_cannot_show() {
        let s = Series {
            name: "a<b".into(),
            points: vec![(8.0, 12.0), (4096.0, 900.0), (64.0, 0.0), (256.0, f64::NAN)],
        };
        let svg = log_log("t", "n", "ms", &[s]);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        for tick in [">1<", ">10<", ">100<", ">1000<", ">10000<"] {
            assert!(svg.contains(tick), "{tick} missing");
        }
        assert_eq!(svg.matches("<circle").count(), 2, "zero and NaN are left out");
        assert!(svg.contains("a&lt;b"));
    }
}
