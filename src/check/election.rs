//! The election properties: uniqueness within a term, agreement and termination at the end,
//! leadership overlap in true time, and a per-term account of each election.

use super::beliefs::{Belief, Beliefs, LeadSpan, Learned};
use super::explain::Explanation;
use super::section::{Finding, Section};
use super::storms::{Leaderless, Storms};
use super::sweeps::{DownSweep, PartitionSweep};
use super::timeline::{Proc, Timeline};
use super::Analysis;
use crate::trace::{NodeId, RunDir};
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
    /// Nodes believed different leaders of the same term (at most one of them declared itself).
    TermAgreement {
        /// The term.
        term: u64,
        /// Each leader believed in that term, with the nodes that believed it.
        groups: BTreeMap<NodeId, Vec<NodeId>>,
    },
    /// A term no run of this lab reaches by elections (at least [`ABSURD_TERM`]): forged or wrapped.
    AbsurdTerm {
        /// The term.
        term: u64,
        /// The first node that recorded it.
        node: NodeId,
        /// When, microseconds.
        t: u64,
    },
}

/// The smallest term the checker calls absurd: 2^32 elections would take years at one per
/// millisecond, so such a term was forged or its arithmetic wrapped.
pub(crate) const ABSURD_TERM: u64 = 1 << 32;

impl Violation {
    /// The term it is about, when it is about one term.
    pub fn term(&self) -> Option<u64> {
        match self {
            Violation::Uniqueness { term, .. }
            | Violation::TermAgreement { term, .. }
            | Violation::AbsurdTerm { term, .. } => Some(*term),
            _ => None,
        }
    }
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
    pub(crate) fn within_one_term(&self) -> bool {
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
    pub(crate) fn last_learned(&self) -> Option<u64> {
        self.expected.iter().filter_map(|n| self.learned.get(n)).max().copied()
    }

    /// From the first `election_start` to the last expected node learning the leader, when
    /// every expected node learned it.
    pub(crate) fn election_us(&self) -> Option<u64> {
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
    /// Nodes whose trace is missing: no verdict about them is given.
    pub unjudged: Vec<NodeId>,
    /// Whether termination and agreement at the end were judged (they need faults.jsonl).
    pub judged_end: bool,
    /// What the ground truth says of each two-leaders violation (uniqueness, agreement within a term).
    pub explanations: Vec<Explanation>,
    /// Each term's protocol traffic, and the storms.
    pub storms: Storms,
    /// The stretches during which no running node believed it led.
    pub leaderless: Vec<Leaderless>,
    /// Why termination and agreement at the end are not held against the run: the last fault
    /// came too shortly before the end for an election to finish (None: they are judged).
    pub end_explanation: Option<Explanation>,
    /// Progress: the longest piece of a leaderless stretch during which a connected majority
    /// of the nodes was running and no link was cut, and the bound it is judged against (µs).
    pub majority_leaderless: Option<(Leaderless, u64)>,
    /// Whether no progress was owed under loss (an algorithm whose round a lost message
    /// stalls: the registry's `loss_stalls_rounds`).
    pub(crate) owed_only_without_loss: bool,
}

/// Progress bound of an election in failure-detector timeouts: a majority running for this
/// long with no leader is a liveness violation (6 s at the default 300 ms timeout).
pub(crate) const LEADERLESS_TIMEOUTS: u64 = 20;

impl ElectionFacts {
    /// Judges, leaving out the nodes `unjudged` (their traces are missing) and, unless
    /// `judge_end`, termination and agreement at the end (no ground truth of who was running).
    pub(crate) fn judge_with(beliefs: &Beliefs, timeline: &Timeline, unjudged: &[NodeId], judge_end: bool) -> Self {
        let live_at_end: Vec<NodeId> = timeline
            .live_nodes_at_end()
            .into_iter()
            .filter(|n| !unjudged.contains(n))
            .collect();
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
        violations.extend(term_agreement(&beliefs.learned, &claims));
        if let Some(l) = beliefs.learned.iter().find(|l| l.belief.term >= ABSURD_TERM) {
            violations.push(Violation::AbsurdTerm {
                term: l.belief.term,
                node: l.node,
                t: l.t,
            });
        } else if let Some(s) = beliefs.started.iter().find(|s| s.term >= ABSURD_TERM) {
            violations.push(Violation::AbsurdTerm {
                term: s.term,
                node: s.node,
                t: s.t,
            });
        }
        if judge_end && groups.len() > 1 {
            violations.push(Violation::Agreement { groups });
        }
        if judge_end && !without.is_empty() {
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
            unjudged: unjudged.to_vec(),
            judged_end: judge_end,
            explanations: Vec::new(),
            storms: Storms::default(),
            leaderless: Vec::new(),
            end_explanation: None,
            majority_leaderless: None,
            owed_only_without_loss: false,
        }
    }

    /// What explains violation `v`: its term's explanation, or for termination and agreement
    /// at the end, a fault too shortly before the end.
    pub(crate) fn explanation_of(&self, v: &Violation) -> Option<&Explanation> {
        match v {
            Violation::Termination { .. } | Violation::Agreement { .. } => self.end_explanation.as_ref(),
            _ => v.term().and_then(|t| self.explanation(t)),
        }
    }

    /// The explanation of the violation about `term`, if the checker found one.
    pub(crate) fn explanation(&self, term: u64) -> Option<&Explanation> {
        self.explanations.iter().find(|e| e.term == term)
    }

    /// The longest stretch without a running leader.
    /// Whether a majority went without a leader for longer than the bound.
    pub(crate) fn leaderless_too_long(&self) -> Option<(Leaderless, u64)> {
        self.majority_leaderless.filter(|(l, bound)| l.to - l.from > *bound)
    }

    /// Judges progress: the longest piece of the leaderless stretches during which more than
    /// half of the nodes ran, could reach each other over the graph, and no partition was in
    /// force (nor any loss, for an algorithm whose round a lost message stalls), against
    /// `bound` µs.
    pub(crate) fn judge_progress(&mut self, run: &RunDir, timeline: &Timeline, bound: u64) {
        let n = timeline.nodes().count();
        let net = super::network::Network::of(run);
        let loss_stalls = crate::catalog::find(&run.info.algo).is_some_and(|e| e.loss_stalls_rounds);
        self.owed_only_without_loss = loss_stalls;
        let mut best: Option<Leaderless> = None;
        for l in &self.leaderless {
            let mut cuts: Vec<u64> = vec![l.from, l.to];
            for list in timeline.changes.values() {
                cuts.extend(list.iter().map(|c| c.t).filter(|&t| t > l.from && t < l.to));
            }
            cuts.extend(run.faults.iter().map(|r| r.t).filter(|&t| t > l.from && t < l.to));
            cuts.sort();
            cuts.dedup();
            // Who is down, and whether a partition is in force, are swept forward cut by cut
            // rather than asked of every node at every cut: with thousands of nodes starting
            // inside the first leaderless stretch, asking was n x cuts (most of a 4,096-node
            // run's check). Same answers: each node's state at a cut is its last change at or
            // before it, and the partition the faults read in file order up to the cut.
            let mut sweep = DownSweep::new(timeline, cuts[0], l.to);
            let mut partition = PartitionSweep::default();
            let mut open: Option<u64> = None;
            for w in cuts.windows(2) {
                sweep.advance(w[0]);
                // A majority must also be able to talk: on a two-way ring (Franklin, Echo,
                // Yo-Yo) two stopped nodes leave the running majority in pieces, none of which
                // can gather a majority or hear of the others' candidates. Asked last, being
                // the dearest of the three (and the list of the down only then).
                let ok = 2 * (n - sweep.count()) > n
                    && !partition.advance(run, w[0])
                    && !(loss_stalls && net.rules_at(w[0]).has_loss())
                    && net.majority_group_at(w[0], sweep.down(), n);
                if ok {
                    let from = *open.get_or_insert(w[0]);
                    if best.is_none_or(|b| w[1] - from > b.to - b.from) {
                        best = Some(Leaderless { from, to: w[1] });
                    }
                } else {
                    open = None;
                }
            }
        }
        self.majority_leaderless = best.map(|b| (b, bound));
    }

    /// The longest stretch with no running node believing it led.
    pub(crate) fn longest_leaderless(&self) -> Option<Leaderless> {
        self.leaderless.iter().copied().max_by_key(|l| l.to - l.from)
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

/// Per term with at most one self-declared leader, the nodes that believed different leaders.
fn term_agreement(learned: &[Learned], claims: &BTreeMap<u64, Vec<Claim>>) -> Vec<Violation> {
    let mut by_term: BTreeMap<u64, BTreeMap<NodeId, Vec<NodeId>>> = BTreeMap::new();
    for l in learned {
        let list = by_term
            .entry(l.belief.term)
            .or_default()
            .entry(l.belief.leader)
            .or_default();
        if !list.contains(&l.node) {
            list.push(l.node);
        }
    }
    by_term
        .into_iter()
        .filter(|(term, groups)| groups.len() > 1 && claims.get(term).is_none_or(|c| c.len() < 2))
        .map(|(term, groups)| Violation::TermAgreement { term, groups })
        .collect()
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

impl Section for ElectionFacts {
    fn family(&self) -> &'static str {
        "election"
    }

    fn findings(&self) -> Vec<Finding> {
        let mut out: Vec<Finding> = self
            .violations
            .iter()
            .map(|v| Finding {
                property: super::summary::property_name(v),
                what: super::summary::violation_line(v, None),
                violation: true,
                explanation: self.explanation_of(v).cloned(),
            })
            .collect();
        if let Some((l, bound)) = self.leaderless_too_long() {
            out.push(Finding::violation(
                "progress (leader)",
                format!(
                    "progress: no leader for {:.1} s while a majority of the nodes ran, over the bound of {:.1} s ({LEADERLESS_TIMEOUTS} timeouts)",
                    (l.to - l.from) as f64 / 1e6,
                    bound as f64 / 1e6
                ),
            ));
        }
        for &term in &self.storms.over {
            if let Some(tt) = self.storms.terms.iter().find(|t| t.term == term) {
                out.push(Finding {
                    property: format!("storm (term {term})"),
                    what: format!(
                        "storm: term {term} sent {} protocol messages ({:.0}/s), over the bound of {}",
                        tt.messages,
                        tt.rate(),
                        self.storms.bound
                    ),
                    violation: false,
                    explanation: None,
                });
            }
        }
        out
    }

    fn properties(&self, a: &Analysis) -> Vec<String> {
        super::summary::election_properties(a, self)
    }

    fn details(&self, a: &Analysis, out: &mut String) {
        super::summary::election_details(out, a, self);
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
