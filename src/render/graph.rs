//! The graph of a run (SVG) with the last election's result drawn on it: the echo wave's
//! spanning tree, Yo-Yo's orientation and pruned edges (and, under the graph, its orientation
//! in every iteration), the ring and the hops that repaired it, and the leader.
//!
//! Everything comes from the traces: the edges from `run.json`, tree edges from the ECHO
//! messages of the deciding term, pruned edges from the votes that carried `prune=true`,
//! Yo-Yo's iterations from its nodes' notes, repairs from ring messages sent past a
//! successor; the term is read from each message's brief (`term=N`).

use super::draw;
use super::orientation::{self, Iteration};
use super::xml_escape as esc;
use crate::check::Timeline;
use crate::trace::{Event, NodeId, RunDir};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

const SIZE: f64 = 760.0;
const R: f64 = 15.0;

/// What the graph shows, as data (the tests read it; the SVG draws it).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Drawing {
    /// The algorithm.
    pub algo: String,
    /// The nodes, in run.json's order.
    pub nodes: Vec<NodeId>,
    /// Undirected edges of the topology, smaller id first.
    pub edges: BTreeSet<(NodeId, NodeId)>,
    /// The leader of the last decided term and that term.
    pub leader: Option<(NodeId, u64)>,
    /// Echo: child -> parent edges of the deciding wave.
    pub tree: BTreeSet<(NodeId, NodeId)>,
    /// Yo-Yo: edges pruned in the deciding term, with the iteration.
    pub pruned: BTreeMap<(NodeId, NodeId), u64>,
    /// Yo-Yo: the orientation in every iteration of the deciding term.
    pub iterations: Vec<Iteration>,
    /// Ring messages sent past a successor (from, to): the ring's repairs.
    pub repairs: BTreeSet<(NodeId, NodeId)>,
    /// Nodes dead at the end of the run.
    pub dead: BTreeSet<NodeId>,
    /// Whether the topology is a ring (drawn as arrows to the successor).
    pub ring: bool,
}

/// `term=N` at the end of a brief.
fn term_of(brief: &str) -> Option<u64> {
    let i = brief.rfind("term=")?;
    brief[i + 5..].trim_end_matches(')').parse().ok()
}

/// A field `key=value` of a brief.
fn field<'a>(brief: &'a str, key: &str) -> Option<&'a str> {
    let i = brief.find(&format!("{key}="))? + key.len() + 1;
    brief[i..].split([',', ')']).next()
}

fn edge(a: NodeId, b: NodeId) -> (NodeId, NodeId) {
    (a.min(b), a.max(b))
}

/// The segment from circle `p` to circle `q` (radius `r`), edge to edge, so that an arrow
/// head at its end shows.
pub fn between(p: (f64, f64), q: (f64, f64), r: f64) -> (f64, f64, f64, f64) {
    let (dx, dy) = (q.0 - p.0, q.1 - p.1);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let (ux, uy) = (dx / len * r, dy / len * r);
    (p.0 + ux, p.1 + uy, q.0 - ux, q.1 - uy)
}

impl Drawing {
    /// Reads what to draw from `run`.
    pub fn build(run: &RunDir) -> Drawing {
        let nodes: Vec<NodeId> = run.info.nodes.iter().map(|n| n.id).collect();
        let ring = matches!(run.info.topology.as_str(), "ring" | "mesh:ring");
        let mut edges = BTreeSet::new();
        for n in &run.info.nodes {
            for &p in &n.peers {
                if p != n.id {
                    edges.insert(edge(n.id, p));
                }
            }
        }
        let leader = run
            .node_events
            .iter()
            .filter_map(|r| match r.event {
                Event::Leader { leader, term } => Some((leader, term)),
                _ => None,
            })
            .max_by_key(|&(_, term)| term);
        let term = leader.map(|l| l.1);
        let successor: BTreeMap<NodeId, NodeId> = nodes
            .iter()
            .enumerate()
            .map(|(i, &n)| (n, nodes[(i + 1) % nodes.len()]))
            .collect();
        let mut d = Drawing {
            algo: run.info.algo.clone(),
            ring,
            leader,
            ..Drawing::default()
        };
        // ECHO sends of the deciding term: (wave, child, parent).
        let mut echoes: Vec<(Option<NodeId>, NodeId, NodeId)> = Vec::new();
        for r in &run.node_events {
            let (Some(from), Event::Send { to, msg, brief, .. }) = (r.node, &r.event) else {
                continue;
            };
            let this_term = term_of(brief);
            match msg.as_str() {
                "ECHO" if this_term == term => {
                    let wave = field(brief, "wave").and_then(|w| w.parse::<NodeId>().ok());
                    echoes.push((wave, from, *to));
                }
                "YES" | "NO" | "VOTE" if this_term == term && field(brief, "prune") == Some("true") => {
                    let iter = field(brief, "iter").and_then(|v| v.parse().ok()).unwrap_or(0);
                    d.pruned.insert(edge(from, *to), iter);
                }
                "ELECTION" | "ELECTED" | "COORDINATOR" | "TOKEN" if ring && successor.get(&from) != Some(to) => {
                    d.repairs.insert((from, *to));
                }
                _ => {}
            }
        }
        // With several initiators only the highest one's wave completes: the others died out
        // part way, and their echoes are no part of the tree.
        let winner = echoes.iter().map(|e| e.0).max().flatten();
        d.tree = echoes
            .into_iter()
            .filter(|e| e.0 == winner)
            .map(|(_, child, parent)| (child, parent))
            .collect();
        let timeline = Timeline::build(run);
        d.dead = nodes
            .iter()
            .copied()
            .filter(|&n| timeline.state_at(n, timeline.end_us).0.ended())
            .collect();
        if draws_orientation(&d.algo) {
            d.iterations = term.map(|t| orientation::iterations(run, t)).unwrap_or_default();
        }
        d.nodes = nodes;
        d.edges = edges;
        d
    }

    /// Where each node stands: on a circle, `down` lower for a legend of several lines.
    fn positions(&self, down: f64) -> BTreeMap<NodeId, (f64, f64)> {
        let centre = (SIZE / 2.0, SIZE / 2.0 + 20.0 + down);
        self.nodes
            .iter()
            .copied()
            .zip(draw::on_circle(self.nodes.len(), centre, SIZE / 2.0 - 60.0))
            .collect()
    }

    /// The SVG.
    pub fn svg(&self) -> String {
        let legend = draw::wrap(&self.legend(), 120);
        let down = 14.0 * legend.len().saturating_sub(1) as f64;
        let pos = self.positions(down);
        let h = SIZE + 60.0 + down + orientation::height(&self.iterations);
        let mut s = String::new();
        draw::open(&mut s, Some("graph"), SIZE, h, 12.0);
        s.push_str("<defs>");
        draw::arrow_head(&mut s, "arrow", "#444", 6.0);
        draw::arrow_head(&mut s, "tree", "#2ca02c", 5.0);
        draw::arrow_head(&mut s, "repair", "#ff7f0e", 6.0);
        orientation::markers(&mut s);
        s.push_str("</defs>\n");
        let title = match self.leader {
            Some((l, t)) => format!("{} on {} nodes: node {l} leads term {t}", self.algo, self.nodes.len()),
            None => format!("{} on {} nodes: no leader", self.algo, self.nodes.len()),
        };
        let _ = writeln!(
            s,
            r#"<text x="10" y="20" font-size="15" font-weight="bold">{}</text>"#,
            esc(&title)
        );
        for (i, l) in legend.iter().enumerate() {
            draw::text(
                &mut s,
                10.0,
                38.0 + 14.0 * i as f64,
                draw::Anchor::Start,
                r#"font-size="11""#,
                l,
            );
        }
        let line = |s: &mut String, a: NodeId, b: NodeId, style: &str, class: &str, info: &str| {
            let (Some(&(x0, y0)), Some(&(x1, y1))) = (pos.get(&a), pos.get(&b)) else {
                return;
            };
            let (x0, y0, x1, y1) = between((x0, y0), (x1, y1), R);
            let _ = writeln!(
                s,
                r#"<line class="{class}" x1="{x0:.1}" y1="{y0:.1}" x2="{x1:.1}" y2="{y1:.1}" {style}><title>{}</title></line>"#,
                esc(info)
            );
        };
        let yoyo = draws_orientation(&self.algo);
        for &(a, b) in &self.edges {
            if self.ring {
                continue;
            }
            if yoyo {
                let pruned = self.pruned.get(&(a, b));
                let info = match pruned {
                    Some(k) => {
                        format!("edge {a}->{b}: oriented from the smaller id to the larger; pruned in iteration {k}")
                    }
                    None => format!("edge {a}->{b}: oriented from the smaller id to the larger; never pruned"),
                };
                line(
                    &mut s,
                    a,
                    b,
                    r##"stroke="#444" marker-end="url(#arrow)""##,
                    "edge",
                    &info,
                );
                if let (Some(k), Some(&(x0, y0)), Some(&(x1, y1))) = (pruned, pos.get(&a), pos.get(&b)) {
                    let (x, y) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
                    let _ = writeln!(
                        s,
                        r##"<g class="pruned"><circle cx="{x:.1}" cy="{y:.1}" r="7" fill="#fff" stroke="#d62728"/><text x="{x:.1}" y="{ty:.1}" text-anchor="middle" font-size="9" fill="#d62728">{k}</text></g>"##,
                        ty = y + 3.0
                    );
                }
            } else {
                line(&mut s, a, b, r##"stroke="#bbb""##, "edge", &format!("edge {a}-{b}"));
            }
        }
        if self.ring {
            for (i, &a) in self.nodes.iter().enumerate() {
                let b = self.nodes[(i + 1) % self.nodes.len()];
                let info = format!("ring: node {a} sends to node {b}");
                line(
                    &mut s,
                    a,
                    b,
                    r##"stroke="#444" marker-end="url(#arrow)""##,
                    "edge",
                    &info,
                );
            }
            for &(a, b) in &self.repairs {
                let info = format!("repair: node {a} sent past its successor to node {b}");
                let style = r##"stroke="#ff7f0e" stroke-width="2.5" stroke-dasharray="6,3" marker-end="url(#repair)""##;
                line(&mut s, a, b, style, "repair", &info);
            }
        }
        for &(child, parent) in &self.tree {
            let info = format!("spanning tree: node {child}'s parent is node {parent} (it echoed to it)");
            let style = r##"stroke="#2ca02c" stroke-width="3.5" marker-end="url(#tree)""##;
            line(&mut s, child, parent, style, "tree", &info);
        }
        let root = self.root();
        for &n in &self.nodes {
            let Some(&(x, y)) = pos.get(&n) else { continue };
            let ring_width = if root == Some(n) { 4.0 } else { 1.5 };
            let leads = self.leader.map(|l| l.0) == Some(n);
            let fill = if leads {
                "#ffbf00"
            } else if self.dead.contains(&n) {
                "#999"
            } else {
                "#e8f1fb"
            };
            let info = match (leads, self.dead.contains(&n)) {
                (true, _) => format!("node {n}: the leader"),
                (_, true) => format!("node {n}: dead at the end"),
                _ => format!("node {n}"),
            };
            let _ = writeln!(
                s,
                r##"<g class="node" data-node="{n}"><circle cx="{x:.1}" cy="{y:.1}" r="{R}" fill="{fill}" stroke="#222" stroke-width="{ring_width}"><title>{i}</title></circle><text x="{x:.1}" y="{ty:.1}" text-anchor="middle" font-weight="bold">{n}</text></g>"##,
                ty = y + 4.0,
                i = esc(&info)
            );
        }
        orientation::panels(&mut s, &self.iterations, &self.nodes, SIZE + 60.0 + down, SIZE);
        s.push_str("</svg>\n");
        s
    }

    /// The echo tree's root: a node with children and no parent.
    pub fn root(&self) -> Option<NodeId> {
        let children: BTreeSet<NodeId> = self.tree.iter().map(|e| e.0).collect();
        self.tree.iter().map(|e| e.1).find(|p| !children.contains(p))
    }

    fn legend(&self) -> String {
        let mut parts = vec!["gold: the leader".to_string()];
        if !self.dead.is_empty() {
            parts.push("grey: dead".into());
        }
        if !self.tree.is_empty() {
            let root = self
                .root()
                .map(|r| format!(", rooted at node {r}, the wave's initiator"))
                .unwrap_or_default();
            parts.push(format!(
                "green: the echo wave's spanning tree ({} edges, child to parent{root})",
                self.tree.len()
            ));
        }
        if draws_orientation(&self.algo) {
            parts.push(format!(
                "arrows: the first orientation, smaller id to larger; red k: the edge was pruned in iteration k ({} edges); {} iterations below",
                self.pruned.len(),
                self.iterations.len()
            ));
        }
        if self.ring {
            parts.push(format!(
                "arrows: the ring; orange: repairs past a silent successor ({})",
                self.repairs.len()
            ));
        }
        parts.join("; ")
    }
}

/// Whether the registry says `algo`'s pictures draw the Yo-Yo orientation.
fn draws_orientation(algo: &str) -> bool {
    crate::catalog::find(algo).is_some_and(|e| e.draws_orientation)
}

#[cfg(test)]
mod tests {
    #[test]
    fn briefs_give_their_term_and_fields() {
        assert_eq!(super::term_of("ECHO(wave=1, best=(5, 3), term=2)"), Some(2));
        assert_eq!(
            super::field("VOTE(iter=3, yes=true, prune=true, term=1)", "prune"),
            Some("true")
        );
        assert_eq!(
            super::field("VOTE(iter=3, yes=true, prune=true, term=1)", "iter"),
            Some("3")
        );
    }
}
