//! The console's running story, in the demos' words: who suspected whom after how much
//! silence and whether that was true (the launcher knows: it paused or killed the target, or
//! not), election starts, self-declared leaders, step-downs, and two leaders of one term the moment they are seen.
//!
//! It reads the launcher's model of each node ([`Node`]) and its replay of beliefs, after each
//! tick's refresh, and
//! remembers how much of each node's history it has told already; and it follows
//! `resource.jsonl`, where a shared resource reports two holders at once.

use super::model::{Node, State};
use super::nodes::{Agreement, Fleet};
use super::watch::Tail;
use crate::trace::Event;
use std::collections::{BTreeMap, BTreeSet};

/// What has been told so far.
#[derive(Default)]
pub(crate) struct Narrator {
    /// `resource.jsonl`, followed once the run directory is known.
    resource: Option<Tail>,
    /// Per node: suspicions, step-downs and election starts told.
    told: BTreeMap<u64, (usize, usize, usize)>,
    /// Per term: every node that started its election, with when it first did (a term's start
    /// is told one tick after it is first seen, so that nodes starting together are told
    /// together).
    starters: BTreeMap<u64, BTreeMap<u64, u64>>,
    /// Terms whose start was told, with the starters named so far.
    start_told: BTreeMap<u64, BTreeSet<u64>>,
    /// Terms seen starting at an earlier tick (ready to be told).
    start_seen: BTreeSet<u64>,
    /// Per term: the nodes that declared themselves its leader.
    claimed: BTreeMap<u64, BTreeSet<u64>>,
    /// Leadership spans of the replay told so far.
    spans_told: usize,
}

/// How long an election took, the one definition every line of the launcher and the checker
/// uses: from its term's first `election_start` to the moment every live node followed its
/// leader (the agreement).
pub(crate) const ELECTION_TIME: &str = "from the term's first election start to the agreement of every live node";

/// `+5127 ms since start; elected in 212 ms`: when agreement `a` formed, and (`first`: the
/// first agreement of its term) how long the election took ([`ELECTION_TIME`]). A node that
/// rejoins later (resumed, restarted) forms a new agreement in the same term: that one says
/// when, not a longer election.
pub(crate) fn agreement_times(fleet: &Fleet, a: &Agreement, first: bool) -> String {
    let since = format!("{} since start", fleet.rel(a.at_us));
    let start = fleet
        .elections_after(a.term.saturating_sub(1), 0)
        .into_iter()
        .find(|&(_, _, term)| term == a.term);
    match start {
        Some((t, _, _)) if first => format!("{since}; elected in {} ms", a.at_us.saturating_sub(t) / 1000),
        _ => since,
    }
}

/// `node 8 starts an election: term 1`, `all 8 nodes start an election: term 1`, `nodes 2, 5
/// start an election: term 3`, or (`also`) `node 4 also starts an election: term 3`.
fn starts_line(who: impl Iterator<Item = u64>, members: usize, term: u64, also: bool) -> String {
    let who: Vec<u64> = who.collect();
    let first_line = !also;
    let also = if also { " also" } else { "" };
    match who.as_slice() {
        [one] => format!("node {one}{also} starts an election: term {term}"),
        _ if first_line && who.len() == members && members > 2 => {
            format!("all {members} nodes start an election: term {term}")
        }
        many => format!("nodes {}{also} start an election: term {term}", some_ids(many)),
    }
}

/// The most ids a console line names; a longer list is cut, with how many there are in all, so
/// that thousands of nodes starting at once stay one readable line.
const IDS_IN_A_LINE: usize = 10;

/// `2, 5, 7`, or `1, 2, ..., 10 and 2990 more (3000 in all)`.
fn some_ids(ids: &[u64]) -> String {
    let shown: Vec<String> = ids.iter().take(IDS_IN_A_LINE).map(u64::to_string).collect();
    if ids.len() <= IDS_IN_A_LINE {
        return shown.join(", ");
    }
    format!(
        "{} and {} more ({} in all)",
        shown.join(", "),
        ids.len() - IDS_IN_A_LINE,
        ids.len()
    )
}

#[cfg(test)]
#[test]
fn thousands_of_starters_make_one_short_line() {
    let ids: Vec<u64> = (1..=3000).collect();
    let line = starts_line(ids.iter().copied(), 16384, 1, true);
    assert_eq!(
        line,
        "nodes 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2990 more (3000 in all) also start an election: term 1"
    );
    assert_eq!(
        starts_line([2, 5].into_iter(), 8, 3, false),
        "nodes 2, 5 start an election: term 3"
    );
}

/// Whether `from`'s datagrams can reach `to` along the launch's graph under the rules `net`.
fn reaches(by_id: &BTreeMap<u64, &Node>, net: &crate::net::NetRules, from: u64, to: u64) -> bool {
    let mut seen = std::collections::BTreeSet::from([from]);
    let mut todo = vec![from];
    while let Some(a) = todo.pop() {
        if a == to {
            return true;
        }
        for &b in by_id.get(&a).map_or(&[][..], |n| &n.plan.neighbours[..]) {
            if !net.blocked(a, b) && seen.insert(b) {
                todo.push(b);
            }
        }
    }
    false
}

/// `node 8 was paused, not dead: a false suspicion`, from the target's process now and whether
/// the network rules in force let it reach the suspecter `by`.
fn truth(by_id: &BTreeMap<u64, &Node>, target: u64, by: u64, net: &crate::net::NetRules) -> String {
    match by_id.get(&target).map(|n| &n.state) {
        Some(State::Paused) => "it is paused, not dead: a false suspicion".into(),
        Some(State::Running) if !net.is_clear() && !reaches(by_id, net, target, by) => {
            "it is running, but the network cuts it off from this node: cut off, not dead".into()
        }
        Some(State::Running) => "it is running: a false suspicion".into(),
        Some(State::Killed) | Some(State::Exited(_)) => "it is dead: a true suspicion".into(),
        None => "it is not a member".into(),
    }
}

impl Narrator {
    /// What happened since the last call, in time order, each line starting `+N ms`.
    pub(crate) fn news(&mut self, fleet: &Fleet) -> Vec<String> {
        let mut out: Vec<(u64, String)> = Vec::new();
        let by_id: BTreeMap<u64, &Node> = fleet.nodes.iter().map(|n| (n.plan.id, n)).collect();
        for n in &fleet.nodes {
            let id = n.plan.id;
            let told = self.told.entry(id).or_default();
            // A restarted node's model starts afresh: so does what was told of it.
            if n.suspicions.len() < told.0 || n.step_downs.len() < told.1 || n.elections.len() < told.2 {
                *told = (0, 0, 0);
            }
            for s in &n.suspicions[told.0..] {
                let line = format!(
                    "node {id} suspected node {} after {} ms of silence; {}",
                    s.target,
                    s.silence_ms,
                    truth(&by_id, s.target, id, &fleet.net_rules)
                );
                out.push((s.t, line));
            }
            for d in &n.step_downs[told.1..] {
                out.push((
                    d.t,
                    format!("node {id} stepped down as leader of term {}: {}", d.term, d.reason),
                ));
            }
            for &(t, term) in &n.elections[told.2..] {
                let first = self.starters.entry(term).or_default().entry(id).or_insert(t);
                *first = (*first).min(t);
            }
            *told = (n.suspicions.len(), n.step_downs.len(), n.elections.len());
        }
        // Election starts, once per term, naming every node that started it by then; a node
        // that starts the same term later is told on its own line.
        let members = fleet.nodes.len();
        // A term whose leader is told now has its start told now too, before it.
        let claimed_now: BTreeSet<u64> = fleet
            .beliefs
            .spans
            .get(self.spans_told..)
            .unwrap_or_default()
            .iter()
            .map(|s| s.term)
            .collect();
        // A term is told once seen at an earlier tick, or at once if its leader is told now; and
        // a lower term not told yet goes with it, so that the lines keep the terms' order.
        let told_up_to = self
            .starters
            .keys()
            .filter(|t| !self.start_told.contains_key(t) && (claimed_now.contains(t) || self.start_seen.contains(t)))
            .max()
            .copied();
        // Each line names the starters not told yet, at the earliest of their starts: a node
        // that starts the term a second later is told then, not at the term's first start.
        for (&term, who) in &self.starters {
            let told = self.start_told.get(&term);
            if told.is_none() && told_up_to.is_none_or(|m| term > m) {
                self.start_seen.insert(term);
                continue;
            }
            let new: Vec<u64> = who
                .keys()
                .filter(|id| told.is_none_or(|s| !s.contains(id)))
                .copied()
                .collect();
            let Some(t) = new.iter().filter_map(|id| who.get(id)).min().copied() else {
                continue;
            };
            out.push((t, starts_line(new.into_iter(), members, term, told.is_some())));
            self.start_told.insert(term, who.keys().copied().collect());
        }
        // Self-declared leaders, from the checker's replay of beliefs the fleet keeps.
        let spans = &fleet.beliefs.spans;
        for span in spans.get(self.spans_told..).unwrap_or_default() {
            let claims = self.claimed.entry(span.term).or_default();
            if !claims.insert(span.node) {
                continue;
            }
            // How long the election took is told with the agreement (see `ELECTION_TIME`).
            let line = format!("node {} declared itself leader of term {}", span.node, span.term);
            out.push((span.from, line));
            if claims.len() > 1 {
                let who: Vec<String> = claims.iter().map(|c| format!("node {c}")).collect();
                out.push((
                    span.from,
                    format!(
                        "VIOLATION: {} each declared themselves leader of term {}",
                        who.join(" and "),
                        span.term
                    ),
                ));
            }
        }
        self.spans_told = spans.len();
        let tail = self
            .resource
            .get_or_insert_with(|| Tail::new(fleet.dir.join("resource.jsonl")));
        let new = tail.read_new().unwrap_or_default();
        for r in &tail.records()[new] {
            let line = match &r.event {
                Event::Violation { nodes, .. } => {
                    let who: Vec<String> = nodes.iter().map(|n| format!("node {n}")).collect();
                    // A holder killed after its latest entry holds nothing, even when the
                    // resource (paused, say) reads its BEGIN after the death: as the checker
                    // judges. Restarted since, its new process may have entered: the latest
                    // entry counts only once its trace has been read past the record.
                    let dead: Vec<String> = nodes
                        .iter()
                        .filter_map(|n| by_id.get(n))
                        .filter_map(|x| {
                            let d = x.died_at.filter(|&d| d >= x.cs.entered_at && d <= r.t)?;
                            let back = x.restarted_at.is_some_and(|s| s > d && s <= r.t);
                            if back && x.last.is_none_or(|(_, seen)| seen < r.t) {
                                return None;
                            }
                            Some(format!(
                                "node {} died at {} inside the section",
                                x.plan.id,
                                fleet.rel(d)
                            ))
                        })
                        .collect();
                    if nodes.len() - dead.len() < 2 {
                        format!(
                            "the resource counts {} in the critical section at once, but {}: a killed holder is not a holder",
                            who.join(" and "),
                            dead.join(", ")
                        )
                    } else {
                        format!("VIOLATION: {} in the critical section at once", who.join(" and "))
                    }
                }
                Event::RejectStale { by, token, highest } => {
                    format!("the resource refused node {by}'s stale token {token} (it has seen {highest})")
                }
                _ => continue,
            };
            out.push((r.t, line));
        }
        out.sort_by_key(|(t, _)| *t);
        out.into_iter()
            .map(|(t, line)| format!("{} {line}", fleet.rel(t)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::plan::NodePlan;
    use crate::net::NetAction;

    fn node(id: u64, neighbours: &[u64], state: State) -> Node {
        let plan = NodePlan {
            id,
            addr: "127.0.0.1:1".parse().unwrap(),
            neighbours: neighbours.to_vec(),
            initiator: false,
        };
        Node::new(plan, state, std::path::PathBuf::from("/nonexistent"))
    }

    #[test]
    fn a_running_node_the_network_cuts_off_is_narrated_as_cut_off_not_as_slow() {
        // A path 1 - 2 - 3, and 4 paused.
        let nodes = [
            node(1, &[2], State::Running),
            node(2, &[1, 3], State::Running),
            node(3, &[2], State::Running),
            node(4, &[3], State::Paused),
        ];
        let by_id: BTreeMap<u64, &Node> = nodes.iter().map(|n| (n.plan.id, n)).collect();
        let mut net = crate::net::NetRules::default();
        assert_eq!(truth(&by_id, 3, 1, &net), "it is running: a false suspicion");
        // Cutting 2-3 cuts 3 off from 1 too, which has no direct link to it.
        net.apply(&NetAction::Cut {
            a: 2,
            b: 3,
            one_way: false,
        });
        assert!(truth(&by_id, 3, 1, &net).contains("cut off, not dead"));
        assert_eq!(truth(&by_id, 2, 1, &net), "it is running: a false suspicion");
        assert_eq!(truth(&by_id, 4, 1, &net), "it is paused, not dead: a false suspicion");
    }
}
