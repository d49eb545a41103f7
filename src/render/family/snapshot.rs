//! The snapshot view: each recorded global state as a cut across the nodes' lines.

use super::*;
use crate::check::snapshot::recorded;

/// Each recorded global state as a cut across the nodes' lines (through each node's recording
/// of it), each point labelled with the node's balance and the money it counted in its incoming
/// channels, and the state's sum against the bank's total.
pub(super) fn snapshot(run: &RunDir, f: &Frame<'_>) -> Result<String, CliError> {
    type Cut = Vec<(NodeId, u64, u64, u64)>;
    let mut cuts: BTreeMap<(String, u64), Cut> = BTreeMap::new();
    let mut initial = 0u64;
    for r in recorded(&run.node_events) {
        if r.method == "initial" {
            initial += r.balance;
            continue;
        }
        cuts.entry((r.method.to_string(), r.snap))
            .or_default()
            .push((r.node, r.t, r.balance, r.in_flight));
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
        lane(&mut s, y(n), &f.story.lane_name(n), "#999");
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
