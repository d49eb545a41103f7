//! Yo-Yo's orientation as it evolves: every iteration of the deciding term, from the notes
//! each node writes when it begins one (`term T, iteration K: in from [..], out to [..]; ...`,
//! docs/trace.md), drawn as small multiples under the graph: which edges are left, which way
//! each points, the sources, the edges a NO turned round since the iteration before, and the
//! edges pruned at its end.

use super::draw::{self, Anchor};
use super::xml_escape as esc;
use crate::trace::{Event, NodeId, RunDir};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// One iteration as the nodes still in it began it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Iteration {
    /// Its number, from 1.
    pub iter: u64,
    /// The nodes that began it (the others were pruned before).
    pub nodes: BTreeSet<NodeId>,
    /// The edges left, each oriented (tail, head): YO flows from tail to head.
    pub arcs: Arcs,
}

impl Iteration {
    /// Nodes with an out-edge and no in-edge: the candidates that send YO.
    pub(crate) fn sources(&self) -> BTreeSet<NodeId> {
        let heads: BTreeSet<NodeId> = self.arcs.iter().map(|a| a.1).collect();
        self.arcs.iter().map(|a| a.0).filter(|t| !heads.contains(t)).collect()
    }
}

/// `[1, 2, 3]` as ids.
fn ids(list: &str) -> Option<Vec<NodeId>> {
    let inner = list.trim().strip_prefix('[')?.strip_suffix(']')?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().ok())
        .collect()
}

/// (term, iteration, in-neighbours, out-neighbours) of a Yo-Yo orientation note.
pub(crate) fn parse_note(text: &str) -> Option<(u64, u64, Vec<NodeId>, Vec<NodeId>)> {
    let (term, rest) = text.strip_prefix("term ")?.split_once(", iteration ")?;
    let (iter, rest) = rest.split_once(": in from ")?;
    let (ins, rest) = rest.split_once(", out to ")?;
    let outs = &rest[..=rest.find(']')?];
    Some((term.parse().ok()?, iter.parse().ok()?, ids(ins)?, ids(outs)?))
}

/// Every iteration of `term` that the nodes' notes tell of, in order.
pub fn iterations(run: &RunDir, term: u64) -> Vec<Iteration> {
    let mut by_iter: BTreeMap<u64, Iteration> = BTreeMap::new();
    for r in &run.node_events {
        let (Some(me), Event::Note { text, .. }) = (r.node, &r.event) else {
            continue;
        };
        let Some((t, k, ins, outs)) = parse_note(text) else {
            continue;
        };
        if t != term {
            continue;
        }
        let it = by_iter.entry(k).or_insert_with(|| Iteration {
            iter: k,
            ..Iteration::default()
        });
        it.nodes.insert(me);
        it.arcs.extend(ins.iter().map(|&i| (i, me)));
        it.arcs.extend(outs.iter().map(|&o| (me, o)));
    }
    by_iter.into_values().collect()
}

/// Oriented edges, (tail, head).
pub(crate) type Arcs = BTreeSet<(NodeId, NodeId)>;

/// What changed between iteration `k` and the next: the arcs turned round (as they stand in
/// the next), and the edges gone (as they stood in `k`).
pub fn changes(its: &[Iteration], k: usize) -> (Arcs, Arcs) {
    let Some(now) = its.get(k) else {
        return Default::default();
    };
    let next = its.get(k + 1).map(|n| &n.arcs);
    let turned = next
        .map(|n| n.iter().copied().filter(|&(a, b)| now.arcs.contains(&(b, a))).collect())
        .unwrap_or_default();
    let gone = match next {
        Some(n) => now
            .arcs
            .iter()
            .copied()
            .filter(|&(a, b)| !n.contains(&(a, b)) && !n.contains(&(b, a)))
            .collect(),
        None => BTreeSet::new(),
    };
    (turned, gone)
}

const PANEL: f64 = 240.0;
/// The panels' heading: a title and two lines of legend.
const HEADING: f64 = 56.0;
const R: f64 = 9.0;
const COLS: usize = 3;

/// The height the panels of `its` take.
pub(crate) fn height(its: &[Iteration]) -> f64 {
    if its.is_empty() {
        return 0.0;
    }
    HEADING + its.len().div_ceil(COLS) as f64 * (PANEL + 24.0)
}

/// Draws `its` at height `top`, `width` wide, nodes placed on a circle in the order of `nodes`.
pub(crate) fn panels(s: &mut String, its: &[Iteration], nodes: &[NodeId], top: f64, width: f64) {
    if its.is_empty() {
        return;
    }
    draw::text(
        s,
        10.0,
        top + 18.0,
        Anchor::Start,
        r#"font-size="13" font-weight="bold""#,
        "The orientation in every iteration (from the nodes' notes): YO flows along the arrows",
    );
    draw::text(
        s,
        10.0,
        top + 34.0,
        Anchor::Start,
        r#"font-size="11""#,
        "blue ring: a source (it sends YO); orange: turned round by a NO at the end of the iteration before;",
    );
    draw::text(
        s,
        10.0,
        top + 48.0,
        Anchor::Start,
        r#"font-size="11""#,
        "red dashed: pruned at the end of this iteration; grey: pruned before.",
    );
    let gap = (width - COLS as f64 * PANEL) / (COLS as f64 + 1.0);
    for (k, it) in its.iter().enumerate() {
        let (col, row) = (k % COLS, k / COLS);
        let x0 = gap + col as f64 * (PANEL + gap);
        let y0 = top + HEADING + row as f64 * (PANEL + 24.0);
        let turned = if k > 0 { changes(its, k - 1).0 } else { BTreeSet::new() };
        let gone = changes(its, k).1;
        panel(s, it, nodes, (x0, y0), &turned, &gone);
    }
}

fn panel(s: &mut String, it: &Iteration, nodes: &[NodeId], (x0, y0): (f64, f64), turned: &Arcs, gone: &Arcs) {
    let centre = (x0 + PANEL / 2.0, y0 + 24.0 + (PANEL - 24.0) / 2.0);
    let pos: BTreeMap<NodeId, (f64, f64)> = nodes
        .iter()
        .copied()
        .zip(draw::on_circle(nodes.len(), centre, PANEL / 2.0 - 24.0))
        .collect();
    let sources = it.sources();
    let what = match (it.arcs.len(), sources.len()) {
        (0, _) => format!("iteration {}: no edge left", it.iter),
        (a, s) => format!(
            "iteration {}: {a} edges, {s} source{}",
            it.iter,
            if s == 1 { "" } else { "s" }
        ),
    };
    let _ = writeln!(
        s,
        r##"<g class="iteration" data-iter="{}"><rect x="{x0:.1}" y="{y0:.1}" width="{PANEL}" height="{PANEL}" fill="#fafafa" stroke="#ccc"/>"##,
        it.iter
    );
    draw::text(s, x0 + 8.0, y0 + 16.0, Anchor::Start, r#"font-weight="bold""#, &what);
    for &(a, b) in &it.arcs {
        let (Some(&p), Some(&q)) = (pos.get(&a), pos.get(&b)) else {
            continue;
        };
        let (x1, y1, x2, y2) = super::graph::between(p, q, R);
        let (style, why) = if gone.contains(&(a, b)) {
            (
                r##"stroke="#d62728" stroke-width="2" stroke-dasharray="5,3" marker-end="url(#arc-pruned)""##,
                "; pruned at the end of this iteration",
            )
        } else if turned.contains(&(a, b)) {
            (
                r##"stroke="#ff7f0e" stroke-width="2.5" marker-end="url(#arc-turned)""##,
                "; turned round by a NO in the iteration before",
            )
        } else {
            (r##"stroke="#444" stroke-width="1.3" marker-end="url(#arc)""##, "")
        };
        let _ = writeln!(
            s,
            r#"<line class="arc" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" {style}><title>{}</title></line>"#,
            esc(&format!("iteration {}: {a} -> {b}{why}", it.iter))
        );
    }
    for (&id, &(x, y)) in &pos {
        let (fill, stroke, width) = if !it.nodes.contains(&id) {
            ("#eee", "#bbb", 1.0)
        } else if sources.contains(&id) || it.arcs.is_empty() {
            ("#e8f1fb", "#1f77b4", 3.0)
        } else {
            ("#e8f1fb", "#222", 1.0)
        };
        let colour = if it.nodes.contains(&id) { "#000" } else { "#aaa" };
        let _ = writeln!(
            s,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="{R}" fill="{fill}" stroke="{stroke}" stroke-width="{width}"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="9" fill="{colour}">{id}</text>"#,
            y + 3.0
        );
    }
    s.push_str("</g>\n");
}

/// The arrow heads the panels use.
pub(crate) fn markers(s: &mut String) {
    draw::arrow_head(s, "arc", "#444", 6.0);
    draw::arrow_head(s, "arc-turned", "#ff7f0e", 5.0);
    draw::arrow_head(s, "arc-pruned", "#d62728", 5.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_parse_with_their_role_after_them() {
        assert_eq!(
            parse_note("term 2, iteration 3: in from [1, 4], out to [] ; a sink"),
            Some((2, 3, vec![1, 4], vec![]))
        );
        assert_eq!(
            parse_note(
                "term 1, iteration 1: in from [], out to [5] (oriented from the smaller id to the larger); a source"
            ),
            Some((1, 1, vec![], vec![5]))
        );
        assert_eq!(parse_note("ELECTION(3) swallowed"), None);
    }

    #[test]
    fn a_no_turns_an_edge_and_a_prune_removes_it() {
        let it = |iter, arcs: &[(NodeId, NodeId)]| Iteration {
            iter,
            nodes: BTreeSet::new(),
            arcs: arcs.iter().copied().collect(),
        };
        let its = [it(1, &[(1, 3), (2, 3)]), it(2, &[(1, 3), (3, 2)]), it(3, &[])];
        assert_eq!(its[0].sources(), [1, 2].into());
        assert_eq!(changes(&its, 0), ([(3, 2)].into(), BTreeSet::new()));
        assert_eq!(changes(&its, 1), (BTreeSet::new(), [(1, 3), (3, 2)].into()));
        assert_eq!(changes(&its, 2), Default::default());
    }
}
