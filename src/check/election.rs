//! The election properties: uniqueness within a term, agreement and termination at the end,
//! leadership overlap in true time, and a per-term account of each election.

use super::beliefs::{Belief, Beliefs, LeadSpan, Learned};
use super::timeline::{Proc, Timeline};
use crate::trace::NodeId;
use std::collections::{BTreeMap, BTreeSet};

/// A node declaring itself leader of a term (its `leader` event naming itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The node.
    pub node: NodeId,
    /// When it first did so in that term, microseconds.
    pub t: u64,
}

/// A property the election algorithm promises, broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// Two or more nodes declared themselves leader of the same term.
    Uniqueness {
        /// The term.
        term: u64,
        /// Each self-declared leader, with its first claim.
        claims: Vec<Claim>,
    },
    /// Nodes live at the end believed different leaders (or terms).
    Agreement {
        /// Each belief held at the end, with the live nodes holding it.
        groups: BTreeMap<Belief, Vec<NodeId>>,
    },
    /// Nodes live at the end had learned no leader.
    Termination {
        /// Those nodes.
        without: Vec<NodeId>,
    },
}

/// A stretch of true time during which two or more nodes each believed they led.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// From, microseconds.
    pub from: u64,
    /// To, microseconds.
    pub to: u64,
    /// Who believed they led, and which term: `(node, term)`, sorted.
    pub holders: Vec<(NodeId, u64)>,
}

impl Overlap {
    /// Its length in microseconds.
    pub fn us(&self) -> u64 {
        self.to - self.from
    }

    /// Whether two of its holders claimed the same term.
    pub fn within_one_term(&self) -> bool {
        let terms: BTreeSet<u64> = self.holders.iter().map(|h| h.1).collect();
        terms.len() < self.holders.len()
    }
}

/// One term's election, as the traces tell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermSummary {
    /// The term.
    pub term: u64,
    /// The first node to record `election_start` for it, and when.
    pub first_start: Option<(NodeId, u64)>,
    /// Every node that recorded `election_start` for it.
    pub took_part: Vec<NodeId>,
    /// The nodes that declared themselves its leader.
    pub winners: Vec<Claim>,
    /// When the term got a leader: its first `leader` event (None: it never did).
    pub decided_at: Option<u64>,
    /// Each node's first `leader` event of this term.
    pub learned: BTreeMap<NodeId, u64>,
    /// The nodes running when the term was decided: those expected to learn it.
    pub expected: Vec<NodeId>,
}

impl TermSummary {
    /// Expected nodes that never learned this term's leader (killed, or moved on to a newer term).
    pub fn missing(&self) -> Vec<NodeId> {
        self.expected
            .iter()
            .copied()
            .filter(|n| !self.learned.contains_key(n))
            .collect()
    }

    /// When the last expected node learned the leader (the election was over for all of them).
    pub fn last_learned(&self) -> Option<u64> {
        self.expected.iter().filter_map(|n| self.learned.get(n)).max().copied()
    }

    /// From the first `election_start` to the last expected node learning the leader, when
    /// every expected node learned it.
    pub fn election_us(&self) -> Option<u64> {
        let (_, start) = self.first_start?;
        let last = self.last_learned()?;
        self.missing().is_empty().then(|| last.saturating_sub(start))
    }

    /// Nodes that learned it though they were not running when it was decided (paused then).
    pub fn late(&self) -> Vec<(NodeId, u64)> {
        self.learned
            .iter()
            .filter(|(n, _)| !self.expected.contains(n))
            .map(|(&n, &t)| (n, t))
            .collect()
    }
}

/// Everything the checker concluded about elections in a run.
#[derive(Debug, Clone)]
pub struct ElectionFacts {
    /// The nodes running at the end (not paused, not dead): the ones termination and agreement are about.
    pub live_at_end: Vec<NodeId>,
    /// What every node believed at the end.
    pub at_end: BTreeMap<NodeId, Option<Belief>>,
    /// Per term, the self-declared leaders.
    pub claims: BTreeMap<u64, Vec<Claim>>,
    /// Per term, its election.
    pub terms: Vec<TermSummary>,
    /// Every interval during which a node believed it led.
    pub spans: Vec<LeadSpan>,
    /// The stretches during which two or more nodes believed they led.
    pub overlaps: Vec<Overlap>,
    /// Total time two or more nodes believed they led (any terms), microseconds.
    pub overlap_us: u64,
    /// Total time two or more nodes believed they led the same term, microseconds.
    pub same_term_overlap_us: u64,
    /// The properties violated.
    pub violations: Vec<Violation>,
}

impl ElectionFacts {
    /// Judges the replayed beliefs against the process timeline.
    pub fn judge(beliefs: &Beliefs, timeline: &Timeline) -> Self {
        let live_at_end = timeline.live_nodes_at_end();
        let claims = claims(&beliefs.learned);
        let overlaps = overlaps(&beliefs.spans);
        let overlap_us = overlaps.iter().map(Overlap::us).sum();
        let same_term_overlap_us = overlaps.iter().filter(|o| o.within_one_term()).map(Overlap::us).sum();
        let mut violations: Vec<Violation> = claims
            .iter()
            .filter(|(_, c)| c.len() > 1)
            .map(|(&term, c)| Violation::Uniqueness {
                term,
                claims: c.clone(),
            })
            .collect();
        let mut groups: BTreeMap<Belief, Vec<NodeId>> = BTreeMap::new();
        let mut without = Vec::new();
        for &n in &live_at_end {
            match beliefs.at_end.get(&n).copied().flatten() {
                Some(b) => groups.entry(b).or_default().push(n),
                None => without.push(n),
            }
        }
        if groups.len() > 1 {
            violations.push(Violation::Agreement { groups });
        }
        if !without.is_empty() {
            violations.push(Violation::Termination { without });
        }
        ElectionFacts {
            terms: terms(beliefs, timeline, &claims),
            live_at_end,
            at_end: beliefs.at_end.clone(),
            claims,
            spans: beliefs.spans.clone(),
            overlaps,
            overlap_us,
            same_term_overlap_us,
            violations,
        }
    }

    /// The one belief every live node held at the end, when they agreed and all had one.
    pub fn agreed(&self) -> Option<Belief> {
        let mut beliefs = self.live_at_end.iter().map(|n| self.at_end.get(n).copied().flatten());
        let first = beliefs.next()??;
        beliefs.all(|b| b == Some(first)).then_some(first)
    }
}

/// Per term, each node that declared itself leader, with its first claim.
fn claims(learned: &[Learned]) -> BTreeMap<u64, Vec<Claim>> {
    let mut out: BTreeMap<u64, Vec<Claim>> = BTreeMap::new();
    for l in learned.iter().filter(|l| l.belief.leader == l.node) {
        let list = out.entry(l.belief.term).or_default();
        if !list.iter().any(|c| c.node == l.node) {
            list.push(Claim { node: l.node, t: l.t });
        }
    }
    out
}

/// Sweeps the leadership intervals for the stretches covered by two or more of them.
fn overlaps(spans: &[LeadSpan]) -> Vec<Overlap> {
    let points: BTreeSet<u64> = spans.iter().flat_map(|s| [s.from, s.to]).collect();
    let points: Vec<u64> = points.into_iter().collect();
    let mut out: Vec<Overlap> = Vec::new();
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let mut holders: Vec<(NodeId, u64)> = spans
            .iter()
            .filter(|s| s.from <= a && s.to >= b)
            .map(|s| (s.node, s.term))
            .collect();
        if holders.len() < 2 {
            continue;
        }
        holders.sort();
        match out.last_mut() {
            Some(o) if o.to == a && o.holders == holders => o.to = b,
            _ => out.push(Overlap {
                from: a,
                to: b,
                holders,
            }),
        }
    }
    out
}

/// The account of every term that had an `election_start` or a `leader` event.
fn terms(beliefs: &Beliefs, timeline: &Timeline, claims: &BTreeMap<u64, Vec<Claim>>) -> Vec<TermSummary> {
    let mut out: BTreeMap<u64, TermSummary> = BTreeMap::new();
    let blank = |term| TermSummary {
        term,
        first_start: None,
        took_part: Vec::new(),
        winners: Vec::new(),
        decided_at: None,
        learned: BTreeMap::new(),
        expected: Vec::new(),
    };
    for s in &beliefs.started {
        let ts = out.entry(s.term).or_insert_with(|| blank(s.term));
        ts.first_start.get_or_insert((s.node, s.t));
        if !ts.took_part.contains(&s.node) {
            ts.took_part.push(s.node);
        }
    }
    for l in &beliefs.learned {
        let ts = out.entry(l.belief.term).or_insert_with(|| blank(l.belief.term));
        ts.decided_at.get_or_insert(l.t);
        ts.learned.entry(l.node).or_insert(l.t);
    }
    for ts in out.values_mut() {
        ts.winners = claims.get(&ts.term).cloned().unwrap_or_default();
        if let Some(at) = ts.decided_at {
            ts.expected = timeline
                .nodes()
                .filter(|&n| timeline.state_at(n, at).0 == Proc::Running)
                .collect();
        }
    }
    out.into_values().collect()
}
