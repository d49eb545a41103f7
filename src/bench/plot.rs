//! Small SVG plots with logarithmic axes, for the bench's figures under `bench/`: lines with
//! markers, markers alone or dashed lines per series, decades as grid lines, a legend under
//! each plot; one plot, or several side by side as small multiples. No dependency: the figures
//! are a few points each.

use crate::render::draw::{self, Anchor};

use std::fmt::Write as _;

/// One named line of (x, y) points; points with a non-positive or non-finite value are left out
/// (a log axis cannot show them).
#[derive(Debug, Clone)]
pub(crate) struct Series {
    /// Its name in the legend.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Look {
    /// A line through its points, each marked: measurements.
    Line,
    /// Its points marked, not joined.
    Dots,
    /// A dashed line, no markers: a formula or a floor.
    Dashed,
}

/// A series as drawn: its look and colour.
#[derive(Debug, Clone)]
pub(crate) struct Layer {
    /// The data.
    pub series: Series,
    /// How it is drawn.
    pub look: Look,
    /// Its colour (see [`draw::PALETTE`]).
    pub colour: &'static str,
}

/// One log-log plot: title, axis names, its layers.
#[derive(Debug, Clone)]
pub(crate) struct Axes {
    /// Above the plot.
    pub title: String,
    /// Under the x axis.
    pub x_label: String,
    /// Beside the y axis.
    pub y_label: String,
    /// What is drawn, in order (later on top).
    pub layers: Vec<Layer>,
}

const MARGIN: f64 = 10.0;
const LEFT: f64 = 62.0;
const RIGHT: f64 = 16.0;
const TITLE: f64 = 26.0;
/// Tick labels and the x axis's name under the plot area.
const UNDER: f64 = 44.0;
const LEGEND_ROW: f64 = 16.0;
const FIGURE_TITLE: f64 = 30.0;

fn visible(&(x, y): &(f64, f64)) -> bool {
    x.is_finite() && y.is_finite() && x > 0.0 && y > 0.0
}

/// The powers of ten just outside `lo..=hi` (both positive), as exponents.
fn decades(lo: f64, hi: f64) -> (f64, f64) {
    let a = lo.log10().floor();
    let mut b = hi.log10().ceil();
    if b <= a {
        b = a + 1.0;
    }
    (a, b)
}

fn tick_label(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// The exponent range covering every visible value of one coordinate.
fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo.is_finite() {
        decades(lo, hi)
    } else {
        (0.0, 1.0)
    }
}

impl Axes {
    /// An empty plot.
    pub fn new(title: impl Into<String>, x_label: impl Into<String>, y_label: impl Into<String>) -> Axes {
        Axes {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            layers: Vec::new(),
        }
    }

    /// Adds `series`, drawn with `look` in `colour`.
    pub fn add(&mut self, series: Series, look: Look, colour: &'static str) -> &mut Axes {
        self.layers.push(Layer { series, look, colour });
        self
    }

    /// Its height with a plot area `plot_h` high: title, plot, axis, legend.
    fn height(&self, plot_h: f64) -> f64 {
        TITLE + plot_h + UNDER + LEGEND_ROW * self.layers.len() as f64 + MARGIN
    }

    /// Draws the plot with its top-left corner at (x, y), `w` wide, its plot area `plot_h` high.
    fn draw(&self, out: &mut String, x: f64, y: f64, w: f64, plot_h: f64) {
        let points = || {
            self.layers
                .iter()
                .flat_map(|l| l.series.points.iter())
                .filter(|p| visible(p))
        };
        let (x0, x1) = range(points().map(|p| p.0));
        let (y0, y1) = range(points().map(|p| p.1));
        let (left, top) = (x + LEFT, y + TITLE);
        let (right, bottom) = (x + w - RIGHT, y + TITLE + plot_h);
        let px = |v: f64| left + (v.log10() - x0) / (x1 - x0) * (right - left);
        let py = |v: f64| bottom - (v.log10() - y0) / (y1 - y0) * plot_h;
        draw::text(
            out,
            (left + right) / 2.0,
            y + 18.0,
            Anchor::Middle,
            r#"font-size="14""#,
            &self.title,
        );
        // Grid: a line and a label per decade, faint lines at 2..9 times it.
        for d in x0 as i32..=x1 as i32 {
            let v = 10f64.powi(d);
            for k in 2..10 {
                let m = px(v * k as f64);
                if d < x1 as i32 {
                    let _ = writeln!(
                        out,
                        r##"<line x1="{m:.1}" y1="{top}" x2="{m:.1}" y2="{bottom}" stroke="#f0f0f0"/>"##
                    );
                }
            }
            let at = px(v);
            let _ = writeln!(
                out,
                r##"<line x1="{at:.1}" y1="{top}" x2="{at:.1}" y2="{bottom}" stroke="#ccc"/>"##
            );
            draw::text(out, at, bottom + 15.0, Anchor::Middle, "", &tick_label(v));
        }
        for d in y0 as i32..=y1 as i32 {
            let v = 10f64.powi(d);
            let at = py(v);
            let _ = writeln!(
                out,
                r##"<line x1="{left}" y1="{at:.1}" x2="{right}" y2="{at:.1}" stroke="#ccc"/>"##
            );
            draw::text(out, left - 5.0, at + 4.0, Anchor::End, "", &tick_label(v));
        }
        let _ = writeln!(
            out,
            r#"<rect x="{left}" y="{top}" width="{}" height="{plot_h}" fill="none" stroke="black"/>"#,
            right - left
        );
        draw::text(
            out,
            (left + right) / 2.0,
            bottom + 34.0,
            Anchor::Middle,
            "",
            &self.x_label,
        );
        let mid = (top + bottom) / 2.0;
        let turn = format!(r#"transform="rotate(-90 {:.1} {mid:.1})""#, x + 14.0);
        draw::text(out, x + 14.0, mid, Anchor::Middle, &turn, &self.y_label);
        for (k, layer) in self.layers.iter().enumerate() {
            let pts: Vec<(f64, f64)> = layer
                .series
                .points
                .iter()
                .filter(|p| visible(p))
                .map(|&(a, b)| (px(a), py(b)))
                .collect();
            let c = layer.colour;
            let joined: Vec<String> = pts.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
            let dash = match layer.look {
                Look::Line => "",
                Look::Dashed => r#" stroke-dasharray="6,4""#,
                Look::Dots => "none",
            };
            if dash != "none" {
                let _ = writeln!(
                    out,
                    r#"<polyline class="series" points="{}" fill="none" stroke="{c}" stroke-width="2"{dash}/>"#,
                    joined.join(" ")
                );
            }
            if layer.look != Look::Dashed {
                for (a, b) in &pts {
                    let _ = writeln!(
                        out,
                        r#"<circle class="point" cx="{a:.1}" cy="{b:.1}" r="3.5" fill="{c}"/>"#
                    );
                }
            }
            // The legend, under the x axis's name.
            let ly = bottom + UNDER + LEGEND_ROW * k as f64 + 4.0;
            let (s0, s1) = (left, left + 26.0);
            if layer.look == Look::Dots {
                let _ = writeln!(
                    out,
                    r#"<circle cx="{:.1}" cy="{ly:.1}" r="3.5" fill="{c}"/>"#,
                    (s0 + s1) / 2.0
                );
            } else {
                let dash = if layer.look == Look::Dashed {
                    r#" stroke-dasharray="6,4""#
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    r#"<line x1="{s0:.1}" y1="{ly:.1}" x2="{s1:.1}" y2="{ly:.1}" stroke="{c}" stroke-width="2"{dash}/>"#
                );
            }
            draw::text(out, s1 + 6.0, ly + 4.0, Anchor::Start, "", &layer.series.name);
        }
    }
}

/// A figure of `plots` in rows of `cols`, under `title`; each plot `plot_w` wide with a plot
/// area `plot_h` high.
pub fn figure(title: &str, cols: usize, plot_w: f64, plot_h: f64, plots: &[Axes]) -> String {
    let cols = cols.clamp(1, plots.len().max(1));
    let rows: Vec<&[Axes]> = plots.chunks(cols).collect();
    let row_h: Vec<f64> = rows
        .iter()
        .map(|r| r.iter().map(|a| a.height(plot_h)).fold(0.0, f64::max))
        .collect();
    let w = cols as f64 * plot_w + 2.0 * MARGIN;
    let h = FIGURE_TITLE + row_h.iter().sum::<f64>() + MARGIN;
    let mut out = String::new();
    draw::open(&mut out, None, w, h, 12.0);
    draw::text(&mut out, w / 2.0, 22.0, Anchor::Middle, r#"font-size="16""#, title);
    let mut y = FIGURE_TITLE;
    for (row, rh) in rows.iter().zip(&row_h) {
        for (i, axes) in row.iter().enumerate() {
            axes.draw(&mut out, MARGIN + i as f64 * plot_w, y, plot_w, plot_h);
        }
        y += rh;
    }
    out.push_str("</svg>\n");
    out
}

/// An SVG document: `series` (lines with markers, in the palette's colours) on log-log axes
/// titled `title`, axis labels `x_label`, `y_label`.
pub(crate) fn log_log(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let mut axes = Axes::new("", x_label, y_label);
    for (k, s) in series.iter().enumerate() {
        axes.add(s.clone(), Look::Line, draw::colour(k));
    }
    figure(title, 1, 640.0, 320.0, &[axes])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::draw::count_class as count;

    #[test]
    fn a_plot_spans_whole_decades_and_skips_what_a_log_axis_cannot_show() {
        let s = Series {
            name: "a<b".into(),
            points: vec![(8.0, 12.0), (4096.0, 900.0), (64.0, 0.0), (256.0, f64::NAN)],
        };
        let svg = log_log("t", "n", "ms", &[s]);
        let doc = roxmltree::Document::parse(&svg).unwrap();
        for tick in [">1<", ">10<", ">100<", ">1000<", ">10000<"] {
            assert!(svg.contains(tick), "{tick} missing");
        }
        assert_eq!(count(&doc, "circle", "point"), 2, "zero and NaN are left out");
        assert!(svg.contains("a&lt;b"));
    }

    #[test]
    fn small_multiples_draw_each_look_and_a_legend_row_per_series() {
        let s = |name: &str, pts: &[(f64, f64)]| Series {
            name: name.into(),
            points: pts.to_vec(),
        };
        let mut a = Axes::new("one", "n", "messages");
        a.add(
            s("measured", &[(8.0, 15.0), (64.0, 127.0)]),
            Look::Dots,
            draw::colour(0),
        )
        .add(s("2n-1", &[(8.0, 15.0), (64.0, 127.0)]), Look::Dashed, draw::colour(0));
        let mut b = Axes::new("two", "n", "ms");
        b.add(
            s("time", &[(8.0, 1.5), (64.0, 9.0), (256.0, 40.0)]),
            Look::Line,
            draw::colour(1),
        );
        let svg = figure("both", 2, 400.0, 240.0, &[a, b]);
        let doc = roxmltree::Document::parse(&svg).unwrap();
        assert_eq!(count(&doc, "circle", "point"), 5, "two dots, three on the line");
        assert_eq!(count(&doc, "polyline", "series"), 2, "the dashed formula and the line");
        assert!(svg.contains(r#"stroke-dasharray="6,4""#));
        for t in [">one<", ">two<", ">both<", ">measured<", ">2n-1<", ">time<"] {
            assert!(svg.contains(t), "{t} missing");
        }
        assert_eq!(doc.root_element().attribute("width"), Some("820"));
    }
}
