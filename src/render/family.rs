//! The families' own pictures, beside the timeline: a mutex view (who holds the resource when,
//! each violation and each stale begin refused, with the fencing tokens), a clock view (each
//! node's offset from true time over the run, before and after each correction, with the bound
//! it claimed) and a snapshot view (each recorded global state drawn as a cut across the nodes'
//! lines, with the balances and the money in channels). `coordlab timeline` picks the one of
//! the run's family (the registry says it) unless `--view` names another.

use super::draw::{self, Anchor};
use super::story::Story;
use super::xml_escape as esc;
use crate::error::{usage, CliError};
use crate::trace::messages::{received, Sends};
use crate::trace::{Event, NodeId, Record, RunDir};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Which family picture to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Who holds the resource when.
    Mutex,
    /// Each clock's offset from true time.
    Clock,
    /// The recorded global states as cuts.
    Snapshot,
}

impl View {
    /// The view's name, as `--view` takes it and as its file is named (`mutex.svg`).
    pub fn name(self) -> &'static str {
        match self {
            View::Mutex => "mutex",
            View::Clock => "clock",
            View::Snapshot => "snapshot",
        }
    }

    /// The view `--view` asks for: `auto` (the run's family's, if it has one), `none`, or a
    /// view's name; None for no family picture.
    pub fn choose(flag: &str, algo: &str) -> Result<Option<View>, CliError> {
        match flag {
            "auto" => Ok(crate::catalog::family(algo).and_then(|f| View::of_family(f.name))),
            "none" | "timeline" => Ok(None),
            other => View::of_family(other).map(Some).ok_or_else(|| {
                usage(format!(
                    "--view: unknown '{other}' (known: auto, none, mutex, clock, snapshot)"
                ))
            }),
        }
    }

    fn of_family(name: &str) -> Option<View> {
        match name {
            "mutex" => Some(View::Mutex),
            "clock" => Some(View::Clock),
            "snapshot" => Some(View::Snapshot),
            _ => None,
        }
    }
}

const WIDTH: f64 = 1400.0;
const LEFT: f64 = 110.0;
const RIGHT: f64 = 40.0;

/// The time scale every view shares with the timeline's window.
struct Frame<'a> {
    story: &'a Story,
}

impl Frame<'_> {
    fn x(&self, t: u64) -> f64 {
        let s = self.story;
        let span = (s.t1 - s.t0).max(1) as f64;
        LEFT + (t.clamp(s.t0, s.t1) - s.t0) as f64 / span * (WIDTH - LEFT - RIGHT)
    }

    fn axis(&self, out: &mut String, y: f64) {
        let s = self.story;
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y}" x2="{}" y2="{y}" stroke="#333"/>"##,
            WIDTH - RIGHT
        );
        let span = s.ms(s.t1) - s.ms(s.t0);
        let raw = (span / 10.0).max(0.001);
        let p = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * p)
            .find(|&v| v >= raw)
            .unwrap_or(10.0 * p);
        let mut ms = (s.ms(s.t0) / step).ceil() * step;
        while ms <= s.ms(s.t1) + 1e-9 {
            let x = self.x((s.start_us as f64 + ms * 1000.0).max(0.0) as u64);
            draw::text(out, x, y + 14.0, Anchor::Middle, "", &format!("+{} ms", ms.round()));
            ms += step;
        }
    }
}

/// Draws `view` of `run` over `story`'s window; an error when the run has nothing it draws.
pub fn draw(view: View, run: &RunDir, story: &Story) -> Result<String, CliError> {
    let f = Frame { story };
    match view {
        View::Mutex => mutex(run, &f),
        View::Clock => clock(run, &f),
        View::Snapshot => snapshot(run, &f),
    }
}

/// Every record of the run, nodes' and resource's, in time order.
fn records(run: &RunDir) -> Vec<&Record> {
    let mut all: Vec<&Record> = run.node_events.iter().chain(&run.resource).collect();
    all.sort_by_key(|r| r.t);
    all
}

fn header(out: &mut String, title: &str, lines: &[String]) {
    draw::text(
        out,
        10.0,
        20.0,
        Anchor::Start,
        r#"font-size="15" font-weight="bold""#,
        title,
    );
    for (i, l) in lines.iter().enumerate() {
        draw::text(out, 10.0, 38.0 + 15.0 * i as f64, Anchor::Start, r#"font-size="11""#, l);
    }
}

/// Who held the resource when: per node, what the resource accepted (begin to end, thick,
/// labelled with the fencing token) and what the node believed (cs_enter to cs_exit, thin);
/// violations and refused stale begins marked on the resource's own line.
fn mutex(run: &RunDir, f: &Frame<'_>) -> Result<String, CliError> {
    let all = records(run);
    let mut held: Vec<(NodeId, u64, u64, Option<u64>)> = Vec::new();
    let mut believed: Vec<(NodeId, u64, u64, Option<u64>)> = Vec::new();
    let mut open: BTreeMap<NodeId, (u64, Option<u64>)> = BTreeMap::new();
    let mut entered: BTreeMap<NodeId, (u64, Option<u64>)> = BTreeMap::new();
    let mut violations = Vec::new();
    let mut stale = Vec::new();
    let mut nodes: BTreeSet<NodeId> = BTreeSet::new();
    // A begin accepted while another holder has not ended is either a violation (the resource
    // says so at that moment) or, with fencing, the end of the older holder's access: its
    // token is stale from then on, whatever it does.
    let violated: BTreeSet<u64> = all
        .iter()
        .filter(|r| matches!(r.event, Event::Violation { .. }))
        .map(|r| r.t)
        .collect();
    let mut superseded = 0usize;
    for r in &all {
        match &r.event {
            Event::Access { by, token, phase, .. } => {
                nodes.insert(*by);
                if phase == "begin" {
                    if let Some((t, tok)) = open.remove(by) {
                        held.push((*by, t, r.t, tok));
                    }
                    if !violated.contains(&r.t) {
                        for (n, (t, tok)) in std::mem::take(&mut open) {
                            superseded += 1;
                            held.push((n, t, r.t, tok));
                        }
                    }
                    open.insert(*by, (r.t, *token));
                } else if let Some((t, tok)) = open.remove(by) {
                    held.push((*by, t, r.t, tok));
                }
            }
            Event::Violation { nodes: who } => violations.push((r.t, who.clone())),
            Event::RejectStale { by, token, highest } => {
                if let Some((t, tok)) = open.remove(by) {
                    held.push((*by, t, r.t, tok));
                }
                stale.push((r.t, *by, *token, *highest))
            }
            Event::CsEnter { token, .. } => {
                if let Some(n) = r.node {
                    nodes.insert(n);
                    entered.insert(n, (r.t, *token));
                }
            }
            Event::CsExit { .. } => {
                if let Some(n) = r.node {
                    if let Some((t, tok)) = entered.remove(&n) {
                        believed.push((n, t, r.t, tok));
                    }
                }
            }
            _ => {}
        }
    }
    let end = f.story.t1;
    held.extend(open.into_iter().map(|(n, (t, tok))| (n, t, end, tok)));
    believed.extend(entered.into_iter().map(|(n, (t, tok))| (n, t, end, tok)));
    if held.is_empty() && believed.is_empty() {
        return Err(usage(
            "--view mutex: this run has no critical section (no access, no cs_enter)",
        ));
    }
    let row = 34.0;
    let top = 92.0;
    let lanes: Vec<NodeId> = nodes.iter().copied().collect();
    let y = |n: NodeId| top + row * (lanes.iter().position(|&m| m == n).unwrap_or(0) as f64 + 1.0) + row / 2.0;
    let height = top + row * (lanes.len() as f64 + 1.0) + 50.0;
    let mut s = String::new();
    draw::open(&mut s, Some("mutex-view"), WIDTH, height, 11.0);
    let tokens = held.iter().any(|h| h.3.is_some());
    header(
        &mut s,
        &format!("{}: who holds the resource when", f.story.algo),
        &[
            format!(
                "{} accesses the resource accepted (thick: begin to end{}); thin: the node's own cs_enter to cs_exit",
                held.len(),
                if tokens { ", labelled with the fencing token" } else { "" }
            ),
            format!(
                "{} times two holders at once (red cross on the resource's line); {} stale writes refused by fencing (grey cross); \
                 {superseded} accesses cut short by a newer token",
                violations.len(),
                stale.len()
            ),
        ],
    );
    let ry = top + row / 2.0;
    draw::text(
        &mut s,
        10.0,
        ry + 4.0,
        Anchor::Start,
        r#"font-weight="bold""#,
        "resource",
    );
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{ry}" x2="{}" y2="{ry}" stroke="#333"/>"##,
        WIDTH - RIGHT
    );
    for &n in &lanes {
        let yy = y(n);
        draw::text(
            &mut s,
            10.0,
            yy + 4.0,
            Anchor::Start,
            r#"font-weight="bold""#,
            &format!("node {n}"),
        );
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{yy}" x2="{}" y2="{yy}" stroke="#bbb"/>"##,
            WIDTH - RIGHT
        );
    }
    let mut last_label: BTreeMap<NodeId, f64> = BTreeMap::new();
    for &(n, a, b, tok) in &held {
        let (x0, x1) = (f.x(a), f.x(b).max(f.x(a) + 1.5));
        let info = format!(
            "node {n} held the resource from +{:.1} ms to +{:.1} ms{}",
            f.story.ms(a),
            f.story.ms(b),
            tok.map(|t| format!(", fencing token {t}")).unwrap_or_default()
        );
        let colour = draw::colour(n as usize);
        let _ = writeln!(
            s,
            r#"<rect class="hold" x="{x0:.1}" y="{:.1}" width="{:.1}" height="10" fill="{colour}"><title>{}</title></rect>"#,
            y(n) - 11.0,
            x1 - x0,
            esc(&info)
        );
        // The same access on the resource's line, so that overlaps show as stacked colours.
        let _ = writeln!(
            s,
            r#"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="8" fill="{colour}" opacity="0.7"><title>{}</title></rect>"#,
            ry - 4.0,
            x1 - x0,
            esc(&info)
        );
        if let Some(t) = tok {
            let label = format!("{t}");
            if last_label.get(&n).is_none_or(|&lx| x0 > lx) {
                draw::text(&mut s, x0, y(n) - 13.0, Anchor::Start, r#"font-size="9""#, &label);
                last_label.insert(n, x0 + 5.5 * label.len() as f64);
            }
        }
    }
    for &(n, a, b, _) in &believed {
        let (x0, x1) = (f.x(a), f.x(b).max(f.x(a) + 1.0));
        let _ = writeln!(
            s,
            r##"<rect class="believed" x="{x0:.1}" y="{:.1}" width="{:.1}" height="3" fill="#333"><title>node {n} in its critical section (its own trace), +{:.1} ms to +{:.1} ms</title></rect>"##,
            y(n) + 2.0,
            x1 - x0,
            f.story.ms(a),
            f.story.ms(b)
        );
    }
    for (t, who) in &violations {
        let x = f.x(*t);
        let _ = writeln!(
            s,
            r##"<g class="violation" transform="translate({x:.1},{ry})"><path d="M-7,-7L7,7M-7,7L7,-7" stroke="#d62728" stroke-width="3.5"/><title>VIOLATION at +{:.1} ms: nodes {who:?} held the resource at once</title></g>"##,
            f.story.ms(*t)
        );
    }
    for &(t, by, token, highest) in &stale {
        let x = f.x(t);
        let _ = writeln!(
            s,
            r##"<g class="stale" transform="translate({x:.1},{ry})"><path d="M-6,-6L6,6M-6,6L6,-6" stroke="#555" stroke-width="2.5"/><title>+{:.1} ms: node {by}'s begin refused: token {token} is below {highest}</title></g>"##,
            f.story.ms(t)
        );
        let yy = y(by);
        let _ = writeln!(
            s,
            r##"<g class="stale" transform="translate({x:.1},{yy})"><path d="M-6,-6L6,6M-6,6L6,-6" stroke="#555" stroke-width="2.5"/><text x="8" y="-6" font-size="9">stale {token} &lt; {highest}</text></g>"##
        );
    }
    f.axis(&mut s, height - 40.0);
    s.push_str("</svg>\n");
    Ok(s)
}

/// Each node's offset from true time (its physical clock minus the host's true time, from
/// every event's `pt`), with each correction: the offset before it, where it aims (before plus
/// the correction), and the bound it claims round that aim.
fn clock(run: &RunDir, f: &Frame<'_>) -> Result<String, CliError> {
    let mut series: BTreeMap<NodeId, Vec<(u64, f64)>> = BTreeMap::new();
    let mut fixes: Vec<(NodeId, u64, f64, f64, f64, bool)> = Vec::new();
    for r in &run.node_events {
        let (Some(n), Some(pt)) = (r.node, r.pt) else { continue };
        let off = (pt as f64 - r.t as f64) / 1000.0;
        series.entry(n).or_default().push((r.t, off));
        if let Event::ClockAdjust {
            offset_us,
            bound_us,
            step,
            ..
        } = &r.event
        {
            fixes.push((
                n,
                r.t,
                off,
                off + *offset_us as f64 / 1000.0,
                *bound_us as f64 / 1000.0,
                *step,
            ));
        }
    }
    if series.is_empty() {
        return Err(usage(
            "--view clock: this run's events carry no physical clock reading (pt)",
        ));
    }
    let (t0, t1) = (f.story.t0, f.story.t1);
    let inside = |t: u64| t >= t0 && t <= t1;
    let mut lo = f64::MAX;
    let mut hi = f64::MIN;
    for pts in series.values() {
        for &(t, o) in pts.iter().filter(|p| inside(p.0)) {
            let _ = t;
            lo = lo.min(o);
            hi = hi.max(o);
        }
    }
    for &(_, _, a, b, e, _) in fixes.iter().filter(|x| inside(x.1)) {
        lo = lo.min(a).min(b - e);
        hi = hi.max(a).max(b + e);
    }
    if lo > hi {
        (lo, hi) = (-1.0, 1.0);
    }
    lo = lo.min(0.0);
    hi = hi.max(0.0);
    let pad = ((hi - lo) * 0.08).max(0.01);
    let (lo, hi) = (lo - pad, hi + pad);
    let (top, plot_h) = (80.0, 420.0);
    let yv = |o: f64| top + (hi - o) / (hi - lo) * plot_h;
    let height = top + plot_h + 60.0;
    let mut s = String::new();
    draw::open(&mut s, Some("clock-view"), WIDTH, height, 11.0);
    header(
        &mut s,
        &format!("{}: each clock's offset from true time", f.story.algo),
        &[
            format!(
                "{} corrections: a hollow circle where the clock stood before, an arrow to where it aims, the bar its claimed bound",
                fixes.len()
            ),
            "the line: the clock's offset at each of its events (slewed corrections bend it gradually); 0 is true time"
                .to_string(),
        ],
    );
    // The value axis, with true time at 0.
    let raw = ((hi - lo) / 8.0).max(0.001);
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&v| v >= raw)
        .unwrap_or(10.0 * p);
    let mut v = (lo / step).ceil() * step;
    while v <= hi {
        let yy = yv(v);
        let (stroke, width) = if v.abs() < step / 2.0 {
            ("#000", 1.2)
        } else {
            ("#e3e3e3", 0.6)
        };
        let _ = writeln!(
            s,
            r#"<line x1="{LEFT}" y1="{yy:.1}" x2="{}" y2="{yy:.1}" stroke="{stroke}" stroke-width="{width}"/>"#,
            WIDTH - RIGHT
        );
        let label = if v.abs() < step / 2.0 {
            "0 (true time)".to_string()
        } else {
            format!("{v:+} ms")
        };
        draw::text(&mut s, LEFT - 6.0, yy + 4.0, Anchor::End, "", &label);
        v += step;
    }
    for (k, (n, pts)) in series.iter().enumerate() {
        let colour = draw::colour(k);
        let mut d = String::new();
        let mut last_x = f64::MIN;
        for &(t, o) in pts.iter().filter(|p| inside(p.0)) {
            let x = f.x(t);
            // One point per pixel column is all a line can show.
            if x - last_x < 0.5 {
                continue;
            }
            let _ = write!(d, "{}{x:.1},{:.1}", if d.is_empty() { "M" } else { "L" }, yv(o));
            last_x = x;
        }
        let _ = writeln!(
            s,
            r#"<path class="offset" d="{d}" fill="none" stroke="{colour}" stroke-width="1.6"><title>node {n}'s clock offset from true time</title></path>"#
        );
        let legend_x = LEFT + 10.0 + 90.0 * k as f64;
        let _ = writeln!(
            s,
            r#"<g class="legend"><line x1="{legend_x}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="3"/><text x="{}" y="{}">node {n}</text></g>"#,
            legend_x + 16.0,
            legend_x + 20.0,
            height - 8.0,
            ly = height - 12.0
        );
    }
    for &(n, t, before, aim, bound, step) in fixes.iter().filter(|x| inside(x.1)) {
        let k = series.keys().position(|&m| m == n).unwrap_or(0);
        let colour = draw::colour(k);
        let x = f.x(t);
        let info = format!(
            "node {n} at +{:.1} ms: offset {before:+.3} ms, corrected by {:+.3} ms ({}) toward {aim:+.3} ms, claimed bound ±{bound:.3} ms",
            f.story.ms(t),
            aim - before,
            if step { "stepped" } else { "slewed" }
        );
        let _ = writeln!(
            s,
            r##"<g class="correction" data-info="{i}"><title>{i}</title><circle cx="{x:.1}" cy="{yb:.1}" r="4" fill="#fff" stroke="{colour}" stroke-width="2"/><line x1="{x:.1}" y1="{yb:.1}" x2="{x:.1}" y2="{ya:.1}" stroke="{colour}" stroke-dasharray="3,2"/><line x1="{x0:.1}" y1="{ylo:.1}" x2="{x0:.1}" y2="{yhi:.1}" stroke="{colour}" stroke-width="3"/><line x1="{xa:.1}" y1="{ya:.1}" x2="{xb:.1}" y2="{ya:.1}" stroke="{colour}" stroke-width="2"/></g>"##,
            i = esc(&info),
            yb = yv(before),
            ya = yv(aim),
            x0 = x + 3.0,
            ylo = yv(aim - bound).max(yv(aim) + 1.5),
            yhi = yv(aim + bound).min(yv(aim) - 1.5),
            xa = x - 4.0,
            xb = x + 6.0
        );
    }
    f.axis(&mut s, top + plot_h + 10.0);
    s.push_str("</svg>\n");
    Ok(s)
}

/// Each recorded global state as a cut across the nodes' lines (through each node's recording
/// of it), each point labelled with the node's balance and the money it counted in its incoming
/// channels, and the state's sum against the bank's total.
fn snapshot(run: &RunDir, f: &Frame<'_>) -> Result<String, CliError> {
    type Cut = Vec<(NodeId, u64, u64, u64)>;
    let mut cuts: BTreeMap<(String, u64), Cut> = BTreeMap::new();
    let mut initial = 0u64;
    for r in &run.node_events {
        let (
            Some(n),
            Event::Snapshot {
                snap,
                method,
                balance,
                in_flight,
            },
        ) = (r.node, &r.event)
        else {
            continue;
        };
        if method == "initial" {
            initial += balance;
            continue;
        }
        cuts.entry((method.clone(), *snap))
            .or_default()
            .push((n, r.t, *balance, *in_flight));
    }
    if cuts.is_empty() {
        return Err(usage(
            "--view snapshot: this run recorded no snapshot (bank --set snapshot=...)",
        ));
    }
    let nodes = &f.story.nodes;
    let row = if nodes.len() <= 16 {
        46.0
    } else {
        (900.0 / nodes.len() as f64).max(4.0)
    };
    let top = 80.0;
    let y = |n: NodeId| top + row * nodes.iter().position(|&m| m == n).unwrap_or(0) as f64 + row / 2.0;
    let list_top = top + row * nodes.len() as f64 + 40.0;
    let height = list_top + 16.0 * cuts.len().min(40) as f64 + 20.0;
    let mut s = String::new();
    draw::open(&mut s, Some("snapshot-view"), WIDTH, height, 11.0);
    header(
        &mut s,
        &format!("{}: recorded global states as cuts", f.story.algo),
        &[
            format!(
                "{} states recorded; each cut joins every node's recording of one state; labels: balance + money in its incoming channels",
                cuts.len()
            ),
            format!("the bank holds {initial} in all (the starting balances); a state that does not sum to it is wrong"),
        ],
    );
    for &n in nodes {
        let yy = y(n);
        draw::text(
            &mut s,
            10.0,
            yy + 4.0,
            Anchor::Start,
            r#"font-weight="bold""#,
            &f.story.lane_name(n),
        );
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{}" y2="{yy:.1}" stroke="#999"/>"##,
            WIDTH - RIGHT
        );
    }
    // Transfers, faintly, so that a message crossing a cut can be seen.
    let sends = Sends::of(&run.node_events);
    let mut drawn = BTreeSet::new();
    for r in &run.node_events {
        let Some(name) = received(r) else { continue };
        let Some(t) = sends.send_of(name, r.t).map(|s| s.t) else {
            continue;
        };
        // A duplicated datagram is drawn once, to its first receive.
        if drawn.insert((name, t)) && t >= f.story.t0 && r.t <= f.story.t1 && nodes.len() <= 64 {
            let _ = writeln!(
                s,
                r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ccc" stroke-width="0.7"/>"##,
                f.x(t),
                y(name.0),
                f.x(r.t),
                y(name.1)
            );
        }
    }
    let labelled = cuts.len() <= 12 && row >= 30.0;
    for (k, ((method, snap), pts)) in cuts.iter().enumerate() {
        let mut pts = pts.clone();
        pts.sort_by_key(|p| nodes.iter().position(|&m| m == p.0));
        let balances: u64 = pts.iter().map(|p| p.2).sum();
        let channels: u64 = pts.iter().map(|p| p.3).sum();
        let total = balances + channels;
        let ok = total == initial && pts.len() == nodes.len();
        let colour = if method == "clock" { "#1f77b4" } else { "#2ca02c" };
        let colour = if ok { colour } else { "#d62728" };
        let name = if method == "clock" {
            let since = (*snap as f64 * 1000.0 - f.story.start_us as f64) / 1000.0;
            format!("clock state at +{since:.0} ms on the clocks")
        } else {
            format!("{method} snapshot {snap}")
        };
        let d: String = pts
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{}{:.1},{:.1}", if i == 0 { "M" } else { "L" }, f.x(p.1), y(p.0)))
            .collect();
        let info = format!(
            "{name}: balances {balances} + in channels {channels} = {total} (the bank holds {initial}){}",
            if pts.len() < nodes.len() {
                "; not every node recorded it"
            } else {
                ""
            }
        );
        let _ = writeln!(
            s,
            r#"<g class="cut {m}"><title>{i}</title><path d="{d}" fill="none" stroke="{colour}" stroke-width="2.5" opacity="0.85"/>"#,
            m = if method == "clock" { "clock" } else { "marker" },
            i = esc(&info)
        );
        for p in &pts {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{colour}"><title>node {}: balance {}, {} in its incoming channels</title></circle>"#,
                f.x(p.1),
                y(p.0),
                p.0,
                p.2,
                p.3
            );
            if labelled {
                let label = if p.3 > 0 {
                    format!("{}+{}", p.2, p.3)
                } else {
                    format!("{}", p.2)
                };
                draw::text(
                    &mut s,
                    f.x(p.1) + 5.0,
                    y(p.0) - 6.0,
                    Anchor::Start,
                    r#"font-size="9""#,
                    &label,
                );
            }
        }
        s.push_str("</g>\n");
        if k < 40 {
            draw::text(
                &mut s,
                LEFT,
                list_top + 16.0 * k as f64,
                Anchor::Start,
                &format!(r#"fill="{colour}""#),
                &format!("{} {info}", if ok { "✓" } else { "✗" }),
            );
        }
    }
    f.axis(&mut s, top + row * nodes.len() as f64 + 4.0);
    s.push_str("</svg>\n");
    Ok(s)
}
