//! The console's running story, in the demos' words: who suspected whom after how much
//! silence and whether that was true (the launcher knows: it paused or killed the target, or
//! not), election starts, self-declared leaders with how long their election took,
//! step-downs, and two leaders of one term the moment they are seen.
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
pub struct Narrator {
    /// `resource.jsonl`, followed once the run directory is known.
    resource: Option<Tail>,
    /// Per node: suspicions, step-downs and election starts told.
    told: BTreeMap<u64, (usize, usize, usize)>,
    /// Per term: its first election start (trace time, node).
    started: BTreeMap<u64, (u64, u64)>,
    /// Terms whose start was told.
    start_told: BTreeSet<u64>,
    /// Per term: the nodes that declared themselves its leader.
    claimed: BTreeMap<u64, BTreeSet<u64>>,
    /// Leadership spans of the replay told so far.
    spans_told: usize,
}

/// `+5127 ms since start; the election took 212 ms`: when agreement `a` formed, and how long
/// the election took, from its term's first election start to the leader's own claim (left out
/// when no node recorded a start). Not to the agreement: a node that rejoins later (resumed,
/// restarted) forms a new agreement in the same term, and the election did not take longer.
pub fn agreement_times(fleet: &Fleet, a: &Agreement) -> String {
    let since = format!("{} since start", fleet.rel(a.at_us));
    let first = fleet
        .elections_after(a.term.saturating_sub(1), 0)
        .into_iter()
        .find(|&(_, _, term)| term == a.term);
    match first {
        Some((t, _, _)) => format!(
            "{since}; the election took {} ms",
            a.leader_since_us.saturating_sub(t) / 1000
        ),
        None => since,
    }
}

/// `node 8 was paused, not dead: a false suspicion`, from the target's process now.
fn truth(target: Option<&Node>) -> String {
    match target.map(|n| &n.state) {
        Some(State::Paused) => "it is paused, not dead: a false suspicion".into(),
        Some(State::Running) => "it is running: a false suspicion".into(),
        Some(State::Killed) | Some(State::Exited(_)) => "it is dead: a true suspicion".into(),
        None => "it is not a member".into(),
    }
}

impl Narrator {
    /// What happened since the last call, in time order, each line starting `+N ms`.
    pub fn news(&mut self, fleet: &Fleet) -> Vec<String> {
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
                    truth(by_id.get(&s.target).copied())
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
                let first = self.started.entry(term).or_insert((t, id));
                if t < first.0 {
                    *first = (t, id);
                }
            }
            *told = (n.suspicions.len(), n.step_downs.len(), n.elections.len());
        }
        // Election starts, once per term, after every node's news is in (the earliest wins).
        for (&term, &(t, by)) in &self.started {
            if self.start_told.insert(term) {
                out.push((t, format!("node {by} starts an election: term {term}")));
            }
        }
        // Self-declared leaders, from the checker's replay of beliefs the fleet keeps.
        let spans = &fleet.beliefs.spans;
        for span in spans.get(self.spans_told..).unwrap_or_default() {
            let claims = self.claimed.entry(span.term).or_default();
            if !claims.insert(span.node) {
                continue;
            }
            let took = match self.started.get(&span.term) {
                Some(&(t, _)) => format!("; the election took {} ms", span.from.saturating_sub(t) / 1000),
                None => String::new(),
            };
            let line = format!("node {} declared itself leader of term {}{took}", span.node, span.term);
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
                    format!("VIOLATION: {} in the critical section at once", who.join(" and "))
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
