//! The mutex view: who held the resource when, violations and refused stale begins.

use super::*;

/// Who held the resource when: per node, what the resource accepted (begin to end, thick,
/// labelled with the fencing token) and what the node believed (cs_enter to cs_exit, thin);
/// violations and refused stale begins marked on the resource's own line.
pub(super) fn mutex(run: &RunDir, f: &Frame<'_>) -> Result<String, CliError> {
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
    lane(&mut s, ry, "resource", "#333");
    for &n in &lanes {
        lane(&mut s, y(n), &format!("node {n}"), "#bbb");
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
