//! Why two nodes led (or were followed as leader of) one term, from the ground truth alone:
//! `faults.jsonl` (who was dead, paused or cut off when) and the topology in `run.json`.
//!
//! Without majority mode an election cannot tell a dead node from a cut-off one, so two
//! leaders in one term are inherent when the nodes involved could not hear each other:
//! - a **cut vertex**: on a mesh, the nodes down at the time split the graph and the two
//!   leaders were on different sides (a one-way ring repairs around any dead node: never a
//!   cut; a two-way ring without repair, Franklin's, is cut by two dead nodes);
//! - a **partition**: the network (a partition, or cut links: the graph minus the blocked
//!   links, see [`Network`]) left the two leaders in groups that could not talk: split-brain
//!   by partition;
//! - a **resumed node**: a leader was paused during the term's election, having joined the
//!   term before its pause, and claimed it after waking: it could not know. A node that joined
//!   the term only after waking heard of it, so its claim is not inherent.
//!
//! In majority mode a leader needs a majority's votes, so no two leaders of one term are ever
//! explained, partition or not (the words still say what the network was doing).

use super::election::{Claim, Violation};
use super::network::{group_words, Network};
use super::timeline::{Change, Proc, Timeline};
use crate::catalog as registry;
use crate::trace::{Event, NodeId, RunDir};
use std::collections::{BTreeMap, BTreeSet};

mod network;
use network::{fooled_by_a_link, split_by_network};

/// What the ground truth says about one violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// The term.
    pub term: u64,
    /// Whether the cause makes it inherent to the algorithm (then it does not fail the check).
    pub inherent: bool,
    /// Whether the algorithm itself allows it with no fault at all (the anonymous ring): it
    /// still fails the check, since showing it is that algorithm's point, but it is no bug.
    pub by_design: bool,
    /// The cause in words (`node 4 was dead (killed at +812 ms) and split the graph: ...`).
    pub words: String,
}

impl Explanation {
    /// A cause inherent to the algorithm (it does not fail the check).
    fn inherent(term: u64, words: String) -> Self {
        Explanation {
            term,
            inherent: true,
            by_design: false,
            words,
        }
    }
}

/// How the run may be judged: majority mode, and the graph when messages follow its edges.
#[derive(Debug, Clone, Default)]
pub struct Ground {
    /// `--set majority=true`.
    pub majority: bool,
    /// The links messages follow (None for a ring repaired around any dead node).
    pub graph: Option<BTreeMap<NodeId, Vec<NodeId>>>,
    /// Whether faults.jsonl exists (no ground truth, no explanation).
    pub faults_known: bool,
    /// The run's start, for `+ms` in the words.
    pub start_us: u64,
    /// The algorithm has no ids, so simultaneous candidates cannot be told apart.
    pub anonymous: bool,
    /// The failure detector's timeout (`run.json`), microseconds.
    pub timeout_us: Option<u64>,
    /// What the network was doing (None: not known, as in a test that builds a ground by hand).
    pub network: Option<Network>,
}

impl Ground {
    /// What `run` says about itself.
    pub fn of(run: &RunDir) -> Self {
        let set = &run.info.options["set"];
        let majority = set["majority"]
            .as_str()
            .is_some_and(|v| crate::algo::options::boolean(v) == Some(true));
        // Messages follow the graph's edges, so that dead nodes can cut it, on a mesh and for
        // every algorithm that does not repair a ring around dead nodes (Franklin's two-way
        // ring is cut in two by two non-adjacent dead nodes).
        let repairs = registry::find(&run.info.algo).is_some_and(|e| e.runs_on == registry::Fit::RingOrder);
        let edges = run.info.topology.starts_with("mesh") || !repairs;
        let graph = edges.then(|| {
            run.info
                .nodes
                .iter()
                .map(|n| (n.id, n.peers.clone()))
                .collect::<BTreeMap<_, _>>()
        });
        Ground {
            majority,
            graph,
            faults_known: !run.missing.iter().any(|m| m == "faults.jsonl"),
            start_us: run.info.start_us,
            anonymous: run.info.algo == registry::ANON_RING.name,
            timeout_us: run.info.options["timeout_ms"].as_u64().map(|ms| ms * 1000),
            network: Some(Network::of(run)),
        }
    }
}

/// Explains `v` (uniqueness or agreement within a term); None for other violations.
pub fn explain(v: &Violation, run: &RunDir, timeline: &Timeline, g: &Ground) -> Option<Explanation> {
    let (term, parties, claims): (u64, Vec<NodeId>, &[Claim]) = match v {
        Violation::Uniqueness { term, claims } => (*term, claims.iter().map(|c| c.node).collect(), claims),
        Violation::TermAgreement { term, groups } => (*term, groups.values().map(|ns| ns[0]).collect(), &[]),
        _ => return None,
    };
    let not = |words: String| {
        Some(Explanation {
            term,
            inherent: false,
            by_design: false,
            words,
        })
    };
    if g.majority {
        let then = claims
            .iter()
            .map(|c| c.t)
            .min()
            .zip(claims.iter().map(|c| c.t).max())
            .and_then(|(a, b)| g.network.as_ref()?.during(a, b));
        return not(match then {
            Some(net) => format!(
                "majority mode promises one leader per term, partition or not: not inherent (the network then: {net})"
            ),
            None => "majority mode promises one leader per term: not inherent".into(),
        });
    }
    if g.anonymous {
        return Some(Explanation {
            term,
            inherent: false,
            by_design: true,
            words: format!(
                "the anonymous ring has no ids: {} each saw a token come back that it could not tell \
                 from its own, and each took the term (by design: it shows why election needs ids)",
                list(&parties)
            ),
        });
    }
    if !g.faults_known {
        return not("faults.jsonl is missing: no ground truth to explain it".into());
    }
    let at = |t: u64| super::summary::at(g.start_us, t);
    // The moments the term was being decided: its starts and claims.
    let mut moments: BTreeSet<u64> = claims.iter().map(|c| c.t).collect();
    for r in &run.node_events {
        match r.event {
            Event::ElectionStart { term: t } | Event::Leader { term: t, .. } if t == term => {
                moments.insert(r.t);
            }
            _ => {}
        }
    }
    if let Some(e) = g
        .network
        .as_ref()
        .and_then(|net| split_by_network(run, net, timeline, term, &parties, &moments, g))
    {
        return Some(e);
    }
    if let Some(graph) = &g.graph {
        for &t in &moments {
            let down: Vec<NodeId> = timeline
                .nodes()
                .filter(|&n| timeline.state_at(n, t).0 != Proc::Running)
                .collect();
            let comp = components(graph, &down);
            let sides: BTreeSet<usize> = parties.iter().filter_map(|p| comp.get(p).copied()).collect();
            if sides.len() > 1 {
                let cut: Vec<String> = down
                    .iter()
                    .filter(|d| {
                        let touches: BTreeSet<usize> = graph[d].iter().filter_map(|x| comp.get(x)).copied().collect();
                        touches.len() > 1
                    })
                    .map(|&d| {
                        let (state, since) = timeline.state_at(d, t);
                        let how = if state == Proc::Paused { "paused" } else { "dead" };
                        format!("node {d} ({how} since {})", since.map(at).unwrap_or_default())
                    })
                    .collect();
                return Some(Explanation::inherent(
                    term,
                    format!(
                        "at {} {} split the graph: {} could not reach each other, and each side elected",
                        at(t),
                        if cut.len() == 1 {
                            format!("the cut vertex {}", cut[0])
                        } else {
                            format!("the cut vertices {}", cut.join(", "))
                        },
                        list(&parties)
                    ),
                ));
            }
        }
    }
    let first = claims.iter().map(|c| c.t).min();
    for c in claims.iter().filter(|c| Some(c.t) != first) {
        if let Some(e) = resumed(run, timeline, term, c, first.unwrap_or(0), g) {
            return Some(e);
        }
    }
    if let Some(e) = g
        .network
        .as_ref()
        .and_then(|net| fooled_by_a_link(run, timeline, term, &parties, &moments, net, g))
    {
        return Some(e);
    }
    let named: Vec<NodeId> = match v {
        Violation::TermAgreement { groups, .. } => groups.keys().copied().collect(),
        _ => parties.clone(),
    };
    if let Some(e) = fell(timeline, term, &named, &moments, g) {
        return Some(e);
    }
    not("no fault explains it (no partition, no cut vertex, no resumed node, no leader lost mid-election): not inherent".into())
}

/// One of the leaders named in the term was killed or paused while the term was decided:
/// nodes that heard of it before its fall name it, nodes that skipped it as silent name
/// another, and without majority mode neither side can know better.
fn fell(timeline: &Timeline, term: u64, named: &[NodeId], moments: &BTreeSet<u64>, g: &Ground) -> Option<Explanation> {
    let at = |t: u64| super::summary::at(g.start_us, t);
    let (&first, &last) = (moments.first()?, moments.last()?);
    for &p in named {
        let Some(changes) = timeline.changes.get(&p) else {
            continue;
        };
        // Down shortly before the term began or while it was decided. Back within two
        // timeouts of it, a node is still suspected (a probe needs a round trip) and knows only
        // older terms, so it may be skipped, or pick the term's number afresh for a term of its
        // own: only majority mode prevents that. A pause longer than a timeout that ended
        // before the term began, the node notices, and then it claims no term it joined: that
        // one is not explained here.
        let timeout = g.timeout_us.unwrap_or(0);
        let from = first.saturating_sub(2 * timeout);
        let (state, since) = timeline.state_at(p, from);
        let mut downs: Vec<Change> = Vec::new();
        if matches!(state, Proc::Killed | Proc::Paused) {
            downs.push(Change {
                t: since.unwrap_or(from),
                state,
            });
        }
        downs.extend(
            changes
                .iter()
                .filter(|ch| ch.t > from && ch.t <= last && matches!(ch.state, Proc::Killed | Proc::Paused)),
        );
        let fall = downs.into_iter().find(|d| {
            let back = changes
                .iter()
                .find(|ch| ch.t > d.t && ch.state == Proc::Running)
                .map(|ch| ch.t);
            d.state == Proc::Killed || d.t >= first || back.is_some_and(|b| b - d.t < timeout)
        });
        if let Some(ch) = fall {
            let how = if ch.state == Proc::Paused { "paused" } else { "killed" };
            let others: Vec<NodeId> = named.iter().copied().filter(|&q| q != p).collect();
            return Some(Explanation::inherent(
                term,
                format!(
                    "node {p} was {how} at {}, within two timeouts of term {term} (decided from {} to {}), so it missed \
                     part of it: the others could not know it was back, and the two sides name {}",
                    at(ch.t),
                    at(first),
                    at(last),
                    list(&[vec![p], others].concat())
                ),
            ));
        }
    }
    None
}

/// A claimant that was paused while the term was decided and claimed after waking.
fn resumed(run: &RunDir, timeline: &Timeline, term: u64, c: &Claim, first: u64, g: &Ground) -> Option<Explanation> {
    let at = |t: u64| super::summary::at(g.start_us, t);
    let changes = timeline.changes.get(&c.node)?;
    let (i, pause) = changes
        .iter()
        .enumerate()
        .rfind(|(_, ch)| ch.state == Proc::Paused && ch.t <= c.t)?;
    let woke = changes
        .get(i + 1)
        .filter(|ch| ch.state == Proc::Running && ch.t <= c.t)?;
    if woke.t < first {
        return None;
    }
    let joined = run
        .node_events
        .iter()
        .find(|r| r.node == Some(c.node) && matches!(r.event, Event::ElectionStart { term: t } if t == term))
        .map(|r| r.t);
    let before = joined.is_some_and(|j| j <= pause.t);
    // A pause shorter than the timeout is no stall the node can notice on waking.
    let unnoticed = g.timeout_us.is_some_and(|t| woke.t - pause.t < t);
    let words = format!(
        "node {} was paused from {} to {}, while the term was decided, and claimed it at {} after waking; {}",
        c.node,
        at(pause.t),
        at(woke.t),
        at(c.t),
        if before {
            "it had joined the term before its pause and could not know".to_string()
        } else if unnoticed {
            "its pause was shorter than the timeout, too short for it to notice, so it could not know".to_string()
        } else {
            format!(
                "it joined the term only after waking ({}), when it was already decided: not inherent",
                joined.map(at).unwrap_or_else(|| "never recorded".into())
            )
        }
    );
    Some(Explanation {
        term,
        inherent: before || unnoticed,
        by_design: false,
        words,
    })
}

/// The connected component of every node not `down`.
fn components(graph: &BTreeMap<NodeId, Vec<NodeId>>, down: &[NodeId]) -> BTreeMap<NodeId, usize> {
    let mut comp = BTreeMap::new();
    let mut k = 0;
    for &start in graph.keys().filter(|n| !down.contains(n)) {
        if comp.contains_key(&start) {
            continue;
        }
        let mut todo = vec![start];
        comp.insert(start, k);
        while let Some(a) = todo.pop() {
            for &b in graph.get(&a).into_iter().flatten() {
                if !down.contains(&b) && !comp.contains_key(&b) {
                    comp.insert(b, k);
                    todo.push(b);
                }
            }
        }
        k += 1;
    }
    comp
}

fn list(ns: &[NodeId]) -> String {
    let ids: Vec<String> = ns.iter().map(u64::to_string).collect();
    match ids.as_slice() {
        [one] => format!("node {one}"),
        [init @ .., last] => format!("nodes {} and {last}", init.join(", ")),
        [] => "no node".into(),
    }
}
