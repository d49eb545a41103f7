//! The space-time diagram as SVG: one horizontal line per node, time to the right, an arrow
//! per message from its send to its receive, marks and shaded faults on the lines.
//!
//! Every drawn message is a `<g class="msg">`, every node line a `<line class="node-line">`,
//! and every element carries a `<title>` (hover text in any browser) and a `data-info` that the
//! HTML page shows in its details panel.

use super::draw;
use super::story::{Arrow, Mark, MarkKind, SpanKind, Story};
use super::xml_escape as esc;
use std::collections::BTreeMap;
use std::fmt::Write;

mod marks;

pub(crate) use marks::mark_label;
use marks::{axis, marks};

/// Above this many messages in the window, arrows are drawn aggregated (one per sender,
/// receiver, type and time slice, labelled with the count).
pub(crate) const MAX_ARROWS: usize = 1500;
/// Time slices of the aggregated drawing.
const SLICES: u64 = 150;

const LEFT: f64 = 90.0;
const RIGHT: f64 = 40.0;
const TOP: f64 = 70.0;
const ROW: f64 = 56.0;
const BOTTOM: f64 = 50.0;
const WIDTH: f64 = 1400.0;
/// Message labels are written on the arrows only when there are few.
const LABELLED: usize = 150;

/// Text boxes already drawn, so that labels never overlap: a label that finds no free place
/// is left out (its hover text still says everything).
#[derive(Default)]
struct Labels {
    boxes: Vec<(f64, f64, f64, f64)>,
}

impl Labels {
    /// Claims the box of `text` at (x, baseline y) in font `size`, if it is free.
    fn claim(&mut self, x: f64, y: f64, text: &str, size: f64) -> bool {
        let b = (x, y - size, x + 0.6 * size * text.chars().count() as f64, y + 2.0);
        if self
            .boxes
            .iter()
            .any(|o| b.0 < o.2 && o.0 < b.2 && b.1 < o.3 && o.1 < b.3)
        {
            return false;
        }
        self.boxes.push(b);
        true
    }
}

struct Geo<'a> {
    story: &'a Story,
    rows: BTreeMap<u64, usize>,
    /// Message type -> its colour (draw::type_colour).
    colours: BTreeMap<String, String>,
    labels: Labels,
    /// The height of one node's lane: compressed when there are many nodes.
    row: f64,
}

/// The lane height for `n` nodes: full up to 16 nodes, then shrinking to fit about 1,000
/// pixels, never below 4 (1,000 nodes take 4,000 pixels).
pub(crate) fn lane_height(n: usize) -> f64 {
    if n <= 16 {
        ROW
    } else {
        (1000.0 / n as f64).clamp(4.0, ROW)
    }
}

impl Geo<'_> {
    fn colour(&self, name: &str) -> &str {
        self.colours.get(name).map_or("#333", String::as_str)
    }
    fn x(&self, t: u64) -> f64 {
        let span = (self.story.t1 - self.story.t0).max(1) as f64;
        let t = t.clamp(self.story.t0, self.story.t1);
        LEFT + (t - self.story.t0) as f64 / span * (WIDTH - LEFT - RIGHT)
    }
    fn y(&self, node: u64) -> Option<f64> {
        self.rows
            .get(&node)
            .map(|&i| TOP + self.row * i as f64 + self.row / 2.0)
    }
}

/// Draws the timeline of `story` as a standalone SVG document.
pub fn timeline(story: &Story) -> String {
    let mut names: Vec<&str> = story.arrows.iter().map(|a| a.name.as_str()).collect();
    names.sort();
    names.dedup();
    let mut geo = Geo {
        story,
        rows: story.nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect(),
        colours: names.iter().map(|n| (n.to_string(), draw::type_colour(n))).collect(),
        labels: Labels::default(),
        row: lane_height(story.nodes.len()),
    };
    let height = TOP + geo.row * story.nodes.len() as f64 + BOTTOM;
    let mut s = String::new();
    draw::open(&mut s, Some("timeline"), WIDTH, height, 11.0);
    s.push_str("<defs>");
    for n in &names {
        draw::open_head(&mut s, &format!("head-{}", marker_id(n)), geo.colour(n), 9.0);
    }
    s.push_str(r##"<pattern id="dead" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#ddd"/><line x1="0" y1="0" x2="0" y2="6" stroke="#888" stroke-width="3"/></pattern>"##);
    s.push_str("</defs>\n");
    header(&mut s, &geo, &names);
    nodes_and_spans(&mut s, &geo);
    // Marks claim their label places first: they tell the story; message labels fill in.
    let mut marks_svg = String::new();
    marks(&mut marks_svg, &mut geo);
    if story.arrows.len() > MAX_ARROWS {
        aggregated(&mut s, &geo);
    } else {
        let labelled = story.arrows.len() <= LABELLED;
        for a in &story.arrows {
            arrow(&mut s, &mut geo, a, labelled);
        }
    }
    s.push_str(&marks_svg);
    axis(&mut s, &geo, height);
    s.push_str("</svg>\n");
    s
}

fn marker_id(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The shape of a mark of `class` (MarkKind::class), centred on its point: filled or hollow
/// circles, diamonds, bars and squares, never a chevron (the messages' heads).
pub(crate) fn mark_shape(class: &str) -> &'static str {
    match class {
        "suspect-true" => r##"<circle r="5" fill="#d62728"/>"##,
        "suspect-false" => r##"<circle r="5" fill="#fff" stroke="#ff7f0e" stroke-width="2.5"/>"##,
        "leader" => r##"<path d="M0,-7L7,0L0,7L-7,0z" fill="#ffbf00" stroke="#000" stroke-width="0.5"/>"##,
        "election" => r##"<rect x="-1.5" y="-7" width="3" height="14" fill="#4a90d9"/>"##,
        "stepdown" => {
            r##"<rect x="-5" y="-5" width="10" height="10" fill="#fff" stroke="#8e44ad" stroke-width="2.5"/>"##
        }
        "clock" => r##"<rect x="-4" y="-4" width="8" height="8" fill="#17becf"/>"##,
        "unsuspect" => r##"<circle r="3.5" fill="#2ca02c"/>"##,
        "violation" => r##"<path d="M-6,-6L6,6M-6,6L6,-6" stroke="#d62728" stroke-width="3.5"/>"##,
        "stale" => r##"<path d="M-6,-6L6,6M-6,6L6,-6" stroke="#555" stroke-width="2.5"/>"##,
        _ => r##"<circle r="2" fill="#555"/>"##,
    }
}

/// What a mark of `class` means, for the legend.
pub(crate) fn mark_meaning(class: &str) -> &'static str {
    match class {
        "suspect-true" => "true suspicion",
        "suspect-false" => "false suspicion",
        "leader" => "leader (term)",
        "election" => "election starts",
        "stepdown" => "step down",
        "clock" => "clock corrected",
        "unsuspect" => "suspicion withdrawn",
        "violation" => "two holders at once",
        "stale" => "stale token refused",
        _ => "protocol note",
    }
}

/// The shading of a span of `class` (SpanKind::class) in the legend, and its meaning.
fn span_legend(class: &str) -> (&'static str, &'static str) {
    match class {
        "paused" => (
            r##"<rect x="-8" y="-6" width="16" height="12" fill="#9ecae1" opacity="0.6"/>"##,
            "paused",
        ),
        "dead" => (
            r##"<rect x="-8" y="-6" width="16" height="12" fill="url(#dead)"/>"##,
            "dead",
        ),
        _ => (
            r##"<rect x="-8" y="-3" width="16" height="6" fill="#2ca02c"/>"##,
            "critical section",
        ),
    }
}

fn header(s: &mut String, geo: &Geo<'_>, names: &[&str]) {
    let story = geo.story;
    let hidden = if story.hidden > 0 {
        format!("; {} heartbeats hidden (--show heartbeats)", story.hidden)
    } else {
        String::new()
    };
    let agg = if story.arrows.len() > MAX_ARROWS {
        format!("; {} messages drawn aggregated", story.arrows.len())
    } else {
        format!("; {} messages", story.arrows.len())
    };
    let _ = writeln!(
        s,
        r#"<text x="10" y="18" font-size="14" font-weight="bold">{}{} on {} nodes, +{:.0} ms to +{:.0} ms{}{}</text>"#,
        esc(&story.algo),
        esc(&story.run_name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()),
        story.nodes.len(),
        story.ms(story.t0),
        story.ms(story.t1),
        esc(&agg),
        esc(&hidden)
    );
    // The legend lists only what this drawing has: marks, shading, then message colours.
    let mut x = 10.0;
    let mut y = 40.0;
    let place = |s: &mut String, x: &mut f64, y: &mut f64, width: f64, item: String| {
        if *x + width > WIDTH - 10.0 {
            *x = 10.0;
            *y += 16.0;
        }
        let _ = write!(
            s,
            r#"<g class="legend" transform="translate({},{})">{item}</g>"#,
            *x, *y
        );
        *x += width;
    };
    for class in present_marks(story) {
        let label = mark_meaning(class);
        let item = format!(r#"{}<text x="10" y="4">{label}</text>"#, mark_shape(class));
        place(s, &mut x, &mut y, 22.0 + 6.5 * label.len() as f64, item);
    }
    let mut spans: Vec<&str> = story.spans.iter().map(|sp| sp.kind.class()).collect();
    spans.sort();
    spans.dedup();
    for class in spans {
        let (shape, label) = span_legend(class);
        let item = format!(r#"{shape}<text x="10" y="4">{label}</text>"#);
        place(s, &mut x, &mut y, 22.0 + 6.5 * label.len() as f64, item);
    }
    x += 10.0;
    for n in names {
        let item = format!(
            r#"<line x1="-10" y1="0" x2="6" y2="0" stroke="{c}" stroke-width="2" marker-end="url(#head-{m})"/><text x="11" y="4" fill="{c}">{n}</text>"#,
            c = geo.colour(n),
            m = marker_id(n),
            n = esc(n)
        );
        place(s, &mut x, &mut y, 34.0 + 7.0 * n.len() as f64, item);
    }
    s.push('\n');
}

/// The classes of the marks `story` has, in the legend's order.
fn present_marks(story: &Story) -> Vec<&'static str> {
    let order = [
        "suspect-true",
        "suspect-false",
        "unsuspect",
        "election",
        "leader",
        "stepdown",
        "clock",
        "violation",
        "stale",
        "note",
    ];
    order
        .into_iter()
        .filter(|c| story.marks.iter().any(|m| m.kind.class() == *c))
        .collect()
}

fn nodes_and_spans(s: &mut String, geo: &Geo<'_>) {
    let story = geo.story;
    let row = geo.row;
    // With narrow lanes, every k-th node is named (the hover text names each).
    let every = (14.0 / row).ceil().max(1.0) as usize;
    let font = row.clamp(8.0, 13.0);
    for (i, &n) in story.nodes.iter().enumerate() {
        let y = geo.y(n).unwrap_or(0.0);
        let name = if i % every == 0 {
            format!(
                r#"<text x="10" y="{ty:.1}" font-size="{font}" font-weight="bold">{}</text>"#,
                story.lane_name(n),
                ty = y + font * 0.3
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            r##"<g class="node" data-node="{n}">{name}<line class="node-line" x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#333" stroke-width="{w}"><title>node {n}</title></line></g>"##,
            x0 = LEFT,
            x1 = WIDTH - RIGHT,
            w = if row < 12.0 { 0.5 } else { 1.5 }
        );
    }
    for sp in &story.spans {
        let Some(y) = geo.y(sp.node) else { continue };
        let (x0, x1) = (geo.x(sp.from), geo.x(sp.to).max(geo.x(sp.from) + 1.0));
        let (dy, h, fill) = match sp.kind {
            SpanKind::Paused => (row * 0.4, row * 0.8, r##"fill="#9ecae1" opacity="0.6""##),
            SpanKind::Dead => (row * 0.4, row * 0.8, r#"fill="url(#dead)" opacity="0.8""#),
            SpanKind::Critical => (row.min(8.0) / 2.0, row.min(8.0), r##"fill="#2ca02c""##),
        };
        let info = format!(
            "{} (+{:.1} ms to +{:.1} ms)",
            sp.text,
            story.ms(sp.from),
            story.ms(sp.to)
        );
        let _ = writeln!(
            s,
            r#"<rect class="span {k}" x="{x0:.1}" y="{y0:.1}" width="{w:.1}" height="{h:.1}" {fill} data-info="{i}"><title>{i}</title></rect>"#,
            k = sp.kind.class(),
            y0 = y - dy,
            w = x1 - x0,
            i = esc(&info)
        );
    }
}

fn arrow(s: &mut String, geo: &mut Geo<'_>, a: &Arrow, labelled: bool) {
    let (Some(y0), Some(y1)) = (geo.y(a.from), geo.y(a.to)) else {
        return;
    };
    let story = geo.story;
    let x0 = geo.x(a.sent);
    let c = geo.colour(&a.name).to_string();
    let (x1, y1e, info, dash) = match a.recv {
        Some(r) => {
            let info = format!(
                "{} #{}: node {} -> node {}, sent +{:.3} ms, received +{:.3} ms ({:.3} ms in flight)",
                a.brief,
                a.seq,
                a.from,
                a.to,
                story.ms(a.sent),
                story.ms(r),
                (r - a.sent) as f64 / 1000.0
            );
            (geo.x(r), y1, info, "")
        }
        None => {
            let info = format!(
                "{} #{}: node {} -> node {}, sent +{:.3} ms, never received",
                a.brief,
                a.seq,
                a.from,
                a.to,
                story.ms(a.sent)
            );
            // A lost message stops halfway, ending in a cross.
            (x0 + 12.0, (y0 + y1) / 2.0, info, r#" stroke-dasharray="4,3""#)
        }
    };
    let info = esc(&info);
    let _ = write!(
        s,
        r#"<g class="msg" data-info="{info}"><title>{info}</title><line x1="{x0:.1}" y1="{y0:.1}" x2="{x1:.1}" y2="{y1e:.1}" stroke="{c}" stroke-width="1.3"{dash} marker-end="url(#head-{m})"/>"#,
        m = marker_id(&a.name)
    );
    if a.recv.is_none() {
        let _ = write!(
            s,
            r#"<text x="{x:.1}" y="{y:.1}" fill="{c}" font-size="13">×</text>"#,
            x = x1 + 1.0,
            y = y1e + 4.0
        );
    }
    let (lx, ly) = ((x0 + x1) / 2.0 + 3.0, (y0 + y1e) / 2.0 - 2.0);
    if labelled && geo.labels.claim(lx, ly, &a.brief, 9.0) {
        let _ = write!(
            s,
            r#"<text x="{lx:.1}" y="{ly:.1}" fill="{c}" font-size="9">{n}</text>"#,
            n = esc(&a.brief)
        );
    }
    s.push_str("</g>\n");
}

/// One arrow per (sender, receiver, type, time slice), its width growing with the count.
fn aggregated(s: &mut String, geo: &Geo<'_>) {
    let story = geo.story;
    let slice = ((story.t1 - story.t0) / SLICES).max(1);
    /// count, first send, total time in flight, how many were received
    type Group = (u64, u64, u64, u64);
    let mut groups: BTreeMap<(u64, u64, u64, &str), Group> = BTreeMap::new();
    for a in &story.arrows {
        let k = ((a.sent - story.t0) / slice, a.from, a.to, a.name.as_str());
        let g = groups.entry(k).or_insert((0, a.sent, 0, 0));
        g.0 += 1;
        if let Some(r) = a.recv {
            g.2 += r - a.sent;
            g.3 += 1;
        }
    }
    for ((_, from, to, name), (count, first, flight, received)) in groups {
        let mean = flight.checked_div(received).unwrap_or(0);
        let a = Arrow {
            from,
            to,
            sent: first,
            recv: (received > 0).then_some(first + mean),
            seq: 0,
            name: name.to_string(),
            brief: format!("{count} × {name}"),
        };
        let (Some(y0), Some(y1)) = (geo.y(from), geo.y(to)) else {
            continue;
        };
        let (x0, x1) = (geo.x(a.sent), geo.x(a.recv.unwrap_or(a.sent)));
        let info = esc(&format!(
            "{count} {name} messages node {from} -> node {to} from +{:.1} ms ({received} received, mean {:.3} ms in flight)",
            story.ms(first),
            mean as f64 / 1000.0
        ));
        let _ = writeln!(
            s,
            r#"<g class="msg agg" data-info="{info}"><title>{info}</title><line x1="{x0:.1}" y1="{y0:.1}" x2="{x1:.1}" y2="{y1:.1}" stroke="{c}" stroke-width="{w:.1}" marker-end="url(#head-{m})"/></g>"#,
            c = geo.colour(name),
            w = 1.0 + (count as f64).ln(),
            m = marker_id(name)
        );
    }
}
