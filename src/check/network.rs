//! What the network was doing when: `faults.jsonl` folded through the rules model
//! ([`NetRules::apply_event`]), the one place the checker reads network faults from.
//!
//! It answers "was the link a->b blocked, lossy or delayed at t", "could b hear a at t" (over
//! the run's graph minus the blocked links, so a cut of the only bridge separates nodes that
//! are not its ends), "which groups could talk at t", and "what was the network doing in
//! [t1, t2]" in words. A one-way cut breaks a conversation, so two nodes are in one group only
//! when each can reach the other. An algorithm that forwards in ring order reaches only along
//! the chain of next live successors each node can send to: a cut ring link leaves the node
//! after it outside the others' ring even though a path round the cut exists.

use crate::net::NetRules;
use crate::trace::{Event, NodeId, RunDir};
use std::collections::{BTreeMap, BTreeSet};

mod gaps;
mod words;

pub(crate) use gaps::{side_gaps, SideGap};
pub(crate) use words::group_words;
use words::link_blocked_words;

mod groups;

/// Loss at or above this percentage counts as cutting a node off (a detector that misses most
/// heartbeats suspects a node that runs).
pub(crate) const HEAVY_LOSS_PCT: u32 = 50;

/// One change of the network: from `t` on, `rules` are in force.
#[derive(Debug, Clone)]
pub struct NetStep {
    /// When, microseconds.
    pub t: u64,
    /// The rules in force from then on.
    pub rules: NetRules,
    /// The change in words (`cut the link 2-10 (both ways)`), or a rule that failed.
    pub words: String,
    /// A `net_error`: the rule named could not be applied (the rules did not change).
    pub error: bool,
}

/// The network's timeline over one run.
#[derive(Debug, Clone)]
pub struct Network {
    /// The run's members (the shared resource aside).
    members: Vec<NodeId>,
    /// The same, sorted and without repeats (for counting who is down among them).
    sorted: Vec<NodeId>,
    /// The links messages follow, when they follow a graph (both directions listed); None:
    /// every member may send to every other.
    graph: Option<BTreeMap<NodeId, Vec<NodeId>>>,
    /// The ring, in order, when the algorithm forwards in ring order (empty otherwise): each
    /// node then sends only to its next live successor it can reach, so who can talk is a
    /// matter of that chain, not of the graph.
    ring: Vec<NodeId>,
    /// No rule at first.
    clear: NetRules,
    /// Every change, in time order.
    steps: Vec<NetStep>,
    /// The run's start, for `+ms` in the words.
    start_us: u64,
}

/// Why a link dropped datagrams ([`Network::dropping`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dropping {
    /// `a lossy link`, `a cut link` or `a partition`.
    pub kind: &'static str,
    /// `the link 5->4 lost 28 % of its datagrams from +43312 ms to +45580 ms`, `the link 3-5
    /// was cut from +2412 ms to +4390 ms`.
    pub words: String,
}

/// Why `to` could not hear `from` at some moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CutOff {
    /// When the network began to separate them (the first change of the stretch), microseconds.
    pub since: u64,
    /// In words: `the link 2-10 was cut`, `a partition separated them (1,2 | 3,4)`, `loss 80%
    /// on the link 10->3`.
    pub words: String,
}

impl Network {
    /// The network of `run`, with its graph (`run.json`'s peers; a member with no peers listed
    /// is taken to reach every member).
    pub fn of(run: &RunDir) -> Self {
        let members: Vec<NodeId> = run
            .info
            .nodes
            .iter()
            .map(|n| n.id)
            .filter(|&id| !(crate::catalog::is_mutex(&run.info.algo) && id == crate::algo::mutex::RESOURCE_ID))
            .collect();
        let is_member: BTreeSet<NodeId> = members.iter().copied().collect();
        // Only an algorithm that runs in ring order addresses any member of a ring (repair,
        // votes); Franklin, Echo and Yo-Yo on a ring talk over its edges alone, so that two
        // nodes on one side of a partition may still have no link between them.
        let ring_repairs = !run.info.topology.starts_with("mesh")
            && crate::catalog::find(&run.info.algo).is_some_and(|e| e.runs_on == crate::catalog::Fit::RingOrder);
        let listed: Vec<&crate::trace::RunNode> = run.info.nodes.iter().filter(|n| is_member.contains(&n.id)).collect();
        // On a ring every member is addressed directly (repair, votes): any two may talk, and
        // so may they when no node lists its peers. That graph is kept implicit: thousands of
        // members would make it millions of edges.
        let complete = ring_repairs || listed.iter().all(|n| n.peers.is_empty());
        let mut graph: BTreeMap<NodeId, BTreeSet<NodeId>> = members.iter().map(|&m| (m, BTreeSet::new())).collect();
        for n in listed.iter().filter(|_| !complete) {
            let peers: &[NodeId] = if n.peers.is_empty() { &members } else { &n.peers };
            for &p in peers.iter().filter(|&&p| p != n.id && is_member.contains(&p)) {
                graph.entry(n.id).or_default().insert(p);
                graph.entry(p).or_default().insert(n.id);
            }
        }
        let mut net = Self::build(
            &members,
            graph.into_iter().map(|(k, v)| (k, v.into_iter().collect())).collect(),
            run.faults.iter().map(|r| (r.t, &r.event)),
            run.info.start_us,
        );
        if complete {
            net.graph = None;
        }
        if ring_repairs {
            // The launcher lists a ring's nodes in ring order.
            net.in_ring_order(members)
        } else {
            net
        }
    }

    /// The same network for an algorithm that forwards round `ring` in order, skipping a
    /// successor that is down or that it cannot reach: the groups that can talk are those whose
    /// members' chains of next reachable successors lead to each other.
    pub(crate) fn in_ring_order(mut self, ring: Vec<NodeId>) -> Self {
        self.ring = ring;
        self
    }

    /// The network of `members` talking over `graph`, from the launcher's `events`.
    pub fn build<'a>(
        members: &[NodeId],
        graph: BTreeMap<NodeId, Vec<NodeId>>,
        events: impl Iterator<Item = (u64, &'a Event)>,
        start_us: u64,
    ) -> Self {
        let clear = NetRules::new(members);
        let mut rules = clear.clone();
        let mut steps = Vec::new();
        let mut events: Vec<(u64, &Event)> = events.collect();
        events.sort_by_key(|e| e.0);
        for (t, ev) in events {
            if let Event::NetError { what, .. } = ev {
                steps.push(NetStep {
                    t,
                    rules: rules.clone(),
                    words: format!("a rule could not be applied: {what}"),
                    error: true,
                });
                continue;
            }
            if rules.apply_event(ev) {
                let words = crate::net::NetAction::from_event(ev)
                    .map(|a| a.describe())
                    .unwrap_or_else(|| ev.kind().to_string());
                steps.push(NetStep {
                    t,
                    rules: rules.clone(),
                    words,
                    error: false,
                });
            }
        }
        let mut sorted = members.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        Network {
            members: members.to_vec(),
            sorted,
            graph: Some(graph),
            ring: Vec::new(),
            clear,
            steps,
            start_us,
        }
    }

    /// Every change, in time order.
    pub fn steps(&self) -> &[NetStep] {
        &self.steps
    }

    /// The rules in force at `t` (a change at `t` is in force at `t`).
    pub(crate) fn rules_at(&self, t: u64) -> &NetRules {
        let i = self.steps.partition_point(|s| s.t <= t);
        if i == 0 {
            &self.clear
        } else {
            &self.steps[i - 1].rules
        }
    }

    /// When the rules in force at `t` came into force (None: none ever changed by then).
    fn since(&self, t: u64) -> Option<u64> {
        let i = self.steps.partition_point(|s| s.t <= t);
        (i > 0).then(|| self.steps[i - 1].t)
    }

    #[cfg(test)]
    /// Whether every datagram from `from` to `to` was dropped at `t`.
    pub(crate) fn blocked(&self, from: NodeId, to: NodeId, t: u64) -> bool {
        self.rules_at(t).blocked(from, to)
    }

    /// The stretch around `t` during which datagrams from `from` to `to` were lost at the
    /// rate in force at `t` (µs; `to` is None while it lasts to the end), if any were lost.
    pub(crate) fn loss_span(&self, from: NodeId, to: NodeId, t: u64) -> Option<(u32, u64, Option<u64>)> {
        let pct = self.loss(from, to, t);
        if pct == 0 {
            return None;
        }
        let (start, end) = self.stretch(t, |r| r.loss(from, to) == pct);
        Some((pct, start, end))
    }

    /// The stretch of changes around `t` whose rules all `hold` (the rules at `t` do): when it
    /// began (0: from the start) and when it ended (None: it lasts to the end), µs.
    fn stretch(&self, t: u64, hold: impl Fn(&NetRules) -> bool) -> (u64, Option<u64>) {
        let i = self.steps.partition_point(|s| s.t <= t);
        let mut j = i;
        while j > 1 && hold(&self.steps[j - 2].rules) {
            j -= 1;
        }
        let start = self.steps.get(j.wrapping_sub(1)).map_or(0, |s| s.t);
        let end = self.steps[i..].iter().find(|s| !hold(&s.rules)).map(|s| s.t);
        (start, end)
    }

    /// Why datagrams from `from` to `to` were dropped at `t`, if any were: the link lossy or
    /// blocked (cut, or across a partition), over the stretch around `t` it stayed so.
    pub(crate) fn dropping(&self, from: NodeId, to: NodeId, t: u64) -> Option<Dropping> {
        let at = |t: u64| super::summary::at(self.start_us, t);
        let span = |(start, end): (u64, Option<u64>)| {
            let until = end
                .map(|e| format!("to {}", at(e)))
                .unwrap_or_else(|| "to the end".into());
            format!("from {} {until}", at(start))
        };
        if let Some((pct, start, end)) = self.loss_span(from, to, t) {
            return Some(Dropping {
                kind: "a lossy link",
                words: format!(
                    "the link {from}->{to} lost {pct} % of its datagrams {}",
                    span((start, end))
                ),
            });
        }
        let rules = self.rules_at(t);
        if !rules.blocked(from, to) {
            return None;
        }
        let cut = rules.cuts().any(|c| c == (from, to));
        Some(Dropping {
            kind: if cut { "a cut link" } else { "a partition" },
            words: format!(
                "{} {}",
                link_blocked_words(rules, from, to),
                span(self.stretch(t, |r| r.blocked(from, to)))
            ),
        })
    }

    /// The percentage of datagrams from `from` to `to` lost at `t`.
    pub fn loss(&self, from: NodeId, to: NodeId, t: u64) -> u32 {
        self.rules_at(t).loss(from, to)
    }

    /// The hold time from `from` to `to` at `t`: (ms, jitter ms).
    pub fn delay(&self, from: NodeId, to: NodeId, t: u64) -> (u64, u64) {
        self.rules_at(t).delay(from, to)
    }

    /// Why `to` could not hear `from` at `t`, if the network is why: the direct link blocked
    /// or heavily lossy, or every path over the graph crossing such a link.
    pub(crate) fn cut_off(&self, from: NodeId, to: NodeId, t: u64) -> Option<CutOff> {
        let rules = self.rules_at(t);
        let since = self.since(t)?;
        if rules.is_clear() {
            return None;
        }
        let words = if rules.blocked(from, to) {
            Some(link_blocked_words(rules, from, to))
        } else if rules.loss(from, to) >= HEAVY_LOSS_PCT {
            Some(format!(
                "{}% of the datagrams on the link {from}->{to} were lost",
                rules.loss(from, to)
            ))
        } else if !self.reach(rules, from, &[], true).contains(&to) {
            // Name the links on the border of what `from` still reaches.
            let near = self.reach(rules, from, &[], true);
            let mut border: Vec<String> = Vec::new();
            for &a in &near {
                for &b in self.neighbours(a).iter().filter(|b| !near.contains(b)) {
                    border.push(link_blocked_words(rules, a, b));
                }
            }
            border.sort();
            border.dedup();
            Some(format!(
                "{} (every path from node {from} to node {to} crossed {})",
                border.join("; "),
                if border.len() == 1 { "it" } else { "one of them" }
            ))
        } else {
            None
        };
        words.map(|words| CutOff { since, words })
    }

    /// Why `to` could not hear `from` at some moment of [`t1`, `t2`], if the network is why:
    /// the latest such stretch.
    pub(crate) fn cut_off_during(&self, from: NodeId, to: NodeId, t1: u64, t2: u64) -> Option<CutOff> {
        if let Some(c) = self.cut_off(from, to, t2) {
            return Some(c);
        }
        self.steps
            .iter()
            .rev()
            .filter(|s| s.t > t1 && s.t <= t2)
            .find_map(|s| self.cut_off(from, to, s.t - 1))
            .or_else(|| self.cut_off(from, to, t1))
    }

    /// Like [`Network::heard_again`], but for any rule on the link `from`->`to` (loss or delay,
    /// however light, beside what cuts it off): when the link was last left alone again. A
    /// suspicion's healing is only owed a bound once it is, since under loss a node's
    /// heartbeats may go missing for longer than any timeout.
    /// Either direction counts: a suspicion heals through a PROBE and its ALIVE, so a one-way
    /// cut from `to` to `from` keeps it as surely as one from `from` to `to`.
    pub(crate) fn undisturbed_again(&self, from: NodeId, to: NodeId, t1: u64, t2: u64) -> Option<u64> {
        self.again(t1, t2, |t| {
            let rules = self.rules_at(t);
            let one = |a: NodeId, b: NodeId| {
                self.cut_off(a, b, t).is_some() || rules.loss(a, b) > 0 || rules.delay(a, b) != (0, 0)
            };
            one(from, to) || one(to, from)
        })
    }

    /// When `bad` last stopped holding within [`t1`, `t2`] (`Some(u64::MAX)`: it holds at `t2`;
    /// None: it never held).
    fn again(&self, t1: u64, t2: u64, bad: impl Fn(u64) -> bool) -> Option<u64> {
        if bad(t2) {
            return Some(u64::MAX);
        }
        let mut last = None;
        let mut was = bad(t1);
        for s in self.steps.iter().filter(|s| s.t > t1 && s.t <= t2) {
            let now = bad(s.t);
            if was && !now {
                last = Some(s.t);
            }
            was = now;
        }
        last
    }

    /// What the network was doing in [`t1`, `t2`], in one line; None when it was clear all
    /// along (no rule in force, no change).
    pub fn during(&self, t1: u64, t2: u64) -> Option<String> {
        let at = |t: u64| super::summary::at(self.start_us, t);
        let first = self.rules_at(t1);
        let changes: Vec<&NetStep> = self.steps.iter().filter(|s| s.t > t1 && s.t <= t2).collect();
        if first.is_clear() && changes.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        if !first.is_clear() {
            let from = self.since(t1).map(at).unwrap_or_default();
            parts.push(format!("in force since {from}: {}", first.describe().join("; ")));
        }
        for s in changes.iter().take(4) {
            parts.push(format!("{} at {}", s.words, at(s.t)));
        }
        if changes.len() > 4 {
            parts.push(format!("and {} more changes", changes.len() - 4));
        }
        Some(parts.join("; "))
    }
}
